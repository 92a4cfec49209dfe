/* discovery.c - ApiVersions, Metadata, FindCoordinator and DescribeCluster.
 *
 * kcoord is the only broker of its cluster: every answer names this node, its advertised
 * address, the cluster id from meta.properties, and the topics of the catalog, each partition
 * led by this node with itself as the only replica. Metadata for an unknown topic name creates
 * it when auto.create.topics.enable is on (kc_api_auto_create in topics.c).
 */
#include <string.h>

#include "api/api.h"
#include "cluster/cluster.h"
#include "util/diag.h"

/* Authorized-operation bit sets with no authorizer: every operation Kafka defines for the
 * resource type (READ..ALTER_CONFIGS for topics; CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
 * DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE for the cluster). */

/* Kafka's check on client software names and versions (KIP-511). */
static int valid_software_field(kc_str_t s)
{
    if (s.len <= 0)
        return 0;
    for (int32_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !((c == '-' || c == '.') && i > 0 && i < s.len - 1))
            return 0;
    }
    return 1;
}

int kc_api_api_versions(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                        kc_arena_t *a, void *out)
{
    (void)ctx;
    (void)call;
    const kc_api_versions_request_t *q = req->body;
    kc_api_versions_response_t *resp = out;
    if (req->api_version >= 3) {
        KC_DEBUG("api", "client %.*s %.*s (%.*s)",
                 q->client_software_name.len > 0 ? q->client_software_name.len : 0,
                 q->client_software_name.p,
                 q->client_software_version.len > 0 ? q->client_software_version.len : 0,
                 q->client_software_version.p, req->client_id.len > 0 ? req->client_id.len : 0,
                 req->client_id.p);
        /* Kafka's error answer lists no APIs (ApiVersionsRequest.getErrorResponse). */
        if (!valid_software_field(q->client_software_name) ||
            !valid_software_field(q->client_software_version)) {
            resp->error_code = KC_ERR_INVALID_REQUEST;
            return 0;
        }
    }
    kc_api_fill_versions(resp, a);
    return 0;
}

