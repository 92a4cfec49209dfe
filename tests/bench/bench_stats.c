/* bench_stats.c - kcoord-bench's statistics and output: latency histograms, error counts by
 * Kafka code, one-line JSON results, and the /proc readers for a server's CPU time and RSS.
 *
 * The histogram is log-linear: values below 128 ns have a bucket each; above, every power of two
 * is cut into 64 buckets, so a bucket is at most 1/64 of its value wide. A quantile is reported
 * as the upper bound of the bucket holding it (never above the largest value seen): the same
 * conservative reading HdrHistogram gives.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static size_t hist_index(uint64_t v)
{
    if (v < 128)
        return (size_t)v;
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - 6;
    return (size_t)shift * 64 + (size_t)(v >> shift);
}

/* The largest value that falls into bucket `i`. */
static uint64_t hist_upper(size_t i)
{
    if (i < 128)
        return i;
    size_t shift = i / 64 - 1;
    uint64_t q = i % 64 + 64;
    return ((q + 1) << shift) - 1;
}

void kc_stats_reset(kc_bench_stats_t *s)
{
    memset(s, 0, sizeof(*s));
}

void kc_stats_record(kc_bench_stats_t *s, uint64_t ns)
{
    size_t i = hist_index(ns);
    if (i >= KC_HIST_BUCKETS)
        i = KC_HIST_BUCKETS - 1;
    s->hist[i]++;
    s->n++;
    s->sum_ns += (double)ns;
    if (ns > s->max_ns)
        s->max_ns = ns;
}

void kc_stats_error(kc_bench_stats_t *s, int code)
{
    int slot = code + 1;
    if (code == KC_BENCH_ECONN)
        slot = KC_ERR_SLOT_CONN;
    else if (code == KC_BENCH_EDECODE)
        slot = KC_ERR_SLOT_DECODE;
    else if (slot < 0 || slot >= KC_ERR_CODES)
        slot = KC_ERR_SLOT_OTHER;
    s->errors[slot]++;
    s->nerrors++;
}

uint64_t kc_stats_quantile(const kc_bench_stats_t *s, double q)
{
    if (s->n == 0)
        return 0;
    uint64_t want = (uint64_t)ceil(q * (double)s->n);
    if (want == 0)
        want = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < KC_HIST_BUCKETS; i++) {
        seen += s->hist[i];
        if (seen >= want) {
            uint64_t u = hist_upper(i);
            return u < s->max_ns ? u : s->max_ns;
        }
    }
    return s->max_ns;
}

const char *kc_err_name(int code)
{
    switch (code) {
    case KC_BENCH_ECONN:
        return "CONNECTION_FAILED";
    case KC_BENCH_EDECODE:
        return "UNDECODABLE_RESPONSE";
    case -1:
        return "UNKNOWN_SERVER_ERROR";
    case 0:
        return "NONE";
    case 3:
        return "UNKNOWN_TOPIC_OR_PARTITION";
    case 7:
        return "REQUEST_TIMED_OUT";
    case 12:
        return "OFFSET_METADATA_TOO_LARGE";
    case 14:
        return "COORDINATOR_LOAD_IN_PROGRESS";
    case 15:
        return "COORDINATOR_NOT_AVAILABLE";
    case 16:
        return "NOT_COORDINATOR";
    case 22:
        return "ILLEGAL_GENERATION";
    case 23:
        return "INCONSISTENT_GROUP_PROTOCOL";
    case 24:
        return "INVALID_GROUP_ID";
    case 25:
        return "UNKNOWN_MEMBER_ID";
    case 26:
        return "INVALID_SESSION_TIMEOUT";
    case 27:
        return "REBALANCE_IN_PROGRESS";
    case 35:
        return "UNSUPPORTED_VERSION";
    case 36:
        return "TOPIC_ALREADY_EXISTS";
    case 41:
        return "NOT_CONTROLLER";
    case 42:
        return "INVALID_REQUEST";
    case 44:
        return "POLICY_VIOLATION";
    case 79:
        return "MEMBER_ID_REQUIRED";
    case 81:
        return "GROUP_MAX_SIZE_REACHED";
    case 82:
        return "FENCED_INSTANCE_ID";
    default:
        return "UNKNOWN";
    }
}

/* The code a slot counts, or INT32_MIN for the "other" slot. */
static int slot_code(size_t i)
{
    if (i == KC_ERR_SLOT_CONN)
        return KC_BENCH_ECONN;
    if (i == KC_ERR_SLOT_DECODE)
        return KC_BENCH_EDECODE;
    return i == KC_ERR_SLOT_OTHER ? INT32_MIN : (int)i - 1;
}

