/* classic_admin.c - reading and administering classic groups: ListGroups summaries, offset
 * validation, DescribeGroups, DeleteGroups, the phase histograms and the JSON views. */

#include "group/classic.h"

#include <stdio.h>
#include <string.h>

#include "group/classic_group.h"

/* ---- Offsets and admin ------------------------------------------------------------------ */

static void fill_info(const group_t *g, kc_group_info_t *out)
{
    out->group_id = g->id;
    out->type = "classic";
    out->state_name = kc_group_state_name(g->state);
    out->state = g->state;
    out->protocol_type = g->ptype ? kc_classic_ptype_view(g) : KC_STR_EMPTY;
    out->protocol = g->pname_len >= 0 ? kc_classic_pname_view(g) : KC_STR_EMPTY;
    out->generation = g->generation;
    out->n_members = g->n_members;
    out->state_timestamp_ms = g->state_ts;
}

int kc_classic_info(const kc_gm_t *gm, kc_str_t group_id, kc_group_info_t *out)
{
    const group_t *g = kc_classic_find_group(gm, group_id);
    if (!g)
        return -1;
    fill_info(g, out);
    return 0;
}

void kc_classic_each(const kc_gm_t *gm, void (*fn)(void *arg, const kc_group_info_t *g), void *arg)
{
    for (size_t i = 0; i < kc_manager_slots(gm); i++) {
        const kc_ghead_t *h = kc_manager_slot(gm, i, KC_KIND_CLASSIC);
        const group_t *g = h ? kc_heap_entry(h, group_t, gh) : NULL;
        if (!g || g->state == KC_GROUP_DEAD)
            continue;
        kc_group_info_t info;
        fill_info(g, &info);
        fn(arg, &info);
    }
}

int16_t kc_classic_validate_commit(kc_gm_t *gm, kc_time_t now, int16_t version, kc_str_t group_id,
                                   int32_t generation, kc_str_t member_id, kc_str_t instance_id)
{
    kc_classic_set_time(gm, now);
    if (group_id.len < 0)
        return KC_ERR_INVALID_GROUP_ID;
    group_t *g = kc_classic_find_group(gm, group_id);
    if (!g) {
        if (generation < 0) {
            /* A simple (manual-assignment) consumer or an admin client: Kafka creates an
             * Empty group without a protocol type to hold the offsets. */
            g = kc_classic_group_create(gm, group_id);
            if (!g)
                return KC_ERR_COORDINATOR_NOT_AVAILABLE;
            KC_DEBUG("group", "group %.*s: created to hold the offsets of a simple consumer",
                     SV(group_id));
            return 0;
        }
        return version >= 9 ? KC_ERR_GROUP_ID_NOT_FOUND : KC_ERR_ILLEGAL_GENERATION;
    }
    /* ClassicGroup.validateOffsetCommit */
    if (g->state == KC_GROUP_DEAD)
        return KC_ERR_COORDINATOR_NOT_AVAILABLE;
    if (generation < 0 && g->state == KC_GROUP_EMPTY)
        return 0;
    if (generation >= 0 || kc_text_set(member_id) || kc_text_present(instance_id)) {
        int16_t err = kc_classic_validate_member(g, member_id, instance_id);
        if (err)
            return err;
        if (generation != g->generation)
            return KC_ERR_ILLEGAL_GENERATION;
    } else if (g->state != KC_GROUP_EMPTY) {
        return KC_ERR_UNKNOWN_MEMBER_ID;
    }
    if (g->state == KC_GROUP_COMPLETING_REBALANCE)
        return KC_ERR_REBALANCE_IN_PROGRESS;
    /* OffsetMetadataManager.commitOffset: a commit keeps the member's session alive. */
    if (g->state == KC_GROUP_STABLE || g->state == KC_GROUP_PREPARING_REBALANCE) {
        member_t *m = kc_classic_find_member(g, member_id);
        if (m)
            kc_classic_set_hb(g, m, m->session_timeout_ms);
    }
    return 0;
}

