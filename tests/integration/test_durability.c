/* test_durability.c - what kcoord acknowledged is still there after it restarts or crashes.
 *
 * Every test starts its own daemon (topics t4:4 and t6:6, no initial rebalance delay, the
 * log.flush.policy of the test) and restarts it on the same data directory with
 * kc_proc_restart: SIGTERM, which must exit 0 after writing everything out, or SIGKILL, a crash
 * with no chance to write anything. Between the two runs `kcoord verify-log` must find the data
 * directory clean. Then real clients look at what came back:
 *   - offsets committed with rd_kafka_commit (explicit offsets and metadata) are returned by
 *     rd_kafka_committed from a new consumer: after SIGTERM, and after SIGKILL with every flush
 *     policy (an acknowledged commit was written before the answer; only the page cache, which
 *     outlives the process, holds it with `interval` and `never`);
 *   - groups come back with their state, kind and offsets (ListConsumerGroups,
 *     DescribeConsumerGroups, ListConsumerGroupOffsets), and what DeleteGroups and
 *     DeleteConsumerGroupOffsets removed stays removed;
 *   - a Stable group of live librdkafka members survives a restart without a rebalance: the
 *     members lose their connection, reconnect to the same address (these tests listen on a
 *     fixed port), heartbeat in their old generation, keep their assignment, and commit with it.
 * A kill -9 cannot tell an acknowledgement after fsync from one after write(2);
 * tests/crash/crash_test.py can (it turns the kill into a power loss), and does the same under a
 * storm of commits.
 *
 * To run one test: KC_TEST_FILTER='test_stable*' build/tests/integration/test_durability.
 * On failure the teardown prints the client log and the daemon's log (both runs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "rk_group.h"

enum {
    T4 = 4,
    T6 = 6,
    MAX_MEMBERS = 4,
    WAIT_MS = 30000,          /* bound for a rebalance to settle */
    ADMIN_TIMEOUT_MS = 15000, /* bound for one admin request */
    RK_TIMEOUT_MS = 15000,    /* bound for rd_kafka_commit and rd_kafka_committed */
    TOOL_TIMEOUT_MS = 30000,  /* bound for kcoord verify-log */
    QUIET_HEARTBEATS = 4,     /* heartbeats each member must get answered after a restart */
    LIVE_MEMBERS = 3,
    ILLEGAL_GENERATION = 22,
    UNKNOWN_MEMBER_ID = 25,
};

static const char T4_NAME[] = "t4";
static const char T6_NAME[] = "t6";

/* What a test runs against: the flush policy and whether the daemon listens on a fixed port
 * (for clients that must find it again after the restart). */
typedef struct config_s {
    const char *policy;
    int fixed_port;
    int sig; /* how the daemon is stopped before its restart */
} config_t;

static const config_t ALWAYS_TERM = {"always", 0, SIGTERM};
static const config_t ALWAYS_KILL = {"always", 0, SIGKILL};
static const config_t INTERVAL_KILL = {"interval", 0, SIGKILL};
static const config_t NEVER_KILL = {"never", 0, SIGKILL};
static const config_t LIVE_TERM = {"always", 1, SIGTERM};
static const config_t LIVE_KILL = {"always", 1, SIGKILL};

/* ---- Fixture --------------------------------------------------------------------------------- */

typedef struct fixture_s {
    const config_t *cfg;
    kc_proc_t proc;
    kc_rk_log_t log;
    kc_consumer_t cs[MAX_MEMBERS];
    kc_consumer_t admin_id; /* only names the admin client in the log (its opaque) */
    rd_kafka_t *admin;
    rd_kafka_queue_t *q;
    int raw_fd;
    char why[1024];
} fixture_t;

/* A port nothing listens on right now: bind port 0, read what the kernel chose, close. The
 * daemon binds it with SO_REUSEADDR, so it can take it again right after its own crash. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int setup(void **state)
{
    const config_t *cfg = *state;
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    f->cfg = cfg;
    f->raw_fd = -1;
    kc_rk_log_init(&f->log);
    char policy[64], listeners[64];
    snprintf(policy, sizeof(policy), "log.flush.policy=%s", cfg->policy);
    const char *sets[6] = {"topics=t4:4,t6:6",
                           "group.initial.rebalance.delay.ms=0",
                           policy,
                           "log.flush.interval.ms=1000",
                           NULL,
                           NULL};
    if (cfg->fixed_port) {
        int port = free_port();
        if (port <= 0) {
            fprintf(stderr, "no free port\n");
            kc_rk_log_free(&f->log);
            free(f);
            return -1;
        }
        snprintf(listeners, sizeof(listeners), "listeners=127.0.0.1:%d", port);
        sets[4] = listeners;
    }
    if (kc_proc_start(&f->proc, sets) != 0) {
        kc_rk_log_free(&f->log);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < MAX_MEMBERS; i++)
        kc_consumer_abandon(&f->cs[i]);
    if (f->q != NULL)
        rd_kafka_queue_destroy(f->q);
    if (f->admin != NULL)
        rd_kafka_destroy(f->admin);
    if (f->raw_fd >= 0)
        close(f->raw_fd);
    if (!f->proc.ok || getenv("KC_TEST_LOG") != NULL)
        kc_rk_log_print(&f->log);
    int rc = kc_proc_finish(&f->proc);
    kc_rk_log_free(&f->log);
    free(f);
    return rc;
}

/* ---- The daemon ------------------------------------------------------------------------------ */

