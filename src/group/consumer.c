/* consumer.c - Kafka's consumer group protocol (KIP-848) for the groups of one __consumer_offsets
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
 * Files: this file holds the groups and members, the plan/commit/apply primitives, the heartbeat
 * (kc_consumer_run_heartbeat: eight steps over one hbs_t), fencing and timers; assignment.c the
 * partition sets, reconcile.c a member's reconciliation, target.c subscriptions, regexes and
 * assignment jobs, consumer_load.c replay, consumer_admin.c offsets, admin and views;
 * consumer_group.h the data they share. The manager (manager.c) owns the groups' map and heap; what
 * this machine needs of a classic group of the same id goes through the manager's conversions
 * (manager.h).
 *
 * Extending: request handling validates first and fills a plan; only commit() changes state.
 * New records get an act kind, an encoder and an apply primitive that replay shares.
 */

#include "group/consumer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/assignment.h"
#include "group/reconcile.h"
#include "group/target.h"

const char *const kc_consumer_state_names[] = {"Empty", "Assigning", "Reconciling", "Stable"};

const char *kc_consumer_member_state_name(int8_t s)
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
kc_str_t
kc_consumer_msgf(kc_arena_t *a, const char *fmt, ...)
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

/* ---- Member metadata ---------------------------------------------------------------------- */

/* A copy of `src` in one allocation, with its topics sorted and de-duplicated (a set, as
 * Kafka keeps them). NULL when out of memory. */
cmeta_t *kc_consumer_meta_new(const cmeta_t *src)
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
    int32_t np = src->classic && src->n_protocols > 0 ? src->n_protocols : 0;
    total += (size_t)np * sizeof(kc_classic_protocol_t);
    for (int32_t i = 0; i < np; i++)
        total += kc_text_space(src->protocols[i].name) +
                 (src->protocols[i].metadata.len > 0 ? (size_t)src->protocols[i].metadata.len : 0);
    cmeta_t *m = calloc(1, total);
    if (!m) {
        free(tmp);
        return NULL;
    }
    kc_classic_protocol_t *protos = (kc_classic_protocol_t *)(m + 1);
    kc_str_t *topics = (kc_str_t *)(protos + np);
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
    for (int32_t i = 0; i < np; i++) {
        const kc_classic_protocol_t *sp = &src->protocols[i];
        protos[i].name = kc_text_put(&cur, sp->name);
        int32_t len = sp->metadata.len > 0 ? sp->metadata.len : 0;
        if (len > 0)
            memcpy(cur, sp->metadata.p, (size_t)len);
        protos[i].metadata = (kc_bytes_t){(const uint8_t *)cur, len};
        cur += len;
    }
    m->protocols = np > 0 ? protos : NULL;
    m->n_protocols = np;
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
    return kc_consumer_meta_new(&d);
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

static bool protocols_eq(const cmeta_t *a, const cmeta_t *b)
{
    if (a->n_protocols != b->n_protocols)
        return false;
    for (int32_t i = 0; i < a->n_protocols; i++) {
        const kc_classic_protocol_t *x = &a->protocols[i], *y = &b->protocols[i];
        if (!kc_str_eq(x->name, y->name) || x->metadata.len != y->metadata.len ||
            (x->metadata.len > 0 && memcmp(x->metadata.p, y->metadata.p, (size_t)x->metadata.len)))
            return false;
    }
    return true;
}

static bool meta_eq(const cmeta_t *a, const cmeta_t *b)
{
    return kc_str_eq(a->instance_id, b->instance_id) && kc_str_eq(a->rack_id, b->rack_id) &&
           kc_str_eq(a->client_id, b->client_id) && kc_str_eq(a->client_host, b->client_host) &&
           kc_str_eq(a->regex, b->regex) && kc_str_eq(a->assignor, b->assignor) &&
           a->rebalance_timeout_ms == b->rebalance_timeout_ms && a->classic == b->classic &&
           a->classic_session_timeout_ms == b->classic_session_timeout_ms && topics_eq(a, b) &&
           protocols_eq(a, b);
}

bool kc_consumer_meta_has_topic(const cmeta_t *m, kc_str_t topic)
{
    return m->n_topics > 0 &&
           bsearch(&topic, m->topics, (size_t)m->n_topics, sizeof(kc_str_t), kc_text_qcmp) != NULL;
}

/* ---- Members, targets, groups ------------------------------------------------------------- */

kc_time_t kc_consumer_time(const kc_consumer_t *c)
{
    return (kc_time_t){c->now, c->wall};
}

void kc_consumer_set_time(kc_consumer_t *c, kc_time_t t)
{
    c->now = t.mono_ms;
    c->wall = t.wall_ms;
}

/* The heartbeat interval and session timeout of group `g`: its group configs, or the daemon's
 * settings (kc_manager_group_config), read at each use so a change applies at once. */
static int32_t hb_interval(const cgroup_t *g)
{
    kc_gm_group_config_t gc;
    kc_manager_group_config(g->c->gm, g->id, &gc);
    return gc.heartbeat_interval_ms;
}

static int32_t session_timeout(const cgroup_t *g)
{
    kc_gm_group_config_t gc;
    kc_manager_group_config(g->c->gm, g->id, &gc);
    return gc.session_timeout_ms;
}

static int32_t record_max(const kc_consumer_t *c)
{
    return c->cfg.record_max_bytes > 0 ? c->cfg.record_max_bytes : KC_GM_RECORD_MAX_BYTES_DEFAULT;
}

static int32_t max_size(const kc_consumer_t *c)
{
    return c->cfg.consumer_max_size > 0 ? c->cfg.consumer_max_size : INT32_MAX;
}

const char *kc_consumer_assignor_list(const char *assignors)
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
kc_str_t kc_consumer_list_at(const char *list, int i)
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

cgroup_t *kc_consumer_find_group(const kc_consumer_t *c, kc_str_t id)
{
    kc_ghead_t *h = kc_manager_find_kind(c->gm, id, KC_KIND_CONSUMER);
    return h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
}

cmember_t *kc_consumer_find_member(const cgroup_t *g, kc_str_t id)
{
    if (id.len < 0)
        return NULL;
    return kc_strmap_get(&g->by_id, id.p, (size_t)id.len);
}

