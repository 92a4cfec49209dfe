/* bench_client.c - kcoord-bench's Kafka client: connections, pipelined requests, set-up calls.
 *
 * A connection keeps the requests it sent in a ring (`pend`), oldest first. Kafka answers the
 * requests of one connection in order, so each response frame belongs to the ring's head: its
 * correlation id must match, its header is v1 when the request's version is flexible (v0 for
 * ApiVersions, always), and its body is decoded by the generated decoder of that API and
 * version into the connection's arena, which is reset after the callback. A frame that does not
 * fit this fails the connection: every pending request is answered KC_BENCH_ECONN.
 *
 * Memory: a connection is allocated by kc_bench_connect_all and stays allocated, closed or
 * not, until kc_bench_fini: scenarios keep connection pointers (many members share one), and a
 * connection the server closed must stay safe to send to (the send fails).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "proto/errors.h"
#include "proto/gen_headers.h"
#include "util/container.h"

enum {
    READ_CHUNK = 64 * 1024,
    MAX_FRAME = 256 * 1024 * 1024,
    MAX_CONNECTING = 64,
    FIND_BATCH = 200, /* FindCoordinator v4+ keys per request */
};

typedef struct kc_bench_pending_s {
    kc_bench_resp_fn fn;
    void *arg;
    uint64_t sent_ns;
    int32_t corr;
    int16_t key, version;
} pending_t;

static int failures_printed;

/* ---- Connection plumbing ------------------------------------------------------------------- */

static void on_close(uv_handle_t *h)
{
    kc_bench_conn_t *c = container_of(h, kc_bench_conn_t, tcp);
    c->closed = true;
    c->b->open_conns--;
    /* Buffers go now; the struct stays until kc_bench_fini. */
    kc_wr_free(&c->out);
    free(c->rbuf);
    c->rbuf = NULL;
    c->rlen = c->rcap = 0;
    kc_arena_free(&c->arena);
}

static void conn_free(kc_bench_conn_t *c)
{
    free(c->wbuf);
    free(c->pend);
    free(c);
}

/* Answer every pending request with `err`, oldest first. */
static void fail_pending(kc_bench_conn_t *c, int err)
{
    while (c->pcount > 0) {
        pending_t p = c->pend[c->phead];
        c->phead = (c->phead + 1) % c->pcap;
        c->pcount--;
        p.fn(c, p.arg, err, NULL, p.sent_ns);
    }
}

void kc_bench_conn_close(kc_bench_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    fail_pending(c, KC_BENCH_ECONN);
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void conn_fail(kc_bench_conn_t *c, const char *what, int uverr)
{
    if (c->failed || c->closing)
        return;
    c->failed = true;
    if (failures_printed++ < 5)
        fprintf(stderr, "kcoord-bench: connection failed: %s%s%s\n", what, uverr ? ": " : "",
                uverr ? uv_strerror(uverr) : "");
    kc_bench_conn_close(c);
}

static void start_write(kc_bench_conn_t *c);

static void on_write(uv_write_t *req, int status)
{
    kc_bench_conn_t *c = container_of(req, kc_bench_conn_t, write_req);
    free(c->wbuf);
    c->wbuf = NULL;
    c->writing = false;
    if (status == UV_ECANCELED || c->closing)
        return;
    if (status < 0) {
        conn_fail(c, "write", status);
        return;
    }
    if (c->out.len > 0)
        start_write(c);
}

static void start_write(kc_bench_conn_t *c)
{
    size_t len;
    c->wbuf = kc_wr_steal(&c->out, &len);
    uv_buf_t buf = uv_buf_init((char *)c->wbuf, (unsigned)len);
    int rc = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &buf, 1, on_write);
    if (rc != 0) {
        free(c->wbuf);
        c->wbuf = NULL;
        conn_fail(c, "write", rc);
        return;
    }
    c->writing = true;
}

