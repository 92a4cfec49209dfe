/* conn.c - one client connection: framing, the ordered reply queue, backpressure, idle close.
 *
 * Bytes read accumulate in `rbuf`; process_frames cuts complete frames off its front, gives
 * each one a slot at the tail of the reply queue (with its own copy of the frame) and calls the
 * application. flush writes the answered slots at the head of the queue in one uv_write; the
 * write callback frees them and flushes again. A slot answered out of order simply waits.
 *
 * Lifetime: kc_conn_close marks the connection closing and closes its two handles; the memory
 * is freed in the last close callback (free late). Slots the application has not answered by
 * then are detached (slot->conn = NULL) and freed when they are answered.
 */
#include <stdlib.h>
#include <string.h>

#include "net/net_int.h"
#include "obs/metrics.h"
#include "util/log.h"

enum { READ_CHUNK = 64 * 1024, MAX_IOV = 128 };

static void flush(kc_conn_t *c);
static void process_frames(kc_conn_t *c);

static void slot_free(kc_slot_t *s)
{
    free(s->reply);
    kc_arena_free(&s->arena);
    free(s);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Make room for `need` bytes in rbuf past rlen. Returns false when out of memory. */
static bool rbuf_reserve(kc_conn_t *c, size_t need)
{
    if (c->rcap - c->rlen >= need)
        return true;
    size_t cap = c->rcap ? c->rcap : READ_CHUNK;
    while (cap - c->rlen < need)
        cap *= 2;
    uint8_t *p = realloc(c->rbuf, cap);
    if (p == NULL)
        return false;
    c->rbuf = p;
    c->rcap = cap;
    return true;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    kc_conn_t *c = h->data;
    (void)suggested;
    size_t want = READ_CHUNK;
    /* A partly received frame: make room for all of it at once. The size was checked. */
    if (c->rlen >= 4) {
        size_t frame = 4 + (size_t)be32(c->rbuf);
        if (frame > c->rlen && frame - c->rlen > want)
            want = frame - c->rlen;
    }
    if (!rbuf_reserve(c, want)) {
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    buf->base = (char *)c->rbuf + c->rlen;
    buf->len = c->rcap - c->rlen;
}

static void stop_reading(kc_conn_t *c)
{
    if (!c->reading || c->closing)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void restart_reading(kc_conn_t *c)
{
    if (c->reading || c->closing || c->draining || c->server->stopping)
        return;
    if ((int64_t)c->queued >= c->server->opts.max_queued)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        kc_conn_close(c, "cannot read");
        return;
    }
    c->reading = true;
    process_frames(c);
}

/* A bad frame: read nothing more, but first write the replies owed to the requests before
 * it, then close. A marker slot at the tail of the queue does the closing. */
static void close_after_replies(kc_conn_t *c)
{
    kc_slot_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        kc_conn_close(c, NULL);
        return;
    }
    kc_arena_init(&s->arena);
    s->conn = c;
    s->answered = true;
    s->close_after = true;
    if (c->tail)
        c->tail->next = s;
    else
        c->head = s;
    c->tail = s;
    c->queued++;
    c->draining = true;
    c->rlen = 0;
    stop_reading(c);
    flush(c);
}

static void process_frames(kc_conn_t *c)
{
    const kc_server_opts_t *o = &c->server->opts;
    size_t off = 0;
    while (!c->closing && !c->draining && (int64_t)c->queued < o->max_queued &&
           c->rlen - off >= 4) {
        uint32_t size = be32(c->rbuf + off);
        if (size < KC_NET_MIN_FRAME || size > (uint32_t)o->max_request_bytes) {
            char sample[40];
            kc_log_sanitize(sample, sizeof(sample), c->rbuf + off,
                            c->rlen - off < 32 ? c->rlen - off : 32);
            KC_WARN("net", "closing %s: frame size %u outside %d..%d (bytes: \"%s\")", c->peer,
                    size, KC_NET_MIN_FRAME, o->max_request_bytes, sample);
            close_after_replies(c);
            return;
        }
        if (c->rlen - off - 4 < size)
            break;
        kc_slot_t *s = calloc(1, sizeof(*s));
        uint8_t *frame = NULL;
        if (s != NULL) {
            kc_arena_init(&s->arena);
            frame = kc_arena_dup(&s->arena, c->rbuf + off + 4, size);
        }
        if (frame == NULL) {
            if (s != NULL)
                slot_free(s);
            KC_ERROR("net", "closing %s: out of memory for a %u-byte request", c->peer, size);
            kc_conn_close(c, NULL);
            return;
        }
        s->conn = c;
        if (c->tail)
            c->tail->next = s;
        else
            c->head = s;
        c->tail = s;
        c->queued++;
        c->unanswered++;
        off += 4 + (size_t)size;
        o->on_request(o->app, c, s, frame, size);
    }
    if (off > 0 && !c->closing && !c->draining) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    if ((int64_t)c->queued >= o->max_queued)
        stop_reading(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    kc_conn_t *c = stream->data;
    (void)buf;
    if (c->closing)
        return;
    if (c->lingering) { /* requests sent after we stopped serving: dropped */
        c->rlen = 0;
        if (nread < 0)
            kc_conn_close(c, NULL);
        return;
    }
    if (nread < 0) {
        if (nread == UV_EOF)
            KC_DEBUG("net", "%s closed the connection", c->peer);
        else if (nread == UV_ENOBUFS)
            KC_ERROR("net", "closing %s: out of memory for its read buffer", c->peer);
        else
            KC_DEBUG("net", "%s: read error: %s", c->peer, uv_strerror((int)nread));
        kc_conn_close(c, NULL);
        return;
    }
    if (nread == 0)
        return;
    c->rlen += (size_t)nread;
    uv_timer_again(&c->idle);
    process_frames(c);
}

static void on_write(uv_write_t *req, int status)
{
    kc_conn_t *c = container_of(req, kc_conn_t, wreq);
    for (size_t i = 0; i < c->writing_n; i++) {
        kc_slot_t *s = c->head;
        c->head = s->next;
        if (c->head == NULL)
            c->tail = NULL;
        c->queued--;
        slot_free(s);
    }
    c->writing = NULL;
    c->writing_n = 0;
    if (c->closing)
        return;
    if (status < 0) {
        KC_DEBUG("net", "%s: write error: %s", c->peer, uv_strerror(status));
        kc_conn_close(c, NULL);
        return;
    }
    flush(c);
    restart_reading(c);
}

/* Free the skipped slots (answered with no bytes) at the head of the queue. Returns whether
 * there were any. */
static bool drop_skipped(kc_conn_t *c)
{
    bool any = false;
    while (c->head && c->head->answered && !c->head->close_after && c->head->reply_len == 0) {
        kc_slot_t *s = c->head;
        c->head = s->next;
        if (c->head == NULL)
            c->tail = NULL;
        c->queued--;
        slot_free(s);
        any = true;
    }
    return any;
}

enum { LINGER_MS = 2000 };

static void on_linger_timeout(uv_timer_t *t)
{
    kc_conn_close(t->data, NULL);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    kc_conn_t *c = req->handle->data;
    if (status < 0 && !c->closing)
        kc_conn_close(c, NULL);
}

/* Shutdown: every reply is written. Closing now, while the client's later requests sit unread
 * in the socket, would make the kernel reset the connection and discard replies it has not
 * sent yet. So shut the write side (the client sees end of stream after the last reply), read
 * and drop whatever else arrives, and close when the client does or LINGER_MS pass. */
static void linger_close(kc_conn_t *c)
{
    if (c->lingering || c->closing)
        return;
    c->lingering = true;
    c->rlen = 0;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0 ||
        (!c->reading && uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)) {
        kc_conn_close(c, NULL);
        return;
    }
    c->reading = true;
    uv_timer_start(&c->idle, on_linger_timeout, LINGER_MS, 0);
}

static void flush(kc_conn_t *c)
{
    if (c->writing || c->closing)
        return;
    bool dropped = drop_skipped(c);
    uv_buf_t bufs[MAX_IOV];
    unsigned n = 0, slots = 0;
    /* Skipped slots inside the run ride along without a buffer: on_write frees them too. */
    for (kc_slot_t *s = c->head; s && s->answered && !s->close_after && n < MAX_IOV; s = s->next) {
        if (s->reply_len > 0)
            bufs[n++] = uv_buf_init((char *)s->reply, (unsigned)s->reply_len);
        slots++;
    }
    if (n == 0) {
        if (dropped)
            restart_reading(c);
        if (c->head && c->head->answered && c->head->close_after)
            kc_conn_close(c, NULL);
        else if (c->head == NULL && c->draining)
            linger_close(c);
        return;
    }
    c->writing = c->head;
    c->writing_n = slots;
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, n, on_write);
    if (rc != 0) {
        c->writing = NULL;
        c->writing_n = 0;
        KC_DEBUG("net", "%s: write failed: %s", c->peer, uv_strerror(rc));
        kc_conn_close(c, NULL);
    }
}

