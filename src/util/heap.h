/* heap.h - an intrusive binary min-heap of deadlines, for the timers of the group managers.
 *
 * An object with a timer embeds a kc_heap_node_t and is found again from it with
 * container_of. The heap keeps node pointers; each node knows its slot, so removing an object
 * or moving its deadline earlier is O(log n) with no search. A deadline that moves later is
 * left alone: the owner finds nothing due when it fires and pushes the object back at its
 * real deadline (timers that may fire early, never late).
 *
 * Memory: kc_heap_reserve makes room up front, so pushing cannot fail; the managers reserve a
 * slot per group when they create it.
 */
#ifndef KC_UTIL_HEAP_H
#define KC_UTIL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define KC_HEAP_NONE SIZE_MAX /* kc_heap_node_t.idx of a node not in the heap */

typedef struct kc_heap_node_s {
    size_t idx;  /* its slot, KC_HEAP_NONE when not in the heap */
    int64_t key; /* its deadline while in the heap */
} kc_heap_node_t;

typedef struct kc_heap_s {
    kc_heap_node_t **v;
    size_t n, cap;
} kc_heap_t;

/* The object that embeds `node` as its `member`. */
#define kc_heap_entry(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

/* A node that is in no heap. */
void kc_heap_node_init(kc_heap_node_t *x);

/* Room for `n` nodes in all. 0, or -1 when out of memory (nothing changed). */
int kc_heap_reserve(kc_heap_t *h, size_t n);

/* Put `x` (in no heap) in with deadline `key`; the room must have been reserved. */
void kc_heap_push(kc_heap_t *h, kc_heap_node_t *x, int64_t key);

/* Take `x` out; nothing when it is not in. */
void kc_heap_remove(kc_heap_t *h, kc_heap_node_t *x);

/* Make sure `x` is due no later than `key`: put it in, or move its deadline earlier. */
void kc_heap_arm(kc_heap_t *h, kc_heap_node_t *x, int64_t key);

/* The node due first, NULL when empty. */
static inline kc_heap_node_t *kc_heap_top(const kc_heap_t *h)
{
    return h->n ? h->v[0] : NULL;
}

void kc_heap_free(kc_heap_t *h);

#endif
