/* consumer_load.c - replay of the consumer group records (types 3-8) while a partition loads,
 * and Kafka's onLoaded for consumer groups. */

#include "group/consumer.h"

#include <stdlib.h>
#include <string.h>

#include "group/assignment.h"
#include "group/consumer_group.h"

/* ---- Loading ------------------------------------------------------------------------------- */

/* Kafka's getOrMaybeCreatePersistedConsumerGroup: the consumer group a record belongs to,
 * created when missing (a "simple" classic group of the same id, which only holds offsets, is
 * replaced). *g NULL with 0 when the group does not exist and `create` is false; -1 when out
 * of memory; -2 when a classic group with members has the id. */
static int replay_group(kc_consumer_t *c, kc_str_t id, bool create, cgroup_t **g)
{
    *g = kc_consumer_find_group(c, id);
    if (*g || !create)
        return 0;
    int kind = kc_manager_classic_kind(c->gm, id);
    if (kind == KC_CLASSIC_EMPTY || kind == KC_CLASSIC_ACTIVE) {
        KC_WARN("group", "consumer group record for %.*s, which is a classic group: not loaded",
                SV(id));
        return -2;
    }
    if (kc_consumer_reserve_group(c) != 0 || !(*g = kc_consumer_group_alloc(c, id)))
        return -1;
    if (kind == KC_CLASSIC_SIMPLE)
        kc_manager_classic_remove(c->gm, kc_consumer_time(c), id, false,
                                  "replaced by a consumer group while loading");
    (*g)->loading = true;
    kc_manager_put(c->gm, &(*g)->gh, (*g)->id); /* reserved */
    return 0;
}

static asg_t *
asg_from_current(const kc_consumer_group_current_member_assignment_value_topic_partitions_t *v,
                 int32_t n, bool *oom)
{
    tpv_t l = {0};
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < v[i].partitions.n; j++)
            kc_asg_tpv_add(&l, &v[i].topic_id, v[i].partitions.v[j]);
    asg_t *a = kc_asg_build(&l, oom);
    kc_asg_tpv_free(&l);
    return a;
}

/* A member for replay: the existing one, or a new one put in the group. NULL when out of
 * memory. */
static cmember_t *replay_member(cgroup_t *g, kc_str_t id)
{
    cmember_t *m = kc_consumer_find_member(g, id);
    if (m)
        return m;
    cmember_t *slot = kc_consumer_member_alloc(id);
    if (!slot || kc_strmap_reserve(&g->by_id, 1) != 0 ||
        kc_consumer_reserve_member_timers(g) != 0) {
        kc_consumer_member_free(slot);
        return NULL;
    }
    return kc_consumer_ap_member(g, id, &slot);
}

/* A member's metadata record (NULL: its tombstone). 0, or -1 when out of memory. */
static int replay_member_meta(cgroup_t *g, kc_str_t member_id,
                              const kc_consumer_group_member_metadata_value_t *v)
{
    if (!v) {
        kc_consumer_ap_meta_del(g, member_id);
        return 0;
    }
    cmeta_t src;
    memset(&src, 0, sizeof(src));
    src.instance_id = v->instance_id;
    src.rack_id = v->rack_id;
    src.client_id = v->client_id;
    src.client_host = v->client_host;
    src.regex = v->subscribed_topic_regex;
    src.assignor = v->server_assignor;
    src.rebalance_timeout_ms = v->rebalance_timeout_ms;
    src.topics = v->subscribed_topic_names.v;
    src.n_topics = v->subscribed_topic_names.n > 0 ? v->subscribed_topic_names.n : 0;
    if (v->classic_member_metadata) {
        src.classic = true;
        src.classic_session_timeout_ms = v->classic_member_metadata->session_timeout_ms;
        src.protocols = v->classic_member_metadata->supported_protocols.v;
        src.n_protocols = v->classic_member_metadata->supported_protocols.n > 0
                              ? v->classic_member_metadata->supported_protocols.n
                              : 0;
    }
    cmeta_t *meta = kc_consumer_meta_new(&src);
    cmember_t *m = meta ? replay_member(g, member_id) : NULL;
    if (!m || (meta->instance_id.len >= 0 && kc_strmap_reserve(&g->by_instance, 1) != 0)) {
        free(meta);
        return -1;
    }
    kc_consumer_ap_meta(g, member_id, meta, NULL);
    return 0;
}

