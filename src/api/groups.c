/* groups.c - the classic group APIs and the group admin APIs (of classic and consumer groups).
 *
 * JoinGroup, SyncGroup, Heartbeat and LeaveGroup go to the shard (coord.h) of the partition that
 * owns the group; JoinGroup and SyncGroup may be parked there, and are answered from
 * kc_api_group_replies when the rebalance gets that far. ListGroups, DescribeGroups and
 * DeleteGroups read or change every partition the request touches.
 */
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "util/diag.h"

/* As Kafka's JoinGroupResponse constructor: from v7, where the protocol name is nullable, an
 * empty name is sent as null (MEMBER_ID_REQUIRED and error answers); before v7 a null one as
 * empty. */
static void join_protocol_name(int16_t version, kc_join_group_response_t *resp)
{
    if (version >= 7 && resp->protocol_name.len == 0)
        resp->protocol_name = KC_STR_NULL;
    else if (version < 7 && resp->protocol_name.len < 0)
        resp->protocol_name = KC_STR_EMPTY;
}

static void join_done(void *waiter, const kc_join_group_response_t *resp)
{
    kc_api_call_t *call = waiter;
    kc_join_group_response_t r = *resp;
    join_protocol_name(call->version, &r);
    kc_api_call_reply(call, &r);
}

static void sync_done(void *waiter, const kc_sync_group_response_t *resp)
{
    kc_api_call_reply(waiter, resp);
}

const kc_coord_replies_t kc_api_group_replies = {join_done, sync_done};

int kc_api_join_group(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                      kc_arena_t *a, void *out)
{
    const kc_join_group_request_t *q = req->body;
    int16_t err = KC_ERR_GROUP_AUTHORIZATION_FAILED;
    kc_partition_t *p = kc_api_authorized(call, KC_OP_READ, KC_RES_GROUP, q->group_id)
                            ? kc_api_partition(ctx, call, q->group_id, &err)
                            : NULL;
    if (p == NULL) {
        kc_api_fail(call, q, out, err, a);
        join_protocol_name(call->version, out);
        return KC_API_DONE;
    }
    int rc = kc_shard_join(p, kc_coord_time(ctx->coord), call->version, q, req->client_id,
                           call->client_host, call, a, out);
    if (rc == KC_SHARD_PARKED)
        return KC_API_PARKED;
    join_protocol_name(call->version, out);
    return KC_API_DONE;
}

int kc_api_sync_group(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                      kc_arena_t *a, void *out)
{
    const kc_sync_group_request_t *q = req->body;
    int16_t err = KC_ERR_GROUP_AUTHORIZATION_FAILED;
    kc_partition_t *p = kc_api_authorized(call, KC_OP_READ, KC_RES_GROUP, q->group_id)
                            ? kc_api_partition(ctx, call, q->group_id, &err)
                            : NULL;
    if (p == NULL) {
        kc_api_fail(call, q, out, err, a);
        return KC_API_DONE;
    }
    int rc = kc_shard_sync(p, kc_coord_time(ctx->coord), call->version, q, call, a, out);
    return rc == KC_SHARD_PARKED ? KC_API_PARKED : KC_API_DONE;
}

int kc_api_heartbeat(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req, kc_arena_t *a,
                     void *out)
{
    const kc_heartbeat_request_t *q = req->body;
    int16_t err = KC_ERR_GROUP_AUTHORIZATION_FAILED;
    kc_partition_t *p = kc_api_authorized(call, KC_OP_READ, KC_RES_GROUP, q->group_id)
                            ? kc_api_partition(ctx, call, q->group_id, &err)
                            : NULL;
    if (p == NULL) {
        /* While loading, Kafka answers heartbeats with no error: members keep their session. */
        if (err != KC_ERR_COORDINATOR_LOAD_IN_PROGRESS)
            kc_api_fail(call, q, out, err, a);
        return KC_API_DONE;
    }
    kc_shard_heartbeat(p, kc_coord_time(ctx->coord), call->version, q, out);
    return KC_API_DONE;
}

