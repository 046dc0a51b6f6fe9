"""Packaging checks that run with the normal suite: the version comes from one place,
show_config() reports the build, the sdist holds the sources and not the generated
files, the license files travel with the package, the metadata has PyPI's short
description, project URLs and classifiers, and the built modules carry no debug
information.

The heavier release check (auditwheel, a virtual environment without a compiler) is
tools/check_wheel.sh. Tests marked `needs_source` read the source tree, so they do
not run when cibuildwheel copies only tests/ next to an installed wheel.
"""
import email
import importlib.metadata
import io
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
from pathlib import Path

import pytest

import pooling
from pooling import _config, _runtime, _version

ROOT = Path(__file__).resolve().parents[1]
needs_source = pytest.mark.skipif(
    not ((ROOT / "setup.py").is_file() and (ROOT / "src" / "_core.pyx").is_file()),
    reason="needs the source tree (these tests were copied next to an installed wheel)",
)

# Build output that must never reach an sdist (or version control).
GENERATED = ("src/_core.c", "src/_runtime.c", "src/pooling/_build_info.py", "src/kernels/bodies.pxi")

# PyPI's page is docs/pypi.md. README.md is the users' page on GitHub (set-up from a clone, the benchmark
# table) and docs/development.md the contributors' (layout, packaging, releases): neither is the description.
PYPI_DESCRIPTION = "docs/pypi.md"
REPOSITORY = "https://github.com/pooling-kernels/pooling-kernels"
URL_LABELS = {"Homepage", "Documentation", "Repository", "Issues", "Changelog"}
REQUIRED_CLASSIFIERS = {
    "Typing :: Typed",
    *(f"Programming Language :: Python :: 3.{minor}" for minor in range(11, 15)),
    "Operating System :: POSIX :: Linux",
    "Operating System :: MacOS",
    "Operating System :: Microsoft :: Windows",
    "Intended Audience :: Science/Research",
}
# A release build's extension modules (2.1-2.5 MB each without debug information with gcc 12, functions
# aligned to 64 bytes, in the twentieth session; 3-4 times that with): the bound catches DWARF, not growth.
MAX_MODULE_BYTES = 3_500_000


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


def _check_core_metadata(text):
    """Checks on a PKG-INFO or METADATA file: URLs, authors, classifiers, PyPI's description."""
    message = email.message_from_string(text)
    urls = dict(entry.split(", ", 1) for entry in message.get_all("Project-URL") or ())
    assert URL_LABELS <= set(urls), urls
    assert all(url.startswith(REPOSITORY) for url in urls.values()), urls
    assert message["Author"] or message["Author-email"]
    classifiers = set(message.get_all("Classifier") or ())
    assert REQUIRED_CLASSIFIERS - classifiers == set()
    # The SPDX License-Expression says it; a License classifier beside it is an error for setuptools.
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert message["Description-Content-Type"].startswith("text/markdown")
    description = message.get_payload()
    assert "pip install pooling-kernels" in description and "import pooling" in description
    # Not the README (set-up from a clone, the benchmark table) nor docs/development.md (layout, releases).
    for heading in ("## Packaging and releases", "## Performance", "## Set-up", "## Layout"):
        assert heading not in description
    assert len(description) < 6000
    if (ROOT / PYPI_DESCRIPTION).is_file():
        assert description.strip() == (ROOT / PYPI_DESCRIPTION).read_text(encoding="utf-8").strip()


