/* obs.c - the observability endpoints: /metrics, /healthz, /readyz, /v1/groups[/<id>],
 * /v1/cluster.
 *
 * http.c parses and answers; this file decides what to answer. The /metrics page is the
 * counters of metrics.c followed by what is read from the coordinator at scrape time, through
 * its shard door: every ACTIVE partition's groups (kc_shard_each_group for groups and members,
 * kc_shard_stats for rebalances and phase histograms, summed over the partitions) and every
 * partition's state and log figures (kc_partition_obs). A partition that reloads starts its
 * group counters again from zero, so the rebalance counters may go down then, which
 * Prometheus' rate() treats as a counter reset. The JSON views come from the shard's emitters
 * (kc_shard_json_summary per group of a streamed list, kc_shard_json_group). The coordinator's
 * log events reach the counters through kc_obs_coord_events, which main installs. On a node of
 * a cluster, each request for /metrics, /readyz or /v1/cluster takes one kc_cluster_status
 * reading and hands it to cluster_view.c.
 */
#include "obs/obs.h"

#include <stdlib.h>
#include <string.h>

#include "obs/http.h"
#include "util/diag.h"

struct kc_obs_server_s {
    kc_http_t *http;
    kc_coord_t *coord;
    kc_cluster_t *cluster; /* NULL: a single node */
};

const kc_coord_events_t kc_obs_coord_events = {
    .log_append = kc_obs_log_append,
    .log_fsync = kc_obs_log_fsync,
    .log_write_failed = kc_obs_log_write_failed,
    .log_segment_lost = kc_obs_log_segment_lost,
    .log_corrupt = kc_obs_log_corrupt,
    .cleaner_run = kc_obs_cleaner_run,
};

const kc_net_events_t kc_obs_net_events = {
    .conn_accepted = kc_obs_conn_accepted,
    .conn_closed = kc_obs_conn_closed,
    .conn_refused = kc_obs_conn_refused,
    .accept_deferred = kc_obs_accept_deferred,
    .paused = kc_obs_net_paused,
    .bytes = kc_obs_net_bytes,
    .idle_closed = kc_obs_conn_idle_closed,
    .tls_handshake = kc_obs_tls_handshake,
    .tls_failed = kc_obs_tls_failed,
};

/* ---- /metrics: what the coordinator knows ---------------------------------------------------- */

enum { MAX_KINDS = 32 };

typedef struct group_count_s {
    struct {
        const char *type, *state;
        uint64_t groups;
    } kinds[MAX_KINDS];
    size_t n;
    uint64_t members[2]; /* classic, consumer */
} group_count_t;

static void count_group(void *arg, const kc_group_info_t *g)
{
    group_count_t *gc = arg;
    const char *type = g->type ? g->type : "";
    const char *state = g->state_name ? g->state_name : "";
    size_t i = 0;
    while (i < gc->n &&
           (strcmp(gc->kinds[i].type, type) != 0 || strcmp(gc->kinds[i].state, state) != 0))
        i++;
    if (i == gc->n && gc->n < MAX_KINDS) {
        gc->kinds[i].type = type;
        gc->kinds[i].state = state;
        gc->kinds[i].groups = 0;
        gc->n++;
    }
    if (i < gc->n)
        gc->kinds[i].groups++;
    gc->members[strcmp(type, "consumer") == 0 ? 1 : 0] +=
        g->n_members > 0 ? (uint64_t)g->n_members : 0;
}

/* A histogram of the group manager's phase buckets. */
static void phase_histogram(kc_obs_buf_t *b, const char *name, const char *help,
                            const uint64_t *counts, double sum)
{
    kc_prom_family(b, name, "histogram", help);
    kc_prom_histogram(b, name, NULL, kc_gm_phase_bounds_s, KC_GM_PHASE_BUCKETS - 1, counts, sum);
}

