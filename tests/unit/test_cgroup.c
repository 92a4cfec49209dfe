/* test_cgroup.c - KIP-848 consumer groups: ConsumerGroupHeartbeat and its reconciliation,
 * fencing, timers on a fake clock, the records emitted and their replay, and what the classic
 * and admin entry points answer for consumer groups.
 *
 * Each test builds a manager with fake ops (records copied into the fixture, a topic list the
 * test changes) and drives it with requests and a clock variable. Simulated clients (cl_t)
 * behave as KIP-848 consumers do: they take the assignment they are sent at once and report
 * what they own in their next heartbeat.
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

#include "group/errors.h"
#include "group/group.h"
#include "proto/gen_consumer.h"
#include "proto/gen_records.h"
#include "util/diag.h"

#include "json_check.h"

/* ---- Fixture ---------------------------------------------------------------------------- */

#define MAXR 4096
#define MAXT 16

typedef struct rec_s {
    uint8_t *key;
    size_t klen;
    uint8_t *val; /* NULL: tombstone */
    size_t vlen;
} rec_t;

typedef struct fx_s {
    kc_gm_t *gm;
    kc_gm_config_t cfg;
    int64_t now;      /* the fake monotonic clock */
    int64_t wall_off; /* the fake wall clock is now + wall_off: tests step it alone */
    kc_arena_t a;
    rec_t recs[MAXR];
    int nr;
    kc_gm_topic_t topics[MAXT];
    char names[MAXT][32];
    size_t nt;
    uint64_t version;
    /* Assignment jobs handed to the fake host's offload op, waiting for run_jobs(). */
    kc_gm_job_t *jobs[16];
    int njobs;
    int offloads;     /* jobs ever taken */
    bool refuse_jobs; /* the op answers -1, as a host that cannot queue work */
} fx_t;

/* The fake clock's time, as the manager takes it. */
static kc_time_t T(const fx_t *f)
{
    return (kc_time_t){f->now, f->now + f->wall_off};
}

static void on_record(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    fx_t *f = ctx;
    assert_true(f->nr < MAXR);
    rec_t *r = &f->recs[f->nr++];
    r->key = malloc(klen);
    memcpy(r->key, key, klen);
    r->klen = klen;
    r->val = NULL;
    r->vlen = 0;
    if (val) {
        r->val = malloc(vlen ? vlen : 1);
        memcpy(r->val, val, vlen);
        r->vlen = vlen;
    }
}

static void on_topics(void *ctx, kc_gm_topics_t *out)
{
    fx_t *f = ctx;
    out->v = f->topics;
    out->n = f->nt;
    out->version = f->version;
}

static void on_join(void *ctx, void *w, const kc_join_group_response_t *r)
{
    (void)ctx;
    (void)w;
    (void)r;
}

static void on_sync(void *ctx, void *w, const kc_sync_group_response_t *r)
{
    (void)ctx;
    (void)w;
    (void)r;
}

static int on_offload(void *ctx, kc_gm_job_t *job)
{
    fx_t *f = ctx;
    if (f->refuse_jobs)
        return -1;
    assert_true(f->njobs < 16);
    f->jobs[f->njobs++] = job;
    f->offloads++;
    return 0;
}

/* The host's side of offloading: run each waiting job, then finish it on the "loop", in the
 * order they were handed over (finishing one may hand over the next). */
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

static kc_uuid_t topic_uuid(const char *name)
{
    kc_uuid_t u;
    memset(&u, 0, sizeof(u));
    for (size_t i = 0; name[i] && i < 15; i++)
        u.b[i + 1] = (uint8_t)name[i];
    u.b[0] = 0x7a;
    return u;
}

static void set_topic(fx_t *f, const char *name, int32_t partitions)
{
    for (size_t i = 0; i < f->nt; i++) {
        if (strcmp(f->names[i], name) == 0) {
            f->topics[i].partitions = partitions;
            f->version++;
            return;
        }
    }
    assert_true(f->nt < MAXT);
    snprintf(f->names[f->nt], sizeof(f->names[0]), "%s", name);
    f->topics[f->nt].name = kc_str_c(f->names[f->nt]);
    f->topics[f->nt].id = topic_uuid(name);
    f->topics[f->nt].partitions = partitions;
    f->nt++;
    f->version++;
}

static void del_topic(fx_t *f, const char *name)
{
    for (size_t i = 0; i < f->nt; i++) {
        if (strcmp(f->names[i], name) == 0) {
            for (size_t j = i; j + 1 < f->nt; j++) {
                memcpy(f->names[j], f->names[j + 1], sizeof(f->names[0]));
                f->topics[j] = f->topics[j + 1];
                f->topics[j].name = kc_str_c(f->names[j]);
            }
            f->nt--;
            f->version++;
            return;
        }
    }
}

static const char *topic_name(fx_t *f, const kc_uuid_t *id)
{
    for (size_t i = 0; i < f->nt; i++)
        if (memcmp(f->topics[i].id.b, id->b, 16) == 0)
            return f->names[i];
    return "?";
}

static kc_gm_config_t default_cfg(void)
{
    kc_gm_config_t c = {
        .partition = 3,
        .min_session_timeout_ms = 6000,
        .max_session_timeout_ms = 1800000,
        .initial_rebalance_delay_ms = 3000,
        .max_size = INT32_MAX,
        .new_member_join_timeout_ms = 300000,
        .consumer_heartbeat_interval_ms = 5000,
        .consumer_session_timeout_ms = 45000,
        .consumer_max_size = INT32_MAX,
        .consumer_assignors = "uniform,range",
    };
    return c;
}

static fx_t *fx_new_cfg(const kc_gm_config_t *cfg)
{
    fx_t *f = calloc(1, sizeof(*f));
    kc_arena_init(&f->a);
    f->cfg = *cfg;
    f->now = 1000000;
    f->version = 1;
    kc_gm_ops_t ops = {.ctx = f,
                       .join_done = on_join,
                       .sync_done = on_sync,
                       .record = on_record,
                       .topics = on_topics,
                       .offload = on_offload};
    f->gm = kc_gm_new(&f->cfg, &ops);
    assert_non_null(f->gm);
    kc_gm_set_seed(f->gm, 7);
    set_topic(f, "t", 6);
    set_topic(f, "u", 3);
    return f;
}

static fx_t *fx_new(void)
{
    kc_gm_config_t c = default_cfg();
    return fx_new_cfg(&c);
}

static void free_recs(fx_t *f)
{
    for (int i = 0; i < f->nr; i++) {
        free(f->recs[i].key);
        free(f->recs[i].val);
    }
    f->nr = 0;
}

static void fx_free(fx_t *f)
{
    if (f->gm)
        kc_gm_free(f->gm);
    run_jobs(f); /* jobs outlive their manager: they only free themselves */
    free_recs(f);
    kc_arena_free(&f->a);
    free(f);
}

/* Run every timer up to time t, each at its own deadline, as an event loop would. */
static void advance_to(fx_t *f, int64_t t)
{
    for (int guard = 0; guard < 10000; guard++) {
        int64_t d = kc_gm_next_deadline(f->gm);
        if (d > t)
            break;
        if (d > f->now)
            f->now = d;
        kc_gm_tick(f->gm, T(f));
    }
    f->now = t;
}

static void advance(fx_t *f, int64_t ms)
{
    advance_to(f, f->now + ms);
}

static int16_t rec_type(const rec_t *r)
{
    return (int16_t)(r->key[0] << 8 | r->key[1]);
}

/* The records emitted since `from`, as "type" or "type-" (tombstone), space-separated. */
static const char *rec_kinds(fx_t *f, int from)
{
    static char buf[4096];
    size_t w = 0;
    buf[0] = '\0';
    for (int i = from; i < f->nr && w + 8 < sizeof(buf); i++)
        w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%d%s", w ? " " : "",
                              rec_type(&f->recs[i]), f->recs[i].val ? "" : "-");
    return buf;
}

/* "t:0,1;u:2" -> request topic partitions (NULL: a null list). */
static void parse_tps(fx_t *f, const char *spec, kc_consumer_group_heartbeat_request_t *q)
{
    if (!spec) {
        q->topic_partitions.v = NULL;
        q->topic_partitions.n = -1;
        return;
    }
    kc_consumer_group_heartbeat_topic_partitions_t *v = kc_arena_alloc(&f->a, 8 * sizeof(*v) + 1);
    int n = 0;
    const char *p = spec;
    while (*p) {
        char name[32];
        int k = 0;
        while (*p && *p != ':')
            name[k++] = *p++;
        name[k] = '\0';
        assert_int_equal(*p, ':');
        p++;
        v[n].topic_id = topic_uuid(name);
        v[n].partitions.v = kc_arena_alloc(&f->a, 64 * sizeof(int32_t));
        v[n].partitions.n = 0;
        while (*p && *p != ';') {
            v[n].partitions.v[v[n].partitions.n++] = (int32_t)strtol(p, (char **)&p, 10);
            if (*p == ',')
                p++;
        }
        if (*p == ';')
            p++;
        n++;
    }
    q->topic_partitions.v = v;
    q->topic_partitions.n = n;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* An assignment as "t:0,1;u:2" (topics by name, partitions ascending); NULL for none. */
static const char *asg_str(fx_t *f, const kc_consumer_group_heartbeat_assignment_t *as)
{
    if (!as)
        return NULL;
    char *parts[16];
    int n = 0;
    for (int32_t i = 0; i < as->topic_partitions.n; i++) {
        char *s = kc_arena_alloc(&f->a, 512);
        int w = snprintf(s, 512, "%s:", topic_name(f, &as->topic_partitions.v[i].topic_id));
        int32_t m = as->topic_partitions.v[i].partitions.n;
        int32_t *ps = kc_arena_dup(&f->a, as->topic_partitions.v[i].partitions.v,
                                   (size_t)(m ? m : 1) * sizeof(int32_t));
        for (int32_t a = 0; a < m; a++)
            for (int32_t b = a + 1; b < m; b++)
                if (ps[b] < ps[a]) {
                    int32_t t = ps[a];
                    ps[a] = ps[b];
                    ps[b] = t;
                }
        for (int32_t j = 0; j < m; j++)
            w += snprintf(s + w, (size_t)(512 - w), "%s%d", j ? "," : "", (int)ps[j]);
        parts[n++] = s;
    }
    qsort(parts, (size_t)n, sizeof(parts[0]), cmp_cstr);
    char *out = kc_arena_alloc(&f->a, 2048);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        strcat(out, i ? ";" : "");
        strcat(out, parts[i]);
    }
    return out;
}

/* A heartbeat request. Strings NULL = null; topics is a comma-separated list (NULL = null);
 * owned as parse_tps. */
typedef struct req_s {
    int16_t version; /* 0: 1; -1: 0 */
    const char *group;
    const char *member;
    int32_t epoch;
    const char *instance, *rack, *regex, *assignor;
    int32_t rebalance; /* 0: -1, unless epoch 0 (then 60000) */
    const char *topics;
    const char *owned;
    bool owned_null;                    /* send a null owned list even with epoch 0 */
    const kc_gm_topic_filter_t *filter; /* the principal's DESCRIBE rights (NULL: none) */
} req_t;

static kc_consumer_group_heartbeat_response_t send_hb(fx_t *f, const req_t *o)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = kc_str_c(o->group ? o->group : "g");
    q.member_id = kc_str_c(o->member ? o->member : "");
    q.member_epoch = o->epoch;
    q.instance_id = kc_str_c(o->instance);
    q.rack_id = kc_str_c(o->rack);
    q.subscribed_topic_regex = kc_str_c(o->regex);
    q.server_assignor = kc_str_c(o->assignor);
    q.rebalance_timeout_ms = o->rebalance ? o->rebalance : o->epoch == 0 ? 60000 : -1;
    if (o->topics) {
        kc_str_t *v = kc_arena_alloc(&f->a, 16 * sizeof(kc_str_t));
        int n = 0;
        const char *p = o->topics;
        while (*p) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            v[n++] = (kc_str_t){kc_arena_dup(&f->a, p, len + 1), (int32_t)len};
            p += len + (e != NULL);
        }
        q.subscribed_topic_names.v = v;
        q.subscribed_topic_names.n = n;
    } else {
        q.subscribed_topic_names.v = NULL;
        q.subscribed_topic_names.n = -1;
    }
    parse_tps(f, o->owned ? o->owned : (o->epoch == 0 && !o->owned_null) ? "" : NULL, &q);
    kc_consumer_group_heartbeat_response_t r;
    int16_t version = o->version == 0 ? 1 : o->version < 0 ? 0 : o->version;
    if (o->filter)
        kc_gm_consumer_heartbeat_filtered(f->gm, T(f), version, &q, KC_STR_LIT("client"),
                                          KC_STR_LIT("/10.0.0.1"), o->filter, &f->a, &r);
    else
        kc_gm_consumer_heartbeat(f->gm, T(f), version, &q, KC_STR_LIT("client"),
                                 KC_STR_LIT("/10.0.0.1"), &f->a, &r);
    return r;
}

