/* test_shard.c - the shard door (coord.h kc_shard_*) against one shard built in memory: no
 * loop, no log, no sockets.
 *
 * Each test pairs a group manager and an offsets store in a kc_partition_t (coord_int.h), with
 * a fake record sink, and drives the rules that tie groups and offsets together through the
 * door only: a commit validated by the group before its offsets are written, fetch, DeleteGroups
 * (offsets alone still make a group), OffsetDelete, retention, and replay's switch on the record
 * type. The records a shard emits are replayed into a fresh shard to show the two agree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/coord_int.h"
#include "proto/errors.h"
#include "proto/gen_records.h"

enum { MAX_RECS = 256 };

typedef struct rec_s {
    uint8_t *key, *val; /* val NULL: a tombstone */
    size_t klen, vlen;
} rec_t;

typedef struct fx_s {
    struct kc_partition_s p;
    rec_t recs[MAX_RECS];
    size_t nr;
    int joins_answered;
} fx_t;

static void on_record(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    fx_t *f = ctx;
    assert_true(f->nr < MAX_RECS);
    rec_t *r = &f->recs[f->nr++];
    r->key = malloc(klen);
    assert_non_null(r->key);
    memcpy(r->key, key, klen);
    r->klen = klen;
    r->val = NULL;
    r->vlen = 0;
    if (val) {
        r->val = malloc(vlen ? vlen : 1);
        assert_non_null(r->val);
        memcpy(r->val, val, vlen);
        r->vlen = vlen;
    }
}

static void on_join(void *ctx, void *w, const kc_join_group_response_t *r)
{
    (void)w;
    (void)r;
    ((fx_t *)ctx)->joins_answered++;
}

static void on_sync(void *ctx, void *w, const kc_sync_group_response_t *r)
{
    (void)ctx;
    (void)w;
    (void)r;
}

static fx_t *fx_new(void)
{
    fx_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    kc_gm_config_t cfg = {
        .partition = 0,
        .min_session_timeout_ms = 6000,
        .max_session_timeout_ms = 1800000,
        .initial_rebalance_delay_ms = 3000,
        .max_size = INT32_MAX,
        .new_member_join_timeout_ms = 300000,
    };
    kc_gm_ops_t gops = {.ctx = f, .join_done = on_join, .sync_done = on_sync, .record = on_record};
    kc_offsets_ops_t oops = {f, on_record};
    f->p.index = 0;
    f->p.state = KC_PART_ACTIVE;
    f->p.groups = kc_gm_new(&cfg, &gops);
    f->p.offsets = kc_offsets_new(&oops);
    assert_non_null(f->p.groups);
    assert_non_null(f->p.offsets);
    kc_gm_set_seed(f->p.groups, 7);
    return f;
}

static void fx_free(fx_t *f)
{
    kc_gm_free(f->p.groups);
    kc_offsets_free(f->p.offsets);
    for (size_t i = 0; i < f->nr; i++) {
        free(f->recs[i].key);
        free(f->recs[i].val);
    }
    free(f);
}

static int16_t rec_type(const rec_t *r)
{
    return (int16_t)(r->key[0] << 8 | r->key[1]);
}

/* Records of `type` among those emitted since `from`; tombstones among them in *tombs. */
static size_t count_recs(const fx_t *f, size_t from, int16_t type, size_t *tombs)
{
    size_t n = 0, t = 0;
    for (size_t i = from; i < f->nr; i++) {
        if (rec_type(&f->recs[i]) != type)
            continue;
        n++;
        t += f->recs[i].val == NULL;
    }
    if (tombs)
        *tombs = t;
    return n;
}

static kc_shard_commit_t entry(const char *topic, int32_t partition, int64_t offset,
                               int64_t commit_ts)
{
    return (kc_shard_commit_t){
        .topic = kc_str_c(topic),
        .partition = partition,
        .value = {.offset = offset,
                  .leader_epoch = -1,
                  .metadata = KC_STR_EMPTY,
                  .commit_ts_ms = commit_ts,
                  .expire_ts_ms = -1},
    };
}

static int64_t fetched(const fx_t *f, const char *group, const char *topic, int32_t partition)
{
    const kc_offset_t *o =
        kc_shard_fetch_offset(&f->p, kc_str_c(group), kc_str_c(topic), partition);
    return o ? o->offset : -1;
}

static void count_group(void *arg, const kc_group_info_t *g)
{
    (void)g;
    (*(int *)arg)++;
}

