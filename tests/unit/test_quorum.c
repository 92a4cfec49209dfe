/* test_quorum.c - DescribeQuorum, AddRaftVoter, RemoveRaftVoter and the cluster's observability
 * views, from a fake cluster.
 *
 * A request frame goes through kc_api_on_request to its answer on a fake connection slot, as in
 * test_api.c. The cluster room is not started: the calls the API and observability rooms make
 * on it (kc_cluster_status, kc_cluster_broker, kc_cluster_id, kc_cluster_add_voter,
 * kc_cluster_remove_voter) are replaced at link time (-Wl,--wrap, see the
 * Makefile) by fakes that answer from `fake`, a status the test writes; so are the network
 * calls of the API room (kc_slot_reply, kc_slot_reply_close, kc_slot_close, kc_slot_arena,
 * kc_conn_peer,
 * kc_conn_principal). The observability views are pure functions of a status and are called
 * directly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cmocka.h>

#include "api/api.h"
#include "cluster/cluster.h"
#include "obs/obs.h"
#include "proto/gen_cluster.h"
#include "proto/gen_discovery.h"

#include "json_check.h"

/* ---- Link-time fakes ----------------------------------------------------------------------- */

static kc_cluster_status_t fake;
static int status_calls;
static const char *principal = "User:ANONYMOUS";

/* The fake cluster's client addresses: node n at 10.0.0.n:9092 (PLAINTEXT) and :9093 (SSL). */
static kc_cluster_addr_t addrs[8][2];
static char hosts[8][24];

void __wrap_kc_cluster_status(const kc_cluster_t *cl, kc_cluster_status_t *out)
{
    assert_non_null(cl);
    status_calls++;
    *out = fake;
}

const kc_cluster_addr_t *__wrap_kc_cluster_broker(const kc_cluster_t *cl, int32_t id,
                                                  const char *listener)
{
    assert_non_null(cl);
    if (id < 1 || id > 7)
        return NULL;
    snprintf(hosts[id], sizeof(hosts[id]), "10.0.0.%d", id);
    int which = strcasecmp(listener, "PLAINTEXT") == 0 ? 0
                : strcasecmp(listener, "SSL") == 0     ? 1
                                                       : -1;
    if (which < 0 || (which == 1 && id == 3)) /* node 3 has no SSL listener */
        return NULL;
    addrs[id][which] = (kc_cluster_addr_t){hosts[id], 9092 + which};
    return &addrs[id][which];
}

struct kc_slot_s {
    kc_arena_t arena;
    uint8_t *answer;
    size_t answer_len;
    int closed;       /* closed without an answer */
    int closed_after; /* answered, then closed once the answer is written */
};

kc_arena_t *__wrap_kc_slot_arena(kc_slot_t *slot)
{
    return &slot->arena;
}

void __wrap_kc_slot_reply(kc_slot_t *slot, uint8_t *buf, size_t len)
{
    assert_null(slot->answer);
    assert_false(slot->closed);
    slot->answer = buf;
    slot->answer_len = len;
}

void __wrap_kc_slot_reply_close(kc_slot_t *slot, uint8_t *buf, size_t len)
{
    __wrap_kc_slot_reply(slot, buf, len);
    slot->closed_after = 1;
}

void __wrap_kc_slot_close(kc_slot_t *slot, const char *why)
{
    (void)why;
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
    return principal;
}

/* Membership changes: what the API room asked for, and what the fake answers. */
static const char fake_cluster_id[] = "Yk6V2eWURGWVSoJ0ZdlQVA";
static int change_rc; /* what kc_cluster_add_voter/remove_voter return */
static int change_calls;
static char change_args[512]; /* "add ID DIR RAFT LISTENERS TIMEOUT" or "remove ID DIR" */
static kc_cluster_change_cb change_cb;
static void *change_arg;

const char *__wrap_kc_cluster_id(const kc_cluster_t *cl)
{
    assert_non_null(cl);
    return fake_cluster_id;
}

int __wrap_kc_cluster_add_voter(kc_cluster_t *cl, int32_t id, const char *directory_id,
                                const char *raft_address, const char *listeners, int32_t timeout_ms,
                                kc_cluster_change_cb done, void *arg)
{
    assert_non_null(cl);
    change_calls++;
    snprintf(change_args, sizeof(change_args), "add %d %s %s %s %d", id, directory_id, raft_address,
             listeners, timeout_ms);
    change_cb = done;
    change_arg = arg;
    return change_rc;
}

int __wrap_kc_cluster_remove_voter(kc_cluster_t *cl, int32_t id, const char *directory_id,
                                   int32_t timeout_ms, kc_cluster_change_cb done, void *arg)
{
    assert_non_null(cl);
    (void)timeout_ms;
    change_calls++;
    snprintf(change_args, sizeof(change_args), "remove %d %s", id, directory_id);
    change_cb = done;
    change_arg = arg;
    return change_rc;
}

/* ---- A context, requests and answers -------------------------------------------------------- */

typedef struct env_s {
    kc_conf_t conf;
    kc_api_ctx_t ctx;
    int cluster_token; /* what ctx.cluster points at: the fakes never read it */
} env_t;

