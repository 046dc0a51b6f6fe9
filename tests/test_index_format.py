"""Index encodings (behaviour.md §6): max_pool(index_format=), max_unpool(index_format=),
convert_indices, against the formulas applied to "onnx" indices, the twin and torch."""
import itertools

import numpy as np
import pytest

import pooling
from conftest import (POOL_DTYPES, TORCH_POOL_CASES, assert_same, make_array, tie_free, to_nhwc,
                      torch_pool_attrs)
from pooling import reference
from pooling._maxpool_strategies import Strategy as S

FORMATS = ("onnx", "plane", "tf", "tf_batch")

# The strategies that produce Indices: layout -> {strategy: spatial ranks}
INDEX_STRATEGIES = {
    "NCHW": {S.FUSED: (1, 2, 3), S.DEPTH_SPLIT: (3,), S.SEPARABLE: (1, 2, 3, 4)},
    "NHWC": {S.NHWC: (1, 2, 3), S.NHWC_TRANSPOSED: (1, 2, 3, 4)},
}
CASES = [(layout, strategy, rank) for layout, table in INDEX_STRATEGIES.items()
         for strategy, ranks in table.items() for rank in ranks]


def formula(onnx, x_shape, layout, fmt):
    """`fmt` from "onnx" indices by the formulas of behaviour.md §6, from the target's coordinates."""
    rank = len(x_shape)
    valid = onnx >= 0
    coords = np.unravel_index(np.where(valid, onnx, 0), x_shape)
    if layout == "NCHW":
        n, c, pos, spatial, channels = coords[0], coords[1], coords[2:], x_shape[2:], x_shape[1]
    else:
        n, c, pos, spatial, channels = coords[0], coords[rank - 1], coords[1:-1], x_shape[1:-1], x_shape[-1]
    p = np.ravel_multi_index(pos, spatial)
    plane = int(np.prod(spatial))
    value = {"onnx": onnx, "plane": p, "tf": p * channels + c,
             "tf_batch": (n * plane + p) * channels + c}[fmt]
    return np.where(valid, value, -1)


def _attrs(rank):
    """Overlapping strided windows with pads, dilation with an end pad, ceil_mode with a window
    past the input, empty windows (pads wider than the dilated kernel reaches)."""
    return [
        dict(kernel_shape=(3,) * rank, strides=(2,) * rank, pads=(1,) * (2 * rank)),
        dict(kernel_shape=(2,) * rank, dilations=(2,) + (1,) * (rank - 1), pads=(0, 1) * rank),
        dict(kernel_shape=(3,) + (2,) * (rank - 1), strides=(1,) + (2,) * (rank - 1), ceil_mode=True),
        dict(kernel_shape=(1,) * rank, strides=(3,) * rank, pads=(2,) * (2 * rank)),
    ]


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("layout, strategy, rank", CASES,
                         ids=[f"{lay}-{s.value}-{r}d" for lay, s, r in CASES])
def test_every_format_every_strategy_against_the_formula(layout, strategy, rank, kind, rng):
    x = make_array(rng, (2, 3) + (7, 6, 5, 4)[:rank], kind)
    if layout == "NHWC":
        x = to_nhwc(x)
    for attrs in _attrs(rank):
        _, onnx = reference.max_pool(x, return_indices=True, layout=layout, **attrs)
        if attrs["kernel_shape"][0] == 1:
            assert (onnx == -1).any()  # empty windows are tested
        for fmt in FORMATS:
            want = formula(onnx, x.shape, layout, fmt)
            twin = reference.max_pool(x, return_indices=True, layout=layout, index_format=fmt, **attrs)
            for nt in (1, 2):
                y, got = pooling.max_pool(x, return_indices=True, layout=layout, index_format=fmt,
                                          n_threads=nt, _strategy=strategy, **attrs)
                np.testing.assert_array_equal(got, want, err_msg=f"{fmt} {attrs} nt={nt}")
                assert got.dtype == np.int64
                assert_same(y, twin[0])
                np.testing.assert_array_equal(got, twin[1])


