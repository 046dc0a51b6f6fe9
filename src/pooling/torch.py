"""PyTorch drop-in: ``max_pool1d/2d/3d``, ``max_unpool1d/2d/3d`` and ``fold`` on CPU tensors, with autograd.

Needs the optional ``torch`` package (``pip install "pooling-kernels[torch]"``); ``import pooling`` never
imports it.  Each function has the name, arguments and semantics of its ``torch.nn.functional`` namesake and
returns torch tensors, so a model can use ``pooling.torch.max_pool2d`` where it used ``F.max_pool2d`` and
train on the CPU.  docs/torch.md lists every rule, and where this module follows torch rather than pooling's
ONNX semantics (several NaNs in one window: torch's index of the last NaN).
"""
from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, overload

import numpy as np
import torch
from torch.autograd.function import once_differentiable

import pooling as _pooling
from ._attrs import cached_plan
from ._dtypes import LEGACY_BFLOAT16
from .maxpool_grad import _grad_windows, gathers

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal

    from torch import Tensor

    Size = int | Sequence[int]

__all__ = ["ArgumentError", "fold", "max_pool1d", "max_pool2d", "max_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]


class ArgumentError(ValueError, RuntimeError):
    """A bad argument value: a ValueError, as everywhere in pooling, and a RuntimeError, as torch raises
    for the same conditions, so that code written for either catches it."""


# torch's dtypes that its max_pool takes, then those pooling's kernels also pool (library mode), which
# torch's do not: its unsigned integers of 2-8 bytes and bool.
_POOL_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8,
                torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32, torch.uint64, torch.bool)


# ---------------------------------------------------------------------------------------------------------
# MaxPool
# ---------------------------------------------------------------------------------------------------------

@overload
def max_pool1d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, return_indices: Literal[False] = False) -> Tensor: ...
@overload
def max_pool1d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, *,
               return_indices: Literal[True]) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool1d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, *,
               return_indices: bool) -> Tensor | tuple[Tensor, Tensor]: ...


def max_pool1d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``torch.nn.functional.max_pool1d`` on pooling's kernels: the maximum of each window.

    Parameters
    ----------
    input : torch.Tensor
        ``(N, C, L)`` or unbatched ``(C, L)``, on the CPU; float16, bfloat16, float32, float64, int8, uint8,
        int16, int32 or int64 (torch's dtypes), and uint16, uint32, uint64 and bool, which torch does not
        pool (bool: True wins). May require grad.
    kernel_size : int or tuple of int
        Window size, >= 1.
    stride : int or tuple of int, optional
        Step, >= 1. Default None: `kernel_size` (torch's default, not ONNX's 1).
    padding : int or tuple of int, default 0
        Implicit -inf padding on both sides, at most half of `kernel_size`.
    dilation : int or tuple of int, default 1
        Spacing of the taps, >= 1.
    ceil_mode : bool, default False
        Round the output size up (the last window must start inside the input or the left padding).
    return_indices : bool, default False
        Also return where each maximum is: its offset within its ``(n, c)`` plane, int64.

    Returns
    -------
    output : torch.Tensor
        ``(N, C, L_out)`` (or ``(C, L_out)``), `input`'s dtype.
    indices : torch.Tensor of int64
        Only with ``return_indices=True``, which returns ``(output, indices)``.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) Where torch raises: a size, stride or dilation below 1, a
        negative padding or one past half the kernel size, an input of another rank or with an empty
        non-batch axis, an output size below 1.
    TypeError
        `input` not a CPU tensor, a dtype torch does not pool (bool, complex, unsigned wider than 8
        bits), an argument of the wrong type.

    See Also
    --------
    max_pool2d, max_unpool1d, pooling.max_pool

    Notes
    -----
    Gradients flow through a ``torch.autograd.Function`` whose backward is ``pooling.max_pool_grad``.
    Ties go to the first maximum; where a window holds NaN, the output is its last NaN and the index is
    that NaN's, as torch does. docs/torch.md has every rule.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> x = torch.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
    >>> pooling.torch.max_pool1d(x, 2)
    tensor([[[3., 5.]]])
    >>> pooling.torch.max_pool1d(x, 3, stride=2, padding=1, return_indices=True)
    (tensor([[[3., 5., 5.]]]), tensor([[[1, 3, 3]]]))
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@overload
def max_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, return_indices: Literal[False] = False) -> Tensor: ...
@overload
def max_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, *,
               return_indices: Literal[True]) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, *,
               return_indices: bool) -> Tensor | tuple[Tensor, Tensor]: ...


