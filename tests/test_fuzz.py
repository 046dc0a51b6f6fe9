"""Fuzzing every operator with hypothesis (SPEC 1-4): no input gives anything but the answer or the error.

Each example draws a shape, a dtype, a memory order, a thread count and attributes for MaxPool (NCHW and
NHWC), MaxUnpool (NCHW and NHWC) or Col2Im, and then maybe breaks one rule of SPEC ("a fault": a value
below its minimum or past int64, a wrong length or type, a bad dtype, rank, index, out= ...).  The
example is then either valid, and the result must equal the pure-numpy reference bit for bit (Col2Im:
any NaN equals any NaN, as in test_col2im.py), or invalid, and the call must raise the documented
ValueError / TypeError naming the operator.  Any other exception, or a crash, fails.  The shape-only
twin (``*_output_shape``) must agree with the call.

The default run is bounded (~100 examples per operator); ``POOLING_FUZZ_EXAMPLES=N`` or ``--slow``
multiplies the examples for a long campaign (see conftest.fuzz_settings).
"""
import math

import numpy as np
import pytest

import pooling
from conftest import (ALL_DTYPES, POOL_DTYPES, assert_same, assert_same_or_nan, full_attr, fuzz_settings,
                      make_any_array, make_array, memory_orders, to_dtype, unaligned, unpool_output_shape)
from pooling import reference

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import event, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# Values every integer attribute must reject: past the library's 2**62 limit, past int64, past uint64.
HUGE = (2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**100)
# Elements that are not integers (bool is not one either, SPEC 1.2 accepts it for the flags only).
NOT_INTS = (1.0, 2.5, True, np.bool_(False), "2", None, 1j, np.float32(2), b"1")
# Whole attributes of a type no integer sequence has.
NOT_SEQUENCES = (2.5, "abc", {1: 2}, {1, 2}, b"ab", np.ones((1, 2), np.int64), np.array([1.0, 2.0]))
ORDERS = ("C", "readonly", "fortran", "strided", "byteswapped", "reversed", "unaligned", "list")


def memory_order(x, name):
    """x's values laid out as memory_orders' `name` (C where that order does not apply to x; a
    nested list cannot hold the shape of an empty array)."""
    if np.ndim(x) == 0 or (name == "list" and np.size(x) == 0):
        return x
    return dict(memory_orders(x)).get(name, x)


@st.composite
def int_attr(draw, values, scalar_ok=True):
    """`values` in one of the forms every sequence attribute accepts (API.md)."""
    forms = ["tuple", "list", "int64", "int32"]
    if scalar_ok and len(set(values)) == 1:
        forms.append("scalar")
    form = draw(st.sampled_from(forms))
    if form == "scalar":
        return draw(st.sampled_from([values[0], np.int64(values[0]), np.uint8(values[0])]))
    if form in ("int64", "int32"):
        return np.array(values, dtype=form)
    return tuple(values) if form == "tuple" else list(values)


@st.composite
def broken_int_attr(draw, values, minimum, scalar_ok=True):
    """(value, error): `values` with one rule of an integer sequence attribute broken."""
    values = list(values)
    how = draw(st.sampled_from(["small", "huge", "length", "element", "container"]))
    at = draw(st.integers(0, max(len(values) - 1, 0)))
    if how in ("small", "huge"):
        bad = draw(st.sampled_from((minimum - 1, -1, -2**63) if how == "small" else HUGE))
        if scalar_ok and draw(st.booleans()):
            return bad, ValueError
        values[at] = bad
        if how == "huge" and bad < 2**64 and draw(st.booleans()):
            return np.array(values, dtype=np.uint64), ValueError
        return values, ValueError
    if how == "length":
        length = draw(st.sampled_from(sorted({0, len(values) - 1, len(values) + 1} - {len(values)})))
        return [max(minimum, 1)] * length, ValueError
    if how == "element":
        values[at] = draw(st.sampled_from(NOT_INTS))
        return values, TypeError
    return draw(st.sampled_from(NOT_SEQUENCES)), TypeError


def maybe_attrs(draw, attrs, **values):
    """Each of `values` into `attrs` (in a drawn form) or left out for its default, as drawn."""
    for name, value in values.items():
        if draw(st.booleans()):
            attrs[name] = draw(int_attr(value))