static void env_init(env_t *e, bool cluster)
{
    char err[256];
    memset(e, 0, sizeof(*e));
    kc_conf_init(&e->conf);
    assert_int_equal(kc_conf_set(&e->conf, "listeners",
                                 "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093", KC_CONF_SRC_SET,
                                 err, sizeof(err)),
                     0);
    e->ctx = (kc_api_ctx_t){.node_id = 1, .host = "127.0.0.1", .port = 9092, .conf = &e->conf};
    e->ctx.cluster = cluster ? (kc_cluster_t *)&e->cluster_token : NULL;
}

static void env_free(env_t *e)
{
    kc_auth_free(e->ctx.auth);
    kc_conf_free(&e->conf);
}

/* Send one request (header v2: flexible requests) and return its slot. */
typedef void (*encode_fn)(kc_writer_t *w, int16_t v, const void *body);

static kc_slot_t *send_request(env_t *e, int16_t key, int16_t version, const void *body,
                               encode_fn enc)
{
    const kc_api_info_t *api = kc_api_find(key);
    assert_non_null(api);
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, key);
    kc_wr_i16(&w, version);
    kc_wr_i32(&w, 42);
    kc_wr_str(&w, KC_STR_LIT("test"));
    if (kc_api_is_flexible(api, version))
        kc_wr_uvarint(&w, 0);
    enc(&w, version, body);
    assert_false(w.err);
    size_t len;
    uint8_t *frame = kc_wr_steal(&w, &len);
    kc_slot_t *slot = calloc(1, sizeof(*slot));
    assert_non_null(slot);
    kc_arena_init(&slot->arena);
    uint8_t *copy = kc_arena_dup(&slot->arena, frame, len);
    assert_non_null(copy);
    free(frame);
    kc_api_on_request(&e->ctx, (kc_conn_t *)slot, slot, copy, len);
    return slot;
}

static void slot_free(kc_slot_t *slot)
{
    free(slot->answer);
    kc_arena_free(&slot->arena);
    free(slot);
}

static void enc_quorum(kc_writer_t *w, int16_t v, const void *body)
{
    kc_describe_quorum_request_encode(w, v, body);
}

static void enc_versions(kc_writer_t *w, int16_t v, const void *body)
{
    kc_api_versions_request_encode(w, v, body);
}

/* Ask DescribeQuorum at `version` for topic/partition, decode the answer into *resp (from `a`).
 * Returns false when the connection was closed instead. */
static int last_closed_after; /* the last describe()'s connection closes after its answer */

static bool describe(env_t *e, int16_t version, const char *topic, int32_t partition, kc_arena_t *a,
                     kc_describe_quorum_response_t *resp)
{
    kc_describe_quorum_partition_t p = {.partition_index = partition};
    kc_describe_quorum_topic_t t = {.topic_name = kc_str_c(topic)};
    t.partitions.v = &p;
    t.partitions.n = 1;
    kc_describe_quorum_request_t q;
    kc_describe_quorum_request_init(&q);
    q.topics.v = &t;
    q.topics.n = 1;
    kc_slot_t *slot = send_request(e, KC_API_DESCRIBE_QUORUM, version, &q, enc_quorum);
    if (slot->closed) {
        slot_free(slot);
        return false;
    }
    assert_non_null(slot->answer);
    last_closed_after = slot->closed_after;
    /* size, correlation id, the response header's tagged fields (v1 header: flexible 0+) */
    size_t off = 4 + 4 + 1;
    uint8_t *copy = kc_arena_dup(a, slot->answer + off, slot->answer_len - off);
    assert_non_null(copy);
    size_t len = slot->answer_len - off;
    slot_free(slot);
    kc_reader_t r;
    kc_rd_init(&r, copy, len);
    kc_describe_quorum_response_init(resp);
    assert_int_equal(kc_describe_quorum_response_decode(&r, a, version, resp), 0);
    assert_int_equal(kc_rd_remaining(&r), 0);
    return true;
}

static void enc_add_voter(kc_writer_t *w, int16_t v, const void *body)
{
    kc_add_raft_voter_request_encode(w, v, body);
}

static void enc_remove_voter(kc_writer_t *w, int16_t v, const void *body)
{
    kc_remove_raft_voter_request_encode(w, v, body);
}

/* The answer (error code and message) of a slot answered with an AddRaftVoter or
 * RemoveRaftVoter response (the same shape); the message "" when null. */
static int16_t change_answer(kc_slot_t *slot, char *msg, size_t msglen)
{
    assert_non_null(slot->answer);
    size_t off = 4 + 4 + 1;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_rd_init(&r, slot->answer + off, slot->answer_len - off);
    kc_add_raft_voter_response_t resp;
    kc_add_raft_voter_response_init(&resp);
    assert_int_equal(kc_add_raft_voter_response_decode(&r, &a, 0, &resp), 0);
    snprintf(msg, msglen, "%.*s", resp.error_message.len > 0 ? (int)resp.error_message.len : 0,
             resp.error_message.p ? resp.error_message.p : "");
    kc_arena_free(&a);
    return resp.error_code;
}

