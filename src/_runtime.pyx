"""Runtime helpers of pooling-kernels that are not kernels: pooling._runtime.

Built once, with the baseline flags and OpenMP like pooling._core, because
nothing here depends on the instruction set: the OpenMP queries (the OpenMP
runtime is one shared library per process, so these report the one the
kernels run on), the CPU checks that pooling._dispatch makes before it loads
the AVX2 or AVX-512 kernels, the CPU model pooling._tuning's rules read and
the CPUID cache sizes pooling._caches may read, the cache-key hasher of
pooling._attrs, and the exact 16-bit float conversions the tests check
Col2Im's against; and the thread pool (include/pooling_pool.h), compiled here
only, which the three kernel builds (baseline, AVX2, AVX-512) use through the
capsule `pool_api` (include/pooling_pool_api.h), so that a process has one
pool whichever build each kernel comes from; and the memory handler that lets
large results reuse freed blocks (include/pooling_results.h), the one part
built against numpy's C API.  build_info() stays in each kernel extension
(src/kernels/extension_info.pxi): it differs between the builds.
"""
import numpy as np

from libc.stdint cimport uint16_t
from cpython.pycapsule cimport PyCapsule_New
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

cdef extern from "Python.h":
    const Py_ssize_t PY_SSIZE_T_MAX

cdef extern from "pooling_omp.h":
    int omp_get_max_threads() noexcept nogil
    int PK_OPENMP

cdef extern from *:
    """
    #include "pooling_pool.h"
    static const pk_pool_api pk_runtime_api = {sizeof(pk_pool_api), pk_parallel, pk_stats, PK_POOL};
    """
    const void* pk_runtime_api_ptr "(&pk_runtime_api)"

cdef extern from "pooling_config.h":
    int PK_KERNELS_X86_V2
    int pk_cpu_runs_baseline() noexcept nogil
    int pk_cpu_has_avx2() noexcept nogil
    int pk_cpu_has_avx512() noexcept nogil
    void pk_cpu_id(char* vendor, int* family, int* model) noexcept nogil
    int pk_cpu_caches(long long* sizes, int* cpus) noexcept nogil

cdef extern from "pooling_half.h":
    enum:
        PK_F16_INF

cdef extern from "pooling_half_conv.h":
    float pk_f16_to_f32(uint16_t h) noexcept nogil
    float pk_bf16_to_f32(uint16_t h) noexcept nogil
    uint16_t pk_f32_to_f16(float f) noexcept nogil
    uint16_t pk_f32_to_bf16(float f) noexcept nogil


cdef extern from "pooling_results.h":
    """
    /* 1 when numpy's default handler is the calling context's current one, 0 if not, -1 on error. */
    static int pk_handler_is_default(void) {
        PyObject* current = PyDataMem_GetHandler();
        if (!current) return -1;
        int same = current == PyDataMem_DefaultHandler;
        Py_DECREF(current);
        return same;
    }
    """
    int pk_results_init() except -1
    int pk_handler_is_default() except -1
    size_t pk_keep_shrink(int count, const size_t* limit) noexcept nogil
    size_t pk_keep_held() noexcept nogil
    int pk_keep_has(size_t size) noexcept nogil
    size_t pk_keep_get_limit() noexcept nogil
    size_t PK_KEEP_MIN
    int PK_KEEP_SLOTS
    void* pk_results_handler_ptr "(&pk_results_handler)"
    object PyDataMem_SetHandler(object handler)


pool_api = PyCapsule_New(<void*>pk_runtime_api_ptr, "pooling._runtime.pool_api", NULL)

pk_results_init()
cdef object _results_handler = PyCapsule_New(pk_results_handler_ptr, "mem_handler", NULL)

# Results of at least this many bytes are allocated under the handler that keeps their blocks.
KEEP_MIN_BYTES = PK_KEEP_MIN
# ... and at most this many of them are held.
KEEP_BLOCKS = PK_KEEP_SLOTS


def empty_result(shape, dtype, bint zeros=False, bint aligned=False):
    """np.empty(shape, dtype), its block (at least KEEP_MIN_BYTES) reused from a freed result.

    Allocated under numpy's memory handler "pooling_results" (include/pooling_results.h),
    which takes a kept block of exactly the bytes asked for where it holds one, keeps the
    block when the array is freed, and starts every block on a 64-byte boundary.  Where the
    calling context has a handler other than numpy's default (one the user set), or the limit
    is below one block and not `aligned`, this is np.empty.
    zeros: np.zeros instead, from the system's zero pages (calloc takes no kept block), but kept
    when freed like any other.
    aligned: under the handler whatever the limit, for its alignment (blocks of any size).
    """
    make = np.zeros if zeros else np.empty
    if not pk_handler_is_default() or (not aligned and pk_keep_get_limit() < PK_KEEP_MIN):
        return make(shape, dtype)
    previous = PyDataMem_SetHandler(_results_handler)
    try:
        return make(shape, dtype)
    finally:
        PyDataMem_SetHandler(previous)