def break_sequence(draw, attrs, name, n, scalar_ok=True):
    """(name, error) after breaking one rule of the integer sequence attribute `name` of n spatial
    axes (pads: 2n values >= 0; the others n values >= 1)."""
    length, minimum = (2 * n, 0) if name == "pads" else (n, 1)
    attrs[name], error = draw(broken_int_attr([minimum] * length, minimum, scalar_ok))
    return name, error


def dims(draw, n, lo, hi):
    """n values in [lo, hi]; a lower bound of 0 draws 0 one time in eight (empty arrays stay the exception)."""
    if lo == 0:
        return tuple(0 if draw(st.integers(0, 7)) == 0 else draw(st.integers(1, hi)) for _ in range(n))
    return tuple(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)))


def outcome(fn):
    """(result, None) or (None, the ValueError / TypeError it raised); anything else propagates."""
    try:
        return fn(), None
    except (ValueError, TypeError) as exc:
        return None, exc


def check_error(op, error, expected):
    """The call failed: with one of the expected errors, and its message names the operator."""
    event(f"raised {type(error).__name__}" + ("" if len(expected) > 1 or ValueError not in expected
                                               else " (expected only ValueError)"))
    assert expected, f"a valid call raised {error!r}"
    assert isinstance(error, tuple(expected)), f"expected {expected}, got {error!r}"
    assert op in str(error), f"the message does not name {op}: {error}"


def settled(op, call, result, error, expected, shape_fn, extra, main=None):
    """The common end of every fuzz test: True when `result` is to be compared with the reference.

    An error must be one of `expected` and name `op`; a result must be expected; the shape twin
    must agree either way; an out= buffer must be what came back.  `main`: the result's main
    array (default: the result)."""
    main = result if main is None else main
    check_shape_twin(op, shape_fn, None if result is None else np.shape(main), error)
    if error is not None:
        check_error(op, error, expected)
        return False
    assert not expected, f"{call['fault']}: expected {expected}, got a result"
    event("compared with the reference" + (" (empty)" if not np.size(main) else ""))
    if "out" in extra:
        assert main is extra["out"]
    return True


def check_shape_twin(op, shape_fn, result_shape, error):
    """The shape-only twin raises only when the call did, with the same type, else gives its shape."""
    shape, shape_error = outcome(shape_fn)
    if shape_error is not None:
        assert error is not None and type(shape_error) is type(error), (shape_error, error)
        assert op in str(shape_error)
    elif error is None:
        assert shape == result_shape


# --- MaxPool ---------------------------------------------------------------------------------------

MAX_POOL_FAULTS = ("kernel_shape", "strides", "dilations", "pads", "kernel_missing", "auto_pad",
                   "auto_pad_with_pads", "ceil_mode", "storage_order", "layout", "activation",
                   "clip_params", "dtype", "rank", "n_threads", "out", "indices_out")


@st.composite
def max_pool_calls(draw):
    n = draw(st.sampled_from([1, 1, 2, 2, 2, 3, 4]))
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    spatial = dims(draw, n, 0, 8 if n < 3 else 4)
    lead = dims(draw, 1, 0, 2) + dims(draw, 1, 0, 3)
    kernel = dims(draw, n, 1, 4 if n < 3 else 3)
    strides, dilations, pads = dims(draw, n, 1, 3), dims(draw, n, 1, 3), dims(draw, 2 * n, 0, 4)
    attrs = dict(kernel_shape=draw(int_attr(kernel)))
    maybe_attrs(draw, attrs, strides=strides, dilations=dilations)
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    if auto_pad != "NOTSET":
        attrs["auto_pad"] = auto_pad
        if draw(st.booleans()):
            attrs["pads"] = [0] * (2 * n)  # all-zero pads are accepted and mean nothing
    elif draw(st.booleans()):
        attrs["pads"] = draw(int_attr(pads))
    if draw(st.booleans()):
        attrs["ceil_mode"] = draw(st.sampled_from([0, 1, False, True, np.int64(1)]))
    if layout == "NHWC":
        attrs["layout"] = "NHWC"
    elif draw(st.booleans()):
        attrs["storage_order"] = draw(st.sampled_from([0, 1]))
    activation = draw(st.sampled_from([None, None, "Relu", "Clip"]))
    if activation == "Clip":
        lo = draw(st.sampled_from([-np.inf, -300.0, -2.5, 0.0, 1.5]))
        hi = draw(st.sampled_from([lo, lo + 1.0, 3.5, 300.0, np.inf]))
        attrs.update(activation="Clip", activation_params=[lo, max(lo, hi)])
    elif activation:
        attrs["activation"] = activation
    kind = draw(st.sampled_from(list(POOL_DTYPES)))
    if kind == "bool":  # (no activation is defined for bool: a test of its own, test_maxpool_hand.py)
        attrs.pop("activation", None)
        attrs.pop("activation_params", None)
    call = dict(shape=lead + spatial if layout == "NCHW" else lead[:1] + spatial + lead[1:],
                attrs=attrs, kind=kind, order=draw(st.sampled_from(ORDERS)),
                return_indices=draw(st.booleans()), n_threads=draw(st.sampled_from([None, 1, 2])),
                use_out=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)), fault=None)
    if draw(st.integers(0, 9)) < 3:
        call["fault"], call["error"] = draw(max_pool_fault(call, n))
    return call


