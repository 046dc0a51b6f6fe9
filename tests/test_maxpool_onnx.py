"""MaxPool against onnxruntime and the official ONNX backend node tests.

onnxruntime is compared only where SPEC says it is right: no NaN, dilation 1 with
SAME padding, pads < kernel, no empty windows, input at least the kernel.
"""
import warnings

import numpy as np
import pytest

import pooling
from conftest import assert_same, make_array

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ORT_DTYPES = ("float32", "float64", "float16", "int8", "uint8")
SPATIAL = {1: (9,), 2: (9, 8), 3: (7, 6, 5)}


def rep(n, *values):
    return [values[i % len(values)] for i in range(n)]


# Attribute sets inside the region where onnxruntime follows SPEC.
ORT_CASES = {
    "k2": lambda n: dict(kernel_shape=rep(n, 2)),
    "k3_s2_p1": lambda n: dict(kernel_shape=rep(n, 3), strides=rep(n, 2), pads=rep(n, 1) * 2),
    "k3_s2_p1_ceil": lambda n: dict(kernel_shape=rep(n, 3), strides=rep(n, 2), pads=rep(n, 1) * 2,
                                    ceil_mode=1),
    "ceil_drop": lambda n: dict(kernel_shape=rep(n, 2), strides=rep(n, 3),
                                pads=rep(n, 0) + rep(n, 1), ceil_mode=1),
    "asymmetric_pads": lambda n: dict(kernel_shape=rep(n, 3), pads=rep(n, 1, 0) + rep(n, 0, 2)),
    "mixed": lambda n: dict(kernel_shape=rep(n, 2, 3, 1), strides=rep(n, 1, 2, 3)),
    "dilation2": lambda n: dict(kernel_shape=rep(n, 2), dilations=rep(n, 2)),
    "dilation_pads_ceil": lambda n: dict(kernel_shape=rep(n, 3), dilations=rep(n, 2, 1), strides=rep(n, 2),
                                         pads=rep(n, 1) * 2, ceil_mode=1),
    "valid_ceil": lambda n: dict(kernel_shape=rep(n, 3, 2), strides=rep(n, 2), auto_pad="VALID",
                                 ceil_mode=1),
    "same_upper": lambda n: dict(kernel_shape=rep(n, 3), strides=rep(n, 2), auto_pad="SAME_UPPER"),
    "same_upper_odd": lambda n: dict(kernel_shape=rep(n, 2, 4), auto_pad="SAME_UPPER"),
    "same_lower_odd": lambda n: dict(kernel_shape=rep(n, 2, 4), auto_pad="SAME_LOWER"),
    "same_lower_s2": lambda n: dict(kernel_shape=rep(n, 3, 2), strides=rep(n, 2), auto_pad="SAME_LOWER"),
}


def _model(kind, opset, attrs, with_indices):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(kind))
    outputs = [helper.make_tensor_value_info("Y", elem, None)]
    if with_indices:
        outputs.append(helper.make_tensor_value_info("I", TensorProto.INT64, None))
    node = helper.make_node("MaxPool", ["X"], [o.name for o in outputs], **attrs)
    graph = helper.make_graph([node], "maxpool", [helper.make_tensor_value_info("X", elem, None)], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _ort_run(x, opset, attrs, with_indices):
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(_model(x.dtype.name, opset, attrs, with_indices).SerializeToString(),
                                   options, providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x})


