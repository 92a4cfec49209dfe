/* offsets.h - the offsets room's door: committed offsets of one __consumer_offsets partition.
 *
 * A kc_offsets_t keeps, for every (group, topic, partition) of the groups that hash to one
 * partition, the last committed offset with its leader epoch, metadata and timestamps. Every
 * change is also emitted as the record Kafka would append to __consumer_offsets (through the
 * `record` callback): key = int16 1 + OffsetCommitKey {group, topic, partition}; value = int16 3
 * + OffsetCommitValue v3 {offset, leader epoch, metadata, commit timestamp}, or int16 1 + v1
 * {offset, metadata, commit timestamp, expire timestamp} when the commit carries an explicit
 * expire timestamp (OffsetCommit v2-v4 retention time); a tombstone (NULL value) for a deleted
 * or expired offset. Byte layout: the file comment of offsets.c. Like the group room it never
 * reads a clock or touches a file: times are given by the caller.
 *
 * Callbacks (record, policy, protected_topic, emptied, each's fn) may read the store but must
 * not change it.
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
    int32_t leader_epoch; /* -1 when unknown */
    kc_str_t metadata;    /* never null: "" when none */
    int64_t commit_ts_ms; /* wall-clock time of the commit, as Kafka stores it */
    int64_t expire_ts_ms; /* -1 unless the commit set a retention time (v2-v4) */
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

/* Store a commit (copying the metadata; a null metadata is stored as "") and emit its record.
 * With an explicit expire timestamp the value is written as v1, which has no leader epoch, so
 * the leader epoch is stored as -1 (only OffsetCommit v2-v4 set a retention time, and they carry
 * no leader epoch anyway). Returns 0; -1 when out of memory; -2 when the group or topic is null
 * or a string is longer than an int16-length string can hold (32767 bytes). On error nothing
 * changed and no record was emitted. */
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

/* Call fn for every group that has offsets, with how many, in no particular order (after a
 * load: the groups Kafka would create as simple groups). fn must not change the store. */
void kc_offsets_each_group(const kc_offsets_t *o,
                           void (*fn)(void *arg, kc_str_t group, size_t count), void *arg);

/* Number of offsets `group` has. */
size_t kc_offsets_count(const kc_offsets_t *o, kc_str_t group);
/* Number of offsets, and of groups with at least one offset, in the whole store. */
size_t kc_offsets_total(const kc_offsets_t *o);
size_t kc_offsets_groups(const kc_offsets_t *o);

/* Whether `group` has any offset for `topic`. */
bool kc_offsets_has_topic(const kc_offsets_t *o, kc_str_t group, kc_str_t topic);

/* Delete one offset (tombstone). Returns true when it existed. Deleting never allocates, so
 * it cannot fail. A group left without offsets is forgotten here without any callback (Kafka
 * deletes such a group, if Empty, at its next retention run: the group room asks
 * kc_offsets_count). */
bool kc_offsets_delete(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition);

/* Delete every offset of a group (ordered by topic then partition), or of a topic in every
 * group (DeleteTopics); a tombstone for each. Return how many were deleted. */
size_t kc_offsets_delete_group(kc_offsets_t *o, kc_str_t group);
size_t kc_offsets_delete_topic(kc_offsets_t *o, kc_str_t topic);

/* How retention applies to one group, asked of the group room by the caller's callback. */
typedef struct kc_offsets_retention_s {
    bool expirable;  /* false: none of this group's offsets expire now */
    int64_t base_ms; /* -1: count from each offset's commit time; else from this time */
    /* Offsets of topics for which this returns true never expire (subscribed topics of a
     * live consumer group). May be NULL. */
    bool (*protected_topic)(void *arg, kc_str_t group, kc_str_t topic);
    void *arg;
} kc_offsets_retention_t;

/* KIP-211 expiry at wall-clock time `now_ms` with `retention_ms` (offsets.retention.minutes),
 * as Kafka's OffsetMetadataManager.cleanupExpiredOffsets with OffsetExpirationConditionImpl:
 * `policy` is called once per group that has offsets, with *out preset to {expirable = false,
 * base_ms = -1, protected_topic = NULL}; a NULL policy makes every group expirable from commit
 * times. For an expirable group, every offset of a topic that is not protected expires when it
 * has an explicit expire timestamp and now_ms >= that timestamp, or else when
 * now_ms - base >= retention_ms, base being base_ms, or the offset's commit timestamp when
 * base_ms is -1. Expired offsets are removed with tombstones (per group: topics by name, then
 * partitions). Right after a group has lost its last offset in this call (so after its
 * tombstones, as Kafka appends the group tombstone), the group is removed from the store and
 * `emptied(arg, group)` is called, if not NULL (the caller removes an Empty group then).
 * Returns the number of offsets removed. */
size_t kc_offsets_expire(kc_offsets_t *o, int64_t now_ms, int64_t retention_ms,
                         void (*policy)(void *arg, kc_str_t group, kc_offsets_retention_t *out),
                         void (*emptied)(void *arg, kc_str_t group), void *arg);

/* Apply one __consumer_offsets record read back from the log, without emitting anything:
 * `key` is int16 record type (0 or 1) + OffsetCommitKey; `value` is int16 version (0-4) +
 * OffsetCommitValue, or NULL for a tombstone. A value's leader epoch or expire timestamp of -1
 * (or absent in its version) means none, as Kafka's OffsetAndMetadata.fromRecord reads it; a
 * v4 topic id is not kept. Returns 0; -1 when out of memory (nothing changed); -2 when the key
 * is not an offset-commit key or either part is malformed (nothing changed). */
int kc_offsets_replay(kc_offsets_t *o, const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len);

#endif
