/* rk_group.h - librdkafka group consumers for the integration tests, served from one thread.
 *
 * A kc_consumer_t is one rd_kafka_t consumer that subscribes to one topic of at most 64
 * partitions and tracks, in its rebalance callback, the partitions it holds as a bit mask
 * (bit p = partition p), with the list of assign and revoke events that led there. Eager
 * protocols (range, roundrobin) assign and unassign whole sets; cooperative-sticky assigns
 * and revokes increments, as librdkafka requires.
 *
 * Serving: every consumer's queue wakes a pipe (rd_kafka_queue_io_event_enable), so a test
 * polls all the pipes at once and calls kc_consumer_serve on each consumer, which runs its
 * callbacks in the test's thread. Nothing here sleeps: waits are bounded poll() calls that
 * return early on a wake-up.
 *
 * librdkafka's log lines (the `debug` contexts the test asks for) and error callbacks of every
 * consumer go into one kc_rk_log_t, prefixed with the client name, so a failing test can print
 * what the clients saw next to the daemon's log.
 *
 * Header-only (static functions) because the Makefile links each test_*.c with harness.o only.
 * Callbacks never fail a cmocka assertion (they must not longjmp out of librdkafka): they
 * count problems in `bad` and log them, and the tests assert on that.
 */
#ifndef KC_TESTS_INTEGRATION_RK_GROUP_H
#define KC_TESTS_INTEGRATION_RK_GROUP_H

#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

enum {
    KC_RK_MAX_EVENTS = 64,
    KC_RK_LOG_MAX = 16 << 20,    /* keep at most this much client log */
    KC_RK_LOG_PRINT = 256 << 10, /* print at most this much of its tail */
    KC_RK_SERVE_SLICE_MS = 100,  /* longest poll() between two serving rounds */
    KC_RK_CLOSE_WARN_MS = 15000, /* a consumer close slower than this is logged */
};

/* ---- The client log -------------------------------------------------------------------------- */

typedef struct kc_rk_log_s {
    pthread_mutex_t mu;
    kc_buf_t text; /* NUL-terminated once anything was appended */
    int errors;    /* error callbacks seen */
} kc_rk_log_t;

static inline void kc_rk_log_init(kc_rk_log_t *l)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
}

static inline void kc_rk_log_free(kc_rk_log_t *l)
{
    kc_buf_free(&l->text);
    pthread_mutex_destroy(&l->mu);
}

/* Append one line "a b\n" (b may be NULL). Thread-safe; drops lines beyond KC_RK_LOG_MAX. */
static inline void kc_rk_log_add(kc_rk_log_t *l, const char *a, const char *b)
{
    pthread_mutex_lock(&l->mu);
    if (l->text.len < KC_RK_LOG_MAX) {
        if (l->text.len > 0)
            l->text.len--; /* drop the NUL */
        char stamp[32];
        int64_t now = kc_now_ms();
        snprintf(stamp, sizeof(stamp), "%lld.%03lld ", (long long)(now / 1000),
                 (long long)(now % 1000));
        kc_out_bytes(&l->text, stamp, strlen(stamp));
        kc_out_bytes(&l->text, a, strlen(a));
        if (b != NULL) {
            kc_out_bytes(&l->text, " ", 1);
            kc_out_bytes(&l->text, b, strlen(b));
        }
        kc_out_bytes(&l->text, "\n", 2);
    }
    pthread_mutex_unlock(&l->mu);
}

