/* Strategy NARROW (src/kernels/maxpool_narrow.pxi): float32 NCHW MaxPool without Indices whose
 * input and output rows fit three vectors (W, OW <= three times the build's float32 lanes L: 48
 * in the AVX-512 build, 24 with AVX2, 12 with SSE2) and whose W stride is 1: the 7x7 planes of Inception's
 * last branch pools, the 13x13 to 40x40 ones of YOLO's SPPF/SPP, Inception-v3's 35x35, with hundreds of channels,
 * where every other kernel pays a set-up per plane or per row (or a transpose) that costs more
 * than the compares.  A plane at a time, a strip of L columns at a time, in registers:
 *
 *   1. each input row r the windows read is reduced along W as one vector per strip: lane l is
 *      the first maximum of x[r][c0 + l - pw + t * dw] over the taps t < kw, each tap one load
 *      at the strip's start plus t * dw - pw, its lanes outside the row replaced by -inf (masks
 *      fixed for the call: they depend only on the lane and the strip);
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
 * the caller redoes it with the exact compare.
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
static inline void pk_nw_st_first(float* p, pk_nw_v v, ptrdiff_t n)
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

/* Lane l of a strip whose first column is c0: tap t reads column c0 + l - pw + t * dw */
static inline void pk_nw_lane_masks(pk_nw_m* masks, pk_nw_m* valid, ptrdiff_t W, ptrdiff_t c0,
                                    ptrdiff_t kw, ptrdiff_t dw, ptrdiff_t pw)
{
#if PK_SIMD
    for (ptrdiff_t t = 0; t < kw; t++)
        for (int l = 0; l < PK_NARROW_L; l++) {
            ptrdiff_t c = c0 + l - pw + t * dw;
            masks[t][l] = (0 <= c && c < W) ? -1 : 0;
        }
    for (int l = 0; l < PK_NARROW_L; l++)
        (*valid)[l] = c0 + l < W ? -1 : 0;
#else
    for (ptrdiff_t t = 0; t < kw; t++)
        masks[t] = (0 <= c0 + t * dw - pw && c0 + t * dw - pw < W) ? -1 : 0;
    *valid = c0 < W ? -1 : 0;
#endif
}

/* The widest rows (three vectors of this build's float32 lanes) and the most taps per axis. */
#define PK_NARROW_STRIPS 3
#define PK_NARROW_WIDTH (PK_NARROW_STRIPS * PK_NARROW_L)
#define PK_NARROW_MAX_K 16

/* Values a plane's copy needs before and after it so that no load leaves it. */
static inline ptrdiff_t pk_narrow_margin(ptrdiff_t kw, ptrdiff_t dw)
{
    return PK_NARROW_STRIPS * PK_NARROW_L + (kw - 1) * dw + 1;
}

/* The lane masks of one strip of a call's W taps (kw <= PK_NARROW_MAX_K). */
typedef struct {
    pk_nw_m tap[PK_NARROW_MAX_K];
    pk_nw_m valid;   /* lanes whose column is below W */
} pk_narrow_masks;

/* The row reduced along W (step 1 of the banner), NaN lanes of its values or-ed into *bad. */
static PK_ALWAYS_INLINE pk_nw_v pk_narrow_row(const float* row, const pk_nw_m* tap, pk_nw_m valid, ptrdiff_t kw,
                                    ptrdiff_t dw, ptrdiff_t pw, pk_nw_v neg, pk_nw_m* bad)
{
    pk_nw_v m = neg;
    pk_nw_v x0 = pk_nw_ld(row);
    *bad |= pk_nw_nan(x0, x0) & valid;
    for (ptrdiff_t t = 0; t < kw; t++) {
        pk_nw_v v = pk_nw_blend(pk_nw_ld(row + t * dw - pw), neg, tap[t]);
        m = t == 0 ? v : pk_nw_max(m, v);
    }
    return m;
}

/* Output row oh's strip vector to y + oh * OW (y: the strip's first column): whole where it ends
 * inside the plane's OH rows (its lanes past the row spill into the next row's first strip, which
 * is stored after it), lane by lane otherwise (the lanes below OW - c0). */
