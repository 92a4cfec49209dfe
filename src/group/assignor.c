/* assignor.c - the assignors' common model, their result, the "range" assignor and the table
 * that names them.
 *
 * Every assignor runs in three steps: kc_assign__init validates the spec and builds the
 * canonical model described in assign_internal.h (ranks for members and topics, global
 * partition numbers, subscription lists both ways, the current owner of every partition);
 * the assignor fills c->owner; kc_assign__finish turns c->owner into the caller's result.
 * The uniform assignor lives in assign_uniform.c.
 *
 * Cost of the common part: O(M log M + T log T + S + P + A) time for M members, T topics, S
 * subscriptions, P partitions and A entries of current assignments, in a handful of arena
 * blocks; the result is one malloc'd block.
 *
 * Extending: a new assignor is a function that calls kc_assign__init, fills c->owner and calls
 * kc_assign__finish; add it to the `assignors` table to make it selectable by name.
 */
#include "group/assignor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "group/assign_internal.h"

/* ---- The model ---------------------------------------------------------------------------- */

void *kc_assign__alloc(kc_assign_ctx_t *c, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return kc_arena_alloc(&c->arena, n * size);
}

/* A byte string with the index it came from, for sorting. */
typedef struct skey_s {
    const char *p;
    size_t len;
    uint32_t idx;
} skey_t;

static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int d = n > 0 ? memcmp(a, b, n) : 0;
    if (d != 0)
        return d;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Bytes, then length, then index: a total order, so qsort's result is unique. */
static int skey_cmp(const void *x, const void *y)
{
    const skey_t *a = x, *b = y;
    int d = bytes_cmp(a->p, a->len, b->p, b->len);
    if (d != 0)
        return d;
    return a->idx < b->idx ? -1 : a->idx > b->idx ? 1 : 0;
}

static bool bad_ptr(const void *p, size_t n)
{
    return p == NULL && n != 0;
}

/* Number the members by id and the topics by name. */
static int rank_members_topics(kc_assign_ctx_t *c)
{
    const kc_assign_spec_t *s = c->spec;
    size_t nkeys = c->nm > c->nt ? c->nm : c->nt;
    skey_t *keys = kc_assign__alloc(c, nkeys, sizeof *keys);
    c->m_idx = kc_assign__alloc(c, c->nm, sizeof *c->m_idx);
    c->t_idx = kc_assign__alloc(c, c->nt, sizeof *c->t_idx);
    c->t_rank = kc_assign__alloc(c, c->nt, sizeof *c->t_rank);
    c->tcount = kc_assign__alloc(c, c->nt, sizeof *c->tcount);
    c->pbase = kc_assign__alloc(c, (size_t)c->nt + 1, sizeof *c->pbase);
    if (keys == NULL || c->m_idx == NULL || c->t_idx == NULL || c->t_rank == NULL ||
        c->tcount == NULL || c->pbase == NULL)
        return -ENOMEM;

    for (uint32_t i = 0; i < c->nm; i++) {
        const kc_assign_member_t *m = &s->members[i];
        if (bad_ptr(m->id, m->id_len) || bad_ptr(m->instance_id, m->instance_id_len) ||
            bad_ptr(m->rack, m->rack_len) || bad_ptr(m->topics, m->n_topics) ||
            bad_ptr(m->current.topics, m->current.n_topics))
            return -EINVAL;
        keys[i] = (skey_t){m->id, m->id_len, i};
    }
    if (c->nm > 1)
        qsort(keys, c->nm, sizeof *keys, skey_cmp);
    for (uint32_t r = 0; r < c->nm; r++) {
        if (r > 0 && bytes_cmp(keys[r - 1].p, keys[r - 1].len, keys[r].p, keys[r].len) == 0)
            return -EINVAL; /* duplicate member id */
        c->m_idx[r] = keys[r].idx;
    }

    for (uint32_t t = 0; t < c->nt; t++) {
        const kc_assign_topic_t *tp = &s->topics[t];
        if (bad_ptr(tp->name, tp->name_len) || tp->partitions < 0)
            return -EINVAL;
        keys[t] = (skey_t){tp->name, tp->name_len, t};
    }
    if (c->nt > 1)
        qsort(keys, c->nt, sizeof *keys, skey_cmp);
    uint64_t total = 0;
    for (uint32_t k = 0; k < c->nt; k++) {
        uint32_t t = keys[k].idx;
        c->t_idx[k] = t;
        c->t_rank[t] = k;
        c->tcount[k] = (uint32_t)s->topics[t].partitions;
        c->pbase[k] = (uint32_t)total;
        total += c->tcount[k];
        if (total > INT32_MAX)
            return -EINVAL;
    }
    c->pbase[c->nt] = (uint32_t)total;
    c->np = (uint32_t)total;
    return 0;
}

