"""MaxPool: validation per version, output shape, dispatch to the kernels (SPEC 1)."""
import functools
import math
from typing import NamedTuple

import numpy as np

from ._dispatch import core as _core
from ._attrs import (INDEX_LIMIT, cached_plan, check_size, choice, flag, int_tuple, resolve_version,
                     shape_tuple)
from ._dtypes import HALF_INF_BITS, as_kernel_array, float_to_half_bits, result_dtype
from ._outputs import output_array
from ._shapes import AUTO_PADS, pool_output
from ._threads import SMALL_INPUT, chunk_size, resolve_n_threads, split_rows

OP = "MaxPool"

# SPEC 1.1: the version that introduced each attribute, output and dtype.
_ATTRIBUTE_SINCE = {"storage_order": 8, "ceil_mode": 10, "dilations": 10}
_INDICES_SINCE = 8
_DTYPE_SINCE = {"float16": 1, "float32": 1, "float64": 1, "int8": 12, "uint8": 12, "bfloat16": 22}
LAYOUTS = ("NCHW", "NHWC")
ACTIVATIONS = ("Relu", "Clip")

# The fused kernel reduces input rows in chunks of about this many bytes (of
# each depth slice) as one long row: small enough that the chunk is still in
# L1 when pass 2 reads it back (measured 4-16 KB: float32 up to 1.3x slower at
# 16 KB), long enough that loop set-up and remainders do not dominate.
_BUFFER_BYTES = 8192
# ... but it must hold one output row's window whatever that costs; past this
# (huge dilated kernels over wide rows) the separable kernel is taken instead.
_BUFFER_LIMIT = 1 << 22


