"""Build and run-time facts, printed with bug reports."""
from __future__ import annotations

import ctypes
import os
import platform
import sys
from typing import TYPE_CHECKING

import numpy as np

from . import _caches, _dispatch, _runtime, _tuning
from ._dispatch import core as _core
from ._version import __version__

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

try:
    from ._build_info import BUILD_INFO
except ImportError:  # setup.py writes it next to the extension; an older build lacks it
    BUILD_INFO = {}


def openmp_enabled() -> bool:
    """Whether the kernels were compiled with OpenMP.

    Returns
    -------
    bool
        True when the kernels were built with OpenMP; False for a serial build, where every call
        runs on the calling thread whatever `n_threads` says.

    See Also
    --------
    max_threads, show_config

    Examples
    --------
    >>> import pooling
    >>> pooling.openmp_enabled() in (True, False)
    True
    """
    return _runtime.openmp_enabled()


def max_threads() -> int:
    """The thread count that ``n_threads=None`` resolves to in the calling thread now.

    Returns
    -------
    int
        OpenMP's maximum for the calling thread: ``OMP_NUM_THREADS`` (read when the OpenMP runtime
        loads), or threadpoolctl's limit where it was set from this thread (OpenMP keeps the count
        per thread). 1 in a build without OpenMP.

    See Also
    --------
    openmp_enabled, show_config

    Notes
    -----
    ``n_threads=-1`` also means this many threads, and ``n_threads=-k`` ``max_threads() + 1 - k``
    (at least 1). docs/behaviour.md, section 5, has the rules.

    Examples
    --------
    >>> import pooling
    >>> pooling.max_threads() >= 1
    True
    """
    return _runtime.max_threads()


def release_memory() -> int:
    """Free the memory of large results that `pooling` holds for reuse.

    A result of 32 MiB or more that is freed keeps its memory in `pooling` (at most 4 blocks and
    256 MiB in all by default, ``POOLING_RESULT_CACHE_MB``), and the next result of exactly that
    size reuses it instead of fresh pages from the system, which the system must zero first. This
    frees those blocks now; later results are kept again.

    Returns
    -------
    int
        The bytes freed.

    See Also
    --------
    show_config : prints the limit and what is held now.

    Notes
    -----
    docs/behaviour.md, section "Memory", has the rules: only `pooling`'s own results are kept,
    never the caller's arrays, and not where another numpy memory handler is in use.

    Examples
    --------
    >>> import pooling
    >>> pooling.release_memory() >= 0
    True
    """
    return _runtime.release_kept()


def _keep_limit_from_environment() -> None:
    """Apply POOLING_RESULT_CACHE_MB (a whole number of MiB, 0 keeps nothing) once, at import."""
    text = os.environ.get("POOLING_RESULT_CACHE_MB", "").strip()
    if not text:
        return
    if not (text.isascii() and text.isdecimal()) or int(text) >= 1 << 40:
        raise ImportError(f"pooling: POOLING_RESULT_CACHE_MB must be a whole number of MiB, got {text!r}")
    _runtime.set_keep_limit(int(text) << 20)


