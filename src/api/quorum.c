/* quorum.c - DescribeQuorum: the raft quorum of a kcoord cluster, as Kafka describes its KRaft
 * quorum (KIP-595, with KIP-836's timestamps and KIP-853's nodes), so that Kafka's admin client
 * (Admin.describeMetadataQuorum) and `kafka-metadata-quorum describe --status/--replication`
 * read it.
 *
 * Kafka describes the one partition of its quorum, `__cluster_metadata` 0; kcoord's one raft
 * group takes that name. The mapping, from kc_cluster_status():
 *   LeaderId       the raft leader (a partition error NOT_LEADER_OR_FOLLOWER while none is known,
 *                  which the admin client retries, as it does while a KRaft quorum elects)
 *   LeaderEpoch    the raft term
 *   HighWatermark  the commit index (raft's index i is the i-th entry: the index of the last
 *                  committed entry is the count of committed entries, Kafka's exclusive end)
 *   CurrentVoters  every voter of the raft configuration: LogEndOffset its match index,
 *                  LastFetchTimestamp the wall time the leader last heard from it in its term
 *                  (an AppendEntries result), LastCaughtUpTimestamp the last time it then had
 *                  everything the leader had (the leader itself: now for both, as Kafka reports
 *                  its leader; -1 where not heard in this term)
 *   Observers      raft's standbys (they replicate the log and do not vote, as Kafka's
 *                  observers), in the same shape; raft's spares replicate nothing and are left out
 *   Nodes (v2)     each voter with the client listeners cluster.brokers gives it, one per name
 *                  of this node's listeners
 * Only the leader answers, as only it knows the voters' replication: a follower answers
 * NOT_LEADER_OR_FOLLOWER, as a Kafka controller that does not lead, and closes the connection
 * after it. A Kafka broker would forward the request to its active controller; kcoord nodes do
 * not forward, and the admin client, which retries that error, finds the leader (with
 * --bootstrap-server over the nodes Metadata lists, with --bootstrap-controller at once, as
 * DescribeCluster names the leader the active controller).
 *
 * Authorization: CLUSTER DESCRIBE (Kafka's ControllerApis.handleDescribeQuorum), else a
 * top-level CLUSTER_AUTHORIZATION_FAILED. A request for anything but __cluster_metadata-0 gets
 * UNKNOWN_TOPIC_OR_PARTITION on each requested partition (KafkaRaftClient). The API's row says
 * `cluster`: without a cluster, dispatch neither advertises nor serves it (dispatch.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "cluster/cluster.h"

#define METADATA_TOPIC "__cluster_metadata"
/* The listener name of a node's raft address in AddRaftVoter and DescribeQuorum's nodes. */
#define RAFT_LISTENER "CONTROLLER"

static bool uuid_zero(const kc_uuid_t *u)
{
    for (int i = 0; i < 16; i++)
        if (u->b[i])
            return false;
    return true;
}

/* Raft's roles of a server (kc_cluster_voter_t.role). */
enum { ROLE_STANDBY = 0, ROLE_VOTER = 1, ROLE_SPARE = 2 };

/* Errors.NOT_LEADER_OR_FOLLOWER's and UNKNOWN_TOPIC_OR_PARTITION's messages (Errors.java),
 * which Kafka sends from v2. */
static const char msg_not_leader[] =
    "For requests intended only for the leader, this error indicates that the broker is not the "
    "current leader. For requests intended for any replica, this error indicates that the broker "
    "is not a replica of the topic partition.";
static const char msg_unknown_tp[] = "This server does not host this topic-partition.";
static const char msg_cluster_auth[] = "Cluster authorization failed.";

