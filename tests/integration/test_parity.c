/* test_parity.c - answers in which kcoord once differed from Kafka 4.4, pinned with raw frames.
 *
 * The differential check (tests/compat/compat_diff.py) sends one request sequence to kcoord and to
 * a reference Kafka broker and compares the answers field by field. Each test here keeps one
 * difference it found fixed, without needing Kafka: the empty group id of the offset and
 * group admin APIs, the KIP-511 fallback body, FindCoordinator's messages, JoinGroup's null
 * protocol name from v7, OffsetDelete of a partition the topic does not have, DescribeCluster's
 * and ApiVersions' error answers, Fetch's entry for a partition that does not exist.
 *
 * Every test starts its own daemon (topic t with 2 partitions, no initial rebalance delay)
 * and stops it in the teardown, which fails the test unless the daemon exits 0 on SIGTERM.
 * Requests are built byte by byte with harness.h; every answer is decoded to its last byte.
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

static const char *const SETS[] = {"topics=t:2", "group.initial.rebalance.delay.ms=0", NULL};

/* Kafka's default text of INVALID_REQUEST (Errors.java). */
static const char INVALID_REQUEST_TEXT[] =
    "This most likely occurs because of a request being malformed by the client library or the "
    "message was sent to an incompatible broker. See the broker logs for more details.";

/* ---- Fixture --------------------------------------------------------------------------------- */

typedef struct fixture_s {
    kc_proc_t proc;
    int fd;
    int32_t corr;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    f->fd = -1;
    if (kc_proc_start(&f->proc, SETS) != 0) {
        free(f);
        return -1;
    }
    f->fd = kc_sock_connect(f->proc.port);
    if (f->fd < 0) {
        kc_proc_finish(&f->proc);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    if (f->fd >= 0)
        close(f->fd);
    int rc = kc_proc_finish(&f->proc);
    free(f);
    return rc;
}

/* ---- Frames ---------------------------------------------------------------------------------- */

static void out_i64(kc_buf_t *b, int64_t v)
{
    kc_out_i32(b, (int32_t)(v >> 32));
    kc_out_i32(b, (int32_t)(v & 0xffffffff));
}

/* Start request `key` v`version` on the fixture's connection; returns the frame offset. */
static size_t begin(fixture_t *f, kc_buf_t *b, int16_t key, int16_t version, int flexible)
{
    return kc_req_begin(b, key, version, ++f->corr, "kc-parity", flexible);
}

/* Finish the frame, send it, read the answer into `resp` and check its correlation id (and
 * skip the response header's tags when `flexible`). */
static void exchange(fixture_t *f, kc_buf_t *req, size_t at, int flexible, kc_buf_t *resp,
                     kc_in_t *r)
{
    kc_req_end(req, at);
    int rc = kc_sock_send(f->fd, req->p, req->len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(f->fd, resp, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK)
        fail_msg("request/response: %s", kc_sock_strerror(rc));
    kc_buf_free(req);
    kc_in_init(r, resp->p, resp->len);
    assert_int_equal(kc_in_i32(r), f->corr);
    if (flexible)
        kc_in_tags(r);
}

static void expect_end(kc_in_t *r, const char *what)
{
    if (r->err || kc_in_left(r) != 0)
        fail_msg("%s: the answer does not decode (%zu bytes left)", what, kc_in_left(r));
}

/* OffsetCommit v2 of one offset, generation -1 (a simple commit); returns its error code. */
static int16_t commit_v2(fixture_t *f, const char *group, const char *topic, int32_t partition,
                         int64_t offset)
{
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 8, 2, 0);
    kc_out_str(&b, group);
    kc_out_i32(&b, -1); /* generation */
    kc_out_str(&b, ""); /* member id */
    out_i64(&b, -1);    /* retention_time_ms */
    kc_out_i32(&b, 1);
    kc_out_str(&b, topic);
    kc_out_i32(&b, 1);
    kc_out_i32(&b, partition);
    out_i64(&b, offset);
    kc_out_str(&b, "m");
    exchange(f, &b, at, 0, &resp, &r);
    assert_int_equal(kc_in_count(&r, 0), 1);
    char name[64];
    kc_in_str(&r, 0, name, sizeof(name));
    assert_int_equal(kc_in_count(&r, 0), 1);
    assert_int_equal(kc_in_i32(&r), partition);
    int16_t err = kc_in_i16(&r);
    expect_end(&r, "OffsetCommit v2");
    kc_buf_free(&resp);
    return err;
}

/* OffsetFetch v1 of one partition; returns the committed offset (-1: none) and its error. */
static int64_t fetch_v1(fixture_t *f, const char *group, const char *topic, int32_t partition,
                        int16_t *err)
{
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 9, 1, 0);
    kc_out_str(&b, group);
    kc_out_i32(&b, 1);
    kc_out_str(&b, topic);
    kc_out_i32(&b, 1);
    kc_out_i32(&b, partition);
    exchange(f, &b, at, 0, &resp, &r);
    assert_int_equal(kc_in_count(&r, 0), 1);
    char s[64];
    kc_in_str(&r, 0, s, sizeof(s));
    assert_int_equal(kc_in_count(&r, 0), 1);
    assert_int_equal(kc_in_i32(&r), partition);
    int64_t offset = kc_in_i64(&r);
    kc_in_str(&r, 0, s, sizeof(s)); /* metadata */
    *err = kc_in_i16(&r);
    expect_end(&r, "OffsetFetch v1");
    kc_buf_free(&resp);
    return offset;
}

