/* conn.c - one client connection: framing, the ordered reply queue, backpressure, idle close.
 *
 * Reads land in the server's scratch buffer while the connection has no partial frame, and in
 * the connection's own `rbuf` while it has one (grown to hold the whole frame, freed as soon as
 * no bytes are left in it, so a large request does not leave a large buffer behind).
 * process_frames cuts complete frames off the front, gives each one a slot at the tail of the
 * reply queue (with its own copy of the frame) and calls the application; whatever it leaves
 * in the scratch buffer is copied to `rbuf`. flush writes the answered slots at the head of the
 * queue in one uv_write; the write callback frees them and flushes again. A slot answered out
 * of order simply waits.
 *
 * Budgets (net.h): a slot's frame bytes count in the server's req_bytes from the read until it
 * is answered (or its connection is gone); an answer's bytes count in the connection's and the
 * server's unsent bytes until written. may_read() is the one place that decides whether a
 * connection is read: process_frames stops cutting frames and stops reading when it says no,
 * and kc_conn_resume (from on_write, and from the server when req_bytes drains) starts again.
 *
 * Lifetime: kc_conn_close marks the connection closing and closes its two handles; the memory
 * is freed in the last close callback (free late). Slots the application has not answered by
 * then are detached (slot->conn = NULL) and freed when they are answered.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/net_int.h"
#include "util/diag.h"

enum { READ_CHUNK = KC_NET_READ_CHUNK, MAX_IOV = 128 };

/* A slot's arena starts with room for its frame and this much more (the decoded request and
 * the handler's scratch usually fit), not with the default 4 KiB: a parked request (a JoinGroup
 * waiting for its rebalance) holds its arena, and thousands parked at once left their 4 KiB
 * holes between the members' long-lived allocations, memory the process kept. */
enum { SLOT_ARENA_HEADROOM = 1024 };

static void flush(kc_conn_t *c);
static void process_frames(kc_conn_t *c);
static void tls_pump(kc_conn_t *c);

/* The connection read, or its client took an answer: it becomes the most recently active, at
 * the tail of the server's list. */
static void touch(kc_conn_t *c)
{
    kc_server_t *s = c->server;
    c->active_ms = uv_now(s->loop);
    if (s->conns_tail == c)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    c->next->prev = c->prev; /* not the tail: there is a next */
    c->prev = s->conns_tail;
    c->next = NULL;
    s->conns_tail->next = c;
    s->conns_tail = c;
}

/* The peer of a connection whose address could not be read (or stored). */
static char unknown_peer[] = "?";

/* The request's memory (its frame and its arena) is no longer needed: it was answered. */
static void slot_drop_request(kc_slot_t *s)
{
    kc_arena_free(&s->arena);
    free(s->own);
    s->own = NULL;
}

static void slot_free(kc_slot_t *s)
{
    free(s->reply);
    slot_drop_request(s);
    free(s);
}

/* A read buffer larger than READ_CHUNK counts in req_bytes: bring the count in line with rcap
 * after rbuf changed. */
static void rbuf_account(kc_conn_t *c)
{
    kc_server_t *srv = c->server;
    uint64_t now = !c->borrowed && c->rcap > READ_CHUNK ? c->rcap : 0;
    if (now == c->rcharged)
        return;
    bool less = now < c->rcharged;
    srv->req_bytes = srv->req_bytes - c->rcharged + now;
    c->rcharged = now;
    NET_EVENT(bytes, srv->req_bytes, srv->unsent_bytes);
    if (less)
        kc_server_req_released(srv);
}

/* The slot's frame no longer counts in req_bytes (it was answered, or its connection left). */
static void uncharge(kc_server_t *srv, kc_slot_t *s)
{
    if (s->charged == 0)
        return;
    srv->req_bytes -= s->charged;
    s->charged = 0;
    NET_EVENT(bytes, srv->req_bytes, srv->unsent_bytes);
    kc_server_req_released(srv);
}

/* Unlink the head slot and free it; its answer bytes no longer count as unsent. */
static void pop_head(kc_conn_t *c)
{
    kc_slot_t *s = c->head;
    c->head = s->next;
    if (c->head == NULL)
        c->tail = NULL;
    c->queued--;
    if (s->answered && s->reply_len > 0) {
        c->unsent -= s->reply_len;
        c->server->unsent_bytes -= s->reply_len;
        NET_EVENT(bytes, c->server->req_bytes, c->server->unsent_bytes);
    }
    uncharge(c->server, s);
    slot_free(s);
}

