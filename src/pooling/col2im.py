"""Col2Im: validation, output shape, dispatch to the kernel (behaviour.md §4)."""
import math
from typing import NamedTuple

import numpy as np

from ._dispatch import core as _core
from ._attrs import INDEX_LIMIT, cached_plan, check_size, int_tuple, past_limit, resolve_version, shape_tuple
from ._dtypes import C_TYPES, HALF_INF_BITS, as_kernel_array, result_dtype
from ._outputs import output_array
from ._threads import resolve_n_threads, split_rows

OP = "Col2Im"

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

# Elements of output a work item covers at most: it is revisited once per
# kernel offset, so it should stay in the core's cache.
_ITEM_ELEMENTS = 1 << 16


class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes."""
    out_shape: tuple        # (N, C, S_1..S_n)
    kernel_size: int        # K = prod(block_shape)
    geom: np.ndarray        # the kernel's geometry table, read-only


def col2im_output_shape(x_shape, image_shape, block_shape, *, strides=None, pads=None,
                        dilations=None, opset=None):
    """Output shape of col2im for an input of shape `x_shape` (same validation, no data)."""
    return _plan(shape_tuple(OP, "x_shape", x_shape), image_shape=image_shape, block_shape=block_shape,
                 strides=strides, pads=pads, dilations=dilations, opset=opset).out_shape


def col2im(x, image_shape, block_shape, *, strides=None, pads=None, dilations=None, opset=None,
           n_threads=None, out=None):
    """ONNX Col2Im: columns (N, C*K, L) back into images (N, C, *image_shape).

    K = prod(block_shape) and L is the number of blocks (block_shape, dilated,
    slid with `strides` over the image padded by `pads`).  Every column element
    is added at its image position; those in the padding are dropped.  bool
    adds by logical or, integers wrap around, float16 and bfloat16 are summed
    in float32 and rounded once; each pixel sums its terms in the same order
    for every n_threads.  ``opset=18`` enforces the operator document (at least
    2 spatial axes); the default, library mode, also allows 1.
    docs/behaviour.md section 4 has every rule.
    """
    arr = np.asarray(x)
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
    """Cut the planes into work items and call the kernel."""
    n_img, channels = plan.out_shape[:2]
    image = plan.out_shape[2:]
    planes = n_img * channels
    row = math.prod(image[1:])  # output elements per position on the first axis
    rows, items = split_rows(planes, image[0], nt)
    if rows * row > _ITEM_ELEMENTS:
        rows = max(1, _ITEM_ELEMENTS // row)
        items = planes * -(-image[0] // rows)
    nt = min(nt, items)
    acc = np.empty((nt, rows * row), dtype=np.float32) if inf_bits else None
    kernel = _core.col2im[C_TYPES[xk.dtype]]  # named, never picked from the array (int16 vs float16)
    kernel(xk.reshape(planes, plan.kernel_size, -1), y.reshape(planes, -1), acc, plan.geom, rows, inf_bits, nt)