static int groups(const fx_t *f)
{
    int n = 0;
    kc_shard_each_group(&f->p, count_group, &n);
    return n;
}

/* A member joins a classic group of `protocol_type` (parked in the initial rebalance delay):
 * the group is then not Empty. */
static void join(fx_t *f, const char *group, const char *protocol_type)
{
    kc_join_group_request_protocol_t proto = {.name = KC_STR_LIT("range")};
    kc_join_group_request_t q;
    kc_join_group_request_init(&q);
    q.group_id = kc_str_c(group);
    q.session_timeout_ms = 10000;
    q.rebalance_timeout_ms = 10000;
    q.member_id = KC_STR_EMPTY;
    q.protocol_type = kc_str_c(protocol_type);
    q.protocols.v = &proto;
    q.protocols.n = 1;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_join_group_response_t resp;
    kc_join_group_response_init(&resp);
    int rc = kc_shard_join(&f->p, kc_time_same(1000), 3, &q, KC_STR_LIT("c"), KC_STR_LIT("/h"), f,
                           &a, &resp);
    assert_int_equal(rc, KC_SHARD_PARKED);
    kc_arena_free(&a);
}

/* ---- OffsetCommit and OffsetFetch ----------------------------------------------------------- */

/* A simple commit (generation -1) into an unknown group creates an Empty group and stores
 * every entry but the one the caller already refused, with one record each. */
static void test_commit_simple(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_shard_commit_t v[3] = {entry("t", 0, 10, 5), entry("t", 1, 11, 5), entry("u", 0, 12, 5)};
    v[2].error_code = KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    assert_int_equal(kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("g"), -1,
                                             KC_STR_EMPTY, KC_STR_NULL, v, 3),
                     KC_ERR_NONE);
    assert_int_equal(v[0].error_code, KC_ERR_NONE);
    assert_int_equal(v[1].error_code, KC_ERR_NONE);
    assert_int_equal(v[2].error_code, KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(count_recs(f, 0, KC_RECORD_OFFSET_COMMIT_KEY, NULL), 2);
    assert_int_equal(fetched(f, "g", "t", 0), 10);
    assert_int_equal(fetched(f, "g", "t", 1), 11);
    assert_int_equal(fetched(f, "g", "u", 0), -1);
    assert_int_equal(groups(f), 1);
    assert_int_equal(kc_shard_fetch_check(&f->p, KC_STR_LIT("g"), KC_STR_EMPTY, -1), KC_ERR_NONE);
    fx_free(f);
}

/* A commit the group refuses stores nothing and answers every entry with the group's error,
 * also the entries the caller had refused already: the group is checked first. */
