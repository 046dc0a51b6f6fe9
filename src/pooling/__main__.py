"""``python -m pooling``: configuration, self-checks against the reference, timings with baselines.

    python -m pooling            # checks, then timings (about 20 s)
    python -m pooling --quick    # shorter, noisier timings, for a first look (a few seconds)
    python -m pooling --json     # the same as one JSON object on stdout

Exit status 0 only if every check passed.
"""
import argparse
import functools
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import col2im, max_pool, max_threads, max_unpool, reference
from ._config import config_lines

# The ResNet stem MaxPool: 3x3 windows, stride 2, pad 1, on 64 channels of 112x112.
STEM = dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
# Col2Im after a 3x3 pad-1 convolution's im2col: 64 channels of 56x56 images.
COL2IM = dict(image_shape=(56, 56), block_shape=(3, 3), pads=(1, 1, 1, 1))
# The all-threads time above this many times the one-thread time gets a warning.
SLOWDOWN = 1.5
# The onnxruntime baseline's models: MaxPool-12, MaxUnpool-11 and Col2Im-18.
ONNX_OPSET, ONNX_IR_VERSION = 18, 8


@dataclass(frozen=True)
class Timing:
    warm_up_s: float  # calls before timing (this machine speeds up over ~0.5 s of load)
    runs: int         # the reported time is the median of this many runs
    run_s: float      # a run repeats the call until this long has passed and takes the mean


DEFAULT = Timing(warm_up_s=0.5, runs=7, run_s=0.03)
QUICK = Timing(warm_up_s=0.05, runs=5, run_s=0.005)


@dataclass(frozen=True)
class Case:
    name: str
    fast: Callable      # fast(**kw) runs pooling; kw: n_threads
    ref: Callable       # ref() -> pooling.reference's result
    op: str             # the ONNX operator, for the onnxruntime baseline
    inputs: dict        # its ONNX inputs, by name
    attrs: dict         # its ONNX attributes
    outputs: tuple      # its ONNX output names


def _same(a, b):
    """Bit-for-bit equality (so NaN payloads and -0.0 count)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _median_ms(fn, timing=DEFAULT):
    """Median wall time of fn() in ms over timing.runs runs, after a warm-up."""
    end = time.perf_counter() + timing.warm_up_s
    while time.perf_counter() < end:
        fn()
    times = []
    for _ in range(timing.runs):
        count, start = 0, time.perf_counter()
        while True:
            fn()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= timing.run_s:
                break
        times.append(elapsed / count * 1e3)
    return statistics.median(times)


def cases():
    """Every operator's built-in check, with what the baselines need."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 112, 112)).astype(np.float32)
    ref_y, ref_i = reference.max_pool(x, **STEM, return_indices=True)
    # MaxUnpool of a k2 s2 MaxPool result back to 8x64x56x56.
    pooled, where = max_pool(rng.standard_normal((8, 64, 56, 56)).astype(np.float32), 2, strides=2,
                             return_indices=True)
    ref_up = reference.max_unpool(pooled, where, 2, strides=2)
    cols = rng.standard_normal((8, 576, 3136), dtype=np.float32)
    pool_attrs = {k: list(v) for k, v in STEM.items()}
    shapes = {k: np.array(COL2IM[k], np.int64) for k in ("image_shape", "block_shape")}
    return [
        Case("MaxPool 1x64x112x112 k3 s2 p1", lambda **kw: max_pool(x, **STEM, **kw), lambda: ref_y,
             "MaxPool", {"X": x}, pool_attrs, ("Y",)),
        Case("MaxPool 1x64x112x112 k3 s2 p1 +Indices",
             lambda **kw: max_pool(x, **STEM, return_indices=True, **kw), lambda: (ref_y, ref_i),
             "MaxPool", {"X": x}, pool_attrs, ("Y", "Indices")),
        Case("MaxUnpool 8x64x28x28 -> 8x64x56x56 k2 s2",
             lambda **kw: max_unpool(pooled, where, 2, strides=2, **kw), lambda: ref_up,
             "MaxUnpool", {"X": pooled, "I": where}, {"kernel_shape": [2, 2], "strides": [2, 2]}, ("Y",)),
        Case("Col2Im 8x576x3136 k3 p1 -> 8x64x56x56", lambda **kw: col2im(cols, **COL2IM, **kw),
             lambda: reference.col2im(cols, **COL2IM),
             "Col2Im", {"input": cols, **shapes}, {"pads": [1, 1, 1, 1]}, ("output",)),
    ]


