/* test_obs.c - unit tests for the observability room (src/obs/): the HTTP request parser and
 * percent-decoding, the Prometheus text writers, the counters, the /metrics page and /readyz
 * of a real coordinator (loading, active, failing fsync), and the HTTP server on a loop.
 *
 * Every /metrics page a test produces goes through a strict checker of the text format: each
 * line is a # HELP or # TYPE line, or `name{label="value",...} number`; a sample's family has a
 * TYPE line before it; counters end in _total; histogram buckets are cumulative and end with
 * le="+Inf", whose count equals _count.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coord/coord_int.h"
#include "json_check.h"
#include "log/log.h"
#include "obs/http.h"
#include "obs/metrics.h"
#include "obs/obs.h"
#include "proto/errors.h"
#include "proto/gen_api.h"
#include "util/container.h"

/* ---- A strict checker of the text format ----------------------------------------------------- */

static bool is_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* Check one page; fails the test with the offending line. */
static void check_exposition(const char *page)
{
    char types[256][96]; /* family name, then its type after a NUL */
    char kinds[256][16];
    size_t n_types = 0;
    char hist[96] = "";
    double last_bucket = -1;
    bool saw_inf = false;
    const char *p = page;
    assert_true(page[strlen(page) - 1] == '\n');
    while (*p) {
        const char *eol = strchr(p, '\n');
        assert_non_null(eol);
        char line[1024];
        size_t len = (size_t)(eol - p);
        assert_true(len < sizeof(line));
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol + 1;
        if (strncmp(line, "# HELP ", 7) == 0)
            continue;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            char name[96], type[16];
            assert_int_equal(sscanf(line + 7, "%95s %15s", name, type), 2);
            assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                        strcmp(type, "histogram") == 0);
            if (strcmp(type, "counter") == 0)
                assert_non_null(strstr(name, "_total"));
            for (size_t i = 0; i < n_types; i++)
                if (strcmp(types[i], name) == 0)
                    fail_msg("family %s typed twice", name);
            assert_true(n_types < 256);
            snprintf(types[n_types], sizeof(types[0]), "%s", name);
            snprintf(kinds[n_types], sizeof(kinds[0]), "%s", type);
            n_types++;
            continue;
        }
        assert_true(line[0] != '#');
        /* name */
        size_t i = 0;
        while (is_name_char(line[i], i == 0))
            i++;
        if (i == 0)
            fail_msg("bad sample line: %s", line);
        char name[96];
        assert_true(i < sizeof(name));
        memcpy(name, line, i);
        name[i] = '\0';
        char le[32] = "";
        if (line[i] == '{') {
            i++;
            while (line[i] != '}') {
                size_t k = i;
                while (is_name_char(line[i], i == k))
                    i++;
                if (i == k || line[i] != '=' || line[i + 1] != '"')
                    fail_msg("bad label in: %s", line);
                bool is_le = i - k == 2 && memcmp(line + k, "le", 2) == 0;
                i += 2;
                size_t v = 0;
                while (line[i] != '"') {
                    if (line[i] == '\0')
                        fail_msg("unterminated label value in: %s", line);
                    if (line[i] == '\\') {
                        i++;
                        if (line[i] != '\\' && line[i] != '"' && line[i] != 'n')
                            fail_msg("bad escape in: %s", line);
                    }
                    if (is_le && v + 1 < sizeof(le))
                        le[v++] = line[i];
                    i++;
                }
                if (is_le)
                    le[v] = '\0';
                i++;
                if (line[i] == ',')
                    i++;
                else if (line[i] != '}')
                    fail_msg("bad label list in: %s", line);
            }
            i++;
        }
        if (line[i] != ' ')
            fail_msg("no value in: %s", line);
        char *end;
        const char *val = line + i + 1;
        double value = strcmp(val, "+Inf") == 0 ? 1e308 : strtod(val, &end);
        if (strcmp(val, "+Inf") != 0 && (end == val || *end != '\0'))
            fail_msg("bad value in: %s", line);
        /* The family: the name itself, or without _bucket/_sum/_count for a histogram. */
        const char *kind = NULL;
        char fam[96];
        snprintf(fam, sizeof(fam), "%s", name);
        for (size_t t = 0; t < n_types && kind == NULL; t++)
            if (strcmp(types[t], fam) == 0)
                kind = kinds[t];
        if (kind == NULL) {
            static const char *const sfx[] = {"_bucket", "_sum", "_count"};
            for (size_t s = 0; s < 3 && kind == NULL; s++) {
                size_t nl = strlen(name), sl = strlen(sfx[s]);
                if (nl > sl && strcmp(name + nl - sl, sfx[s]) == 0) {
                    snprintf(fam, sizeof(fam), "%.*s", (int)(nl - sl), name);
                    for (size_t t = 0; t < n_types; t++)
                        if (strcmp(types[t], fam) == 0 && strcmp(kinds[t], "histogram") == 0)
                            kind = kinds[t];
                }
            }
        }
        if (kind == NULL)
            fail_msg("sample without a TYPE line: %s", line);
        if (strcmp(kind, "histogram") == 0) {
            size_t nl = strlen(name);
            if (nl > 7 && strcmp(name + nl - 7, "_bucket") == 0) {
                if (le[0] == '\0')
                    fail_msg("bucket without le: %s", line);
                if (strcmp(hist, fam) != 0 || saw_inf) {
                    snprintf(hist, sizeof(hist), "%s", fam);
                    last_bucket = -1;
                    saw_inf = false;
                }
                if (value < last_bucket)
                    fail_msg("buckets not cumulative: %s", line);
                last_bucket = value;
                saw_inf = strcmp(le, "+Inf") == 0;
            } else if (nl > 6 && strcmp(name + nl - 6, "_count") == 0) {
                if (!saw_inf || value != last_bucket)
                    fail_msg("_count does not follow the +Inf bucket: %s", line);
            }
        }
    }
}

/* ---- HTTP parsing -----------------------------------------------------------------------------
 */

static int parse(const char *s, kc_http_req_t *r)
{
    return kc_http_parse(s, strlen(s), KC_HTTP_MAX_REQUEST, r);
}

static void test_parse_requests(void **state)
{
    (void)state;
    kc_http_req_t r;
    const char *s = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
    assert_int_equal(parse(s, &r), (int)strlen(s));
    assert_int_equal(r.method_len, 3);
    assert_memory_equal(r.method, "GET", 3);
    assert_int_equal(r.path_len, 8);
    assert_memory_equal(r.path, "/metrics", 8);
    assert_null(r.query);
    assert_int_equal(r.minor, 1);

    /* A query, HTTP/1.0, bare LFs, and bytes after the head (a body) not consumed. */
    s = "POST /v1/groups/a%20b?x=1 HTTP/1.0\nContent-Length: 2\n\nab";
    assert_int_equal(parse(s, &r), (int)strlen(s) - 2);
    assert_memory_equal(r.method, "POST", 4);
    assert_int_equal(r.path_len, strlen("/v1/groups/a%20b"));
    assert_int_equal(r.query_len, 3);
    assert_memory_equal(r.query, "x=1", 3);
    assert_int_equal(r.minor, 0);

    assert_null(r.authorization);

    /* The Authorization header (any case), its value trimmed, for metrics.bearer.token. */
    s = "GET /metrics HTTP/1.1\r\nHost: x\r\nauthorization: \t Bearer abc \r\n\r\n";
    assert_int_equal(parse(s, &r), (int)strlen(s));
    assert_int_equal(r.authorization_len, 10);
    assert_memory_equal(r.authorization, "Bearer abc", 10);

    /* Incomplete heads. */
    assert_int_equal(parse("", &r), KC_HTTP_NEED_MORE);
    assert_int_equal(parse("GET /metrics HTTP/1.1\r\n", &r), KC_HTTP_NEED_MORE);
    assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n", &r), KC_HTTP_NEED_MORE);
}

