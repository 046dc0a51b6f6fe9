"""Real call patterns: calls separated by idle time or other work, and calls beside a busy neighbour.

Every other benchmark calls a kernel back to back. A model or an image pipeline calls it once per
layer or image with other work in between, often on a machine it shares: idle worker threads fall
asleep, and waking a sleeping core can cost more than the call. Each group here times one call
after each gap (the gap itself is not timed) for pooling (default threads), pooling with one thread
and onnxruntime (two threads), on small, medium and large inputs of each operator.

A last group times the other way round: torch's convolution (two threads) right after each member's
call, since a pool whose workers keep a core busy after the call slows whatever library runs next.

The members are measured side by side in one test, in alternating blocks (three per member, in a
rotating order), so that a slow spell of this shared machine falls on all of them alike. They cannot
alternate call by call: after each call onnxruntime's worker spins for about 55 ms (measured with
`time.process_time` across a sleep), which would slow whichever member came next, so each block
starts after a 0.1 s pause and one untimed call. pytest-benchmark times one function per test, so
the medians are taken here and stored in the group's `extra_info["medians"]`; the group's own
timing is the whole measurement, which the report ignores.

    python bench/report.py -k pattern      # the table (report.py prints it after the main one)
"""
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from cases import Case, Unavailable, implementations
from test_bench import check

# Images of the three sizes (N, C, H, W): MaxPool pools them (k3 s2 p1), MaxUnpool puts back their
# k2 s2 MaxPool, Col2Im rebuilds them from their 3x3 pad-1 columns (large: 8x64x56x56, since the
# columns of 8x64x112x112 would be 231 MB).
SIZES = {"small": (1, 256, 20, 20), "medium": (1, 64, 112, 112), "large": (8, 64, 112, 112)}
GAPS_MS = (1, 5, 20, 100)
MEMBERS = ("pooling", "pooling 1 thread", "onnxruntime")
PATTERN_NEXT = "pattern torch conv after "  # test_next_call's groups (report.py tabulates them apart)


@dataclass(frozen=True)
class Pattern:
    gap: str          # "back-to-back", "sleep", "busy" or "neighbour"
    ms: int = 0       # the gap's length

    @property
    def id(self):
        return self.gap if self.gap in ("back-to-back", "neighbour") else f"{self.gap} {self.ms} ms"


PATTERNS = ([Pattern("back-to-back")] + [Pattern(g, ms) for ms in GAPS_MS for g in ("sleep", "busy")]
            + [Pattern("neighbour")])


