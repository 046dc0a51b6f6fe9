"""Hostile inputs for every operator (SPEC 4): limits, overflow, empty axes, odd memory, bad indices.

Each case raises the documented ValueError / TypeError naming the operator, or gives the reference
result; never a crash, MemoryError or OverflowError.  Cases that could take the process down (a crash
is what is being tested) run in a subprocess.
"""
import importlib
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pooling
from conftest import (ALL_DTYPES, INT_KINDS, POOL_DTYPES, assert_same, assert_same_or_nan, make_any_array, make_array,
                      memory_orders, to_nhwc, unaligned,
                      unpool_output_shape)
from pooling import _dispatch, reference
from pooling._attrs import hashable
from pooling._dtypes import LEGACY_BFLOAT16

INT64_MAX, INT64_MIN = 2**63 - 1, -2**63


def huge_view(shape, dtype):
    """An array of `shape` whose elements all share one byte of memory (every stride 0)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=shape, strides=(0,) * len(shape))


# One valid call of each operator and layout: x, (indices,) and keyword attributes.  The attribute
# tests below break one value of these at a time.
def _unpool_case(layout):
    x = np.arange(1, 9, dtype=np.float64).reshape((1, 2, 2, 2) if layout == "NCHW" else (1, 2, 2, 2))
    indices = np.array([0, 3, 5, 6, 9, 10, 12, 15], np.int64).reshape(x.shape)
    attrs = dict(kernel_shape=(2, 1), strides=(1, 2), pads=(0, 0, 0, 0))
    if layout == "NHWC":
        attrs["layout"] = "NHWC"
    return (x, indices), attrs


CASES = {
    "MaxPool-NCHW": (pooling.max_pool, pooling.max_pool_output_shape,
                     (np.arange(48, dtype=np.float64).reshape(1, 2, 4, 6),),
                     dict(kernel_shape=(2, 3), strides=(1, 2), dilations=(1, 1), pads=(0, 1, 1, 0))),
    "MaxPool-NHWC": (pooling.max_pool, pooling.max_pool_output_shape,
                     (np.arange(48, dtype=np.float64).reshape(1, 4, 6, 2),),
                     dict(kernel_shape=(2, 3), strides=(1, 2), dilations=(1, 1), pads=(0, 1, 1, 0),
                          layout="NHWC")),
    "MaxUnpool-NCHW": (pooling.max_unpool, pooling.max_unpool_output_shape, *_unpool_case("NCHW")),
    "MaxUnpool-NHWC": (pooling.max_unpool, pooling.max_unpool_output_shape, *_unpool_case("NHWC")),
    "Col2Im": (pooling.col2im, pooling.col2im_output_shape, (np.arange(48, dtype=np.float64).reshape(1, 4, 12),),
               dict(image_shape=(4, 5), block_shape=(2, 2), strides=(1, 2), dilations=(1, 1),
                    pads=(0, 1, 1, 0))),
}
SEQUENCE_ATTRIBUTES = [(case, name) for case, (_, _, _, attrs) in CASES.items() for name in attrs
                       if name != "layout"] + [("MaxUnpool-NCHW", "output_shape"),
                                               ("MaxUnpool-NHWC", "output_shape")]
# Past the 2**62 limit (SPEC 4: sizes and offsets must fit in int64 with room), past int64, below 0.
LIMIT_VALUES = [2**62, INT64_MAX, 2**63, 2**64 - 1, 2**64, INT64_MIN, -1]


def _call(case, **changes):
    fn, shape_fn, arrays, attrs = CASES[case]
    attrs = dict(attrs, **changes)
    return (lambda: fn(*arrays, **attrs)), (lambda: shape_fn(arrays[0].shape, **attrs))


def _with(case, name, value, axis):
    """CASES[case]'s attribute `name` with `value` on one axis (output_shape: its last entry)."""
    attrs = CASES[case][3]
    if name == "output_shape":
        current = list(unpool_output_shape(CASES[case][2][0].shape, attrs))
        axis = len(current) - (2 if attrs.get("layout") == "NHWC" else 1)
    else:
        current = list(attrs[name])
    current[axis] = value
    return current


@pytest.mark.parametrize("value", LIMIT_VALUES)
@pytest.mark.parametrize("case, name", SEQUENCE_ATTRIBUTES, ids=[f"{c}-{n}" for c, n in SEQUENCE_ATTRIBUTES])
def test_sequence_attributes_at_int64_limits(case, name, value):
    """Every sequence attribute of every operator, at and past the int64 limits, as a Python int, a numpy
    scalar and in an array: a ValueError naming the operator and the attribute, from the call and from
    its shape twin alike."""
    op = case.split("-")[0]
    values = [value]
    if INT64_MIN <= value <= INT64_MAX:
        values.append(np.int64(value))
    if 0 <= value < 2**64:
        values.append(np.uint64(value))
    for axis in (0, -1):
        for v in values:
            for form in ("list", "array"):
                seq = _with(case, name, v, axis)
                if form == "array":
                    if not isinstance(v, np.integer):
                        continue
                    seq = np.array(seq, dtype=type(v))
                call, shape_call = _call(case, **{name: seq})
                for fn in (call, shape_call):
                    with pytest.raises(ValueError, match=rf"^{op}: .*({name}|shape|dimension|reach)"):
                        fn()


@pytest.mark.parametrize("case, name", SEQUENCE_ATTRIBUTES, ids=[f"{c}-{n}" for c, n in SEQUENCE_ATTRIBUTES])
def test_sequence_attributes_just_below_the_limit(case, name):
    """2**62 - 1 passes the value check, and then each shape rule must still catch it: an output
    dimension < 0 or past the limit, a reach past 2**62, a block count that cannot match.  A
    ValueError naming the operator, never an OverflowError or MemoryError.  (Values that take no
    effect give results: test_huge_dilation_and_stride_that_take_no_effect_give_the_reference.)"""
    op = case.split("-")[0]
    call, shape_call = _call(case, **{name: _with(case, name, 2**62 - 1, -1)})
    for fn in (call, shape_call):
        with pytest.raises(ValueError, match=rf"^{op}: "):
            fn()


