"""Before/after: time two builds of pooling side by side, case by case, in one run.

    python bench/compare.py --against f4cefa0           # this checkout against a git ref
    python bench/compare.py --against /path/to/src      # ... or against another built source tree
    python bench/compare.py --against HEAD -k MaxPool   # A/A: the same code twice, to see the noise
    python bench/compare.py --against v1.0 --threads 1 --rounds 9
    python bench/compare.py --against HEAD~3 --zoo      # the model-zoo sweep's cases (zoo.py)
    python bench/compare.py --against src --before-env POOLING_SIMD=baseline   # SIMD builds, one tree

A git ref is checked out into a temporary worktree and built in place there
(about a minute).  Each build runs in its own worker process; the parent asks
them in turn for the median time of one case, alternating which goes first,
so slow drifts of a shared machine (other tenants, frequency, thermal state)
fall on both builds alike.  Separate runs of `bench/report.py` before and
after do not have that property: on a shared VM their per-row medians moved
by up to 90% between two runs of the same code.

Prints one row per case: each build's median over rounds, the ratio
after/before (< 1 means this checkout is faster) and the range of the per-round
ratios.  Judge noise with an A/A run, `--against HEAD` (the same code on both
sides): on the 2-core development VM its median ratios spread over 0.96-1.05
(17 cases, 7 rounds), and a few rows' ranges excluded 1.0 by 2-4% (two
processes' arrays differ in placement), so a row is a change only well outside
that band.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker(src):
    """Serve timing requests on stdin: one JSON line in, one JSON line out."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path[:0] = [src, HERE]
    import cases  # noqa: E402  (imports pooling from `src`)
    import pooling  # noqa: E402
    import zoo  # noqa: E402

    print(json.dumps({"pooling": os.path.dirname(pooling.__file__)}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        fn = cases.pooling_call((zoo.ZOO if req["zoo"] else cases.CASES)[req["case"]], n_threads=req["threads"])
        end = time.perf_counter() + req["warm_s"]
        while time.perf_counter() < end:
            fn()
        times = []
        end = time.perf_counter() + req["time_s"]
        while time.perf_counter() < end or len(times) < 5:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        print(json.dumps({"median": statistics.median(times)}), flush=True)


class Worker:
    def __init__(self, src, env=None):
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", src], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=dict(os.environ, **(env or {})))
        self.where = json.loads(self.proc.stdout.readline())["pooling"]

    def time(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["median"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def build_ref(ref, into):
    """Check `ref` out into a worktree under `into` and build its extensions in place; its src dir."""
    tree = os.path.join(into, "tree")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, ref], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"building {ref} in {tree} ...", file=sys.stderr)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j2"], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.path.join(tree, "src")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", help="a git ref, or a built source tree's src directory")
    ap.add_argument("-k", default="", help="only cases whose id contains this text (or one of A|B|...)")
    ap.add_argument("--threads", type=int, default=None, help="n_threads for pooling (default: all)")
    ap.add_argument("--before-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the 'before' worker only (repeatable)")
    ap.add_argument("--zoo", action="store_true", help="the model-zoo sweep's cases (zoo.py), not the main table's")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=float, default=0.3, help="seconds timed per case, build and round")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if not args.against:
        ap.error("--against is required")

    sys.path.insert(0, HERE)
    from cases import CASES
    from zoo import ZOO

    chosen = [(i, c) for i, c in enumerate(ZOO if args.zoo else CASES) if any(k in c.id for k in args.k.split("|"))]
    if not chosen:  # (before a git ref is built for nothing)
        ap.error(f"no case's id contains {args.k!r}")
    tmp = tempfile.mkdtemp(prefix="pooling-compare-")
    try:
        other = args.against if os.path.isdir(args.against) else build_ref(args.against, tmp)
        before_env = dict(item.split("=", 1) for item in args.before_env)
        before, after = Worker(other, before_env), Worker(os.path.join(ROOT, "src"))
        print(f"before: {before.where}\nafter:  {after.where}\n", file=sys.stderr)
        rows = []
        for n, (i, case) in enumerate(chosen, 1):
            b, a = [], []
            for r in range(args.rounds):
                req = dict(case=i, zoo=args.zoo, threads=args.threads, warm_s=0.2 if r == 0 else 0.05, time_s=args.time)
                pair = (before, after) if r % 2 == 0 else (after, before)
                got = {w: w.time(**req) for w in pair}
                b.append(got[before])
                a.append(got[after])
            ratios = [y / x for x, y in zip(b, a)]
            rows.append((case.id, statistics.median(b), statistics.median(a), statistics.median(ratios),
                         min(ratios), max(ratios)))
            print(f"\r{n}/{len(chosen)} {case.id[:60]:<60}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        before.close()
        after.close()
    finally:
        if not os.path.isdir(args.against):
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", os.path.join(tmp, "tree")],
                           stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)

    threads = "all threads" if args.threads is None else f"n_threads={args.threads}"
    print(f"| case ({threads}) | before ms | after ms | after/before | per-round range |")
    print("|---|---|---|---|---|")
    for cid, b, a, ratio, lo, hi in rows:
        print(f"| {cid} | {b * 1e3:.3f} | {a * 1e3:.3f} | {ratio:.2f} | {lo:.2f}-{hi:.2f} |")
    geo = statistics.geometric_mean([r[3] for r in rows])
    print(f"\ngeometric mean after/before: {geo:.3f} over {len(rows)} cases, {args.rounds} rounds each")


if __name__ == "__main__":
    main()
