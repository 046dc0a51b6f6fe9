"""Hand-computed MaxPool cases, expected values written from SPEC 1.3-1.5 by hand.

Each case runs through both the kernels (`pooling.max_pool`) and the numpy
reference (`pooling.reference.max_pool`), so the reference the other tests lean
on is itself checked.  Inputs are tiny; the comments show the windows.
"""
import math

import numpy as np
import pytest

import pooling
from conftest import FLOAT_KINDS, INT_KINDS, POOL_DTYPES, as_float64, assert_same, to_dtype
from pooling import reference
from pooling._maxpool_strategies import Strategy

ALL_KINDS = tuple(kind for kind in POOL_DTYPES if kind != "bool")  # (bool's own cases are at the end)


def run(impl, x, storage_order=0, **attrs):
    """(Y, Indices) from the kernels or their twin, both called the same way."""
    module = pooling if impl == "kernel" else reference
    return module.max_pool(x, storage_order=storage_order, return_indices=True, **attrs)


def arr(values, kind):
    """A (1, 1, ...) array of `values` (floats, or ints) in dtype `kind`."""
    values = np.asarray(values, dtype=np.float64)
    if kind in INT_KINDS:
        return values.astype(kind)
    return to_dtype(values, kind)


def low(kind):
    """The empty-window value: -inf or the integer minimum."""
    return -math.inf if kind in FLOAT_KINDS else np.iinfo(kind).min


def bits_dtype(kind):
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[POOL_DTYPES[kind].itemsize]


def with_bits(bits, kind):
    """An array whose elements have exactly these bit patterns."""
    return np.asarray(bits, dtype=bits_dtype(kind)).view(POOL_DTYPES[kind])


IMPLS = ("kernel", "reference")

