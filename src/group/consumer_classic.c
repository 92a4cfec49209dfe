/* consumer_classic.c - classic members in a consumer group: JoinGroup, SyncGroup and Heartbeat
 * of a member that speaks the classic protocol to a KIP-848 consumer group (Kafka 4.4's
 * classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup and
 * classicGroupHeartbeatToConsumerGroup), and the ConsumerProtocol codecs the conversions
 * between kinds use.
 *
 * How it works: a classic member is an ordinary member of the consumer group whose metadata
 * carries Kafka's ClassicMemberMetadata (its session timeout and the protocols of its
 * JoinGroup). Its JoinGroup is run through the consumer heartbeat's steps
 * (kc_consumer_run_heartbeat with a cjoin_t): the ConsumerProtocolSubscription gives the
 * subscribed topics, the rack and the partitions it owns, the server assignor computes the
 * target, and the member is reconciled one step, exactly as a ConsumerGroupHeartbeat would.
 * The answer carries generation = member epoch and no member list (the member is never the
 * leader). Its SyncGroup gets its current assignment as a ConsumerProtocolAssignment, and its
 * Heartbeat answers REBALANCE_IN_PROGRESS whenever the member must revoke or may acquire
 * partitions, which makes the client rejoin: the classic rejoin is the consumer protocol's
 * reconciliation step. Timers: the session (its classic session timeout), a sync timeout
 * armed by the JoinGroup answer, and a join timeout armed when it is asked to rejoin; both
 * fence it (consumer.c's timers). Its LeaveGroup is consumer_admin.c's
 * kc_consumer_classic_leave.
 *
 * Every entry point answers at once; the host holds the answer until the records it caused
 * are durable, as for a ConsumerGroupHeartbeat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/assignment.h"
#include "group/consumer.h"
#include "group/consumer_group.h"
#include "group/target.h"

#define CONSUMER_PROTOCOL_TYPE "consumer"
/* The highest ConsumerProtocolSubscription / Assignment version this side reads and writes. */
#define CONSUMER_PROTOCOL_MAX_VERSION 3

static int32_t consumer_max_size(const kc_consumer_t *c)
{
    return c->cfg.consumer_max_size > 0 ? c->cfg.consumer_max_size : INT32_MAX;
}

static const kc_gm_topic_t *topic_by_name(const kc_gm_topics_t *tv, kc_str_t name)
{
    for (size_t i = 0; i < tv->n; i++)
        if (kc_str_eq(tv->v[i].name, name))
            return &tv->v[i];
    return NULL;
}

/* ---- ConsumerProtocol codecs ------------------------------------------------------------- */

int16_t kc_consumer_protocol_version(kc_bytes_t metadata)
{
    kc_reader_t r;
    kc_rd_init(&r, metadata.p, metadata.len > 0 ? (size_t)metadata.len : 0);
    int16_t v = kc_rd_i16(&r);
    return r.err ? -1 : v;
}

int kc_consumer_decode_subscription(kc_bytes_t metadata, kc_arena_t *a,
                                    kc_consumer_protocol_subscription_t *out)
{
    kc_reader_t r;
    kc_rd_init(&r, metadata.p, metadata.len > 0 ? (size_t)metadata.len : 0);
    int16_t v = kc_rd_i16(&r);
    if (r.err || v < 0)
        return -1;
    kc_consumer_protocol_subscription_init(out);
    if (v > CONSUMER_PROTOCOL_MAX_VERSION)
        v = CONSUMER_PROTOCOL_MAX_VERSION;
    return kc_consumer_protocol_subscription_decode(&r, a, v, out) != 0 ? -1 : 0;
}

kc_bytes_t kc_consumer_encode_assignment(const asg_t *asg, const kc_gm_topics_t *tv,
                                         int16_t version, kc_arena_t *a, bool *oom)
{
    if (version < 0)
        version = 0;
    if (version > CONSUMER_PROTOCOL_MAX_VERSION)
        version = CONSUMER_PROTOCOL_MAX_VERSION;
    kc_consumer_protocol_assignment_t m;
    kc_consumer_protocol_assignment_init(&m);
    int32_t n = asg ? asg->n : 0;
    if (n > 0) {
        m.assigned_partitions.v = kc_arena_alloc(a, (size_t)n * sizeof(*m.assigned_partitions.v));
        if (!m.assigned_partitions.v) {
            *oom = true;
            return (kc_bytes_t){NULL, 0};
        }
    }
    int32_t w = 0;
    for (int32_t i = 0; i < n; i++) {
        const kc_gm_topic_t *t = kc_target_tv_id(tv, &asg->t[i].topic);
        if (!t) /* a deleted topic: Kafka's toConsumerProtocolAssignment leaves it out */
            continue;
        m.assigned_partitions.v[w].topic = t->name;
        m.assigned_partitions.v[w].partitions.v = (int32_t *)asg->t[i].p;
        m.assigned_partitions.v[w].partitions.n = asg->t[i].n;
        w++;
    }
    m.assigned_partitions.n = w;
    kc_writer_t wr;
    kc_wr_init(&wr);
    kc_wr_i16(&wr, version);
    kc_consumer_protocol_assignment_encode(&wr, version, &m);
    kc_bytes_t out = {NULL, 0};
    if (!wr.err) {
        uint8_t *p = kc_arena_dup(a, wr.buf ? wr.buf : (const uint8_t *)"", wr.len);
        if (p)
            out = (kc_bytes_t){p, (int32_t)wr.len};
    }
    if (!out.p)
        *oom = true;
    kc_wr_free(&wr);
    return out;
}

