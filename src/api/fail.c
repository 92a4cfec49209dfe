/* fail.c - turn any group or offset response into a whole-request error.
 *
 * When a partition cannot answer (still loading, not served, or its write failed), the
 * request gets the same error everywhere the response has an error field, as Kafka's
 * coordinator answers: the top-level code where there is one, and every per-partition,
 * per-group or per-member code. kc_api_fail works on a response that is empty (just
 * initialised) or already filled; it clears nothing that carries data, except the member list
 * of a JoinGroup and the assignment of a SyncGroup, which must not reach a client with an
 * error.
 */
#include "api/api.h"

/* 0, or -1 when out of memory: the response then lacks some requested partition, which a
 * client could read as committed, so it must not be sent. */
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

int kc_api_fail(const kc_api_call_t *call, const void *request, void *resp, int16_t err,
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