_keep_limit_from_environment()


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def openmp_runtime():
    """Path of the OpenMP runtime library that pooling._runtime (the thread pool and the OpenMP
    queries) calls, or None.

    None for a serial build, and where the library cannot be located (Windows,
    or a libc without dladdr). A wheel's own copy (pooling_kernels.libs/ on
    Linux, pooling/.dylibs/ on macOS) shows that the vendored runtime is in use
    and not a system one.
    """
    if not openmp_enabled() or os.name != "posix":
        return None
    try:
        # dlsym on the extension's own handle searches the extension and then the
        # libraries it links, which finds the runtime that provides omp_*.
        symbol = ctypes.CDLL(_runtime.__file__).omp_get_max_threads
        address = ctypes.cast(symbol, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    for libc in (None, "libdl.so.2"):  # glibc < 2.34 keeps dladdr in libdl
        try:
            dladdr = ctypes.CDLL(libc).dladdr
            break
        except (OSError, AttributeError):
            continue
    else:
        return None
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    dladdr.restype = ctypes.c_int
    info = _DlInfo()
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(os.fsdecode(info.dli_fname))


def _c_flags():
    """Every flag the C compiler got: its command (with $CFLAGS) plus setup.py's additions."""
    if not BUILD_INFO:
        return None
    return [*BUILD_INFO["compiler_command"][1:], *BUILD_INFO["extra_compile_args"]]


_THREAD_RUNTIMES = {
    "pool": "work-claiming pool (the caller never waits for a worker that has not started)",
    "openmp": "OpenMP loops",
    "none": "none: every call runs on the calling thread",
}


def config_lines():
    info = _core.build_info()
    flags = _c_flags()
    runtime = openmp_runtime()
    if not openmp_enabled():
        runtime_line = "none (serial build)"
    elif runtime is None:
        runtime_line = "not located on this platform"
    else:
        runtime_line = runtime
    return [
        f"pooling-kernels {__version__}",
        f"python          {sys.version.split()[0]} ({platform.machine()}, {platform.system()})",
        f"numpy           {np.__version__}",
        f"compiler        {info['compiler']}",
        f"openmp          {'yes' if openmp_enabled() else 'no (serial build)'}",
        f"openmp runtime  {runtime_line}",
        f"max threads     {max_threads()}",
        f"thread runtime  {_THREAD_RUNTIMES[info.get('threads', 'openmp')]}",
        f"result cache    {_result_cache_line()}",
        f"caches          {_caches.describe()}",
        f"simd            baseline {_dispatch._baseline.build_info()['simd_baseline']}; "
        f"run-time choice of {', '.join(_dispatch.available)}; in use: {_dispatch.level}"
        + _simd_exceptions(),
        f"vector code     {_vector_line(_dispatch.core.build_info())}",
        f"cpu settings    {_settings_line()}",
        f"c flags         {' '.join(flags) if flags is not None else 'not recorded by this build'}",
        f"cython          {BUILD_INFO.get('cython', 'not recorded by this build')}",
    ]


def _settings_line():
    """The kernel settings this CPU model takes instead of their defaults (_tuning.SETTINGS)."""
    rules = _tuning.active_settings()
    if not rules:
        return "the defaults (no setting measured otherwise on this CPU model and build)"
    return "; ".join(f"{r.setting} {'on' if r.value else 'off'} (measured faster on {r.cpus.name}, "
                     f"{'/'.join(r.levels)} build)" for r in rules)


def _vector_line(info):
    """The hand-written loops' vectors in the build in use (include/pooling_simd.h)."""
    width = info["vector_bytes"]
    if width == 0:
        return "none: the hand-written loops run one value at a time (no vector extensions)"
    return f"{width * 8}-bit vectors in the hand-written loops"


def _result_cache_line():
    limit = _runtime.keep_limit()
    if limit < _runtime.KEEP_MIN_BYTES:
        return f"off (POOLING_RESULT_CACHE_MB={limit >> 20}: below one block of {_runtime.KEEP_MIN_BYTES >> 20} MiB)"
    return (f"freed results of >= {_runtime.KEEP_MIN_BYTES >> 20} MiB kept for reuse, at most "
            f"{_runtime.KEEP_BLOCKS} and {limit / (1 << 20):g} MiB (POOLING_RESULT_CACHE_MB); "
            f"holding {_runtime.kept_bytes() / (1 << 20):.1f} MiB")


def _simd_exceptions():
    """The kernels that run from the baseline or AVX-512 build beside an AVX2 one, and why (_tuning)."""
    if not _tuning.ACTIVE:
        return ""
    vendor, family, model = _runtime.cpu_id()
    kernels = "; ".join(
        f"{r.strategy.value} {'with' if r.indices else 'without'} Indices from {r.build} "
        f"(W stride {'/'.join(map(str, r.w_strides))}, {'/'.join(f'{b}-byte' for b in r.itemsizes)} types"
        + (f", inputs of {r.least_llc:g} last-level cache or more" if r.least_llc else "") + ")"
        for r in _tuning.ACTIVE)
    names = sorted({r.cpus.name for r in _tuning.ACTIVE})
    return (f"; measured faster on {', '.join(names)} ({vendor} family {family:#x} "
            f"model {model:#x}; POOLING_SIMD=avx2 runs them in AVX2): {kernels}")


def show_config(file: SupportsWrite[str] | None = None) -> None:
    """Print the version, compiler, OpenMP, thread count and SIMD paths of this build.

    One line each: the version; Python, platform and numpy; the compiler; OpenMP and the OpenMP
    runtime library in use; the maximum thread count; the thread runtime; the result cache (see
    `release_memory`); the cache sizes the speed thresholds are computed from and where they were
    read (``POOLING_CACHES`` overrides them); the SIMD baseline, the builds this CPU can run, the
    one in use and the kernels run from another on this CPU; the kernel settings this CPU takes
    instead of their defaults; the C flags; the Cython version. Please paste it
    into bug reports.

    Parameters
    ----------
    file : file-like object, optional
        Where to print: anything with a ``write(str)`` method. Default None: ``sys.stdout``.

    Returns
    -------
    None

    See Also
    --------
    openmp_enabled, max_threads

    Examples
    --------
    >>> import pooling
    >>> pooling.show_config()  # doctest: +ELLIPSIS
    pooling-kernels ...
    openmp          ...
    max threads     ...
    """
    print("\n".join(config_lines()), file=file or sys.stdout)
