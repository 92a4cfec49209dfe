/* test_api.c - the API room against a live coordinator: a request frame goes through
 * kc_api_on_request to its handler and its answer to a fake connection slot; and the offset
 * and group admin handlers called directly with decoded requests, their answers checked.
 *
 * The network calls the API room makes (kc_slot_reply, kc_slot_close, kc_slot_arena,
 * kc_conn_peer) are replaced at link time (-Wl,--wrap, see the Makefile) by the fakes below, so
 * the test sees every answer in order; so are malloc and realloc, to fail allocations on
 * demand, kc_coord_hold, to aim a failure at the waiter a held answer needs, and kc_api_fail,
 * to fail every allocation after the failure answer was built. The coordinator's
 * fsyncs are counted through its I/O table, so a test can tell which answers went out before
 * their records were on disk.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"
#include "coord/coord_int.h"
#include "log/log.h"
#include "obs/metrics.h"
#include "proto/gen_admin.h"
#include "proto/gen_offsets.h"

/* ---- Link-time fakes ----------------------------------------------------------------------- */

static atomic_int fsyncs; /* fsyncs that returned, counted from the thread pool */

static int fail_next_malloc;   /* the next malloc returns NULL */
static int fail_allocs;        /* every malloc and realloc returns NULL until the answer */
static int fail_hold;          /* the next kc_coord_hold cannot allocate its waiter */
static int fail_after_fail;    /* allocations fail once kc_api_fail built the failure answer */
static int arena_full_in_fail; /* kc_api_fail gets no memory from the request's arena */

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    if (fail_next_malloc || fail_allocs) {
        fail_next_malloc = 0;
        return NULL;
    }
    return __real_malloc(n);
}

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    return fail_allocs ? NULL : __real_realloc(p, n);
}

int __real_kc_api_fail(const kc_api_call_t *call, const void *request, void *resp, int16_t err,
                       kc_arena_t *a);
int __wrap_kc_api_fail(const kc_api_call_t *call, const void *request, void *resp, int16_t err,
                       kc_arena_t *a)
{
    if (arena_full_in_fail)
        a->limit = a->total; /* every allocation from the request's arena fails */
    arena_full_in_fail = 0;
    int rc = __real_kc_api_fail(call, request, resp, err, a);
    fail_allocs = fail_after_fail;
    fail_after_fail = 0;
    return rc;
}

int __real_kc_coord_hold(kc_coord_t *c, const int32_t *parts, size_t n,
                         void (*release)(void *arg, bool ok), void *arg);
int __wrap_kc_coord_hold(kc_coord_t *c, const int32_t *parts, size_t n,
                         void (*release)(void *arg, bool ok), void *arg)
{
    /* The waiter is the one allocation kc_coord_hold makes. */
    fail_next_malloc = fail_hold;
    fail_hold = 0;
    int rc = __real_kc_coord_hold(c, parts, n, release, arg);
    fail_next_malloc = 0;
    return rc;
}

/* One request's slot: its arena and what came back. */
struct kc_slot_s {
    kc_arena_t arena;
    uint8_t *answer; /* the response frame (size prefix included), or NULL */
    size_t answer_len;
    int closed;
    int fsyncs_before; /* fsyncs that had returned when the answer went out */
};

kc_arena_t *__wrap_kc_slot_arena(kc_slot_t *slot)
{
    return &slot->arena;
}

void __wrap_kc_slot_reply(kc_slot_t *slot, uint8_t *buf, size_t len)
{
    fail_allocs = 0;
    assert_null(slot->answer);
    assert_false(slot->closed);
    slot->answer = buf;
    slot->answer_len = len;
    slot->fsyncs_before = atomic_load(&fsyncs);
}

void __wrap_kc_slot_close(kc_slot_t *slot, const char *why)
{
    (void)why;
    fail_allocs = 0;
    assert_null(slot->answer);
    slot->closed = 1;
}

const char *__wrap_kc_conn_peer(const kc_conn_t *c)
{
    (void)c;
    return "127.0.0.1:40000";
}

const char *__wrap_kc_conn_principal(const kc_conn_t *c)
{
    (void)c;
    return "User:ANONYMOUS";
}

static int f_fsync(void *ctx, int fd)
{
    (void)ctx;
    int rc = kc_log_io_posix()->fsync(NULL, fd);
    atomic_fetch_add(&fsyncs, 1);
    return rc;
}

/* ---- A coordinator with one partition and topic "t" ---------------------------------------- */

static void no_join(void *w, const kc_join_group_response_t *r)
{
    (void)w;
    (void)r;
}
static void no_sync(void *w, const kc_sync_group_response_t *r)
{
    (void)w;
    (void)r;
}
static const kc_coord_replies_t replies = {no_join, no_sync};

