/* http.c - the observability endpoints' HTTP/1.1 server: parse a request head, answer, close.
 *
 * A connection reads into a fixed buffer of KC_HTTP_MAX_REQUEST bytes; after each read the
 * head is parsed again from the start (heads are small). Once it is complete (or malformed,
 * or too big) the connection answers: the head of the response and the handler's body go out
 * with one uv_write; a streamed answer then produces one piece per completed write (so one
 * piece per connection per loop turn, and one piece in memory) until its producer says it was
 * the last. Reading goes on meanwhile, into the same buffer, only to drop what the client
 * still sends. When the answer is written the connection closes, or, if the client may still
 * be sending (bytes came after the head, or the head was refused), half-closes and lingers
 * until the client closes, so that closing with unread bytes does not reset the connection
 * before the client has read the answer.
 *
 * The listening socket is the network room's (net.h kc_net_listen): for each connection waiting
 * on it, on_connection counts it against metrics.max.connections and takes it with
 * kc_net_accept, or closes it at once when even the 503 answers are over their bound.
 *
 * Every connection has one timer: the head's deadline, then each write's, then the linger's.
 * Handles are closed with uv_close and the memory freed in the close callbacks; the server
 * frees itself after kc_http_close once its listener and its last connection are closed.
 */
#include "obs/http.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/net.h"
#include "util/container.h"
#include "util/diag.h"

/* How often a bound that is hit may be logged (the lines in between are counted). */

typedef enum {
    C_HEAD,    /* reading the request head */
    C_WRITING, /* writing the answer (a write is in flight) */
    C_LINGER,  /* answered and half-closed: waiting for the client to close */
} cstate_t;

typedef struct hconn_s {
    struct hconn_s *next, *prev;
    kc_http_t *server;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    int open_handles;
    cstate_t state;
    bool closing;
    bool refused;  /* beyond max_connections: answered 503 */
    bool linger;   /* the client may still send: half-close and linger after the answer */
    bool peer_eof; /* the client half-closed */
    bool chunked;  /* the streamed body is framed in chunks (an HTTP/1.1 request) */
    bool last;     /* the piece being written is the body's last */
    size_t len;    /* bytes of the head in `in` */
    size_t dropped;
    kc_obs_buf_t head;  /* the response head and the handler's body: the first write */
    kc_obs_buf_t piece; /* the streamed piece being written */
    kc_http_more_fn more;
    void *more_state;
    void (*more_free)(void *);
    char frame[24]; /* a chunk's size line */
    /* HTTPS (kc_http_set_tls): the session, and the ciphertext of the answer's write. */
    kc_net_tls_session_t *tls;
    uint8_t *wcipher;
    char in[KC_HTTP_MAX_REQUEST];
} hconn_t;

/* A write of TLS handshake messages or alerts, freed when it is done. */
typedef struct twrite_s {
    uv_write_t req;
    uint8_t *data;
} twrite_t;

/* A rate-limited log line of a bound that was hit. */
struct kc_http_s {
    uv_loop_t *loop;
    kc_http_handler_fn fn;
    void *app;
    kc_net_listener_t *listener; /* net's socket; NULL before kc_http_listen */
    bool listener_init;          /* listening, or its close not finished */
    bool closing;
    hconn_t *conns;
    int n_served, n_refused; /* open connections of each kind */
    kc_http_limits_t limits;
    kc_net_tls_t *tls; /* HTTPS, or NULL; not owned */
    char *token;       /* a bearer token the data endpoints require, or NULL */
    void (*done)(void *);
    void *done_arg;
};

/* ---- Parsing ------------------------------------------------------------------------------ */

static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* The end of the line starting at `p` (the index of its LF), or -1 when there is none yet. */
static long line_end(const char *buf, size_t len, size_t p)
{
    const char *lf = memchr(buf + p, '\n', len - p);
    return lf ? (long)(lf - buf) : -1;
}