/* DescribeGroups v0 of one group: its error code, and its state in `state`. */
static int16_t describe_v0(fixture_t *f, const char *group, char *state, size_t cap)
{
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 15, 0, 0);
    kc_out_i32(&b, 1);
    kc_out_str(&b, group);
    exchange(f, &b, at, 0, &resp, &r);
    assert_int_equal(kc_in_count(&r, 0), 1);
    int16_t err = kc_in_i16(&r);
    char s[256];
    assert_int_equal(kc_in_str(&r, 0, s, sizeof(s)), (int)strlen(group));
    assert_string_equal(s, group);
    kc_in_str(&r, 0, state, cap);
    kc_in_str(&r, 0, s, sizeof(s)); /* protocol type */
    kc_in_str(&r, 0, s, sizeof(s)); /* protocol data */
    assert_int_equal(kc_in_count(&r, 0), 0);
    expect_end(&r, "DescribeGroups v0");
    kc_buf_free(&resp);
    return err;
}

/* ---- Tests ----------------------------------------------------------------------------------- */

/* Kafka's isValidGroupId: OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept
 * the empty group id (KAFKA-6773); Heartbeat and OffsetDelete answer INVALID_GROUP_ID. */
static void test_empty_group_id(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(commit_v2(f, "", "t", 1, 5), 0);
    int16_t err;
    assert_int_equal(fetch_v1(f, "", "t", 1, &err), 5);
    assert_int_equal(err, 0);
    char st[64];
    assert_int_equal(describe_v0(f, "", st, sizeof(st)), 0);
    assert_string_equal(st, "Empty");

    /* Heartbeat v0: INVALID_GROUP_ID. */
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 12, 0, 0);
    kc_out_str(&b, "");
    kc_out_i32(&b, 1);
    kc_out_str(&b, "m");
    exchange(f, &b, at, 0, &resp, &r);
    assert_int_equal(kc_in_i16(&r), 24);
    expect_end(&r, "Heartbeat v0");

    /* OffsetDelete v0: INVALID_GROUP_ID for the whole request. */
    at = begin(f, &b, 47, 0, 0);
    kc_out_str(&b, "");
    kc_out_i32(&b, 1);
    kc_out_str(&b, "t");
    kc_out_i32(&b, 1);
    kc_out_i32(&b, 1);
    exchange(f, &b, at, 0, &resp, &r);
    assert_int_equal(kc_in_i16(&r), 24);
    kc_in_i32(&r); /* throttle */
    assert_int_equal(kc_in_count(&r, 0), 0);
    expect_end(&r, "OffsetDelete v0");

    /* DeleteGroups v0 removes it, offsets and all. */
    at = begin(f, &b, 42, 0, 0);
    kc_out_i32(&b, 1);
    kc_out_str(&b, "");
    exchange(f, &b, at, 0, &resp, &r);
    kc_in_i32(&r); /* throttle */
    assert_int_equal(kc_in_count(&r, 0), 1);
    char s[64];
    assert_int_equal(kc_in_str(&r, 0, s, sizeof(s)), 0);
    assert_int_equal(kc_in_i16(&r), 0);
    expect_end(&r, "DeleteGroups v0");
    kc_buf_free(&resp);

    assert_int_equal(describe_v0(f, "", st, sizeof(st)), 0);
    assert_string_equal(st, "Dead");
    assert_int_equal(fetch_v1(f, "", "t", 1, &err), -1);
    assert_int_equal(err, 0);
    f->proc.ok = 1;
}

