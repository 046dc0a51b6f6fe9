"""pooling.dask: each operator on Dask arrays equals the in-memory call, bit for bit, for every chunking.

Seeded random chunkings (chunks of 1, chunks smaller than the kernel, uneven last chunks) over every
dtype, both layouts, ranks 1-3 and every attribute; errors; the graph's size; threads; a real
(process) cluster.
"""
import doctest
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import pooling  # noqa: E402
import pooling.dask as pd  # noqa: E402
from conftest import ALL_DTYPES, POOL_DTYPES, assert_same, make_any_array, make_array  # noqa: E402

# The graphs are small; the synchronous scheduler keeps the sweeps fast and deterministic.
SYNC = {"scheduler": "sync"}


def random_chunks(rng, shape):
    """A random chunking: each axis cut at random points (chunks of 1 and uneven tails likely)."""
    chunks = []
    for size in shape:
        if size <= 1:
            chunks.append((size,))
            continue
        style = rng.integers(4)
        if style == 0:
            chunks.append((size,))
        elif style == 1:
            chunks.append((1,) * size)
        else:
            cuts = sorted(set(rng.integers(1, size, size=rng.integers(1, size)).tolist()))
            bounds = [0, *cuts, size]
            chunks.append(tuple(b - a for a, b in zip(bounds[:-1], bounds[1:])))
    return tuple(chunks)


def to_dask(rng, x):
    return da.from_array(x, chunks=random_chunks(rng, x.shape))


def random_pool_attrs(rng, n):
    attrs = {"kernel_shape": tuple(rng.integers(1, 4, n).tolist())}
    if rng.random() < 0.7:
        attrs["strides"] = tuple(rng.integers(1, 4, n).tolist())
    if rng.random() < 0.4:
        attrs["dilations"] = tuple(rng.integers(1, 3, n).tolist())
    if rng.random() < 0.25:
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    elif rng.random() < 0.6:
        attrs["pads"] = tuple(rng.integers(0, 4, 2 * n).tolist())
    if rng.random() < 0.4:
        attrs["ceil_mode"] = True
    if rng.random() < 0.4:
        attrs["layout"] = "NHWC"
    elif rng.random() < 0.3:
        attrs["storage_order"] = 1
    return attrs


def random_shape(rng, n, layout="NCHW"):
    top = {1: 12, 2: 8, 3: 5}[n]
    spatial = tuple(rng.integers(1, top + 1, n).tolist())
    lead = (int(rng.integers(1, 3)), int(rng.integers(1, 4)))
    return lead + spatial if layout == "NCHW" else lead[:1] + spatial + lead[1:]


def expect_same_error(call_memory, call_dask):
    """Both calls raise the same error, or neither does; the in-memory result (or None)."""
    try:
        expected = call_memory()
    except (ValueError, TypeError) as e:
        with pytest.raises(type(e)) as got:
            call_dask()
        assert str(got.value) == str(e)
        return None
    return expected


# -- MaxPool -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(POOL_DTYPES))
@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_pool_equals_in_memory(kind, n):
    rng = np.random.default_rng([n, len(kind), ord(kind[-1])])
    for _ in range(12):
        attrs = random_pool_attrs(rng, n)
        x = make_array(rng, random_shape(rng, n, attrs.get("layout", "NCHW")), kind)
        xd = to_dask(rng, x)
        expected = _pool_with_indices_equals_in_memory(x, xd, attrs)
        if expected is not None:
            assert_same(pd.max_pool(xd, **attrs).compute(**SYNC), expected[0])


def _pool_with_indices_equals_in_memory(x, xd, attrs):
    """Checks pooling.dask.max_pool(xd) with Indices against pooling.max_pool(x), or that both
    raise the same error; returns the in-memory (y, indices), or None after an error."""
    expected = expect_same_error(lambda: pooling.max_pool(x, return_indices=True, **attrs),
                                 lambda: pd.max_pool(xd, return_indices=True, **attrs))
    if expected is None:
        return None
    y, indices = pd.max_pool(xd, return_indices=True, **attrs)
    got_y, got_i = dask.compute(y, indices, **SYNC)
    assert_same(got_y, expected[0])
    assert_same(got_i, expected[1])
    # Output chunks: N and C as the input's, spatial ones cut where windows start.
    assert y.chunks == indices.chunks and y.shape == expected[0].shape
    return expected