static void on_prepare(uv_prepare_t *h)
{
    kc_bench_t *b = container_of(h, kc_bench_t, flusher);
    while (b->dirty != NULL) {
        kc_bench_conn_t *c = b->dirty;
        b->dirty = c->next_dirty;
        c->dirty = false;
        if (!c->writing && !c->closing && c->connected && c->out.len > 0)
            start_write(c);
    }
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    kc_bench_conn_t *c = container_of(h, kc_bench_conn_t, tcp);
    (void)suggested;
    size_t want = READ_CHUNK;
    if (c->rlen >= 4) {
        size_t frame = 4 + (size_t)be32(c->rbuf);
        if (frame > c->rlen && frame - c->rlen > want && frame <= MAX_FRAME)
            want = frame - c->rlen;
    }
    if (c->rcap - c->rlen < want) {
        size_t cap = c->rcap ? c->rcap : READ_CHUNK;
        while (cap - c->rlen < want)
            cap *= 2;
        uint8_t *p = realloc(c->rbuf, cap);
        if (p == NULL) {
            buf->base = NULL;
            buf->len = 0;
            return;
        }
        c->rbuf = p;
        c->rcap = cap;
    }
    buf->base = (char *)c->rbuf + c->rlen;
    buf->len = c->rcap - c->rlen;
}

/* One response frame (after its size): match it to the oldest pending request and decode. */
static void handle_frame(kc_bench_conn_t *c, const uint8_t *frame, size_t len)
{
    if (c->pcount == 0) {
        conn_fail(c, "a response without a request", 0);
        return;
    }
    pending_t p = c->pend[c->phead];
    c->phead = (c->phead + 1) % c->pcap;
    c->pcount--;
    const kc_api_info_t *api = kc_api_find(p.key);
    kc_reader_t r;
    kc_rd_init(&r, frame, len);
    kc_response_header_t h;
    bool flexible_header = kc_api_is_flexible(api, p.version) && p.key != KC_API_API_VERSIONS;
    if (kc_response_header_decode(&r, &c->arena, flexible_header ? 1 : 0, &h) != 0 ||
        h.correlation_id != p.corr) {
        p.fn(c, p.arg, KC_BENCH_EDECODE, NULL, p.sent_ns);
        conn_fail(c, "correlation id mismatch", 0);
        return;
    }
    const uint8_t *body = r.p;
    void *m = kc_arena_alloc(&c->arena, api->response.struct_size);
    int rc = m == NULL ? -1 : api->response.decode(&r, &c->arena, p.version, m);
    if (rc != 0 && m != NULL && p.key == KC_API_API_VERSIONS && p.version > 0) {
        /* KIP-511: a version the server does not know is answered with a v0 body. */
        kc_rd_init(&r, body, len - (size_t)(body - frame));
        rc = api->response.decode(&r, &c->arena, 0, m);
    }
    if (rc != 0)
        p.fn(c, p.arg, KC_BENCH_EDECODE, NULL, p.sent_ns);
    else
        p.fn(c, p.arg, 0, m, p.sent_ns);
    kc_arena_reset(&c->arena);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    kc_bench_conn_t *c = container_of(s, kc_bench_conn_t, tcp);
    (void)buf;
    if (nread < 0) {
        conn_fail(c, nread == UV_EOF ? "closed by the server" : "read",
                  nread == UV_EOF ? 0 : (int)nread);
        return;
    }
    c->rlen += (size_t)nread;
    size_t off = 0;
    while (c->rlen - off >= 4 && !c->closing) {
        size_t size = be32(c->rbuf + off);
        if (size > MAX_FRAME) {
            conn_fail(c, "response frame too large", 0);
            return;
        }
        if (c->rlen - off - 4 < size)
            break;
        handle_frame(c, c->rbuf + off + 4, size);
        off += 4 + size;
    }
    if (c->closing)
        return;
    if (off > 0) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
}

