/* test_discovery.c - discovery APIs of a real kcoord, seen by librdkafka, kcat and raw frames.
 *
 * Every test starts its own daemon (node.id 7, three topics) and stops it in the teardown,
 * which fails the test unless the daemon exits 0 on SIGTERM. The librdkafka and kcat tests
 * check what real clients see: one broker at the daemon's port, the topics with their partition
 * counts, and an ApiVersions negotiation that needed no fallback. The raw tests build requests
 * byte by byte (harness.h) and decode every field of the answers, for every version they send:
 * pipelined requests must come back in request order, unsupported ApiVersions versions get the
 * v0 fallback body, and FindCoordinator answers for groups but not for transactions.
 *
 * To add a request version to the pipelines, add it to KINDS and teach put_request and
 * check_response its fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

enum { NODE_ID = 7, MAX_FDS = 8, RK_TIMEOUT_MS = 10000, KCAT_TIMEOUT_MS = 30000 };

static const struct {
    const char *name;
    int partitions;
} TOPICS[] = {{"orders", 3}, {"events", 1}, {"audit", 12}};
enum { N_TOPICS = sizeof(TOPICS) / sizeof(TOPICS[0]) };

static const char *const SETS[] = {"topics=orders:3,events:1,audit:12", "node.id=7", NULL};
/* The same, reading at most one request ahead per connection: backpressure at every frame. */
static const char *const SETS_QUEUE_1[] = {"topics=orders:3,events:1,audit:12", "node.id=7",
                                           "queued.max.requests=1", NULL};

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

/* Start the daemon with SETS, or with the settings given as the test's prestate. */
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

/* ---- Decoding answers ------------------------------------------------------------------------ */

/* Why the last check failed; checks return NULL when all is well, else this buffer. */
static char why[1024];

static const char *failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return why;
}

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (r->err)                                                                                \
            return failf("the response does not decode");                                          \
        if (!(cond))                                                                               \
            return failf(__VA_ARGS__);                                                             \
    } while (0)

/* The requests the pipelines mix: every API the daemon serves, at several versions. */
typedef struct kind_s {
    int16_t key, version;
} kind_t;

static const kind_t KINDS[] = {
    {18, 0}, {18, 1}, {18, 2}, {18, 3}, {18, 4},          /* ApiVersions */
    {3, 0},  {3, 1},  {3, 4},  {3, 9},  {3, 12}, {3, 13}, /* Metadata */
    {10, 0}, {10, 1}, {10, 3}, {10, 4}, {10, 6},          /* FindCoordinator */
    {60, 0}, {60, 1}, {60, 2},                            /* DescribeCluster */
};
enum { N_KINDS = sizeof(KINDS) / sizeof(KINDS[0]) };

static const char *api_name(int16_t key)
{
    switch (key) {
    case 3:
        return "Metadata";
    case 10:
        return "FindCoordinator";
    case 18:
        return "ApiVersions";
    case 60:
        return "DescribeCluster";
    default:
        return "?";
    }
}

/* Whether the request (and body) of this version is flexible. */
static int flexible(int16_t key, int16_t version)
{
    switch (key) {
    case 3:
        return version >= 9;
    case 10:
        return version >= 3;
    case 18:
        return version >= 3;
    default:
        return 1; /* DescribeCluster is flexible from v0 */
    }
}

/* ApiVersions, any version: error 0 and the four served APIs with their exact ranges. */
static const char *check_api_versions(kc_in_t *r, int16_t v)
{
    static const int16_t want[][3] = {{18, 0, 4}, {3, 0, 13}, {10, 0, 6}, {60, 0, 2}};
    int seen[4] = {0};
    int flex = v >= 3;
    int16_t err = kc_in_i16(r);
    int32_t n = kc_in_count(r, flex);
    int16_t keys[512];
    EXPECT(n >= 4 && n <= 512, "%d API keys listed", n);
    for (int32_t i = 0; i < n; i++) {
        int16_t key = kc_in_i16(r), min = kc_in_i16(r), max = kc_in_i16(r);
        if (flex)
            kc_in_tags(r);
        EXPECT(min >= 0 && min <= max, "key %d listed as %d-%d", key, min, max);
        for (int32_t j = 0; j < i; j++)
            EXPECT(keys[j] != key, "key %d listed twice", key);
        keys[i] = key;
        for (int w = 0; w < 4; w++) {
            if (key == want[w][0]) {
                EXPECT(min == want[w][1] && max == want[w][2], "key %d listed as %d-%d, want %d-%d",
                       key, min, max, want[w][1], want[w][2]);
                seen[w] = 1;
            }
        }
    }
    if (v >= 1)
        kc_in_i32(r); /* throttle_time_ms */
    if (flex)
        kc_in_tags(r);
    EXPECT(err == 0, "error %d", err);
    for (int w = 0; w < 4; w++)
        EXPECT(seen[w], "key %d is not listed", want[w][0]);
    return NULL;
}

