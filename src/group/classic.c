/* classic.c - Kafka's classic group protocol for the groups of one __consumer_offsets partition.
 *
 * This is the state machine of Kafka 4.x's classic groups (GroupMetadataManager.classicGroup*,
 * ClassicGroup, ClassicGroupMember), written for an event loop: every entry point takes the
 * time, nothing reads a clock, and everything a request waits for (a parked JoinGroup until
 * the join phase completes, a parked SyncGroup until the leader's assignment arrives) is
 * answered later through the host's callbacks.
 *
 * States: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead. Every transition goes
 * through set_state(), which checks Kafka's table of valid previous states and logs
 * "group G: Old -> New: reason". A group is Dead only on its way out of the map.
 *
 * Waiters: a member parked in JoinGroup or SyncGroup holds a waiter_t (the host's pointer and
 * the number of the request that parked it). finish_join(rq)/finish_sync(rq) complete it: when
 * the waiter belongs to the request being handled right now, the answer is copied into that
 * request's response (from its arena) and the entry point returns KC_GM_ANSWERED; otherwise
 * the host's join_done/sync_done is called. A waiter is answered exactly once: a member that
 * is removed, fenced, or re-sends its request while parked gets its old waiter answered
 * first (Kafka's KAFKA-20938: NOT_COORDINATOR for a superseded request).
 *
 * Timers: each group keeps its own deadlines, all monotonic (the join-phase timer with Kafka's
 * initial rebalance delay, the sync-phase timer, each member's session or new-member join
 * timeout in the group's member heap, each KIP-394 pending member's session timeout in its
 * pending heap). The manager keeps a binary min-heap of groups keyed by a deadline that may be
 * earlier than the group's real earliest one: a heartbeat that pushes a member's deadline later
 * touches no heap, and the member's entry is moved when it comes up. kc_gm_tick pops the due
 * groups, fires their due timers in deadline order, each found in O(log n), at most
 * tick_budget of them per call, and puts each group back with its next deadline.
 *
 * Records: the GroupMetadata records Kafka writes, at Kafka's moments: the "empty" record of
 * a group created by JoinGroup, the record of a leader's SyncGroup (with every assignment),
 * the record of a static member replaced in a Stable group without a rebalance, the record of
 * a group whose join phase ends with no members (it becomes Empty), and a tombstone when a
 * group is deleted.
 *
 * Loading: kc_gm_replay reads those records back, as Kafka's GroupMetadataManager.replay does:
 * each GroupMetadata value replaces the group with a new one built from it (Stable with
 * members, Empty without), a tombstone removes it. Nothing is armed or answered while loading;
 * kc_gm_load_complete (Kafka's onLoaded) then gives every loaded member a fresh session, so the
 * group carries on in its generation without a rebalance.
 *
 * Rebalance history (group.h, the ring in history.h): the event that starts a rebalance calls
 * rb_start() with its cause just before it changes the group, so that the entry is open when
 * group_add()/group_remove(rq) note who joined and who dropped out; prepare_rebalance(rq) keeps
 * that entry (or opens an "other" one for a rebalance nobody named), init_next_generation()
 * stamps the generation, and the entry ends (one info line) when the group is Stable, Empty,
 * or restarted from CompletingRebalance. set_state() feeds the join and sync phase
 * histograms. Per-request events are logged at debug level only.
 *
 * Memory: a group owns copies of everything it keeps. Request paths allocate everything they
 * need before changing any state, so running out of memory answers the request with
 * COORDINATOR_NOT_AVAILABLE and leaves the group as it was.
 *
 * Files: this file is the state machine and its requests (JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup); classic_load.c replays records, classic_admin.c answers offsets, admin and
 * introspection; classic_group.h holds the data they share. The manager (manager.c) routes
 * requests here and owns the groups' map and heap; a classic request that meets a consumer
 * group asks the manager's conversions (manager.h). A JoinGroup or SyncGroup carries a req_t
 * (classic_group.h) down every path that may answer or park it.
 *
 * Extending: new request handling belongs in a do_*() function that validates first, then
 * mutates through the helpers below (group_add, group_remove, update_member, prepare_rebalance,
 * complete_join_phase) so that counters, timers and waiters stay consistent.
 */

#include "group/classic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/classic_group.h"

/* ---- Data ------------------------------------------------------------------------------ */

/* The manager's time as one value, for what takes both readings. */
static kc_time_t gm_time(const kc_gm_t *gm)
{
    return (kc_time_t){gm->now, gm->wall};
}

void kc_classic_set_time(kc_gm_t *gm, kc_time_t t)
{
    gm->now = t.mono_ms;
    gm->wall = t.wall_ms;
}

static const char *const state_names[] = {"Empty", "PreparingRebalance", "CompletingRebalance",
                                          "Stable", "Dead"};

const char *kc_group_state_name(kc_group_state_t s)
{
    if ((unsigned)s > KC_GROUP_DEAD)
        return "Unknown";
    return state_names[s];
}

/* ---- Small helpers ---------------------------------------------------------------------- */

kc_str_t kc_classic_ptype_view(const group_t *g)
{
    return g->ptype ? (kc_str_t){g->ptype, g->ptype_len} : KC_STR_NULL;
}

kc_str_t kc_classic_pname_view(const group_t *g)
{
    return g->pname_len >= 0 ? (kc_str_t){g->pname, g->pname_len} : KC_STR_NULL;
}

bool kc_classic_uses_consumer_protocol(const group_t *g)
{
    return g->ptype && kc_str_eq(kc_classic_ptype_view(g), KC_STR_LIT("consumer"));
}

kc_bytes_t kc_classic_arena_bytes(kc_arena_t *a, kc_bytes_t b, bool *oom)
{
    if (b.len < 0)
        return KC_BYTES_NULL;
    uint8_t *p = kc_arena_alloc(a, (size_t)b.len + 1);
    if (!p) {
        *oom = true;
        return (kc_bytes_t){(const uint8_t *)"", 0};
    }
    if (b.len)
        memcpy(p, b.p, (size_t)b.len);
    return (kc_bytes_t){p, b.len};
}

/* ---- Protocols -------------------------------------------------------------------------- */

static protoset_t *protoset_new(const kc_join_group_request_t *req)
{
    int32_t n = req->protocols.n > 0 ? req->protocols.n : 0;
    size_t total = sizeof(protoset_t) + (size_t)n * sizeof(kc_join_group_request_protocol_t);
    for (int32_t i = 0; i < n; i++) {
        const kc_join_group_request_protocol_t *p = &req->protocols.v[i];
        total += (p->name.len > 0 ? (size_t)p->name.len : 0) + 1;
        total += p->metadata.len > 0 ? (size_t)p->metadata.len : 0;
    }
    protoset_t *ps = malloc(total);
    if (!ps)
        return NULL;
    ps->refs = 1;
    ps->n = n;
    char *cur = (char *)&ps->v[n];
    for (int32_t i = 0; i < n; i++) {
        const kc_join_group_request_protocol_t *p = &req->protocols.v[i];
        kc_str_t name = p->name.len > 0 ? p->name : KC_STR_EMPTY;
        ps->v[i].name = kc_text_put(&cur, name);
        int32_t ml = p->metadata.len > 0 ? p->metadata.len : 0;
        if (ml)
            memcpy(cur, p->metadata.p, (size_t)ml);
        ps->v[i].metadata = (kc_bytes_t){(const uint8_t *)cur, ml};
        cur += ml;
    }
    return ps;
}

/* The protocol set of a member read back from a GroupMetadata record: the record keeps only
 * the metadata of the group's selected protocol, so that is all the member supports. */
protoset_t *kc_classic_protoset_one(kc_str_t name, kc_bytes_t metadata)
{
    kc_join_group_request_protocol_t p = {name, metadata};
    kc_join_group_request_t req;
    memset(&req, 0, sizeof(req));
    req.protocols.v = &p;
    req.protocols.n = 1;
    return protoset_new(&req);
}

protoset_t *kc_classic_protoset_from(const kc_join_group_request_protocol_t *v, int32_t n)
{
    kc_join_group_request_t req;
    memset(&req, 0, sizeof(req));
    req.protocols.v = (kc_join_group_request_protocol_t *)v;
    req.protocols.n = n;
    return protoset_new(&req);
}

static int32_t protoset_find(const protoset_t *ps, kc_str_t name)
{
    for (int32_t i = 0; ps && i < ps->n; i++)
        if (kc_str_eq(ps->v[i].name, name))
            return i;
    return -1;
}

void kc_classic_protoset_unref(protoset_t *ps)
{
    if (ps && --ps->refs == 0)
        free(ps);
}

static bool bytes_eq(kc_bytes_t a, kc_bytes_t b)
{
    int32_t la = a.len > 0 ? a.len : 0, lb = b.len > 0 ? b.len : 0;
    return la == lb && (la == 0 || memcmp(a.p, b.p, (size_t)la) == 0);
}

/* Kafka's ClassicGroupMember.matches: the same protocols, names and metadata, in order. */
static bool protoset_matches(const protoset_t *ps, const kc_join_group_request_t *req)
{
    int32_t n = req->protocols.n > 0 ? req->protocols.n : 0;
    if (ps->n != n)
        return false;
    for (int32_t i = 0; i < n; i++) {
        kc_str_t name = req->protocols.v[i].name.len > 0 ? req->protocols.v[i].name : KC_STR_EMPTY;
        if (!kc_str_eq(ps->v[i].name, name) ||
            !bytes_eq(ps->v[i].metadata, req->protocols.v[i].metadata))
            return false;
    }
    return true;
}

/* The protocols of `req` for a member of `g`: the set of the group's newest or oldest member
 * when it sent the same ones (the members of a group nearly always do), else a new one. NULL
 * when out of memory. */
static protoset_t *protoset_get(const group_t *g, const kc_join_group_request_t *req)
{
    const member_t *near[2] = {g->tail, g->head};
    for (int i = 0; i < 2; i++)
        if (near[i] && near[i]->protos && protoset_matches(near[i]->protos, req)) {
            near[i]->protos->refs++;
            return near[i]->protos;
        }
    return protoset_new(req);
}

/* The metadata a member gave for `name` (empty when it gave none). */
kc_bytes_t kc_classic_member_metadata(const member_t *m, kc_str_t name)
{
    int32_t i = protoset_find(m->protos, name);
    return i >= 0 ? m->protos->v[i].metadata : (kc_bytes_t){(const uint8_t *)"", 0};
}

static pcount_t *pc_find(group_t *g, kc_str_t name)
{
    for (int32_t i = 0; i < g->n_pc; i++)
        if (g->pc[i].len == name.len && memcmp(g->pc[i].name, name.p, (size_t)name.len) == 0)
            return &g->pc[i];
    return NULL;
}

static int32_t pc_count(group_t *g, kc_str_t name)
{
    pcount_t *p = pc_find(g, name);
    return p ? p->count : 0;
}

/* Make sure every protocol of `ps` has a counter, so that pc_add(+1) cannot fail. */
int kc_classic_pc_reserve(group_t *g, const protoset_t *ps)
{
    for (int32_t i = 0; i < ps->n; i++) {
        if (pc_find(g, ps->v[i].name))
            continue;
        if (g->n_pc == g->cap_pc) {
            int32_t cap = g->cap_pc ? g->cap_pc * 2 : 4;
            pcount_t *pc = realloc(g->pc, (size_t)cap * sizeof(*pc));
            if (!pc)
                return -1;
            g->pc = pc;
            g->cap_pc = cap;
        }
        char *name = malloc((size_t)ps->v[i].name.len + 1);
        if (!name)
            return -1;
        memcpy(name, ps->v[i].name.p, (size_t)ps->v[i].name.len + 1);
        g->pc[g->n_pc++] = (pcount_t){name, ps->v[i].name.len, 0};
    }
    return 0;
}

/* Count a member's protocols in or out (each distinct name once). Never allocates when the
 * counters were reserved. */
static void pc_add(group_t *g, const protoset_t *ps, int delta)
{
    for (int32_t i = 0; ps && i < ps->n; i++) {
        if (protoset_find(ps, ps->v[i].name) != i)
            continue; /* a duplicate name counts once */
        pcount_t *p = pc_find(g, ps->v[i].name);
        if (!p)
            continue;
        p->count += delta;
        if (p->count <= 0 && delta < 0) {
            free(p->name);
            *p = g->pc[--g->n_pc];
        }
    }
}

/* Make room for the selected protocol name so that init_next_generation cannot fail. */
static int pname_reserve(group_t *g, const protoset_t *ps)
{
    size_t need = 1;
    for (int32_t i = 0; i < ps->n; i++)
        if ((size_t)ps->v[i].name.len + 1 > need)
            need = (size_t)ps->v[i].name.len + 1;
    if (need <= g->pname_cap)
        return 0;
    char *p = realloc(g->pname, need);
    if (!p)
        return -1;
    g->pname = p;
    g->pname_cap = need;
    return 0;
}

