# ===========================================================================
# maxpool_interleaved.pxi: MaxPoolInterleaved, NCHW MaxPool of ranks 1-2
# without Indices on small planes (strategy INTERLEAVED).
#
# A work item is a block of consecutive planes (32 bytes of them per pixel:
# 8 float32, 4 float64, 16 16-bit floats, 32 int8/uint8), copied into this
# thread's scratch channels-last and padded: pixel (r, c) of the padded
# block holds the block's planes side by side, one SIMD vector.  Every tap of
# every window is then one vector combine of whole pixels, whatever the
# plane's width, stride or dilation, so a 7x7 or 28x28 plane costs no more per
# value than a large one, and a stride-2 window reads whole vectors (no
# shuffles).  Passes go along W, then along H (the contract's tie order, as
# in maxpool_fused.pxi; each combine keeps its earlier operand on ties), and
# the result is copied back to the planes.  The padding holds the empty value
# (written once per claimed chunk: the blocks only overwrite the interior).
#
# The NCHW kernels' set-up per plane and per row dominated these planes, while
# the channels-last kernel on the transposed input was much faster
# (docs/tuning.md#interleaved-strategy).  The copies both ways cost about a memcpy each:
# the inner loop over the block's planes is a constant trip count that the
# compiler turns into vector inserts and extracts.
#
# A block holding an odd value (NaN; -0.0 too for 16-bit floats) is redone
# with the exact compare; otherwise 16-bit floats travel as fast keys.
# ===========================================================================

cdef inline void _il_copy(const pool_t* src, pool_t* dst, Py_ssize_t n, Py_ssize_t ld, Py_ssize_t nb,
                          bint into_block) noexcept nogil:
    """n pixels between planes `ld` elements apart and a block (pooling_interleave.h):
    into the block from src's planes, or from the block src to dst's planes."""
    if sizeof(pool_t) == 1:
        if into_block:
            pk_il_in_uint8_t(src, dst, n, ld, nb)
        else:
            pk_il_out_uint8_t(src, dst, n, ld, nb)
    elif sizeof(pool_t) == 2:
        if into_block:
            pk_il_in_uint16_t(src, dst, n, ld, nb)
        else:
            pk_il_out_uint16_t(src, dst, n, ld, nb)
    elif sizeof(pool_t) == 4:
        if into_block:
            pk_il_in_uint32_t(src, dst, n, ld, nb)
        else:
            pk_il_out_uint32_t(src, dst, n, ld, nb)
    else:
        if into_block:
            pk_il_in_uint64_t(src, dst, n, ld, nb)
        else:
            pk_il_out_uint64_t(src, dst, n, ld, nb)


cdef inline void _il_in(const pool_t* x, pool_t* T, const Geom* g, Py_ssize_t Hp, Py_ssize_t Wp,
                        Py_ssize_t nb, bint exact) noexcept nogil:
    """The interior of the padded block T (Hp x Wp pixels of B lanes) from planes x[0:nb]
    (lanes past nb repeat the last plane, so every lane holds values of this block), 16-bit
    floats as fast keys without `exact`."""
    cdef Py_ssize_t B = PK_IL_BYTES // sizeof(pool_t)
    cdef Py_ssize_t r, i, c0, c1, r0, r1, hw = g.H * g.W
    cdef pool_t* tr
    r0, r1 = min(g.ph, Hp), min(g.ph + g.H, Hp)
    c0, c1 = min(g.pw, Wp), min(g.pw + g.W, Wp)
    for r in range(r0, r1):
        tr = T + (r * Wp + c0) * B
        _il_copy(x + (r - g.ph) * g.W + c0 - g.pw, tr, c1 - c0, hw, nb, True)
        if pool_t is uint16_t and not exact:
            for i in range((c1 - c0) * B):
                tr[i] = _ring(tr[i])


