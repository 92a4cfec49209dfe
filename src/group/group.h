/* group.h - the group room's door: the groups of one __consumer_offsets partition, classic
 * groups and KIP-848 consumer groups.
 *
 * A kc_gm_t ("group manager") owns the groups that hash to one partition: their members,
 * generations, protocols, assignments and timers. It is a pure state machine: it takes decoded
 * requests and the current time (a kc_time_t given by the caller: every timer runs on its
 * monotonic reading, the wall-clock reading only goes into records and what people read; it
 * never reads a clock), fills responses, and calls back through kc_gm_ops_t to complete parked
 * JoinGroup and SyncGroup requests and to emit the __consumer_offsets records Kafka would write. It
 * knows nothing of sockets or files, so unit tests drive it with a fake clock and fake callbacks.
 *
 * Timers: kc_gm_next_deadline says when something may expire (session timeouts, the initial
 * rebalance delay, rebalance and sync timeouts, pending-member and new-member join timeouts);
 * the host calls kc_gm_tick with the time at or after that. Deadlines are monotonic
 * milliseconds. The deadline may be early (a tick then finds nothing to do) but never late.
 * Every member, pending member and group timer has its own place in a heap, so one expiry
 * costs O(log n) whatever the size of its group, and one kc_gm_tick fires at most a bounded
 * number of timers (kc_gm_config_t.tick_budget): when more are due, kc_gm_next_deadline is
 * already past and the host calls kc_gm_tick again after serving other work.
 *
 * Offsets are not kept here (src/offsets/); this module only validates commits against the
 * group and tells the offsets module what retention applies to a group.
 *
 * After a restart the groups are loaded back from the partition's log: kc_gm_replay for each
 * record in log order, then kc_gm_load_complete once.
 */
#ifndef KC_GROUP_GROUP_H
#define KC_GROUP_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gen_admin.h"
#include "proto/gen_consumer.h"
#include "proto/gen_group.h"
#include "util/arena.h"
#include "util/clock.h"

typedef struct kc_gm_s kc_gm_t;

typedef enum {
    KC_GROUP_EMPTY = 0,
    KC_GROUP_PREPARING_REBALANCE,
    KC_GROUP_COMPLETING_REBALANCE,
    KC_GROUP_STABLE,
    KC_GROUP_DEAD,
} kc_group_state_t;

/* Kafka's names: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead". */
const char *kc_group_state_name(kc_group_state_t s);

typedef struct kc_gm_config_s {
    int32_t partition;                  /* the __consumer_offsets partition, for logs */
    int32_t min_session_timeout_ms;     /* group.min.session.timeout.ms, 6000 */
    int32_t max_session_timeout_ms;     /* group.max.session.timeout.ms, 1800000 */
    int32_t initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms, 3000 */
    int32_t max_size;                   /* group.max.size, Kafka's default 2147483647 */
    int32_t new_member_join_timeout_ms; /* Kafka's constant: 300000 */
    /* KIP-848 consumer groups; 0 (or NULL) stands for Kafka's default. */
    int32_t consumer_heartbeat_interval_ms; /* group.consumer.heartbeat.interval.ms, 5000 */
    int32_t consumer_session_timeout_ms;    /* group.consumer.session.timeout.ms, 45000 */
    int32_t consumer_max_size;              /* group.consumer.max.size, 2147483647 */
    /* group.consumer.assignment.interval.ms (KIP-1263): a group's target assignment is
     * computed at most once per this many ms; 0 (also what a zeroed config gives): at every
     * change, as before KIP-1263. A group's consumer.assignment.interval.ms overrides it. */
    int32_t consumer_assignment_interval_ms;
    const char *consumer_assignors; /* group.consumer.assignors, "uniform,range"; copied */
    int consumer_migration_policy;  /* group.consumer.migration.policy: KC_GM_MIGRATION_* */
    /* Compute a consumer group's target assignment off the loop (through the ops' offload)
     * when its members plus the partitions of its subscribed topics reach this; 0: the
     * default, KC_GM_OFFLOAD_THRESHOLD_DEFAULT; -1: never. */
    int64_t consumer_offload_threshold;
    /* The most timers one kc_gm_tick fires or examines (classic and consumer groups each),
     * so that many timers due at once (100 000 pending members whose session ends together)
     * are worked off in slices with the host's other work in between; 0: the default,
     * KC_GM_TICK_BUDGET_DEFAULT. */
    int32_t tick_budget;
    /* Subscription regexes (src/group/regex.h); 0 stands for the default. */
    int32_t consumer_regex_max_bytes; /* group.consumer.regex.max.bytes (kcoord's), 16384 */
    int32_t consumer_regex_max_count; /* group.consumer.regex.max.count (kcoord's), 1000 */
    /* An authorizer is on: what a subscription regex resolves to is filtered by the DESCRIBE
     * rights of the member whose heartbeat resolves it (the filter given to
     * kc_gm_consumer_heartbeat_filtered), and shared by the group's members until the next
     * resolution, as Kafka's refreshRegularExpressions. Outside a heartbeat (timers, offloaded
     * assignments) a group then only uses its last resolution, never an unfiltered one. */
    bool consumer_regex_filtered;
    /* group.consumer.regex.refresh.interval.ms, 600000: with consumer_regex_filtered, a
     * heartbeat resolves its group's regexes again when their last resolution is this old,
     * so that a change of ACLs (which changes no topic) reaches the assignment. */
    int32_t consumer_regex_refresh_interval_ms;
    /* The largest record a group may write (message.max.bytes of __consumer_offsets, Kafka's
     * default 1048588): key + value + the record's framing in a batch of its own. 0 stands for
     * the default. */
    int32_t record_max_bytes;
    /* This manager reloads the partition after a failed write or load: kc_gm_load_complete's
     * summary line is then rate-limited, since a failing disk reloads again and again. */
    bool reload;
} kc_gm_config_t;

