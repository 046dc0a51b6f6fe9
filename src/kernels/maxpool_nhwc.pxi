# ===========================================================================
# maxpool_nhwc.pxi: MaxPoolNHWC, the channels-last kernel, beside its loops.
#
# Strategy NHWC of pooling._maxpool_strategies (com.ms.internal.nhwc, ranks
# 1-3 promoted to 3-D); the other NHWC strategy, "NHWC by transpose"
# (_run_nhwc_transposed), is the separable kernel run on a transposed copy,
# maxpool_separable.pxi.  Call order: _nhwc_body -> _nhwc_rows -> _nhwc_unit
# -> _nhwc_row -> _nhwc_tap.
#
# The channel axis is contiguous, so each tap of a window is one vector
# update over C; taps are visited in lexicographic order, so "strictly
# greater replaces" again gives the first maximum.  Winners are tracked as
# the int32 pixel number inside the image, widened once per output pixel.
#
# Strategy NHWC_BLOCKS is the same launch with `blocks` set (float32 without
# Indices, at least a vector of channels): each output pixel's window combined
# a block of channels at a time in registers with the cheap compare
# (include/pooling_nhwc.h), each input row checked for NaN by the first output
# row that reads it and the output rows whose windows read one computed by
# the exact loop.
# ===========================================================================