typedef struct env_s {
    char dir[32];
    kc_conf_t conf;
    kc_catalog_t cat;
    kc_log_io_t io;
    uv_loop_t loop;
    kc_api_ctx_t ctx;
    kc_partition_t *p;
} env_t;

static void env_start_loading(env_t *e)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->dir, sizeof(e->dir), "/tmp/kc-api-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
    kc_conf_init(&e->conf);
    char err[256];
    assert_int_equal(kc_conf_set(&e->conf, "data.dir", e->dir, KC_CONF_SRC_SET, err, sizeof(err)),
                     0);
    assert_int_equal(kc_conf_set(&e->conf, "offsets.topic.num.partitions", "1", KC_CONF_SRC_SET,
                                 err, sizeof(err)),
                     0);
    assert_int_equal(
        kc_conf_set(&e->conf, "log.flush.policy", "always", KC_CONF_SRC_SET, err, sizeof(err)), 0);
    kc_conf_topic_t topics[] = {{"t", 1}};
    assert_int_equal(kc_catalog_init(&e->cat, "cluster", topics, 1), 0);
    e->io = *kc_log_io_posix();
    e->io.fsync = f_fsync;
    uv_loop_init(&e->loop);
    e->ctx = (kc_api_ctx_t){.node_id = 0,
                            .host = "127.0.0.1",
                            .port = 9092,
                            .catalog = &e->cat,
                            .conf = &e->conf,
                            .loop = &e->loop};
    e->ctx.coord = kc_coord_new(&e->loop, &e->conf, &e->cat, &replies, &e->io);
    assert_non_null(e->ctx.coord);
    e->p = kc_coord_partition(e->ctx.coord, KC_STR_LIT("g"));
}

static void env_start(env_t *e)
{
    env_start_loading(e);
    for (int i = 0; i < 100000 && e->p->state != KC_PART_ACTIVE; i++)
        uv_run(&e->loop, UV_RUN_ONCE);
    assert_int_equal(e->p->state, KC_PART_ACTIVE);
}

static int closed;
static void on_closed(void *arg)
{
    (void)arg;
    closed = 1;
}

static void env_stop(env_t *e)
{
    closed = 0;
    kc_coord_close(e->ctx.coord, on_closed, NULL);
    for (int i = 0; i < 100000 && !closed; i++)
        uv_run(&e->loop, UV_RUN_ONCE);
    assert_true(closed);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    kc_catalog_free(&e->cat);
    kc_conf_free(&e->conf);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", e->dir);
    assert_int_equal(system(cmd), 0);
}

/* Send an OffsetCommit v2 of `offset` for g/t/0 on a new slot (freed by slot_free). */
static kc_slot_t *offset_commit(env_t *e, int64_t offset)
{
    kc_offset_commit_request_partition_t part = {.partition_index = 0,
                                                 .committed_offset = offset,
                                                 .committed_leader_epoch = -1,
                                                 .commit_timestamp = -1,
                                                 .committed_metadata = KC_STR_EMPTY};
    kc_offset_commit_request_topic_t topic = {.name = KC_STR_LIT("t")};
    topic.partitions.v = &part;
    topic.partitions.n = 1;
    kc_offset_commit_request_t q;
    kc_offset_commit_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.generation_id_or_member_epoch = -1;
    q.member_id = KC_STR_EMPTY;
    q.retention_time_ms = -1;
    q.topics.v = &topic;
    q.topics.n = 1;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, KC_API_OFFSET_COMMIT);
    kc_wr_i16(&w, 2);
    kc_wr_i32(&w, 7); /* correlation id */
    kc_wr_str(&w, KC_STR_LIT("test"));
    kc_offset_commit_request_encode(&w, 2, &q);
    assert_false(w.err);
    size_t len;
    uint8_t *frame = kc_wr_steal(&w, &len);

    kc_slot_t *slot = calloc(1, sizeof(*slot));
    assert_non_null(slot);
    kc_arena_init(&slot->arena);
    /* The network layer copies the frame into the request's arena. */
    uint8_t *copy = kc_arena_dup(&slot->arena, frame, len);
    assert_non_null(copy);
    free(frame);
    kc_api_on_request(&e->ctx, (kc_conn_t *)slot, slot, copy, len);
    return slot;
}

/* The partition error of an OffsetCommit v2 answer. */
static int16_t commit_error(const kc_slot_t *slot)
{
    assert_non_null(slot->answer);
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_rd_init(&r, slot->answer + 8, slot->answer_len - 8); /* size, correlation id */
    kc_offset_commit_response_t resp;
    kc_offset_commit_response_init(&resp);
    assert_int_equal(kc_offset_commit_response_decode(&r, &a, 2, &resp), 0);
    assert_int_equal(resp.topics.n, 1);
    assert_int_equal(resp.topics.v[0].partitions.n, 1);
    int16_t err = resp.topics.v[0].partitions.v[0].error_code;
    kc_arena_free(&a);
    return err;
}