/* `kcoord verify-log` of the data directory must exit 0. */
static void verify_log(fixture_t *f, const char *when)
{
    const char *bin = getenv("KC_TEST_BIN");
    if (bin == NULL || bin[0] == '\0')
        bin = "build/kcoord";
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/data", f->proc.dir);
    const char *argv[] = {bin, "verify-log", dir, NULL};
    char *out = NULL;
    int rc = kc_run(argv, TOOL_TIMEOUT_MS, &out);
    if (rc != 0) {
        fprintf(stderr, "---- kcoord verify-log %s ----\n%s---- end ----\n", dir, out ? out : "");
        free(out);
        fail_msg("kcoord verify-log %s: exit status %d", when, rc);
    }
    free(out);
}

/* Stop the daemon with the test's signal, check the data directory while nothing runs, and
 * start it again on that directory. */
static void restart(fixture_t *f)
{
    int sig = f->cfg->sig;
    int status = kc_proc_halt(&f->proc, sig);
    int want = sig == SIGTERM ? 0 : 128 + SIGKILL;
    if (status != want)
        fail_msg("kcoord exit status %d after signal %d, want %d", status, sig, want);
    kc_rk_log_addf(&f->log, "test: kcoord stopped by signal %d; restarting", sig);
    verify_log(f, sig == SIGTERM ? "after SIGTERM" : "after SIGKILL");
    int old_port = f->proc.port;
    if (kc_proc_restart(&f->proc, sig, NULL) != 0)
        fail_msg("kcoord did not restart on its data directory");
    if (f->cfg->fixed_port && f->proc.port != old_port)
        fail_msg("kcoord listens on port %d after the restart, was %d", f->proc.port, old_port);
    kc_rk_log_addf(&f->log, "test: kcoord restarted on port %d", f->proc.port);
}

/* ---- Clients --------------------------------------------------------------------------------- */

/* A consumer (slot i) in `group` that never subscribes: it only commits and asks. */
static kc_consumer_t *start_client(fixture_t *f, int i, const char *name, const char *group)
{
    if (kc_consumer_start(&f->cs[i], &f->log, f->proc.port, name, group, NULL, T6, NULL) != 0)
        fail_msg("consumer %s did not start", name);
    return &f->cs[i];
}

static void close_client(fixture_t *f, int i)
{
    rd_kafka_resp_err_t err = kc_consumer_close(&f->cs[i]);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("%s: rd_kafka_consumer_close: %s", f->cs[i].name, rd_kafka_err2str(err));
}

/* An offset to commit or to find: `offset` RD_KAFKA_OFFSET_INVALID means none committed. */
typedef struct offset_s {
    const char *topic;
    int partition;
    int64_t offset;
    char metadata[32];
} offset_t;

/* Commit offs[0..n) (explicit offsets and metadata) synchronously. */
static void commit(kc_consumer_t *c, const offset_t *offs, int n)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++) {
        rd_kafka_topic_partition_t *e =
            rd_kafka_topic_partition_list_add(l, offs[i].topic, offs[i].partition);
        e->offset = offs[i].offset;
        e->metadata_size = strlen(offs[i].metadata);
        e->metadata = malloc(e->metadata_size + 1);
        assert_non_null(e->metadata);
        memcpy(e->metadata, offs[i].metadata, e->metadata_size + 1);
    }
    rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, l, 0);
    char bad[256] = "";
    for (int i = 0; i < l->cnt && bad[0] == '\0'; i++)
        if (l->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR)
            snprintf(bad, sizeof(bad), "%s[%d]: %s", l->elems[i].topic, l->elems[i].partition,
                     rd_kafka_err2name(l->elems[i].err));
    rd_kafka_topic_partition_list_destroy(l);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || bad[0] != '\0')
        fail_msg("%s: rd_kafka_commit of %d offsets: %s %s", c->name, n, rd_kafka_err2name(err),
                 bad);
    kc_rk_log_addf(c->log, "%s: committed %d offsets", c->name, n);
}

/* rd_kafka_committed of want[0..n) from c must give exactly their offsets and metadata. */
static void expect_committed(kc_consumer_t *c, const offset_t *want, int n, const char *when)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(l, want[i].topic, want[i].partition);
    rd_kafka_resp_err_t err = rd_kafka_committed(c->rk, l, RK_TIMEOUT_MS);
    char msg[512] = "";
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        snprintf(msg, sizeof(msg), "%s", rd_kafka_err2name(err));
    for (int i = 0; i < n && msg[0] == '\0'; i++) {
        const rd_kafka_topic_partition_t *e =
            rd_kafka_topic_partition_list_find(l, want[i].topic, want[i].partition);
        size_t mlen = strlen(want[i].metadata);
        if (e == NULL)
            snprintf(msg, sizeof(msg), "%s[%d] missing", want[i].topic, want[i].partition);
        else if (e->err != RD_KAFKA_RESP_ERR_NO_ERROR || e->offset != want[i].offset)
            snprintf(msg, sizeof(msg), "%s[%d]: offset %lld (%s), want %lld", want[i].topic,
                     want[i].partition, (long long)e->offset, rd_kafka_err2name(e->err),
                     (long long)want[i].offset);
        else if (want[i].offset >= 0 &&
                 (e->metadata_size != mlen || memcmp(e->metadata, want[i].metadata, mlen) != 0))
            snprintf(msg, sizeof(msg), "%s[%d]: metadata \"%.*s\", want \"%s\"", want[i].topic,
                     want[i].partition, (int)e->metadata_size,
                     e->metadata ? (const char *)e->metadata : "", want[i].metadata);
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (msg[0] != '\0')
        fail_msg("%s: rd_kafka_committed %s: %s", c->name, when, msg);
}

