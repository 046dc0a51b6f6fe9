"""MaxUnpool: validation per version, output shape, dispatch to the kernel (behaviour.md §3)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import _tuning
from ._dispatch import core as _core
from ._attrs import (INDEX_LIMIT, cached_plan, check_size, int_tuple, kinds_in, layout_blocks, past_limit,
                     resolve_version, shape_tuple, split_layout)
from ._dtypes import C_TYPES, as_array, as_kernel_array, result_dtype
from ._outputs import fresh_zeros, output_array
from ._threads import resolve_n_threads
from .indices import as_int64, check_format, index_range, out_of_range, position, recode

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ._attrs import Int, Ints, Layout, Shape
    from .indices import IndexFormat

OP = "MaxUnpool"

# behaviour.md §3: the version that introduced each dtype of X.  Library mode adds every dtype
# library-mode MaxPool pools [ext], so anything pooled can be unpooled.
_DTYPE_SINCE = {"float16": 9, "float32": 9, "float64": 9, "bfloat16": 22}
_LIBRARY_DTYPES = tuple(_DTYPE_SINCE) + ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                         "bool")
# Indices: int64 in every version, any integer type in library mode.
_INDEX_SINCE = {"int64": 9}
_INDEX_KINDS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

# The kernel only moves bits: unsigned storage of each item size serves every dtype.
_BITS = {size: np.dtype(f"u{size}") for size in (1, 2, 4, 8)}

# Windows (32-bit elements) of a large result are written with non-temporal stores, past the caches
# (include/pooling_unpool.h), where _tuning.stream_unpool says the call's bytes exceed them.
# Windows only where x's rows hold at least this many values: shorter rows pay a call and a scalar
# remainder per row (docs/tuning.md#maxunpool-window-rows-of-16-or-more).
_WINDOWS_MIN_ROW = 16


class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes."""
    out_shape: tuple          # full output shape
    blocks: int               # independent parts of x and y: N*C planes (NCHW), N images (NHWC)
    kinds: tuple              # dtypes of x allowed under this version
    index_kinds: tuple        # dtypes of indices allowed under this version
    windows: tuple | None     # the kernel's (in_h, in_w, out_h, out_w, stream) for 2x2 stride-2 planes


def max_unpool_output_shape(x_shape: Sequence[Int], kernel_shape: Ints, *, strides: Ints | None = None,
                            pads: Ints | None = None, output_shape: Shape | None = None,
                            layout: Layout = "NCHW", opset: Int | None = None) -> tuple[int, ...]:
    """The shape `max_unpool` returns for `x` of shape `x_shape`, computed without data.

    Shapes and attributes are validated exactly as `max_unpool` validates them, with the same
    errors; the dtype rules and the indices' values need data and are not checked.

    Parameters
    ----------
    x_shape : sequence of int
        Shape of the pooled values, ``(N, C, D_1, ..., D_n)`` with ``n >= 1``, or ``(N, D_1, ...,
        D_n, C)`` with ``layout="NHWC"``.
    kernel_shape : int or sequence of int
        Window size per spatial axis, each >= 1 (one int: the same on every axis).
    strides : int or sequence of int, optional
        Step per spatial axis, each >= 1. Default None: 1.
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends, each >= 0. Default None: 0. Ignored (but
        checked) when `output_shape` is given.
    output_shape : sequence of int or 1-D integer array, optional
        The full output shape, with the N and C of `x_shape`. Default None: inferred.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        Where the channels are in `x_shape` and in the result.
    opset : int, optional
        ONNX opset whose MaxUnpool version is enforced. Default None: library mode.

    Returns
    -------
    tuple of int
        `output_shape`, or ``(N, C, O_1, ..., O_n)`` with ``O_i = (D_i - 1) * s_i - (pb_i + pe_i)
        + k_i`` (``(N, O_1, ..., O_n, C)`` with NHWC).

    Raises
    ------
    ValueError
        As `max_unpool`: invalid attribute values, a rank below 3, an inferred size below 1, an
        `output_shape` of another length or with other N or C, sizes past 2**62.
    TypeError
        As `max_unpool`: `x_shape` not a sequence of integers, a wrongly typed attribute.

    See Also
    --------
    max_unpool

    Examples
    --------
    >>> import pooling
    >>> pooling.max_unpool_output_shape((1, 1, 4, 4), 2, strides=2)
    (1, 1, 8, 8)
    >>> pooling.max_unpool_output_shape((1, 1, 4, 4), 2, strides=2, output_shape=(1, 1, 9, 9))
    (1, 1, 9, 9)
    """
    return _plan(shape_tuple(OP, "x_shape", x_shape), kernel_shape=kernel_shape, strides=strides, pads=pads,
                 output_shape=output_shape, layout=layout, opset=opset).out_shape