# Quiet NaNs with distinct payloads, one with the sign bit set, and a signalling NaN.
NAN_A = {"float16": 0x7E01, "bfloat16": 0x7FC1, "float32": 0x7FC00001, "float64": 0x7FF8000000000001}
NAN_B = {"float16": 0xFE02, "bfloat16": 0xFFC2, "float32": 0xFFC00002, "float64": 0xFFF8000000000002}
SNAN = {"float16": 0x7C01, "bfloat16": 0x7F81, "float32": 0x7F800001, "float64": 0x7FF0000000000001}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_ties_first_maximum_wins_1d(impl, kind):
    # x = [2, 2, 1, 2], k=2: [2,2] -> first (0); [2,1] -> 1; [1,2] -> 3.
    x = arr([[[2, 2, 1, 2]]], kind)
    for so in (0, 1):  # 1-D: both storage orders agree
        y, ind = run(impl, x, so, kernel_shape=(2,))
        assert_same(y, arr([[[2, 2, 2]]], kind))
        assert_same(ind, np.array([[[0, 1, 3]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_first_nan_wins_with_its_bits(impl, kind):
    one, five, two = (arr([v], kind).view(bits_dtype(kind))[0] for v in (1, 5, 2))
    # x = [1, NaN_a, 5, NaN_b, 2], k=3: [1,a,5] -> a (1); [a,5,b] -> a (1); [5,b,2] -> b (3).
    x = with_bits([[[one, NAN_A[kind], five, NAN_B[kind], two]]], kind)
    y, ind = run(impl, x, kernel_shape=(3,))
    assert_same(y, with_bits([[[NAN_A[kind], NAN_A[kind], NAN_B[kind]]]], kind))
    assert_same(ind, np.array([[[1, 1, 3]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_nan_beats_infinity(impl, kind):
    inf, ninf = (arr([v], kind).view(bits_dtype(kind))[0] for v in (math.inf, -math.inf))
    # x = [inf, sNaN, -inf, NaN_b, inf], k=2: NaN wins whether it comes first or second.
    x = with_bits([[[inf, SNAN[kind], ninf, NAN_B[kind], inf]]], kind)
    y, ind = run(impl, x, kernel_shape=(2,))
    assert_same(y, with_bits([[[SNAN[kind], SNAN[kind], NAN_B[kind], NAN_B[kind]]]], kind))
    assert_same(ind, np.array([[[1, 1, 3, 3]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_nan_in_2d_window_order(impl, kind):
    # 2x3 plane, k=(2,2): the first NaN in window order (row by row) wins, even when a
    # NaN appears earlier in the *column* (column 1 of row 1 comes after row 0).
    one = arr([1], kind).view(bits_dtype(kind))[0]
    x = with_bits([[[[one, one, NAN_B[kind]],
                     [NAN_A[kind], one, one]]]], kind)
    # window (0,0): taps (0,0) (0,1) (1,0)=a (1,1) -> a at offset 3
    # window (0,1): taps (0,1) (0,2)=b (1,1) (1,2) -> b at offset 2
    y, ind = run(impl, x, kernel_shape=(2, 2))
    assert_same(y, with_bits([[[[NAN_A[kind], NAN_B[kind]]]]], kind))
    assert_same(ind, np.array([[[[3, 2]]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_signed_zeros_tie(impl, kind):
    # x = [-0, +0, -0, -1], k=2: [-0,+0] -> -0 (0); [+0,-0] -> +0 (1); [-0,-1] -> -0 (2).
    x = arr([[[-0.0, 0.0, -0.0, -1.0]]], kind)
    y, ind = run(impl, x, kernel_shape=(2,))
    assert_same(y, arr([[[-0.0, 0.0, -0.0]]], kind))
    assert_same(ind, np.array([[[0, 1, 2]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_empty_windows_in_padding(impl, kind):
    # x = [1, 3, 2], k=1, pads (2, 2): taps o-2 for o = 0..6.
    x = arr([[[1, 3, 2]]], kind)
    y, ind = run(impl, x, kernel_shape=(1,), pads=(2, 2))
    m = low(kind)
    assert_same(y, arr([[[m, m, 1, 3, 2, m, m]]], kind))
    assert_same(ind, np.array([[[-1, -1, 0, 1, 2, -1, -1]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_empty_window_straddling_input_by_dilation(impl, kind):
    # D=2, k=2, d=3 (e=4), pads (1,1): num = 2+2-4 = 0, O = 1; taps -1 and 2: both outside.
    x = arr([[[4, 7]]], kind)
    y, ind = run(impl, x, kernel_shape=(2,), dilations=(3,), pads=(1, 1))
    assert_same(y, arr([[[low(kind)]]], kind))
    assert_same(ind, np.array([[[-1]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_pads_larger_than_kernel_2d(impl, kind):
    # One element, k=(1,1), pads 1 on every side: a 3x3 output, only the centre is non-empty.
    x = arr([[[[7]]]], kind)
    y, ind = run(impl, x, kernel_shape=(1, 1), pads=(1, 1, 1, 1))
    m = low(kind)
    assert_same(y, arr([[[[m, m, m], [m, 7, m], [m, m, m]]]], kind))
    assert_same(ind, np.array([[[[-1, -1, -1], [-1, 0, -1], [-1, -1, -1]]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_windows_of_minimum_values_are_not_empty(impl, kind):
    # Every element is -inf (or the integer minimum): Y is that value, Indices the first tap.
    m = low(kind)
    x = arr([[[m, m, m]]], kind)
    y, ind = run(impl, x, kernel_shape=(2,), pads=(1, 1))
    assert_same(y, arr([[[m, m, m, m]]], kind))
    # windows: [pad,0] [0,1] [1,2] [2,pad]
    assert_same(ind, np.array([[[0, 0, 1, 2]]]))


# 2-D Indices with both storage orders, N=2, C=2, planes of 3x4, k=(2,2), s=(1,2).
PLANE_A = [[0, 5, 1, 2],
           [3, 4, 9, 6],
           [7, 8, 10, 11]]
# windows: (0,0) [0,5,3,4] -> 5 at (0,1); (0,1) [1,2,9,6] -> 9 at (1,2);
#          (1,0) [3,4,7,8] -> 8 at (2,1); (1,1) [9,6,10,11] -> 11 at (2,3)
Y_A = [[5, 9], [8, 11]]
ROW_A = [[1, 6], [9, 11]]             # h*W + w, W = 4
COL_A = [[3, 7], [5, 11]]             # h + w*H, H = 3
PLANE_B = [[1, 1, 0, 0],
           [1, 0, 0, 2],
           [-1, 3, 3, -5]]
# windows: (0,0) [1,1,1,0] -> first 1 at (0,0); (0,1) [0,0,0,2] -> 2 at (1,3);
#          (1,0) [1,0,-1,3] -> 3 at (2,1);   (1,1) [0,2,3,-5] -> first 3 at (2,2)
Y_B = [[1, 2], [3, 3]]
ROW_B = [[0, 7], [9, 10]]
COL_B = [[0, 10], [5, 8]]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_indices_2d_row_and_column_major(impl, kind):
    planes = [PLANE_A, PLANE_B, PLANE_B, PLANE_A]   # plane p = n*C + c
    ys, rows, cols = [Y_A, Y_B, Y_B, Y_A], [ROW_A, ROW_B, ROW_B, ROW_A], [COL_A, COL_B, COL_B, COL_A]
    x = arr(np.array(planes).reshape(2, 2, 3, 4) + 5, kind)   # + 5: non-negative for uint8
    offsets = (np.arange(4) * 12).reshape(2, 2, 1, 1)          # plane = (n*C + c) * P, P = 12
    expected_y = arr(np.array(ys).reshape(2, 2, 2, 2) + 5, kind)
    y, ind = run(impl, x, 0, kernel_shape=(2, 2), strides=(1, 2))
    assert_same(y, expected_y)
    assert_same(ind, np.array(rows).reshape(2, 2, 2, 2) + offsets)
    y, ind = run(impl, x, 1, kernel_shape=(2, 2), strides=(1, 2))
    assert_same(y, expected_y)
    assert_same(ind, np.array(cols).reshape(2, 2, 2, 2) + offsets)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_indices_3d_general_column_major_formula(impl, kind):
    # Spatial (D1, D2, D3) = (2, 2, 3), k=(1,2,2): column-major is p1 + p2*D1 + p3*D1*D2.
    x = arr([[[[[3, 0, 7], [1, 2, 4]],
               [[6, 9, 5], [8, 11, 10]]]]], kind)
    # (0,0,0): [3,0,1,2] -> 3 at (0,0,0): row 0, col 0
    # (0,0,1): [0,7,2,4] -> 7 at (0,0,2): row 2, col 0 + 0 + 2*4 = 8
    # (1,0,0): [6,9,8,11] -> 11 at (1,1,1): row 6+3+1 = 10, col 1 + 2 + 4 = 7
    # (1,0,1): [9,5,11,10] -> 11 at (1,1,1)
    expected_y = arr([[[[[3, 7]], [[11, 11]]]]], kind)
    y, ind = run(impl, x, 0, kernel_shape=(1, 2, 2))
    assert_same(y, expected_y)
    assert_same(ind, np.array([[[[[0, 2]], [[10, 10]]]]]))
    y, ind = run(impl, x, 1, kernel_shape=(1, 2, 2))
    assert_same(y, expected_y)
    assert_same(ind, np.array([[[[[0, 8]], [[7, 7]]]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_indices_3d_global_two_planes(impl, kind):
    # Spatial (2, 3, 4), global kernel; plane 0's max at (1,2,1), plane 1's at (0,1,3).
    x = np.zeros((1, 2, 2, 3, 4))
    x[0, 0, 1, 2, 1] = 9
    x[0, 1, 0, 1, 3] = 9
    x = arr(x, kind)
    # row-major: 1*12 + 2*4 + 1 = 21 and 24 + 0 + 4 + 3 = 31
    # column-major: 1 + 2*2 + 1*6 = 11 and 24 + 0 + 1*2 + 3*6 = 44
    y, ind = run(impl, x, 0, kernel_shape=(2, 3, 4))
    assert_same(y, arr(np.full((1, 2, 1, 1, 1), 9), kind))
    assert_same(ind, np.array([21, 31]).reshape(1, 2, 1, 1, 1))
    y, ind = run(impl, x, 1, kernel_shape=(2, 3, 4))
    assert_same(ind, np.array([11, 44]).reshape(1, 2, 1, 1, 1))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_indices_4d_column_major(impl, kind):
    # Spatial (2, 2, 2, 2), global kernel, max at (1, 0, 1, 1):
    # row-major 8 + 0 + 2 + 1 = 11; column-major 1 + 0*2 + 1*4 + 1*8 = 13.
    x = np.zeros((1, 1, 2, 2, 2, 2))
    x[0, 0, 1, 0, 1, 1] = 3
    x = arr(x, kind)
    assert run(impl, x, 0, kernel_shape=(2, 2, 2, 2))[1].item() == 11
    assert run(impl, x, 1, kernel_shape=(2, 2, 2, 2))[1].item() == 13


@pytest.mark.parametrize("impl", IMPLS)
def test_ties_in_4d_go_to_the_first_tap(impl):
    # All equal: every window's winner is its first tap (o1, o2, o3, o4), row-major offset.
    x = np.ones((1, 1, 3, 3, 3, 3), dtype=np.float32)
    y, ind = run(impl, x, kernel_shape=(2, 2, 2, 2))
    o = np.indices((2, 2, 2, 2))
    assert_same(ind, (o[0] * 27 + o[1] * 9 + o[2] * 3 + o[3])[None, None])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_same_padding_odd_total(impl, kind):
    x = arr([[[1, 5, 2, 4, 3]]], kind)
    # D=5, k=2, s=1: O = 5, T = 4 + 2 - 5 = 1.
    # SAME_LOWER: pb = 1, pe = 0, taps o-1, o.
    y, ind = run(impl, x, kernel_shape=(2,), auto_pad="SAME_LOWER")
    assert_same(y, arr([[[1, 5, 5, 4, 4]]], kind))
    assert_same(ind, np.array([[[0, 1, 1, 3, 3]]]))
    # SAME_UPPER: pb = 0, pe = 1, taps o, o+1.
    y, ind = run(impl, x, kernel_shape=(2,), auto_pad="SAME_UPPER")
    assert_same(y, arr([[[5, 5, 4, 4, 3]]], kind))
    assert_same(ind, np.array([[[1, 1, 3, 3, 4]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_same_padding_with_dilation(impl, kind):
    x = arr([[[1, 5, 2, 4, 3]]], kind)
    # D=5, k=2, d=3 (e=4), s=1: O = 5, T = 4 + 4 - 5 = 3 (with the dilated kernel).
    # SAME_UPPER: pb = 1, pe = 2, taps o-1 and o+2.
    y, ind = run(impl, x, kernel_shape=(2,), dilations=(3,), auto_pad="SAME_UPPER")
    assert_same(y, arr([[[2, 4, 5, 2, 4]]], kind))
    assert_same(ind, np.array([[[2, 3, 1, 2, 3]]]))
    # SAME_LOWER: pb = 2, pe = 1, taps o-2 and o+1.
    y, ind = run(impl, x, kernel_shape=(2,), dilations=(3,), auto_pad="SAME_LOWER")
    assert_same(y, arr([[[5, 2, 4, 5, 2]]], kind))
    assert_same(ind, np.array([[[1, 2, 3, 1, 2]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_ceil_mode_and_drop_rule(impl, kind):
    x = arr([[[1, 5, 2, 4, 3]]], kind)
    # k=2, s=2, no pads: floor -> 2 windows; ceil -> ceil(3/2)+1 = 3, the last one [3, past end].
    y, ind = run(impl, x, kernel_shape=(2,), strides=(2,))
    assert_same(y, arr([[[5, 4]]], kind))
    y, ind = run(impl, x, kernel_shape=(2,), strides=(2,), ceil_mode=1)
    assert_same(y, arr([[[5, 4, 3]]], kind))
    assert_same(ind, np.array([[[1, 3, 4]]]))
    # pads (0, 2): ceil(5/2)+1 = 4, but window 3 would start at 6 >= D + pb = 5: dropped.
    y, ind = run(impl, x, kernel_shape=(2,), strides=(2,), pads=(0, 2), ceil_mode=1)
    assert_same(y, arr([[[5, 4, 3]]], kind))
    assert_same(ind, np.array([[[1, 3, 4]]]))
    # VALID with ceil_mode: pads 0, then as NOTSET.
    y, ind = run(impl, x, kernel_shape=(2,), strides=(2,), auto_pad="VALID", ceil_mode=1)
    assert_same(y, arr([[[5, 4, 3]]], kind))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_activations_float(impl, kind):
    nan = with_bits([NAN_A[kind]], kind)[0]
    x = arr([[[-3, -0.5, 0, 1, 4]]], kind)
    x[0, 0, 2] = nan
    y, _ = run(impl, x, kernel_shape=(1,), activation="Relu")
    expected = arr([[[0, 0, 0, 1, 4]]], kind)
    assert np.isnan(as_float64(y)[0, 0, 2])
    mask = [0, 1, 3, 4]
    assert_same(y[0, 0, mask], expected[0, 0, mask])
    y, _ = run(impl, x, kernel_shape=(1,), activation="Clip", activation_params=(-1, 2))
    expected = arr([[[-1, -0.5, 0, 1, 2]]], kind)
    assert np.isnan(as_float64(y)[0, 0, 2])
    assert_same(y[0, 0, mask], expected[0, 0, mask])
    y, _ = run(impl, x, kernel_shape=(1,), activation="Clip", activation_params=(1, 1))
    assert_same(y[0, 0, mask], arr([1, 1, 1, 1], kind))


@pytest.mark.parametrize("impl", IMPLS)
def test_activations_int(impl):
    x = arr([[[-100, -2, 0, 3, 100]]], "int8")
    y, _ = run(impl, x, kernel_shape=(1,), activation="Relu")
    assert_same(y, arr([[[0, 0, 0, 3, 100]]], "int8"))
    # Clip(-1.5, 2.5) on integers clamps to [ceil(-1.5), floor(2.5)] = [-1, 2].
    y, _ = run(impl, x, kernel_shape=(1,), activation="Clip", activation_params=(-1.5, 2.5))
    assert_same(y, arr([[[-1, -1, 0, 2, 2]]], "int8"))
    # Bounds outside the type's range are limited to it: nothing changes.
    y, _ = run(impl, x, kernel_shape=(1,), activation="Clip", activation_params=(-1000, 1000))
    assert_same(y, x)
    u = arr([[[0, 2, 3, 200]]], "uint8")
    y, _ = run(impl, u, kernel_shape=(1,), activation="Clip", activation_params=(-5, 2.7))
    assert_same(y, arr([[[0, 2, 2, 2]]], "uint8"))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_activation_on_empty_window(impl, kind):
    # Relu lifts the empty window's -inf / minimum to 0; Indices stay -1.
    x = arr([[[1]]], kind)
    y, ind = run(impl, x, kernel_shape=(1,), pads=(1, 0), activation="Relu")
    assert_same(y, arr([[[0, 1]]], kind))
    assert_same(ind, np.array([[[-1, 0]]]))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_output_dimension_zero(impl, rank):
    # D=2, k=3, s=2 on the first axis: floor(-1/2)+1 = 0; other axes k=1.
    x = np.ones((1, 2, 2) + (3,) * (rank - 1), dtype=np.float32)
    y, ind = run(impl, x, kernel_shape=(3,) + (1,) * (rank - 1), strides=(2,) * rank)
    assert y.shape == ind.shape == (1, 2, 0) + (2,) * (rank - 1)
    assert y.dtype == np.float32 and ind.dtype == np.int64


@pytest.mark.parametrize("impl", IMPLS)
def test_zero_batch(impl):
    x = np.ones((0, 2, 4, 4), dtype=np.float32)
    y, ind = run(impl, x, kernel_shape=(2, 2))
    assert y.shape == ind.shape == (0, 2, 3, 3)


@pytest.mark.parametrize("impl", IMPLS)
def test_zero_sized_axis_with_pads(impl):
    # D = 0, k = 1, pads (1, 1): O = 0 + 2 - 1 + 1 = 2 windows, both empty.
    x = np.ones((1, 1, 0), dtype=np.float32)
    y, ind = run(impl, x, kernel_shape=(1,), pads=(1, 1))
    assert_same(y, np.full((1, 1, 2), -np.inf, np.float32))
    assert_same(ind, np.full((1, 1, 2), -1))


def test_relu_ignores_params_and_clip_takes_any_sequence():
    x = arr([[[-3, -1, 0, 2, 5]]], "float32")
    expected = arr([[[0, 0, 0, 2, 5]]], "float32")
    assert_same(pooling.max_pool(x, 1, activation="Relu"), expected)
    assert_same(pooling.max_pool(x, 1, activation="Relu", activation_params=(1.0, 2.0)), expected)
    clipped = arr([[[-1, -1, 0, 2, 3]]], "float32")
    for params in ((-1, 3), [-1.0, 3.0], np.array([-1, 3]), np.array([-1.0, 3.0], np.float32)):
        assert_same(pooling.max_pool(x, 1, activation="Clip", activation_params=params), clipped)


# -- bool (library mode): True wins, the first True gives the index, results are 0/1 -------------

@pytest.mark.parametrize("impl", IMPLS)
def test_bool_first_true_wins(impl):
    # x = [F, T, T, F, T, F, F], k=3: [F,T,T] -> 1; [T,T,F] -> 1; [T,F,T] -> 2; [F,T,F] -> 4;
    # [T,F,F] -> 4; then with pads (1, 2): [pad,F,T] -> 1 ... [F,pad,pad] -> False at 6.
    x = np.array([[[False, True, True, False, True, False, False]]])
    y, ind = run(impl, x, kernel_shape=(3,))
    assert_same(y, np.array([[[True, True, True, True, True]]]))
    assert_same(ind, np.array([[[1, 1, 2, 4, 4]]]))
    y, ind = run(impl, x[..., 4:], kernel_shape=(3,), pads=(1, 2))
    # [pad,T,F] -> 0; [T,F,F] -> 0; [F,F,pad] -> 1; [F,pad,pad] -> 2 (every window holds an element)
    assert_same(y, np.array([[[True, True, False, False]]]))
    assert_same(ind, np.array([[[0, 0, 1, 2]]]))


@pytest.mark.parametrize("impl", IMPLS)
def test_bool_empty_windows_are_false(impl):
    # x = [T, F], k=2, dilation 3, pads (2, 2): windows start at -2, -1, 0, taps (-2, 1) -> x[1] only;
    # (-1, 2) -> none (empty); (0, 3) -> x[0] only
    x = np.array([[[True, False]]])
    y, ind = run(impl, x, kernel_shape=(2,), dilations=(3,), pads=(2, 2))
    assert_same(y, np.array([[[False, False, True]]]))
    assert_same(ind, np.array([[[1, -1, 0]]]))


def _bool_bytes():
    """(2, 1, 3, 16) bool whose bytes are not all 0/1 (a uint8 buffer viewed as bool), and its
    pairs' Y as bytes and Indices: [0,1] [2,0] [255,0] [3,7] [0,0] [0,0] [4,1] [9,0], then the rows reversed."""
    rows = np.array([[0, 1, 2, 0, 255, 0, 3, 7, 0, 0, 0, 0, 4, 1, 9, 0]] * 3, np.uint8)
    x = np.stack([rows, rows[:, ::-1]])[:, None].view(np.bool_)
    want = np.array([1, 1, 1, 1, 0, 0, 1, 1], np.uint8)
    y = np.stack([np.tile(want, (3, 1)), np.tile(want[::-1], (3, 1))])[:, None]
    # the first True of each pair (the first tap where there is none), not the largest byte
    first = np.array([1, 2, 4, 6, 8, 10, 12, 14])
    index = np.stack([np.tile(first, (3, 1)), np.tile(np.array([1, 2, 4, 6, 8, 11, 13, 14]), (3, 1))])[:, None]
    return x, y, index + np.arange(6).reshape(2, 1, 3, 1) * 16


BOOL_PAIRS = dict(kernel_shape=(1, 2), strides=(1, 2))
BOOL_STRATEGIES = [s for s in Strategy if pooling._maxpool_strategies.serves(
    s, pooling.maxpool._plan((2, 1, 3, 16), kernel_shape=(1, 2), strides=(1, 2), pads=None, dilations=None,
                             auto_pad="NOTSET", ceil_mode=False, storage_order=0, return_indices=False,
                             layout="NCHW", activation=None, activation_params=None, opset=None,
                             index_format="onnx"), "bool", False)]


@pytest.mark.parametrize("impl", IMPLS)
def test_bool_any_nonzero_byte_is_true(impl):
    """Every nonzero byte is True, the index is the first True's (not the largest byte's), and Y
    holds 0/1 bytes; the input is never modified."""
    x, want_y, want_index = _bool_bytes()
    before = x.view(np.uint8).copy()
    y, ind = run(impl, x, **BOOL_PAIRS)
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y.view(np.uint8), want_y)
    np.testing.assert_array_equal(ind, want_index)
    module = pooling if impl == "kernel" else reference
    np.testing.assert_array_equal(module.max_pool(x, **BOOL_PAIRS).view(np.uint8), want_y)
    np.testing.assert_array_equal(x.view(np.uint8), before)


@pytest.mark.parametrize("strategy", BOOL_STRATEGIES)
def test_bool_any_nonzero_byte_is_true_in_every_strategy(strategy):
    x, want_y, _ = _bool_bytes()
    for nt in (1, 2):
        y = pooling.max_pool(x, n_threads=nt, _strategy=strategy, **BOOL_PAIRS)
        np.testing.assert_array_equal(y.view(np.uint8), want_y)


BOOL_GEOMETRIES = [
    ((2, 3, 9, 40), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((2, 3, 9, 40), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
    ((1, 2, 6, 8, 34), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
    ((2, 32, 6, 9, 10), dict(kernel_shape=(3, 3, 3), strides=(2, 2, 2), pads=(1, 1, 1, 1, 1, 1))),
    ((2, 5, 7, 7), dict(kernel_shape=(7, 7))),
    ((2, 9, 11, 16), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), layout="NHWC")),
]


@pytest.mark.parametrize("shape, attrs", BOOL_GEOMETRIES, ids=[f"{c[0]}-{c[1]}" for c in BOOL_GEOMETRIES])
def test_bool_bytes_in_every_strategy_against_the_twin(shape, attrs):
    """Masks whose bytes are 0, 1, 2 and 255 (uint8 viewed as bool) through every strategy serving the
    geometry, with and without Indices, at 1 and 2 threads: the twin's 0/1 values and first-True
    indices (without Indices the kernels clamp the largest byte to 1; with them a result above 1
    sends the call again on the input read as 0/1)."""
    rng = np.random.default_rng(21)
    x = rng.choice(np.array([0, 0, 0, 1, 2, 255], np.uint8), size=shape).view(np.bool_)
    before = x.view(np.uint8).copy()
    for indices in (False, True):
        want = reference.max_pool(x, return_indices=indices, **attrs)
        plan = pooling.maxpool._plan(x.shape, **dict(dict(
            strides=None, pads=None, dilations=None, auto_pad="NOTSET", ceil_mode=False, storage_order=0,
            return_indices=indices, layout="NCHW", activation=None, activation_params=None, opset=None,
            index_format="onnx"), **attrs))
        served = [st for st in Strategy if pooling._maxpool_strategies.serves(st, plan, "bool", indices)]
        assert served
        for st in served:
            for nt in (1, 2):
                got = pooling.max_pool(x, return_indices=indices, n_threads=nt, _strategy=st, **attrs)
                for g, w in zip(got if indices else [got], want if indices else [want]):
                    assert g.dtype == w.dtype and np.array_equal(g.view(np.uint8) if g.dtype == np.bool_ else g,
                                                                w.view(np.uint8) if w.dtype == np.bool_ else w), st
    np.testing.assert_array_equal(x.view(np.uint8), before)


def test_bool_has_no_activation():
    x = np.zeros((1, 1, 4), bool)
    for module in (pooling, reference):
        for activation in ("Relu", "Clip"):
            with pytest.raises(ValueError, match=f"MaxPool: activation='{activation}' is not defined for bool x"):
                module.max_pool(x, 2, activation=activation, activation_params=[0.0, 1.0])
