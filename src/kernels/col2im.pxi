# ===========================================================================
# col2im.pxi: Col2Im, a gather per row of the image (include/pooling_col2im.h).
#
# Col2Im (behaviour.md §4)
#
# Column element (k, l) of a plane lands at pos_i = beta_i*s_i - pb_i +
# kappa_i*d_i, with kappa = unravel(k, block_shape) and beta = unravel(l, nb).
# The kernel turns that around: for each row of the image (a position on the
# axes before the last) it lists the kernel offsets that land there and from
# which block (the tables built here, once per call), and sums each pixel's
# terms in increasing k, which is behaviour.md §4's order.  A work item is one
# plane and a range of positions on its first spatial axis; each pixel is
# written by one item only, once, so the result is the same for every
# n_threads and however the items are cut.
#
# Its own fused type (col_t: storage types, where MaxPool's pool_t are order
# types) names the kind; the C kernel does the rest by kind.
# ===========================================================================

# Storage types.  Addition differs between them only for bool (logical or),
# so each integer width travels as its unsigned type (wrap-around is defined
# in C for unsigned types only, and gives the same bits as the signed one),
# and bool travels as int8, a type no other kind uses.  uint16 also carries
# float16 and bfloat16 bits: the caller says which with `inf_bits`.
ctypedef fused col_t:
    float
    double
    float complex
    double complex
    int8_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline int _col_kind(col_t* tag, uint16_t inf_bits) noexcept nogil:
    """The kind of col_t (`tag` only selects the type; a job's `kind`, common.pxi's glossary): with
    inf_bits 0 one per storage type, which the scatter's body dispatches on."""
    if col_t is float:
        return PK_COL_FLOAT
    elif col_t is double:
        return PK_COL_DOUBLE
    elif col_t is cython.floatcomplex:
        return PK_COL_CFLOAT
    elif col_t is cython.doublecomplex:
        return PK_COL_CDOUBLE
    elif col_t is int8_t:
        return PK_COL_BOOL
    elif col_t is uint8_t:
        return PK_COL_UINT8
    elif col_t is uint16_t:
        if inf_bits == PK_F16_INF:
            return PK_COL_F16
        if inf_bits == PK_BF16_INF:
            return PK_COL_BF16
        return PK_COL_UINT16
    elif col_t is uint32_t:
        return PK_COL_UINT32
    else:
        return PK_COL_UINT64


cdef struct _ColJob:
    const pk_col_plan* p
    const char* x
    char* y
    const char** kx                 # per thread: p.maxcomb pointers, kxs apart
    Py_ssize_t kxs
    Py_ssize_t xplane, yplane       # bytes of a plane's columns and of its image
    Py_ssize_t rows, nblk, S0, planes
    Py_ssize_t group                # planes an item takes (the register rows of 2-D grids)
    bint prefetch                   # the next item's columns, while one is summed
    int kind