@pytest.mark.parametrize("index_format", ["plane", "tf", "tf_batch"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_index_formats_equal_in_memory(index_format, layout, storage_order, rng):
    """Every index encoding, global as the in-memory call's, for random chunkings; the
    combinations the in-memory call rejects are rejected with the same error."""
    for n in (1, 2, 3):
        shape = (2, 3) + tuple(int(v) for v in rng.integers(4, 9, n))
        if layout == "NHWC":
            shape = (shape[0],) + shape[2:] + (shape[1],)
        x = make_array(rng, shape, "float32")
        attrs = dict(kernel_shape=3, strides=2, pads=1, layout=layout, storage_order=storage_order,
                     index_format=index_format)
        _pool_with_indices_equals_in_memory(x, to_dask(rng, x), attrs)


def test_max_pool_chunks_smaller_than_the_window_and_threaded_scheduler(rng):
    x = make_array(rng, (2, 3, 17, 13), "float32")
    xd = da.from_array(x, chunks=(1, 2, 1, 2))
    for attrs in [dict(kernel_shape=5, strides=2, pads=2, dilations=2),
                  dict(kernel_shape=(3, 4), strides=(3, 1), ceil_mode=True, pads=(1, 0, 2, 3)),
                  dict(kernel_shape=2, strides=2, auto_pad="SAME_LOWER")]:
        y, i = pd.max_pool(xd, return_indices=True, **attrs)
        y_mem, i_mem = pooling.max_pool(x, return_indices=True, **attrs)
        got_y, got_i = dask.compute(y, i, scheduler="threads")
        assert_same(got_y, y_mem)
        assert_same(got_i, i_mem)


def test_max_pool_activation_and_opset(rng):
    x = make_array(rng, (1, 9, 10, 3), "float32")
    xd = da.from_array(x, chunks=(1, 4, 3, 2))
    attrs = dict(kernel_shape=3, strides=2, layout="NHWC", activation="Clip", activation_params=[-1, 2],
                 opset=12)
    assert_same(pd.max_pool(xd, **attrs).compute(**SYNC), pooling.max_pool(x, **attrs))


def test_max_pool_output_chunks_are_aligned_to_the_stride():
    x = da.zeros((1, 1, 20), dtype=np.float32, chunks=((1,), (1,), (7, 7, 6)))
    # Boundaries 7 and 14 -> first windows starting there: ceil((7 + 1) / 2) = 4, ceil(15 / 2) = 8.
    assert pd.max_pool(x, 3, strides=2, pads=1).chunks[2] == (4, 4, 2)
    assert pd.max_pool(x, 2, strides=2).chunks[2] == (4, 3, 3)
    # An output of size 0 has one empty chunk.
    assert pd.max_pool(x, 21, ceil_mode=False).shape == (1, 1, 0)


def test_max_pool_windows_in_the_padding_only(rng):
    x = make_array(rng, (1, 1, 5), "int8")
    xd = da.from_array(x, chunks=1)
    attrs = dict(kernel_shape=2, strides=1, pads=(4, 6))    # windows wholly in both paddings
    y, i = pd.max_pool(xd, return_indices=True, **attrs)
    y_mem, i_mem = pooling.max_pool(x, return_indices=True, **attrs)
    assert_same(y.compute(**SYNC), y_mem)
    assert_same(i.compute(**SYNC), i_mem)
    assert (i_mem == -1).any()


def test_max_pool_does_not_touch_the_input(rng):
    x = make_array(rng, (1, 2, 6, 6), "float64")
    before = x.copy()
    pd.max_pool(da.from_array(x, chunks=2), 3, return_indices=True)[1].compute(**SYNC)
    assert_same(x, before)


# -- MaxUnpool -----------------------------------------------------------------------------------

UNPOOL_KINDS = ["bfloat16", "float16", "float32", "float64", "int8", "uint8"]


@pytest.mark.parametrize("kind", UNPOOL_KINDS)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_round_trip_equals_in_memory(kind, n):
    rng = np.random.default_rng([n, 7, len(kind), ord(kind[-1])])
    for _ in range(8):
        attrs = random_pool_attrs(rng, n)
        attrs.pop("auto_pad", None)
        attrs.pop("storage_order", None)
        layout = attrs.get("layout", "NCHW")
        x = make_array(rng, random_shape(rng, n, layout), kind)
        try:
            y, indices = pooling.max_pool(x, return_indices=True, **attrs)
        except ValueError:
            continue
        unpool = {k: attrs[k] for k in ("kernel_shape", "strides", "pads", "layout") if k in attrs}
        given = {"output_shape": x.shape} if rng.random() < 0.7 else {}
        yd, idd = to_dask(rng, y), to_dask(rng, indices)   # different chunks for x and indices
        chunks = random_chunks(rng, x.shape) if given and rng.random() < 0.5 else None
        call = lambda: pd.max_unpool(yd, idd, **unpool, **given, dilations=attrs.get("dilations"),  # noqa: E731
                                     chunks=chunks)
        try:
            expected = pooling.max_unpool(y, indices, **unpool, **given)
        except ValueError:   # a window in the padding only (-1), or an inferred shape too small
            with pytest.raises(ValueError):
                call().compute(**SYNC)
            continue
        got = call()
        assert_same(got.compute(**SYNC), expected)
        if chunks is not None:
            assert got.chunks == chunks


def test_max_unpool_duplicates_last_write_wins(rng):
    # Overlapping windows (strides 1) point several pooled elements at one maximum.
    x = make_array(rng, (2, 3, 9, 8), "float32", special=False)
    y, i = pooling.max_pool(x, 3, strides=1, pads=1, return_indices=True)
    y = y + np.arange(y.size, dtype=np.float32).reshape(y.shape)   # each write distinguishable
    expected = pooling.max_unpool(y, i, 3, strides=1, pads=1, output_shape=x.shape)
    for chunks in [(1, 2, 2, 3), (2, 1, 1, 1), (1, 3, 4, 8)]:
        got = pd.max_unpool(da.from_array(y, chunks=chunks), da.from_array(i, chunks=chunks[::-1][:4]),
                            3, strides=1, pads=1, output_shape=x.shape, chunks=(1, 1, 3, 2))
        assert_same(got.compute(scheduler="threads"), expected)


def test_max_unpool_default_chunks_follow_the_pooled_chunks():
    y = da.zeros((1, 1, 10), dtype=np.float32, chunks=((1,), (1,), (3, 3, 4)))
    i = da.zeros((1, 1, 10), dtype=np.int64, chunks=((1,), (1,), (3, 3, 4)))
    # Boundary o of y -> o * 2 - 1 in the output (pads 1): 5 and 11.
    assert pd.max_unpool(y, i, 3, strides=2, pads=(1, 1)).chunks[2] == (5, 6, 8)


def test_max_unpool_rejects_an_index_outside_its_window():
    x = da.ones((1, 1, 4), dtype=np.float32, chunks=2)
    idx = np.array([[[1, 2, 4, 7]]])   # element 0's window is [0, 2), element 1's [2, 4), ...
    ok = pd.max_unpool(x, da.from_array(idx, chunks=1), 2, strides=2)
    assert_same(ok.compute(**SYNC), pooling.max_unpool(np.ones((1, 1, 4), np.float32), idx, 2, strides=2))
    bad = idx.copy()
    bad[0, 0, 1] = 6   # inside the output, but not inside element 1's window [2, 4)
    with pytest.raises(ValueError, match=r"MaxUnpool: indices\[0, 0, 1\] = 6 .* outside the window"):
        pd.max_unpool(x, da.from_array(bad, chunks=3), 2, strides=2, chunks=1).compute(**SYNC)
    bad[0, 0, 1] = 8   # outside the output, as in memory
    with pytest.raises(ValueError, match=r"MaxUnpool: indices\[0, 0, 1\] = 8 is outside \[0, 8\)"):
        pd.max_unpool(x, da.from_array(bad, chunks=3), 2, strides=2, chunks=4).compute(**SYNC)
    bad[0, 0, 1] = -1   # a window MaxPool found empty
    with pytest.raises(ValueError, match=r"indices\[0, 0, 1\] = -1 is outside"):
        pd.max_unpool(x, da.from_array(bad, chunks=3), 2, strides=2).compute(**SYNC)


def test_max_unpool_rejects_what_is_checked_in_memory():
    x = da.ones((1, 1, 4), dtype=np.float32, chunks=2)
    i = da.zeros((1, 1, 4), dtype=np.int64, chunks=2)
    with pytest.raises(ValueError, match=r"MaxUnpool: indices must have the shape of x"):
        pd.max_unpool(x, i[..., :3], 2)
    with pytest.raises(TypeError, match=r"MaxUnpool: indices has dtype float32"):
        pd.max_unpool(x, i.astype(np.float32), 2)
    with pytest.raises(TypeError, match=r"MaxUnpool: indices must be a dask.array.Array"):
        pd.max_unpool(x, np.zeros((1, 1, 4), np.int64), 2)
    with pytest.raises(ValueError, match=r"MaxUnpool: output_shape \[1, 2, 8\] must keep N and C"):
        pd.max_unpool(x, i, 2, output_shape=(1, 2, 8))


# -- Col2Im --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(ALL_DTYPES))
def test_col2im_equals_in_memory(kind):
    rng = np.random.default_rng([11, len(kind), ord(kind[0]), ord(kind[-1])])
    done = 0
    while done < 9:
        n = int(rng.integers(1, 4))
        image = tuple(rng.integers(1, {1: 13, 2: 8, 3: 5}[n], n).tolist())
        block = tuple(rng.integers(1, 4, n).tolist())
        attrs = {"strides": tuple(rng.integers(1, 4, n).tolist()),
                 "pads": tuple(rng.integers(0, 3, 2 * n).tolist()),
                 "dilations": tuple(rng.integers(1, 3, n).tolist())}
        try:
            blocks = [(image[i] + attrs["pads"][i] + attrs["pads"][i + n] - (block[i] - 1)
                       * attrs["dilations"][i] - 1) // attrs["strides"][i] + 1 for i in range(n)]
            shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)) * int(np.prod(block)),
                     int(np.prod(blocks)))
            pooling.col2im_output_shape(shape, image, block, **attrs)
        except ValueError:
            continue
        x = make_any_array(rng, shape, kind)
        xd = to_dask(rng, x)
        expected = pooling.col2im(x, image, block, **attrs)
        assert_same(pd.col2im(xd, image, block, **attrs).compute(**SYNC), expected)
        done += 1