/* group.consumer.migration.policy (Kafka's ConsumerGroupMigrationPolicy); 0 is the default. */
enum {
    KC_GM_MIGRATION_BIDIRECTIONAL = 0,
    KC_GM_MIGRATION_UPGRADE = 1,
    KC_GM_MIGRATION_DOWNGRADE = 2,
    KC_GM_MIGRATION_DISABLED = 3,
};

#define KC_GM_TICK_BUDGET_DEFAULT 512

#define KC_GM_OFFLOAD_THRESHOLD_DEFAULT 10000
#define KC_GM_REGEX_MAX_BYTES_DEFAULT   16384
#define KC_GM_REGEX_MAX_COUNT_DEFAULT   1000
#define KC_GM_RECORD_MAX_BYTES_DEFAULT  1048588
#define KC_GM_REGEX_REFRESH_MS_DEFAULT  600000

/* A consumer group's target assignment being computed off the loop (see the ops' offload). */
typedef struct kc_gm_job_s kc_gm_job_t;

/* Compute the job's assignment. Touches nothing but the job: any thread may call it, while
 * the loop thread goes on using the manager. */
void kc_gm_job_run(kc_gm_job_t *job);

/* On the loop thread, after kc_gm_job_run: apply the result to its group (when the group is
 * still there and has not moved to a newer assignment meanwhile; records are emitted through
 * the ops as by kc_gm_tick) and free the job. When the group's epoch moved on while the job
 * ran, the next assignment is started. Also the only correct call for a job whose manager was
 * freed meanwhile: the job then only frees itself. */
void kc_gm_job_done(kc_gm_job_t *job, kc_time_t now);

/* A topic consumer groups can subscribe to. `name` is NUL-terminated. */
typedef struct kc_gm_topic_s {
    kc_str_t name;
    kc_uuid_t id;
    int32_t partitions;
} kc_gm_topic_t;

/* The host's topics, as the ops' `topics` callback gives them: valid until the kc_gm_* call
 * that asked for them returns. `version` changes whenever the list changes (a topic created
 * or deleted); consumer groups compare it with the one they last saw to notice that the
 * metadata of their subscribed topics may have changed. */
typedef struct kc_gm_topics_s {
    const kc_gm_topic_t *v;
    size_t n;
    uint64_t version;
} kc_gm_topics_t;

/* A group's own settings (its group configs: DescribeConfigs / IncrementalAlterConfigs on a
 * GROUP resource), each -1 when the group has none and the daemon's setting applies. */
typedef struct kc_gm_group_config_s {
    int32_t session_timeout_ms;     /* consumer.session.timeout.ms */
    int32_t heartbeat_interval_ms;  /* consumer.heartbeat.interval.ms */
    int32_t assignment_interval_ms; /* consumer.assignment.interval.ms */
} kc_gm_group_config_t;