static bool static_downgrade(kc_consumer_t *c, cgroup_t *g, cmember_t *st,
                             const kc_join_group_request_t *req, kc_str_t mid,
                             const kc_consumer_protocol_subscription_t *sub,
                             const kc_classic_protocol_t *protos, kc_str_t client_id,
                             kc_str_t client_host, kc_arena_t *a, kc_join_group_response_t *resp);

/* ---- JoinGroup ------------------------------------------------------------------------------ */

/* Kafka's ConsumerGroup.supportsClassicProtocols: the type is "consumer" and one of the names
 * is supported by every classic member. */
static bool protocols_supported(const cgroup_t *g, const kc_join_group_request_t *req)
{
    if (!kc_str_eq(req->protocol_type, KC_STR_LIT(CONSUMER_PROTOCOL_TYPE)))
        return false;
    int32_t n_classic = 0;
    for (const cmember_t *m = g->head; m; m = m->next)
        n_classic += m->meta->classic;
    for (int32_t i = 0; i < req->protocols.n; i++) {
        int32_t have = 0;
        for (const cmember_t *m = g->head; m; m = m->next) {
            if (!m->meta->classic)
                continue;
            for (int32_t k = 0; k < m->meta->n_protocols; k++) {
                if (kc_str_eq(m->meta->protocols[k].name, req->protocols.v[i].name)) {
                    have++;
                    break;
                }
            }
        }
        if (have == n_classic)
            return true;
    }
    return false;
}

/* The partitions the subscription says the member owns, by topic id (topics that do not
 * exist are left out, as Kafka's toTopicPartitions does). */
static int owned_partitions(const kc_consumer_protocol_subscription_t *sub,
                            const kc_gm_topics_t *tv, kc_arena_t *a,
                            kc_consumer_group_heartbeat_request_t *q)
{
    int32_t n = sub->owned_partitions.n > 0 ? sub->owned_partitions.n : 0;
    q->topic_partitions.n = 0;
    q->topic_partitions.v = NULL;
    if (n == 0)
        return 0;
    q->topic_partitions.v = kc_arena_alloc(a, (size_t)n * sizeof(*q->topic_partitions.v));
    if (!q->topic_partitions.v)
        return -1;
    int32_t w = 0;
    for (int32_t i = 0; i < n; i++) {
        const kc_gm_topic_t *t = topic_by_name(tv, sub->owned_partitions.v[i].topic);
        if (!t)
            continue;
        q->topic_partitions.v[w].topic_id = t->id;
        q->topic_partitions.v[w].partitions.v = sub->owned_partitions.v[i].partitions.v;
        q->topic_partitions.v[w].partitions.n = sub->owned_partitions.v[i].partitions.n > 0
                                                    ? sub->owned_partitions.v[i].partitions.n
                                                    : 0;
        w++;
    }
    q->topic_partitions.n = w;
    return 0;
}

static void join_error(kc_join_group_response_t *resp, int16_t err, kc_str_t member_id)
{
    kc_join_group_response_init(resp);
    resp->error_code = err;
    resp->member_id = member_id.len >= 0 ? member_id : KC_STR_EMPTY;
}

