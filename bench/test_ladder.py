"""The size ladder (bench/ladder.py): one group per case and batch, members at cases.THREADS threads and at one.

    python bench/report.py -k ladder                      # timings and the table
    python -m pytest bench -k ladder --benchmark-disable  # smoke test: the first two rungs of each case
"""
import pytest

import cases
import ladder
from cases import Unavailable, inputs, moved_bytes
from test_bench import check, warm_up

LONG_CALL_S = 0.01  # calls at least this long are timed for --benchmark-max-time in a few rounds...
LONG_CALL_ROUNDS = 3  # ... at least this many, not --benchmark-min-rounds

LLC = ladder.caches().llc
RUNGS = ladder.rungs(LLC)
PAIRS = [(rung, name) for rung in RUNGS for name in ladder.MEMBERS]
CPU, CACHES = ladder.cpu_name(), ladder.describe_caches()


@pytest.fixture(scope="module", autouse=True)
def _release_last_rung():
    yield
    ladder.release_other_rungs(None)


@pytest.mark.parametrize("rung, name", PAIRS, ids=[f"{r.id}-{n}" for r, n in PAIRS])
def test_ladder(benchmark, request, rung, name):
    if benchmark.disabled and rung.index >= ladder.SMOKE_RUNGS:
        pytest.skip(f"smoke test: the first {ladder.SMOKE_RUNGS} rungs only")
    case = rung.case
    ladder.release_other_rungs(case)
    benchmark.group = ladder.LADDER_PREFIX + case.id
    benchmark.name = name
    try:
        fn = ladder.members(case)[name]()
    except Unavailable as e:
        pytest.skip(str(e))
    assert ladder.input_bytes(case) == sum(a.nbytes for a in inputs(case))
    benchmark.extra_info.update(ladder=rung.label, batch=case.shape[0], rung=rung.index,
                                threads=ladder.threads(name), input_bytes=ladder.input_bytes(case),
                                moved_bytes=moved_bytes(case), llc=LLC, max_input=ladder.MAX_INPUT, cpu=CPU,
                                caches=CACHES)
    if benchmark.disabled:
        result = benchmark(fn)
    else:
        seconds = warm_up(fn)
        if seconds < LONG_CALL_S:
            result = benchmark(fn)
        else:
            max_time = float(request.config.getoption("benchmark_max_time"))  # given as text
            result = benchmark.pedantic(fn, rounds=max(LONG_CALL_ROUNDS, round(max_time / seconds)))
    if name != "floor":
        check(case, name, result)


def test_ladder_rungs_double_until_twice_the_llc():
    """Batches 1, 2, 4, ... to the first input over 2 * llc, none over 512 MiB."""
    case = ladder.CASES[0][1]  # 3 MiB at batch 1
    assert ladder.batches(case, llc=32 << 20) == [1, 2, 4, 8, 16, 32]  # 96 MiB > 64 MiB
    assert ladder.batches(case, llc=1 << 20) == [1]  # 3 MiB > 2 MiB: one rung
    assert ladder.batches(case, llc=1 << 30) == [1, 2, 4, 8, 16, 32, 64, 128]  # 384 MiB; 768 MiB is too big
    unpool = ladder.at_batch(dict(ladder.CASES)["MaxUnpool k2 s2 112->224"], 2)
    assert ladder.input_bytes(unpool) == 2 * 64 * 112 * 112 * (4 + 8)
    assert [r.index for r in ladder.rungs(llc=1 << 19)] == [0] * len(ladder.CASES)
    assert ladder.caches().llc > 0 and "L2" in ladder.describe_caches()
    assert cases.THREADS in {ladder.threads(n) for n in ladder.MEMBERS}


def test_ladder_table_marks_cliffs():
    """report.ladder_table on made-up medians: a cliff where ours rises > 1.5x per byte and
    onnxruntime's does not (or onnxruntime did not run), above 1.25x the floor; none where
    onnxruntime's rises as much, nor where ours stays near the floor."""
    import report

    def bench(label, n, name, ms):
        mib = n << 20
        return {"group": f"ladder {label} {n}", "name": name, "stats": {"median": ms / 1e3},
                "extra_info": dict(ladder=label, batch=n, rung=n.bit_length() - 1, threads=ladder.threads(name),
                                   input_bytes=mib, moved_bytes=2 * mib, llc=32 << 20, max_input=512 << 20,
                                   cpu="CPU X", caches="L3 X")}
    benchmarks = []
    ours = (1, 2, 8)  # per byte: 1, 1, 2 (a 2x rise at N=4)
    for label, theirs, floor in (("A", (2, 4, 8), 0.5), ("B", (2, 4, 32), 0.5), ("C", (2, 4, 8), 1.8)):
        for i, n in enumerate((1, 2, 4)):
            benchmarks += [bench(label, n, "pooling", ours[i]), bench(label, n, "onnxruntime", theirs[i]),
                           bench(label, n, "pooling 1 thread", ours[i]), bench(label, n, "floor", floor * n)]
            if label != "A":  # A has no onnxruntime at one thread: judged on ours alone
                benchmarks.append(bench(label, n, "onnxruntime 1 thread", theirs[i]))
    lines = report.ladder_table(benchmarks)
    assert "CPU X" in lines[0] and "L3 X" in lines[0]
    rows = [line.split(" | ") for line in lines if line.startswith(("| A ", "| B ", "| C "))]
    assert len(rows) == 3 * 2 * 3  # three cases, two thread counts, three rungs
    assert [row[:3] for row in rows if "CLIFF" in row[-1]] == [["| A", "2", "4"], ["| A", "1", "4"]]
    assert lines[-1] == "cliffs: 2; rungs slower than onnxruntime: 0 of 15"