def max_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``torch.nn.functional.max_pool2d`` on pooling's kernels: the maximum of each window.

    Parameters
    ----------
    input : torch.Tensor
        ``(N, C, H, W)`` or unbatched ``(C, H, W)``, on the CPU, contiguous or channels_last (read in
        place; any other strides are copied first); float16, bfloat16, float32, float64, int8, uint8,
        int16, int32 or int64 (torch's dtypes), and uint16, uint32, uint64 and bool, which torch does not
        pool (bool: True wins). May require grad.
    kernel_size : int or tuple of int
        Window size, one int or one per axis, each >= 1.
    stride : int or tuple of int, optional
        Step per axis, each >= 1. Default None: `kernel_size` (torch's default, not ONNX's 1).
    padding : int or tuple of int, default 0
        Implicit -inf padding on both sides of each axis, at most half of `kernel_size`.
    dilation : int or tuple of int, default 1
        Spacing of the taps per axis, each >= 1.
    ceil_mode : bool, default False
        Round each output size up (the last window must start inside the input or the left padding).
    return_indices : bool, default False
        Also return where each maximum is: its offset ``h * W + w`` within its ``(n, c)`` plane, int64.

    Returns
    -------
    output : torch.Tensor
        ``(N, C, H_out, W_out)`` (or ``(C, H_out, W_out)``), `input`'s dtype; channels_last when
        `input` is.
    indices : torch.Tensor of int64
        Only with ``return_indices=True``, which returns ``(output, indices)``; laid out as `output`.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) Where torch raises: a size, stride or dilation below 1, a
        negative padding or one past half the kernel size, an input of another rank or with an empty
        non-batch axis, an output size below 1.
    TypeError
        `input` not a CPU tensor, a dtype torch does not pool, an argument of the wrong type.

    See Also
    --------
    max_pool1d, max_pool3d, max_unpool2d, pooling.max_pool

    Notes
    -----
    Gradients flow through a ``torch.autograd.Function`` whose backward is ``pooling.max_pool_grad``.
    Ties go to the first maximum in window order; where a window holds NaN, the output is its last NaN
    and the index is that NaN's, as torch does. The kernels run on ``torch.get_num_threads()`` threads.
    docs/torch.md has every rule.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> pooling.torch.max_pool2d(x, 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    >>> y, indices = pooling.torch.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    >>> indices
    tensor([[[[ 5,  7],
              [13, 15]]]])
    >>> pooling.torch.max_pool2d(x.to(memory_format=torch.channels_last), 2).is_contiguous(
    ...     memory_format=torch.channels_last)
    True
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@overload
def max_pool3d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, return_indices: Literal[False] = False) -> Tensor: ...
@overload
def max_pool3d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, *,
               return_indices: Literal[True]) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool3d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, *,
               return_indices: bool) -> Tensor | tuple[Tensor, Tensor]: ...


