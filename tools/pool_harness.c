/* The thread pool (include/pooling_pool.h) outside Python, on its POSIX or Win32 layer
 * (include/pooling_thread.h); tools/check_mingw.sh builds and runs it:
 *
 *   gcc -O2 -Wall -Werror -Wno-unused-function -Iinclude tools/pool_harness.c -o /tmp/pool_harness -lpthread
 *   x86_64-w64-mingw32-gcc -O2 -Wall -Werror -Wno-unused-function -Iinclude tools/pool_harness.c -o pool_harness.exe
 *
 * (-DPK_POOL_OPENMP -fopenmp: the OpenMP loop MSVC builds instead.)  It also includes every other
 * header of include/ that compiles without Python, so a Windows compiler sees them all; their
 * static functions go unused here, hence -Wno-unused-function.  Checks: run-once from many threads
 * at once, the monotonic clock, pk_leave_cpu keeping the affinity mask, then thousands of calls with
 * 1, 2, 4 and 8 threads, back to back and after sleeps past the workers' spin, from two calling
 * threads: every item runs exactly once, with a tid below the thread count, never two bodies on one
 * tid at a time.  Exits non-zero on the first violation.
 */
#define _GNU_SOURCE /* sched_getcpu; Python.h defines it in the extension */
#include <stddef.h>
typedef ptrdiff_t Py_ssize_t; /* what pooling_pool_api.h needs of Python.h */

#include "pooling_pool.h"  /* first: pooling_pool_api.h then compiles the pool's side, not the kernels' */
#include "pooling_add.h"
#include "pooling_col2im.h"
#include "pooling_config.h"
#include "pooling_half.h"
#include "pooling_half_conv.h"
#include "pooling_interleave.h"
#include "pooling_narrow.h"
#include "pooling_nhwc.h"
#include "pooling_omp.h"
#include "pooling_pool_api.h"
#include "pooling_prefetch.h"
#include "pooling_reduce.h"
#include "pooling_rows.h"
#include "pooling_simd.h"
#include "pooling_thread.h"
#include "pooling_unpool.h"
#include "pooling_zero.h"
/* Left out: pooling_results.h, which includes Python.h and numpy's C API. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <unistd.h>
#endif

#define MAX_ITEMS 1000000
#define MAX_TIDS 8

static void sleep_ms(int ms)
{
#if defined(_WIN32)
    Sleep((DWORD)ms);
#else
    usleep((useconds_t)ms * 1000);
#endif
}

static int cpus(void)
{
#if defined(_WIN32)
    return (int)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
#else
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
}

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

/* --- run-once, clock, pk_leave_cpu ------------------------------------------------------------- */

static int once_runs, once_seen_early;
static pk_once_flag once_flag = PK_ONCE_INIT;
static int once_threads_done;

static void once_body(void)
{
    sleep_ms(20);  /* the other threads reach pk_call_once meanwhile and must wait */
    __atomic_fetch_add(&once_runs, 1, __ATOMIC_SEQ_CST);
}

