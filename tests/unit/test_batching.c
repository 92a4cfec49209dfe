/* test_batching.c - a consumer group's own settings (group configs, as the coordinator hands
 * them to the manager through its group_config op) and KIP-1263 assignment batching, on a
 * fake clock.
 *
 * Each test builds a manager whose host gives it one topic of 6 partitions, takes its records
 * (counted only), queues the jobs it offloads, and answers group_config from the fixture.
 * Assignor runs are counted from the manager's statistics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "group/group.h"
#include "proto/gen_consumer.h"
#include "util/diag.h"

typedef struct fx_s {
    kc_gm_t *gm;
    kc_gm_config_t cfg;
    int64_t now;
    kc_arena_t a;
    kc_gm_topic_t topic;
    int records;
    kc_gm_group_config_t own; /* what group "g" has of its own; -1 fields: none */
    kc_gm_job_t *jobs[16];
    int njobs;
} fx_t;

static kc_time_t T(const fx_t *f)
{
    return (kc_time_t){f->now, f->now + 1700000000000};
}

static void on_record(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    (void)k, (void)kl, (void)v, (void)vl;
    ((fx_t *)ctx)->records++;
}

static void on_topics(void *ctx, kc_gm_topics_t *out)
{
    fx_t *f = ctx;
    out->v = &f->topic;
    out->n = 1;
    out->version = 1;
}

static void on_join(void *ctx, void *w, const kc_join_group_response_t *r)
{
    (void)ctx, (void)w, (void)r;
}

static void on_sync(void *ctx, void *w, const kc_sync_group_response_t *r)
{
    (void)ctx, (void)w, (void)r;
}

static int on_offload(void *ctx, kc_gm_job_t *job)
{
    fx_t *f = ctx;
    assert_true(f->njobs < 16);
    f->jobs[f->njobs++] = job;
    return 0;
}

static void on_group_config(void *ctx, kc_str_t group, kc_gm_group_config_t *out)
{
    fx_t *f = ctx;
    if (kc_str_eq_c(group, "g"))
        *out = f->own;
}

static void run_jobs(fx_t *f)
{
    while (f->njobs > 0) {
        kc_gm_job_t *job = f->jobs[0];
        memmove(f->jobs, f->jobs + 1, (size_t)(f->njobs - 1) * sizeof(f->jobs[0]));
        f->njobs--;
        kc_gm_job_run(job);
        kc_gm_job_done(job, T(f));
    }
}

/* A manager with the daemon's assignment interval `interval` and an offload threshold
 * `offload` (-1: never). */
static fx_t *fx_new(int32_t interval, int64_t offload)
{
    fx_t *f = calloc(1, sizeof(*f));
    kc_arena_init(&f->a);
    f->cfg = (kc_gm_config_t){
        .partition = 0,
        .min_session_timeout_ms = 6000,
        .max_session_timeout_ms = 1800000,
        .initial_rebalance_delay_ms = 3000,
        .max_size = INT32_MAX,
        .new_member_join_timeout_ms = 300000,
        .consumer_heartbeat_interval_ms = 5000,
        .consumer_session_timeout_ms = 45000,
        .consumer_max_size = INT32_MAX,
        .consumer_assignors = "uniform,range",
        .consumer_assignment_interval_ms = interval,
        .consumer_offload_threshold = offload,
    };
    f->now = 1000000;
    f->own = (kc_gm_group_config_t){-1, -1, -1};
    f->topic.name = KC_STR_LIT("t");
    memset(&f->topic.id, 0, sizeof(f->topic.id));
    f->topic.id.b[0] = 7;
    f->topic.partitions = 6;
    kc_gm_ops_t ops = {.ctx = f,
                       .join_done = on_join,
                       .sync_done = on_sync,
                       .record = on_record,
                       .topics = on_topics,
                       .offload = on_offload,
                       .group_config = on_group_config};
    f->gm = kc_gm_new(&f->cfg, &ops);
    assert_non_null(f->gm);
    kc_gm_set_seed(f->gm, 11);
    return f;
}

static void fx_free(fx_t *f)
{
    kc_gm_free(f->gm);
    run_jobs(f);
    kc_arena_free(&f->a);
    free(f);
}

static void advance(fx_t *f, int64_t ms)
{
    int64_t t = f->now + ms;
    for (int guard = 0; guard < 1000; guard++) {
        int64_t d = kc_gm_next_deadline(f->gm);
        if (d > t)
            break;
        if (d > f->now)
            f->now = d;
        kc_gm_tick(f->gm, T(f));
    }
    f->now = t;
}

