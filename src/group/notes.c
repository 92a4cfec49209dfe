/* notes.c - which refusal reasons were already logged for a group (see notes.h). */
#include "group/notes.h"
#include "util/hash.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PER_GROUP 4 /* reasons remembered per group */

typedef struct note_s {
    uint64_t seen[PER_GROUP];
    int next;
    size_t len;
    char id[]; /* the map's key */
} note_t;

void kc_notes_init(kc_notes_t *n)
{
    kc_strmap_init(&n->map);
}

void kc_notes_free(kc_notes_t *n)
{
    for (size_t i = 0; i < n->map.cap; i++)
        free(kc_strmap_slot(&n->map, i));
    kc_strmap_free(&n->map);
}

static uint64_t hash(kc_str_t s)
{
    uint64_t h = kc_hash_fnv1a(KC_HASH_FNV1A_SEED, s.p, s.len > 0 ? (size_t)s.len : 0);
    return h | 1; /* 0 marks an empty slot */
}

bool kc_notes_first(kc_notes_t *n, kc_str_t group, kc_str_t reason)
{
    size_t len = group.len > 0 ? (size_t)group.len : 0;
    const char *id = len ? group.p : "";
    uint64_t h = hash(reason);
    note_t *e = kc_strmap_get(&n->map, id, len);
    if (!e) {
        if (n->map.n >= KC_NOTES_MAX) {
            kc_notes_free(n);
            kc_notes_init(n);
        }
        e = calloc(1, sizeof(*e) + len + 1);
        if (!e)
            return true;
        memcpy(e->id, id, len);
        e->len = len;
        if (kc_strmap_put(&n->map, e->id, len, e) != 0) {
            free(e);
            return true;
        }
    }
    for (int i = 0; i < PER_GROUP; i++)
        if (e->seen[i] == h)
            return false;
    e->seen[e->next] = h;
    e->next = (e->next + 1) % PER_GROUP;
    return true;
}
