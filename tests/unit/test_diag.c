/* test_diag.c - the diagnostic log of src/util/diag.c: the JSON line format (log.format=json),
 * the escaper it shares with the HTTP API's JSON, the format setting, and the rate limit of
 * repeated lines (counted on a fake monotonic clock).
 *
 * Lines are built with kc_diag_json_line at a fixed time and compared whole; kc_diag_write is
 * checked by pointing stderr at a temporary file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/diag.h"

/* 2026-12-02T16:42:57.123Z */
#define TS 1796229777123LL

typedef struct buf_s {
    char b[4096];
    size_t n;
} buf_t;

static void put(void *arg, const char *s, size_t n)
{
    buf_t *b = arg;
    assert_true(b->n + n < sizeof(b->b));
    memcpy(b->b + b->n, s, n);
    b->n += n;
    b->b[b->n] = '\0';
}

/* The escaped form of the n bytes at s. */
static const char *esc(const char *s, size_t n)
{
    static buf_t b;
    b.n = 0;
    b.b[0] = '\0';
    kc_diag_json_escape(s, n, put, &b);
    return b.b;
}

#define ESC(lit) esc((lit), sizeof(lit) - 1)

static void test_escape(void **state)
{
    (void)state;
    assert_string_equal(ESC(""), "");
    assert_string_equal(ESC("plain text 123"), "plain text 123");
    assert_string_equal(ESC("a\"b\\c/d"), "a\\\"b\\\\c/d");
    assert_string_equal(ESC("\n\r\t\b\f"), "\\n\\r\\t\\b\\f");
    assert_string_equal(ESC("\x01\x1f\x7f"), "\\u0001\\u001f\\u007f");
    assert_string_equal(ESC("nul\0byte"), "nul\\u0000byte");
    /* Valid UTF-8 of every length is kept. */
    assert_string_equal(ESC("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                        "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* Everything else becomes U+FFFD, one per byte that does not start a valid sequence. */
    assert_string_equal(ESC("\xff"), "\\ufffd");
    assert_string_equal(ESC("a\x80z"), "a\\ufffdz");                   /* stray continuation */
    assert_string_equal(ESC("\xe2\x82"), "\\ufffd\\ufffd");            /* truncated at the end */
    assert_string_equal(ESC("\xe2\x82z"), "\\ufffd\\ufffdz");          /* truncated */
    assert_string_equal(ESC("\xc0\xaf"), "\\ufffd\\ufffd");            /* overlong '/' */
    assert_string_equal(ESC("\xe0\x80\xaf"), "\\ufffd\\ufffd\\ufffd"); /* overlong */
    assert_string_equal(ESC("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd"); /* a surrogate */
    assert_string_equal(ESC("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd"); /* > U+10FFFF */
    assert_string_equal(ESC("\xf5"), "\\ufffd");
    assert_string_equal(ESC("\xed\x9f\xbf\xf4\x8f\xbf\xbf"), "\xed\x9f\xbf\xf4\x8f\xbf\xbf");
}

static void test_json_line(void **state)
{
    (void)state;
    char buf[512];
    const char *msg = "group \"g\" rebalance\nline two\t\x01\xff";
    size_t n = kc_diag_json_line(buf, sizeof(buf), TS, KC_DIAG_INFO, "group", msg, strlen(msg));
    const char *want =
        "{\"ts\":\"2026-12-02T16:42:57.123Z\",\"level\":\"info\",\"module\":\"group\","
        "\"msg\":\"group \\\"g\\\" rebalance\\nline two\\t\\u0001\\ufffd\"}\n";
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));

    /* Every level; a NULL module is "-"; milliseconds are zero-padded. */
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int l = KC_DIAG_DEBUG; l <= KC_DIAG_ERROR; l++) {
        kc_diag_json_line(buf, sizeof(buf), 1000LL * 86400 + 7, (kc_diag_level_t)l, NULL, "x", 1);
        char w[160];
        snprintf(w, sizeof(w),
                 "{\"ts\":\"1970-01-02T00:00:00.007Z\",\"level\":\"%s\",\"module\":\"-\","
                 "\"msg\":\"x\"}\n",
                 names[l]);
        assert_string_equal(buf, w);
    }

    /* Too small a buffer: cut short but terminated, and the length needed is returned. */
    char small[16];
    size_t need = kc_diag_json_line(small, sizeof(small), TS, KC_DIAG_WARN, "m", "hello", 5);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    size_t full = kc_diag_json_line(buf, sizeof(buf), TS, KC_DIAG_WARN, "m", "hello", 5);
    assert_int_equal(need, full);
    assert_memory_equal(small, buf, sizeof(small) - 1);
}

static void test_parse_format(void **state)
{
    (void)state;
    kc_diag_format_t f = KC_DIAG_JSON;
    assert_int_equal(kc_diag_parse_format("text", &f), 0);
    assert_int_equal(f, KC_DIAG_TEXT);
    assert_int_equal(kc_diag_parse_format("JSON", &f), 0);
    assert_int_equal(f, KC_DIAG_JSON);
    assert_int_equal(kc_diag_parse_format("yaml", &f), -1);
    assert_int_equal(kc_diag_parse_format(NULL, &f), -1);
    assert_int_equal(f, KC_DIAG_JSON);
    assert_int_equal(kc_diag_get_format(), KC_DIAG_TEXT); /* the default */
}

/* Capture what kc_diag_write writes to stderr while fn runs. */
static size_t capture(void (*fn)(void), char *out, size_t cap)
{
    char path[] = "/tmp/kc-util-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n >= 0);
    out[n] = '\0';
    return (size_t)n;
}

static void write_some(void)
{
    kc_diag_set_level(KC_DIAG_INFO);
    kc_diag_set_format(KC_DIAG_JSON);
    KC_DEBUG("net", "filtered out");
    KC_INFO("net", "closing %s: %s", "10.0.0.7:5555", "peer said \"bye\"\n");
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    KC_WARN("coord", "%s", big); /* longer than the stack buffers */
    kc_diag_set_format(KC_DIAG_TEXT);
    KC_ERROR("main", "text again");
    kc_diag_set_level(KC_DIAG_ERROR);
}

static void test_write_json(void **state)
{
    (void)state;
    static char out[16384];
    capture(write_some, out, sizeof(out));
    /* Line 1: the info line; its trailing newline is dropped, the quotes escaped. */
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    *nl = '\0';
    assert_int_equal(strncmp(out, "{\"ts\":\"20", 9), 0);
    assert_int_equal(strlen(out),
                     strlen("{\"ts\":\"2026-12-02T16:42:57.123Z\",") +
                         strlen("\"level\":\"info\",\"module\":\"net\",\"msg\":\"closing "
                                "10.0.0.7:5555: peer said \\\"bye\\\"\"}"));
    assert_non_null(strstr(out, "Z\",\"level\":\"info\",\"module\":\"net\",\"msg\":\"closing "
                                "10.0.0.7:5555: peer said \\\"bye\\\"\"}"));
    /* Line 2: the long one, whole. */
    char *l2 = nl + 1;
    nl = strchr(l2, '\n');
    assert_non_null(nl);
    *nl = '\0';
    assert_non_null(strstr(l2, "\"level\":\"warn\",\"module\":\"coord\",\"msg\":\"xxx"));
    assert_int_equal(strlen(strstr(l2, "\"msg\":\"")), strlen("\"msg\":\"\"}") + 2999);
    /* Line 3: back to text. */
    char *l3 = nl + 1;
    assert_non_null(strstr(l3, " ERROR main: text again\n"));
    assert_null(strstr(out, "filtered out"));
}

/* ---- Repeated lines ------------------------------------------------------------------------ */

static int64_t fake_ms;
static int64_t fake_clock(void)
{
    return fake_ms;
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *l = s; *l != '\0';) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        if (needle == NULL || strstr(line, needle) != NULL)
            n++;
        l += len + (nl != NULL);
    }
    return n;
}

