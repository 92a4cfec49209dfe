/* test_admin.c - the group admin APIs of a real kcoord, through librdkafka's admin client.
 *
 * Every test starts its own daemon (node.id 3, topics t6:6 and other:3, groups spread over 5
 * __consumer_offsets partitions, no initial rebalance delay) and stops it in the teardown,
 * which fails the test unless the daemon exits 0 on SIGTERM. Groups come in three kinds:
 *   - "live": librdkafka consumers (rk_group.h) subscribed to t6, Stable;
 *   - simple groups: created by a commit from a consumer that never joins (generation -1),
 *     Empty with protocol type "" as Kafka keeps them;
 *   - unknown groups.
 * The tests check what Kafka answers for each: ListConsumerGroups (with state filters),
 * DescribeConsumerGroups (state, assignor, coordinator, members with client ids, member ids,
 * hosts and assignments), ListConsumerGroupOffsets, AlterConsumerGroupOffsets,
 * DeleteConsumerGroupOffsets and DeleteGroups, with their per-group and per-partition error
 * codes. Admin results are awaited with bounded rd_kafka_queue_poll calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rk_group.h"

enum {
    NODE_ID = 3,
    T6 = 6,
    MAX_MEMBERS = 4,
    WAIT_MS = 30000,
    ADMIN_TIMEOUT_MS = 15000,
};

static const char TOPIC[] = "t6";
static const char OTHER[] = "other";
static const char *const SETS[] = {"topics=t6:6,other:3", "node.id=3",
                                   "group.initial.rebalance.delay.ms=0",
                                   "offsets.topic.num.partitions=5", NULL};

/* ---- Fixture --------------------------------------------------------------------------------- */

typedef struct fixture_s {
    kc_proc_t proc;
    kc_rk_log_t log;
    kc_consumer_t cs[MAX_MEMBERS];
    kc_consumer_t admin_id; /* only names the admin client in the log (its opaque) */
    rd_kafka_t *admin;
    rd_kafka_queue_t *q;
    char why[1024];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    kc_rk_log_init(&f->log);
    if (kc_proc_start(&f->proc, SETS) != 0) {
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
    if (!f->proc.ok || getenv("KC_TEST_LOG") != NULL)
        kc_rk_log_print(&f->log);
    int rc = kc_proc_finish(&f->proc);
    kc_rk_log_free(&f->log);
    free(f);
    return rc;
}

/* The admin client (a producer handle), logging its protocol exchanges. */
static void start_admin(fixture_t *f)
{
    char bootstrap[64], errstr[512];
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", f->proc.port);
    snprintf(f->admin_id.name, sizeof(f->admin_id.name), "admin");
    f->admin_id.log = &f->log;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kc_rk_set(conf, "bootstrap.servers", bootstrap) != 0 ||
        kc_rk_set(conf, "client.id", "kc-admin") != 0 ||
        kc_rk_set(conf, "debug", "admin,protocol") != 0 ||
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

/* The next admin result of `type` (the caller destroys it); fails on a timeout or another
 * event type. */
static rd_kafka_event_t *admin_result(fixture_t *f, rd_kafka_event_type_t type, const char *what)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(f->q, ADMIN_TIMEOUT_MS);
    if (ev == NULL)
        fail_msg("%s: no result within %d ms", what, ADMIN_TIMEOUT_MS);
    if (rd_kafka_event_type(ev) != type) {
        const char *name = rd_kafka_event_name(ev);
        rd_kafka_event_destroy(ev);
        fail_msg("%s: event %s instead of the result", what, name);
    }
    return ev;
}

/* Fail unless the event carries no request-level error. */
static void expect_event_ok(rd_kafka_event_t *ev, const char *what)
{
    if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s: %s: %s", what, rd_kafka_err2name(rd_kafka_event_error(ev)),
                 rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        fail_msg("%s", msg);
    }
}

/* ---- Groups to look at ----------------------------------------------------------------------- */