int kc_bench_send(kc_bench_conn_t *c, int16_t key, int16_t version, const void *req,
                  kc_bench_resp_fn fn, void *arg)
{
    if (c->closing || c->failed)
        return -1;
    const kc_api_info_t *api = kc_api_find(key);
    if (api == NULL)
        return -1;
    if (c->pcount == c->pcap) {
        size_t cap = c->pcap ? c->pcap * 2 : 16;
        pending_t *p = malloc(cap * sizeof(*p));
        if (p == NULL)
            return -1;
        for (size_t i = 0; i < c->pcount; i++)
            p[i] = c->pend[(c->phead + i) % c->pcap];
        free(c->pend);
        c->pend = p;
        c->pcap = cap;
        c->phead = 0;
    }
    kc_request_header_t h;
    kc_request_header_init(&h);
    h.request_api_key = key;
    h.request_api_version = version;
    h.correlation_id = c->next_corr++;
    h.client_id = kc_str_c(c->b->client_id);
    size_t pos = c->out.len;
    kc_wr_i32(&c->out, 0);
    kc_request_header_encode(&c->out, kc_api_is_flexible(api, version) ? 2 : 1, &h);
    api->request.encode(&c->out, version, req);
    if (c->out.err) {
        fprintf(stderr, "kcoord-bench: out of memory encoding a request\n");
        return -1;
    }
    kc_wr_patch_i32(&c->out, pos, (int32_t)(c->out.len - pos - 4));
    c->pend[(c->phead + c->pcount) % c->pcap] = (pending_t){
        .fn = fn,
        .arg = arg,
        .sent_ns = uv_hrtime(),
        .corr = h.correlation_id,
        .key = key,
        .version = version,
    };
    c->pcount++;
    c->b->requests_sent++;
    if (!c->dirty) {
        c->dirty = true;
        c->next_dirty = c->b->dirty;
        c->b->dirty = c;
    }
    return 0;
}

/* ---- The client ------------------------------------------------------------------------------ */

int kc_bench_init(kc_bench_t *b, uv_loop_t *loop, const char *client_id)
{
    memset(b, 0, sizeof(*b));
    b->loop = loop;
    b->client_id = client_id;
    for (int i = 0; i < KC_BENCH_MAX_KEY; i++) {
        b->srv_min[i] = -1;
        b->srv_max[i] = -1;
    }
    if (uv_prepare_init(loop, &b->flusher) != 0 || uv_timer_init(loop, &b->deadline) != 0)
        return -1;
    return uv_prepare_start(&b->flusher, on_prepare);
}

void kc_bench_fini(kc_bench_t *b)
{
    for (kc_bench_conn_t *c = b->conns; c != NULL; c = c->next)
        kc_bench_conn_close(c);
    uv_prepare_stop(&b->flusher);
    uv_close((uv_handle_t *)&b->flusher, NULL);
    uv_close((uv_handle_t *)&b->deadline, NULL);
    uv_run(b->loop, UV_RUN_DEFAULT);
    b->dirty = NULL;
    while (b->conns != NULL) {
        kc_bench_conn_t *c = b->conns;
        b->conns = c->next;
        conn_free(c);
    }
}

static void on_deadline(uv_timer_t *t)
{
    kc_bench_t *b = container_of(t, kc_bench_t, deadline);
    b->timed_out = true;
}

int kc_bench_run_until(kc_bench_t *b, const bool *flag, double timeout_s)
{
    b->timed_out = false;
    uv_timer_start(&b->deadline, on_deadline, (uint64_t)(timeout_s * 1000), 0);
    while (!*flag && !b->timed_out)
        uv_run(b->loop, UV_RUN_ONCE);
    uv_timer_stop(&b->deadline);
    return *flag ? 0 : -1;
}

void kc_bench_sleep(kc_bench_t *b, double s)
{
    bool never = false;
    (void)kc_bench_run_until(b, &never, s);
}

typedef struct call_s {
    kc_bench_resp_fn fn;
    void *arg;
    bool done;
} call_t;

static void on_call(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    call_t *call = arg;
    call->fn(c, call->arg, err, resp, sent_ns);
    call->done = true;
}

int kc_bench_call(kc_bench_conn_t *c, int16_t key, int16_t version, const void *req,
                  kc_bench_resp_fn fn, void *arg, double timeout_s)
{
    call_t *call = malloc(sizeof(*call));
    if (call == NULL)
        return -1;
    *call = (call_t){.fn = fn, .arg = arg};
    if (kc_bench_send(c, key, version, req, on_call, call) != 0) {
        free(call);
        return -1;
    }
    kc_bench_t *b = c->b;
    if (kc_bench_run_until(b, &call->done, timeout_s) != 0) {
        /* The callback may still come (it frees nothing of ours but `call`): leak it rather
         * than let it write freed memory. The run fails anyway. */
        fprintf(stderr, "kcoord-bench: no answer to API %d within %.0f s\n", key, timeout_s);
        return -1;
    }
    free(call);
    return 0;
}

