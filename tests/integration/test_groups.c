/* test_groups.c - classic consumer groups of a real kcoord, joined by librdkafka and raw frames.
 *
 * Every test starts its own daemon (topics t12:12 and t400:400, no initial rebalance delay)
 * and stops it in the teardown, which fails the test unless the daemon exits 0 on SIGTERM.
 * librdkafka consumers (rk_group.h) run in this thread, served round-robin whenever one of
 * their queues wakes up; a test waits for a condition on what their rebalance callbacks left
 * (for example "the running members split t12 disjointly, completely and evenly") with a
 * bounded timeout, never a fixed sleep. A member that must die by SIGKILL runs in a child
 * process: this binary re-executed with --consumer-child, reporting its assignment on a pipe.
 *
 * What the tests hold the daemon to is Kafka's classic group protocol as librdkafka 2.0.2
 * exercises it: eager (range, roundrobin) and cooperative-sticky rebalances as members come
 * and go, session expiry of a killed member, static membership (KIP-345: a restarted static
 * member gets its partitions back without a rebalance), committed offsets that outlive their
 * members. test_raw_200_members drives 200 members with hand-made JoinGroup v9, SyncGroup v5
 * and Heartbeat v4 frames, as a client library would, leader assignment included, and
 * test_raw_group_errors checks the error codes of JoinGroup v5, SyncGroup v3, Heartbeat v3 and
 * LeaveGroup v0 for invalid group ids, session timeouts, strangers, stale generations and
 * inconsistent protocols.
 *
 * To run one test: KC_TEST_FILTER='test_static*' build/tests/integration/test_groups.
 *
 * On failure the teardown prints the client log (librdkafka's cgrp debug lines, rebalance
 * callbacks, child output) and the daemon's log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rk_group.h"

enum {
    MAX_MEMBERS = 12,
    MAX_KIDS = 2,
    T12 = 12,
    WAIT_MS = 30000,   /* bound for one rebalance to settle */
    SESSION_MS = 6000, /* session.timeout.ms of every librdkafka member */
    EXPIRY_SLACK_MS = 2000,
};

static const char TOPIC[] = "t12";
static const char GROUP[] = "g";
static const char *const SETS[] = {"topics=t12:12,t400:400", "group.initial.rebalance.delay.ms=0",
                                   NULL};

/* ---- Fixture --------------------------------------------------------------------------------- */

/* A consumer in a child process (see child_main). */
typedef struct kid_s {
    pid_t pid; /* 0 once reaped */
    int fd;    /* its stdout and stderr; -1 when closed */
    char name[32];
    kc_buf_t partial; /* an incomplete last line */
    uint64_t assigned;
    int reports; /* "assigned" lines read */
} kid_t;

typedef struct fixture_s {
    kc_proc_t proc;
    kc_rk_log_t log;
    kc_consumer_t cs[MAX_MEMBERS];
    kid_t kids[MAX_KIDS];
    int *raw_fds; /* test_raw_200_members' connections */
    int n_raw_fds;
    void *raw;      /* test_raw_200_members' state, freed by raw_free */
    char why[1024]; /* why the last split condition did not hold */
} fixture_t;

static void raw_free(void *raw);

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    kc_rk_log_init(&f->log);
    for (int k = 0; k < MAX_KIDS; k++)
        f->kids[k].fd = -1;
    if (kc_proc_start(&f->proc, SETS) != 0) {
        kc_rk_log_free(&f->log);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static void kid_reap(kid_t *k)
{
    if (k->pid > 0) {
        kill(k->pid, SIGKILL);
        waitpid(k->pid, NULL, 0);
        k->pid = 0;
    }
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    kc_buf_free(&k->partial);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < MAX_MEMBERS; i++)
        kc_consumer_abandon(&f->cs[i]);
    for (int k = 0; k < MAX_KIDS; k++)
        kid_reap(&f->kids[k]);
    for (int i = 0; i < f->n_raw_fds; i++)
        close(f->raw_fds[i]);
    free(f->raw_fds);
    raw_free(f->raw);
    if (!f->proc.ok || getenv("KC_TEST_LOG") != NULL)
        kc_rk_log_print(&f->log);
    int rc = kc_proc_finish(&f->proc);
    kc_rk_log_free(&f->log);
    free(f);
    return rc;
}

/* ---- Child consumers ------------------------------------------------------------------------- */

/* The child: one consumer in the group, printing "assigned HEXMASK" whenever its assignment
 * changes and copying its log lines to stderr, until it is killed. argv: --consumer-child PORT
 * NAME GROUP TOPIC PARTITIONS STRATEGY. */
static int child_main(char **argv)
{
    int port = atoi(argv[2]);
    const char *name = argv[3], *group = argv[4], *topic = argv[5], *strategy = argv[7];
    int partitions = atoi(argv[6]);
    kc_rk_log_t log;
    kc_rk_log_init(&log);
    kc_consumer_t c;
    const char *const kv[] = {"partition.assignment.strategy", strategy, NULL};
    if (kc_consumer_start(&c, &log, port, name, group, topic, partitions, kv) != 0)
        return 1;
    uint64_t last = ~0ull;
    size_t logged = 0;
    for (;;) {
        struct pollfd q = {.fd = c.wake[0], .events = POLLIN};
        poll(&q, 1, KC_RK_SERVE_SLICE_MS);
        kc_consumer_serve(&c);
        pthread_mutex_lock(&log.mu);
        if (log.text.len > 1 + logged) {
            fwrite(log.text.p + logged, 1, log.text.len - 1 - logged, stderr);
            logged = log.text.len - 1;
        }
        pthread_mutex_unlock(&log.mu);
        fflush(stderr);
        if (c.assigned != last) {
            last = c.assigned;
            printf("assigned %llx\n", (unsigned long long)last);
            fflush(stdout);
        }
    }
}

/* Start kid `k` as a member of GROUP with `strategy`. */
static void kid_start(fixture_t *f, int k, const char *name, const char *strategy)
{
    kid_t *kid = &f->kids[k];
    assert_int_equal(kid->pid, 0);
    char port[16], partitions[16];
    snprintf(port, sizeof(port), "%d", f->proc.port);
    snprintf(partitions, sizeof(partitions), "%d", T12);
    snprintf(kid->name, sizeof(kid->name), "%s", name);
    const char *argv[] = {"test_groups", "--consumer-child", port,     name, GROUP,
                          TOPIC,         partitions,         strategy, NULL};
    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls until exec: the parent has threads. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        fail_msg("fork: %s", strerror(errno));
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    kid->pid = pid;
    kid->fd = fds[0];
    kid->assigned = 0;
    kid->reports = 0;
    kc_rk_log_addf(&f->log, "%s: child process %ld started", name, (long)pid);
}

/* Read what the kid wrote: its log lines into the client log, its assignment reports. */
static void kid_read(fixture_t *f, kid_t *kid)
{
    if (kid->fd < 0)
        return;
    char buf[8192];
    ssize_t n;
    while ((n = read(kid->fd, buf, sizeof(buf))) > 0)
        kc_out_bytes(&kid->partial, buf, (size_t)n);
    if (n == 0) {
        close(kid->fd);
        kid->fd = -1;
    }
    if (kid->partial.len == 0)
        return;
    size_t at = 0;
    for (;;) {
        uint8_t *nl = memchr(kid->partial.p + at, '\n', kid->partial.len - at);
        if (nl == NULL)
            break;
        *nl = '\0';
        const char *line = (const char *)kid->partial.p + at;
        unsigned long long m;
        if (sscanf(line, "assigned %llx", &m) == 1) {
            kid->assigned = m;
            kid->reports++;
            char s[256];
            kc_rk_log_addf(&f->log, "%s (child): holds %s", kid->name,
                           kc_mask_str(m, s, sizeof(s)));
        } else {
            pthread_mutex_lock(&f->log.mu);
            if (f->log.text.len > 0)
                f->log.text.len--;
            kc_out_bytes(&f->log.text, line, strlen(line));
            kc_out_bytes(&f->log.text, "\n", 2);
            pthread_mutex_unlock(&f->log.mu);
        }
        at = (size_t)(nl - kid->partial.p) + 1;
    }
    memmove(kid->partial.p, kid->partial.p + at, kid->partial.len - at);
    kid->partial.len -= at;
}