cdef inline void _il_fill(pool_t* T, const Geom* g, Py_ssize_t Hp, Py_ssize_t Wp, bint exact) noexcept nogil:
    """The padding of T: every pixel _il_in does not write, as the empty value."""
    cdef Py_ssize_t B = PK_IL_BYTES // sizeof(pool_t)
    cdef Py_ssize_t r, c, i, r0 = min(g.ph, Hp), r1 = min(g.ph + g.H, Hp)
    cdef Py_ssize_t c0 = min(g.pw, Wp), c1 = min(g.pw + g.W, Wp)
    cdef pool_t fill = _in(_empty_value(<pool_t>0, g.inf_bits), exact)
    for r in range(Hp):
        for c in range(Wp):
            if r < r0 or r >= r1 or c < c0 or c >= c1:
                for i in range(B):
                    T[(r * Wp + c) * B + i] = fill


cdef inline void _il_taps(const pool_t* src, pool_t* dst, Py_ssize_t n, Py_ssize_t k, Py_ssize_t s,
                          Py_ssize_t d, uint16_t inf_bits, bint exact) noexcept nogil:
    """dst pixel i = the first maximum of src pixels i * s + t * d over t < k, for i < n
    (pixels of B lanes; with stride 1 each tap is one flat loop over the n pixels)."""
    cdef Py_ssize_t B = PK_IL_BYTES // sizeof(pool_t)
    cdef Py_ssize_t i, t, b
    cdef const pool_t* a
    cdef pool_t* o
    if s == 1:
        for i in range(n * B):
            dst[i] = src[i]
        for t in range(1, k):
            a = src + t * d * B
            for i in range(n * B):
                dst[i] = _pick(dst[i], a[i], inf_bits, exact)
        return
    for i in range(n):
        a = src + i * s * B
        o = dst + i * B
        for b in range(B):
            o[b] = a[b]
        for t in range(1, k):
            for b in range(B):
                o[b] = _pick(o[b], a[t * d * B + b], inf_bits, exact)


cdef inline bint _il_block(const pool_t* x, pool_t* y, const Geom* g, Py_ssize_t Hp, Py_ssize_t Wp,
                           Py_ssize_t nb, pool_t* T, int act, pool_t lo, pool_t hi,
                           bint exact) noexcept nogil:
    """Planes x[0:nb] into y[0:nb] through scratch T (padding already filled): the
    interleaved copy, along W, along H, and back.  Without `exact`, returns True (y
    unwritten) if the planes hold an _odd() value."""
    cdef Py_ssize_t B = PK_IL_BYTES // sizeof(pool_t)
    cdef Py_ssize_t r, q, b, t, i, OW = g.OW, ohw = g.OH * g.OW
    cdef pool_t* Hb = T + Hp * Wp * B
    cdef pool_t* V = Hb + Hp * OW * B
    cdef pool_t* o
    cdef const pool_t* a
    if not exact and _special(x, nb * g.H * g.W, g.inf_bits):
        return True
    _il_in(x, T, g, Hp, Wp, nb, exact)
    # Along W: each padded row's OW windows (literal strides 1 and 2: the compiler then
    # sees contiguous or every-other pixels).
    for r in range(Hp):
        if g.sw == 1:
            _il_taps(T + r * Wp * B, Hb + r * OW * B, OW, g.kw, 1, g.dw, g.inf_bits, exact)
        elif g.sw == 2:
            _il_taps(T + r * Wp * B, Hb + r * OW * B, OW, g.kw, 2, g.dw, g.inf_bits, exact)
        else:
            _il_taps(T + r * Wp * B, Hb + r * OW * B, OW, g.kw, g.sw, g.dw, g.inf_bits, exact)
    # Along H: output row q is the first maximum of rows q * sh + t * dh, each a flat
    # run of OW pixels.
    for q in range(g.OH):
        o = V + q * OW * B
        a = Hb + q * g.sh * OW * B
        for i in range(OW * B):
            o[i] = a[i]
        for t in range(1, g.kh):
            a = Hb + (q * g.sh + t * g.dh) * OW * B
            for i in range(OW * B):
                o[i] = _pick(o[i], a[i], g.inf_bits, exact)
    # Back to the planes (the real ones: lanes past nb repeat the last plane).
    if pool_t is uint16_t and not exact:
        for i in range(ohw * B):
            V[i] = _ring(V[i])
    _il_copy(V, y, ohw, ohw, nb, False)
    if act:
        _clamp_row(y, nb * ohw, lo, hi, act, g.inf_bits)
    return False