static inline void kc_rk_log_addf(kc_rk_log_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void kc_rk_log_addf(kc_rk_log_t *l, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    kc_rk_log_add(l, line, NULL);
}

/* Print the tail of the log to stderr. */
static inline void kc_rk_log_print(kc_rk_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    if (l->text.len > 1) {
        size_t from = l->text.len - 1 > KC_RK_LOG_PRINT ? l->text.len - 1 - KC_RK_LOG_PRINT : 0;
        fprintf(stderr, "---- client log%s ----\n%s---- end of client log ----\n",
                from ? " (last 256 KiB)" : "", (char *)l->text.p + from);
    }
    pthread_mutex_unlock(&l->mu);
}

/* Whether a logged line contains `needle`. */
static inline int kc_rk_log_has(kc_rk_log_t *l, const char *needle)
{
    pthread_mutex_lock(&l->mu);
    int found = l->text.len > 0 && strstr((char *)l->text.p, needle) != NULL;
    pthread_mutex_unlock(&l->mu);
    return found;
}

/* ---- Partition sets -------------------------------------------------------------------------- */

/* Bit p for each partition of `topic` in `parts`; *foreign counts entries of other topics or
 * out of range (when not NULL). */
static inline uint64_t kc_parts_mask(const rd_kafka_topic_partition_list_t *parts,
                                     const char *topic, int partitions, int *foreign)
{
    uint64_t m = 0;
    for (int i = 0; parts != NULL && i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &parts->elems[i];
        if (strcmp(p->topic, topic) == 0 && p->partition >= 0 && p->partition < partitions &&
            p->partition < 64)
            m |= 1ull << p->partition;
        else if (foreign != NULL)
            (*foreign)++;
    }
    return m;
}

/* "{0,1,5}" into buf. */
static inline const char *kc_mask_str(uint64_t m, char *buf, size_t cap)
{
    size_t at = 0;
    at += (size_t)snprintf(buf + at, cap - at, "{");
    for (int p = 0; p < 64 && at < cap; p++)
        if (m & (1ull << p))
            at += (size_t)snprintf(buf + at, cap - at, "%s%d", at > 1 ? "," : "", p);
    if (at < cap)
        snprintf(buf + at, cap - at, "}");
    return buf;
}

static inline int kc_popcount(uint64_t m)
{
    return __builtin_popcountll(m);
}

/* Whether masks[0..n) split partitions 0..partitions-1 disjointly and completely, each mask
 * holding floor(partitions / n) or ceil(partitions / n) of them (so each holds at least one
 * when n <= partitions). Returns 1, or 0 with the reason in `why`. */
static inline int kc_split_ok(const uint64_t *masks, int n, int partitions, char *why, size_t cap)
{
    uint64_t all = partitions >= 64 ? ~0ull : (1ull << partitions) - 1, seen = 0;
    int lo = partitions / n, hi = (partitions + n - 1) / n;
    char s[256];
    for (int i = 0; i < n; i++) {
        if (masks[i] & seen) {
            snprintf(why, cap, "member %d holds %s, overlapping others", i,
                     kc_mask_str(masks[i] & seen, s, sizeof(s)));
            return 0;
        }
        seen |= masks[i];
        int k = kc_popcount(masks[i]);
        if (k < lo || k > hi || k == 0) {
            snprintf(why, cap, "member %d holds %d partitions %s, want %d to %d", i, k,
                     kc_mask_str(masks[i], s, sizeof(s)), lo > 0 ? lo : 1, hi);
            return 0;
        }
    }
    if (seen != all) {
        snprintf(why, cap, "partitions %s are not assigned",
                 kc_mask_str(all & ~seen, s, sizeof(s)));
        return 0;
    }
    return 1;
}

/* ---- Consumers ------------------------------------------------------------------------------- */

typedef struct kc_rk_event_s {
    char kind;     /* '+' assigned, '-' revoked */
    uint64_t mask; /* the partitions of the callback */
} kc_rk_event_t;

typedef struct kc_consumer_s {
    rd_kafka_t *rk; /* NULL when not running */
    rd_kafka_queue_t *q;
    int wake[2]; /* the consumer queue writes a byte to wake[1] when it becomes non-empty */
    char name[64];
    const char *topic;
    int partitions;
    kc_rk_log_t *log;
    int cooperative; /* rd_kafka_rebalance_protocol() said COOPERATIVE in a callback */
    uint64_t assigned;
    kc_rk_event_t events[KC_RK_MAX_EVENTS];
    int n_events;     /* may exceed KC_RK_MAX_EVENTS; only the first ones are kept */
    int bad;          /* problems seen in callbacks, described in the log */
    int hb_responses; /* "Received HeartbeatResponse" log lines (debug=protocol), under log->mu */
} kc_consumer_t;

static inline void kc_rk_on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)level;
    kc_consumer_t *c = rd_kafka_opaque(rk);
    if (c == NULL || c->log == NULL)
        return;
    char head[128];
    snprintf(head, sizeof(head), "%s %s:", c->name, fac);
    kc_rk_log_add(c->log, head, buf);
    if (strstr(buf, "Received HeartbeatResponse") != NULL) {
        pthread_mutex_lock(&c->log->mu);
        c->hb_responses++;
        pthread_mutex_unlock(&c->log->mu);
    }
}

