# ===========================================================================
# maxpool_planes.pxi: MaxPoolPlanes, NCHW MaxPool of ranks 1-2 without Indices,
# one whole plane at a time (strategy PLANES).
#
# Each plane is copied into a scratch plane of this thread whose padding holds
# the empty value (-inf, the integer type's minimum), so that no window has a
# border: every pass is one long loop with no per-row or per-column set-up.
# Small planes with many channels (7x7 to 40x40, the common inference case)
# spent most of their time in that set-up in the fused kernel.
#
# Passes go along W, then along H (innermost axis first: the contract's tie
# order, as in maxpool_fused.pxi).  Each pass runs over the whole plane as one
# row (row r's column c at r * Wp + c, Wp a multiple of the W stride; the
# positions that straddle two rows are computed and never read).  A window of
# up to 5 taps is one pass that loads them all; 6 to 25 taps, two passes (a
# window of a fifth of them, then up to 5 of those); wider ones double the
# window per pass (_window; along a strided W the pass loops over taps
# instead).  pick keeps its earlier operand unless the later one is strictly
# greater, which gives the first maximum of two ranges that start in order,
# overlapping or not: so every result is its window's first maximum.  The fill equals the empty value, whose bits are
# those of any real value equal to it, so it never changes a result's bits.
#
# A stride-1 window whose output has the input's shape (k3 p1, k2 with the pad at the end)
# needs no copy where its borders are narrow: the passes then run over x and write y
# directly, and the border columns and rows are redone from their valid taps (_same_plane).
#
# A plane holding an odd value (NaN; -0.0 too for 16-bit floats) is redone
# with the exact compare.  Otherwise 16-bit floats go through the plane as
# their fast key (_ring) and compare as int16.
# ===========================================================================

cdef inline pool_t _pick(pool_t a, pool_t b, uint16_t inf_bits, bint exact) noexcept nogil:
    """The earlier value a or the later b: b only if strictly greater (16-bit floats
    as fast keys without `exact`, as bits with it; integers: the maximum of the keys)."""
    if pool_t is uint16_t and not exact:
        return <uint16_t>max(<int16_t>a, <int16_t>b)
    if pool_t is int8_t or pool_t is uint8_t or pool_t is int16_t or pool_t is int32_t or pool_t is int64_t:
        return _ukey(max(_ukey(a, inf_bits), _ukey(b, inf_bits)), inf_bits)  # (equal integers: equal bits)
    return b if _keep(b, a, inf_bits, exact) else a


cdef inline pool_t _in(pool_t v, bint exact) noexcept nogil:
    """A value as the passes hold it, and back: 16-bit floats as their fast key
    (_ring, an involution) without `exact`; everything else as it is."""
    if pool_t is uint16_t and not exact:
        return _ring(v)
    return v


cdef void _flat_taps(const pool_t* src, pool_t* dst, Py_ssize_t n, const Py_ssize_t* o, int c,
                     uint16_t inf_bits, bint exact) noexcept nogil:
    """_taps_as with `exact` a constant in each call, so that the loops without it vectorise."""
    if exact:
        _taps_as(src, dst, n, o, c, inf_bits, True)
    else:
        _taps_as(src, dst, n, o, c, inf_bits, False)


cdef inline void _taps_as(const pool_t* src, pool_t* dst, Py_ssize_t n, const Py_ssize_t* o, int c,
                          uint16_t inf_bits, bint exact) noexcept nogil:
    """dst[i] = the first maximum of src[i + o[t]] over t < c (2 to 5 offsets in increasing
    order), for i < n: one pass, each case a literal count so that the loop vectorises; the
    taps are combined as a tree, which keeps the first maximum as a chain does (each pick keeps
    its earlier operand on ties, and its two operands' ranges start in order)."""
    cdef Py_ssize_t i, a = o[0], b = o[1], e = o[c - 3] if c >= 3 else 0
    cdef Py_ssize_t d = o[c - 2] if c >= 4 else 0, f = o[c - 1]
    if c == 2:
        for i in range(n):
            dst[i] = _pick(src[i + a], src[i + f], inf_bits, exact)
    elif c == 3:
        for i in range(n):
            dst[i] = _pick(_pick(src[i + a], src[i + b], inf_bits, exact), src[i + f], inf_bits, exact)
    elif c == 4:
        for i in range(n):
            dst[i] = _pick(_pick(src[i + a], src[i + b], inf_bits, exact),
                           _pick(src[i + d], src[i + f], inf_bits, exact), inf_bits, exact)
    else:
        for i in range(n):
            dst[i] = _pick(_pick(_pick(src[i + a], src[i + b], inf_bits, exact),
                                 _pick(src[i + e], src[i + d], inf_bits, exact), inf_bits, exact),
                           src[i + f], inf_bits, exact)


