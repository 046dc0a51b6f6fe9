/* Zeroing blocks that are written again at once (Col2Im's work items, src/kernels/col2im.pxi): below
 * PK_ZERO_STORES bytes with plain vector stores.  glibc's memset takes `rep stosb` from 2 KB, and on AMD
 * Zen 5 a block zeroed so and then written into at once ran 2-3x slower than one zeroed by stores (a C
 * model of a zero-then-scatter: blocks of 3.8 KB 4.9 against 1.5 ms, of 15 KB 3.3 against 1.8 ms; from
 * 69 KB the two were even, and on 12-256 KB planes of max_pool_grad memset was as fast or faster).  The
 * compiler must not turn the loop back into a memset call, which the attributes below forbid. */
#ifndef POOLING_ZERO_H
#define POOLING_ZERO_H

#include <stddef.h>
#include <string.h>

#if defined(__clang__)
#define PK_NO_MEMSET_IDIOM __attribute__((noinline, no_builtin("memset")))
#elif defined(__GNUC__)
#define PK_NO_MEMSET_IDIOM __attribute__((noinline, optimize("no-tree-loop-distribute-patterns")))
#else
#define PK_NO_MEMSET_IDIOM
#endif

#if defined(__GNUC__) || defined(__clang__)

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