/* Kafka's ClassicGroup.supportsProtocols. */
static bool supports_protocols(group_t *g, kc_str_t ptype, const kc_join_group_request_t *req)
{
    int32_t n = req->protocols.n > 0 ? req->protocols.n : 0;
    if (g->state == KC_GROUP_EMPTY)
        return kc_text_set(ptype) && n > 0;
    if (!g->ptype || !kc_str_eq(kc_classic_ptype_view(g), ptype.len < 0 ? KC_STR_EMPTY : ptype))
        return false;
    for (int32_t i = 0; i < n; i++) {
        kc_str_t name = req->protocols.v[i].name.len > 0 ? req->protocols.v[i].name : KC_STR_EMPTY;
        if (pc_count(g, name) == g->n_members)
            return true;
    }
    return false;
}

/* Kafka's ClassicGroup.selectProtocol: the protocols every member supports are candidates;
 * each member votes for the first candidate in its own order; most votes wins. Kafka breaks
 * ties by HashMap order; here the tie goes to the oldest member's preference. */
static kc_str_t select_protocol(group_t *g)
{
    member_t *first = g->head;
    if (!first)
        return KC_STR_NULL;
    const protoset_t *ps = first->protos;
    int32_t best = -1, best_votes = -1;
    for (int32_t i = 0; i < ps->n; i++) {
        kc_str_t cand = ps->v[i].name;
        if (protoset_find(ps, cand) != i || pc_count(g, cand) != g->n_members)
            continue;
        int32_t votes = 0;
        for (member_t *m = g->head; m; m = m->next) {
            for (int32_t j = 0; j < m->protos->n; j++) {
                kc_str_t name = m->protos->v[j].name;
                if (pc_count(g, name) == g->n_members) {
                    if (kc_str_eq(name, cand))
                        votes++;
                    break;
                }
            }
        }
        if (votes > best_votes) {
            best = i;
            best_votes = votes;
        }
    }
    if (best < 0) /* no common protocol: cannot happen when joins were checked */
        return ps->n > 0 ? ps->v[0].name : KC_STR_NULL;
    return ps->v[best].name;
}

kc_str_t kc_classic_select_protocol(group_t *g)
{
    return select_protocol(g);
}

/* ---- Members ---------------------------------------------------------------------------- */

member_t *kc_classic_member_new(kc_str_t id, kc_str_t instance, kc_str_t client_id, kc_str_t host)
{
    size_t total = sizeof(member_t) + kc_text_space(id) + kc_text_space(instance) +
                   kc_text_space(client_id) + kc_text_space(host);
    member_t *m = calloc(1, total);
    if (!m)
        return NULL;
    char *cur = (char *)(m + 1);
    m->id = kc_text_put(&cur, id);
    m->instance_len = kc_text_put(&cur, instance).len;
    m->client_id_len = kc_text_put(&cur, client_id).len;
    m->client_host_len = kc_text_put(&cur, host).len;
    m->hb_deadline = NEVER;
    kc_heap_node_init(&m->hb_node);
    return m;
}

void kc_classic_member_free(member_t *m)
{
    if (!m)
        return;
    kc_classic_protoset_unref(m->protos);
    free(m->assignment);
    free(m);
}

member_t *kc_classic_find_member(group_t *g, kc_str_t id)
{
    if (id.len < 0)
        return NULL;
    return kc_strmap_get(&g->by_id, id.p, (size_t)id.len);
}

member_t *kc_classic_find_static(group_t *g, kc_str_t instance)
{
    if (instance.len < 0)
        return NULL;
    return kc_strmap_get(&g->by_instance, instance.p, (size_t)instance.len);
}

static pending_t *find_pending(group_t *g, kc_str_t id)
{
    if (id.len < 0)
        return NULL;
    return kc_strmap_get(&g->pending, id.p, (size_t)id.len);
}

static void pending_remove(group_t *g, kc_str_t id)
{
    if (id.len < 0)
        return;
    pending_t *p = kc_strmap_del(&g->pending, id.p, (size_t)id.len);
    if (p)
        kc_heap_remove(&g->pheap, &p->node);
    free(p);
    if (g->pending.n == 0) { /* the join burst is over: give its tables back */
        kc_strmap_free(&g->pending);
        kc_heap_free(&g->pheap);
    }
}

bool kc_classic_is_leader(const group_t *g, const member_t *m)
{
    return g->leader == m;
}

/* Kafka's ClassicGroup.hasAllMembersJoined. */
static bool all_joined(const group_t *g)
{
    return g->n_members == g->n_awaiting_join && g->pending.n == 0;
}

/* The largest rebalance timeout of the members (Kafka's ClassicGroup.rebalanceTimeoutMs). */
static int32_t group_rebalance_timeout(const group_t *g)
{
    int32_t t = 0;
    for (const member_t *m = g->head; m; m = m->next)
        if (m->rebalance_timeout_ms > t)
            t = m->rebalance_timeout_ms;
    return t;
}

/* ---- Timers and the heap ---------------------------------------------------------------- */

/* Make sure the group is looked at no later than `deadline`. */
static void arm(group_t *g, int64_t deadline)
{
    if (deadline != NEVER)
        kc_manager_arm(g->gm, &g->gh, deadline);
}

/* Renew a member's session. A later deadline leaves its heap entry where it is (the entry is
 * moved when it comes up), so a heartbeat costs O(1); an earlier one moves it up. The member
 * is in the group, whose mheap has room for it. */
void kc_classic_set_hb(group_t *g, member_t *m, int64_t timeout_ms)
{
    m->last_hb_ms = g->gm->now;
    m->hb_deadline = g->gm->now + timeout_ms;
    kc_heap_arm(&g->mheap, &m->hb_node, m->hb_deadline);
    arm(g, m->hb_deadline);
}

static void set_join_timer(group_t *g, int kind, int64_t delay_ms)
{
    g->join_kind = kind;
    g->join_deadline = g->gm->now + delay_ms;
    arm(g, g->join_deadline);
}

static void cancel_join_timer(group_t *g)
{
    g->join_kind = JOIN_TIMER_NONE;
    g->join_deadline = NEVER;
}

/* The group's earliest deadline, possibly early (a member's heap key), in O(1). */
static int64_t group_earliest(const group_t *g)
{
    int64_t t = g->join_deadline < g->sync_deadline ? g->join_deadline : g->sync_deadline;
    const kc_heap_node_t *top = kc_heap_top(&g->mheap);
    if (top && top->key < t)
        t = top->key;
    top = kc_heap_top(&g->pheap);
    if (top && top->key < t)
        t = top->key;
    return t;
}

/* ---- State ------------------------------------------------------------------------------ */

/* Kafka's ClassicGroupState.validPreviousStates, as bit sets. */
static unsigned valid_previous(kc_group_state_t to)
{
    switch (to) {
    case KC_GROUP_EMPTY:
        return 1u << KC_GROUP_PREPARING_REBALANCE;
    case KC_GROUP_PREPARING_REBALANCE:
        return (1u << KC_GROUP_STABLE) | (1u << KC_GROUP_COMPLETING_REBALANCE) |
               (1u << KC_GROUP_EMPTY);
    case KC_GROUP_COMPLETING_REBALANCE:
        return 1u << KC_GROUP_PREPARING_REBALANCE;
    case KC_GROUP_STABLE:
        return 1u << KC_GROUP_COMPLETING_REBALANCE;
    case KC_GROUP_DEAD:
        return (1u << KC_GROUP_STABLE) | (1u << KC_GROUP_PREPARING_REBALANCE) |
               (1u << KC_GROUP_COMPLETING_REBALANCE) | (1u << KC_GROUP_EMPTY) |
               (1u << KC_GROUP_DEAD);
    }
    return 0;
}

/* The one place a group changes state. Leaving PreparingRebalance or CompletingRebalance
 * (other than for Dead) counts the time spent there in the join or sync phase histogram. An
 * illegal transition is refused and logged as an
 * error (Kafka throws IllegalStateException). */
void kc_classic_set_state(group_t *g, kc_group_state_t to, const char *reason)
{
    if (!(valid_previous(to) & (1u << g->state))) {
        KC_ERROR("group", "group %.*s: illegal transition %s -> %s refused: %s", SV(g->id),
                 kc_group_state_name(g->state), kc_group_state_name(to), reason);
        return;
    }
    KC_DEBUG("group", "group %.*s: %s -> %s: %s", SV(g->id), kc_group_state_name(g->state),
             kc_group_state_name(to), reason);
    if (to != KC_GROUP_DEAD) {
        kc_gm_stats_t *st = &g->gm->stats;
        int64_t spent = g->gm->now - g->state_mono;
        if (g->state == KC_GROUP_PREPARING_REBALANCE)
            kc_classic_phase_observe(st->join_phase, &st->join_phase_sum_s, spent);
        else if (g->state == KC_GROUP_COMPLETING_REBALANCE)
            kc_classic_phase_observe(st->sync_phase, &st->sync_phase_sum_s, spent);
    }
    g->prev_state = g->state;
    g->state = to;
    g->state_ts = g->gm->wall;
    g->state_mono = g->gm->now;
}

static bool can_rebalance(const group_t *g)
{
    return (valid_previous(KC_GROUP_PREPARING_REBALANCE) & (1u << g->state)) != 0;
}

/* ---- Records ---------------------------------------------------------------------------- */

/* message.max.bytes: the largest record a group may write. */
static int32_t record_max(const kc_gm_t *gm)
{
    return gm->cfg.record_max_bytes > 0 ? gm->cfg.record_max_bytes : KC_GM_RECORD_MAX_BYTES_DEFAULT;
}

/* A request refused for a reason its user must act on: logged at info once per group and
 * reason, not once per request. */
static void refused(kc_gm_t *gm, int kind, kc_str_t group_id, const char *reason)
{
    gm->stats.refused[kind]++;
    if (kc_notes_first(&gm->notes, group_id, kc_str_c(reason))) {
        char id[256]; /* the client's bytes, made printable */
        kc_diag_sanitize(id, sizeof(id), group_id.p, group_id.len > 0 ? (size_t)group_id.len : 0);
        KC_INFO("group", "group %s: request refused: %s", id, reason);
    }
}

/* Emit GroupMetadataKey v2 + GroupMetadataValue v3 (value NULL: tombstone). `assign` gives
 * each member's assignment in list order (NULL: the members' stored ones); `empty` writes
 * Kafka's newEmptyGroupMetadataRecord. Returns 0, -1 when out of memory, or -2 when the record
 * would be larger than message.max.bytes (nothing is emitted; Kafka's RecordTooLargeException,
 * which its callers answer with UNKNOWN_SERVER_ERROR). */
int kc_classic_emit_group_metadata(group_t *g, bool tombstone, bool empty, const kc_bytes_t *assign)
{
    kc_gm_t *gm = g->gm;
    kc_writer_t kw, vw;
    kc_wr_init(&kw);
    kc_wr_init(&vw);
    kc_member_metadata_t *mm = NULL;
    int rc = -1;

    kc_group_metadata_key_t key;
    kc_group_metadata_key_init(&key);
    key.group = g->id;
    kc_wr_i16(&kw, GROUP_METADATA_KEY_VERSION);
    kc_group_metadata_key_encode(&kw, GROUP_METADATA_KEY_VERSION, &key);

    if (!tombstone) {
        kc_group_metadata_value_t val;
        kc_group_metadata_value_init(&val);
        val.current_state_timestamp = g->state_ts;
        if (empty) {
            val.protocol_type = KC_STR_EMPTY;
            val.generation = 0;
            val.protocol = KC_STR_NULL;
            val.leader = KC_STR_NULL;
        } else {
            val.protocol_type = g->ptype ? kc_classic_ptype_view(g) : KC_STR_EMPTY;
            val.generation = g->generation;
            val.protocol = kc_classic_pname_view(g);
            val.leader = g->leader ? g->leader->id : KC_STR_NULL;
            if (g->n_members > 0) {
                mm = calloc((size_t)g->n_members, sizeof(*mm));
                if (!mm)
                    goto out;
                int32_t i = 0;
                for (member_t *m = g->head; m; m = m->next, i++) {
                    mm[i].member_id = m->id;
                    mm[i].group_instance_id = kc_classic_member_instance(m);
                    kc_str_t cid = kc_classic_member_client_id(m);
                    kc_str_t host = kc_classic_member_client_host(m);
                    mm[i].client_id = cid.len >= 0 ? cid : KC_STR_EMPTY;
                    mm[i].client_host = host.len >= 0 ? host : KC_STR_EMPTY;
                    mm[i].rebalance_timeout = m->rebalance_timeout_ms;
                    mm[i].session_timeout = m->session_timeout_ms;
                    mm[i].subscription = kc_classic_member_metadata(m, kc_classic_pname_view(g));
                    mm[i].assignment =
                        assign ? assign[i]
                               : (kc_bytes_t){m->assignment ? m->assignment : (const uint8_t *)"",
                                              m->assignment_len};
                }
                val.members.v = mm;
                val.members.n = g->n_members;
            }
        }
        kc_wr_i16(&vw, GROUP_METADATA_VALUE_VERSION);
        kc_group_metadata_value_encode(&vw, GROUP_METADATA_VALUE_VERSION, &val);
    }
    if (kw.err || vw.err)
        goto out;
    size_t bytes = kc_manager_record_bytes(kw.len, tombstone ? 0 : vw.len);
    if (bytes > (size_t)record_max(gm)) {
        char why[200];
        snprintf(why, sizeof(why),
                 "its GroupMetadata record (generation %d, %d members) would be %zu bytes, "
                 "larger than message.max.bytes (%d)",
                 (int)g->generation, (int)g->n_members, bytes, (int)record_max(gm));
        refused(gm, KC_GM_REFUSED_RECORD_SIZE, g->id, why);
        rc = -2;
        goto out;
    }
    if (gm->ops.record)
        gm->ops.record(gm->ops.ctx, kw.buf, kw.len, tombstone ? NULL : vw.buf,
                       tombstone ? 0 : vw.len);
    rc = 0;
out:
    if (rc == -1)
        KC_ERROR("group", "group %.*s: out of memory encoding its GroupMetadata record", SV(g->id));
    free(mm);
    kc_wr_free(&kw);
    kc_wr_free(&vw);
    return rc;
}