@pytest.mark.parametrize("fmt", FORMATS)
def test_indices_out_and_the_chosen_strategy(fmt, rng):
    x = make_array(rng, (2, 5, 9, 8), "float32")
    out = np.full((2, 5, 5, 4), 99, np.int64)
    _, got = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True, index_format=fmt, indices_out=out)
    assert got is out
    _, onnx = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True)
    np.testing.assert_array_equal(got, formula(onnx, x.shape, "NCHW", fmt))


def test_storage_order_1_plane_is_column_major_inside_the_plane(rng):
    x = make_array(rng, (2, 3, 5, 7), "float32", special=False)
    _, col = pooling.max_pool(x, 2, storage_order=1, return_indices=True)
    _, plane = pooling.max_pool(x, 2, storage_order=1, return_indices=True, index_format="plane")
    np.testing.assert_array_equal(plane, np.where(col >= 0, col % 35, -1))
    _, rows = pooling.max_pool(x, 2, return_indices=True, index_format="plane")
    h, w = np.divmod(rows, 7)
    np.testing.assert_array_equal(plane, h + w * 5)
    twin = reference.max_pool(x, 2, storage_order=1, return_indices=True, index_format="plane")
    np.testing.assert_array_equal(plane, twin[1])


@pytest.mark.parametrize("fmt", ["tf", "tf_batch"])
def test_tensorflow_formats_raise_with_storage_order_1(fmt):
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(ValueError, match=rf"MaxPool: index_format='{fmt}' is not defined with storage_order=1"):
        pooling.max_pool(x, 2, storage_order=1, return_indices=True, index_format=fmt)


def test_index_format_is_checked_without_return_indices_and_otherwise_ignored():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert_same(pooling.max_pool(x, 2, index_format="plane"), pooling.max_pool(x, 2))
    with pytest.raises(ValueError, match=r"MaxPool: index_format must be one of .* got 'torch'"):
        pooling.max_pool(x, 2, index_format="torch")
    with pytest.raises(TypeError, match=r"MaxPool: index_format must be a string"):
        pooling.max_pool(x, 2, index_format=None)


def test_tf_batch_is_onnx_for_nhwc_and_tf_the_image_offset(rng):
    x = to_nhwc(make_array(rng, (3, 4, 6, 6), "float32"))
    _, onnx = pooling.max_pool(x, 2, strides=2, layout="NHWC", return_indices=True)
    _, tfb = pooling.max_pool(x, 2, strides=2, layout="NHWC", return_indices=True, index_format="tf_batch")
    _, tf = pooling.max_pool(x, 2, strides=2, layout="NHWC", return_indices=True, index_format="tf")
    np.testing.assert_array_equal(onnx, tfb)
    np.testing.assert_array_equal(tf, onnx - np.arange(3).reshape(3, 1, 1, 1) * 6 * 6 * 4)


# -- max_unpool ---------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_max_unpool_reads_every_format(layout, rank, kind, rng):
    x = make_array(rng, (2, 3) + (6, 5, 4)[:rank], kind)
    if layout == "NHWC":
        x = to_nhwc(x)
    attrs = dict(kernel_shape=2, strides=2, layout=layout)
    y, onnx = pooling.max_pool(x, return_indices=True, **attrs)
    want = pooling.max_unpool(y, onnx, output_shape=x.shape, **attrs)
    for fmt in FORMATS:
        _, idx = pooling.max_pool(x, return_indices=True, index_format=fmt, **attrs)
        for nt in (1, 2):
            got = pooling.max_unpool(y, idx, output_shape=x.shape, index_format=fmt, n_threads=nt, **attrs)
            assert_same(got, want)
        assert_same(reference.max_unpool(y, idx, output_shape=x.shape, index_format=fmt, **attrs), want)


@pytest.mark.parametrize("fmt, bad, limit", [("plane", 16, 16), ("tf", 32, 32), ("tf_batch", 64, 64),
                                              ("plane", -2, 16)])
