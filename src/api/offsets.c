/* offsets.c - OffsetCommit, OffsetFetch and OffsetDelete.
 *
 * Each request is checked here against the topic catalog (topic, partition, metadata and record
 * size), then handed to the shard that owns the group (coord.h's shard door), which checks it
 * against the group (generation, member, state), as Kafka does, and applies it to the offsets.
 * OffsetFetch answers the single-group form (v0-7) and the batched form (v8+) from one lookup
 * routine.
 */
#include <string.h>

#include "api/api.h"

/* The topic a request names, by name (v0-9) or, in v10, by id. Sets *name to the catalog's
 * name. Returns NULL (and the error to use in *err) when it is not in the catalog. */
static const kc_topic_t *resolve_topic(kc_api_ctx_t *ctx, int by_id, kc_str_t name, kc_uuid_t id,
                                       int16_t *err)
{
    const kc_topic_t *t =
        by_id ? kc_catalog_find_id(ctx->catalog, id) : kc_catalog_find(ctx->catalog, name);
    if (t == NULL)
        *err = by_id ? KC_ERR_UNKNOWN_TOPIC_ID : KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    return t;
}

/* The answer of OffsetCommit partitions that are never stored, found before the shard sees
 * the request: the topic must be in the catalog with that partition, and the metadata and the
 * record must fit their bounds. Returns 0 when the partition may be stored. */
static int16_t commit_precheck(kc_api_ctx_t *ctx, const kc_offset_commit_request_t *q,
                               const kc_topic_t *t, int16_t topic_err,
                               const kc_offset_commit_request_partition_t *qp, kc_str_t md)
{
    if (t == NULL || qp->partition_index < 0 || qp->partition_index >= t->partitions)
        return t == NULL ? topic_err : KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (md.len > ctx->conf->offset_metadata_max_bytes)
        return KC_ERR_OFFSET_METADATA_TOO_LARGE;
    /* Its OffsetCommit record must fit in message.max.bytes: key (version, group, topic,
     * partition: 10 bytes + names) and value (at most 34 bytes + metadata) in a batch of their
     * own (82 bytes of framing). Kafka 4's coordinator answers a write too large with
     * UNKNOWN_SERVER_ERROR (its CoordinatorOperationExceptionHelper maps MESSAGE_TOO_LARGE so),
     * and so does kcoord. */
    size_t rec_bytes = 82 + 10 + (size_t)(q->group_id.len > 0 ? q->group_id.len : 0) +
                       strlen(t->name) + 34 + (size_t)md.len;
    if (rec_bytes > (size_t)ctx->conf->message_max_bytes)
        return KC_ERR_UNKNOWN_SERVER_ERROR;
    return KC_ERR_NONE;
}

