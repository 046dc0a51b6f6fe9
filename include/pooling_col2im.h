/* Col2Im as a gather, for a last axis of stride s > 1 (src/kernels/col2im.pxi calls it once per work
 * item; stride 1 goes to the scatter there).
 *
 * Each row of the image (its last axis) is computed once: the column rows whose blocks land on it
 * are its sources, visited in increasing kernel offset k, which is the order behaviour.md §4 adds a
 * pixel's terms in; up to four of them are added in one pass over the row, so a pixel is loaded and
 * stored once per four terms where a scatter loads and stores it once per term
 * (docs/tuning.md#col2im-gather).
 *
 * The positions w = r + s*t of one phase r take their terms from the kernel offsets kj with
 * kj*d - p = r (mod s), each from a contiguous run of blocks: block t - q for position t of the
 * phase.  So a row is s contiguous sums ("phase rows"), computed side by side in a stack buffer and
 * stored together, the image in order.
 *
 * Bits: every sum starts from +0 and adds its terms in k order, whatever the work item, the pass or
 * the chunk, so the result is the same for every n_threads.  A float sum that is already NaN keeps
 * its bits (pooling_add.h, pk_sum_keep_nan).  16-bit floats are widened exactly and summed in
 * float32, rounded once by the store. */
#ifndef POOLING_COL2IM_H
#define POOLING_COL2IM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pooling_add.h"
#include "pooling_half_conv.h"
#include "pooling_prefetch.h"
#include "pooling_simd.h"

enum {
    PK_COL_SRC_MAX = 64,       /* sources gathered at once (more: further passes over the row) */
    PK_COL_GRID_CHUNK = 16384, /* bytes of the stack buffer the phases of a chunk are summed in */
    PK_COL_RUN = 256,          /* positions of a phase summed at once, at least, outside grids */
    PK_COL_DIRECT_MIN = 16,    /* blocks a row, at least, for a tiled row copied straight to the image */
    PK_COL_BATCH_MIN = 64,     /* positions a copy of pk_col_tiles_batched, at least, in image-row order */
    PK_COL_MAX_AXES = 64
};

/* One call's geometry (filled by col2im.pxi), per plane: the columns x (K rows of L blocks) and the
 * image y (prod(image) elements).  The tables say, for a position of an axis, which kernel offsets
 * land there and from which block:
 *   axes before the last: position p of axis i takes the pairs pre[i][2*e], pre[i][2*e+1] for
 *     off[i][p] <= e < off[i][p+1], in increasing kappa: (kappa*kstep_i, b*xstep_i), the pair's
 *     share of the row index k and of the block index l;
 *   the last axis: phase r takes the pairs (kj, q) last[2*e], last[2*e+1] for
 *     loff[r] <= e < loff[r+1], in increasing kj: position t of the phase is kj's block t - q. */
typedef struct {
    ptrdiff_t n, L, K;              /* spatial axes, blocks, kernel offsets (a plane is K*L values) */
    const ptrdiff_t* image;         /* image_shape */
    ptrdiff_t step, nbl;            /* the last axis' stride and blocks */
    const ptrdiff_t* const* off;    /* n - 1 tables of image[i] + 1 entries */
    const ptrdiff_t* const* pre;
    const ptrdiff_t* loff;          /* lph + 1 entries */
    const ptrdiff_t* last;
    ptrdiff_t maxcomb;              /* the most prefixes landing on one row: kx's length */
    /* Grids (the last two axes summed as one flat run per source, docs/tuning.md#col2im-gather):
     * whether they serve this call, and the axis before the last as phases, like the last. */
    int grid;
    int tiled;                      /* blocks tile the grid, or leave gaps: pk_col_tiles */
    ptrdiff_t tph, tpw;             /* ... and its two axes' begin pads */
    ptrdiff_t tkh, tkw;             /* ... and blocks (at most the strides; a gap's positions are 0) */
    ptrdiff_t hstep, nbh;
    ptrdiff_t lph, hph;             /* phases with positions in the image: min(stride, size) */
    const ptrdiff_t* hoff;          /* hph + 1 entries */
    const ptrdiff_t* hlast;         /* pairs (ki*block[last], qh) */
    int regs;                       /* grids of stride 2-4 summed in registers: pk_col_regs (which
                                     * does not need p->grid) */
    const char* xlo;                /* the call's columns, every plane: [xlo, xhi) may be read */
    const char* xhi;
} pk_col_plan;

/* A batch of sources of one phase row: source j adds src[j][t - lo[j]] to acc[t], lo[j] <= t < hi[j]
 * (in accumulator units: a complex value is two). */
typedef void (*pk_col_gather_fn)(void* acc, const void* const* src, const ptrdiff_t* lo,
                                 const ptrdiff_t* hi, int m, ptrdiff_t ahead);
/* The phases r0 <= r < r1 of positions c0 <= t < c1 (acc[(r - r0)*ld + t - c0]) stored at their
 * places w = r + s*t in [w0, w1) of y (y[w - w0]), rounded to the storage type. */
typedef void (*pk_col_store_fn)(void* y, const void* acc, ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t ld,
                                ptrdiff_t s, ptrdiff_t c0, ptrdiff_t c1, ptrdiff_t w0, ptrdiff_t w1);
/* Two phase rows a and b stored interleaved, stride 2. */
typedef void (*pk_col_pair_fn)(void* y, const void* a, const void* b, ptrdiff_t n0, ptrdiff_t n1);
/* acc[t*step] += src[t*step], t < n (accumulator units): a column of a grid. */
typedef void (*pk_col_column_fn)(void* acc, const void* src, ptrdiff_t n, ptrdiff_t step);
/* y[s*t + r] = x[r*ld + t] as a sum of that one term (0 + x: -0.0 gives +0.0) for r < k, +0 for
 * k <= r < s (a gap between blocks), t < n. */
typedef void (*pk_col_copy_fn)(void* y, const void* x, ptrdiff_t ld, ptrdiff_t k, ptrdiff_t s, ptrdiff_t n);

typedef struct {
    pk_col_gather_fn gather;
    pk_col_store_fn store;
    pk_col_pair_fn pair;
    pk_col_column_fn column;
    pk_col_copy_fn copy;
    int size;               /* bytes of an element */
    int acc_size;           /* bytes of its accumulator (a complex value: two of them) */
    int width;              /* accumulator units per element: 2 for complex, else 1 */
} pk_col_ops;

/* A fused run in slices of PK_COL_SLICE bytes of each source, each slice asking for the same bytes
 * of the next plane (`ahead` bytes on; 0: one slice, no prefetch): spread over the run, the
 * prefetches keep a few lines in flight per source instead of a burst per plane.  The body loops
 * over [t0_, t1_). */
#define PK_COL_SLICE 256
/* to L2: one plane ahead may be more than L1 holds beside the plane being summed */
#if defined(__GNUC__) || defined(__clang__)
#define PK_COL_PF(p) __builtin_prefetch((p), 0, 2)
#else
#define PK_COL_PF(p) ((void)(p))
#endif
static inline void pk_col_ahead(const void* a, const void* b, const void* c, const void* d,
                                ptrdiff_t bytes, ptrdiff_t ahead)
{
    for (ptrdiff_t i = 0; i < bytes; i += 64) {
        PK_COL_PF((const char*)a + ahead + i);
        if (b)
            PK_COL_PF((const char*)b + ahead + i);
        if (c)
            PK_COL_PF((const char*)c + ahead + i);
        if (d)
            PK_COL_PF((const char*)d + ahead + i);
    }
}
#define PK_COL_SLICES(n, ahead, a, b, c, d)                                                         \
    for (ptrdiff_t t0_ = 0, t1_, s_ = (ahead) ? PK_COL_SLICE / (ptrdiff_t)sizeof *(a) : (n);        \
         t0_ < (n); t0_ = t1_)                                                                      \
        if ((t1_ = t0_ + s_ < (n) ? t0_ + s_ : (n)),                                                \
            (ahead) ? pk_col_ahead((a) + t0_, (b) ? (b) + t0_ : 0, (c) ? (c) + t0_ : 0,             \
                                   (d) ? (d) + t0_ : 0, (t1_ - t0_) * (ptrdiff_t)sizeof *(a),       \
                                   (ahead)) : (void)0, 1)

/* The vector steps a run of the gather takes before its loop by value (n sources a..d, n a
 * constant): none where the compiler vectorises that loop itself; float16 with F16C, eight terms a
 * step widened in hardware, which GCC does not vectorise (it leaves one vcvtph2ps a value), and the
 * software widening cost as much as the sums (docs/tuning.md#col2im-gather); on aarch64 the same,
 * four terms a step (FCVTL). */
#define PK_COL_NOVEC(y, t, t1, n, a, b, c, d) ((void)0)
#if PK_F16C
#define PK_COL_F16V 1
enum { PK_COL_F16_STEP = 8 };
typedef __m256 pk_col_f16v;
static inline __m256 pk_col_f16v_ld(const float* p) { return _mm256_loadu_ps(p); }
static inline void pk_col_f16v_st(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
static inline __m256 pk_col_f16v_add(__m256 v, const uint16_t* p)
{
    __m256 x = pk_f16x8_to_f32(p);  /* pk_sum_keep_nan, a lane each */
    return _mm256_add_ps(v, _mm256_and_ps(x, _mm256_cmp_ps(v, v, _CMP_EQ_OQ)));
}
#elif defined(__aarch64__) && defined(__GNUC__)
#define PK_COL_F16V 1
enum { PK_COL_F16_STEP = 4 };
typedef float32x4_t pk_col_f16v;
static inline float32x4_t pk_col_f16v_ld(const float* p) { return vld1q_f32(p); }
static inline void pk_col_f16v_st(float* p, float32x4_t v) { vst1q_f32(p, v); }
static inline float32x4_t pk_col_f16v_add(float32x4_t v, const uint16_t* p)
{
    float32x4_t x = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
    return vaddq_f32(v, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(x), vceqq_f32(v, v))));
}
#endif
#if defined(PK_COL_F16V)
#define PK_COL_F16C(y, t, t1, n, a, b, c, d)                                                        \
    for (; (t) + PK_COL_F16_STEP <= (t1); (t) += PK_COL_F16_STEP) {                                 \
        pk_col_f16v v_ = pk_col_f16v_add(pk_col_f16v_ld((y) + (t)), (a) + (t));                     \
        if ((n) > 1)                                                                                \
            v_ = pk_col_f16v_add(v_, (b) + (t));                                                    \
        if ((n) > 2)                                                                                \
            v_ = pk_col_f16v_add(v_, (c) + (t));                                                    \
        if ((n) > 3)                                                                                \
            v_ = pk_col_f16v_add(v_, (d) + (t));                                                    \
        pk_col_f16v_st((y) + (t), v_);                                                              \
    }
#else
#define PK_COL_F16C PK_COL_NOVEC
#endif

/* float32 vectors of PK_COL_VL values (pk_col_regs) */
#if PK_SIMD
#if PK_SIMD_BYTES >= 32
typedef pk_f32x8 pk_colv;
typedef pk_i32x8 pk_colm;
#define PK_COL_IOTA {0, 1, 2, 3, 4, 5, 6, 7}
#else
typedef pk_f32x4 pk_colv;
typedef pk_i32x4 pk_colm;
#define PK_COL_IOTA {0, 1, 2, 3}
#endif
enum { PK_COL_VL = sizeof(pk_colv) / sizeof(float) };
static PK_ALWAYS_INLINE pk_colv pk_colv_ld(const float* p)
{
    pk_colv v;
    memcpy(&v, p, sizeof v);
    return v;
}
#if defined(__clang__)
#define PK_COL_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define PK_COL_SHUF(a, b, ...) __builtin_shuffle(a, b, (pk_colm){__VA_ARGS__})
#endif
#if PK_SIMD_BYTES >= 32
#define PK_COL_ZIP_LO(a, b) PK_COL_SHUF(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define PK_COL_ZIP_HI(a, b) PK_COL_SHUF(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
#if defined(__AVX512VL__) || !defined(__AVX2__)
/* three phases: a0 and a1 placed first, then a2 (two-source permutes: AVX-512's vpermt2ps) */
#define PK_COL_ZIP3_0(a0, a1, a2) PK_COL_SHUF(PK_COL_SHUF(a0, a1, 0, 8, 0, 1, 9, 0, 2, 10), a2, 0, 1, 8, 3, 4, 9, 6, 7)
#define PK_COL_ZIP3_1(a0, a1, a2) PK_COL_SHUF(PK_COL_SHUF(a0, a1, 0, 3, 11, 0, 4, 12, 0, 5), a2, 10, 1, 2, 11, 4, 5, 12, 7)
#define PK_COL_ZIP3_2(a0, a1, a2) PK_COL_SHUF(PK_COL_SHUF(a0, a1, 13, 0, 6, 14, 0, 7, 15, 0), a2, 0, 13, 2, 3, 14, 5, 6, 15)
#else
/* three phases on AVX2: each phase permuted once so that its values sit in the lanes they take in
 * all three outputs (lane 3i + r mod 8 for value i of phase r; the three outputs share the
 * permutes), then two blends per output: 3 vpermps and 6 vblendps, where the two-source shuffles
 * above took about 13 instructions */