/* The wall clock, in ms since the epoch, as the coordinator gives it. */
static int64_t wall_ms(const kc_api_ctx_t *ctx)
{
    if (ctx->coord != NULL)
        return kc_coord_time(ctx->coord).wall_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Kafka's hasValidTopicPartition: exactly one topic, __cluster_metadata, with exactly one
 * partition, 0. */
static bool describes_metadata_partition(const kc_describe_quorum_request_t *q)
{
    return q->topics.n == 1 && kc_str_eq_c(q->topics.v[0].topic_name, METADATA_TOPIC) &&
           q->topics.v[0].partitions.n == 1 && q->topics.v[0].partitions.v[0].partition_index == 0;
}

/* DescribeQuorumRequest.getPartitionLevelErrorResponse: every requested partition with `err`. */
static int partition_errors(const kc_describe_quorum_request_t *q, int16_t err, kc_str_t msg,
                            kc_arena_t *a, kc_describe_quorum_response_t *resp)
{
    int32_t nt = q->topics.n > 0 ? q->topics.n : 0;
    kc_describe_quorum_topic_data_t *ts = nt ? kc_arena_alloc(a, (size_t)nt * sizeof(*ts)) : NULL;
    if (nt && ts == NULL)
        return -1;
    for (int32_t i = 0; i < nt; i++) {
        const kc_describe_quorum_topic_t *qt = &q->topics.v[i];
        int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
        kc_describe_quorum_partition_data_t *ps =
            np ? kc_arena_alloc(a, (size_t)np * sizeof(*ps)) : NULL;
        if (np && ps == NULL)
            return -1;
        for (int32_t j = 0; j < np; j++) {
            memset(&ps[j], 0, sizeof(ps[j]));
            ps[j].partition_index = qt->partitions.v[j].partition_index;
            ps[j].error_code = err;
            ps[j].error_message = msg;
        }
        ts[i].topic_name = qt->topic_name;
        ts[i].partitions.v = ps;
        ts[i].partitions.n = np;
    }
    resp->topics.v = ts;
    resp->topics.n = nt;
    return 0;
}

/* One voter's replication state, as the node answering knows it. */
static void voter_state(const kc_cluster_status_t *st, const kc_cluster_voter_t *v, int64_t now,
                        kc_describe_quorum_voter_t *out)
{
    memset(out, 0, sizeof(*out));
    out->replica_id = v->id;
    (void)kc_uuid_parse(v->directory_id, &out->replica_directory_id); /* "": zero */
    out->log_end_offset = v->match_index >= 0 ? v->match_index : -1;
    out->last_fetch_timestamp = -1;
    out->last_caught_up_timestamp = -1;
    if (st->leader != st->self)
        return; /* only the leader hears from the voters */
    if (v->id == st->self) {
        /* RaftUtil.toReplicaState: the leader reports the current time for itself. */
        out->log_end_offset = (int64_t)st->last_index;
        out->last_fetch_timestamp = now;
        out->last_caught_up_timestamp = now;
        return;
    }
    if (v->last_contact_ms >= 0)
        out->last_fetch_timestamp = now - v->last_contact_ms;
    if (v->last_caught_up_ms >= 0)
        out->last_caught_up_timestamp = now - v->last_caught_up_ms;
}

/* The listener names of this node (its `listeners`, each name once). */
static size_t listener_names(const kc_api_ctx_t *ctx, kc_listener_t *ls, size_t max)
{
    size_t n = 0, out = 0;
    char err[128];
    if (ctx->conf == NULL || ctx->conf->listeners == NULL ||
        kc_conf_parse_listeners(ctx->conf->listeners, ls, max, &n, err, sizeof(err)) != 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < out && !seen; j++)
            seen = strcmp(ls[j].name, ls[i].name) == 0;
        if (!seen)
            ls[out++] = ls[i];
    }
    return out;
}

/* How many servers of the raft configuration have raft role `role`. */
static size_t count_role(const kc_cluster_status_t *st, int role)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n_voters; i++)
        n += st->voters[i].role == role;
    return n;
}