/* Metadata v0-13 for all topics: one broker, NODE_ID at 127.0.0.1:port, exactly TOPICS. */
static const char *check_metadata(kc_in_t *r, int16_t v, int port)
{
    int flex = v >= 9;
    char s[256];
    if (v >= 3)
        kc_in_i32(r); /* throttle_time_ms */
    int32_t nb = kc_in_count(r, flex);
    EXPECT(nb == 1, "%d brokers, want 1", nb);
    int32_t node = kc_in_i32(r);
    kc_in_str(r, flex, s, sizeof(s));
    int32_t bport = kc_in_i32(r);
    EXPECT(node == NODE_ID && strcmp(s, "127.0.0.1") == 0 && bport == port,
           "broker %d at %s:%d, want %d at 127.0.0.1:%d", node, s, bport, NODE_ID, port);
    if (v >= 1)
        kc_in_str(r, flex, s, sizeof(s)); /* rack */
    if (flex)
        kc_in_tags(r);
    if (v >= 2)
        kc_in_str(r, flex, s, sizeof(s)); /* cluster_id */
    if (v >= 1)
        kc_in_i32(r); /* controller_id */

    int32_t nt = kc_in_count(r, flex);
    EXPECT(nt == N_TOPICS, "%d topics, want %d", nt, N_TOPICS);
    int seen[N_TOPICS] = {0};
    uint8_t ids[N_TOPICS][16] = {{0}};
    for (int32_t t = 0; t < nt; t++) {
        int16_t terr = kc_in_i16(r);
        kc_in_str(r, flex, s, sizeof(s));
        int which = -1;
        for (int k = 0; k < N_TOPICS; k++)
            if (strcmp(s, TOPICS[k].name) == 0)
                which = k;
        EXPECT(which >= 0 && !seen[which], "unexpected or repeated topic \"%s\"", s);
        seen[which] = 1;
        EXPECT(terr == 0, "topic %s: error %d", s, terr);
        if (v >= 10) {
            const uint8_t *id = r->p;
            kc_in_skip(r, 16);
            static const uint8_t zero[16];
            EXPECT(memcmp(id, zero, 16) != 0, "topic %s: zero topic id", s);
            for (int k = 0; k < N_TOPICS; k++)
                EXPECT(!seen[k] || k == which || memcmp(ids[k], id, 16) != 0,
                       "topics %s and %s share a topic id", TOPICS[k].name, s);
            memcpy(ids[which], id, 16);
        }
        if (v >= 1)
            EXPECT(kc_in_i8(r) == 0, "topic %s is marked internal", s);
        int32_t np = kc_in_count(r, flex);
        EXPECT(np == TOPICS[which].partitions, "topic %s: %d partitions, want %d", s, np,
               TOPICS[which].partitions);
        uint64_t indexes = 0; /* partitions are < 64 here */
        for (int32_t i = 0; i < np; i++) {
            int16_t perr = kc_in_i16(r);
            int32_t index = kc_in_i32(r), leader = kc_in_i32(r);
            EXPECT(perr == 0 && leader == NODE_ID && index >= 0 && index < np &&
                       !(indexes & (1ull << index)),
                   "topic %s: partition %d error %d leader %d", s, index, perr, leader);
            indexes |= 1ull << index;
            if (v >= 7)
                kc_in_i32(r); /* leader_epoch */
            for (int list = 0; list < (v >= 5 ? 3 : 2); list++) {
                int32_t nr = kc_in_count(r, flex); /* replicas, isr, offline */
                EXPECT(nr >= 0, "topic %s: null replica list", s);
                kc_in_skip(r, 4 * (size_t)nr);
            }
            if (flex)
                kc_in_tags(r);
        }
        if (v >= 8)
            kc_in_i32(r); /* topic_authorized_operations */
        if (flex)
            kc_in_tags(r);
    }
    if (v >= 8 && v <= 10)
        kc_in_i32(r); /* cluster_authorized_operations */
    if (v >= 13) {
        int16_t err = kc_in_i16(r);
        EXPECT(err == 0, "top-level error %d", err);
    }
    if (flex)
        kc_in_tags(r);
    return NULL;
}

