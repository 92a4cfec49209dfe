/* classic_group.h - inside the group room: the data of the classic machine (groups, members,
 * protocols, parked requests, the per-request answering context), shared by classic.c (the
 * state machine and its requests), classic_load.c (replay) and classic_admin.c (offsets,
 * admin, describe, JSON). Neither the manager nor the consumer machine includes it.
 */
#ifndef KC_SRC_GROUP_CLASSIC_GROUP_H
#define KC_SRC_GROUP_CLASSIC_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"
#include "group/errors.h"
#include "group/history.h"
#include "group/manager.h"
#include "group/notes.h"
#include "group/strmap.h"
#include "group/text.h"
#include "proto/gen_consumer.h"
#include "proto/gen_records.h"
#include "util/heap.h"
#include "util/diag.h"

#define NEVER INT64_MAX

/* __consumer_offsets record versions Kafka writes for a classic group. */
#define GROUP_METADATA_KEY_VERSION 2

#define GROUP_METADATA_VALUE_VERSION 3

/* A member's protocols, in its order of preference; names and metadata live in the same
 * allocation right after the array. Never changed once made, so members of a group that sent
 * the same protocols share one (refs counts them; kc_classic_protoset_unref frees). */
typedef struct protoset_s {
    int32_t refs;
    int32_t n;
    kc_join_group_request_protocol_t v[];
} protoset_t;

/* A parked request (its member's join_parked / sync_parked says whether it is one). */
typedef struct waiter_s {
    void *ptr;    /* what the host gave kc_gm_join / kc_gm_sync */
    uint64_t seq; /* the request that parked it */
} waiter_t;

/* One allocation: the struct, then its id, instance id, client id and client host, each with
 * a NUL (a null one takes no room). Read the last three with kc_classic_member_instance,
 * _client_id and _client_host. */
typedef struct member_s {
    struct member_s *prev, *next; /* the group's members in the order they were added */
    kc_str_t id;                  /* view into this member's own allocation */
    protoset_t *protos;           /* shared (protoset_t.refs) */
    uint8_t *assignment;          /* owned; NULL when empty */
    waiter_t join, sync;
    int64_t hb_deadline;
    int64_t last_hb_ms;     /* when its session was last renewed (for introspection) */
    kc_heap_node_t hb_node; /* in the group's mheap, keyed no later than hb_deadline */
    int32_t rebalance_timeout_ms;
    int32_t session_timeout_ms;
    int32_t assignment_len;
    int32_t instance_len, client_id_len, client_host_len; /* -1: null (instance: dynamic) */
    bool join_parked, sync_parked;
    bool is_new;       /* joined and has not yet completed a join phase */
    bool pending_sync; /* expected to send SyncGroup in this generation */
} member_t;

/* The view of a string kept after the member's id (`skip` bytes in), `len` -1 for null. */
static inline kc_str_t kc_classic_member_text(const member_t *m, size_t skip, int32_t len)
{
    const char *p = (const char *)(m + 1) + (m->id.len >= 0 ? (size_t)m->id.len + 1 : 0) + skip;
    return len >= 0 ? (kc_str_t){p, len} : KC_STR_NULL;
}

/* The member's group instance id (null for a dynamic member). */
static inline kc_str_t kc_classic_member_instance(const member_t *m)
{
    return kc_classic_member_text(m, 0, m->instance_len);
}

static inline kc_str_t kc_classic_member_client_id(const member_t *m)
{
    size_t skip = m->instance_len >= 0 ? (size_t)m->instance_len + 1 : 0;
    return kc_classic_member_text(m, skip, m->client_id_len);
}

static inline kc_str_t kc_classic_member_client_host(const member_t *m)
{
    size_t skip = (m->instance_len >= 0 ? (size_t)m->instance_len + 1 : 0) +
                  (m->client_id_len >= 0 ? (size_t)m->client_id_len + 1 : 0);
    return kc_classic_member_text(m, skip, m->client_host_len);
}

/* A KIP-394 member id handed out with MEMBER_ID_REQUIRED, waiting for its second JoinGroup. */
typedef struct pending_s {
    kc_str_t id; /* view into this allocation */
    int64_t deadline;
    kc_heap_node_t node; /* in the group's pheap, keyed at its deadline */
} pending_t;

/* How many members support a protocol (Kafka's supportedProtocols). */
typedef struct pcount_s {
    char *name;
    int32_t len;
    int32_t count;
} pcount_t;

enum { JOIN_TIMER_NONE, JOIN_TIMER_INITIAL, JOIN_TIMER_COMPLETE };

