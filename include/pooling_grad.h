/* max_pool_grad_windows' one loop (src/kernels/maxpool_grad.pxi): a pixel's C channels of dx, each
 * the window's gradient plus +0.0 (as the ordered sum, which adds it to zero) where the window's
 * index names the pixel, else zero.  Written as a mask over the bits: GCC made the same select with
 * `?:` a branch per channel (taken a quarter of the time with 2x2 windows) and vectorised none of it,
 * where this form is vector compares and ands in the SSE4.2, AVX2 and AVX-512 builds. */
#ifndef POOLING_GRAD_H
#define POOLING_GRAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pooling_simd.h" /* PK_RESTRICT */

#define PK_GRAD_SELECT(NAME, T, BITS)                                                             \
static inline void NAME(T* PK_RESTRICT y, const T* PK_RESTRICT g, const int64_t* PK_RESTRICT idx, \
                        int64_t pix, ptrdiff_t C)                                                 \
{                                                                                                 \
    for (ptrdiff_t c = 0; c < C; c++) {                                                           \
        T v = g[c] + (T)0;                                                                        \
        BITS bits;                                                                                \
        memcpy(&bits, &v, sizeof bits);                                                           \
        bits &= (BITS)0 - (BITS)(idx[c] == pix);                                                  \
        memcpy(&y[c], &bits, sizeof bits);                                                        \
    }                                                                                             \
}

PK_GRAD_SELECT(pk_grad_select_f32, float, uint32_t)
PK_GRAD_SELECT(pk_grad_select_f64, double, uint64_t)

#endif
