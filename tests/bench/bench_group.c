/* bench_group.c - kcoord-bench's classic group members: JoinGroup, SyncGroup, Heartbeat.
 *
 * Each member behaves like a Kafka consumer using the classic protocol with the "range"
 * assignor, reduced to what the coordinator sees:
 *
 *   JOINING  JoinGroup with its member id ("" at first; at v4+ the coordinator answers
 *            MEMBER_ID_REQUIRED with an id, and the member joins again with it)
 *   SYNCING  the JoinGroup answer came: the leader decodes every member's subscription,
 *            computes a range assignment of the topic's partitions and sends it in its
 *            SyncGroup; the others send an empty SyncGroup
 *   STABLE   SyncGroup answered with an assignment: heartbeat every interval; a heartbeat or
 *            SyncGroup answered REBALANCE_IN_PROGRESS sends the member back to JOINING
 *
 * Completion. The bench knows how many members a group should have. A group is complete when
 * its leader's JoinGroup answer listed that many members (that generation is `full_gen`) and
 * every member holds a SyncGroup assignment of that generation. MEMBER_ID_REQUIRED and
 * REBALANCE_IN_PROGRESS are part of the protocol and are counted, not treated as errors; any
 * other error code is an error (the member backs off and joins again).
 *
 * Connections. The coordinator holds a JoinGroup until the join phase ends, and answers each
 * connection's requests in order (Kafka even stops reading a connection while one of its
 * requests is in progress), so a held JoinGroup must not sit in front of another member of the
 * same group on one connection. The join is therefore run in lanes of `size` connections: a
 * lane joins its groups one after another, member m on the lane's m-th connection. Heartbeats
 * of groups already complete share those connections, pipelined.
 *
 * Lifetime: kc_grpset_stop closes the timers and makes every later answer a no-op; the set is
 * freed by kc_grpset_free once the connections are closed (pending requests point at members).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "proto/errors.h"

enum { JOINING, WAIT_IDS, SYNCING, STABLE, BACKOFF, FAILED };
enum { ID_MAX = 255 };

typedef struct member_s {
    kc_grp_t *g;
    kc_bench_conn_t *conn;
    uv_timer_t timer; /* heartbeat interval, or the backoff before joining again */
    char id[ID_MAX + 1];
    int32_t generation; /* of the last JoinGroup answer */
    int32_t synced_gen; /* of the last SyncGroup assignment, -1 = none */
    int32_t hb_gen;     /* generation the heartbeat in flight was sent with */
    uint64_t hb_ms;     /* heartbeat interval */
    uint8_t state;
    bool timer_init, hb_inflight;
} member_t;

struct kc_grp_s {
    kc_grpset_t *set;
    char *name;
    member_t *members; /* room for size + 1 (the rolling join adds one) */
    int32_t nmembers, expected;
    int32_t full_gen;    /* generation whose leader saw all expected members, -1 = none yet */
    int32_t synced_full; /* members holding an assignment of full_gen */
    int32_t last_gen;
    int32_t have_ids; /* members that got their id (opts.id_barrier) */
    bool started, complete;
    size_t lane;
    uint64_t t_start, t_done;
};

struct kc_grpset_s {
    kc_bench_t *b;
    kc_grp_opts_t o;
    kc_grp_t *groups;
    size_t ngroups;
    int32_t size;
    kc_bench_conn_t **lanes; /* lane l has connections lanes[l*size .. l*size+size-1] */
    size_t nlanes;
    size_t *lane_next; /* next group of each lane */
    size_t pending;    /* groups that must still complete before *done */
    bool *done;
    bool stopping, leaving;
    size_t timers_open;
    uint8_t *meta; /* every member's subscription, encoded once */
    size_t meta_len;
    kc_arena_t scratch;
    kc_bench_stats_t *measure;
    kc_grp_counters_t ctr;
    /* kc_grpset_commit_all */
    size_t commit_next, commit_inflight, commit_window;
    int32_t commit_parts;
    kc_offset_commit_request_partition_t *commit_pv;
    kc_bench_stats_t *commit_st;
    bool *commit_done;
    int64_t commit_offset;
    /* kc_grpset_leave_all */
    size_t leave_next, leave_inflight, leave_window;
    kc_member_identity_t *leave_ids;
    int16_t v_leave;
    kc_bench_stats_t *leave_st;
    bool *leave_done;
};

static void send_join(member_t *m);

