/* Reuse of large result blocks: numpy's memory handler "pooling_results" (pooling._runtime).
 *
 * A block of 32 MiB or more that a result array frees is kept, up to a few of them and a bound
 * on the bytes held, and the next result of exactly that many bytes takes it back instead of
 * asking the system for new memory.  glibc maps every block this large straight from the system
 * and unmaps it on free (32 MiB is its largest dynamic mmap threshold), so without this each call
 * of a loop would write its result into fresh pages, which the system first zeroes one by one as
 * they are touched, at a cost that can pass the kernel's own (docs/tuning.md#result-cache).
 * (Smaller blocks glibc already reuses from its heap.)
 *
 * Only results of `pooling`'s operators are allocated under this handler (pooling._outputs sets
 * it around np.empty, and only where numpy's default handler is the current one: a handler the
 * user chose is left alone).  Every fresh block comes from numpy's default handler, and every
 * block that is not kept goes back to it, so hugepage advice, tracemalloc and numpy's own small
 * block cache work as before.  The array records its handler, so its free comes here whatever
 * handler is current then.
 *
 * Every block this handler hands out starts on a 64-byte boundary (PK_RESULT_ALIGN), a cache line:
 * numpy's own blocks start 16 bytes into one, and a kernel that streams its result past the caches
 * in whole lines then has a part line at each row's ends (docs/tuning.md#result-alignment).  The
 * block from numpy's default handler is PK_RESULT_PAD bytes longer; the 16 bytes before the
 * aligned start record where it begins and how long it is.
 *
 * Thread-safe: one lock around the table (numpy calls these with or without the GIL).
 */
#ifndef POOLING_RESULTS_H
#define POOLING_RESULTS_H

#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <string.h>
#include <numpy/arrayobject.h>

#define PK_KEEP_SLOTS 4
/* glibc maps blocks from this size on straight from the system (its largest dynamic mmap threshold):
 * an allocator threshold, not a cache size (docs/tuning.md, "Allocator thresholds"). */
#define PK_KEEP_MIN ((size_t)32 << 20)

typedef struct {
    void* ptr;
    size_t size;
} pk_kept_block;

static pk_kept_block pk_kept[PK_KEEP_SLOTS]; /* oldest first */
static int pk_kept_count;
static size_t pk_kept_bytes;
static size_t pk_keep_limit = (size_t)256 << 20;
static PyThread_type_lock pk_keep_lock;
static PyDataMemAllocator pk_default_allocator;

#define PK_RESULT_ALIGN 64
/* Room for the header (16 bytes) and the alignment, from any block aligned to at least 8 bytes. */
#define PK_RESULT_PAD (PK_RESULT_ALIGN + 16)

typedef struct {
    void* raw;         /* the block numpy's default handler gave */
    size_t raw_size;   /* its bytes */
} pk_result_header;

/* The aligned start inside `raw` (raw_size bytes from the default handler), its header written;
 * NULL where raw is. */
static void* pk_result_place(void* raw, size_t raw_size) {
    if (!raw) return NULL;
    uintptr_t start = ((uintptr_t)raw + 16 + PK_RESULT_ALIGN - 1) & ~(uintptr_t)(PK_RESULT_ALIGN - 1);
    pk_result_header h = {raw, raw_size};
    memcpy((char*)start - sizeof h, &h, sizeof h);
    return (void*)start;
}

static pk_result_header pk_result_header_of(void* ptr) {
    pk_result_header h;
    memcpy(&h, (char*)ptr - sizeof h, sizeof h);
    return h;
}

/* A fresh aligned block of `size` bytes (zeroed where `zeros`); NULL if there is no memory. */
static void* pk_result_new(size_t size, int zeros) {
    if (size > (size_t)-1 - PK_RESULT_PAD) return NULL;
    size_t raw_size = size + PK_RESULT_PAD;
    void* raw = zeros ? pk_default_allocator.calloc(pk_default_allocator.ctx, 1, raw_size)
                      : pk_default_allocator.malloc(pk_default_allocator.ctx, raw_size);
    return pk_result_place(raw, raw_size);
}

static void pk_result_release(void* ptr) {
    if (!ptr) return;
    pk_result_header h = pk_result_header_of(ptr);
    pk_default_allocator.free(pk_default_allocator.ctx, h.raw, h.raw_size);
}

static void* pk_results_malloc(void* ctx, size_t size) {
    (void)ctx;
    if (size >= PK_KEEP_MIN) {
        void* found = NULL;
        PyThread_acquire_lock(pk_keep_lock, WAIT_LOCK);
        for (int i = pk_kept_count - 1; i >= 0; i--) { /* the newest of that size */
            if (pk_kept[i].size == size) {
                found = pk_kept[i].ptr;
                memmove(pk_kept + i, pk_kept + i + 1, (size_t)(pk_kept_count - i - 1) * sizeof(pk_kept_block));
                pk_kept_count--;
                pk_kept_bytes -= size;
                break;
            }
        }
        PyThread_release_lock(pk_keep_lock);
        if (found) return found;
    }
    return pk_result_new(size, 0);
}