cmember_t *kc_consumer_find_static(const cgroup_t *g, kc_str_t instance)
{
    if (instance.len < 0)
        return NULL;
    return kc_strmap_get(&g->by_instance, instance.p, (size_t)instance.len);
}

ctarget_t *kc_consumer_find_target(const cgroup_t *g, kc_str_t member_id)
{
    if (member_id.len < 0)
        return NULL;
    return kc_strmap_get(&g->targets, member_id.p, (size_t)member_id.len);
}

const asg_t *kc_consumer_target_of(const cgroup_t *g, kc_str_t member_id)
{
    const ctarget_t *t = kc_consumer_find_target(g, member_id);
    return t ? t->asg : NULL;
}

int kc_consumer_compute_state(const cgroup_t *g)
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
    int s = kc_consumer_compute_state(g);
    if (s == g->logged_state)
        return;
    /* Debug only: a completed rebalance logs one info line (kc_history_log). */
    KC_DEBUG("group", "consumer group %.*s: %s -> %s: %s", SV(g->id),
             kc_consumer_state_names[g->logged_state], kc_consumer_state_names[s], reason);
    g->logged_state = s;
}

/* End the group's running history entry with `outcome` and log its line. */
static void rb_finish(cgroup_t *g, const char *outcome)
{
    kc_history_entry_t *e = kc_history_current(&g->rb);
    if (!e)
        return;
    e = kc_history_end(&g->rb, kc_consumer_time(g->c), e->generation, outcome);
    kc_history_log(e, "consumer group", g->id);
}

/* After a change: the running rebalance is over once every member is at the assignment
 * epoch and Stable, or no member is left. */
static void rb_settle(cgroup_t *g)
{
    if (!g->rb.open)
        return;
    int s = kc_consumer_compute_state(g);
    if (s == CG_STABLE)
        rb_finish(g, "stable");
    else if (s == CG_EMPTY)
        rb_finish(g, "empty");
}

cmember_t *kc_consumer_member_alloc(kc_str_t id)
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
    m->classic_deadline = NEVER;
    kc_heap_node_init(&m->session_node);
    kc_heap_node_init(&m->rebalance_node);
    return m;
}

void kc_consumer_member_free(cmember_t *m)
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
    if (!c || !meta || !kc_text_set(meta->regex))
        return;
    if (take)
        kc_rx_cache_ref(c->rx, meta->regex.p, (size_t)meta->regex.len);
    else
        kc_rx_cache_unref(c->rx, meta->regex.p, (size_t)meta->regex.len);
}

ctarget_t *kc_consumer_target_alloc(kc_str_t member_id)
{
    ctarget_t *t = calloc(1, sizeof(*t) + kc_text_space(member_id));
    if (!t)
        return NULL;
    char *cur = (char *)(t + 1);
    t->member_id = kc_text_put(&cur, member_id);
    return t;
}

void kc_consumer_target_free(ctarget_t *t)
{
    if (t) {
        free(t->asg);
        free(t);
    }
}

void kc_consumer_rres_clear(cgroup_t *g)
{
    for (int32_t i = 0; i < g->n_rres; i++)
        free(g->rres[i]);
    free(g->rres);
    g->rres = NULL;
    g->n_rres = 0;
}

cgroup_t *kc_consumer_group_alloc(kc_consumer_t *c, kc_str_t id)
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
    g->assign_due = NEVER;
    return g;
}

/* Free a group that is in neither the map nor the heap. */
static void group_release(cgroup_t *g)
{
    if (g->job)
        kc_target_job_orphan(g->job); /* the host still finishes it; it then only frees itself */
    cmember_t *m = g->head;
    while (m) {
        cmember_t *next = m->next;
        regex_ref(g->c, m->meta, false);
        kc_consumer_member_free(m);
        m = next;
    }
    for (size_t i = 0; i < g->targets.cap; i++)
        kc_consumer_target_free(kc_strmap_slot(&g->targets, i));
    kc_strmap_free(&g->by_id);
    kc_strmap_free(&g->by_instance);
    kc_strmap_free(&g->targets);
    kc_heap_free(&g->sessions);
    kc_heap_free(&g->rebalances);
    kc_asg_holders_drop(&g->holders);
    kc_consumer_rres_clear(g);
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
    if (g->assign_due < t)
        t = g->assign_due;
    return t;
}

/* Renew a member's session: a later deadline leaves its heap entry where it is (moved when it
 * comes up), so a heartbeat costs O(1). The member is in the group, whose heaps have room. */
void kc_consumer_set_session(cgroup_t *g, cmember_t *m)
{
    /* A classic member's session is the one its JoinGroup asked for, as in Kafka. */
    int32_t t = m->meta->classic ? m->meta->classic_session_timeout_ms : session_timeout(g);
    m->last_hb_ms = g->c->now;
    m->session_deadline = g->c->now + t;
    kc_heap_arm(&g->sessions, &m->session_node, m->session_deadline);
    arm(g, m->session_deadline);
}

void kc_consumer_set_rebalance(cgroup_t *g, cmember_t *m)
{
    int32_t t = m->meta->rebalance_timeout_ms > 0 ? m->meta->rebalance_timeout_ms : 0;
    m->rebalance_deadline = g->c->now + t;
    m->rebalance_epoch = m->epoch;
    kc_heap_arm(&g->rebalances, &m->rebalance_node, m->rebalance_deadline);
    arm(g, m->rebalance_deadline);
}

void kc_consumer_set_classic_timer(cgroup_t *g, cmember_t *m, int kind, int32_t ms, bool if_absent)
{
    if (if_absent && m->classic_timer == kind && m->classic_deadline != NEVER)
        return;
    m->classic_timer = (int8_t)kind;
    m->classic_deadline = g->c->now + (ms > 0 ? ms : 0);
    kc_heap_arm(&g->sessions, &m->session_node, m->classic_deadline);
    arm(g, m->classic_deadline);
}

void kc_consumer_cancel_classic_timer(cmember_t *m, int kind)
{
    if (m->classic_timer == kind) {
        m->classic_timer = CT_NONE;
        m->classic_deadline = NEVER; /* its heap key is left early, moved when it comes up */
    }
}

