/* test_offsets.c - unit tests for the committed-offsets store in src/offsets/offsets.c.
 *
 * Every test owns a store whose record callback copies each record into a list, so a test can
 * check both the state and the exact __consumer_offsets records. Record bytes are checked two
 * ways: against byte strings worked out by hand from Kafka's OffsetCommitKey/OffsetCommitValue
 * schemas, and field by field through the generated decoders. Expiry follows Kafka's
 * OffsetMetadataManager.cleanupExpiredOffsets and OffsetExpirationConditionImpl (KIP-211).
 * Allocation failures are injected through kc_offsets__alloc_budget.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offsets/offsets.h"
#include "offsets/offsets_int.h"
#include "proto/gen_records.h"
#include "proto/wire.h"

/* ---- Recorded records ---------------------------------------------------------------------- */

typedef struct rec_s {
    uint8_t *key;
    size_t key_len;
    uint8_t *value; /* NULL: tombstone */
    size_t value_len;
} rec_t;

typedef struct fixture_s {
    kc_offsets_t *o;
    rec_t *recs;
    size_t n;
    size_t cap;
} fixture_t;

static void on_record(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len)
{
    fixture_t *f = ctx;
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        f->recs = realloc(f->recs, f->cap * sizeof(*f->recs));
        assert_non_null(f->recs);
    }
    rec_t *r = &f->recs[f->n++];
    assert_non_null(key);
    r->key = malloc(key_len);
    assert_non_null(r->key);
    memcpy(r->key, key, key_len);
    r->key_len = key_len;
    r->value = NULL;
    r->value_len = 0;
    if (value != NULL) {
        r->value = malloc(value_len ? value_len : 1);
        assert_non_null(r->value);
        memcpy(r->value, value, value_len);
        r->value_len = value_len;
    } else {
        assert_int_equal(value_len, 0);
    }
}

static void recs_clear(fixture_t *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->recs[i].key);
        free(f->recs[i].value);
    }
    f->n = 0;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    kc_offsets_ops_t ops = {f, on_record};
    f->o = kc_offsets_new(&ops);
    if (f->o == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kc_offsets__alloc_budget = -1;
    kc_offsets_free(f->o);
    recs_clear(f);
    free(f->recs);
    free(f);
    return 0;
}

/* Decode a record's key, checking the record type and that nothing trails. The views point into
 * the record. */
static kc_offset_commit_key_t rec_key(const rec_t *r)
{
    kc_reader_t rd;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_rd_init(&rd, r->key, r->key_len);
    assert_int_equal(kc_rd_i16(&rd), 1);
    kc_offset_commit_key_t k;
    assert_int_equal(kc_offset_commit_key_decode(&rd, &a, 1, &k), 0);
    assert_int_equal(kc_rd_remaining(&rd), 0);
    kc_arena_free(&a);
    return k;
}

/* Decode a record's value; returns its version. */
static int16_t rec_value(const rec_t *r, kc_offset_commit_value_t *m)
{
    assert_non_null(r->value);
    kc_reader_t rd;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_rd_init(&rd, r->value, r->value_len);
    int16_t v = kc_rd_i16(&rd);
    assert_int_equal(kc_offset_commit_value_decode(&rd, &a, v, m), 0);
    assert_int_equal(kc_rd_remaining(&rd), 0);
    kc_arena_free(&a);
    return v;
}

static void assert_key(const rec_t *r, const char *group, const char *topic, int32_t partition)
{
    kc_offset_commit_key_t k = rec_key(r);
    assert_true(kc_str_eq_c(k.group, group));
    assert_true(kc_str_eq_c(k.topic, topic));
    assert_int_equal(k.partition, partition);
}

static void assert_tombstone(const rec_t *r, const char *group, const char *topic,
                             int32_t partition)
{
    assert_null(r->value);
    assert_key(r, group, topic, partition);
}

static kc_offset_t off(int64_t offset, int32_t epoch, const char *md, int64_t commit_ts)
{
    return (kc_offset_t){offset, epoch, kc_str_c(md), commit_ts, -1};
}

static int commit(fixture_t *f, const char *g, const char *t, int32_t p, kc_offset_t v)
{
    return kc_offsets_commit(f->o, kc_str_c(g), kc_str_c(t), p, &v);
}

static const kc_offset_t *get(fixture_t *f, const char *g, const char *t, int32_t p)
{
    return kc_offsets_get(f->o, kc_str_c(g), kc_str_c(t), p);
}

static size_t count(fixture_t *f, const char *g)
{
    return kc_offsets_count(f->o, kc_str_c(g));
}

/* ---- Iteration helper ---------------------------------------------------------------------- */

typedef struct seen_s {
    char topic[64];
    int32_t partition;
    int64_t offset;
} seen_t;

typedef struct seen_list_s {
    seen_t *v;
    size_t n;
    size_t cap;
} seen_list_t;

static void collect(void *arg, kc_str_t topic, int32_t partition, const kc_offset_t *value)
{
    seen_list_t *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        assert_non_null(l->v);
    }
    seen_t *s = &l->v[l->n++];
    assert_true(topic.len >= 0 && topic.len < (int32_t)sizeof(s->topic));
    memcpy(s->topic, topic.p, (size_t)topic.len);
    s->topic[topic.len] = '\0';
    s->partition = partition;
    s->offset = value->offset;
}

/* ---- Basic operations ------------------------------------------------------------------------ */

static void test_commit_get_overwrite(void **state)
{
    fixture_t *f = *state;
    assert_null(get(f, "g", "t", 0));
    assert_int_equal(commit(f, "g", "t", 0, off(100, 5, "first", 1000)), 0);
    const kc_offset_t *v = get(f, "g", "t", 0);
    assert_non_null(v);
    assert_int_equal(v->offset, 100);
    assert_int_equal(v->leader_epoch, 5);
    assert_true(kc_str_eq_c(v->metadata, "first"));
    assert_int_equal(v->commit_ts_ms, 1000);
    assert_int_equal(v->expire_ts_ms, -1);
    assert_int_equal(f->n, 1);

    /* Overwrite: same key, new value and metadata; still one offset. */
    assert_int_equal(commit(f, "g", "t", 0, off(200, -1, "second, longer metadata", 2000)), 0);
    v = get(f, "g", "t", 0);
    assert_int_equal(v->offset, 200);
    assert_int_equal(v->leader_epoch, -1);
    assert_true(kc_str_eq_c(v->metadata, "second, longer metadata"));
    assert_int_equal(v->commit_ts_ms, 2000);
    assert_int_equal(count(f, "g"), 1);
    assert_int_equal(kc_offsets_total(f->o), 1);
    assert_int_equal(kc_offsets_groups(f->o), 1);
    assert_int_equal(f->n, 2);
    kc_offset_commit_value_t m;
    assert_int_equal(rec_value(&f->recs[1], &m), 3);
    assert_int_equal(m.offset, 200);

    /* Neighbours are distinct keys. */
    assert_null(get(f, "g", "t", 1));
    assert_null(get(f, "g", "t2", 0));
    assert_null(get(f, "g2", "t", 0));
    assert_null(get(f, "", "t", 0));
    assert_null(get(f, "g", "", 0));

    /* Keys that share bytes but differ in where the group ends and the topic starts. */
    assert_int_equal(commit(f, "ab", "c", 0, off(1, -1, "", 0)), 0);
    assert_int_equal(commit(f, "a", "bc", 0, off(2, -1, "", 0)), 0);
    assert_int_equal(get(f, "ab", "c", 0)->offset, 1);
    assert_int_equal(get(f, "a", "bc", 0)->offset, 2);
    assert_int_equal(kc_offsets_groups(f->o), 3);

    /* Negative and extreme partition numbers are just keys. */
    assert_int_equal(commit(f, "g", "t", INT32_MIN, off(3, -1, "", 0)), 0);
    assert_int_equal(commit(f, "g", "t", INT32_MAX, off(4, -1, "", 0)), 0);
    assert_int_equal(get(f, "g", "t", INT32_MIN)->offset, 3);
    assert_int_equal(get(f, "g", "t", INT32_MAX)->offset, 4);
    assert_int_equal(count(f, "g"), 3);
}

