# ===========================================================================
# maxpool_tiles.pxi: MaxPoolTiles, NCHW MaxPool of ranks 1-3 without Indices
# whose windows tile the input exactly (strategy TILES): on every axis the
# stride equals the kernel, no padding, no dilation, and the input is
# exactly out * kernel long.  k2 s2 (VGG, C3D, SegNet's encoders, label
# pyramids) and k4 s4 are the common cases.
#
# Windows then never share an input value and never cross a row, so along W
# the input is one long row whatever the planes: a batch of output rows reads
# a contiguous block of input rows (of each depth tap), reduced along W in
# one flat loop (literal kw 2 loads whole vectors and shuffles), then its kh
# rows per output row combined along H, then the depth taps along D: the
# innermost axis first, each combine keeping its earlier operand on ties, so
# every result is its window's first maximum (as in maxpool_fused.pxi).  The
# fused kernel's per-plane and per-row set-up dominated small planes
# (docs/tuning.md#tiles-strategy).
#
# 2x2 and 2x2x2 windows of float32 and 16-bit floats on rows of at least a
# vector skip the batch form: one pass over the input in registers
# (pk_tiles_k2_f32 / _h16, include/pooling_rows_body.h).
#
# A batch holding an odd value (NaN; -0.0 too for 16-bit floats) is redone
# with the exact compare; otherwise 16-bit floats travel as fast keys.
# ===========================================================================

cdef inline bint _tiles_w(const pool_t* src, pool_t* dst, Py_ssize_t n, Py_ssize_t kw,
                          uint16_t inf_bits, bint exact) noexcept nogil:
    """dst[i] = the first maximum of src[i * kw + t] over t < kw, for i < n, as the passes
    hold values (_in).  Without `exact`, returns whether src held an _odd() value (then dst
    is to be recomputed with it); a literal kw of 2 is one loop the compiler vectorises
    with whole loads and shuffles, checking the pair as it goes."""
    cdef Py_ssize_t i, t
    cdef bint odd = False
    cdef pool_t a, b
    if pool_t is float and kw == 2 and not exact:
        return pk_tiles_w2_f32(src, dst, n)
    if pool_t is uint16_t and kw == 2 and not exact:
        return pk_tiles_w2_h16(<const int16_t*>src, <int16_t*>dst, n, inf_bits)
    if kw == 2:
        for i in range(n):
            a = src[2 * i]
            b = src[2 * i + 1]
            if not exact:
                odd |= _odd2(a, b, inf_bits)
            dst[i] = _pick(_in(a, exact), _in(b, exact), inf_bits, exact)
        return odd
    if not exact:
        odd = _special(src, n * kw, inf_bits)
    for i in range(n):
        dst[i] = _in(src[i * kw], exact)
    for t in range(1, kw):
        for i in range(n):
            dst[i] = _pick(dst[i], _in(src[i * kw + t], exact), inf_bits, exact)
    return odd