/* ---- Committed offsets across a restart ------------------------------------------------------ */

/* Two groups commit many times (the last commit of each partition wins; some partitions are
 * committed once, early); the daemon restarts with the test's signal while the committers are
 * still connected; new consumers must read the last acknowledged offsets and metadata. */
static void test_commits_survive(void **state)
{
    fixture_t *f = *state;
    kc_consumer_t *a = start_client(f, 0, "committer-a", "dur-a");
    kc_consumer_t *b = start_client(f, 1, "committer-b", "dur-b");

    offset_t want_a[T4 + 2], want_b[T6 + 1];
    for (int round = 1; round <= 25; round++) {
        for (int p = 0; p < T4; p++) {
            want_a[p] = (offset_t){T4_NAME, p, 1000 * round + p, ""};
            snprintf(want_a[p].metadata, sizeof(want_a[p].metadata), "a r%d p%d", round, p);
        }
        commit(a, want_a, T4);
        offset_t *ob = &want_b[round % T6];
        *ob = (offset_t){T6_NAME, round % T6, 7 * round, ""};
        snprintf(ob->metadata, sizeof(ob->metadata), "b r%d", round);
        commit(b, ob, 1);
        if (round == 1) {
            /* Once, early: it must outlive the 24 batches after it. */
            want_a[T4] = (offset_t){T6_NAME, 5, 5, "early"};
            commit(a, &want_a[T4], 1);
        }
    }
    /* dur-a never committed t6[0], dur-b never t4[0]. */
    want_a[T4 + 1] = (offset_t){T6_NAME, 0, RD_KAFKA_OFFSET_INVALID, ""};
    want_b[T6] = (offset_t){T4_NAME, 0, RD_KAFKA_OFFSET_INVALID, ""};
    expect_committed(a, want_a, T4 + 2, "before the restart");
    expect_committed(b, want_b, T6 + 1, "before the restart");

    restart(f);
    kc_consumer_abandon(a); /* they knew the old port */
    kc_consumer_abandon(b);

    kc_consumer_t *ra = start_client(f, 2, "reader-a", "dur-a");
    kc_consumer_t *rb = start_client(f, 3, "reader-b", "dur-b");
    expect_committed(ra, want_a, T4 + 2, "after the restart");
    expect_committed(rb, want_b, T6 + 1, "after the restart");

    /* The restarted daemon goes on: a new commit, another restart, both are there. */
    want_a[0] = (offset_t){T4_NAME, 0, 99999, "after"};
    commit(ra, want_a, 1);
    restart(f);
    kc_consumer_abandon(ra);
    kc_consumer_abandon(rb);
    kc_consumer_t *r2 = start_client(f, 0, "reader-a2", "dur-a");
    expect_committed(r2, want_a, T4 + 2, "after the second restart");
    close_client(f, 0);
    f->proc.ok = 1;
}

/* ---- Groups across a restart (admin API) ----------------------------------------------------- */

static void start_admin(fixture_t *f)
{
    char bootstrap[64], errstr[512];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", f->proc.port);
    snprintf(f->admin_id.name, sizeof(f->admin_id.name), "admin");
    f->admin_id.log = &f->log;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kc_rk_set(conf, "bootstrap.servers", bootstrap) != 0 ||
        kc_rk_set(conf, "client.id", "kc-admin") != 0 ||
        kc_rk_set(conf, "log.connection.close", "false") != 0) {
        rd_kafka_conf_destroy(conf);
        fail_msg("admin configuration");
    }
    rd_kafka_conf_set_log_cb(conf, kc_rk_on_log);
    rd_kafka_conf_set_error_cb(conf, kc_rk_on_error);
    rd_kafka_conf_set_opaque(conf, &f->admin_id);
    f->admin = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (f->admin == NULL) {
        rd_kafka_conf_destroy(conf);
        fail_msg("rd_kafka_new: %s", errstr);
    }
    f->q = rd_kafka_queue_new(f->admin);
}

static void stop_admin(fixture_t *f)
{
    if (f->q != NULL)
        rd_kafka_queue_destroy(f->q);
    if (f->admin != NULL)
        rd_kafka_destroy(f->admin);
    f->q = NULL;
    f->admin = NULL;
}

static rd_kafka_AdminOptions_t *admin_options(fixture_t *f, rd_kafka_admin_op_t op)
{
    char errstr[256];
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(f->admin, op);
    assert_non_null(o);
    if (rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS - 2000, errstr,
                                                  sizeof(errstr)) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("set_request_timeout: %s", errstr);
    return o;
}

/* The next admin result, which must be of `type` and carry no request-level error (the caller
 * destroys it). */
