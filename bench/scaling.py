"""Thread scaling: pooling beside onnxruntime and torch on model-zoo cases at 1, 2, 4, ... threads.

    python bench/scaling.py [--threads 1,2,4,8,16] [-k "TEXT|TEXT"] [--time 0.3] [--rounds 3]

Each case's implementations run side by side at each thread count (every peer set to that count
as in bench/cases.py), in rounds, and the table gives medians in ms with each peer's time over
pooling's (> 1: pooling is faster).  docs/performance.md's model-zoo table covers 1 and 2 threads; this is
how the kernels go on from there, on machines with more cores.  Results are checked against the
twin once per case.
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from zoo import ZOO  # noqa: E402

PEERS = {"onnxruntime": cases._onnxruntime, "torch": cases._torch}


def _median_ms(fn, seconds):
    fn()
    times, stop = [], time.perf_counter() + seconds
    while time.perf_counter() < stop or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def _runners(case, threads):
    runs = {"pooling": cases.pooling_call(case, threads)}
    for name, factory in PEERS.items():
        try:
            runs[name] = factory(case, threads)
        except cases.Unavailable:
            pass
    return runs


def _check(case, got):
    """got (pooling at some thread count) is the result checked against the twin (cases.expected)."""
    want = cases.expected(case)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if case.op == "Col2Im":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            assert g.tobytes() == w.tobytes(), case.id


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2,4,8,16", help="comma-separated thread counts")
    ap.add_argument("-k", default="", help="only cases whose id contains this text (or one of A|B|...)")
    ap.add_argument("--time", type=float, default=0.3, help="seconds timed per implementation and round")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    counts = [int(t) for t in args.threads.split(",")]
    selected = [c for c in ZOO if any(k in c.id for k in args.k.split("|"))]
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"medians of {args.rounds} rounds of {args.time} s")
    print("| case | threads | pooling ms | " + " | ".join(f"{p} ms | {p} / pooling" for p in PEERS) + " |")
    print("|---|---|---|" + "---|---|" * len(PEERS))
    for case in selected:
        for t in counts:
            runs = _runners(case, t)
            _check(case, runs["pooling"]())
            samples = {name: [] for name in runs}
            for _ in range(args.rounds):
                for name, fn in runs.items():
                    samples[name].append(_median_ms(fn, args.time))
            ms = {name: float(np.median(v)) for name, v in samples.items()}
            cells = [f"{ms['pooling']:.3f}"]
            for p in PEERS:
                cells += [f"{ms[p]:.3f}", f"{ms[p] / ms['pooling']:.2f}x"] if p in ms else ["-", "-"]
            print(f"| {case.id[len(cases.ZOO_PREFIX):]} | {t} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