def test_huge_dilation_and_stride_that_take_no_effect_give_the_reference():
    """kernel 1 makes any dilation irrelevant; one output position makes any stride irrelevant."""
    x = make_array(np.random.default_rng(1), (2, 3, 5), "float32")
    for attrs in (dict(kernel_shape=1, dilations=2**62 - 1), dict(kernel_shape=5, strides=2**61),
                  dict(kernel_shape=1, dilations=2**61, strides=2**61)):
        y, i = pooling.max_pool(x, return_indices=True, **attrs)
        want_y, want_i = reference.max_pool(x, return_indices=True, **attrs)
        assert_same(y, want_y)
        assert_same(i, want_i)
    cols = make_any_array(np.random.default_rng(2), (1, 2, 1), "int64")
    got = pooling.col2im(cols, [3], [2], dilations=2, strides=2**61)
    assert_same(got, reference.col2im(cols, (3,), (2,), strides=(2**61,), dilations=(2,)))


@pytest.mark.parametrize("name", ["ceil_mode", "storage_order", "opset"])
@pytest.mark.parametrize("value", [2**62, INT64_MAX, 2**63, 2**64, INT64_MIN, np.int64(INT64_MIN),
                                   np.uint64(2**64 - 1)])
def test_scalar_attributes_at_int64_limits(name, value):
    x = np.zeros((1, 1, 4), np.float32)
    pattern = r"^MaxPool: (ceil_mode|storage_order) must be one of" if name != "opset" else r"^MaxPool: "
    if name == "opset" and value > 0:
        # A huge opset is the newest version: valid.
        assert pooling.max_pool(x, 2, opset=value).shape == (1, 1, 3)
        return
    with pytest.raises(ValueError, match=pattern):
        pooling.max_pool(x, 2, **{name: value})


@pytest.mark.parametrize("value", [-1, -2**63, 2**62, INT64_MAX])
def test_scalar_attributes_of_every_operator_at_int64_limits(value):
    """opset of MaxUnpool and Col2Im: below the first version a ValueError naming it, above the newest."""
    x, i = np.ones((1, 1, 2)), np.zeros((1, 1, 2), np.int64)
    cols = np.ones((1, 1, 4))
    if value < 0:
        with pytest.raises(ValueError, match=r"^MaxUnpool: opset=.* the first valid opset is 9"):
            pooling.max_unpool(x, i, 1, opset=value)
        with pytest.raises(ValueError, match=r"^Col2Im: opset=.* the first valid opset is 18"):
            pooling.col2im(cols, [2, 2], [1, 1], opset=value)
    else:
        assert pooling.max_unpool(x, i, 1, opset=value).shape == (1, 1, 2)
        assert pooling.col2im(cols, [2, 2], [1, 1], opset=value).shape == (1, 1, 2, 2)


@pytest.mark.parametrize("bounds", [(np.inf, np.inf), (-np.inf, -np.inf), (-np.inf, np.inf), (1e300, 1e300),
                                    (-1e300, -1e300), (-1e300, 1e300), (0.5, 0.5), (126.5, 1e300)])
@pytest.mark.parametrize("kind", [kind for kind in POOL_DTYPES if kind != "bool"])  # (bool: no activation)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_clip_bounds_at_the_limits(kind, bounds, layout):
    """Clip bounds of +-inf and past every type's range (SPEC 1.4): integers clamp to [ceil(min),
    floor(max)] limited to the type's range.  Bounds at +-inf were an OverflowError for int8/uint8;
    int64's maximum as the lower bound is no float64 (the kernels' bounds)."""
    x = make_array(np.random.default_rng(3), (1, 2, 5, 4), kind)
    attrs = dict(kernel_shape=2, activation="Clip", activation_params=list(bounds), layout=layout)
    if layout == "NHWC":
        x = to_nhwc(x)
    y = pooling.max_pool(x, **attrs)
    assert_same(y, reference.max_pool(x, return_indices=True, **attrs)[0])
    if kind in INT_KINDS:
        info = np.iinfo(kind)
        lo = math.ceil(min(max(bounds[0], info.min), info.max))
        hi = math.floor(min(max(bounds[1], info.min), info.max))
        assert ((y >= min(lo, hi)) & (y <= hi)).all()


# --- huge and overflowing shapes -------------------------------------------------------------------

@pytest.mark.parametrize("x_shape", [(2**32, 2**32, 2**32), (1, 1, 2**63), (2**62, 1, 1), (1, 2**64, 1),
                                     (2**21, 2**21, 2**21)])
def test_element_counts_past_int64_in_every_shape_twin(x_shape):
    """Shapes whose element count does not fit in int64 (or its 2**62 headroom): ValueError naming the
    operator, before anything is allocated."""
    for op, fn in (("MaxPool", lambda: pooling.max_pool_output_shape(x_shape, 1)),
                   ("MaxUnpool", lambda: pooling.max_unpool_output_shape(x_shape, 1)),
                   ("Col2Im", lambda: pooling.col2im_output_shape(x_shape, [x_shape[2]], [1]))):
        with pytest.raises(ValueError, match=rf"^{op}: .* is past the 2\*\*62 limit"):
            fn()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_zero_stride_inputs_past_the_limit(layout):
    """Real arrays of 2**62 elements (every stride 0, one byte of memory): ValueError, nothing copied."""
    x = huge_view((2**31, 2**31, 1), np.int8)
    with pytest.raises(ValueError, match=r"^MaxPool: input shape .* is past the 2\*\*62 limit"):
        pooling.max_pool(x, 1, layout=layout, return_indices=True)
    with pytest.raises(ValueError, match=r"^MaxUnpool: output shape .* is past the 2\*\*62 limit"):
        pooling.max_unpool(x, huge_view(x.shape, np.int8), 1, layout=layout)
    with pytest.raises(ValueError, match=r"^Col2Im: input shape .* is past the 2\*\*62 limit"):
        pooling.col2im(x, [1], [1])


