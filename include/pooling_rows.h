/* Strategy ROWS_FIRST (src/kernels/maxpool_rows.pxi): float32 NCHW MaxPool without Indices,
 * one plane at a time, one output row at a time:
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
 * Vectors of the build's register width up to 32 bytes (include/pooling_simd.h); where there are
 * none (MSVC, or PK_SIMD_SCALAR defined) scalar loops. */
#ifndef POOLING_ROWS_H
#define POOLING_ROWS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* The whole-vector loops of both passes unrolled, by 4 and by 2 (GCC and Clang): rolled, each
 * iteration's loop overhead rivalled its 4-6 loads and one store (docs/tuning.md#rows_first-passes).
 * Pass 2 unrolled by 4 was no faster than by 2. */
#if defined(__GNUC__) || defined(__clang__)
#define PK_ROWS_UNROLL(n) _Pragma(PK_ROWS_STR(GCC unroll n))
#define PK_ROWS_STR(x) #x
#else
#define PK_ROWS_UNROLL(n)
#endif

/* Pass 1: V[w] = the maximum of rows r[0..2] (r[0..3] with `four`), w < W (W >= L); NaN
 * lanes of the first nchk rows are or-ed into *bad.  Each vector loop ends with a vector
 * that overlaps the one before it. */
static inline void pk_rows_pass1_at(const float* const* r, int four, float* V, ptrdiff_t w,
                                    int nchk, pk_rows_m* b)
{
    pk_rows_v x0 = pk_rows_ld(r[0] + w), x1 = pk_rows_ld(r[1] + w), x2 = pk_rows_ld(r[2] + w);
    pk_rows_v m = pk_rows_max(pk_rows_max(x0, x1), x2), x3 = x2;
    if (four) {
        x3 = pk_rows_ld(r[3] + w);
        m = pk_rows_max(m, x3);
    }
    *b |= nchk == 1 ? pk_rows_nan(x0, x0) : pk_rows_nan(x0, x1);
    if (nchk >= 3)
        *b |= pk_rows_nan(x2, four && nchk == 4 ? x3 : x2);
    pk_rows_st(V + w, m);
}

static inline void pk_rows_pass1(const float* const* r, int four, float* V, ptrdiff_t W,
                                 int nchk, pk_rows_m* bad)
{
    ptrdiff_t w;
    pk_rows_m b = *bad;
    PK_ROWS_UNROLL(4)
    for (w = 0; w <= W - PK_ROWS_L; w += PK_ROWS_L)
        pk_rows_pass1_at(r, four, V, w, nchk, &b);
    if (w < W)
        pk_rows_pass1_at(r, four, V, W - PK_ROWS_L, nchk, &b);
    *bad = b;
}

/* Pass 2: y[o] for o < OW (OW >= L) off the padded row V, by the W form sw (a literal at the
 * call sites): 1: max(V[o], V[o + d1], V[o + d2]); 2: max(V[2o], V[2o + 1], V[2o + 2]) with
 * `three`, else without the last; 4: the maximum of V[4o .. 4o + 3].  Returns the lanes of
 * zero results. */
static inline pk_rows_v pk_rows_pass2_at(const float* V, ptrdiff_t o, int sw, int three,
                                         ptrdiff_t d1, ptrdiff_t d2)
{
    pk_rows_v m, a, b, c, d;
    if (sw == 1) {
        m = pk_rows_max(pk_rows_max(pk_rows_ld(V + o), pk_rows_ld(V + o + d1)), pk_rows_ld(V + o + d2));
    } else if (sw == 2) {
        a = pk_rows_ld(V + 2 * o);
        b = pk_rows_ld(V + 2 * o + PK_ROWS_L);
        m = pk_rows_max(pk_rows_even(a, b), pk_rows_odd(a, b));
        if (three) {
            c = pk_rows_ld(V + 2 * o + 2);
            d = pk_rows_ld(V + 2 * o + 2 + PK_ROWS_L);
            m = pk_rows_max(m, pk_rows_even(c, d));
        }
        m = pk_rows_order(m, 1);
    } else {
        a = pk_rows_ld(V + 4 * o);
        b = pk_rows_ld(V + 4 * o + PK_ROWS_L);
        c = pk_rows_ld(V + 4 * o + 2 * PK_ROWS_L);
        d = pk_rows_ld(V + 4 * o + 3 * PK_ROWS_L);
        a = pk_rows_max(pk_rows_even(a, b), pk_rows_odd(a, b));   /* pairs */
        c = pk_rows_max(pk_rows_even(c, d), pk_rows_odd(c, d));
        m = pk_rows_order(pk_rows_max(pk_rows_even(a, c), pk_rows_odd(a, c)), 2);
    }
    return m;
}