def test_max_unpool_index_out_of_its_format_range(fmt, bad, limit):
    y = np.ones((2, 2, 2, 2), np.float32)
    idx = np.zeros((2, 2, 2, 2), np.int64)
    idx[1, 0, 1, 1] = bad
    with pytest.raises(ValueError, match=rf"MaxUnpool: indices\[1, 0, 1, 1\] = {bad} is outside "
                                         rf"\[0, {limit}\), the range of '{fmt}' indices for the output"):
        pooling.max_unpool(y, idx, 2, strides=2, index_format=fmt)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_unpool_duplicates_and_indices_made_elsewhere(layout, rng):
    """Random targets with many duplicates, in each format: the last write wins for every n_threads,
    as in the twin (the kernel reads "plane" and NHWC "tf" in place)."""
    shape, out_shape = ((3, 4, 5, 6), (3, 4, 7, 8)) if layout == "NCHW" else ((3, 5, 6, 4), (3, 7, 8, 4))
    x = rng.standard_normal(shape).astype(np.float32)
    onnx = rng.integers(0, int(np.prod(out_shape)), size=shape)
    if layout == "NCHW":  # (kept inside each plane, so every format can say it)
        onnx = (np.arange(12).reshape(3, 4, 1, 1) * 56 + onnx % 56)
    else:
        onnx = np.arange(3).reshape(3, 1, 1, 1) * 224 + (onnx % 56) * 4 + np.arange(4)
    for fmt in FORMATS:
        idx = pooling.convert_indices(onnx, out_shape, from_format="onnx", to_format=fmt, layout=layout)
        want = reference.max_unpool(x, idx, 2, output_shape=out_shape, layout=layout, index_format=fmt)
        for nt in (1, 2, 3):
            got = pooling.max_unpool(x, idx, 2, output_shape=out_shape, layout=layout, index_format=fmt,
                                     n_threads=nt)
            assert_same(got, want)


@pytest.mark.parametrize("fmt, bad, limit", [("plane", 16, 16), ("tf", 48, 48), ("plane", -1, 16),
                                              ("tf", 2**64 - 1, 48), ("tf_batch", 96, 96), ("tf_batch", -1, 96)])
def test_max_unpool_nhwc_index_out_of_its_format_range(fmt, bad, limit):
    y = np.ones((2, 2, 2, 3), np.float32)
    idx = np.zeros((2, 2, 2, 3), np.uint64 if bad > 2**63 else np.int64)
    idx[1, 0, 1, 2] = bad
    for nt in (1, 2):
        with pytest.raises(ValueError, match=rf"MaxUnpool: indices\[1, 0, 1, 2\] = {bad} is outside "
                                             rf"\[0, {limit}\), the range of '{fmt}' indices for the output"):
            pooling.max_unpool(y, idx, 2, strides=2, index_format=fmt, layout="NHWC", n_threads=nt)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_unpool_rejects_minus_one_in_every_format_naming_it(layout):
    """-1 (and any bad index) is reported in the range of its own format, whether the kernel reads
    the format in place or it was converted to flat offsets first; "onnx" in the flat range."""
    y = np.ones((1, 2, 2, 2), np.float32)    # output (1, 2, 4, 4): P = 16, C = 2
    idx = np.array([[[[0, 2], [8, 10]], [[1, 3], [9, -1]]]])
    if layout == "NHWC":
        y, idx = to_nhwc(y), to_nhwc(idx)   # the -1 stays at [0, 1, 1, 1]
    limits = {"onnx": 32, "plane": 16, "tf": 32, "tf_batch": 32}
    for fmt in FORMATS:
        if fmt == "onnx":
            message = r"is outside \[0, 32\), the flat range of the output"
        else:
            message = (rf"is outside \[0, {limits[fmt]}\), the range of '{fmt}' indices for the output of "
                       rf"shape \[[0-9, ]+\] in layout '{layout}' \(-1 is out of range too;")
        with pytest.raises(ValueError, match=rf"^MaxUnpool: indices\[0, 1, 1, 1\] = -1 {message}"):
            pooling.max_unpool(y, idx, 2, strides=2, index_format=fmt, layout=layout)


def test_max_unpool_nchw_tf_out_of_range_names_the_format():
    y = np.ones((1, 2, 2, 2), np.float32)    # output (1, 2, 4, 4)
    idx = np.zeros((1, 2, 2, 2), np.int64)
    idx[0, 1, 0, 1] = 32
    for fmt in ("tf", "tf_batch"):
        with pytest.raises(ValueError, match=r"^MaxUnpool: indices\[0, 1, 0, 1\] = 32 is outside \[0, 32\), "
                                             rf"the range of '{fmt}' indices for the output .* \(-1 is out of"):
            pooling.max_unpool(y, idx, 2, strides=2, index_format=fmt)


