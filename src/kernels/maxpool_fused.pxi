# ===========================================================================
# maxpool_fused.pxi: MaxPool3d, the NCHW kernel of ranks 1-3, and its loops.
#
# It serves three MaxPool strategies (pooling._maxpool_strategies.choose_strategy picks one):
#   fused two-pass  ranks 1-3, promoted to 3-D with singleton axes by the caller
#                   (_launch_3d): _units_body -> _units -> _pool_unit -> _pool_rows
#                   (pass 1 _hrows, pass 2 _vcombine*), described below;
#   depth-first 3-D _launch_3d(depth_first=True): _depth_first reduces a depth
#                   window to one slab, which is then pooled in 2-D (flat_g);
#   depth-split 3-D DepthSplit.build: MaxPool3d (or ROWS_FIRST's MaxPoolRows) on
#                   single depth slices, then max_pool_axis along depth
#                   (maxpool_separable.pxi).
#
# Two passes, innermost axis first, over chunks of output rows:
#   1. horizontal: every input row the chunk needs (of each depth slice it
#      reads) is reduced along W into a row buffer: hv[ow] = the maximum over
#      output column ow's taps (16-bit floats as their order key, _ring);
#   2. vertical: for each output row, the buffer rows of its window are
#      combined in tap order straight into Y.
# Reducing the innermost axis first and the outer ones after, each with
# "strictly greater replaces", picks exactly the first maximum in
# lexicographic tap order, which is behaviour.md §2.4's tie rule.  Indices are carried
# through both passes (never a per-window rescan).
#
# When W == OW * sw (the common "same" and "halving" shapes) a block of rows
# is one long row: column ow of row r is position r*OW + ow of the block, and
# its taps are the same offsets from the block's start.  Pass 1 then runs as
# one long loop over the block, and only the border columns (whose windows
# would read a neighbouring row) are redone row by row.  On narrow images
# per-row loops of 56 outputs spent most of their time in loop set-up and
# scalar remainders.  Reduced rows live in a ring of g.brows rows per depth
# tap (slot h & (brows - 1); a power of two, since a division per row cost
# more), filled a chunk of output rows at a time, so each input row is reduced
# once per work item and the chunk is still in L1 when pass 2 reads it
# (docs/tuning.md#row-chunks-fused-and-tiles).
# ===========================================================================

cdef inline pool_t _ring(pool_t v) noexcept nogil:
    """A row maximum as pass 1 stores it in the row buffer, and back: 16-bit
    floats as their fast key (an involution), so that pass 2 combines clean rows
    with int16 maxima and converts once per output; other types as they are."""
    if pool_t is uint16_t:
        return <uint16_t>pk_half_fast_key(v)
    return v


cdef inline bint _keep_ring(pool_t v, pool_t m, uint16_t inf_bits, bint exact) noexcept nogil:
    """_keep for two values as the row buffer holds them (_ring): 16-bit floats'
    keys compare as int16 when the cheap compare will do."""
    if pool_t is uint16_t:
        if exact:
            return _gt(_ring(v), _ring(m), inf_bits)
        return <int16_t>v > <int16_t>m
    return _keep(v, m, inf_bits, exact)


cdef inline bint _hrow_interior(const pool_t* xr, pool_t* hv, int32_t* hp, Py_ssize_t lo,
                                Py_ssize_t hi, Py_ssize_t pbase, const Geom* g,
                                bint exact) noexcept nogil:
    """Pass 1 for columns [lo, hi), whose taps all lie inside the row (or block).

    Taps loop outside and columns inside, with unconditional loads and
    bit-mask selects, so gcc vectorises across output columns (an if-update
    compiles to branches).  Called with a literal `exact`, which folds away.
    Returns whether a tap read an _odd() value (only without `exact`).
    """
    cdef Py_ssize_t ow, t, sw = g.sw, tap
    cdef const pool_t* src = xr - g.pw      # src[ow * sw] is column ow's first tap
    cdef pool_t v, m
    cdef int32_t old, mask
    cdef bint odd = False
    cdef uint16_t u = g.inf_bits            # (a local: the stores to hv may alias g)
    for ow in range(lo, hi):
        v = src[ow * sw]
        if not exact and pool_t is not uint16_t:
            odd |= _odd(v, u)
        hv[ow] = v
    if hp == NULL:
        for t in range(1, g.kw):
            src = src + g.dw
            for ow in range(lo, hi):
                v = src[ow * sw]
                m = hv[ow]
                if not exact and pool_t is not uint16_t:
                    odd |= _odd(v, u)
                hv[ow] = v if _keep(v, m, u, exact) else m
    else:
        for ow in range(lo, hi):
            hp[ow] = <int32_t>(pbase + ow * sw - g.pw)
        for t in range(1, g.kw):
            src = src + g.dw
            tap = pbase + t * g.dw - g.pw
            for ow in range(lo, hi):
                v = src[ow * sw]
                m = hv[ow]
                old = hp[ow]
                if not exact and pool_t is not uint16_t:
                    odd |= _odd(v, u)
                mask = -<int32_t>_keep(v, m, u, exact)
                hv[ow] = v if mask else m
                hp[ow] = (old & ~mask) | (<int32_t>(ow * sw + tap) & mask)
    if pool_t is uint16_t:
        for ow in range(lo, hi):
            hv[ow] = _ring(hv[ow])
    return odd


