/* bench_consumer.c - kcoord-bench's KIP-848 consumer group members: ConsumerGroupHeartbeat.
 *
 * Each member behaves like a consumer with group.protocol=consumer, reduced to what the
 * coordinator sees. The coordinator computes the assignment (server-side assignor); a member
 * learns of it, and of every change, only from the answer to one of its own heartbeats:
 *
 *   join     ConsumerGroupHeartbeat with member epoch 0, its member id (v1+: generated here,
 *            22 characters of URL-safe base64 of 16 random bytes, as Java's Uuid.toString();
 *            v0: empty, the coordinator names it), the rebalance timeout, the subscribed topic
 *            names, the server assignor and an empty owned-partition list
 *   answer   the member takes the epoch of the answer, and its assignment when the answer
 *            carries one (it owns the new assignment at once: partitions it lost are revoked
 *            without a commit, partitions it gained are owned)
 *   next     when the answer changed the member's epoch or its assignment, the next heartbeat
 *            goes out at once; otherwise `hb_ms` after the previous one was sent (a fixed
 *            interval of the bench, not the interval the coordinator returns). One heartbeat is
 *            in flight per member; a heartbeat that falls due while one is in flight is sent
 *            when its answer arrives.
 *   owned    a heartbeat carries the owned partitions (topic id and partitions) when the
 *            coordinator has not heard them since the assignment last changed; otherwise the
 *            field is null (unchanged), as the Java client sends it
 *
 * Completion. A member has acknowledged its assignment at epoch E when a heartbeat it sent with
 * epoch E was answered without error, with epoch E and no other assignment, and the coordinator
 * had heard its owned partitions equal to that assignment (in that heartbeat or an earlier one
 * since the assignment last changed). The group is stable when every expected member has
 * acknowledged at the same epoch, the highest any member was given (the group epoch), their
 * assignments are disjoint and together hold every partition of the topic exactly once, and
 * they are balanced (member sizes differ by at most one), as the uniform assignor's final
 * assignment of one topic is. A member sees only its own epoch, the epoch of the target
 * assignment it reconciles to, and a coordinator that batches assignment updates (Kafka's
 * consumer.assignment.interval.ms) can hold members stable at an older one than the group
 * epoch. So when the members see the group stable, a ConsumerGroupDescribe goes out on a
 * connection no member uses, and the group is complete, at the moment the members saw it, when
 * the answer confirms it (state Stable, group epoch = assignment epoch = the members' epoch,
 * every member at that epoch) and the members still hold what they acknowledged; otherwise the
 * next acknowledgement checks again. Group epochs only grow: an answer that shows the members'
 * epoch as the group epoch shows that it already was when they saw it.
 *
 * Errors. FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID make the member give up its partitions and
 * join again with epoch 0 (as the Java client does); other error codes make it retry after a
 * back-off. Every error answer is counted: none is part of a normal join.
 *
 * Lifetime: kc_cgrp_stop closes the timers and makes every later answer a no-op; the group is
 * freed by kc_cgrp_free once the connections are closed (pending requests point at members).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "proto/errors.h"
#include "proto/gen_consumer.h"

enum { ID_MAX = 64 };
enum { ACTIVE, BACKOFF, FAILED };
enum { LEAVE_EPOCH = -1 };

typedef struct tp_s {
    kc_uuid_t topic;
    int32_t partition;
} tp_t;

typedef struct cmember_s {
    kc_cgrp_t *g;
    kc_bench_conn_t *conn;
    uv_timer_t timer; /* the next heartbeat, or the back-off */
    char id[ID_MAX + 1];
    int32_t epoch;      /* of the last answer; 0 = joining */
    int32_t sent_epoch; /* of the heartbeat in flight */
    tp_t *parts;        /* the assignment, sorted (owned) */
    int32_t nparts;
    int32_t acked_epoch; /* valid while acked */
    uint8_t state;
    bool started;    /* joined the measurement (kc_cgrp_join or kc_cgrp_add_member) */
    bool reported;   /* the coordinator heard `parts` as the owned partitions */
    bool sent_owned; /* the heartbeat in flight carries them */
    bool inflight;   /* a heartbeat is in flight */
    bool due;        /* the interval passed while it was */
    bool acked;      /* acknowledged its assignment at acked_epoch */
    bool timer_init;
} cmember_t;

