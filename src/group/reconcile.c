/* reconcile.c - a consumer member's current assignment (Kafka's CurrentAssignmentBuilder).
 *
 * Pure: given the member's current state, what it reported owning, its target and who holds
 * which partition, kc_reconcile() computes the member's next epoch, state and assignment,
 * one step per heartbeat (revoke first, then take what nobody else holds any more). */
#include "group/reconcile.h"

#include <stdlib.h>
#include <string.h>

#include "group/assignment.h"

/* ---- Reconciliation (Kafka's CurrentAssignmentBuilder) ------------------------------------ */

/* Kafka's ownsRevokedPartitions: whether the member still reports a partition of `pairs`
 * (sorted); a member that did not report its partitions is assumed to own them all. */
static bool owns_any(const owned_t *owned, const tpv_t *pairs)
{
    if (owned->n < 0)
        return true;
    for (int32_t i = 0; i < owned->n; i++)
        for (int32_t j = 0; j < owned->v[i].partitions.n; j++)
            if (kc_asg_pairs_has(pairs, &owned->v[i].topic_id, owned->v[i].partitions.v[j]))
                return true;
    return false;
}

/* Kafka's isSubset: every reported partition is in `assigned` (false when not reported). */
bool kc_reconcile_owned_subset(const owned_t *owned, const asg_t *assigned)
{
    if (owned->n < 0)
        return false;
    for (int32_t i = 0; i < owned->n; i++) {
        const tpl_t *t = kc_asg_topic(assigned, &owned->v[i].topic_id);
        if (!t)
            return false;
        for (int32_t j = 0; j < owned->v[i].partitions.n; j++)
            if (!kc_asg_has(assigned, &owned->v[i].topic_id, owned->v[i].partitions.v[j]))
                return false;
    }
    return true;
}

static bool held_by_member(const cmember_t *m, const kc_uuid_t *topic, int32_t part)
{
    return m && (kc_asg_has(m->assigned, topic, part) || kc_asg_has(m->revoking, topic, part));
}

/* Whether a member other than the one reconciled still holds the partition. */
static bool held_by_others(const rin_t *in, const kc_uuid_t *topic, int32_t part)
{
    int32_t n = kc_asg_holders_count(in->holders, topic, part);
    if (n > 0 && held_by_member(in->skip1, topic, part))
        n--;
    if (n > 0 && held_by_member(in->skip2, topic, part))
        n--;
    return n > 0;
}

static bool subscribed_id(const rin_t *in, const kc_uuid_t *topic)
{
    return in->n_subs > 0 &&
           bsearch(topic, in->subs, in->n_subs, sizeof(kc_uuid_t), kc_asg_uuid_qcmp) != NULL;
}

static void recon_set(recon_t *out, int32_t epoch, int32_t prev, int8_t state, tpv_t *assigned,
                      tpv_t *revoking)
{
    out->epoch = epoch;
    out->prev_epoch = prev;
    out->state = state;
    out->assigned = kc_asg_build(assigned, &out->oom);
    out->revoking = revoking ? kc_asg_build(revoking, &out->oom) : NULL;
}

/* Kafka's computeNextAssignment. */
static void compute_next(const rin_t *in, int32_t member_epoch, recon_t *out)
{
    const mview_t *m = in->m;
    tpv_t keep = {0}, revoke = {0}, pending = {0};
    bool unreleased = false;
    for (int32_t i = 0; m->assigned && i < m->assigned->n; i++) {
        const tpl_t *t = &m->assigned->t[i];
        bool sub = subscribed_id(in, &t->topic);
        for (int32_t j = 0; j < t->n; j++) {
            if (sub && kc_asg_has(in->target, &t->topic, t->p[j]))
                kc_asg_tpv_add(&keep, &t->topic, t->p[j]);
            else
                kc_asg_tpv_add(&revoke, &t->topic, t->p[j]);
        }
    }
    for (int32_t i = 0; in->target && i < in->target->n; i++) {
        const tpl_t *t = &in->target->t[i];
        if (!subscribed_id(in, &t->topic))
            continue;
        for (int32_t j = 0; j < t->n; j++) {
            if (kc_asg_has(m->assigned, &t->topic, t->p[j]))
                continue;
            if (held_by_others(in, &t->topic, t->p[j]) &&
                !kc_asg_has(m->revoking, &t->topic, t->p[j]))
                unreleased = true;
            else
                kc_asg_tpv_add(&pending, &t->topic, t->p[j]);
        }
    }
    out->oom = keep.oom || revoke.oom || pending.oom;
    if (!out->oom) {
        if (revoke.n > 1)
            qsort(revoke.v, revoke.n, sizeof(tp_t), kc_asg_tp_cmp);
        if (revoke.n > 0 && owns_any(in->owned, &revoke)) {
            recon_set(out, member_epoch, m->epoch, MS_UNREVOKED, &keep, &revoke);
        } else if (pending.n > 0) {
            for (size_t i = 0; i < pending.n; i++)
                kc_asg_tpv_add(&keep, &pending.v[i].topic, pending.v[i].part);
            recon_set(out, in->target_epoch, m->epoch, unreleased ? MS_UNRELEASED : MS_STABLE,
                      &keep, NULL);
        } else {
            recon_set(out, in->target_epoch, m->epoch, unreleased ? MS_UNRELEASED : MS_STABLE,
                      &keep, NULL);
        }
    }
    kc_asg_tpv_free(&keep);
    kc_asg_tpv_free(&revoke);
    kc_asg_tpv_free(&pending);
}