cdef inline bint _hrow_short(const pool_t* xr, pool_t* hv, int32_t* hp, Py_ssize_t lo,
                             Py_ssize_t hi, Py_ssize_t pbase, const Geom* g,
                             Py_ssize_t sw, Py_ssize_t d1, Py_ssize_t d2) noexcept nogil:
    """Pass 1 for columns [lo, hi) of a 2- or 3-tap kernel with the cheap
    compare: every tap in one straight loop.  Returns whether a tap read an
    _odd() value (the caller then redoes the row exactly).

    sw: the stride; d1, d2: the second and third taps' offsets.  A 2-tap
    kernel reads its second tap twice: an equal value never replaces the
    maximum, so one loop serves both.  Callers pass literals: with a constant
    stride gcc loads whole vectors and shuffles, with a run-time one it
    assembles each vector from scalar loads.  Checking the taps here, in
    registers, costs little; a separate pass over the rows cost much more (a
    pass that only loads cannot overlap memory with work;
    docs/tuning.md#fused-kernel-loops).
    """
    cdef Py_ssize_t ow
    cdef const pool_t* src = xr - g.pw
    cdef pool_t a, b, c, m
    cdef bint odd = False
    cdef uint16_t top = 0, low = 0xffff, u = g.inf_bits   # (a local: the stores to hv may alias g)
    if hp != NULL:
        return _hrow_short_pos(xr, hv, hp, lo, hi, pbase, g, sw, d1, d2)
    if pool_t is int16_t or pool_t is int32_t or pool_t is int64_t:
        # Integers: the largest key is the key of the maximum (equal keys are equal bits), one loop
        # for each order, so that the signed one has no flips (AVX2 has no 64-bit integer max: each
        # is a compare and a blend).
        if u:
            for ow in range(lo, hi):
                hv[ow] = _ukey(max(max(_ukey(src[ow * sw], 1), _ukey(src[ow * sw + d1], 1)),
                                   _ukey(src[ow * sw + d2], 1)), 1)
        else:
            for ow in range(lo, hi):
                hv[ow] = max(max(src[ow * sw], src[ow * sw + d1]), src[ow * sw + d2])
        return False
    for ow in range(lo, hi):
        a = src[ow * sw]
        b = src[ow * sw + d1]
        c = src[ow * sw + d2]
        if pool_t is uint16_t:
            # The maximum key is the key of the maximum (_ring).  The values are
            # checked as _special does, in 16-bit lanes: first taps (and second
            # ones with stride 2) read each value once up to the row's last few.
            hv[ow] = <uint16_t>max(max(pk_half_fast_key(a), pk_half_fast_key(b)),
                                   pk_half_fast_key(c))
            top = max(top, <uint16_t>(a & 0x7fff))
            low = min(low, <uint16_t>(a ^ 0x8000))
            if sw == 2:
                top = max(top, <uint16_t>(b & 0x7fff))
                low = min(low, <uint16_t>(b ^ 0x8000))
        else:
            odd |= _odd2(a, b, u) | _odd(c, u)
            m = b if _keep(b, a, u, False) else a
            hv[ow] = c if _keep(c, m, u, False) else m
    if pool_t is uint16_t:
        # The values after the last column's first sw: its taps up to d2.
        odd = (top > u) | (low == 0)
        if hi > lo:
            odd |= _special(src + hi * sw, d2 - sw + 1, u)
    return odd