static uint64_t assignor_runs(const fx_t *f)
{
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    uint64_t n = 0;
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < KC_GM_ASSIGN_BUCKETS; i++)
            n += st.assign_time[m][i];
    return n;
}

/* A member of group "g" subscribed to "t": its id, epoch, and how many partitions it owns. */
typedef struct cl_s {
    char id[64];
    int32_t epoch;
    int32_t owned[8];
    int n_owned;
    int32_t interval; /* the heartbeat interval of the last answer */
    int16_t err;
} cl_t;

static void hb(fx_t *f, cl_t *c)
{
    static int next_id;
    if (c->id[0] == '\0') /* v1: the client makes its member id */
        snprintf(c->id, sizeof(c->id), "member-%d", ++next_id);
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.member_id = kc_str_c(c->id);
    q.member_epoch = c->epoch;
    q.rebalance_timeout_ms = c->epoch == 0 ? 60000 : -1;
    kc_str_t *names = kc_arena_alloc(&f->a, sizeof(kc_str_t));
    names[0] = KC_STR_LIT("t");
    q.subscribed_topic_names.v = names;
    q.subscribed_topic_names.n = c->epoch == 0 ? 1 : -1;
    kc_consumer_group_heartbeat_topic_partitions_t *tp = kc_arena_alloc(&f->a, sizeof(*tp));
    tp->topic_id = f->topic.id;
    tp->partitions.v = kc_arena_dup(&f->a, c->owned, sizeof(c->owned));
    tp->partitions.n = c->n_owned;
    q.topic_partitions.v = tp;
    q.topic_partitions.n = c->n_owned > 0 ? 1 : 0;
    kc_consumer_group_heartbeat_response_t r;
    kc_gm_consumer_heartbeat(f->gm, T(f), 1, &q, KC_STR_LIT("client"), KC_STR_LIT("/10.0.0.1"),
                             &f->a, &r);
    c->err = r.error_code;
    if (r.error_code) {
        if (getenv("TEST_VERBOSE"))
            fprintf(stderr, "heartbeat: error %d: %.*s\n", r.error_code,
                    r.error_message.len > 0 ? (int)r.error_message.len : 0,
                    r.error_message.len > 0 ? r.error_message.p : "");
        return;
    }
    snprintf(c->id, sizeof(c->id), "%.*s", (int)r.member_id.len, r.member_id.p);
    c->epoch = r.member_epoch;
    c->interval = r.heartbeat_interval_ms;
    if (r.assignment) {
        c->n_owned = 0;
        for (int32_t i = 0; i < r.assignment->topic_partitions.n; i++)
            for (int32_t j = 0; j < r.assignment->topic_partitions.v[i].partitions.n; j++)
                c->owned[c->n_owned++] = r.assignment->topic_partitions.v[i].partitions.v[j];
    }
}

/* Interval 0 (and a zeroed config): every join computes a new target at once. */
static void test_interval_zero_assigns_every_join(void **state)
{
    (void)state;
    fx_t *f = fx_new(0, -1);
    cl_t a = {0}, b = {0}, c = {0};
    hb(f, &a);
    assert_int_equal(a.n_owned, 6);
    f->now += 10;
    hb(f, &b);
    f->now += 10;
    hb(f, &c);
    assert_int_equal(assignor_runs(f), 3);
    for (int round = 0; round < 3; round++) {
        hb(f, &a);
        hb(f, &b);
        hb(f, &c);
    }
    assert_int_equal(a.n_owned, 2);
    assert_int_equal(b.n_owned, 2);
    assert_int_equal(c.n_owned, 2);
    assert_int_equal(assignor_runs(f), 3);
    fx_free(f);
}

/* Interval 1000: a burst of joins within the interval costs one more assignment, computed by
 * the group's timer when the interval is over; the members get it at their next heartbeat. */
