# ===========================================================================
# maxpool_rows.pxi: MaxPoolRows, float32 NCHW MaxPool of ranks 1-2 without
# Indices, windows of at most 3x3 with stride 1 or (3- or 2-wide) stride 2
# along W, or 4-wide with stride 4 (strategy ROWS_FIRST).
#
# A work item is a plane.  Each output row's window rows are reduced into one
# padded row, which the output row is then read off in registers
# (include/pooling_rows.h has the loops and why they are exact).  This is the
# shape of most CNN pools (k3 s2 p1 stems, k3 s2 ceil_mode, k3 s1 p1
# branches, k2 s1) on planes of 8 to a few hundred columns, where the
# two-pass kernel's per-row set-up and scalar remainders cost more than the
# compares.  A plane the cheap compare could get wrong (a NaN; a zero result
# beside a -0.0) is redone here tap by tap with the contract's compare.
# ===========================================================================

cdef void _rows_exact(const pool_t* x, pool_t* y, const Geom* g) noexcept nogil:
    """One plane, window by window in tap order with the exact compare (rare planes only; a
    window wholly in the padding, which NARROW's planes may have, is the empty value -inf)."""
    cdef Py_ssize_t oh, ow, th, tw, h0, w0
    cdef pool_t m, v
    cdef bint first
    for oh in range(g.OH):
        h0 = oh * g.sh - g.ph
        for ow in range(g.OW):
            w0 = ow * g.sw - g.pw
            first = True
            m = _empty_value(<pool_t>0, g.inf_bits)
            for th in range(g.thr[2 * oh], g.thr[2 * oh + 1]):
                for tw in range(g.twr[2 * ow], g.twr[2 * ow + 1]):
                    v = x[(h0 + th * g.dh) * g.W + w0 + tw * g.dw]
                    if first or _keep(v, m, g.inf_bits, True):
                        m = v
                    first = False
            y[oh * g.OW + ow] = m


cdef bint _all_taps(const Py_ssize_t* r, Py_ssize_t n) noexcept:
    """Whether each of n tap ranges (pairs) holds a tap."""
    cdef Py_ssize_t o
    for o in range(n):
        if r[2 * o] >= r[2 * o + 1]:
            return False
    return True