static uint64_t now_ns(void)
{
    return uv_hrtime();
}

static kc_str_t sv(const char *s)
{
    return kc_str_c(s);
}

/* ---- Completion -------------------------------------------------------------------------- */

static void start_group(kc_grpset_t *s, size_t gi);

static void check_complete(kc_grp_t *g)
{
    kc_grpset_t *s = g->set;
    if (g->complete || g->full_gen < 0 || g->synced_full < g->expected)
        return;
    g->complete = true;
    g->t_done = now_ns();
    uint64_t ms = (uint64_t)(s->o.hb_stable_s * 1000);
    for (int32_t i = 0; i < g->nmembers; i++)
        g->members[i].hb_ms = ms ? ms : 1;
    if (s->lanes != NULL) {
        size_t next = s->lane_next[g->lane] += s->nlanes;
        if (next < s->ngroups)
            start_group(s, next);
    }
    if (s->pending > 0 && --s->pending == 0 && s->done != NULL)
        *s->done = true;
}

static void recount(kc_grp_t *g)
{
    g->synced_full = 0;
    for (int32_t i = 0; i < g->nmembers; i++)
        if (g->members[i].synced_gen == g->full_gen)
            g->synced_full++;
    check_complete(g);
}

/* ---- Timers ------------------------------------------------------------------------------ */

static void on_timer_close(uv_handle_t *h)
{
    member_t *m = h->data;
    m->g->set->timers_open--;
}

static void ensure_timer(member_t *m)
{
    if (m->timer_init)
        return;
    uv_timer_init(m->g->set->b->loop, &m->timer);
    m->timer.data = m;
    m->timer_init = true;
    m->g->set->timers_open++;
}

static void on_backoff(uv_timer_t *t)
{
    member_t *m = t->data;
    if (!m->g->set->stopping && !m->g->set->leaving && m->state == BACKOFF)
        send_join(m);
}

static void backoff(member_t *m, uint64_t ms)
{
    m->state = BACKOFF;
    ensure_timer(m);
    uv_timer_start(&m->timer, on_backoff, ms, 0);
}

/* Count an unexpected error; a transport error ends the member. */
static void member_error(member_t *m, int code)
{
    kc_stats_error(&m->g->set->ctr.errors, code);
    if (code == KC_BENCH_ECONN || code == KC_BENCH_EDECODE) {
        m->state = FAILED;
        if (m->timer_init)
            uv_timer_stop(&m->timer);
        return;
    }
    if (code == KC_ERR_UNKNOWN_MEMBER_ID)
        m->id[0] = '\0';
    backoff(m, code == KC_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
                       code == KC_ERR_COORDINATOR_NOT_AVAILABLE || code == KC_ERR_NOT_COORDINATOR
                   ? 100
                   : 500);
}

static void rejoin(member_t *m)
{
    if (m->timer_init)
        uv_timer_stop(&m->timer);
    send_join(m);
}

/* ---- Heartbeat --------------------------------------------------------------------------- */

static void on_heartbeat(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    member_t *m = arg;
    kc_grpset_t *s = m->g->set;
    const kc_heartbeat_response_t *r = resp;
    (void)c;
    if (s->stopping)
        return;
    m->hb_inflight = false;
    if (s->leaving)
        return;
    s->ctr.heartbeats++;
    int code = err != 0 ? err : r->error_code;
    if (s->measure != NULL) {
        kc_stats_record(s->measure, now_ns() - sent_ns);
        if (code != 0 && code != KC_ERR_REBALANCE_IN_PROGRESS)
            kc_stats_error(s->measure, code);
    }
    if (code == 0)
        return;
    /* An answer for an older generation than the member's own no longer concerns it. */
    if (m->state != STABLE || m->hb_gen != m->synced_gen) {
        if (err != 0)
            member_error(m, code);
        return;
    }
    if (code == KC_ERR_REBALANCE_IN_PROGRESS) {
        s->ctr.rebalance_signals++;
        rejoin(m);
        return;
    }
    if (code == KC_ERR_ILLEGAL_GENERATION || code == KC_ERR_UNKNOWN_MEMBER_ID) {
        kc_stats_error(&s->ctr.errors, code);
        if (code == KC_ERR_UNKNOWN_MEMBER_ID)
            m->id[0] = '\0';
        rejoin(m);
        return;
    }
    if (err != 0)
        member_error(m, code);
    else
        kc_stats_error(&s->ctr.errors, code); /* keep heartbeating */
}