/* ---- Answering waiters ------------------------------------------------------------------ */

static int copy_join_resp(kc_arena_t *a, kc_join_group_response_t *dst,
                          const kc_join_group_response_t *src)
{
    bool oom = false;
    *dst = *src;
    dst->protocol_type = kc_text_arena(a, src->protocol_type, &oom);
    dst->protocol_name = kc_text_arena(a, src->protocol_name, &oom);
    dst->leader = kc_text_arena(a, src->leader, &oom);
    dst->member_id = kc_text_arena(a, src->member_id, &oom);
    dst->members.v = NULL;
    dst->members.n = 0;
    if (src->members.n > 0) {
        dst->members.v = kc_arena_alloc(a, (size_t)src->members.n * sizeof(*dst->members.v));
        if (!dst->members.v)
            return -1;
        dst->members.n = src->members.n;
        for (int32_t i = 0; i < src->members.n; i++) {
            dst->members.v[i].member_id = kc_text_arena(a, src->members.v[i].member_id, &oom);
            dst->members.v[i].group_instance_id =
                kc_text_arena(a, src->members.v[i].group_instance_id, &oom);
            dst->members.v[i].metadata =
                kc_classic_arena_bytes(a, src->members.v[i].metadata, &oom);
        }
    }
    return oom ? -1 : 0;
}

/* Answer the JoinGroup being handled now with `r` (copied into its arena). */
static void reply_join(req_t *rq, const kc_join_group_response_t *r)
{
    if (!rq || !rq->join || rq->answered)
        return;
    if (copy_join_resp(rq->a, rq->join, r) != 0) {
        kc_join_group_response_init(rq->join);
        rq->join->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        rq->oom = true;
    }
    rq->answered = true;
}

static void reply_join_error(req_t *rq, int16_t err, kc_str_t member_id)
{
    kc_join_group_response_t r;
    kc_join_group_response_init(&r);
    r.error_code = err;
    r.member_id = member_id.len >= 0 ? member_id : KC_STR_EMPTY;
    reply_join(rq, &r);
}

static void reply_join_oom(req_t *rq, kc_str_t member_id)
{
    rq->oom = true;
    reply_join_error(rq, KC_ERR_COORDINATOR_NOT_AVAILABLE, member_id);
}

static void reply_sync(req_t *rq, const kc_sync_group_response_t *r)
{
    if (!rq || !rq->sync || rq->answered)
        return;
    bool oom = false;
    kc_sync_group_response_t *d = rq->sync;
    *d = *r;
    d->protocol_type = kc_text_arena(rq->a, r->protocol_type, &oom);
    d->protocol_name = kc_text_arena(rq->a, r->protocol_name, &oom);
    d->assignment = kc_classic_arena_bytes(rq->a, r->assignment, &oom);
    if (oom) {
        kc_sync_group_response_init(d);
        d->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        rq->oom = true;
    }
    rq->answered = true;
}

static void reply_sync_error(req_t *rq, int16_t err)
{
    kc_sync_group_response_t r;
    kc_sync_group_response_init(&r);
    r.error_code = err;
    reply_sync(rq, &r);
}

/* Complete a member's parked JoinGroup, if any (Kafka's completeJoinFuture). */
static bool finish_join(group_t *g, member_t *m, const kc_join_group_response_t *r, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    if (!m->join_parked)
        return false;
    waiter_t w = m->join;
    m->join = (waiter_t){0};
    m->join_parked = false;
    g->n_awaiting_join--;
    if (rq && w.seq == rq->seq && rq->join)
        reply_join(rq, r);
    else if (gm->ops.join_done)
        gm->ops.join_done(gm->ops.ctx, w.ptr, r);
    return true;
}

static bool finish_join_error(group_t *g, member_t *m, int16_t err, kc_str_t member_id, req_t *rq)
{
    kc_join_group_response_t r;
    kc_join_group_response_init(&r);
    r.error_code = err;
    r.member_id = member_id;
    return finish_join(g, m, &r, rq);
}

/* Complete a member's parked SyncGroup, if any (Kafka's completeSyncFuture). */
static bool finish_sync(group_t *g, member_t *m, const kc_sync_group_response_t *r, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    if (!m->sync_parked)
        return false;
    waiter_t w = m->sync;
    m->sync = (waiter_t){0};
    m->sync_parked = false;
    if (rq && w.seq == rq->seq && rq->sync)
        reply_sync(rq, r);
    else if (gm->ops.sync_done)
        gm->ops.sync_done(gm->ops.ctx, w.ptr, r);
    return true;
}

static bool finish_sync_error(group_t *g, member_t *m, int16_t err, req_t *rq)
{
    kc_sync_group_response_t r;
    kc_sync_group_response_init(&r);
    r.error_code = err;
    return finish_sync(g, m, &r, rq);
}

/* Park the JoinGroup being handled on member `m`. A JoinGroup the member had parked before
 * is answered first with NOT_COORDINATOR, as Kafka does since KAFKA-20938. */
static void park_join(group_t *g, member_t *m, req_t *rq)
{
    finish_join_error(g, m, KC_ERR_NOT_COORDINATOR, m->id, rq);
    m->join = (waiter_t){rq->waiter, rq->seq};
    m->join_parked = true;
    g->n_awaiting_join++;
    rq->parked = true;
}

static void park_sync(group_t *g, member_t *m, req_t *rq)
{
    finish_sync_error(g, m, KC_ERR_NOT_COORDINATOR, rq);
    m->sync = (waiter_t){rq->waiter, rq->seq};
    m->sync_parked = true;
    rq->parked = true;
}

/* The members as the leader's JoinGroup response lists them (metadata of the selected
 * protocol). *out is malloc'd (caller frees); NULL with n 0 for an empty group. -1 on OOM. */
static int join_members(group_t *g, kc_join_group_response_member_t **out, int32_t *n)
{
    *out = NULL;
    *n = 0;
    if (g->n_members == 0)
        return 0;
    kc_join_group_response_member_t *v = calloc((size_t)g->n_members, sizeof(*v));
    if (!v)
        return -1;
    int32_t i = 0;
    for (member_t *m = g->head; m; m = m->next, i++) {
        v[i].member_id = m->id;
        v[i].group_instance_id = kc_classic_member_instance(m);
        v[i].metadata = kc_classic_member_metadata(m, kc_classic_pname_view(g));
    }
    *out = v;
    *n = i;
    return 0;
}

/* The JoinGroup answer for member `m` of the current generation. */
static void join_result(group_t *g, member_t *m, kc_join_group_response_t *r,
                        kc_join_group_response_member_t *members, int32_t n, kc_str_t leader,
                        bool skip)
{
    kc_join_group_response_init(r);
    r->members.v = members;
    r->members.n = n;
    r->member_id = m->id;
    r->generation_id = g->generation;
    r->protocol_name = kc_classic_pname_view(g);
    r->protocol_type = kc_classic_ptype_view(g);
    r->leader = leader;
    r->skip_assignment = skip;
}

/* ---- Groups ----------------------------------------------------------------------------- */

group_t *kc_classic_find_group(const kc_gm_t *gm, kc_str_t id)
{
    kc_ghead_t *h = kc_manager_find_kind(gm, id, KC_KIND_CLASSIC);
    return h ? kc_heap_entry(h, group_t, gh) : NULL;
}

/* A new Empty group that is not yet in the map (nor in the heap). NULL when out of memory. */
group_t *kc_classic_group_alloc(kc_gm_t *gm, kc_str_t id)
{
    group_t *g = calloc(1, sizeof(*g) + kc_text_space(id));
    if (!g)
        return NULL;
    char *cur = (char *)(g + 1);
    g->id = kc_text_put(&cur, id);
    g->gm = gm;
    g->state = KC_GROUP_EMPTY;
    g->prev_state = KC_GROUP_DEAD;
    g->state_ts = gm->wall;
    g->state_mono = gm->now;
    g->pname_len = -1;
    g->join_deadline = NEVER;
    g->sync_deadline = NEVER;
    g->gh.kind = KC_KIND_CLASSIC;
    kc_heap_node_init(&g->gh.timer);
    kc_strmap_init(&g->by_id);
    kc_strmap_init(&g->by_instance);
    kc_strmap_init(&g->pending);
    return g;
}

group_t *kc_classic_group_create(kc_gm_t *gm, kc_str_t id)
{
    if (kc_manager_reserve(gm) != 0)
        return NULL;
    group_t *g = kc_classic_group_alloc(gm, id);
    if (!g)
        return NULL;
    kc_manager_put(gm, &g->gh, g->id);
    return g;
}

/* Free the memory of a group that is in neither the map nor the heap and whose members have
 * no parked requests. */
void kc_classic_group_release(group_t *g)
{
    member_t *m = g->head;
    while (m) {
        member_t *next = m->next;
        kc_classic_member_free(m);
        m = next;
    }
    for (size_t i = 0; i < g->pending.cap; i++)
        free(kc_strmap_slot(&g->pending, i));
    kc_strmap_free(&g->by_id);
    kc_strmap_free(&g->by_instance);
    kc_strmap_free(&g->pending);
    kc_heap_free(&g->mheap);
    kc_heap_free(&g->pheap);
    for (int32_t i = 0; i < g->n_pc; i++)
        free(g->pc[i].name);
    free(g->pc);
    free(g->ptype);
    free(g->pname);
    free(g->subs);
    kc_history_free(&g->rb);
    free(g);
}

/* Free a group. Parked requests get `err` (COORDINATOR_NOT_AVAILABLE). */
void kc_classic_group_destroy(kc_gm_t *gm, group_t *g, int16_t err, req_t *rq)
{
    kc_manager_del(gm, &g->gh, g->id);
    for (member_t *m = g->head; m; m = m->next) {
        finish_join_error(g, m, err, m->id, rq);
        finish_sync_error(g, m, err, rq);
    }
    kc_classic_group_release(g);
}

/* Kafka's ClassicGroup.add. Everything it needs was reserved by the caller (`ptype` is a
 * malloc'd copy of the protocol type, taken when the group has no members). */
void kc_classic_group_add(group_t *g, member_t *m, char *ptype, int32_t ptype_len)
{
    kc_str_t inst = kc_classic_member_instance(m);
    if (kc_text_present(inst))
        kc_strmap_put(&g->by_instance, inst.p, (size_t)inst.len, m);
    if (g->n_members == 0 && ptype) {
        free(g->ptype);
        g->ptype = ptype;
        g->ptype_len = ptype_len;
    } else {
        free(ptype);
    }
    if (!g->leader)
        g->leader = m;
    m->prev = g->tail;
    m->next = NULL;
    if (g->tail)
        g->tail->next = m;
    else
        g->head = m;
    g->tail = m;
    kc_strmap_put(&g->by_id, m->id.p, (size_t)m->id.len, m);
    g->n_members++;
    pc_add(g, m->protos, +1);
    pending_remove(g, m->id);
    kc_history_note(&g->rb, true, m->id);
}

/* Kafka's ClassicGroup.remove, plus answering the member's parked requests: a parked
 * JoinGroup gets UNKNOWN_MEMBER_ID with no member id (what Kafka's callers send before they
 * remove a member), a parked SyncGroup gets UNKNOWN_MEMBER_ID (Kafka leaves it unanswered). */