/* How a group came to be while the partition was loaded: not at all (a live group), from a
 * GroupMetadata record, or as the simple group of a replayed offset commit. */
enum { LOAD_NONE, LOAD_RECORD, LOAD_SIMPLE };

typedef struct group_s {
    kc_ghead_t gh; /* its kind, its place in the manager's heap */
    kc_gm_t *gm;
    kc_str_t id; /* view into this allocation */
    kc_group_state_t state, prev_state;
    int64_t state_ts;   /* wall clock: Kafka's current state timestamp */
    int64_t state_mono; /* monotonic: when it entered the state, for the phase histograms */
    char *ptype;        /* protocol type; NULL = none */
    int32_t ptype_len;
    char *pname; /* selected protocol; pname_len -1 = none */
    int32_t pname_len;
    size_t pname_cap;
    int32_t generation;
    member_t *leader;
    member_t *head, *tail;
    int32_t n_members, n_awaiting_join, n_pending_sync;
    kc_strmap_t by_id;       /* member id -> member_t */
    kc_strmap_t by_instance; /* group instance id -> member_t */
    kc_strmap_t pending;     /* member id -> pending_t */
    pcount_t *pc;
    int32_t n_pc, cap_pc;
    bool new_member_added;
    /* Subscribed topics (consumer protocol); subs_known false = unknown. One allocation. */
    bool subs_known;
    int32_t n_subs;
    kc_str_t *subs;
    /* Timers. */
    int64_t join_deadline;
    int join_kind;
    int32_t init_delay_ms, init_remaining_ms;
    int64_t sync_deadline;
    int32_t sync_generation;
    kc_heap_t mheap; /* members by session deadline (a key may be early), room for all */
    kc_heap_t pheap; /* pending members by deadline, room for all */
    int loading;     /* LOAD_*: replayed and waiting for kc_gm_load_complete */
    /* Rebalance history. rb_armed: rb_start opened the running entry for an event that is
     * about to call prepare_rebalance, which must keep it. */
    kc_history_t rb;
    bool rb_armed;
} group_t;

/* What the JoinGroup or SyncGroup being handled needs in order to be answered. kc_classic_join
 * and kc_classic_sync keep one on their stack and pass it down to every function that may
 * answer or park a request; paths that no JoinGroup or SyncGroup drives (timers, LeaveGroup,
 * deletes, loading) pass NULL, and a waiter they complete is answered through the host's
 * join_done/sync_done. */
typedef struct req_s {
    uint64_t seq; /* the request's number: a waiter it parks carries it */
    void *waiter; /* the host's pointer for a parked answer */
    int16_t version;
    kc_arena_t *a; /* the request's arena: its answer lives there */
    kc_join_group_response_t *join;
    kc_sync_group_response_t *sync;
    bool answered, parked, oom;
} req_t;

typedef struct join_req_s {
    const kc_join_group_request_t *req;
    int16_t version;
    kc_str_t member_id;
    kc_str_t instance_id; /* null below v5 */
    kc_str_t client_id, client_host;
    kc_str_t reason; /* "not provided" when absent */
    int32_t session_timeout_ms, rebalance_timeout_ms;
} join_req_t;

/* ---- Defined in classic.c ---- */

/* Take the caller's time (every entry point does, first). */
void kc_classic_set_time(kc_gm_t *gm, kc_time_t t);

/* The group's protocol type (null: none). */
kc_str_t kc_classic_ptype_view(const group_t *g);

/* The group's selected protocol (null: none). */
kc_str_t kc_classic_pname_view(const group_t *g);

/* Whether the group's protocol type is "consumer". */
bool kc_classic_uses_consumer_protocol(const group_t *g);

/* A copy of `b` in the arena (null stays null); sets *oom on failure. */
kc_bytes_t kc_classic_arena_bytes(kc_arena_t *a, kc_bytes_t b, bool *oom);

/* The protocol set of a member read back from a GroupMetadata record: the record keeps only
 * the metadata of the group's selected protocol, so that is all the member supports. */
protoset_t *kc_classic_protoset_one(kc_str_t name, kc_bytes_t metadata);

/* A protocol set with copies of v[0..n) (NULL when out of memory). */
protoset_t *kc_classic_protoset_from(const kc_join_group_request_protocol_t *v, int32_t n);

/* Kafka's ClassicGroup.selectProtocol over the group's members. */
kc_str_t kc_classic_select_protocol(group_t *g);

/* Drop one reference to `ps` (NULL: nothing), freeing it with the last. */
void kc_classic_protoset_unref(protoset_t *ps);