static void test_parse_malformed(void **state)
{
    (void)state;
    kc_http_req_t r;
    static const char *const bad[] = {
        "\r\n\r\n",
        "GET\r\n\r\n",
        "GET /metrics\r\n\r\n",
        "GET metrics HTTP/1.1\r\n\r\n",                     /* not origin-form */
        "GET  /metrics HTTP/1.1\r\n\r\n",                   /* two spaces */
        "GET /metrics HTTP/2.0\r\n\r\n",                    /* not HTTP/1.x */
        "GET /metrics HTTP/1.1x\r\n\r\n",                   /* trailing garbage */
        "GET /metrics HTTP/1.1 \r\n\r\n",                   /* trailing space */
        "G(T /metrics HTTP/1.1\r\n\r\n",                    /* not a token */
        "GET /a\x01 HTTP/1.1\r\n\r\n",                      /* control character in the target */
        "GET /metrics HTTP/1.1\r\nHost x\r\n\r\n",          /* header without a colon */
        "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",        /* space before the colon */
        "GET /metrics HTTP/1.1\r\n: x\r\n\r\n",             /* no header name */
        "GET /metrics HTTP/1.1\r\nHost: a\x01\r\n\r\n",     /* control character in a value */
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\n", /* a TLS hello */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i], &r) != KC_HTTP_BAD)
            fail_msg("case %zu was not refused", i);
    }
    /* Too big: no complete head within the limit. */
    size_t n = KC_HTTP_MAX_REQUEST + 10;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', n - 5);
    big[n] = '\0';
    assert_int_equal(kc_http_parse(big, n, KC_HTTP_MAX_REQUEST, &r), KC_HTTP_TOO_BIG);
    assert_int_equal(kc_http_parse(big, KC_HTTP_MAX_REQUEST, KC_HTTP_MAX_REQUEST, &r),
                     KC_HTTP_TOO_BIG);
    assert_int_equal(kc_http_parse(big, 100, KC_HTTP_MAX_REQUEST, &r), KC_HTTP_NEED_MORE);
    free(big);
}

static void test_percent_decode(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(kc_http_percent_decode("a%20b", 5, out), 3);
    assert_memory_equal(out, "a b", 3);
    assert_int_equal(kc_http_percent_decode("%2Fx%2f%25+", 11, out), 5);
    assert_memory_equal(out, "/x/%+", 5);
    assert_int_equal(kc_http_percent_decode("%00", 3, out), 1);
    assert_int_equal(out[0], 0);
    assert_int_equal(kc_http_percent_decode("%C3%A9", 6, out), 2);
    assert_memory_equal(out, "\xc3\xa9", 2);
    assert_int_equal(kc_http_percent_decode("%G1", 3, out), -1);
    assert_int_equal(kc_http_percent_decode("ab%2", 4, out), -1);
    assert_int_equal(kc_http_percent_decode("ab%", 3, out), -1);
    assert_int_equal(kc_http_percent_decode("", 0, out), 0);
}

/* ---- The text format ---------------------------------------------------------------------------
 */

static void test_prom_writers(void **state)
{
    (void)state;
    kc_obs_buf_t b = {0};
    kc_prom_family(&b, "x_total", "counter", "a\\b\nc");
    kc_obs_buf_puts(&b, "x_total{v=\"");
    kc_prom_label_value(&b, "a\"b\\c\nd", 7);
    kc_obs_buf_puts(&b, "\"} ");
    kc_prom_number(&b, 3);
    kc_obs_buf_puts(&b, "\n");
    kc_prom_sample(&b, "y", NULL, 0.25);
    kc_prom_sample(&b, "y", "a=\"1\"", 1e20);
    assert_false(b.oom);
    assert_string_equal(b.p, "# HELP x_total a\\\\b\\nc\n"
                             "# TYPE x_total counter\n"
                             "x_total{v=\"a\\\"b\\\\c\\nd\"} 3\n"
                             "y 0.25\n"
                             "y{a=\"1\"} 1e+20\n");
    kc_obs_buf_free(&b);

    const double bounds[] = {0.001, 0.5, 2};
    uint64_t counts[] = {1, 0, 2, 4}; /* non-cumulative; the last is +Inf */
    kc_prom_family(&b, "h_seconds", "histogram", "h");
    kc_prom_histogram(&b, "h_seconds", "api=\"Fetch\"", bounds, 3, counts, 12.5);
    kc_prom_histogram(&b, "h_seconds", NULL, bounds, 3, counts, 0);
    assert_string_equal(b.p, "# HELP h_seconds h\n"
                             "# TYPE h_seconds histogram\n"
                             "h_seconds_bucket{api=\"Fetch\",le=\"0.001\"} 1\n"
                             "h_seconds_bucket{api=\"Fetch\",le=\"0.5\"} 1\n"
                             "h_seconds_bucket{api=\"Fetch\",le=\"2\"} 3\n"
                             "h_seconds_bucket{api=\"Fetch\",le=\"+Inf\"} 7\n"
                             "h_seconds_sum{api=\"Fetch\"} 12.5\n"
                             "h_seconds_count{api=\"Fetch\"} 7\n"
                             "h_seconds_bucket{le=\"0.001\"} 1\n"
                             "h_seconds_bucket{le=\"0.5\"} 1\n"
                             "h_seconds_bucket{le=\"2\"} 3\n"
                             "h_seconds_bucket{le=\"+Inf\"} 7\n"
                             "h_seconds_sum 0\n"
                             "h_seconds_count 7\n");
    check_exposition(b.p);
    kc_obs_buf_free(&b);

    kc_hist_t h;
    memset(&h, 0, sizeof(h));
    kc_hist_observe(&h, bounds, 3, 0.001); /* on a bound: that bucket */
    kc_hist_observe(&h, bounds, 3, 0.0011);
    kc_hist_observe(&h, bounds, 3, 99);
    assert_int_equal(h.counts[0], 1);
    assert_int_equal(h.counts[1], 1);
    assert_int_equal(h.counts[2], 0);
    assert_int_equal(h.counts[3], 1);
}

/* ---- The counters -----------------------------------------------------------------------------
 */

