"""Build and run-time facts, printed with bug reports."""
import platform
import sys

import numpy as np

from . import _core
from ._version import __version__


def openmp_enabled():
    """True when the kernels were compiled with OpenMP (else they run on one thread)."""
    return _core.openmp_enabled()


def max_threads():
    """The thread count n_threads=None resolves to now."""
    return _core.max_threads()


def config_lines():
    info = _core.build_info()
    return [
        f"pooling-kernels {__version__}",
        f"python          {sys.version.split()[0]} ({platform.machine()}, {platform.system()})",
        f"numpy           {np.__version__}",
        f"compiler        {info['compiler']}",
        f"openmp          {'yes' if openmp_enabled() else 'no (serial build)'}",
        f"max threads     {max_threads()}",
        f"simd            baseline {info['simd_baseline']}; no run-time dispatch yet",
    ]


def show_config(file=None):
    """Print the version, compiler, OpenMP, thread count and SIMD paths of this build."""
    print("\n".join(config_lines()), file=file or sys.stdout)