def test_col2im_overlapping_blocks_sum_exactly_in_float16(rng):
    # Many terms per pixel, rounded once: any other grouping of the sums would differ in the last bit.
    x = (rng.standard_normal((2, 2 * 9, 14 * 14)) * 100).astype(np.float16)
    expected = pooling.col2im(x, (16, 16), (3, 3))
    for chunks in [(1, 5, 7), (2, 18, 1), (1, 9, 29)]:
        got = pd.col2im(da.from_array(x, chunks=chunks), (16, 16), (3, 3))
        assert_same(got.compute(scheduler="threads"), expected)


def test_col2im_chunks():
    x = da.zeros((3, 8, 12), dtype=np.float32, chunks=((2, 1), (3, 5), (5, 7)))
    y = pd.col2im(x, (4, 4), (2, 2), pads=(1, 0, 0, 0))
    # N as x; C: boundary 3 of C*K -> ceil(3 / 4) = 1; S_1: L boundary 5 -> block row ceil(5 / 3) = 2
    # starts at image row 2 * 1 - 1 = 1; S_2 whole.
    assert y.chunks == ((2, 1), (1, 1), (1, 3), (4,))


# -- Errors, graph, threads ----------------------------------------------------------------------

def test_errors_name_the_operator_and_match_in_memory():
    x = np.zeros((1, 1, 4, 4), np.float32)
    xd = da.from_array(x, chunks=2)
    with pytest.raises(TypeError, match=r"MaxPool: x must be a dask.array.Array, got ndarray"):
        pd.max_pool(x, 2)
    with pytest.raises(TypeError, match=r"Col2Im: x must be a dask.array.Array, got list"):
        pd.col2im([[[1.0]]], (1,), (1,))
    for attrs in [dict(kernel_shape=0), dict(kernel_shape=2, pads=1, auto_pad="VALID"),
                  dict(kernel_shape=2, storage_order=1, layout="NHWC"), dict(kernel_shape=9),
                  dict(kernel_shape=2, dilations=2, opset=8), dict(kernel_shape=(2, 2, 2))]:
        expect_same_error(lambda: pooling.max_pool(x, **attrs), lambda: pd.max_pool(xd, **attrs))
    for dtype in [np.int32, np.complex64]:
        expect_same_error(lambda: pooling.max_pool(x.astype(dtype), 2),
                          lambda: pd.max_pool(xd.astype(dtype), 2))
    expect_same_error(lambda: pooling.max_pool(x.astype(np.uint8), 2, opset=11),
                      lambda: pd.max_pool(xd.astype(np.uint8), 2, opset=11))
    expect_same_error(lambda: pooling.col2im(np.zeros((1, 4, 5)), (3, 3), (2, 2)),
                      lambda: pd.col2im(da.zeros((1, 4, 5)), (3, 3), (2, 2)))
    with pytest.raises(ValueError, match=r"MaxPool: n_threads must be non-zero"):
        pd.max_pool(xd, 2, n_threads=0)
    unknown = xd[xd[:, 0, 0, 0] >= 0]
    with pytest.raises(ValueError, match=r"MaxPool: x has unknown chunk sizes"):
        pd.max_pool(unknown, 2)


