/* consumer_admin.c - reading and administering consumer groups: ListGroups summaries, offset
 * validation, the classic APIs on a consumer group, DescribeConsumerGroups, the text dump and
 * the JSON views. */

#include "group/consumer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/consumer_group.h"
#include "group/target.h"

/* ---- Admin and offsets --------------------------------------------------------------------- */

bool kc_consumer_exists(const kc_consumer_t *c, kc_str_t id)
{
    return kc_consumer_find_group(c, id) != NULL;
}

bool kc_consumer_is_empty(const kc_consumer_t *c, kc_str_t id)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    return g && g->n_members == 0;
}

static void fill_info(const cgroup_t *g, kc_group_info_t *out)
{
    int s = kc_consumer_compute_state(g);
    memset(out, 0, sizeof(*out));
    out->group_id = g->id;
    out->type = "consumer";
    out->state_name = kc_consumer_state_names[s];
    out->state = s == CG_EMPTY ? KC_GROUP_EMPTY : KC_GROUP_STABLE;
    out->protocol_type = KC_STR_LIT("consumer");
    out->protocol = KC_STR_EMPTY;
    out->generation = g->epoch;
    out->n_members = g->n_members;
    out->state_timestamp_ms = -1;
}

int kc_consumer_info(const kc_consumer_t *c, kc_str_t id, kc_group_info_t *out)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return -1;
    fill_info(g, out);
    return 0;
}

void kc_consumer_each(const kc_consumer_t *c, void (*fn)(void *arg, const kc_group_info_t *g),
                      void *arg)
{
    for (size_t i = 0; i < kc_manager_slots(c->gm); i++) {
        const kc_ghead_t *h = kc_manager_slot(c->gm, i, KC_KIND_CONSUMER);
        const cgroup_t *g = h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
        if (!g)
            continue;
        kc_group_info_t info;
        fill_info(g, &info);
        fn(arg, &info);
    }
}

/* Kafka's ConsumerGroup.validateOffsetCommit (never transactional here). */
int16_t kc_consumer_validate_commit(kc_consumer_t *c, int16_t version, kc_str_t id, int32_t epoch,
                                    kc_str_t member_id)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    /* An admin client or a consumer without group management commits into an empty group. */
    if (epoch < 0 && g->n_members == 0)
        return 0;
    const cmember_t *m = kc_consumer_find_member(g, member_id);
    if (!m)
        return KC_ERR_UNKNOWN_MEMBER_ID;
    if (!m->meta->classic && version < 9)
        return KC_ERR_UNSUPPORTED_VERSION;
    if (epoch != m->epoch)
        return m->meta->classic ? KC_ERR_ILLEGAL_GENERATION : KC_ERR_STALE_MEMBER_EPOCH;
    return 0;
}

/* Kafka's ConsumerGroup.validateOffsetFetch. */
int16_t kc_consumer_validate_fetch(const kc_consumer_t *c, kc_str_t id, kc_str_t member_id,
                                   int32_t epoch)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return 0;
    if (member_id.len < 0 && epoch < 0)
        return 0;
    const cmember_t *m = kc_consumer_find_member(g, member_id);
    if (!m)
        return KC_ERR_UNKNOWN_MEMBER_ID;
    if (epoch != m->epoch)
        return m->meta->classic ? KC_ERR_ILLEGAL_GENERATION : KC_ERR_STALE_MEMBER_EPOCH;
    return 0;
}

/* Kafka's ModernGroup.isSubscribedToTopic: a topic one of the members subscribes to, by name
 * or through its regular expression. */
bool kc_consumer_subscribed(const kc_consumer_t *c, kc_str_t id, kc_str_t topic)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return false;
    kc_gm_topics_t tv;
    kc_target_topics_of(c, &tv);
    for (const cmember_t *m = g->head; m; m = m->next)
        if (kc_target_member_subscribed(g, &tv, m->meta, topic))
            return true;
    return false;
}