/* Serve consumers until the running ones split t6 among `n` of them. */
static void wait_split(fixture_t *f, int n)
{
    int64_t deadline = kc_now_ms() + WAIT_MS;
    for (;;) {
        uint64_t masks[MAX_MEMBERS];
        int running = 0;
        for (int i = 0; i < MAX_MEMBERS; i++) {
            kc_consumer_serve(&f->cs[i]);
            if (f->cs[i].rk != NULL && f->cs[i].topic != NULL)
                masks[running++] = f->cs[i].assigned;
        }
        if (running == n && kc_split_ok(masks, n, T6, f->why, sizeof(f->why)))
            break;
        if (running != n)
            snprintf(f->why, sizeof(f->why), "%d members running, want %d", running, n);
        int64_t left = deadline - kc_now_ms();
        if (left <= 0)
            fail_msg("%d members did not split %s within %d ms: %s", n, TOPIC, WAIT_MS, f->why);
        struct pollfd q[MAX_MEMBERS];
        int nq = 0;
        for (int i = 0; i < MAX_MEMBERS; i++)
            if (f->cs[i].rk != NULL)
                q[nq++] = (struct pollfd){.fd = f->cs[i].wake[0], .events = POLLIN};
        poll(q, (nfds_t)nq, left < KC_RK_SERVE_SLICE_MS ? (int)left : KC_RK_SERVE_SLICE_MS);
    }
    for (int i = 0; i < MAX_MEMBERS; i++)
        if (f->cs[i].rk != NULL && f->cs[i].bad != 0)
            fail_msg("%s: %d problems in rebalance callbacks", f->cs[i].name, f->cs[i].bad);
}

/* Member i of group "live" with client.id `client_id`, subscribed to t6 (range). */
static void start_live(fixture_t *f, int i, const char *client_id)
{
    const char *const kv[] = {"partition.assignment.strategy", "range", NULL};
    if (kc_consumer_start(&f->cs[i], &f->log, f->proc.port, client_id, "live", TOPIC, T6, kv) != 0)
        fail_msg("consumer %s did not start", client_id);
}

static void close_member(fixture_t *f, int i)
{
    rd_kafka_resp_err_t err = kc_consumer_close(&f->cs[i]);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("%s: rd_kafka_consumer_close: %s", f->cs[i].name, rd_kafka_err2str(err));
}

/* Commit `offset` (metadata "md") for `topic`[`partition`] from consumer c, synchronously. */
static void commit_one(kc_consumer_t *c, const char *topic, int partition, int64_t offset)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_t *e = rd_kafka_topic_partition_list_add(l, topic, partition);
    e->offset = offset;
    e->metadata = strdup("md");
    e->metadata_size = 2;
    rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, l, 0);
    rd_kafka_topic_partition_list_destroy(l);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("%s: commit %s[%d]=%lld: %s", c->name, topic, partition, (long long)offset,
                 rd_kafka_err2name(err));
}

/* Create the simple group `group` holding t6[0] = offset, with a consumer (slot `slot`) that
 * never joins; the consumer is destroyed again. */
static void make_simple_group(fixture_t *f, int slot, const char *group, int64_t offset)
{
    kc_consumer_t *c = &f->cs[slot];
    if (kc_consumer_start(c, &f->log, f->proc.port, group, group, NULL, T6, NULL) != 0)
        fail_msg("consumer for %s did not start", group);
    commit_one(c, TOPIC, 0, offset);
    close_member(f, slot);
}

/* ---- ListConsumerGroups ---------------------------------------------------------------------- */

typedef struct listing_s {
    char id[64];
    rd_kafka_consumer_group_state_t state;
    int simple;
} listing_t;

/* ListConsumerGroups, optionally filtered by `states` (n_states of them); fills out[] (up to
 * cap) and returns the count. Fails on any error. */
static int list_groups(fixture_t *f, const rd_kafka_consumer_group_state_t *states, int n_states,
                       listing_t *out, int cap)
{
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    if (n_states > 0) {
        rd_kafka_error_t *e =
            rd_kafka_AdminOptions_set_match_consumer_group_states(o, states, (size_t)n_states);
        if (e != NULL) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s", rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            fail_msg("set_match_consumer_group_states: %s", msg);
        }
    }
    rd_kafka_ListConsumerGroups(f->admin, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev =
        admin_result(f, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT, "ListConsumerGroups");
    expect_event_ok(ev, "ListConsumerGroups");
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t n_err = 0, n = 0;
    const rd_kafka_error_t **errs = rd_kafka_ListConsumerGroups_result_errors(res, &n_err);
    if (n_err > 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", rd_kafka_error_string(errs[0]));
        rd_kafka_event_destroy(ev);
        fail_msg("ListConsumerGroups: %zu errors, the first: %s", n_err, msg);
    }
    const rd_kafka_ConsumerGroupListing_t **gs = rd_kafka_ListConsumerGroups_result_valid(res, &n);
    int count = 0;
    for (size_t i = 0; i < n && count < cap; i++, count++) {
        snprintf(out[count].id, sizeof(out[count].id), "%s",
                 rd_kafka_ConsumerGroupListing_group_id(gs[i]));
        out[count].state = rd_kafka_ConsumerGroupListing_state(gs[i]);
        out[count].simple = rd_kafka_ConsumerGroupListing_is_simple_consumer_group(gs[i]);
    }
    rd_kafka_event_destroy(ev);
    if ((size_t)count != n)
        fail_msg("ListConsumerGroups: %zu groups, more than the %d expected at most", n, cap);
    return count;
}

