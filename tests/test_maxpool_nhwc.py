"""MaxPool in the channels-last layout (com.ms.internal.nhwc) and fused activation (SPEC 1.3-1.5)."""
import numpy as np
import pytest

import pooling
from pooling import reference

from conftest import FLOAT_KINDS, POOL_DTYPES, as_float64, assert_same, make_array, memory_orders, to_dtype, to_nhwc

SHAPES = {1: (2, 3, 11), 2: (2, 3, 9, 8), 3: (2, 3, 6, 5, 7), 4: (1, 2, 5, 4, 6, 5)}
ATTRIBUTES = [
    dict(kernel_shape=2),
    dict(kernel_shape=3, strides=2, pads=1),
    dict(kernel_shape=3, strides=2, dilations=2, pads=2, ceil_mode=True),
    dict(kernel_shape=2, strides=3, pads=3, ceil_mode=True),        # pads >= kernel: empty windows
    dict(kernel_shape=3, strides=2, auto_pad="SAME_LOWER", dilations=2),
    dict(kernel_shape=3, auto_pad="VALID", strides=2),
]


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("attrs", ATTRIBUTES, ids=lambda a: "-".join(f"{k}{v}" for k, v in a.items()))
def test_nhwc_equals_transposed_nchw(rng, kind, rank, attrs):
    x = make_array(rng, SHAPES[rank], kind)
    y, i = pooling.max_pool(x, return_indices=True, **attrs)
    yh, ih = pooling.max_pool(to_nhwc(x), return_indices=True, layout="NHWC", **attrs)
    assert_same(yh, to_nhwc(y))
    want_y, want_i = reference.max_pool(x, return_indices=True, **attrs)
    assert_same(y, want_y)
    np.testing.assert_array_equal(i, want_i)
    want_yh, want_ih = reference.max_pool(to_nhwc(x), return_indices=True, layout="NHWC", **attrs)
    assert_same(want_yh, to_nhwc(want_y))
    np.testing.assert_array_equal(ih, want_ih)  # NHWC offsets, SPEC 1.5
    valid = ih >= 0
    assert_same(to_nhwc(x).reshape(-1)[ih[valid]], yh[valid])  # x.reshape(-1)[i] == y
    assert pooling.max_pool_output_shape(to_nhwc(x).shape, layout="NHWC", **attrs) == yh.shape


@pytest.mark.parametrize("kind", ["float32", "bfloat16", "uint8"])
def test_nhwc_memory_orders_and_threads(rng, kind):
    x = to_nhwc(make_array(rng, (2, 5, 13, 12), kind))
    want, want_i = pooling.max_pool(x, 3, strides=2, pads=1, layout="NHWC", return_indices=True,
                                    n_threads=1)
    for name, variant in memory_orders(x):
        before = np.array(variant, copy=True)
        for n_threads in (1, 2, -1, None):
            got, got_i = pooling.max_pool(variant, 3, strides=2, pads=1, layout="NHWC",
                                          return_indices=True, n_threads=n_threads)
            assert_same(got, want)
            np.testing.assert_array_equal(got_i, want_i)
        assert_same(np.asarray(variant), before)  # input untouched


@pytest.mark.parametrize("kind", [kind for kind in POOL_DTYPES if kind != "bool"])  # (bool: no activation)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("activation,params", [("Relu", None), ("Relu", [7, 9]), ("Clip", [-1.5, 2.5]),
                                               ("Clip", [0.25, 0.75]), ("Clip", [-300, 300])])
def test_activation_matches_reference(rng, kind, layout, activation, params):
    x = make_array(rng, (2, 3, 9, 8), kind)
    attrs = dict(kernel_shape=2, strides=3, pads=3, ceil_mode=True)  # has empty windows too
    want = reference.max_pool(x, activation=activation, activation_params=params, **attrs)
    xin = x if layout == "NCHW" else to_nhwc(x)
    got = pooling.max_pool(xin, layout=layout, activation=activation, activation_params=params, **attrs)
    assert_same(got if layout == "NCHW" else np.moveaxis(got, -1, 1), want)


@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_activation_clamps_but_keeps_nan(kind):
    raw = [np.nan, -np.inf, -3.0, -0.0, 0.0, 0.5, 2.0, 7.0, np.inf]
    x = np.array(raw, dtype=np.float64)
    from conftest import to_dtype

    x = to_dtype(x, kind).reshape(1, 1, -1)
    relu = pooling.max_pool(x, 1, activation="Relu").astype(np.float64).ravel()
    clip = pooling.max_pool(x, 1, activation="Clip", activation_params=[-1, 1]).astype(np.float64).ravel()
    assert np.isnan(relu[0]) and np.isnan(clip[0])
    np.testing.assert_array_equal(relu[1:], [0, 0, -0.0, 0, 0.5, 2, 7, np.inf])
    np.testing.assert_array_equal(clip[1:], [-1, -1, -0.0, 0, 0.5, 1, 1, 1])
    assert np.signbit(relu[3])  # -0.0 is not below 0: it stays -0.0