static void group_remove(group_t *g, member_t *m, req_t *rq)
{
    finish_join_error(g, m, KC_ERR_UNKNOWN_MEMBER_ID, KC_STR_EMPTY, rq);
    finish_sync_error(g, m, KC_ERR_UNKNOWN_MEMBER_ID, rq);
    pc_add(g, m->protos, -1);
    kc_strmap_del(&g->by_id, m->id.p, (size_t)m->id.len);
    kc_str_t inst = kc_classic_member_instance(m);
    if (kc_text_present(inst) && kc_classic_find_static(g, inst) == m)
        kc_strmap_del(&g->by_instance, inst.p, (size_t)inst.len);
    if (m->prev)
        m->prev->next = m->next;
    else
        g->head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        g->tail = m->prev;
    g->n_members--;
    if (m->pending_sync)
        g->n_pending_sync--;
    if (g->leader == m)
        g->leader = g->head;
    pending_remove(g, m->id);
    kc_history_note(&g->rb, false, m->id);
    kc_heap_remove(&g->mheap, &m->hb_node);
    kc_classic_member_free(m);
}

/* Remove the member or pending member with this id (Kafka's group.remove(memberId)). */
static void group_remove_id(group_t *g, kc_str_t id, req_t *rq)
{
    member_t *m = kc_classic_find_member(g, id);
    if (m)
        group_remove(g, m, rq);
    pending_remove(g, id);
}

static void clear_pending_sync(group_t *g)
{
    for (member_t *m = g->head; m; m = m->next)
        m->pending_sync = false;
    g->n_pending_sync = 0;
}

/* Kafka's ClassicGroup.validateMember. */
int16_t kc_classic_validate_member(group_t *g, kc_str_t member_id, kc_str_t instance)
{
    if (kc_text_present(instance)) {
        member_t *s = kc_classic_find_static(g, instance);
        if (!s)
            return KC_ERR_UNKNOWN_MEMBER_ID;
        if (!kc_str_eq(s->id, member_id)) {
            KC_DEBUG("group",
                     "group %.*s: member %.*s with instance id %.*s is fenced by member %.*s",
                     SV(g->id), SV(member_id), SV(instance), SV(s->id));
            return KC_ERR_FENCED_INSTANCE_ID;
        }
    }
    if (!kc_classic_find_member(g, member_id))
        return KC_ERR_UNKNOWN_MEMBER_ID;
    return 0;
}

/* Kafka's ClassicGroup.computeSubscribedTopics: the union of the topics in every member's
 * ConsumerProtocolSubscription (read as v0, the prefix of every version) for a "consumer"
 * group; unknown when the group is not a consumer group, has no selected protocol, or a
 * subscription cannot be parsed. */
void kc_classic_compute_subscriptions(group_t *g)
{
    free(g->subs);
    g->subs = NULL;
    g->n_subs = 0;
    g->subs_known = false;
    if (!kc_classic_uses_consumer_protocol(g))
        return;
    if (g->n_members == 0) {
        g->subs_known = true;
        return;
    }
    if (g->pname_len < 0)
        return;

    kc_arena_t a;
    kc_arena_init(&a);
    size_t cap = 16, n = 0, bytes = 0;
    kc_str_t *all = malloc(cap * sizeof(*all));
    bool ok = all != NULL;
    for (member_t *m = g->head; ok && m; m = m->next) {
        kc_bytes_t md = kc_classic_member_metadata(m, kc_classic_pname_view(g));
        kc_reader_t r;
        kc_rd_init(&r, md.p, (size_t)md.len);
        int16_t version = kc_rd_i16(&r);
        kc_consumer_protocol_subscription_t sub;
        if (r.err || version < 0 ||
            kc_consumer_protocol_subscription_decode(&r, &a, 0, &sub) != 0) {
            KC_WARN("group",
                    "group %.*s: cannot parse the consumer protocol subscription of member "
                    "%.*s; the subscribed topics are unknown",
                    SV(g->id), SV(m->id));
            ok = false;
            break;
        }
        for (int32_t i = 0; i < sub.topics.n; i++) {
            if (n == cap) {
                kc_str_t *v = realloc(all, cap * 2 * sizeof(*v));
                if (!v) {
                    ok = false;
                    break;
                }
                all = v;
                cap *= 2;
            }
            all[n++] = sub.topics.v[i];
            bytes += (size_t)(sub.topics.v[i].len > 0 ? sub.topics.v[i].len : 0) + 1;
        }
    }
    if (ok) {
        qsort(all, n, sizeof(*all), kc_text_qcmp);
        size_t uniq = 0;
        for (size_t i = 0; i < n; i++)
            if (uniq == 0 || kc_text_qcmp(&all[uniq - 1], &all[i]) != 0)
                all[uniq++] = all[i];
        kc_str_t *subs = malloc(uniq * sizeof(*subs) + bytes + 1);
        if (subs) {
            char *cur = (char *)(subs + uniq);
            for (size_t i = 0; i < uniq; i++)
                subs[i] = kc_text_put(&cur, all[i].len >= 0 ? all[i] : KC_STR_EMPTY);
            g->subs = subs;
            g->n_subs = (int32_t)uniq;
            g->subs_known = true;
        }
    }
    free(all);
    kc_arena_free(&a);
}

/* Kafka's ClassicGroup.isSubscribedToTopic. */
bool kc_classic_subscribed_to(const group_t *g, kc_str_t topic)
{
    if (!g->subs_known)
        return kc_classic_uses_consumer_protocol(g);
    kc_str_t key = topic.len >= 0 ? topic : KC_STR_EMPTY;
    if (g->n_subs == 0)
        return false;
    return bsearch(&key, g->subs, (size_t)g->n_subs, sizeof(kc_str_t), kc_text_qcmp) != NULL;
}

/* ---- The rebalance ---------------------------------------------------------------------- */

static void complete_join_phase(group_t *g, req_t *rq);

/* End the running history entry with the group's generation and log its line. */
static void rb_finish(group_t *g, const char *outcome)
{
    kc_history_entry_t *e = kc_history_end(&g->rb, gm_time(g->gm), g->generation, outcome);
    if (e)
        kc_history_log(e, "group", g->id);
}

/* An event is about to start a rebalance: open the history entry for it before the event
 * changes the group, so that the members it adds or removes are listed, and arm
 * kc_classic_prepare_rebalance to keep it. A rebalance that reached CompletingRebalance ends as
 * "restarted". Nothing when the group is preparing a rebalance already (the event joins that
 * one) or when another event of the same request armed it. Call it only right before an event
 * that moves the group to PreparingRebalance (through kc_classic_prepare_rebalance) when it is
 * Stable, CompletingRebalance or Empty. */
static void rb_start(group_t *g, int cause, kc_str_t member, kc_str_t reason)
{
    if (g->rb_armed || !can_rebalance(g))
        return;
    if (g->rb.open)
        rb_finish(g, "restarted");
    kc_history_begin(&g->rb, &g->gm->stats, gm_time(g->gm), cause, member, reason);
    g->rb_armed = true;
}

/* A client's reason (JoinGroup v8+, LeaveGroup v5+), or null when it gave none. */
static kc_str_t client_reason(int16_t version, int16_t since, kc_str_t reason)
{
    return version >= since && reason.len >= 0 ? reason : KC_STR_NULL;
}

/* Kafka's resetAndPropagateAssignmentWithError / setAndPropagateAssignment. */
static void propagate_assignment(group_t *g, int16_t err, req_t *rq)
{
    for (member_t *m = g->head; m; m = m->next) {
        kc_sync_group_response_t r;
        kc_sync_group_response_init(&r);
        r.error_code = err;
        if (err == 0) {
            r.protocol_name = kc_classic_pname_view(g);
            r.protocol_type = kc_classic_ptype_view(g);
        }
        r.assignment =
            (kc_bytes_t){m->assignment ? m->assignment : (const uint8_t *)"", m->assignment_len};
        if (finish_sync(g, m, &r, rq))
            kc_classic_set_hb(g, m, m->session_timeout_ms);
    }
}

static void reset_and_propagate_error(group_t *g, int16_t err, req_t *rq)
{
    for (member_t *m = g->head; m; m = m->next) {
        free(m->assignment);
        m->assignment = NULL;
        m->assignment_len = 0;
    }
    propagate_assignment(g, err, rq);
}

/* Kafka's ClassicGroup.maybeElectNewJoinedLeader. */
static bool maybe_elect_new_joined_leader(group_t *g)
{
    if (!g->leader)
        return false;
    if (g->leader->join_parked)
        return true;
    for (member_t *m = g->head; m; m = m->next) {
        if (m->join_parked) {
            KC_DEBUG("group",
                     "group %.*s: leader %.*s failed to join before the rebalance timeout; "
                     "member %.*s is the new leader",
                     SV(g->id), SV(g->leader->id), SV(m->id));
            g->leader = m;
            return true;
        }
    }
    KC_DEBUG("group",
             "group %.*s: leader %.*s failed to join before the rebalance timeout and no "
             "member joined",
             SV(g->id), SV(g->leader->id));
    return false;
}

/* Kafka's ClassicGroup.initNextGeneration. */
static void init_next_generation(group_t *g)
{
    char reason[160];
    g->generation++;
    kc_history_entry_t *e = kc_history_current(&g->rb);
    if (e)
        e->generation = g->generation;
    if (g->n_members > 0) {
        kc_str_t sel = select_protocol(g);
        if (sel.len >= 0 && (size_t)sel.len + 1 > g->pname_cap) {
            char *p = realloc(g->pname, (size_t)sel.len + 1);
            if (p) {
                g->pname = p;
                g->pname_cap = (size_t)sel.len + 1;
            } else {
                sel = KC_STR_NULL;
            }
        }
        if (sel.len >= 0) {
            if (sel.len)
                memcpy(g->pname, sel.p, (size_t)sel.len);
            g->pname[sel.len] = '\0';
        }
        g->pname_len = sel.len >= 0 ? sel.len : -1;
        kc_classic_compute_subscriptions(g);
        snprintf(reason, sizeof(reason), "generation %d with %d members, protocol %.*s",
                 (int)g->generation, (int)g->n_members, SV(kc_classic_pname_view(g)));
        kc_classic_set_state(g, KC_GROUP_COMPLETING_REBALANCE, reason);
    } else {
        g->pname_len = -1;
        kc_classic_compute_subscriptions(g);
        snprintf(reason, sizeof(reason), "generation %d has no members", (int)g->generation);
        kc_classic_set_state(g, KC_GROUP_EMPTY, reason);
        rb_finish(g, "empty");
    }
    clear_pending_sync(g);
}

/* The initial-rebalance timer never fires sooner than 1 ms, as Kafka's timer (1 ms ticks,
 * expired by its own thread) does not with group.initial.rebalance.delay.ms=0: members that
 * join together but arrive over a few socket reads then land in one generation, rather than
 * a first generation of whoever came in the first loop turn and a second one for the rest. */
static int32_t timer_delay(int32_t delay)
{
    return delay > 0 ? delay : 1;
}

/* Kafka's prepareRebalance. */
void kc_classic_prepare_rebalance(group_t *g, const char *reason, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    if (!g->rb_armed) {
        /* Started by something rb_start does not name (see kc_history_begin's causes). */
        if (g->rb.open)
            rb_finish(g, "restarted");
        kc_history_begin(&g->rb, &gm->stats, gm_time(gm), KC_RB_OTHER, KC_STR_NULL,
                         kc_str_c(reason));
    }
    g->rb_armed = false;
    if (g->state == KC_GROUP_COMPLETING_REBALANCE)
        reset_and_propagate_error(g, KC_ERR_REBALANCE_IN_PROGRESS, rq);
    clear_pending_sync(g);
    g->sync_deadline = NEVER;

    bool initial = g->state == KC_GROUP_EMPTY;
    if (initial) {
        int32_t delay = gm->cfg.initial_rebalance_delay_ms;
        int32_t remaining = group_rebalance_timeout(g) - delay;
        g->init_delay_ms = delay;
        g->init_remaining_ms = remaining > 0 ? remaining : 0;
        set_join_timer(g, JOIN_TIMER_INITIAL, timer_delay(delay));
    }
    kc_classic_set_state(g, KC_GROUP_PREPARING_REBALANCE, reason);
    if (initial)
        return;
    /* maybeCompleteJoinElseSchedule */
    if (all_joined(g))
        complete_join_phase(g, rq);
    else
        set_join_timer(g, JOIN_TIMER_COMPLETE, group_rebalance_timeout(g));
}

/* Kafka's maybeCompleteJoinPhase: not during the initial rebalance of a new group. */
static void maybe_complete_join_phase(group_t *g, req_t *rq)
{
    if (g->state != KC_GROUP_PREPARING_REBALANCE || g->prev_state == KC_GROUP_EMPTY)
        return;
    if (!all_joined(g))
        return;
    complete_join_phase(g, rq);
}