/* Kafka's legal topic names: 1..249 characters of [a-zA-Z0-9._-], not "." or "..". */
static int valid_topic_name(kc_str_t s)
{
    if (s.len <= 0 || s.len > 249)
        return 0;
    if ((s.len == 1 && s.p[0] == '.') || (s.len == 2 && s.p[0] == '.' && s.p[1] == '.'))
        return 0;
    for (int32_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* The advertised address of the listener the call's client came in on (Kafka answers Metadata
 * and FindCoordinator with the endpoint of the request's listener), else the first listener's. */
static void advertised(const kc_api_ctx_t *ctx, kc_api_call_t *call, kc_str_t *host, int32_t *port)
{
    const kc_conn_t *conn = call != NULL && call->slot != NULL ? kc_slot_conn(call->slot) : NULL;
    const char *h = ctx->host;
    int32_t p = ctx->port;
    if (conn != NULL)
        kc_conn_advertised(conn, &h, &p);
    *host = kc_str_c(h);
    *port = p;
}

/* The listener name the call's client came in on ("PLAINTEXT" when unknown). */
static const char *listener_of(kc_api_call_t *call)
{
    const kc_conn_t *conn = call != NULL && call->slot != NULL ? kc_slot_conn(call->slot) : NULL;
    return conn != NULL ? kc_conn_listener(conn) : "PLAINTEXT";
}

/* The address of node `id` for the call's listener: this node's advertised one, or another
 * node's from cluster.brokers. False when that node has none for the listener. */
static bool node_address(kc_api_ctx_t *ctx, kc_api_call_t *call, int32_t id, kc_str_t *host,
                         int32_t *port)
{
    if (ctx->cluster == NULL || id == ctx->node_id) {
        advertised(ctx, call, host, port);
        return true;
    }
    const kc_cluster_addr_t *a = kc_cluster_broker(ctx->cluster, id, listener_of(call));
    if (a == NULL)
        return false;
    *host = kc_str_c(a->host);
    *port = a->port;
    return true;
}

/* The brokers Metadata and DescribeCluster list: this node alone, or every node of the
 * cluster that has an address for the call's listener. *ids gets their ids. */
static int32_t broker_ids(kc_api_ctx_t *ctx, kc_api_call_t *call, int32_t *ids, int32_t cap)
{
    if (ctx->cluster == NULL) {
        ids[0] = ctx->node_id;
        return 1;
    }
    int32_t all[16];
    size_t n = kc_cluster_nodes(ctx->cluster, all, 16);
    int32_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        kc_str_t h;
        int32_t port;
        if (node_address(ctx, call, all[i], &h, &port))
            ids[k++] = all[i];
    }
    return k;
}

/* The controller id Metadata and DescribeCluster give: the cluster's leader when one is known
 * (as a KRaft broker names some live broker), else this node. */
static int32_t controller_id(const kc_api_ctx_t *ctx)
{
    if (ctx->cluster != NULL) {
        int32_t l = kc_cluster_leader(ctx->cluster);
        if (l >= 0)
            return l;
    }
    return ctx->node_id;
}

static int fill_topic(kc_api_ctx_t *ctx, kc_api_call_t *call, kc_metadata_response_topic_t *rt,
                      const kc_topic_t *t, int with_ops, kc_arena_t *a)
{
    rt->error_code = KC_ERR_NONE;
    rt->name = kc_str_c(t->name);
    rt->topic_id = t->id;
    rt->topic_authorized_operations =
        with_ops ? kc_api_authorized_ops(call, KC_RES_TOPIC, rt->name) : INT32_MIN;
    kc_metadata_response_partition_t *ps = kc_arena_alloc(a, (size_t)t->partitions * sizeof(*ps));
    int32_t *self = kc_arena_alloc(a, sizeof(*self));
    if (ps == NULL || self == NULL)
        return -1;
    *self = ctx->node_id;
    for (int32_t p = 0; p < t->partitions; p++) {
        ps[p].error_code = KC_ERR_NONE;
        ps[p].partition_index = p;
        ps[p].leader_id = ctx->node_id;
        ps[p].leader_epoch = 0;
        ps[p].replica_nodes.v = self;
        ps[p].replica_nodes.n = 1;
        ps[p].isr_nodes.v = self;
        ps[p].isr_nodes.n = 1;
    }
    rt->partitions.v = ps;
    rt->partitions.n = t->partitions;
    return 0;
}

int kc_api_metadata(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req, kc_arena_t *a,
                    void *out)
{
    const kc_metadata_request_t *q = req->body;
    kc_metadata_response_t *resp = out;
    const kc_catalog_t *cat = ctx->catalog;

    int32_t ids[16];
    int32_t nb = broker_ids(ctx, call, ids, 16);
    kc_metadata_response_broker_t *b = kc_arena_alloc(a, (size_t)(nb ? nb : 1) * sizeof(*b));
    if (b == NULL)
        return -1;
    for (int32_t i = 0; i < nb; i++) {
        b[i].node_id = ids[i];
        node_address(ctx, call, ids[i], &b[i].host, &b[i].port);
        b[i].rack = KC_STR_NULL;
    }
    resp->brokers.v = b;
    resp->brokers.n = nb;
    resp->cluster_id = kc_str_c(cat->cluster_id);
    resp->controller_id = controller_id(ctx);
    /* KafkaApis.handleTopicMetadataRequest: v8-10 may ask for the cluster's operations, 0
     * without CLUSTER DESCRIBE. */
    resp->cluster_authorized_operations = INT32_MIN;
    if (q->include_cluster_authorized_operations && req->api_version <= 10)
        resp->cluster_authorized_operations =
            kc_api_authorized_cluster(call, KC_OP_DESCRIBE)
                ? kc_api_authorized_ops(call, KC_RES_CLUSTER, KC_STR_LIT(KC_AUTH_CLUSTER_NAME))
                : 0;
    int with_ops = q->include_topic_authorized_operations;

    /* A null list (v1+), or an empty one in v0, asks for every topic: those the caller may
     * DESCRIBE, the others left out. */
    int all = q->topics.n < 0 || (req->api_version == 0 && q->topics.n == 0);
    int32_t n = all ? (int32_t)cat->n : q->topics.n;
    kc_metadata_response_topic_t *ts = n ? kc_arena_alloc(a, (size_t)n * sizeof(*ts)) : NULL;
    if (n && ts == NULL)
        return -1;
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        kc_metadata_response_topic_t *rt = &ts[k];
        rt->topic_authorized_operations = INT32_MIN;
        rt->name = KC_STR_NULL;
        if (all) {
            kc_str_t name = kc_str_c(cat->topics[i].name);
            if (!kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC, name))
                continue;
            if (fill_topic(ctx, call, rt, &cat->topics[i], with_ops, a) != 0)
                return -1;
            k++;
            continue;
        }
        k++;
        const kc_metadata_request_topic_t *qt = &q->topics.v[i];
        const kc_topic_t *t;
        if (qt->name.len < 0) { /* by id (v10+) */
            rt->topic_id = qt->topic_id;
            t = kc_catalog_find_id(cat, qt->topic_id);
            if (t == NULL) {
                rt->error_code = KC_ERR_UNKNOWN_TOPIC_ID;
                continue;
            }
            /* An id is not secret: refused with the id, without the name. */
            if (!kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC, kc_str_c(t->name))) {
                rt->error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
        } else {
            rt->name = qt->name;
            /* Whether a topic the caller may not DESCRIBE exists is not disclosed. */
            if (!kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC, qt->name)) {
                rt->error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            t = kc_catalog_find(cat, qt->name);
            /* Auto-creation needs CREATE on the cluster or on the topic. */
            bool create = t == NULL && q->allow_auto_topic_creation && ctx->conf != NULL &&
                          ctx->conf->auto_create_topics_enable;
            if (create && !kc_api_authorized_cluster(call, KC_OP_CREATE) &&
                !kc_api_authorized(call, KC_OP_CREATE, KC_RES_TOPIC, qt->name)) {
                rt->error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (!valid_topic_name(qt->name)) {
                rt->error_code = KC_ERR_INVALID_TOPIC_EXCEPTION;
                continue;
            }
            /* Auto-creation (auto.create.topics.enable, and the request allows it: always
             * before v4). Kafka's first answer for a topic it has just created may say
             * LEADER_NOT_AVAILABLE; here the topic exists at once, so it is answered whole. */
            if (create)
                t = kc_api_auto_create(ctx, qt->name);
            if (t == NULL) {
                rt->error_code = KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
        }
        if (fill_topic(ctx, call, rt, t, with_ops, a) != 0)
            return -1;
    }
    resp->topics.v = ts;
    resp->topics.n = k;
    return 0;
}

static void coordinator_for(kc_api_ctx_t *ctx, kc_api_call_t *call, int16_t version,
                            int8_t key_type, kc_str_t key, int16_t *err, kc_str_t *msg,
                            int32_t *node, kc_str_t *host, int32_t *port)
{
    *node = -1;
    *host = KC_STR_EMPTY;
    *port = -1;
    if (key_type == 0 && !kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_GROUP, key)) {
        *err = KC_ERR_GROUP_AUTHORIZATION_FAILED;
        *msg = version >= 4 ? KC_STR_NULL : KC_STR_LIT("Group authorization failed.");
    } else if (key_type == 1 &&
               !kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TRANSACTIONAL_ID, key)) {
        *err = KC_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        *msg = version >= 4 ? KC_STR_NULL : KC_STR_LIT("Transactional Id authorization failed.");
    } else if (key_type == 0) {
        /* In a cluster every group is coordinated by the raft leader; with none known (an
         * election), or none reachable on this listener, the coordinator is not available and
         * the client asks again. */
        int32_t leader = ctx->cluster != NULL ? kc_cluster_leader(ctx->cluster) : ctx->node_id;
        if (leader < 0 || !node_address(ctx, call, leader, host, port)) {
            *err = KC_ERR_COORDINATOR_NOT_AVAILABLE;
            *msg = KC_STR_LIT("The coordinator is not available.");
            *host = KC_STR_EMPTY;
            *port = -1;
            return;
        }
        *err = KC_ERR_NONE;
        *msg = version >= 4 ? KC_STR_EMPTY : KC_STR_LIT("NONE");
        *node = leader;
    } else if (key_type == 1 || key_type == 2) {
        *err = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        *msg = KC_STR_LIT("The coordinator is not available.");
    } else {
        *err = KC_ERR_INVALID_REQUEST;
        *msg = KC_STR_LIT("This most likely occurs because of a request being malformed by the "
                          "client library or the message was sent to an incompatible broker. See "
                          "the broker logs for more details.");
    }
}