static PK_ALWAYS_INLINE void pk_narrow_store(float* y, ptrdiff_t oh, ptrdiff_t OH, ptrdiff_t OW, ptrdiff_t c0,
                                   pk_nw_v m)
{
    if (oh * OW + c0 + PK_NARROW_L <= OH * OW) {
        pk_nw_st(y + oh * OW, m);
    } else {
        ptrdiff_t n = OW - c0 < PK_NARROW_L ? OW - c0 : PK_NARROW_L;
        pk_nw_st_first(y + oh * OW, m, n);
    }
}

/* A stride-1 window of K rows whose output has the input's shape, P of them above the output
 * row (P pads at the top): the reduced rows roll through K registers (K, P, kw literals at the
 * call sites of the common windows), each output row their first maximum in tap order, -inf
 * past the plane's edges.  One strip (y, x at its first column).  Returns 1 for a NaN. */
static PK_ALWAYS_INLINE int pk_narrow_roll(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t c0,
                                 const pk_narrow_masks* mk, ptrdiff_t K, ptrdiff_t P, ptrdiff_t kw,
                                 ptrdiff_t dw, ptrdiff_t pw, pk_nw_v neg)
{
    pk_nw_m bad = {0};
    pk_nw_v h[PK_NARROW_MAX_K], m;
    ptrdiff_t r, t;
    for (t = 0; t < K; t++) {   /* h[t]: input row t - P */
        ptrdiff_t i = t - P;
        h[t] = 0 <= i && i < H ? pk_narrow_row(x + i * W, mk->tap, mk->valid, kw, dw, pw, neg, &bad) : neg;
    }
    for (r = 0; r < H; r++) {
        m = h[0];
        for (t = 1; t < K; t++)
            m = pk_nw_max(m, h[t]);
        pk_narrow_store(y, r, H, W, c0, m);
        for (t = 0; t + 1 < K; t++)
            h[t] = h[t + 1];
        t = r + 1 + K - 1 - P;   /* the input row entering the window of output row r + 1 */
        h[K - 1] = t < H ? pk_narrow_row(x + t * W, mk->tap, mk->valid, kw, dw, pw, neg, &bad) : neg;
    }
    return pk_nw_any(bad);
}

/* One strip of an H x W plane into its OH x OW result, any geometry NARROW serves, through hb
 * (H vectors of scratch).  rows[2 * oh], rows[2 * oh + 1]: the valid H taps [t0, t1) of output
 * row oh.  Returns 1 when the plane holds a NaN (y then holds no promised values). */
static inline int pk_narrow_plane(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                                  ptrdiff_t OW, ptrdiff_t c0, const ptrdiff_t* rows, ptrdiff_t sh,
                                  ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw, ptrdiff_t pw,
                                  const pk_narrow_masks* mk, pk_nw_v neg, float* hb)
{
    pk_nw_m bad = {0};
    ptrdiff_t r, oh, t;
    for (r = 0; r < H; r++)
        pk_nw_st(hb + r * PK_NARROW_L, pk_narrow_row(x + r * W, mk->tap, mk->valid, kw, dw, pw, neg, &bad));
    if (pk_nw_any(bad))
        return 1;
    for (oh = 0; oh < OH; oh++) {
        ptrdiff_t t0 = rows[2 * oh], t1 = rows[2 * oh + 1], r0 = oh * sh - ph;
        pk_nw_v m = neg;
        for (t = t0; t < t1; t++) {
            pk_nw_v v = pk_nw_ld(hb + (r0 + t * dh) * PK_NARROW_L);
            m = t == t0 ? v : pk_nw_max(m, v);
        }
        pk_narrow_store(y, oh, OH, OW, c0, m);
    }
    return 0;
}

/* One plane's strip at column c0 through the form its geometry takes.
 *
 * Inlining: the rolling form is fast only inlined with its literal K, P and kw (its rows then stay
 * in registers); left to itself gcc 12 made it one out-of-line clone with run-time arguments
 * once the file grew, and NARROW ran several times slower (docs/tuning.md#narrow-code).  So the
 * roll and what it calls are always inlined, and this function, whose copies of the roll are the
 * hot code, is compiled as one flattened function of its own. */
