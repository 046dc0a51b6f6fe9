/* The vector helpers of the hand-written loops (pooling_rows.h, pooling_narrow.h, pooling_nhwc.h,
 * pooling_reduce.h), and the function attributes the kernel headers share.
 *
 * The loops are written once over a vector type and a few operations on it, and the build decides
 * what a vector is:
 *
 *   PK_SIMD_BYTES  the build's widest registers: 64 (AVX-512), 32 (AVX2), 16 (SSE2, NEON, ...).
 *   PK_SIMD        1 where the compiler has GCC/Clang vector extensions; 0 under MSVC, or when
 *                  PK_SIMD_SCALAR is defined (to check the loops MSVC builds on another compiler).
 *                  Then every "vector" is one value and the same loops run lane by lane.
 *
 * PK_VEC(P, L, T, S, I) names one vector family for a header: P##_v (vectors S of T: f32x4, f32x8,
 * f32x16, f64x2 or f64x4), P##_m (their masks, lanes of I: all ones or zero), L its lanes, and
 *
 *   P##_ld, P##_st     unaligned load and store
 *   P##_max(a, b)      b if b > a, else a: the cheap compare, the later value second, so a tie
 *                      (-0.0 against +0.0) keeps a and a NaN in b is never taken (x86's
 *                      maxps/maxpd, whose operand order is exactly this; a select elsewhere)
 *   P##_nan(a, b)      the lanes where a or b is NaN
 *   P##_blend(v, f, m) v where m is set, else f
 *   P##_any(m)         whether any lane of m is set
 *   P##_splat(x)       x in every lane
 *   P##_hmax(v)        the largest lane by the cheap compare (lanes in order)
 *
 * Vector-only operations (shuffles, masked stores) stay with the loop that needs them. */
#ifndef POOLING_SIMD_H
#define POOLING_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Function attributes, where the compiler has a way to say them. */
#if defined(__GNUC__) || defined(__clang__)
#define PK_ALWAYS_INLINE inline __attribute__((always_inline))
#define PK_NOINLINE __attribute__((noinline))
#define PK_FLAT_NOINLINE __attribute__((noinline, flatten))
#define PK_RESTRICT __restrict__
#elif defined(_MSC_VER)
#define PK_ALWAYS_INLINE __forceinline
#define PK_NOINLINE __declspec(noinline)
#define PK_FLAT_NOINLINE __declspec(noinline)
#define PK_RESTRICT __restrict
#else
#define PK_ALWAYS_INLINE inline
#define PK_NOINLINE
#define PK_FLAT_NOINLINE
#define PK_RESTRICT
#endif

#if defined(__AVX512F__)
#define PK_SIMD_BYTES 64
#elif defined(__AVX2__)
#define PK_SIMD_BYTES 32
#else
#define PK_SIMD_BYTES 16
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(PK_SIMD_SCALAR)
#define PK_SIMD 1
#else
#define PK_SIMD 0
#endif

#if PK_SIMD

#if defined(__SSE2__)
#include <immintrin.h>
#endif