cdef bint _hrow_short_pos(const pool_t* xr, pool_t* hv, int32_t* hp, Py_ssize_t lo,
                          Py_ssize_t hi, Py_ssize_t pbase, const Geom* g,
                          Py_ssize_t sw, Py_ssize_t d1, Py_ssize_t d2) noexcept nogil:
    """_hrow_short with positions (a function of its own: one large body
    holding both loops made gcc stop inlining the 16-bit ones)."""
    cdef Py_ssize_t ow, first = pbase - g.pw
    cdef const pool_t* src = xr - g.pw
    cdef pool_t a, b, c, m
    cdef int32_t col, mask
    cdef bint odd = False
    cdef uint16_t u = g.inf_bits            # (a local: the stores to hv may alias g)
    for ow in range(lo, hi):
        a = src[ow * sw]
        b = src[ow * sw + d1]
        c = src[ow * sw + d2]
        if pool_t is uint16_t:
            a, b, c = _ring(a), _ring(b), _ring(c)  # select among keys (_ring)
        else:
            odd |= _odd2(a, b, u) | _odd(c, u)
        col = <int32_t>(ow * sw + first)
        mask = -<int32_t>_keep_ring(b, a, u, False)
        m = b if mask else a
        col = (col & ~mask) | (<int32_t>(ow * sw + first + d1) & mask)
        mask = -<int32_t>_keep_ring(c, m, u, False)
        hv[ow] = c if mask else m
        hp[ow] = (col & ~mask) | (<int32_t>(ow * sw + first + d2) & mask)
    return odd


cdef inline bint _short(const Geom* g) noexcept nogil:
    """Whether pass 1 has a straight-line loop (_hrow_short) for this kernel."""
    return (g.kw == 2 or g.kw == 3) and g.dw == 1 and (g.sw == 1 or g.sw == 2)


cdef bint _hinterior(const pool_t* xr, pool_t* hv, int32_t* hp, Py_ssize_t lo,
                     Py_ssize_t hi, Py_ssize_t pbase, const Geom* g, bint exact) noexcept nogil:
    """Pass 1 for interior columns [lo, hi): the straight-line loop for the shape.
    Without `exact`, returns whether a tap read an _odd() value.

    Not inline: a second inlined copy of these loops made gcc stop inlining
    the literal-stride ones (docs/tuning.md#fused-kernel-loops)."""
    cdef bint odd
    if _short(g) and not exact:
        # The ResNet-like shapes, with literal strides and offsets.
        if g.sw == 2 and g.kw == 3:
            odd = _hrow_short(xr, hv, hp, lo, hi, pbase, g, 2, 1, 2)
        elif g.sw == 2:
            odd = _hrow_short(xr, hv, hp, lo, hi, pbase, g, 2, 1, 1)
        elif g.kw == 3:
            odd = _hrow_short(xr, hv, hp, lo, hi, pbase, g, 1, 1, 2)
        else:
            odd = _hrow_short(xr, hv, hp, lo, hi, pbase, g, 1, 1, 1)
        return odd
    elif exact:
        return _hrow_interior(xr, hv, hp, lo, hi, pbase, g, True)
    else:
        return _hrow_interior(xr, hv, hp, lo, hi, pbase, g, False)


cdef inline bint _hcheap(const pool_t* xr, pool_t* hv, int32_t* hp, Py_ssize_t lo,
                         Py_ssize_t hi, Py_ssize_t pbase, const Geom* g) noexcept nogil:
    """_hinterior with the cheap compare; returns whether a tap read an _odd() value.

    The loops check float and double taps as they go, in registers, and so does
    _hrow_short for 16-bit floats without positions (two 16-bit reductions, as
    in _special).  The other 16-bit loops are checked after, while the taps are
    in cache (a check in their body slowed them and stopped gcc inlining them;
    docs/tuning.md#fused-kernel-loops)."""
    cdef bint odd = _hinterior(xr, hv, hp, lo, hi, pbase, g, False)
    if pool_t is uint16_t and (hp != NULL or not _short(g)):
        odd = _special(xr + lo * g.sw - g.pw, (hi - 1 - lo) * g.sw + (g.kw - 1) * g.dw + 1,
                       g.inf_bits)
    return odd


cdef inline void _hborder(const pool_t* xr, Py_ssize_t rows, Py_ssize_t ow, pool_t* hv, int32_t* hp,
                          uint8_t* nan, Py_ssize_t pbase, const Geom* g, bint exact) noexcept nogil:
    """Pass 1 for border column ow (whose window is cut by the row's ends) of
    `rows` rows; with `exact`, nan[r] is set where the result is _odd()
    (without, the caller knows the rows hold no _odd() value).  Column by
    column over the rows, so the tap range is looked up once, not per row and
    column (docs/tuning.md#fused-kernel-loops)."""
    cdef Py_ssize_t r, t, t0 = g.twr[2 * ow], t1 = g.twr[2 * ow + 1], best
    cdef Py_ssize_t w0 = ow * g.sw - g.pw + t0 * g.dw, OW = g.OW, W = g.W, dw = g.dw
    cdef const pool_t* x
    cdef pool_t m, v
    cdef bint keep
    cdef int16_t key, k
    cdef Py_ssize_t mask
    if t0 >= t1:  # the window lies wholly in the padding
        for r in range(rows):
            hv[r * OW + ow] = _ring(_empty_value(<pool_t>0, g.inf_bits))
            if hp != NULL:
                hp[r * OW + ow] = -1
        return
    for r in range(rows):
        x = xr + r * W + w0
        best = 0
        if pool_t is uint16_t and not exact:
            # In keys, with a mask: from m and v, gcc made a mispredicting branch.
            key = pk_half_fast_key(x[0])
            for t in range(1, t1 - t0):
                k = pk_half_fast_key(x[t * dw])
                mask = -<Py_ssize_t>(k > key)
                key = max(key, k)
                best = (best & ~mask) | (t & mask)
            hv[r * OW + ow] = <uint16_t>key
        else:
            m = x[0]
            for t in range(1, t1 - t0):
                v = x[t * dw]
                keep = _keep(v, m, g.inf_bits, exact)
                m = v if keep else m
                best = t if keep else best
            hv[r * OW + ow] = _ring(m)
        if hp != NULL:
            hp[r * OW + ow] = <int32_t>(pbase + r * W + w0 + best * dw)
        if exact:
            nan[r] |= _odd(m, g.inf_bits)