static void maybe_prepare_rebalance_or_complete_join(group_t *g, const char *reason, req_t *rq)
{
    if (can_rebalance(g))
        kc_classic_prepare_rebalance(g, reason, rq);
    else
        maybe_complete_join_phase(g, rq);
}

/* Kafka's completeClassicGroupJoin. */
static void complete_join_phase(group_t *g, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    cancel_join_timer(g);

    int removed = 0;
    for (member_t *m = g->head, *next; m; m = next) {
        next = m->next;
        if (!m->join_parked && !kc_text_present(kc_classic_member_instance(m))) {
            KC_DEBUG("group", "group %.*s: removing dynamic member %.*s that did not rejoin",
                     SV(g->id), SV(m->id));
            group_remove(g, m, rq);
            removed++;
        }
    }
    if (removed)
        KC_DEBUG("group", "group %.*s removed %d dynamic members that did not rejoin", SV(g->id),
                 removed);

    if (g->state == KC_GROUP_DEAD)
        return;
    if (!maybe_elect_new_joined_leader(g) && g->n_members > 0) {
        KC_ERROR("group", "group %.*s could not complete the rebalance: no member rejoined",
                 SV(g->id));
        set_join_timer(g, JOIN_TIMER_COMPLETE, group_rebalance_timeout(g));
        return;
    }
    init_next_generation(g);
    if (g->state == KC_GROUP_EMPTY) {
        kc_classic_emit_group_metadata(g, false, false, NULL);
        return;
    }

    kc_join_group_response_member_t *members = NULL;
    int32_t n = 0;
    bool members_oom = join_members(g, &members, &n) != 0;
    for (member_t *m = g->head; m; m = m->next) {
        kc_join_group_response_t r;
        if (kc_classic_is_leader(g, m) && members_oom) {
            kc_join_group_response_init(&r);
            r.error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
            r.member_id = m->id;
        } else if (kc_classic_is_leader(g, m)) {
            join_result(g, m, &r, members, n, g->leader->id, false);
        } else {
            join_result(g, m, &r, NULL, 0, g->leader->id, false);
        }
        finish_join(g, m, &r, rq);
        kc_classic_set_hb(g, m, m->session_timeout_ms);
        m->is_new = false;
        if (!m->pending_sync) {
            m->pending_sync = true;
            g->n_pending_sync++;
        }
    }
    free(members);
    /* schedulePendingSync */
    g->sync_generation = g->generation;
    g->sync_deadline = gm->now + group_rebalance_timeout(g);
    arm(g, g->sync_deadline);
}

/* Kafka's tryCompleteInitialRebalanceElseSchedule. */
static void try_complete_initial_rebalance(group_t *g, int32_t delay, int32_t remaining, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    if (g->new_member_added && remaining != 0) {
        g->new_member_added = false;
        int32_t cfg_delay = gm->cfg.initial_rebalance_delay_ms;
        int32_t new_delay = cfg_delay < remaining ? cfg_delay : remaining;
        int32_t new_remaining = remaining - delay > 0 ? remaining - delay : 0;
        g->init_delay_ms = new_delay;
        g->init_remaining_ms = new_remaining;
        set_join_timer(g, JOIN_TIMER_INITIAL, timer_delay(new_delay));
    } else {
        complete_join_phase(g, rq);
    }
}

/* Kafka's removeMemberAndUpdateClassicGroup (session expiry). */
static void remove_member_and_update(group_t *g, member_t *m, const char *reason, req_t *rq)
{
    group_remove(g, m, rq);
    if (g->state == KC_GROUP_STABLE || g->state == KC_GROUP_COMPLETING_REBALANCE)
        maybe_prepare_rebalance_or_complete_join(g, reason, rq);
    else if (g->state == KC_GROUP_PREPARING_REBALANCE && all_joined(g))
        complete_join_phase(g, rq);
}

/* Kafka's expirePendingSync. */
static void expire_pending_sync(group_t *g, int32_t generation, req_t *rq)
{
    if (generation != g->generation) {
        KC_ERROR("group", "group %.*s: sync expiration of old generation %d (now %d)", SV(g->id),
                 (int)generation, (int)g->generation);
        return;
    }
    if (g->state != KC_GROUP_COMPLETING_REBALANCE && g->state != KC_GROUP_STABLE) {
        KC_ERROR("group", "group %.*s: sync expiration in state %s", SV(g->id),
                 kc_group_state_name(g->state));
        return;
    }
    if (g->n_pending_sync == 0)
        return;
    char reason[200];
    int len = snprintf(reason, sizeof(reason), "removing members that did not sync:");
    for (member_t *m = g->head; m; m = m->next) {
        if (m->pending_sync) {
            rb_start(g, KC_RB_SYNC_TIMEOUT, m->id,
                     KC_STR_LIT("members did not send SyncGroup before the rebalance timeout"));
            break;
        }
    }
    for (member_t *m = g->head, *next; m; m = next) {
        next = m->next;
        if (!m->pending_sync)
            continue;
        if (len > 0 && (size_t)len < sizeof(reason))
            len += snprintf(reason + len, sizeof(reason) - (size_t)len, " %.*s", SV(m->id));
        group_remove(g, m, rq);
    }
    kc_classic_prepare_rebalance(g, reason, rq);
}

/* Kafka's expireClassicGroupMemberHeartbeat for a member. */
static void expire_member(group_t *g, member_t *m, req_t *rq)
{
    if (g->state == KC_GROUP_DEAD)
        return;
    /* hasSatisfiedHeartbeat: a member that is not new and waits in a rebalance is alive. */
    bool satisfied = !m->is_new && (m->join_parked || m->sync_parked);
    if (satisfied)
        return;
    char reason[160];
    snprintf(reason, sizeof(reason), "removing member %.*s on heartbeat expiration", SV(m->id));
    KC_DEBUG("group", "group %.*s: member %.*s has failed, removing it", SV(g->id), SV(m->id));
    if (g->state == KC_GROUP_STABLE || g->state == KC_GROUP_COMPLETING_REBALANCE)
        rb_start(g, KC_RB_SESSION_TIMEOUT, m->id, KC_STR_NULL);
    remove_member_and_update(g, m, reason, rq);
}

/* The member whose session ends first, when it has ended by now; NULL otherwise, or when the
 * budget ran out. A heap key left early by a heartbeat (kc_classic_set_hb does not move an entry
 * later) is moved to the member's real deadline when it comes up: one O(log n) step, counted as
 * work, at most once per renewal that the tick sees. Keys are never later than deadlines, so
 * the entry returned has the earliest deadline of all. */
static member_t *due_member(group_t *g, int64_t *budget)
{
    kc_gm_t *gm = g->gm;
    kc_heap_node_t *top;
    while ((top = kc_heap_top(&g->mheap)) != NULL && top->key <= gm->now) {
        member_t *m = kc_heap_entry(top, member_t, hb_node);
        if (m->hb_deadline == top->key)
            return m;
        if (*budget <= 0)
            return NULL;
        (*budget)--;
        gm->stats.timers_examined++;
        kc_heap_remove(&g->mheap, top);
        if (m->hb_deadline != NEVER)
            kc_heap_push(&g->mheap, top, m->hb_deadline);
    }
    return NULL;
}

/* Fire the group's due timers in deadline order while the tick's budget lasts. Each costs
 * O(log n): members and pending members are found through the group's heaps, never by a
 * scan, so that 100 000 pending members expiring together cost 100 000 heap pops, not
 * 100 000 scans of 100 000 entries. */
static void run_group_timers(group_t *g, int64_t *budget, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    while (*budget > 0) {
        enum { T_NONE, T_JOIN, T_SYNC, T_MEMBER, T_PENDING } kind = T_NONE;
        int64_t best = gm->now;
        member_t *bm = due_member(g, budget);
        if (*budget <= 0)
            return;
        kc_heap_node_t *pt = kc_heap_top(&g->pheap);
        pending_t *bp = NULL;
        if (g->join_deadline <= best) {
            kind = T_JOIN;
            best = g->join_deadline;
        }
        if (g->sync_deadline <= best && (kind == T_NONE || g->sync_deadline < best)) {
            kind = T_SYNC;
            best = g->sync_deadline;
        }
        if (bm && bm->hb_deadline <= best && (kind == T_NONE || bm->hb_deadline < best)) {
            kind = T_MEMBER;
            best = bm->hb_deadline;
        }
        if (pt && pt->key <= best && (kind == T_NONE || pt->key < best)) {
            kind = T_PENDING;
            best = pt->key;
            bp = kc_heap_entry(pt, pending_t, node);
        }
        if (kind == T_NONE)
            return;
        (*budget)--;
        gm->stats.timers_examined++;
        gm->stats.timers_fired++;
        switch (kind) {
        case T_NONE:
            return;
        case T_JOIN: {
            int k = g->join_kind;
            cancel_join_timer(g);
            if (k == JOIN_TIMER_INITIAL)
                try_complete_initial_rebalance(g, g->init_delay_ms, g->init_remaining_ms, rq);
            else
                complete_join_phase(g, rq);
            break;
        }
        case T_SYNC:
            g->sync_deadline = NEVER;
            expire_pending_sync(g, g->sync_generation, rq);
            break;
        case T_MEMBER:
            bm->hb_deadline = NEVER;
            kc_heap_remove(&g->mheap, &bm->hb_node);
            expire_member(g, bm, rq);
            break;
        case T_PENDING:
            KC_DEBUG("group", "group %.*s: pending member %.*s removed after its session timeout",
                     SV(g->id), SV(bp->id));
            pending_remove(g, bp->id);
            if (g->state == KC_GROUP_PREPARING_REBALANCE && all_joined(g))
                complete_join_phase(g, rq);
            break;
        }
    }
}

static void begin_request(kc_gm_t *gm, req_t *rq, kc_time_t now, int16_t version, void *waiter,
                          kc_arena_t *a, kc_join_group_response_t *join,
                          kc_sync_group_response_t *sync)
{
    kc_classic_set_time(gm, now);
    *rq = (req_t){.seq = ++gm->next_seq,
                  .waiter = waiter,
                  .version = version,
                  .a = a,
                  .join = join,
                  .sync = sync};
}

static int end_request(req_t *rq)
{
    int rc = KC_GM_ANSWERED;
    if (!rq->answered) {
        if (rq->parked) {
            rc = KC_GM_PARKED;
        } else if (rq->join) {
            reply_join_error(rq, KC_ERR_UNKNOWN_SERVER_ERROR, KC_STR_EMPTY);
        } else {
            reply_sync_error(rq, KC_ERR_UNKNOWN_SERVER_ERROR);
        }
    }
    return rc;
}

/* ---- JoinGroup -------------------------------------------------------------------------- */

/* Kafka's generateMemberId: "<client id or instance id>-<random UUID>", unique in the group.
 * Allocated from the request's arena. */
static kc_str_t generate_member_id(group_t *g, kc_str_t prefix, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    if (prefix.len < 0)
        prefix = KC_STR_LIT("null");
    size_t n = (size_t)prefix.len + 1 + 36;
    char *p = kc_arena_alloc(rq->a, n + 1);
    if (!p)
        return KC_STR_NULL;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint8_t u[16];
        uint64_t r1 = kc_manager_random(gm), r2 = kc_manager_random(gm);
        memcpy(u, &r1, 8);
        memcpy(u + 8, &r2, 8);
        u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
        u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
        static const char hex[] = "0123456789abcdef";
        char *c = p;
        if (prefix.len)
            memcpy(c, prefix.p, (size_t)prefix.len);
        c += prefix.len;
        *c++ = '-';
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10)
                *c++ = '-';
            *c++ = hex[u[i] >> 4];
            *c++ = hex[u[i] & 15];
        }
        *c = '\0';
        kc_str_t id = {p, (int32_t)n};
        if (!kc_classic_find_member(g, id) && !find_pending(g, id))
            return id;
    }
    return KC_STR_NULL;
}

/* Kafka's acceptJoiningMember (group.max.size). */
static bool accept_joining_member(group_t *g, kc_str_t member_id)
{
    int32_t max = g->gm->cfg.max_size;
    member_t *m = kc_classic_find_member(g, member_id);
    switch (g->state) {
    case KC_GROUP_EMPTY:
    case KC_GROUP_DEAD:
        return true;
    case KC_GROUP_PREPARING_REBALANCE:
        return (m && m->join_parked) || g->n_awaiting_join < max;
    case KC_GROUP_COMPLETING_REBALANCE:
    case KC_GROUP_STABLE:
        return m || g->n_members < max;
    }
    return false;
}