/* ---- Simulated KIP-848 clients ---------------------------------------------------------- */

typedef struct cl_s {
    const char *group; /* NULL: "g" */
    char id[64];
    const char *instance;
    const char *topics;
    const char *regex;
    int32_t epoch;
    char owned[512]; /* what it owns, as parse_tps ("" = nothing) */
    int16_t err;
    bool got; /* the last answer carried an assignment */
} cl_t;

static void cl_take(fx_t *f, cl_t *c, const kc_consumer_group_heartbeat_response_t *r)
{
    c->err = r->error_code;
    c->got = false;
    if (r->error_code)
        return;
    c->epoch = r->member_epoch;
    if (r->assignment) {
        c->got = true;
        snprintf(c->owned, sizeof(c->owned), "%s", asg_str(f, r->assignment));
    }
}

/* Join (epoch 0) with a full request. */
static int16_t cl_join(fx_t *f, cl_t *c)
{
    req_t o = {.group = c->group,
               .member = c->id,
               .epoch = 0,
               .instance = c->instance,
               .topics = c->topics,
               .regex = c->regex};
    c->owned[0] = '\0';
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &o);
    cl_take(f, c, &r);
    return c->err;
}

/* A regular heartbeat reporting what it owns. */
static int16_t cl_hb(fx_t *f, cl_t *c)
{
    req_t o = {.group = c->group,
               .member = c->id,
               .epoch = c->epoch,
               .instance = c->instance,
               .owned = c->owned};
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &o);
    cl_take(f, c, &r);
    return c->err;
}

static cl_t *cl_new(const char *id, const char *topics)
{
    cl_t *c = calloc(1, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->topics = topics;
    return c;
}

/* The dump of group g. */
static const char *dump(fx_t *f, const char *group)
{
    static char buf[2][16384];
    static int k;
    k ^= 1;
    size_t n = kc_gm_consumer_dump(f->gm, kc_str_c(group), buf[k], sizeof(buf[k]));
    assert_true(n < sizeof(buf[k]));
    if (n == 0)
        buf[k][0] = '\0';
    return buf[k];
}

static kc_consumer_group_describe_described_group_t describe(fx_t *f, const char *group)
{
    kc_consumer_group_describe_described_group_t d;
    kc_gm_consumer_describe(f->gm, 1, kc_str_c(group), false, &f->a, &d);
    return d;
}

static const char *state_name(fx_t *f, const char *group)
{
    kc_group_info_t info;
    if (kc_gm_info(f->gm, kc_str_c(group), &info) != 0)
        return "none";
    return info.state_name;
}

static void assert_str(kc_str_t s, const char *want)
{
    if (!want) {
        assert_int_equal(s.len, -1);
        return;
    }
    if (s.len < 0 || (size_t)s.len != strlen(want) || memcmp(s.p, want, (size_t)s.len) != 0)
        fail_msg("got \"%.*s\", want \"%s\"", s.len > 0 ? s.len : 0, s.p ? s.p : "", want);
}

/* Heartbeat every client until nothing changes (at most `rounds` rounds). */
static void settle(fx_t *f, cl_t **cs, int n, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++)
            assert_int_equal(cl_hb(f, cs[i]), 0);
        if (strcmp(state_name(f, cs[0]->group ? cs[0]->group : "g"), "Stable") == 0)
            return;
    }
}

/* ---- Request validation ------------------------------------------------------------------ */

static void expect_error(fx_t *f, const req_t *o, int16_t code, const char *msg)
{
    kc_consumer_group_heartbeat_response_t r = send_hb(f, o);
    if (r.error_code != code)
        fail_msg("error %d, want %d (%.*s)", r.error_code, code, r.error_message.len,
                 r.error_message.p);
    if (msg)
        assert_str(r.error_message, msg);
    assert_int_equal(r.member_id.len, -1);
    assert_null(r.assignment);
}

static void test_validation(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    expect_error(f, &(req_t){.member = "", .epoch = 0, .topics = "t"}, KC_ERR_INVALID_REQUEST,
                 "MemberId can't be empty.");
    expect_error(f, &(req_t){.member = "  ", .group = "", .epoch = 0, .topics = "t"},
                 KC_ERR_INVALID_REQUEST, "MemberId can't be empty.");
    expect_error(f, &(req_t){.member = "m", .group = " ", .epoch = 0, .topics = "t"},
                 KC_ERR_INVALID_REQUEST, "GroupId can't be empty.");
    expect_error(f, &(req_t){.member = "m", .instance = "", .epoch = 0, .topics = "t"},
                 KC_ERR_INVALID_REQUEST, "InstanceId can't be empty.");
    expect_error(f, &(req_t){.member = "m", .rack = " ", .epoch = 0, .topics = "t"},
                 KC_ERR_INVALID_REQUEST, "RackId can't be empty.");
    expect_error(f, &(req_t){.member = "m", .epoch = 0, .rebalance = -1, .topics = "t"},
                 KC_ERR_INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.");
    expect_error(f, &(req_t){.member = "m", .epoch = 0, .topics = "t", .owned_null = true},
                 KC_ERR_INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.");
    expect_error(f, &(req_t){.member = "m", .epoch = 0, .topics = "t", .owned = "t:0"},
                 KC_ERR_INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.");
    expect_error(f, &(req_t){.member = "m", .epoch = 0}, KC_ERR_INVALID_REQUEST,
                 "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                 "(re-)joining.");
    expect_error(f, &(req_t){.member = "m", .epoch = -2}, KC_ERR_INVALID_REQUEST,
                 "InstanceId can't be null.");
    expect_error(f, &(req_t){.member = "m", .epoch = -3}, KC_ERR_INVALID_REQUEST,
                 "MemberEpoch is invalid.");
    expect_error(f, &(req_t){.member = "m", .epoch = 0, .topics = "t", .assignor = "sticky"},
                 KC_ERR_UNSUPPORTED_ASSIGNOR,
                 "ServerAssignor sticky is not supported. Supported assignors: uniform, range.");
    /* v0: an empty member id is fine when joining, and the coordinator names the member. */
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.version = -1, .member = "", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_id.len, 22);
    assert_true(r.member_id.p[0] != '-');
    assert_int_equal(r.member_epoch, 2);
    assert_int_equal(r.heartbeat_interval_ms, 5000);
    assert_non_null(r.assignment);
    /* v0 still needs the member id when heartbeating or leaving. */
    expect_error(f, &(req_t){.version = -1, .member = "", .epoch = 1}, KC_ERR_INVALID_REQUEST,
                 "MemberId can't be empty.");
    expect_error(f, &(req_t){.version = -1, .member = "", .epoch = -1}, KC_ERR_INVALID_REQUEST,
                 "MemberId can't be empty.");
    /* The group must exist unless joining. */
    expect_error(f, &(req_t){.group = "nope", .member = "m", .epoch = 3}, KC_ERR_GROUP_ID_NOT_FOUND,
                 "Consumer group nope not found.");
    expect_error(f, &(req_t){.group = "nope", .member = "m", .epoch = -1},
                 KC_ERR_GROUP_ID_NOT_FOUND, "Group nope not found.");
    assert_int_equal(f->nr > 0, 1);
    fx_free(f);
}

/* ---- Reconciliation ---------------------------------------------------------------------- */

static int count_parts(const char *owned)
{
    int n = 0;
    for (const char *p = owned; *p; p++) {
        if (*p >= '0' && *p <= '9' && (p == owned || p[-1] == ':' || p[-1] == ','))
            n++;
    }
    return n;
}

/* Three members split t (6 partitions) two each; a fourth joins and only the partition that
 * moves to it is revoked: the others go to the new epoch at once, keeping theirs. */
static void test_join_three_then_fourth(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[4] = {cl_new("m1", "t"), cl_new("m2", "t"), cl_new("m3", "t"), cl_new("m4", "t")};
    assert_int_equal(cl_join(f, c[0]), 0);
    assert_int_equal(c[0]->epoch, 2);
    assert_string_equal(c[0]->owned, "t:0,1,2,3,4,5");
    assert_string_equal(state_name(f, "g"), "Stable");
    assert_int_equal(cl_join(f, c[1]), 0);
    assert_int_equal(cl_join(f, c[2]), 0);
    assert_string_equal(state_name(f, "g"), "Reconciling");
    /* m2 and m3 wait for partitions m1 still holds. */
    assert_string_equal(c[1]->owned, "");
    assert_string_equal(c[2]->owned, "");
    settle(f, c, 3, 6);
    assert_string_equal(state_name(f, "g"), "Stable");
    int total = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i]->epoch, 4);
        assert_int_equal(count_parts(c[i]->owned), 2);
        total += count_parts(c[i]->owned);
    }
    assert_int_equal(total, 6);
    char before[3][512];
    for (int i = 0; i < 3; i++)
        snprintf(before[i], sizeof(before[i]), "%s", c[i]->owned);

    /* The fourth member. */
    assert_int_equal(cl_join(f, c[3]), 0);
    assert_int_equal(c[3]->epoch, 5);
    assert_string_equal(c[3]->owned, ""); /* its partition is not released yet */
    assert_string_equal(state_name(f, "g"), "Reconciling");
    /* Each old member heartbeats once: the two that keep both partitions move to epoch 5 and
     * stay with what they had; the one giving one up is asked to revoke it. */
    int revokers = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cl_hb(f, c[i]), 0);
        if (count_parts(c[i]->owned) == 2) {
            assert_int_equal(c[i]->epoch, 5);
            assert_string_equal(c[i]->owned, before[i]);
        } else {
            revokers++;
            assert_int_equal(c[i]->epoch, 4); /* stays in its epoch until it revoked */
            assert_int_equal(count_parts(c[i]->owned), 1);
        }
    }
    assert_int_equal(revokers, 1);
    /* It reports it revoked; it moves to epoch 5, and the new member then gets the partition. */
    settle(f, c, 4, 4);
    assert_string_equal(state_name(f, "g"), "Stable");
    total = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c[i]->epoch, 5);
        total += count_parts(c[i]->owned);
    }
    assert_int_equal(total, 6);
    assert_int_equal(count_parts(c[3]->owned), 1);
    for (int i = 0; i < 4; i++)
        free(c[i]);
    fx_free(f);
}

/* A member leaves with epoch -1: its records are tombstoned (current assignment, target,
 * metadata), the group epoch is bumped, and the others take its partitions. */
