/* test_cluster_coord.c - the coordinator of a cluster node, driven through the callbacks raft
 * calls (kc_coord_cluster_ops) without raft: committed batches applied on a follower become its
 * state, a snapshot restored on another node gives the same state without the removed keys, the
 * logs are compacted as a single node's (a snapshot restored meanwhile waits for the compaction),
 * and a leader that loses its leadership drops what raft did not commit. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_serves_nothing_then_leads_with_replayed_state),
        cmocka_unit_test(test_snapshot_restores_the_live_records),
        cmocka_unit_test(test_follower_compacts_and_restores_while_cleaning),
        cmocka_unit_test(test_lost_leadership_drops_what_was_not_committed),
        cmocka_unit_test(test_data_dir_of_a_single_node_is_refused),
        cmocka_unit_test(test_derived_cluster_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
