/* Strategy NARROW (src/kernels/maxpool_narrow.pxi): float32 NCHW MaxPool without Indices whose
 * input and output rows fit one vector (W, OW <= the build's float32 lanes: 16 in the AVX-512
 * build, 8 with AVX2, 4 with SSE2) and whose W stride is 1: the 7x7 planes of Inception's last branch pools, with hundreds of channels, where
 * every other kernel pays a set-up per plane or per row (or a transpose) that costs more than the
 * compares.  A plane at a time, everything in registers:
 *
 *   1. each input row r the windows read is reduced along W as one vector: lane l is the first
 *      maximum of x[r][l - pw + t * dw] over the taps t < kw, each tap one load at the row's
 *      start plus t * dw - pw, its lanes outside the row replaced by -inf (masks fixed for the
 *      call: they depend only on the lane);
 *   2. each output row is the first maximum of its window's reduced rows (the valid taps only),
 *      stored as one vector: its lanes past OW spill into the next output rows, whose stores
 *      then overwrite them; rows whose spill would leave the plane are stored lane by lane.
 *
 * Exactness: taps are combined in order, W before H, each combine keeping its earlier operand
 * unless the later one is strictly greater (maxps with the new value first), so ties (-0.0
 * against +0.0) resolve as in the contract, and a -inf put in for a missing tap has the bits of
 * any -inf it ties with.  Only NaN breaks the cheap compare: every input value of the plane is
 * checked (lanes below W of each row's unshifted load), and pk_narrow_f32 returns 1 for a plane
 * holding one; the caller redoes it with the exact compare.
 *
 * Loads reach pw values before a row and up to L - 1 + (kw - 1) * dw - pw after its start: the
 * caller hands the first and last planes of the array over in a copy with margins.
 *
 * GCC/Clang vector extensions (x86 intrinsics for maxps and blendvps; in the AVX-512 build the
 * blend is the bitwise form, one vpternlogd); elsewhere (MSVC, or PK_NARROW_SCALAR defined) one
 * lane, which serves only OW = 1. */
#ifndef POOLING_NARROW_H
#define POOLING_NARROW_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(PK_NARROW_SCALAR)

#if defined(__AVX512F__)
#include <immintrin.h>
#define PK_NARROW_BYTES 64
#elif defined(__AVX2__)
#include <immintrin.h>
#define PK_NARROW_BYTES 32
#elif defined(__SSE2__)
#include <emmintrin.h>
#define PK_NARROW_BYTES 16
#else
#define PK_NARROW_BYTES 16
#endif

typedef float pk_nw_v __attribute__((vector_size(PK_NARROW_BYTES)));
typedef int32_t pk_nw_m __attribute__((vector_size(PK_NARROW_BYTES)));
enum { PK_NARROW_L = PK_NARROW_BYTES / 4 };

