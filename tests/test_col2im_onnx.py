"""Col2Im against ONNX: the official node tests, the reference evaluator, onnxruntime.

The ONNX reference adds in the same order as SPEC 3 but rounds 16-bit floats
after every addition (we round once), so 16-bit data here are small integers
whose sums are exact either way; float32/float64/complex get a tolerance, as
SPEC 3 asks of anything that may sum in another order.
"""
import math

import numpy as np
import pytest

import pooling
from conftest import ALL_DTYPES, assert_same, make_any_array, to_dtype

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ONNX_TYPES = {
    "bool": TensorProto.BOOL, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
    "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8,
    "uint16": TensorProto.UINT16, "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64,
    "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16, "float32": TensorProto.FLOAT,
    "float64": TensorProto.DOUBLE, "complex64": TensorProto.COMPLEX64,
    "complex128": TensorProto.COMPLEX128,
}
INEXACT = ("float32", "float64", "complex64", "complex128")


def col2im_model(kind, n, **attrs):
    """A one-node Col2Im-18 model with input types for `kind` and n spatial axes."""
    node = helper.make_node("Col2Im", ["input", "image_shape", "block_shape"], ["output"],
                            **{k: list(v) for k, v in attrs.items()})
    graph = helper.make_graph(
        [node], "col2im",
        [helper.make_tensor_value_info("input", ONNX_TYPES[kind], None),
         helper.make_tensor_value_info("image_shape", TensorProto.INT64, [n]),
         helper.make_tensor_value_info("block_shape", TensorProto.INT64, [n])],
        [helper.make_tensor_value_info("output", ONNX_TYPES[kind], None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8  # what onnxruntime accepts
    return model


def feeds(x, image, block):
    return {"input": x, "image_shape": np.array(image, dtype=np.int64),
            "block_shape": np.array(block, dtype=np.int64)}


def onnx_reference(x, image, block, **attrs):
    from onnx.reference import ReferenceEvaluator

    kind = next(k for k, d in ALL_DTYPES.items() if d == x.dtype)
    model = col2im_model(kind, len(image), **attrs)
    return ReferenceEvaluator(model).run(None, feeds(x, image, block))[0]


def blocks_for(image, block, strides=None, pads=None, dilations=None):
    n = len(image)
    strides, dilations = strides or (1,) * n, dilations or (1,) * n
    pads = pads or (0,) * (2 * n)
    return math.prod((image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1)
                     // strides[i] + 1 for i in range(n))


# ---------------------------------------------------------------------------
# The five official backend node tests.
# ---------------------------------------------------------------------------

def _node_tests():
    """The backend test cases whose name contains "col2im", from the installed onnx."""
    import onnx.backend.test.case.node as node_cases

    try:  # importing the module registers its cases; far cheaper than collecting all
        import onnx.backend.test.case.node.col2im  # noqa: F401
        cases = [c for c in node_cases._NodeTestCases if "col2im" in c.name]
    except (ImportError, AttributeError):
        cases = []
    if len(cases) < 5:
        cases = [c for c in node_cases.collect_testcases("Col2Im") if "col2im" in c.name]
    return {c.name: c for c in cases}


NODE_TESTS = _node_tests()


def test_all_five_official_cases_found():
    assert sorted(NODE_TESTS) == ["test_col2im", "test_col2im_5d", "test_col2im_dilations",
                                  "test_col2im_pads", "test_col2im_strides"]


@pytest.mark.parametrize("name", sorted(NODE_TESTS))
def test_official_node_case(name):
    case = NODE_TESTS[name]
    node = case.model.graph.node[0]
    attrs = {a.name: list(helper.get_attribute_value(a)) for a in node.attribute}
    (x, image, block), (want,) = case.data_sets[0]
    assert_same(pooling.col2im(x, image, block, opset=18, **attrs), want)
    assert pooling.col2im_output_shape(x.shape, image, block, opset=18, **attrs) == want.shape


# ---------------------------------------------------------------------------
# The reference evaluator, every dtype it runs.
# ---------------------------------------------------------------------------

EVAL_CASES = [
    ((5, 6), (2, 3), {}),
    ((6, 5), (3, 2), dict(strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2))),
    ((4, 5, 3), (2, 2, 2), dict(strides=(1, 2, 1), pads=(0, 1, 1, 1, 0, 2), dilations=(2, 1, 1))),
]


def _eval_input(rng, kind, shape):
    if kind in ("float16", "bfloat16"):
        # Small integers: every partial sum is exact, so rounding once or at
        # every step agree.
        return to_dtype(rng.integers(-4, 5, size=shape), kind)
    return make_any_array(rng, shape, kind, special=False)


@pytest.mark.parametrize("case", range(len(EVAL_CASES)))
@pytest.mark.parametrize("kind", sorted(ALL_DTYPES))
def test_reference_evaluator(rng, kind, case):
    image, block, attrs = EVAL_CASES[case]
    shape = (2, 3 * math.prod(block), blocks_for(image, block, **attrs))
    x = _eval_input(rng, kind, shape)
    with np.errstate(over="ignore"):
        want = onnx_reference(x, image, block, **attrs)
    got = pooling.col2im(x, image, block, opset=18, **attrs)
    assert got.dtype == ALL_DTYPES[kind]
    if kind in INEXACT:
        rtol = 1e-5 if kind in ("float32", "complex64") else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, strict=True)
    else:
        assert_same(got, want.view(got.dtype))


def test_reference_evaluator_rounds_every_step():
    # SPEC 3: we are more accurate than the reference for 16-bit floats.
    x = np.zeros((1, 3, 3))
    x[0, 0, 2], x[0, 1, 1], x[0, 2, 0] = 2048.0, 1.0, 1.0  # all on pixel 0 (see test_col2im)
    x = x.astype(np.float16)
    ref = onnx_reference(x, (1, 1), (3, 1), pads=(2, 0, 2, 0))
    ours = pooling.col2im(x, (1, 1), (3, 1), pads=(2, 0, 2, 0))
    assert float(ref.ravel()[0]) == 2048.0
    assert float(ours.ravel()[0]) == 2050.0  # exact


# ---------------------------------------------------------------------------
# onnxruntime: 2-D float32 only; wrong for dilation > 1 when n != 2.
# ---------------------------------------------------------------------------

ORT_CASES = [
    ((5, 5), (2, 2), {}),
    ((7, 6), (3, 3), dict(pads=(1, 1, 1, 1))),
    ((9, 8), (3, 2), dict(strides=(2, 3), pads=(1, 0, 2, 1), dilations=(2, 1))),
    ((6, 7), (2, 3), dict(dilations=(2, 2), strides=(1, 2))),
    ((8, 8), (3, 3), dict(pads=(4, 3, 3, 4))),  # pads >= block
]


def ort_run(x, image, block, **attrs):
    ort = pytest.importorskip("onnxruntime")
    model = col2im_model("float32", len(image), **attrs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds(x, image, block))[0]


@pytest.mark.parametrize("case", range(len(ORT_CASES)))
def test_onnxruntime_2d_float32(rng, case):
    image, block, attrs = ORT_CASES[case]
    x = rng.standard_normal((2, 4 * math.prod(block), blocks_for(image, block, **attrs)))
    x = x.astype(np.float32)
    want = ort_run(x, image, block, **attrs)
    np.testing.assert_allclose(pooling.col2im(x, image, block, **attrs), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("image, block, dilations", [
    ((9,), (2,), (2,)),
    ((4, 5, 6), (2, 2, 2), (1, 1, 2)),
])
def test_onnxruntime_wrong_for_dilation_when_n_is_not_2(rng, image, block, dilations):
    # Peers differ (SPEC 3): onnxruntime's N-D path mishandles dilation.  We
    # agree with the ONNX reference; onnxruntime does not.
    x = rng.integers(-4, 5, size=(1, 2 * math.prod(block), blocks_for(image, block,
                                                                         dilations=dilations)))
    x = x.astype(np.float32)
    want = onnx_reference(x, image, block, dilations=dilations)
    assert_same(pooling.col2im(x, image, block, dilations=dilations), want)
    theirs = ort_run(x, image, block, dilations=dilations)
    assert not np.array_equal(theirs, want), (
        "onnxruntime now agrees here: drop this peer note from SPEC/README")
