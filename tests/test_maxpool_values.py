"""MaxPool kernels against the pure-numpy reference (SPEC 1.3-1.5), bit for bit.

dtype (all six) x rank (1-4) x attributes x memory order.  The reference is
itself checked by hand-computed cases in test_maxpool_hand.py.
"""
import math
import zlib

import numpy as np
import pytest

import pooling
from conftest import (
    BFLOAT16, FLOAT_KINDS, POOL_DTYPES, as_float64, assert_same, for_kind, make_array, memory_orders,
    to_dtype, unaligned,
)
from pooling import reference
from pooling._dtypes import LEGACY_BFLOAT16

SHAPES = {
    1: (2, 3, 11),
    2: (2, 2, 7, 6),
    3: (1, 2, 5, 4, 6),
    4: (1, 2, 4, 3, 5, 3),
}


def rep(n, *values):
    """`values` cycled to length n: a different value per axis where more are given."""
    return tuple(values[i % len(values)] for i in range(n))


def zeros(n):
    return (0,) * n


# Each case maps the input's spatial shape to explicit attributes (the form the
# reference takes).  Names say what the case exercises.
CASES = {
    "k2": lambda sp: dict(kernel_shape=rep(len(sp), 2)),
    "k3_s2": lambda sp: dict(kernel_shape=rep(len(sp), 3), strides=rep(len(sp), 2)),
    "mixed_per_axis": lambda sp: dict(kernel_shape=rep(len(sp), 2, 1, 3),
                                      strides=rep(len(sp), 1, 2, 3),
                                      dilations=rep(len(sp), 2, 1, 1)),
    "dilation2": lambda sp: dict(kernel_shape=rep(len(sp), 2), dilations=rep(len(sp), 2)),
    "asymmetric_pads": lambda sp: dict(kernel_shape=rep(len(sp), 3), strides=rep(len(sp), 2, 1),
                                       pads=rep(len(sp), 1, 0, 2) + rep(len(sp), 0, 2, 1)),
    # pads >= kernel: windows wholly in the padding are empty (-inf, Indices -1).
    "pads_ge_kernel": lambda sp: dict(kernel_shape=rep(len(sp), 2), strides=rep(len(sp), 2, 1),
                                      pads=rep(len(sp), 3, 2) + rep(len(sp), 2, 3)),
    # Dilated windows that skip every input element near the border are empty.
    "dilation_pads_ceil": lambda sp: dict(kernel_shape=rep(len(sp), 2, 3),
                                          dilations=rep(len(sp), 3, 2),
                                          pads=rep(len(sp), 4, 5) + rep(len(sp), 1),
                                          strides=rep(len(sp), 2), ceil_mode=1),
    # ceil_mode where the last window would start in the end padding: dropped.
    "ceil_drop": lambda sp: dict(kernel_shape=rep(len(sp), 2), strides=rep(len(sp), 3),
                                 pads=zeros(len(sp)) + rep(len(sp), 2), ceil_mode=1),
    "ceil_keep": lambda sp: dict(kernel_shape=rep(len(sp), 3), strides=rep(len(sp), 2),
                                 pads=rep(len(sp), 1) * 2, ceil_mode=1),
    "valid_ceil": lambda sp: dict(kernel_shape=rep(len(sp), 2, 3), strides=rep(len(sp), 2),
                                  auto_pad="VALID", ceil_mode=1),
    "valid": lambda sp: dict(kernel_shape=rep(len(sp), 3, 2), strides=rep(len(sp), 2, 1),
                             auto_pad="VALID"),
    "same_upper": lambda sp: dict(kernel_shape=rep(len(sp), 3), strides=rep(len(sp), 2),
                                  auto_pad="SAME_UPPER"),
    # Total pad T odd (k=2 or 4, s=1): SAME_UPPER puts the extra pad at the end,
    # SAME_LOWER at the beginning.
    "same_upper_odd": lambda sp: dict(kernel_shape=rep(len(sp), 2, 4), auto_pad="SAME_UPPER"),
    "same_lower_odd": lambda sp: dict(kernel_shape=rep(len(sp), 2, 4), auto_pad="SAME_LOWER"),
    "same_lower_s2": lambda sp: dict(kernel_shape=rep(len(sp), 4, 3), strides=rep(len(sp), 2),
                                     auto_pad="SAME_LOWER"),
    # SAME with dilation: the total pad uses the dilated kernel.
    "same_upper_dilation": lambda sp: dict(kernel_shape=rep(len(sp), 3), dilations=rep(len(sp), 2),
                                           strides=rep(len(sp), 1, 2), auto_pad="SAME_UPPER"),
    "same_lower_dilation_ceil": lambda sp: dict(kernel_shape=rep(len(sp), 2), dilations=rep(len(sp), 3),
                                                strides=rep(len(sp), 2), auto_pad="SAME_LOWER",
                                                ceil_mode=1),
    # A kernel longer than the input, made valid by padding.
    "kernel_over_input": lambda sp: dict(kernel_shape=tuple(d + 1 for d in sp),
                                         pads=rep(len(sp), 1) + zeros(len(sp))),
    "global": lambda sp: dict(kernel_shape=tuple(sp)),
    "k1_s3_ceil": lambda sp: dict(kernel_shape=rep(len(sp), 1), strides=rep(len(sp), 3), ceil_mode=1),
    "relu": lambda sp: dict(kernel_shape=rep(len(sp), 2), strides=rep(len(sp), 2),
                            pads=rep(len(sp), 1) * 2, activation="Relu"),
    "clip": lambda sp: dict(kernel_shape=rep(len(sp), 3), dilations=rep(len(sp), 2, 1),
                            pads=rep(len(sp), 2) * 2, activation="Clip",
                            activation_params=(-1.5, 2.5)),
    "clip_open_below": lambda sp: dict(kernel_shape=rep(len(sp), 2), activation="Clip",
                                       activation_params=(-math.inf, 0.5)),
}


