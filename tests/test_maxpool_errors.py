"""Bad input to MaxPool (SPEC 1.2 and 4): ValueError / TypeError naming the operator and parameter."""
import re

import numpy as np
import pytest

import pooling
from conftest import POOL_DTYPES, for_kind, make_array, memory_orders
from pooling._dtypes import LEGACY_BFLOAT16

X = np.zeros((1, 2, 5, 5), dtype=np.float32)   # 2 spatial axes

# (attributes for X, exception, parameter the message must name, offending value shown in the message)
BAD = [
    # kernel_shape
    (dict(kernel_shape=None), ValueError, "kernel_shape", None),
    (dict(kernel_shape=[]), ValueError, "kernel_shape", None),
    (dict(kernel_shape=(2,)), ValueError, "kernel_shape", None),
    (dict(kernel_shape=(2, 2, 2)), ValueError, "kernel_shape", None),
    (dict(kernel_shape=(0, 2)), ValueError, "kernel_shape", "0"),
    (dict(kernel_shape=(2, -1)), ValueError, "kernel_shape", "-1"),
    (dict(kernel_shape=0), ValueError, "kernel_shape", "0"),
    # strides / dilations
    (dict(kernel_shape=2, strides=(1,)), ValueError, "strides", None),
    (dict(kernel_shape=2, strides=(1, 1, 1)), ValueError, "strides", None),
    (dict(kernel_shape=2, strides=(1, 0)), ValueError, "strides", "0"),
    (dict(kernel_shape=2, strides=-2), ValueError, "strides", "-2"),
    (dict(kernel_shape=2, dilations=(1,)), ValueError, "dilations", None),
    (dict(kernel_shape=2, dilations=(1, 1, 1, 1)), ValueError, "dilations", None),
    (dict(kernel_shape=2, dilations=(0, 1)), ValueError, "dilations", "0"),
    (dict(kernel_shape=2, dilations=-1), ValueError, "dilations", "-1"),
    # pads: length 2n, each >= 0
    (dict(kernel_shape=2, pads=(1, 1)), ValueError, "pads", None),
    (dict(kernel_shape=2, pads=(1, 1, 1)), ValueError, "pads", None),
    (dict(kernel_shape=2, pads=(1,) * 5), ValueError, "pads", None),
    (dict(kernel_shape=2, pads=(0, 0, -1, 0)), ValueError, "pads", "-1"),
    (dict(kernel_shape=2, pads=-1), ValueError, "pads", "-1"),
    # auto_pad: exactly one of four, case-sensitive
    (dict(kernel_shape=2, auto_pad="same_upper"), ValueError, "auto_pad", "same_upper"),
    (dict(kernel_shape=2, auto_pad="Same_Lower"), ValueError, "auto_pad", "Same_Lower"),
    (dict(kernel_shape=2, auto_pad="SAME"), ValueError, "auto_pad", "SAME"),
    (dict(kernel_shape=2, auto_pad="valid"), ValueError, "auto_pad", "valid"),
    (dict(kernel_shape=2, auto_pad=""), ValueError, "auto_pad", None),
    (dict(kernel_shape=2, auto_pad=" VALID"), ValueError, "auto_pad", None),
    # auto_pad with a non-zero pad
    (dict(kernel_shape=2, auto_pad="VALID", pads=(0, 0, 0, 1)), ValueError, "pads", None),
    (dict(kernel_shape=2, auto_pad="SAME_UPPER", pads=(1, 0, 0, 0)), ValueError, "pads", None),
    (dict(kernel_shape=2, auto_pad="SAME_LOWER", pads=1), ValueError, "pads", None),
    # ceil_mode / storage_order in {0, 1}
    (dict(kernel_shape=2, ceil_mode=2), ValueError, "ceil_mode", "2"),
    (dict(kernel_shape=2, ceil_mode=-1), ValueError, "ceil_mode", "-1"),
    (dict(kernel_shape=2, storage_order=2), ValueError, "storage_order", "2"),
    (dict(kernel_shape=2, storage_order=-1), ValueError, "storage_order", "-1"),
    # float (and other non-integer) attributes are wrong types
    (dict(kernel_shape=2.0), TypeError, "kernel_shape", "2.0"),
    (dict(kernel_shape=(2.0, 2.0)), TypeError, "kernel_shape", "2.0"),
    (dict(kernel_shape=(2, 2.5)), TypeError, "kernel_shape", "2.5"),
    (dict(kernel_shape=np.array([2.0, 2.0])), TypeError, "kernel_shape", None),
    (dict(kernel_shape="2"), TypeError, "kernel_shape", None),
    (dict(kernel_shape=(2, None)), TypeError, "kernel_shape", "None"),
    (dict(kernel_shape=2, strides=(1.0, 1)), TypeError, "strides", "1.0"),
    (dict(kernel_shape=2, strides=1.5), TypeError, "strides", "1.5"),
    (dict(kernel_shape=2, dilations=1.0), TypeError, "dilations", "1.0"),
    (dict(kernel_shape=2, pads=(0.0, 0, 0, 0)), TypeError, "pads", "0.0"),
    (dict(kernel_shape=2, pads=np.zeros(4)), TypeError, "pads", None),
    (dict(kernel_shape=2, ceil_mode=1.0), TypeError, "ceil_mode", "1.0"),
    (dict(kernel_shape=2, ceil_mode="1"), TypeError, "ceil_mode", None),
    (dict(kernel_shape=2, storage_order=0.0), TypeError, "storage_order", "0.0"),
    (dict(kernel_shape=2, storage_order=None), TypeError, "storage_order", None),
    # opset
    (dict(kernel_shape=2, opset=0), ValueError, "opset", "0"),
    (dict(kernel_shape=2, opset=-5), ValueError, "opset", "-5"),
    (dict(kernel_shape=2, opset=12.0), TypeError, "opset", None),
    # activation (SPEC 1.4)
    (dict(kernel_shape=2, activation="relu"), ValueError, "activation", "relu"),
    (dict(kernel_shape=2, activation="Sigmoid"), ValueError, "activation", "Sigmoid"),
    (dict(kernel_shape=2, activation="Clip"), ValueError, "activation_params", None),
    (dict(kernel_shape=2, activation="Clip", activation_params=(1.0,)), ValueError,
     "activation_params", None),
    (dict(kernel_shape=2, activation="Clip", activation_params=(0, 1, 2)), ValueError,
     "activation_params", None),
    (dict(kernel_shape=2, activation="Clip", activation_params=(2.0, 1.0)), ValueError,
     "activation_params", None),
    # layout
    (dict(kernel_shape=2, layout="nchw"), ValueError, "layout", "nchw"),
]


