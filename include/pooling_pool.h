/* The kernels' thread pool: work claiming, so a call never waits for a thread that has not started.
 *
 * pk_parallel(body, ctx, items, chunk, n_threads) runs body(ctx, begin, end, tid) over [0, items)
 * in runs of whole chunks of `chunk` items, each item once, with tid in [0, n_threads) and no two
 * threads sharing a tid at one time.  The chunks are cut into one range per thread; each thread
 * claims runs from the front of its own range, then from the others' (pk_claim_and_run).  The
 * caller is tid 0 and claims chunks itself, like the workers; it then waits only for chunks that a
 * worker has claimed and not finished.  A worker that wakes late (an idle virtual CPU can take
 * milliseconds) finds nothing left and goes back to waiting, so the call costs at most about its
 * serial time.  An OpenMP team cannot do that: a parallel region ends with a barrier that every
 * member, however late, must reach (README "Processes and threads").
 *
 * Workers spin for pk_spin_ns (POOLING_SPIN_US) after their last chunk (back-to-back calls find
 * them awake), yielding their CPU every 64 pauses to any other thread that wants it (where the
 * kernel's sched_yield gives up the time slice, as Linux 6.18's does, the next library's threads
 * then run at full speed), then sleep on a condition variable.  A worker woken onto the caller's
 * own CPU (a virtual machine's scheduler does that when its other virtual CPUs idle) could only
 * take turns with the caller:
 * it moves to another CPU first, or leaves the call to the caller (pk_leave_cpu).  One caller
 * owns the pool at a time; a concurrent caller (another Python thread) runs its call on its own
 * thread.  After fork() the child has no workers and starts new ones when a call needs them.
 *
 * The pool needs GCC's __atomic builtins, so gcc, clang, mingw-w64 and clang-cl build it, on POSIX
 * or Win32 (the OS calls are pooling_thread.h's).  MSVC proper, and a build that defines
 * PK_POOL_OPENMP (to run MSVC's path with another compiler), get the same interface as an OpenMP
 * loop, or a plain loop without OpenMP: PK_POOL 0.  The thread count stays the caller's choice
 * everywhere (OMP_NUM_THREADS, threadpoolctl).
 *
 * Only pooling._runtime compiles this file; the kernel builds reach its pool through
 * pooling_pool_api.h, so a process has one pool whichever builds its kernels come from.
 */
#ifndef POOLING_POOL_H
#define POOLING_POOL_H

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "pooling_omp.h"
#include "pooling_pool_api.h" /* pk_body, pk_atomic_or */

static void pk_serial(pk_body body, void *ctx, Py_ssize_t items, Py_ssize_t chunk)
{
    Py_ssize_t b;
    for (b = 0; b < items; b += chunk)
        body(ctx, b, items - b > chunk ? b + chunk : items, 0);
}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(PK_POOL_OPENMP)
#define PK_POOL 1

#include "pooling_thread.h"

#define PK_MAX_THREADS 256 /* threads per call, the caller included */
#define PK_CLOSED 0xFFFFFFFFu /* a range's next-chunk field while its generation is set up */
#define PK_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define PK_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define PK_SET(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* How long a worker looks for new work before it sleeps; POOLING_SPIN_US overrides it. */
static int64_t pk_spin_ns = 2000000;
/* Threads per call at most, counting the caller: OMP_THREAD_LIMIT, as for an OpenMP team. */
static int pk_thread_limit = PK_MAX_THREADS;

/* Thread t's share of a call's chunks, [start, end): t claims from its front first (so each
 * thread takes the same part of the data on every call, still in its cache from the last), then
 * from the others'.  claim = generation << 32 | next chunk, the only word claims change. */
typedef struct {
    uint64_t claim;
    uint32_t end;
    char pad[64 - sizeof(uint64_t) - sizeof(uint32_t)];
} pk_range;

static pk_range pk_ranges[PK_MAX_THREADS] PK_ALIGN64;