/* v2's Nodes: every voter with its client listeners (cluster.brokers). */
static int fill_nodes(const kc_api_ctx_t *ctx, const kc_cluster_status_t *st, kc_arena_t *a,
                      kc_describe_quorum_response_t *resp)
{
    enum { MAX_LISTENERS = 16 };
    kc_listener_t ls[MAX_LISTENERS];
    size_t nl = listener_names(ctx, ls, MAX_LISTENERS);
    size_t nv = count_role(st, ROLE_VOTER);
    kc_describe_quorum_node_t *nodes = nv ? kc_arena_alloc(a, nv * sizeof(*nodes)) : NULL;
    if (nv && nodes == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < st->n_voters; i++) {
        if (st->voters[i].role != ROLE_VOTER)
            continue;
        kc_describe_quorum_node_t *node = &nodes[k++];
        memset(node, 0, sizeof(*node));
        node->node_id = st->voters[i].id;
        kc_describe_quorum_listener_t *out = kc_arena_alloc(a, (nl + 1) * sizeof(*out));
        if (out == NULL)
            return -1;
        int32_t n = 0;
        /* Its raft address, under the name AddRaftVoter gives it (CONTROLLER, as Kafka's
         * controller listener usually is), then its client listeners. */
        const char *ra = st->voters[i].raft_address;
        const char *colon = strrchr(ra, ':');
        if (colon != NULL && colon > ra) {
            size_t hl = (size_t)(colon - ra);
            if (ra[0] == '[' && hl >= 2 && ra[hl - 1] == ']')
                ra++, hl -= 2;
            char *host = kc_arena_dup(a, ra, hl);
            if (host == NULL)
                return -1;
            out[n].name = KC_STR_LIT(RAFT_LISTENER);
            out[n].host = (kc_str_t){host, (int32_t)hl};
            out[n].port = (uint16_t)atoi(colon + 1);
            n++;
        }
        for (size_t j = 0; j < nl; j++) {
            const kc_cluster_addr_t *addr =
                kc_cluster_broker(ctx->cluster, node->node_id, ls[j].name);
            if (addr == NULL || addr->host == NULL || addr->port < 0 || addr->port > 65535)
                continue;
            char *name = kc_arena_dup(a, ls[j].name, strlen(ls[j].name));
            if (name == NULL)
                return -1;
            out[n].name = (kc_str_t){name, (int32_t)strlen(ls[j].name)};
            out[n].host = kc_str_c(addr->host);
            out[n].port = (uint16_t)addr->port;
            n++;
        }
        node->listeners.v = out;
        node->listeners.n = n;
    }
    resp->nodes.v = nodes;
    resp->nodes.n = (int32_t)nv;
    return 0;
}

static int fill_quorum(const kc_api_ctx_t *ctx, const kc_cluster_status_t *st, int16_t version,
                       kc_arena_t *a, kc_describe_quorum_response_t *resp)
{
    kc_describe_quorum_topic_data_t *t = kc_arena_alloc(a, sizeof(*t));
    kc_describe_quorum_partition_data_t *p = kc_arena_alloc(a, sizeof(*p));
    size_t nv = count_role(st, ROLE_VOTER), no = count_role(st, ROLE_STANDBY);
    kc_describe_quorum_voter_t *vs = nv ? kc_arena_alloc(a, nv * sizeof(*vs)) : NULL;
    kc_describe_quorum_observer_t *os = no ? kc_arena_alloc(a, no * sizeof(*os)) : NULL;
    if (t == NULL || p == NULL || (nv && vs == NULL) || (no && os == NULL))
        return -1;
    memset(p, 0, sizeof(*p));
    p->partition_index = 0;
    p->error_code = KC_ERR_NONE;
    p->error_message = KC_STR_NULL;
    p->leader_id = st->leader;
    p->leader_epoch = st->term > INT32_MAX ? INT32_MAX : (int32_t)st->term;
    p->high_watermark = st->commit_index > INT64_MAX ? INT64_MAX : (int64_t)st->commit_index;
    int64_t now = wall_ms(ctx);
    size_t iv = 0, io = 0;
    for (size_t i = 0; i < st->n_voters; i++) {
        const kc_cluster_voter_t *v = &st->voters[i];
        if (v->role == ROLE_VOTER) {
            voter_state(st, v, now, &vs[iv++]);
        } else if (v->role == ROLE_STANDBY) {
            kc_describe_quorum_voter_t r;
            voter_state(st, v, now, &r);
            os[io++] = (kc_describe_quorum_observer_t){
                .replica_id = r.replica_id,
                .replica_directory_id = r.replica_directory_id,
                .log_end_offset = r.log_end_offset,
                .last_fetch_timestamp = r.last_fetch_timestamp,
                .last_caught_up_timestamp = r.last_caught_up_timestamp};
        }
    }
    p->current_voters.v = vs;
    p->current_voters.n = (int32_t)nv;
    p->observers.v = os;
    p->observers.n = (int32_t)no;
    t->topic_name = KC_STR_LIT(METADATA_TOPIC);
    t->partitions.v = p;
    t->partitions.n = 1;
    resp->topics.v = t;
    resp->topics.n = 1;
    return version >= 2 ? fill_nodes(ctx, st, a, resp) : 0;
}

