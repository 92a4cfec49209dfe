/* meta.h - the data directory's meta.properties: the cluster id and node id, kept for good.
 *
 * Kafka writes meta.properties in every log directory; kcoord writes the same file (version,
 * cluster.id, node.id, directory.id) so the cluster id survives restarts and a data directory
 * cannot be served by a node it does not belong to.
 */
#ifndef KC_LOG_META_H
#define KC_LOG_META_H

#include <stddef.h>
#include <stdint.h>

/* Create `data_dir` if needed, then read its meta.properties, or create one with a new random
 * cluster id (22 characters of URL-safe base64, as Kafka's) when there is none. On success
 * copies the cluster id (NUL-terminated) into `cluster_id` and returns 0. On failure (I/O
 * error, unreadable file, node.id mismatch) returns -1 with a message in `err`. */
int kc_meta_load(const char *data_dir, int32_t node_id, char *cluster_id, size_t cluster_id_len,
                 char *err, size_t errlen);

/* The directory id of data_dir's meta.properties (22 characters of URL-safe base64, as
 * Kafka's directory.id; kc_meta_load gives every meta.properties one): 0, or -1 with err. */
int kc_meta_directory_id(const char *data_dir, char out[23], char *err, size_t errlen);

/* 16 bytes as a cluster id: the version-4 and variant bits set, 22 characters of URL-safe
 * base64 without padding, as Kafka writes cluster ids. */
void kc_meta_format_cluster_id(const uint8_t bytes[16], char out[23]);

/* The same, for a node of a cluster whose id is `want` (22 characters): a new meta.properties
 * gets it, and an existing one must have it (-1 otherwise: the directory is another
 * cluster's). want NULL: kc_meta_load. */
int kc_meta_load_as(const char *data_dir, int32_t node_id, const char *want, char *cluster_id,
                    size_t cluster_id_len, char *err, size_t errlen);

#endif
