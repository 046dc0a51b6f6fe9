/* The maximum of a float32 or float64 run (16-bit floats: pk_max_h16 below) by the cheap compare (strictly greater replaces,
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

#include "pooling_rows.h"
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

/* The maxima of PK_ROWS_L float32 runs of n >= PK_ROWS_L values each (run p at x + p * n) into
 * y[0 .. PK_ROWS_L), by the cheap compare: PLANES' whole-plane windows over many small planes
 * (ResNet's 2048 planes of 7x7).  One run at a time (pk_max_f32) spent most of a 7x7 plane's 110
 * instructions reducing its own vector and NaN mask to scalars; here each run's vector of lane
 * maxima (the first and last vectors, then the middle ones between them: a value seen twice
 * changes no maximum) is reduced with the others', pairs of lanes twice, then halves, into one
 * vector whose lane p is run p's maximum, and the NaN masks are ORed into one.  Returns the runs
 * the caller redoes in order, as bits: all of them where any holds a NaN, else those whose
 * maximum is zero (which zero is the first, the in-order loop says)
 * (docs/tuning.md#planes-whole-plane-reduction). */
static inline unsigned pk_max_f32_runs(const float* x, ptrdiff_t n, float* y)
{
    pk_rows_v a[PK_ROWS_L], m0, m1, v0, v1;
    pk_rows_m nan;
    unsigned redo = 0;
    ptrdiff_t i;
    memset(&nan, 0, sizeof nan);
    for (int p = 0; p < PK_ROWS_L; p++) {
        const float* r = x + p * n;
        m0 = pk_rows_ld(r);
        m1 = pk_rows_ld(r + n - PK_ROWS_L);
        nan |= pk_rows_nan(m0, m1);
        for (i = PK_ROWS_L; i + PK_ROWS_L < n - PK_ROWS_L; i += 2 * PK_ROWS_L) {
            v0 = pk_rows_ld(r + i);
            v1 = pk_rows_ld(r + i + PK_ROWS_L);
            nan |= pk_rows_nan(v0, v1);
            m0 = pk_rows_max(m0, v0);
            m1 = pk_rows_max(m1, v1);
        }
        if (i < n - PK_ROWS_L) {
            v0 = pk_rows_ld(r + i);
            nan |= pk_rows_nan(v0, v0);
            m0 = pk_rows_max(m0, v0);
        }
        a[p] = pk_rows_max(m0, m1);
    }
    if (pk_rows_any(nan))
        return (1u << PK_ROWS_L) - 1;
#if PK_SIMD
    {
        /* pk_rows_pairs(u, v): [u's pairs, v's pairs] per 16-byte half, so two rounds leave run
         * p's four partial maxima in lane p of each half: [0 1 2 3 | 0 1 2 3], then [4 5 6 7 | ...]. */
        pk_rows_v r0 = pk_rows_pairs(a[0], a[1]), r1 = pk_rows_pairs(a[2], a[3]);
        pk_rows_v m = pk_rows_pairs(r0, r1);
#if PK_SIMD_BYTES >= 32   /* eight lanes */
        pk_rows_v s = pk_rows_pairs(pk_rows_pairs(a[4], a[5]), pk_rows_pairs(a[6], a[7]));
        m = pk_rows_max(PK_ROWS_SHUF(m, s, 0, 1, 2, 3, 8, 9, 10, 11), PK_ROWS_SHUF(m, s, 4, 5, 6, 7, 12, 13, 14, 15));
#endif
        pk_rows_m z = m == pk_rows_splat(0.0f);
        pk_rows_st(y, m);
        for (int p = 0; p < PK_ROWS_L; p++)
            redo |= (unsigned)(z[p] != 0) << p;
    }
#else
    y[0] = a[0];
    redo = a[0] == 0.0f;
#endif
    return redo;
}

/* The maximum of n >= PK_RH_L 16-bit floats' bits, by their int16 keys (pooling_rows.h, whose
 * checks set *odd where the run holds a NaN or -0.0: the keys' order is then not the contract's, and
 * the caller redoes the run exactly); the bits of the maximum otherwise.  The last vector overlaps
 * the one before it (a value seen twice changes no maximum); one chain of int16 maxima, whose
 * latency is a cycle, where the scalar loop of fast keys and its separate scan for odd values took
 * 1.4x float32's time. */
static inline uint16_t pk_max_h16(const uint16_t* x, ptrdiff_t n, int inf_bits, int* odd)
{
    const int16_t* p = (const int16_t*)x;
    pk_rh_c c = pk_rh_clean();
    pk_rh_v a = pk_rh_ld(p), v, m;
    ptrdiff_t i;
    int16_t r;
    pk_rh_chk(&c, a, a);
    a = pk_rh_key(a);
    for (i = PK_RH_L; i + PK_RH_L <= n; i += PK_RH_L) {
        v = pk_rh_ld(p + i);
        pk_rh_chk(&c, v, v);
        a = pk_rh_max(a, pk_rh_key(v));
    }
    if (i < n) {
        v = pk_rh_ld(p + n - PK_RH_L);
        pk_rh_chk(&c, v, v);
        a = pk_rh_max(a, pk_rh_key(v));
    }
    *odd = pk_rh_bad(c, inf_bits);
    memset(&m, 0, sizeof m);
    m = pk_rh_bits(m + pk_rh_hmax(a));
    memcpy(&r, &m, sizeof r);
    return (uint16_t)r;
}

/* Whether a run of n values holds a NaN (16-bit floats: their bits, above inf_bits once the sign is
 * dropped).  For callers that must treat NaN results apart (pooling.torch applies torch's NaN rule
 * only then): a launch scans each work item's output right after writing it, while it is in cache,
 * where a pass over the whole result afterwards read it back from memory (docs/tuning.md#the-nan-scan).
 * Loops without an early exit, which the compiler makes vector compares. */
static inline int pk_any_nan_f32(const float* x, ptrdiff_t n)
{
    int bad = 0;
    for (ptrdiff_t i = 0; i < n; i++)
        bad |= x[i] != x[i];
    return bad;
}

static inline int pk_any_nan_f64(const double* x, ptrdiff_t n)
{
    int bad = 0;
    for (ptrdiff_t i = 0; i < n; i++)
        bad |= x[i] != x[i];
    return bad;
}

static inline int pk_any_nan_h16(const uint16_t* x, ptrdiff_t n, int inf_bits)
{
    int bad = 0;
    for (ptrdiff_t i = 0; i < n; i++)
        bad |= (x[i] & 0x7FFF) > inf_bits;
    return bad;
}

#endif
