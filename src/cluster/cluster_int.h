/* cluster_int.h - inside the cluster room: the terms of stored snapshots and raft's transport
 * over mutual TLS (tls_transport.c), for cluster.c. Not part of the door. */
#ifndef KC_CLUSTER_CLUSTER_INT_H
#define KC_CLUSTER_CLUSTER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

/* The index and term of the last snapshots this node stored, the newest last (cluster.c's
 * snap_put and snap_send: libraft 0.22.1 can send a snapshot with the term of an older one). */
typedef struct kc_snap_terms_s {
    struct {
        raft_index index;
        raft_term term;
    } v[4];
    unsigned n; /* noted so far; the last 4 are kept */
} kc_snap_terms_t;

void kc_snap_terms_note(kc_snap_terms_t *t, raft_index index, raft_term term);
/* The term of the snapshot stored at `index`, 0 when it is not among the last noted. */
raft_term kc_snap_terms_of(const kc_snap_terms_t *t, raft_index index);
/* An InstallSnapshot `m` whose last_term is not the term of the snapshot stored at its
 * last_index: true, with *fixed a copy carrying that term. Otherwise false (send m). */
bool kc_snap_terms_fix(const kc_snap_terms_t *t, const struct raft_message *m,
                       struct raft_message *fixed);

typedef struct ssl_ctx_st SSL_CTX;
typedef struct tconn_s tconn_t;

typedef struct kc_tls_transport_s {
    uv_loop_t *loop;
    SSL_CTX *ctx;                    /* client and server: the node's certificate, the CA */
    struct raft_uv_transport *outer; /* what raft's accept callback is given */
    raft_uv_accept_cb accept_cb;
    raft_id id;        /* this node */
    char address[256]; /* this node's raft address, host:port */
    char cluster_id[23];
    char dir_id[23]; /* this node's directory id, told in its hello after its address */
    /* The directory ids the peers told in their hellos, by raft id (16 at most). */
    struct {
        raft_id id;
        char dir_id[23];
    } peers[16];
    uv_tcp_t server;
    bool server_open;
    bool closing;
    tconn_t *list;                                /* connections not closed */
    int conns;                                    /* connections whose handles are not all closed */
    void (*closed)(struct kc_tls_transport_s *t); /* once closing and nothing is left open */
    void (*tune)(void *arg, uv_stream_t *s);      /* keepalives and timeouts for a TCP socket */
    void *tune_arg;
} kc_tls_transport_t;

/* Build the TLS context from the node's keystore (PEM: certificate chain and unencrypted key)
 * and the cluster's CA file. 0, or -1 with err naming the setting. */
int kc_tls_transport_ctx(kc_tls_transport_t *t, const char *keystore, const char *truststore,
                         char *err, size_t errlen);
/* The directory id peer `id` told in its last hello, "" when none was heard. */
const char *kc_tls_transport_peer_dir(const kc_tls_transport_t *t, raft_id id);
int kc_tls_transport_listen(kc_tls_transport_t *t, raft_uv_accept_cb cb);
int kc_tls_transport_connect(kc_tls_transport_t *t, struct raft_uv_connect *req, raft_id id,
                             const char *address, raft_uv_connect_cb cb);
/* Close every connection and the listener; t->closed(t) once all handles are closed. */
void kc_tls_transport_close(kc_tls_transport_t *t);
void kc_tls_transport_free(kc_tls_transport_t *t);

static inline void kc_tls_transport_tune(kc_tls_transport_t *t, uv_stream_t *s)
{
    if (t->tune)
        t->tune(t->tune_arg, s);
}

static inline void kc_tls_transport_maybe_closed(kc_tls_transport_t *t)
{
    if (t->closing && t->conns == 0 && !t->server_open && t->closed) {
        void (*closed)(struct kc_tls_transport_s *) = t->closed;
        t->closed = NULL;
        closed(t);
    }
}

#endif
