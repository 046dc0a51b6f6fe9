"""Smoke test of bench/dask_volume.py at a small size (the full 32 GiB case is run by hand)."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

import pooling  # noqa: E402
from dask_volume import CASES, main, result, run_one, volume  # noqa: E402

SHAPE, CHUNKS = (1, 1, 12, 40, 36), (1, 1, 4, 16, 10)


def test_volume_is_the_same_for_every_chunking():
    whole = volume(SHAPE, SHAPE).compute()
    assert np.array_equal(volume(SHAPE, CHUNKS).compute(), whole)
    assert len(np.unique(whole)) > 16


@pytest.mark.parametrize("case", CASES)
def test_case_computes_the_in_memory_result(case):
    x = volume(SHAPE, CHUNKS).compute()
    expected = {"generate": x,
                "coarsen k2 s2": pooling.max_pool(x, 2, strides=2),
                "pooling.dask k2 s2": pooling.max_pool(x, 2, strides=2),
                "pooling.dask k3 s2 p1": pooling.max_pool(x, 3, strides=2, pads=1)}[case]
    assert np.array_equal(result(case, volume(SHAPE, CHUNKS)).compute(), expected)
    _, checksum, top, shape, _ = run_one(case, SHAPE, CHUNKS)
    assert (top, shape) == (expected.max(), expected.shape)
    if case != "generate":
        assert checksum == expected.sum(dtype=np.uint64)


def test_script_runs_each_case_in_a_child(capsys):
    main(["--shape", *map(str, SHAPE), "--chunks", *map(str, CHUNKS), "--cases", "generate",
          "pooling.dask k2 s2"])
    out = capsys.readouterr().out
    assert "| pooling.dask k2 s2 | (1, 1, 6, 20, 18) |" in out