@pytest.mark.parametrize("call", [
    # Output element counts past int64 from a one-element input.
    lambda: pooling.max_pool(np.ones((1, 1, 1, 1, 1)), 1, pads=(2**21, 2**21, 2**21, 2**21, 2**21, 2**21)),
    lambda: pooling.max_pool(np.ones((1, 1, 1, 1)), 1, pads=(2**31, 2**31, 2**31, 2**31), layout="NHWC"),
    lambda: pooling.max_unpool(np.ones((1, 1, 1, 1)), np.zeros((1, 1, 1, 1), np.int64), 2**32),
    lambda: pooling.max_unpool(np.ones((1, 1, 1, 1)), np.zeros((1, 1, 1, 1), np.int64), 1,
                               output_shape=(1, 1, 2**32, 2**31)),
    lambda: pooling.max_unpool(np.ones((1, 1, 1, 1)), np.zeros((1, 1, 1, 1), np.int64), 2**31, layout="NHWC"),
    lambda: pooling.col2im(np.ones((1, 1, 1)), (2**31, 2**31), (1, 1), strides=2**31),
    # Flat indices past int64: N*C planes of P elements each.
    lambda: pooling.max_pool(huge_view((2**20, 2**20, 2**22), np.int8), 1, return_indices=True),
    lambda: pooling.max_unpool(huge_view((2**20, 2**20, 1), np.float32), huge_view((2**20, 2**20, 1), np.int64), 1,
                               strides=1, output_shape=(2**20, 2**20, 2**22)),
], ids=["maxpool", "maxpool-nhwc", "maxunpool", "maxunpool-output_shape", "maxunpool-nhwc", "col2im",
        "maxpool-indices", "maxunpool-indices"])
def test_outputs_and_flat_indices_past_int64(call):
    with pytest.raises(ValueError, match=r"^(MaxPool|MaxUnpool|Col2Im): .* is past the 2\*\*62 limit"):
        call()


@pytest.mark.parametrize("call", [
    lambda: pooling.max_unpool(np.ones((1, 1, 1)), np.zeros((1, 1, 1), np.int64), 2**62 - 1),
    lambda: pooling.max_unpool(np.ones((1, 1, 1), np.float32), np.zeros((1, 1, 1), np.int64), 1,
                               output_shape=(1, 1, 2**61 + 1)),
    lambda: pooling.max_pool(np.ones((1, 1, 1)), 1, pads=(2**60, 0)),
    lambda: pooling.col2im(np.ones((1, 1, 1), np.complex128), (2**60,), (1,), strides=2**60),
], ids=["maxunpool", "maxunpool-output_shape", "maxpool", "col2im"])
def test_results_with_more_bytes_than_an_address_holds(call):
    """Fewer than 2**62 elements, but more than 2**63 bytes: numpy's own 'array is too big' came
    through without the operator's name; now the message names it."""
    with pytest.raises(ValueError, match=r"^(MaxPool|MaxUnpool|Col2Im): the result of shape .* more bytes"):
        call()


@pytest.mark.parametrize("shape, attrs", [
    ((1, 1, 2**26, 1), dict(kernel_shape=1, strides=(2**26, 1), pads=(0, 0, 0, 2**22 + 1))),
    ((1, 1, 2**26, 1, 1), dict(kernel_shape=(2, 1, 1), strides=(2**26, 1, 1), pads=(0, 0, 0, 0, 0, 2**21))),
], ids=["2d", "3d-depth"])
def test_huge_padding_on_an_inner_axis_of_a_long_input(shape, attrs):
    """A 64 MiB input, a few MiB of result: a staged kernel's intermediate would keep 2**26 rows of
    2**21+ padded columns (2**47 bytes and more, a MemoryError).  The fused kernel needs a few MiB."""
    x = np.broadcast_to(np.int8(5), shape)
    y, i = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
    assert y.shape == i.shape == pooling.max_pool_output_shape(shape, **attrs)
    assert y.reshape(-1)[0] == 5 and i.reshape(-1)[0] == 0
    assert (y.reshape(-1)[1:] == -128).all() and (i.reshape(-1)[1:] == -1).all()  # windows in the padding
    assert_same(pooling.max_pool(x, **attrs), y)


@pytest.mark.parametrize("fn", [pooling.max_pool_output_shape, pooling.max_unpool_output_shape])
@pytest.mark.parametrize("x_shape", [5, None, 2.0])
def test_shape_twins_take_sequences_only(fn, x_shape):
    """A shape that is no sequence: a TypeError naming the operator (was Python's bare 'not iterable')."""
    with pytest.raises(TypeError, match=r"^Max(Pool|Unpool): x_shape must be a sequence of integers"):
        fn(x_shape, 2)
    with pytest.raises(TypeError, match=r"^Col2Im: x_shape must be a sequence of integers"):
        pooling.col2im_output_shape(x_shape, [1], [1])


# --- zero-sized dimensions -------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape, attrs", [
    ((0, 3, 5, 4), dict(kernel_shape=2)),
    ((2, 0, 5, 4), dict(kernel_shape=2, strides=2)),
    ((2, 3, 0, 4), dict(kernel_shape=(1, 2))),                       # O = 0 on the empty axis
    ((2, 3, 0, 4), dict(kernel_shape=2, pads=(1, 0, 1, 0))),         # O = 1: every window empty
    ((2, 3, 4, 0), dict(kernel_shape=3, pads=2, strides=2, ceil_mode=1)),
    ((2, 3, 0, 0), dict(kernel_shape=2, auto_pad="SAME_UPPER")),
    ((1, 2, 0), dict(kernel_shape=2, pads=(3, 3), dilations=2)),
    ((1, 2, 0, 2, 3), dict(kernel_shape=(1, 2, 2), pads=(1, 0, 0, 1, 0, 0))),
    ((1, 2, 0, 3, 4), dict(kernel_shape=(2, 2, 2), pads=(1, 0, 0, 1, 0, 0))),     # the depth-split path
    ((1, 1, 2, 0, 1, 2), dict(kernel_shape=1, pads=(0, 1, 0, 0, 0, 0, 0, 0))),
    ((0, 0, 0, 0), dict(kernel_shape=1)),
], ids=lambda v: str(v))
def test_max_pool_zero_sized_dimensions(shape, attrs, layout):
    """Every zero-sized dimension the shape rules allow: the reference result (empty, or every window
    empty: -inf / the type's minimum and Indices -1), with and without Indices."""
    for kind in ("float32", "int8", "bfloat16"):
        x = make_array(np.random.default_rng(0), shape, kind)
        full = dict(attrs)
        if layout == "NHWC":
            x, full["layout"] = to_nhwc(x), "NHWC"
        want_y, want_i = reference.max_pool(x, return_indices=True, **full)
        y, i = pooling.max_pool(x, return_indices=True, **full)
        assert_same(y, want_y)
        assert_same(i, want_i)
        assert_same(pooling.max_pool(x, **full), want_y)
        assert pooling.max_pool_output_shape(x.shape, **full) == want_y.shape


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape, attrs", [
    ((0, 3, 2, 2), dict(kernel_shape=2, strides=2)),
    ((2, 0, 2, 2), dict(kernel_shape=2)),
    ((2, 3, 0, 2), dict(kernel_shape=2)),                                # inferred 1 x 3, all zeros
    ((2, 3, 0, 2), dict(kernel_shape=2, output_shape="zero")),            # an empty output, empty x
    ((1, 2, 0), dict(kernel_shape=4, strides=2, pads=(1, 0))),
    ((0, 0, 0), dict(kernel_shape=2)),
], ids=lambda v: str(v))
def test_max_unpool_zero_sized_dimensions(shape, attrs, layout):
    x = make_array(np.random.default_rng(0), shape, "float16")
    full = dict(attrs)
    if layout == "NHWC":
        x, full["layout"] = to_nhwc(x), "NHWC"
    if full.get("output_shape") == "zero":
        full["output_shape"] = tuple(0 if i not in (0, 1 if layout == "NCHW" else x.ndim - 1) else d
                                     for i, d in enumerate(x.shape))
    indices = np.zeros(x.shape, np.int64)
    want_shape = unpool_output_shape(x.shape, full)
    y = pooling.max_unpool(x, indices, **full)
    assert y.shape == want_shape == pooling.max_unpool_output_shape(x.shape, **full)
    assert_same(y, reference.max_unpool(x, indices, **full))