int kc_http_parse(const char *buf, size_t len, size_t max, kc_http_req_t *out)
{
    size_t limit = len < max ? len : max;
    long e = line_end(buf, limit, 0);
    if (e < 0) {
        /* Refuse at once what cannot become a request line (a Kafka or TLS client). */
        size_t m = 0;
        while (m < limit && is_tchar((unsigned char)buf[m]))
            m++;
        if (m < limit && (m == 0 || buf[m] != ' '))
            return KC_HTTP_BAD;
        return len >= max ? KC_HTTP_TOO_BIG : KC_HTTP_NEED_MORE;
    }
    size_t end = (size_t)e; /* request line: buf[0..end), without the CR */
    if (end > 0 && buf[end - 1] == '\r')
        end--;
    memset(out, 0, sizeof(*out));
    size_t i = 0;
    while (i < end && is_tchar((unsigned char)buf[i]))
        i++;
    if (i == 0 || i >= end || buf[i] != ' ')
        return KC_HTTP_BAD;
    out->method = buf;
    out->method_len = i;
    size_t t = ++i;
    while (i < end && buf[i] != ' ') {
        unsigned char c = (unsigned char)buf[i];
        if (c <= 0x20 || c == 0x7f)
            return KC_HTTP_BAD;
        i++;
    }
    if (i == t || i >= end || buf[t] != '/')
        return KC_HTTP_BAD;
    const char *q = memchr(buf + t, '?', i - t);
    out->path = buf + t;
    out->path_len = q ? (size_t)(q - (buf + t)) : i - t;
    if (q) {
        out->query = q + 1;
        out->query_len = (size_t)(buf + i - (q + 1));
    }
    i++;
    if (end - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 ||
        (buf[i + 7] != '0' && buf[i + 7] != '1'))
        return KC_HTTP_BAD;
    out->minor = buf[i + 7] - '0';
    /* Header lines, up to the empty line. */
    size_t p = (size_t)e + 1;
    for (;;) {
        e = line_end(buf, limit, p);
        if (e < 0)
            return len >= max ? KC_HTTP_TOO_BIG : KC_HTTP_NEED_MORE;
        end = (size_t)e;
        if (end > p && buf[end - 1] == '\r')
            end--;
        if (end == p)
            return (int)(e + 1);
        size_t n = p;
        while (n < end && is_tchar((unsigned char)buf[n]))
            n++;
        if (n == p || n >= end || buf[n] != ':')
            return KC_HTTP_BAD; /* no name, a space before the colon, or no colon */
        for (size_t k = n + 1; k < end; k++) {
            unsigned char c = (unsigned char)buf[k];
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return KC_HTTP_BAD;
        }
        if (n - p == 13 && strncasecmp(buf + p, "Authorization", 13) == 0) {
            size_t vb = n + 1, ve = end;
            while (vb < ve && (buf[vb] == ' ' || buf[vb] == '\t'))
                vb++;
            while (ve > vb && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
                ve--;
            out->authorization = buf + vb;
            out->authorization_len = ve - vb;
        }
        p = (size_t)e + 1;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long kc_http_percent_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        if (i + 2 >= n)
            return -1;
        int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    return (long)o;
}

const char *kc_http_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Unknown";
    }
}

/* ---- Connections ---------------------------------------------------------------------------- */

static void maybe_free_server(kc_http_t *h)
{
    if (!h->closing || h->conns != NULL || h->listener_init)
        return;
    void (*done)(void *) = h->done;
    void *arg = h->done_arg;
    free(h->token);
    free(h);
    if (done)
        done(arg);
}

static void on_conn_closed(uv_handle_t *handle)
{
    hconn_t *c = handle->data;
    if (--c->open_handles > 0)
        return;
    kc_http_t *h = c->server;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->refused)
        h->n_refused--;
    else
        h->n_served--;
    kc_obs_http_conn_closed();
    if (c->more_free)
        c->more_free(c->more_state);
    kc_obs_buf_free(&c->head);
    kc_obs_buf_free(&c->piece);
    kc_net_tls_session_free(c->tls);
    free(c->wcipher);
    free(c);
    maybe_free_server(h);
}

