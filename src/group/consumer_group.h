/* consumer_group.h - inside the group room: the data of the consumer machine (KIP-848 groups,
 * their members, current and target assignments, the plan a change is made of), shared by
 * consumer.c and the rooms it is built from: assignment.c (partition sets and who holds what),
 * reconcile.c (a member's current assignment), target.c (target assignments, regular
 * expressions, assignment jobs), consumer_load.c (replay) and consumer_admin.c (offsets, admin,
 * describe, dump, JSON). Neither the manager nor the classic machine includes it.
 */
#ifndef KC_GROUP_CONSUMER_GROUP_H
#define KC_GROUP_CONSUMER_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/assignor.h"
#include "group/errors.h"
#include "group/history.h"
#include "group/manager.h"
#include "group/notes.h"
#include "group/regex.h"
#include "group/strmap.h"
#include "group/text.h"
#include "proto/gen_consumer.h"
#include "proto/gen_records.h"
#include "util/heap.h"
#include "util/diag.h"

#define NEVER INT64_MAX

/* Kafka's MemberState values, as written in ConsumerGroupCurrentMemberAssignmentValue. */
enum { MS_STABLE = 0, MS_UNREVOKED = 1, MS_UNRELEASED = 2, MS_UNKNOWN = 127 };

/* The derived group states. */
enum { CG_EMPTY = 0, CG_ASSIGNING, CG_RECONCILING, CG_STABLE };

/* Kafka's ConsumerGroupHeartbeatRequest constants. */
#define LEAVE_EPOCH (-1)

#define STATIC_LEAVE_EPOCH (-2)

/* A (topic, partition) pair. */
typedef struct tp_s {
    kc_uuid_t topic;
    int32_t part;
} tp_t;

/* A growable list of pairs. */
typedef struct tpv_s {
    tp_t *v;
    size_t n, cap;
    bool oom;
} tpv_t;

/* One topic's partitions in an assignment. */
typedef struct tpl_s {
    kc_uuid_t topic;
    int32_t n;
    const int32_t *p; /* ascending, distinct */
} tpl_t;

/* An assignment: topics by id, each with its partitions, in one allocation. Immutable once
 * built; NULL is the empty assignment. */
typedef struct asg_s {
    int32_t n;     /* topics */
    int32_t total; /* partitions */
    tpl_t t[];
} asg_t;

/* Per group: (topic, partition) -> how many members hold it (assigned or pending revocation),
 * kept up to date by the apply primitives, so that a heartbeat asks in O(1) whether another
 * member still holds a partition (Kafka keeps its currentPartitionEpoch map for this) instead
 * of collecting and sorting every member's partitions at every heartbeat. Open addressing with
 * linear probing and backward-shift deletion; a slot with count 0 is empty. Keeping it up to
 * date is best effort: when memory runs out it is dropped (valid false) and rebuilt by the
 * next heartbeat that needs it, so applying records still cannot fail. */
typedef struct hslot_s {
    kc_uuid_t topic;
    int32_t part;
    int32_t count;
} hslot_t;

typedef struct holders_s {
    hslot_t *v;
    size_t cap; /* 0 or a power of two */
    size_t n;   /* slots in use */
    bool valid;
} holders_t;

/* What ConsumerGroupMemberMetadataValue holds: one allocation, immutable. */
typedef struct cmeta_s {
    kc_str_t instance_id, rack_id, client_id, client_host, regex, assignor;
    int32_t rebalance_timeout_ms;
    int32_t n_topics;
    const kc_str_t *topics; /* subscribed topic names: sorted by bytes, distinct */
    /* A member that uses the classic protocol (Kafka's ClassicMemberMetadata, the tagged field
     * of its metadata record): its session timeout and the protocols of its JoinGroup (name
     * and ConsumerProtocolSubscription bytes), in the request's order; the first one names
     * the protocol its JoinGroup and SyncGroup answers carry. */
    bool classic;
    int32_t classic_session_timeout_ms;
    int32_t n_protocols;
    const kc_classic_protocol_t *protocols;
} cmeta_t;

