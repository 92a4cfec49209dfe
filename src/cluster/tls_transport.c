/* tls_transport.c - raft's transport over mutual TLS (cluster.security.protocol=SSL).
 *
 * Every raft connection is TLS with a certificate on both sides, each verified against the
 * cluster's CA (cluster.ssl.truststore.location); then the connecting node says who it is (the
 * cluster id, its raft id and address), and the accepting node refuses a cluster id that is not
 * its own. Only then does raft see the connection: a pipe (one end of a socketpair) that carries
 * the plaintext, while this file moves the bytes between the pipe and the TLS session on the
 * TCP socket. Anyone who reaches the raft port without a certificate of the cluster's CA, or
 * from another cluster, is refused at the handshake and logged: it never reaches raft.
 */
#include "cluster/cluster_int.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "util/diag.h"

enum {
    HELLO_MAGIC = 0x4b435248u, /* "KCRH" */
    HANDSHAKE_MS = 10000,
    READ_CHUNK = 64 * 1024,
};

typedef enum { T_HANDSHAKE, T_HELLO, T_OPEN, T_CLOSING } tstate_t;

struct tconn_s {
    kc_tls_transport_t *t;
    struct tconn_s *next, **prev;
    uv_tcp_t *tcp;    /* the network side (raft_malloc'd: a plaintext one goes to raft) */
    uv_pipe_t local;  /* our end of the socketpair; raft has the other */
    uv_timer_t timer; /* the handshake's deadline */
    int handles;      /* open handles of ours */
    bool local_open;
    SSL *ssl;
    BIO *rbio, *wbio;
    tstate_t state;
    bool outgoing;
    struct raft_uv_connect *req; /* outgoing: raft's request, until answered */
    raft_id peer_id;
    char peer[160]; /* for logs: host:port or the peer's raft address */
    uint8_t hello[4 + 22 + 8 + 2 + 256];
    size_t hello_len;
};

static void tc_close(tconn_t *c, const char *why);

static void log_ssl_errors(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (e == 0) {
        snprintf(buf, len, "the peer closed the connection");
        return;
    }
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
}

/* ---- Context --------------------------------------------------------------------------------- */

int kc_tls_transport_ctx(kc_tls_transport_t *t, const char *keystore, const char *truststore,
                         char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "cluster.security.protocol: cannot make a TLS context");
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    char why[256];
    if (SSL_CTX_use_certificate_chain_file(ctx, keystore) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, keystore, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        log_ssl_errors(why, sizeof(why));
        snprintf(err, errlen,
                 "cluster.ssl.keystore.location: cannot use %s (a PEM file with the node's "
                 "certificate chain and its unencrypted private key): %s",
                 keystore, why);
        SSL_CTX_free(ctx);
        return -1;
    }
    if (SSL_CTX_load_verify_locations(ctx, truststore, NULL) != 1) {
        log_ssl_errors(why, sizeof(why));
        snprintf(err, errlen,
                 "cluster.ssl.truststore.location: cannot use %s (a PEM file of the cluster's CA "
                 "certificates): %s",
                 truststore, why);
        SSL_CTX_free(ctx);
        return -1;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    t->ctx = ctx;
    return 0;
}

/* ---- Connections ----------------------------------------------------------------------------- */