static inline pk_rows_m pk_rows_pass2(const float* V, float* y, ptrdiff_t OW, int sw, int three,
                                      ptrdiff_t d1, ptrdiff_t d2)
{
    const pk_rows_v zero = {0};
    pk_rows_m z = {0};
    ptrdiff_t o;
    pk_rows_v m;
    PK_ROWS_UNROLL(2)
    for (o = 0; o <= OW - PK_ROWS_L; o += PK_ROWS_L) {
        m = pk_rows_pass2_at(V, o, sw, three, d1, d2);
        z |= m == zero;
        pk_rows_st(y + o, m);
    }
    if (o < OW) {
        m = pk_rows_pass2_at(V, OW - PK_ROWS_L, sw, three, d1, d2);
        z |= m == zero;
        pk_rows_st(y + OW - PK_ROWS_L, m);
    }
    return z;
}

/* The first maxima of the pairs of p[2o .. 2o + 2L) in pk_rows_even's lane order (pk_rows_order
 * puts them right), NaN lanes or-ed into *bad. */
static inline pk_rows_v pk_tiles_pair(const float* p, ptrdiff_t o, pk_rows_m* bad)
{
    pk_rows_v a = pk_rows_ld(p + 2 * o), b = pk_rows_ld(p + 2 * o + PK_ROWS_L);
    *bad |= pk_rows_nan(a, b);
    return pk_rows_max(pk_rows_even(a, b), pk_rows_odd(a, b));
}

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
        pk_rows_st(dst + i, pk_rows_order(pk_tiles_pair(src, i, &bad), 1));
    for (; i < n; i++) {
        float a = src[2 * i], b = src[2 * i + 1];
        odd |= (a != a) | (b != b);
        dst[i] = b > a ? b : a;
    }
    return odd | pk_rows_any(bad);
}

/* TILES' 2x2 (2-D) and 2x2x2 (3-D) stride-2 windows for float32 in one pass over the input
 * (src/kernels/maxpool_tiles.pxi): output row q < n of y (OW >= PK_ROWS_L values) from rows
 * x0 + 4q * OW and the one after it (2 * OW values each), then in 3-D the same rows of x1, the
 * second depth tap (NULL in 2-D).  Each row's pairs, then the two rows, then the two depth taps:
 * the contract's order, each combine keeping its earlier operand on ties.  Returns whether the
 * rows held a NaN (y then holds no promised values).  A row's last vector overlaps the one before
 * it.  The batch form (W pass into scratch, then H, then D) ran at half a read loop's speed from
 * memory: docs/tuning.md#tiles-strategy.  The input rows PK_TILES_AHEAD bytes ahead are prefetched
 * (prefetches never fault, so past the input too): without, the two rows read side by side missed
 * to memory in the baseline build (VGG's 224-wide pool1 1.5x slower than the batch form).  Out of
 * line: inlined into TILES' batch loop it changed that loop's code, and the rows narrower than a
 * vector, which stay there (VGG's pool5), ran 1.1x slower. */
#define PK_TILES_AHEAD 4096
static inline void pk_tiles_k2_at(const float* a, const float* c, float* y, ptrdiff_t OW, ptrdiff_t o,
                                  int depth, pk_rows_m* bad)
{
    pk_rows_v m = pk_rows_max(pk_tiles_pair(a, o, bad), pk_tiles_pair(a + 2 * OW, o, bad));
    if (depth)
        m = pk_rows_max(m, pk_rows_max(pk_tiles_pair(c, o, bad), pk_tiles_pair(c + 2 * OW, o, bad)));
    pk_rows_st(y + o, pk_rows_order(m, 1));
}

static inline void pk_tiles_k2_row(const float* a, const float* c, float* y, ptrdiff_t OW, int depth,
                                   pk_rows_m* bad)
{
    ptrdiff_t o;
    PK_ROWS_UNROLL(2)
    for (o = 0; o <= OW - PK_ROWS_L; o += PK_ROWS_L)
        pk_tiles_k2_at(a, c, y, OW, o, depth, bad);
    if (o < OW)
        pk_tiles_k2_at(a, c, y, OW, OW - PK_ROWS_L, depth, bad);
}

static PK_NOINLINE int pk_tiles_k2_f32(const float* x0, const float* x1, float* y, ptrdiff_t n, ptrdiff_t OW)
{
    pk_rows_m bad = {0};
    const ptrdiff_t ahead = 4 * OW * (PK_TILES_AHEAD / (16 * OW) + 1);   /* floats: whole output rows */
    for (ptrdiff_t q = 0; q < n; q++) {
        for (ptrdiff_t b = 0; b < 4 * OW; b += 16) {   /* a line at a time, past the batch too */
            pk_prefetch(x0 + 4 * q * OW + ahead + b);
            if (x1 != NULL)
                pk_prefetch(x1 + 4 * q * OW + ahead + b);
        }
        if (x1 != NULL)
            pk_tiles_k2_row(x0 + 4 * q * OW, x1 + 4 * q * OW, y + q * OW, OW, 1, &bad);
        else
            pk_tiles_k2_row(x0 + 4 * q * OW, NULL, y + q * OW, OW, 0, &bad);
    }
    return pk_rows_any(bad);
}

