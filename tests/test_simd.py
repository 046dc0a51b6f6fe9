"""Run-time SIMD dispatch: every build of the kernels passes the kernel-vs-reference tests."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pooling
from pooling import _dispatch, _maxpool_strategies, _tuning
from pooling._maxpool_strategies import Strategy

from suites import INSTALL_TESTS, KERNEL_TESTS, NATIVE_TESTS, SANITIZED_TESTS, UNSANITIZED_TESTS


OTHER_LEVELS = [lv for lv in _dispatch.available if lv != _dispatch.level]


@pytest.fixture(scope="module")
def other_build_runs(request, tmp_path_factory):
    """The kernel tests under each other build this session selected, started side by side (a
    process each, their output in files) so that they share the machine's cores."""
    here = os.path.dirname(os.path.abspath(__file__))
    # The same pooling as this run, installed or from a source tree.
    package_root = os.path.dirname(os.path.dirname(pooling.__file__))
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    levels = [item.callspec.params["level"] for item in request.session.items
              if getattr(item, "originalname", "") == "test_other_builds_pass_the_kernel_tests"]
    logs = tmp_path_factory.mktemp("other_builds")
    runs = {}
    for level in levels:
        log = open(logs / f"{level}.log", "w+")
        env = dict(os.environ, POOLING_SIMD=level, PYTHONPATH=path)
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
             *[os.path.join(here, f) for f in KERNEL_TESTS]],
            env=env, cwd=here, stdout=log, stderr=subprocess.STDOUT, text=True)
        runs[level] = (process, log)
    yield runs
    for process, log in runs.values():
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.parametrize("level", OTHER_LEVELS)
def test_other_builds_pass_the_kernel_tests(level, other_build_runs):
    """This run covers the build in use; the others (the baseline fallback) run here."""
    process, log = other_build_runs[level]
    returncode = process.wait()
    log.seek(0)
    output = log.read()
    assert returncode == 0, output[-5000:]
    assert " passed" in output


