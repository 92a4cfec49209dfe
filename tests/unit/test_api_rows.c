/* test_api_rows.c - the served-API rows and the error functions generated from proto/.
 *
 * Coverage: for every API response at every version, a sample (tests/unit/gen_fill.c, which
 * counts the error_code fields it fills) gets one error everywhere from set_errors and from
 * fail; the generated walker must then see that error and nothing else, exactly as many times
 * as there are error_code fields, and the encodings with two different errors must differ in
 * exactly two bytes per field (so every error field on the wire is reached).
 *
 * Behaviour kept: the hand-written kc_api_fail and metrics walker that the generated code
 * replaced are kept below, unchanged, as references. On the same samples the new kc_api_fail
 * must encode the same bytes as the old one for every API the old one handled, and the new
 * kc_obs_response must count the same errors (and the same stored offsets) as the old one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"
#include "obs/metrics.h"

void kc_fill_sample(const kc_codec_t *c, void *m, kc_arena_t *a, int16_t v, uint32_t seed);
extern size_t kc_fill_error_fields;

enum { SEEDS = 16 };

/* ---- The references: kc_api_fail and the metrics walker as they were written by hand ------ */

static int fail_offset_commit(kc_offset_commit_response_t *r, const kc_offset_commit_request_t *q,
                              int16_t err, kc_arena_t *a)
{
    /* An empty response gets the request's topics and partitions, each with the error. */
    if (r->topics.n <= 0 && q != NULL && q->topics.n > 0) {
        kc_offset_commit_response_topic_t *t = kc_arena_alloc(a, (size_t)q->topics.n * sizeof(*t));
        if (t == NULL)
            return -1;
        for (int32_t i = 0; i < q->topics.n; i++) {
            const kc_offset_commit_request_topic_t *qt = &q->topics.v[i];
            t[i].name = qt->name;
            t[i].topic_id = qt->topic_id;
            int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
            t[i].partitions.v =
                np ? kc_arena_alloc(a, (size_t)np * sizeof(*t[i].partitions.v)) : NULL;
            if (np && t[i].partitions.v == NULL)
                return -1;
            t[i].partitions.n = np;
            for (int32_t j = 0; j < np; j++)
                t[i].partitions.v[j].partition_index = qt->partitions.v[j].partition_index;
        }
        r->topics.v = t;
        r->topics.n = q->topics.n;
    }
    for (int32_t i = 0; i < r->topics.n; i++)
        for (int32_t j = 0; j < r->topics.v[i].partitions.n; j++)
            r->topics.v[i].partitions.v[j].error_code = err;
    return 0;
}

static void fail_offset_fetch(kc_offset_fetch_response_t *r, const kc_offset_fetch_request_t *q,
                              int16_t version, int16_t err, kc_arena_t *a)
{
    r->error_code = err;
    if (version >= 8 && r->groups.n <= 0 && q != NULL && q->groups.n > 0) {
        kc_offset_fetch_response_group_t *g = kc_arena_alloc(a, (size_t)q->groups.n * sizeof(*g));
        if (g != NULL) {
            for (int32_t i = 0; i < q->groups.n; i++)
                g[i].group_id = q->groups.v[i].group_id;
            r->groups.v = g;
            r->groups.n = q->groups.n;
        }
    }
    for (int32_t i = 0; i < r->groups.n; i++) {
        r->groups.v[i].error_code = err;
        r->groups.v[i].topics.n = 0;
    }
    /* Before v2 the only place for an error is each partition. */
    for (int32_t i = 0; i < r->topics.n; i++)
        for (int32_t j = 0; j < r->topics.v[i].partitions.n; j++)
            r->topics.v[i].partitions.v[j].error_code = err;
    if (version >= 2)
        r->topics.n = 0;
}

