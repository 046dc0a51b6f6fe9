/* Col2Im's additions (src/kernels/col2im.pxi), for arrays that do not overlap (the column and
 * the image are separate arrays), so the compiler need not test for overlap before each run. */
#ifndef POOLING_ADD_H
#define POOLING_ADD_H

#include <stddef.h>
#include <stdint.h>

#include "pooling_half_conv.h"
#include "pooling_prefetch.h"
#include "pooling_simd.h"   /* PK_NOINLINE, PK_RESTRICT */

/* a + b, or a itself where a is NaN (a + 0 keeps a's bits).  x86 gives the first operand's NaN
 * when both are NaN, and the compiler orders the operands one way in vector code and another in
 * scalar code; this way the bits of a NaN sum do not depend on which code added the term.  (This
 * form vectorises with SSE2, AVX2 and AVX-512 alike, widening included; a select of the sum
 * did not.) */
static inline float pk_sum_keep_nan(float a, float b)
{
    return a + pk_bits_f32(pk_f32_bits(b) & (0u - (uint32_t)(a == a)));
}

static inline double pk_sum_keep_nan_f64(double a, double b)
{
    uint64_t bits;
    memcpy(&bits, &b, sizeof bits);
    bits &= 0u - (uint64_t)(a == a);
    memcpy(&b, &bits, sizeof b);
    return a + b;
}

/* float32 runs, y[i] += x[i], a NaN sum keeping its bits.  Contiguous runs (step 1) are
 * VOLO's fold, runs of 27 and 28 values, where the overlap test and the remainder were most of a
 * run's cost.  Both out of line: inlined, they changed the code around them, which ran slower
 * (docs/tuning.md#col2im-runs). */
static inline void pk_add_chunk_f32(float* PK_RESTRICT y, const float* PK_RESTRICT x, int w)
{
    for (int j = 0; j < w; j++)
        y[j] = pk_sum_keep_nan(y[j], x[j]);
}

/* One vector of y[j] += x[j] as pk_sum_keep_nan does it, lane by lane.  Written as vectors, not
 * left to the vectoriser: a prefetch in the same block stopped GCC from vectorising the unrolled
 * chunk. */
#if PK_SIMD_BYTES >= 64
PK_VEC(pk_addv, PK_ADD_L, float, f32x16, i32x16)
#elif PK_SIMD_BYTES >= 32
PK_VEC(pk_addv, PK_ADD_L, float, f32x8, i32x8)
#else
PK_VEC(pk_addv, PK_ADD_L, float, f32x4, i32x4)
#endif

static PK_ALWAYS_INLINE void pk_add_vec_f32(float* PK_RESTRICT y, const float* PK_RESTRICT x)
{
#if PK_SIMD
    pk_addv_v a = pk_addv_ld(y);
    pk_addv_st(y, a + (pk_addv_v)((pk_addv_m)pk_addv_ld(x) & (pk_addv_m)(a == a)));
#else
    *y = pk_sum_keep_nan(*y, *x);
#endif
}

/* How far ahead of its loads pk_add_f32_pf asks for x: docs/tuning.md#col2im-runs. */
#define PK_ADD_AHEAD 1024

static PK_ALWAYS_INLINE void pk_add_f32_body(float* PK_RESTRICT y, const float* PK_RESTRICT x, ptrdiff_t n,
                                             int prefetch)
{
    /* A line of x (16 values) per step, then 8 and 4 values, then a scalar sum that leaves a NaN
     * alone by a branch: the compiler's own remainder loop did the mask in scalar code, slower on
     * runs of 27.  (A loop over rows around this, to save the calls, made GCC build the 8-value
     * vectors lane by lane, slower still: docs/tuning.md#col2im-runs.) */
    ptrdiff_t i = 0;
    for (; i + 16 <= n; i += 16) {
        if (prefetch)
            pk_prefetch(x + i + PK_ADD_AHEAD / sizeof(float));
        for (int j = 0; j < 16; j += PK_ADD_L)
            pk_add_vec_f32(y + i + j, x + i + j);
    }
    if (i + 8 <= n) {
        pk_add_chunk_f32(y + i, x + i, 8);
        i += 8;
    }
    if (i + 4 <= n) {
        pk_add_chunk_f32(y + i, x + i, 4);
        i += 4;
    }
    for (; i < n; i++)
        if (y[i] == y[i])
            y[i] += x[i];
}

/* The run with a prefetch of x PK_ADD_AHEAD bytes ahead, one per line, and without: which one a
 * call takes is pooling._tuning.col2im_run_prefetch's per-CPU choice (docs/tuning.md#col2im-runs). */
static PK_NOINLINE void pk_add_f32_pf(float* PK_RESTRICT y, const float* PK_RESTRICT x, ptrdiff_t n)
{
    pk_add_f32_body(y, x, n, 1);
}

static PK_NOINLINE void pk_add_f32(float* PK_RESTRICT y, const float* PK_RESTRICT x, ptrdiff_t n)
{
    pk_add_f32_body(y, x, n, 0);
}

#endif