def _tasks(array):
    return len(dict(array.__dask_graph__()))


def _dependencies(array):
    graph = dict(array.__dask_graph__())
    return [dask.core.get_dependencies(graph, key) for key in dask.core.flatten(array.__dask_keys__())]


def test_one_task_per_output_chunk_reading_only_its_halo():
    x = da.zeros((2, 3, 64, 64), dtype=np.uint8, chunks=(1, 3, 16, 16))
    inputs = _tasks(x)
    y = pd.max_pool(x, 2, strides=2)
    assert y.numblocks == (2, 1, 4, 4)
    assert _tasks(y) - inputs == 32
    # k2 s2 on stride-aligned chunks: each task reads exactly its own input block.
    assert [len(d) for d in _dependencies(y)] == [1] * 32
    # k3 s2 p1: the halo adds the next block's first rows and columns: at most 2 x 2 blocks each.
    y3 = pd.max_pool(x, 3, strides=2, pads=1)
    # A block partly needed is cut by a task of its own, so that it can be released early. Per spatial
    # axis, blocks 1-3 are cut in two: their first row, the halo of the output chunk before, and the
    # rest; each pair of cuts (of two axes) is read by one output chunk, and only block (0, 0) is whole.
    assert max(len(d) for d in _dependencies(y3)) == 4
    assert _tasks(y3) - inputs == 32 + 2 * (7 * 7 - 1)
    # With Indices: the pair per chunk and one selection per output.
    yi, ii = pd.max_pool(x, 2, strides=2, return_indices=True)
    assert len(dict(yi.__dask_graph__()) | dict(ii.__dask_graph__())) - inputs == 3 * 32
    assert _tasks(pd.max_unpool(y, yi.astype(np.int64), 2, strides=2)) <= inputs + 32 + 32 + 32 + 32 + 2 * 32
    assert _tasks(pd.col2im(da.zeros((4, 8, 9), chunks=(1, 8, 3)), (4, 4), (2, 2))) == 12 + 12


