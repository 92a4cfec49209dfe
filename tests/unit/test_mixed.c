/* test_mixed.c - mixed classic/consumer groups, as Kafka 4.4 serves them: the online upgrade
 * of a classic group with members, classic members inside a consumer group (JoinGroup,
 * SyncGroup, Heartbeat, LeaveGroup, their timers), the migration policy, and the replay of a
 * converted group.
 *
 * Each test builds a manager with fake ops (records copied into the fixture, a topic list)
 * and drives it with requests on a fake clock. Classic members carry real
 * ConsumerProtocolSubscription / Assignment bytes, encoded with the generated codecs.
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

/* ---- Fixture ---------------------------------------------------------------------------- */

#define MAXR 2048

typedef struct rec_s {
    uint8_t *key;
    size_t klen;
    uint8_t *val; /* NULL: tombstone */
    size_t vlen;
} rec_t;

typedef struct fx_s {
    kc_gm_t *gm;
    kc_gm_config_t cfg;
    int64_t now;
    kc_arena_t a;
    rec_t recs[MAXR];
    int nr;
    kc_gm_topic_t topics[2];
    size_t nt;
    /* Parked classic answers, by waiter (1-based slot). */
    kc_join_group_response_t joins[8];
    bool joined[8];
    kc_sync_group_response_t syncs[8];
    bool synced[8];
} fx_t;

static kc_time_t T(const fx_t *f)
{
    return (kc_time_t){f->now, f->now + 1700000000000};
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
    out->version = 1;
}

static void on_join(void *ctx, void *w, const kc_join_group_response_t *r)
{
    fx_t *f = ctx;
    int i = (int)(intptr_t)w - 1;
    assert_true(i >= 0 && i < 8);
    f->joins[i] = *r;
    f->joined[i] = true;
}

static void on_sync(void *ctx, void *w, const kc_sync_group_response_t *r)
{
    fx_t *f = ctx;
    int i = (int)(intptr_t)w - 1;
    assert_true(i >= 0 && i < 8);
    f->syncs[i] = *r;
    f->synced[i] = true;
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
    kc_gm_ops_t ops = {.ctx = f,
                       .join_done = on_join,
                       .sync_done = on_sync,
                       .record = on_record,
                       .topics = on_topics};
    f->gm = kc_gm_new(&f->cfg, &ops);
    assert_non_null(f->gm);
    kc_gm_set_seed(f->gm, 11);
    f->topics[0].name = KC_STR_LIT("t");
    memset(&f->topics[0].id, 0, sizeof(kc_uuid_t));
    f->topics[0].id.b[0] = 0x7a;
    f->topics[0].id.b[1] = 't';
    f->topics[0].partitions = 6;
    f->nt = 1;
    return f;
}

static fx_t *fx_new(void)
{
    kc_gm_config_t c = default_cfg();
    return fx_new_cfg(&c);
}

static void fx_free(fx_t *f)
{
    kc_gm_free(f->gm);
    for (int i = 0; i < f->nr; i++) {
        free(f->recs[i].key);
        free(f->recs[i].val);
    }
    kc_arena_free(&f->a);
    free(f);
}

static void advance(fx_t *f, int64_t ms)
{
    int64_t t = f->now + ms;
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

/* The record types from record `from` on, a tombstone marked with '-'. */
static const char *rec_kinds(fx_t *f, int from)
{
    static char buf[1024];
    size_t w = 0;
    buf[0] = '\0';
    for (int i = from; i < f->nr && w + 8 < sizeof(buf); i++) {
        int16_t t = (int16_t)(f->recs[i].key[0] << 8 | f->recs[i].key[1]);
        w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%d%s", w ? " " : "", t,
                              f->recs[i].val ? "" : "-");
    }
    return buf;
}

static const char *dump(fx_t *f, const char *group)
{
    static char buf[2][8192];
    static int k;
    k ^= 1;
    size_t n = kc_gm_consumer_dump(f->gm, kc_str_c(group), buf[k], sizeof(buf[k]));
    assert_true(n < sizeof(buf[k]));
    if (n == 0)
        buf[k][0] = '\0';
    return buf[k];
}

static const char *group_type(fx_t *f, const char *group)
{
    static char buf[32];
    kc_group_info_t info;
    if (kc_gm_info(f->gm, kc_str_c(group), &info) != 0)
        return "none";
    snprintf(buf, sizeof(buf), "%s %s", info.type, info.state_name);
    return buf;
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

/* ---- The embedded consumer protocol ----------------------------------------------------- */

/* A ConsumerProtocolSubscription of `version` for topic "t", owning `owned` ("0,1,2"; NULL:
 * nothing), in f's arena. */
static kc_bytes_t subscription(fx_t *f, int16_t version, const char *owned)
{
    kc_consumer_protocol_subscription_t m;
    kc_consumer_protocol_subscription_init(&m);
    static kc_str_t topics[1];
    topics[0] = KC_STR_LIT("t");
    m.topics.v = topics;
    m.topics.n = 1;
    kc_consumer_protocol_subscription_topic_partition_t *tp = kc_arena_alloc(&f->a, sizeof(*tp));
    int32_t *parts = kc_arena_alloc(&f->a, 16 * sizeof(int32_t));
    int n = 0;
    for (const char *p = owned; p && *p;) {
        parts[n++] = (int32_t)strtol(p, (char **)&p, 10);
        if (*p == ',')
            p++;
    }
    tp->topic = KC_STR_LIT("t");
    tp->partitions.v = parts;
    tp->partitions.n = n;
    m.owned_partitions.v = tp;
    m.owned_partitions.n = n > 0 ? 1 : 0;
    m.rack_id = version >= 3 ? KC_STR_LIT("r1") : KC_STR_NULL;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, version);
    kc_consumer_protocol_subscription_encode(&w, version, &m);
    kc_bytes_t out = {kc_arena_dup(&f->a, w.buf, w.len), (int32_t)w.len};
    kc_wr_free(&w);
    return out;
}

