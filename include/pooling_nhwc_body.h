/* NHWC_BLOCKS' block and row loops, written once for float32, for 16-bit floats' keys and for the 2- and
 * 4-byte integers: included by pooling_nhwc.h once per kind with PK_NB_T (element type), PK_NB_N(name)
 * (the kind's function name), PK_NB_F(op) (its vector operations: ld, max, and the checks clean / chk /
 * bad, as in pooling_rows_body.h), PK_NB_KEY(v, u) and PK_NB_STY(p, v, u) (its key and sty; u the
 * call's inf_bits, "unsigned" to the integers), PK_NB_V, PK_NB_C (vector and check state types) and
 * PK_NB_L (lanes) defined, and for the loops with Indices PK_NB_M, PK_NB_Q, PK_NB_WIDEN, PK_NB_GT and
 * PK_NB_IBLEND (pooling_nhwc.h); it undefines them at its end. */

/* One block of V vectors at offset off of each row: the first maximum over the taps of nrows
 * rows, ntaps taps step values apart in each, stored at y.  The values of the first ctaps taps
 * of the rows whose chk is set are checked for NaN, or-ed into *bad. */
static PK_ALWAYS_INLINE void
PK_NB_N(pk_nhwc_block)(const PK_NB_T* const* rows, const unsigned char* chk, ptrdiff_t nrows, ptrdiff_t off,
              ptrdiff_t step, ptrdiff_t ntaps, ptrdiff_t ctaps, PK_NB_T* y, PK_NB_C* bad, const int V, int u)
{
    PK_NB_V acc[PK_NHWC_BLOCK], v;
    PK_NB_C b = *bad;
    const PK_NB_T* p = rows[0] + off;
    for (int i = 0; i < V; i++) {
        v = PK_NB_F(ld)(p + i * PK_NB_L);
        if (chk[0] && ctaps > 0)
            PK_NB_F(chk)(&b, v, v);
        acc[i] = PK_NB_KEY(v, u);
    }
    for (ptrdiff_t r = 0; r < nrows; r++) {
        ptrdiff_t t = r == 0;
        p = rows[r] + off;
        if (chk[r])
            for (; t < ctaps; t++)
                for (int i = 0; i < V; i++) {
                    v = PK_NB_F(ld)(p + t * step + i * PK_NB_L);
                    PK_NB_F(chk)(&b, v, v);
                    acc[i] = PK_NB_F(max)(acc[i], PK_NB_KEY(v, u));
                }
        for (; t < ntaps; t++)
            for (int i = 0; i < V; i++)
                acc[i] = PK_NB_F(max)(acc[i], PK_NB_KEY(PK_NB_F(ld)(p + t * step + i * PK_NB_L), u));
    }
    for (int i = 0; i < V; i++)
        PK_NB_STY(y + i * PK_NB_L, acc[i], u);
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
PK_NB_N(pk_nhwc_row)(const PK_NB_T* const* rows, const unsigned char* chk, ptrdiff_t nrows, PK_NB_T* y,
                     ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw, ptrdiff_t own,
                     const ptrdiff_t* tw, const PK_NB_T* next, ptrdiff_t nlen, int inf_bits)
{
    const ptrdiff_t B = PK_NHWC_BLOCK * PK_NB_L;
    const ptrdiff_t step = dw * C;
    const ptrdiff_t vals = 64 / sizeof(PK_NB_T);                /* values per cache line */
    const ptrdiff_t per = ((nlen + vals - 1) / vals + OW - 1) / OW;   /* lines of next per column */
    ptrdiff_t ahead = 0;                                        /* values of next prefetched so far */
    PK_NB_C bad = PK_NB_F(clean)();
    ptrdiff_t c = 0;
    for (ptrdiff_t ow = 0; ow < OW; ow++, y += C) {
        if (nlen > 0)
            for (ptrdiff_t l = 0; l < per && ahead < nlen; l++, ahead += vals)
                pk_prefetch(next + ahead);
        ptrdiff_t t0 = tw[2 * ow], n = tw[2 * ow + 1] - t0;
        ptrdiff_t off = (ow * sw - pw + t0 * dw) * C;
        ptrdiff_t m = ow == OW - 1 ? n : own - t0 > n ? n : own - t0;
        for (c = 0; c + B <= C; c += B)
            PK_NB_N(pk_nhwc_block)(rows, chk, nrows, off + c, step, n, m, y + c, &bad, PK_NHWC_BLOCK, inf_bits);
        for (; c + PK_NB_L <= C; c += PK_NB_L)
            PK_NB_N(pk_nhwc_block)(rows, chk, nrows, off + c, step, n, m, y + c, &bad, 1, inf_bits);
        if (c < C)
            PK_NB_N(pk_nhwc_block)(rows, chk, nrows, off + C - PK_NB_L, step, n, m, y + C - PK_NB_L,
                                   &bad, 1, inf_bits);
    }
    return PK_NB_F(bad)(bad, inf_bits);
}

#ifdef PK_NB_M
/* With Indices (pooling_nhwc.h): half a winners' vector as int64 (a lane where the build has no vectors). */
#if PK_SIMD
typedef PK_NB_Q PK_NB_N(pk_nhwc_wide);
#else
typedef int64_t PK_NB_N(pk_nhwc_wide);
#endif

static inline PK_NB_M PK_NB_N(pk_nhwc_isplat)(int32_t x)
{
#if PK_SIMD
    PK_NB_M v = {0};
    return v + x;
#else
    return x;
#endif
}

/* a + b in each of the winners' lanes, wrapping: a row's step past its last tap is computed and never
 * used, and may pass 2**31 with large dilations (vector lanes wrap in every build's instructions). */
static inline PK_NB_M PK_NB_N(pk_nhwc_iadd)(PK_NB_M a, PK_NB_M b)
{
#if PK_SIMD
    return a + b;
#else
    return (PK_NB_M)((uint32_t)a + (uint32_t)b);
#endif
}

/* One tap of a block: values at q, pixel tp. */
#define PK_NB_ITAP(CHECK, q)                                                                       \
    for (int i = 0; i < V; i++) {                                                                 \
        PK_NB_V v = PK_NB_F(ld)((q) + i * PK_NB_L);                                               \
        if (CHECK)                                                                                \
            PK_NB_F(chk)(&b, v, v);                                                               \
        v = PK_NB_KEY(v, u);                                                                      \
        PK_NB_M g = PK_NB_GT(acc[i], v);                                                          \
        acc[i] = PK_NB_F(max)(acc[i], v);                                                         \
        win[i] = PK_NB_IBLEND(tp, win[i], g);                                                     \
    }

/* A block's maxima to y and its winners as Indices to ind + c0 (pk_nhwc_iblock says how). */
static PK_ALWAYS_INLINE void
PK_NB_N(pk_nhwc_istore)(const PK_NB_V* acc, const PK_NB_M* win, PK_NB_T* y, int64_t* ind, int64_t base,
                        int64_t icmul, const PK_NB_N(pk_nhwc_wide)* icl, ptrdiff_t c0, const int V, int u,
                        const int plain)
{
    for (int i = 0; i < V; i++) {
        PK_NB_STY(y + i * PK_NB_L, acc[i], u);
        int64_t first = base + (c0 + i * PK_NB_L) * icmul;
#if PK_SIMD
        PK_NB_N(pk_nhwc_wide) lo, hi;
        PK_NB_WIDEN(win[i], &lo, &hi);
        if (!plain) {
            lo += icl[0] + first;
            hi += icl[1] + first;
        }
        memcpy(ind + c0 + i * PK_NB_L, &lo, sizeof lo);
        memcpy(ind + c0 + i * PK_NB_L + PK_NB_L / 2, &hi, sizeof hi);
#else
        (void)icl;
        (void)plain;
        ind[c0 + i] = first + win[i];
#endif
    }
}

/* The winners are held as pixel * imul (int32: the caller takes this path only where every pixel
 * of an image times imul is below 2**31), so that an Index is base + winner + channel * icmul:
 * a widening and an add, with icl the lanes' channel * icmul; with `plain` (base and icmul 0: the
 * "plane" format, pooling.torch's) the widening alone.  A tap's pixels are the row's first plus
 * tstep (dw * imul, in every lane) a tap. */
static PK_ALWAYS_INLINE void
PK_NB_N(pk_nhwc_iblock)(const PK_NB_T* const* rows, const int32_t* rpix, const unsigned char* chk,
                        ptrdiff_t nrows, ptrdiff_t off, int32_t col, ptrdiff_t step, int32_t dw, ptrdiff_t ntaps,
                        ptrdiff_t ctaps, PK_NB_T* y, int64_t* ind, int64_t base, int32_t imul, int64_t icmul,
                        const PK_NB_N(pk_nhwc_wide)* icl, ptrdiff_t c0, PK_NB_M tstep, PK_NB_C* bad, const int V,
                        int u, const int plain)
{
    PK_NB_V acc[PK_NHWC_BLOCK];
    PK_NB_M win[PK_NHWC_BLOCK];
    PK_NB_C b = *bad;
    const PK_NB_T* p = rows[0] + off;
    for (int i = 0; i < V; i++) {
        PK_NB_V v = PK_NB_F(ld)(p + i * PK_NB_L);
        if (chk[0] && ctaps > 0)
            PK_NB_F(chk)(&b, v, v);
        acc[i] = PK_NB_KEY(v, u);
        win[i] = PK_NB_N(pk_nhwc_isplat)((rpix[0] + col) * imul);
    }
    for (ptrdiff_t r = 0; r < nrows; r++) {
        ptrdiff_t t = r == 0;
        p = rows[r] + off;
        /* (in uint32: row 0's second tap may lie past a one-tap row's end, unused) */
        PK_NB_M tp = PK_NB_N(pk_nhwc_isplat)(
            (int32_t)(((uint32_t)rpix[r] + (uint32_t)col + (uint32_t)t * (uint32_t)dw) * (uint32_t)imul));
        if (chk[r])
            for (; t < ctaps; t++, tp = PK_NB_N(pk_nhwc_iadd)(tp, tstep)) {
                PK_NB_ITAP(1, p + t * step)
            }
        for (; t < ntaps; t++, tp = PK_NB_N(pk_nhwc_iadd)(tp, tstep)) {
            PK_NB_ITAP(0, p + t * step)
        }
    }
    PK_NB_N(pk_nhwc_istore)(acc, win, y, ind, base, icmul, icl, c0, V, u, plain);
    *bad = b;
}

/* The same block over an interior column's window as one list of K taps in window order (built
 * once a row by pk_nhwc_irow): tap k's values at x0 + toff[k], its pixel (times imul) tpix[k] plus
 * the column's colpix, checked for NaN where tchk[k] is set.  One loop over the taps instead of
 * one a row: the rows' set-up was a third of the block's instructions on 3x3 windows. */
static PK_ALWAYS_INLINE void
PK_NB_N(pk_nhwc_itaps)(const PK_NB_T* x0, const ptrdiff_t* toff, const PK_NB_M* tpix, const unsigned char* tchk,
                       ptrdiff_t K, PK_NB_M colpix, PK_NB_T* y, int64_t* ind, int64_t base, int64_t icmul,
                       const PK_NB_N(pk_nhwc_wide)* icl, ptrdiff_t c0, PK_NB_C* bad, const int V, int u,
                       const int plain)
{
    PK_NB_V acc[PK_NHWC_BLOCK];
    PK_NB_M win[PK_NHWC_BLOCK];
    PK_NB_C b = *bad;
    for (int i = 0; i < V; i++) {
        PK_NB_V v = PK_NB_F(ld)(x0 + i * PK_NB_L);
        if (tchk[0])
            PK_NB_F(chk)(&b, v, v);
        acc[i] = PK_NB_KEY(v, u);
        win[i] = tpix[0] + colpix;
    }
    for (ptrdiff_t k = 1; k < K; k++) {
        PK_NB_M tp = tpix[k] + colpix;
        if (tchk[k]) {
            PK_NB_ITAP(1, x0 + toff[k])
        } else {
            PK_NB_ITAP(0, x0 + toff[k])
        }
    }
    PK_NB_N(pk_nhwc_istore)(acc, win, y, ind, base, icmul, icl, c0, V, u, plain);
    *bad = b;
}
#undef PK_NB_ITAP

/* As pk_nhwc_row, with the Indices: rpix[r] is the first pixel of row r (its row number times W),
 * ind the output row's Indices (OW * C), encoded from base, imul and icmul (an image's pixels times
 * imul below 2**31: the caller's check); plain: base and icmul are 0 (pooling_nhwc.h's
 * pk_nhwc_irow_f32 chooses). */
static PK_ALWAYS_INLINE int PK_NB_N(pk_nhwc_irow)(const PK_NB_T* const* rows, const int32_t* rpix, const unsigned char* chk,
                                 ptrdiff_t nrows, PK_NB_T* y, int64_t* ind, int64_t base, int64_t imul,
                                 int64_t icmul, ptrdiff_t OW, ptrdiff_t C, ptrdiff_t sw, ptrdiff_t dw,
                                 ptrdiff_t pw, ptrdiff_t own, const ptrdiff_t* tw, const PK_NB_T* next,
                                 ptrdiff_t nlen, int inf_bits, const int plain)
{
    const ptrdiff_t B = PK_NHWC_BLOCK * PK_NB_L;
    const ptrdiff_t step = dw * C;
    const ptrdiff_t vals = 64 / sizeof(PK_NB_T);                /* values per cache line */
    const ptrdiff_t per = ((nlen + vals - 1) / vals + OW - 1) / OW;   /* lines of next per column */
    ptrdiff_t ahead = 0;
    PK_NB_C bad = PK_NB_F(clean)();
    ptrdiff_t c = 0;
    const int32_t imul32 = (int32_t)imul;
    const PK_NB_M tstep = PK_NB_N(pk_nhwc_isplat)((int32_t)((uint32_t)dw * (uint32_t)imul32));
    PK_NB_N(pk_nhwc_wide) icl[2];   /* each lane's channel * icmul, the vector's halves */
#if PK_SIMD
    for (int l = 0; l < PK_NB_L / 2; l++) {
        icl[0][l] = l * icmul;
        icl[1][l] = (l + PK_NB_L / 2) * icmul;
    }
#else
    icl[0] = icl[1] = 0;
#endif
    /* The taps of an interior column (from tap 0, nf of them a row, not the last column, whose
     * checks reach every tap) as one list (pk_nhwc_itaps): nf is the middle column's, and a
     * window of more than PK_NHWC_ITAPS taps takes the rows' loop. */
    ptrdiff_t toff[PK_NHWC_ITAPS];
    PK_NB_M tpix[PK_NHWC_ITAPS];
    unsigned char tchk[PK_NHWC_ITAPS];
    const ptrdiff_t mid = OW / 2, nf = tw[2 * mid] == 0 ? tw[2 * mid + 1] : 0;
    const ptrdiff_t K = nrows * nf <= PK_NHWC_ITAPS ? nrows * nf : 0;
    for (ptrdiff_t r = 0; r < (K ? nrows : 0); r++)
        for (ptrdiff_t t = 0; t < nf; t++) {
            toff[r * nf + t] = (rows[r] - rows[0]) + t * step;
            tpix[r * nf + t] = PK_NB_N(pk_nhwc_isplat)(((int32_t)rpix[r] + (int32_t)(t * dw)) * imul32);
            tchk[r * nf + t] = chk[r] && t < own;
        }
    for (ptrdiff_t ow = 0; ow < OW; ow++, y += C, ind += C) {
        if (nlen > 0)
            for (ptrdiff_t l = 0; l < per && ahead < nlen; l++, ahead += vals)
                pk_prefetch(next + ahead);
        ptrdiff_t t0 = tw[2 * ow], n = tw[2 * ow + 1] - t0;
        int32_t col = (int32_t)(ow * sw - pw + t0 * dw);
        ptrdiff_t off = col * C;
        if (K && t0 == 0 && n == nf && ow != OW - 1) {
            const PK_NB_T* x0 = rows[0] + off;
            const PK_NB_M colpix = PK_NB_N(pk_nhwc_isplat)(col * imul32);
            for (c = 0; c + B <= C; c += B)
                PK_NB_N(pk_nhwc_itaps)(x0 + c, toff, tpix, tchk, K, colpix, y + c, ind, base, icmul, icl, c,
                                       &bad, PK_NHWC_BLOCK, inf_bits, plain);
            for (; c + PK_NB_L <= C; c += PK_NB_L)
                PK_NB_N(pk_nhwc_itaps)(x0 + c, toff, tpix, tchk, K, colpix, y + c, ind, base, icmul, icl, c,
                                       &bad, 1, inf_bits, plain);
            if (c < C)
                PK_NB_N(pk_nhwc_itaps)(x0 + C - PK_NB_L, toff, tpix, tchk, K, colpix, y + C - PK_NB_L, ind, base,
                                       icmul, icl, C - PK_NB_L, &bad, 1, inf_bits, plain);
            continue;
        }
        ptrdiff_t m = ow == OW - 1 ? n : own - t0 > n ? n : own - t0;
        for (c = 0; c + B <= C; c += B)
            PK_NB_N(pk_nhwc_iblock)(rows, rpix, chk, nrows, off + c, col, step, (int32_t)dw, n, m, y + c, ind,
                                    base, imul32, icmul, icl, c, tstep, &bad, PK_NHWC_BLOCK, inf_bits, plain);
        for (; c + PK_NB_L <= C; c += PK_NB_L)
            PK_NB_N(pk_nhwc_iblock)(rows, rpix, chk, nrows, off + c, col, step, (int32_t)dw, n, m, y + c, ind,
                                    base, imul32, icmul, icl, c, tstep, &bad, 1, inf_bits, plain);
        if (c < C)
            PK_NB_N(pk_nhwc_iblock)(rows, rpix, chk, nrows, off + C - PK_NB_L, col, step, (int32_t)dw, n, m,
                                    y + C - PK_NB_L, ind, base, imul32, icmul, icl, C - PK_NB_L, tstep, &bad, 1,
                                    inf_bits, plain);
    }
    return PK_NB_F(bad)(bad, inf_bits);
}
#undef PK_NB_M
#undef PK_NB_Q
#undef PK_NB_WIDEN
#undef PK_NB_GT
#undef PK_NB_IBLEND
#endif

#undef PK_NB_T
#undef PK_NB_N
#undef PK_NB_F
#undef PK_NB_V
#undef PK_NB_C
#undef PK_NB_L
#undef PK_NB_KEY
#undef PK_NB_STY
