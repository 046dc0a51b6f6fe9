# ===========================================================================
# col2im.pxi: Col2Im's scatter-add.
#
# Its own fused type (col_t: storage types, where MaxPool's pool_t are order
# types), its own kinds (COL_*), and work items that each own a slab of
# output rows so no two threads add into one element.
#
# Col2Im (behaviour.md §4)
#
# Column element (k, l) of a plane lands at pos_i = beta_i*s_i - pb_i +
# kappa_i*d_i, with kappa = unravel(k, block_shape) and beta = unravel(l, nb).
# A work item is one plane and a range of positions on its first spatial
# axis: no other item writes there, so threads never share an output element.
# Inside an item the kernel offsets k are the outer loop, and for one k at
# most one block lands on a pixel, so every pixel receives its terms in
# increasing k, which is behaviour.md §4's order: the result is the same for every
# n_threads and however the items are cut.  Offsets that can never meet on a
# pixel (neighbours on the last axis less than a stride apart) go together,
# block by block, which keeps that order.
# ===========================================================================

# numpy arrays have at most 64 dimensions, so an image has at most 62 spatial
# axes; the Python layer checks it, the per-axis arrays below rely on it.
cdef enum:
    PK_MAX_DIMS = 64
    PK_GROUP_MAX = 64    # kernel offsets added together, block by block (_col2im_item_grouped)
    PK_GAP_MAX = 256     # pixels between runs put back after one run of the span (_col_add_gapped)

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


# The kinds of col_t (a job's `kind`, common.pxi's glossary).
cdef enum:
    COL_FLOAT = 0
    COL_DOUBLE = 1
    COL_CFLOAT = 2
    COL_CDOUBLE = 3
    COL_INT8 = 4
    COL_UINT8 = 5
    COL_UINT16 = 6
    COL_UINT32 = 7
    COL_UINT64 = 8


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


cdef inline void _col_add_run(const col_t* xr, void* dst, Py_ssize_t yo, Py_ssize_t n,
                              Py_ssize_t step, uint16_t inf_bits) noexcept nogil:
    """dst[yo + j*step] += xr[j] for j < n.

    dst holds col_t, or float32 for 16-bit floats (inf_bits != 0), whose terms
    are widened exactly and rounded once by the caller.
    """
    cdef Py_ssize_t j
    cdef col_t* y = (<col_t*>dst) + yo
    cdef float* acc = (<float*>dst) + yo
    if col_t is uint16_t:
        if inf_bits == PK_F16_INF:
            for j in range(n):
                acc[j * step] = pk_sum_keep_nan(acc[j * step], pk_f16_to_f32(xr[j]))
            return
        if inf_bits == PK_BF16_INF:
            for j in range(n):
                acc[j * step] = pk_sum_keep_nan(acc[j * step], pk_bf16_to_f32(xr[j]))
            return
    for j in range(n):
        _add_to(&y[j * step], xr[j])


cdef inline void _col_add_row(const col_t* xr, void* dst, Py_ssize_t yo, Py_ssize_t n,
                              Py_ssize_t step, uint16_t inf_bits) noexcept nogil:
    if col_t is float:  # (without a test for overlap: pooling_add.h)
        if step == 1:
            pk_add_f32((<float*>dst) + yo, xr, n)
        else:
            pk_add_strided_f32((<float*>dst) + yo, xr, n, step)
    elif step == 1:  # inlined with a constant step: a contiguous run that vectorises
        _col_add_run(xr, dst, yo, n, 1, inf_bits)
    else:
        _col_add_run(xr, dst, yo, n, step, inf_bits)


