"""pooling.torch against torch's own functions: values (to the bit), indices, memory formats, errors, and
gradients (torch.autograd.gradcheck in float64, torch's backward, one training step)."""
import doctest
import inspect
import itertools
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import pooling.torch as pt  # noqa: E402

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTS = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)
MEMORY_FORMATS = {2: torch.channels_last, 3: torch.channels_last_3d}
POOL = {1: (pt.max_pool1d, F.max_pool1d), 2: (pt.max_pool2d, F.max_pool2d), 3: (pt.max_pool3d, F.max_pool3d)}
UNPOOL = {1: (pt.max_unpool1d, F.max_unpool1d), 2: (pt.max_unpool2d, F.max_unpool2d),
          3: (pt.max_unpool3d, F.max_unpool3d)}
SPATIAL = {1: (11,), 2: (9, 10), 3: (4, 5, 6)}  # torch pools int8 volumes of at most 127 elements

# (kernel_size, stride, padding, dilation, ceil_mode): defaults, overlap, dilation, ceil_mode, per-axis tuples.
ATTRS = [
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    (3, 1, 1, 2, True),
    (2, 3, 1, 1, True),
    ("per-axis", None, None, None, False),
]


def _attrs(attrs, n):
    kernel, stride, padding, dilation, ceil_mode = attrs
    if kernel == "per-axis":
        return (3, 2, 2)[:n], (1, 2, 3)[:n], (1, 0, 1)[:n], (1, 2, 1)[:n], ceil_mode
    return kernel, stride, padding, dilation, ceil_mode


def random_tensor(shape, dtype, seed=0):
    """Many ties; floats also get NaN (several per window), -0.0, +-inf."""
    gen = torch.Generator().manual_seed(seed)
    if dtype in INTS:
        low, high = (0, 6) if dtype == torch.uint8 else (-3, 3)
        return torch.randint(low, high, shape, generator=gen).to(dtype)
    values = torch.randint(-4, 5, shape, generator=gen).double()
    u = torch.rand(shape, generator=gen, dtype=torch.float64)
    values[u < 0.06] = float("nan")
    values[(u >= 0.06) & (u < 0.14)] = -0.0
    values[(u >= 0.14) & (u < 0.16)] = float("-inf")
    values[(u >= 0.16) & (u < 0.17)] = float("inf")
    return values.to(dtype)


def bits(t):
    """The tensor's bits, as integers of its width (NaN payloads and -0.0 compared too)."""
    if t.is_complex():
        t = torch.view_as_real(t)
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(width)


def assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert torch.equal(bits(got), bits(want))


def _formats(n):
    return ["contiguous"] + (["channels_last"] if n in MEMORY_FORMATS else [])


def _in_format(t, fmt, n):
    return t.to(memory_format=MEMORY_FORMATS[n]) if fmt == "channels_last" else t


# ---------------------------------------------------------------------------------------------------------
# max_pool: values and indices
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("attrs", ATTRS, ids=str)
def test_max_pool_matches_torch(n, dtype, attrs):
    ours, theirs = POOL[n]
    kernel, stride, padding, dilation, ceil_mode = _attrs(attrs, n)
    kw = dict(stride=stride, dilation=dilation, ceil_mode=ceil_mode)
    if padding is not None:
        kw["padding"] = padding
    for fmt in _formats(n):
        x = _in_format(random_tensor((2, 3) + SPATIAL[n], dtype, seed=n), fmt, n)
        before = x.clone()
        want_y, want_i = theirs(x, kernel, **kw, return_indices=True)
        got_y, got_i = ours(x, kernel, **kw, return_indices=True)
        assert_same(got_y, want_y)
        assert got_i.dtype == torch.int64 and torch.equal(got_i, want_i)
        assert_same(ours(x, kernel, **kw), want_y)
        if fmt == "channels_last":
            assert got_y.is_contiguous(memory_format=MEMORY_FORMATS[n])
            assert got_i.is_contiguous(memory_format=MEMORY_FORMATS[n])
        assert torch.equal(bits(x), bits(before))  # never written


@pytest.mark.parametrize("n", [1, 2, 3])
def test_unbatched_input(n):
    ours, theirs = POOL[n]
    x = random_tensor((3,) + SPATIAL[n], torch.float32)
    got, want = ours(x, 3, 2, 1, return_indices=True), theirs(x, 3, 2, 1, return_indices=True)
    assert_same(got[0], want[0])
    assert torch.equal(got[1], want[1])
    # Channels-last strides on an unbatched input: torch's results are contiguous all the same.
    xl = x.movedim(0, -1).contiguous().movedim(-1, 0)
    got = ours(xl, 3, 2, 1, return_indices=True)
    assert got[0].is_contiguous() and got[1].is_contiguous()
    assert_same(got[0], want[0])
    assert torch.equal(got[1], want[1])