/* The listing must hold exactly the groups of want[] (any order), with their state and kind. */
static void expect_listing(const listing_t *got, int n, const listing_t *want, int n_want,
                           const char *what)
{
    char all[1024];
    size_t at = 0;
    all[0] = '\0';
    for (int i = 0; i < n && at < sizeof(all); i++)
        at += (size_t)snprintf(all + at, sizeof(all) - at, " %s(%s%s)", got[i].id,
                               rd_kafka_consumer_group_state_name(got[i].state),
                               got[i].simple ? ",simple" : "");
    if (n != n_want)
        fail_msg("%s: %d groups:%s; want %d", what, n, all, n_want);
    for (int w = 0; w < n_want; w++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            if (strcmp(got[i].id, want[w].id) == 0 && got[i].state == want[w].state &&
                got[i].simple == want[w].simple)
                found = 1;
        if (!found)
            fail_msg("%s: no %s(%s%s) among%s", what, want[w].id,
                     rd_kafka_consumer_group_state_name(want[w].state),
                     want[w].simple ? ",simple" : "", all);
    }
}

static void test_list_groups(void **state)
{
    fixture_t *f = *state;
    start_admin(f);
    listing_t got[16];
    assert_int_equal(list_groups(f, NULL, 0, got, 16), 0);

    start_live(f, 0, "client-a");
    start_live(f, 1, "client-b");
    wait_split(f, 2);
    static const char *const simple[] = {"simple-0", "simple-1", "simple-2", "simple-3"};
    for (int i = 0; i < 4; i++)
        make_simple_group(f, 2, simple[i], 10 + i);

    const listing_t want[] = {
        {"live", RD_KAFKA_CONSUMER_GROUP_STATE_STABLE, 0},
        {"simple-0", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1},
        {"simple-1", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1},
        {"simple-2", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1},
        {"simple-3", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1},
    };
    int n = list_groups(f, NULL, 0, got, 16);
    expect_listing(got, n, want, 5, "ListConsumerGroups");

    /* ListGroups v4 state filters (KIP-518). */
    rd_kafka_consumer_group_state_t stable = RD_KAFKA_CONSUMER_GROUP_STATE_STABLE;
    n = list_groups(f, &stable, 1, got, 16);
    expect_listing(got, n, want, 1, "ListConsumerGroups(Stable)");
    rd_kafka_consumer_group_state_t empty = RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY;
    n = list_groups(f, &empty, 1, got, 16);
    expect_listing(got, n, want + 1, 4, "ListConsumerGroups(Empty)");
    rd_kafka_consumer_group_state_t dead = RD_KAFKA_CONSUMER_GROUP_STATE_DEAD;
    n = list_groups(f, &dead, 1, got, 16);
    expect_listing(got, n, want, 0, "ListConsumerGroups(Dead)");

    /* All members gone: "live" is Empty but still a consumer group (not simple). */
    close_member(f, 0);
    close_member(f, 1);
    const listing_t after[] = {{"live", RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 0}};
    n = list_groups(f, &empty, 1, got, 16);
    listing_t all_empty[5] = {after[0], want[1], want[2], want[3], want[4]};
    expect_listing(got, n, all_empty, 5, "ListConsumerGroups(Empty) after the members left");
    f->proc.ok = 1;
}

/* ---- DescribeConsumerGroups ------------------------------------------------------------------ */

/* The DescribeGroups version librdkafka sent (from its protocol log), or -1. */
static int describe_groups_version(fixture_t *f)
{
    static const char mark[] = "Sent DescribeGroupsRequest (v";
    int v = -1;
    pthread_mutex_lock(&f->log.mu);
    const char *p = f->log.text.len > 0 ? strstr((char *)f->log.text.p, mark) : NULL;
    if (p != NULL)
        v = atoi(p + sizeof(mark) - 1);
    pthread_mutex_unlock(&f->log.mu);
    return v;
}

/* DescribeConsumerGroups of groups[0..n); returns the event (the caller destroys it) and the
 * descriptions in the order of groups[] in desc[]. */
