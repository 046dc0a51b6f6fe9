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
# `groups` bands, a band of dy's rows (its first spatial axis) and the band of
# dx's rows in the same proportion, its slice; a part is one band of one image.
# Its thread adds, in order of j, every term whose target lies in its slice:
# those of its own rows, and those of the neighbouring bands' rows next to it
# whose windows reach over the cut (the halos, found from the indices
# themselves: _crossing).  Every slice is summed in order by one thread, so the
# result is the ordered one.  A term whose target lies where no thread looks
# (beyond a neighbour's slice, or in a neighbour's slice from a row its halo
# does not reach) is not written: status 1, summed again in order, as above.
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
    Py_ssize_t groups               # parts per image (NHWC: bands of rows), else 1
    Py_ssize_t rows_in, rows_out    # groups > 1: rows of a part of dx and of dy (first spatial axis)
    int64_t limit, a, cc, base
    uint16_t inf_bits
    bint zeroed                     # y holds zeros already (a fresh calloc'd result)
    int kind                        # GRAD_FLOAT, GRAD_DOUBLE or GRAD_HALF (16-bit floats)
    int status                      # pk_atomic_or: 1 a target outside its part, 2 out of range


# Elements of y zeroed at a time ahead of the scatter's targets (a float32 part: 8 KB), and terms
# checked at a time before a loop without tests (_grad_band_run: 16 KB of indices, inside every L1d).
cdef enum:
    GRAD_ZERO_AHEAD = 2048
    GRAD_BLOCK = 2048


cdef inline uint64_t _zero_ahead(grad_t* y, uint64_t z, uint64_t d, uint64_t span) noexcept nogil:
    """y[z:e] set to zero, e past the target d and at least GRAD_ZERO_AHEAD past z (at most span);
    returns e."""
    cdef uint64_t e = max(d + 1, z + GRAD_ZERO_AHEAD)
    e = min(e, span)
    memset(y + z, 0, (e - z) * sizeof(grad_t))
    return e