static struct {
    /* The job: written by the owner while the generation is closed, read by workers. */
    pk_body body;
    void *ctx;
    Py_ssize_t items, chunk;
    uint32_t nchunks;
    int n_threads;
    uint64_t state;        /* generation << 32 | 1 once the job is open */
    int64_t done;          /* chunks finished in this generation */
    int busy;              /* 1 while a caller owns the pool */
    int sleepers;          /* workers asleep, or about to be */
    int nworkers;          /* workers started (tids 1..nworkers) */
    int owner_cpu;         /* the CPU the caller opened the job on, or -1 */
    int64_t beside_owner;  /* times a worker woke on the owner's CPU ... */
    int64_t moved;         /* ... and moved to another (pk_stats) */
    pk_mutex lock;
    pk_cond wake;
} pk_pool = {0};

static pk_once_flag pk_once = PK_ONCE_INIT;

/* fork() keeps the lock consistent (the forking thread holds it across the fork); the child
 * keeps only the forking thread: no workers, no owner, no sleepers on the condition variable. */
static void pk_before_fork(void) { pk_mutex_lock(&pk_pool.lock); }
static void pk_after_fork_in_parent(void) { pk_mutex_unlock(&pk_pool.lock); }

static void pk_after_fork_in_child(void)
{
    pk_mutex_unlock(&pk_pool.lock);
    pk_cond_init(&pk_pool.wake);
    pk_pool.nworkers = 0;
    pk_pool.sleepers = 0;
    pk_pool.busy = 0;
}

static void pk_init(void)
{
    const char *spin = getenv("POOLING_SPIN_US");
    int limit = omp_get_thread_limit();
    if (spin != NULL && *spin)
        pk_spin_ns = (int64_t)strtoll(spin, NULL, 10) * 1000;
    if (limit < pk_thread_limit)
        pk_thread_limit = limit;
    pk_mutex_init(&pk_pool.lock);
    pk_cond_init(&pk_pool.wake);
    pk_atfork(pk_before_fork, pk_after_fork_in_parent, pk_after_fork_in_child);
}

/* Whether state s is an open job of a generation other than `seen`. */
static inline int pk_new_work(uint64_t s, uint32_t seen)
{
    return (uint32_t)(s >> 32) != seen && (s & 1);
}

/* Claim and run chunks of generation `gen` as thread tid of n: its own range first, then the
 * others'.  On time, a thread's claims take a quarter of what is left of its range; a thread that
 * is late, or helps another, takes one chunk at a time, so it holds the others up by one chunk. */
static void pk_claim_and_run(uint32_t gen, int tid, int n, int on_time)
{
    pk_body body = PK_RELAXED(&pk_pool.body);
    void *ctx = PK_RELAXED(&pk_pool.ctx);
    Py_ssize_t items = PK_RELAXED(&pk_pool.items), chunk = PK_RELAXED(&pk_pool.chunk);
    int k;
    /* The fields are gen's whenever a claim succeeds: the owner changes them only after every
     * chunk of gen is done, and first moves every range's word to the next generation. */
    for (k = 0; k < n; k++) {
        int t = (tid + k) % n;
        pk_range *r = &pk_ranges[t];
        uint64_t w = PK_LOAD(&r->claim);
        uint32_t end = PK_LOAD(&r->end);  /* pairs with the owner's release: see pk_parallel */
        /* Long claims only from an untouched range of one's own, by a thread that was on time: one
         * that slept (a core woken from idle ran its claims slower than the caller:
         * docs/tuning.md#thread-pool), one that finds its range begun without it, and one helping
         * another take one chunk at a time. */
        int eager = on_time && k == 0
                    && (uint32_t)w == (uint32_t)(PK_RELAXED(&pk_pool.nchunks) * (uint64_t)t / n);
        for (;;) {
            uint32_t next = (uint32_t)w, take = 1;
            if ((uint32_t)(w >> 32) != gen)
                return;  /* the job is over */
            if (next >= end)
                break;
            if (eager && (end - next) / 4 > 1)
                take = (end - next) / 4;
            if (__atomic_compare_exchange_n(&r->claim, &w, w + take, 1, __ATOMIC_ACQUIRE,
                                            __ATOMIC_ACQUIRE)) {
                Py_ssize_t begin = (Py_ssize_t)next * chunk, stop = (Py_ssize_t)(next + take) * chunk;
                body(ctx, begin, stop < items ? stop : items, tid);
                __atomic_fetch_add(&pk_pool.done, (int64_t)take, __ATOMIC_RELEASE);
                w = w + take;
            }
        }
    }
}

