/* classic_convert.c - the classic machine's half of the conversions between kinds: a classic
 * group handed to the consumer machine (Kafka's convertToConsumerGroup reads the ClassicGroup
 * and tombstones it), through the manager (manager.h's kc_conv_group_t).
 *
 * The export copies what a consumer group needs of each member (ids, client, timeouts, the
 * protocols of its JoinGroup, its current assignment) into the converting request's arena, so
 * that the classic group can go before the consumer group's records are written, as Kafka
 * orders them.
 */
#include <stdlib.h>
#include <string.h>

#include "group/classic.h"
#include "group/classic_group.h"

static kc_str_t copy_str(kc_arena_t *a, kc_str_t s, bool *oom)
{
    return kc_text_arena(a, s, oom);
}

static kc_bytes_t copy_bytes(kc_arena_t *a, kc_bytes_t b, bool *oom)
{
    return kc_classic_arena_bytes(a, b, oom);
}

int kc_classic_export(const kc_gm_t *gm, kc_str_t id, kc_arena_t *a, kc_conv_group_t *out)
{
    group_t *g = kc_classic_find_group(gm, id);
    if (!g)
        return -1;
    bool oom = false;
    memset(out, 0, sizeof(*out));
    out->id = copy_str(a, g->id, &oom);
    out->generation = g->generation;
    out->protocol_type = copy_str(a, kc_classic_ptype_view(g), &oom);
    out->protocol_name = copy_str(a, kc_classic_pname_view(g), &oom);
    out->n = g->n_members;
    out->v = kc_arena_alloc(a, (size_t)(g->n_members > 0 ? g->n_members : 1) * sizeof(*out->v));
    if (!out->v)
        return -1;
    int32_t i = 0;
    for (member_t *m = g->head; m && !oom; m = m->next, i++) {
        kc_conv_member_t *c = &out->v[i];
        c->id = copy_str(a, m->id, &oom);
        c->instance_id = copy_str(a, kc_classic_member_instance(m), &oom);
        c->client_id = copy_str(a, kc_classic_member_client_id(m), &oom);
        c->client_host = copy_str(a, kc_classic_member_client_host(m), &oom);
        c->session_timeout_ms = m->session_timeout_ms;
        c->rebalance_timeout_ms = m->rebalance_timeout_ms;
        int32_t np = m->protos ? m->protos->n : 0;
        kc_join_group_request_protocol_t *pv =
            kc_arena_alloc(a, (size_t)(np > 0 ? np : 1) * sizeof(*pv));
        if (!pv) {
            oom = true;
            break;
        }
        for (int32_t k = 0; k < np; k++) {
            pv[k].name = copy_str(a, m->protos->v[k].name, &oom);
            pv[k].metadata = copy_bytes(a, m->protos->v[k].metadata, &oom);
        }
        c->protocols = pv;
        c->n_protocols = np;
        c->assignment = copy_bytes(
            a, (kc_bytes_t){m->assignment ? m->assignment : (const uint8_t *)"", m->assignment_len},
            &oom);
    }
    return oom ? -1 : 0;
}

void kc_classic_convert_away(kc_gm_t *gm, kc_time_t now, kc_str_t id)
{
    kc_classic_set_time(gm, now);
    group_t *g = kc_classic_find_group(gm, id);
    if (!g)
        return;
    /* Kafka's completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS) and
     * createGroupTombstoneRecords. */
    kc_classic_set_state(g, KC_GROUP_DEAD, "upgraded to a consumer group");
    kc_classic_emit_group_metadata(g, true, false, NULL);
    kc_classic_group_destroy(gm, g, KC_ERR_REBALANCE_IN_PROGRESS, NULL);
}

/* The classic group of a downgrade, in neither the map nor the heap (NULL: out of memory). */
static group_t *group_from_conv(kc_gm_t *gm, const kc_conv_group_t *cv)
{
    group_t *g = kc_classic_group_alloc(gm, cv->id);
    if (!g)
        return NULL;
    g->state = KC_GROUP_STABLE; /* built, not a transition of a live group (as at load) */
    g->state_ts = gm->wall;
    g->state_mono = gm->now;
    g->generation = cv->generation;
    g->ptype = malloc(sizeof("consumer"));
    int32_t n = cv->n;
    if (!g->ptype || kc_strmap_reserve(&g->by_id, (size_t)n) != 0 ||
        kc_strmap_reserve(&g->by_instance, (size_t)n) != 0 ||
        kc_heap_reserve(&g->mheap, (size_t)n) != 0)
        goto fail;
    memcpy(g->ptype, "consumer", sizeof("consumer"));
    g->ptype_len = (int32_t)sizeof("consumer") - 1;
    for (int32_t i = 0; i < n; i++) {
        const kc_conv_member_t *c = &cv->v[i];
        member_t *m = kc_classic_member_new(c->id, c->instance_id, c->client_id, c->client_host);
        if (!m)
            goto fail;
        m->protos = kc_classic_protoset_from(c->protocols, c->n_protocols);
        if (c->assignment.len > 0) {
            m->assignment = malloc((size_t)c->assignment.len);
            if (m->assignment) {
                memcpy(m->assignment, c->assignment.p, (size_t)c->assignment.len);
                m->assignment_len = c->assignment.len;
            }
        }
        if (!m->protos || (c->assignment.len > 0 && !m->assignment) ||
            kc_classic_pc_reserve(g, m->protos) != 0) {
            kc_classic_member_free(m);
            goto fail;
        }
        m->session_timeout_ms = c->session_timeout_ms;
        m->rebalance_timeout_ms = c->rebalance_timeout_ms;
        kc_classic_group_add(g, m, NULL, 0); /* the first member leads */
    }
    kc_str_t sel = kc_classic_select_protocol(g);
    if (sel.len >= 0) {
        g->pname = malloc((size_t)sel.len + 1);
        if (!g->pname)
            goto fail;
        memcpy(g->pname, sel.p, (size_t)sel.len);
        g->pname[sel.len] = '\0';
        g->pname_len = sel.len;
        g->pname_cap = (size_t)sel.len + 1;
    }
    kc_classic_compute_subscriptions(g);
    return g;
fail:
    kc_classic_group_release(g);
    return NULL;
}

int kc_classic_import(kc_gm_t *gm, kc_time_t now, const kc_conv_group_t *cv, bool rebalance,
                      kc_str_t member_id, const char *reason)
{
    kc_classic_set_time(gm, now);
    if (kc_manager_reserve(gm) != 0)
        return -1;
    group_t *g = group_from_conv(gm, cv);
    if (!g)
        return -1;
    kc_manager_put(gm, &g->gh, g->id);
    int rc = kc_classic_emit_group_metadata(g, false, false, NULL);
    if (rc != 0) {
        /* Its members find no group and join again. */
        KC_ERROR("group", "group %.*s: the downgraded group's record cannot be written (%s)",
                 SV(g->id), rc == -2 ? "larger than message.max.bytes" : "out of memory");
        kc_classic_group_destroy(gm, g, KC_ERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return 0;
    }
    for (member_t *m = g->head; m; m = m->next)
        kc_classic_set_hb(g, m, m->session_timeout_ms);
    if (rebalance) {
        kc_history_begin(&g->rb, &gm->stats, (kc_time_t){gm->now, gm->wall}, KC_RB_DOWNGRADE,
                         member_id, kc_str_c(reason));
        g->rb_armed = true;
        kc_classic_prepare_rebalance(g, reason, NULL);
    }
    return 0;
}
