/* classic_convert.c - the classic machine's half of the conversions between kinds: a classic
 * group handed to the consumer machine (Kafka's convertToConsumerGroup reads the ClassicGroup
 * and tombstones it), through the manager (manager.h's kc_conv_group_t).
 *
 * The export copies what a consumer group needs of each member (ids, client, timeouts, the
 * protocols of its JoinGroup, its current assignment) into the converting request's arena, so
 * that the classic group can go before the consumer group's records are written, as Kafka
 * orders them.
 */
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
