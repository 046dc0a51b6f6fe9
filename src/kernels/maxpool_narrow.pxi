# ===========================================================================
# maxpool_narrow.pxi: MaxPoolNarrow, float32 and 16-bit float NCHW MaxPool of
# ranks 1-2 without Indices on planes whose input and output rows fit three
# vectors (float32: 24 values with AVX2, 48 in the AVX-512 build, 12 with SSE2;
# 16-bit floats' int16 keys: 48, and 24 with SSE2) and W stride 1 (strategy NARROW).
#
# A work item is a plane: each input row reduced along W in a vector per strip
# of columns, each output row the maximum of its window's reduced rows, in registers
# (include/pooling_narrow.h has the loops and why they are exact).  The 7x7
# planes of GoogLeNet's and Inception's last branch pools (1x832x7x7 k3 s1
# p1) are this shape; there the other kernels' set-up per plane and per row,
# or INTERLEAVED's transposes, cost more than the compares.  A plane holding
# a NaN (or, 16-bit floats, -0.0) is redone window by window with the exact
# compare (_rows_exact).
# ===========================================================================

cdef class MaxPoolNarrow(_Launch):
    """float32, 16-bit float and 2- and 4-byte integer NCHW MaxPool without Indices on narrow planes, a plane per work
    item (see the banner): x (planes, 1, H, W) -> y (planes, 1, OH, OW).  The caller checks the
    shapes it serves (pooling._maxpool_strategies.serves); they are checked again here."""
    cdef Py_ssize_t planes, margin, per_thread, lanes
    cdef bint half                         # 16-bit floats (their keys: pooling_narrow.h)

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 int act, double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        cdef Geom* g = &self.g
        self.planes = x_shape[0]
        self.half = ctype == "uint16_t" and inf_bits != 0
        cdef bint short = self.half or ctype == "int16_t"   # 2-byte lanes
        cdef Py_ssize_t width = (PK_NARROW_H16_WIDTH if short else PK_NARROW_I32_WIDTH if ctype == "int32_t"
                                 else PK_NARROW_WIDTH)
        self.lanes = PK_NARROW_H16_L if short else PK_NARROW_I32_L if ctype == "int32_t" else PK_NARROW_L
        if ((ctype not in ("float", "int16_t", "int32_t") and not self.half) or g.D != 1 or g.OD != 1 or g.sw != 1 or g.H < 1
                or g.OH < 1 or not 1 <= g.W <= width or not 1 <= g.OW <= width
                or not 1 <= g.kw <= PK_NARROW_MAX_K or g.pw < 0 or g.ph < 0):
            raise ValueError(f"MaxPoolNarrow: float32, 16-bit float or int16/int32 planes with rows of at most {width} "
                             f"values in and out and a W stride of 1, got {ctype} input {x_shape[1:]}, "
                             f"output {y_shape[1:]}, kernel {kernel}, strides {strides}")
        self.margin = (pk_narrow_margin_h16(g.kw, g.dw) if self.half else pk_narrow_margin_i16(g.kw, g.dw)
                       if ctype == "int16_t" else pk_narrow_margin_i32(g.kw, g.dw) if ctype == "int32_t"
                       else pk_narrow_margin_f32(g.kw, g.dw)) + g.pw
        # per thread: the reduced rows (H vectors) and a copy of a plane with margins (16-bit floats: its keys)
        self.per_thread = _padded(g.H * self.lanes + g.H * g.W + 2 * self.margin, self.itemsize)
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
        j.ld = self.margin
        j.nblk = self.planes
        j.xplane, j.yplane = self.g.H * self.g.W, self.g.OH * self.g.OW
        j.half = self.half
        with nogil:
            pk_parallel(_narrow_body, &j, self.units, self.chunk, self.n_threads)