static uint32_t be32(const uint8_t *p);

/* Why a connection may not be read now, or READ_OK. Over queued.max.request.bytes, a
 * connection whose buffer already holds room for all of its partial frame goes on reading
 * (it costs nothing more, and the frame's completion is what frees memory), and frames
 * already read are cut (`cutting`): only reading into new memory stops. */
enum { READ_OK = -1 };

static int may_read_(const kc_conn_t *c, bool cutting)
{
    const kc_server_t *srv = c->server;
    const kc_server_opts_t *o = &srv->opts;
    if ((int64_t)c->queued >= o->max_queued)
        return KC_NET_PAUSE_QUEUED;
    if (!cutting && o->max_request_bytes_queued >= 0 &&
        srv->req_bytes > (uint64_t)o->max_request_bytes_queued &&
        !(!c->borrowed && c->rlen >= 4 && c->rcap >= 4 + (size_t)be32(c->rbuf)))
        return KC_NET_PAUSE_REQUESTS;
    if (c->unsent > 0 && c->unsent > (uint64_t)o->conn_unsent_bytes)
        return KC_NET_PAUSE_CONN_UNSENT;
    if (c->unsent > 0 && srv->unsent_bytes > (uint64_t)o->max_unsent_bytes)
        return KC_NET_PAUSE_UNSENT;
    return READ_OK;
}

static int may_read(const kc_conn_t *c)
{
    return may_read_(c, false);
}

