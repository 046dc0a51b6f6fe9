"""n_threads semantics shared by every operator (behaviour.md §5)."""
import math
import operator
import os

from . import _runtime

# Below this many input elements handing work to a second thread costs more than
# it gains (docs/tuning.md#serial-calls).
SERIAL_BELOW = 1 << 15

# An explicit n_threads above this is lowered to it (results never depend on
# n_threads).  Beyond a few threads per core a kernel only slows down, and
# asking OpenMP for ~10**5 threads exhausts the process's thread limit: the
# OpenMP runtime then crashes the process instead of failing cleanly.
MAX_N_THREADS = max(64, 4 * (os.cpu_count() or 1))


def resolve_n_threads(op, n_threads, work=None):
    """The thread count a kernel runs with.

    None: OpenMP's maximum now (honours OMP_NUM_THREADS and threadpoolctl);
    -1: all of them; -k: max + 1 - k (at least 1); 0: ValueError; k > 0: k, at
    most MAX_N_THREADS (or OpenMP's maximum, if that is larger).  `work`
    (elements touched) lets small calls run serial; results never depend on it.
    """
    if n_threads is None:
        n = _runtime.max_threads()
    elif type(n_threads) is int and 0 < n_threads <= MAX_N_THREADS:  # the common explicit count
        n = n_threads
    else:
        n = _explicit(op, n_threads)
    return 1 if work is not None and work < SERIAL_BELOW else n


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
    maximum = _runtime.max_threads()
    return max(maximum + 1 + n, 1) if n < 0 else min(n, max(MAX_N_THREADS, maximum))


def split_rows(slices, rows, nt, most=None, even=False):
    """(rows per work item, work items): enough items to keep nt threads busy,
    each at most `most` rows (None: no limit).

    The split is over (plane x depth slice) x blocks of output rows, so that a
    few large planes still use every core; a longer block reuses more cached rows.
    even: the fewest items that nt threads share evenly (1x3x224x224 on 2
    threads: 6 items of 56 rows instead of 18 of 19), since an item re-reads the
    rows its first output row shares with the item before (docs/tuning.md#even-work-split).
    """
    per = max(rows, 1)
    if even:
        per = max(1, -(-rows // (nt // math.gcd(slices, nt))))
    elif nt > 1 and slices < 8 * nt:
        per = max(1, -(-rows // -(-8 * nt // slices)))
    if most is not None:
        per = max(1, min(per, most))
    return per, slices * -(-rows // per)


def chunk_size(items, nt):
    """Work items per chunk, the pool's smallest claim (include/pooling_pool.h).

    A claim takes 1/(2 nt) of the chunks left, so chunks only bound how short
    the last claims get: about items / (16 threads), at least one item.  Taking
    items one at a time cost as much as the work on 2048 planes of 56x56 (no
    gain from a second thread); one long chunk per thread made a worker that
    woke late hold the caller up for half the call.
    """
    return max(1, items // (16 * nt))