/* Subscriptions both ways, deduplicated. ts_* is built first (members visited in rank order,
 * so each topic's list is ascending), then sub_* by transposing it (topics visited in rank
 * order, so each member's list is ascending). */
static int build_subscriptions(kc_assign_ctx_t *c, uint32_t *stamp)
{
    const kc_assign_spec_t *s = c->spec;
    c->ts_off = kc_assign__alloc(c, (size_t)c->nt + 1, sizeof *c->ts_off);
    c->sub_off = kc_assign__alloc(c, (size_t)c->nm + 1, sizeof *c->sub_off);
    uint32_t *cursor = kc_assign__alloc(c, c->nm > c->nt ? c->nm : c->nt, sizeof *cursor);
    if (c->ts_off == NULL || c->sub_off == NULL || cursor == NULL)
        return -ENOMEM;

    /* Count subscribers per topic; stamp[k] == r + 1 marks topic k as seen for member r. */
    uint64_t nsubs = 0;
    for (uint32_t r = 0; r < c->nm; r++) {
        const kc_assign_member_t *m = &s->members[c->m_idx[r]];
        for (uint32_t j = 0; j < m->n_topics; j++) {
            if (m->topics[j] >= c->nt)
                return -EINVAL;
            uint32_t k = c->t_rank[m->topics[j]];
            if (stamp[k] == r + 1)
                continue;
            stamp[k] = r + 1;
            c->ts_off[k + 1]++;
            nsubs++;
        }
    }
    if (nsubs > UINT32_MAX)
        return -EINVAL;
    for (uint32_t k = 0; k < c->nt; k++)
        c->ts_off[k + 1] += c->ts_off[k];

    c->ts_mem = kc_assign__alloc(c, (size_t)nsubs, sizeof *c->ts_mem);
    c->sub_topic = kc_assign__alloc(c, (size_t)nsubs, sizeof *c->sub_topic);
    if (c->ts_mem == NULL || c->sub_topic == NULL)
        return -ENOMEM;

    memset(stamp, 0, sizeof *stamp * c->nt);
    for (uint32_t k = 0; k < c->nt; k++)
        cursor[k] = c->ts_off[k];
    for (uint32_t r = 0; r < c->nm; r++) {
        const kc_assign_member_t *m = &s->members[c->m_idx[r]];
        for (uint32_t j = 0; j < m->n_topics; j++) {
            uint32_t k = c->t_rank[m->topics[j]];
            if (stamp[k] == r + 1)
                continue;
            stamp[k] = r + 1;
            c->ts_mem[cursor[k]++] = r;
            c->sub_off[r + 1]++;
        }
    }
    for (uint32_t r = 0; r < c->nm; r++)
        c->sub_off[r + 1] += c->sub_off[r];

    for (uint32_t r = 0; r < c->nm; r++)
        cursor[r] = c->sub_off[r];
    for (uint32_t k = 0; k < c->nt; k++)
        for (uint32_t i = c->ts_off[k]; i < c->ts_off[k + 1]; i++)
            c->sub_topic[cursor[c->ts_mem[i]]++] = k;
    return 0;
}

/* prev[g]: who owns g now, keeping only claims that still make sense. Members are visited in
 * rank order, so of two members claiming the same partition the one with the smaller id
 * keeps it. */
static int claim_current(kc_assign_ctx_t *c, uint32_t *stamp)
{
    const kc_assign_spec_t *s = c->spec;
    c->prev = kc_assign__alloc(c, c->np, sizeof *c->prev);
    c->owner = kc_assign__alloc(c, c->np, sizeof *c->owner);
    if (c->prev == NULL || c->owner == NULL)
        return -ENOMEM;
    for (uint32_t g = 0; g < c->np; g++) {
        c->prev[g] = -1;
        c->owner[g] = -1;
    }

    memset(stamp, 0, sizeof *stamp * c->nt);
    for (uint32_t r = 0; r < c->nm; r++) {
        for (uint32_t j = c->sub_off[r]; j < c->sub_off[r + 1]; j++)
            stamp[c->sub_topic[j]] = r + 1;
        const kc_assign_owned_t *cur = &s->members[c->m_idx[r]].current;
        for (uint32_t j = 0; j < cur->n_topics; j++) {
            const kc_assign_tparts_t *tp = &cur->topics[j];
            if (bad_ptr(tp->partitions, tp->n_partitions))
                return -EINVAL;
            if (tp->topic >= c->nt)
                continue;
            uint32_t k = c->t_rank[tp->topic];
            if (stamp[k] != r + 1)
                continue;
            for (uint32_t i = 0; i < tp->n_partitions; i++) {
                int32_t p = tp->partitions[i];
                if (p < 0 || (uint32_t)p >= c->tcount[k])
                    continue;
                uint32_t g = c->pbase[k] + (uint32_t)p;
                if (c->prev[g] < 0)
                    c->prev[g] = (int32_t)r;
            }
        }
    }
    return 0;
}

