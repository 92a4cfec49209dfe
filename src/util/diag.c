/* diag.c - the stderr diagnostic log declared in diag.h.
 *
 * A line is assembled whole (timestamp, level, module, message, newline) in a stack buffer, or
 * in a heap buffer when the message is long, and handed to stderr in one fwrite so that lines
 * from different threads stay whole. The level lives in an atomic so that worker threads (the
 * log cleaner) can read it while the main thread changes it.
 *
 * In JSON mode (kc_diag_set_format) the message is formatted first, then the line is built
 * around it by kc_diag_json_line, which escapes it with kc_diag_json_escape; the message goes
 * through the escaper as is, so a newline in it becomes \n rather than a space.
 *
 * Repeated lines (kc_diag_limited): every rate-limited call site is a kc_diag_limit_t in static
 * storage, linked into one list at its first use; one mutex guards them all, and the lines it
 * writes, so a summary and the line after it cannot swap places. The clock is monotonic, so a
 * wall-clock step neither floods nor silences them.
 *
 * To add a level: extend kc_diag_level_t, then level_names and json_level_names below.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, gmtime_r, strcasecmp */
#endif

#include "util/diag.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LINE_STACK 1024

static _Atomic int cur_level = KC_DIAG_INFO;
static _Atomic int cur_format = KC_DIAG_TEXT;

static const char *const level_names[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
static const char *const json_level_names[] = {"debug", "info", "warn", "error"};

void kc_diag_set_format(kc_diag_format_t fmt)
{
    atomic_store_explicit(&cur_format, (int)fmt, memory_order_relaxed);
}

kc_diag_format_t kc_diag_get_format(void)
{
    return (kc_diag_format_t)atomic_load_explicit(&cur_format, memory_order_relaxed);
}

int kc_diag_parse_format(const char *s, kc_diag_format_t *out)
{
    if (s == NULL)
        return -1;
    if (strcasecmp(s, "text") == 0)
        *out = KC_DIAG_TEXT;
    else if (strcasecmp(s, "json") == 0)
        *out = KC_DIAG_JSON;
    else
        return -1;
    return 0;
}

/* The length of the valid UTF-8 sequence at s[0..n), or 0 when it is not one (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void kc_diag_json_escape(const void *src, size_t n, void (*put)(void *arg, const char *s, size_t n),
                         void *arg)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = src;
    size_t run = 0; /* bytes at s[i - run..i) copied as they are, not yet handed to put */
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            run++;
            i++;
            continue;
        }
        size_t seq = c >= 0x80 ? utf8_seq(s + i, n - i) : 0;
        if (seq > 0) {
            run += seq;
            i += seq;
            continue;
        }
        if (run > 0)
            put(arg, (const char *)s + i - run, run);
        run = 0;
        char esc[8];
        size_t elen = 2;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        default:
            if (c >= 0x80) {
                memcpy(esc, "\\ufffd", 6); /* not UTF-8: the replacement character */
            } else {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
            }
            elen = 6;
            break;
        }
        put(arg, esc, elen);
        i++;
    }
    if (run > 0)
        put(arg, (const char *)s + n - run, run);
}

/* A bounded output buffer that counts what it could not hold, like snprintf. */
typedef struct sink_s {
    char *buf;
    size_t cap, len; /* len may exceed cap - 1: the length needed */
} sink_t;

static void sink_put(void *arg, const char *s, size_t n)
{
    sink_t *k = arg;
    if (k->cap > 0 && k->len < k->cap - 1) {
        size_t room = k->cap - 1 - k->len;
        memcpy(k->buf + k->len, s, n < room ? n : room);
    }
    k->len += n;
}

static void sink_str(sink_t *k, const char *s)
{
    sink_put(k, s, strlen(s));
}

