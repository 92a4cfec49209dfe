/* assign_uniform.c - the "uniform" assignor: balanced first, then sticky.
 *
 * The model (member and topic ranks, global partition numbers, prev[] = current owners) comes
 * from kc_assign__init, see assign_internal.h. "Load" below is the number of partitions a
 * member is assigned.
 *
 * Homogeneous subscriptions (every member subscribes to the same topics), O(P + M):
 *   1. Quotas: P partitions over M members give q = P / M each and q + 1 to P % M of them.
 *      The extra partitions go first to members that currently hold more than q (by rank),
 *      so as few members as possible must give anything up.
 *   2. Keep: every member keeps its current partitions up to its quota (in topic-rank and
 *      partition order); the rest, and partitions nobody holds, are unassigned.
 *   3. Hand out the unassigned partitions, in topic-rank and partition order, round robin
 *      over the members below their quota (by rank).
 *   A partition moves only when its owner is above quota, and sum(max(0, held - quota)) is
 *   the least any balanced assignment can move: a joining member takes exactly its quota
 *   from the others, a leaving member's partitions are the only ones that move.
 *
 * Heterogeneous subscriptions, where balance is "the smallest spread the subscriptions
 * allow":
 *   1. Keep every current partition whose owner still subscribes to its topic.
 *   2. Fill: topics in order of partitions per subscriber (descending), then subscriber count
 *      (ascending), then rank; each unassigned partition goes to the least loaded subscriber
 *      of its topic (min-heap keyed by load, then rank).
 *   3. Per-topic balancing: for each topic with two or more subscribers, move partitions of
 *      that topic from its most loaded holder to its least loaded subscriber while their loads
 *      differ by 2 or more (two indexed heaps). Passes over all topics repeat until one moves
 *      nothing (at most MAX_TOPIC_PASSES; step 4 finishes the job in any case). A first round
 *      of passes moves only "free" partitions (ones that are not where the current
 *      assignment had them: new, or already moved), a second round any, free ones first.
 *   4. Chains: a member u can pass a partition of topic t to any other subscriber of t. If a
 *      chain u -> ... -> w of such passes exists with load(u) >= load(w) + 2, moving one
 *      partition along each hop lowers u by one, raises w by one and leaves the members in
 *      between unchanged. Step 4 removes every such chain, level by level from the top load
 *      down. At level L it runs rounds: a 0-1 breadth-first search from the members at L
 *      labels members and topics with the cheapest cost of reaching them, the cost being the
 *      number of hops that must take a partition from its current owner (passing on a free
 *      partition costs nothing); then each member at L in turn follows admissible edges
 *      (cost-tight and one hop further, so they form a DAG) depth first to a member at L - 2
 *      or below, and applies that chain at once. Dead ends are remembered for the round, as
 *      in Dinic's blocking flows, so one search serves many chains. Rounds repeat until a
 *      search finds no member to reach. An assignment without such chains is an optimal
 *      "semi-matching" (Harvey, Ladner, Lovasz, Tamir, "Semi-matchings for bipartite graphs
 *      and load balancing", 2006): its loads are the most even the subscriptions allow (the
 *      largest is as small as possible, the smallest as large as possible). Step 3 already
 *      removed the one-hop chains, which are nearly all of them for real subscription
 *      patterns, so step 4 usually only checks. Its work is bounded (CHAIN_WORK_*).
 *   A partition leaves its current owner only along improving moves, and the cheapest ones
 *   are taken first; the number moved is small but not proven minimal.
 *
 * Extending: rack awareness would add a preference between equally loaded subscribers in
 * steps 2 and 3 (homogeneous step 3 likewise); it must not change the loads.
 */
#include "group/assignor.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "group/assign_internal.h"

#define NONE             UINT32_MAX
#define MAX_TOPIC_PASSES 16
#define RESTORE_SCAN     4

/* Step 4 gives up (leaving a valid, nearly balanced assignment) after CHAIN_WORK_MIN +
 * CHAIN_WORK_FACTOR * (members + topics + subscriptions + partitions) units of work (nodes
 * expanded plus edges looked at), so that no input can hold the event loop for long; the
 * unit is work, not time, so the result stays deterministic. Real subscription patterns
 * leave step 4 nothing or little to do. The adversarial "nested" + "shuffle" case of
 * tests/bench/assign_bench.c (1000 members, 10 000 partitions, every current assignment
 * wrong) would need about 570 times the linear term; it stops at this budget (about 150
 * times there, 25 to 40 ms on a busy 2-core machine) with a spread of 4 instead of 0. */
