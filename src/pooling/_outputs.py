"""Result arrays: fresh ones, or the caller's `out=` buffers checked strictly."""
import numpy as np

from . import _runtime

# Results of at least this many bytes reuse freed blocks (_runtime.empty_result).
_KEEP_MIN_BYTES = _runtime.KEEP_MIN_BYTES

# Fresh results of at least this many bytes that must start as zeros may come from np.zeros
# (calloc) instead of being zeroed by the kernel: glibc maps blocks this large straight from the
# system (32 MiB is its largest dynamic mmap threshold), as zero pages that calloc need not write.
# An allocator threshold, not a cache size (docs/tuning.md#fresh-results-zeroed-by-the-system).
_FRESH_ZEROS = 32 << 20


def fresh_zeros(nbytes):
    """Whether a fresh result of `nbytes` that must start as zeros comes from np.zeros, and the
    kernel skips its own zeroing: only where no freed block of that size is held for it.  A held
    block (a loop's previous result) is warm and mapped; the kernel zeroes it plane by plane in
    cache, which beats fresh zero pages 1.3-2.4x (docs/tuning.md#fresh-results-zeroed-by-the-system)."""
    return nbytes >= _FRESH_ZEROS and not _runtime.holds_block(nbytes)


def output_array(op, name, out, shape, dtype, *others, zeros=False, aligned=False):
    """A C-contiguous array of `shape` and `dtype` to write a result into.

    `out` (optional) must be exactly that: a writeable, aligned, C-contiguous
    ndarray of the result's shape and dtype that overlaps none of the `others`,
    (what, array) pairs: the call's inputs and the results already chosen
    (the kernels store whole elements; a misaligned store is undefined in C).
    zeros: a fresh result is zero-filled (np.zeros) rather than uninitialised; only for results
    that fresh_zeros chose.
    aligned: a fresh result of any size starts on a 64-byte boundary, a cache line (results a
    kernel streams past the caches in whole lines: docs/tuning.md#result-alignment).
    """
    if out is None:
        try:
            if zeros or aligned:  # (fresh_zeros: only large results) kept when freed, as below
                return _runtime.empty_result(shape, dtype, zeros, aligned)
            y = np.empty(shape, dtype=dtype)
            if y.nbytes >= _KEEP_MIN_BYTES:
                # A large block, reused from a result freed before (docs/behaviour.md, "Memory").
                # (Allocated again: the first, never touched, is cheap; checking the size beforehand
                # cost small calls more: docs/tuning.md#call-overhead.)
                y = _runtime.empty_result(shape, dtype)
            return y
        except ValueError:
            # Fewer than 2**62 elements, but more bytes than an address holds.
            raise ValueError(
                f"{op}: the result of shape {tuple(shape)} and dtype {dtype} has more bytes "
                "than memory can address"
            ) from None
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}: {name} must be a numpy array, got {type(out).__name__}")
    if out.shape != tuple(shape) or out.dtype != dtype:
        raise ValueError(
            f"{op}: {name} must have shape {list(shape)} and dtype {dtype}, "
            f"got shape {list(out.shape)} and dtype {out.dtype}"
        )
    if not out.flags.carray:  # C-contiguous, aligned and writeable
        raise ValueError(f"{op}: {name} must be a writeable, aligned, C-contiguous array")
    for what, other in others:  # (a loop, not any(): docs/tuning.md#call-overhead)
        if np.may_share_memory(out, other):
            raise ValueError(f"{op}: {name} must not overlap {what}")
    return out