@st.composite
def max_pool_fault(draw, call, n):
    """(fault name, error) after breaking one MaxPool rule in `call`."""
    attrs = call["attrs"]
    name = draw(st.sampled_from(MAX_POOL_FAULTS))
    if name in ("kernel_shape", "strides", "dilations", "pads"):
        return break_sequence(draw, attrs, name, n)
    if name == "kernel_missing":
        attrs["kernel_shape"] = None
        return name, ValueError
    if name == "auto_pad":
        attrs["auto_pad"] = draw(st.sampled_from(["same_upper", "SAME", "", "NOTSET ", 3, None, b"VALID"]))
        return name, ValueError if isinstance(attrs["auto_pad"], str) else TypeError
    if name == "auto_pad_with_pads":
        attrs["auto_pad"] = draw(st.sampled_from(["VALID", "SAME_UPPER", "SAME_LOWER"]))
        attrs["pads"] = [0] * (2 * n - 1) + [1]
        return name, ValueError
    if name in ("ceil_mode", "storage_order"):
        nhwc_order = name == "storage_order" and attrs.get("layout") == "NHWC"
        attrs[name] = draw(st.sampled_from([2, -1, 2**63 - 1, -2**63, 1.0, "1", None] + [1] * nhwc_order))
        return name, ValueError if isinstance(attrs[name], int) else TypeError
    if name == "layout":
        attrs["layout"] = draw(st.sampled_from(["nchw", "NCDHW", "", 0, None]))
        attrs.pop("storage_order", None)
        return name, ValueError if isinstance(attrs["layout"], str) else TypeError
    if name == "activation":
        attrs["activation"] = draw(st.sampled_from(["relu", "Sigmoid", "", 1, b"Relu"]))
        return name, ValueError if isinstance(attrs["activation"], str) else TypeError
    if name == "clip_params":
        attrs["activation"] = "Clip"
        attrs["activation_params"] = draw(st.sampled_from([None, [], [1.0], [2.0, 1.0], [np.nan, 1.0],
                                                           [0.0, 1.0, 2.0], ["a", 1.0]]))
        return name, TypeError if attrs["activation_params"] == ["a", 1.0] else ValueError
    if name == "dtype":
        call["kind"] = draw(st.sampled_from(["complex64", "complex128", "clongdouble", "object"]))
        return name, TypeError
    if name == "rank":
        call["shape"] = call["shape"][:draw(st.integers(1, 2))]
        return name, ValueError
    if name == "n_threads":
        call["n_threads"] = draw(st.sampled_from([0, 1.5, "2", True]))
        return name, ValueError if type(call["n_threads"]) is int else TypeError
    if name == "out":
        call["use_out"] = draw(st.sampled_from(["shape", "dtype", "strided", "readonly", "unaligned", "list"]))
        return name, TypeError if call["use_out"] == "list" else ValueError  # a non-array: the wrong type
    call["return_indices"], call["use_out"] = False, "indices_out"
    return name, ValueError


def max_pool_data(call):
    shape, kind = call["shape"], call["kind"]
    rng = np.random.default_rng(call["seed"])
    if kind in POOL_DTYPES:
        x = make_array(rng, shape, kind)
    else:
        x = (np.arange(math.prod(shape)) % 7).astype(kind).reshape(shape)
    return memory_order(x, call["order"])


