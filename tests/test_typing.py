"""The public API under type checkers, as a user's script sees it.

mypy --strict (and pyright, where one is installed) accept the README's usage and typical calls of
every public function, with precise result types (an array, not a tuple or Any, by default; a
pair with return_indices=True), and reject wrong calls: each BAD case's last line is an error.
Both check the pooling this test imports, installed or from the source tree.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pooling

pytestmark = pytest.mark.typecheck

GOOD = '''
import io
import sys
from typing import Any, assert_type

import numpy as np
import numpy.typing as npt

import pooling

# README, Usage
x = np.random.default_rng(0).standard_normal((8, 64, 112, 112), dtype=np.float32)
y = pooling.max_pool(x, kernel_shape=3, strides=2, pads=1)             # (8, 64, 56, 56)
y, idx = pooling.max_pool(x, (3, 3), strides=2, pads=1, return_indices=True)
assert (x.reshape(-1)[idx] == y).all()                                  # int64 flat offsets into x
pooling.max_pool(x, (2, 2), dilations=2, ceil_mode=True, n_threads=1)   # exact for any n_threads
pooling.max_pool(x, (3, 3), opset=8)            # only what MaxPool-8 allows (no dilations, ceil_mode)
pooling.max_pool_output_shape((1, 3, 224, 224), (3, 3), auto_pad="SAME_UPPER", strides=2)
pooling.show_config()

# README, Channels-last (NHWC) and fused activation
xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1))                     # (8, 112, 112, 64)
yh, ih = pooling.max_pool(xh, 3, strides=2, pads=1, layout="NHWC", return_indices=True)
back = pooling.max_unpool(yh, ih, 3, strides=2, pads=1, layout="NHWC", output_shape=xh.shape)
pooling.max_pool(xh, 2, layout="NHWC", activation="Clip", activation_params=[0.0, 6.0])  # fused ReLU6

# README, MaxUnpool and Col2Im (the unpooling)
y, idx = pooling.max_pool(x, (3, 3), strides=2, pads=1, ceil_mode=True, return_indices=True)
back = pooling.max_unpool(y, idx, (3, 3), strides=2, pads=1, output_shape=x.shape)
pooling.max_unpool_output_shape(y.shape, (3, 3), strides=2, pads=1)   # (D - 1)*s - (pb + pe) + k

# README, MaxUnpool and Col2Im (the columns; a batch of 8 here)
cols = np.random.default_rng(0).standard_normal((8, 576, 3136), dtype=np.float32)
y = pooling.col2im(cols, (56, 56), (3, 3), pads=1)                        # (8, 64, 56, 56)
pooling.col2im_output_shape((8, 576, 3136), (56, 56), (3, 3), pads=1)     # same checks, no data
pooling.col2im(cols, (56, 56), (3, 3), pads=1, out=y, n_threads=1)        # in place; same bits

# The README's first example: the default result is an array.
y = pooling.max_pool(x, 2)
print(y.shape, y.dtype)
assert_type(pooling.max_pool(x, 2), npt.NDArray[Any])
pair = pooling.max_pool(x, 2, return_indices=True)
assert_type(pair, tuple[npt.NDArray[Any], npt.NDArray[np.int64]])
values, indices = pair
print(values.shape, indices.max())

# Every public function, typical arguments.
flag = len(sys.argv) > 1
either = pooling.max_pool(x, 2, return_indices=flag)
assert_type(either, npt.NDArray[Any] | tuple[npt.NDArray[Any], npt.NDArray[np.int64]])
pooling.max_pool([[[1.0, 2.0, 3.0]]], [2], strides=[1], pads=[0, 1], dilations=1, auto_pad="NOTSET",
                 ceil_mode=1, storage_order=0, layout="NCHW", activation=None, opset=22, n_threads=-1)
pooling.max_pool(x, np.array([2, 2]), strides=np.int64(2), pads=(1, 1, 1, 1), auto_pad="NOTSET",
                 activation="Relu", out=np.empty((8, 64, 57, 57), np.float32))
y2, i2 = pooling.max_pool(x, 2, return_indices=True, out=None, indices_out=np.empty(1, np.int64))
shape: tuple[int, ...] = pooling.max_pool_output_shape(x.shape, 3, strides=2, pads=1, layout="NCHW", opset=12)
unpooled = pooling.max_unpool(values, indices, 2, strides=1, output_shape=np.array(x.shape), opset=22)
assert_type(unpooled, npt.NDArray[Any])
shape = pooling.max_unpool_output_shape((1, 1, 4, 4), 2, strides=2, pads=None, layout="NHWC", opset=None)
image = pooling.col2im(cols, np.array([56, 56]), [3, 3], strides=1, pads=1, dilations=[1, 1], opset=18,
                       n_threads=None, out=None)
assert_type(image, npt.NDArray[Any])
shape = pooling.col2im_output_shape(cols.shape, [56, 56], (3, 3), pads=(1, 1, 1, 1))
yp, ip = pooling.max_pool(x, 3, strides=2, pads=1, return_indices=True, index_format="plane")
back = pooling.max_unpool(yp, ip, 3, strides=2, pads=1, output_shape=x.shape, index_format="plane")
tf_indices = pooling.convert_indices(ip, x.shape, from_format="plane", to_format="tf", layout="NCHW")
assert_type(tf_indices, npt.NDArray[np.int64])
dx = pooling.max_pool_grad(np.ones_like(yp), ip, x.shape, index_format="plane", layout="NCHW",
                           n_threads=1, out=None)
assert_type(dx, npt.NDArray[Any])
threads: int = pooling.max_threads()
openmp: bool = pooling.openmp_enabled()
report = io.StringIO()
pooling.show_config(file=report)
pooling.show_config(file=None)
print(shape, threads, openmp, report.getvalue(), either, y2, i2, image)
'''

PREFIX = '''
import numpy as np
import pooling

x = np.zeros((1, 2, 8, 8), np.float32)
i = np.zeros((1, 2, 4, 4), np.int64)
'''

# Wrong calls, each an error on its last line.
BAD = {
    "layout_lower_case": 'pooling.max_pool(x, 2, layout="nhwc")',
    "auto_pad_unknown": 'pooling.max_pool(x, 2, auto_pad="SAME")',
    "strides_str": 'pooling.max_pool(x, 2, strides="2")',
    "kernel_float": "pooling.max_pool(x, 2.0)",
    "n_threads_float": "pooling.max_pool(x, 2, n_threads=1.5)",
    "opset_float": "pooling.max_pool_output_shape(x.shape, 2, opset=12.0)",
    "activation_lower_case": 'pooling.max_pool(x, 2, layout="NHWC", activation="relu")',
    "shape_of_pair": "pooling.max_pool(x, 2, return_indices=True).shape",
    "indices_out_without_indices": "pooling.max_pool(x, 2, indices_out=i)",
    "indices_out_float": "pooling.max_pool(x, 2, return_indices=True, indices_out=x)",
    "shape_is_a_tuple": "pooling.max_pool_output_shape(x.shape, 2).ndim",
    "unpool_layout": 'pooling.max_unpool(x, i, 2, layout="nchw")',
    "unpool_output_shape_int": "pooling.max_unpool(x, i, 2, output_shape=16)",
    "col2im_image_shape_int": "pooling.col2im(x, 8, (2, 2))",
    "col2im_positional_strides": "pooling.col2im(x, (8, 8), (2, 2), 1)",
    "max_threads_is_int": "name: str = pooling.max_threads()",
    "show_config_file": "pooling.show_config(file=3)",
    "typo": "pooling.max_pol(x, 2)",
    "index_format_unknown": 'pooling.max_pool(x, 2, return_indices=True, index_format="torch")',
    "unpool_index_format_unknown": 'pooling.max_unpool(x, i, 2, index_format="Plane")',
    "convert_positional_formats": 'pooling.convert_indices(i, x.shape, "onnx", "plane")',
    "grad_layout_lower_case": 'pooling.max_pool_grad(x, i, x.shape, layout="nchw")',
}


def _write_cases(folder):
    """GOOD and every BAD case as files in `folder`: {name: (path, line of the expected error)}."""
    cases = {"good": (folder / "good.py", None)}
    cases["good"][0].write_text(textwrap.dedent(GOOD))
    for name, line in BAD.items():
        text = PREFIX + line + "\n"
        path = folder / f"bad_{name}.py"
        path.write_text(text)
        cases[name] = (path, text.count("\n"))
    return cases


def _env(folder):
    """os.environ for a checker run in `folder` that finds the pooling this test imports.

    Both checkers search the interpreter's sys.path (site-packages, .pth files, PYTHONPATH), as a
    plain `import pooling` there does; where that finds another pooling (or none), the folder
    holding this one goes first on PYTHONPATH.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONSTARTUP")}
    ours = Path(pooling.__file__).resolve().parent
    found = subprocess.run([sys.executable, "-c", "import pooling; print(pooling.__file__)"],
                           cwd=folder, env=env, capture_output=True, text=True)
    if found.returncode or Path(found.stdout.strip()).resolve().parent != ours:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ours.parent), env.get("PYTHONPATH")) if p)
    return env