cdef void _col2im_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for col2im: work items [begin, end), the positions [o0, o1) of the first
    axis of a group of planes each (its last one may be short)."""
    cdef _ColJob* j = <_ColJob*>job
    cdef Py_ssize_t u, item, plane, o0, np
    for u in range(begin, end):
        item = u // j.nblk  # (the group's index)
        plane = item * j.group
        np = min(j.group, j.planes - plane)
        o0 = (u - item * j.nblk) * j.rows
        # (the next group's columns only where it is whole: they are asked for as np planes)
        pk_col2im_item(j.kind, j.p, j.x + plane * j.xplane, j.y + plane * j.yplane, o0,
                       min(o0 + j.rows, j.S0), j.kx + tid * j.kxs,
                       np * j.xplane if j.prefetch and plane + np + j.group <= j.planes else 0, np)


cdef Py_ssize_t _floor_mod(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """a mod b in [0, b) for b > 0 and either sign of a."""
    cdef Py_ssize_t r = a % b
    return r + b if r < 0 else r


cdef Py_ssize_t _col_axis(Py_ssize_t S, Py_ssize_t nb, Py_ssize_t blk, Py_ssize_t s, Py_ssize_t d,
                          Py_ssize_t pad, Py_ssize_t kstep, Py_ssize_t xstep, Py_ssize_t* off,
                          Py_ssize_t* pairs) noexcept nogil:
    """An axis before the last: for each position p < S, the pairs (kappa*kstep, b*xstep) of the
    kernel offsets kappa and blocks b that land on p (p = b*s - pad + kappa*d), in increasing kappa,
    at pairs[2*off[p]:2*off[p+1]] (counting sort by position).  Returns the most pairs of a position."""
    cdef Py_ssize_t kap, b, p, most = 0
    for p in range(S + 1):
        off[p] = 0
    for kap in range(blk):
        for b in range(nb):
            p = b * s - pad + kap * d
            if 0 <= p < S:
                off[p + 1] += 1
    for p in range(S):
        most = max(most, off[p + 1])
        off[p + 1] += off[p]
    for kap in range(blk):  # (off[p] is p's next free pair, then the start of p + 1's)
        for b in range(nb):
            p = b * s - pad + kap * d
            if 0 <= p < S:
                pairs[2 * off[p]] = kap * kstep
                pairs[2 * off[p] + 1] = b * xstep
                off[p] += 1
    for p in range(S, 0, -1):
        off[p] = off[p - 1]
    off[0] = 0
    return most


cdef void _col_phases(Py_ssize_t blk, Py_ssize_t s, Py_ssize_t d, Py_ssize_t pad, Py_ssize_t kstep,
                      Py_ssize_t nph, Py_ssize_t* off, Py_ssize_t* pairs) noexcept nogil:
    """An axis as phases: kernel offset kappa lands on the positions r + s*t of phase
    r = (kappa*d - pad) mod s, its block t - q at t.  Phases r < nph (the others have no position
    in the image): phase r's pairs (kappa*kstep, q), in increasing kappa, are
    pairs[2*off[r]:2*off[r+1]] (counting sort by phase)."""
    cdef Py_ssize_t r, kap
    for r in range(nph + 1):
        off[r] = 0
    for kap in range(blk):
        r = _floor_mod(kap * d - pad, s)
        if r < nph:
            off[r + 1] += 1
    for r in range(nph):
        off[r + 1] += off[r]
    for kap in range(blk):  # (off[r] is r's next free pair, then the start of r + 1's)
        r = _floor_mod(kap * d - pad, s)
        if r < nph:
            pairs[2 * off[r]] = kap * kstep
            pairs[2 * off[r] + 1] = (kap * d - pad - r) // s
            off[r] += 1
    for r in range(nph, 0, -1):
        off[r] = off[r - 1]
    off[0] = 0



# ---------------------------------------------------------------------------
# The scatter, for a last axis of stride 1 (docs/tuning.md#col2im-gather says why
# both): per work item, the kernel offsets are the outer loop and each adds its
# blocks as contiguous runs, whole rows merged into one run; for one k at most
# one block lands on a pixel, so every pixel receives its terms in increasing k,
# as the gather adds them.
# ---------------------------------------------------------------------------

# numpy arrays have at most 64 dimensions, so an image has at most 62 spatial
# axes; the Python layer checks it, the per-axis arrays below rely on it.
cdef enum:
    PK_MAX_DIMS = 64
    PK_GAP_MAX = 256     # pixels between runs put back after one run of the span (_col_add_gapped)

cdef struct ColGeom:
    Py_ssize_t n, K, L              # spatial axes, kernel offsets, blocks
    const Py_ssize_t* block         # block_shape
    const Py_ssize_t* image         # image_shape
    const Py_ssize_t* nblocks       # blocks per axis
    const Py_ssize_t* strides
    const Py_ssize_t* dilations
    const Py_ssize_t* pads          # begin pads
    const Py_ssize_t* xstep         # prod(nblocks[i+1:]): a block's step in l along axis i
    const Py_ssize_t* ystep         # prod(image[i+1:]): a position's step in the plane


cdef inline Py_ssize_t _ceil_div(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """ceil(a / b) for b > 0 and either sign of a (C division truncates toward zero)."""
    if b == 1:  # the usual stride, and a division costs tens of cycles
        return a
    return -((-a) // b) if a < 0 else (a + b - 1) // b


cdef inline void _add_to(col_t* y, col_t v) noexcept nogil:
    """y[0] += v: bool by logical or, and a float sum that is already NaN keeps its bits
    (pooling_add.h, pk_sum_keep_nan), so which code adds a term, which the cut into work
    items may decide, never changes the bits of the result."""
    cdef float* yf = <float*>y
    cdef double* yd = <double*>y
    if col_t is float:
        y[0] = pk_sum_keep_nan(y[0], v)
    elif col_t is double:
        y[0] = pk_sum_keep_nan_f64(y[0], v)
    elif col_t is cython.floatcomplex:  # part by part
        yf[0] = pk_sum_keep_nan(yf[0], v.real)
        yf[1] = pk_sum_keep_nan(yf[1], v.imag)
    elif col_t is cython.doublecomplex:
        yd[0] = pk_sum_keep_nan_f64(yd[0], v.real)
        yd[1] = pk_sum_keep_nan_f64(yd[1], v.imag)
    elif col_t is int8_t:
        y[0] |= v
    else:
        y[0] += v


cdef inline void _col_add_f32(float* y, const float* x, Py_ssize_t n, bint prefetch) noexcept nogil:
    """y[:n] += x[:n], with or without a prefetch of x ahead of the loads (pooling_add.h)."""
    if prefetch:
        pk_add_f32_pf(y, x, n)
    else:
        pk_add_f32(y, x, n)


cdef inline void _col_add_row(const col_t* xr, void* dst, Py_ssize_t yo, Py_ssize_t n,
                              uint16_t inf_bits, bint prefetch) noexcept nogil:
    """dst[yo + j] += xr[j] for j < n.

    dst holds col_t, or float32 for 16-bit floats (inf_bits != 0), whose terms
    are widened exactly and rounded once by the caller.
    """
    cdef Py_ssize_t j
    cdef col_t* y = (<col_t*>dst) + yo
    if col_t is float:  # (without a test for overlap: pooling_add.h)
        _col_add_f32((<float*>dst) + yo, xr, n, prefetch)
    elif col_t is uint16_t and inf_bits == PK_F16_INF:  # a register of terms a step (pooling_col2im.h)
        pk_col_add_f16((<float*>dst) + yo, xr, n)
    elif col_t is uint16_t and inf_bits == PK_BF16_INF:
        pk_col_add_bf16((<float*>dst) + yo, xr, n)
    else:  # a contiguous run that vectorises
        for j in range(n):
            _add_to(&y[j], xr[j])


cdef inline bint _col_box(const ColGeom* g, Py_ssize_t o0, Py_ssize_t o1, const Py_ssize_t* kap,
                          Py_ssize_t naxes, Py_ssize_t* lo, Py_ssize_t* hi, Py_ssize_t* b,
                          Py_ssize_t* xo, Py_ssize_t* yo) noexcept nogil:
    """On axes i < naxes, the blocks lo[i] <= b < hi[i] that put kernel offset kap inside the
    slab [o0, o1) of axis 0 (and inside the image on the others).

    False when there are none; else b = lo, and xo, yo advanced to the box's first block.
    """
    cdef Py_ssize_t i, off, first, end
    for i in range(naxes):
        # Block b puts the kernel offset at b*s + off on axis i.
        off = kap[i] * g.dilations[i] - g.pads[i]
        first, end = 0, g.image[i]
        if i == 0:
            first, end = o0, o1
        lo[i] = max(_ceil_div(first - off, g.strides[i]), 0)
        hi[i] = min(_ceil_div(end - off, g.strides[i]), g.nblocks[i])
        if lo[i] >= hi[i]:
            return False
        b[i] = lo[i]
        xo[0] += lo[i] * g.xstep[i]
        yo[0] += (lo[i] * g.strides[i] + off) * g.ystep[i]
    return True


cdef inline bint _col_next(const ColGeom* g, Py_ssize_t row_axis, const Py_ssize_t* lo,
                           const Py_ssize_t* hi, Py_ssize_t* b, Py_ssize_t* xo, Py_ssize_t* yo) noexcept nogil:
    """The odometer over the axes before the rows: False once it has walked the box."""
    cdef Py_ssize_t i = row_axis - 1, span
    while i >= 0:
        b[i] += 1
        xo[0] += g.xstep[i]
        yo[0] += g.strides[i] * g.ystep[i]
        if b[i] < hi[i]:
            return True
        span = hi[i] - lo[i]
        xo[0] -= span * g.xstep[i]
        yo[0] -= span * g.strides[i] * g.ystep[i]
        b[i] = lo[i]
        i -= 1
    return False


cdef inline void _col_rows(const ColGeom* g, const Py_ssize_t* lo, const Py_ssize_t* hi,
                           Py_ssize_t* rows, Py_ssize_t* xrow, Py_ssize_t* yrow) noexcept nogil:
    """The rows of a box (the axis before the last): their count and steps in x and the image."""
    cdef Py_ssize_t row_axis = g.n - 2  # -1 in 1-D: a single row
    rows[0], xrow[0], yrow[0] = 1, 0, 0
    if row_axis >= 0:
        rows[0] = hi[row_axis] - lo[row_axis]
        xrow[0] = g.xstep[row_axis]
        yrow[0] = g.strides[row_axis] * g.ystep[row_axis]


cdef inline void _col_add_gapped(const float* x, float* y, Py_ssize_t count, Py_ssize_t rows,
                                 Py_ssize_t row, bint prefetch) noexcept nogil:
    """`rows` runs of count values, row apart in x and in y, as one run of the whole span.

    The span also adds the values between the runs (row - count per row) to the pixels
    between them: those pixels are saved first and put back after, bit for bit (a pixel
    gets one term per run, so nothing else lands there meanwhile).
    """
    cdef float saved[PK_GAP_MAX]
    cdef Py_ssize_t r, j, gap = row - count, m = rows - 1
    for j in range(gap):  # (columns outer: rows inner, GCC made each row's copy a memcpy call)
        for r in range(m):
            saved[j * m + r] = y[r * row + count + j]
    _col_add_f32(y, x, m * row + count, prefetch)
    for j in range(gap):
        for r in range(m):
            y[r * row + count + j] = saved[j * m + r]


cdef void _col2im_item(const col_t* x, void* dst, const ColGeom* g, Py_ssize_t o0, Py_ssize_t o1,
                       uint16_t inf_bits, bint prefetch) noexcept nogil:
    """Add one plane's columns x (K, L) that land in positions [o0, o1) of axis 0.

    dst: that zeroed slab of the plane (or of the float32 accumulator).  Per
    kernel offset, the blocks landing inside the slab form a box lo <= b < hi:
    its last axis is one strided run per row, the axis before it (the rows) a
    counted loop, and an odometer walks any axes further out.  prefetch: whether float32 runs
    ask for their columns ahead of the loads (pooling._tuning.col2im_run_prefetch).
    """
    cdef Py_ssize_t kap[PK_MAX_DIMS]
    cdef Py_ssize_t lo[PK_MAX_DIMS]
    cdef Py_ssize_t hi[PK_MAX_DIMS]
    cdef Py_ssize_t b[PK_MAX_DIMS]
    cdef Py_ssize_t last = g.n - 1, run_step = g.strides[last]
    cdef Py_ssize_t k, i, r, xo, yo, count, rows, xrow, yrow
    for i in range(g.n):
        kap[i] = 0
    for k in range(g.K):
        if k:  # the next kernel offset, row-major: the last axis moves fastest
            i = last
            kap[i] += 1
            while kap[i] == g.block[i]:
                kap[i] = 0
                i -= 1
                kap[i] += 1
        xo = k * g.L
        yo = -o0 * g.ystep[0]
        if not _col_box(g, o0, o1, kap, g.n, lo, hi, b, &xo, &yo):
            continue
        count = hi[last] - lo[last]
        _col_rows(g, lo, hi, &rows, &xrow, &yrow)
        if rows > 1 and run_step == 1 and xrow == count and yrow == count:
            # whole rows back to back in x and in the image (a kernel offset whose blocks cover
            # every column, stride 1): one run of all of them
            count, rows = count * rows, 1
        if col_t is float:
            if (rows > 1 and run_step == 1 and xrow == yrow and count < xrow and 4 * (xrow - count) <= count
                    and (xrow - count) * (rows - 1) <= PK_GAP_MAX):
                # rows a few columns short of whole (VOLO's fold, a pad of 1: 27 of 28): one run
                # of all of them too, and the pixels between them put back as they were
                # (docs/tuning.md#col2im-gapped-rows)
                while True:
                    _col_add_gapped(x + xo, <float*>dst + yo, count, rows, xrow, prefetch)
                    if not _col_next(g, g.n - 2, lo, hi, b, &xo, &yo):
                        break
                continue
        while True:
            for r in range(rows):
                _col_add_row(x + xo + r * xrow, dst, yo + r * yrow, count, inf_bits, prefetch)
            if not _col_next(g, g.n - 2, lo, hi, b, &xo, &yo):
                break


cdef struct _ScatterJob:
    const ColGeom* g
    const char* x
    char* y
    float* acc                      # 16-bit floats: float32 sums, acc_stride per thread; else NULL
    Py_ssize_t acc_stride, P, rows, nblk
    int kind
    uint16_t inf_bits
    bint prefetch                   # float32 runs ask for their columns ahead (_col2im_item)


cdef void _col2im_items(col_t* kind, const _ScatterJob* j, Py_ssize_t begin, Py_ssize_t end,
                        int tid) noexcept nogil:
    """Work items [begin, end): one plane's positions [o0, o1) of the first axis each."""
    cdef const ColGeom* g = j.g
    cdef const col_t* xb = <const col_t*>j.x
    cdef col_t* yb = <col_t*>j.y
    cdef Py_ssize_t u, plane, o0, o1, start, size, row = g.ystep[0]
    cdef float* a
    for u in range(begin, end):
        plane = u // j.nblk
        o0 = (u - plane * j.nblk) * j.rows
        o1 = min(o0 + j.rows, g.image[0])
        start = plane * j.P + o0 * row
        size = (o1 - o0) * row
        if col_t is uint16_t:
            if j.acc != NULL:
                a = j.acc + tid * j.acc_stride
                pk_zero(a, size * sizeof(float))
                _col2im_item(xb + plane * g.K * g.L, a, g, o0, o1, j.inf_bits, 0)
                if j.inf_bits == PK_F16_INF:  # (a register at a time: a loop of the scalar stays scalar)
                    pk_f32_to_f16_run(yb + start, a, size)
                else:
                    pk_f32_to_bf16_run(yb + start, a, size)
                continue
        pk_zero(yb + start, size * sizeof(col_t))  # (not memset: pooling_zero.h)
        _col2im_item(xb + plane * g.K * g.L, yb + start, g, o0, o1, 0, j.prefetch)