def max_pool_expected_errors(call):
    """The errors SPEC allows for `call`: its fault's, and ValueError if the output would be negative."""
    expected = {call["error"]} if call["fault"] else set()
    shape, attrs = call["shape"], call["attrs"]
    if call["fault"] in ("kernel_shape", "strides", "dilations", "pads", "kernel_missing", "auto_pad",
                         "auto_pad_with_pads", "ceil_mode", "rank", "layout"):
        return expected
    # The twin's SPEC 1.3 formulas, given only the attributes that shape the output: its own
    # ValueError (raised before any shared validation) is a negative output dimension.
    geometry = {k: v for k, v in attrs.items()
                if k in ("kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "layout")}
    try:
        reference.max_pool_output_shape(shape, **geometry)
    except ValueError as error:
        assert "(twin, behaviour.md §2.3)" in str(error), error
        expected.add(ValueError)
    return expected


def bad_out(how, shape, dtype):
    """An out= buffer that breaks the one rule `how` names (API.md: exactly the result's shape and dtype,
    writeable, aligned and C-contiguous)."""
    if how == "dtype":
        return np.empty(shape, np.int32 if dtype == np.int16 else np.int16)
    if how == "strided" and math.prod(shape) > 1:  # one element or none is contiguous however strided
        return np.empty(tuple(shape) + (2,), dtype)[..., 0]
    if how == "unaligned" and np.dtype(dtype).itemsize > 1 and math.prod(shape):
        return unaligned(np.empty(shape, dtype))
    if how in ("shape", "strided", "unaligned"):
        return np.empty(tuple(shape) + (1,), dtype)
    if how == "readonly":
        out = np.empty(shape, dtype)
        out.flags.writeable = False
        return out
    return np.empty(shape, dtype).tolist()


@fuzz_settings(150)
@given(max_pool_calls())
def test_max_pool(call):
    x = max_pool_data(call)
    attrs, expected_errors = call["attrs"], max_pool_expected_errors(call)
    dtype = np.asarray(x).dtype.newbyteorder("=")
    extra = {}
    if call["use_out"]:
        shape, _ = outcome(lambda: pooling.max_pool_output_shape(np.shape(x), **attrs))
        shape = shape if shape is not None else (1,)
        if call["use_out"] is True:
            extra["out"] = np.empty(shape, dtype)
            if call["return_indices"]:
                extra["indices_out"] = np.empty(shape, np.int64)
        elif call["use_out"] == "indices_out":
            extra["indices_out"] = np.empty(shape, np.int64)
        else:
            extra["out"] = bad_out(call["use_out"], shape, dtype)
    before = np.array(x, copy=True)
    result, error = outcome(lambda: pooling.max_pool(x, return_indices=call["return_indices"],
                                                     n_threads=call["n_threads"], **attrs, **extra))
    assert_same(np.asarray(x), before)  # inputs are never modified
    y, indices = result if call["return_indices"] and result is not None else (result, None)
    if not settled("MaxPool", call, result, error, expected_errors,
                   lambda: pooling.max_pool_output_shape(np.shape(x), **attrs), extra, y):
        return
    want_y, want_i = reference.max_pool(x, return_indices=True, **attrs)
    assert_same(y, want_y)
    if indices is not None:
        assert_same(indices, want_i)


# --- MaxUnpool -------------------------------------------------------------------------------------

UNPOOL_FAULTS = ("kernel_shape", "strides", "pads", "kernel_missing", "output_shape", "index", "index_dtype",
                 "index_shape", "dtype", "layout", "rank", "n_threads", "out")
INDEX_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


@st.composite
def max_unpool_calls(draw):
    n = draw(st.integers(1, 4))
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    lead = dims(draw, 1, 0, 3) + dims(draw, 1, 1, 3)
    spatial = dims(draw, n, 0, 4 if n < 4 else 2)
    kernel, strides, pads = dims(draw, n, 1, 3), dims(draw, n, 1, 3), dims(draw, 2 * n, 0, 2)
    attrs = dict(kernel_shape=draw(int_attr(kernel)))
    maybe_attrs(draw, attrs, strides=strides, pads=pads)
    if layout == "NHWC":
        attrs["layout"] = "NHWC"
    if draw(st.booleans()):
        out_spatial = dims(draw, n, 0, 6)
        attrs["output_shape"] = draw(int_attr(nhwc_or_nchw(lead, out_spatial, layout), scalar_ok=False))
    call = dict(shape=nhwc_or_nchw(lead, spatial, layout), attrs=attrs, layout=layout,
                kind=draw(st.sampled_from(list(POOL_DTYPES))), index_dtype=draw(st.sampled_from(INDEX_DTYPES)),
                local=draw(st.booleans()), distinct=draw(st.booleans()), order=draw(st.sampled_from(ORDERS)),
                index_order=draw(st.sampled_from(ORDERS)), n_threads=draw(st.sampled_from([None, 1, 2])),
                use_out=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)), fault=None)
    if draw(st.integers(0, 9)) < 3:
        call["fault"], call["error"] = draw(max_unpool_fault(call, n, lead))
    return call


