"""MaxPool's strategies: the ways the compiled kernels can compute a call, one unit each, and the
one function that chooses among them.

A call's plan (shapes and attributes, ``maxpool._plan``) and dtype kind go to `choose_strategy`,
which walks `ORDER`, the units in the order they are preferred, and takes the first whose `pays`
(the speed rule) and `serves` (what its kernel can compute at all) both hold.  The unit's `build`
turns the plan into a ``run(xk, y, indices)`` callable holding the kernel object, its geometry and
its scratch, and `launch` caches the callable per (plan, kind, threads, Indices, strategy).  Tests
force each strategy with ``max_pool(..., _strategy=...)``; a forced strategy that cannot compute
the call (`serves` is False) is a ValueError.  Which other SIMD build may run a unit's kernel is
pooling._tuning's table (`kernels_for`) to propose; a unit keeps the process's build only where the
proposed one cannot hold its call, or not in fewer blocks (`_narrow_core`, NhwcBlocks, Nhwc with
Indices, `_indices_blocks`; Planes' whole-plane windows).

Adding a strategy: a `Strategy` member, one `Unit` subclass here (its `serves`, `pays` and
`build`), its place in `ORDER`, and its section in docs/tuning.md#maxpool-strategy-choices.  The
kernels live in src/_core.pyx and the files it includes; docs/design.md maps them.
"""
import abc
import functools
import math
import types
from typing import NamedTuple

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


# ---------------------------------------------------------------------------
# Choosing and launching
# ---------------------------------------------------------------------------

class Unit(abc.ABC):
    """A MaxPool strategy: what its kernel can compute (`serves`: limits, never speed), when it is
    the one to take among those that serve (`pays`: the speed rule, measured in
    docs/tuning.md#maxpool-strategy-choices), and how a plan becomes its launch (`build`)."""
    strategy: Strategy

    @abc.abstractmethod
    def serves(self, plan, kind, with_indices):
        """Whether the unit's kernel computes this call at all."""

    def pays(self, plan, kind, nt, with_indices):
        return True

    @abc.abstractmethod
    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        """run(xk, y, indices) for this plan."""


class _EveryCall(Unit):
    """A rare path that serves every call of its layout through a runner of numpy passes and the axis
    kernel: `run(plan, kind, xk, y, indices, act, inf_bits, nt)`."""
    layout: str

    def serves(self, plan, kind, with_indices):
        return plan.layout == self.layout

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        return functools.partial(_call_runner, self.run, plan, kind, act, inf_bits, nt)


def _call_runner(run, plan, kind, act, inf_bits, nt, xk, y, indices):
    run(plan, kind, xk, y, indices, act, inf_bits, nt)


def choose_strategy(plan, kind, n_threads, with_indices):
    """The strategy for a call: the first unit of `ORDER` that pays and serves it.

    (`launch` first hands a 3-D NCHW call whose windows are one depth slice deep and keep every
    slice to this choice as the 2-D call over N*C*D planes it is: `_as_slices`.)  The last units
    (NHWC_TRANSPOSED for channels-last, SEPARABLE for NCHW) serve every call of their layout.
    """
    for unit in ORDER:
        if unit.pays(plan, kind, n_threads, with_indices) and unit.serves(plan, kind, with_indices):
            return unit.strategy
    raise AssertionError(f"{OP}: no strategy serves layout {plan.layout!r}")  # (SEPARABLE serves all NCHW)


def serves(strategy, plan, kind, with_indices):
    """Whether `strategy` can compute this call at all (limits of its kernel, not speed)."""
    return UNITS[strategy].serves(plan, kind, with_indices)


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
    if kind == "bool" and not with_indices:
        act = (2, 0.0, 1.0)  # the largest byte, clamped to 1: True where any byte is nonzero, as 0/1
    if act == _INT64_AT_MAX:  # every result is int64's maximum, which no float64 bound holds
        act = (0, 0, 0)
        run = UNITS[strategy].build(plan, kind, nt, act, KINDS[kind].key_bits, with_indices)
        run = functools.partial(_filled, run, np.iinfo(np.int64).max)
    else:
        run = UNITS[strategy].build(plan, kind, nt, act, KINDS[kind].key_bits, with_indices)
    if with_indices and plan.index_format != "onnx" and strategy not in _ENCODES:
        return functools.partial(_recoded, run, plan)
    return run