def test_several_nans_in_a_window_give_the_last_one_as_torch():
    nan1 = torch.tensor(float("nan"))
    nan2 = -torch.tensor(float("nan"))  # another payload: the output is the last NaN's bits
    x = torch.tensor([[[1.0, 0.0, 2.0, 0.0, 3.0, 0.0]]])
    x[0, 0, 1], x[0, 0, 3] = nan1, nan2
    y, i = pt.max_pool1d(x, 6, return_indices=True)
    assert i.item() == 3 and torch.equal(bits(y), bits(x[..., 3:4]))
    want = F.max_pool1d(x, 6, return_indices=True)
    assert torch.equal(i, want[1]) and torch.equal(bits(y), bits(want[0]))


@pytest.mark.parametrize("dtype, payloads", [
    (torch.float16, [-1, 0x7C01, 0x7E00]),
    (torch.bfloat16, [-1, 0x7F81, 0x7FC0]),
    (torch.float32, [-1, 0x7F800001, 0x7FC00000]),
    (torch.float64, [-1, 0x7FF0000000000001]),
], ids=str)
def test_nan_bits_are_torchs(dtype, payloads):
    """Signalling and negative NaNs: float16 ones come back quiet, bfloat16 ones as 0x7FC0, as torch's
    kernels (which pass 16-bit floats through float32) give them."""
    for payload in payloads:
        x = torch.tensor([[[1.0, 0.0, 2.0, 0.0, 5.0, 0.0]]], dtype=dtype)
        x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])[0, 0, [1, 3]] = payload
        want = F.max_pool1d(x, 3, return_indices=True)
        got = pt.max_pool1d(x, 3, return_indices=True)
        assert_same(got[0], want[0])
        assert torch.equal(got[1], want[1])


@pytest.mark.parametrize("n", sorted(MEMORY_FORMATS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_channels_last_with_one_nan_or_none(n, dtype):
    """On channels_last tensors the kernel says whether it wrote a NaN (pooling.torch then applies torch's
    NaN rule, else it skips it): no NaN, two NaNs of different payloads in the last window only (the last
    on the threads' last work item), a NaN no window reads, at one and four threads."""
    ours, theirs = POOL[n]
    x = random_tensor((2, 16) + SPATIAL[n], dtype, seed=3).nan_to_num(0.0, 9.0, -9.0)
    last = x.clone()
    last[(1, 15) + tuple(s - 1 for s in SPATIAL[n])] = float("nan")
    last[(1, 15) + tuple(s - 2 for s in SPATIAL[n])] = -torch.tensor(float("nan"), dtype=dtype)
    unread = x.clone()
    unread[(0, 3) + (2,) * n] = float("nan")  # k2 s3: every third position is read by no window
    before = torch.get_num_threads()
    try:
        for threads, (t, kw) in itertools.product((1, 4), [(x, dict(kernel_size=3, stride=2, padding=1)),
                                                           (last, dict(kernel_size=3, stride=2, padding=1)),
                                                           (unread, dict(kernel_size=2, stride=3))]):
            torch.set_num_threads(threads)
            t = t.to(memory_format=MEMORY_FORMATS[n])
            got, want = ours(t, **kw, return_indices=True), theirs(t, **kw, return_indices=True)
            if dtype == torch.bfloat16:  # torch's channels_last vector loop makes NaN 0xFFFF (docs/torch.md)
                nan = want[0].isnan()
                assert torch.equal(got[0].isnan(), nan) and torch.equal(bits(got[0])[nan] & 0xFFFF,
                                                                        torch.full_like(bits(got[0])[nan], 0x7FC0))
                want = (torch.where(nan, torch.zeros_like(want[0]), want[0]), want[1])
                got = (torch.where(nan, torch.zeros_like(got[0]), got[0]), got[1])
            assert_same(got[0], want[0])
            assert torch.equal(got[1], want[1])
    finally:
        torch.set_num_threads(before)


def test_an_all_nan_input_gives_torchs_indices():
    x = torch.full((1, 2, 7, 8), float("nan"))
    for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, dilation=3, ceil_mode=True)):
        got, want = pt.max_pool2d(x, **kw, return_indices=True), F.max_pool2d(x, **kw, return_indices=True)
        assert torch.equal(got[1], want[1])