/* Reading stops for budget `why` (a KC_NET_PAUSE_*): count it, and say so now and then. */
static void paused(kc_conn_t *c, int why)
{
    kc_server_t *srv = c->server;
    NET_EVENT(paused, why);
    if (why == KC_NET_PAUSE_REQUESTS) {
        srv->req_muted = true;
        KC_WARN_LIMITED("net",
                        "%" PRIu64 " bytes of requests wait for answers, over "
                        "queued.max.request.bytes (%" PRId64 "): reading no connection until "
                        "they drain",
                        srv->req_bytes, srv->opts.max_request_bytes_queued);
    } else if (why == KC_NET_PAUSE_CONN_UNSENT || why == KC_NET_PAUSE_UNSENT) {
        KC_WARN_LIMITED("net",
                        "not reading %s until it reads its answers: %" PRIu64
                        " bytes unsent (connection.max.unsent.bytes %" PRId64 "), %" PRIu64
                        " bytes unsent in all (queued.max.unsent.bytes %" PRId64 ")",
                        c->peer, c->unsent, srv->opts.conn_unsent_bytes, srv->unsent_bytes,
                        srv->opts.max_unsent_bytes);
    }
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Grow rbuf to `cap` bytes. A buffer over READ_CHUNK counts in req_bytes, and growing one
 * past queued.max.request.bytes is refused (c->denied), unless nothing else is counted (so
 * that one request larger than the budget can still be read). Returns false when refused or
 * out of memory. */
static bool rbuf_reserve(kc_conn_t *c, size_t cap)
{
    kc_server_t *srv = c->server;
    int64_t budget = srv->opts.max_request_bytes_queued;
    if (c->rcap >= cap)
        return true;
    uint64_t charge = cap > READ_CHUNK ? cap : 0;
    if (charge > c->rcharged && budget >= 0 && srv->req_bytes != c->rcharged &&
        srv->req_bytes - c->rcharged + charge > (uint64_t)budget) {
        c->denied = true;
        return false;
    }
    uint8_t *p = realloc(c->rbuf, cap);
    if (p == NULL)
        return false;
    c->rbuf = p;
    c->rcap = cap;
    rbuf_account(c);
    return true;
}

/* Where the next plaintext bytes go: the scratch buffer while there is no partial frame, else
 * rbuf grown for the frame. A zero-length buffer when refused (c->denied) or out of memory. */
static void plain_alloc(kc_conn_t *c, uv_buf_t *buf)
{
    kc_server_t *srv = c->server;
    /* No partial frame: lend the scratch buffer (libuv calls on_read before the next alloc). */
    if (c->rlen == 0) {
        if (srv->scratch == NULL)
            srv->scratch = malloc(READ_CHUNK);
        buf->base = (char *)srv->scratch;
        buf->len = srv->scratch ? READ_CHUNK : 0;
        return;
    }
    /* A partial frame: room for all of it at once (its size was checked), or for a chunk
     * while its size is not known yet. */
    size_t cap = READ_CHUNK;
    if (c->rlen >= 4 && 4 + (size_t)be32(c->rbuf) > cap)
        cap = 4 + (size_t)be32(c->rbuf);
    if (cap <= c->rlen)
        cap = c->rlen + READ_CHUNK;
    if (!rbuf_reserve(c, cap)) {
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    buf->base = (char *)c->rbuf + c->rlen;
    buf->len = c->rcap - c->rlen;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    kc_conn_t *c = h->data;
    kc_server_t *srv = c->server;
    (void)suggested;
    if (c->ssl == NULL) {
        plain_alloc(c, buf);
        return;
    }
    /* TLS: ciphertext goes to the server's TLS scratch, then into the read BIO at once. */
    if (srv->tls_scratch == NULL)
        srv->tls_scratch = malloc(READ_CHUNK);
    buf->base = (char *)srv->tls_scratch;
    buf->len = srv->tls_scratch ? READ_CHUNK : 0;
}

static void stop_reading(kc_conn_t *c)
{
    if (!c->reading || c->closing)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void got_plain(kc_conn_t *c, ssize_t nread, const uv_buf_t *buf);

/* The frames are cut: give the buffer back, or keep only what is left of it. A buffer with no
 * bytes left is freed, so an idle connection holds none. Returns false when out of memory. */
static bool rbuf_trim(kc_conn_t *c)
{
    if (c->borrowed) {
        size_t left = c->closing || c->draining ? 0 : c->rlen;
        uint8_t *p = NULL;
        if (left > 0 && (p = malloc(left)) == NULL)
            return false;
        if (left > 0)
            memcpy(p, c->rbuf, left);
        c->rbuf = p;
        c->rlen = c->rcap = left;
        c->borrowed = false;
        rbuf_account(c);
        return true;
    }
    /* A large buffer never outlives its frame: process_frames hands it to the frame's slot. */
    if (c->rlen == 0) {
        free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
    rbuf_account(c);
    return true;
}

static void restart_reading(kc_conn_t *c)
{
    if (c->reading || c->closing || c->draining || c->server->stopping)
        return;
    if (may_read(c) != READ_OK)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        kc_conn_close(c, "cannot read");
        return;
    }
    c->reading = true;
    process_frames(c);
    if (!rbuf_trim(c))
        kc_conn_close(c, "out of memory for its read buffer");
    else if (c->ssl != NULL)
        tls_pump(c); /* plaintext may wait inside the TLS layer */
}

void kc_conn_resume(kc_conn_t *c)
{
    restart_reading(c);
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
    if (c->processing)
        return;
    c->processing = true;
    const kc_server_opts_t *o = &c->server->opts;
    size_t off = 0;
    int why = READ_OK;
    while (!c->closing && !c->draining && (why = may_read_(c, true)) == READ_OK &&
           c->rlen - off >= 4) {
        uint32_t size = be32(c->rbuf + off);
        uint32_t min = c->frame_max != 0 ? c->frame_min : KC_NET_MIN_FRAME;
        uint32_t max = c->frame_max != 0 ? c->frame_max : (uint32_t)o->max_request_bytes;
        if (size < min || size > max) {
            char sample[40];
            kc_diag_sanitize(sample, sizeof(sample), c->rbuf + off,
                             c->rlen - off < 32 ? c->rlen - off : 32);
            KC_WARN("net", "closing %s: frame size %u outside %u..%u (bytes: \"%s\")", c->peer,
                    size, min, max, sample);
            close_after_replies(c);
            c->processing = false;
            return;
        }
        if (c->rlen - off - 4 < size)
            break;
        kc_slot_t *s = calloc(1, sizeof(*s));
        uint8_t *frame = NULL, *rest = NULL;
        size_t left = c->rlen - off - 4 - size;
        /* A large frame (its buffer counts in req_bytes): the slot takes the buffer over, with
         * its count, and the bytes after the frame move to a buffer of their own. A small one
         * is copied into the slot's arena. */
        bool take = !c->borrowed && c->rcharged > 0;
        if (s != NULL) {
            kc_arena_init_sized(&s->arena, take ? 0 : size + SLOT_ARENA_HEADROOM);
            if (take && (left == 0 || (rest = malloc(left)) != NULL))
                frame = c->rbuf + off + 4;
            else if (!take)
                frame = kc_arena_dup(&s->arena, c->rbuf + off + 4, size);
        }
        if (frame == NULL) {
            if (s != NULL)
                slot_free(s);
            KC_ERROR("net", "closing %s: out of memory for a %u-byte request", c->peer, size);
            kc_conn_close(c, NULL);
            c->processing = false;
            return;
        }
        s->conn = c;
        if (take) {
            if (left > 0)
                memcpy(rest, frame + size, left);
            s->own = c->rbuf;
            s->charged = c->rcharged;
            c->rbuf = rest;
            c->rlen = c->rcap = left;
            c->rcharged = 0;
            off = 0;
            rbuf_account(c);
        } else {
            s->charged = size;
            c->server->req_bytes += size;
            off += 4 + (size_t)size;
        }
        NET_EVENT(bytes, c->server->req_bytes, c->server->unsent_bytes);
        if (c->tail)
            c->tail->next = s;
        else
            c->head = s;
        c->tail = s;
        c->queued++;
        c->unanswered++;
        o->on_request(o->app, c, s, frame, size);
    }
    if (off > 0 && !c->closing && !c->draining) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    c->processing = false;
    if (c->closing || c->draining)
        return;
    if (why == READ_OK)
        why = may_read(c);
    if (why != READ_OK && c->reading) {
        stop_reading(c);
        paused(c, why);
    }
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
    if (nread == UV_ENOBUFS && c->denied) {
        /* on_alloc would not grow the buffer past queued.max.request.bytes: wait. */
        c->denied = false;
        stop_reading(c);
        paused(c, KC_NET_PAUSE_REQUESTS);
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
    touch(c);
    if (c->ssl != NULL) {
        if (BIO_write(SSL_get_rbio(c->ssl), buf->base, (int)nread) != (int)nread) {
            KC_ERROR("net", "closing %s: out of memory for TLS input", c->peer);
            kc_conn_close(c, NULL);
            return;
        }
        tls_pump(c);
        return;
    }
    got_plain(c, nread, buf);
}

/* `nread` plaintext bytes arrived in `buf` (from plain_alloc): cut and serve the frames. */
static void got_plain(kc_conn_t *c, ssize_t nread, const uv_buf_t *buf)
{
    if (buf->base != NULL && (uint8_t *)buf->base == c->server->scratch) {
        /* on_alloc lent the scratch buffer: cut frames from it, keep the rest. */
        free(c->rbuf); /* empty (rlen was 0), if not already freed */
        c->rbuf = c->server->scratch;
        c->rcap = READ_CHUNK;
        c->rlen = (size_t)nread;
        c->borrowed = true;
        rbuf_account(c);
    } else {
        c->rlen += (size_t)nread;
    }
    process_frames(c);
    if (!rbuf_trim(c)) {
        KC_ERROR("net", "closing %s: out of memory for its read buffer", c->peer);
        kc_conn_close(c, NULL);
    }
}

/* Spare write requests the server keeps; more are freed. */
enum { MAX_SPARE_WREQ = 64 };

static kc_wreq_t *wreq_get(kc_server_t *srv)
{
    kc_wreq_t *w = srv->spare;
    if (w == NULL)
        return malloc(sizeof(*w));
    srv->spare = w->next_spare;
    srv->n_spare--;
    return w;
}

static void wreq_put(kc_server_t *srv, kc_wreq_t *w)
{
    if (srv->n_spare >= MAX_SPARE_WREQ) {
        free(w);
        return;
    }
    w->next_spare = srv->spare;
    srv->spare = w;
    srv->n_spare++;
}

static void on_write(uv_write_t *req, int status)
{
    kc_conn_t *c = req->data;
    wreq_put(c->server, c->wreq);
    c->wreq = NULL;
    free(c->wcipher);
    c->wcipher = NULL;
    for (size_t i = 0; i < c->writing_n; i++)
        pop_head(c);
    c->writing = NULL;
    c->writing_n = 0;
    if (c->closing)
        return;
    if (status < 0) {
        KC_DEBUG("net", "%s: write error: %s", c->peer, uv_strerror(status));
        kc_conn_close(c, NULL);
        return;
    }
    if (!c->lingering) /* the client read: the connection is not idle */
        touch(c);
    flush(c);
    if (c->ssl != NULL && c->wreq == NULL && !c->closing)
        kc_tls_idle(c->ssl);
    restart_reading(c);
}

/* Free the skipped slots (answered with no bytes) at the head of the queue. Returns whether
 * there were any. */
static bool drop_skipped(kc_conn_t *c)
{
    bool any = false;
    while (c->head && c->head->answered && !c->head->close_after && c->head->reply_len == 0) {
        pop_head(c);
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
    free(req);
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
    uv_shutdown_t *sreq = malloc(sizeof(*sreq));
    if (sreq == NULL) {
        kc_conn_close(c, NULL);
        return;
    }
    if (uv_shutdown(sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        free(sreq);
        kc_conn_close(c, NULL);
        return;
    }
    if (!c->reading && uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        kc_conn_close(c, NULL);
        return;
    }
    c->reading = true;
    if ((c->linger = malloc(sizeof(*c->linger))) == NULL) {
        kc_conn_close(c, NULL);
        return;
    }
    uv_timer_init(c->server->loop, c->linger);
    c->linger->data = c;
    c->open_handles++;
    uv_timer_start(c->linger, on_linger_timeout, LINGER_MS, 0);
}

/* A TLS connection fails: count it, say so now and then, close it. */
static void tls_fail(kc_conn_t *c, int reason, const char *what)
{
    char why[256];
    kc_tls_last_error(why, sizeof why);
    /* The alert OpenSSL wrote for a refused handshake (no or a bad client certificate, no shared
     * protocol) tells the client why, as Kafka's does: a few bytes, sent if the socket takes
     * them now, never waited for. */
    BIO *wb = c->ssl != NULL ? SSL_get_wbio(c->ssl) : NULL;
    char alert[256];
    int got = wb != NULL && !c->writing ? BIO_read(wb, alert, sizeof alert) : 0;
    if (got > 0) {
        uv_buf_t b = uv_buf_init(alert, (unsigned)got);
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    NET_EVENT(tls_failed, reason);
    KC_WARN_LIMITED("net", "closing %s on listener %s: %s (%s)", c->peer, c->ep->name, what, why);
    kc_conn_close(c, NULL);
}

/* TLS: encrypt the `*n` answers of `bufs` into the write BIO, and make `bufs` the one buffer of
 * everything it holds (handshake messages and alerts too), into c->wcipher; *n = 0 when there
 * is nothing to write. False when the connection was closed. */
static bool tls_encrypt(kc_conn_t *c, uv_buf_t *bufs, unsigned *n)
{
    for (unsigned i = 0; i < *n; i++) {
        ERR_clear_error();
        if (SSL_write(c->ssl, bufs[i].base, (int)bufs[i].len) != (int)bufs[i].len) {
            tls_fail(c, KC_NET_TLS_ERROR, "TLS write failed");
            return false;
        }
    }
    BIO *wb = SSL_get_wbio(c->ssl);
    size_t pend = BIO_ctrl_pending(wb);
    *n = 0;
    if (pend == 0)
        return true;
    if ((c->wcipher = malloc(pend)) == NULL) {
        KC_ERROR("net", "closing %s: out of memory for a TLS write", c->peer);
        kc_conn_close(c, NULL);
        return false;
    }
    int got = BIO_read(wb, c->wcipher, (int)pend);
    bufs[0] = uv_buf_init((char *)c->wcipher, got > 0 ? (unsigned)got : 0);
    *n = got > 0 ? 1 : 0;
    return true;
}

/* The handshake finished: the principal, then frames may be read. */
static void tls_ready(kc_conn_t *c)
{
    char why[256];
    c->tls_ready = true;
    if (c->hs_timer != NULL)
        uv_timer_stop(c->hs_timer);
    if (kc_tls_principal(c->ep->tls, c->ssl, &c->principal, why, sizeof why) != 0) {
        NET_EVENT(tls_failed, KC_NET_TLS_PRINCIPAL);
        KC_WARN_LIMITED("net", "closing %s on listener %s: %s", c->peer, c->ep->name, why);
        kc_conn_close(c, NULL);
        return;
    }
    NET_EVENT(tls_handshake);
    KC_DEBUG("net", "%s: %s %s on listener %s as %s", c->peer, SSL_get_version(c->ssl),
             SSL_get_cipher_name(c->ssl), c->ep->name, kc_conn_principal(c));
}

/* TLS: advance the handshake with what the read BIO holds, then take plaintext out of it into
 * the read buffers and cut frames, as long as the budgets let the connection read; then write
 * what the TLS layer has to say. Called after every read, and when reading resumes (plaintext
 * may wait inside the TLS layer while the socket is not read). */
static void tls_pump(kc_conn_t *c)
{
    if (c->tls_pumping || c->closing)
        return;
    c->tls_pumping = true;
    if (!c->tls_ready) {
        ERR_clear_error();
        int r = SSL_do_handshake(c->ssl);
        int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, r);
        if (r == 1)
            tls_ready(c);
        else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            tls_fail(c, KC_NET_TLS_HANDSHAKE, "TLS handshake failed");
    }
    while (c->tls_ready && !c->closing && !c->draining && !c->lingering) {
        int why = may_read(c);
        if (why != READ_OK) {
            if (c->reading) {
                stop_reading(c);
                paused(c, why);
            }
            break;
        }
        uv_buf_t b;
        plain_alloc(c, &b);
        if (b.len == 0) {
            if (c->denied) {
                c->denied = false;
                stop_reading(c);
                paused(c, KC_NET_PAUSE_REQUESTS);
            } else {
                KC_ERROR("net", "closing %s: out of memory for its read buffer", c->peer);
                kc_conn_close(c, NULL);
            }
            break;
        }
        ERR_clear_error();
        int n = SSL_read(c->ssl, b.base, (int)b.len);
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_ZERO_RETURN) {
                KC_DEBUG("net", "%s closed its TLS session", c->peer);
                kc_conn_close(c, NULL);
            } else if (e != SSL_ERROR_WANT_READ) {
                tls_fail(c, KC_NET_TLS_ERROR, "TLS error");
            }
            break;
        }
        got_plain(c, n, &b);
    }
    c->tls_pumping = false;
    if (!c->closing)
        flush(c);
    if (!c->closing && c->wreq == NULL)
        kc_tls_idle(c->ssl); /* everything read was taken, everything written is out */
}

static void on_handshake_timeout(uv_timer_t *t)
{
    kc_conn_t *c = t->data;
    if (c->tls_ready || c->closing)
        return;
    NET_EVENT(tls_failed, KC_NET_TLS_TIMEOUT);
    KC_WARN_LIMITED("net", "closing %s on listener %s: no TLS handshake within %" PRId64 " ms",
                    c->peer, c->ep->name, kc_tls_handshake_timeout(c->ep->tls));
    ERR_clear_error();
    kc_conn_close(c, NULL);
}

static void flush(kc_conn_t *c)
{
    if (c->wreq != NULL || c->closing)
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
    if (c->ssl != NULL && !tls_encrypt(c, bufs, &n))
        return; /* closed */
    if (n == 0) {
        if (dropped)
            restart_reading(c);
        if (c->head && c->head->answered && c->head->close_after)
            kc_conn_close(c, NULL);
        else if (c->head == NULL && c->draining)
            linger_close(c);
        return;
    }
    if ((c->wreq = wreq_get(c->server)) == NULL) {
        KC_ERROR("net", "closing %s: out of memory for a write", c->peer);
        kc_conn_close(c, NULL);
        return;
    }
    c->wreq->req.data = c;
    c->writing = c->head;
    c->writing_n = slots;
    int rc = uv_write(&c->wreq->req, (uv_stream_t *)&c->tcp, bufs, n, on_write);
    if (rc != 0) {
        wreq_put(c->server, c->wreq);
        c->wreq = NULL;
        c->writing = NULL;
        c->writing_n = 0;
        free(c->wcipher);
        c->wcipher = NULL;
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
    slot_drop_request(s);
    c->unanswered--;
    c->unsent += len;
    c->server->unsent_bytes += len;
    uncharge(c->server, s);
    flush(c);
}

void kc_slot_close(kc_slot_t *s, const char *why)
{
    kc_conn_t *c = s->conn;
    if (c == NULL) {
        slot_free(s);
        return;
    }
    if (why != NULL)
        KC_INFO("net", "closing %s: %s", c->peer, why);
    s->answered = true;
    s->close_after = true;
    slot_drop_request(s);
    c->unanswered--;
    uncharge(c->server, s);
    flush(c);
}

void kc_slot_reply_close(kc_slot_t *s, uint8_t *buf, size_t len)
{
    kc_conn_t *c = s->conn;
    if (c != NULL) { /* a marker right after the slot closes the connection once it is written */
        kc_slot_t *m = calloc(1, sizeof(*m));
        if (m == NULL) {
            free(buf);
            kc_slot_close(s, "out of memory");
            return;
        }
        kc_arena_init(&m->arena);
        m->conn = c;
        m->answered = true;
        m->close_after = true;
        m->next = s->next;
        s->next = m;
        if (c->tail == s)
            c->tail = m;
        c->queued++;
    }
    kc_slot_reply(s, buf, len);
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
    slot_drop_request(s);
    c->unanswered--;
    uncharge(c->server, s);
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

kc_conn_t *kc_slot_conn(const kc_slot_t *s)
{
    return s->conn;
}

const char *kc_conn_listener(const kc_conn_t *c)
{
    return c->ep != NULL ? c->ep->name : "PLAINTEXT";
}

int kc_conn_protocol(const kc_conn_t *c)
{
    return c->ep != NULL ? c->ep->protocol : KC_NET_PLAINTEXT;
}

const char *kc_conn_principal(const kc_conn_t *c)
{
    return c->principal != NULL ? c->principal : KC_NET_ANONYMOUS;
}

void kc_conn_set_principal(kc_conn_t *c, const char *principal)
{
    char *p = principal != NULL ? strdup(principal) : NULL;
    if (principal != NULL && p == NULL) {
        kc_conn_close(c, "out of memory for its principal");
        return;
    }
    free(c->principal);
    c->principal = p;
}

void *kc_conn_app(const kc_conn_t *c)
{
    return c->app;
}

void kc_conn_set_app(kc_conn_t *c, void *app, void (*app_free)(void *))
{
    c->app = app;
    c->app_free = app_free;
}

void kc_conn_set_frames(kc_conn_t *c, uint32_t min, uint32_t max)
{
    c->frame_min = max != 0 ? min : 0;
    c->frame_max = max;
}

bool kc_conn_advertised(const kc_conn_t *c, const char **host, int32_t *port)
{
    if (c->ep == NULL || c->ep->adv_host == NULL)
        return false;
    *host = c->ep->adv_host;
    *port = c->ep->adv_port;
    return true;
}

static void on_handle_closed(uv_handle_t *h)
{
    kc_conn_t *c = h->data;
    if (c->linger != NULL && h == (uv_handle_t *)c->linger) {
        free(c->linger);
        c->linger = NULL;
    }
    if (c->hs_timer != NULL && h == (uv_handle_t *)c->hs_timer) {
        free(c->hs_timer);
        c->hs_timer = NULL;
    }
    if (--c->open_handles > 0)
        return;
    while (c->head) {
        kc_slot_t *s = c->head;
        if (s->answered) {
            pop_head(c);
        } else {
            c->head = s->next;
            uncharge(c->server, s);
            s->conn = NULL; /* freed when the application answers it */
            s->next = NULL;
        }
    }
    c->tail = NULL;
    if (!c->borrowed)
        free(c->rbuf);
    c->rbuf = NULL;
    c->rcap = c->rlen = 0;
    c->borrowed = false;
    rbuf_account(c);
    kc_server_conn_gone(c->server, c);
    if (c->counted)
        NET_EVENT(conn_closed);
    if (c->peer != unknown_peer)
        free(c->peer);
    SSL_free(c->ssl);
    if (c->app != NULL && c->app_free != NULL)
        c->app_free(c->app);
    free(c->principal);
    free(c->wcipher);
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
    if (c->linger != NULL)
        uv_close((uv_handle_t *)c->linger, on_handle_closed);
    if (c->hs_timer != NULL)
        uv_close((uv_handle_t *)c->hs_timer, on_handle_closed);
}

void kc_conn_drain(kc_conn_t *c)
{
    if (c->closing)
        return;
    c->draining = true;
    stop_reading(c);
    flush(c);
}

/* Nothing read or written for connections.max.idle.ms. A connection whose answers wait for
 * a client that does not read them is idle too; one with a request the application still
 * holds (a parked JoinGroup, a long-poll Fetch) is not (it is looked at again idle_ms later);
 * neither is one closing or lingering (its own timer ends it). */
static void idle_over(kc_conn_t *c)
{
    if (c->unanswered == 0 && !c->closing && !c->lingering) {
        bool unread = c->unsent > 0;
        NET_EVENT(idle_closed, unread);
        if (unread)
            KC_WARN_LIMITED("net",
                            "closing %s: %" PRIu64 " bytes of answers unread for longer than "
                            "connections.max.idle.ms",
                            c->peer, c->unsent);
        kc_conn_close(c, unread ? NULL : "idle for longer than connections.max.idle.ms");
    }
    touch(c); /* looked at; one closing stays in the list, at the tail, until it is freed */
}

/* The server's one idle timer (connections.max.idle.ms): the connections at the head of its
 * list are the least recently active; those idle for idle_ms are looked at, each once, then
 * the timer is armed for when the new head would be. */
static void on_sweep(uv_timer_t *t)
{
    kc_server_t *s = t->data;
    uint64_t now = uv_now(s->loop), idle = (uint64_t)s->opts.idle_ms;
    kc_conn_t *c;
    for (size_t n = s->n_conns; n > 0 && (c = s->conns) != NULL && now - c->active_ms >= idle; n--)
        idle_over(c);
    if (s->conns != NULL && !s->stopping) {
        uint64_t age = now - s->conns->active_ms;
        uv_timer_start(&s->sweep, on_sweep, age >= idle ? 0 : idle - age, 0);
    }
}

/* "host:port" of the peer, at its length (a connection keeps it for its logs); the shared
 * "?" when it cannot be read or allocated. */
static void peer_name(kc_conn_t *c)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char host[48] = "?", buf[64];
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        } else {
            uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        }
    }
    snprintf(buf, sizeof(buf), ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host, port);
    char *p = strdup(buf);
    if (p != NULL)
        c->peer = p;
}

void kc_conn_accept(kc_server_t *s, uv_stream_t *listener)
{
    kc_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        KC_ERROR("net", "out of memory accepting a connection");
        return;
    }
    c->server = s;
    c->peer = unknown_peer;
    c->counted = true;
    c->ep = ((kc_listener_h_t *)listener->data)->ep;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->open_handles = 1;
    c->active_ms = uv_now(s->loop);
    c->prev = s->conns_tail;
    if (s->conns_tail)
        s->conns_tail->next = c;
    else
        s->conns = c;
    s->conns_tail = c;
    s->n_conns++;
    if (!uv_is_active((uv_handle_t *)&s->sweep) && !s->stopping)
        uv_timer_start(&s->sweep, on_sweep, (uint64_t)s->opts.idle_ms, 0);
    NET_EVENT(conn_accepted);
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        kc_conn_close(c, NULL);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    peer_name(c);
    if (!kc_server_admit(s, c)) {
        c->counted = false; /* refused: not an open connection */
        NET_EVENT(conn_closed);
        kc_conn_close(c, NULL);
        return;
    }
    KC_DEBUG("net", "accepted %s on listener %s", c->peer, kc_conn_listener(c));
    if (c->ep != NULL && c->ep->first_frames_max != 0)
        kc_conn_set_frames(c, KC_NET_MIN_FRAME, c->ep->first_frames_max);
    if (c->ep != NULL && (c->ep->protocol == KC_NET_SSL || c->ep->protocol == KC_NET_SASL_SSL)) {
        if ((c->ssl = kc_tls_new_conn(c->ep->tls)) == NULL ||
            (c->hs_timer = malloc(sizeof(*c->hs_timer))) == NULL) {
            KC_ERROR("net", "closing %s: out of memory for TLS", c->peer);
            kc_conn_close(c, NULL);
            return;
        }
        uv_timer_init(s->loop, c->hs_timer);
        c->hs_timer->data = c;
        c->open_handles++;
        uv_timer_start(c->hs_timer, on_handshake_timeout,
                       (uint64_t)kc_tls_handshake_timeout(c->ep->tls), 0);
    }
    restart_reading(c);
}
