"""MaxPool: validation per version, output shape, dispatch to the kernels (behaviour.md §2)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple, overload

import numpy as np

from ._attrs import (INDEX_LIMIT, cached_plan, check_size, choice, flag, int_tuple, kinds_in,
                     past_limit, resolve_version, shape_tuple, split_layout)
from ._dtypes import KINDS, as_array, as_kernel_array, result_dtype
from ._maxpool_strategies import launch
from ._outputs import output_array
from ._shapes import AUTO_PADS, pool_output
from ._threads import resolve_n_threads
from .indices import check_format

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal

    from numpy.typing import ArrayLike, NDArray

    from ._attrs import Activation, AutoPad, Int, Ints, Layout
    from ._maxpool_strategies import Strategy
    from .indices import IndexFormat

OP = "MaxPool"

# behaviour.md §2.1: the version that introduced each attribute, output and dtype.
_ATTRIBUTE_SINCE = {"storage_order": 8, "ceil_mode": 10, "dilations": 10}
_INDICES_SINCE = 8
_DTYPE_SINCE = {"float16": 1, "float32": 1, "float64": 1, "int8": 12, "uint8": 12, "bfloat16": 22}
# Library mode (opset=None) also pools the other integers and bool, which no MaxPool version has.
_LIBRARY_DTYPES = tuple(_DTYPE_SINCE) + ("int16", "uint16", "int32", "uint32", "int64", "uint64", "bool")
ACTIVATIONS = ("Relu", "Clip")

class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes.

    Two plans are equal only when they are one object, and hashed by identity:
    _maxpool_strategies.launch caches launches by plan, and each cached plan is one object
    (hashing its fields was a measurable part of every call: docs/tuning.md#call-overhead)."""
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
    index_format: str         # Indices' encoding (indices.py)
    index_geometry: tuple     # (N, C, P) of x, which the encodings count in

    __eq__ = object.__eq__
    __hash__ = object.__hash__


def max_pool_output_shape(x_shape: Sequence[Int], kernel_shape: Ints, *, strides: Ints | None = None,
                          pads: Ints | None = None, dilations: Ints | None = None,
                          auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
                          storage_order: int = 0, return_indices: bool = False, layout: Layout = "NCHW",
                          activation: Activation | None = None,
                          activation_params: Sequence[float] | NDArray[Any] | None = None,
                          opset: Int | None = None) -> tuple[int, ...]:
    """The shape `max_pool` returns for an input of shape `x_shape`, computed without data.

    The attributes are validated exactly as `max_pool` validates them, with the same errors;
    only the dtype rules need data and are not applied.

    Parameters
    ----------
    x_shape : sequence of int
        Shape of the input, ``(N, C, D_1, ..., D_n)`` with ``n >= 1``, or ``(N, D_1, ..., D_n, C)``
        with ``layout="NHWC"``.
    kernel_shape : int or sequence of int
        Window size per spatial axis, each >= 1 (one int: the same on every axis).
    strides : int or sequence of int, optional
        Step per spatial axis, each >= 1. Default None: 1 (ONNX's default, not `kernel_shape`).
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends, each >= 0. Default None: 0.
    dilations : int or sequence of int, optional
        Spacing of the taps per spatial axis, each >= 1. Default None: 1.
    auto_pad : {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}, default "NOTSET"
        Automatic padding; other than "NOTSET" only with all-zero `pads`.
    ceil_mode : bool or {0, 1}, default False
        Round each output size up (a window may not start in the end padding).
    storage_order : {0, 1}, default 0
        Checked as by `max_pool` (1 is NCHW only); does not change the shape.
    return_indices : bool, default False
        Checked against `opset` as by `max_pool`; does not change the shape.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        Where the channels are in `x_shape` and in the result.
    activation : {"Relu", "Clip"}, optional
        Checked as by `max_pool`; does not change the shape. Default None.
    activation_params : sequence of float, optional
        ``[min, max]`` for "Clip". Default None.
    opset : int, optional
        ONNX opset whose MaxPool version is enforced. Default None: library mode.

    Returns
    -------
    tuple of int
        ``(N, C, O_1, ..., O_n)``, or ``(N, O_1, ..., O_n, C)`` with NHWC.

    Raises
    ------
    ValueError
        As `max_pool`: invalid attribute values, a rank below 3, a negative output size, what the
        version of `opset` lacks, sizes past 2**62.
    TypeError
        As `max_pool`: `x_shape` not a sequence of integers, a wrongly typed attribute.

    See Also
    --------
    max_pool

    Notes
    -----
    Per spatial axis, with the dilated kernel ``e = (k - 1) * d + 1``: ``O = floor((D + pb + pe - e)
    / s) + 1``; ``ceil_mode`` takes the ceiling, then drops the last window if it would start in
    the end padding; "SAME_UPPER" and "SAME_LOWER" give ``ceil(D / s)``. docs/behaviour.md,
    section 2.3, has every rule.

    Examples
    --------
    >>> import pooling
    >>> pooling.max_pool_output_shape((1, 3, 224, 224), 3, strides=2, pads=1)
    (1, 3, 112, 112)
    >>> pooling.max_pool_output_shape((1, 224, 224, 3), 3, strides=2, auto_pad="SAME_UPPER", layout="NHWC")
    (1, 112, 112, 3)
    >>> pooling.max_pool_output_shape((1, 1, 4), 2, strides=2, pads=(0, 1), ceil_mode=True)
    (1, 1, 2)
    """
    return _plan(shape_tuple(OP, "x_shape", x_shape), kernel_shape=kernel_shape, strides=strides, pads=pads,
                 dilations=dilations, auto_pad=auto_pad, ceil_mode=ceil_mode, storage_order=storage_order,
                 return_indices=return_indices, layout=layout, activation=activation,
                 activation_params=activation_params, opset=opset, index_format="onnx").out_shape