static void conn_close(hconn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_timeout(uv_timer_t *t)
{
    hconn_t *c = t->data;
    if (c->state != C_LINGER) {
        kc_http_t *h = c->server;
        kc_obs_http_timeout();
        KC_INFO_LIMITED("obs",
                        "closing an HTTP connection that %s within metrics.request.timeout.ms=%lld",
                        c->state == C_HEAD ? "sent no complete request head"
                                           : "did not take the next piece of its answer",
                        (long long)h->limits.timeout_ms);
    }
    conn_close(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* the timer or the client's close ends the connection either way */
}

static void write_next(hconn_t *c);

/* The answer is written: close, or half-close and wait for the client to close. */
static void finish(hconn_t *c)
{
    if (c->peer_eof || !c->linger) {
        conn_close(c);
        return;
    }
    c->state = C_LINGER;
    uv_timer_start(&c->timer, on_timeout, KC_HTTP_LINGER_MS, 0);
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        conn_close(c);
}

static void on_twritten(uv_write_t *req, int status)
{
    twrite_t *w = container_of(req, twrite_t, req);
    hconn_t *c = req->data;
    free(w->data);
    free(w);
    if (status < 0 && !c->closing)
        conn_close(c);
}

/* HTTPS: send what the session has to say outside an answer (handshake messages, alerts). */
static void tls_send(hconn_t *c)
{
    size_t len;
    uint8_t *p = kc_net_tls_session_output(c->tls, &len);
    if (p == NULL)
        return;
    twrite_t *w = malloc(sizeof(*w));
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);
    if (w == NULL) {
        free(p);
        conn_close(c);
        return;
    }
    w->data = p;
    w->req.data = c;
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_twritten) != 0) {
        free(p);
        free(w);
        conn_close(c);
    }
}

static void on_written(uv_write_t *req, int status)
{
    hconn_t *c = container_of(req, hconn_t, wreq);
    free(c->wcipher);
    c->wcipher = NULL;
    if (status < 0 || c->closing) { /* UV_ECANCELED when the connection was closed meanwhile */
        conn_close(c);
        return;
    }
    kc_obs_buf_free(&c->head); /* written once, with the first piece */
    if (c->more == NULL || c->last) {
        finish(c);
        return;
    }
    c->piece.len = 0;
    c->last = !c->more(c->more_state, &c->piece, c->server->limits.chunk_bytes);
    if (c->piece.len == 0)
        c->last = true; /* an empty piece cannot be sent as a chunk: the end */
    if (c->piece.oom) {
        KC_WARN("obs", "out of memory streaming an HTTP answer: closing the connection");
        conn_close(c);
        return;
    }
    write_next(c);
}