int16_t kc_classic_validate_fetch(kc_gm_t *gm, kc_str_t group_id, kc_str_t member_id,
                                  int32_t member_epoch)
{
    (void)member_id;
    (void)member_epoch;
    /* ClassicGroup.validateOffsetFetch ignores the member fields (they are for KIP-848
     * groups); only a Dead group is refused. */
    const group_t *g = kc_classic_find_group(gm, group_id);
    if (g && g->state == KC_GROUP_DEAD)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    return 0;
}

bool kc_classic_subscribed(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic)
{
    const group_t *g = kc_classic_find_group(gm, group_id);
    return g && kc_classic_subscribed_to(g, topic);
}

bool kc_classic_offsets_expirable(const kc_gm_t *gm, kc_str_t group_id, int64_t *base_ms)
{
    const group_t *g = kc_classic_find_group(gm, group_id);
    *base_ms = -1;
    /* A consumer group (Kafka's ConsumerGroup.offsetExpirationCondition) counts from each
     * offset's commit time; kc_gm_subscribed protects the topics its members subscribe to. */
    if (!g || !g->ptype)
        return true; /* unknown, simple or consumer group: from each offset's commit time */
    if (g->state == KC_GROUP_EMPTY) {
        *base_ms = g->state_ts;
        return true;
    }
    if (kc_classic_uses_consumer_protocol(g) && g->subs_known && g->state == KC_GROUP_STABLE)
        return true;
    return false;
}

int16_t kc_classic_validate_offset_delete(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic)
{
    const group_t *g = kc_classic_find_group(gm, group_id);
    if (!g || g->state == KC_GROUP_DEAD)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    if (g->state != KC_GROUP_EMPTY && !kc_classic_uses_consumer_protocol(g))
        return KC_ERR_NON_EMPTY_GROUP;
    if (topic.len >= 0 && kc_classic_subscribed_to(g, topic))
        return KC_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
    return 0;
}

