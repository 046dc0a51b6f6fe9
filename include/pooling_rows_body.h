/* ROWS_FIRST's passes and plane loop, and TILES' one-pass 2x2 windows, written once for both of their
 * element kinds: included by
 * pooling_rows.h once per kind, with these defined (and undefined after):
 *
 *   PK_RB_T        the element type of x, y and the row buffers: float, or int16_t for 16-bit
 *                  floats (their bits; the buffers hold their keys)
 *   PK_RB_N(name)  the kind's name of a function: name##_f32, name##_h16
 *   PK_RB_F(op)    the kind's vector operation (pk_rows_##op, pk_rh_##op): ld / st / max / pairs /
 *                  trios / order as in pooling_simd.h and pooling_rows.h; key, what a loaded input
 *                  value is compared as (float32: itself; 16-bit floats: its key, pooling_rows.h),
 *                  and sty, the store of an output row (16-bit floats: the keys' bits); and the
 *                  checks of the values the cheap compare could get wrong: a state PK_RB_C, set up
 *                  by clean(), fed loaded values by chk(&c, a, b), read by bad(c, inf_bits)
 *   PK_RB_KEY(v, u), PK_RB_STY(p, v, u)  the kind's key and sty (u: the call's inf_bits, which the
 *                  integer kinds read as "unsigned": their sign bit flipped on the way in and out)
 *   PK_RB_V, PK_RB_M  its vector and mask types; PK_RB_L its lanes
 *   PK_RB_ZEROS    1 where a -0.0 in the plane matters only beside a zero result, which pass 2 looks
 *                  for (float32: the plane is then scanned for one); 0 where chk() finds -0.0 too
 * and undefines them at its end. */

/* Pass 1: V[w] = the maximum of rows r[0 .. taps - 1], w < W (W >= L); taps (a literal at the
 * call sites) is 2, 3 or 4, the window's rows (2 for a window of one row: rows past it repeat
 * one, so a window of two rows reads no third); the values of the first nchk rows go to the
 * checks *b.  Each vector loop ends with a vector that overlaps the one before it. */
static inline void PK_RB_N(pk_rows_pass1_at)(const PK_RB_T* const* r, int taps, PK_RB_T* V, ptrdiff_t w,
                                             int nchk, PK_RB_C* b, int u)
{
    PK_RB_V x0 = PK_RB_F(ld)(r[0] + w), x1 = PK_RB_F(ld)(r[1] + w);
    PK_RB_V x2 = taps >= 3 ? PK_RB_F(ld)(r[2] + w) : x1;
    PK_RB_V x3 = taps == 4 ? PK_RB_F(ld)(r[3] + w) : x2;
    if (nchk == 1)
        PK_RB_F(chk)(b, x0, x0);
    else
        PK_RB_F(chk)(b, x0, x1);
    if (taps >= 3 && nchk >= 3)
        PK_RB_F(chk)(b, x2, taps == 4 && nchk == 4 ? x3 : x2);
    PK_RB_V m = PK_RB_F(max)(PK_RB_KEY(x0, u), PK_RB_KEY(x1, u));
    if (taps >= 3)
        m = PK_RB_F(max)(m, PK_RB_KEY(x2, u));
    if (taps == 4)
        m = PK_RB_F(max)(m, PK_RB_KEY(x3, u));
    PK_RB_F(st)(V + w, m);
}

static inline void PK_RB_N(pk_rows_pass1)(const PK_RB_T* const* r, int taps, PK_RB_T* V, ptrdiff_t W,
                                          int nchk, PK_RB_C* bad, int u)
{
    ptrdiff_t w;
    PK_RB_C b = *bad;
    PK_ROWS_UNROLL(4)
    for (w = 0; w <= W - PK_RB_L; w += PK_RB_L)
        PK_RB_N(pk_rows_pass1_at)(r, taps, V, w, nchk, &b, u);
    if (w < W)
        PK_RB_N(pk_rows_pass1_at)(r, taps, V, W - PK_RB_L, nchk, &b, u);
    *bad = b;
}

