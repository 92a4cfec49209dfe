/* test_cluster_coord.c - the coordinator of a cluster node, driven through the callbacks raft
 * calls (kc_coord_cluster_ops) without raft: committed batches applied on a follower become its
 * state, a snapshot restored on another node gives the same state without the removed keys, the
 * logs are compacted as a single node's (a snapshot restored meanwhile waits for the compaction),
 * and a leader that loses its leadership drops what raft did not commit. The same for the
 * metadata partition (group configs, and the records the listener hands to the ACL and SCRAM
 * state). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/cluster.h"
#include "coord/coord.h"
#include "log/log.h"
#include "proto/errors.h"
#include "proto/gen_records.h"

typedef struct node_s {
    char dir[64];
    kc_conf_t conf;
    kc_catalog_t cat;
    uv_loop_t loop;
    kc_coord_t *c;
    kc_cluster_ops_t ops;
} node_t;

static void no_join(void *waiter, const kc_join_group_response_t *resp)
{
    (void)waiter, (void)resp;
}
static void no_sync(void *waiter, const kc_sync_group_response_t *resp)
{
    (void)waiter, (void)resp;
}
static const kc_coord_replies_t replies = {no_join, no_sync};

static void set(node_t *n, const char *key, const char *value)
{
    char err[256];
    assert_int_equal(kc_conf_set(&n->conf, key, value, KC_CONF_SRC_SET, err, sizeof(err)), 0);
}

static node_t *node_new_with(const char *const *extra);

static node_t *node_new(void)
{
    return node_new_with(NULL);
}

/* A node with extra "key", "value" settings (NULL-terminated). */
static node_t *node_new_with(const char *const *extra)
{
    node_t *n = calloc(1, sizeof(*n));
    snprintf(n->dir, sizeof(n->dir), "/tmp/kc-clcoord-XXXXXX");
    assert_non_null(mkdtemp(n->dir));
    kc_conf_init(&n->conf);
    set(n, "data.dir", n->dir);
    set(n, "offsets.topic.num.partitions", "3");
    set(n, "node.id", "1");
    set(n, "cluster.voters", "1@127.0.0.1:1,2@127.0.0.1:2,3@127.0.0.1:3");
    for (size_t i = 0; extra && extra[i]; i += 2)
        set(n, extra[i], extra[i + 1]);
    assert_int_equal(kc_catalog_init(&n->cat, "cluster", NULL, 0), 0);
    uv_loop_init(&n->loop);
    n->c = kc_coord_new(&n->loop, &n->conf, &n->cat, &replies, NULL);
    assert_non_null(n->c);
    kc_coord_cluster_ops(n->c, &n->ops);
    return n;
}

static int closed;
static void on_closed(void *arg)
{
    (void)arg;
    closed = 1;
}

static void node_free(node_t *n)
{
    closed = 0;
    kc_coord_close(n->c, on_closed, NULL);
    for (int i = 0; i < 100000 && !closed; i++)
        uv_run(&n->loop, UV_RUN_ONCE);
    assert_true(closed);
    assert_int_equal(uv_loop_close(&n->loop), 0);
    kc_catalog_free(&n->cat);
    kc_conf_free(&n->conf);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", n->dir);
    assert_int_equal(system(cmd), 0);
    free(n);
}

static void lead(node_t *n)
{
    n->ops.role(n->ops.ctx, KC_CLUSTER_LOADING);
    n->ops.role(n->ops.ctx, KC_CLUSTER_LEADER);
}

/* One OffsetCommit record (value NULL: its tombstone) as the leader's batch would carry it. */
typedef struct rec_s {
    kc_writer_t k, v;
} rec_t;

