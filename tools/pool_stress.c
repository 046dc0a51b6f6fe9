/* Stress test of the kernels' thread pool (include/pooling_pool.h), for ThreadSanitizer:
 *
 *   gcc -O1 -g -fsanitize=thread -Iinclude $(python3-config --includes) tools/pool_stress.c \
 *       -o /tmp/pool_stress -lpthread && /tmp/pool_stress
 *
 * (tools/sanitize.sh runs it so, and built without the sanitizer.)  Jobs of random sizes, chunks
 * and thread counts from two calling threads at once, with pauses that let the workers fall
 * asleep, then a fork (not under ThreadSanitizer, which cannot follow one): every item must be run
 * exactly once, by a tid below the job's thread count, and never by two threads that share a tid
 * at one time.  Also checks pk_leave_cpu (a worker's move off its caller's CPU).  Exits non-zero
 * on the first violation.
 */
#include <Python.h>  /* Py_ssize_t only */

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pooling_pool.h"

#define MAX_ITEMS 20000

typedef struct {
    int *count;      /* times each item ran */
    int *busy;       /* per tid: 1 while a body runs with it */
    int n_threads;
    int failed;
} job_t;

static void body(void *ctx, Py_ssize_t begin, Py_ssize_t end, int tid)
{
    job_t *j = (job_t *)ctx;
    Py_ssize_t i;
    if (tid < 0 || tid >= j->n_threads || begin < 0 || begin >= end ||
        __atomic_exchange_n(&j->busy[tid], 1, __ATOMIC_ACQ_REL) != 0) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (i = begin; i < end; i++)
        __atomic_fetch_add(&j->count[i], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&j->busy[tid], 0, __ATOMIC_RELEASE);
}

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

static int run_jobs(unsigned seed, int jobs)
{
    static __thread int count[MAX_ITEMS];
    static __thread int busy[PK_MAX_THREADS];
    int k;
    for (k = 0; k < jobs; k++) {
        job_t j;
        Py_ssize_t items = 1 + next_random(&seed) % MAX_ITEMS, chunk = 1 + next_random(&seed) % 300, i;
        j.n_threads = 1 + next_random(&seed) % 6;
        j.count = count;
        j.busy = busy;
        j.failed = 0;
        memset(count, 0, sizeof(count));
        memset(busy, 0, sizeof(busy));
        if (next_random(&seed) % 8 == 0)
            usleep(3000);  /* past the workers' spin: they sleep, and wake late */
        pk_parallel(body, &j, items, chunk, j.n_threads);
        if (j.failed) {
            fprintf(stderr, "job %d: a body ran with a bad range or tid, or two at once on one tid\n", k);
            return 1;
        }
        for (i = 0; i < MAX_ITEMS; i++) {
            if (count[i] != (i < items)) {
                fprintf(stderr, "job %d: item %ld ran %d times (items %ld, chunk %ld, threads %d)\n",
                        k, (long)i, count[i], (long)items, (long)chunk, j.n_threads);
                return 1;
            }
        }
    }
    return 0;
}

/* pk_leave_cpu moves the thread off the CPU it names when another is allowed, and leaves the
 * affinity mask as it was either way. */
static int check_leave_cpu(void)
{
#if defined(__linux__)
    cpu_set_t mask, now, one;
    int cpu = pk_cpu(), moved;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 || cpu < 0)
        return 0;
    moved = pk_leave_cpu(cpu);
    if (sched_getaffinity(0, sizeof now, &now) != 0 || !CPU_EQUAL(&mask, &now)) {
        fprintf(stderr, "pk_leave_cpu changed the affinity mask\n");
        return 1;
    }
    if (CPU_COUNT(&mask) > 1 && (!moved || pk_cpu() == cpu)) {
        fprintf(stderr, "pk_leave_cpu stayed on CPU %d with %d allowed\n", cpu, CPU_COUNT(&mask));
        return 1;
    }
    CPU_ZERO(&one);
    CPU_SET(pk_cpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return 0;
    moved = pk_leave_cpu(pk_cpu());  /* nowhere to go */
    if (moved || sched_getaffinity(0, sizeof now, &now) != 0 || !CPU_EQUAL(&one, &now)) {
        fprintf(stderr, "pk_leave_cpu moved with one CPU allowed, or changed the mask\n");
        return 1;
    }
    sched_setaffinity(0, sizeof mask, &mask);
#endif
    return 0;
}

static void *second_caller(void *arg)
{
    return (void *)(intptr_t)run_jobs(7u, 300);
}

int main(void)
{
    pthread_t other;
    void *other_failed;
    int failed, status;
    pid_t pid;
    pk_spin_ns = 200000;  /* sleep sooner than the default, so the tests wake sleepers often */
    if (check_leave_cpu())
        return 1;
    if (pthread_create(&other, NULL, second_caller, NULL) != 0)
        return 2;
    failed = run_jobs(1u, 300);
    pthread_join(other, &other_failed);
    if (failed || other_failed)
        return 1;
#ifndef __SANITIZE_THREAD__
    pid = fork();  /* the child has no workers: it must start its own */
    if (pid == 0)
        _exit(run_jobs(3u, 100));
    failed = run_jobs(5u, 100);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    if (failed)
        return 1;
#else
    (void)pid;
    (void)status;
#endif
    {
        int64_t beside, moved;
        pk_stats(&beside, &moved);
        printf("pool stress: ok (%lld wakes beside the caller, %lld moved off)\n", (long long)beside,
               (long long)moved);
    }
    return 0;
}