def _check_message(exc_info, param, value):
    message = str(exc_info.value)
    assert "MaxPool" in message, message
    assert param in message, message
    if value is not None:
        assert value in message, message


@pytest.mark.parametrize("attrs, exc, param, value", BAD)
def test_bad_attributes(attrs, exc, param, value):
    with pytest.raises(exc) as info:
        pooling.max_pool(X, **attrs)
    _check_message(info, param, value)
    # max_pool_output_shape validates the same way.
    with pytest.raises(exc) as info:
        pooling.max_pool_output_shape(X.shape, **attrs)
    _check_message(info, param, value)


def test_kernel_shape_is_required():
    with pytest.raises(TypeError, match="kernel_shape"):
        pooling.max_pool(X)  # noqa: the missing argument is the point


@pytest.mark.parametrize("attrs", [
    # Unhashable values of the wrong type: still a TypeError naming operator and parameter.
    dict(kernel_shape={2, 3}),
    dict(kernel_shape={"a": 2}),
    dict(kernel_shape=2, auto_pad=["VALID"]),
    dict(kernel_shape=2, layout=["NCHW"]),
    dict(kernel_shape=2, activation=["Relu"]),
    dict(kernel_shape=2, activation="Clip", activation_params={0: 1}),
], ids=["kernel_set", "kernel_dict", "auto_pad_list", "layout_list", "activation_list",
        "activation_params_dict"])