cdef class MaxPoolInterleaved(_Launch):
    """NCHW MaxPool of ranks 1-2 without Indices, blocks of planes interleaved
    channels-last in padded scratch (see the banner): x (planes, 1, H, W) -> y (planes,
    1, OH, OW).  A work item is a block of 32 bytes of planes per pixel.

    Hp, Wp: the padded block's extent that the windows read,
    (OH - 1) * sh + (kh - 1) * dh + 1 and likewise along W.
    """
    cdef Py_ssize_t Hp, Wp, per_thread, planes, lanes

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 int act, double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        cdef Geom* g = &self.g
        if g.D != 1 or g.OD != 1 or g.OH * g.OW == 0 or g.H * g.W == 0:
            raise ValueError(f"MaxPoolInterleaved: planes of one depth slice with outputs, got input "
                             f"{x_shape[1:]}, output {y_shape[1:]}")
        self.planes = x_shape[0]
        self.lanes = PK_IL_BYTES // self.itemsize
        self.Hp = (g.OH - 1) * g.sh + (g.kh - 1) * g.dh + 1
        self.Wp = (g.OW - 1) * g.sw + (g.kw - 1) * g.dw + 1
        self.per_thread = _padded((self.Hp * self.Wp + self.Hp * g.OW + g.OH * g.OW) * self.lanes,
                                  self.itemsize)
        self.units = (self.planes + self.lanes - 1) // self.lanes
        self.xsize, self.ysize = self.planes * g.H * g.W, self.planes * g.OH * g.OW
        self.n_threads = max(1, min(n_threads, self.units))
        self.chunk = max(1, chunk)

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        return self.n_threads * self.per_thread * self.itemsize

    cdef void _run(self, const char* xb, char* yb, int64_t* ib, _Scratch s):
        cdef _UnitsJob j
        _start_job(&j, xb, yb, ib, self)
        j.hv = s.block
        j.vs = self.per_thread
        j.C = self.planes
        j.Hp, j.Wp = self.Hp, self.Wp
        j.xplane, j.yplane = self.g.H * self.g.W, self.g.OH * self.g.OW
        with nogil:
            pk_parallel(_interleaved_body, &j, self.units, self.chunk, self.n_threads)


cdef void _interleaved(pool_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                       int tid) noexcept nogil:
    """MaxPoolInterleaved's blocks [begin, end) in element type pool_t, on thread tid's
    scratch.  The padding is written for the fast keys and, when a block needs the exact
    compare, again for plain values and back (16-bit floats: the empty value's key differs)."""
    cdef Py_ssize_t B = PK_IL_BYTES // sizeof(pool_t)
    cdef Geom gc = j.g[0]  # a copy the compiler can keep in registers
    cdef Py_ssize_t blk, nb
    cdef const pool_t* x
    cdef pool_t* y
    cdef pool_t* T = <pool_t*>j.hv + tid * j.vs
    cdef pool_t lo = <pool_t>j.lo, hi = <pool_t>j.hi
    _il_fill(T, &gc, j.Hp, j.Wp, False)
    for blk in range(begin, end):
        nb = min(B, j.C - blk * B)
        x = <const pool_t*>j.x + blk * B * j.xplane
        y = <pool_t*>j.y + blk * B * j.yplane
        if _il_block(x, y, &gc, j.Hp, j.Wp, nb, T, j.act, lo, hi, False):
            if pool_t is uint16_t:
                _il_fill(T, &gc, j.Hp, j.Wp, True)
            _il_block(x, y, &gc, j.Hp, j.Wp, nb, T, j.act, lo, hi, True)
            if pool_t is uint16_t:
                _il_fill(T, &gc, j.Hp, j.Wp, False)
