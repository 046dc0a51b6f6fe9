/* Zeroing blocks that are written again at once (Col2Im's work items, src/kernels/col2im.pxi): below
 * PK_ZERO_STORES bytes with plain vector stores.  glibc's memset takes `rep stosb` from 2 KB, and a
 * block zeroed so and then written into at once ran slower than one zeroed by stores; larger blocks
 * were even (docs/tuning.md#glibc-memset-zeroing-by-stores).  The compiler must not turn the loop back
 * into a memset call, which the attributes below forbid. */
#ifndef POOLING_ZERO_H
#define POOLING_ZERO_H

#include <stddef.h>
#include <string.h>

#include "pooling_simd.h"

#if defined(__clang__)
#define PK_NO_MEMSET_IDIOM __attribute__((noinline, no_builtin("memset")))
#elif defined(__GNUC__)
#define PK_NO_MEMSET_IDIOM __attribute__((noinline, optimize("no-tree-loop-distribute-patterns")))
#else
#define PK_NO_MEMSET_IDIOM
#endif

#if PK_SIMD

typedef char pk_zero_v __attribute__((vector_size(32)));

#define PK_ZERO_STORES 32768

static PK_NO_MEMSET_IDIOM void pk_zero(void* p, size_t bytes)
{
    char* b = (char*)p;
    if (bytes >= PK_ZERO_STORES) {
        memset(p, 0, bytes);
        return;
    }
    const pk_zero_v z = {0};
    size_t i = 0;
    for (; i + sizeof z <= bytes; i += sizeof z)
        memcpy(b + i, &z, sizeof z);
    for (; i < bytes; i++)
        b[i] = 0;
}

#else

static void pk_zero(void* p, size_t bytes)
{
    memset(p, 0, bytes);
}

#endif

#endif