int kc_api_describe_quorum(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                           kc_arena_t *a, void *out)
{
    const kc_describe_quorum_request_t *q = req->body;
    kc_describe_quorum_response_t *resp = out;
    if (ctx->cluster == NULL) /* dispatch serves the API only to a cluster's node */
        return KC_API_CLOSE;
    if (!kc_api_authorized_cluster(call, KC_OP_DESCRIBE)) {
        /* DescribeQuorumRequest.getErrorResponse: the top-level error alone. */
        resp->error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = KC_STR_LIT(msg_cluster_auth);
        return KC_API_DONE;
    }
    if (!describes_metadata_partition(q))
        return partition_errors(q, KC_ERR_UNKNOWN_TOPIC_OR_PARTITION, KC_STR_LIT(msg_unknown_tp), a,
                                resp) == 0
                   ? KC_API_DONE
                   : KC_API_CLOSE;
    kc_cluster_status_t st;
    kc_cluster_status(ctx->cluster, &st);
    if (st.leader < 0)
        return partition_errors(q, KC_ERR_NOT_LEADER_OR_FOLLOWER, KC_STR_LIT(msg_not_leader), a,
                                resp) == 0
                   ? KC_API_DONE
                   : KC_API_CLOSE;
    if (st.leader != st.self) {
        /* As Kafka's controllers: only the leader knows the voters' replication. The connection
         * closes after the answer, so that the AdminClient retries on another node. */
        if (partition_errors(q, KC_ERR_NOT_LEADER_OR_FOLLOWER, KC_STR_LIT(msg_not_leader), a,
                             resp) != 0)
            return KC_API_CLOSE;
        kc_api_call_reply_close(call, resp);
        return KC_API_PARKED;
    }
    return fill_quorum(ctx, &st, req->api_version, a, resp) == 0 ? KC_API_DONE : KC_API_CLOSE;
}

/* ---- AddRaftVoter, RemoveRaftVoter ------------------------------------------------------------
 *
 * KIP-853's membership changes, as KafkaRaftClient answers them: CLUSTER ALTER (ControllerApis),
 * then INCONSISTENT_CLUSTER_ID when a cluster id is given and is not ours, NOT_LEADER_OR_FOLLOWER
 * on a node that does not lead (a Kafka broker would forward; Kafka's admin client reaches the
 * leader itself when given --bootstrap-controller: DescribeCluster names it), INVALID_REQUEST
 * without a voter key or without the raft endpoint (the listener named CONTROLLER), then the
 * change itself: DUPLICATE_VOTER, VOTER_NOT_FOUND, REQUEST_TIMED_OUT while another change is
 * in flight or when this one is not committed within TimeoutMs. The answer is sent once the new
 * configuration is committed (AckWhenCommitted is always honoured that way). */

typedef struct change_call_s {
    kc_api_call_t *call;
    kc_arena_t *arena;                  /* the call's */
    kc_add_raft_voter_response_t *resp; /* RemoveRaftVoter's answer has the same shape */
    int32_t id;
    char dir[23];
    bool adding;
} change_call_t;

_Static_assert(sizeof(kc_add_raft_voter_response_t) == sizeof(kc_remove_raft_voter_response_t),
               "the two answers share a shape");

