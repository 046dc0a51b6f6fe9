/* Strategy ROWS_FIRST (src/kernels/maxpool_rows.pxi): float32 and 16-bit float NCHW MaxPool
 * without Indices, one plane at a time, one output row at a time:
 *
 *   1. the rows of the output row's window are reduced into one row V (W values, in a
 *      buffer padded with -inf on both sides as far as the windows reach), a flat loop of
 *      whole vectors;
 *   2. the output row is read off V in registers: with stride 1, maxima of two or three
 *      shifted loads; with stride 2 and a 3-wide window, even and odd lanes of V split by
 *      shuffles and the even ones shifted by one; 4-wide windows with stride 4, two rounds
 *      of that split.
 *
 * A row's last vector overlaps the one before it instead of a scalar remainder (a maximum
 * written twice is the same maximum), which is what makes 14- to 56-wide rows cheap: the
 * two-pass kernel spent half its time on such rows in per-row set-up and remainders.
 *
 * Both passes use the cheap compare (maxps), and reducing rows before columns is not the
 * contract's tap order; both give the contract's result bit for bit unless a window holds a
 * NaN, or its maximum is a zero and the plane holds a -0.0 (the only equal values with other
 * bits). So every input row is checked for NaN once (pass 1 checks the rows no later output
 * row reads as its own first rows: min(sh, kh) of them with dilation 1, all of them for the
 * last output row or with dilation), and a plane with a zero result is scanned for -0.0;
 * pk_rows_f32 returns 1 for such a plane and the caller redoes it with the exact compare.
 *
 * Requirements (the caller's serves rule): kh, kw in 1..3 with stride 1 along W (any
 * dilation) or stride 2 with kw 3 or 2 and dilation 1; or kw 4 with stride 4, no dilation,
 * and kh up to 4; W and OW at least PK_ROWS_MAX_LANES; every window holds at least one input
 * row and column.
 *
 * 16-bit floats run the same passes (pooling_rows_body.h) on int16 keys, their planes' odd values
 * found on load (the key and chk of pooling_rows_h16.h); rows at least PK_ROWS_H16_MIN_LANES long (those
 * under the build's int16 lanes by 16-byte vectors).
 *
 * Vectors of the build's register width up to 32 bytes (include/pooling_simd.h); where there are
 * none (MSVC, or PK_SIMD_SCALAR defined) scalar loops. */
#ifndef POOLING_ROWS_H
#define POOLING_ROWS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pooling_half.h"
#include "pooling_prefetch.h"
#include "pooling_simd.h"

#define PK_ROWS_MAX_LANES 8   /* the widest build's float32 lanes: rows at least this long */

/* Vectors of at most 32 bytes (PK_ROWS_MAX_LANES float32), also in the AVX-512 build. */
#if PK_SIMD && PK_SIMD_BYTES >= 32
PK_VEC(pk_rows, PK_ROWS_L, float, f32x8, i32x8)
#else
PK_VEC(pk_rows, PK_ROWS_L, float, f32x4, i32x4)
#endif

#if PK_SIMD

#if defined(__clang__)
#define PK_ROWS_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define PK_ROWS_SHUF(a, b, ...) __builtin_shuffle(a, b, (pk_rows_m){__VA_ARGS__})
#endif

/* The even and the odd values of a then b.  With 32-byte vectors the split is the in-lane one
 * (vshufps: [a0 a2 b0 b2 | a4 a6 b4 b6]), whose lane order pk_rows_order puts right once per
 * result (a lane-crossing split of every operand cost twice the shuffles). */
static inline pk_rows_v pk_rows_even(pk_rows_v a, pk_rows_v b)
{
#if PK_SIMD_BYTES >= 32
    return PK_ROWS_SHUF(a, b, 0, 2, 8, 10, 4, 6, 12, 14);
#else
    return PK_ROWS_SHUF(a, b, 0, 2, 4, 6);
#endif
}

