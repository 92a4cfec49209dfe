/* net_int.h - private to src/net/: the server and connection structs shared by server.c and
 * conn.c. Nothing outside src/net/ includes this file. */
#ifndef KC_NET_NET_INT_H
#define KC_NET_NET_INT_H

#include <stdbool.h>

#include "net/net.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

typedef struct kc_listener_h_s {
    uv_tcp_t tcp;
    kc_server_t *server;
    struct kc_listener_h_s *next;
} kc_listener_h_t;

struct kc_server_s {
    uv_loop_t *loop;
    kc_server_opts_t opts;
    kc_listener_h_t *listeners;
    kc_conn_t *conns; /* doubly linked list of open connections */
    size_t n_conns;
    size_t n_listeners_open;
    bool stopping;
    uv_timer_t stop_timer; /* forces the close of connections that do not drain in time */
    bool stop_timer_init;
    void (*done)(void *);
    void *done_arg;
};

/* A slot: one request's place in its connection's reply queue. */
struct kc_slot_s {
    kc_slot_t *next;
    kc_conn_t *conn; /* NULL once the connection is gone (the reply will be dropped) */
    uint8_t *reply;  /* owned; NULL until answered */
    size_t reply_len;
    bool answered;
    bool close_after; /* close the connection when this slot reaches the head */
    kc_arena_t arena; /* the frame copy and the handler's memory */
};

struct kc_conn_s {
    uv_tcp_t tcp;
    uv_timer_t idle;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    kc_server_t *server;
    kc_conn_t *prev, *next;
    char peer[64];

    uint8_t *rbuf; /* bytes read but not yet cut into frames */
    size_t rlen, rcap;

    kc_slot_t *head, *tail; /* reply queue, request order */
    size_t queued;          /* slots in the queue */
    size_t unanswered;      /* slots handed to the application and not yet answered */
    kc_slot_t *writing;     /* first slot of the write in flight, or NULL */
    size_t writing_n;       /* how many slots that write covers */

    int open_handles; /* tcp + idle timer not yet closed */
    bool reading;
    bool closing;
    bool draining;  /* shutdown: close once the queue is empty */
    bool lingering; /* replies written, write side shut: discard input until the peer closes */
};

/* conn.c */
void kc_conn_accept(kc_server_t *s, uv_stream_t *listener);
void kc_conn_close(kc_conn_t *c, const char *why);
void kc_conn_drain(kc_conn_t *c);

/* server.c: called by conn.c when a connection's memory is freed. */
void kc_server_conn_gone(kc_server_t *s, kc_conn_t *c);

#endif
