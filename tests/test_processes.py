"""Processes and threads: fork safety and threadpoolctl's reach (docs/threads.md, "Processes, threads and
other libraries"; the README's "Processes and threads" sums it up).

OpenMP's worker threads do not survive fork, but GNU libgomp's record of them does: when the kernels
ran on OpenMP teams, a child made by fork after the parent ran a threaded kernel waited forever for a
team that did not exist. The kernels' own pool (include/pooling_pool.h) forgets its workers in the
child and starts new ones. Each case runs in a subprocess with a time limit, so a hang fails the test
instead of stalling the suite.
"""
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

import pooling
from pooling._threads import resolve_n_threads

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")

# Far above what any case needs (a few seconds), far below a stuck CI job.
TIME_LIMIT = 120

# Work for each operator, big enough that the default call runs threaded, with results the parent
# computes before any process is made. `run(name)` runs one: every process computes the same thing.
JOBS = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    import pooling
    from pooling._threads import resolve_n_threads

    def inputs():
        rng = np.random.default_rng(7)
        x = rng.standard_normal((4, 16, 60, 60)).astype(np.float32)
        y, i = pooling.max_pool(x, 2, strides=2, return_indices=True, n_threads=1)
        cols = rng.standard_normal((2, 9 * 8, 40 * 40)).astype(np.float32)
        return x, y, i, cols

    X, Y, I, COLS = inputs()

    def run(name, n_threads=None):
        if name == "max_pool":
            y, i = pooling.max_pool(X, 3, strides=2, pads=1, return_indices=True, n_threads=n_threads)
            return np.concatenate([y.ravel().view(np.uint32).astype(np.int64), i.ravel()])
        if name == "max_pool_3d":
            return pooling.max_pool(X.reshape(4, 16, 6, 10, 60), 3, strides=2, pads=1, n_threads=n_threads)
        if name == "max_unpool":
            return pooling.max_unpool(Y, I, 2, strides=2, output_shape=X.shape, n_threads=n_threads)
        if name == "col2im":
            return pooling.col2im(COLS, (40, 40), (3, 3), pads=1, n_threads=n_threads)
        raise ValueError(name)

    NAMES = ("max_pool", "max_pool_3d", "max_unpool", "col2im")

    def all_results(n_threads=None):
        return [run(name, n_threads) for name in NAMES]

    def same(a, b):
        return all(p.dtype == q.dtype and p.shape == q.shape and p.tobytes() == q.tobytes()
                   for p, q in zip(a, b))

    def task(k):
        # In a worker process: every operator, default and explicit thread counts.
        big = resolve_n_threads("MaxPool", None, 1 << 30)
        return k, big, pooling.max_threads(), all_results(None), all_results(2)
""")


def run_script(tmp_path, body, env=None):
    """Run JOBS + body as a script in its own session; kill the whole group if it outlives TIME_LIMIT."""
    (tmp_path / "jobs.py").write_text(JOBS)
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, OMP_NUM_THREADS="2", PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]), **(env or {}))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and every process it made
        out, err = proc.communicate()
        pytest.fail(f"hung for {TIME_LIMIT} s (a deadlocked child?)\nstdout:\n{out}\nstderr:\n{err[-3000:]}")
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    return out


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_process_pool_after_threaded_calls_in_the_parent(tmp_path, method):
    """The issue's program: the parent pools with threads, then a process pool pools again. Every
    worker's results equal the parent's, bit for bit, with the default thread count of a fresh
    process (two here)."""
    out = run_script(tmp_path, f"""
        import multiprocessing as mp
        from jobs import *

        if __name__ == "__main__":
            assert resolve_n_threads("MaxPool", None, 1 << 30) == 2
            expected = all_results(2)                  # the parent's team exists from here on
            assert same(all_results(None), expected)
            context = mp.get_context({method!r})
            if {method!r} == "forkserver":
                context.set_forkserver_preload(["jobs"])  # pooling is imported before the server forks
            with context.Pool(2) as pool:
                answers = pool.map(task, range(6))
            for k, big, most, default, two in answers:
                assert same(default, expected) and same(two, expected), k
                print(big, most)
            assert same(all_results(None), expected)   # the parent keeps its threads
            assert resolve_n_threads("MaxPool", None, 1 << 30) == 2
            print("ok")
    """)
    lines = out.split()
    assert lines[-1] == "ok"
    counts = {tuple(map(int, pair)) for pair in zip(lines[:-1:2], lines[1:-1:2])}
    assert counts == {(2, 2)}


def test_os_fork_child_computes_with_threads_of_its_own(tmp_path):
    """A raw os.fork() after threaded calls: the child computes everything with new workers, from the
    forking thread and from a thread it starts; the parent goes on with its own."""
    out = run_script(tmp_path, """
        from jobs import *

        expected = all_results(2)
        pid = os.fork()
        if pid == 0:
            ok = (same(all_results(None), expected) and same(all_results(2), expected)
                  and same(all_results(-1), expected) and pooling.max_threads() == 2
                  and resolve_n_threads("MaxPool", None, 1 << 30) == 2)
            seen = {}
            def in_a_new_thread():
                seen["n"] = resolve_n_threads("MaxPool", None, 1 << 30)
                seen["same"] = same(all_results(None), expected)
            t = threading.Thread(target=in_a_new_thread)
            t.start()
            t.join()
            ok = ok and seen == {"n": 2, "same": True} and same(all_results(None), expected)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert resolve_n_threads("MaxPool", None, 1 << 30) == 2 and pooling.max_threads() == 2
        assert same(all_results(None), expected)
        print("ok")
    """)
    assert out.split()[-1] == "ok"


def test_a_grandchild_forked_from_a_child_thread(tmp_path):
    """Fork from a thread that is not the main one, in a process that was itself forked, each after
    threaded calls: the grandchild's results hold."""
    out = run_script(tmp_path, """
        from jobs import *

        expected = all_results(2)
        if os.fork() == 0:
            status = {}
            def fork_again():
                all_results(2)                         # this thread's own team exists now
                pid = os.fork()
                if pid == 0:
                    os._exit(0 if same(all_results(None), expected) and same(all_results(2), expected) else 3)
                status["grandchild"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            t = threading.Thread(target=fork_again)
            t.start()
            t.join()
            os._exit(status["grandchild"])
        assert os.waitstatus_to_exitcode(os.wait()[1]) == 0
        print("ok")
    """)
    assert out.split()[-1] == "ok"


