"""MaxUnpool against the official ONNX node tests and onnxruntime (SPEC 2, "Peers differ")."""
import numpy as np
import pytest
from conftest import assert_same, make_array

import pooling

onnx = pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def node_tests():
    from onnx.backend.test.case.node import collect_testcases

    return {case.name: case for case in collect_testcases("MaxUnpool")}


def _run_case(case):
    """Our result on an official test case: attributes from the node, opset from the model."""
    (node,) = case.model.graph.node
    attrs = {a.name: list(onnx.helper.get_attribute_value(a)) for a in node.attribute}
    (opset,) = [o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")]
    (inputs, outputs), = case.data_sets
    x, indices, *shape = inputs
    y = pooling.max_unpool(x, indices, attrs.pop("kernel_shape"), **attrs,
                           output_shape=shape[0] if shape else None, opset=opset)
    return y, outputs[0]


def test_official_without_output_shape(node_tests):
    y, expected = _run_case(node_tests["test_maxunpool_export_without_output_shape"])
    assert_same(y, expected)


def test_official_with_output_shape_is_an_intentional_divergence(node_tests):
    # The reference scatters into the inferred 4x4 shape and zero-extends to 5x5;
    # SPEC 2 (like onnxruntime and PyTorch) reads the indices as flat offsets into
    # the 5x5 output that is returned.
    y, expected = _run_case(node_tests["test_maxunpool_export_with_output_shape"])
    pinned = np.zeros(25, np.float32)
    pinned[[5, 7, 13, 15]] = [5, 6, 7, 8]
    assert_same(y, pinned.reshape(1, 1, 5, 5))
    assert not np.array_equal(y, expected)


def _onnxruntime_unpool(x, indices, kernel_shape, strides, output_shape=None, opset=22):
    ort = pytest.importorskip("onnxruntime")
    helper, tp = onnx.helper, onnx.TensorProto
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    names = ["x", "i"] + (["s"] if output_shape is not None else [])
    node = helper.make_node("MaxUnpool", names, ["y"], kernel_shape=kernel_shape, strides=strides)
    inputs = [helper.make_tensor_value_info("x", elem, None),
              helper.make_tensor_value_info("i", tp.INT64, None)]
    if output_shape is not None:
        inputs.append(helper.make_tensor_value_info("s", tp.INT64, None))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"x": x, "i": indices}
    if output_shape is not None:
        feeds["s"] = np.asarray(output_shape, np.int64)
    return session.run(None, feeds)[0]


@pytest.mark.parametrize("kind", ["float32", "float16"])
@pytest.mark.parametrize("with_shape", [False, True])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_matches_onnxruntime(rng, kind, with_shape, rank):
    # Even sizes: k2 s2 then infers the source's own shape, which the indices address.
    spatial = {1: (14,), 2: (8, 10), 3: (4, 6, 8)}[rank]
    source = make_array(rng, (2, 3) + spatial, kind)
    kernel, strides = [2] * rank, [2] * rank
    x, indices = pooling.max_pool(source, kernel, strides=strides, return_indices=True)
    shape = pooling.max_unpool_output_shape(x.shape, kernel, strides=strides) if with_shape else None
    ours = pooling.max_unpool(x, indices, kernel, strides=strides, output_shape=shape, opset=22)
    assert_same(ours, _onnxruntime_unpool(x, indices, kernel, strides, shape))


@pytest.mark.parametrize("kind", ["float32", "float16"])
def test_matches_onnxruntime_with_duplicates(rng, kind):
    # onnxruntime scatters serially, so repeated indices resolve to the last write too.
    x = make_array(rng, (2, 3, 4, 5), kind)
    indices = rng.integers(0, 2 * 3 * 8 * 10, size=x.shape, dtype=np.int64) // 7
    ours = pooling.max_unpool(x, indices, [2, 2], strides=[2, 2], opset=11)
    assert_same(ours, _onnxruntime_unpool(x, indices, [2, 2], [2, 2], opset=11))
