/* manager.h - inside the group room: what the manager (manager.c) gives the two group machines.
 *
 * The manager owns the groups of one __consumer_offsets partition: ONE map from group id to a
 * group of either kind and ONE heap of the groups that have timers. A group of each kind
 * (classic.c's, consumer.c's) starts with a kc_ghead_t that says its kind and holds its place in
 * the heap; the machines find, add and remove their groups and arm their timers only through
 * the functions below, so a group id names at most one group of one kind.
 *
 * The machines never include each other. What a request of one kind may do to a group of the
 * other kind (a classic JoinGroup turning an empty consumer group into a classic one, a
 * consumer heartbeat replacing an empty classic group, a classic SyncGroup answered for a
 * consumer group, ...) are the manager's conversions, in the last section below: the
 * machines ask, the manager decides and calls the other machine. classic<->consumer upgrade and
 * downgrade of groups with members belong there too.
 *
 * Not part of the room's door (group.h).
 */
#ifndef KC_GROUP_MANAGER_H
#define KC_GROUP_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"
#include "group/notes.h"
#include "group/strmap.h"
#include "util/heap.h"

/* The kind of a group in the manager's map. */
enum { KC_KIND_NONE = 0, KC_KIND_CLASSIC = 1, KC_KIND_CONSUMER = 2 };

/* The first member of every group, of either kind. */
typedef struct kc_ghead_s {
    int kind;                      /* KC_KIND_CLASSIC or KC_KIND_CONSUMER */
    kc_heap_node_t timer;          /* in the manager's heap, keyed no later than its deadline */
    struct kc_ghead_s *defer_next; /* kc_gm_tick's list of groups still due */
} kc_ghead_t;

typedef struct kc_consumer_s kc_consumer_t;

/* The manager. The classic machine works on it directly (its time, config, ops, counters);
 * the consumer machine keeps its own state in `consumer`. */
struct kc_gm_s {
    kc_gm_config_t cfg;
    kc_gm_ops_t ops;
    kc_strmap_t groups;      /* group id -> kc_ghead_t of a group of either kind */
    kc_heap_t heap;          /* groups with timers, by earliest deadline */
    kc_consumer_t *consumer; /* the consumer machine's state (consumer.c) */
    int64_t now;             /* monotonic: every timer, age and duration */
    int64_t wall;            /* wall clock: timestamps in records and for people */
    uint64_t rng;
    uint64_t next_seq;   /* the classic machine's request numbers */
    kc_gm_stats_t stats; /* kc_gm_stats */
    kc_notes_t notes;    /* refusals logged by the classic machine, per group */
};

/* The bytes a record takes in a record batch of its own, as Kafka sizes a write against
 * message.max.bytes (uncompressed): the 61-byte batch header, at most 21 bytes of record
 * framing (length, attributes, deltas, key and value lengths, header count), key and value. */
#define KC_MANAGER_RECORD_OVERHEAD (61 + 21)
static inline size_t kc_manager_record_bytes(size_t key_len, size_t value_len)
{
    return KC_MANAGER_RECORD_OVERHEAD + key_len + value_len;
}

/* What a machine's timers return when they converted their group to the other kind: the
 * group is freed (the new one is in the map and the heap). */
#define KC_GROUP_GONE INT64_MIN

/* The manager's random number generator (seeded by kc_gm_set_seed in tests). */
uint64_t kc_manager_random(kc_gm_t *gm);

/* ---- The one map and the one heap ------------------------------------------------------------ */

/* The group `id` names (either kind), or NULL. */
kc_ghead_t *kc_manager_find(const kc_gm_t *gm, kc_str_t id);
/* The group `id` names if it is of `kind`, or NULL. */
kc_ghead_t *kc_manager_find_kind(const kc_gm_t *gm, kc_str_t id, int kind);
/* Make room for one more group in the map and the heap, so that kc_manager_put and a later
 * kc_manager_arm cannot fail. 0, or -1 when out of memory (nothing changed). */
int kc_manager_reserve(kc_gm_t *gm);
/* Put a group under `id` (a view the group owns); reserved first, so it cannot fail. The id
 * must be free. */
void kc_manager_put(kc_gm_t *gm, kc_ghead_t *h, kc_str_t id);
/* Take a group out of the map and the heap (its memory stays the caller's). */
void kc_manager_del(kc_gm_t *gm, kc_ghead_t *h, kc_str_t id);
/* Make sure the group is looked at no later than `deadline` (a monotonic time). */
void kc_manager_arm(kc_gm_t *gm, kc_ghead_t *h, int64_t deadline);
/* Take a group out of the heap (it stays in the map). */
void kc_manager_disarm(kc_gm_t *gm, kc_ghead_t *h);
/* The group in slot i of the map (0 <= i < kc_manager_slots) if it is of `kind` (KC_KIND_NONE:
 * any), or NULL. The map must not change while it is walked. */
size_t kc_manager_slots(const kc_gm_t *gm);
kc_ghead_t *kc_manager_slot(const kc_gm_t *gm, size_t i, int kind);

/* ---- Conversions between kinds (manager.c) --------------------------------------------------- */