/* KIP-511 as Kafka answers it: error 35 and, in a v0 body, the ApiVersions range only. */
static void test_api_versions_fallback_body(void **state)
{
    fixture_t *f = *state;
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 18, 127, 1);
    kc_out_cstr(&b, "kc-parity");
    kc_out_cstr(&b, "1.0");
    kc_out_uvarint(&b, 0);
    exchange(f, &b, at, 0, &resp, &r); /* ApiVersions answers carry header v0 */
    assert_int_equal(kc_in_i16(&r), 35);
    assert_int_equal(kc_in_count(&r, 0), 1);
    assert_int_equal(kc_in_i16(&r), 18);
    assert_int_equal(kc_in_i16(&r), 0);
    assert_int_equal(kc_in_i16(&r), 4);
    expect_end(&r, "ApiVersions v127");
    kc_buf_free(&resp);
    assert_int_equal(kc_check_api_versions(f->fd, 99), 0);
    f->proc.ok = 1;
}

/* ApiVersions v3 with a client software name Kafka's pattern refuses: INVALID_REQUEST, and,
 * as Kafka's error answer, no APIs listed. */
static void test_api_versions_bad_software_name(void **state)
{
    fixture_t *f = *state;
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 18, 3, 1);
    kc_out_cstr(&b, "bad name!");
    kc_out_cstr(&b, "1.0");
    kc_out_uvarint(&b, 0);
    exchange(f, &b, at, 0, &resp, &r); /* ApiVersions answers carry header v0 */
    assert_int_equal(kc_in_i16(&r), 42);
    assert_int_equal(kc_in_count(&r, 1), 0);
    assert_int_equal(kc_in_i32(&r), 0); /* throttle */
    kc_in_tags(&r);
    expect_end(&r, "ApiVersions v3");
    kc_buf_free(&resp);
    assert_int_equal(kc_check_api_versions(f->fd, 98), 0);
    f->proc.ok = 1;
}

/* FindCoordinator: success says "NONE" in the single-key form (v1-3) and "" in the batched
 * form (v4+); an unknown key type gets INVALID_REQUEST with Kafka's default text. */