/* Callbacks to the host. Everything passed is valid only during the call. A callback must
 * not call back into the manager (it runs in the middle of a state change); the host may
 * queue work and do it after the kc_gm_* call that triggered the callback returns. */
typedef struct kc_gm_ops_s {
    void *ctx;
    /* A parked JoinGroup completes (`waiter` is what kc_gm_join was given). */
    void (*join_done)(void *ctx, void *waiter, const kc_join_group_response_t *resp);
    /* A parked SyncGroup completes. */
    void (*sync_done)(void *ctx, void *waiter, const kc_sync_group_response_t *resp);
    /* A record for __consumer_offsets, key and value encoded exactly as Kafka encodes them
     * (version prefix included); value NULL is a tombstone. GroupMetadataKey v2 with
     * GroupMetadataValue v3 for a group's metadata. */
    void (*record)(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len);
    /* The topics consumer groups subscribe to (NULL: none). Called from request handlers and
     * kc_gm_tick / kc_gm_load_complete, never from kc_gm_replay. */
    void (*topics)(void *ctx, kc_gm_topics_t *out);
    /* Run `job` off the loop (NULL: every assignment is computed inline). The host calls
     * kc_gm_job_run(job) on another thread, then kc_gm_job_done(job, now) on the loop
     * thread, exactly once each, even if the manager is freed in between. Returns 0, or -1
     * when it cannot (the manager then computes the assignment inline). Kafka's
     * group.consumer.assignor.offload.enable: meanwhile the group is Assigning and its members
     * keep reconciling towards the previous target assignment. */
    int (*offload)(void *ctx, kc_gm_job_t *job);
    /* The group configs of group `group_id` (which may not exist yet): fills *out (every field
     * -1 when it has none). NULL: no group has any. Called on the loop thread from request
     * handlers and kc_gm_tick, never from kc_gm_replay; a change takes effect at the group's
     * next heartbeat or timer. */
    void (*group_config)(void *ctx, kc_str_t group_id, kc_gm_group_config_t *out);
} kc_gm_ops_t;

/* A new, empty manager. The config and ops are copied. NULL when out of memory. Generated
 * member ids ("<client id>-<uuid>") use a generator seeded from getrandom(). */
kc_gm_t *kc_gm_new(const kc_gm_config_t *cfg, const kc_gm_ops_t *ops);

/* Reseed the member-id generator (tests use it for reproducible ids). */
void kc_gm_set_seed(kc_gm_t *gm, uint64_t seed);

/* Free every group. Parked requests are completed first with COORDINATOR_NOT_AVAILABLE
 * through the ops (so their connections get an answer). */
void kc_gm_free(kc_gm_t *gm);

/* Result of the request functions below. */
enum {
    KC_GM_ANSWERED = 0, /* *resp is filled now */
    KC_GM_PARKED = 1,   /* the answer will come through join_done / sync_done with `waiter` */
};

/* JoinGroup (v0-9), after the host's own checks (the group belongs to this partition and it
 * is loaded). `client_id` and `client_host` are recorded for DescribeGroups and the
 * GroupMetadata record (Kafka records the host as InetAddress.toString(), e.g. "/10.0.0.7").
 * Response memory (for an immediate answer) comes from `a`. Returns KC_GM_ANSWERED or
 * KC_GM_PARKED. A parked request is answered exactly once through join_done: when its join
 * phase completes, when the member is removed or fenced, when the same member sends another
 * JoinGroup first (the old one gets NOT_COORDINATOR, as Kafka since KAFKA-20938), or by
 * kc_gm_free. The checks Kafka makes before its state machine are made here too: an empty
 * group id (INVALID_GROUP_ID) and a session timeout outside the configured bounds
 * (INVALID_SESSION_TIMEOUT). */
int kc_gm_join(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_join_group_request_t *req,
               kc_str_t client_id, kc_str_t client_host, void *waiter, kc_arena_t *a,
               kc_join_group_response_t *resp);

/* SyncGroup (v0-5). Same contract as kc_gm_join (answered through sync_done when parked).
 * Includes KafkaApis' v5 check that protocol type and name are present. */
int kc_gm_sync(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_sync_group_request_t *req,
               void *waiter, kc_arena_t *a, kc_sync_group_response_t *resp);

/* Heartbeat (v0-4): always answered at once. */
void kc_gm_heartbeat(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_heartbeat_request_t *req,
                     kc_heartbeat_response_t *resp);