static void test_metadata_ownership(void **state)
{
    fixture_t *f = *state;
    char buf[32];
    strcpy(buf, "client-metadata");
    kc_offset_t v = {7, 1, {buf, (int32_t)strlen(buf)}, 10, -1};
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &v), 0);
    memset(buf, 'X', sizeof(buf) - 1); /* the caller's buffer goes away */
    const kc_offset_t *got = get(f, "g", "t", 0);
    assert_true(kc_str_eq_c(got->metadata, "client-metadata"));
    assert_ptr_not_equal(got->metadata.p, buf);

    /* Group and topic names are copied too. */
    char gname[8], tname[8];
    strcpy(gname, "grp");
    strcpy(tname, "top");
    v.metadata = KC_STR_EMPTY;
    assert_int_equal(kc_offsets_commit(f->o, kc_str_c(gname), kc_str_c(tname), 3, &v), 0);
    strcpy(gname, "zzz");
    strcpy(tname, "zzz");
    assert_non_null(get(f, "grp", "top", 3));
    assert_null(get(f, "zzz", "zzz", 3));

    /* A null metadata is stored, and written, as "". */
    v.metadata = KC_STR_NULL;
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 1, &v), 0);
    got = get(f, "g", "t", 1);
    assert_non_null(got->metadata.p);
    assert_int_equal(got->metadata.len, 0);
    kc_offset_commit_value_t m;
    rec_value(&f->recs[f->n - 1], &m);
    assert_int_equal(m.metadata.len, 0);

    /* Overwriting with "" frees the old copy (ASan checks the leak) and reads as "". */
    v.metadata = KC_STR_LIT("x");
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &v), 0);
    v.metadata = KC_STR_EMPTY;
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &v), 0);
    got = get(f, "g", "t", 0);
    assert_non_null(got->metadata.p);
    assert_int_equal(got->metadata.len, 0);
}

static void test_iteration_order(void **state)
{
    fixture_t *f = *state;
    /* Topics and partitions committed out of order; "B" < "a" < "ab" < "b" bytewise. */
    const char *topics[] = {"b", "ab", "a", "B"};
    const int32_t parts[] = {5, 0, 10, 3, -1, 2};
    int64_t o = 0;
    for (size_t p = 0; p < 6; p++)
        for (size_t t = 0; t < 4; t++)
            assert_int_equal(commit(f, "g", topics[t], parts[p], off(o++, -1, "", 0)), 0);
    assert_int_equal(commit(f, "other", "a", 0, off(999, -1, "", 0)), 0);

    seen_list_t l = {0};
    kc_offsets_each(f->o, KC_STR_LIT("g"), collect, &l);
    assert_int_equal(l.n, 24);
    const char *want_topics[] = {"B", "a", "ab", "b"};
    const int32_t want_parts[] = {-1, 0, 2, 3, 5, 10};
    for (size_t i = 0; i < 24; i++) {
        assert_string_equal(l.v[i].topic, want_topics[i / 6]);
        assert_int_equal(l.v[i].partition, want_parts[i % 6]);
        assert_int_equal(l.v[i].offset, get(f, "g", l.v[i].topic, l.v[i].partition)->offset);
    }
    free(l.v);

    /* Unknown group: no calls. */
    seen_list_t none = {0};
    kc_offsets_each(f->o, KC_STR_LIT("nope"), collect, &none);
    assert_int_equal(none.n, 0);
}

static void test_counts_has_topic(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(count(f, "g"), 0);
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("t")));
    for (int32_t p = 0; p < 3; p++)
        commit(f, "g", "t", p, off(p, -1, "", 0));
    commit(f, "g", "u", 0, off(0, -1, "", 0));
    commit(f, "h", "t", 0, off(0, -1, "", 0));
    commit(f, "g", "t", 1, off(50, -1, "", 0)); /* overwrite does not count */
    assert_int_equal(count(f, "g"), 4);
    assert_int_equal(count(f, "h"), 1);
    assert_int_equal(count(f, "x"), 0);
    assert_int_equal(kc_offsets_total(f->o), 5);
    assert_int_equal(kc_offsets_groups(f->o), 2);
    assert_true(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("t")));
    assert_true(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("u")));
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("v")));
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("h"), KC_STR_LIT("u")));
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("x"), KC_STR_LIT("t")));

    kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("u"), 0);
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("u")));
    assert_int_equal(count(f, "g"), 3);
    assert_int_equal(kc_offsets_total(f->o), 4);
}

static void test_delete_one(void **state)
{
    fixture_t *f = *state;
    commit(f, "g", "t", 0, off(1, -1, "m", 0));
    commit(f, "g", "t", 1, off(2, -1, "", 0));
    recs_clear(f);

    assert_false(kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 2));
    assert_false(kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("u"), 0));
    assert_false(kc_offsets_delete(f->o, KC_STR_LIT("x"), KC_STR_LIT("t"), 0));
    assert_int_equal(f->n, 0); /* nothing deleted, nothing written */

    assert_true(kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 0));
    assert_int_equal(f->n, 1);
    assert_tombstone(&f->recs[0], "g", "t", 0);
    assert_null(get(f, "g", "t", 0));
    assert_non_null(get(f, "g", "t", 1));
    assert_false(kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 0));
    assert_int_equal(f->n, 1);

    /* The last offset: the group is forgotten. */
    assert_true(kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 1));
    assert_tombstone(&f->recs[1], "g", "t", 1);
    assert_int_equal(count(f, "g"), 0);
    assert_int_equal(kc_offsets_groups(f->o), 0);
    assert_int_equal(kc_offsets_total(f->o), 0);
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("t")));

    /* And can come back. */
    assert_int_equal(commit(f, "g", "t", 1, off(3, -1, "", 0)), 0);
    assert_int_equal(get(f, "g", "t", 1)->offset, 3);
}