def test_int64_beyond_float64_precision_is_exact():
    x = torch.tensor([[[2**62, 2**62 + 1, -(2**63), 5, 2**53 + 1, 2**53]]], dtype=torch.int64)
    y, i = pt.max_pool1d(x, 2, return_indices=True)
    want = F.max_pool1d(x, 2, return_indices=True)
    assert torch.equal(y, want[0]) and torch.equal(i, want[1])


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("fmt", ["contiguous", "channels_last"])
def test_integers_over_their_whole_range_match_torch_without_an_upcast(dtype, fmt, monkeypatch):
    """int16-int64 run in pooling's own integer kernels (no float in between, no fallback to torch's),
    over values at both ends of their range: torch's values and indices bit for bit."""
    import pooling
    seen = []
    real = pooling.max_pool

    def spy(x, *args, **kwargs):
        seen.append(x.dtype)
        return real(x, *args, **kwargs)
    monkeypatch.setattr(pt._pooling, "max_pool", spy)
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(7)
    ends = torch.tensor([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], dtype=torch.int64)
    x = ends[torch.randint(0, ends.numel(), (2, 5, 9, 12), generator=gen)].to(dtype)
    x = _in_format(x, fmt, 2)
    for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, dilation=2, ceil_mode=True)):
        got, want = pt.max_pool2d(x, **kw, return_indices=True), F.max_pool2d(x, **kw, return_indices=True)
        assert_same(got[0], want[0])
        assert torch.equal(got[1], want[1])
    assert seen and all(d == np.dtype(str(dtype).removeprefix("torch.")) for d in seen), seen


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_unsigned_integers_beyond_torch(dtype):
    """uint16-uint64 (torch has the dtypes but does not pool them): pooling's values and indices, the
    top bit set or not."""
    import pooling
    info = torch.iinfo(dtype) if dtype != torch.uint64 else None
    top = 2**64 - 1 if dtype == torch.uint64 else info.max
    values = np.array([0, 1, 2, top // 2, top // 2 + 1, top - 1, top], dtype=str(dtype).removeprefix("torch."))
    rng = np.random.default_rng(3)
    x = values[rng.integers(0, values.size, (2, 3, 7, 9))]
    xt = torch.from_numpy(x)
    for fmt in ("contiguous", "channels_last"):
        y, i = pt.max_pool2d(_in_format(xt, fmt, 2), 3, 2, 1, return_indices=True)
        want_y, want_i = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True, index_format="plane")
        assert y.dtype == dtype and np.array_equal(y.numpy(), want_y) and np.array_equal(i.numpy(), want_i)


def test_bool_masks_dilate_as_torch_on_their_uint8_cast():
    """bool, an extension beyond torch: True wins, the first True gives the index, as torch's max_pool2d
    on the uint8 cast of the mask (values and indices); the result is bool."""
    gen = torch.Generator().manual_seed(11)
    mask = torch.rand(2, 3, 9, 12, generator=gen) < 0.2  # (torch: uint8 planes of at most 127 with indices)
    for fmt in ("contiguous", "channels_last"):
        m = _in_format(mask, fmt, 2)
        y, i = pt.max_pool2d(m, 3, 1, 1, return_indices=True)
        want_y, want_i = F.max_pool2d(m.to(torch.uint8), 3, 1, 1, return_indices=True)
        assert y.dtype == torch.bool and torch.equal(y, want_y.bool()) and torch.equal(i, want_i)
    small = mask[None, :, :, :5, :5]  # (and volumes of at most 127)
    assert torch.equal(pt.max_pool3d(small, (1, 2, 2)), F.max_pool3d(small.to(torch.uint8), (1, 2, 2)).bool())


@pytest.mark.parametrize("dtype", [torch.int16, torch.uint32, torch.int64, torch.bool], ids=str)
def test_max_unpool_moves_integers_and_bool(dtype):
    """max_unpool of the new dtypes (torch's own has no integer max_unpool): the values back at their
    indices, zeros elsewhere."""
    x = torch.arange(2 * 3 * 8 * 8).reshape(2, 3, 8, 8) % 5
    x = x.to(dtype)
    y, i = pt.max_pool2d(x, 2, return_indices=True)
    back = pt.max_unpool2d(y, i, 2)
    wide = torch.int64 if dtype != torch.bool else torch.uint8  # (torch's scatter lacks uint32)
    want = torch.zeros(x.shape, dtype=wide).view(2, 3, -1).scatter(2, i.view(2, 3, -1), y.to(wide).view(2, 3, -1))
    assert back.dtype == dtype and torch.equal(back.to(wide), want.view(x.shape))


def test_integer_windows_of_the_minimum_get_their_first_index():
    """torch's channels_last integer kernels leave such a window's index where it was (here 2, a position
    outside the window); its contiguous kernels, and these functions in both formats, give the first."""
    x = torch.tensor([3, 0, 0, 2, 1, 4, 3, 5, 2, 2, 2, 1, 5, 2, 2, 4, 3, 4, 0, 5, 0, 5, 3, 3], dtype=torch.uint8)
    x = x.reshape(1, 1, 3, 2, 4).expand(1, 2, 3, 2, 4).contiguous()
    args = ([1, 1, 2], [2, 3, 2], 0, [2, 3, 2], True)
    want = F.max_pool3d(x, *args, return_indices=True)[1]
    assert want[0, 0].flatten().tolist() == [0, 2, 16, 18]
    for xx in (x, x.to(memory_format=torch.channels_last_3d)):
        assert torch.equal(pt.max_pool3d(xx, *args, return_indices=True)[1], want)


def test_windows_of_no_element():
    """Possible only where a dilation steps over a tiny input: -inf (integers: their minimum) and index -1."""
    for dtype in (torch.float32, torch.int8, torch.int16, torch.int64):
        y, i = pt.max_pool1d(torch.tensor([[[1, 2]]], dtype=dtype), 2, 1, 1, 3, return_indices=True)
        low = float("-inf") if dtype.is_floating_point else torch.iinfo(dtype).min
        assert y.tolist() == [[[low]]] and i.tolist() == [[[-1]]]
    x = torch.tensor([[[1.0, 2.0]]], requires_grad=True)
    pt.max_pool1d(x, 2, 1, 1, 3).sum().backward()
    assert x.grad.tolist() == [[[0.0, 0.0]]]


def test_other_strides_are_copied_and_pooled():
    x = random_tensor((2, 3, 12, 10), torch.float32)[:, :, ::2, 1:]
    assert_same(pt.max_pool2d(x, 2), F.max_pool2d(x, 2))


def test_argument_spellings_torch_accepts():
    x = random_tensor((2, 3, 9, 10), torch.float32)
    want = F.max_pool2d(x, (3, 2), stride=[], padding=(1, 0))
    for kw in (dict(kernel_size=(3, 2), stride=[], padding=(1, 0)),
               dict(kernel_size=[3, 2], stride=None, padding=[1, 0]),
               dict(kernel_size=(np.int64(3), 2), stride=(3, 2), padding=(1, 0), dilation=(1,))):
        assert_same(pt.max_pool2d(x, **kw), want)


def test_empty_batch():
    x = torch.ones(0, 3, 8, 8)
    y, i = pt.max_pool2d(x, 2, return_indices=True)
    assert y.shape == i.shape == (0, 3, 4, 4)


@pytest.mark.parametrize("kw, shape", [
    (dict(kernel_size=2, padding=2), (1, 1, 4, 4)),        # padding past half the kernel
    (dict(kernel_size=3, dilation=2, padding=2), (1, 1, 8, 8)),   # half the kernel, not the dilated one
    (dict(kernel_size=0), (1, 1, 4, 4)),
    (dict(kernel_size=2, stride=0), (1, 1, 4, 4)),
    (dict(kernel_size=2, dilation=0), (1, 1, 4, 4)),
    (dict(kernel_size=2, padding=-1), (1, 1, 4, 4)),
    (dict(kernel_size=3), (1, 1, 2, 2)),                   # output size 0
    (dict(kernel_size=2), (1, 1, 1, 4, 4)),                # wrong rank
    (dict(kernel_size=2), (4, 4)),
    (dict(kernel_size=2), (1, 0, 4, 4)),                   # empty channel axis
])
def test_max_pool_errors_where_torch_raises(kw, shape):
    x = torch.ones(shape)
    with pytest.raises(RuntimeError):
        F.max_pool2d(x, **kw)
    with pytest.raises(pt.ArgumentError, match=r"^max_pool2d: ") as info:
        pt.max_pool2d(x, **kw)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("bad, error", [
    (dict(input=torch.ones(1, 1, 4, 4, dtype=torch.complex128)), r"input has dtype torch.complex128"),
    (dict(input=torch.ones(1, 1, 4, 4, dtype=torch.complex64)), r"input has dtype torch.complex64"),
    (dict(input=np.ones((1, 1, 4, 4))), r"input must be a torch.Tensor"),
    (dict(kernel_size=2.0), r"kernel_size must be an int or a tuple of 2 ints"),
    (dict(kernel_size=(2, 2, 2)), r"kernel_size must be an int or a tuple of 2 ints"),
    (dict(stride="2"), r"stride must be an int"),
])
def test_max_pool_type_errors(bad, error):
    kw = dict(input=torch.ones(1, 1, 4, 4), kernel_size=2) | bad
    with pytest.raises(TypeError, match=r"^max_pool2d: " + error):
        pt.max_pool2d(**kw)


# ---------------------------------------------------------------------------------------------------------
# max_unpool
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), (2, 1, 0), (3, 3, 1)])
def test_max_unpool_matches_torch(n, dtype, kernel, stride, padding):
    pool, _ = POOL[n]
    ours, theirs = UNPOOL[n]
    for fmt in _formats(n):
        x = _in_format(random_tensor((2, 3) + SPATIAL[n], dtype, seed=3), fmt, n)
        y, i = pool(x, kernel, stride, padding, return_indices=True)
        default = [(d - 1) * (stride or kernel) - 2 * padding + kernel for d in y.shape[2:]]
        # The input's size (indices are offsets in its planes), the default where that is it, and one past
        # the default within torch's range.
        sizes = [list(x.shape[2:])] + [None] * (default == list(x.shape[2:]))
        sizes += [[d + 1 for d in default]] * ((stride or kernel) > 1 and x.shape[2:] == tuple(default))
        for size in sizes:
            got, want = ours(y, i, kernel, stride, padding, size), theirs(y, i, kernel, stride, padding, size)
            assert_same(got, want)
            assert got.is_contiguous() == want.is_contiguous()  # 2-D keeps channels_last, 3-D does not