/* Write what is pending: the head (once), then the current piece framed as a chunk. */
static void write_next(hconn_t *c)
{
    static const char crlf[] = "\r\n", crlf_end[] = "\r\n0\r\n\r\n", end[] = "0\r\n\r\n";
    uv_buf_t b[4];
    unsigned n = 0;
    if (c->head.len > 0)
        b[n++] = uv_buf_init(c->head.p, (unsigned)c->head.len);
    if (c->more != NULL && c->piece.len > 0) {
        if (c->chunked) {
            int fl = snprintf(c->frame, sizeof(c->frame), "%zx\r\n", c->piece.len);
            b[n++] = uv_buf_init(c->frame, (unsigned)fl);
        }
        b[n++] = uv_buf_init(c->piece.p, (unsigned)c->piece.len);
        if (c->chunked)
            b[n++] = c->last ? uv_buf_init((char *)crlf_end, sizeof(crlf_end) - 1)
                             : uv_buf_init((char *)crlf, sizeof(crlf) - 1);
    } else if (c->more != NULL && c->chunked && c->last) {
        b[n++] = uv_buf_init((char *)end, sizeof(end) - 1);
    }
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += b[i].len;
    kc_obs_http_bytes(total);
    if (c->tls != NULL && n > 0) { /* HTTPS: the buffers, encrypted, as one */
        for (unsigned i = 0; i < n; i++) {
            if (kc_net_tls_session_write(c->tls, b[i].base, b[i].len) != 0) {
                conn_close(c);
                return;
            }
        }
        size_t len;
        if ((c->wcipher = kc_net_tls_session_output(c->tls, &len)) == NULL) {
            conn_close(c);
            return;
        }
        b[0] = uv_buf_init((char *)c->wcipher, (unsigned)len);
        n = 1;
    }
    c->state = C_WRITING;
    uv_timer_start(&c->timer, on_timeout, (uint64_t)c->server->limits.timeout_ms, 0);
    if (n == 0 || uv_write(&c->wreq, (uv_stream_t *)&c->tcp, b, n, on_written) != 0)
        conn_close(c);
}

/* Start writing a response: `status`, `content_type`, and `body` (taken over), followed by the
 * pieces of `more` when it is set. */
static void respond(hconn_t *c, int minor, int status, const char *content_type, kc_obs_buf_t *body,
                    const char *extra)
{
    kc_obs_http(status);
    kc_obs_buf_printf(&c->head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n", status,
                      kc_http_reason(status), content_type);
    if (c->more == NULL)
        kc_obs_buf_printf(&c->head, "Content-Length: %zu\r\n", body->len);
    else if (minor >= 1)
        kc_obs_buf_puts(&c->head, "Transfer-Encoding: chunked\r\n");
    c->chunked = c->more != NULL && minor >= 1;
    kc_obs_buf_printf(&c->head, "Connection: close\r\n%s\r\n", extra);
    if (c->more == NULL) {
        kc_obs_buf_put(&c->head, body->p ? body->p : "", body->len);
    } else if (body->len > 0) {
        /* The handler's body goes out as the first piece. */
        kc_obs_buf_free(&c->piece);
        c->piece = *body;
        memset(body, 0, sizeof(*body));
    } else {
        c->piece.len = 0;
        c->last = !c->more(c->more_state, &c->piece, c->server->limits.chunk_bytes);
        if (c->piece.len == 0)
            c->last = true;
    }
    kc_obs_buf_free(body);
    if (c->head.oom || c->piece.oom) {
        conn_close(c);
        return;
    }
    write_next(c);
}

/* Whether the request carries `Authorization: Bearer <token>` (compared in constant time). */
static bool bearer_ok(const char *token, const kc_http_req_t *req)
{
    static const char scheme[] = "Bearer ";
    size_t n = strlen(token), k = sizeof scheme - 1;
    if (req->authorization == NULL || req->authorization_len != k + n ||
        strncasecmp(req->authorization, scheme, k) != 0)
        return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(req->authorization[k + i] ^ token[i]);
    return diff == 0;
}

