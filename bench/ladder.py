"""The size ladder: each case at batch 1, 2, 4, ... until its input passes twice the last-level cache.

    python bench/report.py -k ladder                    # the ladder's table (about 4 minutes on 2 cores)
    python -m pytest bench -k ladder                    # the first two rungs of each case, results checked

The cases (float32): MaxPool k2 s2, k3 s2 p1, k3 s1 p1 and k3 s2 p1 with Indices on 64 channels of
112x112; channels-last (NHWC) k3 s2 p1 on 112x112x64; 3-D k2 s2 on 16 channels of 32x48x48;
MaxUnpool k2 s2 of 64 channels from 112x112 into 224x224 (X and Indices from a real MaxPool, as
`cases.inputs` makes them); Col2Im of 3x3 blocks of 192 channels into 28x28 with pads 1 at stride 1
(784 columns) and at stride 2 (196 columns).

Each case's rungs (`batches`) double the batch from 1 up to and including the first whose input
bytes (all inputs: MaxUnpool's int64 Indices count) exceed twice the last-level cache, and never
take an input above 512 MiB.  The cache sizes come from `pooling._caches` (`POOLING_CACHES`
overrides what the machine reports).

Each rung's members are pooling and onnxruntime at `cases.THREADS` threads and at one thread
("pooling 1 thread", "onnxruntime 1 thread"), fresh results as users call them (no out=), and
`floor` (`floor`): numpy reading the very input arrays the operation reads and writing as many bytes
as its results hold (`cases.moved_bytes`: inputs and outputs, Indices included), so that a rung's
floor comes from the cache level the operation's input comes from.  `measure` times a rung's members
round-robin, one call of each per round, so that a slow spell of the shared machine falls on all of
them alike: the ratios hold where each member's own medians, timed one member after the other,
moved by 2x between runs (docs/tuning.md#the-size-ladder).  `records` gives the medians the shape
of pytest-benchmark's records, one group per rung ("ladder <case id>"), for report.py.  Only one
rung's arrays are kept at a time (`release_other_rungs`).  bench/test_ladder.py checks every
member's result on the first rungs.

bench/report.py tabulates the groups: per case, thread count and rung, the medians, the cost per
byte moved (ns per byte) of pooling and onnxruntime, pooling over the floor and over onnxruntime,
and a CLIFF mark on a rung where, against the rung before at the same thread count, pooling's cost
per byte rose more than 1.5x while onnxruntime's did not (or onnxruntime did not run), with pooling
above 1.25x the memory floor.  Its header names the CPU and the cache sizes used.
"""
import dataclasses
import os
import platform
import statistics
import sys
import time

import numpy as np

import cases
from cases import Case, _pool

LADDER_PREFIX = "ladder "  # the groups' prefix (report.py tabulates them on their own)
MAX_INPUT = 512 << 20  # no rung's input above this
SMOKE_RUNGS = 2  # bench/test_ladder.py checks the results of the first rungs
WARM_UP_S = 0.5  # a rung's members are called round-robin this long before the timing ...
ROUND_S = 2.5  # ... then timed round-robin for about this long ...
MIN_ROUNDS = 7  # ... and at least this many rounds
MEMBERS = ("pooling", "pooling 1 thread", "onnxruntime", "onnxruntime 1 thread", "floor")

_COL2IM = dict(image=(28, 28), block=(3, 3))

# (label, the case at batch 1)
CASES = [
    ("MaxPool k2 s2", _pool((1, 64, 112, 112), k=2, s=2, p=0)),
    ("MaxPool k3 s2 p1", _pool((1, 64, 112, 112))),
    ("MaxPool k3 s1 p1", _pool((1, 64, 112, 112), k=3, s=1, p=1)),
    ("MaxPool k3 s2 p1 +Indices", _pool((1, 64, 112, 112), indices=True)),
    ("MaxPool NHWC k3 s2 p1", _pool((1, 112, 112, 64), layout="NHWC")),
    ("MaxPool 3-D k2 s2", _pool((1, 16, 32, 48, 48), k=2, s=2, p=0)),
    ("MaxUnpool k2 s2 112->224", _pool((1, 64, 112, 112), k=2, s=2, p=0, op="MaxUnpool")),
    ("Col2Im 3x3 s1 p1 192ch 28x28", Case("Col2Im", (1, 192 * 9, 28 * 28), "float32",
                                            (("pads", (1, 1, 1, 1)),), **_COL2IM)),
    ("Col2Im 3x3 s2 p1 192ch 28x28", Case("Col2Im", (1, 192 * 9, 14 * 14), "float32",
                                            (("strides", (2, 2)), ("pads", (1, 1, 1, 1))), **_COL2IM)),
]


# ---------------------------------------------------------------------------
# The machine: cache sizes and the CPU's name
# ---------------------------------------------------------------------------

def caches():
    """This machine's cache sizes (pooling._caches; POOLING_CACHES overrides them)."""
    from pooling import _caches
    return _caches.CACHES


def describe_caches():
    """One line naming the cache sizes the ladder uses."""
    from pooling import _caches
    return _caches.describe()