typedef struct cmember_s {
    struct cmember_s *prev, *next; /* the group's members in the order they were added */
    kc_str_t id;                   /* view into this allocation */
    cmeta_t *meta;                 /* owned, never NULL */
    int32_t epoch, prev_epoch;
    int8_t state;
    asg_t *assigned, *revoking; /* owned; NULL = none */
    int64_t session_deadline;
    int64_t rebalance_deadline;
    int32_t rebalance_epoch; /* the epoch the rebalance timer was armed for */
    int64_t last_hb_ms;      /* when its session was last renewed (for introspection) */
    /* A classic member's join or sync timeout (Kafka's consumerGroupJoinKey / SyncKey timers:
     * both fence it), NEVER when none runs; it shares the session heap, whose key is no later
     * than the earlier of the two deadlines. */
    int64_t classic_deadline;
    int8_t classic_timer; /* CT_* */
    /* In the group's heaps, keyed no later than the deadlines above. */
    kc_heap_node_t session_node, rebalance_node;
} cmember_t;

/* Which classic timer runs (cmember_t.classic_timer). */
enum { CT_NONE = 0, CT_JOIN = 1, CT_SYNC = 2 };

/* A member's target assignment (kept apart from the member: replay may see it first). */
typedef struct ctarget_s {
    kc_str_t member_id; /* view into this allocation */
    asg_t *asg;         /* owned; NULL = empty */
} ctarget_t;

/* A regular expression resolved against the topics: one allocation. */
typedef struct rres_s {
    kc_str_t regex;
    int32_t n;
    kc_str_t *topics; /* sorted */
} rres_t;

typedef struct cgroup_s {
    kc_ghead_t gh; /* its kind, its place in the manager's heap */
    kc_consumer_t *c;
    kc_str_t id; /* view into this allocation */
    int32_t epoch;
    int64_t metadata_hash;
    int32_t assignment_epoch;    /* -1 after its tombstone */
    bool has_partition_metadata; /* a ConsumerGroupPartitionMetadata record is in the log */
    int logged_state;            /* the state last logged */
    cmember_t *head, *tail;
    int32_t n_members;
    kc_strmap_t by_id;       /* member id -> cmember_t */
    kc_strmap_t by_instance; /* instance id -> cmember_t */
    kc_strmap_t targets;     /* member id -> ctarget_t */
    holders_t holders;       /* (topic, partition) -> members holding it */
    /* The metadata check (Kafka's metadata refresh): the topics version last looked at (0 =
     * look at the next heartbeat) and the regular expressions as resolved then. */
    uint64_t topics_version;
    rres_t **rres;
    int32_t n_rres;
    int64_t rx_refreshed; /* monotonic ms of that resolution */
    /* The members by session and by rebalance deadline (a key may be early), room for all. */
    kc_heap_t sessions, rebalances;
    bool loading;     /* replayed, waiting for kc_consumer_load_complete */
    kc_history_t rb;  /* one entry per group-epoch bump, ended when the group is Stable */
    kc_gm_job_t *job; /* the target assignment being computed off the loop, or NULL */
    /* KIP-1263 batching: when its last target assignment was started (assigned_once false:
     * never since the group was created or loaded), and when a deferred one falls due (NEVER:
     * none is waiting). Soft state, not in the log. */
    bool assigned_once;
    int64_t last_assign_ms;
    int64_t assign_due;
} cgroup_t;

struct kc_consumer_s {
    kc_gm_t *gm;
    kc_gm_config_t cfg;
    char *assignors; /* owned copy of cfg.consumer_assignors */
    kc_gm_ops_t ops;
    int64_t now;       /* monotonic: timers and ages */
    int64_t wall;      /* wall clock: timestamps in records and for people */
    kc_rx_cache_t *rx; /* the members' subscription regexes, compiled */
    /* During a heartbeat: the DESCRIBE filter of its principal (NULL: none given), and whether
     * the group's cached regex resolutions are too old to use (a periodic refresh). */
    const kc_gm_topic_filter_t *filter;
    bool rx_fresh;
    kc_notes_t notes; /* refusals logged, per group */
};

/* A list of topic names (views). */
typedef struct strv_s {
    kc_str_t *v;
    size_t n, cap;
    bool oom;
} strv_t;

/* Resolutions made for one computation, freed together when it is done. */
typedef struct keep_s {
    rres_t **v;
    size_t n, cap;
} keep_t;