static void write_coord(kc_obs_buf_t *b, kc_coord_t *coord)
{
    int32_t n = kc_coord_partitions(coord);
    group_count_t gc;
    memset(&gc, 0, sizeof(gc));
    kc_gm_stats_t st;
    memset(&st, 0, sizeof(st));
    int32_t loading = 0, failed = 0;
    for (int32_t i = 0; i < n; i++) {
        const kc_partition_t *p = kc_coord_partition_at(coord, i);
        int state = kc_partition_state(p);
        if (state == KC_PART_LOADING)
            loading++;
        else if (state == KC_PART_FAILED)
            failed++;
        kc_shard_each_group(p, count_group, &gc); /* nothing when not ACTIVE */
        kc_shard_stats(p, &st);
    }
    char labels[160];

    kc_prom_family(b, "kcoord_groups", "gauge",
                   "Groups (Dead excluded) by type (classic, consumer) and state, in the active "
                   "partitions.");
    for (size_t i = 0; i < gc.n; i++) {
        kc_obs_buf_puts(b, "kcoord_groups{type=\"");
        kc_prom_label_value(b, gc.kinds[i].type, strlen(gc.kinds[i].type));
        kc_obs_buf_puts(b, "\",state=\"");
        kc_prom_label_value(b, gc.kinds[i].state, strlen(gc.kinds[i].state));
        kc_obs_buf_printf(b, "\"} %llu\n", (unsigned long long)gc.kinds[i].groups);
    }
    kc_prom_family(b, "kcoord_group_members", "gauge", "Members of the groups, by group type.");
    kc_prom_sample(b, "kcoord_group_members", "type=\"classic\"", (double)gc.members[0]);
    kc_prom_sample(b, "kcoord_group_members", "type=\"consumer\"", (double)gc.members[1]);

    kc_prom_family(b, "kcoord_rebalances_total", "counter",
                   "Rebalances started (classic) or group epochs bumped (consumer groups), by "
                   "cause.");
    for (int c = 0; c < KC_RB_CAUSES; c++) {
        snprintf(labels, sizeof(labels), "cause=\"%s\"", kc_rb_cause_name(c));
        kc_prom_sample(b, "kcoord_rebalances_total", labels, (double)st.rebalances[c]);
    }
    phase_histogram(b, "kcoord_rebalance_join_phase_seconds",
                    "Time classic groups spent in PreparingRebalance (the join phase).",
                    st.join_phase, st.join_phase_sum_s);
    phase_histogram(b, "kcoord_rebalance_sync_phase_seconds",
                    "Time classic groups spent in CompletingRebalance (the sync phase).",
                    st.sync_phase, st.sync_phase_sum_s);
    kc_prom_family(b, "kcoord_consumer_assignment_seconds", "histogram",
                   "Time the server-side assignor took to compute a consumer group's target "
                   "assignment, on the event loop (mode=\"inline\") or on a worker thread "
                   "(mode=\"offloaded\", group.consumer.assignor.offload.*).");
    kc_prom_histogram(b, "kcoord_consumer_assignment_seconds", "mode=\"inline\"",
                      kc_gm_assign_bounds_s, KC_GM_ASSIGN_BUCKETS - 1, st.assign_time[0],
                      st.assign_time_sum_s[0]);
    kc_prom_histogram(b, "kcoord_consumer_assignment_seconds", "mode=\"offloaded\"",
                      kc_gm_assign_bounds_s, KC_GM_ASSIGN_BUCKETS - 1, st.assign_time[1],
                      st.assign_time_sum_s[1]);
    kc_prom_family(b, "kcoord_consumer_assignment_failures_total", "counter",
                   "Consumer group target assignments the assignor failed to compute.");
    kc_prom_sample(b, "kcoord_consumer_assignment_failures_total", NULL, (double)st.assign_failed);
    kc_prom_family(b, "kcoord_group_timers_fired_total", "counter",
                   "Group timers acted on: session, rebalance, join, sync and pending-member "
                   "timeouts.");
    kc_prom_sample(b, "kcoord_group_timers_fired_total", NULL, (double)st.timers_fired);
    kc_prom_family(b, "kcoord_group_timer_slices_total", "counter",
                   "Timer ticks that stopped at their budget with more timers due; the rest "
                   "were fired after the event loop served other requests.");
    kc_prom_sample(b, "kcoord_group_timer_slices_total", NULL, (double)st.tick_slices);
    kc_prom_family(b, "kcoord_group_requests_refused_total", "counter",
                   "Group requests refused for a reason their user must act on: an invalid "
                   "subscription regex, one regex more than group.consumer.regex.max.count, a "
                   "record larger than message.max.bytes.");
    for (int k = 0; k < KC_GM_REFUSED_KINDS; k++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", kc_shard_refused_name(k));
        kc_prom_sample(b, "kcoord_group_requests_refused_total", labels, (double)st.refused[k]);
    }
    kc_prom_family(b, "kcoord_consumer_regexes", "gauge",
                   "Subscription regexes: distinct ones members use (state=\"in_use\", at most "
                   "group.consumer.regex.max.count per partition) and ones compiled "
                   "(state=\"compiled\").");
    kc_prom_sample(b, "kcoord_consumer_regexes", "state=\"in_use\"", (double)st.regexes_in_use);
    kc_prom_sample(b, "kcoord_consumer_regexes", "state=\"compiled\"", (double)st.regexes_compiled);

    kc_prom_family(b, "kcoord_partitions", "gauge", "__consumer_offsets partitions.");
    kc_prom_sample(b, "kcoord_partitions", NULL, (double)n);
    kc_prom_family(b, "kcoord_partitions_loading", "gauge", "Partitions being loaded.");
    kc_prom_sample(b, "kcoord_partitions_loading", NULL, (double)loading);
    kc_prom_family(b, "kcoord_partitions_failed", "gauge",
                   "Partitions whose log could not be loaded (not served).");
    kc_prom_sample(b, "kcoord_partitions_failed", NULL, (double)failed);

    kc_prom_family(b, "kcoord_partition_state", "gauge",
                   "State of each __consumer_offsets partition: 0 loading, 1 active, 2 failed.");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_partition_state", labels,
                       (double)kc_partition_state(kc_coord_partition_at(coord, i)));
    }
    kc_prom_family(b, "kcoord_partition_load_seconds", "gauge",
                   "Duration of each partition's last successful load (open and replay).");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_partition_load_seconds", labels,
                       (double)kc_partition_obs(kc_coord_partition_at(coord, i))->load_ms / 1000.0);
    }
    kc_prom_family(b, "kcoord_log_bytes", "gauge",
                   "Bytes of each partition's log segments (as of its last load, append or "
                   "compaction).");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_log_bytes", labels,
                       (double)kc_partition_obs(kc_coord_partition_at(coord, i))->log_bytes);
    }
    kc_prom_family(b, "kcoord_log_segments", "gauge", "Segments of each partition's log.");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_log_segments", labels,
                       (double)kc_partition_obs(kc_coord_partition_at(coord, i))->log_segments);
    }
}