/* LeaveGroup (v0-5), including batch leave by member id or instance id (v3+). */
void kc_gm_leave(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_leave_group_request_t *req,
                 kc_arena_t *a, kc_leave_group_response_t *resp);

/* The earliest time at which kc_gm_tick may have work, or INT64_MAX. */
int64_t kc_gm_next_deadline(const kc_gm_t *gm);

/* Run the timers due at `now.mono_ms`, earliest first, at most tick_budget of them (timers
 * examined count too); the rest stay due for the next call. */
void kc_gm_tick(kc_gm_t *gm, kc_time_t now);

/* ---- For offsets and the admin APIs ------------------------------------------------------ */

/* A group's summary. Strings are views valid until the manager next changes. */
typedef struct kc_group_info_s {
    kc_str_t group_id;
    const char *type;       /* "classic" or "consumer" (KIP-848) */
    const char *state_name; /* Kafka's name of the state: a classic state, or for a consumer
                             * group "Empty", "Assigning", "Reconciling" or "Stable" */
    /* The classic state; a consumer group is KC_GROUP_EMPTY without members and
     * KC_GROUP_STABLE with. */
    kc_group_state_t state;
    kc_str_t protocol_type; /* "" when none (a simple group holding only offsets) */
    kc_str_t protocol;      /* the selected protocol, "" when none */
    int32_t generation;     /* a consumer group's group epoch */
    int32_t n_members;
    int64_t state_timestamp_ms; /* when the group last changed state */
} kc_group_info_t;

/* Look up a group. Returns 0 and fills *out, or -1 when there is no such group. */
int kc_gm_info(const kc_gm_t *gm, kc_str_t group_id, kc_group_info_t *out);

/* Call fn for every group (Dead ones excluded). fn must not change the manager. */
void kc_gm_each(const kc_gm_t *gm, void (*fn)(void *arg, const kc_group_info_t *g), void *arg);

/* Validate an OffsetCommit (version `version`) against the group, as Kafka does: generation
 * and member checks (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
 * REBALANCE_IN_PROGRESS), simple and admin commits with generation -1 into an Empty or unknown
 * group (which creates an Empty group, as Kafka does; no record is written for it),
 * GROUP_ID_NOT_FOUND for an unknown group on v9+ with a generation >= 0 (ILLEGAL_GENERATION
 * below v9), INVALID_GROUP_ID for a null group id ("" is a valid id for commits). A valid
 * commit from a member of a Stable or PreparingRebalance group also counts as its heartbeat.
 * Returns a Kafka error code, 0 when the commit may proceed. */
int16_t kc_gm_validate_commit(kc_gm_t *gm, kc_time_t now, int16_t version, kc_str_t group_id,
                              int32_t generation, kc_str_t member_id, kc_str_t instance_id);

/* Validate OffsetFetch v9+ member fields for a classic group (member id / epoch given). Returns
 * a Kafka error code, 0 when the fetch may proceed (also when no member is named). Kafka's
 * classic groups ignore the member fields (they are checked for KIP-848 groups only), so this
 * returns 0 for every classic group and for unknown groups (whose partitions are answered
 * with offset -1 and no error). */
int16_t kc_gm_validate_fetch(kc_gm_t *gm, kc_str_t group_id, kc_str_t member_id,
                             int32_t member_epoch);

/* Whether offsets of `topic` in `group_id` are protected from expiry because the group is a
 * non-empty consumer group one of whose members subscribes to the topic (KIP-211). This is
 * Kafka's ClassicGroup.isSubscribedToTopic: the subscribed topics are read from each member's
 * ConsumerProtocolSubscription when a generation starts; when they are unknown (not yet
 * computed, or a subscription could not be parsed) every topic counts as subscribed for a
 * "consumer" group and none for other groups. An Empty group subscribes to nothing; an unknown
 * group: false. */
bool kc_gm_subscribed(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic);

/* Whether offsets of this group may expire at all now (KIP-211): Empty groups and simple
 * groups yes; non-empty consumer-protocol groups only for unsubscribed topics (see
 * kc_gm_subscribed) and only while Stable with known subscriptions (a rebalancing group
 * expires nothing, KAFKA-13636); non-empty groups of other protocol types no. Sets *base_ms to
 * the time expiry counts from when it is the time the group became Empty, else to -1 (count
 * from each offset's commit time). Unknown groups: true, -1. This is Kafka's
 * ClassicGroup.offsetExpirationCondition. */
