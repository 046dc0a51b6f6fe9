/* NARROW's loops (pooling_narrow.h has what they compute and why they are exact), written once for
 * both of its element kinds: included by pooling_narrow.h once per kind, with these defined (and
 * undefined after):
 *
 *   PK_NR_T        the element type of x, y and the scratch rows: float, or int16_t for 16-bit floats
 *                  (their bits; the scratch holds their keys)
 *   PK_NR_N(name)  the kind's name of a function or type: name##_f32, name##_h16
 *   PK_NR_F(op)    the kind's vector operation: ld / st / max / key / sty / c / clean / bad as in
 *                  pooling_rows_body.h, and blend(v, f, m) (v where m, else f), chkv(&c, v, valid)
 *                  (the checks fed the lanes of v that valid marks), sty_first(p, v, n) (the first n
 *                  lanes' values to p), neg(inf_bits) (the key of -inf in every lane) and odd1(x,
 *                  inf_bits) (one value the cheap compare gets wrong)
 *   PK_NR_KEY(v, u), PK_NR_STY(p, v, u), PK_NR_STY_FIRST(p, v, n, u)  its key, sty and sty_first (u:
 *                  the call's inf_bits, "unsigned" to the integer kinds, as in pooling_rows_body.h)
 *   PK_NR_TAP(x, m, neg, u)  the keys of a tap's loaded values x, those of lanes outside the row (mask m:
 *                  0 there) at or below neg's, and PK_NR_FLOOR(m, neg) what makes them neg's again after a
 *                  row's taps
 *   PK_NR_KEYS     defined for 16-bit floats: PK_NR_KEYS(x, kb, size, inf_bits) puts a plane's keys in
 *                  scratch kb and returns whether it holds a value they get wrong; the loops read kb
 *   PK_NR_V, PK_NR_M, PK_NR_C  its vector, mask and check types; PK_NR_L its lanes */

/* Lane l of a strip whose first column is c0: tap t reads column c0 + l - pw + t * dw */
static inline void PK_NR_N(pk_narrow_lane_masks)(PK_NR_M* masks, PK_NR_M* valid, ptrdiff_t W, ptrdiff_t c0,
                                    ptrdiff_t kw, ptrdiff_t dw, ptrdiff_t pw)
{
#if PK_SIMD
    for (ptrdiff_t t = 0; t < kw; t++)
        for (int l = 0; l < PK_NR_L; l++) {
            ptrdiff_t c = c0 + l - pw + t * dw;
            masks[t][l] = (0 <= c && c < W) ? -1 : 0;
        }
    for (int l = 0; l < PK_NR_L; l++)
        (*valid)[l] = c0 + l < W ? -1 : 0;
#else
    for (ptrdiff_t t = 0; t < kw; t++)
        masks[t] = (0 <= c0 + t * dw - pw && c0 + t * dw - pw < W) ? -1 : 0;
    *valid = c0 < W ? -1 : 0;
#endif
}

/* Values a plane's copy needs before and after it so that no load leaves it. */
static inline ptrdiff_t PK_NR_N(pk_narrow_margin)(ptrdiff_t kw, ptrdiff_t dw)
{
    return PK_NARROW_STRIPS * PK_NR_L + (kw - 1) * dw + 1;
}

/* The lane masks of one strip of a call's W taps (kw <= PK_NARROW_MAX_K). */
typedef struct {
    PK_NR_M tap[PK_NARROW_MAX_K];
    PK_NR_M valid;   /* lanes whose column is below W */
} PK_NR_N(pk_narrow_masks);

/* The row reduced along W (step 1 of the banner), as keys (PK_NR_F(key)), its values fed to the checks *bad. */
static PK_ALWAYS_INLINE PK_NR_V PK_NR_N(pk_narrow_row)(const PK_NR_T* row, const PK_NR_M* tap, PK_NR_M valid, ptrdiff_t kw,
                                    ptrdiff_t dw, ptrdiff_t pw, PK_NR_V neg, PK_NR_C* bad, int u)
{
    PK_NR_V m = neg;
    PK_NR_V x0 = PK_NR_F(ld)(row);
    PK_NR_F(chkv)(bad, x0, valid);
    for (ptrdiff_t t = 0; t < kw; t++) {
        PK_NR_V v = PK_NR_TAP(PK_NR_F(ld)(row + t * dw - pw), tap[t], neg, u);
        m = t == 0 ? v : PK_NR_F(max)(m, v);
    }
    return PK_NR_FLOOR(m, neg);
}

/* Output row oh's strip vector to y + oh * OW (y: the strip's first column): whole where it ends
 * inside the plane's OH rows (its lanes past the row spill into the next row's first strip, which
 * is stored after it), lane by lane otherwise (the lanes below OW - c0). */