cdef void _window(const pool_t* src, pool_t* dst, pool_t* t1, pool_t* t2, Py_ssize_t n,
                  Py_ssize_t k, Py_ssize_t step, uint16_t inf_bits, bint exact) noexcept nogil:
    """dst[i] = the first maximum of src[i + t * step] over t < k, for i < n; t1 and t2
    are scratch of n + (k - 1) * step elements.

    Up to 5 taps: one pass of them (_flat_taps).  Up to 25: two, windows of w = ceil(k / 5) taps into
    t1, then the first maximum of c = ceil(k / w) of those windows, at 0, w, 2w, ... and the last
    at k - w (it may overlap the one before: a pick keeps the earlier operand on ties, so the
    first maximum of overlapping ranges that start in order is still the first maximum).  Wider
    windows (rare: whole planes are a reduction of their own) double the window per pass:
    m_2w[i] = pick(m_w[i], m_w[i + w]), ping-ponging between t1 and t2, then pick(m_w[i],
    m_w[i + k - w]) with the largest w <= k."""
    cdef Py_ssize_t i, t, w, m, c
    cdef Py_ssize_t o[5]
    cdef const pool_t* cur = src
    cdef pool_t* nxt = t1
    o[0] = o[1] = o[2] = o[3] = o[4] = 0
    if k == 1:
        for i in range(n):
            dst[i] = src[i]
        return
    if k <= 5:
        for t in range(k):
            o[t] = t * step
        _flat_taps(src, dst, n, o, <int>k, inf_bits, exact)
        return
    if k <= 25:
        w = (k + 4) // 5
        c = (k + w - 1) // w
        m = n + (k - w) * step
        if w == 1:
            nxt = <pool_t*>src
        else:
            for t in range(w):
                o[t] = t * step
            _flat_taps(src, t1, m, o, <int>w, inf_bits, exact)
            nxt = t1
        for t in range(c - 1):
            o[t] = t * w * step
        o[c - 1] = (k - w) * step
        _flat_taps(nxt, dst, n, o, <int>c, inf_bits, exact)
        return
    w = 1
    while 2 * w <= k:
        m = n + (k - 2 * w) * step
        for i in range(m):
            nxt[i] = _pick(cur[i], cur[i + w * step], inf_bits, exact)
        cur = nxt
        nxt = t2 if nxt == t1 else t1
        w *= 2
    m = (k - w) * step
    for i in range(n):
        dst[i] = _pick(cur[i], cur[i + m], inf_bits, exact)


cdef inline void _strided(const pool_t* src, pool_t* dst, Py_ssize_t n, Py_ssize_t k,
                          Py_ssize_t s, Py_ssize_t d, uint16_t inf_bits, bint exact) noexcept nogil:
    """dst[i] = the first maximum of src[i * s + t * d] over t < k, for i < n (stride > 1;
    inlined so that a literal stride 2 loads whole vectors and shuffles)."""
    cdef Py_ssize_t i, t
    cdef const pool_t* cur
    for i in range(n):
        dst[i] = src[i * s]
    for t in range(1, k):
        cur = src + t * d
        for i in range(n):
            dst[i] = _pick(dst[i], cur[i * s], inf_bits, exact)


cdef inline pool_t _edge(const pool_t* row, Py_ssize_t c, Py_ssize_t n, Py_ssize_t k, Py_ssize_t p,
                         uint16_t inf_bits, bint exact) noexcept nogil:
    """The first maximum of row[c - p + t] over the taps t < k inside [0, n) (at least one)."""
    cdef Py_ssize_t t, t0 = max(0, p - c), t1 = min(k, n - c + p)
    cdef pool_t m = row[c - p + t0]
    for t in range(t0 + 1, t1):
        m = _pick(m, row[c - p + t], inf_bits, exact)
    return m


