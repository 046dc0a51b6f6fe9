/* Strategy NHWC_BLOCKS (src/kernels/maxpool_nhwc.pxi): float32, 16-bit float and 2- and 4-byte integer
 * channels-last MaxPool without Indices, channels in blocks of vectors held in registers.
 *
 * An output pixel's window is the same taps for every channel, and the channels are contiguous:
 * so each block of up to four vectors of channels is loaded from the window's first tap, combined
 * with every later tap in the window's order (depth, then rows, then columns), and stored once.
 * That is one load and one maxps per tap and vector, where the exact loop (_nhwc_tap) reads,
 * compares, blends and writes the output back on every tap.  A row's last channels, when C is not
 * a whole number of vectors, are one more vector ending at C: it overlaps the block before it and
 * writes the same values there again.
 *
 * Exactness: each combine keeps its earlier operand unless the later one is strictly greater (the
 * family's max: maxps for float32), so ties (-0.0 against +0.0) resolve to the first in window order,
 * as the contract says.  Only a NaN breaks the cheap compare: each input row is looked for one (in the loads of
 * the taps, once per column) by the first output row that reads it, which the caller then
 * computes with the exact loop, as it does every later output row reading that input row.
 *
 * 16-bit floats run the same loops (pooling_nhwc_body.h) on ROWS_FIRST's int16 keys
 * (include/pooling_rows.h), whose checks find -0.0 as well as NaN: keys tie -0.0 with +0.0.
 *
 * The float32 vector primitives are NARROW's (include/pooling_narrow.h): one lane where the build has
 * no vector extensions.  C must be at least one vector (PK_NARROW_L; PK_NHWC_H16_L for 16 bits). */
#ifndef POOLING_NHWC_H
#define POOLING_NHWC_H

#include "pooling_narrow.h"
#include "pooling_prefetch.h"
#include "pooling_rows.h"

/* Vectors of channels per block: four accumulators and a load fit the 16 registers of SSE2/AVX2. */
#define PK_NHWC_BLOCK 4

/* With Indices, the most taps of a window taken as one list (pk_nhwc_itaps): 4x4x4 windows. */
#define PK_NHWC_ITAPS 64

/* With Indices (the NHWC strategy's calls with Indices and at least a vector of channels, float32 and the
 * 4-byte integers): the same loops carrying each lane's winner beside its value, the pixel (within the
 * image) of its first maximum, in an int32 vector: a tap's lanes that are strictly greater take its
 * value and its pixel, so ties keep the first, as the contract says.  The winners are written as
 * Indices in the kernels' NHWC encoding: base + pixel * imul + channel * icmul.  The same NaN checks
 * as pk_nhwc_row (a row holding one is the caller's to compute exactly).  A kind with Indices defines
 * PK_NB_M (its int32 lanes), PK_NB_Q and PK_NB_WIDEN (their halves as int64), PK_NB_GT(a, b) (the
 * lanes where b > a, all ones) and PK_NB_IBLEND(w, f, m) (w where m is set, else f) besides the block
 * loops' parameters. */
#if PK_SIMD
#define PK_NHWC_GT(P) static inline P##_m P##_gt(P##_v a, P##_v b) { return b > a; }
#else
#define PK_NHWC_GT(P) static inline P##_m P##_gt(P##_v a, P##_v b) { return b > a ? -1 : 0; }
#endif
PK_NHWC_GT(pk_nw)
PK_NHWC_GT(pk_r32)   /* the 4-byte integers' keys (pooling_rows.h's pk_r32 family) */
#undef PK_NHWC_GT

/* one blend of the lanes' bits (blendvps in the AVX2 build) */
static inline pk_nw_m pk_nw_iblend(pk_nw_m w, pk_nw_m f, pk_nw_m m)
{
#if PK_SIMD
    return (pk_nw_m)pk_nw_blend((pk_nw_v)w, (pk_nw_v)f, m);
#else
    return (w & m) | (f & ~m);
#endif
}