/* The network bounds' counters and gauges (src/net/ calls these). */
static void test_net_counters(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    kc_obs_conn_refused(KC_NET_REFUSED_PER_IP);
    kc_obs_conn_refused(KC_NET_REFUSED_FDS);
    kc_obs_conn_refused(KC_NET_REFUSED_FDS);
    kc_obs_conn_refused(7); /* unknown: not counted */
    kc_obs_accept_deferred();
    kc_obs_net_paused(KC_NET_PAUSE_CONN_UNSENT);
    kc_obs_net_paused(KC_NET_PAUSE_REQUESTS);
    kc_obs_net_paused(-1);
    kc_obs_net_bytes(1000, 2000);
    kc_obs_conn_idle_closed(true);
    kc_obs_refused_memory();
    kc_obs_sasl(0, false, true);
    kc_obs_sasl(2, false, false);
    kc_obs_sasl(2, false, false);
    kc_obs_sasl(-1, false, false); /* a mechanism kcoord does not implement */
    kc_obs_sasl(9, false, false);
    kc_obs_sasl(1, true, true);
    kc_obs_sasl(1, true, false);
    kc_obs_buf_t b = {0};
    kc_obs_render_metrics(&b, NULL);
    assert_false(b.oom);
    check_exposition(b.p);
    static const char *const want[] = {
        "\nkcoord_connections_refused_total{reason=\"max_connections_per_ip\"} 1\n",
        "\nkcoord_connections_refused_total{reason=\"reserved_fds\"} 2\n",
        "\nkcoord_connection_accepts_deferred_total 1\n",
        "\nkcoord_connection_reads_paused_total{reason=\"connection_max_unsent_bytes\"} 1\n",
        "\nkcoord_connection_reads_paused_total{reason=\"queued_max_request_bytes\"} 1\n",
        "\nkcoord_connection_reads_paused_total{reason=\"queued_max_unsent_bytes\"} 0\n",
        "\nkcoord_connections_idle_closed_total{reason=\"answers_unread\"} 1\n",
        "\nkcoord_connections_idle_closed_total{reason=\"idle\"} 0\n",
        "\nkcoord_queued_request_bytes 1000\n",
        "\nkcoord_unsent_response_bytes 2000\n",
        "\nkcoord_requests_refused_total{reason=\"memory\"} 1\n",
        "\nkcoord_sasl_authentications_total{mechanism=\"PLAIN\",result=\"ok\"} 1\n",
        "\nkcoord_sasl_authentications_total{mechanism=\"PLAIN\",result=\"failed\"} 0\n",
        "\nkcoord_sasl_authentications_total{mechanism=\"SCRAM-SHA-512\",result=\"failed\"} 2\n",
        "\nkcoord_sasl_authentications_total{mechanism=\"other\",result=\"failed\"} 2\n",
        "\nkcoord_sasl_authentications_total{mechanism=\"SCRAM-SHA-256\",result=\"ok\"} 0\n",
        "\nkcoord_sasl_reauthentications_total{mechanism=\"SCRAM-SHA-256\",result=\"ok\"} 1\n",
        "\nkcoord_sasl_reauthentications_total{mechanism=\"SCRAM-SHA-256\",result=\"failed\"} 1\n",
        "\nkcoord_sasl_reauthentications_total{mechanism=\"PLAIN\",result=\"ok\"} 0\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(b.p, want[i]) == NULL)
            fail_msg("missing %s", want[i]);
    kc_obs_buf_free(&b);
}

static void test_counters(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    kc_obs_request(KC_API_OFFSET_COMMIT, 8);
    kc_obs_request(KC_API_OFFSET_COMMIT, 8);
    kc_obs_request(KC_API_API_VERSIONS, 3);
    kc_obs_request(KC_API_API_VERSIONS, 999); /* out of range: not counted */
    kc_obs_request(4242, 0);                  /* unknown API: not counted */
    kc_obs_refused(true);

    /* An OffsetCommit answer with two stored offsets and one error. */
    kc_offset_commit_response_partition_t parts[3] = {
        {.partition_index = 0, .error_code = 0},
        {.partition_index = 1, .error_code = 25},
        {.partition_index = 2, .error_code = 0},
    };
    kc_offset_commit_response_topic_t topic = {.partitions = {parts, 3}};
    kc_offset_commit_response_t resp;
    kc_offset_commit_response_init(&resp);
    resp.topics.v = &topic;
    resp.topics.n = 1;
    uint32_t ok = kc_obs_response(KC_API_OFFSET_COMMIT, 8, &resp);
    assert_int_equal(ok, 2);
    kc_obs_commit(ok);
    kc_obs_commit(0); /* nothing stored: not a commit */
    kc_obs_done(KC_API_OFFSET_COMMIT, uv_hrtime());

    kc_heartbeat_response_t hb;
    kc_heartbeat_response_init(&hb);
    hb.error_code = KC_ERR_REBALANCE_IN_PROGRESS;
    assert_int_equal(kc_obs_response(KC_API_HEARTBEAT, 4, &hb), 0);
    kc_obs_error(KC_API_HEARTBEAT, 0);   /* no error: not counted */
    kc_obs_error(KC_API_HEARTBEAT, 999); /* out of range: not counted */

    kc_obs_conn_accepted();
    kc_obs_conn_accepted();
    kc_obs_conn_closed();
    kc_obs_log_append(3, 200);
    kc_obs_log_fsync(2000000);
    kc_obs_cleaner_run(true, 1000);
    kc_obs_cleaner_run(false, 5);
    kc_obs_http(200);
    kc_obs_http(418);

    kc_obs_buf_t b = {0};
    kc_obs_render_metrics(&b, NULL);
    assert_false(b.oom);
    check_exposition(b.p);
    static const char *const want[] = {
        "\nkcoord_requests_total{api=\"OffsetCommit\",version=\"8\"} 2\n",
        "\nkcoord_requests_total{api=\"ApiVersions\",version=\"3\"} 1\n",
        "\nkcoord_requests_refused_total{reason=\"malformed\"} 1\n",
        "\nkcoord_errors_total{api=\"OffsetCommit\",code=\"25\"} 1\n",
        "\nkcoord_errors_total{api=\"Heartbeat\",code=\"27\"} 1\n",
        "\nkcoord_request_duration_seconds_count{api=\"OffsetCommit\"} 1\n",
        "\nkcoord_connections_open 1\n",
        "\nkcoord_connections_accepted_total 2\n",
        "\nkcoord_offset_commits_total 1\n",
        "\nkcoord_offsets_committed_total 2\n",
        "\nkcoord_log_append_bytes_total 200\n",
        "\nkcoord_log_append_batch_records_bucket{le=\"5\"} 1\n",
        "\nkcoord_log_append_batch_records_bucket{le=\"2\"} 0\n",
        "\nkcoord_log_fsync_duration_seconds_bucket{le=\"0.0025\"} 1\n",
        "\nkcoord_log_fsync_duration_seconds_bucket{le=\"0.001\"} 0\n",
        "\nkcoord_log_cleaner_runs_total{result=\"ok\"} 1\n",
        "\nkcoord_log_cleaner_runs_total{result=\"failed\"} 1\n",
        "\nkcoord_log_cleaner_reclaimed_bytes_total 1000\n",
        "\nkcoord_http_requests_total{code=\"200\"} 1\n",
        "\nkcoord_http_requests_total{code=\"other\"} 1\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(b.p, want[i]) == NULL)
            fail_msg("missing: %s", want[i] + 1);
    assert_null(strstr(b.p, "code=\"0\""));
    assert_null(strstr(b.p, "Heartbeat\",code=\"999"));
    /* Nothing about partitions without a coordinator. */
    assert_null(strstr(b.p, "kcoord_partition_state"));
    kc_obs_buf_free(&b);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- /metrics and /readyz of a real coordinator ---------------------------------------------- */

static atomic_int fail_fsync;
static int f_fsync(void *ctx, int fd)
{
    (void)ctx;
    if (atomic_load(&fail_fsync))
        return -EIO;
    return kc_log_io_posix()->fsync(NULL, fd);
}

static void no_join(void *w, const kc_join_group_response_t *r)
{
    (void)w;
    (void)r;
}
static void no_sync(void *w, const kc_sync_group_response_t *r)
{
    (void)w;
    (void)r;
}
static const kc_coord_replies_t replies = {no_join, no_sync};

static void on_release(void *arg, bool ok)
{
    *(int *)arg = ok ? 1 : 2;
}

static void run_until(uv_loop_t *loop, const int *flag)
{
    for (int i = 0; i < 100000 && !*flag; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_true(*flag);
}

static void run_until_loaded(uv_loop_t *loop, kc_coord_t *c)
{
    for (int i = 0; i < 100000 && kc_coord_loading(c) > 0; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(kc_coord_loading(c), 0);
}

/* Until `p` serves: a reload that raced with the injected fault is retried after a while. */
static void run_until_active(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p)
{
    for (int i = 0; i < 100000 && (kc_coord_loading(c) > 0 || p->state != KC_PART_ACTIVE); i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(p->state, KC_PART_ACTIVE);
}

static int commit_and_wait(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p, int64_t offset)
{
    kc_offset_t o = {.offset = offset,
                     .leader_epoch = -1,
                     .metadata = KC_STR_EMPTY,
                     .commit_ts_ms = 1000,
                     .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &o), 0);
    int released = 0;
    int32_t idx = p->index;
    assert_int_equal(kc_coord_hold(c, &idx, 1, on_release, &released), 1);
    run_until(loop, &released);
    return released;
}

static int closed;
static void on_closed(void *arg)
{
    (void)arg;
    closed = 1;
}

static char *ready_text(kc_coord_t *c, bool *ready)
{
    kc_obs_buf_t b = {0};
    *ready = kc_obs_ready(&b, c);
    assert_false(b.oom);
    return b.p;
}

static void test_coordinator_metrics_and_readiness(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    char dir[] = "/tmp/kc-obs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    kc_conf_init(&conf);
    char err[256];
    assert_int_equal(kc_conf_set(&conf, "data.dir", dir, KC_CONF_SRC_SET, err, sizeof(err)), 0);
    assert_int_equal(
        kc_conf_set(&conf, "offsets.topic.num.partitions", "3", KC_CONF_SRC_SET, err, sizeof(err)),
        0);
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    kc_log_io_t io = *kc_log_io_posix();
    io.fsync = f_fsync;
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, &io);
    kc_coord_set_events(c, &kc_obs_coord_events);
    assert_non_null(c);

    /* Loading: not ready. */
    bool ready;
    char *text = ready_text(c, &ready);
    assert_false(ready);
    assert_non_null(strstr(text, "3 of 3 partitions loading"));
    free(text);
    kc_obs_buf_t b = {0};
    kc_obs_render_metrics(&b, c);
    check_exposition(b.p);
    assert_non_null(strstr(b.p, "\nkcoord_partition_state{partition=\"2\"} 0\n"));
    assert_non_null(strstr(b.p, "\nkcoord_partitions_loading 3\n"));
    kc_obs_buf_free(&b);

    run_until_loaded(&loop, c);
    text = ready_text(c, &ready);
    assert_true(ready);
    assert_string_equal(text, "ready: all 3 partitions are active\n");
    free(text);

    /* A durable commit: an append of one record, an fsync, the log's size. */
    kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
    assert_int_equal(commit_and_wait(&loop, c, p, 7), 1);
    assert_int_equal(kc_obs.log_append_batches, 1);
    assert_true(kc_obs.log_append_bytes > 61); /* a batch header and a record */
    assert_int_equal(kc_obs.log_append_records.counts[0], 1);
    uint64_t fsyncs = 0;
    for (int i = 0; i <= KC_OBS_LATENCY_BUCKETS; i++)
        fsyncs += kc_obs.fsync.counts[i];
    assert_int_equal(fsyncs, 1);
    assert_int_equal(p->obs.log_bytes, (int64_t)kc_obs.log_append_bytes);
    assert_int_equal(p->obs.log_segments, 1);

    kc_obs_render_metrics(&b, c);
    check_exposition(b.p);
    char want[128];
    snprintf(want, sizeof(want), "\nkcoord_partition_state{partition=\"%d\"} 1\n", p->index);
    assert_non_null(strstr(b.p, want));
    snprintf(want, sizeof(want), "\nkcoord_log_bytes{partition=\"%d\"} %lld\n", p->index,
             (long long)p->obs.log_bytes);
    assert_non_null(strstr(b.p, want));
    assert_non_null(strstr(b.p, "\nkcoord_partitions_loading 0\n"));
    assert_non_null(strstr(b.p, "\nkcoord_rebalances_total{cause=\"session_timeout\"} 0\n"));
    assert_non_null(strstr(b.p, "\n# TYPE kcoord_rebalance_join_phase_seconds histogram\n"));
    assert_non_null(strstr(b.p, "\nkcoord_group_members{type=\"classic\"} 0\n"));
    kc_obs_buf_free(&b);

    /* fsync fails: the write fails, the partition reloads, and it is not ready until a write
     * succeeds again. */
    atomic_store(&fail_fsync, 1);
    assert_int_equal(commit_and_wait(&loop, c, p, 8), 2);
    assert_int_equal(kc_obs.log_write_failures, 1);
    assert_true(p->obs.write_failing);
    text = ready_text(c, &ready);
    assert_false(ready);
    snprintf(want, sizeof(want), "partition %d: log writes failing", p->index);
    assert_non_null(strstr(text, want));
    free(text);
    atomic_store(&fail_fsync, 0);
    run_until_active(&loop, c, p);
    text = ready_text(c, &ready); /* reloaded, but no write has succeeded yet */
    assert_false(ready);
    free(text);
    p->obs.write_failed_ms -= KC_OBS_WRITE_FAIL_WINDOW_MS; /* long ago: no longer counts */
    text = ready_text(c, &ready);
    assert_true(ready);
    free(text);
    p->obs.write_failed_ms += KC_OBS_WRITE_FAIL_WINDOW_MS;
    assert_int_equal(commit_and_wait(&loop, c, p, 9), 1);
    assert_false(p->obs.write_failing);
    text = ready_text(c, &ready);
    assert_true(ready);
    free(text);

    /* The active segment deleted under it: the commit fails, and /readyz says the partition
     * is out until a restart, not that it failed to load. */
    char seg[200];
    snprintf(seg, sizeof(seg), "%s/__consumer_offsets-%d/00000000000000000000.log", dir, p->index);
    assert_int_equal(unlink(seg), 0);
    assert_int_equal(commit_and_wait(&loop, c, p, 10), 2);
    assert_int_equal(p->state, KC_PART_FAILED);
    text = ready_text(c, &ready);
    assert_false(ready);
    snprintf(want, sizeof(want), "partition %d: active segment lost, out of service until restart",
             p->index);
    assert_non_null(strstr(text, want));
    assert_null(strstr(text, "failed to load"));
    free(text);

    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- The server on a loop ---------------------------------------------------------------------
 */

typedef struct client_s {
    uv_tcp_t tcp;
    uv_connect_t conn;
    uv_write_t wreq;
    const char *request;
    size_t request_len;
    char resp[1 << 20];
    size_t len;
    int done;         /* the client's socket is closed */
    int eof;          /* the server closed its side */
    int err;          /* a read error other than the end of the stream (a reset) */
    int werr;         /* the request's write failed (the server reset the connection) */
    bool hold;        /* keep the socket open after the server's end (the test closes it) */
    const char *then; /* sent once the first bytes of the answer have arrived */
    size_t then_len;
    uv_write_t wreq2;
} client_t;

static void client_alloc(uv_handle_t *h, size_t s, uv_buf_t *buf)
{
    (void)s;
    client_t *c = h->data;
    *buf = uv_buf_init(c->resp + c->len, (unsigned)(sizeof(c->resp) - 1 - c->len));
}

static void client_closed(uv_handle_t *h)
{
    ((client_t *)h->data)->done = 1;
}

static void client_close(client_t *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, client_closed);
}

static void client_written(uv_write_t *w, int status)
{
    client_t *c = w->handle->data;
    if (status < 0)
        c->werr = status;
}

static void client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    client_t *c = s->data;
    if (n > 0) {
        c->len += (size_t)n;
        c->resp[c->len] = '\0';
        if (c->then != NULL) {
            uv_buf_t b = uv_buf_init((char *)c->then, (unsigned)c->then_len);
            c->then = NULL;
            uv_write(&c->wreq2, s, &b, 1, client_written);
        }
    } else if (n < 0) {
        if (n == UV_EOF)
            c->eof = 1;
        else
            c->err = (int)n;
        uv_read_stop(s);
        if (!c->hold || n != UV_EOF)
            client_close(c);
    }
}

static void client_connected(uv_connect_t *req, int status)
{
    client_t *c = req->data;
    assert_int_equal(status, 0);
    uv_buf_t b = uv_buf_init((char *)c->request, (unsigned)c->request_len);
    uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, client_written);
    uv_read_start((uv_stream_t *)&c->tcp, client_alloc, client_read);
}

/* Connect to 127.0.0.1:port and send `request`; the answer collects in c->resp. */
static void client_start(uv_loop_t *loop, int port, client_t *c, const char *request, size_t len,
                         bool hold)
{
    memset(c, 0, sizeof(*c));
    c->request = request;
    c->request_len = len;
    c->hold = hold;
    uv_tcp_init(loop, &c->tcp);
    c->tcp.data = c;
    c->conn.data = c;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    assert_int_equal(
        uv_tcp_connect(&c->conn, &c->tcp, (const struct sockaddr *)&addr, client_connected), 0);
}

/* Send `request` to 127.0.0.1:port and return the whole answer (until the server closes). */
static const char *roundtrip(uv_loop_t *loop, int port, client_t *c, const char *request,
                             size_t len)
{
    client_start(loop, port, c, request, len, false);
    run_until(loop, &c->done);
    return c->resp;
}

static void test_server(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_obs_server_t *s = kc_obs_server_new(&loop, NULL);
    assert_non_null(s);
    int port = 0;
    assert_int_equal(kc_obs_server_listen(s, "127.0.0.1", 0, &port), 0);
    assert_true(port > 0);
    static client_t c;

#define RT(req) roundtrip(&loop, port, &c, (req), sizeof(req) - 1)
    const char *r = RT("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "\r\nContent-Length: 3\r\n"));
    assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
    assert_non_null(strstr(r, "\r\n\r\nok\n"));

    r = RT("GET /readyz HTTP/1.1\r\n\r\n"); /* no coordinator */
    assert_non_null(strstr(r, "HTTP/1.1 503 Service Unavailable\r\n"));

    r = RT("GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    const char *body = strstr(r, "\r\n\r\n");
    assert_non_null(body);
    check_exposition(body + 4);
    assert_non_null(strstr(body, "\nkcoord_http_requests_total{code=\"503\"} 1\n"));

    r = RT("GET /nope HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
    r = RT("DELETE /metrics HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 405 Method Not Allowed\r\n"));
    assert_non_null(strstr(r, "\r\nAllow: GET\r\n"));
    r = RT("GET /metrics HTTP/1.1\r\nno colon\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 400 Bad Request\r\n"));
    r = RT("\x00\x00\x00\x10\x00\x12\x00\x03"); /* a Kafka frame: refused at once */
    assert_non_null(strstr(r, "HTTP/1.1 400 Bad Request\r\n"));
    r = RT("GET /v1/groups HTTP/1.1\r\n\r\n"); /* no coordinator */
    assert_non_null(strstr(r, "HTTP/1.1 503 "));
    assert_non_null(strstr(r, "{\"error\":\"shutting down\"}"));

    /* Exactly the limit, so that the server has read everything when it answers and closes. */
    static char big[KC_HTTP_MAX_REQUEST];
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', sizeof(big) - 5);
    r = roundtrip(&loop, port, &c, big, sizeof(big));
    assert_non_null(strstr(r, "HTTP/1.1 431 "));
#undef RT

    /* Closing the server closes everything: the loop has no handles left. */
    kc_obs_server_close(s);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(kc_obs.http_requests[0], 2); /* 200: /healthz, /metrics */
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- The cluster's endpoints ---------------------------------------------------------------- */

/* The cluster room is not started: kc_cluster_status is replaced at link time (-Wl,--wrap, see
 * the Makefile) by this fake, which answers `fake_status`. */
static kc_cluster_status_t fake_status;
static int fake_cluster;

void __wrap_kc_cluster_status(const kc_cluster_t *cl, kc_cluster_status_t *out)
{
    assert_ptr_equal(cl, (const kc_cluster_t *)&fake_cluster);
    *out = fake_status;
}

/* On a node of a cluster, /v1/cluster shows the raft view, /metrics has the cluster's families
 * (in the strict format) and /readyz is 503 while no leader is known; a single node answers 404
 * on /v1/cluster and has none of them. */
static void test_server_cluster(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_obs_server_t *s = kc_obs_server_new(&loop, NULL);
    assert_non_null(s);
    int port = 0;
    assert_int_equal(kc_obs_server_listen(s, "127.0.0.1", 0, &port), 0);
    static client_t c;
#define RT(req) roundtrip(&loop, port, &c, (req), sizeof(req) - 1)
    const char *r = RT("GET /v1/cluster HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
    assert_non_null(strstr(r, "{\"error\":\"not a cluster: this node runs alone"));
    r = RT("GET /metrics HTTP/1.1\r\n\r\n");
    assert_null(strstr(r, "kcoord_cluster_"));

    memset(&fake_status, 0, sizeof(fake_status));
    fake_status.self = 2;
    fake_status.leader = 1;
    fake_status.raft_state = "follower";
    fake_status.term = 3;
    fake_status.commit_index = fake_status.applied_index = fake_status.last_index = 10;
    fake_status.n_voters = 2;
    fake_status.voters[0] = (kc_cluster_voter_t){.id = 1,
                                                 .raft_address = "a:1",
                                                 .role = 1,
                                                 .match_index = -1,
                                                 .last_contact_ms = -1,
                                                 .last_caught_up_ms = -1};
    fake_status.voters[1] = (kc_cluster_voter_t){.id = 2,
                                                 .raft_address = "b:1",
                                                 .role = 1,
                                                 .match_index = 10,
                                                 .last_contact_ms = -1,
                                                 .last_caught_up_ms = -1};
    kc_obs_server_set_cluster(s, (kc_cluster_t *)&fake_cluster);
    r = RT("GET /v1/cluster HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "\r\nContent-Type: application/json\r\n"));
    const char *body = strstr(r, "\r\n\r\n");
    assert_non_null(body);
    assert_true(json_valid(body + 4, strlen(body + 4)));
    assert_non_null(strstr(body, "{\"self\":2,\"leader\":1,\"is_leader\":false,"));
    r = RT("GET /metrics HTTP/1.1\r\n\r\n");
    body = strstr(r, "\r\n\r\n");
    assert_non_null(body);
    check_exposition(body + 4);
    assert_non_null(strstr(body, "\nkcoord_cluster_term 3\n"));
    assert_non_null(strstr(body, "\nkcoord_cluster_leader 1\n"));
    /* No coordinator: not ready for that reason, the leader being known. */
    r = RT("GET /readyz HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 503 "));
    assert_non_null(strstr(r, "not ready: shutting down"));
    fake_status.leader = -1;
    fake_status.raft_state = "candidate";
    r = RT("GET /readyz HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 503 "));
    assert_non_null(strstr(r, "not ready: node 2 is a member of a cluster with no known leader "
                              "(raft state candidate, term 3)"));
    kc_obs_server_set_cluster(s, NULL);
    r = RT("GET /v1/cluster HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
#undef RT
    kc_obs_server_close(s);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- The server's bounds ------------------------------------------------------------------- */

static const char *RT_HEALTHZ(uv_loop_t *loop, int port, client_t *c)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\n\r\n";
    return roundtrip(loop, port, c, req, sizeof(req) - 1);
}

static void run_until_n(uv_loop_t *loop, const uint64_t *v, uint64_t want)
{
    for (int i = 0; i < 100000 && *v != want; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(*v, want);
}

static const char ANSWER_431[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                                 "Content-Type: text/plain; charset=utf-8\r\n"
                                 "Content-Length: 23\r\n"
                                 "Connection: close\r\n"
                                 "\r\n"
                                 "request head too large\n";
static const char ANSWER_503[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                 "Content-Type: text/plain; charset=utf-8\r\n"
                                 "Content-Length: 39\r\n"
                                 "Connection: close\r\n"
                                 "Retry-After: 1\r\n"
                                 "\r\n"
                                 "too many HTTP connections; retry later\n";

static void test_server_bounds(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_obs_server_t *s = kc_obs_server_new(&loop, NULL);
    assert_non_null(s);
    kc_conf_t conf;
    kc_conf_init(&conf);
    char err[256];
    assert_int_equal(
        kc_conf_set(&conf, "metrics.max.connections", "2", KC_CONF_SRC_SET, err, sizeof err), 0);
    assert_int_equal(
        kc_conf_set(&conf, "metrics.request.timeout.ms", "200", KC_CONF_SRC_SET, err, sizeof err),
        0);
    kc_obs_server_configure(s, &conf);
    kc_conf_free(&conf);
    int port = 0;
    assert_int_equal(kc_obs_server_listen(s, "127.0.0.1", 0, &port), 0);
    static client_t c, a[2], b[3];

    /* A head of 200 KB, sent in two parts, the second once the answer began to arrive: the
     * exact 431, then the end of the stream, not a reset (the server drains what the client
     * still sends before it closes). */
    static char big[200000];
    static const char line[] = "GET /metrics HTTP/1.1\r\nX-Big: ";
    memcpy(big, line, sizeof(line) - 1);
    memset(big + sizeof(line) - 1, 'a', sizeof(big) - (sizeof(line) - 1) - 4);
    memcpy(big + sizeof(big) - 4, "\r\n\r\n", 4);
    client_start(&loop, port, &c, big, 10000, false);
    c.then = big + 10000;
    c.then_len = sizeof(big) - 10000;
    run_until(&loop, &c.done);
    assert_string_equal(c.resp, ANSWER_431);
    assert_null(c.then); /* the second part was sent */
    assert_int_equal(c.eof, 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.werr, 0);
    assert_int_equal(kc_obs.http_requests[4], 1);

    /* A request with a body: answered, the body drained, no reset. */
    static char with_body[100000];
    static const char head[] = "GET /healthz HTTP/1.1\r\nContent-Length: 99950\r\n\r\n";
    memset(with_body, 'b', sizeof(with_body));
    memcpy(with_body, head, sizeof(head) - 1);
    const char *r = roundtrip(&loop, port, &c, with_body, sizeof(with_body));
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "\r\n\r\nok\n"));
    assert_int_equal(c.err, 0);
    assert_int_equal(c.werr, 0);

    /* Two connections that never finish their head fill metrics.max.connections=2. */
    run_until_n(&loop, &kc_obs.http_conn_open, 0); /* the server saw the clients close */
    static const char partial[] = "GET /healthz HTTP/1.1\r\n";
    for (int i = 0; i < 2; i++)
        client_start(&loop, port, &a[i], partial, sizeof(partial) - 1, false);
    run_until_n(&loop, &kc_obs.http_conn_open, 2);
    /* The next two get the 503 at once (and stay open: the server lingers for their close); the
     * one after them is closed without an answer. */
    static const char get[] = "GET /healthz HTTP/1.1\r\n\r\n";
    for (int i = 0; i < 2; i++) {
        client_start(&loop, port, &b[i], get, sizeof(get) - 1, true);
        run_until(&loop, &b[i].eof);
        assert_string_equal(b[i].resp, ANSWER_503);
    }
    client_start(&loop, port, &b[2], get, sizeof(get) - 1, false);
    run_until(&loop, &b[2].done);
    assert_int_equal(b[2].len, 0);
    assert_int_equal(kc_obs.http_conn_refused, 3);
    assert_int_equal(kc_obs.http_requests[5], 2);

    /* The two silent ones time out (metrics.request.timeout.ms) without an answer; then a new
     * connection is served again. */
    for (int i = 0; i < 2; i++) {
        run_until(&loop, &a[i].done);
        assert_int_equal(a[i].len, 0);
    }
    assert_int_equal(kc_obs.http_timeouts, 2);
    r = RT_HEALTHZ(&loop, port, &c);
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));

    /* The metrics of it all. */
    kc_obs_buf_t m = {0};
    kc_obs_render_metrics(&m, NULL);
    check_exposition(m.p);
    assert_non_null(strstr(m.p, "\nkcoord_http_connections_refused_total 3\n"));
    assert_non_null(strstr(m.p, "\nkcoord_http_timeouts_total 2\n"));
    assert_non_null(strstr(m.p, "\nkcoord_http_response_bytes_total "));
    kc_obs_buf_free(&m);
    assert_true(kc_obs.http_bytes > 2 * sizeof(ANSWER_503));

    /* Closing the server with refused connections still lingering closes everything. */
    for (int i = 0; i < 2; i++)
        client_close(&b[i]);
    kc_obs_server_close(s);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(kc_obs.http_conn_open, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- /v1/groups, streamed ------------------------------------------------------------------ */

/* The body of an HTTP answer in r: decoded from chunks when the head says so (checking the
 * framing: hex size, CRLF, data, CRLF, ..., 0, CRLF, CRLF, nothing after). *n_chunks counts
 * the chunks; *largest is the largest. Returns malloc'd text. */
static char *body_of(const char *r, size_t len, size_t *n_chunks, size_t *largest)
{
    const char *b = strstr(r, "\r\n\r\n");
    assert_non_null(b);
    b += 4;
    size_t n = len - (size_t)(b - r);
    char *out = malloc(n + 1);
    assert_non_null(out);
    *n_chunks = *largest = 0;
    const char *te = strstr(r, "\r\nTransfer-Encoding: chunked\r\n");
    if (te == NULL || te > b) {
        memcpy(out, b, n);
        out[n] = '\0';
        return out;
    }
    assert_null(strstr(r, "Content-Length"));
    size_t o = 0;
    for (;;) {
        char *end;
        unsigned long sz = strtoul(b, &end, 16);
        assert_true(end > b && end[0] == '\r' && end[1] == '\n');
        b = end + 2;
        if (sz == 0) {
            assert_string_equal(b, "\r\n");
            break;
        }
        assert_true(sz <= n);
        memcpy(out + o, b, sz);
        o += sz;
        b += sz;
        assert_true(b[0] == '\r' && b[1] == '\n');
        b += 2;
        (*n_chunks)++;
        if (sz > *largest)
            *largest = sz;
    }
    out[o] = '\0';
    return out;
}

/* The top-level objects of a JSON array (copies, NUL-terminated), in order. */
static size_t objects_of(const char *json, char **objs, size_t max)
{
    size_t n = 0;
    int depth = 0;
    bool in_str = false;
    const char *start = NULL;
    for (const char *p = json; *p; p++) {
        if (in_str) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_str = false;
            continue;
        }
        if (*p == '"') {
            in_str = true;
        } else if (*p == '{' || *p == '[') {
            if (++depth == 2)
                start = p;
        } else if (*p == '}' || *p == ']') {
            if (depth-- == 2) {
                assert_true(n < max);
                size_t len = (size_t)(p + 1 - start);
                objs[n] = malloc(len + 1);
                memcpy(objs[n], start, len);
                objs[n][len] = '\0';
                n++;
            }
        }
    }
    return n;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_objects(char **objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(objs[i]);
}

/* Percent-encode s[0..n) (everything but letters and digits). */
static void percent_encode(const char *s, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
            *out++ = (char)ch;
        else
            out += sprintf(out, "%%%02X", ch);
    }
    *out = '\0';
}

/* The group id of a summary object, decoded from its JSON string (ids here have no escapes
 * but \" and \\ and \u00XX). */
static size_t id_of(const char *obj, char *out)
{
    const char *p = strstr(obj, "{\"group_id\":\"");
    assert_ptr_equal(p, obj);
    p += 13;
    size_t n = 0;
    while (*p != '"') {
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                out[n++] = (char)strtol((char[]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
                p += 5;
                continue;
            }
            if (*p == 'n')
                out[n++] = '\n';
            else
                out[n++] = *p;
            p++;
            continue;
        }
        out[n++] = *p++;
    }
    out[n] = '\0';
    return n;
}

enum { N_CLASSIC = 400, N_CONSUMER = 8, N_GROUPS = N_CLASSIC + N_CONSUMER };

static void test_groups_streamed(void **state)
{
    (void)state;
    memset(&kc_obs, 0, sizeof(kc_obs));
    char dir[] = "/tmp/kc-obs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    kc_conf_init(&conf);
    char err[256];
    assert_int_equal(kc_conf_set(&conf, "data.dir", dir, KC_CONF_SRC_SET, err, sizeof(err)), 0);
    assert_int_equal(
        kc_conf_set(&conf, "offsets.topic.num.partitions", "3", KC_CONF_SRC_SET, err, sizeof(err)),
        0);
    assert_int_equal(
        kc_conf_set(&conf, "metrics.chunk.bytes", "1024", KC_CONF_SRC_SET, err, sizeof(err)), 0);
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_coord_t *co = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    kc_coord_set_events(co, &kc_obs_coord_events);
    assert_non_null(co);
    run_until_loaded(&loop, co);

    /* Groups holding only offsets (Empty, no protocol), with ids that need escaping. */
    static const char *const odd[] = {"quote\"d", "back\\slash", "ctl\x01z", "new\nline", "a"};
    for (int i = 0; i < N_CLASSIC; i++) {
        char id[32];
        int len = i < 5 ? (int)strlen(odd[i]) : snprintf(id, sizeof(id), "group-%04d", i);
        kc_str_t gid = {i < 5 ? odd[i] : id, len};
        kc_partition_t *p = kc_coord_partition(co, gid);
        assert_int_equal(kc_gm_validate_commit(p->groups, kc_time_same(1000), 8, gid, -1,
                                               KC_STR_EMPTY, KC_STR_NULL),
                         0);
    }
    /* And a few KIP-848 consumer groups, with a member each. */
    kc_arena_t arena;
    kc_arena_init(&arena);
    for (int i = 0; i < N_CONSUMER; i++) {
        char id[32];
        kc_str_t gid = {id, snprintf(id, sizeof(id), "cg-%d", i)};
        kc_consumer_group_heartbeat_request_t q;
        kc_consumer_group_heartbeat_request_init(&q);
        q.group_id = gid;
        q.member_id = KC_STR_EMPTY;
        q.member_epoch = 0;
        q.rebalance_timeout_ms = 60000;
        static kc_str_t topics[] = {{"t", 1}};
        q.subscribed_topic_names.v = topics;
        q.subscribed_topic_names.n = 1;
        q.topic_partitions.v = NULL;
        q.topic_partitions.n = 0;
        kc_consumer_group_heartbeat_response_t hr;
        kc_gm_consumer_heartbeat(kc_coord_partition(co, gid)->groups, kc_coord_time(co), 0, &q,
                                 KC_STR_LIT("client"), KC_STR_LIT("/127.0.0.1"), &arena, &hr);
        assert_int_equal(hr.error_code, 0);
    }
    kc_arena_free(&arena);
    /* What the whole list looked like when it was built in one piece. */
    kc_obs_buf_t old = {0};
    bool first = true;
    kc_obs_buf_puts(&old, "[");
    for (int32_t i = 0; i < kc_coord_partitions(co); i++)
        kc_gm_json_list(kc_coord_partition_at(co, i)->groups, 1000, kc_obs_buf_emit, &old, &first);
    kc_obs_buf_puts(&old, "]\n");
    assert_true(json_valid(old.p, old.len));
    static char *want[N_GROUPS + 1], *got[N_GROUPS + 1], *page[N_GROUPS + 1];
    assert_int_equal(objects_of(old.p, want, N_GROUPS + 1), N_GROUPS);
    qsort(want, N_GROUPS, sizeof(want[0]), str_cmp);

    kc_obs_server_t *s = kc_obs_server_new(&loop, co);
    assert_non_null(s);
    kc_obs_server_configure(s, &conf);
    int port = 0;
    assert_int_equal(kc_obs_server_listen(s, "127.0.0.1", 0, &port), 0);
    static client_t c;

    /* HTTP/1.1: chunked, pieces of about metrics.chunk.bytes, the same objects as before. */
    static const char get11[] = "GET /v1/groups HTTP/1.1\r\nHost: x\r\n\r\n";
    const char *r = roundtrip(&loop, port, &c, get11, sizeof(get11) - 1);
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"));
    size_t n_chunks, largest;
    char *full = body_of(r, c.len, &n_chunks, &largest);
    assert_true(json_valid(full, strlen(full)));
    assert_true(n_chunks > 20);
    assert_true(largest < 1024 + 512); /* a piece stops at the first group past the size */
    assert_int_equal(objects_of(full, got, N_GROUPS + 1), N_GROUPS);
    char *first_obj = strdup(got[0]), *last_obj = strdup(got[N_GROUPS - 1]);
    qsort(got, N_GROUPS, sizeof(got[0]), str_cmp);
    for (int i = 0; i < N_GROUPS; i++)
        assert_string_equal(got[i], want[i]);
    free_objects(got, N_GROUPS);

    /* HTTP/1.0: the same bytes, delimited by the close. */
    static const char get10[] = "GET /v1/groups HTTP/1.0\r\n\r\n";
    r = roundtrip(&loop, port, &c, get10, sizeof(get10) - 1);
    assert_null(strstr(r, "Transfer-Encoding"));
    char *body10 = body_of(r, c.len, &n_chunks, &largest);
    assert_string_equal(body10, full);
    free(body10);

    /* Pages of 37 through ?limit and ?after, every id percent-encoded: the same list. */
    static char req[512];
    size_t n_paged = 0;
    char after[64] = "", enc[200] = "";
    for (;;) {
        snprintf(req, sizeof(req), "GET /v1/groups?limit=37%s%s HTTP/1.1\r\n\r\n",
                 after[0] ? "&after=" : "", enc);
        r = roundtrip(&loop, port, &c, req, strlen(req));
        assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
        char *b = body_of(r, c.len, &n_chunks, &largest);
        assert_true(json_valid(b, strlen(b)));
        size_t n = objects_of(b, page, N_GROUPS + 1);
        free(b);
        assert_true(n <= 37);
        for (size_t i = 0; i < n; i++) {
            assert_true(n_paged < N_GROUPS);
            got[n_paged++] = page[i];
        }
        if (n < 37)
            break;
        size_t alen = id_of(page[n - 1], after);
        percent_encode(after, alen, enc);
    }
    assert_int_equal(n_paged, N_GROUPS);
    char *again = NULL;
    {
        kc_obs_buf_t j = {0};
        kc_obs_buf_puts(&j, "[");
        for (size_t i = 0; i < n_paged; i++) {
            if (i > 0)
                kc_obs_buf_puts(&j, ",");
            kc_obs_buf_puts(&j, got[i]);
        }
        kc_obs_buf_puts(&j, "]\n");
        again = j.p;
    }
    assert_string_equal(again, full);                   /* same order, same bytes */
    percent_encode(after, id_of(last_obj, after), enc); /* after the last group: nothing */
    snprintf(req, sizeof(req), "GET /v1/groups?after=%s HTTP/1.1\r\n\r\n", enc);
    r = roundtrip(&loop, port, &c, req, strlen(req));
    char *empty = body_of(r, c.len, &n_chunks, &largest);
    assert_string_equal(empty, "[]\n");
    free(empty);
    free(again);
    free_objects(got, n_paged);
    r = roundtrip(&loop, port, &c, "GET /v1/groups?limit=0 HTTP/1.1\r\n\r\n", 36);
    assert_non_null(strstr(r, "HTTP/1.1 400 "));
    r = roundtrip(&loop, port, &c, "GET /v1/groups?after=%zz HTTP/1.1\r\n\r\n", 38);
    assert_non_null(strstr(r, "HTTP/1.1 400 "));

    /* A group deleted while the list is being sent is left out: the last one, after the
     * first piece went out. The list is still valid JSON. */
    char victim[64], first_id[64];
    size_t vlen = id_of(last_obj, victim);
    id_of(first_obj, first_id);
    client_start(&loop, port, &c, get11, sizeof(get11) - 1, false);
    for (int i = 0; i < 100000 && strstr(c.resp, first_id) == NULL; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_null(strstr(c.resp, victim));
    kc_str_t vid = {victim, (int32_t)vlen};
    assert_int_equal(kc_gm_delete(kc_coord_partition(co, vid)->groups, kc_time_same(2000), vid), 0);
    run_until(&loop, &c.done);
    char *b = body_of(c.resp, c.len, &n_chunks, &largest);
    assert_true(json_valid(b, strlen(b)));
    assert_int_equal(objects_of(b, got, N_GROUPS + 1), N_GROUPS - 1);
    free_objects(got, N_GROUPS - 1);
    assert_null(strstr(b, victim));
    free(b);

    /* The server closes in the middle of a list: the connection and its copy of the ids go. */
    client_start(&loop, port, &c, get11, sizeof(get11) - 1, false);
    for (int i = 0; i < 100000 && c.len == 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    kc_obs_server_close(s);
    run_until(&loop, &c.done);
    assert_int_equal(kc_obs.http_conn_open, 0);

    free(first_obj);
    free(last_obj);
    free(full);
    free_objects(want, N_GROUPS);
    kc_obs_buf_free(&old);
    closed = 0;
    kc_coord_close(co, on_closed, NULL);
    run_until(&loop, &closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    memset(&kc_obs, 0, sizeof(kc_obs));
}

/* ---- The setting --------------------------------------------------------------------------- */

static void test_setting(void **state)
{
    (void)state;
    kc_conf_t c;
    kc_conf_init(&c);
    char err[256];
    assert_string_equal(c.metrics_listener, "127.0.0.1:9404");
    assert_int_equal(kc_conf_set(&c, "metrics.listener", "", KC_CONF_SRC_SET, err, sizeof err), 0);
    assert_string_equal(c.metrics_listener, "");
    assert_int_equal(
        kc_conf_set(&c, "metrics.listener", "[::1]:0", KC_CONF_SRC_SET, err, sizeof err), 0);
    assert_int_equal(kc_conf_set(&c, "metrics.listener", "127.0.0.1:1,127.0.0.1:2", KC_CONF_SRC_SET,
                                 err, sizeof err),
                     -1);
    assert_string_equal(err, "metrics.listener: \"127.0.0.1:1,127.0.0.1:2\" is not a single "
                             "host:port (it has 2 entries) (expected empty or host:port or "
                             "[ipv6]:port, port 0..65535)");
    assert_int_equal(kc_conf_set(&c, "metrics.listener", "nope", KC_CONF_SRC_SET, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "metrics.listener: \"nope\""));
    assert_string_equal(c.metrics_listener, "[::1]:0");
    kc_conf_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_requests),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_percent_decode),
        cmocka_unit_test(test_prom_writers),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_net_counters),
        cmocka_unit_test(test_coordinator_metrics_and_readiness),
        cmocka_unit_test(test_server),
        cmocka_unit_test(test_server_cluster),
        cmocka_unit_test(test_server_bounds),
        cmocka_unit_test(test_groups_streamed),
        cmocka_unit_test(test_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