def nhwc_or_nchw(lead, spatial, layout):
    return lead + spatial if layout == "NCHW" else lead[:1] + spatial + lead[1:]


@st.composite
def max_unpool_fault(draw, call, n, lead):
    """(fault name, error) after breaking one MaxUnpool rule in `call`."""
    attrs = call["attrs"]
    name = draw(st.sampled_from(UNPOOL_FAULTS))
    if name in ("kernel_shape", "strides", "pads"):
        return break_sequence(draw, attrs, name, n)
    if name == "kernel_missing":
        attrs["kernel_shape"] = None
        return name, ValueError
    if name == "output_shape":
        good = list(nhwc_or_nchw(lead, (1,) * n, call["layout"]))
        how = draw(st.sampled_from(["values", "lead", "container"]))
        if how == "values":
            attrs[name], error = draw(broken_int_attr(good, 0, scalar_ok=False))
            return name, error
        if how == "lead":
            good[0 if draw(st.booleans()) else (1 if call["layout"] == "NCHW" else -1)] += 1
            attrs[name] = good
            return name, ValueError
        attrs[name] = draw(st.sampled_from([7, 2.5, "1,1,1", np.array(good, np.float64),
                                            np.array([good], np.int64)]))
        return name, TypeError
    if name == "index":
        call["bad_index"] = draw(st.sampled_from(["-1", "size", "int64_max", "int64_min", "uint64_high",
                                                  "int8_min", "uint8_max"]))
        call["shape"] = tuple(max(d, 1) for d in call["shape"])  # x must hold an element to be bad
        return name, ValueError
    if name == "index_dtype":
        call["index_dtype"] = draw(st.sampled_from(["float32", "float64", "bool", "complex64", "object"]))
        return name, TypeError
    if name == "index_shape":
        call["index_shape"] = draw(st.sampled_from(["extra", "longer", "scalar"]))
        return name, ValueError
    if name == "dtype":
        call["kind"] = draw(st.sampled_from(["complex64", "complex128", "clongdouble", "object"]))
        return name, TypeError
    if name == "layout":
        attrs["layout"] = draw(st.sampled_from(["nhwc", "NCW", 1, None]))
        return name, ValueError if isinstance(attrs["layout"], str) else TypeError
    if name == "rank":
        call["shape"] = call["shape"][:draw(st.integers(1, 2))]
        return name, ValueError
    if name == "n_threads":
        call["n_threads"] = draw(st.sampled_from([0, 0.5, "1"]))
        return name, ValueError if call["n_threads"] == 0 else TypeError
    call["use_out"] = draw(st.sampled_from(["shape", "dtype", "strided", "readonly", "unaligned", "list"]))
    return name, TypeError if call["use_out"] == "list" else ValueError  # a non-array: the wrong type