static rd_kafka_event_t *admin_result(fixture_t *f, rd_kafka_event_type_t type, const char *what)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(f->q, ADMIN_TIMEOUT_MS);
    if (ev == NULL)
        fail_msg("%s: no result within %d ms", what, ADMIN_TIMEOUT_MS);
    char msg[512] = "";
    if (rd_kafka_event_type(ev) != type)
        snprintf(msg, sizeof(msg), "event %s instead of the result", rd_kafka_event_name(ev));
    else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR)
        snprintf(msg, sizeof(msg), "%s: %s", rd_kafka_err2name(rd_kafka_event_error(ev)),
                 rd_kafka_event_error_string(ev));
    if (msg[0] != '\0') {
        rd_kafka_event_destroy(ev);
        fail_msg("%s: %s", what, msg);
    }
    return ev;
}

/* One group as the admin API shows it. */
typedef struct view_s {
    char id[64];
    rd_kafka_consumer_group_state_t state;
    int simple;
    char assignor[32];
    size_t members;
} view_t;

/* The groups ListConsumerGroups lists, each completed by DescribeConsumerGroups, sorted by id. */
static int list_groups(fixture_t *f, view_t *out, int cap)
{
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    rd_kafka_ListConsumerGroups(f->admin, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev =
        admin_result(f, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT, "ListConsumerGroups");
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t n_err = 0, n = 0;
    rd_kafka_ListConsumerGroups_result_errors(res, &n_err);
    const rd_kafka_ConsumerGroupListing_t **gs = rd_kafka_ListConsumerGroups_result_valid(res, &n);
    if (n_err > 0 || n > (size_t)cap) {
        rd_kafka_event_destroy(ev);
        fail_msg("ListConsumerGroups: %zu errors, %zu groups", n_err, n);
    }
    for (size_t i = 0; i < n; i++) {
        view_t *v = &out[i];
        memset(v, 0, sizeof(*v));
        snprintf(v->id, sizeof(v->id), "%s", rd_kafka_ConsumerGroupListing_group_id(gs[i]));
        v->state = rd_kafka_ConsumerGroupListing_state(gs[i]);
        v->simple = rd_kafka_ConsumerGroupListing_is_simple_consumer_group(gs[i]);
    }
    rd_kafka_event_destroy(ev);
    for (size_t i = 1; i < n; i++) /* insertion sort by id */
        for (size_t j = i; j > 0 && strcmp(out[j - 1].id, out[j].id) > 0; j--) {
            view_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    if (n == 0)
        return 0;

    const char *ids[16];
    for (size_t i = 0; i < n && i < 16; i++)
        ids[i] = out[i].id;
    o = admin_options(f, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_DescribeConsumerGroups(f->admin, ids, n, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    ev = admin_result(f, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT, "DescribeConsumerGroups");
    size_t cnt = 0;
    const rd_kafka_ConsumerGroupDescription_t **ds = rd_kafka_DescribeConsumerGroups_result_groups(
        rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt);
    char msg[256] = "";
    for (size_t i = 0; i < n && msg[0] == '\0'; i++) {
        const rd_kafka_ConsumerGroupDescription_t *d = NULL;
        for (size_t j = 0; j < cnt; j++)
            if (strcmp(rd_kafka_ConsumerGroupDescription_group_id(ds[j]), out[i].id) == 0)
                d = ds[j];
        if (d == NULL || rd_kafka_ConsumerGroupDescription_error(d) != NULL) {
            snprintf(msg, sizeof(msg), "%.63s: %.160s", out[i].id,
                     d ? rd_kafka_error_string(rd_kafka_ConsumerGroupDescription_error(d))
                       : "not described");
            break;
        }
        if (rd_kafka_ConsumerGroupDescription_state(d) != out[i].state ||
            rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(d) != out[i].simple)
            snprintf(msg, sizeof(msg), "%.63s: described as %.32s, listed as %.32s", out[i].id,
                     rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupDescription_state(d)),
                     rd_kafka_consumer_group_state_name(out[i].state));
        const char *a = rd_kafka_ConsumerGroupDescription_partition_assignor(d);
        snprintf(out[i].assignor, sizeof(out[i].assignor), "%s", a ? a : "");
        out[i].members = rd_kafka_ConsumerGroupDescription_member_count(d);
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("DescribeConsumerGroups: %s", msg);
    return (int)n;
}

static const char *view_str(const view_t *v, int n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, " %s(%s%s, \"%s\", %zu members)", v[i].id,
                               rd_kafka_consumer_group_state_name(v[i].state),
                               v[i].simple ? ", simple" : "", v[i].assignor, v[i].members);
    return buf;
}

static void expect_groups(fixture_t *f, const view_t *want, int n_want, const char *when)
{
    view_t got[16];
    int n = list_groups(f, got, 16);
    int same = n == n_want;
    for (int i = 0; same && i < n; i++)
        same = strcmp(got[i].id, want[i].id) == 0 && got[i].state == want[i].state &&
               got[i].simple == want[i].simple && strcmp(got[i].assignor, want[i].assignor) == 0 &&
               got[i].members == want[i].members;
    if (!same) {
        char a[1024], b[1024];
        fail_msg("groups %s:%s\nwant:%s", when, view_str(got, n, a, sizeof(a)),
                 view_str(want, n_want, b, sizeof(b)));
    }
}

/* ListConsumerGroupOffsets of every committed offset of `group`: exactly want[0..n). */
static void expect_group_offsets(fixture_t *f, const char *group, const offset_t *want, int n,
                                 const char *when)
{
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    rd_kafka_ListConsumerGroupOffsets(f->admin, &req, 1, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    rd_kafka_event_t *ev =
        admin_result(f, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT, "ListConsumerGroupOffsets");
    size_t cnt = 0;
    const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
        rd_kafka_event_ListConsumerGroupOffsets_result(ev), &cnt);
    char msg[512] = "";
    if (cnt != 1 || rd_kafka_group_result_error(gr[0]) != NULL) {
        snprintf(msg, sizeof(msg), "%zu results, %s", cnt,
                 cnt == 1 ? rd_kafka_error_string(rd_kafka_group_result_error(gr[0])) : "");
    } else {
        const rd_kafka_topic_partition_list_t *got = rd_kafka_group_result_partitions(gr[0]);
        if ((got ? got->cnt : 0) != n)
            snprintf(msg, sizeof(msg), "%d offsets, want %d", got ? got->cnt : 0, n);
        for (int i = 0; i < n && msg[0] == '\0'; i++) {
            const rd_kafka_topic_partition_t *e =
                rd_kafka_topic_partition_list_find(got, want[i].topic, want[i].partition);
            size_t mlen = strlen(want[i].metadata);
            if (e == NULL || e->err != RD_KAFKA_RESP_ERR_NO_ERROR || e->offset != want[i].offset ||
                e->metadata_size != mlen || memcmp(e->metadata, want[i].metadata, mlen) != 0)
                snprintf(msg, sizeof(msg), "%s[%d]: offset %lld \"%.*s\" (%s), want %lld \"%s\"",
                         want[i].topic, want[i].partition, e ? (long long)e->offset : -1LL,
                         e ? (int)e->metadata_size : 0,
                         e && e->metadata ? (const char *)e->metadata : "",
                         e ? rd_kafka_err2name(e->err) : "missing", (long long)want[i].offset,
                         want[i].metadata);
        }
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("ListConsumerGroupOffsets(%s) %s: %s", group, when, msg);
}

static void delete_group(fixture_t *f, const char *group)
{
    rd_kafka_DeleteGroup_t *g = rd_kafka_DeleteGroup_new(group);
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_DELETEGROUPS);
    rd_kafka_DeleteGroups(f->admin, &g, 1, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_DeleteGroup_destroy(g);
    rd_kafka_event_t *ev = admin_result(f, RD_KAFKA_EVENT_DELETEGROUPS_RESULT, "DeleteGroups");
    size_t cnt = 0;
    const rd_kafka_group_result_t **gr =
        rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &cnt);
    int ok = cnt == 1 && rd_kafka_group_result_error(gr[0]) == NULL;
    rd_kafka_event_destroy(ev);
    if (!ok)
        fail_msg("DeleteGroups(%s) failed", group);
}

static void delete_offset(fixture_t *f, const char *group, const char *topic, int partition)
{
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, partition);
    rd_kafka_DeleteConsumerGroupOffsets_t *req =
        rd_kafka_DeleteConsumerGroupOffsets_new(group, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_DELETECONSUMERGROUPOFFSETS);
    rd_kafka_DeleteConsumerGroupOffsets(f->admin, &req, 1, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_DeleteConsumerGroupOffsets_destroy(req);
    rd_kafka_event_t *ev = admin_result(f, RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT,
                                        "DeleteConsumerGroupOffsets");
    size_t cnt = 0;
    const rd_kafka_group_result_t **gr = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
        rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &cnt);
    const rd_kafka_topic_partition_list_t *got =
        cnt == 1 && rd_kafka_group_result_error(gr[0]) == NULL
            ? rd_kafka_group_result_partitions(gr[0])
            : NULL;
    int ok = got != NULL && got->cnt == 1 && got->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_event_destroy(ev);
    if (!ok)
        fail_msg("DeleteConsumerGroupOffsets(%s, %s[%d]) failed", group, topic, partition);
}

/* Serve the subscribed consumers among cs[0..n) until they split `topic` (of `partitions`). */
static void wait_split(fixture_t *f, int n, int partitions)
{
    int64_t deadline = kc_now_ms() + WAIT_MS;
    for (;;) {
        uint64_t masks[MAX_MEMBERS];
        for (int i = 0; i < n; i++) {
            kc_consumer_serve(&f->cs[i]);
            masks[i] = f->cs[i].assigned;
        }
        if (kc_split_ok(masks, n, partitions, f->why, sizeof(f->why)))
            break;
        int64_t left = deadline - kc_now_ms();
        if (left <= 0)
            fail_msg("%d members did not split their topic within %d ms: %s", n, WAIT_MS, f->why);
        struct pollfd q[MAX_MEMBERS];
        for (int i = 0; i < n; i++)
            q[i] = (struct pollfd){.fd = f->cs[i].wake[0], .events = POLLIN};
        poll(q, (nfds_t)n, left < KC_RK_SERVE_SLICE_MS ? (int)left : KC_RK_SERVE_SLICE_MS);
    }
    for (int i = 0; i < n; i++)
        if (f->cs[i].bad != 0)
            fail_msg("%s: %d problems in rebalance callbacks", f->cs[i].name, f->cs[i].bad);
}

/* Empty groups of both kinds, a deleted group and a deleted offset: all as they were after a
 * SIGTERM restart and again after a SIGKILL one. */
static void test_groups_back(void **state)
{
    fixture_t *f = *state;
    start_admin(f);

    /* "simple": a consumer that never joins commits (Empty, protocol type ""). */
    offset_t simple[2] = {{T4_NAME, 0, 5, "s0"}, {T4_NAME, 3, 8, "s3"}};
    commit(start_client(f, 0, "simple-client", "simple"), simple, 2);
    close_client(f, 0);

    /* "left": two members split t6, commit, leave: Empty, but a consumer group. */
    const char *const kv[] = {"partition.assignment.strategy", "range", NULL};
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof(name), "left-%d", i);
        if (kc_consumer_start(&f->cs[i], &f->log, f->proc.port, name, "left", T6_NAME, T6, kv) != 0)
            fail_msg("consumer %s did not start", name);
    }
    wait_split(f, 2, T6);
    offset_t left[T6];
    for (int p = 0; p < T6; p++) {
        left[p] = (offset_t){T6_NAME, p, 60 + p, ""};
        snprintf(left[p].metadata, sizeof(left[p].metadata), "left %d", p);
    }
    commit(&f->cs[0], left, T6);
    close_client(f, 0);
    close_client(f, 1);

    /* "gone": deleted with DeleteGroups. "trimmed": one of its two offsets deleted. */
    offset_t gone = {T4_NAME, 1, 11, "g"};
    commit(start_client(f, 0, "gone-client", "gone"), &gone, 1);
    close_client(f, 0);
    delete_group(f, "gone");
    offset_t trimmed[2] = {{T4_NAME, 2, 22, "keep"}, {T6_NAME, 2, 33, "drop"}};
    commit(start_client(f, 0, "trimmed-client", "trimmed"), trimmed, 2);
    close_client(f, 0);
    delete_offset(f, "trimmed", T6_NAME, 2);

    const view_t want[] = {
        {"left", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 0, "", 0},
        {"simple", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1, "", 0},
        {"trimmed", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1, "", 0},
    };
    static const char *const when[] = {"before the restarts", "after SIGTERM", "after SIGKILL"};
    for (int round = 0; round < 3; round++) {
        if (round > 0) {
            stop_admin(f);
            f->cfg = round == 1 ? &ALWAYS_TERM : &ALWAYS_KILL;
            restart(f);
            start_admin(f);
        }
        expect_groups(f, want, 3, when[round]);
        expect_group_offsets(f, "simple", simple, 2, when[round]);
        expect_group_offsets(f, "left", left, T6, when[round]);
        expect_group_offsets(f, "trimmed", trimmed, 1, when[round]);
        expect_group_offsets(f, "gone", NULL, 0, when[round]);
    }
    f->proc.ok = 1;
}

