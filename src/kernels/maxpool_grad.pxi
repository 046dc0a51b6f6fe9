# ===========================================================================
# maxpool_grad.pxi: the MaxPool gradient (behaviour.md §6.3): zeros of x's
# shape, then dx[target(j)] += dy[j] for every element j of dy in row-major
# order.
#
# The arrays arrive flat, cut into `blocks` equal parts: the N*C planes for
# NCHW, the N images for NHWC.  Each index names its target inside its own
# part of dx by one formula for every encoding the kernel takes:
#
#     local = idx * a + (j % C) * cc - b * base        (b: the part, j: in the part)
#
# "onnx" (and NHWC "tf_batch"): a = 1, cc = 0, base = part size; "plane" in
# NCHW and "tf" in NHWC: a = 1, cc = 0, base = 0; "plane" in NHWC: a = C,
# cc = 1, base = 0.  An index is first checked against its encoding's range
# (`limit`), so the products never overflow; -1 is skipped.  A part is summed
# by one thread in order of j, so with every target local the result is the
# ordered one for every thread count.  A target outside its part (an "onnx"
# index into another plane, NCHW "tf"/"tf_batch" ones read as "onnx") is not written: the call returns 1 and the Python
# layer sums the whole call again in one ordered pass; an index out of range
# returns 2.
#
# 16-bit floats are summed in float32 scratch (one part per thread) and
# rounded once, as Col2Im does.
#
# NHWC with fewer images than threads: each image is cut further into
# `groups` ranges of channels, and a part is one range of one image: its
# thread adds the terms of its channels (j % C) whose targets lie in its
# channels, in order of j.  A MaxPool index keeps its channel, so every
# target is in range; a term whose target lies in another range is not
# written (status 1: the call is summed again in order, as above).
# ===========================================================================

ctypedef fused grad_t:
    float
    double
    uint16_t


# The kinds of grad_t (a job's `kind`; bodies.pxi.in picks the loop by it).
cdef enum:
    GRAD_FLOAT = 0
    GRAD_DOUBLE = 1
    GRAD_HALF = 2


cdef struct _GradJob:
    const char* g
    const int64_t* idx
    char* y
    float* acc                      # 16-bit floats: float32 sums, one part per thread; else NULL
    Py_ssize_t acc_stride           # floats from one thread's part to the next (acc's rows)
    Py_ssize_t in_block, out_block, C
    Py_ssize_t groups               # parts per image (NHWC: ranges of channels), else 1
    uint64_t mod_m                  # groups > 1: pk_fastmod's multiplier for C
    int64_t limit, a, cc, base
    uint16_t inf_bits
    bint zeroed                     # y holds zeros already (a fresh calloc'd result)
    int kind                        # GRAD_FLOAT, GRAD_DOUBLE or GRAD_HALF (16-bit floats)
    int status                      # pk_atomic_or: 1 a target outside its part, 2 out of range


# Elements of y zeroed at a time ahead of the scatter's targets (a float32 part: 8 KB).
cdef enum:
    GRAD_ZERO_AHEAD = 2048


cdef inline uint64_t _zero_ahead(grad_t* y, uint64_t z, uint64_t d, uint64_t span) noexcept nogil:
    """y[z:e] set to zero, e past the target d and at least GRAD_ZERO_AHEAD past z (at most span);
    returns e."""
    cdef uint64_t e = max(d + 1, z + GRAD_ZERO_AHEAD)
    e = min(e, span)
    memset(y + z, 0, (e - z) * sizeof(grad_t))
    return e


cdef inline int _grad_run(const grad_t* g, const int64_t* idx, Py_ssize_t n, grad_t* y, float* acc,
                          uint64_t limit, int64_t a, int64_t lo, uint64_t span, Py_ssize_t C,
                          bint per_channel, bint f16, bint zero) noexcept nogil:
    """_grad_part's loop, with the channel term (per_channel), the 16-bit format (f16: float16,
    else bfloat16) and the zeroing (zero: y's part is zeroed here) as constants once inlined.

    The part is zeroed just ahead of the targets, not all at once before them: y[:z] is zero or
    summed, and a target at or past z first zeroes up to it and some way on.  A MaxPool's targets
    advance with j, so each stretch is zeroed while the terms landing on it are added, in cache,
    rather than written out to memory and read back for a part larger than L2 (an NHWC image)."""
    cdef Py_ssize_t k, c = 0
    cdef int64_t v
    cdef uint64_t d, z = 0
    cdef int status = 0
    for k in range(n):
        v = idx[k]
        if <uint64_t>v < limit:
            d = <uint64_t>(v * a + c - lo) if per_channel else <uint64_t>(v * a - lo)
            if d < span:
                if grad_t is uint16_t:
                    acc[d] += pk_f16_to_f32(g[k]) if f16 else pk_bf16_to_f32(g[k])
                else:
                    if zero and d >= z:
                        z = _zero_ahead(y, z, d, span)
                    y[d] += g[k]
            else:
                status |= 1
        elif v != -1:
            status |= 2
        if per_channel:
            c += 1
            if c == C:
                c = 0
    if grad_t is not uint16_t:
        if zero and z < span:
            memset(y + z, 0, (span - z) * sizeof(grad_t))
    return status


