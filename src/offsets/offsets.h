/* offsets.h - the offsets room's door: committed offsets of one __consumer_offsets partition.
 *
 * A kc_offsets_t keeps, for every (group, topic, partition) of the groups that hash to one
 * partition, the last committed offset with its leader epoch, metadata and timestamps. Every
 * change is also emitted as the record Kafka would append to __consumer_offsets (through the
 * `record` callback): OffsetCommitKey v1 with OffsetCommitValue v3, or v1 when the commit
 * carries an explicit expire timestamp (OffsetCommit v2-v4 retention time); a tombstone (NULL
 * value) for a deleted or expired offset. Like the group room it never reads a clock or
 * touches a file: times are given by the caller.
 */
#ifndef KC_OFFSETS_OFFSETS_H
#define KC_OFFSETS_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

typedef struct kc_offsets_s kc_offsets_t;

/* One committed offset. `metadata` is owned by the store (a view valid until that offset
 * changes or is removed). */
typedef struct kc_offset_s {
    int64_t offset;
    int32_t leader_epoch;    /* -1 when unknown */
    kc_str_t metadata;       /* never null: "" when none */
    int64_t commit_ts_ms;    /* wall-clock time of the commit, as Kafka stores it */
    int64_t expire_ts_ms;    /* -1 unless the commit set a retention time (v2-v4) */
} kc_offset_t;

typedef struct kc_offsets_ops_s {
    void *ctx;
    /* A record for __consumer_offsets (see the file comment). Valid only during the call. */
    void (*record)(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len);
} kc_offsets_ops_t;

/* A new, empty store; NULL when out of memory. */
kc_offsets_t *kc_offsets_new(const kc_offsets_ops_t *ops);
void kc_offsets_free(kc_offsets_t *o);

/* Store a commit (copying the metadata) and emit its record. Returns 0, or -1 when out of
 * memory (nothing changed). */
int kc_offsets_commit(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition,
                      const kc_offset_t *value);

/* The committed offset, or NULL. Valid until the store changes. */
const kc_offset_t *kc_offsets_get(const kc_offsets_t *o, kc_str_t group, kc_str_t topic,
                                  int32_t partition);

/* Call fn for every offset of `group`, ordered by topic name then partition. fn must not
 * change the store. */
void kc_offsets_each(const kc_offsets_t *o, kc_str_t group,
                     void (*fn)(void *arg, kc_str_t topic, int32_t partition,
                                const kc_offset_t *value),
                     void *arg);

/* Number of offsets `group` has. */
size_t kc_offsets_count(const kc_offsets_t *o, kc_str_t group);

/* Whether `group` has any offset for `topic`. */
bool kc_offsets_has_topic(const kc_offsets_t *o, kc_str_t group, kc_str_t topic);

/* Delete one offset (tombstone). Returns true when it existed. */
bool kc_offsets_delete(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition);

/* Delete every offset of a group, or of a topic in every group (DeleteTopics); tombstones
 * for each. Return how many were deleted. */
size_t kc_offsets_delete_group(kc_offsets_t *o, kc_str_t group);
size_t kc_offsets_delete_topic(kc_offsets_t *o, kc_str_t topic);

/* How retention applies to one group, asked of the group room by the caller's callback. */
typedef struct kc_offsets_retention_s {
    bool expirable;   /* false: none of this group's offsets expire now */
    int64_t base_ms;  /* -1: count from each offset's commit time; else from this time */
    /* Offsets of topics for which this returns true never expire (subscribed topics of a
     * live consumer group). May be NULL. */
    bool (*protected_topic)(void *arg, kc_str_t group, kc_str_t topic);
    void *arg;
} kc_offsets_retention_t;

/* KIP-211 expiry at wall-clock time `now_ms` with `retention_ms` (offsets.retention.minutes):
 * an offset expires when its explicit expire timestamp has passed, or else when
 * base + retention_ms <= now. `policy` is called once per group to fill its retention.
 * Expired offsets are removed with tombstones. For each group that lost all its offsets,
 * `emptied(arg, group)` is called (the caller removes an Empty group then). Returns the
 * number of offsets removed. */
size_t kc_offsets_expire(kc_offsets_t *o, int64_t now_ms, int64_t retention_ms,
                         void (*policy)(void *arg, kc_str_t group, kc_offsets_retention_t *out),
                         void (*emptied)(void *arg, kc_str_t group), void *arg);

#endif