def _check(case, want):
    """pooling's result with one thread and with all threads is the reference's, bit for bit."""
    for got in (case.fast(n_threads=1), case.fast()):
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        if not all(_same(g, w) for g, w in pairs):
            return False
    return True


def _floor(nbytes):
    """A numpy copy moving nbytes: reading half and writing half."""
    src = np.ones(nbytes // 2, np.uint8)
    return functools.partial(np.copyto, np.zeros_like(src), src)


class _Unavailable(Exception):
    pass


def _onnxruntime(case, want, threads):
    """A zero-argument callable running the case as a one-node ONNX model in onnxruntime."""
    try:
        import onnxruntime as ort
        from onnx import helper
    except ImportError as e:
        raise _Unavailable(f"{e.name} is not installed") from e

    def info(name, a):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)

    results = want if isinstance(want, tuple) else (want,)
    node = helper.make_node(case.op, list(case.inputs), list(case.outputs), **case.attrs)
    graph = helper.make_graph([node], "pooling", [info(n, a) for n, a in case.inputs.items()],
                              [info(n, a) for n, a in zip(case.outputs, results)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
                              ir_version=ONNX_IR_VERSION)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # e.g. an operator or dtype it has no kernel for
        raise _Unavailable(f"onnxruntime: {str(e).splitlines()[0][:100]}") from e
    return functools.partial(session.run, None, case.inputs)


def _onnxruntime_version():
    """onnxruntime's version, or None when it or onnx cannot be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime.__version__


def _config():
    """show_config()'s text, and its lines as a dict (a line is a name, spaces, and a value)."""
    lines = config_lines()
    config = {}
    for line in lines:
        name, _, value = line.partition("  ") if "  " in line else line.partition(" ")
        config[name] = value.strip()
    return "\n".join(lines), config


def _cores():
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m pooling",
        description="Print pooling's build configuration, check every operator bit for bit against "
                    "pooling.reference (the pure-numpy twin shipped with the package), and time them "
                    "against a memory floor and onnxruntime. Exit status 0 only if every check passed.")
    parser.add_argument("--quick", action="store_true",
                        help=f"shorter timings for a first look ({QUICK.warm_up_s} s warm-up, median of "
                             f"{QUICK.runs} runs of {QUICK.run_s * 1e3:g} ms; a few seconds in all)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (config, checks, timings, baselines, warnings) "
                             "and nothing else on stdout")
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    timing = QUICK if args.quick else DEFAULT
    say = (lambda *a: None) if args.json else print
    threads = max_threads()
    ort_version = _onnxruntime_version()
    config_text, config = _config()
    say(config_text)
    say("checks: each result, with one thread and with all threads, compared bit for bit with "
        "pooling.reference,\nthe pure-numpy twin shipped with the package")

    all_cases = cases()
    checks, wanted = [], []
    for case in all_cases:
        want = case.ref()
        passed = _check(case, want)
        say(f"check  {'ok  ' if passed else 'FAIL'}  {case.name}")
        checks.append({"case": case.name, "passed": passed})
        wanted.append(want)

    rows = [_time(case, want, timing, threads, ort_version is not None) for case, want in zip(all_cases, wanted)]
    timings, baselines = [r[0] for r in rows], [r[1] for r in rows]
    warnings = _warnings(timings, threads)
    ok = all(c["passed"] for c in checks)
    if args.json:
        print(json.dumps({
            "config": config,
            "method": {"reference": "pooling.reference", "comparison": "bit for bit", "statistic": "median",
                       "runs": timing.runs, "run_s": timing.run_s, "warm_up_s": timing.warm_up_s,
                       "quick": args.quick, "all_threads": threads, "onnxruntime": ort_version},
            "checks": checks, "timings": timings, "baselines": baselines, "warnings": warnings,
            "passed": ok,
        }, indent=2))
    else:
        _print_table(timings, baselines, timing, threads, ort_version, args.quick)
        for w in warnings:
            print(f"warning: {w}")
        print()
        print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