#define CHAIN_WORK_MIN    ((uint64_t)1 << 23)
#define CHAIN_WORK_FACTOR 16

/* ---- Homogeneous -------------------------------------------------------------------------- */

static int homogeneous(kc_assign_ctx_t *c)
{
    uint32_t nm = c->nm;
    const uint32_t *topics = &c->sub_topic[c->sub_off[0]];
    uint32_t ntopics = c->sub_off[1] - c->sub_off[0];
    uint32_t total = 0;
    for (uint32_t j = 0; j < ntopics; j++)
        total += c->tcount[topics[j]];

    uint32_t *held = kc_assign__alloc(c, nm, sizeof *held);
    uint32_t *quota = kc_assign__alloc(c, nm, sizeof *quota);
    uint32_t *kept = kc_assign__alloc(c, nm, sizeof *kept);
    uint32_t *below = kc_assign__alloc(c, nm, sizeof *below);
    uint32_t *unassigned = kc_assign__alloc(c, total, sizeof *unassigned);
    if (held == NULL || quota == NULL || kept == NULL || below == NULL || unassigned == NULL)
        return -ENOMEM;

    for (uint32_t j = 0; j < ntopics; j++) {
        uint32_t k = topics[j];
        for (uint32_t g = c->pbase[k]; g < c->pbase[k + 1]; g++)
            if (c->prev[g] >= 0)
                held[c->prev[g]]++;
    }

    uint32_t q = total / nm, extra = total % nm;
    for (uint32_t r = 0; r < nm; r++)
        quota[r] = q;
    for (uint32_t r = 0; r < nm && extra > 0; r++)
        if (held[r] > q) {
            quota[r]++;
            extra--;
        }
    for (uint32_t r = 0; r < nm && extra > 0; r++)
        if (quota[r] == q) {
            quota[r]++;
            extra--;
        }

    uint32_t nu = 0;
    for (uint32_t j = 0; j < ntopics; j++) {
        uint32_t k = topics[j];
        for (uint32_t g = c->pbase[k]; g < c->pbase[k + 1]; g++) {
            int32_t r = c->prev[g];
            if (r >= 0 && kept[r] < quota[r]) {
                c->owner[g] = r;
                kept[r]++;
            } else {
                unassigned[nu++] = g;
            }
        }
    }

    /* Round robin over the members below quota; each round drops the ones that are full. */
    uint32_t nb = 0, u = 0;
    for (uint32_t r = 0; r < nm; r++)
        if (kept[r] < quota[r])
            below[nb++] = r;
    while (nb > 0 && u < nu) {
        uint32_t still = 0;
        for (uint32_t i = 0; i < nb && u < nu; i++) {
            uint32_t r = below[i];
            c->owner[unassigned[u++]] = (int32_t)r;
            if (++kept[r] < quota[r])
                below[still++] = r;
        }
        nb = still;
    }
    return 0;
}

/* ---- Indexed binary heaps of member ranks ------------------------------------------------- */

/* A min-heap orders by (load, rank) ascending, a max-heap by (load, rank) descending. pos[r]
 * is r's position + 1, 0 when r is not in the heap; it must be all zero for members not in
 * the heap, which heap_clear restores. */
typedef struct heap_s {
    uint32_t *a;
    uint32_t n;
    uint32_t *pos;
    const uint32_t *load;
    bool max;
} heap_t;

static bool before(const heap_t *h, uint32_t x, uint32_t y)
{
    if (h->load[x] != h->load[y])
        return h->max ? h->load[x] > h->load[y] : h->load[x] < h->load[y];
    return h->max ? x > y : x < y;
}

static void heap_set(heap_t *h, uint32_t i, uint32_t r)
{
    h->a[i] = r;
    h->pos[r] = i + 1;
}

static void sift_up(heap_t *h, uint32_t i)
{
    uint32_t r = h->a[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(h, r, h->a[parent]))
            break;
        heap_set(h, i, h->a[parent]);
        i = parent;
    }
    heap_set(h, i, r);
}