static inline void kc_rk_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    kc_consumer_t *c = opaque;
    kc_rk_log_addf(c->log, "%s ERROR %s: %s", c->name, rd_kafka_err2name((rd_kafka_resp_err_t)err),
                   reason);
    pthread_mutex_lock(&c->log->mu);
    c->log->errors++;
    pthread_mutex_unlock(&c->log->mu);
}

static inline int kc_consumer_hb_responses(kc_consumer_t *c)
{
    pthread_mutex_lock(&c->log->mu);
    int n = c->hb_responses;
    pthread_mutex_unlock(&c->log->mu);
    return n;
}

static inline void kc_rk_note_event(kc_consumer_t *c, char kind, uint64_t mask)
{
    if (c->n_events < KC_RK_MAX_EVENTS)
        c->events[c->n_events] = (kc_rk_event_t){.kind = kind, .mask = mask};
    c->n_events++;
}

static inline void kc_rk_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                      rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    kc_consumer_t *c = opaque;
    int foreign = 0;
    uint64_t mask = kc_parts_mask(parts, c->topic, c->partitions, &foreign);
    const char *proto = rd_kafka_rebalance_protocol(rk);
    int coop = proto != NULL && strcmp(proto, "COOPERATIVE") == 0;
    char s[256];
    c->cooperative |= coop;
    if (foreign > 0) {
        kc_rk_log_addf(c->log, "%s: rebalance callback names %d partitions of other topics",
                       c->name, foreign);
        c->bad++;
    }
    rd_kafka_error_t *error = NULL;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        kc_rk_note_event(c, '+', mask);
        if (coop) {
            if (mask & c->assigned) {
                kc_rk_log_addf(c->log, "%s: incremental assign of partitions it already holds",
                               c->name);
                c->bad++;
            }
            error = rd_kafka_incremental_assign(rk, parts);
            c->assigned |= mask;
        } else {
            e = rd_kafka_assign(rk, parts);
            c->assigned = mask;
        }
        kc_rk_log_addf(c->log, "%s: REBALANCE assign %s (%s), holds %s", c->name,
                       kc_mask_str(mask, s, sizeof(s)), proto ? proto : "?",
                       kc_mask_str(c->assigned, s + 128, sizeof(s) - 128));
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        kc_rk_note_event(c, '-', mask);
        if (coop) {
            if ((mask & c->assigned) != mask) {
                kc_rk_log_addf(c->log, "%s: incremental revoke of partitions it does not hold",
                               c->name);
                c->bad++;
            }
            error = rd_kafka_incremental_unassign(rk, parts);
            c->assigned &= ~mask;
        } else {
            if (mask != c->assigned) {
                kc_rk_log_addf(c->log, "%s: eager revoke of a set other than what it holds",
                               c->name);
                c->bad++;
            }
            e = rd_kafka_assign(rk, NULL);
            c->assigned = 0;
        }
        kc_rk_log_addf(c->log, "%s: REBALANCE revoke %s (%s), holds %s", c->name,
                       kc_mask_str(mask, s, sizeof(s)), proto ? proto : "?",
                       kc_mask_str(c->assigned, s + 128, sizeof(s) - 128));
    } else {
        kc_rk_log_addf(c->log, "%s: rebalance error %s", c->name, rd_kafka_err2name(err));
        c->bad++;
        if (coop)
            error = rd_kafka_incremental_unassign(rk, parts);
        else
            e = rd_kafka_assign(rk, NULL);
        c->assigned = 0;
    }
    if (error != NULL) {
        kc_rk_log_addf(c->log, "%s: incremental (un)assign failed: %s", c->name,
                       rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
        c->bad++;
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        kc_rk_log_addf(c->log, "%s: assign failed: %s", c->name, rd_kafka_err2str(e));
        c->bad++;
    }
}