def test_kernels_run_single_threaded_by_default(monkeypatch):
    calls = []
    real = pd._max_pool

    def spy(*args, **kwargs):
        calls.append(kwargs["n_threads"])
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "_max_pool", spy)
    x = da.zeros((1, 1, 12, 12), dtype=np.float32, chunks=4)
    pd.max_pool(x, 2, strides=2).compute(scheduler="threads")
    assert calls == [1] * 9
    calls.clear()
    pd.max_pool(x, 2, strides=2, n_threads=None).compute(scheduler="threads")
    assert calls == [None] * 9
    y, i = pd.max_pool(x, 2, strides=2, return_indices=True)
    for name, op, args in [("_max_unpool", lambda *a: pd.max_unpool(*a, strides=2), (y, i, 2)),
                           ("_col2im", pd.col2im, (da.zeros((1, 1, 4), chunks=2), (4,), (1,)))]:
        seen = []
        real_op = getattr(pd, name)
        monkeypatch.setattr(pd, name, lambda *a, real_op=real_op, seen=seen, **k: (seen.append(k["n_threads"]),
                                                                                    real_op(*a, **k))[1])
        op(*args).compute(scheduler="threads")
        assert seen and set(seen) == {1}


def test_docstring_examples_run():
    for function in (pd.max_pool, pd.max_unpool, pd.col2im):
        tests = doctest.DocTestFinder().find(function, function.__name__)
        runner = doctest.DocTestRunner()
        for test in tests:
            runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.attempted >= 3 and result.failed == 0, (function.__name__, result)


def test_import_pooling_does_not_import_dask():
    code = "import sys, pooling; pooling.max_pool([[[1.0]]], 1); assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_on_a_local_cluster_of_processes(rng):
    distributed = pytest.importorskip("distributed")
    x = make_array(rng, (2, 2, 21, 18), "float32")
    xd = da.from_array(x, chunks=(1, 2, 5, 7))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        y, i = pd.max_pool(xd, 3, strides=2, pads=1, ceil_mode=True, return_indices=True)
        back = pd.max_unpool(y, i, 3, strides=2, pads=1, output_shape=x.shape, chunks=xd.chunks)
        got_y, got_i, got_back = client.compute([y, i, back], sync=True)
    y_mem, i_mem = pooling.max_pool(x, 3, strides=2, pads=1, ceil_mode=True, return_indices=True)
    assert_same(got_y, y_mem)
    assert_same(got_i, i_mem)
    assert_same(got_back, pooling.max_unpool(y_mem, i_mem, 3, strides=2, pads=1, output_shape=x.shape))


