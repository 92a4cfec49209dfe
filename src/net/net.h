/* net.h - the network room: TCP listeners, Kafka framing and per-connection ordered replies.
 *
 * The server accepts connections on a libuv loop, cuts each byte stream into frames (a 4-byte
 * big-endian size, then the request), and hands every frame to the application callback
 * together with a *slot*: the place in that connection's reply queue where the answer to this
 * request goes. Replies leave the connection strictly in request order: a slot that is filled
 * early waits for the slots before it. Ready replies at the head of the queue are written
 * together, one uv_write with many buffers, one write in flight per connection.
 *
 * Backpressure and memory budgets (each one stops reading, never drops an answer owed):
 *   - a connection with `max_queued` requests not yet written back is not read until its
 *     queue drains below that;
 *   - a connection whose answers not yet written exceed `conn_unsent_bytes` is not read until
 *     the client reads them; while the answers of all connections exceed `max_unsent_bytes`,
 *     no connection that has answers waiting is read (one that has none still is);
 *   - while the frames of all requests not yet answered, and the read buffers of requests
 *     larger than a read chunk still arriving, exceed `max_request_bytes_queued`, no connection
 *     reads into new memory (Kafka's queued.max.request.bytes): a buffer is not grown past it
 *     (unless it is the only one counted), frames already read are still served, and reading
 *     resumes as they are answered.
 * A connection that neither sends nor reads anything for `idle_ms` is closed, also when
 * answers wait for it (the client does not read them); one whose requests the application
 * still holds (a parked JoinGroup) is not. Read buffers are lent from one buffer of the
 * server while a connection has no partial frame, so an idle connection holds none.
 *
 * Connections: at `max_connections` open connections the server accepts no more (they wait
 * in the listen backlog) until one closes; a connection from an address that already has
 * `max_connections_per_ip` is closed as soon as it is accepted; so is one that would leave
 * fewer than `reserved_fds` file descriptors under the open-file limit (they are the log's).
 *
 * A frame whose size is above `max_request_bytes` or below the smallest request header closes
 * that connection, with a log line; so does kc_slot_close. Nothing here knows the Kafka APIs.
 */
#ifndef KC_NET_NET_H
#define KC_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "util/arena.h"

typedef struct kc_server_s kc_server_t;
typedef struct kc_conn_s kc_conn_t;
typedef struct kc_slot_s kc_slot_t;

/* Smallest request the framing accepts: api key, version, correlation id, client id length. */
#define KC_NET_MIN_FRAME 10

/* Called once per frame. `frame` (len bytes, the size prefix excluded) is a copy owned by the
 * slot and stays valid until the slot is answered. The callee must eventually call exactly one
 * of kc_slot_reply, kc_slot_close or kc_slot_skip for the slot, now or later from the loop
 * thread. */
typedef void (*kc_request_cb)(void *app, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                              size_t len);

typedef struct kc_server_opts_s {
    int32_t max_request_bytes;        /* socket.request.max.bytes */
    int64_t idle_ms;                  /* connections.max.idle.ms */
    int32_t max_queued;               /* queued.max.requests, per connection */
    int64_t max_request_bytes_queued; /* queued.max.request.bytes; -1 = no limit */
    int64_t conn_unsent_bytes;        /* connection.max.unsent.bytes */
    int64_t max_unsent_bytes;         /* queued.max.unsent.bytes */
    int32_t max_connections;          /* max.connections */
    int32_t max_connections_per_ip;   /* max.connections.per.ip */
    int32_t reserved_fds;             /* file descriptors connections must leave free */
    kc_request_cb on_request;
    void *app;
} kc_server_opts_t;

/* Create a server on `loop`. Returns NULL when out of memory. */
kc_server_t *kc_server_new(uv_loop_t *loop, const kc_server_opts_t *opts);

/* Bind and listen on host:port (IPv4 or IPv6 literal, or a name resolved synchronously);
 * port 0 lets the OS choose. On success writes the bound port to *bound_port, logs
 * "listening on HOST:PORT" and returns 0; otherwise returns a libuv error code. */
int kc_server_listen(kc_server_t *s, const char *host, int port, int *bound_port);

/* Stop accepting, stop reading, let every connection finish writing the replies it owes (up
 * to a few seconds), close everything, then call done(arg) from the loop. */
void kc_server_shutdown(kc_server_t *s, void (*done)(void *arg), void *arg);

/* Free the server after kc_server_shutdown's callback has run. */
void kc_server_free(kc_server_t *s);