/* ---- Fake statuses --------------------------------------------------------------------------- */

/* Three voters, node 1 leading in term 7: node 2 caught up, node 3 behind and silent so far. */
static void leader_status(void)
{
    memset(&fake, 0, sizeof(fake));
    fake.self = 1;
    fake.leader = 1;
    fake.role = KC_CLUSTER_LEADER;
    fake.raft_state = "leader";
    fake.term = 7;
    fake.commit_index = 120;
    fake.applied_index = 119;
    fake.last_index = 125;
    fake.elections = 2;
    fake.leadership_changes = 3;
    fake.snapshots = 4;
    fake.snapshots_restored = 1;
    fake.n_voters = 3;
    for (int i = 0; i < 3; i++) {
        kc_cluster_voter_t *v = &fake.voters[i];
        v->id = i + 1;
        snprintf(v->raft_address, sizeof(v->raft_address), "10.0.0.%d:9500", i + 1);
        v->role = 1;
    }
    /* Kafka's Uuid.ONE_UUID: 15 zero bytes and a 1. Voter 3's is not known here. */
    snprintf(fake.voters[0].directory_id, sizeof(fake.voters[0].directory_id),
             "AAAAAAAAAAAAAAAAAAAAAQ");
    snprintf(fake.voters[1].directory_id, sizeof(fake.voters[1].directory_id),
             "_____________________w");
    fake.voters[0].match_index = 125;
    fake.voters[0].last_contact_ms = 0;
    fake.voters[0].last_caught_up_ms = 0;
    fake.voters[1].match_index = 125;
    fake.voters[1].last_contact_ms = 40;
    fake.voters[1].last_caught_up_ms = 40;
    fake.voters[2].match_index = 100;
    fake.voters[2].last_contact_ms = -1;
    fake.voters[2].last_caught_up_ms = -1;
}

/* Node 2's view of the same cluster: it knows only its own log. */
static void follower_status(void)
{
    leader_status();
    fake.self = 2;
    fake.role = KC_CLUSTER_FOLLOWER;
    fake.raft_state = "follower";
    fake.last_index = 125;
    for (int i = 0; i < 3; i++) {
        fake.voters[i].match_index = i == 1 ? 125 : -1;
        fake.voters[i].last_contact_ms = -1;
        fake.voters[i].last_caught_up_ms = -1;
    }
}

static int64_t wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The APIs an ApiVersions v3 answer lists: whether `key` is among them, with its range. */
static bool advertised(env_t *e, int16_t key, int16_t *min, int16_t *max)
{
    kc_api_versions_request_t q;
    kc_api_versions_request_init(&q);
    q.client_software_name = KC_STR_LIT("test");
    q.client_software_version = KC_STR_LIT("1.0");
    kc_slot_t *slot = send_request(e, KC_API_API_VERSIONS, 3, &q, enc_versions);
    assert_non_null(slot->answer);
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_rd_init(&r, slot->answer + 8, slot->answer_len - 8); /* header v0 (KIP-511) */
    kc_api_versions_response_t resp;
    kc_api_versions_response_init(&resp);
    assert_int_equal(kc_api_versions_response_decode(&r, &a, 3, &resp), 0);
    assert_int_equal(resp.error_code, KC_ERR_NONE);
    assert_true(resp.api_keys.n > 20);
    bool found = false;
    for (int32_t i = 0; i < resp.api_keys.n; i++) {
        if (resp.api_keys.v[i].api_key == key) {
            found = true;
            *min = resp.api_keys.v[i].min_version;
            *max = resp.api_keys.v[i].max_version;
        }
        if (i > 0) /* still in key order, without holes */
            assert_true(resp.api_keys.v[i].api_key > resp.api_keys.v[i - 1].api_key);
    }
    kc_arena_free(&a);
    slot_free(slot);
    return found;
}

/* ---- DescribeQuorum ---------------------------------------------------------------------------
 */

/* A single node has no quorum: DescribeQuorum is not advertised and a request for it closes the
 * connection (as a Kafka broker without KRaft); a node of a cluster advertises 0-2. */
