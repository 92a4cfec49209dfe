/* test_net_bounds.c - what one client can make kcoord hold is bounded, and others are served.
 *
 * Each test starts its own daemon with the bound under test lowered (or its default), drives
 * it with raw frames as a hostile client would, and asserts the bound rather than a timing:
 * the daemon lives, another connection is answered, its peak or current RSS (VmHWM, VmRSS in
 * /proc/PID/status) stays under a budget, and commits are acknowledged. The cases:
 *   - a client that pipelines 200 Metadata requests for a 100 000-partition topic and never
 *     reads the answers (connection.max.unsent.bytes; connections.max.idle.ms closes it);
 *   - one DescribeGroups v5 with 3 million empty group ids (request.max.memory.bytes);
 *   - 60 MB requests on connections that then stay idle (read buffers shrink back);
 *   - max.connections.per.ip and max.connections;
 *   - idle connections up to a lowered open-file limit, then commits that roll segments
 *     (log.reserved.fds).
 * Every teardown stops the daemon and fails the test unless it exits 0 on SIGTERM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

enum { MAX_FDS = 512, WAIT_MS = 20000 };

/* AddressSanitizer keeps freed memory in quarantine and its own allocator's pools, so the
 * daemon's RSS says nothing about kcoord's buffers under it: the RSS budgets are checked only
 * when the daemon (built like this test) is not instrumented. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_CHECKED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_CHECKED 0
#endif
#endif
#ifndef RSS_CHECKED
#define RSS_CHECKED 1
#endif

/* Whether `mib` is over `base` + `budget` MiB (never under AddressSanitizer). */
static int rss_over(long mib, long base, long budget)
{
    return RSS_CHECKED && mib > base + budget;
}

typedef struct fixture_s {
    kc_proc_t proc;
    int fds[MAX_FDS];
    int n_fds;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < f->n_fds; i++)
        if (f->fds[i] >= 0)
            close(f->fds[i]);
    int rc = kc_proc_finish(&f->proc);
    free(f);
    return rc;
}

static void start(fixture_t *f, const char *const *sets)
{
    if (kc_proc_start(&f->proc, sets) != 0)
        fail_msg("the daemon did not start");
}

/* Keep `fd` to be closed by the teardown. */
static int keep(fixture_t *f, int fd)
{
    assert_true(fd >= 0);
    assert_true(f->n_fds < MAX_FDS);
    f->fds[f->n_fds++] = fd;
    return fd;
}

static int connect_fd(fixture_t *f)
{
    return keep(f, kc_sock_connect(f->proc.port));
}

/* Close one kept connection now. */
static void drop(fixture_t *f, int fd)
{
    for (int i = 0; i < f->n_fds; i++)
        if (f->fds[i] == fd) {
            close(fd);
            f->fds[i] = -1;
        }
}

/* A connection that receives into a small buffer, so the kernel holds few of the answers. */
static int connect_small_rcvbuf(fixture_t *f)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    keep(f, fd);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->proc.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void served(int fd, int32_t corr)
{
    if (kc_check_api_versions(fd, corr) != 0)
        fail_msg("a healthy connection was not answered");
}

/* VmRSS or VmHWM of the daemon, in MiB. */
static long mem_mib(fixture_t *f, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)f->proc.pid);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    long kib = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof(line), fp))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kib = atol(line + n + 1);
    fclose(fp);
    assert_true(kib >= 0);
    return kib / 1024;
}

/* ---- Unread answers -------------------------------------------------------------------------- */

/* 200 Metadata v1 requests for the 100 000-partition topic, pipelined, never read: about
 * 2.6 MB each, 509 MB in all before the bound. Now the connection stops being read once its
 * unsent answers pass connection.max.unsent.bytes (4 MiB), and is closed after
 * connections.max.idle.ms with its answers still unread. */
