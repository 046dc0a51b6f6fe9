"""MaxPool, MaxUnpool and Col2Im on Dask arrays, exact across chunk boundaries (docs/dask.md).

Needs the optional ``dask`` extra (``pip install "pooling-kernels[dask]"``); ``import pooling``
never imports dask, ``import pooling.dask`` does.

Each output block is one task that reads the input blocks its windows reach (the halo), cuts out
the slab it needs and calls the in-memory function on it, with the global padding that falls in
the slab as explicit pads: every window is computed once, from the same elements in the same
order, so results equal the in-memory call on the whole array bit for bit, for every chunking.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
from typing import TYPE_CHECKING, overload

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ._attrs import int_tuple, split_layout
from ._dtypes import checked_kind, result_dtype
from .indices import encode, split_flat
from ._threads import resolve_n_threads
from .col2im import KINDS as _COL2IM_KINDS
from .col2im import _plan as _col2im_plan
from .col2im import col2im as _col2im
from .maxpool import _plan as _pool_plan
from .maxpool import max_pool as _max_pool
from .maxunpool import _plan as _unpool_plan
from .maxunpool import max_unpool as _max_unpool

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal

    from numpy.typing import NDArray

    from ._attrs import Activation, AutoPad, Int, Ints, Layout, Shape
    from .indices import IndexFormat

__all__ = ["col2im", "max_pool", "max_unpool"]


# -- MaxPool ---------------------------------------------------------------------------------------

@overload
def max_pool(x: da.Array, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: Literal[False] = False, layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = 1, index_format: IndexFormat = "onnx") -> da.Array: ...
@overload
def max_pool(x: da.Array, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: Literal[True], layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = 1, index_format: IndexFormat = "onnx") -> tuple[da.Array, da.Array]: ...
@overload
def max_pool(x: da.Array, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: bool, layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = 1,
             index_format: IndexFormat = "onnx") -> da.Array | tuple[da.Array, da.Array]: ...


def max_pool(x: da.Array, kernel_shape: Ints, *, strides: Ints | None = None, pads: Ints | None = None,
             dilations: Ints | None = None, auto_pad: AutoPad = "NOTSET", ceil_mode: bool | int = False,
             storage_order: int = 0, return_indices: bool = False, layout: Layout = "NCHW",
             activation: Activation | None = None,
             activation_params: Sequence[float] | NDArray[Any] | None = None, opset: Int | None = None,
             n_threads: Int | None = 1, index_format: IndexFormat = "onnx") -> Any:
    """ONNX MaxPool of a Dask array, lazily: `pooling.max_pool` block by block, with halos.

    Parameters
    ----------
    x : dask.array.Array
        Input of shape ``(N, C, D_1, ..., D_n)``, or ``(N, D_1, ..., D_n, C)`` with
        ``layout="NHWC"``, chunked along any axes (chunk sizes known); the dtypes of
        `pooling.max_pool`.
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
        1: Indices column-major inside each plane; NCHW only.
    return_indices : bool, default False
        Also return the Indices output, as a second Dask array.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        Where the channels are.
    activation : {"Relu", "Clip"}, optional
        Applied to `y`, as by `pooling.max_pool`. Default None: none.
    activation_params : sequence of float, optional
        ``[min, max]`` for "Clip". Default None.
    opset : int, optional
        ONNX opset whose MaxPool version is enforced. Default None: library mode.
    n_threads : int or None, default 1
        Threads of each task's kernel call, as `pooling.max_pool` takes them. Default 1: Dask's
        own workers are the parallelism (see Notes); None: OpenMP's maximum in every task.
    index_format : {"onnx", "plane", "tf", "tf_batch"}, default "onnx"
        The Indices' encoding, as in `pooling.max_pool` (docs/behaviour.md section 6); every
        format is global, as the in-memory call's.

    Returns
    -------
    y : dask.array.Array
        Lazy; computes to exactly ``pooling.max_pool(x.compute(), ...)``. Chunked like `x` along N
        and C; along a spatial axis, an input chunk boundary ``b`` becomes the output boundary
        ``ceil((b + pad_begin) / stride)`` (the first window that starts at or after ``b``), so
        every output chunk is aligned to the stride.
    indices : dask.array.Array of int64
        Only with ``return_indices=True``, which returns ``(y, indices)``: chunked like `y`, the
        Indices of the in-memory call (by default flat offsets into the whole of `x`), in
        `index_format`.

    Raises
    ------
    TypeError
        `x` not a Dask array; a dtype or argument type `pooling.max_pool` rejects.
    ValueError
        Chunk sizes not known (call ``x.compute_chunk_sizes()``); any attribute value
        `pooling.max_pool` rejects, with its message, when the graph is built.

    See Also
    --------
    pooling.max_pool : the in-memory operator and every rule of its result.

    Notes
    -----
    The output block ``[o0, o1)`` of a spatial axis needs the input range ``[o0*s - pb, (o1-1)*s -
    pb + (k-1)*d + 1)``: one task reads the input blocks that meet it (several, where chunks are
    smaller than the window), and pools the slab with the part of the global padding that falls
    in it (ceil_mode and auto_pad are resolved for the whole array first). Each output chunk is
    one task (with `return_indices`, plus one selection task per output), and each part of an
    input block it reads that is not the whole block (such as a halo) one more, which lets Dask
    free the block early.

    With Dask's threaded scheduler every worker thread runs one task, so each kernel call uses
    one thread by default; with one thread per Dask worker process, ``n_threads=None`` lets each
    call use every core OpenMP allows.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import pooling, pooling.dask
    >>> x = da.from_array(np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8), chunks=(1, 1, 3, 5))
    >>> y = pooling.dask.max_pool(x, 3, strides=2, pads=1)
    >>> y.chunks
    ((1,), (1,), (2, 2), (3, 1))
    >>> bool((y.compute() == pooling.max_pool(x.compute(), 3, strides=2, pads=1)).all())
    True
    >>> y, i = pooling.dask.max_pool(x, 2, strides=2, return_indices=True)
    >>> i.compute()[0, 0, 0].tolist()
    [9, 11, 13, 15]
    """
    arr = _dask_array(_POOL, "x", x)
    plan = _pool_plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads,
                      dilations=dilations, auto_pad=auto_pad, ceil_mode=ceil_mode,
                      storage_order=storage_order, return_indices=return_indices, layout=layout,
                      activation=activation, activation_params=activation_params, opset=opset,
                      index_format=index_format)
    checked_kind(_POOL, "x", arr.dtype, plan.kinds)
    resolve_n_threads(_POOL, n_threads)
    first = 2 if layout == "NCHW" else 1
    out_chunks, spans = [], []
    for axis, size in enumerate(arr.shape):
        i = axis - first
        if 0 <= i < len(plan.spatial):
            s, pb = plan.strides[i], plan.pads_begin[i]
            e = (plan.kernel[i] - 1) * plan.dilations[i] + 1
            chunks = _cut(arr.chunks[axis], lambda b, s=s, pb=pb: -(-(b + pb) // s), plan.out_shape[axis])
            spans.append([_pool_span(o0, o1, s, pb, e, size) for o0, o1 in _ranges(chunks)])
        else:
            chunks = arr.chunks[axis]
            spans.append([(o0, o1, 0, 0) for o0, o1 in _ranges(chunks)])
        out_chunks.append(chunks)
    local = dict(kernel_shape=plan.kernel, strides=plan.strides, dilations=plan.dilations,
                 layout=layout, activation=activation, activation_params=activation_params,
                 n_threads=n_threads, return_indices=return_indices)
    column_major = plan.storage_order == 1 and len(plan.spatial) > 1

    def task(index, slab):
        axes = [spans[a][b] for a, b in enumerate(index)]
        pads = tuple(p[2] for p in axes[first:first + len(plan.spatial)])
        pads += tuple(p[3] for p in axes[first:first + len(plan.spatial)])
        call = functools.partial(_pool_block, pads=pads, local=local, offsets=[p[0] for p in axes],
                                 shape=arr.shape, column_major=column_major, first=first,
                                 index_format=index_format, layout=layout)
        return (call, slab(arr, [p[:2] for p in axes]))

    dtype = result_dtype(arr.dtype)
    token = tokenize(arr, plan.out_shape, plan.kernel, plan.strides, plan.dilations, plan.pads_begin,
                     plan.storage_order, layout, activation, plan.activation_params, n_threads,
                     return_indices, index_format)
    if not return_indices:
        return _array(f"max-pool-{token}", out_chunks, [arr], task, dtype)
    pairs = _array(f"max-pool-pair-{token}", out_chunks, [arr], task, dtype)
    return _part(pairs, 0, dtype), _part(pairs, 1, np.dtype(np.int64))


def _pool_span(o0, o1, s, pb, e, size):
    """(input lo, hi, local pad begin, local pad end) of the outputs [o0, o1) on one axis."""
    start, stop = o0 * s - pb, (o1 - 1) * s - pb + e
    lo, hi = min(max(start, 0), size), max(min(stop, size), 0)
    if lo >= hi:  # every window here lies in the padding: an empty slab, padded to its windows
        return lo, lo, 0, max(stop - start, 0)
    return lo, hi, lo - start, stop - hi


def _pool_block(slab, *, pads, local, offsets, shape, column_major, first, index_format, layout):
    """One output block: `pooling.max_pool` of the slab; Indices made global, in `index_format`."""
    result = _max_pool(slab, pads=pads, **local)
    if not local["return_indices"]:
        return result
    y, indices = result
    valid = indices >= 0
    coords = np.unravel_index(indices[valid], slab.shape)
    coords = [c + o for c, o in zip(coords, offsets)]
    if column_major:  # storage_order=1: plane * plane size + column-major offset in the plane
        spatial = shape[first:]
        plane = coords[0] * shape[1] + coords[1]
        flat = plane * math.prod(spatial) + np.ravel_multi_index(coords[first:], spatial, order="F")
    else:
        flat = np.ravel_multi_index(coords, shape)
    if index_format != "onnx":  # every format is a function of the global flat offset
        lead, spatial = split_layout(_POOL, shape, layout)
        plane_size = math.prod(spatial)
        flat = encode(index_format, *split_flat(flat, lead[1], plane_size, layout), lead, plane_size, layout)
    indices[valid] = flat
    return y, indices


# -- MaxUnpool -------------------------------------------------------------------------------------

def max_unpool(x: da.Array, indices: da.Array, kernel_shape: Ints, *, strides: Ints | None = None,
               pads: Ints | None = None, output_shape: Shape | None = None, layout: Layout = "NCHW",
               opset: Int | None = None, dilations: Ints | None = None,
               chunks: Any = None, n_threads: Int | None = 1) -> da.Array:
    """ONNX MaxUnpool of Dask arrays, lazily: each output block gathers the entries that land in it.

    Parameters
    ----------
    x : dask.array.Array
        Pooled values of shape ``(N, C, D_1, ..., D_n)`` (``(N, D_1, ..., D_n, C)`` with
        ``layout="NHWC"``); the dtypes of `pooling.max_unpool`.
    indices : dask.array.Array of int
        The shape of `x` (any chunks): global flat offsets into the output, as
        `pooling.dask.max_pool` returns them by default (``index_format="onnx"``; other encodings
        can be converted block by block with `pooling.convert_indices`).
    kernel_shape : int or sequence of int
        Window size per spatial axis, each >= 1, as in the `max_pool` that made `indices`.
    strides : int or sequence of int, optional
        Step per spatial axis, each >= 1. Default None: 1.
    pads : int or sequence of int, optional
        ``2n`` values, all begins then all ends, each >= 0, as in that `max_pool` (with
        ``auto_pad``: the pads it resolved to). Default None: 0. They set the output shape unless
        `output_shape` is given, and where each window lies in either case.
    output_shape : sequence of int or 1-D integer array, optional
        The full output shape, with the N and C of `x`. Default None: inferred as by
        `pooling.max_unpool`.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        Where the channels are.
    opset : int, optional
        ONNX opset whose MaxUnpool version is enforced. Default None: library mode.
    dilations : int or sequence of int, optional
        Dask only: the dilations of the `max_pool` that made `indices`, which widen each window.
        Default None: 1.
    chunks : tuple or str, optional
        Chunks of the output, in any form ``dask.array`` takes (such as the ``chunks`` of the
        array that was pooled). Default None: `x`'s chunks along N and C, and along a spatial axis
        a chunk boundary ``o`` of `x` becomes ``o * stride - pad_begin``.
    n_threads : int or None, default 1
        Threads of each task's kernel call. Default 1 (see `pooling.dask.max_pool`).

    Returns
    -------
    y : dask.array.Array
        Lazy; computes to exactly ``pooling.max_unpool(x.compute(), indices.compute(), ...)``.

    Raises
    ------
    TypeError
        `x` or `indices` not a Dask array; a dtype or argument type `pooling.max_unpool` rejects.
    ValueError
        When the graph is built: `indices` of another shape than `x`, chunk sizes not known, what
        `pooling.max_unpool` rejects. When computed: an index outside ``[0, y.size)``, or one
        outside the window of its element (so outside the blocks that read that element).

    See Also
    --------
    pooling.max_unpool : the in-memory operator.
    max_pool : makes `x` and `indices`.

    Notes
    -----
    Element ``p`` of `x` (per spatial axis) came from the window ``[p*s - pb, p*s - pb + (k-1)*d
    + 1)``; an output block reads the elements whose windows meet it, and scatters those that
    land in it, in row-major order, so the last write wins as in memory. Indices of `max_pool`
    always lie in their windows (storage_order=0); any other index is a ValueError naming it
    (raised by the block whose range holds the window's start), never a silently dropped write.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import pooling, pooling.dask
    >>> x = da.from_array(np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6), chunks=(1, 1, 4, 4))
    >>> y, i = pooling.dask.max_pool(x, 2, strides=2, return_indices=True)
    >>> back = pooling.dask.max_unpool(y, i, 2, strides=2, chunks=x.chunks)
    >>> back.chunks
    ((1,), (1,), (4, 2), (4, 2))
    >>> back.compute()[0, 0, :2].tolist()
    [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 7.0, 0.0, 9.0, 0.0, 11.0]]
    """
    arr = _dask_array(_UNPOOL, "x", x)
    idx = _dask_array(_UNPOOL, "indices", indices)
    plan = _unpool_plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads,
                        output_shape=output_shape, layout=layout, opset=opset)
    if idx.shape != arr.shape:
        raise ValueError(f"{_UNPOOL}: indices must have the shape of x {list(arr.shape)}, got {list(idx.shape)}")
    checked_kind(_UNPOOL, "x", arr.dtype, plan.kinds)
    checked_kind(_UNPOOL, "indices", idx.dtype, plan.index_kinds)
    resolve_n_threads(_UNPOOL, n_threads)
    n = arr.ndim - 2
    kernel = int_tuple(_UNPOOL, "kernel_shape", kernel_shape, n, 1, 1)
    steps = int_tuple(_UNPOOL, "strides", strides, n, 1, 1)
    begins = int_tuple(_UNPOOL, "pads", pads, 2 * n, 0, 0)[:n]
    dil = int_tuple(_UNPOOL, "dilations", dilations, n, 1, 1)
    first = 2 if layout == "NCHW" else 1
    dtype = result_dtype(arr.dtype)
    out_shape = plan.out_shape
    # Per axis: (stride, pad begin, window extent); N and C map each position to itself.
    geometry = [(1, 0, 1)] * arr.ndim
    for i in range(n):
        geometry[first + i] = (steps[i], begins[i], (kernel[i] - 1) * dil[i] + 1)
    if chunks is None:
        out_chunks = [
            _cut(arr.chunks[a], lambda o, s=s, pb=pb: o * s - pb, out_shape[a])
            for a, (s, pb, _) in enumerate(geometry)]
    else:
        out_chunks = list(da.core.normalize_chunks(chunks, out_shape, dtype=dtype))
    spans = [[_unpool_span(a0, a1, size, arr.shape[a], *geometry[a])
              for a0, a1 in _ranges(out_chunks[a])]
             for a, size in enumerate(out_shape)]

    def task(index, slab):
        axes = [spans[a][b] for a, b in enumerate(index)]
        call = functools.partial(_unpool_block, starts=[p[0] for p in axes], owned=[p[2:4] for p in axes],
                                 block=[p[4:] for p in axes], geometry=geometry, shape=out_shape,
                                 n_threads=n_threads)
        return (call, slab(arr, [p[:2] for p in axes]), slab(idx, [p[:2] for p in axes]))

    token = tokenize(arr, idx, out_shape, geometry, out_chunks, n_threads)
    return _array(f"max-unpool-{token}", out_chunks, [arr, idx], task, dtype)


def _unpool_span(a, b, size, pooled, s, pb, e):
    """(first, last + 1 element of x read, first, last + 1 owned, a, b) for the output range [a, b).

    Element p's window is [p*s - pb, p*s - pb + e); the block holding its start (clipped to the
    output) owns it: checks its index. The block reads every element whose window meets it."""
    own_lo = 0 if a == 0 else -(-(a + pb) // s)
    own_hi = pooled if b == size else -(-(b + pb) // s)
    own_lo, own_hi = min(max(own_lo, 0), pooled), min(max(own_hi, 0), pooled)
    meet_lo = min(max(-(-(a + pb - e + 1) // s), 0), pooled)
    meet_hi = min(max((b - 1 + pb) // s + 1, 0), pooled)
    ranges = [(lo, hi) for lo, hi in ((own_lo, own_hi), (meet_lo, meet_hi)) if lo < hi]
    lo = min((r[0] for r in ranges), default=own_lo)
    hi = max((r[1] for r in ranges), default=own_lo)
    return lo, hi, own_lo, own_hi, a, b


def _unpool_block(x, indices, *, starts, owned, block, geometry, shape, n_threads):
    """One output block: check the indices of the elements it owns, scatter those that land in it."""
    idx = indices.astype(np.int64, copy=False)
    valid = (idx >= 0) & (idx < math.prod(shape))
    coords = np.unravel_index(np.where(valid, idx, 0), shape)
    in_window = valid.copy()
    mine = np.ones(idx.shape, bool)
    inside = valid.copy()
    for axis, (c, (s, pb, e)) in enumerate(zip(coords, geometry)):
        pos = np.arange(starts[axis], starts[axis] + idx.shape[axis])
        view = [1] * idx.ndim
        view[axis] = -1
        offset = c - (pos * s - pb).reshape(view)
        in_window &= (offset >= 0) & (offset < e)
        mine &= ((pos >= owned[axis][0]) & (pos < owned[axis][1])).reshape(view)
        inside &= (c >= block[axis][0]) & (c < block[axis][1])
    bad = mine & ~in_window
    if bad.any():
        where = np.unravel_index(np.flatnonzero(bad)[0], idx.shape)
        at = [int(w) + st for w, st in zip(where, starts)]
        value = int(indices[where])
        if not valid[where]:
            raise ValueError(f"{_UNPOOL}: indices{at} = {value} is outside [0, {math.prod(shape)}), the flat "
                             f"range of the output of shape {list(shape)}")
        windows = [(p * s - pb, p * s - pb + e) for p, (s, pb, e) in zip(at, geometry)]
        raise ValueError(
            f"{_UNPOOL}: indices{at} = {value} (output position {[int(c[where]) for c in coords]}) is "
            f"outside the window of its element, {windows} per axis; pooling.dask.max_unpool scatters "
            "each element within its window only (kernel_shape, strides, pads and dilations of the "
            "max_pool that made the indices)")
    size = [hi - lo for lo, hi in block]
    local = np.ravel_multi_index([c[inside] - lo for c, (lo, _) in zip(coords, block)], size)
    values = np.asarray(x)[inside]
    flat = _max_unpool(values.reshape(1, 1, -1), local.reshape(1, 1, -1), 1,
                       output_shape=(1, 1, math.prod(size)), n_threads=n_threads)
    return flat.reshape(size)


# -- Col2Im ----------------------------------------------------------------------------------------

def col2im(x: da.Array, image_shape: Shape, block_shape: Shape, *, strides: Ints | None = None,
           pads: Ints | None = None, dilations: Ints | None = None, opset: Int | None = None,
           n_threads: Int | None = 1) -> da.Array:
    """ONNX Col2Im of a Dask array, lazily: chunked along N, C and the first image axis.

    Parameters
    ----------
    x : dask.array.Array
        Columns of shape ``(N, C * K, L)``, ``K = prod(block_shape)``, chunked along any axes;
        the dtypes of `pooling.col2im`.
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
    n_threads : int or None, default 1
        Threads of each task's kernel call. Default 1 (see `pooling.dask.max_pool`).

    Returns
    -------
    y : dask.array.Array
        ``(N, C, S_1, ..., S_n)``, lazy; computes to exactly ``pooling.col2im(x.compute(), ...)``.
        Chunked like `x` along N; along C at `x`'s boundaries divided by ``K`` (rounded up); along
        ``S_1`` where the chunks of ``L`` start new rows of blocks; whole along ``S_2, ...``.

    Raises
    ------
    TypeError
        `x` not a Dask array; a dtype or argument type `pooling.col2im` rejects.
    ValueError
        Chunk sizes not known; anything `pooling.col2im` rejects, when the graph is built.

    See Also
    --------
    pooling.col2im : the in-memory operator.

    Notes
    -----
    An output block of rows ``[a, b)`` of ``S_1`` reads the rows of blocks that reach it (a
    contiguous range of ``L``, whatever the chunks of ``L``) and adds them up with
    `pooling.col2im` on that strip: each pixel receives the same terms in the same order
    (increasing kernel offset) as in the call on the whole array, so the sums are exact to the
    bit for every chunking, float16 and bfloat16 (rounded once) included.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import pooling, pooling.dask
    >>> cols = da.ones((2, 4, 9), np.float32, chunks=(1, 4, 3))   # 2x2 blocks over 4x4 images
    >>> y = pooling.dask.col2im(cols, (4, 4), (2, 2))
    >>> y.chunks
    ((1, 1), (1,), (1, 1, 2), (4,))
    >>> y.compute()[0, 0].tolist()
    [[1.0, 2.0, 2.0, 1.0], [2.0, 4.0, 4.0, 2.0], [2.0, 4.0, 4.0, 2.0], [1.0, 2.0, 2.0, 1.0]]
    """
    arr = _dask_array(_COL2IM, "x", x)
    plan = _col2im_plan(arr.shape, image_shape=image_shape, block_shape=block_shape, strides=strides,
                        pads=pads, dilations=dilations, opset=opset)
    checked_kind(_COL2IM, "x", arr.dtype, _COL2IM_KINDS)
    resolve_n_threads(_COL2IM, n_threads)
    block, image, nblocks, steps, dil = (tuple(int(v) for v in row) for row in plan.geom[:5])
    n = len(image)
    all_pads = int_tuple(_COL2IM, "pads", pads, 2 * n, 0, 0)
    k, rows = plan.kernel_size, math.prod(nblocks[1:])
    s, pb, e = steps[0], all_pads[0], (block[0] - 1) * dil[0] + 1
    out_chunks = [arr.chunks[0],
                  _cut(arr.chunks[1], lambda b: -(-b // k), plan.out_shape[1]),
                  _cut(arr.chunks[2], lambda b: -(-b // rows) * s - pb, image[0])]
    out_chunks += [(size,) for size in image[1:]]
    n_spans = [(lo, hi) for lo, hi in _ranges(out_chunks[0])]
    c_spans = [(lo * k, hi * k) for lo, hi in _ranges(out_chunks[1])]
    r_spans = [_col2im_span(a, b, s, pb, e, nblocks[0]) for a, b in _ranges(out_chunks[2])]
    local = dict(block_shape=block, strides=steps, dilations=dil, n_threads=n_threads,
                 pads=(0,) + all_pads[1:n] + (0,) + all_pads[n + 1:])
    dtype = result_dtype(arr.dtype)

    def task(index, slab):
        r0, r1 = r_spans[index[2]]
        rows_at = _ranges(out_chunks[2])[index[2]]
        call = functools.partial(_col2im_block, rows=(r0, r1), at=rows_at, image=image, s=s, pb=pb, e=e,
                                 local=local, dtype=dtype)
        return (call, slab(arr, [n_spans[index[0]], c_spans[index[1]], (r0 * rows, r1 * rows)]))

    token = tokenize(arr, plan.out_shape, block, steps, dil, all_pads, n_threads)
    return _array(f"col2im-{token}", out_chunks, [arr], task, dtype)


def _col2im_span(a, b, s, pb, e, nb):
    """Rows of blocks [r0, r1) that reach the image rows [a, b)."""
    r0 = min(max(-(-(a + pb - e + 1) // s), 0), nb)
    r1 = min(max((b - 1 + pb) // s + 1, r0), nb)
    return r0, r1


def _col2im_block(slab, *, rows, at, image, s, pb, e, local, dtype):
    """Rows [a, b) of the image: Col2Im of the strip of block rows [r0, r1), cut to [a, b)."""
    (r0, r1), (a, b) = rows, at
    y = np.zeros(slab.shape[:1] + (slab.shape[1] // math.prod(local["block_shape"]), b - a) + image[1:],
                 dtype)
    if r1 > r0:
        u, v = r0 * s - pb, (r1 - 1) * s - pb + e  # the image rows those blocks span
        strip = _col2im(slab, (v - u,) + image[1:], **local)
        lo, hi = max(a, u), min(b, v)
        if lo < hi:
            y[:, :, lo - a:hi - a] = strip[:, :, lo - u:hi - u]
    return y


# -- The graph -------------------------------------------------------------------------------------

_POOL, _UNPOOL, _COL2IM = "MaxPool", "MaxUnpool", "Col2Im"


def _dask_array(op, name, x):
    """`x`, checked to be a Dask array with known chunk sizes."""
    if not isinstance(x, da.Array):
        raise TypeError(
            f"{op}: {name} must be a dask.array.Array, got {type(x).__name__} "
            "(pooling's own functions take numpy arrays)"
        )
    if any(math.isnan(c) for axis in x.chunks for c in axis):
        raise ValueError(
            f"{op}: {name} has unknown chunk sizes {x.chunks}; call {name}.compute_chunk_sizes() first"
        )
    return x


def _ranges(chunks):
    """[(start, stop)] of each chunk."""
    bounds = [0, *itertools.accumulate(chunks)]
    return list(zip(bounds[:-1], bounds[1:]))


def _cut(in_chunks, boundary, size):
    """Output chunks of an axis of `size`: each inner boundary of `in_chunks` mapped by `boundary`,
    clipped to [0, size]; empty chunks dropped (a size-0 axis keeps its one empty chunk)."""
    cuts = {min(max(boundary(b), 0), size) for b in itertools.accumulate(in_chunks[:-1])}
    cuts = sorted(cuts | {0, size})
    return tuple(hi - lo for lo, hi in zip(cuts[:-1], cuts[1:])) or (0,)


def _slab(arr, spans, dsk, name):
    """A task making arr[lo:hi, ...] (one (lo, hi) per axis) from the blocks that hold it.

    Each block that is only partly needed is cut by a task of its own, added to `dsk` (a copy when
    it is a small part, such as a halo), so that the block can be released once its own task and
    its neighbours' cuts have run, instead of staying in memory until the neighbours' tasks run."""
    picks = []
    for chunks, (lo, hi) in zip(arr.chunks, spans):
        bounds = [0, *itertools.accumulate(chunks)]
        # Blocks meeting [lo, hi); an empty range takes the block at lo, cut to nothing.
        first = min(bisect.bisect_right(bounds, lo) - 1, len(chunks) - 1)
        last = max(bisect.bisect_left(bounds, hi), first + 1)
        # The part of each of those blocks inside [lo, hi).
        picks.append([(b, max(lo - bounds[b], 0), max(min(hi, bounds[b + 1]) - bounds[b], lo - bounds[b]))
                      for b in range(first, last)])

    def nested(axis, prefix):
        if axis < arr.ndim:
            return [nested(axis + 1, prefix + (pick,)) for pick in picks[axis]]
        key = (arr.name, *(b for b, _, _ in prefix))
        if all(start == 0 and stop == chunks[b] for (b, start, stop), chunks in zip(prefix, arr.chunks)):
            return key
        piece = (f"{name}-cut-{arr.name}", *(v for pick in prefix for v in pick))
        dsk[piece] = (functools.partial(_piece, cuts=tuple(slice(start, stop) for _, start, stop in prefix)), key)
        return piece

    return (_joined, nested(0, ()))


def _piece(block, cuts):
    """The part `cuts` of a block: a copy when small, so the block itself can be freed."""
    part = block[cuts]
    return part.copy() if 2 * part.size < block.size else part


def _joined(blocks):
    """A nested list of arrays (axis 0 outermost) joined into one, with one copy."""
    sizes, level = [], blocks
    while isinstance(level, list):   # the sizes along each axis, from the first row of each level
        sizes.append([_first(b).shape[len(sizes)] for b in level])
        level = level[0]
    if all(len(s) == 1 for s in sizes):
        return _first(blocks)
    shape = tuple(sum(s) for s in sizes) + level.shape[len(sizes):]
    out = np.empty(shape, level.dtype)
    starts = [[0, *itertools.accumulate(s)] for s in sizes]
    for where in itertools.product(*(range(len(s)) for s in sizes)):
        leaf = blocks
        for i in where:
            leaf = leaf[i]
        out[tuple(slice(st[i], st[i + 1]) for st, i in zip(starts, where))] = leaf
    return out


def _first(blocks):
    while isinstance(blocks, list):
        blocks = blocks[0]
    return blocks


def _array(name, chunks, inputs, task, dtype):
    """A Dask array whose block at each index is task(index, slab), `slab` making the input slabs."""
    dsk = {}

    def slab(arr, spans):
        return _slab(arr, spans, dsk, name)

    for index in itertools.product(*(range(len(c)) for c in chunks)):
        dsk[(name, *index)] = task(index, slab)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=inputs)
    return da.Array(graph, name, tuple(chunks), meta=np.empty((0,) * len(chunks), dtype))


def _part(pairs, which, dtype):
    """Element `which` of each block of an array of (y, indices) pairs."""
    name = f"{pairs.name}-{which}"
    dsk = {(name, *index): (operator.getitem, (pairs.name, *index), which)
           for index in itertools.product(*(range(len(c)) for c in pairs.chunks))}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[pairs])
    return da.Array(graph, name, pairs.chunks, meta=np.empty((0,) * pairs.ndim, dtype))