bool kc_gm_offsets_expirable(const kc_gm_t *gm, kc_str_t group_id, int64_t *base_ms);

/* OffsetDelete's check: 0, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (a non-empty group that is not
 * a consumer group) or, for a topic one of the members subscribes to, GROUP_SUBSCRIBED_TO_TOPIC
 * (call per topic with `topic`; with a null topic only the group-level check is made). */
int16_t kc_gm_validate_offset_delete(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic);

/* Fill one DescribeGroups entry (v0-6) from `a`. An unknown group is described as Dead with
 * no members (error NONE for v0-5, GROUP_ID_NOT_FOUND for v6), as Kafka does. */
void kc_gm_describe(const kc_gm_t *gm, int16_t version, kc_str_t group_id,
                    bool include_authorized_operations, kc_arena_t *a,
                    kc_describe_groups_described_group_t *out);

/* DeleteGroups for one group: 0 (the group is gone, a tombstone was emitted; the caller
 * deletes its offsets), GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP. */
int16_t kc_gm_delete(kc_gm_t *gm, kc_time_t now, kc_str_t group_id);

/* Remove an Empty group that has no offsets left (after retention), emitting its tombstone.
 * Does nothing to a group that is not Empty. */
void kc_gm_remove_if_empty(kc_gm_t *gm, kc_time_t now, kc_str_t group_id);

/* ---- Loading the groups back from __consumer_offsets ------------------------------------- */

/* Apply one record read back from the partition's log, in log order, to a manager that is
 * being loaded (the host answers COORDINATOR_LOAD_IN_PROGRESS meanwhile, so no request is
 * parked). `key` is the int16 record type + key struct, `value` the int16 version + value
 * struct, or NULL for a tombstone; both are only read during the call. Emits no record and
 * completes no request; arms no timer (kc_gm_load_complete does).
 *
 * Record type 2 (GroupMetadataKey) is this function's, as Kafka's
 * GroupMetadataManager.replay: a tombstone removes the group; a GroupMetadataValue of any
 * version 0-4 replaces the group with the one it describes, Stable when it has members and
 * Empty otherwise: protocol type ("" = none), generation, selected protocol, leader, current
 * state timestamp (-1, "unknown", before v2), and each member's id, instance id (v3+), client
 * id and host, rebalance timeout (the session timeout before v1), session timeout, assignment
 * and subscription. A loaded member supports only the group's selected protocol, with its
 * subscription as the metadata (that is all the record keeps, and what Kafka loads too), so a
 * member that rejoins offering several protocols changes its metadata and causes a rebalance.
 *
 * Record types 0 and 1 (offset commits) belong to the offsets store: this returns 1, but
 * first, for a commit (not a tombstone) whose group does not exist, creates the group Kafka's
 * OffsetMetadataManager.replay creates: a "simple" Empty group without protocol type that
 * holds offsets, as a live commit with generation -1 does. The host should therefore hand
 * every record here first and give those answered 1 to kc_offsets_replay. Every other record
 * type but 3-8 is answered 1 and changes nothing.
 *
 * Record types 3-8 (ConsumerGroupMetadata, ConsumerGroupPartitionMetadata,
 * ConsumerGroupMemberMetadata, ConsumerGroupTargetAssignmentMetadata,
 * ConsumerGroupTargetAssignmentMember, ConsumerGroupCurrentMemberAssignment) rebuild KIP-848
 * consumer groups exactly as Kafka's replay methods do (a tombstone of an unknown group or
 * member is ignored); a consumer group record for a group id held by a "simple" classic group
 * (offsets only) replaces that group, as Kafka does.
 *
 * Returns 0 (applied), 1 (not a group record; see above), -1 when out of memory or -2 when
 * the key or value is malformed (both with nothing changed). A value that decodes but cannot
 * describe a group (members without a protocol, a member id listed twice) is malformed. Should
 * a replaced or removed group have parked requests after all, they are answered
 * COORDINATOR_NOT_AVAILABLE through the ops, as by kc_gm_free. */
int kc_gm_replay(kc_gm_t *gm, const uint8_t *key, size_t key_len, const uint8_t *value,
                 size_t value_len);