/* Pass 2: y[o] for o < OW (OW >= L) off the padded row V, by the W form sw and `three` (literals
 * at the call sites): 1: max(V[o], V[o + d1], V[o + d2]) with `three`, else max(V[o], V[o + d2]);
 * 2: max(V[2o], V[2o + 1], V[2o + 2]) with `three`, else without the last; 4: the maximum of
 * V[4o .. 4o + 3]. */
static inline PK_RB_V PK_RB_N(pk_rows_pass2_at)(const PK_RB_T* V, ptrdiff_t o, int sw, int three,
                                                ptrdiff_t d1, ptrdiff_t d2)
{
    PK_RB_V m, a, b, c, d;
    if (sw == 1) {
        m = PK_RB_F(max)(PK_RB_F(ld)(V + o), PK_RB_F(ld)(V + o + (three ? d1 : d2)));
        if (three)
            m = PK_RB_F(max)(m, PK_RB_F(ld)(V + o + d2));
    } else if (sw == 2) {
        if (three)
            m = PK_RB_F(trios)(V + 2 * o);
        else
            m = PK_RB_F(pairs)(PK_RB_F(ld)(V + 2 * o), PK_RB_F(ld)(V + 2 * o + PK_RB_L));
        m = PK_RB_F(order)(m, 1);
    } else {
        a = PK_RB_F(ld)(V + 4 * o);
        b = PK_RB_F(ld)(V + 4 * o + PK_RB_L);
        c = PK_RB_F(ld)(V + 4 * o + 2 * PK_RB_L);
        d = PK_RB_F(ld)(V + 4 * o + 3 * PK_RB_L);
        /* pairs, then pairs of the pairs (both in the even lane order) */
        m = PK_RB_F(order)(PK_RB_F(pairs)(PK_RB_F(pairs)(a, b), PK_RB_F(pairs)(c, d)), 2);
    }
    return m;
}

/* Pass 2's output row; returns the lanes of zero results (where PK_RB_ZEROS). */
static inline PK_RB_M PK_RB_N(pk_rows_pass2)(const PK_RB_T* V, PK_RB_T* y, ptrdiff_t OW, int sw, int three,
                                             ptrdiff_t d1, ptrdiff_t d2, int u)
{
    const PK_RB_V zero = {0};
    PK_RB_M z = {0};
    ptrdiff_t o;
    PK_RB_V m;
    PK_ROWS_UNROLL(2)
    for (o = 0; o <= OW - PK_RB_L; o += PK_RB_L) {
        m = PK_RB_N(pk_rows_pass2_at)(V, o, sw, three, d1, d2);
        if (PK_RB_ZEROS)
            z |= m == zero;
        PK_RB_STY(y + o, m, u);
    }
    if (o < OW) {
        m = PK_RB_N(pk_rows_pass2_at)(V, OW - PK_RB_L, sw, three, d1, d2);
        if (PK_RB_ZEROS)
            z |= m == zero;
        PK_RB_STY(y + OW - PK_RB_L, m, u);
    }
    return z;
}

/* One H x W plane into its OH x OW result through R row buffers V + r * ld (each padded:
 * pk_rows_pad).  rows[4 * oh + t]: the input row of output row oh's tap t (a tap in the
 * padding, or past kh, repeats a valid row: a repeated row changes no maximum); nchk: the
 * taps whose rows are checked for NaN on every output row but the last (which checks all):
 * min(sh, kh) with dilation 1, else kh.  Returns 1 when the plane needs the exact compare (y
 * then holds no promised values).  inf_bits: the +inf pattern of a 16-bit float format.
 *
 * next: the plane the caller does next, or NULL: prefetched a slice per output row (see
 * pooling_prefetch.h).
 *
 * Pass 1 runs for R output rows before pass 2 reads them back: pass 2's shifted loads of a
 * row pass 1 has just stored stall on store forwarding (a load spanning two stores still in
 * flight), which made narrow rows several times dearer (docs/tuning.md#rows_first-passes). */
