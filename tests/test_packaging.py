"""Packaging checks that run with the normal suite: the version comes from one place,
show_config() reports the build, the sdist holds the sources and not the generated
files, and the license files travel with the package.

The heavier release check (auditwheel, a virtual environment without a compiler) is
tools/check_wheel.sh. Tests marked `needs_source` read the source tree, so they do
not run when cibuildwheel copies only tests/ next to an installed wheel.
"""
import importlib.metadata
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
from pathlib import Path

import pytest

import pooling
from pooling import _config, _version

ROOT = Path(__file__).resolve().parents[1]
needs_source = pytest.mark.skipif(
    not ((ROOT / "setup.py").is_file() and (ROOT / "src" / "_core.pyx").is_file()),
    reason="needs the source tree (these tests were copied next to an installed wheel)",
)

# Build output that must never reach an sdist (or version control).
GENERATED = ("src/_core.c", "src/_runtime.c", "src/pooling/_build_info.py")


def _installed_distribution():
    """The installed distribution that `pooling` was imported from, or None (imported from src/)."""
    try:
        dist = importlib.metadata.distribution("pooling-kernels")
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.read_text("RECORD") is None:  # an egg-info that a build left in src/
        return None
    located = Path(dist.locate_file("pooling/__init__.py")).resolve()
    return dist if located == Path(pooling.__file__).resolve() else None


def _config_fields():
    """show_config()'s output as {label: value}; labels fill the first 16 columns."""
    out = io.StringIO()
    pooling.show_config(file=out)
    lines = out.getvalue().splitlines()
    assert all(len(line) > 16 and line[15] == " " for line in lines), lines
    return {line[:16].strip(): line[16:] for line in lines}


def _version_in(path):
    found = re.findall(r'^__version__ = "([^"]+)"$', path.read_text(), re.M)
    assert len(found) == 1, f"{path} must assign __version__ exactly once"
    return found[0]


# --- one version ------------------------------------------------------------------


def test_version_comes_from_version_py():
    assert pooling.__version__ == _version.__version__
    assert _version_in(Path(_version.__file__)) == pooling.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", pooling.__version__)


def test_installed_metadata_has_the_version_and_the_license_files():
    dist = _installed_distribution()
    if dist is None:
        pytest.skip("pooling is imported from the source tree, not from an installed distribution")
    assert dist.version == pooling.__version__
    assert dist.metadata["License-Expression"] == "MIT"
    shipped = {Path(str(f)).name for f in dist.files or ()}
    assert {"LICENSE", "THIRD_PARTY_NOTICES.md", "GPL-3.0.txt", "GCC-exception-3.1.txt"} <= shipped


@needs_source
def test_the_source_tree_states_the_version_only_in_version_py():
    assert _version_in(ROOT / "src" / "pooling" / "_version.py") == pooling.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pooling._version.__version__"}
    others = [
        path.name
        for path in [ROOT / "setup.py", *(ROOT / "src" / "pooling").glob("*.py")]
        if path.name != "_version.py" and re.search(r"^\s*__version__\s*=", path.read_text(), re.M)
    ]
    assert others == []


@needs_source
def test_changelog_has_a_section_for_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(pooling.__version__)}\]", changelog, re.M)


# --- show_config ------------------------------------------------------------------


def test_show_config_reports_compiler_openmp_and_simd():
    fields = _config_fields()
    assert fields["pooling-kernels"] == pooling.__version__
    assert re.match(r"(gcc|clang|msvc) \S", fields["compiler"]), fields["compiler"]
    assert fields["openmp"] == ("yes" if pooling.openmp_enabled() else "no (serial build)")
    assert int(fields["max threads"]) == pooling.max_threads() >= 1

    simd = fields["simd"]
    assert simd.startswith("baseline ")
    baseline = simd.removeprefix("baseline ").split(";")[0].split()
    known = {"sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "fma", "avx512f",
             "neon", "sve", "scalar"}
    assert baseline and set(baseline) <= known, simd
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        assert baseline[:2] == ["sse", "sse2"]
    elif machine in ("aarch64", "arm64"):
        assert baseline[0] == "neon"


def test_show_config_names_the_openmp_runtime_in_use():
    runtime = _config_fields()["openmp runtime"]
    if not pooling.openmp_enabled():
        assert runtime == "none (serial build)"
    elif os.name == "posix":
        # dladdr found the library that provides omp_get_max_threads to pooling._core.
        assert Path(runtime).is_file(), runtime
        assert re.match(r"lib(g|i)?omp", Path(runtime).name), runtime
    else:
        assert runtime == "not located on this platform"


