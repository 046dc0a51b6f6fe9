# ===========================================================================
# maxunpool.pxi: MaxUnpool (behaviour.md §3): zeros, then y[indices[j]] = x[j] for every j of x in
# row-major order.
#
# Only bits move, so one kernel over unsigned storage of each width serves
# every dtype (the float16 / bfloat16 / uint16 question never arises).  The
# arrays arrive flat, cut into `blocks` equal parts: the N*C planes for NCHW,
# the N images for NHWC.  Part b of x is "local" when every index it holds
# lands in part b of y, which is what MaxPool's Indices always do.
#
# One pass in the common case: each part is scattered by one thread with a
# guard that writes only inside its own part of y (so never out of bounds)
# and notes any index that is not.  Parts of y are disjoint, so with every
# part local the result is the ordered one whatever the thread count.  If
# any index left its part, every index is checked (the first bad one is
# returned) and then all are written again in one serial pass in input
# order: the last write in row-major order of x wins, for every n_threads.
#
# Windows: where x's parts are planes pooled 2x2 with stride 2 (no pads,
# an even output row), each row of x is written with the two rows of y its
# windows cover, values and zeros side by side (include/pooling_unpool.h),
# rather than zeroing y and scattering into it; row by row, so any number of
# threads share even one plane.  If some index is not in its own window
# (indices from elsewhere), the whole call is done again the general way.
#
# Indices in another format than "onnx" (pooling.indices) are read in
# place where they are offsets inside the part ("relative" 1: NCHW "plane",
# NHWC "tf") or pixels of it with the element's own channel (2: NHWC
# "plane"); there any index outside its part is out of range.
#
# The job's body switches on the element width (itemsize), which is all a
# kind would say here (bits_t has one type per width).
# ===========================================================================

ctypedef fused bits_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline int _unpool_part(const bits_t* x, const int64_t* idx, Py_ssize_t n, bits_t* y,
                             uint64_t lo, uint64_t span) noexcept nogil:
    """y[idx[j] - lo] = x[j] for the indices in [lo, lo + span); 1 if some index was not.

    Unsigned arithmetic folds the range test into one comparison (and wraps
    instead of overflowing); the branch is always taken for MaxPool's indices.
    """
    cdef Py_ssize_t j
    cdef uint64_t d
    cdef int outside = 0
    for j in range(n):
        d = <uint64_t>idx[j] - lo
        if d < span:
            y[d] = x[j]
        else:
            outside = 1
    return outside


cdef inline int _unpool_pixels(const bits_t* x, const int64_t* idx, Py_ssize_t n, bits_t* y,
                               uint64_t pixels, Py_ssize_t C) noexcept nogil:
    """y[idx[j] * C + j % C] = x[j] for the indices in [0, pixels) (NHWC "plane"); 1 if some
    index was not."""
    cdef Py_ssize_t j, c = 0
    cdef int outside = 0
    for j in range(n):
        if <uint64_t>idx[j] < pixels:
            y[idx[j] * C + c] = x[j]
        else:
            outside = 1
        c += 1
        if c == C:
            c = 0
    return outside


cdef struct _UnpoolJob:
    const char* x
    const int64_t* idx
    char* y
    Py_ssize_t itemsize, in_block, out_block, C
    int relative                    # 0: flat offsets; 1: offsets in the part; 2: pixels (+ channel)
    bint fused
    int outside                     # set (pk_atomic_or) when some index left its part
    Py_ssize_t in_h, in_w, out_h, out_w  # windows: the plane of each part (in_h 0: none)
    bint stream                     # windows: stores streamed past the caches


