"""pooling.torch against torch's own functions, on torch tensors: one group per case, each at 2 threads and at
1 (torch.set_num_threads, which pooling.torch follows), forward with Indices and forward + backward,
contiguous and channels_last, the integer dtypes torch pools, a bool mask (torch: its uint8 cast), and fold.
Every member's result is checked against torch's.  A last member, the memory floor, copies half the bytes the
case moves into the other half (numpy, one thread; cases.py's floor).

    python -m pytest bench/test_torch_dropin.py                     # timings
    python bench/report.py -k dropin                                # the table
"""
import functools
import math

import pytest

from cases import THREADS

torch = pytest.importorskip("torch")
F = torch.nn.functional
pt = pytest.importorskip("pooling.torch")

DROPIN_PREFIX = "dropin "  # the groups' prefix (report.py tabulates them on their own)
POOL = dict(kernel_size=3, stride=2, padding=1)
FOLD = dict(output_size=(56, 56), kernel_size=3, padding=1)
STEM = (8, 64, 112, 112)
# The other shapes of issue 40's channels-last targets: ResNet's stem at batch 1, a VGG pool (k2 s2) at
# batch 4, YOLO's SPPF (k5 s1 p2).
SHAPES = {"1x64x112x112 k3 s2 p1": ((1, 64, 112, 112), POOL),
          "4x64x112x112 k2 s2": ((4, 64, 112, 112), dict(kernel_size=2, stride=2)),
          "1x256x40x40 k5 s1 p2": ((1, 256, 40, 40), dict(kernel_size=5, stride=1, padding=2))}


def _pool_input(memory_format, shape=STEM):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    return x.to(memory_format=memory_format)


def _forward(pool, memory_format, shape=STEM, kw=POOL):
    x = _pool_input(memory_format, shape)
    return functools.partial(pool, x, **kw, return_indices=True)


def _backward(pool, memory_format, shape=STEM, kw=POOL):
    x = _pool_input(memory_format, shape).requires_grad_()
    out = F.max_pool2d(x.detach(), **kw).shape
    grad = torch.randn(*out, generator=torch.Generator().manual_seed(1)).to(memory_format=memory_format)

    def run():
        y = pool(x, **kw)
        return torch.autograd.grad(y, x, grad)[0]
    return run


def _integer(pool, dtype):
    gen = torch.Generator().manual_seed(4)
    x = torch.randint(-1000, 1000, (8, 64, 112, 112), generator=gen).to(dtype)
    return functools.partial(pool, x, **POOL)


def _mask(pool):
    """A mask dilated by a 3x3 max (k3 s1 p1): torch pools no bool, so its member pools the mask's uint8
    cast and casts back, as users do (the casts are part of its time)."""
    mask = torch.rand(1, 1, 1024, 1024, generator=torch.Generator().manual_seed(5)) < 0.02
    if pool is F.max_pool2d:
        return lambda: pool(mask.to(torch.uint8), 3, 1, 1).bool()
    return functools.partial(pool, mask, 3, 1, 1)


def _fold(fold, backward):
    cols = torch.randn(8, 576, 3136, generator=torch.Generator().manual_seed(2), requires_grad=backward)
    if not backward:
        return functools.partial(fold, cols, **FOLD)
    grad = torch.randn(8, 64, 56, 56, generator=torch.Generator().manual_seed(3))
    return lambda: torch.autograd.grad(fold(cols, **FOLD), cols, grad)[0]