cdef _col2im_scatter(const col_t[:, :, ::1] x, col_t[:, ::1] y, float[:, ::1] acc,
                     const Py_ssize_t[:, ::1] geom, Py_ssize_t rows_per_item, bint prefetch,
                     uint16_t inf_bits, int n_threads):
    """col2im's scatter, for a last axis of stride 1: the arguments as col2im's.

    geom: one column per spatial axis; rows block_shape, image_shape, blocks
    per axis, strides, dilations, begin pads, prod(nblocks[i+1:]) and
    prod(image[i+1:]).  rows_per_item: positions of the first axis per work
    item.  inf_bits: 0, or the +inf pattern of float16 / bfloat16 when x and y
    hold those bits; then acc is float32 scratch of shape
    (n_threads, rows_per_item * prod(image[1:])), else None.  prefetch: whether float32 runs ask
    for their columns ahead of the loads.
    """
    cdef ColGeom g
    g.n = geom.shape[1]
    g.K = x.shape[1]
    g.L = x.shape[2]
    g.block = &geom[0, 0]
    g.image = &geom[1, 0]
    g.nblocks = &geom[2, 0]
    g.strides = &geom[3, 0]
    g.dilations = &geom[4, 0]
    g.pads = &geom[5, 0]
    g.xstep = &geom[6, 0]
    g.ystep = &geom[7, 0]
    cdef Py_ssize_t planes = x.shape[0], S0 = g.image[0]
    cdef _ScatterJob j
    j.g, j.P, j.rows, j.inf_bits, j.prefetch = &g, y.shape[1], rows_per_item, inf_bits, prefetch
    j.nblk = (S0 + rows_per_item - 1) // rows_per_item
    cdef Py_ssize_t items = planes * j.nblk
    if items == 0 or j.P == 0:
        return
    j.x, j.y, j.kind, j.acc, j.acc_stride = <const char*>&x[0, 0, 0], <char*>&y[0, 0], _col_kind(<col_t*>NULL, 0), NULL, 0
    if col_t is uint16_t:
        if inf_bits != 0:
            j.acc, j.acc_stride = &acc[0, 0], acc.shape[1]
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_scatter_body, &j, items, max(1, items // (16 * n_threads)), n_threads)


def narrow_16bit(const float[::1] f not None, uint16_t[::1] out not None, uint16_t inf_bits):
    """out[i] = f[i] rounded to nearest even in float16 (inf_bits PK_F16_INF) or bfloat16, i below the
    shorter length, a register at a time as Col2Im narrows its sums in this build (the tests' hook:
    pooling._runtime has the scalar rule only)."""
    cdef Py_ssize_t n = min(f.shape[0], out.shape[0])
    if n == 0:
        return
    with nogil:
        if inf_bits == PK_F16_INF:
            pk_f32_to_f16_run(&out[0], &f[0], n)
        else:
            pk_f32_to_bf16_run(&out[0], &f[0], n)


def col2im(const col_t[:, :, ::1] x not None, col_t[:, ::1] y not None, float[:, ::1] acc,
           const Py_ssize_t[:, ::1] geom not None, Py_ssize_t rows_per_item, bint prefetch,
           bint registers, bint gaps, uint16_t inf_bits, int n_threads, Py_ssize_t group=1):
    """Col2Im over planes: columns x (planes, K, L) -> images y (planes, prod(image_shape)).

    geom: one column per spatial axis; rows block_shape, image_shape, blocks
    per axis, strides, dilations, begin pads, prod(nblocks[i+1:]) and
    prod(image[i+1:]).  rows_per_item: positions of the first axis per work
    item.  prefetch: whether each item asks for the next plane's columns (the gather), or float32
    runs for their columns ahead of the loads (the scatter).  registers:
    whether grids of strides 2-4 (float32, the 16-bit floats) may be summed in registers
    (pk_col_regs; False forces the general grid, or the rows where phases are longer than a row of
    blocks).  gaps: whether grids and 1-D folds whose blocks are narrower than the stride are copied
    as the tiled ones (pk_col_tiles; False: summed as the others).  inf_bits: 0, or the +inf pattern
    of float16 / bfloat16 when x and y hold those bits.  A last axis of stride 1 goes to the
    scatter, which takes acc: float32 sums for 16-bit floats, of shape (n_threads, rows_per_item *
    prod(image[1:])), else None.  group: planes a work item takes where the register rows serve a
    2-D grid (each row's sources found once for them, docs/tuning.md#col2im-plane-groups; elsewhere
    1).
    """
    cdef Py_ssize_t n = geom.shape[1], last = n - 1, planes = x.shape[0], i, kstep, size
    if geom[3, last] == 1:
        _col2im_scatter(x, y, acc, geom, rows_per_item, prefetch, inf_bits, n_threads)
        return
    cdef pk_col_plan p
    cdef _ColJob j
    cdef const Py_ssize_t* block = &geom[0, 0]
    cdef const Py_ssize_t* image = &geom[1, 0]
    cdef const Py_ssize_t* nblocks = &geom[2, 0]
    cdef const Py_ssize_t* strides = &geom[3, 0]
    cdef const Py_ssize_t* dilations = &geom[4, 0]
    cdef const Py_ssize_t* pads = &geom[5, 0]
    cdef const Py_ssize_t* xstep = &geom[6, 0]
    j.nblk = (image[0] + rows_per_item - 1) // rows_per_item
    cdef Py_ssize_t items = planes * j.nblk
    if items == 0 or y.shape[1] == 0:
        return
    # The tables: per axis before the last, image[i] + 1 offsets and 2 * block[i] * nblocks[i]
    # pair values; the last axis, stride + 1 offsets and 2 * block pair values.
    size = min(strides[last], image[last]) + 1 + 2 * block[last]
    if n > 1:
        size += min(strides[last - 1], image[last - 1]) + 1 + 2 * block[last - 1]
    for i in range(last):
        size += image[i] + 1 + 2 * block[i] * nblocks[i]
    cdef Py_ssize_t* tab = <Py_ssize_t*>malloc(size * sizeof(Py_ssize_t))
    cdef const Py_ssize_t* offs[PK_COL_MAX_AXES]
    cdef const Py_ssize_t* pres[PK_COL_MAX_AXES]
    cdef Py_ssize_t* at = tab
    if tab == NULL:
        raise MemoryError()
    # kx's length: the product of each axis' most pairs, an axis without any counted as 1 (a grid's
    # rows skip the axis before the last, whose pairs may be none while the axes before it have some).
    p.maxcomb = 1
    kstep = block[last]
    for i in range(last - 1, -1, -1):
        offs[i], pres[i] = at, at + image[i] + 1
        p.maxcomb *= max(1, _col_axis(image[i], nblocks[i], block[i], strides[i], dilations[i], pads[i], kstep,
                                      xstep[i], at, at + image[i] + 1))
        at += image[i] + 1 + 2 * block[i] * nblocks[i]
        kstep *= block[i]
    # The last axis: kernel offset kj lands on phase r = (kj*d - pad) mod s, its block t - q at
    # position t of the phase; likewise the axis before it for the grids.
    cdef Py_ssize_t lph = min(strides[last], image[last]), hph = 0
    cdef bint copies = 0, gapped = 0
    if n > 1:
        hph = min(strides[last - 1], image[last - 1])
    cdef Py_ssize_t* loff = at
    cdef Py_ssize_t* lpairs = at + lph + 1
    _col_phases(block[last], strides[last], dilations[last], pads[last], 1, lph, loff, lpairs)
    at = lpairs + 2 * block[last]
    cdef Py_ssize_t* hoff = at
    cdef Py_ssize_t* hpairs = at + hph + 1
    p.grid, p.tiled = 0, 0
    p.lph, p.hph = lph, hph
    if n > 1:
        _col_phases(block[last - 1], strides[last - 1], dilations[last - 1], pads[last - 1], block[last],
                    hph, hoff, hpairs)
        p.hstep, p.nbh, p.hoff, p.hlast = strides[last - 1], nblocks[last - 1], hoff, hpairs
        # A grid sums each source's rows as one flat run: the phases' columns must fit in a row of
        # blocks, and a row of blocks in the chunk.
        p.grid = ((image[last] + strides[last] - 1) // strides[last] <= nblocks[last]
                  and lph * nblocks[last] * pk_col_unit(_col_kind(<col_t*>NULL, inf_bits)) <= PK_COL_GRID_CHUNK)
        # Blocks that tile the grid: each pixel one term, copied (pk_col_tiles; a block the image's
        # ends cut through a stack buffer of one block), and at most one prefix a grid (then the
        # grid's buffer, which may not fit, is never used).  Blocks that leave gaps (each pixel one
        # term or none) likewise, decided below: where the registers do not serve them, and for
        # elements of 1 and 2 bytes only where the general grid cannot hold the phases
        # (docs/tuning.md#col2im-gapped-folds).
        copies = (p.maxcomb == 1 and dilations[last] == 1 and dilations[last - 1] == 1
                  and strides[last] * <Py_ssize_t>sizeof(col_t) <= PK_COL_GRID_CHUNK)
        p.tiled = copies and block[last] == strides[last] and block[last - 1] == strides[last - 1]
        gapped = (copies and gaps and not p.tiled and block[last] <= strides[last]
                  and block[last - 1] <= strides[last - 1] and (sizeof(col_t) >= 4 or not p.grid))
        p.tph, p.tpw, p.tkh, p.tkw = pads[last - 1], pads[last], block[last - 1], block[last]
        p.grid = p.grid or p.tiled
    else:  # 1-D: blocks that tile the axis or leave gaps (elements of 8 bytes and more: the narrower
        # ran faster summed, docs/tuning.md#col2im-gapped-folds), a block through pk_col_tiles_row's
        # buffer where an item cuts it
        p.tiled = ((block[0] == strides[0] or gaps and block[0] < strides[0] and sizeof(col_t) >= 8)
                   and dilations[0] == 1
                   and strides[0] * <Py_ssize_t>sizeof(col_t) <= PK_COL_GRID_CHUNK)
        p.tph, p.tpw, p.tkh, p.tkw = 0, pads[0], 1, block[0]
    p.n, p.L, p.K, p.image, p.step, p.nbl = n, x.shape[2], x.shape[1], image, strides[last], nblocks[last]
    p.off, p.pre, p.loff, p.last = offs, pres, loff, lpairs
    p.xlo = <const char*>&x[0, 0, 0]
    p.xhi = p.xlo + planes * x.shape[1] * x.shape[2] * sizeof(col_t)
    p.regs = registers and pk_col_regs_fit(_col_kind(<col_t*>NULL, inf_bits), &p)  # (not while tiled)
    # A grid with gaps that the registers serve is summed there where its copy goes value by value
    # (the 16-bit floats): their rows of a few blocks ran faster there.  float32's copy goes in
    # vectors where the build has them (pk_col_gap_f32v), faster than the registers
    # (docs/tuning.md#col2im-gapped-folds).
    if gapped and (not p.regs or (col_t is float and PK_SIMD)):
        p.tiled = p.grid = 1
        p.regs = 0
    j.group = max(1, group) if p.regs and n == 2 else 1
    items = (planes + j.group - 1) // j.group * j.nblk
    n_threads = <int>min(n_threads, items)
    # (a page between threads' pointers, as MaxPool's scratch: maxpool_launch.pxi's _padded)
    j.kxs = p.maxcomb + 4096 // sizeof(char*)
    j.kx = <const char**>malloc(n_threads * j.kxs * sizeof(char*))
    if j.kx == NULL:
        free(tab)
        raise MemoryError()
    j.p, j.rows, j.S0, j.planes, j.prefetch = &p, rows_per_item, image[0], planes, prefetch
    j.kind = _col_kind(<col_t*>NULL, inf_bits)
    j.x, j.y = <const char*>&x[0, 0, 0], <char*>&y[0, 0]
    j.xplane, j.yplane = x.shape[1] * x.shape[2] * sizeof(col_t), y.shape[1] * sizeof(col_t)
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_col2im_body, &j, items, max(1, items // (16 * n_threads)), n_threads)
    free(j.kx)
    free(tab)