def max_unpool_data(call, out_shape):
    """(x, indices): valid flat indices into out_shape (plane-local or anywhere), with 0 and size-1
    planted, in the drawn index dtype, then broken where the fault says."""
    rng = np.random.default_rng(call["seed"])
    shape, kind = call["shape"], call["kind"]
    if kind not in POOL_DTYPES:
        x = np.ones(shape, kind)
    elif call["distinct"]:  # every value its own, so which duplicate wrote last shows
        x = to_dtype(np.arange(1, math.prod(shape) + 1).reshape(shape) % 120, kind)
    else:
        x = make_array(rng, shape, kind)
    size = math.prod(out_shape) if out_shape is not None and len(out_shape) == len(shape) else 0
    flat = rng.integers(0, max(size, 1), size=x.size)
    blocks = shape[0] * (shape[1] if call["layout"] == "NCHW" else 1) if len(shape) >= 3 else 1
    if call["local"] and blocks and size % blocks == 0 and x.size:
        # Every index inside its own plane (NHWC: image), as MaxPool makes them: the parallel path.
        per_out, per_in = size // blocks, x.size // blocks
        flat = (np.repeat(np.arange(blocks), per_in) * per_out + flat % max(per_out, 1))
    if x.size and size:
        flat[rng.integers(0, x.size)] = 0
        flat[rng.integers(0, x.size)] = size - 1
    index_dtype = call["index_dtype"]
    if index_dtype in INDEX_DTYPES and size - 1 > np.iinfo(index_dtype).max:
        index_dtype = "int64"
    indices = flat.astype(index_dtype).reshape(shape)
    bad = call.get("bad_index")
    if bad:
        at = np.unravel_index(rng.integers(0, x.size), shape)
        values = {"-1": -1, "size": size, "int64_max": 2**63 - 1, "int64_min": -2**63,
                  "uint64_high": 2**63 + int(rng.integers(0, 2**62)), "int8_min": -128, "uint8_max": 255}
        value = values[bad]
        if bad in ("uint8_max", "int8_min") and value in range(size):
            value = -1
        dtype = {"uint64_high": np.uint64, "int8_min": np.int8, "uint8_max": np.uint8}.get(bad, np.int64)
        if bad == "uint8_max" and value == -1:
            dtype = np.int64
        indices = indices.astype(dtype)
        indices[at] = value
    how = call.get("index_shape")
    if how == "extra":
        indices = indices[..., None]
    elif how == "longer":
        indices = np.concatenate([indices, np.zeros((1,) + indices.shape[1:], indices.dtype)])
    elif how == "scalar":  # a 0-d array: a shape error (a numpy scalar is a TypeError, test_*_errors)
        indices = np.array(0, dtype=np.int64)
    return memory_order(x, call["order"]), memory_order(indices, call["index_order"])


@fuzz_settings(150)
@given(max_unpool_calls())
def test_max_unpool(call):
    attrs = call["attrs"]
    out_shape = None
    if call["fault"] not in ("output_shape", "kernel_shape", "strides", "pads", "kernel_missing", "rank",
                             "layout"):
        out_shape = unpool_output_shape(call["shape"], attrs)
    x, indices = max_unpool_data(call, out_shape)
    expected_errors = {call["error"]} if call["fault"] else set()
    if call["fault"] not in ("output_shape", "kernel_shape", "strides", "pads", "kernel_missing", "rank",
                             "layout"):
        if out_shape is None:
            expected_errors.add(ValueError)  # SPEC 2: an inferred dimension < 1
        elif np.size(x) and not math.prod(out_shape):
            expected_errors.add(ValueError)  # every index is outside an empty output
    dtype = np.asarray(x).dtype.newbyteorder("=")
    extra = {}
    if call["use_out"]:
        shape = out_shape if out_shape is not None else (1,)
        extra["out"] = np.empty(shape, dtype) if call["use_out"] is True else bad_out(call["use_out"], shape, dtype)
    x_before, i_before = np.array(x, copy=True), np.array(indices, copy=True)
    result, error = outcome(lambda: pooling.max_unpool(x, indices, n_threads=call["n_threads"], **attrs, **extra))
    assert_same(np.asarray(x), x_before)
    assert_same(np.asarray(indices), i_before)
    if settled("MaxUnpool", call, result, error, expected_errors,
               lambda: pooling.max_unpool_output_shape(np.shape(x), **attrs), extra):
        assert_same(result, reference.max_unpool(x, indices, **attrs))


# --- Col2Im ----------------------------------------------------------------------------------------

COL2IM_FAULTS = ("image_shape", "block_shape", "strides", "dilations", "pads", "lengths", "columns",
                 "channels", "rank", "dtype", "n_threads", "out")


