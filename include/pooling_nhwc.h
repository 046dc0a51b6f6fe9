/* Strategy NHWC_BLOCKS (src/kernels/maxpool_nhwc.pxi): float32 and 16-bit float channels-last
 * MaxPool without Indices, channels in blocks of vectors held in registers.
 *
 * An output pixel's window is the same taps for every channel, and the channels are contiguous:
 * so each block of up to four vectors of channels is loaded from the window's first tap, combined
 * with every later tap in the window's order (depth, then rows, then columns), and stored once.
 * That is one load and one maxps per tap and vector, where the exact loop (_nhwc_tap) reads,
 * compares, blends and writes the output back on every tap.  A row's last channels, when C is not
 * a whole number of vectors, are one more vector ending at C: it overlaps the block before it and
 * writes the same values there again.
 *
 * Exactness: each combine keeps its earlier operand unless the later one is strictly greater
 * (pk_nw_max), so ties (-0.0 against +0.0) resolve to the first in window order, as the contract
 * says.  Only a NaN breaks the cheap compare: each input row is looked for one (in the loads of
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

/* The float32 kind: NARROW's vectors, compared as they are, checked for NaN. */
static inline pk_nw_v pk_nw_key(pk_nw_v v) { return v; }
static inline void pk_nw_sty(float* p, pk_nw_v v) { pk_nw_st(p, v); }
typedef pk_nw_m pk_nw_c;
static inline pk_nw_c pk_nw_clean(void)
{
    pk_nw_c c;
    memset(&c, 0, sizeof c);
    return c;
}
static inline void pk_nw_chk(pk_nw_c* c, pk_nw_v a, pk_nw_v b) { *c |= pk_nw_nan(a, b); }
static inline int pk_nw_bad(pk_nw_c c, int inf_bits) { (void)inf_bits; return pk_nw_any(c); }

#define PK_NB_T float
#define PK_NB_N(name) name##_f32_
#define PK_NB_F(op) pk_nw_##op
#define PK_NB_V pk_nw_v
#define PK_NB_C pk_nw_c
#define PK_NB_L PK_NARROW_L
#include "pooling_nhwc_body.h"
#undef PK_NB_T
#undef PK_NB_N
#undef PK_NB_F
#undef PK_NB_V
#undef PK_NB_C
#undef PK_NB_L

/* 16-bit floats: ROWS_FIRST's int16 keys and checks (pooling_rows.h), vectors of up to 32 bytes;
 * C must be at least one of them (PK_NHWC_H16_L). */
#define PK_NHWC_H16_L PK_RH_L
#define PK_NB_T int16_t
#define PK_NB_N(name) name##_h16_
#define PK_NB_F(op) pk_rh_##op
#define PK_NB_V pk_rh_v
#define PK_NB_C pk_rh_c
#define PK_NB_L PK_RH_L
#include "pooling_nhwc_body.h"
#undef PK_NB_T
#undef PK_NB_N
#undef PK_NB_F
#undef PK_NB_V
#undef PK_NB_C
#undef PK_NB_L

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

/* The same for 16-bit floats' bits (inf_bits: the format's +inf pattern). */
static int pk_nhwc_row_h16(const int16_t* const* rows, const unsigned char* chk, ptrdiff_t nrows,
                           int16_t* y, ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw,
                           ptrdiff_t pw, ptrdiff_t own, const ptrdiff_t* tw, const int16_t* next,
                           ptrdiff_t nlen, int inf_bits)
{
    if (nlen > 0)
        return pk_nhwc_row_h16_(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, next, nlen, inf_bits);
    return pk_nhwc_row_h16_(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, rows[0], 0, inf_bits);
}

#endif
