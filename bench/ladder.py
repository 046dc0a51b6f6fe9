"""The size ladder: each case at batch 1, 2, 4, ... until its input passes twice the last-level cache.

    python bench/report.py -k ladder                    # the ladder's table (about 10 minutes on 2 cores)
    python -m pytest bench -k ladder --benchmark-disable # smoke test: the first two rungs of each case, checked

The cases (float32): MaxPool k2 s2, k3 s2 p1, k3 s1 p1 and k3 s2 p1 with Indices on 64 channels of
112x112; channels-last (NHWC) k3 s2 p1 on 112x112x64; 3-D k2 s2 on 16 channels of 32x48x48;
MaxUnpool k2 s2 of 64 channels from 112x112 into 224x224 (X and Indices from a real MaxPool, as
`cases.inputs` makes them); Col2Im of 3x3 blocks of 192 channels into 28x28 with pads 1 at stride 1
(784 columns) and at stride 2 (196 columns).

Each case's rungs (`batches`) double the batch from 1 up to and including the first whose input
bytes (all inputs: MaxUnpool's int64 Indices count) exceed twice the last-level cache, and never
take an input above 512 MiB.  The cache sizes come from `pooling._caches` (`POOLING_CACHES`
overrides what the machine reports).

Each rung is one pytest-benchmark group, "ladder <case id>", whose members are pooling and
onnxruntime at `cases.THREADS` threads and at one thread ("pooling 1 thread", "onnxruntime 1 thread"),
fresh results as users call them (no out=), and `floor`, numpy copying the bytes the operation must
move (`cases.moved_bytes`: inputs and outputs, Indices included).  Every member's result is checked
against `cases.expected` (pooling checked against pooling.reference).  Only one rung's arrays are
kept at a time (`release_other_rungs`).

bench/report.py tabulates the groups: per case, thread count and rung, the medians, the cost per
byte moved (ns per byte) of pooling and onnxruntime, pooling over the floor and over onnxruntime,
and a CLIFF mark on a rung where, against the rung before at the same thread count, pooling's cost
per byte rose more than 1.5x while onnxruntime's did not (or onnxruntime did not run), with pooling
above 1.25x the memory floor.  Its header names the CPU and the cache sizes used.
"""
import dataclasses
import os
import platform

import numpy as np

import cases
from cases import Case, _pool

LADDER_PREFIX = "ladder "  # the groups' prefix (report.py tabulates them on their own)
MAX_INPUT = 512 << 20  # no rung's input above this
SMOKE_RUNGS = 2  # with --benchmark-disable only the first rungs run
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
    """name -> factory of each member (MEMBERS), as `cases.implementations` names and builds them."""
    impls = cases.implementations(case)
    impls["onnxruntime 1 thread"] = lambda: cases._onnxruntime(case, 1)
    return {name: impls[name] for name in MEMBERS}


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