/* A full disk: one failure per write, 20 000 of them within 5 s, from one call site with a
 * different partition each time, then silence, then one more much later. */
static void storm(void)
{
    kc_diag_set_level(KC_DIAG_INFO);
    kc_diag_set_repeat_clock(fake_clock);
    fake_ms = 1000000;
    for (int i = 0; i < 20000; i++) {
        fake_ms = 1000000 + i / 4; /* 4 lines per millisecond */
        KC_ERROR_LIMITED("coord", "partition %d: log write failed: %s", i % 50,
                         "No space left on device");
        KC_WARN_LIMITED("net", "another call site %d", i); /* its own key */
    }
    /* Before the interval ends nothing more is written. */
    kc_diag_repeat_flush();
    fake_ms = 1000000 + 5000;
    kc_diag_repeat_flush(); /* now both summaries */
    kc_diag_repeat_flush(); /* and nothing twice */
    fake_ms += 60000;
    KC_ERROR_LIMITED("coord", "the disk is back");
    kc_diag_set_repeat_clock(NULL);
    kc_diag_set_level(KC_DIAG_ERROR);
}

static void test_repeated_lines(void **state)
{
    (void)state;
    static char out[65536];
    capture(storm, out, sizeof(out));
    /* 2 first lines + 2 summaries + 1 later line, of 40 000 calls. */
    assert_int_equal(count_lines(out, NULL), 5);
    assert_int_equal(count_lines(out, "ERROR coord: partition 0: log write failed: No space"), 1);
    assert_int_equal(
        count_lines(out, "ERROR coord: partition 49: log write failed: No space left on device "
                         "... repeated 19999 times in the last 5 s"),
        1);
    assert_int_equal(count_lines(out, "WARN  net: another call site 0"), 1);
    assert_int_equal(
        count_lines(out, "WARN  net: another call site 19999 ... repeated 19999 times in the last"),
        1);
    assert_int_equal(count_lines(out, "ERROR coord: the disk is back"), 1);
    assert_int_equal(count_lines(out, "repeated"), 2);
}