static void on_hb_timer(uv_timer_t *t)
{
    member_t *m = t->data;
    kc_grpset_t *s = m->g->set;
    if (s->stopping || s->leaving || m->state != STABLE)
        return;
    if (m->hb_inflight) {
        s->ctr.hb_late++;
        if (s->measure != NULL)
            s->ctr.hb_late_measured++;
        return;
    }
    if (uv_timer_get_repeat(&m->timer) != m->hb_ms)
        uv_timer_set_repeat(&m->timer, m->hb_ms);
    kc_heartbeat_request_t q;
    kc_heartbeat_request_init(&q);
    q.group_id = sv(m->g->name);
    q.generation_id = m->synced_gen;
    q.member_id = sv(m->id);
    m->hb_gen = m->synced_gen;
    if (kc_bench_send(m->conn, KC_API_HEARTBEAT, s->o.v_heartbeat, &q, on_heartbeat, m) != 0) {
        member_error(m, KC_BENCH_ECONN);
        return;
    }
    m->hb_inflight = true;
}

/* ---- SyncGroup --------------------------------------------------------------------------- */

static void on_sync(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    member_t *m = arg;
    kc_grp_t *g = m->g;
    kc_grpset_t *s = g->set;
    const kc_sync_group_response_t *r = resp;
    (void)c;
    (void)sent_ns;
    if (s->stopping || s->leaving)
        return;
    s->ctr.syncs++;
    int code = err != 0 ? err : r->error_code;
    if (code == KC_ERR_REBALANCE_IN_PROGRESS) {
        s->ctr.rebalance_signals++;
        send_join(m);
        return;
    }
    if (code != 0) {
        member_error(m, code);
        return;
    }
    m->synced_gen = m->generation;
    m->state = STABLE;
    ensure_timer(m);
    uv_timer_start(&m->timer, on_hb_timer, m->hb_ms, m->hb_ms);
    if (m->synced_gen == g->full_gen) {
        g->synced_full++;
        check_complete(g);
    }
}

typedef struct ranked_s {
    kc_str_t id;
    int32_t index; /* in the JoinGroup answer */
    bool subscribed;
} ranked_t;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    int32_t n = x->id.len < y->id.len ? x->id.len : y->id.len;
    int c = n > 0 ? memcmp(x->id.p, y->id.p, (size_t)n) : 0;
    return c != 0 ? c : (x->id.len > y->id.len) - (x->id.len < y->id.len);
}

/* The leader's part: decode the subscriptions, assign the topic's partitions by range (members
 * sorted by id, as Kafka's RangeAssignor does), and send the SyncGroup. */
