/* test_arena.c - unit tests for the per-request bump allocator in src/util/arena.c.
 *
 * Covers alignment, zero-filling (including memory reused after a reset), the byte limit,
 * reset and free, many small allocations that must not overlap, and allocations larger than
 * any block the arena would grow to by itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return false;
    return true;
}

static void test_init_allocates_nothing(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    assert_null(a.head);
    assert_int_equal(a.used, 0);
    assert_int_equal(a.total, 0);
    assert_int_equal(a.limit, 0);
    kc_arena_reset(&a); /* reset and free of an empty arena are no-ops */
    kc_arena_free(&a);
    assert_null(a.head);
}

static void test_alignment(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    for (size_t n = 0; n < 200; n++) {
        void *p = kc_arena_alloc(&a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
    }
    /* Odd sizes interleaved with a type that needs alignment. */
    for (int i = 0; i < 1000; i++) {
        char *c = kc_arena_alloc(&a, (size_t)(i % 7) + 1);
        long double *d = kc_arena_alloc(&a, sizeof *d);
        assert_non_null(c);
        assert_non_null(d);
        assert_int_equal((uintptr_t)d % _Alignof(long double), 0);
        assert_int_equal((uintptr_t)d % 16, 0);
        *d = (long double)i;
    }
    kc_arena_free(&a);
}

static void test_zero_filled(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    unsigned char *ptrs[64];
    for (size_t i = 0; i < 64; i++) {
        ptrs[i] = kc_arena_alloc(&a, 100 + i);
        assert_non_null(ptrs[i]);
        assert_true(all_zero(ptrs[i], 100 + i));
        memset(ptrs[i], 0xaa, 100 + i);
    }
    /* After a reset the same memory is handed out again and must be zero again. */
    kc_arena_reset(&a);
    for (size_t i = 0; i < 64; i++) {
        unsigned char *p = kc_arena_alloc(&a, 100 + i);
        assert_non_null(p);
        assert_true(all_zero(p, 100 + i));
        memset(p, 0x55, 100 + i);
    }
    kc_arena_reset(&a);
    unsigned char *p = kc_arena_alloc(&a, 4000);
    assert_non_null(p);
    assert_true(all_zero(p, 4000));
    kc_arena_free(&a);
}

static void test_dup(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    const char msg[] = "consumer-group-1";
    char *d = kc_arena_dup(&a, msg, sizeof msg);
    assert_non_null(d);
    assert_ptr_not_equal(d, msg);
    assert_string_equal(d, msg);
    assert_int_equal((uintptr_t)d % 16, 0);
    assert_non_null(kc_arena_dup(&a, NULL, 0));
    a.limit = a.total + 3;
    assert_null(kc_arena_dup(&a, msg, sizeof msg));
    kc_arena_free(&a);
}

static void test_limit(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    a.limit = 100;
    assert_non_null(kc_arena_alloc(&a, 60));
    assert_false(a.over_limit);
    assert_null(kc_arena_alloc(&a, 41)); /* 101 > 100 */
    assert_true(a.over_limit);           /* the limit, not memory, refused it */
    assert_int_equal(a.total, 60);
    assert_non_null(kc_arena_alloc(&a, 40)); /* exactly at the limit */
    assert_int_equal(a.total, 100);
    assert_null(kc_arena_alloc(&a, 1));
    assert_non_null(kc_arena_alloc(&a, 0));
    assert_null(kc_arena_alloc(&a, SIZE_MAX));

    /* A reset starts counting again. */
    kc_arena_reset(&a);
    assert_int_equal(a.total, 0);
    assert_non_null(kc_arena_alloc(&a, 100));
    assert_null(kc_arena_alloc(&a, 1));

    /* A limit far above one block still applies across blocks. */
    kc_arena_free(&a);
    kc_arena_init(&a);
    a.limit = 1 << 20;
    size_t got = 0;
    while (kc_arena_alloc(&a, 1000) != NULL)
        got += 1000;
    assert_int_equal(got, ((size_t)1 << 20) / 1000 * 1000);
    assert_true(a.total <= a.limit);
    kc_arena_free(&a);
}

static void test_overflowing_sizes(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    assert_null(kc_arena_alloc(&a, SIZE_MAX));
    assert_null(kc_arena_alloc(&a, SIZE_MAX - 15));
    assert_null(kc_arena_alloc(&a, SIZE_MAX - 64));
    assert_int_equal(a.total, 0);
    /* The arena still works afterwards. */
    assert_non_null(kc_arena_alloc(&a, 16));
    assert_null(kc_arena_alloc(&a, SIZE_MAX - 100));
    assert_non_null(kc_arena_alloc(&a, 16));
    kc_arena_free(&a);
}

static void test_reset_reuses(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    void *first = kc_arena_alloc(&a, 32);
    assert_non_null(first);
    for (int i = 0; i < 1000; i++)
        assert_non_null(kc_arena_alloc(&a, 512));
    assert_int_equal(a.total, 32 + 1000 * 512);
    kc_arena_reset(&a);
    assert_non_null(a.head);
    assert_int_equal(a.used, 0);
    assert_int_equal(a.total, 0);
    /* The first block is kept: the next allocation comes from where the first one did. */
    assert_ptr_equal(kc_arena_alloc(&a, 32), first);
    kc_arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.total, 0);

    /* Free, then use again after init. */
    kc_arena_init(&a);
    assert_non_null(kc_arena_alloc(&a, 8));
    kc_arena_free(&a);
}

