"""MaxPool's strategies: the ways the compiled kernels can compute a call, and the one function
that chooses among them.

A call's plan (shapes and attributes, ``maxpool._plan``) and dtype kind go to
`choose_strategy`, which names a `Strategy`; that strategy's builder turns the plan into a
``run(xk, y, indices)`` callable holding the kernel object, its geometry and its scratch, and
`launch` caches the callable per (plan, kind, threads, Indices, strategy).  Tests force each
strategy with ``max_pool(..., _strategy=...)``; a forced strategy that cannot compute the call
(`serves` is False) is a ValueError.

Adding a strategy is local to this file: a `Strategy` member, its `serves` rule (what it can
compute at all), a builder in `_BUILDERS`, and a row in `choose_strategy` (when it is the best).
The kernels live in src/_core.pyx and the files it includes; docs/design.md maps them.
"""
import functools
import math

import numpy as np

from . import _dispatch, _tuning
from ._dispatch import core as _core
from ._dtypes import KINDS, float_to_half_bits
from ._strategy import Strategy
from ._threads import chunk_size, split_rows
from .indices import from_onnx

OP = "MaxPool"

# The fused kernel's row ring must hold one output row's window whatever that costs; past this
# (huge dilated kernels over wide rows) the separable kernel is taken instead.
_BUFFER_LIMIT = 1 << 22
# INTERLEAVED's pixel: bytes of planes per vector of its block (PK_IL_BYTES, include/pooling_interleave.h).
_INTERLEAVED_BYTES = 32
# NARROW serves windows of up to this many taps along W (PK_NARROW_MAX_K, include/pooling_narrow.h).
_NARROW_MAX_K = 16
# PLANES keeps four padded planes per thread (ROWS_FIRST one padded row); past this they are not
# chosen nor can be forced.  (Which of them is chosen is a speed decision: pooling._tuning.)
_PLANES_LIMIT = 1 << 24


def choose_strategy(plan, kind, n_threads, with_indices):
    """The strategy for a call: the first row of this table that applies.

    (`launch` first hands a 3-D NCHW call whose windows are one depth slice deep and keep every
    slice to this table as the 2-D call over N*C*D planes it is: `_as_slices`.)

    ============  =====================================================  ==========================
    layout        condition                                              strategy
    ============  =====================================================  ==========================
    NHWC          float32, no Indices, at least a vector of channels     NHWC_BLOCKS
                  (8 in the AVX2 build, 16 in the AVX-512 one, 4 in the
                  baseline), ranks 1-3, H*W*D below 2**31
    NHWC          ranks 1-3, H*W*D below 2**31                           NHWC
    NHWC          otherwise (rank > 3, huge images)                      NHWC_TRANSPOSED
    NCHW, 3-D     depth kernel > 1, no Indices, 1- or 2-byte dtype,      DEPTH_FIRST
                  at least 4 output depth slices per thread, H*W within
                  the scratch budget
    NCHW          ranks 1-3, no Indices, windows tiling the input        TILES
                  exactly (stride = kernel, no pads or dilation, input
                  = output * kernel on every axis), a W kernel of 2,
                  scratch within _PLANES_LIMIT
    NCHW          float32, no Indices, stride 1 and an output of the     NARROW
                  input's shape, windows of 3 to 5 taps per axis on
                  rows of at most three vectors (24 values in the AVX2
                  build, 48 from the AVX-512 one, 12 in the baseline),
                  or of 2 taps on rows of one vector
    NCHW, 2-D     float32, no Indices, windows of at most 3x3, stride 1  ROWS_FIRST
                  along W or 2 with a 2- or 3-wide window, or k4 s4
                  along W; rows of 8 to 4096 in (8 or more out), no
                  window wholly in the padding
    NCHW          ranks 1-2, no Indices, planes of at most 64 values     INTERLEAVED
                  (8x8), not a window covering the whole plane
    NCHW, 3-D     depth kernel > 1, and not (Indices with a 4- or        DEPTH_SPLIT
                  8-byte dtype)
    NCHW          ranks 1-2, no Indices, scratch within one core's L2,  PLANES
                  and: a window covering the whole plane, or stride 1
                  with a kernel of 4 or more on an axis, or stride 1
                  on a plane of at most 256 values (2-D: 1296, 36x36,
                  for 1- to 4-byte types in the AVX2 build)
    NCHW          ranks 1-3, one output row's window fits the row ring   FUSED
                  (or the ring beats SEPARABLE's intermediates in size)
    NCHW          otherwise (rank > 3, huge dilated windows)             SEPARABLE
    ============  =====================================================  ==========================

    Why each row is where it is, in one line (the measurements: docs/tuning.md#maxpool-strategy-choices,
    one section per strategy):

    - NHWC_BLOCKS: each window a block of channel vectors at a time, in registers, where NHWC reads
      and writes its output on every tap.
    - DEPTH_FIRST: halves the 2-D work at depth stride 2; pays only where the 2-D passes are
      compute bound (1- and 2-byte types).
    - TILES: windows that tile the input need no borders nor per-plane set-up: flat passes.
    - NARROW: a plane's rows in a few vectors each, the window's reduced rows kept in registers.
    - ROWS_FIRST: each output row's window rows reduced into one padded row, read off in registers.
    - INTERLEAVED: small planes side by side, so every tap is one vector of whole pixels.
    - DEPTH_SPLIT: each depth slice reduced once, not once per output depth that reads it.
    - PLANES: padded planes and window doubling: global and wide stride-1 windows.
    - FUSED: the general kernel; past _BUFFER_LIMIT it is slower than SEPARABLE but stays where its
      ring is smaller than SEPARABLE's intermediates.
    - SEPARABLE and NHWC_TRANSPOSED compute every call, at any rank: the rare paths.
    """
    if plan.layout == "NHWC":
        if serves(Strategy.NHWC_BLOCKS, plan, kind, with_indices):
            return Strategy.NHWC_BLOCKS
        return Strategy.NHWC if serves(Strategy.NHWC, plan, kind, with_indices) else Strategy.NHWC_TRANSPOSED
    depth = len(plan.spatial) == 3 and plan.kernel[0] > 1
    if (depth and not with_indices and _depth_first_pays(plan, kind, n_threads)
            and serves(Strategy.DEPTH_FIRST, plan, kind, with_indices)):
        return Strategy.DEPTH_FIRST
    if (not with_indices and plan.kernel[-1] == 2 and not _whole_plane(plan)
            and serves(Strategy.TILES, plan, kind, with_indices)):
        return Strategy.TILES
    if not with_indices and _narrow_pays(plan) and serves(Strategy.NARROW, plan, kind, with_indices):
        return Strategy.NARROW
    if (not with_indices and len(plan.spatial) == 2 and plan.spatial[-1] <= _tuning.rows_chosen()
            and serves(Strategy.ROWS_FIRST, plan, kind, with_indices)):
        return Strategy.ROWS_FIRST
    if (not with_indices and _interleaved_pays(plan)
            and serves(Strategy.INTERLEAVED, plan, kind, with_indices)):
        return Strategy.INTERLEAVED
    if depth:
        if (not (with_indices and KINDS[kind].itemsize >= 4)
                and serves(Strategy.DEPTH_SPLIT, plan, kind, with_indices)):
            return Strategy.DEPTH_SPLIT
    if (not with_indices and _planes_pays(plan, kind)
            and serves(Strategy.PLANES, plan, kind, with_indices)):
        return Strategy.PLANES
    if _fused_rows(plan, kind, n_threads) is not None:
        return Strategy.FUSED
    return Strategy.SEPARABLE