static int old_fail(const kc_api_call_t *call, const void *request, void *resp, int16_t err,
                    kc_arena_t *a)
{
    switch (call->api->key) {
    case KC_API_JOIN_GROUP: {
        kc_join_group_response_t *r = resp;
        r->error_code = err;
        r->members.n = 0;
        r->generation_id = -1;
        break;
    }
    case KC_API_SYNC_GROUP: {
        kc_sync_group_response_t *r = resp;
        r->error_code = err;
        r->assignment = (kc_bytes_t){(const uint8_t *)"", 0};
        break;
    }
    case KC_API_HEARTBEAT:
        ((kc_heartbeat_response_t *)resp)->error_code = err;
        break;
    case KC_API_LEAVE_GROUP: {
        kc_leave_group_response_t *r = resp;
        r->error_code = err;
        r->members.n = 0;
        break;
    }
    case KC_API_OFFSET_COMMIT:
        return fail_offset_commit(resp, request, err, a);
    case KC_API_OFFSET_FETCH:
        fail_offset_fetch(resp, request, call->version, err, a);
        break;
    case KC_API_OFFSET_DELETE: {
        kc_offset_delete_response_t *r = resp;
        r->error_code = err;
        r->topics.n = 0;
        break;
    }
    case KC_API_DELETE_GROUPS: {
        kc_delete_groups_response_t *r = resp;
        for (int32_t i = 0; i < r->results.n; i++)
            r->results.v[i].error_code = err;
        break;
    }
    case KC_API_LIST_GROUPS: {
        kc_list_groups_response_t *r = resp;
        r->error_code = err;
        r->groups.n = 0;
        break;
    }
    case KC_API_CONSUMER_GROUP_HEARTBEAT: {
        /* Kafka's error answer: the code and nothing else (no member, no assignment). */
        kc_consumer_group_heartbeat_response_t *r = resp;
        kc_consumer_group_heartbeat_response_init(r);
        r->error_code = err;
        break;
    }
    case KC_API_CONSUMER_GROUP_DESCRIBE: {
        kc_consumer_group_describe_response_t *r = resp;
        for (int32_t i = 0; i < r->groups.n; i++) {
            r->groups.v[i].error_code = err;
            r->groups.v[i].members.n = 0;
        }
        break;
    }
    default:
        break;
    }
    return 0;
}

/* Count the error codes of an array of structs that have an `error_code` member. */
#define COUNT_EACH(key, arr)                                                                       \
    do {                                                                                           \
        for (int32_t i_ = 0; i_ < (arr).n; i_++)                                                   \
            kc_obs_error((key), (arr).v[i_].error_code);                                           \
    } while (0)

static uint32_t offset_commit(const kc_offset_commit_response_t *r)
{
    uint32_t ok = 0;
    for (int32_t i = 0; i < r->topics.n; i++) {
        for (int32_t j = 0; j < r->topics.v[i].partitions.n; j++) {
            int16_t e = r->topics.v[i].partitions.v[j].error_code;
            if (e == 0)
                ok++;
            else
                kc_obs_error(KC_API_OFFSET_COMMIT, e);
        }
    }
    return ok;
}

static void offset_fetch(const kc_offset_fetch_response_t *r, int16_t version)
{
    const int16_t k = KC_API_OFFSET_FETCH;
    if (version >= 8) {
        for (int32_t i = 0; i < r->groups.n; i++) {
            kc_obs_error(k, r->groups.v[i].error_code);
            for (int32_t j = 0; j < r->groups.v[i].topics.n; j++)
                COUNT_EACH(k, r->groups.v[i].topics.v[j].partitions);
        }
        return;
    }
    if (version >= 2)
        kc_obs_error(k, r->error_code);
    for (int32_t i = 0; i < r->topics.n; i++)
        COUNT_EACH(k, r->topics.v[i].partitions);
}

