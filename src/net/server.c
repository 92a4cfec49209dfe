/* server.c - listeners and the server's list of connections, connection limits, and graceful
 * shutdown.
 *
 * kc_server_listen binds one TCP listener per address; each accepted connection is handed to
 * conn.c. Shutdown closes the listeners, asks every connection to drain (finish the replies it
 * owes, then close), and force-closes whatever is left after a grace period. The done
 * callback runs once the last handle is closed.
 *
 * Limits: at max.connections, on_connection leaves the connection libuv has accepted for us
 * un-taken (libuv then stops watching that listener), and kc_server_conn_gone takes it when a
 * connection closes: new clients wait in the backlog, as Kafka's acceptor waits for a slot.
 * kc_server_admit then checks max.connections.per.ip (a table of open connections per
 * address) and the file descriptors reserved for the log: the accepted descriptor's number
 * and the count of open connections must both leave `reserved_fds` descriptors under the
 * current soft RLIMIT_NOFILE (read at every accept, so a limit changed at run time counts).
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "net/net_int.h"
#include "util/diag.h"
#include "util/hash.h"

/* How long shutdown waits for connections to take their last answers. A client that reads
 * takes them in milliseconds; one that does not read (its answers over
 * connection.max.unsent.bytes) must not hold the process past a container's stop timeout
 * (Docker's default is 10 s), so this stays well under it. */
enum { SHUTDOWN_GRACE_MS = 2000 };

static void on_resume(uv_idle_t *h);

kc_net_events_t kc_net_events_;

void kc_net_set_events(const kc_net_events_t *ev)
{
    if (ev)
        kc_net_events_ = *ev;
    else
        memset(&kc_net_events_, 0, sizeof(kc_net_events_));
}

kc_server_t *kc_server_new(uv_loop_t *loop, const kc_server_opts_t *opts)
{
    kc_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->loop = loop;
    s->opts = *opts;
    /* Zero means no limit, so that a caller may leave what it does not use unset. */
    if (s->opts.max_connections <= 0)
        s->opts.max_connections = INT32_MAX;
    if (s->opts.max_connections_per_ip <= 0)
        s->opts.max_connections_per_ip = INT32_MAX;
    if (s->opts.conn_unsent_bytes <= 0)
        s->opts.conn_unsent_bytes = INT64_MAX;
    if (s->opts.max_unsent_bytes <= 0)
        s->opts.max_unsent_bytes = INT64_MAX;
    if (s->opts.max_request_bytes_queued == 0)
        s->opts.max_request_bytes_queued = -1;
    uv_idle_init(loop, &s->resume);
    s->resume.data = s;
    uv_timer_init(loop, &s->sweep);
    s->sweep.data = s;
    return s;
}

/* Every connection may read again: req_bytes is back under queued.max.request.bytes. Runs
 * from the loop rather than from the answer that released the bytes, so that no connection's
 * frames are cut inside another's callback. */
static void on_resume(uv_idle_t *h)
{
    kc_server_t *s = h->data;
    uv_idle_stop(h);
    kc_conn_t *c = s->conns;
    while (c) {
        kc_conn_t *next = c->next; /* resuming may close c, but frees it only later */
        kc_conn_resume(c);
        c = next;
    }
}

void kc_server_req_released(kc_server_t *s)
{
    if (!s->req_muted || s->resume_closing)
        return;
    if (s->opts.max_request_bytes_queued >= 0 &&
        s->req_bytes > (uint64_t)s->opts.max_request_bytes_queued)
        return;
    s->req_muted = false;
    uv_idle_start(&s->resume, on_resume);
}

static void on_connection(uv_stream_t *listener, int status)
{
    kc_listener_h_t *l = listener->data;
    kc_server_t *s = l->server;
    if (status < 0) {
        KC_WARN("net", "accept failed: %s", uv_strerror(status));
        return;
    }
    if (s->stopping)
        return;
    if (s->n_conns >= (size_t)s->opts.max_connections) {
        /* Not taken: libuv stops watching this listener until kc_server_conn_gone takes it. */
        l->pending = true;
        NET_EVENT(accept_deferred);
        KC_WARN_LIMITED("net",
                        "max.connections (%d) reached: new connections wait until one "
                        "closes",
                        s->opts.max_connections);
        return;
    }
    kc_conn_accept(s, listener);
}

/* ---- max.connections.per.ip ------------------------------------------------------------ */

static uint32_t ip_hash(const uint8_t *a)
{
    return (uint32_t)(kc_hash_fold(kc_hash_fnv1a(KC_HASH_FNV1A_SEED, a, 17)) % KC_NET_IP_BUCKETS);
}

/* The peer's address as a table key; false when it cannot be read. */
static bool peer_key(kc_conn_t *c, uint8_t key[17])
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    memset(key, 0, 17);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return false;
    if (ss.ss_family == AF_INET6) {
        key[0] = 6;
        memcpy(key + 1, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
    } else {
        key[0] = 4;
        memcpy(key + 1, &((struct sockaddr_in *)&ss)->sin_addr, 4);
    }
    return true;
}