int kc_assign__init(kc_assign_ctx_t *c, const kc_assign_spec_t *spec)
{
    memset(c, 0, sizeof *c);
    kc_arena_init(&c->arena);
    c->spec = spec;
    if (spec == NULL || bad_ptr(spec->members, spec->n_members) ||
        bad_ptr(spec->topics, spec->n_topics))
        return -EINVAL;
    c->arena.limit = spec->mem_limit;
    c->nm = spec->n_members;
    c->nt = spec->n_topics;

    int rc = rank_members_topics(c);
    if (rc != 0)
        return rc;
    uint32_t *stamp = kc_assign__alloc(c, c->nt, sizeof *stamp);
    if (stamp == NULL)
        return -ENOMEM;
    rc = build_subscriptions(c, stamp);
    if (rc != 0)
        return rc;
    return claim_current(c, stamp);
}

void kc_assign__free(kc_assign_ctx_t *c)
{
    kc_arena_free(&c->arena);
}

/* ---- The result --------------------------------------------------------------------------- */

int kc_assign__finish(kc_assign_ctx_t *c, kc_assign_result_t *out)
{
    const kc_assign_spec_t *s = c->spec;
    /* Per member index: entries and partitions, then cursors into the result. */
    uint32_t *n_ent = kc_assign__alloc(c, c->nm, sizeof *n_ent);
    uint32_t *n_par = kc_assign__alloc(c, c->nm, sizeof *n_par);
    uint32_t *last = kc_assign__alloc(c, c->nm, sizeof *last);
    if (n_ent == NULL || n_par == NULL || last == NULL)
        return -ENOMEM;

    uint64_t ents = 0, parts = 0;
    uint32_t kept = 0, moved = 0;
    for (uint32_t t = 0; t < c->nt; t++) {
        uint32_t k = c->t_rank[t];
        for (uint32_t p = 0; p < c->tcount[k]; p++) {
            uint32_t g = c->pbase[k] + p;
            int32_t o = c->owner[g];
            if (o < 0)
                continue;
            uint32_t i = c->m_idx[o];
            if (last[i] != t + 1) {
                last[i] = t + 1;
                n_ent[i]++;
                ents++;
            }
            n_par[i]++;
            parts++;
            if (c->prev[g] == o)
                kept++;
            else if (c->prev[g] >= 0)
                moved++;
        }
    }

    size_t bytes = sizeof(kc_assign_owned_t) * (size_t)c->nm +
                   sizeof(kc_assign_tparts_t) * (size_t)ents + sizeof(int32_t) * (size_t)parts;
    if (s->mem_limit != 0 &&
        (c->arena.total > s->mem_limit || bytes > s->mem_limit - c->arena.total))
        return -ENOMEM;
    unsigned char *block = malloc(bytes > 0 ? bytes : 1);
    if (block == NULL)
        return -ENOMEM;
    kc_assign_owned_t *members = (kc_assign_owned_t *)block;
    kc_assign_tparts_t *tparts =
        (kc_assign_tparts_t *)(block + sizeof(kc_assign_owned_t) * (size_t)c->nm);
    int32_t *pnum = (int32_t *)(block + sizeof(kc_assign_owned_t) * (size_t)c->nm +
                                sizeof(kc_assign_tparts_t) * (size_t)ents);

    /* Turn the counts into cursors: n_ent[i] becomes member i's next entry, n_par[i] its next
     * partition slot. */
    uint32_t eoff = 0, poff = 0;
    for (uint32_t i = 0; i < c->nm; i++) {
        uint32_t ne = n_ent[i], npar = n_par[i];
        members[i].topics = ne > 0 ? &tparts[eoff] : NULL;
        members[i].n_topics = ne;
        n_ent[i] = eoff;
        n_par[i] = poff;
        eoff += ne;
        poff += npar;
        last[i] = 0;
    }
    for (uint32_t t = 0; t < c->nt; t++) {
        uint32_t k = c->t_rank[t];
        for (uint32_t p = 0; p < c->tcount[k]; p++) {
            int32_t o = c->owner[c->pbase[k] + p];
            if (o < 0)
                continue;
            uint32_t i = c->m_idx[o];
            if (last[i] != t + 1) {
                last[i] = t + 1;
                tparts[n_ent[i]++] = (kc_assign_tparts_t){
                    .topic = t, .n_partitions = 0, .partitions = &pnum[n_par[i]]};
            }
            tparts[n_ent[i] - 1].n_partitions++;
            pnum[n_par[i]++] = (int32_t)p;
        }
    }

    out->members = members;
    out->n_members = c->nm;
    out->n_assigned = (uint32_t)parts;
    out->n_kept = kept;
    out->n_moved = moved;
    return 0;
}

