/* catalog.c - the topic catalog: which topics exist, their ids and partition counts.
 *
 * A small array searched linearly: a coordinator serves tens of topics, not millions. Topic
 * ids come from kc_topic_id_for, a keyed hash of the cluster id and the name. The array grows
 * by doubling when a topic is added; removal closes the gap, so the order stays the order of
 * addition. Each name is its own allocation, so names do not move when the array does.
 */
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"
#include "util/hash.h"

kc_uuid_t kc_topic_id_for(const char *cluster_id, const char *name, size_t name_len)
{
    static const uint8_t sep = 0;
    uint64_t a = kc_hash_fnv1a(KC_HASH_FNV1A_SEED, cluster_id, strlen(cluster_id));
    a = kc_hash_fnv1a(a, &sep, 1);
    a = kc_hash_fnv1a(a, name, name_len);
    uint64_t b = kc_hash_fnv1a(UINT64_C(0x84222325cbf29ce4), name, name_len);
    b = kc_hash_fnv1a(b, &sep, 1);
    b = kc_hash_fnv1a(b, cluster_id, strlen(cluster_id));
    uint64_t hi = kc_hash_fmix64(a ^ kc_hash_fmix64(b));
    uint64_t lo = kc_hash_fmix64(b + UINT64_C(0x9e3779b97f4a7c15) * (a | 1));
    kc_uuid_t id;
    for (int i = 0; i < 8; i++) {
        id.b[i] = (uint8_t)(hi >> (56 - 8 * i));
        id.b[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
    }
    id.b[6] = (uint8_t)((id.b[6] & 0x0f) | 0x40); /* version 4 layout */
    id.b[8] = (uint8_t)((id.b[8] & 0x3f) | 0x80); /* RFC 4122 variant: never all-zero */
    return id;
}

int kc_catalog_init(kc_catalog_t *cat, const char *cluster_id, const kc_conf_topic_t *topics,
                    size_t n)
{
    memset(cat, 0, sizeof(*cat));
    cat->cluster_id = strdup(cluster_id);
    cat->topics = n ? calloc(n, sizeof(*cat->topics)) : NULL;
    if (cat->cluster_id == NULL || (n && cat->topics == NULL)) {
        kc_catalog_free(cat);
        return -1;
    }
    cat->cap = n;
    cat->version = 1;
    for (size_t i = 0; i < n; i++) {
        kc_topic_t *t = &cat->topics[i];
        t->name = strdup(topics[i].name);
        if (t->name == NULL) {
            kc_catalog_free(cat);
            return -1;
        }
        t->partitions = topics[i].partitions;
        t->id = kc_topic_id_for(cluster_id, t->name, strlen(t->name));
        cat->n++;
    }
    return 0;
}

void kc_catalog_free(kc_catalog_t *cat)
{
    for (size_t i = 0; i < cat->n; i++)
        free(cat->topics[i].name);
    free(cat->topics);
    free(cat->cluster_id);
    memset(cat, 0, sizeof(*cat));
}

const kc_topic_t *kc_catalog_find(const kc_catalog_t *cat, kc_str_t name)
{
    if (name.len < 0)
        return NULL;
    for (size_t i = 0; i < cat->n; i++) {
        const kc_topic_t *t = &cat->topics[i];
        if (strlen(t->name) == (size_t)name.len && memcmp(t->name, name.p, (size_t)name.len) == 0)
            return t;
    }
    return NULL;
}

const kc_topic_t *kc_catalog_find_id(const kc_catalog_t *cat, kc_uuid_t id)
{
    for (size_t i = 0; i < cat->n; i++)
        if (memcmp(cat->topics[i].id.b, id.b, 16) == 0)
            return &cat->topics[i];
    return NULL;
}

int kc_catalog_add(kc_catalog_t *cat, kc_str_t name, int32_t partitions)
{
    if (kc_catalog_find(cat, name) != NULL)
        return KC_CATALOG_EXISTS;
    if (cat->n == cat->cap) {
        size_t cap = cat->cap ? 2 * cat->cap : 8;
        kc_topic_t *grown = realloc(cat->topics, cap * sizeof(*grown));
        if (grown == NULL)
            return KC_CATALOG_NOMEM;
        cat->topics = grown;
        cat->cap = cap;
    }
    char *copy = malloc((size_t)name.len + 1);
    if (copy == NULL)
        return KC_CATALOG_NOMEM;
    memcpy(copy, name.p, (size_t)name.len);
    copy[name.len] = '\0';
    kc_topic_t *t = &cat->topics[cat->n++];
    t->name = copy;
    t->partitions = partitions;
    t->id = kc_topic_id_for(cat->cluster_id, copy, (size_t)name.len);
    cat->version++;
    return KC_CATALOG_OK;
}

int kc_catalog_remove(kc_catalog_t *cat, kc_str_t name)
{
    const kc_topic_t *t = kc_catalog_find(cat, name);
    if (t == NULL)
        return -1;
    size_t i = (size_t)(t - cat->topics);
    free(cat->topics[i].name);
    memmove(&cat->topics[i], &cat->topics[i + 1], (cat->n - i - 1) * sizeof(*cat->topics));
    cat->n--;
    cat->version++;
    return 0;
}
