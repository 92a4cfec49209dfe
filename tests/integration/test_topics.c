/* test_topics.c - the topic APIs of a real kcoord: CreateTopics, DeleteTopics, Metadata's
 * auto-creation, ListOffsets, Fetch and Produce, seen by librdkafka and by raw frames.
 *
 * Every test starts its own daemon (node.id 7, topics orders:3 and events:1, num.partitions 2;
 * or, as the test's prestate, auto.create.topics.enable=true with num.partitions 5) and stops it
 * in the teardown, which fails the test unless the daemon exits 0 on SIGTERM.
 *
 * The librdkafka tests check what real clients see: the admin API creating and deleting topics
 * (validate_only, TOPIC_ALREADY_EXISTS, a refused replication factor), Metadata listing them,
 * committed offsets dropped with their topic, auto-creation, watermarks of 0/0, a consumer
 * assigned at offset 5 that fetches without an error or an offset reset, and a producer whose
 * message fails at once with a permanent error. The raw tests build
 * requests byte by byte (harness.h) for what librdkafka cannot send or does not show: every
 * CreateTopics refusal with Kafka's message, DeleteTopics by id, ListOffsets special timestamps
 * and duplicates, Fetch long polls measured against the clock while another connection is
 * served, fetch sessions, and Produce with acks=0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

enum { NODE_ID = 7, MAX_FDS = 8, RK_TIMEOUT_MS = 10000 };

static const char *const SETS[] = {"topics=orders:3,events:1", "node.id=7", "num.partitions=2",
                                   NULL};
static const char *const SETS_QUEUE_2[] = {"topics=orders:3,events:1", "node.id=7",
                                           "queued.max.requests=2", NULL};
static const char *const SETS_AUTO[] = {"topics=orders:3,events:1", "node.id=7", "num.partitions=5",
                                        "auto.create.topics.enable=true", NULL};

/* ---- Fixture --------------------------------------------------------------------------------- */

/* librdkafka's log lines and error callbacks, appended from its threads. */
typedef struct rk_log_s {
    pthread_mutex_t mu;
    kc_buf_t text; /* NUL-terminated once anything was appended */
    int errors;
} rk_log_t;

typedef struct fixture_s {
    kc_proc_t proc;
    rd_kafka_t *rk; /* destroyed by the teardown when a test fails while it is alive */
    rk_log_t log;
    int fds[MAX_FDS];
    int n_fds;
} fixture_t;

static int setup(void **state)
{
    const char *const *sets = *state ? *state : SETS;
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    pthread_mutex_init(&f->log.mu, NULL);
    if (kc_proc_start(&f->proc, sets) != 0) {
        pthread_mutex_destroy(&f->log.mu);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    if (f->rk != NULL)
        rd_kafka_destroy(f->rk);
    for (int i = 0; i < f->n_fds; i++)
        if (f->fds[i] >= 0)
            close(f->fds[i]);
    if (!f->proc.ok && f->log.text.len > 0)
        fprintf(stderr, "---- librdkafka log ----\n%s---- end of librdkafka log ----\n",
                (char *)f->log.text.p);
    int rc = kc_proc_finish(&f->proc);
    kc_buf_free(&f->log.text);
    pthread_mutex_destroy(&f->log.mu);
    free(f);
    return rc;
}

/* A connection to the daemon, closed by the teardown. */
static int connect_fd(fixture_t *f)
{
    assert_true(f->n_fds < MAX_FDS);
    int fd = kc_sock_connect(f->proc.port);
    assert_true(fd >= 0);
    f->fds[f->n_fds++] = fd;
    return fd;
}

/* ---- librdkafka ------------------------------------------------------------------------------ */

static void rk_append(rk_log_t *l, const char *a, const char *b, const char *c)
{
    pthread_mutex_lock(&l->mu);
    if (l->text.len > 0)
        l->text.len--; /* drop the NUL */
    kc_out_bytes(&l->text, a, strlen(a));
    kc_out_bytes(&l->text, b, strlen(b));
    kc_out_bytes(&l->text, c, strlen(c));
    kc_out_bytes(&l->text, "\n", 2);
    pthread_mutex_unlock(&l->mu);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)level;
    rk_append(rd_kafka_opaque(rk), fac, ": ", buf);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    rk_log_t *l = opaque;
    rk_append(l, "ERROR ", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    pthread_mutex_lock(&l->mu);
    l->errors++;
    pthread_mutex_unlock(&l->mu);
}

static void conf_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
        fail_msg("rd_kafka_conf_set %s=%s: %s", k, v, errstr);
}

/* A client of `type` bootstrapped from the daemon, with the extra settings `kv` (key, value,
 * ..., NULL), logging into f->log. It becomes f->rk. */
static rd_kafka_t *new_client(fixture_t *f, rd_kafka_type_t type, const char *const *kv)
{
    char bootstrap[64], errstr[512];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", f->proc.port);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", bootstrap);
    conf_set(conf, "client.id", "kcoord-it");
    for (int i = 0; kv != NULL && kv[i] != NULL; i += 2)
        conf_set(conf, kv[i], kv[i + 1]);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, &f->log);
    f->rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
    if (f->rk == NULL) {
        rd_kafka_conf_destroy(conf);
        fail_msg("rd_kafka_new: %s", errstr);
    }
    return f->rk;
}

static void destroy_client(fixture_t *f)
{
    rd_kafka_destroy(f->rk);
    f->rk = NULL;
}

/* How many lines librdkafka logged that contain `needle`. */
static int rk_count(fixture_t *f, const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&f->log.mu);
    for (const char *s = f->log.text.len > 0 ? (char *)f->log.text.p : NULL;
         s != NULL && (s = strstr(s, needle)) != NULL; s += strlen(needle))
        n++;
    pthread_mutex_unlock(&f->log.mu);
    return n;
}

static int rk_errors(fixture_t *f)
{
    pthread_mutex_lock(&f->log.mu);
    int n = f->log.errors;
    pthread_mutex_unlock(&f->log.mu);
    return n;
}

/* The result of one topic of an admin request. */
typedef struct topic_result_s {
    char name[256];
    rd_kafka_resp_err_t err;
    char msg[512];
} topic_result_t;

/* Wait for the admin result event of `type` on `q`. */
static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
    int64_t deadline = kc_now_ms() + RK_TIMEOUT_MS;
    while (kc_now_ms() < deadline) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 500);
        if (ev == NULL)
            continue;
        if (rd_kafka_event_type(ev) == type)
            return ev;
        rd_kafka_event_destroy(ev);
    }
    fail_msg("no admin result within %d ms", RK_TIMEOUT_MS);
    return NULL;
}

static void copy_results(const rd_kafka_topic_result_t **tr, size_t n, topic_result_t *out)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(out[i].name, sizeof(out[i].name), "%s", rd_kafka_topic_result_name(tr[i]));
        out[i].err = rd_kafka_topic_result_error(tr[i]);
        const char *s = rd_kafka_topic_result_error_string(tr[i]);
        snprintf(out[i].msg, sizeof(out[i].msg), "%s", s ? s : "");
    }
}

