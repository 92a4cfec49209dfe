/* net_int.h - private to src/net/: the server and connection structs shared by server.c and
 * conn.c. Nothing outside src/net/ includes this file. */
#ifndef KC_NET_NET_INT_H
#define KC_NET_NET_INT_H

#include <stdbool.h>

#include "net/net.h"

/* The observers' hooks (server.c), and a call to one when it is set. */
extern kc_net_events_t kc_net_events_;
#define NET_EVENT(hook, ...)                                                                       \
    do {                                                                                           \
        if (kc_net_events_.hook)                                                                   \
            kc_net_events_.hook(__VA_ARGS__);                                                      \
    } while (0)

/* A listener's identity (net.h), in the server's list until kc_server_free: connections point
 * to it, and may outlive their listener's socket. */
struct kc_net_endpoint_s {
    struct kc_net_endpoint_s *next;
    char *name;
    int protocol;
    kc_net_tls_t *tls;         /* KC_NET_SSL: not owned */
    uint32_t first_frames_max; /* kc_net_listen_opts_t's */
    char *adv_host;            /* NULL until kc_net_endpoint_advertise */
    int32_t adv_port;
};

typedef struct kc_listener_h_s {
    uv_tcp_t tcp;
    kc_server_t *server;
    kc_net_endpoint_t *ep;
    struct kc_listener_h_s *next;
    bool pending; /* a connection waits for uv_accept (max.connections was reached) */
} kc_listener_h_t;

/* A write in flight. Only a connection that is writing holds one (an idle connection holds
 * none); finished ones wait in the server's spare list for the next write. */
typedef struct kc_wreq_s {
    uv_write_t req;
    struct kc_wreq_s *next_spare;
} kc_wreq_t;

/* Open connections from one address, for max.connections.per.ip. */
typedef struct kc_ip_count_s {
    struct kc_ip_count_s *next;
    uint8_t addr[17]; /* family byte, then the IPv4 or IPv6 address */
    uint32_t n;
} kc_ip_count_t;

enum { KC_NET_IP_BUCKETS = 1024 };

struct kc_server_s {
    uv_loop_t *loop;
    kc_server_opts_t opts;
    kc_listener_h_t *listeners;
    kc_net_endpoint_t *endpoints;
    uint8_t *tls_scratch; /* READ_CHUNK bytes: ciphertext read by a TLS connection */
    /* Open connections, least recently active first (kc_conn_touch moves one to the tail), so
     * that one timer finds the idle ones from the head (connections.max.idle.ms). */
    kc_conn_t *conns, *conns_tail;
    size_t n_conns;
    uv_timer_t sweep; /* fires when the head connection would have been idle for idle_ms */
    size_t n_listeners_open;
    bool stopping;
    uv_timer_t stop_timer; /* forces the close of connections that do not drain in time */
    bool stop_timer_init;
    void (*done)(void *);
    void *done_arg;

    /* Memory budgets (net.h). */
    uint64_t req_bytes;    /* frames of the requests not yet answered, all connections */
    uint64_t unsent_bytes; /* answers not yet written, all connections */
    bool req_muted;        /* req_bytes went over its budget: no connection reads */
    uv_idle_t resume;      /* resumes every connection once req_bytes is back under budget */
    bool resume_closing;
    uint8_t *scratch; /* READ_CHUNK bytes lent to reads of connections without a partial frame */
    kc_wreq_t *spare; /* write requests of finished writes, kept for the next (a few) */
    size_t n_spare;

    /* Connection limits. */
    kc_ip_count_t **ips; /* KC_NET_IP_BUCKETS chains; NULL until max.connections.per.ip is used */
    size_t base_fds;     /* file descriptors open when the first listener was opened */
};

/* A slot: one request's place in its connection's reply queue. */
struct kc_slot_s {
    kc_slot_t *next;
    kc_conn_t *conn; /* NULL once the connection is gone (the reply will be dropped) */
    uint8_t *reply;  /* owned; NULL until answered */
    size_t reply_len;
    bool answered;
    bool close_after; /* close the connection when this slot reaches the head */
    uint64_t charged; /* bytes counted in the server's req_bytes until answered */
    uint8_t *own;     /* the read buffer holding the frame, when the slot took it over */
    kc_arena_t arena; /* the frame copy and the handler's memory */
};

/* What a connection holds while idle is this struct alone: its read buffer, reply queue,
 * write request and arenas exist only while it has bytes, requests or a write in flight. */