def serves(strategy, plan, kind, with_indices):
    """Whether `strategy` can compute this call at all (limits of its kernel, not speed)."""
    n = len(plan.spatial)
    if strategy is Strategy.NHWC_TRANSPOSED:
        return plan.layout == "NHWC"
    if strategy is Strategy.NHWC:
        return plan.layout == "NHWC" and n <= 3 and _fits_int32((math.prod(plan.spatial),))
    if strategy is Strategy.NHWC_BLOCKS:
        return (serves(Strategy.NHWC, plan, kind, with_indices) and not with_indices
                and KINDS[kind].ctype == "float" and plan.out_shape[-1] >= _core.NARROW_LANES)
    if plan.layout != "NCHW":
        return False
    if strategy is Strategy.SEPARABLE:
        return True
    if strategy is Strategy.FUSED:
        return n <= 3 and _fused_rows(plan, kind, None) is not None
    if strategy is Strategy.PLANES:
        return (n <= 2 and not with_indices and min(plan.spatial) > 0 and min(plan.out_shape) > 0
                and _planes_scratch(plan, kind) <= _PLANES_LIMIT)
    if strategy is Strategy.INTERLEAVED:
        return (n <= 2 and not with_indices and min(plan.spatial) > 0 and min(plan.out_shape) > 0
                and _interleaved_scratch(plan) <= _PLANES_LIMIT)
    if strategy is Strategy.ROWS_FIRST:
        return n <= 2 and not with_indices and _rows_first(plan, kind)
    if strategy is Strategy.NARROW:
        return n <= 2 and not with_indices and _narrow(plan, kind)
    if strategy is Strategy.TILES:
        return not with_indices and n <= 3 and _tiles(plan) and _tiles_scratch(plan, kind) <= _PLANES_LIMIT
    if n != 3 or not _fits_int32(plan.spatial):
        return False
    if strategy is Strategy.DEPTH_FIRST:
        return (not with_indices and plan.spatial[1] * plan.spatial[2] <= _BUFFER_LIMIT
                and _buffer_rows(*_promote(plan)[:5], KINDS[kind].itemsize) is not None)
    if strategy is Strategy.DEPTH_SPLIT:
        return _depth_slices(plan, kind) is not None
    raise ValueError(f"{OP}: unknown strategy {strategy!r}")


