/* Strategy NARROW (src/kernels/maxpool_narrow.pxi): float32 (and 16-bit float: below) NCHW MaxPool without Indices whose
 * input and output rows fit three vectors (W, OW <= three times the build's float32 lanes L: 48
 * in the AVX-512 build, 24 with AVX2, 12 with SSE2) and whose W stride is 1: the 7x7 planes of Inception's
 * last branch pools, the 13x13 to 40x40 ones of YOLO's SPPF/SPP, Inception-v3's 35x35, with hundreds of channels,
 * where every other kernel pays a set-up per plane or per row (or a transpose) that costs more
 * than the compares.  A plane at a time, a strip of L columns at a time, in registers:
 *
 *   1. each input row r the windows read is reduced along W as one vector per strip: lane l is
 *      the first maximum of x[r][c0 + l - pw + t * dw] over the taps t < kw, each tap one load
 *      at the strip's start plus t * dw - pw, its lanes outside the row replaced by -inf (16-bit
 *      floats' keys: by 0, below every key; masks fixed for the call: they depend only on the lane
 *      and the strip);
 *   2. each output row is the first maximum of its window's reduced rows (the valid taps only),
 *      stored as one vector per strip: its lanes past OW spill into the next row's first strip,
 *      which is stored after it (strips go last to first); a vector that would leave the plane
 *      is stored lane by lane.  Windows of the input's shape (k3 p1, k5 p2, k2 s1) roll their
 *      reduced rows through registers; other geometries keep them in a scratch row.
 *
 * Exactness: taps are combined in order, W before H, each combine keeping its earlier operand
 * unless the later one is strictly greater (maxps with the new value first), so ties (-0.0
 * against +0.0) resolve as in the contract, and a -inf put in for a missing tap has the bits of
 * any -inf it ties with.  Only NaN breaks the cheap compare: every input value of the plane is
 * checked (lanes below W of each strip's unshifted load, and the columns past the strips where
 * the output is narrower than the input), and pk_narrow_f32 returns the first plane holding one;
 * the caller redoes it with the exact compare.  16-bit floats compare keys made once per plane, which
 * tie -0.0 with +0.0, so the plane is checked for -0.0 as well as it is keyed (pk_narrow_h16).
 *
 * The loops are written once for both kinds (pooling_narrow_body.h); this file holds the kinds.
 *
 * Loads reach pw values before a row and up to 3L - 1 + (kw - 1) * dw - pw after its start
 * (pk_narrow_margin): the caller hands the planes that near the array's ends over in a copy
 * with margins.
 *
 * Vectors of the build's register width (include/pooling_simd.h: maxps, blendvps, in the AVX-512
 * build a bitwise blend); where there are none (MSVC, or PK_SIMD_SCALAR defined) one lane, which
 * serves rows of up to 2 values. */
#ifndef POOLING_NARROW_H
#define POOLING_NARROW_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pooling_rows.h"
#include "pooling_simd.h"

/* Vectors as wide as the build's registers. */
#if PK_SIMD_BYTES == 64
PK_VEC(pk_nw, PK_NARROW_L, float, f32x16, i32x16)
#elif PK_SIMD_BYTES == 32
PK_VEC(pk_nw, PK_NARROW_L, float, f32x8, i32x8)
#else
PK_VEC(pk_nw, PK_NARROW_L, float, f32x4, i32x4)
#endif

/* The first n (< PK_NARROW_L) lanes of v to p: a masked store where the build has one (GCC made
 * the loop of lanes a memcpy call, a large part of 7x7 planes' time: docs/tuning.md#narrow-code). */
static inline void pk_nw_sty_first(float* p, pk_nw_v v, ptrdiff_t n)
{
#if PK_SIMD && PK_SIMD_BYTES == 64
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), (__m512)v);
#elif PK_SIMD && PK_SIMD_BYTES == 32
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane), (__m256)v);
#elif PK_SIMD
    for (ptrdiff_t t = 0; t < n; t++)
        p[t] = v[t];