static void test_leave(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t"), cl_new("m2", "t")};
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    assert_string_equal(state_name(f, "g"), "Stable");
    int from = f->nr;
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m2", .epoch = c[1]->epoch});
    assert_int_equal(r.error_code, KC_ERR_NONE); /* a plain heartbeat first */
    from = f->nr;
    r = send_hb(f, &(req_t){.member = "m2", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    assert_str(r.member_id, "m2");
    assert_int_equal(r.member_epoch, -1);
    assert_null(r.assignment);
    assert_string_equal(rec_kinds(f, from), "8- 7- 5- 3");
    assert_string_equal(state_name(f, "g"), "Assigning");
    assert_int_equal(cl_hb(f, c[0]), 0);
    assert_int_equal(c[0]->epoch, c[1]->epoch + 1);
    assert_string_equal(c[0]->owned, "t:0,1,2,3,4,5");
    assert_string_equal(state_name(f, "g"), "Stable");
    /* Gone: a heartbeat of m2 is refused. */
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 3});
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(r.error_message, "Member m2 is not a member of group g.");
    /* The last member leaves: Empty. */
    r = send_hb(f, &(req_t){.member = "m1", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(state_name(f, "g"), "Empty");
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

/* A member that stops heartbeating is removed after the session timeout; the others carry
 * on and take its partitions. */
static void test_session_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t"), cl_new("m2", "t")};
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    int32_t epoch = c[0]->epoch;
    for (int i = 0; i < 8; i++) {
        advance(f, 5000);
        assert_int_equal(cl_hb(f, c[0]), 0); /* m1 keeps heartbeating, m2 is silent */
    }
    advance(f, 4999);
    assert_string_equal(state_name(f, "g"), "Stable");
    assert_int_equal(describe(f, "g").members.n, 2);
    advance(f, 1); /* 45 s after m2's last heartbeat */
    assert_string_equal(state_name(f, "g"), "Assigning");
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.members.n, 1);
    assert_int_equal(d.group_epoch, epoch + 1);
    assert_int_equal(cl_hb(f, c[0]), 0);
    assert_string_equal(c[0]->owned, "t:0,1,2,3,4,5");
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

/* The wall clock stepped an hour forward and back while the monotonic clock runs on: the
 * member that heartbeats stays, the silent one is fenced exactly 45 s after its last
 * heartbeat. Each expiry is found through the group's heap, not a scan of its members, and
 * members whose sessions end together are fenced together: one group epoch bump. */
static void test_wall_clock_step(void **state)
{
    (void)state;
    enum { N = 200 };
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t"), cl_new("m2", "t")};
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    /* N silent members in another group, to count the work of their expiry. */
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof(id), "s%d", i);
        cl_t *s = cl_new(id, "t");
        s->group = "silent";
        assert_int_equal(cl_join(f, s), 0);
        free(s);
    }
    int32_t silent_epoch = describe(f, "silent").group_epoch;
    kc_gm_stats_t s0 = {0}, s1 = {0};
    kc_gm_stats(f->gm, &s0);
    for (int i = 0; i < 8; i++) {
        f->wall_off = i < 4 ? 3600000 : -3600000;
        advance(f, 5000);
        assert_int_equal(cl_hb(f, c[0]), 0);
    }
    advance(f, 4999);
    assert_string_equal(state_name(f, "g"), "Stable");
    assert_int_equal(describe(f, "g").members.n, 2);
    advance(f, 1); /* 45 s after m2's last heartbeat */
    assert_int_equal(describe(f, "g").members.n, 1);
    assert_int_equal(cl_hb(f, c[0]), 0);
    assert_string_equal(state_name(f, "silent"), "Empty");
    assert_int_equal(describe(f, "silent").group_epoch, silent_epoch + 1);
    kc_gm_stats(f->gm, &s1);
    assert_int_equal(s1.timers_fired - s0.timers_fired, N + 1);
    assert_true(s1.timers_examined - s0.timers_examined <= 4 * (uint64_t)N);
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

/* A member asked to revoke partitions that does not do so within its rebalance timeout is
 * fenced; one that moved on in time is not. */
static void test_rebalance_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t"), cl_new("m2", "t")};
    cl_join(f, c[0]);
    assert_string_equal(c[0]->owned, "t:0,1,2,3,4,5");
    cl_join(f, c[1]);
    /* m1 heartbeats and is asked to revoke three partitions; it keeps reporting them. */
    req_t o = {.member = "m1", .epoch = c[0]->epoch, .owned = "t:0,1,2,3,4,5"};
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &o);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 2);
    assert_non_null(r.assignment);
    assert_int_equal(count_parts(asg_str(f, r.assignment)), 3);
    for (int i = 0; i < 11; i++) {
        advance(f, 5000);
        r = send_hb(f, &o);
        assert_int_equal(r.error_code, 0);
        assert_int_equal(cl_hb(f, c[1]), 0);
        assert_string_equal(c[1]->owned, "");
    }
    assert_int_equal(describe(f, "g").members.n, 2);
    advance(f, 5001); /* 60 s (its rebalance timeout) after it was asked */
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.members.n, 1);
    assert_str(d.members.v[0].member_id, "m2");
    r = send_hb(f, &o);
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    /* m2 gets everything once the group settles. */
    assert_int_equal(cl_hb(f, c[1]), 0);
    assert_string_equal(c[1]->owned, "t:0,1,2,3,4,5");
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

/* ---- Fencing ------------------------------------------------------------------------------ */

static void test_fencing(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t"), cl_new("m2", "t")};
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    assert_int_equal(c[0]->epoch, 3);
    /* A greater epoch. */
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 4, .owned = c[0]->owned});
    assert_int_equal(r.error_code, KC_ERR_FENCED_MEMBER_EPOCH);
    assert_str(r.error_message,
               "The consumer group member has a greater member epoch (4) than the one known by "
               "the group coordinator (3). The member must abandon all its partitions and "
               "rejoin.");
    /* The previous epoch with owned partitions that are a subset of the assignment: the
     * answer that moved it may have been lost, so it is accepted (and told its epoch). */
    char part[64];
    snprintf(part, sizeof(part), "%.*s", 5, c[0]->owned); /* "t:0,1" or "t:3,4" style */
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .owned = c[0]->owned});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 3);
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .owned = ""});
    assert_int_equal(r.error_code, 0);
    /* ... but not when it reports a partition it does not have, nor without its list. */
    const char *other = c[1]->owned;
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .owned = other});
    assert_int_equal(r.error_code, KC_ERR_FENCED_MEMBER_EPOCH);
    assert_str(r.error_message,
               "The consumer group member has a smaller member epoch (2) than the one known by "
               "the group coordinator (3). The member must abandon all its partitions and "
               "rejoin.");
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2});
    assert_int_equal(r.error_code, KC_ERR_FENCED_MEMBER_EPOCH);
    /* An epoch that is neither the member's nor its previous one (m2 joined at epoch 3). */
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 2, .owned = ""});
    assert_int_equal(r.error_code, KC_ERR_FENCED_MEMBER_EPOCH);
    /* A fenced member rejoins with epoch 0 and the same id: it is accepted. */
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 3);
    assert_non_null(r.assignment);
    /* Unknown member. */
    r = send_hb(f, &(req_t){.member = "zz", .epoch = 3});
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(r.error_message, "Member zz is not a member of group g.");
    /* Static members: an instance id held by a live member cannot be taken... */
    r = send_hb(f, &(req_t){.member = "s1", .instance = "i1", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    r = send_hb(f, &(req_t){.member = "s2", .instance = "i1", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, KC_ERR_UNRELEASED_INSTANCE_ID);
    assert_str(r.error_message, "Static member s2 with instance id i1 cannot join the group "
                                "because the instance id is owned by s1 member.");
    /* ... another member id with a known instance id is fenced ... */
    r = send_hb(f, &(req_t){.member = "s2", .instance = "i1", .epoch = 3});
    assert_int_equal(r.error_code, KC_ERR_FENCED_INSTANCE_ID);
    assert_str(r.error_message, "Static member s2 with instance id i1 was fenced by member s1.");
    r = send_hb(f, &(req_t){.member = "s2", .instance = "i1", .epoch = -1});
    assert_int_equal(r.error_code, KC_ERR_FENCED_INSTANCE_ID);
    /* ... and an unknown instance id is unknown. */
    r = send_hb(f, &(req_t){.member = "s9", .instance = "i9", .epoch = 3});
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(r.error_message, "Instance id i9 is unknown.");
    r = send_hb(f, &(req_t){.member = "s9", .instance = "i9", .epoch = -2});
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    /* A heartbeat to a consumer group that is a classic group. */
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

static void test_max_size(void **state)
{
    (void)state;
    kc_gm_config_t cfg = default_cfg();
    cfg.consumer_max_size = 2;
    fx_t *f = fx_new_cfg(&cfg);
    assert_int_equal(send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"}).error_code, 0);
    assert_int_equal(send_hb(f, &(req_t){.member = "m2", .epoch = 0, .topics = "t"}).error_code, 0);
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m3", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, KC_ERR_GROUP_MAX_SIZE_REACHED);
    assert_str(r.error_message, "The consumer group has reached its maximum capacity of 2 "
                                "members.");
    /* A member already in the full group is not refused. */
    assert_int_equal(send_hb(f, &(req_t){.member = "m2", .epoch = 0, .topics = "t"}).error_code, 0);
    fx_free(f);
}

/* A static member leaves temporarily (-2): it keeps its partitions, nothing moves; the same
 * instance rejoins with a new member id and gets its partitions back at once. */
static void test_static_leave_rejoin(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("s1", "t"), cl_new("m2", "t")};
    c[0]->instance = "i1";
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    assert_string_equal(state_name(f, "g"), "Stable");
    char mine[512];
    snprintf(mine, sizeof(mine), "%s", c[0]->owned);
    int32_t epoch = c[0]->epoch;
    int from = f->nr;
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "s1", .instance = "i1", .epoch = -2});
    assert_int_equal(r.error_code, 0);
    assert_str(r.member_id, "s1");
    assert_int_equal(r.member_epoch, -2);
    assert_string_equal(rec_kinds(f, from), "8");
    /* Nothing is reassigned while it is away. */
    assert_int_equal(cl_hb(f, c[1]), 0);
    assert_int_equal(c[1]->epoch, epoch);
    assert_false(c[1]->got);
    /* It comes back with a new member id. */
    cl_t *back = cl_new("s1b", "t");
    back->instance = "i1";
    from = f->nr;
    assert_int_equal(cl_join(f, back), 0);
    /* Kafka's replaceMember (the old member's tombstones, the new one's metadata, target and
     * assignment at epoch 0), then its reconciliation to the group's epoch. */
    assert_string_equal(rec_kinds(f, from), "8- 7- 5- 5 7 8 8");
    assert_int_equal(back->epoch, epoch);
    assert_string_equal(back->owned, mine);
    assert_string_equal(state_name(f, "g"), "Stable");
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.members.n, 2);
    assert_int_equal(d.group_epoch, epoch);
    /* The old member id is fenced now. */
    r = send_hb(f, &(req_t){.member = "s1", .instance = "i1", .epoch = epoch});
    assert_int_equal(r.error_code, KC_ERR_FENCED_INSTANCE_ID);
    /* A static member away for longer than the session timeout is removed. */
    r = send_hb(f, &(req_t){.member = "s1b", .instance = "i1", .epoch = -2});
    assert_int_equal(r.error_code, 0);
    for (int i = 0; i < 10; i++) {
        advance(f, 5000);
        assert_int_equal(cl_hb(f, c[1]), 0);
    }
    d = describe(f, "g");
    assert_int_equal(d.members.n, 1);
    free(c[0]);
    free(c[1]);
    free(back);
    fx_free(f);
}

/* ---- Records and replay ------------------------------------------------------------------ */

/* Replay f's records into a fresh manager (as at start-up) and return it. */
static fx_t *replayed(fx_t *f)
{
    fx_t *g = fx_new_cfg(&f->cfg);
    g->nt = 0;
    for (size_t i = 0; i < f->nt; i++)
        set_topic(g, f->names[i], f->topics[i].partitions);
    for (int i = 0; i < f->nr; i++) {
        int rc =
            kc_gm_replay(g->gm, f->recs[i].key, f->recs[i].klen, f->recs[i].val, f->recs[i].vlen);
        assert_true(rc == 0 || rc == 1);
    }
    g->now = f->now;
    kc_gm_load_complete(g->gm, T(g));
    return g;
}

static void test_records_and_replay(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[3] = {cl_new("m1", "t,u"), cl_new("m2", "t"), cl_new("m3", "u")};
    c[1]->instance = "i2";
    /* The records of the first join, in Kafka's order. */
    assert_int_equal(cl_join(f, c[0]), 0);
    assert_string_equal(rec_kinds(f, 0), "5 3 7 6 8");
    cl_join(f, c[1]);
    cl_join(f, c[2]);
    /* Mid-reconciliation: replay gives the same state. */
    assert_int_equal(cl_hb(f, c[0]), 0);
    fx_t *g = replayed(f);
    assert_string_equal(dump(g, "g"), dump(f, "g"));
    fx_free(g);
    settle(f, c, 3, 6);
    g = replayed(f);
    assert_string_equal(dump(g, "g"), dump(f, "g"));
    assert_string_equal(state_name(g, "g"), "Stable");
    /* The loaded group carries on: heartbeats at the same epochs, no reassignment. */
    int from = g->nr;
    for (int i = 0; i < 3; i++) {
        int32_t epoch = c[i]->epoch;
        assert_int_equal(cl_hb(g, c[i]), 0);
        assert_int_equal(c[i]->epoch, epoch);
        assert_false(c[i]->got);
    }
    assert_int_equal(g->nr, from);
    /* Fresh session timers: nobody expires right after the load. */
    advance(g, 44000);
    assert_int_equal(describe(g, "g").members.n, 3);
    advance(g, 2000);
    assert_int_equal(describe(g, "g").members.n, 0);
    fx_free(g);
    /* A leave, a static temporary leave, a deletion: replay each. */
    send_hb(f, &(req_t){.member = "m3", .epoch = -1});
    send_hb(f, &(req_t){.member = "m2", .instance = "i2", .epoch = -2});
    g = replayed(f);
    assert_string_equal(dump(g, "g"), dump(f, "g"));
    fx_free(g);
    send_hb(f, &(req_t){.member = "m1", .epoch = -1});
    send_hb(f, &(req_t){.member = "m2", .instance = "i2", .epoch = -1});
    assert_string_equal(state_name(f, "g"), "Empty");
    from = f->nr;
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("g")), 0);
    /* Kafka's order: target epoch, partition metadata, group epoch (no members left). */
    assert_string_equal(rec_kinds(f, from), "6- 4- 3-");
    assert_string_equal(state_name(f, "g"), "none");
    g = replayed(f);
    assert_string_equal(state_name(g, "g"), "none");
    fx_free(g);
    for (int i = 0; i < 3; i++)
        free(c[i]);
    fx_free(f);
}

