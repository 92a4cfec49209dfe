/* target.c - target assignments of consumer groups (Kafka's TargetAssignmentBuilder): the
 * topics and regular expressions members subscribe to, the assignment jobs the assignors run
 * on (inline or offloaded through the host), and applying a job's result as records. */
#include "group/target.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group/assignment.h"
#include "util/hash.h"

/* ---- Topics and regular expressions ------------------------------------------------------- */

void kc_target_topics_of(const kc_consumer_t *c, kc_gm_topics_t *tv)
{
    memset(tv, 0, sizeof(*tv));
    if (c->ops.topics)
        c->ops.topics(c->ops.ctx, tv);
}

static const kc_gm_topic_t *tv_name(const kc_gm_topics_t *tv, kc_str_t name)
{
    for (size_t i = 0; i < tv->n; i++)
        if (kc_str_eq(tv->v[i].name, name))
            return &tv->v[i];
    return NULL;
}

const kc_gm_topic_t *kc_target_tv_id(const kc_gm_topics_t *tv, const kc_uuid_t *id)
{
    for (size_t i = 0; i < tv->n; i++)
        if (kc_asg_uuid_cmp(&tv->v[i].id, id) == 0)
            return &tv->v[i];
    return NULL;
}

/* Resolve `regex` against the topics: a new rres_t (NULL when out of memory, *oom set). A
 * regex that does not compile matches nothing. The compiled pattern comes from the partition's
 * cache (src/group/regex.h), so a resolution compiles nothing after the first; its cost is
 * bounded by the topics: at most O(topics x 249 x program size), the program bounded by
 * KC_RX_MAX_MEM. */
/* One allocation holding `regex` and the `n` sorted names at `hits` (`bytes` their text
 * space); NULL when out of memory. */
static rres_t *rres_make(kc_str_t regex, const kc_str_t *hits, size_t n, size_t bytes)
{
    rres_t *r = calloc(1, sizeof(*r) + n * sizeof(kc_str_t) + bytes + kc_text_space(regex));
    if (!r)
        return NULL;
    r->topics = (kc_str_t *)(r + 1);
    char *cur = (char *)(r->topics + n);
    r->regex = kc_text_put(&cur, regex);
    for (size_t i = 0; i < n; i++)
        r->topics[i] = kc_text_put(&cur, hits[i]);
    r->n = (int32_t)n;
    return r;
}

rres_t *kc_target_rx_resolve(kc_consumer_t *c, const kc_gm_topics_t *tv, kc_str_t regex, bool *oom)
{
    kc_rx_t *owned = NULL;
    bool no_mem = false;
    /* Under an authorizer only a principal's heartbeat resolves: without its filter the regex
     * matches nothing yet (Kafka's unresolved regex). */
    if (c->cfg.consumer_regex_filtered && !c->filter) {
        rres_t *none = rres_make(regex, NULL, 0, 0);
        if (!none)
            *oom = true;
        return none;
    }
    const kc_rx_t *rx =
        kc_rx_cache_get(c->rx, regex.p, regex.len > 0 ? (size_t)regex.len : 0, &owned, &no_mem);
    if (no_mem) {
        *oom = true;
        return NULL;
    }
    size_t n = 0, bytes = 0;
    kc_str_t *hits = tv->n ? malloc(tv->n * sizeof(*hits)) : NULL;
    if (tv->n && !hits) {
        kc_rx_free(owned);
        *oom = true;
        return NULL;
    }
    const kc_gm_topic_filter_t *f = c->filter;
    for (size_t i = 0; rx && i < tv->n; i++) {
        const kc_str_t name = tv->v[i].name;
        /* Kafka's filterTopicDescribeAuthorizedTopics: a match the principal may not
         * DESCRIBE is left out. */
        if (kc_rx_full_match(rx, name.p, name.len > 0 ? (size_t)name.len : 0) &&
            (!f || f->describable(f->ctx, name))) {
            hits[n++] = name;
            bytes += kc_text_space(name);
        }
    }
    kc_rx_free(owned);
    if (n > 1)
        qsort(hits, n, sizeof(*hits), kc_text_qcmp);
    rres_t *r = rres_make(regex, hits, n, bytes);
    free(hits);
    if (!r)
        *oom = true;
    return r;
}

