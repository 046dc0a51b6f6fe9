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
#include "pooling_nhwc_body.h"

/* NHWC with Indices, float32 (the NHWC strategy's calls with Indices and at least a vector of
 * channels): NHWC_BLOCKS' loops carrying each lane's winner beside its value, the pixel (within the
 * image) of its first maximum, in an int32 vector: a tap's lanes that are strictly greater take its
 * value and its pixel, so ties keep the first, as the contract says.  The winners are written as
 * Indices in the kernels' NHWC encoding: base + pixel * imul + channel * icmul.  The same NaN
 * checks as pk_nhwc_row (a row holding one is the caller's to compute exactly). */
static inline pk_nw_m pk_nw_gt(pk_nw_v a, pk_nw_v b)   /* lanes where b > a, all ones */
{
#if PK_SIMD
    return b > a;
#else
    return b > a ? -1 : 0;
#endif
}

static inline pk_nw_m pk_nw_isplat(int32_t x)
{
#if PK_SIMD
    pk_nw_m v = {0};
    return v + x;
#else
    return x;
#endif
}

/* w where m is set, else f: one blend of the lanes' bits (blendvps in the AVX2 build) */
static inline pk_nw_m pk_nw_iblend(pk_nw_m w, pk_nw_m f, pk_nw_m m)
{
#if PK_SIMD
    return (pk_nw_m)pk_nw_blend((pk_nw_v)w, (pk_nw_v)f, m);
#else
    return (w & m) | (f & ~m);
#endif
}

/* One tap of a block: values p, pixel tp. */
#define PK_NHWC_ITAP(CHECK)                                                                       \
    for (int i = 0; i < V; i++) {                                                                 \
        pk_nw_v v = pk_nw_ld(p + t * step + i * PK_NARROW_L);                                     \
        pk_nw_m g = pk_nw_gt(acc[i], v);                                                          \
        if (CHECK)                                                                                \
            b |= pk_nw_nan(v, v);                                                                 \
        acc[i] = pk_nw_max(acc[i], v);                                                            \
        win[i] = pk_nw_iblend(tp, win[i], g);                                                     \
    }

/* The lanes of a winners' vector as int64, for the Indices. */
#if PK_SIMD
typedef int64_t pk_nw_l __attribute__((vector_size(2 * sizeof(pk_nw_m))));
#else
typedef int64_t pk_nw_l;
#endif

/* The winners are held as pixel * imul (int32: the caller takes this path only where every pixel
 * of an image times imul is below 2**31), so that an Index is base + winner + channel * icmul:
 * a widening and an add, with icl the lanes' channel * icmul. */
static PK_ALWAYS_INLINE void
pk_nhwc_iblock(const float* const* rows, const int32_t* rpix, const unsigned char* chk, ptrdiff_t nrows,
               ptrdiff_t off, int32_t col, ptrdiff_t step, int32_t dw, ptrdiff_t ntaps, ptrdiff_t ctaps,
               float* y, int64_t* ind, int64_t base, int32_t imul, int64_t icmul, const pk_nw_l* icl, ptrdiff_t c0,
               pk_nw_m* bad, const int V)
{
    pk_nw_v acc[PK_NHWC_BLOCK];
    pk_nw_m win[PK_NHWC_BLOCK], b = *bad;
    const float* p = rows[0] + off;
    for (int i = 0; i < V; i++) {
        acc[i] = pk_nw_ld(p + i * PK_NARROW_L);
        win[i] = pk_nw_isplat((rpix[0] + col) * imul);
    }
    if (chk[0] && ctaps > 0)
        for (int i = 0; i < V; i++)
            b |= pk_nw_nan(acc[i], acc[i]);
    for (ptrdiff_t r = 0; r < nrows; r++) {
        ptrdiff_t t = r == 0;
        p = rows[r] + off;
        if (chk[r])
            for (; t < ctaps; t++) {
                pk_nw_m tp = pk_nw_isplat((rpix[r] + col + (int32_t)t * dw) * imul);
                PK_NHWC_ITAP(1)
            }
        for (; t < ntaps; t++) {
            pk_nw_m tp = pk_nw_isplat((rpix[r] + col + (int32_t)t * dw) * imul);
            PK_NHWC_ITAP(0)
        }
    }
    for (int i = 0; i < V; i++) {
        pk_nw_st(y + i * PK_NARROW_L, acc[i]);
        int64_t first = base + (c0 + i * PK_NARROW_L) * icmul;
#if PK_SIMD
        pk_nw_l wide = __builtin_convertvector(win[i], pk_nw_l) + *icl + first;
        memcpy(ind + c0 + i * PK_NARROW_L, &wide, sizeof wide);
#else
        (void)icl;
        ind[c0 + i] = first + win[i];
#endif
    }
    *bad = b;
}
#undef PK_NHWC_ITAP

/* As pk_nhwc_row_f32, with the Indices: rpix[r] is the first pixel of row r (its row number times W),
 * ind the output row's Indices (OW * C), encoded from base, imul and icmul (an image's pixels times
 * imul below 2**31: the caller's check). */
static int pk_nhwc_irow_f32(const float* const* rows, const int32_t* rpix, const unsigned char* chk,
                            ptrdiff_t nrows, float* y, int64_t* ind, int64_t base, int64_t imul,
                            int64_t icmul, ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw,
                            ptrdiff_t pw, ptrdiff_t own, const ptrdiff_t* tw, const float* next,
                            ptrdiff_t nlen)
{
    const ptrdiff_t B = PK_NHWC_BLOCK * PK_NARROW_L;
    const ptrdiff_t step = dw * C;
    const ptrdiff_t per = ((nlen + 15) / 16 + OW - 1) / OW;   /* lines of next per column */
    ptrdiff_t ahead = 0;
    pk_nw_m bad = pk_nw_clean();
    ptrdiff_t c = 0;
    const int32_t imul32 = (int32_t)imul;
    pk_nw_l icl;
#if PK_SIMD
    for (int l = 0; l < PK_NARROW_L; l++)
        icl[l] = l * icmul;
#else
    icl = 0;
#endif
    for (ptrdiff_t ow = 0; ow < OW; ow++, y += C, ind += C) {
        if (nlen > 0)
            for (ptrdiff_t l = 0; l < per && ahead < nlen; l++, ahead += 16)
                pk_prefetch(next + ahead);
        ptrdiff_t t0 = tw[2 * ow], n = tw[2 * ow + 1] - t0;
        int32_t col = (int32_t)(ow * sw - pw + t0 * dw);
        ptrdiff_t off = col * C;
        ptrdiff_t m = ow == OW - 1 ? n : own - t0 > n ? n : own - t0;
        for (c = 0; c + B <= C; c += B)
            pk_nhwc_iblock(rows, rpix, chk, nrows, off + c, col, step, (int32_t)dw, n, m, y + c, ind, base,
                           imul32, icmul, &icl, c, &bad, PK_NHWC_BLOCK);
        for (; c + PK_NARROW_L <= C; c += PK_NARROW_L)
            pk_nhwc_iblock(rows, rpix, chk, nrows, off + c, col, step, (int32_t)dw, n, m, y + c, ind, base,
                           imul32, icmul, &icl, c, &bad, 1);
        if (c < C)
            pk_nhwc_iblock(rows, rpix, chk, nrows, off + C - PK_NARROW_L, col, step, (int32_t)dw, n, m,
                           y + C - PK_NARROW_L, ind, base, imul32, icmul, &icl, C - PK_NARROW_L, &bad, 1);
    }
    return pk_nw_any(bad);
}

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

#endif
