/* The vector family of 16-bit floats' int16 keys (pooling_rows.h), written once for two widths:
 * included by pooling_rows.h with these defined (and undefined at the end):
 *
 *   PK_RH(op)     the family's name of an operation or type: pk_rh_##op (the build's widest vectors,
 *                 up to 32 bytes), pk_rn_##op (16 bytes: rows of 8 to 15 in the wider builds)
 *   PK_RH_BYTES   its vector bytes: 32 or 16 (PK_SIMD), 2 (one value: PK_SIMD 0)
 *
 * The family: the vector and mask types v and m, the lanes `lanes`, ld / st, key (a loaded value's
 * key) and bits (a key's value), sty (st of the bits), max and min, the checks (c, clean, chk, bad),
 * pairs and trios (the first maxima of pairs and triples, for stride 2) and order (their lane order
 * put right).
 *
 *   PK_RH_INT     defined: the family of int16 and uint16 data instead (no checks; key(v, u) and
 *                 sty(p, v, u) flip the sign bit of uint16's, u nonzero). */

#if PK_SIMD
typedef int16_t PK_RH(v) __attribute__((vector_size(PK_RH_BYTES)));
#else
typedef int16_t PK_RH(v);
#endif
typedef PK_RH(v) PK_RH(m);
enum { PK_RH(lanes) = sizeof(PK_RH(v)) / sizeof(int16_t) };

/* x86 intrinsics of the width: PK_RH_X(op) names them, PK_RH_I is their integer vector type. */
#if PK_SIMD && PK_RH_BYTES == 32
#define PK_RH_X(op) _mm256_##op
#define PK_RH_I __m256i
#elif PK_SIMD && PK_RH_BYTES == 16 && defined(__SSE2__)
#define PK_RH_X(op) _mm_##op
#define PK_RH_I __m128i
#endif

