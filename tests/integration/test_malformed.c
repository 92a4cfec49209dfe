/* test_malformed.c - malformed frames, rude clients and idle connections against a real kcoord.
 *
 * Each bad-frame case runs in its own test: with a healthy connection open, a second connection
 * sends the bad bytes; the daemon must close that connection without answering, log it, and
 * keep answering ApiVersions on the healthy one. test_all_cases_one_daemon then sends every
 * case in turn to a single daemon through a single healthy connection. The other tests cover
 * clients that vanish mid-frame or with answers still being written, a frame of exactly
 * socket.request.max.bytes, and connections.max.idle.ms. Every teardown stops the daemon and
 * fails the test unless it exits 0 on SIGTERM, so a crash anywhere along the way is caught.
 *
 * To add a case, write a builder and add it to CASES.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

enum {
    MAX_REQUEST = 4096, /* socket.request.max.bytes of the daemons here */
    IDLE_MS = 1000,     /* connections.max.idle.ms of the idle test's daemon */
    CLOSE_TIMEOUT_MS = 5000,
    MAX_FDS = 8,
};

static const char *const SETS[] = {"topics=orders:3", "node.id=3", "socket.request.max.bytes=4096",
                                   NULL};
static const char *const IDLE_SETS[] = {"topics=orders:3", "connections.max.idle.ms=1000", NULL};

/* ---- Bad frames ------------------------------------------------------------------------------ */

/* Deterministic "random" bytes (xorshift32), so a failure can be reproduced byte for byte. */
static uint32_t rnd_state = 0x2545f491;
static uint8_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return (uint8_t)rnd_state;
}

static void size_max(kc_buf_t *b)
{
    kc_out_i32(b, 0x7fffffff);
}

/* One byte over the limit, followed by the start of an ApiVersions request. */
static void size_over_limit(kc_buf_t *b)
{
    kc_out_i32(b, MAX_REQUEST + 1);
    kc_out_i16(b, 18);
    kc_out_i16(b, 0);
    kc_out_i32(b, 1);
}

static void size_negative(kc_buf_t *b)
{
    kc_out_i32(b, -1);
}

static void size_zero(kc_buf_t *b)
{
    kc_out_i32(b, 0);
}

/* A 4-byte frame: ApiVersions v0 with half a correlation id. */
static void size_four(kc_buf_t *b)
{
    kc_out_i32(b, 4);
    kc_out_i16(b, 18);
    kc_out_i16(b, 0);
}

/* A 9-byte frame: the header stops inside the client_id length. */
static void header_cut(kc_buf_t *b)
{
    kc_out_i32(b, 9);
    kc_out_i16(b, 18);
    kc_out_i16(b, 0);
    kc_out_i32(b, 1);
    kc_out_i8(b, 0);
}

/* A 12-byte frame whose client_id claims 100 bytes but has 2. */
static void client_id_past_end(kc_buf_t *b)
{
    kc_out_i32(b, 12);
    kc_out_i16(b, 18);
    kc_out_i16(b, 0);
    kc_out_i32(b, 1);
    kc_out_i16(b, 100);
    kc_out_bytes(b, "ab", 2);
}

/* Metadata v12 needs request header v2; this 10-byte frame ends before its tag section. */
static void flexible_header_without_tags(kc_buf_t *b)
{
    kc_out_i32(b, 10);
    kc_out_i16(b, 3);
    kc_out_i16(b, 12);
    kc_out_i32(b, 1);
    kc_out_i16(b, 0);
}

/* Metadata v12 with a valid header and 64 random bytes, each with the varint continuation bit,
 * so the topic count never ends and the body cannot decode. */
static void metadata_random_body(kc_buf_t *b)
{
    size_t f = kc_req_begin(b, 3, 12, 1, "x", 1);
    for (int i = 0; i < 64; i++)
        kc_out_i8(b, (int8_t)(rnd() | 0x80));
    kc_req_end(b, f);
}

/* Metadata v12 announcing a million topics in 20 bytes. */
static void metadata_count_too_big(kc_buf_t *b)
{
    size_t f = kc_req_begin(b, 3, 12, 1, "x", 1);
    kc_out_uvarint(b, 1000000 + 1);
    for (int i = 0; i < 20; i++)
        kc_out_i8(b, (int8_t)rnd());
    kc_req_end(b, f);
}