@functools.lru_cache(maxsize=256)
def launch(plan, kind, nt, with_indices, strategy=None):
    """run(xk, y, indices) for this plan, dtype kind, thread count and strategy (None: chosen).

    Everything that depends only on those is computed once here (the kernel
    specialisation, promoted geometry, work split, scratch shapes), so a call on
    a small input costs little more than the kernel itself.
    """
    if strategy is None:
        flat = _as_slices(plan)
        if flat is not None:
            return launch(flat, kind, nt, with_indices)
        strategy = choose_strategy(plan, kind, nt, with_indices)
    else:
        try:
            strategy = Strategy(strategy)
        except ValueError:
            raise ValueError(f"{OP}: _strategy must be one of {[s.value for s in Strategy]}, "
                             f"got {strategy!r}") from None
        if not serves(strategy, plan, kind, with_indices):
            raise ValueError(f"{OP}: _strategy={strategy.value!r} cannot compute this call "
                             f"(layout {plan.layout}, rank {len(plan.spatial)}, "
                             f"return_indices={with_indices})")
    act = _activation_bounds(plan.activation, plan.activation_params, kind)
    run = _BUILDERS[strategy](plan, kind, nt, act, KINDS[kind].inf_bits, with_indices)
    if with_indices and plan.index_format != "onnx" and strategy not in _ENCODES:
        return functools.partial(_recoded, run, plan)
    return run


# The strategies whose kernels write every index format themselves (the index pass's Geom.imul ...;
# _index_code); the others write "onnx" Indices, re-encoded after (_recoded).
_ENCODES = frozenset({Strategy.FUSED, Strategy.DEPTH_SPLIT, Strategy.NHWC})


def _recoded(run, plan, xk, y, indices):
    """run(xk, y, indices), then its "onnx" Indices re-encoded in plan.index_format."""
    run(xk, y, indices)
    from_onnx(indices, plan.index_geometry, plan.layout, plan.index_format)