static void test_delete_group(void **state)
{
    fixture_t *f = *state;
    commit(f, "g", "b", 1, off(1, -1, "", 0));
    commit(f, "g", "a", 2, off(1, -1, "", 0));
    commit(f, "g", "b", 0, off(1, -1, "", 0));
    commit(f, "g", "a", 0, off(1, -1, "", 0));
    commit(f, "h", "a", 0, off(1, -1, "", 0));
    recs_clear(f);

    assert_int_equal(kc_offsets_delete_group(f->o, KC_STR_LIT("x")), 0);
    assert_int_equal(f->n, 0);
    assert_int_equal(kc_offsets_delete_group(f->o, KC_STR_LIT("g")), 4);
    assert_int_equal(f->n, 4);
    assert_tombstone(&f->recs[0], "g", "a", 0);
    assert_tombstone(&f->recs[1], "g", "a", 2);
    assert_tombstone(&f->recs[2], "g", "b", 0);
    assert_tombstone(&f->recs[3], "g", "b", 1);
    assert_int_equal(count(f, "g"), 0);
    assert_null(get(f, "g", "a", 0));
    assert_non_null(get(f, "h", "a", 0));
    assert_int_equal(kc_offsets_groups(f->o), 1);
    assert_int_equal(kc_offsets_total(f->o), 1);
    assert_int_equal(kc_offsets_delete_group(f->o, KC_STR_LIT("g")), 0);
}

static void test_delete_topic(void **state)
{
    fixture_t *f = *state;
    commit(f, "g1", "dead", 0, off(1, -1, "", 0));
    commit(f, "g1", "dead", 1, off(1, -1, "", 0));
    commit(f, "g1", "live", 0, off(1, -1, "", 0));
    commit(f, "g2", "dead", 3, off(1, -1, "", 0)); /* g2 holds only the deleted topic */
    commit(f, "g3", "live", 0, off(1, -1, "", 0));
    commit(f, "g3", "dead-not", 0, off(1, -1, "", 0)); /* a longer name is another topic */
    recs_clear(f);

    assert_int_equal(kc_offsets_delete_topic(f->o, KC_STR_LIT("dead")), 3);
    assert_int_equal(f->n, 3);
    /* Groups come in map order; check the set of tombstones. */
    int seen_g1_0 = 0, seen_g1_1 = 0, seen_g2_3 = 0;
    for (size_t i = 0; i < f->n; i++) {
        assert_null(f->recs[i].value);
        kc_offset_commit_key_t k = rec_key(&f->recs[i]);
        assert_true(kc_str_eq_c(k.topic, "dead"));
        if (kc_str_eq_c(k.group, "g1") && k.partition == 0)
            seen_g1_0++;
        else if (kc_str_eq_c(k.group, "g1") && k.partition == 1)
            seen_g1_1++;
        else if (kc_str_eq_c(k.group, "g2") && k.partition == 3)
            seen_g2_3++;
        else
            fail_msg("unexpected tombstone");
    }
    assert_int_equal(seen_g1_0 + seen_g1_1 + seen_g2_3, 3);
    assert_int_equal(seen_g1_0 * seen_g1_1 * seen_g2_3, 1);
    /* g1's partitions in order. */
    for (size_t i = 0; i + 1 < f->n; i++) {
        kc_offset_commit_key_t a = rec_key(&f->recs[i]), b = rec_key(&f->recs[i + 1]);
        if (kc_str_eq_c(a.group, "g1") && kc_str_eq_c(b.group, "g1"))
            assert_true(a.partition < b.partition);
    }
    assert_int_equal(count(f, "g1"), 1);
    assert_int_equal(count(f, "g2"), 0);
    assert_int_equal(count(f, "g3"), 2);
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("g1"), KC_STR_LIT("dead")));
    assert_true(kc_offsets_has_topic(f->o, KC_STR_LIT("g3"), KC_STR_LIT("dead-not")));
    assert_int_equal(kc_offsets_groups(f->o), 2);
    assert_int_equal(kc_offsets_delete_topic(f->o, KC_STR_LIT("dead")), 0);
}

static void count_groups(void *arg, kc_str_t group, size_t n)
{
    size_t *acc = arg;
    acc[0]++;
    acc[1] += n;
    if (kc_str_eq_c(group, "g"))
        acc[2] = n;
}

static void test_each_group(void **state)
{
    fixture_t *f = *state;
    commit(f, "g", "t", 0, off(1, -1, "", 0));
    commit(f, "g", "t", 1, off(1, -1, "", 0));
    commit(f, "h", "t", 0, off(1, -1, "", 0));
    size_t acc[3] = {0, 0, 0};
    kc_offsets_each_group(f->o, count_groups, acc);
    assert_int_equal(acc[0], 2);
    assert_int_equal(acc[1], 3);
    assert_int_equal(acc[2], 2);
}

/* ---- Records, byte for byte -------------------------------------------------------------- */

static void test_record_bytes_v3_by_hand(void **state)
{
    fixture_t *f = *state;
    /* OffsetCommitKey (record type 1): group, topic as int16-length strings, int32 partition.
     * OffsetCommitValue v3: int64 offset, int32 leaderEpoch, string metadata, int64
     * commitTimestamp. Worked out from the schemas, not from the encoder. */
    static const uint8_t key[] = {
        0x00, 0x01,                  /* record type / key version 1 */
        0x00, 0x03, 'g',  'r',  'p', /* group "grp" */
        0x00, 0x03, 'f',  'o',  'o', /* topic "foo" */
        0x00, 0x00, 0x00, 0x01,      /* partition 1 */
    };
    static const uint8_t value[] = {
        0x00, 0x03,                                     /* value version 3 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, /* offset 100 */
        0x00, 0x00, 0x00, 0x0a,                         /* leader epoch 10 */
        0x00, 0x02, 'm',  'd',                          /* metadata "md" */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xd2, /* commit timestamp 1234 */
    };
    assert_int_equal(commit(f, "grp", "foo", 1, off(100, 10, "md", 1234)), 0);
    assert_int_equal(f->n, 1);
    assert_int_equal(f->recs[0].key_len, sizeof(key));
    assert_memory_equal(f->recs[0].key, key, sizeof(key));
    assert_int_equal(f->recs[0].value_len, sizeof(value));
    assert_memory_equal(f->recs[0].value, value, sizeof(value));

    /* Its tombstone: the same key, no value. */
    assert_true(kc_offsets_delete(f->o, KC_STR_LIT("grp"), KC_STR_LIT("foo"), 1));
    assert_int_equal(f->n, 2);
    assert_int_equal(f->recs[1].key_len, sizeof(key));
    assert_memory_equal(f->recs[1].key, key, sizeof(key));
    assert_null(f->recs[1].value);

    /* Negative numbers are two's complement, big-endian. */
    static const uint8_t value2[] = {
        0x00, 0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* offset -1 */
        0xff, 0xff, 0xff, 0xff,                                     /* leader epoch -1 */
        0x00, 0x00,                                                 /* metadata "" */
        0x00, 0x00, 0x01, 0x8f, 0x4d, 0xf7, 0x47, 0x80,             /* 1715000002432 */
    };
    assert_int_equal(commit(f, "grp", "foo", 1, off(-1, -1, NULL, INT64_C(1715000002432))), 0);
    assert_int_equal(f->recs[2].value_len, sizeof(value2));
    assert_memory_equal(f->recs[2].value, value2, sizeof(value2));
}

