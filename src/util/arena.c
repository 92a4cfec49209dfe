/* arena.c - the per-request bump allocator declared in arena.h.
 *
 * Memory comes from a chain of blocks, newest first: up to 16 KiB from the block pool below,
 * larger ones from malloc. An allocation is carved from the head block at the next 16-byte
 * boundary; when the head cannot hold it, a new block is pushed whose size is twice the head's
 * (doubling stops at BLOCK_MAX), or the rounded request if that is larger, so a big allocation
 * gets a block of its own. A pooled block is as large as its size class allows. Every
 * allocation is zero-filled when it is handed out, which lets kc_arena_reset reuse a block
 * without clearing it.
 *
 * `total` counts the bytes requested (not the rounded ones) since kc_arena_init or the last
 * kc_arena_reset, and `limit` is checked against it: a request that would take `total` past
 * `limit` fails without allocating anything.
 *
 * A request for 0 bytes returns a non-NULL pointer that must not be dereferenced (it may
 * equal the next allocation's pointer).
 *
 * All size arithmetic is checked: a request larger than PTRDIFF_MAX, or whose rounded size or
 * block size would overflow size_t, fails with NULL instead of wrapping.
 */
#include "util/arena.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN           ((size_t)16)
#define BLOCK_MIN       ((size_t)4032)    /* usable size of the first block (a 4 KiB one) */
#define BLOCK_MAX       ((size_t)1 << 20) /* doubling stops here; larger requests get their own */
#define BLOCK_FIRST_MIN ((size_t)256)     /* the smallest first block kc_arena_init_sized gives */

struct kc_arena_block_s {
    kc_arena_block_t *next; /* older block */
    size_t size;            /* usable bytes at data; a multiple of ALIGN */
    unsigned char *data;    /* ALIGN-aligned, inside the same allocation as this header */
    int cls;                /* the pool class it came from, or -1: malloc'd */
};

/* ---- The block pool ---------------------------------------------------------------------
 *
 * Arena blocks live as long as a request, and thousands may be held at once (parked
 * JoinGroups while a fleet of consumers joins). From malloc, they land between the long-lived
 * allocations made meanwhile (members, their strings), and once freed leave holes the process
 * keeps. Blocks of up to POOL_MAX bytes come instead from regions of their own (POOL_REGION
 * bytes, aligned so a block finds its region by masking its address), one size class per
 * region, and a region whose blocks are all free goes back to the system (one per class is
 * kept). A mutex guards the pool: arenas are used on the loop and on the thread pool.
 * Sanitizer builds use malloc for every block, so that out-of-bounds accesses are caught. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ENABLED 0
#endif
#endif
#ifndef POOL_ENABLED
#define POOL_ENABLED 1
#endif

#define POOL_REGION  ((size_t)256 * 1024)
#define POOL_CLASSES 6 /* blocks of 512 B to 16 KiB, header included */
#define POOL_MAX     ((size_t)512 << (POOL_CLASSES - 1))

typedef struct region_s {
    struct region_s *next, *prev; /* the regions of its class that have a free block */
    void *free;                   /* freed blocks; the first word links them */
    unsigned char *bump, *end;    /* blocks never handed out yet */
    uint32_t used;                /* blocks handed out */
    int cls;
    bool listed;
} region_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static region_t *pool_avail[POOL_CLASSES];

static size_t class_bytes(int cls)
{
    return (size_t)512 << cls;
}

static void region_list(region_t *r)
{
    r->prev = NULL;
    r->next = pool_avail[r->cls];
    if (r->next)
        r->next->prev = r;
    pool_avail[r->cls] = r;
    r->listed = true;
}

static void region_unlist(region_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        pool_avail[r->cls] = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->listed = false;
}

static region_t *region_new(int cls)
{
    unsigned char *m =
        mmap(NULL, 2 * POOL_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + POOL_REGION - 1) & ~(uintptr_t)(POOL_REGION - 1);
    unsigned char *r0 = (unsigned char *)a;
    if (r0 > m)
        munmap(m, (size_t)(r0 - m));
    if (m + 2 * POOL_REGION > r0 + POOL_REGION)
        munmap(r0 + POOL_REGION, (size_t)(m + 2 * POOL_REGION - (r0 + POOL_REGION)));
    region_t *r = (region_t *)r0;
    memset(r, 0, sizeof(*r));
    r->cls = cls;
    r->bump = r0 + ((sizeof(region_t) + 63) & ~(size_t)63);
    r->end = r0 + POOL_REGION;
    return r;
}

/* A pooled block of class `cls`, or NULL. */
static void *pool_get(int cls)
{
    size_t n = class_bytes(cls);
    pthread_mutex_lock(&pool_lock);
    region_t *r = pool_avail[cls];
    if (r == NULL && (r = region_new(cls)) != NULL)
        region_list(r);
    void *p = NULL;
    if (r != NULL) {
        if (r->free != NULL) {
            p = r->free;
            memcpy(&r->free, p, sizeof(void *));
        } else {
            p = r->bump;
            r->bump += n;
        }
        r->used++;
        if (r->free == NULL && (size_t)(r->end - r->bump) < n)
            region_unlist(r);
    }
    pthread_mutex_unlock(&pool_lock);
    return p;
}