static void test_single_node_has_no_quorum(void **state)
{
    (void)state;
    env_t e;
    int16_t min = -1, max = -1;
    env_init(&e, false);
    assert_false(advertised(&e, KC_API_DESCRIBE_QUORUM, &min, &max));
    assert_true(advertised(&e, KC_API_DESCRIBE_CLUSTER, &min, &max)); /* the rest stays */
    kc_arena_t a;
    kc_arena_init(&a);
    kc_describe_quorum_response_t resp;
    status_calls = 0;
    assert_false(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    assert_int_equal(status_calls, 0);
    env_free(&e);

    env_init(&e, true);
    leader_status();
    assert_true(advertised(&e, KC_API_DESCRIBE_QUORUM, &min, &max));
    assert_int_equal(min, 0);
    assert_int_equal(max, 2);
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    assert_int_equal(resp.error_code, KC_ERR_NONE);
    kc_arena_free(&a);
    env_free(&e);
}

static const kc_describe_quorum_partition_data_t *
only_partition(const kc_describe_quorum_response_t *resp)
{
    assert_int_equal(resp->error_code, KC_ERR_NONE);
    assert_int_equal(resp->topics.n, 1);
    assert_true(kc_str_eq_c(resp->topics.v[0].topic_name, "__cluster_metadata"));
    assert_int_equal(resp->topics.v[0].partitions.n, 1);
    const kc_describe_quorum_partition_data_t *p = &resp->topics.v[0].partitions.v[0];
    assert_int_equal(p->partition_index, 0);
    return p;
}

/* The leader's answer at v2: term as epoch, commit index as high watermark, every voter's match
 * index, the leader's own timestamps now, each voter's last contact and last caught-up time,
 * -1 where unknown, no observers, and each voter's listeners. */
static void test_leader_answer(void **state)
{
    (void)state;
    env_t e;
    env_init(&e, true);
    leader_status();
    kc_arena_t a;
    kc_arena_init(&a);
    kc_describe_quorum_response_t resp;
    int64_t before = wall_now();
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    int64_t after = wall_now();
    assert_true(resp.error_message.len < 0);
    const kc_describe_quorum_partition_data_t *p = only_partition(&resp);
    assert_int_equal(p->error_code, KC_ERR_NONE);
    assert_true(p->error_message.len < 0);
    assert_int_equal(p->leader_id, 1);
    assert_int_equal(p->leader_epoch, 7);
    assert_int_equal(p->high_watermark, 120);
    assert_int_equal(p->observers.n, 0);
    assert_int_equal(p->current_voters.n, 3);
    const kc_describe_quorum_voter_t *v = p->current_voters.v;
    static const uint8_t zero[16], one[16] = {[15] = 1};
    uint8_t ones[16];
    memset(ones, 0xff, sizeof(ones));
    for (int i = 0; i < 3; i++)
        assert_int_equal(v[i].replica_id, i + 1);
    assert_memory_equal(&v[0].replica_directory_id, one, 16);
    assert_memory_equal(&v[1].replica_directory_id, ones, 16);
    assert_memory_equal(&v[2].replica_directory_id, zero, 16);
    assert_int_equal(v[0].log_end_offset, 125);
    assert_in_range(v[0].last_fetch_timestamp, before, after);
    assert_int_equal(v[0].last_caught_up_timestamp, v[0].last_fetch_timestamp);
    assert_int_equal(v[1].log_end_offset, 125);
    assert_in_range(v[1].last_fetch_timestamp, before - 40, after - 40);
    assert_int_equal(v[1].last_caught_up_timestamp, v[1].last_fetch_timestamp);
    assert_int_equal(v[2].log_end_offset, 100);
    assert_int_equal(v[2].last_fetch_timestamp, -1);
    assert_int_equal(v[2].last_caught_up_timestamp, -1);

    assert_int_equal(resp.nodes.n, 3);
    for (int i = 0; i < 3; i++) {
        const kc_describe_quorum_node_t *n = &resp.nodes.v[i];
        char host[24];
        snprintf(host, sizeof(host), "10.0.0.%d", i + 1);
        assert_int_equal(n->node_id, i + 1);
        /* Its raft address first, named CONTROLLER (what AddRaftVoter takes), then its client
         * listeners. */
        assert_int_equal(n->listeners.n, i == 2 ? 2 : 3);
        assert_true(kc_str_eq_c(n->listeners.v[0].name, "CONTROLLER"));
        assert_true(kc_str_eq_c(n->listeners.v[0].host, host));
        assert_int_equal(n->listeners.v[0].port, 9500);
        assert_true(kc_str_eq_c(n->listeners.v[1].name, "PLAINTEXT"));
        assert_true(kc_str_eq_c(n->listeners.v[1].host, host));
        assert_int_equal(n->listeners.v[1].port, 9092);
        if (i != 2) {
            assert_true(kc_str_eq_c(n->listeners.v[2].name, "SSL"));
            assert_int_equal(n->listeners.v[2].port, 9093);
        }
    }

    /* A voter heard from 10 ms ago that was last caught up 2 s ago; one heard from but never
     * caught up in this term. */
    fake.voters[2].last_contact_ms = 10;
    fake.voters[2].last_caught_up_ms = 2000;
    before = wall_now();
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    after = wall_now();
    v = only_partition(&resp)->current_voters.v;
    assert_in_range(v[2].last_fetch_timestamp, before - 10, after - 10);
    assert_in_range(v[2].last_caught_up_timestamp, before - 2000, after - 2000);
    fake.voters[2].last_caught_up_ms = -1;
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    v = only_partition(&resp)->current_voters.v;
    assert_true(v[2].last_fetch_timestamp > 0);
    assert_int_equal(v[2].last_caught_up_timestamp, -1);

    /* v1 has the timestamps but no nodes; v0 neither. */
    assert_true(describe(&e, 1, "__cluster_metadata", 0, &a, &resp));
    p = only_partition(&resp);
    assert_int_equal(resp.nodes.n, 0);
    assert_true(p->current_voters.v[0].last_fetch_timestamp > 0);
    assert_true(describe(&e, 0, "__cluster_metadata", 0, &a, &resp));
    p = only_partition(&resp);
    assert_int_equal(p->leader_epoch, 7);
    assert_int_equal(p->current_voters.n, 3);
    assert_int_equal(p->current_voters.v[0].last_fetch_timestamp, -1); /* not on the wire */
    assert_int_equal(p->current_voters.v[2].log_end_offset, 100);
    kc_arena_free(&a);
    env_free(&e);
}

/* A follower answers NOT_LEADER_OR_FOLLOWER, as a Kafka controller that does not lead (only the
 * leader knows the voters' replication), at every version, and the connection closes after the
 * answer so that the admin client retries on another node. The leader's answers keep it open. */
static void test_follower_answer(void **state)
{
    (void)state;
    env_t e;
    env_init(&e, true);
    kc_arena_t a;
    kc_arena_init(&a);
    kc_describe_quorum_response_t resp;
    leader_status();
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    assert_int_equal(only_partition(&resp)->error_code, KC_ERR_NONE);
    assert_false(last_closed_after);
    follower_status();
    for (int16_t v = 0; v <= 2; v++) {
        assert_true(describe(&e, v, "__cluster_metadata", 0, &a, &resp));
        assert_true(last_closed_after);
        assert_int_equal(resp.error_code, KC_ERR_NONE);
        const kc_describe_quorum_partition_data_t *p = only_partition(&resp);
        assert_int_equal(p->error_code, KC_ERR_NOT_LEADER_OR_FOLLOWER);
        assert_int_equal(p->current_voters.n, 0);
        assert_int_equal(p->observers.n, 0);
        if (v >= 2) {
            assert_true(p->error_message.len > 0);
            assert_int_equal(resp.nodes.n, 0);
        }
    }
    /* Another partition is still unknown on a follower, and keeps the connection. */
    assert_true(describe(&e, 2, "__consumer_offsets", 0, &a, &resp));
    assert_int_equal(resp.topics.v[0].partitions.v[0].error_code,
                     KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_false(last_closed_after);
    kc_arena_free(&a);
    env_free(&e);
}

/* Raft's standbys replicate without voting, as Kafka's observers: they are the observers, in
 * the voters' shape; spares replicate nothing and are not shown; Nodes lists the voters. */
static void test_standbys_are_observers(void **state)
{
    (void)state;
    env_t e;
    env_init(&e, true);
    leader_status();
    fake.n_voters = 5;
    fake.voters[3] = (kc_cluster_voter_t){.id = 4,
                                          .raft_address = "10.0.0.4:9500",
                                          .role = 0,
                                          .match_index = 125,
                                          .last_contact_ms = 5,
                                          .last_caught_up_ms = 5};
    fake.voters[4] = (kc_cluster_voter_t){.id = 5,
                                          .raft_address = "10.0.0.5:9500",
                                          .role = 2,
                                          .match_index = -1,
                                          .last_contact_ms = -1,
                                          .last_caught_up_ms = -1};
    kc_arena_t a;
    kc_arena_init(&a);
    kc_describe_quorum_response_t resp;
    int64_t before = wall_now();
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    int64_t after = wall_now();
    const kc_describe_quorum_partition_data_t *p = only_partition(&resp);
    assert_int_equal(p->current_voters.n, 3);
    assert_int_equal(p->observers.n, 1);
    const kc_describe_quorum_observer_t *o = &p->observers.v[0];
    assert_int_equal(o->replica_id, 4);
    assert_int_equal(o->log_end_offset, 125);
    assert_in_range(o->last_fetch_timestamp, before - 5, after - 5);
    assert_int_equal(o->last_caught_up_timestamp, o->last_fetch_timestamp);
    assert_int_equal(resp.nodes.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(resp.nodes.v[i].node_id, i + 1);
    kc_arena_free(&a);
    env_free(&e);
}

/* Errors as KafkaRaftClient answers them: while no leader is known, NOT_LEADER_OR_FOLLOWER on
 * the partition (the admin client retries it); another topic or partition, or more than one,
 * UNKNOWN_TOPIC_OR_PARTITION on each; the messages from v2 only. */
static void test_partition_errors(void **state)
{
    (void)state;
    env_t e;
    env_init(&e, true);
    leader_status();
    fake.leader = -1;
    fake.raft_state = "candidate";
    kc_arena_t a;
    kc_arena_init(&a);
    kc_describe_quorum_response_t resp;
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    const kc_describe_quorum_partition_data_t *p = only_partition(&resp);
    assert_int_equal(p->error_code, 6);
    assert_true(p->error_message.len > 0);
    assert_int_equal(p->current_voters.n, 0);
    assert_true(describe(&e, 1, "__cluster_metadata", 0, &a, &resp));
    assert_int_equal(only_partition(&resp)->error_code, 6);

    leader_status();
    assert_true(describe(&e, 2, "__consumer_offsets", 0, &a, &resp));
    assert_int_equal(resp.error_code, KC_ERR_NONE);
    assert_int_equal(resp.topics.n, 1);
    assert_true(kc_str_eq_c(resp.topics.v[0].topic_name, "__consumer_offsets"));
    assert_int_equal(resp.topics.v[0].partitions.v[0].error_code,
                     KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_true(describe(&e, 2, "__cluster_metadata", 1, &a, &resp));
    assert_int_equal(resp.topics.v[0].partitions.v[0].partition_index, 1);
    assert_int_equal(resp.topics.v[0].partitions.v[0].error_code,
                     KC_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(resp.nodes.n, 0);
    kc_arena_free(&a);
    env_free(&e);
}

/* CLUSTER DESCRIBE is required once an authorizer is on: a top-level
 * CLUSTER_AUTHORIZATION_FAILED without it, with nothing of the quorum. */
static void test_authorization(void **state)
{
    (void)state;
    env_t e;
    char err[256];
    env_init(&e, true);
    leader_status();
    assert_int_equal(kc_conf_set(&e.conf, "authorizer.class.name",
                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                 KC_CONF_SRC_SET, err, sizeof(err)),
                     0);
    e.ctx.auth = kc_auth_new(&(kc_auth_conf_t){.super_users = "User:admin"});
    assert_non_null(e.ctx.auth);
    kc_arena_t a;
    kc_arena_init(&a);
    kc_describe_quorum_response_t resp;
    status_calls = 0;
    principal = "User:alice";
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    assert_int_equal(resp.error_code, KC_ERR_CLUSTER_AUTHORIZATION_FAILED);
    assert_true(kc_str_eq_c(resp.error_message, "Cluster authorization failed."));
    assert_int_equal(resp.topics.n, 0);
    assert_int_equal(resp.nodes.n, 0);
    assert_int_equal(status_calls, 0);
    principal = "User:admin";
    assert_true(describe(&e, 2, "__cluster_metadata", 0, &a, &resp));
    assert_int_equal(only_partition(&resp)->leader_id, 1);
    principal = "User:ANONYMOUS";
    kc_arena_free(&a);
    env_free(&e);
}

/* ---- The observability views -------------------------------------------------------------- */

static bool has_line(const kc_obs_buf_t *b, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = b->p; p != NULL && (p = strstr(p, line)) != NULL; p++)
        if ((p == b->p || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

/* AddRaftVoter and RemoveRaftVoter: KafkaRaftClient's checks in its order, the change handed
 * to the cluster room with the raft address (the CONTROLLER endpoint) and the client listeners
 * apart, its results as Kafka's errors, and an answer held until the change is over. */
static void test_raft_voter_changes(void **state)
{
    (void)state;
    env_t e;
    char err[256], msg[256];
    env_init(&e, true);
    leader_status();
    fake.role = KC_CLUSTER_LEADER;
    kc_add_raft_voter_listener_t ls[3] = {
        {KC_STR_LIT("PLAINTEXT"), KC_STR_LIT("10.0.0.9"), 9092},
        {KC_STR_LIT("CONTROLLER"), KC_STR_LIT("10.0.0.9"), 9500},
        {KC_STR_LIT("SSL"), KC_STR_LIT("::1"), 9093},
    };
    kc_add_raft_voter_request_t q;
    kc_add_raft_voter_request_init(&q);
    q.cluster_id = KC_STR_LIT(fake_cluster_id);
    q.timeout_ms = 5000;
    q.voter_id = 9;
    q.voter_directory_id.b[15] = 1; /* Uuid.ONE_UUID: AAAAAAAAAAAAAAAAAAAAAQ */
    q.listeners.v = ls;
    q.listeners.n = 3;

    /* Parked until the change is committed; then answered with no error. */
    change_rc = 0;
    change_calls = 0;
    kc_slot_t *slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_null(slot->answer);
    assert_int_equal(change_calls, 1);
    assert_string_equal(change_args, "add 9 AAAAAAAAAAAAAAAAAAAAAQ 10.0.0.9:9500 "
                                     "PLAINTEXT://10.0.0.9:9092,SSL://[::1]:9093 5000");
    change_cb(change_arg, KC_CLUSTER_OK, NULL);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_NONE);
    assert_string_equal(msg, "");
    slot_free(slot);

    /* ... or with REQUEST_TIMED_OUT when it is not committed in time. */
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 0, &q, enc_add_voter);
    change_cb(change_arg, KC_CLUSTER_ETIMEDOUT, "the change is not committed yet");
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_REQUEST_TIMED_OUT);
    slot_free(slot);

    /* The cluster room's refusals. */
    static const struct {
        int rc;
        int16_t err;
        const char *msg;
    } refusals[] = {
        {KC_CLUSTER_EDUPLICATE, KC_ERR_DUPLICATE_VOTER,
         "The voter id for ReplicaKey(id=9, directoryId=AAAAAAAAAAAAAAAAAAAAAQ) is already part "
         "of the set of voters."},
        {KC_CLUSTER_EBUSY, KC_ERR_REQUEST_TIMED_OUT,
         "Request timed out waiting for leader to handle previous voter change request"},
        {KC_CLUSTER_ENOTLEADER, KC_ERR_NOT_LEADER_OR_FOLLOWER, ""},
        {KC_CLUSTER_EINVALID, KC_ERR_INVALID_REQUEST,
         "The new voter's raft address is not host:port"},
    };
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        change_rc = refusals[i].rc;
        slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
        assert_int_equal(change_answer(slot, msg, sizeof(msg)), refusals[i].err);
        assert_string_equal(msg, refusals[i].msg);
        slot_free(slot);
    }

    /* Checks made before the cluster room is asked. */
    change_calls = 0;
    q.cluster_id = KC_STR_LIT("AAAAAAAAAAAAAAAAAAAAAA");
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_INCONSISTENT_CLUSTER_ID);
    assert_string_equal(msg, "The given id \"AAAAAAAAAAAAAAAAAAAAAA\" doesn't match the "
                             "cluster id \"Yk6V2eWURGWVSoJ0ZdlQVA\"");
    slot_free(slot);
    q.cluster_id = KC_STR_NULL; /* no cluster id: not checked */
    q.listeners.n = 1;          /* no CONTROLLER endpoint */
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_INVALID_REQUEST);
    assert_non_null(strstr(msg, "CONTROLLER"));
    slot_free(slot);
    q.listeners.n = 3;
    ls[0].host = KC_STR_LIT("a b"); /* not a host */
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_INVALID_REQUEST);
    slot_free(slot);
    ls[0].host = KC_STR_LIT("10.0.0.9");
    memset(&q.voter_directory_id, 0, sizeof(q.voter_directory_id));
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_INVALID_REQUEST);
    assert_string_equal(msg, "Add voter request didn't include a valid voter");
    slot_free(slot);
    q.voter_directory_id.b[15] = 1;
    fake.role = KC_CLUSTER_FOLLOWER;
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_NOT_LEADER_OR_FOLLOWER);
    slot_free(slot);
    assert_int_equal(change_calls, 0);

    /* RemoveRaftVoter. */
    fake.role = KC_CLUSTER_LEADER;
    kc_remove_raft_voter_request_t rq;
    kc_remove_raft_voter_request_init(&rq);
    rq.cluster_id = KC_STR_NULL;
    rq.voter_id = 3;
    rq.voter_directory_id.b[15] = 1;
    change_rc = KC_CLUSTER_ENOTFOUND;
    slot = send_request(&e, KC_API_REMOVE_RAFT_VOTER, 0, &rq, enc_remove_voter);
    assert_string_equal(change_args, "remove 3 AAAAAAAAAAAAAAAAAAAAAQ");
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_VOTER_NOT_FOUND);
    assert_string_equal(msg, "Cannot remove voter ReplicaKey(id=3, directoryId="
                             "AAAAAAAAAAAAAAAAAAAAAQ) from the set of voters");
    slot_free(slot);
    change_rc = 0;
    slot = send_request(&e, KC_API_REMOVE_RAFT_VOTER, 0, &rq, enc_remove_voter);
    assert_null(slot->answer);
    change_cb(change_arg, KC_CLUSTER_OK, NULL);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_NONE);
    slot_free(slot);

    /* CLUSTER ALTER (ControllerApis), before anything else. */
    assert_int_equal(kc_conf_set(&e.conf, "authorizer.class.name",
                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                 KC_CONF_SRC_SET, err, sizeof(err)),
                     0);
    e.ctx.auth = kc_auth_new(&(kc_auth_conf_t){.super_users = "User:admin"});
    assert_non_null(e.ctx.auth);
    change_calls = 0;
    principal = "User:alice";
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_CLUSTER_AUTHORIZATION_FAILED);
    slot_free(slot);
    slot = send_request(&e, KC_API_REMOVE_RAFT_VOTER, 0, &rq, enc_remove_voter);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_CLUSTER_AUTHORIZATION_FAILED);
    slot_free(slot);
    assert_int_equal(change_calls, 0);
    principal = "User:admin";
    slot = send_request(&e, KC_API_REMOVE_RAFT_VOTER, 0, &rq, enc_remove_voter);
    change_cb(change_arg, KC_CLUSTER_OK, NULL);
    assert_int_equal(change_answer(slot, msg, sizeof(msg)), KC_ERR_NONE);
    slot_free(slot);
    principal = "User:ANONYMOUS";

    /* A single node serves neither: the connection closes. */
    env_free(&e);
    env_init(&e, false);
    slot = send_request(&e, KC_API_ADD_RAFT_VOTER, 1, &q, enc_add_voter);
    assert_true(slot->closed);
    slot_free(slot);
    env_free(&e);
}

