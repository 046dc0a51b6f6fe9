"""Attribute validation shared by every operator (SPEC 0, 1.2, 2, 3, 4).

Every error names the operator, the parameter and the offending value.
"""
import functools
import inspect
import operator

import numpy as np

from . import _runtime

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


# Plans kept per operator: far more than the shapes a model runs, and a bound on
# callers that pass ever new ones.
PLAN_CACHE_SIZE = 512


def cached_plan(op):
    """Decorator: cache plan(x_shape, *attributes) by keys of its arguments.

    functools.lru_cache would need hashable arguments and key them with their
    types in Python; here ``_runtime.attribute_keys`` keys the common values (the
    shape, None, ints, strs, bools, sequences of ints) in one compiled pass and
    hashable() the rest, and the plan function sees the caller's own values.
    Past PLAN_CACHE_SIZE plans each new one evicts the oldest; ``.cache_clear()``
    empties it.
    """
    def decorate(build):
        names = tuple(inspect.signature(build).parameters)
        plans = {}

        @functools.wraps(build)
        def plan(*args):
            key = _runtime.attribute_keys(args)
            if key is None:
                key = tuple(hashable(v, op, name) for v, name in zip(args, names))
            found = plans.get(key)
            if found is None:
                found = build(*args)
                if len(plans) >= PLAN_CACHE_SIZE:
                    try:
                        plans.pop(next(iter(plans)), None)  # the oldest (dicts keep order)
                    except (StopIteration, RuntimeError):  # another thread changed it meanwhile
                        pass
                plans[key] = found
            return found

        plan.cache_clear = plans.clear
        return plan
    return decorate


def hashable(value, op=None, name=None):
    """A hashable key for an attribute value, so validated plans can be cached.

    Keys keep element types apart: (2, 2), (2.0, 2.0) and (True, True) must not
    share a cached plan, since only the first is valid.  None, ints, strs,
    bools and tuples or lists of ints are keyed by ``_runtime.attribute_keys``;
    everything else is tagged here with its types (a ("tagged", ...) key, unlike
    any of those).
    """
    keys = _runtime.attribute_keys((value,))
    return ("tagged", _tag(value, op, name)) if keys is None else keys[0]


def _tag(value, op, name):
    if isinstance(value, np.ndarray):
        items = value.ravel().tolist()
        if value.dtype.hasobject:  # items may be anything, lists included: tag each
            items = [_tag(v, op, name) for v in items]
        return ("ndarray", value.dtype.str, value.shape, tuple(items))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_tag(v, op, name) for v in value))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{op}: {name} has unsupported type {type(value).__name__}: {value!r}") from None
    return ("scalar", type(value), value)


def check_size(op, shape, what="output"):
    """ValueError before allocating when an element count or flat index overflows int64."""
    size = 1
    for d in shape:
        size *= d
    if size >= INDEX_LIMIT:
        raise ValueError(f"{op}: {what} shape {tuple(shape)} has {size} elements, too many to index")
    return size
