/* test_assignor.c - the KIP-848 server-side assignors in src/group/assignor.h: "uniform" and
 * "range".
 *
 * A fixture (grp_t) holds a group's members (id, optional instance id, subscriptions, current
 * assignment) and topic table in heap memory, so that members can join and leave between
 * assignments; adopt() copies a result back in as every member's current assignment. The
 * checks are written independently of the implementation: validity (each partition of a
 * subscribed topic exactly once, to a subscriber), the homogeneous balance bound, the least
 * number of moves a balanced homogeneous assignment allows (from the counts alone), and, for
 * heterogeneous groups, the absence of any improving chain (a path of subscribers along which
 * a partition could be passed to make a member 2 or more partitions lighter than the chain's
 * start heavier), checked by a brute-force search.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/assignor.h"

/* ---- Fixture ------------------------------------------------------------------------------ */

#define MAXM 256
#define MAXT 48

typedef struct mem_s {
    char id[32];
    char inst[32]; /* "" = dynamic member */
    uint32_t sub[MAXT];
    uint32_t nsub;
    kc_assign_tparts_t tp[MAXT];
    uint32_t ntp;
    int32_t *parts; /* storage for tp[*].partitions */
} mem_t;

typedef struct grp_s {
    mem_t *mem[MAXM];
    uint32_t nm;
    char tname[MAXT][32];
    kc_assign_topic_t t[MAXT];
    uint32_t nt;
    kc_assign_member_t m[MAXM]; /* rebuilt by spec() */
    kc_assign_spec_t s;
} grp_t;

static grp_t *grp_new(void)
{
    grp_t *g = calloc(1, sizeof *g);
    assert_non_null(g);
    return g;
}

static void mem_free(mem_t *m)
{
    free(m->parts);
    free(m);
}

static void grp_free(grp_t *g)
{
    for (uint32_t i = 0; i < g->nm; i++)
        mem_free(g->mem[i]);
    free(g);
}

static uint32_t add_topic(grp_t *g, const char *name, int32_t partitions)
{
    assert_true(g->nt < MAXT);
    uint32_t t = g->nt++;
    snprintf(g->tname[t], sizeof g->tname[t], "%s", name);
    g->t[t] = (kc_assign_topic_t){g->tname[t], strlen(g->tname[t]), partitions};
    return t;
}

/* A member subscribed to the topics in `subs` (n of them). */
static uint32_t add_member(grp_t *g, const char *id, const uint32_t *subs, uint32_t n)
{
    assert_true(g->nm < MAXM);
    mem_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    snprintf(m->id, sizeof m->id, "%s", id);
    assert_true(n <= MAXT);
    if (n > 0)
        memcpy(m->sub, subs, n * sizeof *subs);
    m->nsub = n;
    g->mem[g->nm] = m;
    return g->nm++;
}

/* A member subscribed to every topic of the table. */
static uint32_t add_member_all(grp_t *g, const char *id)
{
    uint32_t subs[MAXT];
    for (uint32_t t = 0; t < g->nt; t++)
        subs[t] = t;
    return add_member(g, id, subs, g->nt);
}

static uint32_t find_member(const grp_t *g, const char *id)
{
    for (uint32_t i = 0; i < g->nm; i++)
        if (strcmp(g->mem[i]->id, id) == 0)
            return i;
    fail_msg("no member %s", id);
    return 0;
}

static void remove_member(grp_t *g, const char *id)
{
    uint32_t i = find_member(g, id);
    mem_free(g->mem[i]);
    memmove(&g->mem[i], &g->mem[i + 1], (g->nm - i - 1) * sizeof g->mem[0]);
    g->nm--;
}

static const kc_assign_spec_t *spec(grp_t *g)
{
    for (uint32_t i = 0; i < g->nm; i++) {
        mem_t *m = g->mem[i];
        g->m[i] = (kc_assign_member_t){
            .id = m->id,
            .id_len = strlen(m->id),
            .instance_id = m->inst[0] ? m->inst : NULL,
            .instance_id_len = strlen(m->inst),
            .topics = m->sub,
            .n_topics = m->nsub,
            .current = {m->tp, m->ntp},
        };
    }
    g->s = (kc_assign_spec_t){g->m, g->nm, g->t, g->nt, 0};
    return &g->s;
}

/* Set one member's current assignment from a flat list of (topic, partition) pairs. */
static void set_current(mem_t *m, const uint32_t *topics, const int32_t *parts, uint32_t n)
{
    free(m->parts);
    m->parts = calloc(n > 0 ? n : 1, sizeof *m->parts);
    assert_non_null(m->parts);
    m->ntp = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m->ntp == 0 || m->tp[m->ntp - 1].topic != topics[i]) {
            assert_true(m->ntp < MAXT);
            m->tp[m->ntp++] = (kc_assign_tparts_t){topics[i], 0, &m->parts[i]};
        }
        m->parts[i] = parts[i];
        m->tp[m->ntp - 1].n_partitions++;
    }
}

/* Make `res` (computed on the group as it is now) every member's current assignment. */
static void adopt(grp_t *g, const kc_assign_result_t *res)
{
    assert_int_equal(res->n_members, g->nm);
    for (uint32_t i = 0; i < g->nm; i++) {
        uint32_t topics[4096], n = 0;
        int32_t parts[4096];
        const kc_assign_owned_t *o = &res->members[i];
        for (uint32_t j = 0; j < o->n_topics; j++)
            for (uint32_t k = 0; k < o->topics[j].n_partitions; k++) {
                assert_true(n < 4096);
                topics[n] = o->topics[j].topic;
                parts[n++] = o->topics[j].partitions[k];
            }
        set_current(g->mem[i], topics, parts, n);
    }
}

static uint32_t total_partitions(const grp_t *g)
{
    uint32_t n = 0;
    for (uint32_t t = 0; t < g->nt; t++)
        n += (uint32_t)g->t[t].partitions;
    return n;
}

static uint32_t pbase(const grp_t *g, uint32_t topic)
{
    uint32_t n = 0;
    for (uint32_t t = 0; t < topic; t++)
        n += (uint32_t)g->t[t].partitions;
    return n;
}

static bool subscribes(const mem_t *m, uint32_t t)
{
    for (uint32_t j = 0; j < m->nsub; j++)
        if (m->sub[j] == t)
            return true;
    return false;
}

static uint32_t count_of(const kc_assign_result_t *res, uint32_t i)
{
    uint32_t n = 0;
    for (uint32_t j = 0; j < res->members[i].n_topics; j++)
        n += res->members[i].topics[j].n_partitions;
    return n;
}

/* owner[global partition] = member index or -1; caller frees. Asserts validity: sorted
 * output, every partition at most once, only to a subscriber, every partition of a
 * subscribed topic assigned, nothing of a topic nobody subscribes to. */