static uint32_t old_walk(int16_t key, int16_t version, const void *resp)
{
    switch (key) {
    case KC_API_PRODUCE: {
        const kc_produce_response_t *r = resp;
        for (int32_t i = 0; i < r->responses.n; i++)
            COUNT_EACH(key, r->responses.v[i].partition_responses);
        break;
    }
    case KC_API_FETCH: {
        const kc_fetch_response_t *r = resp;
        kc_obs_error(key, r->error_code);
        for (int32_t i = 0; i < r->responses.n; i++)
            COUNT_EACH(key, r->responses.v[i].partitions);
        break;
    }
    case KC_API_LIST_OFFSETS: {
        const kc_list_offsets_response_t *r = resp;
        for (int32_t i = 0; i < r->topics.n; i++)
            COUNT_EACH(key, r->topics.v[i].partitions);
        break;
    }
    case KC_API_METADATA: {
        const kc_metadata_response_t *r = resp;
        kc_obs_error(key, r->error_code);
        COUNT_EACH(key, r->topics);
        break;
    }
    case KC_API_OFFSET_COMMIT:
        return offset_commit(resp);
    case KC_API_OFFSET_FETCH:
        offset_fetch(resp, version);
        break;
    case KC_API_FIND_COORDINATOR: {
        const kc_find_coordinator_response_t *r = resp;
        if (version >= 4)
            COUNT_EACH(key, r->coordinators);
        else
            kc_obs_error(key, r->error_code);
        break;
    }
    case KC_API_JOIN_GROUP:
        kc_obs_error(key, ((const kc_join_group_response_t *)resp)->error_code);
        break;
    case KC_API_HEARTBEAT:
        kc_obs_error(key, ((const kc_heartbeat_response_t *)resp)->error_code);
        break;
    case KC_API_LEAVE_GROUP: {
        const kc_leave_group_response_t *r = resp;
        kc_obs_error(key, r->error_code);
        COUNT_EACH(key, r->members);
        break;
    }
    case KC_API_SYNC_GROUP:
        kc_obs_error(key, ((const kc_sync_group_response_t *)resp)->error_code);
        break;
    case KC_API_DESCRIBE_GROUPS:
        COUNT_EACH(key, ((const kc_describe_groups_response_t *)resp)->groups);
        break;
    case KC_API_LIST_GROUPS:
        kc_obs_error(key, ((const kc_list_groups_response_t *)resp)->error_code);
        break;
    case KC_API_API_VERSIONS:
        kc_obs_error(key, ((const kc_api_versions_response_t *)resp)->error_code);
        break;
    case KC_API_CREATE_TOPICS:
        COUNT_EACH(key, ((const kc_create_topics_response_t *)resp)->topics);
        break;
    case KC_API_DELETE_TOPICS:
        COUNT_EACH(key, ((const kc_delete_topics_response_t *)resp)->responses);
        break;
    case KC_API_DELETE_GROUPS:
        COUNT_EACH(key, ((const kc_delete_groups_response_t *)resp)->results);
        break;
    case KC_API_OFFSET_DELETE: {
        const kc_offset_delete_response_t *r = resp;
        kc_obs_error(key, r->error_code);
        for (int32_t i = 0; i < r->topics.n; i++)
            COUNT_EACH(key, r->topics.v[i].partitions);
        break;
    }
    case KC_API_DESCRIBE_CLUSTER:
        kc_obs_error(key, ((const kc_describe_cluster_response_t *)resp)->error_code);
        break;
    case KC_API_CONSUMER_GROUP_HEARTBEAT:
        kc_obs_error(key, ((const kc_consumer_group_heartbeat_response_t *)resp)->error_code);
        break;
    case KC_API_CONSUMER_GROUP_DESCRIBE:
        COUNT_EACH(key, ((const kc_consumer_group_describe_response_t *)resp)->groups);
        break;
    case KC_API_DESCRIBE_CONFIGS:
        COUNT_EACH(key, ((const kc_describe_configs_response_t *)resp)->results);
        break;
    case KC_API_INCREMENTAL_ALTER_CONFIGS:
        COUNT_EACH(key, ((const kc_incremental_alter_configs_response_t *)resp)->responses);
        break;
    case KC_API_LIST_CONFIG_RESOURCES:
        kc_obs_error(key, ((const kc_list_config_resources_response_t *)resp)->error_code);
        break;
    case KC_API_DESCRIBE_ACLS:
        kc_obs_error(key, ((const kc_describe_acls_response_t *)resp)->error_code);
        break;
    case KC_API_CREATE_ACLS:
        COUNT_EACH(key, ((const kc_create_acls_response_t *)resp)->results);
        break;
    case KC_API_DELETE_ACLS: {
        const kc_delete_acls_response_t *r = resp;
        for (int32_t i = 0; i < r->filter_results.n; i++) {
            kc_obs_error(key, r->filter_results.v[i].error_code);
            COUNT_EACH(key, r->filter_results.v[i].matching_acls);
        }
        break;
    }
    case KC_API_SASL_HANDSHAKE:
        kc_obs_error(key, ((const kc_sasl_handshake_response_t *)resp)->error_code);
        break;
    case KC_API_SASL_AUTHENTICATE:
        kc_obs_error(key, ((const kc_sasl_authenticate_response_t *)resp)->error_code);
        break;
    case KC_API_DESCRIBE_USER_SCRAM_CREDENTIALS: {
        const kc_describe_user_scram_credentials_response_t *r = resp;
        kc_obs_error(key, r->error_code);
        COUNT_EACH(key, r->results);
        break;
    }
    case KC_API_DESCRIBE_CLIENT_QUOTAS:
        kc_obs_error(key, ((const kc_describe_client_quotas_response_t *)resp)->error_code);
        break;
    case KC_API_ALTER_USER_SCRAM_CREDENTIALS:
        COUNT_EACH(key, ((const kc_alter_user_scram_credentials_response_t *)resp)->results);
        break;
    case KC_API_DESCRIBE_QUORUM: {
        const kc_describe_quorum_response_t *r = resp;
        kc_obs_error(key, r->error_code);
        for (int32_t i = 0; i < r->topics.n; i++)
            COUNT_EACH(key, r->topics.v[i].partitions);
        break;
    }
    case KC_API_ADD_RAFT_VOTER:
        kc_obs_error(key, ((const kc_add_raft_voter_response_t *)resp)->error_code);
        break;
    case KC_API_REMOVE_RAFT_VOTER:
        kc_obs_error(key, ((const kc_remove_raft_voter_response_t *)resp)->error_code);
        break;
    default:
        break;
    }
    return 0;
}

