/* bench_echo.c - the network floor: a server that answers Kafka frames without doing anything.
 *
 * `kcoord-bench echo --listen HOST:PORT` accepts connections and answers every request frame
 * at once, in order, with a response of the same correlation id: ApiVersions lists the APIs
 * and versions of kcoord's codec table, FindCoordinator names this server for every key (so
 * the bench's discovery works unchanged), and every other API gets its empty response (the
 * generated struct after init, encoded for the request's version; cached per API and version).
 * An OffsetCommit is thus answered with no topics, which the commit loop counts as success:
 * run against this server, the loop measures the client, the kernel and the loopback alone.
 *
 * Like kcoord, it reads as much as the socket gives, answers every complete frame in that
 * chunk, and writes the answers with one uv_write. An unknown API or version closes the
 * connection. SIGINT or SIGTERM closes everything and ends the loop.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "proto/gen_headers.h"
#include "util/container.h"

enum { READ_CHUNK = 64 * 1024, MAX_FRAME = 100 * 1024 * 1024, MAX_VERSION = 32 };

typedef struct echo_s echo_t;

typedef struct echo_conn_s {
    uv_tcp_t tcp;
    echo_t *e;
    struct echo_conn_s *prev, *next;
    uint8_t *rbuf;
    size_t rlen, rcap;
    bool closing;
} echo_conn_t;

typedef struct echo_write_s {
    uv_write_t req;
    uint8_t *buf;
} echo_write_t;

typedef struct cached_s {
    uint8_t *p; /* the encoded body */
    size_t len;
    bool done;
} cached_t;

struct echo_s {
    uv_loop_t *loop;
    uv_tcp_t server;
    uv_signal_t sigint, sigterm;
    echo_conn_t *conns;
    char host[256];
    int port;
    cached_t cache[KC_BENCH_MAX_KEY][MAX_VERSION];
    kc_arena_t arena;
    uint64_t frames;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void on_conn_close(uv_handle_t *h)
{
    echo_conn_t *c = container_of(h, echo_conn_t, tcp);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->e->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c->rbuf);
    free(c);
}

static void conn_close(echo_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_conn_close);
}

static void on_write(uv_write_t *req, int status)
{
    echo_write_t *w = container_of(req, echo_write_t, req);
    (void)status;
    free(w->buf);
    free(w);
}

/* ApiVersions: kcoord's codec table, header v0 whatever the version (KIP-511: a version above
 * ours gets UNSUPPORTED_VERSION and a v0 body). */
static void api_versions_body(kc_writer_t *w, int16_t v, kc_arena_t *a)
{
    kc_api_versions_response_t m;
    kc_api_versions_response_init(&m);
    m.api_keys.v = kc_arena_alloc(a, sizeof(kc_api_version_t) * kc_api_count);
    if (m.api_keys.v == NULL)
        return;
    m.api_keys.n = (int32_t)kc_api_count;
    for (size_t i = 0; i < kc_api_count; i++)
        m.api_keys.v[i] = (kc_api_version_t){kc_api_table[i].key, kc_api_table[i].min_version,
                                             kc_api_table[i].max_version};
    kc_api_versions_response_encode(w, v, &m);
}

static void find_coordinator_body(echo_t *e, kc_writer_t *w, int16_t v, const uint8_t *body,
                                  size_t len)
{
    kc_find_coordinator_request_t q;
    kc_reader_t r;
    kc_rd_init(&r, body, len);
    kc_find_coordinator_response_t m;
    kc_find_coordinator_response_init(&m);
    if (kc_find_coordinator_request_decode(&r, &e->arena, v, &q) != 0)
        q.coordinator_keys.n = 0;
    kc_str_t host = kc_str_c(e->host);
    if (v < 4) {
        m.node_id = 0;
        m.host = host;
        m.port = e->port;
    } else {
        int32_t n = q.coordinator_keys.n > 0 ? q.coordinator_keys.n : 0;
        m.coordinators.v = kc_arena_alloc(&e->arena, sizeof(kc_coordinator_t) * (size_t)(n + 1));
        m.coordinators.n = m.coordinators.v ? n : 0;
        for (int32_t i = 0; i < m.coordinators.n; i++)
            m.coordinators.v[i] = (kc_coordinator_t){.key = q.coordinator_keys.v[i],
                                                     .node_id = 0,
                                                     .host = host,
                                                     .port = e->port,
                                                     .error_code = 0,
                                                     .error_message = KC_STR_NULL};
    }
    kc_find_coordinator_response_encode(w, v, &m);
}