def max_pool3d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               dilation: Size = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``torch.nn.functional.max_pool3d`` on pooling's kernels: the maximum of each window.

    Parameters
    ----------
    input : torch.Tensor
        ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``, on the CPU, contiguous or channels_last_3d
        (read in place); float16, bfloat16, float32, float64, int8, uint8, int16, int32 or int64, and
        uint16, uint32, uint64 and bool, which torch does not pool. May require grad.
    kernel_size : int or tuple of int
        Window size, one int or one per axis, each >= 1.
    stride : int or tuple of int, optional
        Step per axis, each >= 1. Default None: `kernel_size`.
    padding : int or tuple of int, default 0
        Implicit -inf padding on both sides of each axis, at most half of `kernel_size`.
    dilation : int or tuple of int, default 1
        Spacing of the taps per axis, each >= 1.
    ceil_mode : bool, default False
        Round each output size up (the last window must start inside the input or the left padding).
    return_indices : bool, default False
        Also return where each maximum is: its offset ``(d * H + h) * W + w`` within its ``(n, c)``
        volume, int64.

    Returns
    -------
    output : torch.Tensor
        ``(N, C, D_out, H_out, W_out)`` (or unbatched), `input`'s dtype; channels_last_3d when `input` is.
    indices : torch.Tensor of int64
        Only with ``return_indices=True``, which returns ``(output, indices)``.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) Where torch raises (as `max_pool2d`).
    TypeError
        `input` not a CPU tensor, a dtype torch does not pool, an argument of the wrong type.

    See Also
    --------
    max_pool2d, max_unpool3d, pooling.max_pool

    Notes
    -----
    As `max_pool2d`, one axis more.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> x = torch.arange(27.0).reshape(1, 1, 3, 3, 3)
    >>> pooling.torch.max_pool3d(x, 2, stride=1, return_indices=True)[1].flatten().tolist()
    [13, 14, 16, 17, 22, 23, 25, 26]
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _max_pool(fn, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = _batch(fn, input, n, "input")
    _check_dtype(fn, x, _POOL_DTYPES)
    args = _POOL_ARGS[n](tuple(x.shape), kernel_size=kernel_size, stride=stride, padding=padding,
                         dilation=dilation, ceil_mode=ceil_mode)
    if torch.is_grad_enabled() and x.requires_grad:
        y, indices = _MaxPool.apply(x, fn, args)
    else:
        y, indices = _pool_forward(fn, x, args, return_indices)[:2]
    if not batched:  # torch gives unbatched results contiguous, whatever the input's strides
        y = y.squeeze(0).contiguous()
        indices = None if indices is None else indices.squeeze(0).contiguous()
    return (y, indices) if return_indices else y


def _pool_args(x_shape, kernel_size, stride, padding, dilation, ceil_mode):
    """(kernel, stride, padding, dilation, ceil_mode) of a max_pool call on a batched input of `x_shape`,
    checked as torch checks them; cached per shape and arguments (`_POOL_ARGS`): a call's Python work runs
    between kernels, with cold caches (docs/torch.md#the-cost-of-a-call)."""
    n = len(x_shape) - 2
    fn = f"max_pool{n}d"
    kernel = _ints(fn, "kernel_size", kernel_size, n, 1)
    stride = _stride(fn, stride, kernel)
    padding = _ints(fn, "padding", padding, n, 0)
    dilation = _ints(fn, "dilation", dilation, n, 1)
    if any(p > k // 2 for k, p in zip(kernel, padding)):  # torch's rule: half the kernel, dilated or not
        raise ArgumentError(f"{fn}: padding should be at most half of kernel_size, got padding {list(padding)} "
                            f"and kernel_size {list(kernel)}")
    if not isinstance(ceil_mode, (bool, int)):
        raise TypeError(f"{fn}: ceil_mode must be a bool, got {ceil_mode!r}")
    args = (kernel, stride, padding, dilation, bool(ceil_mode))
    sizes = [_pool_size(*a, bool(ceil_mode)) for a in zip(x_shape[2:], *args[:4])]
    if min(sizes) < 1:
        raise ArgumentError(f"{fn}: the output size {sizes} of input {list(x_shape)} is too small: "
                            "every output size must be >= 1")
    return args


_POOL_ARGS = {n: cached_plan(f"max_pool{n}d")(_pool_args) for n in (1, 2, 3)}


def _pool_size(size, k, s, p, d, ceil_mode):
    """torch's output size of one axis (the last window must start inside the input or the left padding)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_forward(fn, x, args, with_indices):
    """(y, indices or None, layout, indices as a numpy array or None) of batched `x`, y and indices as
    tensors, with torch's semantics."""
    kernel, stride, padding, dilation, ceil_mode = args
    n = len(kernel)
    layout, arr = _layout(x, n)
    kw = dict(strides=stride, pads=padding * 2, dilations=dilation, ceil_mode=ceil_mode, layout=layout,
              n_threads=torch.get_num_threads())
    nan: list[bool | None] = []  # whether y holds a NaN, where the kernel tells (it scans as it writes)
    if with_indices:
        y, indices = _call(fn, _pooling.max_pool, arr, kernel, return_indices=True, index_format="plane",
                           _nan=nan, **kw)
    else:
        y, indices = _call(fn, _pooling.max_pool, arr, kernel, _nan=nan, **kw), None
    if x.dtype.is_floating_point and (_has_nan(y, x.dtype) if not nan or nan[0] is None else nan[0]):
        perm = _to_nchw(layout, n)
        _last_nans(arr.transpose(perm), y.transpose(perm), None if indices is None else indices.transpose(perm),
                   args, _nan_test(x.dtype), _TORCH_NAN.get(x.dtype))
    yt = _as_tensor(_from_layout(y, layout, n), x.dtype)
    it = None if indices is None else torch.from_numpy(_from_layout(indices, layout, n))
    return yt, it, layout, indices


def _last_nans(x, y, indices, args, isnan, as_torch):
    """torch's NaN rule, where pooling's kernels differ: in a window with NaN, y is its last NaN (in window
    order), its bits passed through `as_torch` for a 16-bit float, and `indices` that NaN's plane offset;
    pooling's kernels took the first NaN.  `x`, `y`, `indices` are (N, C, *spatial) numpy views (`y` and
    `indices` written)."""
    where = np.nonzero(isnan(y))
    if not where[0].size:
        return
    kernel, stride, padding, dilation, _ = args
    spatial = x.shape[2:]
    taps = np.indices(kernel).reshape(len(kernel), -1)  # (axes, K) in window order, last axis fastest
    coords = [where[2 + a][:, None] * stride[a] - padding[a] + taps[a] * dilation[a] for a in range(len(kernel))]
    inside = np.logical_and.reduce([(c >= 0) & (c < size) for c, size in zip(coords, spatial)])
    coords = [np.clip(c, 0, size - 1) for c, size in zip(coords, spatial)]
    nan = isnan(x[(where[0][:, None], where[1][:, None], *coords)]) & inside
    last = nan.shape[1] - 1 - np.argmax(nan[:, ::-1], axis=1)
    rows = np.arange(last.size)
    position = tuple(c[rows, last] for c in coords)
    y[where] = x[(where[0], where[1], *position)]
    if as_torch is not None:
        bits = y.view(np.uint16)
        bits[where] = as_torch(bits[where])
    if indices is not None:
        indices[where] = np.ravel_multi_index(position, spatial)


# The bits of a NaN that torch's kernels pass through float32 and back: float16 NaNs come back quiet,
# bfloat16 ones as the one NaN 0x7FC0.
_TORCH_NAN = {torch.float16: lambda bits: bits | 0x0200, torch.bfloat16: lambda bits: np.full_like(bits, 0x7FC0)}


def _has_nan(y, dtype):
    """Whether pooled `y` (a numpy array of float `dtype`) holds a NaN: a max, which NaN propagates to, is
    faster than testing every element."""
    if not y.size:
        return False
    if dtype == torch.bfloat16:
        return bool(_nan_test(dtype)(y).any())
    return bool(np.isnan(y.max()))


def _nan_test(dtype):
    """isnan for the numpy view of a float dtype: 16-bit floats are tested on their bits."""
    if dtype in (torch.float16, torch.bfloat16):
        inf = 0x7C00 if dtype == torch.float16 else 0x7F80
        return lambda a: (a.view(np.uint16) & 0x7FFF) > inf
    return np.isnan


class _MaxPool(torch.autograd.Function):
    """max_pool{n}d with autograd: forward keeps the plane indices, backward scatter-adds into them."""

    @staticmethod
    def forward(ctx, x, fn, args):
        y, indices, layout, ctx.indices = _pool_forward(fn, x, args, True)
        ctx.save_for_backward(indices)
        ctx.x_shape, ctx.layout, ctx.fn, ctx.args = x.shape, layout, fn, args
        ctx.mark_non_differentiable(indices)
        # No zeros for the indices' gradient (nor for y's when it is unused): the engine filled an int64
        # tensor of y's size on every backward pass, as long as the gradient's own kernel on channels_last.
        ctx.set_materialize_grads(False)
        return y, indices

    @staticmethod
    def backward(ctx, grad_y, grad_indices):
        # Grad is enabled here only under create_graph=True: there once_differentiable makes a second
        # derivative an error.  Its wrapper (a no_grad block) on every other pass cost as much as the rest of
        # this Python (docs/torch.md#the-cost-of-a-call).
        if torch.is_grad_enabled():
            return _max_pool_backward_once(ctx, grad_y, grad_indices)
        return _max_pool_backward(ctx, grad_y, grad_indices)


def _max_pool_backward(ctx, grad_y, grad_indices):
    """_MaxPool's backward: dx from the output's gradient and the forward's own Indices."""
    if grad_y is None:
        return None, None, None
    ctx.saved_tensors  # (autograd's check that the indices were not changed in place; ctx.indices is their memory)
    n = len(ctx.x_shape) - 2
    layout = ctx.layout
    g = np.ascontiguousarray(_to_layout(_as_numpy(grad_y), layout, n))
    shape = ctx.x_shape
    x_shape = (shape[0], *shape[2:], shape[1]) if layout == "NHWC" else tuple(shape)
    kernel, stride, padding, dilation, _ = ctx.args
    if layout == "NHWC" and gathers(kernel, stride, dilation, g.dtype):
        # dx written once, each element gathered from the windows over it (the indices are the forward's
        # own: autograd refuses a backward after they were changed in place).
        grad_x = _grad_windows(g, ctx.indices, x_shape, kernel, stride, padding, torch.get_num_threads())
    else:
        grad_x = _call(ctx.fn, _pooling.max_pool_grad, g, ctx.indices, x_shape, index_format="plane",
                       layout=layout, n_threads=torch.get_num_threads())
    return _as_tensor(_from_layout(grad_x, layout, n), grad_y.dtype), None, None


_max_pool_backward_once = once_differentiable(_max_pool_backward)


# ---------------------------------------------------------------------------------------------------------
# MaxUnpool
# ---------------------------------------------------------------------------------------------------------

def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Size, stride: Size | None = None,
                 padding: Size = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """``torch.nn.functional.max_unpool1d`` on pooling's kernel: `input` scattered into zeros at `indices`.

    Parameters
    ----------
    input : torch.Tensor
        Pooled values ``(N, C, L)`` or unbatched ``(C, L)``, on the CPU; float16, bfloat16, float32,
        float64 (and every integer dtype and bool). May require grad.
    indices : torch.Tensor of int
        `input`'s shape: offsets within each ``(n, c)`` plane of the output, as `max_pool1d` returns them.
    kernel_size : int or tuple of int
        Window size, >= 1.
    stride : int or tuple of int, optional
        Step, >= 1. Default None: `kernel_size`.
    padding : int or tuple of int, default 0
        The pooling's padding, >= 0: only changes the default output size.
    output_size : sequence of int, optional
        ``(L_out,)``, or a full shape whose last value is it; within `stride` of the default
        ``(L - 1) * stride - 2 * padding + kernel_size`` (exclusive). Default None: that default.

    Returns
    -------
    torch.Tensor
        ``(N, C, L_out)`` (or unbatched), `input`'s dtype, zero where no index points.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) An index outside its plane, `indices` of another shape,
        an `output_size` out of range, bad sizes, as torch.
    TypeError
        `input` or `indices` not a CPU tensor, a dtype pooling cannot unpool, a wrongly typed argument.

    See Also
    --------
    max_pool1d, max_unpool2d, pooling.max_unpool

    Notes
    -----
    Where two elements share an index, the last in row-major order wins (torch's CPU kernel leaves it
    undefined). The gradient of `input` is the output's gradient gathered at `indices`.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> y, indices = pooling.torch.max_pool1d(torch.tensor([[[1.0, 3.0, 2.0, 5.0]]]), 2, return_indices=True)
    >>> pooling.torch.max_unpool1d(y, indices, 2)
    tensor([[[0., 3., 0., 5.]]])
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Size, stride: Size | None = None,
                 padding: Size = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """``torch.nn.functional.max_unpool2d`` on pooling's kernel: `input` scattered into zeros at `indices`.

    Parameters
    ----------
    input : torch.Tensor
        Pooled values ``(N, C, H, W)`` or unbatched ``(C, H, W)``, on the CPU (channels_last read in
        place); float16, bfloat16, float32, float64 (and every integer dtype and bool). May
        require grad.
    indices : torch.Tensor of int
        `input`'s shape: offsets ``h * W_out + w`` within each ``(n, c)`` plane of the output, as
        `max_pool2d` returns them.
    kernel_size : int or tuple of int
        Window size, one int or one per axis, each >= 1.
    stride : int or tuple of int, optional
        Step per axis, each >= 1. Default None: `kernel_size`.
    padding : int or tuple of int, default 0
        The pooling's padding, each >= 0: only changes the default output size.
    output_size : sequence of int, optional
        ``(H_out, W_out)``, or a full shape ending with them; each within `stride` of its default
        ``(D - 1) * stride - 2 * padding + kernel_size`` (exclusive). Default None: the defaults.

    Returns
    -------
    torch.Tensor
        ``(N, C, H_out, W_out)`` (or unbatched), `input`'s dtype, zero where no index points;
        channels_last when `input` is.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) An index outside its plane, `indices` of another shape,
        an `output_size` out of range, bad sizes, as torch.
    TypeError
        `input` or `indices` not a CPU tensor, a dtype pooling cannot unpool, a wrongly typed argument.

    See Also
    --------
    max_pool2d, max_unpool3d, pooling.max_unpool

    Notes
    -----
    Where two elements share an index, the last in row-major order wins (torch's CPU kernel leaves it
    undefined). The gradient of `input` is the output's gradient gathered at `indices`.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> y, indices = pooling.torch.max_pool2d(x, 2, return_indices=True)
    >>> pooling.torch.max_unpool2d(y, indices, 2)
    tensor([[[[ 0.,  0.,  0.,  0.],
              [ 0.,  5.,  0.,  7.],
              [ 0.,  0.,  0.,  0.],
              [ 0., 13.,  0., 15.]]]])
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Size, stride: Size | None = None,
                 padding: Size = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """``torch.nn.functional.max_unpool3d`` on pooling's kernel: `input` scattered into zeros at `indices`.

    Parameters
    ----------
    input : torch.Tensor
        Pooled values ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``, on the CPU; float16, bfloat16,
        float32, float64 (and every integer dtype and bool). May require grad.
    indices : torch.Tensor of int
        `input`'s shape: offsets within each ``(n, c)`` volume of the output, as `max_pool3d` returns them.
    kernel_size : int or tuple of int
        Window size, one int or one per axis, each >= 1.
    stride : int or tuple of int, optional
        Step per axis, each >= 1. Default None: `kernel_size`.
    padding : int or tuple of int, default 0
        The pooling's padding, each >= 0: only changes the default output size.
    output_size : sequence of int, optional
        The output's spatial sizes, or a full shape ending with them, each within `stride` of its
        default (exclusive). Default None: the defaults.

    Returns
    -------
    torch.Tensor
        ``(N, C, D_out, H_out, W_out)`` (or unbatched), `input`'s dtype, zero where no index points;
        contiguous, as torch's, whatever the memory format of `input`.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) An index outside its volume, `indices` of another shape,
        an `output_size` out of range, bad sizes, as torch.
    TypeError
        `input` or `indices` not a CPU tensor, a dtype pooling cannot unpool, a wrongly typed argument.

    See Also
    --------
    max_pool3d, max_unpool2d, pooling.max_unpool

    Notes
    -----
    As `max_unpool2d`, one axis more.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> x = torch.arange(8.0).reshape(1, 1, 2, 2, 2)
    >>> y, indices = pooling.torch.max_pool3d(x, 2, return_indices=True)
    >>> pooling.torch.max_unpool3d(y, indices, 2).flatten().tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def _max_unpool(fn, n, input, indices, kernel_size, stride, padding, output_size):
    x, batched = _batch(fn, input, n, "input")
    i, _ = _batch(fn, indices, n, "indices")
    if i.shape != x.shape:
        raise ArgumentError(f"{fn}: indices must have the shape of input {list(input.shape)}, "
                            f"got {list(indices.shape)}")
    if i.dtype.is_floating_point or i.dtype.is_complex or i.dtype == torch.bool:
        raise TypeError(f"{fn}: indices must be an integer tensor (torch: int64), got {i.dtype}")
    kernel = _ints(fn, "kernel_size", kernel_size, n, 1)
    stride = _stride(fn, stride, kernel)
    padding = _ints(fn, "padding", padding, n, 0)
    default = [(d - 1) * s - 2 * p + k for d, k, s, p in zip(x.shape[2:], kernel, stride, padding)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) not in (n, n + 2):
            raise ArgumentError(f"{fn}: output_size must have {n} or {n + 2} values, got {size}")
        size = _ints(fn, "output_size", size[-n:], n, 0)
        for d, (o, want, s) in enumerate(zip(size, default, stride)):
            if not want - s < o < want + s:
                raise ArgumentError(f"{fn}: output_size {list(output_size)} is out of range on axis {d}: "
                                    f"{o} must be between {want - s} and {want + s} (exclusive)")
    if min(size) < 1:
        raise ArgumentError(f"{fn}: the output size {list(size)} must be >= 1 on every axis")
    plan = (kernel, stride, tuple(size))
    if torch.is_grad_enabled() and x.requires_grad:
        y = _MaxUnpool.apply(x, i, fn, plan)
    else:
        y = _unpool_forward(fn, x, i, plan)
    return y if batched else y.squeeze(0)


def _unpool_forward(fn, x, indices, plan):
    kernel, stride, size = plan
    n = len(kernel)
    # torch's max_unpool2d keeps channels_last; its max_unpool3d returns a contiguous result.
    layout, xl = _layout(x, n) if n == 2 else ("NCHW", np.ascontiguousarray(_as_numpy(x)))
    il = _to_layout(_as_numpy(indices), layout, n)  # pooling copies indices of other strides
    shape = (x.shape[0], *size, x.shape[1]) if layout == "NHWC" else (*x.shape[:2], *size)
    y = _call(fn, _pooling.max_unpool, xl, il, kernel, strides=stride, output_shape=shape,
              index_format="plane", layout=layout, n_threads=torch.get_num_threads())
    return _as_tensor(_from_layout(y, layout, n), x.dtype)


class _MaxUnpool(torch.autograd.Function):
    """max_unpool{n}d with autograd: backward gathers the output's gradient at the indices."""

    @staticmethod
    def forward(ctx, x, indices, fn, plan):
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return _unpool_forward(fn, x, indices, plan)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        indices, = ctx.saved_tensors
        n, c = indices.shape[:2]
        grad_x = grad_y.reshape(n, c, -1).gather(2, indices.reshape(n, c, -1).long()).reshape(indices.shape)
        return grad_x, None, None, None


# ---------------------------------------------------------------------------------------------------------
# Fold
# ---------------------------------------------------------------------------------------------------------

def fold(input: Tensor, output_size: Size, kernel_size: Size, dilation: Size = 1, padding: Size = 0,
         stride: Size = 1) -> Tensor:
    """``torch.nn.functional.fold`` on pooling's Col2Im kernel: sums columns of blocks into images.

    Parameters
    ----------
    input : torch.Tensor
        Columns ``(N, C * K, L)`` or unbatched ``(C * K, L)``, ``K`` the product of `kernel_size`, ``L``
        the number of block positions; on the CPU; bool, any integer, float (bfloat16 included) or
        complex dtype, added as pooling.col2im adds them (bool by logical or, integers wrapping around).
        May require grad.
    output_size : int or tuple of int
        The image's spatial size: two ints as torch (or one int for both), or any other number of
        axes, each >= 1.
    kernel_size : int or tuple of int
        Block size, one int or one per axis, each >= 1.
    dilation : int or tuple of int, default 1
        Spacing inside a block per axis, each >= 1.
    padding : int or tuple of int, default 0
        Implicit zero padding on both sides of each axis, each >= 0.
    stride : int or tuple of int, default 1
        Block step per axis, each >= 1.

    Returns
    -------
    torch.Tensor
        ``(N, C, *output_size)`` (or unbatched), `input`'s dtype.

    Raises
    ------
    ArgumentError
        (a ValueError and a RuntimeError) ``C * K`` not a multiple of ``K``, ``L`` not the number of
        blocks, an input of another rank, bad sizes, as torch.
    TypeError
        `input` not a CPU tensor, a dtype pooling cannot fold, a wrongly typed argument.

    See Also
    --------
    pooling.col2im

    Notes
    -----
    Overlapping blocks add; float16 and bfloat16 are summed in float32 and rounded once (torch rounds
    after every addition, so half results may differ from torch's in the last bit). The gradient is the
    unfold of the output's gradient. ``torch.nn.functional.fold`` has 2 spatial axes only; this one
    takes any number.

    Examples
    --------
    >>> import torch
    >>> import pooling.torch
    >>> pooling.torch.fold(torch.ones(1, 4, 9), (4, 4), 2)
    tensor([[[[1., 2., 2., 1.],
              [2., 4., 4., 2.],
              [2., 4., 4., 2.],
              [1., 2., 2., 1.]]]])
    """
    fn = "fold"
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"{fn}: input must be a torch.Tensor, got {type(input).__name__}")
    if input.dim() not in (2, 3):
        raise ArgumentError(f"{fn}: input must be 2-D (unbatched) or 3-D (batch mode), got shape {list(input.shape)}")
    if isinstance(output_size, (int, np.integer)):
        image = _ints(fn, "output_size", output_size, 2, 1)  # torch's: one int for both axes
    else:
        image = _ints(fn, "output_size", output_size, len(output_size) if hasattr(output_size, "__len__") else 0, 1)
    n = len(image)
    plan = (image, _ints(fn, "kernel_size", kernel_size, n, 1), _ints(fn, "dilation", dilation, n, 1),
            _ints(fn, "padding", padding, n, 0), _ints(fn, "stride", stride, n, 1))
    x = input if input.dim() == 3 else input.unsqueeze(0)
    _check_device(fn, x, "input")
    if torch.is_grad_enabled() and x.requires_grad:
        y = _Fold.apply(x, plan)
    else:
        y = _fold_forward(x, plan)
    return y if input.dim() == 3 else y.squeeze(0)