static void change_error(change_call_t *cc, int status, const char *message, kc_arena_t *a)
{
    char buf[256];
    int16_t err = KC_ERR_UNKNOWN_SERVER_ERROR;
    buf[0] = '\0';
    switch (status) {
    case KC_CLUSTER_OK:
        err = KC_ERR_NONE;
        break;
    case KC_CLUSTER_ENOTLEADER:
    case KC_CLUSTER_ESHUTDOWN:
        err = KC_ERR_NOT_LEADER_OR_FOLLOWER;
        break;
    case KC_CLUSTER_EDUPLICATE:
        err = KC_ERR_DUPLICATE_VOTER;
        snprintf(buf, sizeof(buf),
                 "The voter id for ReplicaKey(id=%d, directoryId=%s) is already part of the set "
                 "of voters.",
                 cc->id, cc->dir);
        break;
    case KC_CLUSTER_ENOTFOUND:
        err = KC_ERR_VOTER_NOT_FOUND;
        snprintf(buf, sizeof(buf),
                 "Cannot remove voter ReplicaKey(id=%d, directoryId=%s) from the set of voters",
                 cc->id, cc->dir);
        break;
    case KC_CLUSTER_EBUSY:
        err = KC_ERR_REQUEST_TIMED_OUT;
        snprintf(buf, sizeof(buf),
                 "Request timed out waiting for leader to handle previous voter change request");
        break;
    case KC_CLUSTER_ETIMEDOUT:
        err = KC_ERR_REQUEST_TIMED_OUT;
        snprintf(buf, sizeof(buf), "%s voter %d: %s", cc->adding ? "Adding" : "Removing", cc->id,
                 message ? message : "not committed in time");
        break;
    case KC_CLUSTER_EINVALID:
        err = KC_ERR_INVALID_REQUEST;
        snprintf(buf, sizeof(buf), "%s",
                 cc->adding ? "The new voter's raft address is not host:port"
                            : "The last voter cannot be removed");
        break;
    default:
        snprintf(buf, sizeof(buf), "%s", message ? message : "the change failed");
        break;
    }
    cc->resp->error_code = err;
    if (buf[0] != '\0') {
        char *m = kc_arena_dup(a, buf, strlen(buf));
        if (m != NULL)
            cc->resp->error_message = (kc_str_t){m, (int32_t)strlen(buf)};
    }
}

static void on_change_done(void *arg, int status, const char *message)
{
    change_call_t *cc = arg;
    change_error(cc, status, message, cc->arena);
    kc_api_call_reply(cc->call, cc->resp);
}

/* The checks both APIs make before the change: 0 to go on, else the answer is filled. */
static int change_precheck(kc_api_ctx_t *ctx, kc_api_call_t *call, kc_str_t cluster_id,
                           kc_arena_t *a, kc_add_raft_voter_response_t *resp)
{
    if (!kc_api_authorized_cluster(call, KC_OP_ALTER)) {
        resp->error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = KC_STR_LIT(msg_cluster_auth);
        return -1;
    }
    const char *ours = kc_cluster_id(ctx->cluster);
    if (cluster_id.len >= 0 && !kc_str_eq_c(cluster_id, ours)) {
        char buf[160];
        snprintf(buf, sizeof(buf), "The given id \"%.*s\" doesn't match the cluster id \"%s\"",
                 cluster_id.len > 64 ? 64 : (int)cluster_id.len, cluster_id.p, ours);
        char *m = kc_arena_dup(a, buf, strlen(buf));
        resp->error_code = KC_ERR_INCONSISTENT_CLUSTER_ID;
        resp->error_message = m ? (kc_str_t){m, (int32_t)strlen(buf)} : KC_STR_NULL;
        return -1;
    }
    kc_cluster_status_t st;
    kc_cluster_status(ctx->cluster, &st);
    if (st.role != KC_CLUSTER_LEADER) {
        resp->error_code = KC_ERR_NOT_LEADER_OR_FOLLOWER;
        return -1;
    }
    return 0;
}

