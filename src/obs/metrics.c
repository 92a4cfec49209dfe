/* metrics.c - the process-wide counters and the Prometheus text format writer.
 *
 * Every kc_obs_* recorder is a bounds check and a few increments on `kc_obs`, called from the
 * loop thread only (see metrics.h). kc_obs_response counts a response's error codes with the
 * walker generated from proto/ (every error_code field the version carries, the same fields
 * kc_api_fail fills). The kc_prom_* writers produce the text
 * exposition format 0.0.4; kc_obs_write_counters writes the counters with them.
 */
#include "obs/metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "proto/gen_api.h"

kc_obs_counters_t kc_obs;

const double kc_obs_latency_bounds_s[KC_OBS_LATENCY_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
const double kc_obs_batch_bounds[KC_OBS_BATCH_BUCKETS] = {1,   2,   5,   10,   20,   50,
                                                          100, 200, 500, 1000, 5000, 10000};

_Static_assert(KC_OBS_LATENCY_BUCKETS <= KC_HIST_MAX_BUCKETS, "latency buckets fit kc_hist_t");
_Static_assert(KC_OBS_BATCH_BUCKETS <= KC_HIST_MAX_BUCKETS, "batch buckets fit kc_hist_t");

/* ---- The buffer ---------------------------------------------------------------------------- */

void kc_obs_buf_put(kc_obs_buf_t *b, const char *s, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void kc_obs_buf_puts(kc_obs_buf_t *b, const char *s)
{
    kc_obs_buf_put(b, s, strlen(s));
}

void kc_obs_buf_printf(kc_obs_buf_t *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        kc_obs_buf_put(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big == NULL) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    kc_obs_buf_put(b, big, (size_t)n);
    free(big);
}

void kc_obs_buf_free(kc_obs_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void kc_obs_buf_emit(void *arg, const char *s, size_t n)
{
    kc_obs_buf_put(arg, s, n);
}

/* ---- Histograms ----------------------------------------------------------------------------- */

void kc_hist_observe(kc_hist_t *h, const double *bounds, size_t n_bounds, double v)
{
    size_t i = 0;
    while (i < n_bounds && v > bounds[i])
        i++;
    h->counts[i]++;
    h->sum += v;
}

/* ---- The text format ------------------------------------------------------------------------ */

void kc_prom_family(kc_obs_buf_t *b, const char *name, const char *type, const char *help)
{
    kc_obs_buf_printf(b, "# HELP %s ", name);
    for (const char *s = help; *s; s++) {
        if (*s == '\\')
            kc_obs_buf_puts(b, "\\\\");
        else if (*s == '\n')
            kc_obs_buf_puts(b, "\\n");
        else
            kc_obs_buf_put(b, s, 1);
    }
    kc_obs_buf_printf(b, "\n# TYPE %s %s\n", name, type);
}

void kc_prom_label_value(kc_obs_buf_t *b, const char *v, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *esc = v[i] == '\\'   ? "\\\\"
                          : v[i] == '"'  ? "\\\""
                          : v[i] == '\n' ? "\\n"
                                         : NULL;
        if (esc == NULL) {
            run++;
            continue;
        }
        kc_obs_buf_put(b, v + i - run, run);
        run = 0;
        kc_obs_buf_puts(b, esc);
    }
    kc_obs_buf_put(b, v + n - run, run);
}

void kc_prom_number(kc_obs_buf_t *b, double v)
{
    if (isnan(v))
        kc_obs_buf_puts(b, "NaN");
    else if (isinf(v))
        kc_obs_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        kc_obs_buf_printf(b, "%.0f", v);
    else
        kc_obs_buf_printf(b, "%.17g", v);
}

void kc_prom_sample(kc_obs_buf_t *b, const char *name, const char *labels, double v)
{
    kc_obs_buf_puts(b, name);
    if (labels != NULL && *labels != '\0')
        kc_obs_buf_printf(b, "{%s}", labels);
    kc_obs_buf_puts(b, " ");
    kc_prom_number(b, v);
    kc_obs_buf_puts(b, "\n");
}

void kc_prom_histogram(kc_obs_buf_t *b, const char *name, const char *labels, const double *bounds,
                       size_t n_bounds, const uint64_t *counts, double sum)
{
    const char *sep = labels != NULL && *labels != '\0' ? "," : "";
    if (labels == NULL)
        labels = "";
    uint64_t cum = 0;
    for (size_t i = 0; i <= n_bounds; i++) {
        cum += counts[i];
        kc_obs_buf_printf(b, "%s_bucket{%s%sle=\"", name, labels, sep);
        if (i < n_bounds)
            kc_obs_buf_printf(b, "%g", bounds[i]);
        else
            kc_obs_buf_puts(b, "+Inf");
        kc_obs_buf_printf(b, "\"} %llu\n", (unsigned long long)cum);
    }
    char full[160];
    snprintf(full, sizeof(full), "%s_sum", name);
    kc_prom_sample(b, full, labels, sum);
    snprintf(full, sizeof(full), "%s_count", name);
    kc_prom_sample(b, full, labels, (double)cum);
}

/* ---- Recording ------------------------------------------------------------------------------- */

int kc_obs_api_slot(int16_t key)
{
    const kc_api_info_t *api = kc_api_find(key);
    if (api == NULL)
        return -1;
    ptrdiff_t i = api - kc_api_table;
    return i >= 0 && i < KC_OBS_APIS ? (int)i : -1;
}

void kc_obs_request(int16_t key, int16_t version)
{
    int i = kc_obs_api_slot(key);
    if (i >= 0 && version >= 0 && version < KC_OBS_VERSIONS)
        kc_obs.requests[i][version]++;
}

void kc_obs_refused(bool malformed)
{
    kc_obs.requests_refused[malformed ? 1 : 0]++;
}

void kc_obs_error(int16_t key, int16_t code)
{
    int i = kc_obs_api_slot(key);
    if (i >= 0 && code != 0 && code >= -1 && code < KC_OBS_ERRS - 1)
        kc_obs.errors[i][code + 1]++;
}

/* What kc_obs_response counts while it walks one response. */
typedef struct walk_s {
    int16_t key;
    uint32_t n_ok; /* error codes that are 0 */
} walk_t;

static void count_code(void *arg, int16_t code)
{
    walk_t *w = arg;
    if (code == 0)
        w->n_ok++;
    else
        kc_obs_error(w->key, code);
}

uint32_t kc_obs_response(int16_t key, int16_t version, const void *resp)
{
    const kc_api_info_t *api = kc_api_find(key);
    if (api == NULL)
        return 0;
    walk_t w = {.key = key, .n_ok = 0};
    api->walk_errors(resp, version, count_code, &w);
    /* An OffsetCommit's error codes are one per partition: those that are 0 were stored. */
    return key == KC_API_OFFSET_COMMIT ? w.n_ok : 0;
}

void kc_obs_done(int16_t key, uint64_t start_ns)
{
    int i = kc_obs_api_slot(key);
    if (i < 0 || start_ns == 0)
        return;
    uint64_t now = uv_hrtime();
    double s = now > start_ns ? (double)(now - start_ns) / 1e9 : 0.0;
    kc_hist_observe(&kc_obs.latency[i], kc_obs_latency_bounds_s, KC_OBS_LATENCY_BUCKETS, s);
}

void kc_obs_commit(uint32_t n_ok)
{
    if (n_ok == 0)
        return;
    kc_obs.offset_commits++;
    kc_obs.offsets_committed += n_ok;
}

void kc_obs_conn_accepted(void)
{
    kc_obs.conn_accepted++;
    kc_obs.conn_open++;
}

void kc_obs_conn_closed(void)
{
    if (kc_obs.conn_open > 0)
        kc_obs.conn_open--;
}

void kc_obs_conn_refused(int reason)
{
    if (reason >= 0 && reason < 2)
        kc_obs.conn_refused[reason]++;
}

void kc_obs_accept_deferred(void)
{
    kc_obs.accepts_deferred++;
}

void kc_obs_net_paused(int reason)
{
    if (reason >= 0 && reason < 4)
        kc_obs.reads_paused[reason]++;
}

void kc_obs_net_bytes(uint64_t requests, uint64_t unsent)
{
    kc_obs.queued_request_bytes = requests;
    kc_obs.unsent_response_bytes = unsent;
}

void kc_obs_conn_idle_closed(bool unread)
{
    kc_obs.idle_closed[unread ? 1 : 0]++;
}

void kc_obs_tls_handshake(void)
{
    kc_obs.tls_handshakes++;
}

void kc_obs_tls_failed(int reason)
{
    if (reason >= 0 && reason < 4)
        kc_obs.tls_failures[reason]++;
}

void kc_obs_sasl(int mech, bool reauth, bool ok)
{
    if (mech < 0 || mech >= KC_OBS_SASL_MECHS)
        mech = KC_OBS_SASL_OTHER;
    kc_obs.sasl[reauth ? 1 : 0][mech][ok ? 0 : 1]++;
}

void kc_obs_refused_memory(void)
{
    kc_obs.requests_over_memory++;
}

void kc_obs_log_append(uint64_t records, uint64_t bytes)
{
    kc_obs.log_append_batches++;
    kc_obs.log_append_bytes += bytes;
    kc_hist_observe(&kc_obs.log_append_records, kc_obs_batch_bounds, KC_OBS_BATCH_BUCKETS,
                    (double)records);
}

void kc_obs_log_fsync(uint64_t ns)
{
    kc_hist_observe(&kc_obs.fsync, kc_obs_latency_bounds_s, KC_OBS_LATENCY_BUCKETS,
                    (double)ns / 1e9);
}

void kc_obs_log_write_failed(void)
{
    kc_obs.log_write_failures++;
}

void kc_obs_log_segment_lost(void)
{
    kc_obs.log_segments_lost++;
}

void kc_obs_log_corrupt(void)
{
    kc_obs.log_corrupt++;
}

void kc_obs_cleaner_run(bool ok, int64_t bytes_reclaimed)
{
    kc_obs.cleaner_runs[ok ? 0 : 1]++;
    if (ok && bytes_reclaimed > 0)
        kc_obs.cleaner_bytes_reclaimed += (uint64_t)bytes_reclaimed;
}

static const int http_codes[6] = {200, 400, 404, 405, 431, 503};

void kc_obs_http(int status)
{
    size_t i = 0;
    while (i < 6 && http_codes[i] != status)
        i++;
    kc_obs.http_requests[i]++;
}

void kc_obs_http_conn_accepted(void)
{
    kc_obs.http_conn_open++;
}

void kc_obs_http_conn_closed(void)
{
    kc_obs.http_conn_open--;
}

void kc_obs_http_refused(void)
{
    kc_obs.http_conn_refused++;
}

void kc_obs_http_timeout(void)
{
    kc_obs.http_timeouts++;
}

void kc_obs_http_bytes(uint64_t n)
{
    kc_obs.http_bytes += n;
}

/* ---- Writing the counters ------------------------------------------------------------------ */

/* kcoord_sasl_authentications_total and kcoord_sasl_reauthentications_total, by mechanism and
 * result (Kafka's successful/failed-(re)authentication-total, split by mechanism). */
static void write_sasl(kc_obs_buf_t *b, const kc_obs_counters_t *c)
{
    static const char *const names[2] = {"kcoord_sasl_authentications_total",
                                         "kcoord_sasl_reauthentications_total"};
    static const char *const helps[2] = {
        "SASL authentications ended on SASL listeners, by mechanism (other: one kcoord does not "
        "implement) and result; each failure also logs a line (rate-limited).",
        "KIP-368 SASL re-authentications ended, by mechanism and result."};
    static const char *const mechs[KC_OBS_SASL_MECHS] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
                                                         "other"};
    static const char *const results[2] = {"ok", "failed"};
    char labels[96];
    for (int k = 0; k < 2; k++) {
        kc_prom_family(b, names[k], "counter", helps[k]);
        for (int m = 0; m < KC_OBS_SASL_MECHS; m++)
            for (int r = 0; r < 2; r++) {
                snprintf(labels, sizeof(labels), "mechanism=\"%s\",result=\"%s\"", mechs[m],
                         results[r]);
                kc_prom_sample(b, names[k], labels, (double)c->sasl[k][m][r]);
            }
    }
}

void kc_obs_write_counters(kc_obs_buf_t *b)
{
    const kc_obs_counters_t *c = &kc_obs;
    char labels[160];
    size_t n_apis = kc_api_count < KC_OBS_APIS ? kc_api_count : KC_OBS_APIS;

    kc_prom_family(b, "kcoord_requests_total", "counter",
                   "Kafka requests decoded, by API and version.");
    for (size_t i = 0; i < n_apis; i++)
        for (int v = 0; v < KC_OBS_VERSIONS; v++)
            if (c->requests[i][v]) {
                snprintf(labels, sizeof(labels), "api=\"%s\",version=\"%d\"", kc_api_table[i].name,
                         v);
                kc_prom_sample(b, "kcoord_requests_total", labels, (double)c->requests[i][v]);
            }

    kc_prom_family(b, "kcoord_requests_refused_total", "counter",
                   "Kafka requests that closed their connection before a handler saw them: an "
                   "API or version not served, or a malformed request.");
    kc_prom_sample(b, "kcoord_requests_refused_total", "reason=\"unsupported\"",
                   (double)c->requests_refused[0]);
    kc_prom_sample(b, "kcoord_requests_refused_total", "reason=\"malformed\"",
                   (double)c->requests_refused[1]);
    kc_prom_sample(b, "kcoord_requests_refused_total", "reason=\"memory\"",
                   (double)c->requests_over_memory);

    kc_prom_family(b, "kcoord_errors_total", "counter",
                   "Nonzero Kafka error codes in responses, by API and code (top-level, "
                   "per-group, per-topic, per-partition and per-member codes).");
    for (size_t i = 0; i < n_apis; i++)
        for (int e = 0; e < KC_OBS_ERRS; e++)
            if (c->errors[i][e]) {
                snprintf(labels, sizeof(labels), "api=\"%s\",code=\"%d\"", kc_api_table[i].name,
                         e - 1);
                kc_prom_sample(b, "kcoord_errors_total", labels, (double)c->errors[i][e]);
            }

    kc_prom_family(b, "kcoord_request_duration_seconds", "histogram",
                   "Time from a Kafka request's arrival to its response, by API (including the "
                   "wait for fsync and for parked JoinGroup, SyncGroup and Fetch requests).");
    for (size_t i = 0; i < n_apis; i++) {
        uint64_t n = 0;
        for (int k = 0; k <= KC_OBS_LATENCY_BUCKETS; k++)
            n += c->latency[i].counts[k];
        if (n == 0)
            continue;
        snprintf(labels, sizeof(labels), "api=\"%s\"", kc_api_table[i].name);
        kc_prom_histogram(b, "kcoord_request_duration_seconds", labels, kc_obs_latency_bounds_s,
                          KC_OBS_LATENCY_BUCKETS, c->latency[i].counts, c->latency[i].sum);
    }

    kc_prom_family(b, "kcoord_connections_open", "gauge", "Open Kafka client connections.");
    kc_prom_sample(b, "kcoord_connections_open", NULL, (double)c->conn_open);
    kc_prom_family(b, "kcoord_connections_accepted_total", "counter",
                   "Kafka client connections accepted.");
    kc_prom_sample(b, "kcoord_connections_accepted_total", NULL, (double)c->conn_accepted);
    kc_prom_family(b, "kcoord_connections_refused_total", "counter",
                   "Kafka client connections closed as soon as they were accepted: over "
                   "max.connections.per.ip, or into the file descriptors kept for the log.");
    kc_prom_sample(b, "kcoord_connections_refused_total", "reason=\"max_connections_per_ip\"",
                   (double)c->conn_refused[KC_NET_REFUSED_PER_IP]);
    kc_prom_sample(b, "kcoord_connections_refused_total", "reason=\"reserved_fds\"",
                   (double)c->conn_refused[KC_NET_REFUSED_FDS]);
    kc_prom_family(b, "kcoord_connection_accepts_deferred_total", "counter",
                   "Times a new connection had to wait in the backlog: max.connections open.");
    kc_prom_sample(b, "kcoord_connection_accepts_deferred_total", NULL,
                   (double)c->accepts_deferred);
    kc_prom_family(b, "kcoord_connection_reads_paused_total", "counter",
                   "Times a connection stopped being read, by the budget that stopped it.");
    static const char *const pause_reasons[4] = {"queued_max_requests", "queued_max_request_bytes",
                                                 "connection_max_unsent_bytes",
                                                 "queued_max_unsent_bytes"};
    for (int i = 0; i < 4; i++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", pause_reasons[i]);
        kc_prom_sample(b, "kcoord_connection_reads_paused_total", labels,
                       (double)c->reads_paused[i]);
    }
    kc_prom_family(b, "kcoord_connections_idle_closed_total", "counter",
                   "Connections closed by connections.max.idle.ms; answers_unread: answers were "
                   "waiting for a client that did not read them.");
    kc_prom_sample(b, "kcoord_connections_idle_closed_total", "reason=\"idle\"",
                   (double)c->idle_closed[0]);
    kc_prom_sample(b, "kcoord_connections_idle_closed_total", "reason=\"answers_unread\"",
                   (double)c->idle_closed[1]);
    kc_prom_family(b, "kcoord_tls_handshakes_total", "counter",
                   "TLS handshakes finished on SSL listeners.");
    kc_prom_sample(b, "kcoord_tls_handshakes_total", NULL, (double)c->tls_handshakes);
    kc_prom_family(b, "kcoord_tls_failures_total", "counter",
                   "TLS connections closed on a failure: a handshake that failed (garbage, a "
                   "plaintext request, a refused certificate) or did not finish in "
                   "ssl.handshake.timeout.ms, a subject no ssl.principal.mapping.rules rule "
                   "maps, a TLS error after the handshake.");
    static const char *const tls_reasons[4] = {"handshake", "timeout", "principal", "error"};
    for (int i = 0; i < 4; i++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", tls_reasons[i]);
        kc_prom_sample(b, "kcoord_tls_failures_total", labels, (double)c->tls_failures[i]);
    }
    write_sasl(b, c);
    kc_prom_family(b, "kcoord_queued_request_bytes", "gauge",
                   "Bytes of Kafka requests read and not yet answered, and of buffers of large "
                   "requests still arriving (queued.max.request.bytes).");
    kc_prom_sample(b, "kcoord_queued_request_bytes", NULL, (double)c->queued_request_bytes);
    kc_prom_family(b, "kcoord_unsent_response_bytes", "gauge",
                   "Bytes of answers not yet written to their clients (queued.max.unsent.bytes).");
    kc_prom_sample(b, "kcoord_unsent_response_bytes", NULL, (double)c->unsent_response_bytes);

    kc_prom_family(b, "kcoord_offset_commits_total", "counter",
                   "OffsetCommit requests acknowledged with at least one offset stored.");
    kc_prom_sample(b, "kcoord_offset_commits_total", NULL, (double)c->offset_commits);
    kc_prom_family(b, "kcoord_offsets_committed_total", "counter",
                   "Partition offsets stored by acknowledged OffsetCommit requests.");
    kc_prom_sample(b, "kcoord_offsets_committed_total", NULL, (double)c->offsets_committed);

    kc_prom_family(b, "kcoord_log_append_bytes_total", "counter",
                   "Bytes appended to the __consumer_offsets partition logs.");
    kc_prom_sample(b, "kcoord_log_append_bytes_total", NULL, (double)c->log_append_bytes);
    kc_prom_family(b, "kcoord_log_append_batch_records", "histogram",
                   "Records per batch appended to a partition log (one batch per partition per "
                   "loop iteration: the group commit).");
    kc_prom_histogram(b, "kcoord_log_append_batch_records", NULL, kc_obs_batch_bounds,
                      KC_OBS_BATCH_BUCKETS, c->log_append_records.counts,
                      c->log_append_records.sum);
    kc_prom_family(b, "kcoord_log_fsync_duration_seconds", "histogram",
                   "Duration of the fsyncs of the partition logs.");
    kc_prom_histogram(b, "kcoord_log_fsync_duration_seconds", NULL, kc_obs_latency_bounds_s,
                      KC_OBS_LATENCY_BUCKETS, c->fsync.counts, c->fsync.sum);
    kc_prom_family(b, "kcoord_log_write_failures_total", "counter",
                   "Failed appends or fsyncs of a partition log (each reloads its partition).");
    kc_prom_sample(b, "kcoord_log_write_failures_total", NULL, (double)c->log_write_failures);
    kc_prom_family(b, "kcoord_log_segments_lost_total", "counter",
                   "Active segments found deleted, replaced or truncated under the daemon (each "
                   "takes its partition out of service until a restart).");
    kc_prom_sample(b, "kcoord_log_segments_lost_total", NULL, (double)c->log_segments_lost);
    kc_prom_family(b, "kcoord_log_corrupt_total", "counter",
                   "Partition loads refused because the log holds corrupt data.");
    kc_prom_sample(b, "kcoord_log_corrupt_total", NULL, (double)c->log_corrupt);

    kc_prom_family(b, "kcoord_log_cleaner_runs_total", "counter",
                   "Compactions of a partition log's closed segments, by result.");
    kc_prom_sample(b, "kcoord_log_cleaner_runs_total", "result=\"ok\"", (double)c->cleaner_runs[0]);
    kc_prom_sample(b, "kcoord_log_cleaner_runs_total", "result=\"failed\"",
                   (double)c->cleaner_runs[1]);
    kc_prom_family(b, "kcoord_log_cleaner_reclaimed_bytes_total", "counter",
                   "Bytes of closed segments freed by compaction.");
    kc_prom_sample(b, "kcoord_log_cleaner_reclaimed_bytes_total", NULL,
                   (double)c->cleaner_bytes_reclaimed);

    kc_prom_family(b, "kcoord_http_requests_total", "counter",
                   "Requests to this HTTP listener, by response status.");
    for (size_t i = 0; i < 7; i++) {
        if (i < 6)
            snprintf(labels, sizeof(labels), "code=\"%d\"", http_codes[i]);
        else
            snprintf(labels, sizeof(labels), "code=\"other\"");
        kc_prom_sample(b, "kcoord_http_requests_total", labels, (double)c->http_requests[i]);
    }
    kc_prom_family(b, "kcoord_http_connections", "gauge",
                   "Open connections to this HTTP listener (those being refused included).");
    kc_prom_sample(b, "kcoord_http_connections", NULL, (double)c->http_conn_open);
    kc_prom_family(b, "kcoord_http_connections_refused_total", "counter",
                   "HTTP connections refused because metrics.max.connections were open: "
                   "answered 503, or closed at once when as many were already being refused.");
    kc_prom_sample(b, "kcoord_http_connections_refused_total", NULL, (double)c->http_conn_refused);
    kc_prom_family(b, "kcoord_http_timeouts_total", "counter",
                   "HTTP connections closed because the client did not send its request head, "
                   "or take the next piece of its answer, within metrics.request.timeout.ms.");
    kc_prom_sample(b, "kcoord_http_timeouts_total", NULL, (double)c->http_timeouts);
    kc_prom_family(b, "kcoord_http_response_bytes_total", "counter",
                   "Bytes of HTTP answers handed to the sockets (heads, bodies, chunk framing).");
    kc_prom_sample(b, "kcoord_http_response_bytes_total", NULL, (double)c->http_bytes);
}