cdef void _narrow_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for MaxPoolNarrow: planes [begin, end) on thread tid."""
    cdef int kind = (<_UnitsJob*>job).kind
    if (<_UnitsJob*>job).half:
        _narrow_planes(<uint16_t*>NULL, <_UnitsJob*>job, begin, end, tid)
    elif kind == KIND_INT16:
        _narrow_planes(<int16_t*>NULL, <_UnitsJob*>job, begin, end, tid)
    elif kind == KIND_INT32:
        _narrow_planes(<int32_t*>NULL, <_UnitsJob*>job, begin, end, tid)
    else:
        _narrow_planes(<float*>NULL, <_UnitsJob*>job, begin, end, tid)


cdef inline Py_ssize_t _narrow_run(const reg_t* x, reg_t* y, Py_ssize_t n, const Geom* g,
                                   reg_t* hb, reg_t* kb) noexcept nogil:
    """pk_narrow_f32, _h16, _i16 or _i32 on planes [0, n) of x: the first plane that holds a value
    the cheap compare gets wrong, or n.  (kb: 16-bit floats' scratch for a plane's keys.)"""
    if reg_t is float:
        return pk_narrow_f32(x, y, n, g.H, g.W, g.OH, g.OW, g.kh, g.thr, g.sh, g.dh, g.ph, g.kw, g.dw, g.pw,
                             hb, NULL, 0)
    elif reg_t is int16_t:
        return pk_narrow_i16(x, y, n, g.H, g.W, g.OH, g.OW, g.kh, g.thr, g.sh, g.dh, g.ph, g.kw, g.dw, g.pw,
                             hb, NULL, g.inf_bits)
    elif reg_t is int32_t:
        return pk_narrow_i32(x, y, n, g.H, g.W, g.OH, g.OW, g.kh, g.thr, g.sh, g.dh, g.ph, g.kw, g.dw, g.pw,
                             hb, NULL, g.inf_bits)
    else:
        return pk_narrow_h16(<const int16_t*>x, <int16_t*>y, n, g.H, g.W, g.OH, g.OW, g.kh, g.thr, g.sh, g.dh,
                             g.ph, g.kw, g.dw, g.pw, <int16_t*>hb, <int16_t*>kb, g.inf_bits)


cdef inline Py_ssize_t _narrow_tail(const reg_t* x, Py_ssize_t n, const Geom* g) noexcept nogil:
    if reg_t is float:
        return pk_narrow_tail_f32(x, n, g.H, g.W, g.OW, 0)
    return n  # (no integer is odd; 16-bit floats' keys are made, and checked, from whole planes)


cdef void _narrow_planes(reg_t* kind, const _UnitsJob* j, Py_ssize_t begin, Py_ssize_t end,
                         int tid) noexcept nogil:
    """Planes [begin, end) on thread tid, float32, 16-bit floats' bits or the integers (reg_t).  Planes
    within j.ld values of the array's ends are read from a copy with margins of j.ld values (16-bit
    floats: every plane's keys go there, so none is read in place); a plane holding a value the cheap
    compare gets wrong is redone with the exact compare."""
    cdef Geom gc = j.g[0]
    cdef const Geom* g = &gc
    cdef Py_ssize_t lanes = (PK_NARROW_H16_L if reg_t is uint16_t or reg_t is int16_t else
                             PK_NARROW_I32_L if reg_t is int32_t else PK_NARROW_L)
    cdef reg_t* hb = <reg_t*>j.hv + tid * j.vs
    cdef reg_t* copy = hb + g.H * lanes
    cdef const reg_t* x
    cdef reg_t* y
    cdef Py_ssize_t p = begin, q, done, i
    cdef Py_ssize_t c = (j.ld + j.xplane - 1) // j.xplane   # planes near each end
    cdef reg_t lo = <reg_t>j.lo, hi = <reg_t>j.hi
    if reg_t is uint16_t:
        memset(copy, 0, (j.xplane + 2 * j.ld) * sizeof(reg_t))
    while p < end:
        x = <const reg_t*>j.x + p * j.xplane
        y = <reg_t*>j.y + p * j.yplane
        # (planes [p, q), up to the first whose columns past the strips hold an odd value)
        if reg_t is uint16_t:
            q = end
            done = _narrow_run(x, y, q - p, g, hb, copy + j.ld)
        elif p < c or p >= j.nblk - c:
            memset(copy, 0, (j.xplane + 2 * j.ld) * sizeof(reg_t))
            memcpy(copy + j.ld, x, j.xplane * sizeof(reg_t))
            q = p + 1
            done = _narrow_run(copy + j.ld, y, _narrow_tail(x, 1, g), g, hb, NULL)
        else:
            q = min(end, j.nblk - c)
            done = _narrow_run(x, y, _narrow_tail(x, q - p, g), g, hb, NULL)
        if p + done < q:  # plane p + done holds an odd value
            _rows_exact(x + done * j.xplane, y + done * j.yplane, g)
            q = p + done + 1
        p = q
    if j.act:
        _clamp_row(<reg_t*>j.y + begin * j.yplane, (end - begin) * j.yplane, lo, hi, j.act, g.inf_bits)