def cpu_name():
    """The CPU's model name (Linux's /proc/cpuinfo, else the platform's), its vendor, family and model
    as pooling's dispatcher reads them (CPUID), and the CPU count."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.partition(":")[2].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    from pooling import _runtime
    vendor, family, model = _runtime.cpu_id()
    if vendor:
        name += f" ({vendor} family {family:#x} model {model:#x})"
    return f"{name}, {os.cpu_count()} CPUs"


# ---------------------------------------------------------------------------
# The rungs
# ---------------------------------------------------------------------------

def at_batch(case, n):
    """The case with batch n."""
    return dataclasses.replace(case, shape=(n,) + tuple(case.shape[1:]))


def input_bytes(case):
    """Bytes of the case's inputs (as `cases.inputs` makes them), from the shapes alone."""
    x = int(np.prod(case.shape)) * cases._numpy_dtype(case.dtype).itemsize
    return x + (int(np.prod(case.shape)) * 8 if case.op == "MaxUnpool" else 0)  # + int64 Indices


def batches(case, llc, limit=MAX_INPUT):
    """Batches 1, 2, 4, ... up to and including the first whose input exceeds 2 * llc bytes, none
    with an input above `limit` bytes."""
    out, n = [], 1
    while input_bytes(at_batch(case, n)) <= limit:
        out.append(n)
        if input_bytes(at_batch(case, n)) > 2 * llc:
            break
        n *= 2
    return out


@dataclasses.dataclass(frozen=True)
class Rung:
    label: str      # the ladder case's name
    index: int      # 0 for batch 1, 1 for batch 2, ...
    case: Case      # the case at this rung's batch

    @property
    def id(self):
        return f"{self.label} N{self.case.shape[0]}"  # -k takes no "="


def rungs(llc=None):
    """Every case's rungs, case by case, batch by batch."""
    llc = caches().llc if llc is None else llc
    return [Rung(label, i, at_batch(case, n)) for label, case in CASES for i, n in enumerate(batches(case, llc))]


def members(case):
    """name -> factory of each member (MEMBERS), as `cases.implementations` names and builds them,
    with the ladder's own floor."""
    impls = cases.implementations(case)
    impls["onnxruntime 1 thread"] = lambda: cases._onnxruntime(case, 1)
    impls["floor"] = lambda: floor(case)
    return {name: impls[name] for name in MEMBERS}


def floor(case):
    """The rung's memory floor: read every byte of the operation's own inputs (the arrays it reads,
    so from the same cache level) and write a buffer the size of its results.

    The main table's floor copies half the moved bytes into the other half: on a ladder that
    stays in cache where the operation's input has gone to memory, and marks the step from cache
    to memory as ours (docs/tuning.md#the-size-ladder).  Here the reads are uint8 maxima, which
    numpy runs at about a plain read loop's speed, and the writes one fill.
    """
    reads = [a.reshape(-1).view(np.uint8) for a in cases.inputs(case)]
    result = np.empty(cases.moved_bytes(case) - sum(a.nbytes for a in reads), np.uint8)

    def run():
        for a in reads:
            a.max()
        result.fill(1)
        return result
    return run


def threads(name):
    """The thread count a member runs at (None for the floor)."""
    return None if name == "floor" else 1 if name.endswith(" 1 thread") else cases.THREADS


_current = []


def release_other_rungs(case):
    """Drop the cached inputs and results (`cases.inputs`, `cases.expected`) when the ladder moves
    on to another rung, so that only one rung's arrays are held (the large rungs are hundreds of MiB)."""
    if _current != [case]:
        cases.inputs.cache_clear()
        cases.expected.cache_clear()
        _current[:] = [case]


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def callables(case):
    """name -> zero-argument callable of every member that runs here (peers not installed, or
    without the case, left out)."""
    out = {}
    for name, make in members(case).items():
        try:
            out[name] = make()
        except cases.Unavailable:
            pass
    return out


def measure(fns, seconds=ROUND_S, min_rounds=MIN_ROUNDS, warm_up_s=WARM_UP_S):
    """{name: median seconds} of the callables, timed round-robin: each round calls every one once,
    in an order that rotates from round to round; rounds continue for about `seconds`, at least
    `min_rounds` of them, after `warm_up_s` of the same."""
    names = list(fns)
    times = {name: [] for name in names}

    def one_round(r):
        start = time.perf_counter()
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
        return time.perf_counter() - start

    end, r = time.perf_counter() + warm_up_s, 0
    while True:
        took = one_round(r)
        r += 1
        if time.perf_counter() >= end:
            break
    for name in names:
        times[name].clear()
    rounds = max(min_rounds, int(seconds / max(took, 1e-9)))
    for r in range(rounds):
        one_round(r)
    return {name: statistics.median(t) for name, t in times.items()}


def records(rung, medians, llc=None):
    """The medians as pytest-benchmark's records (what report.ladder_table reads): one group per rung."""
    llc = caches().llc if llc is None else llc
    case = rung.case
    info = dict(ladder=rung.label, batch=case.shape[0], rung=rung.index, input_bytes=input_bytes(case),
                moved_bytes=cases.moved_bytes(case), llc=llc, max_input=MAX_INPUT, cpu=cpu_name(),
                caches=describe_caches())
    return [{"group": LADDER_PREFIX + case.id, "name": name, "stats": {"median": median},
             "extra_info": dict(info, threads=threads(name))} for name, median in medians.items()]


def run(progress=sys.stderr):
    """Every rung measured: report.py's records, rung by rung."""
    out, todo = [], rungs()
    for i, rung in enumerate(todo):
        release_other_rungs(rung.case)
        if progress:
            progress.write(f"\r[{i + 1}/{len(todo)}] {rung.id:<50}")
            progress.flush()
        out += records(rung, measure(callables(rung.case)))
    release_other_rungs(None)
    if progress:
        progress.write("\n")
    return out
