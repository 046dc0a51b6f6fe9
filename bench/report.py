"""Run the benchmark suite and print a markdown table of medians and ratios.

    python bench/report.py                 # every case (the size ladder only as -k ladder)
    python bench/report.py -k "float16"    # a pytest -k selection
    python bench/report.py --plot out.png  # also draw the speedups (matplotlib, the `bench` extra)
    python bench/report.py -k pattern      # only the real-call-pattern groups (test_callpattern.py)
    python bench/report.py -k next_call    # ... the one that times torch's next call after each member's
    python bench/report.py -k zoo          # only the model-zoo sweep (zoo.py)
    python bench/report.py -k dropin       # only pooling.torch against torch (test_torch_dropin.py)
    python bench/report.py -k ladder       # only the size ladder (ladder.py; about 4 minutes on 2 cores)

The size ladder is timed by ladder.run (its members round-robin), not pytest-benchmark, and runs
only as `-k ladder` (the other selections run pytest-benchmark's groups, the ladder's result checks
among them).

The model-zoo sweep has a table of its own: per case and thread count (all
threads, one thread), pooling's median, the best peer at the same thread count,
the speedup over it, and the ratio to the memory floor; the targets are a
speedup of at least 1.2 or a floor ratio of at most 1.25.

The size ladder has one too: a header naming the CPU and the cache sizes used, then per case,
thread count (cases.THREADS, one) and batch (1, 2, 4, ... up to the first input over twice the
last-level cache), the medians of pooling and onnxruntime, their cost per byte moved (ns per byte
of input and output, the floor's bytes), pooling over the floor and over onnxruntime, and CLIFF on
a rung where, against the rung before, pooling's cost per byte rose more than 1.5x while
onnxruntime's did not (or onnxruntime did not run), with pooling above 1.25x the floor.  A last
line counts the cliffs and the rungs slower than onnxruntime.

Per case of the main table: pooling's median, its speedup over each peer (peer median / pooling
median; > 1 means pooling is faster), and its ratio to the memory floor
(pooling median / the time numpy needs to copy the same number of bytes,
measured in the same run; 1.0 would be the fastest this machine can go).

The plot (--plot, `figure`) draws the main table's cases sorted by the speedup over the fastest
peer: one bar per peer that ran the case, from 1x to its speedup on a log axis, and the memory
floor as a black mark on the same scale. A case no peer ran keeps its row, marked "no peer ran it".
"""
import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile

# numpy's OpenBLAS threads showed up at 7-14% of the CPU samples when profiling
# benchmark-like scripts on this 2-core machine, time taken from what is being
# measured; no case uses BLAS.  Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = ("onnxruntime", "torch", "openvino")
PATTERN = "pattern "  # the real-call-pattern groups' prefix
PATTERN_NEXT = "pattern torch conv after "  # ... and those that time torch's next call (test_next_call)
ZOO = "zoo "  # the model-zoo groups' prefix (cases.ZOO_PREFIX)
DROPIN = "dropin "  # pooling.torch against torch's own functions (test_torch_dropin.DROPIN_PREFIX)
LADDER = "ladder "  # the size ladder's groups' prefix (ladder.LADDER_PREFIX)
OWN_TABLES = (PATTERN, ZOO, DROPIN, LADDER)  # groups with a table of their own, not the main one
CLIFF_RISE = 1.5  # a ladder rung is a cliff where pooling's cost per byte rose more than this ...
CLIFF_FLOOR = 1.25  # ... while onnxruntime's did not, with pooling above this many times the floor


class Progress:
    """A one-line progress bar on stderr as benchmarks finish."""

    def __init__(self):
        self.total = self.done = 0

    def pytest_collection_finish(self, session):
        self.total = len(session.items)  # after -k deselection

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.when == "setup" and report.skipped):
            return
        self.done += 1
        width = 30
        filled = width * self.done // max(self.total, 1)
        name = report.nodeid.split("[", 1)[-1].rstrip("]")[:60]
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {name:<60}")
        sys.stderr.flush()
        if self.done == self.total:
            sys.stderr.write("\n")