void kc_obs_render_metrics(kc_obs_buf_t *b, kc_coord_t *coord)
{
    kc_obs_write_counters(b);
    if (coord != NULL)
        write_coord(b, coord);
}

/* ---- /readyz --------------------------------------------------------------------------------- */

static bool write_failing(const kc_partition_t *p, int64_t now)
{
    const kc_partition_obs_t *o = kc_partition_obs(p);
    return o->write_failing && now - o->write_failed_ms < KC_OBS_WRITE_FAIL_WINDOW_MS;
}

/* What follows "partition N" in /readyz for a FAILED partition. */
static const char *out_reason(int out)
{
    switch (out) {
    case KC_PART_OUT_LOAD_RETRY:
        return ": failed to load, retrying (not served)";
    case KC_PART_OUT_WRITE_RETRY:
        return ": log writes failing, retrying (not served)";
    case KC_PART_OUT_LOST:
        return ": active segment lost, out of service until restart";
    default:
        return " failed to load (not served)";
    }
}

bool kc_obs_ready(kc_obs_buf_t *b, kc_coord_t *coord)
{
    if (coord == NULL) {
        kc_obs_buf_puts(b, "not ready: shutting down\n");
        return false;
    }
    int32_t n = kc_coord_partitions(coord), loading = 0, failed = 0, failing = 0;
    int64_t now = kc_coord_now(coord);
    for (int32_t i = 0; i < n; i++) {
        const kc_partition_t *p = kc_coord_partition_at(coord, i);
        loading += kc_partition_state(p) == KC_PART_LOADING;
        failed += kc_partition_state(p) == KC_PART_FAILED;
        failing += write_failing(p, now);
    }
    if (loading == 0 && failed == 0 && failing == 0) {
        kc_obs_buf_printf(b, "ready: all %d partitions are active\n", n);
        return true;
    }
    kc_obs_buf_puts(b, "not ready:");
    if (loading > 0)
        kc_obs_buf_printf(b, " %d of %d partitions loading;", loading, n);
    for (int32_t i = 0; i < n; i++) {
        const kc_partition_t *p = kc_coord_partition_at(coord, i);
        if (kc_partition_state(p) == KC_PART_FAILED)
            kc_obs_buf_printf(b, " partition %d%s;", i, out_reason(kc_partition_obs(p)->out));
        else if (write_failing(p, now))
            kc_obs_buf_printf(b, " partition %d: log writes failing;", i);
    }
    b->len--; /* the last ';' */
    kc_obs_buf_puts(b, "\n");
    return false;
}

/* ---- /v1/groups ------------------------------------------------------------------------------ */

