"""The MaxPool gradient: scatter-add of dy at MaxPool's Indices (behaviour.md §6.3)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._attrs import check_size, choice, layout_blocks, shape_tuple, split_layout
from ._dispatch import core as _core
from ._dtypes import C_TYPES, HALF_INF_BITS, as_array, as_kernel_array, result_dtype
from ._outputs import fresh_zeros, output_array
from ._threads import resolve_n_threads
from .indices import (as_int64, check_format, check_lead, first_bad, index_range, integer_array, out_of_range,
                      recode)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ._attrs import Int, Layout
    from .indices import IndexFormat

OP = "max_pool_grad"

KINDS = ("float16", "bfloat16", "float32", "float64")


def max_pool_grad(grad_y: ArrayLike, indices: ArrayLike, x_shape: Sequence[Int], *,
                  index_format: IndexFormat = "onnx", layout: Layout = "NCHW",
                  n_threads: Int | None = None, out: NDArray[Any] | None = None) -> NDArray[Any]:
    """The gradient of MaxPool with respect to x: `grad_y` added into zeros of `x_shape` at `indices`.

    ``dx.flat[target(indices.flat[j])] += grad_y.flat[j]`` for every element ``j`` of `grad_y`, in
    row-major order, so overlapping windows that share a winner add up; -1 (an empty window)
    contributes nothing. This is what autograd frameworks compute for max pooling.

    Parameters
    ----------
    grad_y : array_like
        The gradient of the pooled output, shaped like it: ``(N, C, O_1, ..., O_n)``, or ``(N,
        O_1, ..., O_n, C)`` with ``layout="NHWC"``; float16, bfloat16, float32 or float64.
    indices : array_like of int
        The shape of `grad_y`: where each maximum came from, in `index_format`, as
        ``max_pool(..., return_indices=True, index_format=...)`` returns them. Any integer dtype.
    x_shape : sequence of int
        Shape of the pooled input x (and of the result): the rank, N and C of `grad_y`.
    index_format : {"onnx", "plane", "tf", "tf_batch"}, default "onnx"
        The encoding of `indices` (see `convert_indices`).
    layout : {"NCHW", "NHWC"}, default "NCHW"
        Where the channels are in `grad_y`, `indices` and `x_shape`.
    n_threads : int, optional
        Threads: None (default) OpenMP's maximum for the calling thread, -1 all, -k all but k - 1;
        0 is a ValueError. Results never depend on it, to the bit.
    out : numpy.ndarray, optional
        Buffer for the result: writeable, aligned, C-contiguous, of exactly its shape and dtype,
        overlapping no input. Written and returned. Default None: a new array.

    Returns
    -------
    numpy.ndarray
        Shape `x_shape`, `grad_y`'s dtype in native byte order.

    Raises
    ------
    ValueError
        An index outside its encoding's range other than -1 (the message names the first one;
        `out` may then be partly written), `indices` of another shape than `grad_y`, `x_shape` of
        another rank or N or C, an unknown format or layout, an unusable `out`, sizes past 2**62.
    TypeError
        `grad_y` not a float array of a supported dtype, `indices` not integers, a wrongly typed
        argument.

    See Also
    --------
    max_pool : makes `indices` (``return_indices=True``).
    convert_indices : the index formats.

    Notes
    -----
    Every element of the result sums its terms in row-major order of `grad_y`, for every
    `n_threads` (each plane, NHWC image, or band of an NHWC image's rows when there are fewer images
    than threads, is summed by one thread; indices that point where no thread of theirs looks are
    summed in one ordered pass). float16 and bfloat16 are
    summed in float32 and rounded once. Every format, "plane" included, is read as row-major
    positions: indices made with ``max_pool(..., storage_order=1)`` (column-major, "onnx" or
    "plane") do not give this gradient. docs/behaviour.md, section 6, has every rule.

    Examples
    --------
    >>> import numpy as np
    >>> import pooling
    >>> x = np.array([[[1.0, 3.0, 2.0, 0.0]]])
    >>> y, indices = pooling.max_pool(x, 2, return_indices=True)   # windows overlap (stride 1)
    >>> indices.tolist()
    [[[1, 1, 2]]]
    >>> pooling.max_pool_grad(np.ones_like(y), indices, x.shape)
    array([[[0., 2., 1., 0.]]])
    """
    g = grad_y if type(grad_y) is np.ndarray else as_array(OP, "grad_y", grad_y)
    idx = integer_array(OP, "indices", indices)
    shape = shape_tuple(OP, "x_shape", x_shape)
    choice(OP, "layout", layout, ("NCHW", "NHWC"))
    check_format(OP, "index_format", index_format, layout)
    lead, spatial = split_layout(OP, shape, layout)
    if idx.shape != g.shape:
        raise ValueError(f"{OP}: indices must have the shape of grad_y {list(g.shape)}, got {list(idx.shape)}")
    check_lead(OP, "grad_y", g.shape, shape, layout)
    check_size(OP, shape)
    gk, kind = as_kernel_array(OP, "grad_y", g, KINDS)
    ik = as_int64(OP, "indices", idx)
    dtype = result_dtype(g.dtype)
    # A large fresh result may come zeroed from calloc, as MaxUnpool's does (_outputs.fresh_zeros).
    zeroed = out is None and dtype.itemsize >= 4 and fresh_zeros(math.prod(shape) * dtype.itemsize)
    y = output_array(OP, "out", out, shape, dtype, ("the input grad_y", g), ("the input indices", idx),
                     zeros=zeroed)
    nt = resolve_n_threads(OP, n_threads, gk.size + y.size)
    plane = math.prod(spatial)
    limit = index_range(index_format, lead, plane)
    if layout == "NCHW" and index_format in ("tf", "tf_batch"):
        # Channels-last encodings of NCHW planes: read as flat offsets first (a pass of their own).
        ik = recode(OP, "indices", ik, shape, layout, index_format, "onnx")
        index_format, limit = "onnx", index_range("onnx", lead, plane)
    if not y.size:
        where = first_bad(ik, 0)
        if where is not None:
            raise out_of_range(OP, "indices", idx, where, index_format, 0, shape, layout)
        return y
    blocks = layout_blocks(lead, layout)
    part = y.size // blocks
    channels = lead[1]
    a, cc, base = 1, 0, part  # "onnx", and NHWC "tf_batch"
    if index_format == "plane":
        a, cc, base = (1, 0, 0) if layout == "NCHW" else (channels, 1, 0)
    elif index_format == "tf":  # NHWC: the offset inside the image
        base = 0
    inf_bits = HALF_INF_BITS.get(kind, 0)
    groups = _row_bands(layout, blocks, g.shape[1], nt, inf_bits)
    status = _run(gk, ik, y.view(gk.dtype), blocks, channels, limit, a, cc, base, inf_bits, zeroed,
                  min(nt, blocks * groups), groups, g.shape[1], shape[1])
    if status == 1 and groups > 1:
        # Some target lies where no band's thread looks (an index beyond its window's rows, which
        # MaxPool's never are): the images whole again, each by one thread.
        status = _run(gk, ik, y.view(gk.dtype), blocks, channels, limit, a, cc, base, inf_bits, False,
                      min(nt, blocks))
    if status == 1:
        # Some index points into another plane (or image) than its own, which no thread of the
        # plane's may write: the whole sum again, as one part on one thread, in order.  Only the
        # flat-offset formula (a, cc, base) = (1, 0, part) reaches past its part ("onnx", NHWC
        # "tf_batch", and NCHW "tf"/"tf_batch" recoded to "onnx" above): as one part, base is 0.
        assert (a, cc, base) == (1, 0, part), (index_format, layout)
        status = _run(gk, ik, y.view(gk.dtype), 1, channels, limit, 1, 0, 0, inf_bits, False, 1)
    if status == 2:
        where = first_bad(ik, limit)
        raise out_of_range(OP, "indices", idx, where, index_format, limit, shape, layout)
    return y


# NHWC images are cut into bands of at least this many rows of grad_y when there are fewer images
# than threads: a band's thread also reads the rows of its neighbours' whose windows reach into its
# slice (one or two rows on either side for the usual windows), a small share of a band this long.
_BAND_ROWS = 4


def _row_bands(layout, images, rows, nt, inf_bits=0):
    """Bands of rows per NHWC image, each summed by one thread: enough for nt threads where there
    are fewer images than threads (N=1), else 1.  rows: grad_y's first spatial axis.  float32 and
    float64 only (inf_bits 0): 16-bit floats are summed in float32 scratch a whole image at a time
    (docs/tuning.md#max_pool_grad-nhwc-bands-of-rows)."""
    if layout != "NHWC" or images >= nt or inf_bits:
        return 1
    return max(1, min(-(-nt // images), rows // _BAND_ROWS))


def _run(gk, ik, yk, blocks, channels, limit, a, cc, base, inf_bits, zeroed, nt, groups=1, rows_out=1, rows_in=1):
    """The kernel's status (0 written, 1 a target outside its part, 2 an index out of range)."""
    # 16-bit floats' float32 sums, a row per thread, a page (1024 floats) longer than a part, so
    # that no two threads' parts share a page (docs/tuning.md#per-thread-scratch-a-page-apart)
    acc = np.empty((nt, yk.size // blocks + 1024), np.float32) if inf_bits else None
    status = _core.max_pool_grad[C_TYPES[gk.dtype]](gk.reshape(-1), ik.reshape(-1), yk.reshape(-1), acc,
                                                    blocks, channels, limit, a, cc, base, inf_bits, zeroed,
                                                    nt, groups, rows_out, rows_in)
    if status == -2:  # the kernel's contract on its arguments, which the checks above keep
        raise RuntimeError(f"{OP}: internal error: the kernel rejected its arguments")
    return status


def gathers(kernel, strides, dilations, dtype):
    """Whether pooling.torch's channels-last backward gathers dx from the windows (`_grad_windows`)
    rather than scatter it: float32 and float64 through windows that do not overlap (strides >=
    kernel, no dilation), and float32 where at most this build's GRAD_COVER_F32 windows lie over one
    pixel (docs/tuning.md#max_pool_grad-nhwc-gathered-from-the-windows)."""
    if set(dilations) != {1} or dtype not in (np.float32, np.float64):
        return False
    cover = math.prod(-(-k // s) for k, s in zip(kernel, strides))
    return cover == 1 or (dtype == np.float32 and cover <= _core.GRAD_COVER_F32)


def _grad_windows(grad_y, indices, x_shape, kernel, strides, pads_begin, n_threads):
    """pooling.torch's backward on channels-last tensors (`gathers`): dx of `x_shape` (N, *spatial, C)
    from grad_y and the "plane" indices its own forward wrote, each element of dx written once, the sum
    of the windows over it whose index names it (the kernel max_pool_grad_windows).  The same bits as
    max_pool_grad for such indices; an index outside its window is a term left out."""
    n = len(x_shape) - 2
    pad = (1,) * (3 - n)  # ranks 1 and 2 as 3-D: leading spatial axes of 1
    g = np.ascontiguousarray(grad_y).reshape(grad_y.shape[:1] + pad + grad_y.shape[1:])
    idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(g.shape)
    y = output_array(OP, "out", None, x_shape, g.dtype)
    status = _core.max_pool_grad_windows[C_TYPES[g.dtype]](
        g, idx, y.reshape(x_shape[:1] + pad + tuple(x_shape[1:])), pad + tuple(kernel), pad + tuple(strides),
        (0,) * (3 - n) + tuple(pads_begin), n_threads)
    if status:
        raise RuntimeError(f"{OP}: internal error: the windows' kernel rejected its arguments")
    return y