/* Set a configuration property; returns 0, or -1 after printing why. */
static inline int kc_rk_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "rd_kafka_conf_set %s=%s: %s\n", k, v, errstr);
        return -1;
    }
    return 0;
}

/* Start consumer `c` (all zero before) named `name` (its client.id) in `group` on the daemon
 * at `port`, logging into `log`. `conf_kv` holds extra "key", "value" pairs, NULL-terminated
 * (may be NULL); they override the defaults below. When `topic` is not NULL the consumer
 * subscribes to it, else it only exists (for commits and committed-offset queries).
 * Returns 0, or -1 after printing why (with nothing left running). */
static inline int kc_consumer_start(kc_consumer_t *c, kc_rk_log_t *log, int port, const char *name,
                                    const char *group, const char *topic, int partitions,
                                    const char *const *conf_kv)
{
    memset(c, 0, sizeof(*c));
    c->wake[0] = c->wake[1] = -1;
    c->log = log;
    c->topic = topic;
    c->partitions = partitions;
    snprintf(c->name, sizeof(c->name), "%s", name);

    char bootstrap[64], errstr[512];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", port);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *const defaults[][2] = {
        {"bootstrap.servers", bootstrap},
        {"group.id", group},
        {"client.id", name},
        {"session.timeout.ms", "6000"},
        {"heartbeat.interval.ms", "500"},
        {"enable.auto.commit", "false"},
        {"auto.offset.reset", "earliest"},
        {"allow.auto.create.topics", "false"},
        {"reconnect.backoff.ms", "100"},
        {"reconnect.backoff.max.ms", "1000"},
        {"log.connection.close", "false"},
        {"debug", "cgrp"},
    };
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        int overridden = 0;
        for (int j = 0; conf_kv != NULL && conf_kv[j] != NULL; j += 2)
            overridden |= strcmp(conf_kv[j], defaults[i][0]) == 0;
        if (!overridden && kc_rk_set(conf, defaults[i][0], defaults[i][1]) != 0)
            goto fail_conf;
    }
    for (int j = 0; conf_kv != NULL && conf_kv[j] != NULL; j += 2)
        if (kc_rk_set(conf, conf_kv[j], conf_kv[j + 1]) != 0)
            goto fail_conf;
    rd_kafka_conf_set_log_cb(conf, kc_rk_on_log);
    rd_kafka_conf_set_error_cb(conf, kc_rk_on_error);
    rd_kafka_conf_set_rebalance_cb(conf, kc_rk_on_rebalance);
    rd_kafka_conf_set_opaque(conf, c);

    if (pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "pipe2: %s\n", strerror(errno));
        c->wake[0] = c->wake[1] = -1;
        goto fail_conf;
    }
    c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (c->rk == NULL) {
        fprintf(stderr, "rd_kafka_new: %s\n", errstr);
        goto fail_conf;
    }
    rd_kafka_poll_set_consumer(c->rk);
    c->q = rd_kafka_queue_get_consumer(c->rk);
    rd_kafka_queue_io_event_enable(c->q, c->wake[1], "1", 1);
    if (topic != NULL) {
        rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t err = rd_kafka_subscribe(c->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "rd_kafka_subscribe: %s\n", rd_kafka_err2str(err));
            rd_kafka_queue_destroy(c->q);
            rd_kafka_destroy_flags(c->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
            c->rk = NULL;
            goto fail;
        }
    }
    kc_rk_log_addf(log, "%s: started in group %s", name, group);
    return 0;