#define PK_COL_ZIP3_P0(a) PK_COL_SHUF(a, a, 0, 3, 6, 1, 4, 7, 2, 5)
#define PK_COL_ZIP3_P1(a) PK_COL_SHUF(a, a, 5, 0, 3, 6, 1, 4, 7, 2)
#define PK_COL_ZIP3_P2(a) PK_COL_SHUF(a, a, 2, 5, 0, 3, 6, 1, 4, 7)
#define PK_COL_ZIP3_BLEND(a0, a1, a2, i, j)                                                         \
    PK_COL_SHUF(PK_COL_SHUF(PK_COL_ZIP3_P0(a0), PK_COL_ZIP3_P1(a1), PK_COL_ZIP3_LANES i), PK_COL_ZIP3_P2(a2), \
                PK_COL_ZIP3_LANES j)
#define PK_COL_ZIP3_LANES(...) __VA_ARGS__
#define PK_COL_ZIP3_0(a0, a1, a2) PK_COL_ZIP3_BLEND(a0, a1, a2, (0, 9, 2, 3, 12, 5, 6, 15), (0, 1, 10, 3, 4, 13, 6, 7))
#define PK_COL_ZIP3_1(a0, a1, a2) PK_COL_ZIP3_BLEND(a0, a1, a2, (0, 1, 10, 3, 4, 13, 6, 7), (8, 1, 2, 11, 4, 5, 14, 7))
#define PK_COL_ZIP3_2(a0, a1, a2) PK_COL_ZIP3_BLEND(a0, a1, a2, (8, 1, 2, 11, 4, 5, 14, 7), (0, 9, 2, 3, 12, 5, 6, 15))
#endif
#else
#define PK_COL_ZIP_LO(a, b) PK_COL_SHUF(a, b, 0, 4, 1, 5)
#define PK_COL_ZIP_HI(a, b) PK_COL_SHUF(a, b, 2, 6, 3, 7)
#define PK_COL_ZIP3_0(a0, a1, a2) PK_COL_SHUF(PK_COL_SHUF(a0, a1, 0, 4, 0, 1), a2, 0, 1, 4, 3)
#define PK_COL_ZIP3_1(a0, a1, a2) PK_COL_SHUF(PK_COL_SHUF(a0, a1, 5, 0, 2, 6), a2, 0, 5, 2, 3)
#define PK_COL_ZIP3_2(a0, a1, a2) PK_COL_SHUF(PK_COL_SHUF(a0, a1, 0, 3, 7, 0), a2, 6, 1, 2, 7)
#endif

/* The s phases a0..a3 of PK_COL_VL positions interleaved: s vectors at out. */
static PK_ALWAYS_INLINE void pk_col_reg_zip(const int s, pk_colv a0, pk_colv a1, pk_colv a2, pk_colv a3,
                                            float* out)
{
    pk_colv v0, v1, v2 = a2, v3 = a3;
    if (s == 2) {
        v0 = PK_COL_ZIP_LO(a0, a1);
        v1 = PK_COL_ZIP_HI(a0, a1);
    } else if (s == 3) {
        v0 = PK_COL_ZIP3_0(a0, a1, a2);
        v1 = PK_COL_ZIP3_1(a0, a1, a2);
        v2 = PK_COL_ZIP3_2(a0, a1, a2);
    } else {
        pk_colv lo = PK_COL_ZIP_LO(a0, a2), hi = PK_COL_ZIP_HI(a0, a2);
        pk_colv lo1 = PK_COL_ZIP_LO(a1, a3), hi1 = PK_COL_ZIP_HI(a1, a3);
        v0 = PK_COL_ZIP_LO(lo, lo1);
        v1 = PK_COL_ZIP_HI(lo, lo1);
        v2 = PK_COL_ZIP_LO(hi, hi1);
        v3 = PK_COL_ZIP_HI(hi, hi1);
    }
    memcpy(out, &v0, sizeof v0);
    memcpy(out + PK_COL_VL, &v1, sizeof v1);
    if (s > 2)
        memcpy(out + 2 * PK_COL_VL, &v2, sizeof v2);
    if (s > 3)
        memcpy(out + 3 * PK_COL_VL, &v3, sizeof v3);
}

/* y[s*t + r] = +0 + x[r*ld + t] for r < k (pk_col_one_f32: -0.0 becomes +0.0, a NaN keeps its
 * bits as the scalar add does), and +0 for k <= r < s, positions t < n in whole vectors, the last
 * step overlapping the one before it (storing the same values again) where n is not whole
 * vectors; returns how many positions it wrote (0 where n is shorter than a vector: those go
 * value by value).  The copies of float32 folds of strides 2-4 whose blocks tile the grid (k = s)
 * or leave gaps (k3 s4): the compiler left the scalar loop half scalar
 * (docs/tuning.md#col2im-gapped-folds). */
static PK_ALWAYS_INLINE ptrdiff_t pk_col_gap_f32v(float* PK_RESTRICT y, const float* PK_RESTRICT x, ptrdiff_t ld,
                                                  ptrdiff_t n, const ptrdiff_t K, const ptrdiff_t S)
{
    const pk_colv zero = {0};
    ptrdiff_t t = 0;
    if (S < 2 || S > 4 || K < 1 || K > S || n < PK_COL_VL)
        return 0;
#define PK_COL_GAP_STEP(t)                                                                          \
    do {                                                                                            \
        pk_colv a0 = zero + pk_colv_ld(x + (t));                                                    \
        pk_colv a1 = K > 1 ? zero + pk_colv_ld(x + ld + (t)) : zero;                                \
        pk_colv a2 = K > 2 ? zero + pk_colv_ld(x + 2 * ld + (t)) : zero;                            \
        pk_colv a3 = K > 3 ? zero + pk_colv_ld(x + 3 * ld + (t)) : zero;                            \
        pk_col_reg_zip(S, a0, a1, a2, a3, y + S * (t));                                             \
    } while (0)
    for (; t + PK_COL_VL <= n; t += PK_COL_VL)
        PK_COL_GAP_STEP(t);
    if (t < n)
        PK_COL_GAP_STEP(n - PK_COL_VL);
#undef PK_COL_GAP_STEP
    return n;
}
#endif

/* The gather of one type: the sources in groups of up to four over the blocks they all have (one
 * load and store of acc per group), each source's other blocks alone, before the next group; a
 * pixel still gets its terms in source order, and each of its loops is one vectorised pass. */
#define PK_COL_GATHER(name, T, A, widen, add, vec)                                                  \
    static void name##_run(A* PK_RESTRICT y, const T* PK_RESTRICT x, ptrdiff_t n, ptrdiff_t ahead)  \
    {                                                                                               \
        const T* none = 0;                                                                          \
        PK_COL_SLICES(n, ahead, x, none, none, none) {                                              \
            ptrdiff_t t = t0_;                                                                      \
            vec(y, t, t1_, 1, x, none, none, none);                                                 \
            for (; t < t1_; t++)                                                                    \
                y[t] = add(y[t], widen(x[t]));                                                      \
        }                                                                                           \
    }                                                                                               \
    static void name##_run2(A* PK_RESTRICT y, const T* PK_RESTRICT a, const T* PK_RESTRICT b,       \
                            ptrdiff_t n, ptrdiff_t ahead)                                           \
    {                                                                                               \
        const T* none = 0;                                                                          \
        PK_COL_SLICES(n, ahead, a, b, none, none) {                                                \
            ptrdiff_t t = t0_;                                                                      \
            vec(y, t, t1_, 2, a, b, none, none);                                                    \
            for (; t < t1_; t++)                                                                    \
                y[t] = add(add(y[t], widen(a[t])), widen(b[t]));                                    \
        }                                                                                           \
    }                                                                                               \
    static void name##_run3(A* PK_RESTRICT y, const T* PK_RESTRICT a, const T* PK_RESTRICT b,       \
                            const T* PK_RESTRICT c, ptrdiff_t n, ptrdiff_t ahead)                   \
    {                                                                                               \
        const T* none = 0;                                                                          \
        PK_COL_SLICES(n, ahead, a, b, c, none) {                                                   \
            ptrdiff_t t = t0_;                                                                      \
            vec(y, t, t1_, 3, a, b, c, none);                                                       \
            for (; t < t1_; t++)                                                                    \
                y[t] = add(add(add(y[t], widen(a[t])), widen(b[t])), widen(c[t]));                  \
        }                                                                                           \
    }                                                                                               \
    static void name##_run4(A* PK_RESTRICT y, const T* PK_RESTRICT a, const T* PK_RESTRICT b,       \
                            const T* PK_RESTRICT c, const T* PK_RESTRICT d, ptrdiff_t n,            \
                            ptrdiff_t ahead)                                                        \
    {                                                                                               \
        PK_COL_SLICES(n, ahead, a, b, c, d) {                                                       \
            ptrdiff_t t = t0_;                                                                      \
            vec(y, t, t1_, 4, a, b, c, d);                                                          \
            for (; t < t1_; t++)                                                                    \
                y[t] = add(add(add(add(y[t], widen(a[t])), widen(b[t])), widen(c[t])),             \
                           widen(d[t]));                                                            \
        }                                                                                           \
    }                                                                                               \
    static PK_NOINLINE void name##_column(void* accv, const void* srcv, ptrdiff_t n, ptrdiff_t step) \
    {                                                                                               \
        A* acc = (A*)accv;                                                                          \
        const T* src = (const T*)srcv;                                                              \
        for (ptrdiff_t t = 0; t < n; t++)                                                           \
            acc[t * step] = add(acc[t * step], widen(src[t * step]));                               \
    }                                                                                               \
    static PK_NOINLINE void name(void* accv, const void* const* srcv, const ptrdiff_t* lo,          \
                                 const ptrdiff_t* hi, int m, ptrdiff_t ahead)                       \
    {                                                                                               \
        A* acc = (A*)accv;                                                                          \
        const T* const* src = (const T* const*)srcv;                                                \
        int j = 0;                                                                                  \
        while (j < m) {                                                                             \
            int g = m - j < 4 ? m - j : 4;                                                          \
            ptrdiff_t a = lo[j], b = hi[j];                                                         \
            for (int u = 1; u < g; u++) {                                                           \
                a = lo[j + u] > a ? lo[j + u] : a;                                                  \
                b = hi[j + u] < b ? hi[j + u] : b;                                                  \
            }                                                                                       \
            if (b - a < 8) /* little in common: one at a time */                                    \
                g = 1, a = lo[j], b = hi[j];                                                        \
            for (int u = j; u < j + g; u++) {                                                       \
                ptrdiff_t e = a < hi[u] ? a : hi[u];                                                \
                if (lo[u] < e)                                                                      \
                    name##_run(acc + lo[u], src[u], e - lo[u], 0);                                  \
                e = b > lo[u] ? b : lo[u];                                                          \
                if (e < hi[u])                                                                      \
                    name##_run(acc + e, src[u] + (e - lo[u]), hi[u] - e, 0);                        \
            }                                                                                       \
            const T* s0 = src[j] + (a - lo[j]);                                                     \
            switch (g) {                                                                            \
            case 1:                                                                                 \
                name##_run(acc + a, s0, b - a, ahead);                                              \
                break;                                                                              \
            case 2:                                                                                 \
                name##_run2(acc + a, s0, src[j + 1] + (a - lo[j + 1]), b - a, ahead);               \
                break;                                                                              \
            case 3:                                                                                 \
                name##_run3(acc + a, s0, src[j + 1] + (a - lo[j + 1]),                              \
                            src[j + 2] + (a - lo[j + 2]), b - a, ahead);                            \
                break;                                                                              \
            default:                                                                                \
                name##_run4(acc + a, s0, src[j + 1] + (a - lo[j + 1]),                              \
                            src[j + 2] + (a - lo[j + 2]), src[j + 3] + (a - lo[j + 3]), b - a,      \
                            ahead);                                                                 \
            }                                                                                       \
            j += g;                                                                                 \
        }                                                                                           \
    }

static inline float pk_col_f32(float v) { return v; }
static inline double pk_col_f64(double v) { return v; }
static inline uint8_t pk_col_or(uint8_t a, uint8_t b) { return (uint8_t)(a | b); }
#define PK_COL_WRAP(T) static inline T pk_col_add_##T(T a, T b) { return (T)(a + b); }
PK_COL_WRAP(uint8_t)
PK_COL_WRAP(uint16_t)
PK_COL_WRAP(uint32_t)
PK_COL_WRAP(uint64_t)
#define pk_col_id(v) (v)

PK_COL_GATHER(pk_col_gather_f32, float, float, pk_col_f32, pk_sum_keep_nan, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_f64, double, double, pk_col_f64, pk_sum_keep_nan_f64, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_f16, uint16_t, float, pk_f16_to_f32, pk_sum_keep_nan, PK_COL_F16C)
PK_COL_GATHER(pk_col_gather_bf16, uint16_t, float, pk_bf16_to_f32, pk_sum_keep_nan, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_bool, uint8_t, uint8_t, pk_col_id, pk_col_or, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_u8, uint8_t, uint8_t, pk_col_id, pk_col_add_uint8_t, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_u16, uint16_t, uint16_t, pk_col_id, pk_col_add_uint16_t, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_u32, uint32_t, uint32_t, pk_col_id, pk_col_add_uint32_t, PK_COL_NOVEC)
PK_COL_GATHER(pk_col_gather_u64, uint64_t, uint64_t, pk_col_id, pk_col_add_uint64_t, PK_COL_NOVEC)

