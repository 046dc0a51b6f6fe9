"""Real call patterns: calls separated by idle time or other work, and calls beside a busy neighbour.

Every other benchmark calls a kernel back to back. A model or an image pipeline calls it once per
layer or image with other work in between, often on a machine it shares: idle worker threads fall
asleep, and waking a sleeping core can cost more than the call. Each group here times one call
after each gap (the gap itself is not timed) for pooling (default threads), pooling with one thread
and onnxruntime (two threads), on small, medium and large inputs of each operator.

    python bench/report.py -k pattern      # the table (report.py prints it after the main one)
"""
import os
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


def _rounds(pattern, disabled):
    if disabled:
        return 1
    return {0: 200, 1: 100, 5: 60, 20: 30, 100: 12}[pattern.ms]


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


@pytest.mark.parametrize("name", MEMBERS)
@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.id)
@pytest.mark.parametrize("op, size", CASES, ids=[f"{op} {size}" for op, size in CASES])
def test_pattern(benchmark, op, size, pattern, name, neighbour):
    case = case_for(op, size)
    benchmark.group = f"pattern {op} {size} {pattern.id}"
    benchmark.name = name
    try:
        fn = implementations(case)[name]()
    except Unavailable as e:
        pytest.skip(str(e))
    benchmark.extra_info.update(case=case.id, op=op, size=size, pattern=pattern.id)
    gap = _gap(pattern)
    if not benchmark.disabled:
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            fn()
    result = benchmark.pedantic(fn, setup=gap, rounds=_rounds(pattern, benchmark.disabled),
                                warmup_rounds=0 if benchmark.disabled else 2)
    check(case, name, result)
