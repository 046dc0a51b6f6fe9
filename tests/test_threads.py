"""n_threads (SPEC 4): results never depend on it; kernels release the GIL and run concurrently."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import pooling
from conftest import POOL_DTYPES, assert_same, make_array
from pooling._threads import chunk_size, resolve_n_threads, split_rows
from pooling._dispatch import core

# Big enough to pass the serial cut-off (2**15 input elements) and to split into
# several blocks of rows; few planes, so the split goes inside the planes too.
SHAPES = [
    ((1, 3, 150, 140), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ((1, 1, 260, 250), dict(kernel_shape=(2, 5), dilations=(3, 1), ceil_mode=1, strides=(1, 2))),
    ((8, 16, 17, 19), dict(kernel_shape=(3, 2), auto_pad="SAME_LOWER")),
    ((1, 2, 70000), dict(kernel_shape=(4,), strides=(3,), pads=(2, 5), ceil_mode=1)),
    ((2, 2, 24, 30, 28), dict(kernel_shape=(2, 3, 3), strides=(1, 2, 2), pads=(1, 0, 1, 0, 2, 1))),
    ((1, 2, 14, 13, 12, 11), dict(kernel_shape=(2, 2, 3, 2), strides=(2, 1, 2, 1), dilations=(1, 2, 1, 1))),
    ((1, 1, 400, 300), dict(kernel_shape=(3, 3), pads=(4, 4, 4, 4))),       # empty windows too
    # Over 1 MiB of float32: chunks of units / (16 threads) (smaller inputs: one chunk per thread).
    ((2, 5, 190, 150), dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
]
N_THREADS = [1, 2, 3, 5, -1, -2, None]


@pytest.mark.parametrize("kind", ["float32", "float16", "int8", "bfloat16"])
@pytest.mark.parametrize("shape, attrs", SHAPES, ids=[str(len(s) - 2) + "d_" + str(i) for i, (s, _) in
                                                       enumerate(SHAPES)])
def test_results_do_not_depend_on_n_threads(shape, attrs, kind):
    x = make_array(np.random.default_rng(len(shape)), shape, kind)
    for so in (0, 1):
        y1, i1 = pooling.max_pool(x, storage_order=so, return_indices=True, n_threads=1, **attrs)
        for nt in N_THREADS[1:]:
            y, ind = pooling.max_pool(x, storage_order=so, return_indices=True, n_threads=nt, **attrs)
            assert_same(y, y1)
            assert_same(ind, i1)
    y1 = pooling.max_pool(x, n_threads=1, activation="Relu", **attrs)
    for nt in N_THREADS[1:]:
        assert_same(pooling.max_pool(x, n_threads=nt, activation="Relu", **attrs), y1)


@pytest.mark.parametrize("kind", sorted(set(POOL_DTYPES) - {"float32", "float16", "int8", "bfloat16"}))
def test_results_do_not_depend_on_n_threads_other_dtypes(kind):
    shape, attrs = SHAPES[0]
    x = make_array(np.random.default_rng(9), shape, kind)
    y1, i1 = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
    for nt in N_THREADS[1:]:
        y, ind = pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs)
        assert_same(y, y1)
        assert_same(ind, i1)


@pytest.mark.parametrize("shape, attrs", [
    ((1, 4, 8, 8, 16, 16), dict(kernel_shape=3, pads=1)),
    ((1, 3, 16, 15, 14, 13), dict(kernel_shape=(2, 3, 2, 2), strides=(2, 1, 2, 1), dilations=(1, 1, 2, 3),
                                  pads=(0, 1, 1, 0, 1, 0, 0, 2))),
    ((1, 2, 6, 7, 8, 9, 10), dict(kernel_shape=2, strides=(1, 2, 1, 2, 1), pads=(1, 0, 1, 0, 1) * 2,
                                  ceil_mode=1)),
], ids=["4d_pads", "4d_dilations", "5d_ceil"])
def test_generic_kernel_is_deterministic_with_padding(shape, attrs):
    """Rank > 3 (the per-axis kernel) with windows clipped by padding: every run, every n_threads."""
    x = make_array(np.random.default_rng(0), shape, "float32")
    y1, i1 = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
    for _ in range(8):
        for nt in (2, 3, None):
            y, ind = pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs)
            assert_same(y, y1)
            assert_same(ind, i1)


def test_negative_n_threads_semantics():
    """None = OpenMP maximum, -1 = all, -k = max + 1 - k; at least one thread."""
    m = pooling.max_threads()
    assert isinstance(m, int) and m >= 1
    assert resolve_n_threads("MaxPool", None) == m
    assert resolve_n_threads("MaxPool", -1) == m
    for k in range(1, m + 1):
        assert resolve_n_threads("MaxPool", -k) == m + 1 - k
    assert resolve_n_threads("MaxPool", -(m + 5)) >= 1
    for n in (1, 2, 7):
        assert resolve_n_threads("MaxPool", n) == n
    assert resolve_n_threads("MaxPool", np.int64(2)) == 2
    # Every value the user may pass works and gives the same result.
    x = make_array(np.random.default_rng(4), (1, 2, 200, 200), "float32")
    expected = pooling.max_pool(x, 3, n_threads=1)
    for nt in [-k for k in range(1, m + 3)] + [np.int32(2), np.int64(-1)]:
        assert_same(pooling.max_pool(x, 3, n_threads=nt), expected)


def test_max_threads_follows_omp_num_threads():
    """n_threads=None is OpenMP's maximum at call time, which honours OMP_NUM_THREADS."""
    if not pooling.openmp_enabled():
        pytest.skip("serial build: OpenMP's maximum is 1")
    code = "import pooling; print(pooling.max_threads())"
    for value in ("1", "3"):
        env = dict(os.environ, OMP_NUM_THREADS=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True, timeout=120)
        assert out.stdout.strip() == value


