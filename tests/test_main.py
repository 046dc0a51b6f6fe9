"""`python -m pooling`: its options, its output and its exit status."""
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

import pooling
from pooling import __main__ as cli

KEYS = {"config", "method", "checks", "timings", "baselines", "warnings", "passed"}


def _onnxruntime_importable():
    return cli._onnxruntime_version() is not None


def test_help_prints_usage_and_runs_nothing():
    done = subprocess.run([sys.executable, "-m", "pooling", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m pooling")
    assert "--quick" in done.stdout and "--json" in done.stdout
    assert "check  " not in done.stdout and "max threads" not in done.stdout  # no check, no config


def test_help_in_process_builds_no_case(monkeypatch, capsys):
    monkeypatch.setattr(cli, "cases", lambda: pytest.fail("--help ran the checks"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_unknown_option_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(cli, "cases", lambda: pytest.fail("a bad option ran the checks"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--no-such-option"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_quick_names_reference_threads_and_median(capsys):
    assert cli.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "pooling.reference" in out
    assert "median" in out
    threads = pooling.max_threads()
    assert f'"all threads" is {threads} thread' in out
    assert "floor" in out
    for name in (c.name for c in cli.cases()):
        assert f"check  ok    {name}" in out
        assert f"| {name}" in out  # its timing row
    if _onnxruntime_importable():
        assert "ort = onnxruntime" in out
    assert out.rstrip().endswith("all checks passed")


def test_quick_json_parses_and_every_check_passed(capsys):
    assert cli.main(["--quick", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)  # nothing but the JSON object on stdout
    assert set(report) == KEYS
    assert report["passed"] is True
    names = [c.name for c in cli.cases()]
    assert [c["case"] for c in report["checks"]] == names
    assert all(c["passed"] is True for c in report["checks"])
    method = report["method"]
    assert method["reference"] == "pooling.reference" and method["statistic"] == "median"
    assert method["all_threads"] == pooling.max_threads() and method["quick"] is True
    assert report["config"]["max threads"] == str(pooling.max_threads())
    for t in report["timings"]:
        assert t["one_thread_ms"] > 0 and t["all_threads_ms"] > 0
    for b in report["baselines"]:
        assert b["bytes_moved"] > 0 and b["memory_floor_ms"] > 0
        if _onnxruntime_importable():
            assert b["onnxruntime_one_thread_ms"] > 0 and b["onnxruntime_all_threads_ms"] > 0, b
    assert isinstance(report["warnings"], list)


def _failing(monkeypatch):
    """Only the MaxUnpool case, with a reference answer that is wrong in one element."""
    case = next(c for c in cli.cases() if c.op == "MaxUnpool")
    wrong = case.ref().copy()
    wrong.flat[0] = np.nextafter(wrong.flat[0], np.inf)
    monkeypatch.setattr(cli, "cases", lambda: [dataclasses.replace(case, ref=lambda: wrong)])
    return case.name


def test_a_failed_check_exits_1(monkeypatch, capsys):
    name = _failing(monkeypatch)
    assert cli.main(["--quick"]) == 1
    out = capsys.readouterr().out
    assert f"check  FAIL  {name}" in out
    assert out.rstrip().endswith("SOME CHECKS FAILED")


def test_a_failed_check_exits_1_with_json(monkeypatch, capsys):
    name = _failing(monkeypatch)
    assert cli.main(["--quick", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert report["checks"] == [{"case": name, "passed": False}]


def test_all_threads_far_above_one_thread_warns():
    timings = [{"case": "A", "one_thread_ms": 1.0, "all_threads_ms": 2.0},
               {"case": "B", "one_thread_ms": 1.0, "all_threads_ms": 0.6}]
    warnings = cli._warnings(timings, threads=1)
    assert len(warnings) == 1
    assert "A (2.0x)" in warnings[0] and "B" not in warnings[0]
    assert "busy or oversubscribed" in warnings[0]
    assert cli._warnings(timings[1:], threads=1) == []
