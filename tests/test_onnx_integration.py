"""pooling.onnx: run_node, ReferenceEvaluator ops and the official backend node tests."""
import re
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import onnx.backend.test  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import pooling  # noqa: E402
import pooling.onnx  # noqa: E402
from pooling.onnx import PoolingBackendRep  # noqa: E402

import conftest  # noqa: E402
from conftest import assert_same  # noqa: E402

# ---------------------------------------------------------------------------
# The official ONNX backend node tests, run through pooling.onnx.backend.
# ---------------------------------------------------------------------------
_OURS = r"test_(maxpool|maxunpool|col2im)"
_backend_test = onnx.backend.test.BackendTest(pooling.onnx.backend, __name__)
_backend_test.include(_OURS)
# SPEC 2, "Peers differ": the ONNX reference scatters into the inferred shape
# and zero-extends; we (like onnxruntime and PyTorch) scatter into
# output_shape's index space.  test_maxunpool.py pins our result on this input.
_backend_test.exclude("test_maxunpool_export_with_output_shape")
for _case in _backend_test.enable_report().test_cases.values():
    for _name in [n for n in vars(_case) if n.startswith("test_")]:
        if not re.match(_OURS, _name) or _name.endswith("_cuda"):
            delattr(_case, _name)  # other operators and devices are not ours: not even skipped
    globals()[_case.__name__] = _case


def test_backend_runs_every_official_case():
    names = [n for case in _backend_test.test_cases.values() for n in vars(case) if n.startswith("test_")]
    for op in ("maxpool", "maxunpool", "col2im"):
        assert any(f"test_{op}" in n for n in names), op
    assert len(names) >= 25


def test_backend_is_compatible_with_every_official_case():
    """The runner skips a case whose model is_compatible rejects: none is skipped for that reason."""
    import unittest

    result = unittest.TestResult()
    unittest.TestSuite(case(name) for case in _backend_test.test_cases.values()
                       for name in vars(case) if name.startswith("test_")).run(result)
    assert result.testsRun >= 25 and not result.errors and not result.failures
    assert [reason for _, reason in result.skipped if "ompatible" in reason] == []


# ---------------------------------------------------------------------------
# run_node
# ---------------------------------------------------------------------------

def test_import_pooling_does_not_import_onnx():
    code = "import sys, pooling; assert 'onnx' not in sys.modules; pooling.max_pool([[[1.0]]], 1)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_run_node_max_pool_outputs(rng):
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    node = helper.make_node("MaxPool", ["X"], ["Y", "I"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1], storage_order=1)
    y, i = pooling.onnx.run_node(node, [x])
    want_y, want_i = pooling.max_pool(x, 3, strides=2, pads=1, storage_order=1, return_indices=True)
    assert_same(y, want_y)
    np.testing.assert_array_equal(i, want_i)
    # An empty output name means the optional output is omitted.
    node = helper.make_node("MaxPool", ["X"], ["Y", ""], kernel_shape=[2, 2], auto_pad="SAME_UPPER")
    y, i = pooling.onnx.run_node(node, [x])
    assert i is None and y.shape == (2, 3, 7, 6)
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2])
    assert len(pooling.onnx.run_node(node, [x])) == 1


def test_run_node_nhwc_domain(rng):
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    node = helper.make_node("MaxPool", ["X"], ["Y", "I"], domain=pooling.onnx.NHWC_DOMAIN,
                            kernel_shape=[3, 3], strides=[2, 2], activation="Clip",
                            activation_params=[-0.5, 0.5])
    y, i = pooling.onnx.run_node(node, [x])
    want = pooling.max_pool(x, 3, strides=2, layout="NHWC", activation="Clip", activation_params=[-0.5, 0.5],
                            return_indices=True)
    assert_same(y, want[0])
    np.testing.assert_array_equal(i, want[1])


@pytest.mark.parametrize("opset,attrs,error", [
    (1, dict(storage_order=1), "storage_order"),
    (8, dict(dilations=[2, 2]), "dilations"),
    (9, dict(ceil_mode=1), "ceil_mode"),
])
def test_run_node_applies_version_rules(opset, attrs, error):
    x = np.zeros((1, 1, 5, 5), np.float32)
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], **attrs)
    with pytest.raises(ValueError, match=f"MaxPool: attribute {error}"):
        pooling.onnx.run_node(node, [x], opset=opset)
    pooling.onnx.run_node(node, [x], opset=22)  # the newest version has it


