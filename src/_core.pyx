"""Kernels of pooling-kernels.

Every function here receives arrays that the Python layer has validated,
allocated and laid out (C-contiguous, native byte order) plus plain integer
geometry; MaxPool's launches take the geometry once and check each call's
arrays against it.  Kernels allocate nothing but a launch's scratch, never
raise, release the GIL and split their work with ``pk_parallel`` (include/pooling_pool.h:
a work-claiming pool; OpenMP's settings still give the default thread count).  The rules
they implement are in SPEC.md; the Python layer (``src/pooling``) decides every
shape, pad and dtype question.
"""
cimport cython
from libc.math cimport INFINITY
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memmove
from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

cdef extern from "pooling_omp.h":
    int omp_get_max_threads() noexcept nogil
    int PK_OPENMP

cdef extern from "pooling_half.h":
    bint PK_UNORDERED(double a, double b) noexcept nogil
    uint16_t pk_half_key(uint16_t h, uint16_t inf_bits) noexcept nogil
    bint pk_half_isnan(uint16_t h, uint16_t inf_bits) noexcept nogil
    int16_t pk_half_fast_key(uint16_t h) noexcept nogil
    bint pk_f32_tie_odd(float v) noexcept nogil
    bint pk_f64_tie_odd(double v) noexcept nogil