static int32_t *check_valid(const grp_t *g, const kc_assign_result_t *res)
{
    uint32_t np = total_partitions(g);
    int32_t *owner = malloc((np > 0 ? np : 1) * sizeof *owner);
    assert_non_null(owner);
    for (uint32_t i = 0; i < np; i++)
        owner[i] = -1;
    assert_int_equal(res->n_members, g->nm);
    uint32_t assigned = 0;
    for (uint32_t i = 0; i < g->nm; i++) {
        const kc_assign_owned_t *o = &res->members[i];
        for (uint32_t j = 0; j < o->n_topics; j++) {
            const kc_assign_tparts_t *tp = &o->topics[j];
            assert_true(tp->topic < g->nt);
            if (j > 0)
                assert_true(o->topics[j - 1].topic < tp->topic);
            assert_true(tp->n_partitions > 0);
            assert_true(subscribes(g->mem[i], tp->topic));
            for (uint32_t k = 0; k < tp->n_partitions; k++) {
                int32_t p = tp->partitions[k];
                assert_true(p >= 0 && p < g->t[tp->topic].partitions);
                if (k > 0)
                    assert_true(tp->partitions[k - 1] < p);
                uint32_t gp = pbase(g, tp->topic) + (uint32_t)p;
                assert_int_equal(owner[gp], -1);
                owner[gp] = (int32_t)i;
                assigned++;
            }
        }
    }
    for (uint32_t t = 0; t < g->nt; t++) {
        bool any = false;
        for (uint32_t i = 0; i < g->nm; i++)
            any = any || subscribes(g->mem[i], t);
        for (int32_t p = 0; p < g->t[t].partitions; p++)
            assert_int_equal(owner[pbase(g, t) + (uint32_t)p] >= 0, any);
    }
    assert_int_equal(res->n_assigned, assigned);
    return owner;
}

/* Largest minus smallest partition count over members (all members). */
static uint32_t spread(const kc_assign_result_t *res)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < res->n_members; i++) {
        uint32_t n = count_of(res, i);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    return res->n_members > 0 ? hi - lo : 0;
}

/* True when some member u could pass partitions along a chain of subscribers to a member w
 * with count(u) >= count(w) + 2 (brute force: a search from every member). */
static bool has_improving_chain(const grp_t *g, const int32_t *owner)
{
    uint32_t cnt[MAXM] = {0};
    for (uint32_t t = 0; t < g->nt; t++)
        for (int32_t p = 0; p < g->t[t].partitions; p++)
            if (owner[pbase(g, t) + (uint32_t)p] >= 0)
                cnt[owner[pbase(g, t) + (uint32_t)p]]++;
    for (uint32_t u = 0; u < g->nm; u++) {
        bool seen[MAXM] = {false};
        uint32_t queue[MAXM], head = 0, tail = 0;
        seen[u] = true;
        queue[tail++] = u;
        while (head < tail) {
            uint32_t x = queue[head++];
            for (uint32_t t = 0; t < g->nt; t++) {
                bool holds = false;
                for (int32_t p = 0; p < g->t[t].partitions; p++)
                    holds = holds || owner[pbase(g, t) + (uint32_t)p] == (int32_t)x;
                if (!holds)
                    continue;
                for (uint32_t y = 0; y < g->nm; y++) {
                    if (seen[y] || !subscribes(g->mem[y], t))
                        continue;
                    if (cnt[y] + 2 <= cnt[u])
                        return true;
                    seen[y] = true;
                    queue[tail++] = y;
                }
            }
        }
    }
    return false;
}

/* Partitions whose owner changed between two owner maps of the same topic table, where the
 * members are matched by id (before: group gb, after: group ga). Partitions without an owner
 * before are not counted. */
static uint32_t moves_between(const grp_t *gb, const int32_t *before, const grp_t *ga,
                              const int32_t *after)
{
    uint32_t n = 0, np = total_partitions(ga);
    for (uint32_t i = 0; i < np; i++) {
        if (before[i] < 0)
            continue;
        if (after[i] < 0 || strcmp(gb->mem[before[i]]->id, ga->mem[after[i]]->id) != 0)
            n++;
    }
    return n;
}

/* A text form of a result that does not depend on member or topic order: for each topic in
 * name order, each partition's owner id. */
static char *fingerprint(const grp_t *g, const kc_assign_result_t *res)
{
    int32_t *owner = check_valid(g, res);
    uint32_t order[MAXT];
    for (uint32_t t = 0; t < g->nt; t++)
        order[t] = t;
    for (uint32_t a = 0; a < g->nt; a++)
        for (uint32_t b = a + 1; b < g->nt; b++)
            if (strcmp(g->tname[order[b]], g->tname[order[a]]) < 0) {
                uint32_t x = order[a];
                order[a] = order[b];
                order[b] = x;
            }
    size_t cap = 64 + (size_t)total_partitions(g) * 64, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    s[0] = 0;
    for (uint32_t a = 0; a < g->nt; a++) {
        uint32_t t = order[a];
        for (int32_t p = 0; p < g->t[t].partitions; p++) {
            int32_t o = owner[pbase(g, t) + (uint32_t)p];
            len += (size_t)snprintf(s + len, cap - len, "%s:%d=%s;", g->tname[t], p,
                                    o >= 0 ? g->mem[o]->id : "-");
        }
    }
    free(owner);
    return s;
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint32_t rnd(uint64_t *x, uint32_t n)
{
    return (uint32_t)(rng_next(x) % n);
}

/* ---- Lookup, empty groups, invalid specs -------------------------------------------------- */

static void test_lookup(void **state)
{
    (void)state;
    const kc_assignor_t *u = kc_assignor_find("uniform", 7);
    const kc_assignor_t *r = kc_assignor_find("range", 5);
    assert_non_null(u);
    assert_non_null(r);
    assert_string_equal(u->name, "uniform");
    assert_string_equal(r->name, "range");
    assert_ptr_equal(u->assign, kc_assign_uniform);
    assert_ptr_equal(r->assign, kc_assign_range);
    assert_null(kc_assignor_find("Uniform", 7));
    assert_null(kc_assignor_find("rangex", 6));
    assert_null(kc_assignor_find("uniformX", 7 + 1));
    assert_null(kc_assignor_find("unif", 4));
    assert_null(kc_assignor_find("", 0));
    assert_null(kc_assignor_find(NULL, 0));
    /* Not NUL-terminated: a view into a request. */
    const char wire[] = {'r', 'a', 'n', 'g', 'e', 'X'};
    assert_ptr_equal(kc_assignor_find(wire, 5), r);
    assert_ptr_equal(kc_assignor_at(0), u);
    assert_ptr_equal(kc_assignor_at(1), r);
    assert_null(kc_assignor_at(2));
    assert_ptr_equal(kc_assignor_find(KC_ASSIGNOR_DEFAULT, strlen(KC_ASSIGNOR_DEFAULT)), u);
}

static void test_empty_group(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 5);
    for (size_t a = 0; kc_assignor_at(a) != NULL; a++) {
        kc_assign_result_t res;
        assert_int_equal(kc_assignor_at(a)->assign(spec(g), &res), 0);
        assert_int_equal(res.n_members, 0);
        assert_int_equal(res.n_assigned, 0);
        kc_assign_result_free(&res);
        assert_null(res.members);
    }
    kc_assign_result_free(NULL);
    grp_free(g);
}