@pytest.mark.parametrize("case", sorted(ORT_CASES))
@pytest.mark.parametrize("rank", sorted(SPATIAL))
@pytest.mark.parametrize("kind", ORT_DTYPES)
def test_matches_onnxruntime(kind, rank, case):
    pytest.importorskip("onnxruntime")
    attrs = ORT_CASES[case](rank)
    rng = np.random.default_rng(rank * 100 + len(case))
    x = make_array(rng, (2, 3) + SPATIAL[rank], kind, special=False)   # ties, no NaN / -0.0 / inf
    # Preconditions of the comparison (SPEC: where onnxruntime is right).
    n = rank
    pads = attrs.get("pads", [0] * 2 * n)
    assert all(p < k for p, k in zip(pads, attrs["kernel_shape"] * 2))
    if attrs.get("auto_pad", "NOTSET").startswith("SAME"):
        assert "dilations" not in attrs
    e = [(k - 1) * d + 1 for k, d in zip(attrs["kernel_shape"], attrs.get("dilations", [1] * n))]
    assert all(d >= ei for d, ei in zip(SPATIAL[rank], e))
    missing = None
    for opset in (12, 22):
        (ort_y,) = _ort_run(x, opset, attrs, False)
        assert_same(pooling.max_pool(x, opset=opset, **attrs), ort_y)
        for so in (0, 1):
            ort_y, ort_i = _ort_run(x, opset, dict(attrs, storage_order=so), True)
            y, ind = pooling.max_pool(x, storage_order=so, return_indices=True, opset=opset, **attrs)
            assert (ind >= 0).all()                 # no empty windows in the comparison
            assert_same(y, ort_y)
            if ort_i is None:
                missing = _no_indices_reason(kind)
                continue
            assert_same(ind, ort_i)
    if missing:
        pytest.skip(missing)   # Y was compared above; there are no Indices to compare


def _no_indices_reason(kind):
    """Why there is nothing to compare our Indices with: onnxruntime returned None for them
    (its aarch64 build does for float16: docs/behaviour.md, "Peers by platform")."""
    import platform

    import onnxruntime
    return (f"onnxruntime {onnxruntime.__version__} on {platform.machine()} gives no Indices for a "
            f"{kind} MaxPool (Y compared)")


@pytest.mark.parametrize("opset", [8, 10, 11])
def test_matches_onnxruntime_older_opsets(opset):
    pytest.importorskip("onnxruntime")
    x = make_array(np.random.default_rng(opset), (2, 3, 9, 8), "float32", special=False)
    attrs = dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1])
    if opset >= 10:
        attrs.update(ceil_mode=1, dilations=[1, 2])
    for so in (0, 1):
        ort_y, ort_i = _ort_run(x, opset, dict(attrs, storage_order=so), True)
        y, ind = pooling.max_pool(x, storage_order=so, return_indices=True, opset=opset, **attrs)
        assert_same(y, ort_y)
        assert_same(ind, ort_i)


# --- the official ONNX backend node tests ----------------------------------------------------------

def _official_cases():
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    return {c.name: c for c in cases if "maxpool" in c.name.lower()}


OFFICIAL = _official_cases()


def _run_official(case, inputs):
    """Our outputs for a single-node MaxPool / GlobalMaxPool model."""
    graph = case.model.graph
    assert len(graph.node) == 1
    node = graph.node[0]
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if isinstance(attrs.get("auto_pad"), bytes):
        attrs["auto_pad"] = attrs["auto_pad"].decode()
    (x,) = inputs
    if node.op_type == "GlobalMaxPool":
        assert not attrs
        return [pooling.max_pool(x, x.shape[2:])]
    assert node.op_type == "MaxPool", node.op_type
    keywords = {name: attrs.pop(name) for name in
                ("strides", "pads", "dilations", "auto_pad", "ceil_mode", "storage_order") if name in attrs}
    kernel_shape = attrs.pop("kernel_shape")
    assert not attrs, f"unmapped attributes {attrs}"
    outputs = [o for o in node.output if o]
    result = pooling.max_pool(x, kernel_shape, return_indices=len(outputs) == 2, opset=opset, **keywords)
    return list(result) if len(outputs) == 2 else [result]


def test_official_cases_were_found():
    names = set(OFFICIAL)
    for expected in ("test_maxpool_2d_ceil_output_size_reduce_by_one", "test_maxpool_2d_uint8",
                     "test_maxpool_with_argmax_2d_precomputed_strides", "test_maxpool_3d_dilations",
                     "test_maxpool_2d_same_lower"):
        assert expected in names
    assert len(names) >= 19


@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_official_backend_case(name):
    case = OFFICIAL[name]
    assert case.data_sets, name
    for inputs, expected in case.data_sets:
        got = _run_official(case, inputs)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, np.asarray(e))