def _fold_forward(x, plan):
    image, kernel, dilation, padding, stride = plan
    y = _call("fold", _pooling.col2im, np.ascontiguousarray(_as_numpy(x)), image, kernel, strides=stride,
              pads=padding * 2, dilations=dilation, n_threads=torch.get_num_threads())
    return _as_tensor(y, x.dtype)


def _unfold(grad, plan):
    """torch's unfold of (N, C, *image) `grad` into (N, C * K, L) columns, for any number of axes."""
    image, kernel, dilation, padding, stride = plan
    padded = torch.nn.functional.pad(grad, [p for p in reversed(padding) for _ in range(2)])
    blocks = [(size + 2 * p - d * (k - 1) - 1) // s + 1
              for size, k, d, p, s in zip(image, kernel, dilation, padding, stride)]
    taps = []
    for tap in itertools.product(*map(range, kernel)):
        index = tuple(slice(t * d, t * d + (b - 1) * s + 1, s) for t, d, b, s in zip(tap, dilation, blocks, stride))
        taps.append(padded[(slice(None), slice(None), *index)])
    cols = torch.stack(taps, dim=2)  # (N, C, K, *blocks)
    return cols.reshape(grad.shape[0], grad.shape[1] * len(taps), math.prod(blocks))


class _Fold(torch.autograd.Function):
    """fold with autograd: backward is the unfold of the output's gradient."""

    @staticmethod
    def forward(ctx, x, plan):
        ctx.plan = plan
        return _fold_forward(x, plan)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        return _unfold(grad_y, ctx.plan), None