/* A ConsumerProtocolAssignment of topic "t" partitions `parts` ("0,1,2"), with `user_data`. */
static kc_bytes_t assignment(fx_t *f, const char *parts_s, const char *user_data)
{
    kc_consumer_protocol_assignment_t m;
    kc_consumer_protocol_assignment_init(&m);
    kc_consumer_protocol_assignment_topic_partition_t *tp = kc_arena_alloc(&f->a, sizeof(*tp));
    int32_t *parts = kc_arena_alloc(&f->a, 16 * sizeof(int32_t));
    int n = 0;
    for (const char *p = parts_s; *p;) {
        parts[n++] = (int32_t)strtol(p, (char **)&p, 10);
        if (*p == ',')
            p++;
    }
    tp->topic = KC_STR_LIT("t");
    tp->partitions.v = parts;
    tp->partitions.n = n;
    m.assigned_partitions.v = tp;
    m.assigned_partitions.n = 1;
    if (user_data)
        m.user_data = (kc_bytes_t){(const uint8_t *)user_data, (int32_t)strlen(user_data)};
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, 1);
    kc_consumer_protocol_assignment_encode(&w, 1, &m);
    kc_bytes_t out = {kc_arena_dup(&f->a, w.buf, w.len), (int32_t)w.len};
    kc_wr_free(&w);
    return out;
}

/* The partitions of topic "t" in an assignment ("0,1,2"; "?" when it is not one). */
static const char *parts_of(kc_bytes_t b)
{
    static char buf[128];
    kc_reader_t r;
    kc_rd_init(&r, b.p, (size_t)b.len);
    int16_t v = kc_rd_i16(&r);
    kc_arena_t a;
    kc_arena_init(&a);
    kc_consumer_protocol_assignment_t m;
    size_t w = 0;
    buf[0] = '\0';
    if (r.err || kc_consumer_protocol_assignment_decode(&r, &a, v, &m) != 0) {
        snprintf(buf, sizeof(buf), "?");
    } else {
        for (int32_t i = 0; i < m.assigned_partitions.n; i++)
            for (int32_t k = 0; k < m.assigned_partitions.v[i].partitions.n; k++)
                w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%d", w ? "," : "",
                                      (int)m.assigned_partitions.v[i].partitions.v[k]);
    }
    kc_arena_free(&a);
    return buf;
}

/* ---- Classic clients ---------------------------------------------------------------------- */

typedef struct cm_s {
    char id[64];
    const char *instance;
    int slot; /* waiter slot, 1..8 */
    int32_t generation;
    char owned[64]; /* what it owns ("0,1,2") */
    int16_t sub_version;
    const char *ptype; /* NULL: "consumer" */
} cm_t;

/* A JoinGroup (v5): returns the error; an answer at once or parked (then *parked). */
static int16_t cjoin(fx_t *f, const char *group, cm_t *m, bool *parked)
{
    kc_join_group_request_t q;
    kc_join_group_request_init(&q);
    q.group_id = kc_str_c(group);
    q.member_id = kc_str_c(m->id);
    q.group_instance_id = m->instance ? kc_str_c(m->instance) : KC_STR_NULL;
    q.protocol_type = kc_str_c(m->ptype ? m->ptype : "consumer");
    q.session_timeout_ms = 10000;
    q.rebalance_timeout_ms = 20000;
    kc_join_group_request_protocol_t *p = kc_arena_alloc(&f->a, 2 * sizeof(*p));
    kc_bytes_t sub = subscription(f, m->sub_version, m->owned[0] ? m->owned : NULL);
    p[0] = (kc_join_group_request_protocol_t){KC_STR_LIT("range"), sub};
    p[1] = (kc_join_group_request_protocol_t){KC_STR_LIT("roundrobin"), sub};
    q.protocols.v = p;
    q.protocols.n = 2;
    kc_join_group_response_t r;
    f->joined[m->slot - 1] = false;
    int rc = kc_gm_join(f->gm, T(f), 5, &q, KC_STR_LIT("cl"), KC_STR_LIT("/10.0.0.2"),
                        (void *)(intptr_t)m->slot, &f->a, &r);
    if (parked)
        *parked = rc == KC_GM_PARKED;
    if (rc == KC_GM_PARKED)
        return 0;
    if (r.member_id.len > 0)
        snprintf(m->id, sizeof(m->id), "%.*s", (int)r.member_id.len, r.member_id.p);
    if (r.error_code == 0)
        m->generation = r.generation_id;
    return r.error_code;
}

/* Take a parked JoinGroup's answer. */
static int16_t cjoin_done(fx_t *f, cm_t *m)
{
    assert_true(f->joined[m->slot - 1]);
    kc_join_group_response_t *r = &f->joins[m->slot - 1];
    if (r->member_id.len > 0)
        snprintf(m->id, sizeof(m->id), "%.*s", (int)r->member_id.len, r->member_id.p);
    if (r->error_code == 0)
        m->generation = r->generation_id;
    return r->error_code;
}

/* A SyncGroup (v5) from a member, with assignments when it leads; the assignment it gets
 * becomes what it owns. */
static int16_t csync(fx_t *f, const char *group, cm_t *m, kc_sync_group_request_assignment_t *as,
                     int n_as, bool *parked)
{
    kc_sync_group_request_t q;
    kc_sync_group_request_init(&q);
    q.group_id = kc_str_c(group);
    q.member_id = kc_str_c(m->id);
    q.group_instance_id = m->instance ? kc_str_c(m->instance) : KC_STR_NULL;
    q.generation_id = m->generation;
    q.protocol_type = KC_STR_LIT("consumer");
    q.protocol_name = KC_STR_LIT("range");
    q.assignments.v = as;
    q.assignments.n = n_as;
    kc_sync_group_response_t r;
    f->synced[m->slot - 1] = false;
    int rc = kc_gm_sync(f->gm, T(f), 5, &q, (void *)(intptr_t)m->slot, &f->a, &r);
    if (parked)
        *parked = rc == KC_GM_PARKED;
    if (rc == KC_GM_PARKED)
        return 0;
    if (r.error_code == 0) {
        assert_str(r.protocol_type, "consumer");
        assert_str(r.protocol_name, "range");
        snprintf(m->owned, sizeof(m->owned), "%s", parts_of(r.assignment));
    }
    return r.error_code;
}