static void test_invalid_specs(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 4);
    add_member_all(g, "a");
    add_member_all(g, "b");
    kc_assign_result_t res;
    for (size_t a = 0; kc_assignor_at(a) != NULL; a++) {
        kc_assign_fn fn = kc_assignor_at(a)->assign;

        /* Two members with the same id. */
        snprintf(g->mem[1]->id, sizeof g->mem[1]->id, "a");
        memset(&res, 0xff, sizeof res);
        assert_int_equal(fn(spec(g), &res), -EINVAL);
        assert_null(res.members);
        assert_int_equal(res.n_members, 0);
        kc_assign_result_free(&res);
        snprintf(g->mem[1]->id, sizeof g->mem[1]->id, "b");

        /* A subscription outside the topic table. */
        g->mem[0]->sub[0] = 1;
        assert_int_equal(fn(spec(g), &res), -EINVAL);
        g->mem[0]->sub[0] = 0;

        /* A negative partition count. */
        g->t[0].partitions = -1;
        assert_int_equal(fn(spec(g), &res), -EINVAL);
        g->t[0].partitions = 4;

        /* NULL pointers with lengths. */
        spec(g);
        g->m[0].id = NULL;
        assert_int_equal(fn(&g->s, &res), -EINVAL);
        spec(g);
        g->m[1].topics = NULL;
        assert_int_equal(fn(&g->s, &res), -EINVAL);
        spec(g);
        g->s.topics = NULL;
        assert_int_equal(fn(&g->s, &res), -EINVAL);
        kc_assign_tparts_t bad = {0, 3, NULL};
        spec(g);
        g->m[0].current = (kc_assign_owned_t){&bad, 1};
        assert_int_equal(fn(&g->s, &res), -EINVAL);
        assert_int_equal(fn(NULL, &res), -EINVAL);

        /* More than INT32_MAX partitions in total. */
        add_topic(g, "big1", INT32_MAX);
        add_topic(g, "big2", 1);
        assert_int_equal(fn(spec(g), &res), -EINVAL);
        g->nt -= 2;

        /* And the fixed spec works. */
        assert_int_equal(fn(spec(g), &res), 0);
        assert_int_equal(res.n_assigned, 4);
        kc_assign_result_free(&res);
    }
    grp_free(g);
}

/* ---- uniform, homogeneous ----------------------------------------------------------------- */

static void test_uniform_one_member(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "a", 3);
    add_topic(g, "b", 0);
    add_topic(g, "c", 5);
    add_member_all(g, "m");
    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    int32_t *owner = check_valid(g, &res);
    assert_int_equal(count_of(&res, 0), 8);
    assert_int_equal(res.members[0].n_topics, 2);
    assert_int_equal(res.members[0].topics[0].topic, 0);
    assert_int_equal(res.members[0].topics[1].topic, 2);
    assert_int_equal(res.n_kept, 0);
    assert_int_equal(res.n_moved, 0);
    free(owner);
    kc_assign_result_free(&res);
    grp_free(g);
}

static void test_uniform_homogeneous_balance(void **state)
{
    (void)state;
    const int32_t counts[][4] = {{0, 0, 0, 0},  {1, 0, 0, 0},     {5, 0, 3, 0},
                                 {13, 7, 1, 2}, {64, 64, 64, 64}, {3, 1, 4, 1}};
    const uint32_t members[] = {1, 2, 3, 7, 10, 33};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (size_t mi = 0; mi < sizeof members / sizeof members[0]; mi++) {
            grp_t *g = grp_new();
            for (int t = 0; t < 4; t++) {
                char name[32];
                snprintf(name, sizeof name, "t%d", t);
                add_topic(g, name, counts[c][t]);
            }
            for (uint32_t i = 0; i < members[mi]; i++) {
                char id[32];
                snprintf(id, sizeof id, "m%02u", i);
                add_member_all(g, id);
            }
            kc_assign_result_t res;
            assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
            free(check_valid(g, &res));
            assert_true(spread(&res) <= 1);
            assert_int_equal(res.n_assigned, total_partitions(g));
            kc_assign_result_free(&res);
            grp_free(g);
        }
}

static void test_uniform_more_members_than_partitions(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 5);
    for (int i = 0; i < 8; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%d", i);
        add_member_all(g, id);
    }
    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    free(check_valid(g, &res));
    uint32_t ones = 0;
    for (uint32_t i = 0; i < g->nm; i++) {
        assert_true(count_of(&res, i) <= 1);
        ones += count_of(&res, i);
    }
    assert_int_equal(ones, 5);

    /* A ninth member joins: nothing needs to move, so nothing does. */
    adopt(g, &res);
    kc_assign_result_free(&res);
    add_member_all(g, "m8");
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    free(check_valid(g, &res));
    assert_int_equal(res.n_kept, 5);
    assert_int_equal(res.n_moved, 0);
    assert_int_equal(count_of(&res, find_member(g, "m8")), 0);
    kc_assign_result_free(&res);
    grp_free(g);
}

static void test_uniform_join_moves_minimum(void **state)
{
    (void)state;
    const uint32_t group_sizes[] = {1, 2, 3, 5, 9, 22, 23, 40};
    for (size_t s = 0; s < sizeof group_sizes / sizeof group_sizes[0]; s++) {
        uint32_t n = group_sizes[s];
        grp_t *g = grp_new();
        add_topic(g, "orders", 7);
        add_topic(g, "payments", 11);
        add_topic(g, "empty", 0);
        add_topic(g, "refunds", 4);
        uint32_t total = total_partitions(g);
        for (uint32_t i = 0; i < n; i++) {
            char id[32];
            snprintf(id, sizeof id, "member-%03u", i * 2 + 1);
            add_member_all(g, id);
        }
        kc_assign_result_t res;
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        int32_t *before = check_valid(g, &res);
        adopt(g, &res);
        kc_assign_result_free(&res);

        /* The newcomer sorts in the middle of the ids; that must not matter. */
        char id[32];
        snprintf(id, sizeof id, "member-%03u", n / 2 * 2);
        uint32_t nw = add_member_all(g, id);
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        int32_t *after = check_valid(g, &res);
        assert_true(spread(&res) <= 1);
        /* Balance needs exactly floor(P / (N + 1)) partitions on the newcomer, and they are
         * the only ones that move. */
        uint32_t need = total / (n + 1);
        assert_int_equal(count_of(&res, nw), need);
        assert_int_equal(res.n_moved, need);
        assert_int_equal(res.n_kept, total - need);
        assert_int_equal(moves_between(g, before, g, after), need);
        free(before);
        free(after);
        kc_assign_result_free(&res);
        grp_free(g);
    }
}

static void test_uniform_leave_moves_only_its_partitions(void **state)
{
    (void)state;
    const uint32_t group_sizes[] = {2, 3, 6, 10, 23};
    for (size_t s = 0; s < sizeof group_sizes / sizeof group_sizes[0]; s++) {
        for (uint32_t leaver = 0; leaver < group_sizes[s]; leaver += 2) {
            grp_t *g = grp_new();
            add_topic(g, "a", 10);
            add_topic(g, "b", 13);
            for (uint32_t i = 0; i < group_sizes[s]; i++) {
                char id[32];
                snprintf(id, sizeof id, "m%02u", i);
                add_member_all(g, id);
            }
            kc_assign_result_t res;
            assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
            int32_t *before = check_valid(g, &res);
            char gone[32];
            snprintf(gone, sizeof gone, "m%02u", leaver);
            uint32_t gone_count = count_of(&res, find_member(g, gone));
            adopt(g, &res);
            kc_assign_result_free(&res);

            grp_t *old = grp_new(); /* the ids before, for moves_between */
            for (uint32_t i = 0; i < g->nm; i++)
                add_member(old, g->mem[i]->id, NULL, 0);
            remove_member(g, gone);
            assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
            int32_t *after = check_valid(g, &res);
            assert_true(spread(&res) <= 1);
            assert_int_equal(res.n_moved, 0);
            assert_int_equal(res.n_kept, 23 - gone_count);
            assert_int_equal(moves_between(old, before, g, after), gone_count);
            free(before);
            free(after);
            kc_assign_result_free(&res);
            grp_free(old);
            grp_free(g);
        }
    }
}