void kc_assign_result_free(kc_assign_result_t *res)
{
    if (res == NULL)
        return;
    free(res->members);
    memset(res, 0, sizeof *res);
}

/* ---- range -------------------------------------------------------------------------------- */

/* Range order: static members first, by instance id, then dynamic members by member id
 * (Kafka's RangeAssignor.sortMemberIds). Ties between equal instance ids go by member id. */
typedef struct rkey_s {
    const char *p; /* instance id, NULL for a dynamic member */
    size_t len;
    uint32_t rank;
} rkey_t;

static int rkey_cmp(const void *x, const void *y)
{
    const rkey_t *a = x, *b = y;
    if ((a->p == NULL) != (b->p == NULL))
        return a->p != NULL ? -1 : 1;
    if (a->p != NULL) {
        int d = bytes_cmp(a->p, a->len, b->p, b->len);
        if (d != 0)
            return d;
    }
    return a->rank < b->rank ? -1 : a->rank > b->rank ? 1 : 0;
}

static int range_assign(kc_assign_ctx_t *c)
{
    const kc_assign_spec_t *s = c->spec;
    rkey_t *order = kc_assign__alloc(c, c->nm, sizeof *order);
    uint32_t *cursor = kc_assign__alloc(c, c->nt, sizeof *cursor);
    uint32_t *subs = kc_assign__alloc(c, c->ts_off[c->nt], sizeof *subs);
    if (order == NULL || cursor == NULL || subs == NULL)
        return -ENOMEM;
    for (uint32_t r = 0; r < c->nm; r++) {
        const kc_assign_member_t *m = &s->members[c->m_idx[r]];
        order[r] = (rkey_t){m->instance_id, m->instance_id_len, r};
    }
    if (c->nm > 1)
        qsort(order, c->nm, sizeof *order, rkey_cmp);

    /* Each topic's subscribers, in range order. */
    for (uint32_t k = 0; k < c->nt; k++)
        cursor[k] = c->ts_off[k];
    for (uint32_t i = 0; i < c->nm; i++) {
        uint32_t r = order[i].rank;
        for (uint32_t j = c->sub_off[r]; j < c->sub_off[r + 1]; j++)
            subs[cursor[c->sub_topic[j]]++] = r;
    }

    /* Per topic: the first (count % n) subscribers get one partition more than the others. */
    for (uint32_t k = 0; k < c->nt; k++) {
        uint32_t n = kc_assign__nsub(c, k);
        if (n == 0)
            continue;
        uint32_t quota = c->tcount[k] / n, extra = c->tcount[k] % n;
        uint32_t p = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t take = quota + (i < extra ? 1 : 0);
            int32_t r = (int32_t)subs[c->ts_off[k] + i];
            for (uint32_t e = p + take; p < e; p++)
                c->owner[c->pbase[k] + p] = r;
        }
    }
    return 0;
}

int kc_assign_range(const kc_assign_spec_t *spec, kc_assign_result_t *out)
{
    memset(out, 0, sizeof *out);
    kc_assign_ctx_t c;
    int rc = kc_assign__init(&c, spec);
    if (rc == 0)
        rc = range_assign(&c);
    if (rc == 0)
        rc = kc_assign__finish(&c, out);
    kc_assign__free(&c);
    return rc;
}

/* ---- The table ---------------------------------------------------------------------------- */

static const kc_assignor_t assignors[] = {
    {"uniform", kc_assign_uniform},
    {"range", kc_assign_range},
};

const kc_assignor_t *kc_assignor_find(const char *name, size_t len)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof assignors / sizeof assignors[0]; i++)
        if (strlen(assignors[i].name) == len && memcmp(assignors[i].name, name, len) == 0)
            return &assignors[i];
    return NULL;
}

const kc_assignor_t *kc_assignor_at(size_t i)
{
    return i < sizeof assignors / sizeof assignors[0] ? &assignors[i] : NULL;
}