/* What a planned record does when applied. */
enum {
    A_GROUP_EPOCH,      /* ConsumerGroupMetadata: epoch, metadata hash */
    A_GROUP_DEL,        /* its tombstone: the group is gone */
    A_PARTMETA_DEL,     /* ConsumerGroupPartitionMetadata tombstone */
    A_META,             /* ConsumerGroupMemberMetadata */
    A_META_DEL,         /* its tombstone: the member is gone */
    A_TARGET_EPOCH,     /* ConsumerGroupTargetAssignmentMetadata */
    A_TARGET_EPOCH_DEL, /* its tombstone */
    A_TARGET,           /* ConsumerGroupTargetAssignmentMember */
    A_TARGET_DEL,       /* its tombstone */
    A_CURRENT,          /* ConsumerGroupCurrentMemberAssignment */
    A_CURRENT_DEL,      /* its tombstone */
};

typedef struct act_s {
    int kind;
    kc_str_t member_id; /* a view valid until the act is applied */
    cmeta_t *meta;      /* A_META; owned until applied */
    asg_t *asg, *asg2;  /* A_TARGET: target; A_CURRENT: assigned, pending revocation */
    ctarget_t *tslot;   /* A_TARGET: the entry for a member that has no target yet */
    int32_t epoch, prev_epoch;
    int8_t state;
    int64_t hash;
    uint8_t *key, *val; /* the encoded record; val NULL for a tombstone */
    size_t klen, vlen;
} act_t;

/* A planned change: records encoded, objects allocated, maps reserved (see the file comment). */
typedef struct plan_s {
    kc_consumer_t *c;
    cgroup_t *g;           /* the group the plan changes */
    bool new_group;        /* g is new: put in the map first at commit */
    bool delete_classic;   /* remove the empty classic group of g's id first (with tombstone) */
    cmember_t *new_member; /* the member the plan adds, consumed by its first record */
    act_t *v;
    size_t n, cap;
    size_t new_targets, new_instances; /* map entries reserved for the plan */
    bool oom;
    /* Why the plan bumps the group epoch, for the rebalance history (views valid until the
     * commit; rb_set false: the subscribed topics' metadata changed). */
    bool rb_set;
    int rb_cause;
    kc_str_t rb_member, rb_reason;
    kc_str_t rb_joined; /* the member that joins (null: none) */
} plan_t;

/* A member's current assignment state. */
typedef struct mview_s {
    int32_t epoch, prev_epoch;
    int8_t state;
    const asg_t *assigned, *revoking;
} mview_t;

/* The partitions a member reported owning in its heartbeat (n < 0: not reported). */
typedef struct owned_s {
    const kc_consumer_group_heartbeat_topic_partitions_t *v;
    int32_t n;
} owned_t;

typedef struct recon_s {
    bool changed;
    int16_t err; /* FENCED_MEMBER_EPOCH for a member in an unknown state that owns partitions */
    bool oom;
    int32_t epoch, prev_epoch;
    int8_t state;
    asg_t *assigned, *revoking; /* owned when changed */
} recon_t;

typedef struct rin_s {
    const mview_t *m;
    const kc_uuid_t *subs; /* topic ids the member subscribes to, sorted */
    size_t n_subs;
    int32_t target_epoch;
    const asg_t *target;
    /* Who holds what (assigned or pending revocation): the group's map, in which the member
     * itself and the static member it replaces (when any) do not count. */
    const holders_t *holders;
    const cmember_t *skip1, *skip2;
    const owned_t *owned;
    bool sub_changed;
} rin_t;

/* An assignment to compute (Kafka's TargetAssignmentBuilder input), self-contained: the spec
 * and everything it points to are copies in the job's arena, so the assignor can run on
 * another thread while the group changes (see kc_gm_job_t in group.h). */
struct kc_gm_job_s {
    cgroup_t *g;     /* the group; NULL once it is gone (the job then only frees itself) */
    int32_t epoch;   /* the group epoch the assignment is for */
    bool offloaded;  /* handed to the host's offload op */
    uint64_t weight; /* members plus the partitions of the subscribed topics */
    kc_arena_t a;    /* the spec, the ids and the topic ids */
    kc_assign_spec_t spec;
    kc_str_t *ids;          /* member ids, in spec order */
    kc_str_t *instance_ids; /* their instance ids (null: dynamic) */
    kc_uuid_t *topic_ids;   /* per spec topic */
    kc_str_t assignor;      /* its name, for logs */
    const kc_assignor_t *asr;
    kc_assign_result_t res;
    int rc;
    uint64_t run_ns;
};

