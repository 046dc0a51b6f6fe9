"""The framework pages (docs/frameworks/*.md) and docs/torch.md: each page has the index conventions side by
side, and their relative links lead to files that exist. Their ```python blocks run in test_readme.py.
The docs index (docs/README.md) links every page of docs/, and the README's, the index's and the pages that
took the README's developer and performance sections have no broken relative links.
"""
import re
from pathlib import Path

import pytest

from test_readme import DOCUMENTS, FENCE, FRAMEWORK_PAGES

ROOT = Path(__file__).resolve().parents[1]
PAGES = FRAMEWORK_PAGES + ["docs/torch.md"]
assert set(PAGES) <= set(DOCUMENTS)  # so that their examples run

pytestmark = pytest.mark.skipif(not (ROOT / "docs" / "frameworks").is_dir(),
                                reason="needs the source tree (these tests were copied next to an installed wheel)")


def test_every_page_exists_with_a_worked_example():
    for name in PAGES:
        assert (ROOT / name).is_file(), name
        blocks = FENCE.findall((ROOT / name).read_text(encoding="utf-8"))
        assert any(lang == "python" for lang, _ in blocks), f"{name} has no python block"


@pytest.mark.parametrize("name", FRAMEWORK_PAGES)
def test_each_framework_page_has_the_conventions_side_by_side(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    table = text.split("## Index conventions side by side", 1)[1].split("\n## ", 1)[0]
    for fmt in ('"onnx"', '"plane"', '"tf"', '"tf_batch"'):
        assert f"| `{fmt}` |" in table, fmt
    for framework in ("ONNX", "PyTorch", "TensorFlow"):
        assert framework in table


@pytest.mark.parametrize("name", PAGES + ["docs/README.md", "README.md", "docs/development.md", "docs/performance.md"])
def test_relative_links_lead_to_files(name):
    path = ROOT / name
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        assert (path.parent / target).exists(), f"{name}: broken link {target}"


def test_docs_index_links_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for name in PAGES:
        assert f"]({Path(name).relative_to('docs')})" in index, name
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md") if path.name != "README.md")
    assert {"development.md", "performance.md"} <= set(pages)
    for name in pages:
        assert f"]({name})" in index, name