static void json_error(kc_http_resp_t *resp, int status, const char *msg, const char *id,
                       size_t id_len)
{
    resp->status = status;
    resp->content_type = "application/json";
    kc_obs_buf_puts(&resp->body, "{\"error\":\"");
    kc_diag_json_escape(msg, strlen(msg), kc_obs_buf_emit, &resp->body);
    kc_obs_buf_puts(&resp->body, "\"");
    if (id != NULL) {
        kc_obs_buf_puts(&resp->body, ",\"group_id\":\"");
        kc_diag_json_escape(id, id_len, kc_obs_buf_emit, &resp->body);
        kc_obs_buf_puts(&resp->body, "\"");
    }
    kc_obs_buf_puts(&resp->body, "}\n");
}

/* The /v1/groups stream. The order is partition by partition, and inside a partition by group
 * id (bytes, then length), so that a page can start after any group id, even a deleted one.
 * When the stream reaches a partition it copies that partition's group ids (one copy of the
 * ids of one partition per connection) and sorts them; then each piece emits the summaries of
 * the next ids until the piece is full, looking each one up again: a group deleted meanwhile
 * is skipped, one created meanwhile in a partition already copied is not listed. At most one
 * partition is copied per piece. */
typedef struct glist_s {
    kc_obs_server_t *s;
    int32_t part; /* the next partition to copy */
    char *ids;    /* the copied ids, back to back */
    size_t ids_len, ids_cap;
    struct gref_s {
        size_t off;    /* in ids */
        const char *p; /* set once every id is copied */
        int32_t len;
    } * refs; /* sorted */
    size_t n, cap, pos;
    bool opened;    /* '[' written */
    bool first;     /* no group emitted yet */
    bool has_after; /* start after `after` */
    int32_t after_part;
    char *after;
    int32_t after_len;
    uint64_t left; /* groups still to list (UINT64_MAX: no limit) */
    bool oom;
} glist_t;

static int id_cmp(const char *a, int32_t alen, const char *b, int32_t blen)
{
    int32_t n = alen < blen ? alen : blen;
    int r = n > 0 ? memcmp(a, b, (size_t)n) : 0;
    if (r != 0)
        return r;
    return alen < blen ? -1 : alen > blen;
}

static int ref_cmp(const void *x, const void *y)
{
    const struct gref_s *a = x, *b = y;
    return id_cmp(a->p, a->len, b->p, b->len);
}

static void collect_id(void *arg, const kc_group_info_t *g)
{
    glist_t *l = arg;
    size_t len = g->group_id.len > 0 ? (size_t)g->group_id.len : 0;
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        void *r = realloc(l->refs, cap * sizeof(*l->refs));
        if (r == NULL) {
            l->oom = true;
            return;
        }
        l->refs = r;
        l->cap = cap;
    }
    if (l->ids == NULL || l->ids_len + len > l->ids_cap) {
        size_t cap = l->ids_cap ? l->ids_cap : 1024;
        while (cap < l->ids_len + len)
            cap *= 2;
        char *p = realloc(l->ids, cap);
        if (p == NULL) {
            l->oom = true;
            return;
        }
        l->ids = p;
        l->ids_cap = cap;
    }
    if (len > 0)
        memcpy(l->ids + l->ids_len, g->group_id.p, len);
    l->refs[l->n].off = l->ids_len;
    l->refs[l->n].len = (int32_t)len;
    l->ids_len += len;
    l->n++;
}

/* Copy and sort the ids of partition `i` (none when it does not serve). */
static void copy_partition(glist_t *l, kc_coord_t *coord, int32_t i)
{
    l->n = l->pos = l->ids_len = 0;
    kc_shard_each_group(kc_coord_partition_at(coord, i), collect_id, l);
    if (l->oom)
        return;
    for (size_t k = 0; k < l->n; k++)
        l->refs[k].p = l->ids + l->refs[k].off;
    if (l->n > 1)
        qsort(l->refs, l->n, sizeof(*l->refs), ref_cmp);
    if (l->has_after && i == l->after_part)
        while (l->pos < l->n &&
               id_cmp(l->refs[l->pos].p, l->refs[l->pos].len, l->after, l->after_len) <= 0)
            l->pos++;
}

