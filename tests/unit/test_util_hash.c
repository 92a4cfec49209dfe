/* test_util_hash.c - util/hash.h: the shared hashes return what they always returned (topic ids
 * and on-disk choices depend on them), and util/container.h recovers the owner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/container.h"
#include "util/hash.h"

static void test_fnv1a(void **state)
{
    (void)state;
    /* The FNV-1a 64 reference values. */
    assert_true(kc_hash_fnv1a(KC_HASH_FNV1A_SEED, "", 0) == UINT64_C(0xcbf29ce484222325));
    assert_true(kc_hash_fnv1a(KC_HASH_FNV1A_SEED, "a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
    assert_true(kc_hash_fnv1a(KC_HASH_FNV1A_SEED, "foobar", 6) == UINT64_C(0x85944171f73967e8));
    /* Continuing from a prefix's hash is hashing the whole. */
    uint64_t h = kc_hash_fnv1a(KC_HASH_FNV1A_SEED, "foo", 3);
    assert_true(kc_hash_fnv1a(h, "bar", 3) == UINT64_C(0x85944171f73967e8));
    assert_true(kc_hash_fold(UINT64_C(0x85944171f73967e8)) ==
                (UINT64_C(0x85944171f73967e8) ^ (UINT64_C(0x85944171f73967e8) >> 29)));
}

static void test_mixers(void **state)
{
    (void)state;
    assert_true(kc_hash_fmix64(0) == 0);
    assert_true(kc_hash_mix64(0) == 0);
    /* splitmix64's first output for seed 0 is mix64(0x9e3779b97f4a7c15). */
    assert_true(kc_hash_mix64(UINT64_C(0x9e3779b97f4a7c15)) == UINT64_C(0xe220a8397b1dcdaf));
    assert_true(kc_hash_fmix64(1) != kc_hash_fmix64(2));
}

typedef struct outer_s {
    int a;
    double b;
    char c[3];
} outer_t;

static void test_container_of(void **state)
{
    (void)state;
    outer_t o;
    assert_ptr_equal(container_of(&o.c[0], outer_t, c), &o);
    assert_ptr_equal(container_of(&o.b, outer_t, b), &o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv1a),
        cmocka_unit_test(test_mixers),
        cmocka_unit_test(test_container_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
