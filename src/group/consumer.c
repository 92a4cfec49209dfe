/* cgroup.c - Kafka's consumer group protocol (KIP-848) for the groups of one __consumer_offsets
 * partition.
 *
 * This is the state machine of Kafka 4.x's consumer groups (GroupMetadataManager's
 * consumerGroupHeartbeat and replay methods, ConsumerGroup, ConsumerGroupMember,
 * CurrentAssignmentBuilder, TargetAssignmentBuilder), written for an event loop: every entry
 * point takes the time, nothing reads a clock, and nothing is ever parked: a heartbeat is
 * answered at once (the host holds the answer until the records it caused are durable).
 *
 * The model, as in Kafka:
 *   - a group has a group epoch (bumped when a member's subscription changes, when a member
 *     leaves or is fenced, and when the metadata of the subscribed topics changes), a target
 *     assignment with its own epoch (recomputed by a server-side assignor, src/group/assignor.h,
 *     whenever the group epoch is ahead of it), and members;
 *   - a member has metadata (client, subscription, assignor, rebalance timeout), a current
 *     assignment (epoch, previous epoch, state, assigned partitions, partitions pending
 *     revocation) and a target assignment. Reconciliation (reconcile()) moves it towards its
 *     target one step per heartbeat: first it must stop reporting the partitions it has to
 *     revoke (state UNREVOKED_PARTITIONS, the rebalance timeout runs), then it moves to the
 *     target epoch and gets the partitions nobody else holds any more (UNRELEASED_PARTITIONS
 *     while some are still held, STABLE when it has them all);
 *   - the group state is derived: Empty (no members), Assigning (group epoch ahead of the
 *     assignment epoch), Reconciling (a member is not at the assignment epoch and STABLE),
 *     Stable.
 *
 * Records: a change is planned first (a plan_t: every record encoded, every object it installs
 * allocated, every map reserved), then committed: each record goes to the host and is applied
 * to memory by the same apply_*() primitive replay uses, so memory is always what replaying the
 * log gives. Running out of memory while planning answers the request with
 * COORDINATOR_NOT_AVAILABLE and changes nothing; committing cannot fail. The records are
 * Kafka's record types 3-8, written at Kafka's moments and in Kafka's order (see the heartbeat,
 * fence() and delete_plan()). ConsumerGroupPartitionMetadata (4) is only replayed and
 * tombstoned, as since Kafka 4.1 (the topics' metadata lives in the group epoch record as a
 * hash). Regular expressions are resolved synchronously against the host's topics and are not
 * persisted (Kafka's record type 16): they are resolved again after a restart.
 *
 * Target assignments: the assignor runs on a self-contained copy of the group (a job: member
 * ids, subscriptions, current targets, topics). A small one runs inside the heartbeat that
 * bumped the group epoch, which then already answers with the new target. One whose members
 * plus subscribed partitions reach the offload threshold is handed to the host (the ops'
 * offload, Kafka's group.consumer.assignor.offload.enable) after the heartbeat's records are
 * committed; until it comes back the group is Assigning, members reconcile towards the
 * previous target, and no second job starts for the group. Its result is applied at its own
 * epoch, leaving out members that left meanwhile and giving a replaced static member's share
 * to its successor (as Kafka does); if the group epoch moved on meanwhile, the next job starts
 * at once, so a burst of joins costs one assignment per job rather than one per join.
 *
 * Timers: each member has a session deadline (reset by every heartbeat) and, while it has
 * partitions to revoke, a rebalance deadline, both monotonic. Each group keeps its members in
 * two heaps (by session and by rebalance deadline) and the consumer-group side keeps a min-heap
 * of groups keyed by their earliest, like the classic side: a key may be early (a heartbeat
 * does not move an entry later), never late. kc_gm_tick fires what is due, a bounded slice per
 * call, and fences the members whose sessions ended together in one group epoch bump.
 *
 * Rebalance history: a plan that bumps the group epoch says why (rb_cause and friends in the
 * plan); commit() opens the group's history entry for it (rb_plan), and the entry ends when
 * the group is next Stable or Empty (rb_settle) or a newer bump comes first.
 *
 * Extending: request handling validates first and fills a plan; only commit() changes state.
 * New records get an act kind, an encoder and an apply primitive that replay shares.
 */
#include "group/consumer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group/assignor.h"
#include "group/errors.h"
#include "group/history.h"
#include "group/manager.h"
#include "group/notes.h"
#include "group/regex.h"
#include "group/strmap.h"
#include "group/text.h"
#include "proto/gen_records.h"
#include "util/heap.h"
#include "util/diag.h"

#define NEVER INT64_MAX

/* Kafka's MemberState values, as written in ConsumerGroupCurrentMemberAssignmentValue. */
enum { MS_STABLE = 0, MS_UNREVOKED = 1, MS_UNRELEASED = 2, MS_UNKNOWN = 127 };

/* The derived group states. */
enum { CG_EMPTY = 0, CG_ASSIGNING, CG_RECONCILING, CG_STABLE };

static const char *const cg_state_names[] = {"Empty", "Assigning", "Reconciling", "Stable"};

/* Kafka's ConsumerGroupHeartbeatRequest constants. */
#define LEAVE_EPOCH        (-1)
#define STATIC_LEAVE_EPOCH (-2)

static const char *member_state_name(int8_t s)
{
    switch (s) {
    case MS_STABLE:
        return "STABLE";
    case MS_UNREVOKED:
        return "UNREVOKED_PARTITIONS";
    case MS_UNRELEASED:
        return "UNRELEASED_PARTITIONS";
    default:
        return "UNKNOWN";
    }
}

/* ---- Strings ------------------------------------------------------------------------------ */

/* Kafka's "isNotEmpty": not null and not "". */
static bool str_set(kc_str_t s)
{
    return s.len > 0;
}

/* Java's String.trim().isEmpty() for a non-null string: nothing but bytes <= ' '. */
static bool str_blank(kc_str_t s)
{
    if (s.len < 0)
        return false;
    for (int32_t i = 0; i < s.len; i++)
        if ((unsigned char)s.p[i] > ' ')
            return false;
    return true;
}

/* A message from `a` ("" when out of memory). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static kc_str_t
msgf(kc_arena_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !a)
        return KC_STR_EMPTY;
    char *p = kc_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return KC_STR_EMPTY;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return (kc_str_t){p, n};
}

/* ---- Assignments -------------------------------------------------------------------------- */

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

static void tpv_add(tpv_t *l, const kc_uuid_t *topic, int32_t part)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        tp_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].topic = *topic;
    l->v[l->n].part = part;
    l->n++;
}

static void tpv_free(tpv_t *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int uuid_cmp(const kc_uuid_t *a, const kc_uuid_t *b)
{
    return memcmp(a->b, b->b, 16);
}

static int uuid_qcmp(const void *x, const void *y)
{
    return uuid_cmp(x, y);
}

static int tp_cmp(const void *x, const void *y)
{
    const tp_t *a = x, *b = y;
    int c = uuid_cmp(&a->topic, &b->topic);
    if (c)
        return c;
    return (a->part > b->part) - (a->part < b->part);
}

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

/* Sort and de-duplicate the pairs of `l` and build an assignment from them: NULL when empty
 * (or, with *oom set, out of memory). */
static asg_t *asg_build(tpv_t *l, bool *oom)
{
    if (l->oom) {
        *oom = true;
        return NULL;
    }
    if (l->n == 0)
        return NULL;
    qsort(l->v, l->n, sizeof(tp_t), tp_cmp);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++)
        if (w == 0 || tp_cmp(&l->v[w - 1], &l->v[i]) != 0)
            l->v[w++] = l->v[i];
    l->n = w;
    int32_t nt = 0;
    for (size_t i = 0; i < w; i++)
        if (i == 0 || uuid_cmp(&l->v[i - 1].topic, &l->v[i].topic) != 0)
            nt++;
    asg_t *a = malloc(sizeof(asg_t) + (size_t)nt * sizeof(tpl_t) + w * sizeof(int32_t));
    if (!a) {
        *oom = true;
        return NULL;
    }
    int32_t *parts = (int32_t *)&a->t[nt];
    a->n = 0;
    a->total = (int32_t)w;
    for (size_t i = 0; i < w; i++) {
        if (i == 0 || uuid_cmp(&l->v[i - 1].topic, &l->v[i].topic) != 0) {
            a->t[a->n].topic = l->v[i].topic;
            a->t[a->n].n = 0;
            a->t[a->n].p = &parts[i];
            a->n++;
        }
        parts[i] = l->v[i].part;
        a->t[a->n - 1].n++;
    }
    return a;
}

static void asg_pairs(const asg_t *a, tpv_t *l)
{
    for (int32_t i = 0; a && i < a->n; i++)
        for (int32_t j = 0; j < a->t[i].n; j++)
            tpv_add(l, &a->t[i].topic, a->t[i].p[j]);
}

static asg_t *asg_dup(const asg_t *a, bool *oom)
{
    tpv_t l = {0};
    asg_pairs(a, &l);
    asg_t *r = asg_build(&l, oom);
    tpv_free(&l);
    return r;
}

static int32_t asg_total(const asg_t *a)
{
    return a ? a->total : 0;
}

static bool asg_eq(const asg_t *a, const asg_t *b)
{
    if (asg_total(a) != asg_total(b))
        return false;
    if (asg_total(a) == 0)
        return true;
    if (a->n != b->n)
        return false;
    for (int32_t i = 0; i < a->n; i++) {
        if (uuid_cmp(&a->t[i].topic, &b->t[i].topic) != 0 || a->t[i].n != b->t[i].n ||
            memcmp(a->t[i].p, b->t[i].p, (size_t)a->t[i].n * sizeof(int32_t)) != 0)
            return false;
    }
    return true;
}

static const tpl_t *asg_topic(const asg_t *a, const kc_uuid_t *topic)
{
    int32_t lo = 0, hi = a ? a->n : 0;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = uuid_cmp(&a->t[mid].topic, topic);
        if (c == 0)
            return &a->t[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool asg_has(const asg_t *a, const kc_uuid_t *topic, int32_t part)
{
    const tpl_t *t = asg_topic(a, topic);
    if (!t)
        return false;
    int32_t lo = 0, hi = t->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->p[mid] == part)
            return true;
        if (t->p[mid] < part)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Sorted pairs, searched by bsearch (the partitions some members hold). */
static bool pairs_has(const tpv_t *l, const kc_uuid_t *topic, int32_t part)
{
    tp_t key = {*topic, part};
    return l->n > 0 && bsearch(&key, l->v, l->n, sizeof(tp_t), tp_cmp) != NULL;
}

/* ---- Who holds which partition ------------------------------------------------------------ */

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

static size_t tp_hash(const kc_uuid_t *topic, int32_t part)
{
    uint64_t a, b;
    memcpy(&a, topic->b, 8);
    memcpy(&b, topic->b + 8, 8);
    uint64_t x = a ^ (b * 0x9e3779b97f4a7c15u) ^ ((uint64_t)(uint32_t)part << 17);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    x ^= x >> 31;
    return (size_t)x;
}

static size_t holders_find(const holders_t *h, const kc_uuid_t *topic, int32_t part)
{
    size_t mask = h->cap - 1;
    for (size_t i = tp_hash(topic, part) & mask;; i = (i + 1) & mask) {
        const hslot_t *s = &h->v[i];
        if (s->count == 0 || (s->part == part && uuid_cmp(&s->topic, topic) == 0))
            return i;
    }
}

static int32_t holders_count(const holders_t *h, const kc_uuid_t *topic, int32_t part)
{
    return h->cap ? h->v[holders_find(h, topic, part)].count : 0;
}

static int holders_grow(holders_t *h)
{
    size_t cap = h->cap ? h->cap * 2 : 64;
    hslot_t *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    holders_t nh = {v, cap, 0, true};
    for (size_t i = 0; i < h->cap; i++)
        if (h->v[i].count > 0) {
            nh.v[holders_find(&nh, &h->v[i].topic, h->v[i].part)] = h->v[i];
            nh.n++;
        }
    free(h->v);
    *h = nh;
    return 0;
}

/* Add `delta` (+1 or -1) holders of a partition. 0, or -1 when out of memory. */
static int holders_add(holders_t *h, const kc_uuid_t *topic, int32_t part, int delta)
{
    if (delta > 0 && (h->n + 1) * 4 > h->cap * 3 && holders_grow(h) != 0)
        return -1;
    if (h->cap == 0)
        return 0;
    size_t mask = h->cap - 1, i = holders_find(h, topic, part);
    hslot_t *s = &h->v[i];
    if (s->count == 0) {
        if (delta < 0)
            return 0; /* not held: nothing to take away */
        s->topic = *topic;
        s->part = part;
        s->count = delta;
        h->n++;
        return 0;
    }
    s->count += delta;
    if (s->count > 0)
        return 0;
    /* Emptied: shift back the entries of the run after it that may move. */
    s->count = 0;
    h->n--;
    for (size_t j = (i + 1) & mask; h->v[j].count != 0; j = (j + 1) & mask) {
        size_t k = tp_hash(&h->v[j].topic, h->v[j].part) & mask;
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        h->v[i] = h->v[j];
        h->v[j].count = 0;
        i = j;
    }
    return 0;
}

static void holders_drop(holders_t *h)
{
    free(h->v);
    memset(h, 0, sizeof(*h));
}

/* Count (delta +1) or uncount (-1) the partitions of `a`; drops the map when memory runs out. */
static void holders_apply(holders_t *h, const asg_t *a, int delta)
{
    if (!h->valid)
        return;
    for (int32_t i = 0; a && i < a->n; i++)
        for (int32_t j = 0; j < a->t[i].n; j++)
            if (holders_add(h, &a->t[i].topic, a->t[i].p[j], delta) != 0) {
                holders_drop(h);
                return;
            }
}

/* ---- Member metadata ---------------------------------------------------------------------- */

/* What ConsumerGroupMemberMetadataValue holds: one allocation, immutable. */
typedef struct cmeta_s {
    kc_str_t instance_id, rack_id, client_id, client_host, regex, assignor;
    int32_t rebalance_timeout_ms;
    int32_t n_topics;
    const kc_str_t *topics; /* subscribed topic names: sorted by bytes, distinct */
    bool classic;           /* a member that joined with the classic protocol (loaded only) */
    int32_t classic_session_timeout_ms;
} cmeta_t;

/* A copy of `src` in one allocation, with its topics sorted and de-duplicated (a set, as
 * Kafka keeps them). NULL when out of memory. */
static cmeta_t *meta_new(const cmeta_t *src)
{
    int32_t n = src->n_topics > 0 ? src->n_topics : 0;
    kc_str_t *tmp = NULL;
    if (n > 0) {
        tmp = malloc((size_t)n * sizeof(*tmp));
        if (!tmp)
            return NULL;
        for (int32_t i = 0; i < n; i++)
            tmp[i] = src->topics[i].len >= 0 ? src->topics[i] : KC_STR_EMPTY;
        qsort(tmp, (size_t)n, sizeof(*tmp), kc_text_qcmp);
        int32_t w = 0;
        for (int32_t i = 0; i < n; i++)
            if (w == 0 || kc_text_cmp(tmp[w - 1], tmp[i]) != 0)
                tmp[w++] = tmp[i];
        n = w;
    }
    size_t total = sizeof(cmeta_t) + (size_t)n * sizeof(kc_str_t) +
                   kc_text_space(src->instance_id) + kc_text_space(src->rack_id) +
                   kc_text_space(src->client_id) + kc_text_space(src->client_host) +
                   kc_text_space(src->regex) + kc_text_space(src->assignor);
    for (int32_t i = 0; i < n; i++)
        total += kc_text_space(tmp[i]);
    cmeta_t *m = calloc(1, total);
    if (!m) {
        free(tmp);
        return NULL;
    }
    kc_str_t *topics = (kc_str_t *)(m + 1);
    char *cur = (char *)(topics + n);
    m->instance_id = kc_text_put(&cur, src->instance_id);
    m->rack_id = kc_text_put(&cur, src->rack_id);
    m->client_id = kc_text_put(&cur, src->client_id);
    m->client_host = kc_text_put(&cur, src->client_host);
    m->regex = kc_text_put(&cur, src->regex);
    m->assignor = kc_text_put(&cur, src->assignor);
    for (int32_t i = 0; i < n; i++)
        topics[i] = kc_text_put(&cur, tmp[i]);
    m->topics = topics;
    m->n_topics = n;
    m->rebalance_timeout_ms = src->rebalance_timeout_ms;
    m->classic = src->classic;
    m->classic_session_timeout_ms = src->classic_session_timeout_ms;
    free(tmp);
    return m;
}

/* The metadata of a member Kafka creates before anything is known about it. */
static cmeta_t *meta_default(void)
{
    cmeta_t d;
    memset(&d, 0, sizeof(d));
    d.instance_id = d.rack_id = d.regex = d.assignor = KC_STR_NULL;
    d.client_id = d.client_host = KC_STR_EMPTY;
    d.rebalance_timeout_ms = -1;
    return meta_new(&d);
}

static bool topics_eq(const cmeta_t *a, const cmeta_t *b)
{
    if (a->n_topics != b->n_topics)
        return false;
    for (int32_t i = 0; i < a->n_topics; i++)
        if (kc_text_cmp(a->topics[i], b->topics[i]) != 0)
            return false;
    return true;
}

static bool meta_eq(const cmeta_t *a, const cmeta_t *b)
{
    return kc_str_eq(a->instance_id, b->instance_id) && kc_str_eq(a->rack_id, b->rack_id) &&
           kc_str_eq(a->client_id, b->client_id) && kc_str_eq(a->client_host, b->client_host) &&
           kc_str_eq(a->regex, b->regex) && kc_str_eq(a->assignor, b->assignor) &&
           a->rebalance_timeout_ms == b->rebalance_timeout_ms && a->classic == b->classic &&
           a->classic_session_timeout_ms == b->classic_session_timeout_ms && topics_eq(a, b);
}

static bool meta_has_topic(const cmeta_t *m, kc_str_t topic)
{
    return m->n_topics > 0 &&
           bsearch(&topic, m->topics, (size_t)m->n_topics, sizeof(kc_str_t), kc_text_qcmp) != NULL;
}

/* ---- Members, targets, groups ------------------------------------------------------------- */

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
    /* In the group's heaps, keyed no later than the deadlines above. */
    kc_heap_node_t session_node, rebalance_node;
} cmember_t;

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
    /* The members by session and by rebalance deadline (a key may be early), room for all. */
    kc_heap_t sessions, rebalances;
    bool loading;     /* replayed, waiting for kc_consumer_load_complete */
    kc_history_t rb;  /* one entry per group-epoch bump, ended when the group is Stable */
    kc_gm_job_t *job; /* the target assignment being computed off the loop, or NULL */
} cgroup_t;

struct kc_consumer_s {
    kc_gm_t *gm;
    kc_gm_config_t cfg;
    char *assignors; /* owned copy of cfg.consumer_assignors */
    kc_gm_ops_t ops;
    int64_t now;       /* monotonic: timers and ages */
    int64_t wall;      /* wall clock: timestamps in records and for people */
    kc_rx_cache_t *rx; /* the members' subscription regexes, compiled */
    kc_notes_t notes;  /* refusals logged, per group */
};

static kc_time_t cg_time(const kc_consumer_t *c)
{
    return (kc_time_t){c->now, c->wall};
}

static void cg_set_time(kc_consumer_t *c, kc_time_t t)
{
    c->now = t.mono_ms;
    c->wall = t.wall_ms;
}

static int32_t hb_interval(const kc_consumer_t *c)
{
    return c->cfg.consumer_heartbeat_interval_ms > 0 ? c->cfg.consumer_heartbeat_interval_ms : 5000;
}

static int32_t session_timeout(const kc_consumer_t *c)
{
    return c->cfg.consumer_session_timeout_ms > 0 ? c->cfg.consumer_session_timeout_ms : 45000;
}

static int32_t record_max(const kc_consumer_t *c)
{
    return c->cfg.record_max_bytes > 0 ? c->cfg.record_max_bytes : KC_GM_RECORD_MAX_BYTES_DEFAULT;
}