static void sift_down(heap_t *h, uint32_t i)
{
    uint32_t r = h->a[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && before(h, h->a[child + 1], h->a[child]))
            child++;
        if (!before(h, h->a[child], r))
            break;
        heap_set(h, i, h->a[child]);
        i = child;
    }
    heap_set(h, i, r);
}

/* Fill the heap with rs[0..n) (Floyd's bottom-up construction). */
static void heap_build(heap_t *h, const uint32_t *rs, uint32_t n)
{
    h->n = n;
    for (uint32_t i = 0; i < n; i++)
        heap_set(h, i, rs[i]);
    for (uint32_t i = n / 2; i-- > 0;)
        sift_down(h, i);
}

/* r's load changed. */
static void heap_fix(heap_t *h, uint32_t r)
{
    sift_up(h, h->pos[r] - 1);
    sift_down(h, h->pos[r] - 1);
}

static void heap_remove(heap_t *h, uint32_t r)
{
    uint32_t i = h->pos[r] - 1;
    uint32_t last = h->a[--h->n];
    h->pos[r] = 0;
    if (i < h->n) {
        heap_set(h, i, last);
        heap_fix(h, last);
    }
}

static void heap_clear(heap_t *h)
{
    for (uint32_t i = 0; i < h->n; i++)
        h->pos[h->a[i]] = 0;
    h->n = 0;
}

/* ---- Heterogeneous ------------------------------------------------------------------------ */

typedef struct het_s {
    kc_assign_ctx_t *c;
    uint32_t *load;   /* member rank -> partitions assigned */
    uint32_t *torder; /* topic ranks with subscribers, in fill/balance order */
    uint32_t ntorder;
    heap_t lo, hi;     /* min-heap of subscribers, max-heap of holders */
    uint32_t *scratch; /* nm: heap input */
    uint32_t *bstart;  /* member rank -> start of its bucket in bparts */
    uint32_t *blen;    /* member rank -> partitions left in its bucket */
    uint32_t *bparts;  /* one topic's partitions grouped by owner */
} het_t;

typedef struct tkey_s {
    uint32_t k, count, nsub;
} tkey_t;

/* Partitions per subscriber descending, then subscribers ascending, then rank. */
static int tkey_cmp(const void *x, const void *y)
{
    const tkey_t *a = x, *b = y;
    uint64_t l = (uint64_t)a->count * b->nsub, r = (uint64_t)b->count * a->nsub;
    if (l != r)
        return l > r ? -1 : 1;
    if (a->nsub != b->nsub)
        return a->nsub < b->nsub ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k ? 1 : 0;
}

static void fill(het_t *h)
{
    kc_assign_ctx_t *c = h->c;
    for (uint32_t i = 0; i < h->ntorder; i++) {
        uint32_t k = h->torder[i];
        uint32_t g = c->pbase[k], end = c->pbase[k + 1];
        while (g < end && c->owner[g] >= 0)
            g++;
        if (g == end)
            continue;
        heap_build(&h->lo, &c->ts_mem[c->ts_off[k]], kc_assign__nsub(c, k));
        for (; g < end; g++) {
            if (c->owner[g] >= 0)
                continue;
            uint32_t r = h->lo.a[0];
            c->owner[g] = (int32_t)r;
            h->load[r]++;
            sift_down(&h->lo, 0);
        }
        heap_clear(&h->lo);
    }
}

/* Whether member r may hand partition g on without it counting as one more move: r does not
 * hold it from the current assignment (it is new to r, or already moved to r). */
static inline bool is_free(const kc_assign_ctx_t *c, uint32_t g, uint32_t r)
{
    return c->prev[g] != (int32_t)r;
}

/* Step 3 for topic k (two or more subscribers): returns the partitions moved. With
 * free_only, only partitions that are free for their holder (is_free) may move, so this
 * moves nothing that the current assignment had in place; otherwise free ones go first. */