/* A classic JoinGroup run through the heartbeat's steps (consumer_classic.c): what the
 * member's metadata takes from it. */
typedef struct cjoin_s {
    bool unknown_member; /* it came without a member id (a static member may replace) */
    int32_t session_timeout_ms;
    const kc_classic_protocol_t *protocols; /* the JoinGroup's protocols, in its order */
    int32_t n_protocols;
} cjoin_t;

/* The heartbeat being answered. */
typedef struct hb_s {
    kc_consumer_t *c;
    int16_t version;
    const kc_consumer_group_heartbeat_request_t *q;
    kc_str_t client_id, client_host;
    kc_arena_t *a;
    kc_consumer_group_heartbeat_response_t *r;
    const cjoin_t *cj; /* a classic member's JoinGroup (NULL: a ConsumerGroupHeartbeat) */
} hb_t;

/* Kafka's consumerGroupHeartbeat for a join (epoch 0) or a regular heartbeat. */
/* The state of one ConsumerGroupHeartbeat while do_heartbeat's steps run; what a step
 * leaves here (the plan, the member, the target) the next step uses, and hb_state_free
 * releases what is still owned. */
typedef struct hbs_s {
    kc_consumer_t *c;
    const kc_consumer_group_heartbeat_request_t *q;
    int64_t now; /* wall clock, for records */
    kc_str_t gid, mid, inst;
    bool create;
    owned_t owned;
    plan_t p;
    cgroup_t *g;
    cmember_t *old, *gone; /* the member as it was; a static member being replaced */
    mview_t cur;           /* the member's current assignment before this heartbeat */
    const cmeta_t *base;   /* its metadata before this heartbeat */
    kc_str_t mview_id;     /* a view of the member id that outlives the commit */
    cmeta_t *upd, *dflt;   /* its metadata after; the default for a new member */
    bool names_changed, regex_changed, sub_changed, bump;
    kc_gm_topics_t tv;
    int32_t group_epoch, target_epoch;
    const asg_t *target;
    asg_t *my_target;
    rres_t **new_rres;
    int32_t n_new_rres;
    kc_uuid_t *sub_ids;
    size_t n_sub_ids;
    kc_gm_job_t *job, *ran;
    recon_t rc;
    int32_t final_epoch;
    const asg_t *final_assigned;
    int8_t final_state;
    asg_t *resp_copy;
} hbs_t;

/* Members whose sessions ended together are fenced together, at most this many in one group
 * epoch bump: one fence costs about as much as the group's size whatever the number fenced,
 * so 10 000 silent members cost 40 fences, not 10 000. */
enum { FENCE_BATCH = 256 };

typedef struct dbuf_s {
    char *p;
    size_t len, used;
} dbuf_t;

/* ---- Defined in consumer_classic.c ---- */

/* The version a ConsumerProtocol metadata starts with (-1: too short). */
int16_t kc_consumer_protocol_version(kc_bytes_t metadata);

/* Decode a ConsumerProtocolSubscription (version-prefixed; a newer version is read as the
 * newest this side knows, as Kafka's generated readers do) into `out`, from `a`. 0, or -1
 * when malformed. */
int kc_consumer_decode_subscription(kc_bytes_t metadata, kc_arena_t *a,
                                    kc_consumer_protocol_subscription_t *out);

/* `asg` as a ConsumerProtocolAssignment of `version` (clamped to 0-3) with topic names from
 * `tv` (Kafka's prepareAssignment), from `a`; *oom set when out of memory. */
kc_bytes_t kc_consumer_encode_assignment(const asg_t *asg, const kc_gm_topics_t *tv,
                                         int16_t version, kc_arena_t *a, bool *oom);

/* Kafka's validateOnlineDowngradeWithFencedMembers and convertToClassicGroup, before fencing
 * members ms[0..n): when only classic members would remain and the manager allows it, the
 * group's tombstones are written and the classic group of the remaining members takes its
 * place, rebalancing. 1 when converted (`g` is freed), 0 when not (nothing changed). */