/* ---- Helpers ------------------------------------------------------------------------------- */

/* Encode response `m` of `api` at `v` into a fresh writer (the caller frees it). */
static kc_writer_t encode(const kc_api_info_t *api, int16_t v, const void *m)
{
    kc_writer_t w;
    kc_wr_init(&w);
    api->response.encode(&w, v, m);
    assert_int_equal(w.err, 0);
    return w;
}

typedef struct seen_s {
    int16_t want;
    size_t n, wrong;
} seen_t;

static void see(void *arg, int16_t code)
{
    seen_t *s = arg;
    s->n++;
    if (code != s->want)
        s->wrong++;
}

/* Walk `m` and check that it holds `err` in exactly `n` places. */
static void expect_everywhere(const kc_api_info_t *api, int16_t v, uint32_t seed, const void *m,
                              int16_t err, size_t n)
{
    seen_t s = {.want = err};
    size_t counted = api->walk_errors(m, v, see, &s);
    if (s.wrong != 0 || s.n != n || counted != n)
        fail_msg("%s v%d seed %u: walked %zu codes (returned %zu), %zu not %d; %zu fields",
                 api->name, v, seed, s.n, counted, s.wrong, err, n);
}

/* ---- Coverage ---------------------------------------------------------------------------- */

static void test_generated_errors_cover_every_field(void **state)
{
    (void)state;
    size_t fields = 0;
    for (size_t i = 0; i < kc_api_count; i++) {
        const kc_api_info_t *api = &kc_api_table[i];
        for (int16_t v = api->min_version; v <= api->max_version; v++) {
            for (uint32_t seed = 1; seed <= SEEDS; seed++) {
                kc_arena_t a;
                kc_arena_init(&a);
                void *m = kc_arena_alloc(&a, api->response.struct_size);
                assert_non_null(m);
                kc_fill_error_fields = 0;
                kc_fill_sample(&api->response, m, &a, v, seed);
                size_t n = kc_fill_error_fields;
                fields += n;

                api->set_errors(m, v, 0x1234);
                expect_everywhere(api, v, seed, m, 0x1234, n);
                kc_writer_t w1 = encode(api, v, m);
                api->set_errors(m, v, 0x2143);
                expect_everywhere(api, v, seed, m, 0x2143, n);
                kc_writer_t w2 = encode(api, v, m);
                assert_int_equal(w1.len, w2.len);
                size_t differ = 0;
                for (size_t b = 0; b < w1.len; b++)
                    differ += w1.buf[b] != w2.buf[b];
                if (differ != 2 * n)
                    fail_msg("%s v%d seed %u: %zu bytes moved with the error, %zu fields",
                             api->name, v, seed, differ, n);
                kc_wr_free(&w1);
                kc_wr_free(&w2);

                /* fail: resets what must not go out with an error, then sets every code. */
                api->fail_response(m, v, KC_ERR_NOT_COORDINATOR);
                seen_t s = {.want = KC_ERR_NOT_COORDINATOR};
                api->walk_errors(m, v, see, &s);
                assert_int_equal(s.wrong, 0);
                kc_arena_free(&a);
            }
        }
    }
    print_message("error fields filled and checked: %zu\n", fields);
    assert_true(fields > 1000);
}