static void on_write_done(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

/* Write a copy of buf[0..n) to `s`. 0, or -1 (the connection then closes). */
static int write_copy(uv_stream_t *s, const void *buf, size_t n)
{
    if (n == 0)
        return 0;
    uv_write_t *w = malloc(sizeof(*w));
    char *copy = malloc(n);
    if (w == NULL || copy == NULL) {
        free(w);
        free(copy);
        return -1;
    }
    memcpy(copy, buf, n);
    w->data = copy;
    uv_buf_t b = uv_buf_init(copy, (unsigned)n);
    if (uv_write(w, s, &b, 1, on_write_done) != 0) {
        free(copy);
        free(w);
        return -1;
    }
    return 0;
}

/* Send what TLS has produced for the network. */
static int flush_tls(tconn_t *c)
{
    char buf[16384];
    int n;
    while ((n = BIO_read(c->wbio, buf, sizeof(buf))) > 0)
        if (write_copy((uv_stream_t *)c->tcp, buf, (size_t)n) != 0)
            return -1;
    return 0;
}

static void on_handle_closed(uv_handle_t *h)
{
    tconn_t *c = h->data;
    if (--c->handles > 0)
        return;
    kc_tls_transport_t *t = c->t;
    if (c->ssl)
        SSL_free(c->ssl); /* frees the BIOs */
    free(c);
    t->conns--;
    kc_tls_transport_maybe_closed(t);
}

static void on_tcp_closed(uv_handle_t *h)
{
    tconn_t *c = h->data;
    raft_free(h);
    c->tcp = NULL;
    on_handle_closed((uv_handle_t *)&c->timer);
}

static void tc_close(tconn_t *c, const char *why)
{
    if (c->state == T_CLOSING)
        return;
    bool was_open = c->state == T_OPEN;
    c->state = T_CLOSING;
    if (c->next)
        c->next->prev = c->prev;
    *c->prev = c->next;
    if (c->req != NULL) { /* raft still waits for this connection */
        struct raft_uv_connect *req = c->req;
        c->req = NULL;
        req->cb(req, NULL, c->t->closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
    }
    if (why != NULL && !was_open)
        KC_WARN_LIMITED("cluster", "raft connection %s %s refused: %s", c->outgoing ? "to" : "from",
                        c->peer, why);
    else if (why != NULL)
        KC_INFO_LIMITED("cluster", "raft connection %s %s closed: %s", c->outgoing ? "to" : "from",
                        c->peer, why);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    if (c->tcp != NULL)
        uv_close((uv_handle_t *)c->tcp, on_tcp_closed);
    else
        c->handles--; /* handed to raft */
    if (c->local_open)
        uv_close((uv_handle_t *)&c->local, on_handle_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    buf->base = malloc(READ_CHUNK);
    buf->len = buf->base ? READ_CHUNK : 0;
}

/* raft's side wrote: encrypt and send. */
static void on_local_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    tconn_t *c = s->data;
    if (n < 0) {
        free(buf->base);
        tc_close(c, NULL); /* raft closed its end */
        return;
    }
    if (n > 0 && c->state == T_OPEN) {
        int w = SSL_write(c->ssl, buf->base, (int)n);
        if (w != n || flush_tls(c) != 0) {
            free(buf->base);
            tc_close(c, "TLS write failed");
            return;
        }
    }
    free(buf->base);
}

/* Hand raft the other end of a new socketpair; ours starts reading. 0, or -1. */
static uv_stream_t *make_pipe(tconn_t *c)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return NULL;
    uv_pipe_t *theirs = raft_malloc(sizeof(*theirs));
    if (theirs == NULL || uv_pipe_init(c->t->loop, &c->local, 0) != 0) {
        raft_free(theirs);
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }
    c->local.data = c;
    c->local_open = true;
    c->handles++;
    if (uv_pipe_open(&c->local, sv[0]) != 0 || uv_pipe_init(c->t->loop, theirs, 0) != 0) {
        close(sv[0]);
        close(sv[1]);
        raft_free(theirs);
        return NULL;
    }
    if (uv_pipe_open(theirs, sv[1]) != 0) {
        uv_close((uv_handle_t *)theirs, (uv_close_cb)raft_free);
        close(sv[1]);
        return NULL;
    }
    uv_read_start((uv_stream_t *)&c->local, on_alloc, on_local_read);
    return (uv_stream_t *)theirs;
}

/* Decrypted bytes for raft. */
static int pump_plain(tconn_t *c)
{
    char buf[16384];
    for (;;) {
        int n = SSL_read(c->ssl, buf, sizeof(buf));
        if (n > 0) {
            if (write_copy((uv_stream_t *)&c->local, buf, (size_t)n) != 0)
                return -1;
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
    }
}

static void open_conn(tconn_t *c)
{
    uv_stream_t *s = make_pipe(c);
    if (s == NULL) {
        tc_close(c, "out of file descriptors or memory");
        return;
    }
    c->state = T_OPEN;
    uv_timer_stop(&c->timer);
    if (c->outgoing) {
        struct raft_uv_connect *req = c->req;
        c->req = NULL;
        req->cb(req, s, 0);
    } else {
        c->t->accept_cb(c->t->outer, c->peer_id, c->peer, s);
    }
}

static void note_peer_dir(kc_tls_transport_t *t, raft_id id, const char *dir)
{
    if (strlen(dir) != 22)
        return;
    size_t n = sizeof(t->peers) / sizeof(t->peers[0]), slot = n;
    for (size_t i = 0; i < n; i++) {
        if (t->peers[i].id == id) {
            slot = i;
            break;
        }
        if (t->peers[i].id == 0 && slot == n)
            slot = i;
    }
    if (slot == n)
        return;
    t->peers[slot].id = id;
    memcpy(t->peers[slot].dir_id, dir, 23);
}

/* The connecting node's complete hello in c->hello: refused (closed, -1) unless it is a kcoord
 * node's of this cluster; else its id and raft address are noted (0). */
static int check_hello(tconn_t *c)
{
    const uint8_t *h = c->hello;
    uint32_t magic = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (magic != HELLO_MAGIC) {
        tc_close(c, "not a kcoord node's hello");
        return -1;
    }
    if (memcmp(h + 4, c->t->cluster_id, 22) != 0) {
        char theirs[23];
        memcpy(theirs, h + 4, 22);
        theirs[22] = '\0';
        for (int i = 0; i < 22; i++)
            if (theirs[i] < 0x21 || theirs[i] > 0x7e)
                theirs[i] = '?';
        char why[128];
        snprintf(why, sizeof(why), "cluster id %s is not this cluster's (%s)", theirs,
                 c->t->cluster_id);
        tc_close(c, why);
        return -1;
    }
    raft_id id = 0;
    for (int i = 0; i < 8; i++)
        id = id << 8 | h[26 + i];
    size_t alen = (size_t)h[34] << 8 | h[35];
    c->peer_id = id;
    snprintf(c->peer, sizeof(c->peer), "%.*s", (int)alen, (const char *)h + 36);
    /* "host:port DIRID": the directory id, for DescribeQuorum and RemoveRaftVoter. */
    char *sp = strchr(c->peer, ' ');
    if (sp != NULL) {
        *sp = '\0';
        note_peer_dir(c->t, id, sp + 1);
    }
    return 0;
}

const char *kc_tls_transport_peer_dir(const kc_tls_transport_t *t, raft_id id)
{
    for (size_t i = 0; i < sizeof(t->peers) / sizeof(t->peers[0]); i++)
        if (t->peers[i].id == id)
            return t->peers[i].dir_id;
    return "";
}

/* This node's hello into c->hello; its length. */
static size_t make_hello(tconn_t *c)
{
    uint8_t *h = c->hello;
    const kc_tls_transport_t *t = c->t;
    char addr[300];
    snprintf(addr, sizeof(addr), "%s%s%s", t->address, t->dir_id[0] ? " " : "", t->dir_id);
    if (strlen(addr) > 255 || strlen(addr) >= sizeof(c->peer))
        snprintf(addr, sizeof(addr), "%s", t->address); /* a long address goes alone */
    size_t alen = strlen(addr);
    h[0] = (uint8_t)(HELLO_MAGIC >> 24), h[1] = (uint8_t)(HELLO_MAGIC >> 16);
    h[2] = (uint8_t)(HELLO_MAGIC >> 8), h[3] = (uint8_t)HELLO_MAGIC;
    memcpy(h + 4, t->cluster_id, 22);
    for (int i = 0; i < 8; i++)
        h[26 + i] = (uint8_t)(t->id >> (56 - 8 * i));
    h[34] = (uint8_t)(alen >> 8), h[35] = (uint8_t)alen;
    memcpy(h + 36, addr, alen);
    return 36 + alen;
}

/* The accepting side: the connecting node's hello, read through TLS. */
static void read_hello(tconn_t *c)
{
    for (;;) {
        size_t want = 4 + 22 + 8 + 2;
        if (c->hello_len >= want) {
            size_t alen = (size_t)c->hello[34] << 8 | c->hello[35];
            want += alen;
        }
        if (c->hello_len == want)
            break;
        int n = SSL_read(c->ssl, c->hello + c->hello_len, (int)(want - c->hello_len));
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_READ)
                return;
            tc_close(c, "the connection ended before the node said who it is");
            return;
        }
        c->hello_len += (size_t)n;
        if (c->hello_len == 36) {
            size_t alen = (size_t)c->hello[34] << 8 | c->hello[35];
            if (alen == 0 || alen > 255) {
                tc_close(c, "a malformed hello");
                return;
            }
        }
    }
    if (check_hello(c) != 0)
        return;
    open_conn(c);
    if (c->state == T_OPEN && pump_plain(c) != 0)
        tc_close(c, "TLS read failed");
}

