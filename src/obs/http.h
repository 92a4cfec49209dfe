/* http.h - a minimal HTTP/1.1 server on libuv, for the observability endpoints.
 *
 * One request per connection: the server reads the request head (at most KC_HTTP_MAX_REQUEST
 * bytes), asks the application's handler for the response, writes it with
 * `Connection: close` and closes the connection. A request body is ignored. What the server
 * answers by itself: 400 to a malformed request, 431 to a head above the limit, 405 (with
 * `Allow: GET`) to any method but GET, 503 (with `Retry-After: 1`) to a connection beyond
 * max_connections. Everything runs on the loop thread.
 *
 * Bounds (kc_http_limits_t): at most max_connections connections are served at once, and as
 * many more get the 503; beyond that a connection is closed as soon as it is accepted. A
 * connection whose request head is not complete within timeout_ms of its accept, or whose
 * answer's next piece is not taken by the client within timeout_ms, is closed. A large answer
 * is streamed (kc_http_resp_t.more): the connection holds one piece of at most about
 * chunk_bytes, and builds the next only once the previous one is written, so each connection
 * costs the loop one piece of work per turn. When bytes may still come from the client (a
 * body, the rest of an oversized head), the server half-closes after its answer and reads and
 * drops them until the client closes (at most KC_HTTP_LINGER_MS, KC_HTTP_DISCARD_MAX bytes),
 * so that the client reads the answer instead of a reset.
 */
#ifndef KC_OBS_HTTP_H
#define KC_OBS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "net/net.h"
#include "obs/metrics.h"

enum {
    KC_HTTP_MAX_REQUEST = 8192,    /* bytes of request line and headers */
    KC_HTTP_LINGER_MS = 2000,      /* after the answer, how long to wait for the client to close */
    KC_HTTP_DISCARD_MAX = 4194304, /* bytes after the head read and dropped before closing */
};

/* The server's bounds; kc_http_new starts with the defaults of metrics.max.connections,
 * metrics.request.timeout.ms and metrics.chunk.bytes. */
typedef struct kc_http_limits_s {
    int max_connections; /* connections served at once (and as many more answered 503) */
    int64_t timeout_ms;  /* for the request head, and for each piece of the answer */
    size_t chunk_bytes;  /* the size streamed answers are cut into (kc_http_more_fn) */
} kc_http_limits_t;

#define KC_HTTP_LIMITS_DEFAULT                                                                     \
    {                                                                                              \
        16, 10000, 32768                                                                           \
    }

/* A parsed request head. The pointers are views into the buffer given to kc_http_parse. */
typedef struct kc_http_req_s {
    const char *method;
    size_t method_len;
    const char *path; /* the request target up to '?', still percent-encoded; starts with '/' */
    size_t path_len;
    const char *query; /* after '?', or NULL */
    size_t query_len;
    int minor;                 /* HTTP/1.<minor>: 0 or 1 */
    const char *authorization; /* the Authorization header's value, trimmed, or NULL */
    size_t authorization_len;
} kc_http_req_t;

/* Results of kc_http_parse. */
enum {
    KC_HTTP_NEED_MORE = 0, /* no complete head yet */
    KC_HTTP_BAD = -1,      /* malformed: answer 400 */
    KC_HTTP_TOO_BIG = -2,  /* no complete head within `max` bytes: answer 431 */
};

/* Parse the request head at buf[0..len): a request line `METHOD SP target SP HTTP/1.x`, header
 * lines `name: value`, and the empty line; lines end in CRLF (a bare LF is accepted). The
 * method is a token, the target an origin-form path (starting with '/', no control characters
 * or spaces), header names are tokens. Returns the head's length (> 0) and fills *out, or one
 * of the codes above. */
int kc_http_parse(const char *buf, size_t len, size_t max, kc_http_req_t *out);

/* Decode %XX escapes of s[0..n) into out (at least n bytes); '+' stays '+'. Returns the
 * decoded length, or -1 when an escape is not two hex digits. */
long kc_http_percent_decode(const char *s, size_t n, char *out);

/* A streamed body's producer: append the next piece to `out` (empty when called), aiming at
 * no more than `max_bytes`, and return true when more pieces follow (the piece must then not
 * be empty) or false with the last one. Called on the loop, each time the previous piece has
 * been written. Sets out->oom when memory runs out (the connection is then closed). */
typedef bool (*kc_http_more_fn)(void *state, kc_obs_buf_t *out, size_t max_bytes);

/* The handler's answer: a status, a content type (static string) and a body. When `more` is
 * set, the body is `body` (may be empty) followed by what more(more_state, ...) produces:
 * sent with `Transfer-Encoding: chunked` to an HTTP/1.1 request, and delimited by the close of
 * the connection to an HTTP/1.0 one; otherwise with a Content-Length. more_free(more_state)
 * runs exactly once when the server is done with the answer (also when `more` is never called
 * because the connection closed first); the handler must not use more_state after it returns. */
typedef struct kc_http_resp_s {
    int status;
    const char *content_type;
    kc_obs_buf_t body; /* freed by the server */
    kc_http_more_fn more;
    void *more_state;
    void (*more_free)(void *state);
} kc_http_resp_t;

/* Called for each GET request. It fills resp (status 200 and text/plain are preset). */
typedef void (*kc_http_handler_fn)(void *app, const kc_http_req_t *req, kc_http_resp_t *resp);

typedef struct kc_http_s kc_http_t;

/* A server on `loop` that hands requests to fn(app, ...). NULL when out of memory. */
kc_http_t *kc_http_new(uv_loop_t *loop, kc_http_handler_fn fn, void *app);

/* Replace the server's bounds; connections open now keep the old ones where they already apply.
 */
void kc_http_set_limits(kc_http_t *h, const kc_http_limits_t *limits);

/* Serve HTTPS with `tls` (not owned; it must outlive the connections' start, each session
 * holding its own reference to the context), from the next connection on. NULL: HTTP. */
void kc_http_set_tls(kc_http_t *h, kc_net_tls_t *tls);

/* Require `Authorization: Bearer <token>` on every path but /healthz and /readyz (a request
 * without it is answered 401 with `WWW-Authenticate: Bearer`); NULL or "": no token. 0, or -1
 * out of memory. */
int kc_http_set_token(kc_http_t *h, const char *token);

/* Listen on host:port (an IPv4 or IPv6 literal, or a name resolved synchronously); port 0 picks
 * a free port, stored in *bound_port. Returns 0 or a libuv error code. At most one listener. */
int kc_http_listen(kc_http_t *h, const char *host, int port, int *bound_port);

/* Close the listener and every connection (responses being written are cut short) and free
 * the server once the last handle is closed; done(arg), when not NULL, runs then, from the
 * loop. `h` must not be used after this call. */
void kc_http_close(kc_http_t *h, void (*done)(void *arg), void *arg);

/* The reason phrase of a status code ("OK", "Not Found", ...). */
const char *kc_http_reason(int status);

#endif
