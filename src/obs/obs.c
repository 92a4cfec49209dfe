/* obs.c - the observability endpoints: /metrics, /healthz, /readyz, /v1/groups[/<id>].
 *
 * http.c parses and answers; this file decides what to answer. The /metrics page is the
 * counters of metrics.c followed by what is read from the coordinator at scrape time: every
 * ACTIVE partition's group manager (kc_gm_each for groups and members, kc_gm_stats for
 * rebalances and phase histograms, summed over the partitions) and every partition's state and
 * log figures (kc_partition_t.obs). A partition that reloads starts its group manager's
 * counters again from zero, so the rebalance counters may go down then, which Prometheus'
 * rate() treats as a counter reset. The JSON views come from the group manager's own emitters
 * (kc_gm_json_list, kc_gm_json_group).
 */
#include "obs/obs.h"

#include <stdlib.h>
#include <string.h>

#include "obs/http.h"
#include "util/log.h"

struct kc_obs_server_s {
    kc_http_t *http;
    kc_coord_t *coord;
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
        kc_partition_t *p = kc_coord_partition_at(coord, i);
        if (p->state == KC_PART_LOADING)
            loading++;
        else if (p->state == KC_PART_FAILED)
            failed++;
        if (p->state != KC_PART_ACTIVE || p->groups == NULL)
            continue;
        kc_gm_each(p->groups, count_group, &gc);
        kc_gm_stats(p->groups, &st);
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
    kc_prom_family(b, "kcoord_group_requests_refused_total", "counter",
                   "Group requests refused for a reason their user must act on: an invalid "
                   "subscription regex, one regex more than group.consumer.regex.max.count, a "
                   "record larger than message.max.bytes.");
    for (int k = 0; k < KC_GM_REFUSED_KINDS; k++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", kc_gm_refused_name(k));
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
                       (double)kc_coord_partition_at(coord, i)->state);
    }
    kc_prom_family(b, "kcoord_partition_load_seconds", "gauge",
                   "Duration of each partition's last successful load (open and replay).");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_partition_load_seconds", labels,
                       (double)kc_coord_partition_at(coord, i)->obs.load_ms / 1000.0);
    }
    kc_prom_family(b, "kcoord_log_bytes", "gauge",
                   "Bytes of each partition's log segments (as of its last load, append or "
                   "compaction).");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_log_bytes", labels,
                       (double)kc_coord_partition_at(coord, i)->obs.log_bytes);
    }
    kc_prom_family(b, "kcoord_log_segments", "gauge", "Segments of each partition's log.");
    for (int32_t i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
        kc_prom_sample(b, "kcoord_log_segments", labels,
                       (double)kc_coord_partition_at(coord, i)->obs.log_segments);
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
    return p->obs.write_failing && now - p->obs.write_failed_ms < KC_OBS_WRITE_FAIL_WINDOW_MS;
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
        loading += p->state == KC_PART_LOADING;
        failed += p->state == KC_PART_FAILED;
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
        if (p->state == KC_PART_FAILED)
            kc_obs_buf_printf(b, " partition %d failed to load (not served);", i);
        if (write_failing(p, now))
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
    kc_log_json_escape(msg, strlen(msg), kc_obs_buf_emit, &resp->body);
    kc_obs_buf_puts(&resp->body, "\"");
    if (id != NULL) {
        kc_obs_buf_puts(&resp->body, ",\"group_id\":\"");
        kc_log_json_escape(id, id_len, kc_obs_buf_emit, &resp->body);
        kc_obs_buf_puts(&resp->body, "\"");
    }
    kc_obs_buf_puts(&resp->body, "}\n");
}

static void groups_list(kc_coord_t *coord, kc_http_resp_t *resp)
{
    resp->content_type = "application/json";
    int64_t now = kc_coord_now(coord);
    bool first = true;
    kc_obs_buf_puts(&resp->body, "[");
    for (int32_t i = 0; i < kc_coord_partitions(coord); i++) {
        kc_partition_t *p = kc_coord_partition_at(coord, i);
        if (p->state == KC_PART_ACTIVE && p->groups != NULL)
            kc_gm_json_list(p->groups, now, kc_obs_buf_emit, &resp->body, &first);
    }
    kc_obs_buf_puts(&resp->body, "]\n");
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
    if (p->state != KC_PART_ACTIVE || p->groups == NULL) {
        json_error(resp, 503,
                   p->state == KC_PART_LOADING ? "the group's partition is loading"
                                               : "the group's partition is not served",
                   id, (size_t)n);
    } else {
        resp->content_type = "application/json";
        if (kc_gm_json_group(p->groups, kc_coord_now(coord), gid, kc_obs_buf_emit, &resp->body) !=
            0)
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
    if (path_is(req, "/metrics")) {
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        kc_obs_render_metrics(&resp->body, s->coord);
    } else if (path_is(req, "/healthz")) {
        kc_obs_buf_puts(&resp->body, "ok\n");
    } else if (path_is(req, "/readyz")) {
        if (!kc_obs_ready(&resp->body, s->coord))
            resp->status = 503;
    } else if (path_is(req, "/v1/groups") || path_is(req, "/v1/groups/")) {
        if (s->coord == NULL)
            json_error(resp, 503, "shutting down", NULL, 0);
        else
            groups_list(s->coord, resp);
    } else if (req->path_len > sizeof(prefix) - 1 &&
               memcmp(req->path, prefix, sizeof(prefix) - 1) == 0) {
        if (s->coord == NULL)
            json_error(resp, 503, "shutting down", NULL, 0);
        else
            group_one(s->coord, req->path + sizeof(prefix) - 1,
                      req->path_len - (sizeof(prefix) - 1), resp);
    } else {
        resp->status = 404;
        kc_obs_buf_puts(
            &resp->body,
            "not found; try /metrics, /healthz, /readyz, /v1/groups, /v1/groups/<id>\n");
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

static void on_http_closed(void *arg)
{
    free(arg);
}

void kc_obs_server_close(kc_obs_server_t *s)
{
    s->coord = NULL;
    kc_http_close(s->http, on_http_closed, s);
}
