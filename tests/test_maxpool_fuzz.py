"""Random MaxPool calls (hypothesis): kernels equal the reference, or both sides agree it is an error."""
import numpy as np
import pytest

import pooling
from conftest import POOL_DTYPES, assert_same, make_array, reference_args
from pooling import reference

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def calls(draw):
    n = draw(st.integers(1, 4))
    spatial = tuple(draw(st.lists(st.integers(1, 7), min_size=n, max_size=n)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + spatial
    attrs = dict(
        kernel_shape=tuple(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))),
        strides=tuple(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))),
        dilations=tuple(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))),
        ceil_mode=draw(st.integers(0, 1)),
    )
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    if auto_pad == "NOTSET":
        attrs["pads"] = tuple(draw(st.lists(st.integers(0, 4), min_size=2 * n, max_size=2 * n)))
    else:
        attrs["auto_pad"] = auto_pad
    activation = draw(st.sampled_from([None, None, "Relu", "Clip"]))
    if activation == "Relu":
        attrs["activation"] = "Relu"
    elif activation == "Clip":
        lo = draw(st.integers(-4, 2)) - 0.5
        attrs["activation"] = "Clip"
        attrs["activation_params"] = (lo, lo + draw(st.integers(0, 5)))
    kind = draw(st.sampled_from(list(POOL_DTYPES)))
    return shape, attrs, kind, draw(st.integers(0, 1)), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(calls())
def test_random_calls_match_reference(call):
    shape, attrs, kind, storage_order, seed = call
    try:
        out_shape = pooling.max_pool_output_shape(shape, **attrs)
    except ValueError as exc:
        # Only a negative output dimension can make these attributes invalid (SPEC 1.3).
        assert "MaxPool" in str(exc)
        args = reference_args(attrs, len(shape) - 2)
        out, _ = reference.pool_output_shape(shape[2:], args["kernel_shape"], args["strides"],
                                             args["dilations"], args["pads"], args["auto_pad"],
                                             args["ceil_mode"])
        assert min(out) < 0, (out, str(exc))
        return
    x = make_array(np.random.default_rng(seed), shape, kind)
    y, ind = pooling.max_pool(x, storage_order=storage_order, return_indices=True, **attrs)
    assert y.shape == out_shape
    ref_y, ref_i = reference.max_pool(x, storage_order=storage_order,
                                      **reference_args(attrs, len(shape) - 2))
    assert_same(y, ref_y)
    assert_same(ind, ref_i)
