"""The documentation names only what exists, and the code leaves measurements to docs/tuning.md.

Two checks (issue 38):

- **Measurements live in docs/tuning.md.**  A comment or docstring in src/, include/ or setup.py
  says why in a line and links the section of docs/tuning.md that holds the figures; it does not
  quote timings, speed ratios or CPU models itself.  TIMING recognises such quotes; at most
  MAX_TIMING_LINES lines may still hold one.
- **Names that exist.**  Every Markdown page of docs/ and the README (not CHANGELOG.md, which is
  history), and the comments and docstrings of every file of src/ and include/ (the leading one
  included) and of setup.py, may name:
  paths of the repository (`src/...`, `docs/...`, ...), which must exist, with their `#anchor`
  where one is given; `pooling.x.y` names, which must import or resolve by getattr; private
  names (`_helper`, `_tuning.even_split`) and the kernels' C names (`pk_parallel`, `PK_KEEP_MIN`),
  which must occur in the code (comments and docstrings left out) of src/, include/ or setup.py;
  and the kernels' files by their bare names (`maxpool_rows.pxi`, `pooling_pool.h`).  No file under
  /tmp may be cited as evidence.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import os
import re
import tokenize
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# -- measurements ---------------------------------------------------------------------------------

_NUM = r"\d+(?:\.\d+)?"
_RANGE = rf"{_NUM}(?:-{_NUM})?"
TIMING = re.compile("|".join([
    rf"\b{_NUM} ?(?:ms|us|µs|ns)\b",                               # a time: 0.5 ms, 2 us
    r"\b[GM]B/s\b",                                                # a bandwidth
    rf"\b{_RANGE}x (?:faster|slower|the\b|its\b|[\w`]+'s? time)",  # 1.4x slower, 1.08x the baseline's time
    rf"\b{_RANGE}(?: / {_RANGE})? of (?:the|its|[\w`]+'s?) time",  # 0.49 / 0.55 of the time
    rf"\b{_NUM}%(?=[\s).,;:]|$)",                                  # cost a small call 5%
    r"\b\d+\.\d+ ?-> ?\d+\.\d+\b",                                 # before -> after: 1.77 -> 0.89
    r"\btwice as (?:fast|slow)\b",
    r"~?\b\d+ cycles\b",
    r"\bZen ?\d\b", r"\bXeon\b", r"\bEPYC\b", r"\bRyzen\b",         # CPU models
    r"\b(?:Emerald|Sapphire|Granite) Rapids\b", r"\bSkylake\b",
]))

# At most this many lines of src/, include/ and setup.py may quote a measurement (issue 38, "done
# when": a one-line why with its link to docs/tuning.md, no more).
MAX_TIMING_LINES = 15

_CODE_SUFFIXES = {".py", ".pyx", ".pxi", ".pxd", ".pyi", ".h"}


def _source_files():
    """src/ and include/'s source files, and setup.py, as paths relative to the root."""
    files = [p for top in ("src", "include") for p in sorted((ROOT / top).rglob("*"))
             if p.suffix in _CODE_SUFFIXES and p.is_file()]
    return [p.relative_to(ROOT).as_posix() for p in files] + ["setup.py"]


def timing_lines(files):
    """(path, line number, line) for every line of `files` that quotes a measurement."""
    return [(path, n, line.strip()) for path in files
            for n, line in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(), 1)
            if TIMING.search(line)]


def test_timing_pattern_catches_quotes_and_not_code():
    quotes = ["took 0.5 ms of 2", "2 us of a small call", "1.4x slower", "ran 3-4x faster",
              "1.08x the baseline build's time", "0.49 / 0.55 of the time", "0.86 of the time",
              "cost a small call 5%.", "1.77 -> 0.89", "~5 cycles", "measured twice as fast",
              "on Zen 5", "AMD EPYC", "a Xeon VM", "9 GB/s"]
    code = ["x = y % 2", "def f(x) -> int:", "_mm256_set1_epi64x(1)", "k3 s2 p1 1x64x112x112",
            "ms = 3", "for ns in names:", "us = [u for u in x]", "2x2 stride-2 windows",
            "POOLING_SPIN_US", "items / (16 x threads)"]
    assert [q for q in quotes if not TIMING.search(q)] == []
    assert [c for c in code if TIMING.search(c)] == []