static void test_record_bytes_v1_by_hand(void **state)
{
    fixture_t *f = *state;
    /* With an explicit expire timestamp Kafka writes OffsetCommitValue v1: int64 offset, string
     * metadata, int64 commitTimestamp, int64 expireTimestamp (no leader epoch). */
    static const uint8_t key[] = {
        0x00, 0x01, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x07,
    };
    static const uint8_t value[] = {
        0x00, 0x01,                                     /* value version 1 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, /* offset 42 */
        0x00, 0x01, 'z',                                /* metadata "z" */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* commit timestamp 1000 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0xd0, /* expire timestamp 2000 */
    };
    kc_offset_t v = {42, 9, KC_STR_LIT("z"), 1000, 2000};
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 7, &v), 0);
    assert_int_equal(f->recs[0].key_len, sizeof(key));
    assert_memory_equal(f->recs[0].key, key, sizeof(key));
    assert_int_equal(f->recs[0].value_len, sizeof(value));
    assert_memory_equal(f->recs[0].value, value, sizeof(value));
    /* v1 cannot carry the leader epoch, so memory drops it too (memory == log). */
    const kc_offset_t *got = get(f, "g", "t", 7);
    assert_int_equal(got->leader_epoch, -1);
    assert_int_equal(got->expire_ts_ms, 2000);
    assert_int_equal(got->commit_ts_ms, 1000);

    /* An overwrite without expire timestamp goes back to v3. */
    assert_int_equal(commit(f, "g", "t", 7, off(43, 9, "", 1100)), 0);
    kc_offset_commit_value_t m;
    assert_int_equal(rec_value(&f->recs[1], &m), 3);
    assert_int_equal(get(f, "g", "t", 7)->expire_ts_ms, -1);
    assert_int_equal(get(f, "g", "t", 7)->leader_epoch, 9);
}

static void test_records_decode_every_field(void **state)
{
    fixture_t *f = *state;
    char g[32], t[32], md[64];
    for (int i = 0; i < 200; i++) {
        snprintf(g, sizeof(g), "group-%d", i % 7);
        snprintf(t, sizeof(t), "topic.%d", i % 5);
        if (i % 3 != 0)
            snprintf(md, sizeof(md), "meta-%d", i);
        else
            md[0] = '\0';
        kc_offset_t v = {
            .offset = (int64_t)i * 1000003 - 17,
            .leader_epoch = i % 4 ? i : -1,
            .metadata = kc_str_c(md),
            .commit_ts_ms = INT64_C(1700000000000) + i,
            .expire_ts_ms = i % 5 == 0 ? INT64_C(1800000000000) + i : -1,
        };
        assert_int_equal(kc_offsets_commit(f->o, kc_str_c(g), kc_str_c(t), i % 11, &v), 0);
        assert_int_equal(f->n, (size_t)i + 1);
        const rec_t *r = &f->recs[i];
        kc_offset_commit_key_t k = rec_key(r);
        assert_true(kc_str_eq_c(k.group, g));
        assert_true(kc_str_eq_c(k.topic, t));
        assert_int_equal(k.partition, i % 11);
        kc_offset_commit_value_t m;
        int16_t ver = rec_value(r, &m);
        assert_int_equal(m.offset, v.offset);
        assert_true(kc_str_eq_c(m.metadata, md));
        assert_int_equal(m.commit_timestamp, v.commit_ts_ms);
        if (v.expire_ts_ms != -1) {
            assert_int_equal(ver, 1);
            assert_int_equal(m.expire_timestamp, v.expire_ts_ms);
            assert_int_equal(m.leader_epoch, -1); /* absent in v1: the default */
        } else {
            assert_int_equal(ver, 3);
            assert_int_equal(m.leader_epoch, v.leader_epoch);
            assert_int_equal(m.expire_timestamp, -1); /* absent in v3: the default */
        }
        /* The store holds what the record says. */
        const kc_offset_t *got = kc_offsets_get(f->o, kc_str_c(g), kc_str_c(t), i % 11);
        assert_int_equal(got->offset, m.offset);
        assert_int_equal(got->leader_epoch, m.leader_epoch);
        assert_true(kc_str_eq(got->metadata, m.metadata));
        assert_int_equal(got->commit_ts_ms, m.commit_timestamp);
        assert_int_equal(got->expire_ts_ms, m.expire_timestamp);
    }
}

static void test_invalid_strings(void **state)
{
    fixture_t *f = *state;
    size_t big = 32768;
    char *s = malloc(big);
    assert_non_null(s);
    memset(s, 'a', big);
    kc_offset_t v = off(1, -1, "", 0);
    kc_str_t too_long = {s, 32768}, longest = {s, 32767};
    assert_int_equal(kc_offsets_commit(f->o, too_long, KC_STR_LIT("t"), 0, &v), -2);
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), too_long, 0, &v), -2);
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_NULL, KC_STR_LIT("t"), 0, &v), -2);
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_NULL, 0, &v), -2);
    v.metadata = too_long;
    assert_int_equal(kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &v), -2);
    assert_int_equal(f->n, 0);
    assert_int_equal(kc_offsets_total(f->o), 0);

    /* The longest strings that fit, and their tombstone (no allocation on delete). */
    v.metadata = longest;
    assert_int_equal(kc_offsets_commit(f->o, longest, longest, 0, &v), 0);
    assert_int_equal(f->recs[0].key_len, 2 + 2 + 32767 + 2 + 32767 + 4);
    assert_int_equal(kc_offsets_get(f->o, longest, longest, 0)->metadata.len, 32767);
    kc_offsets__alloc_budget = 0;
    assert_true(kc_offsets_delete(f->o, longest, longest, 0));
    kc_offsets__alloc_budget = -1;
    assert_int_equal(f->recs[1].key_len, 2 + 2 + 32767 + 2 + 32767 + 4);
    assert_memory_equal(f->recs[1].key, f->recs[0].key, f->recs[0].key_len);
    free(s);
}

/* ---- Expiry (KIP-211) ---------------------------------------------------------------------- */

typedef struct policy_s {
    const char *not_expirable; /* group whose offsets must not expire */
    const char *base_group;    /* group with a base timestamp (Empty since base_ms) */
    int64_t base_ms;
    const char *protected_group; /* in that group ... */
    const char *protected_topic; /* ... this topic is subscribed */
    int policy_calls;
    int protected_calls;
    char emptied[16][32];       /* the first 16 groups emptied */
    size_t emptied_records[16]; /* records written when emptied was called */
    int n_emptied;              /* all of them */
    fixture_t *f;
} policy_t;

static bool is_protected(void *arg, kc_str_t group, kc_str_t topic)
{
    policy_t *p = arg;
    p->protected_calls++;
    return p->protected_group != NULL && kc_str_eq_c(group, p->protected_group) &&
           kc_str_eq_c(topic, p->protected_topic);
}

