"""Per-version gating of MaxPool through `opset=` (SPEC 0 and 1.1)."""
import numpy as np
import pytest

import pooling
from conftest import BFLOAT16, POOL_DTYPES, assert_same, make_array
from pooling._dtypes import LEGACY_BFLOAT16

VERSIONS = (1, 8, 10, 11, 12, 22)
OPSETS = range(1, 24)


def version_at(opset):
    """The MaxPool version in force at an opset: the largest version <= opset."""
    return max(v for v in VERSIONS if v <= opset)


# What each version added (SPEC 1.1): name -> (first version, keyword arguments that use it).
ATTRIBUTES = {
    "storage_order": (8, dict(storage_order=1)),
    "ceil_mode": (10, dict(ceil_mode=1)),
    "dilations": (10, dict(dilations=(2, 2))),
}
DTYPE_SINCE = {"float16": 1, "float32": 1, "float64": 1, "int8": 12, "uint8": 12, "bfloat16": 22}
# No MaxPool version has the other integers or bool: library mode only.
LIBRARY_ONLY = ("int16", "uint16", "int32", "uint32", "int64", "uint64", "bool")


@pytest.fixture(scope="module")
def x():
    return make_array(np.random.default_rng(0), (1, 2, 7, 6), "float32")


def test_version_table():
    assert [version_at(k) for k in (1, 7, 8, 9, 10, 11, 12, 21, 22, 23)] == [1, 1, 8, 8, 10, 11, 12, 12, 22, 22]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", sorted(ATTRIBUTES))
def test_attribute_gating(x, name, opset):
    since, attrs = ATTRIBUTES[name]
    if version_at(opset) < since:
        with pytest.raises(ValueError, match=f"MaxPool.*{name}"):
            pooling.max_pool(x, 2, opset=opset, **attrs)
        with pytest.raises(ValueError, match=f"MaxPool.*{name}"):
            pooling.max_pool_output_shape(x.shape, 2, opset=opset, **attrs)
    else:
        assert_same(pooling.max_pool(x, 2, opset=opset, **attrs), pooling.max_pool(x, 2, **attrs))
        assert pooling.max_pool_output_shape(x.shape, 2, opset=opset, **attrs) == \
            pooling.max_pool_output_shape(x.shape, 2, **attrs)


@pytest.mark.parametrize("opset", OPSETS)
def test_indices_output_gating(x, opset):
    if version_at(opset) < 8:
        with pytest.raises(ValueError, match="MaxPool.*Indices"):
            pooling.max_pool(x, 2, opset=opset, return_indices=True)
        with pytest.raises(ValueError, match="MaxPool.*Indices"):
            pooling.max_pool_output_shape(x.shape, 2, opset=opset, return_indices=True)
        # Y alone is fine.
        assert_same(pooling.max_pool(x, 2, opset=opset), pooling.max_pool(x, 2))
    else:
        for so in (0, 1):
            y, ind = pooling.max_pool(x, 2, strides=2, pads=1, storage_order=so, opset=opset,
                                      return_indices=True)
            y0, ind0 = pooling.max_pool(x, 2, strides=2, pads=1, storage_order=so, return_indices=True)
            assert_same(y, y0)
            assert_same(ind, ind0)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_dtype_gating(kind, opset):
    data = make_array(np.random.default_rng(1), (1, 2, 5, 5), kind)
    inputs = [data]
    if kind == "bfloat16" and BFLOAT16 != LEGACY_BFLOAT16:
        inputs.append(data.view(np.uint16).view(LEGACY_BFLOAT16))
    for xk in inputs:
        if kind in LIBRARY_ONLY:
            with pytest.raises(TypeError, match=f"MaxPool: x has dtype {kind}.*library mode only"):
                pooling.max_pool(xk, 2, opset=opset)
        elif version_at(opset) < DTYPE_SINCE[kind]:
            with pytest.raises(TypeError, match="MaxPool") as info:
                pooling.max_pool(xk, 2, opset=opset)
            assert "x" in str(info.value) or "dtype" in str(info.value)
        else:
            y = pooling.max_pool(xk, 2, opset=opset)
            assert y.dtype == xk.dtype
            assert y.tobytes() == pooling.max_pool(xk, 2).tobytes()


@pytest.mark.parametrize("opset", OPSETS)
def test_explicit_defaults_are_accepted(x, opset):
    """An attribute a version lacks, given at its default, is not an error."""
    expected = pooling.max_pool(x, (2, 2))
    for attrs in (dict(dilations=(1, 1)), dict(dilations=1), dict(dilations=[1, 1]),
                  dict(storage_order=0), dict(storage_order=False), dict(ceil_mode=0),
                  dict(ceil_mode=False), dict(dilations=(1, 1), storage_order=0, ceil_mode=0),
                  dict(strides=(1, 1), pads=(0, 0, 0, 0), auto_pad="NOTSET")):
        assert_same(pooling.max_pool(x, (2, 2), opset=opset, **attrs), expected)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("activation, params", [("Relu", None), ("Clip", (0.0, 1.0))])
def test_activation_needs_library_mode_for_nchw(x, opset, activation, params):
    with pytest.raises(ValueError, match="MaxPool.*activation"):
        pooling.max_pool(x, 2, opset=opset, activation=activation, activation_params=params)
    with pytest.raises(ValueError, match="MaxPool.*activation"):
        pooling.max_pool_output_shape(x.shape, 2, opset=opset, activation=activation,
                                      activation_params=params)


@pytest.mark.parametrize("opset", [0, -1, -22])
def test_opset_before_the_first_version(x, opset):
    with pytest.raises(ValueError, match="MaxPool.*opset") as info:
        pooling.max_pool(x, 2, opset=opset)
    assert "1" in str(info.value).replace(str(opset), "")   # names the first valid opset, 1
    with pytest.raises(ValueError, match="MaxPool.*opset"):
        pooling.max_pool_output_shape(x.shape, 2, opset=opset)


@pytest.mark.parametrize("opset", [24, 30, np.int64(22), np.int32(10)])
def test_later_and_numpy_opsets(x, opset):
    expected = pooling.max_pool(x, 2, dilations=2, ceil_mode=1)
    assert_same(pooling.max_pool(x, 2, dilations=2, ceil_mode=1, opset=opset), expected)


@pytest.mark.parametrize("opset", [10, 11, 12, 22])
def test_ceil_drop_rule_in_every_version_with_ceil_mode(opset):
    # D=5, k=2, s=2, pads (0, 2): ceil(5/2)+1 = 4, window 3 starts at 6 >= 5: dropped, O = 3.
    assert pooling.max_pool_output_shape((1, 1, 5), 2, strides=2, pads=(0, 2), ceil_mode=1,
                                         opset=opset) == (1, 1, 3)
    assert pooling.max_pool_output_shape((1, 1, 2, 2), 1, strides=2, ceil_mode=1,
                                         opset=opset) == (1, 1, 1, 1)


@pytest.mark.parametrize("opset", [1, 7, 8, 9])
def test_old_versions_keep_every_other_attribute(x, opset):
    """auto_pad, kernel_shape, pads and strides exist in every version."""
    for attrs in (dict(strides=2, pads=(1, 0, 0, 1)), dict(auto_pad="SAME_UPPER", strides=2),
                  dict(auto_pad="SAME_LOWER"), dict(auto_pad="VALID", strides=(2, 1))):
        assert_same(pooling.max_pool(x, (3, 2), opset=opset, **attrs), pooling.max_pool(x, (3, 2), **attrs))