struct rec {
    unsigned char *p;
    size_t n;
};

static void test_many_allocations(void **state)
{
    (void)state;
    enum { N = 100000 };
    struct rec *recs = malloc(N * sizeof *recs);
    assert_non_null(recs);
    kc_arena_t a;
    kc_arena_init(&a);
    size_t want_total = 0;
    for (size_t i = 0; i < N; i++) {
        size_t n = (i * 7919) % 300; /* 0..299 bytes */
        recs[i].p = kc_arena_alloc(&a, n);
        recs[i].n = n;
        assert_non_null(recs[i].p);
        assert_int_equal((uintptr_t)recs[i].p % 16, 0);
        memset(recs[i].p, (int)(i & 0xff), n);
        want_total += n;
    }
    assert_int_equal(a.total, want_total);
    /* No allocation overlapped another: each still holds its own pattern. */
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < recs[i].n; j++)
            assert_int_equal(recs[i].p[j], i & 0xff);
    kc_arena_free(&a);
    free(recs);
}

static void test_large_allocation(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    unsigned char *small = kc_arena_alloc(&a, 10);
    assert_non_null(small);
    memset(small, 1, 10);

    size_t big_n = (size_t)10 << 20; /* 10 MiB: larger than any block the arena grows to */
    unsigned char *big = kc_arena_alloc(&a, big_n);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % 16, 0);
    assert_true(all_zero(big, big_n));
    memset(big, 2, big_n);
    assert_int_equal(big[0], 2);
    assert_int_equal(big[big_n - 1], 2);

    /* Small allocations keep working after it and do not land inside it. */
    unsigned char *after = kc_arena_alloc(&a, 64);
    assert_non_null(after);
    assert_true(all_zero(after, 64));
    assert_true(after + 64 <= big || after >= big + big_n);
    assert_int_equal(small[9], 1);
    assert_int_equal(a.total, 10 + big_n + 64);

    /* After a reset the big block is gone; the first one is reused. */
    kc_arena_reset(&a);
    assert_ptr_equal(kc_arena_alloc(&a, 10), small);
    kc_arena_free(&a);
}

static void test_large_first_allocation(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    size_t n = (size_t)3 << 20;
    unsigned char *p = kc_arena_alloc(&a, n);
    assert_non_null(p);
    assert_true(all_zero(p, n));
    memset(p, 0xff, n);
    kc_arena_reset(&a);
    p = kc_arena_alloc(&a, n);
    assert_non_null(p);
    assert_true(all_zero(p, n));
    kc_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_allocates_nothing),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_zero_filled),
        cmocka_unit_test(test_dup),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_overflowing_sizes),
        cmocka_unit_test(test_reset_reuses),
        cmocka_unit_test(test_many_allocations),
        cmocka_unit_test(test_large_allocation),
        cmocka_unit_test(test_large_first_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