/* Room in the group's timer heaps for one more member. 0, or -1 when out of memory. */
int kc_consumer_reserve_member_timers(cgroup_t *g)
{
    size_t n = (size_t)g->n_members + 1;
    if (kc_heap_reserve(&g->sessions, n) != 0)
        return -1;
    return kc_heap_reserve(&g->rebalances, n);
}

/* Room for one more group in the map and the heap. 0, or -1 when out of memory. */
int kc_consumer_reserve_group(kc_consumer_t *c)
{
    return kc_manager_reserve(c->gm);
}

/* ---- Records and the primitives that apply them ------------------------------------------- */

act_t *kc_consumer_plan_add(plan_t *p, int kind, kc_str_t member_id)
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
    kc_consumer_target_free(a->tslot);
    free(a->key);
    free(a->val);
    memset(a, 0, sizeof(*a));
}

void kc_consumer_plan_free(plan_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        act_free(&p->v[i]);
    free(p->v);
    kc_consumer_member_free(p->new_member);
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
void kc_consumer_act_encode(plan_t *p, act_t *a, kc_str_t gid, int64_t now)
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
            kc_classic_member_metadata_t cm;
            v.classic_member_metadata = NULL;
            if (m->classic) {
                cm.session_timeout_ms = m->classic_session_timeout_ms;
                cm.supported_protocols.v = (kc_classic_protocol_t *)m->protocols;
                cm.supported_protocols.n = m->n_protocols;
                v.classic_member_metadata = &cm;
            }
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

void kc_consumer_ap_group_epoch(cgroup_t *g, int32_t epoch, int64_t hash)
{
    g->epoch = epoch;
    g->metadata_hash = hash;
}

/* Kafka's ConsumerGroup.updateMember for the metadata part: `slot` is the member to add when
 * there is none with this id (consumed: set to NULL). Takes `meta`. */
cmember_t *kc_consumer_ap_member(cgroup_t *g, kc_str_t member_id, cmember_t **slot)
{
    cmember_t *m = kc_consumer_find_member(g, member_id);
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

void kc_consumer_ap_meta(cgroup_t *g, kc_str_t member_id, cmeta_t *meta, cmember_t **slot)
{
    cmember_t *m = kc_consumer_ap_member(g, member_id, slot);
    if (!m) {
        free(meta);
        return;
    }
    if (kc_text_set(m->meta->instance_id) && !kc_str_eq(m->meta->instance_id, meta->instance_id) &&
        kc_consumer_find_static(g, m->meta->instance_id) == m)
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

void kc_consumer_ap_meta_del(cgroup_t *g, kc_str_t member_id)
{
    cmember_t *m = kc_consumer_find_member(g, member_id);
    if (!m)
        return;
    if (m->epoch != LEAVE_EPOCH)
        KC_DEBUG("group", "consumer group %.*s: member %.*s removed at epoch %d", SV(g->id),
                 SV(m->id), (int)m->epoch);
    if (m->meta->instance_id.len >= 0 && kc_consumer_find_static(g, m->meta->instance_id) == m)
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
    kc_asg_holders_apply(&g->holders, m->assigned, -1);
    kc_asg_holders_apply(&g->holders, m->revoking, -1);
    kc_heap_remove(&g->sessions, &m->session_node);
    kc_heap_remove(&g->rebalances, &m->rebalance_node);
    regex_ref(g->c, m->meta, false);
    kc_consumer_member_free(m);
}

void kc_consumer_ap_current(cgroup_t *g, kc_str_t member_id, int32_t epoch, int32_t prev,
                            int8_t state, asg_t *assigned, asg_t *revoking, cmember_t **slot)
{
    cmember_t *m = kc_consumer_ap_member(g, member_id, slot);
    if (!m) {
        free(assigned);
        free(revoking);
        return;
    }
    m->epoch = epoch;
    m->prev_epoch = prev;
    m->state = state;
    kc_asg_holders_apply(&g->holders, m->assigned, -1);
    kc_asg_holders_apply(&g->holders, m->revoking, -1);
    kc_asg_holders_apply(&g->holders, assigned, 1);
    kc_asg_holders_apply(&g->holders, revoking, 1);
    free(m->assigned);
    free(m->revoking);
    m->assigned = assigned;
    m->revoking = revoking;
}

/* Kafka replays a current-assignment tombstone as epoch -1 with nothing assigned. */
void kc_consumer_ap_current_del(cgroup_t *g, kc_str_t member_id)
{
    cmember_t *m = kc_consumer_find_member(g, member_id);
    if (!m)
        return;
    m->epoch = LEAVE_EPOCH;
    m->prev_epoch = LEAVE_EPOCH;
    kc_asg_holders_apply(&g->holders, m->assigned, -1);
    kc_asg_holders_apply(&g->holders, m->revoking, -1);
    free(m->assigned);
    free(m->revoking);
    m->assigned = m->revoking = NULL;
}

void kc_consumer_ap_target(cgroup_t *g, kc_str_t member_id, asg_t *asg, ctarget_t **slot)
{
    ctarget_t *t = kc_consumer_find_target(g, member_id);
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

void kc_consumer_ap_target_del(cgroup_t *g, kc_str_t member_id)
{
    if (member_id.len < 0)
        return;
    kc_consumer_target_free(kc_strmap_del(&g->targets, member_id.p, (size_t)member_id.len));
}

void kc_consumer_ap_group_del(kc_consumer_t *c, cgroup_t *g)
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
    kc_history_begin(&g->rb, (&p->c->gm->stats), kc_consumer_time(p->c), cause, who, why);
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
void kc_consumer_commit(plan_t *p, const char *reason)
{
    kc_consumer_t *c = p->c;
    cgroup_t *g = p->g;
    rb_plan(p);
    if (p->delete_classic)
        kc_manager_classic_remove(c->gm, kc_consumer_time(c), g->id, true,
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
            kc_consumer_ap_group_epoch(g, a->epoch, a->hash);
            break;
        case A_GROUP_DEL:
            kc_consumer_ap_group_del(c, g);
            deleted = true;
            break;
        case A_PARTMETA_DEL:
            g->has_partition_metadata = false;
            break;
        case A_META:
            kc_consumer_ap_meta(g, a->member_id, a->meta, &p->new_member);
            a->meta = NULL;
            break;
        case A_META_DEL:
            kc_consumer_ap_meta_del(g, a->member_id);
            break;
        case A_TARGET_EPOCH:
            g->assignment_epoch = a->epoch;
            break;
        case A_TARGET_EPOCH_DEL:
            g->assignment_epoch = -1;
            break;
        case A_TARGET:
            kc_consumer_ap_target(g, a->member_id, a->asg, &a->tslot);
            a->asg = NULL;
            break;
        case A_TARGET_DEL:
            kc_consumer_ap_target_del(g, a->member_id);
            break;
        case A_CURRENT:
            kc_consumer_ap_current(g, a->member_id, a->epoch, a->prev_epoch, a->state, a->asg,
                                   a->asg2, &p->new_member);
            a->asg = a->asg2 = NULL;
            break;
        case A_CURRENT_DEL:
            kc_consumer_ap_current_del(g, a->member_id);
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
    kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_CURRENT_DEL, m->id), gid, now);
    kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_TARGET_DEL, m->id), gid, now);
    kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_META_DEL, m->id), gid, now);
}