static int32_t max_size(const kc_consumer_t *c)
{
    return c->cfg.consumer_max_size > 0 ? c->cfg.consumer_max_size : INT32_MAX;
}

static const char *assignor_list(const char *assignors)
{
    return assignors && *assignors ? assignors : KC_ASSIGNOR_DEFAULT ",range";
}

/* Whether `name` is one of the comma-separated `list`. */
static bool in_list(const char *list, kc_str_t name)
{
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (name.len >= 0 && (size_t)name.len == n && memcmp(p, name.p, n) == 0)
            return true;
        p += n + (e != NULL);
    }
    return false;
}

/* The i-th name of the list (i = 0 is the default), or a null view. */
static kc_str_t list_at(const char *list, int i)
{
    const char *p = list;
    for (int k = 0; *p; k++) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (k == i)
            return (kc_str_t){p, (int32_t)n};
        p += n + (e != NULL);
    }
    return KC_STR_NULL;
}

static cgroup_t *find_group(const kc_consumer_t *c, kc_str_t id)
{
    kc_ghead_t *h = kc_manager_find_kind(c->gm, id, KC_KIND_CONSUMER);
    return h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
}

static cmember_t *find_member(const cgroup_t *g, kc_str_t id)
{
    if (id.len < 0)
        return NULL;
    return kc_strmap_get(&g->by_id, id.p, (size_t)id.len);
}

static cmember_t *find_static(const cgroup_t *g, kc_str_t instance)
{
    if (instance.len < 0)
        return NULL;
    return kc_strmap_get(&g->by_instance, instance.p, (size_t)instance.len);
}

static ctarget_t *find_target(const cgroup_t *g, kc_str_t member_id)
{
    if (member_id.len < 0)
        return NULL;
    return kc_strmap_get(&g->targets, member_id.p, (size_t)member_id.len);
}

static const asg_t *target_of(const cgroup_t *g, kc_str_t member_id)
{
    const ctarget_t *t = find_target(g, member_id);
    return t ? t->asg : NULL;
}

static int compute_state(const cgroup_t *g)
{
    if (g->n_members == 0)
        return CG_EMPTY;
    if (g->epoch > g->assignment_epoch)
        return CG_ASSIGNING;
    for (const cmember_t *m = g->head; m; m = m->next)
        if (!(m->state == MS_STABLE && m->epoch == g->assignment_epoch))
            return CG_RECONCILING;
    return CG_STABLE;
}

/* The one place a group's state change is told: the state is derived from the epochs and the
 * members, so this logs "old -> new: reason" when a change made it differ. */
static void note_state(cgroup_t *g, const char *reason)
{
    int s = compute_state(g);
    if (s == g->logged_state)
        return;
    /* Debug only: a completed rebalance logs one info line (kc_history_log). */
    KC_DEBUG("group", "consumer group %.*s: %s -> %s: %s", SV(g->id),
             cg_state_names[g->logged_state], cg_state_names[s], reason);
    g->logged_state = s;
}

/* End the group's running history entry with `outcome` and log its line. */
static void rb_finish(cgroup_t *g, const char *outcome)
{
    kc_history_entry_t *e = kc_history_current(&g->rb);
    if (!e)
        return;
    e = kc_history_end(&g->rb, cg_time(g->c), e->generation, outcome);
    kc_history_log(e, "consumer group", g->id);
}

/* After a change: the running rebalance is over once every member is at the assignment
 * epoch and Stable, or no member is left. */
static void rb_settle(cgroup_t *g)
{
    if (!g->rb.open)
        return;
    int s = compute_state(g);
    if (s == CG_STABLE)
        rb_finish(g, "stable");
    else if (s == CG_EMPTY)
        rb_finish(g, "empty");
}

static cmember_t *member_alloc(kc_str_t id)
{
    cmember_t *m = calloc(1, sizeof(*m) + kc_text_space(id));
    if (!m)
        return NULL;
    char *cur = (char *)(m + 1);
    m->id = kc_text_put(&cur, id);
    m->meta = meta_default();
    if (!m->meta) {
        free(m);
        return NULL;
    }
    m->state = MS_STABLE;
    m->session_deadline = NEVER;
    m->rebalance_deadline = NEVER;
    kc_heap_node_init(&m->session_node);
    kc_heap_node_init(&m->rebalance_node);
    return m;
}

static void member_free(cmember_t *m)
{
    if (!m)
        return;
    free(m->meta);
    free(m->assigned);
    free(m->revoking);
    free(m);
}

/* A member's metadata `meta` starts (take) or stops holding its regex: the partition's cache
 * counts the patterns in use (src/group/regex.h). */
static void regex_ref(kc_consumer_t *c, const cmeta_t *meta, bool take)
{
    if (!c || !meta || !str_set(meta->regex))
        return;
    if (take)
        kc_rx_cache_ref(c->rx, meta->regex.p, (size_t)meta->regex.len);
    else
        kc_rx_cache_unref(c->rx, meta->regex.p, (size_t)meta->regex.len);
}

static ctarget_t *target_alloc(kc_str_t member_id)
{
    ctarget_t *t = calloc(1, sizeof(*t) + kc_text_space(member_id));
    if (!t)
        return NULL;
    char *cur = (char *)(t + 1);
    t->member_id = kc_text_put(&cur, member_id);
    return t;
}

static void target_free(ctarget_t *t)
{
    if (t) {
        free(t->asg);
        free(t);
    }
}

static void rres_clear(cgroup_t *g)
{
    for (int32_t i = 0; i < g->n_rres; i++)
        free(g->rres[i]);
    free(g->rres);
    g->rres = NULL;
    g->n_rres = 0;
}

static cgroup_t *group_alloc(kc_consumer_t *c, kc_str_t id)
{
    cgroup_t *g = calloc(1, sizeof(*g) + kc_text_space(id));
    if (!g)
        return NULL;
    char *cur = (char *)(g + 1);
    g->id = kc_text_put(&cur, id);
    g->c = c;
    /* Kafka 4.4 (KAFKA-20268): a group starts at group epoch 1 with an empty target assignment
     * at epoch 1, so a member joining while its group's first assignment is still being
     * computed (off the loop) can be given epoch 1, never the reserved epoch 0. */
    g->epoch = 1;
    g->assignment_epoch = 1;
    g->logged_state = CG_EMPTY;
    g->gh.kind = KC_KIND_CONSUMER;
    kc_heap_node_init(&g->gh.timer);
    kc_strmap_init(&g->by_id);
    kc_strmap_init(&g->by_instance);
    kc_strmap_init(&g->targets);
    g->holders.valid = true;
    return g;
}

static void job_orphan(kc_gm_job_t *job);

/* Free a group that is in neither the map nor the heap. */
static void group_release(cgroup_t *g)
{
    if (g->job)
        job_orphan(g->job); /* the host still finishes it; it then only frees itself */
    cmember_t *m = g->head;
    while (m) {
        cmember_t *next = m->next;
        regex_ref(g->c, m->meta, false);
        member_free(m);
        m = next;
    }
    for (size_t i = 0; i < g->targets.cap; i++)
        target_free(kc_strmap_slot(&g->targets, i));
    kc_strmap_free(&g->by_id);
    kc_strmap_free(&g->by_instance);
    kc_strmap_free(&g->targets);
    kc_heap_free(&g->sessions);
    kc_heap_free(&g->rebalances);
    holders_drop(&g->holders);
    rres_clear(g);
    kc_history_free(&g->rb);
    free(g);
}

/* ---- Timers ------------------------------------------------------------------------------- */

/* Make sure the group is looked at no later than `deadline`. */
static void arm(cgroup_t *g, int64_t deadline)
{
    if (deadline != NEVER && !g->loading)
        kc_manager_arm(g->c->gm, &g->gh, deadline);
}

/* The group's earliest deadline, possibly early (a heap key), in O(1). */
static int64_t group_earliest(const cgroup_t *g)
{
    int64_t t = NEVER;
    const kc_heap_node_t *top = kc_heap_top(&g->sessions);
    if (top && top->key < t)
        t = top->key;
    top = kc_heap_top(&g->rebalances);
    if (top && top->key < t)
        t = top->key;
    return t;
}

/* Renew a member's session: a later deadline leaves its heap entry where it is (moved when it
 * comes up), so a heartbeat costs O(1). The member is in the group, whose heaps have room. */
static void set_session(cgroup_t *g, cmember_t *m)
{
    m->last_hb_ms = g->c->now;
    m->session_deadline = g->c->now + session_timeout(g->c);
    kc_heap_arm(&g->sessions, &m->session_node, m->session_deadline);
    arm(g, m->session_deadline);
}

static void set_rebalance(cgroup_t *g, cmember_t *m)
{
    int32_t t = m->meta->rebalance_timeout_ms > 0 ? m->meta->rebalance_timeout_ms : 0;
    m->rebalance_deadline = g->c->now + t;
    m->rebalance_epoch = m->epoch;
    kc_heap_arm(&g->rebalances, &m->rebalance_node, m->rebalance_deadline);
    arm(g, m->rebalance_deadline);
}

/* Room in the group's timer heaps for one more member. 0, or -1 when out of memory. */
static int reserve_member_timers(cgroup_t *g)
{
    size_t n = (size_t)g->n_members + 1;
    if (kc_heap_reserve(&g->sessions, n) != 0)
        return -1;
    return kc_heap_reserve(&g->rebalances, n);
}

/* Room for one more group in the map and the heap. 0, or -1 when out of memory. */
static int reserve_group(kc_consumer_t *c)
{
    return kc_manager_reserve(c->gm);
}

/* ---- Topics and regular expressions ------------------------------------------------------- */

static void topics_of(const kc_consumer_t *c, kc_gm_topics_t *tv)
{
    memset(tv, 0, sizeof(*tv));
    if (c->ops.topics)
        c->ops.topics(c->ops.ctx, tv);
}

static const kc_gm_topic_t *tv_name(const kc_gm_topics_t *tv, kc_str_t name)
{
    for (size_t i = 0; i < tv->n; i++)
        if (kc_str_eq(tv->v[i].name, name))
            return &tv->v[i];
    return NULL;
}

static const kc_gm_topic_t *tv_id(const kc_gm_topics_t *tv, const kc_uuid_t *id)
{
    for (size_t i = 0; i < tv->n; i++)
        if (uuid_cmp(&tv->v[i].id, id) == 0)
            return &tv->v[i];
    return NULL;
}

/* Resolve `regex` against the topics: a new rres_t (NULL when out of memory, *oom set). A
 * regex that does not compile matches nothing. The compiled pattern comes from the partition's
 * cache (src/group/regex.h), so a resolution compiles nothing after the first; its cost is
 * bounded by the topics: at most O(topics x 249 x program size), the program bounded by
 * KC_RX_MAX_MEM. */
static rres_t *rx_resolve(kc_consumer_t *c, const kc_gm_topics_t *tv, kc_str_t regex, bool *oom)
{
    kc_rx_t *owned = NULL;
    bool no_mem = false;
    const kc_rx_t *rx =
        kc_rx_cache_get(c->rx, regex.p, regex.len > 0 ? (size_t)regex.len : 0, &owned, &no_mem);
    if (no_mem) {
        *oom = true;
        return NULL;
    }
    size_t n = 0, bytes = 0;
    kc_str_t *hits = tv->n ? malloc(tv->n * sizeof(*hits)) : NULL;
    if (tv->n && !hits) {
        kc_rx_free(owned);
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; rx && i < tv->n; i++) {
        const kc_str_t name = tv->v[i].name;
        if (kc_rx_full_match(rx, name.p, name.len > 0 ? (size_t)name.len : 0)) {
            hits[n++] = name;
            bytes += kc_text_space(name);
        }
    }
    kc_rx_free(owned);
    if (n > 1)
        qsort(hits, n, sizeof(*hits), kc_text_qcmp);
    rres_t *r = calloc(1, sizeof(*r) + n * sizeof(kc_str_t) + bytes + kc_text_space(regex));
    if (!r) {
        free(hits);
        *oom = true;
        return NULL;
    }
    r->topics = (kc_str_t *)(r + 1);
    char *cur = (char *)(r->topics + n);
    r->regex = kc_text_put(&cur, regex);
    for (size_t i = 0; i < n; i++)
        r->topics[i] = kc_text_put(&cur, hits[i]);
    r->n = (int32_t)n;
    free(hits);
    return r;
}

static bool rres_eq(const rres_t *a, const rres_t *b)
{
    if (a->n != b->n)
        return false;
    for (int32_t i = 0; i < a->n; i++)
        if (kc_text_cmp(a->topics[i], b->topics[i]) != 0)
            return false;
    return true;
}

static const rres_t *rres_cached(const cgroup_t *g, kc_str_t regex)
{
    for (int32_t i = 0; i < g->n_rres; i++)
        if (kc_str_eq(g->rres[i]->regex, regex))
            return g->rres[i];
    return NULL;
}

/* A resolution of `regex`: the group's cached one when it was made from these topics,
 * otherwise a fresh one in *tmp (the caller frees it). NULL with *oom when out of memory. */
static const rres_t *resolve(const cgroup_t *g, const kc_gm_topics_t *tv, kc_str_t regex,
                             rres_t **tmp, bool *oom)
{
    *tmp = NULL;
    if (g->topics_version == tv->version && g->topics_version != 0) {
        const rres_t *r = rres_cached(g, regex);
        if (r)
            return r;
    }
    *tmp = rx_resolve(g->c, tv, regex, oom);
    return *tmp;
}

/* A list of topic names (views). */
typedef struct strv_s {
    kc_str_t *v;
    size_t n, cap;
    bool oom;
} strv_t;

static void strv_add(strv_t *l, kc_str_t s)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        kc_str_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
}

static void strv_sort_unique(strv_t *l)
{
    if (l->n < 2)
        return;
    qsort(l->v, l->n, sizeof(kc_str_t), kc_text_qcmp);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++)
        if (w == 0 || kc_text_cmp(l->v[w - 1], l->v[i]) != 0)
            l->v[w++] = l->v[i];
    l->n = w;
}

static void strv_free(strv_t *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Resolutions made for one computation, freed together when it is done. */
typedef struct keep_s {
    rres_t **v;
    size_t n, cap;
} keep_t;

static void keep_add(keep_t *k, rres_t *r, bool *oom)
{
    if (!r)
        return;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 8;
        rres_t **v = realloc(k->v, cap * sizeof(*v));
        if (!v) {
            free(r);
            *oom = true;
            return;
        }
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = r;
}

static void keep_free(keep_t *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    memset(k, 0, sizeof(*k));
}

/* The topic names a member with metadata `m` subscribes to: its names and what its regex
 * resolves to. Resolutions made on the way go to `keep`, so the views stay valid until it is
 * freed. */
static void member_subs(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m, strv_t *out,
                        keep_t *keep)
{
    for (int32_t i = 0; i < m->n_topics; i++)
        strv_add(out, m->topics[i]);
    if (str_set(m->regex)) {
        rres_t *tmp;
        const rres_t *r = resolve(g, tv, m->regex, &tmp, &out->oom);
        keep_add(keep, tmp, &out->oom);
        if (tmp && out->oom)
            r = NULL; /* freed by keep_add */
        for (int32_t i = 0; r && i < r->n; i++)
            strv_add(out, r->topics[i]);
    }
}

/* Whether a member with metadata `m` subscribes to `topic`. */
static bool member_subscribed(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                              kc_str_t topic)
{
    if (meta_has_topic(m, topic))
        return true;
    if (!str_set(m->regex))
        return false;
    bool oom = false;
    rres_t *tmp;
    const rres_t *r = resolve(g, tv, m->regex, &tmp, &oom);
    bool hit = r && r->n > 0 &&
               bsearch(&topic, r->topics, (size_t)r->n, sizeof(kc_str_t), kc_text_qcmp) != NULL;
    free(tmp);
    return hit;
}

/* The union of the subscriptions of the group's members, `skip1` and `skip2` left out and
 * `extra` (the metadata a member is about to have) added: sorted, distinct. */
static void group_subs(const cgroup_t *g, const kc_gm_topics_t *tv, const cmember_t *skip1,
                       const cmember_t *skip2, const cmeta_t *extra, strv_t *out, keep_t *keep)
{
    for (const cmember_t *m = g->head; m; m = m->next)
        if (m != skip1 && m != skip2)
            member_subs(g, tv, m->meta, out, keep);
    if (extra)
        member_subs(g, tv, extra, out, keep);
    strv_sort_unique(out);
}

/* 64-bit FNV-1a, continuing from `h`. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

/* The metadata hash of a group subscribed to `names` (sorted, distinct): the role of Kafka's
 * KIP-1101 hash (which topics exist, their ids and partition counts), computed kcoord's way
 * (Kafka's exact value depends on its release's hash library). 0 when none of the topics
 * exists, as Kafka. */
static int64_t metadata_hash(const kc_gm_topics_t *tv, const strv_t *names)
{
    uint64_t h = 0;
    bool any = false;
    for (size_t i = 0; i < names->n; i++) {
        const kc_gm_topic_t *t = tv_name(tv, names->v[i]);
        if (!t)
            continue;
        uint8_t be[4] = {(uint8_t)(t->partitions >> 24), (uint8_t)(t->partitions >> 16),
                         (uint8_t)(t->partitions >> 8), (uint8_t)t->partitions};
        uint64_t th = fnv1a(UINT64_C(0xcbf29ce484222325), "\0", 1);
        th = fnv1a(th, t->id.b, 16);
        th = fnv1a(th, t->name.p, (size_t)t->name.len);
        th = fnv1a(th, be, 4);
        h = fmix64(h * 31 + fmix64(th));
        any = true;
    }
    if (!any)
        return 0;
    return h ? (int64_t)h : 1;
}

/* ---- Records and the primitives that apply them ------------------------------------------- */

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

static act_t *plan_add(plan_t *p, int kind, kc_str_t member_id)
{
    if (p->oom)
        return NULL;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        act_t *v = realloc(p->v, cap * sizeof(*v));
        if (!v) {
            p->oom = true;
            return NULL;
        }
        p->v = v;
        p->cap = cap;
    }
    act_t *a = &p->v[p->n++];
    memset(a, 0, sizeof(*a));
    a->kind = kind;
    a->member_id = member_id;
    return a;
}

/* The size of the plan's largest record in a batch of its own (kc_manager_record_bytes). */
static size_t plan_largest(const plan_t *p)
{
    size_t big = 0;
    for (size_t i = 0; i < p->n; i++) {
        size_t b = kc_manager_record_bytes(p->v[i].klen, p->v[i].val ? p->v[i].vlen : 0);
        if (b > big)
            big = b;
    }
    return big;
}

static void act_free(act_t *a)
{
    free(a->meta);
    free(a->asg);
    free(a->asg2);
    target_free(a->tslot);
    free(a->key);
    free(a->val);
    memset(a, 0, sizeof(*a));
}

static void plan_free(plan_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        act_free(&p->v[i]);
    free(p->v);
    member_free(p->new_member);
    if (p->new_group && p->g)
        group_release(p->g);
    memset(p, 0, sizeof(*p));
}

/* Encode the record key of `type` for the group (and member). */
static void enc_key(kc_writer_t *w, int16_t type, kc_str_t gid, kc_str_t mid)
{
    kc_wr_i16(w, type);
    switch (type) {
    case KC_RECORD_CONSUMER_GROUP_METADATA_KEY: {
        kc_consumer_group_metadata_key_t k = {gid};
        kc_consumer_group_metadata_key_encode(w, type, &k);
        break;
    }
    case KC_RECORD_CONSUMER_GROUP_PARTITION_METADATA_KEY: {
        kc_consumer_group_partition_metadata_key_t k = {gid};
        kc_consumer_group_partition_metadata_key_encode(w, type, &k);
        break;
    }
    case KC_RECORD_CONSUMER_GROUP_MEMBER_METADATA_KEY: {
        kc_consumer_group_member_metadata_key_t k = {gid, mid};
        kc_consumer_group_member_metadata_key_encode(w, type, &k);
        break;
    }
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: {
        kc_consumer_group_target_assignment_metadata_key_t k = {gid};
        kc_consumer_group_target_assignment_metadata_key_encode(w, type, &k);
        break;
    }
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: {
        kc_consumer_group_target_assignment_member_key_t k = {gid, mid};
        kc_consumer_group_target_assignment_member_key_encode(w, type, &k);
        break;
    }
    case KC_RECORD_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: {
        kc_consumer_group_current_member_assignment_key_t k = {gid, mid};
        kc_consumer_group_current_member_assignment_key_encode(w, type, &k);
        break;
    }
    }
}