static int16_t chb(fx_t *f, const char *group, cm_t *m)
{
    kc_heartbeat_request_t q;
    kc_heartbeat_request_init(&q);
    q.group_id = kc_str_c(group);
    q.member_id = kc_str_c(m->id);
    q.group_instance_id = m->instance ? kc_str_c(m->instance) : KC_STR_NULL;
    q.generation_id = m->generation;
    kc_heartbeat_response_t r;
    kc_gm_heartbeat(f->gm, T(f), 4, &q, &r);
    return r.error_code;
}

/* A ConsumerGroupHeartbeat joining (epoch 0) for topic "t". */
static const char *consumer_instance; /* the instance id consumer_join sends (NULL: none) */

static kc_consumer_group_heartbeat_response_t consumer_join(fx_t *f, const char *group,
                                                            const char *member)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.instance_id = consumer_instance ? kc_str_c(consumer_instance) : KC_STR_NULL;
    q.group_id = kc_str_c(group);
    q.member_id = kc_str_c(member);
    q.member_epoch = 0;
    q.rebalance_timeout_ms = 60000;
    static kc_str_t topics[1];
    topics[0] = KC_STR_LIT("t");
    q.subscribed_topic_names.v = topics;
    q.subscribed_topic_names.n = 1;
    q.topic_partitions.n = 0;
    kc_consumer_group_heartbeat_response_t r;
    kc_gm_consumer_heartbeat(f->gm, T(f), 1, &q, KC_STR_LIT("cc"), KC_STR_LIT("/10.0.0.3"), &f->a,
                             &r);
    return r;
}

/* A classic group "g" of two Stable members (a: partitions 0,1,2; b: 3,4,5), at generation 1,
 * its second member's assignment carrying `user_data` (NULL: none). */
