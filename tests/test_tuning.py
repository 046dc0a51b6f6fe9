"""The machine-dependent speed decisions (pooling._tuning): cache sizes read from the machine
(pooling._caches), each threshold driven across its boundary with patched sizes, and the typed
table of per-CPU build rules (every rule applies where it says, and changes no result)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import assert_same, make_array

import pooling
from pooling import _caches, _dispatch, _maxpool_strategies, _runtime, _tuning, maxunpool, reference
from pooling._maxpool_strategies import Strategy, choose_strategy, launch, serves
from pooling.maxpool import _plan as maxpool_plan

S = Strategy
HERE = os.path.dirname(os.path.abspath(__file__))
TUNING_DOC = os.path.join(os.path.dirname(HERE), "docs", "tuning.md")


def plan(x_shape, kernel_shape, strides=None, pads=None, layout="NCHW", return_indices=False):
    return maxpool_plan(x_shape, kernel_shape=kernel_shape, strides=strides, pads=pads, dilations=None,
                        auto_pad="NOTSET", ceil_mode=False, storage_order=0, return_indices=return_indices,
                        layout=layout, activation=None, activation_params=None, opset=None,
                        index_format="onnx")


# Cache sizes: reading them.

@pytest.mark.parametrize("text, size", [("32K", 32 << 10), ("1024", 1024), ("2M", 2 << 20), ("1g", 1 << 30),
                                        ("512KiB", 512 << 10), (" 36608K\n", 36608 << 10), ("", None),
                                        ("12Q", None), ("-4K", None)])
def test_sizes_are_read_as_sysfs_writes_them(text, size):
    assert _caches.parse_size(text) == size


def test_the_environment_sets_any_of_the_sizes():
    assert _caches.from_env("llc=260M") == {"llc": 260 << 20}
    assert _caches.from_env(" l1d=48K, L2=2M ,llc=32M") == {"l1d": 48 << 10, "l2": 2 << 20, "llc": 32 << 20}
    for bad in ("l4=8M", "llc", "llc=0", "llc=big", "l1d=32K;l2=1M"):
        with pytest.raises(ImportError, match="POOLING_CACHES must be entries such as"):
            _caches.from_env(bad)


def _sysfs(root, caches):
    for i, (kind, level, size, cpus) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "type").write_text(kind + "\n")
        (d / "level").write_text(f"{level}\n")
        (d / "size").write_text(size + "\n")
        (d / "shared_cpu_list").write_text(cpus + "\n")
    return str(root)


def test_sysfs_gives_the_data_caches_and_the_last_level(tmp_path):
    root = _sysfs(tmp_path / "zen3", [("Data", 1, "32K", "0"), ("Instruction", 1, "32K", "0"),
                                      ("Unified", 2, "512K", "0"), ("Unified", 3, "32768K", "0-7,16-23")])
    assert _caches.from_sysfs(root) == ({"l1d": 32 << 10, "l2": 512 << 10, "llc": 32 << 20}, 16)
    # No level 3 (many ARM cores report none): the level-2 cache is the last.
    root = _sysfs(tmp_path / "arm", [("Data", 1, "64K", "0"), ("Unified", 2, "1024K", "0-3")])
    assert _caches.from_sysfs(root) == ({"l1d": 64 << 10, "l2": 1 << 20, "llc": 1 << 20}, 4)
    assert _caches.from_sysfs(str(tmp_path / "absent")) == ({}, 0)


def test_each_size_comes_from_the_first_source_that_has_it():
    one = ("one", lambda: ({"l1d": 48 << 10}, 0))
    two = ("two", lambda: ({"l1d": 1, "l2": 2 << 20, "llc": 96 << 20}, 12))
    never = ("never", lambda: pytest.fail("read after every size was known"))
    c = _caches.detect("", (one, two, never))
    assert c == _caches.Caches(48 << 10, 2 << 20, 96 << 20, 12, "one, two")
    c = _caches.detect("llc=260M", (one, two))
    assert (c.l1d, c.l2, c.llc, c.source) == (48 << 10, 2 << 20, 260 << 20, "POOLING_CACHES (llc), one, two")
    # Nothing answers: the defaults, and the line says so.
    c = _caches.detect("", (("none", lambda: ({}, 0)),))
    assert c[:3] == _caches.DEFAULT[:3] and c.source == "default (l1d, l2, llc)"
    # A level 2 larger than the last level is read as the last level.
    assert _caches.detect("l2=8M,llc=4M,l1d=32K", ()).l2 == 4 << 20


def test_this_machine_reports_its_caches():
    c = _caches.detect(None)
    assert 0 < c.l1d <= c.l2 <= c.llc and c.source
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache/index0"):
        assert c.source.startswith("sysfs")
    found = _runtime.cpuid_caches()
    if found is not None:  # x86: CPUID describes at least the level-1 data cache
        assert found[0][0] > 0 and found[1][0] >= 1
    line = next(l for l in pooling._config.config_lines() if l.startswith("caches"))
    assert line.endswith(_caches.describe()) and "L1d" in line and "last level" in line


def _import_with(env_value, code):
    package_root = os.path.dirname(os.path.dirname(pooling.__file__))
    env = dict(os.environ, POOLING_CACHES=env_value, PYTHONPATH=package_root)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_the_environment_variable_is_read_at_import():
    result = _import_with("llc=260M", "import pooling; pooling.show_config()")
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("caches"))
    assert "last level 260 MiB" in line and "(POOLING_CACHES (llc)" in line
    result = _import_with("llc=lots", "import pooling")
    assert result.returncode != 0 and "POOLING_CACHES must be entries such as" in result.stderr


# Thresholds, each on both sides of its boundary.

def test_maxunpool_streams_where_the_call_passes_half_the_last_level_cache(caches):
    def stream(n, hw=112):
        return maxunpool._plan((n, 64, hw, hw), kernel_shape=(2, 2), strides=(2, 2), pads=None,
                               output_shape=None, layout="NCHW", opset=None).windows[-1]
    touched = 64 * 112 * 112 * 12 + 64 * 224 * 224 * 4      # x, int64 Indices, result: 22.5 MB
    caches(llc=2 * touched)
    assert stream(1) == 0
    caches(llc=2 * touched - 1)
    assert stream(1) == 1
    caches(llc=32 << 20)              # the 32 MiB of the Zen 3 and Zen 5 VMs: from 16 MiB of traffic
    assert (stream(1, 56), stream(1, 80), stream(1), stream(2)) == (0, 0, 1, 1)
    caches(llc=260 << 20)             # the Xeon VM's 260 MiB: batches 2 and 4 (90 MB) do not
    assert (stream(2), stream(4), stream(16)) == (0, 0, 1)


def test_maxunpool_gives_the_same_results_streamed_or_not(caches, rng):
    x = make_array(rng, (2, 3, 16, 32), "float32")
    y, idx = reference.max_pool(np.repeat(np.repeat(x, 2, axis=2), 2, axis=3), kernel_shape=(2, 2),
                                strides=(2, 2), return_indices=True)
    results = []
    for llc in (1 << 40, 1):
        caches(llc=llc)
        results.append([pooling.max_unpool(y, idx, kernel_shape=(2, 2), strides=(2, 2), n_threads=nt)
                        for nt in (1, 2)])
    want = reference.max_unpool(y, idx, kernel_shape=(2, 2), strides=(2, 2))
    for got in results[0] + results[1]:
        assert_same(got, want)


def test_prefetching_starts_at_a_fraction_of_the_last_level_cache(caches):
    caches(llc=32 << 20)
    assert not _tuning.prefetch_rows((12 << 20) - 1) and _tuning.prefetch_rows(12 << 20)
    assert not _tuning.prefetch_nhwc((14 << 20) - 1, 2) and _tuning.prefetch_nhwc(14 << 20, 2)
    caches(llc=256 << 20)             # eight times the cache: eight times the input
    assert not _tuning.prefetch_rows((96 << 20) - 1) and _tuning.prefetch_rows(96 << 20)
    assert not _tuning.prefetch_nhwc((56 << 20) - 1, 1) and _tuning.prefetch_nhwc(56 << 20, 1)
    stem = plan((16, 64, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1))    # 51 MB
    assert launch(stem, "float32", 1, False, S.ROWS_FIRST).prefetch is False
    caches(llc=32 << 20)
    assert launch(stem, "float32", 1, False, S.ROWS_FIRST).prefetch is True


def test_planes_is_chosen_while_its_scratch_fits_one_cores_l2(caches):
    sppf = plan((1, 256, 56, 56), (5, 5), None, (2, 2, 2, 2))        # float16 rows past NARROW's three vectors
    scratch = _maxpool_strategies._planes_scratch(sppf, "float16")
    caches(l2=scratch)
    assert choose_strategy(sppf, "float16", 2, False) is S.PLANES
    caches(l2=scratch - 1)
    assert choose_strategy(sppf, "float16", 2, False) is S.FUSED
    assert serves(S.PLANES, sppf, "float16", False)   # what PLANES can serve does not move


def test_rows_first_is_chosen_for_rows_within_an_eighth_of_l1d(caches):
    wide = plan((1, 2, 6, 6000), (3, 3), None, (1, 1, 1, 1))
    caches(l1d=48 << 10)              # 6144 values
    assert choose_strategy(wide, "float32", 1, False) is S.ROWS_FIRST
    caches(l1d=32 << 10)              # 4096
    assert choose_strategy(wide, "float32", 1, False) is not S.ROWS_FIRST
    assert serves(S.ROWS_FIRST, wide, "float32", False)


def test_row_chunks_are_a_quarter_of_l1d(caches):
    pool3 = plan((8, 256, 56, 56), (2, 2), (2, 2))
    caches(l1d=32 << 10)
    assert _maxpool_strategies._tiles_rows(pool3, "float32") == 18     # 8 KB of input rows per batch
    caches(l1d=64 << 10)
    assert _maxpool_strategies._tiles_rows(pool3, "float32") == 36


def test_even_split_while_each_threads_part_fits_half_its_l2(caches):
    caches(l2=1 << 20)
    assert _tuning.even_split(1 << 20, 2) and not _tuning.even_split((1 << 20) + 1, 2)
    assert _tuning.even_split(512 << 10, 1) and not _tuning.even_split((512 << 10) + 1, 1)
    caches(l2=2 << 20)
    assert _tuning.even_split(2 << 20, 2)


@pytest.mark.parametrize("l1d, l2", [(32 << 10, 512 << 10), (1 << 10, 2 << 10), (1 << 20, 1 << 30)])
def test_results_do_not_depend_on_the_cache_sizes(caches, l1d, l2, rng):
    """Every cache-derived choice (chunks, work items, strategies, prefetching) leaves the results
    bit for bit the twin's: MaxPool through its chosen strategies, and Col2Im's work items."""
    caches(l1d=l1d, l2=l2, llc=max(l2, 1 << 12))
    for shape, attrs in [((2, 8, 36, 36), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
                         ((2, 8, 20, 20), dict(kernel_shape=(5, 5), pads=(2, 2, 2, 2))),
                         ((2, 4, 8, 16, 16), dict(kernel_shape=(2, 2, 2), strides=(2, 2, 2))),
                         ((3, 4, 30, 60), dict(kernel_shape=(2, 2), strides=(2, 2))),
                         ((2, 18, 20, 32), dict(kernel_shape=(3, 3), pads=(1, 1, 1, 1), layout="NHWC"))]:
        for kind in ("float32", "float16", "uint8"):
            x = make_array(rng, shape, kind)
            want = reference.max_pool(x, **attrs)
            for nt in (1, 2):
                assert_same(pooling.max_pool(x, n_threads=nt, **attrs), want)
    cols = make_array(rng, (2, 192 * 9, 14 * 14), "float32", special=False)
    want = reference.col2im(cols, (28, 28), (3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    for nt in (1, 2):
        got = pooling.col2im(cols, (28, 28), (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), n_threads=nt)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


# The typed table of per-CPU build rules.

def _anchors(path):
    """The anchors of a markdown file's headings, as GitHub makes them."""
    with open(path, encoding="utf-8") as f:
        headings = [line.lstrip("#").strip() for line in f if line.startswith("#")]
    return {"#" + re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_rule_is_typed_and_names_its_evidence():
    anchors = _anchors(TUNING_DOC) if os.path.exists(TUNING_DOC) else None
    for rule in _tuning.RULES:
        assert isinstance(rule.strategy, Strategy) and rule.build in ("baseline", "avx512")
        assert set(rule.itemsizes) <= {1, 2, 4, 8} and set(rule.w_strides) and rule.least_llc >= 0
        # A named range of models, never a whole vendor family.
        models = set().union(*map(set, rule.cpus.models))
        assert models and not models >= set(range(256)), rule
        if anchors is not None:   # (a test run from an installed wheel's tests alone has no docs/)
            assert rule.evidence in anchors, f"{rule.evidence} is not a heading of docs/tuning.md"


def test_every_setting_is_typed_and_names_its_evidence():
    anchors = _anchors(TUNING_DOC) if os.path.exists(TUNING_DOC) else None
    for rule in _tuning.SETTINGS:
        # the name of a setting function of _tuning, which reads the table
        assert callable(getattr(_tuning, rule.setting)) and isinstance(rule.value, bool)
        models = set().union(*map(set, rule.cpus.models))
        assert models and not models >= set(range(256)), rule
        cpu = (rule.cpus.vendor, rule.cpus.family, min(models))
        assert rule.levels and set(rule.levels) <= {"baseline", "avx2", "avx512"}
        assert all(getattr(_tuning, rule.setting)(cpu, level) == rule.value for level in rule.levels)
        if anchors is not None:
            assert rule.evidence in anchors, f"{rule.evidence} is not a heading of docs/tuning.md"


@pytest.mark.parametrize("cpu, expected", [
    (("AuthenticAMD", 0x19, 0x01), set()),       # Zen 3 EPYC: measured, AVX2 as fast or faster
    (("AuthenticAMD", 0x19, 0x11), {(S.NHWC, "avx512")}),   # Zen 4 EPYC: measured
    (("AuthenticAMD", 0x19, 0x61), set()),       # Zen 4 desktop: not measured
    (("AuthenticAMD", 0x17, 0x31), set()),       # Zen 2: not measured
    (("AuthenticAMD", 0x1A, 0x02), {(S.FUSED, "baseline"), (S.PLANES, "avx512"),
                                    (S.NARROW, "avx512"), (S.NHWC_BLOCKS, "avx512")}),  # Zen 5 EPYC: measured
    (("AuthenticAMD", 0x1A, 0x44), set()),       # Zen 5 desktop: not measured
    (("GenuineIntel", 6, 0xCF), {(S.NHWC, "avx512"), (S.NARROW, "avx512")}),   # Emerald Rapids: measured
    (("GenuineIntel", 6, 0x8F), set()),          # Sapphire Rapids: not measured
    (("GenuineIntel", 6, 0xA7), {(S.NHWC, "avx512"), (S.NARROW, "avx512")}),   # the Xeon 0xA7 VM: measured
    (("", 0, 0), set()),
])
def test_rules_in_force_by_cpu(cpu, expected):
    got = _tuning.active_rules(cpu, "avx2", "auto", ("baseline", "avx2", "avx512"))
    assert {(r.strategy, r.build) for r in got} == expected
    # The AVX-512 rules need that build; a forced POOLING_SIMD or another build in use: none.
    assert all(r.build == "baseline" for r in _tuning.active_rules(cpu, "avx2", "auto", ("baseline", "avx2")))
    assert _tuning.active_rules(cpu, "avx2", "avx2", ("baseline", "avx2", "avx512")) == ()
    assert _tuning.active_rules(cpu, "avx512", "auto", ("baseline", "avx2", "avx512")) == ()


# A call each rule's strategy serves, for a W stride: (shape, kernel, strides, pads, layout).
EXAMPLES = {
    (S.FUSED, 2): ((1, 4, 15, 13), (3, 3), (2, 2), (1, 1, 1, 1), "NCHW"),
    (S.TILES, 2): ((1, 4, 8, 16), (2, 2), (2, 2), None, "NCHW"),
    (S.PLANES, 1): ((1, 8, 20, 20), (5, 5), None, (2, 2, 2, 2), "NCHW"),
    (S.NARROW, 1): ((1, 8, 13, 13), (3, 3), None, (1, 1, 1, 1), "NCHW"),
    (S.NHWC_BLOCKS, 1): ((1, 16, 16, 64), (3, 3), None, (1, 1, 1, 1), "NHWC"),
    (S.NHWC_BLOCKS, 2): ((1, 16, 16, 64), (3, 3), (2, 2), (1, 1, 1, 1), "NHWC"),
    (S.NHWC, 1): ((1, 16, 16, 64), (3, 3), None, (1, 1, 1, 1), "NHWC"),
    (S.NHWC, 2): ((1, 16, 16, 64), (3, 3), (2, 2), (1, 1, 1, 1), "NHWC"),
}
CLASSES = {S.FUSED: "MaxPool3d", S.TILES: "MaxPoolTiles", S.PLANES: "MaxPoolPlanes",
           S.NARROW: "MaxPoolNarrow", S.NHWC_BLOCKS: "MaxPoolNHWC", S.NHWC: "MaxPoolNHWC"}
KIND_OF_SIZE = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


@pytest.mark.parametrize("rule", _tuning.RULES, ids=lambda r: f"{r.cpus.name}-{r.strategy.value}-{r.build}")
def test_every_rule_applies_where_it_says_and_changes_no_result(monkeypatch, caches, rule, rng):
    """The strategy's builder consults the table: on a call the rule covers it takes the rule's
    build (no rule can silently never apply), with Indices where the rule is for calls without
    them (and without where it is for calls with them) or below the size bound the process's;
    and that build's results are the twin's."""
    build = _dispatch.load(rule.build) if rule.build in _dispatch.available else None
    if build is None:
        pytest.skip(f"the {rule.build} build cannot run on this CPU")
    monkeypatch.setattr(_tuning, "ACTIVE", (rule,))
    caches(llc=1)                     # every size bound met
    for stride in rule.w_strides:
        shape, kernel, strides, pads, layout = EXAMPLES[rule.strategy, stride]
        for size in rule.itemsizes:
            kind = KIND_OF_SIZE[size]
            p = plan(shape, kernel, strides, pads, layout, rule.indices)
            assert serves(rule.strategy, p, kind, rule.indices)
            assert type(launch(p, kind, 1, rule.indices, rule.strategy)) is getattr(build, CLASSES[rule.strategy])
            x = make_array(rng, shape, kind)
            attrs = dict(kernel_shape=kernel, strides=strides, pads=pads, layout=layout,
                         return_indices=rule.indices)
            want = reference.max_pool(x, **attrs)
            for nt in (1, 2):
                got = pooling.max_pool(x, n_threads=nt, _strategy=rule.strategy.value, **attrs)
                if rule.indices:
                    assert_same(got[0], want[0])
                    np.testing.assert_array_equal(got[1], want[1])
                else:
                    assert_same(got, want)
            assert _tuning.kernels_for(rule.strategy, stride, size, with_indices=not rule.indices) is _dispatch.core
            if rule.least_llc:
                caches(llc=1 << 40)
                assert _tuning.kernels_for(rule.strategy, stride, size, input_bytes=1 << 30) is _dispatch.core
                caches(llc=1)


@pytest.mark.parametrize("kind", ["float32", "int32", "uint32", "float64"])
def test_nhwc_with_indices_takes_the_rule_build_only_where_its_blocks_are_fewer(monkeypatch, kind, rng):
    """NHWC with Indices takes a rule's build only where that build's register loops hold the
    channels in fewer blocks of vectors per pixel than the process's (the AVX-512 build's float32
    lanes are twice AVX2's; its 4-byte integer lanes are AVX2's), and its results are the twin's."""
    if "avx512" not in _dispatch.available or _dispatch.core is _dispatch.load("avx512"):
        pytest.skip("no AVX-512 build beside the process's")
    avx512 = _dispatch.load("avx512")
    anywhere = _tuning.Cpus("any", "", 0, ())
    rule = _tuning.BuildRule(S.NHWC, "avx512", anywhere, (1, 2), (4, 8), "#test", indices=True)
    monkeypatch.setattr(_tuning, "ACTIVE", (rule,))
    blocks = _maxpool_strategies._indices_blocks
    launch.cache_clear()
    try:
        for c in (7, 8, 16, 24, 32, 48, 64, 72, 288):
            p = plan((2, 9, 11, c), (3, 3), (2, 2), (1, 1, 1, 1), "NHWC", True)
            fewer = blocks(avx512, kind, c) < blocks(_dispatch.core, kind, c)
            build = avx512 if fewer else _dispatch.core
            assert type(launch(p, kind, 1, True, S.NHWC)) is build.MaxPoolNHWC, c
            if kind == "float32" and _dispatch.core.NARROW_LANES == 8:   # the AVX2 build's 8 lanes
                assert fewer == (c in (16, 24, 64, 72, 288)), c
            elif kind == "float64" or (kind != "float32"
                                       and _dispatch.core.NHWC_LANES_I32 == avx512.NHWC_LANES_I32):
                assert not fewer, c
            x = make_array(rng, (2, 9, 11, c), kind)
            attrs = dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), layout="NHWC", return_indices=True)
            want, want_idx = reference.max_pool(x, **attrs)
            for nt in (1, 2):
                got, idx = pooling.max_pool(x, n_threads=nt, **attrs)
                assert_same(got, want)
                np.testing.assert_array_equal(idx, want_idx)
    finally:
        launch.cache_clear()