static void test_commit_refused_by_group(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_shard_commit_t v[2] = {entry("t", 0, 10, 5), entry("t", 1, 11, 5)};
    v[1].error_code = KC_ERR_OFFSET_METADATA_TOO_LARGE;
    /* An unknown group with a generation: GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION
     * before. */
    assert_int_equal(kc_shard_commit_offsets(&f->p, kc_time_same(1000), 9, KC_STR_LIT("g"), 3,
                                             KC_STR_LIT("m"), KC_STR_NULL, v, 2),
                     KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(v[0].error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(v[1].error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    v[0].error_code = v[1].error_code = KC_ERR_NONE;
    assert_int_equal(kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("g"), 3,
                                             KC_STR_LIT("m"), KC_STR_NULL, v, 2),
                     KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(v[0].error_code, KC_ERR_ILLEGAL_GENERATION);
    assert_int_equal(f->nr, 0);
    assert_int_equal(fetched(f, "g", "t", 0), -1);
    assert_int_equal(groups(f), 0);

    /* A member of a rebalancing group that is not in it. */
    join(f, "live", "consumer");
    size_t nr = f->nr;
    v[0].error_code = v[1].error_code = KC_ERR_NONE;
    int16_t err = kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("live"), 1,
                                          KC_STR_LIT("stranger"), KC_STR_NULL, v, 2);
    assert_int_not_equal(err, KC_ERR_NONE);
    assert_int_equal(v[0].error_code, err);
    assert_int_equal(f->nr, nr);
    assert_int_equal(fetched(f, "live", "t", 0), -1);
    fx_free(f);
}

/* Fetch of every offset of a group, in topic then partition order. */
static void collect(void *arg, kc_str_t topic, int32_t partition, const kc_offset_t *o)
{
    char *buf = arg;
    size_t n = strlen(buf);
    snprintf(buf + n, 256 - n, "%.*s/%d=%lld ", topic.len, topic.p, (int)partition,
             (long long)o->offset);
}

static void test_fetch_all(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_shard_commit_t v[3] = {entry("b", 1, 3, 5), entry("a", 0, 1, 5), entry("b", 0, 2, 5)};
    assert_int_equal(kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("g"), -1,
                                             KC_STR_EMPTY, KC_STR_NULL, v, 3),
                     KC_ERR_NONE);
    char buf[256] = "";
    kc_shard_fetch_all(&f->p, KC_STR_LIT("g"), collect, buf);
    assert_string_equal(buf, "a/0=1 b/0=2 b/1=3 ");
    buf[0] = '\0';
    kc_shard_fetch_all(&f->p, KC_STR_LIT("other"), collect, buf);
    assert_string_equal(buf, "");
    fx_free(f);
}

/* ---- DeleteGroups ------------------------------------------------------------------------------
 */

static void test_delete_group(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_time_t now = kc_time_same(2000);
    size_t gone = 99;

    /* Nothing at all: not found. */
    assert_int_equal(kc_shard_delete_group(&f->p, now, KC_STR_LIT("none"), &gone),
                     KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(gone, 0);

    /* An Empty group with offsets: the group and its offsets go, with tombstones. */
    kc_shard_commit_t v[2] = {entry("t", 0, 1, 5), entry("t", 1, 2, 5)};
    assert_int_equal(kc_shard_commit_offsets(&f->p, now, 8, KC_STR_LIT("g"), -1, KC_STR_EMPTY,
                                             KC_STR_NULL, v, 2),
                     KC_ERR_NONE);
    size_t nr = f->nr, tombs;
    assert_int_equal(kc_shard_delete_group(&f->p, now, KC_STR_LIT("g"), &gone), KC_ERR_NONE);
    assert_int_equal(gone, 2);
    assert_int_equal(count_recs(f, nr, KC_RECORD_OFFSET_COMMIT_KEY, &tombs), 2);
    assert_int_equal(tombs, 2);
    assert_int_equal(fetched(f, "g", "t", 0), -1);
    assert_int_equal(groups(f), 0);

    /* Offsets alone (no group state) still make a group, as in Kafka. */
    kc_offset_t o = {.offset = 7, .leader_epoch = -1, .metadata = KC_STR_EMPTY, .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(f->p.offsets, KC_STR_LIT("bare"), KC_STR_LIT("t"), 0, &o),
                     0);
    assert_int_equal(groups(f), 0);
    nr = f->nr;
    assert_int_equal(kc_shard_delete_group(&f->p, now, KC_STR_LIT("bare"), &gone), KC_ERR_NONE);
    assert_int_equal(gone, 1);
    assert_int_equal(count_recs(f, nr, KC_RECORD_OFFSET_COMMIT_KEY, &tombs), 1);
    assert_int_equal(tombs, 1);
    assert_int_equal(fetched(f, "bare", "t", 0), -1);

    /* A group with members is not deleted, nor are its offsets. */
    join(f, "busy", "consumer");
    kc_shard_commit_t w = entry("t", 0, 4, 5);
    kc_offsets_commit(f->p.offsets, KC_STR_LIT("busy"), w.topic, w.partition, &w.value);
    nr = f->nr;
    assert_int_equal(kc_shard_delete_group(&f->p, now, KC_STR_LIT("busy"), NULL),
                     KC_ERR_NON_EMPTY_GROUP);
    assert_int_equal(f->nr, nr);
    assert_int_equal(fetched(f, "busy", "t", 0), 4);
    assert_int_equal(groups(f), 1);
    fx_free(f);
}

/* ---- OffsetDelete ------------------------------------------------------------------------------
 */

static void test_delete_offsets(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_time_t now = kc_time_same(2000);
    kc_shard_offset_del_t d[3] = {
        {KC_STR_LIT("t"), 0, KC_ERR_NONE},
        {KC_STR_LIT("t"), 5, KC_ERR_UNKNOWN_TOPIC_OR_PARTITION},
        {KC_STR_LIT("u"), 0, KC_ERR_NONE},
    };
    /* No such group: nothing is looked at. */
    assert_int_equal(kc_shard_delete_offsets(&f->p, KC_STR_LIT("g"), d, 3),
                     KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(d[0].error_code, KC_ERR_NONE);

    kc_shard_commit_t v[2] = {entry("t", 0, 1, 5), entry("u", 0, 2, 5)};
    assert_int_equal(kc_shard_commit_offsets(&f->p, now, 8, KC_STR_LIT("g"), -1, KC_STR_EMPTY,
                                             KC_STR_NULL, v, 2),
                     KC_ERR_NONE);
    size_t nr = f->nr, tombs;
    assert_int_equal(kc_shard_delete_offsets(&f->p, KC_STR_LIT("g"), d, 3), KC_ERR_NONE);
    assert_int_equal(d[0].error_code, KC_ERR_NONE);
    assert_int_equal(d[1].error_code, KC_ERR_UNKNOWN_TOPIC_OR_PARTITION); /* left alone */
    assert_int_equal(d[2].error_code, KC_ERR_NONE);
    assert_int_equal(count_recs(f, nr, KC_RECORD_OFFSET_COMMIT_KEY, &tombs), 2);
    assert_int_equal(tombs, 2);
    assert_int_equal(fetched(f, "g", "t", 0), -1);
    assert_int_equal(fetched(f, "g", "u", 0), -1);

    /* A non-empty group of another protocol type: NON_EMPTY_GROUP for the whole request. */
    join(f, "connect", "connect");
    kc_shard_commit_t w = entry("t", 0, 4, 5);
    kc_offsets_commit(f->p.offsets, KC_STR_LIT("connect"), w.topic, w.partition, &w.value);
    d[0].error_code = KC_ERR_NONE;
    nr = f->nr;
    assert_int_equal(kc_shard_delete_offsets(&f->p, KC_STR_LIT("connect"), d, 1),
                     KC_ERR_NON_EMPTY_GROUP);
    assert_int_equal(f->nr, nr);
    assert_int_equal(fetched(f, "connect", "t", 0), 4);

    /* A non-empty consumer group whose subscriptions are not known yet: every topic counts as
     * subscribed, so the partition is refused and kept. */
    join(f, "cons", "consumer");
    kc_offsets_commit(f->p.offsets, KC_STR_LIT("cons"), w.topic, w.partition, &w.value);
    d[0].error_code = KC_ERR_NONE;
    nr = f->nr;
    assert_int_equal(kc_shard_delete_offsets(&f->p, KC_STR_LIT("cons"), d, 1), KC_ERR_NONE);
    assert_int_equal(d[0].error_code, KC_ERR_GROUP_SUBSCRIBED_TO_TOPIC);
    assert_int_equal(f->nr, nr);
    assert_int_equal(fetched(f, "cons", "t", 0), 4);
    fx_free(f);
}

/* ---- Retention and deleted topics -------------------------------------------------------------
 */

static void test_expire(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    int64_t day = 24 * 3600 * 1000LL;
    kc_shard_commit_t v[2] = {entry("t", 0, 1, 1000), entry("t", 1, 2, 1000 + 2 * day)};
    assert_int_equal(kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("g"), -1,
                                             KC_STR_EMPTY, KC_STR_NULL, v, 2),
                     KC_ERR_NONE);
    kc_shard_commit_t w = entry("t", 0, 3, 1000 + 2 * day);
    assert_int_equal(kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("h"), -1,
                                             KC_STR_EMPTY, KC_STR_NULL, &w, 1),
                     KC_ERR_NONE);
    assert_int_equal(groups(f), 2);
    /* One day of retention, two days on: g's first offset goes, the rest stays. */
    assert_int_equal(kc_shard_expire(&f->p, kc_time_same(1000 + 2 * day), day), 1);
    assert_int_equal(fetched(f, "g", "t", 0), -1);
    assert_int_equal(fetched(f, "g", "t", 1), 2);
    assert_int_equal(groups(f), 2);
    /* Four days on: everything expires, and the Empty groups left without offsets go with a
     * tombstone each. */
    size_t nr = f->nr, tombs;
    assert_int_equal(kc_shard_expire(&f->p, kc_time_same(1000 + 4 * day), day), 2);
    assert_int_equal(groups(f), 0);
    assert_int_equal(count_recs(f, nr, KC_RECORD_GROUP_METADATA_KEY, &tombs), 2);
    assert_int_equal(tombs, 2);

    /* A deleted topic takes its offsets in every group. */
    kc_shard_commit_t x[2] = {entry("t", 0, 1, 5), entry("u", 0, 2, 5)};
    kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("g"), -1, KC_STR_EMPTY,
                            KC_STR_NULL, x, 2);
    kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("h"), -1, KC_STR_EMPTY,
                            KC_STR_NULL, x, 1);
    assert_int_equal(kc_shard_delete_topic(&f->p, KC_STR_LIT("t")), 2);
    assert_int_equal(fetched(f, "g", "t", 0), -1);
    assert_int_equal(fetched(f, "h", "t", 0), -1);
    assert_int_equal(fetched(f, "g", "u", 0), 2);
    fx_free(f);
}