/* Plan a ConsumerGroupMetadata record. */
static void plan_group_epoch(plan_t *p, int32_t epoch, int64_t hash, int64_t now)
{
    act_t *a = kc_consumer_plan_add(p, A_GROUP_EPOCH, KC_STR_NULL);
    if (a) {
        a->epoch = epoch;
        a->hash = hash;
    }
    kc_consumer_act_encode(p, a, p->g->id, now);
}

/* Plan a ConsumerGroupCurrentMemberAssignment record, taking `assigned` and `revoking`. */
static void plan_current(plan_t *p, kc_str_t member_id, int32_t epoch, int32_t prev, int8_t state,
                         asg_t *assigned, asg_t *revoking, int64_t now)
{
    act_t *a = kc_consumer_plan_add(p, A_CURRENT, member_id);
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
    kc_consumer_act_encode(p, a, p->g->id, now);
}

/* Plan a ConsumerGroupMemberMetadata record, taking `meta`. */
static void plan_meta(plan_t *p, kc_str_t member_id, cmeta_t *meta, int64_t now)
{
    if (!meta) {
        p->oom = true;
        return;
    }
    act_t *a = kc_consumer_plan_add(p, A_META, member_id);
    if (!a) {
        free(meta);
        return;
    }
    a->meta = meta;
    kc_consumer_act_encode(p, a, p->g->id, now);
    if (!p->oom && meta->instance_id.len >= 0 &&
        kc_strmap_reserve(&p->g->by_instance, ++p->new_instances) != 0)
        p->oom = true;
}

/* Plan a ConsumerGroupTargetAssignmentMember record, taking `asg`. */
void kc_consumer_plan_target(plan_t *p, kc_str_t member_id, asg_t *asg, int64_t now)
{
    act_t *a = kc_consumer_plan_add(p, A_TARGET, member_id);
    if (!a) {
        free(asg);
        return;
    }
    a->asg = asg;
    if (!kc_consumer_find_target(p->g, member_id)) {
        a->tslot = kc_consumer_target_alloc(member_id);
        if (!a->tslot || kc_strmap_reserve(&p->g->targets, ++p->new_targets) != 0)
            p->oom = true;
    }
    kc_consumer_act_encode(p, a, p->g->id, now);
}

/* ---- ConsumerGroupHeartbeat ---------------------------------------------------------------- */

/* Kafka's Uuid.randomUuid().toString(): 16 random bytes in URL-safe base64 without padding
 * (22 characters, never starting with '-'), from `a`. */
kc_str_t kc_consumer_random_member_id(kc_consumer_t *c, kc_arena_t *a)
{
    char *p = kc_arena_alloc(a, 23);
    if (!p)
        return KC_STR_NULL;
    do {
        kc_uuid_t u;
        uint64_t r1 = kc_manager_random(c->gm), r2 = kc_manager_random(c->gm);
        memcpy(u.b, &r1, 8);
        memcpy(u.b + 8, &r2, 8);
        u.b[6] = (uint8_t)((u.b[6] & 0x0f) | 0x40);
        u.b[8] = (uint8_t)((u.b[8] & 0x3f) | 0x80);
        kc_uuid_format(&u, p);
    } while (p[0] == '-');
    return (kc_str_t){p, 22};
}

int16_t kc_gm_consumer_heartbeat_check(const char *assignors, int16_t version,
                                       const kc_consumer_group_heartbeat_request_t *q,
                                       kc_arena_t *a, kc_str_t *message)
{
    const char *list = kc_consumer_assignor_list(assignors);
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
        *message = kc_consumer_msgf(a, "%s", why);
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
        *message =
            kc_consumer_msgf(a, "ServerAssignor %.*s is not supported. Supported assignors: %s.",
                             SV(q->server_assignor), supported);
        return KC_ERR_UNSUPPORTED_ASSIGNOR;
    }
    return 0;
}

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
        h->r->error_message = kc_consumer_msgf(h->a, "%s", buf);
    }
}

/* hb_fail with a message whose format names the group (one %.*s), a format chosen at run
 * time (the manager's refusal messages). */
static void hb_fail_v(hb_t *h, int16_t err, const char *fmt, kc_str_t gid)
{
    char buf[512];
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
    snprintf(buf, sizeof(buf), fmt, SV(gid));
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    hb_fail(h, err, "%s", buf);
}

/* A request refused for a reason its user must act on: logged at info once per group and
 * reason, not once per request. */
void kc_consumer_refused(kc_consumer_t *c, int kind, kc_str_t group_id, kc_str_t reason)
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

/* Kafka's throwIfRegularExpressionIsInvalid, with kcoord's bounds (regex.h): 0, or -1 with
 * the answer filled. */
