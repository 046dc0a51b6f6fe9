"""The slow twin of pooling's public functions, written straight from docs/behaviour.md.

``pooling.reference`` has one function for each public one, with the same
name and the same arguments (bottleneck's ``slow`` module is the model):
``max_pool``, ``max_unpool``, ``col2im`` and the three ``*_output_shape``
functions.  A test can therefore pair the two by name and call both with one
argument list (short attribute forms, ``layout="NHWC"``, ``out=`` included).

What it shares with the fast path is the *argument checking*: each call first
runs the public operator's own validation (its ``_plan``), so bad input raises
exactly the public ValueError / TypeError.  Everything the operators compute
is its own and deliberately plain:

* output shapes and window geometry from the formulas of behaviour.md §2.3, §3 and §4;
* MaxPool's winner as the contract's scan of every window's taps in order keeps it (a
  later tap replaces the running maximum only if strictly greater, NaN beats numbers, the
  first NaN wins): the window's first NaN, or else its first tap equal to its maximum;
  Indices encoded from the winner's coordinates by the formulas of behaviour.md §2.5
  (row- or column-major planes, NHWC offsets);
* the fused activation's clamping, with its bounds rounded by this module;
* MaxUnpool's scatter with the last write winning, Col2Im's accumulation in
  the contract's term order;
* float16 / bfloat16 rounding (``float16_bits``, ``bfloat16_bits``) from
  numpy's float16 and integer operations on float32 bits, sharing nothing with
  ``pooling._dtypes`` or the compiled kernels.

It is slow on purpose (whole windows are materialised, loops run in Python)
and shares no shortcut with the kernels; ``n_threads`` is validated like the public
argument and otherwise ignored.  ``out=`` / ``indices_out=`` are checked like the
public ones and, as there, filled and returned.
"""
import math

import numpy as np

from ._attrs import int_tuple, shape_tuple
from ._dtypes import checked_kind, result_dtype
from ._outputs import output_array
from ._threads import resolve_n_threads
from .indices import check_format
from .col2im import _plan as _col2im_plan
from .maxpool import _plan as _max_pool_plan
from .maxunpool import _plan as _max_unpool_plan