/* Answer a slot with `len` bytes at `buf` (a whole response frame, size prefix included),
 * taking ownership of `buf` (freed with free()). The slot, its frame and its arena are gone
 * after this call. If the connection has closed meanwhile the reply is dropped. */
void kc_slot_reply(kc_slot_t *slot, uint8_t *buf, size_t len);

/* Answer a slot by closing its connection once the replies before it are written. `why` is
 * logged at info unless it is NULL (the caller logged). The slot is gone after this call. */
void kc_slot_close(kc_slot_t *slot, const char *why);

/* kc_slot_reply, then close the connection once that answer is written (a failed SASL
 * authentication). */
void kc_slot_reply_close(kc_slot_t *slot, uint8_t *buf, size_t len);

/* Answer a slot with nothing: no bytes go out for it (a Produce with acks=0), and the replies
 * after it follow the ones before it as usual. The slot, its frame and its arena are gone after
 * this call. */
void kc_slot_skip(kc_slot_t *slot);

/* The slot's arena: memory that lives until the slot is answered. */
kc_arena_t *kc_slot_arena(kc_slot_t *slot);

/* "host:port" of the peer, for logs. Valid while the connection is. */
const char *kc_conn_peer(const kc_conn_t *c);

/* ---- Listeners, security protocols, TLS and principals ------------------------------------
 *
 * A Kafka listener has a name and a security protocol (Kafka's listener model): PLAINTEXT
 * connections are served as they are; SSL ones run TLS (tls.c: OpenSSL 3 over memory BIOs,
 * driven by the connection's reads and writes) before any frame is cut, and their answers are
 * encrypted into the one write in flight. The budgets above count the plaintext bytes.
 * A handshake that fails (garbage, a plaintext Kafka request, a certificate that does not
 * verify) or does not finish within the listener's handshake timeout closes that connection
 * only, with a rate-limited log line and the tls_failed event. Every connection carries its
 * listener's name and protocol and its principal: "User:ANONYMOUS" on PLAINTEXT and on SSL
 * without a client certificate, "User:" and the certificate's RFC 2253 subject mapped by
 * ssl.principal.mapping.rules with one. SASL_PLAINTEXT and SASL_SSL listeners are served like
 * PLAINTEXT and SSL; the SASL exchange itself is the application's (the API room): it keeps its
 * state on the connection (kc_conn_set_app), switches the framing for raw SASL tokens
 * (kc_conn_set_frames) and sets the principal once the client authenticated. */

/* The security protocols, numbered as conf.h's KC_CONF_SEC_*. */
enum { KC_NET_PLAINTEXT = 0, KC_NET_SSL = 1, KC_NET_SASL_PLAINTEXT = 2, KC_NET_SASL_SSL = 3 };

/* The principal of a connection whose client did not authenticate. */
#define KC_NET_ANONYMOUS "User:ANONYMOUS"

/* A TLS server configuration: an SSL_CTX built from the settings of one listener, rebuilt by
 * kc_net_tls_reload (SIGHUP) and when a file it was read from changes. New connections take
 * the context current when they are accepted; existing ones keep theirs. */
typedef struct kc_net_tls_s kc_net_tls_t;

/* The ssl.* settings of one listener, as text (conf.h's kc_conf_listener_value). Strings are
 * copied by kc_net_tls_new. */
typedef struct kc_net_tls_conf_s {
    const char *listener;            /* its name, for logs */
    const char *keystore_location;   /* "" or a PEM file: key and chain */
    const char *keystore_chain;      /* "" or PEM text */
    const char *keystore_key;        /* "" or PEM text */
    const char *key_password;        /* "" for a key that is not encrypted */
    const char *truststore_location; /* "" or a PEM file of CA certificates */
    const char *truststore_certs;    /* "" or PEM text */
    const char *client_auth;         /* "none", "requested" or "required" */
    const char *protocols;           /* "TLSv1.2,TLSv1.3" or one of them */
    const char *cipher_suites;       /* "" or comma-separated standard names */
    const char *principal_rules;     /* ssl.principal.mapping.rules */
    int64_t handshake_timeout_ms;
} kc_net_tls_conf_t;

/* Build the configuration and its first context, and watch the files it was read from (checked
 * every second: a change reloads it). NULL on failure, with a message naming the setting at
 * fault in `err` (e.g. "ssl.keystore.location: cannot read x.pem: No such file or directory"). */
kc_net_tls_t *kc_net_tls_new(uv_loop_t *loop, const kc_net_tls_conf_t *conf, char *err,
                             size_t errlen);

/* Re-read the certificates and keys and build a new context for new connections. On failure
 * the old context stays, and the message is in `err`: -1. Otherwise 0. */