int16_t kc_bench_version(kc_bench_t *b, int16_t key, int16_t cap)
{
    const kc_api_info_t *api = kc_api_find(key);
    if (api == NULL || key >= KC_BENCH_MAX_KEY || !b->have_versions || b->srv_max[key] < 0) {
        fprintf(stderr, "kcoord-bench: the server does not offer API %d (%s)\n", key,
                api ? api->name : "?");
        return -1;
    }
    int16_t hi = api->max_version;
    if (cap < hi)
        hi = cap;
    if (b->srv_max[key] < hi)
        hi = b->srv_max[key];
    int16_t lo = api->min_version > b->srv_min[key] ? api->min_version : b->srv_min[key];
    if (hi < lo) {
        fprintf(stderr, "kcoord-bench: no common version of %s (server %d-%d, ours %d-%d)\n",
                api->name, b->srv_min[key], b->srv_max[key], api->min_version, hi);
        return -1;
    }
    return hi;
}

/* ---- Address resolution -------------------------------------------------------------------- */

int kc_bench_resolve_hp(const char *host, int port, struct sockaddr_storage *out)
{
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "kcoord-bench: cannot resolve %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

int kc_bench_resolve(const char *hostport, struct sockaddr_storage *out)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (colon == NULL || colon == hostport || (size_t)(colon - hostport) >= sizeof(host)) {
        fprintf(stderr, "kcoord-bench: expected host:port, got \"%s\"\n", hostport);
        return -1;
    }
    const char *h = hostport;
    size_t hlen = (size_t)(colon - hostport);
    if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || port < 0 || port > 65535) {
        fprintf(stderr, "kcoord-bench: bad port in \"%s\"\n", hostport);
        return -1;
    }
    return kc_bench_resolve_hp(host, (int)port, out);
}

/* ---- Connecting -------------------------------------------------------------------------- */

typedef struct connecting_s {
    kc_bench_t *b;
    const struct sockaddr *addr;
    kc_bench_conn_t **out;
    size_t n, started, ready, failed;
    bool done;
} connecting_t;

static void start_connect(connecting_t *cx);

static void finish_one(connecting_t *cx, bool ok)
{
    if (ok)
        cx->ready++;
    else
        cx->failed++;
    if (cx->ready + cx->failed == cx->n || cx->failed > 0)
        cx->done = true;
    else
        start_connect(cx);
}

static void on_api_versions(kc_bench_conn_t *c, void *arg, int err, const void *resp,
                            uint64_t sent_ns)
{
    connecting_t *cx = arg;
    const kc_api_versions_response_t *m = resp;
    (void)sent_ns;
    if (err != 0 || (m->error_code != 0 && m->api_keys.n == 0)) {
        fprintf(stderr, "kcoord-bench: ApiVersions failed (%d)\n", err ? err : m->error_code);
        finish_one(cx, false);
        return;
    }
    kc_bench_t *b = c->b;
    if (!b->have_versions) {
        for (int32_t i = 0; i < m->api_keys.n; i++) {
            const kc_api_version_t *k = &m->api_keys.v[i];
            if (k->api_key >= 0 && k->api_key < KC_BENCH_MAX_KEY) {
                b->srv_min[k->api_key] = k->min_version;
                b->srv_max[k->api_key] = k->max_version;
            }
        }
        b->have_versions = true;
    }
    finish_one(cx, true);
}