def max_unpool(x: ArrayLike, indices: ArrayLike, kernel_shape: Ints, *, strides: Ints | None = None,
               pads: Ints | None = None, output_shape: Shape | None = None, layout: Layout = "NCHW",
               opset: Int | None = None, n_threads: Int | None = None,
               out: NDArray[Any] | None = None, index_format: IndexFormat = "onnx") -> NDArray[Any]:
    """ONNX MaxUnpool: scatter `x` into zeros of the output shape, at `indices`.

    ``y.flat[indices.flat[j]] = x.flat[j]`` for every element ``j`` of `x`, so that
    ``max_unpool(*max_pool(x, k, return_indices=True), k, output_shape=x.shape)`` puts every
    pooled value back where it came from (with the same strides and pads in both calls).

    Parameters
    ----------
    x : array_like
        Pooled values of shape ``(N, C, D_1, ..., D_n)`` with ``n >= 1``, or ``(N, D_1, ..., D_n,
        C)`` with ``layout="NHWC"``; dtype float16, bfloat16, float32 or float64, and in library
        mode every integer type and bool (their bits are moved as they are).
    indices : array_like of int
        The shape of `x`: flat offsets into the returned output (row-major; NHWC: into its NHWC
        memory), as `max_pool` returns them. int64 under `opset`; any integer dtype in library mode.
    kernel_shape : int or sequence of int
        Window size per spatial axis, each >= 1 (one int: the same on every axis).
    strides : int or sequence of int, optional
        Step per spatial axis, each >= 1. Default None: 1 (not `kernel_shape`).
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends, each >= 0. Default None: 0. Ignored (but checked)
        when `output_shape` is given.
    output_shape : sequence of int or 1-D integer array, optional
        The full output shape, with the N and C of `x`; under `opset` an array must be int64.
        Default None: inferred (see Returns).
    layout : {"NCHW", "NHWC"}, default "NCHW"
        "NHWC": channels last, the ``com.ms.internal.nhwc`` operator.
    opset : int, optional
        ONNX opset number: the call must be exactly valid for the MaxUnpool version in force
        there (9, 11 or 22). Default None: library mode.
    n_threads : int, optional
        Threads: None (default) OpenMP's maximum for the calling thread, -1 all, -k all but k - 1;
        0 is a ValueError. Results never depend on it.
    out : numpy.ndarray, optional
        Buffer for `y`: writeable, aligned, C-contiguous, of exactly `y`'s shape and dtype,
        overlapping no input. Written and returned. Default None: a new array.
    index_format : {"onnx", "plane", "tf", "tf_batch"}, default "onnx"
        The encoding of `indices`, relative to the output (see `convert_indices`): "plane" reads
        offsets inside each ``(n, c)`` plane of the output, as PyTorch's ``max_unpool2d`` does.

    Returns
    -------
    y : numpy.ndarray
        `x`'s dtype (native byte order), shape `output_shape` or ``(N, C, O_1, ..., O_n)`` with
        ``O_i = (D_i - 1) * s_i - (pb_i + pe_i) + k_i`` (NHWC: ``(N, O_1, ..., O_n, C)``).

    Raises
    ------
    ValueError
        An index outside ``[0, y.size)``, or outside the range of `index_format` (the message
        names the first one, -1 included; nothing is written
        outside `y`, though `out` may be partly written), `indices` of another shape than `x`,
        an inferred size below 1, an `output_shape` of another length or with other N or C,
        invalid attribute values, an unusable `out`, sizes past 2**62.
    TypeError
        `x` or `indices` not an array of numbers; a dtype that the mode or version does not allow
        (the message says which opset or mode does); a wrongly typed argument.

    See Also
    --------
    max_pool : makes `x` and `indices`.
    max_unpool_output_shape : the output shape, without data.

    Notes
    -----
    docs/behaviour.md, section 3, has every rule; in short: when two elements share an index, the
    last one in row-major order of `x` wins, for every `n_threads`. Every `index_format`, "plane"
    included, is read as row-major positions: indices made with ``max_pool(..., storage_order=1)``
    ("onnx" or "plane") are column-major encodings and do not round-trip. The ONNX
    reference scatters into the inferred shape and then pads it to `output_shape`; this function,
    like onnxruntime and PyTorch, uses `output_shape`'s own offsets.

    Examples
    --------
    >>> import numpy as np
    >>> import pooling
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> y, indices = pooling.max_pool(x, 2, strides=2, return_indices=True)
    >>> pooling.max_unpool(y, indices, 2, strides=2)
    array([[[[ 0.,  0.,  0.,  0.],
             [ 0.,  5.,  0.,  7.],
             [ 0.,  0.,  0.,  0.],
             [ 0., 13.,  0., 15.]]]], dtype=float32)
    >>> x2 = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    >>> y2, plane = pooling.max_pool(x2, 2, strides=2, return_indices=True, index_format="plane")
    >>> pooling.max_unpool(y2, plane, 2, strides=2, index_format="plane")[0, 1, 1].tolist()
    [0.0, 21.0, 0.0, 23.0]
    >>> pooling.max_unpool(np.array([[[5.0, 7.0]]]), np.array([[[1, 4]]]), 2, strides=2,
    ...                    output_shape=(1, 1, 5))
    array([[[0., 5., 0., 0., 7.]]])
    """
    arr = x if type(x) is np.ndarray else as_array(OP, "x", x)
    idx = indices if type(indices) is np.ndarray else as_array(OP, "indices", indices)
    plan = _plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads,
                 output_shape=output_shape, layout=layout, opset=opset)
    if idx.shape != arr.shape:
        raise ValueError(f"{OP}: indices must have the shape of x {list(arr.shape)}, got {list(idx.shape)}")
    xk, _ = as_kernel_array(OP, "x", arr, plan.kinds)
    ik, _ = as_kernel_array(OP, "indices", idx, plan.index_kinds)
    relative = _RELATIVE[layout].get(check_format(OP, "index_format", index_format, layout), 0)
    if layout == "NCHW" and index_format in ("tf", "tf_batch"):
        # Channels-last positions of NCHW planes (rare): read as flat offsets into the output
        # first; -1 stays -1, which the kernel rejects like any index outside the output.
        ik = recode(OP, "indices", as_int64(OP, "indices", ik), plan.out_shape, layout, index_format, "onnx",
                    "the output", empty=False)
    # uint64 values >= 2**63 wrap to negative here, which the kernel rejects like any bad index.
    ik = ik.astype(np.int64, copy=False)
    dtype = result_dtype(arr.dtype)
    # A large fresh result may come zeroed from calloc (_outputs.fresh_zeros); not where the kernel
    # writes the windows whole, every element of y (see _windows).
    windows = _windows(plan, dtype)
    zeroed = out is None and windows is None and fresh_zeros(math.prod(plan.out_shape) * dtype.itemsize)
    y = output_array(OP, "out", out, plan.out_shape, dtype, ("the input x", arr), ("the input indices", idx),
                     zeros=zeroed, aligned=windows is not None)
    nt = resolve_n_threads(OP, n_threads, xk.size + y.size)
    if xk.size or y.size:
        if not y.size:
            # Nowhere to write: the very first index is outside [0, 0).  (The kernel is not
            # handed an empty output: it would memset a null pointer, undefined behaviour.)
            bad = 0
        else:
            bits = _BITS[xk.itemsize]
            # Few planes: zero y on every thread first rather than one plane per thread.
            fused = nt == 1 or plan.blocks >= 4 * nt
            kernel = _core.max_unpool[C_TYPES[bits]]
            bad = kernel(xk.reshape(-1).view(bits), ik.reshape(-1), y.reshape(-1).view(bits),
                         plan.blocks, fused, zeroed, nt, relative, plan.out_shape[-1] if relative == 2 else 1,
                         windows)
        if bad == -2:  # the kernel's contract on its arguments, which the checks above keep
            raise RuntimeError(f"{OP}: internal error: the kernel rejected its arguments")
        if bad >= 0 and index_format != "onnx":
            # Every other format (read in place, or recoded to flat offsets first, -1 kept) is
            # reported in its own range.
            lead, spatial = split_layout(OP, plan.out_shape, layout)
            raise out_of_range(OP, "indices", idx, position(bad, idx.shape), index_format,
                               index_range(index_format, lead, math.prod(spatial)), plan.out_shape, layout,
                               "the output", empty=False)
        if bad >= 0:
            where = position(bad, idx.shape)
            raise ValueError(
                f"{OP}: indices{list(where)} = {idx[where]} is outside [0, {y.size}), the flat "
                f"range of the output of shape {list(plan.out_shape)} (first bad index in row-major order)"
            )
    return y