@st.composite
def col2im_calls(draw):
    n = draw(st.sampled_from([1, 2, 2, 3]))
    image, block = dims(draw, n, 1, 6), dims(draw, n, 1, 3)
    strides, dilations, pads = dims(draw, n, 1, 3), dims(draw, n, 1, 2), dims(draw, 2 * n, 0, 2)
    attrs = dict(image_shape=draw(int_attr(image, scalar_ok=False)),
                 block_shape=draw(int_attr(block, scalar_ok=False)))
    maybe_attrs(draw, attrs, strides=strides, dilations=dilations, pads=pads)
    call = dict(attrs=attrs, n=n, batch=dims(draw, 1, 0, 2)[0], channels=draw(st.integers(1, 3)),
                kind=draw(st.sampled_from(sorted(ALL_DTYPES))), order=draw(st.sampled_from(ORDERS)),
                n_threads=draw(st.sampled_from([None, 1, 2])), use_out=draw(st.booleans()),
                seed=draw(st.integers(0, 2**32 - 1)), fault=None)
    strides, dilations = full_attr(attrs.get("strides"), n, 1), full_attr(attrs.get("dilations"), n, 1)
    pads = full_attr(attrs.get("pads"), 2 * n, 0)
    call["nblocks"] = [(image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
                       for i in range(n)]
    call["shape"] = (call["batch"], call["channels"] * math.prod(block), max(math.prod(call["nblocks"]), 1))
    if draw(st.integers(0, 9)) < 3:
        call["fault"], call["error"] = draw(col2im_fault(call, n))
    return call


@st.composite
def col2im_fault(draw, call, n):
    """(fault name, error) after breaking one Col2Im rule in `call`."""
    attrs, shape = call["attrs"], list(call["shape"])
    name = draw(st.sampled_from(COL2IM_FAULTS))
    if name in ("image_shape", "block_shape", "strides", "dilations", "pads"):
        return break_sequence(draw, attrs, name, n, scalar_ok=name not in ("image_shape", "block_shape"))
    if name == "lengths":  # image_shape and block_shape of different lengths
        attrs["block_shape"] = [1] * (n + 1)
        return name, ValueError
    if name == "columns":
        shape[2] += draw(st.sampled_from([-1, 1, 5]))
    elif name == "channels":
        shape[1] = draw(st.sampled_from([0, shape[1] + 1]))
        if shape[1] % math.prod(full_attr(attrs["block_shape"])) == 0:
            shape[1] = 0
    elif name == "rank":
        shape = shape[:2] if draw(st.booleans()) else shape + [1]
    elif name == "dtype":
        call["kind"] = draw(st.sampled_from(["str", "object", "datetime64[s]", "void"]))
        return name, TypeError
    elif name == "n_threads":
        call["n_threads"] = draw(st.sampled_from([0, 2.0, "1"]))
        return name, ValueError if call["n_threads"] == 0 else TypeError
    else:
        call["use_out"] = draw(st.sampled_from(["shape", "dtype", "strided", "readonly", "unaligned", "list"]))
        return name, TypeError if call["use_out"] == "list" else ValueError  # a non-array: the wrong type
    call["shape"] = tuple(max(d, 0) for d in shape)
    return name, ValueError


def col2im_data(call):
    shape, kind = call["shape"], call["kind"]
    if kind in ALL_DTYPES:
        x = make_any_array(np.random.default_rng(call["seed"]), shape, kind)
    elif kind == "void":
        x = np.zeros(shape, "V2")
    else:
        x = (np.arange(math.prod(shape)) % 3).astype(kind).reshape(shape)
    return memory_order(x, call["order"])


@fuzz_settings(150)
@given(col2im_calls())
def test_col2im(call):
    attrs, n = call["attrs"], call["n"]
    x = col2im_data(call)
    expected_errors = {call["error"]} if call["fault"] else set()
    if call["fault"] not in COL2IM_FAULTS[:6] and min(call["nblocks"]) < 1:
        expected_errors.add(ValueError)  # SPEC 3: no block fits on an axis
    image = (1,) if call["fault"] == "image_shape" else full_attr(attrs["image_shape"])
    out_shape = (call["shape"][0], call["channels"]) + image
    dtype = np.asarray(x).dtype.newbyteorder("=")
    extra = {}
    if call["use_out"]:
        extra["out"] = (np.empty(out_shape, dtype) if call["use_out"] is True
                        else bad_out(call["use_out"], out_shape, dtype))
    before = np.array(x, copy=True)
    result, error = outcome(lambda: pooling.col2im(x, n_threads=call["n_threads"], **attrs, **extra))
    assert_same(np.asarray(x), before)
    if settled("Col2Im", call, result, error, expected_errors,
               lambda: pooling.col2im_output_shape(np.shape(x), **attrs), extra):
        assert_same_or_nan(result, reference.col2im(x, **attrs))