/* The stores of a phase row: y[t*step] = acc[t], rounded for 16-bit floats.
 *
 * Where every phase of the store has its place in the row (the row's interior), the row is the
 * phases interleaved: name##_il, inlined with the count of phases a constant for strides 2, 3 and
 * 4, which the compiler vectorises as loads and shuffles (the loop over the phases inside, each
 * position's values written in order, had been scalar: 0.56 -> 0.27 ms on a 1-D fold of stride 2,
 * docs/tuning.md#col2im-gather).  The row's ends, and a store of some of the phases only, go value
 * by value. */
#define PK_COL_INTERLEAVE(name, T, A, conv)                                                         \
    static inline void name##_il(T* PK_RESTRICT y, const A* PK_RESTRICT a, ptrdiff_t ld,            \
                                 ptrdiff_t n, const ptrdiff_t S)                                    \
    {                                                                                               \
        for (ptrdiff_t t = 0; t < n; t++)                                                           \
            for (ptrdiff_t r = 0; r < S; r++)                                                       \
                y[S * t + r] = conv(a[r * ld + t]);                                                 \
    }                                                                                               \
    /* y[s*t + r] = conv(a[r*ld + t]), t < n, r < s: the strides 2, 3 and 4 each their own loop */  \
    static inline void name##_phases(T* PK_RESTRICT y, const A* PK_RESTRICT a, ptrdiff_t ld,        \
                                     ptrdiff_t s, ptrdiff_t n)                                      \
    {                                                                                               \
        switch (s) {                                                                                \
        case 2: name##_il(y, a, ld, n, 2); break;                                                   \
        case 3: name##_il(y, a, ld, n, 3); break;                                                   \
        case 4: name##_il(y, a, ld, n, 4); break;                                                   \
        default: name##_il(y, a, ld, n, s); break;                                                  \
        }                                                                                           \
    }
#define PK_COL_STORE(name, T, A, conv)                                                              \
    PK_COL_INTERLEAVE(name, T, A, conv)                                                             \
    /* positions [t0, t1) of phases [r0, r1), value by value, the image in order */                \
    static PK_NOINLINE void name##_values(T* PK_RESTRICT y, const A* PK_RESTRICT acc, ptrdiff_t r0, \
                                     ptrdiff_t r1, ptrdiff_t ld, ptrdiff_t s, ptrdiff_t c0,         \
                                     ptrdiff_t t0, ptrdiff_t t1, ptrdiff_t w0, ptrdiff_t w1)        \
    {                                                                                               \
        for (ptrdiff_t t = t0; t < t1; t++) {                                                       \
            ptrdiff_t ra = w0 - s * t > r0 ? w0 - s * t : r0;                                       \
            ptrdiff_t rb = w1 - s * t < r1 ? w1 - s * t : r1;                                       \
            for (ptrdiff_t r = ra; r < rb; r++)                                                     \
                y[s * t + r - w0] = conv(acc[(r - r0) * ld + t - c0]);                              \
        }                                                                                           \
    }                                                                                               \
    static PK_NOINLINE void name(void* yv, const void* accv, ptrdiff_t r0, ptrdiff_t r1,            \
                                 ptrdiff_t ld, ptrdiff_t s, ptrdiff_t c0, ptrdiff_t c1, ptrdiff_t w0, \
                                 ptrdiff_t w1)                                                      \
    {                                                                                               \
        T* PK_RESTRICT y = (T*)yv;                                                                  \
        const A* PK_RESTRICT acc = (const A*)accv;                                                  \
        /* the interior [ta, tb): every phase's place s*t + r inside [w0, w1) */                    \
        ptrdiff_t ta = c0, tb = c1;                                                                 \
        while (ta < tb && s * ta + r0 < w0)                                                         \
            ta++;                                                                                   \
        while (tb > ta && s * (tb - 1) + r1 > w1)                                                   \
            tb--;                                                                                   \
        if (r1 - r0 != s || ta == tb) {                                                             \
            name##_values(y, acc, r0, r1, ld, s, c0, c0, c1, w0, w1);                               \
            return;                                                                                 \
        }                                                                                           \
        name##_values(y, acc, r0, r1, ld, s, c0, c0, ta, w0, w1);                                   \
        name##_phases(y + s * ta + r0 - w0, acc + ta - c0, ld, s, tb - ta);                         \
        name##_values(y, acc, r0, r1, ld, s, c0, tb, c1, w0, w1);                                   \
    }                                                                                               \
    /* stride 2: the two phases a (n0 values) and b (n1 = n0 or n0 - 1) interleaved */             \
    static PK_NOINLINE void name##_pair(void* yv, const void* av, const void* bv, ptrdiff_t n0,    \
                                        ptrdiff_t n1)                                               \
    {                                                                                               \
        T* PK_RESTRICT y = (T*)yv;                                                                  \
        const A* PK_RESTRICT a = (const A*)av;                                                      \
        name##_il(y, a, (const A*)bv - a, n1, 2);                                                   \
        if (n0 > n1)                                                                                \
            y[2 * n1] = conv(a[n1]);                                                                \
    }

typedef struct { float v[2]; } pk_col_c64;
typedef struct { double v[2]; } pk_col_c128;
PK_COL_STORE(pk_col_store_f32, float, float, pk_col_id)
PK_COL_STORE(pk_col_store_f64, double, double, pk_col_id)
PK_COL_STORE(pk_col_store_c64, pk_col_c64, pk_col_c64, pk_col_id)
PK_COL_STORE(pk_col_store_c128, pk_col_c128, pk_col_c128, pk_col_id)
PK_COL_STORE(pk_col_store_u8, uint8_t, uint8_t, pk_col_id)
PK_COL_STORE(pk_col_store_u16, uint16_t, uint16_t, pk_col_id)
/* The 16-bit floats: the phase rows narrowed a register at a time (pk_f32_to_f16_run,
 * pk_f32_to_bf16_run) into a copy, which is then stored as uint16's (the conversion by value, inside
 * the interleave, cost as much as the sums: float16, and bfloat16 4.4x float32's store,
 * docs/tuning.md#col2im-16-bit-runs-and-narrowing).  The accumulators always lie in a buffer of
 * PK_COL_GRID_CHUNK bytes, so the copy's rows fit. */
#define PK_COL_STORE_NARROW(name, run)                                                              \
    static PK_NOINLINE void name(void* y, const void* acc, ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t ld, \
                                 ptrdiff_t s, ptrdiff_t c0, ptrdiff_t c1, ptrdiff_t w0, ptrdiff_t w1) \
    {                                                                                               \
        uint16_t tmp[PK_COL_GRID_CHUNK / sizeof(float)];                                            \
        for (ptrdiff_t r = 0; r < r1 - r0; r++)                                                     \
            run(tmp + r * ld, (const float*)acc + r * ld, c1 - c0);                                 \
        pk_col_store_u16(y, tmp, r0, r1, ld, s, c0, c1, w0, w1);                                    \
    }                                                                                               \
    static PK_NOINLINE void name##_pair(void* y, const void* a, const void* b, ptrdiff_t n0,       \
                                        ptrdiff_t n1)                                               \
    {                                                                                               \
        uint16_t tmp[PK_COL_GRID_CHUNK / sizeof(float)];                                            \
        ptrdiff_t ld = (const float*)b - (const float*)a;                                           \
        run(tmp, (const float*)a, n0);                                                              \
        run(tmp + ld, (const float*)b, n1);                                                         \
        pk_col_store_u16_pair(y, tmp, tmp + ld, n0, n1);                                            \
    }
#if PK_F16C || defined(__GNUC__)
PK_COL_STORE_NARROW(pk_col_store_f16, pk_f32_to_f16_run)
#else
PK_COL_STORE(pk_col_store_f16, uint16_t, float, pk_f32_to_f16)
#endif
#if defined(__AVX2__) || defined(__SSE4_1__) || defined(__GNUC__)  /* (clang-cl: no __GNUC__) */
PK_COL_STORE_NARROW(pk_col_store_bf16, pk_f32_to_bf16_run)
#else
PK_COL_STORE(pk_col_store_bf16, uint16_t, float, pk_f32_to_bf16)
#endif
#undef PK_COL_STORE_NARROW
PK_COL_STORE(pk_col_store_u32, uint32_t, uint32_t, pk_col_id)
PK_COL_STORE(pk_col_store_u64, uint64_t, uint64_t, pk_col_id)

/* The copies of a tiled fold (pk_col_tiles): the phases of x interleaved, as a store's
 * interior, each value the sum of its one term (`one`); with gaps (k < s), phases k..s-1 zero, the
 * strides 2-4 each their own loop (which the compiler vectorises as the tiled ones). */
#define PK_COL_COPY(name, T, one) PK_COL_COPY_VEC(name, T, one, PK_COL_NOGAPV)
/* vec(y, x, ld, n, K, S): the positions it wrote in whole vectors first (PK_COL_NOGAPV: none) */
#define PK_COL_NOGAPV(y, x, ld, n, K, S) 0
#define PK_COL_COPY_VEC(name, T, one, vec)                                                          \
    PK_COL_INTERLEAVE(name, T, T, one)                                                              \
    static PK_ALWAYS_INLINE void name##_gap(T* PK_RESTRICT y, const T* PK_RESTRICT x, ptrdiff_t ld, \
                                            ptrdiff_t n, const ptrdiff_t K, const ptrdiff_t S)      \
    {                                                                                               \
        T zero;                                                                                     \
        memset(&zero, 0, sizeof zero);                                                              \
        for (ptrdiff_t t = vec(y, x, ld, n, K, S); t < n; t++)                                      \
            for (ptrdiff_t r = 0; r < S; r++)                                                       \
                y[S * t + r] = r < K ? one(x[r * ld + t]) : zero;                                   \
    }                                                                                               \
    static PK_NOINLINE void name(void* yv, const void* xv, ptrdiff_t ld, ptrdiff_t k, ptrdiff_t s,  \
                                 ptrdiff_t n)                                                       \
    {                                                                                               \
        T* PK_RESTRICT y = (T*)yv;                                                                  \
        const T* PK_RESTRICT x = (const T*)xv;                                                      \
        ptrdiff_t t = 0;                                                                            \
        switch (k == s ? 0 : s * 4 + k) {                                                           \
        case 0: /* tiled: strides 2-4 in whole vectors first (vec), then by the phases */           \
            if (s == 2)                                                                             \
                t = vec(y, x, ld, n, 2, 2);                                                         \
            else if (s == 3)                                                                        \
                t = vec(y, x, ld, n, 3, 3);                                                         \
            else if (s == 4)                                                                        \
                t = vec(y, x, ld, n, 4, 4);                                                         \
            name##_phases(y + s * t, x + t, ld, s, n - t);                                          \
            break;                                                                                  \
        case 9: name##_gap(y, x, ld, n, 1, 2); break;                                               \
        case 13: name##_gap(y, x, ld, n, 1, 3); break;                                              \
        case 14: name##_gap(y, x, ld, n, 2, 3); break;                                              \
        case 17: name##_gap(y, x, ld, n, 1, 4); break;                                              \
        case 18: name##_gap(y, x, ld, n, 2, 4); break;                                              \
        case 19: name##_gap(y, x, ld, n, 3, 4); break;                                              \
        default: name##_gap(y, x, ld, n, k, s); break;                                              \
        }                                                                                           \
    }

static inline float pk_col_one_f32(float v) { return pk_sum_keep_nan(0.0f, v); }
static inline double pk_col_one_f64(double v) { return pk_sum_keep_nan_f64(0.0, v); }
static inline pk_col_c64 pk_col_one_c64(pk_col_c64 v)
{
    v.v[0] = pk_col_one_f32(v.v[0]);
    v.v[1] = pk_col_one_f32(v.v[1]);
    return v;
}
static inline pk_col_c128 pk_col_one_c128(pk_col_c128 v)
{
    v.v[0] = pk_col_one_f64(v.v[0]);
    v.v[1] = pk_col_one_f64(v.v[1]);
    return v;
}
static inline uint16_t pk_col_one_f16(uint16_t v) { return pk_f32_to_f16(pk_col_one_f32(pk_f16_to_f32(v))); }
static inline uint16_t pk_col_one_bf16(uint16_t v) { return pk_f32_to_bf16(pk_col_one_f32(pk_bf16_to_f32(v))); }
#if PK_SIMD
PK_COL_COPY_VEC(pk_col_copy_f32, float, pk_col_one_f32, pk_col_gap_f32v)
#else
PK_COL_COPY(pk_col_copy_f32, float, pk_col_one_f32)
#endif
PK_COL_COPY(pk_col_copy_f64, double, pk_col_one_f64)
PK_COL_COPY(pk_col_copy_c64, pk_col_c64, pk_col_one_c64)
PK_COL_COPY(pk_col_copy_c128, pk_col_c128, pk_col_one_c128)
PK_COL_COPY(pk_col_copy_u16, uint16_t, pk_col_id)
#if PK_F16C
/* float16 with F16C: each phase's values made sums of one term eight a step (widened, 0 + v,
 * narrowed) into a copy, which is then interleaved as uint16's; by value, the conversions made the
 * tiled folds (k3 s3, k4 s4) slower than onnxruntime's.  A stride past the copy's room goes by value. */