int kc_consumer_maybe_downgrade(kc_consumer_t *c, cgroup_t *g, cmember_t **ms, size_t n,
                                const char *reason);

/* ---- Defined in consumer.c ---- */

/* Kafka's createGroupTombstoneRecords: plan every tombstone of the plan's group. */
void kc_consumer_plan_delete(plan_t *p, int64_t now);

/* Kafka's consumerGroupHeartbeat, or with h->cj its classicGroupJoinToConsumerGroup: the
 * heartbeat's steps, answer in h->r (error_code, member id and epoch). */
void kc_consumer_run_heartbeat(hb_t *h);

/* A request refused for a reason its user must act on: counted (KC_GM_REFUSED_*), logged at
 * info once per group and reason. */
void kc_consumer_refused(kc_consumer_t *c, int kind, kc_str_t group_id, kc_str_t reason);

/* Kafka's Uuid.randomUuid().toString() from `a` (a null view when out of memory). */
kc_str_t kc_consumer_random_member_id(kc_consumer_t *c, kc_arena_t *a);

/* Arm a classic member's join or sync timeout (CT_JOIN, CT_SYNC) `ms` from now; with
 * `if_absent`, a running join timeout is kept as it is (Kafka's scheduleIfAbsent). */
void kc_consumer_set_classic_timer(cgroup_t *g, cmember_t *m, int kind, int32_t ms, bool if_absent);

/* Stop a classic member's join or sync timeout (CT_JOIN, CT_SYNC) if that one runs. */
void kc_consumer_cancel_classic_timer(cmember_t *m, int kind);

extern const char *const kc_consumer_state_names[];

/* Kafka's name of a member state (MS_*). */
const char *kc_consumer_member_state_name(int8_t s);

/* A message from `a` ("" when out of memory). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
kc_str_t
kc_consumer_msgf(kc_arena_t *a, const char *fmt, ...);

/* A copy of `src` in one allocation, with its topics sorted and de-duplicated (a set, as
 * Kafka keeps them). NULL when out of memory. */
cmeta_t *kc_consumer_meta_new(const cmeta_t *src);

/* Whether the metadata subscribes to `topic` by name. */
bool kc_consumer_meta_has_topic(const cmeta_t *m, kc_str_t topic);

/* The consumer machine's time as one value. */
kc_time_t kc_consumer_time(const kc_consumer_t *c);

/* Take the caller's time (every entry point does, first). */
void kc_consumer_set_time(kc_consumer_t *c, kc_time_t t);

/* The configured assignors, or the default list. */
const char *kc_consumer_assignor_list(const char *assignors);

/* The i-th name of the list (i = 0 is the default), or a null view. */
kc_str_t kc_consumer_list_at(const char *list, int i);

/* The consumer group `id` names (in the manager's map), or NULL. */
cgroup_t *kc_consumer_find_group(const kc_consumer_t *c, kc_str_t id);

/* The member `id` of the group, or NULL. */
cmember_t *kc_consumer_find_member(const cgroup_t *g, kc_str_t id);

/* The member holding instance id `instance`, or NULL. */
cmember_t *kc_consumer_find_static(const cgroup_t *g, kc_str_t instance);

/* The target entry of member `member_id`, or NULL. */
ctarget_t *kc_consumer_find_target(const cgroup_t *g, kc_str_t member_id);

/* The target assignment of member `member_id` (NULL: none or empty). */
const asg_t *kc_consumer_target_of(const cgroup_t *g, kc_str_t member_id);

/* The group's derived state (CG_*). */
int kc_consumer_compute_state(const cgroup_t *g);

/* A new member with a copy of `id`, in no map yet (NULL when out of memory). */
cmember_t *kc_consumer_member_alloc(kc_str_t id);

/* Free a member that is in no map. */
void kc_consumer_member_free(cmember_t *m);

/* A new target entry with a copy of `member_id` (NULL when out of memory). */
ctarget_t *kc_consumer_target_alloc(kc_str_t member_id);

/* Free a target entry that is in no map (NULL: nothing). */
void kc_consumer_target_free(ctarget_t *t);