/* rd_kafka_CreateTopics for n topics; results in out[0..n), by request order. */
static void admin_create_configs(rd_kafka_t *rk, int n, const char *const *names,
                                 const int *partitions, const int *rf,
                                 const char *const (*configs)[2], int validate_only,
                                 topic_result_t *out)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt[8];
    assert_true(n <= 8);
    for (int i = 0; i < n; i++) {
        nt[i] = rd_kafka_NewTopic_new(names[i], partitions[i], rf[i], errstr, sizeof(errstr));
        if (nt[i] == NULL)
            fail_msg("rd_kafka_NewTopic_new %s: %s", names[i], errstr);
        if (configs != NULL && configs[i][0] != NULL &&
            rd_kafka_NewTopic_set_config(nt[i], configs[i][0], configs[i][1]) != 0)
            fail_msg("rd_kafka_NewTopic_set_config %s", configs[i][0]);
    }
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    if (validate_only &&
        rd_kafka_AdminOptions_set_validate_only(opt, 1, errstr, sizeof(errstr)) != 0)
        fail_msg("set_validate_only: %s", errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, nt, (size_t)n, opt, q);
    rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT);
    if (rd_kafka_event_error(ev))
        fail_msg("CreateTopics: %s", rd_kafka_event_error_string(ev));
    size_t cnt;
    const rd_kafka_topic_result_t **tr =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
    assert_int_equal(cnt, (size_t)n);
    copy_results(tr, cnt, out);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(opt);
    for (int i = 0; i < n; i++)
        rd_kafka_NewTopic_destroy(nt[i]);
}

static void admin_create(rd_kafka_t *rk, int n, const char *const *names, const int *partitions,
                         const int *rf, int validate_only, topic_result_t *out)
{
    admin_create_configs(rk, n, names, partitions, rf, NULL, validate_only, out);
}

static void admin_delete(rd_kafka_t *rk, int n, const char *const *names, topic_result_t *out)
{
    rd_kafka_DeleteTopic_t *dt[8];
    assert_true(n <= 8);
    for (int i = 0; i < n; i++)
        dt[i] = rd_kafka_DeleteTopic_new(names[i]);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, dt, (size_t)n, NULL, q);
    rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT);
    if (rd_kafka_event_error(ev))
        fail_msg("DeleteTopics: %s", rd_kafka_event_error_string(ev));
    size_t cnt;
    const rd_kafka_topic_result_t **tr =
        rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &cnt);
    assert_int_equal(cnt, (size_t)n);
    copy_results(tr, cnt, out);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    for (int i = 0; i < n; i++)
        rd_kafka_DeleteTopic_destroy(dt[i]);
}

/* The result for `name` among out[0..n). */
static const topic_result_t *result_for(const topic_result_t *out, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(out[i].name, name) == 0)
            return &out[i];
    fail_msg("no result for topic %s", name);
    return NULL;
}

/* Metadata for all topics: the partition count of `name`, or -1 when it is not listed. */
static int rk_partitions(rd_kafka_t *rk, const char *name)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, RK_TIMEOUT_MS);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("rd_kafka_metadata: %s", rd_kafka_err2str(err));
    int n = -1;
    for (int i = 0; i < md->topic_cnt; i++) {
        if (strcmp(md->topics[i].topic, name) != 0)
            continue;
        assert_int_equal(md->topics[i].err, RD_KAFKA_RESP_ERR_NO_ERROR);
        n = md->topics[i].partition_cnt;
        for (int j = 0; j < n; j++)
            assert_int_equal(md->topics[i].partitions[j].leader, NODE_ID);
    }
    rd_kafka_metadata_destroy(md);
    return n;
}

/* Metadata for the one topic `name` (which librdkafka may ask to auto-create): its error and,
 * through *partitions, its partition count. */
static rd_kafka_resp_err_t rk_topic_metadata(rd_kafka_t *rk, const char *name, int *partitions)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, name, NULL);
    assert_non_null(rkt);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, RK_TIMEOUT_MS);
    rd_kafka_topic_destroy(rkt);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("rd_kafka_metadata(%s): %s", name, rd_kafka_err2str(err));
    assert_int_equal(md->topic_cnt, 1);
    assert_string_equal(md->topics[0].topic, name);
    err = md->topics[0].err;
    *partitions = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return err;
}

/* Topic configs are checked as Kafka's controller checks them: names against Kafka's topic
 * configs, values against their types and allowed values; a valid one is accepted. */