static void* pk_results_calloc(void* ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize && nelem > (size_t)-1 / elsize) return NULL;
    return pk_result_new(nelem * elsize, 1);
}

static void* pk_results_realloc(void* ctx, void* ptr, size_t new_size) {
    (void)ctx;
    if (!ptr) return pk_result_new(new_size, 0);
    void* moved = pk_result_new(new_size, 0);
    if (!moved) return NULL;  /* ptr stays valid, as realloc's contract says */
    pk_result_header h = pk_result_header_of(ptr);
    /* (old_size counts the block's padding past the array too: bytes whose values realloc leaves
     * unspecified anyway, inside the block) */
    size_t old_size = h.raw_size - (size_t)((char*)ptr - (char*)h.raw);
    memcpy(moved, ptr, old_size < new_size ? old_size : new_size);
    pk_default_allocator.free(pk_default_allocator.ctx, h.raw, h.raw_size);
    return moved;
}

/* Keep the blocks of the newest `count` entries whose bytes fit under `limit`; hand the others
 * (oldest first) to `out`, to be freed outside the lock.  Returns how many went to `out`. */
static int pk_keep_trim(int count, size_t limit, pk_kept_block* out) {
    int n = 0;
    while (pk_kept_count > count || (pk_kept_count && pk_kept_bytes > limit)) {
        out[n++] = pk_kept[0];
        pk_kept_bytes -= pk_kept[0].size;
        pk_kept_count--;
        memmove(pk_kept, pk_kept + 1, (size_t)pk_kept_count * sizeof(pk_kept_block));
    }
    return n;
}

static void pk_keep_free_all(const pk_kept_block* blocks, int n) {
    for (int i = 0; i < n; i++) pk_result_release(blocks[i].ptr);
}

static void pk_results_free(void* ctx, void* ptr, size_t size) {
    (void)ctx;
    if (ptr && size >= PK_KEEP_MIN) {
        pk_kept_block gone[PK_KEEP_SLOTS + 1];
        int n = 0, kept = 0;
        PyThread_acquire_lock(pk_keep_lock, WAIT_LOCK);
        if (size <= pk_keep_limit) {
            /* Room for it first: the oldest blocks go. */
            n = pk_keep_trim(PK_KEEP_SLOTS - 1, pk_keep_limit - size, gone);
            pk_kept[pk_kept_count].ptr = ptr;
            pk_kept[pk_kept_count].size = size;
            pk_kept_count++;
            pk_kept_bytes += size;
            kept = 1;
        }
        PyThread_release_lock(pk_keep_lock);
        pk_keep_free_all(gone, n);
        if (kept) return;
    }
    pk_result_release(ptr);
}

static PyDataMem_Handler pk_results_handler = {
    "pooling_results",
    1,
    {NULL, pk_results_malloc, pk_results_calloc, pk_results_realloc, pk_results_free},
};

/* Free the oldest blocks until at most `count` are held, within the limit on bytes (set to
 * *limit first, unless limit is NULL).  Returns the bytes freed. */
static size_t pk_keep_shrink(int count, const size_t* limit) {
    pk_kept_block gone[PK_KEEP_SLOTS];
    size_t freed = 0;
    PyThread_acquire_lock(pk_keep_lock, WAIT_LOCK);
    if (limit) pk_keep_limit = *limit;
    int n = pk_keep_trim(count, pk_keep_limit, gone);
    PyThread_release_lock(pk_keep_lock);
    for (int i = 0; i < n; i++) freed += gone[i].size;
    pk_keep_free_all(gone, n);
    return freed;
}

static size_t pk_keep_get_limit(void) {
    PyThread_acquire_lock(pk_keep_lock, WAIT_LOCK);
    size_t limit = pk_keep_limit;
    PyThread_release_lock(pk_keep_lock);
    return limit;
}

/* 1 when a kept block of exactly `size` bytes is held (the next result of that size takes it). */
static int pk_keep_has(size_t size) {
    int found = 0;
    PyThread_acquire_lock(pk_keep_lock, WAIT_LOCK);
    for (int i = 0; i < pk_kept_count && !found; i++) found = pk_kept[i].size == size;
    PyThread_release_lock(pk_keep_lock);
    return found;
}

static size_t pk_keep_held(void) {
    PyThread_acquire_lock(pk_keep_lock, WAIT_LOCK);
    size_t held = pk_kept_bytes;
    PyThread_release_lock(pk_keep_lock);
    return held;
}

/* Once, at import: numpy's C API, the lock and numpy's default allocator.  -1 with an exception
 * set on failure. */
static int pk_results_init(void) {
    if (_import_array() < 0) return -1;
    pk_keep_lock = PyThread_allocate_lock();
    if (!pk_keep_lock) {
        PyErr_NoMemory();
        return -1;
    }
    PyDataMem_Handler* numpy_default = (PyDataMem_Handler*)PyCapsule_GetPointer(PyDataMem_DefaultHandler, "mem_handler");
    if (!numpy_default) return -1;
    pk_default_allocator = numpy_default->allocator;
    return 0;
}

#endif
