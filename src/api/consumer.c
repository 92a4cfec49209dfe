/* consumer.c - the KIP-848 consumer group APIs: ConsumerGroupHeartbeat and
 * ConsumerGroupDescribe.
 *
 * A heartbeat is checked first (Kafka's GroupCoordinatorService validates the request before it
 * looks for the group's partition), then handed to the shard (coord.h) of the partition that
 * owns the group, which answers at once; the answer waits until the records it caused are
 * durable (the waits-for-log flag of its row in proto/apis.kdef). ConsumerGroupDescribe reads
 * every partition the request names.
 */
#include <stdbool.h>

#include "api/api.h"

/* Whether the heartbeat's principal may DESCRIBE `topic` (the group room's regex filter). */
static bool describable(void *arg, kc_str_t topic)
{
    return kc_api_authorized(arg, KC_OP_DESCRIBE, KC_RES_TOPIC, topic);
}

int kc_api_consumer_group_heartbeat(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                    kc_arena_t *a, void *out)
{
    const kc_consumer_group_heartbeat_request_t *q = req->body;
    kc_consumer_group_heartbeat_response_t *resp = out;
    /* KafkaApis.handleConsumerGroupHeartbeat: GROUP READ, then DESCRIBE on every subscribed
     * topic name (any refused one refuses the heartbeat), before the group coordinator
     * validates the request. */
    if (!kc_api_authorized(call, KC_OP_READ, KC_RES_GROUP, q->group_id)) {
        kc_api_fail(call, q, out, KC_ERR_GROUP_AUTHORIZATION_FAILED, a);
        return KC_API_DONE;
    }
    for (int32_t i = 0; i < q->subscribed_topic_names.n; i++) {
        if (!kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC,
                               q->subscribed_topic_names.v[i])) {
            resp->error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
            return KC_API_DONE;
        }
    }
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
    /* Topics a regex matches are kept only when this principal may DESCRIBE them (Kafka's
     * refreshRegularExpressions with the request's context). */
    kc_gm_topic_filter_t filter = {describable, call};
    kc_shard_consumer_heartbeat(p, kc_coord_time(ctx->coord), call->version, q, req->client_id,
                                call->client_host, kc_api_acl_on(ctx) ? &filter : NULL, a, resp);
    return KC_API_DONE;
}

/* Whether an assignment names a topic the caller may not DESCRIBE. */
static bool hides_topic(kc_api_call_t *call, const kc_consumer_group_describe_assignment_t *as)
{
    for (int32_t i = 0; i < as->topic_partitions.n; i++)
        if (!kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC,
                               as->topic_partitions.v[i].topic_name))
            return true;
    return false;
}

/* A described group that is refused: its id and error, everything else as the defaults. */
static void refused_group(kc_consumer_group_describe_described_group_t *g, kc_str_t id, int16_t err,
                          kc_str_t message)
{
    *g = (kc_consumer_group_describe_described_group_t){
        .error_code = err,
        .error_message = message,
        .group_id = id.len >= 0 ? id : KC_STR_EMPTY,
        .group_state = KC_STR_EMPTY,
        .assignor_name = KC_STR_EMPTY,
        .authorized_operations = INT32_MIN,
    };
}

int kc_api_consumer_group_describe(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                   kc_arena_t *a, void *out)
{
    const kc_consumer_group_describe_request_t *q = req->body;
    kc_consumer_group_describe_response_t *resp = out;
    int32_t n = q->group_ids.n > 0 ? q->group_ids.n : 0;
    kc_consumer_group_describe_described_group_t *v =
        n ? kc_arena_alloc(a, (size_t)n * sizeof(*v)) : NULL;
    bool *ok = n ? kc_arena_alloc(a, (size_t)n * sizeof(*ok)) : NULL;
    if (n && (v == NULL || ok == NULL))
        return KC_API_CLOSE;
    /* KafkaApis.handleConsumerGroupDescribe: the groups the caller may not DESCRIBE first, then
     * the others in request order; a group whose members' assignments name a topic the caller
     * may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without its members. */
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        ok[i] = kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_GROUP, q->group_ids.v[i]);
        if (!ok[i])
            refused_group(&v[k++], q->group_ids.v[i], KC_ERR_GROUP_AUTHORIZATION_FAILED,
                          KC_STR_NULL);
    }
    for (int32_t i = 0; i < n; i++) {
        if (!ok[i])
            continue;
        kc_str_t id = q->group_ids.v[i];
        kc_consumer_group_describe_described_group_t *g = &v[k++];
        int16_t err;
        kc_partition_t *p = kc_api_partition(ctx, call, id, &err);
        if (p == NULL) {
            refused_group(g, id, err, KC_STR_NULL);
            continue;
        }
        kc_shard_consumer_describe(p, call->version, id, q->include_authorized_operations, a, g);
        if (g->error_code != KC_ERR_NONE)
            continue;
        if (q->include_authorized_operations)
            g->authorized_operations = kc_api_authorized_ops(call, KC_RES_GROUP, id);
        if (!kc_api_acl_on(ctx))
            continue;
        for (int32_t m = 0; m < g->members.n; m++) {
            const kc_member_t *mb = &g->members.v[m];
            if (hides_topic(call, &mb->assignment) || hides_topic(call, &mb->target_assignment)) {
                refused_group(g, id, KC_ERR_TOPIC_AUTHORIZATION_FAILED,
                              KC_STR_LIT("The group has described topic(s) that the client is not "
                                         "authorized to describe."));
                break;
            }
        }
    }
    resp->groups.v = v;
    resp->groups.n = n;
    return KC_API_DONE;
}
