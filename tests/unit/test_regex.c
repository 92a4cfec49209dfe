/* test_regex.c - subscription regexes (src/group/regex.h): the checks before RE2, RE2 behind
 * the C interface, and the cache's bounds.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "group/regex.h"

static char *nested(size_t depth)
{
    char *p = malloc(depth * 2 + 2);
    assert_non_null(p);
    memset(p, '(', depth);
    p[depth] = 'a';
    memset(p + depth + 1, ')', depth);
    p[depth * 2 + 1] = '\0';
    return p;
}

static bool full(const char *rx, const char *s)
{
    char why[128];
    kc_rx_t *r = kc_rx_compile(rx, strlen(rx), KC_RX_MAX_MEM, why, sizeof(why));
    assert_non_null(r);
    bool m = kc_rx_full_match(r, s, strlen(s));
    kc_rx_free(r);
    return m;
}

static const char *refusal(const char *rx)
{
    static char why[128];
    kc_rx_t *r = kc_rx_compile(rx, strlen(rx), KC_RX_MAX_MEM, why, sizeof(why));
    if (r) {
        kc_rx_free(r);
        return NULL;
    }
    return why;
}

static void test_syntax(void **state)
{
    (void)state;
    assert_true(full(".*(?:(?:P)).*", "aPb"));
    assert_false(full(".*(?:(?:P)).*", "ab"));
    assert_true(full("(?i)orders\\.eu", "ORDERS.eu"));
    assert_true(full("orders-\\d+", "orders-12"));
    assert_false(full("order", "orders")); /* whole names, as matches() */
    assert_true(full("(?P<n>t)[0-9]{1,3}", "t123"));
    assert_true(full("[[:alpha:]]+", "abc"));
    assert_string_equal(refusal("(.*)\\1"), "invalid escape sequence");
    assert_string_equal(refusal("a{0,1001}"), "invalid repeat count");
    assert_null(refusal("a{0,1000}"));
    assert_string_equal(refusal("a{0,3000}"), "invalid repeat count");
    assert_string_equal(refusal("(abc"), "missing closing )");
    assert_string_equal(refusal("abc)"), "unexpected )");
    assert_string_equal(refusal("[a"), "missing closing ]");
    assert_string_equal(refusal("a**"), "invalid nested repetition operator");
    assert_string_equal(refusal("*"), "missing argument to repetition operator");
    assert_string_equal(refusal("\\"), "trailing backslash at end of expression");
    assert_string_equal(refusal("(?<=a)b"), "invalid or unsupported Perl syntax");
}

/* RE2 keeps its own stacks: 20 000 nested parentheses compile on a 128 KB thread stack. */
static void *compile_deep(void *arg)
{
    char why[128];
    char *p = arg;
    kc_rx_t *r = kc_rx_compile(p, strlen(p), KC_RX_MAX_MEM, why, sizeof(why));
    kc_rx_free(r);
    return NULL;
}

static void test_nesting(void **state)
{
    (void)state;
    char why[128];
    char *deep = nested(20000);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 128 * 1024);
    pthread_t th;
    assert_int_equal(pthread_create(&th, &at, compile_deep, deep), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&at);
    /* ... and kcoord refuses them before RE2 anyway. */
    assert_int_equal(kc_rx_precheck(deep, strlen(deep), -1, why, sizeof(why)), -1);
    assert_string_equal(why, "expression nests too deeply");
    free(deep);
    char *ok = nested(KC_RX_MAX_NESTING);
    assert_int_equal(kc_rx_precheck(ok, strlen(ok), -1, why, sizeof(why)), 0);
    free(ok);
    /* Parentheses in classes, escaped or quoted do not nest. */
    char many[3 * 2000 + 16];
    size_t w = 0;
    for (int i = 0; i < 2000; i++)
        w += (size_t)sprintf(many + w, "\\(");
    assert_int_equal(kc_rx_precheck(many, w, -1, why, sizeof(why)), 0);
    assert_int_equal(kc_rx_precheck("[(]\\Q((\\E", 9, -1, why, sizeof(why)), 0);
    assert_int_equal(kc_rx_precheck("a\0b", 3, -1, why, sizeof(why)), -1);
}