/* Kafka's addMemberThenRebalanceOrCompleteJoin. */
static void add_member_then_rebalance(group_t *g, const join_req_t *jr, kc_str_t member_id,
                                      req_t *rq)
{
    kc_gm_t *gm = g->gm;
    const kc_join_group_request_t *req = jr->req;
    protoset_t *ps = protoset_get(g, req);
    member_t *m = kc_classic_member_new(member_id, jr->instance_id, jr->client_id, jr->client_host);
    char *ptype = NULL;
    kc_str_t rt = req->protocol_type.len > 0 ? req->protocol_type : KC_STR_EMPTY;
    if (g->n_members == 0)
        ptype = malloc((size_t)rt.len + 1);
    if (!ps || !m || (g->n_members == 0 && !ptype) || kc_classic_pc_reserve(g, ps) != 0 ||
        pname_reserve(g, ps) != 0 || kc_strmap_reserve(&g->by_id, 1) != 0 ||
        kc_heap_reserve(&g->mheap, (size_t)g->n_members + 1) != 0 ||
        (kc_text_present(jr->instance_id) && kc_strmap_reserve(&g->by_instance, 1) != 0)) {
        kc_classic_protoset_unref(ps);
        kc_classic_member_free(m);
        free(ptype);
        reply_join_oom(rq, jr->member_id);
        return;
    }
    if (ptype) {
        if (rt.len)
            memcpy(ptype, rt.p, (size_t)rt.len);
        ptype[rt.len] = '\0';
    }
    m->protos = ps;
    m->rebalance_timeout_ms = jr->rebalance_timeout_ms;
    m->session_timeout_ms = jr->session_timeout_ms;
    m->is_new = true;
    if (g->state == KC_GROUP_PREPARING_REBALANCE && g->prev_state == KC_GROUP_EMPTY)
        g->new_member_added = true;
    rb_start(g, KC_RB_MEMBER_JOINED, m->id, client_reason(jr->version, 8, req->reason));
    kc_classic_group_add(g, m, ptype, rt.len);
    park_join(g, m, rq);
    /* New members cannot heartbeat before they know their id: they get the (long) new-member
     * join timeout instead of their session timeout (KAFKA-7610). */
    kc_classic_set_hb(g, m, gm->cfg.new_member_join_timeout_ms);

    char reason[300];
    snprintf(reason, sizeof(reason),
             "adding new member %.*s with group instance id %.*s; client reason: %.*s", SV(m->id),
             SV(kc_text_present(kc_classic_member_instance(m)) ? kc_classic_member_instance(m)
                                                               : KC_STR_LIT("None")),
             SV(jr->reason));
    maybe_prepare_rebalance_or_complete_join(g, reason, rq);
}

/* Kafka's ClassicGroup.updateMember with a response future: take the request's protocols
 * (`ps`, reserved by the caller) and timeouts, and park the JoinGroup being handled. */
static void update_member(group_t *g, member_t *m, protoset_t *ps, const join_req_t *jr, req_t *rq)
{
    pc_add(g, ps, +1);
    pc_add(g, m->protos, -1);
    kc_classic_protoset_unref(m->protos);
    m->protos = ps;
    m->rebalance_timeout_ms = jr->rebalance_timeout_ms;
    m->session_timeout_ms = jr->session_timeout_ms;
    park_join(g, m, rq);
}

/* Kafka's updateMemberThenRebalanceOrCompleteJoin. */
static void update_member_then_rebalance(group_t *g, member_t *m, const join_req_t *jr,
                                         const char *why, int cause, req_t *rq)
{
    protoset_t *ps = protoset_get(g, jr->req);
    if (!ps || kc_classic_pc_reserve(g, ps) != 0 || pname_reserve(g, ps) != 0) {
        kc_classic_protoset_unref(ps);
        reply_join_oom(rq, jr->member_id);
        return;
    }
    rb_start(g, cause, m->id, client_reason(jr->version, 8, jr->req->reason));
    update_member(g, m, ps, jr, rq);

    char reason[300];
    snprintf(reason, sizeof(reason), "%s %.*s during %s; client reason: %.*s", why, SV(m->id),
             kc_group_state_name(g->state), SV(jr->reason));
    maybe_prepare_rebalance_or_complete_join(g, reason, rq);
}

/* History of a static member replaced by `m` (its old member id `old_id`) that starts or joins a
 * rebalance: the old id dropped out, the new one joined. */
static void rb_static_replaced(group_t *g, kc_str_t old_id, const member_t *m)
{
    char why[200];
    int n = snprintf(why, sizeof(why), "group instance id %.*s replaced member %.*s",
                     SV(kc_classic_member_instance(m)), SV(old_id));
    rb_start(g, KC_RB_STATIC_REPLACED, m->id,
             (kc_str_t){why, n < (int)sizeof(why) ? n : (int)sizeof(why) - 1});
    kc_history_note(&g->rb, false, old_id);
    kc_history_note(&g->rb, true, m->id);
}

/* Kafka's updateStaticMemberThenRebalanceOrCompleteJoin: a known group.instance.id joins
 * with an unknown member id; the old member id is fenced and replaced. */
static void update_static_member_then_rebalance(group_t *g, member_t *old, const join_req_t *jr,
                                                kc_str_t new_id, req_t *rq)
{
    bool oom = false;
    kc_str_t current_leader = g->leader ? kc_text_arena(rq->a, g->leader->id, &oom) : KC_STR_NULL;
    kc_str_t old_id = kc_text_arena(rq->a, old->id, &oom); /* for the history */
    member_t *nm =
        kc_classic_member_new(new_id, kc_classic_member_instance(old),
                              kc_classic_member_client_id(old), kc_classic_member_client_host(old));
    protoset_t *ps = protoset_get(g, jr->req);
    if (oom || !nm || !ps || kc_classic_pc_reserve(g, ps) != 0 || pname_reserve(g, ps) != 0 ||
        kc_strmap_reserve(&g->by_id, 1) != 0) {
        kc_classic_member_free(nm);
        kc_classic_protoset_unref(ps);
        reply_join_oom(rq, jr->member_id);
        return;
    }
    KC_DEBUG("group",
             "group %.*s: static member with instance id %.*s joins with an unknown member id "
             "in %s; replacing member %.*s with %.*s",
             SV(g->id), SV(kc_classic_member_instance(old)), kc_group_state_name(g->state),
             SV(old->id), SV(new_id));

    /* ClassicGroup.replaceStaticMember: fence the old member's parked requests. */
    {
        kc_join_group_response_t r;
        kc_join_group_response_init(&r);
        r.error_code = KC_ERR_FENCED_INSTANCE_ID;
        r.member_id = old->id;
        r.protocol_name = KC_STR_NULL;
        r.protocol_type = KC_STR_NULL;
        r.leader = KC_STR_EMPTY;
        finish_join(g, old, &r, rq);
        kc_sync_group_response_t s;
        kc_sync_group_response_init(&s);
        s.error_code = KC_ERR_FENCED_INSTANCE_ID;
        s.assignment = (kc_bytes_t){(const uint8_t *)"", 0};
        finish_sync(g, old, &s, rq);
    }
    nm->rebalance_timeout_ms = old->rebalance_timeout_ms;
    nm->session_timeout_ms = old->session_timeout_ms;
    nm->protos = old->protos;
    old->protos = NULL;
    nm->assignment = old->assignment;
    nm->assignment_len = old->assignment_len;
    old->assignment = NULL;
    /* The instance still owes its SyncGroup if the old id did (Kafka keeps the old id in the
     * pending-sync set, where it can never be cleared). */
    nm->pending_sync = old->pending_sync;
    nm->prev = old->prev;
    nm->next = old->next;
    if (old->prev)
        old->prev->next = nm;
    else
        g->head = nm;
    if (old->next)
        old->next->prev = nm;
    else
        g->tail = nm;
    kc_strmap_del(&g->by_id, old->id.p, (size_t)old->id.len);
    kc_strmap_put(&g->by_id, nm->id.p, (size_t)nm->id.len, nm);
    kc_str_t inst = kc_classic_member_instance(nm);
    kc_strmap_put(&g->by_instance, inst.p, (size_t)inst.len, nm);
    if (g->leader == old)
        g->leader = nm;
    kc_heap_remove(&g->mheap, &old->hb_node); /* nm takes its place there in kc_classic_set_hb */
    kc_classic_member_free(old);
    member_t *m = nm;
    kc_classic_set_hb(g, m, m->session_timeout_ms);

    update_member(g, m, ps, jr, rq);

    char reason[300];
    if (g->state == KC_GROUP_STABLE) {
        kc_str_t sel = select_protocol(g);
        if (kc_str_eq(kc_classic_pname_view(g), sel)) {
            KC_DEBUG("group",
                     "group %.*s: static member %.*s rejoins in Stable without changing the "
                     "selected protocol; no rebalance",
                     SV(g->id), SV(m->id));
            kc_join_group_response_t r;
            int rc = kc_classic_emit_group_metadata(g, false, false, NULL);
            if (rc != 0) {
                kc_join_group_response_init(&r);
                r.error_code =
                    rc == -2 ? KC_ERR_UNKNOWN_SERVER_ERROR : KC_ERR_COORDINATOR_NOT_AVAILABLE;
                r.generation_id = g->generation;
                r.protocol_name = kc_classic_pname_view(g);
                r.protocol_type = kc_classic_ptype_view(g);
                r.leader = current_leader;
                finish_join(g, m, &r, rq);
            } else if (jr->version >= 9) {
                /* KIP-814: a static leader gets the members but may skip the assignment. */
                bool leader = kc_classic_is_leader(g, m);
                kc_join_group_response_member_t *members = NULL;
                int32_t n = 0;
                if (leader && join_members(g, &members, &n) != 0) {
                    finish_join_error(g, m, KC_ERR_COORDINATOR_NOT_AVAILABLE, KC_STR_EMPTY, rq);
                } else {
                    join_result(g, m, &r, members, n, g->leader ? g->leader->id : KC_STR_NULL,
                                leader);
                    finish_join(g, m, &r, rq);
                }
                free(members);
            } else {
                join_result(g, m, &r, NULL, 0, current_leader, false);
                finish_join(g, m, &r, rq);
            }
            return;
        }
        snprintf(reason, sizeof(reason),
                 "group's selected protocol will change because static member %.*s with "
                 "instance id %.*s joined with a change of protocol; client reason: %.*s",
                 SV(m->id), SV(kc_classic_member_instance(m)), SV(jr->reason));
        rb_static_replaced(g, old_id, m);
        maybe_prepare_rebalance_or_complete_join(g, reason, rq);
        return;
    }
    if (g->state == KC_GROUP_COMPLETING_REBALANCE) {
        /* The leader may already hold the old member id: always rebalance. */
        snprintf(reason, sizeof(reason),
                 "updating metadata for static member %.*s with instance id %.*s; client "
                 "reason: %.*s",
                 SV(m->id), SV(kc_classic_member_instance(m)), SV(jr->reason));
        rb_static_replaced(g, old_id, m);
        kc_classic_prepare_rebalance(g, reason, rq);
        return;
    }
    rb_static_replaced(g, old_id, m);
    maybe_complete_join_phase(g, rq);
}

static void join_new_member(group_t *g, const join_req_t *jr, req_t *rq)
{
    kc_gm_t *gm = g->gm;
    if (g->state == KC_GROUP_DEAD) {
        reply_join_error(rq, KC_ERR_COORDINATOR_NOT_AVAILABLE, KC_STR_EMPTY);
        return;
    }
    if (!supports_protocols(g, jr->req->protocol_type, jr->req)) {
        reply_join_error(rq, KC_ERR_INCONSISTENT_GROUP_PROTOCOL, KC_STR_EMPTY);
        return;
    }
    bool is_static = kc_text_present(jr->instance_id);
    kc_str_t new_id = generate_member_id(g, is_static ? jr->instance_id : jr->client_id, rq);
    if (new_id.len < 0) {
        reply_join_oom(rq, KC_STR_EMPTY);
        return;
    }
    if (is_static) {
        member_t *old = kc_classic_find_static(g, jr->instance_id);
        if (old) {
            update_static_member_then_rebalance(g, old, jr, new_id, rq);
        } else {
            KC_DEBUG("group", "group %.*s: static member with instance id %.*s joins in %s as %.*s",
                     SV(g->id), SV(jr->instance_id), kc_group_state_name(g->state), SV(new_id));
            add_member_then_rebalance(g, jr, new_id, rq);
        }
        return;
    }
    if (jr->version >= 4) {
        /* KIP-394: hand out the id and wait for the member to come back with it. */
        if (kc_strmap_reserve(&g->pending, 1) != 0 ||
            kc_heap_reserve(&g->pheap, g->pending.n + 1) != 0) {
            reply_join_oom(rq, KC_STR_EMPTY);
            return;
        }
        pending_t *p = calloc(1, sizeof(*p) + kc_text_space(new_id));
        if (!p) {
            reply_join_oom(rq, KC_STR_EMPTY);
            return;
        }
        char *cur = (char *)(p + 1);
        p->id = kc_text_put(&cur, new_id);
        p->deadline = gm->now + jr->session_timeout_ms;
        kc_heap_node_init(&p->node);
        kc_strmap_put(&g->pending, p->id.p, (size_t)p->id.len, p);
        kc_heap_push(&g->pheap, &p->node, p->deadline); /* reserved */
        arm(g, p->deadline);
        KC_DEBUG("group", "group %.*s: dynamic member joins in %s; requesting it to rejoin as %.*s",
                 SV(g->id), kc_group_state_name(g->state), SV(new_id));
        reply_join_error(rq, KC_ERR_MEMBER_ID_REQUIRED, new_id);
        return;
    }
    KC_DEBUG("group", "group %.*s: dynamic member joins in %s as %.*s", SV(g->id),
             kc_group_state_name(g->state), SV(new_id));
    add_member_then_rebalance(g, jr, new_id, rq);
}

