/* 16-bit floats (IEEE float16 and bfloat16) travel through the kernels as
 * their uint16 bit patterns.  MaxPool only compares, so instead of converting
 * we map the bits to an unsigned key whose integer order is behaviour.md §2.4's order:
 *   - every NaN (either sign, any payload) maps to the top key, so NaN beats
 *     every number and NaNs tie with each other (the first one then wins);
 *   - -0.0 and +0.0 map to the same key, so they tie;
 *   - otherwise negative values are bit-inverted and positive ones get the
 *     sign bit set, which makes the key monotone in the value.
 * The two formats differ only in where NaN starts: a magnitude above the
 * +inf pattern (0x7c00 for float16, 0x7f80 for bfloat16). */
#ifndef POOLING_HALF_H
#define POOLING_HALF_H

#include <stdint.h>
#include <string.h>

#define PK_F16_INF 0x7c00u
#define PK_BF16_INF 0x7f80u

static inline uint16_t pk_half_key(uint16_t h, uint16_t inf_bits)
{
    /* Written as selects, not branches, so loops over it vectorise. */
    uint16_t mag = h & 0x7fffu;
    uint16_t flip = (h & 0x8000u) ? 0xffffu : 0x8000u;
    uint16_t key = h ^ flip;
    key = mag > inf_bits ? 0xffffu : key;
    return mag == 0 ? 0x8000u : key;
}

static inline int pk_half_isnan(uint16_t h, uint16_t inf_bits)
{
    return (h & 0x7fffu) > inf_bits;
}

/* A cheaper order for rows that hold no NaN and no -0.0: flipping the
 * magnitude bits of negative values gives an int16 whose signed order is the
 * value order (it only separates -0.0 from +0.0 and misorders NaNs, which such
 * rows do not have).  Loops over it vectorise with SSE2's 16-bit compares. */
static inline int16_t pk_half_fast_key(uint16_t h)
{
    return (int16_t)(h ^ ((uint16_t)((int16_t)h >> 15) & 0x7fffu));
}

/* True when a or b is NaN: one unordered compare tests two elements. */
#define PK_UNORDERED(a, b) __builtin_isunordered((a), (b))

/* True when a float or double is NaN or -0.0: the values whose bits can
 * differ from an equal maximum's, so that the order of the compares shows. */
static inline int pk_f32_tie_odd(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u == 0x80000000u) | ((u & 0x7fffffffu) > 0x7f800000u);
}

static inline int pk_f64_tie_odd(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return (u == 0x8000000000000000u) | ((u & 0x7fffffffffffffffu) > 0x7ff0000000000000u);
}

#endif