void kc_classic_describe(const kc_gm_t *gm, int16_t version, kc_str_t group_id,
                         bool include_authorized_operations, kc_arena_t *a,
                         kc_describe_groups_described_group_t *out)
{
    bool oom = false;
    memset(out, 0, sizeof(*out));
    out->error_message = KC_STR_NULL;
    out->group_state = KC_STR_EMPTY;
    out->protocol_type = KC_STR_EMPTY;
    out->protocol_data = KC_STR_EMPTY;
    out->authorized_operations = INT32_MIN;
    if (group_id.len < 0) {
        out->group_id = KC_STR_NULL;
        out->error_code = KC_ERR_INVALID_GROUP_ID;
        return;
    }
    out->group_id = kc_text_arena(a, group_id, &oom);
    const group_t *g = kc_classic_find_group(gm, group_id);
    if (!g || g->state == KC_GROUP_DEAD) {
        out->group_state = KC_STR_LIT("Dead");
        if (version >= 6) {
            /* GroupMetadataManager.describeGroups: a consumer group is not a classic group. */
            const char *fmt = !g && kc_manager_is_consumer(gm, group_id)
                                  ? "Group %.*s is not a classic group."
                                  : "Group %.*s not found.";
            out->error_code = KC_ERR_GROUP_ID_NOT_FOUND;
            char msg[64];
            int len = snprintf(msg, sizeof(msg), fmt, SV(group_id));
            if (len >= (int)sizeof(msg)) {
                size_t need = (size_t)len + 1;
                char *p = kc_arena_alloc(a, need);
                if (p) {
                    snprintf(p, need, fmt, SV(group_id));
                    out->error_message = (kc_str_t){p, len};
                }
            } else {
                out->error_message = kc_text_arena(a, (kc_str_t){msg, len}, &oom);
            }
        }
    } else {
        bool stable = g->state == KC_GROUP_STABLE;
        out->group_state = kc_str_c(kc_group_state_name(g->state));
        out->protocol_type =
            kc_text_arena(a, g->ptype ? kc_classic_ptype_view(g) : KC_STR_EMPTY, &oom);
        if (stable)
            out->protocol_data = kc_text_arena(a, kc_classic_pname_view(g), &oom);
        if (g->n_members > 0) {
            kc_described_group_member_t *v = kc_arena_alloc(a, (size_t)g->n_members * sizeof(*v));
            if (!v) {
                oom = true;
            } else {
                int32_t i = 0;
                for (const member_t *m = g->head; m; m = m->next, i++) {
                    v[i].member_id = kc_text_arena(a, m->id, &oom);
                    v[i].group_instance_id = kc_text_arena(a, kc_classic_member_instance(m), &oom);
                    kc_str_t cid = kc_classic_member_client_id(m);
                    v[i].client_id = kc_text_arena(a, cid.len >= 0 ? cid : KC_STR_EMPTY, &oom);
                    v[i].client_host = kc_text_arena(a, kc_classic_member_client_host(m), &oom);
                    v[i].member_metadata =
                        stable
                            ? kc_classic_arena_bytes(
                                  a, kc_classic_member_metadata(m, kc_classic_pname_view(g)), &oom)
                            : (kc_bytes_t){(const uint8_t *)"", 0};
                    v[i].member_assignment = kc_classic_arena_bytes(
                        a,
                        (kc_bytes_t){m->assignment ? m->assignment : (const uint8_t *)"",
                                     m->assignment_len},
                        &oom);
                }
                out->members.v = v;
                out->members.n = i;
            }
        }
    }
    if (oom) {
        out->error_code = KC_ERR_COORDINATOR_NOT_AVAILABLE;
        out->members.v = NULL;
        out->members.n = 0;
        return;
    }
    /* KafkaApis: authorized operations (v3+) only for groups described without error. */
    if (version >= 3 && include_authorized_operations && out->error_code == 0)
        out->authorized_operations = KC_GROUP_AUTHORIZED_OPERATIONS;
}

/* Delete a group (ClassicGroup.validateDeleteGroup passed): Dead, tombstone, gone. */
void kc_classic_delete_group(kc_gm_t *gm, group_t *g, const char *reason, req_t *rq)
{
    kc_classic_set_state(g, KC_GROUP_DEAD, reason);
    kc_classic_emit_group_metadata(g, true, false, NULL);
    kc_classic_group_destroy(gm, g, KC_ERR_COORDINATOR_NOT_AVAILABLE, rq);
}

int16_t kc_classic_delete(kc_gm_t *gm, kc_time_t now, kc_str_t group_id)
{
    kc_classic_set_time(gm, now);
    group_t *g = kc_classic_find_group(gm, group_id);
    if (!g || g->state == KC_GROUP_DEAD)
        return KC_ERR_GROUP_ID_NOT_FOUND;
    if (g->state != KC_GROUP_EMPTY)
        return KC_ERR_NON_EMPTY_GROUP;
    kc_classic_delete_group(gm, g, "deleted by DeleteGroups", NULL);
    return 0;
}

void kc_classic_remove_if_empty(kc_gm_t *gm, kc_time_t now, kc_str_t group_id)
{
    kc_classic_set_time(gm, now);
    group_t *g = kc_classic_find_group(gm, group_id);
    if (!g || g->state != KC_GROUP_EMPTY)
        return;
    kc_classic_delete_group(gm, g, "empty group without offsets removed", NULL);
}

/* ---- Statistics -------------------------------------------------------------------------- */

const double kc_gm_phase_bounds_s[KC_GM_PHASE_BUCKETS - 1] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5,
                                                              1,     5,     10,   30,   60};

void kc_classic_phase_observe(uint64_t *buckets, double *sum, int64_t ms)
{
    double s = ms > 0 ? (double)ms / 1000.0 : 0.0;
    int i = 0;
    while (i < KC_GM_PHASE_BUCKETS - 1 && s > kc_gm_phase_bounds_s[i])
        i++;
    buckets[i]++;
    *sum += s;
}

