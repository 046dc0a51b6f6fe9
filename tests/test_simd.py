"""Run-time SIMD dispatch: every build of the kernels passes the kernel-vs-reference tests."""
import os
import subprocess
import sys

import pytest

import pooling
from pooling import _dispatch

# The tests that compare every kernel path with the pure-numpy reference.
KERNEL_TESTS = ["test_maxpool_values.py", "test_maxpool_nhwc.py", "test_maxunpool.py",
                "test_maxunpool_nhwc.py", "test_col2im.py", "test_threads.py", "test_maxpool_strategies.py"]


@pytest.mark.parametrize("level", [lv for lv in _dispatch.available if lv != _dispatch.level])
def test_other_builds_pass_the_kernel_tests(level):
    """This run covers the build in use; the others (the baseline fallback) run here."""
    here = os.path.dirname(os.path.abspath(__file__))
    # The same pooling as this run, installed or from a source tree.
    package_root = os.path.dirname(os.path.dirname(pooling.__file__))
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, POOLING_SIMD=level, PYTHONPATH=path)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
         *[os.path.join(here, f) for f in KERNEL_TESTS]],
        env=env, cwd=here, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_dispatch_choice_and_report():
    assert _dispatch.level in _dispatch.available
    assert _dispatch.available[0] == "baseline"
    line = next(l for l in pooling._config.config_lines() if l.startswith("simd"))
    assert line.endswith(f"in use: {_dispatch.level}")
    if _dispatch.level == "avx2":
        assert _dispatch.core.__name__ == "pooling._core_avx2"
        assert _dispatch.cpu_supports_avx2()


def test_forced_levels():
    with pytest.raises(ImportError, match="POOLING_SIMD must be one of"):
        _dispatch._choose("avx512")
    core, level = _dispatch._choose("baseline")
    assert level == "baseline" and core.__name__ == "pooling._core"
    if "avx2" not in _dispatch.available:
        with pytest.raises(ImportError, match="no AVX2 kernels"):
            _dispatch._choose("avx2")


@pytest.mark.parametrize("level", ["baseline", "bogus"])
def test_environment_variable(level):
    code = "import pooling._dispatch as d; print(d.level)"
    package_root = os.path.dirname(os.path.dirname(pooling.__file__))
    env = dict(os.environ, POOLING_SIMD=level, PYTHONPATH=package_root)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if level == "bogus":
        assert result.returncode != 0 and "POOLING_SIMD must be one of" in result.stderr
    else:
        assert result.stdout.strip() == "baseline"
