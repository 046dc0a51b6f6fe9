/* Software prefetch of the next work item's input, for the kernels that stream planes through
 * one core: ROWS_FIRST (include/pooling_rows.h) and NHWC_BLOCKS (include/pooling_nhwc.h).
 *
 * While a plane is computed, the next one is requested a slice at a time (a line per 64 bytes, the
 * slices spread over the plane's output rows), so its loads find it in L1 or L2.  On the 2-core
 * Zen 5 KVM this ran ResNet's stem at batch 16 (16x64x112x112 k3 s2 p1, 51 MB in, one thread) in
 * 1.56 ms where the same kernel without it took 3.83: without it each plane's rows missed to
 * memory one after the other, which the hardware prefetchers did not hide.  On inputs that stay
 * in cache the prefetches only cost issue slots (the batch-1 stem, 3.2 MB: 4% slower), so the
 * Python layer asks for them only past a fraction of the last-level cache (pooling._tuning's
 * prefetch_rows and prefetch_nhwc). */
#ifndef POOLING_PREFETCH_H
#define POOLING_PREFETCH_H

#if defined(__GNUC__) || defined(__clang__)
#define pk_prefetch(p) __builtin_prefetch((p))
#else
#define pk_prefetch(p) ((void)(p))
#endif

#endif