/* One coordinator of a FindCoordinator answer. */
typedef struct coord_s {
    char key[64];
    int32_t node, port;
    char host[64];
    int16_t err;
} coord_t;

/* Decode FindCoordinator v0-6 into c[0..*n). Before v4 the single answer gets `key` as its key. */
static const char *decode_find_coordinator(kc_in_t *r, int16_t v, const char *key, coord_t *c,
                                           int max, int *n)
{
    int flex = v >= 3;
    char msg[256];
    if (v >= 1)
        kc_in_i32(r); /* throttle_time_ms */
    if (v <= 3) {
        *n = 1;
        snprintf(c[0].key, sizeof(c[0].key), "%s", key);
        c[0].err = kc_in_i16(r);
        if (v >= 1)
            kc_in_str(r, flex, msg, sizeof(msg));
        c[0].node = kc_in_i32(r);
        kc_in_str(r, flex, c[0].host, sizeof(c[0].host));
        c[0].port = kc_in_i32(r);
    } else {
        *n = kc_in_count(r, 1);
        EXPECT(*n >= 0 && *n <= max, "%d coordinators", *n);
        for (int i = 0; i < *n; i++) {
            kc_in_str(r, 1, c[i].key, sizeof(c[i].key));
            c[i].node = kc_in_i32(r);
            kc_in_str(r, 1, c[i].host, sizeof(c[i].host));
            c[i].port = kc_in_i32(r);
            c[i].err = kc_in_i16(r);
            kc_in_str(r, 1, msg, sizeof(msg));
            kc_in_tags(r);
        }
    }
    if (flex)
        kc_in_tags(r);
    return r->err ? failf("the response does not decode") : NULL;
}

/* FindCoordinator for group `key`: error 0 and this node. */
static const char *check_find_coordinator(kc_in_t *r, int16_t v, int port, const char *key)
{
    coord_t c[2];
    int n;
    const char *bad = decode_find_coordinator(r, v, key, c, 2, &n);
    if (bad != NULL)
        return bad;
    EXPECT(n == 1, "%d coordinators, want 1", n);
    EXPECT(strcmp(c[0].key, key) == 0 && c[0].err == 0 && c[0].node == NODE_ID &&
               strcmp(c[0].host, "127.0.0.1") == 0 && c[0].port == port,
           "key \"%s\": error %d, node %d at %s:%d; want \"%s\", 0, %d at 127.0.0.1:%d", c[0].key,
           c[0].err, c[0].node, c[0].host, c[0].port, key, NODE_ID, port);
    return NULL;
}

/* DescribeCluster v0-2: error 0, a cluster id, one unfenced broker, this node. */
static const char *check_describe_cluster(kc_in_t *r, int16_t v, int port)
{
    char s[256];
    kc_in_i32(r); /* throttle_time_ms */
    int16_t err = kc_in_i16(r);
    kc_in_str(r, 1, s, sizeof(s)); /* error_message */
    EXPECT(err == 0, "error %d: %s", err, s);
    if (v >= 1) {
        int8_t endpoint_type = kc_in_i8(r);
        EXPECT(endpoint_type == 1, "endpoint_type %d, want 1", endpoint_type);
    }
    int len = kc_in_str(r, 1, s, sizeof(s));
    EXPECT(len > 0, "empty or null cluster_id");
    kc_in_i32(r); /* controller_id */
    int32_t nb = kc_in_count(r, 1);
    EXPECT(nb == 1, "%d brokers, want 1", nb);
    int32_t node = kc_in_i32(r);
    kc_in_str(r, 1, s, sizeof(s));
    int32_t bport = kc_in_i32(r);
    EXPECT(node == NODE_ID && strcmp(s, "127.0.0.1") == 0 && bport == port,
           "broker %d at %s:%d, want %d at 127.0.0.1:%d", node, s, bport, NODE_ID, port);
    kc_in_str(r, 1, s, sizeof(s)); /* rack */
    if (v >= 2)
        EXPECT(kc_in_i8(r) == 0, "the broker is fenced");
    kc_in_tags(r);
    kc_in_i32(r); /* cluster_authorized_operations */
    kc_in_tags(r);
    return NULL;
}

