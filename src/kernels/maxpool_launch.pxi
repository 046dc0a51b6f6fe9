# ===========================================================================
# maxpool_launch.pxi: what the MaxPool launch classes share.
#
# A launch (MaxPool3d in maxpool_fused.pxi, MaxPoolNHWC in maxpool_nhwc.pxi,
# and MaxPoolPlanes, MaxPoolTiles, MaxPoolInterleaved, MaxPoolRows and
# MaxPoolNarrow in their strategies' files)
# is made once per plan by pooling._maxpool_strategies and called for every array: the
# geometry (Geom), the work split and the scratch are fixed at construction,
# so a call only checks its arrays' sizes and runs.  Each launch fills a
# _UnitsJob and hands its body to pk_parallel; the body switches on the
# job's kind (common.pxi) to the loops of its file.
# ===========================================================================

cdef enum:
    KEEP_SCRATCH = 16384    # bytes of scratch a MaxPool launch keeps for its next call (allocating it
                            # costs small calls: docs/tuning.md#call-overhead), besides its threads'
                            # page padding (_padded); larger is freed after each
    SCRATCH_PAGE = 4096     # bytes between two threads' scratch (_padded)


cdef struct Geom:
    Py_ssize_t D, H, W, OD, OH, OW          # one plane of X and of Y
    Py_ssize_t kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw
    Py_ssize_t ow_lo, ow_hi                 # output columns whose taps all lie inside a row
    const Py_ssize_t* tdr                   # valid taps [t0, t1) of each output position, as
    const Py_ssize_t* thr                   # pairs (2*o, 2*o + 1), per axis: precomputed once
    const Py_ssize_t* twr                   # per call plan instead of dividing on every row
    Py_ssize_t brows                        # ring rows per depth tap, a power of two (at least the rows of
                                            # one output row's window, or H)
    bint flat                               # W == OW * sw with interior columns (maxpool_fused.pxi)
    uint16_t inf_bits
    # Indices' encoding (pooling.indices; _Launch._set_index): a winner at position pos of its
    # kernel plane b (NCHW) is  (b % islices) * (D*H*W) * imul + n * inbase + c * icbase + pos * imul,
    # with (n, c) = divmod(b // islices, ichannels); at pixel pix of image n (NHWC) it is
    # n * inbase + pix * imul + c * icmul.
    int64_t imul, icmul, islices, ichannels, inbase, icbase


cdef void _set_geom(Geom* g, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
                    Py_ssize_t OD, Py_ssize_t OH, Py_ssize_t OW, tuple kernel, tuple strides,
                    tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps,
                    uint16_t inf_bits):
    """The geometry both 3-D kernels share; taps is (OD + OH + OW, 2): the valid
    tap range of each output position, axis after axis."""
    g.D, g.H, g.W = D, H, W
    g.OD, g.OH, g.OW = OD, OH, OW
    g.kd, g.kh, g.kw = kernel
    g.sd, g.sh, g.sw = strides
    g.dd, g.dh, g.dw = dilations
    g.pd, g.ph, g.pw = pads_begin
    g.tdr = &taps[0, 0]
    g.thr = g.tdr + 2 * OD
    g.twr = g.thr + 2 * OH
    g.inf_bits = inf_bits