def test_unhashable_wrong_types_name_the_operator(attrs):
    """SPEC 4: wrong types raise TypeError whose message names the operator and the parameter."""
    param = [k for k in attrs if k != "kernel_shape"][-1] if len(attrs) > 1 else "kernel_shape"
    with pytest.raises(TypeError) as info:
        pooling.max_pool(X, **attrs)
    _check_message(info, param, None)


@pytest.mark.parametrize("auto_pad", ["VALID", "SAME_UPPER", "SAME_LOWER", "NOTSET"])
def test_auto_pad_with_all_zero_pads_is_accepted(auto_pad):
    expected = pooling.max_pool(X, 2, auto_pad=auto_pad)
    for pads in ((0, 0, 0, 0), [0, 0, 0, 0], 0, np.zeros(4, dtype=np.int64)):
        assert pooling.max_pool(X, 2, auto_pad=auto_pad, pads=pads).shape == expected.shape


def test_bool_flags_are_accepted():
    rng = np.random.default_rng(0)
    x = make_array(rng, (1, 2, 7, 6), "float32")
    for true, false in ((True, False), (np.True_, np.False_)):
        a = pooling.max_pool(x, 2, strides=2, ceil_mode=true, storage_order=true, return_indices=True)
        b = pooling.max_pool(x, 2, strides=2, ceil_mode=1, storage_order=1, return_indices=True)
        assert a[0].tobytes() == b[0].tobytes() and (a[1] == b[1]).all()
        a = pooling.max_pool(x, 2, strides=2, ceil_mode=false, storage_order=false, return_indices=True)
        b = pooling.max_pool(x, 2, strides=2, return_indices=True)
        assert a[0].tobytes() == b[0].tobytes() and (a[1] == b[1]).all()


def test_pads_not_an_error_when_larger_than_kernel():
    assert pooling.max_pool(X, 1, pads=(3, 3, 4, 4)).shape == (1, 2, 12, 12)
    assert pooling.max_pool(X, 2, pads=(5, 0, 0, 5)).shape == (1, 2, 9, 9)


@pytest.mark.parametrize("shape", [(), (5,), (2, 5), (1, 1)])
def test_rank_below_three(shape):
    with pytest.raises(ValueError, match=r"MaxPool.*(rank|spatial)"):
        pooling.max_pool(np.zeros(shape, np.float32), 1)
    with pytest.raises(ValueError, match=r"MaxPool.*(rank|spatial)"):
        pooling.max_pool_output_shape(shape, 1)


@pytest.mark.parametrize("dtype", [
    np.complex64, np.complex128, np.longdouble, np.clongdouble, object, "U3",
    "S3", "datetime64[s]", "timedelta64[s]", "V4", [("a", np.int32)],
])
def test_unsupported_dtypes(dtype):
    x = np.zeros((1, 1, 4), dtype=dtype)
    with pytest.raises(TypeError) as info:
        pooling.max_pool(x, 2)
    message = str(info.value)
    assert "MaxPool" in message and str(np.dtype(dtype)) in message, message


def test_unsupported_python_objects():
    with pytest.raises(TypeError, match="MaxPool"):
        pooling.max_pool([[["a", "b", "c"]]], 2)
    with pytest.raises(TypeError, match="MaxPool"):
        pooling.max_pool([[[1 + 2j, 3j]]], 1)
    with pytest.raises(TypeError, match="MaxPool"):
        pooling.max_pool([[[None, 1]]], 1)


