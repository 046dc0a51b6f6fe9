# ===========================================================================
# extension_info.pxi: facts about this kernel extension, read from Python.
#
# These are not hot loops.  build_info() differs between pooling._core and
# pooling._core_avx2 (the SIMD flags each was compiled with), so each kernel
# build carries its own; pool_stats() reads the process's one pool
# (pooling._runtime's, include/pooling_pool_api.h), the same from either.
# ===========================================================================

def pool_stats():
    """How often, since the process started, a pool worker woke on its caller's CPU, and how often
    it then moved to another CPU (the rest left the call to the caller; docs/threads.md)."""
    cdef int64_t beside, moved
    pk_stats(&beside, &moved)
    return {"beside_caller": beside, "moved": moved}


def build_info():
    """Compiler, SIMD baseline, vector code and thread runtime the extension was built with.

    vector_bytes: the width of the hand-written loops' vectors (include/pooling_simd.h), 0 where
    they run one value at a time (no GCC/Clang vector extensions: MSVC, or PK_SIMD_SCALAR)."""
    return {"compiler": PK_COMPILER.decode(), "simd_baseline": PK_SIMD_BASELINE.decode(),
            "vector_bytes": PK_SIMD_BYTES if PK_SIMD else 0,
            "threads": "pool" if PK_POOL else ("openmp" if PK_OPENMP else "none")}


# The widest rows (in and out) strategy NARROW takes in this build (three vectors of its float32
# lanes), and the lanes: a row of more than NARROW_LANES values takes two strips; the same for
# 16-bit floats' int16 keys (and the 2-byte integers), and for the 4-byte integers.
NARROW_WIDTH = PK_NARROW_WIDTH
NARROW_LANES = PK_NARROW_L
NARROW_WIDTH_H16 = PK_NARROW_H16_WIDTH
NARROW_LANES_H16 = PK_NARROW_H16_L
NARROW_WIDTH_I32 = PK_NARROW_I32_WIDTH
NARROW_LANES_I32 = PK_NARROW_I32_L

# Whether max_unpool writes 2x2 stride-2 windows whole in this build (include/pooling_unpool.h).
UNPOOL_WINDOWS = bool(PK_UNPOOL_WINDOWS)

# The shortest rows (in and out) ROWS_FIRST takes of float32 and of 16-bit floats: the widest
# build's lanes of each, so that which strategy serves a call does not depend on the build.
ROWS_MIN = PK_ROWS_MAX_LANES
ROWS_MIN_H16 = PK_ROWS_H16_MIN_LANES

# The fewest channels NHWC_BLOCKS takes of 16-bit floats (and 2-byte integers) in this build: a
# vector of their keys; and of 4-byte integers.
NHWC_LANES_H16 = PK_NHWC_H16_L
NHWC_LANES_I32 = PK_NHWC_I32_L
# The vectors of channels each of its blocks holds in registers.
NHWC_BLOCK = PK_NHWC_BLOCK
