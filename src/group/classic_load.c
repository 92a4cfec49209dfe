/* classic_load.c - replay of GroupMetadata records and of the offset commits that make simple
 * groups, and Kafka's onLoaded for classic groups. */

#include "group/classic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/classic_group.h"

/* ---- Loading ---------------------------------------------------------------------------- */

/* Kafka's GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue) for a value: a
 * new group built from the record (Kafka's ClassicGroup constructor with the loaded members),
 * in neither the map nor the heap. Stable with members, Empty without: this builds a group, it
 * is not a transition of a live one, so kc_classic_set_state is not involved. NULL with *err -1
 * when out of memory, -2 when the record cannot describe a group. */
static group_t *group_from_record(kc_gm_t *gm, kc_str_t id, const kc_group_metadata_value_t *v,
                                  int *err)
{
    int32_t n = v->members.n > 0 ? v->members.n : 0;
    *err = -1;
    if (n > 0 && v->protocol.len < 0) {
        /* Kafka never writes one (newGroupMetadataRecord throws IllegalStateException). */
        KC_WARN("group", "group %.*s: GroupMetadata record with %d members and no protocol", SV(id),
                (int)n);
        *err = -2;
        return NULL;
    }
    group_t *g = kc_classic_group_alloc(gm, id);
    if (!g)
        return NULL;
    g->state = n > 0 ? KC_GROUP_STABLE : KC_GROUP_EMPTY;
    /* -1 before v2: unknown, as Kafka's empty; any other negative time is unknown too (it
     * would overflow the phase and retention arithmetic). */
    g->state_ts = v->current_state_timestamp < 0 ? -1 : v->current_state_timestamp;
    g->generation = v->generation;
    g->loading = LOAD_RECORD;
    if (v->protocol_type.len > 0) { /* "" is no protocol type (a simple group) */
        g->ptype = malloc((size_t)v->protocol_type.len + 1);
        if (!g->ptype)
            goto fail;
        memcpy(g->ptype, v->protocol_type.p, (size_t)v->protocol_type.len);
        g->ptype[v->protocol_type.len] = '\0';
        g->ptype_len = v->protocol_type.len;
    }
    if (v->protocol.len >= 0) {
        g->pname = malloc((size_t)v->protocol.len + 1);
        if (!g->pname)
            goto fail;
        if (v->protocol.len)
            memcpy(g->pname, v->protocol.p, (size_t)v->protocol.len);
        g->pname[v->protocol.len] = '\0';
        g->pname_len = v->protocol.len;
        g->pname_cap = (size_t)v->protocol.len + 1;
    }
    if (n > 0 && (kc_strmap_reserve(&g->by_id, (size_t)n) != 0 ||
                  kc_heap_reserve(&g->mheap, (size_t)g->n_members + (size_t)n) != 0 ||
                  kc_strmap_reserve(&g->by_instance, (size_t)n) != 0))
        goto fail;
    for (int32_t i = 0; i < n; i++) {
        const kc_member_metadata_t *mm = &v->members.v[i];
        if (kc_classic_find_member(g, mm->member_id)) {
            KC_WARN("group", "group %.*s: GroupMetadata record lists member %.*s twice", SV(id),
                    SV(mm->member_id));
            *err = -2;
            goto fail;
        }
        member_t *m = kc_classic_member_new(mm->member_id, mm->group_instance_id, mm->client_id,
                                            mm->client_host);
        if (!m)
            goto fail;
        m->protos = kc_classic_protoset_one(v->protocol, mm->subscription);
        if (mm->assignment.len > 0) {
            m->assignment = malloc((size_t)mm->assignment.len);
            if (m->assignment) {
                memcpy(m->assignment, mm->assignment.p, (size_t)mm->assignment.len);
                m->assignment_len = mm->assignment.len;
            }
        }
        if (!m->protos || (mm->assignment.len > 0 && !m->assignment) ||
            kc_classic_pc_reserve(g, m->protos) != 0) {
            kc_classic_member_free(m);
            goto fail;
        }
        /* Before v1 there was no rebalance timeout: the session timeout serves. */
        m->rebalance_timeout_ms =
            mm->rebalance_timeout == -1 ? mm->session_timeout : mm->rebalance_timeout;
        m->session_timeout_ms = mm->session_timeout;
        if (kc_text_present(kc_classic_member_instance(m)) &&
            kc_classic_find_static(g, kc_classic_member_instance(m)))
            KC_WARN("group",
                    "group %.*s: GroupMetadata record maps instance id %.*s to two members; "
                    "the last one, %.*s, keeps it",
                    SV(id), SV(kc_classic_member_instance(m)), SV(m->id));
        kc_classic_group_add(g, m, NULL,
                             0); /* the first member leads until the record's leader is set */
    }
    if (n > 0) {
        member_t *leader = kc_classic_find_member(g, v->leader);
        if (leader)
            g->leader = leader;
        else
            KC_WARN("group",
                    "group %.*s: the leader %.*s of the GroupMetadata record is not a member; "
                    "member %.*s leads",
                    SV(id), SV(v->leader.len >= 0 ? v->leader : KC_STR_LIT("null")),
                    SV(g->leader->id));
    }
    kc_classic_compute_subscriptions(g);
    return g;
fail:
    kc_classic_group_release(g);
    return NULL;
}