/* The topic/partitions arrays of a record value, from an assignment (malloc'd; NULL with
 * n 0 for an empty one; -1 when out of memory). */
static int32_t cur_parts(const asg_t *a,
                         kc_consumer_group_current_member_assignment_value_topic_partitions_t **out)
{
    *out = NULL;
    if (!a || a->n == 0)
        return 0;
    kc_consumer_group_current_member_assignment_value_topic_partitions_t *v =
        calloc((size_t)a->n, sizeof(*v));
    if (!v)
        return -1;
    for (int32_t i = 0; i < a->n; i++) {
        v[i].topic_id = a->t[i].topic;
        v[i].partitions.v = (int32_t *)a->t[i].p;
        v[i].partitions.n = a->t[i].n;
        v[i].assignment_epochs.v = NULL;
        v[i].assignment_epochs.n = -1;
    }
    *out = v;
    return a->n;
}

/* Encode act `a`'s record for group `gid` (value from the act's fields; `hash`, `epoch` etc.
 * as the kind needs). Sets p->oom on failure. */
static void act_encode(plan_t *p, act_t *a, kc_str_t gid, int64_t now)
{
    if (!a)
        return;
    kc_writer_t kw, vw;
    kc_wr_init(&kw);
    kc_wr_init(&vw);
    bool tombstone = false;
    switch (a->kind) {
    case A_GROUP_EPOCH:
    case A_GROUP_DEL: {
        enc_key(&kw, KC_RECORD_CONSUMER_GROUP_METADATA_KEY, gid, KC_STR_NULL);
        tombstone = a->kind == A_GROUP_DEL;
        if (!tombstone) {
            kc_consumer_group_metadata_value_t v = {a->epoch, a->hash};
            kc_wr_i16(&vw, 0);
            kc_consumer_group_metadata_value_encode(&vw, 0, &v);
        }
        break;
    }
    case A_PARTMETA_DEL:
        enc_key(&kw, KC_RECORD_CONSUMER_GROUP_PARTITION_METADATA_KEY, gid, KC_STR_NULL);
        tombstone = true;
        break;
    case A_META:
    case A_META_DEL: {
        enc_key(&kw, KC_RECORD_CONSUMER_GROUP_MEMBER_METADATA_KEY, gid, a->member_id);
        tombstone = a->kind == A_META_DEL;
        if (!tombstone) {
            const cmeta_t *m = a->meta;
            kc_consumer_group_member_metadata_value_t v;
            kc_consumer_group_member_metadata_value_init(&v);
            v.instance_id = m->instance_id;
            v.rack_id = m->rack_id;
            v.client_id = m->client_id.len >= 0 ? m->client_id : KC_STR_EMPTY;
            v.client_host = m->client_host.len >= 0 ? m->client_host : KC_STR_EMPTY;
            v.subscribed_topic_names.v = (kc_str_t *)m->topics;
            v.subscribed_topic_names.n = m->n_topics;
            v.subscribed_topic_regex = m->regex;
            v.rebalance_timeout_ms = m->rebalance_timeout_ms;
            v.server_assignor = m->assignor;
            v.classic_member_metadata = NULL;
            kc_wr_i16(&vw, 0);
            kc_consumer_group_member_metadata_value_encode(&vw, 0, &v);
        }
        break;
    }
    case A_TARGET_EPOCH:
    case A_TARGET_EPOCH_DEL: {
        enc_key(&kw, KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, gid, KC_STR_NULL);
        tombstone = a->kind == A_TARGET_EPOCH_DEL;
        if (!tombstone) {
            kc_consumer_group_target_assignment_metadata_value_t v = {a->epoch, now};
            kc_wr_i16(&vw, 0);
            kc_consumer_group_target_assignment_metadata_value_encode(&vw, 0, &v);
        }
        break;
    }
    case A_TARGET:
    case A_TARGET_DEL: {
        enc_key(&kw, KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, gid, a->member_id);
        tombstone = a->kind == A_TARGET_DEL;
        if (!tombstone) {
            kc_consumer_group_target_assignment_member_value_t v;
            kc_consumer_group_target_assignment_member_value_topic_partition_t *tp = NULL;
            int32_t n = a->asg ? a->asg->n : 0;
            if (n > 0) {
                tp = calloc((size_t)n, sizeof(*tp));
                if (!tp) {
                    vw.err = 1;
                    break;
                }
                for (int32_t i = 0; i < n; i++) {
                    tp[i].topic_id = a->asg->t[i].topic;
                    tp[i].partitions.v = (int32_t *)a->asg->t[i].p;
                    tp[i].partitions.n = a->asg->t[i].n;
                }
            }
            v.topic_partitions.v = tp;
            v.topic_partitions.n = n;
            kc_wr_i16(&vw, 0);
            kc_consumer_group_target_assignment_member_value_encode(&vw, 0, &v);
            free(tp);
        }
        break;
    }
    case A_CURRENT:
    case A_CURRENT_DEL: {
        enc_key(&kw, KC_RECORD_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, gid, a->member_id);
        tombstone = a->kind == A_CURRENT_DEL;
        if (!tombstone) {
            kc_consumer_group_current_member_assignment_value_t v;
            kc_consumer_group_current_member_assignment_value_topic_partitions_t *as, *rv;
            int32_t na = cur_parts(a->asg, &as), nr = cur_parts(a->asg2, &rv);
            if (na < 0 || nr < 0) {
                free(as);
                free(rv);
                vw.err = 1;
                break;
            }
            v.member_epoch = a->epoch;
            v.previous_member_epoch = a->prev_epoch;
            v.state = a->state;
            v.assigned_partitions.v = as;
            v.assigned_partitions.n = na;
            v.partitions_pending_revocation.v = rv;
            v.partitions_pending_revocation.n = nr;
            kc_wr_i16(&vw, 0);
            kc_consumer_group_current_member_assignment_value_encode(&vw, 0, &v);
            free(as);
            free(rv);
        }
        break;
    }
    }
    if (kw.err || vw.err) {
        p->oom = true;
        kc_wr_free(&kw);
        kc_wr_free(&vw);
        return;
    }
    a->key = kc_wr_steal(&kw, &a->klen);
    if (!tombstone)
        a->val = kc_wr_steal(&vw, &a->vlen);
    kc_wr_free(&vw);
}

/* -- The primitives. Each is Kafka's replay of one record; the caller reserved what they put
 * into maps and passes the objects they take over. */

static void ap_group_epoch(cgroup_t *g, int32_t epoch, int64_t hash)
{
    g->epoch = epoch;
    g->metadata_hash = hash;
}

/* Kafka's ConsumerGroup.updateMember for the metadata part: `slot` is the member to add when
 * there is none with this id (consumed: set to NULL). Takes `meta`. */
static cmember_t *ap_member(cgroup_t *g, kc_str_t member_id, cmember_t **slot)
{
    cmember_t *m = find_member(g, member_id);
    if (m || !slot || !*slot)
        return m;
    m = *slot;
    *slot = NULL;
    m->prev = g->tail;
    m->next = NULL;
    if (g->tail)
        g->tail->next = m;
    else
        g->head = m;
    g->tail = m;
    kc_strmap_put(&g->by_id, m->id.p, (size_t)m->id.len, m); /* reserved */
    g->n_members++;
    return m;
}

static void ap_meta(cgroup_t *g, kc_str_t member_id, cmeta_t *meta, cmember_t **slot)
{
    cmember_t *m = ap_member(g, member_id, slot);
    if (!m) {
        free(meta);
        return;
    }
    if (str_set(m->meta->instance_id) && !kc_str_eq(m->meta->instance_id, meta->instance_id) &&
        find_static(g, m->meta->instance_id) == m)
        kc_strmap_del(&g->by_instance, m->meta->instance_id.p, (size_t)m->meta->instance_id.len);
    /* The map keeps key pointers: re-point the entry at the new metadata before the old one
     * (which may hold the current key) is freed. */
    if (meta->instance_id.len >= 0) /* reserved */
        kc_strmap_put(&g->by_instance, meta->instance_id.p, (size_t)meta->instance_id.len, m);
    regex_ref(g->c, meta, true);
    regex_ref(g->c, m->meta, false);
    free(m->meta);
    m->meta = meta;
}

static void ap_meta_del(cgroup_t *g, kc_str_t member_id)
{
    cmember_t *m = find_member(g, member_id);
    if (!m)
        return;
    if (m->epoch != LEAVE_EPOCH)
        KC_DEBUG("group", "consumer group %.*s: member %.*s removed at epoch %d", SV(g->id),
                 SV(m->id), (int)m->epoch);
    if (m->meta->instance_id.len >= 0 && find_static(g, m->meta->instance_id) == m)
        kc_strmap_del(&g->by_instance, m->meta->instance_id.p, (size_t)m->meta->instance_id.len);
    kc_strmap_del(&g->by_id, m->id.p, (size_t)m->id.len);
    if (m->prev)
        m->prev->next = m->next;
    else
        g->head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        g->tail = m->prev;
    g->n_members--;
    holders_apply(&g->holders, m->assigned, -1);
    holders_apply(&g->holders, m->revoking, -1);
    kc_heap_remove(&g->sessions, &m->session_node);
    kc_heap_remove(&g->rebalances, &m->rebalance_node);
    regex_ref(g->c, m->meta, false);
    member_free(m);
}

static void ap_current(cgroup_t *g, kc_str_t member_id, int32_t epoch, int32_t prev, int8_t state,
                       asg_t *assigned, asg_t *revoking, cmember_t **slot)
{
    cmember_t *m = ap_member(g, member_id, slot);
    if (!m) {
        free(assigned);
        free(revoking);
        return;
    }
    m->epoch = epoch;
    m->prev_epoch = prev;
    m->state = state;
    holders_apply(&g->holders, m->assigned, -1);
    holders_apply(&g->holders, m->revoking, -1);
    holders_apply(&g->holders, assigned, 1);
    holders_apply(&g->holders, revoking, 1);
    free(m->assigned);
    free(m->revoking);
    m->assigned = assigned;
    m->revoking = revoking;
}

/* Kafka replays a current-assignment tombstone as epoch -1 with nothing assigned. */
static void ap_current_del(cgroup_t *g, kc_str_t member_id)
{
    cmember_t *m = find_member(g, member_id);
    if (!m)
        return;
    m->epoch = LEAVE_EPOCH;
    m->prev_epoch = LEAVE_EPOCH;
    holders_apply(&g->holders, m->assigned, -1);
    holders_apply(&g->holders, m->revoking, -1);
    free(m->assigned);
    free(m->revoking);
    m->assigned = m->revoking = NULL;
}

static void ap_target(cgroup_t *g, kc_str_t member_id, asg_t *asg, ctarget_t **slot)
{
    ctarget_t *t = find_target(g, member_id);
    if (!t) {
        if (!slot || !*slot) {
            free(asg);
            return;
        }
        t = *slot;
        *slot = NULL;
        kc_strmap_put(&g->targets, t->member_id.p, (size_t)t->member_id.len, t); /* reserved */
    }
    free(t->asg);
    t->asg = asg;
}

static void ap_target_del(cgroup_t *g, kc_str_t member_id)
{
    if (member_id.len < 0)
        return;
    target_free(kc_strmap_del(&g->targets, member_id.p, (size_t)member_id.len));
}

static void ap_group_del(kc_consumer_t *c, cgroup_t *g)
{
    if (g->n_members > 0 || g->targets.n > 0)
        KC_WARN("group", "consumer group %.*s deleted with %d members and %zu targets left",
                SV(g->id), (int)g->n_members, g->targets.n);
    kc_manager_del(c->gm, &g->gh, g->id);
    group_release(g);
}

/* A plan that bumps the group epoch starts a rebalance: a new history entry (a running one
 * ends as restarted), with the members the plan removes as dropped and the one it adds as
 * joined. Called before the plan is applied, while its views are valid. */
static void rb_plan(plan_t *p)
{
    cgroup_t *g = p->g;
    const act_t *bump = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].kind == A_GROUP_EPOCH)
            bump = &p->v[i];
    if (!bump || g->loading)
        return;
    if (g->rb.open)
        rb_finish(g, "restarted");
    /* A view left zeroed (p == NULL) by the plan's initializer means none. */
    int cause = p->rb_set ? p->rb_cause : KC_RB_METADATA_CHANGED;
    kc_str_t who = p->rb_set && p->rb_member.p ? p->rb_member : KC_STR_NULL;
    kc_str_t why = !p->rb_set       ? KC_STR_LIT("the subscribed topics' metadata changed")
                   : p->rb_reason.p ? p->rb_reason
                                    : KC_STR_NULL;
    kc_history_begin(&g->rb, (&p->c->gm->stats), cg_time(p->c), cause, who, why);
    kc_history_entry_t *e = kc_history_current(&g->rb);
    if (e)
        e->generation = bump->epoch;
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].kind == A_META_DEL)
            kc_history_note(&g->rb, false, p->v[i].member_id);
    if (p->rb_joined.p)
        kc_history_note(&g->rb, true, p->rb_joined);
}

/* Emit every planned record and apply it. Cannot fail: everything was prepared. */
static void commit(plan_t *p, const char *reason)
{
    kc_consumer_t *c = p->c;
    cgroup_t *g = p->g;
    rb_plan(p);
    if (p->delete_classic)
        kc_manager_classic_remove(c->gm, cg_time(c), g->id, true,
                                  "the empty classic group becomes a consumer group");
    if (p->new_group) {
        kc_manager_put(c->gm, &g->gh, g->id); /* reserved */
        p->new_group = false;
        KC_DEBUG("group", "consumer group %.*s created", SV(g->id));
    }
    bool deleted = false;
    for (size_t i = 0; i < p->n; i++) {
        act_t *a = &p->v[i];
        if (c->ops.record)
            c->ops.record(c->ops.ctx, a->key, a->klen, a->val, a->val ? a->vlen : 0);
        switch (a->kind) {
        case A_GROUP_EPOCH:
            ap_group_epoch(g, a->epoch, a->hash);
            break;
        case A_GROUP_DEL:
            ap_group_del(c, g);
            deleted = true;
            break;
        case A_PARTMETA_DEL:
            g->has_partition_metadata = false;
            break;
        case A_META:
            ap_meta(g, a->member_id, a->meta, &p->new_member);
            a->meta = NULL;
            break;
        case A_META_DEL:
            ap_meta_del(g, a->member_id);
            break;
        case A_TARGET_EPOCH:
            g->assignment_epoch = a->epoch;
            break;
        case A_TARGET_EPOCH_DEL:
            g->assignment_epoch = -1;
            break;
        case A_TARGET:
            ap_target(g, a->member_id, a->asg, &a->tslot);
            a->asg = NULL;
            break;
        case A_TARGET_DEL:
            ap_target_del(g, a->member_id);
            break;
        case A_CURRENT:
            ap_current(g, a->member_id, a->epoch, a->prev_epoch, a->state, a->asg, a->asg2,
                       &p->new_member);
            a->asg = a->asg2 = NULL;
            break;
        case A_CURRENT_DEL:
            ap_current_del(g, a->member_id);
            break;
        }
    }
    if (!deleted) {
        note_state(g, reason);
        rb_settle(g);
    }
    for (size_t i = 0; i < p->n; i++)
        act_free(&p->v[i]);
    p->n = 0;
    if (deleted)
        p->g = NULL;
}

/* Plan the records that remove member `m` (Kafka's removeMember: current assignment, target
 * assignment, then metadata tombstones). */
static void plan_remove_member(plan_t *p, const cmember_t *m, int64_t now)
{
    kc_str_t gid = p->g->id;
    act_encode(p, plan_add(p, A_CURRENT_DEL, m->id), gid, now);
    act_encode(p, plan_add(p, A_TARGET_DEL, m->id), gid, now);
    act_encode(p, plan_add(p, A_META_DEL, m->id), gid, now);
}

/* Plan a ConsumerGroupMetadata record. */
static void plan_group_epoch(plan_t *p, int32_t epoch, int64_t hash, int64_t now)
{
    act_t *a = plan_add(p, A_GROUP_EPOCH, KC_STR_NULL);
    if (a) {
        a->epoch = epoch;
        a->hash = hash;
    }
    act_encode(p, a, p->g->id, now);
}

/* Plan a ConsumerGroupCurrentMemberAssignment record, taking `assigned` and `revoking`. */
static void plan_current(plan_t *p, kc_str_t member_id, int32_t epoch, int32_t prev, int8_t state,
                         asg_t *assigned, asg_t *revoking, int64_t now)
{
    act_t *a = plan_add(p, A_CURRENT, member_id);
    if (!a) {
        free(assigned);
        free(revoking);
        return;
    }
    a->epoch = epoch;
    a->prev_epoch = prev;
    a->state = state;
    a->asg = assigned;
    a->asg2 = revoking;
    act_encode(p, a, p->g->id, now);
}

/* Plan a ConsumerGroupMemberMetadata record, taking `meta`. */
static void plan_meta(plan_t *p, kc_str_t member_id, cmeta_t *meta, int64_t now)
{
    if (!meta) {
        p->oom = true;
        return;
    }
    act_t *a = plan_add(p, A_META, member_id);
    if (!a) {
        free(meta);
        return;
    }
    a->meta = meta;
    act_encode(p, a, p->g->id, now);
    if (!p->oom && meta->instance_id.len >= 0 &&
        kc_strmap_reserve(&p->g->by_instance, ++p->new_instances) != 0)
        p->oom = true;
}

/* Plan a ConsumerGroupTargetAssignmentMember record, taking `asg`. */
static void plan_target(plan_t *p, kc_str_t member_id, asg_t *asg, int64_t now)
{
    act_t *a = plan_add(p, A_TARGET, member_id);
    if (!a) {
        free(asg);
        return;
    }
    a->asg = asg;
    if (!find_target(p->g, member_id)) {
        a->tslot = target_alloc(member_id);
        if (!a->tslot || kc_strmap_reserve(&p->g->targets, ++p->new_targets) != 0)
            p->oom = true;
    }
    act_encode(p, a, p->g->id, now);
}

/* ---- Reconciliation (Kafka's CurrentAssignmentBuilder) ------------------------------------ */

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

/* Kafka's ownsRevokedPartitions: whether the member still reports a partition of `pairs`
 * (sorted); a member that did not report its partitions is assumed to own them all. */
static bool owns_any(const owned_t *owned, const tpv_t *pairs)
{
    if (owned->n < 0)
        return true;
    for (int32_t i = 0; i < owned->n; i++)
        for (int32_t j = 0; j < owned->v[i].partitions.n; j++)
            if (pairs_has(pairs, &owned->v[i].topic_id, owned->v[i].partitions.v[j]))
                return true;
    return false;
}

/* Kafka's isSubset: every reported partition is in `assigned` (false when not reported). */
static bool owned_subset(const owned_t *owned, const asg_t *assigned)
{
    if (owned->n < 0)
        return false;
    for (int32_t i = 0; i < owned->n; i++) {
        const tpl_t *t = asg_topic(assigned, &owned->v[i].topic_id);
        if (!t)
            return false;
        for (int32_t j = 0; j < owned->v[i].partitions.n; j++)
            if (!asg_has(assigned, &owned->v[i].topic_id, owned->v[i].partitions.v[j]))
                return false;
    }
    return true;
}

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

static bool held_by_member(const cmember_t *m, const kc_uuid_t *topic, int32_t part)
{
    return m && (asg_has(m->assigned, topic, part) || asg_has(m->revoking, topic, part));
}