# For type checkers, the result follows return_indices: y by default, (y, indices) with True, either
# for a bool only known at run time (which must then be passed).  indices_out needs return_indices.
@overload
def max_pool(x: ArrayLike, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: Literal[False] = False, layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = None, out: NDArray[Any] | None = None,
             indices_out: None = None, index_format: IndexFormat = "onnx") -> NDArray[Any]: ...
@overload
def max_pool(x: ArrayLike, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: Literal[True], layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = None, out: NDArray[Any] | None = None,
             indices_out: NDArray[np.int64] | None = None,
             index_format: IndexFormat = "onnx") -> tuple[NDArray[Any], NDArray[np.int64]]: ...
@overload
def max_pool(x: ArrayLike, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: bool, layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = None, out: NDArray[Any] | None = None,
             indices_out: NDArray[np.int64] | None = None, index_format: IndexFormat = "onnx",
             ) -> NDArray[Any] | tuple[NDArray[Any], NDArray[np.int64]]: ...


def max_pool(x: ArrayLike, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: bool = False, layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = None, out: NDArray[Any] | None = None,
             indices_out: NDArray[np.int64] | None = None, index_format: IndexFormat = "onnx",
             _strategy: Strategy | None = None, _nan: list[bool | None] | None = None) -> Any:
    """ONNX MaxPool: the maximum of each window of `x`, and optionally where it is.

    Parameters
    ----------
    x : array_like
        Input of shape ``(N, C, D_1, ..., D_n)`` with ``n >= 1`` spatial axes, or ``(N, D_1, ...,
        D_n, C)`` with ``layout="NHWC"``; dtype float16, bfloat16, float32, float64, int8 or uint8
        (fewer under `opset`), and in library mode (no `opset`) int16, uint16, int32, uint32,
        int64, uint64 and bool. Anything ``numpy.asarray`` takes; never modified.
    kernel_shape : int or sequence of int
        Window size per spatial axis, each >= 1 (one int: the same on every axis).
    strides : int or sequence of int, optional
        Step per spatial axis, each >= 1. Default None: **1 on every axis**, as ONNX defines it,
        and not `kernel_shape` as in PyTorch's ``max_pool2d``: ``max_pool(x, 2)`` of an 8x8
        input is 7x7; ``max_pool(x, 2, strides=2)`` is 4x4.
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends (``[pb_1, ..., pb_n, pe_1, ..., pe_n]``), each >= 0,
        larger than the kernel allowed; one int pads every begin and end. Default None: 0.
    dilations : int or sequence of int, optional
        Spacing of the taps per spatial axis, each >= 1. Default None: 1. Opset 10 and later.
    auto_pad : {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}, default "NOTSET"
        Automatic padding (case-sensitive); other than "NOTSET" only with all-zero `pads`.
    ceil_mode : bool or {0, 1}, default False
        Round each output size up (a window may not start in the end padding). Opset 10 and later.
    storage_order : {0, 1}, default 0
        1: Indices column-major inside each plane; NCHW only. Opset 8 and later.
    return_indices : bool, default False
        Also return the Indices output. Opset 8 and later.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        "NHWC": channels last, the ``com.ms.internal.nhwc`` operator.
    activation : {"Relu", "Clip"}, optional
        Applied to `y` in the same pass; under ``opset=K`` with NHWC only. Default None: none.
    activation_params : sequence of float, optional
        ``[min, max]``, ``min <= max``, for "Clip"; ignored for "Relu". Default None.
    opset : int, optional
        ONNX opset number: the call must be exactly valid for the MaxPool version in force there.
        Default None: library mode (every attribute, dtype and rank).
    n_threads : int, optional
        Threads: None (default) OpenMP's maximum for the calling thread, -1 all, -k all but k - 1;
        0 is a ValueError. Results never depend on it.
    out : numpy.ndarray, optional
        Buffer for `y`: writeable, aligned, C-contiguous, of exactly `y`'s shape and dtype,
        overlapping no input. Written and returned. Default None: a new array.
    indices_out : numpy.ndarray of int64, optional
        The same for `indices`; needs ``return_indices=True``. Default None.
    index_format : {"onnx", "plane", "tf", "tf_batch"}, default "onnx"
        The encoding of `indices`: "onnx" flat offsets into `x`; "plane" offsets inside each
        ``(n, c)`` plane (PyTorch's and Paddle's); "tf" ``p*C + c`` and "tf_batch" ``(n*P + p)*C
        + c`` (TensorFlow's ``max_pool_with_argmax``, without and with the batch; see
        `convert_indices`). Checked always, used only with ``return_indices=True``. With
        ``storage_order=1``, "plane" is column-major inside the plane and "tf", "tf_batch" raise.

    Returns
    -------
    y : numpy.ndarray
        ``(N, C, O_1, ..., O_n)``, or ``(N, O_1, ..., O_n, C)`` with NHWC, of `x`'s dtype in native
        byte order.
    indices : numpy.ndarray of int64
        Only with ``return_indices=True``, which returns ``(y, indices)``: shaped like `y`, the flat
        offset of each maximum in `x` (so ``x.reshape(-1)[indices] == y``), or its position in
        `index_format`; -1 for a window that holds no element of `x`.

    Raises
    ------
    ValueError
        An invalid attribute value (a wrong length, a value below its minimum, an unknown string),
        `x` of rank below 3, a negative output size, an attribute, output or activation that the
        version of `opset` lacks, an unusable `out` or `indices_out`, an unknown `index_format`
        or "tf" / "tf_batch" with ``storage_order=1``, sizes past 2**62.
    TypeError
        `x` not an array of numbers; a dtype that the mode or version does not allow (the message
        says which opset or mode does); a wrongly typed argument, such as a float where an int is
        needed or an `out` that is not an ndarray.

    See Also
    --------
    max_pool_output_shape : the output shape, without data.
    max_unpool : scatters `y` back to where `indices` point.
    max_pool_grad : the gradient, from `indices`.
    convert_indices : the index formats.

    Notes
    -----
    docs/behaviour.md, section 2, has every rule; in short:

    - Output size per axis, with the dilated kernel ``e = (k - 1) * d + 1``: ``floor((D + pb + pe
      - e) / s) + 1``. `ceil_mode` takes the ceiling, then drops the last window if it would start
      in the end padding. "SAME_UPPER" / "SAME_LOWER" give ``ceil(D / s)``, padded for the dilated
      kernel, the odd pad at the end / beginning. An input smaller than the kernel can give size 0
      (an empty result); a negative size is a ValueError.
    - Padding never takes part in the maximum. Ties go to the first maximum in window order (the
      last spatial axis innermost). NaN is greater than every number and the first NaN wins;
      -0.0 equals 0.0. `y` holds the exact bits of the winning element.
    - A window that holds no element of `x` (large pads or dilations) gives -inf (integers: the
      dtype's minimum; bool: False) and index -1.
    - bool: a window is True where it holds a True (any nonzero byte), and its index is the first
      True's; `y` holds 0/1 bytes. `activation` is not defined for bool (a ValueError).
    - With ``storage_order=1``, indices are ``plane + h + w * H`` (column-major inside each plane):
      an encoding that does not round-trip through `max_unpool`. With NHWC they are offsets into
      `x`'s own NHWC memory.
    - ``opset=K`` applies the newest MaxPool version <= K (1, 8, 10, 11, 12 or 22): Indices and
      `storage_order` need 8, `dilations` and `ceil_mode` 10, int8 and uint8 12, bfloat16 22.

    ``_strategy`` (private, for tests) forces one of the kernels' strategies
    (``pooling._maxpool_strategies.Strategy``) instead of the chosen one.

    Examples
    --------
    >>> import numpy as np
    >>> import pooling
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> pooling.max_pool(x, 2).shape       # strides default to 1 (ONNX), not to kernel_shape
    (1, 1, 3, 3)
    >>> pooling.max_pool(x, 2, strides=2)
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    >>> y, indices = pooling.max_pool(x, 2, strides=2, return_indices=True)
    >>> indices.tolist()
    [[[[5, 7], [13, 15]]]]
    >>> x2 = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    >>> pooling.max_pool(x2, 2, strides=2, return_indices=True, index_format="plane")[1].tolist()
    [[[[5, 7], [13, 15]], [[5, 7], [13, 15]]]]
    >>> pooling.max_pool(np.array([[[3.0, np.nan, 1.0, 5.0]]]), 2)   # NaN wins its windows
    array([[[nan, nan,  5.]]])
    """
    arr = x if type(x) is np.ndarray else as_array(OP, "x", x)
    plan = _plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads, dilations=dilations,
                 auto_pad=auto_pad, ceil_mode=ceil_mode, storage_order=storage_order,
                 return_indices=return_indices, layout=layout, activation=activation,
                 activation_params=activation_params, opset=opset, index_format=index_format)
    xk, kind = as_kernel_array(OP, "x", arr, plan.kinds)  # (bool: as it is, read as uint8's bytes)
    signed = KINDS[kind].signed
    if signed is not None:  # unsigned integers of 2-8 bytes run in the signed type (_dtypes.KindInfo)
        xk = xk.view(signed)
    elif kind == "bool" and plan.activation is not None:
        raise ValueError(f"{OP}: activation={plan.activation!r} is not defined for bool x")
    nt = resolve_n_threads(OP, n_threads, xk.size)
    y = output_array(OP, "out", out, plan.out_shape, result_dtype(arr.dtype), ("the input x", arr))
    if indices_out is not None and not return_indices:
        raise ValueError(f"{OP}: indices_out is given but return_indices is False")
    indices = (output_array(OP, "indices_out", indices_out, plan.out_shape, _INT64, ("the input x", arr),
                            ("out", y))
               if return_indices else None)
    if y.size:
        yk = y if y.dtype is xk.dtype else y.view(xk.dtype)  # 16-bit floats: as their bits
        run = launch(plan, kind, nt, return_indices, _strategy)
        if _nan is not None and getattr(run, "reports_nan", False):
            # pooling.torch's question: does y hold a NaN?  The launch scans each part as it writes it.
            _nan.append(run(xk, yk, indices, True))
        else:
            run(xk, yk, indices)
        if kind == "bool" and indices is not None:
            _canonical_bool(plan, kind, nt, return_indices, _strategy, xk, yk, indices)
        if indices is not None and plan.storage_order == 1 and len(plan.spatial) > 1:
            _to_column_major(indices, plan.spatial)  # (of "onnx" or "plane" Indices alike)
    return (y, indices) if return_indices else y


