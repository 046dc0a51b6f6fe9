/* Conversions between the 16-bit float formats and float32, for Col2Im,
 * which sums: each term is widened exactly to float32, the sum is kept in
 * float32 and rounded once at the end, to nearest even (behaviour.md §4).
 *
 * Widening is exact for every pattern (subnormals, infinities and NaN
 * payloads included).  Rounding follows IEEE round-to-nearest-even: float16
 * subnormals are produced, magnitudes from halfway above the largest finite
 * value upward become infinity, and NaN stays NaN (quiet, sign and top payload
 * bits kept; every NaN an addition produces is quiet already, and for those
 * numpy's float16 conversion gives the same bits). */
#ifndef POOLING_HALF_CONV_H
#define POOLING_HALF_CONV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__aarch64__) && defined(__GNUC__) && !defined(__F16C__)
#include <arm_neon.h>
#endif

static inline uint32_t pk_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float pk_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* cond ? a : b with masks: GCC keeps a ternary as a branch here, and a branch
 * stops a loop from vectorising. */
static inline uint32_t pk_select(int cond, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - (uint32_t)(cond != 0);
    return (a & m) | (b & ~m);
}

static inline float pk_f16_to_f32(uint16_t h)
{
    uint32_t mag = h & 0x7fffu;
    /* Exponent and mantissa moved to float32's places read as a float32 equal
     * to the value times 2^-112 (subnormals included), so one exact product
     * rebiases it.  For inf and NaN the product has exponent 143, whose bits
     * all lie inside the all-ones exponent that is OR-ed in; the payload stays. */
    uint32_t bits = pk_f32_bits(pk_bits_f32(mag << 13) * 0x1p112f);
    bits |= pk_select(mag >= 0x7c00u, 0x7f800000u, 0);
    return pk_bits_f32(bits | ((uint32_t)(h & 0x8000u) << 16));
}

static inline float pk_bf16_to_f32(uint16_t h)
{
    return pk_bits_f32((uint32_t)h << 16); /* bfloat16 is float32's top half */
}

static inline uint16_t pk_f32_to_f16(float f)
{
    uint32_t x = pk_f32_bits(f);
    uint32_t mag = x & 0x7fffffffu;
    /* Normal result: rebias the exponent (-112 << 23, modulo 2^32) and round
     * the 13 dropped bits to nearest even; a carry may reach inf, correctly. */
    uint32_t normal = (mag + 0xc8000fffu + ((mag >> 13) & 1u)) >> 13;
    /* Below 2^-14 the result counts units of 2^-24: adding 0.5f, whose ulp is
     * 2^-24, makes the FPU round the value to that unit, to nearest even. */
    uint32_t sub = pk_f32_bits(pk_bits_f32(mag) + 0.5f) - 0x3f000000u;
    uint32_t nan = 0x7e00u | ((mag >> 13) & 0x3ffu); /* quiet, top payload bits */
    uint32_t r = pk_select(mag < 0x38800000u, sub, normal);
    r = pk_select(mag >= 0x47800000u, 0x7c00u, r); /* >= 65536, inf included */
    r = pk_select(mag > 0x7f800000u, nan, r);
    return (uint16_t)(((x >> 16) & 0x8000u) | r);
}

static inline uint16_t pk_f32_to_bf16(float f)
{
    uint32_t x = pk_f32_bits(f);
    /* Round the low 16 bits to nearest even; a carry reaches inf correctly. */
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u; /* the top half, made quiet */
    return (uint16_t)pk_select((x & 0x7fffffffu) > 0x7f800000u, nan, rounded);
}

/* y[i] = pk_f32_to_bf16(a[i]), i < n; y and a do not overlap.  With AVX2, sixteen values a step,
 * with SSE4.1 (the default x86 baseline build, x86-64-v2) eight: the NaN test an unordered compare
 * and the select a blend, the quiet bit set before the shift, and two registers packed into one
 * store; the last step again where n is not whole steps (GCC's form of the vector code tested the
 * NaN in integers, selected with three logic operations and packed each register alone, and a loop
 * of pk_f32_to_bf16 leaves its select scalar; docs/tuning.md#col2im-16-bit-runs-and-narrowing).
 * Runs shorter than a step, and every run where neither is there, take GCC's vector extensions
 * (clang has them too), a register of values a step, then values one by one. */