def _elf_section_names(path):
    """Section names of an ELF file, or None if `path` is not ELF (a tiny reader: no readelf needed)."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF":
        return None
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        (shoff,) = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
        header = order + "IIQQQQ"
    else:
        (shoff,) = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
        header = order + "IIIIII"
    sections = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
    table_offset, table_size = sections[shstrndx][4:6]
    table = data[table_offset:table_offset + table_size]
    return [table[s[0]:table.index(b"\0", s[0])].decode() for s in sections]


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


def test_installed_metadata_has_urls_classifiers_and_the_short_description():
    dist = _installed_distribution()
    if dist is None:
        pytest.skip("pooling is imported from the source tree, not from an installed distribution")
    _check_core_metadata(dist.read_text("METADATA"))


@needs_source
def test_pyproject_gives_pypi_a_short_page_with_absolute_links():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["readme"] == PYPI_DESCRIPTION
    text = (ROOT / PYPI_DESCRIPTION).read_text(encoding="utf-8")
    # PyPI shows the page away from the repository: relative links would be broken there.
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links and all(link.startswith("https://") for link in links), links
    assert {label for label in project["urls"]} >= URL_LABELS
    # MANIFEST.in puts it in the sdist (the sdist test checks that every docs/*.md is there).
    assert "recursive-include docs *.md" in (ROOT / "MANIFEST.in").read_text()


@needs_source
def test_classifiers_are_known_to_pypi():
    trove = pytest.importorskip("trove_classifiers", reason="needs trove-classifiers (pip install trove-classifiers)")
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    assert [c for c in classifiers if c not in trove.classifiers or c in trove.deprecated_classifiers] == []
    assert REQUIRED_CLASSIFIERS <= set(classifiers)


def test_extension_modules_carry_no_debug_information():
    info = _config.BUILD_INFO
    if "debug_info" not in info:
        pytest.skip("built by a setup.py that did not record debug_info")
    if info["debug_info"]:
        pytest.skip("built with debug information on request (POOLING_DEBUG=1 or -g in CFLAGS)")
    from pooling import _core, _runtime

    modules = [Path(_core.__file__), Path(_runtime.__file__)]
    for name in ("_core_avx2", "_core_avx512"):
        modules += Path(_core.__file__).parent.glob(name + "*" + sysconfig.get_config_var("EXT_SUFFIX"))
    checked = 0
    for module in modules:
        sections = _elf_section_names(module)
        if sections is None:
            continue  # Mach-O keeps DWARF out of the linked module; MSVC adds none unless asked
        assert ".text" in sections, (module.name, sections)
        assert [name for name in sections if name.startswith((".debug_", ".zdebug_"))] == [], module.name
        assert module.stat().st_size < MAX_MODULE_BYTES, (module.name, module.stat().st_size)
        checked += 1
    if not checked:
        pytest.skip("the extension modules are not ELF files")


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
    known = {"sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "fma", "f16c",
             "avx512f", "neon", "sve", "scalar"}
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
    # setup.py's own flags target the platform baseline: any faster ISA is a run-time choice.  On
    # x86-64 that baseline is x86-64-v2 (SSE4.2 and POPCNT, setup.py's _baseline_flags), and then
    # pooling._runtime checks the CPU for it before the kernels load.
    v2 = ["-msse4.2", "-mpopcnt"]
    isa = [flag for flag in info["extra_compile_args"]
           if flag.startswith(("-march", "-mtune", "-mavx", "-msse", "-mpopcnt", "/arch"))]
    assert isa in ([], v2), isa
    assert _runtime.BASELINE_X86_V2 == (isa == v2)
    if isa:
        assert {"ssse3", "sse4.1", "sse4.2"} <= set(fields["simd"].split(";")[0].split())
    openmp_flag = "/openmp" if info["compiler_type"] == "msvc" else "-fopenmp"
    assert (openmp_flag in info["extra_compile_args"]) == pooling.openmp_enabled()


# --- the sdist ----------------------------------------------------------------------


@needs_source
def test_manifest_excludes_the_generated_sources():
    lines = [line.split() for line in (ROOT / "MANIFEST.in").read_text().splitlines()]
    excluded = {name for words in lines if words[:1] == ["exclude"] for name in words[1:]}
    assert set(GENERATED) <= excluded
    includes = [words for words in lines if words[:1] in (["include"], ["recursive-include"], ["graft"])]
    for words in includes:  # (Cython writes its .c files under src/; tools/ holds hand-written C)
        assert words[0] != "graft" and not any(pattern.endswith(".c") and not pattern.startswith("tools/")
                                               for pattern in words[1:]), words


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
        "src/_core_avx2.pyx", "src/_core_avx512.pyx", "src/_runtime.pyx", "src/pooling/_runtime.pyi",
        "tools/check_wheel.sh", "tools/build_libomp_macos.sh", "tools/pool_stress.c", "tools/check_aarch64.sh",
        "tools/loop_probe.c", "tools/loop_census.py", "tools/pool_harness.c", "tools/check_mingw.sh",
        "tools/check_portable.sh",
    }
    expected |= tree_files("src/kernels", "*.pxi") | tree_files("src/kernels", "*.pxi.in")
    expected |= tree_files("include", "*.h") | tree_files("LICENSES", "*.txt")
    expected |= tree_files("tests", "**/*.py") | tree_files("docs", "*.md")
    expected |= tree_files("src/pooling", "*.py")
    expected -= set(GENERATED)
    if (ROOT / "bench").is_dir():
        expected |= tree_files("bench", "**/*.py")
    assert expected - names == set()
    assert not set(GENERATED) & names
    assert not [name for name in names if name.endswith((".so", ".pyd", ".dylib", ".dll", ".pyc"))]
    assert f"\nVersion: {pooling.__version__}\n" in pkg_info
    assert "\nLicense-Expression: MIT\n" in pkg_info
    _check_core_metadata(pkg_info)


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