def _index_code(plan, planes):
    """The kernels' Indices encoding (imul, icmul, islices, ichannels, inbase, icbase) for
    plan.index_format (pooling.indices; the Geom struct of maxpool_launch.pxi says how the kernels
    apply it).  planes: the NCHW kernel's planes, each one (n, c) plane or a depth slice of one
    (DEPTH_SPLIT, _as_slices), as N*C*islices planes (NHWC: the images, unused)."""
    batch, channels, plane = plan.index_geometry
    fmt = plan.index_format
    if plan.layout == "NHWC":  # index = n * inbase + pixel * imul + c * icmul
        return {"onnx": (channels, 1, 1, 1, plane * channels, 0),
                "tf_batch": (channels, 1, 1, 1, plane * channels, 0),
                "tf": (channels, 1, 1, 1, 0, 0),
                "plane": (1, 0, 1, 1, 0, 0)}[fmt]
    slices = max(1, planes // (batch * channels)) if batch * channels else 1
    channels = max(channels, 1)
    # index = slice * (plane / slices) * imul + n * inbase + c * icbase + position * imul
    return {"onnx": (1, 0, slices, channels, channels * plane, plane),
            "plane": (1, 0, slices, channels, 0, 0),
            "tf": (channels, 0, slices, channels, 0, 1),
            "tf_batch": (channels, 0, slices, channels, plane * channels, 1)}[fmt]


@functools.lru_cache(maxsize=64)
def _activation_bounds(activation, params, kind):
    """(mode, lo, hi) for the kernels: bit 1 clamps below at lo, bit 2 above at hi.

    Bounds are in the kernel's storage type: floats round to nearest, integers
    clamp to [ceil(min), floor(max)] within the type's range.
    """
    if activation is None:
        return 0, 0, 0
    lo, hi = (0.0, math.inf) if activation == "Relu" else params
    if kind in ("int8", "uint8"):
        # Limit to the type's range before rounding: either bound may be +-inf.
        info = np.iinfo(kind)
        lo = math.ceil(min(max(lo, info.min), info.max))
        hi = math.floor(min(max(hi, info.min), info.max))
        return 3, lo, hi
    if KINDS[kind].inf_bits:
        return 3, float_to_half_bits(lo, kind), float_to_half_bits(hi, kind)
    return 3, lo, hi




def _promote(plan):
    """Spatial geometry padded to 3-D with singleton axes: (spatial, out, kernel, strides,
    dilations, pads_begin).  A stride or dilation that never takes effect is passed as 1."""
    pad = (1,) * (3 - len(plan.spatial))
    spatial = pad + plan.spatial
    out = pad + (plan.out_shape[2:] if plan.layout == "NCHW" else plan.out_shape[1:-1])
    kernel = pad + plan.kernel
    strides = tuple(s if o > 1 else 1 for s, o in zip(pad + plan.strides, out))
    dilations = tuple(d if k > 1 else 1 for d, k in zip(pad + plan.dilations, kernel))
    pads_begin = (0,) * len(pad) + plan.pads_begin
    return spatial, out, kernel, strides, dilations, pads_begin


def _launch_3d(plan, kind, nt, brows, act, inf_bits, depth_first=False, core=_core):
    """NCHW, ranks 1-3: the fused two-pass kernel over (N*C) planes.

    depth_first: work items are whole output depth slices, each first reduced
    along depth where the data allows (no Indices; see _depth_first_pays).
    """
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    even = _tuning.even_split(planes * math.prod(spatial) * KINDS[kind].itemsize, nt)
    if depth_first:
        rows, units = max(out[1], 1), planes * out[0]
    else:
        # Positions count from a work item's first input row, in int32.
        most = ((1 << 31) - 1) // max(spatial[2], 1)
        rows, units = split_rows(planes * out[0], out[1], nt, even=even, most=max(
            1, (most - (kernel[1] - 1) * dilations[1] - 1) // strides[1] + 1))
    x_shape, y_shape = (planes,) + spatial, (planes,) + out
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    return core.MaxPool3d(KINDS[kind].ctype, x_shape, y_shape, kernel, strides, dilations, pads_begin,
                           taps, brows, rows, depth_first, *act, inf_bits, nt,
                           chunk_size(units, nt), _index_code(plan, planes))


@functools.lru_cache(maxsize=64)
def _as_slices(plan):
    """The 2-D plan over N*C*D planes of a 3-D NCHW plan whose windows are one depth slice
    deep and keep every slice (depth kernel 1, stride 1, no depth pads), or None.

    Such a call (C3D's and S3D's (1, k, k) pools) is a 2-D pool of each depth slice: the
    same bytes in the same order, and every flat offset (Indices) is the same, so the 2-D
    strategies (ROWS_FIRST, INTERLEAVED, PLANES) compute it.  Forced strategies keep the 3-D
    plan, so the tests still reach the 3-D kernels with these shapes."""
    if plan.layout != "NCHW" or len(plan.spatial) != 3:
        return None
    depth, out_depth = plan.spatial[0], plan.out_shape[2]
    if plan.kernel[0] != 1 or plan.pads_begin[0] or out_depth != depth or (plan.strides[0] > 1 and depth > 1):
        return None
    n, c = plan.out_shape[:2]
    return _slices_plan(plan, (n, c * depth))


def _slices_plan(plan, lead):
    """The 2-D plan pooling each depth slice of a 3-D NCHW plan by its H and W windows, with
    output shape lead + (OH, OW) (lead: the slices, as N*C*D planes in any two factors)."""
    return plan._replace(out_shape=lead + plan.out_shape[3:], spatial=plan.spatial[1:],
                         kernel=plan.kernel[1:], strides=plan.strides[1:],
                         dilations=plan.dilations[1:], pads_begin=plan.pads_begin[1:])


def _depth_first_pays(plan, kind, nt):
    """Whether DEPTH_FIRST beats the other 3-D strategies (choose_strategy's table says why): a 1- or
    2-byte type and at least 4 output depth slices per thread.  (The scratch budget is `serves`'.)"""
    return KINDS[kind].itemsize <= 2 and plan.out_shape[0] * plan.out_shape[1] * plan.out_shape[2] >= 4 * nt


def _build_fused(plan, kind, nt, act, inf_bits, with_indices):
    brows = _fused_rows(plan, kind, nt)
    if brows is None:  # forced past the rule that prefers SEPARABLE's memory use
        brows = _fused_rows(plan, kind, None)
    core = _tuning.kernels_for(Strategy.FUSED, _promote(plan)[3][2], KINDS[kind].itemsize,
                                 with_indices)
    return _launch_3d(plan, kind, nt, brows, act, inf_bits, core=core)


def _build_depth_first(plan, kind, nt, act, inf_bits, with_indices):
    brows = _buffer_rows(*_promote(plan)[:5], KINDS[kind].itemsize)
    return _launch_3d(plan, kind, nt, brows, act, inf_bits, depth_first=True)


def _build_depth_split(plan, kind, nt, act, inf_bits, with_indices):
    """NCHW 3-D: pool every depth slice in 2-D with the fused kernel (ROWS_FIRST's where it
    serves the slices, without Indices), then along depth with the axis kernel over contiguous
    rows of OH*OW values (reducing W, then H, then D keeps the contract's tie order)."""
    slices, brows = _depth_slices(plan, kind)
    planes = plan.out_shape[0] * plan.out_shape[1]
    depth = plan.spatial[0]
    out_depth, out_h, out_w = plan.out_shape[2:]
    if not with_indices and serves(Strategy.ROWS_FIRST, slices, kind, False):
        pool_slices = _build_rows_first(slices, kind, nt, (0, 0, 0), inf_bits, False)
    else:
        pool_slices = _launch_3d(slices, kind, nt, brows, (0, 0, 0), inf_bits)
    pool_depth = _core.max_pool_axis[KINDS[kind].ctype]
    depth_geometry = (plan.kernel[0], plan.strides[0], plan.dilations[0], plan.pads_begin[0])
    between, after = (planes, depth, out_h * out_w), (planes, out_depth, out_h * out_w)

    def run(xk, y, indices):
        inner = np.empty(between, xk.dtype)
        positions = None if indices is None else np.empty(between, np.int64)
        pool_slices(xk, inner, positions)
        # No positions for an empty depth (every window empty): the kernel would index
        # element 0 of the empty array (an IndexError with bounds checks).
        pool_depth(inner, positions if inner.size else None, y.reshape(after),
                   None if indices is None else indices.reshape(after), *depth_geometry, *act, inf_bits, nt)
    return run


def _build_separable(plan, kind, nt, act, inf_bits, with_indices):
    return lambda xk, y, indices: _run_separable(plan, kind, xk, y, indices, act, inf_bits, nt)


def _build_nhwc_transposed(plan, kind, nt, act, inf_bits, with_indices):
    return lambda xk, y, indices: _run_nhwc_transposed(plan, kind, xk, y, indices, act, inf_bits, nt)


def _fused_rows(plan, kind, nt):
    """Rows of FUSED's row ring per depth tap for an NCHW plan of rank <= 3: None where FUSED
    cannot compute it (nt None), or where it should not because SEPARABLE needs less memory."""
    if len(plan.spatial) > 3 or not _fits_int32(plan.spatial):
        return None
    geometry = _promote(plan)[:5]
    itemsize = KINDS[kind].itemsize
    brows = _buffer_rows(*geometry, itemsize)
    if brows is not None:
        return brows
    full = _buffer_rows(*geometry, itemsize, limit=None)
    if full is None or nt is None:
        return full
    out, kernel = geometry[1], geometry[2]
    return full if nt * kernel[0] * full * out[2] < _separable_peak(plan) else None


def _depth_slices(plan, kind):
    """DEPTH_SPLIT's 2-D plan of the depth slices and its ring rows, or None where the slices'
    results would dwarf input and output (huge pads across a long, strided depth would make
    them a MemoryError for a small result) or the fused kernel cannot take the slices."""
    planes = plan.out_shape[0] * plan.out_shape[1]
    (depth, height, width), (out_h, out_w) = plan.spatial, plan.out_shape[3:]
    slices = _slices_plan(plan, (planes * depth, 1))
    brows = _buffer_rows(*_promote(slices)[:5], KINDS[kind].itemsize)
    between = planes * depth * out_h * out_w
    if brows is None or between > math.prod(plan.out_shape) + planes * depth * height * width:
        return None
    return slices, brows


def _planes_pays(plan, kind):
    """Whether PLANES beats FUSED (choose_strategy's table says why)."""
    if len(plan.spatial) > 2 or _planes_scratch(plan, kind) > _tuning.planes_chosen():
        return False
    if _whole_plane(plan):
        return True  # a reduction per plane
    if not all(s == 1 for s in plan.strides):
        return False
    plane = math.prod(plan.spatial)
    return (max(plan.kernel) >= 4 or plane <= 256
            or (plane <= 1296 and len(plan.spatial) == 2 and KINDS[kind].itemsize <= 4
                and _dispatch.level == "avx2"))


def _interleaved_pays(plan):
    """Whether INTERLEAVED beats the NCHW kernels (choose_strategy's table says why)."""
    return len(plan.spatial) <= 2 and math.prod(plan.spatial) <= 64 and not _whole_plane(plan)


def _rows_first(plan, kind):
    """Whether ROWS_FIRST's kernel computes this call (include/pooling_rows.h): float32, windows
    of at most 3x3, along W stride 1 or a 2- or 3-wide stride 2 without dilation, or k4 s4 along
    W (up to 4 rows); input and output rows at least 8 long, no window wholly in the padding."""
    if KINDS[kind].ctype != "float" or min(plan.out_shape) == 0:
        return False
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    kh, kw = kernel[1:]
    s, d = strides[2], dilations[2]
    small = kh <= 3 and kw <= 3 and (s == 1 or (s == 2 and kw >= 2 and d == 1))
    if (not (small or (kh <= 4 and kw == 4 and s == 4 and d == 1))
            or min(spatial[2], out[2]) < 8 or 4 * (spatial[2] + 64) > _PLANES_LIMIT):
        return False
    taps = _tap_ranges(spatial[1:], out[1:], kernel[1:], strides[1:], dilations[1:], pads_begin[1:])
    return bool(np.all(taps[:, 0] < taps[:, 1]))


def _same_shape(plan):
    """Whether the output has the input's shape with stride 1 on every axis (the "same" pools:
    k3 p1, k5 p2, k2 with the pad at one end)."""
    return plan.out_shape[2:] == plan.spatial and all(s == 1 for s in plan.strides)


def _narrow_pays(plan):
    """Whether NARROW beats the other kernels (choose_strategy's table says why): stride 1 and an
    output of the input's shape, windows of at most 5 taps per axis, and 2-tap windows only on
    rows one vector holds."""
    if not _same_shape(plan) or max(plan.kernel) > 5:
        return False
    core = _narrow_core(plan)
    return core is not None and (min(plan.kernel) >= 3 or plan.spatial[-1] <= core.NARROW_LANES)


def _narrow(plan, kind):
    """Whether NARROW's kernel computes this call (include/pooling_narrow.h): float32, input and
    output rows of at most three vectors of the build it runs from (24 with AVX2, 48 with AVX-512,
    12 without), a W stride of 1 (one that takes effect) and at most _NARROW_MAX_K taps along W."""
    if KINDS[kind].ctype != "float" or min(plan.spatial) == 0 or min(plan.out_shape) == 0:
        return False
    kernel, strides = _promote(plan)[2:4]
    return _narrow_core(plan) is not None and strides[2] == 1 and kernel[2] <= _NARROW_MAX_K


def _narrow_core(plan):
    """The build NARROW runs from, or None where none holds the rows: of the process's build and
    the AVX-512 one (where a rule of pooling._tuning names NARROW for this CPU), the one whose strips
    hold the rows in the fewest lanes, then the fewest strips, then the process's
    (docs/tuning.md#zen-5-avx-512-kernels)."""
    spatial, out = _promote(plan)[:2]
    width = max(spatial[2], out[2])
    best, best_key = None, None
    for rank, core in enumerate((_core, _tuning.kernels_for(Strategy.NARROW, 1, 4))):
        if width <= core.NARROW_WIDTH:
            strips = -(-width // core.NARROW_LANES)
            key = (strips * core.NARROW_LANES, strips, rank)
            if best_key is None or key < best_key:
                best, best_key = core, key
    return best


def _build_narrow(plan, kind, nt, act, inf_bits, with_indices):
    """float32 NCHW ranks 1-2 without Indices on narrow planes: a plane per work item, in
    registers (maxpool_narrow.pxi)."""
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    return _narrow_core(plan).MaxPoolNarrow(KINDS[kind].ctype, (planes,) + spatial, (planes,) + out, kernel, strides,
                              dilations, pads_begin, taps, *act, inf_bits, nt, chunk_size(planes, nt))


def _build_rows_first(plan, kind, nt, act, inf_bits, with_indices):
    """float32 NCHW ranks 1-2 without Indices: a plane per work item, window rows first
    (maxpool_rows.pxi)."""
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    # The input row of each output row's four taps: a tap past the kernel or in the padding
    # reads the window's first valid row again.
    t0, t1 = taps[out[0]:out[0] + out[1]].T
    t = np.minimum(np.arange(4), kernel[1] - 1)
    t = np.where((t >= t0[:, None]) & (t < t1[:, None]), t, t0[:, None])
    rows = np.arange(out[1])[:, None] * strides[1] - pads_begin[1] + t * dilations[1]
    return _prefetching(_core.MaxPoolRows(KINDS[kind].ctype, (planes,) + spatial, (planes,) + out, kernel,
                                          strides, dilations, pads_begin, taps,
                                          np.ascontiguousarray(rows, dtype=np.intp), *act, inf_bits, nt,
                                          chunk_size(planes, nt)),
                        _tuning.prefetch_rows(planes * math.prod(spatial) * KINDS[kind].itemsize))


def _prefetching(run, prefetch):
    """run, a launch, set to prefetch its next work item's input where the input is large enough
    to come from memory (_tuning.prefetch_rows, prefetch_nhwc)."""
    run.prefetch = prefetch
    return run


def _tiles(plan):
    """Whether the windows tile the input exactly: on every axis stride = kernel, no pads,
    no dilation that takes effect, and the input exactly out * kernel long (not empty)."""
    return (min(plan.out_shape) > 0 and not any(plan.pads_begin)
            and all(o * k == size and (o == 1 or s == k) and (k == 1 or d == 1)
                    for size, o, k, s, d in zip(plan.spatial, plan.out_shape[2:], plan.kernel,
                                                plan.strides, plan.dilations)))


def _tiles_rows(plan, kind):
    """TILES' output rows per batch: about _tuning.buffer_bytes() of input per depth tap, at least one;
    with depth taps, a whole depth slice per tap where one is at most four times that.

    (A batch reads its rows of each depth slice in turn, and the next batch goes back to the
    first slice, so small slices go whole: docs/tuning.md#row-chunks-fused-and-tiles.)"""
    spatial, _, kernel = _promote(plan)[:3]
    itemsize = KINDS[kind].itemsize
    chunk = _tuning.buffer_bytes()
    if kernel[0] > 1 and spatial[1] * spatial[2] * itemsize <= 4 * chunk:
        return max(1, spatial[1] // kernel[1])
    return max(1, chunk // max(1, kernel[1] * spatial[2] * itemsize))


def _tiles_scratch(plan, kind):
    """Bytes of TILES' scratch per thread: one batch's input rows reduced along W."""
    _, out, kernel = _promote(plan)[:3]
    return _tiles_rows(plan, kind) * kernel[1] * out[2] * KINDS[kind].itemsize


def _build_tiles(plan, kind, nt, act, inf_bits, with_indices):
    """NCHW ranks 1-3 without Indices, windows tiling the input: batches of output rows
    through flat passes (maxpool_tiles.pxi)."""
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    units = planes * out[0] * out[1]
    core = _tuning.kernels_for(Strategy.TILES, strides[2], KINDS[kind].itemsize,
                                 input_bytes=planes * math.prod(spatial) * KINDS[kind].itemsize)
    return core.MaxPoolTiles(KINDS[kind].ctype, (planes,) + spatial, (planes,) + out, kernel, strides,
                             dilations, pads_begin, taps, _tiles_rows(plan, kind), *act, inf_bits, nt,
                             chunk_size(units, nt))


def _whole_plane(plan):
    """Whether the one window covers the whole plane exactly (global pooling)."""
    return (all(o == 1 for o in plan.out_shape[2:]) and plan.kernel == plan.spatial
            and not any(plan.pads_begin) and all(d == 1 for d in plan.dilations))


def _planes_scratch(plan, kind):
    """Bytes of PLANES' scratch per thread: four buffers of the padded plane its windows read."""
    _, out, kernel, strides, dilations, _ = _promote(plan)
    rows = (out[1] - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    cols = -(-((out[2] - 1) * strides[2] + (kernel[2] - 1) * dilations[2] + 1) // strides[2]) * strides[2]
    return 4 * rows * cols * KINDS[kind].itemsize


def _build_planes(plan, kind, nt, act, inf_bits, with_indices):
    """NCHW ranks 1-2 without Indices: a plane per work item, padded into scratch (maxpool_planes.pxi)."""
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    # The windows' flat passes may come from another build (pooling._tuning); a whole-plane
    # window is a reduction, measured slower there.
    core = _core if _whole_plane(plan) else _tuning.kernels_for(Strategy.PLANES, strides[2],
                                                                  KINDS[kind].itemsize)
    return core.MaxPoolPlanes(KINDS[kind].ctype, (planes,) + spatial, (planes,) + out, kernel, strides,
                              dilations, pads_begin, taps, *act, inf_bits, nt, chunk_size(planes, nt))


def _interleaved_scratch(plan):
    """Bytes of INTERLEAVED's scratch per thread: the padded block its windows read, the block
    reduced along W, and the output block, _INTERLEAVED_BYTES per pixel (maxpool_interleaved.pxi)."""
    _, out, kernel, strides, dilations, _ = _promote(plan)
    rows = (out[1] - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    cols = (out[2] - 1) * strides[2] + (kernel[2] - 1) * dilations[2] + 1
    return (rows * cols + rows * out[2] + out[1] * out[2]) * _INTERLEAVED_BYTES


def _build_interleaved(plan, kind, nt, act, inf_bits, with_indices):
    """NCHW ranks 1-2 without Indices: blocks of planes channels-last in padded scratch
    (maxpool_interleaved.pxi)."""
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    blocks = -(-planes // (_INTERLEAVED_BYTES // KINDS[kind].itemsize))
    return _core.MaxPoolInterleaved(KINDS[kind].ctype, (planes,) + spatial, (planes,) + out, kernel,
                                    strides, dilations, pads_begin, taps, *act, inf_bits, nt,
                                    chunk_size(blocks, nt))


def _build_nhwc(plan, kind, nt, act, inf_bits, with_indices, blocks=False, core=_core):
    """NHWC, ranks 1-3: the channels-last kernel over output rows (blocks: NHWC_BLOCKS)."""
    n, c = plan.out_shape[0], plan.out_shape[-1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    x_shape, y_shape = (n,) + spatial + (c,), (n,) + out + (c,)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    rows = n * out[0] * out[1] if out[2] * c else 0  # the work items
    return _prefetching(core.MaxPoolNHWC(KINDS[kind].ctype, x_shape, y_shape, kernel, strides, dilations,
                                         pads_begin, taps, *act, inf_bits, nt, chunk_size(rows, nt),
                                         _index_code(plan, n), blocks),
                        _tuning.prefetch_nhwc(math.prod(x_shape) * KINDS[kind].itemsize, strides[1]))


def _build_nhwc_blocks(plan, kind, nt, act, inf_bits, with_indices):
    """float32 NHWC without Indices: NHWC's launch with blocks of channels in registers, from the
    AVX-512 build where a rule of pooling._tuning names it and the channels fill one of its vectors."""
    core = _tuning.kernels_for(Strategy.NHWC_BLOCKS, _promote(plan)[3][2], KINDS[kind].itemsize)
    if plan.out_shape[-1] < core.NARROW_LANES:
        core = _core
    return _build_nhwc(plan, kind, nt, act, inf_bits, with_indices, blocks=True, core=core)


def _run_nhwc_transposed(plan, kind, xk, y, indices, act, inf_bits, nt):
    """NHWC beyond the channels-last kernel's reach (rank > 3, huge images):
    pool the NCHW transpose and re-encode Indices as NHWC offsets."""
    n = len(plan.spatial)
    to_nchw = (0, n + 1) + tuple(range(1, n + 1))
    to_nhwc = (0,) + tuple(range(2, n + 2)) + (1,)
    x_nchw = np.ascontiguousarray(xk.transpose(to_nchw))
    y_nchw = np.empty(tuple(y.shape[i] for i in to_nchw), dtype=y.dtype)
    i_nchw = None if indices is None else np.empty(y_nchw.shape, dtype=np.int64)
    nchw = plan._replace(layout="NCHW", out_shape=y_nchw.shape)
    _run_separable(nchw, kind, x_nchw, y_nchw, i_nchw, act, inf_bits, nt)
    y[...] = y_nchw.transpose(to_nhwc)
    if indices is not None:
        channels, plane = x_nchw.shape[1], int(np.prod(plan.spatial))
        # An empty plane has only empty windows (-1), whatever the division gives.
        image_channel, pixel = np.divmod(i_nchw, max(plane, 1))
        image, channel = np.divmod(image_channel, max(channels, 1))
        nhwc = (image * plane + pixel) * channels + channel
        indices[...] = np.where(i_nchw < 0, -1, nhwc).transpose(to_nhwc)


def _run_separable(plan, kind, xk, y, indices, act, inf_bits, nt):
    """NCHW, any rank: pool the last axis first, then each earlier one (the contract's
    tie order), carrying the winners' flat offsets from stage to stage."""
    n = len(plan.spatial)
    planes = plan.out_shape[0] * plan.out_shape[1]
    cur, pos = xk, None
    shape = list((planes,) + plan.spatial)
    for axis in range(n - 1, -1, -1):
        a = int(np.prod(shape[: axis + 1]))
        length = shape[axis + 1]
        b = int(np.prod(shape[axis + 2:]))
        shape[axis + 1] = plan.out_shape[2 + axis]
        o = shape[axis + 1]
        last = axis == 0
        nxt = y.reshape(a, o, b) if last else np.empty((a, o, b), dtype=xk.dtype)
        nxt_pos = None
        if indices is not None:
            nxt_pos = indices.reshape(a, o, b) if last else np.empty((a, o, b), dtype=np.int64)
        mode, lo, hi = act if last else (0, act[1], act[2])
        # An empty stage input has no positions to carry (every window is empty), and the
        # kernel would index element 0 of the empty array (an IndexError with bounds checks).
        pos_in = None if pos is None or not cur.size else pos.reshape(a, length, b)
        _core.max_pool_axis[KINDS[kind].ctype](
            cur.reshape(a, length, b), pos_in,
            nxt, nxt_pos, plan.kernel[axis], plan.strides[axis], plan.dilations[axis],
            plan.pads_begin[axis], mode, lo, hi, inf_bits, nt,
        )
        cur, pos = nxt, nxt_pos


def _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin):
    """(sum(out), 2) intp: the valid taps [t0, t1) of each output position, axis by axis.

    Tap t of output o reads position o*s - pb + t*d, valid inside [0, size):
    an interval of t because positions grow with t (t0 >= t1: empty window).
    """
    parts = []
    for size, o, k, s, d, p in zip(spatial, out, kernel, strides, dilations, pads_begin):
        base = np.arange(o, dtype=np.int64) * s - p
        t0 = np.where(base >= 0, 0, (-base + d - 1) // d)
        t1 = np.where(base >= size, 0, np.minimum(k, (size - 1 - base) // d + 1))
        parts.append(np.stack([t0, t1], axis=1))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.intp)


def _buffer_rows(spatial, out, kernel, strides, dilations, itemsize, limit=_BUFFER_LIMIT):
    """Rows of the fused kernel's row ring per depth tap (a power of two), or None when one output
    row's window would take more than `limit` elements per thread (None: no
    limit) or its positions (int32) would overflow.

    A chunk of output rows reduces the input rows its windows span that the
    ring does not hold yet (of each depth slice it reads), about _tuning.buffer_bytes()
    of input at a time.  Rows one output row needs span the dilated kernel;
    with a stride longer than that, output rows share no input rows and a
    chunk is one output row, so rows in between are never reduced.
    """
    depth, height, width = spatial
    span = (kernel[1] - 1) * dilations[1] + 1
    need = max(1, min(span, height))
    brows = need
    if strides[1] <= span:
        # (Rows of the ring are out[2] wide: huge pads can make them wider than the input's.)
        per = max(1, _tuning.buffer_bytes() // max(1, kernel[0] * strides[1] * max(width, out[2]) * itemsize))
        brows = max(need, min(height, (per - 1) * strides[1] + span))
    if limit is not None and kernel[0] * need * out[2] > limit:
        return None
    brows = min(brows, max(need, ((1 << 31) - 1) // max(width, 1)))
    brows = 1 << (brows - 1).bit_length()  # a power of two: the kernel masks instead of dividing
    if brows * width >= 1 << 31 or depth >= 1 << 31:
        return None
    return brows


def _separable_peak(plan):
    """Elements of the largest intermediate _run_separable allocates for an NCHW plan: the stage
    pooling axis i (last to first) leaves (planes, D_0..D_{i-1}, O_i..O_{n-1})."""
    planes, out = plan.out_shape[0] * plan.out_shape[1], plan.out_shape[2:]
    return max((planes * math.prod(plan.spatial[:i]) * math.prod(out[i:]) for i in range(1, len(out))),
               default=0)


def _fits_int32(spatial):
    """The fused kernels track winners as int32 (positions in a few rows, depth)."""
    return int(np.prod(spatial[:-1])) < 1 << 31 and spatial[-1] < 1 << 31


# Last: the builders are defined above.
_BUILDERS = {
    Strategy.NHWC: _build_nhwc,
    Strategy.NHWC_BLOCKS: _build_nhwc_blocks,
    Strategy.PLANES: _build_planes,
    Strategy.TILES: _build_tiles,
    Strategy.INTERLEAVED: _build_interleaved,
    Strategy.ROWS_FIRST: _build_rows_first,
    Strategy.NARROW: _build_narrow,
    Strategy.FUSED: _build_fused,
    Strategy.DEPTH_FIRST: _build_depth_first,
    Strategy.DEPTH_SPLIT: _build_depth_split,
    Strategy.SEPARABLE: _build_separable,
    Strategy.NHWC_TRANSPOSED: _build_nhwc_transposed,
}
