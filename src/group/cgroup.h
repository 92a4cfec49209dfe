/* cgroup.h - inside the group room: how the classic side (group.c) and the KIP-848 consumer
 * groups (cgroup.c) of one manager reach each other. Not part of the room's door (group.h).
 *
 * A kc_gm_t owns one kc_cgm_t: the consumer groups of its partition, their timers and their
 * records. group.c keeps the classic groups and forwards to the kc_cgm_* functions below
 * whenever a group id names a consumer group; cgroup.c asks group.c about classic groups
 * through the kc_gm__* functions (a consumer group may replace an empty classic group of the
 * same id, and the other way round).
 *
 * Every function takes the time from the caller (no clock is read; kc_time_t: monotonic for
 * timers, wall clock for records) and emits records through
 * the manager's ops, exactly like the classic side.
 */
#ifndef KC_GROUP_CGROUP_H
#define KC_GROUP_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"
#include "group/history.h"

typedef struct kc_cgm_s kc_cgm_t;

/* ---- Provided by group.c ------------------------------------------------------------------- */

/* The bytes a record takes in a record batch of its own, as Kafka sizes a write against
 * message.max.bytes (uncompressed): the 61-byte batch header, at most 21 bytes of record
 * framing (length, attributes, deltas, key and value lengths, header count), key and value. */
#define KC_GM_RECORD_OVERHEAD (61 + 21)
static inline size_t kc_gm__record_bytes(size_t key_len, size_t value_len)
{
    return KC_GM_RECORD_OVERHEAD + key_len + value_len;
}

/* The consumer-group side of a manager. */
kc_cgm_t *kc_gm__cgm(const kc_gm_t *gm);

/* What a classic group of id `id` is, for a consumer group that wants the id. */
enum {
    KC_CLASSIC_NONE = 0,   /* no classic group has this id */
    KC_CLASSIC_EMPTY = 1,  /* an Empty classic group (it may hold offsets) */
    KC_CLASSIC_SIMPLE = 2, /* an Empty group without protocol type: offsets of simple commits */
    KC_CLASSIC_ACTIVE = 3, /* a classic group with members, or one that is rebalancing */
};
int kc_gm__classic_kind(const kc_gm_t *gm, kc_str_t id);

/* Remove the classic group `id` (KC_CLASSIC_EMPTY or _SIMPLE). With `tombstone`, as Kafka's
 * conversion does (its GroupMetadata tombstone is emitted); without, silently (while loading,
 * where a consumer group record replaces a simple group). */
void kc_gm__classic_remove(kc_gm_t *gm, kc_time_t now, kc_str_t id, bool tombstone,
                           const char *reason);

/* The manager's random number generator (seeded by kc_gm_set_seed in tests). */
uint64_t kc_gm__random(kc_gm_t *gm);

/* The manager's counters (group.h's kc_gm_stats), for consumer groups to count their
 * rebalances in. */
kc_gm_stats_t *kc_gm__stats(kc_gm_t *gm);

/* ---- Provided by cgroup.c ------------------------------------------------------------------ */

/* A new, empty consumer-group side. The config and ops are copied (NULL when out of memory). */
kc_cgm_t *kc_cgm_new(kc_gm_t *gm, const kc_gm_config_t *cfg, const kc_gm_ops_t *ops);
void kc_cgm_free(kc_cgm_t *c);

/* Whether `id` names a consumer group, and whether it has members. */
bool kc_cgm_exists(const kc_cgm_t *c, kc_str_t id);
bool kc_cgm_is_empty(const kc_cgm_t *c, kc_str_t id);

/* Delete an empty consumer group with Kafka's tombstones (DeleteGroups, retention, JoinGroup
 * turning it into a classic group). Returns 0, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP. */
int16_t kc_cgm_delete(kc_cgm_t *c, kc_time_t now, kc_str_t id, const char *reason);

/* Forget a consumer group without records (a GroupMetadata record replayed for its id). */
void kc_cgm_drop(kc_cgm_t *c, kc_str_t id);

/* The classic APIs on a consumer group (see group.h). */
int16_t kc_cgm_classic_member_check(const kc_cgm_t *c, kc_str_t id, kc_str_t member_id,
                                    kc_str_t instance_id);
void kc_cgm_classic_leave(kc_cgm_t *c, kc_time_t now, kc_str_t id, const kc_member_identity_t *ids,
                          int32_t n, int16_t *errors);

/* Summaries for ListGroups and retention. */
int kc_cgm_info(const kc_cgm_t *c, kc_str_t id, kc_group_info_t *out);
void kc_cgm_each(const kc_cgm_t *c, void (*fn)(void *arg, const kc_group_info_t *g), void *arg);

/* Offsets against a consumer group (Kafka's ConsumerGroup.validateOffsetCommit, ...). */
int16_t kc_cgm_validate_commit(kc_cgm_t *c, int16_t version, kc_str_t id, int32_t epoch,
                               kc_str_t member_id);
int16_t kc_cgm_validate_fetch(const kc_cgm_t *c, kc_str_t id, kc_str_t member_id, int32_t epoch);
bool kc_cgm_subscribed(const kc_cgm_t *c, kc_str_t id, kc_str_t topic);

/* Loading: a record of type 3-8 (0, -1 out of memory, -2 malformed). */
int kc_cgm_replay(kc_cgm_t *c, int16_t type, const uint8_t *key, size_t key_len,
                  const uint8_t *value, size_t value_len);
void kc_cgm_load_complete(kc_cgm_t *c, kc_time_t now);

/* Introspection (group.h's kc_gm_json_*): a consumer group's JSON summary / full object. */
void kc_cgm_json_list(const kc_cgm_t *c, int64_t mono_ms, kc_emit_fn emit, void *arg, bool *first);
int kc_cgm_json_group(const kc_cgm_t *c, int64_t mono_ms, kc_str_t id, kc_emit_fn emit, void *arg);
/* The summary object of one consumer group (kc_gm_json_summary); 0, or -1 when there is none. */
int kc_cgm_json_summary(const kc_cgm_t *c, kc_str_t id, kc_emit_fn emit, void *arg);

/* Timers: session and rebalance timeouts of the members, each in its group's heaps (monotonic
 * milliseconds). kc_cgm_tick fires or examines at most the config's tick_budget of them. */
int64_t kc_cgm_next_deadline(const kc_cgm_t *c);
void kc_cgm_tick(kc_cgm_t *c, kc_time_t now);

/* The partition's subscription regexes: distinct ones in use, and ones compiled. */
void kc_cgm_regex_counts(const kc_cgm_t *c, size_t *in_use, size_t *compiled);

#endif