int kc_net_tls_reload(kc_net_tls_t *t, char *err, size_t errlen);

/* Stop watching the files; `t` is freed once its handles are closed (the loop runs). Call it
 * after the server is freed, or at least after it stopped accepting: connections hold their
 * own reference to the context they use, not to `t`... except its principal rules, so no
 * connection of its listener may remain. */
void kc_net_tls_close(kc_net_tls_t *t);

/* One listener as kc_server_listen_on opens it. */
typedef struct kc_net_listen_opts_s {
    const char *host;
    int port;
    const char *name;  /* the listener name ("PLAINTEXT" for a plain host:port) */
    int protocol;      /* a KC_NET_* */
    kc_net_tls_t *tls; /* for KC_NET_SSL and KC_NET_SASL_SSL: not owned, outlives the server's
                        * connections */
    uint32_t first_frames_max; /* when not 0, the frame size limit of a new connection until
                                * kc_conn_set_frames changes it (sasl.server.max.receive.size) */
} kc_net_listen_opts_t;

/* A listener's identity, kept by the server until kc_server_free. */
typedef struct kc_net_endpoint_s kc_net_endpoint_t;

/* kc_server_listen for a named listener with a security protocol; *ep (when not NULL) is the
 * listener's endpoint, to give it its advertised address. */
int kc_server_listen_on(kc_server_t *s, const kc_net_listen_opts_t *o, int *bound_port,
                        kc_net_endpoint_t **ep);

/* The address Metadata and FindCoordinator give the clients of this listener (copied). */
void kc_net_endpoint_advertise(kc_net_endpoint_t *ep, const char *host, int port);

/* The connection a slot belongs to, or NULL once that connection is gone. */
kc_conn_t *kc_slot_conn(const kc_slot_t *slot);

/* The connection's listener name ("PLAINTEXT" for one opened with kc_server_listen), its
 * security protocol (KC_NET_*) and its principal (KC_NET_ANONYMOUS or "User:<name>"). Valid
 * while the connection is. */
const char *kc_conn_listener(const kc_conn_t *c);
int kc_conn_protocol(const kc_conn_t *c);
const char *kc_conn_principal(const kc_conn_t *c);

/* Set the connection's principal ("User:<name>", copied; NULL: back to KC_NET_ANONYMOUS). Out
 * of memory closes the connection. */
void kc_conn_set_principal(kc_conn_t *c, const char *principal);

/* The application's state of this connection: NULL until set; `app_free` (may be NULL) frees it
 * when the connection is gone. */
void *kc_conn_app(const kc_conn_t *c);
void kc_conn_set_app(kc_conn_t *c, void *app, void (*app_free)(void *));

/* Frame sizes the connection accepts from now on (the next frame cut): min..max bytes after the
 * size prefix, so that a SASL v0 token (which has no request header) passes and a client not yet
 * authenticated sends at most sasl.server.max.receive.size. max 0: back to the server's
 * KC_NET_MIN_FRAME..max_request_bytes. A frame outside them closes the connection. */
void kc_conn_set_frames(kc_conn_t *c, uint32_t min, uint32_t max);

/* The advertised address of the connection's listener: false when it has none (one opened
 * with kc_server_listen, or not given one yet). */
bool kc_conn_advertised(const kc_conn_t *c, const char **host, int32_t *port);

/* A TLS server session for a protocol other than Kafka's (the HTTP listener), which drives
 * its own socket: what it reads goes in with _feed, plaintext comes out of _read (the
 * handshake happens on the way), answers go in with _write, and what must be sent to the peer
 * (handshake messages, encrypted answers, alerts) comes out of _output. */
typedef struct kc_net_tls_session_s kc_net_tls_session_t;
/* A session with the configuration's current context; NULL when out of memory. */
kc_net_tls_session_t *kc_net_tls_session_new(kc_net_tls_t *t);
void kc_net_tls_session_free(kc_net_tls_session_t *s);
/* n bytes read from the socket: 0, or -1 out of memory. */
int kc_net_tls_session_feed(kc_net_tls_session_t *s, const void *p, size_t n);
/* Plaintext into buf: the count (> 0), 0 when none is ready yet (more must be read), or -1
 * when the session failed or the peer ended it, with the reason in `why`. */
long kc_net_tls_session_read(kc_net_tls_session_t *s, void *buf, size_t cap, char *why,
                             size_t whylen);