static void handshake(tconn_t *c)
{
    int rc = SSL_do_handshake(c->ssl);
    if (flush_tls(c) != 0) {
        tc_close(c, "write failed");
        return;
    }
    if (rc != 1) {
        int e = SSL_get_error(c->ssl, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return;
        char why[256];
        log_ssl_errors(why, sizeof(why));
        long v = SSL_get_verify_result(c->ssl);
        if (v != X509_V_OK)
            snprintf(why, sizeof(why), "certificate not trusted: %s",
                     X509_verify_cert_error_string(v));
        tc_close(c, why);
        return;
    }
    if (c->outgoing) {
        int hl = (int)make_hello(c);
        if (SSL_write(c->ssl, c->hello, hl) != hl || flush_tls(c) != 0) {
            tc_close(c, "TLS write failed");
            return;
        }
        open_conn(c);
        if (c->state == T_OPEN && pump_plain(c) != 0)
            tc_close(c, "TLS read failed");
        return;
    }
    c->state = T_HELLO;
    read_hello(c);
}

/* Plaintext: the TCP stream itself goes to raft, once the hello was checked and acknowledged;
 * this connection's shell goes. */
static void hand_over(tconn_t *c)
{
    uv_read_stop((uv_stream_t *)c->tcp);
    uv_stream_t *s = (uv_stream_t *)c->tcp;
    c->tcp = NULL;
    struct raft_uv_connect *req = c->req;
    c->req = NULL;
    raft_id id = c->peer_id;
    char peer[sizeof(c->peer)];
    memcpy(peer, c->peer, sizeof(peer));
    kc_tls_transport_t *t = c->t;
    bool outgoing = c->outgoing;
    tc_close(c, NULL);
    if (outgoing)
        req->cb(req, s, 0);
    else
        t->accept_cb(t->outer, id, peer, s);
}

/* Plaintext: the accepting side reads the hello and answers one byte; the connecting side
 * waits for that byte. Neither sends anything else before raft has the stream. */
static void plain_read(tconn_t *c, const uint8_t *p, size_t n)
{
    if (c->outgoing) {
        if (n != 1 || p[0] != 1) {
            tc_close(c, "the peer did not accept this node's hello");
            return;
        }
        hand_over(c);
        return;
    }
    while (n > 0 && c->state != T_CLOSING) {
        size_t want = 36;
        if (c->hello_len >= 36)
            want += (size_t)c->hello[34] << 8 | c->hello[35];
        size_t k = want - c->hello_len < n ? want - c->hello_len : n;
        memcpy(c->hello + c->hello_len, p, k);
        c->hello_len += k;
        p += k;
        n -= k;
        if (c->hello_len == 36) {
            size_t alen = (size_t)c->hello[34] << 8 | c->hello[35];
            if (alen == 0 || alen > 255 || c->hello[0] != (uint8_t)(HELLO_MAGIC >> 24)) {
                tc_close(c, "not a kcoord node's hello");
                return;
            }
            continue;
        }
        if (c->hello_len < 36 || c->hello_len < want)
            continue;
        if (n > 0) {
            tc_close(c, "bytes after the hello before it was answered");
            return;
        }
        if (check_hello(c) != 0)
            return;
        static const uint8_t ack = 1;
        if (write_copy((uv_stream_t *)c->tcp, &ack, 1) != 0) {
            tc_close(c, "write failed");
            return;
        }
        hand_over(c);
        return;
    }
}

static void on_tcp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    tconn_t *c = s->data;
    if (c->ssl == NULL) {
        if (n < 0)
            tc_close(c, "the connection ended during the hello");
        else if (n > 0)
            plain_read(c, (const uint8_t *)buf->base, (size_t)n);
        free(buf->base);
        return;
    }
    if (n < 0) {
        free(buf->base);
        tc_close(c, c->state == T_OPEN ? NULL : "the connection ended during the handshake");
        return;
    }
    if (n > 0 && c->state != T_CLOSING)
        BIO_write(c->rbio, buf->base, (int)n);
    free(buf->base);
    switch (c->state) {
    case T_HANDSHAKE:
        handshake(c);
        break;
    case T_HELLO:
        read_hello(c);
        break;
    case T_OPEN:
        if (pump_plain(c) != 0)
            tc_close(c, "TLS read failed");
        break;
    default:
        break;
    }
}