def case_for(op, size):
    n, c, h, w = SIZES[size]
    if op == "MaxPool":
        return Case("MaxPool", (n, c, h, w), "float32",
                    (("kernel_shape", (3, 3)), ("strides", (2, 2)), ("pads", (1, 1, 1, 1))))
    if op == "MaxUnpool":  # X is the k2 s2 MaxPool of the image (cases.inputs makes it)
        return Case("MaxUnpool", (n, c, h // 2, w // 2), "float32", (("kernel_shape", (2, 2)), ("strides", (2, 2))))
    if size == "large":
        h = w = 56
    return Case("Col2Im", (n, c * 9, h * w), "float32", (("pads", (1, 1, 1, 1)),), image=(h, w), block=(3, 3))


CASES = [(op, size) for op in ("MaxPool", "MaxUnpool", "Col2Im") for size in SIZES]


def _busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _gap(pattern):
    """The untimed work before each timed call."""
    if pattern.gap == "sleep":
        return lambda: time.sleep(pattern.ms / 1e3)
    if pattern.gap == "busy":
        return lambda: _busy(pattern.ms / 1e3)
    return None


def _rounds(pattern):
    """Timed calls per member: more where calls are quick, fewer where each waits for its gap."""
    return {0: 150, 1: 90, 5: 60, 20: 45, 100: 15}[pattern.ms]


BLOCKS = 3
SETTLE_S = 0.1  # before each block: longer than onnxruntime's spin after its last call


def measure(members, gap, rounds, blocks=BLOCKS, settle=SETTLE_S, after=None):
    """name -> call times (s), each call after its own gap; members in `blocks` alternating blocks.
    With `after`: the times of after(), each called right after one call of the member."""
    times = {name: [] for name in members}
    names = list(members)
    for b in range(blocks):
        for name in names[b % len(names):] + names[:b % len(names)]:
            fn = members[name]
            time.sleep(settle)
            gap()
            fn()  # untimed: the member's first call after another member's block
            for _ in range(-(-rounds // blocks)):
                gap()
                if after is not None:
                    fn()
                start = time.perf_counter()
                (after or fn)()
                times[name].append(time.perf_counter() - start)
    return times


def _members(case):
    """The members that can run the case (onnxruntime may not be installed: the others still run)."""
    members = {}
    for name in MEMBERS:
        try:
            members[name] = implementations(case)[name]()
        except Unavailable:
            continue
    return members


@pytest.fixture
def neighbour(request):
    """A process spinning on one core (the last one) while the test runs, for the neighbour pattern."""
    pattern = request.getfixturevalue("pattern")
    if pattern.gap != "neighbour":
        yield None
        return
    code = ("import os, sys\n"
            "if hasattr(os, 'sched_setaffinity'): os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})\n"
            "sys.stdout.write('go\\n'); sys.stdout.flush()\n"
            "while True: pass\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()  # it is spinning
        time.sleep(0.2)
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.id)
@pytest.mark.parametrize("op, size", CASES, ids=[f"{op} {size}" for op, size in CASES])
def test_pattern(benchmark, op, size, pattern, neighbour):
    case = case_for(op, size)
    benchmark.group = f"pattern {op} {size} {pattern.id}"
    benchmark.name = "all members (medians in extra_info)"
    members = _members(case)
    for name, fn in members.items():
        check(case, name, fn())
    gap = _gap(pattern) or (lambda: None)
    if benchmark.disabled:
        benchmark.pedantic(measure, args=(members, gap, 1, 1, 0))
        return
    for fn in members.values():  # past this machine's warm-up
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            fn()
    times = benchmark.pedantic(measure, args=(members, gap, _rounds(pattern)))
    benchmark.extra_info.update(case=case.id, op=op, size=size, pattern=pattern.id,
                                medians={name: statistics.median(t) for name, t in times.items()},
                                rounds={name: len(t) for name, t in times.items()})


NEXT_SIZES = ("medium", "large")


def _torch_conv():
    """torch's 3x3 convolution of 1x64x56x56 (about 1 ms) at cases.THREADS: the next layer of a model."""
    torch = pytest.importorskip("torch")
    from cases import THREADS
    torch.set_num_threads(THREADS)
    x, w = torch.randn(1, 64, 56, 56), torch.randn(64, 64, 3, 3)
    return lambda: torch.nn.functional.conv2d(x, w, padding=1)


@pytest.mark.parametrize("size", NEXT_SIZES)
def test_next_call(benchmark, size):
    """torch's next call after MaxPool: the members' medians are the convolution's times."""
    case = case_for("MaxPool", size)
    conv = _torch_conv()
    benchmark.group = f"{PATTERN_NEXT}MaxPool {size}"
    benchmark.name = "all members (medians in extra_info)"
    members = _members(case)
    nothing = lambda: None  # noqa: E731 (no gap: torch's call follows the member's at once)
    if benchmark.disabled:
        benchmark.pedantic(measure, args=(members, nothing, 1, 1, 0), kwargs=dict(after=conv))
        return
    times = benchmark.pedantic(measure, args=(members, nothing, 60), kwargs=dict(after=conv))
    benchmark.extra_info.update(case=case.id, medians={name: statistics.median(t) for name, t in times.items()},
                                rounds={name: len(t) for name, t in times.items()})