/* A member's target assignment record (NULL: its tombstone). 0, or -1 when out of memory. */
static int replay_target_member(cgroup_t *g, kc_str_t member_id,
                                const kc_consumer_group_target_assignment_member_value_t *v)
{
    if (!v) {
        kc_consumer_ap_target_del(g, member_id);
        return 0;
    }
    bool oom = false;
    tpv_t l = {0};
    for (int32_t i = 0; i < v->topic_partitions.n; i++)
        for (int32_t j = 0; j < v->topic_partitions.v[i].partitions.n; j++)
            kc_asg_tpv_add(&l, &v->topic_partitions.v[i].topic_id,
                           v->topic_partitions.v[i].partitions.v[j]);
    asg_t *asg = kc_asg_build(&l, &oom);
    kc_asg_tpv_free(&l);
    ctarget_t *slot =
        kc_consumer_find_target(g, member_id) ? NULL : kc_consumer_target_alloc(member_id);
    if (oom || (!kc_consumer_find_target(g, member_id) &&
                (!slot || kc_strmap_reserve(&g->targets, 1) != 0))) {
        free(asg);
        kc_consumer_target_free(slot);
        return -1;
    }
    kc_consumer_ap_target(g, member_id, asg, &slot);
    kc_consumer_target_free(slot);
    return 0;
}

/* A member's current assignment record (NULL: its tombstone). 0, or -1 when out of memory. */
static int replay_current(cgroup_t *g, kc_str_t member_id,
                          const kc_consumer_group_current_member_assignment_value_t *v)
{
    if (!v) {
        kc_consumer_ap_current_del(g, member_id);
        return 0;
    }
    bool oom = false;
    asg_t *as = asg_from_current(v->assigned_partitions.v, v->assigned_partitions.n, &oom);
    asg_t *rv = asg_from_current(v->partitions_pending_revocation.v,
                                 v->partitions_pending_revocation.n, &oom);
    cmember_t *m = oom ? NULL : replay_member(g, member_id);
    if (!m) {
        free(as);
        free(rv);
        return -1;
    }
    kc_consumer_ap_current(g, member_id, v->member_epoch, v->previous_member_epoch, v->state, as,
                           rv, NULL);
    return 0;
}

