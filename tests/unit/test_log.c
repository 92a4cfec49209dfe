/* test_log.c - unit tests for the diagnostic log in src/util/diag.c.
 *
 * Covers level parsing, the level filter (including that filtered macros do not evaluate their
 * arguments), kc_diag_sanitize, and the exact shape of a written line, captured by pointing
 * file descriptor 2 at a temporary file.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno */
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/diag.h"

static void test_parse_level(void **state)
{
    (void)state;
    kc_diag_level_t lvl = KC_DIAG_ERROR;
    assert_int_equal(kc_diag_parse_level("debug", &lvl), 0);
    assert_int_equal(lvl, KC_DIAG_DEBUG);
    assert_int_equal(kc_diag_parse_level("info", &lvl), 0);
    assert_int_equal(lvl, KC_DIAG_INFO);
    assert_int_equal(kc_diag_parse_level("warn", &lvl), 0);
    assert_int_equal(lvl, KC_DIAG_WARN);
    assert_int_equal(kc_diag_parse_level("error", &lvl), 0);
    assert_int_equal(lvl, KC_DIAG_ERROR);
    assert_int_equal(kc_diag_parse_level("DEBUG", &lvl), 0);
    assert_int_equal(lvl, KC_DIAG_DEBUG);
    assert_int_equal(kc_diag_parse_level("Warn", &lvl), 0);
    assert_int_equal(lvl, KC_DIAG_WARN);

    static const char *const bad[] = {"", "warning", "inf", "debugx", " info", "info ", "3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lvl = KC_DIAG_INFO;
        assert_int_equal(kc_diag_parse_level(bad[i], &lvl), -1);
        assert_int_equal(lvl, KC_DIAG_INFO); /* untouched on failure */
    }
    assert_int_equal(kc_diag_parse_level(NULL, &lvl), -1);
}

static void test_set_get_level(void **state)
{
    (void)state;
    assert_int_equal(kc_diag_get_level(), KC_DIAG_INFO); /* the default */
    kc_diag_set_level(KC_DIAG_ERROR);
    assert_int_equal(kc_diag_get_level(), KC_DIAG_ERROR);
    kc_diag_set_level(KC_DIAG_DEBUG);
    assert_int_equal(kc_diag_get_level(), KC_DIAG_DEBUG);
    kc_diag_set_level(KC_DIAG_INFO);
}

static void test_sanitize(void **state)
{
    (void)state;
    char out[64];

    const unsigned char mixed[] = {'a', 'b', 0x00, 0x01, '\n', 0x7f, 0x80, 0xff, ' ', '~', 'z'};
    kc_diag_sanitize(out, sizeof out, mixed, sizeof mixed);
    assert_string_equal(out, "ab...... ~z");

    /* Truncated to dstlen - 1 bytes and always terminated. */
    kc_diag_sanitize(out, 4, "abcdef", 6);
    assert_string_equal(out, "abc");
    kc_diag_sanitize(out, 7, "abcdef", 6);
    assert_string_equal(out, "abcdef");
    kc_diag_sanitize(out, 6, "abcdef", 6);
    assert_string_equal(out, "abcde");
    kc_diag_sanitize(out, 1, "abcdef", 6);
    assert_string_equal(out, "");

    /* Nothing to copy. */
    kc_diag_sanitize(out, sizeof out, NULL, 0);
    assert_string_equal(out, "");

    /* dstlen 0 writes nothing at all. */
    out[0] = 'Q';
    kc_diag_sanitize(out, 0, "abc", 3);
    assert_int_equal(out[0], 'Q');

    /* Every byte value maps to itself or '.'. */
    unsigned char all[256];
    char all_out[257];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    kc_diag_sanitize(all_out, sizeof all_out, all, sizeof all);
    assert_int_equal(strlen(all_out), 256);
    for (int i = 0; i < 256; i++) {
        char want = (i >= 0x20 && i <= 0x7e) ? (char)i : '.';
        assert_int_equal(all_out[i], want);
    }
}

/* Run `fn` with stderr going to a temporary file and return what it wrote (caller frees). */
static char *capture_stderr(void (*fn)(void))
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), 2) >= 0);
    fn();
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);

    long size;
    assert_int_equal(fseek(tmp, 0, SEEK_END), 0);
    size = ftell(tmp);
    assert_true(size >= 0);
    rewind(tmp);
    char *buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, tmp), (size_t)size);
    buf[size] = '\0';
    fclose(tmp);
    return buf;
}

/* Check "YYYY-MM-DDTHH:MM:SS.mmmZ " at the start of `line`. */
static void assert_timestamp(const char *line)
{
    const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ ";
    for (size_t i = 0; shape[i] != '\0'; i++) {
        if (shape[i] == 'd')
            assert_true(isdigit((unsigned char)line[i]));
        else
            assert_int_equal(line[i], shape[i]);
    }
}

static int evaluated;

static int side_effect(void)
{
    evaluated++;
    return 7;
}

static void write_basic(void)
{
    kc_diag_set_level(KC_DIAG_INFO);
    KC_INFO("net", "hello %d", 42);
    KC_DEBUG("net", "filtered %d", side_effect());
    KC_WARN("group", "rebalance %s", "started");
    KC_ERROR("log", "two\nlines\r\n");
    kc_diag_write(KC_DIAG_DEBUG, "x", "also filtered");
    kc_diag_set_level(KC_DIAG_DEBUG);
    KC_DEBUG(NULL, "debug %d", side_effect());
    kc_diag_set_level(KC_DIAG_INFO);
}

static void test_line_format(void **state)
{
    (void)state;
    evaluated = 0;
    char *out = capture_stderr(write_basic);
    assert_int_equal(evaluated, 1); /* the filtered KC_DEBUG never evaluated its argument */

    const char *want[] = {
        "INFO  net: hello 42",
        "WARN  group: rebalance started",
        "ERROR log: two lines",
        "DEBUG -: debug 7",
    };
    char *line = out;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        assert_timestamp(line);
        assert_string_equal(line + 25, want[i]);
        line = nl + 1;
    }
    assert_string_equal(line, ""); /* nothing else was written */
    free(out);
}

static void write_long(void)
{
    char msg[5000];
    memset(msg, 'm', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    KC_WARN("conn", "%s|end", msg);
}

static void test_long_line(void **state)
{
    (void)state;
    char *out = capture_stderr(write_long);
    size_t n = strlen(out);
    assert_int_equal(n, 25 + strlen("WARN  conn: ") + 4999 + strlen("|end") + 1);
    assert_timestamp(out);
    assert_memory_equal(out + 25, "WARN  conn: mmm", 15);
    assert_memory_equal(out + n - 5, "|end\n", 5);
    assert_null(memchr(out, '\n', n - 1)); /* one line */
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_level), cmocka_unit_test(test_set_get_level),
        cmocka_unit_test(test_sanitize),    cmocka_unit_test(test_line_format),
        cmocka_unit_test(test_long_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