static void test_cluster_metrics(void **state)
{
    (void)state;
    kc_obs_buf_t b = {0};
    leader_status();
    kc_obs_render_cluster_metrics(&b, &fake);
    assert_false(b.oom);
    assert_true(has_line(&b, "# TYPE kcoord_cluster_term gauge"));
    assert_true(has_line(&b, "kcoord_cluster_term 7"));
    assert_true(has_line(&b, "kcoord_cluster_leader 1"));
    assert_true(has_line(&b, "kcoord_cluster_is_leader 1"));
    assert_true(has_line(&b, "kcoord_cluster_commit_index 120"));
    assert_true(has_line(&b, "kcoord_cluster_applied_index 119"));
    assert_true(has_line(&b, "kcoord_cluster_last_index 125"));
    assert_true(has_line(&b, "kcoord_cluster_servers{role=\"voter\"} 3"));
    assert_true(has_line(&b, "kcoord_cluster_servers{role=\"spare\"} 0"));
    assert_true(has_line(&b, "kcoord_cluster_follower_lag_entries{node=\"2\"} 0"));
    assert_true(has_line(&b, "kcoord_cluster_follower_lag_entries{node=\"3\"} 25"));
    assert_null(strstr(b.p, "node=\"1\""));
    assert_true(has_line(&b, "# TYPE kcoord_cluster_elections_total counter"));
    assert_true(has_line(&b, "kcoord_cluster_elections_total 2"));
    assert_true(has_line(&b, "kcoord_cluster_leadership_changes_total 3"));
    assert_true(has_line(&b, "kcoord_cluster_snapshots_total{kind=\"taken\"} 4"));
    assert_true(has_line(&b, "kcoord_cluster_snapshots_total{kind=\"restored\"} 1"));
    kc_obs_buf_free(&b);

    /* A follower: not the leader, no lag it could know. */
    memset(&b, 0, sizeof(b));
    follower_status();
    kc_obs_render_cluster_metrics(&b, &fake);
    assert_true(has_line(&b, "kcoord_cluster_is_leader 0"));
    assert_true(has_line(&b, "kcoord_cluster_leader 1"));
    assert_null(strstr(b.p, "kcoord_cluster_follower_lag_entries{"));
    kc_obs_buf_free(&b);

    memset(&b, 0, sizeof(b));
    fake.leader = -1;
    kc_obs_render_cluster_metrics(&b, &fake);
    assert_true(has_line(&b, "kcoord_cluster_leader -1"));
    kc_obs_buf_free(&b);
}

