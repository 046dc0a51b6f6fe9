/* OpenMP shim: the extension must build and import without OpenMP, so the
 * few runtime calls we need fall back to a single thread.  Cython's prange
 * compiles to plain loops when -fopenmp is absent. */
#ifndef POOLING_OMP_H
#define POOLING_OMP_H

#ifdef _OPENMP
#include <omp.h>
#define PK_OPENMP 1
#else
#define PK_OPENMP 0
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_limit(void) { return 1 << 30; }
#endif

#endif