int kc_classic_replay_metadata(kc_gm_t *gm, kc_reader_t *kr, kc_arena_t *a, const uint8_t *value,
                               size_t value_len)
{
    kc_group_metadata_key_t k;
    if (kc_group_metadata_key_decode(kr, a, GROUP_METADATA_KEY_VERSION, &k) != 0) {
        if (kr->err == KC_RD_NOMEM)
            return -1;
        KC_WARN("group", "malformed GroupMetadataKey not loaded");
        return -2;
    }
    group_t *old = kc_classic_find_group(gm, k.group);
    kc_manager_replay_drop_consumer(gm, k.group);
    if (!value) {
        if (old) {
            KC_DEBUG("group", "group %.*s: removed by a tombstone while loading", SV(k.group));
            kc_classic_group_destroy(gm, old, KC_ERR_COORDINATOR_NOT_AVAILABLE, NULL);
        }
        return 0;
    }
    kc_reader_t vr;
    kc_rd_init(&vr, value, value_len);
    int16_t version = kc_rd_i16(&vr);
    kc_group_metadata_value_t v;
    if (vr.err || kc_group_metadata_value_decode(&vr, a, version, &v) != 0) {
        if (vr.err == KC_RD_NOMEM)
            return -1;
        KC_WARN("group", "group %.*s: malformed GroupMetadataValue v%d (%zu bytes) not loaded",
                SV(k.group), (int)version, value_len);
        return -2;
    }
    if (kc_manager_reserve(gm) != 0)
        return -1;
    int err;
    group_t *g = group_from_record(gm, k.group, &v, &err);
    if (!g)
        return err;
    if (old)
        kc_classic_group_destroy(gm, old, KC_ERR_COORDINATOR_NOT_AVAILABLE, NULL);
    kc_manager_put(gm, &g->gh, g->id); /* reserved: cannot fail */
    KC_DEBUG("group", "group %.*s: loaded as %s, generation %d, %d members, protocol %.*s",
             SV(g->id), kc_group_state_name(g->state), (int)g->generation, (int)g->n_members,
             SV(kc_classic_pname_view(g).len >= 0 ? kc_classic_pname_view(g) : KC_STR_LIT("null")));
    return 0;
}

/* Kafka's OffsetMetadataManager.replay: an offset commit of a group that does not exist creates
 * the "simple" group (Empty, no protocol type) that holds its offsets. A key that does not
 * decode is left for the offsets store to refuse. */
int kc_classic_replay_offset_commit(kc_gm_t *gm, kc_reader_t *kr)
{
    kc_arena_t a;
    kc_arena_init(&a);
    kc_offset_commit_key_t k;
    int rc = 1;
    if (kc_offset_commit_key_decode(kr, &a, KC_RECORD_OFFSET_COMMIT_KEY, &k) == 0 &&
        !kc_manager_find(gm, k.group)) {
        group_t *g = kc_classic_group_create(gm, k.group);
        if (g) {
            g->loading = LOAD_SIMPLE;
            g->state_ts = -1; /* set by kc_gm_load_complete */
            KC_DEBUG("group", "group %.*s: created while loading to hold offsets", SV(k.group));
        } else {
            rc = -1;
        }
    }
    kc_arena_free(&a);
    return rc;
}

/* Kafka's GroupMetadataManager.onLoaded for classic groups. */
void kc_classic_load_complete(kc_gm_t *gm, kc_time_t now)
{
    kc_classic_set_time(gm, now);
    size_t loaded = 0, members = 0;
    for (size_t i = 0; i < kc_manager_slots(gm); i++) {
        kc_ghead_t *h = kc_manager_slot(gm, i, KC_KIND_CLASSIC);
        group_t *g = h ? kc_heap_entry(h, group_t, gh) : NULL;
        if (!g || g->loading == LOAD_NONE)
            continue;
        if (g->loading == LOAD_SIMPLE)
            g->state_ts = now.wall_ms; /* Kafka creates it at load time */
        g->loading = LOAD_NONE;
        loaded++;
        members += (size_t)g->n_members;
        KC_DEBUG("group", "group %.*s: loaded in %s with %d members, generation %d", SV(g->id),
                 kc_group_state_name(g->state), (int)g->n_members, (int)g->generation);
        /* A fresh session for every member: a restart is no reason to rebalance. */
        kc_manager_disarm(gm, &g->gh);
        for (member_t *m = g->head; m; m = m->next)
            kc_classic_set_hb(g, m, m->session_timeout_ms);
        if (g->n_members > gm->cfg.max_size) {
            char reason[200];
            snprintf(reason, sizeof(reason),
                     "freshly-loaded group (size %d) is over capacity %d; rebalancing to give "
                     "consumers a chance to commit offsets",
                     (int)g->n_members, (int)gm->cfg.max_size);
            kc_classic_prepare_rebalance(g, reason, NULL);
        }
    }
    if (loaded > 0 && gm->cfg.reload) /* one call site for reloads, another for the start */
        KC_INFO_LIMITED("group", "partition %d: reloaded %zu classic groups with %zu members",
                        (int)gm->cfg.partition, loaded, members);
    else if (loaded > 0)
        KC_INFO("group", "partition %d: loaded %zu classic groups with %zu members",
                (int)gm->cfg.partition, loaded, members);
}
