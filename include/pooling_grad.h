/* max_pool_grad_windows' loop (src/kernels/maxpool_grad.pxi): one pixel of dx, C channels, gathered
 * from the windows over it rather than scattered from each window.
 *
 * pk_grad_gather_f32 and pk_grad_gather_f64 (y, g, idx, off, n, pix, C): y[c] is the sum over
 * the n windows whose gradients and indices start at g + off[k] and idx + off[k] (k in window
 * order) of the gradient where the window's index is pix, else nothing: the terms max_pool_grad's
 * ordered scatter adds at this pixel, in its order, so the same bits.  (The SSE, AVX2 and NEON loops
 * add +0.0 for a lane whose index is another pixel; x + 0.0 is x for every x but -0.0, and a sum
 * that starts at +0.0 is never -0.0.  A NaN stays the first operand, as in the scatter's y[d] += g.)
 *
 * Channels go in blocks of four vectors with the windows inside, so the four sums stay in
 * registers and each window's indices and gradients are read once per block.  An int64 index is
 * compared as int64; on x86 two compares' lanes are narrowed to one float mask (AVX-512: two
 * mask registers joined, and a masked add). */
#ifndef POOLING_GRAD_H
#define POOLING_GRAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pooling_simd.h" /* PK_RESTRICT, PK_SIMD, PK_SIMD_BYTES */

/* The most windows over one pixel the kernel takes (a row's lists of them are on the stack,
 * PK_GRAD_LISTS entries: about 17 KiB), and the most
 * it is chosen for with float32 (pooling.torch's backward; the scatter otherwise): up to 4 (2x2, as
 * ResNet's k3 s2 and k2 s1 windows overlap) in the vector builds, 1 (windows that do not overlap) in
 * the scalar one (docs/tuning.md#max_pool_grad-nhwc-gathered-from-the-windows). */
#define PK_GRAD_WINDOWS_MAX 64
#if PK_SIMD
#define PK_GRAD_COVER_F32 4
#else
#define PK_GRAD_COVER_F32 1
#endif

/* One vector of floats (pk_ggf) and of doubles (pk_ggd), their lanes, a vector of pix (pk_ggp), and
 * the step acc + (g where idx == pix) for each: pk_gg_addf reads 2 * PK_GG_LD indices. */