PK_COL_COPY(pk_col_copy_f16_values, uint16_t, pk_col_one_f16)
static inline void pk_col_one_f16x8(uint16_t* y, const uint16_t* x)
{
    __m256 v = _mm256_add_ps(_mm256_setzero_ps(), pk_f16x8_to_f32(x));
    _mm_storeu_si128((__m128i*)y, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
static void pk_col_one_f16_run(uint16_t* PK_RESTRICT y, const uint16_t* PK_RESTRICT x, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        pk_col_one_f16x8(y + i, x + i);
    if (i < n && n >= 8)  /* the last eight again (tiled rows are often 9-15 values) */
        pk_col_one_f16x8(y + n - 8, x + n - 8);
    else
        for (; i < n; i++)
            y[i] = pk_col_one_f16(x[i]);
}
static PK_NOINLINE void pk_col_copy_f16(void* y, const void* x, ptrdiff_t ld, ptrdiff_t k, ptrdiff_t s,
                                        ptrdiff_t n)
{
    uint16_t tmp[PK_COL_GRID_CHUNK / sizeof(uint16_t)];
    ptrdiff_t chunk = (ptrdiff_t)(sizeof tmp / sizeof *tmp) / k;
    if (chunk < 8) {
        pk_col_copy_f16_values(y, x, ld, k, s, n);
        return;
    }
    for (ptrdiff_t c0 = 0; c0 < n; c0 += chunk) {
        ptrdiff_t m = n - c0 < chunk ? n - c0 : chunk;
        for (ptrdiff_t r = 0; r < k; r++)
            pk_col_one_f16_run(tmp + r * m, (const uint16_t*)x + r * ld + c0, m);
        pk_col_copy_u16((uint16_t*)y + s * c0, tmp, m, k, s, m);
    }
}
#else
PK_COL_COPY(pk_col_copy_f16, uint16_t, pk_col_one_f16)
#endif
PK_COL_COPY(pk_col_copy_bf16, uint16_t, pk_col_one_bf16)
PK_COL_COPY(pk_col_copy_u8, uint8_t, pk_col_id)  /* bool too: 0 | v is v */
PK_COL_COPY(pk_col_copy_u32, uint32_t, pk_col_id)
PK_COL_COPY(pk_col_copy_u64, uint64_t, pk_col_id)

/* The kinds (col2im.pxi's _col_kind): one per storage type of col_t, in its order, then the two
 * 16-bit floats, which the scatter runs as PK_COL_UINT16 with their inf_bits. */
enum {
    PK_COL_FLOAT, PK_COL_DOUBLE, PK_COL_CFLOAT, PK_COL_CDOUBLE, PK_COL_BOOL, PK_COL_UINT8,
    PK_COL_UINT16, PK_COL_UINT32, PK_COL_UINT64, PK_COL_F16, PK_COL_BF16, PK_COL_KINDS
};

static const pk_col_ops pk_col_kinds[PK_COL_KINDS] = {
    {pk_col_gather_f32, pk_col_store_f32, pk_col_store_f32_pair, pk_col_gather_f32_column, pk_col_copy_f32, 4, 4, 1},
    {pk_col_gather_f64, pk_col_store_f64, pk_col_store_f64_pair, pk_col_gather_f64_column, pk_col_copy_f64, 8, 8, 1},
    {pk_col_gather_f32, pk_col_store_c64, pk_col_store_c64_pair, pk_col_gather_f32_column, pk_col_copy_c64, 8, 4, 2},
    {pk_col_gather_f64, pk_col_store_c128, pk_col_store_c128_pair, pk_col_gather_f64_column, pk_col_copy_c128, 16, 8, 2},
    {pk_col_gather_bool, pk_col_store_u8, pk_col_store_u8_pair, pk_col_gather_bool_column, pk_col_copy_u8, 1, 1, 1},
    {pk_col_gather_u8, pk_col_store_u8, pk_col_store_u8_pair, pk_col_gather_u8_column, pk_col_copy_u8, 1, 1, 1},
    {pk_col_gather_u16, pk_col_store_u16, pk_col_store_u16_pair, pk_col_gather_u16_column, pk_col_copy_u16, 2, 2, 1},
    {pk_col_gather_u32, pk_col_store_u32, pk_col_store_u32_pair, pk_col_gather_u32_column, pk_col_copy_u32, 4, 4, 1},
    {pk_col_gather_u64, pk_col_store_u64, pk_col_store_u64_pair, pk_col_gather_u64_column, pk_col_copy_u64, 8, 8, 1},
    {pk_col_gather_f16, pk_col_store_f16, pk_col_store_f16_pair, pk_col_gather_f16_column, pk_col_copy_f16, 2, 4, 1},
    {pk_col_gather_bf16, pk_col_store_bf16, pk_col_store_bf16_pair, pk_col_gather_bf16_column, pk_col_copy_bf16, 2, 4, 1},
};

/* Accumulator bytes per element of a kind (the grid chunk must hold a row of them). */
static inline ptrdiff_t pk_col_unit(int kind)
{
    return (ptrdiff_t)pk_col_kinds[kind].acc_size * pk_col_kinds[kind].width;
}

/* The sources of one phase row, collected in k order and gathered PK_COL_SRC_MAX at a time. */
typedef struct {
    const pk_col_ops* ops;
    void* acc;
    const void* src[PK_COL_SRC_MAX];
    ptrdiff_t lo[PK_COL_SRC_MAX], hi[PK_COL_SRC_MAX];
    int m;
    ptrdiff_t ahead;  /* bytes from a source to the same source of the next plane, 0: none */
} pk_col_batch;

static inline void pk_col_flush(pk_col_batch* bt)
{
    if (bt->m)
        bt->ops->gather(bt->acc, bt->src, bt->lo, bt->hi, bt->m, bt->ahead);
    bt->m = 0;
}

/* One phase row's positions [t0, t1) (t0 at acc[0]): the sources of every kernel offset whose
 * prefix (the axes before the last) lands on this row, in k order.  kx: x at the prefix's k and l
 * for each of the ncomb prefixes, in increasing k. */
static void pk_col_phase(pk_col_batch* bt, const pk_col_plan* p, const char* const* kx, ptrdiff_t ncomb,
                         ptrdiff_t r, ptrdiff_t t0, ptrdiff_t t1)
{
    const pk_col_ops* ops = bt->ops;
    for (ptrdiff_t c = 0; c < ncomb; c++)
        for (ptrdiff_t e = p->loff[r]; e < p->loff[r + 1]; e++) {
            ptrdiff_t kj = p->last[2 * e], q = p->last[2 * e + 1];
            ptrdiff_t lo = q > t0 ? q : t0, hi = q + p->nbl < t1 ? q + p->nbl : t1;
            if (lo >= hi)
                continue;
            bt->src[bt->m] = kx[c] + ((ptrdiff_t)kj * p->L + (lo - q)) * ops->size;
            bt->lo[bt->m] = (lo - t0) * ops->width;
            bt->hi[bt->m] = (hi - t0) * ops->width;
            if (++bt->m == PK_COL_SRC_MAX)
                pk_col_flush(bt);
        }
    pk_col_flush(bt);
}

/* One row of the image, positions [w0, w1) of its last axis written at y; kx as above. */
static void pk_col_row(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx, ptrdiff_t ncomb,
                       char* y, ptrdiff_t w0, ptrdiff_t w1, ptrdiff_t ahead)
{
    /* (doubles: the alignment of every accumulator type) */
    double buf[PK_COL_GRID_CHUNK / sizeof(double)];
    pk_col_batch bt;
    ptrdiff_t s = p->step, unit = ops->acc_size * ops->width;
    bt.ops = ops;
    bt.m = 0;
    bt.ahead = ahead;
    if (ncomb == 0) {  /* no block lands on this row */
        memset(y, 0, (size_t)((w1 - w0) * ops->size));
        return;
    }
    /* Groups of phases side by side in buf, a chunk of at least PK_COL_RUN positions t each (runs
     * long enough to be worth a pass), stored together, so that each line of the image is written
     * once per group, not once per phase (docs/tuning.md#col2im-gather). */
    ptrdiff_t group = (ptrdiff_t)sizeof buf / (unit * PK_COL_RUN);
    group = group < 1 ? 1 : group > p->lph ? p->lph : group;
    ptrdiff_t chunk = (ptrdiff_t)sizeof buf / (group * unit), need = (w1 + s - 1) / s - w0 / s;
    chunk = chunk < need ? chunk : need;  /* a short row zeroes and stores its own positions only */
    for (ptrdiff_t r0 = 0; r0 < p->lph; r0 += group) {
        ptrdiff_t r1 = r0 + group < p->lph ? r0 + group : p->lph;
        for (ptrdiff_t c0 = w0 / s; c0 < (w1 + s - 1) / s; c0 += chunk) {
            ptrdiff_t c1 = c0 + chunk < (w1 + s - 1) / s ? c0 + chunk : (w1 + s - 1) / s;
            memset(buf, 0, (size_t)((r1 - r0) * chunk * unit));
            for (ptrdiff_t r = r0; r < r1; r++) {
                bt.acc = (char*)buf + (r - r0) * chunk * unit;
                pk_col_phase(&bt, p, kx, ncomb, r, c0, c1);
            }
            ops->store(y, buf, r0, r1, chunk, s, c0, c1, w0, w1);
        }
    }
}

/* The accumulator of one grid phase: rows [c0, c1) of th, nbw columns (the column's row stride). */
typedef struct {
    const pk_col_ops* ops;
    const pk_col_plan* p;
    char* acc;                      /* row c0's column 0 */
    ptrdiff_t c0, c1, lo, hi;       /* rows; columns [lo, hi) are fixed afterwards */
} pk_col_part;

/* Add one source (rows of blocks qh.. and columns qw.. of the kernel offset at x) to the part as one
 * flat run: at a row's end the run carries on into the next row, which puts the neighbour's blocks
 * on the columns outside [qw, qw + nbw); those columns are recomputed afterwards (pk_col_fix). */
static void pk_col_source(pk_col_batch* bt, pk_col_part* g, const char* x, ptrdiff_t qh, ptrdiff_t qw)
{
    const pk_col_plan* p = g->p;
    ptrdiff_t nbw = p->nbl, w = g->ops->width;
    ptrdiff_t ra = qh > g->c0 ? qh : g->c0, rb = qh + p->nbh < g->c1 ? qh + p->nbh : g->c1;
    ptrdiff_t ca = qw > 0 ? qw : 0, cb = qw + nbw < nbw ? qw + nbw : nbw;
    if (ra >= rb || ca >= cb)
        return;
    if (qw > g->lo)
        g->lo = qw;  /* (the columns [0, lo) and [hi, nbw) get a neighbour's blocks) */
    if (qw + nbw < g->hi)
        g->hi = qw + nbw;
    bt->src[bt->m] = x + ((ra - qh) * nbw + (ca - qw)) * g->ops->size;
    bt->lo[bt->m] = ((ra - g->c0) * nbw + ca) * w;
    bt->hi[bt->m] = ((rb - 1 - g->c0) * nbw + cb) * w;
    if (++bt->m == PK_COL_SRC_MAX)
        pk_col_flush(bt);
}

/* The sources of grid phase (rh, rw) for the outer prefixes kx, in k order, through fn. */
#define PK_COL_SOURCES(p, kx, ncomb, rh, rw, ops, fn)                                               \
    for (ptrdiff_t c_ = 0; c_ < (ncomb); c_++)                                                      \
        for (ptrdiff_t h_ = (p)->hoff[rh]; h_ < (p)->hoff[(rh) + 1]; h_++)                          \
            for (ptrdiff_t e_ = (p)->loff[rw]; e_ < (p)->loff[(rw) + 1]; e_++)                      \
                fn((kx)[c_] + ((p)->hlast[2 * h_] + (p)->last[2 * e_]) * (p)->L * (ops)->size,      \
                   (p)->hlast[2 * h_ + 1], (p)->last[2 * e_ + 1])

/* n elements of `unit` bytes, `stride` bytes apart, set to zero (every kind's zero is all-zero
 * bits); a fixed size per call of memset, which the compiler writes as one store. */
static void pk_col_zero_column(char* p, ptrdiff_t n, ptrdiff_t stride, ptrdiff_t unit)
{
    switch (unit) {
#define PK_COL_ZERO_CASE(u) case u: for (ptrdiff_t i = 0; i < n; i++) memset(p + i * stride, 0, u); break;
    PK_COL_ZERO_CASE(1)
    PK_COL_ZERO_CASE(2)
    PK_COL_ZERO_CASE(4)
    PK_COL_ZERO_CASE(8)
    default: PK_COL_ZERO_CASE(16)
#undef PK_COL_ZERO_CASE
    }
}

/* Columns [0, lo) and [hi, n) of the part, summed again one column at a time, in k order. */
static void pk_col_fix(pk_col_part* g, const char* const* kx, ptrdiff_t ncomb, ptrdiff_t rh,
                       ptrdiff_t rw, ptrdiff_t n)
{
    const pk_col_ops* ops = g->ops;
    const pk_col_plan* p = g->p;
    ptrdiff_t nbw = p->nbl, w = ops->width, unit = ops->acc_size;
    for (ptrdiff_t t = 0; t < n; t++) {
        if (t == g->lo && g->hi > t)
            t = g->hi;
        if (t >= n)
            break;
        char* col = g->acc + t * w * unit;
        pk_col_zero_column(col, g->c1 - g->c0, nbw * w * unit, w * unit);
#define PK_COL_FIX_ONE(x, qh, qw)                                                                   \
        do {                                                                                        \
            ptrdiff_t ra = (qh) > g->c0 ? (qh) : g->c0;                                             \
            ptrdiff_t rb = (qh) + p->nbh < g->c1 ? (qh) + p->nbh : g->c1;                           \
            if (ra < rb && (qw) <= t && t < (qw) + nbw)                                             \
                for (ptrdiff_t part = 0; part < w; part++)                                          \
                    ops->column(col + ((ra - g->c0) * nbw * w + part) * unit,                       \
                                (x) + ((ra - (qh)) * nbw + t - (qw)) * ops->size + part * unit,     \
                                rb - ra, nbw * w);                                                  \
        } while (0)
        PK_COL_SOURCES(p, kx, ncomb, rh, rw, ops, PK_COL_FIX_ONE);
#undef PK_COL_FIX_ONE
    }
}

/* n bytes from s to d (apart), inline: 32 bytes a move, the last move overlapping the one before,
 * shorter runs in two overlapping halves.  The rows of a tiled fold are 50-200 bytes: a library
 * call each (memcpy, memset) cost more than its copy (docs/tuning.md#col2im-gapped-folds). */
#if defined(__GNUC__) || defined(__clang__)
typedef unsigned char pk_col_b32 __attribute__((vector_size(32)));
typedef unsigned char pk_col_b16 __attribute__((vector_size(16)));
/* an empty barrier in the loops below: the compilers recognise a loop of moves as memcpy (memset)
 * and call the library for it again */
#define PK_COL_NOT_MEMCPY() __asm__ volatile("" ::: "memory")
#else
typedef struct { unsigned char b[32]; } pk_col_b32;
typedef struct { unsigned char b[16]; } pk_col_b16;
#define PK_COL_NOT_MEMCPY() ((void)0)
#endif
static PK_ALWAYS_INLINE void pk_col_move(char* PK_RESTRICT d, const char* PK_RESTRICT s, ptrdiff_t n)
{
#define PK_COL_MOVE(T, at)                                                                          \
    do {                                                                                            \
        T v_;                                                                                       \
        memcpy(&v_, s + (at), sizeof v_);                                                           \
        memcpy(d + (at), &v_, sizeof v_);                                                           \
    } while (0)
    if (n >= 32) {
        for (ptrdiff_t i = 0; i + 32 < n; i += 32) {
            PK_COL_MOVE(pk_col_b32, i);
            PK_COL_NOT_MEMCPY();
        }
        PK_COL_MOVE(pk_col_b32, n - 32);
    } else if (n >= 16) {
        PK_COL_MOVE(pk_col_b16, 0);
        PK_COL_MOVE(pk_col_b16, n - 16);
    } else if (n >= 8) {
        PK_COL_MOVE(uint64_t, 0);
        PK_COL_MOVE(uint64_t, n - 8);
    } else if (n >= 4) {
        PK_COL_MOVE(uint32_t, 0);
        PK_COL_MOVE(uint32_t, n - 4);
    } else {
        for (ptrdiff_t i = 0; i < n; i++) {
            d[i] = s[i];
            PK_COL_NOT_MEMCPY();
        }
    }
#undef PK_COL_MOVE
}

/* n bytes at d set to zero, as pk_col_move moves them */
static PK_ALWAYS_INLINE void pk_col_clear(char* d, ptrdiff_t n)
{
    pk_col_b32 z;
    memset(&z, 0, sizeof z);
    if (n >= 32) {
        for (ptrdiff_t i = 0; i + 32 < n; i += 32) {
            memcpy(d + i, &z, 32);
            PK_COL_NOT_MEMCPY();
        }
        memcpy(d + n - 32, &z, 32);
    } else if (n >= 16) {
        memcpy(d, &z, 16);
        memcpy(d + n - 16, &z, 16);
    } else if (n >= 8) {
        memcpy(d, &z, 8);
        memcpy(d + n - 8, &z, 8);
    } else if (n >= 4) {
        memcpy(d, &z, 4);
        memcpy(d + n - 4, &z, 4);
    } else {
        for (ptrdiff_t i = 0; i < n; i++) {
            d[i] = 0;
            PK_COL_NOT_MEMCPY();
        }
    }
}

/* A 1-D fold whose blocks tile the axis or leave gaps (p->tiled, block <= stride, no dilation), or
 * a row of a tiled grid: positions [w0, w1) written at y, position w the term of block (w + pad) / s,
 * kernel offset (w + pad) mod s; whole blocks straight from x, a block cut by the ends through a
 * buffer of one block (col2im.pxi checks it fits), positions past the blocks zero. */
static void pk_col_tiles_row(const pk_col_ops* ops, const pk_col_plan* p, const char* x, char* y,
                             ptrdiff_t w0, ptrdiff_t w1)
{
    double tmp[PK_COL_GRID_CHUNK / sizeof(double)];
    ptrdiff_t s = p->step, nb = p->nbl, size = ops->size, u = w0 + p->tpw, u1 = w1 + p->tpw;
    ptrdiff_t b0 = u / s, b1 = (u1 + s - 1) / s < nb ? (u1 + s - 1) / s : nb;
    if (u % s && b1 > b0 && (b1 - b0) * s * size <= (ptrdiff_t)sizeof tmp) {
        /* A first block the item's start cuts (a begin pad): every block it touches in one copy
         * through the buffer, rather than the cut block alone and then the others (a row of
         * k3 s4 p1 took three calls, docs/tuning.md#col2im-gapped-folds). */
        ptrdiff_t have = b1 * s - u < u1 - u ? b1 * s - u : u1 - u;
        ops->copy(tmp, x + b0 * size, p->L, p->tkw, s, b1 - b0);
        memcpy(y, (const char*)tmp + (u - b0 * s) * size, (size_t)(have * size));
        if (have < u1 - u)  /* past the blocks */
            memset(y + have * size, 0, (size_t)((u1 - u - have) * size));
        return;
    }
    while (u < u1) {
        ptrdiff_t b = u / s, r = u - b * s;
        if (b >= nb) {  /* past the blocks */
            memset(y, 0, (size_t)((u1 - u) * size));
            return;
        }
        ptrdiff_t whole = (u1 / s < nb ? u1 / s : nb) - b;  /* blocks from b wholly inside */
        if (r == 0 && whole > 0) {
            ops->copy(y, x + b * size, p->L, p->tkw, s, whole);
            y += whole * s * size;
            u += whole * s;
        } else {  /* a block the item's ends cut */
            ptrdiff_t take = s - r < u1 - u ? s - r : u1 - u;
            ops->copy(tmp, x + b * size, p->L, p->tkw, s, 1);
            memcpy(y, (const char*)tmp + r * size, (size_t)(take * size));
            y += take * size;
            u += take;
        }
    }
}

/* An image row of a tiled grid: `keep` values from `from` (NULL: none), then zeros to W. */
static PK_ALWAYS_INLINE void pk_col_tiles_put(char* yr, const char* from, ptrdiff_t keep, ptrdiff_t W,
                                              ptrdiff_t size)
{
    keep = from ? keep : 0;
    pk_col_move(yr, from, keep * size);
    if (keep < W)
        pk_col_clear(yr + keep * size, (W - keep) * size);
}

/* A grid whose blocks tile it or leave gaps (p->tiled: on the last two axes block <= stride, no
 * dilation): each pixel is one term or none, so row u of the blocks' own grid (u = h + the begin
 * pad) is the phases of kernel row u mod s of block row u / s interleaved, straight from x, without
 * the accumulator's zeroing and pass (MAE's unpatchify, k16 s16); a row or phase in a gap is zero
 * (k3 s4).  Long rows of whole blocks without a begin pad on the last axis are copied one at a
 * time into the image; the others (short rows, a begin pad, a last axis that is not whole strides)
 * go through a stack buffer: each kernel row of a chunk of block rows interleaved in one call
 * (their columns lie back to back in x), then the chunk's image rows taken from there in order: a
 * call per image row of a few blocks had cost more than its copy, and rows written kernel row by
 * kernel row (every s-th image row) ran slower than in order (docs/tuning.md#col2im-gapped-folds).
 * Positions past the blocks are zero. */
static PK_NOINLINE void pk_col_tiles_batched(const pk_col_ops* ops, const pk_col_plan* p, const char* x,
                                             char* y, ptrdiff_t h0, ptrdiff_t h1, ptrdiff_t most)
{
    double tmp[PK_COL_GRID_CHUNK / sizeof(double)];
    ptrdiff_t sh = p->hstep, sw = p->step, W = p->image[p->n - 1], nbw = p->nbl, size = ops->size;
    ptrdiff_t row = sw * nbw, kh = p->tkh, per = most / kh;  /* block rows a chunk of the buffer */
    /* an image row: the blocks' row from position tpw on, `keep` values, then zeros */
    ptrdiff_t keep = row - p->tpw < W ? row - p->tpw : W;
    keep = keep > 0 ? keep : 0;
    /* row h is kernel row r of block row c (u = h + tph = c*sh + r), counted on without a division
     * a row (docs/tuning.md#col2im-gapped-folds) */
    ptrdiff_t h = h0, c = (h0 + p->tph) / sh, r = h0 + p->tph - c * sh;
    if (per * nbw < PK_COL_BATCH_MIN && per < p->nbh) {
        /* few block rows fit the buffer with all their kernel rows (k16 s16): kernel row by kernel
         * row, many block rows a copy, each image row placed as its copy comes */
        for (ptrdiff_t ki = 0; ki < kh && keep; ki++) {
            ptrdiff_t a = h0 + p->tph - ki, b = h1 + p->tph - ki;  /* block rows with row ki in [h0, h1) */
            ptrdiff_t ca = a > 0 ? (a + sh - 1) / sh : 0, cb = b > 0 ? (b + sh - 1) / sh : 0;
            cb = cb < p->nbh ? cb : p->nbh;
            for (ptrdiff_t c0 = ca; c0 < cb; c0 += most) {
                ptrdiff_t m = cb - c0 < most ? cb - c0 : most;
                ops->copy(tmp, x + (ki * p->tkw * p->L + c0 * nbw) * size, p->L, p->tkw, sw, m * nbw);
                for (ptrdiff_t j = 0; j < m; j++)
                    pk_col_tiles_put(y + ((c0 + j) * sh + ki - p->tph) * W * size,
                                     (const char*)tmp + (j * row + p->tpw) * size, keep, W, size);
            }
        }
        /* then the rows in gaps between block rows, and past the blocks */
        for (; h < h1; h++, r = r + 1 < sh ? r + 1 : (c++, 0))
            if (c >= p->nbh || r >= kh || !keep)
                pk_col_clear(y + h * W * size, W * size);
        return;
    }
    while (h < h1 && c < p->nbh && keep) {
        /* the block rows [c, c + m) that reach [h, h1), each kernel row of them in one copy */
        ptrdiff_t m = (h1 - 1 + p->tph) / sh + 1 - c;
        m = m < per ? m : per;
        m = m < p->nbh - c ? m : p->nbh - c;
        for (ptrdiff_t ki = 0; ki < kh; ki++)
            ops->copy((char*)tmp + ki * m * row * size, x + (ki * p->tkw * p->L + c * nbw) * size,
                      p->L, p->tkw, sw, m * nbw);
        /* the image rows in order; a row in a gap between block rows (r >= kh) is zero */
        for (ptrdiff_t j = 0; j < m; j++, r = 0)
            for (; r < sh && h < h1; r++, h++) {
                const char* from = (const char*)tmp + ((r * m + j) * row + p->tpw) * size;
                pk_col_tiles_put(y + h * W * size, r < kh ? from : NULL, keep, W, size);
            }
        c += m;
    }
    if (h < h1)  /* past the blocks */
        memset(y + h * W * size, 0, (size_t)((h1 - h) * W * size));
}

/* Whether a tiled grid's rows are copied straight into the image: whole blocks, no begin pad on the
 * last axis, and rows of PK_COL_DIRECT_MIN blocks or more, or a stride the copy serves value by
 * value anyway (above 4).  The others go through pk_col_tiles_batched, where a kernel row of many
 * block rows is one copy: a short row alone was too short for the copy's vectors (k2 s2 and k4 s4
 * on 28x28: rows of 14 and 7 blocks); for k16 s16 the pass through the buffer saved nothing
 * (docs/tuning.md#col2im-gapped-folds). */
static inline int pk_col_tiles_direct(const pk_col_plan* p)
{
    return p->tpw == 0 && p->image[p->n - 1] == p->step * p->nbl
           && (p->nbl >= PK_COL_DIRECT_MIN || p->step > 4);
}

static void pk_col_tiles(const pk_col_ops* ops, const pk_col_plan* p, const char* x, char* y,
                         ptrdiff_t h0, ptrdiff_t h1)
{
    ptrdiff_t sh = p->hstep, sw = p->step, W = p->image[p->n - 1], nbw = p->nbl, size = ops->size;
    ptrdiff_t most = PK_COL_GRID_CHUNK / (sw * nbw * size);  /* block rows pk_col_tiles_batched holds */
    int direct = pk_col_tiles_direct(p);
    if (!direct && most >= 1) {
        pk_col_tiles_batched(ops, p, x, y, h0, h1, most);
        return;
    }
    for (ptrdiff_t h = h0, c = (h0 + p->tph) / sh, ki = h0 + p->tph - c * sh; h < h1;
         h++, ki = ki + 1 < sh ? ki + 1 : (c++, 0)) {  /* row h: kernel row ki of block row c */
        char* yr = y + h * W * size;
        const char* src = x + (ki * p->tkw * p->L + c * nbw) * size;
        if (c >= p->nbh || ki >= p->tkh)  /* past the blocks, or in a gap between them */
            memset(yr, 0, (size_t)(W * size));
        else if (direct)
            ops->copy(yr, src, p->L, p->tkw, sw, nbw);
        else
            pk_col_tiles_row(ops, p, src, yr, 0, W);
    }
}

/* Grids whose last axis has stride s = 2, 3 or 4, float32 and the 16-bit floats (float16 where the
 * build has F16C): each row of the image summed in float32 registers,
 * PK_COL_VL positions of all s phases at a time, two such steps a pass, from every source row, each
 * term masked to +0 outside its source's blocks; then the phases interleaved by shuffles and stored
 * once.  A row that is not whole vectors ends with a step that overlaps the one before (it stores
 * the same values again), its positions past the row stored on the rows after it where the work
 * item writes those next, else dropped; phases shorter than a vector (rows of at least one) are one
 * masked step a row.  The general grid sums each phase in
 * a buffer, source by source, sums again the columns its flat runs wrap onto and interleaves the
 * buffer afterwards: for phases of 14-28 positions that was most of its time, and it cannot serve
 * phases longer than a row of blocks (ceil(W / s) > blocks: k3 s2 without pads on an even width),
 * which went a row at a time through pk_col_row (docs/tuning.md#col2im-register-rows).  Terms in k
 * order from +0, added as pk_sum_keep_nan adds them, 16-bit terms widened exactly and the row
 * rounded once as it is stored: the bits are the general grid's.
 *
 * Masked lanes still read the columns next to a source's row; an image row whose reads would
 * leave the call's columns (an end row of the first or last plane, for some pads) goes through
 * pk_col_row instead. */
#if PK_SIMD

enum {
    PK_COL_REG_MAX = 16,    /* source rows per image row, kernel offsets per phase */
    PK_COL_REG_ROW = 2048   /* a 16-bit row's float32 sums, at most, before they are rounded */
};

/* Whether the register rows take float16: where it widens in hardware, F16C or aarch64's FCVTL (one
 * instruction a register, as bfloat16's shift).  Widened in software (pk_f16_to_f32 a register at a
 * time: ten operations for four terms) the rows were no faster than the general grid in the x86
 * baseline build (docs/tuning.md#col2im-float16-without-f16c). */
#if (PK_F16C && PK_SIMD_BYTES >= 32) || (defined(__aarch64__) && PK_SIMD_BYTES == 16)
#define PK_COL_F16_REGS 1
#else
#define PK_COL_F16_REGS 0
#endif

typedef uint16_t pk_col_hv __attribute__((vector_size(PK_COL_VL * 2)));
typedef uint32_t pk_col_uv __attribute__((vector_size(PK_COL_VL * 4)));

/* s + the PK_COL_VL terms at src of a kind, widened to float32 (exactly; float16 only where
 * PK_COL_F16_REGS), the lanes outside keep +0; with `nan`, a sum that is NaN keeps its bits
 * (pk_sum_keep_nan) */
static PK_ALWAYS_INLINE pk_colv pk_col_reg_add(const int kind, const int nan, pk_colv s, const char* src,
                                               pk_colm keep)
{
    pk_colv v;
    if (kind == PK_COL_BF16) {
        /* the 16 bits as a float32's top half (GCC widens a vector of 8 in two halves) */
#if PK_SIMD_BYTES >= 32 && defined(__AVX2__)
        __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)src)), 16);
        memcpy(&v, &w, sizeof v);