/* Append the request for kind `k`: all topics for Metadata, group `group` for FindCoordinator. */
static void put_request(kc_buf_t *b, const kind_t *k, int32_t corr, const char *group)
{
    int16_t v = k->version;
    int flex = flexible(k->key, v);
    size_t f = kc_req_begin(b, k->key, v, corr, "kcoord-it", flex);
    switch (k->key) {
    case 18:
        if (v >= 3) {
            kc_out_cstr(b, "kcoord-it");
            kc_out_cstr(b, "1.0");
        }
        break;
    case 3:
        if (v == 0)
            kc_out_i32(b, 0); /* v0: an empty list means all topics */
        else if (v < 9)
            kc_out_i32(b, -1); /* null: all topics */
        else
            kc_out_uvarint(b, 0);
        if (v >= 4)
            kc_out_i8(b, 0); /* allow_auto_topic_creation */
        if (v >= 8 && v <= 10)
            kc_out_i8(b, 0); /* include_cluster_authorized_operations */
        if (v >= 8)
            kc_out_i8(b, 0); /* include_topic_authorized_operations */
        break;
    case 10:
        if (v <= 3) {
            if (flex)
                kc_out_cstr(b, group);
            else
                kc_out_str(b, group);
            if (v >= 1)
                kc_out_i8(b, 0); /* key_type: group */
        } else {
            kc_out_i8(b, 0);
            kc_out_uvarint(b, 2); /* one coordinator key */
            kc_out_cstr(b, group);
        }
        break;
    case 60:
        kc_out_i8(b, 0); /* include_cluster_authorized_operations */
        if (v >= 1)
            kc_out_i8(b, 1); /* endpoint_type: brokers */
        if (v >= 2)
            kc_out_i8(b, 0); /* include_fenced_brokers */
        break;
    }
    if (flex)
        kc_out_uvarint(b, 0);
    kc_req_end(b, f);
}

/* Check one response frame (without its size) to a request of kind `k`. */
static const char *check_response(const kind_t *k, const uint8_t *frame, size_t len, int32_t corr,
                                  int port, const char *group)
{
    kc_in_t in, *r = &in;
    kc_in_init(r, frame, len);
    int32_t got = kc_in_i32(r);
    EXPECT(got == corr, "correlation id %d, want %d", got, corr);
    if (k->key != 18 && flexible(k->key, k->version))
        kc_in_tags(r); /* response header v1 */
    const char *bad = NULL;
    switch (k->key) {
    case 18:
        bad = check_api_versions(r, k->version);
        break;
    case 3:
        bad = check_metadata(r, k->version, port);
        break;
    case 10:
        bad = check_find_coordinator(r, k->version, port, group);
        break;
    case 60:
        bad = check_describe_cluster(r, k->version, port);
        break;
    }
    if (bad != NULL)
        return bad;
    EXPECT(kc_in_left(r) == 0, "%zu bytes after the body", kc_in_left(r));
    return NULL;
}

/* ---- Pipelines ------------------------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Send all of `req`, in send() calls of at most `chunk` bytes (0: as many as the socket takes),
 * reading only when a send would block or everything is sent, until `nframes` whole response
 * frames (sizes included) are in `resp` or `timeout_ms` passed. Reading late lets the daemon's
 * output back up, as a slow client would. */
static int exchange(int fd, const kc_buf_t *req, size_t chunk, int nframes, kc_buf_t *resp,
                    int timeout_ms)
{
    int64_t deadline = kc_now_ms() + timeout_ms;
    size_t sent = 0, scanned = 0;
    int frames = 0;
    while (frames < nframes) {
        if (sent < req->len) {
            size_t n = req->len - sent;
            if (chunk > 0 && n > chunk)
                n = chunk;
            ssize_t w = send(fd, req->p + sent, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
                sent += (size_t)w;
                continue;
            }
            if (errno == EPIPE || errno == ECONNRESET)
                return KC_SOCK_CLOSED;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return KC_SOCK_ERROR;
        }
        int64_t left = deadline - kc_now_ms();
        if (left <= 0)
            return KC_SOCK_TIMEOUT;
        struct pollfd q = {.fd = fd, .events = POLLIN | (sent < req->len ? POLLOUT : 0)};
        if (poll(&q, 1, (int)left) <= 0 || !(q.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        uint8_t buf[65536];
        ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno == ECONNRESET))
            return KC_SOCK_CLOSED;
        if (got < 0)
            continue;
        kc_out_bytes(resp, buf, (size_t)got);
        while (resp->len - scanned >= 4 && resp->len - scanned - 4 >= be32(resp->p + scanned)) {
            scanned += 4 + be32(resp->p + scanned);
            frames++;
        }
    }
    return KC_SOCK_OK;
}

