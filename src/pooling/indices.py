"""Index encodings of MaxPool's Indices, and conversion between them (behaviour.md §6).

Every encoding names one element of an input x of shape (N, C, *spatial) (or (N, *spatial, C)
with NHWC) by its image n, channel c and row-major position p inside the spatial plane
(P = prod(spatial) positions):

===========  ==========================  =====================================================
format       index                       range
===========  ==========================  =====================================================
"onnx"       NCHW ``(n*C + c)*P + p``,   ``[0, N*C*P)``: the flat offset in x as stored
             NHWC ``(n*P + p)*C + c``
"plane"      ``p``                       ``[0, P)``: n and c are the index's own (PyTorch, Paddle)
"tf"         ``p*C + c``                 ``[0, P*C)``: n is the index's own (TensorFlow)
"tf_batch"   ``(n*P + p)*C + c``         ``[0, N*P*C)``: TensorFlow's include_batch_in_index
===========  ==========================  =====================================================

-1 (an empty window) is -1 in every format.  The helpers here work on int64 arrays shaped like
the pooled output: `convert_indices`, the range checks, and the conversions for the paths whose
kernels do not read or write a format themselves (MaxPool's kernels write every format in their
index pass where _maxpool_strategies._index_code serves them; MaxUnpool's and max_pool_grad's read
most formats in place).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._attrs import choice, shape_tuple, split_layout
from ._dtypes import as_array

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Literal

    from numpy.typing import ArrayLike, NDArray

    from ._attrs import Int, Layout

    IndexFormat = Literal["onnx", "plane", "tf", "tf_batch"]

INDEX_FORMATS = ("onnx", "plane", "tf", "tf_batch")

_CONVERT = "convert_indices"


def check_format(op, name, value, layout, storage_order=0):
    """`value` checked as an index format for this layout and storage order (behaviour.md §6's
    table): with storage_order=1 only "onnx" and "plane" (column-major planes) are defined."""
    choice(op, name, value, INDEX_FORMATS)
    if storage_order == 1 and value in ("tf", "tf_batch"):
        raise ValueError(
            f"{op}: {name}={value!r} is not defined with storage_order=1 (TensorFlow's encodings "
            "are row-major); use 'onnx' or 'plane'"
        )
    return value


def index_range(fmt, lead, plane):
    """The number of values format `fmt` has for x with (N, C) = lead and `plane` positions."""
    n, c = lead
    return {"onnx": n * c * plane, "plane": plane, "tf": plane * c, "tf_batch": n * plane * c}[fmt]


def _own_nc(shape, layout):
    """(n, c) of every element of an array of `shape` in `layout`, as broadcastable int64 grids."""
    rank = len(shape)
    n = np.arange(shape[0], dtype=np.int64).reshape((-1,) + (1,) * (rank - 1))
    c_axis = 1 if layout == "NCHW" else rank - 1
    c = np.arange(shape[c_axis], dtype=np.int64).reshape(
        tuple(-1 if a == c_axis else 1 for a in range(rank)))
    return n, c


def decode(fmt, idx, lead, plane, layout):
    """(n, c, p) of the valid entries' targets; idx is int64, shaped in `layout`, all in range."""
    channels = lead[1]
    if fmt == "plane":
        return *_own_nc(idx.shape, layout), idx
    if fmt == "tf":
        p, c = np.divmod(idx, max(channels, 1))
        return _own_nc(idx.shape, layout)[0], c, p
    return split_flat(idx, channels, plane, "NHWC" if fmt == "tf_batch" else layout)


def split_flat(flat, channels, plane, layout):
    """(n, c, p) of flat offsets into x in `layout` (NHWC's are "tf_batch" indices too)."""
    if layout == "NHWC":
        image_pixel, c = np.divmod(flat, max(channels, 1))
        n, p = np.divmod(image_pixel, max(plane, 1))
    else:
        image_channel, p = np.divmod(flat, max(plane, 1))
        n, c = np.divmod(image_channel, max(channels, 1))
    return n, c, p