#else
    if (n > 0)
        *p = v;
#endif
}

/* The widest rows (three vectors of the kind's lanes) and the most taps per axis. */
#define PK_NARROW_STRIPS 3
#define PK_NARROW_WIDTH (PK_NARROW_STRIPS * PK_NARROW_L)
#define PK_NARROW_MAX_K 16

/* What the loops (pooling_narrow_body.h) need of the float32 family beyond PK_VEC's. */
PK_VEC_CHECKS(pk_nw, float)
static inline void pk_nw_chkv(pk_nw_c* c, pk_nw_v v, pk_nw_m valid) { *c |= pk_nw_nan(v, v) & valid; }
static inline pk_nw_v pk_nw_neg(int inf_bits) { (void)inf_bits; return pk_nw_splat(-INFINITY); }
static inline int pk_nw_odd1(float x, int inf_bits) { (void)inf_bits; return x != x; }

#define PK_NR_T float
#define PK_NR_N(name) name##_f32
#define PK_NR_F(op) pk_nw_##op
#define PK_NR_V pk_nw_v
#define PK_NR_M pk_nw_m
#define PK_NR_C pk_nw_c
#define PK_NR_L PK_NARROW_L
#define PK_NR_KEY(v, u) ((void)(u), pk_nw_key(v))
#define PK_NR_STY(p, v, u) ((void)(u), pk_nw_sty(p, v))
#define PK_NR_STY_FIRST(p, v, n, u) ((void)(u), pk_nw_sty_first(p, v, n))
#define PK_NR_TAP(x, m, neg, u) ((void)(u), pk_nw_blend(x, neg, m))
#define PK_NR_FLOOR(m, neg) (m)
#include "pooling_narrow_body.h"

/* 16-bit floats: each plane's bits are turned once into keys in unsigned order in scratch (ROWS_FIRST's
 * int16 key, pooling_rows_h16.h, plus 0x8000: every value's key lies above 0), and its NaN and -0.0
 * (which that key ties with +0.0) are looked for there; the loops then run on the keys as on integers:
 * a tap's lanes outside the row are ANDed to 0, below every key, and taps combine with an unsigned max,
 * two operations a tap where a key and a mask on the bits took five.  A row's maximum is raised to
 * -inf's key (a window wholly in the padding), and a result is stored as its value's bits.  Vectors of
 * at most 32 bytes, so 16 lanes in the AVX2 and AVX-512 builds, 8 in the baseline one. */
