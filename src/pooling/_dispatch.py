"""Which compiled kernels run: the baseline build, or the same kernels built for AVX2.

Wheels must run on every CPU of their platform, so ``pooling._core`` is compiled
for the baseline instruction set (x86-64: SSE2).  Where the compiler can,
setup.py also builds ``pooling._core_avx2`` from the same source with AVX2 and
FMA, and it is used when this CPU has them.  ``POOLING_SIMD=baseline`` (read at
import) forces the baseline build; the tests run both.
"""
import os

from . import _core as _baseline
from ._runtime import cpu_supports_avx2

LEVELS = ("auto", "baseline", "avx2")


def _load_avx2():
    try:
        from . import _core_avx2
    except ImportError:  # the compiler could not target AVX2
        return None
    return _core_avx2


def _choose(wanted):
    if wanted not in LEVELS:
        raise ImportError(f"pooling: POOLING_SIMD must be one of {list(LEVELS)}, got {wanted!r}")
    avx2 = None if wanted == "baseline" else _load_avx2()
    if avx2 is not None and cpu_supports_avx2():
        return avx2, "avx2"
    if wanted == "avx2":
        raise ImportError("pooling: POOLING_SIMD=avx2, but this build or CPU has no AVX2 kernels")
    return _baseline, "baseline"


core, level = _choose(os.environ.get("POOLING_SIMD", "auto").strip().lower() or "auto")
available = ("baseline",) + (("avx2",) if _load_avx2() is not None and cpu_supports_avx2() else ())