static PK_FLAT_NOINLINE int pk_narrow_strip(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                                  ptrdiff_t OW, ptrdiff_t c0, ptrdiff_t kh, const ptrdiff_t* rows,
                                  ptrdiff_t sh, ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw,
                                  ptrdiff_t pw, const pk_narrow_masks* mk, pk_nw_v neg, float* hb)
{
    x += c0;
    y += c0;
    if (sh == 1 && dh == 1 && OH == H && OW == W && dw == 1) {   /* the "same" windows roll */
        /* (centred pads literal: Inception's k3 p1 and SPPF's k5 p2 ran slower with them taken
         * at run time, docs/tuning.md#narrow-code; other pads take the general roll below) */
        if (kh == 3 && kw == 3 && ph == 1 && pw == 1)
            return pk_narrow_roll(x, y, H, W, c0, mk, 3, 1, 3, 1, 1, neg);
        if (kh == 5 && kw == 5 && ph == 2 && pw == 2)
            return pk_narrow_roll(x, y, H, W, c0, mk, 5, 2, 5, 1, 2, neg);
        if (kh == 2 && kw == 2 && ph <= 1)   /* (a pad of 2 or more: a stride without effect) */
            return ph ? pk_narrow_roll(x, y, H, W, c0, mk, 2, 1, 2, 1, pw, neg)
                      : pk_narrow_roll(x, y, H, W, c0, mk, 2, 0, 2, 1, pw, neg);
        if (kh <= PK_NARROW_MAX_K)
            return pk_narrow_roll(x, y, H, W, c0, mk, kh, ph, kw, 1, pw, neg);
    }
    return pk_narrow_plane(x, y, H, W, OH, OW, c0, rows, sh, dh, ph, kw, dw, pw, mk, neg, hb);
}

/* The first of planes [0, n) of x (H x W each) whose columns past the strips an OW-wide output
 * takes hold a NaN, or n: the taps read them but the strips do not check them (pk_narrow_f32's
 * caller looks here first where the output is narrower than the input; the check inside
 * pk_narrow_f32's loop made the common planes slower: docs/tuning.md#narrow-code). */
static inline ptrdiff_t pk_narrow_tail_nan(const float* x, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OW)
{
    ptrdiff_t c0 = (OW + PK_NARROW_L - 1) / PK_NARROW_L * PK_NARROW_L;
    for (ptrdiff_t p = 0; p < n; p++)
        for (ptrdiff_t i = 0; i < H * (W > c0); i++)
            for (ptrdiff_t c = c0; c < W; c++)
                if (x[(p * H + i) * W + c] != x[(p * H + i) * W + c])
                    return p;
    return n;
}

/* Planes [0, n) of x (H x W each) into y (OH x OW each), through hb (H vectors of scratch): rows
 * of up to three vectors, as strips of a vector's columns, the last strip first (its stores spill
 * into the next row's first strip, which is stored after it); the W masks are made once per
 * strip.  Returns the first plane that holds a NaN in the columns the strips cover (it and the
 * planes after it are not done), or n; columns past them the caller checks (pk_narrow_tail_nan). */
static inline ptrdiff_t pk_narrow_f32(const float* x, float* y, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                                      ptrdiff_t OH, ptrdiff_t OW, ptrdiff_t kh, const ptrdiff_t* rows,
                                      ptrdiff_t sh, ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw,
                                      ptrdiff_t pw, float* hb)
{
    pk_narrow_masks mk[PK_NARROW_STRIPS];
    const pk_nw_v neg = pk_nw_splat(-INFINITY);
    ptrdiff_t p, j, strips = (OW + PK_NARROW_L - 1) / PK_NARROW_L;
    memset(mk, 0, sizeof mk);
    for (j = 0; j < strips; j++)
        pk_nw_lane_masks(mk[j].tap, &mk[j].valid, W, j * PK_NARROW_L, kw, dw, pw);
    for (p = 0; p < n; p++)
        for (j = strips - 1; j >= 0; j--)
            if (pk_narrow_strip(x + p * H * W, y + p * OH * OW, H, W, OH, OW, j * PK_NARROW_L, kh, rows,
                                sh, dh, ph, kw, dw, pw, &mk[j], neg, hb))
                return p;
    return n;
}

#endif
