"""The framework pages (docs/frameworks/*.md) and docs/torch.md: every ```python block runs as written, each
page has the index conventions side by side, and their relative links lead to files that exist.

As in test_readme.py, each block runs on its own in a fresh namespace; a block that imports an optional package
(torch, onnx, onnxruntime, tensorflow) is skipped where that package is missing.
"""
import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("onnx", "pytorch", "tensorflow", "numpy")
PAGES = [f"docs/frameworks/{name}.md" for name in FRAMEWORKS] + ["docs/torch.md"]
OPTIONAL = {"onnx": "onnx", "onnxruntime": "onnxruntime", "torch": "torch", "tensorflow": "tensorflow",
            "pooling.onnx": "onnx", "pooling.torch": "torch"}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)

pytestmark = pytest.mark.skipif(not (ROOT / "docs" / "frameworks").is_dir(),
                                reason="needs the source tree (these tests were copied next to an installed wheel)")


def _blocks():
    blocks = []
    for name in PAGES:
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) == "python":
                blocks.append((name, text.count("\n", 0, match.start(2)) + 1, match.group(2)))
    return blocks


BLOCKS = _blocks()


def _missing_packages(tree):
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    needed = {package for module in modules for prefix, package in OPTIONAL.items()
              if module == prefix or module.startswith(prefix + ".")}
    return sorted(p for p in needed if importlib.util.find_spec(p) is None)


def test_every_page_exists_with_a_worked_example():
    for name in PAGES:
        assert (ROOT / name).is_file(), name
        assert any(block[0] == name for block in BLOCKS), f"{name} has no python block"


@pytest.mark.parametrize("name", [f"docs/frameworks/{name}.md" for name in FRAMEWORKS])
def test_each_framework_page_has_the_conventions_side_by_side(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    table = text.split("## Index conventions side by side", 1)[1].split("\n## ", 1)[0]
    for fmt in ('"onnx"', '"plane"', '"tf"', '"tf_batch"'):
        assert f"| `{fmt}` |" in table, fmt
    for framework in ("ONNX", "PyTorch", "TensorFlow"):
        assert framework in table


@pytest.mark.parametrize("name", PAGES + ["docs/README.md"])
def test_relative_links_lead_to_files(name):
    path = ROOT / name
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        assert (path.parent / target).exists(), f"{name}: broken link {target}"


def test_docs_index_links_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for name in PAGES:
        assert f"]({Path(name).relative_to('docs')})" in index, name


@pytest.mark.parametrize(("page", "line", "source"), BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_python_block_runs_as_written(page, line, source):
    tree = ast.parse(source, filename=f"{page}:{line}")
    missing = _missing_packages(tree)
    if missing:
        pytest.skip(f"{page}:{line} needs {', '.join(missing)}, which is not installed")
    ast.increment_lineno(tree, line - 1)  # tracebacks show the page's own line numbers
    exec(compile(tree, page, "exec"), {"__name__": "__docs__"})  # noqa: S102 - the docs' own examples
