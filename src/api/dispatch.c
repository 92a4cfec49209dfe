/* dispatch.c - from frame to handler to response frame, by the rows of the served APIs.
 *
 * To serve a new API: add its `serve` row to proto/apis.kdef (key, versions, handler, flags),
 * run scripts/gen_proto.py, and write its handler (one file per API family). The rows
 * (proto/gen_api_rows.h) give the table below, the handler declarations in api.h, the
 * versions dispatch accepts and the ApiVersions answer, so none of them can disagree. A row
 * flagged `cluster` (DescribeQuorum) is served and advertised only by a node of a cluster.
 *
 * Memory: a request's arena may hold request.max.memory.bytes beyond the frame it copies: the
 * decoded request, the handler's work and the response struct. A request whose decoding would
 * pass it is refused before the array that would pass it is allocated, one whose handler
 * would is refused when the handler gives up, and a response whose encoding would be larger
 * than it is refused before it is encoded (its size is computed first): each closes the
 * connection, as Kafka closes one that sends an oversized request, with a rate-limited line.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "obs/metrics.h"
#include "util/diag.h"

/* One served API: its row. */
typedef struct row_s {
    int16_t key;
    int16_t min_version, max_version; /* the versions served, within proto/'s `valid` */
    kc_api_handler_fn fn;
    unsigned flags; /* KC_ROW_* */
} row_t;

static const row_t rows[] = {
#define KC_API_ROW(key, name, min, max, handler, flags) {key, min, max, handler, flags},
#include "proto/gen_api_rows.h"
};

enum { N_ROWS = sizeof(rows) / sizeof(rows[0]) };

