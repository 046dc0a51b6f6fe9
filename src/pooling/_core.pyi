"""Type stubs for the compiled kernels (pooling._core, and pooling._core_avx2, the same kernels built for
AVX2; source src/_core.pyx and src/kernels/*.pxi). Arrays are validated by the Python layer. The helpers
that are not kernels are in pooling._runtime (_runtime.pyi)."""
import numpy as np
import numpy.typing as npt

def build_info() -> dict[str, str]: ...
def pool_stats() -> dict[str, int]: ...
class MaxPool3d:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int], y_shape: tuple[int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp], brows: int, rows_per_unit: int,
        depth_first: bool, act: int, lo: float, hi: float, inf_bits: int, n_threads: int, chunk: int,
        index: tuple[int, int, int, int, int, int],
    ) -> None: ...
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: npt.NDArray[np.int64] | None,
    ) -> None: ...
class MaxPoolPlanes:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int], y_shape: tuple[int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp], act: int, lo: float, hi: float,
        inf_bits: int, n_threads: int, chunk: int,
    ) -> None: ...
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: None,
    ) -> None: ...
class MaxPoolInterleaved:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int], y_shape: tuple[int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp], act: int, lo: float, hi: float,
        inf_bits: int, n_threads: int, chunk: int,
    ) -> None: ...
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: None,
    ) -> None: ...
class MaxPoolRows:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int], y_shape: tuple[int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp], rows: npt.NDArray[np.intp],
        act: int, lo: float, hi: float, inf_bits: int, n_threads: int, chunk: int,
    ) -> None: ...
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: None,
    ) -> None: ...
NARROW_WIDTH: int
NARROW_LANES: int
NARROW_WIDTH_H16: int
NARROW_LANES_H16: int
NARROW_WIDTH_I32: int
NARROW_LANES_I32: int
ROWS_MIN: int
ROWS_MIN_H16: int
NHWC_LANES_H16: int
NHWC_LANES_I32: int
NHWC_BLOCK: int
class MaxPoolNarrow:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int], y_shape: tuple[int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp], act: int, lo: float, hi: float,
        inf_bits: int, n_threads: int, chunk: int,
    ) -> None: ...
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: None,
    ) -> None: ...
class MaxPoolTiles:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int], y_shape: tuple[int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp], rows: int, act: int, lo: float,
        hi: float, inf_bits: int, n_threads: int, chunk: int,
    ) -> None: ...
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: None,
    ) -> None: ...
class MaxPoolNHWC:
    def __init__(
        self, ctype: str, x_shape: tuple[int, int, int, int, int], y_shape: tuple[int, int, int, int, int],
        kernel: tuple[int, int, int], strides: tuple[int, int, int], dilations: tuple[int, int, int],
        pads_begin: tuple[int, int, int], taps: npt.NDArray[np.intp],
        act: int, lo: float, hi: float, inf_bits: int, n_threads: int, chunk: int,
        index: tuple[int, int, int, int, int, int], blocks: bool = False,
    ) -> None: ...
    reports_nan: bool
    def __call__(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], indices: npt.NDArray[np.int64] | None,
        nan: bool = False,
    ) -> bool | None: ...
def max_pool_axis(
    x: npt.NDArray[np.generic], pos_in: npt.NDArray[np.int64] | None,
    y: npt.NDArray[np.generic], pos_out: npt.NDArray[np.int64] | None,
    k: int, s: int, dil: int, pad: int, act: int, lo: float, hi: float, inf_bits: int, n_threads: int,
) -> None: ...
def max_unpool(
    x: npt.NDArray[np.unsignedinteger], indices: npt.NDArray[np.int64], y: npt.NDArray[np.unsignedinteger],
    blocks: int, fused: bool, zeroed: bool, n_threads: int, relative: int = 0, C: int = 1,
) -> int: ...
def narrow_16bit(f: npt.NDArray[np.float32], out: npt.NDArray[np.uint16], inf_bits: int) -> None: ...
def col2im(
    x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], acc: npt.NDArray[np.float32] | None,
    geom: npt.NDArray[np.intp], rows_per_item: int, prefetch: bool, registers: bool, gaps: bool,
    inf_bits: int, n_threads: int, group: int = ...,
) -> None: ...
def max_pool_grad(
    g: npt.NDArray[np.generic], indices: npt.NDArray[np.int64], y: npt.NDArray[np.generic],
    acc: npt.NDArray[np.float32] | None, blocks: int, C: int, limit: int, a: int, cc: int, base: int,
    inf_bits: int, zeroed: bool, n_threads: int, groups: int = ..., rows_out: int = ..., rows_in: int = ...,
) -> int: ...
GRAD_COVER_F32: int
def max_pool_grad_windows(
    g: npt.NDArray[np.floating], indices: npt.NDArray[np.int64], y: npt.NDArray[np.floating],
    kernel: tuple[int, int, int], strides: tuple[int, int, int], pads_begin: tuple[int, int, int], n_threads: int,
) -> int: ...