int kc_api_leave_group(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                       kc_arena_t *a, void *out)
{
    const kc_leave_group_request_t *q = req->body;
    int16_t err = KC_ERR_GROUP_AUTHORIZATION_FAILED;
    kc_partition_t *p = kc_api_authorized(call, KC_OP_READ, KC_RES_GROUP, q->group_id)
                            ? kc_api_partition(ctx, call, q->group_id, &err)
                            : NULL;
    if (p == NULL) {
        kc_api_fail(call, q, out, err, a);
        return KC_API_DONE;
    }
    kc_shard_leave(p, kc_coord_time(ctx->coord), call->version, q, a, out);
    return KC_API_DONE;
}

/* ---- ListGroups ---------------------------------------------------------------------------- */

typedef struct list_ctx_s {
    const kc_list_groups_request_t *q;
    kc_api_call_t *call;
    bool all; /* CLUSTER DESCRIBE: every group; else those the caller may DESCRIBE */
    int16_t version;
    kc_arena_t *a;
    kc_listed_group_t *v;
    int32_t n, cap;
    int oom;
} list_ctx_t;

static bool str_ieq(kc_str_t a, const char *b)
{
    return a.len >= 0 && (size_t)a.len == strlen(b) && strncasecmp(a.p, b, (size_t)a.len) == 0;
}

/* True when `value` matches one of the filter's entries (an empty filter matches all). */
static bool filter_match(const kc_str_t *f, int32_t n, const char *value)
{
    if (n <= 0)
        return true;
    for (int32_t i = 0; i < n; i++)
        if (str_ieq(f[i], value))
            return true;
    return false;
}

static void list_one(void *arg, const kc_group_info_t *g)
{
    list_ctx_t *c = arg;
    if (c->oom)
        return;
    const char *state = g->state_name;
    if (c->version >= 4 && !filter_match(c->q->states_filter.v, c->q->states_filter.n, state))
        return;
    if (c->version >= 5 && !filter_match(c->q->types_filter.v, c->q->types_filter.n, g->type))
        return;
    if (!c->all && !kc_api_authorized(c->call, KC_OP_DESCRIBE, KC_RES_GROUP, g->group_id))
        return;
    if (c->n == c->cap) {
        int32_t cap = c->cap ? c->cap * 2 : 16;
        kc_listed_group_t *v = kc_arena_alloc(c->a, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            c->oom = 1;
            return;
        }
        if (c->n)
            memcpy(v, c->v, (size_t)c->n * sizeof(*v));
        c->v = v;
        c->cap = cap;
    }
    kc_listed_group_t *l = &c->v[c->n++];
    l->group_id = g->group_id;
    l->protocol_type = g->protocol_type;
    l->group_state = kc_str_c(state);
    l->group_type = kc_str_c(g->type);
}

int kc_api_list_groups(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                       kc_arena_t *a, void *out)
{
    kc_list_groups_response_t *resp = out;
    /* KafkaApis.handleListGroupsRequest: CLUSTER DESCRIBE lists every group, otherwise only
     * the groups the caller may DESCRIBE; never an authorization error. */
    list_ctx_t c = {.q = req->body,
                    .call = call,
                    .all = kc_api_authorized_cluster(call, KC_OP_DESCRIBE),
                    .version = call->version,
                    .a = a};
    if (kc_coord_loading(ctx->coord) > 0) {
        resp->error_code = KC_ERR_COORDINATOR_LOAD_IN_PROGRESS;
        return KC_API_DONE;
    }
    for (int32_t i = 0; i < kc_coord_partitions(ctx->coord); i++) {
        kc_shard_each_group(kc_coord_partition_at(ctx->coord, i), list_one, &c);
    }
    if (c.oom) {
        resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        return KC_API_DONE;
    }
    resp->groups.v = c.v;
    resp->groups.n = c.n;
    return KC_API_DONE;
}

/* ---- DescribeGroups, DeleteGroups ---------------------------------------------------------- */