static void test_unread_answers(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"topics=big:100000", "connections.max.idle.ms=3000", NULL};
    start(f, sets);
    int healthy = connect_fd(f);
    served(healthy, 1);
    long base = mem_mib(f, "VmRSS");

    int hog = connect_small_rcvbuf(f);
    char peer[64];
    kc_sock_name(hog, peer, sizeof(peer));
    kc_buf_t b = {0};
    for (int i = 0; i < 200; i++) {
        size_t at = kc_req_begin(&b, 3, 1, 1000 + i, "hog", 0);
        kc_out_i32(&b, 1);
        kc_out_str(&b, "big");
        kc_req_end(&b, at);
    }
    assert_int_equal(kc_sock_send(hog, b.p, b.len), KC_SOCK_OK);
    kc_buf_free(&b);
    if (!kc_proc_wait_log(&f->proc, "until it reads its answers", peer, WAIT_MS))
        fail_msg("the daemon did not stop reading %s", peer);
    served(healthy, 2);
    /* Closed once its answers have been unread for connections.max.idle.ms. */
    if (!kc_proc_wait_log(&f->proc, "of answers unread for longer than", peer, WAIT_MS))
        fail_msg("%s was not closed with its answers unread", peer);
    long hwm = mem_mib(f, "VmHWM");
    print_message("unread answers: VmRSS before %ld MiB, VmHWM %ld MiB\n", base, hwm);
    if (rss_over(hwm, base, 64))
        fail_msg("peak RSS %ld MiB, more than 64 MiB over the %ld MiB before", hwm, base);
    served(healthy, 3);
    f->proc.ok = 1;
}

/* Four clients each pipeline 50 of those Metadata requests and read nothing, under a per-
 * connection budget too large to matter: queued.max.unsent.bytes (8 MiB) stops reading every
 * connection with answers waiting, while one that reads its answers is still served. */
static void test_unread_answers_all_connections(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"topics=big:100000",
                                       "connection.max.unsent.bytes=1073741824",
                                       "queued.max.unsent.bytes=8388608", NULL};
    start(f, sets);
    int healthy = connect_fd(f);
    served(healthy, 1);
    long base = mem_mib(f, "VmRSS");
    kc_buf_t b = {0};
    for (int i = 0; i < 50; i++) {
        size_t at = kc_req_begin(&b, 3, 1, 1000 + i, "hog", 0);
        kc_out_i32(&b, 1);
        kc_out_str(&b, "big");
        kc_req_end(&b, at);
    }
    for (int h = 0; h < 4; h++) {
        int hog = connect_small_rcvbuf(f);
        assert_int_equal(kc_sock_send(hog, b.p, b.len), KC_SOCK_OK);
    }
    kc_buf_free(&b);
    if (!kc_proc_wait_log(&f->proc, "until it reads its answers", "queued.max.unsent.bytes 8388608",
                          WAIT_MS))
        fail_msg("the daemon did not stop reading the clients that do not read");
    for (int i = 0; i < 20; i++)
        served(healthy, 10 + i);
    long hwm = mem_mib(f, "VmHWM");
    print_message("4 unread connections: VmRSS before %ld MiB, VmHWM %ld MiB\n", base, hwm);
    if (rss_over(hwm, base, 96))
        fail_msg("peak RSS %ld MiB, more than 96 MiB over the %ld MiB before", hwm, base);
    f->proc.ok = 1;
}

/* Fetch v4 of orders[0] waiting up to 2 s for data that never comes, padded to 1 MiB (the
 * bytes after the body are ignored). */
static void parked_fetch(kc_buf_t *b, int32_t corr)
{
    size_t at = kc_req_begin(b, 1, 4, corr, "parked", 0);
    kc_out_i32(b, -1);      /* replica_id */
    kc_out_i32(b, 2000);    /* max_wait_ms */
    kc_out_i32(b, 1);       /* min_bytes */
    kc_out_i32(b, 1 << 20); /* max_bytes */
    kc_out_i8(b, 0);        /* isolation_level */
    kc_out_i32(b, 1);
    kc_out_str(b, "orders");
    kc_out_i32(b, 1);
    kc_out_i32(b, 0);       /* partition */
    kc_out_i32(b, 0);       /* fetch_offset, high half */
    kc_out_i32(b, 0);       /* fetch_offset, low half */
    kc_out_i32(b, 1 << 20); /* partition_max_bytes */
    static uint8_t pad[1 << 20];
    kc_out_bytes(b, pad, sizeof(pad));
    kc_req_end(b, at);
}

