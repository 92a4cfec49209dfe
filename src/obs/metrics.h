/* metrics.h - the observability room's counters, and the Prometheus text format they are shown in.
 *
 * The daemon's hot paths call the kc_obs_* functions below: each is a few plain uint64
 * increments on one process-wide table (the event loop is single-threaded, and every caller
 * is on the loop thread: the coordinator measures its thread-pool jobs there and records them
 * when the job's completion runs on the loop). Nothing here allocates or locks.
 *
 * What is derived at scrape time instead (groups, members, rebalances, partition states and
 * log sizes) is read from the coordinator by obs.c when /metrics is asked for; this file only
 * writes it out with the kc_prom_* helpers, which produce Prometheus' text exposition format
 * 0.0.4 (# HELP and # TYPE lines, label values escaped, histograms as cumulative _bucket
 * series with le="+Inf" last, then _sum and _count). docs/metrics.md lists every metric.
 *
 * To add a metric: a field in kc_obs_counters_t, an increment function, and its lines in
 * kc_obs_write_counters (or in obs.c when it is computed from the coordinator), and a row in
 * docs/metrics.md.
 */
#ifndef KC_OBS_METRICS_H
#define KC_OBS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"

/* ---- An output buffer ------------------------------------------------------------------- */

/* A growable byte buffer. Zero-initialise it; kc_obs_buf_free releases it. When memory runs
 * out it stops growing and sets `oom`: the caller checks once at the end. */
typedef struct kc_obs_buf_s {
    char *p;
    size_t len, cap;
    bool oom;
} kc_obs_buf_t;

void kc_obs_buf_put(kc_obs_buf_t *b, const char *s, size_t n);
void kc_obs_buf_puts(kc_obs_buf_t *b, const char *s);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void kc_obs_buf_printf(kc_obs_buf_t *b, const char *fmt, ...);
void kc_obs_buf_free(kc_obs_buf_t *b);
/* A kc_emit_fn-shaped adapter: `arg` is a kc_obs_buf_t. */
void kc_obs_buf_emit(void *arg, const char *s, size_t n);

/* ---- Histograms --------------------------------------------------------------------------- */

enum { KC_HIST_MAX_BUCKETS = 20 };

/* Bucket i counts observations <= bounds[i] (and above bounds[i - 1]); bucket n_bounds counts
 * the rest (+Inf). Counts are not cumulative here; kc_prom_histogram makes them so. */
typedef struct kc_hist_s {
    uint64_t counts[KC_HIST_MAX_BUCKETS + 1];
    double sum;
} kc_hist_t;

void kc_hist_observe(kc_hist_t *h, const double *bounds, size_t n_bounds, double v);

/* Upper bounds in seconds of the latency histograms (requests, fsync). */
#define KC_OBS_LATENCY_BUCKETS 16
extern const double kc_obs_latency_bounds_s[KC_OBS_LATENCY_BUCKETS];
/* Upper bounds of the append batch size histogram, in records. */
#define KC_OBS_BATCH_BUCKETS 12
extern const double kc_obs_batch_bounds[KC_OBS_BATCH_BUCKETS];

/* ---- The Prometheus text format ------------------------------------------------------------ */

/* "# HELP name help\n# TYPE name type\n"; `help` is escaped (backslash, newline). */
void kc_prom_family(kc_obs_buf_t *b, const char *name, const char *type, const char *help);
/* Append `v` as a label value: backslash, double quote and newline escaped. */
void kc_prom_label_value(kc_obs_buf_t *b, const char *v, size_t n);
/* A number as Prometheus writes it: integers without a fraction, +Inf, NaN. */
void kc_prom_number(kc_obs_buf_t *b, double v);
/* One sample line: name, then `{labels}` when labels is not empty (already formatted, e.g.
 * `api="Fetch",version="4"`), then the value. */