/* Whether a member other than the one reconciled still holds the partition. */
static bool held_by_others(const rin_t *in, const kc_uuid_t *topic, int32_t part)
{
    int32_t n = holders_count(in->holders, topic, part);
    if (n > 0 && held_by_member(in->skip1, topic, part))
        n--;
    if (n > 0 && held_by_member(in->skip2, topic, part))
        n--;
    return n > 0;
}

static bool subscribed_id(const rin_t *in, const kc_uuid_t *topic)
{
    return in->n_subs > 0 &&
           bsearch(topic, in->subs, in->n_subs, sizeof(kc_uuid_t), uuid_qcmp) != NULL;
}

static void recon_set(recon_t *out, int32_t epoch, int32_t prev, int8_t state, tpv_t *assigned,
                      tpv_t *revoking)
{
    out->epoch = epoch;
    out->prev_epoch = prev;
    out->state = state;
    out->assigned = asg_build(assigned, &out->oom);
    out->revoking = revoking ? asg_build(revoking, &out->oom) : NULL;
}

/* Kafka's computeNextAssignment. */
static void compute_next(const rin_t *in, int32_t member_epoch, recon_t *out)
{
    const mview_t *m = in->m;
    tpv_t keep = {0}, revoke = {0}, pending = {0};
    bool unreleased = false;
    for (int32_t i = 0; m->assigned && i < m->assigned->n; i++) {
        const tpl_t *t = &m->assigned->t[i];
        bool sub = subscribed_id(in, &t->topic);
        for (int32_t j = 0; j < t->n; j++) {
            if (sub && asg_has(in->target, &t->topic, t->p[j]))
                tpv_add(&keep, &t->topic, t->p[j]);
            else
                tpv_add(&revoke, &t->topic, t->p[j]);
        }
    }
    for (int32_t i = 0; in->target && i < in->target->n; i++) {
        const tpl_t *t = &in->target->t[i];
        if (!subscribed_id(in, &t->topic))
            continue;
        for (int32_t j = 0; j < t->n; j++) {
            if (asg_has(m->assigned, &t->topic, t->p[j]))
                continue;
            if (held_by_others(in, &t->topic, t->p[j]) && !asg_has(m->revoking, &t->topic, t->p[j]))
                unreleased = true;
            else
                tpv_add(&pending, &t->topic, t->p[j]);
        }
    }
    out->oom = keep.oom || revoke.oom || pending.oom;
    if (!out->oom) {
        if (revoke.n > 1)
            qsort(revoke.v, revoke.n, sizeof(tp_t), tp_cmp);
        if (revoke.n > 0 && owns_any(in->owned, &revoke)) {
            recon_set(out, member_epoch, m->epoch, MS_UNREVOKED, &keep, &revoke);
        } else if (pending.n > 0) {
            for (size_t i = 0; i < pending.n; i++)
                tpv_add(&keep, &pending.v[i].topic, pending.v[i].part);
            recon_set(out, in->target_epoch, m->epoch, unreleased ? MS_UNRELEASED : MS_STABLE,
                      &keep, NULL);
        } else {
            recon_set(out, in->target_epoch, m->epoch, unreleased ? MS_UNRELEASED : MS_STABLE,
                      &keep, NULL);
        }
    }
    tpv_free(&keep);
    tpv_free(&revoke);
    tpv_free(&pending);
}

/* Kafka's updateCurrentAssignment: the subscription changed at the same epoch; partitions of
 * topics no longer subscribed go to revocation. */
static void update_current(const rin_t *in, recon_t *out)
{
    const mview_t *m = in->m;
    tpv_t keep = {0}, revoke = {0};
    size_t removed = 0;
    asg_pairs(m->revoking, &revoke);
    for (int32_t i = 0; m->assigned && i < m->assigned->n; i++) {
        const tpl_t *t = &m->assigned->t[i];
        bool sub = subscribed_id(in, &t->topic);
        for (int32_t j = 0; j < t->n; j++) {
            if (sub) {
                tpv_add(&keep, &t->topic, t->p[j]);
            } else {
                tpv_add(&revoke, &t->topic, t->p[j]);
                removed++;
            }
        }
    }
    out->oom = keep.oom || revoke.oom;
    if (!out->oom && removed == 0) {
        /* Nothing to take away: the member stays as it is. */
        out->epoch = m->epoch;
        out->prev_epoch = m->prev_epoch;
        out->state = m->state;
        out->assigned = asg_dup(m->assigned, &out->oom);
        out->revoking = asg_dup(m->revoking, &out->oom);
    } else if (!out->oom) {
        if (revoke.n > 1)
            qsort(revoke.v, revoke.n, sizeof(tp_t), tp_cmp);
        if (revoke.n > 0 && owns_any(in->owned, &revoke)) {
            recon_set(out, m->epoch, m->epoch, MS_UNREVOKED, &keep, &revoke);
        } else {
            /* Already released: only the assigned partitions shrink. */
            out->epoch = m->epoch;
            out->prev_epoch = m->epoch;
            out->state = m->state;
            out->assigned = asg_build(&keep, &out->oom);
            out->revoking = asg_dup(m->revoking, &out->oom);
        }
    }
    tpv_free(&keep);
    tpv_free(&revoke);
}

/* Kafka's maybeReconcile + CurrentAssignmentBuilder.build(): the member's next current
 * assignment. out->changed tells whether it differs (a record is then due). */
static void reconcile(const rin_t *in, recon_t *out)
{
    const mview_t *m = in->m;
    memset(out, 0, sizeof(*out));
    if (!in->sub_changed && m->state == MS_STABLE && m->epoch == in->target_epoch)
        return;
    tpv_t rv = {0};
    switch (m->state) {
    case MS_STABLE:
        if (m->epoch != in->target_epoch)
            compute_next(in, m->epoch, out);
        else if (in->sub_changed)
            update_current(in, out);
        else
            return;
        break;
    case MS_UNREVOKED:
        asg_pairs(m->revoking, &rv);
        if (rv.oom) {
            out->oom = true;
        } else if (owns_any(in->owned, &rv)) {
            if (in->sub_changed)
                update_current(in, out);
            else {
                tpv_free(&rv);
                return;
            }
        } else {
            compute_next(in, m->epoch, out);
        }
        tpv_free(&rv);
        break;
    case MS_UNRELEASED:
        compute_next(in, m->epoch, out);
        break;
    default:
        /* A state from a future version: start over without partitions. */
        if (in->owned->n != 0) {
            out->err = KC_ERR_FENCED_MEMBER_EPOCH;
            return;
        }
        compute_next(in, in->target_epoch, out);
        break;
    }
    if (out->oom) {
        free(out->assigned);
        free(out->revoking);
        out->assigned = out->revoking = NULL;
        return;
    }
    out->changed = out->epoch != m->epoch || out->prev_epoch != m->prev_epoch ||
                   out->state != m->state || !asg_eq(out->assigned, m->assigned) ||
                   !asg_eq(out->revoking, m->revoking);
    if (!out->changed) {
        free(out->assigned);
        free(out->revoking);
        out->assigned = out->revoking = NULL;
    }
}

/* ---- Target assignment (Kafka's TargetAssignmentBuilder) ---------------------------------- */

/* The index of topic `name` in the topics (or -1). */
static int64_t tv_index(const kc_gm_topics_t *tv, kc_str_t name)
{
    const kc_gm_topic_t *t = tv_name(tv, name);
    return t ? (int64_t)(t - tv->v) : -1;
}

/* The ids of the existing topics a member with metadata `m` subscribes to, sorted (malloc'd
 * into *out; *n 0 for none). -1 when out of memory. */
static int member_topic_ids(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                            kc_uuid_t **out, size_t *n)
{
    strv_t names = {0};
    keep_t keep = {0};
    member_subs(g, tv, m, &names, &keep);
    *out = NULL;
    *n = 0;
    int rc = names.oom ? -1 : 0;
    if (rc == 0 && names.n > 0) {
        *out = malloc(names.n * sizeof(kc_uuid_t));
        if (!*out)
            rc = -1;
        for (size_t i = 0; rc == 0 && i < names.n; i++) {
            const kc_gm_topic_t *t = tv_name(tv, names.v[i]);
            if (t)
                (*out)[(*n)++] = t->id;
        }
        if (rc == 0 && *n > 1) {
            qsort(*out, *n, sizeof(kc_uuid_t), uuid_qcmp);
            size_t w = 0;
            for (size_t i = 0; i < *n; i++)
                if (w == 0 || uuid_cmp(&(*out)[w - 1], &(*out)[i]) != 0)
                    (*out)[w++] = (*out)[i];
            *n = w;
        }
    }
    strv_free(&names);
    keep_free(&keep);
    return rc;
}

/* The assignor the group uses: the one most members ask for (ties go to the earlier one in
 * group.consumer.assignors), the default when none asks. `skip1`/`skip2` are left out and
 * `extra` counted, as Kafka's computePreferredServerAssignor. */
static kc_str_t preferred_assignor(const cgroup_t *g, const cmember_t *skip1,
                                   const cmember_t *skip2, const cmeta_t *extra)
{
    const char *list = assignor_list(g->c->assignors);
    kc_str_t best = list_at(list, 0);
    int32_t best_count = 0;
    for (int i = 0;; i++) {
        kc_str_t name = list_at(list, i);
        if (name.len < 0)
            break;
        int32_t count = 0;
        for (const cmember_t *m = g->head; m; m = m->next)
            if (m != skip1 && m != skip2 && kc_str_eq(m->meta->assignor, name))
                count++;
        if (extra && kc_str_eq(extra->assignor, name))
            count++;
        if (count > best_count) {
            best = name;
            best_count = count;
        }
    }
    return best;
}

/* ---- Assignment jobs ---------------------------------------------------------------------- */

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

static void job_orphan(kc_gm_job_t *job)
{
    job->g = NULL;
}

static void job_free(kc_gm_job_t *job)
{
    if (!job)
        return;
    kc_assign_result_free(&job->res);
    kc_arena_free(&job->a);
    free(job);
}

/* The job computing the target assignment of group `g` for `epoch`: every member except
 * `upd_old` and `gone`, plus, when `upd_meta` is not NULL, member `upd_id` with that metadata
 * (the member a heartbeat is updating; its current target, or that of `gone`, the static
 * member it replaces, is its starting point). NULL when out of memory. */
static kc_gm_job_t *job_build(cgroup_t *g, const kc_gm_topics_t *tv, int32_t epoch, kc_str_t upd_id,
                              const cmeta_t *upd_meta, const cmember_t *upd_old,
                              const cmember_t *gone)
{
    kc_gm_job_t *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    kc_arena_init(&job->a);
    kc_arena_t *a = &job->a;
    job->epoch = epoch;
    bool oom = false;
    uint32_t nm = 0;
    for (const cmember_t *m = g->head; m; m = m->next)
        if (m != upd_old && m != gone)
            nm++;
    if (upd_meta)
        nm++;
    size_t nt = tv->n;
    kc_assign_member_t *members = nm ? kc_arena_alloc(a, nm * sizeof(*members)) : NULL;
    kc_assign_topic_t *topics = nt ? kc_arena_alloc(a, nt * sizeof(*topics)) : NULL;
    const cmeta_t **metas = nm ? kc_arena_alloc(a, nm * sizeof(*metas)) : NULL;
    job->ids = nm ? kc_arena_alloc(a, nm * sizeof(kc_str_t)) : NULL;
    job->instance_ids = nm ? kc_arena_alloc(a, nm * sizeof(kc_str_t)) : NULL;
    job->topic_ids = nt ? kc_arena_alloc(a, nt * sizeof(kc_uuid_t)) : NULL;
    bool *used = nt ? kc_arena_alloc(a, nt * sizeof(bool)) : NULL;
    if ((nm && (!members || !metas || !job->ids || !job->instance_ids)) ||
        (nt && (!topics || !job->topic_ids || !used)))
        goto oom;
    for (size_t i = 0; i < nt; i++) {
        kc_str_t name = kc_text_arena(a, tv->v[i].name, &oom);
        topics[i].name = name.p;
        topics[i].name_len = name.len > 0 ? (size_t)name.len : 0;
        topics[i].partitions = tv->v[i].partitions;
        job->topic_ids[i] = tv->v[i].id;
        used[i] = false;
    }
    uint32_t k = 0;
    for (const cmember_t *m = g->head; m; m = m->next) {
        if (m == upd_old || m == gone)
            continue;
        job->ids[k] = m->id;
        metas[k++] = m->meta;
    }
    if (upd_meta) {
        job->ids[k] = upd_id;
        metas[k++] = upd_meta;
    }
    for (uint32_t i = 0; i < nm && !oom; i++) {
        kc_assign_member_t *am = &members[i];
        const cmeta_t *mt = metas[i];
        /* The current target, for stickiness: a replaced static member's for its successor
         * (looked up before the id is copied). */
        const asg_t *cur = target_of(g, job->ids[i]);
        if (!find_target(g, job->ids[i]) && upd_meta && i == nm - 1 && gone)
            cur = target_of(g, gone->id);
        job->ids[i] = kc_text_arena(a, job->ids[i], &oom);
        job->instance_ids[i] = kc_text_arena(a, mt->instance_id, &oom);
        kc_str_t rack = kc_text_arena(a, mt->rack_id, &oom);
        am->id = job->ids[i].p;
        am->id_len = job->ids[i].len > 0 ? (size_t)job->ids[i].len : 0;
        am->instance_id = job->instance_ids[i].p;
        am->instance_id_len = job->instance_ids[i].len > 0 ? (size_t)job->instance_ids[i].len : 0;
        am->rack = rack.p;
        am->rack_len = rack.len > 0 ? (size_t)rack.len : 0;
        /* Subscribed topic indexes. */
        strv_t names = {0};
        keep_t keep = {0};
        member_subs(g, tv, mt, &names, &keep);
        uint32_t *idx = names.n ? kc_arena_alloc(a, names.n * sizeof(*idx)) : NULL;
        uint32_t ni = 0;
        for (size_t j = 0; idx && j < names.n; j++) {
            int64_t x = tv_index(tv, names.v[j]);
            if (x >= 0) {
                idx[ni++] = (uint32_t)x;
                used[x] = true;
            }
        }
        if (names.oom || (names.n && !idx))
            oom = true;
        strv_free(&names);
        keep_free(&keep);
        am->topics = idx;
        am->n_topics = ni;
        uint32_t ntp = 0;
        kc_assign_tparts_t *tp =
            cur && cur->n ? kc_arena_alloc(a, (size_t)cur->n * sizeof(*tp)) : NULL;
        if (cur && cur->n && !tp)
            oom = true;
        for (int32_t j = 0; tp && j < cur->n; j++) {
            const kc_gm_topic_t *t = tv_id(tv, &cur->t[j].topic);
            if (!t)
                continue;
            int32_t *parts = kc_arena_dup(a, cur->t[j].p, (size_t)cur->t[j].n * sizeof(int32_t));
            if (!parts && cur->t[j].n) {
                oom = true;
                break;
            }
            tp[ntp].topic = (uint32_t)(t - tv->v);
            tp[ntp].n_partitions = (uint32_t)cur->t[j].n;
            tp[ntp].partitions = parts;
            ntp++;
        }
        am->current.topics = tp;
        am->current.n_topics = ntp;
    }
    if (oom)
        goto oom;
    job->weight = nm;
    for (size_t i = 0; i < nt; i++)
        if (used[i] && tv->v[i].partitions > 0)
            job->weight += (uint64_t)tv->v[i].partitions;
    job->spec = (kc_assign_spec_t){
        .members = members, .n_members = nm, .topics = topics, .n_topics = (uint32_t)nt};
    kc_str_t name = preferred_assignor(g, upd_old, gone, upd_meta);
    job->asr = kc_assignor_find(name.p, (size_t)name.len);
    if (!job->asr)
        job->asr = kc_assignor_at(0);
    job->assignor = kc_text_arena(a, job->asr ? kc_str_c(job->asr->name) : name, &oom);
    if (oom)
        goto oom;
    return job;
oom:
    job_free(job);
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Run the assignor. Touches nothing but the job, so any thread may call it. The clock is read
 * only to measure the run for the metrics; nothing decides on it. */
void kc_gm_job_run(kc_gm_job_t *job)
{
    uint64_t t0 = mono_ns();
    job->rc = job->asr ? job->asr->assign(&job->spec, &job->res) : -EINVAL;
    job->run_ns = mono_ns() - t0;
}

/* Whether the id is one of the job's members. */
static bool job_has(const kc_gm_job_t *job, kc_str_t id)
{
    for (uint32_t i = 0; i < job->spec.n_members; i++)
        if (kc_str_eq(job->ids[i], id))
            return true;
    return false;
}

/* Kafka's updateTargetAssignment, second half: plan a target record for every member whose
 * target the job changed, then the assignment epoch record. With `remap` (the job ran off the
 * loop while the group went on), members that left since are skipped and the result of a
 * static member that was replaced since goes to its successor, as if those changes came after
 * the assignment. Returns a copy of the new target of member `mine` (null id: none; owned by
 * the caller); *err is a Kafka error when the assignor failed (p->oom when memory ran out). */
static asg_t *job_plan(plan_t *p, const kc_gm_job_t *job, bool remap, kc_str_t mine, int64_t now,
                       int16_t *err)
{
    cgroup_t *g = p->g;
    asg_t *my = NULL;
    if (job->rc != 0) {
        if (job->rc == -ENOMEM) {
            p->oom = true;
        } else {
            *err = KC_ERR_UNKNOWN_SERVER_ERROR;
            KC_ERROR("group",
                     "consumer group %.*s: failed to compute a new target assignment for epoch "
                     "%d with the %.*s assignor (error %d)",
                     SV(g->id), (int)job->epoch, SV(job->assignor), job->rc);
        }
        return NULL;
    }
    for (uint32_t i = 0; i < job->spec.n_members && !p->oom; i++) {
        kc_str_t to = job->ids[i];
        if (remap && !find_member(g, to)) {
            cmember_t *s = find_static(g, job->instance_ids[i]);
            if (!s || job_has(job, s->id))
                continue;
            to = s->id;
        }
        tpv_t l = {0};
        const kc_assign_owned_t *o = &job->res.members[i];
        for (uint32_t j = 0; j < o->n_topics; j++) {
            const kc_assign_tparts_t *t = &o->topics[j];
            if (t->topic >= job->spec.n_topics)
                continue;
            for (uint32_t q = 0; q < t->n_partitions; q++)
                tpv_add(&l, &job->topic_ids[t->topic], t->partitions[q]);
        }
        bool oom = false;
        asg_t *na = asg_build(&l, &oom);
        tpv_free(&l);
        if (oom) {
            p->oom = true;
            break;
        }
        if (mine.p && kc_str_eq(to, mine)) {
            my = asg_dup(na, &oom);
            if (oom)
                p->oom = true;
        }
        if (find_target(g, to) && asg_eq(na, target_of(g, to)))
            free(na);
        else
            plan_target(p, to, na, now);
    }
    KC_DEBUG("group",
             "consumer group %.*s: computed a new target assignment for epoch %d with the "
             "%.*s assignor in %.3f ms%s",
             SV(g->id), (int)job->epoch, SV(job->assignor), (double)job->run_ns / 1e6,
             job->offloaded ? " off the loop" : "");
    act_t *ae = plan_add(p, A_TARGET_EPOCH, KC_STR_NULL);
    if (ae)
        ae->epoch = job->epoch;
    act_encode(p, ae, g->id, now);
    if (p->oom || *err) {
        free(my);
        my = NULL;
    }
    return my;
}

/* Whether `job` runs off the loop: the host can, it is enabled, and the job is large enough
 * (a group still at assignment epoch 0, written by an older kcoord, is computed inline: its
 * joining members could only be given the reserved epoch 0 meanwhile). */
static bool job_offload_wanted(const kc_consumer_t *c, const cgroup_t *g, const kc_gm_job_t *job)
{
    int64_t threshold = c->cfg.consumer_offload_threshold;
    if (!c->ops.offload || threshold < 0 || g->assignment_epoch < 1)
        return false;
    return job->weight >= (uint64_t)(threshold ? threshold : KC_GM_OFFLOAD_THRESHOLD_DEFAULT);
}

static void job_count(kc_consumer_t *c, const kc_gm_job_t *job)
{
    kc_gm_stats_t *st = (&c->gm->stats);
    int mode = job->offloaded ? 1 : 0;
    if (job->rc != 0) {
        st->assign_failed++;
        return;
    }
    double s = (double)job->run_ns / 1e9;
    int i = 0;
    while (i < KC_GM_ASSIGN_BUCKETS - 1 && s > kc_gm_assign_bounds_s[i])
        i++;
    st->assign_time[mode][i]++;
    st->assign_time_sum_s[mode] += s;
}

static void job_finish(kc_gm_job_t *job);

/* Attach `job` (built for the committed group `g`) to it and hand it to the host when
 * `offload`; compute and apply it at once when not, or when the host cannot take it. */
static void job_start(cgroup_t *g, kc_gm_job_t *job, bool offload)
{
    kc_consumer_t *c = g->c;
    g->job = job;
    job->g = g;
    if (offload) {
        job->offloaded = true;
        KC_DEBUG("group",
                 "consumer group %.*s: target assignment for epoch %d (%u members, weight "
                 "%llu) goes off the loop",
                 SV(g->id), (int)job->epoch, job->spec.n_members, (unsigned long long)job->weight);
        if (c->ops.offload(c->ops.ctx, job) == 0)
            return;
        KC_WARN("group",
                "consumer group %.*s: the target assignment for epoch %d could not be handed "
                "to a worker; computing it on the loop",
                SV(g->id), (int)job->epoch);
        job->offloaded = false;
    }
    kc_gm_job_run(job);
    job_finish(job);
}

/* A target assignment that was computed off the loop: apply it when it is newer than the
 * group's, then, when the group epoch moved on meanwhile, start the next one. */
static void job_finish(kc_gm_job_t *job)
{
    cgroup_t *g = job->g;
    if (!g) {
        job_free(job);
        return;
    }
    kc_consumer_t *c = g->c;
    g->job = NULL;
    job->g = NULL;
    job_count(c, job);
    if (job->epoch > g->assignment_epoch) {
        plan_t p = {.c = c, .g = g};
        int16_t err = 0;
        job_plan(&p, job, true, KC_STR_NULL, c->wall, &err);
        if (p.oom)
            KC_ERROR("group",
                     "consumer group %.*s: out of memory applying the target assignment for "
                     "epoch %d; the next heartbeat computes it again",
                     SV(g->id), (int)job->epoch);
        else if (!err)
            commit(&p, "target assignment computed");
        bool failed = err || p.oom;
        plan_free(&p);
        if (failed) {
            job_free(job);
            return; /* the next heartbeat tries again */
        }
    } else {
        KC_DEBUG("group",
                 "consumer group %.*s: target assignment for epoch %d dropped (assignment "
                 "epoch already %d)",
                 SV(g->id), (int)job->epoch, (int)g->assignment_epoch);
    }
    job_free(job);
    if (g->n_members > 0 && g->epoch > g->assignment_epoch) {
        kc_gm_topics_t tv;
        topics_of(c, &tv);
        kc_gm_job_t *next = job_build(g, &tv, g->epoch, KC_STR_NULL, NULL, NULL, NULL);
        if (!next) {
            KC_ERROR("group",
                     "consumer group %.*s: out of memory preparing the target assignment for "
                     "epoch %d; the next heartbeat tries again",
                     SV(g->id), (int)g->epoch);
            return;
        }
        job_start(g, next, job_offload_wanted(c, g, next));
    }
}

/* Called by the host on the loop thread once the job ran (group.h). */
void kc_gm_job_done(kc_gm_job_t *job, kc_time_t now)
{
    if (job->g)
        cg_set_time(job->g->c, now);
    job_finish(job);
}

/* ---- ConsumerGroupHeartbeat ---------------------------------------------------------------- */

/* Kafka's Uuid.randomUuid().toString(): 16 random bytes in URL-safe base64 without padding
 * (22 characters, never starting with '-'), from `a`. */
static kc_str_t random_member_id(kc_consumer_t *c, kc_arena_t *a)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *p = kc_arena_alloc(a, 23);
    if (!p)
        return KC_STR_NULL;
    do {
        uint8_t u[18] = {0};
        uint64_t r1 = kc_manager_random(c->gm), r2 = kc_manager_random(c->gm);
        memcpy(u, &r1, 8);
        memcpy(u + 8, &r2, 8);
        u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
        u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
        int w = 0;
        for (int i = 0; i < 18 && w < 22; i += 3) {
            uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];
            for (int k = 3; k >= 0 && w < 22; k--)
                p[w++] = b64[(v >> (6 * k)) & 63];
        }
        p[22] = '\0';
    } while (p[0] == '-');
    return (kc_str_t){p, 22};
}