static void test_find_coordinator_messages(void **state)
{
    fixture_t *f = *state;
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    char s[512];
    static const int8_t types[] = {0, 7};
    for (int i = 0; i < 2; i++) {
        size_t at = begin(f, &b, 10, 2, 0);
        kc_out_str(&b, "g");
        kc_out_i8(&b, types[i]);
        exchange(f, &b, at, 0, &resp, &r);
        kc_in_i32(&r); /* throttle */
        assert_int_equal(kc_in_i16(&r), types[i] == 0 ? 0 : 42);
        kc_in_str(&r, 0, s, sizeof(s));
        assert_string_equal(s, types[i] == 0 ? "NONE" : INVALID_REQUEST_TEXT);
        kc_in_i32(&r);                  /* node id */
        kc_in_str(&r, 0, s, sizeof(s)); /* host */
        kc_in_i32(&r);                  /* port */
        expect_end(&r, "FindCoordinator v2");
    }

    size_t at = begin(f, &b, 10, 4, 1);
    kc_out_i8(&b, 0);
    kc_out_uvarint(&b, 2);
    kc_out_cstr(&b, "g");
    kc_out_uvarint(&b, 0);
    exchange(f, &b, at, 1, &resp, &r);
    kc_in_i32(&r); /* throttle */
    assert_int_equal(kc_in_count(&r, 1), 1);
    kc_in_str(&r, 1, s, sizeof(s));
    assert_string_equal(s, "g");
    kc_in_i32(&r);
    kc_in_str(&r, 1, s, sizeof(s));
    kc_in_i32(&r);
    assert_int_equal(kc_in_i16(&r), 0);
    assert_int_equal(kc_in_str(&r, 1, s, sizeof(s)), 0); /* "", not null */
    kc_in_tags(&r);
    kc_in_tags(&r);
    expect_end(&r, "FindCoordinator v4");
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* JoinGroup v7 (flexible, nullable protocol name): the answer's protocol name, or -1 for null,
 * in *name_len; returns the error code and copies the member id out. */
static int16_t join_v7(fixture_t *f, const char *group, const char *member, int *name_len,
                       char *member_out, size_t cap)
{
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 11, 7, 1);
    kc_out_cstr(&b, group);
    kc_out_i32(&b, 30000); /* session */
    kc_out_i32(&b, 30000); /* rebalance */
    kc_out_cstr(&b, member);
    kc_out_cstr(&b, NULL); /* group instance id */
    kc_out_cstr(&b, "consumer");
    kc_out_uvarint(&b, 2);
    kc_out_cstr(&b, "range");
    kc_out_uvarint(&b, 1); /* empty metadata */
    kc_out_uvarint(&b, 0);
    kc_out_uvarint(&b, 0);
    exchange(f, &b, at, 1, &resp, &r);
    kc_in_i32(&r); /* throttle */
    int16_t err = kc_in_i16(&r);
    kc_in_i32(&r); /* generation */
    char s[256];
    kc_in_str(&r, 1, s, sizeof(s)); /* protocol type */
    *name_len = kc_in_str(&r, 1, s, sizeof(s));
    kc_in_str(&r, 1, s, sizeof(s)); /* leader */
    kc_in_str(&r, 1, member_out, cap);
    int32_t n = kc_in_count(&r, 1);
    for (int32_t i = 0; i < n && !r.err; i++) {
        kc_in_str(&r, 1, s, sizeof(s));
        kc_in_str(&r, 1, s, sizeof(s));
        kc_in_skip(&r, kc_in_uvarint(&r) - 1);
        kc_in_tags(&r);
    }
    kc_in_tags(&r);
    expect_end(&r, "JoinGroup v7");
    kc_buf_free(&resp);
    return err;
}

/* JoinGroupResponse from v7: an empty protocol name goes out as null (MEMBER_ID_REQUIRED,
 * errors), a chosen one as itself. */
static void test_join_protocol_name_null(void **state)
{
    fixture_t *f = *state;
    char member[256], ignored[256];
    int name_len;
    assert_int_equal(join_v7(f, "", "", &name_len, ignored, sizeof(ignored)), 24);
    assert_int_equal(name_len, -1);
    assert_int_equal(join_v7(f, "j", "", &name_len, member, sizeof(member)), 79);
    assert_int_equal(name_len, -1);
    assert_true(strlen(member) > 0);
    assert_int_equal(join_v7(f, "j", member, &name_len, ignored, sizeof(ignored)), 0);
    assert_int_equal(name_len, 5); /* "range" */
    f->proc.ok = 1;
}

/* OffsetDelete: a partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
 * broker answers before the coordinator sees the request; the others are deleted. */
static void test_offset_delete_unknown_partition(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(commit_v2(f, "g", "t", 0, 7), 0);
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 47, 0, 0);
    kc_out_str(&b, "g");
    kc_out_i32(&b, 1);
    kc_out_str(&b, "t");
    static const int32_t parts[] = {0, 9, -1};
    kc_out_i32(&b, 3);
    for (int i = 0; i < 3; i++)
        kc_out_i32(&b, parts[i]);
    exchange(f, &b, at, 0, &resp, &r);
    assert_int_equal(kc_in_i16(&r), 0);
    kc_in_i32(&r); /* throttle */
    assert_int_equal(kc_in_count(&r, 0), 1);
    char s[64];
    kc_in_str(&r, 0, s, sizeof(s));
    assert_int_equal(kc_in_count(&r, 0), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kc_in_i32(&r), parts[i]);
        assert_int_equal(kc_in_i16(&r), parts[i] == 0 ? 0 : 3);
    }
    expect_end(&r, "OffsetDelete v0");
    kc_buf_free(&resp);
    int16_t err;
    assert_int_equal(fetch_v1(f, "g", "t", 0, &err), -1);
    assert_int_equal(err, 0);
    f->proc.ok = 1;
}