static void test_cluster_json(void **state)
{
    (void)state;
    kc_obs_buf_t b = {0};
    leader_status();
    snprintf(fake.voters[2].raft_address, sizeof(fake.voters[2].raft_address), "host\"3\":9500");
    kc_obs_cluster_json(&b, &fake);
    assert_false(b.oom);
    assert_true(json_valid(b.p, b.len));
    assert_non_null(strstr(b.p, "{\"self\":1,\"leader\":1,\"is_leader\":true,\"role\":\"leader\","
                                "\"raft_state\":\"leader\",\"term\":7,\"commit_index\":120,"
                                "\"applied_index\":119,\"last_index\":125,\"elections\":2,"
                                "\"leadership_changes\":3,\"snapshots\":{\"taken\":4,"
                                "\"restored\":1},\"voters\":["));
    assert_non_null(strstr(b.p, "{\"id\":2,\"raft_address\":\"10.0.0.2:9500\","
                                "\"directory_id\":\"_____________________w\",\"role\":\"voter\","
                                "\"self\":false,\"leader\":false,\"match_index\":125,"
                                "\"lag_entries\":0,\"last_contact_ms\":40}"));
    assert_non_null(strstr(b.p, "\"raft_address\":\"host\\\"3\\\":9500\",\"directory_id\":null"));
    assert_non_null(
        strstr(b.p, "\"match_index\":100,\"lag_entries\":25,\"last_contact_ms\":null}"));
    kc_obs_buf_free(&b);

    memset(&b, 0, sizeof(b));
    follower_status();
    fake.leader = -1;
    fake.raft_state = "candidate";
    kc_obs_cluster_json(&b, &fake);
    assert_true(json_valid(b.p, b.len));
    assert_non_null(strstr(b.p, "{\"self\":2,\"leader\":null,\"is_leader\":false,"
                                "\"role\":\"follower\",\"raft_state\":\"candidate\""));
    assert_non_null(strstr(b.p, "\"match_index\":null,\"lag_entries\":null"));
    kc_obs_buf_free(&b);
}

static void test_cluster_ready(void **state)
{
    (void)state;
    kc_obs_buf_t b = {0};
    leader_status();
    assert_true(kc_obs_cluster_ready(&b, &fake));
    assert_int_equal(b.len, 0);
    follower_status();
    assert_true(kc_obs_cluster_ready(&b, &fake));
    fake.leader = -1;
    fake.raft_state = "candidate";
    fake.term = 9;
    assert_false(kc_obs_cluster_ready(&b, &fake));
    assert_non_null(strstr(b.p, "not ready: node 2 is a member of a cluster with no known leader "
                                "(raft state candidate, term 9)"));
    kc_obs_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_node_has_no_quorum),
        cmocka_unit_test(test_leader_answer),
        cmocka_unit_test(test_follower_answer),
        cmocka_unit_test(test_standbys_are_observers),
        cmocka_unit_test(test_partition_errors),
        cmocka_unit_test(test_authorization),
        cmocka_unit_test(test_raft_voter_changes),
        cmocka_unit_test(test_cluster_metrics),
        cmocka_unit_test(test_cluster_json),
        cmocka_unit_test(test_cluster_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
