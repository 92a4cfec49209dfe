/* strmap.h - a small string-keyed hash map (open addressing, linear probing).
 *
 * The map stores pointers: a key is a byte string (not necessarily NUL-terminated) that the
 * map does NOT copy; it must stay valid and unchanged while its entry is in the map. The usual
 * pattern is that the value owns the key's bytes (a member struct holding its own id).
 *
 * Deletion shifts the following entries back (no tombstones), so lookups stay short after any
 * number of deletions. Iterate with kc_strmap_slot over 0 <= i < m->cap; the map must not
 * change during an iteration (collect first, then delete).
 *
 * Only kc_strmap_put and kc_strmap_reserve allocate. Callers that must not fail halfway
 * through a change reserve first: after kc_strmap_reserve(m, k) succeeds, the next puts of
 * up to k new keys cannot fail.
 *
 * Written for the group room; generic enough to move to src/util/ when another room needs it.
 */
#ifndef KC_GROUP_STRMAP_H
#define KC_GROUP_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kc_strmap_slot_s {
    const char *key; /* NULL = free slot */
    void *val;
    uint32_t len;  /* keys are shorter than 4 GiB */
    uint32_t hash; /* the low bits of the key's hash: enough for any table that fits */
} kc_strmap_slot_t;

typedef struct kc_strmap_s {
    kc_strmap_slot_t *slots; /* cap entries, NULL until the first put */
    size_t cap;              /* 0 or a power of two */
    size_t n;                /* entries in use */
} kc_strmap_t;

/* An empty map; allocates nothing. */
void kc_strmap_init(kc_strmap_t *m);
/* Free the slot array (not the keys or values). The map may be initialised again. */
void kc_strmap_free(kc_strmap_t *m);

/* The value for `key`, or NULL. */
void *kc_strmap_get(const kc_strmap_t *m, const char *key, size_t len);

/* Make room so that `extra` more new keys can be put without allocating. 0, or -1 when out
 * of memory (the map is unchanged). */
int kc_strmap_reserve(kc_strmap_t *m, size_t extra);

/* Insert or replace. Returns 0, or -1 when out of memory or the key is 4 GiB or longer (the
 * map is unchanged). */
int kc_strmap_put(kc_strmap_t *m, const char *key, size_t len, void *val);

/* Remove `key`; returns its value, or NULL when it was absent. Never allocates. */
void *kc_strmap_del(kc_strmap_t *m, const char *key, size_t len);

/* The value in slot i (0 <= i < m->cap), or NULL when that slot is free. */
static inline void *kc_strmap_slot(const kc_strmap_t *m, size_t i)
{
    return m->slots[i].key ? m->slots[i].val : NULL;
}

#endif
