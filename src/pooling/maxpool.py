"""MaxPool: validation per version, output shape, dispatch to the kernels (behaviour.md §2)."""
from typing import NamedTuple

import numpy as np

from ._attrs import (INDEX_LIMIT, cached_plan, check_size, choice, flag, int_tuple, kinds_in,
                     past_limit, resolve_version, shape_tuple, split_layout)
from ._dtypes import as_kernel_array, result_dtype
from ._maxpool_strategies import launch
from ._outputs import output_array
from ._shapes import AUTO_PADS, pool_output
from ._threads import resolve_n_threads

OP = "MaxPool"

# behaviour.md §2.1: the version that introduced each attribute, output and dtype.
_ATTRIBUTE_SINCE = {"storage_order": 8, "ceil_mode": 10, "dilations": 10}
_INDICES_SINCE = 8
_DTYPE_SINCE = {"float16": 1, "float32": 1, "float64": 1, "int8": 12, "uint8": 12, "bfloat16": 22}
ACTIVATIONS = ("Relu", "Clip")

class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes.

    Two plans are equal only when they are one object, and hashed by identity:
    _maxpool_strategies.launch caches launches by plan, and each cached plan is one object
    (hashing its fields took 0.16 us of every call)."""
    out_shape: tuple          # full output shape
    layout: str               # "NCHW" or "NHWC"
    spatial: tuple            # input spatial shape
    kernel: tuple
    strides: tuple
    dilations: tuple
    pads_begin: tuple
    kinds: tuple              # dtypes allowed under this version
    storage_order: int
    activation: object        # None, "Relu" or "Clip"
    activation_params: tuple

    __eq__ = object.__eq__
    __hash__ = object.__hash__


def max_pool_output_shape(x_shape, kernel_shape, *, strides=None, pads=None, dilations=None,
                          auto_pad="NOTSET", ceil_mode=False, storage_order=0,
                          return_indices=False, layout="NCHW", activation=None,
                          activation_params=None, opset=None):
    """Output shape of max_pool for an input of shape `x_shape` (same validation, no data)."""
    return _plan(shape_tuple(OP, "x_shape", x_shape), kernel_shape=kernel_shape, strides=strides, pads=pads,
                 dilations=dilations, auto_pad=auto_pad, ceil_mode=ceil_mode, storage_order=storage_order,
                 return_indices=return_indices, layout=layout, activation=activation,
                 activation_params=activation_params, opset=opset).out_shape


def max_pool(x, kernel_shape, *, strides=None, pads=None, dilations=None, auto_pad="NOTSET",
             ceil_mode=False, storage_order=0, return_indices=False, layout="NCHW",
             activation=None, activation_params=None, opset=None, n_threads=None,
             out=None, indices_out=None, _strategy=None):
    """ONNX MaxPool over an array of shape (N, C, D_1, ..., D_n), n >= 1.

    Returns y, or (y, indices) with ``return_indices=True``: indices are int64
    flat offsets into x (row-major, or column-major within each plane with
    ``storage_order=1``), -1 for a window that holds no input element.  Ties go
    to the first maximum in window order; NaN beats every number.  ``opset=K``
    enforces exactly what version K of the operator allows; the default is
    library mode (every attribute, dtype and rank).  Indices made with
    storage_order=1 are column-major encodings, so they do not round-trip
    through max_unpool.  docs/behaviour.md section 2 has every rule.

    ``_strategy`` (private, for tests) forces one of the kernels' strategies
    (``pooling._maxpool_strategies.Strategy``) instead of the chosen one.
    """
    arr = x if type(x) is np.ndarray else np.asarray(x)
    plan = _plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads, dilations=dilations,
                 auto_pad=auto_pad, ceil_mode=ceil_mode, storage_order=storage_order,
                 return_indices=return_indices, layout=layout, activation=activation,
                 activation_params=activation_params, opset=opset)
    xk, kind = as_kernel_array(OP, "x", arr, plan.kinds)
    nt = resolve_n_threads(OP, n_threads, xk.size)
    y = output_array(OP, "out", out, plan.out_shape, result_dtype(arr.dtype), ("the input x", arr))
    if indices_out is not None and not return_indices:
        raise ValueError(f"{OP}: indices_out is given but return_indices is False")
    indices = (output_array(OP, "indices_out", indices_out, plan.out_shape, _INT64, ("the input x", arr),
                            ("out", y))
               if return_indices else None)
    if y.size:
        yk = y if y.dtype is xk.dtype else y.view(xk.dtype)  # 16-bit floats: as their bits
        launch(plan, kind, nt, return_indices, _strategy)(xk, yk, indices)
        if indices is not None and plan.storage_order == 1 and len(plan.spatial) > 1:
            _to_column_major(indices, plan.spatial)
    return (y, indices) if return_indices else y


@cached_plan(OP)
def _plan(x_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, storage_order,
          return_indices, layout, activation, activation_params, opset):
    version = resolve_version(OP, opset)
    spatial = split_layout(OP, x_shape, layout)[1]
    n = len(spatial)
    if kernel_shape is None:
        raise ValueError(f"{OP}: kernel_shape is required")
    kernel = int_tuple(OP, "kernel_shape", kernel_shape, n, 1, 1)
    strides = int_tuple(OP, "strides", strides, n, 1, 1)
    dilations = int_tuple(OP, "dilations", dilations, n, 1, 1)
    pads = int_tuple(OP, "pads", pads, 2 * n, 0, 0)
    choice(OP, "auto_pad", auto_pad, AUTO_PADS)
    if auto_pad != "NOTSET" and any(pads):
        raise ValueError(f"{OP}: pads {list(pads)} cannot be combined with auto_pad={auto_pad!r}")
    ceil_mode = flag(OP, "ceil_mode", ceil_mode)
    storage_order = flag(OP, "storage_order", storage_order)
    if storage_order == 1 and layout == "NHWC":
        raise ValueError(f"{OP}: storage_order=1 is not defined for layout 'NHWC' (Indices are NHWC offsets)")
    activation, act_params = _activation(activation, activation_params)

    kinds = kinds_in(_DTYPE_SINCE, version)
    if version is not None:
        given = {"storage_order": storage_order != 0, "ceil_mode": ceil_mode != 0,
                 "dilations": any(d != 1 for d in dilations)}
        for name, since in _ATTRIBUTE_SINCE.items():
            if given[name] and version < since:
                raise ValueError(
                    f"{OP}: attribute {name} is not in version {version} (opset {opset}); "
                    f"it needs opset >= {since}"
                )
        if return_indices and version < _INDICES_SINCE:
            raise ValueError(
                f"{OP}: output Indices is not in version {version} (opset {opset}); "
                f"it needs opset >= {_INDICES_SINCE}"
            )
        if activation is not None and layout == "NCHW":
            raise ValueError(
                f"{OP}: activation={activation!r} under opset={opset} needs layout 'NHWC' "
                "(the com.ms.internal.nhwc operator); NCHW allows it in library mode only"
            )

    out_spatial, begin, end = pool_output(OP, spatial, kernel, strides, dilations, pads,
                                          auto_pad, ceil_mode)
    out_shape = (x_shape[:2] + out_spatial if layout == "NCHW"
                 else x_shape[:1] + out_spatial + x_shape[-1:])
    check_size(OP, x_shape, "input")
    check_size(OP, out_shape)
    for i in range(n):
        # Every position the kernels compute lies within these bounds.
        reach = out_spatial[i] * strides[i] + (kernel[i] - 1) * dilations[i] + begin[i] + end[i]
        if spatial[i] + reach >= INDEX_LIMIT:
            raise past_limit(OP, f"the reach of strides, dilations and pads on axis {i} "
                                 f"({spatial[i] + reach})")
    return _Plan(out_shape, layout, spatial, kernel, strides, dilations, begin, kinds, storage_order,
                 activation, act_params)


def _activation(activation, params):
    """(activation, params as floats) per behaviour.md §2.4."""
    if activation is None:
        return None, ()
    choice(OP, "activation", activation, ACTIVATIONS)
    if activation == "Relu":
        return activation, ()
    try:
        values = tuple(float(v) for v in np.asarray(params, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise TypeError(f"{OP}: activation_params for Clip must be [min, max], got {params!r}") from None
    if params is None or len(values) != 2 or not values[0] <= values[1]:
        raise ValueError(
            f"{OP}: activation_params for Clip must be [min, max] with min <= max, got {params!r}"
        )
    return activation, values


_INT64 = np.dtype(np.int64)


def _to_column_major(indices, spatial):
    """storage_order=1: re-encode each in-plane offset column-major (behaviour.md §2.5)."""
    plane_size = int(np.prod(spatial))
    valid = indices >= 0
    plane, pos = np.divmod(indices[valid], plane_size)
    coords = np.unravel_index(pos, spatial)
    indices[valid] = plane * plane_size + np.ravel_multi_index(coords, spatial, order="F")
