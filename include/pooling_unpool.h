/* MaxUnpool's 2x2 stride-2 windows written whole (src/kernels/maxunpool.pxi, "windows").
 *
 * Indices of a 2x2 stride-2 MaxPool put each value in its own window: input row r, column c lands
 * at output row 2r or 2r+1, column 2c or 2c+1.  Where every index of a row does, that row's two
 * output rows are its values and zeros side by side, and they are written in one sequential pass
 * of full vectors instead of zeroing the plane and then storing each value where its index points
 * (a scatter whose stores waited on the lines it touched: docs/tuning.md#maxunpool-windows).
 *
 * Each value and the zero beside it form one 64-bit pair: the value shifted by 32 bits where its
 * column is the odd one, stored in the upper row or the lower one.  The pairs need 64-bit lanes
 * with per-lane shifts (AVX2); the baseline build has none (a plain loop compiled for SSE2 ran
 * slower than the scatter), so there PK_UNPOOL_WINDOWS is 0, max_unpool does not ask for windows and
 * the kernel scatters (asked directly, it writes them a pair at a time). */
#ifndef POOLING_UNPOOL_H
#define POOLING_UNPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX2__)
#include <immintrin.h>
#define PK_UNPOOL_WINDOWS 1
#else
#define PK_UNPOOL_WINDOWS 0
#endif

#include "pooling_simd.h"   /* PK_ALWAYS_INLINE */

/* Pairs [c, n) one at a time; 1 if some index is not in its window. */
static PK_ALWAYS_INLINE int pk_unpool_pairs_one(const uint32_t* x, const int64_t* idx, ptrdiff_t c, ptrdiff_t n,
                                         uint32_t* top, uint32_t* bottom, int64_t base, int64_t W)
{
    int bad = 0;
    for (; c < n; c++) {
        uint64_t d = (uint64_t)idx[c] - (uint64_t)(base + 2 * c), even = d & ~(uint64_t)1;
        uint64_t pair = (uint64_t)x[c] << ((d & 1) * 32), upper = 0 - (uint64_t)(even == 0);
        uint64_t t = pair & upper, b = pair & ~upper;
        bad |= even != 0 && even != (uint64_t)W;
        memcpy(top + 2 * c, &t, sizeof t);
        memcpy(bottom + 2 * c, &b, sizeof b);
    }
    return bad;
}

#if PK_UNPOOL_WINDOWS
/* Pairs from *c four at a time while four remain (*c moves past them); 1 if some index is not in
 * its window.  stream_top, stream_bottom (literals at the call sites): non-temporal stores into a
 * row, whose addresses the caller has 32-byte aligned. */
static PK_ALWAYS_INLINE int pk_unpool_pairs_vec(const uint32_t* x, const int64_t* idx, ptrdiff_t* c, ptrdiff_t n,
                                         uint32_t* top, uint32_t* bottom, int64_t base, int64_t W,
                                         int stream_top, int stream_bottom)
{
    const __m256i one = _mm256_set1_epi64x(1), width = _mm256_set1_epi64x(W);
    const __m256i zero = _mm256_setzero_si256(), step = _mm256_set1_epi64x(8);
    ptrdiff_t i = *c;
    __m256i at = _mm256_add_epi64(_mm256_set1_epi64x(base + 2 * i), _mm256_setr_epi64x(0, 2, 4, 6));
    __m256i ok = _mm256_set1_epi64x(-1);
    for (; i + 4 <= n; i += 4) {
        __m256i d = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i*)(idx + i)), at);
        at = _mm256_add_epi64(at, step);
        __m256i even = _mm256_andnot_si256(one, d);           /* 0: upper row, W: lower row */
        __m256i upper = _mm256_cmpeq_epi64(even, zero);
        ok = _mm256_and_si256(ok, _mm256_or_si256(upper, _mm256_cmpeq_epi64(even, width)));
        __m256i v = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i*)(x + i)));
        __m256i pair = _mm256_sllv_epi64(v, _mm256_slli_epi64(_mm256_and_si256(d, one), 5));
        __m256i t = _mm256_and_si256(pair, upper), b = _mm256_andnot_si256(upper, pair);
        if (stream_top)
            _mm256_stream_si256((__m256i*)(top + 2 * i), t);
        else
            _mm256_storeu_si256((__m256i*)(top + 2 * i), t);
        if (stream_bottom)
            _mm256_stream_si256((__m256i*)(bottom + 2 * i), b);
        else
            _mm256_storeu_si256((__m256i*)(bottom + 2 * i), b);
    }
    *c = i;
    return _mm256_movemask_epi8(ok) != -1;
}
#endif

/* top and bottom (the output rows 2r and 2r+1, 2n values each) written from the row x[0:n] and
 * its indices; 1 if some idx[c] is none of base + 2c + {0, 1, W, W + 1} (the rows then hold
 * values and zeros that the caller must redo), else 0.  W: the output row's length, even.
 *
 * stream: with non-temporal stores (streamed past the caches), for results larger than the
 * caches: a store that is not streamed first reads its line, a third of the traffic of a result
 * that goes to memory anyway.  Only whole 64-byte lines inside a row are streamed: the pairs
 * before `top`'s first line boundary and after its last are stored as usual, and `bottom` is
 * streamed where its lines fall at the same pairs (W * 4 a multiple of 64).  A line that took
 * both kinds of store (a row's edge, where numpy's 16-byte alignment puts it) cost the whole row
 * pair several times its time (docs/tuning.md#maxunpool-non-temporal-stores).
 * The caller ends its streamed stores with pk_unpool_fence(). */
static inline int pk_unpool_pairs_u32(const uint32_t* x, const int64_t* idx, ptrdiff_t n,
                                      uint32_t* top, uint32_t* bottom, int64_t base, int64_t W, int stream)
{
    int bad = 0;
    ptrdiff_t c = 0;
#if PK_UNPOOL_WINDOWS
    if (((uintptr_t)top & 7) == 0) {
        /* The pairs before top's first line boundary (streamed) or 32-byte one (plain stores: at
         * numpy's alignment, 16 bytes into a line, every other store would split two lines,
         * docs/tuning.md#result-alignment) one at a time; bottom lines up too where W * 4 is a
         * multiple of 64 (32). */
        const uintptr_t mask = stream ? 63 : 31;
        ptrdiff_t lead = (ptrdiff_t)((mask + 1 - ((uintptr_t)top & mask)) & mask) / 8;
        c = lead < n ? lead : n;
        bad = pk_unpool_pairs_one(x, idx, 0, c, top, bottom, base, W);
        if (stream) {
            ptrdiff_t lines = c + (n - c) / 8 * 8; /* pairs up to top's last whole line */
            if (((uintptr_t)(bottom + 2 * c) & 63) == 0)
                bad |= pk_unpool_pairs_vec(x, idx, &c, lines, top, bottom, base, W, 1, 1);
            else
                bad |= pk_unpool_pairs_vec(x, idx, &c, lines, top, bottom, base, W, 1, 0);
        }
    }
    bad |= pk_unpool_pairs_vec(x, idx, &c, n, top, bottom, base, W, 0, 0);
#else
    (void)stream;
#endif
    return bad | pk_unpool_pairs_one(x, idx, c, n, top, bottom, base, W);
}

static inline void pk_unpool_fence(void)
{
#if PK_UNPOOL_WINDOWS
    _mm_sfence();
#endif
}

#endif