cdef class _Launch:
    """A MaxPool launch, fixed at construction (geometry, element type, work split,
    thread count) so that a call only checks its arrays' sizes and runs: taking
    the geometry, scratch and arrays as arguments on every call cost most of a
    small call's time in the kernel (docs/tuning.md#call-overhead).

    Calling it with x, y (C-contiguous, of exactly the launch's sizes in the
    element type `ctype` names) and indices (int64 of y's size, or None) writes
    y and, in indices, the flat offset into x of each winner (-1 for an empty
    window).  taps: (OD + OH + OW, 2) intp, the valid tap range of each output
    position, axis after axis.  act/lo/hi: fused activation (0 none, bit 1 lower
    bound, bit 2 upper bound), lo and hi in the kernel's type (16-bit floats as bits).
    """
    cdef Geom g
    cdef const Py_ssize_t[:, ::1] taps      # owns the tap ranges g points into
    cdef Py_ssize_t xsize, ysize, itemsize, units, chunk
    cdef int kind, act, n_threads
    cdef double lo, hi
    cdef list spare                         # scratch no call is using
    # Whether a call can report that its output holds a NaN (`__call__`'s nan; _scan_nan)
    cdef readonly bint reports_nan
    # Whether the kernels that can prefetch the next work item's input do (include/pooling_prefetch.h);
    # the builders set it for inputs from memory (pooling._tuning.prefetch_rows, prefetch_nhwc).
    cdef public bint prefetch

    cdef void _setup(self, str ctype, tuple x_dims, tuple y_dims, tuple kernel, tuple strides,
                     tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps, int act,
                     double lo, double hi, uint16_t inf_bits):
        """The part every launch shares; x_dims and y_dims are (D, H, W) and (OD, OH, OW)."""
        self.kind = _KINDS.index(ctype)
        self.itemsize = _ITEMSIZES[self.kind]
        self.taps = taps
        _set_geom(&self.g, x_dims[0], x_dims[1], x_dims[2], y_dims[0], y_dims[1], y_dims[2],
                  kernel, strides, dilations, pads_begin, taps, inf_bits)
        self.act, self.lo, self.hi = act, lo, hi
        self.spare = []
        # No default Indices encoding: a launch that writes Indices sets its own (_set_index); one
        # that forgot is refused on its first call with indices (islices is 0 until then).

    cdef void _set_index(self, tuple index):
        """The Indices' encoding: (imul, icmul, islices, ichannels, inbase, icbase), see Geom."""
        self.g.imul, self.g.icmul, self.g.islices, self.g.ichannels, self.g.inbase, self.g.icbase = index

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        """Bytes of one call's scratch (with positions, or without)."""
        return 0

    def __call__(self, x, y, indices, bint nan=False):
        """Writes y (and indices); with nan, returns whether y holds a NaN, or None where this
        launch does not report it (reports_nan false)."""
        cdef Py_buffer xb, yb, ib
        cdef _Scratch s
        cdef int found = -1
        _acquire(&xb, x, self.xsize, self.itemsize, False, "x")
        try:
            _acquire(&yb, y, self.ysize, self.itemsize, True, "y")
            try:
                ib.buf = NULL
                if indices is not None:
                    if self.g.islices == 0:
                        raise RuntimeError(f"{type(self).__name__}: internal error: no Indices encoding "
                                           "(_set_index) for a call with indices")
                    _acquire(&ib, indices, self.ysize, 8, True, "indices")
                try:
                    s = self._take_scratch(indices is not None)
                    s.scan_nan, s.nan_found = nan and self.reports_nan, 0
                    self._run(<const char*>xb.buf, <char*>yb.buf, <int64_t*>ib.buf, s)
                    if s.scan_nan:
                        found = s.nan_found
                    if s.nbytes <= KEEP_SCRATCH + self.n_threads * SCRATCH_PAGE:
                        self.spare.append(s)
                finally:
                    if ib.buf != NULL:
                        PyBuffer_Release(&ib)
            finally:
                PyBuffer_Release(&yb)
        finally:
            PyBuffer_Release(&xb)
        return None if found < 0 else found != 0

    cdef _Scratch _take_scratch(self, bint with_pos):
        """A set no call is using: sets are taken and given back whole (list pop and
        append are atomic, also without a GIL, so concurrent calls never share one)."""
        cdef _Scratch s = None
        try:
            s = self.spare.pop()
        except IndexError:  # (a test for emptiness first could race with another call)
            pass
        if s is None or (with_pos and not s.with_pos):
            s = _Scratch(self._scratch_bytes(with_pos), with_pos)
        return s

    cdef void _run(self, const char* x, char* y, int64_t* indices, _Scratch s):
        """This launch's work items on s's scratch (each launch class runs its own kernel)."""
        pass