def test_run_node_version_rules_for_outputs_and_dtypes():
    x = np.zeros((1, 1, 4, 4), np.float32)
    node = helper.make_node("MaxPool", ["X"], ["Y", "I"], kernel_shape=[2, 2])
    with pytest.raises(ValueError, match="Indices"):
        pooling.onnx.run_node(node, [x], opset=7)
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2])
    with pytest.raises(TypeError, match="int8"):
        pooling.onnx.run_node(node, [x.astype(np.int8)], opset=11)
    pooling.onnx.run_node(node, [x.astype(np.int8)], opset=12)
    # Default: the newest version, which has no 1-D Col2Im and no NCHW activation.
    col = helper.make_node("Col2Im", ["x", "s", "b"], ["y"])
    with pytest.raises(ValueError, match="Col2Im"):
        pooling.onnx.run_node(col, [np.ones((1, 2, 3), np.float32), np.array([4]), np.array([2])])


def test_run_node_rejects_unknown_things():
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(ValueError, match="operator 'AveragePool'"):
        pooling.onnx.run_node(helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2]), [x])
    with pytest.raises(ValueError, match="domain 'com.example'"):
        pooling.onnx.run_node(helper.make_node("MaxPool", ["X"], ["Y"], domain="com.example"), [x])
    with pytest.raises(ValueError, match="operator 'Col2Im' in domain 'com.ms.internal.nhwc'"):
        pooling.onnx.run_node(helper.make_node("Col2Im", ["X"], ["Y"], domain=pooling.onnx.NHWC_DOMAIN), [x])
    with pytest.raises(ValueError, match="MaxPool: unknown attribute 'activation'"):
        pooling.onnx.run_node(helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2],
                                               activation="Relu"), [x])
    with pytest.raises(ValueError, match="MaxPool: required input 'X'"):
        pooling.onnx.run_node(helper.make_node("MaxPool", [""], ["Y"], kernel_shape=[2, 2]), [x])


def test_run_node_max_unpool_optional_output_shape(rng):
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    y, i = pooling.max_pool(x, 2, strides=2, return_indices=True)
    node = helper.make_node("MaxUnpool", ["X", "I", ""], ["Y"], kernel_shape=[2, 2], strides=[2, 2])
    # Indices address the output (SPEC 2): those of a 6x7 input do not fit the inferred 6x6 one.
    with pytest.raises(ValueError, match=r"MaxUnpool: indices\[.*\] = \d+ is outside \[0, 216\)"):
        pooling.onnx.run_node(node, [y, i, None])
    y6, i6 = pooling.max_pool(x[..., :6], 2, strides=2, return_indices=True)
    (inferred,) = pooling.onnx.run_node(node, [y6, i6, None])
    assert inferred.shape == (2, 3, 6, 6)
    assert_same(inferred, np.where(inferred != 0, x[..., :6], 0).astype(np.float32))
    node = helper.make_node("MaxUnpool", ["X", "I", "S"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])
    (full,) = pooling.onnx.run_node(node, [y, i, np.array(x.shape, dtype=np.int64)])
    assert_same(full, np.where(full != 0, x, 0).astype(np.float32))


# ---------------------------------------------------------------------------
# backend.is_compatible
# ---------------------------------------------------------------------------

_F = TensorProto.FLOAT
_NHWC = "com.ms.internal.nhwc"


def _one_node_model(node, opset=22, domain_opset=None):
    """A model of `node`, its input X of shape (1, 1, 4, 4) and output Y."""
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", _F, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("Y", _F, ["n", "c", "h", "w"])])
    imports = [helper.make_opsetid("", opset)]
    if node.domain:
        imports.append(helper.make_opsetid(node.domain, domain_opset or opset))
    return helper.make_model(graph, ir_version=10, opset_imports=imports)


@pytest.mark.parametrize("node, opset, domain_opset", [
    (helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[2, 2]), 22, None),
    (helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], storage_order=1), 8, None),
    (helper.make_node("MaxPool", ["X"], ["Y"], domain=_NHWC, kernel_shape=[1, 2], activation="Relu"), 22, 22),
], ids=["maxpool", "maxpool_8", "nhwc_maxpool"])
def test_is_compatible_with_what_the_backend_runs(node, opset, domain_opset):
    model = _one_node_model(node, opset, domain_opset)
    assert pooling.onnx.backend.is_compatible(model) is True
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert pooling.onnx.backend.prepare(model).run([x])[0].size > 0


