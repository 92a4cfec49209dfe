/* assign_internal.h - what the assignors share (assignor.c, assign_uniform.c); not part of the
 * group room's door.
 *
 * kc_assign__init turns a kc_assign_spec_t into a canonical, index-based model that every
 * assignor works on:
 *   - members are numbered by rank, 0..nm-1, in ascending member id order;
 *   - topics are numbered by rank, 0..nt-1, in ascending name order (table index on ties);
 *   - every partition of every topic has a global number g: pbase[k] + partition;
 *   - prev[g] is the rank of the member that currently owns g (after dropping entries that no
 *     longer make sense, see assignor.h), or -1;
 *   - sub_* lists each member's subscribed topics (ascending topic rank, no duplicates) and
 *     ts_* each topic's subscribers (ascending member rank).
 * An assignor fills owner[g] (a member rank, or -1 for a partition of a topic nobody
 * subscribes to) and calls kc_assign__finish, which builds the caller's result. Ties broken
 * by rank are therefore independent of the order of the caller's arrays.
 *
 * All memory comes from the context's arena (zero-filled), released by kc_assign__free.
 */
#ifndef KC_GROUP_ASSIGN_INTERNAL_H
#define KC_GROUP_ASSIGN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/assignor.h"
#include "util/arena.h"

typedef struct kc_assign_ctx_s {
    const kc_assign_spec_t *spec;
    kc_arena_t arena;
    uint32_t nm; /* members */
    uint32_t nt; /* topics */
    uint32_t np; /* partitions of all topics */

    uint32_t *m_idx;  /* member rank -> index in spec->members */
    uint32_t *t_idx;  /* topic rank -> index in spec->topics */
    uint32_t *t_rank; /* topic index -> rank */
    uint32_t *tcount; /* topic rank -> partition count */
    uint32_t *pbase;  /* topic rank -> first global partition number; nt + 1 entries */

    uint32_t *sub_off;   /* member rank -> [sub_off[r], sub_off[r + 1]) in sub_topic */
    uint32_t *sub_topic; /* topic ranks, ascending per member */
    uint32_t *ts_off;    /* topic rank -> [ts_off[k], ts_off[k + 1]) in ts_mem */
    uint32_t *ts_mem;    /* member ranks, ascending per topic */

    int32_t *prev;  /* global partition -> current owner rank, or -1 */
    int32_t *owner; /* global partition -> new owner rank, or -1; all -1 after init */
} kc_assign_ctx_t;

/* Build the model. 0, -EINVAL (invalid spec, see assignor.h) or -ENOMEM. Call
 * kc_assign__free whatever it returns. */
int kc_assign__init(kc_assign_ctx_t *c, const kc_assign_spec_t *spec);

/* Zero-filled scratch for n elements of `size` bytes from the context's arena; NULL when out
 * of memory (or past spec->mem_limit). */
void *kc_assign__alloc(kc_assign_ctx_t *c, size_t n, size_t size);

/* Build *out from c->owner (and the statistics from c->prev). 0 or -ENOMEM. */
int kc_assign__finish(kc_assign_ctx_t *c, kc_assign_result_t *out);

/* Release the context's memory. */
void kc_assign__free(kc_assign_ctx_t *c);

static inline uint32_t kc_assign__nsub(const kc_assign_ctx_t *c, uint32_t k)
{
    return c->ts_off[k + 1] - c->ts_off[k];
}

#endif
