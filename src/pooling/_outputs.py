"""Result arrays: fresh ones, or the caller's `out=` buffers checked strictly."""
import numpy as np


def output_array(op, name, out, shape, dtype, *inputs):
    """A C-contiguous array of `shape` and `dtype` to write a result into.

    `out` (optional) must be exactly that: a writeable C-contiguous ndarray of
    the result's shape and dtype that overlaps none of the `inputs`.
    """
    if out is None:
        return np.empty(shape, dtype=dtype)
    if not isinstance(out, np.ndarray):
        raise ValueError(f"{op}: {name} must be a numpy array, got {type(out).__name__}")
    if out.shape != tuple(shape) or out.dtype != dtype:
        raise ValueError(
            f"{op}: {name} must have shape {tuple(shape)} and dtype {dtype}, "
            f"got shape {out.shape} and dtype {out.dtype}"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{op}: {name} must be a writeable C-contiguous array")
    if any(np.may_share_memory(out, x) for x in inputs):
        raise ValueError(f"{op}: {name} must not overlap the input")
    return out