/* The empty response body of `api` at version v, encoded once. */
static const cached_t *empty_body(echo_t *e, const kc_api_info_t *api, int16_t v)
{
    cached_t *c = &e->cache[api->key][v];
    if (c->done)
        return c;
    void *m = kc_arena_alloc(&e->arena, api->response.struct_size);
    kc_writer_t w;
    kc_wr_init(&w);
    if (m != NULL) {
        api->response.init(m);
        api->response.encode(&w, v, m);
    }
    if (m == NULL || w.err) {
        kc_wr_free(&w);
        return NULL;
    }
    c->p = kc_wr_steal(&w, &c->len);
    c->done = true;
    return c;
}

/* Append the answer to one request frame to `w`. Returns -1 to close the connection. */
static int answer(echo_t *e, kc_writer_t *w, const uint8_t *f, size_t len)
{
    if (len < 8)
        return -1;
    int16_t key = (int16_t)(f[0] << 8 | f[1]);
    int16_t v = (int16_t)(f[2] << 8 | f[3]);
    const uint8_t *corr = f + 4;
    const kc_api_info_t *api = key >= 0 && key < KC_BENCH_MAX_KEY ? kc_api_find(key) : NULL;
    size_t pos = w->len;
    kc_wr_i32(w, 0);
    kc_wr_raw(w, corr, 4);
    if (api != NULL && key == KC_API_API_VERSIONS) {
        if (v > api->max_version) {
            kc_wr_i16(w, 35); /* UNSUPPORTED_VERSION, then the v0 body's array */
            kc_writer_t tmp;
            kc_wr_init(&tmp);
            api_versions_body(&tmp, 0, &e->arena);
            kc_wr_raw(w, tmp.buf + 2, tmp.len - 2);
            kc_wr_free(&tmp);
        } else {
            api_versions_body(w, v, &e->arena);
        }
    } else {
        if (api == NULL || v < api->min_version || v > api->max_version || v >= MAX_VERSION)
            return -1;
        bool flexible = kc_api_is_flexible(api, v);
        if (flexible)
            kc_wr_uvarint(w, 0); /* response header v1: no tagged fields */
        if (key == KC_API_FIND_COORDINATOR) {
            /* Skip the request header to reach the body. */
            kc_reader_t r;
            kc_rd_init(&r, f, len);
            kc_request_header_t h;
            if (kc_request_header_decode(&r, &e->arena, flexible ? 2 : 1, &h) != 0)
                return -1;
            find_coordinator_body(e, w, v, r.p, kc_rd_remaining(&r));
        } else {
            const cached_t *c = empty_body(e, api, v);
            if (c == NULL)
                return -1;
            kc_wr_raw(w, c->p, c->len);
        }
    }
    kc_arena_reset(&e->arena);
    kc_wr_patch_i32(w, pos, (int32_t)(w->len - pos - 4));
    e->frames++;
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    echo_conn_t *c = container_of(h, echo_conn_t, tcp);
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

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    echo_conn_t *c = container_of(s, echo_conn_t, tcp);
    (void)buf;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    c->rlen += (size_t)nread;
    kc_writer_t w;
    kc_wr_init(&w);
    size_t off = 0;
    while (c->rlen - off >= 4) {
        size_t size = be32(c->rbuf + off);
        if (size > MAX_FRAME) {
            kc_wr_free(&w);
            conn_close(c);
            return;
        }
        if (c->rlen - off - 4 < size)
            break;
        if (answer(c->e, &w, c->rbuf + off + 4, size) != 0) {
            kc_wr_free(&w);
            conn_close(c);
            return;
        }
        off += 4 + size;
    }
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
    if (w.len == 0 || w.err) {
        kc_wr_free(&w);
        return;
    }
    echo_write_t *wr = malloc(sizeof(*wr));
    if (wr == NULL) {
        kc_wr_free(&w);
        conn_close(c);
        return;
    }
    size_t len;
    wr->buf = kc_wr_steal(&w, &len);
    uv_buf_t b = uv_buf_init((char *)wr->buf, (unsigned)len);
    if (uv_write(&wr->req, s, &b, 1, on_write) != 0) {
        free(wr->buf);
        free(wr);
        conn_close(c);
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    echo_t *e = container_of(server, echo_t, server);
    if (status < 0)
        return;
    echo_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->e = e;
    uv_tcp_init(e->loop, &c->tcp);
    c->next = e->conns;
    if (e->conns)
        e->conns->prev = c;
    e->conns = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_signal(uv_signal_t *sig, int signum)
{
    echo_t *e = sig->data;
    (void)signum;
    uv_close((uv_handle_t *)&e->sigint, NULL);
    uv_close((uv_handle_t *)&e->sigterm, NULL);
    uv_close((uv_handle_t *)&e->server, NULL);
    for (echo_conn_t *c = e->conns; c != NULL; c = c->next)
        conn_close(c);
}

int kc_bench_echo_main(const char *listen)
{
    struct sockaddr_storage addr;
    if (kc_bench_resolve(listen, &addr) != 0)
        return 2;
    echo_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return 1;
    uv_loop_t loop;
    uv_loop_init(&loop);
    e->loop = &loop;
    kc_arena_init(&e->arena);
    uv_tcp_init(&loop, &e->server);
    int rc = uv_tcp_bind(&e->server, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&e->server, 4096, on_connection);
    if (rc != 0) {
        fprintf(stderr, "kcoord-bench echo: cannot listen on %s: %s\n", listen, uv_strerror(rc));
        uv_close((uv_handle_t *)&e->server, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        free(e);
        return 1;
    }
    struct sockaddr_storage bound;
    int blen = sizeof(bound);
    uv_tcp_getsockname(&e->server, (struct sockaddr *)&bound, &blen);
    if (bound.ss_family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&bound;
        uv_ip6_name(a6, e->host, sizeof(e->host));
        e->port = ntohs(a6->sin6_port);
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&bound;
        uv_ip4_name(a4, e->host, sizeof(e->host));
        e->port = ntohs(a4->sin_port);
    }
    if (strcmp(e->host, "0.0.0.0") == 0 || strcmp(e->host, "::") == 0)
        snprintf(e->host, sizeof(e->host), "127.0.0.1");
    uv_signal_init(&loop, &e->sigint);
    uv_signal_init(&loop, &e->sigterm);
    e->sigint.data = e->sigterm.data = e;
    uv_signal_start(&e->sigint, on_signal, SIGINT);
    uv_signal_start(&e->sigterm, on_signal, SIGTERM);
    fprintf(stderr, "kcoord-bench echo: listening on %s:%d\n", e->host, e->port);
    uv_run(&loop, UV_RUN_DEFAULT);
    fprintf(stderr, "kcoord-bench echo: answered %llu frames\n", (unsigned long long)e->frames);
    int status = uv_loop_close(&loop) == 0 ? 0 : 1;
    for (int k = 0; k < KC_BENCH_MAX_KEY; k++)
        for (int v = 0; v < MAX_VERSION; v++)
            free(e->cache[k][v].p);
    kc_arena_free(&e->arena);
    free(e);
    return status;
}
