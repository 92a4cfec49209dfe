/* coord.h - the coordinator room's door: the topic catalog (and, later, partitions and groups).
 *
 * The catalog is the set of topics consumers can subscribe to: name, topic id and partition
 * count. Their partitions hold no records. A topic's id is derived from the cluster id and the
 * topic name, so it is the same in every response and across restarts of the same data
 * directory (the cluster id is kept in meta.properties).
 */
#ifndef KC_COORD_COORD_H
#define KC_COORD_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "proto/wire.h"

typedef struct kc_topic_s {
    char *name;         /* owned, NUL-terminated */
    kc_uuid_t id;       /* never all-zero */
    int32_t partitions; /* >= 1 */
} kc_topic_t;

typedef struct kc_catalog_s {
    char *cluster_id;   /* owned copy */
    kc_topic_t *topics; /* n entries in the order they were added; owned */
    size_t n;
} kc_catalog_t;

/* Start a catalog for `cluster_id` holding the topics of the configuration. Returns 0, or -1
 * when out of memory. */
int kc_catalog_init(kc_catalog_t *cat, const char *cluster_id, const kc_conf_topic_t *topics,
                    size_t n);
void kc_catalog_free(kc_catalog_t *cat);

/* The topic called `name`, or NULL. The pointer is valid until the catalog changes. */
const kc_topic_t *kc_catalog_find(const kc_catalog_t *cat, kc_str_t name);
/* The topic with id `id`, or NULL. */
const kc_topic_t *kc_catalog_find_id(const kc_catalog_t *cat, kc_uuid_t id);

/* The topic id kcoord gives `name` in the cluster `cluster_id`: 128 bits of a hash of both,
 * with the RFC 4122 version (4) and variant bits set, never zero. */
kc_uuid_t kc_topic_id_for(const char *cluster_id, const char *name, size_t name_len);

#endif