static void pool_put(void *p)
{
    region_t *r = (region_t *)((uintptr_t)p & ~(uintptr_t)(POOL_REGION - 1));
    pthread_mutex_lock(&pool_lock);
    memcpy(p, &r->free, sizeof(void *));
    r->free = p;
    r->used--;
    if (!r->listed)
        region_list(r);
    if (r->used == 0 && (pool_avail[r->cls] != r || r->next != NULL)) {
        region_unlist(r);
        munmap(r, POOL_REGION);
    }
    pthread_mutex_unlock(&pool_lock);
}

/* Round n up to a multiple of ALIGN into *out. Returns false when that overflows. */
static bool round_up(size_t n, size_t *out)
{
    if (n > SIZE_MAX - (ALIGN - 1))
        return false;
    *out = (n + (ALIGN - 1)) & ~(ALIGN - 1);
    return true;
}

/* Allocate a block with `size` usable bytes (a multiple of ALIGN). NULL on failure. */
static kc_arena_block_t *block_new(size_t size)
{
    size_t overhead = sizeof(kc_arena_block_t) + (ALIGN - 1);
    if (size > SIZE_MAX - overhead)
        return NULL;
    kc_arena_block_t *b = NULL;
    int cls = -1;
    if (POOL_ENABLED && overhead + size <= POOL_MAX) {
        cls = 0;
        while (class_bytes(cls) < overhead + size)
            cls++;
        b = pool_get(cls);
        if (b != NULL) /* the class's whole room is usable */
            size = (class_bytes(cls) - overhead) & ~(ALIGN - 1);
    }
    if (b == NULL) {
        cls = -1;
        b = malloc(overhead + size);
    }
    if (b == NULL)
        return NULL;
    b->cls = cls;
    uintptr_t p = (uintptr_t)(b + 1);
    p = (p + (ALIGN - 1)) & ~(uintptr_t)(ALIGN - 1);
    b->next = NULL;
    b->size = size;
    b->data = (unsigned char *)p;
    return b;
}

static void block_free(kc_arena_block_t *b)
{
    if (b->cls >= 0)
        pool_put(b);
    else
        free(b);
}

void kc_arena_init(kc_arena_t *a)
{
    a->head = NULL;
    a->used = 0;
    a->total = 0;
    a->limit = 0;
    a->over_limit = 0;
    a->first = 0;
}

void kc_arena_init_sized(kc_arena_t *a, size_t first)
{
    kc_arena_init(a);
    if (first < BLOCK_FIRST_MIN)
        first = BLOCK_FIRST_MIN;
    if (first > BLOCK_MAX)
        first = BLOCK_MAX;
    a->first = (first + (ALIGN - 1)) & ~(ALIGN - 1);
}

void *kc_arena_alloc(kc_arena_t *a, size_t n)
{
    if (a->limit != 0 && (a->total > a->limit || n > a->limit - a->total)) {
        a->over_limit = 1;
        return NULL;
    }

    /* No object may exceed PTRDIFF_MAX (glibc's malloc refuses them too); this also keeps every
     * size computed below far from overflowing. */
    size_t need;
    if (n > (size_t)PTRDIFF_MAX || !round_up(n, &need))
        return NULL;

    if (a->head == NULL || need > a->head->size - a->used) {
        size_t size = a->first != 0 ? a->first : BLOCK_MIN;
        if (a->head != NULL) {
            size = a->head->size;
            if (size < BLOCK_MAX)
                size = size * 2 > BLOCK_MAX ? BLOCK_MAX : size * 2;
        }
        if (size < need)
            size = need;
        kc_arena_block_t *b = block_new(size);
        if (b == NULL)
            return NULL;
        b->next = a->head;
        a->head = b;
        a->used = 0;
    }

    unsigned char *p = a->head->data + a->used;
    a->used += need;
    a->total += n;
    if (n > 0)
        memset(p, 0, n);
    return p;
}

void *kc_arena_dup(kc_arena_t *a, const void *src, size_t n)
{
    void *p = kc_arena_alloc(a, n);
    if (p != NULL && n > 0)
        memcpy(p, src, n);
    return p;
}

void kc_arena_reset(kc_arena_t *a)
{
    kc_arena_block_t *b = a->head;
    if (b == NULL)
        return;
    /* The first block is the oldest one, at the tail of the chain. */
    while (b->next != NULL) {
        kc_arena_block_t *next = b->next;
        block_free(b);
        b = next;
    }
    a->head = b;
    a->used = 0;
    a->total = 0;
}

void kc_arena_free(kc_arena_t *a)
{
    kc_arena_block_t *b = a->head;
    while (b != NULL) {
        kc_arena_block_t *next = b->next;
        block_free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}
