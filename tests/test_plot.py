"""bench/report.py's plot, drawn from a small synthetic result set, and its temporary folders.

bench/ is in the source tree and the sdist, not in a wheel's test folder: without it these skip.
"""
import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
if not (BENCH / "report.py").is_file():
    pytest.skip("bench/ is not next to tests/ (a wheel's test run)", allow_module_level=True)


def _load(name):
    """bench/<name>.py as a module, without putting bench/ on sys.path."""
    spec = importlib.util.spec_from_file_location(f"pooling_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load("report")

LONG = ("MaxPool 8x64x112x112 float32 kernel_shape=3,3 strides=2,2 pads=1,1,1,1 dilations=2,2 "
        "ceil_mode=1 +Indices NHWC")


def _bench(group, medians):
    return [{"group": group, "name": name, "stats": {"median": median}, "extra_info": {}}
            for name, median in medians.items()]


# Speedups over the fastest peer: LONG 3.0, "C" 2.0, "B" 0.5; "D" has no peer. The pattern and
# zoo groups are not plotted, so openvino (only there) is not a peer of the plot.
BENCHMARKS = (
    _bench("B", {"pooling": 1.0, "pooling 1 thread": 1.2, "onnxruntime": 1.5, "torch": 0.5, "floor": 0.4})
    + _bench(LONG, {"pooling": 1.0, "pooling out=": 0.9, "onnxruntime": 2.7, "floor": 0.45})
    + _bench("D", {"pooling": 1.0, "floor": 0.25})
    + _bench("C", {"pooling": 2.0, "torch": 4.0})
    + _bench("pattern MaxPool k3 s2, 1 ms", {"pooling": 1.0, "openvino": 9.0})
    + _bench("zoo ResNet: MaxPool", {"pooling": 1.0, "openvino": 0.1, "floor": 0.5})
)
ORDER = [LONG, "C", "B", "D"]


@pytest.fixture(scope="module")
def drawn():
    pytest.importorskip("matplotlib")
    fig = report.figure(BENCHMARKS)
    fig.canvas.draw()  # its own Agg canvas: tick labels and extents are final
    yield fig, fig.axes[0]


def test_rows_are_sorted_by_speedup_over_the_fastest_peer():
    rows = report.plot_rows(BENCHMARKS)
    assert [r[0] for r in rows] == ORDER
    case, speedups, floor = rows[0]
    assert speedups == {"onnxruntime": pytest.approx(3.0)} and floor == pytest.approx(0.5)
    assert rows[-1][1] == {}


def test_legend_lists_exactly_the_peers_present(drawn):
    fig, ax = drawn
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["onnxruntime", "torch", report.FLOOR_LABEL]


def test_y_labels_are_the_full_case_names_in_order(drawn):
    fig, ax = drawn
    assert [t.get_text() for t in ax.get_yticklabels()] == ORDER
    assert list(ax.get_yticks()) == list(range(len(ORDER)))


def test_bars_are_centred_on_their_labels_and_run_from_1x(drawn):
    fig, ax = drawn
    rows = {i: [] for i in range(len(ORDER))}
    for bar in ax.patches:
        centre = bar.get_y() + bar.get_height() / 2
        rows[round(centre)].append((centre, bar.get_x() + bar.get_width()))
        assert bar.get_x() == 1.0
    ends = {i: sorted(end for _, end in bars) for i, bars in rows.items()}
    assert ends == {0: [pytest.approx(3.0)], 1: [pytest.approx(2.0)],
                    2: [pytest.approx(0.5), pytest.approx(1.5)], 3: []}
    for tick, bars in rows.items():
        if bars:
            assert sum(c for c, _ in bars) / len(bars) == pytest.approx(tick)
    assert "no peer ran it" in [t.get_text() for t in ax.texts]


def test_speedup_axis_has_plain_tick_labels(drawn):
    fig, ax = drawn
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["0.2x", "0.5x", "1x", "2x"]
    assert all(re.fullmatch(r"\d+(\.\d+)?x", t) for t in labels)
    assert not [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]


def test_nothing_is_clipped(drawn):
    fig, ax = drawn
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    for artist in [*ax.get_yticklabels(), *ax.get_xticklabels(), ax.get_legend(), ax.xaxis.label]:
        box = artist.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, artist


def _fake_pytest_main(code):
    """A pytest.main that writes BENCHMARKS where --benchmark-json= says, and returns code."""
    def main(args, plugins=()):
        path = next(a.split("=", 1)[1] for a in args if a.startswith("--benchmark-json="))
        with open(path, "w") as f:
            json.dump({"benchmarks": BENCHMARKS}, f)
        return code
    return main


@pytest.fixture
def tmpdir_only(tmp_path, monkeypatch):
    """tempfile's folder, empty and private to the test."""
    import tempfile

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_report_run_leaves_no_temporary_folder(tmpdir_only, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(report.pytest, "main", _fake_pytest_main(0))
    png = tmp_path / "plot.png"
    report.main(["--plot", str(png)])
    assert png.stat().st_size > 0
    assert "| B |" in capsys.readouterr().out  # the table came from the fake results
    assert os.listdir(tmpdir_only) == []


def test_failed_report_run_leaves_no_temporary_folder(tmpdir_only, monkeypatch, capsys):
    monkeypatch.setattr(report.pytest, "main", _fake_pytest_main(1))
    with pytest.raises(SystemExit) as exit_info:
        report.main([])
    assert exit_info.value.code == 1
    assert os.listdir(tmpdir_only) == []


# OpenVINO dlopens its libraries with RTLD_DEEPBIND, which AddressSanitizer aborts the process
# on; tools/sanitize.sh preloads libasan, and checks pooling's kernels, not the benchmark's peers.
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="OpenVINO cannot be loaded under AddressSanitizer (RTLD_DEEPBIND)")
def test_openvino_peer_leaves_no_temporary_folder(tmpdir_only):
    pytest.importorskip("onnx")
    pytest.importorskip("openvino")
    cases = _load("cases")
    case = cases.Case("MaxPool", (1, 2, 8, 8), "float32", (("kernel_shape", (2, 2)), ("strides", (2, 2))))
    result = cases._openvino(case)()
    assert cases.to_numpy(case, "openvino", result).tobytes() == cases.expected(case).tobytes()
    assert os.listdir(tmpdir_only) == []