@pytest.mark.parametrize("slices, rows, nt, per, items", [
    (3, 112, 2, 56, 6),   # 1x3x224x224 k3s2: two halves of each plane, three per thread
    (1, 57, 3, 19, 3),
    (4, 10, 2, 10, 4),    # whole planes share evenly already
    (6, 5, 4, 3, 12),
    (1, 1, 2, 1, 1),      # one row: nothing to share
    (5, 100, 1, 100, 5),
])
def test_small_inputs_split_into_the_fewest_even_items(slices, rows, nt, per, items):
    """Small inputs (pooling._tuning.even_split): the items are cut no finer than sharing them evenly needs (each
    item re-reads the input rows its first output row needs)."""
    assert split_rows(slices, rows, nt, even=True) == (per, items)
    assert chunk_size(items, nt) == max(1, items // (16 * nt))
    assert split_rows(slices, rows, nt, most=7, even=True)[0] == min(per, 7)


def test_a_smaller_team_than_asked_for_does_all_the_work():
    """OMP_THREAD_LIMIT=1 caps the pool as it would an OpenMP team: the caller alone must cover
    every work item of a launch made for more threads, for small and large inputs."""
    if not pooling.openmp_enabled():
        pytest.skip("serial build: no teams")
    code = textwrap.dedent(f"""
        import numpy as np, pooling
        from pooling.reference import max_pool as max_pool_reference
        for shape, attrs in {SHAPES[0]!r}, {SHAPES[-1]!r}:
            x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            want = max_pool_reference(x, return_indices=True, **attrs)
            for nt in (2, 3):
                y, i = pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs)
                assert (y == want[0]).all() and (i == want[1]).all(), (shape, nt)
        print("ok")
    """)
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


@pytest.mark.parametrize("spin_us", ["0", "100000"], ids=["workers_sleep_at_once", "workers_spin"])
def test_pool_workers_that_sleep_at_once_or_keep_spinning(spin_us):
    """POOLING_SPIN_US=0: workers sleep as soon as a call is done, so every call wakes them (or runs
    without them when they wake late); a long spin keeps them claiming. Either way every operator
    gives the one-thread result (which runs without the pool), also after pauses between calls."""
    code = textwrap.dedent(f"""
        import time
        import numpy as np, pooling
        rng = np.random.default_rng(3)
        shapes = {[s for s in SHAPES]!r}
        for i, (shape, attrs) in enumerate(shapes):
            x = rng.standard_normal(shape).astype(np.float32)
            y1, i1 = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
            for nt in (2, 3, 8):
                if i % 2:
                    time.sleep(0.003)
                y, ind = pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs)
                assert y.tobytes() == y1.tobytes() and (ind == i1).all(), (shape, nt)
        x = rng.standard_normal((4, 16, 60, 60)).astype(np.float32)
        y, ind = pooling.max_pool(x, 2, strides=2, return_indices=True)
        cols = rng.standard_normal((2, 72, 1600)).astype(np.float32)
        for nt in (2, 3, 8):
            time.sleep(0.003)
            a = pooling.max_unpool(y, ind, 2, strides=2, n_threads=nt)
            assert a.tobytes() == pooling.max_unpool(y, ind, 2, strides=2, n_threads=1).tobytes()
            b = pooling.col2im(cols, (40, 40), (3, 3), pads=1, n_threads=nt)
            assert b.tobytes() == pooling.col2im(cols, (40, 40), (3, 3), pads=1, n_threads=1).tobytes()
        print("ok")
    """)
    env = dict(os.environ, POOLING_SPIN_US=spin_us)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_workers_on_the_callers_only_cpu_leave_the_call_to_it():
    """Pinned to one CPU (taskset, a one-CPU container), every worker wakes on its caller's CPU and
    cannot move off it: it must leave the call to the caller (pool_stats counts it, no move), and
    every operator still gives the one-thread result, after pauses as back to back."""
    if core.build_info()["threads"] != "pool":
        pytest.skip("no work-claiming pool in this build")
    code = textwrap.dedent(f"""
        import os, time
        import numpy as np, pooling
        from pooling._dispatch import core
        os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
        rng = np.random.default_rng(5)
        for i, (shape, attrs) in enumerate({SHAPES!r}):
            x = rng.standard_normal(shape).astype(np.float32)
            y1, i1 = pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)
            for nt in (2, 3):
                time.sleep(0.004 * (i % 2))
                y, ind = pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs)
                assert y.tobytes() == y1.tobytes() and (ind == i1).all(), (shape, nt)
        y, ind = pooling.max_pool(rng.standard_normal((4, 16, 60, 60)).astype(np.float32), 2, strides=2,
                                  return_indices=True)
        cols = rng.standard_normal((2, 72, 1600)).astype(np.float32)
        for nt in (2, 3):
            time.sleep(0.004)
            a = pooling.max_unpool(y, ind, 2, strides=2, n_threads=nt)
            assert a.tobytes() == pooling.max_unpool(y, ind, 2, strides=2, n_threads=1).tobytes()
            b = pooling.col2im(cols, (40, 40), (3, 3), pads=1, n_threads=nt)
            assert b.tobytes() == pooling.col2im(cols, (40, 40), (3, 3), pads=1, n_threads=1).tobytes()
        stats = core.pool_stats()
        assert stats["beside_caller"] > 0 and stats["moved"] == 0, stats
        assert os.sched_getaffinity(0) == {{min(os.sched_getaffinity(0))}}
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2
                    or not os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat"),
                    reason="needs Linux CPU affinity, per-thread schedstat and two CPUs")
def test_a_spinning_worker_gives_its_cpu_to_other_work():
    """A worker spinning for the next call (POOLING_SPIN_US) yields its CPU to any other thread that wants
    it: beside a busy process on the worker's CPU, the worker runs for almost none of the pause between
    calls (a worker that spun without yielding took as much as the busy process, the scheduler's fair
    share), so the next library's threads are not slowed by pooling's idle ones.  Every share is
    compared with what a plain spinning process got over the same windows, so other load on the machine
    (CI runs an emulated build beside the tests) scales both sides alike.  Two controls: without the
    busy process the worker is runnable (on a CPU or waiting for one, schedstat's first two fields) for
    most of the pause, so it is spinning, not asleep, whatever else the machine runs; and a process that
    does nothing but sched_yield beside the busy one gets almost none of the CPU, else this kernel's
    sched_yield keeps the fair share and there is nothing to gain (skipped)."""
    if core.build_info()["threads"] != "pool":
        pytest.skip("no work-claiming pool in this build")
    code = textwrap.dedent("""
        import os, subprocess, sys, time
        import numpy as np, pooling
        cpus = sorted(os.sched_getaffinity(0))
        x = np.random.default_rng(0).standard_normal((1, 64, 112, 112)).astype(np.float32)
        before = set(os.listdir("/proc/self/task"))
        pooling.max_pool(x, 3, strides=2, n_threads=2)  # starts the one worker
        workers = sorted(set(os.listdir("/proc/self/task")) - before)
        assert len(workers) == 1, workers
        worker = f"/proc/self/task/{workers[0]}/schedstat"
        os.sched_setaffinity(0, {cpus[0]})
        os.sched_setaffinity(int(workers[0]), {cpus[1]})

        def on_cpu_ns(path, waiting=False):  # with waiting: also the time runnable, waiting for a CPU
            with open(path) as f:
                return sum(map(int, f.read().split()[:1 + waiting]))

        def pinned(loop):
            return subprocess.Popen([sys.executable, "-c",
                                     f"import os\\nos.sched_setaffinity(0, {{{cpus[1]}}})\\n{loop}"])

        def shares(*paths, waiting=False, calls=30):
            # Each path's time on a CPU over the pauses of 10 ms (inside the spin window) after calls.
            spent, window = [0] * len(paths), 0
            for _ in range(calls):
                y = pooling.max_pool(x, 3, strides=2, n_threads=2)
                start, cpu = time.perf_counter_ns(), [on_cpu_ns(p, waiting) for p in paths]
                time.sleep(0.01)
                spent = [s + on_cpu_ns(p, waiting) - c for s, p, c in zip(spent, paths, cpu)]
                window += time.perf_counter_ns() - start
            assert y.tobytes() == pooling.max_pool(x, 3, strides=2, n_threads=1).tobytes()
            return [s / window for s in spent]

        (awake,) = shares(worker, waiting=True)
        busy = pinned("while True: pass")
        try:
            time.sleep(0.3)
            yielder = pinned("y = os.sched_yield\\nwhile True: y()")
            try:
                time.sleep(0.2)
                yielding, busy_then = shares(f"/proc/{yielder.pid}/schedstat", f"/proc/{busy.pid}/schedstat")
            finally:
                yielder.kill()
            beside, busy_share = shares(worker, f"/proc/{busy.pid}/schedstat")
        finally:
            busy.kill()
        print(f"{awake:.4f} {yielding:.4f} {busy_then:.4f} {beside:.4f} {busy_share:.4f}")
    """)
    env = dict(os.environ, POOLING_SPIN_US="100000", OPENBLAS_NUM_THREADS="1")
    # Up to three measurements: a third process on the worker's CPU (the suite beside the other builds'
    # kernel tests on 2 cores) once left the worker 0.165 of the CPU to the busy process's 0.576.  A
    # worker that spins without yielding takes about the busy process's share on every one.
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        awake, yielding, busy_then, beside, busy_share = map(float, run.stdout.split())
        # Asleep, the worker would be runnable for a few percent of the pauses at most (0.00-0.03 here).
        assert awake > 0.5, f"the worker was not spinning between calls: it was runnable for {awake} of the pause"
        if yielding > 0.2 * busy_then:
            pytest.skip(f"this kernel's sched_yield keeps the fair share (a yielding process got {yielding:.3f}"
                        f" of the CPU, a busy one {busy_then:.3f})")
        if beside < 0.2 * busy_share:
            break
    assert beside < 0.2 * busy_share, \
        f"the spinning worker took {beside:.3f} of its CPU's time, the busy process beside it {busy_share:.3f}"


def test_max_threads_follows_threadpoolctl():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not pooling.openmp_enabled():
        pytest.skip("serial build")
    before = pooling.max_threads()
    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert pooling.max_threads() == 1
        assert resolve_n_threads("MaxPool", None) == 1
    assert pooling.max_threads() == before


def run_at_once(worker, args):
    """worker(a) in one Python thread per a in args, started together; the first failure is raised."""
    args = list(args)
    barrier = threading.Barrier(len(args))
    errors = []

    def run(a):
        try:
            barrier.wait(timeout=60)
            worker(a)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(a,)) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]


def test_two_python_threads_run_kernels_at_once():
    """Concurrent calls from two Python threads give the serial results (no shared scratch)."""
    rng = np.random.default_rng(8)
    jobs = []
    for i, kind in enumerate(["float32", "int8", "float16", "float64", "bfloat16", "uint8"]):
        shape = [(2, 3, 40, 37), (1, 2, 9000), (1, 2, 12, 11, 10), (1, 1, 6, 7, 5, 6)][i % 4]
        x = make_array(rng, shape, kind)
        n = len(shape) - 2
        attrs = dict(kernel_shape=(3,) * n, strides=(2,) * n, pads=(1,) * (2 * n), ceil_mode=i % 2,
                     storage_order=i % 2)
        jobs.append((x, attrs, pooling.max_pool(x, return_indices=True, n_threads=1, **attrs)))
    big = make_array(rng, (1, 4, 300, 300), "float32")
    big_expected = pooling.max_pool(big, 3, return_indices=True, n_threads=1)

    def worker(offset):
        for rep in range(40):
            x, attrs, (ey, ei) = jobs[(rep + offset) % len(jobs)]
            nt = (1, 2, None)[rep % 3]
            y, ind = pooling.max_pool(x, return_indices=True, n_threads=nt, **attrs)
            assert_same(y, ey)
            assert_same(ind, ei)
            if rep % 10 == 0:
                y, ind = pooling.max_pool(big, 3, return_indices=True, n_threads=nt)
                assert_same(y, big_expected[0])
                assert_same(ind, big_expected[1])

    run_at_once(worker, (0, 3))


def test_python_threads_never_share_kept_scratch():
    """Small calls keep their launch's scratch for the next call: four Python threads calling the
    same small MaxPool at once, each on its own data (NaN and -0.0 included), must each get their
    own results, so no two calls ever use one scratch set."""
    rng = np.random.default_rng(8)
    attrs = dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), return_indices=True, n_threads=1)
    inputs = [make_array(rng, (1, 16, 40, 40), "float16") for _ in range(4)]
    expected = [pooling.max_pool(x, **attrs) for x in inputs]
    def worker(k):
        for _ in range(300):
            y, ind = pooling.max_pool(inputs[k], **attrs)
            assert_same(y, expected[k][0])
            assert_same(ind, expected[k][1])

    run_at_once(worker, range(len(inputs)))


def test_gil_is_released_while_a_kernel_runs():
    """While one thread is inside a long kernel call, another Python thread keeps running."""
    x = make_array(np.random.default_rng(6), (1, 4, 1024, 1024), "float32")
    attrs = dict(kernel_shape=(7, 7), dilations=(2, 1), return_indices=True, n_threads=1)
    t = time.perf_counter()
    pooling.max_pool(x, **attrs)
    serial = time.perf_counter() - t

    window = {}
    started = threading.Event()
    stamps = []

    def worker():
        started.set()
        window["t0"] = time.perf_counter()
        pooling.max_pool(x, **attrs)
        window["t1"] = time.perf_counter()

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait()
    while thread.is_alive():
        stamps.append(time.perf_counter())
    thread.join()
    t0, t1 = window["t0"], window["t1"]
    length = t1 - t0
    middle = [s for s in stamps if t0 + length / 4 < s < t1 - length / 4]
    # Holding the GIL for the whole call would leave no stamps in the middle of it.
    assert len(middle) >= 10, (len(middle), length, serial)