static int check_regex(hb_t *h, kc_str_t gid, kc_str_t regex)
{
    char why[256];
    int rxrc = kc_rx_cache_check(h->c->rx, regex.p, (size_t)regex.len, why, sizeof(why));
    if (rxrc == KC_RX_OOM) {
        hb_oom(h);
        return -1;
    }
    if (rxrc == KC_RX_OK)
        return 0;
    /* A long pattern is shown cut, so that the reason fits the message. */
    int shown = regex.len > 200 ? 200 : (int)regex.len;
    const char *more = regex.len > 200 ? "..." : "";
    if (rxrc == KC_RX_FULL)
        hb_fail(h, KC_ERR_INVALID_REGULAR_EXPRESSION,
                "SubscribedTopicRegex `%.*s%s` cannot be used: %s.", shown, regex.p, more, why);
    else
        hb_fail(h, KC_ERR_INVALID_REGULAR_EXPRESSION,
                "SubscribedTopicRegex `%.*s%s` is not a valid regular expression: %s.", shown,
                regex.p, more, why);
    kc_consumer_refused(
        h->c, rxrc == KC_RX_FULL ? KC_GM_REFUSED_REGEX_LIMIT : KC_GM_REFUSED_REGEX_INVALID, gid,
        h->r->error_message);
    return -1;
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
    if (epoch < m->epoch &&
        (epoch != m->prev_epoch || !kc_reconcile_owned_subset(owned, m->assigned))) {
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
/* group.consumer.regex.refresh.interval.ms, its default for 0. */
static int64_t kc_consumer_regex_refresh_ms(const kc_consumer_t *c)
{
    return c->cfg.consumer_regex_refresh_interval_ms > 0 ? c->cfg.consumer_regex_refresh_interval_ms
                                                         : KC_GM_REGEX_REFRESH_MS_DEFAULT;
}

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
    if (!m || !kc_text_set(m->regex))
        return 0;
    for (int32_t i = 0; i < *n; i++)
        if (kc_str_eq(v[i]->regex, m->regex))
            return 0;
    const rres_t *old = kc_target_rres_cached(g, m->regex);
    /* Under an authorizer a resolution the group has for these topics stands until it is
     * refreshed, whoever heartbeats (Kafka resolves a group's regexes in one batch, with one
     * member's rights, and shares the result): only a regex without one is resolved now. A
     * step without a principal's filter (a classic member's JoinGroup) keeps what the group
     * has, however old (kc_target_rx_resolve gives nothing for a regex without one). */
    const kc_consumer_t *c = g->c;
    bool current = g->topics_version == tv->version && g->topics_version != 0 && !c->rx_fresh;
    if (old && c->cfg.consumer_regex_filtered && (!c->filter || current)) {
        rres_t *copy = kc_target_rres_dup(old);
        if (!copy)
            return -1;
        v[(*n)++] = copy;
        return 0;
    }
    bool oom = false;
    rres_t *r = kc_target_rx_resolve(g->c, tv, m->regex, &oom);
    if (!r)
        return -1;
    if (old && !kc_target_rres_eq(old, r))
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
        kc_asg_holders_apply(&g->holders, m->assigned, 1);
        kc_asg_holders_apply(&g->holders, m->revoking, 1);
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
    m.classic = h->cj != NULL;
    m.classic_session_timeout_ms = h->cj ? h->cj->session_timeout_ms : 0;
    m.protocols = h->cj ? h->cj->protocols : NULL;
    m.n_protocols = h->cj ? h->cj->n_protocols : 0;
    if (h->cj)
        m.regex = KC_STR_EMPTY; /* a classic member has no regular expression */
    return kc_consumer_meta_new(&m);
}

static void hb_state_free(hbs_t *s)
{
    kc_target_job_free(s->job);
    kc_target_job_free(s->ran);
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
    kc_consumer_plan_free(&s->p);
}

/* The group the heartbeat is for, created when it may be (Kafka's getOrMaybeCreateConsumerGroup; an
 * empty classic group of the id is converted by the kc_consumer_commit). */
static int hb_group(hb_t *h, hbs_t *s)
{
    /* The group (Kafka's getOrMaybeCreateConsumerGroup). */
    s->g = kc_consumer_find_group(s->c, s->gid);
    if (!s->g) {
        int kind = kc_manager_classic_kind(s->c->gm, s->gid);
        if (kind == KC_CLASSIC_NONE && !s->create) {
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Consumer group %.*s not found.", SV(s->gid));
            return -1;
        }
        if (kind == KC_CLASSIC_ACTIVE && s->create) {
            /* Kafka's validateOnlineUpgrade and convertToConsumerGroup (the manager's). Kafka
             * converts in the heartbeat's own write, so a heartbeat refused later leaves the
             * group classic: its one later refusal of a new member, an invalid regular
             * expression, is checked before converting. */
            const char *why = NULL;
            kc_str_t joining = s->q->member_id.len > 0 ? s->q->member_id : KC_STR_NULL;
            kc_str_t rx = h->version >= 1 ? s->q->subscribed_topic_regex : KC_STR_NULL;
            int16_t err = kc_manager_upgrade_check(s->c->gm, s->gid, &why);
            if (!err && kc_text_set(rx) && check_regex(h, s->gid, rx) != 0)
                return -1;
            if (!err)
                err = kc_manager_upgrade(s->c->gm, s->gid, joining, h->a, &why);
            if (err == KC_ERR_GROUP_ID_NOT_FOUND) {
                hb_fail_v(h, err, why, s->gid);
                kc_consumer_refused(s->c, KC_GM_REFUSED_PROTOCOL, s->gid, h->r->error_message);
                return -1;
            }
            if (err) {
                hb_oom(h);
                return -1;
            }
            s->g = kc_consumer_find_group(s->c, s->gid);
            s->p.g = s->g;
            return 0;
        }
        if (kind != KC_CLASSIC_NONE && !s->create) {
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Group %.*s is not a consumer group.",
                    SV(s->gid));
            return -1;
        }
        if (kc_consumer_reserve_group(s->c) != 0 ||
            !(s->g = kc_consumer_group_alloc(s->c, s->gid))) {
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
    bool known_static = h->cj && s->q->instance_id.len >= 0 &&
                        kc_consumer_find_static(s->g, s->q->instance_id) != NULL;
    if (!known_static && s->g->n_members >= max_size(s->c) &&
        (s->mid.len == 0 || !kc_consumer_find_member(s->g, s->mid))) {
        hb_fail(h, KC_ERR_GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of %d members.",
                (int)max_size(s->c));
        return -1;
    }
    if (s->mid.len == 0) { /* v0: the coordinator names the member */
        s->mid = kc_consumer_random_member_id(s->c, h->a);
        if (s->mid.len < 0) {
            hb_oom(h);
            return -1;
        }
    }

    /* The member (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember). */
    s->inst = s->q->instance_id;
    if (s->inst.len < 0) {
        s->old = kc_consumer_find_member(s->g, s->mid);
        if (!s->old && !s->create) {
            hb_fail(h, KC_ERR_UNKNOWN_MEMBER_ID, "Member %.*s is not a member of group %.*s.",
                    SV(s->mid), SV(s->gid));
            return -1;
        }
        if (s->old && !h->cj && check_epoch(h, s->old, s->q->member_epoch, &s->owned) != 0)
            return -1;
    } else {
        cmember_t *st = kc_consumer_find_static(s->g, s->inst);
        if (s->create) {
            if (!st) {
                s->old = kc_consumer_find_member(s->g, s->mid);
            } else if (!h->cj && st->epoch != STATIC_LEAVE_EPOCH && !st->meta->classic) {
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
            if (!h->cj && check_epoch(h, st, s->q->member_epoch, &s->owned) != 0)
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
        s->p.new_member = kc_consumer_member_alloc(s->mid);
        if (!s->p.new_member || kc_strmap_reserve(&s->g->by_id, 1) != 0 ||
            kc_consumer_reserve_member_timers(s->g) != 0) {
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
        plan_meta(&s->p, s->mview_id, kc_consumer_meta_new(s->gone->meta), s->now);
        kc_consumer_plan_target(&s->p, s->mview_id,
                                kc_asg_dup(kc_consumer_target_of(s->g, s->gone->id), &oom), s->now);
        plan_current(&s->p, s->mview_id, 0, 0, s->gone->state, kc_asg_dup(s->gone->assigned, &oom),
                     kc_asg_dup(s->gone->revoking, &oom), s->now);
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
        if (s->regex_changed && kc_text_set(s->upd->regex) &&
            regex_users(s->g, s->upd->regex) == 0 && check_regex(h, s->gid, s->upd->regex) != 0)
            return -1;
        cmeta_t *copy = kc_consumer_meta_new(s->upd);
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
    kc_target_topics_of(s->c, &s->tv);
    bool expired = s->g->topics_version == 0 || s->g->topics_version != s->tv.version;
    /* Kafka's periodic refresh (group.consumer.regex.refresh.interval.ms): under an authorizer
     * the resolutions also depend on ACLs, which change no topic, so they are made again with
     * this member's rights when they are that old. Without one the topics version says it
     * all. */
    if (!expired && s->c->filter && s->g->n_rres > 0 &&
        s->c->now - s->g->rx_refreshed >= kc_consumer_regex_refresh_ms(s->c)) {
        expired = true;
        s->c->rx_fresh = true; /* the cached resolutions are not to be used any more */
    }
    s->group_epoch = s->g->epoch;
    if (s->bump || expired) {
        strv_t subs = {0};
        keep_t keep = {0};
        kc_target_group_subs(s->g, &s->tv, s->old, s->gone, s->upd, &subs, &keep);
        int64_t hash = kc_target_metadata_hash(&s->tv, &subs);
        bool oom = subs.oom;
        kc_target_strv_free(&subs);
        kc_target_keep_free(&keep);
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
            kc_consumer_act_encode(&s->p, kc_consumer_plan_add(&s->p, A_PARTMETA_DEL, KC_STR_NULL),
                                   s->gid, s->now);
    }
    return 0;
}

/* 2. The target assignment, when the group epoch is ahead of it. */
static int hb_target(hb_t *h, hbs_t *s)
{
    /* 2. The target assignment, when the group epoch is ahead of it. */
    s->target_epoch = s->g->assignment_epoch;
    if (s->group_epoch > s->g->assignment_epoch && !s->g->job &&
        kc_target_defer(s->g, s->group_epoch)) {
        /* KIP-1263: the last assignment is too recent; the group's timer computes this one
         * when its interval is over, and the member reconciles towards its current target
         * meanwhile. */
    } else if (s->group_epoch > s->g->assignment_epoch && !s->g->job) {
        s->job =
            kc_target_job_build(s->g, &s->tv, s->group_epoch, s->mview_id, s->upd, s->old, s->gone);
        if (!s->job) {
            hb_oom(h);
            return -1;
        }
    }
    if (s->job && !kc_target_job_offload_wanted(s->c, s->g, s->job)) {
        /* Small enough to compute now: the member gets its new target in this answer. */
        int16_t err = 0;
        kc_gm_job_run(s->job);
        kc_target_job_count(s->c, s->job);
        s->my_target = kc_target_job_plan(&s->p, s->job, false, s->mview_id, s->now, &err);
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
        /* Computed off the loop (job, started after the kc_consumer_commit, or one already
         * running): the member reconciles towards the group's current target meanwhile, as in Kafka
         * with group.consumer.assignor.offload.enable. */
        s->target = kc_consumer_find_target(s->g, s->mview_id)
                        ? kc_consumer_target_of(s->g, s->mview_id)
                    : s->gone ? kc_consumer_target_of(s->g, s->gone->id)
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
        kc_target_member_topic_ids(s->g, &s->tv, s->upd, &s->sub_ids, &s->n_sub_ids) != 0) {
        hb_oom(h);
        return -1;
    }
    rin_t in = {&s->cur,        s->sub_ids, s->n_sub_ids, s->target_epoch, s->target,
                &s->g->holders, s->old,     s->gone,      &s->owned,       s->sub_changed};
    kc_reconcile(&in, &s->rc);
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
        s->resp_copy = kc_asg_dup(s->rc.assigned, &oom);
        s->final_epoch = s->rc.epoch;
        s->final_state = s->rc.state;
        plan_current(&s->p, s->mview_id, s->rc.epoch, s->rc.prev_epoch, s->rc.state, s->rc.assigned,
                     s->rc.revoking, s->now);
        s->rc.assigned = s->rc.revoking = NULL;
        KC_DEBUG("group", "consumer group %.*s: member %.*s now at epoch %d in state %s",
                 SV(s->gid), SV(s->mid), (int)s->final_epoch,
                 kc_consumer_member_state_name(s->final_state));
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

/* The record-size check, the answer, the kc_consumer_commit and the soft state. */
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
        kc_consumer_refused(s->c, KC_GM_REFUSED_RECORD_SIZE, s->gid, h->r->error_message);
        return -1;
    }

    /* The answer (from the arena) before the kc_consumer_commit, which may free `cur`'s assignment.
     */
    kc_consumer_group_heartbeat_response_t *r = h->r;
    bool full = s->q->rebalance_timeout_ms != -1 &&
                (s->q->subscribed_topic_names.n >= 0 || s->q->subscribed_topic_regex.len >= 0) &&
                s->q->topic_partitions.n >= 0;
    bool oom = false;
    r->member_id = kc_text_arena(h->a, s->mid, &oom);
    r->member_epoch = s->final_epoch;
    r->heartbeat_interval_ms = hb_interval(s->g);
    if (s->q->member_epoch == 0 || full || !kc_asg_eq(s->final_assigned, s->cur.assigned)) {
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
    kc_consumer_commit(&s->p, reason);
    if (s->job) {
        kc_target_job_start(s->g, s->job, true);
        s->job = NULL;
    }

    /* Soft state: timers and the metadata check. */
    cmember_t *m = kc_consumer_find_member(s->g, s->mview_id);
    if (m) {
        kc_consumer_set_session(s->g, m);
        if (s->rc.changed) {
            if (m->state == MS_UNREVOKED)
                kc_consumer_set_rebalance(s->g, m);
            else
                m->rebalance_deadline = NEVER;
        }
    }
    if (s->new_rres) {
        /* Whether every regex was resolved anew (add_regex copies the ones still current
         * under a filter): the start of the refresh interval. Without a filter under an
         * authorizer nothing was resolved: the topics stay to be looked at. */
        bool filtered = s->c->cfg.consumer_regex_filtered;
        bool all_new = !filtered || (s->c->filter && (s->c->rx_fresh || s->g->topics_version == 0 ||
                                                      s->g->topics_version != s->tv.version));
        kc_consumer_rres_clear(s->g);
        s->g->rres = s->new_rres;
        s->g->n_rres = s->n_new_rres;
        s->new_rres = NULL;
        if (!filtered || s->c->filter)
            s->g->topics_version = s->tv.version;
        if (all_new)
            s->g->rx_refreshed = s->c->now;
    }
    return 0;
}

void kc_consumer_run_heartbeat(hb_t *h)
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
    /* A classic JoinGroup creates a dynamic member (Kafka's getOrMaybeCreateMember), and a
     * static one only without a member id. */
    s.create = h->cj ? h->q->instance_id.len < 0 || h->cj->unknown_member : h->q->member_epoch == 0;
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
int kc_consumer_fence(kc_consumer_t *c, cgroup_t *g, cmember_t **ms, size_t n, const char *reason,
                      int cause)
{
    if (n == 0)
        return 0;
    /* Kafka's consumerGroupFenceMembers: when only classic members remain, the group may
     * become a classic group instead. */
    int down = kc_consumer_maybe_downgrade(c, g, ms, n, reason);
    if (down != 0)
        return down;
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
    kc_target_topics_of(c, &tv);
    strv_t subs = {0};
    keep_t keep = {0};
    for (const cmember_t *m = g->head; m; m = m->next) {
        bool fenced = false;
        for (size_t i = 0; i < n && !fenced; i++)
            fenced = ms[i] == m;
        if (!fenced)
            kc_target_member_subs(g, &tv, m->meta, &subs, &keep);
    }
    kc_target_strv_sort_unique(&subs);
    int64_t hash = kc_target_metadata_hash(&tv, &subs);
    if (subs.oom)
        p.oom = true;
    kc_target_strv_free(&subs);
    kc_target_keep_free(&keep);
    plan_group_epoch(&p, g->epoch + 1, hash, now);
    if (p.oom) {
        KC_ERROR("group", "consumer group %.*s: out of memory fencing members", SV(g->id));
        kc_consumer_plan_free(&p);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        KC_DEBUG("group", "consumer group %.*s: member %.*s fenced: %s", SV(g->id), SV(ms[i]->id),
                 reason);
    KC_DEBUG("group", "consumer group %.*s: group epoch %d (metadata hash %lld)", SV(g->id),
             (int)g->epoch + 1, (long long)hash);
    kc_consumer_commit(&p, reason);
    kc_consumer_plan_free(&p);
    return 0;
}

/* Kafka's consumerGroupLeave, for member epoch -1 or -2. */
static void do_leave(hb_t *h)
{
    kc_consumer_t *c = h->c;
    const kc_consumer_group_heartbeat_request_t *q = h->q;
    kc_str_t gid = q->group_id, mid = q->member_id, inst = q->instance_id;
    cgroup_t *g = kc_consumer_find_group(c, gid);
    if (!g) {
        if (kc_manager_classic_kind(c->gm, gid) != KC_CLASSIC_NONE)
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Group %.*s is not a consumer group.", SV(gid));
        else
            hb_fail(h, KC_ERR_GROUP_ID_NOT_FOUND, "Group %.*s not found.", SV(gid));
        return;
    }
    cmember_t *m;
    if (inst.len < 0) {
        m = kc_consumer_find_member(g, mid);
        if (!m) {
            hb_fail(h, KC_ERR_UNKNOWN_MEMBER_ID, "Member %.*s is not a member of group %.*s.",
                    SV(mid), SV(gid));
            return;
        }
    } else {
        m = kc_consumer_find_static(g, inst);
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
                     kc_asg_dup(m->assigned, &oom), NULL, c->wall);
        if (oom || p.oom) {
            kc_consumer_plan_free(&p);
            hb_oom(h);
            return;
        }
        KC_DEBUG("group",
                 "consumer group %.*s: static member %.*s with instance id %.*s left temporarily",
                 SV(gid), SV(m->id), SV(inst));
        kc_consumer_commit(&p, "a static member left temporarily");
        kc_consumer_plan_free(&p);
        m->rebalance_deadline = NEVER;
        return;
    }
    KC_DEBUG("group", "consumer group %.*s: member %.*s leaves", SV(gid), SV(m->id));
    if (kc_consumer_fence(c, g, &m, 1, "the member left the group", KC_RB_MEMBER_LEFT) < 0)
        hb_oom(h);
}

/* Kafka's createGroupTombstoneRecords: the order matters (current assignments, target
 * assignments, the target epoch, member metadata, partition metadata, the group epoch). */
void kc_consumer_plan_delete(plan_t *p, int64_t now)
{
    cgroup_t *g = p->g;
    for (const cmember_t *m = g->head; m; m = m->next)
        kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_CURRENT_DEL, m->id), g->id, now);
    for (const cmember_t *m = g->head; m; m = m->next)
        kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_TARGET_DEL, m->id), g->id, now);
    kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_TARGET_EPOCH_DEL, KC_STR_NULL), g->id, now);
    for (const cmember_t *m = g->head; m; m = m->next)
        kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_META_DEL, m->id), g->id, now);
    kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_PARTMETA_DEL, KC_STR_NULL), g->id, now);
    kc_consumer_act_encode(p, kc_consumer_plan_add(p, A_GROUP_DEL, KC_STR_NULL), g->id, now);
}