/* ---- Replay ------------------------------------------------------------------------------------
 */

/* What a shard emitted, replayed into a fresh one, gives the same offsets and groups; record
 * types kcoord does not keep are skipped, a key without a type is malformed. */
static void test_replay(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_time_t now = kc_time_same(1000);
    kc_shard_commit_t v[3] = {entry("t", 0, 1, 5), entry("t", 1, 2, 5), entry("u", 0, 3, 5)};
    kc_shard_commit_offsets(&f->p, now, 8, KC_STR_LIT("a"), -1, KC_STR_EMPTY, KC_STR_NULL, v, 3);
    kc_shard_commit_offsets(&f->p, now, 8, KC_STR_LIT("b"), -1, KC_STR_EMPTY, KC_STR_NULL, v, 1);
    kc_shard_commit_offsets(&f->p, now, 8, KC_STR_LIT("gone"), -1, KC_STR_EMPTY, KC_STR_NULL, v, 1);
    kc_shard_offset_del_t d = {KC_STR_LIT("t"), 1, KC_ERR_NONE};
    assert_int_equal(kc_shard_delete_offsets(&f->p, KC_STR_LIT("a"), &d, 1), KC_ERR_NONE);
    assert_int_equal(kc_shard_delete_group(&f->p, now, KC_STR_LIT("gone"), NULL), KC_ERR_NONE);

    fx_t *g = fx_new();
    for (size_t i = 0; i < f->nr; i++)
        assert_int_equal(kc_shard_replay(&g->p, f->recs[i].key, f->recs[i].klen, f->recs[i].val,
                                         f->recs[i].vlen),
                         0);
    kc_gm_load_complete(g->p.groups, now);
    assert_int_equal(g->nr, 0); /* replay emits nothing */
    assert_int_equal(fetched(g, "a", "t", 0), 1);
    assert_int_equal(fetched(g, "a", "t", 1), -1);
    assert_int_equal(fetched(g, "a", "u", 0), 3);
    assert_int_equal(fetched(g, "b", "t", 0), 1);
    assert_int_equal(fetched(g, "gone", "t", 0), -1);
    assert_int_equal(groups(g), 2); /* the simple groups the offsets imply */

    /* A type kcoord does not keep (a transaction log's, say) is skipped. */
    const uint8_t other[] = {0, 42, 0, 1, 'x'};
    const uint8_t val[] = {0, 0};
    assert_int_equal(kc_shard_replay(&g->p, other, sizeof(other), val, sizeof(val)), 0);
    /* A key too short for its type is malformed; so is a truncated offset key. */
    const uint8_t shorty[] = {0};
    assert_int_equal(kc_shard_replay(&g->p, shorty, sizeof(shorty), NULL, 0), -2);
    const uint8_t trunc[] = {0, 1, 0, 5, 'a'};
    assert_int_equal(kc_shard_replay(&g->p, trunc, sizeof(trunc), NULL, 0), -2);
    assert_int_equal(groups(g), 2);
    fx_free(g);
    fx_free(f);
}