cdef inline void _col_add_group(const col_t* x0, Py_ssize_t L, void* dst, Py_ssize_t yo, Py_ssize_t nb,
                                Py_ssize_t step, Py_ssize_t ng, Py_ssize_t d, uint16_t inf_bits) noexcept nogil:
    """dst[yo + b*step + m*d] += x0[m*L + b] for b < nb and m < ng, block by block: float32,
    float64, and float16 / bfloat16 into float32 sums.

    The ng kernel offsets (rows m*L of x0) never put two terms on one pixel,
    so their order is free: block by block, each term lands next to the last
    one, where one run per offset would stride `step` values apart through
    the image (docs/tuning.md#col2im-sparse-runs).  A float sum that is
    already NaN keeps its bits (pooling_add.h, pk_sum_keep_nan), so a term
    may take either code here (the cut into work items decides) for the same
    bits.
    """
    cdef Py_ssize_t bk, m, p, q
    cdef col_t* y = (<col_t*>dst) + yo
    cdef float* acc = (<float*>dst) + yo
    if d == 1:  # the offsets' terms side by side: stores of whole vectors (pooling_add.h)
        if col_t is float:
            pk_add_group_f32(y, x0, L, nb, step, ng)
            return
        elif col_t is uint16_t:
            if inf_bits == PK_F16_INF:
                pk_add_group_f16(acc, x0, L, nb, step, ng)
                return
            if inf_bits == PK_BF16_INF:
                pk_add_group_bf16(acc, x0, L, nb, step, ng)
                return
    for bk in range(nb):
        for m in range(ng):
            p, q = bk * step + m * d, m * L + bk
            if col_t is uint16_t:
                if inf_bits == PK_F16_INF:
                    acc[p] = pk_sum_keep_nan(acc[p], pk_f16_to_f32(x0[q]))
                    continue
                if inf_bits == PK_BF16_INF:
                    acc[p] = pk_sum_keep_nan(acc[p], pk_bf16_to_f32(x0[q]))
                    continue
            _add_to(&y[p], x0[q])


cdef inline void _col_add_block(const col_t* xr, Py_ssize_t L, void* dst, Py_ssize_t yr,
                                const Py_ssize_t* glo, const Py_ssize_t* ghi, Py_ssize_t ng, Py_ssize_t bk,
                                Py_ssize_t step, Py_ssize_t d, uint16_t inf_bits) noexcept nogil:
    """Block bk of a row, for the offsets that have it: glo[m] <= bk < ghi[m], a range ma <= m < mb
    (both bounds fall as m grows)."""
    cdef Py_ssize_t ma = 0, mb
    while ma < ng and glo[ma] > bk:
        ma += 1
    mb = ma
    while mb < ng and ghi[mb] > bk:
        mb += 1
    if ma < mb:
        _col_add_group(xr + ma * L + bk, L, dst, yr + bk * step + ma * d, 1, step, mb - ma, d, inf_bits)


cdef inline void _col_add_rows(const col_t* xr, Py_ssize_t L, void* dst, Py_ssize_t yr,
                               const Py_ssize_t* glo, const Py_ssize_t* ghi, Py_ssize_t ng,
                               Py_ssize_t step, Py_ssize_t d, uint16_t inf_bits) noexcept nogil:
    """One row of ng kernel offsets: offset m adds its blocks glo[m] <= b < ghi[m] from
    xr[m*L + b] to dst[yr + b*step + m*d].

    The offsets lie less than a stride apart, so their ranges differ by at most
    one block at each end: the blocks all of them have go in one call, the
    (at most two) others one block at a time, all through _col_add_group.
    """
    cdef Py_ssize_t blo = glo[0], bhi = ghi[ng - 1], bk
    if blo < bhi:
        _col_add_group(xr + blo, L, dst, yr + blo * step, bhi - blo, step, ng, d, inf_bits)
        if glo[ng - 1] < blo:
            _col_add_block(xr, L, dst, yr, glo, ghi, ng, blo - 1, step, d, inf_bits)
        if ghi[0] > bhi:
            _col_add_block(xr, L, dst, yr, glo, ghi, ng, bhi, step, d, inf_bits)
    else:
        for bk in range(glo[ng - 1], ghi[0]):
            _col_add_block(xr, L, dst, yr, glo, ghi, ng, bk, step, d, inf_bits)


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
                                 Py_ssize_t row) noexcept nogil:
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
    pk_add_f32(y, x, m * row + count)
    for j in range(gap):
        for r in range(m):
            y[r * row + count + j] = saved[j * m + r]