CASES = {
    "max_pool2d 8x64x112x112 k3 s2 p1 float32 +indices": lambda f: _forward(f, torch.contiguous_format),
    "max_pool2d 8x64x112x112 k3 s2 p1 float32 +indices channels_last": lambda f: _forward(f, torch.channels_last),
    "max_pool2d 8x64x112x112 k3 s2 p1 float32 forward+backward": lambda f: _backward(f, torch.contiguous_format),
    "max_pool2d 8x64x112x112 k3 s2 p1 float32 forward+backward channels_last":
        lambda f: _backward(f, torch.channels_last),
    "max_pool2d 8x64x112x112 k3 s2 p1 int16": lambda f: _integer(f, torch.int16),
    "max_pool2d 8x64x112x112 k3 s2 p1 int32": lambda f: _integer(f, torch.int32),
    "max_pool2d 8x64x112x112 k3 s2 p1 int64": lambda f: _integer(f, torch.int64),
    "max_pool2d 1x1x1024x1024 k3 s1 p1 bool mask (torch: its uint8 cast)": _mask,
    "fold 8x576x3136 -> 56x56 k3 p1 float32": lambda f: _fold(f, False),
    "fold 8x576x3136 -> 56x56 k3 p1 float32 forward+backward": lambda f: _fold(f, True),
}
for _name, (_shape, _kw) in SHAPES.items():
    CASES[f"max_pool2d {_name} float32 +indices channels_last"] = functools.partial(
        lambda f, shape, kw: _forward(f, torch.channels_last, shape, kw), shape=_shape, kw=_kw)
    CASES[f"max_pool2d {_name} float32 forward+backward channels_last"] = functools.partial(
        lambda f, shape, kw: _backward(f, torch.channels_last, shape, kw), shape=_shape, kw=_kw)
MEMBERS = {"pooling.torch": THREADS, "torch": THREADS, "pooling.torch 1 thread": 1, "torch 1 thread": 1, "floor": 1}
PAIRS = [(case, member) for case in CASES for member in MEMBERS]


def _function(case, member):
    name = "fold" if case.startswith("fold") else "max_pool2d"
    return getattr(pt if member.startswith("pooling") else F, name)


@functools.lru_cache(maxsize=None)
def expected(case):
    """torch's own result of the case."""
    return CASES[case](_function(case, "torch"))()


def moved_bytes(case):
    """Bytes the case reads and writes at least: its input and its results (the forward's Indices included);
    with the backward twice that, as it reads the gradient (and Indices) and writes the input's."""
    if case.startswith("fold"):
        forward = (8 * 576 * 3136 + 8 * 64 * 56 * 56) * 4
    elif "bool" in case:
        forward = 2 * 1024 * 1024
    else:
        shape, kw = next((v for k, v in SHAPES.items() if k in case), (STEM, POOL))
        x = math.prod(shape)
        y = math.prod(F.max_pool2d(torch.empty(shape, device="meta"), **kw).shape)
        size = {"int16": 2, "int64": 8}.get(case.split()[-1], 4)
        forward = (x + y) * size + (y * 8 if "indices" in case or "backward" in case else 0)
    return 2 * forward if "backward" in case else forward


@pytest.mark.parametrize("case, member", PAIRS, ids=[f"{c}-{m}" for c, m in PAIRS])
def test_dropin(benchmark, case, member):
    benchmark.group = DROPIN_PREFIX + case
    benchmark.name = member
    if member == "floor":
        half = moved_bytes(case) // 2
        src, dst = torch.ones(half, dtype=torch.uint8).numpy(), torch.zeros(half, dtype=torch.uint8).numpy()
        benchmark(functools.partial(dst.__setitem__, slice(None), src))
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(MEMBERS[member])
    try:
        fn = CASES[case](_function(case, member))
        if not benchmark.disabled:
            fn()  # warm-up
        result = benchmark(fn)
    finally:
        torch.set_num_threads(previous)
    check(case, result)


def check(case, result):
    """The same values as torch: pooling exactly, Indices included; fold and gradients that sum in another
    order to float32 rounding."""
    want = expected(case)
    if isinstance(want, tuple):
        assert torch.equal(result[0], want[0]) and torch.equal(result[1], want[1])
    elif case.startswith("fold") or "backward" in case:
        torch.testing.assert_close(result, want, rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(result, want)