static void on_timeout(uv_timer_t *h)
{
    tc_close(h->data, "no hello (and TLS handshake) within 10 s");
}

static tconn_t *tc_new(kc_tls_transport_t *t, bool outgoing)
{
    tconn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->t = t;
    c->outgoing = outgoing;
    c->tcp = raft_malloc(sizeof(*c->tcp));
    if (c->tcp == NULL) {
        free(c);
        return NULL;
    }
    if (t->ctx != NULL) {
        c->ssl = SSL_new(t->ctx);
        c->rbio = BIO_new(BIO_s_mem());
        c->wbio = BIO_new(BIO_s_mem());
        if (c->ssl == NULL || c->rbio == NULL || c->wbio == NULL) {
            if (c->ssl)
                SSL_free(c->ssl);
            BIO_free(c->rbio);
            BIO_free(c->wbio);
            raft_free(c->tcp);
            free(c);
            return NULL;
        }
        SSL_set_bio(c->ssl, c->rbio, c->wbio);
        if (outgoing)
            SSL_set_connect_state(c->ssl);
        else
            SSL_set_accept_state(c->ssl);
    }
    uv_tcp_init(t->loop, c->tcp);
    uv_timer_init(t->loop, &c->timer);
    c->tcp->data = c;
    c->timer.data = c;
    c->handles = 2;
    c->next = t->list;
    c->prev = &t->list;
    if (t->list)
        t->list->prev = &c->next;
    t->list = c;
    t->conns++;
    uv_timer_start(&c->timer, on_timeout, HANDSHAKE_MS, 0);
    return c;
}