void kc_prom_sample(kc_obs_buf_t *b, const char *name, const char *labels, double v);
/* A whole histogram series: name_bucket{labels,le="..."} (cumulative, +Inf last), name_sum,
 * name_count. `counts` has n_bounds + 1 non-cumulative entries. */
void kc_prom_histogram(kc_obs_buf_t *b, const char *name, const char *labels, const double *bounds,
                       size_t n_bounds, const uint64_t *counts, double sum);

/* ---- The counters --------------------------------------------------------------------------- */

enum {
    KC_OBS_APIS = 64,     /* API slots: the position of an API in kc_api_table (test_api_rows
                           * fails when kc_api_table outgrows them) */
    KC_OBS_VERSIONS = 32, /* versions 0..31 */
    KC_OBS_ERRS = 192,    /* error codes -1..190; others are not counted */
};

/* The SASL mechanisms counted, in the auth room's order ("PLAIN", "SCRAM-SHA-256",
 * "SCRAM-SHA-512"), then one for a mechanism kcoord does not implement. */
enum { KC_OBS_SASL_OTHER = 3, KC_OBS_SASL_MECHS = 4 };

typedef struct kc_obs_counters_s {
    uint64_t requests[KC_OBS_APIS][KC_OBS_VERSIONS];
    uint64_t errors[KC_OBS_APIS][KC_OBS_ERRS]; /* [api][code + 1] */
    kc_hist_t latency[KC_OBS_APIS];
    uint64_t requests_refused[2];  /* [0] unsupported API or version, [1] malformed */
    uint64_t requests_over_memory; /* refused: over request.max.memory.bytes */
    uint64_t conn_open, conn_accepted;
    uint64_t conn_refused[2];  /* KC_NET_REFUSED_*: closed as soon as accepted */
    uint64_t accepts_deferred; /* max.connections reached: accepting paused */
    uint64_t reads_paused[4];  /* KC_NET_PAUSE_*: a connection stopped being read */
    uint64_t idle_closed[2];   /* [0] idle, [1] idle with answers unread */
    uint64_t tls_handshakes;   /* TLS handshakes finished */
    uint64_t tls_failures[4];  /* KC_NET_TLS_*: TLS connections closed on a failure */
    /* SASL exchanges ended: [0] authentications, [1] re-authentications; by mechanism (the
     * KC_OBS_SASL_* positions); [0] succeeded, [1] failed. */
    uint64_t sasl[2][KC_OBS_SASL_MECHS][2];
    uint64_t queued_request_bytes, unsent_response_bytes; /* gauges */
    uint64_t offset_commits;    /* OffsetCommit requests answered with at least one offset */
    uint64_t offsets_committed; /* partitions of those, acknowledged without error */
    uint64_t log_append_bytes, log_append_batches;
    kc_hist_t log_append_records;
    kc_hist_t fsync;
    uint64_t log_write_failures;
    uint64_t log_segments_lost; /* active segments deleted or replaced under the daemon */
    uint64_t log_corrupt;       /* partition loads refused for corrupt log data */
    uint64_t cleaner_runs[2];   /* [0] ok, [1] failed */
    uint64_t cleaner_bytes_reclaimed;
    uint64_t http_requests[7];  /* by status: 200, 400, 404, 405, 431, 503, any other */
    uint64_t http_conn_open;    /* HTTP connections open now */
    uint64_t http_conn_refused; /* beyond metrics.max.connections */
    uint64_t http_timeouts;     /* closed by metrics.request.timeout.ms */
    uint64_t http_bytes;        /* bytes of answers written */
} kc_obs_counters_t;

/* The process-wide counters. Read them freely; change them only through the functions below
 * (tests may memset the struct to start from zero). */
extern kc_obs_counters_t kc_obs;

/* The slot of API `key` (its position in kc_api_table), or -1. */
int kc_obs_api_slot(int16_t key);