static int leader_sync(member_t *m, const kc_join_group_response_t *r, kc_sync_group_request_t *q)
{
    kc_grpset_t *s = m->g->set;
    kc_arena_t *a = &s->scratch;
    int32_t n = r->members.n;
    ranked_t *rk = kc_arena_alloc(a, sizeof(*rk) * (size_t)(n > 0 ? n : 1));
    kc_sync_group_request_assignment_t *as =
        kc_arena_alloc(a, sizeof(*as) * (size_t)(n > 0 ? n : 1));
    size_t *off = kc_arena_alloc(a, sizeof(*off) * (size_t)(n > 0 ? n : 1) * 2);
    if (rk == NULL || as == NULL || off == NULL)
        return -1;
    int32_t nsub = 0;
    for (int32_t i = 0; i < n; i++) {
        const kc_join_group_response_member_t *jm = &r->members.v[i];
        rk[i] = (ranked_t){.id = jm->member_id, .index = i};
        kc_reader_t rd;
        kc_rd_init(&rd, jm->metadata.p, jm->metadata.len > 0 ? (size_t)jm->metadata.len : 0);
        int16_t ver = kc_rd_i16(&rd);
        kc_consumer_protocol_subscription_t sub;
        if (kc_consumer_protocol_subscription_decode(&rd, a, ver > 3 ? 3 : ver, &sub) == 0)
            for (int32_t t = 0; t < sub.topics.n; t++)
                if (kc_str_eq_c(sub.topics.v[t], s->o.topic))
                    rk[i].subscribed = true;
        nsub += rk[i].subscribed;
    }
    qsort(rk, (size_t)n, sizeof(*rk), cmp_ranked);
    int32_t per = nsub > 0 ? s->o.partitions / nsub : 0;
    int32_t extra = nsub > 0 ? s->o.partitions % nsub : 0;
    kc_writer_t w;
    kc_wr_init(&w);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t cnt = 0, start = 0;
        if (rk[i].subscribed) {
            start = k * per + (k < extra ? k : extra);
            cnt = per + (k < extra ? 1 : 0);
            k++;
        }
        int32_t *parts = kc_arena_alloc(a, sizeof(int32_t) * (size_t)(cnt > 0 ? cnt : 1));
        if (parts == NULL) {
            kc_wr_free(&w);
            return -1;
        }
        for (int32_t p = 0; p < cnt; p++)
            parts[p] = start + p;
        kc_consumer_protocol_assignment_topic_partition_t tp = {.topic = sv(s->o.topic)};
        tp.partitions.v = parts;
        tp.partitions.n = cnt;
        kc_consumer_protocol_assignment_t asg;
        kc_consumer_protocol_assignment_init(&asg);
        asg.assigned_partitions.v = &tp;
        asg.assigned_partitions.n = cnt > 0 ? 1 : 0;
        off[2 * i] = w.len;
        kc_wr_i16(&w, 0);
        kc_consumer_protocol_assignment_encode(&w, 0, &asg);
        off[2 * i + 1] = w.len;
    }
    if (w.err) {
        kc_wr_free(&w);
        return -1;
    }
    for (int32_t i = 0; i < n; i++) {
        as[i].member_id = rk[i].id;
        as[i].assignment.p = w.buf + off[2 * i];
        as[i].assignment.len = (int32_t)(off[2 * i + 1] - off[2 * i]);
    }
    q->assignments.v = as;
    q->assignments.n = n;
    int rc = kc_bench_send(m->conn, KC_API_SYNC_GROUP, s->o.v_sync, q, on_sync, m);
    kc_wr_free(&w);
    return rc;
}

/* ---- JoinGroup --------------------------------------------------------------------------- */

static void on_join(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    member_t *m = arg;
    kc_grp_t *g = m->g;
    kc_grpset_t *s = g->set;
    const kc_join_group_response_t *r = resp;
    (void)c;
    (void)sent_ns;
    if (s->stopping || s->leaving)
        return;
    s->ctr.joins++;
    int code = err != 0 ? err : r->error_code;
    if (code == KC_ERR_MEMBER_ID_REQUIRED) {
        s->ctr.member_id_required++;
        if (r->member_id.len <= 0 || r->member_id.len > ID_MAX) {
            member_error(m, KC_BENCH_EDECODE);
            return;
        }
        memcpy(m->id, r->member_id.p, (size_t)r->member_id.len);
        m->id[r->member_id.len] = '\0';
        if (!s->o.id_barrier || g->have_ids >= g->nmembers) {
            send_join(m);
            return;
        }
        m->state = WAIT_IDS;
        if (++g->have_ids == g->nmembers)
            for (int32_t k = 0; k < g->nmembers; k++)
                if (g->members[k].state == WAIT_IDS)
                    send_join(&g->members[k]);
        return;
    }
    if (code != 0) {
        member_error(m, code);
        return;
    }
    if (r->member_id.len <= 0 || r->member_id.len > ID_MAX) {
        member_error(m, KC_BENCH_EDECODE);
        return;
    }
    memcpy(m->id, r->member_id.p, (size_t)r->member_id.len);
    m->id[r->member_id.len] = '\0';
    m->generation = r->generation_id;
    m->state = SYNCING;
    if (r->generation_id > g->last_gen) {
        g->last_gen = r->generation_id;
        s->ctr.generations++;
    }
    kc_sync_group_request_t q;
    kc_sync_group_request_init(&q);
    q.group_id = sv(g->name);
    q.generation_id = m->generation;
    q.member_id = sv(m->id);
    q.protocol_type = KC_STR_LIT("consumer");
    q.protocol_name = KC_STR_LIT("range");
    int rc;
    if (kc_str_eq_c(r->leader, m->id)) {
        if (r->members.n == g->expected) {
            g->full_gen = m->generation;
            recount(g);
        }
        rc = leader_sync(m, r, &q);
        kc_arena_reset(&s->scratch);
    } else {
        rc = kc_bench_send(m->conn, KC_API_SYNC_GROUP, s->o.v_sync, &q, on_sync, m);
    }
    if (rc != 0)
        member_error(m, KC_BENCH_ECONN);
}

