/* test_arena_pool.c - arena blocks from the block pool: many arenas held at once (as parked
 * requests are), freed in another order, reused, and used from several threads at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/arena.h"

enum { N = 20000 };

/* Fill an arena with a pattern derived from `seed`, over several blocks of several classes. */
static void fill(kc_arena_t *a, size_t first, unsigned seed, unsigned char **p, size_t *n)
{
    kc_arena_init_sized(a, first);
    *n = 64 + (seed % 3000);
    *p = kc_arena_alloc(a, *n);
    assert_non_null(*p);
    memset(*p, (int)(seed & 0xff), *n);
    /* More blocks: the arena doubles from its first block. */
    for (int i = 0; i < 4; i++)
        assert_non_null(kc_arena_alloc(a, first + (size_t)i * 700));
}

static void check(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed & 0xff))
            fail_msg("byte %zu of arena %u overwritten", i, seed);
}

static void test_many_held_then_freed(void **state)
{
    (void)state;
    kc_arena_t *a = calloc(N, sizeof(*a));
    unsigned char **p = calloc(N, sizeof(*p));
    size_t *n = calloc(N, sizeof(*n));
    assert_non_null(a);
    assert_non_null(p);
    assert_non_null(n);
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i < N; i++)
            fill(&a[i], 200 + (i % 5) * 900, i, &p[i], &n[i]);
        /* Free every other one, check the rest, then free them too (holes, then empties). */
        for (unsigned i = 0; i < N; i += 2)
            kc_arena_free(&a[i]);
        for (unsigned i = 1; i < N; i += 2)
            check(p[i], n[i], i);
        for (unsigned i = 1; i < N; i += 2)
            kc_arena_free(&a[i]);
    }
    free(a);
    free(p);
    free(n);
}

static void *worker(void *arg)
{
    unsigned base = (unsigned)(uintptr_t)arg;
    kc_arena_t a[64];
    unsigned char *p[64];
    size_t n[64];
    for (int round = 0; round < 200; round++) {
        for (unsigned i = 0; i < 64; i++)
            fill(&a[i], 300 + i * 37, base + i, &p[i], &n[i]);
        for (unsigned i = 0; i < 64; i++) {
            check(p[i], n[i], base + i);
            kc_arena_free(&a[i]);
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(i * 1000)), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_held_then_freed),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
