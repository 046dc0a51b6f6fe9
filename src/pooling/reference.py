"""Pure-numpy twins of the kernels, written straight from SPEC.md.

Slow and simple on purpose: they gather every window explicitly and pick the
winner with whole-array numpy operations, sharing no code path with the
kernels, so tests (and ``python -m pooling``) can compare the two.  Shapes and
attributes are assumed valid (the public functions validate); these take the
same arguments in their explicit form.
"""
import itertools
import math

import numpy as np

from ._dtypes import dtype_kind, float_to_half_bits


def _native(x):
    """x as an array in native byte order, the order every result comes back in."""
    x = np.asarray(x)
    return x.astype(x.dtype.newbyteorder("=")) if x.dtype.byteorder not in "=|" else x


def _storage(x, kind):
    """The raw storage of x: uint16 bit patterns for the 16-bit floats."""
    raw = np.ascontiguousarray(x)
    return raw.view(np.uint16) if kind in ("float16", "bfloat16") else raw


def _values(raw, kind):
    """float64 values of raw storage, ordering like SPEC 1.4 (NaN kept as NaN)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs stay NaN: all that ordering needs
        return _as_float64(raw, kind)


def _as_float64(raw, kind):
    if kind == "bfloat16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if kind == "float16":
        return raw.view(np.float16).astype(np.float64)
    return raw.astype(np.float64)


def _empty_value(raw_dtype, kind):
    if kind == "float16":
        return 0xFC00
    if kind == "bfloat16":
        return 0xFF80
    if kind in ("float32", "float64"):
        return -np.inf
    return np.iinfo(raw_dtype).min


def pool_output_shape(spatial, kernel, strides, dilations, pads, auto_pad="NOTSET", ceil_mode=0):
    """(output spatial shape, pads_begin), straight from SPEC 1.3."""
    n = len(spatial)
    out, begin = [], []
    for i in range(n):
        d_in, k, s, d = spatial[i], kernel[i], strides[i], dilations[i]
        eff = (k - 1) * d + 1
        if auto_pad.startswith("SAME"):
            o = math.ceil(d_in / s)
            total = max(0, (o - 1) * s + eff - d_in)
            pb = math.floor(total / 2) if auto_pad == "SAME_UPPER" else math.ceil(total / 2)
        else:
            pb, pe = (0, 0) if auto_pad == "VALID" else (pads[i], pads[n + i])
            if ceil_mode:
                o = math.ceil((d_in + pb + pe - eff) / s) + 1
                if (o - 1) * s >= d_in + pb:
                    o -= 1
            else:
                o = math.floor((d_in + pb + pe - eff) / s) + 1
        out.append(o)
        begin.append(pb)
    return tuple(out), tuple(begin)


def max_pool(x, kernel_shape, strides=None, pads=None, dilations=None, auto_pad="NOTSET",
             ceil_mode=0, storage_order=0, activation=None, activation_params=None):
    """(Y, Indices) of MaxPool on NCHW `x`, SPEC 1.3-1.5."""
    x = _native(x)
    kind = dtype_kind(x.dtype)
    n = x.ndim - 2
    spatial = x.shape[2:]
    strides = strides or (1,) * n
    dilations = dilations or (1,) * n
    pads = pads or (0,) * (2 * n)
    out, begin = pool_output_shape(spatial, kernel_shape, strides, dilations, pads, auto_pad,
                                   ceil_mode)
    planes = x.shape[0] * x.shape[1]
    plane_size = int(np.prod(spatial))
    raw = _storage(x, kind).reshape(planes, plane_size)
    values = _values(raw, kind)

    # Per axis: tap position and validity for every (output position, tap).
    coords, valid = [], []
    for i in range(n):
        o = np.arange(out[i])[:, None]
        t = np.arange(kernel_shape[i])[None, :]
        p = o * strides[i] - begin[i] + t * dilations[i]
        coords.append(p)
        valid.append((p >= 0) & (p < spatial[i]))
    n_out = int(np.prod(out))
    n_taps = int(np.prod(kernel_shape))
    # Window taps in lexicographic order (first spatial axis outermost).
    flat = np.zeros((n_out, n_taps), dtype=np.int64)
    ok = np.ones((n_out, n_taps), dtype=bool)
    for o_idx, o in enumerate(itertools.product(*[range(v) for v in out])):
        for t_idx, t in enumerate(itertools.product(*[range(k) for k in kernel_shape])):
            pos = [int(coords[i][o[i], t[i]]) for i in range(n)]
            good = all(valid[i][o[i], t[i]] for i in range(n))
            ok[o_idx, t_idx] = good
            flat[o_idx, t_idx] = np.ravel_multi_index(pos, spatial) if good else plane_size

    # Invalid taps read a sentinel column, so gathering works even for an empty plane.
    values = np.concatenate([values, np.zeros((planes, 1))], axis=1)
    raw = np.concatenate([raw, np.zeros((planes, 1), raw.dtype)], axis=1)
    taps = values[:, flat]                                   # (planes, n_out, n_taps)
    nan = np.isnan(taps) & ok
    number = ok & ~nan
    best = np.where(number, taps, -np.inf).max(axis=-1, initial=-np.inf, keepdims=True)
    first_best = (number & (taps == best)).argmax(axis=-1)
    winner = np.where(nan.any(axis=-1), nan.argmax(axis=-1), first_best)
    empty = ~ok.any(axis=-1)
    offset = np.take_along_axis(np.broadcast_to(flat, taps.shape), winner[..., None], -1)[..., 0]

    y = np.take_along_axis(raw, offset.reshape(planes, n_out), axis=1)
    y[np.broadcast_to(empty, y.shape)] = _empty_value(raw.dtype, kind)
    offset = np.where(empty, 0, offset)
    if storage_order == 1 and n > 1 and plane_size:
        offset = np.ravel_multi_index(np.unravel_index(offset, spatial), spatial, order="F")
    indices = np.arange(planes)[:, None] * plane_size + offset
    indices[np.broadcast_to(empty, indices.shape)] = -1
    if activation is not None:
        y = _activate(y, kind, activation, activation_params)
    shape = x.shape[:2] + tuple(out)
    y = y.reshape(shape).view(x.dtype)
    return y, indices.reshape(shape)


def _activate(y, kind, activation, params):
    """Relu / Clip per SPEC 1.4 on raw storage `y`: min(max(y, lo), hi), NaN stays NaN."""
    lo, hi = (0.0, math.inf) if activation == "Relu" else (float(params[0]), float(params[1]))
    if kind in ("int8", "uint8"):
        info = np.iinfo(kind)
        lo = max(min(lo, info.max), info.min)  # in range first: lo and hi may be +-inf
        hi = max(min(hi, info.max), info.min)
        lo, hi = math.ceil(lo), math.floor(hi)
        return np.minimum(np.maximum(y, lo), hi).astype(y.dtype)
    if kind in ("float16", "bfloat16"):
        lo_raw, hi_raw = float_to_half_bits(lo, kind), float_to_half_bits(hi, kind)
        lo_f, hi_f = (float(_values(np.array([b], np.uint16), kind)[0]) for b in (lo_raw, hi_raw))
    else:
        with np.errstate(over="ignore"):  # a bound past the type's range rounds to +-inf
            lo_raw, hi_raw = np.array(lo, y.dtype), np.array(hi, y.dtype)
        lo_f, hi_f = float(lo_raw), float(hi_raw)
    values = _values(y, kind)
    out = y.copy()
    out[values < lo_f] = lo_raw
    out[np.maximum(values, lo_f) > hi_f] = hi_raw  # NaN compares false: stays
    return out


def max_unpool(x, indices, kernel_shape, strides=None, pads=None, output_shape=None):
    """Y of MaxUnpool on NCHW `x`, SPEC 2: zeros, then Y.flat[I.flat[j]] = X.flat[j] in order.

    numpy leaves the winner of a repeated fancy-index assignment unspecified,
    so the last j of each index is picked explicitly before one assignment.
    """
    x = _native(x)
    n = x.ndim - 2
    if output_shape is None:
        strides = strides or (1,) * n
        pads = pads or (0,) * (2 * n)
        output_shape = x.shape[:2] + tuple(
            (x.shape[2 + i] - 1) * strides[i] - (pads[i] + pads[n + i]) + kernel_shape[i]
            for i in range(n)
        )
    # Raw bits of every dtype (bfloat16 and NaN payloads included) as unsigned ints.
    raw = np.ascontiguousarray(x).reshape(-1).view(f"u{x.dtype.itemsize}")
    flat = np.asarray(indices).reshape(-1).astype(np.int64)
    y = np.zeros(int(np.prod(output_shape)), dtype=raw.dtype)
    targets, last_from_end = np.unique(flat[::-1], return_index=True)
    y[targets] = raw[flat.size - 1 - last_from_end]
    return y.view(x.dtype).reshape(tuple(output_shape))


def col2im(x, image_shape, block_shape, strides=None, pads=None, dilations=None):
    """Y of Col2Im on columns `x` (N, C*K, L), SPEC 3.

    Zeros, then for each kernel offset (row-major over block_shape) every
    block's element is added at its image position, blocks in lexicographic
    order; positions in the padding are dropped.  bool adds by logical or,
    integers wrap around (numpy's own arithmetic), float16 and bfloat16 are
    summed in float32 and rounded once to nearest even.
    """
    x = _native(x)
    kind = dtype_kind(x.dtype)
    image = tuple(int(v) for v in image_shape)
    block = tuple(int(v) for v in block_shape)
    n = len(image)
    strides = np.array(strides or (1,) * n)[:, None]
    dilations = np.array(dilations or (1,) * n)
    pads = tuple(pads or (0,) * (2 * n))
    nblocks = [(image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1)
               // strides[i, 0] + 1 for i in range(n)]
    batch = x.shape[0]
    cols = _widen(x, kind).reshape(batch, x.shape[1] // math.prod(block), math.prod(block), x.shape[2])
    y = np.zeros((batch, cols.shape[1], math.prod(image)), dtype=cols.dtype)
    beta = np.indices(nblocks).reshape(n, -1)  # block coordinates, lexicographic
    for k, kappa in enumerate(np.ndindex(*block)):
        pos = beta * strides - np.array(pads[:n])[:, None] + (np.array(kappa) * dilations)[:, None]
        inside = ((pos >= 0) & (pos < np.array(image)[:, None])).all(axis=0)
        # Distinct blocks land on distinct pixels, so this adds each term once.
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, overflow: IEEE results
            y[:, :, np.ravel_multi_index(pos[:, inside], image)] += cols[:, :, k, inside]
    return _narrow(y, kind, x.dtype).reshape((batch, cols.shape[1]) + image)


def _widen(x, kind):
    """The values Col2Im sums: 16-bit floats as float32 (exactly), the rest as they are."""
    if kind == "float16":
        return x.astype(np.float32)
    if kind == "bfloat16":
        return (np.ascontiguousarray(x).view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return x


def _narrow(y, kind, dtype):
    """Sums back in the input's dtype: float32 rounded once for the 16-bit floats."""
    if kind == "float16":
        return y.astype(np.float16)
    if kind == "bfloat16":
        bits = np.vectorize(lambda v: float_to_half_bits(v, "bfloat16"), otypes=[np.uint16])(y)
        return bits.view(dtype)
    return y
