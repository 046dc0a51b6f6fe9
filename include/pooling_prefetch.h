/* Software prefetch of the next work item's input, for the kernels that stream planes through
 * one core: ROWS_FIRST (include/pooling_rows.h) and NHWC_BLOCKS (include/pooling_nhwc.h).
 *
 * While a plane is computed, the next one is requested a slice at a time (a line per 64 bytes, the
 * slices spread over the plane's output rows), so its loads find it in L1 or L2.  Without it each
 * plane's rows of a large input missed to memory one after the other, which the hardware
 * prefetchers did not hide.  On inputs that stay in cache the prefetches only cost issue slots, so
 * the Python layer asks for them only past a fraction of the last-level cache (pooling._tuning's
 * prefetch_rows and prefetch_nhwc; docs/tuning.md#prefetching-rows_first-and-nhwc_blocks). */
#ifndef POOLING_PREFETCH_H
#define POOLING_PREFETCH_H

#if defined(__GNUC__) || defined(__clang__)
#define pk_prefetch(p) __builtin_prefetch((p))
#else
#define pk_prefetch(p) ((void)(p))
#endif

#endif