int16_t kc_gm_consumer_heartbeat_check(const char *assignors, int16_t version,
                                       const kc_consumer_group_heartbeat_request_t *q,
                                       kc_arena_t *a, kc_str_t *message)
{
    const char *list = assignor_list(assignors);
    const char *why = NULL;
    *message = KC_STR_NULL;
    if ((version >= 1 || q->member_epoch > 0 || q->member_epoch == LEAVE_EPOCH) &&
        (str_blank(q->member_id) || q->member_id.len < 0))
        why = "MemberId can't be empty.";
    else if (str_blank(q->group_id) || q->group_id.len < 0)
        why = "GroupId can't be empty.";
    else if (str_blank(q->instance_id))
        why = "InstanceId can't be empty.";
    else if (str_blank(q->rack_id))
        why = "RackId can't be empty.";
    else if (q->member_epoch == 0) {
        if (q->rebalance_timeout_ms == -1)
            why = "RebalanceTimeoutMs must be provided in first request.";
        else if (q->topic_partitions.n != 0)
            why = "TopicPartitions must be empty when (re-)joining.";
        else if (q->subscribed_topic_names.n < 0 && q->subscribed_topic_regex.len < 0)
            why = "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                  "(re-)joining.";
    } else if (q->member_epoch == STATIC_LEAVE_EPOCH) {
        if (q->instance_id.len < 0)
            why = "InstanceId can't be null.";
    } else if (q->member_epoch < STATIC_LEAVE_EPOCH) {
        why = "MemberEpoch is invalid.";
    }
    if (why) {
        *message = msgf(a, "%s", why);
        return KC_ERR_INVALID_REQUEST;
    }
    if (q->server_assignor.len >= 0 && !in_list(list, q->server_assignor)) {
        /* "uniform,range" -> "uniform, range", as Java's String.join(", ", ...). */
        char supported[256];
        size_t w = 0;
        for (const char *p = list; *p && w + 3 < sizeof(supported); p++) {
            if (*p == ',') {
                supported[w++] = ',';
                supported[w++] = ' ';
            } else {
                supported[w++] = *p;
            }
        }
        supported[w] = '\0';
        *message = msgf(a, "ServerAssignor %.*s is not supported. Supported assignors: %s.",
                        SV(q->server_assignor), supported);
        return KC_ERR_UNSUPPORTED_ASSIGNOR;
    }
    return 0;
}

/* The heartbeat being answered. */
typedef struct hb_s {
    kc_consumer_t *c;
    int16_t version;
    const kc_consumer_group_heartbeat_request_t *q;
    kc_str_t client_id, client_host;
    kc_arena_t *a;
    kc_consumer_group_heartbeat_response_t *r;
} hb_t;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
hb_fail(hb_t *h, int16_t err, const char *fmt, ...)
{
    kc_consumer_group_heartbeat_response_init(h->r);
    h->r->error_code = err;
    if (fmt) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        h->r->error_message = msgf(h->a, "%s", buf);
    }
}

/* A request refused for a reason its user must act on: logged at info once per group and
 * reason, not once per request. */
static void refused(kc_consumer_t *c, int kind, kc_str_t group_id, kc_str_t reason)
{
    (&c->gm->stats)->refused[kind]++;
    if (kc_notes_first(&c->notes, group_id, reason)) {
        char id[256], why[600]; /* the client's bytes, made printable */
        kc_diag_sanitize(id, sizeof(id), group_id.p, group_id.len > 0 ? (size_t)group_id.len : 0);
        kc_diag_sanitize(why, sizeof(why), reason.p, reason.len > 0 ? (size_t)reason.len : 0);
        KC_INFO("group", "consumer group %s: request refused: %s", id, why);
    }
}

static void hb_oom(hb_t *h)
{
    KC_ERROR("group", "consumer group %.*s: out of memory handling a heartbeat",
             SV(h->q->group_id));
    hb_fail(h, KC_ERR_COORDINATOR_NOT_AVAILABLE, NULL);
}

/* Kafka's throwIfConsumerGroupMemberEpochIsInvalid: 0 or FENCED_MEMBER_EPOCH (message set). */
static int16_t check_epoch(hb_t *h, const cmember_t *m, int32_t epoch, const owned_t *owned)
{
    if (epoch == 0) /* a member may always rejoin with epoch 0 */
        return 0;
    if (epoch > m->epoch) {
        hb_fail(h, KC_ERR_FENCED_MEMBER_EPOCH,
                "The consumer group member has a greater member epoch (%d) than the one known "
                "by the group coordinator (%d). The member must abandon all its partitions and "
                "rejoin.",
                (int)epoch, (int)m->epoch);
        return KC_ERR_FENCED_MEMBER_EPOCH;
    }
    if (epoch < m->epoch && (epoch != m->prev_epoch || !owned_subset(owned, m->assigned))) {
        /* Only a member that lost the answer that moved it to its current epoch may come with
         * the previous one, and only while it owns no partition it should not. */
        hb_fail(h, KC_ERR_FENCED_MEMBER_EPOCH,
                "The consumer group member has a smaller member epoch (%d) than the one known "
                "by the group coordinator (%d). The member must abandon all its partitions and "
                "rejoin.",
                (int)epoch, (int)m->epoch);
        return KC_ERR_FENCED_MEMBER_EPOCH;
    }
    return 0;
}

/* How many members use `regex` (Kafka's numSubscribedMembers). */
static int32_t regex_users(const cgroup_t *g, kc_str_t regex)
{
    int32_t n = 0;
    for (const cmember_t *m = g->head; m; m = m->next)
        if (kc_str_eq(m->meta->regex, regex))
            n++;
    return n;
}

/* Add the resolution of `m`'s regex to v[*n] unless it is there; -1 when out of memory. */
static int add_regex(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m, rres_t **v,
                     int32_t *n, bool *changed)
{
    if (!m || !str_set(m->regex))
        return 0;
    for (int32_t i = 0; i < *n; i++)
        if (kc_str_eq(v[i]->regex, m->regex))
            return 0;
    bool oom = false;
    rres_t *r = rx_resolve(g->c, tv, m->regex, &oom);
    if (!r)
        return -1;
    const rres_t *old = rres_cached(g, m->regex);
    if (old && !rres_eq(old, r))
        *changed = true;
    v[(*n)++] = r;
    return 0;
}

/* Resolve every regular expression the members use (with `extra`, without `skip1`/`skip2`)
 * against `tv`: a new cache (*out, *n). Sets *changed when a resolution differs from the one
 * the group has cached. -1 when out of memory. */
static int refresh_regexes(const cgroup_t *g, const kc_gm_topics_t *tv, const cmember_t *skip1,
                           const cmember_t *skip2, const cmeta_t *extra, rres_t ***out, int32_t *n,
                           bool *changed)
{
    *out = NULL;
    *n = 0;
    rres_t **v = calloc((size_t)g->n_members + 1, sizeof(*v));
    if (!v)
        return -1;
    int rc = 0;
    for (const cmember_t *m = g->head; m && rc == 0; m = m->next)
        if (m != skip1 && m != skip2)
            rc = add_regex(g, tv, m->meta, v, n, changed);
    if (rc == 0)
        rc = add_regex(g, tv, extra, v, n, changed);
    if (rc != 0) {
        for (int32_t i = 0; i < *n; i++)
            free(v[i]);
        free(v);
        *n = 0;
        return -1;
    }
    *out = v;
    return 0;
}

/* Rebuild the group's map of who holds what after it was dropped. 0, or -1 when out of
 * memory. */
static int holders_ensure(cgroup_t *g)
{
    if (g->holders.valid)
        return 0;
    g->holders.valid = true;
    for (const cmember_t *m = g->head; m && g->holders.valid; m = m->next) {
        holders_apply(&g->holders, m->assigned, 1);
        holders_apply(&g->holders, m->revoking, 1);
    }
    return g->holders.valid ? 0 : -1;
}

/* The response's assignment, from `a`. */
static kc_consumer_group_heartbeat_assignment_t *resp_assignment(kc_arena_t *a, const asg_t *asg)
{
    kc_consumer_group_heartbeat_assignment_t *r = kc_arena_alloc(a, sizeof(*r));
    if (!r)
        return NULL;
    int32_t n = asg ? asg->n : 0;
    r->topic_partitions.n = n;
    if (n > 0) {
        r->topic_partitions.v = kc_arena_alloc(a, (size_t)n * sizeof(*r->topic_partitions.v));
        if (!r->topic_partitions.v)
            return NULL;
        for (int32_t i = 0; i < n; i++) {
            r->topic_partitions.v[i].topic_id = asg->t[i].topic;
            r->topic_partitions.v[i].partitions.v =
                kc_arena_dup(a, asg->t[i].p, (size_t)asg->t[i].n * sizeof(int32_t));
            if (!r->topic_partitions.v[i].partitions.v)
                return NULL;
            r->topic_partitions.v[i].partitions.n = asg->t[i].n;
        }
    }
    return r;
}

/* Build a member's metadata from `base` updated with the request, as Kafka's
 * ConsumerGroupMember.Builder with its maybeUpdate*() calls. */
static cmeta_t *updated_meta(const hb_t *h, const cmeta_t *base)
{
    const kc_consumer_group_heartbeat_request_t *q = h->q;
    cmeta_t m = *base;
    if (q->instance_id.len >= 0)
        m.instance_id = q->instance_id;
    if (q->rack_id.len >= 0)
        m.rack_id = q->rack_id;
    if (q->rebalance_timeout_ms != -1)
        m.rebalance_timeout_ms = q->rebalance_timeout_ms;
    if (q->server_assignor.len >= 0)
        m.assignor = q->server_assignor;
    if (q->subscribed_topic_names.n >= 0) {
        m.topics = q->subscribed_topic_names.v;
        m.n_topics = q->subscribed_topic_names.n;
    }
    if (h->version >= 1 && q->subscribed_topic_regex.len >= 0)
        m.regex = q->subscribed_topic_regex;
    m.client_id = h->client_id.len >= 0 ? h->client_id : KC_STR_EMPTY;
    m.client_host = h->client_host.len >= 0 ? h->client_host : KC_STR_EMPTY;
    m.classic = false;
    m.classic_session_timeout_ms = 0;
    return meta_new(&m);
}

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

static void hb_state_free(hbs_t *s)
{
    job_free(s->job);
    job_free(s->ran);
    free(s->upd);
    free(s->dflt);
    free(s->my_target);
    free(s->sub_ids);
    free(s->rc.assigned);
    free(s->rc.revoking);
    if (s->new_rres) {
        for (int32_t i = 0; i < s->n_new_rres; i++)
            free(s->new_rres[i]);
        free(s->new_rres);
    }
    plan_free(&s->p);
}

/* The group the heartbeat is for, created when it may be (Kafka's getOrMaybeCreateConsumerGroup; an
 * empty classic group of the id is converted by the commit). */
static int hb_group(hb_t *h, hbs_t *s)
{
    /* The group (Kafka's getOrMaybeCreateConsumerGroup). */
    s->g = find_group(s->c, s->gid);
    if (!s->g) {
        int kind = kc_manager_classic_kind(s->c->gm, s->gid);
        if (kind == KC_CLASSIC_NONE && !s->create) {
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Consumer group %.*s not found.", SV(s->gid));
            return -1;
        }
        if (kind == KC_CLASSIC_ACTIVE && s->create) {
            /* kcoord does not convert groups with members (Kafka's migration policy
             * "disabled" answers the same). */
            refused(s->c, KC_GM_REFUSED_PROTOCOL, s->gid,
                    KC_STR_LIT("a consumer-protocol member (ConsumerGroupHeartbeat) in a classic "
                               "group that has members: kcoord does not convert it "
                               "(GROUP_ID_NOT_FOUND)"));
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND,
                    "Cannot upgrade classic group %.*s to consumer group because online upgrade "
                    "is disabled.",
                    SV(s->gid));
            return -1;
        }
        if (kind != KC_CLASSIC_NONE && !s->create) {
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Group %.*s is not a consumer group.",
                    SV(s->gid));
            return -1;
        }
        if (reserve_group(s->c) != 0 || !(s->g = group_alloc(s->c, s->gid))) {
            hb_oom(h);
            return -1;
        }
        s->p.new_group = true;
        s->p.delete_classic = kind != KC_CLASSIC_NONE;
    }
    s->p.g = s->g;
    return 0;
}

/* The member: the group's capacity, a member id for v0, then the member itself, dynamic or static
 * (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember). */
static int hb_member(hb_t *h, hbs_t *s)
{
    /* Kafka's throwIfConsumerGroupIsFull. */
    s->mid = s->q->member_id.len >= 0 ? s->q->member_id : KC_STR_EMPTY;
    if (s->g->n_members >= max_size(s->c) && (s->mid.len == 0 || !find_member(s->g, s->mid))) {
        hb_fail(h, KC_ERR_GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of %d members.",
                (int)max_size(s->c));
        return -1;
    }
    if (s->mid.len == 0) { /* v0: the coordinator names the member */
        s->mid = random_member_id(s->c, h->a);
        if (s->mid.len < 0) {
            hb_oom(h);
            return -1;
        }
    }

    /* The member (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember). */
    s->inst = s->q->instance_id;
    if (s->inst.len < 0) {
        s->old = find_member(s->g, s->mid);
        if (!s->old && !s->create) {
            hb_fail(h, KC_ERR_UNKNOWN_MEMBER_ID, "Member %.*s is not a member of group %.*s.",
                    SV(s->mid), SV(s->gid));
            return -1;
        }
        if (s->old && check_epoch(h, s->old, s->q->member_epoch, &s->owned) != 0)
            return -1;
    } else {
        cmember_t *st = find_static(s->g, s->inst);
        if (s->create) {
            if (!st) {
                s->old = find_member(s->g, s->mid);
            } else if (st->epoch != STATIC_LEAVE_EPOCH && !st->meta->classic) {
                KC_DEBUG("group",
                         "consumer group %.*s: static member %.*s with instance id %.*s cannot "
                         "join: the instance id is owned by member %.*s",
                         SV(s->gid), SV(s->mid), SV(s->inst), SV(st->id));
                hb_fail(h, KC_ERR_UNRELEASED_INSTANCE_ID,
                        "Static member %.*s with instance id %.*s cannot join the group because "
                        "the instance id is owned by %.*s member.",
                        SV(s->mid), SV(s->inst), SV(st->id));
                return -1;
            } else {
                s->gone = st;
            }
        } else {
            if (!st) {
                hb_fail(h, KC_ERR_UNKNOWN_MEMBER_ID, "Instance id %.*s is unknown.", SV(s->inst));
                return -1;
            }
            if (!kc_str_eq(st->id, s->mid)) {
                KC_DEBUG("group",
                         "consumer group %.*s: static member %.*s with instance id %.*s is fenced "
                         "by member %.*s",
                         SV(s->gid), SV(s->mid), SV(s->inst), SV(st->id));
                hb_fail(h, KC_ERR_FENCED_INSTANCE_ID,
                        "Static member %.*s with instance id %.*s was fenced by member %.*s.",
                        SV(s->mid), SV(s->inst), SV(st->id));
                return -1;
            }
            if (check_epoch(h, st, s->q->member_epoch, &s->owned) != 0)
                return -1;
            s->old = st;
        }
    }
    return 0;
}

/* The member's current assignment and metadata before this heartbeat: a new member, one replacing a
 * static member, or an existing one. */
