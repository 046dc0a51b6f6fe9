"""Col2Im: validation, output shape, dispatch to the kernel (behaviour.md §4)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import _tuning
from ._dispatch import core as _core
from ._attrs import INDEX_LIMIT, cached_plan, check_size, int_tuple, past_limit, resolve_version, shape_tuple
from ._dtypes import C_TYPES, HALF_INF_BITS, as_array, as_kernel_array, result_dtype
from ._outputs import output_array
from ._threads import resolve_n_threads, split_rows

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ._attrs import Int, Ints, Shape

OP = "Col2Im"

# Whether grids of strides 2-4 (float32 and the 16-bit floats) are summed in registers
# (include/pooling_col2im.h, pk_col_regs); the tests turn it off to force the general grid and
# rows on the same shapes.
_REGISTERS = True
# Whether folds whose blocks are narrower than the stride (k3 s4: each pixel one term or none) are
# copied as the tiled ones (pk_col_tiles); the tests turn it off to sum them as the others.
_GAPS = True
# Whether the scatter's float32 runs (a last axis of stride 1) ask for their columns ahead of the
# adds (include/pooling_add.h): the CPU's choice, which the tests flip to run both.
_RUN_PREFETCH = _tuning.col2im_run_prefetch()
# Planes per work item of the register rows (None: the rule, _group); the tests force others.
_GROUP = None

# behaviour.md §4: every numeric type and bool, in every version (there is only 18).
KINDS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64", "complex64", "complex128")

# What the kernel's buffers hold: each integer as the unsigned type of its
# width (same wrap-around bits), bool as int8 so that it gets its own kernel
# (logical or).  float16 and bfloat16 stay uint16 and are named by inf_bits.
_STORAGE = {
    "bool": np.dtype(np.int8),
    "int8": np.dtype(np.uint8),
    "int16": np.dtype(np.uint16),
    "int32": np.dtype(np.uint32),
    "int64": np.dtype(np.uint64),
}

# numpy arrays have at most 64 dimensions (and the kernel's per-axis arrays).
_MAX_RANK = 64

class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes."""
    out_shape: tuple        # (N, C, S_1..S_n)
    kernel_size: int        # K = prod(block_shape)
    geom: np.ndarray        # the kernel's geometry table, read-only


def col2im_output_shape(x_shape: Sequence[Int], image_shape: Shape, block_shape: Shape, *,
                        strides: Ints | None = None, pads: Ints | None = None,
                        dilations: Ints | None = None, opset: Int | None = None) -> tuple[int, ...]:
    """The shape `col2im` returns for `x` of shape `x_shape`, computed without data.

    Shapes and attributes are validated exactly as `col2im` validates them, with the same errors.

    Parameters
    ----------
    x_shape : sequence of int
        Shape of the columns, ``(N, C * prod(block_shape), L)``.
    image_shape : sequence of int or 1-D integer array
        ``(S_1, ..., S_n)``, each >= 1.
    block_shape : sequence of int or 1-D integer array
        ``(b_1, ..., b_n)``, each >= 1, as long as `image_shape`.
    strides : int or sequence of int, optional
        Block step per axis, each >= 1. Default None: 1.
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends, each >= 0. Default None: 0.
    dilations : int or sequence of int, optional
        Spacing inside a block per axis, each >= 1. Default None: 1.
    opset : int, optional
        ONNX opset (18 or later: at least 2 spatial axes). Default None: library mode.

    Returns
    -------
    tuple of int
        ``(N, C, S_1, ..., S_n)``.

    Raises
    ------
    ValueError, TypeError
        As `col2im`.

    See Also
    --------
    col2im

    Examples
    --------
    >>> import pooling
    >>> pooling.col2im_output_shape((8, 576, 3136), (56, 56), (3, 3), pads=1)
    (8, 64, 56, 56)
    """
    return _plan(shape_tuple(OP, "x_shape", x_shape), image_shape=image_shape, block_shape=block_shape,
                 strides=strides, pads=pads, dilations=dilations, opset=opset).out_shape