#if defined(__AVX2__)
#include <immintrin.h>
enum { PK_BF16_STEP = 16 };
static inline __m256i pk_f32_to_bf16_x8(__m256 f)
{
    __m256i x = _mm256_castps_si256(f);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd);
    __m256i quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x00400000));
    __m256 r = _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet),
                                _mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    return _mm256_srli_epi32(_mm256_castps_si256(r), 16);
}
static inline void pk_f32_to_bf16_step(uint16_t* y, const float* a)
{
    __m256i lo = pk_f32_to_bf16_x8(_mm256_loadu_ps(a)), hi = pk_f32_to_bf16_x8(_mm256_loadu_ps(a + 8));
    /* (packed lane by lane: the 64-bit quarters back in order) */
    _mm256_storeu_si256((__m256i*)y, _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
}
#elif defined(__SSE4_1__)
#include <smmintrin.h>
enum { PK_BF16_STEP = 8 };
static inline __m128i pk_f32_to_bf16_x4(__m128 f)
{
    __m128i x = _mm_castps_si128(f);
    __m128i odd = _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(1));
    __m128i rounded = _mm_add_epi32(_mm_add_epi32(x, _mm_set1_epi32(0x7fff)), odd);
    __m128i quiet = _mm_or_si128(x, _mm_set1_epi32(0x00400000));
    __m128 r = _mm_blendv_ps(_mm_castsi128_ps(rounded), _mm_castsi128_ps(quiet), _mm_cmpunord_ps(f, f));
    return _mm_srli_epi32(_mm_castps_si128(r), 16);
}
static inline void pk_f32_to_bf16_step(uint16_t* y, const float* a)
{
    __m128i lo = pk_f32_to_bf16_x4(_mm_loadu_ps(a)), hi = pk_f32_to_bf16_x4(_mm_loadu_ps(a + 4));
    _mm_storeu_si128((__m128i*)y, _mm_packus_epi32(lo, hi));
}
#endif
static inline void pk_f32_to_bf16_run(uint16_t* y, const float* a, ptrdiff_t n)
{
    ptrdiff_t i = 0;
#if defined(__AVX2__) || defined(__SSE4_1__)
    if (n >= PK_BF16_STEP) {  /* (a loop of whole steps, then the last one again: fewer
                               * instructions a step than one loop that moves its last step back) */
        for (; i + PK_BF16_STEP <= n; i += PK_BF16_STEP)
            pk_f32_to_bf16_step(y + i, a + i);
        if (i < n)
            pk_f32_to_bf16_step(y + n - PK_BF16_STEP, a + n - PK_BF16_STEP);
        return;
    }
#endif
#if defined(__GNUC__)
#if defined(__AVX2__)
    enum { lanes = 8 };
#else
    enum { lanes = 4 };
#endif
    typedef uint32_t u32v __attribute__((vector_size(lanes * 4)));
    typedef uint16_t u16v __attribute__((vector_size(lanes * 2)));
    for (; n >= lanes; i += lanes) {
        i = i + lanes <= n ? i : n - lanes;
        u32v x;
        memcpy(&x, a + i, sizeof x);
        u32v nan = (x >> 16) | 0x0040u, rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        u32v big = (u32v)((x & 0x7fffffffu) > 0x7f800000u);
        u16v h = __builtin_convertvector((nan & big) | (rounded & ~big), u16v);
        memcpy(y + i, &h, sizeof h);
        if (i + lanes >= n)
            return;
    }
#endif
    for (; i < n; i++)
        y[i] = pk_f32_to_bf16(a[i]);
}

/* With F16C (the AVX2 and AVX-512 builds: every CPU with AVX2 has it, and pk_cpu_has_avx2 asks),
 * eight values a step in hardware, for Col2Im's 16-bit sums.  Widening is exact as above, except
 * that a signalling NaN comes back quiet: every widened term here is summed, and a sum makes it
 * quiet with the same bits either way.  Narrowing rounds to nearest even whatever MXCSR says, with
 * the NaN rule above: the same bits as pk_f32_to_f16 for every float32. */
#if defined(__F16C__)
#include <immintrin.h>
#define PK_F16C 1
static inline __m256 pk_f16x8_to_f32(const uint16_t* p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
/* y[i] = pk_f32_to_f16(a[i]), i < n; y and a do not overlap */
static inline void pk_f32_to_f16_run(uint16_t* y, const float* a, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i*)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(a + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n && n >= 8)  /* the last eight again (y is not a) */
        _mm_storeu_si128((__m128i*)(y + n - 8), _mm256_cvtps_ph(_mm256_loadu_ps(a + n - 8), _MM_FROUND_TO_NEAREST_INT));
    else
        for (; i < n; i++)
            y[i] = pk_f32_to_f16(a[i]);
}
#else
#define PK_F16C 0
/* y[i] = pk_f32_to_f16(a[i]), i < n; y and a do not overlap.  Without F16C a register of values a
 * step: on aarch64 in hardware (FCVTN rounds to nearest even in the default mode and keeps the
 * NaN rule above), elsewhere with GCC's vector extensions, pk_f32_to_f16's selects as masks (a loop
 * of it stays scalar); the last ones again where n is not whole steps. */
static inline void pk_f32_to_f16_run(uint16_t* y, const float* a, ptrdiff_t n)
{
    ptrdiff_t i = 0;
#if defined(__aarch64__) && defined(__GNUC__)
    for (; n >= 4; i += 4) {
        i = i + 4 <= n ? i : n - 4;
        vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(a + i))));
        if (i + 4 >= n)
            return;
    }
#elif defined(__GNUC__)
    typedef uint32_t u32v __attribute__((vector_size(16)));
    typedef float f32v __attribute__((vector_size(16)));
    typedef uint16_t u16v __attribute__((vector_size(8)));
    for (; n >= 4; i += 4) {
        i = i + 4 <= n ? i : n - 4;
        u32v x, sub;
        f32v m;
        memcpy(&x, a + i, sizeof x);
        u32v mag = x & 0x7fffffffu;
        u32v normal = (mag + 0xc8000fffu + ((mag >> 13) & 1u)) >> 13;
        memcpy(&m, &mag, sizeof m);
        m = m + 0.5f;
        memcpy(&sub, &m, sizeof sub);
        sub -= 0x3f000000u;
        u32v nan = 0x7e00u | ((mag >> 13) & 0x3ffu);
        u32v low = (u32v)(mag < 0x38800000u), big = (u32v)(mag >= 0x47800000u);
        u32v bad = (u32v)(mag > 0x7f800000u);
        u32v r = (((sub & low) | (normal & ~low)) & ~big) | (0x7c00u & big);
        r = (nan & bad) | (r & ~bad);
        u16v h = __builtin_convertvector(((x >> 16) & 0x8000u) | r, u16v);
        memcpy(y + i, &h, sizeof h);
        if (i + 4 >= n)
            return;
    }
#endif
    for (; i < n; i++)
        y[i] = pk_f32_to_f16(a[i]);
}
#endif
#endif