/* The winners' halves as int64 (pooling_simd.h's widening, pk_widen_i32x4 and its wider twins):
 * pk_nw_q and pk_r32_q hold half a winners' vector. */
#define PK_NHWC_WIDEN(P, Q, WIDEN)                                                                    \
typedef Q P##_q;                                                                                      \
static inline void P##_widen(P##_m w, P##_q* lo, P##_q* hi) { WIDEN(w, lo, hi); }
#if PK_SIMD && PK_SIMD_BYTES >= 64
PK_NHWC_WIDEN(pk_nw, pk_i64x8, pk_widen_i32x16)
#elif PK_SIMD && PK_SIMD_BYTES >= 32
PK_NHWC_WIDEN(pk_nw, pk_i64x4, pk_widen_i32x8)
#elif PK_SIMD
PK_NHWC_WIDEN(pk_nw, pk_i64x2, pk_widen_i32x4)
#endif
#if PK_SIMD && PK_SIMD_BYTES >= 32
PK_NHWC_WIDEN(pk_r32, pk_i64x4, pk_widen_i32x8)
#elif PK_SIMD
PK_NHWC_WIDEN(pk_r32, pk_i64x2, pk_widen_i32x4)
#endif
#undef PK_NHWC_WIDEN

/* the 4-byte integers' winners, blended as float32's bits (the float32 row family has the same width) */
static inline pk_r32_m pk_r32_iblend(pk_r32_m w, pk_r32_m f, pk_r32_m m)
{
#if PK_SIMD
    return (pk_r32_m)pk_rows_blend((pk_rows_v)w, (pk_rows_v)f, (pk_rows_m)m);
#else
    return m ? w : f;
#endif
}

/* The float32 kind: NARROW's vectors, compared as they are, checked for NaN (PK_VEC_CHECKS in
 * pooling_narrow.h).  (The body file undefines its parameters.) */

#define PK_NB_T float
#define PK_NB_N(name) name##_f32_
#define PK_NB_F(op) pk_nw_##op
#define PK_NB_V pk_nw_v
#define PK_NB_C pk_nw_c
#define PK_NB_L PK_NARROW_L
#define PK_NB_KEY(v, u) ((void)(u), pk_nw_key(v))
#define PK_NB_STY(p, v, u) ((void)(u), pk_nw_sty(p, v))
#define PK_NB_M pk_nw_m
#define PK_NB_Q pk_nw_q
#define PK_NB_WIDEN pk_nw_widen
#define PK_NB_GT(a, b) pk_nw_gt(a, b)
#define PK_NB_IBLEND(w, f, m) pk_nw_iblend(w, f, m)
#include "pooling_nhwc_body.h"

/* 16-bit floats: ROWS_FIRST's int16 keys and checks (pooling_rows.h), vectors of up to 32 bytes;
 * C must be at least one of them (PK_NHWC_H16_L). */
#define PK_NHWC_H16_L PK_RH_L
#define PK_NB_T int16_t
#define PK_NB_N(name) name##_h16_
#define PK_NB_F(op) pk_rh_##op
#define PK_NB_V pk_rh_v
#define PK_NB_C pk_rh_c
#define PK_NB_L PK_RH_L
#define PK_NB_KEY(v, u) ((void)(u), pk_rh_key(v))
#define PK_NB_STY(p, v, u) ((void)(u), pk_rh_sty(p, v))
#include "pooling_nhwc_body.h"

/* The 2- and 4-byte integers: ROWS_FIRST's integer families (pooling_rows.h), no checks, the unsigned
 * ones as keys (inf_bits nonzero); C at least one vector (PK_NHWC_H16_L, PK_NHWC_I32_L). */