static rd_kafka_event_t *describe(fixture_t *f, const char **groups, int n,
                                  const rd_kafka_ConsumerGroupDescription_t **desc)
{
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_DescribeConsumerGroups(f->admin, groups, (size_t)n, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev =
        admin_result(f, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT, "DescribeConsumerGroups");
    expect_event_ok(ev, "DescribeConsumerGroups");
    size_t cnt = 0;
    const rd_kafka_ConsumerGroupDescription_t **gs = rd_kafka_DescribeConsumerGroups_result_groups(
        rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt);
    if (cnt != (size_t)n) {
        rd_kafka_event_destroy(ev);
        fail_msg("DescribeConsumerGroups: %zu descriptions for %d groups", cnt, n);
    }
    for (int i = 0; i < n; i++) {
        desc[i] = NULL;
        for (size_t j = 0; j < cnt; j++)
            if (strcmp(rd_kafka_ConsumerGroupDescription_group_id(gs[j]), groups[i]) == 0)
                desc[i] = gs[j];
        if (desc[i] == NULL) {
            rd_kafka_event_destroy(ev);
            fail_msg("DescribeConsumerGroups: no description of %s", groups[i]);
        }
    }
    return ev;
}

static const char *state_name(rd_kafka_consumer_group_state_t s)
{
    return rd_kafka_consumer_group_state_name(s);
}

/* Check a description's error (none), state, kind, assignor and member count. */
static void expect_description(fixture_t *f, const rd_kafka_ConsumerGroupDescription_t *d,
                               rd_kafka_consumer_group_state_t state, int simple,
                               const char *assignor, size_t members)
{
    const char *id = rd_kafka_ConsumerGroupDescription_group_id(d);
    const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(d);
    if (e != NULL)
        fail_msg("%s: error %s", id, rd_kafka_error_string(e));
    rd_kafka_consumer_group_state_t got = rd_kafka_ConsumerGroupDescription_state(d);
    if (got != state)
        fail_msg("%s: state %s, want %s", id, state_name(got), state_name(state));
    if (rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(d) != simple)
        fail_msg("%s: is_simple_consumer_group %d, want %d", id,
                 rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(d), simple);
    const char *a = rd_kafka_ConsumerGroupDescription_partition_assignor(d);
    if (strcmp(a ? a : "", assignor) != 0)
        fail_msg("%s: partition assignor \"%s\", want \"%s\"", id, a ? a : "(null)", assignor);
    size_t n = rd_kafka_ConsumerGroupDescription_member_count(d);
    if (n != members)
        fail_msg("%s: %zu members, want %zu", id, n, members);
    const rd_kafka_Node_t *c = rd_kafka_ConsumerGroupDescription_coordinator(d);
    if (c == NULL || rd_kafka_Node_id(c) != NODE_ID || strcmp(rd_kafka_Node_host(c), "127.0.0.1") ||
        rd_kafka_Node_port(c) != f->proc.port)
        fail_msg("%s: coordinator %d at %s:%d, want %d at 127.0.0.1:%d", id,
                 c ? rd_kafka_Node_id(c) : -1, c ? rd_kafka_Node_host(c) : "?",
                 c ? rd_kafka_Node_port(c) : -1, NODE_ID, f->proc.port);
}

/* The members of a description must be exactly the running consumers cs[0..n): client id,
 * member id, a host, no instance id, and the partitions each consumer holds. */
static void expect_members(fixture_t *f, const rd_kafka_ConsumerGroupDescription_t *d, int n)
{
    for (int i = 0; i < n; i++) {
        kc_consumer_t *c = &f->cs[i];
        char *member_id = rd_kafka_memberid(c->rk);
        const rd_kafka_MemberDescription_t *m = NULL;
        for (size_t j = 0; j < rd_kafka_ConsumerGroupDescription_member_count(d); j++) {
            const rd_kafka_MemberDescription_t *x = rd_kafka_ConsumerGroupDescription_member(d, j);
            if (strcmp(rd_kafka_MemberDescription_consumer_id(x), member_id ? member_id : "") == 0)
                m = x;
        }
        char mid[256];
        snprintf(mid, sizeof(mid), "%s", member_id ? member_id : "(none)");
        rd_kafka_mem_free(c->rk, member_id);
        if (m == NULL)
            fail_msg("member %s (%s) is not described", mid, c->name);
        if (strcmp(rd_kafka_MemberDescription_client_id(m), c->name) != 0)
            fail_msg("member %s: client id \"%s\", want \"%s\"", mid,
                     rd_kafka_MemberDescription_client_id(m), c->name);
        const char *host = rd_kafka_MemberDescription_host(m);
        if (host == NULL || strstr(host, "127.0.0.1") == NULL)
            fail_msg("member %s: host \"%s\", want Kafka's \"/127.0.0.1\"", mid,
                     host ? host : "(null)");
        if (rd_kafka_MemberDescription_group_instance_id(m) != NULL)
            fail_msg("member %s: group instance id \"%s\", want none", mid,
                     rd_kafka_MemberDescription_group_instance_id(m));
        const rd_kafka_MemberAssignment_t *a = rd_kafka_MemberDescription_assignment(m);
        int foreign = 0;
        uint64_t mask =
            kc_parts_mask(a ? rd_kafka_MemberAssignment_partitions(a) : NULL, TOPIC, T6, &foreign);
        char s1[128], s2[128];
        if (mask != c->assigned || foreign != 0)
            fail_msg("member %s (%s): described assignment %s (+%d others), it holds %s", mid,
                     c->name, kc_mask_str(mask, s1, sizeof(s1)), foreign,
                     kc_mask_str(c->assigned, s2, sizeof(s2)));
    }
}

static void test_describe_groups(void **state)
{
    fixture_t *f = *state;
    start_admin(f);
    start_live(f, 0, "client-a");
    start_live(f, 1, "client-b");
    wait_split(f, 2);
    make_simple_group(f, 2, "simple", 5);

    const char *groups[] = {"live", "simple", "nope"};
    const rd_kafka_ConsumerGroupDescription_t *d[3];
    rd_kafka_event_t *ev = describe(f, groups, 3, d);
    expect_description(f, d[0], RD_KAFKA_CONSUMER_GROUP_STATE_STABLE, 0, "range", 2);
    expect_members(f, d[0], 2);
    expect_description(f, d[1], RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 1, "", 0);
    /* An unknown group is described as Dead with no members; DescribeGroups v6+ (KIP-1043)
     * adds GROUP_ID_NOT_FOUND, older versions answer error 0. */
    int v = describe_groups_version(f);
    const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(d[2]);
    rd_kafka_resp_err_t want_err =
        v >= 6 ? RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_resp_err_t got_err = e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (got_err != want_err)
        fail_msg("nope: error %s with DescribeGroups v%d, want %s", rd_kafka_err2name(got_err), v,
                 rd_kafka_err2name(want_err));
    if (got_err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        assert_int_equal(rd_kafka_ConsumerGroupDescription_state(d[2]),
                         RD_KAFKA_CONSUMER_GROUP_STATE_DEAD);
        assert_int_equal(rd_kafka_ConsumerGroupDescription_member_count(d[2]), 0);
    }
    rd_kafka_event_destroy(ev);

    /* One member leaves: one left, still Stable once the rebalance is over. */
    close_member(f, 1);
    wait_split(f, 1);
    ev = describe(f, groups, 1, d);
    expect_description(f, d[0], RD_KAFKA_CONSUMER_GROUP_STATE_STABLE, 0, "range", 1);
    expect_members(f, d[0], 1);
    rd_kafka_event_destroy(ev);

    /* The last one leaves: Empty, still a consumer group, no assignor. */
    close_member(f, 0);
    ev = describe(f, groups, 1, d);
    expect_description(f, d[0], RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, 0, "", 0);
    rd_kafka_event_destroy(ev);
    f->proc.ok = 1;
}

/* ---- Group offsets --------------------------------------------------------------------------- */

typedef struct want_offset_s {
    const char *topic;
    int partition;
    int64_t offset; /* RD_KAFKA_OFFSET_INVALID: no committed offset */
} want_offset_t;

/* ListConsumerGroupOffsets of `group` for the partitions of want[] (all committed ones when
 * `all` is set: then exactly want[] must come back). */
static void expect_group_offsets(fixture_t *f, const char *group, const want_offset_t *want, int n,
                                 int all)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (!all) {
        parts = rd_kafka_topic_partition_list_new(n);
        for (int i = 0; i < n; i++)
            rd_kafka_topic_partition_list_add(parts, want[i].topic, want[i].partition);
    }
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, parts);
    if (parts != NULL)
        rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    rd_kafka_ListConsumerGroupOffsets(f->admin, &req, 1, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    rd_kafka_event_t *ev =
        admin_result(f, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT, "ListConsumerGroupOffsets");
    expect_event_ok(ev, "ListConsumerGroupOffsets");
    size_t cnt = 0;
    const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
        rd_kafka_event_ListConsumerGroupOffsets_result(ev), &cnt);
    char msg[1024] = "";
    if (cnt != 1 || strcmp(rd_kafka_group_result_name(gr[0]), group) != 0) {
        snprintf(msg, sizeof(msg), "%zu group results", cnt);
    } else if (rd_kafka_group_result_error(gr[0]) != NULL) {
        snprintf(msg, sizeof(msg), "error %s",
                 rd_kafka_error_string(rd_kafka_group_result_error(gr[0])));
    } else {
        const rd_kafka_topic_partition_list_t *got = rd_kafka_group_result_partitions(gr[0]);
        if (all && got->cnt != n)
            snprintf(msg, sizeof(msg), "%d partitions, want %d", got->cnt, n);
        for (int i = 0; i < n && msg[0] == '\0'; i++) {
            const rd_kafka_topic_partition_t *e =
                rd_kafka_topic_partition_list_find(got, want[i].topic, want[i].partition);
            if (e == NULL)
                snprintf(msg, sizeof(msg), "%s[%d] is missing", want[i].topic, want[i].partition);
            else if (e->err != RD_KAFKA_RESP_ERR_NO_ERROR || e->offset != want[i].offset)
                snprintf(msg, sizeof(msg), "%s[%d]: offset %lld error %s, want offset %lld",
                         want[i].topic, want[i].partition, (long long)e->offset,
                         rd_kafka_err2name(e->err), (long long)want[i].offset);
            else if (want[i].offset >= 0 &&
                     (e->metadata_size != 2 || memcmp(e->metadata, "md", 2) != 0))
                snprintf(msg, sizeof(msg), "%s[%d]: metadata \"%.*s\", want \"md\"", want[i].topic,
                         want[i].partition, (int)e->metadata_size,
                         e->metadata ? (const char *)e->metadata : "");
        }
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("ListConsumerGroupOffsets(%s): %s", group, msg);
}