def test_max_unpool_channels_last_input_with_contiguous_indices():
    x = random_tensor((2, 3, 8, 8), torch.float32)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    yl = y.to(memory_format=torch.channels_last)
    got, want = pt.max_unpool2d(yl, i, 2), F.max_unpool2d(yl, i, 2)
    assert_same(got, want)
    assert got.is_contiguous(memory_format=torch.channels_last) == want.is_contiguous(memory_format=torch.channels_last)


def test_max_unpool_default_output_size():
    x = random_tensor((2, 3, 8, 6), torch.float32)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert_same(pt.max_unpool2d(y, i, 2), F.max_unpool2d(y, i, 2))
    y, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert_same(pt.max_unpool2d(y, i, 3, 2, 1, (8, 6)), F.max_unpool2d(y, i, 3, 2, 1, (8, 6)))


def test_max_unpool_unbatched_and_full_output_size():
    y, i = F.max_pool2d(random_tensor((3, 9, 9), torch.float32), 2, return_indices=True)
    assert_same(pt.max_unpool2d(y, i, 2, output_size=(1, 3, 9, 9)), F.max_unpool2d(y, i, 2, output_size=(1, 3, 9, 9)))


def test_max_unpool_duplicate_indices_last_wins():
    """Where torch's CPU kernel leaves it undefined (it gives 2 or 3 here), the last one wins."""
    x = torch.tensor([[[1.0, 2.0, 3.0]]])
    assert pt.max_unpool1d(x, torch.tensor([[[0, 0, 0]]]), 2).tolist() == [[[3.0, 0, 0, 0, 0, 0]]]