void kc_consumer_classic_join(kc_consumer_t *c, kc_time_t now, int16_t version,
                              const kc_join_group_request_t *req, kc_str_t client_id,
                              kc_str_t client_host, kc_arena_t *a, kc_join_group_response_t *resp)
{
    kc_consumer_set_time(c, now);
    kc_str_t given = req->member_id.len >= 0 ? req->member_id : KC_STR_EMPTY;
    kc_str_t instance = version >= 5 ? req->group_instance_id : KC_STR_NULL;
    cgroup_t *g = kc_consumer_find_group(c, req->group_id);
    /* GroupCoordinatorService.joinGroup's checks first. */
    if (!g || !kc_text_set(req->group_id)) {
        join_error(resp, KC_ERR_INVALID_GROUP_ID, given);
        return;
    }
    if (req->session_timeout_ms < c->cfg.min_session_timeout_ms ||
        req->session_timeout_ms > c->cfg.max_session_timeout_ms) {
        join_error(resp, KC_ERR_INVALID_SESSION_TIMEOUT, given);
        return;
    }
    /* Kafka's throwIfClassicMemberCannotJoinConsumerGroup (KAFKA-20640). */
    if (c->cfg.consumer_migration_policy == KC_GM_MIGRATION_DISABLED) {
        kc_consumer_refused(c, KC_GM_REFUSED_PROTOCOL, g->id,
                            KC_STR_LIT("a classic member (JoinGroup) in a consumer group while "
                                       "group.consumer.migration.policy is disabled "
                                       "(INCONSISTENT_GROUP_PROTOCOL)"));
        join_error(resp, KC_ERR_INCONSISTENT_GROUP_PROTOCOL, given);
        return;
    }
    bool unknown = given.len == 0;
    kc_str_t mid = unknown ? kc_consumer_random_member_id(c, a) : given;
    if (mid.len < 0) {
        join_error(resp, KC_ERR_COORDINATOR_NOT_AVAILABLE, given);
        return;
    }
    /* Kafka's throwIfConsumerGroupIsFull: a known static member does not count. */
    if (!(instance.len >= 0 && kc_consumer_find_static(g, instance)) &&
        g->n_members >= consumer_max_size(c) &&
        (mid.len == 0 || !kc_consumer_find_member(g, mid))) {
        join_error(resp, KC_ERR_GROUP_MAX_SIZE_REACHED, given);
        return;
    }
    if (!protocols_supported(g, req)) {
        join_error(resp, KC_ERR_INCONSISTENT_GROUP_PROTOCOL, given);
        return;
    }
    /* KIP-394: a dynamic member without an id gets one and must join again with it. */
    if (version >= 4 && unknown && instance.len < 0) {
        join_error(resp, KC_ERR_MEMBER_ID_REQUIRED, mid);
        KC_DEBUG("group", "consumer group %.*s: classic member %.*s must rejoin with its id",
                 SV(g->id), SV(mid));
        return;
    }
    kc_consumer_protocol_subscription_t sub;
    if (kc_consumer_decode_subscription(req->protocols.v[0].metadata, a, &sub) != 0) {
        join_error(resp, KC_ERR_INCONSISTENT_GROUP_PROTOCOL, given);
        return;
    }

    /* The member's JoinGroup as a heartbeat: its subscription, rack and owned partitions. */
    kc_gm_topics_t tv;
    kc_target_topics_of(c, &tv);
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    q.group_id = req->group_id;
    q.member_id = mid;
    q.member_epoch = 0;
    q.instance_id = instance;
    q.rack_id = sub.rack_id;
    q.rebalance_timeout_ms = version == 0 ? req->session_timeout_ms : req->rebalance_timeout_ms;
    q.subscribed_topic_names.v = sub.topics.v;
    q.subscribed_topic_names.n = sub.topics.n > 0 ? sub.topics.n : 0;
    q.subscribed_topic_regex = KC_STR_NULL;
    q.server_assignor = KC_STR_NULL;
    kc_classic_protocol_t *protos = kc_arena_alloc(a, (size_t)req->protocols.n * sizeof(*protos));
    if (!protos || owned_partitions(&sub, &tv, a, &q) != 0) {
        join_error(resp, KC_ERR_COORDINATOR_NOT_AVAILABLE, given);
        return;
    }
    for (int32_t i = 0; i < req->protocols.n; i++) {
        protos[i].name = req->protocols.v[i].name;
        protos[i].metadata = req->protocols.v[i].metadata;
    }
    /* A classic static member replacing the last consumer-protocol member: the group may
     * become a classic group (Kafka's validateOnlineDowngradeWithReplacedMember). */
    cmember_t *st = instance.len >= 0 && unknown ? kc_consumer_find_static(g, instance) : NULL;
    if (st && static_downgrade(c, g, st, req, mid, &sub, protos, client_id, client_host, a, resp))
        return;
    cjoin_t cj = {unknown, req->session_timeout_ms, protos, req->protocols.n};
    kc_consumer_group_heartbeat_response_t hr;
    kc_consumer_group_heartbeat_response_init(&hr);
    hb_t h = {c, 1, &q, client_id, client_host, a, &hr, &cj};
    kc_consumer_run_heartbeat(&h);
    if (hr.error_code) {
        join_error(resp, hr.error_code, given);
        return;
    }

    /* The soft state (after the records, as Kafka's appendFuture): no join timeout any more,
     * the sync timeout runs until its SyncGroup. */
    cmember_t *m = kc_consumer_find_member(g, hr.member_id);
    if (m) {
        kc_consumer_cancel_classic_timer(m, CT_JOIN);
        kc_consumer_set_classic_timer(g, m, CT_SYNC, q.rebalance_timeout_ms, false);
    }
    bool oom = false;
    kc_join_group_response_init(resp);
    resp->generation_id = hr.member_epoch;
    resp->protocol_type = KC_STR_LIT(CONSUMER_PROTOCOL_TYPE);
    resp->protocol_name = kc_text_arena(a, req->protocols.v[0].name, &oom);
    resp->leader = KC_STR_EMPTY;
    resp->member_id = kc_text_arena(a, hr.member_id, &oom);
    resp->members.n = 0;
    if (oom)
        join_error(resp, KC_ERR_COORDINATOR_NOT_AVAILABLE, given);
}

/* ---- SyncGroup and Heartbeat ---------------------------------------------------------------- */

/* Kafka's validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol. */
static cmember_t *classic_member(cgroup_t *g, kc_str_t member_id, kc_str_t instance, int16_t *err)
{
    cmember_t *m;
    *err = 0;
    if (instance.len < 0) {
        m = g ? kc_consumer_find_member(g, member_id) : NULL;
        if (!m)
            *err = KC_ERR_UNKNOWN_MEMBER_ID;
    } else {
        m = g ? kc_consumer_find_static(g, instance) : NULL;
        if (!m)
            *err = KC_ERR_UNKNOWN_MEMBER_ID;
        else if (!kc_str_eq(m->id, member_id))
            *err = KC_ERR_FENCED_INSTANCE_ID;
    }
    if (!*err && !m->meta->classic)
        *err = KC_ERR_UNKNOWN_MEMBER_ID;
    return *err ? NULL : m;
}

