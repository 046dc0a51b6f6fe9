/* The maximum of a float32 or float64 run by the cheap compare (strictly greater replaces,
 * so a NaN never enters), for PLANES' whole-plane windows (src/kernels/maxpool_planes.pxi,
 * _global); *odd is set to whether the run holds a NaN (then the result is not its
 * maximum: the caller redoes it with the exact compare), found in the same pass.
 *
 * The lanes of two vectors hold running maxima of the positions i % (2 * lanes), combined
 * in lane order at the end, then the remainder in order.  The value is the run's maximum;
 * which of equal zeros it is, is the caller's business (it redoes zero results in order).
 *
 * Written with the GCC/Clang vector extensions because the same loop over a small array
 * of running maxima stays scalar (the compiler keeps the array in registers: one maxss per
 * value, 92 instructions for a 7x7 plane against 30 with a vector type).  A vector is as
 * wide as the build's registers (two 16-byte halves of a 32-byte vector in the SSE2 build
 * cost more than the scalar loop), and there are two of them (one chain of compare and
 * select was latency bound, slower than the scalar loop in the SSE2 build:
 * docs/tuning.md#planes-whole-plane-reduction).  Elsewhere (MSVC) a scalar loop. */
#ifndef POOLING_REDUCE_H
#define POOLING_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)

#if defined(__AVX2__)
#define PK_RED_BYTES 32
#else
#define PK_RED_BYTES 16
#endif

#define PK_RED_DEFINE(NAME, T, I)                                                         \
typedef T NAME##_v __attribute__((vector_size(PK_RED_BYTES)));                             \
typedef I NAME##_m __attribute__((vector_size(PK_RED_BYTES)));                             \
static inline T NAME(const T* x, ptrdiff_t n, int* odd)                                    \
{                                                                                          \
    enum { L = PK_RED_BYTES / sizeof(T) };                                                 \
    NAME##_v a0, a1, v0, v1;                                                               \
    NAME##_m g0, g1, nan;                                                                  \
    ptrdiff_t i, body = n - n % (2 * L);                                                   \
    T m = x[0];                                                                            \
    int bad = 0;                                                                           \
    if (n < 2 * L) {                                                                       \
        for (i = 0; i < n; i++) {                                                          \
            bad |= x[i] != x[i];                                                           \
            m = x[i] > m ? x[i] : m;                                                       \
        }                                                                                  \
        *odd = bad;                                                                        \
        return m;                                                                          \
    }                                                                                      \
    memcpy(&a0, x, sizeof a0);                                                             \
    memcpy(&a1, x + L, sizeof a1);                                                         \
    nan = (a0 != a0) | (a1 != a1);                                                         \
    for (i = 2 * L; i < body; i += 2 * L) {                                                \
        memcpy(&v0, x + i, sizeof v0);                                                     \
        memcpy(&v1, x + i + L, sizeof v1);                                                 \
        nan |= (v0 != v0) | (v1 != v1);                                                    \
        g0 = v0 > a0;                                                                      \
        g1 = v1 > a1;                                                                      \
        a0 = (NAME##_v)(((NAME##_m)v0 & g0) | ((NAME##_m)a0 & ~g0));                       \
        a1 = (NAME##_v)(((NAME##_m)v1 & g1) | ((NAME##_m)a1 & ~g1));                       \
    }                                                                                      \
    m = a0[0];                                                                             \
    for (i = 0; i < L; i++) {                                                              \
        bad |= nan[i] != 0;                                                                \
        m = a0[i] > m ? a0[i] : m;                                                         \
    }                                                                                      \
    for (i = 0; i < L; i++)                                                                \
        m = a1[i] > m ? a1[i] : m;                                                         \
    for (i = body; i < n; i++) {                                                           \
        bad |= x[i] != x[i];                                                               \
        m = x[i] > m ? x[i] : m;                                                           \
    }                                                                                      \
    *odd = bad;                                                                            \
    return m;                                                                              \
}

#else

#define PK_RED_DEFINE(NAME, T, I)                                                         \
static inline T NAME(const T* x, ptrdiff_t n, int* odd)                                    \
{                                                                                          \
    T m = x[0];                                                                            \
    int bad = x[0] != x[0];                                                                \
    for (ptrdiff_t i = 1; i < n; i++) {                                                    \
        bad |= x[i] != x[i];                                                               \
        m = x[i] > m ? x[i] : m;                                                           \
    }                                                                                      \
    *odd = bad;                                                                            \
    return m;                                                                              \
}

#endif

PK_RED_DEFINE(pk_max_f32, float, int32_t)
PK_RED_DEFINE(pk_max_f64, double, int64_t)

#undef PK_RED_DEFINE

#endif