static int hb_member_view(hb_t *h, hbs_t *s)
{
    if (s->gone || !s->old) {
        s->p.new_member = member_alloc(s->mid);
        if (!s->p.new_member || kc_strmap_reserve(&s->g->by_id, 1) != 0 ||
            reserve_member_timers(s->g) != 0) {
            hb_oom(h);
            return -1;
        }
        s->mview_id = s->p.new_member->id;
    } else {
        s->mview_id = s->old->id;
    }
    if (s->gone) {
        /* Kafka's replaceMember: the new member takes over the old one's metadata, target and
         * assignment, at epoch 0. */
        bool oom = false;
        plan_remove_member(&s->p, s->gone, s->now);
        plan_meta(&s->p, s->mview_id, meta_new(s->gone->meta), s->now);
        plan_target(&s->p, s->mview_id, asg_dup(target_of(s->g, s->gone->id), &oom), s->now);
        plan_current(&s->p, s->mview_id, 0, 0, s->gone->state, asg_dup(s->gone->assigned, &oom),
                     asg_dup(s->gone->revoking, &oom), s->now);
        if (oom || s->p.oom) {
            hb_oom(h);
            return -1;
        }
        s->cur = (mview_t){0, 0, s->gone->state, s->gone->assigned, s->gone->revoking};
        s->base = s->gone->meta;
        KC_DEBUG("group",
                 "consumer group %.*s: static member with instance id %.*s rejoins as %.*s, "
                 "replacing member %.*s",
                 SV(s->gid), SV(s->inst), SV(s->mid), SV(s->gone->id));
    } else if (s->old) {
        s->cur = (mview_t){s->old->epoch, s->old->prev_epoch, s->old->state, s->old->assigned,
                           s->old->revoking};
        s->base = s->old->meta;
    } else {
        s->dflt = meta_default();
        if (!s->dflt) {
            hb_oom(h);
            return -1;
        }
        s->base = s->dflt;
        KC_DEBUG("group", "consumer group %.*s: member %.*s%s%.*s joins", SV(s->gid), SV(s->mid),
                 s->inst.len >= 0 ? " with instance id " : "", SV(s->inst));
    }
    return 0;
}

/* 1. The member's metadata (Kafka's hasMemberSubscriptionChanged and
 * maybeUpdateRegularExpressions). */
static int hb_metadata(hb_t *h, hbs_t *s)
{
    /* 1. The member's metadata (Kafka's hasMemberSubscriptionChanged and
     * maybeUpdateRegularExpressions). */
    s->upd = updated_meta(h, s->base);
    if (!s->upd) {
        hb_oom(h);
        return -1;
    }
    if (!meta_eq(s->base, s->upd)) {
        s->names_changed = !topics_eq(s->base, s->upd);
        s->regex_changed = !kc_str_eq(s->base->regex, s->upd->regex);
        if (s->regex_changed && str_set(s->upd->regex) && regex_users(s->g, s->upd->regex) == 0) {
            /* Kafka's throwIfRegularExpressionIsInvalid, with kcoord's bounds (regex.h). */
            char why[256];
            int rxrc = kc_rx_cache_check(s->c->rx, s->upd->regex.p, (size_t)s->upd->regex.len, why,
                                         sizeof(why));
            if (rxrc == KC_RX_OOM) {
                hb_oom(h);
                return -1;
            }
            if (rxrc != KC_RX_OK) {
                /* A long pattern is shown cut, so that the reason fits the message. */
                int shown = s->upd->regex.len > 200 ? 200 : (int)s->upd->regex.len;
                const char *more = s->upd->regex.len > 200 ? "..." : "";
                if (rxrc == KC_RX_FULL)
                    hb_fail(h, KC_ERR_INVALID_REGULAR_EXPRESSION,
                            "SubscribedTopicRegex `%.*s%s` cannot be used: %s.", shown,
                            s->upd->regex.p, more, why);
                else
                    hb_fail(h, KC_ERR_INVALID_REGULAR_EXPRESSION,
                            "SubscribedTopicRegex `%.*s%s` is not a valid regular expression: %s.",
                            shown, s->upd->regex.p, more, why);
                refused(s->c,
                        rxrc == KC_RX_FULL ? KC_GM_REFUSED_REGEX_LIMIT
                                           : KC_GM_REFUSED_REGEX_INVALID,
                        s->gid, h->r->error_message);
                return -1;
            }
        }
        cmeta_t *copy = meta_new(s->upd);
        if (!copy) {
            hb_oom(h);
            return -1;
        }
        plan_meta(&s->p, s->mview_id, copy, s->now);
    }
    s->sub_changed = s->names_changed || s->regex_changed;
    /* kcoord resolves a regular expression at once, so a changed one is always "updated and
     * resolved" in Kafka's terms and bumps the epoch right away. */
    s->bump = s->p.new_group || s->sub_changed;
    return 0;
}

/* The metadata of the subscribed topics and the group epoch (Kafka's updateSubscriptionMetadata).
 */
static int hb_group_epoch(hb_t *h, hbs_t *s)
{
    /* The metadata of the subscribed topics (Kafka's updateSubscriptionMetadata). */
    topics_of(s->c, &s->tv);
    bool expired = s->g->topics_version == 0 || s->g->topics_version != s->tv.version;
    s->group_epoch = s->g->epoch;
    if (s->bump || expired) {
        strv_t subs = {0};
        keep_t keep = {0};
        group_subs(s->g, &s->tv, s->old, s->gone, s->upd, &subs, &keep);
        int64_t hash = metadata_hash(&s->tv, &subs);
        bool oom = subs.oom;
        strv_free(&subs);
        keep_free(&keep);
        bool regexes_changed = false;
        if (!oom && refresh_regexes(s->g, &s->tv, s->old, s->gone, s->upd, &s->new_rres,
                                    &s->n_new_rres, &regexes_changed) != 0)
            oom = true;
        if (oom) {
            hb_oom(h);
            return -1;
        }
        if (hash != s->g->metadata_hash || (regexes_changed && s->g->topics_version != 0))
            s->bump = true;
        if (s->bump) {
            s->group_epoch = s->g->epoch + 1;
            plan_group_epoch(&s->p, s->group_epoch, hash, s->now);
            KC_DEBUG("group", "consumer group %.*s: group epoch %d (metadata hash %lld)",
                     SV(s->gid), (int)s->group_epoch, (long long)hash);
            /* Why, for the rebalance history. */
            if (s->gone) {
                s->p.rb_set = true;
                s->p.rb_cause = KC_RB_STATIC_REPLACED;
                s->p.rb_member = s->mid;
                s->p.rb_reason = KC_STR_LIT("a static member rejoined under a new member id");
            } else if (!s->old) {
                s->p.rb_set = true;
                s->p.rb_cause = KC_RB_MEMBER_JOINED;
                s->p.rb_member = s->mid;
            } else if (s->sub_changed) {
                s->p.rb_set = true;
                s->p.rb_cause = KC_RB_METADATA_CHANGED;
                s->p.rb_member = s->mid;
                s->p.rb_reason = KC_STR_LIT("its subscription changed");
            }
            s->p.rb_joined = s->gone || !s->old ? s->mid : KC_STR_NULL;
        }
        if (s->g->has_partition_metadata)
            act_encode(&s->p, plan_add(&s->p, A_PARTMETA_DEL, KC_STR_NULL), s->gid, s->now);
    }
    return 0;
}

/* 2. The target assignment, when the group epoch is ahead of it. */
static int hb_target(hb_t *h, hbs_t *s)
{
    /* 2. The target assignment, when the group epoch is ahead of it. */
    s->target_epoch = s->g->assignment_epoch;
    if (s->group_epoch > s->g->assignment_epoch && !s->g->job) {
        s->job = job_build(s->g, &s->tv, s->group_epoch, s->mview_id, s->upd, s->old, s->gone);
        if (!s->job) {
            hb_oom(h);
            return -1;
        }
    }
    if (s->job && !job_offload_wanted(s->c, s->g, s->job)) {
        /* Small enough to compute now: the member gets its new target in this answer. */
        int16_t err = 0;
        kc_gm_job_run(s->job);
        job_count(s->c, s->job);
        s->my_target = job_plan(&s->p, s->job, false, s->mview_id, s->now, &err);
        s->ran = s->job; /* the plan's records name members by the job's copies of their ids */
        s->job = NULL;
        if (err) {
            hb_fail(h, err, "Failed to compute a new target assignment for epoch %d.",
                    (int)s->group_epoch);
            return -1;
        }
        s->target_epoch = s->group_epoch;
        s->target = s->my_target;
    } else {
        /* Computed off the loop (job, started after the commit, or one already running): the
         * member reconciles towards the group's current target meanwhile, as in Kafka with
         * group.consumer.assignor.offload.enable. */
        s->target = find_target(s->g, s->mview_id) ? target_of(s->g, s->mview_id)
                    : s->gone                      ? target_of(s->g, s->gone->id)
                                                   : NULL;
    }
    if (s->p.oom) {
        hb_oom(h);
        return -1;
    }
    return 0;
}

/* 3. Reconcile the member towards its target. */
static int hb_reconcile(hb_t *h, hbs_t *s)
{
    /* 3. Reconcile the member towards its target. */
    if (holders_ensure(s->g) != 0 ||
        member_topic_ids(s->g, &s->tv, s->upd, &s->sub_ids, &s->n_sub_ids) != 0) {
        hb_oom(h);
        return -1;
    }
    rin_t in = {&s->cur,        s->sub_ids, s->n_sub_ids, s->target_epoch, s->target,
                &s->g->holders, s->old,     s->gone,      &s->owned,       s->sub_changed};
    reconcile(&in, &s->rc);
    if (s->rc.err) {
        hb_fail(h, s->rc.err,
                "The consumer group member is in a unknown state. The member must abandon all "
                "its partitions and rejoin.");
        return -1;
    }
    if (s->rc.oom) {
        hb_oom(h);
        return -1;
    }
    s->final_epoch = s->cur.epoch;
    s->final_assigned = s->cur.assigned;
    s->final_state = s->cur.state;
    if (s->rc.changed) {
        bool oom = false;
        s->resp_copy = asg_dup(s->rc.assigned, &oom);
        s->final_epoch = s->rc.epoch;
        s->final_state = s->rc.state;
        plan_current(&s->p, s->mview_id, s->rc.epoch, s->rc.prev_epoch, s->rc.state, s->rc.assigned,
                     s->rc.revoking, s->now);
        s->rc.assigned = s->rc.revoking = NULL;
        KC_DEBUG("group", "consumer group %.*s: member %.*s now at epoch %d in state %s",
                 SV(s->gid), SV(s->mid), (int)s->final_epoch, member_state_name(s->final_state));
        if (oom)
            s->p.oom = true;
        s->final_assigned = s->resp_copy;
    }
    if (s->p.oom) {
        free(s->resp_copy);
        hb_oom(h);
        return -1;
    }
    return 0;
}

/* The record-size check, the answer, the commit and the soft state. */
static int hb_answer(hb_t *h, hbs_t *s)
{
    /* Every record must fit in message.max.bytes: Kafka's CoordinatorRuntime refuses the
     * write (RecordTooLargeException), answered UNKNOWN_SERVER_ERROR. The metadata record is
     * what a client can make large (thousands of subscribed topic names). */
    size_t big = plan_largest(&s->p);
    if (big > (size_t)record_max(s->c)) {
        free(s->resp_copy);
        hb_fail(h, KC_ERR_UNKNOWN_SERVER_ERROR,
                "The heartbeat would write a %zu-byte record, larger than message.max.bytes "
                "(%d).",
                big, (int)record_max(s->c));
        refused(s->c, KC_GM_REFUSED_RECORD_SIZE, s->gid, h->r->error_message);
        return -1;
    }

    /* The answer (from the arena) before the commit, which may free `cur`'s assignment. */
    kc_consumer_group_heartbeat_response_t *r = h->r;
    bool full = s->q->rebalance_timeout_ms != -1 &&
                (s->q->subscribed_topic_names.n >= 0 || s->q->subscribed_topic_regex.len >= 0) &&
                s->q->topic_partitions.n >= 0;
    bool oom = false;
    r->member_id = kc_text_arena(h->a, s->mid, &oom);
    r->member_epoch = s->final_epoch;
    r->heartbeat_interval_ms = hb_interval(s->c);
    if (s->q->member_epoch == 0 || full || !asg_eq(s->final_assigned, s->cur.assigned)) {
        r->assignment = resp_assignment(h->a, s->final_assigned);
        if (!r->assignment)
            oom = true;
    }
    free(s->resp_copy);
    if (oom) {
        hb_oom(h);
        return -1;
    }

    char reason[160];
    snprintf(reason, sizeof(reason), "heartbeat of member %.*s at epoch %d", SV(s->mid),
             (int)s->q->member_epoch);
    commit(&s->p, reason);
    if (s->job) {
        job_start(s->g, s->job, true);
        s->job = NULL;
    }

    /* Soft state: timers and the metadata check. */
    cmember_t *m = find_member(s->g, s->mview_id);
    if (m) {
        set_session(s->g, m);
        if (s->rc.changed) {
            if (m->state == MS_UNREVOKED)
                set_rebalance(s->g, m);
            else
                m->rebalance_deadline = NEVER;
        }
    }
    if (s->new_rres) {
        rres_clear(s->g);
        s->g->rres = s->new_rres;
        s->g->n_rres = s->n_new_rres;
        s->new_rres = NULL;
        s->g->topics_version = s->tv.version;
    }
    return 0;
}

static void do_heartbeat(hb_t *h)
{
    static int (*const steps[])(hb_t *, hbs_t *) = {
        hb_group,       hb_member, hb_member_view, hb_metadata,
        hb_group_epoch, hb_target, hb_reconcile,   hb_answer,
    };
    hbs_t s;
    memset(&s, 0, sizeof(s));
    s.c = h->c;
    s.q = h->q;
    s.now = h->c->wall;
    s.gid = h->q->group_id;
    s.create = h->q->member_epoch == 0;
    s.owned = (owned_t){h->q->topic_partitions.v, h->q->topic_partitions.n};
    s.p = (plan_t){.c = h->c};
    s.cur = (mview_t){0, 0, MS_STABLE, NULL, NULL};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (steps[i](h, &s) != 0)
            break;
    hb_state_free(&s);
}

/* ---- Fencing, leaving, deleting ------------------------------------------------------------ */

/* Kafka's consumerGroupFenceMembers: remove the members (their records' tombstones) and bump
 * the group epoch with the metadata hash of what the others subscribe to. 0, or -1 when out
 * of memory (nothing changed). */