static PK_ALWAYS_INLINE void PK_NR_N(pk_narrow_store)(PK_NR_T* y, ptrdiff_t oh, ptrdiff_t OH, ptrdiff_t OW, ptrdiff_t c0,
                                   PK_NR_V m, int u)
{
    if (oh * OW + c0 + PK_NR_L <= OH * OW) {
        PK_NR_STY(y + oh * OW, m, u);
    } else {
        ptrdiff_t n = OW - c0 < PK_NR_L ? OW - c0 : PK_NR_L;
        PK_NR_STY_FIRST(y + oh * OW, m, n, u);
    }
}

/* A stride-1 window of K rows whose output has the input's shape, P of them above the output
 * row (P pads at the top): the reduced rows roll through K registers (K, P, kw literals at the
 * call sites of the common windows), each output row their first maximum in tap order, -inf
 * past the plane's edges.  One strip (y, x at its first column).  Returns 1 for a value the cheap
 * compare gets wrong. */
static PK_ALWAYS_INLINE int PK_NR_N(pk_narrow_roll)(const PK_NR_T* x, PK_NR_T* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t c0,
                                 const PK_NR_N(pk_narrow_masks)* mk, ptrdiff_t K, ptrdiff_t P, ptrdiff_t kw,
                                 ptrdiff_t dw, ptrdiff_t pw, PK_NR_V neg, int inf_bits)
{
    PK_NR_C bad = PK_NR_F(clean)();
    PK_NR_V h[PK_NARROW_MAX_K], m;
    ptrdiff_t r, t;
    for (t = 0; t < K; t++) {   /* h[t]: input row t - P */
        ptrdiff_t i = t - P;
        h[t] = 0 <= i && i < H ? PK_NR_N(pk_narrow_row)(x + i * W, mk->tap, mk->valid, kw, dw, pw, neg, &bad, inf_bits)
                               : neg;
    }
    for (r = 0; r < H; r++) {
        m = h[0];
        for (t = 1; t < K; t++)
            m = PK_NR_F(max)(m, h[t]);
        PK_NR_N(pk_narrow_store)(y, r, H, W, c0, m, inf_bits);
        for (t = 0; t + 1 < K; t++)
            h[t] = h[t + 1];
        t = r + 1 + K - 1 - P;   /* the input row entering the window of output row r + 1 */
        h[K - 1] = t < H ? PK_NR_N(pk_narrow_row)(x + t * W, mk->tap, mk->valid, kw, dw, pw, neg, &bad, inf_bits) : neg;
    }
    return PK_NR_F(bad)(bad, inf_bits);
}

/* One strip of an H x W plane into its OH x OW result, any geometry NARROW serves, through hb
 * (H vectors of scratch).  rows[2 * oh], rows[2 * oh + 1]: the valid H taps [t0, t1) of output
 * row oh.  Returns 1 when the plane holds a value the cheap compare gets wrong (y then holds no
 * promised values). */