def test_max_unpool_errors():
    x = torch.ones(1, 1, 3)
    with pytest.raises(pt.ArgumentError, match=r"^max_unpool1d: "):
        pt.max_unpool1d(x, torch.tensor([[[0, 9, 0]]]), 2)
    with pytest.raises(RuntimeError):
        F.max_unpool1d(x, torch.tensor([[[0, 9, 0]]]), 2)
    with pytest.raises(ValueError, match=r"^max_unpool1d: output_size \[9\] is out of range"):
        pt.max_unpool1d(x, torch.zeros(1, 1, 3, dtype=torch.int64), 2, output_size=[9])
    with pytest.raises(ValueError):
        F.max_unpool1d(x, torch.zeros(1, 1, 3, dtype=torch.int64), 2, output_size=[9])
    with pytest.raises(pt.ArgumentError, match=r"indices must have the shape of input"):
        pt.max_unpool1d(x, torch.zeros(1, 1, 2, dtype=torch.int64), 2)
    with pytest.raises(ValueError, match=r"^max_unpool1d: output_size must have 1 or 3 values"):
        pt.max_unpool1d(x, torch.zeros(1, 1, 3, dtype=torch.int64), 2, output_size=[1, 6])
    with pytest.raises(TypeError, match=r"indices must be an integer tensor"):
        pt.max_unpool1d(x, torch.zeros(1, 1, 3), 2)


# ---------------------------------------------------------------------------------------------------------
# fold
# ---------------------------------------------------------------------------------------------------------

FOLD_ATTRS = [
    dict(output_size=(6, 7), kernel_size=2),
    dict(output_size=(8, 9), kernel_size=(3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1)),
    dict(output_size=5, kernel_size=3, padding=1, stride=2),
]


def _columns(attrs, channels, dtype):
    """Random columns of small integers (exact sums in every dtype) for 2 images of the blocks of `attrs`,
    shaped as torch's unfold makes them."""
    size = attrs["output_size"]
    image = torch.zeros((2, channels) + ((size, size) if isinstance(size, int) else size))
    shape = F.unfold(image, **{k: v for k, v in attrs.items() if k != "output_size"}).shape
    values = torch.randint(-3, 4, shape, generator=torch.Generator().manual_seed(5))
    return values.to(dtype) if dtype != torch.bool else values > 0


@pytest.mark.parametrize("dtype", FLOATS + (torch.bool, torch.complex64, torch.complex128), ids=str)
@pytest.mark.parametrize("attrs", FOLD_ATTRS, ids=str)
def test_fold_matches_torch(dtype, attrs):
    x = _columns(attrs, 3, dtype)
    assert_same(pt.fold(x, **attrs), F.fold(x, **attrs))
    assert_same(pt.fold(x[0], **attrs), F.fold(x[0], **attrs))  # unbatched


def test_fold_errors_where_torch_raises():
    x = torch.ones(1, 5, 9)
    with pytest.raises(RuntimeError):
        F.fold(x, (4, 4), 2)
    with pytest.raises(pt.ArgumentError, match=r"^fold: "):
        pt.fold(x, (4, 4), 2)
    with pytest.raises(pt.ArgumentError, match=r"^fold: input must be 2-D"):
        pt.fold(torch.ones(1, 1, 4, 9), (4, 4), 2)


