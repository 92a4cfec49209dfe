/* assign_bench.c - how long the KIP-848 server-side assignors (src/group/assignor.h) take on a
 * large group: by default 1000 members and 100 topics of 100 partitions (10 000 partitions).
 *
 *   assign_bench [members [topics [partitions-per-topic [runs]]]]
 *
 * For each assignor and subscription pattern it times four assignments, each from scratch
 * (the whole kc_assign_* call: model, algorithm, result):
 *   initial  no member has a current assignment;
 *   join     every member holds its part of the initial result, one new member joins;
 *   leave    every member holds its part of the initial result, one member (the middle one
 *            in id order) has left;
 *   shuffle  member i holds the initial part of member (7i + 1) mod N: a worst case where
 *            every current assignment is wrong (unsubscribed topics, unbalanced counts).
 * Subscription patterns: "homogeneous" (every member subscribes to every topic), "random
 * half" (each member subscribes to a random half of the topics, fixed seed; the joining
 * member too) and "nested" (member i subscribes to topics 0..i mod T: topic 0 has every
 * member, the last topic few; the loads can only be evened out through long chains).
 * Each line prints the median and the fastest of `runs` runs (default 9) in milliseconds,
 * and what the result looks like: partitions moved and kept, and the spread (largest minus
 * smallest partition count over the members that subscribe to anything).
 *
 * Standalone: it links only the assignors and the arena from libkcoord.a.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group/assignor.h"

typedef struct bench_s {
    uint32_t nm, nt;
    int32_t per_topic;
    char (*ids)[40];
    uint32_t *subs; /* nm + 1 rows of nt */
    uint32_t *nsub;
    kc_assign_topic_t *topics;
    char (*tnames)[24];
    kc_assign_member_t *members; /* nm + 1 */
} bench_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

enum { HOMOGENEOUS, HALF, NESTED, NPATTERNS };
static const char *pattern_names[] = {"homogeneous", "random half", "nested"};