/* API key 9999 with a valid header and a small body. */
static void unknown_api_key(kc_buf_t *b)
{
    size_t f = kc_req_begin(b, 9999, 0, 1, "x", 0);
    kc_out_i32(b, 0);
    kc_out_i32(b, 0);
    kc_req_end(b, f);
}

typedef struct bad_case_s {
    const char *name;
    void (*build)(kc_buf_t *b);
} bad_case_t;

static bad_case_t CASES[] = {
    {"bad frame: size 0x7fffffff", size_max},
    {"bad frame: size socket.request.max.bytes + 1", size_over_limit},
    {"bad frame: size 0xffffffff", size_negative},
    {"bad frame: size 0", size_zero},
    {"bad frame: size 4 with 4 bytes", size_four},
    {"bad frame: header cut inside client_id length", header_cut},
    {"bad frame: client_id past the end", client_id_past_end},
    {"bad frame: flexible header without tags", flexible_header_without_tags},
    {"bad frame: Metadata v12 with a random body", metadata_random_body},
    {"bad frame: Metadata v12 with a huge topic count", metadata_count_too_big},
    {"bad frame: unknown API key 9999", unknown_api_key},
};
enum { N_CASES = sizeof(CASES) / sizeof(CASES[0]) };

/* ---- Fixture --------------------------------------------------------------------------------- */

typedef struct fixture_s {
    kc_proc_t proc;
    const bad_case_t *bad; /* the case of a per-case test, else NULL */
    int fds[MAX_FDS];      /* open connections, closed by the teardown */
    int n_fds;
    int32_t corr; /* next correlation id for the healthy connection */
} fixture_t;

static int start(void **state, const char *const *sets)
{
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    f->bad = *state; /* the prestate: a bad_case_t, or NULL */
    f->corr = 1000;
    if (kc_proc_start(&f->proc, sets) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return start(state, SETS);
}

static int setup_idle(void **state)
{
    return start(state, IDLE_SETS);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < f->n_fds; i++)
        close(f->fds[i]);
    int rc = kc_proc_finish(&f->proc);
    free(f);
    return rc;
}

static int connect_fd(fixture_t *f)
{
    assert_true(f->n_fds < MAX_FDS);
    int fd = kc_sock_connect(f->proc.port);
    assert_true(fd >= 0);
    f->fds[f->n_fds++] = fd;
    return fd;
}

/* Close a connection from connect_fd, with an RST when `reset`. */
static void close_fd(fixture_t *f, int fd, int reset)
{
    for (int i = 0; i < f->n_fds; i++) {
        if (f->fds[i] == fd) {
            f->fds[i] = f->fds[--f->n_fds];
            break;
        }
    }
    if (reset)
        kc_sock_reset(fd);
    else
        close(fd);
}

static void healthy_ok(fixture_t *f, int fd)
{
    assert_int_equal(kc_check_api_versions(fd, f->corr++), 0);
}

/* Send case `c` on a new connection: the daemon closes it without a byte of answer and logs
 * the close; the healthy connection still works. */
static void run_case(fixture_t *f, int healthy, const bad_case_t *c)
{
    int fd = connect_fd(f);
    char peer[64];
    kc_sock_name(fd, peer, sizeof(peer));
    kc_buf_t b = {0};
    c->build(&b);
    int rc = kc_sock_send(fd, b.p, b.len);
    if (rc != KC_SOCK_OK && rc != KC_SOCK_CLOSED)
        fail_msg("%s: send: %s", c->name, kc_sock_strerror(rc));
    rc = kc_sock_wait_closed(fd, CLOSE_TIMEOUT_MS);
    if (rc != KC_SOCK_CLOSED)
        fail_msg("%s: %s", c->name, kc_sock_strerror(rc));
    close_fd(f, fd, 0);
    kc_buf_free(&b);
    if (!kc_proc_wait_log(&f->proc, peer, "clos", CLOSE_TIMEOUT_MS))
        fail_msg("%s: no log line about closing %s", c->name, peer);
    healthy_ok(f, healthy);
}

/* ---- Tests ----------------------------------------------------------------------------------- */

static void test_bad_frame(void **state)
{
    fixture_t *f = *state;
    int healthy = connect_fd(f);
    healthy_ok(f, healthy);
    run_case(f, healthy, f->bad);
    f->proc.ok = 1;
}