static void on_accept(uv_stream_t *server, int status)
{
    kc_tls_transport_t *t = server->data;
    if (status != 0 || t->closing)
        return;
    tconn_t *c = tc_new(t, false);
    if (c == NULL)
        return;
    if (uv_accept(server, (uv_stream_t *)c->tcp) != 0) {
        tc_close(c, NULL);
        return;
    }
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    char host[64] = "?";
    if (uv_tcp_getpeername(c->tcp, (struct sockaddr *)&sa, &len) == 0) {
        if (sa.ss_family == AF_INET)
            uv_ip4_name((struct sockaddr_in *)&sa, host, sizeof(host));
        else
            uv_ip6_name((struct sockaddr_in6 *)&sa, host, sizeof(host));
    }
    snprintf(c->peer, sizeof(c->peer), "%s", host);
    kc_tls_transport_tune(t, (uv_stream_t *)c->tcp);
    uv_read_start((uv_stream_t *)c->tcp, on_alloc, on_tcp_read);
}

static void on_connected(uv_connect_t *req, int status)
{
    tconn_t *c = req->data;
    free(req);
    if (c->state == T_CLOSING)
        return;
    if (status != 0) {
        tc_close(c, NULL);
        return;
    }
    kc_tls_transport_tune(c->t, (uv_stream_t *)c->tcp);
    uv_read_start((uv_stream_t *)c->tcp, on_alloc, on_tcp_read);
    if (c->ssl != NULL) {
        handshake(c);
        return;
    }
    size_t hl = make_hello(c);
    if (write_copy((uv_stream_t *)c->tcp, c->hello, hl) != 0)
        tc_close(c, "write failed");
}