void kc_consumer_classic_sync(kc_consumer_t *c, kc_time_t now, int16_t version,
                              const kc_sync_group_request_t *req, kc_arena_t *a,
                              kc_sync_group_response_t *resp)
{
    kc_consumer_set_time(c, now);
    kc_sync_group_response_init(resp);
    kc_str_t ptype = version >= 5 ? req->protocol_type : KC_STR_NULL;
    kc_str_t pname = version >= 5 ? req->protocol_name : KC_STR_NULL;
    /* KafkaApis: from v5 the protocol type and name are mandatory. */
    if (version >= 5 && (ptype.len < 0 || pname.len < 0)) {
        resp->error_code = KC_ERR_INCONSISTENT_GROUP_PROTOCOL;
        return;
    }
    cgroup_t *g = kc_consumer_find_group(c, req->group_id);
    int16_t err;
    cmember_t *m = classic_member(g, req->member_id,
                                  version >= 3 ? req->group_instance_id : KC_STR_NULL, &err);
    if (!m) {
        resp->error_code = err;
        return;
    }
    if (req->generation_id != m->epoch) {
        resp->error_code = KC_ERR_ILLEGAL_GENERATION;
        return;
    }
    /* Kafka's throwIfClassicProtocolUnmatched. */
    if ((ptype.len >= 0 && !kc_str_eq(ptype, KC_STR_LIT(CONSUMER_PROTOCOL_TYPE))) ||
        (pname.len >= 0 && m->meta->n_protocols > 0 &&
         !kc_str_eq(pname, m->meta->protocols[0].name))) {
        resp->error_code = KC_ERR_INCONSISTENT_GROUP_PROTOCOL;
        return;
    }
    /* Kafka's throwIfRebalanceInProgress: a newer target is waiting for this member's rejoin,
     * unless it is still revoking (it rejoined already). */
    if (g->assignment_epoch > m->epoch && m->state != MS_UNREVOKED) {
        kc_consumer_set_classic_timer(g, m, CT_JOIN, m->meta->rebalance_timeout_ms, true);
        resp->error_code = KC_ERR_REBALANCE_IN_PROGRESS;
        return;
    }
    kc_gm_topics_t tv;
    kc_target_topics_of(c, &tv);
    bool oom = false;
    int16_t v =
        m->meta->n_protocols > 0 ? kc_consumer_protocol_version(m->meta->protocols[0].metadata) : 0;
    resp->assignment = kc_consumer_encode_assignment(m->assigned, &tv, v, a, &oom);
    if (oom) {
        kc_sync_group_response_init(resp);
        resp->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    kc_consumer_cancel_classic_timer(m, CT_SYNC);
    kc_consumer_set_session(g, m);
    resp->protocol_type = ptype;
    resp->protocol_name = pname;
}

/* Kafka's ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target that it does
 * not have yet is still held by another member. */
static bool waiting_on_unreleased(cgroup_t *g, const cmember_t *m)
{
    if (m->state != MS_UNRELEASED)
        return false;
    const asg_t *t = kc_consumer_target_of(g, m->id);
    if (!t)
        return false;
    if (!g->holders.valid) {
        g->holders.valid = true;
        for (const cmember_t *x = g->head; x && g->holders.valid; x = x->next) {
            kc_asg_holders_apply(&g->holders, x->assigned, 1);
            kc_asg_holders_apply(&g->holders, x->revoking, 1);
        }
        if (!g->holders.valid)
            return true; /* out of memory: keep waiting, the next heartbeat asks again */
    }
    for (int32_t i = 0; i < t->n; i++)
        for (int32_t k = 0; k < t->t[i].n; k++)
            if (!kc_asg_has(m->assigned, &t->t[i].topic, t->t[i].p[k]) &&
                kc_asg_holders_count(&g->holders, &t->t[i].topic, t->t[i].p[k]) > 0)
                return true;
    return false;
}

void kc_consumer_classic_heartbeat(kc_consumer_t *c, kc_time_t now, int16_t version,
                                   const kc_heartbeat_request_t *req, kc_heartbeat_response_t *resp)
{
    kc_consumer_set_time(c, now);
    kc_heartbeat_response_init(resp);
    cgroup_t *g = kc_consumer_find_group(c, req->group_id);
    int16_t err;
    cmember_t *m = classic_member(g, req->member_id,
                                  version >= 3 ? req->group_instance_id : KC_STR_NULL, &err);
    if (!m) {
        resp->error_code = err;
        return;
    }
    if (req->generation_id != m->epoch) {
        resp->error_code = KC_ERR_ILLEGAL_GENERATION;
        return;
    }
    kc_consumer_set_session(g, m);
    /* The member rejoins when a newer target waits for it, when it must revoke partitions, or
     * when the partitions it waits for are free. */
    if (m->epoch < g->assignment_epoch || m->state == MS_UNREVOKED ||
        (m->state == MS_UNRELEASED && !waiting_on_unreleased(g, m))) {
        kc_consumer_set_classic_timer(g, m, CT_JOIN, m->meta->rebalance_timeout_ms, true);
        resp->error_code = KC_ERR_REBALANCE_IN_PROGRESS;
    }
}

/* ---- Upgrade: a classic group becomes a consumer group ------------------------------------- */

struct kc_cimport_s {
    plan_t p; /* the new group (p.g, in no map yet) and its records */
};

void kc_consumer_import_free(kc_cimport_t *im)
{
    if (!im)
        return;
    kc_consumer_plan_free(&im->p);
    free(im);
}

#define MSG_MALFORMED                                                                              \
    "Cannot upgrade classic group %.*s to consumer group because the embedded consumer protocol "  \
    "is malformed."
#define MSG_USER_DATA                                                                              \
    "Cannot upgrade classic group %.*s to consumer group because an unsupported custom "           \
    "assignor is in use. Please refer to the documentation or switch to a default assignor "       \
    "before re-attempting the upgrade."

/* A member's classic assignment as an asg_t (NULL: empty), topics by id (unknown ones left
 * out, as Kafka's toTopicPartitionMap). 0, -1 malformed, -2 user data, -3 out of memory. */
static int import_assignment(kc_bytes_t b, const kc_gm_topics_t *tv, kc_arena_t *a, asg_t **out)
{
    *out = NULL;
    if (b.len <= 0) /* Kafka's EMPTY_ASSIGNMENT: the member never synced */
        return 0;
    kc_reader_t r;
    kc_rd_init(&r, b.p, (size_t)b.len);
    int16_t v = kc_rd_i16(&r);
    kc_consumer_protocol_assignment_t as;
    kc_consumer_protocol_assignment_init(&as);
    if (r.err || v < 0 ||
        kc_consumer_protocol_assignment_decode(
            &r, a, v > CONSUMER_PROTOCOL_MAX_VERSION ? CONSUMER_PROTOCOL_MAX_VERSION : v, &as) != 0)
        return -1;
    if (as.user_data.len > 0)
        return -2;
    tpv_t l = {0};
    for (int32_t i = 0; i < as.assigned_partitions.n; i++) {
        const kc_consumer_protocol_assignment_topic_partition_t *tp = &as.assigned_partitions.v[i];
        const kc_gm_topic_t *t = topic_by_name(tv, tp->topic);
        for (int32_t k = 0; t && k < tp->partitions.n; k++)
            kc_asg_tpv_add(&l, &t->id, tp->partitions.v[k]);
    }
    bool oom = l.oom;
    *out = oom ? NULL : kc_asg_build(&l, &oom);
    kc_asg_tpv_free(&l);
    return oom ? -3 : 0;
}

/* The metadata of a converted member (Kafka's fromClassicGroup builder). NULL: out of memory. */
static cmeta_t *import_meta(const kc_conv_member_t *cm,
                            const kc_consumer_protocol_subscription_t *sub, kc_arena_t *a)
{
    kc_classic_protocol_t *pv =
        kc_arena_alloc(a, (size_t)(cm->n_protocols > 0 ? cm->n_protocols : 1) * sizeof(*pv));
    if (!pv)
        return NULL;
    for (int32_t i = 0; i < cm->n_protocols; i++) {
        pv[i].name = cm->protocols[i].name;
        pv[i].metadata = cm->protocols[i].metadata;
    }
    cmeta_t m;
    memset(&m, 0, sizeof(m));
    m.instance_id = cm->instance_id;
    m.rack_id = sub->rack_id;
    m.client_id = cm->client_id.len >= 0 ? cm->client_id : KC_STR_EMPTY;
    m.client_host = cm->client_host.len >= 0 ? cm->client_host : KC_STR_EMPTY;
    m.regex = KC_STR_EMPTY;
    m.assignor = KC_STR_NULL;
    m.rebalance_timeout_ms = cm->rebalance_timeout_ms;
    m.topics = sub->topics.v;
    m.n_topics = sub->topics.n > 0 ? sub->topics.n : 0;
    m.classic = true;
    m.classic_session_timeout_ms = cm->session_timeout_ms;
    m.protocols = pv;
    m.n_protocols = cm->n_protocols;
    return kc_consumer_meta_new(&m);
}

/* The member's subscription: the metadata of the group's protocol (its first one when the
 * group has not selected one yet). */
static kc_bytes_t import_subscription(const kc_conv_group_t *cv, const kc_conv_member_t *cm)
{
    for (int32_t i = 0; i < cm->n_protocols; i++)
        if (cv->protocol_name.len < 0 || kc_str_eq(cm->protocols[i].name, cv->protocol_name))
            return cm->protocols[i].metadata;
    return (kc_bytes_t){(const uint8_t *)"", 0};
}

/* Plan one member: its metadata record now; its target and current assignment go to the
 * lists the records come in (Kafka's createConsumerGroupRecords order). 0 or as
 * import_assignment. */
static int import_member(plan_t *p, const kc_conv_group_t *cv, const kc_conv_member_t *cm,
                         const kc_gm_topics_t *tv, kc_arena_t *a, asg_t **asg, strv_t *subs,
                         keep_t *keep)
{
    kc_consumer_protocol_subscription_t sub;
    if (kc_consumer_decode_subscription(import_subscription(cv, cm), a, &sub) != 0)
        return -1;
    int rc = import_assignment(cm->assignment, tv, a, asg);
    if (rc != 0)
        return rc;
    cmember_t *slot = kc_consumer_member_alloc(cm->id);
    cmeta_t *meta = slot ? import_meta(cm, &sub, a) : NULL;
    if (!meta) {
        kc_consumer_member_free(slot);
        return -3;
    }
    kc_consumer_ap_member(p->g, cm->id, &slot); /* reserved by the caller */
    kc_target_member_subs(p->g, tv, meta, subs, keep);
    act_t *act = kc_consumer_plan_add(p, A_META, kc_consumer_find_member(p->g, cm->id)->id);
    if (!act) {
        free(meta);
        return -3;
    }
    act->meta = meta;
    kc_consumer_act_encode(p, act, p->g->id, p->c->wall);
    return p->oom ? -3 : 0;
}

/* The records after the members' metadata: group epoch, targets, target epoch, current
 * assignments (every member Stable at the classic generation). Takes asgs[]. */
static void import_tail(plan_t *p, const kc_conv_group_t *cv, asg_t **asgs, int64_t hash)
{
    int64_t now = p->c->wall;
    act_t *a = kc_consumer_plan_add(p, A_GROUP_EPOCH, KC_STR_NULL);
    if (a) {
        a->epoch = cv->generation;
        a->hash = hash;
        kc_consumer_act_encode(p, a, p->g->id, now);
    }
    for (int32_t i = 0; i < cv->n; i++) {
        bool oom = false;
        asg_t *copy = kc_asg_dup(asgs[i], &oom);
        if (oom)
            p->oom = true;
        kc_consumer_plan_target(p, kc_consumer_find_member(p->g, cv->v[i].id)->id, copy, now);
    }
    a = kc_consumer_plan_add(p, A_TARGET_EPOCH, KC_STR_NULL);
    if (a) {
        a->epoch = cv->generation;
        kc_consumer_act_encode(p, a, p->g->id, now);
    }
    for (int32_t i = 0; i < cv->n; i++) {
        a = kc_consumer_plan_add(p, A_CURRENT, kc_consumer_find_member(p->g, cv->v[i].id)->id);
        if (!a)
            break;
        a->epoch = a->prev_epoch = cv->generation;
        a->state = MS_STABLE;
        a->asg = asgs[i];
        asgs[i] = NULL;
        kc_consumer_act_encode(p, a, p->g->id, now);
    }
}

int16_t kc_consumer_import_prepare(kc_consumer_t *c, const kc_conv_group_t *cv, kc_str_t member_id,
                                   kc_cimport_t **out, const char **why)
{
    *out = NULL;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_cimport_t *im = calloc(1, sizeof(*im));
    asg_t **asgs = calloc((size_t)(cv->n > 0 ? cv->n : 1), sizeof(*asgs));
    int32_t n_static = 0;
    for (int32_t i = 0; i < cv->n; i++)
        n_static += cv->v[i].instance_id.len >= 0;
    cgroup_t *g = im && asgs ? kc_consumer_group_alloc(c, cv->id) : NULL;
    int rc = -3;
    if (g) {
        im->p = (plan_t){.c = c, .g = g, .new_group = true};
        if (kc_consumer_reserve_group(c) == 0 &&
            kc_strmap_reserve(&g->by_id, (size_t)(cv->n > 0 ? cv->n : 1)) == 0 &&
            kc_strmap_reserve(&g->by_instance, (size_t)(n_static > 0 ? n_static : 1)) == 0 &&
            kc_heap_reserve(&g->sessions, (size_t)cv->n + 1) == 0 &&
            kc_heap_reserve(&g->rebalances, (size_t)cv->n + 1) == 0)
            rc = 0;
    }
    kc_gm_topics_t tv;
    kc_target_topics_of(c, &tv);
    strv_t subs = {0};
    keep_t keep = {0};
    for (int32_t i = 0; rc == 0 && i < cv->n; i++)
        rc = import_member(&im->p, cv, &cv->v[i], &tv, &a, &asgs[i], &subs, &keep);
    if (rc == 0) {
        kc_target_strv_sort_unique(&subs);
        int64_t hash = kc_target_metadata_hash(&tv, &subs);
        if (subs.oom)
            rc = -3;
        else
            import_tail(&im->p, cv, asgs, hash);
        if (im->p.oom)
            rc = -3;
    }
    kc_target_strv_free(&subs);
    kc_target_keep_free(&keep);
    for (int32_t i = 0; asgs && i < cv->n; i++)
        free(asgs[i]);
    free(asgs);
    kc_arena_free(&a);
    if (rc != 0) {
        kc_consumer_import_free(im); /* and the group, when it was made */
        if (rc == -1 || rc == -2) {
            KC_WARN("group", "group %.*s: cannot upgrade the classic group: %s", SV(cv->id),
                    rc == -1 ? "a member's embedded consumer protocol is malformed"
                             : "a custom assignor's user data would be lost");
            *why = rc == -1 ? MSG_MALFORMED : MSG_USER_DATA;
            return KC_ERR_GROUP_ID_NOT_FOUND;
        }
        return KC_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    im->p.rb_set = true;
    im->p.rb_cause = KC_RB_UPGRADE;
    im->p.rb_member = member_id;
    im->p.rb_reason = KC_STR_NULL;
    im->p.rb_joined = KC_STR_NULL;
    *out = im;
    return 0;
}

void kc_consumer_import_commit(kc_consumer_t *c, kc_cimport_t *im)
{
    cgroup_t *g = im->p.g;
    kc_consumer_commit(&im->p, "upgraded from a classic group");
    /* Kafka schedules each member's session with its classic session timeout. */
    for (cmember_t *m = g->head; m; m = m->next)
        kc_consumer_set_session(g, m);
    (void)c;
    kc_consumer_import_free(im);
}

/* ---- Downgrade: a consumer group becomes a classic group ----------------------------------- */

static bool fenced(cmember_t *const *ms, size_t n, const cmember_t *m)
{
    for (size_t i = 0; i < n; i++)
        if (ms[i] == m)
            return true;
    return false;
}

/* The remaining members as a kc_conv_group_t in `a` (Kafka's ClassicGroup.fromConsumerGroup
 * reads): each one's target assignment encoded at the version of its subscription. 0, or -1
 * when out of memory. */
static int export_group(const cgroup_t *g, cmember_t *const *ms, size_t n, kc_arena_t *a,
                        kc_conv_group_t *cv)
{
    kc_gm_topics_t tv;
    kc_target_topics_of(g->c, &tv);
    memset(cv, 0, sizeof(*cv));
    bool oom = false;
    cv->id = kc_text_arena(a, g->id, &oom);
    cv->generation = g->epoch;
    cv->protocol_type = KC_STR_LIT(CONSUMER_PROTOCOL_TYPE);
    cv->protocol_name = KC_STR_NULL;
    cv->v = kc_arena_alloc(a, (size_t)(g->n_members > 0 ? g->n_members : 1) * sizeof(*cv->v));
    if (!cv->v)
        return -1;
    for (const cmember_t *m = g->head; m && !oom; m = m->next) {
        if (fenced(ms, n, m))
            continue;
        const cmeta_t *mt = m->meta;
        kc_conv_member_t *x = &cv->v[cv->n++];
        x->id = kc_text_arena(a, m->id, &oom);
        x->instance_id = kc_text_arena(a, mt->instance_id, &oom);
        x->client_id = kc_text_arena(a, mt->client_id, &oom);
        x->client_host = kc_text_arena(a, mt->client_host, &oom);
        x->session_timeout_ms = mt->classic_session_timeout_ms;
        x->rebalance_timeout_ms = mt->rebalance_timeout_ms;
        kc_join_group_request_protocol_t *pv =
            kc_arena_alloc(a, (size_t)(mt->n_protocols > 0 ? mt->n_protocols : 1) * sizeof(*pv));
        if (!pv)
            return -1;
        for (int32_t k = 0; k < mt->n_protocols; k++) {
            pv[k].name = kc_text_arena(a, mt->protocols[k].name, &oom);
            kc_bytes_t md = mt->protocols[k].metadata;
            pv[k].metadata = (kc_bytes_t){
                md.len > 0 ? kc_arena_dup(a, md.p, (size_t)md.len) : (const uint8_t *)"", md.len};
            if (md.len > 0 && !pv[k].metadata.p)
                oom = true;
        }
        x->protocols = pv;
        x->n_protocols = mt->n_protocols;
        /* Kafka serializes at the version of the metadata of the selected protocol; a client's
         * protocols all carry the same subscription, so its first one's version serves. */
        int16_t v =
            mt->n_protocols > 0 ? kc_consumer_protocol_version(mt->protocols[0].metadata) : 0;
        x->assignment =
            kc_consumer_encode_assignment(kc_consumer_target_of(g, m->id), &tv, v, a, &oom);
    }
    return oom ? -1 : 0;
}

int kc_consumer_maybe_downgrade(kc_consumer_t *c, cgroup_t *g, cmember_t **ms, size_t n,
                                const char *reason)
{
    /* Kafka's allMembersUseClassicProtocolExcept: every member that stays is classic. */
    int32_t remaining = 0;
    for (const cmember_t *m = g->head; m; m = m->next) {
        if (fenced(ms, n, m))
            continue;
        if (!m->meta->classic)
            return 0;
        remaining++;
    }
    if (!kc_manager_downgrade_allowed(c->gm, remaining))
        return 0;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_conv_group_t cv;
    plan_t p = {.c = c, .g = g};
    char why[200];
    snprintf(why, sizeof(why), "Downgrade group %.*s from consumer to classic for member leaving.",
             SV(g->id));
    kc_str_t who = KC_STR_NULL;
    if (export_group(g, ms, n, &a, &cv) == 0) {
        bool oom = false;
        who = kc_text_arena(&a, ms[0]->id, &oom);
        kc_consumer_plan_delete(&p, c->wall);
        if (oom)
            p.oom = true;
    } else {
        p.oom = true;
    }
    if (p.oom) {
        KC_ERROR("group", "consumer group %.*s: out of memory downgrading it; members fenced",
                 SV(g->id));
        kc_consumer_plan_free(&p);
        kc_arena_free(&a);
        return 0;
    }
    KC_DEBUG("group", "consumer group %.*s: downgraded to a classic group (%s)", SV(g->id), reason);
    kc_consumer_commit(&p, reason); /* the group's tombstones: g is freed */
    kc_consumer_plan_free(&p);
    if (kc_manager_downgrade(c->gm, &cv, true, who, why) != 0)
        KC_ERROR("group",
                 "group %.*s: out of memory building the downgraded classic group; its "
                 "members join again",
                 SV(cv.id));
    kc_arena_free(&a);
    return 1;
}

/* The subscription of a classic JoinGroup differs from the member's metadata (Kafka's
 * hasMemberSubscriptionChanged for the replacing member): other topics, or a regex it had. */
static bool subscription_changed(const cmeta_t *old, const kc_consumer_protocol_subscription_t *sub)
{
    if (kc_text_set(old->regex))
        return true;
    int32_t n = sub->topics.n > 0 ? sub->topics.n : 0;
    int32_t distinct = 0;
    for (int32_t i = 0; i < n; i++) {
        bool dup = false;
        for (int32_t k = 0; k < i && !dup; k++)
            dup = kc_str_eq(sub->topics.v[k], sub->topics.v[i]);
        if (dup)
            continue;
        distinct++;
        if (!kc_consumer_meta_has_topic(old, sub->topics.v[i]))
            return true;
    }
    return distinct != old->n_topics;
}

/* Kafka's classicGroupJoinToConsumerGroup when a classic static member replaces `st`, the only
 * consumer-protocol member: convertToClassicGroup with the joining member in st's place (its
 * target assignment), rebalancing only when the assignment is stale (KAFKA-20272/20273): the
 * subscription changed or the target is behind the group epoch. true when it converted and
 * answered. */
static bool static_downgrade(kc_consumer_t *c, cgroup_t *g, cmember_t *st,
                             const kc_join_group_request_t *req, kc_str_t mid,
                             const kc_consumer_protocol_subscription_t *sub,
                             const kc_classic_protocol_t *protos, kc_str_t client_id,
                             kc_str_t client_host, kc_arena_t *a, kc_join_group_response_t *resp)
{
    if (st->meta->classic)
        return false;
    for (const cmember_t *m = g->head; m; m = m->next)
        if (m != st && !m->meta->classic)
            return false;
    if (!kc_manager_downgrade_allowed(c->gm, g->n_members))
        return false;
    bool rebalance = subscription_changed(st->meta, sub) || g->assignment_epoch < g->epoch;
    kc_arena_t ca;
    kc_arena_init(&ca);
    kc_conv_group_t cv;
    plan_t p = {.c = c, .g = g};
    bool oom = export_group(g, &st, 1, &ca, &cv) != 0;
    if (!oom) {
        /* The joining member, with the replaced one's target. */
        kc_gm_topics_t tv;
        kc_target_topics_of(c, &tv);
        kc_conv_member_t *x = &cv.v[cv.n++];
        memset(x, 0, sizeof(*x));
        x->id = kc_text_arena(&ca, mid, &oom);
        x->instance_id = kc_text_arena(&ca, req->group_instance_id, &oom);
        x->client_id = kc_text_arena(&ca, client_id.len >= 0 ? client_id : KC_STR_EMPTY, &oom);
        x->client_host =
            kc_text_arena(&ca, client_host.len >= 0 ? client_host : KC_STR_EMPTY, &oom);
        x->session_timeout_ms = req->session_timeout_ms;
        x->rebalance_timeout_ms = req->rebalance_timeout_ms;
        kc_join_group_request_protocol_t *pv =
            kc_arena_alloc(&ca, (size_t)req->protocols.n * sizeof(*pv));
        for (int32_t k = 0; pv && k < req->protocols.n; k++) {
            pv[k].name = kc_text_arena(&ca, protos[k].name, &oom);
            kc_bytes_t md = protos[k].metadata;
            pv[k].metadata = (kc_bytes_t){
                md.len > 0 ? kc_arena_dup(&ca, md.p, (size_t)md.len) : (const uint8_t *)"", md.len};
            if (md.len > 0 && !pv[k].metadata.p)
                oom = true;
        }
        x->protocols = pv;
        x->n_protocols = req->protocols.n;
        x->assignment = kc_consumer_encode_assignment(
            kc_consumer_target_of(g, st->id), &tv, kc_consumer_protocol_version(protos[0].metadata),
            &ca, &oom);
        oom = oom || !pv;
    }
    if (!oom)
        kc_consumer_plan_delete(&p, c->wall);
    if (oom || p.oom) {
        kc_consumer_plan_free(&p);
        kc_arena_free(&ca);
        return false; /* out of memory: the member joins the consumer group instead */
    }
    char why[200];
    snprintf(why, sizeof(why),
             "Downgrade group %.*s from consumer to classic with stale assignment.", SV(g->id));
    kc_consumer_commit(&p, "a classic static member replaced the last consumer-protocol member");
    kc_consumer_plan_free(&p); /* g is gone */
    int rc = kc_manager_downgrade(c->gm, &cv, rebalance, cv.v[cv.n - 1].id,
                                  rebalance ? why
                                            : "a classic static member replaced the last "
                                              "consumer-protocol member");
    bool oom2 = false;
    kc_join_group_response_init(resp);
    resp->error_code = rc == 0 ? 0 : KC_ERR_COORDINATOR_NOT_AVAILABLE;
    resp->generation_id = rebalance ? 0 : cv.generation;
    resp->protocol_type = KC_STR_LIT(CONSUMER_PROTOCOL_TYPE);
    resp->protocol_name = kc_text_arena(a, req->protocols.v[0].name, &oom2);
    resp->leader = KC_STR_EMPTY;
    resp->member_id = kc_text_arena(a, mid, &oom2);
    kc_arena_free(&ca);
    return true;
}