def test_max_unpool_nonempty_x_into_an_empty_output():
    """Elements but nowhere to put them: every index is outside [0, 0), a ValueError naming the first."""
    for layout, shape, out in (("NCHW", (1, 2, 3), (1, 2, 0)), ("NHWC", (1, 3, 2), (1, 0, 2))):
        with pytest.raises(ValueError, match=r"^MaxUnpool: indices\[0, 0, 0\] = 0 is outside \[0, 0\)"):
            pooling.max_unpool(np.ones(shape), np.zeros(shape, np.int64), 1, output_shape=out, layout=layout)


@pytest.mark.parametrize("kind", sorted(ALL_DTYPES))
def test_col2im_zero_sized_batch(kind):
    """N = 0 is the only zero Col2Im's shape rules allow (C*K, L and the image are >= 1)."""
    x = make_any_array(np.random.default_rng(0), (0, 8, 4), kind)
    attrs = dict(image_shape=(3, 4), block_shape=(2, 2), pads=(0, 0, 0, 1), strides=(1, 2))
    y = pooling.col2im(x, **attrs)
    assert y.shape == (0, 2, 3, 4) and y.dtype == x.dtype
    assert_same(y, reference.col2im(x, **attrs))


# --- memory: byte-swapped, read-only, negative and zero strides --------------------------------------

def _variants(x):
    """memory_orders (read-only, Fortran, strided, byte-swapped, negative strides, ...) plus
    read-only byte-swapped."""
    yield from memory_orders(x)
    if x.dtype.fields is None and x.dtype.itemsize > 1 and x.dtype.name != "bfloat16":
        swapped = x.astype(x.dtype.newbyteorder("S"))
        swapped.flags.writeable = False
        yield "readonly-byteswapped", swapped


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_memory_variants_of_max_pool_and_max_unpool(kind, layout):
    """Every memory variant of x (and of MaxUnpool's indices, each integer dtype): the reference
    result, the same as for the C-contiguous native array; inputs untouched."""
    rng = np.random.default_rng(7)
    x = make_array(rng, (2, 3, 7, 6), kind)
    attrs = dict(kernel_shape=(3, 2), strides=2, pads=(1, 0, 1, 1), ceil_mode=1)
    if layout == "NHWC":
        x, attrs["layout"] = to_nhwc(x), "NHWC"
    want_y, want_i = reference.max_pool(x, return_indices=True, **attrs)
    assert (want_i >= 0).all()  # no empty window: every index fits an unsigned dtype
    for name, variant in _variants(x):
        before = np.array(variant, copy=True)
        y, i = pooling.max_pool(variant, return_indices=True, **attrs)
        assert_same(y, want_y)
        assert_same(i, want_i)
        assert_same(np.asarray(variant), before)
        # The twin agrees on every variant.
        assert_same(reference.max_pool(variant, return_indices=True, **attrs)[0], want_y)
    unpool = dict(kernel_shape=(3, 2), strides=2, output_shape=x.shape, layout=layout)
    want = reference.max_unpool(want_y, want_i, **unpool)
    for name, variant in _variants(want_y):
        for index_dtype in ("int64", "uint32", "int16"):
            for iname, ivariant in _variants(want_i.astype(index_dtype)):
                got = pooling.max_unpool(variant, ivariant, **unpool)
                assert_same(got, want)
        assert_same(reference.max_unpool(variant, want_i, **unpool), want)


@pytest.mark.parametrize("kind", sorted(ALL_DTYPES))
def test_memory_variants_of_col2im(kind):
    x = make_any_array(np.random.default_rng(8), (2, 6, 12), kind)
    attrs = dict(image_shape=(5, 4), block_shape=(3, 2), strides=(2, 1), pads=(1, 0, 1, 1))
    want = reference.col2im(x, **attrs)
    for name, variant in _variants(x):
        before = np.array(variant, copy=True)
        assert_same_or_nan(pooling.col2im(variant, **attrs), want)
        assert_same(np.asarray(variant), before)
        assert_same_or_nan(reference.col2im(variant, **attrs), want)  # the twin agrees on every variant


class _AlignmentChecked:
    """A kernel (or fused kernel family, or a launch class) that asserts every array it receives is
    aligned; launches it constructs are checked the same way."""

    def __init__(self, kernel, seen):
        self.kernel, self.seen = kernel, seen

    def __getitem__(self, key):
        return _AlignmentChecked(self.kernel[key], self.seen)

    def __call__(self, *args):
        for a in args:
            if isinstance(a, np.ndarray):
                self.seen.append(a.flags.aligned)
                assert a.flags.aligned, f"a kernel received a misaligned {a.dtype} array"
        result = self.kernel(*args)
        return _AlignmentChecked(result, self.seen) if isinstance(self.kernel, type) else result