/* ---- kc_api_fail: the same bytes as before --------------------------------------------- */

/* The APIs the hand-written kc_api_fail answered (for the others it did nothing, and nothing
 * calls it for them). */
static const int16_t fail_keys[] = {
    KC_API_JOIN_GROUP,
    KC_API_SYNC_GROUP,
    KC_API_HEARTBEAT,
    KC_API_LEAVE_GROUP,
    KC_API_OFFSET_COMMIT,
    KC_API_OFFSET_FETCH,
    KC_API_OFFSET_DELETE,
    KC_API_DELETE_GROUPS,
    KC_API_LIST_GROUPS,
    KC_API_CONSUMER_GROUP_HEARTBEAT,
    KC_API_CONSUMER_GROUP_DESCRIBE,
};

/* Fail a response of `api` at `v` both ways, starting from a sample (`empty` 0) or from an
 * initialised response (`empty` 1) with a sample request, and compare the encodings. */
static void fail_both_ways(const kc_api_info_t *api, int16_t v, uint32_t seed, int empty)
{
    kc_arena_t a;
    kc_arena_init(&a);
    void *q = kc_arena_alloc(&a, api->request.struct_size);
    void *m_old = kc_arena_alloc(&a, api->response.struct_size);
    void *m_new = kc_arena_alloc(&a, api->response.struct_size);
    assert_non_null(q);
    assert_non_null(m_old);
    assert_non_null(m_new);
    kc_fill_sample(&api->request, q, &a, v, seed);
    if (empty) {
        api->response.init(m_old);
        api->response.init(m_new);
    } else {
        kc_fill_sample(&api->response, m_old, &a, v, seed);
        kc_fill_sample(&api->response, m_new, &a, v, seed);
    }
    kc_api_call_t call = {.api = api, .version = v};
    int16_t err = seed & 1 ? KC_ERR_NOT_COORDINATOR : KC_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    assert_int_equal(old_fail(&call, q, m_old, err, &a), 0);
    assert_int_equal(kc_api_fail(&call, q, m_new, err, &a), 0);
    kc_writer_t w_old = encode(api, v, m_old);
    kc_writer_t w_new = encode(api, v, m_new);
    if (w_old.len != w_new.len || (w_old.len > 0 && memcmp(w_old.buf, w_new.buf, w_old.len) != 0))
        fail_msg("%s v%d seed %u%s: kc_api_fail encodes %zu bytes, the old one %zu, differing",
                 api->name, v, seed, empty ? " (empty)" : "", w_new.len, w_old.len);
    kc_wr_free(&w_old);
    kc_wr_free(&w_new);
    kc_arena_free(&a);
}

static void test_fail_answers_as_before(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(fail_keys) / sizeof(fail_keys[0]); k++) {
        const kc_api_info_t *api = kc_api_find(fail_keys[k]);
        assert_non_null(api);
        for (int16_t v = api->min_version; v <= api->max_version; v++)
            for (uint32_t seed = 1; seed <= SEEDS; seed++)
                for (int empty = 0; empty <= 1; empty++)
                    fail_both_ways(api, v, seed, empty);
    }
}

/* ---- Metrics: the same counts as before -------------------------------------------------- */

/* kcoord answers every Metadata partition with error 0 (the old walker did not look there). */
static void metadata_partitions_ok(kc_metadata_response_t *r)
{
    for (int32_t i = 0; i < r->topics.n; i++)
        for (int32_t j = 0; j < r->topics.v[i].partitions.n; j++)
            r->topics.v[i].partitions.v[j].error_code = 0;
}

