"""The result cache: large freed results keep their memory for the next result of that size.

docs/behaviour.md, "Memory": a result of at least 32 MiB is allocated under numpy's memory handler
"pooling_results"; when it is freed its block is kept (at most 4 blocks and the limit in bytes,
POOLING_RESULT_CACHE_MB, default 256 MiB) and the next result of exactly that many bytes takes it.
pooling.release_memory() frees what is held.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pooling
from pooling import _runtime, reference
from pooling._dispatch import core as _core

MIN = _runtime.KEEP_MIN_BYTES
MIB = 1 << 20


_multiarray = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray  # numpy 2 / 1


def handler_name(*a):
    """The memory handler of array a, or the calling context's current one."""
    return _multiarray.get_handler_name(*a)


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with nothing held and the default limit, and leaves it so."""
    limit = _runtime.keep_limit()
    _runtime.release_kept()
    yield
    _runtime.set_keep_limit(limit)
    _runtime.release_kept()


def test_defaults():
    assert MIN == 32 * MIB and _runtime.KEEP_BLOCKS == 4
    if "POOLING_RESULT_CACHE_MB" not in os.environ:
        assert _runtime.keep_limit() == 256 * MIB


def test_only_large_results_use_the_handler():
    big = pooling.max_pool(np.ones((1, 64, 360, 480), np.float32), [1, 1])
    assert big.nbytes >= MIN and handler_name(big) == "pooling_results"
    assert big.flags.owndata and big.base is None and big.flags.writeable
    small = pooling.max_pool(np.ones((1, 4, 8, 8), np.float32), [2, 2])
    assert handler_name(small) == handler_name(np.empty(1))
    # The calling context's handler is numpy's default again after the call.
    assert handler_name() == "default_allocator"


def test_a_freed_block_is_reused_by_the_next_result_of_its_size():
    a = _runtime.empty_result((MIN // 4,), np.float32)
    address = a.ctypes.data
    del a
    assert _runtime.kept_bytes() == MIN
    b = _runtime.empty_result((MIN // 8,), np.float64)  # the same bytes, another dtype
    assert b.ctypes.data == address and _runtime.kept_bytes() == 0
    c = _runtime.empty_result((MIN // 4 + 1,), np.float32)  # another size: a block of its own
    assert c.ctypes.data != address
    del b, c
    assert _runtime.kept_bytes() == 2 * MIN + 4


def test_at_most_four_blocks_and_the_oldest_goes_first():
    arrays = [_runtime.empty_result((MIN + i * 4096,), np.uint8) for i in range(6)]
    addresses = [a.ctypes.data for a in arrays]
    while arrays:
        arrays.pop(0)  # freed oldest first
    assert _runtime.kept_bytes() == sum(MIN + i * 4096 for i in range(2, 6))
    # The two freed first were given back: a result of their size is a new block.
    kept = [_runtime.empty_result((MIN + i * 4096,), np.uint8) for i in range(2, 6)]
    assert [a.ctypes.data for a in kept] == addresses[2:]
    assert _runtime.kept_bytes() == 0


def test_the_byte_limit_bounds_what_is_held():
    _runtime.set_keep_limit(MIN + MIN // 2)
    a, b = (_runtime.empty_result((MIN,), np.uint8) for _ in range(2))
    del a
    assert _runtime.kept_bytes() == MIN
    del b  # room for it only if the first goes
    assert _runtime.kept_bytes() == MIN
    # A block larger than the limit is never kept.
    _runtime.set_keep_limit(MIN - 1)
    assert _runtime.kept_bytes() == 0  # lowering the limit frees what is over it
    c = _runtime.empty_result((MIN,), np.uint8)
    del c
    assert _runtime.kept_bytes() == 0


def test_limit_zero_keeps_nothing_and_uses_numpy_alone():
    _runtime.set_keep_limit(0)
    a = _runtime.empty_result((MIN,), np.uint8)
    assert handler_name(a) == "default_allocator"
    del a
    assert _runtime.kept_bytes() == 0


def test_release_memory_frees_what_is_held():
    a = _runtime.empty_result((MIN,), np.uint8)
    b = _runtime.empty_result((2 * MIN,), np.uint8)
    del a, b
    assert _runtime.kept_bytes() == 3 * MIN
    assert pooling.release_memory() == 3 * MIN
    assert _runtime.kept_bytes() == 0 and pooling.release_memory() == 0
    # ... and later results are kept again.
    c = _runtime.empty_result((MIN,), np.uint8)
    del c
    assert _runtime.kept_bytes() == MIN


def test_resize_of_a_kept_result_goes_through_numpy():
    a = _runtime.empty_result((MIN,), np.uint8)
    a[:] = 7
    a.resize((MIN + 4096,), refcheck=False)  # realloc through the handler
    assert handler_name(a) == "pooling_results" and a[:MIN].min() == 7 and a[MIN:].max() == 0
    del a
    assert _runtime.kept_bytes() == MIN + 4096


def _dirty_then(call, reference):
    """call() twice: the second result reuses the first's block, filled with NaN-bits garbage first."""
    first = call()
    first = first if isinstance(first, tuple) else (first,)
    addresses = set()
    for r in first:
        assert handler_name(r) == "pooling_results"
        r.view(np.uint8)[...] = 0xFF
        addresses.add(r.ctypes.data)
    del first, r
    assert _runtime.kept_bytes() > 0
    second = call()
    second = second if isinstance(second, tuple) else (second,)
    assert {r.ctypes.data for r in second} == addresses  # the very blocks, garbage and all
    for got, want in zip(second, reference if isinstance(reference, tuple) else (reference,)):
        np.testing.assert_array_equal(got, want, strict=True)