/* ---- Introspection of classic groups (group.h) --------------------------------------------- */

/* A member's assignment: topic -> partitions when it is a ConsumerProtocolAssignment of a
 * "consumer" group, its size in bytes otherwise. */
static void json_classic_assignment(const group_t *g, const member_t *m, kc_emit_fn emit, void *arg)
{
    if (kc_classic_uses_consumer_protocol(g)) {
        if (m->assignment_len <= 0) {
            kc_text_json_lit(emit, arg, ",\"assignment\":{}");
            return;
        }
        kc_arena_t a;
        kc_arena_init(&a);
        kc_reader_t r;
        kc_rd_init(&r, m->assignment, (size_t)m->assignment_len);
        int16_t version = kc_rd_i16(&r);
        kc_consumer_protocol_assignment_t as;
        /* Every version is the v0 layout plus fields a reader may ignore, as Kafka reads a
         * newer version with the newest schema it knows. */
        if (!r.err && version >= 0 &&
            kc_consumer_protocol_assignment_decode(&r, &a, version > 3 ? 3 : version, &as) == 0) {
            kc_text_json_lit(emit, arg, ",\"assignment\":{");
            for (int32_t i = 0; i < as.assigned_partitions.n; i++) {
                const kc_consumer_protocol_assignment_topic_partition_t *tp =
                    &as.assigned_partitions.v[i];
                if (i)
                    emit(arg, ",", 1);
                kc_text_json_str(emit, arg, tp->topic.len >= 0 ? tp->topic : KC_STR_EMPTY);
                emit(arg, ":[", 2);
                for (int32_t j = 0; j < tp->partitions.n; j++) {
                    if (j)
                        emit(arg, ",", 1);
                    kc_text_json_i64(emit, arg, tp->partitions.v[j]);
                }
                emit(arg, "]", 1);
            }
            emit(arg, "}", 1);
            kc_arena_free(&a);
            return;
        }
        kc_arena_free(&a);
    }
    kc_text_json_lit(emit, arg, ",\"assignment_bytes\":");
    kc_text_json_i64(emit, arg, m->assignment_len > 0 ? m->assignment_len : 0);
}

static void json_classic_summary(const group_t *g, kc_emit_fn emit, void *arg)
{
    kc_text_json_lit(emit, arg, "{\"group_id\":");
    kc_text_json_str(emit, arg, g->id);
    kc_text_json_lit(emit, arg, ",\"type\":\"classic\",\"state\":\"");
    kc_text_json_lit(emit, arg, kc_group_state_name(g->state));
    kc_text_json_lit(emit, arg, "\",\"protocol_type\":");
    kc_text_json_str(emit, arg, g->ptype ? kc_classic_ptype_view(g) : KC_STR_EMPTY);
    kc_text_json_lit(emit, arg, ",\"protocol\":");
    kc_text_json_str(emit, arg, kc_classic_pname_view(g));
    kc_text_json_lit(emit, arg, ",\"generation\":");
    kc_text_json_i64(emit, arg, g->generation);
    kc_text_json_lit(emit, arg, ",\"members\":");
    kc_text_json_i64(emit, arg, g->n_members);
    kc_text_json_lit(emit, arg, ",\"state_timestamp_ms\":");
    kc_text_json_i64(emit, arg, g->state_ts);
    kc_text_json_lit(emit, arg, ",\"rebalance_count\":");
    kc_text_json_i64(emit, arg, g->rb.total);
    kc_text_json_lit(emit, arg, ",\"last_rebalance_end_ms\":");
    kc_text_json_i64(emit, arg, kc_history_last_end(&g->rb));
    emit(arg, "}", 1);
}