rres_t *kc_target_rres_dup(const rres_t *r)
{
    size_t bytes = 0;
    for (int32_t i = 0; i < r->n; i++)
        bytes += kc_text_space(r->topics[i]);
    return rres_make(r->regex, r->topics, (size_t)r->n, bytes);
}

bool kc_target_rres_eq(const rres_t *a, const rres_t *b)
{
    if (a->n != b->n)
        return false;
    for (int32_t i = 0; i < a->n; i++)
        if (kc_text_cmp(a->topics[i], b->topics[i]) != 0)
            return false;
    return true;
}

const rres_t *kc_target_rres_cached(const cgroup_t *g, kc_str_t regex)
{
    for (int32_t i = 0; i < g->n_rres; i++)
        if (kc_str_eq(g->rres[i]->regex, regex))
            return g->rres[i];
    return NULL;
}

/* A resolution of `regex`: the group's cached one when it was made from these topics,
 * otherwise a fresh one in *tmp (the caller frees it). NULL with *oom when out of memory.
 * Under an authorizer (consumer_regex_filtered) a fresh resolution needs a heartbeat's filter:
 * without one (timers, offloaded assignments) only the cached resolution is used, however
 * old, and a regex without one matches nothing yet (Kafka's unresolved regex). */
static const rres_t *resolve(const cgroup_t *g, const kc_gm_topics_t *tv, kc_str_t regex,
                             rres_t **tmp, bool *oom)
{
    *tmp = NULL;
    const kc_consumer_t *c = g->c;
    bool no_filter = c->cfg.consumer_regex_filtered && !c->filter;
    if ((g->topics_version == tv->version && g->topics_version != 0 && !c->rx_fresh) || no_filter) {
        const rres_t *r = kc_target_rres_cached(g, regex);
        if (r || no_filter)
            return r;
    }
    *tmp = kc_target_rx_resolve(g->c, tv, regex, oom);
    return *tmp;
}

static void strv_add(strv_t *l, kc_str_t s)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        kc_str_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
}

void kc_target_strv_sort_unique(strv_t *l)
{
    if (l->n < 2)
        return;
    qsort(l->v, l->n, sizeof(kc_str_t), kc_text_qcmp);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++)
        if (w == 0 || kc_text_cmp(l->v[w - 1], l->v[i]) != 0)
            l->v[w++] = l->v[i];
    l->n = w;
}