int kc_api_offset_commit(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                         kc_arena_t *a, void *out)
{
    const kc_offset_commit_request_t *q = req->body;
    kc_offset_commit_response_t *resp = out;
    int16_t v = call->version;
    int by_id = v >= 10;
    kc_time_t now = kc_coord_time(ctx->coord);
    /* KafkaApis.handleOffsetCommitRequest: GROUP READ for the request, then TOPIC READ per
     * topic (TOPIC_AUTHORIZATION_FAILED on each of its partitions, before the catalog is
     * asked whether the topic exists). */
    int16_t perr = KC_ERR_GROUP_AUTHORIZATION_FAILED;
    kc_partition_t *p = kc_api_authorized(call, KC_OP_READ, KC_RES_GROUP, q->group_id)
                            ? kc_api_partition(ctx, call, q->group_id, &perr)
                            : NULL;
    if (p == NULL)
        return kc_api_fail(call, q, out, perr, a) == 0 ? KC_API_DONE : KC_API_CLOSE;

    /* Every partition of the request, flat, as the shard takes them. */
    int32_t nt = q->topics.n > 0 ? q->topics.n : 0;
    size_t total = 0;
    for (int32_t i = 0; i < nt; i++)
        total += q->topics.v[i].partitions.n > 0 ? (size_t)q->topics.v[i].partitions.n : 0;
    kc_offset_commit_response_topic_t *rt = nt ? kc_arena_alloc(a, (size_t)nt * sizeof(*rt)) : NULL;
    kc_shard_commit_t *sc = total ? kc_arena_alloc(a, total * sizeof(*sc)) : NULL;
    if ((nt && rt == NULL) || (total && sc == NULL))
        return KC_API_CLOSE;
    size_t k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kc_offset_commit_request_topic_t *qt = &q->topics.v[i];
        int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
        int16_t topic_err = KC_ERR_NONE;
        const kc_topic_t *t = resolve_topic(ctx, by_id, qt->name, qt->topic_id, &topic_err);
        if ((t != NULL || !by_id) &&
            !kc_api_authorized(call, KC_OP_READ, KC_RES_TOPIC, t ? kc_str_c(t->name) : qt->name)) {
            t = NULL;
            topic_err = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
        for (int32_t j = 0; j < np; j++, k++) {
            const kc_offset_commit_request_partition_t *qp = &qt->partitions.v[j];
            kc_str_t md = qp->committed_metadata.len < 0 ? KC_STR_EMPTY : qp->committed_metadata;
            sc[k] = (kc_shard_commit_t){
                .topic = t ? kc_str_c(t->name) : qt->name,
                .partition = qp->partition_index,
                .value = {.offset = qp->committed_offset,
                          .leader_epoch = v >= 6 ? qp->committed_leader_epoch : -1,
                          .metadata = md,
                          .commit_ts_ms = now.wall_ms,
                          .expire_ts_ms = -1},
                .error_code = commit_precheck(ctx, q, t, topic_err, qp, md),
            };
            /* v1 carries the client's commit time; v2-4 a retention time for every offset. */
            if (v == 1 && qp->commit_timestamp != -1)
                sc[k].value.commit_ts_ms = qp->commit_timestamp;
            if (v >= 2 && v <= 4 && q->retention_time_ms != -1)
                sc[k].value.expire_ts_ms = now.wall_ms + q->retention_time_ms;
        }
    }
    /* v0 has no generation: it is a simple commit, like generation -1. */
    int32_t generation = v >= 1 ? q->generation_id_or_member_epoch : -1;
    kc_str_t member = v >= 1 ? q->member_id : KC_STR_EMPTY;
    kc_shard_commit_offsets(p, now, v, q->group_id, generation, member, q->group_instance_id, sc,
                            total);

    k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kc_offset_commit_request_topic_t *qt = &q->topics.v[i];
        int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
        kc_offset_commit_response_partition_t *rp =
            np ? kc_arena_alloc(a, (size_t)np * sizeof(*rp)) : NULL;
        if (np && rp == NULL)
            return KC_API_CLOSE;
        for (int32_t j = 0; j < np; j++, k++) {
            rp[j].partition_index = sc[k].partition;
            rp[j].error_code = sc[k].error_code;
        }
        rt[i].name = qt->name;
        rt[i].topic_id = qt->topic_id;
        rt[i].partitions.v = rp;
        rt[i].partitions.n = np;
    }
    resp->topics.v = rt;
    resp->topics.n = nt;
    return KC_API_DONE;
}

/* ---- OffsetFetch --------------------------------------------------------------------------- */

/* One group's answer in the batched (v8+) shape; the v0-7 answer is converted from it. */
typedef struct fetch_acc_s {
    kc_arena_t *a;
    kc_api_ctx_t *ctx;
    kc_api_call_t *call;
    int by_id;
    kc_offset_fetch_response_topics_t *topics;
    int32_t n, cap;
    int oom;
} fetch_acc_t;

static kc_offset_fetch_response_topics_t *acc_topic(fetch_acc_t *acc, kc_str_t name, kc_uuid_t id)
{
    if (acc->n == acc->cap) {
        int32_t cap = acc->cap ? acc->cap * 2 : 8;
        kc_offset_fetch_response_topics_t *v = kc_arena_alloc(acc->a, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            acc->oom = 1;
            return NULL;
        }
        if (acc->n)
            memcpy(v, acc->topics, (size_t)acc->n * sizeof(*v));
        acc->topics = v;
        acc->cap = cap;
    }
    kc_offset_fetch_response_topics_t *t = &acc->topics[acc->n++];
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->topic_id = id;
    return t;
}

static void fill_partition(kc_offset_fetch_response_partitions_t *rp, int32_t partition,
                           const kc_offset_t *o)
{
    rp->partition_index = partition;
    rp->committed_offset = o ? o->offset : -1;
    rp->committed_leader_epoch = o ? o->leader_epoch : -1;
    rp->metadata = o ? o->metadata : KC_STR_EMPTY;
    rp->error_code = KC_ERR_NONE;
}

/* Every committed offset of the group, grouped by topic (kc_shard_fetch_all gives topic
 * order). */