static void test_metrics_count_as_before(void **state)
{
    (void)state;
    static uint64_t before[KC_OBS_ERRS];
    uint64_t counted = 0;
    for (size_t i = 0; i < kc_api_count; i++) {
        const kc_api_info_t *api = &kc_api_table[i];
        int slot = kc_obs_api_slot(api->key);
        assert_true(slot >= 0);
        for (int16_t v = api->min_version; v <= api->max_version; v++) {
            for (uint32_t seed = 1; seed <= SEEDS; seed++) {
                kc_arena_t a;
                kc_arena_init(&a);
                void *m = kc_arena_alloc(&a, api->response.struct_size);
                kc_fill_sample(&api->response, m, &a, v, seed);
                /* The sample's codes are mostly outside what is counted: use one that is
                 * (or 0, no error, now and then, for OffsetCommit's stored offsets). */
                api->set_errors(m, v, seed % 5 == 0 ? 0 : (int16_t)(seed * 11 % 180 + 1));
                if (api->key == KC_API_METADATA)
                    metadata_partitions_ok(m);
                memset(&kc_obs, 0, sizeof(kc_obs));
                uint32_t ok_old = old_walk(api->key, v, m);
                memcpy(before, kc_obs.errors[slot], sizeof(before));
                memset(&kc_obs, 0, sizeof(kc_obs));
                uint32_t ok_new = kc_obs_response(api->key, v, m);
                assert_int_equal(ok_new, ok_old);
                if (memcmp(before, kc_obs.errors[slot], sizeof(before)) != 0)
                    fail_msg("%s v%d seed %u: error counts differ from the old walker", api->name,
                             v, seed);
                for (int c = 0; c < KC_OBS_ERRS; c++)
                    counted += before[c];
                kc_arena_free(&a);
            }
        }
    }
    memset(&kc_obs, 0, sizeof(kc_obs));
    print_message("errors counted alike: %llu\n", (unsigned long long)counted);
    assert_true(counted > 1000);
}

/* LeaveGroup below v3 carries one member's error at the top level only; the member list the
 * group manager also fills is not on the wire. The old walker counted that error twice, the
 * generated one counts what the client reads: once. */
static void test_leave_group_v0_2_counts_once(void **state)
{
    (void)state;
    kc_member_response_t member = {.error_code = KC_ERR_UNKNOWN_MEMBER_ID};
    kc_leave_group_response_t r;
    kc_leave_group_response_init(&r);
    r.error_code = KC_ERR_UNKNOWN_MEMBER_ID;
    r.members.v = &member;
    r.members.n = 1;
    int slot = kc_obs_api_slot(KC_API_LEAVE_GROUP);
    for (int16_t v = 0; v <= 5; v++) {
        memset(&kc_obs, 0, sizeof(kc_obs));
        kc_obs_response(KC_API_LEAVE_GROUP, v, &r);
        assert_int_equal(kc_obs.errors[slot][KC_ERR_UNKNOWN_MEMBER_ID + 1], v < 3 ? 1 : 2);
    }
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- The rows ------------------------------------------------------------------------------ */

static void test_rows_serve_and_advertise(void **state)
{
    (void)state;
    /* Every API proto/ defines is served today, in every version it defines, and ApiVersions
     * advertises exactly those, in key order. */
    kc_arena_t a;
    kc_arena_init(&a);
    kc_api_versions_response_t resp;
    kc_api_versions_response_init(&resp);
    kc_api_fill_versions(&resp, &a);
    assert_int_equal(resp.api_keys.n, (int32_t)kc_api_count);
    for (size_t i = 0; i < kc_api_count; i++) {
        const kc_api_info_t *api = &kc_api_table[i];
        assert_int_equal(resp.api_keys.v[i].api_key, api->key);
        assert_int_equal(resp.api_keys.v[i].min_version, api->min_version);
        assert_int_equal(resp.api_keys.v[i].max_version, api->max_version);
        assert_false(kc_api_served(api->key, (int16_t)(api->min_version - 1)));
        for (int16_t v = api->min_version; v <= api->max_version; v++)
            assert_true(kc_api_served(api->key, v));
        assert_false(kc_api_served(api->key, (int16_t)(api->max_version + 1)));
    }
    assert_false(kc_api_served(4, 0)); /* LeaderAndIsr: not defined, not served */
    assert_false(kc_api_served(-1, 0));
    kc_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_serve_and_advertise),
        cmocka_unit_test(test_generated_errors_cover_every_field),
        cmocka_unit_test(test_fail_answers_as_before),
        cmocka_unit_test(test_metrics_count_as_before),
        cmocka_unit_test(test_leave_group_v0_2_counts_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