/* The summary also comes with the next line when nobody flushes, in JSON too. */
static void storm_json(void)
{
    kc_diag_set_level(KC_DIAG_INFO);
    kc_diag_set_format(KC_DIAG_JSON);
    kc_diag_set_repeat_clock(fake_clock);
    for (int i = 0; i < 1000; i++) {
        fake_ms = 5000000 + i * 11; /* 11 s in all: two intervals */
        KC_ERROR_LIMITED("coord", "write %d failed", i);
    }
    kc_diag_set_repeat_interval(0); /* off: every line */
    for (int i = 0; i < 3; i++)
        KC_ERROR_LIMITED("coord", "unlimited %d", i);
    kc_diag_set_repeat_interval(5000);
    kc_diag_set_repeat_clock(NULL);
    kc_diag_set_format(KC_DIAG_TEXT);
    kc_diag_set_level(KC_DIAG_ERROR);
}

static void test_repeated_lines_json(void **state)
{
    (void)state;
    static char out[65536];
    capture(storm_json, out, sizeof(out));
    /* write 0 at 0 s; 1..454 dropped; at 5.005 s a summary and write 455; 456..909 dropped;
     * at 10.010 s a summary and write 910; 911..999 dropped (flushed later by anyone). */
    assert_int_equal(count_lines(out, NULL), 5 + 3);
    assert_int_equal(count_lines(out, "{\"ts\":\""), 8);
    assert_int_equal(count_lines(out, "\"level\":\"error\",\"module\":\"coord\","
                                      "\"msg\":\"write 454 failed ... repeated 454 times in "
                                      "the last 5 s\"}"),
                     1);
    assert_int_equal(count_lines(out, "\"msg\":\"write 455 failed\"}"), 1);
    assert_int_equal(count_lines(out, "\"msg\":\"write 909 failed ... repeated 454 times"), 1);
    assert_int_equal(count_lines(out, "\"msg\":\"write 910 failed\"}"), 1);
    assert_int_equal(count_lines(out, "unlimited"), 3);
}

int main(void)
{
    kc_diag_set_level(KC_DIAG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),         cmocka_unit_test(test_json_line),
        cmocka_unit_test(test_parse_format),   cmocka_unit_test(test_write_json),
        cmocka_unit_test(test_repeated_lines), cmocka_unit_test(test_repeated_lines_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