cdef void _zero_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body: y[begin:end] = 0 (as bytes)."""
    cdef _UnpoolJob* j = <_UnpoolJob*>job
    memset(j.y + begin * j.itemsize, 0, (end - begin) * j.itemsize)


cdef void _unpool_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body: parts [begin, end) of x scattered into theirs of y."""
    cdef _UnpoolJob* j = <_UnpoolJob*>job
    cdef int outside
    if j.itemsize == 1:
        outside = _unpool_parts(<uint8_t*>NULL, j, begin, end)
    elif j.itemsize == 2:
        outside = _unpool_parts(<uint16_t*>NULL, j, begin, end)
    elif j.itemsize == 4:
        outside = _unpool_parts(<uint32_t*>NULL, j, begin, end)
    else:
        outside = _unpool_parts(<uint64_t*>NULL, j, begin, end)
    if outside:
        pk_atomic_or(&j.outside, 1)


cdef void _windows_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body: rows [begin, end) of x (over all parts) written with their windows'
    two rows of y; the rows and columns of y that no window covers are zeroed by the rows that
    end their part and their plane row.  32-bit elements."""
    cdef _UnpoolJob* j = <_UnpoolJob*>job
    cdef Py_ssize_t i, b, r, ow = j.out_w, extra = j.out_w - 2 * j.in_w
    cdef const uint32_t* x
    cdef uint32_t* top
    cdef int bad = 0
    for i in range(begin, end):
        b, r = i // j.in_h, i % j.in_h
        x = <const uint32_t*>j.x + i * j.in_w
        top = <uint32_t*>j.y + b * j.out_block + 2 * r * ow
        bad |= pk_unpool_pairs_u32(x, j.idx + i * j.in_w, j.in_w, top, top + ow,
                                   (0 if j.relative else b * j.out_block) + 2 * r * ow, ow, j.stream)
        if extra:
            memset(top + 2 * j.in_w, 0, extra * sizeof(uint32_t))
            memset(top + ow + 2 * j.in_w, 0, extra * sizeof(uint32_t))
        if r == j.in_h - 1 and j.out_h > 2 * j.in_h:
            memset(top + 2 * ow, 0, (j.out_h - 2 * j.in_h) * ow * sizeof(uint32_t))
    if j.stream:
        pk_unpool_fence()  # the streamed stores in order before the pool hears this thread is done
    if bad:
        pk_atomic_or(&j.outside, 1)


cdef int _unpool_parts(bits_t* kind, const _UnpoolJob* j, Py_ssize_t begin, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t b, ib = j.in_block, ob = j.out_block
    cdef const bits_t* x = <const bits_t*>j.x
    cdef bits_t* y = <bits_t*>j.y
    cdef int outside = 0
    for b in range(begin, end):
        if j.fused:  # zero the part just before scattering into it, while it is in cache
            memset(y + b * ob, 0, ob * sizeof(bits_t))
        if j.relative == 2:
            outside |= _unpool_pixels(x + b * ib, j.idx + b * ib, ib, y + b * ob, ob // j.C, j.C)
        else:
            outside |= _unpool_part(x + b * ib, j.idx + b * ib, ib, y + b * ob,
                                    0 if j.relative else b * ob, ob)
    return outside


cdef Py_ssize_t _max_unpool(const bits_t* x, const int64_t* idx, Py_ssize_t n, bits_t* y,
                            Py_ssize_t size, Py_ssize_t blocks, bint fused, bint zeroed,
                            int relative, Py_ssize_t C, const Py_ssize_t* windows,
                            int n_threads) noexcept nogil:
    cdef Py_ssize_t j, r
    cdef uint64_t limit
    cdef _UnpoolJob job
    job.x, job.idx, job.y, job.itemsize = <const char*>x, idx, <char*>y, sizeof(bits_t)
    job.in_block, job.out_block, job.fused, job.outside = n // blocks, size // blocks, fused and not zeroed, 0
    job.relative, job.C = relative, C
    job.in_h, job.in_w, job.out_h, job.out_w = windows[0], windows[1], windows[2], windows[3]
    job.stream = windows[4]
    if job.in_h and sizeof(bits_t) == 4:
        r = blocks * job.in_h
        pk_parallel(_windows_body, &job, r, max(1, r // (16 * n_threads)), n_threads)
        if not job.outside:
            return -1
        # Some index is outside its window: all again, the general way (y holds no zeros now).
        job.outside, job.fused, zeroed = 0, fused, False
    # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
    if not fused and not zeroed:
        pk_parallel(_zero_body, &job, size, max(1, size // (16 * n_threads)), n_threads)
    pk_parallel(_unpool_body, &job, blocks, max(1, blocks // (16 * n_threads)), n_threads)
    if not job.outside:
        return -1
    if relative:  # an index outside its part is out of range: the first one
        limit = <uint64_t>(job.out_block // C if relative == 2 else job.out_block)
        for j in range(n):
            if <uint64_t>idx[j] >= limit:
                return j
        return -1  # (not reached)
    for j in range(n):
        if <uint64_t>idx[j] >= <uint64_t>size:
            return j
    # y is zeros plus some of the writes below, each of which is redone in
    # order, so the ordered pass needs no fresh zeros.
    _unpool_part(x, idx, n, y, 0, size)
    return -1


def max_unpool(const bits_t[::1] x not None, const int64_t[::1] indices not None,
               bits_t[::1] y not None, Py_ssize_t blocks, bint fused, bint zeroed, int n_threads,
               int relative=0, Py_ssize_t C=1, windows=None):
    """Zero y, then y[indices[j]] = x[j] for j in order (all arrays flat).

    blocks (>= 1): the equal parts x and y are cut into (planes).  fused: zero
    each part of y together with its scatter (pays when there are enough parts
    to keep every thread busy); otherwise y is zeroed in one slice per thread
    first.  zeroed: y holds zeros already (a fresh calloc'd result), so it is not zeroed again.

    relative: 0, indices are flat offsets into y; 1, offsets into their own part of y; 2 (C
    channels interleaved in each part), pixels of their own part, at the element's own channel
    j % C.

    windows: (in_h, in_w, out_h, out_w, stream), where every part is a plane of x (in_h x in_w)
    pooled 2x2 with stride 2 and no pads into its plane of y (out_h x out_w, out_h >= 2 in_h,
    out_w >= 2 in_w and even): y is written window by window where each index is in its own
    (32-bit elements; whether it pays, vectors in this build, is the caller's choice:
    UNPOOL_WINDOWS), the general way otherwise; stream (0 or 1): with non-temporal stores
    (include/pooling_unpool.h).

    Returns -1 once y is written, or the position in `indices` of the first
    index outside [0, y.shape[0]) (relative: outside its part's range); y is then partly
    written, but never outside its bounds.  (-2, writing nothing: the arguments break this
    contract.)
    """
    cdef Py_ssize_t n = x.shape[0], size = y.shape[0], r
    cdef Py_ssize_t plane[5]
    plane[0] = plane[1] = plane[2] = plane[3] = plane[4] = 0
    if windows is not None:
        plane[0], plane[1], plane[2], plane[3], plane[4] = windows
    if (indices.shape[0] != n or blocks < 1 or n % blocks or size % blocks or n_threads < 1
            or not 0 <= relative <= 2 or C < 1 or (relative == 2 and (size // blocks) % C)):
        return -2
    if windows is not None and (relative == 2 or min(plane[0], plane[1], plane[2], plane[3]) < 1
                                or not 0 <= plane[4] <= 1
                                or plane[3] % 2 or (n // blocks) % plane[1] or (size // blocks) % plane[3]
                                or (n // blocks) // plane[1] != plane[0]
                                or (size // blocks) // plane[3] != plane[2]
                                or plane[2] // 2 < plane[0] or plane[3] // 2 < plane[1]):
        return -2
    if n == 0 and size == 0:
        return -1
    if size == 0:  # every index is outside an empty output; y has no memory to zero
        return 0
    with nogil:
        r = _max_unpool(&x[0] if n else NULL, &indices[0] if n else NULL, n,
                        &y[0] if size else NULL, size, blocks, fused, zeroed, relative, C, plane,
                        n_threads)
    return r