def test_show_config_reports_the_recorded_compile_flags():
    fields = _config_fields()
    info = _config.BUILD_INFO
    assert info, "setup.py did not write pooling/_build_info.py"
    assert fields["cython"] == info["cython"]
    flags = fields["c flags"].split()
    assert flags[-len(info["extra_compile_args"]):] == info["extra_compile_args"]
    # setup.py's own flags target the platform baseline: any faster ISA is a run-time choice.
    for flag in info["extra_compile_args"]:
        assert not flag.startswith(("-march", "-mtune", "-mavx", "-msse", "/arch")), flag
    openmp_flag = "/openmp" if info["compiler_type"] == "msvc" else "-fopenmp"
    assert (openmp_flag in info["extra_compile_args"]) == pooling.openmp_enabled()


# --- the sdist ----------------------------------------------------------------------


@needs_source
def test_manifest_excludes_the_generated_sources():
    lines = [line.split() for line in (ROOT / "MANIFEST.in").read_text().splitlines()]
    excluded = {name for words in lines if words[:1] == ["exclude"] for name in words[1:]}
    assert set(GENERATED) <= excluded
    includes = [words for words in lines if words[:1] in (["include"], ["recursive-include"], ["graft"])]
    for words in includes:
        assert words[0] != "graft" and not any(pattern.endswith(".c") for pattern in words[1:]), words


@needs_source
def test_sdist_holds_the_sources_tests_and_notices_and_no_build_output(tmp_path):
    pytest.importorskip("build", reason="needs the `build` package (pip install build)")
    # Build from a copy with build output planted in it, so the test does not depend
    # on what earlier builds left in the source tree.
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "wheelhouse", "*.egg-info",
                                      "__pycache__", ".pytest_cache", ".hypothesis", ".benchmarks"),
    )
    # (Cython only overwrites a .c file whose first line says Cython generated it.)
    for name in (*GENERATED, "src/pooling/_core.cpython-311-x86_64-linux-gnu.so"):
        (tree / name).write_text("/* Generated by Cython 3.1.0 */\n")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path / "dist"), str(tree)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    assert sdist.name == f"pooling_kernels-{pooling.__version__}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = {member.name.split("/", 1)[1] for member in tar.getmembers() if member.isfile()}
        pkg_info = tar.extractfile(f"pooling_kernels-{pooling.__version__}/PKG-INFO").read().decode()

    def tree_files(folder, pattern):
        return {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob(pattern) if p.is_file()}

    expected = {
        "PKG-INFO", "setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md",
        "LICENSE", "THIRD_PARTY_NOTICES.md", "src/_core.pyx", "src/pooling/py.typed", "src/pooling/_core.pyi",
        "src/_core_avx2.pyx", "src/_runtime.pyx", "src/pooling/_runtime.pyi",
        "tools/check_wheel.sh", "tools/build_libomp_macos.sh",
    }
    expected |= tree_files("src/kernels", "*.pxi") | tree_files("include", "*.h") | tree_files("LICENSES", "*.txt")
    expected |= tree_files("tests", "**/*.py") | tree_files("docs", "*.md")
    expected |= tree_files("src/pooling", "*.py") - set(GENERATED)
    if (ROOT / "bench").is_dir():
        expected |= tree_files("bench", "**/*.py")
    assert expected - names == set()
    assert not set(GENERATED) & names
    assert not [name for name in names if name.endswith((".so", ".pyd", ".dylib", ".dll", ".pyc"))]
    assert f"\nVersion: {pooling.__version__}\n" in pkg_info
    assert "\nLicense-Expression: MIT\n" in pkg_info


# --- free-threaded CPython -------------------------------------------------------


@pytest.mark.skipif(not sysconfig.get_config_var("Py_GIL_DISABLED"), reason="needs a free-threaded CPython")
def test_importing_pooling_keeps_the_gil_disabled():
    # Without PYTHON_GIL=0 an extension not declared free-threading compatible turns
    # the GIL back on at import, with a RuntimeWarning (made an error here).
    env = {key: value for key, value in os.environ.items() if key != "PYTHON_GIL"}
    code = "import sys, pooling; pooling.max_pool([[[1.0, 2.0]]], 2); sys.exit(int(sys._is_gil_enabled()))"
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