def _fresh(call):
    """call() with nothing kept: results in numpy's own memory."""
    limit = _runtime.keep_limit()
    _runtime.set_keep_limit(0)
    try:
        return call()
    finally:
        _runtime.set_keep_limit(limit)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_every_operator_writes_all_of_a_reused_block(n_threads):
    """A reused block holds the last result's bytes: every result must still be written whole."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 64, 362, 480)).astype(np.float32)  # 44.5 MB
    calls = {
        "max_pool k1 +Indices": lambda: pooling.max_pool(x, [1, 1], return_indices=True, n_threads=n_threads),
        "max_pool k3 s1 p1": lambda: pooling.max_pool(x, [3, 3], pads=[1, 1, 1, 1], n_threads=n_threads),
        "max_pool NHWC k2 s1": lambda: pooling.max_pool(x.reshape(1, 362, 480, 64), [2, 2], pads=[0, 0, 1, 1],
                                                        layout="NHWC", n_threads=n_threads),
    }
    y, i = pooling.max_pool(x, [2, 2], strides=[2, 2], return_indices=True)
    # MaxUnpool writes 2x2 stride-2 windows whole (32-bit items, builds with UNPOOL_WINDOWS), else
    # it zeroes and scatters: the first call's result comes zeroed by the system (nothing held), the
    # second's is the first's block, which the kernel must zero.
    calls["max_unpool windows"] = lambda: pooling.max_unpool(y, i, [2, 2], strides=[2, 2], n_threads=n_threads)
    moved = i.copy()
    moved[0, 0, 0, 0] = i[0, 0, 0, 1]  # an index outside its window: the windows' call is redone by the scatter
    calls["max_unpool windows redone"] = lambda: pooling.max_unpool(y, moved, [2, 2], strides=[2, 2],
                                                                    n_threads=n_threads)
    y64 = y.astype(np.float64)
    calls["max_unpool scatter float64"] = lambda: pooling.max_unpool(y64, i, [2, 2], strides=[2, 2],
                                                                     n_threads=n_threads)
    g, gi = pooling.max_pool(x, [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], return_indices=True)
    calls["max_pool_grad float32"] = lambda: pooling.max_pool_grad(g, gi, x.shape, n_threads=n_threads)
    half = x[:, :, :360].astype(np.float16)  # a 16-bit gradient sums in float32 scratch, then fills the result
    y16, i16 = pooling.max_pool(half, [2, 2], strides=[2, 2], return_indices=True)
    calls["max_pool_grad float16"] = lambda: pooling.max_pool_grad(np.concatenate([y16, y16], 1),
                                                                   np.concatenate([i16, i16 + i16.size], 1),
                                                                   (1, 128, 360, 480), n_threads=n_threads)
    cols = rng.standard_normal((1, 4 * 64, 180 * 240)).astype(np.float32)
    calls["col2im"] = lambda: pooling.col2im(cols, [360, 480], [2, 2], strides=[2, 2], n_threads=n_threads)
    for name, call in calls.items():
        want = _fresh(call)
        # (The last case's result, freed just now, may be kept: MaxUnpool's windows take their
        # results from the handler for its alignment even where nothing is kept.)
        _runtime.release_kept()
        _dirty_then(call, want)
        _runtime.release_kept()


def test_zeroed_results_are_kept_too():
    """A result that must start as zeros comes from calloc (the system's zero pages), and its block
    is kept when freed like any other."""
    a = _runtime.empty_result((MIN // 4,), np.float32, True)
    assert handler_name(a) == "pooling_results" and not a.any()
    a[:] = 3
    address = a.ctypes.data
    del a
    assert _runtime.kept_bytes() == MIN
    b = _runtime.empty_result((MIN // 4,), np.float32, True)  # calloc takes no kept block: zeros
    assert not b.any() and _runtime.kept_bytes() == MIN
    c = _runtime.empty_result((MIN // 4,), np.float32)
    assert c.ctypes.data == address and _runtime.kept_bytes() == 0


def test_fresh_zeros_only_where_no_block_is_held():
    """outputs.fresh_zeros: a large result that must start as zeros comes from calloc unless a
    freed block of its size is held (then the kernel zeroes that warm block)."""
    from pooling._outputs import fresh_zeros
    assert fresh_zeros(MIN) and fresh_zeros(4 * MIN) and not fresh_zeros(MIN - 1) and not fresh_zeros(0)
    a = _runtime.empty_result((MIN,), np.uint8)
    assert fresh_zeros(MIN)  # held by an array, not by the cache
    del a
    assert _runtime.holds_block(MIN) and not _runtime.holds_block(MIN + 4096)
    assert not fresh_zeros(MIN) and fresh_zeros(MIN + 4096)
    _runtime.release_kept()
    assert fresh_zeros(MIN) and not _runtime.holds_block(MIN)
    # The loop a user runs: the first result is zeroed by the system, the next ones reuse its block.
    g = np.ones((1, 2, 2048, 1024), np.float32)
    idx = np.arange(g.size, dtype=np.int64).reshape(g.shape) * 2
    first = pooling.max_pool_grad(g, idx, (1, 2, 2048, 2048), n_threads=2)
    address = first.ctypes.data
    first[...] = np.nan
    del first
    assert not fresh_zeros(2 * 2048 * 2048 * 4)
    second = pooling.max_pool_grad(g, idx, (1, 2, 2048, 2048), n_threads=2)
    assert second.ctypes.data == address
    np.testing.assert_array_equal(second.reshape(-1)[::2], 1)
    np.testing.assert_array_equal(second.reshape(-1)[1::2], 0)


def test_the_handler_is_restored_when_the_allocation_fails():
    # More bytes than an address holds: numpy refuses before asking the handler (no huge malloc,
    # which AddressSanitizer would report in tools/sanitize.sh).
    with pytest.raises(ValueError):
        _runtime.empty_result((1 << 62, 8), np.uint8)
    assert handler_name() == "default_allocator"
    assert handler_name(np.empty(MIN, np.uint8)) == "default_allocator"


def test_threads_share_the_cache_safely():
    errors = []

    def work(seed):
        try:
            for k in range(20):
                n = MIN + (seed * 20 + k) % 3 * 4096
                a = _runtime.empty_result((n,), np.uint8)
                a[::4096] = seed
                assert (a[::4096] == seed).all()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _runtime.kept_bytes() <= _runtime.keep_limit()


def _run(code, value):
    package_root = os.path.dirname(os.path.dirname(pooling.__file__))
    env = dict(os.environ, POOLING_RESULT_CACHE_MB=value, PYTHONPATH=package_root)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("value, limit", [("0", 0), ("16", 16 * MIB), ("64", 64 * MIB), (" 1024 ", 1024 * MIB)])
def test_environment_variable_sets_the_limit(value, limit):
    result = _run("import pooling, pooling._runtime as r; print(r.keep_limit()); pooling.show_config()", value)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(limit)
    line = next(l for l in result.stdout.splitlines() if l.startswith("result cache"))
    assert ("off" in line) == (limit < MIN)  # a limit below one block keeps nothing


def test_a_limit_below_one_block_leaves_numpy_alone():
    _runtime.set_keep_limit(MIN - 1)
    a = _runtime.empty_result((MIN,), np.uint8)
    assert handler_name(a) == "default_allocator"


@pytest.mark.parametrize("value", ["-1", "1.5", "lots", "\u00b2"])
def test_environment_variable_rejects_bad_values(value):
    result = _run("import pooling", value)
    assert result.returncode != 0 and "POOLING_RESULT_CACHE_MB must be a whole number of MiB" in result.stderr


@pytest.mark.parametrize("limit", [None, 0])
def test_max_unpool_windows_results_start_on_a_cache_line(limit):
    """docs/behaviour.md, "Memory": MaxUnpool's 2x2 stride-2 results (32-bit items, where the build
    writes them window by window) start on a 64-byte boundary at every size, kept or not."""
    if not _core.UNPOOL_WINDOWS:
        pytest.skip("this build scatters MaxUnpool (no window kernel)")
    if limit is not None:
        _runtime.set_keep_limit(limit)
    rng = np.random.default_rng(7)
    for shape in [(1, 2, 8, 32), (1, 16, 64, 64), (1, 64, 362, 480)]:  # 2 KB, 256 KB, 44.5 MB results
        x = rng.standard_normal(shape).astype(np.float32)
        y, i = pooling.max_pool(x, [2, 2], strides=[2, 2], return_indices=True)
        want = reference.max_unpool(y, i, [2, 2], strides=[2, 2])
        # fresh, then (for the large one where blocks are kept) a kept block
        for n_threads in (1, 2, 2):
            got = pooling.max_unpool(y, i, [2, 2], strides=[2, 2], n_threads=n_threads)
            assert got.ctypes.data % 64 == 0 and handler_name(got) == "pooling_results", shape
            assert got.flags.owndata and got.base is None
            np.testing.assert_array_equal(got, want, strict=True)
            del got


def test_the_handler_aligns_every_block_and_moves_it_whole():
    """Every block of the handler starts on a 64-byte boundary (malloc, calloc, a kept block);
    resizing an array of it (the handler's realloc) keeps its values and the alignment."""
    for n in (1, 3, 1000, MIN // 4):
        for zeros in (False, True):
            a = _runtime.empty_result((n,), np.float32, zeros, True)
            assert a.ctypes.data % 64 == 0 and handler_name(a) == "pooling_results", (n, zeros)
            if zeros:
                assert not a.any()
            a[:] = np.arange(n, dtype=np.float32)
            a.resize((2 * n + 5,), refcheck=False)
            assert a.ctypes.data % 64 == 0
            np.testing.assert_array_equal(a[:n], np.arange(n, dtype=np.float32))
            a.resize((n // 2,), refcheck=False)
            np.testing.assert_array_equal(a, np.arange(n // 2, dtype=np.float32))
            del a
    # Under a limit of 0 the handler still serves `aligned` results (and keeps nothing).
    _runtime.set_keep_limit(0)
    b = _runtime.empty_result((MIN // 4,), np.float32, False, True)
    assert b.ctypes.data % 64 == 0 and handler_name(b) == "pooling_results"
    del b
    assert _runtime.kept_bytes() == 0
    c = _runtime.empty_result((MIN // 4,), np.float32)  # not asked to align: numpy's own memory
    assert handler_name(c) == handler_name(np.empty(1))