#define PK_NARROW_H16_L PK_RH_L
#define PK_NARROW_H16_WIDTH (PK_NARROW_STRIPS * PK_NARROW_H16_L)
typedef pk_rh_v pk_nk_v;
typedef pk_rh_m pk_nk_m;
typedef int pk_nk_c;
static inline pk_nk_v pk_nk_ld(const int16_t* p) { return pk_rh_ld(p); }
static inline void pk_nk_st(int16_t* p, pk_nk_v v) { pk_rh_st(p, v); }
static inline pk_nk_v pk_nk_max(pk_nk_v a, pk_nk_v b)
{
#if PK_SIMD && PK_SIMD_BYTES >= 32 && defined(__AVX2__)
    return (pk_nk_v)_mm256_max_epu16((__m256i)a, (__m256i)b);
#elif PK_SIMD && defined(__SSE4_1__)
    return (pk_nk_v)_mm_max_epu16((__m128i)a, (__m128i)b);
#elif PK_SIMD
    typedef uint16_t pk_nk_u __attribute__((vector_size(sizeof(pk_nk_v))));
    pk_nk_m g = (pk_nk_m)((pk_nk_u)b > (pk_nk_u)a);
    return (b & g) | (a & ~g);
#else
    return (uint16_t)b > (uint16_t)a ? b : a;
#endif
}
static inline pk_nk_c pk_nk_clean(void) { return 0; }
static inline void pk_nk_chkv(pk_nk_c* c, pk_nk_v v, pk_nk_m valid) { (void)c; (void)v; (void)valid; }
static inline int pk_nk_bad(pk_nk_c c, int inf_bits) { (void)c; (void)inf_bits; return 0; }
static inline int pk_nk_odd1(int16_t x, int inf_bits) { (void)x; (void)inf_bits; return 0; }
static inline pk_nk_v pk_nk_neg(int inf_bits)   /* (-inf's key: 0x8000 - inf_bits, or one less without psignw) */
{
    pk_nk_v v;
    memset(&v, 0, sizeof v);
    return pk_rh_key(v + (int16_t)(0x8000 | inf_bits)) ^ (int16_t)0x8000;
}
/* A key's value, stored: ROWS_FIRST's key (the sign bit flipped back), then its bits. */
static inline void pk_nk_sty(int16_t* p, pk_nk_v v) { pk_rh_st(p, pk_rh_bits(v ^ (int16_t)0x8000)); }
static inline void pk_nk_sty_first(int16_t* p, pk_nk_v v, ptrdiff_t n)
{
    /* (AVX2 stores 32-bit lanes under a mask: the pairs, then an odd last value) */
    int16_t lanes[PK_RH_L];
    v = pk_rh_bits(v ^ (int16_t)0x8000);
    memcpy(lanes, &v, sizeof v);
#if PK_SIMD && PK_SIMD_BYTES >= 32
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_epi32((int*)p, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n / 2)), lane), (__m256i)v);
    if (n % 2)
        p[n - 1] = lanes[n - 1];
#else
    for (ptrdiff_t t = 0; t < n; t++)
        p[t] = lanes[t];
#endif
}
/* The keys of x's vectors at i and j into kb, their values fed to the checks. */
static inline void pk_nk_keys2(const int16_t* x, int16_t* kb, ptrdiff_t i, ptrdiff_t j, pk_rh_c* bad)
{
    pk_rh_v a = pk_rh_ld(x + i), b = pk_rh_ld(x + j);
    pk_rh_chk(bad, a, b);
    pk_nk_st(kb + i, pk_rh_key(a) ^ (int16_t)0x8000);
    pk_nk_st(kb + j, pk_rh_key(b) ^ (int16_t)0x8000);
}
/* A plane's keys: the size values of x into kb as keys, two vectors at a time (the checks take a pair),
 * then one that ends at the plane's end, overlapping those before it (or, under a vector, through one's
 * room); returns whether x holds a NaN or a -0.0. */
static inline int pk_narrow_keys_h16(const int16_t* x, int16_t* kb, ptrdiff_t size, int inf_bits)
{
    pk_rh_c bad = pk_rh_clean();
    ptrdiff_t i = 0;
    if (size < PK_RH_L) {
        int16_t room[PK_RH_L];
        memset(room, 0, sizeof room);
        memcpy(room, x, (size_t)size * sizeof *x);
        pk_nk_keys2(room, room, 0, 0, &bad);
        memcpy(kb, room, (size_t)size * sizeof *kb);
        return pk_rh_bad(bad, inf_bits);
    }
    for (; i + 2 * PK_RH_L <= size; i += 2 * PK_RH_L)
        pk_nk_keys2(x, kb, i, i + PK_RH_L, &bad);
    if (i < size)   /* (one or two vectors more, the last ending at the plane's end) */
        pk_nk_keys2(x, kb, i < size - PK_RH_L ? i : size - PK_RH_L, size - PK_RH_L, &bad);
    return pk_rh_bad(bad, inf_bits);
}