def _time(case, want, timing, threads, onnxruntime):
    """(pooling's times, the baselines' times) of one case."""
    times = {"case": case.name, "one_thread_ms": _median_ms(lambda: case.fast(n_threads=1), timing),
             "all_threads_ms": _median_ms(case.fast, timing)}
    results = want if isinstance(want, tuple) else (want,)
    nbytes = sum(a.nbytes for a in case.inputs.values()) + sum(a.nbytes for a in results)
    baseline = {"case": case.name, "bytes_moved": nbytes, "memory_floor_ms": _median_ms(_floor(nbytes), timing),
                "onnxruntime_one_thread_ms": None, "onnxruntime_all_threads_ms": None}
    if onnxruntime:
        try:
            for key, n in (("onnxruntime_one_thread_ms", 1), ("onnxruntime_all_threads_ms", threads)):
                baseline[key] = _median_ms(_onnxruntime(case, want, n), timing)
        except _Unavailable as e:
            baseline["onnxruntime_unavailable"] = str(e)
    return times, baseline


def _warnings(timings, threads):
    warnings = []
    cores = _cores()
    if threads > cores:
        warnings.append(f"pooling.max_threads() is {threads} but this process may run on {cores} cores: "
                        f"threads will wait for each other (set OMP_NUM_THREADS={cores})")
    slow = [(t["case"], t["all_threads_ms"] / t["one_thread_ms"]) for t in timings
            if t["all_threads_ms"] > SLOWDOWN * t["one_thread_ms"]]
    if slow:
        warnings.append(f"with all {threads} threads slower than {SLOWDOWN}x one thread: "
                        + ", ".join(f"{name} ({ratio:.1f}x)" for name, ratio in slow)
                        + "; the machine is busy or oversubscribed (other programs running, or more "
                          "threads than free cores), so these timings understate pooling")
    return warnings


def _print_table(timings, baselines, timing, threads, ort_version, quick):
    many = f"{threads} thread{'s' if threads != 1 else ''}"
    print()
    print(f"times: ms per call, each the median of {timing.runs} runs (a run repeats the call for "
          f"{timing.run_s * 1e3:g} ms and takes the mean)\nafter a {timing.warm_up_s:g} s warm-up"
          + (" (--quick: expect noise)" if quick else "")
          + f"; \"all threads\" is {many} (pooling.max_threads())")
    print("baselines, timed the same way: floor = a numpy copy moving the bytes the operation reads + "
          "writes\n(the fastest this machine could go); "
          + (f"ort = onnxruntime {ort_version} running the operation as a one-node ONNX model"
             if ort_version else "ort = onnxruntime: not installed (pip install onnx onnxruntime)"))
    print()
    head = ["operation", "1 thread", many, "ort 1 thread", f"ort {many}", "floor"]
    widths = [42] + [max(len(h), 8) for h in head[1:]]
    print("| " + " | ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))
          + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for t, b in zip(timings, baselines):
        values = [t["one_thread_ms"], t["all_threads_ms"], b["onnxruntime_one_thread_ms"],
                  b["onnxruntime_all_threads_ms"], b["memory_floor_ms"]]
        cells = [t["case"].ljust(widths[0])] + [("-" if v is None else f"{v:.3f}").rjust(w)
                                                for v, w in zip(values, widths[1:])]
        print("| " + " | ".join(cells) + " |")
    for b in baselines:
        if "onnxruntime_unavailable" in b:
            print(f"ort: {b['case']}: {b['onnxruntime_unavailable']}")


if __name__ == "__main__":
    sys.exit(main())