/* What a classic group of id `id` is, for a consumer group that wants the id. */
enum {
    KC_CLASSIC_NONE = 0,   /* no classic group has this id */
    KC_CLASSIC_EMPTY = 1,  /* an Empty classic group (it may hold offsets) */
    KC_CLASSIC_SIMPLE = 2, /* an Empty group without protocol type: offsets of simple commits */
    KC_CLASSIC_ACTIVE = 3, /* a classic group with members, or one that is rebalancing */
};
int kc_manager_classic_kind(const kc_gm_t *gm, kc_str_t id);

/* Remove the classic group `id` (KC_CLASSIC_EMPTY or _SIMPLE) for a consumer group that takes
 * its id. With `tombstone`, as Kafka's conversion does (its GroupMetadata tombstone is
 * emitted); without, silently (while loading, where a consumer group record replaces a simple
 * group). */
void kc_manager_classic_remove(kc_gm_t *gm, kc_time_t now, kc_str_t id, bool tombstone,
                               const char *reason);

/* A classic JoinGroup for `id` while `id` may name an empty consumer group (Kafka's
 * classicGroupJoinToClassicGroup on it; a consumer group with members got the JoinGroup from
 * kc_gm_join already). 0: the id is free for a classic group (an empty consumer group was
 * deleted with its tombstones, as in Kafka); UNKNOWN_MEMBER_ID: a member id was given for an
 * empty consumer group; COORDINATOR_NOT_AVAILABLE: out of memory. */
int16_t kc_manager_classic_join(kc_gm_t *gm, kc_str_t id, bool unknown_member);

/* A group between kinds (an upgrade or a downgrade): what one kind hands the other, every view
 * copied into the arena of the request that converts, so it outlives the group it came from. */
typedef struct kc_conv_member_s {
    kc_str_t id, instance_id, client_id, client_host;
    int32_t session_timeout_ms, rebalance_timeout_ms;
    const kc_join_group_request_protocol_t *protocols; /* its JoinGroup's, in their order */
    int32_t n_protocols;
    /* Upgrade: its current ConsumerProtocolAssignment (empty: none yet). Downgrade: the
     * metadata's version decides the encoding of the assignment the classic group gets. */
    kc_bytes_t assignment;
} kc_conv_member_t;

typedef struct kc_conv_group_s {
    kc_str_t id;
    int32_t generation;     /* upgrade: the classic generation; downgrade: the group epoch */
    kc_str_t protocol_type; /* the classic group's (upgrade) */
    kc_str_t protocol_name; /* the classic group's selected protocol (null: none yet) */
    kc_conv_member_t *v;
    int32_t n;
} kc_conv_group_t;

/* Kafka's validateOnlineUpgrade and convertToConsumerGroup, for the classic group `id` (with
 * members, KC_CLASSIC_ACTIVE) that a ConsumerGroupHeartbeat joining it (member `member_id`)
 * wants: 0 when the group is now a consumer group (the classic group's tombstone, its parked
 * JoinGroup and SyncGroup answered REBALANCE_IN_PROGRESS, the consumer group's records with
 * every member's current assignment kept); GROUP_ID_NOT_FOUND with *why, Kafka's message (a
 * format with one %.*s, the group id), when it may not be converted;
 * COORDINATOR_NOT_AVAILABLE when out of memory (nothing changed). `a` holds the copies. */
int16_t kc_manager_upgrade(kc_gm_t *gm, kc_str_t id, kc_str_t member_id, kc_arena_t *a,
                           const char **why);

/* kc_manager_upgrade's validation alone (Kafka's validateOnlineUpgrade): 0 or, with *why,
 * GROUP_ID_NOT_FOUND. */
int16_t kc_manager_upgrade_check(const kc_gm_t *gm, kc_str_t id, const char **why);

/* Kafka's validateOnlineDowngradeWithFencedMembers, the manager's part: whether the policy
 * allows downgrades and `remaining` members fit group.max.size (the consumer machine checks
 * that every remaining member uses the classic protocol). */
bool kc_manager_downgrade_allowed(const kc_gm_t *gm, int32_t remaining);

/* Kafka's convertToClassicGroup, after the consumer group's tombstones: the classic group of
 * `cv`, rebalancing when `rebalance` (member_id and reason name it in the history). 0, or -1
 * when out of memory. */
int kc_manager_downgrade(kc_gm_t *gm, const kc_conv_group_t *cv, bool rebalance, kc_str_t member_id,
                         const char *reason);

/* A classic LeaveGroup for the consumer group `id`: the members named are fenced (the admin
 * client's "remove members"). false when `id` names no consumer group. */
bool kc_manager_classic_leave(kc_gm_t *gm, kc_str_t id, const kc_member_identity_t *ids, int32_t n,
                              int16_t *errors);

/* Whether `id` names a consumer group (for the messages of classic describe calls). */
bool kc_manager_is_consumer(const kc_gm_t *gm, kc_str_t id);

/* A GroupMetadata record replayed for `id` replaces a consumer group of that id, without
 * records, as in Kafka. */
void kc_manager_replay_drop_consumer(kc_gm_t *gm, kc_str_t id);

#endif