static uint32_t balance_topic(het_t *h, uint32_t k, bool free_only)
{
    kc_assign_ctx_t *c = h->c;
    const uint32_t *subs = &c->ts_mem[c->ts_off[k]];
    uint32_t n = kc_assign__nsub(c, k);
    uint32_t g0 = c->pbase[k], g1 = c->pbase[k + 1];

    /* Nothing to do unless some holder is 2 above the least loaded subscriber. */
    uint32_t min = UINT32_MAX, max = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = subs[i];
        if (h->load[r] < min)
            min = h->load[r];
        h->blen[r] = 0;
    }
    for (uint32_t g = g0; g < g1; g++) {
        uint32_t r = (uint32_t)c->owner[g];
        if (free_only && !is_free(c, g, r))
            continue;
        h->blen[r]++;
        if (h->load[r] > max)
            max = h->load[r];
    }
    if (max < min + 2)
        return 0;

    /* Bucket the movable partitions by holder, the ones it holds from the current assignment
     * first: buckets are emptied from the end. */
    uint32_t off = 0, nholders = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = subs[i];
        h->bstart[r] = off;
        off += h->blen[r];
        if (h->blen[r] > 0)
            h->scratch[nholders++] = r;
        h->blen[r] = 0;
    }
    for (int free_pass = free_only ? 1 : 0; free_pass < 2; free_pass++)
        for (uint32_t g = g0; g < g1; g++) {
            uint32_t r = (uint32_t)c->owner[g];
            if (is_free(c, g, r) == (free_pass == 1))
                h->bparts[h->bstart[r] + h->blen[r]++] = g;
        }

    heap_build(&h->hi, h->scratch, nholders);
    heap_build(&h->lo, subs, n);
    uint32_t moved = 0;
    while (h->hi.n > 0) {
        uint32_t u = h->hi.a[0], v = h->lo.a[0];
        if (h->load[u] < h->load[v] + 2)
            break;
        uint32_t g = h->bparts[h->bstart[u] + --h->blen[u]];
        c->owner[g] = (int32_t)v;
        h->load[u]--;
        h->load[v]++;
        moved++;
        heap_fix(&h->lo, u);
        heap_fix(&h->lo, v);
        if (h->blen[u] == 0)
            heap_remove(&h->hi, u);
        else
            heap_fix(&h->hi, u);
        if (h->hi.pos[v] != 0)
            heap_fix(&h->hi, v);
    }
    heap_clear(&h->hi);
    heap_clear(&h->lo);
    return moved;
}

/* Step 4 state. A graph over members and topics (node ids: member r is r, topic k is nm + k):
 * member u -> topic k when u holds a partition of k, cost 0 when u holds one that is free
 * for it (is_free), else 1 (one more partition leaves its current owner); topic k -> every
 * subscriber of k, cost 0. A chain is a path from a member to a member. */
typedef struct chains_s {
    het_t *h;
    uint32_t nm, nodes;
    bool *flex;        /* member can take part in a chain */
    uint32_t *freel;   /* per subscription entry (sub_topic index): list of the free
                          partitions of that topic the member holds (NONE: empty) */
    uint32_t *keptl;   /* per subscription entry: list of the others (held from before) */
    uint32_t *next;    /* global partition -> next in its list */
    uint32_t *deque;   /* circular, 2 * nodes + 1 entries: each node enters at most twice */
    uint32_t *seen;    /* node -> epoch of its dist and parent */
    uint32_t *done;    /* node -> epoch it was expanded in */
    uint32_t *dist;    /* node -> cost from the sources */
    uint32_t *hops;    /* node -> hops on its labelled way: one more than its parent's */
    uint32_t *parent;  /* member -> topic node, topic node -> member; NONE for a source */
    uint32_t *arc;     /* node -> next edge the path search tries (index into its list) */
    uint32_t *arcset;  /* node -> epoch arc was set in */
    uint32_t *state;   /* node -> 2 * epoch while on the path, 2 * epoch + 1 once dead */
    uint32_t *path;    /* the chain being built: member, topic, member, ... */
    uint32_t *sources; /* the members at the level being worked on (some may have left it) */
    uint32_t nsources;
    uint32_t epoch;
    uint64_t work;   /* nodes expanded and edges looked at, over all searches */
    uint64_t budget; /* the search gives up past this much work */
} chains_t;