static void make_commit(rec_t *r, const char *group, const char *topic, int32_t part,
                        int64_t offset, bool tombstone)
{
    kc_wr_init(&r->k);
    kc_wr_init(&r->v);
    kc_offset_commit_key_t key = {kc_str_c(group), kc_str_c(topic), part};
    kc_wr_i16(&r->k, 1);
    kc_offset_commit_key_encode(&r->k, 1, &key);
    if (!tombstone) {
        kc_offset_commit_value_t v;
        kc_offset_commit_value_init(&v);
        v.offset = offset;
        v.leader_epoch = -1;
        v.metadata = KC_STR_EMPTY;
        v.commit_timestamp = 1000;
        kc_wr_i16(&r->v, 3);
        kc_offset_commit_value_encode(&r->v, 3, &v);
    }
}

/* Apply one committed batch of commits of `group` on `n` (as raft would, not the node's own). */
static void apply_commits(node_t *n, const char *group, const int64_t *offsets, size_t count,
                          bool tombstone_last)
{
    rec_t r[8];
    kc_log_record_t recs[8];
    assert_true(count <= 8);
    for (size_t i = 0; i < count; i++) {
        bool tomb = tombstone_last && i == count - 1;
        make_commit(&r[i], group, "t", (int32_t)i, offsets[i], tomb);
        recs[i] = (kc_log_record_t){.timestamp_ms = -1,
                                    .key = r[i].k.buf,
                                    .key_len = r[i].k.len,
                                    .value = tomb ? NULL : r[i].v.buf,
                                    .value_len = r[i].v.len};
    }
    uint8_t *batch;
    size_t len;
    assert_int_equal(kc_log_batch_build(recs, count, 5000, KC_LOG_CODEC_NONE, &batch, &len), 0);
    int32_t part = kc_partition_index(kc_coord_partition(n->c, kc_str_c(group)));
    n->ops.apply(n->ops.ctx, part, batch, len, false);
    free(batch);
    for (size_t i = 0; i < count; i++) {
        kc_wr_free(&r[i].k);
        kc_wr_free(&r[i].v);
    }
}

static int64_t fetched(node_t *n, const char *group, int32_t part)
{
    const kc_partition_t *p = kc_coord_partition(n->c, kc_str_c(group));
    const kc_offset_t *o = kc_shard_fetch_offset(p, kc_str_c(group), kc_str_c("t"), part);
    return o ? o->offset : -1;
}

static void test_follower_serves_nothing_then_leads_with_replayed_state(void **state)
{
    (void)state;
    node_t *n = node_new();
    kc_partition_t *p = kc_coord_partition(n->c, kc_str_c("g1"));
    assert_int_equal(kc_partition_error(p), KC_ERR_NOT_COORDINATOR);
    int64_t a[] = {10, 20, 30};
    apply_commits(n, "g1", a, 3, false);
    int64_t b[] = {11, 21};
    apply_commits(n, "g1", b, 2, false);
    assert_int_equal(kc_partition_error(p), KC_ERR_NOT_COORDINATOR);
    n->ops.role(n->ops.ctx, KC_CLUSTER_LOADING);
    assert_int_equal(kc_partition_error(p), KC_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    n->ops.role(n->ops.ctx, KC_CLUSTER_LEADER);
    assert_int_equal(kc_partition_error(p), KC_ERR_NONE);
    assert_int_equal(fetched(n, "g1", 0), 11);
    assert_int_equal(fetched(n, "g1", 1), 21);
    assert_int_equal(fetched(n, "g1", 2), 30);
    node_free(n);
}

static void test_snapshot_restores_the_live_records(void **state)
{
    (void)state;
    node_t *a = node_new();
    int64_t v1[] = {1, 2, 3};
    apply_commits(a, "g1", v1, 3, false);
    int64_t v2[] = {4, 5, 6};
    apply_commits(a, "g1", v2, 3, true); /* partition 2's offset removed */
    int64_t v3[] = {7};
    apply_commits(a, "other", v3, 1, false);
    uint8_t *snap;
    size_t len;
    assert_int_equal(a->ops.snapshot(a->ops.ctx, &snap, &len), 0);

    node_t *b = node_new();
    int64_t stale[] = {99, 99, 99};
    apply_commits(b, "g1", stale, 3, false); /* replaced by the snapshot */
    int64_t gone[] = {42};
    apply_commits(b, "gone", gone, 1, false);
    assert_int_equal(b->ops.restore(b->ops.ctx, snap, len), 0);
    lead(b);
    assert_int_equal(fetched(b, "g1", 0), 4);
    assert_int_equal(fetched(b, "g1", 1), 5);
    assert_int_equal(fetched(b, "g1", 2), -1);
    assert_int_equal(fetched(b, "other", 0), 7);
    assert_int_equal(fetched(b, "gone", 0), -1);
    /* What restore wrote is the partition log: a node restarted reads it back the same. */
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(kc_log_verify(b->dir, devnull), 0);
    fclose(devnull);

    /* A snapshot of the wrong shape is refused and changes nothing. */
    uint8_t junk[16] = {1, 2, 3};
    assert_int_not_equal(b->ops.restore(b->ops.ctx, junk, sizeof(junk)), 0);
    assert_int_equal(fetched(b, "g1", 0), 4);
    free(snap);
    node_free(a);
    node_free(b);
}

/* Bytes of the .log segments of partition `part` of node n. */
static long long log_bytes(node_t *n, int32_t part)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "cat %s/__consumer_offsets-%d/*.log 2>/dev/null | wc -c", n->dir,
             part);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    long long bytes = -1;
    assert_int_equal(fscanf(f, "%lld", &bytes), 1);
    pclose(f);
    return bytes;
}