def _filled(run, value, xk, y, indices):
    """run, then every result `value` (a clamp from below at the type's maximum)."""
    run(xk, y, indices)
    y.fill(value)


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

# _activation_bounds of an int64 clamp from below at its maximum (2**63 - 1, which the kernels'
# float64 bounds cannot hold): the launch writes that value instead.
_INT64_AT_MAX = (-1, 0, 0)


@functools.lru_cache(maxsize=64)
def _activation_bounds(activation, params, kind):
    """(mode, lo, hi) for the kernels: bit 1 clamps below at lo, bit 2 above at hi.

    Bounds are in the kernel's storage type: floats round to nearest, integers
    clamp to [ceil(min), floor(max)]; a bound at or past the type's end clamps nothing
    (its bit is off), and an unsigned integer run in the signed type is passed as those bits.
    """
    if activation is None:
        return 0, 0, 0
    lo, hi = (0.0, math.inf) if activation == "Relu" else params
    info = KINDS[kind]
    if kind.startswith(("int", "uint")):
        limits = np.iinfo(kind)
        lo = math.ceil(min(max(lo, limits.min), limits.max))  # +-inf clamp to the range first
        hi = math.floor(min(max(hi, limits.min), limits.max))
        mode = (lo > limits.min) | (hi < limits.max) << 1
        if kind == "int64" and lo == limits.max:
            return _INT64_AT_MAX
        lo, hi = (lo if mode & 1 else 0), (hi if mode & 2 else 0)  # (2**63 - 1 is no float64)
        if info.signed is not None:  # the signed type's bits of the unsigned bounds
            wrap = 1 << (8 * info.itemsize)
            lo, hi = (v - wrap if v >= wrap // 2 else v for v in (lo, hi))
        return mode, float(lo), float(hi)
    if info.inf_bits:
        return 3, float_to_half_bits(lo, kind), float_to_half_bits(hi, kind)
    return 3, lo, hi


# ---------------------------------------------------------------------------
# Geometry, computed once per plan
# ---------------------------------------------------------------------------

class _Geometry(NamedTuple):
    """A plan's kernel geometry: its planes (NCHW: N*C; NHWC: the images) and the spatial axes
    padded to 3-D (`_promote`), with each output position's valid taps (`_tap_ranges`)."""
    planes: int
    spatial: tuple
    out: tuple
    kernel: tuple
    strides: tuple
    dilations: tuple
    pads_begin: tuple
    taps: np.ndarray


@functools.lru_cache(maxsize=256)
def _geometry(plan):
    """The plan's _Geometry (cached: the builders and the rules of one plan share it)."""
    promoted = _promote(plan)
    planes = plan.out_shape[0] * (plan.out_shape[1] if plan.layout == "NCHW" else 1)
    taps = _tap_ranges(*promoted)
    taps.flags.writeable = False
    return _Geometry(planes, *promoted, taps)


@functools.lru_cache(maxsize=256)
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

def _fits_int32(spatial):
    """The fused kernels track winners as int32 (positions in a few rows, depth)."""
    return int(np.prod(spatial[:-1])) < 1 << 31 and spatial[-1] < 1 << 31

def _whole_plane(plan):
    """Whether the one window covers the whole plane exactly (global pooling)."""
    return (all(o == 1 for o in plan.out_shape[2:]) and plan.kernel == plan.spatial
            and not any(plan.pads_begin) and all(d == 1 for d in plan.dilations))

def _same_shape(plan):
    """Whether the output has the input's shape with stride 1 on every axis (the "same" pools:
    k3 p1, k5 p2, k2 with the pad at one end)."""
    return plan.out_shape[2:] == plan.spatial and all(s == 1 for s in plan.strides)

def _launch_3d(plan, kind, nt, brows, act, inf_bits, depth_first=False, core=_core):
    """NCHW, ranks 1-3: the fused two-pass kernel over (N*C) planes.

    depth_first: work items are whole output depth slices, each first reduced
    along depth where the data allows (no Indices; see DepthFirst.pays).
    """
    g = _geometry(plan)
    planes, spatial, out, kernel, strides, dilations = g.planes, g.spatial, g.out, g.kernel, g.strides, g.dilations
    even = _tuning.even_split(planes * math.prod(spatial) * KINDS[kind].itemsize, nt)
    if depth_first:
        rows, units = max(out[1], 1), planes * out[0]
    else:
        # Positions count from a work item's first input row, in int32.
        most = ((1 << 31) - 1) // max(spatial[2], 1)
        rows, units = split_rows(planes * out[0], out[1], nt, even=even, most=max(
            1, (most - (kernel[1] - 1) * dilations[1] - 1) // strides[1] + 1))
    x_shape, y_shape = (planes,) + spatial, (planes,) + out
    return core.MaxPool3d(KINDS[kind].ctype, x_shape, y_shape, kernel, strides, dilations, g.pads_begin,
                           g.taps, brows, rows, depth_first, *act, inf_bits, nt,
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

def _prefetching(run, prefetch):
    """run, a launch, set to prefetch its next work item's input where the input is large enough
    to come from memory (_tuning.prefetch_rows, prefetch_nhwc)."""
    run.prefetch = prefetch
    return run

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

def _separable_peak(plan):
    """Elements of the largest intermediate _run_separable allocates for an NCHW plan: the stage
    pooling axis i (last to first) leaves (planes, D_0..D_{i-1}, O_i..O_{n-1})."""
    planes, out = plan.out_shape[0] * plan.out_shape[1], plan.out_shape[2:]
    return max((planes * math.prod(plan.spatial[:i]) * math.prod(out[i:]) for i in range(1, len(out))),
               default=0)


# ---------------------------------------------------------------------------
# The units, in the order choose_strategy tries them
# ---------------------------------------------------------------------------

class NhwcBlocks(Unit):
    """Channels-last, float32, a 16-bit float or a 2- or 4-byte integer, no Indices, at least a vector
    of channels: each output pixel's window a block of up to four channel vectors at a time, in
    registers, where NHWC reads and writes its output on every tap (include/pooling_nhwc.h;
    docs/tuning.md#nhwc_blocks-strategy).  From the AVX-512 build where a rule of pooling._tuning
    names it and the channels fill one of its vectors."""
    strategy = Strategy.NHWC_BLOCKS

    def serves(self, plan, kind, with_indices):
        return (UNITS[Strategy.NHWC].serves(plan, kind, with_indices) and not with_indices
                and plan.out_shape[-1] >= _blocks_lanes(_core, kind))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        core = _tuning.kernels_for(Strategy.NHWC_BLOCKS, _geometry(plan).strides[2], KINDS[kind].itemsize)
        if plan.out_shape[-1] < _blocks_lanes(core, kind):
            core = _core
        return _nhwc_launch(plan, kind, nt, act, inf_bits, blocks=True, core=core)


def _blocks_lanes(core, kind):
    """The fewest channels NHWC_BLOCKS takes of `kind` from the build `core` (a vector), or a count
    no call has where its kernel does not serve the kind."""
    ctype = KINDS[kind].ctype
    if ctype == "float":
        return core.NARROW_LANES
    if KINDS[kind].inf_bits or ctype == "int16_t":
        return core.NHWC_LANES_H16
    return core.NHWC_LANES_I32 if ctype == "int32_t" else math.inf


class Nhwc(Unit):
    """Channels-last, ranks 1-3 (H*W*D below 2**31): the channels-last kernel over output rows,
    every dtype, Indices in every format (maxpool_nhwc.pxi).  With Indices, from the AVX-512 build
    where a rule of pooling._tuning names it and its vectors hold the channels in fewer blocks."""
    strategy = Strategy.NHWC

    def serves(self, plan, kind, with_indices):
        return plan.layout == "NHWC" and len(plan.spatial) <= 3 and _fits_int32((math.prod(plan.spatial),))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        core = _core
        g = _geometry(plan)
        # With Indices, from another build where a rule of pooling._tuning names it and that build's
        # vectors hold the channels in fewer blocks, where the register loops run at all (an image's
        # pixels times the encoding's pixel stride below 2**31; #zen-4-nhwc-with-indices-from-the-avx-512-build)
        if with_indices and math.prod(g.spatial) * _index_code(plan, 0)[0] <= 0x7fffffff:
            other = _tuning.kernels_for(Strategy.NHWC, g.strides[2], KINDS[kind].itemsize, True)
            c = plan.out_shape[-1]
            if _indices_blocks(other, kind, c) < _indices_blocks(_core, kind, c):
                core = other
        return _nhwc_launch(plan, kind, nt, act, inf_bits, core=core)


def _indices_blocks(core, kind, c):
    """The register loops' blocks of channels per output pixel with Indices (pk_nhwc_irow_f32,
    _i32) in the build `core`: whole blocks, then single vectors, then one vector ending at c; a
    count no call has where they do not serve the kind or the channels."""
    lanes = _blocks_lanes(core, kind) if KINDS[kind].ctype in ("float", "int32_t") else math.inf
    if c < lanes:
        return math.inf
    block = core.NHWC_BLOCK * lanes
    return c // block + c % block // lanes + (c % lanes > 0)


def _nhwc_launch(plan, kind, nt, act, inf_bits, blocks=False, core=_core):
    """NHWC, ranks 1-3: the channels-last kernel over output rows (blocks: NHWC_BLOCKS)."""
    g = _geometry(plan)
    n, c = plan.out_shape[0], plan.out_shape[-1]
    x_shape, y_shape = (n,) + g.spatial + (c,), (n,) + g.out + (c,)
    rows = n * g.out[0] * g.out[1] if g.out[2] * c else 0  # the work items
    return _prefetching(core.MaxPoolNHWC(KINDS[kind].ctype, x_shape, y_shape, g.kernel, g.strides, g.dilations,
                                         g.pads_begin, g.taps, *act, inf_bits, nt, chunk_size(rows, nt),
                                         _index_code(plan, n), blocks),
                        _tuning.prefetch_nhwc(math.prod(x_shape) * KINDS[kind].itemsize, g.strides[1]))


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


class NhwcTransposed(_EveryCall):
    """Channels-last beyond the channels-last kernel's reach (rank > 3, huge images): the NCHW
    transpose through SEPARABLE, Indices re-encoded as NHWC offsets.  The rare path."""
    strategy, layout = Strategy.NHWC_TRANSPOSED, "NHWC"
    run = staticmethod(_run_nhwc_transposed)


def _depth(plan):
    """Whether an NCHW plan is 3-D with a depth kernel above 1."""
    return len(plan.spatial) == 3 and plan.kernel[0] > 1


def _three_d(plan):
    """NCHW 3-D whose positions fit the fused kernels' int32: what the depth strategies need."""
    return plan.layout == "NCHW" and len(plan.spatial) == 3 and _fits_int32(plan.spatial)


class DepthFirst(Unit):
    """NCHW 3-D with a depth kernel above 1, no Indices: each output depth slice pooled in 2-D
    from the maximum of the depth slices it reads (one H*W slice of scratch per thread, no
    intermediate array; maxpool_fused.pxi).  Pays for 1- and 2-byte types, whose 2-D passes are
    compute bound, and for the 8-byte integers, whose compares are (AVX2 has no 64-bit integer
    maximum), with at least 4 output depth slices per thread; not for 2-byte kinds (16-bit
    floats and integers) whose depth slices ROWS_FIRST computes, which DEPTH_SPLIT (or TILES' one
    pass) then does faster (docs/tuning.md#depth_first-strategy)."""
    strategy = Strategy.DEPTH_FIRST

    def serves(self, plan, kind, with_indices):
        return (_three_d(plan) and not with_indices and plan.spatial[1] * plan.spatial[2] <= _BUFFER_LIMIT
                and _buffer_rows(*_promote(plan)[:5], KINDS[kind].itemsize) is not None)

    def pays(self, plan, kind, nt, with_indices):
        if not (_depth(plan) and not with_indices and (KINDS[kind].itemsize <= 2 or kind in ("int64", "uint64"))
                and plan.out_shape[0] * plan.out_shape[1] * plan.out_shape[2] >= 4 * nt):
            return False
        # 2-byte kinds (16-bit floats and integers) only where ROWS_FIRST cannot pool the depth slices
        return not (KINDS[kind].itemsize == 2 and _rows_first(_slices_plan(plan, (1, 1)), kind))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        brows = _buffer_rows(*_promote(plan)[:5], KINDS[kind].itemsize)
        return _launch_3d(plan, kind, nt, brows, act, inf_bits, depth_first=True)


class Tiles(Unit):
    """NCHW ranks 1-3 without Indices whose windows tile the input exactly: batches of output rows
    through flat passes, no borders and no per-plane set-up (maxpool_tiles.pxi).  Chosen for a W
    kernel of 2, the one with a loop of whole-vector loads and shuffles, not for a whole-plane
    window (PLANES' reduction) (docs/tuning.md#tiles-strategy)."""
    strategy = Strategy.TILES

    def serves(self, plan, kind, with_indices):
        return (plan.layout == "NCHW" and not with_indices and len(plan.spatial) <= 3 and _tiles(plan)
                and _tiles_scratch(plan, kind) <= _PLANES_LIMIT)

    def pays(self, plan, kind, nt, with_indices):
        return not with_indices and plan.kernel[-1] == 2 and not _whole_plane(plan)

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        g = _geometry(plan)
        units = g.planes * g.out[0] * g.out[1]
        core = _tuning.kernels_for(Strategy.TILES, g.strides[2], KINDS[kind].itemsize,
                                   input_bytes=g.planes * math.prod(g.spatial) * KINDS[kind].itemsize)
        return core.MaxPoolTiles(KINDS[kind].ctype, (g.planes,) + g.spatial, (g.planes,) + g.out, g.kernel,
                                 g.strides, g.dilations, g.pads_begin, g.taps, _tiles_rows(plan, kind), *act,
                                 inf_bits, nt, chunk_size(units, nt))


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


class Narrow(Unit):
    """float32, 16-bit float and 2- and 4-byte integer NCHW ranks 1-2 without Indices on narrow
    planes: each input row reduced along W in one vector per strip of columns, then each output row
    from its window's reduced rows, in registers (include/pooling_narrow.h, maxpool_narrow.pxi).  Serves rows of at
    most three vectors of the build it runs from (`_narrow_core`), a W stride of 1 and at most
    _NARROW_MAX_K taps along W; pays for stride 1 with an output of the input's shape, windows of at
    most 5 taps per axis, 2-tap windows only on rows of at most two vectors and 1-tap ones on rows one
    vector holds, and 2-byte kinds on three vectors only where ROWS_FIRST does not serve
    (docs/tuning.md#narrow-strategy)."""
    strategy = Strategy.NARROW

    def serves(self, plan, kind, with_indices):
        if (plan.layout != "NCHW" or len(plan.spatial) > 2 or with_indices
                or (KINDS[kind].ctype not in _ROWS_CTYPES and not KINDS[kind].inf_bits)
                or min(plan.spatial) == 0 or min(plan.out_shape) == 0):
            return False
        kernel, strides = _promote(plan)[2:4]
        return _narrow_core(plan, kind) is not None and strides[2] == 1 and kernel[2] <= _NARROW_MAX_K

    def pays(self, plan, kind, nt, with_indices):
        if with_indices or not _same_shape(plan) or max(plan.kernel) > 5:
            return False
        core = _narrow_core(plan, kind)
        if core is None:
            return False
        lanes = _narrow_lanes(core, kind)[0]
        # (2-tap windows on rows of at most two vectors, 1-tap ones on one; 2-byte kinds on three
        # vectors only where ROWS_FIRST does not serve the window: ROWS_FIRST was as fast on one CPU)
        taps = min(plan.kernel)
        return ((taps >= 3 or plan.spatial[-1] <= lanes or (taps == 2 and plan.spatial[-1] <= 2 * lanes))
                and (KINDS[kind].itemsize != 2 or plan.spatial[-1] <= 2 * lanes or not _rows_first(plan, kind)))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        g = _geometry(plan)
        return _narrow_core(plan, kind).MaxPoolNarrow(KINDS[kind].ctype, (g.planes,) + g.spatial,
                                                      (g.planes,) + g.out, g.kernel, g.strides, g.dilations,
                                                      g.pads_begin, g.taps, *act, inf_bits, nt,
                                                      chunk_size(g.planes, nt))


def _narrow_lanes(core, kind):
    """NARROW's (lanes, widest rows) of `kind` in the build `core`: float32's, or the 2-byte kinds'
    (16-bit floats' keys, int16 and uint16) or the 4-byte integers' (vectors of at most 32 bytes, so
    the same in the AVX2 and AVX-512 builds)."""
    if KINDS[kind].itemsize == 2:
        return core.NARROW_LANES_H16, core.NARROW_WIDTH_H16
    if KINDS[kind].ctype == "int32_t":
        return core.NARROW_LANES_I32, core.NARROW_WIDTH_I32
    return core.NARROW_LANES, core.NARROW_WIDTH


def _narrow_core(plan, kind):
    """The build NARROW runs from, or None where none holds the rows: of the process's build and
    the AVX-512 one (where a rule of pooling._tuning names NARROW for this CPU), the one whose strips
    hold the rows in the fewest lanes, then the fewest strips, then the process's
    (docs/tuning.md#zen-5-avx-512-kernels)."""
    spatial, out = _promote(plan)[:2]
    width = max(spatial[2], out[2])
    best, best_key = None, None
    for rank, core in enumerate((_core, _tuning.kernels_for(Strategy.NARROW, 1, 4))):
        lanes, widest = _narrow_lanes(core, kind)
        if width <= widest:
            strips = -(-width // lanes)
            key = (strips * lanes, strips, rank)
            if best_key is None or key < best_key:
                best, best_key = core, key
    return best


class RowsFirst(Unit):
    """float32, 16-bit float and 2- and 4-byte integer NCHW ranks 1-2 without Indices: a plane per
    work item, each output row's window rows reduced into one padded row, then read off it in registers
    (include/pooling_rows.h, maxpool_rows.pxi).  Chosen for 2-D rows up to _tuning.rows_chosen() long,
    but not 16-bit planes INTERLEAVED takes (docs/tuning.md#rows_first-strategy); DEPTH_SPLIT uses it
    for its 2-D stage where it serves."""
    strategy = Strategy.ROWS_FIRST

    def serves(self, plan, kind, with_indices):
        return plan.layout == "NCHW" and len(plan.spatial) <= 2 and not with_indices and _rows_first(plan, kind)

    def pays(self, plan, kind, nt, with_indices):
        # (16-bit planes of at most 64 values, 8x8, stay INTERLEAVED's: 0.90-0.93 of this time)
        return (not with_indices and len(plan.spatial) == 2 and plan.spatial[-1] <= _tuning.rows_chosen()
                and not (KINDS[kind].inf_bits and math.prod(plan.spatial) <= 64))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        g = _geometry(plan)
        out, kernel, strides, dilations, pads_begin = g.out, g.kernel, g.strides, g.dilations, g.pads_begin
        # The input row of each output row's four taps: a tap past the kernel or in the padding
        # reads the window's first valid row again.
        t0, t1 = g.taps[out[0]:out[0] + out[1]].T
        t = np.minimum(np.arange(4), kernel[1] - 1)
        t = np.where((t >= t0[:, None]) & (t < t1[:, None]), t, t0[:, None])
        rows = np.arange(out[1])[:, None] * strides[1] - pads_begin[1] + t * dilations[1]
        return _prefetching(_core.MaxPoolRows(KINDS[kind].ctype, (g.planes,) + g.spatial, (g.planes,) + out,
                                              kernel, strides, dilations, pads_begin, g.taps,
                                              np.ascontiguousarray(rows, dtype=np.intp), *act, inf_bits, nt,
                                              chunk_size(g.planes, nt)),
                            _tuning.prefetch_rows(g.planes * math.prod(g.spatial) * KINDS[kind].itemsize))


# The kernel types ROWS_FIRST takes besides 16-bit floats: float32, and the 2- and 4-byte integers (the
# unsigned ones run in their signed type).
_ROWS_CTYPES = ("float", "int16_t", "int32_t")


def _rows_first(plan, kind):
    """Whether ROWS_FIRST's kernel computes this call (include/pooling_rows.h): float32, a
    16-bit float or a 2- or 4-byte integer, windows of at most 3x3, along W stride 1 or a 2- or
    3-wide stride 2 without dilation, or k4 s4 along W (up to 4 rows); input and output rows at
    least 8 long (2-byte rows under the build's int16 lanes by 16-byte vectors), no window wholly
    in the padding."""
    half = KINDS[kind].inf_bits != 0
    if (KINDS[kind].ctype not in _ROWS_CTYPES and not half) or min(plan.out_shape) == 0:
        return False
    lanes = _core.ROWS_MIN_H16 if KINDS[kind].itemsize == 2 else _core.ROWS_MIN
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    kh, kw = kernel[1:]
    s, d = strides[2], dilations[2]
    small = kh <= 3 and kw <= 3 and (s == 1 or (s == 2 and kw >= 2 and d == 1))
    if (not (small or (kh <= 4 and kw == 4 and s == 4 and d == 1))
            or min(spatial[2], out[2]) < lanes or 4 * (spatial[2] + 64) > _PLANES_LIMIT):
        return False
    taps = _tap_ranges(spatial[1:], out[1:], kernel[1:], strides[1:], dilations[1:], pads_begin[1:])
    return bool(np.all(taps[:, 0] < taps[:, 1]))


class Interleaved(Unit):
    """NCHW ranks 1-2 without Indices: blocks of planes copied channels-last into padded scratch,
    so every tap is one vector combine of whole pixels (maxpool_interleaved.pxi).  Chosen for
    planes of at most 64 values, not a whole-plane window (docs/tuning.md#interleaved-strategy)."""
    strategy = Strategy.INTERLEAVED

    def serves(self, plan, kind, with_indices):
        return (plan.layout == "NCHW" and len(plan.spatial) <= 2 and not with_indices and min(plan.spatial) > 0
                and min(plan.out_shape) > 0 and _interleaved_scratch(plan) <= _PLANES_LIMIT)

    def pays(self, plan, kind, nt, with_indices):
        return (not with_indices and len(plan.spatial) <= 2 and math.prod(plan.spatial) <= 64
                and not _whole_plane(plan))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        g = _geometry(plan)
        blocks = -(-g.planes // (_INTERLEAVED_BYTES // KINDS[kind].itemsize))
        return _core.MaxPoolInterleaved(KINDS[kind].ctype, (g.planes,) + g.spatial, (g.planes,) + g.out, g.kernel,
                                        g.strides, g.dilations, g.pads_begin, g.taps, *act, inf_bits, nt,
                                        chunk_size(blocks, nt))


def _interleaved_scratch(plan):
    """Bytes of INTERLEAVED's scratch per thread: the padded block its windows read, the block
    reduced along W, and the output block, _INTERLEAVED_BYTES per pixel (maxpool_interleaved.pxi)."""
    _, out, kernel, strides, dilations, _ = _promote(plan)
    rows = (out[1] - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    cols = (out[2] - 1) * strides[2] + (kernel[2] - 1) * dilations[2] + 1
    return (rows * cols + rows * out[2] + out[1] * out[2]) * _INTERLEAVED_BYTES


class DepthSplit(Unit):
    """NCHW 3-D: every depth slice pooled in 2-D with the fused kernel (ROWS_FIRST's where it
    serves the slices, without Indices), then along depth with the axis kernel over contiguous rows
    of OH*OW values (W, then H, then D keeps the contract's tie order): each depth slice reduced
    once, not once per output depth that reads it.  Chosen for depth kernels above 1, except Indices
    with 4- and 8-byte types (FUSED) (docs/tuning.md#depth_split-strategy)."""
    strategy = Strategy.DEPTH_SPLIT

    def serves(self, plan, kind, with_indices):
        return _three_d(plan) and _depth_slices(plan, kind) is not None

    def pays(self, plan, kind, nt, with_indices):
        return _depth(plan) and not (with_indices and KINDS[kind].itemsize >= 4)

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        slices, brows = _depth_slices(plan, kind)
        planes = plan.out_shape[0] * plan.out_shape[1]
        depth = plan.spatial[0]
        out_depth, out_h, out_w = plan.out_shape[2:]
        if not with_indices:
            # The slices as the 2-D call they are, through the same choice (ROWS_FIRST, PLANES for
            # small planes, ...); the activation waits for the depth pass.
            pool_slices = launch(slices._replace(activation=None, activation_params=()), kind, nt, False)
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
                       None if indices is None else indices.reshape(after), *depth_geometry, *act, inf_bits,
                       nt)
        return run


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


class Planes(Unit):
    """NCHW ranks 1-2 without Indices: a plane per work item, padded into scratch, flat passes with
    window doubling (maxpool_planes.pxi).  Chosen where its scratch is within one core's L2
    (_tuning.planes_chosen) for a whole-plane window, or stride 1 with a kernel of 4 or more on an
    axis, or stride 1 on a plane of at most 256 values (2-D: 1296, 36x36, for 1- to 4-byte types in
    the AVX2 build) (docs/tuning.md#planes-strategy)."""
    strategy = Strategy.PLANES

    def serves(self, plan, kind, with_indices):
        return (plan.layout == "NCHW" and len(plan.spatial) <= 2 and not with_indices
                and min(plan.spatial) > 0 and min(plan.out_shape) > 0
                and _planes_scratch(plan, kind) <= _PLANES_LIMIT)

    def pays(self, plan, kind, nt, with_indices):
        if with_indices or len(plan.spatial) > 2 or _planes_scratch(plan, kind) > _tuning.planes_chosen():
            return False
        if _whole_plane(plan):
            return True  # a reduction per plane
        if not all(s == 1 for s in plan.strides):
            return False
        plane = math.prod(plan.spatial)
        return (max(plan.kernel) >= 4 or plane <= 256
                or (plane <= 1296 and len(plan.spatial) == 2 and KINDS[kind].itemsize <= 4
                    and _dispatch.level == "avx2"))

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        g = _geometry(plan)
        # The windows' flat passes may come from another build (pooling._tuning); a whole-plane
        # window is a reduction, measured slower there.
        core = _core if _whole_plane(plan) else _tuning.kernels_for(Strategy.PLANES, g.strides[2],
                                                                      KINDS[kind].itemsize)
        return core.MaxPoolPlanes(KINDS[kind].ctype, (g.planes,) + g.spatial, (g.planes,) + g.out, g.kernel,
                                  g.strides, g.dilations, g.pads_begin, g.taps, *act, inf_bits, nt,
                                  chunk_size(g.planes, nt))


def _planes_scratch(plan, kind):
    """Bytes of PLANES' scratch per thread: four buffers of the padded plane its windows read."""
    _, out, kernel, strides, dilations, _ = _promote(plan)
    rows = (out[1] - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    cols = -(-((out[2] - 1) * strides[2] + (kernel[2] - 1) * dilations[2] + 1) // strides[2]) * strides[2]
    return 4 * rows * cols * KINDS[kind].itemsize


class Fused(Unit):
    """NCHW ranks 1-3, every dtype, Indices in every format: the general kernel, a ring of each
    output row's window rows (maxpool_fused.pxi).  Past _BUFFER_LIMIT elements of ring per thread
    it is slower than SEPARABLE, but SEPARABLE's intermediates can dwarf input and output, so it
    is chosen whenever its ring is the smaller (`_fused_rows`)."""
    strategy = Strategy.FUSED

    def serves(self, plan, kind, with_indices):
        return plan.layout == "NCHW" and len(plan.spatial) <= 3 and _fused_rows(plan, kind, None) is not None

    def pays(self, plan, kind, nt, with_indices):
        return _fused_rows(plan, kind, nt) is not None

    def build(self, plan, kind, nt, act, inf_bits, with_indices):
        brows = _fused_rows(plan, kind, nt)
        if brows is None:  # forced past the rule that prefers SEPARABLE's memory use
            brows = _fused_rows(plan, kind, None)
        core = _tuning.kernels_for(Strategy.FUSED, _geometry(plan).strides[2], KINDS[kind].itemsize,
                                   with_indices)
        return _launch_3d(plan, kind, nt, brows, act, inf_bits, core=core)


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


class Separable(_EveryCall):
    """NCHW, any rank: the last axis first, then each earlier one (the contract's tie order),
    carrying the winners' flat offsets from stage to stage.  Serves every NCHW call: the rare
    path (rank > 3, huge dilated windows)."""
    strategy, layout = Strategy.SEPARABLE, "NCHW"
    run = staticmethod(_run_separable)


# The units in the order choose_strategy tries them (the channels-last ones first: the NCHW ones
# serve no channels-last call, and NHWC_TRANSPOSED serves every one).
ORDER = (NhwcBlocks(), Nhwc(), NhwcTransposed(), DepthFirst(), Tiles(), Narrow(), RowsFirst(), Interleaved(),
         DepthSplit(), Planes(), Fused(), Separable())
UNITS = types.MappingProxyType({unit.strategy: unit for unit in ORDER})  # strategy -> its unit, read-only