cdef class MaxPoolRows(_Launch):
    """float32, 16-bit float and 2- and 4-byte integer NCHW MaxPool of ranks 1-2 without Indices, a
    plane per work item (see the banner): x (planes, 1, H, W) -> y (planes, 1, OH, OW).  The caller
    checks the shapes it serves (pooling._maxpool_strategies.serves); they are checked again here."""
    cdef const Py_ssize_t[:, ::1] rows     # (OH, 4): the input row of each output row's taps
    cdef Py_ssize_t per_thread, planes, ld, R
    cdef int nchk
    cdef bint half                         # 16-bit floats (their keys: pooling_rows.h)

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 const Py_ssize_t[:, ::1] rows not None, int act, double lo, double hi,
                 uint16_t inf_bits, int n_threads, Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        cdef Geom* g = &self.g
        cdef Py_ssize_t o, t
        if rows.shape[0] != g.OH or rows.shape[1] != 4:
            raise ValueError(f"MaxPoolRows: rows must be ({g.OH}, 4), got ({rows.shape[0]}, {rows.shape[1]})")
        for o in range(g.OH):
            for t in range(4):
                if not 0 <= rows[o, t] < g.H:
                    raise ValueError(f"MaxPoolRows: rows[{o}, {t}] = {rows[o, t]} is not a row of "
                                     f"the input (H = {g.H})")
        self.rows = rows
        self.nchk = g.kh if g.dh > 1 else min(g.sh, g.kh)
        self.half = ctype == "uint16_t" and inf_bits != 0
        cdef bint short = self.half or ctype == "int16_t"  # 2-byte keys: twice float32's lanes a vector
        cdef Py_ssize_t lanes = PK_ROWS_H16_MIN_LANES if short else PK_ROWS_MAX_LANES  # the shortest rows
        if ((ctype not in ("float", "int16_t", "int32_t") and not self.half) or g.D != 1 or g.OD != 1 or g.kh < 1 or g.kw < 1
                or not ((g.kh <= 3 and g.kw <= 3 and (g.sw == 1 or (g.sw == 2 and g.kw >= 2 and g.dw == 1)))
                        or (g.kh <= 4 and g.kw == 4 and g.sw == 4 and g.dw == 1))
                or g.W < lanes or g.OW < lanes
                or not _all_taps(g.thr, g.OH) or not _all_taps(g.twr, g.OW)):
            raise ValueError(f"MaxPoolRows: float32, 16-bit float or int16/int32 planes with windows it serves, got "
                             f"{ctype} (inf_bits {inf_bits:#x}) input {x_shape[1:]}, output {y_shape[1:]}, "
                             f"kernel {kernel}, strides {strides}, dilations {dilations}")
        self.planes = x_shape[0]
        # Row buffers: R of them (output rows pass 1 runs ahead of pass 2, pooling_rows.h),
        # about 8 KB in all, each a whole number of cache lines.
        cdef Py_ssize_t line = 64 // self.itemsize
        cdef Py_ssize_t spare = PK_ROWS_H16_MAX_LANES if short else PK_ROWS_MAX_LANES  # the widest vectors
        self.ld = (pk_rows_len(g.W, g.OW, g.kw, g.sw, g.dw, g.pw, spare) + line - 1) // line * line
        self.R = max(1, min(8, 8192 // (self.ld * self.itemsize)))
        self.per_thread = _padded(self.R * self.ld, self.itemsize)
        self.units = self.planes
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
        j.ld, j.rows, j.nchk, j.in_rows = self.ld, self.R, self.nchk, &self.rows[0, 0]
        j.xplane, j.yplane = self.g.H * self.g.W, self.g.OH * self.g.OW
        j.half = self.half
        with nogil:
            pk_parallel(_rows_body, &j, self.units, self.chunk, self.n_threads)


cdef void _rows_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for MaxPoolRows: planes [begin, end) on thread tid."""
    cdef int kind = (<_UnitsJob*>job).kind
    if (<_UnitsJob*>job).half:
        _rows_planes(<uint16_t*>NULL, <_UnitsJob*>job, begin, end, tid)
    elif kind == KIND_INT16:
        _rows_planes(<int16_t*>NULL, <_UnitsJob*>job, begin, end, tid)
    elif kind == KIND_INT32:
        _rows_planes(<int32_t*>NULL, <_UnitsJob*>job, begin, end, tid)
    else:
        _rows_planes(<float*>NULL, <_UnitsJob*>job, begin, end, tid)


cdef void _rows_planes(reg_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                       int tid) noexcept nogil:
    """Planes [begin, end) on thread tid, float32, 16-bit floats' bits or 2- and 4-byte integers (reg_t):
    each by the passes (pk_rows_f32, pk_rows_h16 and pk_rows_h16n on keys, pk_rows_i16, pk_rows_i16n and
    pk_rows_i32), or by the exact loop where they report a plane that needs it (never an integer one)."""
    cdef Geom gc = j.g[0]  # a copy the compiler can keep in registers
    cdef const Geom* g = &gc
    cdef reg_t* V = <reg_t*>j.hv + tid * j.vs
    cdef const reg_t* x
    cdef reg_t* y
    cdef const reg_t* nxt
    cdef Py_ssize_t p, i
    cdef bint redo
    cdef reg_t lo = <reg_t>j.lo, hi = <reg_t>j.hi
    if reg_t is float:
        pk_rows_pad(V, j.ld, j.rows, g.W, g.pw)
    elif reg_t is int32_t:
        pk_rows_pad_i32(V, j.ld, j.rows, g.W, g.pw)
    else:
        pk_rows_pad_h16(<int16_t*>V, j.ld, j.rows, g.W, g.pw)
    for p in range(begin, end):
        x = <const reg_t*>j.x + p * j.xplane
        y = <reg_t*>j.y + p * j.yplane
        nxt = x + j.xplane if j.prefetch and p + 1 < end else NULL
        if reg_t is float:
            redo = pk_rows_f32(x, y, g.H, g.W, g.OH, g.OW, j.in_rows, g.kh, j.nchk, g.kw, g.sw, g.dw, g.pw,
                               V, j.ld, j.rows, nxt, 0)
        elif reg_t is int32_t:
            redo = pk_rows_i32(x, y, g.H, g.W, g.OH, g.OW, j.in_rows, g.kh, j.nchk, g.kw, g.sw, g.dw, g.pw,
                               V, j.ld, j.rows, nxt, g.inf_bits)
        elif reg_t is int16_t:
            if g.W >= PK_RH_L and g.OW >= PK_RH_L:
                redo = pk_rows_i16(x, y, g.H, g.W, g.OH, g.OW, j.in_rows, g.kh, j.nchk, g.kw, g.sw, g.dw, g.pw,
                                   V, j.ld, j.rows, nxt, g.inf_bits)
            else:  # rows under the build's int16 lanes: 16-byte vectors
                redo = pk_rows_i16n(x, y, g.H, g.W, g.OH, g.OW, j.in_rows, g.kh, j.nchk, g.kw, g.sw, g.dw, g.pw,
                                    V, j.ld, j.rows, nxt, g.inf_bits)
        elif g.W >= PK_RH_L and g.OW >= PK_RH_L:
            redo = pk_rows_h16(<const int16_t*>x, <int16_t*>y, g.H, g.W, g.OH, g.OW, j.in_rows, g.kh, j.nchk,
                               g.kw, g.sw, g.dw, g.pw, <int16_t*>V, j.ld, j.rows, <const int16_t*>nxt,
                               g.inf_bits)
        else:  # rows under the build's int16 lanes: 16-byte vectors
            redo = pk_rows_h16n(<const int16_t*>x, <int16_t*>y, g.H, g.W, g.OH, g.OW, j.in_rows, g.kh, j.nchk,
                                g.kw, g.sw, g.dw, g.pw, <int16_t*>V, j.ld, j.rows, <const int16_t*>nxt,
                                g.inf_bits)
        if redo:
            _rows_exact(x, y, g)
        if j.act:
            _clamp_row(y, j.yplane, lo, hi, j.act, g.inf_bits)