static inline pk_nw_v pk_nw_ld(const float* p)
{
    pk_nw_v v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void pk_nw_st(float* p, pk_nw_v v)
{
    memcpy(p, &v, sizeof v);
}

/* b if b > a else a: the cheap compare, the later value second */
static inline pk_nw_v pk_nw_max(pk_nw_v a, pk_nw_v b)
{
#if PK_NARROW_BYTES == 64
    return (pk_nw_v)_mm512_max_ps((__m512)b, (__m512)a);
#elif PK_NARROW_BYTES == 32
    return (pk_nw_v)_mm256_max_ps((__m256)b, (__m256)a);
#elif defined(__SSE2__)
    return (pk_nw_v)_mm_max_ps((__m128)b, (__m128)a);
#else
    pk_nw_m g = b > a;
    return (pk_nw_v)(((pk_nw_m)b & g) | ((pk_nw_m)a & ~g));
#endif
}

/* v where m is set, else f */
static inline pk_nw_v pk_nw_blend(pk_nw_v v, pk_nw_v f, pk_nw_m m)
{
#if PK_NARROW_BYTES == 32
    return (pk_nw_v)_mm256_blendv_ps((__m256)f, (__m256)v, (__m256)m);
#else
    return (pk_nw_v)(((pk_nw_m)v & m) | ((pk_nw_m)f & ~m));
#endif
}

static inline pk_nw_m pk_nw_nan(pk_nw_v a) { return a != a; }

static inline int pk_nw_any(pk_nw_m m)
{
    int r = 0;
    for (int i = 0; i < PK_NARROW_L; i++)
        r |= m[i] != 0;
    return r;
}

static inline void pk_nw_lane_masks(pk_nw_m* masks, pk_nw_m* valid, ptrdiff_t W, ptrdiff_t kw,
                                    ptrdiff_t dw, ptrdiff_t pw)
{
    for (ptrdiff_t t = 0; t < kw; t++)
        for (int l = 0; l < PK_NARROW_L; l++) {
            ptrdiff_t c = l - pw + t * dw;
            masks[t][l] = (0 <= c && c < W) ? -1 : 0;
        }
    for (int l = 0; l < PK_NARROW_L; l++)
        (*valid)[l] = l < W ? -1 : 0;
}

static inline pk_nw_v pk_nw_neg(void)
{
    pk_nw_v v;
    for (int l = 0; l < PK_NARROW_L; l++)
        v[l] = -INFINITY;
    return v;
}

#else  /* scalar: one lane */

typedef float pk_nw_v;
typedef int32_t pk_nw_m;
enum { PK_NARROW_L = 1 };

static inline pk_nw_v pk_nw_ld(const float* p) { return *p; }
static inline void pk_nw_st(float* p, pk_nw_v v) { *p = v; }
static inline pk_nw_v pk_nw_max(pk_nw_v a, pk_nw_v b) { return b > a ? b : a; }
static inline pk_nw_v pk_nw_blend(pk_nw_v v, pk_nw_v f, pk_nw_m m) { return m ? v : f; }
static inline pk_nw_m pk_nw_nan(pk_nw_v a) { return a != a; }
static inline int pk_nw_any(pk_nw_m m) { return m != 0; }
static inline pk_nw_v pk_nw_neg(void) { return -INFINITY; }
static inline void pk_nw_lane_masks(pk_nw_m* masks, pk_nw_m* valid, ptrdiff_t W, ptrdiff_t kw,
                                    ptrdiff_t dw, ptrdiff_t pw)
{
    for (ptrdiff_t t = 0; t < kw; t++)
        masks[t] = (0 <= t * dw - pw && t * dw - pw < W) ? -1 : 0;
    *valid = W > 0 ? -1 : 0;
}

#endif

/* The widest output row (float32 lanes of this build) and the most taps per axis. */
#define PK_NARROW_LANES PK_NARROW_L
#define PK_NARROW_MAX_K 16

/* Values a plane's copy needs before and after it so that no load leaves it. */
static inline ptrdiff_t pk_narrow_margin(ptrdiff_t kw, ptrdiff_t dw)
{
    return PK_NARROW_L + (kw - 1) * dw + 1;
}

/* The lane masks of a call's W taps (kw <= PK_NARROW_MAX_K). */
typedef struct {
    pk_nw_m tap[PK_NARROW_MAX_K];
    pk_nw_m valid;   /* lanes below W */
} pk_narrow_masks;

/* The row reduced along W (step 1 of the banner), NaN lanes of its values or-ed into *bad. */
static inline pk_nw_v pk_narrow_row(const float* row, const pk_nw_m* tap, pk_nw_m valid, ptrdiff_t kw,
                                    ptrdiff_t dw, ptrdiff_t pw, pk_nw_v neg, pk_nw_m* bad)
{
    pk_nw_v m = neg;
    *bad |= pk_nw_nan(pk_nw_ld(row)) & valid;
    for (ptrdiff_t t = 0; t < kw; t++) {
        pk_nw_v v = pk_nw_blend(pk_nw_ld(row + t * dw - pw), neg, tap[t]);
        m = t == 0 ? v : pk_nw_max(m, v);
    }
    return m;
}

/* Output row oh's vector to y + oh * OW: whole where its spill (lanes past OW) stays inside the
 * plane's OH rows, where the later rows' stores overwrite it; lane by lane otherwise. */
static inline void pk_narrow_store(float* y, ptrdiff_t oh, ptrdiff_t OH, ptrdiff_t OW, pk_nw_v m)
{
    if ((oh + 1) * OW + PK_NARROW_L - OW <= OH * OW) {
        pk_nw_st(y + oh * OW, m);
    } else {
        float last[PK_NARROW_L];
        pk_nw_st(last, m);
        for (ptrdiff_t t = 0; t < OW; t++)
            y[oh * OW + t] = last[t];
    }
}

/* The common 3x3 stride-1 window with one pad each side on a plane of H rows: the reduced rows
 * roll through three registers, each output row the maximum of the one above, its own and the
 * one below (-inf past the plane's edges, in tap order).  Returns 1 for a plane holding a NaN. */
static inline int pk_narrow_3x3(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, pk_nw_m m0,
                                pk_nw_m m2, pk_nw_m valid, pk_nw_v neg)
{
    pk_nw_m bad = {0};
    pk_nw_m tap[3] = {m0, m0 | ~m0, m2};
    pk_nw_v up = neg, here = pk_narrow_row(x, tap, valid, 3, 1, 1, neg, &bad), down;
    for (ptrdiff_t r = 0; r < H; r++) {
        down = r + 1 < H ? pk_narrow_row(x + (r + 1) * W, tap, valid, 3, 1, 1, neg, &bad) : neg;
        pk_narrow_store(y, r, H, W, pk_nw_max(pk_nw_max(up, here), down));
        up = here;
        here = down;
    }
    return pk_nw_any(bad);
}

/* A 2-row stride-1 window whose output has the input's shape (the pad of one row at the end,
 * `ahead`, or at the start): two reduced rows roll through registers.  Returns 1 for a plane
 * holding a NaN. */
static inline int pk_narrow_2rows(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, const pk_nw_m* tap,
                                  pk_nw_m valid, ptrdiff_t kw, ptrdiff_t pw, int ahead, pk_nw_v neg)
{
    pk_nw_m bad = {0};
    pk_nw_v a = ahead ? pk_narrow_row(x, tap, valid, kw, 1, pw, neg, &bad) : neg, b;
    for (ptrdiff_t r = 0; r < H; r++) {
        if (ahead) {
            b = r + 1 < H ? pk_narrow_row(x + (r + 1) * W, tap, valid, kw, 1, pw, neg, &bad) : neg;
        } else {
            b = pk_narrow_row(x + r * W, tap, valid, kw, 1, pw, neg, &bad);
        }
        pk_narrow_store(y, r, H, W, pk_nw_max(a, b));
        a = b;
    }
    return pk_nw_any(bad);
}

/* One H x W plane into its OH x OW result (W, OW <= L), any geometry NARROW serves, through hb (H
 * vectors of scratch).  rows[2 * oh], rows[2 * oh + 1]: the valid H taps [t0, t1) of output row
 * oh.  Returns 1 when the plane holds a NaN (y then holds no promised values). */
static inline int pk_narrow_plane(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                                  ptrdiff_t OW, const ptrdiff_t* rows, ptrdiff_t sh, ptrdiff_t dh,
                                  ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw, ptrdiff_t pw,
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
        pk_narrow_store(y, oh, OH, OW, m);
    }
    return 0;
}