__all__ = ["bfloat16_bits", "col2im", "col2im_output_shape", "convert_indices", "float16_bits", "max_pool",
           "max_pool_grad", "max_pool_output_shape", "max_unpool", "max_unpool_output_shape"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


# -- 16-bit float rounding ------------------------------------------------------------------------

def float16_bits(values):
    """uint16 bit patterns of `values` (any real floats) rounded to nearest even in float16.

    numpy's float64 -> float16 cast rounds once, directly (no double rounding
    through float32); overflow gives +-inf, NaN stays NaN with its sign.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.float16).view(np.uint16)


def bfloat16_bits(values):
    """uint16 bit patterns of `values` (any real floats) rounded to nearest even in bfloat16.

    Rounded once from the exact value: float64 is first narrowed to float32
    with round-to-odd (truncate, then set the lowest bit if anything was cut
    off), which keeps enough bits for the final round to nearest even on the
    float32 bits to be correct.  Overflow gives +-inf; NaN stays a quiet NaN
    with its sign and top payload bits.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.asarray(values, dtype=np.float64)  # (a NaN of another float type warns as it widens)
        f = v.astype(np.float32)
        inexact = np.isfinite(v) & (f.astype(np.float64) != v)
        # Round-to-odd: step back towards zero where float32 rounding went outwards ...
        outward = inexact & (np.abs(f.astype(np.float64)) > np.abs(v))
        f = np.where(outward, np.nextafter(f, np.copysign(np.float32(0), f)), f)
    bits = np.atleast_1d(f).view(np.uint32).astype(np.uint64).reshape(np.shape(f))
    bits = np.where(inexact, bits | 1, bits)  # ... and make the cut visible as an odd last bit
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return np.where(nan, (bits >> 16) | 0x0040, rounded).astype(np.uint16)


# -- element bits and values ----------------------------------------------------------------------

def _native(arr):
    """`arr` in native byte order and C order; a structured bfloat16 as its uint16 bits."""
    dtype = arr.dtype
    if dtype.fields is not None:  # a structured bfloat16: its one field holds the bits
        arr, dtype = arr.view(dtype.fields["bfloat16"][0]), dtype.fields["bfloat16"][0]
    if dtype.byteorder not in "=|":
        arr = arr.astype(dtype.newbyteorder("="))  # by value: the bytes come back swapped
    return np.ascontiguousarray(arr)


def _bits(arr):
    """The elements of `arr` (at most 8 bytes each) as native-order unsigned integers, C order."""
    return _native(arr).view(f"u{arr.dtype.itemsize}")


_INTEGERS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def _order_values(bits, kind):
    """Values of element `bits` in an order-exact dtype for every MaxPool dtype: float64 (NaN kept
    as NaN) for the floats, the integers as they are, bool as 0/1 (any nonzero byte is True)."""
    if kind in _INTEGERS:
        return bits.view(kind)
    if kind == "bool":
        return (bits != 0).astype(np.uint8)
    with np.errstate(invalid="ignore"):  # signalling NaNs stay NaN: all that ordering needs
        if kind == "bfloat16":
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return bits.view({"float16": np.float16, "float32": np.float32,
                          "float64": np.float64}[kind]).astype(np.float64)


# -- MaxPool --------------------------------------------------------------------------------------

def _pool_geometry(x_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, layout):
    """(spatial, kernel, strides, dilations, output spatial, pads_begin) per behaviour.md §2.3."""
    spatial = tuple(x_shape[2:] if layout == "NCHW" else x_shape[1:-1])
    n = len(spatial)
    kernel = int_tuple("MaxPool", "kernel_shape", kernel_shape, n, 1, 1)
    strides = int_tuple("MaxPool", "strides", strides, n, 1, 1)
    dilations = int_tuple("MaxPool", "dilations", dilations, n, 1, 1)
    pads = int_tuple("MaxPool", "pads", pads, 2 * n, 0, 0)
    out, begin = [], []
    for i in range(n):
        d_in, k, s, d = spatial[i], kernel[i], strides[i], dilations[i]
        eff = (k - 1) * d + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-d_in // s)
            total = max(0, (o - 1) * s + eff - d_in)
            pb = total // 2 if auto_pad == "SAME_UPPER" else (total + 1) // 2
        else:
            pb, pe = (0, 0) if auto_pad == "VALID" else (pads[i], pads[n + i])
            if ceil_mode:
                o = -(-(d_in + pb + pe - eff) // s) + 1
                if (o - 1) * s >= d_in + pb:
                    o -= 1
            else:
                o = (d_in + pb + pe - eff) // s + 1
        if o < 0:
            raise ValueError(f"MaxPool: output dimension {i} would be {o} (twin, behaviour.md §2.3)")
        out.append(o)
        begin.append(pb)
    return spatial, kernel, strides, dilations, tuple(out), tuple(begin)


def max_pool_output_shape(x_shape, kernel_shape, *, strides=None, pads=None, dilations=None,
                          auto_pad="NOTSET", ceil_mode=False, storage_order=0,
                          return_indices=False, layout="NCHW", activation=None,
                          activation_params=None, opset=None):
    """Output shape of max_pool from behaviour.md §2.3's formulas.

    A negative output dimension is this twin's own ValueError (raised before
    the public validation runs); every other error is the public one.
    """
    x_shape = shape_tuple("MaxPool", "x_shape", x_shape)
    geometry = None
    if len(x_shape) >= 3 and layout in ("NCHW", "NHWC"):
        try:
            geometry = _pool_geometry(x_shape, kernel_shape, strides, pads, dilations, auto_pad,
                                      bool(ceil_mode), layout)
        except (TypeError, ValueError) as error:
            if "twin" in str(error):
                raise  # a negative output dimension, found by the formulas here
            # any other bad attribute: the public validation below names it
    _max_pool_plan(x_shape, kernel_shape=kernel_shape, strides=strides, pads=pads, dilations=dilations,
                   auto_pad=auto_pad, ceil_mode=ceil_mode, storage_order=storage_order,
                   return_indices=return_indices, layout=layout, activation=activation,
                   activation_params=activation_params, opset=opset, index_format="onnx")
    if geometry is None:  # (not reached: the validation above rejects what the formulas cannot take)
        geometry = _pool_geometry(x_shape, kernel_shape, strides, pads, dilations, auto_pad,
                                  bool(ceil_mode), layout)
    out = geometry[4]
    return (x_shape[:2] + out) if layout == "NCHW" else (x_shape[:1] + out + x_shape[-1:])


def max_pool(x, kernel_shape, *, strides=None, pads=None, dilations=None, auto_pad="NOTSET",
             ceil_mode=False, storage_order=0, return_indices=False, layout="NCHW",
             activation=None, activation_params=None, opset=None, n_threads=None,
             out=None, indices_out=None, index_format="onnx"):
    """Twin of pooling.max_pool: y, or (y, indices) with return_indices (behaviour.md §2).

    Each window's winner is the one behaviour.md §2.4's scan of its taps in lexicographic order
    keeps: its first NaN, or else its first tap equal to its maximum. Indices are encoded from
    the winner's coordinates (behaviour.md §2.5).
    """
    arr = np.asarray(x)
    attrs = dict(strides=strides, pads=pads, dilations=dilations, auto_pad=auto_pad, ceil_mode=ceil_mode,
                 storage_order=storage_order, return_indices=return_indices, layout=layout,
                 activation=activation, activation_params=activation_params, opset=opset)
    out_shape = max_pool_output_shape(arr.shape, kernel_shape, **attrs)
    plan = _max_pool_plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads, dilations=dilations,
                          auto_pad=auto_pad, ceil_mode=ceil_mode, storage_order=storage_order,
                          return_indices=return_indices, layout=layout, activation=activation,
                          activation_params=activation_params, opset=opset, index_format=index_format)
    kind = checked_kind("MaxPool", "x", arr.dtype, plan.kinds)
    if kind == "bool" and activation is not None:
        raise ValueError(f"MaxPool: activation={activation!r} is not defined for bool x")
    resolve_n_threads("MaxPool", n_threads, arr.size)  # validated, then ignored
    y_out = output_array("MaxPool", "out", out, out_shape, result_dtype(arr.dtype), ("the input x", arr))
    if indices_out is not None and not return_indices:
        raise ValueError("MaxPool: indices_out is given but return_indices is False")
    i_out = (output_array("MaxPool", "indices_out", indices_out, out_shape, np.dtype(np.int64),
                          ("the input x", arr), ("out", y_out)) if return_indices else None)

    spatial, kernel, strides, dilations, out_spatial, begin = _pool_geometry(
        arr.shape, kernel_shape, strides, pads, dilations, auto_pad, bool(ceil_mode), layout)
    n = len(spatial)
    bits = _bits(arr)
    if layout == "NHWC":
        bits = np.moveaxis(bits, -1, 1)  # computed as (N, C, spatial); encoded in NHWC below
    batch, channels = bits.shape[:2]
    values = _order_values(bits, kind)

    # Tap positions p_i = o_i*s_i - pb_i + t_i*d_i on the grid (O_1..O_n, K_1..K_n):
    # flattening the K axes row-major gives the contract's lexicographic tap order.
    grid = np.meshgrid(*[np.arange(o) for o in out_spatial], *[np.arange(k) for k in kernel],
                       indexing="ij")
    pos = [grid[i] * strides[i] - begin[i] + grid[n + i] * dilations[i] for i in range(n)]
    n_out, n_taps = math.prod(out_spatial), math.prod(kernel)
    pos = [p.reshape(n_out, n_taps) for p in pos]
    inside = np.ones((n_out, n_taps), bool)
    for i in range(n):
        inside &= (pos[i] >= 0) & (pos[i] < spatial[i])
    # Each tap's offset in its plane, row-major (0 for a tap in the padding, which never wins).
    offset = np.zeros((n_out, n_taps), np.int64)
    for i in range(n):
        offset = offset * spatial[i] + np.where(inside, pos[i], 0)
    planes = batch * channels
    plane_bits = bits.reshape(planes, math.prod(spatial))
    plane_values = values.reshape(planes, math.prod(spatial))

    # The winner (behaviour.md §2.4's scan of the taps in order, where a tap replaces the winner
    # when it is NaN and the winner is not, or strictly greater): the first NaN among the valid
    # taps, or else the first valid tap equal to their maximum (-0.0 and 0.0 are equal).  Planes
    # and windows go in groups of about 2**22 taps (or one window's taps, if more).
    have = np.broadcast_to(inside.any(axis=-1), (planes, n_out))
    any_tap = bool(have.any())  # else the plane may be empty: nothing to gather from it
    winner = np.zeros((planes, n_out), np.int64)  # the winning tap's offset in its plane
    lowest = -np.inf if values.dtype.kind == "f" else np.iinfo(values.dtype).min
    planes_per_group = max(1, (1 << 22) // max(1, n_taps))
    windows_per_group = max(1, (1 << 22) // max(1, min(planes, planes_per_group) * n_taps))
    for q in range(0, planes if any_tap else 0, planes_per_group):
        for w in range(0, n_out, windows_per_group):
            window_offsets = offset[w:w + windows_per_group]  # (windows, taps)
            valid = inside[w:w + windows_per_group]
            v = plane_values[q:q + planes_per_group, window_offsets]  # (planes, windows, taps)
            nan = np.isnan(v) & valid
            valid_number = valid & ~nan
            top = np.max(np.where(valid_number, v, lowest), axis=-1, keepdims=True)
            tap = np.where(nan.any(axis=-1), nan.argmax(axis=-1), (valid_number & (v == top)).argmax(axis=-1))
            winner[q:q + planes_per_group, w:w + windows_per_group] = window_offsets[np.arange(len(valid)), tap]
    best_bits = np.take_along_axis(plane_bits, winner, axis=1) if any_tap else np.zeros_like(winner, bits.dtype)

    empty = {"float16": 0xFC00, "bfloat16": 0xFF80, "float32": 0xFF800000, "float64": 0xFFF0000000000000,
             "int8": 0x80, "int16": 0x8000, "int32": 0x80000000, "int64": 0x8000000000000000}.get(kind, 0)
    if kind == "bool":  # the winner as 0/1, whatever its byte
        best_bits = (best_bits != 0).astype(bits.dtype)
    y = np.where(have, best_bits, np.array(empty, bits.dtype)).reshape(batch, channels, n_out)
    if activation is not None:
        y = _clamp(y, kind, activation, plan.activation_params)
    y = y.reshape((batch, channels) + out_spatial)
    if layout == "NHWC":
        y = np.moveaxis(y, 1, -1)
    y_out[...] = y.view(y_out.dtype)
    if not return_indices:
        return y_out

    # behaviour.md §2.5 and §6: the winner's flat offset in X as stored (plane-major, or NHWC),
    # or its position in another index format.
    image = np.arange(batch).reshape(batch, 1, 1)
    channel = np.arange(channels).reshape(1, channels, 1)
    pixel, plane = 0, math.prod(spatial)
    win = np.unravel_index(winner.reshape(batch, channels, n_out), spatial) if any_tap else [0] * n
    if storage_order == 1:  # column-major inside the plane: p_i times prod_{j<i} D_j
        for i in range(n):
            pixel = pixel + win[i] * math.prod(spatial[:i])
    else:
        for i in range(n):
            pixel = pixel + win[i] * math.prod(spatial[i + 1:])
    if index_format == "plane":
        index = pixel + 0 * (image + channel)
    elif index_format == "tf":
        index = pixel * channels + channel + 0 * image
    elif index_format == "tf_batch" or layout == "NHWC":
        index = (image * plane + pixel) * channels + channel
    else:
        index = (image * channels + channel) * plane + pixel
    index = np.where(have.reshape(batch, channels, n_out), index, -1).reshape((batch, channels) + out_spatial)
    if layout == "NHWC":
        index = np.moveaxis(index, 1, -1)
    i_out[...] = index
    return y_out, i_out


def _clamp(y, kind, activation, params):
    """behaviour.md §2.4's activation on element bits `y`: min(max(y, lo), hi); NaN stays NaN."""
    lo, hi = (0.0, math.inf) if activation == "Relu" else (float(params[0]), float(params[1]))
    if kind in _INTEGERS:
        info = np.iinfo(kind)
        lo = math.ceil(min(max(lo, info.min), info.max))
        hi = math.floor(min(max(hi, info.min), info.max))
        v = y.view(kind)
        return np.minimum(np.maximum(v, np.array(lo, kind)), np.array(hi, kind)).view(y.dtype)
    if kind == "float16":
        lo_bits, hi_bits = float16_bits([lo, hi])
    elif kind == "bfloat16":
        # Rounded from the float32 nearest to each bound: the library's documented rule
        # (behaviour.md §2.4 is silent; exact for every bound that is a float32, e.g. 1.5 or 6.0).
        with np.errstate(over="ignore"):
            lo_bits, hi_bits = bfloat16_bits(np.array([lo, hi], np.float32))
    else:
        with np.errstate(over="ignore"):
            lo_bits, hi_bits = np.array([lo, hi], kind).view(y.dtype)
    lo_v, hi_v = _order_values(np.array([lo_bits, hi_bits], y.dtype), kind)
    v = _order_values(y, kind)
    y = np.where(v < lo_v, lo_bits, y)
    return np.where(np.maximum(v, lo_v) > hi_v, hi_bits, y).astype(y.dtype)  # NaN compares false


# -- MaxUnpool ------------------------------------------------------------------------------------

def max_unpool_output_shape(x_shape, kernel_shape, *, strides=None, pads=None, output_shape=None,
                            layout="NCHW", opset=None):
    """Output shape of max_unpool from behaviour.md §3 (errors: the public validation's)."""
    x_shape = shape_tuple("MaxUnpool", "x_shape", x_shape)
    _max_unpool_plan(x_shape, kernel_shape=kernel_shape, strides=strides, pads=pads,
                     output_shape=output_shape, layout=layout, opset=opset)
    if output_shape is not None:
        return tuple(int(d) for d in np.asarray(output_shape).reshape(-1))
    spatial = x_shape[2:] if layout == "NCHW" else x_shape[1:-1]
    n = len(spatial)
    kernel = int_tuple("MaxUnpool", "kernel_shape", kernel_shape, n, 1, 1)
    strides = int_tuple("MaxUnpool", "strides", strides, n, 1, 1)
    pads = int_tuple("MaxUnpool", "pads", pads, 2 * n, 0, 0)
    out = tuple((spatial[i] - 1) * strides[i] - (pads[i] + pads[n + i]) + kernel[i] for i in range(n))
    return x_shape[:2] + out if layout == "NCHW" else x_shape[:1] + out + x_shape[-1:]


def max_unpool(x, indices, kernel_shape, *, strides=None, pads=None, output_shape=None,
               layout="NCHW", opset=None, n_threads=None, out=None, index_format="onnx"):
    """Twin of pooling.max_unpool (behaviour.md §3): zeros, then Y.flat[I.flat[j]] = X.flat[j], j in order.

    numpy leaves the winner of a repeated fancy-index assignment unspecified,
    so the last j of each index is picked explicitly before one assignment.
    """
    arr, idx = np.asarray(x), np.asarray(indices)
    shape_args = dict(strides=strides, pads=pads, output_shape=output_shape, layout=layout, opset=opset)
    out_shape = max_unpool_output_shape(arr.shape, kernel_shape, **shape_args)
    plan = _max_unpool_plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads,
                            output_shape=output_shape, layout=layout, opset=opset)
    if idx.shape != arr.shape:
        raise ValueError(f"MaxUnpool: indices must have the shape of x {arr.shape}, got {idx.shape}")
    checked_kind("MaxUnpool", "x", arr.dtype, plan.kinds)
    checked_kind("MaxUnpool", "indices", idx.dtype, plan.index_kinds)
    y = output_array("MaxUnpool", "out", out, out_shape, result_dtype(arr.dtype), ("the input x", arr),
                     ("the input indices", idx))
    resolve_n_threads("MaxUnpool", n_threads)  # validated, then ignored
    size = math.prod(out_shape)
    flat = np.ascontiguousarray(idx).reshape(-1)
    check_format("MaxUnpool", "index_format", index_format, layout)
    if index_format != "onnx":
        # Read as positions in the output, then as its flat offsets (-1 stays -1: rejected below).
        targets, bad = _targets(idx.astype(np.int64), out_shape, layout, index_format)
        if bad is not None:
            raise ValueError(f"MaxUnpool: indices{list(bad)} = {idx[bad]} is outside the range of "
                             f"{index_format!r} indices for the output of shape {list(out_shape)}")
        flat = targets.reshape(-1)
    # Compared exactly: uint64 values past int64 are out of range like negative ones.
    if flat.dtype.kind == "u":
        bad = np.flatnonzero(flat.astype(np.uint64) >= np.uint64(size))
    else:
        wide = flat.astype(np.int64)
        bad = np.flatnonzero((wide < 0) | (wide >= size))
    if bad.size:
        where = tuple(int(i) for i in np.unravel_index(bad[0], idx.shape))
        raise ValueError(
            f"MaxUnpool: indices{list(where)} = {idx[where]} is outside [0, {size}), the flat "
            f"range of the output of shape {list(out_shape)} (first bad index in row-major order)"
        )
    raw = _bits(arr).reshape(-1)
    flat = flat.astype(np.int64)
    result = np.zeros(size, raw.dtype)
    targets, last_from_end = np.unique(flat[::-1], return_index=True)
    result[targets] = raw[flat.size - 1 - last_from_end]
    y[...] = result.reshape(out_shape).view(y.dtype)
    return y


# -- Index formats and the MaxPool gradient ------------------------------------------------------

def _targets(idx, x_shape, layout, fmt):
    """(flat offsets into x as stored, or -1; the first entry out of range or None) of int64
    `idx` shaped like the pooled output in `layout`, read in format `fmt` (behaviour.md §6).

    Every format is a row-major offset into an array of x's elements laid out as (N, *spatial,
    C) or a part of it: "tf_batch" the whole of it, "tf" one image's (*spatial, C), "plane" one
    channel's *spatial (NHWC "onnx" is "tf_batch"; NCHW "onnx" is x's own order).
    """
    rank = len(x_shape)
    nchw = layout == "NCHW"
    n_axis, c_axis = 0, 1 if nchw else rank - 1
    spatial = x_shape[2:] if nchw else x_shape[1:-1]
    batch, channels = x_shape[n_axis], x_shape[c_axis]
    own = np.indices(idx.shape)
    own_n, own_c = own[n_axis], own[c_axis]
    if fmt == "onnx" and nchw:
        part = tuple(x_shape)
    elif fmt in ("onnx", "tf_batch"):
        part = (batch,) + tuple(spatial) + (channels,)
    elif fmt == "tf":
        part = tuple(spatial) + (channels,)
    else:
        part = tuple(spatial)
    size = math.prod(part)
    bad = np.flatnonzero(((idx < 0) & (idx != -1)) | (idx >= size))
    if bad.size:
        return None, tuple(int(i) for i in np.unravel_index(bad[0], idx.shape))
    coords = np.unravel_index(np.where(idx >= 0, idx, 0), part) if size else [np.zeros_like(idx)] * len(part)
    if fmt == "onnx" and nchw:
        n, c, pos = coords[0], coords[1], coords[2:]
    elif fmt in ("onnx", "tf_batch"):
        n, pos, c = coords[0], coords[1:-1], coords[-1]
    elif fmt == "tf":
        n, pos, c = own_n, coords[:-1], coords[-1]
    else:
        n, pos, c = own_n, coords, own_c
    full = (n, c) + tuple(pos) if nchw else (n,) + tuple(pos) + (c,)
    flat = np.ravel_multi_index(full, x_shape) if size else np.zeros_like(idx)
    return np.where(idx >= 0, flat, -1), None


def convert_indices(indices, x_shape, *, from_format, to_format, layout="NCHW"):
    """Twin of pooling.convert_indices: each index read as a position in x (`_targets`), then written
    from that position's coordinates by behaviour.md §6's formulas."""
    public = _public("convert_indices")
    idx = np.asarray(indices)
    public(np.zeros(idx.shape, np.int64) - 1, x_shape, from_format=from_format, to_format=to_format,
           layout=layout)  # the public validation of everything but the values
    x_shape = tuple(int(d) for d in x_shape)
    targets, bad = _targets(idx.astype(np.int64), x_shape, layout, from_format)
    if bad is not None:
        raise ValueError(f"convert_indices: indices{list(bad)} = {idx[bad]} is outside the range of "
                         f"{from_format!r} indices")
    rank = len(x_shape)
    coords = np.unravel_index(np.maximum(targets, 0), x_shape)
    if layout == "NCHW":
        n, c, pos = coords[0], coords[1], coords[2:]
        spatial = x_shape[2:]
    else:
        n, c, pos = coords[0], coords[rank - 1], coords[1:-1]
        spatial = x_shape[1:-1]
    batch, channels, plane = x_shape[0], (x_shape[1] if layout == "NCHW" else x_shape[-1]), math.prod(spatial)
    p = np.ravel_multi_index(pos, spatial) if plane else np.zeros_like(n)
    if to_format == "plane":
        out = p
    elif to_format == "tf":
        out = p * channels + c
    elif to_format == "tf_batch" or layout == "NHWC":
        out = (n * plane + p) * channels + c
    else:
        out = (n * channels + c) * plane + p
    return np.where(targets >= 0, out, -1).astype(np.int64)


def max_pool_grad(grad_y, indices, x_shape, *, index_format="onnx", layout="NCHW", n_threads=None, out=None):
    """Twin of pooling.max_pool_grad (behaviour.md §6.3): np.add.at of grad_y at the targets, in
    row-major order of grad_y, in float64 for float64, else float32, rounded once."""
    g, idx = np.asarray(grad_y), np.asarray(indices)
    # The public validation: with all-empty indices (nothing to add) it checks every argument but
    # the index values and the buffer's contents.
    public = _public("max_pool_grad")
    checked = public(g, np.full(idx.shape, -1, np.int64), x_shape, index_format=index_format,
                     layout=layout, n_threads=n_threads, out=out)
    kind = checked_kind("max_pool_grad", "grad_y", g.dtype, _FLOATS)
    x_shape = tuple(int(d) for d in x_shape)
    targets, bad = _targets(idx.astype(np.int64), x_shape, layout, index_format)
    if bad is not None:
        raise ValueError(f"max_pool_grad: indices{list(bad)} = {idx[bad]} is outside the range of "
                         f"{index_format!r} indices")
    values = _order_values(_bits(g), kind).reshape(-1)
    acc = np.zeros(math.prod(x_shape), np.float64 if kind == "float64" else np.float32)
    flat = targets.reshape(-1)
    valid = flat >= 0
    np.add.at(acc, flat[valid], values[valid].astype(acc.dtype))
    if kind == "float16":
        bits = float16_bits(acc)
    elif kind == "bfloat16":
        bits = bfloat16_bits(acc)
    else:
        bits = acc
    checked[...] = np.asarray(bits).reshape(x_shape).view(checked.dtype)
    return checked


def _public(name):
    import pooling
    return getattr(pooling, name)


# -- Col2Im ---------------------------------------------------------------------------------------

_COL2IM_KINDS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def col2im_output_shape(x_shape, image_shape, block_shape, *, strides=None, pads=None,
                        dilations=None, opset=None):
    """Output shape of col2im, behaviour.md §4: (N, C*K // K, *image_shape) (errors: the public validation's)."""
    x_shape = shape_tuple("Col2Im", "x_shape", x_shape)
    _col2im_plan(x_shape, image_shape=image_shape, block_shape=block_shape, strides=strides, pads=pads,
                 dilations=dilations, opset=opset)
    image = tuple(int(v) for v in np.asarray(image_shape).reshape(-1))
    block = tuple(int(v) for v in np.asarray(block_shape).reshape(-1))
    return (int(x_shape[0]), int(x_shape[1]) // math.prod(block)) + image


def col2im(x, image_shape, block_shape, *, strides=None, pads=None, dilations=None, opset=None,
           n_threads=None, out=None):
    """Twin of pooling.col2im (behaviour.md §4).

    Zeros, then for each kernel offset (row-major over block_shape) every
    block's element is added at its image position, blocks in lexicographic
    order; positions in the padding are dropped.  bool adds by logical or,
    integers wrap around (numpy's own arithmetic), float16 and bfloat16 are
    summed in float32 and rounded once to nearest even by this module.
    """
    arr = np.asarray(x)
    out_shape = col2im_output_shape(arr.shape, image_shape, block_shape, strides=strides, pads=pads,
                                    dilations=dilations, opset=opset)
    kind = checked_kind("Col2Im", "x", arr.dtype, _COL2IM_KINDS)
    resolve_n_threads("Col2Im", n_threads, arr.size)  # validated, then ignored
    y_out = output_array("Col2Im", "out", out, out_shape, result_dtype(arr.dtype), ("the input x", arr))

    image, n = out_shape[2:], len(out_shape) - 2
    block = tuple(int(v) for v in np.asarray(block_shape).reshape(-1))
    strides = int_tuple("Col2Im", "strides", strides, n, 1, 1)
    dilations = int_tuple("Col2Im", "dilations", dilations, n, 1, 1)
    pads = int_tuple("Col2Im", "pads", pads, 2 * n, 0, 0)
    nblocks = [(image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
               for i in range(n)]
    terms = _native(arr)
    if kind == "float16":
        terms = terms.astype(np.float32)  # exact
    elif kind == "bfloat16":
        terms = (terms.view(np.uint16).astype(np.uint32) << 16).view(np.float32)  # exact
    batch, channels = out_shape[:2]
    cols = terms.reshape(batch, channels, math.prod(block), arr.shape[2])
    y = np.zeros((batch, channels, math.prod(image)), dtype=cols.dtype)
    beta = np.indices(nblocks).reshape(n, -1)  # block coordinates, lexicographic
    kappas = np.indices(block).reshape(n, -1)  # kernel offsets, row-major
    # The offsets' pixels are found in groups of about 2**18 (offset, block) pairs, then added
    # one offset after another.
    group = max(1, (1 << 18) // max(1, beta.shape[1]))
    for first in range(0, kappas.shape[1], group):
        kappa = kappas[:, first:first + group, None]  # (n, offsets, 1)
        p = beta[:, None, :] * np.array(strides)[:, None, None] - np.array(pads[:n])[:, None, None] \
            + kappa * np.array(dilations)[:, None, None]  # (n, offsets, blocks)
        inside = np.all((p >= 0) & (p < np.array(image)[:, None, None]), axis=0)
        pixel = np.zeros(inside.shape, np.int64)
        for i in range(n):
            pixel = pixel * image[i] + p[i]
        for j in range(inside.shape[0]):
            # Distinct blocks land on distinct pixels, so this adds each term once.
            with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, overflow: IEEE results
                y[:, :, pixel[j, inside[j]]] += cols[:, :, first + j, inside[j]]
    if kind == "float16":
        y = float16_bits(y)
    elif kind == "bfloat16":
        y = bfloat16_bits(y)
    y_out[...] = y.reshape(out_shape).view(y_out.dtype)
    return y_out