fail_conf:
    rd_kafka_conf_destroy(conf);
fail:
    if (c->wake[0] >= 0) {
        close(c->wake[0]);
        close(c->wake[1]);
    }
    c->wake[0] = c->wake[1] = -1;
    return -1;
}

/* Run whatever is queued for the consumer: rebalance callbacks, errors, messages (there are
 * none; a fetch error arrives as a message with `err` set and is logged). Never blocks. */
static inline void kc_consumer_serve(kc_consumer_t *c)
{
    if (c->rk == NULL)
        return;
    char drain[64];
    while (read(c->wake[0], drain, sizeof(drain)) > 0)
        ;
    for (int i = 0; i < 1000; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, 0);
        if (m == NULL)
            break;
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR)
            kc_rk_log_addf(c->log, "%s: consumer error %s: %s", c->name, rd_kafka_err2name(m->err),
                           rd_kafka_message_errstr(m));
        else
            kc_rk_log_addf(c->log, "%s: unexpected message at offset %lld", c->name,
                           (long long)m->offset);
        rd_kafka_message_destroy(m);
    }
}

static inline void kc_consumer_release(kc_consumer_t *c, int flags)
{
    rd_kafka_queue_destroy(c->q);
    rd_kafka_destroy_flags(c->rk, flags);
    c->rk = NULL;
    c->q = NULL;
    close(c->wake[0]);
    close(c->wake[1]);
    c->wake[0] = c->wake[1] = -1;
}

/* Close the consumer as an application does (rd_kafka_consumer_close: revoke callback, then
 * LeaveGroup unless it is a static member) and destroy it. Returns the close's error. The
 * event list and mask stay readable. */
static inline rd_kafka_resp_err_t kc_consumer_close(kc_consumer_t *c)
{
    if (c->rk == NULL)
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    int64_t t0 = kc_now_ms();
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(c->rk);
    int64_t took = kc_now_ms() - t0;
    kc_rk_log_addf(c->log, "%s: closed in %lld ms: %s", c->name, (long long)took,
                   rd_kafka_err2name(err));
    if (took > KC_RK_CLOSE_WARN_MS)
        fprintf(stderr, "%s: rd_kafka_consumer_close took %lld ms\n", c->name, (long long)took);
    kc_consumer_release(c, 0);
    return err;
}

/* Destroy without closing (teardown after a failure): no callbacks, no LeaveGroup. */
static inline void kc_consumer_abandon(kc_consumer_t *c)
{
    if (c->rk != NULL)
        kc_consumer_release(c, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

/* The events of `c` as text: "+{0,1} -{0,1} ...". */
static inline const char *kc_consumer_events(const kc_consumer_t *c, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->n_events && i < KC_RK_MAX_EVENTS && at + 1 < cap; i++) {
        char s[256];
        at += (size_t)snprintf(buf + at, cap - at, "%s%c%s", i ? " " : "", c->events[i].kind,
                               kc_mask_str(c->events[i].mask, s, sizeof(s)));
    }
    return buf;
}

/* Check that librdkafka's own view (rd_kafka_assignment) matches the callbacks' mask. Returns
 * 1, or 0 with the reason in `why`. */
static inline int kc_consumer_assignment_ok(kc_consumer_t *c, char *why, size_t cap)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_resp_err_t err = rd_kafka_assignment(c->rk, &parts);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(why, cap, "%s: rd_kafka_assignment: %s", c->name, rd_kafka_err2str(err));
        return 0;
    }
    int foreign = 0;
    uint64_t m = kc_parts_mask(parts, c->topic, c->partitions, &foreign);
    rd_kafka_topic_partition_list_destroy(parts);
    if (m != c->assigned || foreign != 0) {
        char a[256], b[256];
        snprintf(why, cap, "%s: rd_kafka_assignment %s (+%d other), callbacks left %s", c->name,
                 kc_mask_str(m, a, sizeof(a)), foreign, kc_mask_str(c->assigned, b, sizeof(b)));
        return 0;
    }
    return 1;
}

#endif