static void on_connect(uv_connect_t *req, int status)
{
    kc_bench_conn_t *c = container_of(req, kc_bench_conn_t, connect_req);
    connecting_t *cx = req->data;
    if (status == UV_ECANCELED)
        return;
    if (status < 0) {
        if (failures_printed++ < 5)
            fprintf(stderr, "kcoord-bench: connect: %s\n", uv_strerror(status));
        c->failed = true;
        kc_bench_conn_close(c);
        finish_one(cx, false);
        return;
    }
    c->connected = true;
    uv_tcp_nodelay(&c->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    kc_api_versions_request_t av;
    kc_api_versions_request_init(&av);
    av.client_software_name = KC_STR_LIT("kcoord-bench");
    av.client_software_version = KC_STR_LIT("1.0");
    kc_bench_t *b = c->b;
    int16_t v = 3;
    if (b->have_versions && b->srv_max[KC_API_API_VERSIONS] < 3)
        v = b->srv_max[KC_API_API_VERSIONS] < 0 ? 0 : b->srv_max[KC_API_API_VERSIONS];
    if (rc != 0 || kc_bench_send(c, KC_API_API_VERSIONS, v, &av, on_api_versions, cx) != 0) {
        conn_fail(c, "read start", rc);
        finish_one(cx, false);
    }
}

static void start_connect(connecting_t *cx)
{
    while (cx->started < cx->n && cx->started - cx->ready - cx->failed < MAX_CONNECTING) {
        kc_bench_conn_t *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            cx->failed++;
            cx->done = true;
            return;
        }
        c->b = cx->b;
        kc_wr_init(&c->out);
        kc_arena_init(&c->arena);
        c->next_corr = 1;
        if (uv_tcp_init(cx->b->loop, &c->tcp) != 0) {
            free(c);
            cx->failed++;
            cx->done = true;
            return;
        }
        c->next = cx->b->conns;
        cx->b->conns = c;
        cx->b->open_conns++;
        cx->out[cx->started++] = c;
        c->connect_req.data = cx;
        int rc = uv_tcp_connect(&c->connect_req, &c->tcp, cx->addr, on_connect);
        if (rc != 0) {
            fprintf(stderr, "kcoord-bench: connect: %s\n", uv_strerror(rc));
            c->failed = true;
            kc_bench_conn_close(c);
            cx->failed++;
            cx->done = true;
            return;
        }
    }
}

int kc_bench_connect_all(kc_bench_t *b, const struct sockaddr *addr, size_t n,
                         kc_bench_conn_t **out, double timeout_s)
{
    connecting_t *cx = calloc(1, sizeof(*cx));
    if (cx == NULL)
        return -1;
    *cx = (connecting_t){.b = b, .addr = addr, .out = out, .n = n};
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (n == 0) {
        free(cx);
        return 0;
    }
    start_connect(cx);
    int rc = kc_bench_run_until(b, &cx->done, timeout_s);
    if (rc != 0 || cx->failed > 0) {
        if (rc != 0)
            fprintf(stderr, "kcoord-bench: %zu of %zu connections ready after %.0f s\n", cx->ready,
                    n, timeout_s);
        /* Connects and ApiVersions still in progress point at cx: close every connection
         * this call opened before cx goes. */
        for (size_t i = 0; i < cx->started; i++)
            if (out[i] != NULL)
                kc_bench_conn_close(out[i]);
        uv_run(b->loop, UV_RUN_NOWAIT);
        free(cx);
        return -1;
    }
    free(cx);
    return 0;
}

/* ---- FindCoordinator --------------------------------------------------------------------- */

typedef struct finding_s {
    char **groups;
    bool *resolved;
    kc_bench_coord_t *out;
    bool have;
    int fatal;
    size_t outstanding;
    uint64_t retriable;
} finding_t;

typedef struct find_req_s {
    finding_t *f;
    size_t first, n; /* the groups this request asked for (n = 1 below v4) */
} find_req_t;

static bool retriable(int code)
{
    return code == KC_ERR_COORDINATOR_NOT_AVAILABLE ||
           code == KC_ERR_COORDINATOR_LOAD_IN_PROGRESS || code == KC_ERR_NOT_COORDINATOR;
}

static void found(finding_t *f, size_t i, int16_t code, kc_str_t msg, int32_t node, kc_str_t host,
                  int32_t port)
{
    if (code != 0) {
        if (retriable(code)) {
            f->retriable++;
            return;
        }
        fprintf(stderr, "kcoord-bench: FindCoordinator %s: error %d %s%s%.*s\n", f->groups[i], code,
                kc_err_name(code), msg.len > 0 ? ": " : "", msg.len > 0 ? msg.len : 0,
                msg.len > 0 ? msg.p : "");
        f->fatal = 1;
        return;
    }
    char h[256];
    int hl = host.len > 0 && host.len < (int32_t)sizeof(h) ? host.len : 0;
    memcpy(h, host.p ? host.p : "", (size_t)hl);
    h[hl] = '\0';
    if (!f->have) {
        snprintf(f->out->host, sizeof(f->out->host), "%s", h);
        f->out->port = port;
        f->out->node_id = node;
        f->have = true;
    } else if (strcmp(f->out->host, h) != 0 || f->out->port != port) {
        fprintf(stderr,
                "kcoord-bench: groups have different coordinators (%s:%d and %s:%d); "
                "kcoord-bench drives one coordinator only\n",
                f->out->host, f->out->port, h, port);
        f->fatal = 1;
        return;
    }
    f->resolved[i] = true;
}

