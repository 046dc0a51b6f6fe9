"""Many Python threads calling every operator at once (SPEC 4: the GIL is released while a kernel runs).

Results must be bit-identical to serial calls for n_threads 1 and 2, and no call may change state
another call can see: plan caches are shared and evicted under load, module-level tables stay as they
were.
"""
import copy
import importlib
import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import pooling
from conftest import assert_same, make_any_array, make_array, to_nhwc

WORKERS = 8


def _jobs():
    """(name, call(n_threads)) for every operator, layout and kernel path, some above the serial
    cut-off (2**15 elements) so that n_threads=2 really splits the work."""
    rng = np.random.default_rng(21)
    jobs = []
    for kind, shape in (("float32", (2, 4, 96, 90)), ("int8", (1, 3, 70, 71)), ("bfloat16", (1, 2, 9000)),
                        ("float16", (1, 2, 20, 21, 22)), ("uint8", (1, 2, 9, 8, 10, 9)), ("float64", (3, 2, 7, 6))):
        x = make_array(rng, shape, kind)
        n = len(shape) - 2
        attrs = dict(kernel_shape=(3,) * n, strides=(2,) * n, pads=(1,) * (2 * n), ceil_mode=1)
        jobs.append((f"max_pool-{kind}-{n}d", lambda nt, x=x, a=attrs: pooling.max_pool(
            x, return_indices=True, storage_order=1, n_threads=nt, **a)))
        xh = to_nhwc(x)
        jobs.append((f"max_pool-nhwc-{kind}-{n}d", lambda nt, x=xh, a=attrs: pooling.max_pool(
            x, return_indices=True, layout="NHWC", activation="Relu", n_threads=nt, **a)))
        y, i = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
        jobs.append((f"max_unpool-{kind}-{n}d", lambda nt, y=y, i=i, a=attrs, s=x.shape: pooling.max_unpool(
            y, i, a["kernel_shape"], strides=a["strides"], pads=a["pads"], output_shape=s, n_threads=nt)))
        yh, ih = pooling.max_pool(xh, return_indices=True, layout="NHWC", n_threads=1, **attrs)
        jobs.append((f"max_unpool-nhwc-{kind}-{n}d", lambda nt, y=yh, i=ih, a=attrs, s=xh.shape: pooling.max_unpool(
            y, i, a["kernel_shape"], strides=a["strides"], output_shape=s, layout="NHWC", n_threads=nt)))
    # Indices that cross planes: the ordered serial pass, with duplicates.
    x = make_array(rng, (2, 3, 60, 60), "float32")
    cross = rng.integers(0, x.size, size=x.shape)
    jobs.append(("max_unpool-cross", lambda nt: pooling.max_unpool(x, cross, 1, n_threads=nt)))
    for kind in ("float32", "float16", "bfloat16", "int64", "bool", "complex128"):
        cols = make_any_array(rng, (2, 2 * 9, 59 * 30), kind)
        jobs.append((f"col2im-{kind}", lambda nt, c=cols: pooling.col2im(
            c, (60, 60), (3, 3), strides=(1, 2), pads=(0, 1, 1, 0), n_threads=nt)))
    return jobs


def _same(a, b):
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            assert_same(u, v)
    else:
        assert_same(a, b)


def test_every_operator_from_many_threads_at_once():
    jobs = _jobs()
    serial = {name: call(1) for name, call in jobs}
    work = [(name, call, nt) for name, call in jobs for nt in (1, 2) for _ in range(8)]
    random.Random(0).shuffle(work)
    barrier = threading.Barrier(WORKERS)

    def start():
        barrier.wait(timeout=60)  # every worker exists before the first call: they really overlap

    with ThreadPoolExecutor(max_workers=WORKERS, initializer=start) as pool:
        futures = [(name, pool.submit(call, nt)) for name, call, nt in work]
        for name, future in futures:
            _same(future.result(timeout=300), serial[name])


def _module_tables():
    """Every module-level container of the package (the lookup tables calls read)."""
    tables = {}
    for name, module in sorted(sys.modules.items()):
        if name == "pooling" or name.startswith("pooling."):
            for attr, value in vars(module).items():
                if isinstance(value, (dict, list, set, np.ndarray)) and not attr.startswith("__"):
                    tables[f"{name}.{attr}"] = value
    return tables