@pytest.mark.parametrize("node, opset, domain_opset", [
    (helper.make_node("Relu", ["X"], ["Y"]), 22, None),
    (helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2]), 22, None),
    (helper.make_node("MaxPool", ["X"], ["Y"], domain="com.example", kernel_shape=[2, 2]), 22, 1),
    (helper.make_node("Col2Im", ["X", "S", "B"], ["Y"], domain=_NHWC), 22, 22),
    (helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], activation="Relu"), 22, None),
    (helper.make_node("MaxUnpool", ["X", "X"], ["Y"], kernel_shape=[2, 2]), 8, None),
    (helper.make_node("MaxUnpool", ["X", "X"], ["Y"], domain=_NHWC, kernel_shape=[2, 2]), 22, 1),
], ids=["relu", "averagepool", "other_domain", "nhwc_col2im", "nchw_activation_attribute",
        "maxunpool_before_9", "nhwc_maxunpool_before_9"])
def test_is_compatible_is_false_for_what_the_backend_cannot_run(node, opset, domain_opset):
    """False, not an error, for a node prepare(model).run would fail on: another operator or
    domain, an attribute the operator lacks, an opset that predates it."""
    model = _one_node_model(node, opset, domain_opset)
    assert pooling.onnx.backend.is_compatible(model) is False
    assert pooling.onnx.backend.is_compatible(model, device="CPU") is False
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    with pytest.raises(ValueError):
        PoolingBackendRep(model).run([x])


def test_is_compatible_needs_every_node():
    """One unsupported node among supported ones (a pool then a Relu) makes the model incompatible."""
    nodes = [helper.make_node("MaxPool", ["X"], ["P"], kernel_shape=[2, 2]), helper.make_node("Relu", ["P"], ["Y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", _F, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("Y", _F, None)])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 22)])
    assert pooling.onnx.backend.is_compatible(model) is False
    assert pooling.onnx.backend.is_compatible(_one_node_model(nodes[0])) is True


def test_is_compatible_only_on_the_cpu():
    model = _one_node_model(helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2]))
    assert pooling.onnx.backend.is_compatible(model, device="CPU") is True
    assert pooling.onnx.backend.is_compatible(model, device="CUDA") is False


# ---------------------------------------------------------------------------
# ReferenceEvaluator(model, new_ops=pooling.onnx.ops)
# ---------------------------------------------------------------------------

def _model(nodes, inputs, outputs, opset=22, extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", opset),
                                                                  *extra_opsets])


def test_evaluator_pool_shape_unpool_model(rng):
    # MaxPool -> Shape -> MaxUnpool: unpooling back to the input's own shape.
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("MaxPool", ["X"], ["P", "I"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["X"], ["S"]),
        helper.make_node("MaxUnpool", ["P", "I", "S"], ["Y"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("X", f, [2, 3, 6, 8])],
                   [helper.make_tensor_value_info("Y", f, None), helper.make_tensor_value_info("P", f, None)])
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)  # even sizes: SPEC and the reference agree
    ours = ReferenceEvaluator(model, new_ops=pooling.onnx.ops).run(None, {"X": x})
    plain = ReferenceEvaluator(model).run(None, {"X": x})
    for a, b in zip(ours, plain):
        assert_same(a, b)
    # Every pooled value is back at its origin, zeros elsewhere.
    back = ours[0]
    assert np.count_nonzero(back) == ours[1].size
    assert_same(back[back != 0], x[back != 0])


def test_evaluator_uses_our_kernels_where_reference_is_wrong():
    # NaN in a window: SPEC says Y is that NaN; the plain reference may drop it.
    f = TensorProto.FLOAT
    model = _model([helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2])],
                   [helper.make_tensor_value_info("X", f, [1, 1, 3])], [helper.make_tensor_value_info("Y", f, None)])
    x = np.array([[[1.0, np.nan, 0.5]]], np.float32)
    (y,) = ReferenceEvaluator(model, new_ops=pooling.onnx.ops).run(None, {"X": x})
    assert np.isnan(y).all()