/* From any current assignment (unbalanced, partial, with members that left), the number of
 * partitions moved is the least a balanced assignment allows: with quotas q and q + 1, the
 * q + 1 quotas best go to the members holding the most, and whatever a member holds above its
 * quota must move. */
static void test_uniform_homogeneous_min_moves_random(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 200; round++) {
        grp_t *g = grp_new();
        uint32_t nt = 1 + rnd(&seed, 5);
        for (uint32_t t = 0; t < nt; t++) {
            char name[32];
            snprintf(name, sizeof name, "t%u", t);
            add_topic(g, name, (int32_t)rnd(&seed, 30));
        }
        uint32_t nm = 1 + rnd(&seed, 20);
        for (uint32_t i = 0; i < nm; i++) {
            char id[32];
            snprintf(id, sizeof id, "m%u", (unsigned)rnd(&seed, 1000000));
            bool dup = false;
            for (uint32_t j = 0; j < g->nm; j++)
                dup = dup || strcmp(g->mem[j]->id, id) == 0;
            if (!dup)
                add_member_all(g, id);
        }
        nm = g->nm;
        /* Random owners: a member, or nobody (a departed member or a new partition); skewed
         * so that some members hold far too much. */
        uint32_t held[MAXM] = {0};
        for (uint32_t i = 0; i < nm; i++) {
            uint32_t topics[512], n = 0;
            int32_t parts[512];
            for (uint32_t t = 0; t < nt; t++)
                for (int32_t p = 0; p < g->t[t].partitions; p++) {
                    uint64_t h = (uint64_t)(t * 131 + (uint32_t)p) * 0x9e3779b97f4a7c15ull ^
                                 (uint64_t)round * 0x51ed27ull;
                    uint32_t who = (uint32_t)((h >> 17) % (nm + 2));
                    if (who >= nm || (h >> 40) % 3 == 0)
                        who = (uint32_t)((h >> 23) % (nm + 3)); /* skew */
                    if (who == i) {
                        topics[n] = t;
                        parts[n++] = p;
                    }
                }
            set_current(g->mem[i], topics, parts, n);
            held[i] = n;
        }
        uint32_t total = total_partitions(g);
        uint32_t q = total / nm, extra = total % nm;
        /* Sort held descending (insertion sort) and compute the least moves. */
        uint32_t h[MAXM];
        memcpy(h, held, sizeof h);
        for (uint32_t a = 1; a < nm; a++)
            for (uint32_t b = a; b > 0 && h[b] > h[b - 1]; b--) {
                uint32_t x = h[b];
                h[b] = h[b - 1];
                h[b - 1] = x;
            }
        uint32_t least = 0;
        for (uint32_t a = 0; a < nm; a++) {
            uint32_t quota = q + (a < extra ? 1 : 0);
            least += h[a] > quota ? h[a] - quota : 0;
        }

        kc_assign_result_t res;
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        free(check_valid(g, &res));
        assert_true(spread(&res) <= 1);
        assert_int_equal(res.n_moved, least);
        uint32_t previously = 0;
        for (uint32_t i = 0; i < nm; i++)
            previously += held[i];
        assert_int_equal(res.n_kept, previously - least);

        /* Stable: assigning again from the result changes nothing. */
        adopt(g, &res);
        kc_assign_result_free(&res);
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        assert_int_equal(res.n_moved, 0);
        assert_int_equal(res.n_kept, total);
        kc_assign_result_free(&res);
        grp_free(g);
    }
}

/* ---- uniform, heterogeneous --------------------------------------------------------------- */

static void test_uniform_heterogeneous_example(void **state)
{
    (void)state;
    /* A:{t1}, B:{t1,t2}, C:{t2}. */
    const int32_t sizes[][2] = {{3, 3}, {6, 6}, {4, 2}, {2, 4}, {1, 0}, {0, 5}, {10, 1}, {9, 9}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        grp_t *g = grp_new();
        uint32_t t1 = add_topic(g, "t1", sizes[s][0]);
        uint32_t t2 = add_topic(g, "t2", sizes[s][1]);
        uint32_t both[] = {t1, t2};
        add_member(g, "A", &t1, 1);
        add_member(g, "B", both, 2);
        add_member(g, "C", &t2, 1);
        kc_assign_result_t res;
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        int32_t *owner = check_valid(g, &res);
        assert_false(has_improving_chain(g, owner));
        /* The optimum is known here: the spread is at most 1 when B can even things out. */
        uint32_t total = (uint32_t)(sizes[s][0] + sizes[s][1]);
        uint32_t a = count_of(&res, 0), b = count_of(&res, 1), c = count_of(&res, 2);
        assert_int_equal(a + b + c, total);
        if (sizes[s][0] == 3 && sizes[s][1] == 3)
            assert_true(a == 2 && b == 2 && c == 2);
        if (sizes[s][0] == 10 && sizes[s][1] == 1) {
            assert_int_equal(c, 1);
            assert_int_equal(b, 5);
            assert_int_equal(a, 5);
        }
        free(owner);
        kc_assign_result_free(&res);
        grp_free(g);
    }
}

/* D joins A:{t1}, B:{t1,t2}, C:{t2} (4 partitions each). The balanced result (3 each) forces
 * A to hand one t1 partition to B, and B to hand both its t2 partitions on: 4 moves is the
 * least possible. */