/* A cluster node's logs grow with every applied entry; the cleaner compacts them as on a single
 * node. A snapshot restored while a compaction runs waits for it and wins: the state and the
 * log are the snapshot's. */
static void test_follower_compacts_and_restores_while_cleaning(void **state)
{
    (void)state;
    static const char *const extra[] = {"offsets.topic.segment.bytes", "1024",
                                        "log.cleaner.backoff.ms", "1", NULL};
    node_t *n = node_new_with(extra);
    int32_t part = kc_partition_index(kc_coord_partition(n->c, kc_str_c("g")));
    int64_t offs[3];
    for (int64_t i = 1; i <= 300; i++) {
        offs[0] = offs[1] = offs[2] = i;
        apply_commits(n, "g", offs, 3, false);
    }
    long long grown = log_bytes(n, part);
    assert_true(grown > 20 * 1024);
    for (int i = 0; i < 100000 && log_bytes(n, part) > grown / 4; i++)
        uv_run(&n->loop, UV_RUN_ONCE);
    assert_true(log_bytes(n, part) <= grown / 4);

    uint8_t *snap = NULL;
    size_t len = 0;
    while (n->ops.snapshot(n->ops.ctx, &snap, &len) != 0) /* not while a compaction runs */
        uv_run(&n->loop, UV_RUN_ONCE);
    /* More history, and a restore while the compaction of it runs. */
    bool restored_while_cleaning = false;
    for (int round = 0; round < 50 && !restored_while_cleaning; round++) {
        for (int64_t i = 1000; i < 1300; i++) {
            offs[0] = offs[1] = offs[2] = i;
            apply_commits(n, "g", offs, 3, false);
        }
        for (int i = 0; i < 100000; i++) {
            uint8_t *probe = NULL;
            size_t plen = 0;
            uv_run(&n->loop, UV_RUN_NOWAIT);
            if (n->ops.snapshot(n->ops.ctx, &probe, &plen) != 0) { /* a compaction runs */
                assert_int_equal(n->ops.restore(n->ops.ctx, snap, len), 0);
                restored_while_cleaning = true;
                break;
            }
            free(probe);
            if (log_bytes(n, part) <= grown / 4)
                break; /* compacted before it was seen running: again */
        }
    }
    assert_true(restored_while_cleaning);
    for (int i = 0; i < 100; i++) /* after_clean's turn */
        uv_run(&n->loop, UV_RUN_NOWAIT);
    lead(n);
    assert_int_equal(fetched(n, "g", 0), 300);
    assert_int_equal(fetched(n, "g", 2), 300);
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(kc_log_verify(n->dir, devnull), 0);
    fclose(devnull);
    offs[0] = offs[1] = offs[2] = 301;
    apply_commits(n, "g", offs, 3, false);
    assert_int_equal(fetched(n, "g", 1), 301);
    free(snap);
    node_free(n);
}

