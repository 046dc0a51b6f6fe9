"""MaxPool output shapes (SPEC 1.3), hand-computed, and the shapes max_pool really returns."""
import numpy as np
import pytest

import pooling
from pooling import reference

# (x_shape, attributes, expected output shape); the comment is the SPEC 1.3 arithmetic.
CASES = [
    # NOTSET, floor: O = floor((D + pb + pe - e) / s) + 1
    ((1, 3, 32, 32), dict(kernel_shape=(2, 2)), (1, 3, 31, 31)),
    ((1, 3, 32), dict(kernel_shape=(2,)), (1, 3, 31)),
    ((2, 1, 224, 224), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), (2, 1, 112, 112)),
    ((1, 3, 32, 32), dict(kernel_shape=(5, 5), strides=(3, 3)), (1, 3, 10, 10)),          # 27/3 + 1
    ((1, 3, 28, 28), dict(kernel_shape=(3, 3), pads=(2, 2, 2, 2)), (1, 3, 30, 30)),
    # pads are [begin_1, begin_2, end_1, end_2]: 5+1+3 and 5+2+4 with k=1
    ((1, 1, 5, 5), dict(kernel_shape=(1, 1), pads=(1, 2, 3, 4)), (1, 1, 9, 11)),
    # dilation: e = (k-1)*d + 1 = 5 on 8 -> 4; e = 3 on 8 with s 2 -> floor(5/2)+1 = 3
    ((1, 1, 8, 8), dict(kernel_shape=(3, 2), dilations=(2, 2), strides=(1, 2)), (1, 1, 4, 3)),
    ((1, 1, 4, 4, 4), dict(kernel_shape=(2, 2, 2), dilations=(2, 2, 2)), (1, 1, 2, 2, 2)),
    # ceil: O = ceil(num/s) + 1, kept when (O-1)*s < D + pb
    ((1, 1, 112, 112), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=1),
     (1, 1, 57, 57)),                                                   # ceil(111/2)+1 = 57; 112 < 113
    ((1, 1, 4, 4), dict(kernel_shape=(3, 3), strides=(2, 2), ceil_mode=1), (1, 1, 2, 2)),
    ((1, 1, 5), dict(kernel_shape=(2,), strides=(2,), ceil_mode=1), (1, 1, 3)),        # ceil(1.5)+1
    ((1, 1, 5), dict(kernel_shape=(2,), strides=(2,)), (1, 1, 2)),
    ((1, 1, 5), dict(kernel_shape=(3,), strides=(2,), pads=(1, 1), ceil_mode=1), (1, 1, 3)),  # 4 < 6
    # the drop rule: the last window would start in the end padding
    ((1, 1, 2, 2), dict(kernel_shape=(1, 1), strides=(2, 2), ceil_mode=1), (1, 1, 1, 1)),   # 2 >= 2
    ((1, 1, 5), dict(kernel_shape=(2,), strides=(2,), pads=(0, 2), ceil_mode=1), (1, 1, 3)),  # 6 >= 5
    ((1, 1, 6), dict(kernel_shape=(3,), strides=(3,), pads=(0, 2), ceil_mode=1), (1, 1, 2)),  # 6 >= 6
    ((1, 1, 5), dict(kernel_shape=(2,), strides=(2,), pads=(1, 1), ceil_mode=1), (1, 1, 3)),  # 6 >= 6
    ((1, 1, 32, 32, 32), dict(kernel_shape=(5, 5, 5), dilations=(2, 2, 2), strides=(3, 3, 3),
                              ceil_mode=1), (1, 1, 9, 9, 9)),          # ceil(23/3)+1 = 9; 24 < 32
    # VALID: pads 0, then as NOTSET (ceil_mode applies)
    ((1, 1, 5, 6), dict(kernel_shape=(2, 3), strides=(2, 2), auto_pad="VALID"), (1, 1, 2, 2)),
    ((1, 1, 5, 6), dict(kernel_shape=(2, 3), strides=(2, 2), auto_pad="VALID", ceil_mode=1),
     (1, 1, 3, 3)),
    ((1, 1, 5, 6), dict(kernel_shape=(2, 3), strides=(2, 2), auto_pad="VALID", pads=(0, 0, 0, 0)),
     (1, 1, 2, 2)),                                                    # all-zero pads accepted
    # SAME_*: O = ceil(D/s), either ceil_mode, dilation or not
    ((1, 1, 5, 6), dict(kernel_shape=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER"), (1, 1, 3, 3)),
    ((1, 1, 5, 6), dict(kernel_shape=(3, 3), strides=(2, 2), auto_pad="SAME_LOWER"), (1, 1, 3, 3)),
    ((1, 1, 5, 6), dict(kernel_shape=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER", ceil_mode=1),
     (1, 1, 3, 3)),
    ((1, 3, 32, 32), dict(kernel_shape=(2, 2), auto_pad="SAME_LOWER"), (1, 3, 32, 32)),
    ((1, 1, 7), dict(kernel_shape=(3,), dilations=(3,), strides=(2,), auto_pad="SAME_UPPER"), (1, 1, 4)),
    ((1, 1, 7), dict(kernel_shape=(3,), dilations=(3,), strides=(2,), auto_pad="SAME_LOWER"), (1, 1, 4)),
    ((1, 1, 3), dict(kernel_shape=(4,), dilations=(3,), auto_pad="SAME_UPPER"), (1, 1, 3)),  # e=10 > D
    # O == 0: empty output (D=2, k=3, s=2: floor(-1/2)+1 = 0)
    ((1, 1, 2), dict(kernel_shape=(3,), strides=(2,)), (1, 1, 0)),
    ((1, 1, 2, 5), dict(kernel_shape=(3, 1), strides=(2, 1)), (1, 1, 0, 5)),
    ((1, 1, 2), dict(kernel_shape=(3,)), (1, 1, 0)),                   # floor(-1)+1 = 0
    ((1, 1, 2), dict(kernel_shape=(4,), strides=(2,), ceil_mode=1), (1, 1, 0)),   # ceil(-1)+1 = 0
    ((1, 1, 3), dict(kernel_shape=(2,), dilations=(3,)), (1, 1, 0)),   # e=4: floor(-1)+1 = 0
    # ceil mode may give 1 where floor gives 0: ceil(-1/2)+1 = 1; 0 < 2 keeps it
    ((1, 1, 2), dict(kernel_shape=(3,), strides=(2,), ceil_mode=1), (1, 1, 1)),
    # N = 0 and C = 0 carry through
    ((0, 3, 6, 6), dict(kernel_shape=(2, 2), strides=(2, 2)), (0, 3, 3, 3)),
    ((2, 0, 6), dict(kernel_shape=(2,)), (2, 0, 5)),
    # rank 4 (n = 4 spatial axes) and rank 1
    ((1, 2, 4, 5, 6, 7), dict(kernel_shape=(2, 3, 2, 3), strides=(1, 2, 2, 3), pads=(0, 1, 0, 1, 1, 0, 0, 1)),
     (1, 2, 4, 2, 3, 3)),
]


@pytest.mark.parametrize("x_shape, attrs, expected", CASES)
def test_output_shape(x_shape, attrs, expected):
    assert pooling.max_pool_output_shape(x_shape, **attrs) == expected
    assert pooling.max_pool_output_shape(list(x_shape), **attrs) == expected
    x = np.zeros(x_shape, dtype=np.float32)
    y, ind = pooling.max_pool(x, return_indices=True, **attrs)
    assert y.shape == ind.shape == expected
    assert pooling.max_pool(x, **attrs).shape == expected


@pytest.mark.parametrize("x_shape, attrs, expected", CASES)
def test_reference_output_shape(x_shape, attrs, expected):
    assert reference.max_pool_output_shape(x_shape, **attrs) == expected
    assert reference.max_pool(np.zeros(x_shape, np.float32), **attrs).shape == expected


def test_output_shape_returns_plain_ints():
    """API.md: max_pool_output_shape returns a tuple of ints, whatever int-likes x_shape holds."""
    # A shape used by no other test, so no cached plan from a plain-int call can hide the result.
    shape = pooling.max_pool_output_shape(np.array([1, 2, 9, 19]), (3, 3), strides=2)
    assert shape == (1, 2, 4, 9)
    assert isinstance(shape, tuple) and all(type(v) is int for v in shape), [type(v) for v in shape]


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_numpy_integer_shape_with_huge_element_count_is_an_error(dtype):
    """SPEC 4: an element count that does not fit in int64 is a ValueError, also for numpy int shapes."""
    huge = (2**31 - 1, 2**31 - 1, 2**31 - 3)            # 2**93 elements; each dim fits in int32
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape(np.array(huge, dtype=dtype), 1)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape(huge, 1)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape(tuple(np.array(huge, dtype=dtype)), 1)


def test_numpy_int32_shape_is_computed_exactly():
    """SPEC 1.3 arithmetic is mathematical: D + pads past 2**31 does not wrap for an int32 shape."""
    x_shape = np.array([1, 1, 2**31 - 5], dtype=np.int32)
    expected = (1, 1, 2**31 - 5 + 2**30 + 2**30)
    assert pooling.max_pool_output_shape(x_shape, 1, pads=[2**30, 2**30]) == expected


def test_ceil_mode_one_where_floor_is_zero_values():
    """D=2, k=3, s=2, ceil: one window over x[0], x[1] and one position past the end."""
    x = np.array([[[3.0, 7.0]]], dtype=np.float32)
    y, ind = pooling.max_pool(x, 3, strides=2, ceil_mode=1, return_indices=True)
    assert y.tolist() == [[[7.0]]] and ind.tolist() == [[[1]]]


@pytest.mark.parametrize("x_shape, attrs", [
    ((1, 1, 1), dict(kernel_shape=(5,))),                         # floor(-4)+1 = -3
    ((1, 1, 1), dict(kernel_shape=(5,), ceil_mode=1)),            # ceil(-4)+1 = -3
    ((1, 1, 3), dict(kernel_shape=(2,), dilations=(5,))),         # e=6: floor(-3)+1 = -2
    ((1, 1, 2, 8), dict(kernel_shape=(5, 1), strides=(2, 1))),    # floor(-3/2)+1 = -1
    ((1, 1, 1, 1), dict(kernel_shape=(3, 3), auto_pad="VALID")),  # floor(-2)+1 = -1
])
def test_negative_output_dimension_is_an_error(x_shape, attrs):
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape(x_shape, **attrs)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool(np.zeros(x_shape, np.float32), **attrs)


@pytest.mark.parametrize("d", range(1, 12))
@pytest.mark.parametrize("k, s, dil", [(1, 1, 1), (2, 1, 1), (3, 2, 1), (2, 3, 2), (3, 1, 3), (4, 2, 2)])
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_padding_splits_total_pad(d, k, s, dil, auto_pad):
    """SAME: O = ceil(D/s); the window positions match pb = floor(T/2) (UPPER) / ceil(T/2) (LOWER)."""
    o = -(-d // s)
    e = (k - 1) * dil + 1
    total = max(0, (o - 1) * s + e - d)
    pb = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    pe = total - pb
    assert pooling.max_pool_output_shape((1, 1, d), k, strides=s, dilations=dil, auto_pad=auto_pad) == (1, 1, o)
    # The same result as NOTSET with those explicit pads (checks where the pad went).
    x = np.arange(d, dtype=np.float64)[None, None] * (-1) ** np.arange(d)
    a = pooling.max_pool(x, k, strides=s, dilations=dil, auto_pad=auto_pad, return_indices=True)
    b = pooling.max_pool(x, k, strides=s, dilations=dil, pads=(pb, pe), return_indices=True)
    assert a[0].shape == b[0].shape == (1, 1, o)
    assert a[0].tobytes() == b[0].tobytes() and (a[1] == b[1]).all()