/* SIGKILL the kid and reap it. */
static void kid_kill(fixture_t *f, int k)
{
    kid_t *kid = &f->kids[k];
    assert_true(kid->pid > 0);
    assert_int_equal(kill(kid->pid, SIGKILL), 0);
    int ws;
    assert_int_equal(waitpid(kid->pid, &ws, 0), kid->pid);
    kc_rk_log_addf(&f->log, "%s: child killed", kid->name);
    kid->pid = 0;
    kid_read(f, kid);
    kid->assigned = 0;
}

/* ---- Waiting --------------------------------------------------------------------------------- */

typedef int (*cond_fn)(fixture_t *f, const void *arg);

/* Serve every consumer and kid until cond holds or `timeout_ms` passed. Returns 1 when it holds. */
static int drive(fixture_t *f, int timeout_ms, cond_fn cond, const void *arg)
{
    int64_t deadline = kc_now_ms() + timeout_ms;
    for (;;) {
        for (int i = 0; i < MAX_MEMBERS; i++)
            kc_consumer_serve(&f->cs[i]);
        for (int k = 0; k < MAX_KIDS; k++)
            kid_read(f, &f->kids[k]);
        if (cond(f, arg))
            return 1;
        int64_t left = deadline - kc_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd q[MAX_MEMBERS + MAX_KIDS];
        int n = 0;
        for (int i = 0; i < MAX_MEMBERS; i++)
            if (f->cs[i].rk != NULL)
                q[n++] = (struct pollfd){.fd = f->cs[i].wake[0], .events = POLLIN};
        for (int k = 0; k < MAX_KIDS; k++)
            if (f->kids[k].fd >= 0)
                q[n++] = (struct pollfd){.fd = f->kids[k].fd, .events = POLLIN};
        poll(q, (nfds_t)n, left < KC_RK_SERVE_SLICE_MS ? (int)left : KC_RK_SERVE_SLICE_MS);
    }
}

/* The running members: consumers with a handle and live kids. */
static int running_masks(fixture_t *f, uint64_t *masks)
{
    int n = 0;
    for (int i = 0; i < MAX_MEMBERS; i++)
        if (f->cs[i].rk != NULL)
            masks[n++] = f->cs[i].assigned;
    for (int k = 0; k < MAX_KIDS; k++)
        if (f->kids[k].pid > 0)
            masks[n++] = f->kids[k].assigned;
    return n;
}

/* arg: const int *, the number of running members expected. */
static int split_cond(fixture_t *f, const void *arg)
{
    uint64_t masks[MAX_MEMBERS + MAX_KIDS];
    int n = running_masks(f, masks), want = *(const int *)arg;
    if (n != want) {
        snprintf(f->why, sizeof(f->why), "%d members running, want %d", n, want);
        return 0;
    }
    return kc_split_ok(masks, n, T12, f->why, sizeof(f->why));
}

static void dump_members(fixture_t *f)
{
    char ev[2048], s[256];
    for (int i = 0; i < MAX_MEMBERS; i++) {
        kc_consumer_t *c = &f->cs[i];
        if (c->n_events == 0 && c->rk == NULL)
            continue;
        fprintf(stderr, "  %s%s: holds %s, events %s, %d problems\n", c->name,
                c->rk ? "" : " (closed)", kc_mask_str(c->assigned, s, sizeof(s)),
                kc_consumer_events(c, ev, sizeof(ev)), c->bad);
    }
    for (int k = 0; k < MAX_KIDS; k++)
        if (f->kids[k].pid > 0)
            fprintf(stderr, "  %s (child): holds %s\n", f->kids[k].name,
                    kc_mask_str(f->kids[k].assigned, s, sizeof(s)));
}

/* Wait until the running members split t12 (see kc_split_ok), then check that every consumer
 * agrees with librdkafka's own view and saw no problem in its callbacks. */
static void wait_split(fixture_t *f, int members, int timeout_ms)
{
    int64_t t0 = kc_now_ms();
    if (!drive(f, timeout_ms, split_cond, &members)) {
        dump_members(f);
        fail_msg("the %d members did not split %s within %d ms: %s", members, TOPIC, timeout_ms,
                 f->why);
    }
    kc_rk_log_addf(&f->log, "test: %d members split %s after %lld ms", members, TOPIC,
                   (long long)(kc_now_ms() - t0));
    for (int i = 0; i < MAX_MEMBERS; i++) {
        kc_consumer_t *c = &f->cs[i];
        if (c->rk == NULL)
            continue;
        if (!kc_consumer_assignment_ok(c, f->why, sizeof(f->why))) {
            dump_members(f);
            fail_msg("%s", f->why);
        }
        if (c->bad != 0) {
            dump_members(f);
            fail_msg("%s: %d problems in rebalance callbacks (see the client log)", c->name,
                     c->bad);
        }
    }
}

/* ---- librdkafka members ---------------------------------------------------------------------- */

static void start_member(fixture_t *f, int i, const char *strategy, const char *instance_id,
                         const char *debug)
{
    char name[32];
    snprintf(name, sizeof(name), "m%d", i);
    const char *kv[8];
    int n = 0;
    kv[n++] = "partition.assignment.strategy";
    kv[n++] = strategy;
    if (instance_id != NULL) {
        kv[n++] = "group.instance.id";
        kv[n++] = instance_id;
    }
    if (debug != NULL) {
        kv[n++] = "debug";
        kv[n++] = debug;
    }
    kv[n] = NULL;
    if (kc_consumer_start(&f->cs[i], &f->log, f->proc.port, name, GROUP, TOPIC, T12, kv) != 0)
        fail_msg("consumer %s did not start", name);
}

static void close_member(fixture_t *f, int i)
{
    rd_kafka_resp_err_t err = kc_consumer_close(&f->cs[i]);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("%s: rd_kafka_consumer_close: %s", f->cs[i].name, rd_kafka_err2str(err));
    if (f->cs[i].bad != 0)
        fail_msg("%s: %d problems in rebalance callbacks", f->cs[i].name, f->cs[i].bad);
}

/* 1, then 3, then 10 members of one strategy: every step splits t12 among all of them. */
static void grow(fixture_t *f, const char *strategy)
{
    start_member(f, 0, strategy, NULL, NULL);
    wait_split(f, 1, WAIT_MS);
    for (int i = 1; i < 3; i++)
        start_member(f, i, strategy, NULL, NULL);
    wait_split(f, 3, WAIT_MS);
    for (int i = 3; i < 10; i++)
        start_member(f, i, strategy, NULL, NULL);
    wait_split(f, 10, WAIT_MS);
    for (int i = 0; i < 10; i++)
        if (!!f->cs[i].cooperative != !strcmp(strategy, "cooperative-sticky"))
            fail_msg("%s: rebalance protocol %s with strategy %s", f->cs[i].name,
                     rd_kafka_rebalance_protocol(f->cs[i].rk), strategy);
    for (int i = 0; i < 10; i++)
        close_member(f, i);
}

static void test_split_range(void **state)
{
    fixture_t *f = *state;
    grow(f, "range");
    f->proc.ok = 1;
}

static void test_split_roundrobin(void **state)
{
    fixture_t *f = *state;
    grow(f, "roundrobin");
    f->proc.ok = 1;
}

static void test_split_cooperative_sticky(void **state)
{
    fixture_t *f = *state;
    grow(f, "cooperative-sticky");
    f->proc.ok = 1;
}