# ---------------------------------------------------------------------------------------------------------
# Tensors, numpy views, arguments
# ---------------------------------------------------------------------------------------------------------

def _batch(fn, t, n, name):
    """(t with a batch axis, whether it had one): an (n+1)- or (n+2)-D CPU tensor, non-empty but for N."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() not in (n + 1, n + 2) or 0 in t.shape[-n - 1:]:
        raise ArgumentError(f"{fn}: {name} must be a non-empty {n + 1}-D (unbatched) or {n + 2}-D (batch mode) "
                            f"tensor, with a batch size of 0 allowed; got shape {list(t.shape)}")
    _check_device(fn, t, name)
    return (t, True) if t.dim() == n + 2 else (t.unsqueeze(0), False)


def _check_device(fn, t, name):
    if not t.is_cpu:
        raise TypeError(f"{fn}: {name} is on {t.device}: pooling.torch runs on the CPU (move it with .cpu())")


def _check_dtype(fn, t, dtypes):
    if t.dtype not in dtypes:
        raise TypeError(f"{fn}: input has dtype {t.dtype}, which torch does not pool; supported: "
                        + ", ".join(str(d).removeprefix("torch.") for d in dtypes))


def _ints(fn, name, value, n, minimum):
    """torch's int-or-tuple argument as a tuple of n ints, each >= minimum."""
    values = [value] * n if isinstance(value, (int, np.integer)) else value
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int or a tuple of {n} ints, got {value!r}") from None
    if len(values) == 1:
        values = values * n
    if len(values) != n or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{fn}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    if min(values) < minimum:
        raise ArgumentError(f"{fn}: {name} must be >= {minimum} on every axis, got {value!r}")
    return tuple(int(v) for v in values)