/* queued.max.request.bytes=3 MiB and eight clients each with a parked 1 MiB Fetch: once three
 * are held, no connection is read until they are answered; then the rest are read. Every
 * request is answered, in the end the healthy connection too. */
static void test_queued_request_bytes(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"topics=orders:1", "queued.max.request.bytes=3145728", NULL};
    start(f, sets);
    int healthy = connect_fd(f);
    served(healthy, 1);
    enum { N = 8 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        fds[i] = connect_fd(f);
        kc_buf_t b = {0};
        parked_fetch(&b, 500 + i);
        assert_int_equal(kc_sock_send(fds[i], b.p, b.len), KC_SOCK_OK);
        kc_buf_free(&b);
    }
    if (!kc_proc_wait_log(&f->proc, "over queued.max.request.bytes", NULL, WAIT_MS))
        fail_msg("the daemon did not stop reading at queued.max.request.bytes");
    for (int i = 0; i < N; i++) {
        kc_buf_t resp = {0};
        int rc = kc_sock_read_frame(fds[i], &resp, 4 * WAIT_MS);
        if (rc != KC_SOCK_OK)
            fail_msg("parked Fetch %d: %s", i, kc_sock_strerror(rc));
        kc_in_t r;
        kc_in_init(&r, resp.p, resp.len);
        assert_int_equal(kc_in_i32(&r), 500 + i);
        kc_buf_free(&resp);
    }
    served(healthy, 2);
    f->proc.ok = 1;
}

/* Write as much of the `n` frames (each `len` bytes at `buf`) as the sockets take, up to `upto`
 * bytes of each (sent[i] so far), until every one has sent that much or none has taken a byte
 * for `quiet_ms`. Returns how many reached `upto`. */
static int pump(const int *fds, size_t *sent, int n, const uint8_t *buf, size_t upto, int quiet_ms)
{
    for (;;) {
        struct pollfd pf[16];
        int k = 0, done = 0;
        for (int i = 0; i < n; i++) {
            if (sent[i] >= upto) {
                done++;
                continue;
            }
            pf[k].fd = fds[i];
            pf[k].events = POLLOUT;
            pf[k].revents = 0;
            k++;
        }
        if (k == 0 || poll(pf, (nfds_t)k, quiet_ms) <= 0)
            return done;
        for (int j = 0; j < k; j++) {
            if (!(pf[j].revents & POLLOUT))
                continue;
            for (int i = 0; i < n; i++) {
                if (fds[i] != pf[j].fd)
                    continue;
                size_t want = upto - sent[i] < (1u << 20) ? upto - sent[i] : (1u << 20);
                ssize_t w = send(fds[i], buf + sent[i], want, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0)
                    sent[i] += (size_t)w;
            }
        }
    }
}

/* Six clients each send most of a 40 MiB request at once, under queued.max.request.bytes=64 MiB.
 * Before, each got a read buffer of its whole frame as its bytes came; now a buffer larger than
 * a read chunk counts in the budget and one that would pass it is not grown: that client waits
 * (in its socket) until the frames being read are answered. Every request is answered. */