class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes.

    Two plans are equal only when they are one object, and hashed by identity:
    _launch caches launches by plan, and each cached plan is one object
    (hashing its fields took 0.16 us of every call)."""
    out_shape: tuple          # full output shape
    layout: str               # "NCHW" or "NHWC"
    spatial: tuple            # input spatial shape
    kernel: tuple
    strides: tuple
    dilations: tuple
    pads_begin: tuple
    kinds: tuple              # dtypes allowed under this version
    storage_order: int
    activation: object        # None, "Relu" or "Clip"
    activation_params: tuple

    __eq__ = object.__eq__
    __hash__ = object.__hash__


def max_pool_output_shape(x_shape, kernel_shape, *, strides=None, pads=None, dilations=None,
                          auto_pad="NOTSET", ceil_mode=False, storage_order=0,
                          return_indices=False, layout="NCHW", activation=None,
                          activation_params=None, opset=None):
    """Output shape of max_pool for an input of shape `x_shape` (same validation, no data)."""
    return _plan(shape_tuple(OP, "x_shape", x_shape), kernel_shape, strides, pads, dilations, auto_pad,
                 ceil_mode, storage_order, return_indices, layout, activation, activation_params,
                 opset).out_shape


def max_pool(x, kernel_shape, *, strides=None, pads=None, dilations=None, auto_pad="NOTSET",
             ceil_mode=False, storage_order=0, return_indices=False, layout="NCHW",
             activation=None, activation_params=None, opset=None, n_threads=None,
             out=None, indices_out=None):
    """ONNX MaxPool over an array of shape (N, C, D_1, ..., D_n), n >= 1.

    Returns y, or (y, indices) with ``return_indices=True``: indices are int64
    flat offsets into x (row-major, or column-major within each plane with
    ``storage_order=1``), -1 for a window that holds no input element.  Ties go
    to the first maximum in window order; NaN beats every number.  ``opset=K``
    enforces exactly what version K of the operator allows; the default is
    library mode (every attribute, dtype and rank).  Indices made with
    storage_order=1 are column-major encodings, so they do not round-trip
    through max_unpool.  See SPEC.md section 1 for every rule.
    """
    arr = x if type(x) is np.ndarray else np.asarray(x)
    plan = _plan(arr.shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode,
                 storage_order, return_indices, layout, activation, activation_params, opset)
    xk, kind = as_kernel_array(OP, "x", arr, plan.kinds)
    nt = resolve_n_threads(OP, n_threads, xk.size)
    y = output_array(OP, "out", out, plan.out_shape, result_dtype(arr.dtype), ("the input x", arr))
    if indices_out is not None and not return_indices:
        raise ValueError(f"{OP}: indices_out is given but return_indices is False")
    indices = (output_array(OP, "indices_out", indices_out, plan.out_shape, _INT64, ("the input x", arr),
                            ("out", y))
               if return_indices else None)
    if y.size:
        yk = y if y.dtype is xk.dtype else y.view(xk.dtype)  # 16-bit floats: as their bits
        _launch(plan, kind, nt, return_indices)(xk, yk, indices)
        if indices is not None and plan.storage_order == 1 and len(plan.spatial) > 1:
            _to_column_major(indices, plan.spatial)
    return (y, indices) if return_indices else y


@cached_plan(OP)
def _plan(x_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, storage_order,
          return_indices, layout, activation, activation_params, opset):
    version = resolve_version(OP, opset)
    choice(OP, "layout", layout, LAYOUTS)
    if len(x_shape) < 3:
        raise ValueError(
            f"{OP}: x must have rank >= 3 (N, C and at least one spatial axis), got shape {x_shape}"
        )
    spatial = x_shape[2:] if layout == "NCHW" else x_shape[1:-1]
    n = len(spatial)
    if kernel_shape is None:
        raise ValueError(f"{OP}: kernel_shape is required")
    kernel = int_tuple(OP, "kernel_shape", kernel_shape, n, 1, 1)
    strides = int_tuple(OP, "strides", strides, n, 1, 1)
    dilations = int_tuple(OP, "dilations", dilations, n, 1, 1)
    pads = int_tuple(OP, "pads", pads, 2 * n, 0, 0)
    choice(OP, "auto_pad", auto_pad, AUTO_PADS)
    if auto_pad != "NOTSET" and any(pads):
        raise ValueError(f"{OP}: pads {list(pads)} cannot be combined with auto_pad={auto_pad!r}")
    ceil_mode = flag(OP, "ceil_mode", ceil_mode)
    storage_order = flag(OP, "storage_order", storage_order)
    if storage_order == 1 and layout == "NHWC":
        raise ValueError(f"{OP}: storage_order=1 is not defined for layout 'NHWC' (Indices are NHWC offsets)")
    activation, act_params = _activation(activation, activation_params)

    kinds = tuple(_DTYPE_SINCE)
    if version is not None:
        given = {"storage_order": storage_order != 0, "ceil_mode": ceil_mode != 0,
                 "dilations": any(d != 1 for d in dilations)}
        for name, since in _ATTRIBUTE_SINCE.items():
            if given[name] and version < since:
                raise ValueError(
                    f"{OP}: attribute {name} is not in version {version} (opset {opset}); "
                    f"it needs opset >= {since}"
                )
        if return_indices and version < _INDICES_SINCE:
            raise ValueError(
                f"{OP}: output Indices is not in version {version} (opset {opset}); "
                f"it needs opset >= {_INDICES_SINCE}"
            )
        if activation is not None and layout == "NCHW":
            raise ValueError(
                f"{OP}: activation={activation!r} under opset={opset} needs layout 'NHWC' "
                "(the com.ms.internal.nhwc operator); NCHW allows it in library mode only"
            )
        kinds = tuple(k for k, since in _DTYPE_SINCE.items() if since <= version)

    out_spatial, begin, end = pool_output(OP, spatial, kernel, strides, dilations, pads,
                                          auto_pad, ceil_mode)
    out_shape = (x_shape[:2] + out_spatial if layout == "NCHW"
                 else x_shape[:1] + out_spatial + x_shape[-1:])
    check_size(OP, x_shape, "input")
    check_size(OP, out_shape)
    for i in range(n):
        # Every position the kernels compute lies within these bounds.
        reach = out_spatial[i] * strides[i] + (kernel[i] - 1) * dilations[i] + begin[i] + end[i]
        if spatial[i] + reach >= INDEX_LIMIT:
            raise ValueError(
                f"{OP}: strides/dilations/pads on axis {i} reach past 2**62; the call cannot be computed"
            )
    return _Plan(out_shape, layout, spatial, kernel, strides, dilations, begin, kinds, storage_order,
                 activation, act_params)


def _activation(activation, params):
    """(activation, params as floats) per SPEC 1.4."""
    if activation is None:
        return None, ()
    choice(OP, "activation", activation, ACTIVATIONS)
    if activation == "Relu":
        return activation, ()
    try:
        values = tuple(float(v) for v in np.asarray(params, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise TypeError(f"{OP}: activation_params for Clip must be [min, max], got {params!r}") from None
    if params is None or len(values) != 2 or not values[0] <= values[1]:
        raise ValueError(
            f"{OP}: activation_params for Clip must be [min, max] with min <= max, got {params!r}"
        )
    return activation, values


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
    if kind in HALF_INF_BITS:
        return 3, float_to_half_bits(lo, kind), float_to_half_bits(hi, kind)
    return 3, lo, hi


# The kernels' element type for each dtype kind, chosen explicitly: float16
# and bfloat16 share the uint16 one and differ only in inf_bits.
_CTYPE = {"float32": "float", "float64": "double", "int8": "int8_t", "uint8": "uint8_t",
          "float16": "uint16_t", "bfloat16": "uint16_t"}
_ITEMSIZE = {"float32": 4, "float64": 8, "int8": 1, "uint8": 1, "float16": 2, "bfloat16": 2}
_INT64 = np.dtype(np.int64)


@functools.lru_cache(maxsize=256)
def _launch(plan, kind, nt, with_indices):
    """run(xk, y, indices) for this plan, dtype kind and thread count.

    Everything that depends only on those is computed once here (the kernel
    specialisation, promoted geometry, work split, scratch shapes), so a call on
    a small input costs little more than the kernel itself.
    """
    act = _activation_bounds(plan.activation, plan.activation_params, kind)
    inf_bits = HALF_INF_BITS.get(kind, 0)
    n = len(plan.spatial)
    if plan.layout == "NHWC" and n <= 3 and _fits_int32((int(np.prod(plan.spatial)),)):
        return _launch_nhwc(plan, kind, nt, with_indices, act, inf_bits)
    if plan.layout == "NCHW" and n == 3 and plan.kernel[0] > 1 and _fits_int32(plan.spatial):
        if not with_indices and _depth_first_pays(plan, kind, nt):
            spatial, out, kernel, strides, dilations, _ = _promote(plan)
            brows = _buffer_rows(spatial, out, kernel, strides, dilations, _ITEMSIZE[kind])
            if brows is not None:
                return _launch_3d(plan, kind, nt, brows, act, inf_bits, depth_first=True)
        # With Indices, 4- and 8-byte types measured faster in the fused kernel below
        # (2x32x32x56x56 k3s2p1 float32, 2 threads: 7.7 -> 5.0 ms); 1- and 2-byte ones
        # slower (uint8 6.5 -> 7.9 ms, float16 4.6 -> 5.9 ms).
        run = None if with_indices and _ITEMSIZE[kind] >= 4 else _launch_depth_split(
            plan, kind, nt, act, inf_bits)
        if run is not None:
            return run
    if plan.layout == "NCHW" and n <= 3 and _fits_int32(plan.spatial):
        spatial, out, kernel, strides, dilations, _ = _promote(plan)
        brows = _buffer_rows(spatial, out, kernel, strides, dilations, _ITEMSIZE[kind])
        if brows is None:
            # Past its limit the fused kernel is the slower one, but the staged one's
            # intermediates can dwarf input and output (huge pads on an inner axis times a
            # long outer axis: a MemoryError for a call whose result is small): take
            # whichever needs less memory.
            full = _buffer_rows(spatial, out, kernel, strides, dilations, _ITEMSIZE[kind], limit=None)
            if full is not None and nt * kernel[0] * full * out[2] < _separable_peak(plan):
                brows = full
        if brows is not None:
            return _launch_3d(plan, kind, nt, brows, act, inf_bits)
    rare = _run_nhwc_transposed if plan.layout == "NHWC" else _run_separable
    return lambda xk, y, indices: rare(plan, xk, y, indices, act, inf_bits, nt)


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


def _launch_3d(plan, kind, nt, brows, act, inf_bits, depth_first=False):
    """NCHW, ranks 1-3: the fused two-pass kernel over (N*C) planes.

    depth_first: work items are whole output depth slices, each first reduced
    along depth where the data allows (no Indices; see _depth_first_pays).
    """
    planes = plan.out_shape[0] * plan.out_shape[1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    even = planes * math.prod(spatial) * _ITEMSIZE[kind] <= SMALL_INPUT
    if depth_first:
        rows, units = max(out[1], 1), planes * out[0]
    else:
        # Positions count from a work item's first input row, in int32.
        most = ((1 << 31) - 1) // max(spatial[2], 1)
        rows, units = split_rows(planes * out[0], out[1], nt, even=even, most=max(
            1, (most - (kernel[1] - 1) * dilations[1] - 1) // strides[1] + 1))
    x_shape, y_shape = (planes,) + spatial, (planes,) + out
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    return _core.MaxPool3d(_CTYPE[kind], x_shape, y_shape, kernel, strides, dilations, pads_begin,
                           taps, brows, rows, depth_first, *act, inf_bits, nt,
                           chunk_size(units, nt))


def _depth_first_pays(plan, kind, nt):
    """Whether 3-D MaxPool without Indices should reduce depth first.

    Each output depth slice is then the 2-D pooling of the maximum of the depth
    slices it reads (one per thread, H*W values), instead of 2-D pooling every
    input slice and combining those: with depth stride 2, half the 2-D work and
    no intermediate array.  That pays for 1- and 2-byte types, whose 2-D passes
    are compute bound (2x32x32x56x56 k3 s2 p1, 2 threads: uint8 0.81 -> 0.49 ms,
    float16 2.07 -> 1.52 ms); float32 and float64 lost (1.35 -> 1.60 ms, 2.7 ->
    3.5 ms: the depth pass only streams memory).  It also needs enough output
    slices for the threads and a slice that fits the scratch budget; the kernel
    falls back to the exact order for slices holding NaN or -0.0.
    """
    planes = plan.out_shape[0] * plan.out_shape[1]
    height, width = plan.spatial[1:]
    return (_ITEMSIZE[kind] <= 2 and planes * plan.out_shape[2] >= 4 * nt
            and height * width <= _BUFFER_LIMIT)


def _launch_depth_split(plan, kind, nt, act, inf_bits):
    """NCHW 3-D: pool every depth slice in 2-D with the fused kernel, then along
    depth with the axis kernel over contiguous rows of OH*OW values.

    Reducing W, then H, then D keeps SPEC's tie order.  Without Indices it
    measured faster than the fused kernel, which combines kd*kh rows per output
    row and reduces each depth slice again for every output depth that reads it
    (float32 2.2 vs 6.7 ms, one thread, 2x32x32x56x56 k3s2p1).
    """
    planes = plan.out_shape[0] * plan.out_shape[1]
    (depth, height, width), (out_depth, out_h, out_w) = plan.spatial, plan.out_shape[2:]
    slices = plan._replace(out_shape=(planes * depth, 1, out_h, out_w), spatial=(height, width),
                           kernel=plan.kernel[1:], strides=plan.strides[1:],
                           dilations=plan.dilations[1:], pads_begin=plan.pads_begin[1:])
    spatial, out, kernel, strides, dilations, _ = _promote(slices)
    brows = _buffer_rows(spatial, out, kernel, strides, dilations, _ITEMSIZE[kind])
    between = planes * depth * out_h * out_w
    if brows is None or between > math.prod(plan.out_shape) + planes * depth * height * width:
        # The slices' results must not dwarf input and output (huge pads across a long,
        # strided depth would make them a MemoryError for a small result).
        return None
    pool_slices = _launch_3d(slices, kind, nt, brows, (0, 0, 0), inf_bits)
    pool_depth = _core.max_pool_axis[_CTYPE[kind]]
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


def _launch_nhwc(plan, kind, nt, with_indices, act, inf_bits):
    """NHWC, ranks 1-3: the channels-last kernel over output rows."""
    n, c = plan.out_shape[0], plan.out_shape[-1]
    spatial, out, kernel, strides, dilations, pads_begin = _promote(plan)
    x_shape, y_shape = (n,) + spatial + (c,), (n,) + out + (c,)
    taps = _tap_ranges(spatial, out, kernel, strides, dilations, pads_begin)
    rows = n * out[0] * out[1] if out[2] * c else 0  # the work items
    return _core.MaxPoolNHWC(_CTYPE[kind], x_shape, y_shape, kernel, strides, dilations, pads_begin,
                             taps, *act, inf_bits, nt, chunk_size(rows, nt))


def _run_nhwc_transposed(plan, xk, y, indices, act, inf_bits, nt):
    """NHWC beyond the channels-last kernel's reach (rank > 3, huge images):
    pool the NCHW transpose and re-encode Indices as NHWC offsets."""
    n = len(plan.spatial)
    to_nchw = (0, n + 1) + tuple(range(1, n + 1))
    to_nhwc = (0,) + tuple(range(2, n + 2)) + (1,)
    x_nchw = np.ascontiguousarray(xk.transpose(to_nchw))
    y_nchw = np.empty(tuple(y.shape[i] for i in to_nchw), dtype=y.dtype)
    i_nchw = None if indices is None else np.empty(y_nchw.shape, dtype=np.int64)
    nchw = plan._replace(layout="NCHW", out_shape=y_nchw.shape)
    _run_separable(nchw, x_nchw, y_nchw, i_nchw, act, inf_bits, nt)
    y[...] = y_nchw.transpose(to_nhwc)
    if indices is not None:
        channels, plane = x_nchw.shape[1], int(np.prod(plan.spatial))
        # An empty plane has only empty windows (-1), whatever the division gives.
        image_channel, pixel = np.divmod(i_nchw, max(plane, 1))
        image, channel = np.divmod(image_channel, max(channels, 1))
        nhwc = (image * plane + pixel) * channels + channel
        indices[...] = np.where(i_nchw < 0, -1, nhwc).transpose(to_nhwc)


def _run_separable(plan, xk, y, indices, act, inf_bits, nt):
    """NCHW, any rank: pool the last axis first, then each earlier one (SPEC's
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
        _core.max_pool_axis(
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
    ring does not hold yet (of each depth slice it reads), about _BUFFER_BYTES
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
        per = max(1, _BUFFER_BYTES // max(1, kernel[0] * strides[1] * max(width, out[2]) * itemsize))
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


def _to_column_major(indices, spatial):
    """storage_order=1: re-encode each in-plane offset column-major (SPEC 1.5)."""
    plane_size = int(np.prod(spatial))
    valid = indices >= 0
    plane, pos = np.divmod(indices[valid], plane_size)
    coords = np.unravel_index(pos, spatial)
    indices[valid] = plane * plane_size + np.ravel_multi_index(coords, spatial, order="F")