/* Member i (0..nm, the last one being the joiner): id and subscriptions. */
static void setup(bench_t *b, int pattern)
{
    uint64_t seed = 0x2545f4914f6cdd1dull;
    for (uint32_t i = 0; i <= b->nm; i++) {
        /* Ids in an order unrelated to the array order, as a hash map would list them. */
        snprintf(b->ids[i], sizeof b->ids[i], "consumer-%08x-%u",
                 (unsigned)((i * 2654435761u) >> 4), i);
        uint32_t *row = &b->subs[(size_t)i * b->nt], n = 0;
        for (uint32_t t = 0; t < b->nt; t++)
            if (pattern == HOMOGENEOUS || (pattern == HALF && rng(&seed) % 2 == 0) ||
                (pattern == NESTED && t <= i % b->nt))
                row[n++] = t;
        if (n == 0)
            row[n++] = (uint32_t)(rng(&seed) % b->nt);
        b->nsub[i] = n;
        b->members[i] = (kc_assign_member_t){
            .id = b->ids[i],
            .id_len = strlen(b->ids[i]),
            .topics = row,
            .n_topics = n,
        };
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Largest minus smallest count over members with a subscription. */
static uint32_t spread(const kc_assign_result_t *r, const kc_assign_member_t *m)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < r->n_members; i++) {
        if (m[i].n_topics == 0)
            continue;
        uint32_t n = 0;
        for (uint32_t j = 0; j < r->members[i].n_topics; j++)
            n += r->members[i].topics[j].n_partitions;
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    return hi >= lo ? hi - lo : 0;
}

/* Time `runs` calls of fn on spec; print one line. Keeps the last result in *keep when given
 * (for use as the next current assignment), frees it otherwise. */
static void measure(const char *assignor, const char *pattern, const char *what, kc_assign_fn fn,
                    const kc_assign_spec_t *spec, int runs, kc_assign_result_t *keep)
{
    double *ms = xcalloc((size_t)runs, sizeof *ms);
    kc_assign_result_t res = {0};
    for (int i = 0; i < runs; i++) {
        kc_assign_result_free(&res);
        double t0 = now_ms();
        int rc = fn(spec, &res);
        ms[i] = now_ms() - t0;
        if (rc != 0) {
            fprintf(stderr, "%s %s %s: error %d\n", assignor, pattern, what, rc);
            exit(1);
        }
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    printf("| %-7s | %-13s | %-7s | %8.2f | %8.2f | %6u | %6u | %6u |\n", assignor, pattern, what,
           ms[runs / 2], ms[0], res.n_moved, res.n_kept, spread(&res, spec->members));
    fflush(stdout);
    free(ms);
    if (keep != NULL)
        *keep = res;
    else
        kc_assign_result_free(&res);
}

int main(int argc, char **argv)
{
    bench_t b = {.nm = 1000, .nt = 100, .per_topic = 100};
    int runs = 9;
    if (argc > 1)
        b.nm = (uint32_t)strtoul(argv[1], NULL, 10);
    if (argc > 2)
        b.nt = (uint32_t)strtoul(argv[2], NULL, 10);
    if (argc > 3)
        b.per_topic = (int32_t)strtol(argv[3], NULL, 10);
    if (argc > 4)
        runs = atoi(argv[4]);
    if (b.nm < 2 || b.nt < 1 || b.per_topic < 0 || runs < 1) {
        fprintf(stderr, "usage: assign_bench [members>=2 [topics>=1 [partitions [runs]]]]\n");
        return 2;
    }

    b.ids = xcalloc((size_t)b.nm + 1, sizeof *b.ids);
    b.subs = xcalloc(((size_t)b.nm + 1) * b.nt, sizeof *b.subs);
    b.nsub = xcalloc((size_t)b.nm + 1, sizeof *b.nsub);
    b.members = xcalloc((size_t)b.nm + 1, sizeof *b.members);
    b.topics = xcalloc(b.nt, sizeof *b.topics);
    b.tnames = xcalloc(b.nt, sizeof *b.tnames);
    for (uint32_t t = 0; t < b.nt; t++) {
        snprintf(b.tnames[t], sizeof b.tnames[t], "topic-%03u", t);
        b.topics[t] = (kc_assign_topic_t){b.tnames[t], strlen(b.tnames[t]), b.per_topic};
    }
    kc_assign_member_t *leave = xcalloc(b.nm, sizeof *leave);

    printf("%u members, %u topics x %d partitions = %llu partitions; median and fastest of %d "
           "runs\n\n",
           b.nm, b.nt, b.per_topic, (unsigned long long)b.nt * (unsigned long long)b.per_topic,
           runs);
    printf("| assignor | subscriptions | change  | median ms | min ms | moved | kept | spread |\n");
    printf("|---|---|---|---:|---:|---:|---:|---:|\n");

    const char *names[] = {"uniform", "range"};
    for (int a = 0; a < 2; a++) {
        const kc_assignor_t *as = kc_assignor_find(names[a], strlen(names[a]));
        for (int pat = 0; pat < NPATTERNS; pat++) {
            const char *pattern = pattern_names[pat];
            setup(&b, pat);
            kc_assign_spec_t spec = {b.members, b.nm, b.topics, b.nt, 0};
            kc_assign_result_t initial;
            measure(as->name, pattern, "initial", as->assign, &spec, runs, &initial);

            /* join: members 0..nm-1 hold the initial result, member nm is new. */
            for (uint32_t i = 0; i < b.nm; i++)
                b.members[i].current = initial.members[i];
            b.members[b.nm].current = (kc_assign_owned_t){NULL, 0};
            spec.n_members = b.nm + 1;
            measure(as->name, pattern, "join", as->assign, &spec, runs, NULL);

            /* leave: the member in the middle of the id order is gone. */
            uint32_t gone = 0;
            for (uint32_t i = 0, below = 0; i < b.nm; i++, below = 0) {
                for (uint32_t j = 0; j < b.nm; j++)
                    below += strcmp(b.ids[j], b.ids[i]) < 0;
                if (below == b.nm / 2) {
                    gone = i;
                    break;
                }
            }
            uint32_t n = 0;
            for (uint32_t i = 0; i < b.nm; i++)
                if (i != gone)
                    leave[n++] = b.members[i];
            kc_assign_spec_t lspec = {leave, n, b.topics, b.nt, 0};
            measure(as->name, pattern, "leave", as->assign, &lspec, runs, NULL);

            /* shuffle: member i holds what member (7i + 1) mod N got: with heterogeneous
             * subscriptions most of it is no longer subscribed or unbalanced. */
            for (uint32_t i = 0; i < b.nm; i++)
                b.members[i].current = initial.members[((uint64_t)i * 7 + 1) % b.nm];
            spec.n_members = b.nm;
            measure(as->name, pattern, "shuffle", as->assign, &spec, runs, NULL);

            for (uint32_t i = 0; i <= b.nm; i++)
                b.members[i].current = (kc_assign_owned_t){NULL, 0};
            kc_assign_result_free(&initial);
        }
    }

    free(leave);
    free(b.ids);
    free(b.subs);
    free(b.nsub);
    free(b.members);
    free(b.topics);
    free(b.tnames);
    return 0;
}
