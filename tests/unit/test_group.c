/* test_group.c - the classic group state machine: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
 * timers on a fake clock, the records it emits, and the offsets/admin queries.
 *
 * Each test builds a manager with fake ops that copy every join_done / sync_done answer and
 * every emitted record into the fixture, drives it with requests and a clock variable, and
 * checks answers, states and records (decoded with the generated decoders).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "group/errors.h"
#include "group/group.h"
#include "group/history.h"
#include "group/strmap.h"
#include "proto/gen_consumer.h"
#include "proto/gen_records.h"
#include "util/diag.h"

#include "json_check.h"

/* ---- Fixture ---------------------------------------------------------------------------- */

#define MAXA 512

typedef struct rec_s {
    uint8_t *key;
    size_t klen;
    uint8_t *val; /* NULL: tombstone */
    size_t vlen;
} rec_t;

typedef struct jans_s {
    void *w;
    kc_join_group_response_t r;
} jans_t;

typedef struct sans_s {
    void *w;
    kc_sync_group_response_t r;
} sans_t;

typedef struct fx_s {
    kc_gm_t *gm;
    kc_gm_config_t cfg;
    int64_t now;      /* the fake monotonic clock */
    int64_t wall_off; /* the fake wall clock is now + wall_off: tests step it alone */
    kc_arena_t a;
    jans_t joins[MAXA];
    int nj;
    sans_t syncs[MAXA];
    int ns;
    rec_t recs[MAXA];
    int nr;
} fx_t;

/* The fake clock's time, as the manager takes it. */
static kc_time_t T(const fx_t *f)
{
    return (kc_time_t){f->now, f->now + f->wall_off};
}

static kc_str_t dup_str(kc_arena_t *a, kc_str_t s)
{
    if (s.len < 0)
        return KC_STR_NULL;
    char *p = kc_arena_alloc(a, (size_t)s.len + 1);
    if (s.len)
        memcpy(p, s.p, (size_t)s.len);
    return (kc_str_t){p, s.len};
}

static kc_bytes_t dup_bytes(kc_arena_t *a, kc_bytes_t b)
{
    if (b.len < 0)
        return KC_BYTES_NULL;
    uint8_t *p = kc_arena_alloc(a, (size_t)b.len + 1);
    if (b.len)
        memcpy(p, b.p, (size_t)b.len);
    return (kc_bytes_t){p, b.len};
}

static void copy_join(kc_arena_t *a, kc_join_group_response_t *d, const kc_join_group_response_t *s)
{
    *d = *s;
    d->protocol_type = dup_str(a, s->protocol_type);
    d->protocol_name = dup_str(a, s->protocol_name);
    d->leader = dup_str(a, s->leader);
    d->member_id = dup_str(a, s->member_id);
    d->members.v = NULL;
    if (s->members.n > 0) {
        d->members.v = kc_arena_alloc(a, (size_t)s->members.n * sizeof(*d->members.v));
        for (int32_t i = 0; i < s->members.n; i++) {
            d->members.v[i].member_id = dup_str(a, s->members.v[i].member_id);
            d->members.v[i].group_instance_id = dup_str(a, s->members.v[i].group_instance_id);
            d->members.v[i].metadata = dup_bytes(a, s->members.v[i].metadata);
        }
    }
}

static void on_join(void *ctx, void *w, const kc_join_group_response_t *r)
{
    fx_t *f = ctx;
    assert_true(f->nj < MAXA);
    f->joins[f->nj].w = w;
    copy_join(&f->a, &f->joins[f->nj].r, r);
    f->nj++;
}

static void on_sync(void *ctx, void *w, const kc_sync_group_response_t *r)
{
    fx_t *f = ctx;
    assert_true(f->ns < MAXA);
    sans_t *s = &f->syncs[f->ns++];
    s->w = w;
    s->r = *r;
    s->r.protocol_type = dup_str(&f->a, r->protocol_type);
    s->r.protocol_name = dup_str(&f->a, r->protocol_name);
    s->r.assignment = dup_bytes(&f->a, r->assignment);
}