def encode(fmt, n, c, p, lead, plane, layout):
    """The index of (n, c, p) in format `fmt` (the inverse of `decode`)."""
    channels = lead[1]
    if fmt == "plane":
        return p
    if fmt == "tf":
        return p * channels + c
    if fmt == "tf_batch" or layout == "NHWC":
        return (n * plane + p) * channels + c
    return (n * channels + c) * plane + p


def position(flat, shape):
    """The row-major position (a tuple of ints) of flat offset `flat` in an array of `shape`."""
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def first_bad(idx, limit):
    """The position of the first entry outside [-1, limit) in row-major order, or None."""
    bad = np.flatnonzero((idx < -1) | (idx >= limit))
    return None if not bad.size else position(bad[0], idx.shape)


def out_of_range(op, name, idx, where, fmt, limit, x_shape, layout, of="x", empty=True):
    """The ValueError for entry `where` of `idx` outside format `fmt`'s range; `empty`: whether -1
    (an empty window) is allowed, as it is everywhere but in MaxUnpool."""
    minus_one = "or -1 for an empty window" if empty else "-1 is out of range too"
    return ValueError(
        f"{op}: {name}{list(where)} = {int(idx[where])} is outside [0, {limit}), the range of "
        f"{fmt!r} indices for {of} of shape {list(x_shape)} in layout {layout!r} ({minus_one}; "
        "first bad index in row-major order)"
    )


def recode(op, name, idx, x_shape, layout, from_format, to_format, of="x", empty=True):
    """int64 `idx` (shaped like the pooled output, in `layout`) from one format to another, as a
    new array; -1 stays -1, an entry outside [-1, range) of `from_format` is a ValueError (its
    message says -1 is out of range too where `empty` is false; the caller rejects those)."""
    lead, spatial = split_layout(op, x_shape, layout)
    plane = math.prod(spatial)
    limit = index_range(from_format, lead, plane)
    where = first_bad(idx, limit)
    if where is not None:
        raise out_of_range(op, name, idx, where, from_format, limit, x_shape, layout, of, empty)
    if from_format == to_format or (layout == "NHWC" and {from_format, to_format} == {"onnx", "tf_batch"}):
        return idx.copy()
    valid = idx >= 0
    coded = encode(to_format, *decode(from_format, np.where(valid, idx, 0), lead, plane, layout),
                   lead, plane, layout)
    return np.where(valid, coded, -1).astype(np.int64, copy=False)


def from_onnx(indices, geometry, layout, fmt):
    """Re-encode "onnx" `indices` (MaxPool's, int64, C-contiguous) in format `fmt`, in place, for x
    with (N, C, P) = geometry (where the kernels did not write `fmt` themselves)."""
    if fmt == "onnx" or (fmt == "tf_batch" and layout == "NHWC") or not indices.size:
        return  # (an empty array: nothing to re-encode, and no -1 in a reshape can be inferred)
    batch, channels, plane = geometry
    # (The kernels may see the array with other leading dims, N*C*D planes say: these are x's.)
    view = indices.reshape((batch, channels, -1) if layout == "NCHW" else (batch, -1, channels))
    valid = view >= 0
    coded = encode(fmt, *decode("onnx", np.where(valid, view, 0), (batch, channels), plane, layout),
                   (batch, channels), plane, layout)
    np.copyto(view, coded, where=valid)


