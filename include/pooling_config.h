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

/* PK_SIMD_BASELINE lists, space-separated, the SIMD extensions that the compiler
 * may use anywhere in this build. A release wheel lists only its platform's
 * baseline ("sse sse2" on x86-64, "neon" on aarch64) because the build never
 * passes -march=native. A longer list means someone built with -march/-m
 * flags, and the extension then fails on older CPUs, so bug reports carry it.
 * Faster instruction sets have to be picked at run time instead. */
#if defined(__SSE3__)
#define PK_ISA_SSE3 " sse3"
#else
#define PK_ISA_SSE3 ""
#endif
#if defined(__SSSE3__)
#define PK_ISA_SSSE3 " ssse3"
#else
#define PK_ISA_SSSE3 ""
#endif
#if defined(__SSE4_1__)
#define PK_ISA_SSE41 " sse4.1"
#else
#define PK_ISA_SSE41 ""
#endif
#if defined(__SSE4_2__)
#define PK_ISA_SSE42 " sse4.2"
#else
#define PK_ISA_SSE42 ""
#endif
#if defined(__AVX__)
#define PK_ISA_AVX " avx"
#else
#define PK_ISA_AVX ""
#endif
#if defined(__AVX2__)
#define PK_ISA_AVX2 " avx2"
#else
#define PK_ISA_AVX2 ""
#endif
#if defined(__FMA__)
#define PK_ISA_FMA " fma"
#else
#define PK_ISA_FMA ""
#endif
#if defined(__F16C__)
#define PK_ISA_F16C " f16c"
#else
#define PK_ISA_F16C ""
#endif
#if defined(__AVX512F__)
#define PK_ISA_AVX512F " avx512f"
#else
#define PK_ISA_AVX512F ""
#endif
#if defined(__ARM_FEATURE_SVE)
#define PK_ISA_SVE " sve"
#else
#define PK_ISA_SVE ""
#endif

#if defined(__x86_64__) || defined(_M_X64) || defined(__SSE2__)
/* SSE and SSE2 are part of x86-64 itself. MSVC defines no __SSE*__ macros, only
 * __AVX__ and up under /arch. */
#define PK_SIMD_BASELINE "sse sse2" PK_ISA_SSE3 PK_ISA_SSSE3 PK_ISA_SSE41 PK_ISA_SSE42 \
    PK_ISA_AVX PK_ISA_AVX2 PK_ISA_FMA PK_ISA_F16C PK_ISA_AVX512F
#elif defined(__aarch64__) || defined(_M_ARM64) || defined(__ARM_NEON)
#define PK_SIMD_BASELINE "neon" PK_ISA_SVE
#else
#define PK_SIMD_BASELINE "scalar"
#endif

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif
#include <string.h>

/* CPUID leaf `leaf`, subleaf `sub` into r[0..3] (eax, ebx, ecx, edx), with GCC/clang or MSVC on x86;
 * PK_CPUID is 0 elsewhere.  The callers check the highest leaf first. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define PK_CPUID 1
static inline void pk_cpuid(unsigned int leaf, unsigned int sub, unsigned int* r)
{
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <intrin.h>
#define PK_CPUID 1
static inline void pk_cpuid(unsigned int leaf, unsigned int sub, unsigned int* r)
{
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (unsigned int)v[0];
    r[1] = (unsigned int)v[1];
    r[2] = (unsigned int)v[2];
    r[3] = (unsigned int)v[3];
}
#else
#define PK_CPUID 0
#endif

/* The same two questions from CPUID and XCR0 alone, where PK_CPUID is 1: what MSVC and clang-cl
 * builds ask (__builtin_cpu_supports needs compiler-rt's builtins, which link.exe is not given).
 * AVX2, FMA and F16C (avx512 = 0), or also AVX-512 F, BW, VL and DQ (1), with the OS saving the ymm (and
 * zmm) registers. */
#if PK_CPUID
static inline unsigned long long pk_xcr0(void)
{
#if defined(_MSC_VER) && !defined(__clang__)
    return _xgetbv(0);
#else
    unsigned int lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
#endif
}
#endif

static inline int pk_cpu_has_by_cpuid(int avx512)
{
#if PK_CPUID
    unsigned int r[4];
    unsigned long long xcr0;
    pk_cpuid(0, 0, r);
    if (r[0] < 7)
        return 0;
    pk_cpuid(1, 0, r);  /* ecx: FMA 12, OSXSAVE 27, AVX 28, F16C 29 */
    if ((r[2] & 0x38001000u) != 0x38001000u)
        return 0;
    xcr0 = pk_xcr0();
    if ((xcr0 & 0x6) != 0x6)  /* xmm and ymm state */
        return 0;
    pk_cpuid(7, 0, r);  /* ebx: AVX2 5, AVX512F 16, DQ 17, BW 30, VL 31 */
    if (!((r[1] >> 5) & 1))
        return 0;
    if (!avx512)
        return 1;
    return (xcr0 & 0xE6) == 0xE6 && ((r[1] >> 16) & 1) && ((r[1] >> 17) & 1) && ((r[1] >> 30) & 1)
           && ((r[1] >> 31) & 1);
#else
    (void)avx512;
    return 0;
#endif
}

