"""n_threads semantics shared by every operator (SPEC 4)."""
import math
import operator
import os
import threading

from ._dispatch import core as _core

# Below this many input elements the fork/join costs more than a second core
# gains (measured on the ResNet-stem MaxPool: 1x64x16x16 is ~5 us serial).
SERIAL_BELOW = 1 << 15

# Kernels split inputs up to this many bytes into one chunk of work per thread:
# each thread then takes the same part of the input on every call, still in its
# core's L2 cache from the last (this machine: 1 MiB of L2 per core).
SMALL_INPUT = 1 << 20

# An explicit n_threads above this is lowered to it (results never depend on
# n_threads).  Beyond a few threads per core a kernel only slows down, and
# asking OpenMP for ~10**5 threads exhausts the process's thread limit: the
# OpenMP runtime then crashes the process instead of failing cleanly.
MAX_N_THREADS = max(64, 4 * (os.cpu_count() or 1))


# In a child process made by fork: the thread that called fork, which is the
# child's only thread at first and the one that runs a process pool's tasks.
# It inherited the parent's OpenMP state, but not the parent's worker threads:
# GNU libgomp would hand work to a team that no longer exists and wait for it
# forever.  That thread runs every kernel serially (threads the child starts
# later get a team of their own).  None in a process not made by fork.
_forked_thread = None


def _after_fork_in_child():
    global _forked_thread
    _forked_thread = threading.get_ident()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_serial():
    """Whether this thread is the one that forked this process (its calls run serially)."""
    return _forked_thread is not None and _forked_thread == threading.get_ident()


def max_threads():
    """The thread count n_threads=None resolves to in this thread now."""
    return 1 if forked_serial() else _core.max_threads()


def resolve_n_threads(op, n_threads, work=None):
    """The thread count a kernel runs with.

    None: OpenMP's maximum now (honours OMP_NUM_THREADS and threadpoolctl);
    -1: all of them; -k: max + 1 - k (at least 1); 0: ValueError; k > 0: k, at
    most MAX_N_THREADS (or OpenMP's maximum, if that is larger).  `work`
    (elements touched) lets small calls run serial; results never depend on it.
    The thread that forked this process always gets 1 (see _forked_thread).
    """
    if n_threads is None:
        n = _core.max_threads()
    elif type(n_threads) is int and 0 < n_threads <= MAX_N_THREADS:  # the common explicit count
        n = n_threads
    else:
        n = _explicit(op, n_threads)
    if work is not None and work < SERIAL_BELOW:
        return 1
    return 1 if _forked_thread is not None and _forked_thread == threading.get_ident() else n


def _explicit(op, n_threads):
    """Any other n_threads: checked, and negative counts resolved."""
    if isinstance(n_threads, bool):
        raise TypeError(f"{op}: n_threads must be an int or None, got {n_threads!r}")
    try:
        n = operator.index(n_threads)
    except TypeError:
        raise TypeError(f"{op}: n_threads must be an int or None, got {n_threads!r}") from None
    if n == 0:
        raise ValueError(f"{op}: n_threads must be non-zero (None or -1 for all threads), got 0")
    maximum = _core.max_threads()
    return max(maximum + 1 + n, 1) if n < 0 else min(n, max(MAX_N_THREADS, maximum))


def split_rows(slices, rows, nt, most=None, even=False):
    """(rows per work item, work items): enough items to keep nt threads busy,
    each at most `most` rows (None: no limit).

    The split is over (plane x depth slice) x blocks of output rows, so that a
    few large planes still use every core; a longer block reuses more cached rows.
    even: the fewest items that nt threads share evenly, one chunk each (see
    chunk_size; 1x3x224x224 on 2 threads: 6 items of 56 rows instead of 18 of
    19, 13.3 -> 13.0 us).
    """
    per = max(rows, 1)
    if even:
        per = max(1, -(-rows // (nt // math.gcd(slices, nt))))
    elif nt > 1 and slices < 8 * nt:
        per = max(1, -(-rows // -(-8 * nt // slices)))
    if most is not None:
        per = max(1, min(per, most))
    return per, slices * -(-rows // per)


def chunk_size(items, nt, even):
    """Work items a thread takes at a time.

    even (a SMALL_INPUT): one chunk per thread.  Otherwise dynamic: on a busy
    machine a descheduled thread must not hold work the others could take; in
    chunks of about items / (16 threads), since taking items one at a time cost
    as much as the work on 2048 planes of 56x56 (no gain from a second thread).
    """
    return max(1, -(-items // nt) if even else items // (16 * nt))