cdef inline bint _tiles_k2(const pool_t* x, pool_t* y, const Geom* g, Py_ssize_t r, Py_ssize_t n,
                           bint* one_pass) noexcept nogil:
    """Output rows [r, r + n) of 2x2 and 2x2x2 windows of float32 or a 16-bit float in one pass
    (include/pooling_rows_body.h), results as values, where the rows are at least a vector
    long: sets *one_pass and returns whether the input held an _odd() value (y is then to be
    recomputed with `exact`).  Otherwise leaves *one_pass false and returns False."""
    cdef const pool_t* x1 = x + _tiles_src(g, r, 1) if g.kd == 2 else NULL
    one_pass[0] = g.kw == 2 and g.kh == 2 and g.kd <= 2
    if pool_t is float:
        one_pass[0] &= g.OW >= PK_ROWS_L
        if one_pass[0]:
            return pk_tiles_k2_f32(x + _tiles_src(g, r, 0), x1, y + r * g.OW, n, g.OW, g.inf_bits)
    elif pool_t is uint16_t:
        one_pass[0] &= g.OW >= PK_RN_L
        if one_pass[0] and g.OW >= PK_RH_L:
            return pk_tiles_k2_h16(<const int16_t*>x + _tiles_src(g, r, 0), <const int16_t*>x1,
                                   <int16_t*>y + r * g.OW, n, g.OW, g.inf_bits)
        if one_pass[0]:  # rows under the build's int16 lanes: 16-byte vectors
            return pk_tiles_k2_h16n(<const int16_t*>x + _tiles_src(g, r, 0), <const int16_t*>x1,
                                    <int16_t*>y + r * g.OW, n, g.OW, g.inf_bits)
    elif pool_t is int16_t:
        one_pass[0] &= g.OW >= PK_RN_L
        if one_pass[0] and g.OW >= PK_RH_L:
            return pk_tiles_k2_i16(x + _tiles_src(g, r, 0), x1, y + r * g.OW, n, g.OW, g.inf_bits)
        if one_pass[0]:
            return pk_tiles_k2_i16n(x + _tiles_src(g, r, 0), x1, y + r * g.OW, n, g.OW, g.inf_bits)
    elif pool_t is int32_t:
        one_pass[0] &= g.OW >= PK_ROWS_L
        if one_pass[0]:
            return pk_tiles_k2_i32(x + _tiles_src(g, r, 0), x1, y + r * g.OW, n, g.OW, g.inf_bits)
    else:
        one_pass[0] = False
    return False