def int_data(rng, shape, kind):
    """Integers with many ties and the type's extremes (the empty-window value included)."""
    info = np.iinfo(kind)
    pool = np.array([info.min, info.min, info.min + 1, 0, 1, 2, 2, info.max - 1, info.max],
                    dtype=np.int64)
    pool = pool[(pool >= info.min) & (pool <= info.max)]
    return rng.choice(pool, size=shape).astype(kind)


def data(rng, shape, kind, variant=0):
    """Test input of `kind`; integer variant 1 draws from a small set of values (ties)."""
    if kind in ("int8", "uint8") and variant == 1:
        return int_data(rng, shape, kind)
    return make_array(rng, shape, kind)


def check_against_reference(x, attrs, storage_orders=(0, 1), orders=True):
    """Every memory order of x, with and without Indices, equals the reference bit for bit."""
    expected = {so: reference.max_pool(x, storage_order=so, return_indices=True, **attrs)
                for so in storage_orders}
    inputs = memory_orders(x) if orders else [("C", x)]
    for name, xm in inputs:
        before = np.array(xm, copy=True)
        y = pooling.max_pool(xm, **attrs)
        assert_same(y, expected[storage_orders[0]][0])
        for so in storage_orders:
            y, ind = pooling.max_pool(xm, storage_order=so, return_indices=True, **attrs)
            try:
                assert_same(y, expected[so][0])
                assert_same(ind, expected[so][1])
            except AssertionError as exc:
                raise AssertionError(f"memory order {name}, storage_order {so}: {exc}") from None
        assert_same(np.asarray(xm), before)  # never modified
    return expected