cdef inline int _grad_half_run(const uint16_t* g, const int64_t* idx, Py_ssize_t n, float* acc,
                               uint64_t limit, int64_t a, int64_t lo, uint64_t span, Py_ssize_t C,
                               bint per_channel, bint f16) noexcept nogil:
    """_grad_part's loop for 16-bit floats, into float32 scratch acc (zeroed by the caller), with the
    channel term (per_channel) and the format (f16: float16, else bfloat16) constants once inlined."""
    cdef Py_ssize_t k, q, c, w = C if per_channel else max(n, 1)
    cdef int64_t v
    cdef uint64_t d
    cdef int status = 0
    for q in range(n // w):  # (per_channel: pixel by pixel, the channel the inner loop's own)
        for c in range(w):
            k = q * w + c
            v = idx[k]
            if <uint64_t>v < limit:
                d = <uint64_t>(v * a + c - lo) if per_channel else <uint64_t>(v * a - lo)
                if d < span:
                    acc[d] += pk_f16_to_f32(g[k]) if f16 else pk_bf16_to_f32(g[k])
                else:
                    status |= 1
            elif v != -1:
                status |= 2
    return status


cdef inline int _grad_part(const grad_t* g, const int64_t* idx, Py_ssize_t n, grad_t* y, float* acc,
                           const _GradJob* j, int64_t lo) noexcept nogil:
    """Add one part's terms in order; the status bits of what could not be added.  float32 and
    float64 run a band's loop (_grad_band_run) over the whole part: its slice is the part, and no
    target outside it is allowed (ok: none)."""
    cdef uint64_t limit = <uint64_t>j.limit, span = <uint64_t>j.out_block, z = 0
    cdef uint64_t ok[2]
    cdef int status
    if grad_t is uint16_t:
        if j.cc:
            if j.inf_bits == PK_F16_INF:
                return _grad_half_run(g, idx, n, acc, limit, j.a, lo, span, j.C, True, True)
            return _grad_half_run(g, idx, n, acc, limit, j.a, lo, span, j.C, True, False)
        if j.inf_bits == PK_F16_INF:
            return _grad_half_run(g, idx, n, acc, limit, j.a, lo, span, j.C, False, True)
        return _grad_half_run(g, idx, n, acc, limit, j.a, lo, span, j.C, False, False)
    else:
        ok[0], ok[1] = 0, 0
        # (the flags constants at each call, so that each loop is compiled for its own)
        if j.zeroed:  # (a fresh calloc'd result)
            if j.cc:  # NHWC "plane": the channel is the term's own (j.cc is 0 or 1)
                return _grad_band_run(g, idx, n, y, limit, j.a, lo, j.C, True, span, ok, &z, False)
            return _grad_band_run(g, idx, n, y, limit, j.a, lo, j.C, False, span, ok, &z, False)
        if j.cc:
            status = _grad_band_run(g, idx, n, y, limit, j.a, lo, j.C, True, span, ok, &z, True)
        else:
            status = _grad_band_run(g, idx, n, y, limit, j.a, lo, j.C, False, span, ok, &z, True)
        if z < span:
            memset(y + z, 0, (span - z) * sizeof(grad_t))
        return status


cdef inline bint _row_crosses(const int64_t* idx, Py_ssize_t n, uint64_t vlo, uint64_t vcut, uint64_t vspan,
                              bint below) noexcept nogil:
    """Whether a row of n indices has a target below the cut (below), else one at or past it inside the
    image.  In the indices' own terms: an index v is the target (v - vlo) * a, plus its channel where
    a is C (the NHWC "plane" formula, with vlo 0), and cuts lie between whole pixels, so v names a
    target below the cut exactly when v - vlo < vcut (the cut / a), and -1 or an index outside the
    image never does.  No early exit: the loop is a vector compare."""
    cdef Py_ssize_t k
    cdef uint64_t u
    cdef bint found = False
    for k in range(n):
        u = <uint64_t>idx[k] - vlo
        found |= (u < vcut) if below else (u - vcut < vspan - vcut)
    return found


cdef Py_ssize_t _crossing(const int64_t* idx, Py_ssize_t n, uint64_t vlo, uint64_t vcut, uint64_t vspan,
                          Py_ssize_t r, Py_ssize_t stop, bint below) noexcept nogil:
    """A halo: how many rows of dy (n terms each), from row r on towards row stop (backwards when below
    is False, forwards when True; stop not included), have a target on the far side of the cut (below
    it, or at or past it), one after the other.
    Rows past the first that has none are not looked at: a target beyond them is caught by its own
    band's check (_grad_band), and the call summed again in order.  (A MaxPool window's rows that
    reach over a cut follow one another: a row's winner over the cut is in the next row's window,
    or that window lies wholly past it.  Dilated taps along the rows can leave a gap.)"""
    cdef Py_ssize_t step = 1 if below else -1, count = 0
    while r != stop and _row_crosses(idx + r * n, n, vlo, vcut, vspan, below):
        count += 1
        r += step
    return count


cdef inline int _grad_band_run(const grad_t* g, const int64_t* idx, Py_ssize_t n, grad_t* y,
                               uint64_t limit, int64_t a, int64_t lo, Py_ssize_t C, bint per_channel,
                               uint64_t s_size, const uint64_t* ok, uint64_t* z, bint zero) noexcept nogil:
    """n terms of dy (a row of a band, or a whole part: _grad_part) whose targets lie in the slice
    y[:s_size] (lo: the slice's first element in the index formula's terms), added in order; a target
    outside the ok[1] elements from ok[0] before the slice, where the thread that owns it does not
    look, sets status 1 (a whole part passes ok = 0, 0: none).  (ok is read only there, so that it
    holds no register in the loop.)  The channel term (per_channel) and the zeroing (zero) are
    constants once inlined.

    zero: the slice is zeroed just ahead of the targets, not all at once before them: y[:z[0]] is
    zero or summed, and a target at or past it first zeroes up to it and some way on (the caller
    zeroes the rest at the end).  A MaxPool's targets advance with j, so each stretch is zeroed
    while the terms landing on it are added, in cache, rather than written out to memory and read
    back for a part larger than L2 (an NHWC image).

    The terms go in blocks of about GRAD_BLOCK (whole pixels where per_channel).  A block whose
    indices are all in range and whose targets all lie in the slice (its least and greatest index
    say so, a vector pass over the block) is zeroed ahead once and added with no test per term;
    any other block takes the loop that tests each term.  Same terms, same order."""
    cdef Py_ssize_t p, q, c, start, stop, last = n - n % C, b, blk = max(1, GRAD_BLOCK // C) * C
    cdef int64_t vmin, vmax, dmin, dmax
    cdef uint64_t zeroed = z[0]
    cdef int status = 0
    # NCHW planes keep the per-term loop: docs/tuning.md,
    # #max_pool_grad-nhwc-plane-terms-in-blocks-without-a-test-per-term
    if not per_channel:
        return _grad_terms(g, idx, 0, n, y, limit, a, lo, 1, False, s_size, ok, z, zero)
    for b in range((last + blk - 1) // blk):  # (per_channel from here on: whole pixels of C terms)
        start = b * blk
        stop = min(start + blk, last)
        vmin = vmax = idx[start]
        for q in range(start, stop):
            vmin = min(vmin, idx[q])
            vmax = max(vmax, idx[q])
        if vmin >= 0 and <uint64_t>vmax < limit:  # (then the products below do not overflow)
            dmin = vmin * a - lo
            dmax = vmax * a + (C - 1) - lo
            if dmin >= 0 and <uint64_t>dmax < s_size:
                if zero and <uint64_t>dmax >= zeroed:
                    zeroed = _zero_ahead(y, zeroed, <uint64_t>dmax, s_size)
                for p in range((stop - start) // C):  # (pixel by pixel)
                    q = start + p * C
                    for c in range(C):
                        y[idx[q + c] * a + c - lo] += g[q + c]
                continue
        status |= _grad_terms(g, idx, start, stop, y, limit, a, lo, C, True, s_size, ok, &zeroed, zero)
    z[0] = zeroed
    return status


cdef inline int _grad_terms(const grad_t* g, const int64_t* idx, Py_ssize_t start, Py_ssize_t stop, grad_t* y,
                            uint64_t limit, int64_t a, int64_t lo, Py_ssize_t u, bint per_channel,
                            uint64_t s_size, const uint64_t* ok, uint64_t* z, bint zero) noexcept nogil:
    """_grad_band_run's terms [start, stop) one at a time, each tested (u: C where per_channel, else 1)."""
    cdef Py_ssize_t k, p, c
    cdef int64_t v
    cdef uint64_t d, zeroed = z[0]
    cdef int status = 0
    for p in range((stop - start) // u):  # (per_channel: pixel by pixel, the channel the inner loop's own)
        for c in range(u):
            k = start + p * u + c
            v = idx[k]
            if <uint64_t>v < limit:
                d = <uint64_t>(v * a + c - lo) if per_channel else <uint64_t>(v * a - lo)
                if d < s_size:
                    if zero and d >= zeroed:
                        zeroed = _zero_ahead(y, zeroed, d, s_size)
                    y[d] += g[k]
                elif d + ok[0] >= ok[1]:
                    status |= 1
            elif v != -1:
                status |= 2
    z[0] = zeroed
    return status


cdef int _grad_band(grad_t* kind, _GradJob* j, Py_ssize_t b) noexcept nogil:
    """Part b of an image cut into j.groups bands of rows (float32 and float64; the kernel refuses
    groups for 16-bit floats): zero its slice of dx and add the terms that land there, in order."""
    cdef Py_ssize_t image = b // j.groups, t = b % j.groups, T = j.groups
    cdef Py_ssize_t R = j.rows_out, n = j.in_block // R, rowlen = j.out_block // j.rows_in, oh
    cdef Py_ssize_t o[4]           # first rows of dy's bands t - 1 .. t + 2 (clamped)
    cdef uint64_t cut[4]           # and the first elements of their slices of dx
    cdef Py_ssize_t i, back0 = 0, fwd0 = 0, back1 = 0, fwd1 = 0
    cdef int64_t lo = image * j.base
    cdef const grad_t* g = <const grad_t*>j.g + image * j.in_block
    cdef const int64_t* idx = j.idx + image * j.in_block
    cdef grad_t* y = <grad_t*>j.y + image * j.out_block
    cdef uint64_t ok_lo, ok_hi, z = 0
    cdef uint64_t ok[2]            # a core row's targets outside the slice: where its neighbours look
    cdef int status = 0
    cdef bint zero = not j.zeroed
    for i in range(4):
        o[i] = min(max(t - 1 + i, 0), T) * R // T
        cut[i] = <uint64_t>((o[i] * j.rows_in // R) * rowlen)
    # The halos at the band's two cuts, worked out by both threads that meet there, alike (in the
    # indices' terms, _row_crosses: a is 1, or C with lo 0, and the cuts are whole rows of pixels).
    cdef uint64_t vlo = <uint64_t>(lo // j.a), vspan = <uint64_t>(j.out_block // j.a)
    if t > 0:
        back0 = _crossing(idx, n, vlo, cut[1] // j.a, vspan, o[1] - 1, o[0] - 1, False)  # band t - 1's last rows
        fwd0 = _crossing(idx, n, vlo, cut[1] // j.a, vspan, o[1], o[2], True)            # this band's first rows
    if t + 1 < T:
        back1 = _crossing(idx, n, vlo, cut[2] // j.a, vspan, o[2] - 1, o[1] - 1, False)
        fwd1 = _crossing(idx, n, vlo, cut[2] // j.a, vspan, o[2], o[3], True)
    for oh in range(o[1] - back0, o[2] + fwd1):
        ok_lo, ok_hi = 0, <uint64_t>(-1)  # (rows of the neighbours': their own threads check them)
        if o[1] <= oh < o[2]:
            ok_lo = cut[0] if t > 0 and oh < o[1] + fwd0 else cut[1]
            ok_hi = cut[3] if t + 1 < T and oh >= o[2] - back1 else cut[2]
        ok[0], ok[1] = cut[1] - ok_lo, ok_hi - ok_lo
        # (the flags constants at each call, so that each loop is compiled for its own)
        if j.cc and zero:
            status |= _grad_band_run(g + oh * n, idx + oh * n, n, y + cut[1], <uint64_t>j.limit, j.a,
                                     lo + <int64_t>cut[1], j.C, True, cut[2] - cut[1], ok, &z, True)
        elif j.cc:
            status |= _grad_band_run(g + oh * n, idx + oh * n, n, y + cut[1], <uint64_t>j.limit, j.a,
                                     lo + <int64_t>cut[1], j.C, True, cut[2] - cut[1], ok, &z, False)
        elif zero:
            status |= _grad_band_run(g + oh * n, idx + oh * n, n, y + cut[1], <uint64_t>j.limit, j.a,
                                     lo + <int64_t>cut[1], j.C, False, cut[2] - cut[1], ok, &z, True)
        else:
            status |= _grad_band_run(g + oh * n, idx + oh * n, n, y + cut[1], <uint64_t>j.limit, j.a,
                                     lo + <int64_t>cut[1], j.C, False, cut[2] - cut[1], ok, &z, False)
    if zero and z < cut[2] - cut[1]:
        memset(y + cut[1] + z, 0, (cut[2] - cut[1] - z) * sizeof(grad_t))
    return status


cdef void _grad_parts(grad_t* kind, _GradJob* j, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    cdef Py_ssize_t b, i, ib = j.in_block, ob = j.out_block
    cdef const grad_t* g = <const grad_t*>j.g
    cdef grad_t* y = <grad_t*>j.y
    cdef float* acc = NULL
    cdef int status = 0
    if j.groups > 1:
        for b in range(begin, end):
            status |= _grad_band(kind, j, b)
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
                  bint zeroed, int n_threads, Py_ssize_t groups=1, Py_ssize_t rows_out=1,
                  Py_ssize_t rows_in=1):
    """dx = zeros, then dx[target] += dy in order of dy, part by part (all arrays flat).

    blocks (>= 1): the equal parts g and y are cut into.  C: channels (the period of j % C,
    used where cc is 1: a part of g is then whole pixels).  groups: each part cut further into
    this many bands of rows (NHWC parts, at most rows_out; float32 and float64 only), a part of g
    being rows_out rows and one of y rows_in rows.  limit: the encoding's range; a, cc, base: the
    target formula above.
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
            or n_threads < 1 or C < 1 or (cc and (n // blocks) % C) or groups < 1 or (groups > 1 and (
                grad_t is uint16_t or rows_out < groups or rows_in < 1 or (n // blocks) % rows_out
                or (size // blocks) % rows_in or (n // blocks // rows_out) % C))
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
    j.rows_out, j.rows_in = rows_out, rows_in
    j.limit, j.a, j.cc, j.base, j.inf_bits, j.status = limit, a, cc, base, inf_bits, 0
    j.zeroed = zeroed
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_grad_body, &j, blocks * groups, max(1, blocks * groups // (16 * n_threads)), n_threads)
    return 2 if j.status & 2 else j.status


# ---------------------------------------------------------------------------
# The gradient gathered from the windows, channels-last, for indices MaxPool
# wrote ("plane": the pixel inside the image): each pixel of dx is the sum,
# in window order, of the gradients of the windows over it whose index names
# it (pk_grad_gather_f32, include/pooling_grad.h), so the scatter's terms in
# the scatter's order: its bits.  dx is written once, row by row, with no
# zeroing pass and no scattered read-modify-write; indices are compared, never
# followed, so any values are safe (one outside its window is a term left
# out).  Windows may overlap, up to PK_GRAD_WINDOWS_MAX over one pixel; which
# calls take it is pooling.torch's choice (GRAD_COVER_F32).
# ---------------------------------------------------------------------------

# The most windows over one pixel this build's float32 gather is chosen for (pooling.torch).
GRAD_COVER_F32 = PK_GRAD_COVER_F32

cdef struct _WindowsJob:
    const char* g
    const int64_t* idx
    char* y
    Py_ssize_t D, H, W, OD, OH, OW, C
    Py_ssize_t kd, kh, kw, sd, sh, sw, pd, ph, pw
    const Py_ssize_t* cw            # per pixel of a row: its first window's offset along a row of windows
    const unsigned char* cn         # and how many windows (pk_grad_row_f32, pk_grad_row_f64)
    int ncol                        # the most over one pixel
    int kind                        # GRAD_FLOAT or GRAD_DOUBLE


cdef inline void _covering(Py_ssize_t x, Py_ssize_t p, Py_ssize_t k, Py_ssize_t s, Py_ssize_t count,
                           Py_ssize_t* first, Py_ssize_t* last) noexcept nogil:
    """The windows [first, last] of an axis (count of them: kernel k, stride s, begin pad p) over
    position x; first > last where none is."""
    cdef Py_ssize_t a = x + p - k + 1
    first[0] = 0 if a <= 0 else (a + s - 1) // s
    last[0] = min((x + p) // s, count - 1)


cdef void _grad_windows_rows(grad_t* kind, const _WindowsJob* j, Py_ssize_t begin,
                             Py_ssize_t end) noexcept nogil:
    """dx's rows [begin, end) of the N * D * H rows of W pixels of C channels."""
    cdef Py_ssize_t u, n, d, h, od, oh, od0, od1, oh0, oh1
    cdef Py_ssize_t C = j.C, row = j.W * j.C
    cdef Py_ssize_t rowoff[PK_GRAD_WINDOWS_MAX]  # the rows of windows over this row of dx: their first elements
    cdef int rows
    for u in range(begin, end):
        h = u % j.H
        d = (u // j.H) % j.D
        n = u // (j.H * j.D)
        _covering(d, j.pd, j.kd, j.sd, j.OD, &od0, &od1)
        _covering(h, j.ph, j.kh, j.sh, j.OH, &oh0, &oh1)
        rows = 0
        for od in range(od0, od1 + 1):
            for oh in range(oh0, oh1 + 1):
                rowoff[rows] = ((n * j.OD + od) * j.OH + oh) * j.OW * C
                rows += 1
        if grad_t is float:
            pk_grad_row_f32(<float*>j.y + u * row, <const float*>j.g, j.idx, rowoff, rows, j.cw, j.cn, j.ncol,
                            j.W, (d * j.H + h) * j.W, C)
        elif grad_t is double:
            pk_grad_row_f64(<double*>j.y + u * row, <const double*>j.g, j.idx, rowoff, rows, j.cw, j.cn, j.ncol,
                            j.W, (d * j.H + h) * j.W, C)


def max_pool_grad_windows(const grad_t[:, :, :, :, ::1] g not None,
                          const int64_t[:, :, :, :, ::1] indices not None,
                          grad_t[:, :, :, :, ::1] y not None, tuple kernel, tuple strides,
                          tuple pads_begin, int n_threads):
    """dx (y: N, D, H, W, C) from dy (g) and its "plane" indices (N, OD, OH, OW, C), gathered from the
    windows: kernel, strides and pads_begin per axis (D, H, W), 0 <= pads < kernel, at most
    PK_GRAD_WINDOWS_MAX windows over one pixel.  float32 and float64 (uint16_t: -2).  Returns 0 once y
    is written; -2 (nothing written) where the arguments break this contract."""
    cdef Py_ssize_t a, cover = 1
    if grad_t is uint16_t or n_threads < 1 or len(kernel) != 3 or len(strides) != 3 or len(pads_begin) != 3:
        return -2
    for a in range(5):
        if indices.shape[a] != g.shape[a]:
            return -2
    if g.shape[0] != y.shape[0] or g.shape[4] != y.shape[4]:
        return -2
    for a in range(3):
        # Pads inside the kernel (torch's are at most half of it), and kernels and strides that the
        # rows' arithmetic (pixels plus pads, window starts) cannot overflow with
        if (not 0 <= pads_begin[a] < kernel[a] or strides[a] < 1
                or max(kernel[a], strides[a]) > (PY_SSIZE_T_MAX // 4) // (g.shape[1 + a] + y.shape[1 + a] + 1)):
            return -2
        cover *= (kernel[a] + strides[a] - 1) // strides[a]
        if cover > PK_GRAD_WINDOWS_MAX:
            return -2
    cdef _WindowsJob j
    cdef Py_ssize_t units = y.shape[0] * y.shape[1] * y.shape[2]
    if units == 0 or y.shape[3] * y.shape[4] == 0:
        return 0
    if g.size == 0:  # no windows: dx is zeros (and no pointer into g is formed)
        memset(&y[0, 0, 0, 0, 0], 0, y.size * sizeof(grad_t))
        return 0
    j.g = <const char*>&g[0, 0, 0, 0, 0]
    j.idx = &indices[0, 0, 0, 0, 0]
    j.y = <char*>&y[0, 0, 0, 0, 0]
    j.D, j.H, j.W, j.C = y.shape[1], y.shape[2], y.shape[3], y.shape[4]
    j.OD, j.OH, j.OW = g.shape[1], g.shape[2], g.shape[3]
    j.kd, j.kh, j.kw = kernel
    j.sd, j.sh, j.sw = strides
    j.pd, j.ph, j.pw = pads_begin
    j.kind = GRAD_FLOAT if grad_t is float else GRAD_DOUBLE
    # Each pixel's windows along a row, the same on every row: found once (pk_grad_row_f32, pk_grad_row_f64)
    cdef Py_ssize_t w, ow0, ow1
    cdef Py_ssize_t* cw = <Py_ssize_t*>malloc(j.W * sizeof(Py_ssize_t))
    cdef unsigned char* cn = <unsigned char*>malloc(j.W)
    if cw == NULL or cn == NULL:
        free(cw)
        free(cn)
        raise MemoryError()
    j.ncol = 0
    for w in range(j.W):
        _covering(w, j.pw, j.kw, j.sw, j.OW, &ow0, &ow1)
        cn[w] = <unsigned char>(ow1 - ow0 + 1 if ow1 >= ow0 else 0)
        cw[w] = ow0 * j.C if ow1 >= ow0 else 0
        j.ncol = max(j.ncol, <int>cn[w])
    j.cw, j.cn = cw, cn
    with nogil:
        pk_parallel(_grad_windows_body, &j, units, max(1, units // (16 * n_threads)), n_threads)
    free(cw)
    free(cn)
    return 0