/* A record of a consumer group replaces the "simple" classic group an offset commit created
 * while loading; a GroupMetadata record replaces a consumer group. */
static void test_replay_group_types(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    /* An offset commit record of group "g" (type 1 key), then consumer group records. */
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, 1);
    kc_offset_commit_key_t k = {KC_STR_LIT("g"), KC_STR_LIT("t"), 0};
    kc_offset_commit_key_encode(&w, 1, &k);
    /* OffsetCommitValue v3: offset 5, leader epoch -1, metadata "", commit time 1. */
    uint8_t val[] = {0,    3,    0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff,
                     0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0,    1};
    assert_int_equal(kc_gm_replay(f->gm, w.buf, w.len, val, sizeof(val)), 1);
    kc_wr_free(&w);
    assert_string_equal(state_name(f, "g"), "Empty");
    kc_group_info_t info;
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &info), 0);
    assert_string_equal(info.type, "classic");
    fx_t *src = fx_new();
    send_hb(src, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    for (int i = 0; i < src->nr; i++)
        assert_int_equal(kc_gm_replay(f->gm, src->recs[i].key, src->recs[i].klen, src->recs[i].val,
                                      src->recs[i].vlen),
                         0);
    kc_gm_load_complete(f->gm, T(f));
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &info), 0);
    assert_string_equal(info.type, "consumer");
    assert_string_equal(info.state_name, "Stable");
    fx_free(src);
    fx_free(f);
}

/* ---- Topic metadata ----------------------------------------------------------------------- */

/* A topic the group subscribes to appears (or changes): the next heartbeat bumps the group
 * epoch and the new partitions are assigned. */
static void test_metadata_change(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t,w"), cl_new("m2", "t,w")};
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    int32_t epoch = c[0]->epoch;
    /* Heartbeats without change: no record. */
    int from = f->nr;
    cl_hb(f, c[0]);
    cl_hb(f, c[1]);
    assert_int_equal(f->nr, from);
    /* An unrelated topic: the version moved, the hash did not: no bump. */
    set_topic(f, "other", 4);
    cl_hb(f, c[0]);
    assert_int_equal(c[0]->epoch, epoch);
    assert_int_equal(f->nr, from);
    /* w is created with 4 partitions. */
    set_topic(f, "w", 4);
    assert_int_equal(cl_hb(f, c[0]), 0);
    assert_int_equal(c[0]->epoch, epoch + 1);
    settle(f, c, 2, 4);
    int total = count_parts(c[0]->owned) + count_parts(c[1]->owned);
    assert_int_equal(total, 10);
    /* w is deleted: its partitions are revoked. */
    del_topic(f, "w");
    settle(f, c, 2, 6);
    total = count_parts(c[0]->owned) + count_parts(c[1]->owned);
    assert_int_equal(total, 6);
    assert_null(strstr(c[0]->owned, "w:"));
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

/* ---- Subscriptions ------------------------------------------------------------------------ */

static void test_regex(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    set_topic(f, "orders.eu", 2);
    set_topic(f, "orders.us", 2);
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .regex = "orders\\..*"});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(asg_str(f, r.assignment), "orders.eu:0,1;orders.us:0,1");
    /* A regex must match whole names; \d is understood. */
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 0, .group = "g2", .regex = "order"});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(asg_str(f, r.assignment), "");
    r = send_hb(f, &(req_t){.member = "m3", .epoch = 0, .group = "g3", .regex = "[tu]|\\d+"});
    assert_string_equal(asg_str(f, r.assignment), "t:0,1,2,3,4,5;u:0,1,2");
    /* A new topic matching the regex is picked up at the next heartbeat. */
    set_topic(f, "orders.jp", 1);
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .owned = "orders.eu:0,1;orders.us:0,1"});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 3);
    assert_string_equal(asg_str(f, r.assignment), "orders.eu:0,1;orders.jp:0;orders.us:0,1");
    /* An invalid regex new to the group. */
    r = send_hb(f, &(req_t){.member = "m9", .epoch = 0, .regex = "orders("});
    assert_int_equal(r.error_code, KC_ERR_INVALID_REGULAR_EXPRESSION);
    assert_true(r.error_message.len > 0);
    assert_non_null(strstr(r.error_message.p, "SubscribedTopicRegex `orders(` is not a valid "
                                              "regular expression: "));
    fx_free(f);
}

/* RE2 syntax, as Kafka's RE2/J: franz-go's non-capturing wrapper and (?i) are accepted,
 * back-references and repeat counts above 1000 refused with RE2/J's words. */
static void test_regex_re2(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    set_topic(f, "xPy", 1);
    set_topic(f, "Orders", 1);
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .regex = ".*(?:(?:P)).*"});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(asg_str(f, r.assignment), "xPy:0");
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 0, .group = "g2", .regex = "(?i)orders"});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(asg_str(f, r.assignment), "Orders:0");
    r = send_hb(f, &(req_t){.member = "m3", .epoch = 0, .group = "g3", .regex = "a{0,1000}"});
    assert_int_equal(r.error_code, 0);

    static const struct {
        const char *rx, *msg;
    } bad[] = {
        {"(.*)(.*)\\2", "SubscribedTopicRegex `(.*)(.*)\\2` is not a valid regular expression: "
                        "invalid escape sequence."},
        {"a{0,1001}", "SubscribedTopicRegex `a{0,1001}` is not a valid regular expression: "
                      "invalid repeat count."},
        {"[", "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ]."},
        {"(?=x)", "SubscribedTopicRegex `(?=x)` is not a valid regular expression: invalid or "
                  "unsupported Perl syntax."},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = send_hb(f, &(req_t){.member = "m9", .epoch = 0, .group = "g9", .regex = bad[i].rx});
        assert_int_equal(r.error_code, KC_ERR_INVALID_REGULAR_EXPRESSION);
        assert_int_equal(r.error_message.len, (int)strlen(bad[i].msg));
        assert_memory_equal(r.error_message.p, bad[i].msg, strlen(bad[i].msg));
    }
    fx_free(f);
}

/* 20 000 nested parentheses: refused before RE2 sees them, the process lives. A 100 KB
 * alternation: refused by the length bound. */
static void test_regex_hostile(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    size_t depth = 20000;
    char *deep = malloc(depth * 2 + 2);
    memset(deep, '(', depth);
    deep[depth] = 'a';
    memset(deep + depth + 1, ')', depth);
    deep[depth * 2 + 1] = '\0';
    kc_gm_config_t cfg = default_cfg();
    cfg.consumer_regex_max_bytes = 1 << 20;
    fx_t *g = fx_new_cfg(&cfg);
    kc_consumer_group_heartbeat_response_t r =
        send_hb(g, &(req_t){.member = "m1", .epoch = 0, .regex = deep});
    assert_int_equal(r.error_code, KC_ERR_INVALID_REGULAR_EXPRESSION);
    assert_non_null(strstr(r.error_message.p, "expression nests too deeply"));
    fx_free(g);

    char *alt = malloc(110000);
    size_t w = 0;
    for (int i = 0; w < 100000; i++)
        w += (size_t)sprintf(alt + w, "%stopic-%d", i ? "|" : "", i);
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 0, .regex = alt});
    assert_int_equal(r.error_code, KC_ERR_INVALID_REGULAR_EXPRESSION);
    assert_non_null(strstr(r.error_message.p, "longer than group.consumer.regex.max.bytes"));
    assert_true(r.error_message.len < 600); /* the pattern is shown cut */
    /* Another client is answered. */
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 0, .group = "g2", .topics = "t"});
    assert_int_equal(r.error_code, 0);
    free(alt);
    free(deep);
    fx_free(f);
}

/* group.consumer.regex.max.count: one more distinct regex than allowed is refused; a regex
 * already in use is not; a member leaving frees its regex. */
static void test_regex_count_cap(void **state)
{
    (void)state;
    kc_gm_config_t cfg = default_cfg();
    cfg.consumer_regex_max_count = 2;
    fx_t *f = fx_new_cfg(&cfg);
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .regex = "a.*"});
    assert_int_equal(r.error_code, 0);
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 0, .group = "g2", .regex = "b.*"});
    assert_int_equal(r.error_code, 0);
    r = send_hb(f, &(req_t){.member = "m3", .epoch = 0, .group = "g3", .regex = "c.*"});
    assert_int_equal(r.error_code, KC_ERR_INVALID_REGULAR_EXPRESSION);
    assert_non_null(strstr(r.error_message.p, "group.consumer.regex.max.count"));
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.refused[KC_GM_REFUSED_REGEX_LIMIT], 1);
    assert_int_equal(st.regexes_in_use, 2);
    /* In use in another group: fine. */
    r = send_hb(f, &(req_t){.member = "m4", .epoch = 0, .group = "g4", .regex = "a.*"});
    assert_int_equal(r.error_code, 0);
    /* g2's only member leaves: its regex is free, c.* fits. */
    r = send_hb(f, &(req_t){.member = "m2", .group = "g2", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    r = send_hb(f, &(req_t){.member = "m3", .epoch = 0, .group = "g3", .regex = "c.*"});
    assert_int_equal(r.error_code, 0);
    fx_free(f);
}

/* A fake authorizer: the principal may DESCRIBE the topics named in `allow` (comma list). */
typedef struct rights_s {
    const char *allow;
    int calls;
} rights_t;

static bool rights_describable(void *ctx, kc_str_t topic)
{
    rights_t *r = ctx;
    r->calls++;
    for (const char *p = r->allow; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (topic.len == (int32_t)len && memcmp(topic.p, p, len) == 0)
            return true;
        p += len + (e != NULL);
    }
    return false;
}

/* Under an authorizer a regex resolves to the topics the principal of the heartbeat that
 * resolves it may DESCRIBE (Kafka's refreshRegularExpressions with that member's request
 * context); the group's members share that resolution until the topics change or it is
 * group.consumer.regex.refresh.interval.ms old; timers never resolve it unfiltered. */
static void test_regex_filtered(void **state)
{
    (void)state;
    kc_gm_config_t cfg = default_cfg();
    cfg.consumer_regex_filtered = true;
    cfg.consumer_regex_refresh_interval_ms = 10000;
    fx_t *f = fx_new_cfg(&cfg);
    set_topic(f, "orders.eu", 2);
    set_topic(f, "orders.us", 2);
    rights_t ra = {"orders.eu", 0}, rb = {"orders.eu,orders.us,orders.jp", 0};
    kc_gm_topic_filter_t fa = {rights_describable, &ra}, fb = {rights_describable, &rb};
    /* A may describe orders.eu only: orders.us is filtered out. */
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "a1", .epoch = 0, .regex = "orders\\..*", .filter = &fa});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(asg_str(f, r.assignment), "orders.eu:0,1");
    assert_true(ra.calls >= 2); /* each match was asked about */
    int32_t ea = r.member_epoch;
    /* B joins with the same regex: the group's resolution (made with A's rights) is shared,
     * as in Kafka, until it is refreshed; nobody gets orders.us. */
    r = send_hb(f, &(req_t){.member = "b1", .epoch = 0, .regex = "orders\\..*", .filter = &fb});
    assert_int_equal(r.error_code, 0);
    assert_null(strstr(asg_str(f, r.assignment), "orders.us"));
    int32_t eb = r.member_epoch;
    r = send_hb(f, &(req_t){.member = "a1", .epoch = ea, .owned = "orders.eu:0,1", .filter = &fa});
    assert_int_equal(r.error_code, 0);
    assert_null(strstr(asg_str(f, r.assignment), "orders.us"));
    /* Just below the interval, B's heartbeat keeps the shared resolution. */
    f->now += 9999;
    r = send_hb(f, &(req_t){.member = "b1", .epoch = eb, .owned = "", .filter = &fb});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, eb);
    /* The resolution is now refresh.interval old: B's heartbeat resolves it again with B's
     * rights (an ACL granted meanwhile is seen the same way), orders.us comes in. */
    f->now += 1;
    r = send_hb(f, &(req_t){.member = "b1", .epoch = eb, .owned = "", .filter = &fb});
    assert_int_equal(r.error_code, 0);
    assert_true(r.member_epoch > eb);
    const char *owned_b = asg_str(f, r.assignment);
    assert_non_null(strstr(owned_b, "orders.us"));
    eb = r.member_epoch;
    /* A new topic: the next heartbeat (A's) resolves again at once, with A's rights: B is
     * told to give orders.us up, and orders.jp goes to nobody. */
    set_topic(f, "orders.jp", 1);
    r = send_hb(f, &(req_t){.member = "a1", .epoch = ea, .owned = "orders.eu:0,1", .filter = &fa});
    assert_int_equal(r.error_code, 0);
    if (r.assignment) {
        assert_null(strstr(asg_str(f, r.assignment), "orders.us"));
        assert_null(strstr(asg_str(f, r.assignment), "orders.jp"));
    }
    r = send_hb(f, &(req_t){.member = "b1", .epoch = eb, .owned = owned_b, .filter = &fb});
    assert_int_equal(r.error_code, 0);
    assert_non_null(r.assignment);
    assert_null(strstr(asg_str(f, r.assignment), "orders.us"));
    assert_null(strstr(asg_str(f, r.assignment), "orders.jp"));
    fx_free(f);
}