#define PK_NB_T int16_t
#define PK_NB_N(name) name##_i16_
#define PK_NB_F(op) pk_ri_##op
#define PK_NB_V pk_ri_v
#define PK_NB_C pk_ri_c
#define PK_NB_L pk_ri_lanes
#define PK_NB_KEY(v, u) pk_ri_key(v, u)
#define PK_NB_STY(p, v, u) pk_ri_sty(p, v, u)
#include "pooling_nhwc_body.h"

#define PK_NHWC_I32_L PK_R32_L
#define PK_NB_T int32_t
#define PK_NB_N(name) name##_i32_
#define PK_NB_F(op) pk_r32_##op
#define PK_NB_V pk_r32_v
#define PK_NB_C pk_r32_c
#define PK_NB_L PK_R32_L
#define PK_NB_KEY(v, u) pk_r32_key(v, u)
#define PK_NB_STY(p, v, u) pk_r32_sty(p, v, u)
#define PK_NB_M pk_r32_m
#define PK_NB_Q pk_r32_q
#define PK_NB_WIDEN pk_r32_widen
#define PK_NB_GT(a, b) pk_r32_gt(a, b)
#define PK_NB_IBLEND(w, f, m) pk_r32_iblend(w, f, m)
#include "pooling_nhwc_body.h"

static int pk_nhwc_row_f32(const float* const* rows, const unsigned char* chk, ptrdiff_t nrows,
                           float* y, ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw,
                           ptrdiff_t pw, ptrdiff_t own, const ptrdiff_t* tw, const float* next,
                           ptrdiff_t nlen)
{
    /* the loop without prefetches its own copy: sharing it slowed the batch-1 stem
     * (docs/tuning.md#nhwc-kernel-loops) */
    if (nlen > 0)
        return pk_nhwc_row_f32_(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, next, nlen, 0);
    return pk_nhwc_row_f32_(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, rows[0], 0, 0);
}

/* The same for 16-bit floats' bits (inf_bits: the format's +inf pattern), and for the 2- and 4-byte
 * integers (inf_bits nonzero: the unsigned ones). */
#define PK_NHWC_ROW(K, T)                                                                                  \
static int pk_nhwc_row_##K(const T* const* rows, const unsigned char* chk, ptrdiff_t nrows, T* y,         \
                           ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw,           \
                           ptrdiff_t own, const ptrdiff_t* tw, const T* next, ptrdiff_t nlen, int inf_bits) \
{                                                                                                         \
    if (nlen > 0)                                                                                         \
        return pk_nhwc_row_##K##_(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, next, nlen, inf_bits); \
    return pk_nhwc_row_##K##_(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, rows[0], 0, inf_bits);    \
}
PK_NHWC_ROW(h16, int16_t)
PK_NHWC_ROW(i16, int16_t)
PK_NHWC_ROW(i32, int32_t)
#undef PK_NHWC_ROW

/* With Indices: the "plane" format's (base and icmul 0: pooling.torch's) Indices are the winners
 * widened, in a loop of their own. */
#define PK_NHWC_IROW(K, T)                                                                                 \
static int pk_nhwc_irow_##K(const T* const* rows, const int32_t* rpix, const unsigned char* chk,          \
                            ptrdiff_t nrows, T* y, int64_t* ind, int64_t base, int64_t imul, int64_t icmul, \
                            ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw,          \
                            ptrdiff_t own, const ptrdiff_t* tw, const T* next, ptrdiff_t nlen, int inf_bits) \
{                                                                                                         \
    if (base == 0 && icmul == 0)                                                                          \
        return pk_nhwc_irow_##K##_(rows, rpix, chk, nrows, y, ind, 0, imul, 0, OW, C, sw, dw, pw, own, tw, \
                                   next, nlen, inf_bits, 1);                                              \
    return pk_nhwc_irow_##K##_(rows, rpix, chk, nrows, y, ind, base, imul, icmul, OW, C, sw, dw, pw, own, tw, \
                               next, nlen, inf_bits, 0);                                                  \
}
PK_NHWC_IROW(f32, float)
PK_NHWC_IROW(i32, int32_t)
#undef PK_NHWC_IROW

#endif