/* Planes [0, n) of x (H x W each) into y (OH x OW each), through hb (H vectors of scratch): the
 * W masks are made once, then each plane in registers.  Returns the first plane that holds a NaN
 * (it and the planes after it are not done), or n. */
static inline ptrdiff_t pk_narrow_f32(const float* x, float* y, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                                      ptrdiff_t OH, ptrdiff_t OW, ptrdiff_t kh, const ptrdiff_t* rows,
                                      ptrdiff_t sh, ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw,
                                      ptrdiff_t pw, float* hb)
{
    pk_narrow_masks mk;
    const pk_nw_v neg = pk_nw_neg();
    ptrdiff_t p;
    memset(&mk, 0, sizeof mk);
    pk_nw_lane_masks(mk.tap, &mk.valid, W, kw, dw, pw);
    if (kh == 3 && kw == 3 && sh == 1 && dh == 1 && dw == 1 && ph == 1 && pw == 1 && OH == H && OW == W) {
        for (p = 0; p < n; p++)
            if (pk_narrow_3x3(x + p * H * W, y + p * OH * OW, H, W, mk.tap[0], mk.tap[2], mk.valid, neg))
                return p;
        return n;
    }
    if (kh == 2 && sh == 1 && dh == 1 && dw == 1 && OH == H && OW == W) {
        for (p = 0; p < n; p++)
            if (kw == 2 ? pk_narrow_2rows(x + p * H * W, y + p * OH * OW, H, W, mk.tap, mk.valid, 2, pw,
                                          ph == 0, neg)
                        : pk_narrow_2rows(x + p * H * W, y + p * OH * OW, H, W, mk.tap, mk.valid, kw, pw,
                                          ph == 0, neg))
                return p;
        return n;
    }
    for (p = 0; p < n; p++)
        if (pk_narrow_plane(x + p * H * W, y + p * OH * OW, H, W, OH, OW, rows, sh, dh, ph, kw, dw, pw,
                            &mk, neg, hb))
            return p;
    return n;
}

#endif