def _windows(plan, dtype):
    """The kernel's windows argument: the plan's, where the kernel is to write y window by window
    (2x2 stride-2 planes of 32-bit elements, in a build with the vector code for it) rather than
    zero it and scatter into it; else None."""
    return plan.windows if dtype.itemsize == 4 and _core.UNPOOL_WINDOWS else None


# Index formats the kernel reads in place (its `relative` argument): offsets inside the part of
# their (n, c) plane or NHWC image (1), or pixels of the NHWC image at the element's channel (2).
_RELATIVE = {"NCHW": {"plane": 1}, "NHWC": {"tf": 1, "plane": 2}}


@cached_plan(OP)
def _plan(x_shape, kernel_shape, strides, pads, output_shape, layout, opset):
    version = resolve_version(OP, opset)
    lead, spatial = split_layout(OP, x_shape, layout)
    # NHWC: Indices are offsets into NHWC memory (behaviour.md §3), its images the blocks.
    blocks = layout_blocks(lead, layout)
    n = len(spatial)
    if kernel_shape is None:
        raise ValueError(f"{OP}: kernel_shape is required")
    kernel = int_tuple(OP, "kernel_shape", kernel_shape, n, 1, 1)
    strides = int_tuple(OP, "strides", strides, n, 1, 1)
    pads = int_tuple(OP, "pads", pads, 2 * n, 0, 0)
    if output_shape is None:
        out_spatial = _inferred_spatial(spatial, kernel, strides, pads)
        out_shape = (lead + out_spatial if layout == "NCHW"
                     else lead[:1] + out_spatial + lead[1:])
    else:
        out_shape = _given_shape(output_shape, x_shape, lead, version, layout)
    check_size(OP, out_shape)
    kinds = kinds_in(_DTYPE_SINCE, version, library=_LIBRARY_DTYPES)
    index_kinds = kinds_in(_INDEX_SINCE, version, library=_INDEX_KINDS)
    windows = None
    if (layout == "NCHW" and n == 2 and kernel == strides == (2, 2) and not any(pads)
            and spatial[0] and spatial[1] >= _WINDOWS_MIN_ROW and out_shape[3] % 2 == 0
            and out_shape[2] >= 2 * spatial[0] and out_shape[3] >= 2 * spatial[1]):
        # The call's bytes: x, its int64 Indices, the result (32-bit elements).
        touched = math.prod(x_shape) * 12 + math.prod(out_shape) * 4
        windows = spatial + out_shape[2:] + (int(_tuning.stream_unpool(touched)),)
    return _Plan(out_shape, blocks, kinds, index_kinds, windows)