/* host:port ([v6]:port) into host (no brackets) and its port string. 0 or -1. */
static int split_addr(const char *address, char host[128], char port[8])
{
    const char *colon = strrchr(address, ':');
    size_t hl = colon ? (size_t)(colon - address) : 0;
    if (colon == NULL || hl == 0 || hl >= 128 || strlen(colon + 1) == 0 || strlen(colon + 1) >= 8)
        return -1;
    if (address[0] == '[' && hl >= 2 && address[hl - 1] == ']')
        snprintf(host, 128, "%.*s", (int)(hl - 2), address + 1);
    else
        snprintf(host, 128, "%.*s", (int)hl, address);
    snprintf(port, 8, "%s", colon + 1);
    return 0;
}

/* host:port with an IPv4 or [IPv6] address (not a name) into *sa. 0 or -1. */
static int parse_addr(const char *address, struct sockaddr_storage *sa)
{
    char host[128], port[8];
    if (split_addr(address, host, port) != 0)
        return -1;
    if (uv_ip4_addr(host, atoi(port), (struct sockaddr_in *)sa) == 0)
        return 0;
    return uv_ip6_addr(host, atoi(port), (struct sockaddr_in6 *)sa) == 0 ? 0 : -1;
}

/* Connect to `sa` for raft's request. 0, or a raft error (req->cb not called). */
static int connect_to(kc_tls_transport_t *t, struct raft_uv_connect *req, const char *address,
                      const struct sockaddr *sa, raft_uv_connect_cb cb)
{
    tconn_t *c = tc_new(t, true);
    uv_connect_t *cr = malloc(sizeof(*cr));
    if (c == NULL || cr == NULL) {
        free(cr);
        if (c)
            tc_close(c, NULL);
        return RAFT_NOMEM;
    }
    snprintf(c->peer, sizeof(c->peer), "%s", address);
    req->cb = cb;
    cr->data = c;
    if (uv_tcp_connect(cr, c->tcp, sa, on_connected) != 0) {
        free(cr);
        tc_close(c, NULL);
        return RAFT_NOCONNECTION;
    }
    c->req = req;
    return 0;
}

/* A peer named by host name: resolved off the loop (uv_getaddrinfo), then connected. Counted
 * in t->conns meanwhile, so that the transport's close waits for it. */
typedef struct resolve_s {
    uv_getaddrinfo_t gai;
    kc_tls_transport_t *t;
    struct raft_uv_connect *req;
    raft_uv_connect_cb cb;
    char address[256];
} resolve_t;