void kc_classic_json_list(const kc_gm_t *gm, int64_t mono_ms, kc_emit_fn emit, void *arg,
                          bool *first)
{
    (void)mono_ms;
    for (size_t i = 0; i < kc_manager_slots(gm); i++) {
        const kc_ghead_t *h = kc_manager_slot(gm, i, KC_KIND_CLASSIC);
        const group_t *g = h ? kc_heap_entry(h, group_t, gh) : NULL;
        if (!g || g->state == KC_GROUP_DEAD)
            continue;
        if (!*first)
            emit(arg, ",", 1);
        *first = false;
        json_classic_summary(g, emit, arg);
    }
}

int kc_classic_json_summary(const kc_gm_t *gm, kc_str_t group_id, kc_emit_fn emit, void *arg)
{
    const group_t *g = kc_classic_find_group(gm, group_id);
    if (!g || g->state == KC_GROUP_DEAD)
        return -1;
    json_classic_summary(g, emit, arg);
    return 0;
}

int kc_classic_json_group(const kc_gm_t *gm, int64_t mono_ms, kc_str_t group_id, kc_emit_fn emit,
                          void *arg)
{
    const group_t *g = kc_classic_find_group(gm, group_id);
    if (!g || g->state == KC_GROUP_DEAD)
        return -1;
    kc_text_json_lit(emit, arg, "{\"group_id\":");
    kc_text_json_str(emit, arg, g->id);
    kc_text_json_lit(emit, arg, ",\"type\":\"classic\",\"state\":\"");
    kc_text_json_lit(emit, arg, kc_group_state_name(g->state));
    kc_text_json_lit(emit, arg, "\",\"protocol_type\":");
    kc_text_json_str(emit, arg, g->ptype ? kc_classic_ptype_view(g) : KC_STR_EMPTY);
    kc_text_json_lit(emit, arg, ",\"protocol\":");
    kc_text_json_str(emit, arg, kc_classic_pname_view(g));
    kc_text_json_lit(emit, arg, ",\"generation\":");
    kc_text_json_i64(emit, arg, g->generation);
    kc_text_json_lit(emit, arg, ",\"leader\":");
    kc_text_json_str(emit, arg, g->leader ? g->leader->id : KC_STR_NULL);
    kc_text_json_lit(emit, arg, ",\"state_timestamp_ms\":");
    kc_text_json_i64(emit, arg, g->state_ts);
    kc_text_json_lit(emit, arg, ",\"members\":[");
    for (const member_t *m = g->head; m; m = m->next) {
        if (m != g->head)
            emit(arg, ",", 1);
        kc_text_json_lit(emit, arg, "{\"member_id\":");
        kc_text_json_str(emit, arg, m->id);
        kc_text_json_lit(emit, arg, ",\"instance_id\":");
        kc_text_json_str(emit, arg, kc_classic_member_instance(m));
        kc_text_json_lit(emit, arg, ",\"client_id\":");
        kc_text_json_str(emit, arg, kc_classic_member_client_id(m));
        kc_text_json_lit(emit, arg, ",\"client_host\":");
        kc_text_json_str(emit, arg, kc_classic_member_client_host(m));
        kc_text_json_lit(emit, arg, ",\"leader\":");
        kc_text_json_lit(emit, arg, kc_classic_is_leader(g, m) ? "true" : "false");
        kc_text_json_lit(emit, arg, ",\"session_timeout_ms\":");
        kc_text_json_i64(emit, arg, m->session_timeout_ms);
        kc_text_json_lit(emit, arg, ",\"rebalance_timeout_ms\":");
        kc_text_json_i64(emit, arg, m->rebalance_timeout_ms);
        json_classic_assignment(g, m, emit, arg);
        kc_text_json_lit(emit, arg, ",\"last_heartbeat_age_ms\":");
        int64_t age = mono_ms - m->last_hb_ms;
        kc_text_json_i64(emit, arg, age > 0 ? age : 0);
        emit(arg, "}", 1);
    }
    kc_text_json_lit(emit, arg, "],\"rebalances\":");
    kc_history_json(&g->rb, mono_ms, emit, arg);
    emit(arg, "}", 1);
    return 0;
}