/* Request i of a pipeline tagged `seed`: its kind, correlation id and group. Correlation ids
 * are distinct, unordered and partly negative (multiplying by an odd constant is a bijection). */
static const kind_t *nth_request(int seed, int i, int32_t *corr, char *group, size_t cap)
{
    *corr = (int32_t)((uint32_t)(seed * 100003 + i + 1) * 2654435761u);
    snprintf(group, cap, "group-%d-%d", seed, i);
    return &KINDS[(i * 5 + seed) % N_KINDS];
}

/* Append `count` requests of pipeline `seed` to `req`. */
static void put_pipeline(kc_buf_t *req, int seed, int count)
{
    for (int i = 0; i < count; i++) {
        int32_t corr;
        char group[32];
        const kind_t *k = nth_request(seed, i, &corr, group, sizeof(group));
        put_request(req, k, corr, group);
    }
}

/* Check that `resp` holds exactly the answers to pipeline `seed`, in request order. */
static void check_pipeline(fixture_t *f, int seed, int count, const kc_buf_t *resp)
{
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        int32_t corr;
        char group[32];
        const kind_t *k = nth_request(seed, i, &corr, group, sizeof(group));
        assert_true(resp->len - at >= 4);
        uint32_t len = be32(resp->p + at);
        assert_true(resp->len - at - 4 >= len);
        const char *bad = check_response(k, resp->p + at + 4, len, corr, f->proc.port, group);
        if (bad != NULL)
            fail_msg("pipeline %d, response %d of %d (%s v%d, corr %d): %s", seed, i, count,
                     api_name(k->key), k->version, corr, bad);
        at += 4 + len;
    }
    assert_int_equal(at, resp->len); /* nothing more than asked for */
}

/* Send `count` requests cycling through KINDS on one connection, in chunks of at most `chunk`
 * bytes (0: one write), and check that every answer comes back in request order. */
static void pipeline(fixture_t *f, int count, size_t chunk)
{
    int fd = connect_fd(f);
    kc_buf_t req = {0}, resp = {0};
    put_pipeline(&req, 0, count);
    int rc = exchange(fd, &req, chunk, count, &resp, 60000);
    if (rc != KC_SOCK_OK)
        fail_msg("%d pipelined requests: %s after %zu response bytes", count, kc_sock_strerror(rc),
                 resp.len);
    check_pipeline(f, 0, count, &resp);
    kc_buf_free(&req);
    kc_buf_free(&resp);
}

/* ---- librdkafka and kcat --------------------------------------------------------------------- */

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

/* A producer bootstrapped from the daemon, logging protocol details into f->log. */
static rd_kafka_t *new_producer(fixture_t *f)
{
    char bootstrap[64], errstr[512];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", f->proc.port);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", bootstrap);
    conf_set(conf, "api.version.request", "true");
    conf_set(conf, "client.id", "kcoord-it");
    conf_set(conf, "debug", "protocol,feature");
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, &f->log);
    f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (f->rk == NULL) {
        rd_kafka_conf_destroy(conf);
        fail_msg("rd_kafka_new: %s", errstr);
    }
    return f->rk;
}

/* Whether librdkafka logged `needle`. */
static int rk_logged(fixture_t *f, const char *needle)
{
    pthread_mutex_lock(&f->log.mu);
    int found = f->log.text.len > 0 && strstr((char *)f->log.text.p, needle) != NULL;
    pthread_mutex_unlock(&f->log.mu);
    return found;
}