static void each_offset(void *arg, kc_str_t topic, int32_t partition, const kc_offset_t *o)
{
    fetch_acc_t *acc = arg;
    if (acc->oom)
        return;
    kc_offset_fetch_response_topics_t *t =
        acc->n > 0 && kc_str_eq(acc->topics[acc->n - 1].name, topic) ? &acc->topics[acc->n - 1]
                                                                     : NULL;
    if (t == NULL) {
        /* The offsets of a topic the caller may not DESCRIBE are left out of an "all" fetch
         * (KafkaApis.fetchAllOffsetsForGroup). */
        if (!kc_api_authorized(acc->call, KC_OP_DESCRIBE, KC_RES_TOPIC, topic))
            return;
        kc_uuid_t id = {{0}};
        const kc_topic_t *ct = kc_catalog_find(acc->ctx->catalog, topic);
        if (acc->by_id && ct == NULL)
            return; /* a v10 answer names topics by id: offsets of a gone topic are left out */
        if (ct)
            id = ct->id;
        t = acc_topic(acc, topic, id);
        if (t == NULL)
            return;
    }
    /* Grow the partition array by one (arena: copy on growth, doubling). */
    int32_t n = t->partitions.n;
    if ((n & (n - 1)) == 0) {
        int32_t cap = n ? n * 2 : 1;
        kc_offset_fetch_response_partitions_t *v = kc_arena_alloc(acc->a, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            acc->oom = 1;
            return;
        }
        if (n)
            memcpy(v, t->partitions.v, (size_t)n * sizeof(*v));
        t->partitions.v = v;
    }
    fill_partition(&t->partitions.v[n], partition, o);
    t->partitions.n = n + 1;
}

/* One named topic of an OffsetFetch group: answered in the pass for refused topics when the
 * caller may not DESCRIBE it, else in the first pass. */
static void fetch_topic(fetch_acc_t *acc, kc_partition_t *p, kc_str_t group_id,
                        const kc_offset_fetch_request_topics_t *qt, bool refused_pass)
{
    int16_t err = KC_ERR_NONE;
    kc_str_t name = qt->name;
    const kc_topic_t *t = NULL;
    if (acc->by_id) {
        t = resolve_topic(acc->ctx, 1, name, qt->topic_id, &err);
        if (t)
            name = kc_str_c(t->name);
    }
    bool refused = (t != NULL || !acc->by_id) &&
                   !kc_api_authorized(acc->call, KC_OP_DESCRIBE, KC_RES_TOPIC, name);
    if (refused != refused_pass)
        return;
    kc_offset_fetch_response_topics_t *rt = acc_topic(acc, qt->name, qt->topic_id);
    int32_t np = qt->partition_indexes.n > 0 ? qt->partition_indexes.n : 0;
    kc_offset_fetch_response_partitions_t *rp =
        np ? kc_arena_alloc(acc->a, (size_t)np * sizeof(*rp)) : NULL;
    if (rt == NULL || (np && rp == NULL)) {
        acc->oom = 1;
        return;
    }
    rt->partitions.v = rp;
    rt->partitions.n = np;
    for (int32_t j = 0; j < np; j++) {
        int32_t part = qt->partition_indexes.v[j];
        bool none = refused || (acc->by_id && t == NULL);
        const kc_offset_t *o = none ? NULL : kc_shard_fetch_offset(p, group_id, name, part);
        fill_partition(&rp[j], part, o);
        if (refused)
            rp[j].error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
        else if (acc->by_id && t == NULL)
            rp[j].error_code = err;
    }
}