/* Forget the group's resolved regular expressions. */
void kc_consumer_rres_clear(cgroup_t *g);

/* A new empty consumer group `id`, in neither the map nor the heap (NULL when out of memory). */
cgroup_t *kc_consumer_group_alloc(kc_consumer_t *c, kc_str_t id);

/* Renew a member's session: a later deadline leaves its heap entry where it is (moved when it
 * comes up), so a heartbeat costs O(1). The member is in the group, whose heaps have room. */
void kc_consumer_set_session(cgroup_t *g, cmember_t *m);

/* Start the member's rebalance timeout (it has partitions to revoke). */
void kc_consumer_set_rebalance(cgroup_t *g, cmember_t *m);

/* Room in the group's timer heaps for one more member. 0, or -1 when out of memory. */
int kc_consumer_reserve_member_timers(cgroup_t *g);

/* Room for one more group in the map and the heap. 0, or -1 when out of memory. */
int kc_consumer_reserve_group(kc_consumer_t *c);

/* Append an action of `kind` to the plan (NULL, with p->oom set, when out of memory). */
act_t *kc_consumer_plan_add(plan_t *p, int kind, kc_str_t member_id);

/* Free what the plan still owns (after a commit: nothing but its arrays). */
void kc_consumer_plan_free(plan_t *p);

/* Encode act `a`'s record for group `gid` (value from the act's fields; `hash`, `epoch` etc.
 * as the kind needs). Sets p->oom on failure. */
void kc_consumer_act_encode(plan_t *p, act_t *a, kc_str_t gid, int64_t now);

/* -- The primitives. Each is Kafka's replay of one record; the caller reserved what they put
 * into maps and passes the objects they take over. */
void kc_consumer_ap_group_epoch(cgroup_t *g, int32_t epoch, int64_t hash);

/* Kafka's ConsumerGroup.updateMember for the metadata part: `slot` is the member to add when
 * there is none with this id (consumed: set to NULL). Takes `meta`. */
cmember_t *kc_consumer_ap_member(cgroup_t *g, kc_str_t member_id, cmember_t **slot);

/* Apply a member metadata record: `meta` is taken; *slot is a new member to install when the id has
 * none. */
void kc_consumer_ap_meta(cgroup_t *g, kc_str_t member_id, cmeta_t *meta, cmember_t **slot);

/* Apply a member metadata tombstone: the member is gone. */
void kc_consumer_ap_meta_del(cgroup_t *g, kc_str_t member_id);

/* Apply a current assignment record; `assigned` and `revoking` are taken. */
void kc_consumer_ap_current(cgroup_t *g, kc_str_t member_id, int32_t epoch, int32_t prev,
                            int8_t state, asg_t *assigned, asg_t *revoking, cmember_t **slot);

/* Kafka replays a current-assignment tombstone as epoch -1 with nothing assigned. */
void kc_consumer_ap_current_del(cgroup_t *g, kc_str_t member_id);

/* Apply a target assignment record; `asg` is taken; *slot is a new entry to install when needed. */
void kc_consumer_ap_target(cgroup_t *g, kc_str_t member_id, asg_t *asg, ctarget_t **slot);

/* Apply a target assignment tombstone. */
void kc_consumer_ap_target_del(cgroup_t *g, kc_str_t member_id);

/* Apply the group's tombstone: out of the manager's map and heap, and freed. */
void kc_consumer_ap_group_del(kc_consumer_t *c, cgroup_t *g);

/* Emit every planned record and apply it. Cannot fail: everything was prepared. */
void kc_consumer_commit(plan_t *p, const char *reason);

/* Plan a ConsumerGroupTargetAssignmentMember record, taking `asg`. */
void kc_consumer_plan_target(plan_t *p, kc_str_t member_id, asg_t *asg, int64_t now);

/* Kafka's consumerGroupFenceMembers: remove the members (their records' tombstones) and bump
 * the group epoch with the metadata hash of what the others subscribe to. 0, or -1 when out
 * of memory (nothing changed), or 1 when the group became a classic group instead
 * (kc_consumer_maybe_downgrade: `g` is freed). */
int kc_consumer_fence(kc_consumer_t *c, cgroup_t *g, cmember_t **ms, size_t n, const char *reason,
                      int cause);

#endif