#elif PK_SIMD_BYTES < 32 && defined(__SSE2__)
        __m128i w = _mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64((const __m128i*)src));
        memcpy(&v, &w, sizeof v);
#else
        pk_col_hv h;
        memcpy(&h, src, sizeof h);
        v = (pk_colv)(__builtin_convertvector(h, pk_col_uv) << 16);
#endif
#if PK_F16C && PK_SIMD_BYTES >= 32
    } else if (kind == PK_COL_F16) {
        __m256 w = pk_f16x8_to_f32((const uint16_t*)src);
        memcpy(&v, &w, sizeof v);
#elif PK_COL_F16_REGS
    } else if (kind == PK_COL_F16) {
        float32x4_t w = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t*)src)));
        memcpy(&v, &w, sizeof v);
#endif
    } else {
        v = pk_colv_ld((const float*)src);
    }
    if (nan)
        keep &= (pk_colm)(s == s);
    return s + (pk_colv)((pk_colm)v & keep);
}

/* Whether a lane of v is NaN */
static PK_ALWAYS_INLINE int pk_colv_has_nan(pk_colv v)
{
#if PK_SIMD_BYTES >= 32 && defined(__AVX__)
    __m256 w;
    memcpy(&w, &v, sizeof w);
    return _mm256_movemask_ps(_mm256_cmp_ps(w, w, _CMP_UNORD_Q)) != 0;
#elif PK_SIMD_BYTES < 32 && defined(__SSE2__)
    __m128 w;
    memcpy(&w, &v, sizeof w);
    return _mm_movemask_ps(_mm_cmpunord_ps(w, w)) != 0;
#elif PK_SIMD_BYTES < 32 && defined(__aarch64__)
    float32x4_t w;
    memcpy(&w, &v, sizeof w);
    return vminvq_u32(vceqq_f32(w, w)) == 0;
#else
    pk_colm m = (pk_colm)(v != v);
    int r = 0;
    for (int i = 0; i < PK_COL_VL; i++)
        r |= m[i] != 0;
    return r;
#endif
}

