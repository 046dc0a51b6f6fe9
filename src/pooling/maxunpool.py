"""MaxUnpool: validation per version, output shape, dispatch to the kernel (behaviour.md §3)."""
import math
from typing import NamedTuple

import numpy as np

from ._dispatch import core as _core
from ._attrs import (INDEX_LIMIT, cached_plan, check_size, int_tuple, kinds_in, past_limit,
                     resolve_version, shape_tuple, split_layout)
from ._dtypes import C_TYPES, as_kernel_array, result_dtype
from ._outputs import output_array
from ._threads import resolve_n_threads

OP = "MaxUnpool"

# behaviour.md §3: the version that introduced each dtype of X.  Library mode adds the
# integer types MaxPool-12 pools [ext], so anything pooled can be unpooled.
_DTYPE_SINCE = {"float16": 9, "float32": 9, "float64": 9, "bfloat16": 22}
_LIBRARY_DTYPES = tuple(_DTYPE_SINCE) + ("int8", "uint8")
_INDEX_KINDS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

# The kernel only moves bits: unsigned storage of each item size serves every dtype.
_BITS = {size: np.dtype(f"u{size}") for size in (1, 2, 4, 8)}

# Fresh results of at least this many bytes come from np.zeros (calloc) and are not zeroed by the
# kernel.  glibc maps blocks this large straight from the system (32 MiB is its largest dynamic
# mmap threshold), as zero pages, so calloc writes nothing and the kernel's zeroing would be a
# second write of every page: SegNet's 44 MB unpool, one thread, 13.9 -> 12.2 ms (AMD EPYC Zen 3,
# interleaved medians; ENet's 4 MB one, reused from the heap, gained nothing).  Below it calloc
# may memset on one thread, where the kernel zeroes on every thread and plane by plane in cache.
_FRESH_ZEROS = 32 << 20


class _Plan(NamedTuple):
    """Everything about a call that depends only on shapes and attributes."""
    out_shape: tuple          # full output shape
    blocks: int               # independent parts of x and y: N*C planes (NCHW), N images (NHWC)
    kinds: tuple              # dtypes of x allowed under this version
    index_kinds: tuple        # dtypes of indices allowed under this version


def max_unpool_output_shape(x_shape, kernel_shape, *, strides=None, pads=None, output_shape=None,
                            layout="NCHW", opset=None):
    """Output shape of max_unpool for an input of shape `x_shape` (same validation, no data)."""
    return _plan(shape_tuple(OP, "x_shape", x_shape), kernel_shape=kernel_shape, strides=strides, pads=pads,
                 output_shape=output_shape, layout=layout, opset=opset).out_shape


def max_unpool(x, indices, kernel_shape, *, strides=None, pads=None, output_shape=None,
               layout="NCHW", opset=None, n_threads=None, out=None):
    """ONNX MaxUnpool: scatter x into zeros of the output shape at `indices`.

    x and indices have shape (N, C, D_1, ..., D_n), n >= 1, or (N, D_1, ...,
    D_n, C) with ``layout="NHWC"``.  The output shape is ``(N, C, (D_i -
    1)*strides_i - (pads_begin_i + pads_end_i) + kernel_i)`` (channels last
    for NHWC), or ``output_shape`` when given (pads are then ignored).  With
    NHWC, indices are flat offsets into the NHWC output, as MaxPool's NHWC
    Indices are into its NHWC input.  Indices are flat
    row-major offsets into the returned output, as MaxPool's ``return_indices``
    gives them, so ``max_unpool(*max_pool(x, k, return_indices=True), k,
    output_shape=x.shape)`` puts every pooled value back where it came from.
    Indices made with ``storage_order=1`` are column-major encodings, not
    row-major offsets, and do not round-trip.  When two elements share an
    index the last one in row-major order of x wins, for every n_threads.  An
    index outside the output is a ValueError naming the first one (nothing is
    written outside the output; ``out`` may be partly written).  ``opset=K``
    enforces exactly what version K allows; the default is library mode
    (int8/uint8 data, any integer indices, any rank).  docs/behaviour.md
    section 3 has every rule.
    """
    arr = np.asarray(x)
    idx = np.asarray(indices)
    plan = _plan(arr.shape, kernel_shape=kernel_shape, strides=strides, pads=pads,
                 output_shape=output_shape, layout=layout, opset=opset)
    if idx.shape != arr.shape:
        raise ValueError(f"{OP}: indices must have the shape of x {list(arr.shape)}, got {list(idx.shape)}")
    xk, _ = as_kernel_array(OP, "x", arr, plan.kinds)
    ik, _ = as_kernel_array(OP, "indices", idx, plan.index_kinds)
    # uint64 values >= 2**63 wrap to negative here, which the kernel rejects like any bad index.
    ik = ik.astype(np.int64, copy=False)
    dtype = result_dtype(arr.dtype)
    # A large fresh result comes zeroed from calloc: pages the system maps in as zeros, which the
    # kernel then need not write a second time (see _FRESH_ZEROS).
    zeroed = out is None and math.prod(plan.out_shape) * dtype.itemsize >= _FRESH_ZEROS
    y = output_array(OP, "out", out, plan.out_shape, dtype, ("the input x", arr), ("the input indices", idx),
                     zeros=zeroed)
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
                         plan.blocks, fused, zeroed, nt)
        if bad == -2:  # the kernel's contract on its arguments, which the checks above keep
            raise RuntimeError(f"{OP}: internal error: the kernel rejected its arguments")
        if bad >= 0:
            where = tuple(int(i) for i in np.unravel_index(bad, idx.shape))
            raise ValueError(
                f"{OP}: indices{list(where)} = {idx[where]} is outside [0, {y.size}), the flat "
                f"range of the output of shape {list(plan.out_shape)} (first bad index in row-major order)"
            )
    return y


@cached_plan(OP)
def _plan(x_shape, kernel_shape, strides, pads, output_shape, layout, opset):
    version = resolve_version(OP, opset)
    lead, spatial = split_layout(OP, x_shape, layout)
    # NCHW: each (n, c) plane is one block; NHWC: each image (its channels
    # interleaved) is one, and Indices are offsets into NHWC memory (behaviour.md §3).
    blocks = lead[0] * lead[1] if layout == "NCHW" else lead[0]
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
    index_kinds = _INDEX_KINDS if version is None else ("int64",)
    return _Plan(out_shape, blocks, kinds, index_kinds)


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