static void test_uniform_heterogeneous_join(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    uint32_t t1 = add_topic(g, "t1", 6);
    uint32_t t2 = add_topic(g, "t2", 6);
    uint32_t both[] = {t1, t2};
    add_member(g, "A", &t1, 1);
    add_member(g, "B", both, 2);
    add_member(g, "C", &t2, 1);
    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(count_of(&res, i), 4);
    adopt(g, &res);
    kc_assign_result_free(&res);

    add_member(g, "D", &t2, 1);
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    int32_t *owner = check_valid(g, &res);
    assert_false(has_improving_chain(g, owner));
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(count_of(&res, i), 3);
    assert_int_equal(res.n_moved, 4);
    assert_int_equal(res.n_kept, 8);
    free(owner);

    /* And C leaves again. Its 3 partitions go to B and D, and A (t1 only) can reach 4 only
     * by taking a t1 partition from B: exactly one move beyond C's partitions. */
    adopt(g, &res);
    kc_assign_result_free(&res);
    remove_member(g, "C");
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    owner = check_valid(g, &res);
    assert_false(has_improving_chain(g, owner));
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(count_of(&res, i), 4);
    assert_int_equal(res.n_moved, 1);
    assert_int_equal(res.n_kept, 12 - 3 - 1);
    free(owner);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* Per topic everything looks balanced (each topic's subscribers differ by at most one), yet
 * M3 could pass a t2 partition to M2, which passes a t1 partition to M1: 9/10/11 becomes
 * 10/10/10 with two moves. */
/* M1:{t1} holds 9, M2:{t1,t2} holds 10, M3:{t2} holds 11 (see the test below). */
static grp_t *chain_group(void)
{
    grp_t *g = grp_new();
    uint32_t t1 = add_topic(g, "t1", 14);
    uint32_t t2 = add_topic(g, "t2", 16);
    uint32_t both[] = {t1, t2};
    add_member(g, "M1", &t1, 1);
    add_member(g, "M2", both, 2);
    add_member(g, "M3", &t2, 1);
    uint32_t tt[16];
    int32_t pp[16];
    for (int i = 0; i < 9; i++) {
        tt[i] = t1;
        pp[i] = i;
    }
    set_current(g->mem[0], tt, pp, 9);
    for (int i = 0; i < 5; i++) {
        tt[i] = t1;
        pp[i] = 9 + i;
        tt[5 + i] = t2;
        pp[5 + i] = i;
    }
    set_current(g->mem[1], tt, pp, 10);
    for (int i = 0; i < 11; i++) {
        tt[i] = t2;
        pp[i] = 5 + i;
    }
    set_current(g->mem[2], tt, pp, 11);
    return g;
}

static void test_uniform_heterogeneous_chain(void **state)
{
    (void)state;
    grp_t *g = chain_group();

    /* The test's own checker sees the chain in the current assignment. */
    int32_t cur[30];
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t j = 0; j < g->mem[i]->ntp; j++)
            for (uint32_t k = 0; k < g->mem[i]->tp[j].n_partitions; k++)
                cur[pbase(g, g->mem[i]->tp[j].topic) + (uint32_t)g->mem[i]->tp[j].partitions[k]] =
                    (int32_t)i;
    assert_true(has_improving_chain(g, cur));

    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    int32_t *owner = check_valid(g, &res);
    assert_false(has_improving_chain(g, owner));
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(count_of(&res, i), 10);
    assert_int_equal(res.n_moved, 2);
    assert_int_equal(res.n_kept, 28);
    free(owner);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* A line: member i subscribes to topics i and i + 1 (40 members, 41 topics of 5 partitions,
 * 205 partitions: five members get 6, the rest 5). m0 holds t0 and t1 (10), m1..m11 hold
 * t2..t12 (5 each), and t13..t40 are new. The new partitions can balance m12..m39 at 5 each
 * without moving anything, and m0's surplus can only flow down the line: m0 passes 4 to m1,
 * m1 3 to m2, m2 2 to m3, m3 1 to m4, which is 10 moves and the least possible. Placing the
 * new partitions carelessly would pull the whole line (hundreds of moves). */
static void test_uniform_heterogeneous_line(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    for (int t = 0; t < 41; t++) {
        char name[32];
        snprintf(name, sizeof name, "t%02d", t);
        add_topic(g, name, 5);
    }
    for (uint32_t i = 0; i < 40; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%02u", i);
        uint32_t subs[] = {i, i + 1};
        add_member(g, id, subs, 2);
    }
    uint32_t tt[10] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    int32_t pp[10] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
    set_current(g->mem[0], tt, pp, 10);
    for (uint32_t i = 1; i < 12; i++) {
        uint32_t t5[5] = {i + 1, i + 1, i + 1, i + 1, i + 1};
        set_current(g->mem[i], t5, pp, 5);
    }
    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    int32_t *owner = check_valid(g, &res);
    assert_false(has_improving_chain(g, owner));
    assert_true(spread(&res) <= 1);
    assert_int_equal(res.n_moved, 10);
    assert_int_equal(res.n_kept, 65 - 10);
    free(owner);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* Random heterogeneous groups with random current assignments: valid, no improving chain,
 * and stable when fed their own result. */
static void test_uniform_heterogeneous_random(void **state)
{
    (void)state;
    uint64_t seed = 0x0123456789abcdefull;
    for (int round = 0; round < 150; round++) {
        grp_t *g = grp_new();
        uint32_t nt = 1 + rnd(&seed, 8);
        for (uint32_t t = 0; t < nt; t++) {
            char name[32];
            snprintf(name, sizeof name, "t%u", t);
            add_topic(g, name, (int32_t)rnd(&seed, 25));
        }
        uint32_t nm = 1 + rnd(&seed, 16);
        for (uint32_t i = 0; i < nm; i++) {
            uint32_t subs[MAXT], n = 0;
            for (uint32_t t = 0; t < nt; t++)
                if (rnd(&seed, 3) == 0)
                    subs[n++] = t;
            if (n > 0 && rnd(&seed, 4) == 0)
                subs[n++] = subs[0]; /* a duplicate subscription */
            char id[32];
            snprintf(id, sizeof id, "m%02u", i);
            add_member(g, id, subs, n);
        }
        /* Current owners: random members, subscribed or not; some partitions claimed twice. */
        for (uint32_t i = 0; i < nm; i++) {
            uint32_t topics[512], n = 0;
            int32_t parts[512];
            for (uint32_t t = 0; t < nt; t++)
                for (int32_t p = 0; p < g->t[t].partitions; p++)
                    if (rnd(&seed, nm + 1) == 0) {
                        topics[n] = t;
                        parts[n++] = p;
                    }
            set_current(g->mem[i], topics, parts, n);
        }

        kc_assign_result_t res;
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        int32_t *owner = check_valid(g, &res);
        assert_false(has_improving_chain(g, owner));
        free(owner);
        adopt(g, &res);
        kc_assign_result_free(&res);

        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        assert_int_equal(res.n_moved, 0);
        assert_int_equal(res.n_kept, res.n_assigned);

        /* A member joins with a random subscription, then one leaves: still optimal. */
        adopt(g, &res);
        kc_assign_result_free(&res);
        uint32_t subs[MAXT], n = 0;
        for (uint32_t t = 0; t < nt; t++)
            if (rnd(&seed, 2) == 0)
                subs[n++] = t;
        add_member(g, "zz-new", subs, n);
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        owner = check_valid(g, &res);
        assert_false(has_improving_chain(g, owner));
        free(owner);
        adopt(g, &res);
        kc_assign_result_free(&res);
        remove_member(g, g->mem[rnd(&seed, g->nm)]->id);
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        owner = check_valid(g, &res);
        assert_false(has_improving_chain(g, owner));
        free(owner);
        kc_assign_result_free(&res);
        grp_free(g);
    }
}

/* A group too tangled for step 4's work budget (tests/bench/assign_bench.c's "nested" +
 * "shuffle": member i subscribes to topics 0..i mod 100, and holds what member 7i + 1 got):
 * the uniform assignor gives up on perfect balance but still returns a valid, deterministic
 * and nearly balanced assignment. Built without the fixture, which is for small groups. */
static void test_uniform_work_budget(void **state)
{
    (void)state;
    enum { NM = 1000, NT = 100, NP = 100 };
    static char ids[NM][16], names[NT][16];
    static uint32_t subs[NM][NT];
    static kc_assign_member_t m[NM];
    static kc_assign_topic_t t[NT];
    for (uint32_t k = 0; k < NT; k++) {
        snprintf(names[k], sizeof names[k], "topic-%03u", k);
        t[k] = (kc_assign_topic_t){names[k], strlen(names[k]), NP};
    }
    for (uint32_t i = 0; i < NM; i++) {
        snprintf(ids[i], sizeof ids[i], "member-%04u", i);
        for (uint32_t k = 0; k <= i % NT; k++)
            subs[i][k] = k;
        m[i] = (kc_assign_member_t){
            .id = ids[i], .id_len = strlen(ids[i]), .topics = subs[i], .n_topics = i % NT + 1};
    }
    kc_assign_spec_t sp = {m, NM, t, NT, 0};
    kc_assign_result_t first, a, b;
    assert_int_equal(kc_assign_uniform(&sp, &first), 0);
    for (uint32_t i = 0; i < NM; i++)
        m[i].current = first.members[(7 * i + 1) % NM];
    assert_int_equal(kc_assign_uniform(&sp, &a), 0);
    assert_int_equal(kc_assign_uniform(&sp, &b), 0);

    static uint8_t seen[NT][NP];
    memset(seen, 0, sizeof seen);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < NM; i++) {
        uint32_t n = 0;
        assert_int_equal(a.members[i].n_topics, b.members[i].n_topics);
        for (uint32_t j = 0; j < a.members[i].n_topics; j++) {
            const kc_assign_tparts_t *tp = &a.members[i].topics[j];
            assert_true(tp->topic <= i % NT); /* subscribed */
            assert_int_equal(tp->n_partitions, b.members[i].topics[j].n_partitions);
            assert_memory_equal(tp->partitions, b.members[i].topics[j].partitions,
                                tp->n_partitions * sizeof *tp->partitions);
            for (uint32_t k = 0; k < tp->n_partitions; k++) {
                assert_int_equal(seen[tp->topic][tp->partitions[k]]++, 0);
                n++;
            }
        }
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    assert_int_equal(a.n_assigned, NT * NP);
    assert_true(hi - lo <= 8);
    kc_assign_result_free(&first);
    kc_assign_result_free(&a);
    kc_assign_result_free(&b);
}

static void test_uniform_empty_subscriptions(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 9);
    add_member_all(g, "a");
    add_member(g, "b", NULL, 0);
    add_member_all(g, "c");
    add_member(g, "d", NULL, 0);
    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    free(check_valid(g, &res));
    assert_int_equal(count_of(&res, 1), 0);
    assert_int_equal(count_of(&res, 3), 0);
    assert_int_equal(res.members[1].n_topics, 0);
    assert_true(count_of(&res, 0) == 4 || count_of(&res, 0) == 5);
    assert_int_equal(count_of(&res, 0) + count_of(&res, 2), 9);
    kc_assign_result_free(&res);

    /* Nobody subscribes to anything. */
    g->mem[0]->nsub = 0;
    g->mem[2]->nsub = 0;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    free(check_valid(g, &res));
    assert_int_equal(res.n_assigned, 0);
    kc_assign_result_free(&res);
    grp_free(g);
}

static void test_zero_partition_topics(void **state)
{
    (void)state;
    for (size_t a = 0; kc_assignor_at(a) != NULL; a++) {
        grp_t *g = grp_new();
        uint32_t z1 = add_topic(g, "z1", 0);
        uint32_t t = add_topic(g, "t", 4);
        uint32_t z2 = add_topic(g, "z2", 0);
        uint32_t zs[] = {z1, z2}, mix[] = {z2, t};
        add_member(g, "a", zs, 2);
        add_member(g, "b", mix, 2);
        add_member(g, "c", &z1, 1);
        kc_assign_result_t res;
        assert_int_equal(kc_assignor_at(a)->assign(spec(g), &res), 0);
        free(check_valid(g, &res));
        assert_int_equal(count_of(&res, 0), 0);
        assert_int_equal(count_of(&res, 1), 4);
        assert_int_equal(count_of(&res, 2), 0);
        kc_assign_result_free(&res);

        /* Homogeneous on zero-partition topics only. */
        g->mem[1]->nsub = 0;
        for (uint32_t i = 0; i < 3; i++) {
            g->mem[i]->sub[0] = z1;
            g->mem[i]->nsub = 1;
        }
        assert_int_equal(kc_assignor_at(a)->assign(spec(g), &res), 0);
        free(check_valid(g, &res));
        assert_int_equal(res.n_assigned, 0);
        kc_assign_result_free(&res);
        grp_free(g);
    }
}

/* A topic deleted (its partition count drops to 0, or the members stop subscribing, or the
 * caller drops it from the table so the old index is out of range): its partitions vanish
 * from the assignment and nothing else moves. */
static void test_uniform_topic_deleted(void **state)
{
    (void)state;
    for (int how = 0; how < 3; how++) {
        grp_t *g = grp_new();
        add_topic(g, "keep", 12);
        add_topic(g, "doomed", 6);
        for (int i = 0; i < 4; i++) {
            char id[32];
            snprintf(id, sizeof id, "m%d", i);
            add_member_all(g, id);
        }
        kc_assign_result_t res;
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        int32_t *before = check_valid(g, &res);
        adopt(g, &res);
        kc_assign_result_free(&res);
        uint32_t kept_before[4];
        for (uint32_t i = 0; i < 4; i++) {
            kept_before[i] = 0;
            for (int32_t p = 0; p < 12; p++)
                kept_before[i] += before[p] == (int32_t)i;
        }
        free(before);

        if (how == 0) {
            g->t[1].partitions = 0;
        } else if (how == 1) {
            for (uint32_t i = 0; i < 4; i++)
                g->mem[i]->nsub = 1; /* only "keep" */
        } else {
            g->nt = 1;
            for (uint32_t i = 0; i < 4; i++)
                g->mem[i]->nsub = 1;
        }
        assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
        free(check_valid(g, &res));
        for (uint32_t i = 0; i < 4; i++) {
            assert_true(res.members[i].n_topics <= 1);
            if (res.members[i].n_topics == 1)
                assert_int_equal(res.members[i].topics[0].topic, 0);
        }
        assert_int_equal(res.n_assigned, 12);
        assert_true(spread(&res) <= 1);
        /* 12 over 4 is 3 each: a member with more than 3 of "keep" gives only the excess. */
        uint32_t least = 0;
        for (uint32_t i = 0; i < 4; i++)
            least += kept_before[i] > 3 ? kept_before[i] - 3 : 0;
        assert_int_equal(res.n_moved, least);
        kc_assign_result_free(&res);
        grp_free(g);
    }
}

/* Two members claim the same partition: the one with the smaller id keeps it. Claims on
 * partitions outside the topic and on unsubscribed topics are ignored. */
static void test_uniform_conflicting_claims(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    uint32_t t = add_topic(g, "t", 4);
    add_topic(g, "other", 4);
    add_member(g, "b", &t, 1);
    add_member(g, "a", &t, 1);
    uint32_t tt[] = {0, 0, 0, 1, 7};
    int32_t pa[] = {0, 1, 9, 0, 0};
    int32_t pb[] = {0, 2, -1, 1, 0};
    set_current(g->mem[1], tt, pa, 5); /* a: t0, t1, t9 (no such), other0, topic 7 */
    set_current(g->mem[0], tt, pb, 5); /* b: t0 (a's too), t2, t-1, other1, topic 7 */
    kc_assign_result_t res;
    assert_int_equal(kc_assign_uniform(spec(g), &res), 0);
    int32_t *owner = check_valid(g, &res);
    assert_int_equal(owner[0], 1); /* a kept partition 0 */
    assert_int_equal(owner[1], 1);
    assert_int_equal(owner[2], 0);
    assert_int_equal(res.n_kept, 3);
    assert_int_equal(res.n_moved, 0);
    free(owner);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* ---- range -------------------------------------------------------------------------------- */

static void expect_parts(const kc_assign_result_t *res, uint32_t member, uint32_t topic,
                         const int32_t *parts, uint32_t n)
{
    const kc_assign_owned_t *o = &res->members[member];
    for (uint32_t j = 0; j < o->n_topics; j++)
        if (o->topics[j].topic == topic) {
            assert_int_equal(o->topics[j].n_partitions, n);
            for (uint32_t k = 0; k < n; k++)
                assert_int_equal(o->topics[j].partitions[k], parts[k]);
            return;
        }
    assert_int_equal(n, 0);
}

static void test_range_basic(void **state)
{
    (void)state;
    /* Kafka's example: M0, M1; T1, T2 with 3 partitions each. */
    grp_t *g = grp_new();
    add_topic(g, "T1", 3);
    add_topic(g, "T2", 3);
    add_member_all(g, "M1"); /* listed first, sorts second */
    add_member_all(g, "M0");
    kc_assign_result_t res;
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    free(check_valid(g, &res));
    expect_parts(&res, 1, 0, (int32_t[]){0, 1}, 2);
    expect_parts(&res, 1, 1, (int32_t[]){0, 1}, 2);
    expect_parts(&res, 0, 0, (int32_t[]){2}, 1);
    expect_parts(&res, 0, 1, (int32_t[]){2}, 1);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* Co-partitioned topics (same partition count, same subscribers) give each member the same
 * partition numbers, in contiguous ranges; counts differ by at most one per topic. */
static void test_range_co_partitioning(void **state)
{
    (void)state;
    const int32_t counts[] = {1, 2, 7, 10, 31};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (uint32_t nm = 1; nm <= 12; nm += 3) {
            grp_t *g = grp_new();
            add_topic(g, "clicks", counts[c]);
            add_topic(g, "views", counts[c]);
            add_topic(g, "buys", counts[c]);
            for (uint32_t i = 0; i < nm; i++) {
                char id[32];
                snprintf(id, sizeof id, "consumer-%02u", (i * 3) % nm);
                add_member_all(g, id);
            }
            kc_assign_result_t res;
            assert_int_equal(kc_assign_range(spec(g), &res), 0);
            int32_t *owner = check_valid(g, &res);
            for (int32_t p = 0; p < counts[c]; p++) {
                assert_int_equal(owner[p], owner[counts[c] + p]);
                assert_int_equal(owner[p], owner[2 * counts[c] + p]);
            }
            /* Contiguous, in member id order, sizes q+1 then q. */
            uint32_t q = (uint32_t)counts[c] / nm, extra = (uint32_t)counts[c] % nm;
            int32_t next = 0;
            for (uint32_t rank = 0; rank < nm; rank++) {
                char id[32];
                snprintf(id, sizeof id, "consumer-%02u", rank);
                uint32_t i = find_member(g, id);
                uint32_t take = q + (rank < extra ? 1 : 0);
                assert_int_equal(count_of(&res, i), 3 * take);
                for (uint32_t k = 0; k < take; k++)
                    assert_int_equal(owner[next + (int32_t)k], (int32_t)i);
                next += (int32_t)take;
            }
            free(owner);
            kc_assign_result_free(&res);
            grp_free(g);
        }
}

/* Heterogeneous: per topic, ranges over that topic's subscribers only. */
static void test_range_heterogeneous(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    uint32_t t1 = add_topic(g, "t1", 5);
    uint32_t t2 = add_topic(g, "t2", 4);
    uint32_t both[] = {t1, t2};
    add_member(g, "A", &t1, 1);
    add_member(g, "B", both, 2);
    add_member(g, "C", &t2, 1);
    kc_assign_result_t res;
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    free(check_valid(g, &res));
    expect_parts(&res, 0, t1, (int32_t[]){0, 1, 2}, 3);
    expect_parts(&res, 1, t1, (int32_t[]){3, 4}, 2);
    expect_parts(&res, 1, t2, (int32_t[]){0, 1}, 2);
    expect_parts(&res, 2, t2, (int32_t[]){2, 3}, 2);
    expect_parts(&res, 0, t2, NULL, 0);
    expect_parts(&res, 2, t1, NULL, 0);
    kc_assign_result_free(&res);
    grp_free(g);
}

static void test_range_more_members_than_partitions(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 3);
    for (int i = 0; i < 5; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%d", i);
        add_member_all(g, id);
    }
    kc_assign_result_t res;
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    free(check_valid(g, &res));
    for (int i = 0; i < 3; i++)
        expect_parts(&res, (uint32_t)i, 0, (int32_t[]){i}, 1);
    assert_int_equal(count_of(&res, 3), 0);
    assert_int_equal(count_of(&res, 4), 0);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* Static members come first, ordered by instance id, so a static member that rejoins under a
 * new member id gets its old range back (Kafka's RangeAssignor.sortMemberIds). */
static void test_range_static_members(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 6);
    add_member_all(g, "a-dynamic");
    add_member_all(g, "z-static");
    add_member_all(g, "m-static");
    snprintf(g->mem[1]->inst, sizeof g->mem[1]->inst, "i0");
    snprintf(g->mem[2]->inst, sizeof g->mem[2]->inst, "i1");
    kc_assign_result_t res;
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    free(check_valid(g, &res));
    expect_parts(&res, 1, 0, (int32_t[]){0, 1}, 2);
    expect_parts(&res, 2, 0, (int32_t[]){2, 3}, 2);
    expect_parts(&res, 0, 0, (int32_t[]){4, 5}, 2);
    kc_assign_result_free(&res);

    /* i0 bounces and comes back as "b-static": same range. */
    snprintf(g->mem[1]->id, sizeof g->mem[1]->id, "b-static");
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    expect_parts(&res, 1, 0, (int32_t[]){0, 1}, 2);
    kc_assign_result_free(&res);
    grp_free(g);
}

/* The range assignor ignores the current assignment (as Kafka does since KAFKA-16944); the
 * statistics still report what moved. */
static void test_range_reports_moves(void **state)
{
    (void)state;
    grp_t *g = grp_new();
    add_topic(g, "t", 6);
    add_member_all(g, "b");
    add_member_all(g, "c");
    kc_assign_result_t res;
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    adopt(g, &res); /* b: 0-2, c: 3-5 */
    kc_assign_result_free(&res);
    add_member_all(g, "a"); /* a: 0-1, b: 2-3, c: 4-5 */
    assert_int_equal(kc_assign_range(spec(g), &res), 0);
    expect_parts(&res, 2, 0, (int32_t[]){0, 1}, 2);
    expect_parts(&res, 0, 0, (int32_t[]){2, 3}, 2);
    expect_parts(&res, 1, 0, (int32_t[]){4, 5}, 2);
    assert_int_equal(res.n_kept, 3);  /* 2 (b), 4 and 5 (c) */
    assert_int_equal(res.n_moved, 3); /* 0, 1 (b -> a), 3 (c -> b) */
    kc_assign_result_free(&res);
    grp_free(g);
}

/* ---- Both --------------------------------------------------------------------------------- */

/* The same group listed in another order (members, topics, subscription lists, current
 * assignment lists) gives the same assignment. */
static grp_t *permuted(const grp_t *g, uint64_t *seed)
{
    grp_t *p = grp_new();
    uint32_t tperm[MAXT], mperm[MAXM]; /* new index -> old index */
    for (uint32_t t = 0; t < g->nt; t++)
        tperm[t] = t;
    for (uint32_t t = g->nt; t > 1; t--) {
        uint32_t j = rnd(seed, t), x = tperm[t - 1];
        tperm[t - 1] = tperm[j];
        tperm[j] = x;
    }
    uint32_t tnew[MAXT]; /* old index -> new index */
    for (uint32_t t = 0; t < g->nt; t++) {
        tnew[tperm[t]] = t;
        add_topic(p, g->tname[tperm[t]], g->t[tperm[t]].partitions);
    }
    for (uint32_t i = 0; i < g->nm; i++)
        mperm[i] = i;
    for (uint32_t i = g->nm; i > 1; i--) {
        uint32_t j = rnd(seed, i), x = mperm[i - 1];
        mperm[i - 1] = mperm[j];
        mperm[j] = x;
    }
    for (uint32_t i = 0; i < g->nm; i++) {
        const mem_t *o = g->mem[mperm[i]];
        uint32_t subs[MAXT];
        for (uint32_t j = 0; j < o->nsub; j++)
            subs[o->nsub - 1 - j] = tnew[o->sub[j]]; /* reversed too */
        add_member(p, o->id, subs, o->nsub);
        memcpy(p->mem[i]->inst, o->inst, sizeof o->inst);
        uint32_t topics[1024], n = 0;
        int32_t parts[1024];
        for (uint32_t j = o->ntp; j-- > 0;) /* topics in reverse order */
            for (uint32_t k = 0; k < o->tp[j].n_partitions; k++) {
                topics[n] = tnew[o->tp[j].topic];
                parts[n++] = o->tp[j].partitions[k];
            }
        set_current(p->mem[i], topics, parts, n);
    }
    return p;
}

static void test_determinism(void **state)
{
    (void)state;
    uint64_t seed = 0xfeedfacecafebeefull;
    for (int round = 0; round < 60; round++) {
        grp_t *g = grp_new();
        uint32_t nt = 1 + rnd(&seed, 6);
        for (uint32_t t = 0; t < nt; t++) {
            char name[32];
            snprintf(name, sizeof name, "topic-%u", rnd(&seed, 1000) * 10 + t);
            add_topic(g, name, (int32_t)rnd(&seed, 20));
        }
        uint32_t nm = 1 + rnd(&seed, 12);
        bool homogeneous = round % 2 == 0;
        for (uint32_t i = 0; i < nm; i++) {
            char id[32];
            snprintf(id, sizeof id, "m-%u-%u", rnd(&seed, 100), i);
            if (homogeneous) {
                add_member_all(g, id);
            } else {
                uint32_t subs[MAXT], n = 0;
                for (uint32_t t = 0; t < nt; t++)
                    if (rnd(&seed, 2))
                        subs[n++] = t;
                add_member(g, id, subs, n);
            }
            if (rnd(&seed, 3) == 0)
                snprintf(g->mem[i]->inst, sizeof g->mem[i]->inst, "inst-%u", rnd(&seed, 50));
        }
        for (size_t a = 0; kc_assignor_at(a) != NULL; a++) {
            kc_assign_fn fn = kc_assignor_at(a)->assign;
            kc_assign_result_t res;
            /* A first assignment becomes the current one, then a member leaves. */
            assert_int_equal(fn(spec(g), &res), 0);
            adopt(g, &res);
            kc_assign_result_free(&res);
            if (g->nm > 1 && a == 0)
                remove_member(g, g->mem[rnd(&seed, g->nm)]->id);

            assert_int_equal(fn(spec(g), &res), 0);
            char *want = fingerprint(g, &res);
            uint32_t moved = res.n_moved, kept = res.n_kept;
            kc_assign_result_free(&res);
            for (int k = 0; k < 4; k++) {
                grp_t *p = permuted(g, &seed);
                assert_int_equal(fn(spec(p), &res), 0);
                char *got = fingerprint(p, &res);
                assert_string_equal(got, want);
                assert_int_equal(res.n_moved, moved);
                assert_int_equal(res.n_kept, kept);
                free(got);
                kc_assign_result_free(&res);
                grp_free(p);
            }
            free(want);
        }
        grp_free(g);
    }
}

/* Every allocation can fail: with a growing memory limit, each call either fails cleanly
 * with -ENOMEM (and a zeroed result) or succeeds with the same answer as without a limit. */
/* Every allocation can fail: with a growing memory limit, each call either fails cleanly
 * with -ENOMEM (and a zeroed result) or succeeds with the same answer as without a limit. */
static void oom_sweep(grp_t *g)
{
    for (size_t a = 0; kc_assignor_at(a) != NULL; a++) {
        kc_assign_fn fn = kc_assignor_at(a)->assign;
        kc_assign_result_t res;
        assert_int_equal(fn(spec(g), &res), 0);
        char *want = fingerprint(g, &res);
        kc_assign_result_free(&res);

        int failures = 0;
        for (size_t limit = 1;; limit += 8) {
            spec(g);
            g->s.mem_limit = limit;
            int rc = fn(&g->s, &res);
            if (rc == -ENOMEM) {
                assert_null(res.members);
                assert_int_equal(res.n_assigned, 0);
                failures++;
                continue;
            }
            assert_int_equal(rc, 0);
            char *got = fingerprint(g, &res);
            assert_string_equal(got, want);
            free(got);
            kc_assign_result_free(&res);
            break;
        }
        assert_true(failures > 10);
        free(want);
    }
}

static void test_out_of_memory(void **state)
{
    (void)state;
    /* Heterogeneous, with work for the fill and the per-topic balancing. */
    grp_t *g = grp_new();
    uint32_t t1 = add_topic(g, "t1", 14);
    uint32_t t2 = add_topic(g, "t2", 16);
    add_topic(g, "t3", 5);
    uint32_t both[] = {t1, t2};
    add_member(g, "M1", &t1, 1);
    add_member(g, "M2", both, 2);
    add_member(g, "M3", &t2, 1);
    add_member_all(g, "M4");
    uint32_t tt[16];
    int32_t pp[16];
    for (int i = 0; i < 14; i++) {
        tt[i] = t1;
        pp[i] = i;
    }
    set_current(g->mem[1], tt, pp, 14);
    oom_sweep(g);
    grp_free(g);

    /* Heterogeneous, with a chain to remove (step 4's allocations). */
    g = chain_group();
    oom_sweep(g);
    grp_free(g);

    /* Homogeneous. */
    g = grp_new();
    add_topic(g, "a", 7);
    add_topic(g, "b", 3);
    add_member_all(g, "x");
    add_member_all(g, "y");
    add_member_all(g, "z");
    for (int i = 0; i < 7; i++) {
        tt[i] = 0;
        pp[i] = i;
    }
    set_current(g->mem[0], tt, pp, 7); /* x holds all of "a" */
    oom_sweep(g);
    grp_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_empty_group),
        cmocka_unit_test(test_invalid_specs),
        cmocka_unit_test(test_uniform_one_member),
        cmocka_unit_test(test_uniform_homogeneous_balance),
        cmocka_unit_test(test_uniform_more_members_than_partitions),
        cmocka_unit_test(test_uniform_join_moves_minimum),
        cmocka_unit_test(test_uniform_leave_moves_only_its_partitions),
        cmocka_unit_test(test_uniform_homogeneous_min_moves_random),
        cmocka_unit_test(test_uniform_heterogeneous_example),
        cmocka_unit_test(test_uniform_heterogeneous_join),
        cmocka_unit_test(test_uniform_heterogeneous_chain),
        cmocka_unit_test(test_uniform_heterogeneous_line),
        cmocka_unit_test(test_uniform_heterogeneous_random),
        cmocka_unit_test(test_uniform_work_budget),
        cmocka_unit_test(test_uniform_empty_subscriptions),
        cmocka_unit_test(test_zero_partition_topics),
        cmocka_unit_test(test_uniform_topic_deleted),
        cmocka_unit_test(test_uniform_conflicting_claims),
        cmocka_unit_test(test_range_basic),
        cmocka_unit_test(test_range_co_partitioning),
        cmocka_unit_test(test_range_heterogeneous),
        cmocka_unit_test(test_range_more_members_than_partitions),
        cmocka_unit_test(test_range_static_members),
        cmocka_unit_test(test_range_reports_moves),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