static void send_join(member_t *m)
{
    kc_grpset_t *s = m->g->set;
    kc_join_group_request_protocol_t proto = {
        .name = KC_STR_LIT("range"),
        .metadata = {.p = s->meta, .len = (int32_t)s->meta_len},
    };
    kc_join_group_request_t q;
    kc_join_group_request_init(&q);
    q.group_id = sv(m->g->name);
    q.session_timeout_ms = s->o.session_ms;
    q.rebalance_timeout_ms = s->o.rebalance_ms;
    q.member_id = sv(m->id);
    q.protocol_type = KC_STR_LIT("consumer");
    q.protocols.v = &proto;
    q.protocols.n = 1;
    m->state = JOINING;
    if (kc_bench_send(m->conn, KC_API_JOIN_GROUP, s->o.v_join, &q, on_join, m) != 0)
        member_error(m, KC_BENCH_ECONN);
}

/* ---- The set ----------------------------------------------------------------------------- */

kc_grpset_t *kc_grpset_new(kc_bench_t *b, char **names, size_t ngroups, int32_t size,
                           const kc_grp_opts_t *opts)
{
    kc_grpset_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->b = b;
    s->o = *opts;
    s->size = size;
    s->ngroups = ngroups;
    kc_arena_init(&s->scratch);
    s->groups = calloc(ngroups ? ngroups : 1, sizeof(*s->groups));
    if (s->groups == NULL)
        goto fail;
    uint64_t hb_ms = (uint64_t)(opts->hb_joining_s * 1000);
    for (size_t i = 0; i < ngroups; i++) {
        kc_grp_t *g = &s->groups[i];
        g->set = s;
        g->name = strdup(names[i]);
        g->members = calloc((size_t)size + 1, sizeof(member_t));
        if (g->name == NULL || g->members == NULL)
            goto fail;
        g->nmembers = size;
        g->expected = size;
        g->full_gen = -1;
        g->last_gen = -1;
        for (int32_t k = 0; k < size + 1; k++) {
            g->members[k].g = g;
            g->members[k].synced_gen = -1;
            g->members[k].generation = -1;
            g->members[k].hb_ms = hb_ms ? hb_ms : 1;
        }
    }
    /* The subscription every member sends: ConsumerProtocolSubscription v1, one topic. */
    kc_str_t topic = sv(opts->topic);
    kc_consumer_protocol_subscription_t sub;
    kc_consumer_protocol_subscription_init(&sub);
    sub.topics.v = &topic;
    sub.topics.n = 1;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, 1);
    kc_consumer_protocol_subscription_encode(&w, 1, &sub);
    if (w.err) {
        kc_wr_free(&w);
        goto fail;
    }
    s->meta = kc_wr_steal(&w, &s->meta_len);
    return s;
fail:
    kc_grpset_free(s);
    return NULL;
}

void kc_grpset_stop(kc_grpset_t *s)
{
    s->stopping = true;
    for (size_t i = 0; i < s->ngroups; i++)
        for (int32_t k = 0; k < s->size + 1; k++) {
            member_t *m = &s->groups[i].members[k];
            if (m->timer_init && !uv_is_closing((uv_handle_t *)&m->timer))
                uv_close((uv_handle_t *)&m->timer, on_timer_close);
        }
}

void kc_grpset_free(kc_grpset_t *s)
{
    if (s == NULL)
        return;
    if (s->timers_open > 0) /* stop was not called or the loop did not run: leak, not crash */
        return;
    for (size_t i = 0; s->groups != NULL && i < s->ngroups; i++) {
        free(s->groups[i].name);
        free(s->groups[i].members);
    }
    free(s->groups);
    free(s->lane_next);
    free(s->meta);
    free(s->commit_pv);
    free(s->leave_ids);
    kc_arena_free(&s->scratch);
    free(s);
}

static void start_group(kc_grpset_t *s, size_t gi)
{
    kc_grp_t *g = &s->groups[gi];
    g->started = true;
    g->lane = gi % s->nlanes;
    g->t_start = now_ns();
    for (int32_t k = 0; k < g->nmembers; k++) {
        member_t *m = &g->members[k];
        m->conn = s->lanes[g->lane * (size_t)s->size + (size_t)k];
        send_join(m);
    }
}