struct kc_cgrp_s {
    kc_bench_t *b;
    kc_cgrp_opts_t o;
    char *group, *topic;
    cmember_t *members;
    int32_t capacity, nmembers;
    int32_t max_epoch;
    bool complete, stopping, leaving;
    bool confirming;      /* a ConsumerGroupDescribe is in flight */
    uint64_t t_candidate; /* when the members saw the group stable, confirming */
    int32_t candidate_epoch;
    kc_bench_conn_t *admin; /* for ConsumerGroupDescribe */
    int16_t v_describe;
    kc_cgrp_describe_t confirmed; /* the answer that confirmed the last completion */
    bool *done;
    uint64_t t_start, t_done;
    uint8_t *seen; /* partitions, for the coverage check */
    size_t timers_open;
    size_t leave_pending;
    bool *leave_done;
    kc_bench_stats_t *leave_st;
    kc_cgrp_counters_t ctr;
    uint64_t rng;
};

static void send_heartbeat(cmember_t *m);

static uint64_t now_ns(void)
{
    return uv_hrtime();
}

static uint64_t next_rand(kc_cgrp_t *g)
{
    /* xorshift64*: member ids and heartbeat phases need no more. */
    g->rng ^= g->rng >> 12;
    g->rng ^= g->rng << 25;
    g->rng ^= g->rng >> 27;
    return g->rng * 2685821657736338717ULL;
}

static int cmp_tp(const void *a, const void *b)
{
    const tp_t *x = a, *y = b;
    int c = memcmp(x->topic.b, y->topic.b, sizeof(x->topic.b));
    if (c != 0)
        return c;
    return (x->partition > y->partition) - (x->partition < y->partition);
}

/* ---- Completion -------------------------------------------------------------------------- */

static void confirm(kc_cgrp_t *g, uint64_t t);