static kc_ip_count_t **ip_find(kc_server_t *s, const uint8_t *key)
{
    kc_ip_count_t **pp = &s->ips[ip_hash(key)];
    while (*pp && memcmp((*pp)->addr, key, 17) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* ---- File descriptors ------------------------------------------------------------------- */

/* How many descriptors this process has open (-1 when /proc cannot tell). */
static long count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

bool kc_server_admit(kc_server_t *s, kc_conn_t *c)
{
    if (s->opts.reserved_fds > 0) {
        struct rlimit rl;
        uv_os_fd_t fd = -1;
        uv_fileno((uv_handle_t *)&c->tcp, &fd);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
            uint64_t limit = (uint64_t)rl.rlim_cur, reserve = (uint64_t)s->opts.reserved_fds;
            uint64_t room = limit > reserve + s->base_fds ? limit - reserve - s->base_fds : 0;
            /* n_conns counts this connection already. */
            if ((uint64_t)fd + reserve >= limit || s->n_conns > room) {
                NET_EVENT(conn_refused, KC_NET_REFUSED_FDS);
                KC_WARN_LIMITED("net",
                                "closing %s: %zu connections open, and the open-file limit "
                                "%" PRIu64 " keeps log.reserved.fds=%d descriptors for the log",
                                c->peer, s->n_conns - 1, limit, s->opts.reserved_fds);
                return false;
            }
        }
    }
    if (s->opts.max_connections_per_ip < INT32_MAX) {
        if (s->ips == NULL && (s->ips = calloc(KC_NET_IP_BUCKETS, sizeof(*s->ips))) == NULL)
            return false;
        if (!peer_key(c, c->ip))
            return false;
        kc_ip_count_t **pp = ip_find(s, c->ip);
        if (*pp != NULL && (*pp)->n >= (uint32_t)s->opts.max_connections_per_ip) {
            NET_EVENT(conn_refused, KC_NET_REFUSED_PER_IP);
            KC_WARN_LIMITED("net",
                            "closing %s: its address has max.connections.per.ip (%d) "
                            "connections open",
                            c->peer, s->opts.max_connections_per_ip);
            return false;
        }
        if (*pp == NULL) {
            kc_ip_count_t *e = calloc(1, sizeof(*e));
            if (e == NULL)
                return false;
            memcpy(e->addr, c->ip, 17);
            *pp = e;
        }
        (*pp)->n++;
        c->ip_counted = true;
    }
    return true;
}

static void on_listener_closed(uv_handle_t *h);

static const char *protocol_name(int protocol)
{
    static const char *const names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};
    return protocol >= 0 && protocol <= KC_NET_SASL_SSL ? names[protocol] : "?";
}

int kc_server_listen(kc_server_t *s, const char *host, int port, int *bound_port)
{
    kc_net_listen_opts_t o = {.host = host, .port = port, .name = "PLAINTEXT"};
    return kc_server_listen_on(s, &o, bound_port, NULL);
}

void kc_net_endpoint_advertise(kc_net_endpoint_t *ep, const char *host, int port)
{
    char *h = strdup(host);
    if (h == NULL)
        return; /* out of memory: the listener keeps what it advertised */
    free(ep->adv_host);
    ep->adv_host = h;
    ep->adv_port = port;
}

int kc_server_listen_on(kc_server_t *s, const kc_net_listen_opts_t *o, int *bound_port,
                        kc_net_endpoint_t **epp)
{
    struct sockaddr_storage addr;
    int rrc = kc_net_resolve(s->loop, o->host, o->port, &addr);
    if (rrc != 0)
        return rrc;
    bool tls = o->protocol == KC_NET_SSL || o->protocol == KC_NET_SASL_SSL;
    if (o->protocol < KC_NET_PLAINTEXT || o->protocol > KC_NET_SASL_SSL || (tls && o->tls == NULL))
        return UV_EINVAL; /* SSL and SASL_SSL need their TLS configuration */
    kc_net_endpoint_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL || (ep->name = strdup(o->name)) == NULL) {
        free(ep);
        return UV_ENOMEM;
    }
    ep->protocol = o->protocol;
    ep->tls = tls ? o->tls : NULL;
    ep->first_frames_max = o->first_frames_max;
    ep->next = s->endpoints;
    s->endpoints = ep;
    if (epp != NULL)
        *epp = ep;
    kc_listener_h_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return UV_ENOMEM;
    l->ep = ep;
    l->server = s;
    uv_tcp_init(s->loop, &l->tcp);
    l->tcp.data = l;
    l->next = s->listeners;
    s->listeners = l;
    s->n_listeners_open++;
    if (s->base_fds == 0) {
        long n = count_open_fds();
        s->base_fds = n > 0 ? (size_t)n : 16;
    }
    int rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->tcp, 511, on_connection);
    if (rc != 0)
        return rc; /* the handle is closed by kc_server_shutdown */
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&bound, &len);
    char name[64];
    if (bound.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&bound, name, sizeof(name));
        *bound_port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
        KC_INFO("net", "listening on [%s]:%d (%s, %s)", name, *bound_port, ep->name,
                protocol_name(ep->protocol));
    } else {
        uv_ip4_name((struct sockaddr_in *)&bound, name, sizeof(name));
        *bound_port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
        KC_INFO("net", "listening on %s:%d (%s, %s)", name, *bound_port, ep->name,
                protocol_name(ep->protocol));
    }
    return 0;
}