int16_t kc_consumer_delete(kc_consumer_t *c, kc_time_t now, kc_str_t id, const char *reason)
{
    kc_consumer_set_time(c, now);
    cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    if (g->n_members > 0)
        return KC_ERR_NON_EMPTY_GROUP;
    plan_t p = {.c = c, .g = g};
    kc_consumer_plan_delete(&p, c->wall);
    if (p.oom) {
        kc_consumer_plan_free(&p);
        KC_ERROR("group", "consumer group %.*s: out of memory deleting it", SV(id));
        return KC_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    KC_INFO("group", "consumer group %.*s: Empty -> Dead: %s", SV(id), reason);
    kc_consumer_commit(&p, reason);
    kc_consumer_plan_free(&p);
    return 0;
}

void kc_consumer_drop(kc_consumer_t *c, kc_str_t id)
{
    cgroup_t *g = kc_consumer_find_group(c, id);
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
/* When a member's entry in the session heap is due: its session, or a classic member's join
 * or sync timeout when that comes first. */
static int64_t session_due(const cmember_t *m)
{
    return m->classic_deadline < m->session_deadline ? m->classic_deadline : m->session_deadline;
}

static cmember_t *due_member(cgroup_t *g, bool session, int64_t *budget)
{
    kc_consumer_t *c = g->c;
    kc_heap_t *h = session ? &g->sessions : &g->rebalances;
    kc_heap_node_t *top;
    while ((top = kc_heap_top(h)) != NULL && top->key <= c->now) {
        cmember_t *m = session ? kc_heap_entry(top, cmember_t, session_node)
                               : kc_heap_entry(top, cmember_t, rebalance_node);
        int64_t d = session ? session_due(m) : m->rebalance_deadline;
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

/* Fire the group's due timers, earliest first, while the tick's budget lasts; each is found
 * in O(log n) through the group's heaps. */
static bool run_group_timers(cgroup_t *g, int64_t *budget)
{
    kc_consumer_t *c = g->c;
    kc_gm_stats_t *st = (&c->gm->stats);
    cmember_t *batch[FENCE_BATCH];
    while (*budget > 0) {
        cmember_t *sm = due_member(g, true, budget);
        cmember_t *rm = *budget > 0 ? due_member(g, false, budget) : NULL;
        if (*budget <= 0)
            return false;
        size_t n = 0;
        char reason[160];
        bool session;
        if (sm && (!rm || session_due(sm) <= rm->rebalance_deadline)) {
            /* This member's session ended first; so did every other one due by now. A classic
             * member's join or sync timeout fences it the same way (Kafka's reasons). */
            session = true;
            snprintf(reason, sizeof(reason), "%s",
                     sm->classic_deadline > sm->session_deadline ? "the member session expired"
                     : sm->classic_timer == CT_JOIN
                         ? "the classic member failed to join within the rebalance timeout"
                         : "the member failed to sync within timeout");
            for (cmember_t *m = sm; m && *budget > 0 && n < FENCE_BATCH;
                 m = due_member(g, true, budget)) {
                (*budget)--;
                st->timers_examined++;
                m->session_deadline = NEVER;
                m->classic_deadline = NEVER;
                m->classic_timer = CT_NONE;
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
            return false;
        }
        st->timers_fired += n;
        int rc = kc_consumer_fence(c, g, batch, n, reason,
                                   session ? KC_RB_SESSION_TIMEOUT : KC_RB_SYNC_TIMEOUT);
        if (rc == 1)
            return true; /* downgraded to a classic group: g is gone */
        if (rc != 0) {
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
            return false;
        }
    }
    return false;
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
                           kc_str_t client_host, const kc_gm_topic_filter_t *filter, kc_arena_t *a,
                           kc_consumer_group_heartbeat_response_t *resp)
{
    kc_consumer_set_time(c, now);
    kc_consumer_group_heartbeat_response_init(resp);
    kc_str_t msg;
    int16_t err = kc_gm_consumer_heartbeat_check(c->assignors, version, req, a, &msg);
    if (err) {
        resp->error_code = err;
        resp->error_message = msg;
        return;
    }
    hb_t h = {c, version, req, client_id, client_host, a, resp, NULL};
    c->filter = c->cfg.consumer_regex_filtered ? filter : NULL;
    c->rx_fresh = false;
    if (req->member_epoch == LEAVE_EPOCH || req->member_epoch == STATIC_LEAVE_EPOCH)
        do_leave(&h);
    else
        kc_consumer_run_heartbeat(&h);
    c->filter = NULL;
    c->rx_fresh = false;
}

/* ---- For the manager (consumer.h) ---------------------------------------------------------- */

int64_t kc_consumer_timers(kc_consumer_t *c, kc_ghead_t *h, kc_time_t now, int64_t *budget)
{
    kc_consumer_set_time(c, now);
    cgroup_t *g = kc_heap_entry(h, cgroup_t, gh);
    if (g->assign_due <= c->now && *budget > 0) {
        (*budget)--;
        kc_target_deferred_due(g);
    }
    if (run_group_timers(g, budget))
        return KC_GROUP_GONE;
    return group_earliest(g);
}

void kc_consumer_destroy(kc_consumer_t *c, kc_ghead_t *h)
{
    cgroup_t *g = kc_heap_entry(h, cgroup_t, gh);
    kc_manager_del(c->gm, &g->gh, g->id);
    group_release(g);
}