static void test_lost_leadership_drops_what_was_not_committed(void **state)
{
    (void)state;
    node_t *n = node_new();
    int64_t v[] = {5};
    apply_commits(n, "g1", v, 1, false);
    lead(n);
    kc_partition_t *p = kc_coord_partition(n->c, kc_str_c("g1"));
    kc_shard_commit_t e = {.topic = kc_str_c("t"), .partition = 0};
    e.value = (kc_offset_t){.offset = 500,
                            .leader_epoch = -1,
                            .metadata = KC_STR_EMPTY,
                            .commit_ts_ms = 2000,
                            .expire_ts_ms = -1};
    int32_t idx = kc_partition_index(p);
    assert_int_equal(kc_shard_commit_offsets(p, kc_coord_time(n->c), 8, kc_str_c("g1"), -1,
                                             KC_STR_EMPTY, KC_STR_NULL, &e, 1),
                     0);
    assert_int_equal(fetched(n, "g1", 0), 500); /* in memory, not committed by raft */
    assert_true(kc_coord_pending(n->c, &idx, 1));
    n->ops.role(n->ops.ctx, KC_CLUSTER_FOLLOWER);
    assert_int_equal(kc_partition_error(p), KC_ERR_NOT_COORDINATOR);
    assert_false(kc_coord_pending(n->c, &idx, 1));
    lead(n);
    assert_int_equal(fetched(n, "g1", 0), 5);
    node_free(n);
}

static void test_data_dir_of_a_single_node_is_refused(void **state)
{
    (void)state;
    node_t *n = node_new();
    char err[512] = "";
    /* The raft directory is made by the cluster room: without it, the logs are a single
     * node's; an empty log is no data. */
    assert_int_equal(kc_cluster_check_data_dir(&n->conf, err, sizeof(err)), 0);
    char path[256];
    snprintf(path, sizeof(path), "%s/__consumer_offsets-1/00000000000000000000.log", n->dir);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    assert_int_equal(kc_cluster_check_data_dir(&n->conf, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "data.dir"));
    snprintf(path, sizeof(path), "mkdir %s/raft", n->dir);
    assert_int_equal(system(path), 0);
    assert_int_equal(kc_cluster_check_data_dir(&n->conf, err, sizeof(err)), 0);
    node_free(n);
}

static void test_derived_cluster_id(void **state)
{
    (void)state;
    char a[23], b[23], c[23];
    kc_cluster_derive_id("1@h:1,2@h:2", a);
    kc_cluster_derive_id("1@h:1,2@h:2", b);
    kc_cluster_derive_id("1@h:1,2@h:3", c);
    assert_int_equal(strlen(a), 22);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
}

/* ---- The metadata partition ---------------------------------------------------------------- */

/* A ConfigRecord of `group` (value NULL: its removal), as gconf.c writes it. */
static void make_config(rec_t *r, const char *group, const char *name, const char *value)
{
    kc_wr_init(&r->k);
    kc_wr_init(&r->v);
    kc_wr_i16(&r->k, 4);
    kc_wr_i16(&r->k, 0);
    kc_wr_i8(&r->k, 32);
    kc_wr_str(&r->k, kc_str_c(group));
    kc_wr_str(&r->k, kc_str_c(name));
    if (value) {
        kc_wr_i16(&r->v, 0);
        kc_wr_str(&r->v, kc_str_c(value));
    }
}

/* A record of another room's type (18, an ACL's) with an opaque body. */
static void make_other(rec_t *r, const char *id, const char *value)
{
    kc_wr_init(&r->k);
    kc_wr_init(&r->v);
    kc_wr_i16(&r->k, 18);
    kc_wr_raw(&r->k, id, strlen(id));
    if (value)
        kc_wr_raw(&r->v, value, strlen(value));
}