void kc_grpset_join_lanes(kc_grpset_t *s, kc_bench_conn_t **conns, size_t nconns, bool *done)
{
    s->lanes = conns;
    s->nlanes = nconns / (size_t)s->size;
    s->lane_next = calloc(s->nlanes ? s->nlanes : 1, sizeof(size_t));
    s->done = done;
    s->pending = s->ngroups;
    if (s->lane_next == NULL || s->nlanes == 0) {
        fprintf(stderr, "kcoord-bench: need at least %d connections\n", s->size);
        return;
    }
    if (s->ngroups == 0) {
        *done = true;
        return;
    }
    for (size_t l = 0; l < s->nlanes && l < s->ngroups; l++) {
        s->lane_next[l] = l;
        start_group(s, l);
    }
}

void kc_grpset_add_member(kc_grpset_t *s, size_t gi, kc_bench_conn_t *c, bool *done)
{
    kc_grp_t *g = &s->groups[gi];
    member_t *m = &g->members[g->nmembers++];
    g->expected++;
    g->complete = false;
    g->t_start = now_ns();
    g->t_done = 0;
    s->done = done;
    s->pending = 1;
    s->lanes = NULL; /* no next group to start */
    m->conn = c;
    m->hb_ms = (uint64_t)(s->o.hb_stable_s * 1000);
    recount(g);
    send_join(m);
}

void kc_grpset_set_interval(kc_grpset_t *s, double interval_s)
{
    uint64_t ms = (uint64_t)(interval_s * 1000);
    if (ms == 0)
        ms = 1;
    for (size_t i = 0; i < s->ngroups; i++)
        for (int32_t k = 0; k < s->groups[i].nmembers; k++) {
            member_t *m = &s->groups[i].members[k];
            m->hb_ms = ms;
            if (m->state == STABLE && m->timer_init)
                uv_timer_start(&m->timer, on_hb_timer, (uint64_t)rand() % ms, ms);
        }
}

void kc_grpset_measure(kc_grpset_t *s, kc_bench_stats_t *st)
{
    s->measure = st;
}

const kc_grp_counters_t *kc_grpset_counters(const kc_grpset_t *s)
{
    return &s->ctr;
}

double kc_grpset_group_time(const kc_grpset_t *s, size_t g)
{
    const kc_grp_t *gr = &s->groups[g];
    return gr->complete ? (double)(gr->t_done - gr->t_start) / 1e9 : -1;
}

size_t kc_grpset_completed(const kc_grpset_t *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->ngroups; i++)
        n += s->groups[i].complete;
    return n;
}

/* ---- Committing as members ----------------------------------------------------------------- */

static void commit_next(kc_grpset_t *s);

static void on_member_commit(kc_bench_conn_t *c, void *arg, int err, const void *resp,
                             uint64_t sent_ns)
{
    kc_grpset_t *s = arg;
    const kc_offset_commit_response_t *r = resp;
    (void)c;
    if (s->stopping)
        return;
    s->commit_inflight--;
    kc_stats_record(s->commit_st, now_ns() - sent_ns);
    if (err != 0) {
        kc_stats_error(s->commit_st, err);
    } else {
        for (int32_t t = 0; t < r->topics.n; t++)
            for (int32_t p = 0; p < r->topics.v[t].partitions.n; p++)
                if (r->topics.v[t].partitions.v[p].error_code != 0)
                    kc_stats_error(s->commit_st, r->topics.v[t].partitions.v[p].error_code);
    }
    commit_next(s);
}

static void commit_next(kc_grpset_t *s)
{
    while (s->commit_inflight < s->commit_window && s->commit_next < s->ngroups) {
        kc_grp_t *g = &s->groups[s->commit_next++];
        member_t *m = &g->members[0];
        s->commit_offset++;
        for (int32_t p = 0; p < s->commit_parts; p++)
            s->commit_pv[p].committed_offset = s->commit_offset + p;
        kc_offset_commit_request_topic_t t;
        memset(&t, 0, sizeof(t));
        t.name = sv(s->o.topic);
        t.partitions.v = s->commit_pv;
        t.partitions.n = s->commit_parts;
        kc_offset_commit_request_t q;
        kc_offset_commit_request_init(&q);
        q.group_id = sv(g->name);
        q.generation_id_or_member_epoch = m->synced_gen;
        q.member_id = sv(m->id);
        q.topics.v = &t;
        q.topics.n = 1;
        if (m->state == FAILED || kc_bench_send(m->conn, KC_API_OFFSET_COMMIT, s->o.v_commit, &q,
                                                on_member_commit, s) != 0) {
            kc_stats_error(s->commit_st, KC_BENCH_ECONN);
            continue;
        }
        s->commit_inflight++;
    }
    if (s->commit_inflight == 0 && s->commit_next >= s->ngroups && s->commit_done != NULL)
        *s->commit_done = true;
}