static void maybe_done(kc_server_t *s)
{
    if (!s->stopping || s->n_conns > 0 || s->n_listeners_open > 0 || s->done == NULL ||
        !s->resume_closing)
        return;
    void (*done)(void *) = s->done;
    s->done = NULL;
    if (s->stop_timer_init) {
        uv_timer_stop(&s->stop_timer);
        uv_close((uv_handle_t *)&s->stop_timer, NULL);
        s->stop_timer_init = false;
    }
    done(s->done_arg);
}

static void on_resume_closed(uv_handle_t *h)
{
    kc_server_t *s = h->data;
    s->n_listeners_open--;
    maybe_done(s);
}

static void on_listener_closed(uv_handle_t *h)
{
    kc_listener_h_t *l = h->data;
    kc_server_t *s = l->server;
    free(l);
    s->n_listeners_open--;
    maybe_done(s);
}

void kc_server_conn_gone(kc_server_t *s, kc_conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        s->conns_tail = c->prev;
    s->n_conns--;
    if (c->ip_counted) {
        kc_ip_count_t **pp = ip_find(s, c->ip);
        if (*pp != NULL && --(*pp)->n == 0) {
            kc_ip_count_t *e = *pp;
            *pp = e->next;
            free(e);
        }
    }
    /* A connection waited for this one's slot (max.connections). */
    for (kc_listener_h_t *l = s->listeners; l && !s->stopping; l = l->next) {
        if (!l->pending || s->n_conns >= (size_t)s->opts.max_connections)
            continue;
        l->pending = false;
        kc_conn_accept(s, (uv_stream_t *)&l->tcp);
    }
    maybe_done(s);
}

static void on_grace_over(uv_timer_t *t)
{
    kc_server_t *s = t->data;
    if (s->n_conns > 0)
        KC_WARN("net", "closing %zu connections that did not drain in time", s->n_conns);
    for (kc_conn_t *c = s->conns; c; c = c->next)
        kc_conn_close(c, NULL);
}

void kc_server_shutdown(kc_server_t *s, void (*done)(void *arg), void *arg)
{
    if (s->stopping)
        return;
    s->stopping = true;
    s->done = done;
    s->done_arg = arg;
    uv_idle_stop(&s->resume);
    s->resume_closing = true;
    s->n_listeners_open += 2; /* the resume and sweep handles: maybe_done waits for them too */
    uv_close((uv_handle_t *)&s->resume, on_resume_closed);
    uv_close((uv_handle_t *)&s->sweep, on_resume_closed);
    kc_listener_h_t *l = s->listeners;
    s->listeners = NULL;
    while (l) {
        kc_listener_h_t *next = l->next;
        uv_close((uv_handle_t *)&l->tcp, on_listener_closed);
        l = next;
    }
    if (s->n_conns > 0) {
        uv_timer_init(s->loop, &s->stop_timer);
        s->stop_timer.data = s;
        s->stop_timer_init = true;
        uv_timer_start(&s->stop_timer, on_grace_over, SHUTDOWN_GRACE_MS, 0);
        uv_unref((uv_handle_t *)&s->stop_timer);
    }
    /* Draining may close a connection at once, which unlinks it: walk a stable copy. */
    kc_conn_t *c = s->conns;
    while (c) {
        kc_conn_t *next = c->next;
        kc_conn_drain(c);
        c = next;
    }
    maybe_done(s);
}

void kc_server_free(kc_server_t *s)
{
    if (s == NULL)
        return;
    if (s->ips != NULL) {
        for (size_t i = 0; i < KC_NET_IP_BUCKETS; i++) {
            while (s->ips[i]) {
                kc_ip_count_t *e = s->ips[i];
                s->ips[i] = e->next;
                free(e);
            }
        }
        free(s->ips);
    }
    free(s->scratch);
    free(s->tls_scratch);
    while (s->endpoints != NULL) {
        kc_net_endpoint_t *ep = s->endpoints;
        s->endpoints = ep->next;
        free(ep->name);
        free(ep->adv_host);
        free(ep);
    }
    while (s->spare != NULL) {
        kc_wreq_t *w = s->spare;
        s->spare = w->next_spare;
        free(w);
    }
    free(s);
}