static void on_find(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    find_req_t *fr = arg;
    finding_t *f = fr->f;
    const kc_find_coordinator_response_t *m = resp;
    (void)c;
    (void)sent_ns;
    f->outstanding--;
    if (err != 0) {
        fprintf(stderr, "kcoord-bench: FindCoordinator failed (%d)\n", err);
        f->fatal = 1;
    } else if (m->coordinators.n > 0 || fr->n > 1) {
        for (int32_t k = 0; k < m->coordinators.n; k++) {
            const kc_coordinator_t *co = &m->coordinators.v[k];
            for (size_t i = fr->first; i < fr->first + fr->n; i++)
                if (!f->resolved[i] && kc_str_eq_c(co->key, f->groups[i])) {
                    found(f, i, co->error_code, co->error_message, co->node_id, co->host, co->port);
                    break;
                }
        }
    } else {
        found(f, fr->first, m->error_code, m->error_message, m->node_id, m->host, m->port);
    }
    free(fr);
}

int kc_bench_find_coordinator(kc_bench_conn_t *c, char **groups, size_t n, kc_bench_coord_t *out,
                              double timeout_s)
{
    kc_bench_t *b = c->b;
    int16_t v = kc_bench_version(b, KC_API_FIND_COORDINATOR, 6);
    if (v < 0)
        return -1;
    finding_t f = {.groups = groups, .out = out};
    f.resolved = calloc(n ? n : 1, sizeof(bool));
    kc_str_t *keys = calloc(FIND_BATCH, sizeof(kc_str_t));
    if (f.resolved == NULL || keys == NULL) {
        free(f.resolved);
        free(keys);
        return -1;
    }
    uint64_t deadline = uv_hrtime() + (uint64_t)(timeout_s * 1e9);
    int rc = -1;
    for (;;) {
        size_t todo = 0;
        for (size_t i = 0; i < n; i++)
            todo += !f.resolved[i];
        if (todo == 0) {
            rc = 0;
            break;
        }
        if (uv_hrtime() > deadline) {
            fprintf(stderr, "kcoord-bench: FindCoordinator: %zu groups unresolved after %.0f s\n",
                    todo, timeout_s);
            break;
        }
        /* One round: ask for every unresolved group (batched from v4), wait for all answers. */
        for (size_t i = 0; i < n && !f.fatal;) {
            if (f.resolved[i]) {
                i++;
                continue;
            }
            kc_find_coordinator_request_t q;
            kc_find_coordinator_request_init(&q);
            q.key_type = 0;
            find_req_t *fr = malloc(sizeof(*fr));
            if (fr == NULL) {
                f.fatal = 1;
                break;
            }
            fr->f = &f;
            fr->first = i;
            fr->n = 1;
            if (v >= 4) {
                int32_t k = 0;
                while (i < n && k < FIND_BATCH) {
                    keys[k++] = kc_str_c(groups[i]);
                    i++;
                }
                fr->n = i - fr->first;
                q.coordinator_keys.v = keys;
                q.coordinator_keys.n = k;
            } else {
                q.key = kc_str_c(groups[i]);
                i++;
            }
            if (kc_bench_send(c, KC_API_FIND_COORDINATOR, v, &q, on_find, fr) != 0) {
                free(fr);
                f.fatal = 1;
                break;
            }
            f.outstanding++;
        }
        while (f.outstanding > 0 && !c->closing && uv_hrtime() < deadline)
            uv_run(b->loop, UV_RUN_ONCE);
        if (f.fatal || f.outstanding > 0)
            break;
        if (f.retriable > 0)
            kc_bench_sleep(b, 0.2);
    }
    free(keys);
    free(f.resolved);
    if (f.outstanding > 0)
        fprintf(stderr, "kcoord-bench: FindCoordinator did not answer\n");
    return f.fatal || f.outstanding > 0 ? -1 : rc;
}

/* ---- CreateTopics and waiting for the topic ------------------------------------------------ */

typedef struct topic_call_s {
    const char *topic;
    int32_t partitions;
    int result; /* 0 ok, 1 retry, -1 fatal */
} topic_call_t;

