"""The public functions' numpydoc docstrings: sections, documented defaults, and Examples that run."""
import doctest
import inspect
import re

import numpy as np
import pytest

import pooling

FUNCTIONS = [name for name in pooling.__all__ if callable(getattr(pooling, name))]


def test_every_public_function_is_covered():
    assert sorted(FUNCTIONS) == sorted([
        "col2im", "col2im_output_shape", "convert_indices", "max_pool", "max_pool_grad",
        "max_pool_output_shape", "max_unpool", "max_unpool_output_shape", "max_threads",
        "openmp_enabled", "release_memory", "show_config"])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_examples_run(name):
    """Every Example of the docstring gives the output it shows (doctest)."""
    function = getattr(pooling, name)
    tests = [t for t in doctest.DocTestFinder().find(function, name) if t.examples]
    assert tests, f"{name} has no Examples"
    runner = doctest.DocTestRunner()
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 1 and result.failed == 0, result


_NUMPYDOC_ORDER = ["Parameters", "Returns", "Raises", "See Also", "Notes", "Examples"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_numpydoc_sections(name):
    """Known section headings only, in numpydoc's order; Returns and Examples in every one,
    Parameters and Raises wherever the function takes arguments."""
    function = getattr(pooling, name)
    sections = re.findall(r"^(\w[\w ]*)\n-+$", inspect.getdoc(function), re.M)
    assert sections == sorted(sections, key=_NUMPYDOC_ORDER.index), sections
    assert {"Returns", "Examples"} <= set(sections), sections
    if inspect.signature(function).parameters:
        assert "Parameters" in sections, sections
    if name.startswith(("max_pool", "max_unpool", "col2im")):
        assert "Raises" in sections, sections


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_parameter_is_documented_with_its_default(name):
    """Each parameter has a 'name : type' entry; one with a default says it ('optional' for None)."""
    function = getattr(pooling, name)
    doc = inspect.getdoc(function)
    for p in inspect.signature(function).parameters.values():
        if p.name.startswith("_"):
            continue
        entry = re.search(rf"^{p.name} : (.+)$", doc, re.M)
        assert entry, f"{name}: parameter {p.name} is not documented"
        if p.default is None:
            assert entry.group(1).endswith("optional"), entry.group(0)
        elif p.default is not inspect.Parameter.empty:
            assert entry.group(1).endswith(f"default {p.default!r}".replace("'", '"')), entry.group(0)


def test_max_pool_says_strides_default_to_one_not_kernel_shape():
    doc = inspect.getdoc(pooling.max_pool)
    strides = doc.split("\nstrides : ")[1].split("\npads : ")[0]
    assert "1" in strides and "PyTorch" in strides and "kernel_shape" in strides, strides
    # ... as the function does: 8x8 with a 2x2 kernel is 7x7, 4x4 with strides=2.
    x = np.zeros((1, 1, 8, 8), np.float32)
    assert pooling.max_pool(x, 2).shape == (1, 1, 7, 7)
    assert pooling.max_pool(x, 2, strides=2).shape == (1, 1, 4, 4)
