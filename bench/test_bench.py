"""One pytest-benchmark comparison group per case; every member checks its result.

    python -m pytest bench                          # timings (python bench/report.py tabulates them)
    python -m pytest bench --benchmark-disable      # smoke test: each body once, checks included

The cases are bench/cases.py's CASES (the README's table) and bench/zoo.py's model-zoo sweep.
"""
import time

import numpy as np
import pytest

from cases import CASES, Unavailable, expected, implementations, to_numpy
from zoo import ZOO

WARM_UP_S = 0.5  # this machine speeds up over about half a second of steady load

PAIRS = [(case, name) for case in CASES + ZOO for name in implementations(case)]


@pytest.mark.parametrize("case, name", PAIRS, ids=[f"{c.id}-{n}" for c, n in PAIRS])
def test_bench(benchmark, case, name):
    benchmark.group = case.id
    benchmark.name = name
    try:
        fn = implementations(case)[name]()
    except Unavailable as e:
        pytest.skip(str(e))
    benchmark.extra_info["case"] = case.id
    if not benchmark.disabled:
        warm_up(fn)
    result = benchmark(fn)
    if name != "floor":
        check(case, name, result)


def warm_up(fn, seconds=WARM_UP_S):
    """Call fn for `seconds` (at least once); the last call's time in seconds."""
    end = time.perf_counter() + seconds
    while True:
        start = time.perf_counter()
        fn()
        now = time.perf_counter()
        if now >= end:
            return now - start


def check(case, name, result):
    """The member computed the reference's result: bit for bit, except Col2Im's
    float sums, whose order and precision may differ between implementations
    (pooling sums 16-bit floats in float32, rounded once: exact against the
    reference; torch's fold rounds every 16-bit partial sum, a few of their ulps:
    bfloat16's, 2**-7 of a value, reach 1/32 on VOLO-D1's sums of up to 8)."""
    want = expected(case)
    got = to_numpy(case, name, result)
    if case.indices:
        assert got[0].tobytes() == want[0].tobytes(), f"{name}: Y differs"
        np.testing.assert_array_equal(got[1], want[1], err_msg=f"{name}: Indices differ")
    elif case.op == "Col2Im" and name.startswith("pooling"):
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), f"{name}: Y differs"
    elif case.op == "Col2Im":
        assert got.shape == want.shape
        tol = {"float16": 1e-2, "bfloat16": 2**-4}.get(case.dtype, 1e-5)
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol,
                                   err_msg=f"{name}: Y differs")
    else:
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), f"{name}: Y differs"


def test_scaling_script_runs_and_checks(capsys):
    """bench/scaling.py (thread scaling beside the peers) on one case at one and two threads, each
    result checked against the twin's: a table row per thread count."""
    import scaling
    scaling.main(["--threads", "1,2", "-k", "ResNet stem:", "--time", "0.01", "--rounds", "1"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ResNet stem:")]
    assert [row.split(" | ")[1] for row in rows] == ["1", "2"]
