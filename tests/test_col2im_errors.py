"""Col2Im: every rule of SPEC 3 and 4 that rejects a call, with the error it raises.

Each case is checked on col2im and on col2im_output_shape (same validation).
"""
import numpy as np
import pytest

import pooling

# A valid call: 2 channels of 2x2 blocks over a 3x4 image, 2x3 blocks.
X = np.zeros((1, 8, 6), dtype=np.float32)
OK = dict(image_shape=(3, 4), block_shape=(2, 2))


def both(exc, match, x=X, **kwargs):
    """`exc` matching `match` from col2im and from col2im_output_shape."""
    args = dict(OK, **kwargs)
    with pytest.raises(exc, match=match):
        pooling.col2im(x, **args)
    args.pop("n_threads", None)
    with pytest.raises(exc, match=match):
        pooling.col2im_output_shape(np.shape(x), **args)


def test_valid_call_for_contrast():
    assert pooling.col2im(X, **OK).shape == (1, 2, 3, 4)
    assert pooling.col2im_output_shape(X.shape, **OK) == (1, 2, 3, 4)


# --- opset ----------------------------------------------------------------

def test_opset_before_18():
    both(ValueError, r"Col2Im: opset=17 .*first valid opset is 18", opset=17)
    both(ValueError, r"first valid opset is 18", opset=1)


def test_opset_18_needs_two_axes():
    x = np.zeros((1, 2, 4), dtype=np.float32)
    both(ValueError, r"Col2Im: version 18 .* at least 2 spatial axes", x=x, image_shape=[5],
         block_shape=[2], opset=18)
    assert pooling.col2im(x, [5], [2]).shape == (1, 1, 5)  # library mode allows 1
    assert pooling.col2im(X, **OK, opset=18).shape == (1, 2, 3, 4)
    assert pooling.col2im(X, **OK, opset=23).shape == (1, 2, 3, 4)  # still version 18


def test_cached_plans_keep_type_checks():
    # A float or bool equal to a valid int must not reuse that int's cached plan.
    pooling.col2im(X, **OK, strides=1)
    both(TypeError, r"Col2Im: image_shape must be an integer, got 3.0", image_shape=(3.0, 4))
    both(TypeError, r"Col2Im: strides must be an integer, got True", strides=True)
    both(TypeError, r"Col2Im: opset must be an integer, got 18.0", opset=18.0)


def test_opset_type():
    both(TypeError, r"Col2Im: opset must be an integer", opset="18")


# --- x --------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8, 6), (1, 1, 8, 6), ()])
def test_x_rank(shape):
    both(ValueError, r"Col2Im: x must have rank 3", x=np.zeros(shape, dtype=np.float32))


def test_channels_not_a_multiple_of_block():
    both(ValueError, r"x.shape\[1\] = 7 must be a positive multiple of prod\(block_shape\) = 4",
         x=np.zeros((1, 7, 6), dtype=np.float32))


def test_zero_channels():
    both(ValueError, r"x.shape\[1\] = 0 must be a positive multiple",
         x=np.zeros((1, 0, 6), dtype=np.float32))


@pytest.mark.parametrize("length", [5, 7, 1])
def test_length_not_the_number_of_blocks(length):
    both(ValueError, r"x.shape\[2\] = %d must equal the number of blocks, 6 .*\[2, 3\]" % length,
         x=np.zeros((1, 8, length), dtype=np.float32))


def test_no_block_fits():
    # Axis 1: image 4, block 3 dilated 2 = 5 > 4.
    both(ValueError, r"no block fits on axis 1: image size 4 .* dilated block 5",
         block_shape=(2, 3), dilations=(1, 2), x=np.zeros((1, 6, 1), dtype=np.float32))
    # The same fits once pads make room.
    x = np.zeros((1, 6, 2), dtype=np.float32)
    assert pooling.col2im(x, (3, 4), (2, 3), dilations=(1, 2), pads=(0, 0, 0, 1)).shape == (1, 1, 3, 4)


# --- image_shape, block_shape ----------------------------------------------

def test_length_mismatch():
    both(ValueError, r"image_shape and block_shape must have the same length", block_shape=(2, 2, 1))


def test_empty_shapes():
    both(ValueError, r"image_shape must have at least 1 value", image_shape=[], block_shape=[])


@pytest.mark.parametrize("name", ["image_shape", "block_shape"])
@pytest.mark.parametrize("value", [(0, 4), (3, -1)])
def test_non_positive(name, value):
    both(ValueError, rf"Col2Im: {name} values must be >= 1", **{name: value})