cdef void _col2im_item(const col_t* x, void* dst, const ColGeom* g, Py_ssize_t o0, Py_ssize_t o1,
                       uint16_t inf_bits) noexcept nogil:
    """Add one plane's columns x (K, L) that land in positions [o0, o1) of axis 0.

    dst: that zeroed slab of the plane (or of the float32 accumulator).  Per
    kernel offset, the blocks landing inside the slab form a box lo <= b < hi:
    its last axis is one strided run per row, the axis before it (the rows) a
    counted loop, and an odometer walks any axes further out.
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
                    _col_add_gapped(x + xo, <float*>dst + yo, count, rows, xrow)
                    if not _col_next(g, g.n - 2, lo, hi, b, &xo, &yo):
                        break
                continue
        while True:
            for r in range(rows):
                _col_add_row(x + xo + r * xrow, dst, yo + r * yrow, count, run_step, inf_bits)
            if not _col_next(g, g.n - 2, lo, hi, b, &xo, &yo):
                break


cdef void _col2im_item_grouped(const col_t* x, void* dst, const ColGeom* g, Py_ssize_t o0, Py_ssize_t o1,
                               Py_ssize_t reach, uint16_t inf_bits) noexcept nogil:
    """_col2im_item for a sparse last axis: up to `reach` kernel offsets at a time.

    Neighbouring offsets on the last axis less than a stride apart (reach - 1
    dilations < the stride) never land on one pixel, so each pixel still
    receives its terms in increasing k.  They share the box of the axes
    before the last; on the last axis each has its own range of blocks.
    """
    cdef Py_ssize_t kap[PK_MAX_DIMS]
    cdef Py_ssize_t lo[PK_MAX_DIMS]
    cdef Py_ssize_t hi[PK_MAX_DIMS]
    cdef Py_ssize_t b[PK_MAX_DIMS]
    cdef Py_ssize_t glo[PK_GROUP_MAX]
    cdef Py_ssize_t ghi[PK_GROUP_MAX]
    cdef Py_ssize_t last = g.n - 1, step = g.strides[last], d = g.dilations[last]
    cdef Py_ssize_t k, i, m, r, ng, off, first, end, xo, yo, rows, xrow, yrow
    for i in range(g.n):
        kap[i] = 0
    k = 0
    while k < g.K:
        ng = min(reach, g.block[last] - kap[last])
        xo = k * g.L
        yo = -o0 * g.ystep[0]
        if _col_box(g, o0, o1, kap, last, lo, hi, b, &xo, &yo):
            off = kap[last] * d - g.pads[last]
            first, end = 0, g.image[last]
            if last == 0:
                first, end = o0, o1
            for m in range(ng):
                glo[m] = max(_ceil_div(first - off - m * d, step), 0)
                ghi[m] = min(_ceil_div(end - off - m * d, step), g.nblocks[last])
            _col_rows(g, lo, hi, &rows, &xrow, &yrow)
            while glo[ng - 1] < ghi[0]:  # (the widest range: blocks that any of them has)
                for r in range(rows):
                    _col_add_rows(x + xo + r * xrow, g.L, dst, yo + off + r * yrow, glo, ghi, ng, step,
                                  d, inf_bits)
                if not _col_next(g, g.n - 2, lo, hi, b, &xo, &yo):
                    break
        k += ng
        kap[last] += ng  # the next offset, row-major: the last axis moves fastest
        i = last
        while i > 0 and kap[i] == g.block[i]:
            kap[i] = 0
            i -= 1
            kap[i] += 1


def col2im(const col_t[:, :, ::1] x not None, col_t[:, ::1] y not None, float[:, ::1] acc,
           const Py_ssize_t[:, ::1] geom not None, Py_ssize_t rows_per_item, Py_ssize_t reach,
           uint16_t inf_bits, int n_threads):
    """Col2Im over planes: columns x (planes, K, L) -> images y (planes, prod(image_shape)).

    geom: one column per spatial axis; rows block_shape, image_shape, blocks
    per axis, strides, dilations, begin pads, prod(nblocks[i+1:]) and
    prod(image[i+1:]).  rows_per_item: positions of the first axis per work
    item.  inf_bits: 0, or the +inf pattern of float16 / bfloat16 when x and y
    hold those bits; then acc is float32 scratch of shape
    (n_threads, rows_per_item * prod(image[1:])), else None.
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
    cdef _ColJob j
    j.g, j.P, j.rows, j.inf_bits = &g, y.shape[1], rows_per_item, inf_bits
    j.reach = max(1, min(reach, (g.strides[g.n - 1] - 1) // g.dilations[g.n - 1] + 1,
                         <Py_ssize_t>PK_GROUP_MAX))
    j.nblk = (S0 + rows_per_item - 1) // rows_per_item
    cdef Py_ssize_t items = planes * j.nblk
    if items == 0 or j.P == 0:
        return
    j.x, j.y, j.kind, j.acc, j.acc_stride = <const char*>&x[0, 0, 0], <char*>&y[0, 0], _col_kind(<col_t*>NULL), NULL, 0
    if col_t is uint16_t:
        if inf_bits != 0:
            j.acc, j.acc_stride = &acc[0, 0], acc.shape[1]
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_col2im_body, &j, items, max(1, items // (16 * n_threads)), n_threads)


cdef struct _ColJob:
    const ColGeom* g
    const char* x
    char* y
    float* acc                      # 16-bit floats: float32 sums, acc_stride per thread; else NULL
    Py_ssize_t acc_stride, P, rows, nblk
    Py_ssize_t reach                # kernel offsets added together (_col2im_item_grouped), 1: none
    int kind
    uint16_t inf_bits


cdef inline int _col_kind(col_t* tag) noexcept nogil:
    """The kind of col_t (`tag` only selects the type)."""
    if col_t is float:
        return COL_FLOAT
    elif col_t is double:
        return COL_DOUBLE
    elif col_t is cython.floatcomplex:
        return COL_CFLOAT
    elif col_t is cython.doublecomplex:
        return COL_CDOUBLE
    elif col_t is int8_t:
        return COL_INT8
    elif col_t is uint8_t:
        return COL_UINT8
    elif col_t is uint16_t:
        return COL_UINT16
    elif col_t is uint32_t:
        return COL_UINT32
    else:
        return COL_UINT64


cdef void _col2im_items(col_t* kind, const _ColJob* j, Py_ssize_t begin, Py_ssize_t end,
                        int tid) noexcept nogil:
    """Work items [begin, end): one plane's positions [o0, o1) of the first axis each."""
    cdef const ColGeom* g = j.g
    cdef const col_t* xb = <const col_t*>j.x
    cdef col_t* yb = <col_t*>j.y
    cdef Py_ssize_t u, i, plane, o0, o1, start, size, row = g.ystep[0]
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
                if j.reach > 1:
                    _col2im_item_grouped(xb + plane * g.K * g.L, a, g, o0, o1, j.reach, j.inf_bits)
                else:
                    _col2im_item(xb + plane * g.K * g.L, a, g, o0, o1, j.inf_bits)
                if j.inf_bits == PK_F16_INF:
                    for i in range(size):
                        yb[start + i] = pk_f32_to_f16(a[i])
                else:
                    for i in range(size):
                        yb[start + i] = pk_f32_to_bf16(a[i])
                continue
        pk_zero(yb + start, size * sizeof(col_t))  # (not memset: pooling_zero.h)
        if col_t is float or col_t is double:  # (the float kinds only: col2im.py, _run)
            if j.reach > 1:
                _col2im_item_grouped(xb + plane * g.K * g.L, yb + start, g, o0, o1, j.reach, 0)
                continue
        _col2im_item(xb + plane * g.K * g.L, yb + start, g, o0, o1, 0)
