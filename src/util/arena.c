/* arena.c - the per-request bump allocator declared in arena.h.
 *
 * Memory comes from a chain of malloc'd blocks, newest first. An allocation is carved from the
 * head block at the next 16-byte boundary; when the head cannot hold it, a new block is pushed
 * whose size is twice the head's (doubling stops at BLOCK_MAX), or the rounded request if that
 * is larger, so a big allocation gets a block of its own. Every allocation is zero-filled when
 * it is handed out, which lets kc_arena_reset reuse a block without clearing it.
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

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN           ((size_t)16)
#define BLOCK_MIN       ((size_t)4096)    /* usable size of the first block */
#define BLOCK_MAX       ((size_t)1 << 20) /* doubling stops here; larger requests get their own */
#define BLOCK_FIRST_MIN ((size_t)256)     /* the smallest first block kc_arena_init_sized gives */

struct kc_arena_block_s {
    kc_arena_block_t *next; /* older block */
    size_t size;            /* usable bytes at data; a multiple of ALIGN */
    unsigned char *data;    /* ALIGN-aligned, inside the same malloc as this header */
};

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
    kc_arena_block_t *b = malloc(overhead + size);
    if (b == NULL)
        return NULL;
    uintptr_t p = (uintptr_t)(b + 1);
    p = (p + (ALIGN - 1)) & ~(uintptr_t)(ALIGN - 1);
    b->next = NULL;
    b->size = size;
    b->data = (unsigned char *)p;
    return b;
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
        free(b);
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
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}