/* Kafka's updateCurrentAssignment: the subscription changed at the same epoch; partitions of
 * topics no longer subscribed go to revocation. */
static void update_current(const rin_t *in, recon_t *out)
{
    const mview_t *m = in->m;
    tpv_t keep = {0}, revoke = {0};
    size_t removed = 0;
    kc_asg_pairs(m->revoking, &revoke);
    for (int32_t i = 0; m->assigned && i < m->assigned->n; i++) {
        const tpl_t *t = &m->assigned->t[i];
        bool sub = subscribed_id(in, &t->topic);
        for (int32_t j = 0; j < t->n; j++) {
            if (sub) {
                kc_asg_tpv_add(&keep, &t->topic, t->p[j]);
            } else {
                kc_asg_tpv_add(&revoke, &t->topic, t->p[j]);
                removed++;
            }
        }
    }
    out->oom = keep.oom || revoke.oom;
    if (!out->oom && removed == 0) {
        /* Nothing to take away: the member stays as it is. */
        out->epoch = m->epoch;
        out->prev_epoch = m->prev_epoch;
        out->state = m->state;
        out->assigned = kc_asg_dup(m->assigned, &out->oom);
        out->revoking = kc_asg_dup(m->revoking, &out->oom);
    } else if (!out->oom) {
        if (revoke.n > 1)
            qsort(revoke.v, revoke.n, sizeof(tp_t), kc_asg_tp_cmp);
        if (revoke.n > 0 && owns_any(in->owned, &revoke)) {
            recon_set(out, m->epoch, m->epoch, MS_UNREVOKED, &keep, &revoke);
        } else {
            /* Already released: only the assigned partitions shrink. */
            out->epoch = m->epoch;
            out->prev_epoch = m->epoch;
            out->state = m->state;
            out->assigned = kc_asg_build(&keep, &out->oom);
            out->revoking = kc_asg_dup(m->revoking, &out->oom);
        }
    }
    kc_asg_tpv_free(&keep);
    kc_asg_tpv_free(&revoke);
}

/* Kafka's maybeReconcile + CurrentAssignmentBuilder.build(): the member's next current
 * assignment. out->changed tells whether it differs (a record is then due). */
void kc_reconcile(const rin_t *in, recon_t *out)
{
    const mview_t *m = in->m;
    memset(out, 0, sizeof(*out));
    if (!in->sub_changed && m->state == MS_STABLE && m->epoch == in->target_epoch)
        return;
    tpv_t rv = {0};
    switch (m->state) {
    case MS_STABLE:
        if (m->epoch != in->target_epoch)
            compute_next(in, m->epoch, out);
        else if (in->sub_changed)
            update_current(in, out);
        else
            return;
        break;
    case MS_UNREVOKED:
        kc_asg_pairs(m->revoking, &rv);
        if (rv.oom) {
            out->oom = true;
        } else if (owns_any(in->owned, &rv)) {
            if (in->sub_changed)
                update_current(in, out);
            else {
                kc_asg_tpv_free(&rv);
                return;
            }
        } else {
            compute_next(in, m->epoch, out);
        }
        kc_asg_tpv_free(&rv);
        break;
    case MS_UNRELEASED:
        compute_next(in, m->epoch, out);
        break;
    default:
        /* A state from a future version: start over without partitions. */
        if (in->owned->n != 0) {
            out->err = KC_ERR_FENCED_MEMBER_EPOCH;
            return;
        }
        compute_next(in, in->target_epoch, out);
        break;
    }
    if (out->oom) {
        free(out->assigned);
        free(out->revoking);
        out->assigned = out->revoking = NULL;
        return;
    }
    out->changed = out->epoch != m->epoch || out->prev_epoch != m->prev_epoch ||
                   out->state != m->state || !kc_asg_eq(out->assigned, m->assigned) ||
                   !kc_asg_eq(out->revoking, m->revoking);
    if (!out->changed) {
        free(out->assigned);
        free(out->revoking);
        out->assigned = out->revoking = NULL;
    }
}
