"""Repeated calls do not grow the process, and every error path frees what it took.

Each test warms up (plan caches fill, numpy's allocation caches settle), then repeats its calls and
bounds the growth of tracemalloc's traced memory (numpy reports its data buffers to it) and, where
/proc exists, of the resident set.  A leak of one small array per call would exceed the bounds many
times over.
"""
import gc
import os
import sys
import tracemalloc

import numpy as np
import pytest

import pooling
from conftest import make_any_array, make_array, to_nhwc

REPEATS = 2000
TRACED_BOUND = 64 * 1024         # bytes of Python/numpy memory 2000 calls may leave behind
RSS_BOUND = 8 * 1024 * 1024      # bytes of resident memory


def _rss():
    """Anonymous resident memory in bytes (RssAnon: what malloc, numpy and the kernels' scratch hold),
    or None without /proc or under AddressSanitizer (tools/sanitize.sh), whose quarantine keeps freed
    memory resident on purpose.  File-backed pages (the code of numpy, libgomp, this extension) are
    left out: a busy machine evicts them and the next call faults them back in, which moved the total
    resident set by 11 MB between two runs of the same calls on a CI machine, with no leak."""
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _growth(calls, repeats=REPEATS, warmup=200, settle=False):
    """(traced bytes, anonymous resident bytes or None) left behind by `repeats` rounds of `calls`, after `warmup`."""
    def run(rounds):
        for k in range(rounds):
            call = calls[k % len(calls)]
            try:
                call()
            except (ValueError, TypeError):
                pass

    run(warmup)
    tracemalloc.start()
    try:
        run(warmup)  # tracemalloc's own first allocations are not the library's
        if settle:
            # A leak grows with every call; what the first calls leave behind
            # (allocator pools, more of them under ASan) does not.  So the
            # bounds apply to the second of two equal runs.
            run(repeats)
        gc.collect()
        traced0, rss0 = tracemalloc.get_traced_memory()[0], _rss()
        run(repeats)
        gc.collect()
        traced, rss1 = tracemalloc.get_traced_memory()[0] - traced0, _rss()
    finally:
        tracemalloc.stop()
    return traced, None if rss0 is None else rss1 - rss0


def _check(calls, repeats=REPEATS, warmup=200, settle=False):
    traced, rss = _growth(calls, repeats, warmup, settle)
    assert traced < TRACED_BOUND, f"{traced} bytes still traced after {repeats} calls"
    if rss is not None:
        assert rss < RSS_BOUND, f"resident set grew by {rss} bytes over {repeats} calls"


def _raises(call):
    def checked():
        with pytest.raises((ValueError, TypeError)):
            call()
    return checked


rng = np.random.default_rng(31)
X = make_array(rng, (2, 3, 17, 16), "float32")
X8 = make_array(rng, (1, 2, 9, 8, 7), "int8")
XH = to_nhwc(make_array(rng, (2, 5, 12, 11), "bfloat16"))
X_SWAPPED = X.astype(">f4")
Y, I = pooling.max_pool(X, 2, strides=2, return_indices=True)
COLS = make_any_array(rng, (2, 8, 20), "float16")


MAX_POOL_CALLS = [
    lambda: pooling.max_pool(X, 3, strides=2, pads=1),
    lambda: pooling.max_pool(X, 2, return_indices=True, storage_order=1),
    lambda: pooling.max_pool(X8, (2, 3, 2), return_indices=True, activation="Clip", activation_params=[-3, 9]),
    lambda: pooling.max_pool(XH, 3, layout="NHWC", return_indices=True, n_threads=2),
    lambda: pooling.max_pool(X[..., None, None], (2, 2, 1, 1), return_indices=True),   # rank 4: staged
    lambda: pooling.max_pool(X_SWAPPED, 2),                                             # converted copy
    # Errors, some after an allocation (the copy of a byte-swapped input, the output array).
    _raises(lambda: pooling.max_pool(X, 30)),
    _raises(lambda: pooling.max_pool(X_SWAPPED, 2, n_threads=0)),
    _raises(lambda: pooling.max_pool(X, 2, indices_out=np.empty((2, 3, 16, 15), np.int64))),
    _raises(lambda: pooling.max_pool(X, 2, out=np.empty((1,), np.float32))),
    _raises(lambda: pooling.max_pool(np.zeros(X.shape, np.int16), 2, opset=22)),
    lambda: pooling.max_pool(np.zeros(X.shape, np.uint32), 3, strides=2, return_indices=True),
    lambda: pooling.max_pool(np.zeros(X.shape, bool), 2),
    _raises(lambda: pooling.max_pool(X, [2, 2.5])),
    _raises(lambda: pooling.max_pool(X, 2, activation="Clip", activation_params=[2, 1])),
]