def test_code_leaves_measurements_to_docs_tuning():
    """At most MAX_TIMING_LINES lines of the code quote a timing, ratio or CPU model; each
    measurement belongs in docs/tuning.md, linked from a one-line why."""
    found = timing_lines(_source_files())
    assert len(found) <= MAX_TIMING_LINES, "\n".join(f"{p}:{n}: {line}" for p, n, line in found)


def test_design_holds_no_measurements():
    """docs/design.md says how the library is built; the figures behind its choices are docs/tuning.md's."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if TIMING.search(line)] == []


# -- names ----------------------------------------------------------------------------------------

def _docs_pages():
    pages = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    return [p.relative_to(ROOT).as_posix() for p in pages]


def _strip_python(text):
    """Python source without comments and docstrings (strings that are statements of their own)."""
    out, at_start = [], True
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type == tokenize.STRING and at_start:
            continue
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            at_start = tok.type != tokenize.NL or at_start
            out.append("\n")
            continue
        at_start = False
        out.append(tok.string)
        out.append(" ")
    return "".join(out)


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_CY_DOCSTRING = re.compile(r'^[ \t]*[rbu]?("""|\'\'\').*?\1', re.S | re.M)
_CY_COMMENT = re.compile(r"#[^\n'\"]*$", re.M)


def _strip_cython(text):
    """Cython source without comments, docstrings (triple-quoted strings that begin a line) and the
    comments of the C code it embeds."""
    text = _CY_DOCSTRING.sub("", text)
    text = "\n".join("" if line.lstrip().startswith("#") else _CY_COMMENT.sub("", line)
                     for line in text.splitlines())
    return _C_COMMENT.sub("", text)


@lru_cache(maxsize=None)
def code_words():
    """Every identifier that occurs in the code of src/, include/ and setup.py."""
    words = set()
    for path in _source_files():
        text = (ROOT / path).read_text(encoding="utf-8")
        if path.endswith((".py", ".pyi")):
            code = _strip_python(text)
        elif path.endswith(".h"):
            code = _C_COMMENT.sub("", text)
        else:
            code = _strip_cython(text)
        words.update(re.findall(r"[A-Za-z_]\w*", code))
    return frozenset(words)


@lru_cache(maxsize=None)
def source_basenames():
    """The source files' names, with those setup.py renders from a template (bodies.pxi from
    bodies.pxi.in): an sdist's tree has the template only."""
    rendered = {p.name[:-len(".in")] for p in (ROOT / "src").rglob("*.in")}
    return frozenset(Path(p).name for p in _source_files()) | rendered