static void test_all_cases_one_daemon(void **state)
{
    fixture_t *f = *state;
    int healthy = connect_fd(f);
    healthy_ok(f, healthy);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N_CASES; i++)
            run_case(f, healthy, &CASES[i]);
    /* New connections are still accepted and served. */
    int fresh = connect_fd(f);
    healthy_ok(f, fresh);
    f->proc.ok = 1;
}

/* A frame of exactly socket.request.max.bytes is served (ApiVersions v0 whose client_id fills
 * the frame); the limit is not off by one. */
static void test_frame_at_limit(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    char *client_id = malloc(MAX_REQUEST - 10 + 1);
    assert_non_null(client_id);
    memset(client_id, 'c', MAX_REQUEST - 10);
    client_id[MAX_REQUEST - 10] = '\0';
    kc_buf_t req = {0}, resp = {0};
    size_t at = kc_req_begin(&req, 18, 0, 77, client_id, 0);
    kc_req_end(&req, at);
    free(client_id);
    assert_int_equal(req.len, 4 + MAX_REQUEST);
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    int rc = kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK)
        fail_msg("a %d-byte frame: %s", MAX_REQUEST, kc_sock_strerror(rc));
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&r), 77);
    assert_int_equal(kc_in_i16(&r), 0);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    healthy_ok(f, fd);
    f->proc.ok = 1;
}

/* Good requests pipelined ahead of a bad frame size are all answered before the close: the
 * bad frame ends reading, not the replies already owed. */