/* Encrypt n bytes for the peer: 0, or -1. */
int kc_net_tls_session_write(kc_net_tls_session_t *s, const void *p, size_t n);
/* Everything waiting to be sent to the peer, malloc'd (the caller frees it), *len bytes; NULL
 * with *len 0 when there is nothing (or no memory). */
uint8_t *kc_net_tls_session_output(kc_net_tls_session_t *s, size_t *len);

/* ssl.principal.mapping.rules (principal.c): parse Kafka's syntax. NULL with Kafka's message
 * ("Invalid rule: `...`") in `err` when the text is not a valid list. */
typedef struct kc_net_principal_rules_s kc_net_principal_rules_t;
kc_net_principal_rules_t *kc_net_principal_rules_parse(const char *text, char *err, size_t errlen);
/* Map an RFC 2253 subject: 1 with *name (malloc'd, the caller frees it) from the first rule that
 * applies, 0 when none does, -1 out of memory. */
int kc_net_principal_map(const kc_net_principal_rules_t *r, const char *dn, char **name);
void kc_net_principal_rules_free(kc_net_principal_rules_t *r);

/* ---- Listeners for other protocols (the HTTP endpoints) ---------------------------------- */

/* A bound, listening TCP socket whose connections its owner accepts and serves (listen.c). */
typedef struct kc_net_listener_s kc_net_listener_t;

/* A connection waits on `l`: take it with kc_net_accept (now, or never: an untaken one keeps
 * waiting in the backlog and libuv stops watching the listener until one is taken). */
typedef void (*kc_net_accept_cb)(void *arg, kc_net_listener_t *l);

/* Bind host:port (as kc_server_listen resolves it) and listen with `backlog`. Returns the
 * listener and writes the bound port to *bound_port, or returns NULL with a libuv error code in
 * *err (a handle already opened is closed once the loop runs). */
kc_net_listener_t *kc_net_listen(uv_loop_t *loop, const char *host, int port, int backlog,
                                 kc_net_accept_cb cb, void *arg, int *bound_port, int *err);

/* Initialise `client` on the listener's loop and accept the waiting connection into it.
 * Returns 0 or a libuv error code; the handle is initialised either way, so its owner closes it
 * with uv_close in both cases. */
int kc_net_accept(kc_net_listener_t *l, uv_tcp_t *client);

/* Stop listening; done(arg) runs from the loop once the socket is closed, and `l` is gone. */
void kc_net_listener_close(kc_net_listener_t *l, void (*done)(void *arg), void *arg);

/* ---- Events --------------------------------------------------------------------------------
 * What the network room tells its observers (the metrics), process-wide: main installs the
 * observability room's table, so that net, below it, never includes it. Hooks may be NULL. */

/* Why an accepted connection was closed at once: max.connections.per.ip, the fds kept for
 * the log (log.reserved.fds). */
enum { KC_NET_REFUSED_PER_IP = 0, KC_NET_REFUSED_FDS = 1 };
/* Why a connection stopped being read: queued.max.requests, queued.max.request.bytes,
 * connection.max.unsent.bytes, queued.max.unsent.bytes. */
enum {
    KC_NET_PAUSE_QUEUED = 0,
    KC_NET_PAUSE_REQUESTS = 1,
    KC_NET_PAUSE_CONN_UNSENT = 2,
    KC_NET_PAUSE_UNSENT = 3,
};

typedef struct kc_net_events_s {
    void (*conn_accepted)(void);
    void (*conn_closed)(void);
    void (*conn_refused)(int reason); /* a KC_NET_REFUSED_* */
    void (*accept_deferred)(void);    /* max.connections reached: a connection waits */
    void (*paused)(int reason);       /* a KC_NET_PAUSE_* */
    void (*bytes)(uint64_t requests, uint64_t unsent); /* unanswered / unwritten, in all */
    void (*idle_closed)(bool unread); /* connections.max.idle.ms; answers were waiting */
    void (*tls_handshake)(void);      /* a TLS handshake finished */
    void (*tls_failed)(int reason);   /* a KC_NET_TLS_*: the TLS connection was closed */
} kc_net_events_t;

/* Why a TLS connection was closed before or while serving: its handshake failed (garbage, a
 * plaintext request, a refused certificate), did not finish in time, or its subject has no
 * principal mapping rule; or a TLS error after the handshake. */
enum {
    KC_NET_TLS_HANDSHAKE = 0,
    KC_NET_TLS_TIMEOUT = 1,
    KC_NET_TLS_PRINCIPAL = 2,
    KC_NET_TLS_ERROR = 3
};

/* Report to `ev` (copied; NULL: to nobody, the default) from now on. */
void kc_net_set_events(const kc_net_events_t *ev);

#endif