/* Answer one group: `topics` NULL (n < 0) means every topic with a committed offset. */
static void fetch_group(kc_api_ctx_t *ctx, kc_api_call_t *call, kc_arena_t *a, kc_str_t group_id,
                        kc_str_t member_id, int32_t member_epoch,
                        const kc_offset_fetch_request_topics_t *topics, int32_t n_topics,
                        kc_offset_fetch_response_group_t *out)
{
    int16_t v = call->version;
    out->group_id = group_id;
    if (!kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_GROUP, group_id)) {
        out->error_code = KC_ERR_GROUP_AUTHORIZATION_FAILED;
        return;
    }
    kc_partition_t *p = kc_api_partition(ctx, call, group_id, &out->error_code);
    if (p == NULL)
        return;
    if (v >= 9) {
        /* The member fields are checked against KIP-848 consumer groups only. */
        out->error_code = kc_shard_fetch_check(p, group_id, member_id, member_epoch);
        if (out->error_code != KC_ERR_NONE)
            return;
    }
    fetch_acc_t acc = {.a = a, .ctx = ctx, .call = call, .by_id = v >= 10};
    if (n_topics < 0) {
        kc_shard_fetch_all(p, group_id, each_offset, &acc);
    } else {
        /* Named topics (KafkaApis.fetchOffsetsForGroup): those the caller may DESCRIBE are
         * answered first, then the others, each partition with offset -1 and
         * TOPIC_AUTHORIZATION_FAILED. */
        for (int pass = 0; pass < 2; pass++)
            for (int32_t i = 0; i < n_topics && !acc.oom; i++)
                fetch_topic(&acc, p, group_id, &topics[i], pass == 1);
    }
    if (acc.oom) {
        out->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    out->topics.v = acc.topics;
    out->topics.n = acc.n;
}

int kc_api_offset_fetch(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                        kc_arena_t *a, void *out)
{
    const kc_offset_fetch_request_t *q = req->body;
    kc_offset_fetch_response_t *resp = out;
    int16_t v = call->version;
    if (v >= 8) {
        int32_t n = q->groups.n > 0 ? q->groups.n : 0;
        kc_offset_fetch_response_group_t *g = n ? kc_arena_alloc(a, (size_t)n * sizeof(*g)) : NULL;
        if (n && g == NULL)
            return KC_API_CLOSE;
        for (int32_t i = 0; i < n; i++) {
            const kc_offset_fetch_request_group_t *qg = &q->groups.v[i];
            fetch_group(ctx, call, a, qg->group_id, qg->member_id, qg->member_epoch, qg->topics.v,
                        qg->topics.n, &g[i]);
        }
        resp->groups.v = g;
        resp->groups.n = n;
        return KC_API_DONE;
    }

    /* v0-7: one group; convert the topic list to the batched shape, and the answer back. */
    int32_t nt = q->topics.n;
    kc_offset_fetch_request_topics_t *topics =
        nt > 0 ? kc_arena_alloc(a, (size_t)nt * sizeof(*topics)) : NULL;
    if (nt > 0 && topics == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < nt; i++) {
        topics[i].name = q->topics.v[i].name;
        topics[i].partition_indexes.v = q->topics.v[i].partition_indexes.v;
        topics[i].partition_indexes.n = q->topics.v[i].partition_indexes.n;
    }
    kc_offset_fetch_response_group_t g;
    memset(&g, 0, sizeof(g));
    fetch_group(ctx, call, a, q->group_id, KC_STR_EMPTY, -1, topics, nt, &g);
    resp->error_code = g.error_code;
    if (v < 2 && g.error_code != KC_ERR_NONE && g.topics.n == 0 && nt > 0) {
        /* A group error found before any partition was looked at (NOT_COORDINATOR, a loading
         * partition): v0-1 have no top-level error, so every requested partition carries it
         * with offset -1, as Kafka answers; an empty list would read as "nothing committed". */
        kc_offset_fetch_response_topics_t *gt = kc_arena_alloc(a, (size_t)nt * sizeof(*gt));
        if (gt == NULL)
            return KC_API_CLOSE;
        for (int32_t i = 0; i < nt; i++) {
            int32_t np = topics[i].partition_indexes.n > 0 ? topics[i].partition_indexes.n : 0;
            kc_offset_fetch_response_partitions_t *gp =
                np ? kc_arena_alloc(a, (size_t)np * sizeof(*gp)) : NULL;
            if (np && gp == NULL)
                return KC_API_CLOSE;
            for (int32_t j = 0; j < np; j++)
                fill_partition(&gp[j], topics[i].partition_indexes.v[j], NULL);
            memset(&gt[i], 0, sizeof(gt[i]));
            gt[i].name = topics[i].name;
            gt[i].partitions.v = gp;
            gt[i].partitions.n = np;
        }
        g.topics.v = gt;
        g.topics.n = nt;
    }
    int32_t n = g.topics.n;
    kc_offset_fetch_response_topic_t *rt = n ? kc_arena_alloc(a, (size_t)n * sizeof(*rt)) : NULL;
    if (n && rt == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < n; i++) {
        const kc_offset_fetch_response_topics_t *src = &g.topics.v[i];
        int32_t np = src->partitions.n;
        kc_offset_fetch_response_partition_t *rp =
            np ? kc_arena_alloc(a, (size_t)np * sizeof(*rp)) : NULL;
        if (np && rp == NULL)
            return KC_API_CLOSE;
        for (int32_t j = 0; j < np; j++) {
            const kc_offset_fetch_response_partitions_t *sp = &src->partitions.v[j];
            rp[j].partition_index = sp->partition_index;
            rp[j].committed_offset = sp->committed_offset;
            rp[j].committed_leader_epoch = sp->committed_leader_epoch;
            rp[j].metadata = sp->metadata;
            /* Before v2 there is no top-level error: a group error goes on each partition. */
            rp[j].error_code = v < 2 && g.error_code ? g.error_code : sp->error_code;
        }
        rt[i].name = src->name;
        rt[i].partitions.v = rp;
        rt[i].partitions.n = np;
    }
    resp->topics.v = rt;
    resp->topics.n = n;
    return KC_API_DONE;
}