static void join_existing_member(group_t *g, const join_req_t *jr, req_t *rq)
{
    kc_str_t id = jr->member_id;
    if (g->state == KC_GROUP_DEAD) {
        reply_join_error(rq, KC_ERR_COORDINATOR_NOT_AVAILABLE, id);
        return;
    }
    if (!supports_protocols(g, jr->req->protocol_type, jr->req)) {
        reply_join_error(rq, KC_ERR_INCONSISTENT_GROUP_PROTOCOL, id);
        return;
    }
    if (find_pending(g, id)) {
        if (kc_text_present(jr->instance_id)) {
            /* Kafka throws IllegalStateException: a pending member is never static. */
            reply_join_error(rq, KC_ERR_UNKNOWN_SERVER_ERROR, id);
            return;
        }
        KC_DEBUG("group", "group %.*s: pending member %.*s joins in %s", SV(g->id), SV(id),
                 kc_group_state_name(g->state));
        add_member_then_rebalance(g, jr, id, rq);
        return;
    }
    int16_t err = kc_classic_validate_member(g, id, jr->instance_id);
    if (err) {
        kc_join_group_response_t r;
        kc_join_group_response_init(&r);
        r.error_code = err;
        r.member_id = id;
        r.protocol_type = KC_STR_NULL;
        r.protocol_name = KC_STR_NULL;
        reply_join(rq, &r);
        return;
    }
    member_t *m = kc_classic_find_member(g, id);
    switch (g->state) {
    case KC_GROUP_PREPARING_REBALANCE:
        update_member_then_rebalance(g, m, jr, "member is joining group:", KC_RB_OTHER, rq);
        return;
    case KC_GROUP_COMPLETING_REBALANCE:
        if (protoset_matches(m->protos, jr->req)) {
            /* The member lost its JoinGroup answer: send the current generation again. */
            kc_join_group_response_member_t *members = NULL;
            int32_t n = 0;
            if (kc_classic_is_leader(g, m) && join_members(g, &members, &n) != 0) {
                reply_join_oom(rq, id);
                return;
            }
            kc_join_group_response_t r;
            join_result(g, m, &r, members, n, g->leader ? g->leader->id : KC_STR_NULL, false);
            reply_join(rq, &r);
            free(members);
        } else {
            update_member_then_rebalance(g, m, jr, "updating metadata for member",
                                         KC_RB_METADATA_CHANGED, rq);
        }
        return;
    case KC_GROUP_STABLE:
        if (kc_classic_is_leader(g, m)) {
            /* The leader may rejoin to force a rebalance (e.g. topic metadata changed). */
            update_member_then_rebalance(g, m, jr,
                                         "leader re-joining group:", KC_RB_LEADER_REJOINED, rq);
        } else if (!protoset_matches(m->protos, jr->req)) {
            update_member_then_rebalance(g, m, jr, "updating metadata for member",
                                         KC_RB_METADATA_CHANGED, rq);
        } else {
            kc_join_group_response_t r;
            join_result(g, m, &r, NULL, 0, g->leader ? g->leader->id : KC_STR_NULL, false);
            reply_join(rq, &r);
        }
        return;
    default:
        KC_WARN("group", "group %.*s: member %.*s rejoins in unexpected state %s", SV(g->id),
                SV(id), kc_group_state_name(g->state));
        reply_join_error(rq, KC_ERR_UNKNOWN_MEMBER_ID, id);
        return;
    }
}

static void do_join(kc_gm_t *gm, const join_req_t *jr, req_t *rq)
{
    const kc_join_group_request_t *req = jr->req;
    /* GroupCoordinatorService.joinGroup's checks. */
    if (!kc_text_set(req->group_id)) {
        reply_join_error(rq, KC_ERR_INVALID_GROUP_ID, jr->member_id);
        return;
    }
    if (jr->session_timeout_ms < gm->cfg.min_session_timeout_ms ||
        jr->session_timeout_ms > gm->cfg.max_session_timeout_ms) {
        reply_join_error(rq, KC_ERR_INVALID_SESSION_TIMEOUT, jr->member_id);
        return;
    }
    /* A member whose protocol metadata cannot fit in any GroupMetadata record: Kafka takes the
     * JoinGroup and fails every SyncGroup of the group (its record is too large), forever;
     * kcoord refuses the JoinGroup at once, with the error that SyncGroup would get, and
     * keeps nothing of it. */
    size_t smallest = SIZE_MAX;
    for (int32_t i = 0; i < req->protocols.n; i++) {
        size_t len =
            req->protocols.v[i].metadata.len > 0 ? (size_t)req->protocols.v[i].metadata.len : 0;
        if (len < smallest)
            smallest = len;
    }
    if (req->protocols.n > 0 && kc_manager_record_bytes(0, smallest) > (size_t)record_max(gm)) {
        char why[200];
        snprintf(why, sizeof(why),
                 "a JoinGroup with %zu bytes of protocol metadata: no GroupMetadata record of at "
                 "most message.max.bytes (%d) can hold it",
                 smallest, (int)record_max(gm));
        refused(gm, KC_GM_REFUSED_RECORD_SIZE, req->group_id, why);
        reply_join_error(rq, KC_ERR_UNKNOWN_SERVER_ERROR, jr->member_id);
        return;
    }
    bool unknown_member = !kc_text_set(jr->member_id);
    /* An empty consumer group of this id becomes a classic group (the manager's conversion
     * rules; a consumer group with members took the JoinGroup in kc_gm_join). */
    int16_t conv = kc_manager_classic_join(gm, req->group_id, unknown_member);
    if (conv == KC_ERR_COORDINATOR_NOT_AVAILABLE) {
        reply_join_oom(rq, jr->member_id);
        return;
    }
    if (conv != 0) {
        reply_join_error(rq, conv, jr->member_id);
        return;
    }
    group_t *g = kc_classic_find_group(gm, req->group_id);
    bool created = false;
    if (!g) {
        if (!unknown_member) {
            reply_join_error(rq, KC_ERR_UNKNOWN_MEMBER_ID, jr->member_id);
            return;
        }
        g = kc_classic_group_create(gm, req->group_id);
        if (!g) {
            reply_join_oom(rq, jr->member_id);
            return;
        }
        created = true;
    }

    if (!accept_joining_member(g, jr->member_id)) {
        KC_DEBUG("group", "group %.*s is full (group.max.size %d); rejecting member %.*s",
                 SV(g->id), (int)gm->cfg.max_size, SV(jr->member_id));
        group_remove_id(g, jr->member_id, rq);
        reply_join_error(rq, KC_ERR_GROUP_MAX_SIZE_REACHED, KC_STR_EMPTY);
    } else if (unknown_member) {
        join_new_member(g, jr, rq);
    } else {
        join_existing_member(g, jr, rq);
    }

    if (created) {
        if (rq->oom && g->n_members == 0 && g->pending.n == 0 && g->state == KC_GROUP_EMPTY) {
            kc_classic_group_destroy(gm, g, KC_ERR_COORDINATOR_NOT_AVAILABLE, rq);
        } else {
            /* A group born from JoinGroup is written at once (Kafka's empty record). */
            kc_classic_emit_group_metadata(g, false, true, NULL);
        }
    }
}

int kc_classic_join(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_join_group_request_t *req,
                    kc_str_t client_id, kc_str_t client_host, void *waiter, kc_arena_t *a,
                    kc_join_group_response_t *resp)
{
    kc_join_group_response_init(resp);
    req_t rq_, *rq = &rq_;
    begin_request(gm, rq, now, version, waiter, a, resp, NULL);
    join_req_t jr = {
        .req = req,
        .version = version,
        .member_id = req->member_id.len >= 0 ? req->member_id : KC_STR_EMPTY,
        .instance_id = version >= 5 ? req->group_instance_id : KC_STR_NULL,
        .client_id = client_id,
        .client_host = client_host.len >= 0 ? client_host : KC_STR_EMPTY,
        .reason = version >= 8 && req->reason.len >= 0 ? req->reason : KC_STR_LIT("not provided"),
        .session_timeout_ms = req->session_timeout_ms,
        /* Before v1 there was no rebalance timeout: the session timeout serves. */
        .rebalance_timeout_ms = version == 0 ? req->session_timeout_ms : req->rebalance_timeout_ms,
    };
    do_join(gm, &jr, rq);
    return end_request(rq);
}

/* ---- SyncGroup -------------------------------------------------------------------------- */

static bool protocol_inconsistent(kc_str_t req, kc_str_t group)
{
    return req.len >= 0 && group.len >= 0 && !kc_str_eq(req, group);
}

/* Kafka's removePendingSyncMember. */
static void remove_pending_sync_member(group_t *g, member_t *m)
{
    if (m->pending_sync) {
        m->pending_sync = false;
        g->n_pending_sync--;
    }
    if (g->n_pending_sync == 0)
        g->sync_deadline = NEVER;
}

/* The leader's SyncGroup in CompletingRebalance: store every assignment (an empty one for a
 * member the leader left out), write the record, answer the parked members, become Stable. */
static void leader_sync(group_t *g, member_t *leader, kc_bytes_t *assign, uint8_t **copies,
                        req_t *rq)
{
    KC_DEBUG("group", "group %.*s: assignment received from leader %.*s for generation %d",
             SV(g->id), SV(leader->id), (int)g->generation);
    int rc = kc_classic_emit_group_metadata(g, false, false, assign);
    if (rc != 0) {
        /* Kafka's failed-append path: a record too large is MESSAGE_TOO_LARGE there, which
         * appendGroupMetadataErrorToResponseError turns into UNKNOWN_SERVER_ERROR. */
        int32_t i = 0;
        for (member_t *m = g->head; m; m = m->next, i++)
            free(copies[i]);
        reset_and_propagate_error(
            g, rc == -2 ? KC_ERR_UNKNOWN_SERVER_ERROR : KC_ERR_COORDINATOR_NOT_AVAILABLE, rq);
        maybe_prepare_rebalance_or_complete_join(g,
                                                 rc == -2 ? "the group's record would exceed "
                                                            "message.max.bytes"
                                                          : "error storing the group assignment",
                                                 rq);
        return;
    }
    int32_t i = 0;
    for (member_t *m = g->head; m; m = m->next, i++) {
        free(m->assignment);
        m->assignment = copies[i];
        m->assignment_len = assign[i].len;
    }
    propagate_assignment(g, 0, rq);
    char reason[120];
    snprintf(reason, sizeof(reason), "assignment of generation %d received from the leader",
             (int)g->generation);
    kc_classic_set_state(g, KC_GROUP_STABLE, reason);
    rb_finish(g, "stable");
}