# -- convert_indices ----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_convert_round_trips_between_every_pair(layout, rank, rng):
    x = make_array(rng, (2, 3) + (7, 6, 5)[:rank], "float32")
    if layout == "NHWC":
        x = to_nhwc(x)
    _, onnx = pooling.max_pool(x, 2, strides=2, pads=2, return_indices=True, layout=layout)
    assert (onnx == -1).any()
    coded = {fmt: formula(onnx, x.shape, layout, fmt) for fmt in FORMATS}
    for a, b in itertools.product(FORMATS, FORMATS):
        got = pooling.convert_indices(coded[a], x.shape, from_format=a, to_format=b, layout=layout)
        np.testing.assert_array_equal(got, coded[b], err_msg=f"{a} -> {b}")
        assert got.dtype == np.int64 and got is not coded[a]
        np.testing.assert_array_equal(
            reference.convert_indices(coded[a], x.shape, from_format=a, to_format=b, layout=layout), coded[b])


def test_convert_takes_any_integer_dtype_and_keeps_its_input():
    idx = np.array([[[[3, -1], [0, 8]]]], np.int16)
    keep = idx.copy()
    got = pooling.convert_indices(idx, (1, 1, 3, 3), from_format="plane", to_format="onnx")
    np.testing.assert_array_equal(got, idx)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(idx, keep)
    got = pooling.convert_indices([[[1, 2]]], (1, 1, 4), from_format="onnx", to_format="plane")
    assert got.tolist() == [[[1, 2]]]


def test_convert_onnx_into_another_plane_keeps_its_target_where_the_format_can():
    # Entry (0, 0) points into plane (1, 1): tf_batch keeps it; plane and tf take n, c from the entry.
    onnx = np.array([[[15], [5]], [[8], [0]]])    # x of shape (2, 2, 4): plane size 4
    tfb = pooling.convert_indices(onnx, (2, 2, 4), from_format="onnx", to_format="tf_batch")
    assert tfb.ravel().tolist() == [(1 * 4 + 3) * 2 + 1, (0 * 4 + 1) * 2 + 1, (1 * 4 + 0) * 2 + 0, 0]
    back = pooling.convert_indices(tfb, (2, 2, 4), from_format="tf_batch", to_format="onnx")
    np.testing.assert_array_equal(back, onnx)
    plane = pooling.convert_indices(onnx, (2, 2, 4), from_format="onnx", to_format="plane")
    assert plane.ravel().tolist() == [3, 1, 0, 0]


@pytest.mark.parametrize("fmt, limit", [("onnx", 96), ("plane", 16), ("tf", 48), ("tf_batch", 96)])
def test_convert_out_of_range(fmt, limit):
    idx = np.zeros((2, 3, 2, 2), np.int64)
    for bad in (limit, -2):
        idx[1, 2, 0, 1] = bad
        with pytest.raises(ValueError, match=rf"convert_indices: indices\[1, 2, 0, 1\] = {bad} is outside "
                                             rf"\[0, {limit}\), the range of '{fmt}' indices for x of shape "
                                             r"\[2, 3, 4, 4\]"):
            pooling.convert_indices(idx, (2, 3, 4, 4), from_format=fmt, to_format="onnx")


def test_convert_errors():
    idx = np.zeros((1, 2, 2, 2), np.int64)
    with pytest.raises(ValueError, match=r"convert_indices: from_format must be one of"):
        pooling.convert_indices(idx, (1, 2, 4, 4), from_format="torch", to_format="onnx")
    with pytest.raises(ValueError, match=r"convert_indices: to_format must be one of"):
        pooling.convert_indices(idx, (1, 2, 4, 4), from_format="onnx", to_format="ONNX")
    with pytest.raises(ValueError, match=r"convert_indices: indices of shape \[1, 2, 2, 2\] does not fit "
                                         r"x_shape \[1, 3, 4, 4\]"):
        pooling.convert_indices(idx, (1, 3, 4, 4), from_format="onnx", to_format="plane")
    with pytest.raises(ValueError, match=r"does not fit x_shape \[1, 2, 4\]"):
        pooling.convert_indices(idx, (1, 2, 4), from_format="onnx", to_format="plane")
    with pytest.raises(ValueError, match=r"convert_indices: layout must be one of"):
        pooling.convert_indices(idx, (1, 2, 4, 4), from_format="onnx", to_format="plane", layout="NDHWC")
    with pytest.raises(TypeError, match=r"convert_indices: indices must be an array of integers, got dtype float64"):
        pooling.convert_indices(idx.astype(float), (1, 2, 4, 4), from_format="onnx", to_format="plane")
    with pytest.raises(TypeError, match=r"convert_indices: x_shape"):
        pooling.convert_indices(idx, 4, from_format="onnx", to_format="plane")
    with pytest.raises(ValueError, match=r"convert_indices: indices\[0, 0, 0, 0\] = 18446744073709551615 is past"):
        pooling.convert_indices(np.full((1, 2, 2, 2), 2**64 - 1, np.uint64), (1, 2, 4, 4),
                                from_format="onnx", to_format="plane")