def _stride(fn, stride, kernel):
    """torch's stride argument: None or an empty list mean `kernel`."""
    if stride is None or (isinstance(stride, (list, tuple)) and not stride):
        return kernel
    return _ints(fn, "stride", stride, len(kernel), 1)


# numpy's axes of an (N, C, *spatial) array in channels-last order, and back, by number of spatial axes
_LAST = {2: (0, 2, 3, 1), 3: (0, 2, 3, 4, 1)}
_FIRST = {2: (0, 3, 1, 2), 3: (0, 4, 1, 2, 3)}


def _layout(x, n):
    """("NHWC", a numpy view of x channels-last) for a channels_last tensor (no copy), else ("NCHW", x as a
    C-contiguous numpy array).  In numpy rather than torch: each torch call here went through its
    dispatcher, with cold caches between two kernels (docs/torch.md#the-cost-of-a-call)."""
    a = _as_numpy(x)
    if n in _LAST and not a.flags.c_contiguous:
        last = a.transpose(_LAST[n])
        if last.flags.c_contiguous:
            return "NHWC", last
    return "NCHW", np.ascontiguousarray(a)


def _to_nchw(layout, n):
    """The numpy axes that make an array of `layout` an (N, C, *spatial) view."""
    return _FIRST[n] if layout == "NHWC" else tuple(range(n + 2))