cdef extern from "pooling_pool.h":
    ctypedef void (*pk_body)(void* ctx, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil
    void pk_parallel(pk_body body, void* ctx, Py_ssize_t items, Py_ssize_t chunk,
                     int n_threads) noexcept nogil
    void pk_atomic_or(int* flag, int value) noexcept nogil
    void pk_stats(int64_t* beside_owner, int64_t* moved) noexcept nogil
    int PK_POOL

cdef extern from "pooling_config.h":
    const char* PK_COMPILER
    const char* PK_SIMD_BASELINE
    int pk_cpu_has_avx2() noexcept nogil


# ---------------------------------------------------------------------------
# Element types.  float16 and bfloat16 both arrive as uint16 bit patterns; the
# Python layer passes the +inf pattern of the format (``inf_bits``), which is
# all that comparing them needs (pooling_half.h).
# ---------------------------------------------------------------------------

cdef enum:
    KEEP_SCRATCH = 16384    # bytes of scratch a MaxPool launch keeps for its next call (allocating
                            # it was a tenth of a 1x1x8x8 call); larger scratch is freed after each


ctypedef fused pool_t:
    float
    double
    int8_t
    uint8_t
    uint16_t


def openmp_enabled():
    """True when the extension was compiled with OpenMP."""
    return bool(PK_OPENMP)


def max_threads():
    """OpenMP's maximum thread count now (OMP_NUM_THREADS, threadpoolctl)."""
    return omp_get_max_threads()


def cpu_supports_avx2():
    """True when this CPU can run the AVX2 build of these kernels (pooling._core_avx2)."""
    return bool(pk_cpu_has_avx2())


def pool_stats():
    """How often, since the process started, a pool worker woke on its caller's CPU, and how often
    it then moved to another CPU (the rest left the call to the caller; docs/threads.md)."""
    cdef int64_t beside, moved
    pk_stats(&beside, &moved)
    return {"beside_caller": beside, "moved": moved}


def build_info():
    """Compiler, SIMD baseline and thread runtime the extension was built with."""
    return {"compiler": PK_COMPILER.decode(), "simd_baseline": PK_SIMD_BASELINE.decode(),
            "threads": "pool" if PK_POOL else ("openmp" if PK_OPENMP else "none")}


cdef tuple _TRUE_KEY = ("bool", True)
cdef tuple _FALSE_KEY = ("bool", False)


def attribute_keys(tuple values):
    """Cache keys for a call's shape and attribute values, or None (``pooling._attrs``).

    A value of exact type None, int or str, or a tuple of exact ints, is its
    own key, and a list of exact ints that tuple; a bool is ("bool", v), so that
    True does not share 1's cached plan.  Any other value makes the answer None,
    and the caller keys it in Python (``hashable``).  Here because a call
    passes a dozen values, and checking their types in Python cost 2 us of a
    MaxPool call.
    """
    cdef Py_ssize_t i, n = len(values)
    cdef tuple keys = PyTuple_New(n)
    for i in range(n):
        value = values[i]
        kind = type(value)
        if value is None or kind is int or kind is str:
            key = value
        elif kind is bool:
            key = _TRUE_KEY if value else _FALSE_KEY
        elif kind is tuple or kind is list:
            for item in value:
                if type(item) is not int:
                    return None
            key = value if kind is tuple else tuple(value)
        else:
            return None
        Py_INCREF(key)  # (SET_ITEM steals a reference)
        PyTuple_SET_ITEM(keys, i, key)
    return keys


cdef inline bint _gt(pool_t v, pool_t m, uint16_t inf_bits) noexcept nogil:
    """True when v must replace the running maximum m (SPEC 1.4).

    Strictly greater, so the first maximum wins ties (-0.0 ties +0.0).  NaN is
    above every number and a NaN already held is never replaced.
    """
    if pool_t is float or pool_t is double:
        return (not (v <= m)) & (m == m)
    elif pool_t is uint16_t:
        return pk_half_key(v, inf_bits) > pk_half_key(m, inf_bits)
    else:
        return v > m


cdef inline bint _isnan(pool_t v, uint16_t inf_bits) noexcept nogil:
    if pool_t is float or pool_t is double:
        return v != v
    elif pool_t is uint16_t:
        return pk_half_isnan(v, inf_bits)
    else:
        return False


cdef inline pool_t _empty_value(pool_t like, uint16_t inf_bits) noexcept nogil:
    """Y of a window with no valid tap: -inf, or the integer type's minimum."""
    if pool_t is float or pool_t is double:
        return -INFINITY
    elif pool_t is uint16_t:
        return 0x8000 | inf_bits
    elif pool_t is int8_t:
        return -128
    else:
        return 0


cdef inline pool_t _clamp(pool_t y, pool_t lo, pool_t hi, int mode, uint16_t inf_bits) noexcept nogil:
    """Fused activation, min(max(y, lo), hi): mode bit 1 applies lo, bit 2 hi; NaN stays NaN."""
    if _isnan(y, inf_bits):
        return y
    if (mode & 1) and _gt(lo, y, inf_bits):
        y = lo
    if (mode & 2) and _gt(y, hi, inf_bits):
        y = hi
    return y


cdef inline void _taps(Py_ssize_t base, Py_ssize_t dil, Py_ssize_t k, Py_ssize_t size,
                       Py_ssize_t* t0, Py_ssize_t* t1) noexcept nogil:
    """The taps t in [t0, t1) of a window starting at `base` with base + t*dil in [0, size).

    Validity is an interval of t because positions grow with t; t0 >= t1 means
    the window is empty (it lies wholly in the padding or between dilated taps).
    """
    t0[0] = 0 if base >= 0 else (-base + dil - 1) // dil
    if base >= size:
        t1[0] = 0
    else:
        t1[0] = min(k, (size - 1 - base) // dil + 1)


# ---------------------------------------------------------------------------
# MaxPool, ranks 1-3 (promoted to 3-D with singleton axes by the caller).
#
# Two passes, innermost axis first, over chunks of output rows:
#   1. horizontal: every input row the chunk needs (of each depth slice it
#      reads) is reduced along W into a row buffer: hv[ow] = the maximum over
#      output column ow's taps (16-bit floats as their order key, _ring);
#   2. vertical: for each output row, the buffer rows of its window are
#      combined in tap order straight into Y.
# Reducing the innermost axis first and the outer ones after, each with
# "strictly greater replaces", picks exactly the first maximum in
# lexicographic tap order, which is SPEC 1.4's tie rule.  Indices are carried
# through both passes (never a per-window rescan).
#
# When W == OW * sw (the common "same" and "halving" shapes) a block of rows
# is one long row: column ow of row r is position r*OW + ow of the block, and
# its taps are the same offsets from the block's start.  Pass 1 then runs as
# one long loop over the block, and only the border columns (whose windows
# would read a neighbouring row) are redone row by row.  On narrow images
# per-row loops of 56 outputs spent most of their time in loop set-up and
# scalar remainders (8x64x112x112 k3 s2, one thread: uint8 1.77 -> 0.89 ms,
# float16 4.26 -> 1.97 ms).  Reduced rows live in a ring of g.brows rows per
# depth tap (slot h & (brows - 1); a power of two, since a division per row
# measured 12% of the time), filled a chunk of output rows at a time, so each
# input row is reduced once per work item and the chunk is still in L1 when
# pass 2 reads it.
# ---------------------------------------------------------------------------

cdef struct Geom:
    Py_ssize_t D, H, W, OD, OH, OW          # one plane of X and of Y
    Py_ssize_t kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw
    Py_ssize_t ow_lo, ow_hi                 # output columns whose taps all lie inside a row
    const Py_ssize_t* tdr                   # valid taps [t0, t1) of each output position, as
    const Py_ssize_t* thr                   # pairs (2*o, 2*o + 1), per axis: precomputed once
    const Py_ssize_t* twr                   # per call plan instead of dividing on every row
    Py_ssize_t brows                        # ring rows per depth tap, a power of two (at least the rows of
                                            # one output row's window, or H)
    bint flat                               # W == OW * sw with interior columns: see above
    uint16_t inf_bits


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


cdef inline bint _keep(pool_t v, pool_t m, uint16_t inf_bits, bint exact) noexcept nogil:
    """v replaces m.  exact: SPEC's rule (_gt).  Otherwise a cheaper compare that
    agrees with it when neither is _odd(): for float and double plain v > m
    (maxps: wrong only when a new NaN arrives), for 16-bit floats the fast key
    (wrong only for NaN and -0.0)."""
    if (pool_t is float or pool_t is double) and not exact:
        return v > m
    if pool_t is uint16_t and not exact:
        return pk_half_fast_key(v) > pk_half_fast_key(m)
    return _gt(v, m, inf_bits)


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


cdef inline bint _odd(pool_t v, uint16_t inf_bits) noexcept nogil:
    """Whether v is what the cheap compare of _keep gets wrong: a NaN (float,
    double), a NaN or -0.0 (16-bit floats).  Integers never are."""
    if pool_t is uint16_t:
        return _isnan(v, inf_bits) | (v == 0x8000)
    return _isnan(v, inf_bits)


cdef inline bint _odd2(pool_t a, pool_t b, uint16_t inf_bits) noexcept nogil:
    """_odd(a) or _odd(b); for float and double one unordered compare."""
    if pool_t is float or pool_t is double:
        return PK_UNORDERED(a, b)
    else:
        return _odd(a, inf_bits) | _odd(b, inf_bits)


cdef inline bint _special(const pool_t* xr, Py_ssize_t n, uint16_t inf_bits) noexcept nogil:
    """Whether n values hold an _odd() one (one unordered compare tests two
    float or double values)."""
    cdef Py_ssize_t i, half = n // 2
    cdef bint special = False
    cdef uint16_t top = 0, low = 0xffff
    if pool_t is float or pool_t is double:
        for i in range(half):
            special |= PK_UNORDERED(xr[i], xr[i + half])
        if n % 2:
            special |= xr[n - 1] != xr[n - 1]
    elif pool_t is uint16_t:
        # The largest magnitude (above +inf's: a NaN), and the smallest value with
        # the sign bit flipped (0 only for -0.0): two 16-bit reductions (a flag per
        # value widened the lanes to 32 bits: 2x slower).
        for i in range(n):
            top = max(top, <uint16_t>(xr[i] & 0x7fff))
            low = min(low, <uint16_t>(xr[i] ^ 0x8000))
        special = (top > inf_bits) | (low == 0)
    return special


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
    for ow in range(lo, hi):
        v = src[ow * sw]
        if not exact and pool_t is not uint16_t:
            odd |= _odd(v, g.inf_bits)
        hv[ow] = v
    if hp == NULL:
        for t in range(1, g.kw):
            src = src + g.dw
            for ow in range(lo, hi):
                v = src[ow * sw]
                m = hv[ow]
                if not exact and pool_t is not uint16_t:
                    odd |= _odd(v, g.inf_bits)
                hv[ow] = v if _keep(v, m, g.inf_bits, exact) else m
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
                    odd |= _odd(v, g.inf_bits)
                mask = -<int32_t>_keep(v, m, g.inf_bits, exact)
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
    assembles each vector from scalar loads (3x the work).  Checking the taps
    here, in registers, costs little; a separate pass over the rows measured
    0.5 ms of 2 on 8x64x112x112 float32 (a pass that only loads cannot
    overlap memory with work).
    """
    cdef Py_ssize_t ow
    cdef const pool_t* src = xr - g.pw
    cdef pool_t a, b, c, m
    cdef bint odd = False
    cdef uint16_t top = 0, low = 0xffff
    if hp != NULL:
        return _hrow_short_pos(xr, hv, hp, lo, hi, pbase, g, sw, d1, d2)
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
            odd |= _odd2(a, b, g.inf_bits) | _odd(c, g.inf_bits)
            m = b if _keep(b, a, g.inf_bits, False) else a
            hv[ow] = c if _keep(c, m, g.inf_bits, False) else m
    if pool_t is uint16_t:
        # The values after the last column's first sw: its taps up to d2.
        odd = (top > g.inf_bits) | (low == 0)
        if hi > lo:
            odd |= _special(src + hi * sw, d2 - sw + 1, g.inf_bits)
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
    for ow in range(lo, hi):
        a = src[ow * sw]
        b = src[ow * sw + d1]
        c = src[ow * sw + d2]
        if pool_t is uint16_t:
            a, b, c = _ring(a), _ring(b), _ring(c)  # select among keys (_ring)
        else:
            odd |= _odd2(a, b, g.inf_bits) | _odd(c, g.inf_bits)
        col = <int32_t>(ow * sw + first)
        mask = -<int32_t>_keep_ring(b, a, g.inf_bits, False)
        m = b if mask else a
        col = (col & ~mask) | (<int32_t>(ow * sw + first + d1) & mask)
        mask = -<int32_t>_keep_ring(c, m, g.inf_bits, False)
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
    the literal-stride ones (3x slower)."""
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
    in _special: 8x64x112x112 float16 1.27 -> 1.11 ms).  The other 16-bit loops
    are checked after, while the taps are in cache (a check in their body made
    them 2x slower and stopped gcc inlining them)."""
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
    column over the rows, so the tap range is looked up once: per row and
    column it measured a quarter of 56x56 planes' time."""
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
    redone with SPEC's exact compare.  A flat geometry first takes all rows as
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
    if g.flat and not redo:
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

    (With Indices the row-at-a-time _vcombine measured twice as fast: the
    fused loop's six-way selects do not vectorise.)
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
    for ow in range(OW):
        a = _ring(r0[ow])
        b = _ring(r1[ow])
        c = _ring(r2[ow])
        m = b if _keep(b, a, inf_bits, exact) else a
        yrow[ow] = c if _keep(c, m, inf_bits, exact) else m


cdef void _pool_rows(const pool_t* xp, pool_t* yp, int64_t* ip, int64_t xoff, const Geom* g,
                     Py_ssize_t od, Py_ssize_t oh0, Py_ssize_t oh1,
                     pool_t* hval, int32_t* hpos, uint8_t* nan,
                     int act, pool_t lo, pool_t hi) noexcept nogil:
    """Output rows [oh0, oh1) of depth slice od of one plane.

    xp, yp, ip: the plane in X, Y and Indices (ip NULL without Indices); xoff is
    the plane's flat offset in X.  hval/hpos/nan: this thread's row buffer,
    g.brows rows per depth tap (hpos NULL without Indices; after the buffer it
    holds the running winner's position and depth, 2 * OW int32).
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
                    d = dbase + td0 * g.dd
                    for ow in range(OW):
                        if wdep != NULL:
                            d = wdep[ow]
                        irow[ow] = (xoff + (<int64_t>d * g.H + hu) * W + wpos[ow]
                                    if wpos[ow] >= 0 else -1)
            if act:
                for ow in range(OW):
                    yrow[ow] = _clamp(yrow[ow], lo, hi, act, g.inf_bits)
        c0 = c1


cdef bint _depth_first(const pool_t* xp, pool_t* m, const Geom* g, Py_ssize_t od) noexcept nogil:
    """m = the elementwise maximum of the depth slices output depth od reads
    (one H x W slice), for pooling it in 2-D after: half the 2-D work of the
    slice-by-slice order on stride-2 depths.  Reducing depth first breaks
    SPEC's tie order, which only shows when equal values have different bits:
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


cdef class _Launch:
    """A MaxPool launch, fixed at construction (geometry, element type, work split,
    thread count) so that a call only checks its arrays' sizes and runs: taking
    the geometry, scratch and arrays as arguments on every call cost 1.9 of a
    1x1x8x8 call's 2.2 us in the kernel.

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

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        """Bytes of one call's scratch (with positions, or without)."""
        return 0

    def __call__(self, x, y, indices):
        cdef Py_buffer xb, yb, ib
        cdef _Scratch s
        _acquire(&xb, x, self.xsize, self.itemsize, False, "x")
        try:
            _acquire(&yb, y, self.ysize, self.itemsize, True, "y")
            try:
                ib.buf = NULL
                if indices is not None:
                    _acquire(&ib, indices, self.ysize, 8, True, "indices")
                try:
                    s = self._take_scratch(indices is not None)
                    self._run(<const char*>xb.buf, <char*>yb.buf, <int64_t*>ib.buf, s)
                    if s.nbytes <= KEEP_SCRATCH:
                        self.spare.append(s)
                finally:
                    if ib.buf != NULL:
                        PyBuffer_Release(&ib)
            finally:
                PyBuffer_Release(&yb)
        finally:
            PyBuffer_Release(&xb)

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
        """The kernel for this launch's element type."""
        _launch_kernel(x, y, indices, self, s)


# The element types of the launches, by the C name the Python layer uses.
_KINDS = ("float", "double", "int8_t", "uint8_t", "uint16_t")
_ITEMSIZES = (4, 8, 1, 1, 2)


cdef class MaxPool3d(_Launch):
    """NCHW MaxPool over planes: x (planes, D, H, W) -> y (planes, OD, OH, OW); see _Launch.

    brows: ring rows per depth tap, a power of two, at least min(H, (kh - 1) * dh
    + 1); brows * W and D must stay below 2**31 (positions are int32).
    rows_per_unit: output rows per work item (the parallel split is over planes x
    depth x blocks of rows, so a few large planes still use every core).
    depth_first: reduce depth first (_depth_first) where the data allows; only
    without indices and with rows_per_unit == OH.
    chunk: the pool's smallest claim, in work items (pooling._threads.chunk_size;
    include/pooling_pool.h).
    """
    cdef Geom flat_g
    cdef Py_ssize_t one_tap[2]
    cdef Py_ssize_t nblk, rows_per_unit, xplane, yplane
    cdef Py_ssize_t vscratch, pscratch, nscratch, mscratch  # per-thread scratch elements

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 Py_ssize_t brows, Py_ssize_t rows_per_unit, bint depth_first, int act,
                 double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:], y_shape[1:], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
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


cdef class MaxPoolNHWC(_Launch):
    """Channels-last MaxPool: x (N, D, H, W, C) -> y (N, OD, OH, OW, C); see _Launch.
    Indices are flat offsets into x's own NHWC memory (pixels per image must be
    fewer than 2**31).  Work items are output rows; `chunk` is the pool's smallest claim."""
    cdef Py_ssize_t C, wscratch             # channels; int32 winners per thread

    def __init__(self, str ctype, tuple x_shape, tuple y_shape, tuple kernel, tuple strides,
                 tuple dilations, tuple pads_begin, const Py_ssize_t[:, ::1] taps not None,
                 int act, double lo, double hi, uint16_t inf_bits, int n_threads, Py_ssize_t chunk):
        self._setup(ctype, x_shape[1:4], y_shape[1:4], kernel, strides, dilations, pads_begin,
                    taps, act, lo, hi, inf_bits)
        cdef Py_ssize_t N = x_shape[0]
        self.C = x_shape[4]
        self.wscratch = _padded(self.C, 4)
        self.units = N * self.g.OD * self.g.OH if self.g.OW * self.C else 0
        self.xsize = N * self.g.D * self.g.H * self.g.W * self.C
        self.ysize = N * self.g.OD * self.g.OH * self.g.OW * self.C
        self.n_threads = max(1, min(n_threads, self.units))
        self.chunk = max(1, chunk)

    cdef Py_ssize_t _scratch_bytes(self, bint with_pos):
        # The winners' pixels per thread.
        return self.n_threads * self.wscratch * 4 if with_pos else 0


cdef Py_ssize_t _padded(Py_ssize_t n, Py_ssize_t itemsize):
    """Elements per thread for per-thread scratch rows of n elements: a multiple
    of 64 bytes with at least 64 spare, so no two threads write to one cache line.
    Without the padding the NaN flags of both threads (16 bytes each) shared a
    line, written on every row."""
    return (n * itemsize + 64 + 63) // 64 * 64 // itemsize


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
    """One call's scratch: `nbytes` from a cache line on (with_pos: room for positions)."""
    cdef void* memory
    cdef char* block
    cdef Py_ssize_t nbytes
    cdef bint with_pos

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
    int kind, act
    double lo, hi


cdef void _launch_kernel(const char* xb, char* yb, int64_t* ib, _Launch p, _Scratch s) noexcept:
    """A launch's work items, in this thread or on the pool (pk_parallel).  Units
    write disjoint outputs and scratch is per thread, so results cannot depend on
    the schedule."""
    cdef _UnitsJob j
    cdef MaxPool3d p3
    cdef MaxPoolNHWC pn
    cdef pk_body body = _units_body
    j.x = xb if p.xsize else NULL
    j.y, j.ib, j.g = yb, ib, &p.g
    j.kind, j.act, j.lo, j.hi = p.kind, p.act, p.lo, p.hi
    if isinstance(p, MaxPoolNHWC):
        pn = <MaxPoolNHWC>p
        j.C, j.vs = pn.C, pn.wscratch
        j.hv = s.block if ib != NULL else NULL
        body = _nhwc_body
    else:
        # Scratch per thread: row buffers, NaN flags, depth slabs, positions (with indices).
        p3 = <MaxPool3d>p
        j.C, j.fg, j.nblk, j.rows = 0, &p3.flat_g, p3.nblk, p3.rows_per_unit
        j.xplane, j.yplane = p3.xplane, p3.yplane
        j.vs, j.ns, j.ms, j.ps = p3.vscratch, p3.nscratch, p3.mscratch, p3.pscratch
        j.hv = s.block
        j.nan = <uint8_t*>(j.hv + p.n_threads * j.vs * p.itemsize)
        j.m = <char*>(j.nan + p.n_threads * j.ns)
        j.hp = <int32_t*>(j.m + p.n_threads * j.ms * p.itemsize) if ib != NULL else NULL
        if not j.ms:
            j.m = NULL
    with nogil:
        pk_parallel(body, &j, p.units, p.chunk, p.n_threads)


cdef void _units_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for MaxPool3d: work items [begin, end) on thread tid."""
    cdef _UnitsJob* j = <_UnitsJob*>job
    if j.kind == 0:
        _units(<float*>NULL, j, begin, end, tid)
    elif j.kind == 1:
        _units(<double*>NULL, j, begin, end, tid)
    elif j.kind == 2:
        _units(<int8_t*>NULL, j, begin, end, tid)
    elif j.kind == 3:
        _units(<uint8_t*>NULL, j, begin, end, tid)
    else:
        _units(<uint16_t*>NULL, j, begin, end, tid)


cdef void _nhwc_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for MaxPoolNHWC: output rows [begin, end) on thread tid."""
    cdef _UnitsJob* j = <_UnitsJob*>job
    if j.kind == 0:
        _nhwc_rows(<float*>NULL, j, begin, end, tid)
    elif j.kind == 1:
        _nhwc_rows(<double*>NULL, j, begin, end, tid)
    elif j.kind == 2:
        _nhwc_rows(<int8_t*>NULL, j, begin, end, tid)
    elif j.kind == 3:
        _nhwc_rows(<uint8_t*>NULL, j, begin, end, tid)
    else:
        _nhwc_rows(<uint16_t*>NULL, j, begin, end, tid)


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
    # code ran 1.2x slower (8x112x112x64 k3 s2 p1 float32, one thread: 3.9 vs 3.1 ms).
    if begin < end:
        _nhwc_unit(xb, yb, ib, C, g, begin, wpix, act, lo, hi)
    for u in range(begin + 1, end):
        _nhwc_unit(xb, yb, ib, C, g, u, wpix, act, lo, hi)


cdef void _pool_unit(const pool_t* xb, pool_t* yb, int64_t* ib, const Geom* g,
                            const Geom* flat_g, Py_ssize_t u, Py_ssize_t nblk,
                            Py_ssize_t rows_per_unit, Py_ssize_t xplane, Py_ssize_t yplane,
                            pool_t* hval, int32_t* hpos, uint8_t* nan, pool_t* m,
                            int act, pool_t lo, pool_t hi) noexcept nogil:
    """Work item u of MaxPool3d: rows_per_unit output rows of one depth slice of
    one plane, with this thread's scratch (m NULL: never reduce depth first)."""
    # Copies the compiler can keep in registers: through the pointers, every store
    # to a row might change the geometry (float32 +Indices 5.3 -> 4.5 ms).
    cdef Geom gc = g[0], fc = flat_g[0]
    g, flat_g = &gc, &fc
    cdef Py_ssize_t plane = u // (g.OD * nblk)
    cdef Py_ssize_t r = u - plane * (g.OD * nblk)
    cdef Py_ssize_t od = r // nblk
    cdef Py_ssize_t oh0 = (r - od * nblk) * rows_per_unit
    if m != NULL and _depth_first(xb + plane * xplane, m, g, od):
        _pool_rows(m, yb + plane * yplane + od * g.OH * g.OW, NULL, 0, flat_g, 0, 0, g.OH,
                   hval, NULL, nan, act, lo, hi)
    else:
        _pool_rows(xb + plane * xplane, yb + plane * yplane,
                   ib + plane * yplane if ib != NULL else NULL,
                   plane * xplane, g, od, oh0, min(oh0 + rows_per_unit, g.OH),
                   hval, hpos, nan, act, lo, hi)


# ---------------------------------------------------------------------------
# MaxPool, channels last (com.ms.internal.nhwc), ranks 1-3 promoted to 3-D.
#
# The channel axis is contiguous, so each tap of a window is one vector
# update over C; taps are visited in lexicographic order, so "strictly
# greater replaces" again gives the first maximum.  Winners are tracked as
# the int32 pixel number inside the image, widened once per output pixel.
# ---------------------------------------------------------------------------

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

    xp: the image in X; xoff: its first pixel's number in the batch; wpix: this
    thread's C int32 winners (NULL without Indices).  For 16-bit floats the
    input rows the output row reads are checked once for NaN and -0.0, so
    the cheap key of _keep serves nearly every row.  float and double keep the
    exact compare: it vectorises well over C, and the extra pass over rows
    larger than L1 measured slower (2.2 -> 2.9 ms on 8x112x112x64 k3 s2).
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
                irow[ow * C + c] = (xoff + wpix[c]) * C + c if wpix[c] >= 0 else -1
        if act:
            for c in range(C):
                yv[c] = _clamp(yv[c], lo, hi, act, g.inf_bits)


cdef inline void _nhwc_unit(const pool_t* xb, pool_t* yb, int64_t* ib, Py_ssize_t C, const Geom* g,
                            Py_ssize_t u, int32_t* wpix, int act, pool_t lo, pool_t hi) noexcept nogil:
    """Work item u of MaxPoolNHWC: one output row."""
    cdef Py_ssize_t n = u // (g.OD * g.OH), yrow = g.OW * C
    cdef Py_ssize_t r = u - n * (g.OD * g.OH)
    _nhwc_row(xb + n * g.D * g.H * g.W * C, yb + u * yrow, ib + u * yrow if ib != NULL else NULL,
              n * g.D * g.H * g.W, C, g, r // g.OH, r % g.OH, wpix, act, lo, hi)


# ---------------------------------------------------------------------------
# MaxPool, any rank: one separable stage per spatial axis, innermost first
# (the same tie argument as above).  x is viewed as (A, L, B) with the pooled
# axis in the middle; positions travel alongside the values.
# ---------------------------------------------------------------------------

cdef void _axis_window(const pool_t* x, const int64_t* pos_in, pool_t* y, int64_t* pos_out,
                       Py_ssize_t a, Py_ssize_t o, Py_ssize_t L, Py_ssize_t B,
                       Py_ssize_t k, Py_ssize_t s, Py_ssize_t dil, Py_ssize_t pad,
                       int act, pool_t lo, pool_t hi, uint16_t inf_bits) noexcept nogil:
    """One output position o of row a: y[b] and pos_out[b] for every b (a function
    of its own so that every variable is private to the thread running it)."""
    cdef Py_ssize_t b, t, t0, t1, l, row, base = o * s - pad
    cdef const pool_t* xrow
    cdef pool_t v, m
    cdef int64_t old, mask
    _taps(base, dil, k, L, &t0, &t1)
    if t0 >= t1:
        for b in range(B):
            y[b] = _empty_value(<pool_t>0, inf_bits)
            if pos_out != NULL:
                pos_out[b] = -1
    for t in range(t0, t1):
        l = base + t * dil
        xrow = x + (a * L + l) * B
        row = (a * L + l) * B
        if t == t0:
            for b in range(B):
                y[b] = xrow[b]
            if pos_out != NULL:
                for b in range(B):
                    pos_out[b] = pos_in[row + b] if pos_in != NULL else row + b
        elif pos_out != NULL:
            # Unconditional loads and selects, so the loop vectorises.
            for b in range(B):
                v = xrow[b]
                m = y[b]
                old = pos_out[b]
                mask = -<int64_t>_gt(v, m, inf_bits)
                y[b] = v if mask else m
                pos_out[b] = (old & ~mask) | ((pos_in[row + b] if pos_in != NULL else row + b) & mask)
        else:
            for b in range(B):
                v = xrow[b]
                m = y[b]
                y[b] = v if _gt(v, m, inf_bits) else m
    if act:
        for b in range(B):
            y[b] = _clamp(y[b], lo, hi, act, inf_bits)


def max_pool_axis(const pool_t[:, :, ::1] x not None, const int64_t[:, :, ::1] pos_in,
                  pool_t[:, :, ::1] y not None, int64_t[:, :, ::1] pos_out,
                  Py_ssize_t k, Py_ssize_t s, Py_ssize_t dil, Py_ssize_t pad,
                  int act, pool_t lo, pool_t hi, uint16_t inf_bits, int n_threads):
    """One stage: y[a, o, b] = max over taps t of x[a, o*s - pad + t*dil, b].

    pos_in None means x is the original input, whose own flat offsets are the
    positions; pos_out (or None) receives the winners' positions, -1 if empty.
    act/lo/hi: fused activation, applied by the last stage only.
    """
    cdef Py_ssize_t A = x.shape[0], L = x.shape[1], B = x.shape[2], O = y.shape[1]
    cdef Py_ssize_t u
    cdef const int64_t* pin = NULL
    cdef int64_t* pout = NULL
    if A * O * B == 0:
        return
    if pos_in is not None and A * L * B:  # no tap reads an empty input
        pin = &pos_in[0, 0, 0]
    if pos_out is not None:
        pout = &pos_out[0, 0, 0]
    cdef _AxisJob j
    j.x = <const char*>&x[0, 0, 0] if A * L * B else NULL  # no tap can read an empty x
    j.y = <char*>&y[0, 0, 0]
    j.pin, j.pout = pin, pout
    j.L, j.B, j.O, j.k, j.s, j.dil, j.pad = L, B, O, k, s, dil, pad
    j.act, j.lo, j.hi, j.inf_bits, j.kind = act, lo, hi, inf_bits, _kind_of(<pool_t*>NULL)
    with nogil:
        # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
        pk_parallel(_axis_body, &j, A * O, max(1, A * O // (16 * n_threads)), n_threads)


cdef struct _AxisJob:
    const char* x
    char* y
    const int64_t* pin
    int64_t* pout
    Py_ssize_t L, B, O, k, s, dil, pad
    int act, kind
    double lo, hi
    uint16_t inf_bits


cdef inline int _kind_of(pool_t* tag) noexcept nogil:
    """The index of pool_t in _KINDS (`tag` only selects the type)."""
    if pool_t is float:
        return 0
    elif pool_t is double:
        return 1
    elif pool_t is int8_t:
        return 2
    elif pool_t is uint8_t:
        return 3
    else:
        return 4


cdef void _axis_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for max_pool_axis: output rows [begin, end) of A * O."""
    cdef _AxisJob* j = <_AxisJob*>job
    if j.kind == 0:
        _axis_rows(<float*>NULL, j, begin, end)
    elif j.kind == 1:
        _axis_rows(<double*>NULL, j, begin, end)
    elif j.kind == 2:
        _axis_rows(<int8_t*>NULL, j, begin, end)
    elif j.kind == 3:
        _axis_rows(<uint8_t*>NULL, j, begin, end)
    else:
        _axis_rows(<uint16_t*>NULL, j, begin, end)


cdef void _axis_rows(pool_t* kind, const _AxisJob* j, Py_ssize_t begin, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t u, B = j.B
    cdef const pool_t* xb = <const pool_t*>j.x
    cdef pool_t* yb = <pool_t*>j.y
    for u in range(begin, end):
        _axis_window(xb, j.pin, yb + u * B, j.pout + u * B if j.pout != NULL else NULL,
                     u // j.O, u % j.O, j.L, B, j.k, j.s, j.dil, j.pad, j.act, <pool_t>j.lo,
                     <pool_t>j.hi, j.inf_bits)


# ---------------------------------------------------------------------------
# MaxUnpool (SPEC 2): zeros, then y[indices[j]] = x[j] for every j of x in
# row-major order.
#
# Only bits move, so one kernel over unsigned storage of each width serves
# every dtype (the float16 / bfloat16 / uint16 question never arises).  The
# arrays arrive flat, cut into `blocks` equal parts: the N*C planes for NCHW,
# the N images for NHWC.  Part b of x is "local" when every index it holds
# lands in part b of y, which is what MaxPool's Indices always do.
#
# One pass in the common case: each part is scattered by one thread with a
# guard that writes only inside its own part of y (so never out of bounds)
# and notes any index that is not.  Parts of y are disjoint, so with every
# part local the result is the ordered one whatever the thread count.  If
# any index left its part, every index is checked (the first bad one is
# returned) and then all are written again in one serial pass in input
# order: the last write in row-major order of x wins, for every n_threads.
# ---------------------------------------------------------------------------

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memset

ctypedef fused bits_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline int _unpool_part(const bits_t* x, const int64_t* idx, Py_ssize_t n, bits_t* y,
                             uint64_t lo, uint64_t span) noexcept nogil:
    """y[idx[j] - lo] = x[j] for the indices in [lo, lo + span); 1 if some index was not.

    Unsigned arithmetic folds the range test into one comparison (and wraps
    instead of overflowing); the branch is always taken for MaxPool's indices.
    """
    cdef Py_ssize_t j
    cdef uint64_t d
    cdef int outside = 0
    for j in range(n):
        d = <uint64_t>idx[j] - lo
        if d < span:
            y[d] = x[j]
        else:
            outside = 1
    return outside


cdef struct _UnpoolJob:
    const char* x
    const int64_t* idx
    char* y
    Py_ssize_t itemsize, in_block, out_block
    bint fused
    int outside                     # set (pk_atomic_or) when some index left its part


cdef void _zero_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body: y[begin:end] = 0 (as bytes)."""
    cdef _UnpoolJob* j = <_UnpoolJob*>job
    memset(j.y + begin * j.itemsize, 0, (end - begin) * j.itemsize)


cdef void _unpool_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body: parts [begin, end) of x scattered into theirs of y."""
    cdef _UnpoolJob* j = <_UnpoolJob*>job
    cdef int outside
    if j.itemsize == 1:
        outside = _unpool_parts(<uint8_t*>NULL, j, begin, end)
    elif j.itemsize == 2:
        outside = _unpool_parts(<uint16_t*>NULL, j, begin, end)
    elif j.itemsize == 4:
        outside = _unpool_parts(<uint32_t*>NULL, j, begin, end)
    else:
        outside = _unpool_parts(<uint64_t*>NULL, j, begin, end)
    if outside:
        pk_atomic_or(&j.outside, 1)


cdef int _unpool_parts(bits_t* kind, const _UnpoolJob* j, Py_ssize_t begin, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t b, ib = j.in_block, ob = j.out_block
    cdef const bits_t* x = <const bits_t*>j.x
    cdef bits_t* y = <bits_t*>j.y
    cdef int outside = 0
    for b in range(begin, end):
        if j.fused:  # zero the part just before scattering into it, while it is in cache
            memset(y + b * ob, 0, ob * sizeof(bits_t))
        outside |= _unpool_part(x + b * ib, j.idx + b * ib, ib, y + b * ob, b * ob, ob)
    return outside


cdef Py_ssize_t _max_unpool(const bits_t* x, const int64_t* idx, Py_ssize_t n, bits_t* y,
                            Py_ssize_t size, Py_ssize_t blocks, bint fused,
                            int n_threads) noexcept nogil:
    cdef Py_ssize_t j
    cdef _UnpoolJob job
    job.x, job.idx, job.y, job.itemsize = <const char*>x, idx, <char*>y, sizeof(bits_t)
    job.in_block, job.out_block, job.fused, job.outside = n // blocks, size // blocks, fused, 0
    # Chunks of 1/16 of a thread's share (as pooling._threads.chunk_size): the smallest claim.
    if not fused:
        pk_parallel(_zero_body, &job, size, max(1, size // (16 * n_threads)), n_threads)
    pk_parallel(_unpool_body, &job, blocks, max(1, blocks // (16 * n_threads)), n_threads)
    if not job.outside:
        return -1
    for j in range(n):
        if <uint64_t>idx[j] >= <uint64_t>size:
            return j
    # y is zeros plus some of the writes below, each of which is redone in
    # order, so the ordered pass needs no fresh zeros.
    _unpool_part(x, idx, n, y, 0, size)
    return -1


def max_unpool(const bits_t[::1] x not None, const int64_t[::1] indices not None,
               bits_t[::1] y not None, Py_ssize_t blocks, bint fused, int n_threads):
    """Zero y, then y[indices[j]] = x[j] for j in order (all arrays flat).

    blocks (>= 1): the equal parts x and y are cut into (planes).  fused: zero
    each part of y together with its scatter (pays when there are enough parts
    to keep every thread busy); otherwise y is zeroed in one slice per thread
    first.

    Returns -1 once y is written, or the position in `indices` of the first
    index outside [0, y.shape[0]); y is then partly written, but never outside
    its bounds.  (-2, writing nothing: the arguments break this contract.)
    """
    cdef Py_ssize_t n = x.shape[0], size = y.shape[0], r
    if indices.shape[0] != n or blocks < 1 or n % blocks or size % blocks or n_threads < 1:
        return -2
    if n == 0 and size == 0:
        return -1
    if size == 0:  # every index is outside an empty output; y has no memory to zero
        return 0
    with nogil:
        r = _max_unpool(&x[0] if n else NULL, &indices[0] if n else NULL, n,
                        &y[0] if size else NULL, size, blocks, fused, n_threads)
    return r


# ===========================================================================
# Col2Im (SPEC 3)
#
# Column element (k, l) of a plane lands at pos_i = beta_i*s_i - pb_i +
# kappa_i*d_i, with kappa = unravel(k, block_shape) and beta = unravel(l, nb).
# A work item is one plane and a range of positions on its first spatial
# axis: no other item writes there, so threads never share an output element.
# Inside an item the kernel offsets k are the outer loop, and for one k at
# most one block lands on a pixel, so every pixel receives its terms in
# increasing k, which is SPEC 3's order: the result is the same for every
# n_threads and however the items are cut.
# ===========================================================================

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memset

cdef extern from "pooling_half.h":
    enum:
        PK_F16_INF
        PK_BF16_INF

cdef extern from "pooling_half_conv.h":
    float pk_f16_to_f32(uint16_t h) noexcept nogil
    float pk_bf16_to_f32(uint16_t h) noexcept nogil
    uint16_t pk_f32_to_f16(float f) noexcept nogil
    uint16_t pk_f32_to_bf16(float f) noexcept nogil

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
    """The index of col_t among col_t's types (`tag` only selects the type)."""
    if col_t is float:
        return 0
    elif col_t is double:
        return 1
    elif col_t is cython.floatcomplex:
        return 2
    elif col_t is cython.doublecomplex:
        return 3
    elif col_t is int8_t:
        return 4
    elif col_t is uint8_t:
        return 5
    elif col_t is uint16_t:
        return 6
    elif col_t is uint32_t:
        return 7
    else:
        return 8


cdef void _col2im_body(void* job, Py_ssize_t begin, Py_ssize_t end, int tid) noexcept nogil:
    """pk_parallel's body for col2im: work items [begin, end) on thread tid."""
    cdef _ColJob* j = <_ColJob*>job
    if j.kind == 0:
        _col2im_items(<float*>NULL, j, begin, end, tid)
    elif j.kind == 1:
        _col2im_items(<double*>NULL, j, begin, end, tid)
    elif j.kind == 2:
        _col2im_items(<cython.floatcomplex*>NULL, j, begin, end, tid)
    elif j.kind == 3:
        _col2im_items(<cython.doublecomplex*>NULL, j, begin, end, tid)
    elif j.kind == 4:
        _col2im_items(<int8_t*>NULL, j, begin, end, tid)
    elif j.kind == 5:
        _col2im_items(<uint8_t*>NULL, j, begin, end, tid)
    elif j.kind == 6:
        _col2im_items(<uint16_t*>NULL, j, begin, end, tid)
    elif j.kind == 7:
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


def half_to_float32(const uint16_t[::1] h not None, float[::1] out not None, uint16_t inf_bits):
    """out[i] = the float16 (inf_bits 0x7c00) or bfloat16 (0x7f80) bits h[i], widened exactly."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(min(h.shape[0], out.shape[0])):
            out[i] = pk_f16_to_f32(h[i]) if inf_bits == PK_F16_INF else pk_bf16_to_f32(h[i])


def float32_to_half(const float[::1] f not None, uint16_t[::1] out not None, uint16_t inf_bits):
    """out[i] = f[i] rounded to nearest even in float16 (inf_bits 0x7c00) or bfloat16 (0x7f80)."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(min(f.shape[0], out.shape[0])):
            out[i] = pk_f32_to_f16(f[i]) if inf_bits == PK_F16_INF else pk_f32_to_bf16(f[i])