MAX_UNPOOL_CALLS = [
    lambda: pooling.max_unpool(Y, I, 2, strides=2, output_shape=X.shape),
    lambda: pooling.max_unpool(Y, I.astype(np.uint32), 2, strides=2, n_threads=2),
    lambda: pooling.max_unpool(Y.astype(">f4"), I[:, ::-1], 2, strides=2, output_shape=X.shape),
    lambda: pooling.max_unpool(to_nhwc(Y), to_nhwc(I), 2, strides=2, layout="NHWC"),
    # A bad index found by the kernel after y is allocated and partly written.
    _raises(lambda: pooling.max_unpool(Y, np.where(I == I.max(), -1, I), 2, strides=2)),
    _raises(lambda: pooling.max_unpool(Y, I.astype(np.uint64) + np.uint64(2**63), 2, strides=2)),
    _raises(lambda: pooling.max_unpool(Y.astype(">f4"), I.astype(np.float32), 2, strides=2)),
    _raises(lambda: pooling.max_unpool(Y, I, 2, strides=2, output_shape=(1, 3, 4, 4))),
    _raises(lambda: pooling.max_unpool(Y, I[..., :1], 2)),
]

COL2IM_CALLS = [
    lambda: pooling.col2im(COLS, (5, 6), (2, 2), strides=(1, 1), pads=(0, 0, 0, 0)),
    lambda: pooling.col2im(COLS.astype(np.complex64), (5, 6), (2, 2), n_threads=2),
    lambda: pooling.col2im(COLS.astype(">f8"), (5, 6), (2, 2)),
    lambda: pooling.col2im(COLS > 0, (5, 6), (2, 2)),
    _raises(lambda: pooling.col2im(COLS, (5, 7), (2, 2))),
    _raises(lambda: pooling.col2im(COLS.astype(">f8"), (5, 6), (2, 2), n_threads=1.5)),
    _raises(lambda: pooling.col2im(COLS.astype(str), (5, 6), (2, 2))),
    _raises(lambda: pooling.col2im(COLS, (5, 6), (2, 2), out=np.empty((2, 2, 5, 6), np.float32))),
]


@pytest.mark.parametrize("calls", [MAX_POOL_CALLS, MAX_UNPOOL_CALLS, COL2IM_CALLS],
                         ids=["max_pool", "max_unpool", "col2im"])
def test_repeated_calls_do_not_grow_the_process(calls):
    _check(calls, settle=True)


def test_error_paths_release_their_inputs():
    """Calls that raise keep no reference to their arguments (no traceback or cache holds them)."""
    x, idx = X.copy(), I.copy()
    failing = [
        lambda: pooling.max_pool(x, 40),
        lambda: pooling.max_pool(x, 2, out=np.empty(1)),
        lambda: pooling.max_unpool(x[:, :, ::2, ::2][:, :, :8, :8], np.where(idx == 0, -1, idx), 2, strides=2),
        lambda: pooling.max_unpool(x[:, :, :8, :8], idx.astype(np.float64), 2),
        lambda: pooling.col2im(x, (4, 4), (2, 2)),
    ]
    counts = (sys.getrefcount(x), sys.getrefcount(idx))
    for _ in range(50):
        for call in failing:
            with pytest.raises((ValueError, TypeError)):
                call()
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(idx)) == counts


def test_new_dtypes_and_attributes_do_not_grow_the_caches():
    """Plans and dtype lookups are cached, boundedly: an endless stream of new attribute values or
    new (structured) dtypes must not grow the process.  The dtype caches had no bound: every
    distinct dtype ever passed stayed in memory."""
    x = np.zeros((1, 1, 6), np.float32)
    counter = iter(range(10**9))

    def new_dtype():
        k = next(counter)
        return pooling.max_pool(np.zeros((1, 1, 2), np.dtype([(f"f{k}", "u1")])), 1)

    # Values cycle with periods past every cache's size, so that each call misses, while what
    # an entry holds (shapes, tap tables) stays the same size.
    def new_attributes():
        k = next(counter)
        return pooling.max_pool(x, 1, pads=(k % 41, k // 41 % 41))

    def new_output_shape():
        k = next(counter)
        return pooling.max_unpool(x, np.zeros(x.shape, np.int64), 1, output_shape=(1, 1, 1 + k % 1000))

    def new_image():
        k = next(counter)
        return pooling.col2im(np.zeros((1, 1, 1), np.int8), (1 + k % 1000,), (1,), strides=1 + k % 1000)

    for call in (new_dtype, new_attributes, new_output_shape, new_image):
        # Warm up past every cache's size (512 plans), so that from then on each entry evicts one.
        _check([call], warmup=1200, repeats=3000)
