"""Type stubs for the compiled kernels (pooling._core). Arrays are validated by the Python layer."""
import numpy as np
import numpy.typing as npt

def openmp_enabled() -> bool: ...
def max_threads() -> int: ...
def build_info() -> dict[str, str]: ...
def max_pool_3d(
    x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: npt.NDArray[np.int64] | None,
    kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
    pads_begin: tuple[int, int, int], ring: int, rows_per_unit: int,
    hval: npt.NDArray[np.generic], hpos: npt.NDArray[np.int64] | None, tags: npt.NDArray[np.intp],
    act: int, lo: float, hi: float, inf_bits: int, n_threads: int,
) -> None: ...
def max_pool_axis(
    x: npt.NDArray[np.generic], pos_in: npt.NDArray[np.int64] | None,
    y: npt.NDArray[np.generic], pos_out: npt.NDArray[np.int64] | None,
    k: int, s: int, dil: int, pad: int, act: int, lo: float, hi: float, inf_bits: int, n_threads: int,
) -> None: ...
def max_unpool(
    x: npt.NDArray[np.unsignedinteger], indices: npt.NDArray[np.int64], y: npt.NDArray[np.unsignedinteger],
    blocks: int, fused: bool, n_threads: int,
) -> int: ...