struct kc_conn_s {
    uv_tcp_t tcp;
    uv_timer_t *linger; /* only while lingering (linger_close): closes it after LINGER_MS */
    uint64_t active_ms; /* uv_now when it last read or had a write taken (kc_conn_touch) */
    kc_wreq_t *wreq;    /* the write in flight, or NULL */
    kc_server_t *server;
    kc_conn_t *prev, *next;
    char *peer; /* "host:port", malloc'd at its length; never NULL after kc_conn_accept */

    uint8_t *rbuf; /* bytes read but not yet cut into frames; NULL when there are none */
    size_t rlen, rcap;
    bool borrowed;     /* rbuf is the server's scratch buffer, during on_read only */
    uint64_t rcharged; /* rcap counted in the server's req_bytes (buffers over READ_CHUNK) */
    bool denied;       /* on_alloc refused to grow rbuf: over queued.max.request.bytes */
    bool processing;   /* inside process_frames: do not enter it again */

    uint64_t unsent; /* bytes of answered slots not yet written */
    uint8_t ip[17];  /* the peer's address, as kc_ip_count_t keys it */
    bool ip_counted; /* counted in the server's per-IP table */
    bool counted;    /* counted as an open connection in the metrics */

    kc_slot_t *head, *tail; /* reply queue, request order */
    size_t queued;          /* slots in the queue */
    size_t unanswered;      /* slots handed to the application and not yet answered */
    kc_slot_t *writing;     /* first slot of the write in flight, or NULL */
    size_t writing_n;       /* how many slots that write covers */

    /* The listener, and TLS (tls.c) on an SSL listener's connections. */
    kc_net_endpoint_t *ep; /* NULL for a connection accepted without one (never, today) */
    struct ssl_st *ssl;    /* NULL on PLAINTEXT */
    uv_timer_t *hs_timer;  /* the handshake timeout, until the connection is closed */
    uint8_t *wcipher;      /* the ciphertext of the write in flight */
    char *principal;       /* "User:<name>" from a client certificate, or NULL: anonymous */
    bool tls_ready;        /* the handshake finished */
    /* The application's state of this connection (the SASL exchange), freed with it. */
    void *app;
    void (*app_free)(void *);
    uint32_t frame_min, frame_max; /* kc_conn_set_frames: 0 = the server's limits */
    bool tls_pumping;              /* inside tls_pump: do not enter it again */

    int open_handles; /* tcp (+ linger timer, + handshake timer) not yet closed */
    bool reading;
    bool closing;
    bool draining;  /* shutdown: close once the queue is empty */
    bool lingering; /* replies written, write side shut: discard input until the peer closes */
};

enum { KC_NET_READ_CHUNK = 64 * 1024 };

/* listen.c: host:port into *addr (an IP literal, or a name resolved synchronously). Returns 0
 * or a libuv error code. */
int kc_net_resolve(uv_loop_t *loop, const char *host, int port, struct sockaddr_storage *addr);
/* listen.c: the port a bound socket has, or -1. */
int kc_net_bound_port(const uv_tcp_t *tcp);

/* tls.c: a new server-side SSL on memory BIOs with the configuration's current context, or
 * NULL (out of memory). */
struct ssl_st *kc_tls_new_conn(kc_net_tls_t *t);
/* tls.c: the principal of a finished handshake: 0 with *principal NULL (no client
 * certificate: anonymous) or malloc'd "User:<mapped subject>"; -1 with the reason in `why`
 * when no rule maps the subject (the connection is refused). */
int kc_tls_principal(const kc_net_tls_t *t, struct ssl_st *ssl, char **principal, char *why,
                     size_t len);
int64_t kc_tls_handshake_timeout(const kc_net_tls_t *t);
/* tls.c: give back the large buffers of an SSL whose BIOs are empty (between bursts). */
void kc_tls_idle(struct ssl_st *ssl);
/* tls.c: OpenSSL's last error as text into buf, and the thread's error queue cleared. */
void kc_tls_last_error(char *buf, size_t len);

/* conn.c */
void kc_conn_accept(kc_server_t *s, uv_stream_t *listener);
void kc_conn_close(kc_conn_t *c, const char *why);
void kc_conn_drain(kc_conn_t *c);
/* Start reading again if no budget forbids it (and process the frames already buffered). */
void kc_conn_resume(kc_conn_t *c);

/* server.c: called by conn.c when a connection's memory is freed. */
void kc_server_conn_gone(kc_server_t *s, kc_conn_t *c);
/* server.c: whether a just accepted connection may stay (max.connections.per.ip and the fds
 * reserved for the log); counts it per IP when it may. Logs and counts a refusal. */
bool kc_server_admit(kc_server_t *s, kc_conn_t *c);
/* server.c: req_bytes went down; schedules kc_conn_resume of every connection when it is back
 * under budget after having been over. */
void kc_server_req_released(kc_server_t *s);

#endif