/* Apply recs as one committed batch of the metadata partition; the records are freed. */
static void apply_meta(node_t *n, rec_t *r, const bool *removal, size_t count)
{
    kc_log_record_t recs[8];
    assert_true(count <= 8);
    for (size_t i = 0; i < count; i++)
        recs[i] = (kc_log_record_t){.timestamp_ms = -1,
                                    .key = r[i].k.buf,
                                    .key_len = r[i].k.len,
                                    .value = removal[i] ? NULL : r[i].v.buf,
                                    .value_len = removal[i] ? 0 : r[i].v.len};
    uint8_t *batch;
    size_t len;
    assert_int_equal(kc_log_batch_build(recs, count, 5000, KC_LOG_CODEC_NONE, &batch, &len), 0);
    n->ops.apply(n->ops.ctx, KC_COORD_META_PARTITION, batch, len, false);
    free(batch);
    for (size_t i = 0; i < count; i++) {
        kc_wr_free(&r[i].k);
        kc_wr_free(&r[i].v);
    }
}

/* What the listener was told: "+<type>" for a record, "-<type>" for a removal. */
typedef struct heard_s {
    char log[256];
} heard_t;

static void listener(void *arg, const kc_meta_rec_t *rec)
{
    heard_t *h = arg;
    int type = rec->key_len >= 2 ? (rec->key[0] << 8) | rec->key[1] : -1;
    size_t at = strlen(h->log);
    snprintf(h->log + at, sizeof(h->log) - at, "%s%d ", rec->value ? "+" : "-", type);
}

static int32_t session_of(node_t *n, const char *group)
{
    int32_t v[KC_GCONF_N];
    kc_coord_group_configs(n->c, kc_str_c(group), v);
    return v[KC_GCONF_SESSION];
}

static bool has_other(node_t *n, const char *id)
{
    uint8_t key[64] = {0, 18};
    memcpy(key + 2, id, strlen(id));
    kc_meta_rec_t out;
    return kc_meta_get(n->c, key, 2 + strlen(id), &out) != NULL;
}

static int16_t done_err;
static int done_calls;
static void on_done(void *arg, int16_t err)
{
    (void)arg;
    done_err = err;
    done_calls++;
}

static void test_metadata_applied_on_a_follower(void **state)
{
    (void)state;
    node_t *n = node_new();
    heard_t h = {""};
    kc_meta_listen(n->c, listener, &h);
    rec_t r[3];
    make_config(&r[0], "g", "consumer.session.timeout.ms", "50000");
    make_other(&r[1], "acl-1", "allow");
    make_other(&r[2], "acl-2", "deny");
    apply_meta(n, r, (bool[]){false, false, false}, 3);
    assert_int_equal(session_of(n, "g"), 50000);
    assert_true(has_other(n, "acl-1") && has_other(n, "acl-2"));
    assert_string_equal(h.log, "+4 +18 +18 ");
    /* A later batch removes one ACL and the group's config. */
    h.log[0] = '\0';
    make_config(&r[0], "g", "consumer.session.timeout.ms", NULL);
    make_other(&r[1], "acl-2", NULL);
    apply_meta(n, r, (bool[]){true, true}, 2);
    assert_int_equal(session_of(n, "g"), -1);
    assert_true(has_other(n, "acl-1"));
    assert_false(has_other(n, "acl-2"));
    assert_string_equal(h.log, "-4 -18 ");
    /* The node's own __kcoord_metadata-0 holds what it applied. */
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(kc_log_verify(n->dir, devnull), 0);
    fclose(devnull);

    /* A node that does not lead refuses writes with NOT_CONTROLLER, and so does one elected
     * that has no raft to submit to; nothing is applied and done is never called. */
    uint8_t key[] = {0, 18, 'x'};
    kc_meta_rec_t w = {key, sizeof(key), key, sizeof(key)};
    done_calls = 0;
    assert_int_equal(kc_meta_write(n->c, &w, 1, on_done, NULL), KC_ERR_NOT_CONTROLLER);
    char msg[256];
    kc_gconf_op_t op = {KC_STR_LIT("consumer.session.timeout.ms"), KC_GCONF_OP_SET,
                        KC_STR_LIT("50000")};
    assert_int_equal(kc_coord_alter_group_configs(n->c, KC_STR_LIT("g"), &op, 1, false, msg,
                                                  sizeof(msg), on_done, NULL),
                     KC_ERR_NOT_CONTROLLER);
    assert_non_null(strstr(msg, "leader"));
    /* validate_only writes nothing: answered on any node. */
    assert_int_equal(kc_coord_alter_group_configs(n->c, KC_STR_LIT("g"), &op, 1, true, msg,
                                                  sizeof(msg), on_done, NULL),
                     KC_ERR_NONE);
    lead(n);
    assert_int_equal(kc_meta_write(n->c, &w, 1, on_done, NULL), KC_ERR_NOT_CONTROLLER);
    /* The synchronous single-node write is refused on a cluster node. */
    assert_int_equal(kc_meta_append(n->c, &w, 1), KC_ERR_POLICY_VIOLATION);
    assert_int_equal(done_calls, 0);
    assert_int_equal(session_of(n, "g"), -1);
    kc_meta_listen(n->c, NULL, NULL);
    node_free(n);
}

