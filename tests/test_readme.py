"""Every ```python block of README.md, docs/pypi.md (PyPI's page), docs/torch.md and the framework pages
(docs/frameworks/) runs as written.

Each block runs on its own, in a fresh namespace, as a reader who copies one block runs it: so every block
imports and defines what it uses. A block that imports an optional package (onnx, onnxruntime, torch; `pooling.onnx`
needs onnx) is skipped when that package is missing. Other fenced blocks (bash, text) are not run.
"""
import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORK_PAGES = [f"docs/frameworks/{name}.md" for name in ("onnx", "pytorch", "tensorflow", "numpy")]
DOCUMENTS = ["README.md", "docs/pypi.md", "docs/torch.md"] + FRAMEWORK_PAGES

# Imports a block may make that the test extra does not guarantee, and the package each needs.
OPTIONAL = {"onnx": "onnx", "onnxruntime": "onnxruntime", "torch": "torch", "pooling.onnx": "onnx", "dask": "dask",
            "pooling.dask": "dask", "pooling.torch": "torch", "tensorflow": "tensorflow"}

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _python_blocks():
    """(document, first line, source) of every ```python block in DOCUMENTS."""
    blocks = []
    for name in DOCUMENTS:
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) == "python":
                line = text.count("\n", 0, match.start(2)) + 1
                blocks.append((name, line, match.group(2)))
    return blocks


def _imported_modules(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _needed_optional_packages(tree):
    needed = set()
    for module in _imported_modules(tree):
        for prefix, package in OPTIONAL.items():
            if module == prefix or module.startswith(prefix + "."):
                needed.add(package)
    return sorted(needed)


BLOCKS = _python_blocks()

needs_readme = pytest.mark.skipif(
    not (ROOT / "README.md").is_file(),
    reason="needs the source tree (these tests were copied next to an installed wheel)",
)


@needs_readme
def test_the_documents_have_python_blocks():
    names = {name for name, _, _ in BLOCKS}
    assert "README.md" in names
    assert len([block for block in BLOCKS if block[0] == "README.md"]) >= 5


@needs_readme
@pytest.mark.parametrize(("document", "line", "source"), BLOCKS, ids=[f"{d}:{n}" for d, n, _ in BLOCKS])
def test_python_block_runs_as_written(document, line, source):
    filename = f"{document}:{line}"
    tree = ast.parse(source, filename=filename)
    for package in _needed_optional_packages(tree):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{filename} needs {package}, which is not installed")
    # Line numbers in a traceback are the README's own.
    ast.increment_lineno(tree, line - 1)
    namespace = {"__name__": "__readme__"}
    exec(compile(tree, document, "exec"), namespace)  # noqa: S102 - the README's own examples


@needs_readme
def test_the_readme_is_for_users_and_links_the_pages_that_took_the_rest():
    """README.md is the users' page: short, one benchmark table with the command that makes it and its CPU, no
    developer sections (those are docs/development.md's) and links to the pages that hold the rest."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    headings = re.findall(r"^## (.+)$", readme, re.M)
    for developer_section in ("Layout", "Packaging and releases", "Rebuilds"):
        assert developer_section not in headings
    development = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    for section in ("Layout", "Rebuilds", "Packaging and releases"):
        assert f"\n## {section}\n" in development, section
    assert readme.count("| vs floor |") == 1  # one benchmark table; the others are in docs/performance.md
    performance = readme.split("## Performance", 1)[1].split("\n## ", 1)[0]
    assert "python bench/report.py" in performance
    assert any(cpu in performance for cpu in ("AMD EPYC", "Intel Xeon", "Intel Core", "Apple M", "Neoverse")), \
        "the table's CPU is named"
    for page in ("docs/development.md", "docs/performance.md", "docs/behaviour.md", "docs/threads.md", "docs/api.md"):
        assert f"]({page}" in readme, page
        assert (ROOT / page).is_file(), page


@needs_readme
def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    commands = [body.strip() for lang, body in FENCE.findall(setup) if lang == "bash"]
    assert len(commands) == 2, commands
    install_and_run, test = commands
    assert "python -m pooling" in install_and_run and "pytest" in test
    ci = ROOT / ".ci" / "run"
    if ci.is_file():
        assert test in ci.read_text().splitlines()