@pytest.mark.parametrize("kind,params,expected", [
    ("int8", [-1.5, 2.5], [-1, -1, 0, 2, 2]),          # [ceil(min), floor(max)]
    ("int8", [-1000, 1000], [-128, -5, 0, 5, 127]),   # limited to the type's range
    ("uint8", [-3, 4.9], [0, 0, 4, 4, 4]),
])
def test_activation_integer_bounds(kind, params, expected):
    values = [-128, -5, 0, 5, 127] if kind == "int8" else [0, 0, 5, 200, 255]
    x = np.array(values, dtype=kind).reshape(1, 1, -1)
    got = pooling.max_pool(x, 1, activation="Clip", activation_params=params)
    np.testing.assert_array_equal(got.ravel(), np.array(expected, dtype=kind))


def test_nhwc_round_trips_through_flat_offsets(rng):
    x = to_nhwc(make_array(rng, (3, 4, 7, 9), "float32", special=False))
    y, i = pooling.max_pool(x, 3, strides=2, layout="NHWC", return_indices=True)
    assert i.shape == y.shape and i.dtype == np.int64
    assert_same(x.reshape(-1)[i], y)


@pytest.mark.parametrize("kind", ["int8", "uint8"])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[2, 2], strides=[2, 2]),
                                   dict(kernel_shape=[3, 2], strides=[1, 2], pads=[0, 1, 2, 0])])
def test_nhwc_matches_onnxruntime_contrib(rng, kind, attrs):
    ort = pytest.importorskip("onnxruntime")
    helper = pytest.importorskip("onnx.helper")
    from onnx import TensorProto

    x = to_nhwc(make_array(rng, (2, 5, 11, 10), kind))
    elem = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}[kind]
    node = helper.make_node("NhwcMaxPool", ["X"], ["Y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", elem, x.shape)],
                              [helper.make_tensor_value_info("Y", elem, None)])
    model = helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 22), helper.make_opsetid("com.microsoft", 1)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"X": x})[0]
    assert_same(pooling.max_pool(x, layout="NHWC", **attrs), want)


def test_nhwc_validation():
    x = np.zeros((1, 4, 4, 3), np.float32)
    with pytest.raises(ValueError, match="MaxPool: storage_order=1 .*NHWC"):
        pooling.max_pool(x, 2, layout="NHWC", storage_order=1)
    with pytest.raises(ValueError, match="MaxPool: layout"):
        pooling.max_pool(x, 2, layout="NDHWC")
    with pytest.raises(ValueError, match="MaxPool: kernel_shape must have 2 values"):
        pooling.max_pool(x, [2, 2, 2], layout="NHWC")
    with pytest.raises(ValueError, match="MaxPool: activation must be"):
        pooling.max_pool(x, 2, layout="NHWC", activation="Tanh")
    with pytest.raises(ValueError, match="MaxPool: activation_params for Clip"):
        pooling.max_pool(x, 2, layout="NHWC", activation="Clip", activation_params=[1, 0])
    with pytest.raises(ValueError, match="MaxPool: activation_params for Clip"):
        pooling.max_pool(x, 2, layout="NHWC", activation="Clip", activation_params=[0])
    # Under opset=K the fused activation needs the NHWC operator.
    pooling.max_pool(x, 2, layout="NHWC", activation="Relu", opset=11)
    with pytest.raises(ValueError, match="MaxPool: activation='Relu' under opset=11 needs layout 'NHWC'"):
        pooling.max_pool(np.zeros((1, 3, 4, 4), np.float32), 2, activation="Relu", opset=11)
    assert pooling.max_pool_output_shape((2, 9, 8, 5), 3, strides=2, layout="NHWC") == (2, 4, 3, 5)


NAN_SCAN = [("nhwc", kind, indices) for kind in FLOAT_KINDS + ("int32",) for indices in (False, True)] + [
    ("nhwc_blocks", kind, False) for kind in ("float32", "float16", "bfloat16")]


@pytest.mark.parametrize("nt", [1, 2, 3])
@pytest.mark.parametrize("strategy, kind, indices", NAN_SCAN)
def test_nhwc_launch_reports_whether_it_wrote_a_nan(rng, strategy, kind, indices, nt):
    """max_pool's private `_nan` (pooling.torch's question): the channels-last launch scans each output row
    as it writes it and says whether y holds a NaN: none, one in the last image's last output row only (the
    last work item), one in the first, or a NaN in x that no window reads (k2 s3 skips every third column)."""
    def run(x, **attrs):
        nan = []
        got = pooling.max_pool(x, layout="NHWC", return_indices=indices, n_threads=nt, _strategy=strategy,
                               _nan=nan, **attrs)
        y = got[0] if indices else got
        want = reference.max_pool(x, layout="NHWC", return_indices=indices, **attrs)
        assert_same(y, want[0] if indices else want)
        if indices:
            np.testing.assert_array_equal(got[1], want[1])
        assert nan == [bool(np.isnan(as_float64(y)).any())]
        return nan[0]

    x = make_array(rng, (2, 9, 10, 64), kind, special=False)
    attrs = dict(kernel_shape=3, strides=2, pads=1)
    assert not run(x, **attrs)
    if kind == "int32":
        return
    def with_nan(at):  # (through float64: ONNX's legacy bfloat16, without ml_dtypes, takes no NaN)
        values = as_float64(x)
        values[at] = np.nan
        return to_dtype(values, kind)

    # one read only by the last output row's last window, one by the first
    assert run(with_nan((1, 8, 9, 63)), **attrs) and run(with_nan((0, 0, 0, 5)), **attrs)
    assert not run(with_nan((1, 4, 2, 7)), kernel_shape=2, strides=3)  # column 2: between k2 s3's windows