/* A listener's "host:port" (IPv6 hosts in brackets) into buf; -1 when it cannot be one. */
static int endpoint(const kc_add_raft_voter_listener_t *l, bool with_name, char *buf, size_t len)
{
    if (l->host.len <= 0 || l->host.len > 200 || l->port == 0 || l->name.len <= 0 ||
        l->name.len > 60)
        return -1;
    for (int32_t i = 0; i < l->host.len; i++)
        if (l->host.p[i] == ' ' || l->host.p[i] == ',' || l->host.p[i] == '\0')
            return -1;
    for (int32_t i = 0; i < l->name.len; i++) {
        char c = l->name.p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return -1;
    }
    bool v6 = memchr(l->host.p, ':', (size_t)l->host.len) != NULL;
    int n = snprintf(buf, len, "%.*s%s%s%.*s%s:%u", with_name ? (int)l->name.len : 0, l->name.p,
                     with_name ? "://" : "", v6 ? "[" : "", (int)l->host.len, l->host.p,
                     v6 ? "]" : "", (unsigned)l->port);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int kc_api_add_raft_voter(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                          kc_arena_t *a, void *out)
{
    const kc_add_raft_voter_request_t *q = req->body;
    kc_add_raft_voter_response_t *resp = out;
    if (ctx->cluster == NULL) /* dispatch serves the API only to a cluster's node */
        return KC_API_CLOSE;
    if (change_precheck(ctx, call, q->cluster_id, a, resp) != 0)
        return KC_API_DONE;
    if (q->voter_id < 0 || uuid_zero(&q->voter_directory_id)) {
        resp->error_code = KC_ERR_INVALID_REQUEST;
        resp->error_message = KC_STR_LIT("Add voter request didn't include a valid voter");
        return KC_API_DONE;
    }
    char raft[300] = "", listeners[1024] = "";
    size_t used = 0;
    for (int32_t i = 0; i < q->listeners.n; i++) {
        const kc_add_raft_voter_listener_t *l = &q->listeners.v[i];
        char ep[300];
        bool is_raft = kc_str_eq_c(l->name, RAFT_LISTENER);
        if (endpoint(l, !is_raft, ep, sizeof(ep)) != 0) {
            resp->error_code = KC_ERR_INVALID_REQUEST;
            resp->error_message = KC_STR_LIT("Add voter request has a malformed endpoint");
            return KC_API_DONE;
        }
        if (is_raft) {
            snprintf(raft, sizeof(raft), "%s", ep);
        } else if (used + strlen(ep) + 2 < sizeof(listeners)) {
            used += (size_t)snprintf(listeners + used, sizeof(listeners) - used, "%s%s",
                                     used ? "," : "", ep);
        }
    }
    if (raft[0] == '\0') {
        resp->error_code = KC_ERR_INVALID_REQUEST;
        resp->error_message = KC_STR_LIT("Add voter request didn't include the endpoint for the "
                                         "default listener " RAFT_LISTENER);
        return KC_API_DONE;
    }
    change_call_t *cc = kc_arena_alloc(a, sizeof(*cc));
    if (cc == NULL)
        return KC_API_CLOSE;
    *cc =
        (change_call_t){.call = call, .arena = a, .resp = resp, .id = q->voter_id, .adding = true};
    kc_uuid_format(&q->voter_directory_id, cc->dir);
    int rc = kc_cluster_add_voter(ctx->cluster, q->voter_id, cc->dir, raft, listeners,
                                  q->timeout_ms, on_change_done, cc);
    if (rc == 0)
        return KC_API_PARKED;
    change_error(cc, rc, NULL, a);
    return KC_API_DONE;
}

int kc_api_remove_raft_voter(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                             kc_arena_t *a, void *out)
{
    const kc_remove_raft_voter_request_t *q = req->body;
    kc_add_raft_voter_response_t *resp = out;
    if (ctx->cluster == NULL)
        return KC_API_CLOSE;
    if (change_precheck(ctx, call, q->cluster_id, a, resp) != 0)
        return KC_API_DONE;
    if (q->voter_id < 0 || uuid_zero(&q->voter_directory_id)) {
        resp->error_code = KC_ERR_INVALID_REQUEST;
        resp->error_message = KC_STR_LIT("Remove voter request didn't include a valid voter");
        return KC_API_DONE;
    }
    change_call_t *cc = kc_arena_alloc(a, sizeof(*cc));
    if (cc == NULL)
        return KC_API_CLOSE;
    *cc = (change_call_t){.call = call, .arena = a, .resp = resp, .id = q->voter_id};
    kc_uuid_format(&q->voter_directory_id, cc->dir);
    int rc = kc_cluster_remove_voter(ctx->cluster, q->voter_id, cc->dir, 30000, on_change_done, cc);
    if (rc == 0)
        return KC_API_PARKED;
    change_error(cc, rc, NULL, a);
    return KC_API_DONE;
}