static void test_length_cap(void **state)
{
    (void)state;
    kc_rx_cache_t *c = kc_rx_cache_new(16384, 10);
    assert_non_null(c);
    char *alt = malloc(110000);
    size_t w = 0;
    for (int i = 0; w < 100000; i++)
        w += (size_t)sprintf(alt + w, "%stopic-%d", i ? "|" : "", i);
    char why[256];
    assert_int_equal(kc_rx_cache_check(c, alt, w, why, sizeof(why)), KC_RX_INVALID);
    assert_non_null(strstr(why, "longer than group.consumer.regex.max.bytes (16384)"));
    assert_int_equal(kc_rx_cache_compiled(c), 0);
    assert_int_equal(kc_rx_cache_check(c, alt, 16000, why, sizeof(why)), KC_RX_OK);
    free(alt);
    kc_rx_cache_free(c);
}

/* At most max_count patterns in use; patterns nobody uses stay compiled, at most max_count. */
static void test_count_cap(void **state)
{
    (void)state;
    kc_rx_cache_t *c = kc_rx_cache_new(100, 2);
    char why[256];
    kc_rx_cache_ref(c, "a", 1);
    kc_rx_cache_ref(c, "b", 1);
    kc_rx_cache_ref(c, "b", 1);
    assert_int_equal(kc_rx_cache_in_use(c), 2);
    assert_int_equal(kc_rx_cache_check(c, "c", 1, why, sizeof(why)), KC_RX_FULL);
    assert_non_null(strstr(why, "2 distinct"));
    assert_int_equal(kc_rx_cache_check(c, "a", 1, why, sizeof(why)), KC_RX_OK);
    assert_int_equal(kc_rx_cache_check(c, "(", 1, why, sizeof(why)), KC_RX_INVALID);
    kc_rx_cache_unref(c, "b", 1);
    assert_int_equal(kc_rx_cache_check(c, "c", 1, why, sizeof(why)), KC_RX_FULL);
    kc_rx_cache_unref(c, "b", 1);
    assert_int_equal(kc_rx_cache_in_use(c), 1);
    assert_int_equal(kc_rx_cache_check(c, "c", 1, why, sizeof(why)), KC_RX_OK);
    /* Resolution compiles once and keeps at most 2 idle patterns. */
    char p[16];
    for (int i = 0; i < 50; i++) {
        kc_rx_t *owned;
        bool oom = false;
        int n = snprintf(p, sizeof(p), "x%d.*", i);
        const kc_rx_t *rx = kc_rx_cache_get(c, p, (size_t)n, &owned, &oom);
        assert_non_null(rx);
        assert_false(oom);
        assert_null(owned);
        assert_true(kc_rx_full_match(rx, p, 2 + (i >= 10)));
    }
    assert_true(kc_rx_cache_compiled(c) <= 3); /* "a" in use + 2 idle */
    /* Unknown patterns' unref and a pattern that does not compile. */
    kc_rx_cache_unref(c, "zz", 2);
    kc_rx_t *owned;
    bool oom = false;
    assert_null(kc_rx_cache_get(c, "(", 1, &owned, &oom));
    assert_false(oom);
    kc_rx_cache_unref(c, "a", 1);
    assert_int_equal(kc_rx_cache_in_use(c), 0);
    kc_rx_cache_free(c);

    /* Idle patterns: at most KC_RX_IDLE_MAX, whatever max_count. */
    c = kc_rx_cache_new(100, 1000);
    for (int i = 0; i < 200; i++) {
        char why[128];
        int n = snprintf(p, sizeof(p), "y%d", i);
        assert_int_equal(kc_rx_cache_check(c, p, (size_t)n, why, sizeof(why)), KC_RX_OK);
    }
    assert_int_equal(kc_rx_cache_compiled(c), KC_RX_IDLE_MAX);
    kc_rx_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_length_cap),
        cmocka_unit_test(test_count_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
