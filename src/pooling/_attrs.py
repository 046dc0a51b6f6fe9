"""Attribute validation shared by every operator (SPEC 0, 1.2, 2, 3, 4).

Every error names the operator, the parameter and the offending value.
"""
import operator

import numpy as np

from ._dispatch import core as _core

# Operator versions, oldest first (SPEC 0).
VERSIONS = {
    "MaxPool": (1, 8, 10, 11, 12, 22),
    "MaxUnpool": (9, 11, 22),
    "Col2Im": (18,),
}

# Values the kernels compute with must stay far from int64 overflow.
INDEX_LIMIT = 1 << 62


def resolve_version(op, opset):
    """The operator version in force at ONNX opset `opset`; None is library mode."""
    if opset is None:
        return None
    opset = as_int(op, "opset", opset)
    versions = VERSIONS[op]
    if opset < versions[0]:
        raise ValueError(
            f"{op}: opset={opset} predates the operator; the first valid opset is {versions[0]}"
        )
    return max(v for v in versions if v <= opset)


def as_int(op, name, value):
    """A Python int from an int-like (numpy integers included); bool and float are TypeErrors."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}") from None


def int_tuple(op, name, value, length, minimum, default):
    """`value` as a tuple of `length` ints, each >= minimum.

    None gives `default` on every axis; a single int means the same value on
    every axis; otherwise a sequence or 1-D integer array of exactly `length`.
    """
    if value is None:
        return (default,) * length
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise TypeError(f"{op}: {name} must be a 1-D sequence of integers, got shape {value.shape}")
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        values = tuple(as_int(op, name, v) for v in value)
        if len(values) != length:
            raise ValueError(
                f"{op}: {name} must have {length} values, got {len(values)}: {list(values)}"
            )
    else:
        values = (as_int(op, name, value),) * length
    for v in values:
        if v < minimum:
            raise ValueError(f"{op}: {name} values must be >= {minimum}, got {list(values)}")
        if v >= INDEX_LIMIT:
            raise ValueError(f"{op}: {name} value {v} is too large (limit 2**62)")
    return values


def flag(op, name, value, allowed=(0, 1)):
    """An int flag such as ceil_mode or storage_order; bool accepted."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    value = as_int(op, name, value)
    if value not in allowed:
        raise ValueError(f"{op}: {name} must be one of {list(allowed)}, got {value}")
    return value


def choice(op, name, value, allowed):
    """A string attribute that must be one of `allowed` (case-sensitive)."""
    if not isinstance(value, str):
        raise TypeError(f"{op}: {name} must be a string, one of {list(allowed)}; got {value!r}")
    if value not in allowed:
        raise ValueError(f"{op}: {name} must be one of {list(allowed)}, got {value!r}")
    return value


def shape_tuple(op, name, shape):
    """A shape as a tuple of non-negative Python ints (numpy integers are converted exactly)."""
    try:
        items = iter(shape)
    except TypeError:
        raise TypeError(f"{op}: {name} must be a sequence of integers, got {shape!r}") from None
    dims = tuple(as_int(op, name, d) for d in items)
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: {name} must have non-negative dimensions, got {dims}")
    return dims


def attribute_keys(op, names, values):
    """hashable() of each of `values` (the attributes `names` of `op`), as a tuple.

    The common values (None, bools, ints, strs, sequences of ints) are keyed in
    one compiled pass; any other sends every value through hashable().
    """
    keys = _core.attribute_keys(values)
    if keys is None:
        keys = tuple(hashable(v, op, name) for v, name in zip(values, names))
    return keys


def hashable(value, op=None, name=None):
    """A hashable key for an attribute value, so validated plans can be cached.

    Keys keep element types apart: (2, 2), (2.0, 2.0) and (True, True) must not
    share a cached plan, since only the first is valid.  None, ints, strs,
    bools and tuples or lists of ints are keyed by ``_core.attribute_keys``;
    everything else is tagged here with its types.
    """
    keys = _core.attribute_keys((value,))
    return ("tagged", _tag(value, op, name)) if keys is None else keys[0]


def _tag(value, op, name):
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, tuple(value.ravel().tolist()))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_tag(v, op, name) for v in value))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{op}: {name} has unsupported type {type(value).__name__}: {value!r}") from None
    return ("scalar", type(value), value)


def unhash(key):
    """The attribute value a hashable() key stands for (sequences come back as tuples or lists)."""
    if type(key) is not tuple:
        return key
    return key[1] if key[0] in ("ints", "bool") else _untag(key[1])


def _untag(tag):
    if tag[0] == "ndarray":
        return np.array(tag[3], dtype=tag[1]).reshape(tag[2])
    if tag[0] == "seq":
        return [_untag(t) for t in tag[1]]
    return tag[2]


def check_size(op, shape, what="output"):
    """ValueError before allocating when an element count or flat index overflows int64."""
    size = 1
    for d in shape:
        size *= d
    if size >= INDEX_LIMIT:
        raise ValueError(f"{op}: {what} shape {tuple(shape)} has {size} elements, too many to index")
    return size