static pk_thread_ret PK_THREAD_CALL pk_worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    uint32_t seen = (uint32_t)(PK_LOAD(&pk_pool.state) >> 32) - 1;  /* join the job that started us */
    int stuck = 0;  /* left the last job to its owner, whose CPU this one shares */
    for (;;) {
        uint64_t s = PK_LOAD(&pk_pool.state);
        int n, cpu, slept = 0;
        if (!pk_new_work(s, seen)) {
            /* Spinning beside the owner would take its time: sleep at once. */
            int64_t until = pk_now_ns() + (stuck ? 0 : pk_spin_ns);
            int spins = 0;
            while (!pk_new_work(s = PK_LOAD(&pk_pool.state), seen)) {
                PK_PAUSE();
                if (++spins == 64) {
                    spins = 0;
                    if (pk_now_ns() >= until)
                        break;
                    pk_yield();  /* a thread that wants this CPU may run now (threads.md) */
                }
            }
            if (!pk_new_work(s, seen)) {
                pk_mutex_lock(&pk_pool.lock);
                __atomic_fetch_add(&pk_pool.sleepers, 1, __ATOMIC_SEQ_CST);
                while (!pk_new_work(s = __atomic_load_n(&pk_pool.state, __ATOMIC_SEQ_CST), seen))
                    pk_cond_wait(&pk_pool.wake, &pk_pool.lock);
                __atomic_fetch_sub(&pk_pool.sleepers, 1, __ATOMIC_SEQ_CST);
                pk_mutex_unlock(&pk_pool.lock);
                slept = 1;
            }
        }
        seen = (uint32_t)(s >> 32);
        n = PK_RELAXED(&pk_pool.n_threads);
        if (tid >= n)
            continue;
        cpu = pk_cpu();
        stuck = 0;
        if (cpu >= 0 && cpu == PK_RELAXED(&pk_pool.owner_cpu)) {
            __atomic_fetch_add(&pk_pool.beside_owner, 1, __ATOMIC_RELAXED);
            if (!pk_leave_cpu(cpu)) {
                stuck = 1;
                continue;
            }
            __atomic_fetch_add(&pk_pool.moved, 1, __ATOMIC_RELAXED);
            slept = 1;  /* the new CPU may be waking from idle too */
        }
        pk_claim_and_run(seen, tid, n, !slept);
    }
    return 0;
}

/* Start workers up to tid `want`; fewer if the system refuses (the caller then does more). */
static void pk_start_workers(int want)
{
    while (pk_pool.nworkers < want
           && pk_thread_start(pk_worker, (void *)(intptr_t)(pk_pool.nworkers + 1)) == 0)
        pk_pool.nworkers++;
}

