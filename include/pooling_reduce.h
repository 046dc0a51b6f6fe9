/* The maximum of a float32 or float64 run by the cheap compare (strictly greater replaces,
 * so a NaN never enters), for PLANES' whole-plane windows (src/kernels/maxpool_planes.pxi,
 * _global); *odd is set to whether the run holds a NaN (then the result is not its
 * maximum: the caller redoes it with the exact compare), found in the same pass.
 *
 * The lanes of two vectors hold running maxima of the positions i % (2 * lanes), combined
 * at the end, then the remainder in order.  The value is the run's maximum;
 * which of equal zeros it is, is the caller's business (it redoes zero results in order).
 *
 * Written with the GCC/Clang vector extensions because the same loop over a small array
 * of running maxima stays scalar (the compiler keeps the array in registers: one maxss per
 * value, 92 instructions for a 7x7 plane against 30 with a vector type).  A vector is as
 * wide as the build's registers (two 16-byte halves of a 32-byte vector in the SSE2 build
 * cost more than the scalar loop), and there are two of them (one chain of compare and
 * select was latency bound, slower than the scalar loop in the SSE2 build:
 * docs/tuning.md#planes-whole-plane-reduction).  Elsewhere (MSVC) the same loop runs one value
 * per vector (include/pooling_simd.h). */
#ifndef POOLING_REDUCE_H
#define POOLING_REDUCE_H

#include "pooling_simd.h"

/* Vectors of at most 32 bytes, also in the AVX-512 build. */
#if PK_SIMD_BYTES >= 32
PK_VEC(pk_red32, PK_RED32_L, float, f32x8, i32x8)
PK_VEC(pk_red64, PK_RED64_L, double, f64x4, i64x4)
#else
PK_VEC(pk_red32, PK_RED32_L, float, f32x4, i32x4)
PK_VEC(pk_red64, PK_RED64_L, double, f64x2, i64x2)
#endif

#define PK_RED_DEFINE(NAME, T, P, L)                                                        \
static inline T NAME(const T* x, ptrdiff_t n, int* odd)                                     \
{                                                                                           \
    P##_v a0, a1, v0, v1;                                                                   \
    P##_m nan;                                                                              \
    ptrdiff_t i, body = n - n % (2 * L);                                                    \
    T m = x[0];                                                                             \
    int bad = 0;                                                                            \
    if (n < 2 * L) {                                                                        \
        for (i = 0; i < n; i++) {                                                           \
            bad |= x[i] != x[i];                                                            \
            m = x[i] > m ? x[i] : m;                                                        \
        }                                                                                   \
        *odd = bad;                                                                         \
        return m;                                                                           \
    }                                                                                       \
    a0 = P##_ld(x);                                                                         \
    a1 = P##_ld(x + L);                                                                     \
    nan = P##_nan(a0, a1);                                                                  \
    for (i = 2 * L; i < body; i += 2 * L) {                                                 \
        v0 = P##_ld(x + i);                                                                 \
        v1 = P##_ld(x + i + L);                                                             \
        nan |= P##_nan(v0, v1);                                                             \
        a0 = P##_max(a0, v0);                                                               \
        a1 = P##_max(a1, v1);                                                               \
    }                                                                                       \
    m = P##_hmax(P##_max(a0, a1));                                                          \
    for (i = body; i < n; i++) {                                                            \
        bad |= x[i] != x[i];                                                                \
        m = x[i] > m ? x[i] : m;                                                            \
    }                                                                                       \
    *odd = bad | P##_any(nan);                                                              \
    return m;                                                                               \
}

PK_RED_DEFINE(pk_max_f32, float, pk_red32, PK_RED32_L)
PK_RED_DEFINE(pk_max_f64, double, pk_red64, PK_RED64_L)

#undef PK_RED_DEFINE

#endif