/* A request was decoded: count it by API and version. */
void kc_obs_request(int16_t key, int16_t version);
/* A request was refused before a handler saw it: an unsupported API or version, or malformed. */
void kc_obs_refused(bool malformed);
/* A response with error `code` (not 0) went out for API `key`. */
void kc_obs_error(int16_t key, int16_t code);
/* Count every nonzero error code the response `resp` of API `key`, version `version` carries:
 * its top-level code and, where the response has them, the per-topic, per-partition, per-group
 * and per-member codes (docs/metrics.md lists which). Returns, for an OffsetCommit, how many
 * partitions carry no error (for kc_obs_commit), else 0. */
uint32_t kc_obs_response(int16_t key, int16_t version, const void *resp);
/* A request of API `key` that arrived at `start_ns` (uv_hrtime) was answered now. */
void kc_obs_done(int16_t key, uint64_t start_ns);
/* An OffsetCommit was acknowledged with `n_ok` offsets stored. */
void kc_obs_commit(uint32_t n_ok);

/* The network room's events (kc_obs_net_events carries these to it). A Kafka client
 * connection was accepted / closed. */
void kc_obs_conn_accepted(void);
void kc_obs_conn_closed(void);

/* A connection was closed as soon as it was accepted, for `reason` (a KC_NET_REFUSED_*). */
void kc_obs_conn_refused(int reason);
/* max.connections was reached: a new connection waits in the backlog. */
void kc_obs_accept_deferred(void);
/* A connection stopped being read because of budget `reason` (a KC_NET_PAUSE_*). */
void kc_obs_net_paused(int reason);
/* The bytes of requests not yet answered, and of answers not yet written, all connections. */
void kc_obs_net_bytes(uint64_t requests, uint64_t unsent);
/* A connection was closed by connections.max.idle.ms; `unread`: answers were waiting for it. */
void kc_obs_conn_idle_closed(bool unread);
/* A TLS handshake finished; a TLS connection was closed for `reason` (a KC_NET_TLS_*). */
void kc_obs_tls_handshake(void);
void kc_obs_tls_failed(int reason);
/* A SASL exchange ended: `mech` is the position of its mechanism ("PLAIN", "SCRAM-SHA-256",
 * "SCRAM-SHA-512"; anything else counts as KC_OBS_SASL_OTHER), `reauth` a KIP-368
 * re-authentication, `ok` whether it succeeded. */
void kc_obs_sasl(int mech, bool reauth, bool ok);
/* A request was refused (its connection closed) for needing more than request.max.memory.bytes. */
void kc_obs_refused_memory(void);

/* The coordinator appended a batch of `records` records, `bytes` bytes, to a partition log. */
void kc_obs_log_append(uint64_t records, uint64_t bytes);
/* An fsync of a partition log took `ns` nanoseconds. */
void kc_obs_log_fsync(uint64_t ns);
/* A write or fsync of a partition log failed. */
void kc_obs_log_write_failed(void);
/* A partition's active segment was found deleted or replaced under the daemon. */
void kc_obs_log_segment_lost(void);
/* A partition was not served because its log holds corrupt data. */
void kc_obs_log_corrupt(void);
/* A compaction ran: ok, and the bytes of closed segments it freed. */
void kc_obs_cleaner_run(bool ok, int64_t bytes_reclaimed);
/* The HTTP listener answered with `status`. */
void kc_obs_http(int status);
/* An HTTP connection was accepted / closed; one was refused (metrics.max.connections); one was
 * closed by metrics.request.timeout.ms; `n` bytes of answers were handed to a socket. */
void kc_obs_http_conn_accepted(void);
void kc_obs_http_conn_closed(void);
void kc_obs_http_refused(void);
void kc_obs_http_timeout(void);
void kc_obs_http_bytes(uint64_t n);

/* Write every counter above in the text format, with # HELP and # TYPE lines. */
void kc_obs_write_counters(kc_obs_buf_t *b);

#endif