static void answer(hconn_t *c, const kc_http_req_t *req)
{
    kc_http_resp_t resp = {.status = 200, .content_type = "text/plain; charset=utf-8"};
    bool open = (req->path_len == 8 && memcmp(req->path, "/healthz", 8) == 0) ||
                (req->path_len == 7 && memcmp(req->path, "/readyz", 7) == 0);
    if (req->method_len != 3 || memcmp(req->method, "GET", 3) != 0) {
        resp.status = 405;
        kc_obs_buf_puts(&resp.body, "only GET is served\n");
    } else if (c->server->token != NULL && !open && !bearer_ok(c->server->token, req)) {
        kc_obs_buf_t b = {0};
        kc_obs_buf_puts(&b, "a bearer token is required (metrics.bearer.token)\n");
        KC_WARN_LIMITED("obs", "refusing an HTTP request without the bearer token");
        respond(c, req->minor, 401, "text/plain; charset=utf-8", &b,
                "WWW-Authenticate: Bearer\r\n");
        return;
    } else {
        c->server->fn(c->server->app, req, &resp);
    }
    c->more = resp.more;
    c->more_state = resp.more_state;
    c->more_free = resp.more_free;
    if (resp.body.oom) {
        kc_obs_buf_free(&resp.body);
        if (c->more_free)
            c->more_free(c->more_state);
        c->more = NULL;
        c->more_free = NULL;
        resp.status = 500;
        resp.content_type = "text/plain; charset=utf-8";
        kc_obs_buf_puts(&resp.body, "out of memory\n");
    }
    respond(c, req->minor, resp.status, resp.content_type, &resp.body,
            resp.status == 405 ? "Allow: GET\r\n" : "");
}

/* Answer by the server itself (400, 431, 503). */
static void answer_error(hconn_t *c, int status, const char *body, const char *extra)
{
    kc_obs_buf_t b = {0};
    kc_obs_buf_puts(&b, body);
    respond(c, 1, status, "text/plain; charset=utf-8", &b, extra);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    hconn_t *c = handle->data;
    /* HTTPS: ciphertext goes to one buffer all connections share: on_read feeds it to the
     * session at once (libuv calls on_read right after on_alloc). */
    if (c->tls != NULL) {
        static char cipher[16384];
        *buf = uv_buf_init(cipher, (unsigned)sizeof(cipher));
        return;
    }
    /* The head must fit in c->in; after it, c->in takes what is read only to be dropped. */
    if (c->state == C_HEAD)
        *buf = uv_buf_init(c->in + c->len, (unsigned)(sizeof(c->in) - c->len));
    else
        *buf = uv_buf_init(c->in, (unsigned)sizeof(c->in));
}

static void got(hconn_t *c, size_t nread);

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    hconn_t *c = stream->data;
    if (nread == 0 || c->closing)
        return;
    if (nread == UV_EOF && c->state == C_WRITING) {
        c->peer_eof = true; /* a half-close: the answer still goes out */
        uv_read_stop(stream);
        return;
    }
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (c->tls == NULL) {
        got(c, (size_t)nread);
        return;
    }
    /* HTTPS: decrypt into the place on_alloc would have given, and go on as with plaintext. */
    if (kc_net_tls_session_feed(c->tls, buf->base, (size_t)nread) != 0) {
        conn_close(c);
        return;
    }
    for (;;) {
        char why[256];
        char *into = c->state == C_HEAD ? c->in + c->len : c->in;
        size_t room = c->state == C_HEAD ? sizeof(c->in) - c->len : sizeof(c->in);
        long n = room > 0 ? kc_net_tls_session_read(c->tls, into, room, why, sizeof why) : 0;
        if (n < 0) {
            KC_WARN_LIMITED("obs", "closing an HTTPS connection: %s", why);
            conn_close(c);
            return;
        }
        if (n == 0)
            break;
        got(c, (size_t)n);
        if (c->closing)
            return;
    }
    if (c->state == C_HEAD)
        tls_send(c); /* handshake messages; an answer carries its own */
}

/* n plaintext bytes arrived: at c->in + c->len while reading the head, else to be dropped. */
static void got(hconn_t *c, size_t nread)
{
    if (c->state != C_HEAD) {
        /* A body, or the rest of a refused head: dropped, within a bound. */
        c->linger = true;
        c->dropped += (size_t)nread;
        if (c->dropped > KC_HTTP_DISCARD_MAX)
            conn_close(c);
        return;
    }
    c->len += (size_t)nread;
    kc_http_req_t req;
    int rc = kc_http_parse(c->in, c->len, KC_HTTP_MAX_REQUEST, &req);
    if (rc == KC_HTTP_NEED_MORE && c->len < sizeof(c->in))
        return;
    if (rc == KC_HTTP_NEED_MORE || rc == KC_HTTP_TOO_BIG) {
        c->linger = true;
        answer_error(c, 431, "request head too large\n", "");
    } else if (rc == KC_HTTP_BAD) {
        c->linger = true;
        answer_error(c, 400, "malformed request\n", "");
    } else {
        c->linger = (size_t)rc < c->len; /* bytes after the head: a body */
        answer(c, &req);
    }
}