/* DescribeCluster v1 for controllers, sent to a broker: MISMATCHED_ENDPOINT_TYPE, and, as in
 * Kafka's error answer, nothing else: endpoint type 1, no cluster id, controller -1. */
static void test_describe_cluster_error_defaults(void **state)
{
    fixture_t *f = *state;
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 60, 1, 1);
    kc_out_i8(&b, 0); /* include_cluster_authorized_operations */
    kc_out_i8(&b, 2); /* endpoint_type: controllers */
    kc_out_uvarint(&b, 0);
    exchange(f, &b, at, 1, &resp, &r);
    kc_in_i32(&r); /* throttle */
    assert_int_equal(kc_in_i16(&r), 114);
    char s[256];
    kc_in_str(&r, 1, s, sizeof(s));
    assert_int_equal(kc_in_i8(&r), 1);
    assert_int_equal(kc_in_str(&r, 1, s, sizeof(s)), 0);
    assert_int_equal(kc_in_i32(&r), -1);
    assert_int_equal(kc_in_count(&r, 1), 0);
    assert_int_equal(kc_in_i32(&r), INT32_MIN);
    kc_in_tags(&r);
    expect_end(&r, "DescribeCluster v1");
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

/* Fetch v12 of a partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION with an empty
 * (not null) list of aborted transactions, as Kafka's error entry has it. */
static void test_fetch_error_aborted_empty(void **state)
{
    fixture_t *f = *state;
    kc_buf_t b = {0}, resp = {0};
    kc_in_t r;
    size_t at = begin(f, &b, 1, 12, 1);
    kc_out_i32(&b, -1); /* replica id */
    kc_out_i32(&b, 0);  /* max wait */
    kc_out_i32(&b, 0);  /* min bytes */
    kc_out_i32(&b, 1 << 20);
    kc_out_i8(&b, 0);   /* read uncommitted */
    kc_out_i32(&b, 0);  /* session id */
    kc_out_i32(&b, -1); /* session epoch */
    kc_out_uvarint(&b, 2);
    kc_out_cstr(&b, "t");
    kc_out_uvarint(&b, 2);
    kc_out_i32(&b, 7);  /* no such partition */
    kc_out_i32(&b, -1); /* current leader epoch */
    out_i64(&b, 0);     /* fetch offset */
    kc_out_i32(&b, -1); /* last fetched epoch */
    out_i64(&b, -1);    /* log start offset */
    kc_out_i32(&b, 1 << 20);
    kc_out_uvarint(&b, 0);
    kc_out_uvarint(&b, 0);
    kc_out_uvarint(&b, 1); /* no forgotten topics */
    kc_out_cstr(&b, "");   /* rack */
    kc_out_uvarint(&b, 0);
    exchange(f, &b, at, 1, &resp, &r);
    kc_in_i32(&r); /* throttle */
    assert_int_equal(kc_in_i16(&r), 0);
    assert_int_equal(kc_in_i32(&r), 0); /* session id */
    assert_int_equal(kc_in_count(&r, 1), 1);
    char s[64];
    kc_in_str(&r, 1, s, sizeof(s));
    assert_int_equal(kc_in_count(&r, 1), 1);
    assert_int_equal(kc_in_i32(&r), 7);
    assert_int_equal(kc_in_i16(&r), 3);
    kc_in_i64(&r);                           /* high watermark */
    kc_in_i64(&r);                           /* last stable offset */
    kc_in_i64(&r);                           /* log start offset */
    assert_int_equal(kc_in_count(&r, 1), 0); /* aborted transactions: [] */
    kc_in_i32(&r);                           /* preferred read replica */
    kc_in_skip(&r, kc_in_uvarint(&r) - 1);   /* records */
    kc_in_tags(&r);
    kc_in_tags(&r);
    kc_in_tags(&r);
    expect_end(&r, "Fetch v12");
    kc_buf_free(&resp);
    f->proc.ok = 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty_group_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_versions_fallback_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_coordinator_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_join_protocol_name_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_delete_unknown_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_cluster_error_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_error_aborted_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_versions_bad_software_name, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