#define PK_NR_T int16_t
#define PK_NR_N(name) name##_h16
#define PK_NR_F(op) pk_nk_##op
#define PK_NR_V pk_nk_v
#define PK_NR_M pk_nk_m
#define PK_NR_C pk_nk_c
#define PK_NR_L PK_RH_L
#define PK_NR_KEY(v, u) ((void)(u), (v))
#define PK_NR_STY(p, v, u) ((void)(u), pk_nk_sty(p, v))
#define PK_NR_STY_FIRST(p, v, n, u) ((void)(u), pk_nk_sty_first(p, v, n))
#define PK_NR_TAP(x, m, neg, u) ((void)(neg), (void)(u), (x) & (m))
#define PK_NR_FLOOR(m, neg) pk_nk_max(m, neg)
#define PK_NR_KEYS pk_narrow_keys_h16
#include "pooling_narrow_body.h"

/* The 2- and 4-byte integers: ROWS_FIRST's integer families (pooling_rows.h; vectors of at most 32
 * bytes), no checks, values compared as they are or, unsigned (u), as keys; the lowest key stands in
 * for a missing tap. */
#define PK_NARROW_I32_L PK_R32_L
#define PK_NARROW_I32_WIDTH (PK_NARROW_STRIPS * PK_NARROW_I32_L)
#define PK_NARROW_INT_OPS(P, T, L, LOWEST)                                                            \
static inline void P##_chkv(P##_c* c, P##_v v, P##_m valid) { (void)c; (void)v; (void)valid; }      \
static inline P##_v P##_blend(P##_v v, P##_v f, P##_m m) { return (v & m) | (f & ~m); }             \
static inline P##_v P##_neg(int inf_bits) { P##_v v; (void)inf_bits; memset(&v, 0, sizeof v); return v + (LOWEST); } \
static inline int P##_odd1(T x, int inf_bits) { (void)x; (void)inf_bits; return 0; }                \
static inline void P##_sty_first(T* p, P##_v v, ptrdiff_t n, int u)                                  \
{                                                                                                    \
    T lanes[L];                                                                                      \
    v = P##_key(v, u);                                                                               \
    memcpy(lanes, &v, sizeof v);                                                                     \
    for (ptrdiff_t t = 0; t < n; t++)                                                                \
        p[t] = lanes[t];                                                                             \
}
PK_NARROW_INT_OPS(pk_ri, int16_t, PK_RH_L, INT16_MIN)
PK_NARROW_INT_OPS(pk_r32, int32_t, PK_R32_L, INT32_MIN)
#undef PK_NARROW_INT_OPS

#define PK_NR_T int16_t
#define PK_NR_N(name) name##_i16
#define PK_NR_F(op) pk_ri_##op
#define PK_NR_V pk_ri_v
#define PK_NR_M pk_ri_m
#define PK_NR_C pk_ri_c
#define PK_NR_L PK_RH_L
#define PK_NR_KEY(v, u) pk_ri_key(v, u)
#define PK_NR_STY(p, v, u) pk_ri_sty(p, v, u)
#define PK_NR_STY_FIRST(p, v, n, u) pk_ri_sty_first(p, v, n, u)
#define PK_NR_TAP(x, m, neg, u) pk_ri_blend(pk_ri_key(x, u), neg, m)
#define PK_NR_FLOOR(m, neg) (m)
#include "pooling_narrow_body.h"

#define PK_NR_T int32_t
#define PK_NR_N(name) name##_i32
#define PK_NR_F(op) pk_r32_##op
#define PK_NR_V pk_r32_v
#define PK_NR_M pk_r32_m
#define PK_NR_C pk_r32_c
#define PK_NR_L PK_R32_L
#define PK_NR_KEY(v, u) pk_r32_key(v, u)
#define PK_NR_STY(p, v, u) pk_r32_sty(p, v, u)
#define PK_NR_STY_FIRST(p, v, n, u) pk_r32_sty_first(p, v, n, u)
#define PK_NR_TAP(x, m, neg, u) pk_r32_blend(pk_r32_key(x, u), neg, m)
#define PK_NR_FLOOR(m, neg) (m)
#include "pooling_narrow_body.h"

#endif