/* AlterConsumerGroupOffsets of one partition; every partition of the answer must carry `want`. */
static void alter_offset(fixture_t *f, const char *group, const char *topic, int partition,
                         int64_t offset, rd_kafka_resp_err_t want)
{
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_t *e = rd_kafka_topic_partition_list_add(parts, topic, partition);
    e->offset = offset;
    e->metadata = strdup("md");
    e->metadata_size = 2;
    rd_kafka_AlterConsumerGroupOffsets_t *req =
        rd_kafka_AlterConsumerGroupOffsets_new(group, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
    rd_kafka_AlterConsumerGroupOffsets(f->admin, &req, 1, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_AlterConsumerGroupOffsets_destroy(req);
    rd_kafka_event_t *ev = admin_result(f, RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT,
                                        "AlterConsumerGroupOffsets");
    expect_event_ok(ev, "AlterConsumerGroupOffsets");
    size_t cnt = 0;
    const rd_kafka_group_result_t **gr = rd_kafka_AlterConsumerGroupOffsets_result_groups(
        rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &cnt);
    char msg[512] = "";
    if (cnt != 1) {
        snprintf(msg, sizeof(msg), "%zu group results", cnt);
    } else if (rd_kafka_group_result_error(gr[0]) != NULL) {
        snprintf(msg, sizeof(msg), "group error %s",
                 rd_kafka_error_string(rd_kafka_group_result_error(gr[0])));
    } else {
        const rd_kafka_topic_partition_list_t *got = rd_kafka_group_result_partitions(gr[0]);
        if (got == NULL || got->cnt != 1)
            snprintf(msg, sizeof(msg), "%d partitions in the answer", got ? got->cnt : -1);
        else if (got->elems[0].err != want)
            snprintf(msg, sizeof(msg), "%s[%d]: %s, want %s", got->elems[0].topic,
                     got->elems[0].partition, rd_kafka_err2name(got->elems[0].err),
                     rd_kafka_err2name(want));
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("AlterConsumerGroupOffsets(%s, %s[%d]=%lld): %s", group, topic, partition,
                 (long long)offset, msg);
}

/* DeleteConsumerGroupOffsets of one partition. `want_request` is the request-level error
 * (OffsetDelete's top-level error code), else each partition must carry `want`. */
static void delete_offset(fixture_t *f, const char *group, const char *topic, int partition,
                          rd_kafka_resp_err_t want_request, rd_kafka_resp_err_t want)
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
    char msg[512] = "";
    rd_kafka_resp_err_t req_err = rd_kafka_event_error(ev);
    if (req_err != want_request) {
        snprintf(msg, sizeof(msg), "request error %s (%s), want %s", rd_kafka_err2name(req_err),
                 rd_kafka_event_error_string(ev), rd_kafka_err2name(want_request));
    } else if (req_err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        size_t cnt = 0;
        const rd_kafka_group_result_t **gr = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
            rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &cnt);
        const rd_kafka_topic_partition_list_t *got =
            cnt == 1 ? rd_kafka_group_result_partitions(gr[0]) : NULL;
        if (cnt != 1)
            snprintf(msg, sizeof(msg), "%zu group results", cnt);
        else if (rd_kafka_group_result_error(gr[0]) != NULL)
            snprintf(msg, sizeof(msg), "group error %s",
                     rd_kafka_error_string(rd_kafka_group_result_error(gr[0])));
        else if (got == NULL || got->cnt != 1)
            snprintf(msg, sizeof(msg), "%d partitions in the answer", got ? got->cnt : -1);
        else if (got->elems[0].err != want)
            snprintf(msg, sizeof(msg), "%s[%d]: %s, want %s", got->elems[0].topic,
                     got->elems[0].partition, rd_kafka_err2name(got->elems[0].err),
                     rd_kafka_err2name(want));
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("DeleteConsumerGroupOffsets(%s, %s[%d]): %s", group, topic, partition, msg);
}

static void test_group_offsets(void **state)
{
    fixture_t *f = *state;
    const int64_t none = RD_KAFKA_OFFSET_INVALID;
    start_admin(f);
    start_live(f, 0, "client-a");
    start_live(f, 1, "client-b");
    wait_split(f, 2);
    /* A member commits all of t6 (owned or not: the coordinator does not check ownership) and
     * a partition of a topic nobody in the group subscribes to. */
    for (int p = 0; p < T6; p++)
        commit_one(&f->cs[0], TOPIC, p, 10 + p);
    commit_one(&f->cs[0], OTHER, 0, 7);

    const want_offset_t live_all[] = {{TOPIC, 0, 10}, {TOPIC, 1, 11}, {TOPIC, 2, 12},
                                      {TOPIC, 3, 13}, {TOPIC, 4, 14}, {TOPIC, 5, 15},
                                      {OTHER, 0, 7}};
    expect_group_offsets(f, "live", live_all, 7, 1);
    const want_offset_t some[] = {{TOPIC, 2, 12}, {OTHER, 1, none}, {"t6", 5, 15}};
    expect_group_offsets(f, "live", some, 3, 0);

    /* Altering the offsets of a group with members: UNKNOWN_MEMBER_ID, nothing changes. */
    alter_offset(f, "live", TOPIC, 0, 99, RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
    expect_group_offsets(f, "live", live_all, 1, 0);

    /* Altering offsets of an unknown group creates it (Empty) with them. */
    alter_offset(f, "fresh", TOPIC, 1, 41, RD_KAFKA_RESP_ERR_NO_ERROR);
    alter_offset(f, "fresh", TOPIC, 2, 42, RD_KAFKA_RESP_ERR_NO_ERROR);
    const want_offset_t fresh[] = {{TOPIC, 1, 41}, {TOPIC, 2, 42}};
    expect_group_offsets(f, "fresh", fresh, 2, 1);
    alter_offset(f, "fresh", TOPIC, 1, 51, RD_KAFKA_RESP_ERR_NO_ERROR);
    const want_offset_t fresh2[] = {{TOPIC, 1, 51}, {TOPIC, 2, 42}};
    expect_group_offsets(f, "fresh", fresh2, 2, 1);

    /* Deleting offsets of a subscribed topic in a live group: GROUP_SUBSCRIBED_TO_TOPIC; of a
     * topic no member subscribes to: done. */
    delete_offset(f, "live", TOPIC, 0, RD_KAFKA_RESP_ERR_NO_ERROR,
                  RD_KAFKA_RESP_ERR_GROUP_SUBSCRIBED_TO_TOPIC);
    delete_offset(f, "live", OTHER, 0, RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_RESP_ERR_NO_ERROR);
    const want_offset_t live_after[] = {{TOPIC, 0, 10}, {TOPIC, 1, 11}, {TOPIC, 2, 12},
                                        {TOPIC, 3, 13}, {TOPIC, 4, 14}, {TOPIC, 5, 15}};
    expect_group_offsets(f, "live", live_after, 6, 1);
    const want_offset_t other_gone[] = {{OTHER, 0, none}};
    expect_group_offsets(f, "live", other_gone, 1, 0);

    /* In an Empty group anything can go; an unknown group is GROUP_ID_NOT_FOUND. */
    delete_offset(f, "fresh", TOPIC, 1, RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_RESP_ERR_NO_ERROR);
    const want_offset_t fresh3[] = {{TOPIC, 2, 42}};
    expect_group_offsets(f, "fresh", fresh3, 1, 1);
    delete_offset(f, "nope", TOPIC, 0, RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND,
                  RD_KAFKA_RESP_ERR_NO_ERROR);

    /* Once the live group is Empty its offsets can be altered and deleted. */
    close_member(f, 1);
    close_member(f, 0);
    alter_offset(f, "live", TOPIC, 0, 99, RD_KAFKA_RESP_ERR_NO_ERROR);
    delete_offset(f, "live", TOPIC, 1, RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_RESP_ERR_NO_ERROR);
    const want_offset_t live_empty[] = {
        {TOPIC, 0, 99}, {TOPIC, 2, 12}, {TOPIC, 3, 13}, {TOPIC, 4, 14}, {TOPIC, 5, 15}};
    expect_group_offsets(f, "live", live_empty, 5, 1);
    f->proc.ok = 1;
}

/* ---- DeleteGroups ---------------------------------------------------------------------------- */

/* DeleteGroups of groups[0..n); each group's error must be want[i]. */
static void delete_groups(fixture_t *f, const char **groups, const rd_kafka_resp_err_t *want, int n)
{
    rd_kafka_DeleteGroup_t *dg[8];
    assert_true(n <= 8);
    for (int i = 0; i < n; i++)
        dg[i] = rd_kafka_DeleteGroup_new(groups[i]);
    rd_kafka_AdminOptions_t *o = admin_options(f, RD_KAFKA_ADMIN_OP_DELETEGROUPS);
    rd_kafka_DeleteGroups(f->admin, dg, (size_t)n, o, f->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_DeleteGroup_destroy_array(dg, (size_t)n);
    rd_kafka_event_t *ev = admin_result(f, RD_KAFKA_EVENT_DELETEGROUPS_RESULT, "DeleteGroups");
    expect_event_ok(ev, "DeleteGroups");
    size_t cnt = 0;
    const rd_kafka_group_result_t **gr =
        rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &cnt);
    char msg[512] = "";
    if (cnt != (size_t)n)
        snprintf(msg, sizeof(msg), "%zu results for %d groups", cnt, n);
    for (int i = 0; i < n && msg[0] == '\0'; i++) {
        const rd_kafka_group_result_t *r = NULL;
        for (size_t j = 0; j < cnt; j++)
            if (strcmp(rd_kafka_group_result_name(gr[j]), groups[i]) == 0)
                r = gr[j];
        const rd_kafka_error_t *e = r ? rd_kafka_group_result_error(r) : NULL;
        rd_kafka_resp_err_t got = e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (r == NULL)
            snprintf(msg, sizeof(msg), "no result for %s", groups[i]);
        else if (got != want[i])
            snprintf(msg, sizeof(msg), "%s: %s, want %s", groups[i], rd_kafka_err2name(got),
                     rd_kafka_err2name(want[i]));
    }
    rd_kafka_event_destroy(ev);
    if (msg[0] != '\0')
        fail_msg("DeleteGroups: %s", msg);
}

static void test_delete_groups(void **state)
{
    fixture_t *f = *state;
    const int64_t none = RD_KAFKA_OFFSET_INVALID;
    start_admin(f);
    start_live(f, 0, "client-a");
    wait_split(f, 1);
    commit_one(&f->cs[0], TOPIC, 3, 33);
    make_simple_group(f, 2, "simple", 5);

    const char *groups[] = {"live", "simple", "nope"};
    const rd_kafka_resp_err_t want[] = {RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP,
                                        RD_KAFKA_RESP_ERR_NO_ERROR,
                                        RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND};
    delete_groups(f, groups, want, 3);

    /* "simple" is gone with its offsets; "live" is untouched and its member still works. */
    listing_t got[8];
    const listing_t live_only[] = {{"live", RD_KAFKA_CONSUMER_GROUP_STATE_STABLE, 0}};
    int n = list_groups(f, NULL, 0, got, 8);
    expect_listing(got, n, live_only, 1, "ListConsumerGroups after DeleteGroups");
    const rd_kafka_ConsumerGroupDescription_t *d[1];
    rd_kafka_event_t *ev = describe(f, groups + 1, 1, d);
    rd_kafka_consumer_group_state_t st = rd_kafka_ConsumerGroupDescription_state(d[0]);
    rd_kafka_event_destroy(ev);
    if (st != RD_KAFKA_CONSUMER_GROUP_STATE_DEAD)
        fail_msg("the deleted group is %s, want Dead", state_name(st));
    const want_offset_t simple_gone[] = {{TOPIC, 0, none}};
    expect_group_offsets(f, "simple", simple_gone, 1, 0);
    const want_offset_t live3[] = {{TOPIC, 3, 33}};
    expect_group_offsets(f, "live", live3, 1, 1);
    commit_one(&f->cs[0], TOPIC, 3, 34);

    /* Deleting the same group twice: the second time it is not found. */
    const rd_kafka_resp_err_t not_found[] = {RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND};
    delete_groups(f, groups + 1, not_found, 1);

    /* Once its member left, "live" can be deleted, offsets included. */
    close_member(f, 0);
    const rd_kafka_resp_err_t ok[] = {RD_KAFKA_RESP_ERR_NO_ERROR};
    delete_groups(f, groups, ok, 1);
    n = list_groups(f, NULL, 0, got, 8);
    expect_listing(got, n, live_only, 0, "ListConsumerGroups after deleting everything");
    const want_offset_t live_gone[] = {{TOPIC, 3, none}};
    expect_group_offsets(f, "live", live_gone, 1, 0);
    f->proc.ok = 1;
}

int main(void)
{
    if (getenv("KC_TEST_FILTER") != NULL) /* e.g. KC_TEST_FILTER='test_delete*' */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_groups, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