/* The configured topics, with their partition counts and this node as every leader. */
static void check_rk_topic(const rd_kafka_metadata_topic_t *t, int want_partitions)
{
    assert_int_equal(t->err, RD_KAFKA_RESP_ERR_NO_ERROR);
    if (t->partition_cnt != want_partitions)
        fail_msg("topic %s: %d partitions, want %d", t->topic, t->partition_cnt, want_partitions);
    uint64_t seen = 0;
    for (int j = 0; j < t->partition_cnt; j++) {
        const rd_kafka_metadata_partition_t *pt = &t->partitions[j];
        assert_int_equal(pt->err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(pt->leader, NODE_ID);
        assert_true(pt->id >= 0 && pt->id < t->partition_cnt && !(seen & (1ull << pt->id)));
        seen |= 1ull << pt->id;
    }
}

static void test_librdkafka_metadata(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *rk = new_producer(f);

    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, RK_TIMEOUT_MS);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("rd_kafka_metadata: %s", rd_kafka_err2str(err));
    assert_int_equal(md->broker_cnt, 1);
    assert_int_equal(md->brokers[0].id, NODE_ID);
    assert_string_equal(md->brokers[0].host, "127.0.0.1");
    assert_int_equal(md->brokers[0].port, f->proc.port);
    assert_int_equal(md->topic_cnt, N_TOPICS);
    for (int k = 0; k < N_TOPICS; k++) {
        const rd_kafka_metadata_topic_t *t = NULL;
        for (int i = 0; i < md->topic_cnt; i++)
            if (strcmp(md->topics[i].topic, TOPICS[k].name) == 0)
                t = &md->topics[i];
        if (t == NULL)
            fail_msg("topic %s is missing", TOPICS[k].name);
        check_rk_topic(t, TOPICS[k].partitions);
    }
    rd_kafka_metadata_destroy(md);

    /* Metadata for one named topic names only that topic. */
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "audit", NULL);
    assert_non_null(rkt);
    err = rd_kafka_metadata(rk, 0, rkt, &md, RK_TIMEOUT_MS);
    rd_kafka_topic_destroy(rkt);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("rd_kafka_metadata(audit): %s", rd_kafka_err2str(err));
    assert_int_equal(md->topic_cnt, 1);
    assert_string_equal(md->topics[0].topic, "audit");
    check_rk_topic(&md->topics[0], 12);
    rd_kafka_metadata_destroy(md);

    /* The negotiation: ApiVersions v3 answered at once, with the served ranges. */
    rd_kafka_poll(rk, 0); /* serve error callbacks */
    assert_true(rk_logged(f, "Received ApiVersionResponse (v3"));
    assert_true(rk_logged(f, "ApiKey ApiVersion (18) Versions 0..4"));
    assert_true(rk_logged(f, "ApiKey Metadata (3) Versions 0..13"));
    assert_true(rk_logged(f, "ApiKey FindCoordinator (10) Versions 0..6"));
    assert_false(rk_logged(f, "ApiVersionRequest failed"));
    assert_false(rk_logged(f, "failed due to")); /* "ApiVersionRequest v3 failed due to ..." */
    assert_false(rk_logged(f, "Disconnected while requesting ApiVersion"));
    pthread_mutex_lock(&f->log.mu);
    int errors = f->log.errors;
    pthread_mutex_unlock(&f->log.mu);
    assert_int_equal(errors, 0);

    rd_kafka_destroy(rk);
    f->rk = NULL;
    f->proc.ok = 1;
}

/* Run `kcat -b 127.0.0.1:PORT -m 10 a1 [a2]`; fails the test unless it exits 0 within
 * KCAT_TIMEOUT_MS. Returns its stdout and stderr, which the caller frees. */
static char *kcat(fixture_t *f, const char *a1, const char *a2)
{
    char bootstrap[64];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", f->proc.port);
    const char *argv[] = {"kcat", "-b", bootstrap, "-m", "10", a1, a2, NULL};
    char *out = NULL;
    int status = kc_run(argv, KCAT_TIMEOUT_MS, &out);
    if (status != 0) {
        fprintf(stderr, "kcat output:\n%s\n", out);
        free(out);
        fail_msg("kcat %s %s exited with %d", a1, a2 ? a2 : "", status);
    }
    return out;
}

static void test_kcat_list(void **state)
{
    fixture_t *f = *state;
    char want[128];

    char *out = kcat(f, "-L", NULL);
    int good = strstr(out, " 1 brokers:\n") != NULL && strstr(out, " 3 topics:\n") != NULL &&
               strstr(out, "ERROR") == NULL && strstr(out, "Broker: ") == NULL;
    snprintf(want, sizeof(want), "  broker %d at 127.0.0.1:%d", NODE_ID, f->proc.port);
    good = good && strstr(out, want) != NULL;
    for (int k = 0; k < N_TOPICS; k++) {
        snprintf(want, sizeof(want), "  topic \"%s\" with %d partitions:\n", TOPICS[k].name,
                 TOPICS[k].partitions);
        good = good && strstr(out, want) != NULL;
    }
    snprintf(want, sizeof(want), "leader %d,", NODE_ID);
    good = good && strstr(out, want) != NULL;
    if (!good)
        fprintf(stderr, "kcat -L output:\n%s\n", out);
    free(out);
    assert_true(good);

    out = kcat(f, "-L", "-J");
    snprintf(want, sizeof(want), "\"brokers\":[{\"id\":%d,\"name\":\"127.0.0.1:%d\"}]", NODE_ID,
             f->proc.port);
    good = strstr(out, want) != NULL;
    for (int k = 0; k < N_TOPICS; k++) {
        snprintf(want, sizeof(want), "{\"topic\":\"%s\",", TOPICS[k].name);
        const char *t = strstr(out, want);
        good = good && t != NULL;
        if (t == NULL)
            break;
        /* Count this topic's partitions up to the next topic. */
        const char *next = strstr(t + 1, "{\"topic\":");
        int n = 0;
        for (const char *q = strstr(t, "{\"partition\":"); q != NULL && (next == NULL || q < next);
             q = strstr(q + 1, "{\"partition\":"))
            n++;
        good = good && n == TOPICS[k].partitions;
    }
    if (!good)
        fprintf(stderr, "kcat -L -J output:\n%s\n", out);
    free(out);
    assert_true(good);
    f->proc.ok = 1;
}

