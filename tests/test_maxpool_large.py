"""Larger MaxPool inputs against a vectorised oracle (no NaN), for the kernels' big-shape paths.

The numpy reference loops in Python per window, too slow here; this oracle walks
the taps in window order and keeps the first strictly greater value, vectorised
over every output position (SPEC 1.4 without NaN), so it can check row-buffer
recomputation, long kernels, many planes and the thread split.
"""
import itertools

import numpy as np
import pytest

import pooling
from conftest import FLOAT_KINDS, as_float64, assert_same, make_array, to_dtype


def oracle(x, kernel, strides, dilations, pads):
    """(Y, Indices) for NOTSET padding, floor mode, no NaN in x."""
    raw = np.ascontiguousarray(x)
    values = as_float64(raw)
    n = raw.ndim - 2
    spatial = raw.shape[2:]
    planes = raw.shape[0] * raw.shape[1]
    out = tuple((spatial[i] + pads[i] + pads[i + n] - ((kernel[i] - 1) * dilations[i] + 1)) // strides[i] + 1
                for i in range(n))
    values = values.reshape((planes,) + spatial)
    best = np.full((planes,) + out, -np.inf)
    best_idx = np.full((planes,) + out, -1, dtype=np.int64)
    plane_offset = (np.arange(planes) * int(np.prod(spatial))).reshape((planes,) + (1,) * n)
    for tap in itertools.product(*[range(k) for k in kernel]):
        pos = [np.arange(out[i]) * strides[i] - pads[i] + tap[i] * dilations[i] for i in range(n)]
        valid = np.ones(out, dtype=bool)
        for i in range(n):
            shape = [1] * n
            shape[i] = out[i]
            valid = valid & ((pos[i] >= 0) & (pos[i] < spatial[i])).reshape(shape)
        clipped = [np.clip(p, 0, max(d - 1, 0)) for p, d in zip(pos, spatial)]
        grid = np.ix_(*clipped)
        v = values[(slice(None),) + grid]
        flat = np.ravel_multi_index(grid, spatial) if all(spatial) else np.zeros(out, np.int64)
        take = valid & ((v > best) | (best_idx < 0))
        best = np.where(take, v, best)
        best_idx = np.where(take, plane_offset + flat, best_idx)
    shape = raw.shape[:2] + out
    return best_idx.reshape(shape)


def expected_y(x, indices):
    """x's own bits at `indices`; the empty-window value where indices == -1."""
    raw = np.ascontiguousarray(x)
    bits = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[raw.dtype.itemsize])
    y = bits.reshape(-1)[np.where(indices >= 0, indices, 0)]
    if (indices < 0).any():
        empty = pooling.max_pool(raw[:1, :1, ...], (1,) * (raw.ndim - 2),
                                 pads=(1,) + (0,) * (2 * (raw.ndim - 2) - 1))
        y[indices < 0] = empty.view(bits.dtype).reshape(-1)[0]
    return y.view(raw.dtype)


def data(rng, shape, kind):
    """Random data with ties, +-0.0 and +-inf but no NaN (the oracle does not do NaN)."""
    x = make_array(rng, shape, kind)
    if kind in FLOAT_KINDS:
        x[np.isnan(as_float64(x))] = to_dtype([1.0], kind)[0]
    return x