def set_keep_limit(size_t limit):
    """Hold at most `limit` bytes of freed result blocks (0: none); returns the bytes freed now."""
    return pk_keep_shrink(PK_KEEP_SLOTS, &limit)


def release_kept():
    """Free every result block held; the limit stays.  Returns the bytes freed."""
    return pk_keep_shrink(0, NULL)


def keep_limit():
    """The bytes of freed result blocks that may be held (below KEEP_MIN_BYTES: none is kept)."""
    return pk_keep_get_limit()


def kept_bytes():
    """The bytes of freed result blocks held now."""
    return pk_keep_held()


def holds_block(nbytes):
    """Whether empty_result would take a freed block for `nbytes` now: one of exactly that size
    is held, and numpy's default handler is the current one (False for sizes no block has)."""
    if not PK_KEEP_MIN <= nbytes <= PY_SSIZE_T_MAX:
        return False
    return bool(pk_keep_has(<size_t>nbytes)) and pk_handler_is_default() == 1


def openmp_enabled():
    """True when the extension was compiled with OpenMP."""
    return bool(PK_OPENMP)


def max_threads():
    """OpenMP's maximum thread count now (OMP_NUM_THREADS, threadpoolctl)."""
    return omp_get_max_threads()


def cpu_runs_baseline():
    """True when this CPU can run the baseline build of these kernels (pooling._core): always,
    but where that build targets x86-64-v2 (BASELINE_X86_V2) and this CPU lacks SSE4.2 or POPCNT."""
    return bool(pk_cpu_runs_baseline())


# Whether pooling._core was built for x86-64-v2 (setup.py: the default on x86-64; plain x86-64
# with POOLING_X86_BASELINE=x86-64).
BASELINE_X86_V2 = bool(PK_KERNELS_X86_V2)


def cpu_supports_avx2():
    """True when this CPU can run the AVX2 build of these kernels (pooling._core_avx2)."""
    return bool(pk_cpu_has_avx2())


def cpu_supports_avx512():
    """True when this CPU can run the AVX-512 build of these kernels (pooling._core_avx512)."""
    return bool(pk_cpu_has_avx512())


def cpu_id():
    """(vendor, family, model) of this CPU from CPUID, e.g. ("AuthenticAMD", 0x19, 0x01);
    ("", 0, 0) where unknown (off x86)."""
    cdef char vendor[13]
    cdef int family, model
    pk_cpu_id(vendor, &family, &model)
    return vendor.decode("ascii", "replace"), family, model


def cpuid_caches():
    """((L1d, L2, L3 bytes), (CPUs sharing each)) as CPUID describes them, or None where it
    describes none (off x86, or no cache leaf); 0 for a level that is absent."""
    cdef long long sizes[3]
    cdef int cpus[3]
    if not pk_cpu_caches(sizes, cpus):
        return None
    return (sizes[0], sizes[1], sizes[2]), (cpus[0], cpus[1], cpus[2])


cdef tuple _TRUE_KEY = ("bool", True)
cdef tuple _FALSE_KEY = ("bool", False)


def attribute_keys(tuple values):
    """Cache keys for a call's shape and attribute values, or None (``pooling._attrs``).

    A value of exact type None, int or str, or a tuple of exact ints, is its
    own key, and a list of exact ints that tuple; a bool is ("bool", v), so that
    True does not share 1's cached plan.  Any other value makes the answer None,
    and the caller keys it in Python (``hashable``).  Here because a call
    passes a dozen values, and checking their types in Python was a large part
    of a small MaxPool call (docs/tuning.md#call-overhead).
    """
    cdef Py_ssize_t i, n = len(values)
    cdef tuple keys = PyTuple_New(n)
    for i in range(n):
        value = values[i]
        kind = type(value)
        if value is None or kind is int or kind is str:
            key = value
        elif kind is bool:
            key = _TRUE_KEY if value else _FALSE_KEY
        elif kind is tuple or kind is list:
            for item in value:
                if type(item) is not int:
                    return None
            key = value if kind is tuple else tuple(value)
        else:
            return None
        Py_INCREF(key)  # (SET_ITEM steals a reference)
        PyTuple_SET_ITEM(keys, i, key)
    return keys


def half_to_float32(const uint16_t[::1] h not None, float[::1] out not None, uint16_t inf_bits):
    """out[i] = the float16 (inf_bits 0x7c00) or bfloat16 (0x7f80) bits h[i], widened exactly."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(min(h.shape[0], out.shape[0])):
            out[i] = pk_f16_to_f32(h[i]) if inf_bits == PK_F16_INF else pk_bf16_to_f32(h[i])


def float32_to_half(const float[::1] f not None, uint16_t[::1] out not None, uint16_t inf_bits):
    """out[i] = f[i] rounded to nearest even in float16 (inf_bits 0x7c00) or bfloat16 (0x7f80)."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(min(f.shape[0], out.shape[0])):
            out[i] = pk_f32_to_f16(f[i]) if inf_bits == PK_F16_INF else pk_f32_to_bf16(f[i])