/* The last record has been replayed (Kafka's GroupMetadataManager.onLoaded): every member of
 * a consumer group gets a fresh session timer (and, when it still has partitions to revoke, a
 * fresh rebalance timer), and keeps its epoch and assignment; every member of
 * a group loaded by kc_gm_replay gets a fresh session that ends at now.mono_ms + its session
 * timeout, so that a restart causes no rebalance; the group keeps its generation, leader and
 * assignments, so members keep heartbeating and committing with the generation they had. A
 * group with more members than group.max.size is rebalanced (the setting may have shrunk). A
 * simple group created from offsets gets now.wall_ms as its state timestamp. Groups that were not
 * replayed since the last call are not touched. Emits no record. */
void kc_gm_load_complete(kc_gm_t *gm, kc_time_t now);

/* ---- KIP-848 consumer groups ----------------------------------------------------------------
 *
 * Consumer groups share the group id space with classic groups: an id names at most one group
 * of either kind. The classic entry points above also answer for consumer groups as Kafka does
 * when classic members cannot join them (see the conversions in manager.c): JoinGroup of
 * an empty consumer group turns it into a classic group (tombstones first), JoinGroup of a
 * non-empty one is refused with INCONSISTENT_GROUP_PROTOCOL, SyncGroup and Heartbeat get
 * UNKNOWN_MEMBER_ID (FENCED_INSTANCE_ID for an instance id held by another member), LeaveGroup
 * removes the named members (an admin's "remove members"), DescribeGroups describes it as
 * not found ("Group G is not a classic group."). ListGroups, DeleteGroups, offset commits,
 * fetches, deletes and retention cover both kinds. */

/* ConsumerGroupHeartbeat (v0-1): join (epoch 0), heartbeat, leave (-1) and static temporary
 * leave (-2), always answered at once. The request checks Kafka's GroupCoordinatorService
 * makes come first (INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR); the host
 * calls this before looking at the partition's state, as Kafka validates first.
 * `client_id` and `client_host` ("/10.0.0.7") are recorded for ConsumerGroupDescribe. The
 * response's strings and arrays come from `a`. Records are emitted through the ops; the answer
 * must be held until they are durable. */
void kc_gm_consumer_heartbeat(kc_gm_t *gm, kc_time_t now, int16_t version,
                              const kc_consumer_group_heartbeat_request_t *req, kc_str_t client_id,
                              kc_str_t client_host, kc_arena_t *a,
                              kc_consumer_group_heartbeat_response_t *resp);

/* Whether the principal of one request may DESCRIBE a topic (an authorizer's verdict). Called
 * on the loop thread during the kc_gm_* call it was given to, never after it. */
typedef struct kc_gm_topic_filter_s {
    bool (*describable)(void *ctx, kc_str_t topic);
    void *ctx;
} kc_gm_topic_filter_t;

/* kc_gm_consumer_heartbeat on behalf of a principal: with consumer_regex_filtered, the
 * regular expressions this heartbeat resolves (a new one, or all of the group's when the
 * topics changed or their resolution is group.consumer.regex.refresh.interval.ms old) keep only
 * the topics `filter` allows, and the group's members share that resolution (Kafka's
 * refreshRegularExpressions with the request context of the member that triggered it).
 * `filter` NULL: no authorizer, nothing is filtered. */
void kc_gm_consumer_heartbeat_filtered(kc_gm_t *gm, kc_time_t now, int16_t version,
                                       const kc_consumer_group_heartbeat_request_t *req,
                                       kc_str_t client_id, kc_str_t client_host,
                                       const kc_gm_topic_filter_t *filter, kc_arena_t *a,
                                       kc_consumer_group_heartbeat_response_t *resp);

/* The request checks of kc_gm_consumer_heartbeat alone, for the host to run before it knows
 * whether the partition can serve. `assignors` is group.consumer.assignors (NULL: Kafka's
 * default). Returns 0, or an error code with Kafka's message (from `a`) in *message. */
int16_t kc_gm_consumer_heartbeat_check(const char *assignors, int16_t version,
                                       const kc_consumer_group_heartbeat_request_t *req,
                                       kc_arena_t *a, kc_str_t *message);

/* ConsumerGroupDescribe (v0-1) of one group, from `a`: GROUP_ID_NOT_FOUND ("Group G not
 * found." / "Group G is not a consumer group.") when there is no such consumer group. */
void kc_gm_consumer_describe(const kc_gm_t *gm, int16_t version, kc_str_t group_id,
                             bool include_authorized_operations, kc_arena_t *a,
                             kc_consumer_group_describe_described_group_t *out);