/* The metadata a member gave for `name` (empty when it gave none). */
kc_bytes_t kc_classic_member_metadata(const member_t *m, kc_str_t name);

/* Make sure every protocol of `ps` has a counter, so that pc_add(+1) cannot fail. */
int kc_classic_pc_reserve(group_t *g, const protoset_t *ps);

/* A new member with copies of its ids, in no group (NULL when out of memory). */
member_t *kc_classic_member_new(kc_str_t id, kc_str_t instance, kc_str_t client_id, kc_str_t host);

/* Free a member that is in no group. */
void kc_classic_member_free(member_t *m);

/* The member `id` of the group, or NULL. */
member_t *kc_classic_find_member(group_t *g, kc_str_t id);

/* The member holding instance id `instance`, or NULL. */
member_t *kc_classic_find_static(group_t *g, kc_str_t instance);

/* Whether `m` leads the group. */
bool kc_classic_is_leader(const group_t *g, const member_t *m);

/* Renew a member's session. A later deadline leaves its heap entry where it is (the entry is
 * moved when it comes up), so a heartbeat costs O(1); an earlier one moves it up. The member
 * is in the group, whose mheap has room for it. */
void kc_classic_set_hb(group_t *g, member_t *m, int64_t timeout_ms);

/* The one place a group changes state. Leaving PreparingRebalance or CompletingRebalance
 * (other than for Dead) counts the time spent there in the join or sync phase histogram. An
 * illegal transition is refused and logged as an
 * error (Kafka throws IllegalStateException). */
void kc_classic_set_state(group_t *g, kc_group_state_t to, const char *reason);

/* Emit GroupMetadataKey v2 + GroupMetadataValue v3 (value NULL: tombstone). `assign` gives
 * each member's assignment in list order (NULL: the members' stored ones); `empty` writes
 * Kafka's newEmptyGroupMetadataRecord. Returns 0, -1 when out of memory, or -2 when the record
 * would be larger than message.max.bytes (nothing is emitted; Kafka's RecordTooLargeException,
 * which its callers answer with UNKNOWN_SERVER_ERROR). */
int kc_classic_emit_group_metadata(group_t *g, bool tombstone, bool empty,
                                   const kc_bytes_t *assign);

/* The classic group `id` names (in the manager's map), or NULL. */
group_t *kc_classic_find_group(const kc_gm_t *gm, kc_str_t id);

/* A new Empty group that is not yet in the map (nor in the heap). NULL when out of memory. */
group_t *kc_classic_group_alloc(kc_gm_t *gm, kc_str_t id);

/* A new Empty group `id`, put in the manager's map (NULL when out of memory). */
group_t *kc_classic_group_create(kc_gm_t *gm, kc_str_t id);

/* Free the memory of a group that is in neither the map nor the heap and whose members have
 * no parked requests. */
void kc_classic_group_release(group_t *g);

/* Free a group. Parked requests get `err` (COORDINATOR_NOT_AVAILABLE). */
void kc_classic_group_destroy(kc_gm_t *gm, group_t *g, int16_t err, req_t *rq);

/* Kafka's ClassicGroup.add. Everything it needs was reserved by the caller (`ptype` is a
 * malloc'd copy of the protocol type, taken when the group has no members). */
void kc_classic_group_add(group_t *g, member_t *m, char *ptype, int32_t ptype_len);

/* Kafka's ClassicGroup.validateMember. */
int16_t kc_classic_validate_member(group_t *g, kc_str_t member_id, kc_str_t instance);

/* Kafka's ClassicGroup.computeSubscribedTopics: the union of the topics in every member's
 * ConsumerProtocolSubscription (read as v0, the prefix of every version) for a "consumer"
 * group; unknown when the group is not a consumer group, has no selected protocol, or a
 * subscription cannot be parsed. */
void kc_classic_compute_subscriptions(group_t *g);

/* Kafka's ClassicGroup.isSubscribedToTopic. */
bool kc_classic_subscribed_to(const group_t *g, kc_str_t topic);

/* Kafka's prepareRebalance. */
void kc_classic_prepare_rebalance(group_t *g, const char *reason, req_t *rq);

/* ---- Defined in classic_admin.c ---- */

/* Delete a group (ClassicGroup.validateDeleteGroup passed): Dead, tombstone, gone. */
void kc_classic_delete_group(kc_gm_t *gm, group_t *g, const char *reason, req_t *rq);

/* Count a phase of `ms` in a histogram over kc_gm_phase_bounds_s. */
void kc_classic_phase_observe(uint64_t *buckets, double *sum, int64_t ms);

#endif