void kc_target_strv_free(strv_t *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static void keep_add(keep_t *k, rres_t *r, bool *oom)
{
    if (!r)
        return;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 8;
        rres_t **v = realloc(k->v, cap * sizeof(*v));
        if (!v) {
            free(r);
            *oom = true;
            return;
        }
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = r;
}

void kc_target_keep_free(keep_t *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    memset(k, 0, sizeof(*k));
}

/* The topic names a member with metadata `m` subscribes to: its names and what its regex
 * resolves to. Resolutions made on the way go to `keep`, so the views stay valid until it is
 * freed. */
void kc_target_member_subs(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                           strv_t *out, keep_t *keep)
{
    for (int32_t i = 0; i < m->n_topics; i++)
        strv_add(out, m->topics[i]);
    if (kc_text_set(m->regex)) {
        rres_t *tmp;
        const rres_t *r = resolve(g, tv, m->regex, &tmp, &out->oom);
        keep_add(keep, tmp, &out->oom);
        if (tmp && out->oom)
            r = NULL; /* freed by keep_add */
        for (int32_t i = 0; r && i < r->n; i++)
            strv_add(out, r->topics[i]);
    }
}

/* Whether a member with metadata `m` subscribes to `topic`. */
bool kc_target_member_subscribed(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                                 kc_str_t topic)
{
    if (kc_consumer_meta_has_topic(m, topic))
        return true;
    if (!kc_text_set(m->regex))
        return false;
    bool oom = false;
    rres_t *tmp;
    const rres_t *r = resolve(g, tv, m->regex, &tmp, &oom);
    bool hit = r && r->n > 0 &&
               bsearch(&topic, r->topics, (size_t)r->n, sizeof(kc_str_t), kc_text_qcmp) != NULL;
    free(tmp);
    return hit;
}

/* The union of the subscriptions of the group's members, `skip1` and `skip2` left out and
 * `extra` (the metadata a member is about to have) added: sorted, distinct. */
void kc_target_group_subs(const cgroup_t *g, const kc_gm_topics_t *tv, const cmember_t *skip1,
                          const cmember_t *skip2, const cmeta_t *extra, strv_t *out, keep_t *keep)
{
    for (const cmember_t *m = g->head; m; m = m->next)
        if (m != skip1 && m != skip2)
            kc_target_member_subs(g, tv, m->meta, out, keep);
    if (extra)
        kc_target_member_subs(g, tv, extra, out, keep);
    kc_target_strv_sort_unique(out);
}

/* The metadata hash of a group subscribed to `names` (sorted, distinct): the role of Kafka's
 * KIP-1101 hash (which topics exist, their ids and partition counts), computed kcoord's way
 * (Kafka's exact value depends on its release's hash library). 0 when none of the topics
 * exists, as Kafka. */
int64_t kc_target_metadata_hash(const kc_gm_topics_t *tv, const strv_t *names)
{
    uint64_t h = 0;
    bool any = false;
    for (size_t i = 0; i < names->n; i++) {
        const kc_gm_topic_t *t = tv_name(tv, names->v[i]);
        if (!t)
            continue;
        uint8_t be[4] = {(uint8_t)(t->partitions >> 24), (uint8_t)(t->partitions >> 16),
                         (uint8_t)(t->partitions >> 8), (uint8_t)t->partitions};
        uint64_t th = kc_hash_fnv1a(KC_HASH_FNV1A_SEED, "\0", 1);
        th = kc_hash_fnv1a(th, t->id.b, 16);
        th = kc_hash_fnv1a(th, t->name.p, (size_t)t->name.len);
        th = kc_hash_fnv1a(th, be, 4);
        h = kc_hash_fmix64(h * 31 + kc_hash_fmix64(th));
        any = true;
    }
    if (!any)
        return 0;
    return h ? (int64_t)h : 1;
}

/* ---- Target assignment (Kafka's TargetAssignmentBuilder) ---------------------------------- */

/* The index of topic `name` in the topics (or -1). */
static int64_t tv_index(const kc_gm_topics_t *tv, kc_str_t name)
{
    const kc_gm_topic_t *t = tv_name(tv, name);
    return t ? (int64_t)(t - tv->v) : -1;
}

/* The ids of the existing topics a member with metadata `m` subscribes to, sorted (malloc'd
 * into *out; *n 0 for none). -1 when out of memory. */
int kc_target_member_topic_ids(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                               kc_uuid_t **out, size_t *n)
{
    strv_t names = {0};
    keep_t keep = {0};
    kc_target_member_subs(g, tv, m, &names, &keep);
    *out = NULL;
    *n = 0;
    int rc = names.oom ? -1 : 0;
    if (rc == 0 && names.n > 0) {
        *out = malloc(names.n * sizeof(kc_uuid_t));
        if (!*out)
            rc = -1;
        for (size_t i = 0; rc == 0 && i < names.n; i++) {
            const kc_gm_topic_t *t = tv_name(tv, names.v[i]);
            if (t)
                (*out)[(*n)++] = t->id;
        }
        if (rc == 0 && *n > 1) {
            qsort(*out, *n, sizeof(kc_uuid_t), kc_asg_uuid_qcmp);
            size_t w = 0;
            for (size_t i = 0; i < *n; i++)
                if (w == 0 || kc_asg_uuid_cmp(&(*out)[w - 1], &(*out)[i]) != 0)
                    (*out)[w++] = (*out)[i];
            *n = w;
        }
    }
    kc_target_strv_free(&names);
    kc_target_keep_free(&keep);
    return rc;
}

/* The assignor the group uses: the one most members ask for (ties go to the earlier one in
 * group.consumer.assignors), the default when none asks. `skip1`/`skip2` are left out and
 * `extra` counted, as Kafka's computePreferredServerAssignor. */
kc_str_t kc_target_preferred_assignor(const cgroup_t *g, const cmember_t *skip1,
                                      const cmember_t *skip2, const cmeta_t *extra)
{
    const char *list = kc_consumer_assignor_list(g->c->assignors);
    kc_str_t best = kc_consumer_list_at(list, 0);
    int32_t best_count = 0;
    for (int i = 0;; i++) {
        kc_str_t name = kc_consumer_list_at(list, i);
        if (name.len < 0)
            break;
        int32_t count = 0;
        for (const cmember_t *m = g->head; m; m = m->next)
            if (m != skip1 && m != skip2 && kc_str_eq(m->meta->assignor, name))
                count++;
        if (extra && kc_str_eq(extra->assignor, name))
            count++;
        if (count > best_count) {
            best = name;
            best_count = count;
        }
    }
    return best;
}

/* ---- Assignment jobs ---------------------------------------------------------------------- */

void kc_target_job_orphan(kc_gm_job_t *job)
{
    job->g = NULL;
}

void kc_target_job_free(kc_gm_job_t *job)
{
    if (!job)
        return;
    kc_assign_result_free(&job->res);
    kc_arena_free(&job->a);
    free(job);
}

/* The job computing the target assignment of group `g` for `epoch`: every member except
 * `upd_old` and `gone`, plus, when `upd_meta` is not NULL, member `upd_id` with that metadata
 * (the member a heartbeat is updating; its current target, or that of `gone`, the static
 * member it replaces, is its starting point). NULL when out of memory. */
kc_gm_job_t *kc_target_job_build(cgroup_t *g, const kc_gm_topics_t *tv, int32_t epoch,
                                 kc_str_t upd_id, const cmeta_t *upd_meta, const cmember_t *upd_old,
                                 const cmember_t *gone)
{
    kc_gm_job_t *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    /* KIP-1263: the interval runs from here, whether the job runs inline or off the loop. */
    g->assigned_once = true;
    g->last_assign_ms = g->c->now;
    g->assign_due = NEVER;
    kc_arena_init(&job->a);
    kc_arena_t *a = &job->a;
    job->epoch = epoch;
    bool oom = false;
    uint32_t nm = 0;
    for (const cmember_t *m = g->head; m; m = m->next)
        if (m != upd_old && m != gone)
            nm++;
    if (upd_meta)
        nm++;
    size_t nt = tv->n;
    kc_assign_member_t *members = nm ? kc_arena_alloc(a, nm * sizeof(*members)) : NULL;
    kc_assign_topic_t *topics = nt ? kc_arena_alloc(a, nt * sizeof(*topics)) : NULL;
    const cmeta_t **metas = nm ? kc_arena_alloc(a, nm * sizeof(*metas)) : NULL;
    job->ids = nm ? kc_arena_alloc(a, nm * sizeof(kc_str_t)) : NULL;
    job->instance_ids = nm ? kc_arena_alloc(a, nm * sizeof(kc_str_t)) : NULL;
    job->topic_ids = nt ? kc_arena_alloc(a, nt * sizeof(kc_uuid_t)) : NULL;
    bool *used = nt ? kc_arena_alloc(a, nt * sizeof(bool)) : NULL;
    if ((nm && (!members || !metas || !job->ids || !job->instance_ids)) ||
        (nt && (!topics || !job->topic_ids || !used)))
        goto oom;
    for (size_t i = 0; i < nt; i++) {
        kc_str_t name = kc_text_arena(a, tv->v[i].name, &oom);
        topics[i].name = name.p;
        topics[i].name_len = name.len > 0 ? (size_t)name.len : 0;
        topics[i].partitions = tv->v[i].partitions;
        job->topic_ids[i] = tv->v[i].id;
        used[i] = false;
    }
    uint32_t k = 0;
    for (const cmember_t *m = g->head; m; m = m->next) {
        if (m == upd_old || m == gone)
            continue;
        job->ids[k] = m->id;
        metas[k++] = m->meta;
    }
    if (upd_meta) {
        job->ids[k] = upd_id;
        metas[k++] = upd_meta;
    }
    for (uint32_t i = 0; i < nm && !oom; i++) {
        kc_assign_member_t *am = &members[i];
        const cmeta_t *mt = metas[i];
        /* The current target, for stickiness: a replaced static member's for its successor
         * (looked up before the id is copied). */
        const asg_t *cur = kc_consumer_target_of(g, job->ids[i]);
        if (!kc_consumer_find_target(g, job->ids[i]) && upd_meta && i == nm - 1 && gone)
            cur = kc_consumer_target_of(g, gone->id);
        job->ids[i] = kc_text_arena(a, job->ids[i], &oom);
        job->instance_ids[i] = kc_text_arena(a, mt->instance_id, &oom);
        kc_str_t rack = kc_text_arena(a, mt->rack_id, &oom);
        am->id = job->ids[i].p;
        am->id_len = job->ids[i].len > 0 ? (size_t)job->ids[i].len : 0;
        am->instance_id = job->instance_ids[i].p;
        am->instance_id_len = job->instance_ids[i].len > 0 ? (size_t)job->instance_ids[i].len : 0;
        am->rack = rack.p;
        am->rack_len = rack.len > 0 ? (size_t)rack.len : 0;
        /* Subscribed topic indexes. */
        strv_t names = {0};
        keep_t keep = {0};
        kc_target_member_subs(g, tv, mt, &names, &keep);
        uint32_t *idx = names.n ? kc_arena_alloc(a, names.n * sizeof(*idx)) : NULL;
        uint32_t ni = 0;
        for (size_t j = 0; idx && j < names.n; j++) {
            int64_t x = tv_index(tv, names.v[j]);
            if (x >= 0) {
                idx[ni++] = (uint32_t)x;
                used[x] = true;
            }
        }
        if (names.oom || (names.n && !idx))
            oom = true;
        kc_target_strv_free(&names);
        kc_target_keep_free(&keep);
        am->topics = idx;
        am->n_topics = ni;
        uint32_t ntp = 0;
        kc_assign_tparts_t *tp =
            cur && cur->n ? kc_arena_alloc(a, (size_t)cur->n * sizeof(*tp)) : NULL;
        if (cur && cur->n && !tp)
            oom = true;
        for (int32_t j = 0; tp && j < cur->n; j++) {
            const kc_gm_topic_t *t = kc_target_tv_id(tv, &cur->t[j].topic);
            if (!t)
                continue;
            int32_t *parts = kc_arena_dup(a, cur->t[j].p, (size_t)cur->t[j].n * sizeof(int32_t));
            if (!parts && cur->t[j].n) {
                oom = true;
                break;
            }
            tp[ntp].topic = (uint32_t)(t - tv->v);
            tp[ntp].n_partitions = (uint32_t)cur->t[j].n;
            tp[ntp].partitions = parts;
            ntp++;
        }
        am->current.topics = tp;
        am->current.n_topics = ntp;
    }
    if (oom)
        goto oom;
    job->weight = nm;
    for (size_t i = 0; i < nt; i++)
        if (used[i] && tv->v[i].partitions > 0)
            job->weight += (uint64_t)tv->v[i].partitions;
    job->spec = (kc_assign_spec_t){
        .members = members, .n_members = nm, .topics = topics, .n_topics = (uint32_t)nt};
    kc_str_t name = kc_target_preferred_assignor(g, upd_old, gone, upd_meta);
    job->asr = kc_assignor_find(name.p, (size_t)name.len);
    if (!job->asr)
        job->asr = kc_assignor_at(0);
    job->assignor = kc_text_arena(a, job->asr ? kc_str_c(job->asr->name) : name, &oom);
    if (oom)
        goto oom;
    return job;
oom:
    kc_target_job_free(job);
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Run the assignor. Touches nothing but the job, so any thread may call it. The clock is read
 * only to measure the run for the metrics; nothing decides on it. */
void kc_gm_job_run(kc_gm_job_t *job)
{
    uint64_t t0 = mono_ns();
    job->rc = job->asr ? job->asr->assign(&job->spec, &job->res) : -EINVAL;
    job->run_ns = mono_ns() - t0;
}

/* Whether the id is one of the job's members. */
static bool job_has(const kc_gm_job_t *job, kc_str_t id)
{
    for (uint32_t i = 0; i < job->spec.n_members; i++)
        if (kc_str_eq(job->ids[i], id))
            return true;
    return false;
}

/* Kafka's updateTargetAssignment, second half: plan a target record for every member whose
 * target the job changed, then the assignment epoch record. With `remap` (the job ran off the
 * loop while the group went on), members that left since are skipped and the result of a
 * static member that was replaced since goes to its successor, as if those changes came after
 * the assignment. Returns a copy of the new target of member `mine` (null id: none; owned by
 * the caller); *err is a Kafka error when the assignor failed (p->oom when memory ran out). */
asg_t *kc_target_job_plan(plan_t *p, const kc_gm_job_t *job, bool remap, kc_str_t mine, int64_t now,
                          int16_t *err)
{
    cgroup_t *g = p->g;
    asg_t *my = NULL;
    if (job->rc != 0) {
        if (job->rc == -ENOMEM) {
            p->oom = true;
        } else {
            *err = KC_ERR_UNKNOWN_SERVER_ERROR;
            KC_ERROR("group",
                     "consumer group %.*s: failed to compute a new target assignment for epoch "
                     "%d with the %.*s assignor (error %d)",
                     SV(g->id), (int)job->epoch, SV(job->assignor), job->rc);
        }
        return NULL;
    }
    for (uint32_t i = 0; i < job->spec.n_members && !p->oom; i++) {
        kc_str_t to = job->ids[i];
        if (remap && !kc_consumer_find_member(g, to)) {
            cmember_t *s = kc_consumer_find_static(g, job->instance_ids[i]);
            if (!s || job_has(job, s->id))
                continue;
            to = s->id;
        }
        tpv_t l = {0};
        const kc_assign_owned_t *o = &job->res.members[i];
        for (uint32_t j = 0; j < o->n_topics; j++) {
            const kc_assign_tparts_t *t = &o->topics[j];
            if (t->topic >= job->spec.n_topics)
                continue;
            for (uint32_t q = 0; q < t->n_partitions; q++)
                kc_asg_tpv_add(&l, &job->topic_ids[t->topic], t->partitions[q]);
        }
        bool oom = false;
        asg_t *na = kc_asg_build(&l, &oom);
        kc_asg_tpv_free(&l);
        if (oom) {
            p->oom = true;
            break;
        }
        if (mine.p && kc_str_eq(to, mine)) {
            my = kc_asg_dup(na, &oom);
            if (oom)
                p->oom = true;
        }
        if (kc_consumer_find_target(g, to) && kc_asg_eq(na, kc_consumer_target_of(g, to)))
            free(na);
        else
            kc_consumer_plan_target(p, to, na, now);
    }
    KC_DEBUG("group",
             "consumer group %.*s: computed a new target assignment for epoch %d with the "
             "%.*s assignor in %.3f ms%s",
             SV(g->id), (int)job->epoch, SV(job->assignor), (double)job->run_ns / 1e6,
             job->offloaded ? " off the loop" : "");
    act_t *ae = kc_consumer_plan_add(p, A_TARGET_EPOCH, KC_STR_NULL);
    if (ae)
        ae->epoch = job->epoch;
    kc_consumer_act_encode(p, ae, g->id, now);
    if (p->oom || *err) {
        free(my);
        my = NULL;
    }
    return my;
}

/* Whether `job` runs off the loop: the host can, it is enabled, and the job is large enough
 * (a group still at assignment epoch 0, written by an older kcoord, is computed inline: its
 * joining members could only be given the reserved epoch 0 meanwhile). */
bool kc_target_job_offload_wanted(const kc_consumer_t *c, const cgroup_t *g, const kc_gm_job_t *job)
{
    int64_t threshold = c->cfg.consumer_offload_threshold;
    if (!c->ops.offload || threshold < 0 || g->assignment_epoch < 1)
        return false;
    return job->weight >= (uint64_t)(threshold ? threshold : KC_GM_OFFLOAD_THRESHOLD_DEFAULT);
}

void kc_target_job_count(kc_consumer_t *c, const kc_gm_job_t *job)
{
    kc_gm_stats_t *st = (&c->gm->stats);
    int mode = job->offloaded ? 1 : 0;
    if (job->rc != 0) {
        st->assign_failed++;
        return;
    }
    double s = (double)job->run_ns / 1e9;
    int i = 0;
    while (i < KC_GM_ASSIGN_BUCKETS - 1 && s > kc_gm_assign_bounds_s[i])
        i++;
    st->assign_time[mode][i]++;
    st->assign_time_sum_s[mode] += s;
}

static void job_finish(kc_gm_job_t *job);
static void catch_up(cgroup_t *g);

/* Attach `job` (built for the committed group `g`) to it and hand it to the host when
 * `offload`; compute and apply it at once when not, or when the host cannot take it. */
void kc_target_job_start(cgroup_t *g, kc_gm_job_t *job, bool offload)
{
    kc_consumer_t *c = g->c;
    g->job = job;
    job->g = g;
    if (offload) {
        job->offloaded = true;
        KC_DEBUG("group",
                 "consumer group %.*s: target assignment for epoch %d (%u members, weight "
                 "%llu) goes off the loop",
                 SV(g->id), (int)job->epoch, job->spec.n_members, (unsigned long long)job->weight);
        if (c->ops.offload(c->ops.ctx, job) == 0)
            return;
        KC_WARN("group",
                "consumer group %.*s: the target assignment for epoch %d could not be handed "
                "to a worker; computing it on the loop",
                SV(g->id), (int)job->epoch);
        job->offloaded = false;
    }
    kc_gm_job_run(job);
    job_finish(job);
}

/* A target assignment that was computed off the loop: apply it when it is newer than the
 * group's, then, when the group epoch moved on meanwhile, start the next one. */
static void job_finish(kc_gm_job_t *job)
{
    cgroup_t *g = job->g;
    if (!g) {
        kc_target_job_free(job);
        return;
    }
    kc_consumer_t *c = g->c;
    g->job = NULL;
    job->g = NULL;
    kc_target_job_count(c, job);
    if (job->epoch > g->assignment_epoch) {
        plan_t p = {.c = c, .g = g};
        int16_t err = 0;
        kc_target_job_plan(&p, job, true, KC_STR_NULL, c->wall, &err);
        if (p.oom)
            KC_ERROR("group",
                     "consumer group %.*s: out of memory applying the target assignment for "
                     "epoch %d; the next heartbeat computes it again",
                     SV(g->id), (int)job->epoch);
        else if (!err)
            kc_consumer_commit(&p, "target assignment computed");
        bool failed = err || p.oom;
        kc_consumer_plan_free(&p);
        if (failed) {
            kc_target_job_free(job);
            return; /* the next heartbeat tries again */
        }
    } else {
        KC_DEBUG("group",
                 "consumer group %.*s: target assignment for epoch %d dropped (assignment "
                 "epoch already %d)",
                 SV(g->id), (int)job->epoch, (int)g->assignment_epoch);
    }
    kc_target_job_free(job);
    catch_up(g);
}

/* ---- KIP-1263: assignment batching ------------------------------------------------------------
 */

bool kc_target_defer(cgroup_t *g, int32_t epoch)
{
    kc_consumer_t *c = g->c;
    (void)epoch;
    if (!g->assigned_once)
        return false;
    kc_gm_group_config_t gc;
    kc_manager_group_config(c->gm, g->id, &gc);
    if (gc.assignment_interval_ms <= 0)
        return false;
    int64_t due = g->last_assign_ms + gc.assignment_interval_ms;
    if (c->now >= due)
        return false;
    if (g->assign_due != due) {
        KC_DEBUG("group",
                 "consumer group %.*s: target assignment for epoch %d deferred by %lld ms "
                 "(assignment interval %d ms)",
                 SV(g->id), (int)epoch, (long long)(due - c->now), (int)gc.assignment_interval_ms);
        g->assign_due = due;
    }
    if (!g->loading)
        kc_manager_arm(c->gm, &g->gh, due);
    return true;
}

void kc_target_deferred_due(cgroup_t *g)
{
    g->assign_due = NEVER;
    if (!g->job)
        catch_up(g);
}

/* Start the target assignment of the group's epoch when it is ahead of the assignment and no
 * job runs, unless the assignment interval defers it (the group's timer comes back then). */
static void catch_up(cgroup_t *g)
{
    kc_consumer_t *c = g->c;
    if (g->n_members > 0 && g->epoch > g->assignment_epoch && !kc_target_defer(g, g->epoch)) {
        kc_gm_topics_t tv;
        kc_target_topics_of(c, &tv);
        kc_gm_job_t *next = kc_target_job_build(g, &tv, g->epoch, KC_STR_NULL, NULL, NULL, NULL);
        if (!next) {
            KC_ERROR("group",
                     "consumer group %.*s: out of memory preparing the target assignment for "
                     "epoch %d; the next heartbeat tries again",
                     SV(g->id), (int)g->epoch);
            return;
        }
        kc_target_job_start(g, next, kc_target_job_offload_wanted(c, g, next));
    }
}

/* Called by the host on the loop thread once the job ran (group.h). */
void kc_gm_job_done(kc_gm_job_t *job, kc_time_t now)
{
    if (job->g)
        kc_consumer_set_time(job->g->c, now);
    job_finish(job);
}