def test_evaluator_col2im_model(rng):
    f = TensorProto.FLOAT
    i64 = TensorProto.INT64
    model = _model(
        [helper.make_node("Col2Im", ["X", "S", "B"], ["Y"], strides=[1, 2], pads=[1, 0, 0, 1], dilations=[1, 1])],
        [helper.make_tensor_value_info("X", f, None), helper.make_tensor_value_info("S", i64, [2]),
         helper.make_tensor_value_info("B", i64, [2])],
        [helper.make_tensor_value_info("Y", f, None)], opset=18)
    image, block = np.array([5, 6], np.int64), np.array([2, 3], np.int64)
    # blocks per axis: (5+1-2)/1+1 = 5 and (6+1-3)/2+1 = 3
    x = rng.integers(-4, 5, size=(2, 3 * 6, 15)).astype(np.float32)  # small integers: sums are exact
    ours = ReferenceEvaluator(model, new_ops=pooling.onnx.ops).run(None, {"X": x, "S": image, "B": block})
    plain = ReferenceEvaluator(model).run(None, {"X": x, "S": image, "B": block})
    assert_same(ours[0], plain[0])


def test_run_node_nhwc_max_pool_then_unpool(rng):
    x = rng.standard_normal((2, 6, 8, 3)).astype(np.float32)
    domain = pooling.onnx.NHWC_DOMAIN
    pool = helper.make_node("MaxPool", ["X"], ["Y", "I"], domain=domain, kernel_shape=[2, 2], strides=[2, 2])
    y, i = pooling.onnx.run_node(pool, [x])
    unpool = helper.make_node("MaxUnpool", ["Y", "I", "S"], ["Z"], domain=domain, kernel_shape=[2, 2],
                              strides=[2, 2])
    (z,) = pooling.onnx.run_node(unpool, [y, i, np.array(x.shape, np.int64)])
    assert z.shape == x.shape
    assert_same(z.reshape(-1)[i.reshape(-1)], y.reshape(-1))
    assert np.count_nonzero(z) == y.size


def _outcome(fn):
    """('ok', results as bytes) or the exception type: how a call ended."""
    try:
        result = fn()
    except (ValueError, TypeError) as e:
        return type(e).__name__
    results = result if isinstance(result, (list, tuple)) else [result]
    return "ok", tuple(np.asarray(r).tobytes() for r in results)


@pytest.mark.parametrize("opset", range(1, 24))
@pytest.mark.parametrize("case", ["pool", "pool_indices", "pool_dilated", "pool_int8", "pool_bf16",
                                  "unpool", "unpool_bf16", "col2im"])
def test_run_node_gating_matches_the_functions_for_every_opset(case, opset):
    """run_node(node, opset=K) accepts exactly what the function accepts under opset=K, with the same result."""
    rng = np.random.default_rng(opset)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    if case.startswith("pool"):
        attrs = dict(kernel_shape=[2, 2], strides=[2, 2])
        if case == "pool_dilated":
            attrs.update(dilations=[2, 2], ceil_mode=1)
        data = {"pool_int8": x.astype(np.int8), "pool_bf16": x.astype(conftest.BFLOAT16)}.get(case, x)
        outputs = ["Y", "I"] if case == "pool_indices" else ["Y"]
        node = helper.make_node("MaxPool", ["X"], outputs, **attrs)
        direct = lambda: pooling.max_pool(data, opset=opset, return_indices=len(outputs) == 2, **attrs)  # noqa: E731
        inputs = [data]
    elif case.startswith("unpool"):
        y, i = pooling.max_pool(x, 2, strides=2, return_indices=True)
        if case == "unpool_bf16":
            y = y.astype(conftest.BFLOAT16)
        node = helper.make_node("MaxUnpool", ["X", "I"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])
        direct = lambda: pooling.max_unpool(y, i, [2, 2], strides=[2, 2], opset=opset)  # noqa: E731
        inputs = [y, i]
    else:
        cols = rng.standard_normal((1, 2 * 4, 9)).astype(np.float32)
        image, block = np.array([4, 4], np.int64), np.array([2, 2], np.int64)
        node = helper.make_node("Col2Im", ["X", "S", "B"], ["Y"])
        direct = lambda: pooling.col2im(cols, image, block, opset=opset)  # noqa: E731
        inputs = [cols, image, block]
    assert _outcome(lambda: pooling.onnx.run_node(node, inputs, opset=opset)) == _outcome(direct)