def _errors_by_file(diagnostics, cases):
    """{case name: [(line, message)]} from (path, line, message) triples."""
    names = {path.name: name for name, (path, _) in cases.items()}
    found = {name: [] for name in cases}
    for path, line, message in diagnostics:
        found[names[Path(path).name]].append((line, message))
    return found


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory):
    pytest.importorskip("mypy", reason="mypy is not installed")
    folder = tmp_path_factory.mktemp("mypy")
    cases = _write_cases(folder)
    (folder / "mypy.ini").write_text("[mypy]\n")  # no user or project configuration
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--cache-dir",
         str(folder / ".mypy_cache"), "--show-error-codes", "--no-color-output", "--no-error-summary",
         *sorted(path.name for path, _ in cases.values())],
        cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1) and not run.stderr, run.stdout + run.stderr
    lines = re.findall(r"^(\S+\.py):(\d+): (?:error|note): (.*)$", run.stdout, re.M)
    assert len(lines) == len(run.stdout.splitlines()), run.stdout  # every line parsed
    return cases, _errors_by_file([(p, int(n), m) for p, n, m in lines], cases)


@pytest.fixture(scope="module")
def pyright_errors(tmp_path_factory):
    if shutil.which("pyright"):
        command = ["pyright"]
    elif importlib.util.find_spec("pyright") is not None:
        command = [sys.executable, "-m", "pyright"]
    else:
        pytest.skip("pyright is not installed (pip install 'pyright[nodejs]')")
    folder = tmp_path_factory.mktemp("pyright")
    cases = _write_cases(folder)
    (folder / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    try:
        run = subprocess.run([*command, "--outputjson", "--pythonpath", sys.executable],
                             cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=300)
        report = json.loads(run.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        pytest.skip(f"pyright did not run: {e}")
    assert report["summary"]["filesAnalyzed"] == len(cases), report["summary"]
    diagnostics = [(d["file"], d["range"]["start"]["line"] + 1, d["message"])
                   for d in report["generalDiagnostics"] if d["severity"] == "error"]
    return cases, _errors_by_file(diagnostics, cases)


@pytest.fixture(params=["mypy", "pyright"])
def checker(request):
    return request.getfixturevalue(f"{request.param}_errors")


def test_usage_passes(checker):
    """The README's usage and typical calls of every public function: no error, and each
    assert_type holds (the default result is an array, return_indices=True gives a pair)."""
    cases, errors = checker
    assert errors["good"] == []


# What strict checkers say of any call of an unannotated function: not a rejection of the arguments.
_UNTYPED = re.compile(r"^Call to untyped function|^(Type of|Return type|Argument type)\b[^\n]*\bunknown")


@pytest.mark.parametrize("name", list(BAD))
def test_wrong_calls_are_rejected(checker, name):
    cases, errors = checker
    expected_line = cases[name][1]
    assert [line for line, _ in errors[name] if line != expected_line] == [], errors[name]
    reasons = [message for line, message in errors[name] if line == expected_line]
    assert any(not _UNTYPED.search(m) for m in reasons), f"not rejected: {BAD[name]} ({reasons})"

