/* Strategy NHWC_BLOCKS (src/kernels/maxpool_nhwc.pxi): float32 channels-last MaxPool without
 * Indices, channels in blocks of vectors held in registers.
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
 * The vector primitives are NARROW's (include/pooling_narrow.h): one lane where the build has no
 * vector extensions.  C must be at least one vector (PK_NARROW_L). */
#ifndef POOLING_NHWC_H
#define POOLING_NHWC_H

#include "pooling_narrow.h"
#include "pooling_prefetch.h"

/* Vectors of channels per block: four accumulators and a load fit the 16 registers of SSE2/AVX2. */
#define PK_NHWC_BLOCK 4

/* One block of V vectors at offset off of each row: the first maximum over the taps of nrows
 * rows, ntaps taps step values apart in each, stored at y.  The values of the first ctaps taps
 * of the rows whose chk is set are checked for NaN, or-ed into *bad. */
static PK_ALWAYS_INLINE void
pk_nhwc_block(const float* const* rows, const unsigned char* chk, ptrdiff_t nrows, ptrdiff_t off,
              ptrdiff_t step, ptrdiff_t ntaps, ptrdiff_t ctaps, float* y, pk_nw_m* bad, const int V)
{
    pk_nw_v acc[PK_NHWC_BLOCK], v;
    pk_nw_m b = *bad;
    const float* p = rows[0] + off;
    for (int i = 0; i < V; i++)
        acc[i] = pk_nw_ld(p + i * PK_NARROW_L);
    if (chk[0] && ctaps > 0)
        for (int i = 0; i < V; i++)
            b |= pk_nw_nan(acc[i], acc[i]);
    for (ptrdiff_t r = 0; r < nrows; r++) {
        ptrdiff_t t = r == 0;
        p = rows[r] + off;
        if (chk[r])
            for (; t < ctaps; t++)
                for (int i = 0; i < V; i++) {
                    v = pk_nw_ld(p + t * step + i * PK_NARROW_L);
                    b |= pk_nw_nan(v, v);
                    acc[i] = pk_nw_max(acc[i], v);
                }
        for (; t < ntaps; t++)
            for (int i = 0; i < V; i++)
                acc[i] = pk_nw_max(acc[i], pk_nw_ld(p + t * step + i * PK_NARROW_L));
    }
    for (int i = 0; i < V; i++)
        pk_nw_st(y + i * PK_NARROW_L, acc[i]);
    *bad = b;
}

/* One output row of OW pixels of C channels (C >= PK_NARROW_L) into y.  rows: the nrows >= 1
 * input rows its windows read, in window order; output column ow reads the taps [tw[2 ow],
 * tw[2 ow + 1]) (all valid, at least one), tap t at column ow * sw - pw + t * dw.  NaN is
 * looked for in the rows whose chk is set, among the taps t < own (from the first valid one) and
 * in every tap of the last column: with dw 1 and own = sw those are all the columns any window
 * reads (a column read at all is tap (c + pw) % sw of window (c + pw) / sw, or is read by the last
 * window), each once.  next: nlen values the caller reads next (the input rows its next output
 * row adds), prefetched a slice per column (pooling_prefetch.h); nlen 0 for none.  Returns 1 when one was found (y then holds no promised values; a NaN in a
 * row without chk is the caller's to know of). */
static PK_ALWAYS_INLINE int
pk_nhwc_row(const float* const* rows, const unsigned char* chk, ptrdiff_t nrows, float* y, ptrdiff_t OW,
            ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw, ptrdiff_t own, const ptrdiff_t* tw,
            const float* next, ptrdiff_t nlen)
{
    const ptrdiff_t B = PK_NHWC_BLOCK * PK_NARROW_L;
    const ptrdiff_t step = dw * C;
    const ptrdiff_t per = ((nlen + 15) / 16 + OW - 1) / OW;   /* lines of next per column */
    ptrdiff_t ahead = 0;                                        /* values of next prefetched so far */
    pk_nw_m bad = {0};
    ptrdiff_t c = 0;
    for (ptrdiff_t ow = 0; ow < OW; ow++, y += C) {
        if (nlen > 0)
            for (ptrdiff_t l = 0; l < per && ahead < nlen; l++, ahead += 16)
                pk_prefetch(next + ahead);
        ptrdiff_t t0 = tw[2 * ow], n = tw[2 * ow + 1] - t0;
        ptrdiff_t off = (ow * sw - pw + t0 * dw) * C;
        ptrdiff_t m = ow == OW - 1 ? n : own - t0 > n ? n : own - t0;
        for (c = 0; c + B <= C; c += B)
            pk_nhwc_block(rows, chk, nrows, off + c, step, n, m, y + c, &bad, PK_NHWC_BLOCK);
        for (; c + PK_NARROW_L <= C; c += PK_NARROW_L)
            pk_nhwc_block(rows, chk, nrows, off + c, step, n, m, y + c, &bad, 1);
        if (c < C)
            pk_nhwc_block(rows, chk, nrows, off + C - PK_NARROW_L, step, n, m, y + C - PK_NARROW_L,
                          &bad, 1);
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
        return pk_nhwc_row(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, next, nlen);
    return pk_nhwc_row(rows, chk, nrows, y, OW, C, sw, dw, pw, own, tw, rows[0], 0);
}

#endif