/* ---- OffsetDelete -------------------------------------------------------------------------- */

int kc_api_offset_delete(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                         kc_arena_t *a, void *out)
{
    const kc_offset_delete_request_t *q = req->body;
    kc_offset_delete_response_t *resp = out;
    /* KafkaApis.handleOffsetDeleteRequest: GROUP DELETE for the request, then TOPIC READ per
     * topic (TOPIC_AUTHORIZATION_FAILED on its partitions, before the catalog is asked). */
    if (!kc_api_authorized(call, KC_OP_DELETE, KC_RES_GROUP, q->group_id)) {
        resp->error_code = KC_ERR_GROUP_AUTHORIZATION_FAILED;
        return KC_API_DONE;
    }
    kc_partition_t *p = kc_api_partition(ctx, call, q->group_id, &resp->error_code);
    if (p == NULL)
        return KC_API_DONE;
    /* Every partition of the request, flat, as the shard takes them. Kafka's broker drops a
     * topic or partition its metadata does not have before the group coordinator sees the
     * request, so those are answered here first. */
    int32_t nt = q->topics.n > 0 ? q->topics.n : 0;
    size_t total = 0;
    for (int32_t i = 0; i < nt; i++)
        total += q->topics.v[i].partitions.n > 0 ? (size_t)q->topics.v[i].partitions.n : 0;
    kc_shard_offset_del_t *sd = total ? kc_arena_alloc(a, total * sizeof(*sd)) : NULL;
    if (total && sd == NULL)
        return KC_API_CLOSE;
    size_t k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kc_offset_delete_request_topic_t *qt = &q->topics.v[i];
        int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
        bool allowed = kc_api_authorized(call, KC_OP_READ, KC_RES_TOPIC, qt->name);
        const kc_topic_t *t = kc_catalog_find(ctx->catalog, qt->name);
        for (int32_t j = 0; j < np; j++, k++) {
            int32_t part = qt->partitions.v[j].partition_index;
            bool known = t != NULL && part >= 0 && part < t->partitions;
            sd[k] = (kc_shard_offset_del_t){
                .topic = qt->name,
                .partition = part,
                .error_code = !allowed ? KC_ERR_TOPIC_AUTHORIZATION_FAILED
                              : known  ? KC_ERR_NONE
                                       : KC_ERR_UNKNOWN_TOPIC_OR_PARTITION,
            };
        }
    }
    resp->error_code = kc_shard_delete_offsets(p, q->group_id, sd, total);
    if (resp->error_code != KC_ERR_NONE)
        return KC_API_DONE;
    kc_offset_delete_response_topic_t *rt = nt ? kc_arena_alloc(a, (size_t)nt * sizeof(*rt)) : NULL;
    if (nt && rt == NULL)
        return KC_API_CLOSE;
    k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kc_offset_delete_request_topic_t *qt = &q->topics.v[i];
        int32_t np = qt->partitions.n > 0 ? qt->partitions.n : 0;
        kc_offset_delete_response_partition_t *rp =
            np ? kc_arena_alloc(a, (size_t)np * sizeof(*rp)) : NULL;
        if (np && rp == NULL)
            return KC_API_CLOSE;
        for (int32_t j = 0; j < np; j++, k++) {
            rp[j].partition_index = sd[k].partition;
            rp[j].error_code = sd[k].error_code;
        }
        rt[i].name = qt->name;
        rt[i].partitions.v = rp;
        rt[i].partitions.n = np;
    }
    resp->topics.v = rt;
    resp->topics.n = nt;
    return KC_API_DONE;
}
