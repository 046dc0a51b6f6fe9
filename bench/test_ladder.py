"""The size ladder (bench/ladder.py): every member's result on the first rungs of each case, the rungs,
the round-robin timer and the table.

    python bench/report.py -k ladder  # timings and the table (ladder.run, not pytest-benchmark)
    python -m pytest bench -k ladder  # these checks
"""
import pytest

import cases
import ladder
from cases import inputs
from test_bench import check

LLC = ladder.caches().llc
RUNGS = [rung for rung in ladder.rungs(LLC) if rung.index < ladder.SMOKE_RUNGS]
PAIRS = [(rung, name) for rung in RUNGS for name in ladder.MEMBERS]


@pytest.fixture(scope="module", autouse=True)
def _release_last_rung():
    yield
    ladder.release_other_rungs(None)


@pytest.mark.parametrize("rung, name", PAIRS, ids=[f"{r.id}-{n}" for r, n in PAIRS])
def test_ladder_member(rung, name):
    """Each member of the first rungs computes the reference's result (the floor: reads every input
    byte and returns a buffer of the results' size)."""
    case = rung.case
    ladder.release_other_rungs(case)
    try:
        fn = ladder.members(case)[name]()
    except cases.Unavailable as e:
        pytest.skip(str(e))
    assert ladder.input_bytes(case) == sum(a.nbytes for a in inputs(case))
    result = fn()
    if name == "floor":
        assert result.nbytes == cases.moved_bytes(case) - ladder.input_bytes(case)
    else:
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


def test_measure_times_round_robin():
    """measure: every callable called the same number of times, one of each per round in a rotating
    order, at least min_rounds rounds after the warm-up; the medians are of the timed calls."""
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    medians = ladder.measure(fns, seconds=0, min_rounds=5, warm_up_s=0)
    assert set(medians) == set("abc") and all(m >= 0 for m in medians.values())
    warm, timed = calls[:3], calls[3:]
    assert warm == list("abc") and len(timed) == 15
    assert [timed[i:i + 3] for i in range(0, 15, 3)] == [list("abc"), list("bca"), list("cab"), list("abc"),
                                                         list("bca")]


def test_records_feed_the_table():
    """records -> report.ladder_table: one row per thread count for a measured rung."""
    import report
    rung = ladder.rungs(LLC)[0]
    medians = {"pooling": 1e-3, "pooling 1 thread": 2e-3, "onnxruntime": 2e-3, "onnxruntime 1 thread": 4e-3,
               "floor": 5e-4}
    lines = report.ladder_table(ladder.records(rung, medians, llc=LLC))
    rows = [line for line in lines if line.startswith(f"| {rung.label} |")]
    assert [row.split(" | ")[1] for row in rows] == [str(cases.THREADS), "1"]
    assert all(row.split(" | ")[-2] == "0.50" for row in rows)  # pooling over onnxruntime
    assert lines[-1] == "cliffs: 0; rungs slower than onnxruntime: 0 of 2"


def test_report_runs_the_ladder_round_robin(monkeypatch, capsys):
    """`report.py -k ladder` takes its records from ladder.run (not pytest-benchmark) and prints the table."""
    import report
    rung = ladder.rungs(LLC)[0]
    medians = {"pooling": 1e-3, "pooling 1 thread": 2e-3, "onnxruntime": 2e-3, "onnxruntime 1 thread": 4e-3,
               "floor": 5e-4}
    monkeypatch.setattr(ladder, "run", lambda: ladder.records(rung, medians, llc=LLC))
    monkeypatch.setattr(report, "run", lambda *a: pytest.fail("pytest-benchmark ran for -k ladder"))
    report.main(["-k", "ladder"])
    assert f"| {rung.label} | 1 | 1 |" in capsys.readouterr().out


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