static void pk_parallel(pk_body body, void *ctx, Py_ssize_t items, Py_ssize_t chunk, int n_threads)
{
    uint64_t gen;
    int64_t nchunks, spins = 0;
    int expected = 0, t;
    if (chunk < 1)
        chunk = 1;
    nchunks = (items + chunk - 1) / chunk;
    if (n_threads > 1)
        pk_call_once(&pk_once, pk_init);
    if (n_threads > pk_thread_limit)
        n_threads = pk_thread_limit;
    if (n_threads <= 1 || nchunks <= 1 || nchunks >= (int64_t)PK_CLOSED) {
        pk_serial(body, ctx, items, chunk);
        return;
    }
    if (!__atomic_compare_exchange_n(&pk_pool.busy, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED)) {
        pk_serial(body, ctx, items, chunk);  /* another thread's call has the workers */
        return;
    }
    /* A new generation: close it (a late thread of the last one can then claim nothing), fill in
     * the job and the ranges, open it. */
    gen = (PK_RELAXED(&pk_pool.state) >> 32) + 1;
    __atomic_store_n(&pk_pool.state, gen << 32, __ATOMIC_SEQ_CST);
    for (t = 0; t < n_threads; t++)
        __atomic_store_n(&pk_ranges[t].claim, gen << 32 | PK_CLOSED, __ATOMIC_SEQ_CST);
    PK_SET(&pk_pool.body, body);
    PK_SET(&pk_pool.ctx, ctx);
    PK_SET(&pk_pool.items, items);
    PK_SET(&pk_pool.chunk, chunk);
    PK_SET(&pk_pool.nchunks, (uint32_t)nchunks);
    PK_SET(&pk_pool.n_threads, n_threads);
    PK_SET(&pk_pool.owner_cpu, pk_cpu());
    for (t = 0; t < n_threads; t++) {
        /* Release: a late thread that reads this end also sees the range closed above, so its
         * claim of the last generation fails instead of taking chunks of this one. */
        __atomic_store_n(&pk_ranges[t].end, (uint32_t)(nchunks * (t + 1) / n_threads), __ATOMIC_RELEASE);
        PK_SET(&pk_ranges[t].claim, gen << 32 | (uint32_t)(nchunks * t / n_threads));
    }
    __atomic_store_n(&pk_pool.done, 0, __ATOMIC_RELAXED);
    pk_start_workers(n_threads - 1);
    __atomic_store_n(&pk_pool.state, gen << 32 | 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pk_pool.sleepers, __ATOMIC_SEQ_CST) > 0) {
        pk_mutex_lock(&pk_pool.lock);
        pk_cond_broadcast(&pk_pool.wake);
        pk_mutex_unlock(&pk_pool.lock);
    }
    pk_claim_and_run((uint32_t)gen, 0, n_threads, 1);
    /* Every chunk is claimed: wait for the ones workers are still running. */
    while (PK_LOAD(&pk_pool.done) < nchunks) {
        if (++spins < 4096)
            PK_PAUSE();
        else
            pk_yield();  /* a worker may be waiting for this core */
    }
    __atomic_store_n(&pk_pool.busy, 0, __ATOMIC_RELEASE);
}

/* Since the process started: times a worker woke on its caller's CPU, and times it moved off. */
static void pk_stats(int64_t *beside_owner, int64_t *moved)
{
    *beside_owner = __atomic_load_n(&pk_pool.beside_owner, __ATOMIC_RELAXED);
    *moved = __atomic_load_n(&pk_pool.moved, __ATOMIC_RELAXED);
}

#else /* MSVC, or PK_POOL_OPENMP: an OpenMP loop where there is OpenMP */
#define PK_POOL 0

static void pk_parallel(pk_body body, void *ctx, Py_ssize_t items, Py_ssize_t chunk, int n_threads)
{
    Py_ssize_t nchunks;
    if (chunk < 1)
        chunk = 1;
    nchunks = (items + chunk - 1) / chunk;
    if (n_threads <= 1 || nchunks <= 1) {
        pk_serial(body, ctx, items, chunk);
        return;
    }
#ifdef _OPENMP
    {
        long long c;  /* MSVC's OpenMP 2.0 wants a signed loop index */
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
        for (c = 0; c < (long long)nchunks; c++) {
            Py_ssize_t begin = (Py_ssize_t)c * chunk;
            body(ctx, begin, items - begin > chunk ? begin + chunk : items, omp_get_thread_num());
        }
    }
#else
    pk_serial(body, ctx, items, chunk);
#endif
}

static void pk_stats(int64_t *beside_owner, int64_t *moved)
{
    *beside_owner = *moved = 0;
}

#endif /* PK_POOL */

#endif /* POOLING_POOL_H */