/* A consumer group's whole state as text (epochs, members with their metadata, states,
 * assignments and targets, in a canonical order), for tests that compare a group with the
 * one replaying its records gives, and for debugging. Returns the length it needs (like
 * snprintf); 0 when there is no such consumer group. */
size_t kc_gm_consumer_dump(const kc_gm_t *gm, kc_str_t group_id, char *buf, size_t len);

/* ---- Introspection: rebalance history, JSON, statistics --------------------------------------
 *
 * Every group keeps its last KC_RB_HISTORY rebalances: for a classic group one entry per
 * rebalance (from the event that moved it to PreparingRebalance until it is Stable again, or
 * Empty, or restarted from CompletingRebalance by a new event), for a consumer group one entry
 * per group-epoch bump. Each entry has the generation (group epoch) it produced, its start and
 * end (end 0 while it runs), its cause (the event that started it, with the member involved
 * and, for a LeaveGroup v5+, the member's reason) and the members that joined and dropped out
 * while it ran. A completed classic rebalance logs one info line with all of that.
 *
 * Start and end times (and state timestamps) are wall-clock milliseconds, for people;
 * durations and ages are measured on the monotonic clock, so a stepped wall clock does not
 * bend them. The functions below only read the manager and take the monotonic time
 * (`mono_ms`) for ages and running durations; the JSON they emit is UTF-8 with every string
 * escaped (kc_diag_json_escape), valid whatever bytes clients sent. */

/* Appends `n` bytes at `s` to the caller's output. */
typedef void (*kc_emit_fn)(void *arg, const char *s, size_t n);

/* Emit, comma-separated, one JSON summary object per group of the manager (Dead excluded):
 * {"group_id","type","state","protocol_type","protocol","generation","members" (a count),
 *  "state_timestamp_ms" (-1 for consumer groups),"rebalance_count" (rebalances ever recorded),
 *  "last_rebalance_end_ms" (0: none, or one is running)}. *first is true before the first
 * object ever emitted (no comma is written before it) and is cleared when one is, so that the
 * caller can list several managers into one JSON array. */
void kc_gm_json_list(const kc_gm_t *gm, int64_t mono_ms, kc_emit_fn emit, void *arg, bool *first);

/* Emit the summary object of one group, exactly as kc_gm_json_list writes it, without a comma.
 * Returns 0, or -1 (nothing emitted) when there is no such group (or it is Dead). Lets a caller
 * list a snapshot of group ids a few at a time. */
int kc_gm_json_summary(const kc_gm_t *gm, kc_str_t group_id, kc_emit_fn emit, void *arg);

/* Emit the full JSON object of one group:
 * {"group_id","type":"classic"|"consumer","state","protocol_type","protocol" (a consumer
 *  group's: its preferred server assignor),"generation" (a consumer group's: the group epoch),
 *  "leader" (null for consumer groups),"state_timestamp_ms" (classic),"assignment_epoch"
 *  (consumer),"members":[{"member_id","instance_id" (null if none),"client_id","client_host",
 *  "assignment":{"topic":[partitions]} (a classic member: decoded from its
 *  ConsumerProtocolAssignment when the protocol type is "consumer", {} when it has none yet;
 *  otherwise "assignment_bytes":N instead),"last_heartbeat_age_ms"; a classic member also
 *  "leader","session_timeout_ms","rebalance_timeout_ms"; a consumer member also
 *  "pending_revocation","target_assignment" (like "assignment"),"member_epoch","state",
 *  "subscribed_topics","subscribed_regex","assignor","rebalance_timeout_ms", and when it uses
 *  the classic protocol (a mixed group) "classic":{"session_timeout_ms","protocols":[names]}}],
 *  "rebalances":[{"generation" (null while a classic join phase runs),"start_ms","end_ms" (0
 *  while it runs),"duration_ms" (so far, while it runs),"cause" (kc_rb_cause_name),
 *  "member_id","reason" (null when none),"outcome" (null while it runs, then "stable", "empty"
 *  or "restarted": a newer rebalance began first),"joined":[..],"dropped":[..] (member ids, at
 *  most 64 each; "joined_omitted"/"dropped_omitted":N count the rest)}] (oldest first)}.
 * Returns 0, or -1 (nothing emitted) when there is no such group. */
int kc_gm_json_group(const kc_gm_t *gm, int64_t mono_ms, kc_str_t group_id, kc_emit_fn emit,
                     void *arg);

