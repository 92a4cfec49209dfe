/* test_coord.c - group placement: kc_partition_for against values computed by Java. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coord/coord.h"

/* Each id's String.hashCode() and abs(hash) % 50 and % 7 as printed by a Java 17 program
 * (Math.abs, with Integer.MIN_VALUE mapped to 0 as Kafka's Utils.abs does). */
static const struct {
    const char *id;
    int32_t mod50, mod7;
} cases[] = {
    {"", 0, 0},
    {"group", 47, 3},
    {"my-group", 12, 1},
    {"consumer-group-1", 20, 6},
    {"group\xc3\xa9", 6, 0},
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x82\xb0\xe3\x83\xab\xe3\x83\xbc\xe3\x83\x97", 31, 3},
    {"emoji\xf0\x9f\x98\x80group", 48, 0}, /* a surrogate pair */
    {"polygenelubricants", 0, 0},          /* hashCode == INT32_MIN */
    {"GydZG_", 0, 0},                      /* hashCode == INT32_MIN */
    {"DESIGNING WORKHOUSES", 0, 0},        /* hashCode == INT32_MIN */
};

static void test_java_hash_placement(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kc_str_t id = kc_str_c(cases[i].id);
        assert_int_equal(kc_partition_for(id, 50), cases[i].mod50);
        assert_int_equal(kc_partition_for(id, 7), cases[i].mod7);
        assert_int_equal(kc_partition_for(id, 1), 0);
    }
}

/* Invalid UTF-8 decodes to U+FFFD as Java's String(bytes, UTF_8) does: Java gives
 * "a\xffb".hashCode() == 2124838 and "x\xc3".hashCode() == 69253. */
static void test_invalid_utf8(void **state)
{
    (void)state;
    assert_int_equal(kc_partition_for(kc_str_c("a\xff"
                                               "b"),
                                      1000003),
                     2124838 % 1000003);
    assert_int_equal(kc_partition_for(kc_str_c("x\xc3"), 1000003), 69253 % 1000003);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_hash_placement),
        cmocka_unit_test(test_invalid_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