static void do_sync(kc_gm_t *gm, int16_t version, const kc_sync_group_request_t *req, req_t *rq)
{
    /* KafkaApis: from v5 the protocol type and name are mandatory. */
    if (version >= 5 && (req->protocol_type.len < 0 || req->protocol_name.len < 0)) {
        reply_sync_error(rq, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
        return;
    }
    if (!kc_text_set(req->group_id)) {
        reply_sync_error(rq, KC_ERR_INVALID_GROUP_ID);
        return;
    }
    /* The manager sent a SyncGroup for a consumer group to the consumer machine. */
    group_t *g = kc_classic_find_group(gm, req->group_id);
    if (!g || g->state == KC_GROUP_EMPTY) {
        reply_sync_error(rq, KC_ERR_UNKNOWN_MEMBER_ID);
        return;
    }
    kc_str_t instance = version >= 3 ? req->group_instance_id : KC_STR_NULL;
    kc_str_t ptype = version >= 5 ? req->protocol_type : KC_STR_NULL;
    kc_str_t pname = version >= 5 ? req->protocol_name : KC_STR_NULL;
    int16_t err = 0;
    if (g->state == KC_GROUP_DEAD)
        err = KC_ERR_COORDINATOR_NOT_AVAILABLE;
    else if ((err = kc_classic_validate_member(g, req->member_id, instance)) != 0)
        ;
    else if (req->generation_id != g->generation)
        err = KC_ERR_ILLEGAL_GENERATION;
    else if (protocol_inconsistent(ptype, kc_classic_ptype_view(g)) ||
             protocol_inconsistent(pname, kc_classic_pname_view(g)))
        err = KC_ERR_INCONSISTENT_GROUP_PROTOCOL;
    if (err) {
        reply_sync_error(rq, err);
        return;
    }
    member_t *m = kc_classic_find_member(g, req->member_id);

    if (g->state == KC_GROUP_PREPARING_REBALANCE) {
        reply_sync_error(rq, KC_ERR_REBALANCE_IN_PROGRESS);
        return;
    }
    if (g->state == KC_GROUP_STABLE) {
        remove_pending_sync_member(g, m);
        kc_sync_group_response_t r;
        kc_sync_group_response_init(&r);
        r.protocol_type = kc_classic_ptype_view(g);
        r.protocol_name = kc_classic_pname_view(g);
        r.assignment =
            (kc_bytes_t){m->assignment ? m->assignment : (const uint8_t *)"", m->assignment_len};
        reply_sync(rq, &r);
        return;
    }
    if (g->state != KC_GROUP_COMPLETING_REBALANCE) {
        reply_sync_error(rq, KC_ERR_UNKNOWN_SERVER_ERROR);
        return;
    }

    /* CompletingRebalance: the leader's assignments are copied before anything changes. */
    kc_bytes_t *assign = NULL;
    uint8_t **copies = NULL;
    bool leader = kc_classic_is_leader(g, m);
    if (leader) {
        size_t n = (size_t)g->n_members;
        assign = calloc(n ? n : 1, sizeof(*assign));
        copies = calloc(n ? n : 1, sizeof(*copies));
        kc_strmap_t by_member;
        kc_strmap_init(&by_member);
        bool oom = !assign || !copies;
        int32_t na = req->assignments.n > 0 ? req->assignments.n : 0;
        if (!oom && na > 0 && kc_strmap_reserve(&by_member, (size_t)na) != 0)
            oom = true;
        for (int32_t i = 0; !oom && i < na; i++) {
            const kc_sync_group_request_assignment_t *sa = &req->assignments.v[i];
            if (sa->member_id.len >= 0) /* the last one for a member wins, as in a HashMap */
                kc_strmap_put(&by_member, sa->member_id.p, (size_t)sa->member_id.len, (void *)sa);
        }
        int32_t i = 0;
        int missing = 0;
        for (member_t *x = g->head; !oom && x; x = x->next, i++) {
            const kc_sync_group_request_assignment_t *sa =
                kc_strmap_get(&by_member, x->id.p, (size_t)x->id.len);
            int32_t len = sa && sa->assignment.len > 0 ? sa->assignment.len : 0;
            if (!sa)
                missing++;
            if (len > 0) {
                copies[i] = malloc((size_t)len);
                if (!copies[i]) {
                    oom = true;
                    break;
                }
                memcpy(copies[i], sa->assignment.p, (size_t)len);
            }
            assign[i] = (kc_bytes_t){copies[i] ? copies[i] : (const uint8_t *)"", len};
        }
        kc_strmap_free(&by_member);
        if (oom) {
            for (int32_t j = 0; copies && j < g->n_members; j++)
                free(copies[j]);
            free(copies);
            free(assign);
            rq->oom = true;
            reply_sync_error(rq, KC_ERR_COORDINATOR_NOT_AVAILABLE);
            return;
        }
        if (missing)
            KC_WARN("group", "group %.*s: empty assignment for %d members of generation %d",
                    SV(g->id), missing, (int)g->generation);
    }

    park_sync(g, m, rq);
    remove_pending_sync_member(g, m);
    if (leader)
        leader_sync(g, m, assign, copies, rq);
    free(copies);
    free(assign);
}

int kc_classic_sync(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_sync_group_request_t *req,
                    void *waiter, kc_arena_t *a, kc_sync_group_response_t *resp)
{
    kc_sync_group_response_init(resp);
    req_t rq_, *rq = &rq_;
    begin_request(gm, rq, now, version, waiter, a, NULL, resp);
    do_sync(gm, version, req, rq);
    return end_request(rq);
}

/* ---- Heartbeat -------------------------------------------------------------------------- */

void kc_classic_heartbeat(kc_gm_t *gm, kc_time_t now, int16_t version,
                          const kc_heartbeat_request_t *req, kc_heartbeat_response_t *resp)
{
    kc_classic_set_time(gm, now);
    kc_heartbeat_response_init(resp);
    if (!kc_text_set(req->group_id)) {
        resp->error_code = KC_ERR_INVALID_GROUP_ID;
        return;
    }
    group_t *g = kc_classic_find_group(gm, req->group_id);
    if (!g) { /* (a consumer group's Heartbeat went to the consumer machine) */
        resp->error_code = KC_ERR_UNKNOWN_MEMBER_ID;
        return;
    }
    if (g->state == KC_GROUP_DEAD) {
        resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    kc_str_t instance = version >= 3 ? req->group_instance_id : KC_STR_NULL;
    int16_t err = kc_classic_validate_member(g, req->member_id, instance);
    if (!err && req->generation_id != g->generation)
        err = KC_ERR_ILLEGAL_GENERATION;
    if (err) {
        resp->error_code = err;
        return;
    }
    member_t *m = kc_classic_find_member(g, req->member_id);
    switch (g->state) {
    case KC_GROUP_EMPTY:
        resp->error_code = KC_ERR_UNKNOWN_MEMBER_ID;
        return;
    case KC_GROUP_PREPARING_REBALANCE:
        kc_classic_set_hb(g, m, m->session_timeout_ms);
        resp->error_code = KC_ERR_REBALANCE_IN_PROGRESS;
        return;
    case KC_GROUP_COMPLETING_REBALANCE:
    case KC_GROUP_STABLE:
        /* Heartbeats after the JoinGroup answer, before the sync, are normal (KAFKA-10134). */
        kc_classic_set_hb(g, m, m->session_timeout_ms);
        return;
    case KC_GROUP_DEAD:
        break;
    }
    resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
}

/* ---- LeaveGroup ------------------------------------------------------------------------- */

void kc_classic_leave(kc_gm_t *gm, kc_time_t now, int16_t version,
                      const kc_leave_group_request_t *req, kc_arena_t *a,
                      kc_leave_group_response_t *resp)
{
    kc_classic_set_time(gm, now);
    kc_leave_group_response_init(resp);
    if (!kc_text_set(req->group_id)) {
        resp->error_code = KC_ERR_INVALID_GROUP_ID;
        return;
    }
    /* LeaveGroupRequest.normalizedData: v0-2 name one member by id. */
    kc_member_identity_t single;
    const kc_member_identity_t *ids;
    int32_t n;
    if (version < 3) {
        single.member_id = req->member_id;
        single.group_instance_id = KC_STR_NULL;
        single.reason = KC_STR_NULL;
        ids = &single;
        n = 1;
    } else {
        ids = req->members.v;
        n = req->members.n > 0 ? req->members.n : 0;
    }
    kc_member_response_t *out = NULL;
    if (n > 0) {
        out = kc_arena_alloc(a, (size_t)n * sizeof(*out));
        if (!out) {
            resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
            return;
        }
    }
    resp->members.v = out;
    resp->members.n = n;
    for (int32_t i = 0; i < n; i++) {
        out[i].member_id = ids[i].member_id.len >= 0 ? ids[i].member_id : KC_STR_EMPTY;
        out[i].group_instance_id = version >= 3 ? ids[i].group_instance_id : KC_STR_NULL;
        out[i].error_code = 0;
    }

    group_t *g = kc_classic_find_group(gm, req->group_id);
    if (!g && kc_manager_is_consumer(gm, req->group_id)) {
        /* GroupMetadataManager.classicGroupLeaveToConsumerGroup: the members named are fenced
         * (the admin client's "remove members" of a consumer group). */
        int16_t *errs = n > 0 ? kc_arena_alloc(a, (size_t)n * sizeof(*errs)) : NULL;
        kc_member_identity_t *idv = n > 0 ? kc_arena_alloc(a, (size_t)n * sizeof(*idv)) : NULL;
        if (n > 0 && (!errs || !idv)) {
            resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
            resp->members.n = 0;
            return;
        }
        for (int32_t i = 0; i < n; i++) {
            idv[i] = ids[i];
            idv[i].member_id = out[i].member_id;
            idv[i].group_instance_id = out[i].group_instance_id;
        }
        kc_manager_classic_leave(gm, req->group_id, idv, n, errs);
        for (int32_t i = 0; i < n; i++)
            out[i].error_code = errs[i];
    } else if (!g) {
        /* GroupCoordinatorService: an unknown group answers every member UNKNOWN_MEMBER_ID. */
        for (int32_t i = 0; i < n; i++)
            out[i].error_code = KC_ERR_UNKNOWN_MEMBER_ID;
    } else if (g->state == KC_GROUP_DEAD) {
        resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        resp->members.n = 0;
        return;
    } else {
        int valid = 0;
        char left[240];
        int len = 0;
        left[0] = '\0';
        for (int32_t i = 0; i < n; i++) {
            kc_str_t mid = out[i].member_id;
            kc_str_t inst = out[i].group_instance_id;
            kc_str_t why =
                version >= 5 && ids[i].reason.len >= 0 ? ids[i].reason : KC_STR_LIT("not provided");
            member_t *m = NULL;
            int16_t err = 0;
            if (!kc_text_set(mid)) {
                /* Admin removal of a static member by its instance id. */
                m = kc_classic_find_static(g, inst);
                if (!m)
                    err = KC_ERR_UNKNOWN_MEMBER_ID;
            } else if (find_pending(g, mid)) {
                KC_DEBUG("group", "group %.*s: pending member %.*s left; client reason: %.*s",
                         SV(g->id), SV(mid), SV(why));
                rb_start(g, KC_RB_MEMBER_LEFT, mid, client_reason(version, 5, ids[i].reason));
                pending_remove(g, mid);
            } else {
                err = kc_classic_validate_member(g, mid, inst);
                if (!err)
                    m = kc_classic_find_member(g, mid);
            }
            if (m) {
                KC_DEBUG("group", "group %.*s: member %.*s left; client reason: %.*s", SV(g->id),
                         SV(m->id), SV(why));
                rb_start(g, KC_RB_MEMBER_LEFT, m->id, client_reason(version, 5, ids[i].reason));
                if (len >= 0 && (size_t)len < sizeof(left))
                    len += snprintf(left + len, sizeof(left) - (size_t)len, "%s%.*s",
                                    valid ? ", " : "", SV(m->id));
                group_remove(g, m, NULL);
            }
            out[i].error_code = err;
            if (!err)
                valid++;
        }
        if (valid > 0) {
            char reason[300];
            snprintf(reason, sizeof(reason), "explicit LeaveGroup request for (%s) members", left);
            if (g->state == KC_GROUP_STABLE || g->state == KC_GROUP_COMPLETING_REBALANCE)
                maybe_prepare_rebalance_or_complete_join(g, reason, NULL);
            else if (g->state == KC_GROUP_PREPARING_REBALANCE)
                maybe_complete_join_phase(g, NULL);
        }
    }
    /* LeaveGroupResponse below v3 carries the single member's error at the top level. */
    if (version < 3 && n > 0)
        resp->error_code = out[0].error_code;
}

/* ---- For the manager (classic.h) ----------------------------------------------------------- */

int64_t kc_classic_timers(kc_gm_t *gm, kc_ghead_t *h, int64_t *budget)
{
    (void)gm;
    group_t *g = kc_heap_entry(h, group_t, gh);
    run_group_timers(g, budget, NULL);
    return group_earliest(g);
}

void kc_classic_destroy(kc_gm_t *gm, kc_ghead_t *h)
{
    kc_classic_group_destroy(gm, kc_heap_entry(h, group_t, gh), KC_ERR_COORDINATOR_NOT_AVAILABLE,
                             NULL);
}

int kc_classic_kind(const kc_gm_t *gm, kc_str_t id)
{
    const group_t *g = kc_classic_find_group(gm, id);
    if (!g)
        return KC_CLASSIC_NONE;
    if (g->state != KC_GROUP_EMPTY)
        return KC_CLASSIC_ACTIVE;
    /* ClassicGroup.isSimpleGroup */
    return !g->ptype && g->pending.n == 0 ? KC_CLASSIC_SIMPLE : KC_CLASSIC_EMPTY;
}

void kc_classic_remove(kc_gm_t *gm, kc_time_t now, kc_str_t id, bool tombstone, const char *reason)
{
    kc_classic_set_time(gm, now);
    group_t *g = kc_classic_find_group(gm, id);
    if (!g)
        return;
    if (tombstone)
        kc_classic_delete_group(gm, g, reason, NULL);
    else
        kc_classic_group_destroy(gm, g, KC_ERR_COORDINATOR_NOT_AVAILABLE, NULL);
}