cdef void _hrows(const pool_t* xr, Py_ssize_t rows, pool_t* hv, int32_t* hp, uint8_t* nan,
                 Py_ssize_t pbase, const Geom* g) noexcept nogil:
    """Pass 1 over `rows` consecutive input rows starting at xr: buffer row r gets
    row r's maxima (hv, OW values) and their positions (hp: pbase + r*W +
    column; hp NULL without Indices).  nan[r]: whether row r's maxima need the
    exact compare in pass 2.

    Rows go through the cheap compare of _keep, which is right for rows
    without an _odd() value (nearly all), and the ones that have one are
    redone with the contract's exact compare.  A flat geometry first takes all rows as
    one long row, then redoes rows one by one only if that saw an _odd() value.
    """
    cdef Py_ssize_t r, ow, first, last, OW = g.OW, W = g.W
    cdef bint redo = True, odd
    cdef const pool_t* x
    cdef int32_t* p
    if g.flat:
        redo = _hcheap(xr, hv, hp, g.ow_lo, (rows - 1) * OW + g.ow_hi, pbase, g)
    for r in range(rows):
        odd = False
        if redo and g.ow_lo < g.ow_hi:
            x = xr + r * W
            p = hp + r * OW if hp != NULL else NULL
            odd = _hcheap(x, hv + r * OW, p, g.ow_lo, g.ow_hi, pbase + r * W, g)
            if odd:
                _hinterior(x, hv + r * OW, p, g.ow_lo, g.ow_hi, pbase + r * W, g, True)
        nan[r] = odd
    # Border columns: the cheap compare too (the exact one compiles to a
    # mispredicting branch here) when the long row's check covered every
    # value of the block but a few at its ends, and those are clean too.
    # With a W dilation the long row read only its taps, and a border window's taps fall in
    # the gaps between them: check the whole block.
    if g.flat and not redo and g.dw > 1:
        redo = _special(xr, rows * W, g.inf_bits)
    elif g.flat and not redo:
        first = g.ow_lo * g.sw - g.pw
        last = (rows - 1) * W + (g.ow_hi - 1) * g.sw - g.pw + (g.kw - 1) * g.dw + 1
        redo = _special(xr, first, g.inf_bits) | _special(xr + last, rows * W - last, g.inf_bits)
    for ow in range(min(g.ow_lo, OW)):
        if redo:
            _hborder(xr, rows, ow, hv, hp, nan, pbase, g, True)
        else:
            _hborder(xr, rows, ow, hv, hp, nan, pbase, g, False)
    for ow in range(max(g.ow_lo, g.ow_hi), OW):
        if redo:
            _hborder(xr, rows, ow, hv, hp, nan, pbase, g, True)
        else:
            _hborder(xr, rows, ow, hv, hp, nan, pbase, g, False)


cdef inline void _vcombine(const pool_t* hv, const int32_t* hp, pool_t* yrow, int32_t* wpos,
                           int32_t* wdep, int32_t d, Py_ssize_t OW, uint16_t inf_bits,
                           bint exact) noexcept nogil:
    """Pass 2, one later row: yrow[ow] = hv[ow] where it is greater; its position
    (and depth, when wdep is not NULL) moves along.  yrow holds values as the
    row buffer does (_ring) until the caller converts it.

    32-bit lanes and mask selects so float32 rows vectorise; `exact` is a
    literal at each call site (see _keep).
    """
    cdef Py_ssize_t ow
    cdef pool_t v, m
    cdef int32_t mask
    if hp == NULL:
        for ow in range(OW):
            v = hv[ow]
            m = yrow[ow]
            yrow[ow] = v if _keep_ring(v, m, inf_bits, exact) else m
    elif wdep == NULL:
        for ow in range(OW):
            v = hv[ow]
            m = yrow[ow]
            mask = -<int32_t>_keep_ring(v, m, inf_bits, exact)
            yrow[ow] = v if mask else m
            wpos[ow] = (wpos[ow] & ~mask) | (hp[ow] & mask)
    else:
        for ow in range(OW):
            v = hv[ow]
            m = yrow[ow]
            mask = -<int32_t>_keep_ring(v, m, inf_bits, exact)
            yrow[ow] = v if mask else m
            wpos[ow] = (wpos[ow] & ~mask) | (hp[ow] & mask)
            wdep[ow] = (wdep[ow] & ~mask) | (d & mask)