cdef inline int _grad_part(const grad_t* g, const int64_t* idx, Py_ssize_t n, grad_t* y, float* acc,
                           const _GradJob* j, int64_t lo) noexcept nogil:
    """Add one part's terms in order; the status bits of what could not be added."""
    cdef uint64_t limit = <uint64_t>j.limit, span = <uint64_t>j.out_block
    cdef bint f16 = grad_t is uint16_t and j.inf_bits == PK_F16_INF
    if grad_t is not uint16_t:
        if not j.zeroed:  # (16-bit floats sum into scratch, zeroed by the caller)
            if j.cc:  # NHWC "plane": the channel is the term's own (j.cc is 0 or 1)
                return _grad_run(g, idx, n, y, acc, limit, j.a, lo, span, j.C, True, False, True)
            return _grad_run(g, idx, n, y, acc, limit, j.a, lo, span, j.C, False, False, True)
    if j.cc:
        if f16:
            return _grad_run(g, idx, n, y, acc, limit, j.a, lo, span, j.C, True, True, False)
        return _grad_run(g, idx, n, y, acc, limit, j.a, lo, span, j.C, True, False, False)
    if f16:
        return _grad_run(g, idx, n, y, acc, limit, j.a, lo, span, j.C, False, True, False)
    return _grad_run(g, idx, n, y, acc, limit, j.a, lo, span, j.C, False, False, False)


cdef inline uint64_t pk_fastmod(uint64_t d, uint64_t m, uint64_t C) noexcept nogil:
    """d % C for d, C < 2**32, m = 2**64 // C + 1 (wrapping): the high 64 bits of (m * d) * C
    (Lemire, Kaser and Kurz, "Faster remainder by direct computation"), from 32-bit halves."""
    cdef uint64_t x = m * d
    return ((x >> 32) * C + (((x << 32) >> 32) * C >> 32)) >> 32


cdef inline int _grad_cols_run(const grad_t* g, const int64_t* idx, Py_ssize_t pixels, grad_t* y,
                               const _GradJob* j, int64_t lo, Py_ssize_t c0, Py_ssize_t c1,
                               bint per_channel) noexcept nogil:
    """One range of channels [c0, c1) of one NHWC image: its terms in order, those whose targets
    lie in the range added (per_channel: the NHWC "plane" formula, whose target is in the term's
    own channel; else the target's channel is its offset modulo C)."""
    cdef uint64_t limit = <uint64_t>j.limit, span = <uint64_t>j.out_block, C = <uint64_t>j.C
    cdef uint64_t d, w = <uint64_t>(c1 - c0)
    cdef Py_ssize_t q, c, k
    cdef int64_t v, a = j.a
    cdef int status = 0
    for q in range(pixels):
        for c in range(c0, c1):
            k = q * j.C + c
            v = idx[k]
            if <uint64_t>v < limit:
                d = <uint64_t>(v * a + c - lo) if per_channel else <uint64_t>(v * a - lo)
                if d < span and (per_channel or pk_fastmod(d, j.mod_m, C) - <uint64_t>c0 < w):
                    y[d] += g[k]
                else:
                    status |= 1
            elif v != -1:
                status |= 2
    return status


