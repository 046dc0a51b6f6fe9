"""pooling: exact, fast CPU kernels for the ONNX MaxPool, MaxUnpool and Col2Im operators."""
from typing import TYPE_CHECKING

from ._config import max_threads, openmp_enabled, release_memory, show_config
from ._version import __version__
from .col2im import col2im, col2im_output_shape
from .maxpool import max_pool, max_pool_output_shape
from .indices import convert_indices
from .maxpool_grad import max_pool_grad
from .maxunpool import max_unpool, max_unpool_output_shape

__all__ = [
    "__version__",
    "col2im",
    "col2im_output_shape",
    "convert_indices",
    "max_pool",
    "max_pool_grad",
    "max_pool_output_shape",
    "max_unpool",
    "max_unpool_output_shape",
    "max_threads",
    "openmp_enabled",
    "release_memory",
    "show_config",
]


# Submodules that need an optional package (onnx, torch, dask) are imported on first use only,
# so that `import pooling` imports none of them; `pooling.torch` then works after `import pooling`.
_OPTIONAL = ("onnx", "torch", "dask")

if TYPE_CHECKING:  # for type checkers: these submodules are typed, any other unknown name is an error
    from . import dask as dask
    from . import onnx as onnx
    from . import torch as torch
else:
    def __getattr__(name):
        if name in _OPTIONAL:
            import importlib

            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module 'pooling' has no attribute {name!r}")