def test_docs_examples_run():
    """Every ```python block of docs/dask.md runs as written (where the source tree is here)."""
    page = Path(__file__).resolve().parents[1] / "docs" / "dask.md"
    if not page.is_file():
        pytest.skip("needs the source tree")
    blocks = [b.split("```", 1)[0] for b in page.read_text(encoding="utf-8").split("```python\n")[1:]]
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, str(page), "exec"), {"__name__": "__docs__"})  # noqa: S102 - our own examples


TYPED_USE = '''
from typing import assert_type

import dask.array as da
import numpy as np

import pooling.dask

x: da.Array = da.zeros((1, 1, 8, 8), dtype=np.float32, chunks=4)
assert_type(pooling.dask.max_pool(x, 2, strides=2, n_threads=None), da.Array)
y, i = pooling.dask.max_pool(x, (2, 2), strides=2, ceil_mode=True, return_indices=True)
assert_type(i, da.Array)
assert_type(pooling.dask.max_unpool(y, i, 2, strides=2, chunks=x.chunks), da.Array)
assert_type(pooling.dask.col2im(x[0], (4, 4), (2, 2), strides=1, pads=0), da.Array)
'''


@pytest.mark.typecheck
def test_types_under_mypy_strict(tmp_path):
    """A user's script type-checks under mypy --strict (precise results), and a wrong layout does not."""
    pytest.importorskip("mypy")
    (tmp_path / "good.py").write_text(TYPED_USE)
    bad = TYPED_USE + 'pooling.dask.max_pool(x, 2, layout="nhwc")\n'
    (tmp_path / "bad.py").write_text(bad)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    root = str(Path(pooling.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--cache-dir",
                          str(tmp_path / ".cache"), "--no-error-summary", "good.py", "bad.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    last_line = bad.count("\n")
    assert len(errors) == 1 and errors[0].startswith(f"bad.py:{last_line}: error: No overload variant"), run.stdout


@pytest.mark.parametrize("function", [pd.max_pool, pd.max_unpool, pd.col2im], ids=lambda f: f.__name__)
def test_numpydoc_documents_every_parameter_with_its_default(function):
    """As tests/test_docstrings.py asks of pooling's own functions."""
    import inspect
    import re

    doc = inspect.getdoc(function)
    sections = re.findall(r"^(\w[\w ]*)\n-+$", doc, re.M)
    assert sections == ["Parameters", "Returns", "Raises", "See Also", "Notes", "Examples"], sections
    for p in inspect.signature(function).parameters.values():
        entry = re.search(rf"^{p.name} : (.+)$", doc, re.M)
        assert entry, f"{function.__name__}: parameter {p.name} is not documented"
        if p.default is None:
            assert entry.group(1).endswith("optional"), entry.group(0)
        elif p.default is not inspect.Parameter.empty:
            assert entry.group(1).endswith(f"default {p.default!r}".replace("'", '"')), entry.group(0)


def test_pooling_dask_is_an_attribute_after_import_pooling():
    """`import pooling` then `pooling.dask.max_pool`: the submodule loads on first use."""
    code = ("import sys, pooling; assert 'dask' not in sys.modules; "
            "f = pooling.dask.max_pool; assert 'dask' in sys.modules; print(f.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "max_pool", out.stderr


def test_index_formats_are_separate_graphs(rng):
    """Two calls that differ only in index_format computed together give each its own Indices."""
    x = make_array(rng, (1, 2, 6, 6), "float32")
    xd = da.from_array(x, chunks=(1, 1, 3, 4))
    _, onnx = pd.max_pool(xd, 2, strides=2, return_indices=True)
    _, plane = pd.max_pool(xd, 2, strides=2, return_indices=True, index_format="plane")
    got_onnx, got_plane = dask.compute(onnx, plane, **SYNC)
    assert_same(got_onnx, pooling.max_pool(x, 2, strides=2, return_indices=True)[1])
    assert_same(got_plane, pooling.max_pool(x, 2, strides=2, return_indices=True, index_format="plane")[1])