#if PK_SIMD && PK_SIMD_BYTES >= 32
/* The x86 widths' vectors: W bits, pix set by SET1 (W 256: _mm256_set1_epi64x; 512: _mm512_set1_epi64). */
#define PK_GG_X86(W, SET1)                                                                          \
    typedef __m##W pk_ggf;                                                                          \
    typedef __m##W##d pk_ggd;                                                                       \
    typedef __m##W##i pk_ggp;                                                                       \
    enum { PK_GG_LF = W / 32, PK_GG_LD = W / 64 };                                                  \
    static inline pk_ggp pk_gg_pix(int64_t pix) { return SET1(pix); }                              \
    static inline pk_ggf pk_gg_zf(void) { return _mm##W##_setzero_ps(); }                          \
    static inline pk_ggd pk_gg_zd(void) { return _mm##W##_setzero_pd(); }                          \
    static inline void pk_gg_stf(float* y, pk_ggf v) { _mm##W##_storeu_ps(y, v); }                 \
    static inline void pk_gg_std(double* y, pk_ggd v) { _mm##W##_storeu_pd(y, v); }
#endif
#if PK_SIMD && PK_SIMD_BYTES >= 64
PK_GG_X86(512, _mm512_set1_epi64)
static inline __mmask8 pk_gg_eq(const int64_t* idx, pk_ggp p)
{
    return _mm512_cmpeq_epi64_mask(_mm512_loadu_si512((const void*)idx), p);
}
static inline pk_ggf pk_gg_addf(pk_ggf a, const float* g, const int64_t* idx, pk_ggp p)
{
    __mmask16 m = _mm512_kunpackb((__mmask16)pk_gg_eq(idx + 8, p), (__mmask16)pk_gg_eq(idx, p));
    return _mm512_mask_add_ps(a, m, a, _mm512_loadu_ps(g));
}
static inline pk_ggd pk_gg_addd(pk_ggd a, const double* g, const int64_t* idx, pk_ggp p)
{
    return _mm512_mask_add_pd(a, pk_gg_eq(idx, p), a, _mm512_loadu_pd(g));
}
#elif PK_SIMD && PK_SIMD_BYTES >= 32
PK_GG_X86(256, _mm256_set1_epi64x)
static inline __m256i pk_gg_eq(const int64_t* idx, pk_ggp p)
{
    return _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i*)idx), p);
}
static inline pk_ggf pk_gg_addf(pk_ggf a, const float* g, const int64_t* idx, pk_ggp p)
{
    /* the two compares' low halves, [c0 c1 c4 c5 | c2 c3 c6 c7] in-lane, then in order */
    __m256 m = _mm256_shuffle_ps(_mm256_castsi256_ps(pk_gg_eq(idx, p)), _mm256_castsi256_ps(pk_gg_eq(idx + 4, p)),
                                 0x88);
    m = _mm256_castsi256_ps(_mm256_permute4x64_epi64(_mm256_castps_si256(m), 0xD8));
    return _mm256_add_ps(a, _mm256_and_ps(_mm256_loadu_ps(g), m));
}
static inline pk_ggd pk_gg_addd(pk_ggd a, const double* g, const int64_t* idx, pk_ggp p)
{
    return _mm256_add_pd(a, _mm256_and_pd(_mm256_loadu_pd(g), _mm256_castsi256_pd(pk_gg_eq(idx, p))));
}
#elif PK_SIMD
typedef float pk_ggf __attribute__((vector_size(16)));
typedef double pk_ggd __attribute__((vector_size(16)));
typedef int64_t pk_ggp __attribute__((vector_size(16)));
typedef int32_t pk_ggm __attribute__((vector_size(16)));
enum { PK_GG_LF = 4, PK_GG_LD = 2 };
static inline pk_ggp pk_gg_pix(int64_t pix) { return (pk_ggp){pix, pix}; }
static inline pk_ggf pk_gg_zf(void) { return (pk_ggf){0, 0, 0, 0}; }
static inline pk_ggd pk_gg_zd(void) { return (pk_ggd){0, 0}; }
static inline void pk_gg_stf(float* y, pk_ggf v) { memcpy(y, &v, sizeof v); }
static inline void pk_gg_std(double* y, pk_ggd v) { memcpy(y, &v, sizeof v); }
static inline pk_ggp pk_gg_eq(const int64_t* idx, pk_ggp p)
{
    pk_ggp v;
    memcpy(&v, idx, sizeof v);
    return (pk_ggp)(v == p);
}
static inline pk_ggf pk_gg_addf(pk_ggf a, const float* g, const int64_t* idx, pk_ggp p)
{
    pk_ggm m, v;
#if defined(__SSE4_1__)
    m = (pk_ggm)_mm_shuffle_ps((__m128)pk_gg_eq(idx, p), (__m128)pk_gg_eq(idx + 2, p), 0x88);
#elif defined(__clang__)
    m = __builtin_shufflevector((pk_ggm)pk_gg_eq(idx, p), (pk_ggm)pk_gg_eq(idx + 2, p), 0, 2, 4, 6);
#else
    m = __builtin_shuffle((pk_ggm)pk_gg_eq(idx, p), (pk_ggm)pk_gg_eq(idx + 2, p), (pk_ggm){0, 2, 4, 6});
#endif
    memcpy(&v, g, sizeof v);
    return a + (pk_ggf)(v & m);
}
static inline pk_ggd pk_gg_addd(pk_ggd a, const double* g, const int64_t* idx, pk_ggp p)
{
    pk_ggp v;
    memcpy(&v, g, sizeof v);
    return a + (pk_ggd)(v & pk_gg_eq(idx, p));
}
#endif

#undef PK_GG_X86

/* The vector builds' loops over channels [c, C): blocks of four vectors, then one vector at a time. */
#if PK_SIMD
#define PK_GRAD_GATHER_VEC(T, L, ZERO, ADD, STORE)                                                  \
    pk_ggp p = pk_gg_pix(pix);                                                                      \
    for (; c + 4 * L <= C; c += 4 * L) {                                                            \
        __typeof__(ZERO()) a0 = ZERO(), a1 = a0, a2 = a0, a3 = a0;                                 \
        for (int k = 0; k < n; k++) {                                                               \
            const T* gk = g + off[k] + c;                                                           \
            const int64_t* ik = idx + off[k] + c;                                                   \
            a0 = ADD(a0, gk, ik, p);                                                                \
            a1 = ADD(a1, gk + L, ik + L, p);                                                        \
            a2 = ADD(a2, gk + 2 * L, ik + 2 * L, p);                                                \
            a3 = ADD(a3, gk + 3 * L, ik + 3 * L, p);                                                \
        }                                                                                           \
        STORE(y + c, a0);                                                                           \
        STORE(y + c + L, a1);                                                                       \
        STORE(y + c + 2 * L, a2);                                                                   \
        STORE(y + c + 3 * L, a3);                                                                   \
    }                                                                                               \
    for (; c + L <= C; c += L) {                                                                    \
        __typeof__(ZERO()) a = ZERO();                                                              \
        for (int k = 0; k < n; k++)                                                                 \
            a = ADD(a, g + off[k] + c, idx + off[k] + c, p);                                        \
        STORE(y + c, a);                                                                            \
    }
#else
#define PK_GRAD_GATHER_VEC(T, L, ZERO, ADD, STORE)
#endif

/* Then the channels left one at a time (the scalar build's whole loop). */
#define PK_GRAD_GATHER(NAME, T, L, ZERO, ADD, STORE)                                              \
static inline void NAME(T* PK_RESTRICT y, const T* PK_RESTRICT g, const int64_t* PK_RESTRICT idx,   \
                        const ptrdiff_t* off, int n, int64_t pix, ptrdiff_t C)                      \
{                                                                                                   \
    ptrdiff_t c = 0;                                                                                \
    PK_GRAD_GATHER_VEC(T, L, ZERO, ADD, STORE)                                                      \
    for (; c < C; c++) {                                                                            \
        T a = 0;                                                                                    \
        for (int k = 0; k < n; k++)                                                                 \
            if (idx[off[k] + c] == pix)                                                             \
                a += g[off[k] + c];                                                                 \
        y[c] = a;                                                                                   \
    }                                                                                               \
}
PK_GRAD_GATHER(pk_grad_gather_f32, float, PK_GG_LF, pk_gg_zf, pk_gg_addf, pk_gg_stf)
PK_GRAD_GATHER(pk_grad_gather_f64, double, PK_GG_LD, pk_gg_zd, pk_gg_addd, pk_gg_std)
#undef PK_GRAD_GATHER
#undef PK_GRAD_GATHER_VEC

/* The room for the lists of pk_grad_row_f32 and pk_grad_row_f64: one of rows * n windows for each n in
 * 1..ncol (rows * ncol <= PK_GRAD_WINDOWS_MAX), so at most PK_GRAD_WINDOWS_MAX * (PK_GRAD_WINDOWS_MAX + 1)
 * / 2. */
#define PK_GRAD_LISTS (PK_GRAD_WINDOWS_MAX * (PK_GRAD_WINDOWS_MAX + 1) / 2)

/* A row of dx: W pixels of C channels at y, the first pixel's plane offset pix.  The rows of windows
 * over it start at element rowoff[r] of g and idx (r < rows, in window order); pixel w's windows
 * along a row are cn[w] of them (at most ncol), the first cw[w] elements into each row of windows.
 * A pixel's list of windows is each row's, then along the row (window order), and depends on cn[w]
 * alone once it starts at cw[w]: the lists are made once a row, and a pixel only picks one (finding
 * each pixel's windows and making its list took as many instructions as its sums on ResNet's stem,
 * docs/tuning.md#max_pool_grad-nhwc-gathered-from-the-windows). */
#define PK_GRAD_ROW(NAME, T, GATHER)                                                                \
static inline void NAME(T* PK_RESTRICT y, const T* g, const int64_t* idx, const ptrdiff_t* rowoff, int rows, \
                        const ptrdiff_t* cw, const unsigned char* cn, int ncol, ptrdiff_t W, int64_t pix, \
                        ptrdiff_t C)                                                                \
{                                                                                                   \
    ptrdiff_t lists[PK_GRAD_LISTS], *at[PK_GRAD_WINDOWS_MAX + 1], *l = lists;                       \
    at[0] = lists;                                                                                  \
    for (int n = 1; n <= ncol; n++) {                                                               \
        at[n] = l;                                                                                  \
        for (int r = 0; r < rows; r++)                                                              \
            for (int b = 0; b < n; b++)                                                             \
                *l++ = rowoff[r] + b * C;                                                           \
    }                                                                                               \
    for (ptrdiff_t w = 0; w < W; w++, y += C, pix++)                                                \
        GATHER(y, g + cw[w], idx + cw[w], at[cn[w]], rows * cn[w], pix, C);                         \
}
PK_GRAD_ROW(pk_grad_row_f32, float, pk_grad_gather_f32)
PK_GRAD_ROW(pk_grad_row_f64, double, pk_grad_gather_f64)
#undef PK_GRAD_ROW

#endif