cdef inline void _vcombine3(pool_t** rv, pool_t* yrow, Py_ssize_t OW, uint16_t inf_bits,
                            bint exact) noexcept nogil:
    """Pass 2 without Indices for at most three rows (repeated to three): one loop into Y.

    (With Indices the row-at-a-time _vcombine measured faster: the fused
    loop's six-way selects do not vectorise; docs/tuning.md#fused-kernel-loops.)
    """
    cdef Py_ssize_t ow
    cdef pool_t a, b, c, m
    cdef pool_t* r0 = rv[0]
    cdef pool_t* r1 = rv[1]
    cdef pool_t* r2 = rv[2]
    if pool_t is uint16_t and not exact:
        for ow in range(OW):
            yrow[ow] = _ring(<uint16_t>max(max(<int16_t>r0[ow], <int16_t>r1[ow]), <int16_t>r2[ow]))
        return
    if pool_t is int16_t or pool_t is int32_t or pool_t is int64_t:  # as _hrow_short's
        if inf_bits:
            for ow in range(OW):
                yrow[ow] = _ukey(max(max(_ukey(r0[ow], 1), _ukey(r1[ow], 1)), _ukey(r2[ow], 1)), 1)
        else:
            for ow in range(OW):
                yrow[ow] = max(max(r0[ow], r1[ow]), r2[ow])
        return
    for ow in range(OW):
        a = _ring(r0[ow])
        b = _ring(r1[ow])
        c = _ring(r2[ow])
        m = b if _keep(b, a, inf_bits, exact) else a
        yrow[ow] = c if _keep(c, m, inf_bits, exact) else m


cdef inline void _index_row(int64_t* irow, const int32_t* wpos, Py_ssize_t OW, int64_t base,
                            int64_t imul) noexcept nogil:
    """irow[ow] = base + wpos[ow] * imul, or -1 where no tap was valid (wpos < 0).

    Its own function so that nothing in the loop is read through a pointer the stores could
    alias: written inline with the Geom's fields, GCC reloaded them after every store and the
    loop took most of a call with Indices on Zen 4 (docs/tuning.md#fused-kernel-loops)."""
    cdef Py_ssize_t ow
    for ow in range(OW):
        irow[ow] = base + wpos[ow] * imul if wpos[ow] >= 0 else -1