/* Without an authorizer nothing is filtered, and no filter is called even when one is given. */
static void test_regex_unfiltered(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    set_topic(f, "orders.eu", 2);
    set_topic(f, "orders.us", 2);
    rights_t ra = {"orders.eu", 0};
    kc_gm_topic_filter_t fa = {rights_describable, &ra};
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "a1", .epoch = 0, .regex = "orders\\..*", .filter = &fa});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(asg_str(f, r.assignment), "orders.eu:0,1;orders.us:0,1");
    assert_int_equal(ra.calls, 0);
    fx_free(f);
}

/* message.max.bytes: a heartbeat whose member metadata record would be larger is answered
 * UNKNOWN_SERVER_ERROR (Kafka's answer to RecordTooLargeException) and writes nothing. */
static void test_record_too_large(void **state)
{
    (void)state;
    kc_gm_config_t cfg = default_cfg();
    cfg.record_max_bytes = 4096;
    fx_t *f = fx_new_cfg(&cfg);
    char *names = malloc(100 * 64);
    size_t w = 0;
    for (int i = 0; i < 100; i++)
        w += (size_t)sprintf(names + w, "%stopic-with-a-rather-long-name-to-fill-the-record-%03d",
                             i ? "," : "", i);
    int nr = f->nr;
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = names});
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_SERVER_ERROR);
    assert_non_null(strstr(r.error_message.p, "larger than message.max.bytes (4096)"));
    assert_int_equal(f->nr, nr);
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    free(names);
    fx_free(f);
}

/* Subscription changes: a topic dropped from the subscription is revoked at the same epoch
 * before the new target is reached. */
static void test_subscription_change(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t,u"});
    assert_string_equal(asg_str(f, r.assignment), "t:0,1,2,3,4,5;u:0,1,2");
    r = send_hb(
        f, &(req_t){.member = "m1", .epoch = 2, .topics = "t", .owned = "t:0,1,2,3,4,5;u:0,1,2"});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 2); /* revoke u first */
    assert_string_equal(asg_str(f, r.assignment), "t:0,1,2,3,4,5");
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .owned = "t:0,1,2,3,4,5"});
    assert_int_equal(r.member_epoch, 3);
    assert_null(r.assignment); /* unchanged: nothing sent */
    fx_free(f);
}

/* The assignment is sent on a full request (and when joining), and when it changed. */
static void test_assignment_when(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    assert_non_null(r.assignment);
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .owned = "t:0,1,2,3,4,5"});
    assert_null(r.assignment);
    r = send_hb(f, &(req_t){.member = "m1",
                            .epoch = 2,
                            .rebalance = 60000,
                            .topics = "t",
                            .owned = "t:0,1,2,3,4,5"});
    assert_non_null(r.assignment);
    assert_string_equal(asg_str(f, r.assignment), "t:0,1,2,3,4,5");
    r = send_hb(f, &(req_t){.member = "m1", .epoch = 2, .rebalance = 60000, .topics = "t"});
    assert_null(r.assignment); /* no owned list: not a full request */
    fx_free(f);
}

/* ---- Admin and offsets -------------------------------------------------------------------- */

typedef struct lst_s {
    char buf[1024];
} lst_t;

static void list_fn(void *arg, const kc_group_info_t *g)
{
    lst_t *l = arg;
    size_t n = strlen(l->buf);
    snprintf(l->buf + n, sizeof(l->buf) - n, "%s%.*s/%s/%s", n ? " " : "", g->group_id.len,
             g->group_id.p, g->type, g->state_name);
}

static void test_describe_and_list(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &(req_t){.member = "m1",
                                                                   .epoch = 0,
                                                                   .topics = "t",
                                                                   .instance = "i1",
                                                                   .rack = "r1",
                                                                   .assignor = "range"});
    assert_int_equal(r.error_code, 0);
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.error_code, 0);
    assert_str(d.group_state, "Stable");
    assert_int_equal(d.group_epoch, 2);
    assert_int_equal(d.assignment_epoch, 2);
    assert_str(d.assignor_name, "range");
    assert_int_equal(d.members.n, 1);
    kc_member_t *m = &d.members.v[0];
    assert_str(m->member_id, "m1");
    assert_str(m->instance_id, "i1");
    assert_str(m->rack_id, "r1");
    assert_int_equal(m->member_epoch, 2);
    assert_str(m->client_id, "client");
    assert_str(m->client_host, "/10.0.0.1");
    assert_int_equal(m->subscribed_topic_names.n, 1);
    assert_str(m->subscribed_topic_names.v[0], "t");
    assert_int_equal(m->assignment.topic_partitions.n, 1);
    assert_str(m->assignment.topic_partitions.v[0].topic_name, "t");
    assert_int_equal(m->assignment.topic_partitions.v[0].partitions.n, 6);
    assert_int_equal(m->target_assignment.topic_partitions.n, 1);
    assert_int_equal(m->member_type, 1);
    assert_int_equal(d.authorized_operations, INT32_MIN);
    /* Unknown and classic groups. */
    d = describe(f, "nope");
    assert_int_equal(d.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(d.error_message, "Group nope not found.");
    /* The default assignor when nobody asks. */
    send_hb(f, &(req_t){.group = "g2", .member = "m1", .epoch = 0, .topics = "t"});
    d = describe(f, "g2");
    assert_str(d.assignor_name, "uniform");
    /* Listing shows the type and Kafka's consumer group states. */
    lst_t l = {{0}};
    kc_gm_each(f->gm, list_fn, &l);
    assert_non_null(strstr(l.buf, "g/consumer/Stable"));
    assert_non_null(strstr(l.buf, "g2/consumer/Stable"));
    /* DescribeGroups (the classic API) of a consumer group. */
    kc_describe_groups_described_group_t dg;
    kc_gm_describe(f->gm, 6, KC_STR_LIT("g"), false, &f->a, &dg);
    assert_int_equal(dg.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(dg.error_message, "Group g is not a classic group.");
    assert_str(dg.group_state, "Dead");
    kc_gm_describe(f->gm, 5, KC_STR_LIT("g"), false, &f->a, &dg);
    assert_int_equal(dg.error_code, 0);
    assert_str(dg.group_state, "Dead");
    fx_free(f);
}

/* The value of the last record of type `type` from `from` on, after its version (0). */
static kc_reader_t rec_value(fx_t *f, int from, int16_t type)
{
    const rec_t *hit = NULL;
    for (int i = from; i < f->nr; i++)
        if (rec_type(&f->recs[i]) == type)
            hit = &f->recs[i];
    if (!hit || !hit->val)
        fail_msg("no record of type %d in \"%s\"", (int)type, rec_kinds(f, from));
    kc_reader_t r;
    kc_rd_init(&r, hit->val, hit->vlen);
    assert_int_equal(kc_rd_i16(&r), 0);
    return r;
}

/* A new group starts at group epoch 1 with an (empty) target assignment at epoch 1, as Kafka
 * 4.4 does (KAFKA-20268): the first member's join bumps it to 2 and the member gets epoch 2,
 * never 1; the next join bumps it to 3. */
static void test_new_group_epochs(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 2);
    assert_string_equal(rec_kinds(f, 0), "5 3 7 6 8");
    kc_reader_t vr = rec_value(f, 0, KC_RECORD_CONSUMER_GROUP_METADATA_KEY);
    kc_consumer_group_metadata_value_t gv;
    assert_int_equal(kc_consumer_group_metadata_value_decode(&vr, &f->a, 0, &gv), 0);
    assert_int_equal(gv.epoch, 2);
    vr = rec_value(f, 0, KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY);
    kc_consumer_group_target_assignment_metadata_value_t tv;
    assert_int_equal(kc_consumer_group_target_assignment_metadata_value_decode(&vr, &f->a, 0, &tv),
                     0);
    assert_int_equal(tv.assignment_epoch, 2);
    vr = rec_value(f, 0, KC_RECORD_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY);
    kc_consumer_group_current_member_assignment_value_t cv;
    assert_int_equal(kc_consumer_group_current_member_assignment_value_decode(&vr, &f->a, 0, &cv),
                     0);
    assert_int_equal(cv.member_epoch, 2);
    assert_int_equal(cv.previous_member_epoch, 0);
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_str(d.group_state, "Stable");
    assert_int_equal(d.group_epoch, 2);
    assert_int_equal(d.assignment_epoch, 2);
    assert_int_equal(d.members.n, 1);
    assert_int_equal(d.members.v[0].member_epoch, 2);
    /* A second member joins: group and assignment epoch 3, and it is given epoch 3. */
    int from = f->nr;
    r = send_hb(f, &(req_t){.member = "m2", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.member_epoch, 3);
    vr = rec_value(f, from, KC_RECORD_CONSUMER_GROUP_METADATA_KEY);
    assert_int_equal(kc_consumer_group_metadata_value_decode(&vr, &f->a, 0, &gv), 0);
    assert_int_equal(gv.epoch, 3);
    d = describe(f, "g");
    assert_int_equal(d.group_epoch, 3);
    assert_int_equal(d.assignment_epoch, 3);
    assert_int_equal(d.members.n, 2);
    /* Replayed, the group is the same. */
    fx_t *g = replayed(f);
    assert_string_equal(dump(g, "g"), dump(f, "g"));
    assert_int_equal(describe(g, "g").group_epoch, 3);
    fx_free(g);
    fx_free(f);
}

static void test_offsets(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    kc_str_t g = KC_STR_LIT("g"), m1 = KC_STR_LIT("m1");
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 9, g, 2, m1, KC_STR_NULL), 0);
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 9, g, 3, m1, KC_STR_NULL),
                     KC_ERR_STALE_MEMBER_EPOCH);
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 9, g, 2, KC_STR_LIT("x"), KC_STR_NULL),
                     KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 8, g, 2, m1, KC_STR_NULL),
                     KC_ERR_UNSUPPORTED_VERSION);
    /* epoch -1 (an admin client) only while the group is empty. */
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 9, g, -1, KC_STR_EMPTY, KC_STR_NULL),
                     KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(kc_gm_validate_fetch(f->gm, g, m1, 2), 0);
    assert_int_equal(kc_gm_validate_fetch(f->gm, g, m1, 1), KC_ERR_STALE_MEMBER_EPOCH);
    assert_int_equal(kc_gm_validate_fetch(f->gm, g, KC_STR_LIT("x"), 2), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(kc_gm_validate_fetch(f->gm, g, KC_STR_NULL, -1), 0);
    assert_int_equal(kc_gm_validate_fetch(f->gm, g, KC_STR_EMPTY, -1), KC_ERR_UNKNOWN_MEMBER_ID);
    /* Offsets of subscribed topics are protected and cannot be deleted. */
    assert_true(kc_gm_subscribed(f->gm, g, KC_STR_LIT("t")));
    assert_false(kc_gm_subscribed(f->gm, g, KC_STR_LIT("u")));
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_NULL), 0);
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_LIT("t")),
                     KC_ERR_GROUP_SUBSCRIBED_TO_TOPIC);
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_LIT("u")), 0);
    int64_t base;
    assert_true(kc_gm_offsets_expirable(f->gm, g, &base));
    assert_int_equal(base, -1);
    /* DeleteGroups: not while it has members. */
    assert_int_equal(kc_gm_delete(f->gm, T(f), g), KC_ERR_NON_EMPTY_GROUP);
    send_hb(f, &(req_t){.member = "m1", .epoch = -1});
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 9, g, -1, KC_STR_EMPTY, KC_STR_NULL), 0);
    assert_false(kc_gm_subscribed(f->gm, g, KC_STR_LIT("t")));
    assert_int_equal(kc_gm_delete(f->gm, T(f), g), 0);
    fx_free(f);
}