static int fence(kc_consumer_t *c, cgroup_t *g, cmember_t **ms, size_t n, const char *reason,
                 int cause)
{
    if (n == 0)
        return 0;
    plan_t p = {.c = c, .g = g};
    p.rb_set = true;
    p.rb_cause = cause;
    p.rb_member = ms[0]->id;
    p.rb_reason = cause == KC_RB_SYNC_TIMEOUT ? kc_str_c(reason) : KC_STR_NULL;
    p.rb_joined = KC_STR_NULL;
    int64_t now = c->wall; /* for records */
    for (size_t i = 0; i < n; i++)
        plan_remove_member(&p, ms[i], now);
    kc_gm_topics_t tv;
    topics_of(c, &tv);
    strv_t subs = {0};
    keep_t keep = {0};
    for (const cmember_t *m = g->head; m; m = m->next) {
        bool fenced = false;
        for (size_t i = 0; i < n && !fenced; i++)
            fenced = ms[i] == m;
        if (!fenced)
            member_subs(g, &tv, m->meta, &subs, &keep);
    }
    strv_sort_unique(&subs);
    int64_t hash = metadata_hash(&tv, &subs);
    if (subs.oom)
        p.oom = true;
    strv_free(&subs);
    keep_free(&keep);
    plan_group_epoch(&p, g->epoch + 1, hash, now);
    if (p.oom) {
        KC_ERROR("group", "consumer group %.*s: out of memory fencing members", SV(g->id));
        plan_free(&p);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        KC_DEBUG("group", "consumer group %.*s: member %.*s fenced: %s", SV(g->id), SV(ms[i]->id),
                 reason);
    KC_DEBUG("group", "consumer group %.*s: group epoch %d (metadata hash %lld)", SV(g->id),
             (int)g->epoch + 1, (long long)hash);
    commit(&p, reason);
    plan_free(&p);
    return 0;
}

/* Kafka's consumerGroupLeave, for member epoch -1 or -2. */
static void do_leave(hb_t *h)
{
    kc_consumer_t *c = h->c;
    const kc_consumer_group_heartbeat_request_t *q = h->q;
    kc_str_t gid = q->group_id, mid = q->member_id, inst = q->instance_id;
    cgroup_t *g = find_group(c, gid);
    if (!g) {
        if (kc_manager_classic_kind(c->gm, gid) != KC_CLASSIC_NONE)
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Group %.*s is not a consumer group.", SV(gid));
        else
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Group %.*s not found.", SV(gid));
        return;
    }
    cmember_t *m;
    if (inst.len < 0) {
        m = find_member(g, mid);
        if (!m) {
            hb_fail(h, KC_ERR_UNKNOWN_MEMBER_ID, "Member %.*s is not a member of group %.*s.",
                    SV(mid), SV(gid));
            return;
        }
    } else {
        m = find_static(g, inst);
        if (!m) {
            hb_fail(h, KC_ERR_UNKNOWN_MEMBER_ID, "Instance id %.*s is unknown.", SV(inst));
            return;
        }
        if (!kc_str_eq(m->id, mid)) {
            hb_fail(h, KC_ERR_FENCED_INSTANCE_ID,
                    "Static member %.*s with instance id %.*s was fenced by member %.*s.", SV(mid),
                    SV(inst), SV(m->id));
            return;
        }
    }
    bool oom = false;
    h->r->member_id = kc_text_arena(h->a, inst.len >= 0 ? m->id : mid, &oom);
    h->r->member_epoch = q->member_epoch;
    if (oom) {
        hb_oom(h);
        return;
    }
    if (inst.len >= 0 && q->member_epoch == STATIC_LEAVE_EPOCH) {
        /* Kafka's consumerGroupStaticMemberGroupLeave: the member stays, at epoch -2, keeping
         * its partitions for its next incarnation; its session timer keeps running. */
        plan_t p = {.c = c, .g = g};
        plan_current(&p, m->id, STATIC_LEAVE_EPOCH, m->prev_epoch, m->state,
                     asg_dup(m->assigned, &oom), NULL, c->wall);
        if (oom || p.oom) {
            plan_free(&p);
            hb_oom(h);
            return;
        }
        KC_DEBUG("group",
                 "consumer group %.*s: static member %.*s with instance id %.*s left temporarily",
                 SV(gid), SV(m->id), SV(inst));
        commit(&p, "a static member left temporarily");
        plan_free(&p);
        m->rebalance_deadline = NEVER;
        return;
    }
    KC_DEBUG("group", "consumer group %.*s: member %.*s leaves", SV(gid), SV(m->id));
    if (fence(c, g, &m, 1, "the member left the group", KC_RB_MEMBER_LEFT) != 0)
        hb_oom(h);
}

/* Kafka's createGroupTombstoneRecords: the order matters (current assignments, target
 * assignments, the target epoch, member metadata, partition metadata, the group epoch). */
static void plan_delete(plan_t *p, int64_t now)
{
    cgroup_t *g = p->g;
    for (const cmember_t *m = g->head; m; m = m->next)
        act_encode(p, plan_add(p, A_CURRENT_DEL, m->id), g->id, now);
    for (const cmember_t *m = g->head; m; m = m->next)
        act_encode(p, plan_add(p, A_TARGET_DEL, m->id), g->id, now);
    act_encode(p, plan_add(p, A_TARGET_EPOCH_DEL, KC_STR_NULL), g->id, now);
    for (const cmember_t *m = g->head; m; m = m->next)
        act_encode(p, plan_add(p, A_META_DEL, m->id), g->id, now);
    act_encode(p, plan_add(p, A_PARTMETA_DEL, KC_STR_NULL), g->id, now);
    act_encode(p, plan_add(p, A_GROUP_DEL, KC_STR_NULL), g->id, now);
}

int16_t kc_consumer_delete(kc_consumer_t *c, kc_time_t now, kc_str_t id, const char *reason)
{
    cg_set_time(c, now);
    cgroup_t *g = find_group(c, id);
    if (!g)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    if (g->n_members > 0)
        return KC_ERR_NON_EMPTY_GROUP;
    plan_t p = {.c = c, .g = g};
    plan_delete(&p, c->wall);
    if (p.oom) {
        plan_free(&p);
        KC_ERROR("group", "consumer group %.*s: out of memory deleting it", SV(id));
        return KC_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    KC_INFO("group", "consumer group %.*s: Empty -> Dead: %s", SV(id), reason);
    commit(&p, reason);
    plan_free(&p);
    return 0;
}

void kc_consumer_drop(kc_consumer_t *c, kc_str_t id)
{
    cgroup_t *g = find_group(c, id);
    if (!g)
        return;
    KC_DEBUG("group", "consumer group %.*s: replaced by a classic group record", SV(id));
    kc_manager_del(c->gm, &g->gh, g->id);
    group_release(g);
}

/* ---- Timers -------------------------------------------------------------------------------- */

/* The member whose session (or rebalance) deadline comes first, when it has passed; NULL
 * otherwise, or when the budget ran out. A key left early (a renewed session, a rebalance
 * timer cancelled) is moved to the real deadline, or dropped, when it comes up: one O(log n)
 * step, counted as work. Keys are never later than deadlines. */
static cmember_t *due_member(cgroup_t *g, bool session, int64_t *budget)
{
    kc_consumer_t *c = g->c;
    kc_heap_t *h = session ? &g->sessions : &g->rebalances;
    kc_heap_node_t *top;
    while ((top = kc_heap_top(h)) != NULL && top->key <= c->now) {
        cmember_t *m = session ? kc_heap_entry(top, cmember_t, session_node)
                               : kc_heap_entry(top, cmember_t, rebalance_node);
        int64_t d = session ? m->session_deadline : m->rebalance_deadline;
        if (d == top->key)
            return m;
        if (*budget <= 0)
            return NULL;
        (*budget)--;
        (&c->gm->stats)->timers_examined++;
        kc_heap_remove(h, top);
        if (d != NEVER)
            kc_heap_push(h, top, d);
    }
    return NULL;
}

/* Members whose sessions ended together are fenced together, at most this many in one group
 * epoch bump: one fence costs about as much as the group's size whatever the number fenced,
 * so 10 000 silent members cost 40 fences, not 10 000. */
enum { FENCE_BATCH = 256 };

/* Fire the group's due timers, earliest first, while the tick's budget lasts; each is found
 * in O(log n) through the group's heaps. */
static void run_group_timers(cgroup_t *g, int64_t *budget)
{
    kc_consumer_t *c = g->c;
    kc_gm_stats_t *st = (&c->gm->stats);
    cmember_t *batch[FENCE_BATCH];
    while (*budget > 0) {
        cmember_t *sm = due_member(g, true, budget);
        cmember_t *rm = *budget > 0 ? due_member(g, false, budget) : NULL;
        if (*budget <= 0)
            return;
        size_t n = 0;
        char reason[160];
        bool session;
        if (sm && (!rm || sm->session_deadline <= rm->rebalance_deadline)) {
            /* This member's session ended first; so did every other one due by now. */
            session = true;
            snprintf(reason, sizeof(reason), "the member session expired");
            for (cmember_t *m = sm; m && *budget > 0 && n < FENCE_BATCH;
                 m = due_member(g, true, budget)) {
                (*budget)--;
                st->timers_examined++;
                m->session_deadline = NEVER;
                kc_heap_remove(&g->sessions, &m->session_node);
                batch[n++] = m;
            }
        } else if (rm) {
            session = false;
            (*budget)--;
            st->timers_examined++;
            rm->rebalance_deadline = NEVER;
            kc_heap_remove(&g->rebalances, &rm->rebalance_node);
            if (rm->epoch != rm->rebalance_epoch)
                continue; /* it moved on: Kafka's timer finds nothing to do */
            snprintf(reason, sizeof(reason), "it failed to transition from epoch %d within %dms",
                     (int)rm->epoch, (int)rm->meta->rebalance_timeout_ms);
            batch[n++] = rm;
        } else {
            return;
        }
        st->timers_fired += n;
        if (fence(c, g, batch, n, reason, session ? KC_RB_SESSION_TIMEOUT : KC_RB_SYNC_TIMEOUT) !=
            0) {
            /* Out of memory: try again in a second (the members are still in the group, so
             * its heaps have room). */
            for (size_t i = 0; i < n; i++) {
                cmember_t *m = batch[i];
                if (session) {
                    m->session_deadline = c->now + 1000;
                    kc_heap_arm(&g->sessions, &m->session_node, m->session_deadline);
                } else {
                    m->rebalance_deadline = c->now + 1000;
                    kc_heap_arm(&g->rebalances, &m->rebalance_node, m->rebalance_deadline);
                }
            }
            return;
        }
    }
}

/* ---- Admin and offsets --------------------------------------------------------------------- */

bool kc_consumer_exists(const kc_consumer_t *c, kc_str_t id)
{
    return find_group(c, id) != NULL;
}

bool kc_consumer_is_empty(const kc_consumer_t *c, kc_str_t id)
{
    const cgroup_t *g = find_group(c, id);
    return g && g->n_members == 0;
}

static void fill_info(const cgroup_t *g, kc_group_info_t *out)
{
    int s = compute_state(g);
    memset(out, 0, sizeof(*out));
    out->group_id = g->id;
    out->type = "consumer";
    out->state_name = cg_state_names[s];
    out->state = s == CG_EMPTY ? KC_GROUP_EMPTY : KC_GROUP_STABLE;
    out->protocol_type = KC_STR_LIT("consumer");
    out->protocol = KC_STR_EMPTY;
    out->generation = g->epoch;
    out->n_members = g->n_members;
    out->state_timestamp_ms = -1;
}

int kc_consumer_info(const kc_consumer_t *c, kc_str_t id, kc_group_info_t *out)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return -1;
    fill_info(g, out);
    return 0;
}

void kc_consumer_each(const kc_consumer_t *c, void (*fn)(void *arg, const kc_group_info_t *g),
                      void *arg)
{
    for (size_t i = 0; i < kc_manager_slots(c->gm); i++) {
        const kc_ghead_t *h = kc_manager_slot(c->gm, i, KC_KIND_CONSUMER);
        const cgroup_t *g = h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
        if (!g)
            continue;
        kc_group_info_t info;
        fill_info(g, &info);
        fn(arg, &info);
    }
}

/* Kafka's ConsumerGroup.validateOffsetCommit (never transactional here). */
int16_t kc_consumer_validate_commit(kc_consumer_t *c, int16_t version, kc_str_t id, int32_t epoch,
                                    kc_str_t member_id)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    /* An admin client or a consumer without group management commits into an empty group. */
    if (epoch < 0 && g->n_members == 0)
        return 0;
    const cmember_t *m = find_member(g, member_id);
    if (!m)
        return KC_ERR_UNKNOWN_MEMBER_ID;
    if (!m->meta->classic && version < 9)
        return KC_ERR_UNSUPPORTED_VERSION;
    if (epoch != m->epoch)
        return m->meta->classic ? KC_ERR_ILLEGAL_GENERATION : KC_ERR_STALE_MEMBER_EPOCH;
    return 0;
}

/* Kafka's ConsumerGroup.validateOffsetFetch. */
int16_t kc_consumer_validate_fetch(const kc_consumer_t *c, kc_str_t id, kc_str_t member_id,
                                   int32_t epoch)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return 0;
    if (member_id.len < 0 && epoch < 0)
        return 0;
    const cmember_t *m = find_member(g, member_id);
    if (!m)
        return KC_ERR_UNKNOWN_MEMBER_ID;
    if (epoch != m->epoch)
        return m->meta->classic ? KC_ERR_ILLEGAL_GENERATION : KC_ERR_STALE_MEMBER_EPOCH;
    return 0;
}

/* Kafka's ModernGroup.isSubscribedToTopic: a topic one of the members subscribes to, by name
 * or through its regular expression. */
bool kc_consumer_subscribed(const kc_consumer_t *c, kc_str_t id, kc_str_t topic)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return false;
    kc_gm_topics_t tv;
    topics_of(c, &tv);
    for (const cmember_t *m = g->head; m; m = m->next)
        if (member_subscribed(g, &tv, m->meta, topic))
            return true;
    return false;
}

/* Kafka's validateConsumerGroupMember, then "does not use the classic protocol". */
int16_t kc_consumer_classic_member_check(const kc_consumer_t *c, kc_str_t id, kc_str_t member_id,
                                         kc_str_t instance_id)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return KC_ERR_UNKNOWN_MEMBER_ID;
    const cmember_t *m;
    if (instance_id.len < 0) {
        m = find_member(g, member_id);
    } else {
        m = find_static(g, instance_id);
        if (m && !kc_str_eq(m->id, member_id))
            return KC_ERR_FENCED_INSTANCE_ID;
    }
    (void)m; /* kcoord's consumer groups have no classic members */
    return KC_ERR_UNKNOWN_MEMBER_ID;
}

/* Kafka's classicGroupLeaveToConsumerGroup: the named members are fenced together. */
void kc_consumer_classic_leave(kc_consumer_t *c, kc_time_t now, kc_str_t id,
                               const kc_member_identity_t *ids, int32_t n, int16_t *errors)
{
    cg_set_time(c, now);
    cgroup_t *g = find_group(c, id);
    cmember_t **valid = n > 0 ? calloc((size_t)n, sizeof(*valid)) : NULL;
    size_t nv = 0;
    for (int32_t i = 0; i < n; i++) {
        cmember_t *m = NULL;
        errors[i] = 0;
        if (!g) {
            errors[i] = KC_ERR_UNKNOWN_MEMBER_ID;
            continue;
        }
        if (ids[i].group_instance_id.len < 0) {
            m = find_member(g, ids[i].member_id);
        } else {
            m = find_static(g, ids[i].group_instance_id);
            if (m && ids[i].member_id.len > 0 && !kc_str_eq(m->id, ids[i].member_id)) {
                errors[i] = KC_ERR_FENCED_INSTANCE_ID;
                continue;
            }
        }
        if (!m) {
            errors[i] = KC_ERR_UNKNOWN_MEMBER_ID;
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < nv && !dup; k++)
            dup = valid[k] == m;
        if (!dup && valid)
            valid[nv++] = m;
    }
    if (nv > 0 &&
        fence(c, g, valid, nv, "the members left through LeaveGroup", KC_RB_MEMBER_LEFT) != 0)
        for (int32_t i = 0; i < n; i++)
            errors[i] = KC_ERR_COORDINATOR_NOT_AVAILABLE;
    if (n > 0 && !valid)
        for (int32_t i = 0; i < n; i++)
            errors[i] = KC_ERR_COORDINATOR_NOT_AVAILABLE;
    free(valid);
}

/* ConsumerGroupDescribe's assignment of a member, from `a`: topics the catalog no longer has
 * are left out, as Kafka does. */
static int describe_assignment(kc_arena_t *a, const kc_gm_topics_t *tv, const asg_t *asg,
                               kc_consumer_group_describe_assignment_t *out)
{
    bool oom = false;
    int32_t n = asg ? asg->n : 0, k = 0;
    out->topic_partitions.v = NULL;
    out->topic_partitions.n = 0;
    if (n == 0)
        return 0;
    kc_consumer_group_describe_topic_partitions_t *v = kc_arena_alloc(a, (size_t)n * sizeof(*v));
    if (!v)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        const kc_gm_topic_t *t = tv_id(tv, &asg->t[i].topic);
        if (!t)
            continue;
        v[k].topic_id = asg->t[i].topic;
        v[k].topic_name = kc_text_arena(a, t->name, &oom);
        v[k].partitions.v = kc_arena_dup(a, asg->t[i].p, (size_t)asg->t[i].n * sizeof(int32_t));
        v[k].partitions.n = asg->t[i].n;
        if (!v[k].partitions.v)
            oom = true;
        k++;
    }
    out->topic_partitions.v = v;
    out->topic_partitions.n = k;
    return oom ? -1 : 0;
}

void kc_consumer_describe(const kc_consumer_t *c, int16_t version, kc_str_t group_id,
                          bool include_authorized_operations, kc_arena_t *a,
                          kc_consumer_group_describe_described_group_t *out)
{
    bool oom = false;
    memset(out, 0, sizeof(*out));
    out->error_message = KC_STR_NULL;
    out->group_state = KC_STR_EMPTY;
    out->assignor_name = KC_STR_EMPTY;
    out->authorized_operations = INT32_MIN;
    out->group_id = kc_text_arena(a, group_id.len >= 0 ? group_id : KC_STR_EMPTY, &oom);
    const cgroup_t *g = find_group(c, group_id);
    if (!g) {
        out->error_code = KC_ERR_GROUP_ID_NOT_FOUND;
        if (kc_manager_classic_kind(c->gm, group_id) != KC_CLASSIC_NONE)
            out->error_message = msgf(a, "Group %.*s is not a consumer group.", SV(group_id));
        else
            out->error_message = msgf(a, "Group %.*s not found.", SV(group_id));
        return;
    }
    kc_gm_topics_t tv;
    topics_of(c, &tv);
    out->group_state = kc_str_c(cg_state_names[compute_state(g)]);
    out->group_epoch = g->epoch;
    out->assignment_epoch = g->assignment_epoch;
    kc_str_t name = preferred_assignor(g, NULL, NULL, NULL);
    out->assignor_name = kc_text_arena(a, name, &oom);
    if (g->n_members > 0) {
        kc_member_t *v = kc_arena_alloc(a, (size_t)g->n_members * sizeof(*v));
        if (!v) {
            oom = true;
        } else {
            int32_t i = 0;
            for (const cmember_t *m = g->head; m; m = m->next, i++) {
                const cmeta_t *mt = m->meta;
                v[i].member_id = kc_text_arena(a, m->id, &oom);
                v[i].instance_id = kc_text_arena(a, mt->instance_id, &oom);
                v[i].rack_id = kc_text_arena(a, mt->rack_id, &oom);
                v[i].member_epoch = m->epoch;
                v[i].client_id = kc_text_arena(a, mt->client_id, &oom);
                v[i].client_host = kc_text_arena(a, mt->client_host, &oom);
                v[i].subscribed_topic_regex = kc_text_arena(a, mt->regex, &oom);
                v[i].subscribed_topic_names.n = mt->n_topics;
                v[i].subscribed_topic_names.v =
                    mt->n_topics ? kc_arena_alloc(a, (size_t)mt->n_topics * sizeof(kc_str_t))
                                 : NULL;
                if (mt->n_topics && !v[i].subscribed_topic_names.v)
                    oom = true;
                for (int32_t k = 0; !oom && k < mt->n_topics; k++)
                    v[i].subscribed_topic_names.v[k] = kc_text_arena(a, mt->topics[k], &oom);
                if (describe_assignment(a, &tv, m->assigned, &v[i].assignment) != 0 ||
                    describe_assignment(a, &tv, target_of(g, m->id), &v[i].target_assignment) != 0)
                    oom = true;
                v[i].member_type = (int8_t)(version >= 1 ? (mt->classic ? 0 : 1) : -1);
            }
            out->members.v = v;
            out->members.n = i;
        }
    }
    if (oom) {
        memset(&out->members, 0, sizeof(out->members));
        out->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    if (include_authorized_operations)
        out->authorized_operations = KC_GROUP_AUTHORIZED_OPERATIONS;
}

/* ---- The dump ------------------------------------------------------------------------------ */

typedef struct dbuf_s {
    char *p;
    size_t len, used;
} dbuf_t;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
dput(dbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->used < b->len ? b->p + b->used : NULL,
                      b->used < b->len ? b->len - b->used : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->used += (size_t)n;
}

static void dput_asg(dbuf_t *b, const asg_t *a)
{
    dput(b, "[");
    for (int32_t i = 0; a && i < a->n; i++) {
        dput(b, "%s", i ? " " : "");
        for (int k = 0; k < 16; k++)
            dput(b, "%02x", a->t[i].topic.b[k]);
        dput(b, ":");
        for (int32_t j = 0; j < a->t[i].n; j++)
            dput(b, "%s%d", j ? "," : "", (int)a->t[i].p[j]);
    }
    dput(b, "]");
}

static void dput_str(dbuf_t *b, kc_str_t s)
{
    if (s.len < 0)
        dput(b, "null");
    else
        dput(b, "\"%.*s\"", SV(s));
}

static int cmp_member_ptr(const void *x, const void *y)
{
    return kc_text_cmp((*(const cmember_t *const *)x)->id, (*(const cmember_t *const *)y)->id);
}

static int cmp_target_ptr(const void *x, const void *y)
{
    return kc_text_cmp((*(const ctarget_t *const *)x)->member_id,
                       (*(const ctarget_t *const *)y)->member_id);
}

size_t kc_consumer_dump(const kc_consumer_t *c, kc_str_t group_id, char *buf, size_t len)
{
    const cgroup_t *g = find_group(c, group_id);
    if (!g)
        return 0;
    dbuf_t b = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    dput(&b, "group %.*s epoch %d hash %lld assignment_epoch %d partition_metadata %d state %s\n",
         SV(g->id), (int)g->epoch, (long long)g->metadata_hash, (int)g->assignment_epoch,
         g->has_partition_metadata ? 1 : 0, cg_state_names[compute_state(g)]);
    const cmember_t **ms = g->n_members ? malloc((size_t)g->n_members * sizeof(*ms)) : NULL;
    const ctarget_t **ts = g->targets.n ? malloc(g->targets.n * sizeof(*ts)) : NULL;
    size_t n = 0, nt = 0;
    for (const cmember_t *m = g->head; ms && m; m = m->next)
        ms[n++] = m;
    for (size_t i = 0; ts && i < g->targets.cap; i++) {
        const ctarget_t *t = kc_strmap_slot(&g->targets, i);
        if (t)
            ts[nt++] = t;
    }
    if (n > 1)
        qsort(ms, n, sizeof(*ms), cmp_member_ptr);
    if (nt > 1)
        qsort(ts, nt, sizeof(*ts), cmp_target_ptr);
    for (size_t i = 0; i < n; i++) {
        const cmember_t *m = ms[i];
        const cmeta_t *mt = m->meta;
        dput(&b, "member %.*s epoch %d prev %d state %s instance ", SV(m->id), (int)m->epoch,
             (int)m->prev_epoch, member_state_name(m->state));
        dput_str(&b, mt->instance_id);
        dput(&b, " rack ");
        dput_str(&b, mt->rack_id);
        dput(&b, " client ");
        dput_str(&b, mt->client_id);
        dput(&b, " host ");
        dput_str(&b, mt->client_host);
        dput(&b, " rebalance_timeout %d assignor ", (int)mt->rebalance_timeout_ms);
        dput_str(&b, mt->assignor);
        dput(&b, " regex ");
        dput_str(&b, mt->regex);
        dput(&b, " topics [");
        for (int32_t k = 0; k < mt->n_topics; k++)
            dput(&b, "%s%.*s", k ? "," : "", SV(mt->topics[k]));
        dput(&b, "] assigned ");
        dput_asg(&b, m->assigned);
        dput(&b, " revoking ");
        dput_asg(&b, m->revoking);
        dput(&b, "\n");
    }
    for (size_t i = 0; i < nt; i++) {
        dput(&b, "target %.*s ", SV(ts[i]->member_id));
        dput_asg(&b, ts[i]->asg);
        dput(&b, "\n");
    }
    free(ms);
    free(ts);
    return b.used;
}

/* ---- Loading ------------------------------------------------------------------------------- */

/* Kafka's getOrMaybeCreatePersistedConsumerGroup: the consumer group a record belongs to,
 * created when missing (a "simple" classic group of the same id, which only holds offsets, is
 * replaced). *g NULL with 0 when the group does not exist and `create` is false; -1 when out
 * of memory; -2 when a classic group with members has the id. */
static int replay_group(kc_consumer_t *c, kc_str_t id, bool create, cgroup_t **g)
{
    *g = find_group(c, id);
    if (*g || !create)
        return 0;
    int kind = kc_manager_classic_kind(c->gm, id);
    if (kind == KC_CLASSIC_EMPTY || kind == KC_CLASSIC_ACTIVE) {
        KC_WARN("group", "consumer group record for %.*s, which is a classic group: not loaded",
                SV(id));
        return -2;
    }
    if (reserve_group(c) != 0 || !(*g = group_alloc(c, id)))
        return -1;
    if (kind == KC_CLASSIC_SIMPLE)
        kc_manager_classic_remove(c->gm, cg_time(c), id, false,
                                  "replaced by a consumer group while loading");
    (*g)->loading = true;
    kc_manager_put(c->gm, &(*g)->gh, (*g)->id); /* reserved */
    return 0;
}

static asg_t *
asg_from_current(const kc_consumer_group_current_member_assignment_value_topic_partitions_t *v,
                 int32_t n, bool *oom)
{
    tpv_t l = {0};
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < v[i].partitions.n; j++)
            tpv_add(&l, &v[i].topic_id, v[i].partitions.v[j]);
    asg_t *a = asg_build(&l, oom);
    tpv_free(&l);
    return a;
}

