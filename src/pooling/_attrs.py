"""Attribute validation shared by every operator (behaviour.md §1, §2.2, §3, §4, §5).

Every error names the operator, the parameter and the offending value.
"""
from __future__ import annotations

import functools
import inspect
import operator
from typing import TYPE_CHECKING

import numpy as np

from . import _runtime
from ._dtypes import Kinds

if TYPE_CHECKING:  # the attribute types of the public signatures, for type checkers only
    from collections.abc import Sequence
    from typing import Any, Literal, TypeAlias

    from numpy.typing import NDArray

    Int: TypeAlias = int | np.integer[Any]
    Shape: TypeAlias = Sequence[Int] | NDArray[np.integer[Any]]   # one value per axis
    Ints: TypeAlias = Int | Shape                                  # or one for every axis
    Layout: TypeAlias = Literal["NCHW", "NHWC"]
    AutoPad: TypeAlias = Literal["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]
    Activation: TypeAlias = Literal["Relu", "Clip"]

LAYOUTS = ("NCHW", "NHWC")

# Operator versions, oldest first (behaviour.md §1).
VERSIONS = {
    "MaxPool": (1, 8, 10, 11, 12, 22),
    "MaxUnpool": (9, 11, 22),
    "Col2Im": (18,),
}

# Values the kernels compute with must stay far from int64 overflow.
INDEX_LIMIT = 1 << 62


def past_limit(op, what):
    """The one error for a size, offset or attribute at or past INDEX_LIMIT."""
    return ValueError(f"{op}: {what} is past the 2**62 limit on sizes and offsets")


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
            raise TypeError(f"{op}: {name} must be a 1-D sequence of integers, got shape {list(value.shape)}")
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
            raise past_limit(op, f"{name} value {v}")
    return values


def flag(op, name, value, allowed=(0, 1)):
    """An int flag such as ceil_mode or storage_order; bool accepted."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    value = as_int(op, name, value)
    if value not in allowed:
        raise ValueError(f"{op}: {name} must be one of {list(allowed)}, got {value}")
    return value


def split_layout(op, x_shape, layout):
    """(leading dims, spatial dims) of an input shape in `layout`: (N, C) and (D_1, ..., D_n) for
    NCHW, (N, C) and the dims between them for NHWC.  The layout and the rank (>= 3) are checked."""
    choice(op, "layout", layout, LAYOUTS)
    if len(x_shape) < 3:
        raise ValueError(
            f"{op}: x must have rank >= 3 (N, C and at least one spatial axis), got shape {list(x_shape)}"
        )
    if layout == "NCHW":
        return x_shape[:2], x_shape[2:]
    return (x_shape[0], x_shape[-1]), x_shape[1:-1]


def layout_blocks(lead, layout):
    """The parts a scatter kernel (MaxUnpool, max_pool_grad) splits its work by, one per thread at
    a time: the N*C planes with NCHW, the N images (channels interleaved) with NHWC."""
    return lead[0] * lead[1] if layout == "NCHW" else lead[0]


def kinds_in(since, version, library=None):
    """The dtype kinds of a `since` table ({kind: first version}) allowed at `version`; in library
    mode (version None) every kind of the table, or `library` when given.  A Kinds, whose dtype
    errors say which opset or mode allows the others."""
    library = tuple(since) if library is None else library
    if version is None:
        return Kinds(library, since, library)
    return Kinds((kind for kind, first in since.items() if first <= version), since, library)


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
        raise ValueError(f"{op}: {name} must have non-negative dimensions, got {list(dims)}")
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

    The cached function takes the plan function's own parameters, keyword-only
    after the first, so that a call names every attribute (two swapped flags
    would pass silently by position).  It is generated with those names, as
    dataclasses and namedtuple generate their methods: a ``**kwargs`` wrapper
    would cost a dict and a lookup per attribute on every call.
    """
    def decorate(build):
        names = tuple(inspect.signature(build).parameters)
        plans = {}

        def miss(args, key):
            """The plan of a call whose key is not cached, or that no compiled key covers."""
            if key is None:
                key = tuple(hashable(v, op, name) for v, name in zip(args, names))
                found = plans.get(key)
                if found is not None:
                    return found
            found = build(*args)
            if len(plans) >= PLAN_CACHE_SIZE:
                try:
                    plans.pop(next(iter(plans)), None)  # the oldest (dicts keep order)
                except (StopIteration, RuntimeError):  # another thread changed it meanwhile
                    pass
            plans[key] = found
            return found

        # The hit path is the generated function itself (a call less per call).
        args = ", ".join(names)
        namespace = {"attribute_keys": _runtime.attribute_keys, "plans": plans, "miss": miss}
        exec(f"def plan({names[0]}, *, {', '.join(names[1:])}):\n"
             f"    args = ({args},)\n"
             f"    key = attribute_keys(args)\n"
             f"    found = None if key is None else plans.get(key)\n"
             f"    return miss(args, key) if found is None else found\n", namespace)
        plan = functools.wraps(build)(namespace["plan"])
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
        raise past_limit(op, f"{what} shape {list(shape)}, {size} elements,")
    return size
