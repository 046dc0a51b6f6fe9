# ===========================================================================
# maxpool_separable.pxi: max_pool_axis, one separable MaxPool stage along one axis.
#
# pooling._maxpool_strategies runs it axis by axis for three strategies: "separable"
# (_run_separable: any rank, NCHW), "NHWC by transpose" (_run_nhwc_transposed:
# the same on a transposed copy), and
# the depth stage of "depth-split 3-D" (after MaxPool3d pooled each depth
# slice in 2-D, maxpool_fused.pxi).  A def function, not a launch: the
# Python layer selects its specialisation by C type name, max_pool_axis[ctype].
#
# One stage per spatial axis, innermost first (the same tie argument as
# maxpool_fused.pxi).  x is viewed as (A, L, B) with the pooled axis in the
# middle; positions travel alongside the values.
# ===========================================================================

cdef void _axis_window(const pool_t* x, const int64_t* pos_in, pool_t* y, int64_t* pos_out,
                       Py_ssize_t a, Py_ssize_t o, Py_ssize_t L, Py_ssize_t B,
                       Py_ssize_t k, Py_ssize_t s, Py_ssize_t dil, Py_ssize_t pad,
                       int act, pool_t lo, pool_t hi, uint16_t inf_bits) noexcept nogil:
    """One output position o of row a: y[b] and pos_out[b] for every b (a function
    of its own so that every variable is private to the thread running it)."""
    cdef Py_ssize_t b, t, t0, t1, l, row, base = o * s - pad
    cdef const pool_t* xrow
    cdef pool_t v, m
    cdef int64_t old, mask
    _taps(base, dil, k, L, &t0, &t1)
    if t0 >= t1:
        for b in range(B):
            y[b] = _empty_value(<pool_t>0, inf_bits)
            if pos_out != NULL:
                pos_out[b] = -1
    for t in range(t0, t1):
        l = base + t * dil
        xrow = x + (a * L + l) * B
        row = (a * L + l) * B
        if t == t0:
            for b in range(B):
                y[b] = xrow[b]
            if pos_out != NULL:
                for b in range(B):
                    pos_out[b] = pos_in[row + b] if pos_in != NULL else row + b
        elif pos_out != NULL:
            # Unconditional loads and selects, so the loop vectorises.
            for b in range(B):
                v = xrow[b]
                m = y[b]
                old = pos_out[b]
                mask = -<int64_t>_gt(v, m, inf_bits)
                y[b] = v if mask else m
                pos_out[b] = (old & ~mask) | ((pos_in[row + b] if pos_in != NULL else row + b) & mask)
        else:
            for b in range(B):
                v = xrow[b]
                m = y[b]
                y[b] = v if _gt(v, m, inf_bits) else m
    if act:
        for b in range(B):
            y[b] = _clamp(y[b], lo, hi, act, inf_bits)


def max_pool_axis(const pool_t[:, :, ::1] x not None, const int64_t[:, :, ::1] pos_in,
                  pool_t[:, :, ::1] y not None, int64_t[:, :, ::1] pos_out,
                  Py_ssize_t k, Py_ssize_t s, Py_ssize_t dil, Py_ssize_t pad,
                  int act, pool_t lo, pool_t hi, uint16_t inf_bits, int n_threads):
    """One stage: y[a, o, b] = max over taps t of x[a, o*s - pad + t*dil, b].

    pos_in None means x is the original input, whose own flat offsets are the
    positions; pos_out (or None) receives the winners' positions, -1 if empty.
    act/lo/hi: fused activation, applied by the last stage only.
    """
    cdef Py_ssize_t A = x.shape[0], L = x.shape[1], B = x.shape[2], O = y.shape[1]
    cdef Py_ssize_t u
    cdef const int64_t* pin = NULL
    cdef int64_t* pout = NULL
    if A * O * B == 0:
        return
    if pos_in is not None and A * L * B:  # no tap reads an empty input
        pin = &pos_in[0, 0, 0]
    if pos_out is not None:
        pout = &pos_out[0, 0, 0]
    cdef _AxisJob j
    j.x = <const char*>&x[0, 0, 0] if A * L * B else NULL  # no tap can read an empty x
    j.y = <char*>&y[0, 0, 0]
    j.pin, j.pout = pin, pout
    j.L, j.B, j.O, j.k, j.s, j.dil, j.pad = L, B, O, k, s, dil, pad
    j.act, j.lo, j.hi, j.inf_bits, j.kind = act, lo, hi, inf_bits, _kind_of(<pool_t*>NULL)
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_axis_body, &j, A * O, max(1, A * O // (16 * n_threads)), n_threads)


cdef struct _AxisJob:
    const char* x
    char* y
    const int64_t* pin
    int64_t* pout
    Py_ssize_t L, B, O, k, s, dil, pad
    int act, kind
    double lo, hi
    uint16_t inf_bits


cdef void _axis_rows(pool_t* kind, const _AxisJob* j, Py_ssize_t begin, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t u, B = j.B
    cdef const pool_t* xb = <const pool_t*>j.x
    cdef pool_t* yb = <pool_t*>j.y
    for u in range(begin, end):
        _axis_window(xb, j.pin, yb + u * B, j.pout + u * B if j.pout != NULL else NULL,
                     u // j.O, u % j.O, j.L, B, j.k, j.s, j.dil, j.pad, j.act, <pool_t>j.lo,
                     <pool_t>j.hi, j.inf_bits)