cdef Py_ssize_t _padded(Py_ssize_t n, Py_ssize_t itemsize):
    """Elements per thread for per-thread scratch rows of n elements: a multiple
    of 64 bytes with at least 64 spare, so no two threads write to one cache line,
    and a page more, so that no two threads' scratch share a 4 KB page.  Without
    the line padding the NaN flags of both threads (16 bytes each) shared a line,
    written on every row.  Without the page ROWS_FIRST's row buffers (1-8 KB a
    thread) lay side by side, and a core streaming through its own buffer had the
    hardware prefetcher (which runs ahead within a page) take the next thread's
    lines from the other core: two threads ran 1x192x28x24 slower than one
    (docs/tuning.md#per-thread-scratch-a-page-apart).  Whole pages, each thread's
    on a page boundary, gained the same on ROWS_FIRST and measured no better
    elsewhere."""
    return ((n * itemsize + 64 + 63) // 64 * 64 + SCRATCH_PAGE) // itemsize


cdef int _acquire(Py_buffer* b, object a, Py_ssize_t size, Py_ssize_t itemsize, bint writable,
                  str name) except -1:
    """b: a's C-contiguous buffer, which must hold exactly `size` elements of `itemsize`
    bytes (the launch's shapes; the Python layer chose the dtype)."""
    PyObject_GetBuffer(a, b, PyBUF_C_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
    if b.itemsize != itemsize or b.len != size * itemsize:
        PyBuffer_Release(b)
        raise ValueError(f"MaxPool kernel: {name} must hold {size} elements of {itemsize} bytes, "
                         f"got {b.len} bytes in elements of {b.itemsize}")
    return 0


cdef class _Scratch:
    """One call's scratch: `nbytes` from a cache line on (with_pos: room for positions), and the
    call's NaN report (asked of a launch that reports_nan, and its flag, which the threads set by
    pk_atomic_or)."""
    cdef void* memory
    cdef char* block
    cdef Py_ssize_t nbytes
    cdef bint with_pos
    cdef bint scan_nan
    cdef int nan_found

    def __cinit__(self, Py_ssize_t nbytes, bint with_pos):
        self.nbytes, self.with_pos = nbytes, with_pos
        self.memory = malloc(nbytes + 64)
        if self.memory == NULL:
            raise MemoryError()
        self.block = <char*>self.memory + (-<uintptr_t>self.memory & 63)

    def __dealloc__(self):
        free(self.memory)


cdef struct _UnitsJob:
    # One MaxPool launch call, for pk_parallel's threads: arrays, geometry, the
    # scratch of thread 0 and the stride to the next thread's, activation.
    const char* x                   # NULL when x is empty: every window then is
    char* y
    int64_t* ib
    const Geom* g
    const Geom* fg
    char* hv                        # MaxPool3d: row buffers; MaxPoolNHWC: int32 winners
    uint8_t* nan
    char* m
    int32_t* hp
    Py_ssize_t nblk, rows, xplane, yplane, vs, ns, ms, ps
    Py_ssize_t C                    # MaxPoolNHWC: channels
    bint blocks, holes              # MaxPoolNHWC: channels in registers (NHWC_BLOCKS); windows without taps
    bint half                       # MaxPoolNHWC and MaxPoolRows: 16-bit floats in the register loops
    bint iblocks                    # MaxPoolNHWC: float32 channels in registers with Indices
    Py_ssize_t ibytes               # MaxPoolNHWC: bytes per thread before the exact loop's winners
    bint prefetch                   # prefetch the next work item's input (_Launch.prefetch)
    Py_ssize_t Hp, Wp, size         # MaxPoolPlanes: padded plane, elements per scratch buffer
    bint whole                      # MaxPoolPlanes: one window covers the whole plane
    const Py_ssize_t* in_rows       # MaxPoolRows: each output row's input rows (4 per row);
    Py_ssize_t ld                   # its row buffers' length (rows: how many per thread)
    int nchk                        # and the taps checked for NaN (pooling_rows.h)
    int kind, act
    double lo, hi
    int* nan_found                  # set (pk_atomic_or) where a work item wrote a NaN; NULL: no scan
    Py_ssize_t yunit                # with nan_found: elements of y per work item (_scan_nan)



cdef inline void _start_job(_UnitsJob* j, const char* xb, char* yb, int64_t* ib, _Launch p) noexcept:
    """The part of a call's job every launch fills: arrays, geometry, kind, activation.
    Launches run their work items in this thread or on the pool (pk_parallel);
    items write disjoint outputs and scratch is per thread, so results cannot
    depend on the schedule."""
    j.x = xb if p.xsize else NULL
    j.y, j.ib, j.g = yb, ib, &p.g
    j.kind, j.act, j.lo, j.hi = p.kind, p.act, p.lo, p.hi
    j.prefetch = p.prefetch
    j.nan_found = NULL


cdef void _scan_nan(_UnitsJob* j, Py_ssize_t begin, Py_ssize_t end) noexcept nogil:
    """Reports (j.nan_found) whether work items [begin, end), each j.yunit elements of y from
    begin * j.yunit on, wrote a NaN; called by a launch's body right after it wrote them."""
    cdef Py_ssize_t at = begin * j.yunit, n = (end - begin) * j.yunit
    cdef int bad = 0
    if j.kind == KIND_FLOAT:
        bad = pk_any_nan_f32(<const float*>j.y + at, n)
    elif j.kind == KIND_DOUBLE:
        bad = pk_any_nan_f64(<const double*>j.y + at, n)
    elif j.kind == KIND_UINT16 and j.g.inf_bits != 0:  # 16-bit floats, as their bits
        bad = pk_any_nan_h16(<const uint16_t*>j.y + at, n, j.g.inf_bits)
    if bad:
        pk_atomic_or(j.nan_found, 1)