@pytest.mark.parametrize("value, shown", [
    (None, "None (NoneType)"), ("abc", "'abc' (str)"), (b"abc", "b'abc' (bytes)"), (2.5, "2.5 (float)"),
    (np.float32(1), "(float32)"), (pooling, "(module)"),
])
def test_x_that_numpy_makes_a_0d_array_of(value, shown):
    """x=None, a string or a scalar: a TypeError naming operator, x and the value, not a rank error."""
    with pytest.raises(TypeError) as info:
        pooling.max_pool(value, 2)
    message = str(info.value)
    assert message.startswith("MaxPool: x must be an array of numbers, got ") and message.endswith(shown), message


@pytest.mark.parametrize("value, dtype", [
    ([[[None, 1.0]]], "object"), ([1.0, "a"], "<U32"), ([[[{}, 1]]], "object"), ([None, None], "object"),
    ([[[np.datetime64(1, "s")]]], "datetime64[s]"),
])
def test_x_that_numpy_makes_a_non_numeric_array_of(value, dtype):
    """Whatever its rank: a TypeError naming operator, x, the dtype numpy gives it and the value."""
    with pytest.raises(TypeError, match=rf"^MaxPool: x has dtype {re.escape(dtype)}: it must be an array of "
                                        rf"numbers, got \[.* \(list\)$"):
        pooling.max_pool(value, 1)


def test_x_of_nested_sequences_of_different_lengths():
    with pytest.raises(TypeError, match=r"^MaxPool: x must be an array of numbers, got \[\[\[1.0, 2.0\], "
                                        r"\[3.0\]\]\] \(list\): .*inhomogeneous"):
        pooling.max_pool([[[1.0, 2.0], [3.0]]], 1)


def test_arrays_and_array_likes_of_numbers_still_work():
    """The check is for what is not an array of numbers: ndarrays take the fast path, lists and
    other array-likes of numbers convert, and a 0-d ndarray is still a rank error (ValueError)."""
    class Subclass(np.ndarray):
        pass

    for x in ([[[1.0, 3.0, 2.0]]], (((1.0, 3.0, 2.0),),), np.ma.masked_array([[[1.0, 3.0, 2.0]]]),
              np.array([[[1.0, 3.0, 2.0]]]).view(Subclass)):
        assert pooling.max_pool(x, 2).tolist() == [[[3.0, 3.0]]]
    with pytest.raises(ValueError, match=r"^MaxPool: x must have rank >= 3"):
        pooling.max_pool(np.zeros((), np.float32), 1)


@pytest.mark.parametrize("kind, opset, first", [
    ("bfloat16", 12, 22), ("bfloat16", 21, 22), ("bfloat16", 1, 22),
    ("int8", 11, 12), ("uint8", 8, 12), ("int8", 1, 12),
])
def test_dtype_error_names_the_opset_that_allows_it(kind, opset, first):
    """A dtype a later version allows: the TypeError says which opset (and library mode) does."""
    x = make_array(np.random.default_rng(0), (1, 1, 4, 4), kind)
    for data in (x, x.view(np.uint16).view(LEGACY_BFLOAT16)) if kind == "bfloat16" else (x,):
        with pytest.raises(TypeError) as info:
            pooling.max_pool(data, 2, opset=opset)
        message = str(info.value)
        assert message.startswith(f"MaxPool: x has dtype {data.dtype}, which is not supported"), message
        assert message.endswith(f"; {kind} needs opset >= {first} (or library mode, opset=None)"), message
        assert pooling.max_pool(data, 2, opset=first).dtype == data.dtype   # ... and it does
        assert pooling.max_pool(data, 2).dtype == data.dtype


@pytest.mark.parametrize("opset", [None, 22])
def test_dtype_no_mode_allows_gets_no_hint(opset):
    with pytest.raises(TypeError) as info:
        pooling.max_pool(np.zeros((1, 1, 4), np.complex64), 2, opset=opset)
    supported = "float16, float32, float64, int8, uint8, bfloat16"
    if opset is None:
        supported += ", int16, uint16, int32, uint32, int64, uint64, bool"
    assert str(info.value).endswith("supported: " + supported), info.value