def _inferred_spatial(spatial, kernel, strides, pads):
    """behaviour.md §3: (D_i - 1)*s_i - (pb_i + pe_i) + k_i per axis, each >= 1."""
    n = len(spatial)
    out = tuple((d - 1) * s - (pads[i] + pads[i + n]) + k
                for i, (d, k, s) in enumerate(zip(spatial, kernel, strides)))
    for i, o in enumerate(out):
        if o < 1:
            raise ValueError(
                f"{OP}: inferred output dimension {i} would be {o}: (x dim {spatial[i]} - 1) * "
                f"stride {strides[i]} - pads ({pads[i]} + {pads[i + n]}) + kernel {kernel[i]}; "
                "pass output_shape or smaller pads"
            )
        if o >= INDEX_LIMIT:
            raise past_limit(OP, f"inferred output dimension {i} ({o})")
    return out


def _given_shape(value, x_shape, lead, version, layout):
    """output_shape checked against behaviour.md §3: full rank, N and C of x, every dim >= 0."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise TypeError(
                f"{OP}: output_shape must be a 1-D integer array, got dtype {value.dtype} "
                f"and shape {list(value.shape)}"
            )
        if version is not None and value.dtype != np.int64:
            raise TypeError(f"{OP}: output_shape must be int64 under opset, got {value.dtype}")
    elif not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{OP}: output_shape must be a list, tuple or 1-D int64 array of {len(x_shape)} "
            f"values, got {value!r}"
        )
    shape = int_tuple(OP, "output_shape", value, len(x_shape), 0, 0)
    if (shape[:2] if layout == "NCHW" else (shape[0], shape[-1])) != lead:
        where = "start with" if layout == "NCHW" else "have N first and C last:"
        raise ValueError(
            f"{OP}: output_shape {list(shape)} must keep N and C of x {list(x_shape)}, i.e. {where} {list(lead)}"
        )
    return shape
