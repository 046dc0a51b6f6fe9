/* Col2Im's contiguous runs (src/kernels/col2im.pxi): y[i] += x[i], for arrays that do not overlap
 * (the column and the image are separate arrays), so the compiler need not test for overlap
 * before each run: VOLO's fold adds runs of 27 and 28 values, where that test and the remainder
 * were most of a run's cost. */
#ifndef POOLING_ADD_H
#define POOLING_ADD_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define PK_ADD_NOINLINE __attribute__((noinline))
#define PK_RESTRICT __restrict__
#elif defined(_MSC_VER)
#define PK_ADD_NOINLINE __declspec(noinline)
#define PK_RESTRICT __restrict
#else
#define PK_ADD_NOINLINE
#define PK_RESTRICT
#endif

/* (out of line: inlined, it changed the code around the strided runs, which ran 1.1x slower) */
static PK_ADD_NOINLINE void pk_add_f32(float* PK_RESTRICT y, const float* PK_RESTRICT x, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++)
        y[i] += x[i];
}

#endif