/* The first n values of out (PK_COL_VL <= n < 4 * PK_COL_VL) stored at y: whole vectors, the last
 * one overlapping the one before (a row's last step; its values past the row are not its own).
 * memcpy of a count known only at run time was a library call on every row (k4 s3: 22 values).
 * Its own function: inlined, it changed the register allocation of the stride-2 rows, which never
 * take it (docs/tuning.md#col2im-register-rows). */
static PK_NOINLINE void pk_col_reg_cut(float* y, const float* out, ptrdiff_t n)
{
    pk_colv v;
    for (ptrdiff_t i = 0; i + PK_COL_VL < n; i += PK_COL_VL) {
        v = pk_colv_ld(out + i);
        memcpy(y + i, &v, sizeof v);
    }
    v = pk_colv_ld(out + n - PK_COL_VL);
    memcpy(y + n - PK_COL_VL, &v, sizeof v);
}

#define PK_COL_REG_PHASE(a, b, n, nan)                                                              \
        for (ptrdiff_t i_ = 0; i_ < (n); i_++, e++) {                                               \
            a = pk_col_reg_add(kind, nan, a, r + (off[e] + ta) * size, ka[e]);                      \
            if (two)                                                                                \
                b = pk_col_reg_add(kind, nan, b, r + (off[e] + tb) * size, kb[e]);                  \
        }
#define PK_COL_REG_SUMS(nan)                                                                        \
    for (ptrdiff_t j = 0; j < nr; j++) {                                                            \
        const char* r = rows[j];                                                                    \
        ptrdiff_t e = 0;                                                                            \
        PK_COL_REG_PHASE(a0, b0, n0, nan)                                                           \
        PK_COL_REG_PHASE(a1, b1, n1, nan)                                                           \
        if (s > 2)                                                                                  \
            PK_COL_REG_PHASE(a2, b2, n2, nan)                                                       \
        if (s > 3)                                                                                  \
            PK_COL_REG_PHASE(a3, b3, n3, nan)                                                       \
    }

/* pk_col_reg_step's sums with the NaN rule's mask, into v[0..7] (a0..a3, b0..b3): out of line, for
 * the steps where a sum ends NaN */
static PK_NOINLINE void pk_col_reg_sums_nan(const int kind, const int s, const int two, const char* const* rows,
                                            ptrdiff_t nr, const ptrdiff_t* off, const ptrdiff_t n0,
                                            const ptrdiff_t n1, const ptrdiff_t n2, const ptrdiff_t n3,
                                            const pk_colm* ka, const pk_colm* kb, ptrdiff_t ta, ptrdiff_t tb,
                                            pk_colv* v)
{
    pk_colv a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    const ptrdiff_t size = kind == PK_COL_FLOAT ? 4 : 2;
    PK_COL_REG_SUMS(1)
    v[0] = a0, v[1] = a1, v[2] = a2, v[3] = a3, v[4] = b0, v[5] = b1, v[6] = b2, v[7] = b3;
}

/* Positions [ta, ta + PK_COL_VL) of the s phases of an image row from its nr source rows (in k
 * order), and as many at tb if `two`: phase r's kernel offsets of the last axis are n_r terms of
 * off, after those of the phases before it, their masks at ka and kb.  The interleaved values go to
 * y + s*ta and y + s*tb; the row's last step (at `last`) stores its first `cut` values only
 * (all of them where cut is s * PK_COL_VL). */
static PK_ALWAYS_INLINE void pk_col_reg_step(const int kind, const int s, const int two, const char* const* rows,
                                             ptrdiff_t nr, const ptrdiff_t* off, const ptrdiff_t n0,
                                             const ptrdiff_t n1, const ptrdiff_t n2, const ptrdiff_t n3,
                                             const pk_colm* ka, const pk_colm* kb, ptrdiff_t ta, ptrdiff_t tb,
                                             ptrdiff_t last, ptrdiff_t cut, float* yr)
{
    pk_colv a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    float out[4 * PK_COL_VL];
    const ptrdiff_t size = kind == PK_COL_FLOAT ? 4 : 2;
    /* The sums without the NaN rule's mask: where no sum ends NaN, none was NaN on the way, and
     * the mask would have changed nothing.  Where one may (a NaN term, or infinities of both
     * signs: the test adds the sums up), the step is summed again with it
     * (docs/tuning.md#col2im-register-rows). */
    PK_COL_REG_SUMS(0)
    pk_colv all = a0 + a1;
    if (s > 2)
        all += a2;
    if (s > 3)
        all += a3;
    if (two) {
        all += b0 + b1;
        if (s > 2)
            all += b2;
        if (s > 3)
            all += b3;
    }
    if (__builtin_expect(pk_colv_has_nan(all), 0)) {
        pk_colv v[8];
        pk_col_reg_sums_nan(kind, s, two, rows, nr, off, n0, n1, n2, n3, ka, kb, ta, tb, v);
        a0 = v[0], a1 = v[1], a2 = v[2], a3 = v[3], b0 = v[4], b1 = v[5], b2 = v[6], b3 = v[7];
    }
    if (ta < last || cut == s * PK_COL_VL) {
        pk_col_reg_zip(s, a0, a1, a2, a3, yr + s * ta);
    } else {
        pk_col_reg_zip(s, a0, a1, a2, a3, out);
        pk_col_reg_cut(yr + s * ta, out, cut);
    }
    if (!two)
        return;
    if (tb < last || cut == s * PK_COL_VL) {
        pk_col_reg_zip(s, b0, b1, b2, b3, yr + s * tb);
    } else {
        pk_col_reg_zip(s, b0, b1, b2, b3, out);
        pk_col_reg_cut(yr + s * tb, out, cut);
    }
}

#undef PK_COL_REG_SUMS
#undef PK_COL_REG_PHASE

/* The positions t of the phases where every kernel offset of the last axis has its block t - q:
 * [*tlo, *thi). */
static inline void pk_col_reg_span(const pk_col_plan* p, ptrdiff_t* tlo, ptrdiff_t* thi)
{
    *tlo = 0;
    *thi = p->nbl;
    for (ptrdiff_t e = p->loff[0]; e < p->loff[p->lph]; e++) {
        ptrdiff_t q = p->last[2 * e + 1];
        *tlo = q > *tlo ? q : *tlo;
        *thi = q + p->nbl < *thi ? q + p->nbl : *thi;
    }
}

/* Rows [h0, h1) of the grids of np planes, the first at y, n0..n3 kernel offsets of the last axis
 * in its s phases; x: the first plane's columns; ahead: bytes to the next group's columns, asked for
 * a row's share at a time (0: none).  Each row's sources are found once for the group: where a call
 * has many small planes, that and each item's set-up were a large part of the work
 * (docs/tuning.md#col2im-plane-groups).  sums: room for a 16-bit row's float32 sums
 * (PK_COL_REG_ROW) and its last step's whole vectors.  Masked lanes may read anywhere in the call's
 * columns [p->xlo, p->xhi): only a row whose reads would leave them goes through pk_col_row (end
 * rows of the first or last plane, for some pads); where the plane's own bounds decided, those rows
 * of every plane went there (docs/tuning.md#col2im-register-rows). */