static void on_record(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    fx_t *f = ctx;
    assert_true(f->nr < MAXA);
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

static fx_t *fx_new_cfg(const kc_gm_config_t *cfg)
{
    fx_t *f = calloc(1, sizeof(*f));
    kc_arena_init(&f->a);
    f->cfg = *cfg;
    f->now = 1000000;
    kc_gm_ops_t ops = {.ctx = f, .join_done = on_join, .sync_done = on_sync, .record = on_record};
    f->gm = kc_gm_new(&f->cfg, &ops);
    assert_non_null(f->gm);
    kc_gm_set_seed(f->gm, 42);
    return f;
}

static kc_gm_config_t default_cfg(void)
{
    kc_gm_config_t c = {
        .partition = 7,
        .min_session_timeout_ms = 6000,
        .max_session_timeout_ms = 1800000,
        .initial_rebalance_delay_ms = 3000,
        .max_size = INT32_MAX,
        .new_member_join_timeout_ms = 300000,
    };
    return c;
}

static fx_t *fx_new(void)
{
    kc_gm_config_t c = default_cfg();
    return fx_new_cfg(&c);
}

static void fx_free(fx_t *f)
{
    if (f->gm)
        kc_gm_free(f->gm);
    for (int i = 0; i < f->nr; i++) {
        free(f->recs[i].key);
        free(f->recs[i].val);
    }
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

static const char *S(fx_t *f, kc_str_t s)
{
    if (s.len < 0)
        return NULL;
    return dup_str(&f->a, s).p;
}

static void *W(int n)
{
    return (void *)(uintptr_t)(0x1000 + n);
}

static const jans_t *join_answer(fx_t *f, void *w)
{
    for (int i = f->nj - 1; i >= 0; i--)
        if (f->joins[i].w == w)
            return &f->joins[i];
    return NULL;
}

static int count_join_answers(fx_t *f, void *w)
{
    int n = 0;
    for (int i = 0; i < f->nj; i++)
        if (f->joins[i].w == w)
            n++;
    return n;
}

static const sans_t *sync_answer(fx_t *f, void *w)
{
    for (int i = f->ns - 1; i >= 0; i--)
        if (f->syncs[i].w == w)
            return &f->syncs[i];
    return NULL;
}

/* ConsumerProtocolSubscription bytes: int16 version then the v<version> struct. */
static kc_bytes_t subscription(fx_t *f, int16_t version, int n, const char *const *topics)
{
    kc_consumer_protocol_subscription_t s;
    kc_consumer_protocol_subscription_init(&s);
    s.topics.v = kc_arena_alloc(&f->a, (size_t)(n ? n : 1) * sizeof(kc_str_t));
    s.topics.n = n;
    for (int i = 0; i < n; i++)
        s.topics.v[i] = kc_str_c(topics[i]);
    s.user_data = KC_BYTES_NULL;
    s.generation_id = -1;
    s.rack_id = KC_STR_NULL;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, version);
    kc_consumer_protocol_subscription_encode(&w, version, &s);
    kc_bytes_t b = dup_bytes(&f->a, (kc_bytes_t){w.buf, (int32_t)w.len});
    kc_wr_free(&w);
    return b;
}

typedef struct jopt_s {
    int16_t version;
    const char *group;
    const char *member;   /* NULL: "" */
    const char *instance; /* NULL: none */
    const char *ptype;    /* NULL: "consumer" */
    int nprotos;          /* 0: one "range" protocol subscribing to t1 */
    const char *names[4];
    kc_bytes_t metas[4];
    int32_t session, rebalance; /* 0: 10000 / 20000 */
    const char *client_id;      /* NULL: "client" */
} jopt_t;

static int do_join(fx_t *f, const jopt_t *o, void *w, kc_join_group_response_t *resp)
{
    kc_join_group_request_t req;
    kc_join_group_request_init(&req);
    req.group_id = kc_str_c(o->group ? o->group : "g");
    req.member_id = kc_str_c(o->member ? o->member : "");
    req.group_instance_id = kc_str_c(o->instance);
    req.protocol_type = kc_str_c(o->ptype ? o->ptype : "consumer");
    req.session_timeout_ms = o->session ? o->session : 10000;
    req.rebalance_timeout_ms = o->rebalance ? o->rebalance : 20000;
    int n = o->nprotos;
    kc_join_group_request_protocol_t *p =
        kc_arena_alloc(&f->a, 4 * sizeof(kc_join_group_request_protocol_t));
    if (n == 0) {
        static const char *const t1[] = {"t1"};
        p[0].name = KC_STR_LIT("range");
        p[0].metadata = subscription(f, 0, 1, t1);
        n = 1;
    } else if (n > 0) {
        for (int i = 0; i < n; i++) {
            p[i].name = kc_str_c(o->names[i]);
            p[i].metadata = o->metas[i].p ? o->metas[i] : (kc_bytes_t){(const uint8_t *)"m", 1};
        }
    } else {
        n = 0; /* nprotos < 0: no protocols at all */
    }
    req.protocols.v = p;
    req.protocols.n = n;
    req.reason = KC_STR_NULL;
    return kc_gm_join(f->gm, T(f), o->version ? o->version : 5, &req,
                      kc_str_c(o->client_id ? o->client_id : "client"), KC_STR_LIT("/10.0.0.1"), w,
                      &f->a, resp);
}

/* A v3 JoinGroup (no member id required) of a dynamic member. */
static int join3(fx_t *f, const char *member, void *w, kc_join_group_response_t *resp)
{
    jopt_t o = {.version = 3, .member = member};
    return do_join(f, &o, w, resp);
}

static int do_sync(fx_t *f, int16_t version, const char *group, const char *member, int32_t gen,
                   const char *instance, int nassign, const char *const *ids,
                   const char *const *assigns, void *w, kc_sync_group_response_t *resp)
{
    kc_sync_group_request_t req;
    kc_sync_group_request_init(&req);
    req.group_id = kc_str_c(group);
    req.member_id = kc_str_c(member);
    req.generation_id = gen;
    req.group_instance_id = kc_str_c(instance);
    if (version >= 5) {
        req.protocol_type = KC_STR_LIT("consumer");
        req.protocol_name = KC_STR_LIT("range");
    }
    if (nassign > 0) {
        req.assignments.v = kc_arena_alloc(&f->a, (size_t)nassign * sizeof(*req.assignments.v));
        req.assignments.n = nassign;
        for (int i = 0; i < nassign; i++) {
            req.assignments.v[i].member_id = kc_str_c(ids[i]);
            req.assignments.v[i].assignment =
                (kc_bytes_t){(const uint8_t *)assigns[i], (int32_t)strlen(assigns[i])};
        }
    }
    return kc_gm_sync(f->gm, T(f), version, &req, w, &f->a, resp);
}

static int16_t hb(fx_t *f, const char *group, const char *member, int32_t gen, const char *instance)
{
    kc_heartbeat_request_t req;
    kc_heartbeat_request_init(&req);
    req.group_id = kc_str_c(group);
    req.member_id = kc_str_c(member);
    req.generation_id = gen;
    req.group_instance_id = kc_str_c(instance);
    kc_heartbeat_response_t resp;
    kc_gm_heartbeat(f->gm, T(f), 4, &req, &resp);
    return resp.error_code;
}

static kc_group_state_t state_of(fx_t *f, const char *group)
{
    kc_group_info_t info;
    if (kc_gm_info(f->gm, kc_str_c(group), &info) != 0)
        return (kc_group_state_t)-1;
    return info.state;
}

static kc_group_info_t info_of(fx_t *f, const char *group)
{
    kc_group_info_t info;
    assert_int_equal(kc_gm_info(f->gm, kc_str_c(group), &info), 0);
    return info;
}

/* Decode record i: the key must be GroupMetadataKey v2; *tomb says whether the value is
 * null; otherwise *v is the GroupMetadataValue v3. */
static void decode_rec(fx_t *f, int i, kc_group_metadata_key_t *k, kc_group_metadata_value_t *v,
                       bool *tomb)
{
    assert_true(i < f->nr);
    rec_t *r = &f->recs[i];
    kc_reader_t rd;
    kc_rd_init(&rd, r->key, r->klen);
    assert_int_equal(kc_rd_i16(&rd), 2);
    assert_int_equal(kc_group_metadata_key_decode(&rd, &f->a, 2, k), 0);
    assert_int_equal(kc_rd_remaining(&rd), 0);
    *tomb = r->val == NULL;
    if (r->val) {
        kc_rd_init(&rd, r->val, r->vlen);
        assert_int_equal(kc_rd_i16(&rd), 3);
        assert_int_equal(kc_group_metadata_value_decode(&rd, &f->a, 3, v), 0);
        assert_int_equal(kc_rd_remaining(&rd), 0);
    }
}

static void assert_str(kc_str_t s, const char *want)
{
    if (!want) {
        assert_int_equal(s.len, -1);
        return;
    }
    assert_true(s.len >= 0);
    assert_int_equal((size_t)s.len, strlen(want));
    assert_memory_equal(s.p, want, (size_t)s.len);
}

static void assert_bytes(kc_bytes_t b, const char *want)
{
    assert_int_equal((size_t)b.len, strlen(want));
    if (b.len)
        assert_memory_equal(b.p, want, (size_t)b.len);
}

/* A Stable group of n dynamic members (v3 joins at the same instant, default timeouts). ids
 * receive the member ids, in join order; returns the generation. The leader's id is in
 * ids[*leader]. Every member gets assignment "A<i>". */
static int32_t form_group(fx_t *f, const char *group, int n, char ids[][128], int *leader)
{
    kc_join_group_response_t r;
    for (int i = 0; i < n; i++) {
        jopt_t o = {.version = 3, .group = group};
        assert_int_equal(do_join(f, &o, W(100 + i), &r), KC_GM_PARKED);
    }
    advance(f, 6000);
    int32_t gen = -1;
    for (int i = 0; i < n; i++) {
        const jans_t *a = join_answer(f, W(100 + i));
        assert_non_null(a);
        assert_int_equal(a->r.error_code, 0);
        snprintf(ids[i], 128, "%.*s", (int)a->r.member_id.len, a->r.member_id.p);
        gen = a->r.generation_id;
        if (kc_str_eq(a->r.leader, a->r.member_id))
            *leader = i;
    }
    assert_int_equal(state_of(f, group), KC_GROUP_COMPLETING_REBALANCE);
    const char *mids[16];
    const char *as[16];
    char abuf[16][16];
    for (int i = 0; i < n; i++) {
        mids[i] = ids[i];
        snprintf(abuf[i], sizeof(abuf[i]), "A%d", i);
        as[i] = abuf[i];
    }
    kc_sync_group_response_t s;
    assert_int_equal(
        do_sync(f, 4, group, ids[*leader], gen, NULL, n, mids, as, W(200 + *leader), &s),
        KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_bytes(s.assignment, as[*leader]);
    for (int i = 0; i < n; i++) {
        if (i == *leader)
            continue;
        assert_int_equal(do_sync(f, 4, group, ids[i], gen, NULL, 0, NULL, NULL, W(200 + i), &s),
                         KC_GM_ANSWERED);
        assert_int_equal(s.error_code, 0);
        assert_bytes(s.assignment, as[i]);
    }
    assert_int_equal(state_of(f, group), KC_GROUP_STABLE);
    return gen;
}

/* ---- Tests: JoinGroup checks ------------------------------------------------------------ */

static void test_state_names(void **state)
{
    (void)state;
    assert_string_equal(kc_group_state_name(KC_GROUP_EMPTY), "Empty");
    assert_string_equal(kc_group_state_name(KC_GROUP_PREPARING_REBALANCE), "PreparingRebalance");
    assert_string_equal(kc_group_state_name(KC_GROUP_COMPLETING_REBALANCE), "CompletingRebalance");
    assert_string_equal(kc_group_state_name(KC_GROUP_STABLE), "Stable");
    assert_string_equal(kc_group_state_name(KC_GROUP_DEAD), "Dead");
}

static void test_join_prechecks(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t o = {.group = "", .member = "m-1"};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INVALID_GROUP_ID);
    assert_str(r.member_id, "m-1");

    jopt_t lo = {.session = 5999};
    assert_int_equal(do_join(f, &lo, W(2), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INVALID_SESSION_TIMEOUT);
    jopt_t hi = {.session = 1800001};
    assert_int_equal(do_join(f, &hi, W(3), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INVALID_SESSION_TIMEOUT);

    /* A member id for a group that does not exist. */
    jopt_t um = {.member = "ghost"};
    assert_int_equal(do_join(f, &um, W(4), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(r.member_id, "ghost");
    assert_int_equal((int)state_of(f, "g"), -1);
    assert_int_equal(f->nr, 0);
    fx_free(f);
}

static void test_join_inconsistent_protocol_new_group(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t o = {.ptype = ""};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    assert_str(r.member_id, "");
    /* Kafka still creates the group and writes its empty record. */
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    assert_int_equal(f->nr, 1);
    jopt_t np = {.nprotos = -1};
    assert_int_equal(do_join(f, &np, W(2), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(f->nr, 1);
    fx_free(f);
}

static void test_new_group_empty_record(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(f->nr, 1);
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, 0, &k, &v, &tomb);
    assert_false(tomb);
    assert_str(k.group, "g");
    assert_str(v.protocol_type, "");
    assert_int_equal(v.generation, 0);
    assert_str(v.protocol, NULL);
    assert_str(v.leader, NULL);
    assert_int_equal(v.current_state_timestamp, f->now);
    assert_int_equal(v.members.n, 0);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    fx_free(f);
}

/* ---- KIP-394 ---------------------------------------------------------------------------- */

static void test_kip394_member_id_required(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t o = {.version = 4, .client_id = "consumer-7"};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
    const char *id = S(f, r.member_id);
    /* "<client id>-<uuid v4>" */
    assert_int_equal(strlen(id), strlen("consumer-7-") + 36);
    assert_memory_equal(id, "consumer-7-", 11);
    assert_int_equal(id[11 + 8], '-');
    assert_int_equal(id[11 + 14], '4');
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    assert_int_equal(f->nr, 1); /* the new group's empty record */

    /* The pending member is not a member yet. */
    assert_int_equal(hb(f, "g", id, 0, NULL), KC_ERR_UNKNOWN_MEMBER_ID);

    /* It comes back with its id and waits for the initial rebalance. */
    jopt_t o2 = {.version = 4, .member = id};
    assert_int_equal(do_join(f, &o2, W(2), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    advance(f, 2999);
    assert_null(join_answer(f, W(2)));
    advance(f, 1);
    const jans_t *a = join_answer(f, W(2));
    assert_non_null(a);
    assert_int_equal(a->r.error_code, 0);
    assert_int_equal(a->r.generation_id, 1);
    assert_str(a->r.member_id, id);
    assert_str(a->r.leader, id);
    assert_str(a->r.protocol_name, "range");
    assert_str(a->r.protocol_type, "consumer");
    assert_int_equal(a->r.members.n, 1);
    assert_str(a->r.members.v[0].member_id, id);
    assert_int_equal(state_of(f, "g"), KC_GROUP_COMPLETING_REBALANCE);
    fx_free(f);
}

static void test_kip394_pending_expires(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t o = {.version = 4, .session = 8000};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_ANSWERED);
    const char *id = S(f, r.member_id);
    assert_int_equal(kc_gm_next_deadline(f->gm), f->now + 8000);
    advance(f, 8000);
    assert_int_equal(kc_gm_next_deadline(f->gm), INT64_MAX);
    jopt_t o2 = {.version = 4, .member = id};
    assert_int_equal(do_join(f, &o2, W(2), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(r.member_id, id);
    fx_free(f);
}

/* A pending member holds up the join phase of a group that is rebalancing. */
static void test_kip394_pending_blocks_join_phase(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[4][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 1, ids, &leader);
    kc_join_group_response_t r;
    jopt_t o = {.version = 4};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
    const char *pid = S(f, r.member_id);
    /* The old member rejoins (leader rejoin forces a rebalance); the pending one is awaited. */
    jopt_t o1 = {.version = 4, .member = ids[0]};
    assert_int_equal(do_join(f, &o1, W(2), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    advance(f, 5000);
    assert_null(join_answer(f, W(2)));
    jopt_t o2 = {.version = 4, .member = pid};
    assert_int_equal(do_join(f, &o2, W(3), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, gen + 1);
    assert_int_equal(r.members.n, 0);
    assert_int_equal(join_answer(f, W(2))->r.members.n, 2);
    fx_free(f);
}

/* ---- Initial rebalance delay ------------------------------------------------------------ */

static void test_initial_delay_one_generation(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    int64_t t0 = f->now;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    advance(f, 1000);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 1500);
    assert_int_equal(join3(f, NULL, W(3), &r), KC_GM_PARKED);
    /* Delay 3000 was extended once (new members), by another 3000. */
    advance_to(f, t0 + 5999);
    assert_int_equal(f->nj, 0);
    advance_to(f, t0 + 6000);
    assert_int_equal(f->nj, 3);
    for (int i = 1; i <= 3; i++)
        assert_int_equal(join_answer(f, W(i))->r.generation_id, 1);
    /* The first joiner leads and alone gets the members. */
    const jans_t *l = join_answer(f, W(1));
    assert_true(kc_str_eq(l->r.leader, l->r.member_id));
    assert_int_equal(l->r.members.n, 3);
    assert_int_equal(join_answer(f, W(2))->r.members.n, 0);
    assert_int_equal(join_answer(f, W(3))->r.members.n, 0);
    fx_free(f);
}

static void test_initial_delay_bounded_by_rebalance_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    int64_t t0 = f->now;
    jopt_t o = {.version = 3, .rebalance = 5000};
    assert_int_equal(do_join(f, &o, W(0), &r), KC_GM_PARKED);
    /* New members keep arriving every second: the delay stops at the rebalance timeout. */
    for (int i = 1; i <= 4; i++) {
        advance_to(f, t0 + 1000 * i);
        if (f->nj)
            break;
        assert_int_equal(do_join(f, &o, W(i), &r), KC_GM_PARKED);
    }
    advance_to(f, t0 + 4999);
    assert_int_equal(f->nj, 0);
    advance_to(f, t0 + 5000);
    assert_int_equal(f->nj, 5);
    assert_int_equal(info_of(f, "g").generation, 1);
    assert_int_equal(info_of(f, "g").n_members, 5);
    fx_free(f);
}

/* ---- Protocols -------------------------------------------------------------------------- */

static void test_protocol_selection_vote(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t a = {.version = 3, .nprotos = 2, .names = {"range", "roundrobin"}};
    a.metas[0] = (kc_bytes_t){(const uint8_t *)"RA", 2};
    a.metas[1] = (kc_bytes_t){(const uint8_t *)"RR-a", 4};
    jopt_t b = {.version = 3, .nprotos = 3, .names = {"roundrobin", "range", "sticky"}};
    b.metas[1] = (kc_bytes_t){(const uint8_t *)"RA-b", 4};
    jopt_t c = {.version = 3, .nprotos = 2, .names = {"sticky", "roundrobin"}};
    assert_int_equal(do_join(f, &a, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &b, W(2), &r), KC_GM_PARKED);
    /* c supports roundrobin (the only protocol everyone has), so it may join. */
    assert_int_equal(do_join(f, &c, W(3), &r), KC_GM_PARKED);
    advance(f, 6000);
    for (int i = 1; i <= 3; i++)
        assert_str(join_answer(f, W(i))->r.protocol_name, "roundrobin");
    const jans_t *l = join_answer(f, W(1));
    assert_int_equal(l->r.members.n, 3);
    assert_bytes(l->r.members.v[0].metadata, "RR-a");
    fx_free(f);
}

static void test_protocol_selection_majority(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t a = {.version = 3, .nprotos = 2, .names = {"range", "roundrobin"}};
    jopt_t b = {.version = 3, .nprotos = 2, .names = {"roundrobin", "range"}};
    assert_int_equal(do_join(f, &a, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &b, W(2), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &b, W(3), &r), KC_GM_PARKED);
    advance(f, 6000);
    assert_str(join_answer(f, W(1))->r.protocol_name, "roundrobin");
    /* One each: the oldest member's preference breaks the tie. */
    fx_t *f2 = fx_new();
    assert_int_equal(do_join(f2, &a, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f2, &b, W(2), &r), KC_GM_PARKED);
    advance(f2, 6000);
    assert_str(join_answer(f2, W(2))->r.protocol_name, "range");
    fx_free(f2);
    fx_free(f);
}

static void test_inconsistent_protocol_existing_group(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    jopt_t other = {.version = 3, .nprotos = 1, .names = {"roundrobin"}};
    assert_int_equal(do_join(f, &other, W(2), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    jopt_t type = {.version = 3, .ptype = "connect"};
    assert_int_equal(do_join(f, &type, W(3), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    assert_str(r.member_id, "");
    fx_free(f);
}

/* ---- SyncGroup -------------------------------------------------------------------------- */

static void test_sync_flow_and_record(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t st = {.version = 5, .instance = "inst-b"};
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &st, W(2), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(3), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *l = S(f, join_answer(f, W(1))->r.member_id);
    const char *b = S(f, join_answer(f, W(2))->r.member_id);
    const char *c = S(f, join_answer(f, W(3))->r.member_id);
    assert_memory_equal(b, "inst-b-", 7);
    int32_t gen = join_answer(f, W(1))->r.generation_id;
    int64_t completing_at = f->now;

    /* A follower syncs first: parked until the leader's assignment. */
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 3, "g", b, gen, "inst-b", 0, NULL, NULL, W(12), &s), KC_GM_PARKED);
    int nrec = f->nr;
    advance(f, 100);
    const char *ids[] = {l, b, "not-a-member"};
    const char *as[] = {"AL", "AB", "AX"};
    assert_int_equal(do_sync(f, 5, "g", l, gen, NULL, 3, ids, as, W(11), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_bytes(s.assignment, "AL");
    assert_str(s.protocol_name, "range");
    assert_str(s.protocol_type, "consumer");
    const sans_t *sb = sync_answer(f, W(12));
    assert_non_null(sb);
    assert_int_equal(sb->r.error_code, 0);
    assert_bytes(sb->r.assignment, "AB");
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);

    /* The record: every member, in join order; c got an empty assignment. */
    assert_int_equal(f->nr, nrec + 1);
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, nrec, &k, &v, &tomb);
    assert_false(tomb);
    assert_str(k.group, "g");
    assert_str(v.protocol_type, "consumer");
    assert_int_equal(v.generation, gen);
    assert_str(v.protocol, "range");
    assert_str(v.leader, l);
    assert_int_equal(v.current_state_timestamp, completing_at);
    assert_int_equal(v.members.n, 3);
    assert_str(v.members.v[0].member_id, l);
    assert_str(v.members.v[0].group_instance_id, NULL);
    assert_str(v.members.v[0].client_id, "client");
    assert_str(v.members.v[0].client_host, "/10.0.0.1");
    assert_int_equal(v.members.v[0].session_timeout, 10000);
    assert_int_equal(v.members.v[0].rebalance_timeout, 20000);
    assert_bytes(v.members.v[0].assignment, "AL");
    assert_true(v.members.v[0].subscription.len > 0);
    assert_str(v.members.v[1].member_id, b);
    assert_str(v.members.v[1].group_instance_id, "inst-b");
    assert_bytes(v.members.v[1].assignment, "AB");
    assert_str(v.members.v[2].member_id, c);
    assert_bytes(v.members.v[2].assignment, "");

    /* Stable: a sync answers at once with the stored assignment. */
    assert_int_equal(do_sync(f, 4, "g", c, gen, NULL, 0, NULL, NULL, W(13), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_bytes(s.assignment, "");
    assert_int_equal(do_sync(f, 5, "g", b, gen, "inst-b", 0, NULL, NULL, W(14), &s),
                     KC_GM_ANSWERED);
    assert_bytes(s.assignment, "AB");
    assert_str(s.protocol_name, "range");
    assert_int_equal(f->nr, nrec + 1);
    fx_free(f);
}

/* message.max.bytes: a JoinGroup whose protocol metadata cannot fit in any record is refused
 * at once; an assignment that makes the group's record too large fails the leader's SyncGroup
 * for every member with UNKNOWN_SERVER_ERROR (Kafka's answer to RecordTooLargeException) and
 * nothing is written. Each is logged once for the group, however often it is retried. */
static void test_record_too_large(void **state)
{
    (void)state;
    char path[] = "/tmp/kc-group-rec-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    kc_diag_set_level(KC_DIAG_INFO);

    kc_gm_config_t cfg = default_cfg();
    cfg.record_max_bytes = 4096;
    fx_t *f = fx_new_cfg(&cfg);
    static uint8_t big[8192];
    memset(big, 'x', sizeof(big));
    jopt_t o = {.version = 5,
                .member = "",
                .nprotos = 2,
                .names = {"range", "roundrobin"},
                .metas = {{big, 8192}, {big, 4096}}};
    kc_join_group_response_t r;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_ANSWERED);
        assert_int_equal(r.error_code, KC_ERR_UNKNOWN_SERVER_ERROR);
    }
    assert_int_equal(f->nr, 0);
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &(kc_group_info_t){0}), -1);

    /* Two members that fit; the leader's 3 KB assignment does not. */
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(3), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *a = S(f, join_answer(f, W(2))->r.member_id);
    const char *b = S(f, join_answer(f, W(3))->r.member_id);
    int32_t gen = join_answer(f, W(2))->r.generation_id;
    const char *leader = S(f, join_answer(f, W(2))->r.leader);
    const char *follower = strcmp(leader, a) == 0 ? b : a;
    int nrec = f->nr;
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 3, "g", follower, gen, NULL, 0, NULL, NULL, W(5), &s),
                     KC_GM_PARKED);
    char *huge = calloc(1, 3001);
    memset(huge, 'A', 3000);
    const char *ids[] = {leader, follower};
    const char *as[] = {huge, huge};
    assert_int_equal(do_sync(f, 3, "g", leader, gen, NULL, 2, ids, as, W(4), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_UNKNOWN_SERVER_ERROR);
    assert_int_equal(sync_answer(f, W(5))->r.error_code, KC_ERR_UNKNOWN_SERVER_ERROR);
    assert_int_equal(f->nr, nrec); /* nothing written */
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    free(huge);
    fx_free(f);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    kc_diag_set_level(KC_DIAG_ERROR);
    char buf[16384];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    int refusals = 0;
    for (const char *p = buf; (p = strstr(p, "request refused")) != NULL; p++)
        refusals++;
    assert_int_equal(refusals, 2); /* the JoinGroup (3 times) once, the record once */
    assert_non_null(strstr(buf, "4096 bytes of protocol metadata"));
    assert_non_null(strstr(buf, "larger than message.max.bytes (4096)"));
}

static void test_sync_errors(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 4, "nope", "m", 1, NULL, 0, NULL, NULL, W(1), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(do_sync(f, 4, "", "m", 1, NULL, 0, NULL, NULL, W(1), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_INVALID_GROUP_ID);

    /* An Empty group. */
    kc_join_group_response_t r;
    jopt_t o = {.version = 4, .group = "e"};
    do_join(f, &o, W(2), &r);
    assert_int_equal(do_sync(f, 4, "e", "m", 0, NULL, 0, NULL, NULL, W(1), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_UNKNOWN_MEMBER_ID);

    /* A group in CompletingRebalance with a static and a dynamic member. */
    jopt_t st = {.version = 5, .instance = "i1"};
    assert_int_equal(do_join(f, &st, W(3), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(4), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *m1 = S(f, join_answer(f, W(3))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(4))->r.member_id);
    assert_int_equal(do_sync(f, 4, "g", "unknown", 1, NULL, 0, NULL, NULL, W(5), &s),
                     KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(do_sync(f, 4, "g", m2, 7, NULL, 0, NULL, NULL, W(5), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(do_sync(f, 4, "g", m2, 1, "i1", 0, NULL, NULL, W(5), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(do_sync(f, 4, "g", m1, 1, "i-unknown", 0, NULL, NULL, W(5), &s),
                     KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_UNKNOWN_MEMBER_ID);

    /* v5: protocol type and name must be present and match. */
    kc_sync_group_request_t req;
    kc_sync_group_request_init(&req);
    req.group_id = KC_STR_LIT("g");
    req.member_id = kc_str_c(m2);
    req.generation_id = 1;
    req.protocol_type = KC_STR_LIT("consumer");
    assert_int_equal(kc_gm_sync(f->gm, T(f), 5, &req, W(6), &f->a, &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    req.protocol_name = KC_STR_LIT("roundrobin");
    assert_int_equal(kc_gm_sync(f->gm, T(f), 5, &req, W(6), &f->a, &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    req.protocol_name = KC_STR_LIT("range");
    req.protocol_type = KC_STR_LIT("connect");
    assert_int_equal(kc_gm_sync(f->gm, T(f), 5, &req, W(6), &f->a, &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_INCONSISTENT_GROUP_PROTOCOL);
    /* Below v5 the fields are not read. */
    assert_int_equal(kc_gm_sync(f->gm, T(f), 4, &req, W(6), &f->a, &s), KC_GM_PARKED);

    /* A JoinGroup naming the static member without its instance id passes validateMember
     * (as in Kafka) and, with unchanged protocols, gets the current generation. */
    jopt_t rj = {.version = 3, .member = m1};
    assert_int_equal(do_join(f, &rj, W(7), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, 1);
    /* PreparingRebalance: REBALANCE_IN_PROGRESS. The parked sync is answered with it too. */
    jopt_t rj2 = {.version = 5, .member = m1, .instance = "i1", .nprotos = 1, .names = {"range"}};
    assert_int_equal(do_join(f, &rj2, W(7), &r), KC_GM_PARKED); /* changed metadata */
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    const sans_t *ps = sync_answer(f, W(6));
    assert_non_null(ps);
    assert_int_equal(ps->r.error_code, KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(do_sync(f, 4, "g", m2, 1, NULL, 0, NULL, NULL, W(8), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, KC_ERR_REBALANCE_IN_PROGRESS);
    fx_free(f);
}

/* A member re-sending SyncGroup while one is parked: the old one gets NOT_COORDINATOR. */
static void test_sync_parked_twice(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 4, "g", m2, 1, NULL, 0, NULL, NULL, W(10), &s), KC_GM_PARKED);
    assert_int_equal(do_sync(f, 4, "g", m2, 1, NULL, 0, NULL, NULL, W(11), &s), KC_GM_PARKED);
    assert_int_equal(sync_answer(f, W(10))->r.error_code, KC_ERR_NOT_COORDINATOR);
    assert_null(sync_answer(f, W(11)));
    fx_free(f);
}

/* ---- Heartbeat and sessions ------------------------------------------------------------- */

static void test_heartbeat_per_state(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    assert_int_equal(hb(f, "", "m", 0, NULL), KC_ERR_INVALID_GROUP_ID);
    assert_int_equal(hb(f, "g", "m", 0, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    kc_join_group_response_t r;
    jopt_t st = {.version = 5, .instance = "i1"};
    assert_int_equal(do_join(f, &st, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    const char *m1 = S(f, join_answer(f, W(1)) ? join_answer(f, W(1))->r.member_id : KC_STR_NULL);
    assert_null(m1);
    advance(f, 6000);
    m1 = S(f, join_answer(f, W(1))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    /* CompletingRebalance */
    assert_int_equal(hb(f, "g", m2, 1, NULL), 0);
    assert_int_equal(hb(f, "g", "zz", 1, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(hb(f, "g", m2, 0, NULL), KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(hb(f, "g", m1, 1, "i1"), 0);
    assert_int_equal(hb(f, "g", m2, 1, "i1"), KC_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(hb(f, "g", m1, 1, "i2"), KC_ERR_UNKNOWN_MEMBER_ID);
    /* Stable */
    kc_sync_group_response_t s;
    const char *ids[] = {m1, m2};
    const char *as[] = {"a", "b"};
    do_sync(f, 4, "g", m1, 1, "i1", 2, ids, as, W(3), &s);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    assert_int_equal(hb(f, "g", m2, 1, NULL), 0);
    /* PreparingRebalance */
    jopt_t rj = {.version = 3, .member = m2, .nprotos = 1, .names = {"range"}};
    rj.metas[0] = (kc_bytes_t){(const uint8_t *)"changed", 7};
    assert_int_equal(do_join(f, &rj, W(4), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(hb(f, "g", m1, 1, "i1"), KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(hb(f, "g", m1, 0, "i1"), KC_ERR_ILLEGAL_GENERATION);
    fx_free(f);
}

static void test_session_expiry_to_empty(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[4][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 2, ids, &leader);
    int other = 1 - leader;
    int nrec = f->nr;
    /* Only the leader heartbeats; the other expires after its 10 s session. */
    int64_t t = f->now;
    for (int i = 1; i <= 3; i++) {
        advance_to(f, t + 3000 * i);
        assert_int_equal(hb(f, "g", ids[leader], gen, NULL), 0);
    }
    advance_to(f, t + 10000);
    assert_int_equal(hb(f, "g", ids[other], gen, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(hb(f, "g", ids[leader], gen, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(f->nr, nrec); /* no record for the removal itself, as in Kafka */
    /* The leader stops too (its last heartbeat was at t + 10000): its session ends and the
     * group becomes Empty. */
    advance_to(f, t + 19999);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    advance_to(f, t + 20000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    kc_group_info_t info = info_of(f, "g");
    assert_int_equal(info.generation, gen + 1);
    assert_int_equal(info.n_members, 0);
    assert_int_equal(info.state_timestamp_ms, t + 20000);
    assert_int_equal(f->nr, nrec + 1);
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, nrec, &k, &v, &tomb);
    assert_false(tomb);
    assert_str(v.protocol_type, "consumer");
    assert_int_equal(v.generation, gen + 1);
    assert_str(v.protocol, NULL);
    assert_str(v.leader, NULL);
    assert_int_equal(v.current_state_timestamp, t + 20000);
    assert_int_equal(v.members.n, 0);
    advance(f, 60000);
    assert_int_equal(kc_gm_next_deadline(f->gm), INT64_MAX);
    fx_free(f);
}

/* A heartbeat pushes the deadline later without touching the heap: the group is looked at
 * at the stale (earlier) time, nothing happens, and it is rescheduled exactly. */
static void test_heartbeat_extends_session(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[2][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 1, ids, &leader);
    int64_t t = f->now; /* the sync answer restarted the session */
    int64_t d0 = kc_gm_next_deadline(f->gm);
    assert_true(d0 <= t + 10000);
    advance(f, 4000);
    assert_int_equal(hb(f, "g", ids[0], gen, NULL), 0);
    assert_true(kc_gm_next_deadline(f->gm) <= t + 10000); /* stale-early is allowed */
    advance_to(f, t + 10000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    assert_int_equal(kc_gm_next_deadline(f->gm), t + 14000);
    advance_to(f, t + 13999);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    advance_to(f, t + 14000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    fx_free(f);
}

/* ---- Rebalance and sync timeouts -------------------------------------------------------- */

static void test_rebalance_timeout_removes_non_rejoining(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[3][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 2, ids, &leader);
    int other = 1 - leader;
    kc_join_group_response_t r;
    jopt_t lj = {.version = 3, .member = ids[leader]};
    int64_t t = f->now;
    assert_int_equal(do_join(f, &lj, W(50), &r), KC_GM_PARKED); /* leader rejoin: rebalance */
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    /* The follower keeps heartbeating but never rejoins. */
    for (int i = 1; i < 7; i++) {
        advance_to(f, t + 3000 * i);
        assert_int_equal(hb(f, "g", ids[other], gen, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    }
    advance_to(f, t + 19999);
    assert_null(join_answer(f, W(50)));
    advance_to(f, t + 20000);
    const jans_t *a = join_answer(f, W(50));
    assert_non_null(a);
    assert_int_equal(a->r.generation_id, gen + 1);
    assert_int_equal(a->r.members.n, 1);
    assert_int_equal(hb(f, "g", ids[other], gen + 1, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(info_of(f, "g").n_members, 1);
    fx_free(f);
}

static void test_leader_reelection(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[3][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 3, ids, &leader);
    int f1 = (leader + 1) % 3, f2 = (leader + 2) % 3;
    kc_join_group_response_t r;
    /* A follower changes its metadata: rebalance; the leader never rejoins. */
    jopt_t o = {.version = 3, .member = ids[f1], .nprotos = 1, .names = {"range"}};
    o.metas[0] = (kc_bytes_t){(const uint8_t *)"x", 1};
    assert_int_equal(do_join(f, &o, W(60), &r), KC_GM_PARKED);
    jopt_t o2 = {.version = 3, .member = ids[f2]};
    assert_int_equal(do_join(f, &o2, W(61), &r), KC_GM_PARKED);
    advance(f, 20000);
    const jans_t *a = join_answer(f, W(60));
    const jans_t *b = join_answer(f, W(61));
    assert_int_equal(a->r.generation_id, gen + 1);
    assert_str(a->r.leader, ids[f1]); /* first joined member in member order */
    assert_int_equal(a->r.members.n, 2);
    assert_str(b->r.leader, ids[f1]);
    assert_int_equal(b->r.members.n, 0);
    assert_int_equal(hb(f, "g", ids[leader], gen + 1, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    fx_free(f);
}

/* Nobody rejoins: the join phase is extended by another rebalance timeout; static members
 * are kept while dynamic ones are removed. */
static void test_static_member_kept_when_not_rejoining(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t st = {.version = 5, .instance = "s"};
    assert_int_equal(do_join(f, &st, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *s = S(f, join_answer(f, W(1))->r.member_id);
    const char *d = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t sr;
    const char *ids[] = {s, d};
    const char *as[] = {"S", "D"};
    do_sync(f, 5, "g", s, 1, "s", 2, ids, as, W(3), &sr);
    do_sync(f, 5, "g", d, 1, NULL, 0, NULL, NULL, W(4), &sr);
    /* A third member joins: rebalance; neither old member rejoins. */
    assert_int_equal(join3(f, NULL, W(5), &r), KC_GM_PARKED);
    int64_t t = f->now;
    for (int i = 1; i < 7; i++) {
        advance_to(f, t + 3000 * i);
        hb(f, "g", s, 1, "s");
        hb(f, "g", d, 1, NULL);
    }
    advance_to(f, t + 20000);
    const jans_t *a = join_answer(f, W(5));
    assert_non_null(a);
    assert_int_equal(a->r.generation_id, 2);
    /* The new member leads (the static leader did not rejoin); the static one stays. */
    assert_true(kc_str_eq(a->r.leader, a->r.member_id));
    assert_int_equal(a->r.members.n, 2);
    assert_int_equal(info_of(f, "g").n_members, 2);
    assert_int_equal(hb(f, "g", d, 2, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(hb(f, "g", s, 2, "s"), 0);
    fx_free(f);
}

static void test_sync_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    int64_t t = f->now;
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {m1, m2};
    const char *as[] = {"1", "2"};
    assert_int_equal(do_sync(f, 4, "g", m1, 1, NULL, 2, ids, as, W(3), &s), KC_GM_ANSWERED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    /* m2 heartbeats but never syncs: removed when the rebalance timeout ends. */
    for (int i = 1; i < 7; i++) {
        advance_to(f, t + 3000 * i);
        assert_int_equal(hb(f, "g", m2, 1, NULL), 0);
        assert_int_equal(hb(f, "g", m1, 1, NULL), 0);
    }
    advance_to(f, t + 20000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(hb(f, "g", m2, 1, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(hb(f, "g", m1, 1, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(info_of(f, "g").n_members, 1);
    fx_free(f);
}

static void test_sync_timeout_nobody_syncs(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    advance(f, 3000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_COMPLETING_REBALANCE);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    int64_t t = f->now;
    for (int i = 1; i < 7; i++) {
        advance_to(f, t + 3000 * i);
        assert_int_equal(hb(f, "g", m1, 1, NULL), 0);
    }
    /* The only member is removed; the rebalance completes at once with nobody: Empty. */
    advance_to(f, t + 20000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    assert_int_equal(info_of(f, "g").generation, 2);
    fx_free(f);
}

static void test_new_member_join_timeout(void **state)
{
    (void)state;
    kc_gm_config_t c = default_cfg();
    c.new_member_join_timeout_ms = 20000;
    fx_t *f = fx_new_cfg(&c);
    kc_join_group_response_t r;
    jopt_t a = {.version = 3, .rebalance = 60000};
    assert_int_equal(do_join(f, &a, W(1), &r), KC_GM_PARKED);
    advance(f, 3000);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {m1};
    const char *as[] = {"1"};
    do_sync(f, 4, "g", m1, 1, NULL, 1, ids, as, W(2), &s);
    /* A new member joins; the old one keeps heartbeating but does not rejoin for a while. */
    int64_t t = f->now;
    assert_int_equal(do_join(f, &a, W(3), &r), KC_GM_PARKED);
    for (int i = 1; i <= 6; i++) {
        advance_to(f, t + 3000 * i);
        hb(f, "g", m1, 1, NULL);
    }
    advance_to(f, t + 19999);
    assert_null(join_answer(f, W(3)));
    advance_to(f, t + 20000);
    /* Kafka's new-member join timeout: the parked JoinGroup gets UNKNOWN_MEMBER_ID. */
    const jans_t *ans = join_answer(f, W(3));
    assert_non_null(ans);
    assert_int_equal(ans->r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(ans->r.member_id, "");
    assert_int_equal(info_of(f, "g").n_members, 1);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    fx_free(f);
}

/* ---- Rejoins ---------------------------------------------------------------------------- */

static void test_join_parked_twice_answers_old(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[3][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 2, ids, &leader);
    int other = 1 - leader;
    kc_join_group_response_t r;
    jopt_t lj = {.version = 3, .member = ids[leader]};
    assert_int_equal(do_join(f, &lj, W(70), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &lj, W(71), &r), KC_GM_PARKED);
    const jans_t *old = join_answer(f, W(70));
    assert_non_null(old);
    assert_int_equal(old->r.error_code, KC_ERR_NOT_COORDINATOR);
    assert_str(old->r.member_id, ids[leader]);
    jopt_t fj = {.version = 3, .member = ids[other]};
    assert_int_equal(do_join(f, &fj, W(72), &r), KC_GM_ANSWERED); /* completes the phase */
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, gen + 1);
    assert_int_equal(join_answer(f, W(71))->r.generation_id, gen + 1);
    assert_int_equal(count_join_answers(f, W(70)), 1);
    fx_free(f);
}

static void test_rejoin_completing_and_stable(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *l = S(f, join_answer(f, W(1))->r.member_id);
    const char *m = S(f, join_answer(f, W(2))->r.member_id);
    /* CompletingRebalance, same metadata: the current generation again. */
    jopt_t fj = {.version = 3, .member = m};
    assert_int_equal(do_join(f, &fj, W(3), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, 1);
    assert_int_equal(r.members.n, 0);
    assert_str(r.leader, l);
    jopt_t lj = {.version = 3, .member = l};
    assert_int_equal(do_join(f, &lj, W(4), &r), KC_GM_ANSWERED);
    assert_int_equal(r.members.n, 2);
    assert_int_equal(state_of(f, "g"), KC_GROUP_COMPLETING_REBALANCE);
    /* Stable: a follower with the same metadata gets the generation, no rebalance. */
    kc_sync_group_response_t s;
    const char *ids[] = {l, m};
    const char *as[] = {"l", "m"};
    do_sync(f, 4, "g", l, 1, NULL, 2, ids, as, W(5), &s);
    assert_int_equal(do_join(f, &fj, W(6), &r), KC_GM_ANSWERED);
    assert_int_equal(r.generation_id, 1);
    assert_str(r.protocol_type, "consumer");
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    /* Changed metadata in CompletingRebalance rebalances (checked via Stable here). */
    jopt_t ch = {.version = 3, .member = m, .nprotos = 1, .names = {"range"}};
    ch.metas[0] = (kc_bytes_t){(const uint8_t *)"new", 3};
    assert_int_equal(do_join(f, &ch, W(7), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(do_join(f, &lj, W(8), &r), KC_GM_ANSWERED);
    assert_int_equal(r.generation_id, 2);
    assert_int_equal(state_of(f, "g"), KC_GROUP_COMPLETING_REBALANCE);
    /* CompletingRebalance, changed metadata: rebalance again; parked syncs get 27. */
    assert_int_equal(do_sync(f, 4, "g", m, 2, NULL, 0, NULL, NULL, W(9), &s), KC_GM_PARKED);
    assert_int_equal(do_join(f, &fj, W(10), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(sync_answer(f, W(9))->r.error_code, KC_ERR_REBALANCE_IN_PROGRESS);
    /* Joining an Empty group with a member id: UNKNOWN_MEMBER_ID. */
    fx_free(f);
}

/* ---- Static membership (KIP-345, KIP-814) ----------------------------------------------- */

/* Two static members, Stable; returns the generation. */
static int32_t form_static(fx_t *f, char *a, char *b)
{
    kc_join_group_response_t r;
    jopt_t sa = {.version = 5, .instance = "ia"};
    jopt_t sb = {.version = 5, .instance = "ib"};
    assert_int_equal(do_join(f, &sa, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &sb, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    snprintf(a, 128, "%s", S(f, join_answer(f, W(1))->r.member_id));
    snprintf(b, 128, "%s", S(f, join_answer(f, W(2))->r.member_id));
    assert_str(join_answer(f, W(1))->r.leader, a);
    kc_sync_group_response_t s;
    const char *ids[] = {a, b};
    const char *as[] = {"AA", "BB"};
    do_sync(f, 5, "g", a, 1, "ia", 2, ids, as, W(3), &s);
    do_sync(f, 5, "g", b, 1, "ib", 0, NULL, NULL, W(4), &s);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    return 1;
}

static void test_static_follower_replaced_without_rebalance(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char a[128], b[128];
    int32_t gen = form_static(f, a, b);
    int nrec = f->nr;
    kc_join_group_response_t r;
    jopt_t sb = {.version = 7, .instance = "ib"};
    assert_int_equal(do_join(f, &sb, W(10), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    const char *nb = S(f, r.member_id);
    assert_memory_equal(nb, "ib-", 3);
    assert_string_not_equal(nb, b);
    assert_int_equal(r.generation_id, gen);
    assert_str(r.leader, a);
    assert_int_equal(r.members.n, 0);
    assert_false(r.skip_assignment);
    assert_str(r.protocol_name, "range");
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    /* The replacement is written: the new member id, the stored assignments. */
    assert_int_equal(f->nr, nrec + 1);
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, nrec, &k, &v, &tomb);
    assert_int_equal(v.members.n, 2);
    assert_str(v.members.v[1].member_id, nb);
    assert_str(v.members.v[1].group_instance_id, "ib");
    assert_bytes(v.members.v[1].assignment, "BB");
    assert_str(v.leader, a);
    /* The old id is fenced; the new one syncs and gets the assignment back. */
    assert_int_equal(hb(f, "g", b, gen, "ib"), KC_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(hb(f, "g", b, gen, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 5, "g", nb, gen, "ib", 0, NULL, NULL, W(11), &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_bytes(s.assignment, "BB");
    assert_int_equal(hb(f, "g", nb, gen, "ib"), 0);
    /* The old id trying to join: FENCED_INSTANCE_ID with null protocol fields. */
    jopt_t old = {.version = 7, .instance = "ib", .member = b};
    assert_int_equal(do_join(f, &old, W(12), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_FENCED_INSTANCE_ID);
    assert_str(r.protocol_name, NULL);
    assert_str(r.member_id, b);
    fx_free(f);
}

static void test_static_leader_skip_assignment(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char a[128], b[128];
    int32_t gen = form_static(f, a, b);
    kc_join_group_response_t r;
    /* v8: the old leader id is reported, so the restarted leader does not reassign. */
    jopt_t s8 = {.version = 8, .instance = "ia"};
    assert_int_equal(do_join(f, &s8, W(10), &r), KC_GM_ANSWERED);
    const char *na = S(f, r.member_id);
    assert_str(r.leader, a);
    assert_false(r.skip_assignment);
    assert_int_equal(r.members.n, 0);
    assert_int_equal(r.generation_id, gen);
    /* v9 (KIP-814): the leader learns it leads, gets the members, and may skip assigning. */
    jopt_t s9 = {.version = 9, .instance = "ia"};
    assert_int_equal(do_join(f, &s9, W(11), &r), KC_GM_ANSWERED);
    const char *na2 = S(f, r.member_id);
    assert_string_not_equal(na, na2);
    assert_str(r.leader, na2);
    assert_true(r.skip_assignment);
    assert_int_equal(r.members.n, 2);
    assert_str(r.members.v[0].group_instance_id, "ia");
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    /* v9 for a follower: no skip, no members. */
    jopt_t f9 = {.version = 9, .instance = "ib"};
    assert_int_equal(do_join(f, &f9, W(12), &r), KC_GM_ANSWERED);
    assert_false(r.skip_assignment);
    assert_int_equal(r.members.n, 0);
    assert_str(r.leader, na2);
    fx_free(f);
}

static void test_static_rejoin_protocol_change_rebalances(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char a[128], b[128];
    form_static(f, a, b);
    kc_join_group_response_t r;
    /* ib now prefers roundrobin (which ia does not support): selection stays range? ia only
     * has range, so the candidates are {range}; use a different protocol set for ia too. */
    jopt_t sa = {.version = 5, .instance = "ia", .nprotos = 2, .names = {"range", "rr"}};
    assert_int_equal(do_join(f, &sa, W(10), &r), KC_GM_ANSWERED); /* still range: no rebalance */
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    const char *na = S(f, r.member_id);
    jopt_t sb = {.version = 5, .instance = "ib", .nprotos = 2, .names = {"rr", "range"}};
    /* Votes: ia range, ib rr: a tie broken by the oldest member (ia): still range. */
    assert_int_equal(do_join(f, &sb, W(11), &r), KC_GM_ANSWERED);
    const char *nb = S(f, r.member_id);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    /* ia now prefers rr too: the selection would change, so the group rebalances. */
    jopt_t sa2 = {.version = 5, .instance = "ia", .nprotos = 2, .names = {"rr", "range"}};
    assert_int_equal(do_join(f, &sa2, W(12), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    (void)na;
    jopt_t jb = {
        .version = 5, .instance = "ib", .member = nb, .nprotos = 2, .names = {"rr", "range"}};
    assert_int_equal(do_join(f, &jb, W(13), &r), KC_GM_ANSWERED);
    assert_str(r.protocol_name, "rr");
    assert_str(join_answer(f, W(12))->r.protocol_name, "rr");
    fx_free(f);
}

static void test_static_fenced_while_parked(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char a[128], b[128];
    int32_t gen = form_static(f, a, b);
    kc_join_group_response_t r;
    /* ia (the leader) rejoins with its id: rebalance; it is parked. */
    jopt_t ra = {.version = 5, .instance = "ia", .member = a};
    assert_int_equal(do_join(f, &ra, W(10), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    /* A second process with the same instance id: the parked one is fenced. */
    jopt_t dup = {.version = 5, .instance = "ia"};
    assert_int_equal(do_join(f, &dup, W(11), &r), KC_GM_PARKED);
    const jans_t *old = join_answer(f, W(10));
    assert_non_null(old);
    assert_int_equal(old->r.error_code, KC_ERR_FENCED_INSTANCE_ID);
    assert_str(old->r.member_id, a);
    assert_str(old->r.protocol_name, NULL);
    /* ib rejoins: the phase completes with the new ia as leader. */
    jopt_t rb = {.version = 5, .instance = "ib", .member = b};
    assert_int_equal(do_join(f, &rb, W(12), &r), KC_GM_ANSWERED);
    const jans_t *n = join_answer(f, W(11));
    assert_non_null(n);
    assert_int_equal(n->r.generation_id, gen + 1);
    assert_true(kc_str_eq(n->r.leader, n->r.member_id));
    assert_int_equal(hb(f, "g", a, gen + 1, "ia"), KC_ERR_FENCED_INSTANCE_ID);
    fx_free(f);
}

static void test_static_replaced_in_completing_rebalances(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t sa = {.version = 5, .instance = "ia"};
    jopt_t sb = {.version = 5, .instance = "ib"};
    assert_int_equal(do_join(f, &sa, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &sb, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *b = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 5, "g", b, 1, "ib", 0, NULL, NULL, W(3), &s), KC_GM_PARKED);
    assert_int_equal(do_join(f, &sb, W(4), &r), KC_GM_PARKED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    /* The old id's parked sync was fenced. */
    assert_int_equal(sync_answer(f, W(3))->r.error_code, KC_ERR_FENCED_INSTANCE_ID);
    fx_free(f);
}

/* ---- group.max.size --------------------------------------------------------------------- */

static void test_group_max_size(void **state)
{
    (void)state;
    kc_gm_config_t c = default_cfg();
    c.max_size = 2;
    fx_t *f = fx_new_cfg(&c);
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(3), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_GROUP_MAX_SIZE_REACHED);
    assert_str(r.member_id, "");
    advance(f, 6000);
    assert_int_equal(info_of(f, "g").n_members, 2);
    /* Full in CompletingRebalance too; existing members are still accepted. */
    assert_int_equal(join3(f, NULL, W(4), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_GROUP_MAX_SIZE_REACHED);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    assert_int_equal(join3(f, m1, W(5), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    fx_free(f);
}

/* ---- LeaveGroup ------------------------------------------------------------------------- */

static void leave1(fx_t *f, int16_t v, const char *group, const char *member,
                   kc_leave_group_response_t *resp)
{
    kc_leave_group_request_t req;
    kc_leave_group_request_init(&req);
    req.group_id = kc_str_c(group);
    kc_member_identity_t *mi = kc_arena_alloc(&f->a, sizeof(*mi));
    mi->member_id = kc_str_c(member);
    mi->group_instance_id = KC_STR_NULL;
    mi->reason = KC_STR_LIT("test");
    if (v >= 3) {
        req.members.v = mi;
        req.members.n = 1;
    } else {
        req.member_id = kc_str_c(member);
    }
    kc_gm_leave(f->gm, T(f), v, &req, &f->a, resp);
    if (v >= 3 && resp->error_code == 0 && resp->members.n == 1)
        resp->error_code = resp->members.v[0].error_code;
}

static void test_leave_v0_and_last_member(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[2][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 1, ids, &leader);
    int nrec = f->nr;
    kc_leave_group_response_t resp;
    leave1(f, 0, "", ids[0], &resp);
    assert_int_equal(resp.error_code, KC_ERR_INVALID_GROUP_ID);
    leave1(f, 0, "g", "who", &resp);
    assert_int_equal(resp.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    leave1(f, 1, "nope", "who", &resp);
    assert_int_equal(resp.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    leave1(f, 2, "g", ids[0], &resp);
    assert_int_equal(resp.error_code, 0);
    /* The last member left a Stable group: rebalance with nobody, Empty, record. */
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    assert_int_equal(info_of(f, "g").generation, gen + 1);
    assert_int_equal(f->nr, nrec + 1);
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, nrec, &k, &v, &tomb);
    assert_int_equal(v.generation, gen + 1);
    assert_int_equal(v.members.n, 0);
    /* Only stale (early) wake-ups remain; they find nothing to do. */
    advance(f, 60000);
    assert_int_equal(kc_gm_next_deadline(f->gm), INT64_MAX);
    assert_int_equal(f->nr, nrec + 1);
    fx_free(f);
}

static void test_leave_batch(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t s1 = {.version = 5, .instance = "s1"};
    jopt_t s2 = {.version = 5, .instance = "s2"};
    assert_int_equal(do_join(f, &s1, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &s2, W(2), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(3), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(4), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *a = S(f, join_answer(f, W(1))->r.member_id);
    const char *b = S(f, join_answer(f, W(2))->r.member_id);
    const char *c = S(f, join_answer(f, W(3))->r.member_id);
    const char *d = S(f, join_answer(f, W(4))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {a, b, c, d};
    const char *as[] = {"a", "b", "c", "d"};
    do_sync(f, 5, "g", a, 1, "s1", 4, ids, as, W(5), &s);
    /* A KIP-394 pending member too. */
    jopt_t p = {.version = 4};
    assert_int_equal(do_join(f, &p, W(6), &r), KC_GM_ANSWERED);
    const char *pid = S(f, r.member_id);

    kc_member_identity_t mi[6] = {
        {.member_id = kc_str_c(c), .group_instance_id = KC_STR_NULL, .reason = KC_STR_LIT("bye")},
        {.member_id = KC_STR_LIT("nobody"),
         .group_instance_id = KC_STR_NULL,
         .reason = KC_STR_NULL},
        {.member_id = kc_str_c(c), .group_instance_id = KC_STR_LIT("s2"), .reason = KC_STR_NULL},
        {.member_id = KC_STR_EMPTY, .group_instance_id = KC_STR_LIT("s2"), .reason = KC_STR_NULL},
        {.member_id = kc_str_c(pid), .group_instance_id = KC_STR_NULL, .reason = KC_STR_NULL},
        {.member_id = KC_STR_EMPTY, .group_instance_id = KC_STR_LIT("zz"), .reason = KC_STR_NULL},
    };
    kc_leave_group_request_t req;
    kc_leave_group_request_init(&req);
    req.group_id = KC_STR_LIT("g");
    req.members.v = mi;
    req.members.n = 6;
    kc_leave_group_response_t resp;
    kc_gm_leave(f->gm, T(f), 5, &req, &f->a, &resp);
    assert_int_equal(resp.error_code, 0);
    assert_int_equal(resp.members.n, 6);
    assert_int_equal(resp.members.v[0].error_code, 0);
    assert_str(resp.members.v[0].member_id, c);
    assert_int_equal(resp.members.v[1].error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    /* c no longer exists, and s2 is someone else: fenced check first. */
    assert_int_equal(resp.members.v[2].error_code, KC_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(resp.members.v[3].error_code, 0); /* admin removal by instance id */
    assert_str(resp.members.v[3].group_instance_id, "s2");
    assert_int_equal(resp.members.v[4].error_code, 0); /* the pending member */
    assert_int_equal(resp.members.v[5].error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(info_of(f, "g").n_members, 2);
    assert_int_equal(hb(f, "g", b, 1, "s2"), KC_ERR_UNKNOWN_MEMBER_ID);
    /* The rest rejoin and the group moves on without them. */
    jopt_t ra = {.version = 5, .instance = "s1", .member = a};
    jopt_t rd = {.version = 3, .member = d};
    assert_int_equal(do_join(f, &ra, W(7), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &rd, W(8), &r), KC_GM_ANSWERED);
    assert_int_equal(r.generation_id, 2);
    assert_int_equal(join_answer(f, W(7))->r.members.n, 2);

    /* Unknown group: every member UNKNOWN_MEMBER_ID. */
    req.group_id = KC_STR_LIT("other");
    kc_gm_leave(f->gm, T(f), 3, &req, &f->a, &resp);
    assert_int_equal(resp.error_code, 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(resp.members.v[i].error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    fx_free(f);
}

/* A member parked in JoinGroup that leaves gets its JoinGroup answered UNKNOWN_MEMBER_ID. */
static void test_leave_while_parked(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {m1, m2};
    const char *as[] = {"1", "2"};
    do_sync(f, 4, "g", m1, 1, NULL, 2, ids, as, W(3), &s);
    jopt_t j1 = {.version = 3, .member = m1};
    assert_int_equal(do_join(f, &j1, W(4), &r), KC_GM_PARKED);
    kc_leave_group_response_t resp;
    leave1(f, 1, "g", m1, &resp);
    assert_int_equal(resp.error_code, 0);
    const jans_t *a = join_answer(f, W(4));
    assert_int_equal(a->r.error_code, KC_ERR_UNKNOWN_MEMBER_ID);
    assert_str(a->r.member_id, "");
    /* m2 is the only one left and had not rejoined: the phase waits for it. */
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    jopt_t j2 = {.version = 3, .member = m2};
    assert_int_equal(do_join(f, &j2, W(5), &r), KC_GM_ANSWERED);
    assert_str(r.leader, m2);
    fx_free(f);
}

/* ---- Offsets ---------------------------------------------------------------------------- */

static void test_validate_commit(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_gm_t *gm = f->gm;
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, KC_STR_NULL, -1, KC_STR_EMPTY, KC_STR_NULL),
                     KC_ERR_INVALID_GROUP_ID);
    /* Unknown group, generation >= 0. */
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 8, KC_STR_LIT("x"), 1, KC_STR_LIT("m"), KC_STR_NULL),
        KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 9, KC_STR_LIT("x"), 1, KC_STR_LIT("m"), KC_STR_NULL),
        KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal((int)state_of(f, "x"), -1);
    /* Unknown group, generation -1: a simple group is created, with no record. */
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 8, KC_STR_LIT("simple"), -1, KC_STR_EMPTY, KC_STR_NULL), 0);
    kc_group_info_t info = info_of(f, "simple");
    assert_int_equal(info.state, KC_GROUP_EMPTY);
    assert_str(info.protocol_type, "");
    assert_int_equal(info.generation, 0);
    assert_int_equal(f->nr, 0);
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 8, KC_STR_LIT("simple"), -1, KC_STR_EMPTY, KC_STR_NULL), 0);
    /* "" is a valid group id for commits. */
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 8, KC_STR_EMPTY, -1, KC_STR_EMPTY, KC_STR_NULL), 0);
    /* An Empty group with a member id: validated. */
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 8, KC_STR_LIT("simple"), -1, KC_STR_LIT("m"), KC_STR_NULL),
        0); /* generation -1 into Empty wins first */
    assert_int_equal(
        kc_gm_validate_commit(gm, T(f), 8, KC_STR_LIT("simple"), 0, KC_STR_LIT("m"), KC_STR_NULL),
        KC_ERR_UNKNOWN_MEMBER_ID);

    /* A consumer group in CompletingRebalance, then Stable. */
    kc_join_group_response_t r;
    jopt_t st = {.version = 5, .instance = "i1"};
    assert_int_equal(do_join(f, &st, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_str_t g = KC_STR_LIT("g");
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, kc_str_c(m2), KC_STR_NULL),
                     KC_ERR_REBALANCE_IN_PROGRESS);
    kc_sync_group_response_t s;
    const char *ids[] = {m1, m2};
    const char *as[] = {"1", "2"};
    do_sync(f, 5, "g", m1, 1, "i1", 2, ids, as, W(3), &s);
    do_sync(f, 5, "g", m2, 1, NULL, 0, NULL, NULL, W(4), &s);
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, kc_str_c(m2), KC_STR_NULL), 0);
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 2, kc_str_c(m2), KC_STR_NULL),
                     KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, KC_STR_LIT("zz"), KC_STR_NULL),
                     KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, -1, KC_STR_EMPTY, KC_STR_NULL),
                     KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, kc_str_c(m2), KC_STR_LIT("i1")),
                     KC_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, kc_str_c(m1), KC_STR_LIT("i1")), 0);
    /* Commits keep sessions alive: only commits for 25 s, nobody expires. */
    int64_t t = f->now;
    for (int i = 1; i <= 5; i++) {
        advance_to(f, t + 5000 * i);
        assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, kc_str_c(m1), KC_STR_NULL), 0);
        assert_int_equal(kc_gm_validate_commit(gm, T(f), 8, g, 1, kc_str_c(m2), KC_STR_NULL), 0);
    }
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    assert_int_equal(info_of(f, "g").n_members, 2);
    assert_int_equal(kc_gm_validate_fetch(gm, g, kc_str_c(m1), 5), 0);
    assert_int_equal(kc_gm_validate_fetch(gm, KC_STR_LIT("unknown"), KC_STR_NULL, -1), 0);
    fx_free(f);
}

static void test_subscriptions_and_expiry(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    static const char *const ta[] = {"orders", "events"};
    static const char *const tb[] = {"events", "audit"};
    jopt_t a = {.version = 3, .nprotos = 1, .names = {"range"}};
    a.metas[0] = subscription(f, 0, 2, ta);
    jopt_t b = {.version = 3, .nprotos = 1, .names = {"range"}};
    b.metas[0] = subscription(f, 3, 2, tb); /* a v3 subscription is read by its v0 prefix */
    kc_str_t g = KC_STR_LIT("g");
    assert_int_equal(do_join(f, &a, W(1), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &b, W(2), &r), KC_GM_PARKED);
    int64_t base;
    /* Not yet known during the first rebalance: a consumer group protects every topic. */
    assert_true(kc_gm_subscribed(f->gm, g, KC_STR_LIT("anything")));
    assert_false(kc_gm_offsets_expirable(f->gm, g, &base));
    advance(f, 6000);
    assert_true(kc_gm_subscribed(f->gm, g, KC_STR_LIT("orders")));
    assert_true(kc_gm_subscribed(f->gm, g, KC_STR_LIT("audit")));
    assert_true(kc_gm_subscribed(f->gm, g, KC_STR_LIT("events")));
    assert_false(kc_gm_subscribed(f->gm, g, KC_STR_LIT("other")));
    assert_false(kc_gm_offsets_expirable(f->gm, g, &base)); /* CompletingRebalance */
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {m1, m2};
    const char *as[] = {"1", "2"};
    do_sync(f, 4, "g", m1, 1, NULL, 2, ids, as, W(3), &s);
    assert_true(kc_gm_offsets_expirable(f->gm, g, &base));
    assert_int_equal(base, -1);
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_LIT("orders")),
                     KC_ERR_GROUP_SUBSCRIBED_TO_TOPIC);
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_LIT("other")), 0);
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_NULL), 0);
    /* Everyone leaves: Empty; offsets expire counting from when it became Empty. */
    kc_leave_group_response_t lr;
    leave1(f, 1, "g", m1, &lr);
    leave1(f, 1, "g", m2, &lr);
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    assert_true(kc_gm_offsets_expirable(f->gm, g, &base));
    assert_int_equal(base, f->now);
    assert_false(kc_gm_subscribed(f->gm, g, KC_STR_LIT("orders")));
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_LIT("orders")), 0);

    /* Unknown and simple groups: from each offset's commit time. */
    assert_true(kc_gm_offsets_expirable(f->gm, KC_STR_LIT("nope"), &base));
    assert_int_equal(base, -1);
    assert_false(kc_gm_subscribed(f->gm, KC_STR_LIT("nope"), KC_STR_LIT("orders")));
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, KC_STR_LIT("nope"), KC_STR_NULL),
                     KC_ERR_GROUP_ID_NOT_FOUND);
    kc_gm_validate_commit(f->gm, T(f), 8, KC_STR_LIT("simple"), -1, KC_STR_EMPTY, KC_STR_NULL);
    assert_true(kc_gm_offsets_expirable(f->gm, KC_STR_LIT("simple"), &base));
    assert_int_equal(base, -1);
    fx_free(f);
}

static void test_unparsable_subscription(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    jopt_t a = {.version = 3, .nprotos = 1, .names = {"range"}};
    a.metas[0] = (kc_bytes_t){(const uint8_t *)"\x00\x00\x00\x05xy", 6};
    assert_int_equal(do_join(f, &a, W(1), &r), KC_GM_PARKED);
    advance(f, 3000);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    kc_sync_group_response_t s;
    do_sync(f, 4, "g", m1, 1, NULL, 0, NULL, NULL, W(2), &s);
    kc_str_t g = KC_STR_LIT("g");
    int64_t base;
    assert_true(kc_gm_subscribed(f->gm, g, KC_STR_LIT("anything")));
    assert_false(kc_gm_offsets_expirable(f->gm, g, &base));
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, g, KC_STR_LIT("t")),
                     KC_ERR_GROUP_SUBSCRIBED_TO_TOPIC);

    /* A non-consumer protocol type: nothing is subscribed, and a live group's offsets stay. */
    jopt_t c = {.version = 3, .group = "conn", .ptype = "connect"};
    assert_int_equal(do_join(f, &c, W(3), &r), KC_GM_PARKED);
    advance(f, 3000);
    kc_str_t cg = KC_STR_LIT("conn");
    assert_false(kc_gm_subscribed(f->gm, cg, KC_STR_LIT("t1")));
    assert_false(kc_gm_offsets_expirable(f->gm, cg, &base));
    assert_int_equal(kc_gm_validate_offset_delete(f->gm, cg, KC_STR_LIT("t1")),
                     KC_ERR_NON_EMPTY_GROUP);
    fx_free(f);
}

/* ---- Admin ------------------------------------------------------------------------------ */

static void test_describe(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_describe_groups_described_group_t d;
    kc_gm_describe(f->gm, 5, KC_STR_LIT("nope"), true, &f->a, &d);
    assert_int_equal(d.error_code, 0);
    assert_str(d.group_state, "Dead");
    assert_str(d.group_id, "nope");
    assert_int_equal(d.members.n, 0);
    assert_int_equal(d.authorized_operations, (1 << 3) | (1 << 6) | (1 << 8));
    kc_gm_describe(f->gm, 6, KC_STR_LIT("nope"), true, &f->a, &d);
    assert_int_equal(d.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_str(d.error_message, "Group nope not found.");
    assert_str(d.group_state, "Dead");
    assert_int_equal(d.authorized_operations, INT32_MIN);
    kc_gm_describe(f->gm, 6, KC_STR_NULL, false, &f->a, &d);
    assert_int_equal(d.error_code, KC_ERR_INVALID_GROUP_ID);

    kc_join_group_response_t r;
    jopt_t st = {.version = 5, .instance = "i1", .client_id = "cli-A"};
    assert_int_equal(do_join(f, &st, W(1), &r), KC_GM_PARKED);
    kc_gm_describe(f->gm, 5, KC_STR_LIT("g"), false, &f->a, &d);
    assert_str(d.group_state, "PreparingRebalance");
    assert_str(d.protocol_type, "consumer");
    assert_str(d.protocol_data, "");
    assert_int_equal(d.members.n, 1);
    assert_int_equal(d.members.v[0].member_metadata.len, 0);
    assert_int_equal(d.authorized_operations, INT32_MIN);
    advance(f, 3000);
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {m1};
    const char *as[] = {"ASSIGN"};
    do_sync(f, 5, "g", m1, 1, "i1", 1, ids, as, W(2), &s);
    kc_gm_describe(f->gm, 5, KC_STR_LIT("g"), true, &f->a, &d);
    assert_int_equal(d.error_code, 0);
    assert_str(d.group_state, "Stable");
    assert_str(d.protocol_data, "range");
    assert_int_equal(d.members.n, 1);
    assert_str(d.members.v[0].member_id, m1);
    assert_str(d.members.v[0].group_instance_id, "i1");
    assert_str(d.members.v[0].client_id, "cli-A");
    assert_str(d.members.v[0].client_host, "/10.0.0.1");
    assert_true(d.members.v[0].member_metadata.len > 0);
    assert_bytes(d.members.v[0].member_assignment, "ASSIGN");
    assert_int_equal(d.authorized_operations, 328);
    /* Below v3 there is no authorized_operations field. */
    kc_gm_describe(f->gm, 2, KC_STR_LIT("g"), true, &f->a, &d);
    assert_int_equal(d.authorized_operations, INT32_MIN);
    fx_free(f);
}

static void test_delete_and_remove_if_empty(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("nope")), KC_ERR_GROUP_ID_NOT_FOUND);
    char ids[2][128];
    int leader = 0;
    form_group(f, "g", 1, ids, &leader);
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("g")), KC_ERR_NON_EMPTY_GROUP);
    kc_gm_remove_if_empty(f->gm, T(f), KC_STR_LIT("g"));
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    kc_leave_group_response_t lr;
    leave1(f, 1, "g", ids[0], &lr);
    assert_int_equal(state_of(f, "g"), KC_GROUP_EMPTY);
    int nrec = f->nr;
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("g")), 0);
    assert_int_equal((int)state_of(f, "g"), -1);
    assert_int_equal(f->nr, nrec + 1);
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, nrec, &k, &v, &tomb);
    assert_true(tomb);
    assert_str(k.group, "g");
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("g")), KC_ERR_GROUP_ID_NOT_FOUND);

    /* A simple group removed after retention. */
    kc_gm_validate_commit(f->gm, T(f), 8, KC_STR_LIT("s"), -1, KC_STR_EMPTY, KC_STR_NULL);
    kc_gm_remove_if_empty(f->gm, T(f), KC_STR_LIT("s"));
    assert_int_equal((int)state_of(f, "s"), -1);
    decode_rec(f, nrec + 1, &k, &v, &tomb);
    assert_true(tomb);
    assert_str(k.group, "s");
    kc_gm_remove_if_empty(f->gm, T(f), KC_STR_LIT("s"));
    assert_int_equal(f->nr, nrec + 2);

    /* An Empty group with a pending member (and its timer) can be deleted too. */
    kc_join_group_response_t r;
    jopt_t p = {.version = 4, .group = "p"};
    do_join(f, &p, W(1), &r);
    assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
    assert_true(kc_gm_next_deadline(f->gm) < INT64_MAX);
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("p")), 0);
    assert_int_equal(kc_gm_next_deadline(f->gm), INT64_MAX);
    fx_free(f);
}

static void count_group(void *arg, const kc_group_info_t *g)
{
    int *n = arg;
    (*n)++;
    assert_true(g->group_id.len > 0);
}

static void test_info_and_each(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_group_info_t info;
    assert_int_equal(kc_gm_info(f->gm, KC_STR_LIT("g"), &info), -1);
    char ids[2][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 2, ids, &leader);
    info = info_of(f, "g");
    assert_str(info.group_id, "g");
    assert_str(info.protocol_type, "consumer");
    assert_str(info.protocol, "range");
    assert_int_equal(info.generation, gen);
    assert_int_equal(info.n_members, 2);
    assert_int_equal(info.state_timestamp_ms, f->now);
    kc_gm_validate_commit(f->gm, T(f), 8, KC_STR_LIT("s"), -1, KC_STR_EMPTY, KC_STR_NULL);
    int n = 0;
    kc_gm_each(f->gm, count_group, &n);
    assert_int_equal(n, 2);
    fx_free(f);
}

/* kc_gm_free answers every parked request with COORDINATOR_NOT_AVAILABLE. */
static void test_free_answers_parked(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 4, "g", m2, 1, NULL, 0, NULL, NULL, W(3), &s), KC_GM_PARKED);
    jopt_t o = {.version = 3, .group = "h"};
    assert_int_equal(do_join(f, &o, W(4), &r), KC_GM_PARKED);
    kc_gm_free(f->gm);
    f->gm = NULL;
    assert_int_equal(sync_answer(f, W(3))->r.error_code, KC_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(join_answer(f, W(4))->r.error_code, KC_ERR_COORDINATOR_NOT_AVAILABLE);
    fx_free(f);
}

/* Allocation failure on a request path answers that request and changes nothing. */
static void test_oom_answers_request(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_arena_t tiny;
    kc_arena_init(&tiny);
    tiny.limit = 8;
    kc_join_group_request_t req;
    kc_join_group_request_init(&req);
    req.group_id = KC_STR_LIT("g");
    req.protocol_type = KC_STR_LIT("consumer");
    req.session_timeout_ms = 10000;
    req.rebalance_timeout_ms = 10000;
    kc_join_group_request_protocol_t p = {KC_STR_LIT("range"), {(const uint8_t *)"x", 1}};
    req.protocols.v = &p;
    req.protocols.n = 1;
    kc_join_group_response_t r;
    /* The member id cannot be generated in the request's arena. */
    assert_int_equal(
        kc_gm_join(f->gm, T(f), 4, &req, KC_STR_LIT("c"), KC_STR_LIT("h"), W(1), &tiny, &r),
        KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal((int)state_of(f, "g"), -1); /* the new group was not kept */
    assert_int_equal(f->nr, 0);
    kc_leave_group_request_t lq;
    kc_leave_group_request_init(&lq);
    lq.group_id = KC_STR_LIT("g");
    kc_member_identity_t mi[4] = {{KC_STR_LIT("a"), KC_STR_NULL, KC_STR_NULL}};
    lq.members.v = mi;
    lq.members.n = 4;
    kc_leave_group_response_t lr;
    kc_gm_leave(f->gm, T(f), 3, &lq, &tiny, &lr);
    assert_int_equal(lr.error_code, KC_ERR_COORDINATOR_NOT_AVAILABLE);
    kc_arena_free(&tiny);
    fx_free(f);
}

/* ---- Timers across many groups ---------------------------------------------------------- */

static void test_many_groups_timers(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    int64_t t0 = f->now;
    char name[32];
    /* 200 groups, each with one pending member whose session ends at a different time. */
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "grp-%d", i);
        jopt_t o = {.version = 4, .group = name, .session = 6000 + (i * 37) % 1000};
        do_join(f, &o, W(i), &r);
        assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
    }
    assert_int_equal(kc_gm_next_deadline(f->gm), t0 + 6000);
    int64_t last = 0;
    int steps = 0;
    while (kc_gm_next_deadline(f->gm) != INT64_MAX) {
        int64_t d = kc_gm_next_deadline(f->gm);
        assert_true(d >= last);
        last = d;
        f->now = d;
        kc_gm_tick(f->gm, T(f));
        steps++;
    }
    assert_true(last <= t0 + 6999);
    assert_true(steps <= 200);
    fx_free(f);
}

/* ---- The clocks --------------------------------------------------------------------------- */

/* The wall clock is stepped an hour forward, then an hour back, while the monotonic clock runs
 * on: no live member is expelled, a dead one goes exactly at its session deadline (not at once,
 * not an hour late), and the state timestamps written for people follow the wall clock. */
static void test_wall_clock_step(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char live[2][128], dead[2][128];
    int ll = 0, dl = 0;
    int32_t lgen = form_group(f, "live", 1, live, &ll);
    int32_t dgen = form_group(f, "dead", 1, dead, &dl);
    int64_t t = f->now; /* both sessions (10 s) restarted now */
    assert_int_equal(hb(f, "live", live[0], lgen, NULL), 0);
    assert_int_equal(hb(f, "dead", dead[0], dgen, NULL), 0);
    /* +1 h: "dead" stops heartbeating, "live" goes on. */
    f->wall_off = 3600000;
    for (int64_t at = t + 3000; at < t + 10000; at += 3000) {
        advance_to(f, at);
        assert_int_equal(hb(f, "live", live[0], lgen, NULL), 0);
    }
    advance_to(f, t + 9999);
    assert_int_equal(state_of(f, "dead"), KC_GROUP_STABLE);
    assert_int_equal(info_of(f, "dead").n_members, 1);
    advance_to(f, t + 10000);
    assert_int_equal(state_of(f, "dead"), KC_GROUP_EMPTY);
    assert_int_equal(info_of(f, "dead").state_timestamp_ms, t + 10000 + 3600000);
    assert_int_equal(state_of(f, "live"), KC_GROUP_STABLE);
    /* -1 h (two hours back from where the wall clock was): the same. */
    assert_int_equal(hb(f, "live", live[0], lgen, NULL), 0);
    int32_t d2gen = form_group(f, "dead2", 1, dead, &dl);
    int64_t t2 = f->now;
    assert_int_equal(hb(f, "live", live[0], lgen, NULL), 0);
    f->wall_off = -3600000;
    for (int64_t at = t2 + 3000; at < t2 + 20000; at += 3000) {
        advance_to(f, at);
        assert_int_equal(hb(f, "live", live[0], lgen, NULL), 0);
        if (at < t2 + 10000)
            assert_int_equal(state_of(f, "dead2"), KC_GROUP_STABLE);
    }
    advance_to(f, t2 + 20000);
    assert_int_equal(hb(f, "dead2", dead[0], d2gen, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(state_of(f, "dead2"), KC_GROUP_EMPTY);
    assert_int_equal(info_of(f, "dead2").state_timestamp_ms, t2 + 10000 - 3600000);
    assert_int_equal(state_of(f, "live"), KC_GROUP_STABLE);
    assert_int_equal(info_of(f, "live").n_members, 1);
    fx_free(f);
}

/* 30 000 KIP-394 pending members of one group that never come back: their expiry costs a
 * bounded amount of timer work each (a heap pop), not a scan of every other pending member. */
static void test_pending_expiry_cost(void **state)
{
    (void)state;
    enum { N = 30000 };
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    int64_t t0 = f->now;
    for (int i = 0; i < N; i++) {
        jopt_t o = {.version = 4, .group = "p", .session = 6000 + i % 7};
        do_join(f, &o, W(1), &r);
        assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
        if (i % 1000 == 999) {
            kc_arena_free(&f->a);
            kc_arena_init(&f->a);
        }
    }
    assert_int_equal(kc_gm_next_deadline(f->gm), t0 + 6000);
    kc_gm_stats_t s0 = {0}, s1 = {0};
    kc_gm_stats(f->gm, &s0);
    advance_to(f, t0 + 6003);
    s1 = (kc_gm_stats_t){0};
    kc_gm_stats(f->gm, &s1);
    /* Those due by t0 + 6003 are gone, the others are not yet. */
    assert_int_equal(s1.timers_fired - s0.timers_fired,
                     (uint64_t)(N / 7) * 4 + (N % 7 < 4 ? N % 7 : 4));
    advance_to(f, t0 + 7000);
    s1 = (kc_gm_stats_t){0};
    kc_gm_stats(f->gm, &s1);
    assert_int_equal(s1.timers_fired - s0.timers_fired, N);
    /* Each expiry examined O(1) entries: the pending member itself, and the group once per
     * slice (a scan per expiry would be N * N / 2 = 450 000 000). */
    assert_true(s1.timers_examined - s0.timers_examined <= 2 * (uint64_t)N);
    assert_true(s1.tick_slices - s0.tick_slices >= N / KC_GM_TICK_BUDGET_DEFAULT - 7);
    assert_int_equal(kc_gm_next_deadline(f->gm), INT64_MAX);
    assert_int_equal(state_of(f, "p"), KC_GROUP_EMPTY);
    fx_free(f);
}

/* Many timers due at once are fired in slices of tick_budget, and the host serves requests
 * between slices: a member of another group whose session ends while they are being expired,
 * and whose heartbeat arrived in time, stays. */
static void test_tick_slices_serve_others(void **state)
{
    (void)state;
    enum { N = 5000, BUDGET = 100 };
    kc_gm_config_t cfg = default_cfg();
    cfg.tick_budget = BUDGET;
    fx_t *f = fx_new_cfg(&cfg);
    char ids[2][128];
    int leader = 0;
    int32_t gen = form_group(f, "b", 1, ids, &leader);
    int64_t tb = f->now; /* b's member's session ends at tb + 10000 */
    advance_to(f, tb + 3999);
    kc_join_group_response_t r;
    for (int i = 0; i < N; i++) { /* their sessions end at tb + 9999 */
        jopt_t o = {.version = 4, .group = "p", .session = 6000};
        do_join(f, &o, W(1), &r);
        assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
        if (i % 1000 == 999) {
            kc_arena_free(&f->a);
            kc_arena_init(&f->a);
        }
    }
    kc_gm_stats_t s0 = {0}, s1 = {0};
    kc_gm_stats(f->gm, &s0);
    f->now = tb + 9999;
    kc_gm_tick(f->gm, T(f));
    s1 = (kc_gm_stats_t){0};
    kc_gm_stats(f->gm, &s1);
    assert_true(s1.timers_fired - s0.timers_fired < BUDGET);
    assert_true(s1.timers_examined - s0.timers_examined <= BUDGET);
    assert_true(kc_gm_next_deadline(f->gm) <= f->now); /* more due: the host ticks again */
    assert_int_equal(s1.tick_slices - s0.tick_slices, 1);
    /* Slices take time: b's deadline passes meanwhile, but between slices the host handles
     * the heartbeat that arrived before it. */
    f->now = tb + 10001;
    assert_int_equal(hb(f, "b", ids[0], gen, NULL), 0);
    int ticks = 1;
    while (kc_gm_next_deadline(f->gm) <= f->now) {
        kc_gm_tick(f->gm, T(f));
        ticks++;
        assert_true(ticks < 10 * N / BUDGET);
    }
    assert_true(ticks >= N / BUDGET);
    s1 = (kc_gm_stats_t){0};
    kc_gm_stats(f->gm, &s1);
    assert_int_equal(s1.timers_fired - s0.timers_fired, N);
    assert_int_equal(state_of(f, "p"), KC_GROUP_EMPTY);
    assert_int_equal(state_of(f, "b"), KC_GROUP_STABLE);
    assert_int_equal(hb(f, "b", ids[0], gen, NULL), 0);
    /* Its session now ends 10 s after that heartbeat, not before. */
    advance_to(f, tb + 20000);
    assert_int_equal(state_of(f, "b"), KC_GROUP_STABLE);
    advance_to(f, tb + 20001);
    assert_int_equal(state_of(f, "b"), KC_GROUP_EMPTY);
    fx_free(f);
}

/* ---- strmap ----------------------------------------------------------------------------- */

static void test_strmap(void **state)
{
    (void)state;
    kc_strmap_t m;
    kc_strmap_init(&m);
    static char keys[2000][16];
    for (int i = 0; i < 2000; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        assert_int_equal(kc_strmap_put(&m, keys[i], strlen(keys[i]), keys[i]), 0);
    }
    assert_int_equal(m.n, 2000);
    for (int i = 0; i < 2000; i += 2)
        assert_ptr_equal(kc_strmap_del(&m, keys[i], strlen(keys[i])), keys[i]);
    assert_null(kc_strmap_del(&m, "k0", 2));
    for (int i = 0; i < 2000; i++) {
        void *v = kc_strmap_get(&m, keys[i], strlen(keys[i]));
        if (i % 2)
            assert_ptr_equal(v, keys[i]);
        else
            assert_null(v);
    }
    /* Replace keeps the count; the empty key works. */
    assert_int_equal(kc_strmap_put(&m, keys[1], strlen(keys[1]), keys[3]), 0);
    assert_ptr_equal(kc_strmap_get(&m, "k1", 2), keys[3]);
    assert_int_equal(kc_strmap_put(&m, "", 0, keys[5]), 0);
    assert_ptr_equal(kc_strmap_get(&m, "", 0), keys[5]);
    assert_int_equal(m.n, 1001);
    size_t seen = 0;
    for (size_t i = 0; i < m.cap; i++)
        if (kc_strmap_slot(&m, i))
            seen++;
    assert_int_equal(seen, 1001);
    assert_int_equal(kc_strmap_reserve(&m, 5000), 0);
    assert_ptr_equal(kc_strmap_get(&m, "k1999", 5), keys[1999]);
    kc_strmap_free(&m);
}

/* ---- Logging ---------------------------------------------------------------------------- */

/* Every transition is logged at info as "group G: Old -> New: reason". */
/* Transitions are logged at debug level; each rebalance logs one info line when it ends. */
static void test_transition_log(void **state)
{
    (void)state;
    char path[] = "/tmp/kc-group-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    dup2(fd, 2);
    kc_diag_set_level(KC_DIAG_DEBUG);

    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    advance(f, 3000);
    kc_leave_group_response_t lr;
    char id[128];
    snprintf(id, sizeof(id), "%s", S(f, join_answer(f, W(1))->r.member_id));
    leave1(f, 3, "g", id, &lr);
    assert_int_equal(lr.error_code, 0);
    assert_int_equal(kc_gm_delete(f->gm, T(f), KC_STR_LIT("g")), 0);
    fx_free(f);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    kc_diag_set_level(KC_DIAG_ERROR);
    char buf[8192];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "DEBUG group: group g: Empty -> PreparingRebalance: adding new "
                                "member client-"));
    assert_non_null(strstr(buf, "group g: PreparingRebalance -> CompletingRebalance: generation 1 "
                                "with 1 members, protocol range"));
    assert_non_null(strstr(buf, "group g: CompletingRebalance -> PreparingRebalance: explicit "
                                "LeaveGroup request for (client-"));
    assert_non_null(strstr(buf, "group g: PreparingRebalance -> Empty: generation 2 has no "
                                "members"));
    assert_non_null(strstr(buf, "group g: Empty -> Dead: deleted by DeleteGroups"));
    char want[512];
    snprintf(want, sizeof(want),
             "INFO  group: group \"g\" rebalance to generation 1 took 3000 ms (restarted before "
             "it was stable): member %s joined; joined [%s] dropped []\n",
             id, id);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof(want),
             "INFO  group: group \"g\" rebalance to generation 2 took 0 ms (no members left): "
             "member %s left; joined [] dropped [%s]\n",
             id, id);
    assert_non_null(strstr(buf, want));
    /* Nothing else at info level. */
    int info = 0;
    for (const char *p = buf; (p = strstr(p, " INFO  ")) != NULL; p++)
        info++;
    assert_int_equal(info, 2);
}

/* ---- End to end ------------------------------------------------------------------------- */

static void test_three_members_end_to_end(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    char id[3][128];
    /* KIP-394 handshake for three consumers. */
    for (int i = 0; i < 3; i++) {
        jopt_t o = {.version = 9, .group = "orders"};
        assert_int_equal(do_join(f, &o, W(i), &r), KC_GM_ANSWERED);
        assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
        snprintf(id[i], sizeof(id[i]), "%s", S(f, r.member_id));
        jopt_t o2 = {.version = 9, .group = "orders", .member = id[i]};
        assert_int_equal(do_join(f, &o2, W(10 + i), &r), KC_GM_PARKED);
        advance(f, 500);
    }
    advance(f, 6000);
    int leader = -1;
    for (int i = 0; i < 3; i++) {
        const jans_t *a = join_answer(f, W(10 + i));
        assert_non_null(a);
        assert_int_equal(a->r.error_code, 0);
        assert_int_equal(a->r.generation_id, 1);
        assert_str(a->r.protocol_type, "consumer");
        assert_false(a->r.skip_assignment);
        if (kc_str_eq(a->r.leader, a->r.member_id))
            leader = i;
    }
    assert_int_equal(leader, 0);
    kc_sync_group_response_t s;
    /* Followers first (parked), then the leader. */
    assert_int_equal(do_sync(f, 5, "orders", id[1], 1, NULL, 0, NULL, NULL, W(21), &s),
                     KC_GM_PARKED);
    assert_int_equal(do_sync(f, 5, "orders", id[2], 1, NULL, 0, NULL, NULL, W(22), &s),
                     KC_GM_PARKED);
    const char *ids[] = {id[0], id[1], id[2]};
    const char *as[] = {"p0", "p1", "p2"};
    assert_int_equal(do_sync(f, 5, "orders", id[0], 1, NULL, 3, ids, as, W(20), &s),
                     KC_GM_ANSWERED);
    assert_bytes(s.assignment, "p0");
    assert_bytes(sync_answer(f, W(21))->r.assignment, "p1");
    assert_bytes(sync_answer(f, W(22))->r.assignment, "p2");
    assert_int_equal(state_of(f, "orders"), KC_GROUP_STABLE);
    /* A minute of heartbeats every 3 s. */
    for (int k = 0; k < 20; k++) {
        advance(f, 3000);
        for (int i = 0; i < 3; i++)
            assert_int_equal(hb(f, "orders", id[i], 1, NULL), 0);
    }
    assert_int_equal(state_of(f, "orders"), KC_GROUP_STABLE);
    /* The third leaves; the others learn it from their heartbeats and rejoin. */
    kc_leave_group_response_t lr;
    leave1(f, 4, "orders", id[2], &lr);
    assert_int_equal(lr.error_code, 0);
    assert_int_equal(hb(f, "orders", id[0], 1, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    jopt_t j0 = {.version = 9, .group = "orders", .member = id[0]};
    jopt_t j1 = {.version = 9, .group = "orders", .member = id[1]};
    assert_int_equal(do_join(f, &j1, W(30), &r), KC_GM_PARKED);
    assert_int_equal(do_join(f, &j0, W(31), &r), KC_GM_ANSWERED);
    assert_int_equal(r.generation_id, 2);
    assert_int_equal(r.members.n, 2);
    assert_int_equal(join_answer(f, W(30))->r.generation_id, 2);
    const char *ids2[] = {id[0], id[1]};
    const char *as2[] = {"q0", "q1"};
    assert_int_equal(do_sync(f, 5, "orders", id[0], 2, NULL, 2, ids2, as2, W(32), &s),
                     KC_GM_ANSWERED);
    assert_int_equal(do_sync(f, 5, "orders", id[1], 2, NULL, 0, NULL, NULL, W(33), &s),
                     KC_GM_ANSWERED);
    assert_bytes(s.assignment, "q1");
    assert_int_equal(state_of(f, "orders"), KC_GROUP_STABLE);
    for (int k = 0; k < 10; k++) {
        advance(f, 3000);
        assert_int_equal(hb(f, "orders", id[0], 2, NULL), 0);
        assert_int_equal(hb(f, "orders", id[1], 2, NULL), 0);
    }
    /* Records: empty (creation), generation 1, generation 2. */
    int gm_records = 0;
    for (int i = 0; i < f->nr; i++) {
        kc_group_metadata_key_t k;
        kc_group_metadata_value_t v;
        bool tomb;
        decode_rec(f, i, &k, &v, &tomb);
        assert_str(k.group, "orders");
        assert_int_equal(v.generation, gm_records);
        gm_records++;
    }
    assert_int_equal(gm_records, 3);
    fx_free(f);
}

/* ---- Loading: kc_gm_replay and kc_gm_load_complete -------------------------------------- */

static bool same_bytes(kc_bytes_t a, kc_bytes_t b)
{
    int32_t la = a.len > 0 ? a.len : 0, lb = b.len > 0 ? b.len : 0;
    return la == lb && (la == 0 || memcmp(a.p, b.p, (size_t)la) == 0);
}

static int replay(fx_t *f, rec_t r)
{
    return kc_gm_replay(f->gm, r.key, r.klen, r.val, r.vlen);
}

/* A GroupMetadata record (key type 2) with a value of `version`, or a tombstone (v NULL),
 * encoded with the generated encoders; the bytes live in f's arena. */
static rec_t gm_record(fx_t *f, const char *group, int16_t version,
                       const kc_group_metadata_value_t *v)
{
    rec_t r = {0};
    kc_writer_t w;
    kc_wr_init(&w);
    kc_group_metadata_key_t k;
    kc_group_metadata_key_init(&k);
    k.group = kc_str_c(group);
    kc_wr_i16(&w, 2);
    kc_group_metadata_key_encode(&w, 2, &k);
    kc_bytes_t kb = dup_bytes(&f->a, (kc_bytes_t){w.buf, (int32_t)w.len});
    r.key = (uint8_t *)kb.p;
    r.klen = (size_t)kb.len;
    kc_wr_free(&w);
    if (v) {
        kc_wr_init(&w);
        kc_wr_i16(&w, version);
        kc_group_metadata_value_encode(&w, version, v);
        assert_int_equal(w.len, 2 + kc_group_metadata_value_size(version, v));
        kc_bytes_t vb = dup_bytes(&f->a, (kc_bytes_t){w.buf, (int32_t)w.len});
        r.val = (uint8_t *)vb.p;
        r.vlen = (size_t)vb.len;
        kc_wr_free(&w);
    }
    return r;
}

/* An OffsetCommit record (key type `type`, 0 or 1; value v3, or a tombstone). */
static rec_t offset_record(fx_t *f, int16_t type, const char *group, bool tombstone)
{
    rec_t r = {0};
    kc_writer_t w;
    kc_wr_init(&w);
    kc_offset_commit_key_t k;
    kc_offset_commit_key_init(&k);
    k.group = kc_str_c(group);
    k.topic = KC_STR_LIT("t1");
    k.partition = 0;
    kc_wr_i16(&w, type);
    kc_offset_commit_key_encode(&w, 1, &k);
    kc_bytes_t kb = dup_bytes(&f->a, (kc_bytes_t){w.buf, (int32_t)w.len});
    r.key = (uint8_t *)kb.p;
    r.klen = (size_t)kb.len;
    kc_wr_free(&w);
    if (!tombstone) {
        kc_offset_commit_value_t v;
        kc_offset_commit_value_init(&v);
        v.offset = 42;
        v.metadata = KC_STR_EMPTY;
        v.commit_timestamp = f->now;
        kc_wr_init(&w);
        kc_wr_i16(&w, 3);
        kc_offset_commit_value_encode(&w, 3, &v);
        kc_bytes_t vb = dup_bytes(&f->a, (kc_bytes_t){w.buf, (int32_t)w.len});
        r.val = (uint8_t *)vb.p;
        r.vlen = (size_t)vb.len;
        kc_wr_free(&w);
    }
    return r;
}

/* A new manager (the restarted coordinator) at `later` ms after f, loaded with every record f
 * emitted. Loading emits nothing and answers nothing. */
static fx_t *restart(fx_t *f, int64_t later)
{
    fx_t *r = fx_new_cfg(&f->cfg);
    r->now = f->now + later;
    for (int i = 0; i < f->nr; i++)
        assert_int_equal(replay(r, f->recs[i]), 0);
    assert_int_equal(kc_gm_next_deadline(r->gm), INT64_MAX);
    kc_gm_load_complete(r->gm, T(r));
    assert_int_equal(r->nr, 0);
    assert_int_equal(r->nj, 0);
    assert_int_equal(r->ns, 0);
    return r;
}

/* Everything kc_gm_info and kc_gm_describe tell about the group is the same in x and y,
 * except the state timestamp (checked by the callers). */
static void assert_same_group(fx_t *x, fx_t *y, const char *group)
{
    kc_group_info_t a = info_of(x, group), b = info_of(y, group);
    assert_true(kc_str_eq(a.group_id, b.group_id));
    assert_int_equal(a.state, b.state);
    assert_true(kc_str_eq(a.protocol_type, b.protocol_type));
    assert_true(kc_str_eq(a.protocol, b.protocol));
    assert_int_equal(a.generation, b.generation);
    assert_int_equal(a.n_members, b.n_members);
    for (int16_t version = 0; version <= 6; version += 3) {
        kc_describe_groups_described_group_t da, db;
        kc_gm_describe(x->gm, version, kc_str_c(group), true, &x->a, &da);
        kc_gm_describe(y->gm, version, kc_str_c(group), true, &y->a, &db);
        assert_int_equal(da.error_code, 0);
        assert_int_equal(db.error_code, 0);
        assert_true(kc_str_eq(da.group_id, db.group_id));
        assert_true(kc_str_eq(da.group_state, db.group_state));
        assert_true(kc_str_eq(da.protocol_type, db.protocol_type));
        assert_true(kc_str_eq(da.protocol_data, db.protocol_data));
        assert_int_equal(da.authorized_operations, db.authorized_operations);
        assert_int_equal(da.members.n, db.members.n);
        for (int32_t i = 0; i < da.members.n; i++) {
            const kc_described_group_member_t *ma = &da.members.v[i], *mb = &db.members.v[i];
            assert_true(kc_str_eq(ma->member_id, mb->member_id));
            assert_true(kc_str_eq(ma->group_instance_id, mb->group_instance_id));
            assert_true(kc_str_eq(ma->client_id, mb->client_id));
            assert_true(kc_str_eq(ma->client_host, mb->client_host));
            assert_true(same_bytes(ma->member_metadata, mb->member_metadata));
            assert_true(ma->member_metadata.len > 0 || a.state != KC_GROUP_STABLE);
            assert_true(same_bytes(ma->member_assignment, mb->member_assignment));
        }
    }
    static const char *const topics[] = {"t1", "t2", "t3"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(kc_gm_subscribed(x->gm, kc_str_c(group), kc_str_c(topics[i])),
                         kc_gm_subscribed(y->gm, kc_str_c(group), kc_str_c(topics[i])));
    int64_t ba, bb;
    assert_int_equal(kc_gm_offsets_expirable(x->gm, kc_str_c(group), &ba),
                     kc_gm_offsets_expirable(y->gm, kc_str_c(group), &bb));
}

typedef struct trio_s {
    char id[3][128];
    const char *inst[3]; /* "i-a", NULL, "i-c" */
    int32_t gen;
} trio_t;

/* The JoinGroup options of member i of the trio (its first join when member is NULL). */
static jopt_t trio_join(fx_t *f, const trio_t *t, int i, const char *member)
{
    static const char *const t1[] = {"t1"};
    static const char *const t2[] = {"t2"};
    static const char *const t12[] = {"t1", "t2"};
    jopt_t o = {.version = 5, .member = member, .instance = t->inst[i], .nprotos = 2};
    switch (i) {
    case 0: /* static; range first */
        o.client_id = "ca";
        o.session = 10000;
        o.rebalance = 20000;
        o.names[0] = "range";
        o.metas[0] = subscription(f, 0, 1, t1);
        o.names[1] = "roundrobin";
        o.metas[1] = subscription(f, 1, 1, t1);
        break;
    case 1: /* dynamic (KIP-394); prefers roundrobin */
        o.client_id = "cb";
        o.session = 12000;
        o.rebalance = 25000;
        o.names[0] = "roundrobin";
        o.metas[0] = subscription(f, 0, 1, t2);
        o.names[1] = "range";
        o.metas[1] = subscription(f, 0, 1, t2);
        break;
    default: /* static; range first, a v1 subscription */
        o.client_id = "cc";
        o.session = 15000;
        o.rebalance = 30000;
        o.names[0] = "range";
        o.metas[0] = subscription(f, 1, 2, t12);
        o.names[1] = "roundrobin";
        o.metas[1] = subscription(f, 1, 2, t12);
        break;
    }
    return o;
}

/* A real Stable group "g" of three members: two static, one dynamic that joins through
 * MEMBER_ID_REQUIRED, different timeouts, two protocols ("range" wins the vote 2-1), and
 * assignments "AA", "AB", "AC". Member 0 leads. */
static void form_trio(fx_t *f, trio_t *t)
{
    t->inst[0] = "i-a";
    t->inst[1] = NULL;
    t->inst[2] = "i-c";
    kc_join_group_response_t r;
    jopt_t o = trio_join(f, t, 0, NULL);
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_PARKED);
    o = trio_join(f, t, 1, NULL);
    assert_int_equal(do_join(f, &o, W(2), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, KC_ERR_MEMBER_ID_REQUIRED);
    snprintf(t->id[1], 128, "%.*s", (int)r.member_id.len, r.member_id.p);
    o = trio_join(f, t, 1, t->id[1]);
    assert_int_equal(do_join(f, &o, W(3), &r), KC_GM_PARKED);
    o = trio_join(f, t, 2, NULL);
    assert_int_equal(do_join(f, &o, W(4), &r), KC_GM_PARKED);
    advance(f, 6000);
    void *ws[3] = {W(1), W(3), W(4)};
    for (int i = 0; i < 3; i++) {
        const jans_t *a = join_answer(f, ws[i]);
        assert_non_null(a);
        assert_int_equal(a->r.error_code, 0);
        assert_str(a->r.protocol_name, "range");
        if (i != 1)
            snprintf(t->id[i], 128, "%.*s", (int)a->r.member_id.len, a->r.member_id.p);
        t->gen = a->r.generation_id;
    }
    assert_str(join_answer(f, W(1))->r.leader, t->id[0]);
    assert_int_equal(state_of(f, "g"), KC_GROUP_COMPLETING_REBALANCE);
    advance(f, 500);
    const char *mids[] = {t->id[0], t->id[1], t->id[2]};
    const char *as[] = {"AA", "AB", "AC"};
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 3, "g", t->id[0], t->gen, "i-a", 3, mids, as, W(11), &s),
                     KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_int_equal(do_sync(f, 4, "g", t->id[1], t->gen, NULL, 0, NULL, NULL, W(12), &s),
                     KC_GM_ANSWERED);
    assert_bytes(s.assignment, "AB");
    assert_int_equal(do_sync(f, 4, "g", t->id[2], t->gen, "i-c", 0, NULL, NULL, W(13), &s),
                     KC_GM_ANSWERED);
    assert_bytes(s.assignment, "AC");
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
}

/* The record f emitted last, decoded. */
static kc_group_metadata_value_t last_value(fx_t *f)
{
    kc_group_metadata_key_t k;
    kc_group_metadata_value_t v;
    bool tomb;
    decode_rec(f, f->nr - 1, &k, &v, &tomb);
    assert_false(tomb);
    return v;
}

static void test_replay_round_trip(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    trio_t t;
    form_trio(f, &t);
    int32_t gen = t.gen;
    kc_group_metadata_value_t last = last_value(f);

    fx_t *g = restart(f, 7000);
    int64_t t0 = g->now;
    assert_same_group(f, g, "g");
    kc_group_info_t info = info_of(g, "g");
    assert_int_equal(info.state, KC_GROUP_STABLE);
    assert_int_equal(info.generation, gen);
    assert_int_equal(info.n_members, 3);
    /* The record was written when the leader's assignment arrived, in CompletingRebalance;
     * Kafka loads that time too. */
    assert_int_equal(info.state_timestamp_ms, last.current_state_timestamp);
    /* Fresh sessions from the load: the shortest is member 0's 10 s. */
    assert_int_equal(kc_gm_next_deadline(g->gm), t0 + 10000);

    /* Members carry on in their generation: heartbeats, commits, syncs. */
    assert_int_equal(hb(g, "g", t.id[0], gen, "i-a"), 0);
    assert_int_equal(hb(g, "g", t.id[1], gen, NULL), 0);
    assert_int_equal(hb(g, "g", t.id[2], gen, "i-c"), 0);
    assert_int_equal(hb(g, "g", t.id[1], gen + 1, NULL), KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(hb(g, "g", "ghost", gen, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    /* The static index is back: another member id under instance i-a is fenced. */
    assert_int_equal(hb(g, "g", t.id[1], gen, "i-a"), KC_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(
        kc_gm_validate_commit(g->gm, T(g), 8, kc_str_c("g"), gen, kc_str_c(t.id[1]), KC_STR_NULL),
        0);
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(g, 4, "g", t.id[1], gen, NULL, 0, NULL, NULL, W(21), &s),
                     KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_bytes(s.assignment, "AB");
    assert_int_equal(do_sync(g, 5, "g", t.id[2], gen, "i-c", 0, NULL, NULL, W(22), &s),
                     KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    assert_bytes(s.assignment, "AC");
    assert_str(s.protocol_name, "range");
    assert_str(s.protocol_type, "consumer");
    const char *mids[] = {t.id[0]};
    const char *as[] = {"ignored"};
    assert_int_equal(do_sync(g, 3, "g", t.id[0], gen, "i-a", 1, mids, as, W(23), &s),
                     KC_GM_ANSWERED);
    assert_bytes(s.assignment, "AA");
    assert_int_equal(state_of(g, "g"), KC_GROUP_STABLE);
    assert_int_equal(g->nr, 0);

    /* A follower that rejoins with what it is known to support (only the selected protocol
     * survives in the record) gets the current generation without a rebalance. */
    kc_join_group_response_t r;
    jopt_t o = trio_join(g, &t, 1, t.id[1]);
    o.nprotos = 1;
    o.names[0] = "range";
    o.metas[0] = o.metas[1];
    assert_int_equal(do_join(g, &o, W(24), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, gen);
    assert_str(r.leader, t.id[0]);
    assert_int_equal(state_of(g, "g"), KC_GROUP_STABLE);

    /* The static member i-c restarts too and comes back without its member id: replaced in
     * place, the selected protocol stays, no rebalance, a record with the new id. */
    o = trio_join(g, &t, 2, NULL);
    assert_int_equal(do_join(g, &o, W(25), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, gen);
    assert_memory_equal(r.member_id.p, "i-c-", 4);
    snprintf(t.id[2], 128, "%.*s", (int)r.member_id.len, r.member_id.p);
    assert_int_equal(state_of(g, "g"), KC_GROUP_STABLE);
    assert_int_equal(g->nr, 1);
    kc_group_metadata_value_t v = last_value(g);
    assert_int_equal(v.generation, gen);
    assert_str(v.leader, t.id[0]);
    assert_int_equal(v.members.n, 3);
    assert_str(v.members.v[2].member_id, t.id[2]);
    assert_str(v.members.v[2].group_instance_id, "i-c");
    assert_bytes(v.members.v[2].assignment, "AC");

    /* The leader rejoins: a rebalance to generation gen + 1 that it still leads. */
    o = trio_join(g, &t, 0, t.id[0]);
    assert_int_equal(do_join(g, &o, W(31), &r), KC_GM_PARKED);
    assert_int_equal(state_of(g, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(hb(g, "g", t.id[1], gen, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    o = trio_join(g, &t, 1, t.id[1]);
    assert_int_equal(do_join(g, &o, W(32), &r), KC_GM_PARKED);
    o = trio_join(g, &t, 2, t.id[2]);
    assert_int_equal(do_join(g, &o, W(33), &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.generation_id, gen + 1);
    assert_str(r.leader, t.id[0]);
    const jans_t *la = join_answer(g, W(31));
    assert_non_null(la);
    assert_int_equal(la->r.generation_id, gen + 1);
    assert_int_equal(la->r.members.n, 3);
    assert_str(la->r.protocol_name, "range");
    assert_int_equal(state_of(g, "g"), KC_GROUP_COMPLETING_REBALANCE);
    fx_free(g);
    fx_free(f);
}

static void test_replay_session_expiry(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    trio_t t;
    form_trio(f, &t);
    fx_t *g = restart(f, 60000); /* longer than every session: the load gives new ones */
    int64_t t0 = g->now;
    assert_int_equal(state_of(g, "g"), KC_GROUP_STABLE);

    /* Members 0 and 1 heartbeat; member 2 (15 s session) has gone with the old coordinator:
     * the session the load gave it ends. */
    advance(g, 9000);
    assert_int_equal(hb(g, "g", t.id[0], t.gen, "i-a"), 0);
    assert_int_equal(hb(g, "g", t.id[1], t.gen, NULL), 0);
    advance_to(g, t0 + 14999);
    assert_int_equal(state_of(g, "g"), KC_GROUP_STABLE);
    assert_int_equal(info_of(g, "g").n_members, 3);
    advance(g, 1);
    assert_int_equal(state_of(g, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(info_of(g, "g").n_members, 2);
    assert_int_equal(hb(g, "g", t.id[1], t.gen, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(hb(g, "g", t.id[2], t.gen, "i-c"), KC_ERR_UNKNOWN_MEMBER_ID);

    /* Nobody rejoins: every session ends, the group is Empty in the next generation. */
    advance(g, 60000);
    kc_group_info_t info = info_of(g, "g");
    assert_int_equal(info.state, KC_GROUP_EMPTY);
    assert_int_equal(info.generation, t.gen + 1);
    assert_int_equal(info.n_members, 0);
    assert_int_equal(g->nr, 1);
    kc_group_metadata_value_t v = last_value(g);
    assert_int_equal(v.generation, t.gen + 1);
    assert_int_equal(v.members.n, 0);
    assert_int_equal(kc_gm_next_deadline(g->gm), INT64_MAX);
    fx_free(g);
    fx_free(f);
}

static void test_replay_empty_group_and_tombstone(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[2][128];
    int leader = 0;
    int32_t gen = form_group(f, "g", 2, ids, &leader);
    kc_leave_group_response_t lr;
    leave1(f, 3, "g", ids[0], &lr);
    assert_int_equal(lr.error_code, 0);
    advance(f, 1000);
    leave1(f, 3, "g", ids[1], &lr);
    assert_int_equal(lr.error_code, 0);
    kc_group_info_t before = info_of(f, "g");
    assert_int_equal(before.state, KC_GROUP_EMPTY);
    assert_int_equal(before.generation, gen + 1);

    /* An Empty group comes back Empty, with its generation, protocol type and the time it
     * became Empty (the base of its offsets' retention). */
    fx_t *g = restart(f, 5000);
    assert_same_group(f, g, "g");
    assert_int_equal(info_of(g, "g").state_timestamp_ms, before.state_timestamp_ms);
    assert_str(info_of(g, "g").protocol_type, "consumer");
    int64_t base = 0;
    assert_true(kc_gm_offsets_expirable(g->gm, kc_str_c("g"), &base));
    assert_int_equal(base, before.state_timestamp_ms);
    assert_int_equal(kc_gm_next_deadline(g->gm), INT64_MAX);
    assert_int_equal(hb(g, "g", ids[0], gen + 1, NULL), KC_ERR_UNKNOWN_MEMBER_ID);
    /* A consumer joins the loaded group: the next generation after the kept one. */
    kc_join_group_response_t r;
    assert_int_equal(join3(g, NULL, W(1), &r), KC_GM_PARKED);
    advance(g, 3000);
    assert_int_equal(join_answer(g, W(1))->r.generation_id, gen + 2);

    /* The group is deleted: its tombstone, replayed after the rest, leaves nothing. */
    assert_int_equal(kc_gm_delete(f->gm, T(f), kc_str_c("g")), 0);
    assert_null(f->recs[f->nr - 1].val);
    fx_t *h = restart(f, 5000);
    assert_int_equal((int)state_of(h, "g"), -1);
    /* A tombstone of a group that is not there is fine; one of a loaded group removes it. */
    assert_int_equal(replay(h, gm_record(h, "nobody", 3, NULL)), 0);
    assert_int_equal(replay(g, gm_record(g, "g", 3, NULL)), 0);
    assert_int_equal((int)state_of(g, "g"), -1);
    assert_int_equal(kc_gm_next_deadline(g->gm), INT64_MAX);
    fx_free(h);
    fx_free(g);
    fx_free(f);
}

/* A GroupMetadataValue of two members, "m-1" (static "i-1" where the version has instance
 * ids) and the leader "m-2", generation 7. */
static void two_members(fx_t *f, kc_group_metadata_value_t *v, kc_member_metadata_t mm[2])
{
    static const char *const t1[] = {"t1"};
    static const char *const t2[] = {"t2"};
    kc_group_metadata_value_init(v);
    v->protocol_type = KC_STR_LIT("consumer");
    v->generation = 7;
    v->protocol = KC_STR_LIT("range");
    v->leader = KC_STR_LIT("m-2");
    v->current_state_timestamp = 5555;
    mm[0] = (kc_member_metadata_t){
        .member_id = KC_STR_LIT("m-1"),
        .group_instance_id = KC_STR_LIT("i-1"),
        .client_id = KC_STR_LIT("c1"),
        .client_host = KC_STR_LIT("/10.0.0.1"),
        .rebalance_timeout = 25000,
        .session_timeout = 10000,
        .subscription = subscription(f, 0, 1, t1),
        .assignment = {(const uint8_t *)"X1", 2},
    };
    mm[1] = (kc_member_metadata_t){
        .member_id = KC_STR_LIT("m-2"),
        .group_instance_id = KC_STR_NULL,
        .client_id = KC_STR_LIT("c2"),
        .client_host = KC_STR_LIT("/10.0.0.2"),
        .rebalance_timeout = 15000,
        .session_timeout = 8000,
        .subscription = subscription(f, 0, 1, t2),
        .assignment = {(const uint8_t *)"X2", 2},
    };
    v->members.v = mm;
    v->members.n = 2;
}

static void test_replay_value_versions(void **state)
{
    (void)state;
    static const char *const t1[] = {"t1"};
    for (int16_t version = 0; version <= 4; version++) {
        fx_t *f = fx_new();
        kc_group_metadata_value_t v;
        kc_member_metadata_t mm[2];
        two_members(f, &v, mm);
        bool has_instance = version >= 3;
        const char *i1 = has_instance ? "i-1" : NULL;
        assert_int_equal(replay(f, gm_record(f, "g", version, &v)), 0);
        /* An Empty group of the same version, for the state timestamp. */
        kc_group_metadata_value_t e;
        kc_group_metadata_value_init(&e);
        e.protocol_type = KC_STR_LIT("consumer");
        e.generation = 3;
        e.protocol = KC_STR_NULL;
        e.leader = KC_STR_NULL;
        e.current_state_timestamp = 4444;
        assert_int_equal(replay(f, gm_record(f, "e", version, &e)), 0);
        kc_gm_load_complete(f->gm, T(f));
        int64_t t0 = f->now;
        assert_int_equal(f->nr, 0);

        kc_group_info_t info = info_of(f, "g");
        assert_int_equal(info.state, KC_GROUP_STABLE);
        assert_int_equal(info.generation, 7);
        assert_str(info.protocol_type, "consumer");
        assert_str(info.protocol, "range");
        assert_int_equal(info.n_members, 2);
        assert_int_equal(info.state_timestamp_ms, version >= 2 ? 5555 : -1);
        info = info_of(f, "e");
        assert_int_equal(info.state, KC_GROUP_EMPTY);
        assert_int_equal(info.generation, 3);
        int64_t base = 0;
        assert_true(kc_gm_offsets_expirable(f->gm, kc_str_c("e"), &base));
        /* Before v2 the time it became Empty is unknown: retention counts from commits. */
        assert_int_equal(base, version >= 2 ? 4444 : -1);

        kc_describe_groups_described_group_t d;
        kc_gm_describe(f->gm, 5, kc_str_c("g"), false, &f->a, &d);
        assert_str(d.group_state, "Stable");
        assert_str(d.protocol_data, "range");
        assert_int_equal(d.members.n, 2);
        assert_str(d.members.v[0].member_id, "m-1");
        assert_str(d.members.v[0].group_instance_id, i1);
        assert_str(d.members.v[0].client_id, "c1");
        assert_str(d.members.v[0].client_host, "/10.0.0.1");
        assert_true(same_bytes(d.members.v[0].member_metadata, mm[0].subscription));
        assert_bytes(d.members.v[0].member_assignment, "X1");
        assert_str(d.members.v[1].member_id, "m-2");
        assert_str(d.members.v[1].group_instance_id, NULL);
        assert_bytes(d.members.v[1].member_assignment, "X2");
        assert_true(kc_gm_subscribed(f->gm, kc_str_c("g"), KC_STR_LIT("t2")));
        assert_false(kc_gm_subscribed(f->gm, kc_str_c("g"), KC_STR_LIT("t3")));

        assert_int_equal(kc_gm_next_deadline(f->gm), t0 + 8000);
        assert_int_equal(hb(f, "g", "m-1", 7, i1), 0);
        assert_int_equal(hb(f, "g", "m-2", 7, NULL), 0);
        if (has_instance)
            assert_int_equal(hb(f, "g", "m-2", 7, "i-1"), KC_ERR_FENCED_INSTANCE_ID);

        /* The rebalance timeout: the leader rejoins asking for only 6 s, so the join phase
         * lasts m-1's loaded rebalance timeout: 25 s, or its 10 s session timeout before v1.
         * m-1 keeps its session with heartbeats but does not rejoin. */
        int64_t want = version >= 1 ? 25000 : 10000;
        jopt_t o = {
            .version = 5, .member = "m-2", .nprotos = 1, .session = 8000, .rebalance = 6000};
        o.names[0] = "range";
        o.metas[0] = subscription(f, 0, 1, t1);
        kc_join_group_response_t r;
        t0 = f->now;
        assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_PARKED);
        int64_t done = -1;
        for (int step = 1; step <= 40 && done < 0; step++) {
            advance(f, 1000);
            if (join_answer(f, W(1)))
                done = f->now - t0;
            else if (step % 4 == 0)
                assert_int_equal(hb(f, "g", "m-1", 7, i1), KC_ERR_REBALANCE_IN_PROGRESS);
        }
        assert_int_equal(done, want);
        assert_int_equal(join_answer(f, W(1))->r.generation_id, 8);
        /* A static m-1 stays in the group; a dynamic one is dropped for not rejoining. */
        assert_int_equal(info_of(f, "g").n_members, has_instance ? 2 : 1);
        fx_free(f);
    }
}

static void test_replay_malformed(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_group_metadata_value_t v;
    kc_member_metadata_t mm[2];
    two_members(f, &v, mm);
    rec_t good = gm_record(f, "g", 3, &v);
    assert_int_equal(replay(f, good), 0);
    kc_gm_load_complete(f->gm, T(f));
    fx_t *ref = fx_new(); /* the same group, for comparisons */
    ref->now = f->now;
    assert_int_equal(replay(ref, good), 0);
    kc_gm_load_complete(ref->gm, T(ref));
    int64_t deadline = kc_gm_next_deadline(f->gm);

    rec_t bad[16];
    int nbad = 0;
    /* Truncated anywhere inside the value. */
    for (size_t cut = 0; cut < good.vlen; cut += good.vlen / 5) {
        bad[nbad] = good;
        bad[nbad++].vlen = cut;
    }
    /* Versions that do not exist. */
    for (int i = 0; i < 2; i++) {
        rec_t r = good;
        r.val = kc_arena_alloc(&f->a, good.vlen);
        memcpy(r.val, good.val, good.vlen);
        r.val[0] = i == 0 ? 0x00 : 0xff;
        r.val[1] = i == 0 ? 0x05 : 0xff;
        bad[nbad++] = r;
    }
    /* A null protocol type (the string length at bytes 2-3 patched to -1). */
    {
        rec_t r = good;
        r.val = kc_arena_alloc(&f->a, good.vlen);
        memcpy(r.val, good.val, good.vlen);
        assert_int_equal(r.val[3], 8); /* "consumer" */
        r.val[2] = 0xff;
        r.val[3] = 0xff;
        bad[nbad++] = r;
    }
    /* Members but no protocol; a member listed twice. */
    {
        kc_group_metadata_value_t w = v;
        w.protocol = KC_STR_NULL;
        bad[nbad++] = gm_record(f, "g", 3, &w);
        kc_member_metadata_t twice[2] = {mm[0], mm[0]};
        twice[1].group_instance_id = KC_STR_NULL;
        w = v;
        w.members.v = twice;
        bad[nbad++] = gm_record(f, "g", 4, &w);
    }
    /* Keys: too short for a type; a GroupMetadataKey cut inside its group id. */
    {
        rec_t r = good;
        r.klen = 1;
        bad[nbad++] = r;
        r = good;
        r.klen = good.klen - 1;
        bad[nbad++] = r;
        r.val = NULL; /* nor as a tombstone */
        r.vlen = 0;
        bad[nbad++] = r;
    }
    assert_true(nbad <= 16);
    for (int i = 0; i < nbad; i++) {
        assert_int_equal(replay(f, bad[i]), -2);
        assert_same_group(ref, f, "g");
        assert_int_equal(kc_gm_next_deadline(f->gm), deadline);
    }
    /* Consumer group record types (3-8) with a classic group's value: malformed for them, and
     * nothing changes. Other types are not this function's. */
    {
        rec_t r = good;
        r.key = kc_arena_alloc(&f->a, good.klen);
        memcpy(r.key, good.key, good.klen);
        for (int type = 3; type <= 8; type++) {
            r.key[1] = (uint8_t)type;
            assert_int_equal(replay(f, r), -2);
        }
        r.key[0] = 0x7f;
        assert_int_equal(replay(f, r), 1);
        r.key[0] = 0xff;
        r.key[1] = 0xff;
        assert_int_equal(replay(f, r), 1);
        assert_same_group(ref, f, "g");
    }
    /* A group with a bad leader still loads: its first member leads. */
    {
        kc_group_metadata_value_t w = v;
        w.leader = KC_STR_LIT("not-a-member");
        assert_int_equal(replay(f, gm_record(f, "l", 2, &w)), 0);
        kc_gm_load_complete(f->gm, T(f));
        jopt_t o = {.version = 5, .group = "l", .member = "m-1", .nprotos = 1, .session = 10000};
        o.names[0] = "range";
        o.metas[0] = mm[0].subscription;
        kc_join_group_response_t r;
        /* m-1 rejoining with its metadata unchanged is a leader rejoin: a rebalance. */
        assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_PARKED);
        assert_int_equal(state_of(f, "l"), KC_GROUP_PREPARING_REBALANCE);
    }
    assert_int_equal(f->nr, 0);
    fx_free(ref);
    fx_free(f);
}

/* Offsets of a group that has no GroupMetadata record (a simple consumer's) create the simple
 * group Kafka creates on replay, so it is listed, described and deletable after a restart. */
static void test_replay_offsets_create_simple_groups(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    f->now = 0; /* as a fresh host: the load's time only comes with kc_gm_load_complete */
    assert_int_equal(replay(f, offset_record(f, 1, "s", false)), 1);
    assert_int_equal(replay(f, offset_record(f, 0, "s0", false)), 1);
    assert_int_equal(replay(f, offset_record(f, 1, "s", false)), 1);
    assert_int_equal(replay(f, offset_record(f, 1, "gone", true)), 1);
    assert_int_equal((int)state_of(f, "gone"), -1);
    kc_group_info_t info = info_of(f, "s");
    assert_int_equal(info.state, KC_GROUP_EMPTY);
    assert_str(info.protocol_type, "");
    assert_int_equal(info.generation, 0);
    /* A GroupMetadata record of a group that has offsets replaces the simple group, and
     * offsets replayed after it leave it as it is. */
    kc_group_metadata_value_t v;
    kc_member_metadata_t mm[2];
    two_members(f, &v, mm);
    assert_int_equal(replay(f, offset_record(f, 1, "g", false)), 1);
    assert_int_equal(replay(f, gm_record(f, "g", 3, &v)), 0);
    assert_int_equal(replay(f, offset_record(f, 1, "g", false)), 1);
    int64_t t0 = 1234567;
    f->now = t0;
    kc_gm_load_complete(f->gm, T(f));
    assert_int_equal(info_of(f, "g").state, KC_GROUP_STABLE);
    assert_int_equal(info_of(f, "g").generation, 7);
    info = info_of(f, "s");
    assert_int_equal(info.state, KC_GROUP_EMPTY);
    assert_int_equal(info.state_timestamp_ms, t0);
    assert_int_equal(info_of(f, "s0").state, KC_GROUP_EMPTY);
    int64_t base = 0;
    assert_true(kc_gm_offsets_expirable(f->gm, kc_str_c("s"), &base));
    assert_int_equal(base, -1);
    assert_int_equal(f->nr, 0);
    /* As before the restart: a simple commit is accepted, DeleteGroups works. */
    assert_int_equal(
        kc_gm_validate_commit(f->gm, T(f), 8, kc_str_c("s"), -1, KC_STR_EMPTY, KC_STR_NULL), 0);
    assert_int_equal(kc_gm_delete(f->gm, T(f), kc_str_c("s")), 0);
    assert_int_equal(f->nr, 1);
    assert_null(f->recs[0].val);
    fx_free(f);
}

/* group.max.size shrank while the coordinator was down: the loaded group rebalances. */
static void test_replay_over_max_size(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    trio_t t;
    form_trio(f, &t);
    kc_gm_config_t small = f->cfg;
    small.max_size = 2;
    f->cfg = small;
    fx_t *g = restart(f, 1000);
    kc_group_info_t info = info_of(g, "g");
    assert_int_equal(info.state, KC_GROUP_PREPARING_REBALANCE);
    assert_int_equal(info.generation, t.gen);
    assert_int_equal(hb(g, "g", t.id[1], t.gen, NULL), KC_ERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(g->nr, 0);
    fx_free(g);
    fx_free(f);
}

/* ---- Rebalance history, JSON and statistics ----------------------------------------------- */

static void test_json_checker(void **state)
{
    (void)state;
    static const char *const good[] = {"{}", "[]", "{\"a\":[1,-2.5e3,true,null,\"\\u00e9\"]}",
                                       "\"\xe2\x82\xac\"", "0"};
    static const char *const bad[] = {"{",  "[1,]",    "{\"a\"}", "\"\x01\"",  "\"\xff\"",
                                      "01", "\"\\x\"", "[1] 2",   "{\"a\":1,}"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(json_valid(good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(json_valid(bad[i], strlen(bad[i])));
}

/* The JSON object of a group (checked valid), in the fixture's arena. */
static const char *group_json(fx_t *f, const char *group)
{
    jbuf_t b = {0};
    assert_int_equal(kc_gm_json_group(f->gm, f->now, kc_str_c(group), jb_emit, &b), 0);
    assert_non_null(b.p);
    if (!json_valid(b.p, b.n))
        fail_msg("invalid JSON: %s", b.p);
    char *out = kc_arena_alloc(&f->a, b.n + 1);
    memcpy(out, b.p, b.n + 1);
    free(b.p);
    return out;
}

/* The rebalances of a group's JSON: how many, and the last one (up to its end). */
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

static const char *rb_nth(fx_t *f, const char *json, int i)
{
    const char *p = strstr(json, "\"rebalances\":[");
    assert_non_null(p);
    const char *hit = NULL;
    for (int k = 0; k <= i; k++) {
        hit = strstr(p, "{\"generation\":");
        assert_non_null(hit);
        p = hit + 1;
    }
    const char *end = strchr(hit, '}');
    assert_non_null(end);
    size_t n = (size_t)(end - hit) + 1;
    char *out = kc_arena_alloc(&f->a, n + 1);
    memcpy(out, hit, n);
    out[n] = '\0';
    return out;
}

static const char *rb_last(fx_t *f, const char *group)
{
    const char *json = group_json(f, group);
    return rb_nth(f, json, rb_count(json) - 1);
}

/* assert that `hay` contains the printf-formatted needle. */
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

static void test_rb_causes_names(void **state)
{
    (void)state;
    static const char *const names[] = {"member_joined",    "member_left",
                                        "session_timeout",  "static_member_replaced",
                                        "metadata_changed", "leader_rejoined",
                                        "sync_timeout",     "upgrade",
                                        "downgrade",        "other"};
    for (int i = 0; i < KC_RB_CAUSES; i++)
        assert_string_equal(kc_rb_cause_name(i), names[i]);
    assert_string_equal(kc_rb_cause_name(-1), "other");
    assert_string_equal(kc_rb_cause_name(KC_RB_CAUSES), "other");
    double prev = 0;
    for (int i = 0; i < KC_GM_PHASE_BUCKETS - 1; i++) {
        assert_true(kc_gm_phase_bounds_s[i] > prev);
        prev = kc_gm_phase_bounds_s[i];
    }
}

/* The first rebalance of a new group: member_joined, both members joined, and the phase
 * histograms count its join phase (6 s: the initial delay, extended once) and sync phase. */
static void test_rb_member_joined_and_phases(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[2][128];
    int leader = 0;
    assert_int_equal(form_group(f, "g", 2, ids, &leader), 1);
    const char *json = group_json(f, "g");
    assert_int_equal(rb_count(json), 1);
    assert_has(rb_nth(f, json, 0),
               "{\"generation\":1,\"start_ms\":1000000,\"end_ms\":1006000,\"duration_ms\":6000,"
               "\"cause\":\"member_joined\",\"member_id\":\"%s\",\"reason\":null,"
               "\"outcome\":\"stable\",\"joined\":[\"%s\",\"%s\"],\"dropped\":[]}",
               ids[0], ids[0], ids[1]);

    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.rebalances[KC_RB_MEMBER_JOINED], 1);
    for (int i = 0; i < KC_RB_CAUSES; i++)
        if (i != KC_RB_MEMBER_JOINED)
            assert_int_equal(st.rebalances[i], 0);
    for (int i = 0; i < KC_GM_PHASE_BUCKETS; i++) {
        assert_int_equal(st.join_phase[i], i == 8 ? 1 : 0); /* 5 s < 6 s <= 10 s */
        assert_int_equal(st.sync_phase[i], i == 0 ? 1 : 0); /* 0 s */
    }
    assert_true(st.join_phase_sum_s > 5.999 && st.join_phase_sum_s < 6.001);
    assert_true(st.sync_phase_sum_s < 0.000001);
    /* kc_gm_stats adds. */
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.rebalances[KC_RB_MEMBER_JOINED], 2);
    assert_int_equal(st.join_phase[8], 2);
    fx_free(f);
}

/* A member that stops heartbeating: session_timeout naming it, in "dropped"; the rebalance
 * shows as running (end 0) until the group is Stable again. */
static void test_rb_session_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[2][128];
    int leader = 0;
    form_group(f, "g", 2, ids, &leader);
    for (int i = 0; i < 4; i++) {
        advance(f, 3000);
        hb(f, "g", ids[0], 1, NULL);
    }
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    const char *e = rb_last(f, "g");
    assert_has(e, "\"start_ms\":1016000,\"end_ms\":0,\"duration_ms\":2000,");
    assert_has(e,
               "\"cause\":\"session_timeout\",\"member_id\":\"%s\",\"reason\":null,"
               "\"outcome\":null,\"joined\":[],\"dropped\":[\"%s\"]}",
               ids[1], ids[1]);
    /* The survivor rejoins and, as the leader, syncs. */
    kc_join_group_response_t r;
    assert_int_equal(join3(f, ids[0], W(300), &r), KC_GM_ANSWERED);
    assert_int_equal(r.generation_id, 2);
    kc_sync_group_response_t s;
    const char *mids[] = {ids[0]};
    const char *as[] = {"A"};
    advance(f, 10);
    assert_int_equal(do_sync(f, 4, "g", ids[0], 2, NULL, 1, mids, as, W(301), &s), KC_GM_ANSWERED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    e = rb_last(f, "g");
    assert_has(e,
               "{\"generation\":2,\"start_ms\":1016000,\"end_ms\":1018010,\"duration_ms\":2010,"
               "\"cause\":\"session_timeout\",\"member_id\":\"%s\",\"reason\":null,"
               "\"outcome\":\"stable\",\"joined\":[],\"dropped\":[\"%s\"]}",
               ids[1], ids[1]);
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.rebalances[KC_RB_SESSION_TIMEOUT], 1);
    assert_int_equal(st.join_phase[7], 1); /* 1 s < 2 s <= 5 s */
    assert_int_equal(st.sync_phase[2], 1); /* 5 ms < 10 ms <= 10 ms */
    fx_free(f);
}

/* LeaveGroup v5 carries the member's reason; below v5 there is none. */
static void test_rb_member_left(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[3][128];
    int leader = 0;
    form_group(f, "g", 3, ids, &leader);
    kc_leave_group_response_t lr;
    leave1(f, 5, "g", ids[1], &lr);
    assert_int_equal(lr.error_code, 0);
    assert_has(rb_last(f, "g"),
               "\"cause\":\"member_left\",\"member_id\":\"%s\",\"reason\":\"test\","
               "\"outcome\":null,\"joined\":[],\"dropped\":[\"%s\"]}",
               ids[1], ids[1]);
    /* A second leave during the rebalance joins it: dropped, not a new rebalance. */
    leave1(f, 3, "g", ids[2], &lr);
    assert_int_equal(lr.error_code, 0);
    const char *json = group_json(f, "g");
    assert_int_equal(rb_count(json), 2);
    assert_has(rb_nth(f, json, 1), "\"dropped\":[\"%s\",\"%s\"]}", ids[1], ids[2]);
    fx_free(f);
}

/* A follower rejoining with another subscription: metadata_changed; the leader rejoining a
 * Stable group: leader_rejoined; a member that does not rejoin before the rebalance timeout
 * is dropped from that rebalance. */
static void test_rb_metadata_and_leader(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char ids[2][128];
    int leader = 0;
    form_group(f, "g", 2, ids, &leader);
    const char *L = ids[leader], *F = ids[1 - leader];
    static const char *const t12[] = {"t1", "t2"};
    jopt_t o = {.version = 3, .member = F, .nprotos = 1, .names = {"range"}};
    o.metas[0] = subscription(f, 0, 2, t12);
    kc_join_group_response_t r;
    assert_int_equal(do_join(f, &o, W(300), &r), KC_GM_PARKED);
    assert_has(rb_last(f, "g"),
               "\"cause\":\"metadata_changed\",\"member_id\":\"%s\",\"reason\":null,"
               "\"outcome\":null,\"joined\":[],\"dropped\":[]}",
               F);
    /* The leader rejoins (with what it had): the join phase completes, generation 2. */
    assert_int_equal(join3(f, L, W(301), &r), KC_GM_ANSWERED);
    kc_sync_group_response_t s;
    const char *mids[] = {L, F};
    const char *as[] = {"A", "B"};
    assert_int_equal(do_sync(f, 4, "g", L, 2, NULL, 2, mids, as, W(302), &s), KC_GM_ANSWERED);
    assert_int_equal(state_of(f, "g"), KC_GROUP_STABLE);
    assert_has(rb_last(f, "g"), "{\"generation\":2,");

    /* The leader rejoins a Stable group; the follower only heartbeats, never rejoins. */
    assert_int_equal(join3(f, L, W(303), &r), KC_GM_PARKED);
    int64_t t = f->now;
    for (int i = 1; i <= 6; i++) {
        advance_to(f, t + 3000 * i);
        hb(f, "g", F, 2, NULL);
    }
    advance_to(f, t + 20000); /* the rebalance timeout */
    assert_int_equal(state_of(f, "g"), KC_GROUP_COMPLETING_REBALANCE);
    const char *e = rb_last(f, "g");
    assert_has(e,
               "{\"generation\":3,\"start_ms\":%lld,\"end_ms\":0,\"duration_ms\":20000,"
               "\"cause\":\"leader_rejoined\",\"member_id\":\"%s\",\"reason\":null,"
               "\"outcome\":null,\"joined\":[],\"dropped\":[\"%s\"]}",
               (long long)t, L, F);
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.rebalances[KC_RB_METADATA_CHANGED], 1);
    assert_int_equal(st.rebalances[KC_RB_LEADER_REJOINED], 1);
    fx_free(f);
}

/* A static member rejoining under a new member id with a change of protocol. */
static void test_rb_static_replaced(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    char a[128], b[128];
    form_static(f, a, b);
    kc_join_group_response_t r;
    jopt_t sa = {.version = 5, .instance = "ia", .nprotos = 2, .names = {"range", "rr"}};
    assert_int_equal(do_join(f, &sa, W(10), &r), KC_GM_ANSWERED); /* no rebalance */
    char na[128];
    snprintf(na, sizeof(na), "%s", S(f, r.member_id));
    jopt_t sb = {.version = 5, .instance = "ib", .nprotos = 2, .names = {"rr", "range"}};
    assert_int_equal(do_join(f, &sb, W(11), &r), KC_GM_ANSWERED);
    char nb[128];
    snprintf(nb, sizeof(nb), "%s", S(f, r.member_id));
    assert_int_equal(rb_count(group_json(f, "g")), 1); /* replaced without rebalancing */
    jopt_t sa2 = {.version = 5, .instance = "ia", .nprotos = 2, .names = {"rr", "range"}};
    assert_int_equal(do_join(f, &sa2, W(12), &r), KC_GM_PARKED);
    const char *e = rb_last(f, "g");
    assert_has(e, "\"cause\":\"static_member_replaced\",");
    assert_has(e, "\"reason\":\"group instance id ia replaced member %s\",", na);
    assert_has(e, "\"dropped\":[\"%s\"]}", na);
    jopt_t jb = {
        .version = 5, .instance = "ib", .member = nb, .nprotos = 2, .names = {"rr", "range"}};
    assert_int_equal(do_join(f, &jb, W(13), &r), KC_GM_ANSWERED);
    const char *new_a = S(f, join_answer(f, W(12))->r.member_id);
    e = rb_last(f, "g");
    assert_has(e, "\"member_id\":\"%s\",", new_a);
    assert_has(e, "\"joined\":[\"%s\"],\"dropped\":[\"%s\"]}", new_a, na);
    fx_free(f);
}

/* Members that do not sync in time: sync_timeout. A rebalance that had reached
 * CompletingRebalance ends as "restarted". */
static void test_rb_sync_timeout(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    assert_int_equal(join3(f, NULL, W(2), &r), KC_GM_PARKED);
    advance(f, 6000);
    int64_t t = f->now;
    const char *m1 = S(f, join_answer(f, W(1))->r.member_id);
    const char *m2 = S(f, join_answer(f, W(2))->r.member_id);
    kc_sync_group_response_t s;
    const char *ids[] = {m1, m2};
    const char *as[] = {"1", "2"};
    assert_int_equal(do_sync(f, 4, "g", m1, 1, NULL, 2, ids, as, W(3), &s), KC_GM_ANSWERED);
    for (int i = 1; i < 7; i++) {
        advance_to(f, t + 3000 * i);
        hb(f, "g", m2, 1, NULL);
        hb(f, "g", m1, 1, NULL);
    }
    advance_to(f, t + 20000);
    assert_int_equal(state_of(f, "g"), KC_GROUP_PREPARING_REBALANCE);
    assert_has(rb_last(f, "g"),
               "\"start_ms\":%lld,\"end_ms\":0,\"duration_ms\":0,\"cause\":\"sync_timeout\","
               "\"member_id\":\"%s\",\"reason\":\"members did not send SyncGroup before the "
               "rebalance timeout\",\"outcome\":null,\"joined\":[],\"dropped\":[\"%s\"]}",
               (long long)(t + 20000), m2, m2);

    /* Nobody syncs: the completing rebalance is restarted by the timeout and ends Empty. */
    fx_t *g = fx_new();
    assert_int_equal(join3(g, NULL, W(1), &r), KC_GM_PARKED);
    advance(g, 3000);
    const char *only = S(g, join_answer(g, W(1))->r.member_id);
    for (int i = 1; i < 7; i++) {
        advance_to(g, 1003000 + 3000 * i);
        hb(g, "g", only, 1, NULL);
    }
    advance_to(g, 1023000);
    assert_int_equal(state_of(g, "g"), KC_GROUP_EMPTY);
    const char *json = group_json(g, "g");
    assert_int_equal(rb_count(json), 2);
    assert_has(rb_nth(g, json, 0),
               "{\"generation\":1,\"start_ms\":1000000,\"end_ms\":1023000,\"duration_ms\":23000,"
               "\"cause\":\"member_joined\",\"member_id\":\"%s\",\"reason\":null,"
               "\"outcome\":\"restarted\",",
               only);
    assert_has(rb_nth(g, json, 1),
               "{\"generation\":2,\"start_ms\":1023000,\"end_ms\":1023000,\"duration_ms\":0,"
               "\"cause\":\"sync_timeout\",\"member_id\":\"%s\",",
               only);
    assert_has(rb_nth(g, json, 1), "\"outcome\":\"empty\",\"joined\":[],\"dropped\":[\"%s\"]}",
               only);
    fx_free(g);
    fx_free(f);
}

/* An entry's member lists: each id once, in the order noted, KC_HISTORY_NAMES_MAX kept and the
 * rest counted; they read back the same after the entry ended (and its lists were cut to fit). */
static void test_rb_history_names(void **state)
{
    (void)state;
    kc_history_t h;
    memset(&h, 0, sizeof(h));
    kc_time_t t = {.wall_ms = 1000, .mono_ms = 50};
    kc_history_begin(&h, NULL, t, KC_RB_MEMBER_JOINED, KC_STR_LIT("m-0"), KC_STR_NULL);
    char id[32];
    for (int i = 0; i < KC_HISTORY_NAMES_MAX + 6; i++) {
        snprintf(id, sizeof(id), "m-%d", i);
        kc_history_note(&h, true, kc_str_c(id));
        kc_history_note(&h, true, KC_STR_LIT("m-0")); /* already listed */
    }
    kc_history_note(&h, false, KC_STR_LIT("gone-b"));
    kc_history_note(&h, false, KC_STR_LIT(""));
    kc_history_note(&h, false, KC_STR_LIT("gone-b"));
    kc_history_note(&h, false, KC_STR_NULL); /* not a name */
    t.wall_ms += 10;
    t.mono_ms += 10;
    assert_non_null(kc_history_end(&h, t, 7, "stable"));
    kc_history_note(&h, true, KC_STR_LIT("late")); /* ended: nothing */
    jbuf_t b = {0};
    kc_history_json(&h, t.mono_ms, jb_emit, &b);
    assert_non_null(b.p);
    assert_true(json_valid(b.p, b.n));
    assert_non_null(strstr(b.p, "\"joined\":[\"m-0\",\"m-1\",\"m-2\","));
    snprintf(id, sizeof(id), ",\"m-%d\"],", KC_HISTORY_NAMES_MAX - 1);
    assert_non_null(strstr(b.p, id));
    assert_null(strstr(b.p, "late"));
    assert_non_null(strstr(b.p, "\"dropped\":[\"gone-b\",\"\"],\"joined_omitted\":6}"));
    free(b.p);
    kc_history_free(&h);
}

/* The ring keeps the last KC_RB_HISTORY rebalances, oldest first. */
static void test_rb_ring_keeps_32(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_join_group_response_t r;
    assert_int_equal(join3(f, NULL, W(1), &r), KC_GM_PARKED);
    advance(f, 3000);
    char id[128];
    snprintf(id, sizeof(id), "%s", S(f, join_answer(f, W(1))->r.member_id));
    const char *mids[] = {id};
    const char *as[] = {"A"};
    kc_sync_group_response_t s;
    assert_int_equal(do_sync(f, 4, "g", id, 1, NULL, 1, mids, as, W(2), &s), KC_GM_ANSWERED);
    for (int i = 0; i < 40; i++) {
        advance(f, 100);
        assert_int_equal(join3(f, id, W(3), &r), KC_GM_ANSWERED);
        assert_int_equal(r.generation_id, 2 + i);
        assert_int_equal(do_sync(f, 4, "g", id, 2 + i, NULL, 1, mids, as, W(4), &s),
                         KC_GM_ANSWERED);
        assert_int_equal(s.error_code, 0);
    }
    const char *json = group_json(f, "g");
    assert_int_equal(rb_count(json), KC_RB_HISTORY);
    assert_has(rb_nth(f, json, 0), "{\"generation\":10,");
    assert_has(rb_nth(f, json, 0), "\"cause\":\"leader_rejoined\",");
    assert_has(rb_nth(f, json, KC_RB_HISTORY - 1), "{\"generation\":41,");
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_gm_stats(f->gm, &st);
    assert_int_equal(st.rebalances[KC_RB_MEMBER_JOINED], 1);
    assert_int_equal(st.rebalances[KC_RB_LEADER_REJOINED], 40);
    uint64_t joins = 0, syncs = 0;
    for (int i = 0; i < KC_GM_PHASE_BUCKETS; i++) {
        joins += st.join_phase[i];
        syncs += st.sync_phase[i];
    }
    assert_int_equal(joins, 41);
    assert_int_equal(syncs, 41);
    /* The summary counts every rebalance. */
    jbuf_t b = {0};
    bool first = true;
    kc_gm_json_list(f->gm, f->now, jb_emit, &b, &first);
    assert_false(first);
    assert_non_null(strstr(b.p, "\"rebalance_count\":41,"));
    free(b.p);
    fx_free(f);
}

/* A rebalance nothing named started: other, with the state machine's reason. */
static void test_rb_other(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    trio_t t;
    form_trio(f, &t);
    f->cfg.max_size = 2;
    fx_t *g = restart(f, 1000);
    assert_int_equal(state_of(g, "g"), KC_GROUP_PREPARING_REBALANCE);
    const char *e = rb_last(g, "g");
    assert_has(e, "\"cause\":\"other\",\"member_id\":null,\"reason\":\"freshly-loaded group");
    assert_has(e, "\"outcome\":null,\"joined\":[],\"dropped\":[]}");
    fx_free(g);
    fx_free(f);
}

/* A consumer-protocol assignment decoded as topic -> partitions. */
static kc_bytes_t assignment_bytes(fx_t *f, int16_t version)
{
    int32_t p1[] = {0, 1}, p2[] = {3};
    kc_consumer_protocol_assignment_topic_partition_t tp[2];
    tp[0].topic = KC_STR_LIT("t1");
    tp[0].partitions.v = p1;
    tp[0].partitions.n = 2;
    tp[1].topic = KC_STR_LIT("t\"2");
    tp[1].partitions.v = p2;
    tp[1].partitions.n = 1;
    kc_consumer_protocol_assignment_t as;
    kc_consumer_protocol_assignment_init(&as);
    as.assigned_partitions.v = tp;
    as.assigned_partitions.n = 2;
    as.user_data = KC_BYTES_NULL;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, version);
    kc_consumer_protocol_assignment_encode(&w, version, &as);
    kc_bytes_t b = dup_bytes(&f->a, (kc_bytes_t){w.buf, (int32_t)w.len});
    kc_wr_free(&w);
    return b;
}

/* A one-member group `group` of protocol type `ptype` whose leader syncs `assign`. */
static const char *one_member_group(fx_t *f, const char *group, const char *ptype,
                                    kc_bytes_t assign)
{
    kc_join_group_response_t r;
    jopt_t o = {.version = 3, .group = group, .ptype = ptype};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_PARKED);
    advance(f, 3000);
    const char *id = S(f, join_answer(f, W(1))->r.member_id);
    kc_sync_group_request_t req;
    kc_sync_group_request_init(&req);
    req.group_id = kc_str_c(group);
    req.member_id = kc_str_c(id);
    req.generation_id = 1;
    req.group_instance_id = KC_STR_NULL;
    kc_sync_group_request_assignment_t a = {kc_str_c(id), assign};
    req.assignments.v = &a;
    req.assignments.n = 1;
    kc_sync_group_response_t s;
    assert_int_equal(kc_gm_sync(f->gm, T(f), 4, &req, W(2), &f->a, &s), KC_GM_ANSWERED);
    assert_int_equal(s.error_code, 0);
    return id;
}

static void test_json_classic_group(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    const char *id = one_member_group(f, "g", NULL, assignment_bytes(f, 1));
    advance(f, 1500);
    char want[2048];
    snprintf(want, sizeof(want),
             "{\"group_id\":\"g\",\"type\":\"classic\",\"state\":\"Stable\","
             "\"protocol_type\":\"consumer\",\"protocol\":\"range\",\"generation\":1,"
             "\"leader\":\"%s\",\"state_timestamp_ms\":1003000,\"members\":[{\"member_id\":\"%s\","
             "\"instance_id\":null,\"client_id\":\"client\",\"client_host\":\"/10.0.0.1\","
             "\"leader\":true,\"session_timeout_ms\":10000,\"rebalance_timeout_ms\":20000,"
             "\"assignment\":{\"t1\":[0,1],\"t\\\"2\":[3]},\"last_heartbeat_age_ms\":1500}],"
             "\"rebalances\":[{\"generation\":1,\"start_ms\":1000000,\"end_ms\":1003000,"
             "\"duration_ms\":3000,\"cause\":\"member_joined\",\"member_id\":\"%s\","
             "\"reason\":null,\"outcome\":\"stable\",\"joined\":[\"%s\"],\"dropped\":[]}]}",
             id, id, id, id);
    assert_string_equal(group_json(f, "g"), want);
    /* A newer version of the assignment (v3) decodes the same way. */
    one_member_group(f, "g3", NULL, assignment_bytes(f, 3));
    assert_has(group_json(f, "g3"), "\"assignment\":{\"t1\":[0,1],\"t\\\"2\":[3]},");
    /* Bytes that are no ConsumerProtocolAssignment: their size. */
    one_member_group(f, "bad", NULL, (kc_bytes_t){(const uint8_t *)"\x00\x01\x00", 3});
    assert_has(group_json(f, "bad"), "\"assignment_bytes\":3,");
    one_member_group(f, "neg", NULL, (kc_bytes_t){(const uint8_t *)"\xff\xff\x00\x00\x00\x00", 6});
    assert_has(group_json(f, "neg"), "\"assignment_bytes\":6,");
    /* Another protocol type is not decoded; an empty consumer assignment is {}. */
    one_member_group(f, "conn", "connect", assignment_bytes(f, 1));
    assert_has(group_json(f, "conn"), "\"protocol_type\":\"connect\",");
    assert_has(group_json(f, "conn"), "\"assignment_bytes\":");
    one_member_group(f, "none", NULL, (kc_bytes_t){(const uint8_t *)"", 0});
    assert_has(group_json(f, "none"), "\"assignment\":{},");
    /* No such group: -1, nothing written. */
    jbuf_t b = {0};
    assert_int_equal(kc_gm_json_group(f->gm, f->now, KC_STR_LIT("nope"), jb_emit, &b), -1);
    assert_null(b.p);
    fx_free(f);
}

/* Whatever bytes clients send, the JSON is valid: quotes, backslashes, control characters
 * and bytes that are not UTF-8 are escaped or replaced. */
static void test_json_escaping(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    const char *gid = "q\"\\\x01\x7f\xff\xe2\x82\xac\xc0\xaf";
    kc_join_group_response_t r;
    jopt_t o = {.version = 3, .group = gid, .client_id = "c\n\t\xed\xa0\x80"};
    assert_int_equal(do_join(f, &o, W(1), &r), KC_GM_PARKED);
    const char *json = group_json(f, gid);
    assert_has(json, "{\"group_id\":\"q\\\"\\\\\\u0001\\u007f\\ufffd\xe2\x82\xac\\ufffd\\ufffd\",");
    assert_has(json, "\"client_id\":\"c\\n\\t\\ufffd\\ufffd\\ufffd\",");
    jbuf_t b = {0};
    bool first = true;
    kc_gm_json_list(f->gm, f->now, jb_emit, &b, &first);
    assert_true(json_valid(b.p, b.n));
    assert_non_null(strstr(b.p, "\\u0001"));
    free(b.p);
    fx_free(f);
}

/* The list: one summary per group, comma-separated across calls through *first. */
static void test_json_list(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    jbuf_t b = {0};
    bool first = true;
    kc_gm_json_list(f->gm, f->now, jb_emit, &b, &first);
    assert_true(first); /* nothing yet */
    assert_null(b.p);
    char ids[2][128];
    int leader = 0;
    form_group(f, "a", 2, ids, &leader);
    kc_join_group_response_t r;
    jopt_t o = {.version = 3, .group = "b"};
    assert_int_equal(do_join(f, &o, W(9), &r), KC_GM_PARKED);
    jb_emit(&b, "[", 1);
    kc_gm_json_list(f->gm, f->now, jb_emit, &b, &first);
    assert_false(first);
    kc_gm_json_list(f->gm, f->now, jb_emit, &b, &first); /* a second manager's worth */
    jb_emit(&b, "]", 1);
    assert_true(json_valid(b.p, b.n));
    assert_non_null(strstr(b.p, "{\"group_id\":\"a\",\"type\":\"classic\",\"state\":\"Stable\","
                                "\"protocol_type\":\"consumer\",\"protocol\":\"range\","
                                "\"generation\":1,\"members\":2,\"state_timestamp_ms\":1006000,"
                                "\"rebalance_count\":1,\"last_rebalance_end_ms\":1006000}"));
    assert_non_null(strstr(b.p, "{\"group_id\":\"b\",\"type\":\"classic\","
                                "\"state\":\"PreparingRebalance\",\"protocol_type\":\"consumer\","
                                "\"protocol\":null,\"generation\":0,\"members\":1,"
                                "\"state_timestamp_ms\":1006000,\"rebalance_count\":1,"
                                "\"last_rebalance_end_ms\":0}"));
    int n = 0;
    for (const char *p = b.p; (p = strstr(p, "{\"group_id\"")) != NULL; p++)
        n++;
    assert_int_equal(n, 4);
    free(b.p);
    fx_free(f);
}

int main(void)
{
    kc_diag_set_level(KC_DIAG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_names),
        cmocka_unit_test(test_join_prechecks),
        cmocka_unit_test(test_join_inconsistent_protocol_new_group),
        cmocka_unit_test(test_new_group_empty_record),
        cmocka_unit_test(test_kip394_member_id_required),
        cmocka_unit_test(test_kip394_pending_expires),
        cmocka_unit_test(test_kip394_pending_blocks_join_phase),
        cmocka_unit_test(test_initial_delay_one_generation),
        cmocka_unit_test(test_initial_delay_bounded_by_rebalance_timeout),
        cmocka_unit_test(test_protocol_selection_vote),
        cmocka_unit_test(test_protocol_selection_majority),
        cmocka_unit_test(test_inconsistent_protocol_existing_group),
        cmocka_unit_test(test_sync_flow_and_record),
        cmocka_unit_test(test_record_too_large),
        cmocka_unit_test(test_sync_errors),
        cmocka_unit_test(test_sync_parked_twice),
        cmocka_unit_test(test_heartbeat_per_state),
        cmocka_unit_test(test_session_expiry_to_empty),
        cmocka_unit_test(test_heartbeat_extends_session),
        cmocka_unit_test(test_rebalance_timeout_removes_non_rejoining),
        cmocka_unit_test(test_leader_reelection),
        cmocka_unit_test(test_static_member_kept_when_not_rejoining),
        cmocka_unit_test(test_sync_timeout),
        cmocka_unit_test(test_sync_timeout_nobody_syncs),
        cmocka_unit_test(test_new_member_join_timeout),
        cmocka_unit_test(test_join_parked_twice_answers_old),
        cmocka_unit_test(test_rejoin_completing_and_stable),
        cmocka_unit_test(test_static_follower_replaced_without_rebalance),
        cmocka_unit_test(test_static_leader_skip_assignment),
        cmocka_unit_test(test_static_rejoin_protocol_change_rebalances),
        cmocka_unit_test(test_static_fenced_while_parked),
        cmocka_unit_test(test_static_replaced_in_completing_rebalances),
        cmocka_unit_test(test_group_max_size),
        cmocka_unit_test(test_leave_v0_and_last_member),
        cmocka_unit_test(test_leave_batch),
        cmocka_unit_test(test_leave_while_parked),
        cmocka_unit_test(test_validate_commit),
        cmocka_unit_test(test_subscriptions_and_expiry),
        cmocka_unit_test(test_unparsable_subscription),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_delete_and_remove_if_empty),
        cmocka_unit_test(test_info_and_each),
        cmocka_unit_test(test_free_answers_parked),
        cmocka_unit_test(test_oom_answers_request),
        cmocka_unit_test(test_many_groups_timers),
        cmocka_unit_test(test_wall_clock_step),
        cmocka_unit_test(test_pending_expiry_cost),
        cmocka_unit_test(test_tick_slices_serve_others),
        cmocka_unit_test(test_strmap),
        cmocka_unit_test(test_transition_log),
        cmocka_unit_test(test_three_members_end_to_end),
        cmocka_unit_test(test_replay_round_trip),
        cmocka_unit_test(test_replay_session_expiry),
        cmocka_unit_test(test_replay_empty_group_and_tombstone),
        cmocka_unit_test(test_replay_value_versions),
        cmocka_unit_test(test_replay_malformed),
        cmocka_unit_test(test_replay_offsets_create_simple_groups),
        cmocka_unit_test(test_replay_over_max_size),
        cmocka_unit_test(test_json_checker),
        cmocka_unit_test(test_rb_causes_names),
        cmocka_unit_test(test_rb_member_joined_and_phases),
        cmocka_unit_test(test_rb_session_timeout),
        cmocka_unit_test(test_rb_member_left),
        cmocka_unit_test(test_rb_metadata_and_leader),
        cmocka_unit_test(test_rb_static_replaced),
        cmocka_unit_test(test_rb_sync_timeout),
        cmocka_unit_test(test_rb_history_names),
        cmocka_unit_test(test_rb_ring_keeps_32),
        cmocka_unit_test(test_rb_other),
        cmocka_unit_test(test_json_classic_group),
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_json_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