/* Kafka's classicGroupLeaveToConsumerGroup: the named members are fenced together. */
void kc_consumer_classic_leave(kc_consumer_t *c, kc_time_t now, kc_str_t id,
                               const kc_member_identity_t *ids, int32_t n, int16_t *errors)
{
    kc_consumer_set_time(c, now);
    cgroup_t *g = kc_consumer_find_group(c, id);
    cmember_t **valid = n > 0 ? calloc((size_t)n, sizeof(*valid)) : NULL;
    size_t nv = 0;
    for (int32_t i = 0; i < n; i++) {
        cmember_t *m = NULL;
        errors[i] = 0;
        if (!g) {
            errors[i] = KC_ERR_UNKNOWN_MEMBER_ID;
            continue;
        }
        if (ids[i].group_instance_id.len < 0) {
            m = kc_consumer_find_member(g, ids[i].member_id);
        } else {
            m = kc_consumer_find_static(g, ids[i].group_instance_id);
            if (m && ids[i].member_id.len > 0 && !kc_str_eq(m->id, ids[i].member_id)) {
                errors[i] = KC_ERR_FENCED_INSTANCE_ID;
                continue;
            }
        }
        if (!m) {
            errors[i] = KC_ERR_UNKNOWN_MEMBER_ID;
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < nv && !dup; k++)
            dup = valid[k] == m;
        if (!dup && valid)
            valid[nv++] = m;
    }
    if (nv > 0 && kc_consumer_fence(c, g, valid, nv, "the members left through LeaveGroup",
                                    KC_RB_MEMBER_LEFT) < 0)
        for (int32_t i = 0; i < n; i++)
            errors[i] = KC_ERR_COORDINATOR_NOT_AVAILABLE;
    if (n > 0 && !valid)
        for (int32_t i = 0; i < n; i++)
            errors[i] = KC_ERR_COORDINATOR_NOT_AVAILABLE;
    free(valid);
}

/* ConsumerGroupDescribe's assignment of a member, from `a`: topics the catalog no longer has
 * are left out, as Kafka does. */
static int describe_assignment(kc_arena_t *a, const kc_gm_topics_t *tv, const asg_t *asg,
                               kc_consumer_group_describe_assignment_t *out)
{
    bool oom = false;
    int32_t n = asg ? asg->n : 0, k = 0;
    out->topic_partitions.v = NULL;
    out->topic_partitions.n = 0;
    if (n == 0)
        return 0;
    kc_consumer_group_describe_topic_partitions_t *v = kc_arena_alloc(a, (size_t)n * sizeof(*v));
    if (!v)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        const kc_gm_topic_t *t = kc_target_tv_id(tv, &asg->t[i].topic);
        if (!t)
            continue;
        v[k].topic_id = asg->t[i].topic;
        v[k].topic_name = kc_text_arena(a, t->name, &oom);
        v[k].partitions.v = kc_arena_dup(a, asg->t[i].p, (size_t)asg->t[i].n * sizeof(int32_t));
        v[k].partitions.n = asg->t[i].n;
        if (!v[k].partitions.v)
            oom = true;
        k++;
    }
    out->topic_partitions.v = v;
    out->topic_partitions.n = k;
    return oom ? -1 : 0;
}