static void on_create(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    topic_call_t *t = arg;
    const kc_create_topics_response_t *m = resp;
    (void)c;
    (void)sent_ns;
    t->result = -1;
    if (err != 0) {
        fprintf(stderr, "kcoord-bench: CreateTopics failed (%d)\n", err);
        return;
    }
    if (m->topics.n == 0) { /* the echo server answers empty responses */
        t->result = 0;
        return;
    }
    const kc_creatable_topic_result_t *r = &m->topics.v[0];
    if (r->error_code == 0 || r->error_code == KC_ERR_TOPIC_ALREADY_EXISTS) {
        printf("topic %s: %s\n", t->topic, r->error_code == 0 ? "created" : "already exists");
        t->result = 0;
        return;
    }
    fprintf(stderr, "kcoord-bench: CreateTopics %s: error %d %s%s%.*s\n", t->topic, r->error_code,
            kc_err_name(r->error_code), r->error_message.len > 0 ? ": " : "",
            r->error_message.len > 0 ? r->error_message.len : 0,
            r->error_message.len > 0 ? r->error_message.p : "");
}

static void on_metadata(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    topic_call_t *t = arg;
    const kc_metadata_response_t *m = resp;
    (void)c;
    (void)sent_ns;
    t->result = 1;
    if (err != 0) {
        t->result = -1;
        return;
    }
    if (m->topics.n == 0 && m->brokers.n == 0) { /* echo server */
        t->result = 0;
        return;
    }
    for (int32_t i = 0; i < m->topics.n; i++)
        if (kc_str_eq_c(m->topics.v[i].name, t->topic) && m->topics.v[i].error_code == 0) {
            if (m->topics.v[i].partitions.n >= t->partitions)
                t->result = 0;
            else if (m->topics.v[i].partitions.n > 0) {
                fprintf(stderr, "kcoord-bench: topic %s has %d partitions, %d needed\n", t->topic,
                        m->topics.v[i].partitions.n, t->partitions);
                t->result = -1;
            }
        }
}

int kc_bench_create_topic(kc_bench_conn_t *c, const char *topic, int32_t partitions,
                          double timeout_s)
{
    kc_bench_t *b = c->b;
    int16_t v = kc_bench_version(b, KC_API_CREATE_TOPICS, 7);
    int16_t vm = kc_bench_version(b, KC_API_METADATA, 12);
    if (v < 0 || vm < 0)
        return -1;
    kc_creatable_topic_t ct;
    memset(&ct, 0, sizeof(ct));
    ct.name = kc_str_c(topic);
    ct.num_partitions = partitions;
    ct.replication_factor = 1;
    kc_create_topics_request_t q;
    kc_create_topics_request_init(&q);
    q.topics.v = &ct;
    q.topics.n = 1;
    q.timeout_ms = (int32_t)(timeout_s * 1000);
    topic_call_t t = {.topic = topic, .partitions = partitions, .result = -1};
    if (kc_bench_call(c, KC_API_CREATE_TOPICS, v, &q, on_create, &t, timeout_s) != 0 ||
        t.result != 0)
        return -1;

    kc_metadata_request_topic_t mt;
    memset(&mt, 0, sizeof(mt));
    mt.name = kc_str_c(topic);
    kc_metadata_request_t mq;
    kc_metadata_request_init(&mq);
    mq.topics.v = &mt;
    mq.topics.n = 1;
    mq.allow_auto_topic_creation = false;
    uint64_t deadline = uv_hrtime() + (uint64_t)(timeout_s * 1e9);
    while (uv_hrtime() < deadline) {
        if (kc_bench_call(c, KC_API_METADATA, vm, &mq, on_metadata, &t, timeout_s) != 0 ||
            t.result < 0)
            return -1;
        if (t.result == 0)
            return 0;
        kc_bench_sleep(b, 0.1);
    }
    fprintf(stderr, "kcoord-bench: topic %s did not appear in Metadata within %.0f s\n", topic,
            timeout_s);
    return -1;
}

/* ---- Waiting for the coordinator to serve the groups --------------------------------------- */

typedef struct awaiting_s {
    char **groups;
    bool *ready;
    size_t outstanding;
    uint64_t retriable;
    int fatal;
} awaiting_t;

typedef struct await_req_s {
    awaiting_t *aw;
    size_t first, n;
} await_req_t;