/* Whether this CPU can run pooling._core where it is built for x86-64-v2 (setup.py's
 * _baseline_flags: SSE3, SSSE3, SSE4.1, SSE4.2 and POPCNT, the level numpy 2.4's wheels require);
 * PK_KERNELS_X86_V2, which setup.py defines for pooling._runtime as it builds the kernels, says
 * whether it is.  pooling._runtime itself is built for plain x86-64, so that it can ask on any CPU
 * and pooling._dispatch can refuse the kernels with an ImportError rather than a SIGILL. */
#ifndef PK_KERNELS_X86_V2
#define PK_KERNELS_X86_V2 0
#endif
static inline int pk_cpu_runs_baseline(void)
{
#if !PK_KERNELS_X86_V2
    return 1;
#elif PK_CPUID
    unsigned int r[4];
    pk_cpuid(0, 0, r);
    if (r[0] < 1)
        return 0;
    pk_cpuid(1, 0, r);  /* ecx: SSE3 0, SSSE3 9, SSE4.1 19, SSE4.2 20, POPCNT 23 */
    return (r[2] & 0x00980201u) == 0x00980201u;
#else
    return 0;
#endif
}

/* F16C (CPUID leaf 1, ecx bit 29), which the AVX2 and AVX-512 builds are compiled with: every CPU
 * with AVX2 has it, but a hypervisor may hide it. */
static inline int pk_cpu_has_f16c(void)
{
#if PK_CPUID
    unsigned int r[4];
    pk_cpuid(1, 0, r);
    return (r[2] >> 29) & 1;
#else
    return 0;
#endif
}

/* Whether this CPU can run pooling._core_avx2 (AVX2, FMA and F16C), asked at run
 * time: wheels are compiled for the baseline ISA of their platform. */
static inline int pk_cpu_has_avx2(void)
{
#if defined(_MSC_VER)
    return pk_cpu_has_by_cpuid(0);
#elif (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();  /* (clang 14 knows no "f16c" here: CPUID's bit) */
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && pk_cpu_has_f16c();
#else
    return 0;
#endif
}

/* Whether this CPU (and its operating system, which must save the 512-bit registers) can run
 * pooling._core_avx512: AVX-512 F, VL and DQ besides AVX2 and FMA, which that build is compiled
 * with (setup.py's _avx512_flags).  The check also asks for BW, which the build does not use. */
static inline int pk_cpu_has_avx512(void)
{
#if defined(_MSC_VER)
    return pk_cpu_has_by_cpuid(1);
#elif (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    return pk_cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    return 0;
#endif
}

/* The CPU's vendor string (12 characters and a NUL), family and model (base plus extended, as the
 * vendors number them: docs/tuning.md#cpus-measured lists those measured), for the table of what
 * each build measured on which CPU (pooling._tuning.RULES).  "" and 0 where unknown. */
static inline void pk_cpu_id(char* vendor, int* family, int* model)
{
    vendor[0] = 0;
    *family = 0;
    *model = 0;
#if PK_CPUID
    {
        unsigned int r[4];
        pk_cpuid(0, 0, r);
        memcpy(vendor, &r[1], 4);
        memcpy(vendor + 4, &r[3], 4);
        memcpy(vendor + 8, &r[2], 4);
        vendor[12] = 0;
        if (r[0] < 1)
            return;
        pk_cpuid(1, 0, r);
        *family = (int)((r[0] >> 8) & 0xf);
        *model = (int)((r[0] >> 4) & 0xf);
        if (*family == 0xf || *family == 6)
            *model += (int)((r[0] >> 12) & 0xf0);
        if (*family == 0xf)
            *family += (int)((r[0] >> 20) & 0xff);
    }
#endif
}

/* The data caches CPUID describes, for pooling._caches where the operating system says nothing
 * (Windows): sizes[0..2] the bytes of the level-1 data, level-2 and level-3 caches (0 where
 * absent), cpus[0..2] the logical CPUs sharing each.  Intel's leaf 4 and AMD's 0x8000001D use the
 * same layout.  Returns 0 where CPUID has no such leaf (and off x86). */
static inline int pk_cpu_caches(long long* sizes, int* cpus)
{
    int found = 0;
    sizes[0] = sizes[1] = sizes[2] = 0;
    cpus[0] = cpus[1] = cpus[2] = 0;
#if PK_CPUID
    {
        unsigned int r[4], leaf = 4, i;
        char vendor[13];
        int family, model;
        pk_cpu_id(vendor, &family, &model);
        if (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine")) {
            pk_cpuid(0x80000000u, 0, r);
            if (r[0] < 0x8000001Du)
                return 0;
            pk_cpuid(0x80000001u, 0, r);
            if (!(r[2] & (1u << 22))) /* TOPOEXT: leaf 0x8000001D is valid */
                return 0;
            leaf = 0x8000001Du;
        } else {
            pk_cpuid(0, 0, r);
            if (r[0] < 4)
                return 0;
        }
        for (i = 0; i < 16; i++) {
            unsigned int type, level;
            pk_cpuid(leaf, i, r);
            type = r[0] & 0x1f;
            if (type == 0)
                break;
            level = (r[0] >> 5) & 7;
            if (type == 2 || level < 1 || level > 3) /* instruction caches, or a level we do not use */
                continue;
            sizes[level - 1] = (long long)(((r[1] >> 22) & 0x3ff) + 1) * (((r[1] >> 12) & 0x3ff) + 1)
                               * ((r[1] & 0xfff) + 1) * ((long long)r[2] + 1);
            cpus[level - 1] = (int)((r[0] >> 14) & 0xfff) + 1;
            found = 1;
        }
    }
#endif
    return found;
}

#endif
