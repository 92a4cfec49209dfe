/* listen.c - plain TCP listeners for protocols other than Kafka's (the HTTP endpoints), and the
 * address resolution every listener of the daemon shares.
 *
 * A kc_net_listener_t is one bound and listening uv_tcp_t. For every connection waiting on it,
 * its owner's callback runs and decides: it takes the connection into a handle of its own with
 * kc_net_accept, counting it against its own bounds, or leaves it waiting (libuv then stops
 * watching the listener until one is taken). The owner keeps everything else: framing, limits,
 * timeouts and the lifetime of the connections it accepted. The Kafka listeners (server.c) use
 * the same resolution and their own accept path, which adds max.connections and the per-IP
 * table.
 */
#include <stdlib.h>
#include <string.h>

#include "net/net_int.h"

struct kc_net_listener_s {
    uv_tcp_t tcp;
    kc_net_accept_cb cb;
    void *arg;
    void (*done)(void *arg);
    void *done_arg;
};

int kc_net_resolve(uv_loop_t *loop, const char *host, int port, struct sockaddr_storage *addr)
{
    memset(addr, 0, sizeof(*addr));
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)addr) == 0 ||
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)addr) == 0)
        return 0;
    /* A host name: resolve it once, synchronously, at start-up. */
    uv_getaddrinfo_t req;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = uv_getaddrinfo(loop, &req, NULL, host, NULL, &hints);
    if (rc != 0)
        return rc;
    memcpy(addr, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
    uv_freeaddrinfo(req.addrinfo);
    if (addr->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
    return 0;
}

int kc_net_bound_port(const uv_tcp_t *tcp)
{
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    if (uv_tcp_getsockname(tcp, (struct sockaddr *)&bound, &len) != 0)
        return -1;
    if (bound.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
    return ntohs(((struct sockaddr_in *)&bound)->sin_port);
}

static void on_connection(uv_stream_t *server, int status)
{
    kc_net_listener_t *l = server->data;
    if (status < 0)
        return;
    l->cb(l->arg, l);
}

static void on_closed(uv_handle_t *h)
{
    kc_net_listener_t *l = h->data;
    void (*done)(void *) = l->done;
    void *arg = l->done_arg;
    free(l);
    if (done)
        done(arg);
}

kc_net_listener_t *kc_net_listen(uv_loop_t *loop, const char *host, int port, int backlog,
                                 kc_net_accept_cb cb, void *arg, int *bound_port, int *err)
{
    struct sockaddr_storage addr;
    int rc = kc_net_resolve(loop, host, port, &addr);
    kc_net_listener_t *l = NULL;
    if (rc == 0 && (l = calloc(1, sizeof(*l))) == NULL)
        rc = UV_ENOMEM;
    if (rc != 0) {
        *err = rc;
        return NULL;
    }
    l->cb = cb;
    l->arg = arg;
    uv_tcp_init(loop, &l->tcp);
    l->tcp.data = l;
    rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->tcp, backlog, on_connection);
    if (rc != 0) {
        uv_close((uv_handle_t *)&l->tcp, on_closed); /* freed once the loop runs */
        *err = rc;
        return NULL;
    }
    *bound_port = kc_net_bound_port(&l->tcp);
    return l;
}

int kc_net_accept(kc_net_listener_t *l, uv_tcp_t *client)
{
    uv_tcp_init(l->tcp.loop, client);
    return uv_accept((uv_stream_t *)&l->tcp, (uv_stream_t *)client);
}

void kc_net_listener_close(kc_net_listener_t *l, void (*done)(void *arg), void *arg)
{
    l->done = done;
    l->done_arg = arg;
    uv_close((uv_handle_t *)&l->tcp, on_closed);
}