void kc_stats_print(const kc_bench_stats_t *s, const char *indent)
{
    if (s->n > 0)
        printf("%slatency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f  (%" PRIu64
               " samples)\n",
               indent, kc_stats_quantile(s, 0.5) / 1e6, kc_stats_quantile(s, 0.99) / 1e6,
               kc_stats_quantile(s, 0.999) / 1e6, s->max_ns / 1e6, s->sum_ns / (double)s->n / 1e6,
               s->n);
    if (s->nerrors == 0) {
        printf("%serrors: none\n", indent);
        return;
    }
    printf("%serrors: %" PRIu64 "\n", indent, s->nerrors);
    for (size_t i = 0; i < KC_ERR_SLOTS; i++)
        if (s->errors[i] > 0) {
            int code = slot_code(i);
            if (code == INT32_MIN)
                printf("%s  %" PRIu64 " x an unknown error code\n", indent, s->errors[i]);
            else
                printf("%s  %" PRIu64 " x %d %s\n", indent, s->errors[i], code, kc_err_name(code));
        }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void jput(kc_json_t *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (j->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(j->buf, cap);
        if (p == NULL)
            return;
        j->buf = p;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void jstr(kc_json_t *j, const char *s)
{
    jput(j, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            jput(j, esc, 2);
        } else if (ch < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", ch);
            jput(j, esc, 6);
        } else {
            jput(j, (const char *)&ch, 1);
        }
    }
    jput(j, "\"", 1);
}

static void jkey(kc_json_t *j, const char *key)
{
    if (!j->first)
        jput(j, ",", 1);
    j->first = false;
    jstr(j, key);
    jput(j, ":", 1);
}

void kc_json_begin(kc_json_t *j, const char *scenario)
{
    memset(j, 0, sizeof(*j));
    jput(j, "{", 1);
    j->first = true;
    kc_json_str(j, "scenario", scenario);
}

void kc_json_str(kc_json_t *j, const char *key, const char *v)
{
    jkey(j, key);
    jstr(j, v);
}

void kc_json_int(kc_json_t *j, const char *key, long long v)
{
    char b[32];
    int n = snprintf(b, sizeof(b), "%lld", v);
    jkey(j, key);
    jput(j, b, (size_t)n);
}

void kc_json_num(kc_json_t *j, const char *key, double v)
{
    if (!isfinite(v)) {
        kc_json_null(j, key);
        return;
    }
    char b[64];
    int n = snprintf(b, sizeof(b), "%.6g", v);
    jkey(j, key);
    jput(j, b, (size_t)n);
}

void kc_json_null(kc_json_t *j, const char *key)
{
    jkey(j, key);
    jput(j, "null", 4);
}

void kc_json_errors(kc_json_t *j, const char *key, const kc_bench_stats_t *s)
{
    jkey(j, key);
    jput(j, "{", 1);
    bool first = true;
    for (size_t i = 0; i < KC_ERR_SLOTS; i++)
        if (s->errors[i] > 0) {
            char b[64];
            int code = slot_code(i);
            const char *name = code == INT32_MIN          ? "other"
                               : code == KC_BENCH_ECONN   ? "connection"
                               : code == KC_BENCH_EDECODE ? "undecodable"
                                                          : NULL;
            int n = name != NULL ? snprintf(b, sizeof(b), "%s\"%s\":%" PRIu64, first ? "" : ",",
                                            name, s->errors[i])
                                 : snprintf(b, sizeof(b), "%s\"%d\":%" PRIu64, first ? "" : ",",
                                            code, s->errors[i]);
            jput(j, b, (size_t)n);
            first = false;
        }
    jput(j, "}", 1);
}

void kc_json_latency(kc_json_t *j, const char *prefix, const kc_bench_stats_t *s)
{
    char k[64];
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"p50_ms", 0.5}, {"p99_ms", 0.99}, {"p999_ms", 0.999}};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        snprintf(k, sizeof(k), "%s%s", prefix, qs[i].name);
        if (s->n == 0)
            kc_json_null(j, k);
        else
            kc_json_num(j, k, kc_stats_quantile(s, qs[i].q) / 1e6);
    }
    snprintf(k, sizeof(k), "%smax_ms", prefix);
    kc_json_num(j, k, s->max_ns / 1e6);
    snprintf(k, sizeof(k), "%smean_ms", prefix);
    if (s->n == 0)
        kc_json_null(j, k);
    else
        kc_json_num(j, k, s->sum_ns / (double)s->n / 1e6);
}

void kc_json_end(kc_json_t *j)
{
    jput(j, "}", 1);
    if (j->buf != NULL)
        printf("%s\n", j->buf);
    fflush(stdout);
    free(j->buf);
    memset(j, 0, sizeof(*j));
}

/* ---- /proc ----------------------------------------------------------------------------------- */

double kc_proc_cpu_s(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields restart after the last ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return -1;
    p++;
    unsigned long long utime = 0, stime = 0;
    /* Fields 3.. after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
     * cmajflt utime stime. */
    if (sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(utime + stime) / (double)(hz > 0 ? hz : 100);
}

long kc_proc_rss_kb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}