static void policy(void *arg, kc_str_t group, kc_offsets_retention_t *out)
{
    policy_t *p = arg;
    p->policy_calls++;
    /* The store presets the answer. */
    assert_false(out->expirable);
    assert_int_equal(out->base_ms, -1);
    assert_null(out->protected_topic);
    out->expirable = p->not_expirable == NULL || !kc_str_eq_c(group, p->not_expirable);
    if (p->base_group != NULL && kc_str_eq_c(group, p->base_group))
        out->base_ms = p->base_ms;
    out->protected_topic = is_protected;
    out->arg = p;
}

static void emptied(void *arg, kc_str_t group)
{
    policy_t *p = arg;
    assert_true(group.len > 0 && group.len < 32);
    if (p->n_emptied < 16) { /* keep the first 16, count them all */
        memcpy(p->emptied[p->n_emptied], group.p, (size_t)group.len);
        p->emptied[p->n_emptied][group.len] = '\0';
        p->emptied_records[p->n_emptied] = p->f->n;
    }
    p->n_emptied++;
    /* The group is already gone from the store. */
    assert_int_equal(kc_offsets_count(p->f->o, group), 0);
}

static size_t expire(fixture_t *f, policy_t *p, int64_t now, int64_t retention)
{
    p->f = f;
    return kc_offsets_expire(f->o, now, retention, policy, emptied, p);
}

static void test_expire_commit_time(void **state)
{
    fixture_t *f = *state;
    policy_t p = {0};
    commit(f, "g", "t", 0, off(1, -1, "", 0));
    commit(f, "g", "t", 1, off(1, -1, "", 500));
    recs_clear(f);

    assert_int_equal(expire(f, &p, 999, 1000), 0);
    assert_int_equal(f->n, 0);
    assert_int_equal(p.policy_calls, 1);
    /* now - commit >= retention: exactly at the boundary it expires. */
    assert_int_equal(expire(f, &p, 1000, 1000), 1);
    assert_int_equal(f->n, 1);
    assert_tombstone(&f->recs[0], "g", "t", 0);
    assert_null(get(f, "g", "t", 0));
    assert_int_equal(p.n_emptied, 0); /* one offset left */
    assert_int_equal(expire(f, &p, 1499, 1000), 0);
    assert_int_equal(expire(f, &p, 1500, 1000), 1);
    assert_tombstone(&f->recs[1], "g", "t", 1);
    assert_int_equal(p.n_emptied, 1);
    assert_string_equal(p.emptied[0], "g");
    assert_int_equal(p.emptied_records[0], 2); /* after the group's tombstones */
    assert_int_equal(kc_offsets_groups(f->o), 0);
    /* Nothing left: no more calls at all. */
    int calls = p.policy_calls;
    assert_int_equal(expire(f, &p, 100000, 1000), 0);
    assert_int_equal(p.policy_calls, calls);
    assert_int_equal(p.n_emptied, 1);
}

static void test_expire_base_ms(void **state)
{
    fixture_t *f = *state;
    /* An Empty classic group: retention counts from when it became Empty (its
     * currentStateTimestamp), for every offset, whenever it was committed. */
    policy_t p = {.base_group = "empty", .base_ms = 2000};
    commit(f, "empty", "t", 0, off(1, -1, "", 0));    /* committed long before */
    commit(f, "empty", "t", 1, off(1, -1, "", 2500)); /* committed after the base */
    commit(f, "simple", "t", 0, off(1, -1, "", 0));   /* no base: commit time */
    recs_clear(f);

    assert_int_equal(expire(f, &p, 1000, 1000), 1); /* only "simple" */
    assert_int_equal(f->n, 1);
    assert_tombstone(&f->recs[0], "simple", "t", 0);
    assert_int_equal(p.n_emptied, 1);
    assert_string_equal(p.emptied[0], "simple");
    assert_int_equal(expire(f, &p, 2999, 1000), 0);
    assert_int_equal(count(f, "empty"), 2);
    assert_int_equal(expire(f, &p, 3000, 1000), 2);
    assert_tombstone(&f->recs[1], "empty", "t", 0);
    assert_tombstone(&f->recs[2], "empty", "t", 1);
    assert_int_equal(p.n_emptied, 2);
    assert_string_equal(p.emptied[1], "empty");
}

static void test_expire_explicit_timestamp(void **state)
{
    fixture_t *f = *state;
    policy_t p = {.base_group = "g", .base_ms = 0};
    /* Explicit expire timestamps win over the retention, either way, and over base_ms. */
    kc_offset_t late = {1, -1, KC_STR_EMPTY, 0, 5000};
    kc_offset_t early = {1, -1, KC_STR_EMPTY, 0, 50};
    kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("late"), 0, &late);
    kc_offsets_commit(f->o, KC_STR_LIT("g"), KC_STR_LIT("early"), 0, &early);
    recs_clear(f);

    assert_int_equal(expire(f, &p, 49, 1000), 0);
    assert_int_equal(expire(f, &p, 50, 1000), 1); /* now >= expire timestamp */
    assert_tombstone(&f->recs[0], "g", "early", 0);
    /* Retention (and base 0) long passed, but the explicit timestamp has not. */
    assert_int_equal(expire(f, &p, 4999, 100), 0);
    assert_int_equal(expire(f, &p, 5000, 100), 1);
    assert_tombstone(&f->recs[1], "g", "late", 0);
    assert_int_equal(p.n_emptied, 1);
}

static void test_expire_protected_topics(void **state)
{
    fixture_t *f = *state;
    policy_t p = {.protected_group = "live", .protected_topic = "sub"};
    commit(f, "live", "sub", 0, off(1, -1, "", 0));
    commit(f, "live", "sub", 1, off(1, -1, "", 0));
    commit(f, "live", "old", 0, off(1, -1, "", 0));
    commit(f, "other", "sub", 0, off(1, -1, "", 0)); /* protected only in "live" */
    recs_clear(f);

    assert_int_equal(expire(f, &p, 10000, 1000), 2);
    assert_int_equal(f->n, 2);
    assert_non_null(get(f, "live", "sub", 0));
    assert_non_null(get(f, "live", "sub", 1));
    assert_null(get(f, "live", "old", 0));
    assert_null(get(f, "other", "sub", 0));
    assert_int_equal(p.n_emptied, 1); /* "live" keeps offsets: not emptied */
    assert_string_equal(p.emptied[0], "other");
    /* Asked once per topic of each expirable group. */
    assert_int_equal(p.protected_calls, 3);
    assert_int_equal(expire(f, &p, 1000000, 1000), 0);
    assert_int_equal(count(f, "live"), 2);
}

static void test_expire_not_expirable(void **state)
{
    fixture_t *f = *state;
    policy_t p = {.not_expirable = "rebalancing"};
    commit(f, "rebalancing", "t", 0, off(1, -1, "", 0));
    kc_offset_t v = {1, -1, KC_STR_EMPTY, 0, 10}; /* even an explicit expire timestamp */
    kc_offsets_commit(f->o, KC_STR_LIT("rebalancing"), KC_STR_LIT("t"), 1, &v);
    commit(f, "stable", "t", 0, off(1, -1, "", 0));
    recs_clear(f);

    assert_int_equal(expire(f, &p, 1000000, 1000), 1);
    assert_int_equal(f->n, 1);
    assert_tombstone(&f->recs[0], "stable", "t", 0);
    assert_int_equal(count(f, "rebalancing"), 2);
    assert_int_equal(p.policy_calls, 2);
    assert_int_equal(p.protected_calls, 1); /* never asked for the unexpirable group */
    assert_int_equal(p.n_emptied, 1);
    assert_string_equal(p.emptied[0], "stable");
}