static inline int PK_RB_N(pk_rows)(const PK_RB_T* x, PK_RB_T* y, ptrdiff_t H, ptrdiff_t W, ptrdiff_t OH,
                                   ptrdiff_t OW, const ptrdiff_t* rows, ptrdiff_t kh, int nchk,
                                   ptrdiff_t kw, ptrdiff_t sw, ptrdiff_t dw, ptrdiff_t pw, PK_RB_T* V,
                                   ptrdiff_t ld, ptrdiff_t R, const PK_RB_T* next, int inf_bits)
{
    PK_RB_C bad = PK_RB_F(clean)();
    PK_RB_M zero = {0};
    ptrdiff_t oh0, oh, n;
    const ptrdiff_t* r;
    const ptrdiff_t vals = 64 / sizeof(PK_RB_T);   /* values per cache line */
    const ptrdiff_t per = ((H * W + vals - 1) / vals + OH - 1) / OH;   /* lines of next per output row */
    ptrdiff_t ahead = 0;   /* values of next prefetched so far */
    for (oh0 = 0; oh0 < OH; oh0 += R) {
        n = OH - oh0 < R ? OH - oh0 : R;
        for (oh = oh0, r = rows + 4 * oh0; oh < oh0 + n; oh++, r += 4) {
            const PK_RB_T* p[4] = {x + r[0] * W, x + r[1] * W, x + r[2] * W, x + r[3] * W};
            if (next != NULL)
                for (ptrdiff_t l = 0; l < per && ahead < H * W; l++, ahead += vals)
                    pk_prefetch(next + ahead);
            int check = oh == OH - 1 ? 4 : nchk;
            if (kh == 4)
                PK_RB_N(pk_rows_pass1)(p, 4, V + (oh - oh0) * ld + pw, W, check, &bad, inf_bits);
            else if (kh == 3)
                PK_RB_N(pk_rows_pass1)(p, 3, V + (oh - oh0) * ld + pw, W, check, &bad, inf_bits);
            else
                PK_RB_N(pk_rows_pass1)(p, 2, V + (oh - oh0) * ld + pw, W, check, &bad, inf_bits);
        }
        for (oh = oh0; oh < oh0 + n; oh++) {
            const PK_RB_T* v = V + (oh - oh0) * ld;
            if (sw == 4)
                zero |= PK_RB_N(pk_rows_pass2)(v, y + oh * OW, OW, 4, 0, 0, 0, inf_bits);
            else if (sw == 2)
                zero |= PK_RB_N(pk_rows_pass2)(v, y + oh * OW, OW, 2, kw == 3, 0, 0, inf_bits);
            else if (kw == 3)
                zero |= PK_RB_N(pk_rows_pass2)(v, y + oh * OW, OW, 1, 1, dw, 2 * dw, inf_bits);
            else
                zero |= PK_RB_N(pk_rows_pass2)(v, y + oh * OW, OW, 1, 0, 0, (kw - 1) * dw, inf_bits);
        }
    }
    if (PK_RB_F(bad)(bad, inf_bits))
        return 1;
#if PK_RB_ZEROS
    if (PK_RB_F(any)(zero)) {
        /* a zero result: which zero depends on the order unless the plane has no -0.0 */
        uint32_t u, neg = 0;
        for (ptrdiff_t i = 0; i < H * W; i++) {
            memcpy(&u, x + i, sizeof u);
            neg |= u == 0x80000000u;
        }
        return neg != 0;
    }
#else
    (void)zero;
#endif
    return 0;
}

