/* fail.c - turn any response into a whole-request error.
 *
 * When a partition cannot answer (still loading, not served, or its write failed), the
 * request gets the same error everywhere the response has an error field, as Kafka's
 * coordinator answers: the top-level code where there is one, and every per-partition,
 * per-group or per-member code. Where those fields are, and which fields must not reach a
 * client with an error (a JoinGroup's members, a SyncGroup's assignment...), is generated from
 * proto/: the API table's `fail_response` (fields named error_code, and those marked `failreset`).
 *
 * What stays here is what proto/ cannot say: the answers a client reads per requested entry
 * are built from the request when the response is still empty (OffsetCommit's partitions,
 * which a client would otherwise read as committed, and OffsetFetch's groups from v8).
 * kc_api_fail works on a response that is empty (just initialised) or already filled.
 */
#include "api/api.h"

/* An empty OffsetCommit answer gets the request's topics and partitions. 0, or -1 when out of
 * memory: the response then lacks some requested partition, so it must not be sent. */
static int offset_commit_entries(kc_offset_commit_response_t *r,
                                 const kc_offset_commit_request_t *q, kc_arena_t *a)
{
    if (r->topics.n > 0 || q == NULL || q->topics.n <= 0)
        return 0;
    kc_offset_commit_response_topic_t *t = kc_arena_alloc(a, (size_t)q->topics.n * sizeof(*t));
    if (t == NULL)
        return -1;
    for (int32_t i = 0; i < q->topics.n; i++) {
        const kc_offset_commit_request_topic_t *qt = &q->topics.v[i];
        t[i].name = qt->name;
        t[i].topic_id = qt->topic_id;
        int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
        t[i].partitions.v = np ? kc_arena_alloc(a, (size_t)np * sizeof(*t[i].partitions.v)) : NULL;
        if (np && t[i].partitions.v == NULL)
            return -1;
        t[i].partitions.n = np;
        for (int32_t j = 0; j < np; j++)
            t[i].partitions.v[j].partition_index = qt->partitions.v[j].partition_index;
    }
    r->topics.v = t;
    r->topics.n = q->topics.n;
    return 0;
}

/* An empty OffsetFetch answer (v8+) gets one entry per requested group; out of memory, it
 * lists no group. */
static void offset_fetch_entries(kc_offset_fetch_response_t *r, const kc_offset_fetch_request_t *q,
                                 int16_t version, kc_arena_t *a)
{
    if (version < 8 || r->groups.n > 0 || q == NULL || q->groups.n <= 0)
        return;
    kc_offset_fetch_response_group_t *g = kc_arena_alloc(a, (size_t)q->groups.n * sizeof(*g));
    if (g == NULL)
        return;
    for (int32_t i = 0; i < q->groups.n; i++)
        g[i].group_id = q->groups.v[i].group_id;
    r->groups.v = g;
    r->groups.n = q->groups.n;
}

int kc_api_fail(const kc_api_call_t *call, const void *request, void *resp, int16_t err,
                kc_arena_t *a)
{
    if (call->api->key == KC_API_OFFSET_COMMIT && offset_commit_entries(resp, request, a) != 0)
        return -1;
    if (call->api->key == KC_API_OFFSET_FETCH)
        offset_fetch_entries(resp, request, call->version, a);
    call->api->fail_response(resp, call->version, err);
    return 0;
}