void kc_consumer_describe(const kc_consumer_t *c, int16_t version, kc_str_t group_id,
                          bool include_authorized_operations, kc_arena_t *a,
                          kc_consumer_group_describe_described_group_t *out)
{
    bool oom = false;
    memset(out, 0, sizeof(*out));
    out->error_message = KC_STR_NULL;
    out->group_state = KC_STR_EMPTY;
    out->assignor_name = KC_STR_EMPTY;
    out->authorized_operations = INT32_MIN;
    out->group_id = kc_text_arena(a, group_id.len >= 0 ? group_id : KC_STR_EMPTY, &oom);
    const cgroup_t *g = kc_consumer_find_group(c, group_id);
    if (!g) {
        out->error_code = KC_ERR_GROUP_ID_NOT_FOUND;
        if (kc_manager_classic_kind(c->gm, group_id) != KC_CLASSIC_NONE)
            out->error_message =
                kc_consumer_msgf(a, "Group %.*s is not a consumer group.", SV(group_id));
        else
            out->error_message = kc_consumer_msgf(a, "Group %.*s not found.", SV(group_id));
        return;
    }
    kc_gm_topics_t tv;
    kc_target_topics_of(c, &tv);
    out->group_state = kc_str_c(kc_consumer_state_names[kc_consumer_compute_state(g)]);
    out->group_epoch = g->epoch;
    out->assignment_epoch = g->assignment_epoch;
    kc_str_t name = kc_target_preferred_assignor(g, NULL, NULL, NULL);
    out->assignor_name = kc_text_arena(a, name, &oom);
    if (g->n_members > 0) {
        kc_member_t *v = kc_arena_alloc(a, (size_t)g->n_members * sizeof(*v));
        if (!v) {
            oom = true;
        } else {
            int32_t i = 0;
            for (const cmember_t *m = g->head; m; m = m->next, i++) {
                const cmeta_t *mt = m->meta;
                v[i].member_id = kc_text_arena(a, m->id, &oom);
                v[i].instance_id = kc_text_arena(a, mt->instance_id, &oom);
                v[i].rack_id = kc_text_arena(a, mt->rack_id, &oom);
                v[i].member_epoch = m->epoch;
                v[i].client_id = kc_text_arena(a, mt->client_id, &oom);
                v[i].client_host = kc_text_arena(a, mt->client_host, &oom);
                v[i].subscribed_topic_regex = kc_text_arena(a, mt->regex, &oom);
                v[i].subscribed_topic_names.n = mt->n_topics;
                v[i].subscribed_topic_names.v =
                    mt->n_topics ? kc_arena_alloc(a, (size_t)mt->n_topics * sizeof(kc_str_t))
                                 : NULL;
                if (mt->n_topics && !v[i].subscribed_topic_names.v)
                    oom = true;
                for (int32_t k = 0; !oom && k < mt->n_topics; k++)
                    v[i].subscribed_topic_names.v[k] = kc_text_arena(a, mt->topics[k], &oom);
                if (describe_assignment(a, &tv, m->assigned, &v[i].assignment) != 0 ||
                    describe_assignment(a, &tv, kc_consumer_target_of(g, m->id),
                                        &v[i].target_assignment) != 0)
                    oom = true;
                v[i].member_type = (int8_t)(version >= 1 ? (mt->classic ? 0 : 1) : -1);
            }
            out->members.v = v;
            out->members.n = i;
        }
    }
    if (oom) {
        memset(&out->members, 0, sizeof(out->members));
        out->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    if (include_authorized_operations)
        out->authorized_operations = KC_GROUP_AUTHORIZED_OPERATIONS;
}

/* ---- The dump ------------------------------------------------------------------------------ */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
dput(dbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->used < b->len ? b->p + b->used : NULL,
                      b->used < b->len ? b->len - b->used : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->used += (size_t)n;
}

static void dput_asg(dbuf_t *b, const asg_t *a)
{
    dput(b, "[");
    for (int32_t i = 0; a && i < a->n; i++) {
        dput(b, "%s", i ? " " : "");
        for (int k = 0; k < 16; k++)
            dput(b, "%02x", a->t[i].topic.b[k]);
        dput(b, ":");
        for (int32_t j = 0; j < a->t[i].n; j++)
            dput(b, "%s%d", j ? "," : "", (int)a->t[i].p[j]);
    }
    dput(b, "]");
}

static void dput_str(dbuf_t *b, kc_str_t s)
{
    if (s.len < 0)
        dput(b, "null");
    else
        dput(b, "\"%.*s\"", SV(s));
}

static int cmp_member_ptr(const void *x, const void *y)
{
    return kc_text_cmp((*(const cmember_t *const *)x)->id, (*(const cmember_t *const *)y)->id);
}

static int cmp_target_ptr(const void *x, const void *y)
{
    return kc_text_cmp((*(const ctarget_t *const *)x)->member_id,
                       (*(const ctarget_t *const *)y)->member_id);
}

size_t kc_consumer_dump(const kc_consumer_t *c, kc_str_t group_id, char *buf, size_t len)
{
    const cgroup_t *g = kc_consumer_find_group(c, group_id);
    if (!g)
        return 0;
    dbuf_t b = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    dput(&b, "group %.*s epoch %d hash %lld assignment_epoch %d partition_metadata %d state %s\n",
         SV(g->id), (int)g->epoch, (long long)g->metadata_hash, (int)g->assignment_epoch,
         g->has_partition_metadata ? 1 : 0, kc_consumer_state_names[kc_consumer_compute_state(g)]);
    const cmember_t **ms = g->n_members ? malloc((size_t)g->n_members * sizeof(*ms)) : NULL;
    const ctarget_t **ts = g->targets.n ? malloc(g->targets.n * sizeof(*ts)) : NULL;
    size_t n = 0, nt = 0;
    for (const cmember_t *m = g->head; ms && m; m = m->next)
        ms[n++] = m;
    for (size_t i = 0; ts && i < g->targets.cap; i++) {
        const ctarget_t *t = kc_strmap_slot(&g->targets, i);
        if (t)
            ts[nt++] = t;
    }
    if (n > 1)
        qsort(ms, n, sizeof(*ms), cmp_member_ptr);
    if (nt > 1)
        qsort(ts, nt, sizeof(*ts), cmp_target_ptr);
    for (size_t i = 0; i < n; i++) {
        const cmember_t *m = ms[i];
        const cmeta_t *mt = m->meta;
        dput(&b, "member %.*s epoch %d prev %d state %s instance ", SV(m->id), (int)m->epoch,
             (int)m->prev_epoch, kc_consumer_member_state_name(m->state));
        dput_str(&b, mt->instance_id);
        dput(&b, " rack ");
        dput_str(&b, mt->rack_id);
        dput(&b, " client ");
        dput_str(&b, mt->client_id);
        dput(&b, " host ");
        dput_str(&b, mt->client_host);
        dput(&b, " rebalance_timeout %d assignor ", (int)mt->rebalance_timeout_ms);
        dput_str(&b, mt->assignor);
        dput(&b, " regex ");
        dput_str(&b, mt->regex);
        dput(&b, " topics [");
        for (int32_t k = 0; k < mt->n_topics; k++)
            dput(&b, "%s%.*s", k ? "," : "", SV(mt->topics[k]));
        dput(&b, "] assigned ");
        dput_asg(&b, m->assigned);
        dput(&b, " revoking ");
        dput_asg(&b, m->revoking);
        if (mt->classic) { /* ClassicMemberMetadata */
            dput(&b, " classic session %d protocols [", (int)mt->classic_session_timeout_ms);
            for (int32_t k = 0; k < mt->n_protocols; k++)
                dput(&b, "%s%.*s:%d", k ? "," : "", SV(mt->protocols[k].name),
                     (int)mt->protocols[k].metadata.len);
            dput(&b, "]");
        }
        dput(&b, "\n");
    }
    for (size_t i = 0; i < nt; i++) {
        dput(&b, "target %.*s ", SV(ts[i]->member_id));
        dput_asg(&b, ts[i]->asg);
        dput(&b, "\n");
    }
    free(ms);
    free(ts);
    return b.used;
}

/* ---- Introspection (group.h's kc_gm_json_*) ------------------------------------------------ */

/* An assignment as {"topic":[partitions]}; a topic the catalog no longer has is named by its
 * id in hex. */
static void json_assignment(const kc_gm_topics_t *tv, const asg_t *asg, kc_emit_fn emit, void *arg)
{
    emit(arg, "{", 1);
    for (int32_t i = 0; asg && i < asg->n; i++) {
        if (i)
            emit(arg, ",", 1);
        const kc_gm_topic_t *t = kc_target_tv_id(tv, &asg->t[i].topic);
        if (t) {
            kc_text_json_str(emit, arg, t->name);
        } else {
            static const char hex[] = "0123456789abcdef";
            char id[34];
            id[0] = '"';
            for (int k = 0; k < 16; k++) {
                id[1 + 2 * k] = hex[asg->t[i].topic.b[k] >> 4];
                id[2 + 2 * k] = hex[asg->t[i].topic.b[k] & 15];
            }
            id[33] = '"';
            emit(arg, id, sizeof(id));
        }
        emit(arg, ":[", 2);
        for (int32_t k = 0; k < asg->t[i].n; k++) {
            if (k)
                emit(arg, ",", 1);
            kc_text_json_i64(emit, arg, asg->t[i].p[k]);
        }
        emit(arg, "]", 1);
    }
    emit(arg, "}", 1);
}

static void json_summary(const cgroup_t *g, kc_emit_fn emit, void *arg)
{
    kc_text_json_lit(emit, arg, "{\"group_id\":");
    kc_text_json_str(emit, arg, g->id);
    kc_text_json_lit(emit, arg, ",\"type\":\"consumer\",\"state\":\"");
    kc_text_json_lit(emit, arg, kc_consumer_state_names[kc_consumer_compute_state(g)]);
    kc_text_json_lit(emit, arg, "\",\"protocol_type\":\"consumer\",\"protocol\":");
    kc_text_json_str(emit, arg, kc_target_preferred_assignor(g, NULL, NULL, NULL));
    kc_text_json_lit(emit, arg, ",\"generation\":");
    kc_text_json_i64(emit, arg, g->epoch);
    kc_text_json_lit(emit, arg, ",\"members\":");
    kc_text_json_i64(emit, arg, g->n_members);
    kc_text_json_lit(emit, arg, ",\"state_timestamp_ms\":-1,\"rebalance_count\":");
    kc_text_json_i64(emit, arg, g->rb.total);
    kc_text_json_lit(emit, arg, ",\"last_rebalance_end_ms\":");
    kc_text_json_i64(emit, arg, kc_history_last_end(&g->rb));
    emit(arg, "}", 1);
}

void kc_consumer_json_list(const kc_consumer_t *c, int64_t mono_ms, kc_emit_fn emit, void *arg,
                           bool *first)
{
    (void)mono_ms;
    for (size_t i = 0; i < kc_manager_slots(c->gm); i++) {
        const kc_ghead_t *h = kc_manager_slot(c->gm, i, KC_KIND_CONSUMER);
        const cgroup_t *g = h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
        if (!g)
            continue;
        if (!*first)
            emit(arg, ",", 1);
        *first = false;
        json_summary(g, emit, arg);
    }
}

int kc_consumer_json_summary(const kc_consumer_t *c, kc_str_t id, kc_emit_fn emit, void *arg)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return -1;
    json_summary(g, emit, arg);
    return 0;
}

