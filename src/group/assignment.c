/* assignment.c - partition sets of consumer groups: (topic, partition) lists, an assignment
 * (topic -> sorted partitions, one allocation), and who holds which partition (assignment.h). */
#include "group/assignment.h"

#include <stdlib.h>
#include <string.h>

/* ---- Assignments -------------------------------------------------------------------------- */

void kc_asg_tpv_add(tpv_t *l, const kc_uuid_t *topic, int32_t part)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        tp_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].topic = *topic;
    l->v[l->n].part = part;
    l->n++;
}

void kc_asg_tpv_free(tpv_t *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int kc_asg_uuid_cmp(const kc_uuid_t *a, const kc_uuid_t *b)
{
    return memcmp(a->b, b->b, 16);
}

int kc_asg_uuid_qcmp(const void *x, const void *y)
{
    return kc_asg_uuid_cmp(x, y);
}

int kc_asg_tp_cmp(const void *x, const void *y)
{
    const tp_t *a = x, *b = y;
    int c = kc_asg_uuid_cmp(&a->topic, &b->topic);
    if (c)
        return c;
    return (a->part > b->part) - (a->part < b->part);
}

/* Sort and de-duplicate the pairs of `l` and build an assignment from them: NULL when empty
 * (or, with *oom set, out of memory). */
asg_t *kc_asg_build(tpv_t *l, bool *oom)
{
    if (l->oom) {
        *oom = true;
        return NULL;
    }
    if (l->n == 0)
        return NULL;
    qsort(l->v, l->n, sizeof(tp_t), kc_asg_tp_cmp);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++)
        if (w == 0 || kc_asg_tp_cmp(&l->v[w - 1], &l->v[i]) != 0)
            l->v[w++] = l->v[i];
    l->n = w;
    int32_t nt = 0;
    for (size_t i = 0; i < w; i++)
        if (i == 0 || kc_asg_uuid_cmp(&l->v[i - 1].topic, &l->v[i].topic) != 0)
            nt++;
    asg_t *a = malloc(sizeof(asg_t) + (size_t)nt * sizeof(tpl_t) + w * sizeof(int32_t));
    if (!a) {
        *oom = true;
        return NULL;
    }
    int32_t *parts = (int32_t *)&a->t[nt];
    a->n = 0;
    a->total = (int32_t)w;
    for (size_t i = 0; i < w; i++) {
        if (i == 0 || kc_asg_uuid_cmp(&l->v[i - 1].topic, &l->v[i].topic) != 0) {
            a->t[a->n].topic = l->v[i].topic;
            a->t[a->n].n = 0;
            a->t[a->n].p = &parts[i];
            a->n++;
        }
        parts[i] = l->v[i].part;
        a->t[a->n - 1].n++;
    }
    return a;
}

void kc_asg_pairs(const asg_t *a, tpv_t *l)
{
    for (int32_t i = 0; a && i < a->n; i++)
        for (int32_t j = 0; j < a->t[i].n; j++)
            kc_asg_tpv_add(l, &a->t[i].topic, a->t[i].p[j]);
}

asg_t *kc_asg_dup(const asg_t *a, bool *oom)
{
    tpv_t l = {0};
    kc_asg_pairs(a, &l);
    asg_t *r = kc_asg_build(&l, oom);
    kc_asg_tpv_free(&l);
    return r;
}

static int32_t asg_total(const asg_t *a)
{
    return a ? a->total : 0;
}

bool kc_asg_eq(const asg_t *a, const asg_t *b)
{
    if (asg_total(a) != asg_total(b))
        return false;
    if (asg_total(a) == 0)
        return true;
    if (a->n != b->n)
        return false;
    for (int32_t i = 0; i < a->n; i++) {
        if (kc_asg_uuid_cmp(&a->t[i].topic, &b->t[i].topic) != 0 || a->t[i].n != b->t[i].n ||
            memcmp(a->t[i].p, b->t[i].p, (size_t)a->t[i].n * sizeof(int32_t)) != 0)
            return false;
    }
    return true;
}