/* "2026-12-02T16:42:57.123Z" for Unix milliseconds `ms` (at least 25 bytes). */
static void format_time(char *out, size_t cap, int64_t ms)
{
    time_t sec = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    long milli = (long)(ms - (int64_t)sec * 1000);
    struct tm tm;
    char when[32];
    if (gmtime_r(&sec, &tm) == NULL)
        memset(&tm, 0, sizeof tm);
    if (strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        when[0] = '\0';
    snprintf(out, cap, "%s.%03ldZ", when, milli);
}

size_t kc_diag_json_line(char *buf, size_t cap, int64_t ts_ms, kc_diag_level_t lvl,
                         const char *module, const char *msg, size_t msg_len)
{
    sink_t k = {buf, cap, 0};
    char when[40];
    format_time(when, sizeof when, ts_ms);
    const char *name = (unsigned)lvl < sizeof json_level_names / sizeof json_level_names[0]
                           ? json_level_names[lvl]
                           : "unknown";
    sink_str(&k, "{\"ts\":\"");
    sink_str(&k, when);
    sink_str(&k, "\",\"level\":\"");
    sink_str(&k, name);
    sink_str(&k, "\",\"module\":\"");
    const char *mod = module != NULL ? module : "-";
    kc_diag_json_escape(mod, strlen(mod), sink_put, &k);
    sink_str(&k, "\",\"msg\":\"");
    kc_diag_json_escape(msg, msg_len, sink_put, &k);
    sink_str(&k, "\"}\n");
    if (cap > 0)
        buf[k.len < cap - 1 ? k.len : cap - 1] = '\0';
    return k.len;
}

void kc_diag_set_level(kc_diag_level_t lvl)
{
    atomic_store_explicit(&cur_level, (int)lvl, memory_order_relaxed);
}

kc_diag_level_t kc_diag_get_level(void)
{
    return (kc_diag_level_t)atomic_load_explicit(&cur_level, memory_order_relaxed);
}

int kc_diag_parse_level(const char *s, kc_diag_level_t *out)
{
    static const struct {
        const char *name;
        kc_diag_level_t lvl;
    } names[] = {
        {"debug", KC_DIAG_DEBUG},
        {"info", KC_DIAG_INFO},
        {"warn", KC_DIAG_WARN},
        {"error", KC_DIAG_ERROR},
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
static int format_prefix(char *buf, size_t cap, kc_diag_level_t lvl, const char *module)
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

static int64_t now_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* kc_diag_write in KC_DIAG_JSON mode: the message is formatted (into the stack, or the heap
 * when long), then the line is built around it (stack or heap again) and written at once. */
__attribute__((format(printf, 3, 0))) static void
write_json(kc_diag_level_t lvl, const char *module, const char *fmt, va_list ap)
{
    char mstack[LINE_STACK], lstack[LINE_STACK * 2];
    char *msg = mstack, *line = lstack;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(mstack, sizeof mstack, fmt, ap);
    if (n < 0)
        n = 0;
    size_t mlen = (size_t)n;
    if (mlen >= sizeof mstack) {
        char *big = malloc(mlen + 1);
        if (big != NULL) {
            vsnprintf(big, mlen + 1, fmt, ap2);
            msg = big;
        } else {
            mlen = sizeof mstack - 1; /* truncated, never lost */
        }
    }
    va_end(ap2);
    /* Drop one trailing newline, as the text format does. */
    if (mlen > 0 && msg[mlen - 1] == '\n')
        mlen--;
    if (mlen > 0 && msg[mlen - 1] == '\r')
        mlen--;
    int64_t ts = now_ms();
    size_t need = kc_diag_json_line(lstack, sizeof lstack, ts, lvl, module, msg, mlen);
    if (need >= sizeof lstack) {
        char *big = malloc(need + 1);
        if (big != NULL) {
            kc_diag_json_line(big, need + 1, ts, lvl, module, msg, mlen);
            line = big;
        } else {
            /* Keep the line valid JSON: drop the message rather than cut it. */
            need = kc_diag_json_line(lstack, sizeof lstack, ts, lvl, module,
                                     "(message too long for memory)", 29);
        }
    }
    fwrite(line, 1, need, stderr);
    if (line != lstack)
        free(line);
    if (msg != mstack)
        free(msg);
}

void kc_diag_write(kc_diag_level_t lvl, const char *module, const char *fmt, ...)
{
    if (lvl < kc_diag_get_level())
        return;
    if (kc_diag_get_format() == KC_DIAG_JSON) {
        va_list ap;
        va_start(ap, fmt);
        write_json(lvl, module, fmt, ap);
        va_end(ap);
        return;
    }

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

void kc_diag_sanitize(char *dst, size_t dstlen, const void *src, size_t n)
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

/* ---- Repeated lines ---------------------------------------------------------------------- */

static pthread_mutex_t limit_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_diag_limit_t *limits; /* every call site used so far, under limit_mu */
static _Atomic int64_t repeat_interval_ms = 5000;
static int64_t (*_Atomic repeat_clock)(void);

void kc_diag_set_repeat_interval(int64_t ms)
{
    atomic_store(&repeat_interval_ms, ms > 0 ? ms : 0);
}

void kc_diag_set_repeat_clock(int64_t (*now_ms)(void))
{
    atomic_store(&repeat_clock, now_ms);
}

static int64_t mono_now(void)
{
    int64_t (*clk)(void) = atomic_load(&repeat_clock);
    if (clk != NULL)
        return clk();
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write lim's summary and start a new interval at `now`. Under limit_mu, suppressed > 0. */
static void write_summary(kc_diag_limit_t *lim, int64_t now)
{
    int64_t secs = (now - lim->window_ms + 500) / 1000;
    kc_diag_write(lim->level, lim->module, "%s ... repeated %llu times in the last %lld s",
                  lim->last, (unsigned long long)lim->suppressed, (long long)(secs > 0 ? secs : 1));
    lim->suppressed = 0;
    lim->window_ms = now;
}

void kc_diag_limited(kc_diag_limit_t *lim, kc_diag_level_t lvl, const char *module, const char *fmt,
                     ...)
{
    if (lvl < kc_diag_get_level())
        return;
    int64_t every = atomic_load(&repeat_interval_ms);
    va_list ap;
    char msg[LINE_STACK];
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        msg[0] = '\0';
    else if ((size_t)n >= sizeof msg)
        memcpy(msg + sizeof msg - 4, "...", 4); /* a rate-limited line is short; cut it */
    pthread_mutex_lock(&limit_mu);
    int64_t now = mono_now();
    if (!lim->listed) {
        lim->listed = 1;
        lim->next = limits;
        limits = lim;
        lim->window_ms = now - every; /* the first line is written */
    }
    if (every > 0 && now - lim->window_ms < every) {
        lim->suppressed++;
        lim->level = lvl;
        lim->module = module;
        size_t len = strlen(msg);
        if (len >= sizeof lim->last) {
            len = sizeof lim->last - 1;
            memcpy(msg + len - 3, "...", 3);
        }
        memcpy(lim->last, msg, len);
        lim->last[len] = '\0';
    } else {
        if (lim->suppressed > 0)
            write_summary(lim, now);
        lim->window_ms = now;
        kc_diag_write(lvl, module, "%s", msg);
    }
    pthread_mutex_unlock(&limit_mu);
}

void kc_diag_repeat_flush(void)
{
    int64_t every = atomic_load(&repeat_interval_ms);
    pthread_mutex_lock(&limit_mu);
    int64_t now = mono_now();
    for (kc_diag_limit_t *lim = limits; lim != NULL; lim = lim->next)
        if (lim->suppressed > 0 && now - lim->window_ms >= every)
            write_summary(lim, now);
    pthread_mutex_unlock(&limit_mu);
}
