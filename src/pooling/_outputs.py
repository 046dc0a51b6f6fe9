"""Result arrays: fresh ones, or the caller's `out=` buffers checked strictly."""
import numpy as np

from . import _runtime

# Results of at least this many bytes reuse freed blocks (_runtime.empty_result).
_KEEP_MIN_BYTES = _runtime.KEEP_MIN_BYTES


def output_array(op, name, out, shape, dtype, *others, zeros=False):
    """A C-contiguous array of `shape` and `dtype` to write a result into.

    `out` (optional) must be exactly that: a writeable, aligned, C-contiguous
    ndarray of the result's shape and dtype that overlaps none of the `others`,
    (what, array) pairs: the call's inputs and the results already chosen
    (the kernels store whole elements; a misaligned store is undefined in C).
    zeros: a fresh result is zero-filled (np.zeros) rather than uninitialised.
    """
    if out is None:
        try:
            if zeros:
                return np.zeros(shape, dtype=dtype)
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