@pytest.fixture
def alignment_checked(monkeypatch):
    """Every kernel of the build in use wrapped by _AlignmentChecked; yields the list of checks made."""
    from pooling import _maxpool_strategies

    seen = []
    for name in ("MaxPool3d", "MaxPoolNHWC", "max_pool_axis", "max_unpool", "col2im"):
        monkeypatch.setattr(_dispatch.core, name, _AlignmentChecked(getattr(_dispatch.core, name), seen))
    _maxpool_strategies.launch.cache_clear()  # launchers hold the kernels they picked
    yield seen
    monkeypatch.undo()
    _maxpool_strategies.launch.cache_clear()


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16", "float64"])
def test_kernels_only_see_aligned_arrays(kind, alignment_checked):
    """Misaligned inputs (a C-contiguous view one byte off) are copied before a kernel reads them: a
    misaligned load is undefined behaviour in C (UBSan reported it; strict-alignment CPUs fault)."""
    rng = np.random.default_rng(11)
    x = make_array(rng, (2, 3, 8, 7), kind)
    calls = [lambda a: pooling.max_pool(a, 3, strides=2, pads=1, return_indices=True),
             lambda a: pooling.max_pool(a, 2, layout="NHWC", return_indices=True),
             lambda a: pooling.max_pool(a[..., None], (2, 2, 1), return_indices=True),
             lambda a: pooling.max_pool(a[..., None, None], (2, 2, 1, 1)),
             lambda a: pooling.max_unpool(a, np.arange(a.size).reshape(a.shape), 1),
             lambda a: pooling.col2im(a.reshape(2, 12, 14), (4, 8), (2, 2), strides=(2, 1), pads=(0, 0, 1, 0))]
    for call in calls:
        want = call(x)
        got = call(unaligned(x))
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert_same(g, w)
    idx = unaligned(np.arange(x.size, dtype=np.int64).reshape(x.shape))
    assert_same(pooling.max_unpool(x, idx, 1), pooling.max_unpool(x, np.ascontiguousarray(idx), 1))
    assert alignment_checked and all(alignment_checked)


@pytest.mark.parametrize("call", [
    lambda out: pooling.max_pool(np.ones((1, 1, 4), np.float32), 2, out=out),
    lambda out: pooling.max_pool(np.ones((1, 1, 4), np.float32), 2, return_indices=True,
                                 indices_out=unaligned(np.empty((1, 1, 3), np.int64))),
    lambda out: pooling.max_unpool(np.ones((1, 1, 3), np.float32), np.arange(3).reshape(1, 1, 3), 1, out=out),
    lambda out: pooling.col2im(np.ones((1, 1, 3), np.float32), (3,), (1,), out=out),
], ids=["max_pool", "max_pool-indices_out", "max_unpool", "col2im"])
def test_misaligned_out_is_a_value_error(call):
    with pytest.raises(ValueError, match=r"^(MaxPool|MaxUnpool|Col2Im): (indices_)?out must be a writeable, aligned"):
        call(unaligned(np.empty((1, 1, 3), np.float32)))


# Every build of the kernels (baseline, and AVX2 where this CPU has it): the contracts hold for each.
KERNEL_BUILDS = ["pooling._core" if level == "baseline" else f"pooling._core_{level}"
                 for level in _dispatch.available]


def test_attribute_keys_keep_types_apart():
    """Plans are cached by attribute_keys (src/_runtime.pyx, built once): values that compare equal but validate
    differently (2 and 2.0, 1 and True, a str and a str subclass) must get different keys or none
    (None: pooling._attrs.hashable tags them in Python)."""
    _core = importlib.import_module("pooling._runtime")

    class Int(int):
        pass

    class Str(str):
        pass

    simple = (None, 2, 10 ** 30, "NOTSET", True, False, (2, 3), [2, 3], ())
    assert _core.attribute_keys(simple) == (
        None, 2, 10 ** 30, "NOTSET", ("bool", True), ("bool", False), (2, 3), (2, 3), ())
    assert [type(k) for k in _core.attribute_keys((True, 1, [2]))] == [tuple, int, tuple]
    assert _core.attribute_keys(()) == ()
    for other in (2.0, np.int64(2), Int(2), Str("NOTSET"), b"NOTSET", (2.0, 3), (True, 3), (np.int64(2),),
                  [Int(2)], ((2,),), np.array([2, 3]), {2, 3}, {"a": 2}):
        assert _core.attribute_keys((2, other)) is None, other
        assert _core.attribute_keys((other, 2)) is None, other
        if not isinstance(other, (set, dict)):  # (unhashable: a TypeError naming the attribute)
            assert hashable(other)[0] == "tagged"  # the Python keys: unlike any compiled one
    with pytest.raises(TypeError):
        _core.attribute_keys([2, 3])  # the values come as a tuple