/* ---- A Stable group across a restart --------------------------------------------------------- */

/* The generation of the last assignment the daemon's current run logged for `group`, or -1. */
static int logged_generation(fixture_t *f, const char *group)
{
    char mark[128];
    snprintf(mark, sizeof(mark), "group %s: assignment received from leader ", group);
    int gen = -1;
    pthread_mutex_lock(&f->proc.log_mu);
    const char *s = f->proc.log ? f->proc.log + f->proc.run_from : NULL;
    while (s != NULL && (s = strstr(s, mark)) != NULL) {
        const char *g = strstr(s, " for generation ");
        const char *nl = strchr(s, '\n');
        if (g != NULL && (nl == NULL || g < nl))
            gen = atoi(g + strlen(" for generation "));
        s += strlen(mark);
    }
    pthread_mutex_unlock(&f->proc.log_mu);
    return gen;
}

/* Whether the current run's log has a line with `a` and `b` (no waiting). */
static int logged(fixture_t *f, const char *a, const char *b)
{
    return kc_proc_wait_log(&f->proc, a, b, 0);
}

static void out_i64(kc_buf_t *b, int64_t v)
{
    kc_out_i32(b, (int32_t)(uint32_t)((uint64_t)v >> 32));
    kc_out_i32(b, (int32_t)(uint32_t)(uint64_t)v);
}