def col2im(x: ArrayLike, image_shape: Shape, block_shape: Shape, *, strides: Ints | None = None,
           pads: Ints | None = None, dilations: Ints | None = None, opset: Int | None = None,
           n_threads: Int | None = None, out: NDArray[Any] | None = None) -> NDArray[Any]:
    """ONNX Col2Im: add columns of blocks back into images (the inverse layout of im2col).

    Like ``torch.nn.Fold``, for any number of spatial axes: each column of `x` is one block
    position; its ``C * K`` entries are added at that block's pixels, summing where blocks overlap.

    Parameters
    ----------
    x : array_like
        Columns of shape ``(N, C * K, L)``, ``K = prod(block_shape)``, ``L`` the number of blocks;
        bool, any integer or float dtype, bfloat16, complex64 or complex128.
    image_shape : sequence of int or 1-D integer array
        ``(S_1, ..., S_n)``, each >= 1.
    block_shape : sequence of int or 1-D integer array
        ``(b_1, ..., b_n)``, each >= 1, as long as `image_shape`.
    strides : int or sequence of int, optional
        Block step per axis, each >= 1. Default None: 1.
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends, each >= 0. Default None: 0.
    dilations : int or sequence of int, optional
        Spacing inside a block per axis, each >= 1. Default None: 1.
    opset : int, optional
        ONNX opset number: 18 or later enforces the operator document (at least 2 spatial axes).
        Default None: library mode (1 axis allowed too).
    n_threads : int, optional
        Threads: None (default) OpenMP's maximum for the calling thread, -1 all, -k all but k - 1;
        0 is a ValueError. Results never depend on it, to the bit.
    out : numpy.ndarray, optional
        Buffer for `y`: writeable, aligned, C-contiguous, of exactly `y`'s shape and dtype,
        overlapping no input. Written and returned. Default None: a new array.

    Returns
    -------
    y : numpy.ndarray
        Shape ``(N, C, S_1, ..., S_n)``, `x`'s dtype in native byte order.

    Raises
    ------
    ValueError
        `x` not of rank 3, ``x.shape[1]`` not a positive multiple of ``K``, ``L`` not the number of
        blocks, a block that does not fit in the padded image, `image_shape` and `block_shape` of
        different lengths or empty, fewer than 2 axes under `opset`, invalid attribute values, an
        unusable `out`, sizes past 2**62.
    TypeError
        `x` not an array of numbers (strings, objects), `image_shape` or `block_shape` not a 1-D
        sequence of integers, a wrongly typed argument.

    See Also
    --------
    col2im_output_shape : the output shape, without data.

    Notes
    -----
    docs/behaviour.md, section 4, has every rule; in short: the blocks per axis are ``floor((S_i +
    pb_i + pe_i - ((b_i - 1) * d_i + 1)) / s_i) + 1``, and ``L`` must be their product. Terms that
    fall in the padding are dropped; pixels no block covers are 0. bool adds by logical or,
    integers wrap around, float16 and bfloat16 are summed in float32 and rounded once (the ONNX
    reference rounds after every addition). Each pixel sums its terms in the same order for every
    `n_threads`.

    Examples
    --------
    >>> import numpy as np
    >>> import pooling
    >>> cols = np.ones((1, 4, 9), np.float32)      # 2x2 blocks at 3x3 positions of a 4x4 image
    >>> pooling.col2im(cols, (4, 4), (2, 2))
    array([[[[1., 2., 2., 1.],
             [2., 4., 4., 2.],
             [2., 4., 4., 2.],
             [1., 2., 2., 1.]]]], dtype=float32)
    >>> pooling.col2im([[[1, 2, 3], [4, 5, 6]]], [4], [2]).tolist()   # 1-D: library mode
    [[[1, 6, 8, 6]]]
    """
    arr = x if type(x) is np.ndarray else as_array(OP, "x", x)
    plan = _plan(arr.shape, image_shape=image_shape, block_shape=block_shape, strides=strides, pads=pads,
                 dilations=dilations, opset=opset)
    xk, kind = as_kernel_array(OP, "x", arr, KINDS)
    xk = xk.view(_STORAGE.get(kind, xk.dtype))
    nt = resolve_n_threads(OP, n_threads, xk.size)
    y = output_array(OP, "out", out, plan.out_shape, result_dtype(arr.dtype), ("the input x", arr))
    if y.size:
        _run(plan, xk, y.view(xk.dtype), HALF_INF_BITS.get(kind, 0), nt)
    return y