/* The subscription entry of member r for topic k (r subscribes to k). */
static uint32_t sub_entry(const kc_assign_ctx_t *c, uint32_t r, uint32_t k)
{
    uint32_t lo = c->sub_off[r], hi = c->sub_off[r + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->sub_topic[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Deque operations on the circular buffer. */
typedef struct dq_s {
    uint32_t head, n, cap;
} dq_t;

static void relax(chains_t *s, dq_t *q, uint32_t node, uint32_t d, uint32_t parent, bool front)
{
    if (s->seen[node] == s->epoch && s->dist[node] <= d)
        return;
    s->seen[node] = s->epoch;
    s->dist[node] = d;
    s->hops[node] = parent == NONE ? 0 : s->hops[parent] + 1;
    s->parent[node] = parent;
    if (front) {
        q->head = q->head == 0 ? q->cap - 1 : q->head - 1;
        s->deque[q->head] = node;
    } else {
        uint32_t tail = q->head + q->n;
        s->deque[tail >= q->cap ? tail - q->cap : tail] = node;
    }
    q->n++;
}

/* Label every node with the cost of the cheapest way to it from the members at `level`
 * (0-1 breadth-first search), stopping once the cheapest chain end is known: returns the
 * cost of reaching a member at level - 2 or below, or NONE when none is reachable. */
static uint32_t chain_label(chains_t *s, uint32_t level)
{
    kc_assign_ctx_t *c = s->h->c;
    const uint32_t *load = s->h->load;
    dq_t q = {0, 0, 2 * s->nodes + 1};

    /* Sources: the members still at `level`; the list only shrinks (a chain lowers its
     * source by one and raises its end to at most level - 1). */
    uint32_t still = 0;
    for (uint32_t i = 0; i < s->nsources; i++) {
        uint32_t r = s->sources[i];
        if (load[r] != level)
            continue;
        s->sources[still++] = r;
        relax(s, &q, r, 0, NONE, false);
    }
    s->nsources = still;

    uint32_t best = NONE;
    while (q.n > 0) {
        uint32_t x = s->deque[q.head];
        q.head = q.head + 1 == q.cap ? 0 : q.head + 1;
        q.n--;
        if (s->done[x] == s->epoch)
            continue;
        uint32_t d = s->dist[x];
        if (best != NONE && d > best)
            break;
        s->done[x] = s->epoch;
        s->work++;
        if (x < s->nm) {
            if (load[x] + 2 <= level) {
                best = d; /* an end is not a way through */
                continue;
            }
            s->work += c->sub_off[x + 1] - c->sub_off[x];
            for (uint32_t j = c->sub_off[x]; j < c->sub_off[x + 1]; j++) {
                uint32_t k = c->sub_topic[j];
                if ((s->freel[j] == NONE && s->keptl[j] == NONE) || kc_assign__nsub(c, k) < 2)
                    continue;
                bool free = s->freel[j] != NONE;
                relax(s, &q, s->nm + k, d + (free ? 0 : 1), x, free);
            }
        } else {
            uint32_t k = x - s->nm;
            s->work += kc_assign__nsub(c, k);
            for (uint32_t i = c->ts_off[k]; i < c->ts_off[k + 1]; i++)
                relax(s, &q, c->ts_mem[i], d, x, true);
        }
    }
    return best;
}

/* Put partition g on member r's list for entry j. */
static void list_push(chains_t *s, uint32_t j, uint32_t g, uint32_t r)
{
    uint32_t *head = is_free(s->h->c, g, r) ? &s->freel[j] : &s->keptl[j];
    s->next[g] = *head;
    *head = g;
}

/* Pass one partition of topic k from u to v: the one that costs least. One that goes back to
 * v, its owner in the current assignment, is looked for among the first RESTORE_SCAN free
 * ones; else a free one (no new move), else one u held from before. u holds at least one. */
static void chain_hop(chains_t *s, uint32_t u, uint32_t k, uint32_t v)
{
    kc_assign_ctx_t *c = s->h->c;
    uint32_t ju = sub_entry(c, u, k), jv = sub_entry(c, v, k);
    uint32_t *link = s->freel[ju] != NONE ? &s->freel[ju] : &s->keptl[ju];
    uint32_t *scan = &s->freel[ju];
    for (int i = 0; i < RESTORE_SCAN && *scan != NONE; i++, scan = &s->next[*scan])
        if (c->prev[*scan] == (int32_t)v) {
            link = scan;
            break;
        }
    uint32_t g = *link;
    *link = s->next[g];
    c->owner[g] = (int32_t)v;
    list_push(s, jv, g, v);
    s->work += 2;
}

/* Apply the chain path[0..n): member, topic, member, ..., member. Hops are applied from the
 * end, so each member passes a partition on before it receives one. */
static void chain_apply(chains_t *s, const uint32_t *path, uint32_t n)
{
    for (uint32_t i = n - 1; i >= 2; i -= 2)
        chain_hop(s, path[i - 2], path[i - 1] - s->nm, path[i]);
    s->h->load[path[n - 1]]++;
    s->h->load[path[0]]--;
}

/* The next edge out of node x, from its arc on, that is admissible: it lies on a cheapest way
 * as labelled by chain_label (cost tight, one hop further, so admissible edges form a DAG and
 * a node that leads nowhere stays so), towards chain ends of cost `best`, and its head is
 * neither on the path nor dead. NONE when there is none. The arc stays on the edge returned.
 * Edges are checked against the holdings as they are now, after the chains already applied
 * in the round. */
static uint32_t next_edge(chains_t *s, uint32_t x, uint32_t best)
{
    kc_assign_ctx_t *c = s->h->c;
    uint32_t on = s->epoch * 2, dead = s->epoch * 2 + 1;
    if (s->arcset[x] != s->epoch) {
        s->arcset[x] = s->epoch;
        s->arc[x] = x < s->nm ? c->sub_off[x] : c->ts_off[x - s->nm];
    }
    uint32_t d = s->dist[x];
    if (x < s->nm) {
        for (; s->arc[x] < c->sub_off[x + 1]; s->arc[x]++) {
            uint32_t j = s->arc[x], y = s->nm + c->sub_topic[j];
            s->work++;
            if ((s->freel[j] == NONE && s->keptl[j] == NONE) || s->seen[y] != s->epoch ||
                s->state[y] == on || s->state[y] == dead || s->dist[y] > best)
                continue;
            if (s->dist[y] == d + (s->freel[j] != NONE ? 0 : 1) && s->hops[y] == s->hops[x] + 1)
                return y;
        }
    } else {
        uint32_t k = x - s->nm;
        for (; s->arc[x] < c->ts_off[k + 1]; s->arc[x]++) {
            uint32_t y = c->ts_mem[s->arc[x]];
            s->work++;
            if (s->seen[y] == s->epoch && s->state[y] != on && s->state[y] != dead &&
                s->dist[y] == d && s->hops[y] == s->hops[x] + 1)
                return y;
        }
    }
    return NONE;
}

/* From source src, a depth-first search along cheapest edges for a member at level - 2 or
 * below; applies the chain it finds. Returns whether there was one. Nodes found to lead
 * nowhere are marked dead for the rest of the round (as in Dinic's blocking flows). */
static bool chain_from(chains_t *s, uint32_t src, uint32_t level, uint32_t best)
{
    const uint32_t *load = s->h->load;
    uint32_t n = 0;
    s->path[n++] = src;
    s->state[src] = s->epoch * 2;
    while (n > 0) {
        uint32_t x = s->path[n - 1];
        if (x < s->nm && n > 1 && load[x] + 2 <= level) {
            chain_apply(s, s->path, n);
            for (uint32_t i = 0; i < n; i++)
                s->state[s->path[i]] = 0;
            return true;
        }
        uint32_t y = n < s->nodes ? next_edge(s, x, best) : NONE;
        if (y != NONE) {
            s->path[n++] = y;
            s->state[y] = s->epoch * 2;
        } else {
            s->state[x] = s->epoch * 2 + 1;
            n--;
            if (n > 0)
                s->arc[s->path[n - 1]]++;
        }
    }
    return false;
}

/* One round at `level`: label the graph from the members at `level` (chain_label), then let
 * each of them, in rank order, look for a cheapest chain to a member at level - 2 or below
 * and apply it at once (chain_from). Chains may share members and topics: every hop is
 * checked against the holdings of the moment. Returns the chains applied; 0 when there are
 * none (or the work budget is spent). */
static uint32_t chain_round(chains_t *s, uint32_t level)
{
    if (s->work > s->budget)
        return 0;
    if (++s->epoch >= UINT32_MAX / 2) {
        memset(s->seen, 0, sizeof *s->seen * s->nodes);
        memset(s->done, 0, sizeof *s->done * s->nodes);
        memset(s->arcset, 0, sizeof *s->arcset * s->nodes);
        memset(s->state, 0, sizeof *s->state * s->nodes);
        s->epoch = 1;
    }
    uint32_t best = chain_label(s, level);
    if (best == NONE)
        return 0;
    uint32_t applied = 0;
    for (uint32_t i = 0; i < s->nsources; i++) {
        uint32_t r = s->sources[i];
        if (s->h->load[r] == level && chain_from(s, r, level, best))
            applied++;
    }
    return applied;
}

static int remove_chains(het_t *h)
{
    kc_assign_ctx_t *c = h->c;
    uint32_t nm = c->nm;
    chains_t s = {.h = h, .nm = nm, .nodes = nm + c->nt};
    s.flex = kc_assign__alloc(c, nm, sizeof *s.flex);
    if (s.flex == NULL)
        return -ENOMEM;

    uint32_t top = 0, bottom = UINT32_MAX;
    for (uint32_t r = 0; r < nm; r++) {
        for (uint32_t j = c->sub_off[r]; j < c->sub_off[r + 1]; j++) {
            uint32_t k = c->sub_topic[j];
            if (kc_assign__nsub(c, k) >= 2 && c->tcount[k] > 0)
                s.flex[r] = true;
        }
        if (s.flex[r]) {
            top = h->load[r] > top ? h->load[r] : top;
            bottom = h->load[r] < bottom ? h->load[r] : bottom;
        }
    }
    if (bottom == UINT32_MAX || top < bottom + 2)
        return 0; /* already optimal */

    s.freel = kc_assign__alloc(c, c->sub_off[nm], sizeof *s.freel);
    s.keptl = kc_assign__alloc(c, c->sub_off[nm], sizeof *s.keptl);
    s.next = kc_assign__alloc(c, c->np, sizeof *s.next);
    s.deque = kc_assign__alloc(c, 2 * (size_t)s.nodes + 1, sizeof *s.deque);
    s.seen = kc_assign__alloc(c, s.nodes, sizeof *s.seen);
    s.done = kc_assign__alloc(c, s.nodes, sizeof *s.done);
    s.dist = kc_assign__alloc(c, s.nodes, sizeof *s.dist);
    s.parent = kc_assign__alloc(c, s.nodes, sizeof *s.parent);
    s.arc = kc_assign__alloc(c, s.nodes, sizeof *s.arc);
    s.arcset = kc_assign__alloc(c, s.nodes, sizeof *s.arcset);
    s.state = kc_assign__alloc(c, s.nodes, sizeof *s.state);
    s.path = kc_assign__alloc(c, s.nodes, sizeof *s.path);
    s.hops = kc_assign__alloc(c, s.nodes, sizeof *s.hops);
    s.sources = kc_assign__alloc(c, nm, sizeof *s.sources);
    if (s.freel == NULL || s.keptl == NULL || s.next == NULL || s.deque == NULL || s.seen == NULL ||
        s.done == NULL || s.dist == NULL || s.parent == NULL || s.arc == NULL || s.arcset == NULL ||
        s.state == NULL || s.path == NULL || s.hops == NULL || s.sources == NULL)
        return -ENOMEM;
    for (uint32_t j = 0; j < c->sub_off[nm]; j++)
        s.freel[j] = s.keptl[j] = NONE;
    for (uint32_t k = 0; k < c->nt; k++)
        for (uint32_t g = c->pbase[k + 1]; g-- > c->pbase[k];)
            if (c->owner[g] >= 0) {
                uint32_t r = (uint32_t)c->owner[g];
                list_push(&s, sub_entry(c, r, k), g, r);
            }

    /* A bound on the work, far above what real groups need (see CHAIN_WORK_FACTOR). */
    s.budget = CHAIN_WORK_MIN + CHAIN_WORK_FACTOR * ((uint64_t)s.nodes + c->sub_off[nm] + c->np);

    /* Levels from the top down. A level, once done, stays done: chains found later start
     * lower and end lower, so they never touch what its members can reach. */
    uint32_t level = top;
    while (s.work <= s.budget) {
        s.nsources = 0;
        for (uint32_t r = 0; r < nm; r++)
            if (s.flex[r] && h->load[r] == level)
                s.sources[s.nsources++] = r;
        while (chain_round(&s, level) > 0)
            ;
        uint32_t next = 0, low = UINT32_MAX;
        bool any = false;
        for (uint32_t r = 0; r < nm; r++) {
            if (!s.flex[r])
                continue;
            low = h->load[r] < low ? h->load[r] : low;
            if (h->load[r] < level && h->load[r] >= next) {
                next = h->load[r];
                any = true;
            }
        }
        if (!any || next < low + 2)
            break;
        level = next;
    }
    return 0;
}

static int heterogeneous(kc_assign_ctx_t *c)
{
    uint32_t nm = c->nm;
    het_t h = {.c = c};
    h.load = kc_assign__alloc(c, nm, sizeof *h.load);
    h.torder = kc_assign__alloc(c, c->nt, sizeof *h.torder);
    tkey_t *keys = kc_assign__alloc(c, c->nt, sizeof *keys);
    h.lo.a = kc_assign__alloc(c, nm, sizeof(uint32_t));
    h.lo.pos = kc_assign__alloc(c, nm, sizeof(uint32_t));
    h.hi.a = kc_assign__alloc(c, nm, sizeof(uint32_t));
    h.hi.pos = kc_assign__alloc(c, nm, sizeof(uint32_t));
    h.scratch = kc_assign__alloc(c, nm, sizeof *h.scratch);
    h.bstart = kc_assign__alloc(c, nm, sizeof *h.bstart);
    h.blen = kc_assign__alloc(c, nm, sizeof *h.blen);
    uint32_t maxcount = 0;
    for (uint32_t k = 0; k < c->nt; k++)
        maxcount = c->tcount[k] > maxcount ? c->tcount[k] : maxcount;
    h.bparts = kc_assign__alloc(c, maxcount, sizeof *h.bparts);
    if (h.load == NULL || h.torder == NULL || keys == NULL || h.lo.a == NULL || h.lo.pos == NULL ||
        h.hi.a == NULL || h.hi.pos == NULL || h.scratch == NULL || h.bstart == NULL ||
        h.blen == NULL || h.bparts == NULL)
        return -ENOMEM;
    h.lo.load = h.hi.load = h.load;
    h.hi.max = true;

    /* 1. Keep what is still subscribed (kc_assign__init only kept those claims). */
    for (uint32_t g = 0; g < c->np; g++)
        if (c->prev[g] >= 0) {
            c->owner[g] = c->prev[g];
            h.load[c->prev[g]]++;
        }

    uint32_t nk = 0;
    for (uint32_t k = 0; k < c->nt; k++)
        if (kc_assign__nsub(c, k) > 0 && c->tcount[k] > 0)
            keys[nk++] = (tkey_t){k, c->tcount[k], kc_assign__nsub(c, k)};
    if (nk > 1)
        qsort(keys, nk, sizeof *keys, tkey_cmp);
    for (uint32_t i = 0; i < nk; i++)
        h.torder[i] = keys[i].k;
    h.ntorder = nk;

    /* 2. Fill. */
    fill(&h);

    /* 3. Per-topic balancing: first with free partitions only, then with any. */
    for (int round = 0; round < 2; round++)
        for (int pass = 0; pass < MAX_TOPIC_PASSES; pass++) {
            uint32_t moved = 0;
            for (uint32_t i = 0; i < h.ntorder; i++)
                if (kc_assign__nsub(c, h.torder[i]) >= 2)
                    moved += balance_topic(&h, h.torder[i], round == 0);
            if (moved == 0)
                break;
        }

    /* 4. Chains. */
    return remove_chains(&h);
}

/* ---- Entry point -------------------------------------------------------------------------- */

static bool is_homogeneous(const kc_assign_ctx_t *c)
{
    uint32_t n0 = c->sub_off[1] - c->sub_off[0];
    for (uint32_t r = 1; r < c->nm; r++) {
        uint32_t n = c->sub_off[r + 1] - c->sub_off[r];
        if (n != n0 || memcmp(&c->sub_topic[c->sub_off[r]], &c->sub_topic[c->sub_off[0]],
                              sizeof(uint32_t) * n) != 0)
            return false;
    }
    return true;
}

int kc_assign_uniform(const kc_assign_spec_t *spec, kc_assign_result_t *out)
{
    memset(out, 0, sizeof *out);
    kc_assign_ctx_t c;
    int rc = kc_assign__init(&c, spec);
    if (rc == 0 && c.nm > 0)
        rc = is_homogeneous(&c) ? homogeneous(&c) : heterogeneous(&c);
    if (rc == 0)
        rc = kc_assign__finish(&c, out);
    kc_assign__free(&c);
    return rc;
}