CASES = {
    # Wide output under a tall dilated kernel: more than the cached row budget, rows recomputed.
    "ring_recompute_2d": ((1, 1, 50, 70000), dict(kernel_shape=(3, 3), dilations=(20, 1))),
    "ring_recompute_3d": ((1, 1, 3, 25, 30000), dict(kernel_shape=(2, 3, 3), dilations=(1, 10, 1))),
    "long_kernel_1d": ((2, 3, 5000), dict(kernel_shape=(1500,), strides=(7,), pads=(100, 700))),
    "big_kernel_2d": ((1, 2, 120, 130), dict(kernel_shape=(40, 50), strides=(3, 4), dilations=(1, 2))),
    # Wide rows: chunks of a few rows, the row ring wrapping many times per plane, with rows
    # reduced as one long row (W == OW * stride) and not (W odd under stride 2).
    "ring_wraps_s1": ((2, 3, 30, 1200), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    "ring_wraps_s2": ((1, 2, 33, 2050), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    "ring_wraps_odd": ((1, 2, 33, 2051), dict(kernel_shape=(2, 3), strides=(2, 2), pads=(0, 1, 1, 0))),
    "ring_wraps_3d": ((1, 2, 4, 21, 1500), dict(kernel_shape=(2, 3, 2), strides=(1, 2, 2))),
    "many_planes": ((64, 64, 9, 9), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    "resnet_stem": ((1, 64, 112, 112), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    "pads_ge_kernel_3d": ((2, 3, 20, 21, 22), dict(kernel_shape=(2, 3, 2), strides=(3, 2, 2),
                                                   pads=(3, 3, 2, 2, 4, 3))),
    "rank4": ((1, 3, 16, 15, 14, 13), dict(kernel_shape=(2, 3, 2, 2), strides=(2, 1, 2, 1),
                                           dilations=(1, 1, 2, 3), pads=(0, 1, 1, 0, 1, 0, 0, 2))),
}
KINDS = {
    "ring_recompute_2d": ("float32", "int8", "float16"),
    "resnet_stem": ("float32", "float64", "int8", "uint8", "float16", "bfloat16"),
    "ring_wraps_s1": ("float32", "float64", "int8", "uint8", "float16", "bfloat16"),
    "ring_wraps_s2": ("float32", "uint8", "float16"),
    "ring_wraps_odd": ("float32", "int8"),
    "ring_wraps_3d": ("float32", "float16"),
}


@pytest.mark.parametrize("case, kind", [(c, k) for c in CASES for k in KINDS.get(c, ("float32",))])
def test_large_against_oracle(case, kind):
    shape, attrs = CASES[case]
    n = len(shape) - 2
    x = data(np.random.default_rng(len(case)), shape, kind)
    full = dict(kernel_shape=attrs["kernel_shape"], strides=attrs.get("strides", (1,) * n),
                dilations=attrs.get("dilations", (1,) * n), pads=attrs.get("pads", (0,) * 2 * n))
    indices = oracle(x, full["kernel_shape"], full["strides"], full["dilations"], full["pads"])
    y, ind = pooling.max_pool(x, return_indices=True, **full)
    assert_same(ind, indices)
    assert_same(y, expected_y(x, indices))
    assert_same(pooling.max_pool(x, **full), y)
    # storage_order 1: the same winners, re-encoded column-major within each plane.
    _, ind1 = pooling.max_pool(x, return_indices=True, storage_order=1, **full)
    plane_size = int(np.prod(shape[2:]))
    plane, offset = np.divmod(indices, plane_size)
    coords = np.unravel_index(np.where(indices >= 0, offset, 0), shape[2:])
    col = plane * plane_size + np.ravel_multi_index(coords, shape[2:], order="F")
    assert_same(ind1, np.where(indices >= 0, col, -1))


def test_oracle_agrees_with_the_reference_on_small_inputs():
    """The oracle above is itself checked against pooling.reference on small inputs."""
    from pooling import reference

    rng = np.random.default_rng(0)
    for shape, attrs in [((2, 2, 7, 6), dict(kernel_shape=(3, 2), strides=(2, 1), dilations=(1, 2),
                                             pads=(1, 0, 3, 1))),
                         ((1, 2, 11), dict(kernel_shape=(2,), strides=(1,), dilations=(3,), pads=(4, 0))),
                         ((1, 1, 4, 3, 5), dict(kernel_shape=(2, 2, 3), strides=(1, 2, 1),
                                                dilations=(2, 1, 1), pads=(0, 1, 1, 2, 0, 1)))]:
        x = data(rng, shape, "float32")
        ref_y, ref_i = reference.max_pool(x, return_indices=True, **attrs)
        indices = oracle(x, attrs["kernel_shape"], attrs["strides"], attrs["dilations"], attrs["pads"])
        assert_same(indices, ref_i)
        assert_same(expected_y(x, indices), ref_y)