def test_convert_empty_input():
    got = pooling.convert_indices(np.full((1, 2, 0, 3), -1), (1, 2, 0, 5), from_format="onnx", to_format="tf")
    assert got.shape == (1, 2, 0, 3)
    got = pooling.convert_indices(np.full((1, 2, 2), -1), (1, 2, 0), from_format="plane", to_format="onnx")
    assert got.tolist() == [[[-1, -1], [-1, -1]]]
    with pytest.raises(ValueError, match=r"= 0 is outside \[0, 0\)"):
        pooling.convert_indices(np.zeros((1, 2, 2), np.int64), (1, 2, 0), from_format="plane", to_format="onnx")


@pytest.mark.parametrize("layout, x_shape, pooled", [("NCHW", (0, 3, 4, 4), (0, 3, 2, 2)),
                                                     ("NCHW", (2, 0, 4, 4), (2, 0, 2, 2)),
                                                     ("NHWC", (0, 4, 4, 3), (0, 2, 2, 3)),
                                                     ("NHWC", (2, 4, 4, 0), (2, 2, 2, 0))])
def test_empty_indices_in_every_format(layout, x_shape, pooled):
    """No images or no channels: nothing to convert, in convert_indices and in MaxPool's
    re-encoding pass (from_onnx, which the paths without in-kernel encoding run)."""
    from pooling.indices import from_onnx
    lead = (x_shape[0], x_shape[1] if layout == "NCHW" else x_shape[-1])
    for fmt in FORMATS:
        empty = np.zeros(pooled, np.int64)
        got = pooling.convert_indices(empty, x_shape, from_format="onnx", to_format=fmt, layout=layout)
        assert got.shape == pooled and got.dtype == np.int64
        back = pooling.convert_indices(got, x_shape, from_format=fmt, to_format="onnx", layout=layout)
        assert back.shape == pooled
        from_onnx(empty, lead + (16,), layout, fmt)  # in place: nothing to do, and no error
        assert empty.shape == pooled


# -- torch ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("rank, args", TORCH_POOL_CASES)
def test_plane_is_torch_indices_contiguous_and_channels_last(rank, args, rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = tie_free(rng, (2, 3) + (9, 8, 7)[:rank], np.float32)
    pool = getattr(F, f"max_pool{rank}d")
    unpool = getattr(F, f"max_unpool{rank}d")
    ty, ti = pool(torch.from_numpy(x), return_indices=True, **args)
    attrs = torch_pool_attrs(args, rank)
    y, idx = pooling.max_pool(x, return_indices=True, index_format="plane", **attrs)
    np.testing.assert_array_equal(y, ty.numpy())
    np.testing.assert_array_equal(idx, ti.numpy())
    # MaxUnpool reads them as torch does (whose output_size check knows no dilation: the
    # unpooled shape is given as a kernel and stride that it accepts).
    k = tuple(d - o + 1 for d, o in zip(x.shape[2:], ty.shape[2:]))  # (O - 1) * 1 + k = D
    want = unpool(ty, ti, k, 1, output_size=x.shape[2:])
    got = pooling.max_unpool(y, idx, k, output_shape=x.shape, index_format="plane")
    np.testing.assert_array_equal(got, want.numpy())
    if rank in (2, 3):  # channels-last tensors: the same indices, which NHWC "plane" gives too
        fmt = torch.channels_last if rank == 2 else torch.channels_last_3d
        cy, ci = pool(torch.from_numpy(x).contiguous(memory_format=fmt), return_indices=True, **args)
        np.testing.assert_array_equal(ci.numpy(), ti.numpy())
        yh, ih = pooling.max_pool(to_nhwc(x), return_indices=True, index_format="plane", layout="NHWC", **attrs)
        np.testing.assert_array_equal(ih, to_nhwc(ci.numpy()))
        back = pooling.max_unpool(yh, ih, k, output_shape=to_nhwc(x).shape, index_format="plane",
                                  layout="NHWC")
        np.testing.assert_array_equal(back, to_nhwc(want.numpy()))


@pytest.mark.parametrize("kind", ["float32", "uint8", "float16"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=(1, 3, 3), pads=(0, 1, 1, 0, 1, 1)),     # as 2-D slices
                                   dict(kernel_shape=(3, 3, 3), strides=2, pads=1),          # DEPTH_SPLIT / FUSED
                                   dict(kernel_shape=(2, 1, 2), strides=(1, 1, 2))])