static void test_admin_create_configs(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *rk = new_client(f, RD_KAFKA_PRODUCER, NULL);
    topic_result_t r[5];
    const char *const names[] = {"cfg-ok", "cfg-unknown", "cfg-policy", "cfg-long", "cfg-bool"};
    const int parts[] = {1, 1, 1, 1, 1}, rfs[] = {1, 1, 1, 1, 1};
    const char *const configs[][2] = {{"cleanup.policy", "compact,delete"},
                                      {"no.such.config", "x"},
                                      {"cleanup.policy", "sideways"},
                                      {"retention.ms", "soon"},
                                      {"preallocate", "yes"}};
    admin_create_configs(rk, 5, names, parts, rfs, configs, 0, r);
    assert_int_equal(result_for(r, 5, "cfg-ok")->err, RD_KAFKA_RESP_ERR_NO_ERROR);
    const struct {
        const char *name, *msg;
    } bad[] = {
        {"cfg-unknown", "Unknown topic config name: no.such.config"},
        {"cfg-policy", "Invalid value sideways for configuration cleanup.policy: String must be "
                       "one of: compact, delete"},
        {"cfg-long", "Invalid value soon for configuration retention.ms: Not a number of type "
                     "LONG"},
        {"cfg-bool", "Invalid value yes for configuration preallocate: Expected value to be "
                     "either true or false"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const topic_result_t *t = result_for(r, 5, bad[i].name);
        assert_int_equal(t->err, RD_KAFKA_RESP_ERR_INVALID_CONFIG);
        assert_string_equal(t->msg, bad[i].msg);
        int np;
        assert_int_equal(rk_topic_metadata(rk, bad[i].name, &np),
                         RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    }
    assert_int_equal(rk_partitions(rk, "cfg-ok"), 1);
    destroy_client(f);
    f->proc.ok = 1;
}

static void test_admin_create_and_delete(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *rk = new_client(f, RD_KAFKA_PRODUCER, NULL);
    topic_result_t r[8];

    /* Created: four partitions; -1 partitions takes num.partitions (2). */
    const char *const names[] = {"payments", "defaulted"};
    const int parts[] = {4, -1}, rfs[] = {1, -1};
    admin_create(rk, 2, names, parts, rfs, 0, r);
    assert_int_equal(result_for(r, 2, "payments")->err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(result_for(r, 2, "defaulted")->err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_partitions(rk, "payments"), 4);
    assert_int_equal(rk_partitions(rk, "defaulted"), 2);
    assert_int_equal(rk_partitions(rk, "orders"), 3);

    /* validate_only: accepted, nothing created. */
    const char *const vnames[] = {"validated"};
    const int vparts[] = {6}, vrfs[] = {1};
    admin_create(rk, 1, vnames, vparts, vrfs, 1, r);
    assert_int_equal(r[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_partitions(rk, "validated"), -1);

    /* An existing topic, a replication factor of 3 on one broker, an illegal name. */
    const char *const bad[] = {"payments", "replicated", "bad name", "orders"};
    const int bparts[] = {1, 1, 1, 9}, brfs[] = {1, 3, 1, 1};
    admin_create(rk, 4, bad, bparts, brfs, 0, r);
    const topic_result_t *x = result_for(r, 4, "payments");
    assert_int_equal(x->err, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
    assert_string_equal(x->msg, "Topic 'payments' already exists.");
    x = result_for(r, 4, "replicated");
    assert_int_equal(x->err, RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR);
    assert_non_null(strstr(x->msg, "only 1 broker(s) are registered"));
    x = result_for(r, 4, "bad name");
    assert_int_equal(x->err, RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION);
    assert_non_null(strstr(x->msg, "Topic name is invalid"));
    assert_int_equal(result_for(r, 4, "orders")->err, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
    assert_int_equal(rk_partitions(rk, "orders"), 3); /* unchanged */
    assert_int_equal(rk_partitions(rk, "replicated"), -1);

    /* Deleted, and gone from Metadata; unknown topics are answered as such. */
    const char *const del[] = {"payments", "nope"};
    admin_delete(rk, 2, del, r);
    assert_int_equal(result_for(r, 2, "payments")->err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(result_for(r, 2, "nope")->err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    assert_int_equal(rk_partitions(rk, "payments"), -1);
    assert_int_equal(rk_partitions(rk, "defaulted"), 2);

    /* A configured topic can be deleted too, and created again with another count. */
    const char *const del2[] = {"events"};
    admin_delete(rk, 1, del2, r);
    assert_int_equal(r[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    const int eparts[] = {3}, erfs[] = {1};
    admin_create(rk, 1, del2, eparts, erfs, 0, r);
    assert_int_equal(r[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_partitions(rk, "events"), 3);
    assert_true(kc_proc_wait_log(&f->proc, "deleted topic payments", NULL, 1000));
    assert_int_equal(rk_errors(f), 0);
    destroy_client(f);
    f->proc.ok = 1;
}

/* Offsets committed for a topic go with it: after DeleteTopics and a CreateTopics of the same
 * name, the group has no committed offset for it (the coordinator dropped them). */
static void test_delete_drops_committed_offsets(void **state)
{
    fixture_t *f = *state;
    const char *const kv[] = {"group.id", "topics-it", "enable.auto.commit", "false", NULL};
    rd_kafka_t *rk = new_client(f, RD_KAFKA_CONSUMER, kv);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(l, "orders", 0)->offset = 42;
    rd_kafka_topic_partition_list_add(l, "events", 0)->offset = 7;
    rd_kafka_resp_err_t err = rd_kafka_commit(rk, l, 0);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("commit: %s", rd_kafka_err2str(err));
    l->elems[0].offset = l->elems[1].offset = -7;
    assert_int_equal(rd_kafka_committed(rk, l, RK_TIMEOUT_MS), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(l->elems[0].offset, 42);
    assert_int_equal(l->elems[1].offset, 7);

    topic_result_t r[1];
    const char *const orders[] = {"orders"};
    admin_delete(rk, 1, orders, r);
    assert_int_equal(r[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    const int parts[] = {3}, rfs[] = {1};
    admin_create(rk, 1, orders, parts, rfs, 0, r);
    assert_int_equal(r[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    l->elems[0].offset = l->elems[1].offset = -7;
    assert_int_equal(rd_kafka_committed(rk, l, RK_TIMEOUT_MS), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(l->elems[0].offset, RD_KAFKA_OFFSET_INVALID);
    assert_int_equal(l->elems[1].offset, 7); /* the other topic keeps its offset */
    rd_kafka_topic_partition_list_destroy(l);
    destroy_client(f);
    f->proc.ok = 1;
}

/* The prestate turns auto.create.topics.enable on, with num.partitions 5. */
static void test_auto_create(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *rk = new_client(f, RD_KAFKA_PRODUCER, NULL); /* asks to auto-create */
    int n = 0;
    assert_int_equal(rk_topic_metadata(rk, "auto-made", &n), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(n, 5);
    assert_int_equal(rk_partitions(rk, "auto-made"), 5);
    assert_true(kc_proc_wait_log(&f->proc, "auto-created topic auto-made", NULL, 1000));
    /* Internal names are not created. */
    assert_int_equal(rk_topic_metadata(rk, "__consumer_offsets", &n),
                     RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    destroy_client(f);

    /* A consumer does not ask for it (allow.auto.create.topics defaults to false). */
    const char *const kv[] = {"group.id", "g", NULL};
    rk = new_client(f, RD_KAFKA_CONSUMER, kv);
    assert_int_equal(rk_topic_metadata(rk, "not-made", &n),
                     RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    assert_int_equal(rk_partitions(rk, "not-made"), -1);
    destroy_client(f);
    f->proc.ok = 1;
}

/* Without auto.create.topics.enable a producer's request creates nothing. */
static void test_no_auto_create(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *rk = new_client(f, RD_KAFKA_PRODUCER, NULL);
    int n = 0;
    assert_int_equal(rk_topic_metadata(rk, "auto-made", &n),
                     RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    assert_int_equal(rk_partitions(rk, "auto-made"), -1);
    destroy_client(f);
    f->proc.ok = 1;
}

static void test_watermarks(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *rk = new_client(f, RD_KAFKA_PRODUCER, NULL);
    for (int p = 0; p < 3; p++) {
        int64_t low = -7, high = -7;
        rd_kafka_resp_err_t err =
            rd_kafka_query_watermark_offsets(rk, "orders", p, &low, &high, RK_TIMEOUT_MS);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail_msg("watermarks of orders [%d]: %s", p, rd_kafka_err2str(err));
        assert_int_equal(low, 0);
        assert_int_equal(high, 0);
    }
    int64_t low, high;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(rk, "orders", 3, &low, &high, RK_TIMEOUT_MS);
    assert_int_not_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
    destroy_client(f);
    f->proc.ok = 1;
}

/* A consumer assigned at offset 5 fetches for two seconds: no error, no offset reset (with
 * auto.offset.reset=error any reset would be an error), and several empty fetches, each one a
 * long poll of fetch.wait.max.ms. */
static void test_consumer_fetches_from_offset(void **state)
{
    fixture_t *f = *state;
    const char *const kv[] = {"group.id",
                              "topics-it",
                              "auto.offset.reset",
                              "error",
                              "enable.auto.commit",
                              "false",
                              "fetch.wait.max.ms",
                              "400",
                              "debug",
                              "fetch,msg",
                              NULL};
    rd_kafka_t *rk = new_client(f, RD_KAFKA_CONSUMER, kv);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, "orders", 1)->offset = 5;
    assert_int_equal(rd_kafka_assign(rk, l), RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t until = kc_now_ms() + 2000;
    int errors = 0;
    while (kc_now_ms() < until) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m == NULL)
            continue;
        if (m->err) {
            fprintf(stderr, "consumer error: %s: %s\n", rd_kafka_err2name(m->err),
                    rd_kafka_message_errstr(m));
            errors++;
        } else {
            fprintf(stderr, "unexpected message at offset %lld\n", (long long)m->offset);
            errors++;
        }
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(errors, 0);
    assert_int_equal(rk_errors(f), 0);
    int fetches = rk_count(f, "MessageSet size 0, error \"Success\", MaxOffset 5");
    if (fetches < 2 || fetches > 8)
        fail_msg("%d empty fetches at offset 5 in 2 s, want 2..8 (400 ms long polls)", fetches);
    /* Every fetch asked for offset 5: no reset moved it, and no ListOffsets was needed. */
    int asked = rk_count(f, "Fetch topic orders [1] at offset 5");
    assert_true(asked >= fetches);
    assert_int_equal(rk_count(f, "Fetch topic orders [1] at offset"), asked);
    assert_int_equal(rk_count(f, "reset"), 0);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_assign(rk, NULL);
    destroy_client(f);
    f->proc.ok = 1;
}

/* A delivery report: its error and when it came. */
typedef struct dr_s {
    pthread_mutex_t mu;
    int done;
    rd_kafka_resp_err_t err;
} dr_t;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    dr_t *dr = m->_private;
    (void)opaque;
    pthread_mutex_lock(&dr->mu);
    dr->done = 1;
    dr->err = m->err;
    pthread_mutex_unlock(&dr->mu);
}

/* A producer's message fails with POLICY_VIOLATION long before message.timeout.ms (5 min):
 * only a non-retriable error explains a quick failure. */
static void test_producer_fails_fast(void **state)
{
    fixture_t *f = *state;
    char bootstrap[64], errstr[512];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", f->proc.port);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", bootstrap);
    conf_set(conf, "message.timeout.ms", "300000");
    conf_set(conf, "linger.ms", "0");
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_opaque(conf, &f->log);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    assert_non_null(f->rk);
    dr_t dr = {.done = 0};
    pthread_mutex_init(&dr.mu, NULL);
    int64_t start = kc_now_ms();
    rd_kafka_resp_err_t err = rd_kafka_producev(
        f->rk, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(2), RD_KAFKA_V_VALUE("v", 1),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(&dr), RD_KAFKA_V_END);
    assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
    int done = 0;
    while (!done && kc_now_ms() - start < 10000) {
        rd_kafka_poll(f->rk, 100);
        pthread_mutex_lock(&dr.mu);
        done = dr.done;
        pthread_mutex_unlock(&dr.mu);
    }
    int64_t took = kc_now_ms() - start;
    pthread_mutex_destroy(&dr.mu);
    if (!done)
        fail_msg("no delivery report within 10 s");
    fprintf(stderr, "delivery report after %lld ms: %s (%s)\n", (long long)took,
            rd_kafka_err2name(dr.err), rd_kafka_err2str(dr.err));
    assert_int_equal(dr.err, RD_KAFKA_RESP_ERR_POLICY_VIOLATION);
    destroy_client(f);
    f->proc.ok = 1;
}

/* ---- Raw frames ------------------------------------------------------------------------------ */

static void out_i64(kc_buf_t *b, int64_t v)
{
    kc_out_i32(b, (int32_t)((uint64_t)v >> 32));
    kc_out_i32(b, (int32_t)(uint32_t)v);
}

static void out_uuid(kc_buf_t *b, const uint8_t *id)
{
    static const uint8_t zero[16];
    kc_out_bytes(b, id ? id : zero, 16);
}

/* Send `req` and read one response frame into `resp` (correlation id checked, header tags
 * skipped when `flex`); `r` reads the body. */
static void roundtrip(int fd, kc_buf_t *req, kc_buf_t *resp, int32_t corr, int flex, kc_in_t *r)
{
    int rc = kc_sock_send(fd, req->p, req->len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(fd, resp, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK)
        fail_msg("request/response: %s", kc_sock_strerror(rc));
    kc_in_init(r, resp->p, resp->len);
    assert_int_equal(kc_in_i32(r), corr);
    if (flex)
        kc_in_tags(r);
}

/* One CreateTopics v7 topic to ask for. */
typedef struct new_topic_s {
    const char *name;
    int32_t partitions;
    int16_t rf;
    int n_assign;             /* partitions assigned by hand */
    const int32_t *assign[4]; /* each: count, then broker ids */
    const char *config;       /* one config name (value "1"), or NULL */
} new_topic_t;

typedef struct create_result_s {
    char name[300];
    uint8_t id[16];
    int16_t err;
    char msg[600];
    int32_t partitions;
    int16_t rf;
    int32_t n_configs;
} create_result_t;

/* CreateTopics v`v` (5..7: flexible) for t[0..n); the results, in answer order, in out. */
static int create_raw(int fd, int16_t v, const new_topic_t *t, int n, int validate_only,
                      create_result_t *out, int max)
{
    kc_buf_t req = {0}, resp = {0};
    size_t at = kc_req_begin(&req, 19, v, 1900 + v, "kcoord-it", 1);
    kc_out_uvarint(&req, (uint32_t)n + 1);
    for (int i = 0; i < n; i++) {
        kc_out_cstr(&req, t[i].name);
        kc_out_i32(&req, t[i].partitions);
        kc_out_i16(&req, t[i].rf);
        kc_out_uvarint(&req, (uint32_t)t[i].n_assign + 1);
        for (int p = 0; p < t[i].n_assign; p++) {
            const int32_t *a = t[i].assign[p];
            kc_out_i32(&req, a[0]); /* partition index */
            kc_out_uvarint(&req, (uint32_t)a[1] + 1);
            for (int j = 0; j < a[1]; j++)
                kc_out_i32(&req, a[2 + j]);
            kc_out_uvarint(&req, 0);
        }
        kc_out_uvarint(&req, t[i].config ? 2 : 1);
        if (t[i].config) {
            kc_out_cstr(&req, t[i].config);
            kc_out_cstr(&req, "1");
            kc_out_uvarint(&req, 0);
        }
        kc_out_uvarint(&req, 0);
    }
    kc_out_i32(&req, 30000);
    kc_out_i8(&req, (int8_t)validate_only);
    kc_out_uvarint(&req, 0);
    kc_req_end(&req, at);
    kc_in_t r;
    roundtrip(fd, &req, &resp, 1900 + v, 1, &r);
    kc_in_i32(&r); /* throttle */
    int32_t nr = kc_in_count(&r, 1);
    assert_true(nr >= 0 && nr <= max);
    for (int32_t i = 0; i < nr; i++) {
        create_result_t *c = &out[i];
        kc_in_str(&r, 1, c->name, sizeof(c->name));
        memset(c->id, 0, 16);
        if (v >= 7)
            for (int k = 0; k < 16; k++)
                c->id[k] = (uint8_t)kc_in_i8(&r);
        c->err = kc_in_i16(&r);
        kc_in_str(&r, 1, c->msg, sizeof(c->msg));
        c->partitions = kc_in_i32(&r);
        c->rf = kc_in_i16(&r);
        c->n_configs = kc_in_count(&r, 1);
        for (int32_t k = 0; k < c->n_configs; k++) {
            char s[256];
            kc_in_str(&r, 1, s, sizeof(s));
            kc_in_str(&r, 1, s, sizeof(s));
            kc_in_skip(&r, 3);
            kc_in_tags(&r);
        }
        kc_in_tags(&r);
    }
    kc_in_tags(&r);
    assert_false(r.err);
    assert_int_equal(kc_in_left(&r), 0);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    return nr;
}

static const create_result_t *raw_result(const create_result_t *c, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0)
            return &c[i];
    fail_msg("no CreateTopics result for \"%s\"", name);
    return NULL;
}

static void expect_refusal(const create_result_t *c, int n, const char *name, int16_t err,
                           const char *msg)
{
    const create_result_t *x = raw_result(c, n, name);
    if (x->err != err || strcmp(x->msg, msg) != 0)
        fail_msg("%s: error %d \"%s\", want %d \"%s\"", name, x->err, x->msg, err, msg);
    assert_int_equal(x->partitions, -1);
    assert_int_equal(x->rf, -1);
}

/* Metadata v4 for one topic, with allow_auto_topic_creation `allow`: the topic's error and
 * partition count. */
static int16_t metadata_raw(int fd, const char *name, int allow, int32_t *partitions)
{
    kc_buf_t req = {0}, resp = {0};
    size_t at = kc_req_begin(&req, 3, 4, 304, "kcoord-it", 0);
    kc_out_i32(&req, 1);
    kc_out_str(&req, name);
    kc_out_i8(&req, (int8_t)allow);
    kc_req_end(&req, at);
    kc_in_t r;
    roundtrip(fd, &req, &resp, 304, 0, &r);
    char s[300];
    kc_in_i32(&r); /* throttle */
    int32_t nb = kc_in_count(&r, 0);
    for (int32_t i = 0; i < nb; i++) {
        kc_in_i32(&r);
        kc_in_str(&r, 0, s, sizeof(s));
        kc_in_i32(&r);
        kc_in_str(&r, 0, s, sizeof(s));
    }
    kc_in_str(&r, 0, s, sizeof(s)); /* cluster id */
    kc_in_i32(&r);                  /* controller */
    assert_int_equal(kc_in_count(&r, 0), 1);
    int16_t err = kc_in_i16(&r);
    kc_in_str(&r, 0, s, sizeof(s));
    assert_string_equal(s, name);
    kc_in_i8(&r);
    *partitions = kc_in_count(&r, 0);
    assert_false(r.err);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    return err;
}

/* Every refusal of CreateTopics with Kafka's code and message, and the shape of a success. */
static void test_create_topics_raw(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    create_result_t c[16];
    char long_name[251];
    memset(long_name, 'x', 250);
    long_name[250] = '\0';
    static const int32_t self0[] = {0, 1, NODE_ID}, self1[] = {1, 1, NODE_ID}, other0[] = {0, 1, 3},
                         twice0[] = {0, 2, NODE_ID, NODE_ID}, empty0[] = {0, 0},
                         gap2[] = {2, 1, NODE_ID};
    const new_topic_t t[] = {
        {"zero-partitions", 0, 1, 0, {0}, NULL},
        {"minus-two", -2, 1, 0, {0}, NULL},
        {"rf-zero", 1, 0, 0, {0}, NULL},
        {"rf-three", 1, 3, 0, {0}, NULL},
        {".", 1, 1, 0, {0}, NULL},
        {"a b", 1, 1, 0, {0}, NULL},
        {long_name, 1, 1, 0, {0}, NULL},
        {"orders", 1, 1, 0, {0}, NULL},
        {"__consumer_offsets", 1, 1, 0, {0}, NULL},
        {"twice", 1, 1, 0, {0}, NULL},
        {"twice", 2, 1, 0, {0}, NULL},
        {"manual-other", -1, -1, 1, {other0}, NULL},
        {"manual-rf", -1, 1, 1, {self0}, NULL},
        {"manual-twice", -1, -1, 1, {twice0}, NULL},
        {"manual-empty", -1, -1, 1, {empty0}, NULL},
        {"manual-gap", -1, -1, 2, {self0, gap2}, NULL},
    };
    int n = create_raw(fd, 7, t, 16, 0, c, 16);
    assert_int_equal(n, 15); /* "twice" answered once */
    expect_refusal(c, n, "zero-partitions", 37,
                   "Number of partitions was set to an invalid non-positive value.");
    expect_refusal(c, n, "minus-two", 37,
                   "Number of partitions was set to an invalid non-positive value.");
    expect_refusal(c, n, "rf-zero", 38,
                   "Replication factor must be larger than 0, or -1 to use the default value.");
    expect_refusal(c, n, "rf-three", 38,
                   "Unable to replicate the partition 3 time(s): The target replication factor "
                   "of 3 cannot be reached because only 1 broker(s) are registered or some "
                   "brokers have all their log directories cordoned.");
    expect_refusal(c, n, ".", 17, "Topic name is invalid: '.' is not allowed");
    expect_refusal(c, n, "a b", 17,
                   "Topic name is invalid: 'a b' contains one or more characters other than "
                   "ASCII alphanumerics, '.', '_' and '-'");
    char want[600];
    snprintf(want, sizeof(want),
             "Topic name is invalid: the length of '%s' is longer than the max allowed length "
             "249",
             long_name);
    expect_refusal(c, n, long_name, 17, want);
    expect_refusal(c, n, "orders", 36, "Topic 'orders' already exists.");
    expect_refusal(c, n, "__consumer_offsets", 42,
                   "Creation of internal topic __consumer_offsets is prohibited.");
    expect_refusal(c, n, "twice", 42, "Duplicate topic name.");
    assert_string_equal(c[n - 1].name, "twice"); /* after the others, as Kafka */
    expect_refusal(c, n, "manual-other", 39,
                   "The manual partition assignment includes broker 3, but no such broker is "
                   "registered.");
    expect_refusal(c, n, "manual-rf", 42,
                   "A manual partition assignment was specified, but replication factor was not "
                   "set to -1.");
    expect_refusal(c, n, "manual-twice", 39,
                   "The manual partition assignment includes the broker 7 more than once.");
    expect_refusal(c, n, "manual-empty", 39,
                   "The manual partition assignment includes an empty replica list.");
    expect_refusal(c, n, "manual-gap", 39,
                   "partitions should be a consecutive 0-based integer sequence");

    /* Successes: counts, replication factor 1, the topic id (v7), no configs. validate_only
     * answers the same and creates nothing. */
    const new_topic_t ok[] = {
        {"made.here", 3, -1, 0, {0}, "retention.ms"},
        {"manual", -1, -1, 2, {self1, self0}, NULL},
        {"defaulted", -1, 1, 0, {0}, NULL},
    };
    create_result_t v[3];
    assert_int_equal(create_raw(fd, 7, ok, 3, 1, v, 3), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(v[i].err, 0);
        assert_int_equal(v[i].rf, 1);
        assert_int_equal(v[i].n_configs, 0);
        static const uint8_t zero[16];
        assert_memory_not_equal(v[i].id, zero, 16);
    }
    int32_t np = 0;
    assert_int_equal(metadata_raw(fd, "made.here", 1, &np), 3); /* not created */
    assert_int_equal(create_raw(fd, 7, ok, 3, 0, c, 3), 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(c[i].name, ok[i].name);
        assert_int_equal(c[i].err, 0);
        assert_memory_equal(c[i].id, v[i].id, 16);
    }
    assert_int_equal(c[0].partitions, 3);
    assert_int_equal(c[1].partitions, 2);
    assert_int_equal(c[2].partitions, 2); /* num.partitions */
    assert_int_equal(metadata_raw(fd, "manual", 0, &np), 0);
    assert_int_equal(np, 2);

    /* '.' and '_' collide with an existing topic; v5 answers without topic ids. */
    const new_topic_t col[] = {{"made_here", 1, 1, 0, {0}, NULL}};
    assert_int_equal(create_raw(fd, 5, col, 1, 0, c, 1), 1);
    expect_refusal(c, 1, "made_here", 17,
                   "Topic 'made_here' collides with existing topic: made.here");
    f->proc.ok = 1;
}

typedef struct delete_result_s {
    char name[300];
    int name_len;
    uint8_t id[16];
    int16_t err;
    char msg[300];
} delete_result_t;

/* DeleteTopics v6 for entries (name or NULL, id or NULL). */
static int delete_raw(int fd, const char *const *names, const uint8_t *const *ids, int n,
                      delete_result_t *out, int max)
{
    kc_buf_t req = {0}, resp = {0};
    size_t at = kc_req_begin(&req, 20, 6, 2006, "kcoord-it", 1);
    kc_out_uvarint(&req, (uint32_t)n + 1);
    for (int i = 0; i < n; i++) {
        kc_out_cstr(&req, names[i]);
        out_uuid(&req, ids[i]);
        kc_out_uvarint(&req, 0);
    }
    kc_out_i32(&req, 30000);
    kc_out_uvarint(&req, 0);
    kc_req_end(&req, at);
    kc_in_t r;
    roundtrip(fd, &req, &resp, 2006, 1, &r);
    kc_in_i32(&r);
    int32_t nr = kc_in_count(&r, 1);
    assert_true(nr >= 0 && nr <= max);
    for (int32_t i = 0; i < nr; i++) {
        out[i].name_len = kc_in_str(&r, 1, out[i].name, sizeof(out[i].name));
        for (int k = 0; k < 16; k++)
            out[i].id[k] = (uint8_t)kc_in_i8(&r);
        out[i].err = kc_in_i16(&r);
        kc_in_str(&r, 1, out[i].msg, sizeof(out[i].msg));
        kc_in_tags(&r);
    }
    kc_in_tags(&r);
    assert_false(r.err);
    assert_int_equal(kc_in_left(&r), 0);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    return nr;
}

/* DeleteTopics v6: by id, by name, and every refusal. */
static void test_delete_topics_raw(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    create_result_t c[4];
    const new_topic_t t[] = {{"by-id", 2, 1, 0, {0}, NULL},
                             {"by-name", 2, 1, 0, {0}, NULL},
                             {"aliased", 1, 1, 0, {0}, NULL}};
    assert_int_equal(create_raw(fd, 7, t, 3, 0, c, 4), 3);
    uint8_t unknown[16];
    memset(unknown, 0x42, 16);
    const char *const names[] = {"by-name", NULL,  NULL,  "nope",    NULL,
                                 "x",       "dup", "dup", "aliased", NULL};
    const uint8_t *const ids[] = {NULL,    c[0].id, unknown, NULL, NULL,
                                  c[0].id, NULL,    NULL,    NULL, c[2].id};
    delete_result_t d[10];
    int n = delete_raw(fd, names, ids, 10, d, 10);
    assert_int_equal(n, 8); /* one answer for "dup"; none for the aliased id */
    assert_string_equal(d[0].name, "by-name");
    assert_int_equal(d[0].err, 0);
    assert_memory_equal(d[0].id, c[1].id, 16);
    assert_string_equal(d[1].name, "by-id"); /* the name of a topic deleted by id */
    assert_int_equal(d[1].err, 0);
    assert_int_equal(d[2].name_len, -1);
    assert_int_equal(d[2].err, 100);
    assert_string_equal(d[2].msg, "This server does not host this topic ID.");
    assert_string_equal(d[3].name, "nope");
    assert_int_equal(d[3].err, 3);
    assert_string_equal(d[3].msg, "This server does not host this topic-partition.");
    assert_int_equal(d[4].err, 42);
    assert_string_equal(d[4].msg, "Neither topic name nor id were specified.");
    assert_int_equal(d[5].err, 42);
    assert_string_equal(d[5].msg, "You may not specify both topic name and topic id.");
    assert_string_equal(d[6].name, "dup");
    assert_int_equal(d[6].err, 42);
    assert_string_equal(d[6].msg, "Duplicate topic name.");
    assert_string_equal(d[7].name, "aliased");
    assert_int_equal(d[7].err, 42);
    assert_string_equal(d[7].msg,
                        "The provided topic name maps to an ID that was already supplied.");
    int32_t np;
    assert_int_equal(metadata_raw(fd, "by-id", 0, &np), 3);
    assert_int_equal(metadata_raw(fd, "by-name", 0, &np), 3);
    assert_int_equal(metadata_raw(fd, "aliased", 0, &np), 0); /* kept */
    assert_true(kc_proc_wait_log(&f->proc, "deleted topic by-id", NULL, 1000));
    f->proc.ok = 1;
}

/* Metadata v4 with allow_auto_topic_creation false creates nothing, even when the daemon
 * auto-creates (the prestate); with it true the topic is answered whole at once. */
static void test_auto_create_raw(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    int32_t np = -1;
    assert_int_equal(metadata_raw(fd, "not-allowed", 0, &np), 3);
    assert_int_equal(metadata_raw(fd, "allowed", 1, &np), 0);
    assert_int_equal(np, 5);
    assert_int_equal(metadata_raw(fd, "not-allowed", 0, &np), 3);
    assert_int_equal(metadata_raw(fd, "bad name", 1, &np), 17);
    f->proc.ok = 1;
}

/* One ListOffsets v7 partition to ask for. */
typedef struct lo_s {
    const char *topic;
    int32_t partition, epoch;
    int64_t timestamp;
} lo_t;

typedef struct lo_result_s {
    int32_t partition;
    int16_t err;
    int64_t timestamp, offset;
    int32_t epoch;
} lo_result_t;

/* ListOffsets v7, one topic entry per lo_t (so a repeated partition can be asked twice). */
static void list_offsets_raw(int fd, const lo_t *q, int n, lo_result_t *out)
{
    kc_buf_t req = {0}, resp = {0};
    size_t at = kc_req_begin(&req, 2, 7, 207, "kcoord-it", 1);
    kc_out_i32(&req, -1);
    kc_out_i8(&req, 0);
    kc_out_uvarint(&req, (uint32_t)n + 1);
    for (int i = 0; i < n; i++) {
        kc_out_cstr(&req, q[i].topic);
        kc_out_uvarint(&req, 2);
        kc_out_i32(&req, q[i].partition);
        kc_out_i32(&req, q[i].epoch);
        out_i64(&req, q[i].timestamp);
        kc_out_uvarint(&req, 0);
        kc_out_uvarint(&req, 0);
    }
    kc_out_uvarint(&req, 0);
    kc_req_end(&req, at);
    kc_in_t r;
    roundtrip(fd, &req, &resp, 207, 1, &r);
    kc_in_i32(&r);
    assert_int_equal(kc_in_count(&r, 1), n);
    for (int i = 0; i < n; i++) {
        char s[256];
        kc_in_str(&r, 1, s, sizeof(s));
        assert_string_equal(s, q[i].topic);
        int np = kc_in_count(&r, 1);
        assert_true(np == 0 || np == 1);
        if (np == 0) { /* not answered: a repeat of a partition answered before */
            out[i].err = -1;
            kc_in_tags(&r);
            continue;
        }
        out[i].partition = kc_in_i32(&r);
        out[i].err = kc_in_i16(&r);
        out[i].timestamp = kc_in_i64(&r);
        out[i].offset = kc_in_i64(&r);
        out[i].epoch = kc_in_i32(&r);
        kc_in_tags(&r);
        kc_in_tags(&r);
    }
    kc_in_tags(&r);
    assert_false(r.err);
    assert_int_equal(kc_in_left(&r), 0);
    kc_buf_free(&req);
    kc_buf_free(&resp);
}

static void test_list_offsets_raw(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    const lo_t q[] = {
        {"orders", 0, -1, -2},            /* earliest */
        {"orders", 1, 0, -1},             /* latest, epoch 0 */
        {"orders", 2, -1, -3},            /* max timestamp: no record */
        {"events", 0, -1, 1700000000000}, /* a time: no record */
        {"orders", 3, -1, -1},            /* no such partition */
        {"nope", 0, -1, -1},              /* no such topic */
        {"orders", 0, -1, -1},            /* asked twice (with the first entry) */
    };
    lo_result_t r[7];
    list_offsets_raw(fd, q, 7, r);
    assert_int_equal(r[0].err, 42); /* duplicated: refused, and answered once */
    assert_int_equal(r[6].err, -1);
    assert_int_equal(r[1].err, 0);
    assert_int_equal(r[1].offset, 0);
    assert_int_equal(r[1].timestamp, -1);
    assert_int_equal(r[1].epoch, 0);
    for (int i = 2; i <= 3; i++) {
        assert_int_equal(r[i].err, 0);
        assert_int_equal(r[i].offset, -1);
        assert_int_equal(r[i].timestamp, -1);
        assert_int_equal(r[i].epoch, -1);
    }
    assert_int_equal(r[4].err, 3);
    assert_int_equal(r[5].err, 3);

    const lo_t e[] = {{"orders", 0, -1, -2}, {"events", 0, 4, -1}, {"orders", 1, -1, -4}};
    list_offsets_raw(fd, e, 3, r);
    assert_int_equal(r[0].err, 0);
    assert_int_equal(r[0].offset, 0);
    assert_int_equal(r[0].epoch, 0);
    assert_int_equal(r[1].err, 75); /* a newer leader epoch than 0 */
    assert_int_equal(r[2].err, 0);  /* earliest local */
    assert_int_equal(r[2].offset, 0);
    f->proc.ok = 1;
}

/* One Fetch partition to ask for. */
typedef struct fq_s {
    const char *topic;
    const uint8_t *id; /* v13+ */
    int32_t partition;
    int64_t offset;
} fq_t;

/* Append Fetch v`v` (12 or 13) with max_wait_ms `wait` and the session fields. */
static void put_fetch(kc_buf_t *b, int16_t v, int32_t corr, int32_t wait, int32_t session_id,
                      int32_t session_epoch, const fq_t *q, int n)
{
    size_t at = kc_req_begin(b, 1, v, corr, "kcoord-it", 1);
    kc_out_i32(b, -1);      /* replica id */
    kc_out_i32(b, wait);    /* max_wait_ms */
    kc_out_i32(b, 1);       /* min_bytes */
    kc_out_i32(b, 1 << 20); /* max_bytes */
    kc_out_i8(b, 0);
    kc_out_i32(b, session_id);
    kc_out_i32(b, session_epoch);
    kc_out_uvarint(b, (uint32_t)n + 1);
    for (int i = 0; i < n; i++) {
        if (v >= 13)
            out_uuid(b, q[i].id);
        else
            kc_out_cstr(b, q[i].topic);
        kc_out_uvarint(b, 2);
        kc_out_i32(b, q[i].partition);
        kc_out_i32(b, 0); /* current leader epoch */
        out_i64(b, q[i].offset);
        kc_out_i32(b, -1); /* last fetched epoch */
        out_i64(b, -1);    /* log start offset */
        kc_out_i32(b, 1 << 20);
        kc_out_uvarint(b, 0);
        kc_out_uvarint(b, 0);
    }
    kc_out_uvarint(b, 1); /* no forgotten topics */
    kc_out_cstr(b, "");   /* rack */
    kc_out_uvarint(b, 0);
    kc_req_end(b, at);
}

typedef struct fr_s {
    int16_t err;
    int64_t hw, lso, log_start;
    int32_t records; /* length of the records field, -1 for null */
} fr_t;

/* Decode a Fetch v12/13 response frame: top-level error and session id, then n partitions. */
static void decode_fetch(const kc_buf_t *resp, int16_t v, int32_t corr, int16_t *err,
                         int32_t *session, fr_t *out, int n)
{
    kc_in_t r;
    kc_in_init(&r, resp->p, resp->len);
    assert_int_equal(kc_in_i32(&r), corr);
    kc_in_tags(&r);
    kc_in_i32(&r);
    *err = kc_in_i16(&r);
    *session = kc_in_i32(&r);
    int32_t nt = kc_in_count(&r, 1);
    assert_int_equal(nt, *err ? 0 : n);
    for (int i = 0; i < nt; i++) {
        char s[256];
        if (v >= 13)
            kc_in_skip(&r, 16);
        else
            kc_in_str(&r, 1, s, sizeof(s));
        assert_int_equal(kc_in_count(&r, 1), 1);
        kc_in_i32(&r);
        out[i].err = kc_in_i16(&r);
        out[i].hw = kc_in_i64(&r);
        out[i].lso = kc_in_i64(&r);
        out[i].log_start = kc_in_i64(&r);
        int32_t na = kc_in_count(&r, 1);
        kc_in_skip(&r, 16 * (size_t)(na > 0 ? na : 0));
        kc_in_i32(&r); /* preferred read replica */
        out[i].records = (int32_t)kc_in_uvarint(&r) - 1;
        kc_in_skip(&r, (size_t)(out[i].records > 0 ? out[i].records : 0));
        kc_in_tags(&r);
        kc_in_tags(&r);
    }
    kc_in_tags(&r);
    assert_false(r.err);
    assert_int_equal(kc_in_left(&r), 0);
}

/* A Fetch with max_wait_ms 300 is answered no sooner than 300 ms later, while another
 * connection is served at once, and the request behind it on its own connection waits for it. */
static void test_fetch_long_poll(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f), other = connect_fd(f);
    assert_int_equal(kc_check_api_versions(other, 1), 0); /* connected and served */
    const fq_t q[] = {{"orders", NULL, 1, 5}, {"events", NULL, 0, -1}};
    kc_buf_t req = {0}, resp = {0};
    put_fetch(&req, 12, 1212, 300, 0, -1, q, 2);
    /* ApiVersions v0 right behind it on the same connection. */
    size_t at = kc_req_begin(&req, 18, 0, 1818, "kcoord-it", 0);
    kc_req_end(&req, at);
    int64_t start = kc_now_ms();
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);

    /* Meanwhile the other connection is answered at once. */
    assert_int_equal(kc_check_api_versions(other, 2), 0);
    int64_t other_ms = kc_now_ms() - start;

    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    int64_t fetch_ms = kc_now_ms() - start;
    int16_t err;
    int32_t session;
    fr_t r[2];
    decode_fetch(&resp, 12, 1212, &err, &session, r, 2);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    int64_t after_ms = kc_now_ms() - start;
    kc_in_t in;
    kc_in_init(&in, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&in), 1818);
    fprintf(stderr, "other connection %lld ms, fetch %lld ms, next request %lld ms\n",
            (long long)other_ms, (long long)fetch_ms, (long long)after_ms);
    assert_true(other_ms < 250);
    assert_true(fetch_ms >= 295 && fetch_ms < 3000);
    assert_true(after_ms >= fetch_ms);

    assert_int_equal(err, 0);
    assert_int_equal(session, 0);
    assert_int_equal(r[0].err, 0);
    assert_int_equal(r[0].hw, 5); /* the fetch offset: in range, no reset */
    assert_int_equal(r[0].lso, 5);
    assert_int_equal(r[0].log_start, 0);
    assert_int_equal(r[0].records, 0);
    assert_int_equal(r[1].err, 0);
    assert_int_equal(r[1].hw, 0);
    assert_int_equal(r[1].log_start, 0);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* Answered at once: an error to report, no wait asked, an incremental session. */
static void test_fetch_immediate(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    kc_buf_t req = {0}, resp = {0};
    int16_t err;
    int32_t session;
    fr_t r[2];

    /* An unknown partition among known ones: answered at once, not after 5 s. */
    const fq_t bad[] = {{"orders", NULL, 0, 0}, {"orders", NULL, 3, 0}};
    put_fetch(&req, 12, 1, 5000, 0, -1, bad, 2);
    int64_t start = kc_now_ms();
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    assert_true(kc_now_ms() - start < 1000);
    decode_fetch(&resp, 12, 1, &err, &session, r, 2);
    assert_int_equal(r[0].err, 0);
    assert_int_equal(r[1].err, 3);
    assert_int_equal(r[1].hw, -1);

    /* max_wait_ms 0. */
    const fq_t good[] = {{"orders", NULL, 0, 0}};
    req.len = 0;
    put_fetch(&req, 12, 2, 0, 0, -1, good, 1);
    start = kc_now_ms();
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    assert_true(kc_now_ms() - start < 1000);
    decode_fetch(&resp, 12, 2, &err, &session, r, 1);
    assert_int_equal(r[0].err, 0);

    /* An incremental fetch names a session that was never created. */
    req.len = 0;
    put_fetch(&req, 12, 3, 5000, 1234, 1, good, 1);
    start = kc_now_ms();
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    assert_true(kc_now_ms() - start < 1000);
    decode_fetch(&resp, 12, 3, &err, &session, r, 1);
    assert_int_equal(err, 70);
    assert_int_equal(session, 0);

    /* v13 names topics by id: an unknown id. */
    uint8_t unknown[16];
    memset(unknown, 0x17, 16);
    const fq_t byid[] = {{NULL, unknown, 0, 0}};
    req.len = 0;
    put_fetch(&req, 13, 4, 5000, 0, 0, byid, 1);
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    decode_fetch(&resp, 13, 4, &err, &session, r, 1);
    assert_int_equal(err, 0);
    assert_int_equal(r[0].err, 100);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* A Fetch parked for 3 s when SIGTERM comes: the daemon still exits 0, without waiting for
 * anything but that Fetch. */
static void test_fetch_parked_at_shutdown(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    kc_buf_t req = {0};
    const fq_t q[] = {{"orders", NULL, 0, 0}};
    put_fetch(&req, 12, 9, 3000, 0, -1, q, 1);
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_check_api_versions(connect_fd(f), 1), 0); /* the Fetch has arrived */
    int64_t start = kc_now_ms();
    assert_int_equal(kc_proc_stop(&f->proc), 0);
    assert_true(kc_now_ms() - start < 8000);
    kc_buf_free(&req);
    f->proc.ok = 1;
}

/* Append Produce v`v` (3 or 9) with `acks` for partitions (topic, index) of q[0..n). */
static void put_produce(kc_buf_t *b, int16_t v, int32_t corr, int16_t acks, const fq_t *q, int n)
{
    int flex = v >= 9;
    size_t at = kc_req_begin(b, 0, v, corr, "kcoord-it", flex);
    if (flex)
        kc_out_cstr(b, NULL);
    else
        kc_out_str(b, NULL);
    kc_out_i16(b, acks);
    kc_out_i32(b, 1000);
    if (flex)
        kc_out_uvarint(b, (uint32_t)n + 1);
    else
        kc_out_i32(b, n);
    for (int i = 0; i < n; i++) {
        if (flex) {
            kc_out_cstr(b, q[i].topic);
            kc_out_uvarint(b, 2);
        } else {
            kc_out_str(b, q[i].topic);
            kc_out_i32(b, 1);
        }
        kc_out_i32(b, q[i].partition);
        if (flex) {
            kc_out_uvarint(b, 0); /* null records */
            kc_out_uvarint(b, 0);
            kc_out_uvarint(b, 0);
        } else {
            kc_out_i32(b, -1);
        }
    }
    if (flex)
        kc_out_uvarint(b, 0);
    kc_req_end(b, at);
}

static void test_produce_raw(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    kc_buf_t req = {0}, resp = {0};
    const fq_t q[] = {{"orders", NULL, 2, 0}, {"orders", NULL, 9, 0}, {"nope", NULL, 0, 0}};
    put_produce(&req, 9, 90, -1, q, 3);
    kc_in_t r;
    roundtrip(fd, &req, &resp, 90, 1, &r);
    assert_int_equal(kc_in_count(&r, 1), 3);
    static const int16_t want[] = {44, 3, 3};
    for (int i = 0; i < 3; i++) {
        char s[256];
        kc_in_str(&r, 1, s, sizeof(s));
        assert_string_equal(s, q[i].topic);
        assert_int_equal(kc_in_count(&r, 1), 1);
        assert_int_equal(kc_in_i32(&r), q[i].partition);
        assert_int_equal(kc_in_i16(&r), want[i]);
        assert_int_equal(kc_in_i64(&r), -1); /* base offset */
        assert_int_equal(kc_in_i64(&r), -1); /* log append time */
        assert_int_equal(kc_in_i64(&r), -1); /* log start offset */
        assert_int_equal(kc_in_count(&r, 1), 0);
        int len = kc_in_str(&r, 1, s, sizeof(s));
        if (i == 0)
            assert_string_equal(s, "kcoord stores no records");
        else
            assert_int_equal(len, -1);
        kc_in_tags(&r);
        kc_in_tags(&r);
    }
    kc_in_i32(&r);
    kc_in_tags(&r);
    assert_false(r.err);
    assert_int_equal(kc_in_left(&r), 0);

    /* acks=0 without any partition: no answer at all; the next request is answered. */
    req.len = 0;
    put_produce(&req, 3, 30, 0, q, 0);
    size_t at = kc_req_begin(&req, 18, 0, 1818, "kcoord-it", 0);
    kc_req_end(&req, at);
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    kc_in_init(&r, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&r), 1818);

    /* acks=0 with a partition: it failed, so Kafka closes the connection, after answering
     * what came before. */
    req.len = 0;
    at = kc_req_begin(&req, 18, 0, 1819, "kcoord-it", 0);
    kc_req_end(&req, at);
    put_produce(&req, 3, 31, 0, q, 1);
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    kc_in_init(&r, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&r), 1819);
    assert_int_equal(kc_sock_wait_closed(fd, KC_IO_TIMEOUT_MS), KC_SOCK_CLOSED);
    assert_true(kc_proc_wait_log(&f->proc, "acks=0", "closing", 1000));

    /* Other connections are unaffected. */
    assert_int_equal(kc_check_api_versions(connect_fd(f), 5), 0);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* Produce requests with acks=0 and no partitions get no answer, wherever they are in a
 * pipeline: behind a parked Fetch, among other requests, and with the daemon reading at most
 * two requests ahead (the prestate), so that reading stops and resumes around them. */
static void test_produce_skipped_in_pipeline(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    kc_buf_t req = {0}, resp = {0};
    const fq_t q[] = {{"orders", NULL, 0, 0}};
    for (int round = 0; round < 3; round++) {
        req.len = 0;
        put_fetch(&req, 12, 100 + round, 200, 0, -1, q, 1);
        for (int i = 0; i < 5; i++)
            put_produce(&req, 3, 200 + i, 0, q, 0);
        size_t at = kc_req_begin(&req, 18, 0, 300 + round, "kcoord-it", 0);
        kc_req_end(&req, at);
        for (int i = 0; i < 5; i++)
            put_produce(&req, 9, 400 + i, 0, q, 0);
        at = kc_req_begin(&req, 18, 0, 500 + round, "kcoord-it", 0);
        kc_req_end(&req, at);
        assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
        static const int32_t want[] = {100, 300, 500};
        for (int i = 0; i < 3; i++) {
            assert_int_equal(kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
            kc_in_t r;
            kc_in_init(&r, resp.p, resp.len);
            assert_int_equal(kc_in_i32(&r), want[i] + round);
        }
    }
    assert_int_equal(kc_check_api_versions(fd, 9), 0); /* nothing else came */
    kc_buf_free(&req);
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_admin_create_and_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_drops_committed_offsets, setup, teardown),
        cmocka_unit_test_prestate_setup_teardown(test_auto_create, setup, teardown,
                                                 (void *)SETS_AUTO),
        cmocka_unit_test_setup_teardown(test_no_auto_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watermarks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_fetches_from_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_producer_fails_fast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topics_raw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_topics_raw, setup, teardown),
        cmocka_unit_test_prestate_setup_teardown(test_auto_create_raw, setup, teardown,
                                                 (void *)SETS_AUTO),
        cmocka_unit_test_setup_teardown(test_list_offsets_raw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_create_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_long_poll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_immediate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_parked_at_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_produce_raw, setup, teardown),
        cmocka_unit_test_prestate_setup_teardown(test_produce_skipped_in_pipeline, setup, teardown,
                                                 (void *)SETS_QUEUE_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