@cached_plan(OP)
def _plan(x_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, storage_order,
          return_indices, layout, activation, activation_params, opset, index_format):
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
    check_format(OP, "index_format", index_format, layout, storage_order)

    kinds = kinds_in(_DTYPE_SINCE, version, library=_LIBRARY_DTYPES)
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
    lead = split_layout(OP, x_shape, layout)[0]
    return _Plan(out_shape, layout, spatial, kernel, strides, dilations, begin, kinds, storage_order,
                 activation, act_params, index_format, lead + (math.prod(spatial),))


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


def _canonical_bool(plan, kind, nt, return_indices, strategy, xk, yk, indices):
    """bool x runs as its bytes (uint8): a window's largest byte is nonzero exactly where it holds a
    True.  Without Indices the kernel clamps it to 1 (_maxpool_strategies.launch).  With Indices, where
    every byte is 0 or 1 (numpy's own bools) the first largest is the first True; a result above 1
    shows a window with another nonzero byte, and then the call runs again on the input read as 0/1
    (a copy)."""
    if yk.size and yk.view(np.uint8).max() > 1:
        launch(plan, kind, nt, return_indices, strategy)(xk.view(np.uint8) != 0, yk, indices)


def _to_column_major(indices, spatial):
    """storage_order=1: re-encode each in-plane offset column-major (behaviour.md §2.5)."""
    plane_size = int(np.prod(spatial))
    valid = indices >= 0
    plane, pos = np.divmod(indices[valid], plane_size)
    coords = np.unravel_index(pos, spatial)
    indices[valid] = plane * plane_size + np.ravel_multi_index(coords, spatial, order="F")