static PK_ALWAYS_INLINE void pk_col_regs_n(const int kind, const int s, const pk_col_ops* ops, const pk_col_plan* p,
                                           const char* const* kx, ptrdiff_t ncomb, char* y, ptrdiff_t h0,
                                           ptrdiff_t h1, const char* x, ptrdiff_t ahead, ptrdiff_t np,
                                           const ptrdiff_t n0, const ptrdiff_t n1, const ptrdiff_t n2,
                                           const ptrdiff_t n3, float* sums)
{
    ptrdiff_t W = p->image[p->n - 1], H = p->image[p->n - 2], tw = (W + s - 1) / s, nbw = p->nbl, L = p->L;
    ptrdiff_t e0 = p->loff[0], ne = p->loff[s] - e0, sh = p->hstep, tlo, thi, lo = 0, hi = 0, bw = 0;
    const ptrdiff_t size = kind == PK_COL_FLOAT ? 4 : 2;
    /* the last step's position: a phase shorter than a vector is one step, its lanes past the
     * phase's blocks masked (as any lane outside a source's blocks) */
    ptrdiff_t elems = p->K * L, plane = elems * size, last = tw > PK_COL_VL ? tw - PK_COL_VL : 0;
    ptrdiff_t group = np * plane, gy = H * W * size;  /* the group's columns; an image's bytes */
    ptrdiff_t per = ahead && p->n == 2 ? (group + H - 1) / H : 0;  /* of the next group, per row */
    ptrdiff_t cut = W - s * last, span = last + PK_COL_VL;  /* the values the row's last step stores;
                                                             * the positions a row's steps read */
    /* A row's last step stores its whole s * PK_COL_VL values where those past the row land on rows
     * of this call that are written after it (h < hwhole; 16-bit sums have the room), rather than
     * cut through a stack row (docs/tuning.md#col2im-register-rows). */
    ptrdiff_t hwhole = kind == PK_COL_FLOAT ? h1 - (s * span - 1) / W : h1;  /* the rows it reaches past h */
    ptrdiff_t off[4 * PK_COL_REG_MAX];
    pk_colm kf[4 * PK_COL_REG_MAX], kl[4 * PK_COL_REG_MAX], kall[4 * PK_COL_REG_MAX];
    const char* rows[PK_COL_REG_MAX];
    pk_col_reg_span(p, &tlo, &thi);
    for (ptrdiff_t e = 0; e < ne; e++) {
        ptrdiff_t q = p->last[2 * (e0 + e) + 1];
        pk_colm at0 = (pk_colm)PK_COL_IOTA - (int32_t)q, at1 = at0 + (int32_t)last;
        off[e] = p->last[2 * (e0 + e)] * L - q;
        bw = p->last[2 * (e0 + e)] + 1 > bw ? p->last[2 * (e0 + e)] + 1 : bw;  /* every kj lands on a phase */
        lo = e == 0 || off[e] < lo ? off[e] : lo;
        hi = e == 0 || off[e] > hi ? off[e] : hi;
        kall[e] = (pk_colm)PK_COL_IOTA >= 0;
        kf[e] = tlo > 0 || PK_COL_VL > thi ? (at0 >= 0) & (at0 < (int32_t)nbw) : kall[e];
        kl[e] = last < tlo || span > thi ? (at1 >= 0) & (at1 < (int32_t)nbw) : kall[e];
    }
    /* whether any row's reads may leave the call's columns: a source row starts at the plane's
     * start at the least, at the last row of blocks of the last kernel offset with kj = 0,
     * (K - bw) * L + L - nbw, at the most (only the end rows of the call's first or last plane) */
    int check = (x - p->xlo) + lo * size < 0
                || (p->xhi - x) - (np - 1) * plane < ((p->K - bw + 1) * L - nbw + hi + span) * size;
    ptrdiff_t stored = s > 2 && h0 < hwhole ? s * PK_COL_VL : cut, nbh = p->nbh;
    const ptrdiff_t *hoff = p->hoff, *hlast = p->hlast;
    for (ptrdiff_t h = h0, rh = h0 % sh, ta = h0 / sh; h < h1; h++, rh = rh + 1 < sh ? rh + 1 : (ta++, 0)) {
        char* yh = y + h * W * size;
        if (s > 2 && h == hwhole)  /* stride 2's rows as they were (their fold of 28 never cuts) */
            stored = cut;
        float* yr = kind == PK_COL_FLOAT ? (float*)yh : sums;
        ptrdiff_t nr = 0;
        for (ptrdiff_t c = 0; c < ncomb; c++)
            for (ptrdiff_t i = hoff[rh], iend = hoff[rh + 1]; i < iend; i++) {
                ptrdiff_t a = ta - hlast[2 * i + 1];
                if ((size_t)a < (size_t)nbh)
                    rows[nr++] = kx[c] + (hlast[2 * i] * L + a * nbw) * size;
            }
        for (ptrdiff_t b = h * per; b < (h + 1) * per && b < group; b += 64)
            PK_COL_PF(x + ahead + b);
        /* the row of each plane of the group: its sources the same places in the next plane's
         * columns (moved there, so that the steps' code is the single plane's) */
        for (ptrdiff_t g = 0; g < np; g++, yh += gy) {
            if (g) {
                for (ptrdiff_t j = 0; j < nr; j++)
                    rows[j] += plane;
                if (kind == PK_COL_FLOAT)
                    yr = (float*)yh;
            }
            /* rows in k order lie in increasing order in the plane (a row of k is L > a * nbw
             * values) */
            if (check && nr
                && ((rows[0] - p->xlo) + lo * size < 0 || (p->xhi - rows[nr - 1]) < (hi + span) * size)) {
                pk_col_row(ops, p, rows, nr, yh, 0, W, 0);  /* reads past the columns */
                continue;
            }
            /* two vectors a step, the last of them at `last`; one where a step's first would be.  A
             * row of one step takes it straight, at stride 4 only: with the branch in stride 3's code
             * too, its rows of two steps ran more instructions (register allocation,
             * docs/tuning.md#col2im-register-rows). */
            if (s == 4 && last == 0) {
                pk_col_reg_step(kind, s, 0, rows, nr, off, n0, n1, n2, n3, kf, kf, 0, 0, 0, stored, yr);
            } else for (ptrdiff_t t = 0;; t += 2 * PK_COL_VL) {
                ptrdiff_t t1 = t + PK_COL_VL < last ? t + PK_COL_VL : last;
                const pk_colm* k0 = t == 0 ? kf : kall;
                if (t >= last) {
                    pk_col_reg_step(kind, s, 0, rows, nr, off, n0, n1, n2, n3, t == 0 ? kf : kl, kl, last, last,
                                    last, stored, yr);
                    break;
                }
                pk_col_reg_step(kind, s, 1, rows, nr, off, n0, n1, n2, n3, k0, t1 == last ? kl : kall, t, t1, last,
                                stored, yr);
                if (t1 == last)
                    break;
            }
            if (kind == PK_COL_BF16)
                pk_f32_to_bf16_run((uint16_t*)yh, sums, W);
            else if (kind == PK_COL_F16)
                pk_f32_to_f16_run((uint16_t*)yh, sums, W);
        }
    }
}

/* Each stride its own code; float32's counts of the common kernels constant (k3 at stride 2: 1 and 2
 * or 2 and 1 offsets a phase; k4 and k5: 2 and 2, 3 and 2), others as they come. */
static PK_ALWAYS_INLINE void pk_col_regs_f32_n(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx,
                                               ptrdiff_t ncomb, char* y, ptrdiff_t h0, ptrdiff_t h1, const char* x,
                                               ptrdiff_t ahead, ptrdiff_t np)
{
    const ptrdiff_t* o = p->loff;
    ptrdiff_t n0 = o[1] - o[0], n1 = o[2] - o[1];
#define PK_COL_REGS(s, a, b, c, d) \
    pk_col_regs_n(PK_COL_FLOAT, s, ops, p, kx, ncomb, y, h0, h1, x, ahead, np, a, b, c, d, NULL)
    if (p->step == 3) {
        /* k4 and k5 (one or two offsets a phase) with their counts constant: the loops over a
         * phase's offsets unrolled (docs/tuning.md#col2im-register-rows) */
        switch (n0 > 2 || n1 > 2 || o[3] - o[2] > 2 ? 0 : n0 * 9 + n1 * 3 + (o[3] - o[2])) {
        case 9 + 3 + 2: PK_COL_REGS(3, 1, 1, 2, 0); break;
        case 9 + 6 + 1: PK_COL_REGS(3, 1, 2, 1, 0); break;
        case 18 + 3 + 1: PK_COL_REGS(3, 2, 1, 1, 0); break;
        case 9 + 6 + 2: PK_COL_REGS(3, 1, 2, 2, 0); break;
        case 18 + 3 + 2: PK_COL_REGS(3, 2, 1, 2, 0); break;
        case 18 + 6 + 1: PK_COL_REGS(3, 2, 2, 1, 0); break;
        default: PK_COL_REGS(3, n0, n1, o[3] - o[2], 0); break;
        }
    } else if (p->step == 4) {
        PK_COL_REGS(4, n0, n1, o[3] - o[2], o[4] - o[3]);
    } else if (n0 == 1 && n1 == 2) {
        PK_COL_REGS(2, 1, 2, 0, 0);
    } else if (n0 == 2 && n1 == 1) {
        PK_COL_REGS(2, 2, 1, 0, 0);
    } else if (n0 == 2 && n1 == 2) {
        PK_COL_REGS(2, 2, 2, 0, 0);
    } else if (n0 == 3 && n1 == 2) {
        PK_COL_REGS(2, 3, 2, 0, 0);
    } else if (n0 == 2 && n1 == 3) {
        PK_COL_REGS(2, 2, 3, 0, 0);
    } else {
        PK_COL_REGS(2, n0, n1, 0, 0);
    }
#undef PK_COL_REGS
}

/* A single plane's rows have their own code, without the group's loop: with it, they ran more
 * instructions (register allocation, docs/tuning.md#col2im-plane-groups). */
static void pk_col_regs_f32(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx, ptrdiff_t ncomb,
                            char* y, ptrdiff_t h0, ptrdiff_t h1, const char* x, ptrdiff_t ahead, ptrdiff_t np)
{
    if (np == 1)
        pk_col_regs_f32_n(ops, p, kx, ncomb, y, h0, h1, x, ahead, 1);
    else
        pk_col_regs_f32_n(ops, p, kx, ncomb, y, h0, h1, x, ahead, np);
}

#define PK_COL_REGS_HALF(name, kind)                                                                \
    static PK_ALWAYS_INLINE void name##_n(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx, \
                                          ptrdiff_t ncomb, char* y, ptrdiff_t h0, ptrdiff_t h1, const char* x, \
                                          ptrdiff_t ahead, ptrdiff_t np)                            \
    {                                                                                               \
        const ptrdiff_t* o = p->loff;                                                               \
        ptrdiff_t n0 = o[1] - o[0], n1 = o[2] - o[1];                                               \
        float sums[PK_COL_REG_ROW + 4 * PK_COL_VL]; /* a row's last step stores whole vectors */     \
        if (p->step == 3)                                                                           \
            pk_col_regs_n(kind, 3, ops, p, kx, ncomb, y, h0, h1, x, ahead, np, n0, n1, o[3] - o[2], 0, sums); \
        else if (p->step == 4)                                                                      \
            pk_col_regs_n(kind, 4, ops, p, kx, ncomb, y, h0, h1, x, ahead, np, n0, n1, o[3] - o[2], o[4] - o[3], \
                          sums);                                                                    \
        else if (n0 == 1 && n1 == 2) /* k3 s2 (VOLO's fold): its counts constant, as float32's */  \
            pk_col_regs_n(kind, 2, ops, p, kx, ncomb, y, h0, h1, x, ahead, np, 1, 2, 0, 0, sums);     \
        else if (n0 == 2 && n1 == 1)                                                                \
            pk_col_regs_n(kind, 2, ops, p, kx, ncomb, y, h0, h1, x, ahead, np, 2, 1, 0, 0, sums);     \
        else                                                                                        \
            pk_col_regs_n(kind, 2, ops, p, kx, ncomb, y, h0, h1, x, ahead, np, n0, n1, 0, 0, sums);     \
    }                                                                                               \
    static void name(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx, ptrdiff_t ncomb, \
                     char* y, ptrdiff_t h0, ptrdiff_t h1, const char* x, ptrdiff_t ahead, ptrdiff_t np) \
    {                                                                                               \
        if (np == 1)                                                                                \
            name##_n(ops, p, kx, ncomb, y, h0, h1, x, ahead, 1);                                    \
        else                                                                                        \
            name##_n(ops, p, kx, ncomb, y, h0, h1, x, ahead, np);                                   \
    }
PK_COL_REGS_HALF(pk_col_regs_bf16, PK_COL_BF16)
#if PK_COL_F16_REGS
PK_COL_REGS_HALF(pk_col_regs_f16, PK_COL_F16)
#endif
#undef PK_COL_REGS_HALF

static void pk_col_regs(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx, ptrdiff_t ncomb,
                        char* y, ptrdiff_t h0, ptrdiff_t h1, const char* x, ptrdiff_t ahead, ptrdiff_t np)
{
    if (ops == &pk_col_kinds[PK_COL_BF16])
        pk_col_regs_bf16(ops, p, kx, ncomb, y, h0, h1, x, ahead, np);
#if PK_COL_F16_REGS
    else if (ops == &pk_col_kinds[PK_COL_F16])
        pk_col_regs_f16(ops, p, kx, ncomb, y, h0, h1, x, ahead, np);
#endif
    else
        pk_col_regs_f32(ops, p, kx, ncomb, y, h0, h1, x, ahead, np);
}
#endif