int kc_consumer_json_group(const kc_consumer_t *c, int64_t mono_ms, kc_str_t id, kc_emit_fn emit,
                           void *arg)
{
    const cgroup_t *g = kc_consumer_find_group(c, id);
    if (!g)
        return -1;
    kc_gm_topics_t tv;
    kc_target_topics_of(c, &tv);
    kc_text_json_lit(emit, arg, "{\"group_id\":");
    kc_text_json_str(emit, arg, g->id);
    kc_text_json_lit(emit, arg, ",\"type\":\"consumer\",\"state\":\"");
    kc_text_json_lit(emit, arg, kc_consumer_state_names[kc_consumer_compute_state(g)]);
    kc_text_json_lit(emit, arg, "\",\"protocol_type\":\"consumer\",\"protocol\":");
    kc_text_json_str(emit, arg, kc_target_preferred_assignor(g, NULL, NULL, NULL));
    kc_text_json_lit(emit, arg, ",\"generation\":");
    kc_text_json_i64(emit, arg, g->epoch);
    kc_text_json_lit(emit, arg, ",\"assignment_epoch\":");
    kc_text_json_i64(emit, arg, g->assignment_epoch);
    kc_text_json_lit(emit, arg, ",\"leader\":null,\"members\":[");
    for (const cmember_t *m = g->head; m; m = m->next) {
        const cmeta_t *mt = m->meta;
        if (m != g->head)
            emit(arg, ",", 1);
        kc_text_json_lit(emit, arg, "{\"member_id\":");
        kc_text_json_str(emit, arg, m->id);
        kc_text_json_lit(emit, arg, ",\"instance_id\":");
        kc_text_json_str(emit, arg, mt->instance_id);
        kc_text_json_lit(emit, arg, ",\"client_id\":");
        kc_text_json_str(emit, arg, mt->client_id);
        kc_text_json_lit(emit, arg, ",\"client_host\":");
        kc_text_json_str(emit, arg, mt->client_host);
        kc_text_json_lit(emit, arg, ",\"assignment\":");
        json_assignment(&tv, m->assigned, emit, arg);
        kc_text_json_lit(emit, arg, ",\"pending_revocation\":");
        json_assignment(&tv, m->revoking, emit, arg);
        kc_text_json_lit(emit, arg, ",\"target_assignment\":");
        json_assignment(&tv, kc_consumer_target_of(g, m->id), emit, arg);
        kc_text_json_lit(emit, arg, ",\"last_heartbeat_age_ms\":");
        int64_t age = mono_ms - m->last_hb_ms;
        kc_text_json_i64(emit, arg, age > 0 ? age : 0);
        kc_text_json_lit(emit, arg, ",\"member_epoch\":");
        kc_text_json_i64(emit, arg, m->epoch);
        kc_text_json_lit(emit, arg, ",\"state\":\"");
        kc_text_json_lit(emit, arg, kc_consumer_member_state_name(m->state));
        kc_text_json_lit(emit, arg, "\",\"subscribed_topics\":[");
        for (int32_t k = 0; k < mt->n_topics; k++) {
            if (k)
                emit(arg, ",", 1);
            kc_text_json_str(emit, arg, mt->topics[k]);
        }
        kc_text_json_lit(emit, arg, "],\"subscribed_regex\":");
        kc_text_json_str(emit, arg, mt->regex);
        kc_text_json_lit(emit, arg, ",\"assignor\":");
        kc_text_json_str(emit, arg, mt->assignor);
        kc_text_json_lit(emit, arg, ",\"rebalance_timeout_ms\":");
        kc_text_json_i64(emit, arg, mt->rebalance_timeout_ms);
        if (mt->classic) { /* a classic member of the consumer group */
            kc_text_json_lit(emit, arg, ",\"classic\":{\"session_timeout_ms\":");
            kc_text_json_i64(emit, arg, mt->classic_session_timeout_ms);
            kc_text_json_lit(emit, arg, ",\"protocols\":[");
            for (int32_t k = 0; k < mt->n_protocols; k++) {
                if (k)
                    emit(arg, ",", 1);
                kc_text_json_str(emit, arg, mt->protocols[k].name);
            }
            kc_text_json_lit(emit, arg, "]}");
        }
        emit(arg, "}", 1);
    }
    kc_text_json_lit(emit, arg, "],\"rebalances\":");
    kc_history_json(&g->rb, mono_ms, emit, arg);
    emit(arg, "}", 1);
    return 0;
}