/* ---- Raw frames ------------------------------------------------------------------------------ */

static void test_pipeline_one_write(void **state)
{
    fixture_t *f = *state;
    pipeline(f, 50, 0);
    f->proc.ok = 1;
}

/* The same kind of pipeline dribbled in writes of 1 to 7 bytes, so frames and even sizes arrive
 * split at every possible place. */
static void test_pipeline_dribbled(void **state)
{
    fixture_t *f = *state;
    for (size_t chunk = 1; chunk <= 7; chunk++)
        pipeline(f, 19, chunk);
    f->proc.ok = 1;
}

/* Many more requests than fit in the socket buffers, read only when writing blocks: the daemon
 * must queue, stop reading and resume without losing or reordering anything. */
static void test_pipeline_deep(void **state)
{
    fixture_t *f = *state;
    pipeline(f, 5000, 0);
    f->proc.ok = 1;
}

/* The same with queued.max.requests=1 (the prestate): the daemon stops and resumes reading
 * around every single request. */
static void test_pipeline_deep_queue_1(void **state)
{
    test_pipeline_deep(state);
}

/* Several connections pipeline at once: each gets its own answers, in its own order. The
 * requests all go out before any answer is read. */
static void test_pipeline_many_connections(void **state)
{
    enum { CONNS = MAX_FDS, COUNT = 300 };
    fixture_t *f = *state;
    int fds[CONNS];
    kc_buf_t req[CONNS], resp[CONNS];
    memset(req, 0, sizeof(req));
    memset(resp, 0, sizeof(resp));
    for (int c = 0; c < CONNS; c++) {
        fds[c] = connect_fd(f);
        put_pipeline(&req[c], c + 1, COUNT);
        assert_int_equal(kc_sock_send(fds[c], req[c].p, req[c].len), KC_SOCK_OK);
    }
    for (int c = CONNS - 1; c >= 0; c--) {
        kc_buf_t none = {0};
        int rc = exchange(fds[c], &none, 0, COUNT, &resp[c], 60000);
        if (rc != KC_SOCK_OK)
            fail_msg("connection %d: %s after %zu response bytes", c, kc_sock_strerror(rc),
                     resp[c].len);
        check_pipeline(f, c + 1, COUNT, &resp[c]);
        kc_buf_free(&req[c]);
        kc_buf_free(&resp[c]);
    }
    f->proc.ok = 1;
}