static void test_expire_emptied_many_groups(void **state)
{
    fixture_t *f = *state;
    policy_t p = {0};
    /* a: all old; b: one old, one new; c: all new; d: all old across two topics. */
    commit(f, "a", "t", 0, off(1, -1, "", 0));
    commit(f, "a", "t", 1, off(1, -1, "", 0));
    commit(f, "b", "t", 0, off(1, -1, "", 0));
    commit(f, "b", "t", 1, off(1, -1, "", 900));
    commit(f, "c", "t", 0, off(1, -1, "", 900));
    commit(f, "d", "x", 3, off(1, -1, "", 0));
    commit(f, "d", "w", 2, off(1, -1, "", 0));
    recs_clear(f);

    assert_int_equal(expire(f, &p, 1000, 500), 5);
    assert_int_equal(f->n, 5);
    assert_int_equal(p.n_emptied, 2);
    bool a = false, d = false;
    for (int i = 0; i < p.n_emptied; i++) {
        a |= strcmp(p.emptied[i], "a") == 0;
        d |= strcmp(p.emptied[i], "d") == 0;
    }
    assert_true(a && d);
    assert_int_equal(count(f, "b"), 1);
    assert_non_null(get(f, "b", "t", 1));
    assert_int_equal(count(f, "c"), 1);
    assert_int_equal(kc_offsets_total(f->o), 2);
    assert_int_equal(kc_offsets_groups(f->o), 2);
    /* Each group's tombstones come together, topics by name then partitions, and its
     * emptied call right after them. */
    for (size_t i = 0; i < f->n; i++) {
        kc_offset_commit_key_t k = rec_key(&f->recs[i]);
        if (kc_str_eq_c(k.group, "d")) {
            assert_true(i + 1 < f->n);
            assert_tombstone(&f->recs[i], "d", "w", 2);
            assert_tombstone(&f->recs[i + 1], "d", "x", 3);
            for (int e = 0; e < p.n_emptied; e++)
                if (strcmp(p.emptied[e], "d") == 0)
                    assert_int_equal(p.emptied_records[e], i + 2);
            break;
        }
    }

    /* A NULL policy: every group expirable from commit times; NULL emptied is fine. */
    assert_int_equal(kc_offsets_expire(f->o, 1400, 500, NULL, NULL, NULL), 2);
    assert_int_equal(kc_offsets_total(f->o), 0);
    assert_int_equal(kc_offsets_groups(f->o), 0);
}

static void test_expire_extreme_times(void **state)
{
    fixture_t *f = *state;
    policy_t p = {0};
    commit(f, "g", "future", 0, off(1, -1, "", INT64_MAX));
    commit(f, "g", "past", 0, off(1, -1, "", INT64_MIN));
    /* now - commit would overflow both ways; no UB, and the obvious answers. */
    assert_int_equal(expire(f, &p, INT64_MIN, 1), 0);
    assert_int_equal(expire(f, &p, INT64_MAX, INT64_MAX), 1);
    assert_null(get(f, "g", "past", 0));
    assert_non_null(get(f, "g", "future", 0));
    assert_int_equal(expire(f, &p, INT64_MAX, 0), 1);
    assert_int_equal(kc_offsets_total(f->o), 0);
}

/* ---- Replay ---------------------------------------------------------------------------------- */

static void assert_same_group(kc_offsets_t *a, kc_offsets_t *b, kc_str_t group)
{
    seen_list_t la = {0}, lb = {0};
    kc_offsets_each(a, group, collect, &la);
    kc_offsets_each(b, group, collect, &lb);
    assert_int_equal(la.n, lb.n);
    for (size_t i = 0; i < la.n; i++) {
        assert_string_equal(la.v[i].topic, lb.v[i].topic);
        assert_int_equal(la.v[i].partition, lb.v[i].partition);
        kc_str_t t = kc_str_c(la.v[i].topic);
        const kc_offset_t *x = kc_offsets_get(a, group, t, la.v[i].partition);
        const kc_offset_t *y = kc_offsets_get(b, group, t, la.v[i].partition);
        assert_int_equal(x->offset, y->offset);
        assert_int_equal(x->leader_epoch, y->leader_epoch);
        assert_true(kc_str_eq(x->metadata, y->metadata));
        assert_int_equal(x->commit_ts_ms, y->commit_ts_ms);
        assert_int_equal(x->expire_ts_ms, y->expire_ts_ms);
    }
    free(la.v);
    free(lb.v);
}

static void test_replay_equals_memory(void **state)
{
    fixture_t *f = *state;
    char g[16], t[16], md[16];
    for (int i = 0; i < 300; i++) {
        snprintf(g, sizeof(g), "g%d", i % 9);
        snprintf(t, sizeof(t), "t%d", i % 4);
        snprintf(md, sizeof(md), "m%d", i);
        kc_offset_t v = {i, i % 3 ? i : -1, kc_str_c(md), 1000 + i, i % 7 == 0 ? 5000 + i : -1};
        assert_int_equal(kc_offsets_commit(f->o, kc_str_c(g), kc_str_c(t), i % 13, &v), 0);
        if (i % 10 == 9)
            kc_offsets_delete(f->o, kc_str_c(g), kc_str_c(t), (i + 1) % 13);
    }
    kc_offsets_delete_group(f->o, KC_STR_LIT("g3"));
    kc_offsets_delete_topic(f->o, KC_STR_LIT("t2"));
    policy_t p = {0};
    expire(f, &p, 1100, 0); /* commits before 1100 go: some groups empty out */

    fixture_t f2 = {0};
    kc_offsets_ops_t ops = {&f2, on_record};
    f2.o = kc_offsets_new(&ops);
    assert_non_null(f2.o);
    for (size_t i = 0; i < f->n; i++)
        assert_int_equal(kc_offsets_replay(f2.o, f->recs[i].key, f->recs[i].key_len,
                                           f->recs[i].value, f->recs[i].value_len),
                         0);
    assert_int_equal(f2.n, 0); /* replay writes nothing */
    assert_int_equal(kc_offsets_total(f2.o), kc_offsets_total(f->o));
    assert_int_equal(kc_offsets_groups(f2.o), kc_offsets_groups(f->o));
    for (int i = 0; i < 9; i++) {
        snprintf(g, sizeof(g), "g%d", i);
        assert_int_equal(kc_offsets_count(f2.o, kc_str_c(g)), kc_offsets_count(f->o, kc_str_c(g)));
        assert_same_group(f->o, f2.o, kc_str_c(g));
    }
    kc_offsets_free(f2.o);
}