static bool groups_more(void *state, kc_obs_buf_t *out, size_t max_bytes)
{
    glist_t *l = state;
    kc_coord_t *coord = l->s->coord;
    bool copied = false;
    if (coord == NULL) { /* shutting down: end the array where it is */
        kc_obs_buf_puts(out, l->opened ? "]\n" : "[]\n");
        return false;
    }
    int32_t n_parts = kc_coord_partitions(coord);
    if (!l->opened) {
        kc_obs_buf_puts(out, "[");
        l->opened = true;
    }
    while (out->len < max_bytes && !out->oom) {
        if (l->left == 0) {
            kc_obs_buf_puts(out, "]\n");
            return false;
        }
        if (l->pos < l->n) {
            const struct gref_s *r = &l->refs[l->pos++];
            kc_str_t gid = {r->p, r->len};
            kc_partition_t *p = kc_coord_partition_at(coord, l->part - 1);
            if (kc_partition_state(p) != KC_PART_ACTIVE)
                continue;
            size_t mark = out->len;
            if (!l->first)
                kc_obs_buf_puts(out, ",");
            if (kc_shard_json_summary(p, gid, kc_obs_buf_emit, out) != 0) {
                out->len = mark; /* deleted since the copy, or the partition went */
                continue;
            }
            l->first = false;
            if (l->left != UINT64_MAX)
                l->left--;
            continue;
        }
        if (l->part >= n_parts) {
            kc_obs_buf_puts(out, "]\n");
            return false;
        }
        if (copied && out->len > 0)
            return true; /* one copy per piece */
        copy_partition(l, coord, l->part++);
        if (l->oom) {
            out->oom = true;
            return false;
        }
        copied = copied || l->n > 0;
    }
    return !out->oom;
}

static void groups_free(void *state)
{
    glist_t *l = state;
    free(l->ids);
    free(l->refs);
    free(l->after);
    free(l);
}

/* Parse `limit` and `after` of the query; false (and a 400 in resp) when one is malformed. */
static bool groups_params(kc_coord_t *coord, const kc_http_req_t *req, glist_t *l,
                          kc_http_resp_t *resp)
{
    const char *q = req->query, *end = q ? q + req->query_len : NULL;
    while (q != NULL && q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(q, '=', (size_t)(stop - q));
        const char *v = eq ? eq + 1 : stop;
        size_t klen = (size_t)((eq ? eq : stop) - q), vlen = (size_t)(stop - v);
        if (klen == 5 && memcmp(q, "limit", 5) == 0) {
            uint64_t n = 0;
            bool ok = vlen > 0 && vlen <= 9;
            for (size_t i = 0; ok && i < vlen; i++) {
                ok = v[i] >= '0' && v[i] <= '9';
                n = n * 10 + (uint64_t)(v[i] - '0');
            }
            if (!ok || n == 0) {
                json_error(resp, 400, "limit must be a number from 1 to 999999999", NULL, 0);
                return false;
            }
            l->left = n;
        } else if (klen == 5 && memcmp(q, "after", 5) == 0) {
            free(l->after);
            l->after = malloc(vlen + 1);
            if (l->after == NULL) {
                resp->body.oom = true;
                return false;
            }
            long n = kc_http_percent_decode(v, vlen, l->after);
            if (n < 0 || n > INT32_MAX) {
                json_error(resp, 400, "bad percent-encoding in after", NULL, 0);
                return false;
            }
            l->after_len = (int32_t)n;
            l->has_after = true;
            kc_str_t gid = {l->after, l->after_len};
            l->after_part = kc_partition_index(kc_coord_partition(coord, gid));
            l->part = l->after_part;
        }
        q = amp ? amp + 1 : end;
    }
    return true;
}

static void groups_list(kc_obs_server_t *s, const kc_http_req_t *req, kc_http_resp_t *resp)
{
    glist_t *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        resp->body.oom = true;
        return;
    }
    l->s = s;
    l->first = true;
    l->left = UINT64_MAX;
    if (!groups_params(s->coord, req, l, resp)) {
        groups_free(l);
        return;
    }
    resp->content_type = "application/json";
    resp->more = groups_more;
    resp->more_state = l;
    resp->more_free = groups_free;
}