@cached_plan(OP)
def _plan(x_shape, image_shape, block_shape, strides, pads, dilations, opset):
    version = resolve_version(OP, opset)
    if len(x_shape) != 3:
        raise ValueError(f"{OP}: x must have rank 3 (N, C*prod(block_shape), L), got shape {list(x_shape)}")
    image = _shape_input("image_shape", image_shape)
    block = _shape_input("block_shape", block_shape)
    n = len(image)
    if len(block) != n:
        raise ValueError(
            f"{OP}: image_shape and block_shape must have the same length, got "
            f"{list(image)} and {list(block)}"
        )
    if n == 0:
        raise ValueError(f"{OP}: image_shape must have at least 1 value, got []")
    if version is not None and n < 2:
        raise ValueError(
            f"{OP}: version {version} (opset {opset}) needs at least 2 spatial axes, got "
            f"image_shape {list(image)}; 1 axis is library mode (opset=None) only"
        )
    if n + 2 > _MAX_RANK:
        raise ValueError(f"{OP}: image_shape has {n} values; the output rank n + 2 must be <= {_MAX_RANK}")
    strides = int_tuple(OP, "strides", strides, n, 1, 1)
    dilations = int_tuple(OP, "dilations", dilations, n, 1, 1)
    pads = int_tuple(OP, "pads", pads, 2 * n, 0, 0)
    for i in range(n):
        if image[i] + pads[i] + pads[i + n] >= INDEX_LIMIT:
            raise past_limit(OP, f"image_shape plus pads on axis {i} ({image[i] + pads[i] + pads[i + n]})")

    kernel_size = math.prod(block)
    channels, length = x_shape[1], x_shape[2]
    if channels == 0 or channels % kernel_size:
        raise ValueError(
            f"{OP}: x.shape[1] = {channels} must be a positive multiple of prod(block_shape) = "
            f"{kernel_size} (block_shape {list(block)})"
        )
    nblocks = []
    for i in range(n):
        dilated = (block[i] - 1) * dilations[i] + 1
        nb = (image[i] + pads[i] + pads[i + n] - dilated) // strides[i] + 1
        if nb < 1:
            raise ValueError(
                f"{OP}: no block fits on axis {i}: image size {image[i]} with pads "
                f"({pads[i]}, {pads[i + n]}) is smaller than the dilated block {dilated} "
                f"(block_shape {list(block)}, dilations {list(dilations)})"
            )
        nblocks.append(nb)
    if length != math.prod(nblocks):
        raise ValueError(
            f"{OP}: x.shape[2] = {length} must equal the number of blocks, {math.prod(nblocks)} "
            f"(blocks per axis {nblocks} from image_shape {list(image)}, block_shape {list(block)}, "
            f"strides {list(strides)}, "
            f"pads {list(pads)}, dilations {list(dilations)})"
        )
    out_shape = (x_shape[0], channels // kernel_size) + image
    check_size(OP, x_shape, "input")
    check_size(OP, out_shape)

    xstep = [math.prod(nblocks[i + 1:]) for i in range(n)]
    ystep = [math.prod(image[i + 1:]) for i in range(n)]
    geom = np.array([block, image, nblocks, strides, dilations, pads[:n], xstep, ystep],
                    dtype=np.intp)
    geom.flags.writeable = False
    return _Plan(out_shape, kernel_size, geom)


def _shape_input(name, value):
    """image_shape / block_shape: a 1-D sequence or integer array of values >= 1."""
    if not isinstance(value, (list, tuple, np.ndarray)) or getattr(value, "ndim", 1) != 1:
        raise TypeError(f"{OP}: {name} must be a 1-D sequence of integers, got {value!r}")
    return int_tuple(OP, name, value, len(value), 1, 1)


def _run(plan, xk, y, inf_bits, nt):
    """Cut the planes into work items and call the kernel: the gather for a strided last axis, the
    scatter for stride 1 (docs/tuning.md#col2im-gather)."""
    n_img, channels = plan.out_shape[:2]
    image = plan.out_shape[2:]
    planes = n_img * channels
    rows, items = split_rows(planes, image[0], nt)
    acc, prefetch = None, False
    if plan.geom[3, -1] == 1:
        # A work item of the scatter is revisited once per kernel offset: it stays within the
        # core's cache.
        row = math.prod(image[1:])  # output elements per position on the first axis
        most = _tuning.col2im_item_bytes() // (4 if inf_bits else xk.dtype.itemsize)
        if rows * row > most:
            rows = max(1, most // row)
            items = planes * -(-image[0] // rows)
        if inf_bits:
            acc = np.empty((min(nt, items), rows * row), dtype=np.float32)
        prefetch = _RUN_PREFETCH
    else:
        prefetch = _tuning.col2im_prefetch(xk.nbytes // max(planes, 1))
    # Planes an item takes, where the register rows serve a 2-D grid (the kernel decides that; a
    # plane split into blocks of rows is its own item)
    group = 1
    if rows == image[0] and len(image) == 2:
        group = _GROUP or _group(xk.nbytes + y.nbytes, planes, items, nt)
    kernel = _core.col2im[C_TYPES[xk.dtype]]  # named, never picked from the array (int16 vs float16)
    kernel(xk.reshape(planes, plan.kernel_size, -1), y.reshape(planes, -1), acc, plan.geom, rows,
           prefetch, _REGISTERS, _GAPS, inf_bits, min(nt, items), group)


def _group(nbytes, planes, items, nt):
    """Planes per work item of the register rows: as many as fit _tuning.col2im_group_bytes with
    their columns and image (nbytes for the call's planes), while each thread still has 8 items to
    share (the pool's balance)."""
    fit = _tuning.col2im_group_bytes(nbytes) * planes // max(nbytes, 1)
    return max(1, min(fit, items // (8 * nt)))