static pk_thread_ret PK_THREAD_CALL once_thread(void *arg)
{
    (void)arg;
    pk_call_once(&once_flag, once_body);
    if (__atomic_load_n(&once_runs, __ATOMIC_SEQ_CST) != 1)
        __atomic_store_n(&once_seen_early, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&once_threads_done, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static int check_platform(void)
{
    int64_t t0, t1;
    int k, cpu, moved;
    for (k = 0; k < 8; k++)
        if (pk_thread_start(once_thread, NULL) != 0) {
            fprintf(stderr, "pk_thread_start failed\n");
            return 1;
        }
    t0 = pk_now_ns();
    while (__atomic_load_n(&once_threads_done, __ATOMIC_SEQ_CST) < 8) {
        if (pk_now_ns() - t0 > 10 * (int64_t)1000000000) {
            fprintf(stderr, "detached threads did not finish\n");
            return 1;
        }
        pk_yield();
    }
    if (once_runs != 1 || once_seen_early) {
        fprintf(stderr, "pk_call_once ran %d times, or returned before the run ended\n", once_runs);
        return 1;
    }
    t0 = pk_now_ns();
    sleep_ms(50);
    t1 = pk_now_ns();
    if (t1 - t0 < 40000000 || t1 - t0 > 5 * (int64_t)1000000000) {
        fprintf(stderr, "pk_now_ns: a sleep of 50 ms took %lld ns\n", (long long)(t1 - t0));
        return 1;
    }
    /* The CPUID + XCR0 answers that MSVC and clang-cl builds use (pooling_config.h) agree with the
     * compiler's own where it has one. */
#if !defined(_MSC_VER) && (defined(__x86_64__) || defined(__i386__))
    if (pk_cpu_has_avx2() != pk_cpu_has_by_cpuid(0) || pk_cpu_has_avx512() != pk_cpu_has_by_cpuid(1)) {
        fprintf(stderr, "pk_cpu_has_by_cpuid disagrees with __builtin_cpu_supports\n");
        return 1;
    }
#endif
    cpu = pk_cpu();
    {
#if defined(_WIN32)
        GROUP_AFFINITY before, after;
        GetThreadGroupAffinity(GetCurrentThread(), &before);
        moved = pk_leave_cpu(cpu);
        GetThreadGroupAffinity(GetCurrentThread(), &after);
        if (before.Mask != after.Mask || before.Group != after.Group) {
#elif defined(__linux__)
        cpu_set_t before, after;
        sched_getaffinity(0, sizeof before, &before);
        moved = pk_leave_cpu(cpu);
        sched_getaffinity(0, sizeof after, &after);
        if (!CPU_EQUAL(&before, &after)) {
#else
        moved = pk_leave_cpu(cpu);
        if (0) {
#endif
            fprintf(stderr, "pk_leave_cpu changed the affinity mask\n");
            return 1;
        }
    }
    printf("platform: %d CPUs; once, detached threads, clock ok; pk_leave_cpu(%d) %s (now on %d)\n",
           cpus(), cpu, moved ? "moved" : "did not move", pk_cpu());
    return 0;
}

/* --- pk_parallel -------------------------------------------------------------------------------- */

typedef struct {
    int *count;  /* times each item ran */
    int busy[MAX_TIDS];
    int tids;    /* bit t: tid t ran a body */
    int n_threads;
    int failed;
} job_t;

static void body(void *ctx, Py_ssize_t begin, Py_ssize_t end, int tid)
{
    job_t *j = (job_t *)ctx;
    Py_ssize_t i;
    if (tid < 0 || tid >= j->n_threads || begin < 0 || begin >= end
        || __atomic_exchange_n(&j->busy[tid], 1, __ATOMIC_ACQ_REL) != 0) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (i = begin; i < end; i++)
        __atomic_fetch_add(&j->count[i], 1, __ATOMIC_RELAXED);
    __atomic_fetch_or(&j->tids, 1 << tid, __ATOMIC_RELAXED);
    __atomic_store_n(&j->busy[tid], 0, __ATOMIC_RELEASE);
}

typedef struct {
    unsigned seed;
    int calls;
    int *count;
    int failed;
    int helped_after_sleep;  /* calls after a sleep in which a worker ran chunks */
    int done;
} caller_t;

static int run_calls(caller_t *c)
{
    static const int threads[] = {1, 2, 4, 8};
    job_t j;
    int k;
    for (k = 0; k < c->calls; k++) {
        int big = next_random(&c->seed) % 16 == 0, slept = next_random(&c->seed) % 16 == 0;
        Py_ssize_t items = big ? MAX_ITEMS : 1 + next_random(&c->seed) % 20000, i;
        Py_ssize_t chunk = big ? 1000 + next_random(&c->seed) % 20000 : 1 + next_random(&c->seed) % 500;
        memset(&j, 0, sizeof j);
        j.count = c->count;
        j.n_threads = threads[k % 4];
        if (slept)
            sleep_ms(3);  /* past the workers' spin: they sleep, and must wake */
        pk_parallel(body, &j, items, chunk, j.n_threads);
        if (j.failed) {
            fprintf(stderr, "call %d: a body ran with a bad range or tid, or two at once on one tid\n", k);
            return 1;
        }
        for (i = 0; i < items; i++) {
            if (c->count[i] != 1) {
                fprintf(stderr, "call %d: item %lld ran %d times (items %lld, chunk %lld, threads %d)\n", k,
                        (long long)i, c->count[i], (long long)items, (long long)chunk, j.n_threads);
                return 1;
            }
            c->count[i] = 0;
        }
        if (slept && big && (j.tids & ~1))
            c->helped_after_sleep++;
    }
    return 0;
}

static pk_thread_ret PK_THREAD_CALL second_caller(void *arg)
{
    caller_t *c = (caller_t *)arg;
    c->failed = run_calls(c);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return 0;
}

int main(void)
{
    caller_t main_caller = {1u, 4000, NULL, 0, 0, 0}, other = {7u, 1000, NULL, 0, 0, 0};
    int64_t beside = 0, moved = 0, t0;
#if PK_POOL
    pk_spin_ns = 200000;  /* sleep sooner than the default, so the sleeps above wake sleepers */
#endif
    if (check_platform())
        return 1;
    main_caller.count = (int *)calloc(MAX_ITEMS, sizeof(int));
    other.count = (int *)calloc(MAX_ITEMS, sizeof(int));
    if (main_caller.count == NULL || other.count == NULL)
        return 2;
    if (run_calls(&main_caller))
        return 1;
    /* Two callers at once: one owns the workers, the other runs its calls itself. */
    main_caller.seed = 3u;
    main_caller.calls = 1000;
    if (pk_thread_start(second_caller, &other) != 0)
        return 2;
    if (run_calls(&main_caller))
        return 1;
    t0 = pk_now_ns();
    while (!__atomic_load_n(&other.done, __ATOMIC_ACQUIRE)) {
        if (pk_now_ns() - t0 > 300 * (int64_t)1000000000) {
            fprintf(stderr, "the second caller did not finish\n");
            return 1;
        }
        sleep_ms(1);
    }
    if (other.failed)
        return 1;
    if ((PK_POOL || PK_OPENMP) && cpus() > 1 && main_caller.helped_after_sleep == 0) {
        fprintf(stderr, "no worker ran a chunk of a large call after a sleep: workers do not wake\n");
        return 1;
    }
    pk_stats(&beside, &moved);
    printf("pool harness: ok (PK_POOL %d, PK_OPENMP %d, PK_SIMD %d; %d large calls after a sleep had "
           "worker help; %lld wakes beside the caller, %lld moved off)\n",
           PK_POOL, PK_OPENMP, PK_SIMD, main_caller.helped_after_sleep, (long long)beside, (long long)moved);
    return 0;
}