cdef void _pool_rows(const pool_t* xp, pool_t* yp, int64_t* ip, int64_t xoff, const Geom* g,
                     Py_ssize_t od, Py_ssize_t oh0, Py_ssize_t oh1,
                     pool_t* hval, int32_t* hpos, uint8_t* nan,
                     int act, pool_t lo, pool_t hi) noexcept nogil:
    """Output rows [oh0, oh1) of depth slice od of one plane.

    xp, yp, ip: the plane in X, Y and Indices (ip NULL without Indices); xoff is
    the plane's base in the Indices' encoding (Geom; for "onnx" its flat offset
    in X).  hval/hpos/nan: this thread's row buffer, g.brows rows per depth tap
    (hpos NULL without Indices; after the buffer it holds the running winner's
    position and depth, 2 * OW int32).
    """
    cdef Py_ssize_t OW = g.OW, W = g.W
    cdef Py_ssize_t span = (g.kh - 1) * g.dh + 1
    cdef Py_ssize_t per = max(1, (g.brows - span) // g.sh + 1)  # output rows per chunk
    cdef Py_ssize_t c0, c1, hlo, hhi, oh, ow, td, th, td0, td1, th0, th1, d, i, dbase, hbase
    cdef Py_ssize_t nrows, t, hu, have, a, n, slot, r0, r1, r2
    cdef pool_t* yrow
    cdef int64_t* irow = NULL
    cdef pool_t* hv
    cdef int32_t* hp = NULL
    cdef int32_t* wpos = NULL      # winner's position in its depth slice's block, per column
    cdef int32_t* wdep = NULL      # and its depth (3-D kernels only)
    cdef bint first, exact
    cdef pool_t* rv[3]             # the first three rows an output row combines
    cdef pool_t empty = _empty_value(<pool_t>0, g.inf_bits)
    if hpos != NULL:
        wpos = hpos + g.kd * g.brows * OW
        if g.kd > 1:
            wdep = wpos + OW

    dbase = od * g.sd - g.pd
    td0, td1 = g.tdr[2 * od], g.tdr[2 * od + 1]
    hu = max(0, oh0 * g.sh - g.ph)  # the unit's first input row: positions count from it
    have = hu                       # rows below `have` are reduced (those still needed
    c0 = oh0                        # are in the ring)
    while c0 < oh1:
        c1 = min(c0 + per, oh1)
        # Input rows [hlo, hhi) of this chunk; ring slot of row h: h & (brows - 1).
        hlo = max(0, c0 * g.sh - g.ph)
        hhi = min(g.H, (c1 - 1) * g.sh - g.ph + span)
        a = max(hlo, have)
        while a < hhi:
            slot = a & (g.brows - 1)
            n = min(hhi - a, g.brows - slot)  # up to the ring's end
            for td in range(td0, td1):
                i = (td - td0) * g.brows + slot
                _hrows(xp + ((dbase + td * g.dd) * g.H + a) * W, n, hval + i * OW,
                       hpos + i * OW if hpos != NULL else NULL, nan + i, (a - hu) * W, g)
            a += n
        have = max(have, hhi)
        for oh in range(c0, c1):
            yrow = yp + (od * g.OH + oh) * OW
            if ip != NULL:
                irow = ip + (od * g.OH + oh) * OW
            hbase = oh * g.sh - g.ph
            th0, th1 = g.thr[2 * oh], g.thr[2 * oh + 1]
            if td0 >= td1 or th0 >= th1:
                for ow in range(OW):
                    yrow[ow] = empty
                    if irow != NULL:
                        irow[ow] = -1
            elif hpos == NULL and td1 - td0 == 1 and th1 - th0 <= 3:
                # The common case (2-D, or one depth tap) without Indices: no tap
                # loop, whose bookkeeping cost as much as the combine on 28-wide rows.
                # Rows th0, th0 + 1, th1 - 1 (the last repeated when fewer).
                r0 = (hbase + th0 * g.dh) & (g.brows - 1)
                r1 = (hbase + min(th0 + 1, th1 - 1) * g.dh) & (g.brows - 1)
                r2 = (hbase + (th1 - 1) * g.dh) & (g.brows - 1)
                rv[0], rv[1], rv[2] = hval + r0 * OW, hval + r1 * OW, hval + r2 * OW
                if nan[r0] | nan[r1] | nan[r2]:
                    _vcombine3(rv, yrow, OW, g.inf_bits, True)
                else:
                    _vcombine3(rv, yrow, OW, g.inf_bits, False)
            else:
                # Buffer row of tap (td, th): (td - td0) * brows + (h & (brows - 1)).
                exact = False
                nrows = 0
                for td in range(td0, td1):
                    for th in range(th0, th1):
                        i = (td - td0) * g.brows + ((hbase + th * g.dh) & (g.brows - 1))
                        exact |= nan[i]
                        if nrows < 3:
                            rv[nrows] = hval + i * OW
                        nrows += 1
                # Combine them in tap order: without Indices, up to three rows in
                # one loop (the last repeated, which never changes the winner).
                if nrows <= 3 and hpos == NULL:
                    for t in range(nrows, 3):
                        rv[t] = rv[nrows - 1]
                    if exact:
                        _vcombine3(rv, yrow, OW, g.inf_bits, True)
                    else:
                        _vcombine3(rv, yrow, OW, g.inf_bits, False)
                else:
                    first = True
                    for td in range(td0, td1):
                        d = dbase + td * g.dd
                        for th in range(th0, th1):
                            i = (td - td0) * g.brows + ((hbase + th * g.dh) & (g.brows - 1))
                            hv = hval + i * OW
                            hp = hpos + i * OW if hpos != NULL else NULL
                            if first:
                                first = False
                                for ow in range(OW):
                                    yrow[ow] = hv[ow]
                                if hp != NULL:
                                    for ow in range(OW):
                                        wpos[ow] = hp[ow]
                                if wdep != NULL:
                                    for ow in range(OW):
                                        wdep[ow] = <int32_t>d
                            elif exact:
                                _vcombine(hv, hp, yrow, wpos, wdep, <int32_t>d, OW, g.inf_bits, True)
                            else:
                                _vcombine(hv, hp, yrow, wpos, wdep, <int32_t>d, OW, g.inf_bits, False)
                    if pool_t is uint16_t:
                        for ow in range(OW):
                            yrow[ow] = _ring(yrow[ow])
                if irow != NULL:
                    # Positions count from row hu of the winner's depth slice.
                    if wdep == NULL:
                        _index_row(irow, wpos, OW, xoff + (<int64_t>(dbase + td0 * g.dd) * g.H + hu) * W * g.imul,
                                   g.imul)
                    else:
                        for ow in range(OW):
                            irow[ow] = (xoff + ((<int64_t>wdep[ow] * g.H + hu) * W + wpos[ow]) * g.imul
                                        if wpos[ow] >= 0 else -1)
        if act:  # the chunk's rows at once: rows of a few vectors left long scalar tails (bool's clamp at 1)
            _clamp_row(yp + (od * g.OH + c0) * OW, (c1 - c0) * OW, lo, hi, act, g.inf_bits)
        c0 = c1


cdef bint _depth_first(const pool_t* xp, pool_t* m, const Geom* g, Py_ssize_t od) noexcept nogil:
    """m = the elementwise maximum of the depth slices output depth od reads
    (one H x W slice), for pooling it in 2-D after: half the 2-D work of the
    slice-by-slice order on stride-2 depths.  Reducing depth first breaks
    the contract's tie order, which only shows when equal values have different bits:
    returns False (m unusable) if the slices hold a NaN or -0.0, or the
    depth window is empty; integers always pass."""
    cdef Py_ssize_t i, td, HW = g.H * g.W
    cdef Py_ssize_t td0 = g.tdr[2 * od], td1 = g.tdr[2 * od + 1]
    cdef const pool_t* src
    cdef pool_t v, a
    cdef bint odd = False
    if td0 >= td1:
        return False
    for td in range(td0, td1):
        src = xp + (od * g.sd - g.pd + td * g.dd) * HW
        if pool_t is uint16_t:
            odd |= _special(src, HW, g.inf_bits)
        for i in range(HW):
            v = src[i]
            if pool_t is float:
                odd |= pk_f32_tie_odd(v)
            elif pool_t is double:
                odd |= pk_f64_tie_odd(v)
            if td == td0:
                m[i] = v
            else:
                a = m[i]
                m[i] = v if _keep(v, a, g.inf_bits, False) else a
    return not odd


cdef class MaxPool3d(_Launch):
    """NCHW MaxPool over planes: x (planes, D, H, W) -> y (planes, OD, OH, OW); see _Launch.

    brows: ring rows per depth tap, a power of two, at least min(H, (kh - 1) * dh
    + 1); brows * W and D must stay below 2**31 (positions are int32).
    rows_per_unit: output rows per work item (the parallel split is over planes x
    depth x blocks of rows, so a few large planes still use every core).
    depth_first: reduce depth first (_depth_first) where the data allows; only
    without indices and with rows_per_unit == OH.
    chunk: the pool's smallest claim, in work items (pooling._threads.chunk_size;
    include/pooling_pool.h).  index: the Indices' encoding, (imul, icmul, islices,
    ichannels, inbase, icbase) (Geom).
    """
    cdef Geom flat_g
    cdef Py_ssize_t one_tap[2]
    cdef Py_ssize_t nblk, rows_per_unit, xplane, yplane
    cdef Py_ssize_t vscratch, pscratch, nscratch, mscratch  # per-thread scratch elements

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 Py_ssize_t brows, Py_ssize_t rows_per_unit, bint depth_first, int act,
                 double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk,
                 tuple index):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        self._set_index(index)
        cdef Geom* g = &self.g
        cdef Py_ssize_t planes = x_shape[0]
        g.brows = brows
        # Output columns ow with ow*sw - pw >= 0 and ow*sw - pw + (kw-1)*dw <= W-1.
        g.ow_lo = min((g.pw + g.sw - 1) // g.sw, g.OW)
        if g.W - 1 - (g.kw - 1) * g.dw + g.pw < 0:
            g.ow_hi = 0
        else:
            g.ow_hi = min((g.W - 1 - (g.kw - 1) * g.dw + g.pw) // g.sw + 1, g.OW)
        g.flat = g.W == g.OW * g.sw and g.ow_lo < g.ow_hi
        # The same geometry for one depth slice pooled in 2-D (after _depth_first).
        self.flat_g = self.g
        self.flat_g.D, self.flat_g.OD, self.flat_g.kd = 1, 1, 1
        self.flat_g.sd, self.flat_g.dd, self.flat_g.pd = 1, 1, 0
        self.one_tap[0], self.one_tap[1] = 0, 1
        self.flat_g.tdr = self.one_tap
        self.rows_per_unit = rows_per_unit
        self.nblk = (g.OH + rows_per_unit - 1) // rows_per_unit
        self.units = planes * g.OD * self.nblk
        self.xplane, self.yplane = g.D * g.H * g.W, g.OD * g.OH * g.OW
        self.xsize, self.ysize = planes * self.xplane, planes * self.yplane
        self.n_threads = max(1, min(n_threads, self.units))
        self.chunk = max(1, chunk)
        self.vscratch = _padded(g.kd * brows * g.OW, self.itemsize)
        self.pscratch = _padded((g.kd * brows + 2) * g.OW, 4)
        self.nscratch = _padded(g.kd * brows, 1)
        self.mscratch = _padded(g.H * g.W, self.itemsize) if depth_first else 0

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        # Row buffers, NaN flags, depth slabs, positions: each a multiple of 64 bytes.
        return self.n_threads * ((self.vscratch + self.mscratch) * self.itemsize + self.nscratch
                                 + (self.pscratch * 4 if with_pos else 0))

    cdef void _run(self, const char* xb, char* yb, int64_t* ib, _Scratch s):
        cdef _UnitsJob j
        _start_job(&j, xb, yb, ib, self)
        # Scratch per thread: row buffers, NaN flags, depth slabs, positions (with indices).
        j.C, j.fg, j.nblk, j.rows = 0, &self.flat_g, self.nblk, self.rows_per_unit
        j.xplane, j.yplane = self.xplane, self.yplane
        j.vs, j.ns, j.ms, j.ps = self.vscratch, self.nscratch, self.mscratch, self.pscratch
        j.hv = s.block
        j.nan = <uint8_t*>(j.hv + self.n_threads * j.vs * self.itemsize)
        j.m = <char*>(j.nan + self.n_threads * j.ns)
        j.hp = <int32_t*>(j.m + self.n_threads * j.ms * self.itemsize) if ib != NULL else NULL
        if not j.ms:
            j.m = NULL
        with nogil:
            pk_parallel(_units_body, &j, self.units, self.chunk, self.n_threads)


cdef void _units(pool_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                 int tid) noexcept nogil:
    """MaxPool3d's work items [begin, end) in element type pool_t (`kind` only selects it),
    with thread tid's scratch."""
    cdef Py_ssize_t u
    cdef pool_t* m = NULL
    cdef int32_t* hp = NULL
    cdef pool_t* hv = <pool_t*>j.hv + tid * j.vs
    if j.m != NULL:
        m = <pool_t*>j.m + tid * j.ms
    if j.hp != NULL:
        hp = j.hp + tid * j.ps
    for u in range(begin, end):
        _pool_unit(<const pool_t*>j.x, <pool_t*>j.y, j.ib, j.g, j.fg, u, j.nblk, j.rows, j.xplane,
                   j.yplane, hv, hp, j.nan + tid * j.ns, m, j.act, <pool_t>j.lo, <pool_t>j.hi)


cdef void _pool_unit(const pool_t* xb, pool_t* yb, int64_t* ib, const Geom* g,
                            const Geom* flat_g, Py_ssize_t u, Py_ssize_t nblk,
                            Py_ssize_t rows_per_unit, Py_ssize_t xplane, Py_ssize_t yplane,
                            pool_t* hval, int32_t* hpos, uint8_t* nan, pool_t* m,
                            int act, pool_t lo, pool_t hi) noexcept nogil:
    """Work item u of MaxPool3d: rows_per_unit output rows of one depth slice of
    one plane, with this thread's scratch (m NULL: never reduce depth first)."""
    # Copies the compiler can keep in registers: through the pointers, every store
    # to a row might change the geometry (docs/tuning.md#fused-kernel-loops).
    cdef Geom gc = g[0], fc = flat_g[0]
    g, flat_g = &gc, &fc
    cdef Py_ssize_t plane = u // (g.OD * nblk)
    cdef Py_ssize_t r = u - plane * (g.OD * nblk)
    cdef Py_ssize_t od = r // nblk
    cdef Py_ssize_t oh0 = (r - od * nblk) * rows_per_unit
    cdef int64_t q, n, base = 0
    if ib != NULL:  # the plane's base in the Indices' encoding (Geom)
        q = plane // g.islices
        n = q // g.ichannels
        base = ((plane - q * g.islices) * xplane * g.imul + n * g.inbase
                + (q - n * g.ichannels) * g.icbase)
    if m != NULL and _depth_first(xb + plane * xplane, m, g, od):
        _pool_rows(m, yb + plane * yplane + od * g.OH * g.OW, NULL, 0, flat_g, 0, 0, g.OH,
                   hval, NULL, nan, act, lo, hi)
    else:
        _pool_rows(xb + plane * xplane, yb + plane * yplane,
                   ib + plane * yplane if ib != NULL else NULL,
                   base, g, od, oh0, min(oh0 + rows_per_unit, g.OH),
                   hval, hpos, nan, act, lo, hi)