static void test_burst_costs_one_assignment(void **state)
{
    (void)state;
    fx_t *f = fx_new(1000, -1);
    cl_t m[5];
    memset(m, 0, sizeof(m));
    hb(f, &m[0]); /* the group's first assignment is never deferred */
    assert_int_equal(m[0].n_owned, 6);
    assert_int_equal(assignor_runs(f), 1);
    for (int i = 1; i < 5; i++) {
        f->now += 50;
        hb(f, &m[i]);
        assert_int_equal(m[i].err, 0);
        assert_int_equal(m[i].n_owned, 0); /* deferred: the current target has nothing for it */
    }
    assert_int_equal(assignor_runs(f), 1);
    assert_true(kc_gm_next_deadline(f->gm) <= 1000000 + 1000);
    advance(f, 1000000 + 999 - f->now);
    assert_int_equal(assignor_runs(f), 1);
    advance(f, 1); /* 1000 ms after the first assignment */
    assert_int_equal(assignor_runs(f), 2);
    /* The old owner revokes, the others then get their share. */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 5; i++)
            hb(f, &m[i]);
    int total = 0;
    for (int i = 0; i < 5; i++) {
        assert_true(m[i].n_owned >= 1 && m[i].n_owned <= 2);
        total += m[i].n_owned;
    }
    assert_int_equal(total, 6);
    assert_int_equal(assignor_runs(f), 2);
    /* A join after the interval is computed at once again. */
    advance(f, 2000);
    cl_t late = {0};
    hb(f, &late);
    assert_int_equal(assignor_runs(f), 3);
    fx_free(f);
}

/* The group's own consumer.assignment.interval.ms overrides the daemon's: 0 turns batching
 * off for it, and a change applies at the next heartbeat. */
static void test_group_override_of_interval(void **state)
{
    (void)state;
    fx_t *f = fx_new(1000, -1);
    f->own.assignment_interval_ms = 0;
    cl_t a = {0}, b = {0};
    hb(f, &a);
    f->now += 10;
    hb(f, &b);
    assert_int_equal(assignor_runs(f), 2);
    f->own.assignment_interval_ms = 5000;
    cl_t c = {0};
    f->now += 10;
    hb(f, &c);
    assert_int_equal(assignor_runs(f), 2);
    advance(f, 4000);
    assert_int_equal(assignor_runs(f), 2);
    advance(f, 1000);
    assert_int_equal(assignor_runs(f), 3);
    fx_free(f);
}

/* The heartbeat interval and session timeout of a group's configs apply at the next heartbeat:
 * the answer carries the group's interval, and a member is fenced after the group's session
 * timeout. */
static void test_group_session_and_heartbeat(void **state)
{
    (void)state;
    fx_t *f = fx_new(0, -1);
    cl_t a = {0};
    hb(f, &a);
    assert_int_equal(a.interval, 5000);
    f->own.heartbeat_interval_ms = 7000;
    f->own.session_timeout_ms = 50000;
    hb(f, &a);
    assert_int_equal(a.interval, 7000);
    advance(f, 49000);
    hb(f, &a);
    assert_int_equal(a.err, 0);
    advance(f, 49999);
    hb(f, &a);
    assert_int_equal(a.err, 0); /* 45 s would have fenced it by now */
    advance(f, 50001);
    hb(f, &a);
    assert_int_equal(a.err, 25); /* UNKNOWN_MEMBER_ID: its session ended, it was removed */
    fx_free(f);
}

/* Offloaded assignments keep working with the interval: a job runs off the loop, joins during
 * it bump the epoch, and the next job waits for the interval once the first has ended. */
static void test_offload_then_deferred(void **state)
{
    (void)state;
    fx_t *f = fx_new(1000, 1); /* every job goes off the loop */
    cl_t a = {0}, b = {0}, c = {0};
    hb(f, &a);
    assert_int_equal(f->njobs, 1);
    f->now += 5;
    hb(f, &b); /* a job runs: b waits for it */
    assert_int_equal(f->njobs, 1);
    run_jobs(f); /* the first ends; the next is deferred by the interval */
    assert_int_equal(assignor_runs(f), 1);
    assert_int_equal(f->njobs, 0);
    f->now += 5;
    hb(f, &c);
    assert_int_equal(f->njobs, 0);
    advance(f, 1000);
    assert_int_equal(f->njobs, 1); /* one job for b and c together */
    run_jobs(f);
    assert_int_equal(assignor_runs(f), 2);
    fx_free(f);
}

int main(void)
{
    kc_diag_set_level(KC_DIAG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interval_zero_assigns_every_join),
        cmocka_unit_test(test_burst_costs_one_assignment),
        cmocka_unit_test(test_group_override_of_interval),
        cmocka_unit_test(test_group_session_and_heartbeat),
        cmocka_unit_test(test_offload_then_deferred),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