static inline int PK_NR_N(pk_narrow_plane)(const PK_NR_T* x, PK_NR_T* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                                  ptrdiff_t OW, ptrdiff_t c0, const ptrdiff_t* rows, ptrdiff_t sh,
                                  ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw, ptrdiff_t pw,
                                  const PK_NR_N(pk_narrow_masks)* mk, PK_NR_V neg, PK_NR_T* hb, int inf_bits)
{
    PK_NR_C bad = PK_NR_F(clean)();
    ptrdiff_t r, oh, t;
    for (r = 0; r < H; r++)
        PK_NR_F(st)(hb + r * PK_NR_L, PK_NR_N(pk_narrow_row)(x + r * W, mk->tap, mk->valid, kw, dw, pw, neg, &bad,
                                                             inf_bits));
    if (PK_NR_F(bad)(bad, inf_bits))
        return 1;
    for (oh = 0; oh < OH; oh++) {
        ptrdiff_t t0 = rows[2 * oh], t1 = rows[2 * oh + 1], r0 = oh * sh - ph;
        PK_NR_V m = neg;
        for (t = t0; t < t1; t++) {
            PK_NR_V v = PK_NR_F(ld)(hb + (r0 + t * dh) * PK_NR_L);
            m = t == t0 ? v : PK_NR_F(max)(m, v);
        }
        PK_NR_N(pk_narrow_store)(y, oh, OH, OW, c0, m, inf_bits);
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
static PK_FLAT_NOINLINE int PK_NR_N(pk_narrow_strip)(const PK_NR_T* x, PK_NR_T* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                                  ptrdiff_t OW, ptrdiff_t c0, ptrdiff_t kh, const ptrdiff_t* rows,
                                  ptrdiff_t sh, ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw,
                                  ptrdiff_t pw, const PK_NR_N(pk_narrow_masks)* mk, PK_NR_V neg, PK_NR_T* hb,
                                  int inf_bits)
{
    x += c0;
    y += c0;
    if (sh == 1 && dh == 1 && OH == H && OW == W && dw == 1) {   /* the "same" windows roll */
        /* (centred pads literal: Inception's k3 p1 and SPPF's k5 p2 ran slower with them taken
         * at run time, docs/tuning.md#narrow-code; other pads take the general roll below) */
        if (kh == 3 && kw == 3 && ph == 1 && pw == 1)
            return PK_NR_N(pk_narrow_roll)(x, y, H, W, c0, mk, 3, 1, 3, 1, 1, neg, inf_bits);
        if (kh == 5 && kw == 5 && ph == 2 && pw == 2)
            return PK_NR_N(pk_narrow_roll)(x, y, H, W, c0, mk, 5, 2, 5, 1, 2, neg, inf_bits);
        if (kh == 2 && kw == 2 && ph <= 1)   /* (a pad of 2 or more: a stride without effect) */
            return ph ? PK_NR_N(pk_narrow_roll)(x, y, H, W, c0, mk, 2, 1, 2, 1, pw, neg, inf_bits)
                      : PK_NR_N(pk_narrow_roll)(x, y, H, W, c0, mk, 2, 0, 2, 1, pw, neg, inf_bits);
        if (kh <= PK_NARROW_MAX_K)
            return PK_NR_N(pk_narrow_roll)(x, y, H, W, c0, mk, kh, ph, kw, 1, pw, neg, inf_bits);
    }
    return PK_NR_N(pk_narrow_plane)(x, y, H, W, OH, OW, c0, rows, sh, dh, ph, kw, dw, pw, mk, neg, hb, inf_bits);
}

/* The first of planes [0, n) of x (H x W each) whose columns past the strips an OW-wide output
 * takes hold a value the cheap compare gets wrong (odd1), or n: the taps read them but the strips
 * do not check them (pk_narrow's caller looks here first where the output is narrower than the
 * input; the check inside pk_narrow's loop made the common planes slower:
 * docs/tuning.md#narrow-code). */
static inline ptrdiff_t PK_NR_N(pk_narrow_tail)(const PK_NR_T* x, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OW,
                                               int inf_bits)
{
    ptrdiff_t c0 = (OW + PK_NR_L - 1) / PK_NR_L * PK_NR_L;
    for (ptrdiff_t p = 0; p < n; p++)
        for (ptrdiff_t i = 0; i < H * (W > c0); i++)
            for (ptrdiff_t c = c0; c < W; c++)
                if (PK_NR_F(odd1)(x[(p * H + i) * W + c], inf_bits))
                    return p;
    return n;
}

/* Planes [0, n) of x (H x W each) into y (OH x OW each), through hb (H vectors of scratch; with
 * PK_NR_KEYS each plane goes through kb first, which has the margins the loads need): rows
 * of up to three vectors, as strips of a vector's columns, the last strip first (its stores spill
 * into the next row's first strip, which is stored after it); the W masks are made once per
 * strip.  Returns the first plane that holds a value the cheap compare gets wrong in the columns
 * the strips cover (it and the planes after it are not done), or n; columns past them the caller
 * checks (pk_narrow_tail). */
static inline ptrdiff_t PK_NR_N(pk_narrow)(const PK_NR_T* x, PK_NR_T* y, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                                           ptrdiff_t OH, ptrdiff_t OW, ptrdiff_t kh, const ptrdiff_t* rows,
                                           ptrdiff_t sh, ptrdiff_t dh, ptrdiff_t ph, ptrdiff_t kw, ptrdiff_t dw,
                                           ptrdiff_t pw, PK_NR_T* hb, PK_NR_T* kb, int inf_bits)
{
    PK_NR_N(pk_narrow_masks) mk[PK_NARROW_STRIPS];
    const PK_NR_V neg = PK_NR_F(neg)(inf_bits);
    ptrdiff_t p, j, strips = (OW + PK_NR_L - 1) / PK_NR_L;
    memset(mk, 0, sizeof mk);
    for (j = 0; j < strips; j++)
        PK_NR_N(pk_narrow_lane_masks)(mk[j].tap, &mk[j].valid, W, j * PK_NR_L, kw, dw, pw);
    for (p = 0; p < n; p++) {
        const PK_NR_T* xp = x + p * H * W;
#ifdef PK_NR_KEYS
        if (PK_NR_KEYS(xp, kb, H * W, inf_bits))   /* (kb: the plane's keys, with the loads' margins) */
            return p;
        xp = kb;
#else
        (void)kb;
#endif
        for (j = strips - 1; j >= 0; j--)
            if (PK_NR_N(pk_narrow_strip)(xp, y + p * OH * OW, H, W, OH, OW, j * PK_NR_L, kh, rows,
                                sh, dh, ph, kw, dw, pw, &mk[j], neg, hb, inf_bits))
                return p;
    }
    return n;
}


#undef PK_NR_T
#undef PK_NR_N
#undef PK_NR_F
#undef PK_NR_V
#undef PK_NR_M
#undef PK_NR_C
#undef PK_NR_L
#undef PK_NR_KEY
#undef PK_NR_STY
#undef PK_NR_STY_FIRST
#undef PK_NR_KEYS
#undef PK_NR_TAP
#undef PK_NR_FLOOR