/* ---- Classic groups and consumer groups --------------------------------------------------- */

static int16_t classic_join(fx_t *f, const char *group, const char *member, int *rc)
{
    kc_join_group_request_t req;
    kc_join_group_request_init(&req);
    req.group_id = kc_str_c(group);
    req.member_id = kc_str_c(member);
    req.protocol_type = KC_STR_LIT("consumer");
    req.session_timeout_ms = 10000;
    req.rebalance_timeout_ms = 10000;
    kc_join_group_request_protocol_t p = {KC_STR_LIT("range"),
                                          {(const uint8_t *)"\0\0\0\0\0\0", 6}};
    req.protocols.v = &p;
    req.protocols.n = 1;
    kc_join_group_response_t resp;
    *rc = kc_gm_join(f->gm, T(f), 5, &req, KC_STR_LIT("c"), KC_STR_LIT("/1.2.3.4"), (void *)1,
                     &f->a, &resp);
    return resp.error_code;
}

/* With group.consumer.migration.policy=disabled (Kafka 4.4): groups of one kind never take
 * members of the other, only empty groups change kind. The other policies: test_mixed.c. */
static void test_classic_interplay(void **state)
{
    (void)state;
    kc_gm_config_t cfg = default_cfg();
    cfg.consumer_migration_policy = KC_GM_MIGRATION_DISABLED;
    fx_t *f = fx_new_cfg(&cfg);
    send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    int rc;
    /* JoinGroup to a consumer group with members: refused. */
    assert_int_equal(classic_join(f, "g", "", &rc), KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(rc, KC_GM_ANSWERED);
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.refused[KC_GM_REFUSED_PROTOCOL], 1); /* counted, logged once at info */
    /* Heartbeat, SyncGroup: its members do not use the classic protocol. */
    kc_heartbeat_request_t hq;
    kc_heartbeat_request_init(&hq);
    hq.group_id = KC_STR_LIT("g");
    hq.member_id = KC_STR_LIT("m1");
    hq.generation_id = 2;
    kc_heartbeat_response_t hr;
    kc_gm_heartbeat(f->gm, T(f), 4, &hq, &hr);
    assert_int_equal(hr.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    /* LeaveGroup removes consumer-protocol members (the admin's "remove members"). */
    kc_leave_group_request_t lq;
    kc_leave_group_request_init(&lq);
    lq.group_id = KC_STR_LIT("g");
    kc_member_identity_t ids[2] = {{KC_STR_LIT("m1"), KC_STR_NULL, KC_STR_NULL},
                                   {KC_STR_LIT("zz"), KC_STR_NULL, KC_STR_NULL}};
    lq.members.v = ids;
    lq.members.n = 2;
    kc_leave_group_response_t lr;
    int from = f->nr;
    kc_gm_leave(f->gm, T(f), 5, &lq, &f->a, &lr);
    assert_int_equal(lr.error_code, 0);
    assert_int_equal(lr.members.n, 2);
    assert_int_equal(lr.members.v[0].error_code, 0);
    assert_int_equal(lr.members.v[1].error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_string_equal(rec_kinds(f, from), "8- 7- 5- 3");
    assert_string_equal(state_name(f, "g"), "Empty");
    /* JoinGroup to the empty consumer group: its tombstones, then a classic group. */
    from = f->nr;
    assert_int_equal(classic_join(f, "g", "", &rc), KC_ERR_MEMBER_ID_REQUIRED);
    assert_string_equal(rec_kinds(f, from), "6- 4- 3- 2"); /* and the new group's record */
    kc_group_info_t info;
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &info), 0);
    assert_string_equal(info.type, "classic");
    /* A consumer heartbeat joining the empty classic group converts it back (classic tombstone
     * first). */
    from = f->nr;
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "m2", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0);
    assert_string_equal(rec_kinds(f, from), "2- 5 3 7 6 8");
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &info), 0);
    assert_string_equal(info.type, "consumer");
    /* A classic group with members cannot be joined by a consumer member. */
    assert_int_equal(classic_join(f, "cg", "", &rc), KC_ERR_MEMBER_ID_REQUIRED);
    r = send_hb(f, &(req_t){.group = "cg", .member = "m3", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, 0); /* only a pending member: the group is still Empty */
    fx_t *f2 = fx_new_cfg(&cfg);
    kc_join_group_request_t req;
    kc_join_group_request_init(&req);
    req.group_id = KC_STR_LIT("cg");
    req.member_id = KC_STR_LIT("");
    req.protocol_type = KC_STR_LIT("consumer");
    req.session_timeout_ms = 10000;
    req.rebalance_timeout_ms = 10000;
    kc_join_group_request_protocol_t p = {KC_STR_LIT("range"), {(const uint8_t *)"x", 1}};
    req.protocols.v = &p;
    req.protocols.n = 1;
    kc_join_group_response_t jr;
    assert_int_equal(kc_gm_join(f2->gm, T(f2), 3, &req, KC_STR_LIT("c"), KC_STR_LIT("/h"),
                                (void *)1, &f2->a, &jr),
                     KC_GM_PARKED);
    r = send_hb(f2, &(req_t){.group = "cg", .member = "m3", .epoch = 0, .topics = "t"});
    assert_int_equal(r.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(r.error_message, "Cannot upgrade classic group cg to consumer group because "
                                "online upgrade is disabled.");
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f2->gm, &st);
    assert_int_equal(st.refused[KC_GM_REFUSED_PROTOCOL], 1);
    r = send_hb(f2, &(req_t){.group = "cg", .member = "m3", .epoch = 4});
    assert_int_equal(r.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(r.error_message, "Group cg is not a consumer group.");
    r = send_hb(f2, &(req_t){.group = "cg", .member = "m3", .epoch = -1});
    assert_str(r.error_message, "Group cg is not a consumer group.");
    kc_consumer_group_describe_described_group_t d = describe(f2, "cg");
    assert_int_equal(d.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(d.error_message, "Group cg is not a consumer group.");
    fx_free(f2);
    fx_free(f);
}

/* ---- Random sequences ------------------------------------------------------------------- */

/* Parse the dump's "assigned [...] revoking [...]" lists: no partition may be held by two
 * members at once (assigned or pending revocation), whatever happens. */
static void check_exclusive(fx_t *f, const char *group)
{
    const char *d = dump(f, group);
    static char seen[256][48];
    int n = 0;
    for (const char *p = d; *p; p++) {
        if (strncmp(p, " assigned [", 11) == 0)
            p += 10;
        else if (strncmp(p, " revoking [", 11) == 0)
            p += 10;
        else
            continue;
        const char *e = strchr(p, ']');
        assert_non_null(e);
        const char *q = p + 1;
        while (q < e) {
            char topic[40];
            int k = 0;
            while (q < e && *q != ':' && k < 39)
                topic[k++] = *q++;
            topic[k] = '\0';
            assert_true(q < e && *q == ':');
            q++;
            while (q < e && *q != ' ') {
                int part = (int)strtol(q, (char **)&q, 10);
                char key[48];
                snprintf(key, sizeof(key), "%s:%d", topic, part);
                for (int i = 0; i < n; i++)
                    if (strcmp(seen[i], key) == 0)
                        fail_msg("partition %s held twice:\n%s", key, d);
                assert_true(n < 256);
                snprintf(seen[n++], sizeof(seen[0]), "%s", key);
                if (*q == ',')
                    q++;
            }
            if (*q == ' ')
                q++;
        }
    }
}

static void test_random_sequences(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 12; seed++) {
        fx_t *f = fx_new();
        srand(seed);
        enum { N = 5 };
        cl_t *c[N];
        bool in[N] = {false};
        static const char *const subs[] = {"t", "t,u", "u"};
        for (int i = 0; i < N; i++) {
            char id[16];
            snprintf(id, sizeof(id), "m%d", i);
            c[i] = cl_new(id, "t");
            c[i]->instance = i % 2 ? NULL : (i == 0 ? "s0" : i == 2 ? "s2" : "s4");
        }
        for (int step = 0; step < 400; step++) {
            int i = rand() % N, act = rand() % 20;
            cl_t *m = c[i];
            if (act < 2) { /* (re)join */
                m->topics = subs[rand() % 3];
                if (cl_join(f, m) == 0)
                    in[i] = true;
            } else if (act < 12) {
                if (in[i] && cl_hb(f, m) != 0) {
                    in[i] = false; /* fenced or removed: it rejoins later */
                    m->owned[0] = '\0';
                }
            } else if (act < 13 && in[i]) {
                req_t o = {.member = m->id, .epoch = -1, .instance = m->instance};
                send_hb(f, &o);
                in[i] = false;
                m->owned[0] = '\0';
            } else if (act < 14 && in[i] && m->instance) {
                req_t o = {.member = m->id, .epoch = -2, .instance = m->instance};
                send_hb(f, &o);
                in[i] = false;
                m->owned[0] = '\0';
                snprintf(m->id, sizeof(m->id), "m%d-%d", i, step); /* a new incarnation */
            } else if (act < 15) {
                advance(f, rand() % 20000);
            } else if (act < 16) {
                set_topic(f, "u", 1 + rand() % 5);
            } else if (act < 17 && in[i]) { /* a stale epoch */
                req_t o = {.member = m->id,
                           .epoch = m->epoch - 1,
                           .instance = m->instance,
                           .owned = m->owned};
                send_hb(f, &o);
            } else {
                advance(f, rand() % 3000);
            }
            check_exclusive(f, "g");
            if (step % 50 == 49) {
                fx_t *g = replayed(f);
                assert_string_equal(dump(g, "g"), dump(f, "g"));
                fx_free(g);
            }
        }
        /* Everyone still in heartbeats every 5 s: members that left temporarily (or that the
         * clients gave up on) expire, and the group settles. */
        for (int r = 0; r < 20; r++) {
            advance(f, 5000);
            for (int i = 0; i < N; i++)
                if (in[i] && cl_hb(f, c[i]) != 0) {
                    in[i] = false;
                    c[i]->owned[0] = '\0';
                }
            check_exclusive(f, "g");
        }
        kc_group_info_t info;
        if (kc_gm_info(f->gm, KC_STR_LIT("g"), &info) == 0 && info.n_members > 0) {
            bool any = false;
            for (int i = 0; i < N; i++)
                any |= in[i];
            if (any)
                assert_string_equal(info.state_name, "Stable");
        }
        for (int i = 0; i < N; i++)
            free(c[i]);
        fx_free(f);
    }
}

/* ---- Rebalance history and JSON ------------------------------------------------------------ */

static const char *group_json(fx_t *f, const char *group)
{
    jbuf_t b = {0};
    assert_int_equal(kc_gm_json_group(f->gm, f->now, kc_str_c(group), jb_emit, &b), 0);
    if (!json_valid(b.p, b.n))
        fail_msg("invalid JSON: %s", b.p);
    char *out = kc_arena_alloc(&f->a, b.n + 1);
    memcpy(out, b.p, b.n + 1);
    free(b.p);
    return out;
}

static int rb_count(const char *json)
{
    const char *p = strstr(json, "\"rebalances\":[");
    assert_non_null(p);
    int n = 0;
    while ((p = strstr(p, "{\"generation\":")) != NULL) {
        n++;
        p++;
    }
    return n;
}

/* Rebalance i of the group (negative: from the end), up to its closing brace. */
static const char *rb_at(fx_t *f, const char *group, int i)
{
    const char *json = group_json(f, group);
    int n = rb_count(json);
    if (i < 0)
        i += n;
    assert_true(i >= 0 && i < n);
    const char *p = strstr(json, "\"rebalances\":["), *hit = NULL;
    for (int k = 0; k <= i; k++) {
        hit = strstr(p, "{\"generation\":");
        p = hit + 1;
    }
    const char *end = strchr(hit, '}');
    size_t len = (size_t)(end - hit) + 1;
    char *out = kc_arena_alloc(&f->a, len + 1);
    memcpy(out, hit, len);
    out[len] = '\0';
    return out;
}

__attribute__((format(printf, 2, 3))) static void assert_has(const char *hay, const char *fmt, ...)
{
    char want[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(want, sizeof(want), fmt, ap);
    va_end(ap);
    if (!strstr(hay, want))
        fail_msg("%s\ndoes not contain\n%s", hay, want);
}

/* One entry per group-epoch bump, with its cause; it ends when the group is Stable again. */
static void test_rb_consumer_causes(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[3] = {cl_new("m1", "t"), cl_new("m2", "t"), cl_new("m3", "t")};
    assert_int_equal(cl_join(f, c[0]), 0);
    assert_string_equal(
        rb_at(f, "g", -1),
        "{\"generation\":2,\"start_ms\":1000000,\"end_ms\":1000000,\"duration_ms\":0,"
        "\"cause\":\"member_joined\",\"member_id\":\"m1\",\"reason\":null,\"outcome\":\"stable\","
        "\"joined\":[\"m1\"],\"dropped\":[]}");
    advance(f, 100);
    assert_int_equal(cl_join(f, c[1]), 0);
    assert_has(rb_at(f, "g", -1),
               "{\"generation\":3,\"start_ms\":1000100,\"end_ms\":0,\"duration_ms\":0,"
               "\"cause\":\"member_joined\",\"member_id\":\"m2\",\"reason\":null,"
               "\"outcome\":null,\"joined\":[\"m2\"],\"dropped\":[]}");
    advance(f, 50);
    settle(f, c, 2, 6);
    assert_string_equal(state_name(f, "g"), "Stable");
    assert_has(rb_at(f, "g", -1),
               "{\"generation\":3,\"start_ms\":1000100,\"end_ms\":1000150,\"duration_ms\":50,");
    assert_has(rb_at(f, "g", -1), "\"outcome\":\"stable\",");

    /* m2 subscribes to another topic as well. */
    kc_consumer_group_heartbeat_response_t r = send_hb(
        f, &(req_t){.member = "m2", .epoch = c[1]->epoch, .topics = "t,u", .owned = c[1]->owned});
    assert_int_equal(r.error_code, 0);
    cl_take(f, c[1], &r);
    assert_has(rb_at(f, "g", -1),
               "{\"generation\":4,\"start_ms\":1000150,\"end_ms\":0,\"duration_ms\":0,"
               "\"cause\":\"metadata_changed\",\"member_id\":\"m2\",\"reason\":\"its "
               "subscription changed\",\"outcome\":null,\"joined\":[],\"dropped\":[]}");
    settle(f, c, 2, 6);

    /* The subscribed topics change: no member named. */
    set_topic(f, "t", 8);
    assert_int_equal(cl_hb(f, c[0]), 0);
    assert_has(rb_at(f, "g", -1),
               "{\"generation\":5,\"start_ms\":1000150,\"end_ms\":0,\"duration_ms\":0,"
               "\"cause\":\"metadata_changed\",\"member_id\":null,\"reason\":\"the subscribed "
               "topics' metadata changed\",\"outcome\":null,");
    settle(f, c, 2, 6);

    /* m2 leaves. */
    r = send_hb(f, &(req_t){.member = "m2", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    assert_has(rb_at(f, "g", -1), "\"cause\":\"member_left\",\"member_id\":\"m2\",\"reason\":null,"
                                  "\"outcome\":null,\"joined\":[],\"dropped\":[\"m2\"]}");
    settle(f, c, 1, 4);

    /* m3 joins, then goes silent: its session expires. */
    assert_int_equal(cl_join(f, c[2]), 0);
    cl_t *two[2] = {c[0], c[2]};
    settle(f, two, 2, 6);
    assert_string_equal(state_name(f, "g"), "Stable");
    for (int i = 0; i < 9; i++) {
        advance(f, 5000);
        assert_int_equal(cl_hb(f, c[0]), 0);
    }
    /* It expired at 1045150, when m1 heartbeated and took its partitions at once. */
    assert_has(rb_at(f, "g", -1),
               "{\"generation\":8,\"start_ms\":1045150,\"end_ms\":1045150,\"duration_ms\":0,"
               "\"cause\":\"session_timeout\",\"member_id\":\"m3\",\"reason\":null,"
               "\"outcome\":\"stable\",\"joined\":[],\"dropped\":[\"m3\"]}");
    /* m1 leaves last: the rebalance ends with the group Empty. */
    r = send_hb(f, &(req_t){.member = "m1", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    assert_has(rb_at(f, "g", -1), "\"cause\":\"member_left\",\"member_id\":\"m1\",");
    assert_has(rb_at(f, "g", -1), "\"outcome\":\"empty\",\"joined\":[],\"dropped\":[\"m1\"]}");

    const char *json = group_json(f, "g");
    assert_int_equal(rb_count(json), 8);
    assert_has(json, "{\"group_id\":\"g\",\"type\":\"consumer\",\"state\":\"Empty\",");
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.rebalances[KC_RB_MEMBER_JOINED], 3);
    assert_int_equal(st.rebalances[KC_RB_METADATA_CHANGED], 2);
    assert_int_equal(st.rebalances[KC_RB_MEMBER_LEFT], 2);
    assert_int_equal(st.rebalances[KC_RB_SESSION_TIMEOUT], 1);
    for (int i = 0; i < 3; i++)
        free(c[i]);
    fx_free(f);
}

/* A member that does not revoke within its rebalance timeout is fenced: sync_timeout. A newer
 * bump before a rebalance ended marks that one "restarted". */
static void test_rb_consumer_rebalance_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("m1", "t"), cl_new("m2", "t")};
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    req_t o = {.member = "m1", .epoch = c[0]->epoch, .owned = "t:0,1,2,3,4,5"};
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &o);
    assert_int_equal(r.error_code, 0);
    for (int i = 0; i < 12; i++) {
        advance(f, 5000);
        send_hb(f, &o);
        cl_hb(f, c[1]);
    }
    assert_has(rb_at(f, "g", -2), "{\"generation\":3,\"start_ms\":1000000,\"end_ms\":1060000,");
    assert_has(rb_at(f, "g", -2), "\"outcome\":\"restarted\",");
    assert_has(rb_at(f, "g", -1),
               "{\"generation\":4,\"start_ms\":1060000,\"end_ms\":1060000,\"duration_ms\":0,"
               "\"cause\":\"sync_timeout\",\"member_id\":\"m1\",\"reason\":\"it failed to "
               "transition from epoch 2 within 60000ms\",\"outcome\":\"stable\",\"joined\":[],"
               "\"dropped\":[\"m1\"]}");
    free(c[0]);
    free(c[1]);
    fx_free(f);
}

/* A static member back under a new id with another subscription: static_member_replaced. */
static void test_rb_consumer_static_replaced(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c[2] = {cl_new("s1", "t"), cl_new("m2", "t")};
    c[0]->instance = "i1";
    cl_join(f, c[0]);
    cl_join(f, c[1]);
    settle(f, c, 2, 4);
    kc_consumer_group_heartbeat_response_t r =
        send_hb(f, &(req_t){.member = "s1", .instance = "i1", .epoch = -2});
    assert_int_equal(r.error_code, 0);
    int before = rb_count(group_json(f, "g"));
    cl_t *back = cl_new("s1b", "t,u");
    back->instance = "i1";
    assert_int_equal(cl_join(f, back), 0);
    assert_int_equal(rb_count(group_json(f, "g")), before + 1);
    assert_has(rb_at(f, "g", -1),
               "\"cause\":\"static_member_replaced\",\"member_id\":\"s1b\",\"reason\":\"a static "
               "member rejoined under a new member id\",");
    assert_has(rb_at(f, "g", -1), "\"joined\":[\"s1b\"],\"dropped\":[\"s1\"]}");
    free(c[0]);
    free(c[1]);
    free(back);
    fx_free(f);
}

/* The consumer group JSON: members with epochs, states, subscriptions and assignments by
 * topic name; the summary list; the ring keeps 32. */
static void test_json_consumer_group(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cl_t *c = cl_new("m1", "t");
    assert_int_equal(cl_join(f, c), 0);
    advance(f, 700);
    const char *json = group_json(f, "g");
    assert_has(json, "{\"group_id\":\"g\",\"type\":\"consumer\",\"state\":\"Stable\","
                     "\"protocol_type\":\"consumer\",\"protocol\":\"uniform\",\"generation\":2,"
                     "\"assignment_epoch\":2,\"leader\":null,\"members\":[{\"member_id\":\"m1\","
                     "\"instance_id\":null,\"client_id\":\"client\",\"client_host\":"
                     "\"/10.0.0.1\",\"assignment\":{\"t\":[0,1,2,3,4,5]},"
                     "\"pending_revocation\":{},\"target_assignment\":{\"t\":[0,1,2,3,4,5]},"
                     "\"last_heartbeat_age_ms\":700,\"member_epoch\":2,\"state\":\"STABLE\","
                     "\"subscribed_topics\":[\"t\"],\"subscribed_regex\":null,\"assignor\":null,"
                     "\"rebalance_timeout_ms\":60000}],\"rebalances\":[");
    /* Flip the subscription 40 times: 41 bumps, the last 32 kept. */
    for (int i = 0; i < 40; i++) {
        kc_consumer_group_heartbeat_response_t r =
            send_hb(f, &(req_t){.member = "m1",
                                .epoch = c->epoch,
                                .topics = i % 2 ? "t" : "t,u",
                                .owned = c->owned});
        assert_int_equal(r.error_code, 0);
        cl_take(f, c, &r);
        settle(f, &c, 1, 4);
    }
    json = group_json(f, "g");
    assert_int_equal(rb_count(json), KC_RB_HISTORY);
    assert_has(rb_at(f, "g", 0), "{\"generation\":11,");
    assert_has(rb_at(f, "g", -1), "{\"generation\":42,");
    /* The list. */
    jbuf_t b = {0};
    bool first = true;
    kc_gm_json_list(f->gm, f->now, jb_emit, &b, &first);
    assert_false(first);
    assert_true(json_valid(b.p, b.n));
    assert_has(b.p, "{\"group_id\":\"g\",\"type\":\"consumer\",\"state\":\"Stable\","
                    "\"protocol_type\":\"consumer\",\"protocol\":\"uniform\",\"generation\":42,"
                    "\"members\":1,\"state_timestamp_ms\":-1,\"rebalance_count\":41,"
                    "\"last_rebalance_end_ms\":");
    free(b.p);
    jbuf_t none = {0};
    assert_int_equal(kc_gm_json_group(f->gm, f->now, KC_STR_LIT("nope"), jb_emit, &none), -1);
    assert_null(none.p);
    free(c);
    fx_free(f);
}

/* ---- Assignments computed off the loop (group.consumer.assignor.offload.*) ---------------- */

static fx_t *fx_offload(int64_t threshold)
{
    kc_gm_config_t c = default_cfg();
    c.consumer_offload_threshold = threshold;
    return fx_new_cfg(&c);
}

/* Run only the oldest waiting job. */
static void run_one(fx_t *f)
{
    assert_true(f->njobs > 0);
    kc_gm_job_t *job = f->jobs[0];
    memmove(f->jobs, f->jobs + 1, (size_t)(f->njobs - 1) * sizeof(f->jobs[0]));
    f->njobs--;
    kc_gm_job_run(job);
    kc_gm_job_done(job, T(f));
}

static void assert_replays(fx_t *f)
{
    fx_t *r = replayed(f);
    assert_string_equal(dump(r, "g"), dump(f, "g"));
    fx_free(r);
}

/* A join whose assignment goes off the loop: the member is in at once, at the group's current
 * (empty) assignment of epoch 1 (why a new group starts at epoch 1), and gets its partitions
 * at the first heartbeat after the job finished; the job writes the target records. */
static void test_offload_join(void **state)
{
    (void)state;
    fx_t *f = fx_offload(1);
    cl_t *a = cl_new("m1", "t");
    int from = f->nr;
    assert_int_equal(cl_join(f, a), 0);
    assert_int_equal(a->epoch, 1);
    assert_true(a->got);
    assert_string_equal(a->owned, "");
    assert_string_equal(rec_kinds(f, from), "5 3 8");
    assert_int_equal(f->njobs, 1);
    assert_string_equal(state_name(f, "g"), "Assigning");
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.group_epoch, 2);
    assert_int_equal(d.assignment_epoch, 1);
    /* Heartbeats meanwhile change nothing and start no second job. */
    from = f->nr;
    assert_int_equal(cl_hb(f, a), 0);
    assert_int_equal(a->epoch, 1);
    assert_false(a->got);
    assert_int_equal(f->nr, from);
    assert_int_equal(f->njobs, 1);
    /* The result: the member's target, then the assignment epoch, as Kafka writes them. */
    run_jobs(f);
    assert_string_equal(rec_kinds(f, from), "7 6");
    assert_string_equal(state_name(f, "g"), "Reconciling");
    assert_int_equal(cl_hb(f, a), 0);
    assert_int_equal(a->epoch, 2);
    assert_string_equal(a->owned, "t:0,1,2,3,4,5");
    assert_int_equal(cl_hb(f, a), 0);
    assert_string_equal(state_name(f, "g"), "Stable");
    assert_replays(f);
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    uint64_t inl = 0, off = 0;
    for (int i = 0; i < KC_GM_ASSIGN_BUCKETS; i++) {
        inl += st.assign_time[0][i];
        off += st.assign_time[1][i];
    }
    assert_int_equal(inl, 0);
    assert_int_equal(off, 1);
    free(a);
    fx_free(f);
}

/* Members join while a job runs: no second job starts; when the first finishes its result is
 * applied at its own epoch (the group at that epoch) and the next one starts at once for the
 * newest epoch, until the assignment catches up with the group. */
static void test_offload_churn(void **state)
{
    (void)state;
    fx_t *f = fx_offload(1);
    cl_t *c[3] = {cl_new("m1", "t"), cl_new("m2", "t"), cl_new("m3", "t")};
    assert_int_equal(cl_join(f, c[0]), 0);
    assert_int_equal(cl_join(f, c[1]), 0);
    assert_int_equal(c[1]->epoch, 1);
    assert_int_equal(f->njobs, 1);
    assert_int_equal(describe(f, "g").group_epoch, 3);
    int from = f->nr;
    run_one(f);
    /* Epoch 2's assignment knew only m1. */
    assert_string_equal(rec_kinds(f, from), "7 6");
    assert_int_equal(describe(f, "g").assignment_epoch, 2);
    assert_int_equal(f->njobs, 1);
    assert_int_equal(f->offloads, 2);
    assert_int_equal(cl_hb(f, c[0]), 0);
    assert_int_equal(c[0]->epoch, 2);
    assert_string_equal(c[0]->owned, "t:0,1,2,3,4,5");
    /* m3 joins while epoch 3's runs. */
    assert_int_equal(cl_join(f, c[2]), 0);
    assert_int_equal(c[2]->epoch, 2);
    assert_string_equal(c[2]->owned, "");
    run_jobs(f);
    assert_int_equal(f->offloads, 3);
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.group_epoch, 4);
    assert_int_equal(d.assignment_epoch, 4);
    settle(f, c, 3, 6);
    assert_string_equal(state_name(f, "g"), "Stable");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i]->epoch, 4);
        assert_int_equal(count_parts(c[i]->owned), 2);
    }
    check_exclusive(f, "g");
    assert_replays(f);
    for (int i = 0; i < 3; i++)
        free(c[i]);
    fx_free(f);
}