/* The operations as lane-wise selects, for the vectors the build has no instruction for. */
#define PK_SELECT_MAX(S, I)                                                                 \
static inline pk_##S pk_max_##S(pk_##S a, pk_##S b)                                         \
{                                                                                           \
    pk_##I g = b > a;                                                                       \
    return (pk_##S)(((pk_##I)b & g) | ((pk_##I)a & ~g));                                    \
}
#define PK_SELECT_NAN(S, I)                                                                 \
static inline pk_##I pk_nan_##S(pk_##S a, pk_##S b) { return (a != a) | (b != b); }
#define PK_SELECT_BLEND(S, I)                                                               \
static inline pk_##S pk_blend_##S(pk_##S v, pk_##S f, pk_##I m)                             \
{                                                                                           \
    return (pk_##S)(((pk_##I)v & m) | ((pk_##I)f & ~m));                                    \
}

/* 16 bytes: every build */
typedef float pk_f32x4 __attribute__((vector_size(16)));
typedef double pk_f64x2 __attribute__((vector_size(16)));
typedef int32_t pk_i32x4 __attribute__((vector_size(16)));
typedef int64_t pk_i64x2 __attribute__((vector_size(16)));

#if defined(__SSE2__)
static inline pk_f32x4 pk_max_f32x4(pk_f32x4 a, pk_f32x4 b)
{
    return (pk_f32x4)_mm_max_ps((__m128)b, (__m128)a);
}
static inline pk_f64x2 pk_max_f64x2(pk_f64x2 a, pk_f64x2 b)
{
    return (pk_f64x2)_mm_max_pd((__m128d)b, (__m128d)a);
}
static inline pk_i32x4 pk_nan_f32x4(pk_f32x4 a, pk_f32x4 b)
{
    return (pk_i32x4)_mm_cmpunord_ps((__m128)a, (__m128)b);
}
#else
PK_SELECT_MAX(f32x4, i32x4)
PK_SELECT_MAX(f64x2, i64x2)
PK_SELECT_NAN(f32x4, i32x4)
#endif
PK_SELECT_NAN(f64x2, i64x2)
PK_SELECT_BLEND(f32x4, i32x4)
PK_SELECT_BLEND(f64x2, i64x2)

/* The widening of int32 lanes to int64 (pk_widen_i32x4, and pk_widen_i32x8 and pk_widen_i32x16
 * in the wider builds below): w's first half to *lo and its second to *hi, one pmovsxdq each.
 * GCC 12 built a 64-byte vector's conversion and store, wider than the AVX2 build's registers,
 * on the stack and copied it out 16 bytes at a time. */
static inline void pk_widen_i32x4(pk_i32x4 w, pk_i64x2* lo, pk_i64x2* hi)
{
#if defined(__SSE4_1__)
    *lo = (pk_i64x2)_mm_cvtepi32_epi64((__m128i)w);
    *hi = (pk_i64x2)_mm_cvtepi32_epi64(_mm_unpackhi_epi64((__m128i)w, (__m128i)w));
#else
    *lo = (pk_i64x2){w[0], w[1]};
    *hi = (pk_i64x2){w[2], w[3]};
#endif
}

/* 32 bytes: the builds whose registers hold them (wider vectors elsewhere change the calling
 * convention, and the compiler says so) */
#if PK_SIMD_BYTES >= 32
typedef float pk_f32x8 __attribute__((vector_size(32)));
typedef double pk_f64x4 __attribute__((vector_size(32)));
typedef int32_t pk_i32x8 __attribute__((vector_size(32)));
typedef int64_t pk_i64x4 __attribute__((vector_size(32)));

static inline pk_f32x8 pk_max_f32x8(pk_f32x8 a, pk_f32x8 b)
{
    return (pk_f32x8)_mm256_max_ps((__m256)b, (__m256)a);
}
static inline pk_f64x4 pk_max_f64x4(pk_f64x4 a, pk_f64x4 b)
{
    return (pk_f64x4)_mm256_max_pd((__m256d)b, (__m256d)a);
}
static inline pk_i32x8 pk_nan_f32x8(pk_f32x8 a, pk_f32x8 b)
{
    return (pk_i32x8)_mm256_cmp_ps((__m256)a, (__m256)b, _CMP_UNORD_Q);
}
static inline pk_f32x8 pk_blend_f32x8(pk_f32x8 v, pk_f32x8 f, pk_i32x8 m)
{
    return (pk_f32x8)_mm256_blendv_ps((__m256)f, (__m256)v, (__m256)m);
}
PK_SELECT_NAN(f64x4, i64x4)
PK_SELECT_BLEND(f64x4, i64x4)
static inline void pk_widen_i32x8(pk_i32x8 w, pk_i64x4* lo, pk_i64x4* hi)
{
    *lo = (pk_i64x4)_mm256_cvtepi32_epi64(_mm256_castsi256_si128((__m256i)w));
    *hi = (pk_i64x4)_mm256_cvtepi32_epi64(_mm256_extracti128_si256((__m256i)w, 1));
}
#endif

/* 64 bytes: the AVX-512 build */
#if PK_SIMD_BYTES >= 64
typedef float pk_f32x16 __attribute__((vector_size(64)));
typedef int32_t pk_i32x16 __attribute__((vector_size(64)));

static inline pk_f32x16 pk_max_f32x16(pk_f32x16 a, pk_f32x16 b)
{
    return (pk_f32x16)_mm512_max_ps((__m512)b, (__m512)a);
}
PK_SELECT_NAN(f32x16, i32x16)
PK_SELECT_BLEND(f32x16, i32x16)   /* (one vpternlogd) */
typedef int64_t pk_i64x8 __attribute__((vector_size(64)));
static inline void pk_widen_i32x16(pk_i32x16 w, pk_i64x8* lo, pk_i64x8* hi)
{
    *lo = (pk_i64x8)_mm512_cvtepi32_epi64(_mm512_castsi512_si256((__m512i)w));
    *hi = (pk_i64x8)_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64((__m512i)w, 1));
}
#endif

#undef PK_SELECT_MAX
#undef PK_SELECT_NAN
#undef PK_SELECT_BLEND

#define PK_VEC(P, L, T, S, I)                                                               \
typedef pk_##S P##_v;                                                                       \
typedef pk_##I P##_m;                                                                       \
enum { L = sizeof(pk_##S) / sizeof(T) };                                                    \
static inline P##_v P##_ld(const T* p)                                                      \
{                                                                                           \
    P##_v v;                                                                                \
    memcpy(&v, p, sizeof v);                                                                \
    return v;                                                                               \
}                                                                                           \
static inline void P##_st(T* p, P##_v v) { memcpy(p, &v, sizeof v); }                       \
static inline P##_v P##_max(P##_v a, P##_v b) { return pk_max_##S(a, b); }                  \
static inline P##_m P##_nan(P##_v a, P##_v b) { return pk_nan_##S(a, b); }                  \
static inline P##_v P##_blend(P##_v v, P##_v f, P##_m m) { return pk_blend_##S(v, f, m); }  \
static inline int P##_any(P##_m m)                                                          \
{                                                                                           \
    int r = 0;                                                                              \
    for (int i = 0; i < L; i++)                                                             \
        r |= m[i] != 0;                                                                     \
    return r;                                                                               \
}                                                                                           \
static inline P##_v P##_splat(T x)                                                          \
{                                                                                           \
    P##_v v;                                                                                \
    for (int i = 0; i < L; i++)                                                             \
        v[i] = x;                                                                           \
    return v;                                                                               \
}                                                                                           \
static inline T P##_hmax(P##_v v)                                                           \
{                                                                                           \
    T m = v[0];                                                                             \
    for (int i = 1; i < L; i++)                                                             \
        m = v[i] > m ? v[i] : m;                                                            \
    return m;                                                                               \
}

#else  /* one value per vector */

#define PK_VEC(P, L, T, S, I)                                                               \
typedef T P##_v;                                                                            \
typedef int P##_m;                                                                          \
enum { L = 1 };                                                                             \
static inline P##_v P##_ld(const T* p) { return *p; }                                       \
static inline void P##_st(T* p, P##_v v) { *p = v; }                                        \
static inline P##_v P##_max(P##_v a, P##_v b) { return b > a ? b : a; }                     \
static inline P##_m P##_nan(P##_v a, P##_v b) { return (a != a) | (b != b); }               \
static inline P##_v P##_blend(P##_v v, P##_v f, P##_m m) { return m ? v : f; }              \
static inline int P##_any(P##_m m) { return m != 0; }                                       \
static inline P##_v P##_splat(T x) { return x; }                                            \
static inline T P##_hmax(P##_v v) { return v; }

#endif

/* The operations the template loops (pooling_rows_body.h, pooling_nhwc_body.h) need of a float family
 * P of element type T beyond PK_VEC's: values compared as they are (P##_key), stored as they are
 * (P##_sty), and checked for NaN (P##_c, the state, set up by P##_clean, fed by P##_chk, read by
 * P##_bad).  The 16-bit keys' family defines its own (pooling_rows.h). */
#define PK_VEC_CHECKS(P, T)                                                                 \
static inline P##_v P##_key(P##_v v) { return v; }                                          \
static inline void P##_sty(T* p, P##_v v) { P##_st(p, v); }                                 \
typedef P##_m P##_c;                                                                        \
static inline P##_c P##_clean(void)                                                         \
{                                                                                           \
    P##_c c;                                                                                \
    memset(&c, 0, sizeof c);                                                                \
    return c;                                                                               \
}                                                                                           \
static inline void P##_chk(P##_c* c, P##_v a, P##_v b) { *c |= P##_nan(a, b); }            \
static inline int P##_bad(P##_c c, int inf_bits) { (void)inf_bits; return P##_any(c); }

#endif