def checked_text(path):
    """What of a source file names things: for src/ and include/ the whole file (the names its code
    uses exist by construction, so in effect its comments and docstrings are checked); for setup.py
    its comments and docstrings (its code builds names such as "pooling._core_" + suffix)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    if path != "setup.py":
        return text
    docs = [ast.get_docstring(node, clean=False) or "" for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))]
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    return "\n".join(docs + comments)


_REPO_PATH = re.compile(r"(?<![\w/.-])((?:src|include|tests|bench|tools|docs)/[\w./*-]*[\w*])(#[\w-]+)?")
_SCRATCH_FILE = re.compile(r"(?<![\w}$/.-])/tmp/[\w./-]+")
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_FILE_SUFFIX = r"\.(?:py|pyx|pyi|pxi|pxd|c|h|so|md|json|toml|txt)\b"
# Dotted names, never a file's name (`pooling._core.pyx`): each part whole ((?!\w) stops the regex
# from backing off to a shorter part), and no file suffix after the last.
_PART = r"\.(?!(?:py|pyx|pyi|pxi|pxd|c|h|so|md)\b)[A-Za-z_]\w*(?!\w)"
_POOLING_NAME = re.compile(rf"(?<![\w./-])pooling(?:{_PART})+(?!{_FILE_SUFFIX})")
_PRIVATE = re.compile(rf"(?<![\w.*/-])(_[A-Za-z]\w*(?!\w))(?:{_PART})*(?!{_FILE_SUFFIX})")
_PRIVATE_FILE = re.compile(r"(?<![\w./-])(_\w+\.(?:py|pyx|pyi|pxd))\b")
_C_NAME = re.compile(r"(?<![\w.*/-])((?:pk|PK)_\w+)")
_KERNEL_FILE = re.compile(r"(?<![\w/.])((?:pooling_\w+\.h)|(?:\w+\.pxi)|(?:_\w+\.pyx))\b")
_EXTENSIONS = {"_core", "_core_avx2", "_core_avx512", "_runtime"}
# Builds that exist only where the compiler targets them (x86-64; AVX-512 with gcc and clang, setup.py):
# elsewhere (aarch64, MSVC) the docs still name them, and their names are pooling._core's.
_OPTIONAL_BUILDS = {"_core_avx2", "_core_avx512"}

# Files the build writes, which a checkout does not hold: Cython's C files and the build record.
GENERATED = re.compile(r"src/(?:[\w*]+\.c|pooling/_build_info\.py|kernels/bodies\.pxi)$")

# Names of other software that look like private names of ours (`sysconf(_SC_LEVEL1_DCACHE_SIZE)`,
# CPython's cross-build variable).
FOREIGN = {"_SC_LEVEL1_DCACHE_SIZE", "_PYTHON_SYSCONFIGDATA_NAME"}

# Names docs/tuning.md records as removed ("before this change the bound was ..."): the page may
# name them, and the code must no longer hold them.
REMOVED = {"_BUFFER_BYTES", "_ITEM_ELEMENTS", "_PLANES_CHOSEN", "_PREFETCH_NHWC_BYTES", "_PREFETCH_ROWS_BYTES",
           "_ROWS_CHOSEN", "_STREAM_BYTES", "_dispatch.BASELINE_FASTER", "_dispatch.WIDE_FASTER",
           "_threads.SMALL_INPUT"}


@lru_cache(maxsize=None)
def anchors(page):
    """The GitHub anchors of a Markdown page's headings."""
    found = set()
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading:
            title = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            found.add(title.replace(" ", "-"))
    return frozenset(found)


def _check_path(path, anchor):
    if GENERATED.match(path):
        return None
    if "*" in path:
        return None if list(ROOT.glob(path)) else f"no file matches {path}"
    target = ROOT / path.rstrip("/")
    if not target.exists():
        return f"{path} does not exist"
    if anchor and target.suffix == ".md" and anchor[1:] not in anchors(path):
        return f"{path}{anchor}: no such heading"
    return None