@pytest.mark.parametrize("name", ["image_shape", "block_shape"])
@pytest.mark.parametrize("value", [3, None, "34", np.array([[3, 4]]), np.array(3), (3.0, 4),
                                   np.array([3.0, 4.0]), (True, 4), {3, 4}])
def test_shape_types(name, value):
    both(TypeError, rf"Col2Im: {name} (must be|has unsupported type)", **{name: value})


def test_too_many_axes():
    n = 63
    both(ValueError, r"image_shape has 63 values; the output rank", image_shape=(1,) * n,
         block_shape=(1,) * n, x=np.zeros((1, 1, 1), dtype=np.float32))


# --- attributes -------------------------------------------------------------

@pytest.mark.parametrize("name, value, match", [
    ("strides", (1, 0), r"strides values must be >= 1"),
    ("strides", 0, r"strides values must be >= 1"),
    ("dilations", (0, 1), r"dilations values must be >= 1"),
    ("pads", (0, 0, -1, 0), r"pads values must be >= 0"),
    ("pads", -1, r"pads values must be >= 0"),
    ("strides", (1, 1, 1), r"strides must have 2 values, got 3"),
    ("dilations", (1,), r"dilations must have 2 values, got 1"),
    ("pads", (0, 0), r"pads must have 4 values, got 2"),
])
def test_attribute_values(name, value, match):
    both(ValueError, "Col2Im: " + match, **{name: value})


@pytest.mark.parametrize("name, value", [("strides", 1.5), ("pads", (0, 0, 0, "1")),
                                         ("dilations", np.ones((2, 1), dtype=int))])
def test_attribute_types(name, value):
    both(TypeError, rf"Col2Im: {name} must be", **{name: value})


# --- sizes ------------------------------------------------------------------

def test_input_too_large_to_index():
    # A zero-stride view looks like 2**62 elements without holding them.
    x = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=(2**31, 1, 2**31),
                                        strides=(0, 0, 0))
    both(ValueError, r"Col2Im: input shape .* is past the 2\*\*62 limit", x=x, image_shape=[2**31],
         block_shape=[1])


def test_output_too_large_to_index():
    # One 1x1 block, strided past a 2**31 x 2**31 image: a tiny input, a huge output.
    with pytest.raises(ValueError, match=r"Col2Im: output shape .* is past the 2\*\*62 limit"):
        pooling.col2im_output_shape((1, 1, 1), (2**31, 2**31), (1, 1), strides=2**31)


def test_reach_past_2_62():
    both(ValueError, r"image_shape plus pads on axis 0 \(\d+\) is past the 2\*\*62 limit",
         image_shape=(2**61, 4), pads=(2**61, 0, 0, 0))


# --- n_threads, dtypes --------------------------------------------------------

def test_n_threads():
    with pytest.raises(ValueError, match=r"Col2Im: n_threads must be non-zero"):
        pooling.col2im(X, **OK, n_threads=0)
    with pytest.raises(TypeError, match=r"Col2Im: n_threads must be an int"):
        pooling.col2im(X, **OK, n_threads="2")
    assert pooling.col2im(X, **OK, n_threads=-100).shape == (1, 2, 3, 4)  # at least 1


@pytest.mark.parametrize("value, message", [
    (None, r"x must be an array of numbers, got None \(NoneType\)"),
    ("abc", r"x must be an array of numbers, got 'abc' \(str\)"),
    (7, r"x must be an array of numbers, got 7 \(int\)"),
    ([[[None] * 6] * 8], r"x has dtype object: it must be an array of numbers, got \[\[\[None, .* \(list\)"),
    ([[["a"] * 6] * 8], r"x has dtype <U1: it must be an array of numbers, got \[\[\['a', .* \(list\)"),
    ([[[1.0, 2.0], [3.0]]], r"x must be an array of numbers, got .* \(list\): .*inhomogeneous.*"),
])
def test_x_not_an_array_of_numbers(value, message):
    """A TypeError naming operator, x and the value (not 'x must have rank 3, got shape []')."""
    with pytest.raises(TypeError, match=rf"^Col2Im: {message}$"):
        pooling.col2im(value, **OK)


@pytest.mark.parametrize("dtype", [object, "U2"])
def test_string_and_object(dtype):
    with pytest.raises(TypeError, match=r"Col2Im: x has dtype .* not supported"):
        pooling.col2im(np.zeros((1, 8, 6), dtype=dtype), **OK)