static void slot_free(kc_slot_t *slot)
{
    free(slot->answer);
    kc_arena_free(&slot->arena);
    free(slot);
}

static void run_until_answered(uv_loop_t *loop, const kc_slot_t *slot)
{
    for (int i = 0; i < 100000 && slot->answer == NULL && !slot->closed; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_true(slot->answer != NULL || slot->closed);
}

static int64_t committed(env_t *e)
{
    const kc_offset_t *o = kc_offsets_get(e->p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0);
    return o ? o->offset : -1;
}

/* ---- Nothing is acknowledged before it is durable ------------------------------------------- */

/* An OffsetCommit under log.flush.policy=always is answered after its fsync; when the waiter
 * that would hold its answer cannot be allocated, it is answered NOT_COORDINATOR at once (the
 * client retries), never with success before the fsync, and counted as an error. */
static void test_commit_answer_waits_for_fsync(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    env_t e;
    env_start(&e);
    uint64_t *errors16 = &kc_obs.errors[kc_obs_api_slot(KC_API_OFFSET_COMMIT)][16 + 1];

    /* As it should be: held, then answered with success once fsynced. */
    int before = atomic_load(&fsyncs);
    kc_slot_t *s = offset_commit(&e, 5);
    assert_null(s->answer);
    run_until_answered(&e.loop, s);
    assert_int_equal(commit_error(s), KC_ERR_NONE);
    assert_true(s->fsyncs_before > before);
    assert_int_equal(*errors16, 0);
    slot_free(s);

    /* The hold cannot allocate its waiter: the answer goes out now, so it must be a failure. */
    before = atomic_load(&fsyncs);
    fail_hold = 1;
    s = offset_commit(&e, 6);
    assert_int_equal(fail_hold, 0); /* the answer did need a wait */
    assert_false(s->closed);
    assert_non_null(s->answer);
    assert_int_equal(s->fsyncs_before, before);
    assert_int_equal(commit_error(s), KC_ERR_NOT_COORDINATOR);
    assert_int_equal(*errors16, 1);
    assert_int_equal(kc_obs.offsets_committed, 1); /* the first commit's offset alone */
    slot_free(s);

    /* Its record was emitted and may still become durable, as after a timeout: it is. A retry
     * is held and acknowledged after its fsync. */
    before = atomic_load(&fsyncs);
    for (int i = 0; i < 100000 && atomic_load(&fsyncs) == before; i++)
        uv_run(&e.loop, UV_RUN_ONCE);
    assert_int_equal(committed(&e), 6);
    before = atomic_load(&fsyncs);
    s = offset_commit(&e, 6);
    assert_null(s->answer);
    run_until_answered(&e.loop, s);
    assert_int_equal(commit_error(s), KC_ERR_NONE);
    assert_true(s->fsyncs_before > before);
    slot_free(s);

    env_stop(&e);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* When not even the failure answer can be encoded, the connection closes: still no success
 * answer before the fsync. */
static void test_commit_closes_without_failure_answer(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    env_t e;
    env_start(&e);
    fail_after_fail = 1;
    kc_slot_t *s = offset_commit(&e, 9);
    assert_int_equal(fail_after_fail, 0); /* the answer did need a wait */
    assert_true(s->closed);
    assert_null(s->answer);
    assert_int_equal(kc_obs.errors[kc_obs_api_slot(KC_API_OFFSET_COMMIT)][16 + 1], 1);
    assert_int_equal(kc_obs.offsets_committed, 0);
    slot_free(s);
    /* The record still becomes durable; nothing is left waiting. */
    int before = atomic_load(&fsyncs);
    for (int i = 0; i < 100000 && atomic_load(&fsyncs) == before; i++)
        uv_run(&e.loop, UV_RUN_ONCE);
    assert_int_equal(committed(&e), 9);
    env_stop(&e);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* An OffsetCommit to a partition still loading is answered COORDINATOR_LOAD_IN_PROGRESS on
 * every partition it names; when that answer cannot be built in full, the connection closes
 * rather than answer without those partitions (which a client could read as committed). */
static void test_commit_error_answer_or_close(void **state)
{
    (void)state;
    env_t e;
    env_start_loading(&e);
    assert_int_equal(e.p->state, KC_PART_LOADING);
    kc_slot_t *s = offset_commit(&e, 1);
    assert_int_equal(commit_error(s), KC_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    slot_free(s);
    arena_full_in_fail = 1;
    s = offset_commit(&e, 1);
    assert_int_equal(arena_full_in_fail, 0);
    assert_true(s->closed);
    assert_null(s->answer);
    slot_free(s);
    for (int i = 0; i < 100000 && e.p->state != KC_PART_ACTIVE; i++)
        uv_run(&e.loop, UV_RUN_ONCE);
    env_stop(&e);
}

/* kc_coord_hold itself: 0 when nothing waits, 1 when held, -1 when the waiter cannot be
 * allocated (and then release is never called). */
static void on_release(void *arg, bool ok)
{
    *(int *)arg = ok ? 1 : 2;
}

static void test_hold_outcomes(void **state)
{
    (void)state;
    env_t e;
    env_start(&e);
    int32_t idx = e.p->index;
    int released = 0;
    assert_int_equal(kc_coord_hold(e.ctx.coord, &idx, 1, on_release, &released), 0);
    assert_false(kc_coord_pending(e.ctx.coord, &idx, 1));

    kc_offset_t o = {.offset = 1, .leader_epoch = -1, .metadata = KC_STR_EMPTY, .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(e.p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &o), 0);
    assert_true(kc_coord_pending(e.ctx.coord, &idx, 1));
    fail_hold = 1;
    assert_int_equal(kc_coord_hold(e.ctx.coord, &idx, 1, on_release, &released), -1);
    assert_int_equal(kc_coord_hold(e.ctx.coord, &idx, 1, on_release, &released), 1);
    for (int i = 0; i < 100000 && !released; i++)
        uv_run(&e.loop, UV_RUN_ONCE);
    assert_int_equal(released, 1);
    assert_false(kc_coord_pending(e.ctx.coord, &idx, 1));
    env_stop(&e);
}

/* ---- Handlers on decoded requests ----------------------------------------------------------- */

/* A call of API `key`, version `version`, on its own slot, as dispatch makes it; the handler
 * is then called directly with a decoded request. Its records are emitted to the partition,
 * so a later handler sees their effect; no answer is held (no kc_api_call_reply). */
typedef struct hcall_s {
    kc_slot_t slot;
    kc_api_call_t call;
    kc_request_t req;
} hcall_t;

/* The principal of the calls hcall_new makes (NULL: User:ANONYMOUS). */
static const char *test_principal;

static hcall_t *hcall_new(env_t *e, int16_t key, int16_t version, void *body)
{
    hcall_t *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    kc_arena_init(&h->slot.arena);
    h->call.slot = &h->slot;
    h->call.api = kc_api_find(key);
    assert_non_null(h->call.api);
    h->call.version = version;
    h->call.flexible = kc_api_is_flexible(h->call.api, version);
    h->call.client_host = KC_STR_LIT("/127.0.0.1");
    h->call.principal = test_principal;
    h->call.ctx = &e->ctx;
    h->call.request = body;
    h->req.api_key = key;
    h->req.api_version = version;
    h->req.client_id = KC_STR_LIT("test");
    h->req.api = h->call.api;
    h->req.flexible = h->call.flexible;
    h->req.body = body;
    return h;
}

static void hcall_free(hcall_t *h)
{
    kc_arena_free(&h->slot.arena);
    free(h);
}

/* Commit offsets[i] for partitions[i] of `topic` (by name, or by id from v10) in `group`. */
static kc_offset_commit_response_t commit_h(env_t *e, hcall_t **hp, int16_t v, const char *group,
                                            int32_t generation, const char *topic,
                                            const int32_t *partitions, int n, int64_t offset,
                                            kc_str_t metadata)
{
    kc_offset_commit_request_t *q = calloc(1, sizeof(*q));
    kc_offset_commit_request_topic_t *t = calloc(1, sizeof(*t));
    kc_offset_commit_request_partition_t *parts = calloc((size_t)n, sizeof(*parts));
    assert_true(q && t && parts);
    kc_offset_commit_request_init(q);
    q->group_id = kc_str_c(group);
    q->generation_id_or_member_epoch = generation;
    q->member_id = generation >= 0 ? KC_STR_LIT("m") : KC_STR_EMPTY;
    q->retention_time_ms = -1;
    t->name = kc_str_c(topic);
    const kc_topic_t *ct = kc_catalog_find(&e->cat, t->name);
    if (ct)
        t->topic_id = ct->id;
    for (int i = 0; i < n; i++)
        parts[i] = (kc_offset_commit_request_partition_t){.partition_index = partitions[i],
                                                          .committed_offset = offset + i,
                                                          .committed_leader_epoch = -1,
                                                          .commit_timestamp = -1,
                                                          .committed_metadata = metadata};
    t->partitions.v = parts;
    t->partitions.n = n;
    q->topics.v = t;
    q->topics.n = 1;
    hcall_t *h = hcall_new(e, KC_API_OFFSET_COMMIT, v, q);
    kc_offset_commit_response_t resp;
    kc_offset_commit_response_init(&resp);
    assert_int_equal(kc_api_offset_commit(&e->ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    *hp = h;
    return resp; /* its arrays live in h's arena; free_commit_request frees the request */
}

static void free_commit_request(hcall_t *h)
{
    kc_offset_commit_request_t *q = (void *)h->call.request;
    free(q->topics.v[0].partitions.v);
    free(q->topics.v);
    free(q);
    hcall_free(h);
}

/* The committed offset of `group`/t/`partition` through the OffsetFetch handler at version
 * `v` (v8+: the batched form), -1 when none; the partition's error in *err. */
static int64_t fetch_h(env_t *e, int16_t v, const char *group, int32_t partition, int16_t *err)
{
    int32_t part = partition;
    kc_offset_fetch_request_t q;
    kc_offset_fetch_request_init(&q);
    kc_offset_fetch_request_topic_t t1 = {.name = KC_STR_LIT("t")};
    kc_offset_fetch_request_topics_t t8 = {.name = KC_STR_LIT("t")};
    kc_offset_fetch_request_group_t g8 = {
        .group_id = kc_str_c(group), .member_id = KC_STR_NULL, .member_epoch = -1};
    t1.partition_indexes.v = t8.partition_indexes.v = &part;
    t1.partition_indexes.n = t8.partition_indexes.n = 1;
    if (v >= 8) {
        g8.topics.v = &t8;
        g8.topics.n = 1;
        q.groups.v = &g8;
        q.groups.n = 1;
    } else {
        q.group_id = kc_str_c(group);
        q.topics.v = &t1;
        q.topics.n = 1;
    }
    hcall_t *h = hcall_new(e, KC_API_OFFSET_FETCH, v, &q);
    kc_offset_fetch_response_t resp;
    kc_offset_fetch_response_init(&resp);
    assert_int_equal(kc_api_offset_fetch(&e->ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    int64_t off;
    if (v >= 8) {
        assert_int_equal(resp.groups.n, 1);
        assert_int_equal(resp.groups.v[0].error_code, KC_ERR_NONE);
        assert_int_equal(resp.groups.v[0].topics.n, 1);
        assert_int_equal(resp.groups.v[0].topics.v[0].partitions.n, 1);
        off = resp.groups.v[0].topics.v[0].partitions.v[0].committed_offset;
        *err = resp.groups.v[0].topics.v[0].partitions.v[0].error_code;
    } else {
        assert_int_equal(resp.topics.n, 1);
        assert_int_equal(resp.topics.v[0].partitions.n, 1);
        off = resp.topics.v[0].partitions.v[0].committed_offset;
        *err = resp.topics.v[0].partitions.v[0].error_code;
    }
    hcall_free(h);
    return off;
}

/* OffsetCommit: the catalog's answers per partition (unknown topic, topic id or partition,
 * metadata too large), the group's answer for every partition, and the offsets stored. */
static void test_handler_offset_commit(void **state)
{
    (void)state;
    env_t e;
    env_start(&e);
    hcall_t *h;
    int16_t err;
    int32_t parts[] = {0, 1};
    kc_offset_commit_response_t r =
        commit_h(&e, &h, 8, "g", -1, "t", parts, 2, 40, KC_STR_LIT("meta"));
    assert_int_equal(r.topics.n, 1);
    assert_true(kc_str_eq_c(r.topics.v[0].name, "t"));
    assert_int_equal(r.topics.v[0].partitions.n, 2);
    assert_int_equal(r.topics.v[0].partitions.v[0].partition_index, 0);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_NONE);
    assert_int_equal(r.topics.v[0].partitions.v[1].partition_index, 1);
    assert_int_equal(r.topics.v[0].partitions.v[1].error_code, KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    free_commit_request(h);
    assert_int_equal(committed(&e), 40);

    r = commit_h(&e, &h, 8, "g", -1, "nope", parts, 1, 1, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    free_commit_request(h);
    r = commit_h(&e, &h, 10, "g", -1, "nope", parts, 1, 1, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_UNKNOWN_TOPIC_ID);
    free_commit_request(h);

    /* Metadata over offset.metadata.max.bytes: refused, the offset stays. */
    size_t big_len = (size_t)e.conf.offset_metadata_max_bytes + 1;
    char *big = malloc(big_len);
    assert_non_null(big);
    memset(big, 'x', big_len);
    r = commit_h(&e, &h, 8, "g", -1, "t", parts, 1, 41, (kc_str_t){big, (int32_t)big_len});
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_OFFSET_METADATA_TOO_LARGE);
    free_commit_request(h);
    free(big);
    assert_int_equal(committed(&e), 40);

    /* By topic id (v10). */
    r = commit_h(&e, &h, 10, "g", -1, "t", parts, 1, 42, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_NONE);
    free_commit_request(h);
    assert_int_equal(committed(&e), 42);

    /* A generation into an unknown group: the group's error on every partition, also on the
     * one the catalog refuses, and nothing stored. */
    r = commit_h(&e, &h, 9, "x", 3, "t", parts, 2, 50, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(r.topics.v[0].partitions.v[1].error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    free_commit_request(h);
    r = commit_h(&e, &h, 8, "x", 3, "t", parts, 1, 50, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_ILLEGAL_GENERATION);
    free_commit_request(h);
    assert_int_equal(fetch_h(&e, 8, "x", 0, &err), -1);
    assert_int_equal(err, KC_ERR_NONE);
    env_stop(&e);
}

/* OffsetFetch in the single-group (v0-7) and batched (v8+) forms, and for every topic. */
static void test_handler_offset_fetch(void **state)
{
    (void)state;
    env_t e;
    env_start(&e);
    hcall_t *h;
    int16_t err;
    int32_t parts[] = {0};
    commit_h(&e, &h, 8, "g", -1, "t", parts, 1, 7, KC_STR_LIT("md"));
    free_commit_request(h);
    for (int16_t v = 1; v <= 9; v++) {
        assert_int_equal(fetch_h(&e, v, "g", 0, &err), 7);
        assert_int_equal(err, KC_ERR_NONE);
        assert_int_equal(fetch_h(&e, v, "other", 0, &err), -1);
        assert_int_equal(err, KC_ERR_NONE);
    }

    /* Every topic of the group (v8, topics null). */
    kc_offset_fetch_request_group_t g8 = {.group_id = KC_STR_LIT("g"), .member_epoch = -1};
    g8.member_id = KC_STR_NULL;
    g8.topics.n = -1;
    kc_offset_fetch_request_t q;
    kc_offset_fetch_request_init(&q);
    q.groups.v = &g8;
    q.groups.n = 1;
    h = hcall_new(&e, KC_API_OFFSET_FETCH, 8, &q);
    kc_offset_fetch_response_t resp;
    kc_offset_fetch_response_init(&resp);
    assert_int_equal(kc_api_offset_fetch(&e.ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    assert_int_equal(resp.groups.n, 1);
    assert_int_equal(resp.groups.v[0].topics.n, 1);
    assert_true(kc_str_eq_c(resp.groups.v[0].topics.v[0].name, "t"));
    assert_int_equal(resp.groups.v[0].topics.v[0].partitions.n, 1);
    assert_int_equal(resp.groups.v[0].topics.v[0].partitions.v[0].committed_offset, 7);
    assert_true(kc_str_eq_c(resp.groups.v[0].topics.v[0].partitions.v[0].metadata, "md"));
    hcall_free(h);
    env_stop(&e);
}

/* DeleteGroups: an Empty group goes with its offsets, offsets alone make a group, an unknown
 * id is GROUP_ID_NOT_FOUND. */
static void test_handler_delete_groups(void **state)
{
    (void)state;
    env_t e;
    env_start(&e);
    hcall_t *h;
    int16_t err;
    int32_t parts[] = {0};
    commit_h(&e, &h, 8, "g", -1, "t", parts, 1, 7, KC_STR_EMPTY);
    free_commit_request(h);
    /* Offsets without any group state (as a log of an older broker can leave them). */
    kc_offset_t o = {.offset = 3, .leader_epoch = -1, .metadata = KC_STR_EMPTY, .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(e.p->offsets, KC_STR_LIT("bare"), KC_STR_LIT("t"), 0, &o),
                     0);

    kc_str_t names[] = {KC_STR_LIT("g"), KC_STR_LIT("none"), KC_STR_LIT("bare")};
    kc_delete_groups_request_t q;
    kc_delete_groups_request_init(&q);
    q.groups_names.v = names;
    q.groups_names.n = 3;
    h = hcall_new(&e, KC_API_DELETE_GROUPS, 2, &q);
    kc_delete_groups_response_t resp;
    kc_delete_groups_response_init(&resp);
    assert_int_equal(kc_api_delete_groups(&e.ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    assert_int_equal(resp.results.n, 3);
    assert_true(kc_str_eq_c(resp.results.v[0].group_id, "g"));
    assert_int_equal(resp.results.v[0].error_code, KC_ERR_NONE);
    assert_true(kc_str_eq_c(resp.results.v[1].group_id, "none"));
    assert_int_equal(resp.results.v[1].error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(resp.results.v[2].error_code, KC_ERR_NONE);
    hcall_free(h);
    assert_int_equal(fetch_h(&e, 8, "g", 0, &err), -1);
    assert_int_equal(fetch_h(&e, 8, "bare", 0, &err), -1);

    /* Deleted: a second delete finds nothing. */
    h = hcall_new(&e, KC_API_DELETE_GROUPS, 2, &q);
    kc_delete_groups_response_init(&resp);
    assert_int_equal(kc_api_delete_groups(&e.ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    for (int i = 0; i < 3; i++)
        assert_int_equal(resp.results.v[i].error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    hcall_free(h);
    env_stop(&e);
}

/* OffsetDelete: the broker's topic checks first, the group's check, the offsets deleted. */
/* ---- Authorization ----------------------------------------------------------------------------
 */

/* Add one ALLOW (or DENY) ACL through the ACL records, as CreateAcls does. */
static void add_acl(env_t *e, int8_t type, const char *name, const char *principal, int8_t op,
                    int8_t perm, const char *host)
{
    kc_acl_binding_t b = {.resource_type = type,
                          .pattern_type = KC_PAT_LITERAL,
                          .operation = op,
                          .permission = perm,
                          .resource_name = kc_str_c(name),
                          .principal = kc_str_c(principal),
                          .host = kc_str_c(host)};
    kc_api_auth_batch_t batch = {0};
    kc_auth_result_t r;
    assert_int_equal(kc_auth_acl_create(e->ctx.auth, &b, 1, kc_auth_rand_default(),
                                        kc_api_auth_collect, &batch, &r),
                     KC_AUTH_OK);
    assert_int_equal(r.error, KC_ERR_NONE);
    assert_int_equal(kc_api_auth_commit(&e->ctx, &batch, NULL, NULL), KC_ERR_NONE);
    kc_api_auth_batch_free(&batch);
}

/* The handlers ask the authorizer for the call's principal and peer: OffsetCommit needs GROUP
 * READ (GROUP_AUTHORIZATION_FAILED on every partition), then TOPIC READ
 * (TOPIC_AUTHORIZATION_FAILED); OffsetFetch GROUP DESCRIBE; nothing is checked without an
 * authorizer; a host ACL matches the peer address as Java prints it. */
static void test_handler_authorization(void **state)
{
    (void)state;
    env_t e;
    env_start(&e);
    char err[256];
    int32_t part = 0;
    hcall_t *h;
    /* No authorizer: bob may commit. */
    test_principal = "User:bob";
    kc_offset_commit_response_t r = commit_h(&e, &h, 8, "g", -1, "t", &part, 1, 3, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_NONE);
    free_commit_request(h);

    assert_int_equal(kc_conf_set(&e.conf, "authorizer.class.name",
                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                 KC_CONF_SRC_SET, err, sizeof(err)),
                     0);
    e.ctx.auth = kc_auth_new(&(kc_auth_conf_t){.super_users = "User:root"});
    assert_non_null(e.ctx.auth);
    test_principal = "User:alice";
    r = commit_h(&e, &h, 8, "g", -1, "t", &part, 1, 5, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_GROUP_AUTHORIZATION_FAILED);
    free_commit_request(h);
    add_acl(&e, KC_RES_GROUP, "g", "User:alice", KC_OP_READ, KC_PERM_ALLOW, "*");
    r = commit_h(&e, &h, 8, "g", -1, "t", &part, 1, 5, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_TOPIC_AUTHORIZATION_FAILED);
    free_commit_request(h);
    /* Nothing was stored: the super user reads bob's offset. */
    test_principal = "User:root";
    int16_t perr;
    assert_int_equal(fetch_h(&e, 8, "g", 0, &perr), 3);
    assert_int_equal(perr, KC_ERR_NONE);
    test_principal = "User:alice";
    add_acl(&e, KC_RES_TOPIC, "t", "User:alice", KC_OP_READ, KC_PERM_ALLOW, "*");
    r = commit_h(&e, &h, 8, "g", -1, "t", &part, 1, 5, KC_STR_EMPTY);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, KC_ERR_NONE);
    free_commit_request(h);
    assert_int_equal(fetch_h(&e, 8, "g", 0, &perr), 5); /* READ implies DESCRIBE */
    /* bob may not DESCRIBE g: OffsetFetch answers the group's error. */
    test_principal = "User:bob";
    kc_offset_fetch_request_t q;
    kc_offset_fetch_request_init(&q);
    kc_offset_fetch_request_group_t g8 = {
        .group_id = KC_STR_LIT("g"), .member_id = KC_STR_NULL, .member_epoch = -1};
    g8.topics.n = -1;
    q.groups.v = &g8;
    q.groups.n = 1;
    h = hcall_new(&e, KC_API_OFFSET_FETCH, 8, &q);
    kc_offset_fetch_response_t fr;
    kc_offset_fetch_response_init(&fr);
    assert_int_equal(kc_api_offset_fetch(&e.ctx, &h->call, &h->req, &h->slot.arena, &fr),
                     KC_API_DONE);
    assert_int_equal(fr.groups.v[0].error_code, KC_ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(fr.groups.v[0].topics.n, 0);
    /* Hosts: an IPv6 peer is matched as Java prints it; DENY wins over ALLOW. */
    test_principal = "User:alice";
    h->call.principal = "User:alice";
    h->call.client_host = KC_STR_LIT("/::1");
    assert_true(kc_api_authorized(&h->call, KC_OP_READ, KC_RES_GROUP, KC_STR_LIT("g")));
    add_acl(&e, KC_RES_GROUP, "g", "User:alice", KC_OP_READ, KC_PERM_DENY, "0:0:0:0:0:0:0:1");
    h->call.acl_host[0] = '\0';
    assert_false(kc_api_authorized(&h->call, KC_OP_READ, KC_RES_GROUP, KC_STR_LIT("g")));
    h->call.client_host = KC_STR_LIT("/127.0.0.1");
    h->call.acl_host[0] = '\0';
    assert_true(kc_api_authorized(&h->call, KC_OP_READ, KC_RES_GROUP, KC_STR_LIT("g")));
    assert_int_equal(kc_api_authorized_ops(&h->call, KC_RES_GROUP, KC_STR_LIT("g")),
                     (1 << KC_OP_READ) | (1 << KC_OP_DESCRIBE));
    hcall_free(h);
    test_principal = NULL;
    kc_auth_free(e.ctx.auth);
    e.ctx.auth = NULL;
    env_stop(&e);
}

static void test_handler_offset_delete(void **state)
{
    (void)state;
    env_t e;
    env_start(&e);
    hcall_t *h;
    int16_t err;
    int32_t parts[] = {0};
    commit_h(&e, &h, 8, "g", -1, "t", parts, 1, 7, KC_STR_EMPTY);
    free_commit_request(h);

    kc_offset_delete_request_partition_t tp[] = {{0}, {3}};
    kc_offset_delete_request_partition_t np[] = {{0}};
    kc_offset_delete_request_topic_t topics[2] = {{.name = KC_STR_LIT("t")},
                                                  {.name = KC_STR_LIT("nope")}};
    topics[0].partitions.v = tp;
    topics[0].partitions.n = 2;
    topics[1].partitions.v = np;
    topics[1].partitions.n = 1;
    kc_offset_delete_request_t q;
    kc_offset_delete_request_init(&q);
    q.group_id = KC_STR_LIT("none");
    q.topics.v = topics;
    q.topics.n = 2;
    h = hcall_new(&e, KC_API_OFFSET_DELETE, 0, &q);
    kc_offset_delete_response_t resp;
    kc_offset_delete_response_init(&resp);
    assert_int_equal(kc_api_offset_delete(&e.ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    assert_int_equal(resp.error_code, KC_ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(resp.topics.n, 0);
    hcall_free(h);

    q.group_id = KC_STR_LIT("g");
    h = hcall_new(&e, KC_API_OFFSET_DELETE, 0, &q);
    kc_offset_delete_response_init(&resp);
    assert_int_equal(kc_api_offset_delete(&e.ctx, &h->call, &h->req, &h->slot.arena, &resp),
                     KC_API_DONE);
    assert_int_equal(resp.error_code, KC_ERR_NONE);
    assert_int_equal(resp.topics.n, 2);
    assert_true(kc_str_eq_c(resp.topics.v[0].name, "t"));
    assert_int_equal(resp.topics.v[0].partitions.n, 2);
    assert_int_equal(resp.topics.v[0].partitions.v[0].partition_index, 0);
    assert_int_equal(resp.topics.v[0].partitions.v[0].error_code, KC_ERR_NONE);
    assert_int_equal(resp.topics.v[0].partitions.v[1].partition_index, 3);
    assert_int_equal(resp.topics.v[0].partitions.v[1].error_code,
                     KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_true(kc_str_eq_c(resp.topics.v[1].name, "nope"));
    assert_int_equal(resp.topics.v[1].partitions.v[0].error_code,
                     KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    hcall_free(h);
    assert_int_equal(fetch_h(&e, 8, "g", 0, &err), -1);
    env_stop(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_answer_waits_for_fsync),
        cmocka_unit_test(test_commit_closes_without_failure_answer),
        cmocka_unit_test(test_commit_error_answer_or_close),
        cmocka_unit_test(test_hold_outcomes),
        cmocka_unit_test(test_handler_offset_commit),
        cmocka_unit_test(test_handler_offset_fetch),
        cmocka_unit_test(test_handler_delete_groups),
        cmocka_unit_test(test_handler_offset_delete),
        cmocka_unit_test(test_handler_authorization),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
