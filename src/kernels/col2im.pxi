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
# n_threads and however the items are cut.
# ===========================================================================

# numpy arrays have at most 64 dimensions, so an image has at most 62 spatial
# axes; the Python layer checks it, the per-axis arrays below rely on it.
cdef enum:
    PK_MAX_DIMS = 64

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
                acc[j * step] += pk_f16_to_f32(xr[j])
            return
        if inf_bits == PK_BF16_INF:
            for j in range(n):
                acc[j * step] += pk_bf16_to_f32(xr[j])
            return
    for j in range(n):
        if col_t is int8_t:
            y[j * step] |= xr[j]
        else:
            y[j * step] += xr[j]


cdef inline void _col_add_row(const col_t* xr, void* dst, Py_ssize_t yo, Py_ssize_t n,
                              Py_ssize_t step, uint16_t inf_bits) noexcept nogil:
    if step == 1:  # inlined with a constant step: a contiguous run that vectorises
        if col_t is float:  # (without a test for overlap: pooling_add.h)
            pk_add_f32((<float*>dst) + yo, xr, n)
            return
        _col_add_run(xr, dst, yo, n, 1, inf_bits)
    else:
        _col_add_run(xr, dst, yo, n, step, inf_bits)


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
    cdef Py_ssize_t last = g.n - 1, row_axis = g.n - 2  # -1 in 1-D: a single run
    cdef Py_ssize_t run_step = g.strides[last]
    cdef Py_ssize_t k, i, r, off, first, end, xo, yo, count, rows, xrow, yrow, span
    cdef bint empty
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
        empty = False
        for i in range(g.n):
            # Block b puts this kernel offset at b*s + off on axis i.
            off = kap[i] * g.dilations[i] - g.pads[i]
            first, end = 0, g.image[i]
            if i == 0:
                first, end = o0, o1
            lo[i] = max(_ceil_div(first - off, g.strides[i]), 0)
            hi[i] = min(_ceil_div(end - off, g.strides[i]), g.nblocks[i])
            if lo[i] >= hi[i]:
                empty = True
                break
            b[i] = lo[i]
            xo = xo + lo[i] * g.xstep[i]
            yo = yo + (lo[i] * g.strides[i] + off) * g.ystep[i]
        if empty:
            continue
        count = hi[last] - lo[last]
        rows, xrow, yrow = 1, 0, 0
        if row_axis >= 0:
            rows = hi[row_axis] - lo[row_axis]
            xrow = g.xstep[row_axis]
            yrow = g.strides[row_axis] * g.ystep[row_axis]
        if rows > 1 and run_step == 1 and xrow == count and yrow == count:
            # whole rows back to back in x and in the image (a kernel offset whose blocks cover
            # every column, stride 1): one run of all of them
            count, rows = count * rows, 1
        while True:
            for r in range(rows):
                _col_add_row(x + xo + r * xrow, dst, yo + r * yrow, count, run_step, inf_bits)
            i = row_axis - 1
            while i >= 0:
                b[i] += 1
                xo = xo + g.xstep[i]
                yo = yo + g.strides[i] * g.ystep[i]
                if b[i] < hi[i]:
                    break
                span = hi[i] - lo[i]
                xo = xo - span * g.xstep[i]
                yo = yo - span * g.strides[i] * g.ystep[i]
                b[i] = lo[i]
                i -= 1
            if i < 0:
                break


def col2im(const col_t[:, :, ::1] x not None, col_t[:, ::1] y not None, float[:, ::1] acc,
           const Py_ssize_t[:, ::1] geom not None, Py_ssize_t rows_per_item,
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


cdef void _col2im_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for col2im: work items [begin, end) on thread tid."""
    cdef _ColJob* j = <_ColJob*>job
    if j.kind == COL_FLOAT:
        _col2im_items(<float*>NULL, j, begin, end, tid)
    elif j.kind == COL_DOUBLE:
        _col2im_items(<double*>NULL, j, begin, end, tid)
    elif j.kind == COL_CFLOAT:
        _col2im_items(<cython.floatcomplex*>NULL, j, begin, end, tid)
    elif j.kind == COL_CDOUBLE:
        _col2im_items(<cython.doublecomplex*>NULL, j, begin, end, tid)
    elif j.kind == COL_INT8:
        _col2im_items(<int8_t*>NULL, j, begin, end, tid)
    elif j.kind == COL_UINT8:
        _col2im_items(<uint8_t*>NULL, j, begin, end, tid)
    elif j.kind == COL_UINT16:
        _col2im_items(<uint16_t*>NULL, j, begin, end, tid)
    elif j.kind == COL_UINT32:
        _col2im_items(<uint32_t*>NULL, j, begin, end, tid)
    else:
        _col2im_items(<uint64_t*>NULL, j, begin, end, tid)


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
                memset(a, 0, size * sizeof(float))
                _col2im_item(xb + plane * g.K * g.L, a, g, o0, o1, j.inf_bits)
                if j.inf_bits == PK_F16_INF:
                    for i in range(size):
                        yb[start + i] = pk_f32_to_f16(a[i])
                else:
                    for i in range(size):
                        yb[start + i] = pk_f32_to_bf16(a[i])
                continue
        memset(yb + start, 0, size * sizeof(col_t))
        _col2im_item(xb + plane * g.K * g.L, yb + start, g, o0, o1, 0)