static void test_partial_large_frames(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"queued.max.request.bytes=67108864", NULL};
    start(f, sets);
    int healthy = connect_fd(f);
    served(healthy, 1);
    long base = mem_mib(f, "VmRSS");
    enum { N = 6, BIG = 40 * 1024 * 1024 };
    kc_buf_t b = {0};
    size_t at = kc_req_begin(&b, 18, 0, 77, "partial", 0);
    uint8_t *pad = calloc(1, BIG);
    assert_non_null(pad);
    kc_out_bytes(&b, pad, BIG);
    free(pad);
    kc_req_end(&b, at);
    int fds[N];
    size_t sent[N] = {0};
    for (int i = 0; i < N; i++)
        fds[i] = connect_fd(f);
    /* All but the last KiB of each frame, as far as the daemon reads them. */
    pump(fds, sent, N, b.p, b.len - 1024, 1000);
    if (!kc_proc_wait_log(&f->proc, "over queued.max.request.bytes", NULL, WAIT_MS))
        fail_msg("no connection waited for queued.max.request.bytes");
    long hwm = mem_mib(f, "VmHWM");
    print_message("6 partial 40 MiB requests: VmRSS before %ld MiB, VmHWM %ld MiB\n", base, hwm);
    if (rss_over(hwm, base, 128))
        fail_msg("peak RSS %ld MiB, more than 128 MiB over the %ld MiB before", hwm, base);
    /* The rest: the daemon reads each client as the ones before are answered. */
    int64_t deadline = kc_now_ms() + 6 * WAIT_MS;
    while (pump(fds, sent, N, b.p, b.len, 1000) < N)
        if (kc_now_ms() > deadline)
            fail_msg("the partial requests were not read in the end");
    kc_buf_free(&b);
    for (int i = 0; i < N; i++) {
        kc_buf_t resp = {0};
        int rc = kc_sock_read_frame(fds[i], &resp, WAIT_MS);
        if (rc != KC_SOCK_OK)
            fail_msg("request %d: %s", i, kc_sock_strerror(rc));
        kc_in_t r;
        kc_in_init(&r, resp.p, resp.len);
        assert_int_equal(kc_in_i32(&r), 77);
        kc_buf_free(&resp);
    }
    served(healthy, 2);
    f->proc.ok = 1;
}

/* ---- Decoding amplification ------------------------------------------------------------------ */

/* DescribeGroups v5 with 3 million empty group ids: 3 MB on the wire, 48 MB decoded, and
 * answers of ~350 MB in structs before the bound (+463 MB peak). Now the request is refused
 * and its connection closed, with a line naming request.max.memory.bytes. */
static void test_describe_millions_of_ids(void **state)
{
    fixture_t *f = *state;
    start(f, NULL);
    int healthy = connect_fd(f);
    served(healthy, 1);
    long base = mem_mib(f, "VmRSS");

    int bad = connect_fd(f);
    char peer[64];
    kc_sock_name(bad, peer, sizeof(peer));
    enum { N_IDS = 3000000 };
    kc_buf_t b = {0};
    size_t at = kc_req_begin(&b, 15, 5, 7, "many", 1);
    kc_out_uvarint(&b, N_IDS + 1);
    uint8_t *ids = malloc(N_IDS);
    assert_non_null(ids);
    memset(ids, 1, N_IDS); /* compact strings of length 0 */
    kc_out_bytes(&b, ids, N_IDS);
    free(ids);
    kc_out_i8(&b, 0);      /* include_authorized_operations */
    kc_out_uvarint(&b, 0); /* tags */
    kc_req_end(&b, at);
    int rc = kc_sock_send(bad, b.p, b.len);
    kc_buf_free(&b);
    assert_true(rc == KC_SOCK_OK || rc == KC_SOCK_CLOSED);
    rc = kc_sock_wait_closed(bad, WAIT_MS);
    if (rc != KC_SOCK_CLOSED)
        fail_msg("the connection was not closed: %s", kc_sock_strerror(rc));
    if (!kc_proc_wait_log(&f->proc, "request.max.memory.bytes", "DescribeGroups", WAIT_MS))
        fail_msg("no log line about request.max.memory.bytes");
    long hwm = mem_mib(f, "VmHWM");
    print_message("3M group ids: VmRSS before %ld MiB, VmHWM %ld MiB\n", base, hwm);
    if (rss_over(hwm, base, 128))
        fail_msg("peak RSS %ld MiB, more than 128 MiB over the %ld MiB before", hwm, base);
    served(healthy, 2);
    int fresh = connect_fd(f);
    served(fresh, 3);
    f->proc.ok = 1;
}

/* ---- Read buffers ---------------------------------------------------------------------------- */

/* Four connections each send one 60 MB ApiVersions v0 (the bytes after its body are ignored),
 * get the answer, and stay open and idle. Before, each kept a 64 MB read buffer; now each
 * holds none, and the daemon's RSS comes back near where it was. */