static void test_snapshot_carries_the_metadata(void **state)
{
    (void)state;
    node_t *a = node_new();
    rec_t r[3];
    make_config(&r[0], "g", "consumer.session.timeout.ms", "50000");
    make_other(&r[1], "acl-1", "allow");
    apply_meta(a, r, (bool[]){false, false}, 2);
    uint8_t *snap;
    size_t len;
    assert_int_equal(a->ops.snapshot(a->ops.ctx, &snap, &len), 0);

    node_t *b = node_new();
    heard_t h = {""};
    kc_meta_listen(b->c, listener, &h);
    make_config(&r[0], "h", "consumer.session.timeout.ms", "40000");
    make_other(&r[1], "acl-1", "allow");
    make_other(&r[2], "acl-9", "stale");
    apply_meta(b, r, (bool[]){false, false, false}, 3);
    h.log[0] = '\0';
    assert_int_equal(b->ops.restore(b->ops.ctx, snap, len), 0);
    /* Told of each change only: h's config and acl-9 removed, g's config added; acl-1 is the
     * same record and is not repeated. */
    assert_string_equal(h.log, "-4 -18 +4 ");
    assert_int_equal(session_of(b, "g"), 50000);
    assert_int_equal(session_of(b, "h"), -1);
    assert_true(has_other(b, "acl-1"));
    assert_false(has_other(b, "acl-9"));

    /* A snapshot without the metadata section (taken before it existed) empties it. */
    node_t *c = node_new();
    uint8_t *old;
    size_t old_len;
    assert_int_equal(c->ops.snapshot(c->ops.ctx, &old, &old_len), 0);
    assert_true(old_len > 8);
    h.log[0] = '\0';
    assert_int_equal(b->ops.restore(b->ops.ctx, old, old_len - 8), 0);
    assert_int_equal(session_of(b, "g"), -1);
    assert_false(has_other(b, "acl-1"));
    assert_string_equal(h.log, "-18 -4 "); /* in the order of their last writes */
    /* A metadata section under another partition number is refused. */
    old[old_len - 5] = 7; /* the section's partition number: -1 becomes 0xffffff07 */
    assert_int_not_equal(b->ops.restore(b->ops.ctx, old, old_len), 0);
    free(old);
    free(snap);
    kc_meta_listen(b->c, NULL, NULL);
    node_free(a);
    node_free(b);
    node_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_serves_nothing_then_leads_with_replayed_state),
        cmocka_unit_test(test_snapshot_restores_the_live_records),
        cmocka_unit_test(test_follower_compacts_and_restores_while_cleaning),
        cmocka_unit_test(test_lost_leadership_drops_what_was_not_committed),
        cmocka_unit_test(test_data_dir_of_a_single_node_is_refused),
        cmocka_unit_test(test_derived_cluster_id),
        cmocka_unit_test(test_metadata_applied_on_a_follower),
        cmocka_unit_test(test_snapshot_carries_the_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