/* Send one request and return its response frame in `resp`. */
static void roundtrip(int fd, const kc_buf_t *req, kc_buf_t *resp)
{
    int rc = kc_sock_send(fd, req->p, req->len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(fd, resp, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK)
        fail_msg("request/response: %s", kc_sock_strerror(rc));
}

/* ApiVersions above the served range: UNSUPPORTED_VERSION (35) with a v0 body, and the
 * connection stays usable. */
static void test_api_versions_unsupported(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    static const int16_t versions[] = {127, 5};
    for (int i = 0; i < 2; i++) {
        kc_buf_t req = {0}, resp = {0};
        int32_t corr = 0x12340000 + versions[i];
        size_t at = kc_req_begin(&req, 18, versions[i], corr, "kcoord-it", 1);
        kc_out_cstr(&req, "kcoord-it");
        kc_out_cstr(&req, "1.0");
        kc_out_uvarint(&req, 0);
        kc_req_end(&req, at);
        roundtrip(fd, &req, &resp);

        kc_in_t r;
        kc_in_init(&r, resp.p, resp.len);
        assert_int_equal(kc_in_i32(&r), corr);
        assert_int_equal(kc_in_i16(&r), 35);
        int32_t n = kc_in_count(&r, 0);
        int found = 0;
        for (int32_t j = 0; j < n; j++) {
            int16_t key = kc_in_i16(&r), min = kc_in_i16(&r), max = kc_in_i16(&r);
            assert_true(min >= 0 && min <= max);
            if (key == 18 && min == 0 && max == 4)
                found = 1;
        }
        assert_false(r.err);
        assert_int_equal(kc_in_left(&r), 0); /* a v0 body: no throttle time, no tags */
        assert_true(found);
        kc_buf_free(&req);
        kc_buf_free(&resp);
    }
    assert_int_equal(kc_check_api_versions(fd, 99), 0);
    f->proc.ok = 1;
}

/* Send FindCoordinator v`v` (key_type, keys) and decode the answer into c[0..*n). */
static void find_coordinator(int fd, int16_t v, int8_t key_type, const char *const *keys,
                             coord_t *c, int max, int *n)
{
    kc_buf_t req = {0}, resp = {0};
    int flex = v >= 3;
    size_t at = kc_req_begin(&req, 10, v, 4242, "kcoord-it", flex);
    if (v <= 3) {
        if (flex)
            kc_out_cstr(&req, keys[0]);
        else
            kc_out_str(&req, keys[0]);
        if (v >= 1)
            kc_out_i8(&req, key_type);
    } else {
        uint32_t nk = 0;
        while (keys[nk] != NULL)
            nk++;
        kc_out_i8(&req, key_type);
        kc_out_uvarint(&req, nk + 1);
        for (uint32_t i = 0; i < nk; i++)
            kc_out_cstr(&req, keys[i]);
    }
    if (flex)
        kc_out_uvarint(&req, 0);
    kc_req_end(&req, at);
    roundtrip(fd, &req, &resp);

    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&r), 4242);
    if (flex)
        kc_in_tags(&r);
    const char *bad = decode_find_coordinator(&r, v, keys[0], c, max, n);
    if (bad == NULL && (r.err || kc_in_left(&r) != 0))
        bad = "trailing bytes or does not decode";
    if (bad != NULL)
        fail_msg("FindCoordinator v%d: %s", v, bad);
    kc_buf_free(&req);
    kc_buf_free(&resp);
}

static void test_find_coordinator_group_v0(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    const char *const keys[] = {"g", NULL};
    coord_t c[1];
    int n;
    find_coordinator(fd, 0, 0, keys, c, 1, &n);
    assert_int_equal(n, 1);
    assert_int_equal(c[0].err, 0);
    assert_int_equal(c[0].node, NODE_ID);
    assert_string_equal(c[0].host, "127.0.0.1");
    assert_int_equal(c[0].port, f->proc.port);

    /* v4 batches several groups, each answered by this node. */
    const char *const groups[] = {"g", "payments", "x.y-z_1", NULL};
    coord_t cs[3];
    find_coordinator(fd, 4, 0, groups, cs, 3, &n);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(cs[i].key, groups[i]);
        assert_int_equal(cs[i].err, 0);
        assert_int_equal(cs[i].node, NODE_ID);
        assert_string_equal(cs[i].host, "127.0.0.1");
        assert_int_equal(cs[i].port, f->proc.port);
    }
    f->proc.ok = 1;
}

/* Transactions are not coordinated here: COORDINATOR_NOT_AVAILABLE (15), connection kept. */
static void test_find_coordinator_transaction(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    const char *const keys[] = {"txn-1", NULL};
    coord_t c[1];
    int n;
    find_coordinator(fd, 4, 1, keys, c, 1, &n);
    assert_int_equal(n, 1);
    assert_string_equal(c[0].key, "txn-1");
    assert_int_equal(c[0].err, 15);

    find_coordinator(fd, 1, 1, keys, c, 1, &n);
    assert_int_equal(c[0].err, 15);
    assert_int_equal(kc_check_api_versions(fd, 7), 0);
    f->proc.ok = 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_librdkafka_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kcat_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipeline_one_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipeline_dribbled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipeline_deep, setup, teardown),
        cmocka_unit_test_prestate_setup_teardown(test_pipeline_deep_queue_1, setup, teardown,
                                                 (void *)SETS_QUEUE_1),
        cmocka_unit_test_setup_teardown(test_pipeline_many_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_versions_unsupported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_coordinator_group_v0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_coordinator_transaction, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