static void group_ready(awaiting_t *aw, size_t i, int16_t code)
{
    if (code == 0) {
        aw->ready[i] = true;
    } else if (retriable(code)) {
        aw->retriable++;
    } else {
        fprintf(stderr, "kcoord-bench: OffsetFetch %s: error %d %s\n", aw->groups[i], code,
                kc_err_name(code));
        aw->fatal = 1;
    }
}

static void on_await(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    await_req_t *ar = arg;
    awaiting_t *aw = ar->aw;
    const kc_offset_fetch_response_t *m = resp;
    (void)c;
    (void)sent_ns;
    aw->outstanding--;
    if (err != 0) {
        fprintf(stderr, "kcoord-bench: OffsetFetch failed (%d)\n", err);
        aw->fatal = 1;
    } else if (m->groups.n == 0) { /* below v8; or the echo server's empty answer */
        for (size_t i = ar->first; i < ar->first + ar->n; i++)
            group_ready(aw, i, m->error_code);
    } else {
        for (int32_t k = 0; k < m->groups.n; k++)
            for (size_t i = ar->first; i < ar->first + ar->n; i++)
                if (!aw->ready[i] && kc_str_eq_c(m->groups.v[k].group_id, aw->groups[i])) {
                    group_ready(aw, i, m->groups.v[k].error_code);
                    break;
                }
    }
    free(ar);
}

int kc_bench_await_groups(kc_bench_conn_t *c, char **groups, size_t n, double timeout_s)
{
    kc_bench_t *b = c->b;
    int16_t v = kc_bench_version(b, KC_API_OFFSET_FETCH, 9);
    if (v < 0)
        return -1;
    awaiting_t aw = {.groups = groups};
    aw.ready = calloc(n ? n : 1, sizeof(bool));
    kc_offset_fetch_request_group_t *gv = calloc(FIND_BATCH, sizeof(*gv));
    if (aw.ready == NULL || gv == NULL) {
        free(aw.ready);
        free(gv);
        return -1;
    }
    uint64_t t0 = uv_hrtime(), deadline = t0 + (uint64_t)(timeout_s * 1e9);
    int rc = -1;
    for (;;) {
        size_t todo = 0;
        for (size_t i = 0; i < n; i++)
            todo += !aw.ready[i];
        if (todo == 0) {
            rc = 0;
            break;
        }
        if (uv_hrtime() > deadline) {
            fprintf(stderr, "kcoord-bench: %zu groups still not served after %.0f s\n", todo,
                    timeout_s);
            break;
        }
        aw.retriable = 0;
        for (size_t i = 0; i < n && !aw.fatal;) {
            if (aw.ready[i]) {
                i++;
                continue;
            }
            await_req_t *ar = malloc(sizeof(*ar));
            if (ar == NULL) {
                aw.fatal = 1;
                break;
            }
            ar->aw = &aw;
            ar->first = i;
            kc_offset_fetch_request_t q;
            kc_offset_fetch_request_init(&q);
            if (v >= 8) {
                int32_t k = 0;
                while (i < n && k < FIND_BATCH) {
                    gv[k] = (kc_offset_fetch_request_group_t){
                        .group_id = kc_str_c(groups[i]),
                        .member_id = KC_STR_NULL,
                        .member_epoch = -1,
                    };
                    gv[k].topics.n = -1; /* null: all of the group's offsets */
                    k++;
                    i++;
                }
                q.groups.v = gv;
                q.groups.n = k;
            } else {
                q.group_id = kc_str_c(groups[i]);
                q.topics.n = v >= 2 ? -1 : 0;
                i++;
            }
            ar->n = i - ar->first;
            if (kc_bench_send(c, KC_API_OFFSET_FETCH, v, &q, on_await, ar) != 0) {
                free(ar);
                aw.fatal = 1;
                break;
            }
            aw.outstanding++;
        }
        while (aw.outstanding > 0 && !c->closing && uv_hrtime() < deadline)
            uv_run(b->loop, UV_RUN_ONCE);
        if (aw.fatal || aw.outstanding > 0)
            break;
        if (aw.retriable > 0)
            kc_bench_sleep(b, 0.2);
    }
    double waited = (double)(uv_hrtime() - t0) / 1e9;
    if (rc == 0 && waited > 1)
        printf("the coordinator served all %zu groups after %.1f s\n", n, waited);
    free(gv);
    free(aw.ready);
    return aw.fatal || aw.outstanding > 0 ? -1 : rc;
}