/* A connection waits on the listener (net's): take it, into the bounds of this server. */
static void on_connection(void *arg, kc_net_listener_t *listener)
{
    kc_http_t *h = arg;
    if (h->closing)
        return;
    hconn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        KC_WARN("obs", "out of memory accepting an HTTP connection");
        return;
    }
    c->server = h;
    int accepted = kc_net_accept(listener, &c->tcp);
    uv_timer_init(h->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->open_handles = 2;
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    kc_obs_http_conn_accepted();
    bool over = h->n_served >= h->limits.max_connections;
    c->refused = over;
    if (over)
        h->n_refused++;
    else
        h->n_served++;
    if (accepted != 0) {
        conn_close(c);
        return;
    }
    if (over) {
        kc_obs_http_refused();
        KC_WARN_LIMITED("obs", "refusing an HTTP connection: metrics.max.connections=%d are open",
                        h->limits.max_connections);
        if (h->n_refused > h->limits.max_connections) {
            conn_close(c); /* too many even to answer */
            return;
        }
    }
    if (h->tls != NULL && (c->tls = kc_net_tls_session_new(h->tls)) == NULL) {
        conn_close(c);
        return;
    }
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_close(c);
        return;
    }
    if (over) {
        c->linger = true; /* the request is still coming */
        answer_error(c, 503, "too many HTTP connections; retry later\n", "Retry-After: 1\r\n");
        return;
    }
    uv_timer_start(&c->timer, on_timeout, (uint64_t)h->limits.timeout_ms, 0);
}

/* ---- The server ---------------------------------------------------------------------------- */

kc_http_t *kc_http_new(uv_loop_t *loop, kc_http_handler_fn fn, void *app)
{
    kc_http_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->loop = loop;
    h->fn = fn;
    h->app = app;
    h->limits = (kc_http_limits_t)KC_HTTP_LIMITS_DEFAULT;
    return h;
}

void kc_http_set_limits(kc_http_t *h, const kc_http_limits_t *limits)
{
    h->limits = *limits;
}

void kc_http_set_tls(kc_http_t *h, kc_net_tls_t *tls)
{
    h->tls = tls;
}

int kc_http_set_token(kc_http_t *h, const char *token)
{
    char *t = token != NULL && *token != '\0' ? strdup(token) : NULL;
    if (token != NULL && *token != '\0' && t == NULL)
        return -1;
    free(h->token);
    h->token = t;
    return 0;
}

int kc_http_listen(kc_http_t *h, const char *host, int port, int *bound_port)
{
    if (h->listener_init)
        return UV_EBUSY;
    int rc = 0;
    h->listener = kc_net_listen(h->loop, host, port, 64, on_connection, h, bound_port, &rc);
    if (h->listener == NULL)
        return rc;
    h->listener_init = true;
    return 0;
}

static void on_listener_closed(void *arg)
{
    kc_http_t *h = arg;
    h->listener = NULL;
    h->listener_init = false;
    maybe_free_server(h);
}

void kc_http_close(kc_http_t *h, void (*done)(void *arg), void *arg)
{
    if (h->closing)
        return;
    h->closing = true;
    h->done = done;
    h->done_arg = arg;
    for (hconn_t *c = h->conns; c; c = c->next)
        conn_close(c);
    if (h->listener_init)
        kc_net_listener_close(h->listener, on_listener_closed, h);
    else
        maybe_free_server(h);
}
