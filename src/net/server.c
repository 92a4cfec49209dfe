/* server.c - listeners and the server's list of connections, and graceful shutdown.
 *
 * kc_server_listen binds one TCP listener per address; each accepted connection is handed to
 * conn.c. Shutdown closes the listeners, asks every connection to drain (finish the replies it
 * owes, then close), and force-closes whatever is left after a grace period. The done
 * callback runs once the last handle is closed.
 */
#include <stdlib.h>
#include <string.h>

#include "net/net_int.h"
#include "util/log.h"

enum { SHUTDOWN_GRACE_MS = 5000 };

kc_server_t *kc_server_new(uv_loop_t *loop, const kc_server_opts_t *opts)
{
    kc_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->loop = loop;
    s->opts = *opts;
    return s;
}

static void on_connection(uv_stream_t *listener, int status)
{
    kc_listener_h_t *l = listener->data;
    if (status < 0) {
        KC_WARN("net", "accept failed: %s", uv_strerror(status));
        return;
    }
    if (l->server->stopping)
        return;
    kc_conn_accept(l->server, listener);
}

static void on_listener_closed(uv_handle_t *h);

int kc_server_listen(kc_server_t *s, const char *host, int port, int *bound_port)
{
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof(addr));
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0) {
        /* A host name: resolve it once, synchronously, at start-up. */
        uv_getaddrinfo_t req;
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        int rc = uv_getaddrinfo(s->loop, &req, NULL, host, NULL, &hints);
        if (rc != 0)
            return rc;
        memcpy(&addr, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
        uv_freeaddrinfo(req.addrinfo);
        if (addr.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&addr)->sin6_port = htons((uint16_t)port);
        else
            ((struct sockaddr_in *)&addr)->sin_port = htons((uint16_t)port);
    }
    kc_listener_h_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return UV_ENOMEM;
    l->server = s;
    uv_tcp_init(s->loop, &l->tcp);
    l->tcp.data = l;
    l->next = s->listeners;
    s->listeners = l;
    s->n_listeners_open++;
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
        KC_INFO("net", "listening on [%s]:%d", name, *bound_port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&bound, name, sizeof(name));
        *bound_port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
        KC_INFO("net", "listening on %s:%d", name, *bound_port);
    }
    return 0;
}

static void maybe_done(kc_server_t *s)
{
    if (!s->stopping || s->n_conns > 0 || s->n_listeners_open > 0 || s->done == NULL)
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
    s->n_conns--;
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
    free(s);
}