def test_fork_while_another_thread_is_inside_a_call(tmp_path):
    """fork() from the main thread while a Python thread is in the middle of threaded calls: the
    child owns no pool (the owner does not exist there) and computes with new workers."""
    out = run_script(tmp_path, """
        from jobs import *

        expected = all_results(2)
        stop = threading.Event()
        def keep_calling():
            while not stop.is_set():
                run("max_pool", 2)
        t = threading.Thread(target=keep_calling)
        t.start()
        try:
            for _ in range(20):
                pid = os.fork()
                if pid == 0:
                    os._exit(0 if same(all_results(2), expected) else 3)
                assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        finally:
            stop.set()
            t.join()
        print("ok")
    """)
    assert out.split()[-1] == "ok"


def test_threadpool_limits_reach_the_calling_thread_only():
    """threadpoolctl sets OpenMP's thread count of the thread that enters it (OpenMP keeps the count
    per thread): default calls there run on one thread, other threads keep the default, and a worker
    thread is limited by entering threadpool_limits itself."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not pooling.openmp_enabled():
        pytest.skip("serial build")
    default = pooling.max_threads()
    seen = {}

    def other(key, limit=None):
        if limit is None:
            seen[key] = (pooling.max_threads(), resolve_n_threads("MaxPool", None, 1 << 30))
        else:
            with threadpoolctl.threadpool_limits(limits=limit, user_api="openmp"):
                seen[key] = (pooling.max_threads(), resolve_n_threads("MaxPool", None, 1 << 30))

    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert pooling.max_threads() == 1 and resolve_n_threads("MaxPool", None, 1 << 30) == 1
        for key, limit in (("unlimited", None), ("limited", 1)):
            t = threading.Thread(target=other, args=(key, limit))
            t.start()
            t.join()
    assert seen == {"unlimited": (default, default), "limited": (1, 1)}
    assert pooling.max_threads() == default


def test_torch_set_num_threads_sets_the_default_of_the_calling_thread():
    """docs/threads.md, "Processes, threads and other libraries": where torch loads the same OpenMP
    runtime as pooling, torch.set_num_threads(n) is the calling thread's OpenMP count, so pooling's
    default follows it; an explicit n_threads does not. In a subprocess: torch's setting is process-wide state."""
    pytest.importorskip("torch")
    if not pooling.openmp_enabled() or pooling.max_threads() < 2 or not sys.platform.startswith("linux"):
        pytest.skip("needs a threaded build, two cores and /proc/self/maps")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, torch, pooling
        from pooling._threads import resolve_n_threads
        maps = open("/proc/self/maps").read().split("\\n")
        runtimes = {os.path.realpath(line.split()[-1]) for line in maps if "libgomp" in line}
        torch.set_num_threads(1)
        print(len(runtimes), pooling.max_threads(), resolve_n_threads("MaxPool", None, 1 << 30),
              resolve_n_threads("MaxPool", 2, 1 << 30))
    """)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    runtimes, default, resolved, explicit = map(int, out.stdout.split())
    assert explicit == 2
    if runtimes == 1:  # one libgomp: one per-thread count
        assert (default, resolved) == (1, 1)
    else:
        assert (default, resolved) == (pooling.max_threads(),) * 2