/* The group changes while a job runs: a member that left gets no target from the result, and
 * the result for a static member that was replaced goes to its successor. */
static void test_offload_members_change(void **state)
{
    (void)state;
    fx_t *f = fx_offload(1);
    cl_t *c[3] = {cl_new("s1", "t"), cl_new("m2", "t"), cl_new("m3", "t")};
    c[0]->instance = "i1";
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cl_join(f, c[i]), 0);
        run_jobs(f);
    }
    settle(f, c, 3, 6);
    assert_string_equal(state_name(f, "g"), "Stable");
    /* m4 joins: a job for epoch 5 starts with the four of them. */
    cl_t *m4 = cl_new("m4", "t");
    assert_int_equal(cl_join(f, m4), 0);
    assert_int_equal(f->njobs, 1);
    /* Meanwhile m3 leaves and s1 is replaced by s1b (same instance id). */
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &(req_t){.member = "m3", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    r = send_hb(f, &(req_t){.member = "s1", .instance = "i1", .epoch = -2});
    assert_int_equal(r.error_code, 0);
    cl_t *back = cl_new("s1b", "t");
    back->instance = "i1";
    assert_int_equal(cl_join(f, back), 0);
    int from = f->nr;
    run_one(f);
    /* Epoch 5's split of the four (2, 2, 1, 1): s1's share goes to s1b, m4 gets its first
     * partition, m2 keeps its two; nothing for m3, which left. Then the epoch. */
    assert_string_equal(rec_kinds(f, from), "7 7 6");
    const char *d1 = dump(f, "g");
    assert_null(strstr(d1, "target m3 "));
    assert_null(strstr(d1, "target s1 "));
    assert_non_null(strstr(d1, "target s1b [7a740000000000000000000000000000:0]\n"));
    assert_non_null(strstr(d1, "target m4 [7a740000000000000000000000000000:1]\n"));
    assert_int_equal(describe(f, "g").assignment_epoch, 5);
    assert_replays(f);
    /* m3's leaving bumped the epoch after the job began: the next job balances the three. */
    run_jobs(f);
    cl_t *now[3] = {back, c[1], m4};
    settle(f, now, 3, 8);
    assert_string_equal(state_name(f, "g"), "Stable");
    for (int i = 0; i < 3; i++)
        assert_int_equal(count_parts(now[i]->owned), 2);
    check_exclusive(f, "g");
    assert_replays(f);
    for (int i = 0; i < 3; i++)
        free(c[i]);
    free(m4);
    free(back);
    fx_free(f);
}