/* The row of `key`, or NULL when the API is not served. The rows are in key order. */
static const row_t *row_for(int16_t key)
{
    size_t lo = 0, hi = N_ROWS;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].key == key)
            return &rows[mid];
        if (rows[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool row_has(int16_t key, unsigned flag)
{
    const row_t *row = row_for(key);
    return row != NULL && (row->flags & flag) != 0;
}

int kc_api_served(int16_t key, int16_t version)
{
    const row_t *row = row_for(key);
    return row != NULL && version >= row->min_version && version <= row->max_version;
}

/* The cluster APIs (rows flagged `cluster`: DescribeQuorum) exist only on a node of a raft
 * cluster. A single node has no quorum to describe, as a Kafka broker without KRaft (a ZooKeeper
 * broker, whose listener never exposed them): it does not advertise them, and a request for one
 * closes the connection like any API it does not serve. */
static bool served_here(const kc_api_ctx_t *ctx, const row_t *row)
{
    return (row->flags & KC_ROW_CLUSTER) == 0 || (ctx != NULL && ctx->cluster != NULL);
}

/* Drop from an ApiVersions answer the APIs this node does not serve (served_here). */
static void advertise_here(const kc_api_ctx_t *ctx, kc_api_versions_response_t *resp)
{
    int32_t n = 0;
    for (int32_t i = 0; i < resp->api_keys.n; i++) {
        const row_t *row = row_for(resp->api_keys.v[i].api_key);
        if (row == NULL || served_here(ctx, row))
            resp->api_keys.v[n++] = resp->api_keys.v[i];
    }
    if (resp->api_keys.n > 0)
        resp->api_keys.n = n;
}

void kc_api_fill_versions(kc_api_versions_response_t *resp, kc_arena_t *a)
{
    kc_api_version_t *v = kc_arena_alloc(a, N_ROWS * sizeof(*v));
    for (size_t i = 0; v != NULL && i < N_ROWS; i++) {
        v[i].api_key = rows[i].key;
        v[i].min_version = rows[i].min_version;
        v[i].max_version = rows[i].max_version;
    }
    resp->api_keys.v = v;
    resp->api_keys.n = v ? (int32_t)N_ROWS : 0;
}

static uint8_t *encode_response(const kc_codec_t *codec, int16_t key, int16_t version, int flexible,
                                int32_t correlation_id, const void *body, size_t *len);

/* The most one request may take (request.max.memory.bytes), or 0 for no limit. */
static size_t memory_budget(const kc_api_ctx_t *ctx)
{
    if (ctx == NULL || ctx->conf == NULL || ctx->conf->request_max_memory_bytes <= 0)
        return 0;
    return (size_t)ctx->conf->request_max_memory_bytes;
}

/* A request needs more than request.max.memory.bytes (`what` says for what): count it, say so
 * now and then, and close its connection once the answers before it are written. */
static void refuse_memory(kc_api_ctx_t *ctx, kc_slot_t *slot, const char *peer, int16_t key,
                          int16_t version, const char *what, const uint8_t *frame, size_t len)
{
    kc_obs_refused_memory();
    char sample[72] = "";
    if (frame != NULL)
        kc_diag_sanitize(sample, sizeof(sample), frame, len < 64 ? len : 64);
    const kc_api_info_t *api = kc_api_find(key);
    KC_WARN_LIMITED("api",
                    "closing %s: %s v%d request of %zu bytes needs more than "
                    "request.max.memory.bytes (%zu) %s (bytes: \"%s\")",
                    peer, api ? api->name : "?", version, len, memory_budget(ctx), what, sample);
    kc_slot_close(slot, NULL);
}

/* Encode a response frame: size, header (v1 with its tag byte when flexible, except for an API
 * whose row says response-header-v0: ApiVersions), body. Returns NULL when out of memory, or
 * with *too_large set when the frame would be larger than `max` bytes (0: no limit). */
static uint8_t *encode_response_max(const kc_codec_t *codec, int16_t key, int16_t version,
                                    int flexible, int32_t correlation_id, const void *body,
                                    size_t max, bool *too_large, size_t *len)
{
    *too_large = false;
    if (max != 0 && codec->size != NULL && codec->size(version, body) > max) {
        *too_large = true;
        return NULL;
    }
    return encode_response(codec, key, version, flexible, correlation_id, body, len);
}

static uint8_t *encode_response(const kc_codec_t *codec, int16_t key, int16_t version, int flexible,
                                int32_t correlation_id, const void *body, size_t *len)
{
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i32(&w, 0);
    kc_wr_i32(&w, correlation_id);
    if (flexible && !row_has(key, KC_ROW_RESPONSE_HEADER_V0))
        kc_wr_uvarint(&w, 0);
    codec->encode(&w, version, body);
    if (w.err) {
        kc_wr_free(&w);
        return NULL;
    }
    kc_wr_patch_i32(&w, 0, (int32_t)(w.len - 4));
    return kc_wr_steal(&w, len);
}

static void reply(kc_slot_t *slot, uint8_t *buf, size_t len)
{
    if (buf == NULL)
        kc_slot_close(slot, "out of memory encoding a response");
    else
        kc_slot_reply(slot, buf, len);
}

/* KIP-511: a client that asks for an ApiVersions version we do not serve gets error 35 and,
 * in a v0 body, the range of ApiVersions alone (as Kafka's ApiVersionsRequest.getErrorResponse
 * answers), so it can retry with a version we have. */
static void unsupported_api_versions(kc_slot_t *slot, const kc_request_t *req)
{
    const kc_api_info_t *api = kc_api_find(KC_API_API_VERSIONS);
    kc_api_versions_response_t resp;
    kc_api_versions_response_init(&resp);
    resp.error_code = KC_ERR_UNSUPPORTED_VERSION;
    kc_api_version_t range = {
        .api_key = api->key, .min_version = api->min_version, .max_version = api->max_version};
    resp.api_keys.v = &range;
    resp.api_keys.n = 1;
    size_t len;
    uint8_t *buf = encode_response(&api->response, KC_API_API_VERSIONS, 0, 0, req->correlation_id,
                                   &resp, &len);
    reply(slot, buf, len);
}

/* Kafka shows a member's host as InetAddress.toString() does: "/" and the address. */
static kc_str_t client_host(const kc_conn_t *conn, kc_arena_t *a)
{
    const char *peer = kc_conn_peer(conn);
    const char *end = strrchr(peer, ':');
    size_t n = end ? (size_t)(end - peer) : strlen(peer);
    if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
        peer++;
        n -= 2;
    }
    char *p = kc_arena_alloc(a, n + 2);
    if (p == NULL)
        return KC_STR_EMPTY;
    p[0] = '/';
    memcpy(p + 1, peer, n);
    return (kc_str_t){p, (int32_t)n + 1};
}

void kc_api_on_request(void *app, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                       size_t len)
{
    kc_api_ctx_t *ctx = app;
    kc_arena_t *a = kc_slot_arena(slot);
    size_t budget = memory_budget(ctx);
    if (budget != 0) /* beyond the frame the arena already holds */
        a->limit = a->total > SIZE_MAX - budget ? SIZE_MAX : a->total + budget;
    if (kc_api_sasl_frame(ctx, conn, slot, frame, len))
        return;
    kc_request_t req;
    kc_req_status_t st = kc_request_parse(frame, len, a, kc_api_served, &req);
    if (st == KC_REQ_TOO_LARGE) {
        refuse_memory(ctx, slot, kc_conn_peer(conn), req.api_key, req.api_version, "to decode",
                      frame, len);
        return;
    }
    if (st == KC_REQ_UNSUPPORTED) {
        if (req.api_key == KC_API_API_VERSIONS) {
            kc_obs_request(req.api_key, req.api_version);
            kc_obs_error(req.api_key, KC_ERR_UNSUPPORTED_VERSION);
            KC_DEBUG("api", "%s: ApiVersions v%d not served, answering with v0", kc_conn_peer(conn),
                     req.api_version);
            unsupported_api_versions(slot, &req);
            return;
        }
        char why[128];
        snprintf(why, sizeof(why), "unsupported API key %d version %d", req.api_key,
                 req.api_version);
        kc_obs_refused(false);
        kc_slot_close(slot, why);
        return;
    }
    if (st != KC_REQ_OK) {
        char sample[72], why[160];
        kc_diag_sanitize(sample, sizeof(sample), frame, len < 64 ? len : 64);
        snprintf(why, sizeof(why), "malformed request (%zu bytes: \"%s\")", len, sample);
        kc_obs_refused(true);
        kc_slot_close(slot, why);
        return;
    }
    if (!served_here(ctx, row_for(req.api_key))) {
        char why[128];
        snprintf(why, sizeof(why), "API key %d is served only by a node of a cluster", req.api_key);
        kc_obs_refused(false);
        kc_slot_close(slot, why);
        return;
    }
    kc_api_call_t *call = kc_arena_alloc(a, sizeof(*call));
    void *resp = kc_arena_alloc(a, req.api->response.struct_size);
    if (call == NULL || resp == NULL) {
        if (a->over_limit)
            refuse_memory(ctx, slot, kc_conn_peer(conn), req.api_key, req.api_version, "to answer",
                          frame, len);
        else
            kc_slot_close(slot, "out of memory");
        return;
    }
    call->frame_len = len;
    call->slot = slot;
    call->api = req.api;
    call->version = req.api_version;
    call->flexible = req.flexible;
    call->correlation_id = req.correlation_id;
    call->client_host = client_host(conn, a);
    call->principal = kc_conn_principal(conn);
    call->ctx = ctx;
    call->request = req.body;
    call->start_ns = uv_hrtime();
    kc_obs_request(req.api_key, req.api_version);
    req.api->response.init(resp);
    if (kc_api_sasl_admit(ctx, call, &req, a, resp) != KC_API_DONE)
        return;
    int rc = row_for(req.api_key)->fn(ctx, call, &req, a, resp);
    if (rc == KC_API_DONE && req.api_key == KC_API_API_VERSIONS)
        advertise_here(ctx, resp);
    if (rc == KC_API_DONE)
        kc_api_call_reply(call, resp);
    else if (rc == KC_API_CLOSE && a->over_limit)
        refuse_memory(ctx, slot, kc_conn_peer(conn), req.api_key, req.api_version, "to answer",
                      frame, len);
    else if (rc == KC_API_CLOSE)
        kc_slot_close(slot, "request refused by its handler");
}

kc_partition_t *kc_api_partition(kc_api_ctx_t *ctx, kc_api_call_t *call, kc_str_t group_id,
                                 int16_t *err)
{
    /* Kafka checks the id before the partition's state. */
    /* Kafka's isValidGroupId: only the APIs whose row says empty-group-id accept "". */
    if (group_id.len < 0 ||
        (group_id.len == 0 && !row_has(call->api->key, KC_ROW_EMPTY_GROUP_ID))) {
        *err = KC_ERR_INVALID_GROUP_ID;
        return NULL;
    }
    kc_partition_t *p = kc_coord_partition(ctx->coord, group_id);
    *err = kc_partition_error(p);
    if (*err != KC_ERR_NONE)
        return NULL;
    if (!row_has(call->api->key, KC_ROW_WAITS_FOR_LOG))
        return p;
    for (int32_t i = 0; i < call->n_parts; i++)
        if (call->parts[i] == kc_partition_index(p))
            return p;
    if (call->n_parts == call->cap_parts) {
        int32_t cap = call->cap_parts ? call->cap_parts * 2 : 4;
        int32_t *v = kc_arena_alloc(kc_slot_arena(call->slot), (size_t)cap * sizeof(*v));
        if (v == NULL) {
            *err = KC_ERR_COORDINATOR_NOT_AVAILABLE;
            return NULL;
        }
        if (call->n_parts)
            memcpy(v, call->parts, (size_t)call->n_parts * sizeof(*v));
        call->parts = v;
        call->cap_parts = cap;
    }
    call->parts[call->n_parts++] = kc_partition_index(p);
    return p;
}

/* An answer waiting for the log: both outcomes are encoded up front, because a response
 * completed from a group's callback is only valid during that callback. */
typedef struct held_s {
    kc_slot_t *slot;
    uint8_t *ok, *failed;
    size_t ok_len, failed_len;
    int16_t api_key; /* for the metrics */
    uint32_t n_ok;   /* offsets an OffsetCommit stores when it is durable */
    uint64_t start_ns;
} held_t;

static void release_held(void *arg, bool ok)
{
    held_t *h = arg;
    if (ok)
        kc_obs_commit(h->n_ok);
    else
        kc_obs_error(h->api_key, KC_ERR_NOT_COORDINATOR);
    kc_obs_done(h->api_key, h->start_ns);
    if (ok) {
        free(h->failed);
        reply(h->slot, h->ok, h->ok_len);
    } else {
        free(h->ok);
        reply(h->slot, h->failed, h->failed_len);
    }
    free(h);
}

void kc_api_call_reply(kc_api_call_t *call, const void *resp)
{
    size_t len = 0;
    bool too_large;
    kc_api_ctx_t *ctx = call->ctx;
    uint8_t *buf =
        encode_response_max(&call->api->response, call->api->key, call->version, call->flexible,
                            call->correlation_id, resp, memory_budget(ctx), &too_large, &len);
    if (too_large) {
        char peer[64];
        snprintf(peer, sizeof(peer), "%.*s", call->client_host.len > 0 ? call->client_host.len : 0,
                 call->client_host.p);
        kc_obs_done(call->api->key, call->start_ns);
        refuse_memory(ctx, call->slot, peer, call->api->key, call->version, "for its response",
                      NULL, call->frame_len);
        return;
    }
    uint32_t n_ok = kc_obs_response(call->api->key, call->version, resp);
    if (buf == NULL) { /* out of memory: nothing is acknowledged, the connection closes */
        kc_obs_done(call->api->key, call->start_ns);
        reply(call->slot, NULL, 0);
        return;
    }
    if (call->n_parts == 0 || ctx->coord == NULL ||
        !kc_coord_pending(ctx->coord, call->parts, (size_t)call->n_parts)) {
        kc_obs_commit(n_ok);
        kc_obs_done(call->api->key, call->start_ns);
        reply(call->slot, buf, len);
        return;
    }
    /* The failure answer: the same response with NOT_COORDINATOR in every error field. */
    kc_arena_t *a = kc_slot_arena(call->slot);
    void *copy = kc_arena_dup(a, resp, call->api->response.struct_size);
    uint8_t *failed = NULL;
    size_t failed_len = 0;
    if (copy != NULL && kc_api_fail(call, call->request, copy, KC_ERR_NOT_COORDINATOR, a) == 0)
        failed = encode_response(&call->api->response, call->api->key, call->version,
                                 call->flexible, call->correlation_id, copy, &failed_len);
    held_t *h = failed != NULL ? malloc(sizeof(*h)) : NULL;
    if (h != NULL) {
        *h = (held_t){.slot = call->slot,
                      .ok = buf,
                      .ok_len = len,
                      .failed = failed,
                      .failed_len = failed_len,
                      .api_key = call->api->key,
                      .n_ok = n_ok,
                      .start_ns = call->start_ns};
        int held = kc_coord_hold(ctx->coord, call->parts, (size_t)call->n_parts, release_held, h);
        if (held > 0)
            return;
        free(h);
        if (held == 0) { /* nothing to wait for after all */
            free(failed);
            kc_obs_commit(n_ok);
            kc_obs_done(call->api->key, call->start_ns);
            reply(call->slot, buf, len);
            return;
        }
    }
    /* The answer must wait for the log and cannot (out of memory): never acknowledge before
     * durable. The records already emitted may still become durable, as after a timeout; the
     * client retries on NOT_COORDINATOR. Without even that answer, the connection closes. */
    free(buf);
    kc_obs_error(call->api->key, KC_ERR_NOT_COORDINATOR);
    kc_obs_done(call->api->key, call->start_ns);
    KC_ERROR_LIMITED("api",
                     "out of memory holding an answer until its records are durable (%s): %s",
                     call->api->name, failed ? "answering NOT_COORDINATOR" : "closing");
    reply(call->slot, failed, failed_len);
}

uint8_t *kc_api_call_encode(kc_api_call_t *call, const void *resp, size_t *len)
{
    kc_obs_response(call->api->key, call->version, resp);
    kc_obs_done(call->api->key, call->start_ns);
    return encode_response(&call->api->response, call->api->key, call->version, call->flexible,
                           call->correlation_id, resp, len);
}

void kc_api_call_reply_close(kc_api_call_t *call, const void *resp)
{
    size_t len = 0;
    uint8_t *buf = kc_api_call_encode(call, resp, &len);
    if (buf == NULL)
        kc_slot_close(call->slot, NULL); /* out of memory: no answer at all */
    else
        kc_slot_reply_close(call->slot, buf, len);
}

void kc_api_call_skip(kc_api_call_t *call)
{
    kc_obs_done(call->api->key, call->start_ns);
    kc_slot_skip(call->slot);
}