static void test_large_request_then_idle(void **state)
{
    fixture_t *f = *state;
    start(f, NULL);
    int healthy = connect_fd(f);
    served(healthy, 1);
    long base = mem_mib(f, "VmRSS");

    enum { BIG = 60 * 1024 * 1024, N_CONNS = 4 };
    kc_buf_t b = {0};
    size_t at = kc_req_begin(&b, 18, 0, 42, "big", 0);
    uint8_t *pad = calloc(1, BIG);
    assert_non_null(pad);
    kc_out_bytes(&b, pad, BIG);
    free(pad);
    kc_req_end(&b, at);
    for (int i = 0; i < N_CONNS; i++) {
        int fd = connect_fd(f);
        assert_int_equal(kc_sock_send(fd, b.p, b.len), KC_SOCK_OK);
        kc_buf_t resp = {0};
        assert_int_equal(kc_sock_read_frame(fd, &resp, WAIT_MS), KC_SOCK_OK);
        kc_in_t r;
        kc_in_init(&r, resp.p, resp.len);
        assert_int_equal(kc_in_i32(&r), 42);
        assert_int_equal(kc_in_i16(&r), 0);
        kc_buf_free(&resp);
    }
    kc_buf_free(&b);
    served(healthy, 2); /* a round trip: the daemon is done with the big requests */
    long rss = mem_mib(f, "VmRSS");
    print_message("60 MB requests: VmRSS before %ld MiB, after %ld MiB with %d idle connections\n",
                  base, rss, N_CONNS);
    if (rss_over(rss, base, 40))
        fail_msg("RSS %ld MiB with the connections idle, more than 40 MiB over %ld MiB", rss, base);
    f->proc.ok = 1;
}

/* ---- Connection limits ----------------------------------------------------------------------- */

/* max.connections.per.ip=3: a fourth connection from 127.0.0.1 is closed at once; once one of
 * the three closes, a new one is served. */
static void test_max_connections_per_ip(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"max.connections.per.ip=3", NULL};
    start(f, sets);
    int c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = connect_fd(f);
        served(c[i], i + 1);
    }
    int over = connect_fd(f);
    int rc = kc_sock_wait_closed(over, WAIT_MS);
    if (rc != KC_SOCK_CLOSED)
        fail_msg("the fourth connection: %s", kc_sock_strerror(rc));
    if (!kc_proc_wait_log(&f->proc, "max.connections.per.ip (3)", NULL, WAIT_MS))
        fail_msg("no log line about max.connections.per.ip");
    served(c[0], 10);
    drop(f, c[1]);
    /* The daemon notices the close in its own time: retry until a new connection stays. */
    int64_t deadline = kc_now_ms() + WAIT_MS;
    for (;;) {
        int fd = connect_fd(f);
        if (kc_check_api_versions(fd, 11) == 0)
            break;
        drop(f, fd);
        if (kc_now_ms() > deadline)
            fail_msg("no connection was served after one of the three closed");
    }
    f->proc.ok = 1;
}

/* max.connections=2: a third connection waits (it is not refused) and is served as soon as
 * one of the first two closes. */
static void test_max_connections(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"max.connections=2", NULL};
    start(f, sets);
    int a = connect_fd(f), b = connect_fd(f);
    served(a, 1);
    served(b, 2);
    int waiting = connect_fd(f); /* in the backlog */
    kc_buf_t req = {0};
    size_t at = kc_req_begin(&req, 18, 0, 3, "waiting", 0);
    kc_req_end(&req, at);
    assert_int_equal(kc_sock_send(waiting, req.p, req.len), KC_SOCK_OK);
    kc_buf_free(&req);
    if (!kc_proc_wait_log(&f->proc, "max.connections (2) reached", NULL, WAIT_MS))
        fail_msg("no log line about max.connections");
    served(a, 4);
    drop(f, b);
    kc_buf_t resp = {0};
    int rc = kc_sock_read_frame(waiting, &resp, WAIT_MS);
    if (rc != KC_SOCK_OK)
        fail_msg("the waiting connection was not served once a slot freed: %s",
                 kc_sock_strerror(rc));
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&r), 3);
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* ---- File descriptors for the log ------------------------------------------------------------ */

static void out_i64(kc_buf_t *b, int64_t v)
{
    kc_out_i32(b, (int32_t)(uint32_t)((uint64_t)v >> 32));
    kc_out_i32(b, (int32_t)(uint32_t)(uint64_t)v);
}