cdef inline Py_ssize_t _tiles_src(const Geom* g, Py_ssize_t r, Py_ssize_t td) noexcept nogil:
    """Offset in x of the first input row of output row r at depth tap td: row (r % OH) * kh
    of depth slice p * D + od * kd + td, where r // OH = p * OD + od."""
    cdef Py_ssize_t slab = r // g.OH
    return (((slab // g.OD) * g.D + (slab % g.OD) * g.kd + td) * g.H + (r % g.OH) * g.kh) * g.W


cdef inline bint _tiles_batch(const pool_t* x, pool_t* y, const Geom* g, Py_ssize_t r,
                              Py_ssize_t n, pool_t* buf, bint exact) noexcept nogil:
    """Output rows [r, r + n) (of OW values, counted over all planes and depth slices; one
    depth slab when kd > 1) into y + r * OW, on scratch buf of n * kh * OW elements.
    Without `exact`, returns whether the input held an _odd() value (y is then to be
    recomputed with `exact`)."""
    cdef Py_ssize_t td, t, q, c, OW = g.OW, kh = g.kh, m = n * g.kh * g.OW
    cdef pool_t* a
    cdef pool_t* d
    cdef pool_t* yb = y + r * OW
    cdef bint odd = False
    for td in range(g.kd):
        if g.kw == 2:
            odd |= _tiles_w(x + _tiles_src(g, r, td), buf, m, 2, g.inf_bits, exact)
        else:
            odd |= _tiles_w(x + _tiles_src(g, r, td), buf, m, g.kw, g.inf_bits, exact)
        if odd:
            return True
        # Along H (each output row's kh rows of buf, in order), then along D into y.
        q = 0
        if td == 0 and kh == 2 and 4 <= OW <= 8:
            # Rows of 4 to 8 (VGG's pool5: 7) as 8 values each: the lanes past OW read the next
            # rows of buf and write the start of the next output row (no further: OW >= 4),
            # which its own pass then writes again; the last row, with nothing after it, goes
            # as below: one vector per row where the loop of 7 was scalar
            # (docs/tuning.md#tiles-strategy); 16-bit keys in C, where this loop stayed scalar.
            if pool_t is uint16_t and not exact:
                pk_tiles_h2_k16(<const int16_t*>buf, <int16_t*>yb, n, OW)
                q = max(n - 1, 0)
            while q < n - 1:
                a = buf + q * 2 * OW
                d = yb + q * OW
                for c in range(8):
                    d[c] = _pick(a[c], a[OW + c], g.inf_bits, exact)
                q += 1
        while q < n:
            a = buf + q * kh * OW
            d = yb + q * OW
            q += 1
            if td == 0 and kh == 2:
                for c in range(OW):
                    d[c] = _pick(a[c], a[OW + c], g.inf_bits, exact)
                continue
            if kh == 2:  # later depth taps: the pair first, then into y (the same order of operands)
                for c in range(OW):
                    d[c] = _pick(d[c], _pick(a[c], a[OW + c], g.inf_bits, exact), g.inf_bits, exact)
                continue
            if td == 0:
                memcpy(d, a, OW * sizeof(pool_t))
            else:
                for c in range(OW):
                    d[c] = _pick(d[c], a[c], g.inf_bits, exact)
            for t in range(1, kh):
                for c in range(OW):
                    d[c] = _pick(d[c], a[t * OW + c], g.inf_bits, exact)
    return False


cdef class MaxPoolTiles(_Launch):
    """NCHW MaxPool of ranks 1-3 without Indices whose windows tile the input exactly
    (see the banner): x (planes, D, H, W) -> y (planes, OD, OH, OW), D = OD * kd and so on.
    A work item is one output row; `rows` output rows are reduced as one batch."""
    cdef Py_ssize_t rows, per_thread

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 Py_ssize_t rows, int act, double lo, double hi, uint16_t inf_bits, int n_threads,
                 Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        cdef Geom* g = &self.g
        if (g.D != g.OD * g.kd or g.H != g.OH * g.kh or g.W != g.OW * g.kw
                or g.pd or g.ph or g.pw or g.OD * g.OH * g.OW == 0):
            raise ValueError(f"MaxPoolTiles: the windows must tile the input exactly, got input "
                             f"{x_shape[1:]}, output {y_shape[1:]}, kernel {kernel}, pads {pads_begin}")
        self.rows = max(1, rows)
        self.per_thread = _padded(self.rows * g.kh * g.OW, self.itemsize)
        self.units = x_shape[0] * g.OD * g.OH
        self.xsize = x_shape[0] * g.D * g.H * g.W
        self.ysize = self.units * g.OW
        self.n_threads = max(1, min(n_threads, self.units))
        self.chunk = max(1, chunk)

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        return self.n_threads * self.per_thread * self.itemsize

    cdef void _run(self, const char* xb, char* yb, int64_t* ib, _Scratch s):
        cdef _UnitsJob j
        _start_job(&j, xb, yb, ib, self)
        j.hv = s.block
        j.vs = self.per_thread
        j.rows = self.rows
        with nogil:
            pk_parallel(_tiles_body, &j, self.units, self.chunk, self.n_threads)


cdef void _tiles(pool_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                 int tid) noexcept nogil:
    """MaxPoolTiles' output rows [begin, end) in element type pool_t, in batches of j.rows
    (that stay in one depth slab when kd > 1), on thread tid's scratch."""
    cdef Geom gc = j.g[0]  # a copy the compiler can keep in registers
    cdef Py_ssize_t r = begin, n, td, i, OW = gc.OW
    cdef const pool_t* x = <const pool_t*>j.x
    cdef pool_t* y = <pool_t*>j.y
    cdef pool_t* buf = <pool_t*>j.hv + tid * j.vs
    cdef pool_t* yb
    cdef bint odd, one_pass
    # (locals: a byte store may alias the job, so the loop below would reload them on every value)
    cdef pool_t lo = <pool_t>j.lo, hi = <pool_t>j.hi
    cdef int act = j.act
    cdef uint16_t inf_bits = gc.inf_bits
    while r < end:
        n = min(end - r, j.rows)
        if gc.kd > 1:
            n = min(n, gc.OH - r % gc.OH)
        # (literal arguments: the compiler specialises the loops for each)
        odd = _tiles_k2(x, y, &gc, r, n, &one_pass)
        if not one_pass:
            odd = _tiles_batch(x, y, &gc, r, n, buf, False)
        if odd:
            _tiles_batch(x, y, &gc, r, n, buf, True)
        yb = y + r * OW
        if pool_t is uint16_t and not odd and not one_pass:  # keys back to values
            for i in range(n * OW):
                yb[i] = _ring(yb[i])
        if act:
            _clamp_row(yb, n * OW, lo, hi, act, inf_bits)
        r += n