@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.bool_])
@pytest.mark.parametrize("opset", [1, 12, 22])
def test_library_dtypes_under_an_opset_say_where_they_are_allowed(dtype, opset):
    """The other integers and bool are a library-mode extension: under any opset a TypeError that
    names the dtype and says so."""
    name = np.dtype(dtype).name
    with pytest.raises(TypeError, match=f"MaxPool: x has dtype {name}.*{name} is allowed in library mode only"):
        pooling.max_pool(np.zeros((1, 1, 4), dtype), 2, opset=opset)


@pytest.mark.parametrize("n_threads, exc", [
    (0, ValueError), (1.0, TypeError), (2.5, TypeError), ("2", TypeError), ([2], TypeError),
])
def test_bad_n_threads(n_threads, exc):
    with pytest.raises(exc, match="MaxPool.*n_threads"):
        pooling.max_pool(X, 2, n_threads=n_threads)


# --- out= and indices_out= ----------------------------------------------------------------------

def test_out_and_indices_out_are_filled_and_returned():
    rng = np.random.default_rng(1)
    x = make_array(rng, (2, 3, 8, 7), "float32")
    expected_y, expected_i = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True)
    out = np.full(expected_y.shape, 99, np.float32)
    ind = np.full(expected_i.shape, 99, np.int64)
    y, i = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True, out=out, indices_out=ind)
    assert y is out and i is ind
    assert out.tobytes() == expected_y.tobytes() and (ind == expected_i).all()
    out2 = np.empty_like(expected_y)
    assert pooling.max_pool(x, 3, strides=2, pads=1, out=out2) is out2
    assert out2.tobytes() == expected_y.tobytes()


@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_out_with_every_dtype(kind):
    x = make_array(np.random.default_rng(2), (1, 2, 6, 6), kind)
    expected = pooling.max_pool(x, 2)
    out = np.empty(expected.shape, dtype=expected.dtype)
    assert pooling.max_pool(x, 2, out=out) is out
    assert out.tobytes() == expected.tobytes()


def _bad_outs():
    shape = (1, 2, 4, 4)          # max_pool(X, 2)
    big = np.zeros((1, 2, 4, 8), np.float32)
    readonly = np.zeros(shape, np.float32)
    readonly.flags.writeable = False
    return [
        ("shape", np.zeros((1, 2, 4, 5), np.float32)),
        ("ndim", np.zeros((2, 4, 4), np.float32)),
        ("dtype", np.zeros(shape, np.float64)),
        ("dtype_byteswapped", np.zeros(shape, np.dtype(np.float32).newbyteorder("S"))),
        ("noncontiguous", big[..., ::2]),
        ("fortran", np.asfortranarray(np.zeros(shape, np.float32).transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)),
        ("readonly", readonly),
        ("list", np.zeros(shape, np.float32).tolist()),
    ]


@pytest.mark.parametrize("name, out", _bad_outs(), ids=[n for n, _ in _bad_outs()])
def test_bad_out(name, out):
    error = ValueError if isinstance(out, np.ndarray) else TypeError  # a non-array is the wrong type
    with pytest.raises(error, match="MaxPool.*out"):
        pooling.max_pool(X, 2, out=out)


@pytest.mark.parametrize("bad", ["shape", "dtype", "noncontiguous", "without_return_indices"])
def test_bad_indices_out(bad):
    shape = (1, 2, 4, 4)
    ind = {
        "shape": np.zeros((1, 2, 4, 3), np.int64),
        "dtype": np.zeros(shape, np.int32),
        "noncontiguous": np.zeros((1, 2, 4, 8), np.int64)[..., ::2],
        "without_return_indices": np.zeros(shape, np.int64),
    }[bad]
    with pytest.raises(ValueError, match="MaxPool.*indices_out"):
        pooling.max_pool(X, 2, return_indices=bad != "without_return_indices", indices_out=ind)