/* A shard that does not serve shows nothing through the views. */
static void test_not_serving(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    kc_shard_commit_t v = entry("t", 0, 1, 5);
    kc_shard_commit_offsets(&f->p, kc_time_same(1000), 8, KC_STR_LIT("g"), -1, KC_STR_EMPTY,
                            KC_STR_NULL, &v, 1);
    f->p.state = KC_PART_LOADING;
    assert_int_equal(kc_partition_state(&f->p), KC_PART_LOADING);
    assert_int_equal(groups(f), 0);
    assert_int_equal(fetched(f, "g", "t", 0), -1);
    assert_int_equal(kc_shard_expire(&f->p, kc_time_same(INT64_MAX / 2), 1), 0);
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    kc_shard_stats(&f->p, &st);
    f->p.state = KC_PART_ACTIVE;
    assert_int_equal(fetched(f, "g", "t", 0), 1);
    assert_int_equal(kc_partition_index(&f->p), 0);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_simple),  cmocka_unit_test(test_commit_refused_by_group),
        cmocka_unit_test(test_fetch_all),      cmocka_unit_test(test_delete_group),
        cmocka_unit_test(test_delete_offsets), cmocka_unit_test(test_expire),
        cmocka_unit_test(test_replay),         cmocka_unit_test(test_not_serving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