def convert_indices(indices: ArrayLike, x_shape: Sequence[Int], *, from_format: IndexFormat,
                    to_format: IndexFormat, layout: Layout = "NCHW") -> NDArray[np.int64]:
    """Re-encode MaxPool Indices from one index format to another.

    Parameters
    ----------
    indices : array_like of int
        Indices shaped like the pooled output: ``(N, C, O_1, ..., O_n)``, or ``(N, O_1, ..., O_n,
        C)`` with ``layout="NHWC"``, in `from_format`; -1 marks an empty window. Any integer
        dtype; never modified.
    x_shape : sequence of int
        Shape of the pooled input x, in `layout`: same rank, N and C as `indices`.
    from_format : {"onnx", "plane", "tf", "tf_batch"}
        The encoding of `indices` (see Notes).
    to_format : {"onnx", "plane", "tf", "tf_batch"}
        The encoding of the result.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        Where the channels are in `indices` and `x_shape`.

    Returns
    -------
    numpy.ndarray of int64
        A new array shaped like `indices`, in `to_format`; -1 stays -1.

    Raises
    ------
    ValueError
        An entry outside ``[0, range)`` of `from_format` other than -1 (the message names the
        first one), `x_shape` of another rank or other N or C than `indices`, an unknown format
        or layout.
    TypeError
        `indices` not an array of integers, `x_shape` not a sequence of integers.

    See Also
    --------
    max_pool : ``index_format=`` writes any format directly.
    max_unpool, max_pool_grad : read any format.

    Notes
    -----
    With P the number of positions in one spatial plane of x, p a row-major position in it, n
    the image and c the channel (docs/behaviour.md, section 6):

    - "onnx": the flat offset in x as stored: ``(n*C + c)*P + p`` (NCHW), ``(n*P + p)*C + c``
      (NHWC).
    - "plane": ``p``, as PyTorch and Paddle return them; n and c are the index's own.
    - "tf": ``p*C + c``, TensorFlow's ``max_pool_with_argmax``; n is the index's own.
    - "tf_batch": ``(n*P + p)*C + c``, with ``include_batch_in_index=True``; with NHWC it is
      "onnx".

    A format without n or c takes them from the index's own position in `indices`, so an "onnx"
    index that points into another plane than its own keeps its target in "tf_batch" but not in
    "plane" or "tf". Column-major planes (``storage_order=1``) are not converted.

    Examples
    --------
    >>> import numpy as np
    >>> import pooling
    >>> x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    >>> y, onnx = pooling.max_pool(x, 2, strides=2, return_indices=True)
    >>> onnx[0, 1].tolist()
    [[21, 23], [29, 31]]
    >>> pooling.convert_indices(onnx, x.shape, from_format="onnx", to_format="plane")[0, 1].tolist()
    [[5, 7], [13, 15]]
    >>> pooling.convert_indices(onnx, x.shape, from_format="onnx", to_format="tf")[0, 1].tolist()
    [[11, 15], [27, 31]]
    """
    idx = integer_array(_CONVERT, "indices", indices)
    shape = shape_tuple(_CONVERT, "x_shape", x_shape)
    choice(_CONVERT, "layout", layout, ("NCHW", "NHWC"))
    check_format(_CONVERT, "from_format", from_format, layout)
    check_format(_CONVERT, "to_format", to_format, layout)
    check_lead(_CONVERT, "indices", idx.shape, shape, layout)
    return recode(_CONVERT, "indices", as_int64(_CONVERT, "indices", idx), shape, layout,
                  from_format, to_format)


def check_lead(op, name, shape, x_shape, layout):
    """`shape` (pooled, in `layout`) must have x_shape's rank, N and C."""
    lead = split_layout(op, x_shape, layout)[0]
    if len(shape) != len(x_shape) or (shape[:2] if layout == "NCHW" else (shape[0], shape[-1])) != lead:
        raise ValueError(
            f"{op}: {name} of shape {list(shape)} does not fit x_shape {list(x_shape)} in layout "
            f"{layout!r}: it must have the same rank and the same N and C"
        )


def integer_array(op, name, indices):
    """`indices` as an array of integers (any integer dtype); else a TypeError naming op and name."""
    idx = indices if type(indices) is np.ndarray else as_array(op, name, indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be an array of integers, got dtype {idx.dtype}")
    return idx


def as_int64(op, name, idx):
    """An integer array as aligned, C-contiguous int64 (the kernels load it as int64_t: an array one byte
    off its alignment, contiguous or not, is copied); uint64 values past int64 are a ValueError (not
    wrapped to -1)."""
    if idx.dtype.kind == "u" and idx.dtype.itemsize == 8 and idx.size and int(idx.max()) >= 1 << 63:
        where = position(int(np.argmax(idx >= np.uint64(1 << 63))), idx.shape)
        raise ValueError(f"{op}: {name}{list(where)} = {int(idx[where])} is past the int64 range")
    return np.require(idx, dtype=np.int64, requirements=("C", "A"))