def test_out_overlapping_the_input():
    buf = np.arange(2 * 2 * 5 * 5, dtype=np.float32).reshape(2, 2, 5, 5)
    x = buf.copy()
    with pytest.raises(ValueError, match="MaxPool.*out"):
        pooling.max_pool(x, 1, out=x)                   # kernel 1: same shape, same memory
    assert (x == buf).all()
    # out is a view into the memory x is a view of.
    base = np.zeros(200, np.float32)
    xv = base[:50].reshape(1, 2, 5, 5)
    xv[...] = buf[:1]
    with pytest.raises(ValueError, match="MaxPool.*out"):
        pooling.max_pool(xv, 2, out=base[:32].reshape(1, 2, 4, 4))
    with pytest.raises(ValueError, match="MaxPool.*out"):
        pooling.max_pool(xv, 2, out=base[40:72].reshape(1, 2, 4, 4))   # partial overlap
    assert (xv == buf[:1]).all()
    # indices_out overlapping x (an int64 view of float64 input memory).
    x64 = np.zeros((1, 2, 5, 5), np.float64)
    with pytest.raises(ValueError, match="MaxPool.*indices_out"):
        pooling.max_pool(x64, 1, return_indices=True, indices_out=x64.view(np.int64))


def test_bad_out_writes_nothing():
    """A rejected call leaves a valid indices_out untouched (validation before work)."""
    ind = np.full((1, 2, 4, 4), 7, np.int64)
    with pytest.raises(ValueError):
        pooling.max_pool(X, 2, return_indices=True, out=np.zeros((1, 2, 4, 4), np.float64),
                         indices_out=ind)
    assert (ind == 7).all()


# --- huge shapes -------------------------------------------------------------------------------

def _broadcast(shape, dtype=np.int8):
    """A read-only array of `shape` that takes one element of memory."""
    return np.broadcast_to(np.zeros((), dtype), shape)


@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=1, pads=(2**62, 0)),
    dict(kernel_shape=1, pads=(2**61, 2**61)),         # output 4 + 2**62 elements
    dict(kernel_shape=1, pads=(2**63, 0)),             # does not fit in int64
    dict(kernel_shape=1, pads=(2**64 + 1, 0)),
    dict(kernel_shape=2**63, pads=(2**63, 0)),
    dict(kernel_shape=2**62 + 3, pads=(2**62, 2**62)),
])
def test_huge_pads_raise_value_error_before_allocating(attrs):
    x = np.zeros((1, 1, 4), np.float32)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool(x, **attrs)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool(x, return_indices=True, **attrs)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape(x.shape, **attrs)


@pytest.mark.parametrize("name, value", [
    ("strides", 2**62 - 1), ("strides", 2**62), ("strides", 2**63), ("strides", 2**64 + 5),
    ("dilations", 2**62), ("dilations", 2**63), ("dilations", 2**64),
])
def test_huge_strides_and_dilations(name, value):
    """kernel 1: the value never moves a tap past x[0]; either a clean ValueError or the exact result."""
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    try:
        y, ind = pooling.max_pool(x, 1, return_indices=True, **{name: value})
    except ValueError as exc:
        assert "MaxPool" in str(exc) and name in str(exc), str(exc)
        return
    if name == "strides":
        assert y.tolist() == [[[0.0], [4.0]]] and ind.tolist() == [[[0], [4]]]
    else:
        assert y.tobytes() == x.tobytes() and (ind.ravel() == np.arange(8)).all()


def test_huge_output_count_raises_before_allocating():
    """Output element count past int64: ValueError naming MaxPool (not numpy's, not MemoryError)."""
    x = _broadcast((2**20, 2**20, 2**21))               # 2**61 elements, one of memory
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool(x, 1, pads=(2**22, 2**22))     # 2**40 * (2**21 + 2**23) > 2**63
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool(x, 1, pads=(2**22, 2**22), return_indices=True)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape((2**32, 2**32, 2**32), 1)   # input count 2**96
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape((2**21, 2**21, 2**21, 2**21), 1)
    with pytest.raises(ValueError, match="MaxPool"):
        pooling.max_pool_output_shape((1, 1, 2**40, 2**40), 1, pads=(2**22, 2**22, 2**22, 2**22))