static void test_replay_versions(void **state)
{
    fixture_t *f = *state;
    static const uint8_t key0[] = {0x00, 0x00, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0, 0, 0, 0};
    static const uint8_t key1[] = {0x00, 0x01, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0, 0, 0, 1};
    static const uint8_t key2[] = {0x00, 0x01, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0, 0, 0, 2};
    static const uint8_t key3[] = {0x00, 0x01, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0, 0, 0, 3};
    /* v0: offset, metadata, commit timestamp. */
    static const uint8_t v0[] = {0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 5, 0x00,
                                 0x01, 'a',  0, 0, 0, 0, 0, 0, 0, 9};
    /* v2: same fields as v0. */
    static const uint8_t v2[] = {0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 6,
                                 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 8};
    /* v4 (Kafka 4.1+): offset, epoch, compact metadata, commit timestamp, tagged fields with
     * the topic id as tag 0. */
    static const uint8_t v4[] = {
        0x00, 0x04, 0,    0,    0,    0, 0, 0, 0, 7, 0, 0, 0, 3, 0x02, 'b', 0,  0,  0,  0,  0,  0,
        0,    11,   0x01, 0x00, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,   11,  12, 13, 14, 15, 16,
    };
    /* v1 with expire timestamp -1: no explicit expiry. */
    static const uint8_t v1[] = {0x00, 0x01, 0,    0,    0,    0,    0,    0,   0, 8,
                                 0x00, 0x00, 0,    0,    0,    0,    0,    0,   0, 12,
                                 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(kc_offsets_replay(f->o, key0, sizeof(key0), v0, sizeof(v0)), 0);
    assert_int_equal(kc_offsets_replay(f->o, key1, sizeof(key1), v2, sizeof(v2)), 0);
    assert_int_equal(kc_offsets_replay(f->o, key2, sizeof(key2), v4, sizeof(v4)), 0);
    assert_int_equal(kc_offsets_replay(f->o, key3, sizeof(key3), v1, sizeof(v1)), 0);
    assert_int_equal(f->n, 0);
    const kc_offset_t *x = get(f, "g", "t", 0);
    assert_int_equal(x->offset, 5);
    assert_int_equal(x->leader_epoch, -1);
    assert_true(kc_str_eq_c(x->metadata, "a"));
    assert_int_equal(x->commit_ts_ms, 9);
    assert_int_equal(x->expire_ts_ms, -1);
    x = get(f, "g", "t", 1);
    assert_int_equal(x->offset, 6);
    assert_int_equal(x->commit_ts_ms, 8);
    x = get(f, "g", "t", 2);
    assert_int_equal(x->offset, 7);
    assert_int_equal(x->leader_epoch, 3);
    assert_true(kc_str_eq_c(x->metadata, "b"));
    assert_int_equal(x->commit_ts_ms, 11);
    x = get(f, "g", "t", 3);
    assert_int_equal(x->offset, 8);
    assert_int_equal(x->expire_ts_ms, -1);

    /* A tombstone through replay: removed silently; unknown keys are no-ops. */
    assert_int_equal(kc_offsets_replay(f->o, key0, sizeof(key0), NULL, 0), 0);
    assert_null(get(f, "g", "t", 0));
    assert_int_equal(kc_offsets_replay(f->o, key0, sizeof(key0), NULL, 0), 0);
    assert_int_equal(f->n, 0);
    /* Replayed offsets can be deleted with tombstones afterwards (their key size is known). */
    kc_offsets__alloc_budget = 0;
    assert_int_equal(kc_offsets_delete_group(f->o, KC_STR_LIT("g")), 3);
    kc_offsets__alloc_budget = -1;
    assert_int_equal(f->n, 3);
    assert_tombstone(&f->recs[0], "g", "t", 1);

    /* Malformed input changes nothing. */
    static const uint8_t group_key[] = {0x00, 0x02, 0x00, 0x01, 'g'}; /* GroupMetadataKey */
    static const uint8_t short_key[] = {0x00, 0x01, 0x00, 0x05, 'g'};
    static const uint8_t bad_ver[] = {0x00, 0x05, 0, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(kc_offsets_replay(f->o, group_key, sizeof(group_key), v0, sizeof(v0)), -2);
    assert_int_equal(kc_offsets_replay(f->o, short_key, sizeof(short_key), v0, sizeof(v0)), -2);
    assert_int_equal(kc_offsets_replay(f->o, key1, 1, NULL, 0), -2);
    assert_int_equal(kc_offsets_replay(f->o, key1, sizeof(key1), bad_ver, sizeof(bad_ver)), -2);
    assert_int_equal(kc_offsets_replay(f->o, key1, sizeof(key1), v0, sizeof(v0) - 1), -2);
    assert_int_equal(kc_offsets_replay(f->o, key1, sizeof(key1), v0, 1), -2);
    assert_int_equal(kc_offsets_total(f->o), 0);
    assert_int_equal(f->n, 3);
}

/* ---- Out of memory ----------------------------------------------------------------------------
 */

/* Commit (g, t, p) with a budget that grows from 0 until it succeeds; every failure must
 * leave the store and the record stream as they were. Returns the allocations it needed. */
static long commit_until_ok(fixture_t *f, const char *g, const char *t, int32_t p, kc_offset_t v)
{
    const kc_offset_t *before = get(f, g, t, p);
    int64_t before_offset = before ? before->offset : -12345;
    size_t total = kc_offsets_total(f->o), groups = kc_offsets_groups(f->o);
    size_t nrec = f->n;
    bool had_topic = kc_offsets_has_topic(f->o, kc_str_c(g), kc_str_c(t));
    for (long budget = 0; budget < 100; budget++) {
        kc_offsets__alloc_budget = budget;
        int rc = commit(f, g, t, p, v);
        kc_offsets__alloc_budget = -1;
        if (rc == 0) {
            assert_int_equal(f->n, nrec + 1);
            return budget;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(f->n, nrec);
        assert_int_equal(kc_offsets_total(f->o), total);
        assert_int_equal(kc_offsets_groups(f->o), groups);
        const kc_offset_t *now = get(f, g, t, p);
        assert_int_equal(now ? now->offset : -12345, before_offset);
        assert_int_equal(kc_offsets_has_topic(f->o, kc_str_c(g), kc_str_c(t)), had_topic);
    }
    fail_msg("commit never succeeded");
    return -1;
}

static void test_out_of_memory(void **state)
{
    fixture_t *f = *state;
    /* A new group, topic and partition with metadata: several allocations, each may fail. */
    long n = commit_until_ok(f, "g", "t", 0, off(1, -1, "meta", 0));
    assert_true(n >= 5);
    assert_int_equal(get(f, "g", "t", 0)->offset, 1);
    /* New topic in an existing group, new partition in an existing topic, an overwrite. */
    commit_until_ok(f, "g", "u", 0, off(2, -1, "", 0));
    assert_false(kc_offsets_has_topic(f->o, KC_STR_LIT("g"), KC_STR_LIT("v")));
    commit_until_ok(f, "g", "u", 1, off(3, -1, "", 0));
    commit_until_ok(f, "g", "u", 1, off(4, -1, "longer metadata", 0));
    assert_int_equal(get(f, "g", "u", 1)->offset, 4);
    /* Many new groups: the map grows under failure too. */
    char g[16];
    for (int i = 0; i < 40; i++) {
        snprintf(g, sizeof(g), "grp-%d", i);
        commit_until_ok(f, g, "t", 0, off(i, -1, "", 0));
    }
    assert_int_equal(kc_offsets_groups(f->o), 41);
    assert_int_equal(kc_offsets_total(f->o), 43);
    /* A budget of zero after the fact: overwrites with no metadata still need nothing new. */
    kc_offsets__alloc_budget = 0;
    assert_int_equal(commit(f, "g", "t", 0, off(9, -1, "", 0)), 0);
    assert_int_equal(commit(f, "g", "t", 99, off(9, -1, "", 0)), 0); /* spare capacity */
    assert_int_equal(commit(f, "new", "t", 0, off(9, -1, "", 0)), -1);
    /* Deletes, expiry and group deletion never allocate. */
    assert_true(kc_offsets_delete(f->o, KC_STR_LIT("g"), KC_STR_LIT("t"), 99));
    assert_int_equal(kc_offsets_delete_topic(f->o, KC_STR_LIT("u")), 2);
    assert_int_equal(kc_offsets_delete_group(f->o, KC_STR_LIT("grp-0")), 1);
    assert_int_equal(kc_offsets_expire(f->o, 1000, 0, NULL, NULL, NULL), 40);
    kc_offsets__alloc_budget = -1;
    assert_int_equal(kc_offsets_total(f->o), 0);

    /* Replay under failure: -1 and nothing changed. */
    static const uint8_t key[] = {0x00, 0x01, 0x00, 0x01, 'r', 0x00, 0x01, 't', 0, 0, 0, 0};
    static const uint8_t val[] = {0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 5, 0x00,
                                  0x01, 'a',  0, 0, 0, 0, 0, 0, 0, 9};
    long budget = 0;
    for (;; budget++) {
        kc_offsets__alloc_budget = budget;
        int rc = kc_offsets_replay(f->o, key, sizeof(key), val, sizeof(val));
        kc_offsets__alloc_budget = -1;
        if (rc == 0)
            break;
        assert_int_equal(rc, -1);
        assert_int_equal(kc_offsets_total(f->o), 0);
        assert_true(budget < 100);
    }
    assert_int_equal(get(f, "r", "t", 0)->offset, 5);

    /* kc_offsets_new itself. */
    kc_offsets__alloc_budget = 0;
    assert_null(kc_offsets_new(NULL));
    kc_offsets__alloc_budget = -1;
    kc_offsets_free(NULL);
}

/* ---- Scale ---------------------------------------------------------------------------------- */

static void test_many_groups_and_offsets(void **state)
{
    fixture_t *f = *state;
    enum { GROUPS = 10000, BIG = 10000 };
    char g[32], t[32];
    /* 10k groups, three offsets each over two topics. */
    for (int i = 0; i < GROUPS; i++) {
        snprintf(g, sizeof(g), "consumer-group-%d", i);
        for (int j = 0; j < 3; j++) {
            snprintf(t, sizeof(t), "topic-%d", (i + j) % 2);
            assert_int_equal(commit(f, g, t, j, off((int64_t)i * 10 + j, -1, "", i)), 0);
        }
    }
    /* One group with 10k partitions committed in a scrambled order. */
    for (int k = 0; k < BIG; k++) {
        int32_t p = (int32_t)(((uint32_t)k * 7919u) % BIG);
        assert_int_equal(commit(f, "big", "wide", p, off(p, -1, "", 0)), 0);
    }
    assert_int_equal(kc_offsets_groups(f->o), GROUPS + 1);
    assert_int_equal(kc_offsets_total(f->o), GROUPS * 3 + BIG);
    assert_int_equal(count(f, "big"), BIG);
    for (int i = 0; i < GROUPS; i++) {
        snprintf(g, sizeof(g), "consumer-group-%d", i);
        assert_int_equal(count(f, g), 3);
        for (int j = 0; j < 3; j++) {
            snprintf(t, sizeof(t), "topic-%d", (i + j) % 2);
            const kc_offset_t *v = get(f, g, t, j);
            assert_non_null(v);
            assert_int_equal(v->offset, (int64_t)i * 10 + j);
        }
        snprintf(t, sizeof(t), "topic-%d", (i + 1) % 2);
        assert_null(get(f, g, t, 0)); /* partition 0 is only in topic (i % 2) */
    }
    seen_list_t l = {0};
    kc_offsets_each(f->o, KC_STR_LIT("big"), collect, &l);
    assert_int_equal(l.n, BIG);
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(l.v[i].partition, (int32_t)i);
        assert_int_equal(l.v[i].offset, (int64_t)i);
    }
    free(l.v);

    /* Delete every even group, then one topic everywhere, then expire the rest. */
    recs_clear(f);
    for (int i = 0; i < GROUPS; i += 2) {
        snprintf(g, sizeof(g), "consumer-group-%d", i);
        assert_int_equal(kc_offsets_delete_group(f->o, kc_str_c(g)), 3);
    }
    assert_int_equal(f->n, (GROUPS / 2) * 3);
    assert_int_equal(kc_offsets_groups(f->o), GROUPS / 2 + 1);
    for (int i = 0; i < GROUPS; i++) {
        snprintf(g, sizeof(g), "consumer-group-%d", i);
        assert_int_equal(count(f, g), i % 2 ? 3 : 0);
    }
    /* Odd groups: topic-1 holds partitions 0 and 2, topic-0 partition 1. */
    assert_int_equal(kc_offsets_delete_topic(f->o, KC_STR_LIT("topic-1")), (GROUPS / 2) * 2);
    assert_int_equal(kc_offsets_groups(f->o), GROUPS / 2 + 1);
    assert_int_equal(kc_offsets_total(f->o), GROUPS / 2 + BIG);
    /* Re-add even groups after all those map tombstones. */
    for (int i = 0; i < GROUPS; i += 2) {
        snprintf(g, sizeof(g), "consumer-group-%d", i);
        assert_int_equal(commit(f, g, "again", 0, off(i, -1, "", 1000000)), 0);
    }
    assert_int_equal(kc_offsets_groups(f->o), GROUPS + 1);
    for (int i = 0; i < GROUPS; i++) {
        snprintf(g, sizeof(g), "consumer-group-%d", i);
        assert_int_equal(count(f, g), 1);
    }
    policy_t p = {.not_expirable = "big"};
    recs_clear(f);
    /* Odd groups committed at time i < 10000; the new even ones at 1000000. */
    assert_int_equal(expire(f, &p, 20000, 10000), GROUPS / 2);
    assert_int_equal(f->n, GROUPS / 2);
    assert_int_equal(kc_offsets_groups(f->o), GROUPS / 2 + 1);
    assert_int_equal(count(f, "big"), BIG);
    /* emptied was called once for every odd group. */
    assert_int_equal(p.n_emptied, GROUPS / 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_get_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_ownership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iteration_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_has_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_bytes_v3_by_hand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_bytes_v1_by_hand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_decode_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_commit_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_base_ms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_explicit_timestamp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_protected_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_not_expirable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_emptied_many_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_extreme_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_equals_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_groups_and_offsets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