cdef void _same_plane(const pool_t* x, pool_t* y, const Geom* g, pool_t* Hb, pool_t* T1, pool_t* T2,
                      bint exact) noexcept nogil:
    """A stride-1 window whose output has the input's shape (k odd with p = (k - 1) / 2, or the
    pads all at the end): no padded copy.  The passes run over x and write y directly, each flat
    over the rows whose windows lie inside, then the columns and rows at the borders (whose flat
    values straddled two rows, or were never computed) from their valid taps.  Not 16-bit floats
    (their passes hold fast keys, which needs the copy)."""
    cdef Py_ssize_t r, c, t0, t1, W = g.W, H = g.H, kw = g.kw, kh = g.kh, pw = g.pw, ph = g.ph
    _window(x, Hb + pw, T1, T2, H * W - kw + 1, kw, 1, g.inf_bits, exact)
    for r in range(H):
        for c in range(pw):
            Hb[r * W + c] = _edge(x + r * W, c, W, kw, pw, g.inf_bits, exact)
        for c in range(W - (kw - 1 - pw), W):
            Hb[r * W + c] = _edge(x + r * W, c, W, kw, pw, g.inf_bits, exact)
    _window(Hb, y + ph * W, T1, T2, (H - kh + 1) * W, kh, W, g.inf_bits, exact)
    for r in range(H):
        if ph <= r < H - (kh - 1 - ph):
            continue
        t0 = max(0, ph - r)
        t1 = min(kh, H - r + ph)
        _window(Hb + (r - ph + t0) * W, y + r * W, T1, T2, W, t1 - t0, W, g.inf_bits, exact)


cdef bint _plane(const pool_t* x, pool_t* y, const Geom* g, Py_ssize_t Hp, Py_ssize_t Wp,
                 pool_t* buf, Py_ssize_t size, int act, pool_t lo, pool_t hi,
                 bint exact) noexcept nogil:
    """One plane x (H x W) into y (OH x OW) on this thread's scratch buf (4 buffers of
    `size` elements); the padded plane is Hp rows of Wp values (the extent the windows
    read, rounded up to a multiple of the W stride).  Without `exact`, returns False
    (y unwritten) if the plane holds an _odd() value.  (Stacking several small planes
    into one set of passes measured no faster: 1x832x7x7 k3 s1, 1x256x20x20 k5 s1.)"""
    cdef Py_ssize_t r, c0, c1, n, hs, oh, ow, W = g.W, OW = g.OW, OH = g.OH
    cdef pool_t fill = _empty_value(<pool_t>0, g.inf_bits)
    cdef pool_t* P = buf
    cdef pool_t* Hb = buf + size
    cdef pool_t* T1 = buf + 2 * size
    cdef pool_t* T2 = buf + 3 * size
    cdef pool_t* V
    cdef pool_t* row
    cdef pool_t* yrow
    cdef const pool_t* xrow
    if not exact:
        if _special(x, g.H * W, g.inf_bits):
            return False
    # Without the copy only where the borders' scalar taps stay few beside the flat passes: wider
    # borders (SPP's k13 on 19x19) ran slower so (docs/tuning.md#planes-strategy).
    if (pool_t is not uint16_t and g.sw == 1 and g.sh == 1 and g.dw == 1 and g.dh == 1
            and OW == W and OH == g.H and 2 * g.kw * (g.kw - 1) <= W and 2 * g.kh * (g.kh - 1) <= g.H):
        _same_plane(x, y, g, Hb, T1, T2, exact)
        if act:
            _clamp_row(y, OH * OW, lo, hi, act, g.inf_bits)
        return True
    # The padded plane: rows [0, Hp) and columns [0, Wp) of the padded input, as a flat fill,
    # then a memcpy per input row (loops per row and per border cost most of the time of 7x7
    # planes: short trip counts; an inline copy of 32-byte blocks cost more instructions than
    # memcpy's 30 on 20x20 planes); 16-bit floats become keys as they are copied, as the fill.
    c0 = min(g.pw, Wp)
    c1 = min(Wp, g.pw + W)
    fill = _in(fill, exact)
    if g.ph == 0 and c0 == 0 and c1 == Wp and Wp == W and Hp <= g.H:
        if pool_t is uint16_t and not exact:  # no padding is read: the plane's first Hp rows
            for r in range(Hp * W):
                P[r] = _ring(x[r])
        else:
            memcpy(P, x, Hp * W * sizeof(pool_t))
    else:
        for r in range(Hp * Wp):
            P[r] = fill
        for r in range(max(0, g.ph), min(Hp, g.ph + g.H)):
            row = P + r * Wp + c0
            xrow = x + (r - g.ph) * W + c0 - g.pw
            if pool_t is uint16_t and not exact:
                for ow in range(c1 - c0):
                    row[ow] = _ring(xrow[ow])
            elif c1 > c0:
                memcpy(row, xrow, (c1 - c0) * sizeof(pool_t))
    # Along W into Hb (row stride hs).  Wp is a multiple of sw, so that with a stride the
    # plane is one row too: row r's column ow is position r * hs + ow.
    hs = Wp // g.sw
    if g.sw == 1:
        _window(P, Hb, T1, T2, Hp * Wp - (g.kw - 1) * g.dw, g.kw, g.dw, g.inf_bits, exact)
    else:
        n = (Hp * Wp - 1 - (g.kw - 1) * g.dw) // g.sw + 1
        if g.sw == 2:
            _strided(P, Hb, n, g.kw, 2, g.dw, g.inf_bits, exact)
        else:
            _strided(P, Hb, n, g.kw, g.sw, g.dw, g.inf_bits, exact)
    # Along H into V, over every row (with a stride too: one flat loop beat a loop per
    # output row on small planes), then each output row's first OW values to y.
    if g.kh == 1:
        V = Hb
    else:
        V = P  # the padded plane is no longer needed
        _window(Hb, V, T1, T2, (OH - 1) * g.sh * hs + OW, g.kh, g.dh * hs, g.inf_bits, exact)
    for oh in range(OH):
        row = V + oh * g.sh * hs
        yrow = y + oh * OW
        if pool_t is uint16_t and not exact:
            for ow in range(OW):
                yrow[ow] = _ring(row[ow])
        else:
            memcpy(yrow, row, OW * sizeof(pool_t))
    if act:  # (the plane's rows in one loop: short rows left the vector loop a remainder each)
        _clamp_row(y, OH * OW, lo, hi, act, g.inf_bits)
    return True