def test_the_lists_of_tests_name_test_files():
    """tests/suites.py's lists (run by tools/check_aarch64.sh, check_portable.sh, check_wheel.sh and
    sanitize.sh) name test files that exist, each once, and the command line prints them; the
    sanitizers see every test that runs the compiled code."""
    here = os.path.dirname(os.path.abspath(__file__))
    for part in (KERNEL_TESTS, NATIVE_TESTS, INSTALL_TESTS, UNSANITIZED_TESTS):
        assert len(set(part)) == len(part)
        for name in part:
            assert os.path.isfile(os.path.join(here, name)), name
        assert "test_simd.py" not in part  # the command line adds it
    assert set(NATIVE_TESTS) <= set(SANITIZED_TESTS) and "test_simd.py" in SANITIZED_TESTS
    printed = subprocess.run([sys.executable, os.path.join(here, "suites.py"), "INSTALL_TESTS"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert printed == ["tests/" + name for name in INSTALL_TESTS + ["test_simd.py"]]


def test_dispatch_choice_and_report():
    assert _dispatch.level in _dispatch.available
    assert _dispatch.available[0] == "baseline"
    line = next(l for l in pooling._config.config_lines() if l.startswith("simd"))
    assert f"in use: {_dispatch.level}" in line
    if _tuning.ACTIVE:  # the kernels taken from another build are named, with the CPUs measured
        assert "measured faster on" in line
        assert all(f"{r.strategy.value} {'with' if r.indices else 'without'} Indices from {r.build}" in line
                   and r.cpus.name in line for r in _tuning.ACTIVE)
    else:
        assert line.endswith(f"in use: {_dispatch.level}")
    if _dispatch.level == "avx2":
        assert _dispatch.core.__name__ == "pooling._core_avx2"
        assert _dispatch.cpu_supports_avx2()
    if any(r.build == "avx512" for r in _tuning.ACTIVE):
        assert "avx512" in _dispatch.available and _dispatch.cpu_supports_avx512()


def test_forced_levels():
    with pytest.raises(ImportError, match="POOLING_SIMD must be one of"):
        _dispatch._choose("avx1024")
    core, level = _dispatch._choose("baseline")
    assert level == "baseline" and core.__name__ == "pooling._core"
    if "avx2" not in _dispatch.available:
        with pytest.raises(ImportError, match="no AVX2 kernels"):
            _dispatch._choose("avx2")
    if "avx512" in _dispatch.available:
        core, level = _dispatch._choose("avx512")
        assert level == "avx512" and core.__name__ == "pooling._core_avx512"
    else:
        with pytest.raises(ImportError, match="no AVX-512 kernels"):
            _dispatch._choose("avx512")


def test_a_cpu_below_the_baseline_is_refused_by_name():
    """Where the baseline kernels target x86-64-v2, a CPU without SSE4.2 or POPCNT gets an
    ImportError before they load (not a SIGILL inside them), and it names the way out."""
    from pooling import _runtime
    assert _runtime.cpu_runs_baseline()  # (this process loaded them)
    with pytest.raises(ImportError, match=r"x86-64-v2 CPU \(SSE4.2 and POPCNT.*POOLING_X86_BASELINE=x86-64"):
        _dispatch._require_baseline(False)
    _dispatch._require_baseline(True)
    simd = _dispatch._baseline.build_info()["simd_baseline"].split()
    if _runtime.BASELINE_X86_V2:
        assert {"sse3", "ssse3", "sse4.1", "sse4.2"} <= set(simd), simd


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


def rules(*specs):
    """BuildRules in force for a test: (strategy, build, W strides, item sizes)."""
    anywhere = _tuning.Cpus("any", "", 0, ())
    return tuple(_tuning.BuildRule(Strategy(name), build, anywhere, strides, sizes, "#test")
                 for name, build, strides, sizes in specs)


ALL_SIZES = (1, 2, 4, 8)


@pytest.mark.skipif(_dispatch.available == ("baseline",), reason="only one build on this machine")
@pytest.mark.parametrize("build", [None, "baseline", "avx512"], ids=["process-build", "baseline-kernels",
                                                                    "avx512-kernels"])
def test_mixed_builds_give_the_same_results(monkeypatch, build, rng):
    """Whichever build a strategy's kernels come from, the results are the twin's."""
    from conftest import assert_same, make_array
    from pooling import reference
    from pooling._maxpool_strategies import launch
    if build == "avx512" and "avx512" not in _dispatch.available:
        pytest.skip("no AVX-512 build for this CPU")
    every = (("planes", 1), ("narrow", 1), ("fused", 2), ("tiles", 2), ("nhwc_blocks", 1), ("nhwc_blocks", 2))
    active = ()
    if build:   # every strategy's rule, and NHWC's with Indices
        active = rules(*((name, build, (stride,), ALL_SIZES) for name, stride in every)) + (
            _tuning.BuildRule(Strategy.NHWC, build, _tuning.Cpus("any", "", 0, ()), (1, 2), ALL_SIZES, "#test",
                              indices=True),)
    monkeypatch.setattr(_tuning, "ACTIVE", active)
    launch.cache_clear()
    try:
        for kind in ("float32", "float64", "uint8", "int8", "float16"):
            for shape, attrs in [((2, 3, 14, 14), dict(kernel_shape=(2, 2), strides=(2, 2))),
                                 ((2, 3, 20, 19), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
                                 ((2, 3, 13, 13), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1))),
                                 ((2, 3, 7, 7), dict(kernel_shape=(2, 2), pads=(0, 0, 1, 1))),
                                 ((2, 3, 15, 13), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
                                 ((2, 3, 15, 13), dict(kernel_shape=(3, 3), strides=(2, 2), return_indices=True)),
                                 ((2, 15, 13, 19), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                                        layout="NHWC")),
                                 ((1, 12, 12, 40), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2), layout="NHWC")),
                                 ((2, 15, 13, 19), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                                        layout="NHWC", return_indices=True))]:
                x = make_array(rng, shape, kind)
                want = reference.max_pool(x, **attrs)
                for nt in (1, 2):
                    got = pooling.max_pool(x, n_threads=nt, **attrs)
                    if attrs.get("return_indices"):
                        assert_same(got[0], want[0])
                        assert (got[1] == want[1]).all()
                    else:
                        assert_same(got, want)
    finally:
        launch.cache_clear()