def test_tiles_asks_for_its_build_with_the_input_size(monkeypatch):
    """TILES names the call's input bytes, so a size rule decides by the array it runs on."""
    asked = []
    real = _tuning.kernels_for
    monkeypatch.setattr(_tuning, "kernels_for", lambda *a, **k: asked.append((a, k)) or real(*a, **k))
    launch.cache_clear()
    try:
        pooling.max_pool(np.zeros((3, 4, 8, 16), np.float32), [2, 2], strides=[2, 2], _strategy="tiles")
    finally:
        launch.cache_clear()
    assert ((S.TILES, 2, 4), {"input_bytes": 3 * 4 * 8 * 16 * 4}) in asked


def test_a_size_bound_in_last_level_caches_splits_calls_at_its_boundary(monkeypatch, caches, rng):
    """A rule with `least_llc` (no rule in the table has one today; the Zen 5 TILES rule had) takes
    its build from that many LLCs of input, the process's build below, and the results agree."""
    if "baseline" not in _dispatch.available or _dispatch.core is _dispatch.load("baseline"):
        pytest.skip("the process already runs the baseline build")
    rule = _tuning.BuildRule(S.TILES, "baseline", _tuning.ZEN5, (2,), (4,), "#per-cpu-build-rules", least_llc=2.0)
    monkeypatch.setattr(_tuning, "ACTIVE", (rule,))
    x = make_array(rng, (3, 4, 8, 16), "float32")
    want = reference.max_pool(x, [2, 2], strides=[2, 2])
    for llc, build in ((x.nbytes // 2, _dispatch.load("baseline")), (x.nbytes // 2 + 1, _dispatch.core)):
        caches(llc=llc)                   # input = 2 LLCs exactly, then just under
        assert _tuning.kernels_for(S.TILES, 2, 4, input_bytes=x.nbytes) is build
        p = plan(x.shape, (2, 2), (2, 2), None, "NCHW")
        assert type(launch(p, "float32", 1, False, S.TILES)) is getattr(build, CLASSES[S.TILES])
        assert_same(pooling.max_pool(x, [2, 2], strides=[2, 2], _strategy="tiles"), want)


def test_every_source_answers_or_stays_silent_on_any_platform(monkeypatch):
    """A reader whose system lacks it (no sysfs, no sysctl, no os.sysconf on Windows) gives nothing,
    and detection falls through to the next source instead of failing the import."""
    monkeypatch.delattr(os, "sysconf", raising=False)
    assert _caches.from_sysconf() == ({}, 0)
    monkeypatch.setattr(sys, "platform", "win32")
    assert _caches.from_sysctl() == ({}, 0)
    c = _caches.detect("", (("sysfs", lambda: _caches.from_sysfs("/nonexistent")), ("sysctl", _caches.from_sysctl),
                            ("sysconf", _caches.from_sysconf)))
    assert c[:3] == _caches.DEFAULT[:3]