cdef bint _global(const pool_t* x, pool_t* y, Py_ssize_t n, uint16_t inf_bits,
                  bint exact) noexcept nogil:
    """y[0] = the first maximum of x[0:n] (a window that is the whole plane).  Without
    `exact`, returns True (y unwritten) if x holds an _odd() value.  Integers: one max
    reduction of their keys (no value is odd, and equal values have equal bits).  Sixteen running maxima,
    one per lane of position i % 16, combined in lane order (float and double: a register's
    worth, with the NaN check in the same pass, pooling_reduce.h, where the compiler kept
    this array scalar; 16-bit floats by their keys there, the checks finding -0.0 too): the value is right; the bits only matter when the maximum is a
    float zero (-0.0 ties +0.0, and the first one counts), which is then found in order, as
    are short planes and the exact compare."""
    cdef pool_t acc[16]
    cdef pool_t m = x[0]
    cdef Py_ssize_t i, l, body = n - n % 16
    cdef int odd = 0
    cdef bint in_order = n < 32 or exact
    if pool_t is int8_t or pool_t is uint8_t or pool_t is int16_t or pool_t is int32_t or pool_t is int64_t:
        # Integers: equal values have equal bits, so the maximum of the keys in any order is the
        # contract's; one max reduction, which the compiler vectorises.
        m = _ukey(x[0], inf_bits)
        for i in range(1, n):
            m = max(m, _ukey(x[i], inf_bits))
        y[0] = _ukey(m, inf_bits)
        return False
    if pool_t is uint16_t and not exact and n >= PK_RH_L:
        y[0] = pk_max_h16(x, n, inf_bits, &odd)
        return odd != 0
    if not exact:
        if (pool_t is float or pool_t is double) and n >= 32:
            if pool_t is float:
                m = pk_max_f32(x, n, &odd)
            elif pool_t is double:
                m = pk_max_f64(x, n, &odd)
            in_order = m == 0
        else:
            odd = _special(x, n, inf_bits)
            if n >= 32 and not odd:
                for l in range(16):
                    acc[l] = _in(x[l], exact)
                for i in range(16, body, 16):
                    for l in range(16):
                        acc[l] = _pick(acc[l], _in(x[i + l], exact), inf_bits, exact)
                m = acc[0]
                for l in range(1, 16):
                    m = _pick(m, acc[l], inf_bits, exact)
                for i in range(body, n):
                    m = _pick(m, _in(x[i], exact), inf_bits, exact)
        if odd:
            return True
    if in_order:
        m = _in(x[0], exact)
        for i in range(1, n):
            m = _pick(m, _in(x[i], exact), inf_bits, exact)
    y[0] = _in(m, exact)
    return False


