/* Facts about the build, reported by pooling.show_config(). */
#ifndef POOLING_CONFIG_H
#define POOLING_CONFIG_H

#if defined(__clang__)
#define PK_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define PK_COMPILER "gcc " __VERSION__
#elif defined(_MSC_VER)
#define PK_STR2(x) #x
#define PK_STR(x) PK_STR2(x)
#define PK_COMPILER "msvc " PK_STR(_MSC_VER)
#else
#define PK_COMPILER "unknown"
#endif

#if defined(__AVX2__)
#define PK_SIMD_BASELINE "avx2"
#elif defined(__SSE2__) || defined(_M_X64)
#define PK_SIMD_BASELINE "sse2"
#elif defined(__ARM_NEON) || defined(__aarch64__)
#define PK_SIMD_BASELINE "neon"
#else
#define PK_SIMD_BASELINE "scalar"
#endif

#endif