@pytest.mark.skipif(_dispatch.available == ("baseline",), reason="only one build on this machine")
def test_launches_come_from_the_build_the_rules_name(monkeypatch):
    from pooling import maxpool
    from pooling._maxpool_strategies import launch
    plan = maxpool._plan((1, 8, 14, 14), kernel_shape=(2, 2), strides=(2, 2), pads=None, dilations=None,
                         auto_pad="NOTSET", ceil_mode=False, storage_order=0, return_indices=False,
                         layout="NCHW", activation=None, activation_params=None, opset=None,
                         index_format="onnx")
    avx2 = _dispatch._load_avx2()
    for active, module in [(rules(("tiles", "baseline", (2,), (4,))), _dispatch._baseline), ((), avx2)]:
        monkeypatch.setattr(_tuning, "ACTIVE", active)
        monkeypatch.setattr(_dispatch, "core", avx2)
        launch.cache_clear()
        try:
            assert type(launch(plan, "float32", 1, False, "tiles")) is module.MaxPoolTiles
            # A strategy the rules do not name keeps the process's build.
            assert type(launch(plan, "float32", 1, False, "fused")) is avx2.MaxPool3d
        finally:
            launch.cache_clear()
    if "avx512" not in _dispatch.available:
        return
    wide = _dispatch._load_avx512()
    sppf = maxpool._plan((1, 8, 20, 20), kernel_shape=(5, 5), strides=None, pads=(2, 2, 2, 2), dilations=None,
                         auto_pad="NOTSET", ceil_mode=False, storage_order=0, return_indices=False,
                         layout="NCHW", activation=None, activation_params=None, opset=None,
                         index_format="onnx")
    glob = maxpool._plan((1, 8, 7, 1), kernel_shape=(7, 1), strides=None, pads=None, dilations=None,
                         auto_pad="NOTSET", ceil_mode=False, storage_order=0, return_indices=False,
                         layout="NCHW", activation=None, activation_params=None, opset=None,
                         index_format="onnx")
    monkeypatch.setattr(_tuning, "ACTIVE", rules(("planes", "avx512", (1,), (4,))))
    launch.cache_clear()
    try:
        assert type(launch(sppf, "float32", 1, False, "planes")) is wide.MaxPoolPlanes
        assert type(launch(sppf, "float16", 1, False, "planes")) is avx2.MaxPoolPlanes
        # a whole-plane window (here with W stride 1) is a reduction, kept in the process's build
        from pooling import _maxpool_strategies
        process = _maxpool_strategies._core
        assert type(launch(glob, "float32", 1, False, "planes")) is process.MaxPoolPlanes
        # NARROW: rows its own build's lanes hold stay there; wider ones (up to 16) come from the
        # AVX-512 build where the rules name it, and are not served where they do not
        narrow = {w: maxpool._plan((1, 8, w, w), kernel_shape=(3, 3), strides=None, pads=(1, 1, 1, 1),
                                   dilations=None, auto_pad="NOTSET", ceil_mode=False, storage_order=0,
                                   return_indices=False, layout="NCHW", activation=None,
                                   activation_params=None, opset=None, index_format="onnx")
                  for w in (4, 13, 20, 40)}
        monkeypatch.setattr(_tuning, "ACTIVE", rules(("narrow", "avx512", (1,), (4,))))
        launch.cache_clear()
        for w, plan in narrow.items():
            # the build whose strips hold the rows in the fewest lanes, then strips, then the process's
            strips = {core: -(-w // core.NARROW_LANES) for core in (process, wide) if w <= core.NARROW_WIDTH}
            want = min(strips, key=lambda core: (strips[core] * core.NARROW_LANES, strips[core],
                                                 core is not process))
            assert type(launch(plan, "float32", 1, False, "narrow")) is want.MaxPoolNarrow
        monkeypatch.setattr(_tuning, "ACTIVE", ())
        launch.cache_clear()
        assert _maxpool_strategies.serves(Strategy.NARROW, narrow[40], "float32", False) == (
            process.NARROW_WIDTH >= 40)
        # NHWC_BLOCKS: from the AVX-512 build where the rules name it and the channels fill one of
        # its vectors (16), from the process's build where they do not
        monkeypatch.setattr(_tuning, "ACTIVE", rules(("nhwc_blocks", "avx512", (2,), (4,))))
        launch.cache_clear()
        for channels, want in ((64, wide), (process.NARROW_LANES, process)):
            stem = maxpool._plan((1, 16, 16, channels), kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                 dilations=None, auto_pad="NOTSET", ceil_mode=False, storage_order=0,
                                 return_indices=False, layout="NHWC", activation=None,
                                 activation_params=None, opset=None, index_format="onnx")
            assert type(launch(stem, "float32", 1, False, "nhwc_blocks")) is want.MaxPoolNHWC
    finally:
        launch.cache_clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/task")
@pytest.mark.skipif(_dispatch.available == ("baseline",), reason="only one build on this machine")
def test_both_builds_share_one_thread_pool():
    """Kernels of both builds in one process start one set of pool workers, not one per build
    (each would spin for 2 ms after its calls, competing with the other's for the cores)."""
    code = """if True:
        import os, numpy as np, pooling
        from pooling import _core, _core_avx2, _dispatch
        def tasks():
            return len(os.listdir("/proc/self/task"))
        before = tasks()
        x = np.ones((2, 64, 56, 56), np.float32)
        wide = (_dispatch._load_avx512(),) if "avx512" in _dispatch.available else ()
        for core in (_core, _core_avx2) + wide:
            f = core.max_pool_axis["float"]
            y = np.empty((128, 28, 56), np.float32)
            f(x.reshape(128, 56, 56), None, y, None, 2, 2, 1, 0, 0, 0.0, 0.0, 0, 2)
        print(tasks() - before)
    """
    env = dict(os.environ, OMP_NUM_THREADS="2")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"  # one worker beside the caller, for both builds