def test_interleaved_attributes_and_dtypes_share_no_mutable_state():
    """Eight threads cycle through more distinct calls than the plan caches hold (so entries are
    evicted while others use them), a ninth keeps clearing every cache: each call still gives its
    own serial result, and no module-level table changes."""
    from pooling import _dtypes, _maxpool_strategies, maxpool, maxunpool

    col2im = importlib.import_module("pooling.col2im")  # the package's `col2im` is the function
    rng = np.random.default_rng(22)
    calls = []
    for k in range(700):  # > the 512 plans each operator caches
        kind = ("float32", "int8", "float16", "bfloat16", "uint8", "float64")[k % 6]
        n = 1 + k % 3
        spatial = tuple(4 + (k + i) % 5 for i in range(n))
        layout = "NCHW" if k % 4 else "NHWC"
        shape = (1 + k % 2,) + ((1 + k % 3,) + spatial if layout == "NCHW" else spatial + (1 + k % 3,))
        x = make_array(rng, shape, kind)
        attrs = dict(kernel_shape=tuple(1 + (k + i) % 3 for i in range(n)), strides=1 + k % 2,
                     pads=(k % 2,) * (2 * n), layout=layout)
        calls.append(lambda nt, x=x, a=attrs: pooling.max_pool(x, return_indices=True, n_threads=nt, **a))
        y, i = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
        i = np.maximum(i, 0)  # an empty window's -1 is no index to unpool
        calls.append(lambda nt, y=y, i=i, a=attrs, s=x.shape: pooling.max_unpool(
            y, i, a["kernel_shape"], strides=a["strides"], pads=a["pads"], layout=a["layout"], output_shape=s,
            n_threads=nt))
        cols = make_any_array(rng, (1, 2 * (1 + k % 3), 5 + k % 7), ("int32", "float16", "bool")[k % 3])
        calls.append(lambda nt, c=cols, m=1 + k % 3, L=5 + k % 7: pooling.col2im(
            c, (m, L), (m, 1), n_threads=nt))
    tables = _module_tables()
    before = copy.deepcopy(tables)
    caches = [maxpool._plan, _maxpool_strategies.launch, _maxpool_strategies._activation_bounds,
              maxunpool._plan, col2im._plan, _dtypes._kind, _dtypes.result_dtype]
    for cache in caches:
        cache.cache_clear()
    serial = [call(1) for call in calls]
    stop = threading.Event()

    def clear_caches():
        while not stop.is_set():
            for cache in caches:
                cache.cache_clear()

    def worker(offset):
        order = list(range(len(calls)))
        random.Random(offset).shuffle(order)
        for j in order:
            _same(calls[j](1 + (j + offset) % 2), serial[j])

    clearer = threading.Thread(target=clear_caches)
    clearer.start()
    try:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            for future in [pool.submit(worker, k) for k in range(WORKERS)]:
                future.result(timeout=600)
    finally:
        stop.set()
        clearer.join()
    after = _module_tables()
    assert after.keys() == before.keys()
    for name, value in before.items():
        assert after[name] is tables[name], f"{name} was rebound"
        if isinstance(value, np.ndarray):
            assert_same(after[name], value)
        else:
            assert after[name] == value, f"{name} changed"


def test_cached_plans_are_immutable():
    """What the caches hand every caller cannot be written: tuples and read-only arrays only."""
    from pooling import maxpool, maxunpool

    col2im = importlib.import_module("pooling.col2im")
    pooling.col2im(np.ones((1, 4, 6)), (3, 4), (2, 2))
    pooling.max_pool(np.ones((1, 1, 4, 4)), 2)
    pooling.max_unpool(np.ones((1, 1, 2)), np.zeros((1, 1, 2), np.int64), 2)
    plans = [col2im._plan((1, 4, 6), image_shape=(3, 4), block_shape=(2, 2), strides=None, pads=None,
                          dilations=None, opset=None),
             maxpool._plan((1, 1, 4, 4), kernel_shape=2, strides=None, pads=None, dilations=None,
                           auto_pad="NOTSET", ceil_mode=False, storage_order=0, return_indices=False,
                           layout="NCHW", activation=None, activation_params=None, opset=None,
                           index_format="onnx"),
             maxunpool._plan((1, 1, 2), kernel_shape=2, strides=None, pads=None, output_shape=None,
                             layout="NCHW", opset=None)]
    for plan in plans:
        for field in plan:
            if isinstance(field, np.ndarray):
                assert not field.flags.writeable
            else:
                assert isinstance(field, (tuple, int, str, type(None))), (type(plan).__name__, field)