static void on_resolved(uv_getaddrinfo_t *g, int status, struct addrinfo *res)
{
    resolve_t *rs = g->data;
    kc_tls_transport_t *t = rs->t;
    int rv = RAFT_NOCONNECTION;
    if (t->closing)
        rv = RAFT_CANCELED;
    else if (status == 0 && res != NULL)
        rv = connect_to(t, rs->req, rs->address, res->ai_addr, rs->cb);
    else
        KC_WARN_LIMITED("cluster", "cannot resolve the raft address %s: %s", rs->address,
                        uv_strerror(status));
    if (res != NULL)
        uv_freeaddrinfo(res);
    if (rv != 0)
        rs->cb(rs->req, NULL, rv);
    free(rs);
    t->conns--;
    kc_tls_transport_maybe_closed(t);
}

int kc_tls_transport_connect(kc_tls_transport_t *t, struct raft_uv_connect *req, raft_id id,
                             const char *address, raft_uv_connect_cb cb)
{
    (void)id;
    struct sockaddr_storage sa;
    if (t->closing)
        return RAFT_CANCELED;
    if (parse_addr(address, &sa) == 0)
        return connect_to(t, req, address, (const struct sockaddr *)&sa, cb);
    char host[128], port[8];
    resolve_t *rs = split_addr(address, host, port) == 0 ? calloc(1, sizeof(*rs)) : NULL;
    if (rs == NULL)
        return RAFT_NOCONNECTION;
    rs->t = t;
    rs->req = req;
    rs->cb = cb;
    rs->gai.data = rs;
    snprintf(rs->address, sizeof(rs->address), "%s", address);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if (uv_getaddrinfo(t->loop, &rs->gai, on_resolved, host, port, &hints) != 0) {
        free(rs);
        return RAFT_NOCONNECTION;
    }
    t->conns++;
    return 0;
}

int kc_tls_transport_listen(kc_tls_transport_t *t, raft_uv_accept_cb cb)
{
    struct sockaddr_storage sa;
    if (parse_addr(t->address, &sa) != 0) {
        /* A host name: resolved once, at start (it must resolve on this host too). */
        char host[128], port[8];
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        struct addrinfo *res = NULL;
        int rc = split_addr(t->address, host, port) == 0 ? getaddrinfo(host, port, &hints, &res)
                                                         : EAI_NONAME;
        if (rc != 0 || res == NULL || res->ai_addrlen > sizeof(sa)) {
            KC_ERROR("cluster", "cannot resolve the raft address %s: %s", t->address,
                     rc != 0 ? gai_strerror(rc) : "no address");
            if (res)
                freeaddrinfo(res);
            return RAFT_INVALID;
        }
        memcpy(&sa, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
    }
    t->accept_cb = cb;
    uv_tcp_init(t->loop, &t->server);
    t->server.data = t;
    t->server_open = true;
    int rv = uv_tcp_bind(&t->server, (struct sockaddr *)&sa, 0);
    if (rv == 0)
        rv = uv_listen((uv_stream_t *)&t->server, 64, on_accept);
    if (rv != 0) {
        KC_ERROR("cluster", "cannot listen on %s: %s", t->address, uv_strerror(rv));
        return RAFT_IOERR;
    }
    return 0;
}

static void on_server_closed(uv_handle_t *h)
{
    kc_tls_transport_t *t = h->data;
    t->server_open = false;
    kc_tls_transport_maybe_closed(t);
}

void kc_tls_transport_close(kc_tls_transport_t *t)
{
    t->closing = true;
    while (t->list)
        tc_close(t->list, NULL);
    if (t->server_open)
        uv_close((uv_handle_t *)&t->server, on_server_closed);
    kc_tls_transport_maybe_closed(t);
}

void kc_tls_transport_free(kc_tls_transport_t *t)
{
    if (t->ctx)
        SSL_CTX_free(t->ctx);
    t->ctx = NULL;
}