def run(selection, extra):
    with tempfile.TemporaryDirectory(prefix="pooling-bench-") as folder:  # removed on the way out
        out = os.path.join(folder, "bench.json")
        args = [HERE, "-q", "-o", "addopts=", f"--benchmark-json={out}",
                "--benchmark-min-rounds=7", "--benchmark-max-time=0.5"] + extra
        if selection:
            args += ["-k", selection]
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):  # only the bar shows, and pytest's report on failure
            code = pytest.main(args, plugins=[Progress()])
        if code not in (0, 5):
            # The failures, then the tables of what did run (the cases before a failure are not lost).
            text = captured.getvalue()
            failures = text.find("= FAILURES =")
            summary = text.find("= short test summary info =")
            print((text[failures:failures + 20000] if failures >= 0 else "")
                  + (text[summary:] if summary >= 0 else text[-5000:]), file=sys.stderr)
            print(f"benchmark run failed (pytest exit code {code})", file=sys.stderr)
        if not os.path.exists(out):
            sys.exit(int(code) or 1)
        with open(out) as f:
            return json.load(f)["benchmarks"], int(code) if code not in (0, 5) else 0


def table(benchmarks):
    """(markdown lines, rows) with one row per comparison group."""
    groups = {}
    for b in benchmarks:
        groups.setdefault(b["group"], {})[b["name"]] = b["stats"]["median"]
    header = ["case", "pooling ms", "1 thread ms"] + [f"vs {p}" for p in PEERS] + ["vs floor"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = []
    for group, medians in groups.items():
        if group.startswith(OWN_TABLES):
            continue
        ours = min(v for k, v in medians.items() if k in ("pooling", "pooling out="))
        cells = [group, f"{ours * 1e3:.3f}", _ms(medians.get("pooling 1 thread"))]
        speedups = {}
        for peer in PEERS:
            if peer in medians:
                speedups[peer] = medians[peer] / ours
                cells.append(f"{speedups[peer]:.2f}x")
            else:
                cells.append("-")
        floor = medians.get("floor")
        cells.append(f"{ours / floor:.2f}" if floor else "-")
        lines.append("| " + " | ".join(cells) + " |")
        rows.append((group, speedups))
    return lines, rows


def pattern_table(benchmarks):
    """Markdown lines for the real-call-pattern groups (bench/test_callpattern.py): each member's
    median, which that test stores in the group's extra_info, and the default call's time over the
    slower of one thread and onnxruntime (the target: at most 1.1)."""
    groups = {b["group"][len(PATTERN):]: b["extra_info"].get("medians", {})
              for b in benchmarks if b["group"].startswith(PATTERN) and not b["group"].startswith(PATTERN_NEXT)}
    if not groups:
        return []
    header = ["operator, size, calls separated by", "pooling ms", "1 thread ms", "onnxruntime ms",
              "pooling / slower of the two"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for group, medians in groups.items():
        ours, one, peer = (medians.get(k) for k in ("pooling", "pooling 1 thread", "onnxruntime"))
        slower = max((v for v in (one, peer) if v is not None), default=None)
        ratio = f"{ours / slower:.2f}" if ours is not None and slower else "-"
        lines.append("| " + " | ".join([group, _ms(ours), _ms(one), _ms(peer), ratio]) + " |")
    return lines


def next_call_table(benchmarks):
    """Markdown lines for torch's convolution timed right after each member's MaxPool call
    (test_callpattern.test_next_call), and its time after pooling over its time after pooling's one-thread
    call, which leaves no worker behind (the target: at most 1.1)."""
    groups = {b["group"][len(PATTERN_NEXT):]: b["extra_info"].get("medians", {})
              for b in benchmarks if b["group"].startswith(PATTERN_NEXT)}
    if not groups:
        return []
    header = ["torch's conv after", "pooling", "pooling 1 thread", "onnxruntime", "after pooling / after 1 thread"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for group, medians in groups.items():
        ours, one, peer = (medians.get(k) for k in ("pooling", "pooling 1 thread", "onnxruntime"))
        ratio = f"{ours / one:.2f}" if ours is not None and one else "-"
        lines.append("| " + " | ".join([group, _ms(ours), _ms(one), _ms(peer), ratio]) + " |")
    return lines


def zoo_table(benchmarks):
    """(markdown lines, speedups) for the model-zoo groups: at each thread count, pooling against
    the best peer at that count, and against the memory floor."""
    groups = {}
    for b in benchmarks:
        if b["group"].startswith(ZOO):
            groups.setdefault(b["group"][len(ZOO):], {})[b["name"]] = b["stats"]["median"]
    if not groups:
        return [], []
    header = ["model family: case", "pooling ms", "best peer", "speedup", "1 thread ms", "best peer 1t",
              "speedup 1t", "vs floor", "target met"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    speedups = []
    for group, medians in groups.items():
        floor = medians.get("floor")
        cells, met = [group], True
        for ours_key, suffix in (("pooling", ""), ("pooling 1 thread", " 1 thread")):
            ours = medians.get(ours_key)
            peers = {p: medians[p + suffix] for p in PEERS if p + suffix in medians}
            best = min(peers, key=peers.get) if peers else None
            speedup = peers[best] / ours if best and ours else None
            if speedup is not None:
                speedups.append(speedup)
            near_floor = floor is not None and ours is not None and ours / floor <= 1.25
            met &= near_floor or (speedup is not None and speedup >= 1.2)
            cells += [_ms(ours), f"{best} {_ms(peers[best])}" if best else "-",
                      f"{speedup:.2f}x" if speedup else "-"]
        ours = medians.get("pooling")
        cells.append(f"{ours / floor:.2f}" if floor and ours else "-")
        cells.append("yes" if met else "**no**")
        lines.append("| " + " | ".join(cells) + " |")
    return lines, speedups


def dropin_table(benchmarks):
    """Markdown lines for pooling.torch against torch's own functions (bench/test_torch_dropin.py): the
    medians at 2 threads and at 1, torch's over pooling.torch's (> 1: pooling.torch is faster), and
    pooling.torch's over the memory floor's (<= 1.25: near the floor)."""
    groups = {}
    for b in benchmarks:
        if b["group"].startswith(DROPIN):
            groups.setdefault(b["group"][len(DROPIN):], {})[b["name"]] = b["stats"]["median"]
    if not groups:
        return []
    header = ["case", "pooling.torch ms", "torch ms", "speedup", "pooling.torch 1 thread ms", "torch 1 thread ms",
              "speedup 1 thread", "floor ms", "vs floor", "vs floor 1 thread"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for group, medians in groups.items():
        cells = [group]
        for suffix in ("", " 1 thread"):
            ours, theirs = medians.get("pooling.torch" + suffix), medians.get("torch" + suffix)
            cells += [_ms(ours), _ms(theirs), f"{theirs / ours:.2f}x" if ours and theirs else "-"]
        floor = medians.get("floor")
        cells.append(_ms(floor))
        for suffix in ("", " 1 thread"):
            ours = medians.get("pooling.torch" + suffix)
            cells.append(f"{ours / floor:.2f}" if ours and floor else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ladder_table(benchmarks):
    """Markdown lines for the size ladder (bench/ladder.py): a header naming the CPU and the cache
    sizes, a row per case, thread count and rung, and a last line counting the cliffs and the rungs
    slower than onnxruntime."""
    rungs = {}  # (case, batch) -> {"info": extra_info, "medians": {name: s}, "threads": {name: count}}
    for b in benchmarks:
        if b["group"].startswith(LADDER):
            info = b["extra_info"]
            rung = rungs.setdefault((info["ladder"], info["batch"]), {"info": info, "medians": {}, "threads": {}})
            rung["medians"][b["name"]] = b["stats"]["median"]
            rung["threads"][b["name"]] = info["threads"]
    if not rungs:
        return []
    from pooling._runtime import KEEP_MIN_BYTES as KEEP_MIN  # (_outputs._FRESH_ZEROS is the same size)
    info = next(iter(rungs.values()))["info"]
    header = ["case", "threads", "N", "input MiB", "result MiB", "pooling ms", "onnxruntime ms", "pooling ns/B",
              "onnxruntime ns/B", "pooling / floor", "pooling / onnxruntime", "cliff"]
    lines = [f"CPU: {info['cpu']}; caches: {info['caches']}; batches double up to the first input over "
             f"2 x {info['llc'] / 2**20:g} MiB (at most {info['max_input'] / 2**20:g} MiB); "
             "ns/B: per byte moved (inputs and outputs); result MiB marked * where the result is large "
             f"enough for the allocator thresholds (from {KEEP_MIN >> 20} MiB: blocks kept for reuse by "
             "pooling's result cache; MaxUnpool's results, where not written whole, zeroed by the system when "
             "the cache holds no block for them)", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    cliffs = slower = compared = 0
    for label in dict.fromkeys(label for label, _ in rungs):
        for suffix in ("", " 1 thread"):
            before = None  # the previous rung's (ours, theirs) cost per byte
            for n in sorted(n for case, n in rungs if case == label):
                rung = rungs[(label, n)]
                ours, theirs = (rung["medians"].get(name + suffix) for name in ("pooling", "onnxruntime"))
                if ours is None and theirs is None:
                    continue
                moved, floor = rung["info"]["moved_bytes"], rung["medians"].get("floor")
                cost = tuple(t and t / moved for t in (ours, theirs))
                cliff = (before is not None and None not in (ours, before[0], floor)
                         and cost[0] / before[0] > CLIFF_RISE and ours / floor > CLIFF_FLOOR
                         and (None in (theirs, before[1]) or cost[1] / before[1] <= CLIFF_RISE))
                cliffs += cliff
                if ours and theirs:
                    compared += 1
                    slower += ours > theirs
                count = rung["threads"].get("pooling" + suffix) or rung["threads"].get("onnxruntime" + suffix)
                result = moved - rung["info"]["input_bytes"]
                cells = [label, str(count), str(n), f"{rung['info']['input_bytes'] / 2**20:.1f}",
                         f"{result / 2**20:.1f}" + ("*" if result >= KEEP_MIN else ""), _ms(ours),
                         _ms(theirs)] + [f"{c * 1e9:.3f}" if c else "-" for c in cost] + [
                         f"{ours / floor:.2f}" if ours and floor else "-",
                         f"{ours / theirs:.2f}" if ours and theirs else "-", "CLIFF" if cliff else ""]
                lines.append("| " + " | ".join(cells) + " |")
                before = cost
    lines += ["", f"cliffs: {cliffs}; rungs slower than onnxruntime: {slower} of {compared}"]
    return lines


def _ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


FLOOR_LABEL = "memory floor: a numpy copy of the same bytes"


def plot_rows(benchmarks):
    """(case, {peer: speedup}, floor ratio or None) for each case of the main table, in the plot's
    order: by the speedup over the fastest peer, highest first, then the cases no peer ran.

    Both ratios are a median over pooling's (the faster of "pooling" and "pooling out="), so a
    speedup > 1 means pooling is faster, and the floor ratio is below 1 by as much as a plain copy
    of the same bytes is faster than pooling."""
    groups = {}
    for b in benchmarks:
        if not b["group"].startswith(OWN_TABLES):
            groups.setdefault(b["group"], {})[b["name"]] = b["stats"]["median"]
    rows = []
    for group, medians in groups.items():
        ours = min(v for k, v in medians.items() if k in ("pooling", "pooling out="))
        floor = medians.get("floor")
        rows.append((group, {p: medians[p] / ours for p in PEERS if p in medians}, floor and floor / ours))
    return sorted(rows, key=lambda r: (not r[1], -min(r[1].values(), default=0)))


def _ticks(lo, hi):
    """1-2-5 tick values between lo and hi; only the powers of ten where those would be over 10."""
    ticks = [(m, round(m * 10.0 ** e, 6)) for e in range(-4, 5) for m in (1, 2, 5)]
    ticks = [(m, t) for m, t in ticks if lo <= t <= hi]
    return [t for m, t in ticks if len(ticks) <= 10 or m == 1]


def figure(benchmarks, fontsize=8):
    """A matplotlib Figure of the main table's cases (plot_rows): per case, one bar per peer from
    1x to its speedup (log axis), centred on the case's label, and the memory floor as a black mark
    on the same scale. A case no peer ran keeps its row, with its floor mark and "no peer ran it".
    The legend lists only the peers that ran some case."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    rows = plot_rows(benchmarks)
    peers = [p for p in PEERS if any(p in r[1] for r in rows)]
    colors = {p: f"C{i}" for i, p in enumerate(PEERS)}  # a peer keeps its colour from plot to plot
    label_in = max((len(r[0]) for r in rows), default=0) * fontsize * 0.6 / 72  # the labels' rough width
    row_in = max(0.3, 0.2 * len(peers))  # inches per case
    fig = Figure(figsize=(label_in + 7, row_in * len(rows) + 2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    height = 0.8 / max(len(peers), 1)
    for i, (case, speedups, floor) in enumerate(rows):
        present = [p for p in peers if p in speedups]
        for j, peer in enumerate(present):  # the row's bars, centred on its label
            ax.barh(i + (j - (len(present) - 1) / 2) * height, speedups[peer] - 1, left=1, height=height,
                    color=colors[peer])
        if not present:
            ax.text(1.05, i, "no peer ran it", va="center", fontsize=fontsize, style="italic")
    floors = [(r[2], i) for i, r in enumerate(rows) if r[2]]
    if floors:
        ax.scatter(*zip(*floors), marker="|", s=(72 * 0.8 * row_in) ** 2, color="black", zorder=3)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=fontsize)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top

    values = [v for r in rows for v in r[1].values()] + [f for f, _ in floors] + [1.0]
    lo, hi = min(values) / 1.3, max(values) * 1.3
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(FixedLocator(_ticks(lo, hi)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.tick_params(axis="x", labelsize=fontsize)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel("peer's median time / pooling's (> 1x: pooling is faster)", fontsize=fontsize)
    handles = [Patch(color=colors[p], label=p) for p in peers]
    if floors:
        handles.append(Line2D([], [], color="black", marker="|", linestyle="", markersize=10, label=FLOOR_LABEL))
    if handles:
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.01), ncols=len(handles),
                  frameon=False, fontsize=fontsize)
    fig.suptitle("pooling against its peers, sorted by the speedup over the fastest one", fontsize=fontsize + 2)
    fig.tight_layout()
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="selection", help="pytest -k expression selecting cases")
    parser.add_argument("--plot", metavar="PNG", help="also draw the speedups as a bar chart")
    args, extra = parser.parse_known_args(argv)
    if args.selection == "ladder":  # timed by ladder.run, round-robin, not by pytest-benchmark
        if HERE not in sys.path:
            sys.path.insert(0, HERE)
        import ladder
        benchmarks, code = ladder.run(), 0
    else:
        benchmarks, code = run(args.selection, extra)
    lines, _ = table(benchmarks)
    patterns = pattern_table(benchmarks)
    zoo, speedups = zoo_table(benchmarks)
    dropin = dropin_table(benchmarks)
    sizes = ladder_table(benchmarks)
    if len(lines) > 2:
        print("\n".join(lines))
    if zoo:
        print("\nModel-zoo sweep (speedup: the best peer's median over pooling's at the same thread count):\n")
        print("\n".join(zoo))
        met = sum(line.endswith("| yes |") for line in zoo)
        print(f"\ntarget met on {met} of {len(zoo) - 2} cases; geometric mean speedup over the best peer "
              f"(both thread counts): {statistics.geometric_mean(speedups):.2f}x")
    if patterns:
        print("\nReal call patterns (one call after each gap; the gap is not timed):\n")
        print("\n".join(patterns))
    nexts = next_call_table(benchmarks)
    if nexts:
        print("\ntorch's next call (a 2-thread 3x3 convolution, ms) right after each member's MaxPool:\n")
        print("\n".join(nexts))
    if dropin:
        print("\npooling.torch against torch's own functions, on torch tensors (speedup: torch's median over "
              "pooling.torch's):\n")
        print("\n".join(dropin))
    if sizes:
        print("\nSize ladder (pooling and onnxruntime at each batch, fresh results; CLIFF: cost per byte up more "
              f"than {CLIFF_RISE}x from the batch before while onnxruntime's was not, above {CLIFF_FLOOR}x the "
              "floor):\n")
        print("\n".join(sizes))
    if args.plot and plot_rows(benchmarks):
        figure(benchmarks).savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"\nplot written to {args.plot}")
    elif args.plot:
        print("\nno plot: no case of the main table was selected")
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