/* Floats of one thread's row buffer: the padded row V that the windows read, plus a spare
 * vector's worth for the overlapping loads. */
static inline ptrdiff_t pk_rows_len(ptrdiff_t W, ptrdiff_t OW, ptrdiff_t kw, ptrdiff_t sw,
                                    ptrdiff_t dw, ptrdiff_t pw)
{
    ptrdiff_t reach = sw == 4 ? 4 * OW : sw == 2 ? 2 * OW + 2 : OW + (kw - 1) * dw;
    ptrdiff_t n = pw + W > reach ? pw + W : reach;
    return n + 2 * PK_ROWS_MAX_LANES;
}

/* The padding of R row buffers of ld floats each: -inf where no input column lands. */
static inline void pk_rows_pad(float* V, ptrdiff_t ld, ptrdiff_t R, ptrdiff_t W, ptrdiff_t pw)
{
    for (ptrdiff_t r = 0; r < R; r++)
        for (ptrdiff_t i = 0; i < ld; i++)
            if (i < pw || i >= pw + W)
                V[r * ld + i] = -INFINITY;
}

/* One H x W plane into its OH x OW result through R row buffers V + r * ld (each padded:
 * pk_rows_pad).  rows[4 * oh + t]: the input row of output row oh's tap t (a tap in the
 * padding, or past kh, repeats a valid row: a repeated row changes no maximum); nchk: the
 * taps whose rows are checked for NaN on every output row but the last (which checks all):
 * min(sh, kh) with dilation 1, else kh.  Returns 1 when the plane needs the exact compare (y then holds no promised
 * values).
 *
 * next: the plane the caller does next, or NULL: prefetched a slice per output row (see
 * pooling_prefetch.h).
 *
 * Pass 1 runs for R output rows before pass 2 reads them back: pass 2's shifted loads of a
 * row pass 1 has just stored stall on store forwarding (a load spanning two stores still in
 * flight), which made narrow rows several times dearer (docs/tuning.md#rows_first-passes). */
static inline int pk_rows_f32(const float* x, float* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                              ptrdiff_t OW, const ptrdiff_t* rows, ptrdiff_t kh, int nchk,
                              ptrdiff_t kw, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw, float* V,
                              ptrdiff_t ld, ptrdiff_t R, const float* next)
{
    pk_rows_m bad = {0}, zero = {0};
    ptrdiff_t oh0, oh, n, i;
    const ptrdiff_t* r;
    const ptrdiff_t per = ((H * W + 15) / 16 + OH - 1) / OH;   /* lines of next per output row */
    ptrdiff_t ahead = 0;   /* values of next prefetched so far */
    for (oh0 = 0; oh0 < OH; oh0 += R) {
        n = OH - oh0 < R ? OH - oh0 : R;
        for (oh = oh0, r = rows + 4 * oh0; oh < oh0 + n; oh++, r += 4) {
            const float* p[4] = {x + r[0] * W, x + r[1] * W, x + r[2] * W, x + r[3] * W};
            if (next != NULL)
                for (ptrdiff_t l = 0; l < per && ahead < H * W; l++, ahead += 16)
                    pk_prefetch(next + ahead);
            int check = oh == OH - 1 ? 4 : nchk;
            if (kh == 4)
                pk_rows_pass1(p, 1, V + (oh - oh0) * ld + pw, W, check, &bad);
            else
                pk_rows_pass1(p, 0, V + (oh - oh0) * ld + pw, W, check, &bad);
        }
        for (oh = oh0; oh < oh0 + n; oh++) {
            const float* v = V + (oh - oh0) * ld;
            if (sw == 4)
                zero |= pk_rows_pass2(v, y + oh * OW, OW, 4, 0, 0, 0);
            else if (sw == 2)
                zero |= pk_rows_pass2(v, y + oh * OW, OW, 2, kw == 3, 0, 0);
            else
                zero |= pk_rows_pass2(v, y + oh * OW, OW, 1, 0, kw > 1 ? dw : 0, (kw - 1) * dw);
        }
    }
    if (pk_rows_any(bad))
        return 1;
    if (pk_rows_any(zero)) {
        /* a zero result: which zero depends on the order unless the plane has no -0.0 */
        uint32_t u, neg = 0;
        for (i = 0; i < H * W; i++) {
            memcpy(&u, x + i, sizeof u);
            neg |= u == 0x80000000u;
        }
        return neg != 0;
    }
    return 0;
}

#endif