/* OffsetCommit v8 of t6[partition] = offset by (generation, member) over a raw connection;
 * returns the partition's error code. */
static int16_t raw_commit(fixture_t *f, const char *group, int32_t generation, const char *member,
                          int partition, int64_t offset)
{
    static int32_t corr = 100;
    if (f->raw_fd < 0)
        f->raw_fd = kc_sock_connect(f->proc.port);
    assert_true(f->raw_fd >= 0);
    kc_buf_t b = {0};
    size_t at = kc_req_begin(&b, 8, 8, ++corr, "kc-durability", 1);
    kc_out_cstr(&b, group);
    kc_out_i32(&b, generation);
    kc_out_cstr(&b, member);
    kc_out_cstr(&b, NULL); /* group_instance_id */
    kc_out_uvarint(&b, 1 + 1);
    kc_out_cstr(&b, T6_NAME);
    kc_out_uvarint(&b, 1 + 1);
    kc_out_i32(&b, partition);
    out_i64(&b, offset);
    kc_out_i32(&b, -1);     /* committed_leader_epoch */
    kc_out_cstr(&b, "raw"); /* committed_metadata */
    kc_out_uvarint(&b, 0);  /* partition tags */
    kc_out_uvarint(&b, 0);  /* topic tags */
    kc_out_uvarint(&b, 0);  /* request tags */
    kc_req_end(&b, at);
    int rc = kc_sock_send(f->raw_fd, b.p, b.len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(f->raw_fd, &b, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK) {
        kc_buf_free(&b);
        fail_msg("OffsetCommit v8: %s", kc_sock_strerror(rc));
    }
    kc_in_t r;
    kc_in_init(&r, b.p, b.len);
    int32_t got_corr = kc_in_i32(&r);
    kc_in_tags(&r); /* response header v1 */
    kc_in_i32(&r);  /* throttle_time_ms */
    int32_t nt = kc_in_count(&r, 1), np = 0;
    char name[64];
    int16_t err = -1;
    if (nt == 1) {
        kc_in_str(&r, 1, name, sizeof(name));
        np = kc_in_count(&r, 1);
        if (np == 1) {
            if (kc_in_i32(&r) != partition)
                r.err = 1;
            err = kc_in_i16(&r);
            kc_in_tags(&r);
        }
        kc_in_tags(&r);
    }
    kc_in_tags(&r);
    int bad = r.err || kc_in_left(&r) != 0 || got_corr != corr || nt != 1 || np != 1;
    kc_buf_free(&b);
    if (bad)
        fail_msg("OffsetCommit v8 answer does not decode (corr %d, %d topics)", got_corr, nt);
    return err;
}

/* Serve the members until each has `more` heartbeat responses beyond base[i]. Any rebalance
 * callback meanwhile fails the test. */
static void wait_quiet_heartbeats(fixture_t *f, const int *base, int more, const int *events)
{
    int64_t deadline = kc_now_ms() + WAIT_MS;
    for (;;) {
        int done = 1;
        for (int i = 0; i < LIVE_MEMBERS; i++) {
            kc_consumer_t *c = &f->cs[i];
            kc_consumer_serve(c);
            if (c->n_events != events[i]) {
                char ev[1024];
                fail_msg("%s: rebalance callbacks after the restart: %s (had %d before)", c->name,
                         kc_consumer_events(c, ev, sizeof(ev)), events[i]);
            }
            if (kc_consumer_hb_responses(c) < base[i] + more)
                done = 0;
        }
        if (done)
            return;
        int64_t left = deadline - kc_now_ms();
        if (left <= 0) {
            char msg[256] = "";
            size_t at = 0;
            for (int i = 0; i < LIVE_MEMBERS; i++)
                at += (size_t)snprintf(msg + at, sizeof(msg) - at, " %s:%d", f->cs[i].name,
                                       kc_consumer_hb_responses(&f->cs[i]) - base[i]);
            fail_msg("not every member got %d heartbeat answers within %d ms after the restart:%s",
                     more, WAIT_MS, msg);
        }
        struct pollfd q[LIVE_MEMBERS];
        for (int i = 0; i < LIVE_MEMBERS; i++)
            q[i] = (struct pollfd){.fd = f->cs[i].wake[0], .events = POLLIN};
        poll(q, LIVE_MEMBERS, left < KC_RK_SERVE_SLICE_MS ? (int)left : KC_RK_SERVE_SLICE_MS);
    }
}

/* The members' ids, as the describe shows them, must be those they had. */
static void expect_stable_members(fixture_t *f, char ids[][128], const uint64_t *masks)
{
    const char *group = "sg";
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_DescribeConsumerGroups(f->admin, &group, 1, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev =
        admin_result(f, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT, "DescribeConsumerGroups");
    size_t cnt = 0;
    const rd_kafka_ConsumerGroupDescription_t **ds = rd_kafka_DescribeConsumerGroups_result_groups(
        rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt);
    char msg[512] = "";
    const rd_kafka_ConsumerGroupDescription_t *d = cnt == 1 ? ds[0] : NULL;
    if (d == NULL || rd_kafka_ConsumerGroupDescription_error(d) != NULL)
        snprintf(msg, sizeof(msg), "no description");
    else if (rd_kafka_ConsumerGroupDescription_state(d) != RD_KAFKA_CONSUMER_GROUP_STATE_STABLE)
        snprintf(msg, sizeof(msg), "state %s",
                 rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupDescription_state(d)));
    else if (rd_kafka_ConsumerGroupDescription_member_count(d) != LIVE_MEMBERS)
        snprintf(msg, sizeof(msg), "%zu members",
                 rd_kafka_ConsumerGroupDescription_member_count(d));
    for (int i = 0; msg[0] == '\0' && i < LIVE_MEMBERS; i++) {
        const rd_kafka_MemberDescription_t *m = NULL;
        for (size_t j = 0; j < LIVE_MEMBERS; j++) {
            const rd_kafka_MemberDescription_t *x = rd_kafka_ConsumerGroupDescription_member(d, j);
            if (strcmp(rd_kafka_MemberDescription_consumer_id(x), ids[i]) == 0)
                m = x;
        }
        const rd_kafka_MemberAssignment_t *a = m ? rd_kafka_MemberDescription_assignment(m) : NULL;
        uint64_t mask =
            kc_parts_mask(a ? rd_kafka_MemberAssignment_partitions(a) : NULL, T6_NAME, T6, NULL);
        char s1[128], s2[128];
        if (m == NULL)
            snprintf(msg, sizeof(msg), "member %s is not described", ids[i]);
        else if (mask != masks[i])
            snprintf(msg, sizeof(msg), "member %s is described with %s, it holds %s", ids[i],
                     kc_mask_str(mask, s1, sizeof(s1)), kc_mask_str(masks[i], s2, sizeof(s2)));
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("DescribeConsumerGroups(sg) after the restart: %s", msg);
}

/* Three live members in Stable group "sg"; the daemon restarts under them. */
static void test_stable_group_survives(void **state)
{
    fixture_t *f = *state;
    const char *const kv[] = {"partition.assignment.strategy", "range", "debug", "cgrp,protocol",
                              NULL};
    for (int i = 0; i < LIVE_MEMBERS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "sg-%d", i);
        if (kc_consumer_start(&f->cs[i], &f->log, f->proc.port, name, "sg", T6_NAME, T6, kv) != 0)
            fail_msg("consumer %s did not start", name);
    }
    wait_split(f, LIVE_MEMBERS, T6);
    int gen = logged_generation(f, "sg");
    if (gen < 1)
        fail_msg("no assignment of group sg in the daemon's log");

    uint64_t masks[LIVE_MEMBERS];
    int events[LIVE_MEMBERS], hb[LIVE_MEMBERS];
    char ids[LIVE_MEMBERS][128];
    offset_t before[LIVE_MEMBERS];
    for (int i = 0; i < LIVE_MEMBERS; i++) {
        kc_consumer_t *c = &f->cs[i];
        masks[i] = c->assigned;
        events[i] = c->n_events;
        char *id = rd_kafka_memberid(c->rk);
        snprintf(ids[i], sizeof(ids[i]), "%s", id ? id : "");
        rd_kafka_mem_free(c->rk, id);
        /* Each member commits its lowest partition. */
        before[i] = (offset_t){T6_NAME, __builtin_ctzll(masks[i]), 100 + i, ""};
        snprintf(before[i].metadata, sizeof(before[i].metadata), "before %d", i);
        commit(c, &before[i], 1);
    }
    kc_rk_log_addf(&f->log, "test: group sg stable in generation %d", gen);

    restart(f);
    for (int i = 0; i < LIVE_MEMBERS; i++)
        hb[i] = kc_consumer_hb_responses(&f->cs[i]);
    char loaded[64];
    snprintf(loaded, sizeof(loaded), "with %d members, generation %d", LIVE_MEMBERS, gen);
    if (!logged(f, "group sg: loaded in Stable", loaded))
        fail_msg("the restarted daemon did not load group sg as Stable %s", loaded);

    /* A few heartbeat intervals of the new run without a rebalance callback. */
    wait_quiet_heartbeats(f, hb, QUIET_HEARTBEATS, events);
    for (int i = 0; i < LIVE_MEMBERS; i++) {
        kc_consumer_t *c = &f->cs[i];
        if (c->assigned != masks[i] || !kc_consumer_assignment_ok(c, f->why, sizeof(f->why)))
            fail_msg("%s: assignment changed over the restart (%s)", c->name, f->why);
    }
    if (logged(f, "group sg: ", "-> PreparingRebalance"))
        fail_msg("group sg rebalanced after the restart");

    /* Commits in the old generation: by the members themselves and over a raw connection. */
    offset_t after[LIVE_MEMBERS];
    for (int i = 0; i < LIVE_MEMBERS; i++) {
        after[i] = (offset_t){T6_NAME, 63 - __builtin_clzll(masks[i]), 200 + i, ""};
        snprintf(after[i].metadata, sizeof(after[i].metadata), "after %d", i);
        commit(&f->cs[i], &after[i], 1);
    }
    int16_t err = raw_commit(f, "sg", gen, ids[0], before[0].partition, 300);
    if (err != 0)
        fail_msg("OffsetCommit in generation %d by %s after the restart: error %d", gen, ids[0],
                 err);
    before[0] = (offset_t){T6_NAME, before[0].partition, 300, "raw"};
    err = raw_commit(f, "sg", gen + 1, ids[0], before[0].partition, 301);
    if (err != ILLEGAL_GENERATION)
        fail_msg("OffsetCommit in generation %d (next): error %d, want ILLEGAL_GENERATION", gen + 1,
                 err);
    err = raw_commit(f, "sg", gen, "stranger", before[0].partition, 302);
    if (err != UNKNOWN_MEMBER_ID)
        fail_msg("OffsetCommit by a stranger: error %d, want UNKNOWN_MEMBER_ID", err);

    for (int i = 0; i < LIVE_MEMBERS; i++) {
        offset_t both[2] = {before[i], after[i]};
        expect_committed(&f->cs[i], both, before[i].partition == after[i].partition ? 1 : 2,
                         "after the restart");
    }
    start_admin(f);
    expect_stable_members(f, ids, masks);
    if (logged(f, "group sg: ", "-> PreparingRebalance"))
        fail_msg("group sg rebalanced after the restart");
    for (int i = 0; i < LIVE_MEMBERS; i++)
        close_client(f, i);
    f->proc.ok = 1;
}

int main(void)
{
    if (getenv("KC_TEST_FILTER") != NULL) /* e.g. KC_TEST_FILTER='test_stable*' */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
#define T(fn, cfg)                                                                                 \
    {                                                                                              \
#fn "(" #cfg ")", fn, setup, teardown, (void *)&cfg                                        \
    }
    const struct CMUnitTest tests[] = {
        T(test_commits_survive, ALWAYS_TERM),     T(test_commits_survive, ALWAYS_KILL),
        T(test_commits_survive, INTERVAL_KILL),   T(test_commits_survive, NEVER_KILL),
        T(test_groups_back, ALWAYS_TERM),         T(test_stable_group_survives, LIVE_TERM),
        T(test_stable_group_survives, LIVE_KILL),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
