/* The copies of strategy INTERLEAVED (src/kernels/maxpool_interleaved.pxi) between
 * planes and a block of them interleaved channels-last: pixel p of the block holds
 * lane b = plane b's value p, PK_IL_BYTES bytes per pixel.  Plain C with `restrict`
 * (so the compiler knows the block and the planes do not overlap) over a constant
 * number of lanes, by element size: they only move bits.  Planes are `ld` elements
 * apart; a block of nb < lanes planes repeats the last one in the spare lanes (in)
 * and writes only its nb planes (out).
 *
 * Gathering into the block reads the lanes' planes side by side and writes each pixel
 * whole; scattering back goes through 8x8 tiles of pixels x lanes, so that each
 * plane receives 8 consecutive values at a time (a store per value into eight planes
 * in turn ran slower: docs/tuning.md#interleaved-copies). */
#ifndef POOLING_INTERLEAVE_H
#define POOLING_INTERLEAVE_H

#include <stddef.h>
#include <stdint.h>

#include "pooling_simd.h"   /* PK_NOINLINE, PK_RESTRICT */

#define PK_IL_BYTES 32

/* Functions of their own (PK_NOINLINE): inlined into the kernel's loops they competed for
 * registers with it and spilled the lanes' plane offsets (docs/tuning.md#interleaved-copies). */

#define PK_IL_DEFINE(T)                                                                                \
static PK_NOINLINE void pk_il_in_##T(const void* PK_RESTRICT src, void* PK_RESTRICT dst, ptrdiff_t n,  \
                                ptrdiff_t ld, ptrdiff_t nb)                                            \
{                                                                                                      \
    const T* PK_RESTRICT x = (const T*)src;                                                            \
    T* PK_RESTRICT t = (T*)dst;                                                                        \
    enum { L = PK_IL_BYTES / sizeof(T) };                                                              \
    if (nb == L) {                                                                                     \
        for (ptrdiff_t p = 0; p < n; p++)                                                              \
            for (int b = 0; b < L; b++)                                                                \
                t[p * L + b] = x[b * ld + p];                                                          \
    } else {                                                                                           \
        for (ptrdiff_t p = 0; p < n; p++)                                                              \
            for (int b = 0; b < L; b++)                                                                \
                t[p * L + b] = x[(b < nb ? b : nb - 1) * ld + p];                                      \
    }                                                                                                  \
}                                                                                                      \
static PK_NOINLINE void pk_il_out_##T(const void* PK_RESTRICT src, void* PK_RESTRICT dst, ptrdiff_t n, \
                                 ptrdiff_t ld, ptrdiff_t nb)                                           \
{                                                                                                      \
    const T* PK_RESTRICT v = (const T*)src;                                                            \
    T* PK_RESTRICT y = (T*)dst;                                                                        \
    enum { L = PK_IL_BYTES / sizeof(T) };                                                              \
    ptrdiff_t p = 0;                                                                                   \
    if (nb == L) {                                                                                     \
        for (; p + 8 <= n; p += 8) {                                                                   \
            T r[8][L];                                                                                 \
            for (int i = 0; i < 8; i++)                                                                \
                for (int b = 0; b < L; b++)                                                            \
                    r[i][b] = v[(p + i) * L + b];                                                      \
            for (int b = 0; b < L; b++)                                                                \
                for (int i = 0; i < 8; i++)                                                            \
                    y[b * ld + p + i] = r[i][b];                                                       \
        }                                                                                              \
    }                                                                                                  \
    for (; p < n; p++)                                                                                 \
        for (ptrdiff_t b = 0; b < nb; b++)                                                             \
            y[b * ld + p] = v[p * L + b];                                                              \
}

PK_IL_DEFINE(uint8_t)
PK_IL_DEFINE(uint16_t)
PK_IL_DEFINE(uint32_t)
PK_IL_DEFINE(uint64_t)

#undef PK_IL_DEFINE

#endif