def _to_layout(a, layout, n):
    """numpy array `a`, (N, C, *spatial), as a view in `layout`'s axis order."""
    return a.transpose(_LAST[n]) if layout == "NHWC" else a


def _from_layout(a, layout, n):
    """numpy array `a` in `layout`'s axis order as an (N, C, *spatial) view."""
    return a.transpose(_FIRST[n]) if layout == "NHWC" else a


def _as_numpy(t):
    """A numpy view of CPU tensor `t` (`t`'s strides; a copy only of a lazily conjugated or negated tensor,
    whose values are resolved first); bfloat16 as ONNX's legacy bfloat16 dtype, which pooling reads, over
    the same bits."""
    if t.requires_grad:
        t = t.detach()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(LEGACY_BFLOAT16)
    return t.numpy()


def _as_tensor(a, dtype):
    """A tensor over numpy array `a` (no copy, `a`'s strides), of torch dtype `dtype` (bfloat16 from its
    bits)."""
    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _call(fn, function, *args, **kwargs):
    """function(*args, **kwargs), its errors naming the torch function too (a ValueError as an ArgumentError)."""
    try:
        return function(*args, **kwargs)
    except ValueError as e:
        raise ArgumentError(f"{fn}: {e}") from None
    except TypeError as e:
        raise TypeError(f"{fn}: {e}") from None