@lru_cache(maxsize=None)
def resolve(name):
    """None if the dotted name `pooling.x.y` imports or resolves by getattr, else why not.  The
    package is flat: `x` is a module of src/pooling/ or an attribute of the package.  The SIMD
    builds are looked up, not imported (this CPU may lack their instructions), and need not exist
    (this platform or compiler may not build them); their names are pooling._core's."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[1] in _EXTENSIONS:
        if importlib.util.find_spec(f"pooling.{parts[1]}") is None and parts[1] not in _OPTIONAL_BUILDS:
            return f"{name}: no module pooling.{parts[1]}"
        module, rest = "pooling._runtime" if parts[1] == "_runtime" else "pooling._core", parts[2:]
    elif len(parts) >= 2 and parts[1] in _package_modules():
        module, rest = f"pooling.{parts[1]}", parts[2:]
    else:
        module, rest = "pooling", parts[1:]
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return f"{name}: no module {module}"
        # The module needs a package not installed here (pooling.torch without torch): its names
        # are checked against the source instead.
        missing = [a for a in rest if a not in code_words()]
        return f"{name}: {missing[0]} occurs in no code" if missing else None
    for attr in rest:
        if not hasattr(obj, attr):
            return f"{name}: no attribute {attr}"
        obj = getattr(obj, attr)
    return None


@lru_cache(maxsize=None)
def _package_modules():
    return frozenset(p.stem.split(".")[0] for p in (ROOT / "src" / "pooling").iterdir()
                     if p.suffix in (".py", ".so", ".pyd", ".pyi"))


def _check_private(match):
    """A private name, or a module of the package with an attribute: it must exist."""
    first, dotted = match.group(1), match.group(0)
    if first in FOREIGN:
        return None
    if first in _package_modules():
        return resolve(f"pooling.{dotted}")
    if first not in code_words():
        return f"{first} occurs in no code"
    return None


def problems(text, page=None, backticked_only=False):
    """What `text` names that does not exist: paths, pooling.x names, private and C names, kernel
    files.  `page` is the Markdown page the text comes from, for its relative links.  With
    `backticked_only`, names are checked only inside backticks (Markdown prose); paths and links
    always."""
    found = []
    for path, anchor in _REPO_PATH.findall(text):
        found.append(_check_path(path, anchor))
    # A file under /tmp is nobody's to read: the evidence it held belongs in the repository.
    found.extend(f"{m.group(0)} is a scratch file, not in the repository" for m in _SCRATCH_FILE.finditer(text))
    if page is not None:
        for target in _MD_LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            found.append(_check_path(Path(linked).as_posix(), "#" + anchor if anchor else ""))
    spans = [m.group(1) for m in _BACKTICK.finditer(text)] if backticked_only else [text]
    for span in spans:
        found.extend(resolve(m.group(0)) for m in _POOLING_NAME.finditer(span))
        found.extend(_check_private(m) for m in _PRIVATE.finditer(span))
        found.extend(None if m.group(1) in code_words() else f"{m.group(1)} occurs in no code"
                     for m in _C_NAME.finditer(span))
        found.extend(None if m.group(1) in source_basenames() else f"no source file {m.group(1)}"
                     for m in _KERNEL_FILE.finditer(span))
        found.extend(None if m.group(1) in source_basenames() or GENERATED.match(f"src/pooling/{m.group(1)}")
                     else f"no source file {m.group(1)}" for m in _PRIVATE_FILE.finditer(span))
    return sorted({p for p in found if p})


def page_problems(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # code blocks run as tests elsewhere
    found = problems(text, page=page, backticked_only=True)
    if page == "docs/tuning.md":
        history = {f"{name} occurs in no code" for name in REMOVED}
        history |= {f"pooling.{name}: no attribute {name.split('.')[-1]}" for name in REMOVED}
        found = [p for p in found if p not in history]
    return found



def all_problems():
    found = set()
    for page in _docs_pages():
        found.update(f"{page}: {p}" for p in page_problems(page))
    for path in _source_files():
        found.update(f"{path}: {p}" for p in problems(checked_text(path)))
    return found


def test_docs_and_file_headers_name_what_exists():
    assert sorted(all_problems()) == []


def test_removed_names_are_gone_from_the_code():
    """What docs/tuning.md records as removed really is: no code of src/ or include/ holds it."""
    assert sorted(name for name in REMOVED if name.split(".")[-1] in code_words()) == []



@pytest.mark.parametrize("text, bad", [
    ("see `src/pooling/nothing.py` and `src/kernels/*.pxi`", ["src/pooling/nothing.py does not exist"]),
    ("docs/tuning.md#prefetching-rows_first-and-nhwc_blocks, docs/tuning.md#no-such-section",
     ["docs/tuning.md#no-such-section: no such heading"]),
    ("pooling._tuning.prefetch_rows decides, pooling.maxpool.nothing does not",
     ["pooling.maxpool.nothing: no attribute nothing"]),
    ("_launch_3d stays, _launch_depth_split is gone", ["_launch_depth_split occurs in no code"]),
    ("`pk_parallel` and `pk_nothing`", ["pk_nothing occurs in no code"]),
    ("maxpool_rows.pxi and maxpool_depth.pxi", ["no source file maxpool_depth.pxi"]),
    ("measured by /tmp/s7/gap.py, not ${TMPDIR:-/tmp}/x", ["/tmp/s7/gap.py is a scratch file, not in the repository"]),
    ("_tuning.even_split and _tuning.odd_split", ["pooling._tuning.odd_split: no attribute odd_split"]),
    ("files, not names: pooling._core.pyx, src/pooling/_runtime.pyi, _tuning.py", []),
])
def test_the_checks_find_what_is_missing(text, bad):
    assert problems(text) == bad


def test_design_counts_the_strategies():
    """docs/design.md's count of MaxPool strategies is the Strategy enum's."""
    from pooling._strategy import Strategy

    words = {8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen"}
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    counts = re.findall(r"one of (\w+) strategies", text)
    assert counts == [words.get(len(Strategy), str(len(Strategy)))]