@pytest.mark.parametrize("build", KERNEL_BUILDS)
def test_max_unpool_kernel_with_an_empty_output(build):
    """Kernel contract (src/kernels/maxunpool.pxi, max_unpool): elements but an empty output must return 0, the
    first bad index, without undefined behaviour.  The fused path memsets y + b*0 with y NULL:
    memset(NULL, 0, 0) is undefined, and UBSan (tools/sanitize.sh) reports it, so under the
    sanitizer build this subprocess dies.  The Python layer no longer makes this call (it names
    indices[0] itself), so only the kernel is left to fix."""
    code = textwrap.dedent("""
        import numpy as np
        import importlib
        _core = importlib.import_module(BUILD)
        x = np.ones(4, np.uint32)
        for n_threads, fused, zeroed in ((1, True, False), (2, False, False), (1, True, True)):
            r = _core.max_unpool(x, np.zeros(4, np.int64), np.empty(0, np.uint32), 1, fused, zeroed,
                                 n_threads)
            assert r == 0, r
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code.replace("BUILD", repr(build))], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-3000:])


@pytest.mark.parametrize("build", KERNEL_BUILDS)
def test_max_pool_axis_kernel_with_an_empty_input(build):
    """Kernel contract (src/kernels/maxpool_separable.pxi, max_pool_axis): an empty stage input with positions to carry
    gives every window empty (-inf, position -1) without raising.  The kernel takes &pos_in[0, 0, 0]
    of the empty array: harmless in a release build, an IndexError with the bounds checks of
    POOLING_DEBUG=1 (tools/sanitize.sh builds so).  The Python layer no longer passes positions for
    an empty input, so only the kernel is left to fix."""
    _core = importlib.import_module(build)
    x = np.empty((1, 0, 1), np.float32)
    y, pos_out = np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1), np.int64)
    _core.max_pool_axis(x, np.empty((1, 0, 1), np.int64), y, pos_out, 1, 1, 1, 1, 0, 0.0, 0.0, 0, 1)
    assert (y == -np.inf).all() and (pos_out == -1).all()


def test_legacy_bfloat16_byte_swapped():
    """ONNX's legacy structured bfloat16 with a big-endian payload: the same bits as the native one."""
    native = make_array(np.random.default_rng(9), (1, 2, 6, 5), "bfloat16").view(np.uint16).view(LEGACY_BFLOAT16)
    swapped_dtype = np.dtype((np.dtype(">u2"), {"bfloat16": (np.dtype(">u2"), 0)}))
    swapped = native.view(np.uint16).astype(">u2").view(swapped_dtype)
    for fn in (lambda a: pooling.max_pool(a, 2, return_indices=True)[0],
               lambda a: pooling.col2im(a.reshape(1, 4, 15), (4, 6), (2, 2))):
        assert_same(fn(swapped), fn(native))


STRUCTURED_BFLOAT16 = {
    "legacy": LEGACY_BFLOAT16,
    "legacy_big_endian": LEGACY_BFLOAT16.newbyteorder(">"),
    "record": np.dtype([("bfloat16", "<u2")]),
    "record_big_endian": np.dtype([("bfloat16", ">u2")]),
}


@pytest.mark.parametrize("name", list(STRUCTURED_BFLOAT16))
def test_structured_bfloat16_is_read_in_its_fields_byte_order(name):
    """Every operator reads a structured bfloat16 through its field, in the field's byte order, and
    returns the native legacy dtype. (A record with a big-endian field was read as native.)"""
    dtype = STRUCTURED_BFLOAT16[name]
    bits = make_array(np.random.default_rng(11), (1, 2, 6, 8), "bfloat16").view(np.uint16)
    given = bits.astype(dtype.fields["bfloat16"][0]).view(dtype)
    native = bits.view(LEGACY_BFLOAT16)
    for fn in (lambda a: pooling.max_pool(a, 2, strides=2, return_indices=True),
               lambda a: pooling.max_pool(a.reshape(1, 6, 8, 2), 2, layout="NHWC"),
               lambda a: pooling.max_unpool(a[:, :, :3, :4], np.arange(24).reshape(1, 2, 3, 4), 2, strides=2),
               lambda a: pooling.col2im(a.reshape(1, 4, 24), (5, 7), (2, 2))):
        got, want = fn(given), fn(native)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.dtype == w.dtype
            assert_same(g, w)


@pytest.mark.parametrize("dtype", [
    np.dtype([("bfloat16", "<i2")]),                               # a signed field
    np.dtype([("bfloat16", "<f2")]),                               # a float16 field
    np.dtype([("bfloat16", "u1"), ("pad", "u1")]),                 # one byte of two
    np.dtype([("pad", "u1"), ("bfloat16", "u1")]),
    np.dtype((np.int16, {"bfloat16": (np.uint16, 0)})),            # a legacy shape over int16
    np.dtype((np.uint16, {"bfloat16": (np.dtype(">u2"), 0)})),     # a native dtype, a big-endian field
    np.dtype((np.dtype(">u2"), {"bfloat16": (np.uint16, 0)})),     # and the other way round
    np.dtype([("bfloat16", "<u2"), ("other", "<u2")]),             # four bytes
], ids=["signed", "float16", "first_byte", "second_byte", "over_int16", "mixed_order", "mixed_order_2",
        "two_fields"])
def test_structured_bfloat16_lookalikes_are_type_errors(dtype):
    x = np.zeros((1, 1, 4, 4), dtype)
    calls = {"MaxPool": lambda: pooling.max_pool(x, 2),
             "MaxUnpool": lambda: pooling.max_unpool(x, np.zeros(x.shape, np.int64), 2),
             "Col2Im": lambda: pooling.col2im(x.reshape(1, 4, 4), (3, 3), (2, 2))}
    for op, call in calls.items():
        with pytest.raises(TypeError, match=rf"{op}: x has dtype .* not supported"):
            call()


def _object_array(*items):
    a = np.empty(len(items), object)
    a[:] = items
    return a


@pytest.mark.parametrize("value", [_object_array([2], [2]), _object_array({2}, 2), _object_array(2, {"a": 1}),
                                   _object_array(_object_array([2]), 2)],
                         ids=["lists", "set", "dict", "nested"])
def test_object_array_attributes_with_unhashable_items(value):
    """An object array holding lists, sets or dicts: the operator's TypeError naming the parameter,
    from every operator and shape twin (the plan cache raised a bare 'unhashable type')."""
    x4, idx = np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 2, 2), np.int64)
    calls = [
        ("MaxPool", "kernel_shape", lambda: pooling.max_pool(x4, value)),
        ("MaxPool", "strides", lambda: pooling.max_pool(x4, 2, strides=value)),
        ("MaxPool", "kernel_shape", lambda: pooling.max_pool_output_shape((1, 1, 4, 4), value)),
        ("MaxUnpool", "kernel_shape", lambda: pooling.max_unpool(idx.astype(float), idx, value)),
        ("MaxUnpool", "output_shape", lambda: pooling.max_unpool(idx.astype(float), idx, 2, output_shape=value)),
        ("MaxUnpool", "kernel_shape", lambda: pooling.max_unpool_output_shape((1, 1, 2, 2), value)),
        ("Col2Im", "block_shape", lambda: pooling.col2im(np.zeros((1, 4, 9)), (4, 4), value)),
        ("Col2Im", "image_shape", lambda: pooling.col2im(np.zeros((1, 4, 9)), value, (2, 2))),
        ("Col2Im", "block_shape", lambda: pooling.col2im_output_shape((1, 4, 9), (4, 4), value)),
    ]
    for op, name, call in calls:
        with pytest.raises(TypeError, match=rf"^{op}: {name} "):
            call()