static int replay_value(kc_consumer_t *c, int16_t type, kc_reader_t *kr, kc_arena_t *a,
                        const uint8_t *value, size_t value_len)
{
    kc_reader_t vr;
    int16_t vv = 0;
    if (value) {
        kc_rd_init(&vr, value, value_len);
        vv = kc_rd_i16(&vr);
        if (vr.err || vv != 0) {
            KC_WARN("group", "consumer group record of type %d with value version %d not loaded",
                    (int)type, (int)vv);
            return -2;
        }
    }
    cgroup_t *g;
    int rc;
#define DECODE(kind, r, v, var)                                                                    \
    (kc_##kind##_decode((r), a, (v), &(var)) == 0 ? 0 : ((r)->err == KC_RD_NOMEM ? -1 : -2))
    switch (type) {
    case KC_RECORD_CONSUMER_GROUP_METADATA_KEY: {
        kc_consumer_group_metadata_key_t k;
        kc_consumer_group_metadata_value_t v;
        if ((rc = DECODE(consumer_group_metadata_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        if (value)
            kc_consumer_ap_group_epoch(g, v.epoch, v.metadata_hash);
        else
            kc_consumer_ap_group_del(c, g);
        return 0;
    }
    case KC_RECORD_CONSUMER_GROUP_PARTITION_METADATA_KEY: {
        kc_consumer_group_partition_metadata_key_t k;
        kc_consumer_group_partition_metadata_value_t v;
        if ((rc = DECODE(consumer_group_partition_metadata_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_partition_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        g->has_partition_metadata = value != NULL;
        return 0;
    }
    case KC_RECORD_CONSUMER_GROUP_MEMBER_METADATA_KEY: {
        kc_consumer_group_member_metadata_key_t k;
        kc_consumer_group_member_metadata_value_t v;
        if ((rc = DECODE(consumer_group_member_metadata_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_member_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        return replay_member_meta(g, k.member_id, value ? &v : NULL);
    }
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: {
        kc_consumer_group_target_assignment_metadata_key_t k;
        kc_consumer_group_target_assignment_metadata_value_t v;
        if ((rc = DECODE(consumer_group_target_assignment_metadata_key, kr, type, k)) != 0 ||
            (value &&
             (rc = DECODE(consumer_group_target_assignment_metadata_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        g->assignment_epoch = value ? v.assignment_epoch : -1;
        return 0;
    }
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: {
        kc_consumer_group_target_assignment_member_key_t k;
        kc_consumer_group_target_assignment_member_value_t v;
        if ((rc = DECODE(consumer_group_target_assignment_member_key, kr, type, k)) != 0 ||
            (value && (rc = DECODE(consumer_group_target_assignment_member_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        return replay_target_member(g, k.member_id, value ? &v : NULL);
    }
    case KC_RECORD_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: {
        kc_consumer_group_current_member_assignment_key_t k;
        kc_consumer_group_current_member_assignment_value_t v;
        if ((rc = DECODE(consumer_group_current_member_assignment_key, kr, type, k)) != 0 ||
            (value &&
             (rc = DECODE(consumer_group_current_member_assignment_value, &vr, 0, v)) != 0))
            return rc;
        if ((rc = replay_group(c, k.group_id, value != NULL, &g)) != 0 || !g)
            return rc;
        return replay_current(g, k.member_id, value ? &v : NULL);
    }
    }
#undef DECODE
    return -2;
}

int kc_consumer_replay(kc_consumer_t *c, int16_t type, const uint8_t *key, size_t key_len,
                       const uint8_t *value, size_t value_len)
{
    kc_reader_t kr;
    kc_rd_init(&kr, key, key_len);
    (void)kc_rd_i16(&kr);
    kc_arena_t a;
    kc_arena_init(&a);
    int rc = replay_value(c, type, &kr, &a, value, value_len);
    kc_arena_free(&a);
    if (rc == -2)
        KC_WARN("group", "malformed consumer group record of type %d not loaded", (int)type);
    return rc;
}

/* Kafka's onLoaded for consumer groups: fresh session timers for every member, and rebalance
 * timers for those with partitions to revoke; epochs and assignments are kept, so the members
 * carry on where they were. */
void kc_consumer_load_complete(kc_consumer_t *c, kc_time_t now)
{
    kc_consumer_set_time(c, now);
    size_t loaded = 0, members = 0;
    for (size_t i = 0; i < kc_manager_slots(c->gm); i++) {
        kc_ghead_t *h = kc_manager_slot(c->gm, i, KC_KIND_CONSUMER);
        cgroup_t *g = h ? kc_heap_entry(h, cgroup_t, gh) : NULL;
        if (!g || !g->loading)
            continue;
        g->loading = false;
        g->topics_version = 0; /* look at the topics' metadata at the next heartbeat */
        kc_consumer_rres_clear(g);
        g->logged_state = kc_consumer_compute_state(g);
        loaded++;
        members += (size_t)g->n_members;
        for (cmember_t *m = g->head; m; m = m->next) {
            kc_consumer_set_session(g, m);
            if (m->state == MS_UNREVOKED)
                kc_consumer_set_rebalance(g, m);
        }
        KC_DEBUG("group", "consumer group %.*s: loaded in %s with %d members, epoch %d", SV(g->id),
                 kc_consumer_state_names[g->logged_state], (int)g->n_members, (int)g->epoch);
    }
    if (loaded > 0)
        KC_INFO("group", "partition %d: loaded %zu consumer groups with %zu members",
                (int)c->cfg.partition, loaded, members);
}
