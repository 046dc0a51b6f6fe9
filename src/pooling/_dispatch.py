"""Which compiled kernels run: the baseline build, or the same kernels built for AVX2 or AVX-512.

Wheels must run on every CPU of their platform, so ``pooling._core`` is compiled
for the baseline instruction set (x86-64: the x86-64-v2 level, SSE4.2 and POPCNT, which
numpy 2.4's wheels require too; a CPU without them gets an ImportError that says so, and a
source build with ``POOLING_X86_BASELINE=x86-64`` runs there).  Where the compiler can,
setup.py also builds ``pooling._core_avx2`` from the same source with AVX2 and
FMA, and it is used when this CPU has them; and ``pooling._core_avx512`` with
AVX-512 and 512-bit vectors, whose kernels are used only where they were measured
faster on this CPU (pooling._tuning): most kernels measured no
faster or slower in it.  ``POOLING_SIMD=baseline``, ``avx2`` or ``avx512`` (read at
import) runs every kernel from that build; the tests run each build the CPU can.

Where the AVX2 build is in use, a few kernels come from the baseline build or the AVX-512
build on the CPUs where they were measured faster there: pooling._tuning's table of rules
decides which.  All builds share pooling._runtime's one thread pool, so mixing them costs
nothing.
"""
import os

from ._runtime import cpu_runs_baseline, cpu_supports_avx2, cpu_supports_avx512


def _require_baseline(runs):
    """Refuse, before it is loaded, a baseline build this CPU cannot run (it would die of SIGILL)."""
    if not runs:
        raise ImportError(
            "pooling: this build of pooling-kernels needs an x86-64-v2 CPU (SSE4.2 and POPCNT, as "
            "numpy 2.4's wheels do), and this CPU lacks them; build it from source with "
            "POOLING_X86_BASELINE=x86-64 to run here")


_require_baseline(cpu_runs_baseline())
from . import _core as _baseline  # noqa: E402  (only once the CPU can run it)

LEVELS = ("auto", "baseline", "avx2", "avx512")


def _load_avx2():
    try:
        from . import _core_avx2
    except ImportError:  # the compiler could not target AVX2
        return None
    return _core_avx2


def _load_avx512():
    try:
        from . import _core_avx512
    except ImportError:  # the compiler could not target AVX-512
        return None
    return _core_avx512


def _choose(wanted):
    if wanted not in LEVELS:
        raise ImportError(f"pooling: POOLING_SIMD must be one of {list(LEVELS)}, got {wanted!r}")
    # Ask the CPU first: each SIMD module's own initialisation is compiled for its instructions.
    if wanted == "avx512":
        wide = _load_avx512() if cpu_supports_avx512() else None
        if wide is None:
            raise ImportError("pooling: POOLING_SIMD=avx512, but this build or CPU has no AVX-512 kernels")
        return wide, "avx512"
    avx2 = None if wanted == "baseline" or not cpu_supports_avx2() else _load_avx2()
    if avx2 is not None:
        return avx2, "avx2"
    if wanted == "avx2":
        raise ImportError("pooling: POOLING_SIMD=avx2, but this build or CPU has no AVX2 kernels")
    return _baseline, "baseline"


wanted = os.environ.get("POOLING_SIMD", "auto").strip().lower() or "auto"
core, level = _choose(wanted)
available = (("baseline",) + (("avx2",) if cpu_supports_avx2() and _load_avx2() is not None else ())
             + (("avx512",) if cpu_supports_avx512() and _load_avx512() is not None else ()))



def load(name):
    """The build named "baseline", "avx2" or "avx512" (None where it cannot run here)."""
    return {"baseline": lambda: _baseline, "avx2": _load_avx2, "avx512": _load_avx512}[name]()