/* A member for replay: the existing one, or a new one put in the group. NULL when out of
 * memory. */
static cmember_t *replay_member(cgroup_t *g, kc_str_t id)
{
    cmember_t *m = find_member(g, id);
    if (m)
        return m;
    cmember_t *slot = member_alloc(id);
    if (!slot || kc_strmap_reserve(&g->by_id, 1) != 0 || reserve_member_timers(g) != 0) {
        member_free(slot);
        return NULL;
    }
    return ap_member(g, id, &slot);
}

/* A member's metadata record (NULL: its tombstone). 0, or -1 when out of memory. */
static int replay_member_meta(cgroup_t *g, kc_str_t member_id,
                              const kc_consumer_group_member_metadata_value_t *v)
{
    if (!v) {
        ap_meta_del(g, member_id);
        return 0;
    }
    cmeta_t src;
    memset(&src, 0, sizeof(src));
    src.instance_id = v->instance_id;
    src.rack_id = v->rack_id;
    src.client_id = v->client_id;
    src.client_host = v->client_host;
    src.regex = v->subscribed_topic_regex;
    src.assignor = v->server_assignor;
    src.rebalance_timeout_ms = v->rebalance_timeout_ms;
    src.topics = v->subscribed_topic_names.v;
    src.n_topics = v->subscribed_topic_names.n > 0 ? v->subscribed_topic_names.n : 0;
    if (v->classic_member_metadata) {
        src.classic = true;
        src.classic_session_timeout_ms = v->classic_member_metadata->session_timeout_ms;
    }
    cmeta_t *meta = meta_new(&src);
    cmember_t *m = meta ? replay_member(g, member_id) : NULL;
    if (!m || (meta->instance_id.len >= 0 && kc_strmap_reserve(&g->by_instance, 1) != 0)) {
        free(meta);
        return -1;
    }
    ap_meta(g, member_id, meta, NULL);
    return 0;
}

/* A member's target assignment record (NULL: its tombstone). 0, or -1 when out of memory. */
static int replay_target_member(cgroup_t *g, kc_str_t member_id,
                                const kc_consumer_group_target_assignment_member_value_t *v)
{
    if (!v) {
        ap_target_del(g, member_id);
        return 0;
    }
    bool oom = false;
    tpv_t l = {0};
    for (int32_t i = 0; i < v->topic_partitions.n; i++)
        for (int32_t j = 0; j < v->topic_partitions.v[i].partitions.n; j++)
            tpv_add(&l, &v->topic_partitions.v[i].topic_id,
                    v->topic_partitions.v[i].partitions.v[j]);
    asg_t *asg = asg_build(&l, &oom);
    tpv_free(&l);
    ctarget_t *slot = find_target(g, member_id) ? NULL : target_alloc(member_id);
    if (oom || (!find_target(g, member_id) && (!slot || kc_strmap_reserve(&g->targets, 1) != 0))) {
        free(asg);
        target_free(slot);
        return -1;
    }
    ap_target(g, member_id, asg, &slot);
    target_free(slot);
    return 0;
}

/* A member's current assignment record (NULL: its tombstone). 0, or -1 when out of memory. */
static int replay_current(cgroup_t *g, kc_str_t member_id,
                          const kc_consumer_group_current_member_assignment_value_t *v)
{
    if (!v) {
        ap_current_del(g, member_id);
        return 0;
    }
    bool oom = false;
    asg_t *as = asg_from_current(v->assigned_partitions.v, v->assigned_partitions.n, &oom);
    asg_t *rv = asg_from_current(v->partitions_pending_revocation.v,
                                 v->partitions_pending_revocation.n, &oom);
    cmember_t *m = oom ? NULL : replay_member(g, member_id);
    if (!m) {
        free(as);
        free(rv);
        return -1;
    }
    ap_current(g, member_id, v->member_epoch, v->previous_member_epoch, v->state, as, rv, NULL);
    return 0;
}

static int replay_value(kc_consumer_t *c, int16_t type, kc_reader_t *kr, kc_arena_t *a,
                        const uint8_t *value, size_t value_len)
{
    kc_reader_t vr;
    int16_t vv = 0;
    if (value) {
        kc_rd_init(&vr, value, value_len);
        vv = kc_rd_i16(&vr);
        if (vr.err || vv != 0) {
            KC_WARN("group", "consumer group record of type %d with value version %d not loaded",
                    (int)type, (int)vv);
            return -2;
        }
    }
    cgroup_t *g;
    int rc;
#define DECODE(kind, r, v, var)                                                                    \
    (kc_##kind##_decode((r), a, (v), &(var)) == 0 ? 0 : ((r)->err == KC_RD_NOMEM ? -1 : -2))
    switch (type) {
    case KC_RECORD_CONSUMER_GROUP_METADATA_KEY: {
        kc_consumer_group_metadata_key_t k;
        kc_consumer_group_metadata_value_t v;
        if ((rc = DECODE(consumer_group_metadata_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        if (value)
            ap_group_epoch(g, v.epoch, v.metadata_hash);
        else
            ap_group_del(c, g);
        return 0;
    }
    case KC_RECORD_CONSUMER_GROUP_PARTITION_METADATA_KEY: {
        kc_consumer_group_partition_metadata_key_t k;
        kc_consumer_group_partition_metadata_value_t v;
        if ((rc = DECODE(consumer_group_partition_metadata_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_partition_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        g->has_partition_metadata = value != NULL;
        return 0;
    }
    case KC_RECORD_CONSUMER_GROUP_MEMBER_METADATA_KEY: {
        kc_consumer_group_member_metadata_key_t k;
        kc_consumer_group_member_metadata_value_t v;
        if ((rc = DECODE(consumer_group_member_metadata_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_member_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        return replay_member_meta(g, k.member_id, value ? &v : NULL);
    }
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: {
        kc_consumer_group_target_assignment_metadata_key_t k;
        kc_consumer_group_target_assignment_metadata_value_t v;
        if ((rc = DECODE(consumer_group_target_assignment_metadata_key, kr, type, k)) != 0 ||
            (value &&
             (rc = DECODE(consumer_group_target_assignment_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        g->assignment_epoch = value ? v.assignment_epoch : -1;
        return 0;
    }
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: {
        kc_consumer_group_target_assignment_member_key_t k;
        kc_consumer_group_target_assignment_member_value_t v;
        if ((rc = DECODE(consumer_group_target_assignment_member_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_target_assignment_member_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        return replay_target_member(g, k.member_id, value ? &v : NULL);
    }
    case KC_RECORD_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: {
        kc_consumer_group_current_member_assignment_key_t k;
        kc_consumer_group_current_member_assignment_value_t v;
        if ((rc = DECODE(consumer_group_current_member_assignment_key, kr, type, k)) != 0 ||
            (value &&
             (rc = DECODE(consumer_group_current_member_assignment_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        return replay_current(g, k.member_id, value ? &v : NULL);
    }
    }
#undef DECODE
    return -2;
}

int kc_consumer_replay(kc_consumer_t *c, int16_t type, const uint8_t *key, size_t key_len,
                       const uint8_t *value, size_t value_len)
{
    kc_reader_t kr;
    kc_rd_init(&kr, key, key_len);
    (void)kc_rd_i16(&kr);
    kc_arena_t a;
    kc_arena_init(&a);
    int rc = replay_value(c, type, &kr, &a, value, value_len);
    kc_arena_free(&a);
    if (rc == -2)
        KC_WARN("group", "malformed consumer group record of type %d not loaded", (int)type);
    return rc;
}

/* Kafka's onLoaded for consumer groups: fresh session timers for every member, and rebalance
 * timers for those with partitions to revoke; epochs and assignments are kept, so the members
 * carry on where they were. */
void kc_consumer_load_complete(kc_consumer_t *c, kc_time_t now)
{
    cg_set_time(c, now);
    size_t loaded = 0, members = 0;
    for (size_t i = 0; i < kc_manager_slots(c->gm); i++) {
        kc_ghead_t *h = kc_manager_slot(c->gm, i, KC_KIND_CONSUMER);
        cgroup_t *g = h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
        if (!g || !g->loading)
            continue;
        g->loading = false;
        g->topics_version = 0; /* look at the topics' metadata at the next heartbeat */
        rres_clear(g);
        g->logged_state = compute_state(g);
        loaded++;
        members += (size_t)g->n_members;
        for (cmember_t *m = g->head; m; m = m->next) {
            set_session(g, m);
            if (m->state == MS_UNREVOKED)
                set_rebalance(g, m);
        }
        KC_DEBUG("group", "consumer group %.*s: loaded in %s with %d members, epoch %d", SV(g->id),
                 cg_state_names[g->logged_state], (int)g->n_members, (int)g->epoch);
    }
    if (loaded > 0)
        KC_INFO("group", "partition %d: loaded %zu consumer groups with %zu members",
                (int)c->cfg.partition, loaded, members);
}

/* ---- Life ---------------------------------------------------------------------------------- */

kc_consumer_t *kc_consumer_new(kc_gm_t *gm, const kc_gm_config_t *cfg, const kc_gm_ops_t *ops)
{
    kc_consumer_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->gm = gm;
    c->cfg = *cfg;
    if (cfg->consumer_assignors && *cfg->consumer_assignors) {
        c->assignors = strdup(cfg->consumer_assignors);
        if (!c->assignors) {
            free(c);
            return NULL;
        }
    }
    c->cfg.consumer_assignors = c->assignors;
    c->rx = kc_rx_cache_new(cfg->consumer_regex_max_bytes > 0 ? cfg->consumer_regex_max_bytes
                                                              : KC_GM_REGEX_MAX_BYTES_DEFAULT,
                            cfg->consumer_regex_max_count > 0 ? cfg->consumer_regex_max_count
                                                              : KC_GM_REGEX_MAX_COUNT_DEFAULT);
    if (!c->rx) {
        free(c->assignors);
        free(c);
        return NULL;
    }
    if (ops)
        c->ops = *ops;
    kc_notes_init(&c->notes);
    return c;
}

void kc_consumer_regex_counts(const kc_consumer_t *c, size_t *in_use, size_t *compiled)
{
    *in_use = c ? kc_rx_cache_in_use(c->rx) : 0;
    *compiled = c ? kc_rx_cache_compiled(c->rx) : 0;
}

void kc_consumer_free(kc_consumer_t *c)
{
    if (!c)
        return;
    kc_rx_cache_free(c->rx);
    kc_notes_free(&c->notes);
    free(c->assignors);
    free(c);
}

void kc_consumer_heartbeat(kc_consumer_t *c, kc_time_t now, int16_t version,
                           const kc_consumer_group_heartbeat_request_t *req, kc_str_t client_id,
                           kc_str_t client_host, kc_arena_t *a,
                           kc_consumer_group_heartbeat_response_t *resp)
{
    cg_set_time(c, now);
    kc_consumer_group_heartbeat_response_init(resp);
    kc_str_t msg;
    int16_t err = kc_gm_consumer_heartbeat_check(c->assignors, version, req, a, &msg);
    if (err) {
        resp->error_code = err;
        resp->error_message = msg;
        return;
    }
    hb_t h = {c, version, req, client_id, client_host, a, resp};
    if (req->member_epoch == LEAVE_EPOCH || req->member_epoch == STATIC_LEAVE_EPOCH)
        do_leave(&h);
    else
        do_heartbeat(&h);
}

/* ---- Introspection (group.h's kc_gm_json_*) ------------------------------------------------ */

/* An assignment as {"topic":[partitions]}; a topic the catalog no longer has is named by its
 * id in hex. */
static void json_assignment(const kc_gm_topics_t *tv, const asg_t *asg, kc_emit_fn emit, void *arg)
{
    emit(arg, "{", 1);
    for (int32_t i = 0; asg && i < asg->n; i++) {
        if (i)
            emit(arg, ",", 1);
        const kc_gm_topic_t *t = tv_id(tv, &asg->t[i].topic);
        if (t) {
            kc_text_json_str(emit, arg, t->name);
        } else {
            static const char hex[] = "0123456789abcdef";
            char id[34];
            id[0] = '"';
            for (int k = 0; k < 16; k++) {
                id[1 + 2 * k] = hex[asg->t[i].topic.b[k] >> 4];
                id[2 + 2 * k] = hex[asg->t[i].topic.b[k] & 15];
            }
            id[33] = '"';
            emit(arg, id, sizeof(id));
        }
        emit(arg, ":[", 2);
        for (int32_t k = 0; k < asg->t[i].n; k++) {
            if (k)
                emit(arg, ",", 1);
            kc_text_json_i64(emit, arg, asg->t[i].p[k]);
        }
        emit(arg, "]", 1);
    }
    emit(arg, "}", 1);
}

static void json_summary(const cgroup_t *g, kc_emit_fn emit, void *arg)
{
    kc_text_json_lit(emit, arg, "{\"group_id\":");
    kc_text_json_str(emit, arg, g->id);
    kc_text_json_lit(emit, arg, ",\"type\":\"consumer\",\"state\":\"");
    kc_text_json_lit(emit, arg, cg_state_names[compute_state(g)]);
    kc_text_json_lit(emit, arg, "\",\"protocol_type\":\"consumer\",\"protocol\":");
    kc_text_json_str(emit, arg, preferred_assignor(g, NULL, NULL, NULL));
    kc_text_json_lit(emit, arg, ",\"generation\":");
    kc_text_json_i64(emit, arg, g->epoch);
    kc_text_json_lit(emit, arg, ",\"members\":");
    kc_text_json_i64(emit, arg, g->n_members);
    kc_text_json_lit(emit, arg, ",\"state_timestamp_ms\":-1,\"rebalance_count\":");
    kc_text_json_i64(emit, arg, g->rb.total);
    kc_text_json_lit(emit, arg, ",\"last_rebalance_end_ms\":");
    kc_text_json_i64(emit, arg, kc_history_last_end(&g->rb));
    emit(arg, "}", 1);
}

void kc_consumer_json_list(const kc_consumer_t *c, int64_t mono_ms, kc_emit_fn emit, void *arg,
                           bool *first)
{
    (void)mono_ms;
    for (size_t i = 0; i < kc_manager_slots(c->gm); i++) {
        const kc_ghead_t *h = kc_manager_slot(c->gm, i, KC_KIND_CONSUMER);
        const cgroup_t *g = h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
        if (!g)
            continue;
        if (!*first)
            emit(arg, ",", 1);
        *first = false;
        json_summary(g, emit, arg);
    }
}

int kc_consumer_json_summary(const kc_consumer_t *c, kc_str_t id, kc_emit_fn emit, void *arg)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return -1;
    json_summary(g, emit, arg);
    return 0;
}

int kc_consumer_json_group(const kc_consumer_t *c, int64_t mono_ms, kc_str_t id, kc_emit_fn emit,
                           void *arg)
{
    const cgroup_t *g = find_group(c, id);
    if (!g)
        return -1;
    kc_gm_topics_t tv;
    topics_of(c, &tv);
    kc_text_json_lit(emit, arg, "{\"group_id\":");
    kc_text_json_str(emit, arg, g->id);
    kc_text_json_lit(emit, arg, ",\"type\":\"consumer\",\"state\":\"");
    kc_text_json_lit(emit, arg, cg_state_names[compute_state(g)]);
    kc_text_json_lit(emit, arg, "\",\"protocol_type\":\"consumer\",\"protocol\":");
    kc_text_json_str(emit, arg, preferred_assignor(g, NULL, NULL, NULL));
    kc_text_json_lit(emit, arg, ",\"generation\":");
    kc_text_json_i64(emit, arg, g->epoch);
    kc_text_json_lit(emit, arg, ",\"assignment_epoch\":");
    kc_text_json_i64(emit, arg, g->assignment_epoch);
    kc_text_json_lit(emit, arg, ",\"leader\":null,\"members\":[");
    for (const cmember_t *m = g->head; m; m = m->next) {
        const cmeta_t *mt = m->meta;
        if (m != g->head)
            emit(arg, ",", 1);
        kc_text_json_lit(emit, arg, "{\"member_id\":");
        kc_text_json_str(emit, arg, m->id);
        kc_text_json_lit(emit, arg, ",\"instance_id\":");
        kc_text_json_str(emit, arg, mt->instance_id);
        kc_text_json_lit(emit, arg, ",\"client_id\":");
        kc_text_json_str(emit, arg, mt->client_id);
        kc_text_json_lit(emit, arg, ",\"client_host\":");
        kc_text_json_str(emit, arg, mt->client_host);
        kc_text_json_lit(emit, arg, ",\"assignment\":");
        json_assignment(&tv, m->assigned, emit, arg);
        kc_text_json_lit(emit, arg, ",\"pending_revocation\":");
        json_assignment(&tv, m->revoking, emit, arg);
        kc_text_json_lit(emit, arg, ",\"target_assignment\":");
        json_assignment(&tv, target_of(g, m->id), emit, arg);
        kc_text_json_lit(emit, arg, ",\"last_heartbeat_age_ms\":");
        int64_t age = mono_ms - m->last_hb_ms;
        kc_text_json_i64(emit, arg, age > 0 ? age : 0);
        kc_text_json_lit(emit, arg, ",\"member_epoch\":");
        kc_text_json_i64(emit, arg, m->epoch);
        kc_text_json_lit(emit, arg, ",\"state\":\"");
        kc_text_json_lit(emit, arg, member_state_name(m->state));
        kc_text_json_lit(emit, arg, "\",\"subscribed_topics\":[");
        for (int32_t k = 0; k < mt->n_topics; k++) {
            if (k)
                emit(arg, ",", 1);
            kc_text_json_str(emit, arg, mt->topics[k]);
        }
        kc_text_json_lit(emit, arg, "],\"subscribed_regex\":");
        kc_text_json_str(emit, arg, mt->regex);
        kc_text_json_lit(emit, arg, ",\"assignor\":");
        kc_text_json_str(emit, arg, mt->assignor);
        kc_text_json_lit(emit, arg, ",\"rebalance_timeout_ms\":");
        kc_text_json_i64(emit, arg, mt->rebalance_timeout_ms);
        emit(arg, "}", 1);
    }
    kc_text_json_lit(emit, arg, "],\"rebalances\":");
    kc_history_json(&g->rb, mono_ms, emit, arg);
    emit(arg, "}", 1);
    return 0;
}

/* ---- For the manager (consumer.h) ---------------------------------------------------------- */

int64_t kc_consumer_timers(kc_consumer_t *c, kc_ghead_t *h, kc_time_t now, int64_t *budget)
{
    cg_set_time(c, now);
    cgroup_t *g = kc_heap_entry(h, cgroup_t, gh);
    run_group_timers(g, budget);
    return group_earliest(g);
}

void kc_consumer_destroy(kc_consumer_t *c, kc_ghead_t *h)
{
    cgroup_t *g = kc_heap_entry(h, cgroup_t, gh);
    kc_manager_del(c->gm, &g->gh, g->id);
    group_release(g);
}