void kc_slot_reply(kc_slot_t *s, uint8_t *buf, size_t len)
{
    kc_conn_t *c = s->conn;
    if (c == NULL) { /* the connection went away while this request was pending */
        free(buf);
        slot_free(s);
        return;
    }
    s->reply = buf;
    s->reply_len = len;
    s->answered = true;
    kc_arena_free(&s->arena);
    c->unanswered--;
    flush(c);
}

void kc_slot_close(kc_slot_t *s, const char *why)
{
    kc_conn_t *c = s->conn;
    if (c == NULL) {
        slot_free(s);
        return;
    }
    KC_INFO("net", "closing %s: %s", c->peer, why);
    s->answered = true;
    s->close_after = true;
    kc_arena_free(&s->arena);
    c->unanswered--;
    flush(c);
}

void kc_slot_skip(kc_slot_t *s)
{
    kc_conn_t *c = s->conn;
    if (c == NULL) {
        slot_free(s);
        return;
    }
    s->reply = NULL;
    s->reply_len = 0;
    s->answered = true;
    kc_arena_free(&s->arena);
    c->unanswered--;
    flush(c);
}

kc_arena_t *kc_slot_arena(kc_slot_t *s)
{
    return &s->arena;
}

const char *kc_conn_peer(const kc_conn_t *c)
{
    return c->peer;
}

