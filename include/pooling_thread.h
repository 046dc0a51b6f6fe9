/* The thread pool's platform layer (pooling_pool.h), on POSIX threads or Win32: a lock and a
 * condition variable, run-once, detached threads, a monotonic clock, the current CPU and a move off
 * it, spin hints, and fork handling (POSIX only: Windows has no fork).  Like the pool, it needs a
 * GCC-compatible compiler (gcc, clang, mingw-w64, clang-cl) for PK_PAUSE and PK_ALIGN64.
 */
#ifndef POOLING_THREAD_H
#define POOLING_THREAD_H

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#define PK_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(_M_ARM64)
#define PK_PAUSE() __asm__ __volatile__("yield")
#else
#define PK_PAUSE() ((void)0)
#endif

#define PK_ALIGN64 __attribute__((aligned(64)))

#if defined(_WIN32)

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX /* no min and max macros in C that includes this file */
#endif
#include <windows.h>
#include <process.h> /* _beginthreadex */

typedef SRWLOCK pk_mutex;
typedef CONDITION_VARIABLE pk_cond;
typedef INIT_ONCE pk_once_flag;
#define PK_ONCE_INIT INIT_ONCE_STATIC_INIT
typedef unsigned pk_thread_ret; /* a thread function: pk_thread_ret PK_THREAD_CALL f(void *) */
#define PK_THREAD_CALL __stdcall

static inline void pk_mutex_init(pk_mutex *m) { InitializeSRWLock(m); }
static inline void pk_mutex_lock(pk_mutex *m) { AcquireSRWLockExclusive(m); }
static inline void pk_mutex_unlock(pk_mutex *m) { ReleaseSRWLockExclusive(m); }
static inline void pk_cond_init(pk_cond *c) { InitializeConditionVariable(c); }
static inline void pk_cond_wait(pk_cond *c, pk_mutex *m)
{
    SleepConditionVariableSRW(c, m, INFINITE, 0);
}
static inline void pk_cond_broadcast(pk_cond *c) { WakeAllConditionVariable(c); }
static inline void pk_yield(void) { SwitchToThread(); }

typedef struct { void (*fn)(void); } pk_once_call; /* a function pointer may not pass as a void * */

static inline BOOL CALLBACK pk_once_trampoline(PINIT_ONCE once, PVOID call, PVOID *context)
{
    (void)once;
    (void)context;
    ((pk_once_call *)call)->fn();
    return TRUE;
}

static inline void pk_call_once(pk_once_flag *once, void (*fn)(void))
{
    pk_once_call call = {fn};
    InitOnceExecuteOnce(once, pk_once_trampoline, &call, NULL);
}

/* 0 once a detached thread runs fn(arg), -1 if none could start. */
static inline int pk_thread_start(pk_thread_ret (PK_THREAD_CALL *fn)(void *), void *arg)
{
    uintptr_t thread = _beginthreadex(NULL, 0, fn, arg, 0, NULL);
    if (thread == 0)
        return -1;
    CloseHandle((HANDLE)thread);
    return 0;
}

static inline int64_t pk_now_ns(void)
{
    LARGE_INTEGER t, f;
    QueryPerformanceCounter(&t);
    QueryPerformanceFrequency(&f);  /* fixed at boot; a read of shared memory */
    return t.QuadPart / f.QuadPart * 1000000000 + t.QuadPart % f.QuadPart * 1000000000 / f.QuadPart;
}

/* The CPU the calling thread runs on, unique across processor groups. */
static inline int pk_cpu(void)
{
    PROCESSOR_NUMBER p;
    GetCurrentProcessorNumberEx(&p);
    return p.Group * 64 + p.Number;
}

/* What the POSIX pk_leave_cpu below does on Linux, with the thread's affinity mask.  Only on
 * machines of one processor group (64 CPUs or fewer): a mask names CPUs of one group, and restoring
 * one could tie a thread that Windows 11 lets run in any group to its current one. */
static inline int pk_leave_cpu(int cpu)
{
    HANDLE self = GetCurrentThread();
    GROUP_AFFINITY now;
    DWORD_PTR others, old;
    if (cpu < 0 || cpu >= 64 || GetActiveProcessorGroupCount() != 1
        || !GetThreadGroupAffinity(self, &now))
        return 0;
    others = now.Mask & ~((DWORD_PTR)1 << cpu);
    if (others == 0 || (old = SetThreadAffinityMask(self, others)) == 0)
        return 0;
    SetThreadAffinityMask(self, old);
    return pk_cpu() != cpu;
}

static inline void pk_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    (void)prepare;
    (void)parent;
    (void)child;
}

#else /* POSIX threads */

#include <pthread.h>
#include <sched.h>
#include <time.h>

typedef pthread_mutex_t pk_mutex;
typedef pthread_cond_t pk_cond;
typedef pthread_once_t pk_once_flag;
#define PK_ONCE_INIT PTHREAD_ONCE_INIT
typedef void *pk_thread_ret;
#define PK_THREAD_CALL

static inline void pk_mutex_init(pk_mutex *m) { pthread_mutex_init(m, NULL); }
static inline void pk_mutex_lock(pk_mutex *m) { pthread_mutex_lock(m); }
static inline void pk_mutex_unlock(pk_mutex *m) { pthread_mutex_unlock(m); }
static inline void pk_cond_init(pk_cond *c) { pthread_cond_init(c, NULL); }
static inline void pk_cond_wait(pk_cond *c, pk_mutex *m) { pthread_cond_wait(c, m); }
static inline void pk_cond_broadcast(pk_cond *c) { pthread_cond_broadcast(c); }
static inline void pk_yield(void) { sched_yield(); }
static inline void pk_call_once(pk_once_flag *once, void (*fn)(void)) { pthread_once(once, fn); }

/* 0 once a detached thread runs fn(arg), -1 if none could start. */
static inline int pk_thread_start(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t thread;
    int err;
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    err = pthread_create(&thread, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return err == 0 ? 0 : -1;
}

static inline int64_t pk_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The CPU the calling thread runs on, or -1 where that cannot be known. */
static inline int pk_cpu(void)
{
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Move the calling thread off `cpu` (onto another CPU it may run on) and keep its affinity as it
 * was; whether it now runs elsewhere.  A worker woken onto the caller's CPU took turns with the
 * caller and made a large call slower than one thread (docs/threads.md#how-the-pool-works).
 * Dropping `cpu` from the mask makes the kernel migrate the thread now; restoring the mask read
 * here leaves it where it is. */
static inline int pk_leave_cpu(int cpu)
{
#if defined(__linux__)
    cpu_set_t mask, others;
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof mask, &mask) != 0)
        return 0;
    others = mask;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof others, &others) != 0)
        return 0;
    sched_setaffinity(0, sizeof mask, &mask);
    return pk_cpu() != cpu;
#else
    (void)cpu;
    return 0;
#endif
}

static inline void pk_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    pthread_atfork(prepare, parent, child);
}

#endif /* _WIN32 */

#endif /* POOLING_THREAD_H */
