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

/* Rebalance history, the same for both kinds of group (group.h describes what it records).
 * A ring of KC_RB_HISTORY entries; the entries are allocated at the first rebalance, so a
 * group that never rebalances (a simple group holding offsets) costs nothing but the struct.
 * Recording is best effort: when memory runs out an entry or a name is left out, and nothing
 * fails. Everything the ring keeps is its own copy. */
#define KC_RB_NAMES_MAX 64 /* member ids kept per joined/dropped list; the rest are counted */

typedef struct kc_rb_entry_s {
    int32_t generation;           /* the generation (group epoch) it produced, -1 until known */
    int64_t start_ms, end_ms;     /* wall clock, for people; end_ms 0 while it runs */
    int64_t start_mono, end_mono; /* monotonic, for the duration */
    int cause;                    /* KC_RB_* */
    kc_str_t member_id;           /* owned copy, null: none */
    kc_str_t reason;              /* owned copy, null: none */
    const char *outcome;          /* a static string once ended: "stable", "empty", "restarted" */
    kc_str_t *joined, *dropped;   /* owned copies, KC_RB_NAMES_MAX each when allocated */
    uint32_t n_joined, n_dropped; /* kept */
    uint32_t more_joined, more_dropped; /* left out (beyond KC_RB_NAMES_MAX or no memory) */
} kc_rb_entry_t;

typedef struct kc_rb_ring_s {
    kc_rb_entry_t *v; /* KC_RB_HISTORY entries, NULL before the first rebalance */
    uint32_t total;   /* entries ever begun: the newest is v[(total - 1) % KC_RB_HISTORY] */
    bool open;        /* the newest entry is still running */
} kc_rb_ring_t;

/* Begin an entry (the caller ends a running one first). Counts the cause in `stats` (when not
 * NULL) even if the entry cannot be recorded. */
void kc_rb_begin(kc_rb_ring_t *r, kc_gm_stats_t *stats, kc_time_t now, int cause,
                 kc_str_t member_id, kc_str_t reason);
/* Note a member that joined (`joined`) or dropped out of the running entry; nothing when no
 * entry runs or the member is already listed. */
void kc_rb_note(kc_rb_ring_t *r, bool joined, kc_str_t member_id);
/* The running entry, or NULL. */
kc_rb_entry_t *kc_rb_current(kc_rb_ring_t *r);
/* End the running entry (if any) with the generation it produced and its outcome. Returns the
 * entry ended, or NULL. */
kc_rb_entry_t *kc_rb_end(kc_rb_ring_t *r, kc_time_t now, int32_t generation, const char *outcome);
/* Log the one info line of an ended entry; `kind` is "group" or "consumer group". */
void kc_rb_log(const kc_rb_entry_t *e, const char *kind, kc_str_t group_id);
void kc_rb_free(kc_rb_ring_t *r);
/* Emit the entries as a JSON array, oldest first; a running one has end_ms 0 and its duration
 * so far (`mono_ms`: the monotonic time now). */
void kc_rb_json(const kc_rb_ring_t *r, int64_t mono_ms, kc_emit_fn emit, void *arg);
/* The newest entry's end (0: none, or it runs) and how many entries were ever begun. */
int64_t kc_rb_last_end(const kc_rb_ring_t *r);

/* JSON pieces for both files: a literal, a quoted escaped string (null for a null view), a
 * number. */
void kc_gm__json_lit(kc_emit_fn emit, void *arg, const char *s);
void kc_gm__json_str(kc_emit_fn emit, void *arg, kc_str_t s);
void kc_gm__json_i64(kc_emit_fn emit, void *arg, int64_t v);

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