/* Rebalance causes. */
enum {
    KC_RB_MEMBER_JOINED,    /* a new member joined (member_id: the new member) */
    KC_RB_MEMBER_LEFT,      /* a member left (LeaveGroup; reason: its v5+ reason) */
    KC_RB_SESSION_TIMEOUT,  /* a member's session expired (member_id: that member) */
    KC_RB_STATIC_REPLACED,  /* a static member rejoined under a new member id */
    KC_RB_METADATA_CHANGED, /* a member rejoined with other protocols or subscription, or the
                             * subscribed topics changed */
    KC_RB_LEADER_REJOINED,  /* the leader of a Stable classic group rejoined */
    KC_RB_SYNC_TIMEOUT,     /* members did not sync in time (classic), or a consumer member did
                             * not revoke within its rebalance timeout and was fenced */
    KC_RB_UPGRADE,          /* a classic group became a consumer group (a consumer-protocol
                             * member joined it: member_id) */
    KC_RB_DOWNGRADE,        /* a consumer group became a classic group (its last
                             * consumer-protocol member left: member_id) */
    KC_RB_OTHER,
    KC_RB_CAUSES
};

/* "member_joined", "member_left", "session_timeout", "static_member_replaced",
 * "metadata_changed", "leader_rejoined", "sync_timeout", "upgrade", "downgrade", "other"
 * ("other" out of range). */
const char *kc_rb_cause_name(int cause);

/* How many rebalances each group remembers. */
#define KC_RB_HISTORY 32

/* Histograms of the classic join phase (time in PreparingRebalance) and sync phase (time in
 * CompletingRebalance). Bucket i counts durations <= kc_gm_phase_bounds_s[i] (and above the
 * bound before it); the last bucket counts the rest (+Inf). */
#define KC_GM_PHASE_BUCKETS 12
extern const double kc_gm_phase_bounds_s[KC_GM_PHASE_BUCKETS - 1];

/* Histogram of the time consumer groups' target assignments took to compute (the assignor's
 * run, on the loop or off it), the same way. */
#define KC_GM_ASSIGN_BUCKETS 12
extern const double kc_gm_assign_bounds_s[KC_GM_ASSIGN_BUCKETS - 1];

#define KC_GM_REFUSED_KINDS 4

typedef struct kc_gm_stats_s {
    uint64_t rebalances[KC_RB_CAUSES];        /* rebalances started, by cause (both group kinds) */
    uint64_t join_phase[KC_GM_PHASE_BUCKETS]; /* non-cumulative bucket counts */
    double join_phase_sum_s;
    uint64_t sync_phase[KC_GM_PHASE_BUCKETS];
    double sync_phase_sum_s;
    /* Target assignments computed: [0] on the loop, [1] off it (offloaded). */
    uint64_t assign_time[2][KC_GM_ASSIGN_BUCKETS];
    double assign_time_sum_s[2];
    uint64_t assign_failed; /* assignor runs that failed (out of memory, invalid input) */
    /* Timers: fired (a session, rebalance, join, sync or pending-member timeout acted on),
     * examined (heap entries looked at by kc_gm_tick, fired or not: the work of the timers),
     * and ticks that stopped at tick_budget with more due. */
    uint64_t timers_fired;
    uint64_t timers_examined;
    uint64_t tick_slices;
    /* Requests refused for a reason their user must act on, by KC_GM_REFUSED_*. */
    uint64_t refused[KC_GM_REFUSED_KINDS];
    /* Subscription regexes: distinct ones members use, and ones compiled in the caches. */
    uint64_t regexes_in_use, regexes_compiled;
} kc_gm_stats_t;

enum {
    KC_GM_REFUSED_REGEX_INVALID = 0, /* INVALID_REGULAR_EXPRESSION: syntax, length, nesting */
    KC_GM_REFUSED_REGEX_LIMIT = 1, /* INVALID_REGULAR_EXPRESSION: group.consumer.regex.max.count */
    KC_GM_REFUSED_RECORD_SIZE = 2, /* a record larger than message.max.bytes */
    KC_GM_REFUSED_PROTOCOL = 3,    /* a member of the other protocol in a group with members */
};

/* "regex_invalid", "regex_limit", "record_too_large", "protocol_mix": the metric's label
 * values. */
const char *kc_gm_refused_name(int kind);

/* ADD this manager's counters into *out (so a caller sums managers by calling it for each on
 * a zeroed struct). */
void kc_gm_stats(const kc_gm_t *gm, kc_gm_stats_t *out);

#endif
