/* bench_probe.c - kcoord-bench's stall probe: how long the server's event loop keeps a cheap
 * request waiting while something else runs (`join --stall-probe`).
 *
 * One connection of its own, on a thread of its own (so that the load generator's loop, busy
 * with the members' answers, adds nothing to what it measures): a blocking TCP socket that sends
 * ApiVersions v0 (no body; the server answers from a constant table, on its event loop) every
 * `interval` milliseconds, one request in flight: the next one goes out `interval` after the
 * previous one was sent, or at once when the answer took longer than that. Each round trip is
 * recorded in the histogram of the phase that was current when the request was sent (the caller
 * moves the phases: idle before the measured work, then the work, ...), so a probe that waited
 * behind a stall counts in the phase that caused it (and the probe waits for it when stopped,
 * unless it was sent after the measured phases). The largest round trip of a phase is the
 * longest time the server answered nothing on this connection, up to one interval.
 *
 * The request is encoded by hand (header v1: api key 18, version 0, correlation id, client id;
 * no body) and the answer is checked for its correlation id and error code 0. Any other outcome
 * (connection lost, a wrong correlation id, an error code) stops the probe and is reported.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "bench.h"

static const char CLIENT_ID[] = "kcoord-bench-probe";

struct kc_probe_s {
    pthread_t thread;
    bool started;
    int fd;
    uint64_t interval_ns;
    _Atomic int phase;
    _Atomic bool stop;
    _Atomic int error; /* 0, or a Kafka error code / KC_BENCH_ECONN / KC_BENCH_EDECODE */
    double timeout_s;  /* how long one answer may take before the probe gives up */
    kc_bench_stats_t st[KC_PROBE_PHASES];
    uint8_t *rbuf;
    size_t rcap;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ULL),
                          .tv_nsec = (long)(t_ns % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

enum { ABANDONED = 1 };

/* Read exactly `n` bytes, waiting at most until `deadline_ns`; a round trip sent in
 * KC_PROBE_AFTER is abandoned once the probe is asked to stop. Returns 0, ABANDONED or -1. */
static int read_full(kc_probe_t *p, int phase, uint8_t *buf, size_t n, uint64_t deadline_ns)
{
    size_t got = 0;
    while (got < n) {
        if (phase == KC_PROBE_AFTER && atomic_load(&p->stop))
            return ABANDONED;
        uint64_t now = mono_ns();
        if (now >= deadline_ns)
            return -1;
        struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
        uint64_t left_ms = (deadline_ns - now) / 1000000 + 1;
        int rc = poll(&pfd, 1, left_ms > 100 ? 100 : (int)left_ms);
        if (rc < 0 && errno != EINTR)
            return -1;
        if (rc <= 0)
            continue;
        ssize_t r = recv(p->fd, buf + got, n - got, 0);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
            return -1;
        if (r > 0)
            got += (size_t)r;
    }
    return 0;
}

/* One ApiVersions round trip, sent in `phase`. Returns 0 with *rtt_ns, ABANDONED, or an error
 * code (negative, or a Kafka code > ABANDONED). */
static int round_trip(kc_probe_t *p, int phase, int32_t corr, uint64_t *rtt_ns)
{
    uint8_t req[4 + 2 + 2 + 4 + 2 + sizeof(CLIENT_ID) - 1];
    put32(req, (uint32_t)(sizeof(req) - 4));
    put16(req + 4, KC_API_API_VERSIONS);
    put16(req + 6, 0);
    put32(req + 8, (uint32_t)corr);
    put16(req + 12, (uint16_t)(sizeof(CLIENT_ID) - 1));
    memcpy(req + 14, CLIENT_ID, sizeof(CLIENT_ID) - 1);
    uint64_t t0 = mono_ns();
    size_t off = 0;
    while (off < sizeof(req)) {
        ssize_t w = send(p->fd, req + off, sizeof(req) - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return KC_BENCH_ECONN;
        off += (size_t)w;
    }
    uint64_t deadline = t0 + (uint64_t)(p->timeout_s * 1e9);
    uint8_t hdr[4];
    int rc = read_full(p, phase, hdr, 4, deadline);
    if (rc != 0)
        return rc == ABANDONED ? ABANDONED : KC_BENCH_ECONN;
    uint32_t len = get32(hdr);
    if (len < 6 || len > (1u << 20))
        return KC_BENCH_EDECODE;
    if (len > p->rcap) {
        uint8_t *nb = realloc(p->rbuf, len);
        if (nb == NULL)
            return KC_BENCH_ECONN;
        p->rbuf = nb;
        p->rcap = len;
    }
    rc = read_full(p, phase, p->rbuf, len, deadline);
    if (rc != 0)
        return rc == ABANDONED ? ABANDONED : KC_BENCH_ECONN;
    *rtt_ns = mono_ns() - t0;
    if ((int32_t)get32(p->rbuf) != corr)
        return KC_BENCH_EDECODE;
    int16_t code = (int16_t)(p->rbuf[4] << 8 | p->rbuf[5]);
    return code == ABANDONED ? KC_BENCH_EDECODE : code; /* 1 is OFFSET_OUT_OF_RANGE: never */
}

static void *probe_main(void *arg)
{
    kc_probe_t *p = arg;
    int32_t corr = 0;
    uint64_t next = mono_ns();
    while (!atomic_load(&p->stop)) {
        sleep_until(next);
        if (atomic_load(&p->stop))
            break;
        int phase = atomic_load(&p->phase);
        uint64_t sent = mono_ns();
        uint64_t rtt = 0;
        int rc = round_trip(p, phase, corr++, &rtt);
        if (rc == ABANDONED)
            break;
        if (rc != 0) {
            atomic_store(&p->error, rc);
            break;
        }
        if (phase >= 0 && phase < KC_PROBE_AFTER)
            kc_stats_record(&p->st[phase], rtt);
        next = sent + p->interval_ns;
    }
    return NULL;
}

kc_probe_t *kc_probe_start(const struct sockaddr *addr, double interval_ms, double timeout_s)
{
    kc_probe_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->fd = -1;
    p->interval_ns = (uint64_t)(interval_ms * 1e6);
    p->timeout_s = timeout_s;
    atomic_init(&p->phase, KC_PROBE_IDLE);
    atomic_init(&p->stop, false);
    atomic_init(&p->error, 0);
    for (int i = 0; i < KC_PROBE_PHASES; i++)
        kc_stats_reset(&p->st[i]);
    socklen_t alen =
        addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    p->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (p->fd < 0 || setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        connect(p->fd, addr, alen) != 0) {
        fprintf(stderr, "kcoord-bench: stall probe: cannot connect: %s\n", strerror(errno));
        kc_probe_free(p);
        return NULL;
    }
    if (pthread_create(&p->thread, NULL, probe_main, p) != 0) {
        fprintf(stderr, "kcoord-bench: stall probe: cannot start its thread\n");
        kc_probe_free(p);
        return NULL;
    }
    p->started = true;
    return p;
}

void kc_probe_phase(kc_probe_t *p, int phase)
{
    atomic_store(&p->phase, phase);
}

int kc_probe_stop(kc_probe_t *p)
{
    if (p->started) {
        atomic_store(&p->stop, true);
        pthread_join(p->thread, NULL);
        p->started = false;
    }
    return atomic_load(&p->error);
}

const kc_bench_stats_t *kc_probe_stats(const kc_probe_t *p, int phase)
{
    return &p->st[phase];
}

void kc_probe_free(kc_probe_t *p)
{
    if (p == NULL)
        return;
    kc_probe_stop(p);
    if (p->fd >= 0)
        close(p->fd);
    free(p->rbuf);
    free(p);
}