int kc_api_find_coordinator(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                            kc_arena_t *a, void *out)
{
    const kc_find_coordinator_request_t *q = req->body;
    kc_find_coordinator_response_t *resp = out;
    if (req->api_version < 4) {
        coordinator_for(ctx, call, req->api_version, q->key_type, q->key, &resp->error_code,
                        &resp->error_message, &resp->node_id, &resp->host, &resp->port);
        if (req->api_version == 0)
            resp->error_message = KC_STR_NULL;
        return 0;
    }
    int32_t n = q->coordinator_keys.n > 0 ? q->coordinator_keys.n : 0;
    kc_coordinator_t *cs = n ? kc_arena_alloc(a, (size_t)n * sizeof(*cs)) : NULL;
    if (n && cs == NULL)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        cs[i].key = q->coordinator_keys.v[i];
        coordinator_for(ctx, call, req->api_version, q->key_type, cs[i].key, &cs[i].error_code,
                        &cs[i].error_message, &cs[i].node_id, &cs[i].host, &cs[i].port);
    }
    resp->coordinators.v = cs;
    resp->coordinators.n = n;
    return 0;
}

int kc_api_describe_cluster(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                            kc_arena_t *a, void *out)
{
    const kc_describe_cluster_request_t *q = req->body;
    kc_describe_cluster_response_t *resp = out;
    /* 2 asks for controllers. A cluster's nodes are its raft quorum's controllers too, reached
     * on their client listeners (they serve DescribeQuorum, AddRaftVoter, RemoveRaftVoter): the
     * same list, with the leader as the active controller, so that Kafka's admin client given
     * --bootstrap-controller sends those requests to the leader. */
    bool controllers = q->endpoint_type == 2 && ctx->cluster != NULL;
    if (req->api_version >= 1 && q->endpoint_type != 1 && !controllers) {
        /* A single node's listener does not serve controllers. As Kafka's error
         * answer, the rest keeps its defaults: endpoint type 1, no cluster id, controller -1. */
        resp->error_code = q->endpoint_type == 2 ? KC_ERR_MISMATCHED_ENDPOINT_TYPE
                                                 : KC_ERR_UNSUPPORTED_ENDPOINT_TYPE;
        resp->error_message =
            q->endpoint_type == 2
                ? KC_STR_LIT("The request was sent to an endpoint of type BROKER, "
                             "but we wanted an endpoint of type CONTROLLER")
                : KC_STR_LIT("Unsupported endpoint type");
        return 0;
    }
    resp->endpoint_type = q->endpoint_type;
    resp->cluster_id = kc_str_c(ctx->catalog->cluster_id);
    resp->controller_id = controller_id(ctx);
    /* KafkaApis.handleDescribeCluster: the cluster's operations when asked, 0 without
     * CLUSTER DESCRIBE. */
    resp->cluster_authorized_operations = INT32_MIN;
    if (q->include_cluster_authorized_operations)
        resp->cluster_authorized_operations =
            kc_api_authorized_cluster(call, KC_OP_DESCRIBE)
                ? kc_api_authorized_ops(call, KC_RES_CLUSTER, KC_STR_LIT(KC_AUTH_CLUSTER_NAME))
                : 0;
    int32_t ids[16];
    int32_t nb = broker_ids(ctx, call, ids, 16);
    kc_describe_cluster_broker_t *b = kc_arena_alloc(a, (size_t)(nb ? nb : 1) * sizeof(*b));
    if (b == NULL)
        return -1;
    for (int32_t i = 0; i < nb; i++) {
        b[i].broker_id = ids[i];
        node_address(ctx, call, ids[i], &b[i].host, &b[i].port);
        b[i].rack = KC_STR_NULL;
        b[i].is_fenced = false;
    }
    resp->brokers.v = b;
    resp->brokers.n = nb;
    return 0;
}