static void classic_group(fx_t *f, cm_t *a, cm_t *b, const char *user_data)
{
    *a = (cm_t){.slot = 1, .sub_version = 1};
    *b = (cm_t){.slot = 2, .sub_version = 3};
    assert_int_equal(cjoin(f, "g", a, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", b, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    bool parked;
    assert_int_equal(cjoin(f, "g", a, &parked), 0);
    assert_true(parked);
    assert_int_equal(cjoin(f, "g", b, &parked), 0);
    assert_true(parked);
    for (int i = 0; i < 10 && !(f->joined[0] && f->joined[1]); i++)
        advance(f, 3000); /* the initial rebalance delay, extended by each new member */
    assert_int_equal(cjoin_done(f, a), 0);
    assert_int_equal(cjoin_done(f, b), 0);
    assert_int_equal(a->generation, 1);
    kc_sync_group_request_assignment_t as[2] = {
        {kc_str_c(a->id), assignment(f, "0,1,2", NULL)},
        {kc_str_c(b->id), assignment(f, "3,4,5", user_data)},
    };
    kc_join_group_response_t *ja = &f->joins[0];
    bool a_leads = kc_str_eq(ja->leader, kc_str_c(a->id));
    cm_t *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    assert_int_equal(csync(f, "g", follower, NULL, 0, &parked), 0);
    assert_true(parked);
    assert_int_equal(csync(f, "g", leader, as, 2, &parked), 0);
    assert_false(parked); /* the leader is answered at once, the follower through sync_done */
    assert_true(f->synced[follower->slot - 1]);
    snprintf(follower->owned, sizeof(follower->owned), "%s",
             parts_of(f->syncs[follower->slot - 1].assignment));
    assert_string_equal(a->owned, "0,1,2");
    assert_string_equal(b->owned, "3,4,5");
    assert_string_equal(group_type(f, "g"), "classic Stable");
}

/* No partition is held by two members (assigned or pending revocation) in the dump. */
static void check_exclusive(fx_t *f, const char *group)
{
    const char *d = dump(f, group);
    int seen[6] = {0};
    for (const char *p = d; (p = strstr(p, " t:")) != NULL;) {
        p += 3;
        while (*p >= '0' && *p <= '9') {
            int part = (int)strtol(p, (char **)&p, 10);
            assert_true(part >= 0 && part < 6);
            if (seen[part]++)
                fail_msg("partition %d held twice:\n%s", part, d);
            if (*p == ',')
                p++;
        }
    }
}

/* The groups view's JSON of a group. */
typedef struct jbuf_s {
    char b[16384];
    size_t n;
} jbuf_t;

static void jemit(void *arg, const char *p, size_t n)
{
    jbuf_t *j = arg;
    assert_true(j->n + n < sizeof(j->b));
    memcpy(j->b + j->n, p, n);
    j->n += n;
    j->b[j->n] = '\0';
}

static const char *group_json(fx_t *f, const char *group)
{
    static jbuf_t j;
    j.n = 0;
    j.b[0] = '\0';
    assert_int_equal(kc_gm_json_group(f->gm, f->now, kc_str_c(group), jemit, &j), 0);
    return j.b;
}

/* ---- Upgrade ------------------------------------------------------------------------------ */

static void test_upgrade(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a, b;
    classic_group(f, &a, &b, NULL);
    /* A sync parked for a rebalance in progress gets REBALANCE_IN_PROGRESS at the conversion:
     * a joins again (the group prepares a rebalance), then the consumer member comes. */
    bool parked;
    assert_int_equal(cjoin(f, "g", &a, &parked), 0);
    assert_true(parked);
    int from = f->nr;
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    assert_int_equal(r.error_code, 0);
    assert_true(f->joined[0]);
    assert_int_equal(f->joins[0].error_code, KC_ERR_REBALANCE_IN_PROGRESS);
    /* The classic tombstone, the consumer group (members, epoch, targets, target epoch,
     * current assignments), then the consumer member's join. */
    assert_string_equal(rec_kinds(f, from), "2- 5 5 3 7 7 6 8 8 5 3 7 7 7 6 8");
    assert_string_equal(group_type(f, "g"), "consumer Reconciling");
    const char *d = dump(f, "g");
    char want[256];
    snprintf(want, sizeof(want), "member %s epoch 1 prev 1 state STABLE", a.id);
    if (!strstr(d, want))
        fail_msg("%s\nnot in\n%s", want, d);
    assert_non_null(strstr(d, " classic session 10000 protocols [range:"));
    /* The consumer member's epoch is the new group epoch. */
    assert_int_equal(r.member_epoch, 2);
    /* The classic members learn of the rebalance from their heartbeats and rejoin. */
    kc_consumer_group_describe_described_group_t dg;
    kc_gm_consumer_describe(f->gm, 1, KC_STR_LIT("g"), false, &f->a, &dg);
    assert_int_equal(dg.members.n, 3);
    int classic = 0;
    for (int32_t i = 0; i < dg.members.n; i++)
        classic += dg.members.v[i].member_type == 0;
    assert_int_equal(classic, 2);
    check_exclusive(f, "g");
    /* The groups view: classic members say so, and the rebalances name the upgrade. */
    const char *json = group_json(f, "g");
    if (!strstr(json, "\"classic\":{\"session_timeout_ms\":10000,\"protocols\":[\"range\","
                      "\"roundrobin\"]}"))
        fail_msg("no classic member in %s", json);
    if (!strstr(json, "\"cause\":\"upgrade\",\"member_id\":\"c1\""))
        fail_msg("no upgrade in %s", json);
    fx_free(f);
}

/* A follower's SyncGroup parked in CompletingRebalance is answered REBALANCE_IN_PROGRESS by
 * the upgrade, and the members, which never synced, start with nothing assigned. */
static void test_upgrade_parked_sync(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a = {.slot = 1, .sub_version = 1}, b = {.slot = 2, .sub_version = 1};
    assert_int_equal(cjoin(f, "g", &a, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &b, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    bool parked;
    assert_int_equal(cjoin(f, "g", &a, &parked), 0);
    assert_int_equal(cjoin(f, "g", &b, &parked), 0);
    for (int i = 0; i < 10 && !(f->joined[0] && f->joined[1]); i++)
        advance(f, 3000);
    assert_int_equal(cjoin_done(f, &a), 0);
    assert_int_equal(cjoin_done(f, &b), 0);
    bool a_leads = kc_str_eq(f->joins[0].leader, kc_str_c(a.id));
    cm_t *follower = a_leads ? &b : &a;
    assert_int_equal(csync(f, "g", follower, NULL, 0, &parked), 0);
    assert_true(parked);
    assert_string_equal(group_type(f, "g"), "classic CompletingRebalance");
    assert_int_equal(consumer_join(f, "g", "c1").error_code, 0);
    assert_true(f->synced[follower->slot - 1]);
    assert_int_equal(f->syncs[follower->slot - 1].error_code, KC_ERR_REBALANCE_IN_PROGRESS);
    const char *d = dump(f, "g");
    char want[160];
    snprintf(want, sizeof(want), "member %s epoch 1 prev 1 state STABLE", follower->id);
    if (!strstr(d, want))
        fail_msg("%s\nnot in\n%s", want, d);
    fx_free(f);
}

static void expect_upgrade_refused(fx_t *f, const char *msg)
{
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    assert_int_equal(r.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(r.error_message, msg);
    assert_string_equal(group_type(f, "g"), "classic Stable");
}

static void test_upgrade_refused(void **state)
{
    (void)state;
    cm_t a, b;
    int policies[2] = {KC_GM_MIGRATION_DOWNGRADE, KC_GM_MIGRATION_DISABLED};
    for (int i = 0; i < 2; i++) {
        kc_gm_config_t c = default_cfg();
        c.consumer_migration_policy = policies[i];
        fx_t *f = fx_new_cfg(&c);
        classic_group(f, &a, &b, NULL);
        expect_upgrade_refused(f, "Cannot upgrade classic group g to consumer group because "
                                  "online upgrade is disabled.");
        fx_free(f);
    }
    /* The policy "upgrade" allows it. */
    kc_gm_config_t c = default_cfg();
    c.consumer_migration_policy = KC_GM_MIGRATION_UPGRADE;
    fx_t *f = fx_new_cfg(&c);
    classic_group(f, &a, &b, NULL);
    assert_int_equal(consumer_join(f, "g", "c1").error_code, 0);
    fx_free(f);
    /* Larger than group.consumer.max.size. */
    c = default_cfg();
    c.consumer_max_size = 1;
    f = fx_new_cfg(&c);
    classic_group(f, &a, &b, NULL);
    expect_upgrade_refused(f, "Cannot upgrade classic group g to consumer group because the "
                              "group size exceeds the consumer group maximum size.");
    fx_free(f);
    /* A custom assignor's user data would be lost (KAFKA-18134). */
    f = fx_new();
    classic_group(f, &a, &b, "sticky");
    int from = f->nr;
    expect_upgrade_refused(f, "Cannot upgrade classic group g to consumer group because an "
                              "unsupported custom assignor is in use. Please refer to the "
                              "documentation or switch to a default assignor before "
                              "re-attempting the upgrade.");
    assert_int_equal(f->nr, from); /* nothing written */
    assert_int_equal(chb(f, "g", &a), 0);
    fx_free(f);
    /* A heartbeat Kafka would refuse after converting leaves the group classic, nothing
     * written: an invalid regular expression. */
    f = fx_new();
    classic_group(f, &a, &b, NULL);
    from = f->nr;
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.member_id = KC_STR_LIT("c1");
    q.member_epoch = 0;
    q.rebalance_timeout_ms = 60000;
    q.subscribed_topic_regex = KC_STR_LIT("(t");
    q.topic_partitions.n = 0;
    kc_consumer_group_heartbeat_response_t hr;
    kc_gm_consumer_heartbeat(f->gm, T(f), 1, &q, KC_STR_LIT("cc"), KC_STR_LIT("/h"), &f->a, &hr);
    assert_int_equal(hr.error_code, KC_ERR_INVALID_REGULAR_EXPRESSION);
    assert_int_equal(f->nr, from);
    assert_string_equal(group_type(f, "g"), "classic Stable");
    fx_free(f);
    /* Not the consumer protocol (Connect, for example). */
    f = fx_new();
    a = (cm_t){.slot = 1, .sub_version = 1, .ptype = "connect"};
    assert_int_equal(cjoin(f, "g", &a, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    bool parked;
    assert_int_equal(cjoin(f, "g", &a, &parked), 0);
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    assert_int_equal(r.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(r.error_message, "Cannot upgrade classic group g to consumer group because the "
                                "group does not use the consumer embedded protocol.");
    fx_free(f);
}

/* ---- Classic members in a consumer group ------------------------------------------------- */

/* Rejoin and sync a classic member of a consumer group until its heartbeat is quiet. */
static void classic_settle(fx_t *f, cm_t *m)
{
    for (int round = 0; round < 6; round++) {
        int16_t e = chb(f, "g", m);
        if (e == 0)
            return;
        assert_int_equal(e, KC_ERR_REBALANCE_IN_PROGRESS);
        assert_int_equal(cjoin(f, "g", m, NULL), 0);
        int16_t s = csync(f, "g", m, NULL, 0, NULL);
        assert_true(s == 0 || s == KC_ERR_REBALANCE_IN_PROGRESS);
        check_exclusive(f, "g");
    }
    fail_msg("member %s never settled:\n%s", m->id, dump(f, "g"));
}

/* The partitions of a ConsumerGroupHeartbeat answer's assignment, into owned (when it has one). */
static void take_assignment(const kc_consumer_group_heartbeat_response_t *r, char *owned)
{
    if (!r->assignment)
        return;
    size_t w = 0;
    owned[0] = '\0';
    for (int32_t i = 0; i < r->assignment->topic_partitions.n; i++)
        for (int32_t k = 0; k < r->assignment->topic_partitions.v[i].partitions.n; k++)
            w += (size_t)snprintf(owned + w, 64 - w, "%s%d", w ? "," : "",
                                  (int)r->assignment->topic_partitions.v[i].partitions.v[k]);
}

/* A consumer member that takes what it is given and reports it. */
static int32_t consumer_step(fx_t *f, const char *member, int32_t epoch, char *owned)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.member_id = kc_str_c(member);
    q.member_epoch = epoch;
    kc_consumer_group_heartbeat_topic_partitions_t tp;
    int32_t parts[6];
    int n = 0;
    for (const char *p = owned; *p;) {
        parts[n++] = (int32_t)strtol(p, (char **)&p, 10);
        if (*p == ',')
            p++;
    }
    tp.topic_id = f->topics[0].id;
    tp.partitions.v = parts;
    tp.partitions.n = n;
    q.topic_partitions.v = &tp;
    q.topic_partitions.n = 1;
    kc_consumer_group_heartbeat_response_t r;
    kc_gm_consumer_heartbeat(f->gm, T(f), 1, &q, KC_STR_LIT("cc"), KC_STR_LIT("/h"), &f->a, &r);
    assert_int_equal(r.error_code, 0);
    take_assignment(&r, owned);
    return r.member_epoch;
}

/* After the upgrade the group settles: the consumer member and the two classic members
 * (rejoining when their heartbeats say so) end with every partition owned exactly once. */
static void test_upgrade_settles(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a, b;
    classic_group(f, &a, &b, NULL);
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    assert_int_equal(r.error_code, 0);
    char c1_owned[64] = "";
    take_assignment(&r, c1_owned);
    int32_t c1_epoch = r.member_epoch;
    for (int round = 0; round < 8; round++) {
        c1_epoch = consumer_step(f, "c1", c1_epoch, c1_owned);
        classic_settle(f, &a);
        classic_settle(f, &b);
        check_exclusive(f, "g");
    }
    assert_string_equal(group_type(f, "g"), "consumer Stable");
    char all[200];
    snprintf(all, sizeof(all), "%s,%s,%s", a.owned, b.owned, c1_owned);
    int seen[6] = {0};
    for (const char *p = all; *p;) {
        if (*p == ',') {
            p++;
            continue;
        }
        seen[strtol(p, (char **)&p, 10)]++;
    }
    for (int i = 0; i < 6; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(strlen(c1_owned), 3); /* two each */
    /* A protocol name other than the one its JoinGroup was answered with. */
    kc_sync_group_request_t q;
    kc_sync_group_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.member_id = kc_str_c(a.id);
    q.generation_id = a.generation;
    q.protocol_type = KC_STR_LIT("consumer");
    q.protocol_name = KC_STR_LIT("roundrobin");
    kc_sync_group_response_t sr;
    assert_int_equal(kc_gm_sync(f->gm, T(f), 5, &q, NULL, &f->a, &sr), KC_GM_ANSWERED);
    assert_int_equal(sr.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    /* OffsetCommit: generation = member epoch. */
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 8, KC_STR_LIT("g"), a.generation,
                                           kc_str_c(a.id), KC_STR_NULL),
                     0);
    assert_int_equal(kc_gm_validate_commit(f->gm, T(f), 8, KC_STR_LIT("g"), a.generation - 1,
                                           kc_str_c(a.id), KC_STR_NULL),
                     KC_ERR_ILLEGAL_GENERATION);
    fx_free(f);
}

static void test_classic_member(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    assert_int_equal(r.error_code, 0);
    char c1_owned[64] = "";
    take_assignment(&r, c1_owned);
    int32_t c1_epoch = consumer_step(f, "c1", r.member_epoch, c1_owned);
    assert_string_equal(c1_owned, "0,1,2,3,4,5");
    /* KIP-394, then the join: generation = member epoch, never the leader. */
    cm_t m = {.slot = 1, .sub_version = 3};
    assert_int_equal(cjoin(f, "g", &m, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(strlen(m.id), 22); /* a UUID, as Kafka's */
    int from = f->nr;
    assert_int_equal(cjoin(f, "g", &m, NULL), 0);
    assert_string_equal(rec_kinds(f, from), "5 3 7 7 6 8");
    assert_int_equal(m.generation, 3);
    const char *d = dump(f, "g");
    assert_non_null(strstr(d, " rack \"r1\" "));
    assert_non_null(strstr(d, " classic session 10000 protocols [range:"));
    /* Nothing yet: c1 holds every partition until it revokes. */
    assert_int_equal(csync(f, "g", &m, NULL, 0, NULL), 0);
    assert_string_equal(m.owned, "");
    assert_int_equal(chb(f, "g", &m), 0); /* waiting on partitions c1 still holds */
    /* Wrong generation, protocol name. */
    m.generation++;
    assert_int_equal(chb(f, "g", &m), KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(csync(f, "g", &m, NULL, 0, NULL), KC_ERR_ILLEGAL_GENERATION);
    m.generation--;
    /* c1 revokes; the classic member is told to rejoin and gets its share. */
    c1_epoch = consumer_step(f, "c1", c1_epoch, c1_owned);
    c1_epoch = consumer_step(f, "c1", c1_epoch, c1_owned);
    check_exclusive(f, "g");
    classic_settle(f, &m);
    assert_int_equal(strlen(m.owned), 5); /* three partitions */
    check_exclusive(f, "g");
    /* A consumer member that does not use the classic protocol is unknown to these APIs. */
    cm_t fake = {.slot = 2};
    snprintf(fake.id, sizeof(fake.id), "c1");
    fake.generation = c1_epoch;
    assert_int_equal(chb(f, "g", &fake), KC_ERR_UNKNOWN_MEMBER_ID);
    /* LeaveGroup fences it. */
    kc_leave_group_request_t lq;
    kc_leave_group_request_init(&lq);
    lq.group_id = KC_STR_LIT("g");
    kc_member_identity_t id = {kc_str_c(m.id), KC_STR_NULL, KC_STR_NULL};
    lq.members.v = &id;
    lq.members.n = 1;
    kc_leave_group_response_t lr;
    kc_gm_leave(f->gm, T(f), 5, &lq, &f->a, &lr);
    assert_int_equal(lr.members.v[0].error_code, 0);
    assert_null(strstr(dump(f, "g"), m.id));
    fx_free(f);
}

static bool any_topic(void *ctx, kc_str_t topic)
{
    (void)ctx;
    (void)topic;
    return true;
}

static bool only_t(void *ctx, kc_str_t topic)
{
    (void)ctx;
    return kc_str_eq(topic, KC_STR_LIT("t"));
}

/* Under an authorizer a classic member's JoinGroup (which carries no principal's filter for
 * the group's regexes) keeps the group's filtered resolution: the topic the regex member's
 * principal may not DESCRIBE is assigned to nobody. */
static void test_classic_member_regex_filtered(void **state)
{
    (void)state;
    kc_gm_config_t cfg = default_cfg();
    cfg.consumer_regex_filtered = true;
    fx_t *f = fx_new_cfg(&cfg);
    f->topics[1] = f->topics[0];
    f->topics[1].name = KC_STR_LIT("t2");
    f->topics[1].id.b[2] = '2';
    f->nt = 2;
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.member_id = KC_STR_LIT("c1");
    q.member_epoch = 0;
    q.rebalance_timeout_ms = 60000;
    q.subscribed_topic_regex = KC_STR_LIT("t.*");
    q.topic_partitions.n = 0;
    kc_gm_topic_filter_t filter = {only_t, NULL};
    kc_consumer_group_heartbeat_response_t r;
    kc_gm_consumer_heartbeat_filtered(f->gm, T(f), 1, &q, KC_STR_LIT("cc"), KC_STR_LIT("/10.0.0.3"),
                                      &filter, &f->a, &r);
    assert_int_equal(r.error_code, 0);
    char c1_owned[64] = "";
    take_assignment(&r, c1_owned);
    assert_string_equal(c1_owned, "0,1,2,3,4,5");
    const char *t2 = "7a7432"; /* t2's id in the dump */
    assert_null(strstr(dump(f, "g"), t2));
    cm_t m = {.slot = 1, .sub_version = 3};
    assert_int_equal(cjoin(f, "g", &m, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &m, NULL), 0);
    const char *after = dump(f, "g");
    assert_non_null(strstr(after, m.id));
    assert_null(strstr(after, t2));
    /* A member whose principal may DESCRIBE everything joins: the group's resolution (c1's
     * rights; the classic join kept it) is shared, t2 is still nobody's. */
    kc_gm_topic_filter_t all = {any_topic, NULL};
    q.member_id = KC_STR_LIT("c2");
    kc_gm_consumer_heartbeat_filtered(f->gm, T(f), 1, &q, KC_STR_LIT("cc"), KC_STR_LIT("/10.0.0.4"),
                                      &all, &f->a, &r);
    assert_int_equal(r.error_code, 0);
    assert_non_null(strstr(dump(f, "g"), "member c2 "));
    assert_null(strstr(dump(f, "g"), t2));
    fx_free(f);
}

static void test_classic_member_timers(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    assert_int_equal(consumer_join(f, "g", "c1").error_code, 0);
    cm_t m = {.slot = 1, .sub_version = 0};
    assert_int_equal(cjoin(f, "g", &m, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &m, NULL), 0);
    /* No SyncGroup within the rebalance timeout (20 s): fenced, though it heartbeats. */
    advance(f, 9000);
    assert_int_equal(chb(f, "g", &m), 0);
    advance(f, 9000);
    assert_int_equal(chb(f, "g", &m), 0);
    advance(f, 1000);
    assert_non_null(strstr(dump(f, "g"), m.id));
    advance(f, 1001);
    assert_null(strstr(dump(f, "g"), m.id));
    /* Its session (10 s, its JoinGroup's) ends without heartbeats: fenced. */
    cm_t n = {.slot = 2, .sub_version = 2};
    assert_int_equal(cjoin(f, "g", &n, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &n, NULL), 0);
    assert_int_equal(csync(f, "g", &n, NULL, 0, NULL), 0);
    advance(f, 9000);
    assert_int_equal(chb(f, "g", &n), 0);
    advance(f, 9000);
    assert_non_null(strstr(dump(f, "g"), n.id));
    advance(f, 1001);
    assert_null(strstr(dump(f, "g"), n.id));
    assert_int_equal(chb(f, "g", &n), KC_ERR_UNKNOWN_MEMBER_ID);
    /* Asked to rejoin, a member that heartbeats but never rejoins is fenced when its join
     * timeout (its rebalance timeout, 20 s) ends. */
    cm_t o = {.slot = 3, .sub_version = 3};
    assert_int_equal(cjoin(f, "g", &o, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &o, NULL), 0);
    assert_int_equal(csync(f, "g", &o, NULL, 0, NULL), 0);
    assert_int_equal(consumer_join(f, "g", "c2").error_code, 0);
    assert_int_equal(chb(f, "g", &o), KC_ERR_REBALANCE_IN_PROGRESS);
    for (int i = 0; i < 2; i++) {
        advance(f, 9000);
        assert_int_equal(chb(f, "g", &o), KC_ERR_REBALANCE_IN_PROGRESS);
        consumer_join(f, "g", "c1"); /* the consumer members stay */
        consumer_join(f, "g", "c2");
    }
    assert_non_null(strstr(dump(f, "g"), o.id));
    advance(f, 2001);
    assert_null(strstr(dump(f, "g"), o.id));
    fx_free(f);
}

/* ---- Downgrade ---------------------------------------------------------------------------- */

/* A consumer member leaves (epoch -1). */
static int16_t consumer_leave(fx_t *f, const char *member)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.member_id = kc_str_c(member);
    q.member_epoch = -1;
    kc_consumer_group_heartbeat_response_t r;
    kc_gm_consumer_heartbeat(f->gm, T(f), 1, &q, KC_STR_LIT("cc"), KC_STR_LIT("/h"), &f->a, &r);
    return r.error_code;
}

/* An upgraded group, settled: classic a and b, consumer c1. */
static void mixed_group(fx_t *f, cm_t *a, cm_t *b)
{
    classic_group(f, a, b, NULL);
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    assert_int_equal(r.error_code, 0);
    char c1_owned[64] = "";
    take_assignment(&r, c1_owned);
    int32_t c1_epoch = r.member_epoch;
    for (int round = 0; round < 8; round++) {
        c1_epoch = consumer_step(f, "c1", c1_epoch, c1_owned);
        classic_settle(f, a);
        classic_settle(f, b);
    }
    assert_string_equal(group_type(f, "g"), "consumer Stable");
}

static void test_downgrade(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a, b;
    mixed_group(f, &a, &b);
    int32_t epoch = a.generation;
    int from = f->nr;
    assert_int_equal(consumer_leave(f, "c1"), 0);
    /* The consumer group's tombstones, then the classic group's record. */
    assert_string_equal(rec_kinds(f, from), "8- 8- 8- 7- 7- 7- 6- 5- 5- 5- 4- 3- 2");
    assert_string_equal(group_type(f, "g"), "classic PreparingRebalance");
    assert_string_equal(dump(f, "g"), "");
    /* The classic members rejoin the classic group and sync; every partition is owned. */
    assert_int_equal(chb(f, "g", &a), KC_ERR_REBALANCE_IN_PROGRESS);
    bool pa, pb;
    assert_int_equal(cjoin(f, "g", &a, &pa), 0);
    assert_int_equal(cjoin(f, "g", &b, &pb), 0);
    assert_true(f->joined[0] || pa);
    if (pa)
        assert_int_equal(cjoin_done(f, &a), 0);
    if (pb)
        assert_int_equal(cjoin_done(f, &b), 0);
    /* The classic group starts at the group epoch (the leave bumps nothing when it converts),
     * and its rebalance makes the next generation. */
    assert_int_equal(a.generation, epoch + 1);
    assert_int_equal(b.generation, epoch + 1);
    kc_describe_groups_described_group_t d;
    kc_gm_describe(f->gm, 5, KC_STR_LIT("g"), false, &f->a, &d);
    assert_int_equal(d.members.n, 2);
    assert_str(d.protocol_type, "consumer");
    const char *json = group_json(f, "g");
    if (!strstr(json, "\"cause\":\"downgrade\",\"member_id\":\"c1\""))
        fail_msg("no downgrade in %s", json);
    fx_free(f);
}

/* A classic static member replaces the only consumer-protocol member (a rolling downgrade of
 * a static group): the group becomes classic at once, the newcomer taking its predecessor's
 * assignment, without a rebalance since the assignment is current. */
static void test_downgrade_static(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    consumer_instance = "i1";
    kc_consumer_group_heartbeat_response_t r = consumer_join(f, "g", "c1");
    consumer_instance = NULL;
    assert_int_equal(r.error_code, 0);
    char c1_owned[64] = "";
    take_assignment(&r, c1_owned);
    int32_t c1_epoch = r.member_epoch;
    cm_t m = {.slot = 1, .sub_version = 1};
    assert_int_equal(cjoin(f, "g", &m, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &m, NULL), 0);
    for (int round = 0; round < 8; round++) {
        c1_epoch = consumer_step(f, "c1", c1_epoch, c1_owned);
        classic_settle(f, &m);
    }
    assert_string_equal(group_type(f, "g"), "consumer Stable");
    int32_t epoch = m.generation;
    cm_t s = {.slot = 3, .sub_version = 3, .instance = "i1"};
    int from = f->nr;
    assert_int_equal(cjoin(f, "g", &s, NULL), 0);
    assert_string_equal(group_type(f, "g"), "classic Stable");
    assert_non_null(strstr(rec_kinds(f, from), " 3- 2"));
    assert_int_equal(s.generation, epoch);
    assert_int_equal(csync(f, "g", &s, NULL, 0, NULL), 0);
    assert_string_equal(s.owned, c1_owned);
    assert_int_equal(chb(f, "g", &m), 0); /* the other member goes on in the classic group */
    assert_int_equal(csync(f, "g", &m, NULL, 0, NULL), 0);
    fx_free(f);
}

/* The policy "downgrade": no upgrade, but classic members join a consumer group, and the
 * group becomes classic when its last consumer-protocol member leaves. */
static void test_downgrade_policy(void **state)
{
    (void)state;
    kc_gm_config_t c = default_cfg();
    c.consumer_migration_policy = KC_GM_MIGRATION_DOWNGRADE;
    fx_t *f = fx_new_cfg(&c);
    assert_int_equal(consumer_join(f, "g", "c1").error_code, 0);
    cm_t m = {.slot = 1, .sub_version = 2};
    assert_int_equal(cjoin(f, "g", &m, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &m, NULL), 0);
    /* A classic member of another protocol type, or without a protocol the classic members
     * share, is refused. */
    cm_t x = {.slot = 2, .sub_version = 1, .ptype = "connect"};
    assert_int_equal(cjoin(f, "g", &x, NULL), KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(consumer_leave(f, "c1"), 0);
    assert_string_equal(group_type(f, "g"), "classic PreparingRebalance");
    fx_free(f);
}

static void test_downgrade_session_expiry(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a, b;
    mixed_group(f, &a, &b);
    /* c1 stops heartbeating; the classic members go on. */
    for (int i = 0; i < 6; i++) {
        advance(f, 9000);
        chb(f, "g", &a);
        chb(f, "g", &b);
    }
    assert_string_equal(group_type(f, "g"), "classic PreparingRebalance");
    assert_int_equal(chb(f, "g", &a), KC_ERR_REBALANCE_IN_PROGRESS);
    fx_free(f);
}

static void test_downgrade_refused(void **state)
{
    (void)state;
    cm_t a, b;
    /* The policy "upgrade" converts one way only: the classic members stay in the consumer
     * group. ("disabled" never lets a classic member into a consumer group: test_cgroup.c.) */
    kc_gm_config_t cu = default_cfg();
    cu.consumer_migration_policy = KC_GM_MIGRATION_UPGRADE;
    fx_t *fu = fx_new_cfg(&cu);
    mixed_group(fu, &a, &b);
    assert_int_equal(consumer_leave(fu, "c1"), 0);
    /* As in Kafka, the new target waits for a join: heartbeats alone do not compute it. */
    assert_string_equal(group_type(fu, "g"), "consumer Assigning");
    assert_int_equal(chb(fu, "g", &a), 0);
    fx_free(fu);
    /* More members than group.max.size. */
    kc_gm_config_t c = default_cfg();
    c.max_size = 1;
    fx_t *f = fx_new_cfg(&c);
    assert_int_equal(consumer_join(f, "g", "c1").error_code, 0);
    cm_t m = {.slot = 1, .sub_version = 1};
    cm_t n = {.slot = 2, .sub_version = 1};
    assert_int_equal(cjoin(f, "g", &m, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &m, NULL), 0);
    assert_int_equal(cjoin(f, "g", &n, NULL), KC_ERR_MEMBER_ID_REQUIRED);
    assert_int_equal(cjoin(f, "g", &n, NULL), 0);
    assert_int_equal(consumer_leave(f, "c1"), 0);
    assert_non_null(strstr(group_type(f, "g"), "consumer "));
    fx_free(f);
}

/* ---- Replay ------------------------------------------------------------------------------- */

static fx_t *replayed(fx_t *f)
{
    fx_t *g = fx_new_cfg(&f->cfg);
    for (int i = 0; i < f->nr; i++) {
        int rc =
            kc_gm_replay(g->gm, f->recs[i].key, f->recs[i].klen, f->recs[i].val, f->recs[i].vlen);
        assert_true(rc == 0 || rc == 1);
    }
    g->now = f->now;
    kc_gm_load_complete(g->gm, T(g));
    return g;
}

static void test_replay_converted(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a, b;
    classic_group(f, &a, &b, NULL);
    assert_int_equal(consumer_join(f, "g", "c1").error_code, 0);
    /* In the middle of the mixed group's rebalance. */
    assert_int_equal(chb(f, "g", &a), KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(cjoin(f, "g", &a, NULL), 0);
    fx_t *g = replayed(f);
    assert_string_equal(dump(g, "g"), dump(f, "g"));
    assert_string_equal(group_type(g, "g"), group_type(f, "g"));
    /* The replayed group serves its classic members. */
    assert_int_equal(csync(g, "g", &a, NULL, 0, NULL), 0);
    fx_free(g);
    fx_free(f);
}

static void test_replay_downgraded(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    cm_t a, b;
    mixed_group(f, &a, &b);
    assert_int_equal(consumer_leave(f, "c1"), 0);
    fx_t *g = replayed(f);
    /* Kafka's load: a classic group with members comes back Stable, at the generation of the
     * record, its members and their assignments as written. */
    assert_string_equal(group_type(g, "g"), "classic Stable");
    kc_describe_groups_described_group_t d1, d2;
    kc_gm_describe(f->gm, 5, KC_STR_LIT("g"), false, &f->a, &d1);
    kc_gm_describe(g->gm, 5, KC_STR_LIT("g"), false, &g->a, &d2);
    assert_int_equal(d1.members.n, d2.members.n);
    for (int32_t i = 0; i < d1.members.n; i++) {
        assert_true(kc_str_eq(d1.members.v[i].member_id, d2.members.v[i].member_id));
        assert_int_equal(d1.members.v[i].member_assignment.len,
                         d2.members.v[i].member_assignment.len);
    }
    fx_free(g);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_upgrade_parked_sync),
        cmocka_unit_test(test_upgrade_refused),
        cmocka_unit_test(test_upgrade_settles),
        cmocka_unit_test(test_classic_member),
        cmocka_unit_test(test_classic_member_regex_filtered),
        cmocka_unit_test(test_classic_member_timers),
        cmocka_unit_test(test_downgrade),
        cmocka_unit_test(test_downgrade_static),
        cmocka_unit_test(test_downgrade_policy),
        cmocka_unit_test(test_downgrade_session_expiry),
        cmocka_unit_test(test_downgrade_refused),
        cmocka_unit_test(test_replay_converted),
        cmocka_unit_test(test_replay_downgraded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