void kc_grpset_commit_all(kc_grpset_t *s, int32_t partitions, size_t window, kc_bench_stats_t *st,
                          bool *done)
{
    free(s->commit_pv);
    s->commit_pv = calloc((size_t)(partitions > 0 ? partitions : 1), sizeof(*s->commit_pv));
    if (s->commit_pv == NULL) {
        kc_stats_error(st, KC_BENCH_ECONN);
        *done = true;
        return;
    }
    for (int32_t p = 0; p < partitions; p++) {
        s->commit_pv[p].partition_index = p;
        s->commit_pv[p].committed_leader_epoch = -1;
        s->commit_pv[p].commit_timestamp = -1;
        s->commit_pv[p].committed_metadata = KC_STR_EMPTY;
    }
    s->commit_parts = partitions;
    s->commit_window = window ? window : 1;
    s->commit_next = 0;
    s->commit_inflight = 0;
    s->commit_st = st;
    s->commit_done = done;
    commit_next(s);
}

/* ---- Leaving ------------------------------------------------------------------------------- */

static void leave_next(kc_grpset_t *s);

static void on_leave(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    kc_grpset_t *s = arg;
    const kc_leave_group_response_t *r = resp;
    (void)c;
    (void)sent_ns;
    if (s->stopping)
        return;
    s->leave_inflight--;
    if (err != 0) {
        kc_stats_error(s->leave_st, err);
    } else {
        if (r->error_code != 0)
            kc_stats_error(s->leave_st, r->error_code);
        for (int32_t i = 0; i < r->members.n; i++)
            if (r->members.v[i].error_code != 0)
                kc_stats_error(s->leave_st, r->members.v[i].error_code);
    }
    leave_next(s);
}

static void leave_next(kc_grpset_t *s)
{
    while (s->leave_inflight < s->leave_window && s->leave_next < s->ngroups) {
        kc_grp_t *g = &s->groups[s->leave_next++];
        int32_t n = 0;
        kc_bench_conn_t *conn = NULL;
        for (int32_t k = 0; k < g->nmembers; k++) {
            member_t *m = &g->members[k];
            if (m->id[0] == '\0' || m->conn == NULL || m->state == FAILED)
                continue;
            s->leave_ids[n].member_id = sv(m->id);
            s->leave_ids[n].group_instance_id = KC_STR_NULL;
            s->leave_ids[n].reason = KC_STR_NULL;
            n++;
            conn = m->conn;
        }
        if (n == 0)
            continue;
        kc_leave_group_request_t q;
        kc_leave_group_request_init(&q);
        q.group_id = sv(g->name);
        q.members.v = s->leave_ids;
        q.members.n = n;
        if (kc_bench_send(conn, KC_API_LEAVE_GROUP, s->v_leave, &q, on_leave, s) != 0) {
            kc_stats_error(s->leave_st, KC_BENCH_ECONN);
            continue;
        }
        s->leave_inflight++;
    }
    if (s->leave_inflight == 0 && s->leave_next >= s->ngroups && s->leave_done != NULL)
        *s->leave_done = true;
}

int kc_grpset_leave_all(kc_grpset_t *s, int16_t version, size_t window, kc_bench_stats_t *st,
                        bool *done)
{
    if (version < 3)
        return -1;
    free(s->leave_ids);
    s->leave_ids = calloc((size_t)s->size + 1, sizeof(*s->leave_ids));
    if (s->leave_ids == NULL)
        return -1;
    s->leaving = true;
    for (size_t i = 0; i < s->ngroups; i++)
        for (int32_t k = 0; k < s->groups[i].nmembers; k++)
            if (s->groups[i].members[k].timer_init)
                uv_timer_stop(&s->groups[i].members[k].timer);
    s->v_leave = version;
    s->leave_window = window ? window : 1;
    s->leave_next = 0;
    s->leave_inflight = 0;
    s->leave_st = st;
    s->leave_done = done;
    leave_next(s);
    return 0;
}