/* TILES' 2x2 (2-D) and 2x2x2 (3-D) stride-2 windows in one pass over the input
 * (src/kernels/maxpool_tiles.pxi).  pk_tiles_pair: the first maxima of the pairs of
 * p[2o .. 2o + 2L) in the kind's even lane order (order() puts them right), their values fed to
 * the checks. */
static inline PK_RB_V PK_RB_N(pk_tiles_pair)(const PK_RB_T* p, ptrdiff_t o, PK_RB_C* bad, int u)
{
    PK_RB_V a = PK_RB_F(ld)(p + 2 * o), b = PK_RB_F(ld)(p + 2 * o + PK_RB_L);
    PK_RB_F(chk)(bad, a, b);
    return PK_RB_F(pairs)(PK_RB_KEY(a, u), PK_RB_KEY(b, u));
}

static inline void PK_RB_N(pk_tiles_k2_at)(const PK_RB_T* a, const PK_RB_T* c, PK_RB_T* y, ptrdiff_t OW,
                                           ptrdiff_t o, int depth, PK_RB_C* bad, int u)
{
    PK_RB_V m = PK_RB_F(max)(PK_RB_N(pk_tiles_pair)(a, o, bad, u), PK_RB_N(pk_tiles_pair)(a + 2 * OW, o, bad, u));
    if (depth)
        m = PK_RB_F(max)(m, PK_RB_F(max)(PK_RB_N(pk_tiles_pair)(c, o, bad, u),
                                         PK_RB_N(pk_tiles_pair)(c + 2 * OW, o, bad, u)));
    PK_RB_STY(y + o, PK_RB_F(order)(m, 1), u);
}

/* One output row with the input rows side by side (2-D: two, 3-D: four), a vector of outputs at a
 * time, the last overlapping the one before it.  3-D rows go this way in every build (taken one
 * after another through y, they measured no faster on Zen 4 in the AVX2 build and 1.1x slower in
 * the baseline one: four passes over y), and so do 2-D rows of 16-byte vectors (the baseline build;
 * 16-bit rows of 8 to 15), where one row after another measured 1.06-1.37x slower on Zen 4 from L3
 * and memory with the same instruction count, and rows of up to four vectors (pk_tiles_k2_rows). */
static inline void PK_RB_N(pk_tiles_k2_side)(const PK_RB_T* a, const PK_RB_T* c, PK_RB_T* y, ptrdiff_t OW,
                                             int depth, PK_RB_C* bad, int u)
{
    ptrdiff_t o;
    PK_ROWS_UNROLL(2)
    for (o = 0; o <= OW - PK_RB_L; o += PK_RB_L)
        PK_RB_N(pk_tiles_k2_at)(a, c, y, OW, o, depth, bad, u);
    if (o < OW)
        PK_RB_N(pk_tiles_k2_at)(a, c, y, OW, OW - PK_RB_L, depth, bad, u);
}

/* One output row of 2x2 windows, the input read as one stream, row after row: the first input
 * row's pairs over the whole output row, kept in y (in the pairs' lane order, as keys), then the
 * second row's pass, which reads them back and stores the result over them; the row's last values,
 * past its whole vectors, take a vector of their own that overlaps the one before it, both rows at
 * once, stored last.  For rows of more than four vectors of 32 bytes (pk_tiles_k2): read side by
 * side, a line of each in turn, two such rows ran from L3 and memory at 0.6-0.8 of this form's speed
 * on Zen 4 in the AVX2 and AVX-512 builds, while on shorter rows (at most 8 lines an output row) this
 * form, or the first row kept in registers, measured 1.0-1.2x slower (docs/tuning.md#tiles-strategy). */