def test_the_chosen_strategies_against_the_formula(attrs, layout, kind, rng):
    x = make_array(rng, (2, 3, 5, 6, 7), kind)
    if layout == "NHWC":
        x = to_nhwc(x)
    _, onnx = pooling.max_pool(x, return_indices=True, layout=layout, **attrs)
    for fmt in FORMATS:
        _, got = pooling.max_pool(x, return_indices=True, layout=layout, index_format=fmt, **attrs)
        np.testing.assert_array_equal(got, formula(onnx, x.shape, layout, fmt), err_msg=fmt)


def _no_second_pass(*args):
    raise AssertionError("Indices re-encoded after the kernel (from_onnx)")


@pytest.mark.parametrize("layout, strategy, rank", [(lay, s, r) for lay, s, r in CASES
                                                    if s in (S.FUSED, S.DEPTH_SPLIT, S.NHWC)])
def test_common_strategies_encode_in_the_kernel(layout, strategy, rank, monkeypatch, rng):
    """No second pass over Indices: the kernels of the common strategies write every format."""
    from pooling import _maxpool_strategies, indices
    monkeypatch.setattr(_maxpool_strategies, "from_onnx", _no_second_pass)
    monkeypatch.setattr(indices, "from_onnx", _no_second_pass)
    shape = (2, 3) + (7, 6, 5)[:rank]
    x = make_array(rng, shape, "float32")
    if layout == "NHWC":
        x = to_nhwc(x)
    _, onnx = reference.max_pool(x, 3, strides=2, pads=1, return_indices=True, layout=layout)
    for fmt, nt in itertools.product(FORMATS, (1, 2)):
        _, got = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True, layout=layout, index_format=fmt,
                                  n_threads=nt, _strategy=strategy)
        np.testing.assert_array_equal(got, formula(onnx, x.shape, layout, fmt), err_msg=fmt)
    # The patch bites: a strategy that writes "onnx" only re-encodes after, and is caught.
    other = S.SEPARABLE if layout == "NCHW" else S.NHWC_TRANSPOSED
    with pytest.raises(AssertionError, match="re-encoded after the kernel"):
        pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True, layout=layout, index_format="plane",
                         _strategy=other)


def test_a_launch_without_an_index_encoding_refuses_indices():
    """Launches start with no Indices encoding (maxpool_launch.pxi): one that never set it fails
    loudly when handed indices rather than writing a wrong encoding."""
    from pooling import maxpool
    from pooling._maxpool_strategies import launch
    plan = maxpool._plan((1, 2, 6, 6), kernel_shape=2, strides=2, pads=None, dilations=None, auto_pad="NOTSET",
                         ceil_mode=False, storage_order=0, return_indices=False, layout="NCHW",
                         activation=None, activation_params=None, opset=None, index_format="onnx")
    run = launch(plan, "float32", 1, False, "tiles")  # a kernel that writes no Indices
    x, y = np.zeros((1, 2, 6, 6), np.float32), np.zeros((1, 2, 3, 3), np.float32)
    run(x, y, None)
    with pytest.raises(RuntimeError, match="no Indices encoding"):
        run(x, y, np.zeros(y.shape, np.int64))