static void group_one(kc_coord_t *coord, const char *enc, size_t enc_len, kc_http_resp_t *resp)
{
    char *id = malloc(enc_len + 1);
    if (id == NULL) {
        resp->body.oom = true;
        return;
    }
    long n = kc_http_percent_decode(enc, enc_len, id);
    if (n < 0 || n > INT32_MAX) {
        json_error(resp, 400, "bad percent-encoding in the group id", NULL, 0);
        free(id);
        return;
    }
    kc_str_t gid = {id, (int32_t)n};
    kc_partition_t *p = kc_coord_partition(coord, gid);
    if (kc_partition_state(p) != KC_PART_ACTIVE) {
        json_error(resp, 503,
                   kc_partition_state(p) == KC_PART_LOADING ? "the group's partition is loading"
                                                            : "the group's partition is not served",
                   id, (size_t)n);
    } else {
        resp->content_type = "application/json";
        if (kc_shard_json_group(p, kc_coord_now(coord), gid, kc_obs_buf_emit, &resp->body) != 0)
            json_error(resp, 404, "no such group", id, (size_t)n);
        else
            kc_obs_buf_puts(&resp->body, "\n");
    }
    free(id);
}

/* ---- Routing ----------------------------------------------------------------------------------
 */

static bool path_is(const kc_http_req_t *req, const char *path)
{
    return req->path_len == strlen(path) && memcmp(req->path, path, req->path_len) == 0;
}

static void handle(void *app, const kc_http_req_t *req, kc_http_resp_t *resp)
{
    kc_obs_server_t *s = app;
    static const char prefix[] = "/v1/groups/";
    kc_cluster_status_t st;
    if (s->cluster != NULL)
        kc_cluster_status(s->cluster, &st);
    if (path_is(req, "/metrics")) {
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        kc_obs_render_metrics(&resp->body, s->coord);
        if (s->cluster != NULL)
            kc_obs_render_cluster_metrics(&resp->body, &st);
    } else if (path_is(req, "/healthz")) {
        kc_obs_buf_puts(&resp->body, "ok\n");
    } else if (path_is(req, "/readyz")) {
        if (s->cluster != NULL && !kc_obs_cluster_ready(&resp->body, &st))
            resp->status = 503;
        else if (!kc_obs_ready(&resp->body, s->coord))
            resp->status = 503;
    } else if (path_is(req, "/v1/cluster") || path_is(req, "/v1/cluster/")) {
        if (s->cluster == NULL) {
            json_error(resp, 404, "not a cluster: this node runs alone (cluster.voters is empty)",
                       NULL, 0);
        } else {
            resp->content_type = "application/json";
            kc_obs_cluster_json(&resp->body, &st);
        }
    } else if (path_is(req, "/v1/groups") || path_is(req, "/v1/groups/")) {
        if (s->coord == NULL)
            json_error(resp, 503, "shutting down", NULL, 0);
        else
            groups_list(s, req, resp);
    } else if (req->path_len > sizeof(prefix) - 1 &&
               memcmp(req->path, prefix, sizeof(prefix) - 1) == 0) {
        if (s->coord == NULL)
            json_error(resp, 503, "shutting down", NULL, 0);
        else
            group_one(s->coord, req->path + sizeof(prefix) - 1,
                      req->path_len - (sizeof(prefix) - 1), resp);
    } else {
        resp->status = 404;
        kc_obs_buf_puts(&resp->body,
                        "not found; try /metrics, /healthz, /readyz, /v1/groups, /v1/groups/<id>, "
                        "/v1/cluster\n");
    }
}

kc_obs_server_t *kc_obs_server_new(uv_loop_t *loop, kc_coord_t *coord)
{
    kc_obs_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->coord = coord;
    s->http = kc_http_new(loop, handle, s);
    if (s->http == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

int kc_obs_server_listen(kc_obs_server_t *s, const char *host, int port, int *bound_port)
{
    return kc_http_listen(s->http, host, port, bound_port);
}

void kc_obs_server_configure(kc_obs_server_t *s, const kc_conf_t *conf)
{
    kc_http_limits_t l = {.max_connections = conf->metrics_max_connections,
                          .timeout_ms = conf->metrics_request_timeout_ms,
                          .chunk_bytes = (size_t)conf->metrics_chunk_bytes};
    kc_http_set_limits(s->http, &l);
    if (kc_http_set_token(s->http, conf->metrics_bearer_token) != 0)
        KC_ERROR("obs", "out of memory for metrics.bearer.token: no token is required");
}

void kc_obs_server_set_cluster(kc_obs_server_t *s, kc_cluster_t *cluster)
{
    s->cluster = cluster;
}

void kc_obs_server_set_tls(kc_obs_server_t *s, kc_net_tls_t *tls)
{
    kc_http_set_tls(s->http, tls);
}

static void on_http_closed(void *arg)
{
    free(arg);
}

void kc_obs_server_close(kc_obs_server_t *s)
{
    s->coord = NULL;
    s->cluster = NULL;
    kc_http_close(s->http, on_http_closed, s);
}