/* A member that closes (LeaveGroup) is covered by the others at once, not after its session. */
static void closed_member_covered(fixture_t *f, const char *strategy)
{
    for (int i = 0; i < 3; i++)
        start_member(f, i, strategy, NULL, NULL);
    wait_split(f, 3, WAIT_MS);
    int64_t t0 = kc_now_ms();
    close_member(f, 1);
    /* Well within the session timeout: the leave, not an expiry, must trigger the rebalance. */
    wait_split(f, 2, SESSION_MS - 1000);
    kc_rk_log_addf(&f->log, "test: covered %lld ms after the close", (long long)(kc_now_ms() - t0));
    close_member(f, 0);
    wait_split(f, 1, WAIT_MS);
    close_member(f, 2);
}

static void test_closed_member_covered_range(void **state)
{
    fixture_t *f = *state;
    closed_member_covered(f, "range");
    f->proc.ok = 1;
}

static void test_closed_member_covered_cooperative(void **state)
{
    fixture_t *f = *state;
    closed_member_covered(f, "cooperative-sticky");
    f->proc.ok = 1;
}

/* A member killed with SIGKILL (no LeaveGroup) is covered once its session expires. */
static void test_killed_member_covered(void **state)
{
    fixture_t *f = *state;
    kid_start(f, 0, "kid0", "range");
    start_member(f, 0, "range", NULL, NULL);
    start_member(f, 1, "range", NULL, NULL);
    wait_split(f, 3, WAIT_MS);
    int64_t t0 = kc_now_ms();
    kid_kill(f, 0);
    wait_split(f, 2, SESSION_MS + EXPIRY_SLACK_MS);
    kc_rk_log_addf(&f->log, "test: covered %lld ms after SIGKILL", (long long)(kc_now_ms() - t0));
    close_member(f, 0);
    close_member(f, 1);
    f->proc.ok = 1;
}

/* arg: const int[2] = {member, minimum heartbeat responses}. */
static int heartbeats_cond(fixture_t *f, const void *arg)
{
    const int *want = arg;
    return kc_consumer_hb_responses(&f->cs[want[0]]) >= want[1];
}

/* arg: const uint64_t *, the partitions member 1 must hold. */
static int member1_holds_cond(fixture_t *f, const void *arg)
{
    return f->cs[1].rk != NULL && f->cs[1].assigned == *(const uint64_t *)arg;
}

/* KIP-345: a static member that restarts within its session timeout takes its old place: same
 * partitions, and the other members are not rebalanced (no callback, heartbeats keep
 * succeeding). */
static void test_static_member_restart(void **state)
{
    fixture_t *f = *state;
    static const char *const ids[] = {"static-0", "static-1", "static-2"};
    for (int i = 0; i < 3; i++)
        start_member(f, i, "range", ids[i], "cgrp,protocol");
    wait_split(f, 3, WAIT_MS);

    uint64_t before = f->cs[1].assigned;
    int events0 = f->cs[0].n_events, events2 = f->cs[2].n_events;
    int64_t t0 = kc_now_ms();
    close_member(f, 1); /* a static member sends no LeaveGroup */
    start_member(f, 1, "range", ids[1], "cgrp,protocol");
    if (!drive(f, SESSION_MS - 1000, member1_holds_cond, &before)) {
        dump_members(f);
        fail_msg("the restarted static member did not get its partitions back within %d ms",
                 SESSION_MS - 1000);
    }
    kc_rk_log_addf(&f->log, "test: static member back after %lld ms",
                   (long long)(kc_now_ms() - t0));

    /* Two more heartbeat round trips for each of the others: a rebalance would have shown in
     * them as REBALANCE_IN_PROGRESS and then as a revoke callback. */
    for (int i = 0; i < 3; i += 2) {
        int want[2] = {i, kc_consumer_hb_responses(&f->cs[i]) + 2};
        if (!drive(f, WAIT_MS, heartbeats_cond, want))
            fail_msg("%s: no heartbeat responses within %d ms", f->cs[i].name, WAIT_MS);
    }
    int members = 3;
    if (!drive(f, 0, split_cond, &members))
        fail_msg("the split does not hold any more: %s", f->why);
    char ev[2048];
    if (f->cs[0].n_events != events0 || f->cs[2].n_events != events2) {
        dump_members(f);
        fail_msg("the other members were rebalanced: m0 %s, m2 %s",
                 kc_consumer_events(&f->cs[0], ev, sizeof(ev)),
                 kc_consumer_events(&f->cs[2], ev + 1024, sizeof(ev) - 1024));
    }
    if (f->cs[1].n_events != 1 || f->cs[1].events[0].kind != '+' ||
        f->cs[1].events[0].mask != before) {
        dump_members(f);
        fail_msg("the restarted member saw %s", kc_consumer_events(&f->cs[1], ev, sizeof(ev)));
    }
    for (int i = 0; i < 3; i++)
        close_member(f, i);
    f->proc.ok = 1;
}

/* ---- Committed offsets ----------------------------------------------------------------------- */

typedef struct commit_result_s {
    int called;
    rd_kafka_resp_err_t err;
    char detail[1024];
} commit_result_t;

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    (void)rk;
    commit_result_t *r = opaque;
    r->called++;
    r->err = err;
    size_t at = 0;
    for (int i = 0; offsets != NULL && i < offsets->cnt && at < sizeof(r->detail); i++)
        if (offsets->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR)
            at += (size_t)snprintf(r->detail + at, sizeof(r->detail) - at, " %s[%d]: %s",
                                   offsets->elems[i].topic, offsets->elems[i].partition,
                                   rd_kafka_err2name(offsets->elems[i].err));
}

/* A list of t12 partitions p (bit p of mask) at offset base + p, metadata "m<p>". */
static rd_kafka_topic_partition_list_t *offsets_list(uint64_t mask, int64_t base)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(T12);
    for (int p = 0; p < T12; p++) {
        if (!(mask & (1ull << p)))
            continue;
        rd_kafka_topic_partition_t *e = rd_kafka_topic_partition_list_add(l, TOPIC, p);
        e->offset = base + p;
        char md[16];
        int n = snprintf(md, sizeof(md), "m%d", p);
        e->metadata = malloc((size_t)n);
        assert_non_null(e->metadata);
        memcpy(e->metadata, md, (size_t)n);
        e->metadata_size = (size_t)n;
    }
    return l;
}

/* Commit synchronously with explicit offsets; every partition must succeed. */
static void commit_sync(fixture_t *f, kc_consumer_t *c, rd_kafka_topic_partition_list_t *l)
{
    commit_result_t r = {0};
    rd_kafka_resp_err_t err = rd_kafka_commit_queue(c->rk, l, NULL, on_commit, &r);
    kc_rk_log_addf(&f->log, "%s: commit of %d offsets: %s%s", c->name, l->cnt,
                   rd_kafka_err2name(err), r.detail);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || r.called != 1 || r.err != RD_KAFKA_RESP_ERR_NO_ERROR ||
        r.detail[0] != '\0')
        fail_msg("%s: commit: %s (callback %d: %s%s)", c->name, rd_kafka_err2name(err), r.called,
                 rd_kafka_err2name(r.err), r.detail);
}

/* rd_kafka_committed for all of t12 must give `want` (offset, metadata "m<p>") for the
 * partitions in `mask` and no offset (RD_KAFKA_OFFSET_INVALID) for the others; an entry of
 * `override` (offset >= 0) replaces want's offset for its partition. */
