/* How the kernels reach the process's one thread pool.
 *
 * The pool (pooling_pool.h) is compiled into pooling._runtime only.  The kernel builds
 * (pooling._core, pooling._core_avx2 and pooling._core_avx512) include this header instead:
 * pk_parallel and pk_stats here call the runtime's through the table that pooling._runtime exports
 * as the capsule `pool_api`, which each kernel module binds at import (pk_bind).  So a process
 * that runs kernels of several builds has one set of workers: a pool per build, each with workers
 * that spin for a while (POOLING_SPIN_US) after a call, would compete for the same cores.
 */
#ifndef POOLING_POOL_API_H
#define POOLING_POOL_API_H

#include <stdint.h>
#include <stddef.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h> /* _InterlockedOr */
#endif

typedef void (*pk_body)(void *ctx, Py_ssize_t begin, Py_ssize_t end, int tid);

typedef struct {
    size_t size; /* sizeof(pk_pool_api) as the runtime was built: a stale build fails at import */
    void (*parallel)(pk_body body, void *ctx, Py_ssize_t items, Py_ssize_t chunk, int n_threads);
    void (*stats)(int64_t *beside_owner, int64_t *moved);
    int pool; /* 1: the work-claiming pool; 0: an OpenMP loop or serial (MSVC, PK_POOL_OPENMP) */
} pk_pool_api;

/* *flag |= value, from any thread. */
static inline void pk_atomic_or(int *flag, int value)
{
#if defined(_MSC_VER) && !defined(__clang__)
    _InterlockedOr((volatile long *)flag, value);
#else
    __atomic_fetch_or(flag, value, __ATOMIC_RELAXED);
#endif
}

#ifndef POOLING_POOL_H /* a kernel build: the pool is the runtime's */
static const pk_pool_api *pk_api = NULL;

/* 0 once bound; -1 (unbound) when the runtime's table is not this header's. */
static int pk_bind(const void *api)
{
    if (api == NULL || ((const pk_pool_api *)api)->size != sizeof(pk_pool_api))
        return -1;
    pk_api = (const pk_pool_api *)api;
    return 0;
}

static inline void pk_parallel(pk_body body, void *ctx, Py_ssize_t items, Py_ssize_t chunk,
                               int n_threads)
{
    pk_api->parallel(body, ctx, items, chunk, n_threads);
}

static inline void pk_stats(int64_t *beside_owner, int64_t *moved) { pk_api->stats(beside_owner, moved); }

#define PK_POOL (pk_api->pool)
#endif

#endif /* POOLING_POOL_API_H */