static void on_handle_closed(uv_handle_t *h)
{
    kc_conn_t *c = h->data;
    if (--c->open_handles > 0)
        return;
    kc_slot_t *s = c->head;
    while (s) {
        kc_slot_t *next = s->next;
        if (s->answered) {
            slot_free(s);
        } else {
            s->conn = NULL; /* freed when the application answers it */
            s->next = NULL;
        }
        s = next;
    }
    free(c->rbuf);
    kc_server_conn_gone(c->server, c);
    kc_obs_conn_closed();
    free(c);
}

void kc_conn_close(kc_conn_t *c, const char *why)
{
    if (c->closing)
        return;
    if (why)
        KC_INFO("net", "closing %s: %s", c->peer, why);
    c->closing = true;
    if (c->reading)
        uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->idle, on_handle_closed);
}

void kc_conn_drain(kc_conn_t *c)
{
    if (c->closing)
        return;
    c->draining = true;
    stop_reading(c);
    flush(c);
}

static void on_idle(uv_timer_t *t)
{
    kc_conn_t *c = t->data;
    if (c->head == NULL)
        kc_conn_close(c, "idle for longer than connections.max.idle.ms");
}

static void peer_name(kc_conn_t *c)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char host[48] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
            snprintf(c->peer, sizeof(c->peer), "[%s]:%d", host, port);
            return;
        }
        uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
}

void kc_conn_accept(kc_server_t *s, uv_stream_t *listener)
{
    kc_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        KC_ERROR("net", "out of memory accepting a connection");
        return;
    }
    c->server = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->idle);
    c->tcp.data = c;
    c->idle.data = c;
    c->open_handles = 2;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    kc_obs_conn_accepted();
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        snprintf(c->peer, sizeof(c->peer), "?");
        kc_conn_close(c, NULL);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    peer_name(c);
    KC_DEBUG("net", "accepted %s", c->peer);
    uint64_t idle = (uint64_t)s->opts.idle_ms;
    uv_timer_start(&c->idle, on_idle, idle, idle);
    restart_reading(c);
}