static inline PK_RH(v) PK_RH(ld)(const int16_t* p)
{
    PK_RH(v) v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void PK_RH(st)(int16_t* p, PK_RH(v) v) { memcpy(p, &v, sizeof v); }

#ifndef PK_RH_INT
/* The key of a value's bits, and the bits of a key.  Where the build has SSSE3's psignw the key
 * is the magnitude with the value's sign (two operations, the magnitude shared with chk; -0.0
 * then ties with +0.0, but such planes are not computed here), else the flip of
 * pk_half_fast_key, its own inverse. */
#if defined(PK_RH_X) && (PK_RH_BYTES == 32 || defined(__SSSE3__))
static inline PK_RH(v) PK_RH(key)(PK_RH(v) v) { return (PK_RH(v))PK_RH_X(sign_epi16)((PK_RH_I)(v & 0x7fff), (PK_RH_I)v); }
static inline PK_RH(v) PK_RH(bits)(PK_RH(v) k) { return (PK_RH(v))PK_RH_X(abs_epi16)((PK_RH_I)k) | (k & (int16_t)0x8000); }
#else
static inline PK_RH(v) PK_RH(key)(PK_RH(v) v) { return v ^ ((v >> 15) & 0x7fff); }
static inline PK_RH(v) PK_RH(bits)(PK_RH(v) k) { return PK_RH(key)(k); }
#endif
static inline void PK_RH(sty)(int16_t* p, PK_RH(v) v) { PK_RH(st)(p, PK_RH(bits)(v)); }
#else
/* Integers (PK_RH_INT): int16 as it is, uint16 by its bits with the sign bit flipped (u nonzero), whose
 * signed order is the unsigned one; the flip is its own inverse. */
static inline PK_RH(v) PK_RH(key)(PK_RH(v) v, int u) { return v ^ (int16_t)(u ? INT16_MIN : 0); }
static inline void PK_RH(sty)(int16_t* p, PK_RH(v) v, int u) { PK_RH(st)(p, PK_RH(key)(v, u)); }
#endif

static inline PK_RH(v) PK_RH(max)(PK_RH(v) a, PK_RH(v) b)
{
#if defined(PK_RH_X)
    return (PK_RH(v))PK_RH_X(max_epi16)((PK_RH_I)a, (PK_RH_I)b);
#elif PK_SIMD
    PK_RH(m) g = b > a;
    return (b & g) | (a & ~g);
#else
    return b > a ? b : a;
#endif
}
static inline PK_RH(v) PK_RH(min)(PK_RH(v) a, PK_RH(v) b)
{
#if defined(PK_RH_X)
    return (PK_RH(v))PK_RH_X(min_epi16)((PK_RH_I)a, (PK_RH_I)b);
#elif PK_SIMD
    PK_RH(m) g = b < a;
    return (b & g) | (a & ~g);
#else
    return b < a ? b : a;
#endif
}

#ifndef PK_RH_INT
/* The checks: the largest magnitude seen (above inf_bits: a NaN) and the smallest value as int16
 * (INT16_MIN only for -0.0's bits), two reductions of three operations a vector. */
typedef struct { PK_RH(v) top, low; } PK_RH(c);
static inline PK_RH(c) PK_RH(clean)(void)
{
    PK_RH(c) c;
    memset(&c.top, 0, sizeof c.top);
    memset(&c.low, 0x7f, sizeof c.low);
    return c;
}
static inline void PK_RH(chk)(PK_RH(c)* c, PK_RH(v) a, PK_RH(v) b)
{
    c->top = PK_RH(max)(c->top, PK_RH(max)(a & 0x7fff, b & 0x7fff));
    c->low = PK_RH(min)(c->low, PK_RH(min)(a, b));
}
static inline int PK_RH(bad)(PK_RH(c) c, int inf_bits)
{
#if defined(PK_RH_X)
    /* (a lane loop here stayed scalar where it was inlined into the kernels: 32 extracts) */
    PK_RH(m) b = (c.top > (int16_t)inf_bits) | (c.low == INT16_MIN);
    return PK_RH_X(movemask_epi8)((PK_RH_I)b) != 0;
#elif PK_SIMD
    int bad = 0;
    for (int i = 0; i < PK_RH(lanes); i++)
        bad |= (c.top[i] > inf_bits) | (c.low[i] == INT16_MIN);
    return bad;
#else
    return (c.top > inf_bits) | (c.low == INT16_MIN);
#endif
}
#else
/* Integers have no value the cheap compare gets wrong: no checks. */
typedef int PK_RH(c);
static inline PK_RH(c) PK_RH(clean)(void) { return 0; }
static inline void PK_RH(chk)(PK_RH(c)* c, PK_RH(v) a, PK_RH(v) b) { (void)c; (void)a; (void)b; }
static inline int PK_RH(bad)(PK_RH(c) c, int inf_bits) { (void)c; (void)inf_bits; return 0; }
#endif

/* The largest key of a vector. */
static inline int16_t PK_RH(hmax)(PK_RH(v) a)
{
#if defined(PK_RH_X)
    __m128i h;
#if PK_RH_BYTES == 32
    h = _mm_max_epi16(_mm256_castsi256_si128((__m256i)a), _mm256_extracti128_si256((__m256i)a, 1));
#else
    h = (__m128i)a;
#endif
    h = _mm_max_epi16(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_max_epi16(h, _mm_shuffle_epi32(h, 0xB1));
    h = _mm_max_epi16(h, _mm_shufflelo_epi16(h, 0xB1));
    return (int16_t)_mm_cvtsi128_si32(h);
#elif PK_SIMD
    int16_t top = a[0];
    for (int i = 1; i < PK_RH(lanes); i++)
        top = a[i] > top ? a[i] : top;
    return top;
#else
    return a;
#endif
}

/* pairs(a, b): the first maxima of the pairs of a then b, in the lane order of the float32
 * family's even/odd split (within each 16-byte half: a's pairs, then b's), which order() puts
 * right; trios(p): of the triples p[2j], p[2j + 1], p[2j + 2], j < lanes, the same way.  On x86
 * without shuffles of 16-bit lanes (which are three byte shuffles a split, port 5's alone): each
 * 32-bit lane's high half takes the maximum of its pair (a shift up and a max; for a triple also
 * the load one value on, whose high halves are the third values), and a signed pack of the high
 * halves shifted down gives that lane order, exactly (int16 values in int32 lanes do not
 * saturate).  Elsewhere the split by shuffles. */
#if defined(PK_RH_X)
static inline PK_RH(v) PK_RH(high)(PK_RH(v) m) { return (PK_RH(v))PK_RH_X(srai_epi32)((PK_RH_I)m, 16); }
static inline PK_RH(v) PK_RH(up)(PK_RH(v) a) { return PK_RH(max)(a, (PK_RH(v))PK_RH_X(slli_epi32)((PK_RH_I)a, 16)); }
static inline PK_RH(v) PK_RH(pack)(PK_RH(v) a, PK_RH(v) b)
{
    return (PK_RH(v))PK_RH_X(packs_epi32)((PK_RH_I)PK_RH(high)(a), (PK_RH_I)PK_RH(high)(b));
}
static inline PK_RH(v) PK_RH(pairs)(PK_RH(v) a, PK_RH(v) b) { return PK_RH(pack)(PK_RH(up)(a), PK_RH(up)(b)); }
static inline PK_RH(v) PK_RH(trios)(const int16_t* p)
{
    PK_RH(v) a = PK_RH(max)(PK_RH(up)(PK_RH(ld)(p)), PK_RH(ld)(p + 1));
    PK_RH(v) b = PK_RH(max)(PK_RH(up)(PK_RH(ld)(p + PK_RH(lanes))), PK_RH(ld)(p + 1 + PK_RH(lanes)));
    return PK_RH(pack)(a, b);
}
#else
#if PK_SIMD && PK_RH_BYTES == 32
#define PK_RH_EVEN 0, 2, 4, 6, 16, 18, 20, 22, 8, 10, 12, 14, 24, 26, 28, 30
#define PK_RH_ODD 1, 3, 5, 7, 17, 19, 21, 23, 9, 11, 13, 15, 25, 27, 29, 31
#else
#define PK_RH_EVEN 0, 2, 4, 6, 8, 10, 12, 14
#define PK_RH_ODD 1, 3, 5, 7, 9, 11, 13, 15
#endif
static inline PK_RH(v) PK_RH(even)(PK_RH(v) a, PK_RH(v) b)
{
#if !PK_SIMD
    (void)b;
    return a;
#elif defined(__clang__)
    return __builtin_shufflevector(a, b, PK_RH_EVEN);
#else
    return __builtin_shuffle(a, b, (PK_RH(m)){PK_RH_EVEN});
#endif
}
static inline PK_RH(v) PK_RH(odd)(PK_RH(v) a, PK_RH(v) b)
{
#if !PK_SIMD
    (void)a;
    return b;
#elif defined(__clang__)
    return __builtin_shufflevector(a, b, PK_RH_ODD);
#else
    return __builtin_shuffle(a, b, (PK_RH(m)){PK_RH_ODD});
#endif
}
#undef PK_RH_EVEN
#undef PK_RH_ODD
static inline PK_RH(v) PK_RH(pairs)(PK_RH(v) a, PK_RH(v) b) { return PK_RH(max)(PK_RH(even)(a, b), PK_RH(odd)(a, b)); }
static inline PK_RH(v) PK_RH(trios)(const int16_t* p)
{
    PK_RH(v) m = PK_RH(pairs)(PK_RH(ld)(p), PK_RH(ld)(p + PK_RH(lanes)));
    return PK_RH(max)(m, PK_RH(even)(PK_RH(ld)(p + 2), PK_RH(ld)(p + 2 + PK_RH(lanes))));
}
#endif

/* A result of `rounds` (1 or 2) in-lane splits in output order. */
static inline PK_RH(v) PK_RH(order)(PK_RH(v) m, int rounds)
{
#if PK_SIMD && PK_RH_BYTES == 32
    if (rounds == 1)
        return (PK_RH(v))_mm256_permute4x64_epi64((__m256i)m, 0xD8);
    return (PK_RH(v))_mm256_permutevar8x32_epi32((__m256i)m, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
#else
    (void)rounds;
    return m;
#endif
}

#undef PK_RH_X
#undef PK_RH_I
#undef PK_RH
#undef PK_RH_BYTES