static void check_committed(kc_consumer_t *c, uint64_t mask, int64_t base, int override_p,
                            int64_t override_offset)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(T12);
    for (int p = 0; p < T12; p++)
        rd_kafka_topic_partition_list_add(l, TOPIC, p);
    rd_kafka_resp_err_t err = rd_kafka_committed(c->rk, l, 10000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("%s: rd_kafka_committed: %s", c->name, rd_kafka_err2str(err));
    for (int i = 0; i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *e = &l->elems[i];
        int p = e->partition;
        int64_t want = !(mask & (1ull << p)) ? RD_KAFKA_OFFSET_INVALID
                       : p == override_p     ? override_offset
                                             : base + p;
        char md[16];
        int n = snprintf(md, sizeof(md), "m%d", p);
        if (e->err != RD_KAFKA_RESP_ERR_NO_ERROR || e->offset != want)
            fail_msg("%s: committed %s[%d]: offset %lld error %s, want offset %lld", c->name,
                     e->topic, p, (long long)e->offset, rd_kafka_err2name(e->err), (long long)want);
        if (want >= 0 && p != override_p &&
            (e->metadata_size != (size_t)n || memcmp(e->metadata, md, (size_t)n) != 0))
            fail_msg("%s: committed %s[%d]: metadata \"%.*s\", want \"%s\"", c->name, e->topic, p,
                     (int)e->metadata_size, e->metadata ? (const char *)e->metadata : "", md);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Offsets committed by a member survive the group going Empty: a new consumer reads them, a
 * simple (non-member) commit into the Empty group works, and a new member sees both. */
static void test_commit_survives_empty(void **state)
{
    fixture_t *f = *state;
    uint64_t all = (1ull << T12) - 1;
    start_member(f, 0, "range", NULL, NULL);
    wait_split(f, 1, WAIT_MS);

    rd_kafka_topic_partition_list_t *l = offsets_list(all, 100);
    commit_sync(f, &f->cs[0], l);
    rd_kafka_topic_partition_list_destroy(l);
    check_committed(&f->cs[0], all, 100, -1, 0);
    close_member(f, 0); /* the group is Empty now */

    /* A consumer that never joins: reads the offsets, then commits as a simple consumer. */
    if (kc_consumer_start(&f->cs[1], &f->log, f->proc.port, "reader", GROUP, NULL, T12, NULL) != 0)
        fail_msg("the reader did not start");
    check_committed(&f->cs[1], all, 100, -1, 0);
    l = offsets_list(1ull << 3, 500 - 3);
    commit_sync(f, &f->cs[1], l);
    rd_kafka_topic_partition_list_destroy(l);
    check_committed(&f->cs[1], all, 100, 3, 500);
    close_member(f, 1);

    /* A new member of the group sees the same. */
    start_member(f, 2, "range", NULL, NULL);
    wait_split(f, 1, WAIT_MS);
    check_committed(&f->cs[2], all, 100, 3, 500);
    close_member(f, 2);
    f->proc.ok = 1;
}

/* ---- Rebalance callbacks --------------------------------------------------------------------- */

/* arg: const uint64_t *, the partitions member 0 must hold. */
static int member0_holds_cond(fixture_t *f, const void *arg)
{
    return f->cs[0].assigned == *(const uint64_t *)arg;
}

/* The events of c must be exactly want[0..n) ("+" / "-" with masks). */
static void expect_events(kc_consumer_t *c, const kc_rk_event_t *want, int n)
{
    int same = c->n_events == n;
    for (int i = 0; same && i < n; i++)
        same = c->events[i].kind == want[i].kind && c->events[i].mask == want[i].mask;
    if (!same) {
        char got[2048], exp[2048];
        kc_consumer_t w = {.n_events = n};
        memcpy(w.events, want, (size_t)n * sizeof(*want));
        fail_msg("%s: rebalance callbacks %s, want %s", c->name,
                 kc_consumer_events(c, got, sizeof(got)), kc_consumer_events(&w, exp, sizeof(exp)));
    }
}

/* Eager (range): assign everything, revoke everything before each rebalance, revoke on close. */
static void test_rebalance_callbacks_eager(void **state)
{
    fixture_t *f = *state;
    uint64_t all = (1ull << T12) - 1;
    start_member(f, 0, "range", NULL, NULL);
    wait_split(f, 1, WAIT_MS);
    expect_events(&f->cs[0], (kc_rk_event_t[]){{'+', all}}, 1);

    start_member(f, 1, "range", NULL, NULL);
    wait_split(f, 2, WAIT_MS);
    uint64_t a = f->cs[0].assigned, b = f->cs[1].assigned;
    if (!((a == 0x03f && b == 0xfc0) || (a == 0xfc0 && b == 0x03f)))
        fail_msg("range gave m0 %#llx and m1 %#llx, want 0-5 and 6-11", (unsigned long long)a,
                 (unsigned long long)b);
    expect_events(&f->cs[0], (kc_rk_event_t[]){{'+', all}, {'-', all}, {'+', a}}, 3);
    expect_events(&f->cs[1], (kc_rk_event_t[]){{'+', b}}, 1);

    close_member(f, 1);
    expect_events(&f->cs[1], (kc_rk_event_t[]){{'+', b}, {'-', b}}, 2);
    wait_split(f, 1, WAIT_MS);
    expect_events(&f->cs[0],
                  (kc_rk_event_t[]){{'+', all}, {'-', all}, {'+', a}, {'-', a}, {'+', all}}, 5);
    close_member(f, 0);
    expect_events(
        &f->cs[0],
        (kc_rk_event_t[]){{'+', all}, {'-', all}, {'+', a}, {'-', a}, {'+', all}, {'-', all}}, 6);
    f->proc.ok = 1;
}

/* The non-empty events of c (librdkafka may call the cooperative callback with empty lists). */
static int nonempty_events(const kc_consumer_t *c, kc_rk_event_t *out, int cap)
{
    int n = 0;
    for (int i = 0; i < c->n_events && i < KC_RK_MAX_EVENTS; i++)
        if (c->events[i].mask != 0 && n < cap)
            out[n++] = c->events[i];
    return n;
}

static void expect_nonempty_events(kc_consumer_t *c, const kc_rk_event_t *want, int n)
{
    kc_consumer_t only = {.n_events = 0};
    snprintf(only.name, sizeof(only.name), "%.32s (non-empty callbacks)", c->name);
    only.n_events = nonempty_events(c, only.events, KC_RK_MAX_EVENTS);
    expect_events(&only, want, n);
}

/* Cooperative-sticky: a joining member takes half, and the old member revokes only that half;
 * nothing is ever revoked wholesale until close. */
static void test_rebalance_callbacks_cooperative(void **state)
{
    fixture_t *f = *state;
    uint64_t all = (1ull << T12) - 1;
    start_member(f, 0, "cooperative-sticky", NULL, NULL);
    wait_split(f, 1, WAIT_MS);
    expect_nonempty_events(&f->cs[0], (kc_rk_event_t[]){{'+', all}}, 1);

    start_member(f, 1, "cooperative-sticky", NULL, NULL);
    wait_split(f, 2, WAIT_MS);
    uint64_t a = f->cs[0].assigned, b = f->cs[1].assigned;
    assert_int_equal(kc_popcount(b), 6);
    expect_nonempty_events(&f->cs[0], (kc_rk_event_t[]){{'+', all}, {'-', b}}, 2);
    expect_nonempty_events(&f->cs[1], (kc_rk_event_t[]){{'+', b}}, 1);
    assert_true(f->cs[0].cooperative && f->cs[1].cooperative);

    close_member(f, 1);
    expect_nonempty_events(&f->cs[1], (kc_rk_event_t[]){{'+', b}, {'-', b}}, 2);
    if (!drive(f, WAIT_MS, member0_holds_cond, &all))
        fail_msg("m0 did not get all of %s back within %d ms", TOPIC, WAIT_MS);
    expect_nonempty_events(&f->cs[0], (kc_rk_event_t[]){{'+', all}, {'-', b}, {'+', b}}, 3);
    close_member(f, 0);
    expect_nonempty_events(&f->cs[0], (kc_rk_event_t[]){{'+', all}, {'-', b}, {'+', b}, {'-', all}},
                           4);
    (void)a;
    f->proc.ok = 1;
}

/* ---- 200 members over raw frames ------------------------------------------------------------- */

enum {
    RAW_MEMBERS = 200,
    RAW_PARTITIONS = 400,
    RAW_WORDS = (RAW_PARTITIONS + 63) / 64,
    RAW_TIMEOUT_MS = 60000,
    RAW_HB_MS = 500,
    RAW_SESSION_MS = 30000,
};
static const char RAW_TOPIC[] = "t400";
static const char RAW_GROUP[] = "raw200";
static const char RAW_PROTOCOL[] = "roundrobin";

typedef enum { M_FIRST_JOIN, M_JOIN, M_SYNC, M_STABLE } mstate_t;

typedef struct raw_member_s {
    int fd;
    mstate_t state;
    int16_t inflight; /* API key of the request awaiting its answer, or -1 */
    int32_t corr;
    kc_buf_t in; /* received bytes not yet consumed */
    char member_id[256];
    int32_t generation; /* from the last JoinGroup answer */
    int32_t synced;     /* generation of the last successful SyncGroup, or -1 */
    int hb_ok;          /* heartbeats answered 0 since that SyncGroup */
    int64_t next_hb;
    uint64_t assigned[RAW_WORDS];
    int joins, syncs, rebalances_seen;
} raw_member_t;

typedef struct raw_state_s {
    fixture_t *f;
    raw_member_t m[RAW_MEMBERS];
    kc_buf_t subscription; /* ConsumerProtocolSubscription v0 for RAW_TOPIC */
    int32_t corr;
    /* The leader's assignment of the latest generation it computed, by member id. */
    int32_t assigned_generation;
    char (*ids)[256];
    uint64_t (*plan)[RAW_WORDS];
    int n_plan;
} raw_state_t;

/* ConsumerProtocolSubscription v0: version, topics, user_data (null). */
static void put_subscription(kc_buf_t *b)
{
    kc_out_i16(b, 0);
    kc_out_i32(b, 1);
    kc_out_str(b, RAW_TOPIC);
    kc_out_i32(b, -1);
}

/* ConsumerProtocolAssignment v0 for the partitions in words[]. */
static void put_assignment(kc_buf_t *b, const uint64_t *words)
{
    int n = 0;
    for (int p = 0; p < RAW_PARTITIONS; p++)
        n += (words[p / 64] >> (p % 64)) & 1;
    kc_out_i16(b, 0);
    kc_out_i32(b, 1);
    kc_out_str(b, RAW_TOPIC);
    kc_out_i32(b, n);
    for (int p = 0; p < RAW_PARTITIONS; p++)
        if ((words[p / 64] >> (p % 64)) & 1)
            kc_out_i32(b, p);
    kc_out_i32(b, -1);
}

/* Compact bytes: uvarint length + 1, then the bytes. */
static void out_cbytes(kc_buf_t *b, const void *p, size_t n)
{
    kc_out_uvarint(b, (uint32_t)n + 1);
    kc_out_bytes(b, p, n);
}

/* Read compact bytes: returns a pointer into the frame (NULL for null or on error). */
static const uint8_t *in_cbytes(kc_in_t *r, size_t *n)
{
    int32_t len = kc_in_count(r, 1);
    *n = 0;
    if (r->err || len < 0)
        return NULL;
    const uint8_t *at = r->p;
    kc_in_skip(r, (size_t)len);
    *n = (size_t)len;
    return r->err ? NULL : at;
}

static void raw_send(raw_state_t *s, raw_member_t *m, kc_buf_t *b, int16_t key)
{
    int rc = kc_sock_send(m->fd, b->p, b->len);
    if (rc != KC_SOCK_OK)
        fail_msg("member %ld: sending API %d: %s", (long)(m - s->m), key, kc_sock_strerror(rc));
    m->inflight = key;
}

static void raw_join(raw_state_t *s, raw_member_t *m)
{
    kc_buf_t b = {0};
    m->corr = ++s->corr;
    size_t at = kc_req_begin(&b, 11, 9, m->corr, "kc-raw", 1);
    kc_out_cstr(&b, RAW_GROUP);
    kc_out_i32(&b, RAW_SESSION_MS);
    kc_out_i32(&b, RAW_SESSION_MS); /* rebalance_timeout_ms */
    kc_out_cstr(&b, m->member_id);
    kc_out_uvarint(&b, 0); /* group_instance_id: null */
    kc_out_cstr(&b, "consumer");
    kc_out_uvarint(&b, 2); /* one protocol */
    kc_out_cstr(&b, RAW_PROTOCOL);
    out_cbytes(&b, s->subscription.p, s->subscription.len);
    kc_out_uvarint(&b, 0); /* protocol tags */
    kc_out_uvarint(&b, 0); /* reason: null */
    kc_out_uvarint(&b, 0);
    kc_req_end(&b, at);
    raw_send(s, m, &b, 11);
    kc_buf_free(&b);
    m->joins++;
}

/* SyncGroup v5; the leader sends `assignments` (member ids and their partition words). */
static void raw_sync(raw_state_t *s, raw_member_t *m, int n, char (*ids)[256],
                     uint64_t (*plan)[RAW_WORDS])
{
    kc_buf_t b = {0};
    m->corr = ++s->corr;
    size_t at = kc_req_begin(&b, 14, 5, m->corr, "kc-raw", 1);
    kc_out_cstr(&b, RAW_GROUP);
    kc_out_i32(&b, m->generation);
    kc_out_cstr(&b, m->member_id);
    kc_out_uvarint(&b, 0); /* group_instance_id: null */
    kc_out_cstr(&b, "consumer");
    kc_out_cstr(&b, RAW_PROTOCOL);
    kc_out_uvarint(&b, (uint32_t)n + 1);
    for (int i = 0; i < n; i++) {
        kc_buf_t a = {0};
        put_assignment(&a, plan[i]);
        kc_out_cstr(&b, ids[i]);
        out_cbytes(&b, a.p, a.len);
        kc_out_uvarint(&b, 0);
        kc_buf_free(&a);
    }
    kc_out_uvarint(&b, 0);
    kc_req_end(&b, at);
    raw_send(s, m, &b, 14);
    kc_buf_free(&b);
    m->syncs++;
}

static void raw_heartbeat(raw_state_t *s, raw_member_t *m)
{
    kc_buf_t b = {0};
    m->corr = ++s->corr;
    size_t at = kc_req_begin(&b, 12, 4, m->corr, "kc-raw", 1);
    kc_out_cstr(&b, RAW_GROUP);
    kc_out_i32(&b, m->generation);
    kc_out_cstr(&b, m->member_id);
    kc_out_uvarint(&b, 0);
    kc_out_uvarint(&b, 0);
    kc_req_end(&b, at);
    raw_send(s, m, &b, 12);
    kc_buf_free(&b);
    m->next_hb = kc_now_ms() + RAW_HB_MS;
}

/* The leader's JoinGroup answer: check every member's metadata, assign round robin, sync. */
static void raw_lead(raw_state_t *s, raw_member_t *m, kc_in_t *r, int32_t n)
{
    if (n < 1 || n > RAW_MEMBERS)
        fail_msg("leader %s: %d members in the JoinGroup answer", m->member_id, n);
    s->n_plan = n;
    s->assigned_generation = m->generation;
    memset(s->plan, 0, sizeof(*s->plan) * RAW_MEMBERS);
    int self = 0;
    for (int i = 0; i < n; i++) {
        char inst[256];
        kc_in_str(r, 1, s->ids[i], sizeof(s->ids[i]));
        int ilen = kc_in_str(r, 1, inst, sizeof(inst));
        size_t mlen;
        const uint8_t *md = in_cbytes(r, &mlen);
        kc_in_tags(r);
        if (r->err)
            fail_msg("leader %s: the member list does not decode", m->member_id);
        if (ilen != -1)
            fail_msg("member %s has group_instance_id \"%s\", want null", s->ids[i], inst);
        if (md == NULL || mlen != s->subscription.len || memcmp(md, s->subscription.p, mlen) != 0)
            fail_msg("member %s: metadata of %zu bytes differs from the %zu bytes it sent",
                     s->ids[i], mlen, s->subscription.len);
        for (int j = 0; j < i; j++)
            if (strcmp(s->ids[j], s->ids[i]) == 0)
                fail_msg("member %s is listed twice", s->ids[i]);
        self |= strcmp(s->ids[i], m->member_id) == 0;
    }
    if (!self)
        fail_msg("leader %s is not in its own member list", m->member_id);
    for (int p = 0; p < RAW_PARTITIONS; p++)
        s->plan[p % n][p / 64] |= 1ull << (p % 64);
    raw_sync(s, m, n, s->ids, s->plan);
}

static const char *state_name(mstate_t st)
{
    static const char *const names[] = {"first-join", "join", "sync", "stable"};
    return names[st];
}

/* Handle one response frame of member m. */
static void raw_answer(raw_state_t *s, raw_member_t *m, const uint8_t *frame, size_t len)
{
    long idx = (long)(m - s->m);
    kc_in_t in, *r = &in;
    kc_in_init(r, frame, len);
    int32_t corr = kc_in_i32(r);
    kc_in_tags(r);
    if (corr != m->corr)
        fail_msg("member %ld: correlation id %d, want %d", idx, corr, m->corr);
    int16_t key = m->inflight;
    m->inflight = -1;
    kc_in_i32(r); /* throttle_time_ms */
    int16_t err = kc_in_i16(r);
    char s1[256], s2[256], leader[256], mid[256];
    if (key == 11) {
        int32_t gen = kc_in_i32(r);
        int l1 = kc_in_str(r, 1, s1, sizeof(s1)); /* protocol_type */
        int l2 = kc_in_str(r, 1, s2, sizeof(s2)); /* protocol_name */
        kc_in_str(r, 1, leader, sizeof(leader));
        int8_t skip = kc_in_i8(r);
        kc_in_str(r, 1, mid, sizeof(mid));
        int32_t n = kc_in_count(r, 1);
        if (r->err)
            fail_msg("member %ld: JoinGroup v9 answer does not decode", idx);
        if (m->state == M_FIRST_JOIN) {
            if (err != 79 || mid[0] == '\0' || n != 0)
                fail_msg("member %ld: first JoinGroup: error %d, member id \"%s\", %d members; "
                         "want MEMBER_ID_REQUIRED (79) with a member id",
                         idx, err, mid, n);
            snprintf(m->member_id, sizeof(m->member_id), "%s", mid);
            m->state = M_JOIN;
            raw_join(s, m);
            return;
        }
        if (err != 0)
            fail_msg("member %ld (%s): JoinGroup error %d", idx, m->member_id, err);
        if (strcmp(mid, m->member_id) != 0 || l1 < 0 || strcmp(s1, "consumer") != 0 || l2 < 0 ||
            strcmp(s2, RAW_PROTOCOL) != 0 || gen < 1 || skip != 0)
            fail_msg("member %ld: JoinGroup answer: member \"%s\" (want \"%s\"), protocol %s/%s, "
                     "generation %d, skip_assignment %d",
                     idx, mid, m->member_id, l1 < 0 ? "null" : s1, l2 < 0 ? "null" : s2, gen, skip);
        m->generation = gen;
        m->state = M_SYNC;
        if (strcmp(leader, m->member_id) == 0) {
            raw_lead(s, m, r, n);
        } else {
            if (n != 0)
                fail_msg("member %ld: a follower got %d members", idx, n);
            raw_sync(s, m, 0, NULL, NULL);
        }
    } else if (key == 14) {
        int l1 = kc_in_str(r, 1, s1, sizeof(s1));
        int l2 = kc_in_str(r, 1, s2, sizeof(s2));
        size_t alen;
        const uint8_t *a = in_cbytes(r, &alen);
        if (r->err)
            fail_msg("member %ld: SyncGroup v5 answer does not decode", idx);
        if (err == 27) { /* REBALANCE_IN_PROGRESS: join again */
            m->rebalances_seen++;
            m->state = M_JOIN;
            raw_join(s, m);
            return;
        }
        if (err != 0)
            fail_msg("member %ld (%s): SyncGroup error %d", idx, m->member_id, err);
        if (l1 < 0 || strcmp(s1, "consumer") != 0 || l2 < 0 || strcmp(s2, RAW_PROTOCOL) != 0)
            fail_msg("member %ld: SyncGroup protocol %s/%s", idx, l1 < 0 ? "null" : s1,
                     l2 < 0 ? "null" : s2);
        /* Decode the ConsumerProtocolAssignment. */
        kc_in_t ar;
        kc_in_init(&ar, a, alen);
        memset(m->assigned, 0, sizeof(m->assigned));
        int16_t version = kc_in_i16(&ar);
        int32_t nt = kc_in_count(&ar, 0);
        for (int32_t t = 0; t < nt; t++) {
            char topic[64];
            kc_in_str(&ar, 0, topic, sizeof(topic));
            int32_t np = kc_in_count(&ar, 0);
            for (int32_t i = 0; i < np; i++) {
                int32_t p = kc_in_i32(&ar);
                if (strcmp(topic, RAW_TOPIC) != 0 || p < 0 || p >= RAW_PARTITIONS)
                    fail_msg("member %ld: assigned %s[%d]", idx, topic, p);
                m->assigned[p / 64] |= 1ull << (p % 64);
            }
        }
        kc_in_count(&ar, 0); /* user_data */
        if (a == NULL || ar.err || version != 0)
            fail_msg("member %ld: assignment of %zu bytes does not decode", idx, alen);
        m->synced = m->generation;
        m->hb_ok = 0;
        m->state = M_STABLE;
        m->next_hb = kc_now_ms() + RAW_HB_MS;
    } else if (key == 12) {
        if (r->err)
            fail_msg("member %ld: Heartbeat v4 answer does not decode", idx);
        if (err == 27) {
            m->rebalances_seen++;
            m->state = M_JOIN;
            raw_join(s, m);
            return;
        }
        if (err != 0)
            fail_msg("member %ld (%s, generation %d): Heartbeat error %d", idx, m->member_id,
                     m->generation, err);
        m->hb_ok++;
    }
    kc_in_tags(r);
    if (r->err || kc_in_left(r) != 0)
        fail_msg("member %ld: answer to API %d: %zu trailing bytes or does not decode", idx, key,
                 kc_in_left(r));
}

/* Whether all members are stable in one generation and each had a heartbeat accepted in it. */
static int raw_done(raw_state_t *s)
{
    for (int i = 0; i < RAW_MEMBERS; i++) {
        raw_member_t *m = &s->m[i];
        if (m->state != M_STABLE || m->synced != s->m[0].synced || m->hb_ok < 1)
            return 0;
    }
    return 1;
}

static void raw_dump(raw_state_t *s)
{
    int by_state[4] = {0};
    for (int i = 0; i < RAW_MEMBERS; i++)
        by_state[s->m[i].state]++;
    fprintf(stderr, "raw members: %d first-join, %d join, %d sync, %d stable\n", by_state[0],
            by_state[1], by_state[2], by_state[3]);
    for (int i = 0, shown = 0; i < RAW_MEMBERS && shown < 10; i++) {
        raw_member_t *m = &s->m[i];
        if (i < 3 || m->state != M_STABLE || m->hb_ok < 1 || m->synced != s->m[0].synced) {
            shown++;
            fprintf(stderr,
                    "  member %d %s: %s, generation %d, synced %d, %d heartbeats ok, %d joins, "
                    "%d syncs, %d rebalances, waiting for API %d\n",
                    i, m->member_id, state_name(m->state), m->generation, m->synced, m->hb_ok,
                    m->joins, m->syncs, m->rebalances_seen, m->inflight);
        }
    }
}

/* 200 members join one group with the KIP-394 member-id round trip, the leader assigns t400
 * round robin, and every member ends up stable with its two partitions. */
static void test_raw_200_members(void **state)
{
    fixture_t *f = *state;
    raw_state_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    f->raw = s;
    s->ids = calloc(RAW_MEMBERS, sizeof(*s->ids));
    s->plan = calloc(RAW_MEMBERS, sizeof(*s->plan));
    assert_true(s->ids != NULL && s->plan != NULL);
    s->f = f;
    put_subscription(&s->subscription);
    f->raw_fds = calloc(RAW_MEMBERS, sizeof(int));
    assert_non_null(f->raw_fds);

    for (int i = 0; i < RAW_MEMBERS; i++) {
        raw_member_t *m = &s->m[i];
        m->fd = kc_sock_connect(f->proc.port);
        if (m->fd < 0)
            fail_msg("connection %d failed", i);
        f->raw_fds[f->n_raw_fds++] = m->fd;
        m->inflight = -1;
        m->synced = -1;
        m->state = M_FIRST_JOIN;
    }
    for (int i = 0; i < RAW_MEMBERS; i++)
        raw_join(s, &s->m[i]);

    int64_t t0 = kc_now_ms(), deadline = t0 + RAW_TIMEOUT_MS;
    struct pollfd q[RAW_MEMBERS];
    while (!raw_done(s)) {
        int64_t now = kc_now_ms();
        if (now >= deadline) {
            raw_dump(s);
            fail_msg("200 members not stable within %d ms", RAW_TIMEOUT_MS);
        }
        int64_t wake = deadline;
        for (int i = 0; i < RAW_MEMBERS; i++) {
            raw_member_t *m = &s->m[i];
            if (m->state == M_STABLE && m->inflight < 0) {
                if (m->next_hb <= now)
                    raw_heartbeat(s, m);
                else if (m->next_hb < wake)
                    wake = m->next_hb;
            }
            q[i] = (struct pollfd){.fd = m->fd, .events = POLLIN};
        }
        int n = poll(q, RAW_MEMBERS, (int)(wake - now > 0 ? wake - now : 0));
        if (n < 0 && errno != EINTR)
            fail_msg("poll: %s", strerror(errno));
        for (int i = 0; n > 0 && i < RAW_MEMBERS; i++) {
            if (!(q[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            raw_member_t *m = &s->m[i];
            uint8_t buf[65536];
            ssize_t got = recv(m->fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno == ECONNRESET)) {
                raw_dump(s);
                fail_msg("member %d: the daemon closed the connection while it waited for API %d",
                         i, m->inflight);
            }
            if (got < 0)
                continue;
            kc_out_bytes(&m->in, buf, (size_t)got);
            size_t at = 0;
            while (m->in.len - at >= 4) {
                uint32_t flen = ((uint32_t)m->in.p[at] << 24) | ((uint32_t)m->in.p[at + 1] << 16) |
                                ((uint32_t)m->in.p[at + 2] << 8) | m->in.p[at + 3];
                if (m->in.len - at - 4 < flen)
                    break;
                if (m->inflight < 0)
                    fail_msg("member %d: an answer nobody asked for", i);
                raw_answer(s, m, m->in.p + at + 4, flen);
                at += 4 + flen;
            }
            memmove(m->in.p, m->in.p + at, m->in.len - at);
            m->in.len -= at;
        }
    }
    int64_t took = kc_now_ms() - t0;

    /* Every member holds what the leader planned for it in that generation: two partitions,
     * all 400 covered once. */
    int32_t gen = s->m[0].synced;
    if (s->assigned_generation != gen)
        fail_msg("members are stable in generation %d, the last plan was for %d", gen,
                 s->assigned_generation);
    uint64_t seen[RAW_WORDS] = {0};
    int total_joins = 0;
    for (int i = 0; i < RAW_MEMBERS; i++) {
        raw_member_t *m = &s->m[i];
        total_joins += m->joins;
        int k = -1;
        for (int j = 0; j < s->n_plan; j++)
            if (strcmp(s->ids[j], m->member_id) == 0)
                k = j;
        if (k < 0)
            fail_msg("member %d (%s) is not in the leader's plan", i, m->member_id);
        int count = 0;
        for (int w = 0; w < RAW_WORDS; w++) {
            if (m->assigned[w] != s->plan[k][w])
                fail_msg("member %d got another assignment than the leader's plan", i);
            if (seen[w] & m->assigned[w])
                fail_msg("member %d shares partitions with another member", i);
            seen[w] |= m->assigned[w];
            count += kc_popcount(m->assigned[w]);
        }
        if (count != RAW_PARTITIONS / RAW_MEMBERS)
            fail_msg("member %d holds %d partitions, want %d", i, count,
                     RAW_PARTITIONS / RAW_MEMBERS);
    }
    assert_int_equal(s->n_plan, RAW_MEMBERS);
    for (int p = 0; p < RAW_PARTITIONS; p++)
        if (!((seen[p / 64] >> (p % 64)) & 1))
            fail_msg("partition %d is not assigned", p);
    fprintf(stderr, "raw: 200 members stable in generation %d after %lld ms, %d JoinGroups\n", gen,
            (long long)took, total_joins);

    f->proc.ok = 1;
}

static void raw_free(void *raw)
{
    raw_state_t *s = raw;
    if (s == NULL)
        return;
    for (int i = 0; i < RAW_MEMBERS; i++)
        kc_buf_free(&s->m[i].in);
    kc_buf_free(&s->subscription);
    free(s->ids);
    free(s->plan);
    free(s);
}

/* ---- Error answers over raw frames ----------------------------------------------------------- */

/* What a JoinGroup v5 answer says. */
typedef struct join5_s {
    int16_t err;
    int32_t generation, n_members;
    char protocol[64], leader[256], member_id[256];
} join5_t;

/* Send one request frame and read its answer into `resp` (the correlation id checked). */
static void roundtrip(int fd, kc_buf_t *req, int32_t corr, kc_buf_t *resp)
{
    int rc = kc_sock_send(fd, req->p, req->len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(fd, resp, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK)
        fail_msg("request with correlation id %d: %s", corr, kc_sock_strerror(rc));
    kc_in_t r;
    kc_in_init(&r, resp->p, resp->len);
    int32_t got = kc_in_i32(&r);
    if (got != corr)
        fail_msg("correlation id %d, want %d", got, corr);
    req->len = 0;
}

/* JoinGroup v5 (not flexible) with one protocol, ConsumerProtocolSubscription of t12. */
static join5_t join_v5(int fd, const char *group, int32_t session_ms, const char *member_id,
                       const char *protocol_type, const char *protocol)
{
    static int32_t corr = 1000;
    kc_buf_t b = {0}, resp = {0}, sub = {0};
    kc_out_i16(&sub, 0);
    kc_out_i32(&sub, 1);
    kc_out_str(&sub, TOPIC);
    kc_out_i32(&sub, -1);
    size_t at = kc_req_begin(&b, 11, 5, ++corr, "kc-raw", 0);
    kc_out_str(&b, group);
    kc_out_i32(&b, session_ms);
    kc_out_i32(&b, 10000); /* rebalance_timeout_ms */
    kc_out_str(&b, member_id);
    kc_out_str(&b, NULL); /* group_instance_id */
    kc_out_str(&b, protocol_type);
    kc_out_i32(&b, 1);
    kc_out_str(&b, protocol);
    kc_out_i32(&b, (int32_t)sub.len);
    kc_out_bytes(&b, sub.p, sub.len);
    kc_req_end(&b, at);
    roundtrip(fd, &b, corr, &resp);
    join5_t j = {0};
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    kc_in_i32(&r); /* correlation id */
    kc_in_i32(&r); /* throttle_time_ms */
    j.err = kc_in_i16(&r);
    j.generation = kc_in_i32(&r);
    kc_in_str(&r, 0, j.protocol, sizeof(j.protocol));
    kc_in_str(&r, 0, j.leader, sizeof(j.leader));
    kc_in_str(&r, 0, j.member_id, sizeof(j.member_id));
    j.n_members = kc_in_count(&r, 0);
    for (int32_t i = 0; i < j.n_members; i++) {
        char x[256];
        kc_in_str(&r, 0, x, sizeof(x));
        kc_in_str(&r, 0, x, sizeof(x));
        kc_in_skip(&r, (size_t)kc_in_i32(&r));
    }
    if (r.err || kc_in_left(&r) != 0)
        fail_msg("JoinGroup v5 answer does not decode (%zu bytes left)", kc_in_left(&r));
    kc_buf_free(&b);
    kc_buf_free(&resp);
    kc_buf_free(&sub);
    return j;
}

/* SyncGroup v3 (a leader assigning nothing to itself); returns the error code. */
static int16_t sync_v3(int fd, const char *group, int32_t generation, const char *member_id)
{
    static int32_t corr = 2000;
    kc_buf_t b = {0}, resp = {0};
    size_t at = kc_req_begin(&b, 14, 3, ++corr, "kc-raw", 0);
    kc_out_str(&b, group);
    kc_out_i32(&b, generation);
    kc_out_str(&b, member_id);
    kc_out_str(&b, NULL);
    kc_out_i32(&b, 1);
    kc_out_str(&b, member_id);
    kc_out_i32(&b, 0); /* empty assignment bytes */
    kc_req_end(&b, at);
    roundtrip(fd, &b, corr, &resp);
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    kc_in_i32(&r);
    kc_in_i32(&r); /* throttle_time_ms */
    int16_t err = kc_in_i16(&r);
    kc_in_skip(&r, (size_t)kc_in_i32(&r));
    if (r.err || kc_in_left(&r) != 0)
        fail_msg("SyncGroup v3 answer does not decode");
    kc_buf_free(&b);
    kc_buf_free(&resp);
    return err;
}

/* Heartbeat v3; returns the error code. */
static int16_t heartbeat_v3(int fd, const char *group, int32_t generation, const char *member_id)
{
    static int32_t corr = 3000;
    kc_buf_t b = {0}, resp = {0};
    size_t at = kc_req_begin(&b, 12, 3, ++corr, "kc-raw", 0);
    kc_out_str(&b, group);
    kc_out_i32(&b, generation);
    kc_out_str(&b, member_id);
    kc_out_str(&b, NULL);
    kc_req_end(&b, at);
    roundtrip(fd, &b, corr, &resp);
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    kc_in_i32(&r);
    kc_in_i32(&r); /* throttle_time_ms */
    int16_t err = kc_in_i16(&r);
    if (r.err || kc_in_left(&r) != 0)
        fail_msg("Heartbeat v3 answer does not decode");
    kc_buf_free(&b);
    kc_buf_free(&resp);
    return err;
}

/* LeaveGroup v0; returns the error code. */
static int16_t leave_v0(int fd, const char *group, const char *member_id)
{
    static int32_t corr = 4000;
    kc_buf_t b = {0}, resp = {0};
    size_t at = kc_req_begin(&b, 13, 0, ++corr, "kc-raw", 0);
    kc_out_str(&b, group);
    kc_out_str(&b, member_id);
    kc_req_end(&b, at);
    roundtrip(fd, &b, corr, &resp);
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    kc_in_i32(&r);
    int16_t err = kc_in_i16(&r);
    if (r.err || kc_in_left(&r) != 0)
        fail_msg("LeaveGroup v0 answer does not decode");
    kc_buf_free(&b);
    kc_buf_free(&resp);
    return err;
}

#define EXPECT_ERR(got, want, what)                                                                \
    do {                                                                                           \
        int16_t got_ = (got);                                                                      \
        if (got_ != (want))                                                                        \
            fail_msg("%s: error %d, want %d", what, got_, want);                                   \
    } while (0)

/* The error codes Kafka's classic coordinator answers, one case each. */
static void test_raw_group_errors(void **state)
{
    fixture_t *f = *state;
    f->raw_fds = calloc(2, sizeof(int));
    assert_non_null(f->raw_fds);
    int fd = kc_sock_connect(f->proc.port);
    assert_true(fd >= 0);
    f->raw_fds[f->n_raw_fds++] = fd;

    EXPECT_ERR(join_v5(fd, "", SESSION_MS, "", "consumer", "range").err, 24,
               "JoinGroup with an empty group id: INVALID_GROUP_ID");
    EXPECT_ERR(join_v5(fd, "e", 1000, "", "consumer", "range").err, 26,
               "JoinGroup with a session below group.min.session.timeout.ms: "
               "INVALID_SESSION_TIMEOUT");
    EXPECT_ERR(join_v5(fd, "e", 1800001, "", "consumer", "range").err, 26,
               "JoinGroup with a session above group.max.session.timeout.ms: "
               "INVALID_SESSION_TIMEOUT");
    EXPECT_ERR(join_v5(fd, "e", SESSION_MS, "nobody", "consumer", "range").err, 25,
               "JoinGroup with a member id into an unknown group: UNKNOWN_MEMBER_ID");

    /* One member, stable in generation 1. */
    join5_t j = join_v5(fd, "e", SESSION_MS, "", "consumer", "range");
    EXPECT_ERR(j.err, 79, "first JoinGroup v5: MEMBER_ID_REQUIRED");
    char member[256];
    snprintf(member, sizeof(member), "%s", j.member_id);
    j = join_v5(fd, "e", SESSION_MS, member, "consumer", "range");
    EXPECT_ERR(j.err, 0, "second JoinGroup v5");
    assert_int_equal(j.generation, 1);
    assert_string_equal(j.leader, member);
    assert_string_equal(j.member_id, member);
    assert_string_equal(j.protocol, "range");
    assert_int_equal(j.n_members, 1);
    EXPECT_ERR(sync_v3(fd, "e", 2, member), 22,
               "SyncGroup of another generation: "
               "ILLEGAL_GENERATION");
    EXPECT_ERR(sync_v3(fd, "e", 1, "stranger"), 25, "SyncGroup of a stranger: UNKNOWN_MEMBER_ID");
    EXPECT_ERR(sync_v3(fd, "e", 1, member), 0, "SyncGroup");
    EXPECT_ERR(heartbeat_v3(fd, "e", 1, member), 0, "Heartbeat");
    EXPECT_ERR(heartbeat_v3(fd, "e", 2, member), 22,
               "Heartbeat of another generation: "
               "ILLEGAL_GENERATION");
    EXPECT_ERR(heartbeat_v3(fd, "e", 1, "stranger"), 25,
               "Heartbeat of a stranger: "
               "UNKNOWN_MEMBER_ID");

    /* Newcomers that cannot share the group's protocol. */
    EXPECT_ERR(join_v5(fd, "e", SESSION_MS, "", "connect", "range").err, 23,
               "JoinGroup with another protocol type: INCONSISTENT_GROUP_PROTOCOL");
    EXPECT_ERR(join_v5(fd, "e", SESSION_MS, "", "consumer", "sticky").err, 23,
               "JoinGroup with no protocol in common: INCONSISTENT_GROUP_PROTOCOL");
    EXPECT_ERR(heartbeat_v3(fd, "e", 1, member), 0, "Heartbeat after refused newcomers");

    /* Leaving: the member is gone. */
    EXPECT_ERR(leave_v0(fd, "e", member), 0, "LeaveGroup v0");
    EXPECT_ERR(heartbeat_v3(fd, "e", 1, member), 25,
               "Heartbeat after leaving: "
               "UNKNOWN_MEMBER_ID");
    EXPECT_ERR(leave_v0(fd, "e", member), 25, "LeaveGroup again: UNKNOWN_MEMBER_ID");
    /* The daemon still serves this connection. */
    assert_int_equal(kc_check_api_versions(fd, 77), 0);
    f->proc.ok = 1;
}

int main(int argc, char **argv)
{
    if (argc == 8 && strcmp(argv[1], "--consumer-child") == 0)
        return child_main(argv);
    if (getenv("KC_TEST_FILTER") != NULL) /* e.g. KC_TEST_FILTER='test_static*' */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_split_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_roundrobin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_cooperative_sticky, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_member_covered_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_member_covered_cooperative, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_member_covered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_static_member_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_survives_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebalance_callbacks_eager, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebalance_callbacks_cooperative, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_200_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_group_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