# --- inputs never modified ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(POOL_DTYPES))
def test_inputs_never_modified(kind):
    rng = np.random.default_rng(5)
    x = make_array(rng, (2, 3, 9, 8), kind)
    calls = [
        dict(kernel_shape=3, strides=2, pads=1, return_indices=True),
        dict(kernel_shape=(2, 3), dilations=2, ceil_mode=1, storage_order=1, return_indices=True),
        dict(kernel_shape=2, activation="Relu"),
        dict(kernel_shape=2, activation="Clip", activation_params=(-1, 1)),
        dict(kernel_shape=(2, 2, 2, 2, 2, 2, 2)[:2], auto_pad="SAME_LOWER", n_threads=2),
    ]
    calls = [for_kind(attrs, kind) for attrs in calls]
    for name, xm in memory_orders(x):
        before = np.array(xm, copy=True)
        for attrs in calls:
            pooling.max_pool(xm, **attrs)
        after = np.asarray(xm)
        assert after.tobytes() == before.tobytes(), name
    # The attribute sequences the caller passes are not modified either.
    pads = [1, 1, 1, 1]
    kernel = np.array([3, 3])
    pooling.max_pool(x, kernel, pads=pads, strides=[2, 2])
    assert pads == [1, 1, 1, 1] and kernel.tolist() == [3, 3]


def test_error_messages_name_the_value_for_dtype_and_shape():
    with pytest.raises(TypeError, match=re.escape("complex64")):
        pooling.max_pool(np.zeros((1, 1, 4), np.complex64), 2)
    with pytest.raises(ValueError, match=r"MaxPool.*got shape \[5\]"):
        pooling.max_pool(np.zeros(5, np.float32), 2)


@pytest.mark.parametrize("good, bad, param", [
    (dict(kernel_shape=2), dict(kernel_shape=2.0), "kernel_shape"),
    (dict(kernel_shape=2), dict(kernel_shape=np.float64(2)), "kernel_shape"),
    (dict(kernel_shape=(2, 2)), dict(kernel_shape=(2.0, 2)), "kernel_shape"),
    (dict(kernel_shape=2, strides=(1, 2)), dict(kernel_shape=2, strides=(1.0, 2)), "strides"),
    (dict(kernel_shape=2, dilations=[1, 1]), dict(kernel_shape=2, dilations=[1.0, 1.0]), "dilations"),
    (dict(kernel_shape=2, pads=[1, 1, 1, 1]), dict(kernel_shape=2, pads=[1.0, 1, 1, 1]), "pads"),
    (dict(kernel_shape=2, ceil_mode=1), dict(kernel_shape=2, ceil_mode=1.0), "ceil_mode"),
    (dict(kernel_shape=2, storage_order=0), dict(kernel_shape=2, storage_order=0.0), "storage_order"),
    (dict(kernel_shape=2, opset=12), dict(kernel_shape=2, opset=12.0), "opset"),
], ids=["kernel", "kernel_np", "kernel_seq", "strides", "dilations", "pads", "ceil_mode",
        "storage_order", "opset"])
def test_validation_does_not_depend_on_earlier_calls(good, bad, param):
    """A float attribute is a TypeError even right after a valid call with the equal int values."""
    x = np.zeros((1, 3, 6, 7), dtype=np.float32)
    pooling.max_pool(x, **good)                       # valid; may be remembered
    with pytest.raises(TypeError) as info:
        pooling.max_pool(x, **bad)
    _check_message(info, param, None)
    pooling.max_pool_output_shape(x.shape, **good)
    with pytest.raises(TypeError) as info:
        pooling.max_pool_output_shape(x.shape, **bad)
    _check_message(info, param, None)