static void test_replies_before_bad_size(void **state)
{
    fixture_t *f = *state;
    int fd = connect_fd(f);
    kc_buf_t req = {0}, resp = {0};
    for (int32_t corr = 100; corr < 103; corr++) {
        size_t at = kc_req_begin(&req, 18, 0, corr, "x", 0);
        kc_req_end(&req, at);
    }
    static const uint8_t bad[] = {0x7f, 0xff, 0xff, 0xff};
    kc_out_bytes(&req, bad, sizeof(bad));
    assert_int_equal(kc_sock_send(fd, req.p, req.len), KC_SOCK_OK);
    for (int32_t corr = 100; corr < 103; corr++) {
        int rc = kc_sock_read_frame(fd, &resp, KC_IO_TIMEOUT_MS);
        if (rc != KC_SOCK_OK)
            fail_msg("reply %d: %s", corr, kc_sock_strerror(rc));
        kc_in_t r;
        kc_in_init(&r, resp.p, resp.len);
        assert_int_equal(kc_in_i32(&r), corr);
        assert_int_equal(kc_in_i16(&r), 0);
    }
    assert_int_equal(kc_sock_wait_closed(fd, KC_IO_TIMEOUT_MS), KC_SOCK_CLOSED);
    close(fd);
    kc_buf_free(&req);
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* Clients that leave in the middle of a frame, with a FIN and with an RST, while the healthy
 * connection itself has half a request buffered in the daemon. */
static void test_disconnect_mid_frame(void **state)
{
    fixture_t *f = *state;
    int healthy = connect_fd(f);
    healthy_ok(f, healthy);

    /* Half of an ApiVersions request on the healthy connection. */
    kc_buf_t half = {0};
    size_t at = kc_req_begin(&half, 18, 0, 4242, "kcoord-it-half", 0);
    kc_req_end(&half, at);
    size_t cut = half.len / 2;
    assert_int_equal(kc_sock_send(healthy, half.p, cut), KC_SOCK_OK);

    for (int reset = 0; reset <= 1; reset++) {
        int fd = connect_fd(f);
        kc_buf_t b = {0};
        at = kc_req_begin(&b, 3, 1, 1, "leaver", 0);
        kc_out_i32(&b, -1);
        kc_req_end(&b, at);
        assert_int_equal(kc_sock_send(fd, b.p, b.len - 3), KC_SOCK_OK);
        close_fd(f, fd, reset);
        kc_buf_free(&b);
    }
    /* And one that sends only two bytes of a frame size. */
    int fd = connect_fd(f);
    assert_int_equal(kc_sock_send(fd, "\0\0", 2), KC_SOCK_OK);
    close_fd(f, fd, 0);

    /* The healthy connection's other half completes its request. */
    assert_int_equal(kc_sock_send(healthy, half.p + cut, half.len - cut), KC_SOCK_OK);
    kc_buf_t resp = {0};
    assert_int_equal(kc_sock_read_frame(healthy, &resp, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
    kc_in_t r;
    kc_in_init(&r, resp.p, resp.len);
    assert_int_equal(kc_in_i32(&r), 4242);
    assert_int_equal(kc_in_i16(&r), 0);
    kc_buf_free(&half);
    kc_buf_free(&resp);
    healthy_ok(f, healthy);
    f->proc.ok = 1;
}

/* Clients that pipeline many requests and reset the connection without reading the answers,
 * so the daemon's writes fail under it. */
static void test_disconnect_with_answers_pending(void **state)
{
    fixture_t *f = *state;
    int healthy = connect_fd(f);
    for (int round = 0; round < 5; round++) {
        int fd = connect_fd(f);
        kc_buf_t b = {0};
        for (int i = 0; i < 500; i++) {
            size_t at = kc_req_begin(&b, 3, 12, i, "rude", 1);
            kc_out_uvarint(&b, 0); /* all topics */
            kc_out_i8(&b, 0);
            kc_out_i8(&b, 0);
            kc_out_uvarint(&b, 0);
            kc_req_end(&b, at);
        }
        int rc = kc_sock_send(fd, b.p, b.len);
        assert_true(rc == KC_SOCK_OK || rc == KC_SOCK_CLOSED);
        kc_buf_t one = {0};
        if (round % 2 == 1) /* sometimes wait until the answers are flowing */
            assert_int_equal(kc_sock_read_frame(fd, &one, KC_IO_TIMEOUT_MS), KC_SOCK_OK);
        close_fd(f, fd, 1);
        kc_buf_free(&one);
        kc_buf_free(&b);
        healthy_ok(f, healthy);
    }
    f->proc.ok = 1;
}

/* connections.max.idle.ms=1000: a silent connection and one that went quiet after a request
 * are closed after about a second; a connection that keeps sending is not. */
static void test_idle_close(void **state)
{
    fixture_t *f = *state;
    int64_t t0 = kc_now_ms();
    int silent = connect_fd(f);
    int quiet = connect_fd(f);
    int busy = connect_fd(f);
    healthy_ok(f, quiet);

    /* Keep `busy` active (a request whenever 200 ms pass without the silent connection being
     * closed) until the daemon closes the silent one, at most 10 s. */
    int rc;
    do {
        healthy_ok(f, busy);
        rc = kc_sock_wait_closed(silent, 200);
    } while (rc == KC_SOCK_TIMEOUT && kc_now_ms() - t0 < 10000);
    int64_t elapsed = kc_now_ms() - t0;
    if (rc != KC_SOCK_CLOSED)
        fail_msg("silent connection after %lld ms: %s", (long long)elapsed, kc_sock_strerror(rc));
    if (elapsed < IDLE_MS - 100)
        fail_msg("silent connection closed after %lld ms, before connections.max.idle.ms=%d",
                 (long long)elapsed, IDLE_MS);

    /* busy has been connected as long as silent, but was never idle for a second. */
    healthy_ok(f, busy);

    rc = kc_sock_wait_closed(quiet, 10000);
    if (rc != KC_SOCK_CLOSED)
        fail_msg("quiet connection: %s", kc_sock_strerror(rc));

    int fresh = connect_fd(f);
    healthy_ok(f, fresh);
    f->proc.ok = 1;
}

int main(void)
{
    static const struct CMUnitTest rest[] = {
        cmocka_unit_test_setup_teardown(test_all_cases_one_daemon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frame_at_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replies_before_bad_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disconnect_mid_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disconnect_with_answers_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_close, setup_idle, teardown),
    };
    enum { N_REST = sizeof(rest) / sizeof(rest[0]) };
    struct CMUnitTest tests[N_CASES + N_REST];
    size_t n = 0;
    for (size_t i = 0; i < N_CASES; i++)
        tests[n++] = (struct CMUnitTest){CASES[i].name, test_bad_frame, setup, teardown, &CASES[i]};
    for (size_t i = 0; i < N_REST; i++)
        tests[n++] = rest[i];
    return _cmocka_run_group_tests("test_malformed", tests, n, NULL, NULL);
}
