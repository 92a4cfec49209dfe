/* arena.h - a bump allocator for memory that lives exactly as long as one request.
 *
 * A decoded request's arrays, the handler's scratch and the response being built all come
 * from one arena, released in one call when the response has been written. Blocks grow
 * geometrically; nothing is freed individually.
 */
#ifndef KC_UTIL_ARENA_H
#define KC_UTIL_ARENA_H

#include <stddef.h>

typedef struct kc_arena_block_s kc_arena_block_t;

typedef struct kc_arena_s {
    kc_arena_block_t *head; /* newest block; owns the chain */
    size_t used;            /* bytes used in head */
    size_t total;           /* bytes handed out over the arena's life */
    size_t limit;           /* 0 = unlimited; otherwise kc_arena_alloc fails past it */
    int over_limit;         /* set when an allocation failed because of `limit` */
    size_t first;           /* usable size of the first block; 0 = the default (4 KiB) */
} kc_arena_t;

/* Initialise an empty arena. No memory is allocated until the first kc_arena_alloc. */
void kc_arena_init(kc_arena_t *a);

/* The same, with a first block of `first` bytes (at least 256) instead of 4 KiB: for arenas
 * that may be held long (a parked request) and usually need little, so that many of them held
 * at once cost what they use. Later blocks double from there as usual. */
void kc_arena_init_sized(kc_arena_t *a, size_t first);

/* Return `n` bytes aligned for any type, zero-filled, valid until kc_arena_reset or
 * kc_arena_free. Returns NULL when memory is exhausted or the arena's limit is reached. */
void *kc_arena_alloc(kc_arena_t *a, size_t n);

/* Copy `n` bytes of `src` into the arena; NULL on failure. */
void *kc_arena_dup(kc_arena_t *a, const void *src, size_t n);

/* Release everything but keep the first block for reuse. */
void kc_arena_reset(kc_arena_t *a);

/* Release every block. The arena may be initialised again. */
void kc_arena_free(kc_arena_t *a);

#endif