static void check_complete(kc_cgrp_t *g)
{
    if (g->complete || g->nmembers == 0 || g->confirming)
        return;
    for (int32_t i = 0; i < g->nmembers; i++) {
        const cmember_t *m = &g->members[i];
        if (!m->acked || m->acked_epoch != g->max_epoch)
            return;
    }
    /* Every member acknowledged at the group epoch: do they hold every partition once? */
    int32_t p = g->o.partitions;
    memset(g->seen, 0, (size_t)p);
    int32_t held = 0;
    const kc_uuid_t *topic = NULL;
    for (int32_t i = 0; i < g->nmembers; i++) {
        const cmember_t *m = &g->members[i];
        for (int32_t k = 0; k < m->nparts; k++) {
            const tp_t *t = &m->parts[k];
            if (topic == NULL)
                topic = &t->topic;
            else if (memcmp(topic->b, t->topic.b, sizeof(topic->b)) != 0)
                return;
            if (t->partition < 0 || t->partition >= p || g->seen[t->partition])
                return;
            g->seen[t->partition] = 1;
            held++;
        }
    }
    if (held != p)
        return;
    /* And is it the uniform assignor's final assignment, balanced (one topic, every member
     * subscribed), not one a coordinator that batches its assignment updates has yet to
     * replace? */
    int32_t lo = INT32_MAX, hi = 0;
    for (int32_t i = 0; i < g->nmembers; i++) {
        int32_t k = g->members[i].nparts;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (hi - lo > 1)
        return;
    /* The members see it stable now; the coordinator confirms (or not) that their epoch is the
     * group epoch. The time is now's, if it does. */
    confirm(g, now_ns());
}

/* ---- Timers ------------------------------------------------------------------------------ */

static void on_timer_close(uv_handle_t *h)
{
    cmember_t *m = h->data;
    m->g->timers_open--;
}

static void ensure_timer(cmember_t *m)
{
    if (m->timer_init)
        return;
    uv_timer_init(m->g->b->loop, &m->timer);
    m->timer.data = m;
    m->timer_init = true;
    m->g->timers_open++;
}

static void on_interval(uv_timer_t *t)
{
    cmember_t *m = t->data;
    kc_cgrp_t *g = m->g;
    if (g->stopping || g->leaving || m->state != ACTIVE)
        return;
    if (m->inflight) {
        m->due = true;
        g->ctr.hb_late++;
        return;
    }
    send_heartbeat(m);
}

static void on_backoff(uv_timer_t *t)
{
    cmember_t *m = t->data;
    if (m->g->stopping || m->g->leaving || m->state != BACKOFF)
        return;
    m->state = ACTIVE;
    send_heartbeat(m);
}

/* Give up the partitions and join again with epoch 0 (the member id stays, from v1). */
static void reset_member(cmember_t *m)
{
    m->epoch = 0;
    m->nparts = 0;
    m->reported = false;
    m->acked = false;
    if (m->g->o.version < 1)
        m->id[0] = '\0';
}

static void member_error(cmember_t *m, int code)
{
    kc_cgrp_t *g = m->g;
    kc_stats_error(&g->ctr.errors, code);
    m->acked = false;
    if (code == KC_BENCH_ECONN || code == KC_BENCH_EDECODE) {
        m->state = FAILED;
        if (m->timer_init)
            uv_timer_stop(&m->timer);
        return;
    }
    if (code == KC_ERR_FENCED_MEMBER_EPOCH || code == KC_ERR_UNKNOWN_MEMBER_ID) {
        reset_member(m);
        send_heartbeat(m);
        return;
    }
    m->state = BACKOFF;
    ensure_timer(m);
    uv_timer_start(&m->timer, on_backoff,
                   code == KC_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
                           code == KC_ERR_COORDINATOR_NOT_AVAILABLE ||
                           code == KC_ERR_NOT_COORDINATOR
                       ? 100
                       : 500,
                   0);
}

/* ---- Heartbeat --------------------------------------------------------------------------- */

/* Take the answer's assignment; returns true when it differs from the member's. */
static bool take_assignment(cmember_t *m, const kc_consumer_group_heartbeat_assignment_t *a)
{
    int32_t n = 0;
    for (int32_t t = 0; t < a->topic_partitions.n; t++)
        n += a->topic_partitions.v[t].partitions.n > 0 ? a->topic_partitions.v[t].partitions.n : 0;
    tp_t *v = malloc(sizeof(*v) * (size_t)(n > 0 ? n : 1));
    if (v == NULL)
        return false;
    int32_t k = 0;
    for (int32_t t = 0; t < a->topic_partitions.n; t++) {
        const kc_consumer_group_heartbeat_topic_partitions_t *tp = &a->topic_partitions.v[t];
        for (int32_t i = 0; i < tp->partitions.n; i++)
            v[k++] = (tp_t){.topic = tp->topic_id, .partition = tp->partitions.v[i]};
    }
    qsort(v, (size_t)n, sizeof(*v), cmp_tp);
    bool same = n == m->nparts && (n == 0 || memcmp(v, m->parts, sizeof(*v) * (size_t)n) == 0);
    if (same) {
        free(v);
        return false;
    }
    free(m->parts);
    m->parts = v;
    m->nparts = n;
    return true;
}

static void on_heartbeat(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    cmember_t *m = arg;
    kc_cgrp_t *g = m->g;
    const kc_consumer_group_heartbeat_response_t *r = resp;
    (void)c;
    (void)sent_ns;
    if (g->stopping)
        return;
    m->inflight = false;
    if (g->leaving)
        return;
    g->ctr.heartbeats++;
    int code = err != 0 ? err : r->error_code;
    if (code != 0) {
        member_error(m, code);
        return;
    }
    if (r->member_id.len > 0 && r->member_id.len <= ID_MAX && m->id[0] == '\0') {
        memcpy(m->id, r->member_id.p, (size_t)r->member_id.len);
        m->id[r->member_id.len] = '\0';
    }
    if (m->id[0] == '\0') {
        member_error(m, KC_BENCH_EDECODE);
        return;
    }
    g->ctr.server_interval_ms = r->heartbeat_interval_ms;
    bool changed = false;
    if (m->sent_owned)
        m->reported = true; /* what it sent is what it held: one heartbeat in flight */
    if (r->assignment != NULL && take_assignment(m, r->assignment)) {
        m->reported = false;
        changed = true;
        g->ctr.assignments++;
    }
    if (r->member_epoch != m->epoch) {
        m->epoch = r->member_epoch;
        changed = true;
        g->ctr.epoch_changes++;
    }
    if (m->epoch > g->max_epoch)
        g->max_epoch = m->epoch;
    m->acked = !changed && m->reported && m->sent_epoch == m->epoch;
    if (m->acked) {
        m->acked_epoch = m->epoch;
        check_complete(g);
    }
    if (changed) {
        g->ctr.immediate++;
        send_heartbeat(m);
    } else if (m->due) {
        send_heartbeat(m);
    }
}

static void send_heartbeat(cmember_t *m)
{
    kc_cgrp_t *g = m->g;
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = kc_str_c(g->group);
    q.member_id = kc_str_c(m->id);
    q.member_epoch = m->epoch;
    kc_str_t topic = kc_str_c(g->topic);
    kc_consumer_group_heartbeat_topic_partitions_t owned[8];
    kc_consumer_group_heartbeat_topic_partitions_t *ov = owned;
    int32_t *pv = NULL;
    m->sent_owned = false;
    if (m->epoch == 0) {
        q.rebalance_timeout_ms = g->o.rebalance_ms;
        q.subscribed_topic_names.v = &topic;
        q.subscribed_topic_names.n = 1;
        q.server_assignor = kc_str_c(g->o.assignor);
        q.topic_partitions.v = owned;
        q.topic_partitions.n = 0;
        m->sent_owned = true;
    } else if (!m->reported) {
        /* The owned partitions, one entry per topic (runs of the sorted assignment). */
        int32_t ntopics = 0;
        for (int32_t i = 0; i < m->nparts; i++)
            if (i == 0 || memcmp(m->parts[i].topic.b, m->parts[i - 1].topic.b, 16) != 0)
                ntopics++;
        if (ntopics > 8)
            ov = malloc(sizeof(*ov) * (size_t)ntopics);
        pv = malloc(sizeof(*pv) * (size_t)(m->nparts > 0 ? m->nparts : 1));
        if (ov == NULL || pv == NULL) {
            if (ov != owned)
                free(ov);
            free(pv);
            member_error(m, KC_BENCH_ECONN);
            return;
        }
        int32_t t = -1;
        for (int32_t i = 0; i < m->nparts; i++) {
            if (i == 0 || memcmp(m->parts[i].topic.b, m->parts[i - 1].topic.b, 16) != 0) {
                t++;
                ov[t].topic_id = m->parts[i].topic;
                ov[t].partitions.v = pv + i;
                ov[t].partitions.n = 0;
            }
            pv[i] = m->parts[i].partition;
            ov[t].partitions.n++;
        }
        q.topic_partitions.v = ov;
        q.topic_partitions.n = ntopics;
        m->sent_owned = true;
    }
    m->sent_epoch = m->epoch;
    m->due = false;
    int rc =
        kc_bench_send(m->conn, KC_API_CONSUMER_GROUP_HEARTBEAT, g->o.version, &q, on_heartbeat, m);
    if (ov != owned)
        free(ov);
    free(pv);
    if (rc != 0) {
        member_error(m, KC_BENCH_ECONN);
        return;
    }
    m->inflight = true;
    g->ctr.sent++;
    ensure_timer(m);
    uv_timer_start(&m->timer, on_interval, g->o.hb_ms, 0);
}

/* ---- The group --------------------------------------------------------------------------- */

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void make_id(kc_cgrp_t *g, char *out)
{
    uint8_t b[16];
    uint64_t x = next_rand(g), y = next_rand(g);
    memcpy(b, &x, 8);
    memcpy(b + 8, &y, 8);
    /* 128 bits as 22 base64 characters, no padding. */
    int o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (int i = 0; i < 16; i++) {
        acc = acc << 8 | b[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = B64URL[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        out[o++] = B64URL[(acc << (6 - bits)) & 63];
    out[o] = '\0';
}

kc_cgrp_t *kc_cgrp_new(kc_bench_t *b, const char *group, const char *topic, int32_t capacity,
                       const kc_cgrp_opts_t *opts)
{
    kc_cgrp_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->b = b;
    g->o = *opts;
    g->capacity = capacity;
    g->rng = uv_hrtime() ^ ((uint64_t)(uintptr_t)g << 17) ^ 0x9e3779b97f4a7c15ULL;
    g->group = strdup(group);
    g->topic = strdup(topic);
    g->members = calloc((size_t)(capacity > 0 ? capacity : 1), sizeof(cmember_t));
    g->seen = calloc((size_t)(opts->partitions > 0 ? opts->partitions : 1), 1);
    if (g->group == NULL || g->topic == NULL || g->members == NULL || g->seen == NULL) {
        kc_cgrp_free(g);
        return NULL;
    }
    kc_stats_reset(&g->ctr.errors);
    for (int32_t i = 0; i < capacity; i++) {
        cmember_t *m = &g->members[i];
        m->g = g;
        if (opts->version >= 1)
            make_id(g, m->id);
    }
    return g;
}

static void start_member(kc_cgrp_t *g, kc_bench_conn_t *c)
{
    cmember_t *m = &g->members[g->nmembers++];
    m->conn = c;
    m->started = true;
    m->state = ACTIVE;
    send_heartbeat(m);
}

void kc_cgrp_join(kc_cgrp_t *g, kc_bench_conn_t **conns, int32_t n, kc_bench_conn_t *admin,
                  bool *done)
{
    g->admin = admin;
    g->v_describe = kc_bench_version(g->b, KC_API_CONSUMER_GROUP_DESCRIBE, 1);
    g->done = done;
    g->complete = false;
    g->t_start = now_ns();
    for (int32_t i = 0; i < n && g->nmembers < g->capacity; i++)
        start_member(g, conns[i]);
}

void kc_cgrp_add_member(kc_cgrp_t *g, kc_bench_conn_t *c, bool *done)
{
    if (g->nmembers >= g->capacity)
        return;
    g->done = done;
    g->complete = false;
    g->t_start = now_ns();
    g->t_done = 0;
    start_member(g, c);
}

void kc_cgrp_spread(kc_cgrp_t *g)
{
    uint64_t ms = g->o.hb_ms ? g->o.hb_ms : 1;
    for (int32_t i = 0; i < g->nmembers; i++) {
        cmember_t *m = &g->members[i];
        if (m->state == ACTIVE && m->timer_init)
            uv_timer_start(&m->timer, on_interval, next_rand(g) % ms, 0);
    }
}

double kc_cgrp_time(const kc_cgrp_t *g)
{
    return g->complete ? (double)(g->t_done - g->t_start) / 1e9 : -1;
}

int32_t kc_cgrp_epoch(const kc_cgrp_t *g)
{
    return g->max_epoch;
}

int32_t kc_cgrp_acked(const kc_cgrp_t *g)
{
    int32_t n = 0;
    for (int32_t i = 0; i < g->nmembers; i++)
        n += g->members[i].acked && g->members[i].acked_epoch == g->max_epoch;
    return n;
}

const kc_cgrp_counters_t *kc_cgrp_counters(const kc_cgrp_t *g)
{
    return &g->ctr;
}

/* Fill `o` from a ConsumerGroupDescribe answer (err from the client, or 0). */
static void read_describe(int err, const kc_consumer_group_describe_response_t *r,
                          kc_cgrp_describe_t *o)
{
    memset(o, 0, sizeof(*o));
    if (err != 0) {
        o->error = err;
        return;
    }
    if (r->groups.n != 1) {
        o->error = KC_BENCH_EDECODE;
        return;
    }
    const kc_consumer_group_describe_described_group_t *dg = &r->groups.v[0];
    o->error = dg->error_code;
    int n = dg->group_state.len > 0 ? dg->group_state.len : 0;
    if (n >= (int)sizeof(o->state))
        n = (int)sizeof(o->state) - 1;
    if (n > 0)
        memcpy(o->state, dg->group_state.p, (size_t)n);
    o->state[n] = '\0';
    o->group_epoch = dg->group_epoch;
    o->assignment_epoch = dg->assignment_epoch;
    o->members = dg->members.n > 0 ? dg->members.n : 0;
    for (int32_t i = 0; i < dg->members.n; i++)
        o->members_at_epoch += dg->members.v[i].member_epoch == dg->group_epoch;
}

static void on_confirm(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    kc_cgrp_t *g = arg;
    kc_cgrp_describe_t d;
    (void)c;
    (void)sent_ns;
    if (g->stopping)
        return;
    g->confirming = false;
    if (g->leaving || g->complete)
        return;
    g->ctr.describes++;
    read_describe(err, resp, &d);
    if (d.error != 0) {
        kc_stats_error(&g->ctr.errors, d.error);
        return;
    }
    bool ok = strcmp(d.state, "Stable") == 0 || strcmp(d.state, "stable") == 0;
    ok = ok && d.group_epoch == g->candidate_epoch && d.assignment_epoch == d.group_epoch &&
         d.members == g->nmembers && d.members_at_epoch == g->nmembers;
    /* And the members still hold what they acknowledged then. */
    for (int32_t i = 0; ok && i < g->nmembers; i++)
        ok = g->members[i].acked && g->members[i].acked_epoch == g->candidate_epoch;
    if (!ok) {
        g->ctr.not_confirmed++;
        g->confirmed = d;
        return; /* the next acknowledgement checks again */
    }
    g->confirmed = d;
    g->complete = true;
    g->t_done = g->t_candidate;
    if (g->done != NULL)
        *g->done = true;
}

static void confirm(kc_cgrp_t *g, uint64_t t)
{
    kc_str_t id = kc_str_c(g->group);
    kc_consumer_group_describe_request_t q;
    kc_consumer_group_describe_request_init(&q);
    q.group_ids.v = &id;
    q.group_ids.n = 1;
    if (g->admin == NULL || g->v_describe < 0 ||
        kc_bench_send(g->admin, KC_API_CONSUMER_GROUP_DESCRIBE, g->v_describe, &q, on_confirm, g) !=
            0) {
        kc_stats_error(&g->ctr.errors, KC_BENCH_ECONN);
        return;
    }
    g->confirming = true;
    g->t_candidate = t;
    g->candidate_epoch = g->max_epoch;
}

const kc_cgrp_describe_t *kc_cgrp_confirmed(const kc_cgrp_t *g)
{
    return &g->confirmed;
}

static void on_leave(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    cmember_t *m = arg;
    kc_cgrp_t *g = m->g;
    const kc_consumer_group_heartbeat_response_t *r = resp;
    (void)c;
    (void)sent_ns;
    if (g->stopping)
        return;
    int code = err != 0 ? err : r->error_code;
    if (code != 0)
        kc_stats_error(g->leave_st, code);
    if (--g->leave_pending == 0 && g->leave_done != NULL)
        *g->leave_done = true;
}

void kc_cgrp_leave(kc_cgrp_t *g, kc_bench_stats_t *st, bool *done)
{
    g->leaving = true;
    g->leave_st = st;
    g->leave_done = done;
    g->leave_pending = 1; /* until every request is out */
    for (int32_t i = 0; i < g->nmembers; i++) {
        cmember_t *m = &g->members[i];
        if (m->timer_init)
            uv_timer_stop(&m->timer);
        if (m->state == FAILED || m->id[0] == '\0' || (m->epoch == 0 && !m->inflight))
            continue;
        kc_consumer_group_heartbeat_request_t q;
        kc_consumer_group_heartbeat_request_init(&q);
        q.group_id = kc_str_c(g->group);
        q.member_id = kc_str_c(m->id);
        q.member_epoch = LEAVE_EPOCH;
        if (kc_bench_send(m->conn, KC_API_CONSUMER_GROUP_HEARTBEAT, g->o.version, &q, on_leave,
                          m) != 0) {
            kc_stats_error(st, KC_BENCH_ECONN);
            continue;
        }
        g->leave_pending++;
    }
    if (--g->leave_pending == 0)
        *done = true;
}

void kc_cgrp_stop(kc_cgrp_t *g)
{
    g->stopping = true;
    for (int32_t i = 0; i < g->capacity; i++) {
        cmember_t *m = &g->members[i];
        if (m->timer_init && !uv_is_closing((uv_handle_t *)&m->timer))
            uv_close((uv_handle_t *)&m->timer, on_timer_close);
    }
}

void kc_cgrp_free(kc_cgrp_t *g)
{
    if (g == NULL)
        return;
    if (g->timers_open > 0) /* stop was not called or the loop did not run: leak, not crash */
        return;
    for (int32_t i = 0; g->members != NULL && i < g->capacity; i++)
        free(g->members[i].parts);
    free(g->members);
    free(g->seen);
    free(g->group);
    free(g->topic);
    free(g);
}