/* acc[t] += x[t] widened to float32, t < n, a NaN sum keeping its bits (pk_sum_keep_nan): the
 * scatter's contiguous runs (a last axis of stride 1, col2im.pxi) of the 16-bit floats.  Value by
 * value, float16's widening in software and bfloat16's scalar loop cost several times float32's
 * instructions; here a register of terms a step as pk_col_reg_add widens them, then half a register
 * and the last few values one by one.  (The last register again at n - PK_COL_VL, blended, ran
 * slower: its load overlaps the store just before it, which the CPU cannot forward;
 * docs/tuning.md#col2im-16-bit-runs-and-narrowing.) */
#if PK_SIMD
static PK_ALWAYS_INLINE void pk_col_add_half(const int kind, float* PK_RESTRICT acc, const uint16_t* PK_RESTRICT x,
                                             ptrdiff_t n)
{
    const pk_colm all = (pk_colm)PK_COL_IOTA >= 0;
    ptrdiff_t t = 0;
    for (; t + PK_COL_VL <= n; t += PK_COL_VL) {
        pk_colv v = pk_col_reg_add(kind, 1, pk_colv_ld(acc + t), (const char*)(x + t), all);
        memcpy(acc + t, &v, sizeof v);
    }
#if PK_SIMD_BYTES >= 32 && PK_F16C
    if (t + 4 <= n) {
        __m128i h = _mm_loadl_epi64((const __m128i*)(x + t));
        __m128 w = kind == PK_COL_BF16 ? _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h)) : _mm_cvtph_ps(h);
        __m128 a = _mm_loadu_ps(acc + t);
        _mm_storeu_ps(acc + t, _mm_add_ps(a, _mm_and_ps(w, _mm_cmpeq_ps(a, a))));
        t += 4;
    }
    for (; t < n; t++)
        acc[t] = pk_sum_keep_nan(acc[t], kind == PK_COL_BF16 ? pk_bf16_to_f32(x[t]) : _cvtsh_ss(x[t]));
#else
    for (; t < n; t++)
        acc[t] = pk_sum_keep_nan(acc[t], kind == PK_COL_BF16 ? pk_bf16_to_f32(x[t]) : pk_f16_to_f32(x[t]));
#endif
}
#endif

static PK_NOINLINE void pk_col_add_bf16(float* PK_RESTRICT acc, const uint16_t* PK_RESTRICT x, ptrdiff_t n)
{
#if PK_SIMD
    pk_col_add_half(PK_COL_BF16, acc, x, n);
#else
    for (ptrdiff_t t = 0; t < n; t++)
        acc[t] = pk_sum_keep_nan(acc[t], pk_bf16_to_f32(x[t]));
#endif
}

static PK_NOINLINE void pk_col_add_f16(float* PK_RESTRICT acc, const uint16_t* PK_RESTRICT x, ptrdiff_t n)
{
#if PK_SIMD && PK_COL_F16_REGS
    pk_col_add_half(PK_COL_F16, acc, x, n);
#else
    for (ptrdiff_t t = 0; t < n; t++)
        acc[t] = pk_sum_keep_nan(acc[t], pk_f16_to_f32(x[t]));
#endif
}

/* Whether pk_col_regs serves a grid of this kind (col2im.pxi asks, once per call). */
static inline int pk_col_regs_fit(int kind, const pk_col_plan* p)
{
#if PK_SIMD
    ptrdiff_t s = p->step, W = p->image[p->n - 1], tw = (W + s - 1) / s, tlo, thi, most = 0;
    int half = kind == PK_COL_BF16 || (PK_COL_F16_REGS && kind == PK_COL_F16);
    if (!((kind == PK_COL_FLOAT || (half && W <= PK_COL_REG_ROW)) && p->n >= 2 && !p->tiled && s >= 2 && s <= 4
          && p->lph == s && W >= PK_COL_VL))
        return 0;
    /* phases shorter than a vector (one masked step a row) of blocks narrower than the stride (a
     * pixel one term or none) ran slower here than on the general grid or the copy
     * (docs/tuning.md#col2im-register-rows) */
    if (tw < PK_COL_VL && p->tkw < s)
        return 0;
    for (ptrdiff_t r = 0; r < s; r++)
        if (p->loff[r + 1] - p->loff[r] > PK_COL_REG_MAX)
            return 0;
    for (ptrdiff_t r = 0; r < p->hph; r++)
        most = p->hoff[r + 1] - p->hoff[r] > most ? p->hoff[r + 1] - p->hoff[r] : most;
    /* masks at the first and the last step only: every source has blocks at the vectors between */
    pk_col_reg_span(p, &tlo, &thi);
    ptrdiff_t mid = (tw - PK_COL_VL - 1) / PK_COL_VL * PK_COL_VL;  /* the last vector between */
    return p->maxcomb * most <= PK_COL_REG_MAX && (mid < PK_COL_VL || (tlo <= PK_COL_VL && mid + PK_COL_VL <= thi));
#else
    (void)kind, (void)p;
    return 0;
#endif
}

/* One grid (the last two axes) of the plane, rows [h0, h1) of its first axis, written at y (the
 * grid's row 0); kx: the prefixes of the axes before the grid landing on it. */
static void pk_col_grid(const pk_col_ops* ops, const pk_col_plan* p, const char* const* kx,
                        ptrdiff_t ncomb, char* y, ptrdiff_t h0, ptrdiff_t h1, const char* x, ptrdiff_t ahead)
{
    double buf[PK_COL_GRID_CHUNK / sizeof(double)];
    double rows[PK_COL_GRID_CHUNK / sizeof(double)];  /* a part's rows, stored (no wider than buf) */
    pk_col_batch bt;
    pk_col_part g;
    ptrdiff_t sh = p->hstep, sw = p->step, W = p->image[p->n - 1], nbw = p->nbl, size = ops->size;
    ptrdiff_t unit = ops->acc_size * ops->width, plane = 0;
    /* each phase of the last axis has its part of buf, p->lph of them */
    ptrdiff_t most = (ptrdiff_t)sizeof buf / (p->lph * nbw * unit);
    bt.ops = g.ops = ops;
    bt.m = 0;
    bt.ahead = ahead;
    g.p = p;
    if (ncomb == 0) {
        memset(y + h0 * W * size, 0, (size_t)((h1 - h0) * W * size));
        return;
    }
    if (p->tiled && ncomb == 1) {
        pk_col_tiles(ops, p, kx[0], y, h0, h1);
        return;
    }
#if PK_SIMD
    if (p->regs) {
        pk_col_regs(ops, p, kx, ncomb, y, h0, h1, x, ahead, 1);
        return;
    }
#endif
    for (ptrdiff_t rh = 0; rh < p->hph; rh++) {
        ptrdiff_t ta = h0 > rh ? (h0 - rh + sh - 1) / sh : 0, tb = h1 > rh ? (h1 - rh + sh - 1) / sh : 0;
        for (ptrdiff_t c0 = ta; c0 < tb; c0 += most) {
            g.c0 = c0;
            g.c1 = c0 + most < tb ? c0 + most : tb;
            plane = (g.c1 - g.c0) * nbw * unit;
            for (ptrdiff_t rw = 0; rw < p->lph; rw++) {
                ptrdiff_t tw = W > rw ? (W - rw + sw - 1) / sw : 0;  /* the phase's columns */
                g.acc = (char*)buf + rw * plane;
                g.lo = 0;
                g.hi = nbw;
                memset(g.acc, 0, (size_t)plane);
                bt.acc = g.acc;
#define PK_COL_ADD_ONE(x, qh, qw) pk_col_source(&bt, &g, x, qh, qw)
                PK_COL_SOURCES(p, kx, ncomb, rh, rw, ops, PK_COL_ADD_ONE);
#undef PK_COL_ADD_ONE
                pk_col_flush(&bt);
                pk_col_fix(&g, kx, ncomb, rh, rw, tw);
            }
            if (W == sw * nbw && p->lph == sw && nbw * size < 32) {
                /* phase rows shorter than a vector, and every row whole (W a multiple of the
                 * stride): the part's rows are one long run of the phases interleaved, whose
                 * loops vectorise where a row's (VOLO's 14 values of 1 or 2 bytes) do not, then
                 * copied to their rows */
                ptrdiff_t n = g.c1 - g.c0;
                ops->store(rows, buf, 0, sw, plane / unit, sw, 0, n * nbw, 0, n * W);
                for (ptrdiff_t r = 0; r < n; r++)
                    memcpy(y + (rh + sh * (g.c0 + r)) * W * size, (char*)rows + r * W * size,
                           (size_t)(W * size));
                continue;
            }
            for (ptrdiff_t r = g.c0; r < g.c1; r++) {
                char* yr = y + (rh + sh * r) * W * size;
                const char* a = (const char*)buf + (r - g.c0) * nbw * unit;
                if (sw == 2 && p->lph == 2)
                    ops->pair(yr, a, a + plane, (W + 1) / 2, W / 2);
                else
                    ops->store(yr, a, 0, p->lph, plane / unit, sw, 0, (W + sw - 1) / sw, 0, W);
            }
        }
    }
}

/* Work item: the plane x (columns) -> y (image), positions [o0, o1) of the first axis.  kx: scratch
 * of p->maxcomb pointers; ahead: bytes to the next item's columns, to prefetch (0: none); np: planes
 * after x and y that the item takes too (more than 1 only for the register rows of 2-D grids). */
static PK_NOINLINE void pk_col2im_item(int kind, const pk_col_plan* p, const char* x, char* y,
                                       ptrdiff_t o0, ptrdiff_t o1, const char** kx, ptrdiff_t ahead, ptrdiff_t np)
{
    const pk_col_ops* ops = &pk_col_kinds[kind];
    ptrdiff_t n = p->n, W = p->image[n - 1], size = ops->size;
    if (p->tiled && ahead && n >= 2 && p->tkw == p->step && p->tkh == p->hstep && !pk_col_tiles_direct(p)) {
        /* a tiled grid (blocks = strides) whose rows are copied through pk_col_tiles_batched asks
         * for the item's share of the next plane at its start; folds with gaps ran slower with it,
         * rows copied straight into the image no faster (docs/tuning.md#col2im-gapped-folds) */
        ptrdiff_t plane = p->K * p->L * size, b0 = o0 * plane / p->image[0], b1 = o1 * plane / p->image[0];
        pk_col_ahead(x + b0, NULL, NULL, NULL, b1 - b0, ahead);
        ahead = 0;
    }
    if (n == 1) {
        if (p->tiled)
            pk_col_tiles_row(ops, p, x, y + o0 * size, o0, o1);
        else
            pk_col_row(ops, p, &x, 1, y + o0 * size, o0, o1, ahead);
        return;
    }
    int grid = p->grid || p->regs;
#if PK_SIMD
    if (p->regs && n == 2) {
        pk_col_regs(ops, p, &x, 1, y, o0, o1, x, ahead, np);
        return;
    }
#endif
    if (grid && n == 2) {
        pk_col_grid(ops, p, &x, 1, y, o0, o1, x, ahead);
        return;
    }
    /* the rows (grids) of the slab, in order, and their positions on the axes before the last
     * (before the last two) */
    ptrdiff_t outer = grid ? n - 2 : n - 1, H = grid ? p->image[n - 2] : 1;
    ptrdiff_t pos[PK_COL_MAX_AXES], e[PK_COL_MAX_AXES], eb[PK_COL_MAX_AXES];
    ptrdiff_t per = 1;  /* rows (grids) per position of the first axis */
    for (ptrdiff_t i = 1; i < outer; i++)
        per *= p->image[i];
    pos[0] = o0;
    for (ptrdiff_t i = 1; i < outer; i++)
        pos[i] = 0;
    char* yr = y + o0 * per * H * W * size;
    for (ptrdiff_t row = 0; row < (o1 - o0) * per; row++, yr += H * W * size) {
        /* the prefixes landing on this row: an odometer over each axis' pairs, in k order */
        ptrdiff_t ncomb = 0, empty = 0;
        for (ptrdiff_t i = 0; i < outer; i++) {
            e[i] = p->off[i][pos[i]];
            eb[i] = p->off[i][pos[i] + 1];
            empty |= e[i] == eb[i];
        }
        while (!empty) {
            ptrdiff_t k = 0, l = 0, i = outer - 1;
            for (ptrdiff_t a = 0; a < outer; a++) {
                k += p->pre[a][2 * e[a]];
                l += p->pre[a][2 * e[a] + 1];
            }
            kx[ncomb++] = x + (k * p->L + l) * size;
            while (i >= 0 && ++e[i] == eb[i]) {
                e[i] = p->off[i][pos[i]];
                i--;
            }
            if (i < 0)
                break;
        }
        if (grid)
            pk_col_grid(ops, p, kx, ncomb, yr, 0, H, x, ahead);
        else
            pk_col_row(ops, p, kx, ncomb, yr, 0, W, ahead);
        for (ptrdiff_t i = outer - 1; i >= 0; i--) {  /* the next row */
            if (++pos[i] < p->image[i] || i == 0)
                break;
            pos[i] = 0;
        }
    }
}

#endif