cdef class MaxPoolPlanes(_Launch):
    """NCHW MaxPool of ranks 1-2 without Indices, a plane per work item on a padded
    scratch copy (see the banner): x (planes, 1, H, W) -> y (planes, 1, OH, OW).

    Hp, Wp: the padded plane's extent that the windows read,
    (OH - 1) * sh + (kh - 1) * dh + 1 and likewise along W, rounded up to a multiple of sw.
    """
    cdef Py_ssize_t Hp, Wp, size, per_thread, planes
    cdef bint whole                             # one window covering the plane exactly

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 int act, double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        cdef Geom* g = &self.g
        self.planes = x_shape[0]
        self.Hp = (g.OH - 1) * g.sh + (g.kh - 1) * g.dh + 1
        self.Wp = ((g.OW - 1) * g.sw + (g.kw - 1) * g.dw + g.sw) // g.sw * g.sw  # (C division)
        self.size = self.Hp * self.Wp
        self.per_thread = _padded(4 * self.size, self.itemsize)
        self.whole = (g.OH == 1 and g.OW == 1 and g.ph == 0 and g.pw == 0
                      and self.Hp == g.H and self.Wp == g.W and g.dh == 1 and g.dw == 1)
        self.units = self.planes
        self.xsize, self.ysize = self.planes * g.H * g.W, self.planes * g.OH * g.OW
        self.n_threads = max(1, min(n_threads, self.units))
        self.chunk = max(1, chunk)

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        return 0 if self.whole else self.n_threads * self.per_thread * self.itemsize

    cdef void _run(self, const char* xb, char* yb, int64_t* ib, _Scratch s):
        cdef _UnitsJob j
        _start_job(&j, xb, yb, ib, self)
        j.hv = s.block
        j.vs = self.per_thread
        j.xplane, j.yplane = self.g.H * self.g.W, self.g.OH * self.g.OW
        j.Hp, j.Wp, j.size, j.whole = self.Hp, self.Wp, self.size, self.whole
        with nogil:
            pk_parallel(_planes_body, &j, self.units, self.chunk, self.n_threads)


cdef inline void _whole(const pool_t* x, pool_t* y, const _UnitsJob* j, uint16_t inf_bits) noexcept nogil:
    """y[0] = the activated first maximum of the plane x (a window covering it): the cheap
    reduction, redone with the exact compare where the plane holds an odd value."""
    if _global(x, y, j.xplane, inf_bits, False):
        _global(x, y, j.xplane, inf_bits, True)
    if j.act:
        y[0] = _clamp(y[0], <pool_t>j.lo, <pool_t>j.hi, j.act, inf_bits)


cdef void _planes(pool_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                  int tid) noexcept nogil:
    """MaxPoolPlanes' planes [begin, end) in element type pool_t, with thread tid's scratch.
    j.Hp, j.Wp: the padded plane's extent; j.size: elements per scratch buffer;
    j.whole: the window is the whole plane."""
    cdef Geom gc = j.g[0]  # a copy the compiler can keep in registers
    cdef Py_ssize_t p, q
    cdef unsigned redo
    cdef const pool_t* x
    cdef pool_t* y
    cdef pool_t* buf = <pool_t*>j.hv + tid * j.vs
    p = begin
    if pool_t is float and j.whole and j.xplane >= PK_ROWS_L:
        # float32 whole planes PK_ROWS_L at a time, reduced together (pk_max_f32_runs); the runs
        # it cannot settle (a NaN among them, a zero maximum) one at a time as below.
        while p + PK_ROWS_L <= end:
            x = <const pool_t*>j.x + p * j.xplane
            y = <pool_t*>j.y + p
            redo = pk_max_f32_runs(x, j.xplane, y)
            for q in range(PK_ROWS_L):
                if redo >> q & 1:
                    _whole(x + q * j.xplane, y + q, j, gc.inf_bits)
                elif j.act:
                    y[q] = _clamp(y[q], <pool_t>j.lo, <pool_t>j.hi, j.act, gc.inf_bits)
            p += PK_ROWS_L
    for p in range(p, end):
        x = <const pool_t*>j.x + p * j.xplane
        y = <pool_t*>j.y + p * j.yplane
        if j.whole:
            _whole(x, y, j, gc.inf_bits)
        elif not _plane(x, y, &gc, j.Hp, j.Wp, buf, j.size, j.act, <pool_t>j.lo, <pool_t>j.hi, False):
            _plane(x, y, &gc, j.Hp, j.Wp, buf, j.size, j.act, <pool_t>j.lo, <pool_t>j.hi, True)