def test_fold_of_other_ranks_is_the_adjoint_of_unfold():
    """Folding 1-D and 3-D blocks (an extension: torch folds 2-D only) is what col2im computes, and its
    gradient, the unfold, passes gradcheck."""
    for image, kernel in (((7,), (3,)), ((4, 5, 3), (2, 3, 1))):
        attrs = dict(output_size=image, kernel_size=kernel, padding=1, stride=2)
        blocks = math.prod((s + 2 - k) // 2 + 1 for s, k in zip(image, kernel))
        x = torch.randn(2, 2 * math.prod(kernel), blocks, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: pt.fold(t, **attrs), (x,))


# ---------------------------------------------------------------------------------------------------------
# autograd
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_pool_gradcheck(n):
    ours, _ = POOL[n]
    for fmt, (kernel, stride, padding, dilation, ceil_mode) in itertools.product(
            _formats(n), [(2, None, 0, 1, False), (3, 2, 1, 1, True), (2, 1, 1, 2, False)]):
        x = torch.randn((2, 3) + SPATIAL[n], dtype=torch.float64, generator=torch.Generator().manual_seed(n))
        x = _in_format(x, fmt, n).requires_grad_()
        assert torch.autograd.gradcheck(
            lambda t: ours(t, kernel, stride, padding, dilation, ceil_mode), (x,))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_gradcheck(n):
    pool, _ = POOL[n]
    ours, _ = UNPOOL[n]
    x = torch.randn((2, 3) + SPATIAL[n], dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    y, i = pool(x, 2, return_indices=True)
    y.requires_grad_()
    assert torch.autograd.gradcheck(lambda t: ours(t, i, 2, output_size=x.shape), (y,))


def test_fold_gradcheck():
    x = _columns(FOLD_ATTRS[1], 3, torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: pt.fold(t, **FOLD_ATTRS[1]), (x,))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_pool_backward_matches_torch(n, dtype):
    """With ties and overlapping windows, so that one element gathers several gradients."""
    ours, theirs = POOL[n]
    for fmt in _formats(n):
        base = random_tensor((2, 3) + SPATIAL[n], dtype, seed=7).nan_to_num(0.0, 9.0, -9.0)
        grads = []
        for fn in (ours, theirs):
            x = _in_format(base.clone(), fmt, n).requires_grad_()
            y = fn(x, 3, 2, 1)
            y.backward(torch.arange(y.numel(), dtype=dtype).reshape(y.shape) % 5)
            grads.append(x.grad)
        assert_same(grads[0], grads[1])


@pytest.mark.parametrize("n", sorted(MEMORY_FORMATS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_backward_gathered_from_the_windows(n, dtype, monkeypatch):
    """channels_last with strides >= kernel (VGG's k2 s2, gaps between windows, pads, ceil_mode): float32
    and float64 take the kernel that writes each element of dx once, gathered from the windows over it;
    float32 also through windows that overlap (ResNet's k3 s2 p1) where this build's vectors take them;
    16-bit floats the scatter.  Every gradient is torch's."""
    from pooling._dispatch import core
    from pooling.maxpool_grad import _grad_windows
    calls = []
    monkeypatch.setattr(pt, "_grad_windows", lambda *a, **kw: calls.append(1) or _grad_windows(*a, **kw))
    ours, theirs = POOL[n]
    base = random_tensor((2, 24) + SPATIAL[n], dtype, seed=11).nan_to_num(0.0, 9.0, -9.0)
    for kw in (dict(kernel_size=2), dict(kernel_size=2, stride=3, padding=1),
               dict(kernel_size=3, stride=4, padding=1, ceil_mode=True), dict(kernel_size=3, stride=2, padding=1)):
        grads = []
        for fn in (ours, theirs):
            x = base.clone().to(memory_format=MEMORY_FORMATS[n]).requires_grad_()
            y = fn(x, **kw)
            y.backward((torch.arange(y.numel(), dtype=dtype).reshape(y.shape) % 7 - 3)
                       .to(memory_format=MEMORY_FORMATS[n]))
            grads.append(x.grad)
        assert_same(grads[0], grads[1])
    overlapping = dtype == torch.float32 and 2 ** n <= core.GRAD_COVER_F32  # k3 s2: 2 windows a side
    assert len(calls) == (3 + overlapping if dtype in (torch.float32, torch.float64) else 0)


def test_one_training_step_matches_torch():
    def model(pool):
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        linear = torch.nn.Linear(8 * 4 * 4, 5)

        def forward(x):
            return linear(pool(torch.relu(conv(x)), 3, stride=2, padding=1).flatten(1))
        return forward, [*conv.parameters(), *linear.parameters()]

    x = torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    target = torch.randint(0, 5, (4,), generator=torch.Generator().manual_seed(2))
    results = []
    for pool in (pt.max_pool2d, F.max_pool2d):
        forward, params = model(pool)
        optimizer = torch.optim.SGD(params, lr=0.1)
        loss = F.cross_entropy(forward(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        results.append((loss.detach(), [p.detach().clone() for p in params]))
    assert torch.equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_indices_have_no_gradient():
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    y, i = pt.max_pool2d(x, 2, return_indices=True)
    assert y.requires_grad and not i.requires_grad and i.dtype == torch.int64


@pytest.mark.parametrize("channels_last", [False, True])
def test_backward_fills_no_zeros_for_the_indices(channels_last):
    """The engine hands backward no zeros for the non-differentiable Indices (set_materialize_grads):
    it filled an int64 tensor of y's size on every pass, as long as the gradient kernel itself.  The
    gradient is still torch's."""
    x = torch.randn(2, 8, 12, 12)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    g = torch.randn(2, 8, 6, 6)
    with torch.profiler.profile() as prof:
        y, _ = pt.max_pool2d(x, 3, 2, 1, return_indices=True)
        y.backward(g)
    names = {event.key for event in prof.key_averages()}
    assert not names & {"aten::fill_", "aten::zeros", "aten::zero_"}, names
    want = x.detach().clone().requires_grad_()
    F.max_pool2d(want, 3, 2, 1).backward(g)
    assert torch.equal(x.grad, want.grad)


def test_indices_changed_in_place_refuse_the_backward():
    """backward reads the forward's own Indices memory; autograd's version check still refuses it once they
    were changed in place, as it does for torch's own max_pool2d."""
    for memory_format in (torch.contiguous_format, torch.channels_last):
        x = torch.randn(1, 4, 8, 8).contiguous(memory_format=memory_format).requires_grad_()
        y, i = pt.max_pool2d(x, 3, 2, 1, return_indices=True)
        i.zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("channels_last", [False, True])
def test_gradient_of_a_strided_output_gradient(channels_last):
    """The output's gradient in another memory format than the forward's, or a strided view: read in its
    own strides, the same gradient as torch's."""
    x = random_tensor((2, 8, 13, 11), torch.float32)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    base = torch.randn(2, 8, 7, 12)[..., ::2]
    for g in (base, base.contiguous(memory_format=torch.channels_last), base.contiguous()):
        got, = torch.autograd.grad(pt.max_pool2d(x, 3, 2, 1), x, g)
        want, = torch.autograd.grad(F.max_pool2d(x, 3, 2, 1), x, g)
        assert torch.equal(got, want)
        assert got.is_contiguous(memory_format=torch.channels_last) == channels_last


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_a_lazily_negated_tensor_is_read_as_its_values(dtype):
    """A tensor with the negative bit set (torch's lazy negation) cannot be read as NumPy as it is: its
    values are resolved first, bfloat16's before its int16 view; as input and as the output's gradient."""
    x = random_tensor((1, 3, 8, 8), dtype)
    neg = torch._neg_view(x)
    assert neg.is_neg()
    for got, want in zip(pt.max_pool2d(neg, 2, return_indices=True), F.max_pool2d(-x, 2, return_indices=True)):
        assert_same(got, want)
    g = torch.randn(1, 3, 4, 4).to(dtype)
    grads = []
    for pool, gy in ((pt.max_pool2d, torch._neg_view(g)), (F.max_pool2d, -g)):
        leaf = x.nan_to_num(0.0).clone().requires_grad_()
        grads.append(torch.autograd.grad(pool(leaf, 2), leaf, gy)[0])
    assert_same(grads[0], grads[1])


def test_a_lazily_conjugated_complex_fold():
    """fold of a complex tensor with the conjugate bit set: its values, resolved first."""
    x = torch.randn(1, 16, 9, dtype=torch.complex64, generator=torch.Generator().manual_seed(3)).conj()
    assert x.is_conj()
    torch.testing.assert_close(pt.fold(x, (4, 4), 2), F.fold(x.resolve_conj(), (4, 4), 2))


def test_cached_arguments_keep_their_types_apart():
    """Validated arguments are cached per shape and values; a bool or float spelling of a cached int is
    still refused, and a cached call answers as the first did."""
    x = random_tensor((1, 2, 8, 8), torch.float32)
    for _ in range(2):
        assert_same(pt.max_pool2d(x, (2, 2), 2), F.max_pool2d(x, (2, 2), 2))
        assert_same(pt.max_pool2d(x, (1, 1), 1), F.max_pool2d(x, (1, 1), 1))  # (True, True) == (1, 1)
        with pytest.raises(TypeError, match=r"^max_pool2d: kernel_size must be an int"):
            pt.max_pool2d(x, (True, True), 1)
        with pytest.raises(TypeError, match=r"^max_pool2d: kernel_size must be an int"):
            pt.max_pool2d(x, (2.0, 2), 2)
        with pytest.raises(pt.ArgumentError, match=r"^max_pool2d: the output size"):
            pt.max_pool2d(x[..., :1, :1], (2, 2), 2)


def test_a_second_derivative_is_refused():
    """backward is pooling's kernel, not torch ops: under create_graph=True, with an output gradient that
    requires grad, its result carries the error torch's once_differentiable raises when it is differentiated
    again; without create_graph it is a plain tensor."""
    x = torch.randn(1, 2, 6, 6, requires_grad=True)
    v = torch.randn(1, 2, 3, 3, requires_grad=True)
    gx, = torch.autograd.grad(pt.max_pool2d(x, 3, 2, 1), x, v, create_graph=True)
    assert gx.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice"):
        gx.sum().backward()
    gx, = torch.autograd.grad(pt.max_pool2d(x, 3, 2, 1), x, v)
    assert gx.grad_fn is None and not gx.requires_grad


def test_no_grad_builds_no_graph():
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    with torch.no_grad():
        assert not pt.max_pool2d(x, 2).requires_grad


# ---------------------------------------------------------------------------------------------------------
# the module
# ---------------------------------------------------------------------------------------------------------

def test_import_pooling_does_not_import_torch():
    code = "import sys, pooling; pooling.max_pool([[[1.0, 2.0]]], 1); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


PUBLIC = [name for name in pt.__all__ if inspect.isfunction(getattr(pt, name))]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_examples_run(name):
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(getattr(pt, name), name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 1 and result.failed == 0, result


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_sections_and_parameters(name):
    function = getattr(pt, name)
    doc = inspect.getdoc(function)
    sections = re.findall(r"^(\w[\w ]*)\n-+$", doc, re.M)
    assert sections == ["Parameters", "Returns", "Raises", "See Also", "Notes", "Examples"], sections
    for p in inspect.signature(function).parameters.values():
        entry = re.search(rf"^{p.name} : (.+)$", doc, re.M)
        assert entry, f"{name}: parameter {p.name} is not documented"
        if p.default is not inspect.Parameter.empty:
            assert ("optional" if p.default is None else f"default {p.default!r}") in entry.group(1), entry.group(0)


TYPED_USE = '''
from typing import assert_type

import torch

import pooling.torch as pt

x = torch.randn(2, 3, 8, 8)
assert_type(pt.max_pool2d(x, 3, stride=2, padding=1), torch.Tensor)
pair = pt.max_pool2d(x, 2, return_indices=True)
assert_type(pair, tuple[torch.Tensor, torch.Tensor])
y1 = pt.max_pool1d(x[0], (2,), None, 0, 1, False)
y3, i3 = pt.max_pool3d(x[None], [2, 2, 2], return_indices=True)
assert_type(pt.max_unpool3d(y3, i3, 2), torch.Tensor)
assert_type(pt.max_unpool2d(*pair, 2, output_size=[8, 8]), torch.Tensor)
assert_type(pt.max_unpool1d(y1, y1.long(), 2, stride=None, padding=0, output_size=None), torch.Tensor)
assert_type(pt.fold(torch.ones(1, 4, 9), (4, 4), 2, dilation=1, padding=0, stride=1), torch.Tensor)
either = pt.max_pool2d(x, 2, return_indices=x.sum().item() > 0)
assert_type(either, torch.Tensor | tuple[torch.Tensor, torch.Tensor])
try:
    pt.max_pool2d(x, 0)
except pt.ArgumentError as e:
    assert_type(e, pt.ArgumentError)
'''

WRONG_USE = {  # each an error under mypy
    "pair_has_no_ndim": "pt.max_pool2d(x, 2, return_indices=True).ndim",
    "kernel_str": 'pt.max_pool2d(x, "2")',
    "stride_float": "pt.max_pool1d(x, 2, stride=1.5)",
    "fold_size_missing": "pt.fold(x, kernel_size=2)",
}


@pytest.mark.typecheck
@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_types_under_strict_checkers(tmp_path, checker):
    """A user's script type-checks under mypy --strict and pyright's strict mode with precise results;
    wrong calls are errors."""
    if checker == "mypy":
        pytest.importorskip("mypy", reason="mypy is not installed")
        command = [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--no-error-summary",
                   "--cache-dir", str(tmp_path / ".cache")]
        (tmp_path / "mypy.ini").write_text("[mypy]\n")
        pattern = r"^(\S+\.py):\d+: error"
    else:
        if shutil.which("pyright") is None:
            pytest.skip("pyright is not installed")
        command = ["pyright", "--pythonpath", sys.executable]
        (tmp_path / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict"}')
        pattern = r"^\s*\S*?([^/\\\s]+\.py):\d+:\d+ - error"
    (tmp_path / "good.py").write_text(TYPED_USE)
    for name, line in WRONG_USE.items():
        (tmp_path / f"bad_{name}.py").write_text("import torch\nimport pooling.torch as pt\nx = torch.ones(1, 1, 4)\n"
                                                 + line + "\n")
    src = str(Path(pt.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    files = ["good.py"] + [f"bad_{name}.py" for name in WRONG_USE]
    run = subprocess.run(command + files, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    errors = set(re.findall(pattern, run.stdout, re.M))
    assert "good.py" not in errors, run.stdout
    assert errors == {f"bad_{name}.py" for name in WRONG_USE}, run.stdout + run.stderr


def test_pooling_torch_is_an_attribute_after_import_pooling():
    """`import pooling` then `pooling.torch.max_pool2d`: the submodule loads on first use."""
    code = ("import sys, pooling; assert 'torch' not in sys.modules; "
            "f = pooling.torch.max_pool2d; assert 'torch' in sys.modules; print(f.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "max_pool2d", out.stderr
