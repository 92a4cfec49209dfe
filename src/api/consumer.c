/* consumer.c - the KIP-848 consumer group APIs: ConsumerGroupHeartbeat and
 * ConsumerGroupDescribe.
 *
 * A heartbeat is checked first (Kafka's GroupCoordinatorService validates the request before it
 * looks for the group's partition), then handed to the shard (coord.h) of the partition that
 * owns the group, which answers at once; the answer waits until the records it caused are
 * durable (the waits-for-log flag of its row in proto/apis.kdef). ConsumerGroupDescribe reads
 * every partition the request names.
 */
#include "api/api.h"

int kc_api_consumer_group_heartbeat(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                    kc_arena_t *a, void *out)
{
    const kc_consumer_group_heartbeat_request_t *q = req->body;
    kc_consumer_group_heartbeat_response_t *resp = out;
    kc_str_t message;
    int16_t err =
        kc_shard_consumer_check(ctx->conf->group_consumer_assignors, call->version, q, a, &message);
    if (err != KC_ERR_NONE) {
        resp->error_code = err;
        resp->error_message = message;
        return KC_API_DONE;
    }
    kc_partition_t *p = kc_api_partition(ctx, call, q->group_id, &err);
    if (p == NULL) {
        kc_api_fail(call, q, out, err, a);
        return KC_API_DONE;
    }
    kc_shard_consumer_heartbeat(p, kc_coord_time(ctx->coord), call->version, q, req->client_id,
                                call->client_host, a, resp);
    return KC_API_DONE;
}

int kc_api_consumer_group_describe(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                   kc_arena_t *a, void *out)
{
    const kc_consumer_group_describe_request_t *q = req->body;
    kc_consumer_group_describe_response_t *resp = out;
    int32_t n = q->group_ids.n > 0 ? q->group_ids.n : 0;
    kc_consumer_group_describe_described_group_t *v =
        n ? kc_arena_alloc(a, (size_t)n * sizeof(*v)) : NULL;
    if (n && v == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < n; i++) {
        kc_str_t id = q->group_ids.v[i];
        int16_t err;
        kc_partition_t *p = kc_api_partition(ctx, call, id, &err);
        if (p == NULL) {
            /* v[i] is zeroed: empty strings, no members. */
            v[i].group_id = id.len >= 0 ? id : KC_STR_EMPTY;
            v[i].error_code = err;
            v[i].error_message = KC_STR_NULL;
            v[i].group_state = KC_STR_EMPTY;
            v[i].assignor_name = KC_STR_EMPTY;
            v[i].authorized_operations = INT32_MIN;
            continue;
        }
        kc_shard_consumer_describe(p, call->version, id, q->include_authorized_operations, a,
                                   &v[i]);
    }
    resp->groups.v = v;
    resp->groups.n = n;
    return KC_API_DONE;
}