@pytest.mark.parametrize("rank", sorted(SHAPES))
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_kernel_matches_reference(kind, case, rank):
    rng = np.random.default_rng(zlib.crc32(f"{kind}/{case}/{rank}".encode()))
    shape = SHAPES[rank]
    attrs = for_kind(CASES[case](shape[2:]), kind)
    # Integers: full range and a tie-heavy variant; floats carry NaN/-0.0/inf already.
    variants = (0, 1) if kind in ("int8", "uint8") else (0,)
    for variant in variants:
        x = data(rng, shape, kind, variant)
        check_against_reference(x, attrs, orders=(variant == 0))


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
@pytest.mark.parametrize("kind", ["float32", "float64", "float16", "bfloat16"])
def test_rare_nan_and_negative_zero_in_wide_rows(kind, strides, rng):
    """Wide rows (W == OW * stride) are reduced as one long row, a few rows at a time through a
    ring that wraps many times per plane; a NaN or -0.0 in a few rows sends only their chunks to
    the exact compare, and the other chunks' cheap compare must still be right (ties of -0.0 and
    +0.0 included: the data is small integers)."""
    x = make_array(rng, (1, 2, 9, 1100 * strides[1]), kind, special=False)
    # Inside rows, and at the first and last value of a chunk (which only border columns read).
    for (c, h, w), v in zip([(0, 2, 17), (1, 5, 700), (1, 6, 3), (0, 8, -1), (1, 2, 0), (1, 3, -1)],
                            to_dtype([np.nan, -0.0, np.nan, -np.nan, np.nan, np.nan], kind)):
        x[0, c, h, w] = v
    # A -0.0 that ties +0.0 in the first output column, where nothing greater hides it: the
    # first value of the chunks that reduce row 4 (16-bit floats' cheap key gets this wrong).
    x[0, 0, 3:6, :3] = to_dtype([-1.0], kind)[0]
    x[0, 0, 4, :2] = to_dtype([-0.0, 0.0], kind)
    expected = check_against_reference(x, dict(kernel_shape=(3, 3), strides=strides, pads=(1, 1, 1, 1)),
                                       storage_orders=(0,), orders=False)
    y = expected[0][0]
    assert np.isnan(as_float64(y)).sum() >= 5  # the NaNs reached Y
    assert np.signbit(as_float64(y[0, 0, 4 // strides[0], 0]))  # and the -0.0


@pytest.mark.parametrize("kernel, stride", [(2, 1), (2, 2), (3, 1), (3, 2)])
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_negative_zero_read_only_by_the_last_tap(kind, kernel, stride, rng):
    """A -0.0 that only the last tap of the last window of a row reads, tying a +0.0 below it:
    the rows' cheap compare must still notice it (the first maximum, -0.0, is the answer)."""
    ow = 40
    x = np.full((1, 1, 2, (ow - 1) * stride + kernel), to_dtype([-1.0], kind)[0])
    x[0, 0, :, -1] = to_dtype([-0.0, 0.0], kind)
    expected = check_against_reference(x, dict(kernel_shape=(2, kernel), strides=(1, stride)),
                                       storage_orders=(0,), orders=False)
    assert np.signbit(as_float64(expected[0][0][0, 0, 0, ow - 1]))


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_3d_depth_first_and_its_fallback(kind, rng):
    """3-D without Indices on many output depth slices: 1- and 2-byte types reduce depth first
    when a slice's inputs hold no NaN or -0.0 (equal values then have equal bits, so the order of
    the compares cannot show), and fall back to SPEC's order for the slices that do."""
    shape = (2, 3, 9, 7, 8)
    x = make_array(rng, shape, kind, special=False)
    if kind in FLOAT_KINDS:
        # +0.0 at (d, h, w) = (3, 0, 0) and -0.0 at (2, 1, 0), nothing greater around: SPEC's
        # first maximum is the -0.0 (smaller d), depth first would find the +0.0 (smaller h).
        x[0, 1, 1:5, :2, :2] = to_dtype([-1.0], kind)[0]
        x[0, 1, 3, 0, 0], x[0, 1, 2, 1, 0] = to_dtype([0.0, -0.0], kind)
        x[1, 2, 6, 4, 4] = to_dtype([np.nan], kind)[0]
    for i, attrs in enumerate([dict(kernel_shape=(3, 2, 2), strides=(2, 1, 2), pads=(1, 0, 1, 1, 1, 0)),
                               dict(kernel_shape=(2, 3, 3), dilations=(2, 1, 1), pads=(0, 1, 1, 1, 1, 1)),
                               dict(kernel_shape=(3, 3, 3), strides=(1, 2, 2), pads=(1, 1, 1, 1, 1, 1),
                                    activation="Clip", activation_params=(-2.0, 3.0))]):
        attrs = for_kind(attrs, kind)
        expected, _ = reference.max_pool(x, return_indices=True, **attrs)
        for nt in (1, 2):
            assert_same(pooling.max_pool(x, n_threads=nt, **attrs), expected)
        if i == 0 and kind in FLOAT_KINDS:
            # Output (1, 0, 0) reads d 1-3, h 0-1, w 0: the two zeros tie there.
            assert np.signbit(as_float64(expected[0, 1, 1, 0, 0]))


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_scratch_kept_between_calls_carries_nothing(kind, rng):
    """Small calls reuse their launch's scratch (row ring, NaN flags, depth slab): calls on the same
    shape, alternating data with and without NaN/-0.0 and with and without Indices, each match
    the reference alone."""
    for shape, attrs in [((1, 2, 6, 10), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
                         ((1, 2, 5, 4, 6), dict(kernel_shape=(3, 2, 2), strides=(2, 1, 2)))]:
        noisy = make_array(rng, shape, kind)  # special values (NaN, -0.0, inf) where the kind has them
        calm = make_array(rng, shape, kind, special=False)
        for x, indices in [(noisy, False), (calm, False), (noisy, True), (calm, True), (noisy, False)]:
            expected = reference.max_pool(x, return_indices=indices, **attrs)
            got = pooling.max_pool(x, return_indices=indices, n_threads=1, **attrs)
            if indices:
                assert_same(got[0], expected[0])
                np.testing.assert_array_equal(got[1], expected[1])
            else:
                assert_same(got, expected)


@pytest.mark.parametrize("case", ["k2", "mixed_per_axis", "pads_ge_kernel", "ceil_drop", "same_lower_odd",
                                  "same_upper_dilation", "clip"])
@pytest.mark.parametrize("kind", ["float32", "int8", "bfloat16"])
def test_rank5_matches_reference(kind, case):
    """Any number of spatial axes: five, through the generic kernel."""
    rng = np.random.default_rng(zlib.crc32(f"{kind}/{case}/5".encode()))
    x = data(rng, (1, 2, 3, 4, 3, 3, 4), kind)
    check_against_reference(x, CASES[case]((3, 4, 3, 3, 4)), orders=False)


def test_cases_exercise_what_they_claim():
    """The attribute table covers the corner cases it is meant to (guards the test itself)."""
    for rank, shape in SHAPES.items():
        sp = shape[2:]
        n = len(sp)
        # ceil_drop: the ceil formula's last window starts in the end padding on every axis.
        a = CASES["ceil_drop"](sp)
        for i in range(n):
            e = a["kernel_shape"][i]
            o = math.ceil((sp[i] + a["pads"][n + i] - e) / 3) + 1
            assert (o - 1) * 3 >= sp[i], (rank, i)
        # same_*_odd: odd total pad on the first axis (k=2, s=1 gives T=1).
        a = CASES["same_lower_odd"](sp)
        assert (a["kernel_shape"][0] - 1) % 2 == 1
        # pads_ge_kernel: some begin pad >= kernel.
        a = CASES["pads_ge_kernel"](sp)
        assert any(p >= k for p, k in zip(a["pads"], a["kernel_shape"] * 2))
    # Empty windows occur in these cases (checked through the reference).
    for case in ("pads_ge_kernel", "dilation_pads_ceil"):
        x = np.ones(SHAPES[2], dtype=np.float32)
        _, ind = reference.max_pool(x, return_indices=True, **CASES[case](SHAPES[2][2:]))
        assert (ind == -1).any(), case


@pytest.mark.parametrize("case", ["k3_s2", "pads_ge_kernel", "same_lower_odd", "clip"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_legacy_bfloat16(case, rank, rng):
    """ONNX's structured bfloat16 dtype: same bits as ml_dtypes, result in the legacy dtype."""
    shape = SHAPES[rank]
    attrs = CASES[case](shape[2:])
    bits = make_array(rng, shape, "bfloat16").view(np.uint16)
    legacy = bits.view(LEGACY_BFLOAT16)
    y, ind = pooling.max_pool(legacy, return_indices=True, **attrs)
    assert y.dtype == LEGACY_BFLOAT16
    ref_y, ref_i = reference.max_pool(legacy, return_indices=True, **attrs)
    assert_same(y, ref_y)
    assert_same(ind, ref_i)
    if BFLOAT16 != LEGACY_BFLOAT16:
        y2, ind2 = pooling.max_pool(bits.view(BFLOAT16), return_indices=True, **attrs)
        assert y2.dtype == BFLOAT16
        assert y2.view(np.uint16).tobytes() == y.view(np.uint16).tobytes()
        assert_same(ind2, ind)


@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_all_special_values_in_one_window(kind):
    """Every window holds NaNs (several payloads), +-0.0, +-inf: the first NaN wins, bits exact."""
    rng = np.random.default_rng(7)
    shape = (2, 3, 9, 8)
    x = make_array(rng, shape, kind)
    flat = x.reshape(-1).view(np.uint16 if x.itemsize == 2 else np.uint32 if x.itemsize == 4
                              else np.uint64)
    nan_positions = rng.choice(flat.size, size=flat.size // 5, replace=False)
    nan_bits = to_dtype([np.nan], kind).view(flat.dtype)[0]
    top = np.array(1, flat.dtype) << (flat.dtype.itemsize * 8 - 1)
    for j, p in enumerate(nan_positions):
        # Distinct quiet payloads, alternating sign, so "which NaN" is visible in Y.
        flat[p] = nan_bits | (np.array(j % 7 + 1, flat.dtype)) | (top if j % 2 else 0)
    attrs = dict(kernel_shape=(3, 2), strides=(1, 2), pads=(1, 0, 1, 1))
    y, ind = pooling.max_pool(x, return_indices=True, **attrs)
    ref_y, ref_i = reference.max_pool(x, return_indices=True, **attrs)
    assert_same(y, ref_y)
    assert_same(ind, ref_i)
    # Y carries the bits of the element Indices points at, wherever the window is not empty.
    got = x.reshape(-1).view(flat.dtype)[np.where(ind >= 0, ind, 0)]
    assert (got[ind >= 0] == y.view(flat.dtype)[ind >= 0]).all()


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_minimum_values_are_not_empty(kind, rank):
    """A window whose every element is -inf (or the integer minimum) is not empty: Indices >= 0."""
    low = -np.inf if kind in FLOAT_KINDS else False if kind == "bool" else np.iinfo(kind).min
    shape = (1, 2) + (3,) * rank
    x = to_dtype(np.full(shape, low), kind) if kind in FLOAT_KINDS else np.full(shape, low, kind)
    attrs = dict(kernel_shape=(2,) * rank, pads=(1,) * (2 * rank))
    y, ind = pooling.max_pool(x, return_indices=True, **attrs)
    ref_y, ref_i = reference.max_pool(x, return_indices=True, **attrs)
    assert_same(y, ref_y)
    assert_same(ind, ref_i)
    assert (ind >= 0).all()  # every window here has a valid tap


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_empty_outputs(kind, rank):
    """N = 0, C = 0 and O == 0 (input smaller than the kernel) give empty results of the right shape."""
    rng = np.random.default_rng(3)
    k = (3,) * rank
    for shape, out in [
        ((0, 3) + (5,) * rank, (0, 3) + (3,) * rank),
        ((2, 0) + (5,) * rank, (2, 0) + (3,) * rank),
        ((1, 2) + (2,) * rank, (1, 2) + (0,) * rank),        # D=2, k=3: floor(-1/1)+1 = 0
    ]:
        x = data(rng, shape, kind)
        for so in (0, 1):
            y, ind = pooling.max_pool(x, k, storage_order=so, return_indices=True)
            assert y.shape == out and ind.shape == out
            assert y.dtype == x.dtype and ind.dtype == np.int64
            assert pooling.max_pool(x, k).shape == out
            assert pooling.max_pool_output_shape(shape, k) == out
    # D=2, k=3, s=2: floor(-1/2)+1 = 0 on one axis only; the other axes are not empty.
    shape = (1, 1) + (2,) + (4,) * (rank - 1)
    x = data(rng, shape, kind)
    y = pooling.max_pool(x, (3,) + (1,) * (rank - 1), strides=2)
    assert y.shape == (1, 1, 0) + (2,) * (rank - 1)


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_zero_sized_spatial_axis_with_pads(kind):
    """D = 0 with pads gives windows that are all empty: Y = -inf / minimum, Indices = -1."""
    x = np.zeros((1, 2, 0, 3), dtype=POOL_DTYPES[kind])
    y, ind = pooling.max_pool(x, (1, 1), pads=(1, 0, 1, 0), return_indices=True)
    assert y.shape == (1, 2, 2, 3)
    low = (to_dtype([-np.inf], kind)[0] if kind in FLOAT_KINDS else False if kind == "bool"
           else np.iinfo(kind).min)
    assert_same(y, np.full(y.shape, low, dtype=x.dtype) if kind != "bfloat16"
                else to_dtype(np.full(y.shape, -np.inf), kind))
    assert (ind == -1).all()


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_scalar_attributes_mean_every_axis(rank, rng):
    """A single int for kernel_shape/strides/dilations/pads means the same on every axis."""
    x = make_array(rng, (1, 2) + (7,) * rank, "float32")
    a = pooling.max_pool(x, 2, strides=2, dilations=2, pads=1, return_indices=True)
    b = pooling.max_pool(x, [2] * rank, strides=[2] * rank, dilations=[2] * rank,
                         pads=[1] * (2 * rank), return_indices=True)
    c = pooling.max_pool(x, np.array([2] * rank), strides=tuple([2] * rank),
                         dilations=np.array([2] * rank, dtype=np.int32), pads=np.array([1] * 2 * rank),
                         return_indices=True)
    for got in (a, c):
        assert_same(got[0], b[0])
        assert_same(got[1], b[1])


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_indices_point_at_y(kind, rng):
    """X.reshape(-1)[Indices] carries Y's exact bits (storage_order 0), several shapes."""
    for shape, attrs in [
        ((2, 3, 10, 9), dict(kernel_shape=(3, 3), strides=2, pads=1)),
        ((1, 4, 6, 5, 7), dict(kernel_shape=(2, 3, 2), dilations=(2, 1, 3), ceil_mode=True)),
        ((3, 2, 17), dict(kernel_shape=4, strides=3, auto_pad="SAME_LOWER")),
    ]:
        x = data(rng, shape, kind)
        y, ind = pooling.max_pool(x, return_indices=True, **attrs)
        assert (ind >= 0).all()
        raw = x.view(np.uint16) if x.dtype.itemsize == 2 else x
        yr = y.view(np.uint16) if y.dtype.itemsize == 2 else y
        assert raw.reshape(-1)[ind].tobytes() == yr.tobytes()


def test_larger_input_matches_reference():
    """One bigger 2-D input (several output row blocks per thread) against the reference."""
    rng = np.random.default_rng(11)
    x = make_array(rng, (1, 3, 40, 37), "float32")
    for attrs in (dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
                  dict(kernel_shape=(2, 5), dilations=(3, 1), ceil_mode=1, strides=(1, 2))):
        check_against_reference(x, attrs, orders=False)


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_unusual_layouts(kind, rng):
    """Negative strides, transposes, zero strides and unaligned memory all give the C-order result."""
    x = make_array(rng, (2, 3, 7, 6), kind)
    views = {
        "reversed": x[..., ::-1],
        "reversed_planes": x[::-1, ::-1, ::-2],
        "transposed": x.transpose(0, 1, 3, 2),
        "broadcast": np.broadcast_to(x[:, :, :1, :], x.shape),
        "unaligned": unaligned(x),
    }
    for name, xm in views.items():
        for attrs in (dict(kernel_shape=(2, 3), strides=(1, 2), pads=(1, 0, 0, 1)),
                      dict(kernel_shape=(3, 2), dilations=2, ceil_mode=1, storage_order=1)):
            got = pooling.max_pool(xm, return_indices=True, **attrs)
            expected = pooling.max_pool(np.ascontiguousarray(xm), return_indices=True, **attrs)
            assert_same(got[0], expected[0]), name
            assert_same(got[1], expected[1]), name


def test_legacy_bfloat16_byteswapped(rng):
    bits = make_array(rng, (1, 2, 6, 5), "bfloat16").view(np.uint16)
    native = bits.view(LEGACY_BFLOAT16)
    swapped = bits.astype(">u2").view(np.dtype((">u2", {"bfloat16": (">u2", 0)})))
    a = pooling.max_pool(native, 2, strides=2, pads=1, return_indices=True)
    b = pooling.max_pool(swapped, 2, strides=2, pads=1, return_indices=True)
    assert b[0].dtype == LEGACY_BFLOAT16
    assert a[0].tobytes() == b[0].tobytes()
    assert_same(a[1], b[1])
