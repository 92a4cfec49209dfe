/* log.c - the stderr diagnostic log declared in log.h.
 *
 * A line is assembled whole (timestamp, level, module, message, newline) in a stack buffer, or
 * in a heap buffer when the message is long, and handed to stderr in one fwrite so that lines
 * from different threads stay whole. The level lives in an atomic so that worker threads (the
 * log cleaner) can read it while the main thread changes it.
 *
 * To add a level: extend kc_log_level_t, then level_names below (five characters, padded).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, gmtime_r, strcasecmp */
#endif

#include "util/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LINE_STACK 1024

static _Atomic int cur_level = KC_LOG_INFO;

static const char *const level_names[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};

void kc_log_set_level(kc_log_level_t lvl)
{
    atomic_store_explicit(&cur_level, (int)lvl, memory_order_relaxed);
}

kc_log_level_t kc_log_get_level(void)
{
    return (kc_log_level_t)atomic_load_explicit(&cur_level, memory_order_relaxed);
}

int kc_log_parse_level(const char *s, kc_log_level_t *out)
{
    static const struct {
        const char *name;
        kc_log_level_t lvl;
    } names[] = {
        {"debug", KC_LOG_DEBUG},
        {"info", KC_LOG_INFO},
        {"warn", KC_LOG_WARN},
        {"error", KC_LOG_ERROR},
    };
    if (s == NULL)
        return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].lvl;
            return 0;
        }
    }
    return -1;
}

/* Write the line prefix ("<time> <LEVEL> <module>: ") into buf, truncated to cap like
 * snprintf. Returns the number of characters the whole prefix needs, or -1 on error. */
static int format_prefix(char *buf, size_t cap, kc_log_level_t lvl, const char *module)
{
    struct timespec ts;
    struct tm tm;
    char when[32];
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || gmtime_r(&ts.tv_sec, &tm) == NULL) {
        memset(&tm, 0, sizeof tm);
        ts.tv_nsec = 0;
    }
    if (strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        when[0] = '\0';
    const char *name =
        (unsigned)lvl < sizeof level_names / sizeof level_names[0] ? level_names[lvl] : "?????";
    return snprintf(buf, cap, "%s.%03ldZ %s %s: ", when, (long)(ts.tv_nsec / 1000000), name,
                    module != NULL ? module : "-");
}

/* Make the message one line: drop one trailing newline, turn other CR/LF into spaces. */
static size_t one_line(char *msg, size_t n)
{
    if (n > 0 && msg[n - 1] == '\n')
        n--;
    if (n > 0 && msg[n - 1] == '\r')
        n--;
    for (size_t i = 0; i < n; i++)
        if (msg[i] == '\n' || msg[i] == '\r')
            msg[i] = ' ';
    return n;
}

void kc_log_write(kc_log_level_t lvl, const char *module, const char *fmt, ...)
{
    if (lvl < kc_log_get_level())
        return;

    char stack[LINE_STACK];
    char *buf = stack;
    size_t cap = sizeof stack;

    int pre = format_prefix(buf, cap, lvl, module);
    if (pre < 0)
        return;
    if ((size_t)pre >= cap - 1)
        pre = (int)(cap - 2); /* an absurd module name: keep what fits */

    va_list ap;
    va_start(ap, fmt);
    int msg = vsnprintf(buf + pre, cap - (size_t)pre, fmt, ap);
    va_end(ap);
    if (msg < 0)
        msg = 0;

    size_t need = (size_t)pre + (size_t)msg + 2; /* + newline + NUL */
    if (need > cap) {
        char *big = malloc(need);
        if (big != NULL) {
            memcpy(big, buf, (size_t)pre);
            va_start(ap, fmt);
            vsnprintf(big + pre, need - (size_t)pre, fmt, ap);
            va_end(ap);
            buf = big;
            cap = need;
        } else {
            msg = (int)(cap - (size_t)pre - 2); /* truncate into the stack buffer */
        }
    }

    size_t len = (size_t)pre + one_line(buf + pre, (size_t)msg);
    buf[len++] = '\n';
    fwrite(buf, 1, len, stderr);
    if (buf != stack)
        free(buf);
}

void kc_log_sanitize(char *dst, size_t dstlen, const void *src, size_t n)
{
    if (dstlen == 0)
        return;
    const unsigned char *s = src;
    if (n > dstlen - 1)
        n = dstlen - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = (s[i] >= 0x20 && s[i] <= 0x7e) ? (char)s[i] : '.';
    dst[n] = '\0';
}