static inline pk_rows_v pk_rows_odd(pk_rows_v a, pk_rows_v b)
{
#if PK_SIMD_BYTES >= 32
    return PK_ROWS_SHUF(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
#else
    return PK_ROWS_SHUF(a, b, 1, 3, 5, 7);
#endif
}

/* A result of `rounds` (1 or 2) in-lane splits in output order. */
static inline pk_rows_v pk_rows_order(pk_rows_v m, int rounds)
{
#if PK_SIMD_BYTES >= 32
    if (rounds == 1)
        return (pk_rows_v)_mm256_permute4x64_pd((__m256d)m, 0xD8);
    return PK_ROWS_SHUF(m, m, 0, 4, 1, 5, 2, 6, 3, 7);
#else
    (void)rounds;
    return m;
#endif
}

#else  /* scalar: one value per "vector", the same passes */

static inline pk_rows_v pk_rows_even(pk_rows_v a, pk_rows_v b) { (void)b; return a; }
static inline pk_rows_v pk_rows_odd(pk_rows_v a, pk_rows_v b) { (void)a; return b; }
static inline pk_rows_v pk_rows_order(pk_rows_v m, int rounds) { (void)rounds; return m; }

#endif

/* The first maxima of the pairs of a then b, in pk_rows_even's lane order (pk_rows_order puts
 * them right); and of the triples p[2j], p[2j + 1], p[2j + 2], j < L, the same way (a 3-wide
 * window with stride 2). */
static inline pk_rows_v pk_rows_pairs(pk_rows_v a, pk_rows_v b)
{
    return pk_rows_max(pk_rows_even(a, b), pk_rows_odd(a, b));
}
static inline pk_rows_v pk_rows_trios(const float* p)
{
    pk_rows_v m = pk_rows_pairs(pk_rows_ld(p), pk_rows_ld(p + PK_ROWS_L));
    return pk_rows_max(m, pk_rows_even(pk_rows_ld(p + 2), pk_rows_ld(p + 2 + PK_ROWS_L)));
}

/* The whole-vector loops of both passes unrolled, by 4 and by 2 (GCC and Clang): rolled, each
 * iteration's loop overhead rivalled its 4-6 loads and one store (docs/tuning.md#rows_first-passes).
 * Pass 2 unrolled by 4 was no faster than by 2. */
#if defined(__GNUC__) || defined(__clang__)
#define PK_ROWS_UNROLL(n) _Pragma(PK_ROWS_STR(GCC unroll n))
#define PK_ROWS_STR(x) #x
#else
#define PK_ROWS_UNROLL(n)
#endif

/* TILES' 2x2 (2-D) and 2x2x2 (3-D) stride-2 windows in one pass over the input: pk_tiles_k2_f32,
 * pk_tiles_k2_h16 (pooling_rows_body.h).  Rows read side by side have the input PK_TILES_AHEAD bytes
 * ahead prefetched. */
#define PK_TILES_AHEAD 4096

/* Values of one thread's row buffer: the padded row V that the windows read, plus spare
 * vectors' worth (`lanes`: the kind's widest) for the overlapping loads. */
static inline ptrdiff_t pk_rows_len(ptrdiff_t W, ptrdiff_t OW, ptrdiff_t kw, ptrdiff_t sw,
                                    ptrdiff_t dw, ptrdiff_t pw, ptrdiff_t lanes)
{
    ptrdiff_t reach = sw == 4 ? 4 * OW : sw == 2 ? 2 * OW + 2 : OW + (kw - 1) * dw;
    ptrdiff_t n = pw + W > reach ? pw + W : reach;
    return n + 2 * lanes;
}

/* The padding of R row buffers of ld values each: the lowest value or key where no input column
 * lands (pk_rows_pad: float32's -inf; pk_rows_pad_h16: 16-bit floats' and integers' INT16_MIN key;
 * pk_rows_pad_i32: INT32_MIN). */
#define PK_ROWS_PAD(NAME, T, LOWEST)                                                               \
static inline void NAME(T* V, ptrdiff_t ld, ptrdiff_t R, ptrdiff_t W, ptrdiff_t pw)                 \
{                                                                                                   \
    for (ptrdiff_t r = 0; r < R; r++) {                                                             \
        for (ptrdiff_t i = 0; i < pw && i < ld; i++)                                                \
            V[r * ld + i] = (LOWEST);                                                               \
        for (ptrdiff_t i = pw + W; i < ld; i++)                                                     \
            V[r * ld + i] = (LOWEST);                                                               \
    }                                                                                               \
}
PK_ROWS_PAD(pk_rows_pad, float, -INFINITY)
PK_ROWS_PAD(pk_rows_pad_h16, int16_t, INT16_MIN)
PK_ROWS_PAD(pk_rows_pad_i32, int32_t, INT32_MIN)

/* 16-bit floats (float16, bfloat16) travel as keys (key in pooling_rows_h16.h): int16s whose signed order is the
 * value order for every value but NaN and -0.0, mapped back to the same bits on the way out.  The
 * loads of the rows pass 1 checks are looked for those two (its chk), and a plane holding one is
 * the caller's to compute exactly.  Vectors of int16 keys of up to 32 bytes (vpmaxsw, SSE2's
 * pmaxsw) hold twice float32's lanes.  The padding is INT16_MIN, below every key. */
#define PK_ROWS_H16_MAX_LANES 16   /* the widest build's int16 lanes (the spare values row buffers keep) */

/* The family of the build's widest vectors up to 32 bytes (pk_rh_*), and where those are wider,
 * a 16-byte one (pk_rn_*) for rows of 8 to 15: pooling_rows_h16.h. */
#if PK_SIMD && PK_SIMD_BYTES >= 32
#define PK_RH_WIDEST 32
#elif PK_SIMD
#define PK_RH_WIDEST 16
#else
#define PK_RH_WIDEST 2
#endif
#define PK_RH(op) pk_rh_##op
#define PK_RH_BYTES PK_RH_WIDEST
#include "pooling_rows_h16.h"
#define PK_RH_L pk_rh_lanes

#if PK_SIMD && PK_SIMD_BYTES >= 32
#define PK_RH(op) pk_rn_##op
#define PK_RH_BYTES 16
#include "pooling_rows_h16.h"
#define PK_RN_L pk_rn_lanes
#else
#define PK_RN_L PK_RH_L
#endif
#define PK_ROWS_H16_MIN_LANES 8   /* the 16-byte family's lanes: 16-bit rows at least this long */

/* The float32 family compares values as they are and checks them for NaN (pass 2 finds the zero
 * results beside which a -0.0 would matter). */
PK_VEC_CHECKS(pk_rows, float)

/* The passes and the plane loop (pooling_rows_body.h, which undefines its parameters): pk_rows_f32,
 * and pk_rows_h16 for 16-bit floats' bits. */
#define PK_RB_T float
#define PK_RB_N(name) name##_f32
#define PK_RB_F(op) pk_rows_##op
#define PK_RB_V pk_rows_v
#define PK_RB_M pk_rows_m
#define PK_RB_L PK_ROWS_L
#define PK_RB_C pk_rows_c
#define PK_RB_ZEROS 1
#define PK_RB_KEY(v, u) ((void)(u), pk_rows_key(v))
#define PK_RB_STY(p, v, u) ((void)(u), pk_rows_sty(p, v))
#include "pooling_rows_body.h"

#define PK_RB_T int16_t
#define PK_RB_N(name) name##_h16
#define PK_RB_F(op) pk_rh_##op
#define PK_RB_V pk_rh_v
#define PK_RB_M pk_rh_m
#define PK_RB_L PK_RH_L
#define PK_RB_C pk_rh_c
#define PK_RB_ZEROS 0
#define PK_RB_KEY(v, u) ((void)(u), pk_rh_key(v))
#define PK_RB_STY(p, v, u) ((void)(u), pk_rh_sty(p, v))
#include "pooling_rows_body.h"

/* The same for rows of 8 to 15 (pk_rows_h16n, pk_tiles_k2_h16n): the 16-byte family, where the
 * build's widest is wider; elsewhere those names are the widest family's. */
#if PK_SIMD && PK_SIMD_BYTES >= 32
#define PK_RB_T int16_t
#define PK_RB_N(name) name##_h16n
#define PK_RB_F(op) pk_rn_##op
#define PK_RB_V pk_rn_v
#define PK_RB_M pk_rn_m
#define PK_RB_L PK_RN_L
#define PK_RB_C pk_rn_c
#define PK_RB_ZEROS 0
#define PK_RB_KEY(v, u) ((void)(u), pk_rn_key(v))
#define PK_RB_STY(p, v, u) ((void)(u), pk_rn_sty(p, v))
#include "pooling_rows_body.h"
#else
#define pk_rows_h16n pk_rows_h16
#define pk_tiles_k2_h16n pk_tiles_k2_h16
#endif

/* The integers of 2 and 4 bytes (int16 and uint16, int32 and uint32; MaxPool runs the unsigned ones
 * in the signed type: src/kernels/common.pxi) run the same passes and TILES' one pass, comparing
 * values as they are, or for the unsigned ones by their bits with the sign bit flipped (the body's
 * u, the call's inf_bits): keys whose signed order is the unsigned one.  No checks: no integer is
 * what the cheap compare gets wrong.  16 bits: the int16 family's operations (pooling_rows_h16.h
 * with PK_RH_INT), in the same two widths; the buffers' padding is INT16_MIN (pk_rows_pad_h16), the
 * lowest key. */
#define PK_RH(op) pk_ri_##op
#define PK_RH_BYTES PK_RH_WIDEST
#define PK_RH_INT
#include "pooling_rows_h16.h"
#undef PK_RH_INT

#define PK_RB_T int16_t
#define PK_RB_N(name) name##_i16
#define PK_RB_F(op) pk_ri_##op
#define PK_RB_V pk_ri_v
#define PK_RB_M pk_ri_m
#define PK_RB_L pk_ri_lanes
#define PK_RB_C pk_ri_c
#define PK_RB_ZEROS 0
#define PK_RB_KEY(v, u) pk_ri_key(v, u)
#define PK_RB_STY(p, v, u) pk_ri_sty(p, v, u)
#include "pooling_rows_body.h"

#if PK_SIMD && PK_SIMD_BYTES >= 32
#define PK_RH(op) pk_rj_##op
#define PK_RH_BYTES 16
#define PK_RH_INT
#include "pooling_rows_h16.h"
#undef PK_RH_INT

#define PK_RB_T int16_t
#define PK_RB_N(name) name##_i16n
#define PK_RB_F(op) pk_rj_##op
#define PK_RB_V pk_rj_v
#define PK_RB_M pk_rj_m
#define PK_RB_L pk_rj_lanes
#define PK_RB_C pk_rj_c
#define PK_RB_ZEROS 0
#define PK_RB_KEY(v, u) pk_rj_key(v, u)
#define PK_RB_STY(p, v, u) pk_rj_sty(p, v, u)
#include "pooling_rows_body.h"
#else
#define pk_rows_i16n pk_rows_i16
#define pk_tiles_k2_i16n pk_tiles_k2_i16
#endif

/* 32 bits: vectors of at most 32 bytes, as float32's (int32 maxima: vpmaxsd; SSE4.1's pmaxsd; a select
 * in SSE2), with float32's even/odd split and lane order. */
#if PK_SIMD
#if PK_SIMD_BYTES >= 32
typedef int32_t pk_r32_v __attribute__((vector_size(32)));
#else
typedef int32_t pk_r32_v __attribute__((vector_size(16)));
#endif
#else
typedef int32_t pk_r32_v;
#endif
typedef pk_r32_v pk_r32_m;
enum { PK_R32_L = sizeof(pk_r32_v) / sizeof(int32_t) };
typedef int pk_r32_c;

static inline pk_r32_v pk_r32_ld(const int32_t* p)
{
    pk_r32_v v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void pk_r32_st(int32_t* p, pk_r32_v v) { memcpy(p, &v, sizeof v); }
static inline pk_r32_v pk_r32_key(pk_r32_v v, int u) { return v ^ (int32_t)(u ? INT32_MIN : 0); }
static inline void pk_r32_sty(int32_t* p, pk_r32_v v, int u) { pk_r32_st(p, pk_r32_key(v, u)); }
static inline pk_r32_c pk_r32_clean(void) { return 0; }
static inline void pk_r32_chk(pk_r32_c* c, pk_r32_v a, pk_r32_v b) { (void)c; (void)a; (void)b; }
static inline int pk_r32_bad(pk_r32_c c, int inf_bits) { (void)c; (void)inf_bits; return 0; }
static inline pk_r32_v pk_r32_max(pk_r32_v a, pk_r32_v b)
{
#if PK_SIMD && PK_SIMD_BYTES >= 32
    return (pk_r32_v)_mm256_max_epi32((__m256i)a, (__m256i)b);
#elif PK_SIMD && defined(__SSE4_1__)
    return (pk_r32_v)_mm_max_epi32((__m128i)a, (__m128i)b);
#elif PK_SIMD
    pk_r32_m g = b > a;
    return (b & g) | (a & ~g);
#else
    return b > a ? b : a;
#endif
}
#if PK_SIMD
/* float32's shuffles, on the same bits (a split or a lane order moves lanes, never converts them) */
static inline pk_r32_v pk_r32_even(pk_r32_v a, pk_r32_v b) { return (pk_r32_v)pk_rows_even((pk_rows_v)a, (pk_rows_v)b); }
static inline pk_r32_v pk_r32_odd(pk_r32_v a, pk_r32_v b) { return (pk_r32_v)pk_rows_odd((pk_rows_v)a, (pk_rows_v)b); }
static inline pk_r32_v pk_r32_order(pk_r32_v m, int rounds) { return (pk_r32_v)pk_rows_order((pk_rows_v)m, rounds); }
#else
static inline pk_r32_v pk_r32_even(pk_r32_v a, pk_r32_v b) { (void)b; return a; }
static inline pk_r32_v pk_r32_odd(pk_r32_v a, pk_r32_v b) { (void)a; return b; }
static inline pk_r32_v pk_r32_order(pk_r32_v m, int rounds) { (void)rounds; return m; }
#endif
static inline pk_r32_v pk_r32_pairs(pk_r32_v a, pk_r32_v b) { return pk_r32_max(pk_r32_even(a, b), pk_r32_odd(a, b)); }
static inline pk_r32_v pk_r32_trios(const int32_t* p)
{
    pk_r32_v m = pk_r32_pairs(pk_r32_ld(p), pk_r32_ld(p + PK_R32_L));
    return pk_r32_max(m, pk_r32_even(pk_r32_ld(p + 2), pk_r32_ld(p + 2 + PK_R32_L)));
}

#define PK_RB_T int32_t
#define PK_RB_N(name) name##_i32
#define PK_RB_F(op) pk_r32_##op
#define PK_RB_V pk_r32_v
#define PK_RB_M pk_r32_m
#define PK_RB_L PK_R32_L
#define PK_RB_C pk_r32_c
#define PK_RB_ZEROS 0
#define PK_RB_KEY(v, u) pk_r32_key(v, u)
#define PK_RB_STY(p, v, u) pk_r32_sty(p, v, u)
#include "pooling_rows_body.h"

/* TILES' W pass for float32 windows 2 wide (src/kernels/maxpool_tiles.pxi): dst[i] = the first
 * maximum of src[2i], src[2i + 1] by the cheap compare, i < n; returns whether src held a NaN (dst is
 * then to be redone exactly).  pass 2's even/odd split, whole vectors then a scalar remainder: the
 * compiler's own vectorisation of the pair loop split every operand across lanes (vpermd), and the
 * AVX2 build ran slower than the baseline one (docs/tuning.md#tiles-strategy). */
static inline int pk_tiles_w2_f32(const float* src, float* dst, ptrdiff_t n)
{
    pk_rows_m bad = {0};
    ptrdiff_t i = 0;
    int odd = 0;
    for (; i + PK_ROWS_L <= n; i += PK_ROWS_L)
        pk_rows_st(dst + i, pk_rows_order(pk_tiles_pair_f32(src, i, &bad, 0), 1));
    for (; i < n; i++) {
        float a = src[2 * i], b = src[2 * i + 1];
        odd |= (a != a) | (b != b);
        dst[i] = b > a ? b : a;
    }
    return odd | pk_rows_any(bad);
}

/* The same for 16-bit floats' bits: dst[i] = the fast key (pk_half_fast_key, what the batch form's
 * passes hold) of the first maximum of src[2i], src[2i + 1]; returns whether src held a NaN or a -0.0.
 * The compiler's own vectorisation of the pair loop widened each value's check to 32 bits. */
static inline pk_rh_v pk_rh_fast_key(pk_rh_v v) { return v ^ ((v >> 15) & 0x7fff); }
static inline int pk_tiles_w2_h16(const int16_t* src, int16_t* dst, ptrdiff_t n, int inf_bits)
{
    pk_rh_c bad = pk_rh_clean();
    ptrdiff_t i = 0;
    int odd = 0;
    for (; i + PK_RH_L <= n; i += PK_RH_L) {
        pk_rh_v a = pk_rh_ld(src + 2 * i), b = pk_rh_ld(src + 2 * i + PK_RH_L);
        pk_rh_chk(&bad, a, b);
        pk_rh_st(dst + i, pk_rh_order(pk_rh_pairs(pk_rh_fast_key(a), pk_rh_fast_key(b)), 1));
    }
    for (; i < n; i++) {
        uint16_t a = (uint16_t)src[2 * i], b = (uint16_t)src[2 * i + 1];
        int16_t ka = pk_half_fast_key(a), kb = pk_half_fast_key(b);
        odd |= pk_half_isnan(a, (uint16_t)inf_bits) | (a == 0x8000)
               | pk_half_isnan(b, (uint16_t)inf_bits) | (b == 0x8000);
        dst[i] = kb > ka ? kb : ka;
    }
    return odd | pk_rh_bad(bad, inf_bits);
}

/* TILES' batch form along H for 16-bit keys on rows of 4 to 8 (VGG's pool5 in float16): output rows
 * q < n - 1 of y (OW apart) as 8 values each, the maxima of buf's rows 2q and 2q + 1 (OW apart); the
 * lanes past OW write the start of the next output row, which its own pass writes again, so the caller
 * does the last row.  The loop in Cython stayed scalar (8 compares and stores a row). */
#if PK_SIMD && PK_SIMD_BYTES >= 32
#define PK_TILES_H8(op) pk_rn_##op
#else
#define PK_TILES_H8(op) pk_rh_##op
#endif
static inline void pk_tiles_h2_k16(const int16_t* buf, int16_t* y, ptrdiff_t n, ptrdiff_t OW)
{
    for (ptrdiff_t q = 0; q + 1 < n; q++)
        for (int c = 0; c < 8; c += PK_RN_L)
            PK_TILES_H8(st)(y + q * OW + c, PK_TILES_H8(max)(PK_TILES_H8(ld)(buf + 2 * q * OW + c),
                                                              PK_TILES_H8(ld)(buf + (2 * q + 1) * OW + c)));
}
#undef PK_TILES_H8

#endif