cdef class MaxPoolNHWC(_Launch):
    """Channels-last MaxPool: x (N, D, H, W, C) -> y (N, OD, OH, OW, C); see _Launch.
    Indices are in the encoding `index` gives (Geom; "onnx": flat offsets into x's own NHWC
    memory; pixels per image must be fewer than 2**31).  Work items are output rows; `chunk` is
    the pool's smallest claim."""
    cdef Py_ssize_t C, wscratch, bscratch   # channels; int32 winners; the register loops' bytes per thread
    cdef bint blocks, holes, half           # NHWC_BLOCKS; some window has no tap; 16-bit floats
    cdef bint iblocks                       # float32 or 4-byte integers with Indices in registers (pk_nhwc_irow_f32, _i32)

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 int act, double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk,
                 tuple index, bint blocks=False):
        self._setup(ctype, x_shape[1:4], y_shape[1:4], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        self._set_index(index)
        cdef Py_ssize_t N = x_shape[0]
        self.C = x_shape[4]
        self.blocks = blocks
        self.half = ctype == "uint16_t" and inf_bits != 0
        if blocks and not ((ctype == "float" and self.C >= PK_NARROW_L)
                           or ((self.half or ctype == "int16_t") and self.C >= PK_NHWC_H16_L)
                           or (ctype == "int32_t" and self.C >= PK_NHWC_I32_L)):
            raise ValueError(f"MaxPoolNHWC: blocks of channels need float32 and at least {PK_NARROW_L} "
                             f"channels, a 16-bit float or 2-byte integer and at least {PK_NHWC_H16_L}, or a "
                             f"4-byte integer and at least {PK_NHWC_I32_L}, got {ctype} "
                             f"(inf_bits {inf_bits:#x}) and {self.C}")
        self.wscratch = _padded(self.C, 4)
        # With Indices, float32 and the 4-byte integers on a vector of channels or more are computed in
        # registers too (pk_nhwc_irow_f32, pk_nhwc_irow_i32), where an image's pixels times imul fit
        # int32 (the winners' form).
        self.iblocks = (((ctype == "float" and self.C >= PK_NARROW_L)
                         or (ctype == "int32_t" and self.C >= PK_NHWC_I32_L))
                        and self.g.D * self.g.H * self.g.W * self.g.imul <= 0x7fffffff)
        if blocks or self.iblocks:
            # per thread: the pointers to one output row's window rows, the image each input row
            # was found clean in, each window row's first pixel, and whether it is to be checked
            self.bscratch = _padded(self.g.kd * self.g.kh * (sizeof(void*) + sizeof(int32_t) + 1)
                                    + self.g.D * self.g.H * sizeof(Py_ssize_t), 1)
            self.holes = not (_all_taps(self.g.tdr, self.g.OD) and _all_taps(self.g.thr, self.g.OH)
                              and _all_taps(self.g.twr, self.g.OW))
        self.units = N * self.g.OD * self.g.OH if self.g.OW * self.C else 0
        self.reports_nan = True
        self.xsize = N * self.g.D * self.g.H * self.g.W * self.C
        self.ysize = N * self.g.OD * self.g.OH * self.g.OW * self.C
        self.n_threads = max(1, min(n_threads, self.units))
        self.chunk = max(1, chunk)

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        # The register loops' window rows and their NaN states, then (with positions) the exact loop's
        # winners; a set with positions also serves calls without (_take_scratch).
        if with_pos:
            return self.n_threads * (self.bscratch + self.wscratch * 4)
        return self.n_threads * self.bscratch

    cdef void _run(self, const char* xb, char* yb, int64_t* ib, _Scratch s):
        cdef _UnitsJob j
        _start_job(&j, xb, yb, ib, self)
        # NHWC_BLOCKS where it was asked for and there are values to read (an empty x with pads
        # has only windows without taps: the exact loop); its scratch, or the winners' pixels
        # with indices, or none
        j.blocks = self.blocks and ib == NULL and j.x != NULL
        j.iblocks = self.iblocks and ib != NULL and j.x != NULL
        j.C = self.C
        if j.blocks or j.iblocks:  # bytes per thread: the register loops' part, then the exact loop's winners
            j.vs, j.ibytes = self.bscratch + (self.wscratch * 4 if ib != NULL else 0), self.bscratch
        else:                      # the exact loop alone: its winners, in int32s per thread
            j.vs = self.wscratch
        j.hv = s.block if ib != NULL or j.blocks else NULL
        j.holes = self.holes
        j.half = self.half
        if s.scan_nan:  # each work item is an output row, OW pixels of C channels
            j.nan_found, j.yunit = &s.nan_found, self.g.OW * self.C
        with nogil:
            pk_parallel(_nhwc_body, &j, self.units, self.chunk, self.n_threads)


cdef void _nhwc_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for MaxPoolNHWC: output rows [begin, end) on thread tid."""
    _nhwc_dispatch(job, begin, end, tid)
    if (<_UnitsJob*>job).nan_found != NULL:
        _scan_nan(<_UnitsJob*>job, begin, end)


cdef inline void _nhwc_dispatch(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    if (<_UnitsJob*>job).iblocks:
        if (<_UnitsJob*>job).kind == KIND_INT32:
            _nhwc_blocks(<int32_t*>NULL, <_UnitsJob*>job, begin, end, tid)
        else:
            _nhwc_blocks(<float*>NULL, <_UnitsJob*>job, begin, end, tid)
    elif (<_UnitsJob*>job).blocks:
        if (<_UnitsJob*>job).half:
            _nhwc_blocks(<uint16_t*>NULL, <_UnitsJob*>job, begin, end, tid)
        elif (<_UnitsJob*>job).kind == KIND_INT16:
            _nhwc_blocks(<int16_t*>NULL, <_UnitsJob*>job, begin, end, tid)
        elif (<_UnitsJob*>job).kind == KIND_INT32:
            _nhwc_blocks(<int32_t*>NULL, <_UnitsJob*>job, begin, end, tid)
        else:
            _nhwc_blocks(<float*>NULL, <_UnitsJob*>job, begin, end, tid)
    else:
        _nhwc_rows_body(job, begin, end, tid)  # (bodies.pxi.in)


cdef void _nhwc_rows(pool_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                     int tid) noexcept nogil:
    """MaxPoolNHWC's output rows [begin, end) in element type pool_t, with thread tid's
    winners' pixels (with indices)."""
    cdef Py_ssize_t u
    cdef int32_t* wpix = <int32_t*>j.hv + tid * j.vs if j.hv != NULL else NULL
    cdef const pool_t* xb = <const pool_t*>j.x
    cdef pool_t* yb = <pool_t*>j.y
    cdef pool_t lo = <pool_t>j.lo, hi = <pool_t>j.hi
    cdef Py_ssize_t C = j.C
    cdef const Geom* g = j.g
    cdef int64_t* ib = j.ib
    cdef int act = j.act
    # The first row outside the loop: _nhwc_row then has two call sites per type, and gcc keeps it
    # a function of its own instead of inlining it into its one caller, where the baseline build's
    # code ran slower (docs/tuning.md#nhwc-kernel-loops).
    if begin < end:
        _nhwc_unit(xb, yb, ib, C, g, begin, wpix, act, lo, hi)
    for u in range(begin + 1, end):
        _nhwc_unit(xb, yb, ib, C, g, u, wpix, act, lo, hi)


cdef inline void _nhwc_tap(const pool_t* xv, pool_t* yv, int32_t* wpix, int32_t pix, Py_ssize_t C,
                           uint16_t inf_bits, bint exact) noexcept nogil:
    """One later tap of a window: a vector update over the C channels (see _keep)."""
    cdef Py_ssize_t c
    cdef pool_t v, m
    cdef int32_t mask, old
    if wpix != NULL:
        for c in range(C):
            v = xv[c]
            m = yv[c]
            old = wpix[c]
            mask = -<int32_t>_keep(v, m, inf_bits, exact)
            yv[c] = v if mask else m
            wpix[c] = (old & ~mask) | (pix & mask)
    else:
        for c in range(C):
            v = xv[c]
            m = yv[c]
            yv[c] = v if _keep(v, m, inf_bits, exact) else m


cdef void _nhwc_row(const pool_t* xp, pool_t* yrow, int64_t* irow, int64_t xoff, Py_ssize_t C,
                    const Geom* g, Py_ssize_t od, Py_ssize_t oh, int32_t* wpix,
                    int act, pool_t lo, pool_t hi) noexcept nogil:
    """Output row (od, oh) of one image: yrow/irow hold OW pixels of C channels.

    xp: the image in X; xoff: its base in the Indices' encoding (Geom); wpix: this
    thread's C int32 winners (NULL without Indices).  For 16-bit floats the
    input rows the output row reads are checked once for NaN and -0.0, so
    the cheap key of _keep serves nearly every row.  float and double keep the
    exact compare: it vectorises well over C, and the extra pass over rows
    larger than L1 measured slower (docs/tuning.md#nhwc-kernel-loops).
    """
    cdef Geom gc = g[0]  # in registers: see _pool_unit
    g = &gc
    cdef Py_ssize_t ow, c, td, th, tw, td0, td1, th0, th1, tw0, tw1, dbase, hbase, wbase
    cdef int32_t pix
    cdef const pool_t* xv
    cdef pool_t* yv
    cdef bint first, exact = pool_t is not uint16_t
    cdef pool_t empty = _empty_value(<pool_t>0, g.inf_bits)
    dbase = od * g.sd - g.pd
    hbase = oh * g.sh - g.ph
    td0, td1 = g.tdr[2 * od], g.tdr[2 * od + 1]
    th0, th1 = g.thr[2 * oh], g.thr[2 * oh + 1]
    for td in range(td0, td1):
        for th in range(th0, th1):
            if pool_t is uint16_t:
                exact |= _special(xp + ((dbase + td * g.dd) * g.H + hbase + th * g.dh) * g.W * C,
                              g.W * C, g.inf_bits)
    for ow in range(g.OW):
        yv = yrow + ow * C
        wbase = ow * g.sw - g.pw
        tw0, tw1 = g.twr[2 * ow], g.twr[2 * ow + 1]
        first = True
        if td0 >= td1 or th0 >= th1 or tw0 >= tw1:
            for c in range(C):
                yv[c] = empty
                if wpix != NULL:
                    wpix[c] = -1
        for td in range(td0, td1):
            for th in range(th0, th1):
                for tw in range(tw0, tw1):
                    pix = <int32_t>(((dbase + td * g.dd) * g.H + hbase + th * g.dh) * g.W
                                    + wbase + tw * g.dw)
                    xv = xp + pix * C
                    if first:
                        first = False
                        for c in range(C):
                            yv[c] = xv[c]
                        if wpix != NULL:
                            for c in range(C):
                                wpix[c] = pix
                    elif exact:
                        _nhwc_tap(xv, yv, wpix, pix, C, g.inf_bits, True)
                    else:
                        _nhwc_tap(xv, yv, wpix, pix, C, g.inf_bits, False)
        if irow != NULL:
            for c in range(C):
                irow[ow * C + c] = xoff + wpix[c] * g.imul + c * g.icmul if wpix[c] >= 0 else -1
        if act:
            _clamp_row(yv, C, lo, hi, act, g.inf_bits)


cdef inline void _nhwc_unit(const pool_t* xb, pool_t* yb, int64_t* ib, Py_ssize_t C, const Geom* g,
                            Py_ssize_t u, int32_t* wpix, int act, pool_t lo, pool_t hi) noexcept nogil:
    """Work item u of MaxPoolNHWC: one output row."""
    cdef Py_ssize_t n = u // (g.OD * g.OH), yrow = g.OW * C
    cdef Py_ssize_t r = u - n * (g.OD * g.OH)
    _nhwc_row(xb + n * g.D * g.H * g.W * C, yb + u * yrow, ib + u * yrow if ib != NULL else NULL,
              n * g.inbase, C, g, r // g.OH, r % g.OH, wpix, act, lo, hi)


cdef void _nhwc_blocks(reg_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                       int tid) noexcept nogil:
    """NHWC_BLOCKS, and float32 and 4-byte integer NHWC with Indices (j.iblocks): output rows [begin, end) on thread tid,
    float32, 16-bit floats or 2- and 4-byte integers (reg_t), each from its window's input rows in
    registers (pk_nhwc_row_f32, pk_nhwc_row_h16, pk_nhwc_row_i16, pk_nhwc_row_i32; pk_nhwc_irow_f32 and
    pk_nhwc_irow_i32 with the winners), or by the exact loop where
    they hold a NaN (16-bit floats: or a -0.0) or a window has no tap.  Each input row is looked for
    those by the first output row of this thread that reads it, in the columns its windows read
    (include/pooling_nhwc.h), and marked clean (clean[row] is the image it was found clean in, plus
    one) if none was found."""
    cdef Geom gc = j.g[0]
    cdef const Geom* g = &gc
    cdef char* base = j.hv + tid * j.vs
    cdef const reg_t** rows = <const reg_t**>base
    cdef Py_ssize_t* clean = <Py_ssize_t*>(rows + g.kd * g.kh)
    cdef int32_t* rpix = <int32_t*>(clean + g.D * g.H)
    cdef unsigned char* chk = <unsigned char*>(rpix + g.kd * g.kh)
    cdef int32_t* wpix = <int32_t*>(base + j.ibytes) if j.iblocks else NULL
    cdef int64_t* ib = j.ib if j.iblocks else NULL
    cdef Py_ssize_t C = j.C, plane = g.OD * g.OH, image = g.D * g.H * g.W * C, rowlen = g.W * C
    cdef Py_ssize_t u, n, r, od, oh, td, th, row = 0, nrows, i, nnext
    cdef Py_ssize_t own_w = g.sw if g.dw == 1 else g.kw
    cdef const reg_t* x
    cdef reg_t* y
    cdef reg_t lo = <reg_t>j.lo, hi = <reg_t>j.hi
    cdef bint redo
    memset(clean, 0, g.D * g.H * sizeof(Py_ssize_t))
    for u in range(begin, end):
        n = u // plane
        r = u - n * plane
        od, oh = r // g.OH, r % g.OH
        x = <const reg_t*>j.x + n * image
        nrows = 0
        for td in range(g.tdr[2 * od], g.tdr[2 * od + 1]):
            for th in range(g.thr[2 * oh], g.thr[2 * oh + 1]):
                row = (od * g.sd - g.pd + td * g.dd) * g.H + oh * g.sh - g.ph + th * g.dh
                rows[nrows] = x + row * rowlen
                rpix[nrows] = <int32_t>(row * g.W)
                chk[nrows] = clean[row] != n + 1
                nrows += 1
        y = <reg_t*>j.y + u * g.OW * C
        # the rows after this window's last, as many as the H stride: what the next output row adds
        nnext = min(g.sh, g.D * g.H - row - 1) * rowlen if j.prefetch and nrows and u + 1 < end else 0
        redo = j.holes or nrows == 0
        if not redo:
            if reg_t is int16_t:
                redo = pk_nhwc_row_i16(rows, chk, nrows, y, g.OW, C, g.sw, g.dw, g.pw, own_w, g.twr,
                                       x + (row + 1) * rowlen, nnext, g.inf_bits)
            elif reg_t is int32_t and ib != NULL:
                redo = pk_nhwc_irow_i32(rows, rpix, chk, nrows, y, ib + u * g.OW * C, n * g.inbase, g.imul,
                                        g.icmul, g.OW, C, g.sw, g.dw, g.pw, own_w, g.twr,
                                        x + (row + 1) * rowlen, nnext, g.inf_bits)
            elif reg_t is int32_t:
                redo = pk_nhwc_row_i32(rows, chk, nrows, y, g.OW, C, g.sw, g.dw, g.pw, own_w, g.twr,
                                       x + (row + 1) * rowlen, nnext, g.inf_bits)
            elif reg_t is uint16_t:
                redo = pk_nhwc_row_h16(<const int16_t**>rows, chk, nrows, <int16_t*>y, g.OW, C, g.sw, g.dw,
                                       g.pw, own_w, g.twr, <const int16_t*>(x + (row + 1) * rowlen), nnext,
                                       g.inf_bits)
            elif ib != NULL:
                redo = pk_nhwc_irow_f32(rows, rpix, chk, nrows, y, ib + u * g.OW * C, n * g.inbase, g.imul,
                                        g.icmul, g.OW, C, g.sw, g.dw, g.pw, own_w, g.twr,
                                        x + (row + 1) * rowlen, nnext, 0)
            else:
                redo = pk_nhwc_row_f32(rows, chk, nrows, y, g.OW, C, g.sw, g.dw, g.pw, own_w, g.twr,
                                       x + (row + 1) * rowlen, nnext)
        if redo:
            _nhwc_unit(<const reg_t*>j.x, <reg_t*>j.y, ib, C, j.g, u, wpix, j.act, lo, hi)
            continue
        for i in range(nrows):
            clean[(rows[i] - x) // rowlen] = n + 1
        if j.act:
            _clamp_row(y, g.OW * C, lo, hi, j.act, g.inf_bits)