int kc_api_describe_groups(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                           kc_arena_t *a, void *out)
{
    const kc_describe_groups_request_t *q = req->body;
    kc_describe_groups_response_t *resp = out;
    int32_t n = q->groups.n > 0 ? q->groups.n : 0;
    kc_describe_groups_described_group_t *v = n ? kc_arena_alloc(a, (size_t)n * sizeof(*v)) : NULL;
    bool *ok = n ? kc_arena_alloc(a, (size_t)n * sizeof(*ok)) : NULL;
    if (n && (v == NULL || ok == NULL))
        return KC_API_CLOSE;
    /* KafkaApis.handleDescribeGroupsRequest: the groups the caller may not DESCRIBE come first,
     * as DescribeGroupsResponse.groupError(id, GROUP_AUTHORIZATION_FAILED), then the others in
     * request order. */
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        ok[i] = kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_GROUP, q->groups.v[i]);
        if (ok[i])
            continue;
        v[k] =
            (kc_describe_groups_described_group_t){.error_code = KC_ERR_GROUP_AUTHORIZATION_FAILED,
                                                   .error_message = KC_STR_NULL,
                                                   .group_id = q->groups.v[i],
                                                   .authorized_operations = INT32_MIN};
        k++;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!ok[i])
            continue;
        int16_t err;
        kc_describe_groups_described_group_t *g = &v[k++];
        kc_partition_t *p = kc_api_partition(ctx, call, q->groups.v[i], &err);
        if (p == NULL) {
            /* g is zeroed: empty strings, no members. */
            g->error_message = KC_STR_NULL;
            g->authorized_operations = INT32_MIN;
            g->group_id = q->groups.v[i];
            g->error_code = err;
            continue;
        }
        kc_shard_describe(p, call->version, q->groups.v[i], q->include_authorized_operations, a, g);
        if (call->version >= 3 && q->include_authorized_operations && g->error_code == KC_ERR_NONE)
            g->authorized_operations = kc_api_authorized_ops(call, KC_RES_GROUP, q->groups.v[i]);
    }
    resp->groups.v = v;
    resp->groups.n = n;
    return KC_API_DONE;
}

int kc_api_delete_groups(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                         kc_arena_t *a, void *out)
{
    const kc_delete_groups_request_t *q = req->body;
    kc_delete_groups_response_t *resp = out;
    int32_t n = q->groups_names.n > 0 ? q->groups_names.n : 0;
    kc_deletable_group_result_t *v = n ? kc_arena_alloc(a, (size_t)n * sizeof(*v)) : NULL;
    bool *ok = n ? kc_arena_alloc(a, (size_t)n * sizeof(*ok)) : NULL;
    if (n && (v == NULL || ok == NULL))
        return KC_API_CLOSE;
    kc_time_t now = kc_coord_time(ctx->coord);
    /* KafkaApis.handleDeleteGroupsRequest: the groups the caller may DELETE are deleted and
     * answered first, then the others with GROUP_AUTHORIZATION_FAILED. */
    for (int32_t i = 0; i < n; i++)
        ok[i] = kc_api_authorized(call, KC_OP_DELETE, KC_RES_GROUP, q->groups_names.v[i]);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!ok[i])
            continue;
        kc_str_t id = q->groups_names.v[i];
        int16_t err;
        kc_partition_t *p = kc_api_partition(ctx, call, id, &err);
        kc_deletable_group_result_t *r = &v[k++];
        r->group_id = id;
        r->error_code = err;
        if (p == NULL)
            continue;
        size_t gone;
        err = kc_shard_delete_group(p, now, id, &gone);
        if (err == KC_ERR_NONE) {
            KC_INFO("api", "group %.*s deleted with %zu committed offsets", id.len > 0 ? id.len : 0,
                    id.p, gone);
        }
        r->error_code = err;
    }
    for (int32_t i = 0; i < n; i++)
        if (!ok[i])
            v[k++] = (kc_deletable_group_result_t){.group_id = q->groups_names.v[i],
                                                   .error_code = KC_ERR_GROUP_AUTHORIZATION_FAILED};
    resp->results.v = v;
    resp->results.n = n;
    return KC_API_DONE;
}