/* A job whose group or manager is gone when it finishes only frees itself (run under ASan). */
static void test_offload_orphans(void **state)
{
    (void)state;
    fx_t *f = fx_offload(1);
    cl_t *a = cl_new("m1", "t");
    assert_int_equal(cl_join(f, a), 0);
    assert_int_equal(f->njobs, 1);
    /* The member leaves and the empty group is deleted while the job runs. */
    kc_consumer_group_heartbeat_response_t r = send_hb(f, &(req_t){.member = "m1", .epoch = -1});
    assert_int_equal(r.error_code, 0);
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("g")), 0);
    int from = f->nr;
    run_jobs(f);
    assert_int_equal(f->nr, from);
    assert_string_equal(state_name(f, "g"), "none");
    /* A job still out when its manager is freed (fx_free runs it after kc_gm_free). */
    assert_int_equal(cl_join(f, a), 0);
    assert_int_equal(f->njobs, 1);
    free(a);
    fx_free(f);
}

/* Only large assignments leave the loop; a host that cannot take a job gets none (the
 * assignment is then computed at once, after the heartbeat's own records). */
static void test_offload_threshold_and_refusal(void **state)
{
    (void)state;
    fx_t *f = fx_offload(100);
    cl_t *a = cl_new("m1", "t"), *b = cl_new("m2", "t,big");
    /* 1 member + 6 partitions: computed in the heartbeat. */
    assert_int_equal(cl_join(f, a), 0);
    assert_int_equal(f->njobs, 0);
    assert_string_equal(a->owned, "t:0,1,2,3,4,5");
    /* 2 members + 6 + 120 partitions: off the loop. */
    set_topic(f, "big", 120);
    assert_int_equal(cl_join(f, b), 0);
    assert_int_equal(f->njobs, 1);
    run_jobs(f);
    /* Refused: the heartbeat answers from the old target and the result follows at once. */
    f->refuse_jobs = true;
    cl_t *c = cl_new("m3", "t,big");
    int from = f->nr;
    assert_int_equal(cl_join(f, c), 0);
    assert_int_equal(f->njobs, 0);
    assert_string_equal(c->owned, "");
    const char *kinds = rec_kinds(f, from);
    assert_string_equal(kinds + strlen(kinds) - 1, "6");
    kc_consumer_group_describe_described_group_t d = describe(f, "g");
    assert_int_equal(d.assignment_epoch, d.group_epoch);
    cl_t *all[3] = {a, b, c};
    settle(f, all, 3, 8);
    assert_string_equal(state_name(f, "g"), "Stable");
    check_exclusive(f, "g");
    assert_replays(f);
    /* Disabled (-1): never off the loop, however large. */
    fx_t *g = fx_offload(-1);
    set_topic(g, "big", 120);
    cl_t *x = cl_new("x", "t,big");
    assert_int_equal(cl_join(g, x), 0);
    assert_int_equal(g->offloads, 0);
    assert_int_equal(count_parts(x->owned), 126);
    free(a);
    free(b);
    free(c);
    free(x);
    fx_free(f);
    fx_free(g);
}

/* ---- The manager: one map, one heap, one replay switch ------------------------------------ */

static void collect_type(void *arg, const kc_group_info_t *g)
{
    char *out = arg;
    strcat(out, g->type);
    strcat(out, " ");
}

/* Groups of both kinds share the manager's one map and one heap: the earliest deadline of
 * either kind is the manager's, ListGroups lists the classic groups first, and a tick gives
 * each kind its own tick_budget, so classic timers never starve consumer ones. */
static void test_manager_one_heap(void **state)
{
    (void)state;
    kc_gm_config_t c = default_cfg();
    c.tick_budget = 2; /* a group examined and one of its timers fired */
    fx_t *f = fx_new_cfg(&c);
    int64_t t0 = f->now;
    send_hb(f, &(req_t){.member = "m1", .epoch = 0, .topics = "t"});
    int rc;
    /* v5 without a member id: a pending member with the JoinGroup's session timeout. */
    assert_int_equal(classic_join(f, "k", "", &rc), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(kc_gm_next_deadline(f->gm), t0 + 10000);
    char types[64] = "";
    kc_gm_each(f->gm, collect_type, types);
    assert_string_equal(types, "classic consumer ");
    kc_group_info_t info;
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("k"), &info), 0);
    assert_string_equal(info.type, "classic");
    assert_string_equal(state_name(f, "g"), "Stable");
    /* Both due: one tick fires the classic pending member's timeout and the consumer member's
     * session timeout, one of each kind. */
    f->now = t0 + 45001;
    kc_gm_tick(f->gm, T(f));
    assert_string_equal(state_name(f, "g"), "Empty");
    assert_int_equal(kc_gm_next_deadline(f->gm), INT64_MAX);
    fx_free(f);
}

/* kc_gm_replay's switch: records that are not group records are left to the offsets store
 * (1), a key without a type is malformed (-2), an offset commit tombstone creates no group. */
static void test_manager_replay_switch(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    uint8_t k99[] = {0, 99, 0, 1, 'x'};
    assert_int_equal(kc_gm_replay(f->gm, k99, sizeof(k99), k99, sizeof(k99)), 1);
    uint8_t k16[] = {0, 16, 0, 1, 'x'};
    assert_int_equal(kc_gm_replay(f->gm, k16, sizeof(k16), NULL, 0), 1);
    uint8_t k1[] = {0};
    assert_int_equal(kc_gm_replay(f->gm, k1, sizeof(k1), NULL, 0), -2);
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, 1);
    kc_offset_commit_key_t k = {KC_STR_LIT("g"), KC_STR_LIT("t"), 0};
    kc_offset_commit_key_encode(&w, 1, &k);
    assert_int_equal(kc_gm_replay(f->gm, w.buf, w.len, NULL, 0), 1);
    kc_wr_free(&w);
    kc_group_info_t info;
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &info), -1);
    fx_free(f);
}

int main(void)
{
    kc_diag_set_level(KC_DIAG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_join_three_then_fourth),
        cmocka_unit_test(test_leave),
        cmocka_unit_test(test_session_timeout),
        cmocka_unit_test(test_wall_clock_step),
        cmocka_unit_test(test_rebalance_timeout),
        cmocka_unit_test(test_fencing),
        cmocka_unit_test(test_max_size),
        cmocka_unit_test(test_static_leave_rejoin),
        cmocka_unit_test(test_records_and_replay),
        cmocka_unit_test(test_replay_group_types),
        cmocka_unit_test(test_metadata_change),
        cmocka_unit_test(test_regex),
        cmocka_unit_test(test_regex_re2),
        cmocka_unit_test(test_regex_hostile),
        cmocka_unit_test(test_regex_count_cap),
        cmocka_unit_test(test_regex_filtered),
        cmocka_unit_test(test_regex_unfiltered),
        cmocka_unit_test(test_record_too_large),
        cmocka_unit_test(test_subscription_change),
        cmocka_unit_test(test_assignment_when),
        cmocka_unit_test(test_describe_and_list),
        cmocka_unit_test(test_new_group_epochs),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_classic_interplay),
        cmocka_unit_test(test_random_sequences),
        cmocka_unit_test(test_rb_consumer_causes),
        cmocka_unit_test(test_rb_consumer_rebalance_timeout),
        cmocka_unit_test(test_rb_consumer_static_replaced),
        cmocka_unit_test(test_json_consumer_group),
        cmocka_unit_test(test_offload_join),
        cmocka_unit_test(test_offload_churn),
        cmocka_unit_test(test_offload_members_change),
        cmocka_unit_test(test_offload_orphans),
        cmocka_unit_test(test_offload_threshold_and_refusal),
        cmocka_unit_test(test_manager_one_heap),
        cmocka_unit_test(test_manager_replay_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
