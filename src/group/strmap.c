/* strmap.c - a string-keyed hash map with linear probing and backward-shift deletion.
 *
 * The table is a power of two and kept at most 3/4 full. The hash is 64-bit FNV-1a, folded;
 * each slot caches its low 32 bits (a slot is 24 bytes), so growing never rehashes the keys
 * and probing compares lengths and hashes before bytes. See strmap.h for the contract.
 */
#include "group/strmap.h"
#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a from this seed (FNV's offset basis short of its last digit; kept, as it orders the
 * slots), with the high bits folded down: the index uses the low bits, and only the low 32
 * are kept (a table never has 2^32 slots). */
static uint32_t hash_bytes(const char *p, size_t n)
{
    return (uint32_t)kc_hash_fold(kc_hash_fnv1a(UINT64_C(1469598103934665603), p, n));
}

void kc_strmap_init(kc_strmap_t *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->n = 0;
}

void kc_strmap_free(kc_strmap_t *m)
{
    free(m->slots);
    kc_strmap_init(m);
}

static size_t find_slot(const kc_strmap_t *m, const char *key, size_t len, uint32_t h)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    for (;;) {
        const kc_strmap_slot_t *s = &m->slots[i];
        if (!s->key)
            return i;
        if (s->hash == h && s->len == len && (len == 0 || memcmp(s->key, key, len) == 0))
            return i;
        i = (i + 1) & mask;
    }
}

void *kc_strmap_get(const kc_strmap_t *m, const char *key, size_t len)
{
    if (m->n == 0 || len > UINT32_MAX)
        return NULL;
    size_t i = find_slot(m, key, len, hash_bytes(key, len));
    return m->slots[i].key ? m->slots[i].val : NULL;
}

static int grow(kc_strmap_t *m, size_t want)
{
    size_t cap = m->cap ? m->cap : 8;
    while (want * 4 > cap * 3)
        cap *= 2;
    if (cap == m->cap)
        return 0;
    kc_strmap_slot_t *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        kc_strmap_slot_t *s = &m->slots[i];
        if (!s->key)
            continue;
        size_t j = (size_t)s->hash & (cap - 1);
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int kc_strmap_reserve(kc_strmap_t *m, size_t extra)
{
    return grow(m, m->n + extra);
}

int kc_strmap_put(kc_strmap_t *m, const char *key, size_t len, void *val)
{
    if (len > UINT32_MAX)
        return -1;
    uint32_t h = hash_bytes(key, len);
    if (m->cap) {
        size_t i = find_slot(m, key, len, h);
        if (m->slots[i].key) {
            m->slots[i].key = key;
            m->slots[i].val = val;
            return 0;
        }
    }
    if (grow(m, m->n + 1) != 0)
        return -1;
    size_t i = find_slot(m, key, len, h);
    m->slots[i] = (kc_strmap_slot_t){key, val, (uint32_t)len, h};
    m->n++;
    return 0;
}

void *kc_strmap_del(kc_strmap_t *m, const char *key, size_t len)
{
    if (m->n == 0 || len > UINT32_MAX)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = find_slot(m, key, len, hash_bytes(key, len));
    if (!m->slots[i].key)
        return NULL;
    void *val = m->slots[i].val;
    /* Backward-shift: move later entries of the probe run into the hole when their home
     * slot does not lie cyclically in (hole, j]. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        kc_strmap_slot_t *s = &m->slots[j];
        if (!s->key)
            break;
        size_t home = (size_t)s->hash & mask;
        int in_range = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (in_range)
            continue;
        m->slots[i] = *s;
        i = j;
    }
    m->slots[i] = (kc_strmap_slot_t){0};
    m->n--;
    return val;
}