const tpl_t *kc_asg_topic(const asg_t *a, const kc_uuid_t *topic)
{
    int32_t lo = 0, hi = a ? a->n : 0;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = kc_asg_uuid_cmp(&a->t[mid].topic, topic);
        if (c == 0)
            return &a->t[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool kc_asg_has(const asg_t *a, const kc_uuid_t *topic, int32_t part)
{
    const tpl_t *t = kc_asg_topic(a, topic);
    if (!t)
        return false;
    int32_t lo = 0, hi = t->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->p[mid] == part)
            return true;
        if (t->p[mid] < part)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Sorted pairs, searched by bsearch (the partitions some members hold). */
bool kc_asg_pairs_has(const tpv_t *l, const kc_uuid_t *topic, int32_t part)
{
    tp_t key = {*topic, part};
    return l->n > 0 && bsearch(&key, l->v, l->n, sizeof(tp_t), kc_asg_tp_cmp) != NULL;
}

/* ---- Who holds which partition ------------------------------------------------------------ */

static size_t tp_hash(const kc_uuid_t *topic, int32_t part)
{
    uint64_t a, b;
    memcpy(&a, topic->b, 8);
    memcpy(&b, topic->b + 8, 8);
    uint64_t x = a ^ (b * 0x9e3779b97f4a7c15u) ^ ((uint64_t)(uint32_t)part << 17);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    x ^= x >> 31;
    return (size_t)x;
}

static size_t holders_find(const holders_t *h, const kc_uuid_t *topic, int32_t part)
{
    size_t mask = h->cap - 1;
    for (size_t i = tp_hash(topic, part) & mask;; i = (i + 1) & mask) {
        const hslot_t *s = &h->v[i];
        if (s->count == 0 || (s->part == part && kc_asg_uuid_cmp(&s->topic, topic) == 0))
            return i;
    }
}

int32_t kc_asg_holders_count(const holders_t *h, const kc_uuid_t *topic, int32_t part)
{
    return h->cap ? h->v[holders_find(h, topic, part)].count : 0;
}

static int holders_grow(holders_t *h)
{
    size_t cap = h->cap ? h->cap * 2 : 64;
    hslot_t *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    holders_t nh = {v, cap, 0, true};
    for (size_t i = 0; i < h->cap; i++)
        if (h->v[i].count > 0) {
            nh.v[holders_find(&nh, &h->v[i].topic, h->v[i].part)] = h->v[i];
            nh.n++;
        }
    free(h->v);
    *h = nh;
    return 0;
}

/* Add `delta` (+1 or -1) holders of a partition. 0, or -1 when out of memory. */
static int holders_add(holders_t *h, const kc_uuid_t *topic, int32_t part, int delta)
{
    if (delta > 0 && (h->n + 1) * 4 > h->cap * 3 && holders_grow(h) != 0)
        return -1;
    if (h->cap == 0)
        return 0;
    size_t mask = h->cap - 1, i = holders_find(h, topic, part);
    hslot_t *s = &h->v[i];
    if (s->count == 0) {
        if (delta < 0)
            return 0; /* not held: nothing to take away */
        s->topic = *topic;
        s->part = part;
        s->count = delta;
        h->n++;
        return 0;
    }
    s->count += delta;
    if (s->count > 0)
        return 0;
    /* Emptied: shift back the entries of the run after it that may move. */
    s->count = 0;
    h->n--;
    for (size_t j = (i + 1) & mask; h->v[j].count != 0; j = (j + 1) & mask) {
        size_t k = tp_hash(&h->v[j].topic, h->v[j].part) & mask;
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        h->v[i] = h->v[j];
        h->v[j].count = 0;
        i = j;
    }
    return 0;
}

void kc_asg_holders_drop(holders_t *h)
{
    free(h->v);
    memset(h, 0, sizeof(*h));
}

/* Count (delta +1) or uncount (-1) the partitions of `a`; drops the map when memory runs out. */
void kc_asg_holders_apply(holders_t *h, const asg_t *a, int delta)
{
    if (!h->valid)
        return;
    for (int32_t i = 0; a && i < a->n; i++)
        for (int32_t j = 0; j < a->t[i].n; j++)
            if (holders_add(h, &a->t[i].topic, a->t[i].p[j], delta) != 0) {
                kc_asg_holders_drop(h);
                return;
            }
}