static inline void PK_RB_N(pk_tiles_k2_rows)(const PK_RB_T* a, PK_RB_T* y, ptrdiff_t OW, PK_RB_C* bad, int u)
{
    const ptrdiff_t whole = OW - OW % PK_RB_L;
    ptrdiff_t o;
    PK_ROWS_UNROLL(2)
    for (o = 0; o < whole; o += PK_RB_L)
        PK_RB_F(st)(y + o, PK_RB_N(pk_tiles_pair)(a, o, bad, u));
    PK_ROWS_UNROLL(2)
    for (o = 0; o < whole; o += PK_RB_L) {
        PK_RB_V m = PK_RB_F(max)(PK_RB_F(ld)(y + o), PK_RB_N(pk_tiles_pair)(a + 2 * OW, o, bad, u));
        PK_RB_STY(y + o, PK_RB_F(order)(m, 1), u);
    }
    if (whole < OW)
        PK_RB_N(pk_tiles_k2_at)(a, NULL, y, OW, OW - PK_RB_L, 0, bad, u);
}

/* Output row q < n of y (OW >= L values) from input rows x0 + 4q * OW and the one after it (2 * OW
 * values each), then in 3-D the same rows of x1, the second depth tap (NULL in 2-D).  Each row's
 * pairs, then the two rows, then the two depth taps: the contract's order, each combine keeping its
 * earlier operand on ties (so a row's maxima kept in y and combined with the next row's later pick
 * the same values).  Returns 1 when the rows held a value the cheap compare gets wrong (NaN; -0.0
 * for 16-bit floats, whose keys tie it with +0.0): y then holds no promised values.  The batch form
 * (W pass into scratch, then H, then D) ran at half a read loop's speed from memory:
 * docs/tuning.md#tiles-strategy.  Where rows are read side by side, the input rows PK_TILES_AHEAD
 * bytes ahead are prefetched (prefetches never fault, so past the input too): without, they missed to
 * memory in the baseline build on Zen 3; read one after another they need no prefetch, which cost
 * time on Zen 4.  Out of line: inlined into TILES' batch loop it changed that
 * loop's code, and the rows narrower than a vector, which stay there (VGG's pool5), ran 1.1x slower. */
static PK_NOINLINE int PK_RB_N(pk_tiles_k2)(const PK_RB_T* x0, const PK_RB_T* x1, PK_RB_T* y, ptrdiff_t n,
                                            ptrdiff_t OW, int inf_bits)
{
    PK_RB_C bad = PK_RB_F(clean)();
    const ptrdiff_t per = 4 * OW;   /* input values per output row and depth tap */
    const ptrdiff_t ahead = per * (PK_TILES_AHEAD / (per * (ptrdiff_t)sizeof(PK_RB_T)) + 1);
    const ptrdiff_t line = 64 / sizeof(PK_RB_T);
    /* rows read one after another: 2-D rows of more than four vectors of 32 bytes */
    const int apart = x1 == NULL && sizeof(PK_RB_V) >= 32 && OW > 4 * PK_RB_L;
    for (ptrdiff_t q = 0; q < n; q++) {
        if (apart) {
            PK_RB_N(pk_tiles_k2_rows)(x0 + q * per, y + q * OW, OW, &bad, inf_bits);
            continue;
        }
        for (ptrdiff_t b = 0; b < per; b += line) {   /* a line at a time, past the batch too */
            pk_prefetch(x0 + q * per + ahead + b);
            if (x1 != NULL)
                pk_prefetch(x1 + q * per + ahead + b);
        }
        if (x1 != NULL)
            PK_RB_N(pk_tiles_k2_side)(x0 + q * per, x1 + q * per, y + q * OW, OW, 1, &bad, inf_bits);
        else
            PK_RB_N(pk_tiles_k2_side)(x0 + q * per, NULL, y + q * OW, OW, 0, &bad, inf_bits);
    }
    return PK_RB_F(bad)(bad, inf_bits);
}

#undef PK_RB_T
#undef PK_RB_N
#undef PK_RB_F
#undef PK_RB_V
#undef PK_RB_M
#undef PK_RB_L
#undef PK_RB_C
#undef PK_RB_ZEROS
#undef PK_RB_KEY
#undef PK_RB_STY