def test_object_array_attributes_of_ints_work():
    x = make_array(np.random.default_rng(12), (1, 2, 7, 6), "float32")
    got = pooling.max_pool(x, _object_array(2, 3), strides=_object_array(1, 2), return_indices=True)
    want = pooling.max_pool(x, (2, 3), strides=(1, 2), return_indices=True)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])


@pytest.mark.parametrize("kind", ["float64", "float32", "int8"])
def test_out_and_indices_out_sharing_memory(kind):
    """MaxPool's two results may not overlap each other (nor x): a ValueError before anything is
    written. (An int64 buffer viewed as float64 for out gave index bits for maxima.)"""
    x = make_array(np.random.default_rng(13), (1, 1, 6, 6), kind)
    itemsize = np.dtype(kind).itemsize
    buf = np.zeros(9 + 8, np.int64)  # room for out's bytes after the indices too
    sentinel = buf.copy()
    cases = [
        (buf[:9].view(kind)[:9], buf[:9]),                                  # the same first bytes
        (buf.view(kind)[8 * 9 // itemsize - 9:][:9] if itemsize < 8 else buf[8:17].view(kind), buf[:9]),
    ]
    for out, indices_out in cases:
        with pytest.raises(ValueError, match=r"MaxPool: indices_out must not overlap out"):
            pooling.max_pool(x, 2, strides=2, return_indices=True, out=out.reshape(1, 1, 3, 3),
                             indices_out=indices_out.reshape(1, 1, 3, 3))
        assert (buf == sentinel).all()
    # Apart, they work and equal fresh results.
    out, indices_out = np.empty((1, 1, 3, 3), kind), buf[8:17].reshape(1, 1, 3, 3)
    y, i = pooling.max_pool(x, 2, strides=2, return_indices=True, out=out, indices_out=indices_out)
    want = pooling.max_pool(x, 2, strides=2, return_indices=True)
    assert y is out and i is indices_out
    assert_same(y, want[0])
    assert_same(i, want[1])


def test_every_output_is_checked_against_every_input():
    """The messages name what overlaps: x, MaxUnpool's indices, or the other result."""
    x = np.zeros((1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"MaxPool: out must not overlap the input x"):
        pooling.max_pool(x, 1, out=x)
    with pytest.raises(ValueError, match=r"MaxPool: indices_out must not overlap the input x"):
        pooling.max_pool(x, 1, return_indices=True, indices_out=x.view(np.int64))
    values, idx = np.zeros((1, 1, 2, 2)), np.arange(4, dtype=np.int64).reshape(1, 1, 2, 2)
    with pytest.raises(ValueError, match=r"MaxUnpool: out must not overlap the input x"):
        buf = np.zeros(16)
        buf[:4] = values.ravel()
        pooling.max_unpool(buf[:4].reshape(values.shape), idx, 2, strides=2, out=buf.reshape(1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"MaxUnpool: out must not overlap the input indices"):
        ibuf = np.zeros(16, np.int64)
        ibuf[:4] = idx.ravel()
        pooling.max_unpool(values, ibuf[:4].reshape(idx.shape), 2, strides=2,
                           out=ibuf.view(np.float64).reshape(1, 1, 4, 4))
    cols = np.zeros((1, 1, 16))
    with pytest.raises(ValueError, match=r"Col2Im: out must not overlap the input x"):
        pooling.col2im(cols, [16], [1], out=cols.reshape(1, 1, 16))


@pytest.mark.parametrize("kind", ["float32", "int8", "float16"])
def test_zero_stride_broadcast_inputs(kind):
    """Broadcast arrays (strides 0): read as the values they show.  Broadcast MaxUnpool indices repeat
    one index along an axis, so the last element in row-major order of x must win there."""
    rng = np.random.default_rng(10)
    row = make_array(rng, (1, 1, 1, 9), kind)
    x = np.broadcast_to(row, (2, 3, 8, 9))
    assert 0 in x.strides
    dense = np.ascontiguousarray(x)
    for attrs in (dict(kernel_shape=3, strides=2, pads=1), dict(kernel_shape=(2, 3), layout="NHWC")):
        y, i = pooling.max_pool(x, return_indices=True, **attrs)
        want_y, want_i = reference.max_pool(dense, return_indices=True, **attrs)
        assert_same(y, want_y)
        assert_same(i, want_i)
    # Every element of each plane's row j writes to the same spot: the last row wins.
    values = make_array(rng, (2, 3, 4, 5), kind)
    spots = np.broadcast_to((np.arange(6)[:, None] * 80 + np.arange(5)[None, :]).reshape(2, 3, 1, 5),
                            values.shape)
    y = pooling.max_unpool(values, spots, 2, strides=2)
    assert_same(y, reference.max_unpool(values, np.ascontiguousarray(spots), (2, 2), strides=(2, 2)))
    assert_same(y.reshape(6, 80)[:, :5], values[:, :, -1, :].reshape(6, 5))
    cols = np.broadcast_to(make_any_array(rng, (1, 4, 1), "int32"), (3, 4, 12))
    attrs = dict(image_shape=(4, 5), block_shape=(2, 2), strides=(1, 2), pads=(0, 1, 1, 0))
    assert_same(pooling.col2im(cols, **attrs), reference.col2im(np.ascontiguousarray(cols), **attrs))


# --- MaxUnpool indices at every boundary -----------------------------------------------------------

INDEX_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _boundaries(dtype, size):
    """Index values at every boundary of `dtype` and of an output of `size` elements: (value, valid)."""
    info = np.iinfo(dtype)
    values = {0, size - 1, size, size + 1, info.max, info.min, info.max - 1}
    if info.min < 0:
        values |= {-1, info.min + 1}
    if dtype == "uint64":
        values |= {2**63 - 1, 2**63, 2**63 + 1}
    return sorted((v, 0 <= v < size) for v in values if info.min <= v <= info.max)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_max_unpool_indices_at_every_boundary(dtype, layout):
    """-1, 0, size-1, size, the dtype's extremes (int64: +-2**63, uint64: 2**63 and 2**64-1): valid
    ones give the reference result; every other one a ValueError naming its position and value, and
    nothing written outside out= (which sits inside a sentinel buffer)."""
    x = np.arange(1, 7, dtype=np.float32).reshape((1, 2, 3) if layout == "NCHW" else (1, 3, 2))
    out_shape = (1, 2, 5) if layout == "NCHW" else (1, 5, 2)
    size = 10
    base = np.array([0, 2, 4, 5, 7, 9], dtype).reshape(x.shape)  # plane-local in NCHW, anywhere in NHWC
    for value, valid in _boundaries(dtype, size):
        for at in ((0, 0, 0), (0, 1, 2) if layout == "NCHW" else (0, 2, 1)):
            indices = base.copy()
            indices[at] = value
            buffer = np.full(3 * size, -7, np.float32)
            out = buffer[size:2 * size].reshape(out_shape)
            for n_threads in (1, 2):
                kwargs = dict(kernel_shape=1, output_shape=out_shape, layout=layout, n_threads=n_threads)
                if valid:
                    want = reference.max_unpool(x, indices, **kwargs)
                    assert_same(pooling.max_unpool(x, indices, **kwargs), want)
                    assert_same(pooling.max_unpool(x, indices, out=out, **kwargs), want)
                else:
                    where = ", ".join(map(str, at))
                    with pytest.raises(ValueError, match=rf"^MaxUnpool: indices\[{where}\] = {value} is outside "
                                                         rf"\[0, {size}\)"):
                        pooling.max_unpool(x, indices, out=out, **kwargs)
                assert (buffer[:size] == -7).all() and (buffer[2 * size:] == -7).all()


def test_max_unpool_index_values_past_int64():
    """Python ints past int64 are no integer dtype numpy can hold as one array: a TypeError (object or
    float64 indices), never an OverflowError."""
    x = np.ones((1, 1, 2))
    for values in ([[[0, 2**64]]], [[[0, 2**100]]], [[[0, -2**63 - 1]]]):
        with pytest.raises(TypeError, match=r"^MaxUnpool: indices has dtype"):
            pooling.max_unpool(x, values, 2)


# --- n_threads --------------------------------------------------------------------------------------

def test_huge_n_threads_neither_crashes_nor_overflows():
    """n_threads=10**5 crashed the process (OpenMP ran out of threads: SIGSEGV), and 2**31 was an
    OverflowError in MaxUnpool; results never depend on n_threads.  In a subprocess: the failure
    being tested is a crash."""
    code = textwrap.dedent("""
        import numpy as np, pooling
        x = np.random.default_rng(0).random((1, 2, 200, 200)).astype(np.float32)
        idx = np.arange(x.size, dtype=np.int64).reshape(x.shape)
        cols = np.random.default_rng(1).random((1, 8, 199 * 199)).astype(np.float32)
        want = (pooling.max_pool(x, 2, n_threads=1), pooling.max_unpool(x, idx, 1, n_threads=1),
                pooling.col2im(cols, (200, 200), (2, 2), n_threads=1),
                pooling.max_pool(x[..., None, None], (2, 2, 1, 1), n_threads=1),
                pooling.max_pool(x, 2, layout="NHWC", n_threads=1))
        for nt in (10**5, 2**31, 2**63 - 1, 2**70, np.uint64(2**64 - 1), -2**63, -2**70):
            got = (pooling.max_pool(x, 2, n_threads=nt), pooling.max_unpool(x, idx, 1, n_threads=nt),
                   pooling.col2im(cols, (200, 200), (2, 2), n_threads=nt),
                   pooling.max_pool(x[..., None, None], (2, 2, 1, 1), n_threads=nt),
                   pooling.max_pool(x, 2, layout="NHWC", n_threads=nt))
            assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want)), nt
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])


@pytest.mark.parametrize("build", KERNEL_BUILDS)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool_launch_checks_every_array(build, layout):
    """Kernel contract (src/kernels/maxpool_launch.pxi, _Launch): a launch fixes its shapes when it is made and takes
    raw buffers on each call, so it must itself refuse an array of another size or element size, a
    read-only or non-contiguous output, before a kernel reads or writes past one."""
    _core = importlib.import_module(build)
    taps = np.array([[0, 1], [0, 2], [0, 2], [0, 2], [0, 2]], np.intp)  # 1x4x4 -> 1x2x2, k2 s2
    geometry = ((1, 2, 2), (1, 2, 2), (1, 1, 1), (0, 0, 0), taps)
    def make(n):  # a launch over n planes (NCHW) or n one-channel images (NHWC)
        if layout == "NCHW":
            return _core.MaxPool3d("float", (n, 1, 4, 4), (n, 1, 2, 2), *geometry, 2, 2, False,
                                   0, 0.0, 0.0, 0, 2, 1, (1, 0, 1, 1, 16, 16))  # "onnx" Indices
        return _core.MaxPoolNHWC("float", (n, 1, 4, 4, 1), (n, 1, 2, 2, 1), *geometry, 0, 0.0, 0.0, 0, 2, 1,
                                 (1, 1, 1, 1, 16, 0))

    launch = make(2)  # one channel: NHWC has the same offsets
    make(0)(np.empty(0, np.float32), np.empty(0, np.float32), np.empty(0, np.int64))  # no work items
    x = np.arange(32, dtype=np.float32).reshape(2, 4, 4)
    want = x.reshape(2, 2, 2, 2, 2).max(axis=(2, 4))
    y, indices = np.zeros(8, np.float32), np.zeros(8, np.int64)
    launch(x, y, indices)  # any shape of the right size: the launch knows its own
    assert_same(y.reshape(want.shape), want)
    assert_same(x.reshape(-1)[indices], y)
    bad = [
        (x[:, :3], y, None), (x.astype(np.float64), y, None), (x, y[:7], None),
        (x, np.zeros(4, np.float64), None), (x, y, indices[:7]), (x, y, indices.view(np.int32)),
        (x, np.zeros(16, np.float32)[::2], None), (np.arange(64, dtype=np.float32)[::2], y, None),
        (x, np.zeros(8, np.float32), np.zeros(8, np.int64)[::-1]),
    ]
    read_only = np.zeros(8, np.float32)
    read_only.flags.writeable = False
    bad += [(x, read_only, None), (x, y, np.frombuffer(bytes(64), np.int64))]
    for args in bad:
        before = [None if a is None else a.copy() for a in args]
        with pytest.raises((ValueError, BufferError)):
            launch(*args)
        for a, b in zip(args, before):
            if a is not None:
                assert_same(a, b)