/* OffsetCommit v2 of one offset, generation -1 (a simple commit); returns its error code. */
static int16_t commit_v2(int fd, int32_t corr, const char *group, int64_t offset)
{
    kc_buf_t b = {0};
    size_t at = kc_req_begin(&b, 8, 2, corr, "fds", 0);
    kc_out_str(&b, group);
    kc_out_i32(&b, -1); /* generation */
    kc_out_str(&b, ""); /* member id */
    out_i64(&b, -1);    /* retention_time_ms */
    kc_out_i32(&b, 1);
    kc_out_str(&b, "orders");
    kc_out_i32(&b, 1);
    kc_out_i32(&b, 0);
    out_i64(&b, offset);
    kc_out_str(&b, "m");
    kc_req_end(&b, at);
    int rc = kc_sock_send(fd, b.p, b.len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(fd, &b, WAIT_MS);
    if (rc != KC_SOCK_OK) {
        kc_buf_free(&b);
        fail_msg("OffsetCommit: %s", kc_sock_strerror(rc));
    }
    kc_in_t r;
    kc_in_init(&r, b.p, b.len);
    int32_t got = kc_in_i32(&r);
    char name[64];
    int16_t err = -1;
    if (kc_in_count(&r, 0) == 1) {
        kc_in_str(&r, 0, name, sizeof(name));
        if (kc_in_count(&r, 0) == 1) {
            kc_in_i32(&r);
            err = kc_in_i16(&r);
        }
    }
    int bad = r.err || got != corr;
    kc_buf_free(&b);
    if (bad)
        fail_msg("the OffsetCommit answer does not decode");
    return err;
}

/* The daemon's open-file limit is lowered to 256 while it runs; idle connections are opened
 * until it refuses one (it keeps log.reserved.fds = 4 x 4 partitions + 64 = 80 for the log).
 * Then 400 commits into 1 KiB segments (a roll every few commits, each opening new files)
 * must all be acknowledged. Before, connections took every descriptor and commits failed
 * with EMFILE. */
static void test_idle_connections_up_to_fd_limit(void **state)
{
    fixture_t *f = *state;
    static const char *const sets[] = {"topics=orders:1", "offsets.topic.num.partitions=4",
                                       "offsets.topic.segment.bytes=1024", NULL};
    start(f, sets);
    int first = connect_fd(f);
    served(first, 1);
    struct rlimit rl = {.rlim_cur = 256, .rlim_max = 256};
    if (prlimit(f->proc.pid, RLIMIT_NOFILE, &rl, NULL) != 0)
        fail_msg("prlimit: cannot lower the daemon's open-file limit");

    int refused = 0;
    for (int i = 0; i < 300 && !refused; i++) {
        int fd = connect_fd(f);
        kc_buf_t req = {0};
        size_t at = kc_req_begin(&req, 18, 0, 100 + i, "idle", 0);
        kc_req_end(&req, at);
        int rc = kc_sock_send(fd, req.p, req.len);
        if (rc == KC_SOCK_OK)
            rc = kc_sock_read_frame(fd, &req, WAIT_MS);
        kc_buf_free(&req);
        if (rc == KC_SOCK_CLOSED) {
            refused = 1;
            drop(f, fd);
        } else if (rc != KC_SOCK_OK) {
            fail_msg("connection %d: %s", i, kc_sock_strerror(rc));
        }
    }
    if (!refused)
        fail_msg("300 connections under a 256-descriptor limit, none refused");

    char group[32];
    for (int i = 0; i < 400; i++) {
        snprintf(group, sizeof(group), "g%d", i % 16);
        int16_t err = commit_v2(first, 1000 + i, group, i);
        if (err != 0)
            fail_msg("commit %d failed with error %d", i, err);
    }
    if (!kc_proc_wait_log(&f->proc, "log.reserved.fds=80", NULL, WAIT_MS))
        fail_msg("no log line about log.reserved.fds");
    assert_false(kc_proc_wait_log(&f->proc, "Too many open files", NULL, 0));
    served(first, 2);
    f->proc.ok = 1;
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unread_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unread_answers_all_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_request_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_large_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_millions_of_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_request_then_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_connections_per_ip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_connections_up_to_fd_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