cdef int _grad_cols(grad_t* kind, _GradJob* j, Py_ssize_t b) noexcept nogil:
    """Part b of an image cut into j.groups ranges of channels (float32 and float64; the kernel
    refuses groups for 16-bit floats): zero them and add their terms."""
    cdef Py_ssize_t image = b // j.groups, group = b % j.groups, C = j.C, ob = j.out_block
    cdef Py_ssize_t c0 = group * C // j.groups, c1 = (group + 1) * C // j.groups
    cdef grad_t* y = <grad_t*>j.y + image * ob
    if not j.zeroed:  # (vector stores, not a memset call per pixel's few channels: pooling_zero.h)
        pk_zero_rows(y + c0, ob // C, C * sizeof(grad_t), (c1 - c0) * sizeof(grad_t))
    cdef const grad_t* g = <const grad_t*>j.g + image * j.in_block
    cdef const int64_t* idx = j.idx + image * j.in_block
    if j.cc:
        return _grad_cols_run(g, idx, j.in_block // C, y, j, image * j.base, c0, c1, True)
    return _grad_cols_run(g, idx, j.in_block // C, y, j, image * j.base, c0, c1, False)


cdef void _grad_parts(grad_t* kind, _GradJob* j, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    cdef Py_ssize_t b, i, ib = j.in_block, ob = j.out_block
    cdef const grad_t* g = <const grad_t*>j.g
    cdef grad_t* y = <grad_t*>j.y
    cdef float* acc = NULL
    cdef int status = 0
    if j.groups > 1:
        for b in range(begin, end):
            status |= _grad_cols(kind, j, b)
        if status:
            pk_atomic_or(&j.status, status)
        return
    for b in range(begin, end):
        if grad_t is uint16_t:
            acc = j.acc + tid * j.acc_stride
            memset(acc, 0, ob * sizeof(float))
        status |= _grad_part(g + b * ib, j.idx + b * ib, ib, y + b * ob, acc, j, b * j.base)
        if grad_t is uint16_t:
            if j.inf_bits == PK_F16_INF:
                for i in range(ob):
                    y[b * ob + i] = pk_f32_to_f16(acc[i])
            else:
                for i in range(ob):
                    y[b * ob + i] = pk_f32_to_bf16(acc[i])
    if status:
        pk_atomic_or(&j.status, status)


def max_pool_grad(const grad_t[::1] g not None, const int64_t[::1] indices not None,
                  grad_t[::1] y not None, float[:, ::1] acc, Py_ssize_t blocks, Py_ssize_t C,
                  int64_t limit, int64_t a, int64_t cc, int64_t base, uint16_t inf_bits,
                  bint zeroed, int n_threads, Py_ssize_t groups=1):
    """dx = zeros, then dx[target] += dy in order of dy, part by part (all arrays flat).

    blocks (>= 1): the equal parts g and y are cut into.  C: channels (the period of j % C,
    used where cc is 1).  groups: each part cut further into this many ranges of channels
    (NHWC parts, whose elements' channel is their offset modulo C; at most C, parts of y below
    2**32 elements, float32 and float64 only).  limit: the encoding's range; a, cc, base: the target formula above.
    inf_bits: 0, or the +inf pattern of float16 / bfloat16 when g and y hold those bits; then
    acc is float32 scratch of shape (n_threads, y.shape[0] // blocks), else None.  zeroed: y
    holds zeros already (a fresh result from calloc), so float and double parts are not zeroed
    again.

    Returns 0 once y (not empty) is written; 1 if some index was in range but outside its part
    (those terms are missing: sum again in order); 2 if some index was out of range (y is partly
    written).  (-2, writing nothing: the arguments break this contract.)
    """
    cdef Py_ssize_t n = g.shape[0], size = y.shape[0]
    if (indices.shape[0] != n or size == 0 or blocks < 1 or n % blocks or size % blocks
            or n_threads < 1 or C < 1 or groups < 1 or (groups > 1 and (
                grad_t is uint16_t or groups > C or (n // blocks) % C or (size // blocks) % C
                or size // blocks >= (1 << 32)))
            or (grad_t is uint16_t and (
                acc is None or acc.shape[0] < n_threads or acc.shape[1] < size // blocks))):
        return -2
    cdef _GradJob j
    j.g, j.idx, j.y = <const char*>&g[0] if n else NULL, &indices[0] if n else NULL, <char*>&y[0]
    j.acc, j.acc_stride = NULL, 0
    if grad_t is uint16_t:
        j.acc, j.acc_stride = &acc[0, 0], acc.shape[1]
        j.kind = GRAD_HALF
    elif grad_t is float:
        j.kind = GRAD_FLOAT
    else:
        j.kind = GRAD_DOUBLE
    j.in_block, j.out_block, j.C, j.groups = n // blocks, size // blocks, C, groups
    j.mod_m = (~(<uint64_t>0)) // (<uint64_t>C) + 1
    j.limit, j.a, j.cc, j.base, j.inf_bits, j.status = limit, a, cc, base, inf_bits, 0
    j.zeroed = zeroed
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_grad_body, &j, blocks * groups, max(1, blocks * groups // (16 * n_threads)), n_threads)
    return 2 if j.status & 2 else j.status
