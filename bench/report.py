"""Run the benchmark suite and print a markdown table of medians and ratios.

    python bench/report.py                 # every case
    python bench/report.py -k "float16"    # a pytest -k selection
    python bench/report.py --plot out.png  # also draw the speedups (matplotlib, the `bench` extra)
    python bench/report.py -k pattern      # only the real-call-pattern groups (test_callpattern.py)
    python bench/report.py -k zoo          # only the model-zoo sweep (zoo.py)

The model-zoo sweep has a table of its own: per case and thread count (all
threads, one thread), pooling's median, the best peer at the same thread count,
the speedup over it, and the ratio to the memory floor; the targets are a
speedup of at least 1.2 or a floor ratio of at most 1.25.

Per case of the main table: pooling's median, its speedup over each peer (peer median / pooling
median; > 1 means pooling is faster), and its ratio to the memory floor
(pooling median / the time numpy needs to copy the same number of bytes,
measured in the same run; 1.0 would be the fastest this machine can go).
"""
import argparse
import contextlib
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
ZOO = "zoo "  # the model-zoo groups' prefix (cases.ZOO_PREFIX)


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
    out = os.path.join(tempfile.mkdtemp(prefix="pooling-bench-"), "bench.json")
    args = [HERE, "-q", "-o", "addopts=", f"--benchmark-json={out}",
            "--benchmark-min-rounds=7", "--benchmark-max-time=0.5"] + extra
    if selection:
        args += ["-k", selection]
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # only the bar shows
        code = pytest.main(args, plugins=[Progress()])
    if code not in (0, 5):
        print(f"benchmark run failed (pytest exit code {code})", file=sys.stderr)
        sys.exit(int(code))
    with open(out) as f:
        return json.load(f)["benchmarks"]


def table(benchmarks):
    """(markdown lines, rows) with one row per comparison group."""
    groups = {}
    for b in benchmarks:
        groups.setdefault(b["group"], {})[b["name"]] = b["stats"]["median"]
    header = ["case", "pooling ms", "1 thread ms"] + [f"vs {p}" for p in PEERS] + ["vs floor"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = []
    for group, medians in groups.items():
        if group.startswith((PATTERN, ZOO)):
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
              for b in benchmarks if b["group"].startswith(PATTERN)}
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


def _ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.5))
    height = 0.8 / len(PEERS)
    for j, peer in enumerate(PEERS):
        ys = [i + j * height for i in range(len(rows))]
        ax.barh(ys, [r[1].get(peer, 0) for r in rows], height=height, label=f"vs {peer}")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))], [r[0] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("speedup of pooling over the peer (median, > 1 is faster)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="selection", help="pytest -k expression selecting cases")
    parser.add_argument("--plot", metavar="PNG", help="also draw the speedups as a bar chart")
    args, extra = parser.parse_known_args(argv)
    benchmarks = run(args.selection, extra)
    lines, rows = table(benchmarks)
    patterns = pattern_table(benchmarks)
    zoo, speedups = zoo_table(benchmarks)
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
    if args.plot:
        plot(rows, args.plot)
        print(f"\nplot written to {args.plot}")


if __name__ == "__main__":
    main()
