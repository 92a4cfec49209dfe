/* cluster.c - kcoord's raft: cowsql's libraft (its v0 interface, raft_uv on the daemon's loop),
 * an entry format for partition batches, leadership news for the coordinator, and the nodes'
 * addresses. See cluster.h. */
#include "cluster/cluster.h"
#include "cluster/cluster_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <raft.h>
#include <raft/uv.h>

#include "log/log.h"
#include "log/meta.h"
#include "util/diag.h"

/* An entry: this header (magic, proposing node, number of batches, 0, proposer's term; all
 * big-endian), then per batch its partition and length (int32 each) and the RecordBatch, then
 * zero bytes up to a multiple of 8 (raft's storage takes only such entries). */
enum { ENTRY_MAGIC = 0x4b435232u /* "KCR2" */, ENTRY_HDR = 24, PART_HDR = 8 };

enum { MAX_NODES = 16, MAX_BROKERS = 64, POLL_MS = 100 };

typedef struct broker_s {
    int32_t id;
    char listener[64]; /* upper case */
    char host[128];
    kc_cluster_addr_t addr;
} broker_t;

typedef struct node_s {
    int32_t id;
    char raft_address[128];
} node_t;

/* A membership change in flight (one at a time). */
typedef struct change_s {
    struct raft_change req;
    kc_cluster_t *cl;
    raft_id id;
    bool adding;       /* raft_add done, raft_assign to come */
    bool new_spare;    /* this change added the node as a spare */
    bool dropping;     /* its promotion failed: removing that spare again */
    bool answered;     /* done was called (the change may still be in raft's hands) */
    uint64_t deadline; /* uv_now() at which the requester's TimeoutMs ends */
    kc_cluster_change_cb done;
    void *arg;
    char address[512];
} change_t;

/* What the leader last heard from a server: an AppendEntries (or snapshot) result, in a term. */
typedef struct heard_s {
    raft_id id;
    raft_term term;
    uint64_t contact_ms;   /* uv_now() of the last result */
    uint64_t caught_up_ms; /* uv_now() of the last one that had everything the leader had */
} heard_t;

typedef struct submit_s {
    struct raft_apply req;
    void (*done)(void *arg, int status);
    void *arg;
} submit_t;

struct kc_cluster_s {
    uv_loop_t *loop;
    const kc_conf_t *conf;
    kc_cluster_ops_t ops;
    struct raft raft;
    struct raft_io io;
    /* raft_uv's start and the receive callback raft gave it: kcoord's own sits between them
     * to note what the leader hears from each server (see heard_note). */
    int (*io_start)(struct raft_io *, unsigned, raft_io_tick_cb, raft_io_recv_cb);
    raft_io_recv_cb raft_recv;
    heard_t heard[MAX_NODES];
    size_t n_heard;
    /* raft_uv's send and snapshot_put, and the index and term of the last snapshots stored,
     * to send every snapshot with its own term (see snap_send). */
    int (*io_send)(struct raft_io *, struct raft_io_send *, const struct raft_message *,
                   raft_io_send_cb);
    int (*io_snapshot_put)(struct raft_io *, unsigned, struct raft_io_snapshot_put *,
                           const struct raft_snapshot *, raft_io_snapshot_put_cb);
    kc_snap_terms_t snaps;
    struct raft_uv_transport transport; /* kcoord's (tls_transport.c) */
    raft_uv_transport_close_cb outer_close_cb;
    kc_tls_transport_t tlst; /* raft's connections: a hello, over mutual TLS with SSL */
    struct raft_fsm fsm;
    struct raft_barrier barrier;
    struct raft_transfer transfer;
    void (*transfer_done)(void *);
    void *transfer_arg;
    bool xfer_active; /* handing the leadership over: no new submissions meanwhile */
    bool xfer_raft;   /* raft's transfer is in flight */
    int xfer_tries;
    uint64_t xfer_deadline; /* uv_now when it gives up */
    uv_timer_t poll;        /* a second look at raft's state, beside step_cb */
    uv_timer_t kick;        /* starts the barrier outside raft's own callbacks */
    uv_timer_t xfer;        /* paces a leadership transfer: drain, ask raft, ask again, give up */
    node_t nodes[MAX_NODES];
    size_t n_nodes;
    broker_t brokers[MAX_BROKERS];
    size_t n_brokers;
    /* The client listeners of nodes added at runtime, read from raft's configuration again
     * whenever it changed (dyn_sig). */
    broker_t dyn[MAX_BROKERS];
    size_t n_dyn;
    uint64_t dyn_sig;
    change_t *change; /* the membership change in flight */
    uv_timer_t change_timer;
    char dir_id[23]; /* this node's directory id */
    bool member;     /* a voter of the configuration it knows (as last logged) */
    /* A configuration entry raft committed but still calls uncommitted, and since when (see
     * config_settled). */
    raft_index stuck_conf;
    uint64_t stuck_conf_ms;
    int32_t self;
    char dir[PATH_MAX];
    bool io_ready, raft_ready, started;
    int role;            /* KC_CLUSTER_* */
    raft_term lead_term; /* the term this node leads (role LOADING or LEADER) */
    bool barrier_out;    /* a barrier is in flight */
    int32_t leader;      /* the last leader logged; -1 none */
    unsigned short last_state;
    uint64_t elections, leadership_changes, snapshots, restored;
    /* When this node last was without a leader to follow (at start, candidate, no leader
     * known) or installed the leader's snapshot: a follower takes no snapshot of its own soon
     * after (see fsm_snapshot). */
    uint64_t unsettled_ms;
    bool closing;
    int close_steps;
    void (*done)(void *);
    void *done_arg;
};

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

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void seterr(char *err, size_t len, const char *fmt, ...)
{
    if (len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

void kc_cluster_conf_id(const kc_conf_t *conf, char out[23])
{
    if (conf->cluster_id != NULL && strlen(conf->cluster_id) == 22)
        memcpy(out, conf->cluster_id, 23);
    else
        kc_cluster_derive_id(conf->cluster_voters, out);
}

void kc_cluster_derive_id(const char *voters, char out[23])
{
    uint8_t u[16];
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
    for (const char *p = voters; *p; p++) {
        h1 = (h1 ^ (uint8_t)*p) * 0x100000001b3ull;
        h2 = (h2 ^ (uint8_t)*p) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
    for (int i = 0; i < 8; i++) {
        u[i] = (uint8_t)(h1 >> (8 * i));
        u[8 + i] = (uint8_t)(h2 >> (8 * i));
    }
    kc_meta_format_cluster_id(u, out);
}

/* ---- Settings ---------------------------------------------------------------------------- */

/* cluster.voters: ID@host:port entries (the syntax was checked by conf). */
static int parse_voters(kc_cluster_t *cl, const char *v, char *err, size_t len)
{
    const char *s = v;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (cl->n_nodes == MAX_NODES) {
            seterr(err, len, "cluster.voters: more than %d nodes", MAX_NODES);
            return -1;
        }
        node_t *nd = &cl->nodes[cl->n_nodes];
        char item[256];
        snprintf(item, sizeof(item), "%.*s", (int)n, s);
        char *at = strchr(item, '@');
        nd->id = (int32_t)strtol(item, NULL, 10);
        if (at == NULL || nd->id < 1) {
            seterr(err, len, "cluster.voters: node ids start at 1 (\"%s\")", item);
            return -1;
        }
        for (size_t i = 0; i < cl->n_nodes; i++)
            if (cl->nodes[i].id == nd->id) {
                seterr(err, len, "cluster.voters: node %d is listed twice", nd->id);
                return -1;
            }
        snprintf(nd->raft_address, sizeof(nd->raft_address), "%s", at + 1);
        cl->n_nodes++;
        s = end ? end + 1 : s + n;
    }
    return 0;
}

/* NAME://host:port (or host:port, PLAINTEXT) into b's listener, host and addr (not its id).
 * 0, or -1 when it is not one. */
static int parse_endpoint(const char *item, broker_t *b)
{
    const char *addr = item;
    const char *sep = strstr(addr, "://");
    if (sep) {
        snprintf(b->listener, sizeof(b->listener), "%.*s", (int)(sep - addr), addr);
        addr = sep + 3;
    } else {
        snprintf(b->listener, sizeof(b->listener), "PLAINTEXT");
    }
    for (char *q = b->listener; *q; q++)
        if (*q >= 'a' && *q <= 'z')
            *q = (char)(*q - 'a' + 'A');
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || colon == addr)
        return -1;
    snprintf(b->host, sizeof(b->host), "%.*s", (int)(colon - addr), addr);
    if (b->host[0] == '[') { /* [::1] */
        size_t hl = strlen(b->host);
        memmove(b->host, b->host + 1, hl);
        if (hl >= 2 && b->host[hl - 2] == ']')
            b->host[hl - 2] = '\0';
    }
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || port < 1 || port > 65535)
        return -1;
    b->addr.host = b->host;
    b->addr.port = (int32_t)port;
    return 0;
}

/* The directory id of a configuration's address ("" for a node of cluster.voters), and its
 * client listeners (NULL when none): see cluster.h. */
static void addr_dir_id(const char *address, char out[23])
{
    const char *sp = strchr(address, ' ');
    out[0] = '\0';
    if (sp != NULL && strlen(sp + 1) >= 22 && (sp[23] == ' ' || sp[23] == '\0')) {
        memcpy(out, sp + 1, 22);
        out[22] = '\0';
    }
}

static const char *addr_listeners(const char *address)
{
    const char *sp = address ? strchr(address, ' ') : NULL;
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    return sp ? sp + 1 : NULL;
}

/* cluster.brokers: ID@NAME://host:port or ID@host:port (PLAINTEXT). */
static int parse_brokers(kc_cluster_t *cl, const char *v, char *err, size_t len)
{
    const char *s = v;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (cl->n_brokers == MAX_BROKERS) {
            seterr(err, len, "cluster.brokers: more than %d entries", MAX_BROKERS);
            return -1;
        }
        broker_t *b = &cl->brokers[cl->n_brokers];
        char item[256];
        snprintf(item, sizeof(item), "%.*s", (int)n, s);
        char *at = strchr(item, '@');
        b->id = (int32_t)strtol(item, NULL, 10);
        if (parse_endpoint(at + 1, b) != 0) {
            seterr(err, len, "cluster.brokers: \"%s\" is not ID@NAME://host:port", item);
            return -1;
        }
        bool known = false;
        for (size_t i = 0; i < cl->n_nodes; i++)
            known |= cl->nodes[i].id == b->id;
        if (!known) {
            seterr(err, len, "cluster.brokers: node %d is not in cluster.voters", b->id);
            return -1;
        }
        for (size_t i = 0; i < cl->n_brokers; i++)
            if (cl->brokers[i].id == b->id && strcmp(cl->brokers[i].listener, b->listener) == 0) {
                seterr(err, len, "cluster.brokers: node %d has two %s addresses", b->id,
                       b->listener);
                return -1;
            }
        cl->n_brokers++;
        s = end ? end + 1 : s + n;
    }
    return 0;
}

/* ---- Leadership ---------------------------------------------------------------------------- */

static void check_state(kc_cluster_t *cl, bool in_raft);
static void on_kick(uv_timer_t *t);

static void on_barrier(struct raft_barrier *req, int status)
{
    kc_cluster_t *cl = req->data;
    cl->barrier_out = false;
    if (cl->closing)
        return;
    if (cl->role != KC_CLUSTER_LOADING || raft_state(&cl->raft) != RAFT_LEADER ||
        raft_current_term(&cl->raft) != cl->lead_term) {
        check_state(cl, true);
        return;
    }
    if (status != 0) { /* still the leader of the same term: try again */
        KC_WARN_LIMITED("cluster", "barrier failed: %s; retrying", raft_strerror(status));
        uv_timer_start(&cl->kick, on_kick, 0, 0);
        return;
    }
    cl->role = KC_CLUSTER_LEADER;
    KC_INFO("cluster", "node %d serves as the leader (term %llu), %llu entries applied", cl->self,
            (unsigned long long)cl->lead_term, (unsigned long long)raft_last_applied(&cl->raft));
    cl->ops.role(cl->ops.ctx, KC_CLUSTER_LEADER);
}

/* Compare raft's state with what the coordinator was told, and tell it what changed. Called
 * from raft's callbacks (in_raft: no call back into raft from there; the barrier of a new
 * leader then starts from the kick timer) and from the loop's own timers. */
static void check_state(kc_cluster_t *cl, bool in_raft)
{
    if (cl->closing || !cl->started)
        return;
    struct raft *r = &cl->raft;
    unsigned short st = (unsigned short)raft_state(r);
    if (st == RAFT_CANDIDATE && cl->last_state != RAFT_CANDIDATE)
        cl->elections++;
    cl->last_state = st;
    raft_id lid = 0;
    const char *laddr = NULL;
    raft_leader(r, &lid, &laddr);
    int32_t leader = lid ? (int32_t)lid : -1;
    if (!(st == RAFT_LEADER || (st == RAFT_FOLLOWER && leader >= 0)) || leader != cl->leader)
        cl->unsettled_ms = uv_now(cl->loop);
    if (leader != cl->leader) {
        cl->leader = leader;
        cl->leadership_changes++;
        if (leader >= 0)
            KC_INFO("cluster", "leader is node %d (term %llu)", leader,
                    (unsigned long long)raft_current_term(r));
        else
            KC_INFO("cluster", "no leader known (term %llu, this node is %s)",
                    (unsigned long long)raft_current_term(r), raft_state_name(st));
    }
    /* Whether this node is a voter of the configuration it knows: said once when it changes
     * (added: it may now vote and lead; removed: it follows no one, and should be stopped). */
    bool member = false;
    for (unsigned i = 0; i < r->configuration.n; i++)
        member |= r->configuration.servers[i].id == (raft_id)cl->self &&
                  r->configuration.servers[i].role == RAFT_VOTER;
    if (member != cl->member && r->configuration.n > 0) {
        if (member)
            KC_INFO("cluster", "node %d is a voter of the cluster (%u servers)", cl->self,
                    r->configuration.n);
        else if (cl->member)
            KC_WARN("cluster",
                    "node %d was removed from the cluster: it knows no leader any more and "
                    "serves no group; stop it",
                    cl->self);
        cl->member = member;
    }
    bool leading = st == RAFT_LEADER;
    if (!leading && cl->role != KC_CLUSTER_FOLLOWER) {
        KC_WARN("cluster", "node %d lost the leadership of term %llu (now %s, term %llu)", cl->self,
                (unsigned long long)cl->lead_term, raft_state_name(st),
                (unsigned long long)raft_current_term(r));
        cl->role = KC_CLUSTER_FOLLOWER;
        cl->ops.role(cl->ops.ctx, KC_CLUSTER_FOLLOWER);
    }
    if (leading && cl->role != KC_CLUSTER_FOLLOWER && raft_current_term(r) != cl->lead_term) {
        /* A new term without a moment as follower in between that we saw: start over. */
        cl->role = KC_CLUSTER_FOLLOWER;
        cl->ops.role(cl->ops.ctx, KC_CLUSTER_FOLLOWER);
    }
    if (leading && cl->role == KC_CLUSTER_FOLLOWER) {
        cl->role = KC_CLUSTER_LOADING;
        cl->lead_term = raft_current_term(r);
        cl->ops.role(cl->ops.ctx, KC_CLUSTER_LOADING);
    }
    if (leading && cl->role == KC_CLUSTER_LOADING && !cl->barrier_out) {
        if (in_raft) {
            uv_timer_start(&cl->kick, on_kick, 0, 0);
            return;
        }
        cl->barrier.data = cl;
        int rv = raft_barrier(r, &cl->barrier, on_barrier);
        if (rv == 0)
            cl->barrier_out = true;
        else
            KC_WARN_LIMITED("cluster", "barrier not started: %s", raft_strerror(rv));
    }
}

static void on_kick(uv_timer_t *t)
{
    check_state(t->data, false);
}

static void on_step(struct raft *r)
{
    check_state(r->data, true);
}

static void on_poll(uv_timer_t *t)
{
    check_state(t->data, false);
}

/* ---- The state machine ------------------------------------------------------------------- */

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    kc_cluster_t *cl = fsm->data;
    *result = NULL;
    const uint8_t *p = buf->base;
    if (buf->len < ENTRY_HDR || get32(p) != ENTRY_MAGIC) {
        KC_ERROR_LIMITED("cluster", "skipping a raft entry kcoord does not know (%zu bytes)",
                         buf->len);
        return 0;
    }
    int32_t origin = (int32_t)get32(p + 4);
    uint32_t n = get32(p + 8);
    uint64_t term = get64(p + 16);
    /* Make sure a lost leadership is known before deciding whether the entry is ours. */
    check_state(cl, true);
    bool own = origin == cl->self && cl->role != KC_CLUSTER_FOLLOWER && term == cl->lead_term;
    size_t off = ENTRY_HDR;
    for (uint32_t i = 0; i < n; i++) {
        if (buf->len - off < PART_HDR) {
            KC_ERROR_LIMITED("cluster", "a raft entry ends inside its batch %u of %u", i, n);
            return 0;
        }
        int32_t part = (int32_t)get32(p + off);
        size_t len = get32(p + off + 4);
        off += PART_HDR;
        if (len > buf->len - off) {
            KC_ERROR_LIMITED("cluster", "a raft entry's batch %u passes its end", i);
            return 0;
        }
        cl->ops.apply(cl->ops.ctx, part, p + off, len, own);
        off += len;
    }
    return 0;
}

/* Whether raft's committed configuration is the configuration, so that a snapshot may be taken
 * (it records the committed one). libraft 0.22.1 records a configuration entry as committed only
 * when it handles the entry's apply event, which it may do after taking a snapshot of the
 * entries up to it: that snapshot then keeps the configuration from before the change, and a
 * node restarted on it comes back with that one (a removed node counted again, an added one left
 * out). And a node restarted with its last configuration entry among the entries before its
 * snapshot treats it as uncommitted for good. So no snapshot while an entry is not recorded as
 * committed; one committed that stays so for 2 election timeouts (the restart case) is recorded
 * as committed here, as raft's apply would have done. */
static bool config_settled(kc_cluster_t *cl)
{
    struct raft *r = &cl->raft;
    raft_index u = r->configuration_uncommitted_index;
    if (u == 0 || u > raft_commit_index(r)) {
        cl->stuck_conf = 0;
        return u == 0;
    }
    uint64_t now = uv_now(cl->loop);
    if (cl->stuck_conf != u) {
        cl->stuck_conf = u;
        cl->stuck_conf_ms = now;
    }
    if (now - cl->stuck_conf_ms < 2 * (uint64_t)cl->conf->cluster_election_timeout_ms)
        return false;
    struct raft_configuration copy;
    raft_configuration_init(&copy);
    for (unsigned i = 0; i < r->configuration.n; i++) {
        const struct raft_server *sv = &r->configuration.servers[i];
        if (raft_configuration_add(&copy, sv->id, sv->address, sv->role) != 0) {
            raft_configuration_close(&copy);
            return false;
        }
    }
    raft_configuration_close(&r->configuration_committed);
    r->configuration_committed = copy;
    r->configuration_committed_index = u;
    r->configuration_uncommitted_index = 0;
    cl->stuck_conf = 0;
    KC_WARN("cluster",
            "raft still called the configuration of entry %llu uncommitted, committed at %llu: "
            "recorded as committed (%u servers)",
            (unsigned long long)u, (unsigned long long)raft_commit_index(r), copy.n);
    return true;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    kc_cluster_t *cl = fsm->data;
    if (!config_settled(cl))
        return RAFT_BUSY; /* raft asks again at a later entry */
    /* libraft 0.22.1 fails an assertion (and without assertions corrupts its memory) when the
     * leader's snapshot is installed while this node's own snapshot is being written: the index
     * of its own is then gone from its log when the write completes. A follower that has just
     * started, just caught up or just had no leader is the one the leader sends snapshots to,
     * so it takes none of its own until it has followed a leader for a while; raft asks again
     * at a later entry. */
    uint64_t settle = 3 * (uint64_t)cl->conf->cluster_election_timeout_ms;
    if (raft_state(&cl->raft) != RAFT_LEADER && uv_now(cl->loop) - cl->unsettled_ms < settle) {
        return RAFT_BUSY;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    if (cl->ops.snapshot(cl->ops.ctx, &data, &len) != 0)
        return RAFT_BUSY;
    struct raft_buffer *b = raft_malloc(sizeof(*b));
    void *copy = raft_malloc(len ? len : 1);
    if (b == NULL || copy == NULL) {
        raft_free(b);
        raft_free(copy);
        free(data);
        return RAFT_NOMEM;
    }
    memcpy(copy, data, len);
    free(data);
    b->base = copy;
    b->len = len;
    *bufs = b;
    *n_bufs = 1;
    cl->snapshots++;
    KC_INFO("cluster", "snapshot taken at index %llu: %zu bytes",
            (unsigned long long)raft_last_applied(&cl->raft), len);
    return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    kc_cluster_t *cl = fsm->data;
    int rc = cl->ops.restore(cl->ops.ctx, buf->base, buf->len);
    if (rc != 0)
        return RAFT_MALFORMED;
    raft_free(buf->base);
    cl->restored++;
    cl->unsettled_ms = uv_now(cl->loop);
    KC_INFO("cluster", "restored a snapshot of %zu bytes", buf->len);
    return 0;
}

/* ---- The transport ------------------------------------------------------------------------
 *
 * raft's TCP transport with every connection given keepalives and a TCP user timeout: raft
 * sends on one connection and receives on another, so a peer that vanished without a reset (a
 * network partition, a powered-off host) would otherwise be noticed only when a send buffer
 * fills, possibly minutes later. A dead connection now fails within about an election timeout
 * or two and raft connects again. */

static void tune_stream(kc_cluster_t *cl, struct uv_stream_s *stream);

static void tune_cb(void *arg, uv_stream_t *s)
{
    tune_stream(arg, s);
}

static void tune_stream(kc_cluster_t *cl, struct uv_stream_s *stream)
{
    if (stream == NULL || stream->type != UV_TCP)
        return;
    unsigned idle_s = (unsigned)(cl->conf->cluster_election_timeout_ms / 1000);
    uv_tcp_keepalive((uv_tcp_t *)stream, 1, idle_s > 0 ? idle_s : 1);
    uv_tcp_nodelay((uv_tcp_t *)stream, 1);
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)stream, &fd) == 0) {
        unsigned timeout = (unsigned)cl->conf->cluster_election_timeout_ms * 2;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
        int intvl = 1, cnt = 2;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
}

/* raft's storage keeps its own pointer in the outer transport's `data`: ours is found by the
 * transport's place in kc_cluster_t. */
static kc_cluster_t *outer_cluster(struct raft_uv_transport *t)
{
    return (kc_cluster_t *)((char *)t - offsetof(kc_cluster_t, transport));
}

/* ---- What the leader hears ------------------------------------------------------------------
 *
 * libraft keeps when it last heard from each server to itself. DescribeQuorum's
 * LastFetchTimestamp and LastCaughtUpTimestamp, and /v1/cluster's last_contact_ms, come from
 * the messages raft_uv hands raft: kcoord's receive callback notes each AppendEntries result
 * (also the answer to a snapshot) with its sender and term, and whether the sender then had
 * every entry the leader had, before raft sees it. */
static kc_cluster_t *io_cluster(struct raft_io *io)
{
    return (kc_cluster_t *)((char *)io - offsetof(kc_cluster_t, io));
}

static heard_t *heard_slot(kc_cluster_t *cl, raft_id id, bool add)
{
    for (size_t i = 0; i < cl->n_heard; i++)
        if (cl->heard[i].id == id)
            return &cl->heard[i];
    if (!add)
        return NULL;
    if (cl->n_heard < MAX_NODES) {
        cl->heard[cl->n_heard] = (heard_t){.id = id};
        return &cl->heard[cl->n_heard++];
    }
    heard_t *old = &cl->heard[0]; /* more servers than slots: the one heard longest ago */
    for (size_t i = 1; i < cl->n_heard; i++)
        if (cl->heard[i].contact_ms < old->contact_ms)
            old = &cl->heard[i];
    *old = (heard_t){.id = id};
    return old;
}

static void heard_note(struct raft_io *io, struct raft_message *m)
{
    kc_cluster_t *cl = io_cluster(io);
    if (m->type == RAFT_APPEND_ENTRIES_RESULT && raft_state(&cl->raft) == RAFT_LEADER &&
        m->append_entries_result.term == raft_current_term(&cl->raft)) {
        heard_t *h = heard_slot(cl, m->server_id, true);
        uint64_t now = uv_now(cl->loop);
        if (h->term != m->append_entries_result.term)
            h->caught_up_ms = 0;
        h->term = m->append_entries_result.term;
        h->contact_ms = now;
        if (m->append_entries_result.rejected == 0 &&
            m->append_entries_result.last_log_index >= raft_last_index(&cl->raft))
            h->caught_up_ms = now;
    }
    cl->raft_recv(io, m);
}

static int heard_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
                       raft_io_recv_cb recv)
{
    kc_cluster_t *cl = io_cluster(io);
    cl->raft_recv = recv;
    return cl->io_start(io, msecs, tick, heard_note);
}

/* ---- Snapshots sent with their own term ------------------------------------------------------
 *
 * libraft 0.22.1 (its legacy raft_io layer; unchanged upstream since) sends a snapshot in two
 * steps: the message takes the index and term of the snapshot raft knows of, then the snapshot
 * is loaded from disk, and when a newer one was stored meanwhile the message's index becomes the
 * newer one's but its term stays the older one's. The node receiving it stores the newer
 * snapshot under the wrong term; the leader's next entries then conflict with an index it
 * holds committed, and libraft's error path for that frees memory twice (make chaos: a node
 * restarted empty, sent a snapshot while the leader stored the next one, aborted on every
 * start). kcoord notes the index and term of every snapshot stored, and gives an
 * InstallSnapshot the term of the snapshot it carries. */
void kc_snap_terms_note(kc_snap_terms_t *t, raft_index index, raft_term term)
{
    unsigned cap = sizeof(t->v) / sizeof(t->v[0]);
    t->v[t->n % cap].index = index;
    t->v[t->n % cap].term = term;
    t->n++;
}

raft_term kc_snap_terms_of(const kc_snap_terms_t *t, raft_index index)
{
    unsigned cap = sizeof(t->v) / sizeof(t->v[0]);
    for (unsigned k = 0; k < cap && k < t->n; k++) {
        unsigned at = (t->n - 1 - k) % cap; /* the newest first */
        if (t->v[at].index == index)
            return t->v[at].term;
    }
    return 0;
}

bool kc_snap_terms_fix(const kc_snap_terms_t *t, const struct raft_message *m,
                       struct raft_message *fixed)
{
    if (m->type != RAFT_INSTALL_SNAPSHOT)
        return false;
    raft_term term = kc_snap_terms_of(t, m->install_snapshot.last_index);
    if (term == 0 || term == m->install_snapshot.last_term)
        return false;
    *fixed = *m;
    fixed->install_snapshot.last_term = term;
    return true;
}

static int snap_put(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
                    const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
    kc_cluster_t *cl = io_cluster(io);
    kc_snap_terms_note(&cl->snaps, snapshot->index, snapshot->term);
    return cl->io_snapshot_put(io, trailing, req, snapshot, cb);
}

static int snap_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *m,
                     raft_io_send_cb cb)
{
    kc_cluster_t *cl = io_cluster(io);
    struct raft_message fixed; /* raft_uv encodes the message before it returns */
    if (!kc_snap_terms_fix(&cl->snaps, m, &fixed))
        return cl->io_send(io, req, m, cb);
    KC_WARN_LIMITED("cluster",
                    "sending node %llu the snapshot at index %llu with its term %llu (raft gave "
                    "it term %llu, of an older snapshot)",
                    (unsigned long long)m->server_id,
                    (unsigned long long)m->install_snapshot.last_index,
                    (unsigned long long)fixed.install_snapshot.last_term,
                    (unsigned long long)m->install_snapshot.last_term);
    return cl->io_send(io, req, &fixed, cb);
}

/* How long ago (ms) this node, as the leader of its current term, last heard from server
 * `id`, and last saw it caught up: -1 where it did not in this term. */
static void heard_ago(const kc_cluster_t *cl, raft_id id, int64_t *contact, int64_t *caught)
{
    *contact = *caught = -1;
    const heard_t *h = heard_slot((kc_cluster_t *)cl, id, false);
    struct raft *r = (struct raft *)&cl->raft;
    if (h == NULL || raft_state(r) != RAFT_LEADER || h->term != raft_current_term(r))
        return;
    uint64_t now = uv_now(cl->loop);
    *contact = (int64_t)(now - h->contact_ms);
    if (h->caught_up_ms != 0)
        *caught = (int64_t)(now - h->caught_up_ms);
}

static int tr_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
    kc_cluster_t *cl = outer_cluster(t);
    cl->tlst.id = id;
    snprintf(cl->tlst.address, sizeof(cl->tlst.address), "%s", address);
    return 0;
}

static int tr_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
    kc_cluster_t *cl = outer_cluster(t);
    int rv = kc_tls_transport_listen(&cl->tlst, cb);
    if (rv != 0)
        snprintf(t->errmsg, sizeof(t->errmsg), "cannot listen on %.200s", cl->tlst.address);
    return rv;
}

/* The raft host:port of a configuration's address: up to its first space (see cluster.h). */
static size_t raft_addr_len(const char *address)
{
    const char *sp = strchr(address, ' ');
    return sp ? (size_t)(sp - address) : strlen(address);
}

static int tr_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                      const char *address, raft_uv_connect_cb cb)
{
    char plain[256];
    snprintf(plain, sizeof(plain), "%.*s", (int)raft_addr_len(address), address);
    return kc_tls_transport_connect(&outer_cluster(t)->tlst, req, id, plain, cb);
}

static void tls_closed(kc_tls_transport_t *t)
{
    kc_cluster_t *cl = (kc_cluster_t *)((char *)t - offsetof(kc_cluster_t, tlst));
    if (cl->outer_close_cb)
        cl->outer_close_cb(&cl->transport);
}

static void tr_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
    kc_cluster_t *cl = outer_cluster(t);
    cl->outer_close_cb = cb;
    cl->tlst.closed = tls_closed;
    kc_tls_transport_close(&cl->tlst);
}

/* ---- Life ---------------------------------------------------------------------------------- */

int kc_cluster_check_data_dir(const kc_conf_t *conf, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(dir, sizeof(dir), "%s/raft", conf->data_dir) < sizeof(dir) &&
        stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (!kc_log_dir_has_data(kc_log_io_posix(), conf->data_dir, conf->offsets_topic_num_partitions))
        return 0;
    seterr(err, errlen,
           "data.dir: %s holds the partition logs of a single node; a cluster node starts from an "
           "empty data.dir, or from one it used as a cluster node",
           conf->data_dir);
    return -1;
}

kc_cluster_t *kc_cluster_new(uv_loop_t *loop, const kc_conf_t *conf, const kc_cluster_ops_t *ops,
                             char *err, size_t errlen)
{
    kc_cluster_t *cl = calloc(1, sizeof(*cl));
    if (cl == NULL) {
        seterr(err, errlen, "out of memory");
        return NULL;
    }
    cl->loop = loop;
    cl->conf = conf;
    cl->ops = *ops;
    cl->self = conf->node_id;
    cl->leader = -1;
    cl->last_state = RAFT_UNAVAILABLE;
    if (parse_voters(cl, conf->cluster_voters, err, errlen) != 0 ||
        parse_brokers(cl, conf->cluster_brokers, err, errlen) != 0)
        goto fail;
    const node_t *me = NULL;
    for (size_t i = 0; i < cl->n_nodes; i++)
        if (cl->nodes[i].id == cl->self)
            me = &cl->nodes[i];
    if (me == NULL) {
        seterr(err, errlen, "node.id: %d is not one of the nodes of cluster.voters", cl->self);
        goto fail;
    }
    if (conf->cluster_heartbeat_timeout_ms >= conf->cluster_election_timeout_ms) {
        seterr(err, errlen,
               "cluster.heartbeat.timeout.ms: %d is not below "
               "cluster.election.timeout.ms (%d)",
               conf->cluster_heartbeat_timeout_ms, conf->cluster_election_timeout_ms);
        goto fail;
    }
    if ((size_t)snprintf(cl->dir, sizeof(cl->dir), "%s/raft", conf->data_dir) >= sizeof(cl->dir)) {
        seterr(err, errlen, "data.dir: too long");
        goto fail;
    }
    (void)mkdir(conf->data_dir, 0755);
    if (mkdir(cl->dir, 0755) != 0 && errno != EEXIST) {
        seterr(err, errlen, "data.dir: cannot create %s: %s", cl->dir, strerror(errno));
        goto fail;
    }
    cl->tlst.loop = loop;
    cl->tlst.outer = &cl->transport;
    cl->tlst.tune = tune_cb;
    cl->tlst.tune_arg = cl;
    kc_cluster_conf_id(conf, cl->tlst.cluster_id);
    if (kc_meta_directory_id(conf->data_dir, cl->dir_id, err, errlen) != 0)
        goto fail;
    memcpy(cl->tlst.dir_id, cl->dir_id, sizeof(cl->dir_id));
    if (conf->cluster_security_protocol == 1) {
        const char *ks = conf->cluster_ssl_keystore_location;
        const char *ts = conf->cluster_ssl_truststore_location;
        if (ks[0] == '\0' || ts[0] == '\0') {
            seterr(err, errlen, "%s: required with cluster.security.protocol=SSL",
                   ks[0] == '\0' ? "cluster.ssl.keystore.location"
                                 : "cluster.ssl.truststore.location");
            goto fail;
        }
        if (kc_tls_transport_ctx(&cl->tlst, ks, ts, err, errlen) != 0)
            goto fail;
    } else {
        KC_WARN("cluster",
                "the raft port %s is PLAINTEXT: anyone who reaches it can take part "
                "in the cluster; set cluster.security.protocol=SSL unless no one else can",
                me->raft_address);
    }
    cl->transport.version = 1;
    cl->transport.init = tr_init;
    cl->transport.listen = tr_listen;
    cl->transport.connect = tr_connect;
    cl->transport.close = tr_close;
    int rv = raft_uv_init(&cl->io, loop, cl->dir, &cl->transport);
    if (rv != 0) {
        seterr(err, errlen, "cluster: raft storage in %s: %s", cl->dir, cl->io.errmsg);
        goto fail;
    }
    cl->io_ready = true;
    cl->io_start = cl->io.start;
    cl->io.start = heard_start;
    cl->io_send = cl->io.send;
    cl->io.send = snap_send;
    cl->io_snapshot_put = cl->io.snapshot_put;
    cl->io.snapshot_put = snap_put;
    cl->fsm.version = 1;
    cl->fsm.data = cl;
    cl->fsm.apply = fsm_apply;
    cl->fsm.snapshot = fsm_snapshot;
    cl->fsm.restore = fsm_restore;
    rv = raft_init(&cl->raft, &cl->io, &cl->fsm, (raft_id)cl->self, me->raft_address);
    if (rv != 0) {
        seterr(err, errlen, "cluster: raft: %s", raft_errmsg(&cl->raft));
        goto fail;
    }
    cl->raft_ready = true;
    cl->raft.data = cl;
    raft_set_election_timeout(&cl->raft, (unsigned)conf->cluster_election_timeout_ms);
    raft_set_heartbeat_timeout(&cl->raft, (unsigned)conf->cluster_heartbeat_timeout_ms);
    raft_set_snapshot_threshold(&cl->raft, (unsigned)conf->cluster_snapshot_threshold);
    raft_set_snapshot_trailing(&cl->raft, (unsigned)conf->cluster_snapshot_trailing);
    raft_set_pre_vote(&cl->raft, true);
    raft_uv_set_connect_retry_delay(&cl->io, 200);
    uv_timer_init(loop, &cl->poll);
    cl->poll.data = cl;
    uv_timer_init(loop, &cl->kick);
    cl->kick.data = cl;
    uv_timer_init(loop, &cl->xfer);
    cl->xfer.data = cl;
    uv_timer_init(loop, &cl->change_timer);
    cl->change_timer.data = cl;
    return cl;
fail:
    if (cl->raft_ready || cl->io_ready) {
        /* Partly set up: the handles close with the loop's next turn; leak the rest rather
         * than free memory libuv may still touch. Start-up stops right after this. */
        return NULL;
    }
    kc_tls_transport_free(&cl->tlst);
    free(cl);
    return NULL;
}

int kc_cluster_start(kc_cluster_t *cl, char *err, size_t errlen)
{
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    for (size_t i = 0; i < cl->n_nodes; i++) {
        int rv = raft_configuration_add(&conf, (raft_id)cl->nodes[i].id, cl->nodes[i].raft_address,
                                        RAFT_VOTER);
        if (rv != 0) {
            raft_configuration_close(&conf);
            seterr(err, errlen, "cluster.voters: %s", raft_strerror(rv));
            return -1;
        }
    }
    int rv = cl->conf->cluster_bootstrap ? raft_bootstrap(&cl->raft, &conf) : RAFT_CANTBOOTSTRAP;
    raft_configuration_close(&conf);
    if (rv == 0)
        KC_INFO("cluster", "bootstrapped %s with %zu voters", cl->dir, cl->n_nodes);
    else if (rv != RAFT_CANTBOOTSTRAP) {
        seterr(err, errlen, "cluster: bootstrap in %s: %s", cl->dir, raft_errmsg(&cl->raft));
        return -1;
    }
    cl->started = true;
    cl->unsettled_ms = uv_now(cl->loop);
    cl->raft.legacy.step_cb = on_step;
    rv = raft_start(&cl->raft);
    if (rv != 0) {
        cl->started = false;
        seterr(err, errlen, "cluster: raft start in %s: %s (%s)", cl->dir, raft_strerror(rv),
               raft_errmsg(&cl->raft));
        return -1;
    }
    uv_timer_start(&cl->poll, on_poll, POLL_MS, POLL_MS);
    KC_INFO("cluster", "node %d started raft at %s with %u servers (applied index %llu)", cl->self,
            cl->raft.address, cl->raft.configuration.n,
            (unsigned long long)raft_last_applied(&cl->raft));
    if (cl->raft.configuration.n == 0)
        KC_INFO("cluster",
                "node %d (directory id %s) is not in a cluster yet: it waits until the leader "
                "adds it (AddRaftVoter)",
                cl->self, cl->dir_id);
    return 0;
}

static void close_step(kc_cluster_t *cl)
{
    if (--cl->close_steps > 0)
        return;
    void (*done)(void *) = cl->done;
    void *arg = cl->done_arg;
    kc_tls_transport_free(&cl->tlst);
    free(cl);
    if (done)
        done(arg);
}

static void on_poll_closed(uv_handle_t *h)
{
    close_step(h->data);
}

static void on_raft_closed(struct raft *r)
{
    kc_cluster_t *cl = r->data;
    raft_uv_close(&cl->io);
    close_step(cl);
}

void kc_cluster_close(kc_cluster_t *cl, void (*done)(void *arg), void *arg)
{
    cl->closing = true;
    cl->done = done;
    cl->done_arg = arg;
    cl->close_steps = 5;
    if (cl->change != NULL && !cl->change->answered) {
        cl->change->answered = true;
        cl->change->done(cl->change->arg, KC_CLUSTER_ESHUTDOWN, "the node is stopping");
    }
    uv_close((uv_handle_t *)&cl->change_timer, on_poll_closed);
    uv_close((uv_handle_t *)&cl->xfer, on_poll_closed);
    uv_close((uv_handle_t *)&cl->poll, on_poll_closed);
    uv_close((uv_handle_t *)&cl->kick, on_poll_closed);
    raft_close(&cl->raft, on_raft_closed);
}

/* Handing the leadership over: submissions stop, the leader waits until everything it
 * appended is committed and applied (a follower still persisting entries ignores raft's
 * TimeoutNow), then asks raft to transfer, and asks again when the target did not take over, until
 * another node leads or 3 election timeouts have passed. */
static void transfer_over(kc_cluster_t *cl, const char *how)
{
    uv_timer_stop(&cl->xfer);
    cl->xfer_active = false;
    KC_INFO("cluster", "leadership transfer %s after %d attempt(s)", how, cl->xfer_tries);
    void (*done)(void *) = cl->transfer_done;
    cl->transfer_done = NULL;
    if (done)
        done(cl->transfer_arg);
}

static void on_transferred(struct raft_transfer *req);

static void on_xfer_step(uv_timer_t *t)
{
    kc_cluster_t *cl = t->data;
    if (!cl->xfer_active || cl->closing)
        return;
    struct raft *r = &cl->raft;
    if (raft_state(r) != RAFT_LEADER) {
        transfer_over(cl, "done: another node leads");
        return;
    }
    if (uv_now(cl->loop) >= cl->xfer_deadline) {
        transfer_over(cl, "given up: this node still leads");
        return;
    }
    uint64_t again = 10;
    if (!cl->xfer_raft && raft_commit_index(r) == raft_last_index(r) &&
        raft_last_applied(r) == raft_commit_index(r)) {
        cl->transfer.data = cl;
        int rv = raft_transfer(r, &cl->transfer, 0, on_transferred);
        if (rv == 0) {
            cl->xfer_raft = true;
            cl->xfer_tries++;
        } else {
            again = 50;
        }
    }
    uv_timer_start(&cl->xfer, on_xfer_step, again, 0);
}

static void on_transferred(struct raft_transfer *req)
{
    kc_cluster_t *cl = req->data;
    cl->xfer_raft = false;
    if (cl->xfer_active && !cl->closing)
        uv_timer_start(&cl->xfer, on_xfer_step, 0, 0);
}

int kc_cluster_transfer(kc_cluster_t *cl, void (*done)(void *arg), void *arg)
{
    unsigned voters = 0;
    for (unsigned i = 0; i < cl->raft.configuration.n; i++)
        voters += cl->raft.configuration.servers[i].role == RAFT_VOTER;
    if (cl->closing || !cl->started || cl->xfer_active || raft_state(&cl->raft) != RAFT_LEADER ||
        voters < 2)
        return -1;
    cl->transfer_done = done;
    cl->transfer_arg = arg;
    cl->xfer_active = true;
    cl->xfer_tries = 0;
    cl->xfer_deadline = uv_now(cl->loop) + 3 * (uint64_t)cl->conf->cluster_election_timeout_ms;
    KC_INFO("cluster", "node %d hands its leadership to another voter", cl->self);
    uv_timer_start(&cl->xfer, on_xfer_step, 0, 0);
    return 0;
}

/* ---- Submissions --------------------------------------------------------------------------- */

static int map_status(int status)
{
    switch (status) {
    case 0:
        return KC_CLUSTER_OK;
    case RAFT_NOTLEADER:
    case RAFT_LEADERSHIPLOST:
        return KC_CLUSTER_ENOTLEADER;
    case RAFT_SHUTDOWN:
    case RAFT_CANCELED:
        return KC_CLUSTER_ESHUTDOWN;
    default:
        return KC_CLUSTER_EIO;
    }
}

static void on_applied(struct raft_apply *req, int status, void *result)
{
    (void)result;
    submit_t *s = (submit_t *)req;
    if (status != 0 && status != RAFT_SHUTDOWN && status != RAFT_LEADERSHIPLOST &&
        status != RAFT_NOTLEADER)
        KC_ERROR_LIMITED("cluster", "an entry was not committed: %s", raft_strerror(status));
    s->done(s->arg, map_status(status));
    free(s);
}

int kc_cluster_submit(kc_cluster_t *cl, const kc_cluster_part_t *v, size_t n,
                      void (*done)(void *arg, int status), void *arg)
{
    if (cl->closing)
        return KC_CLUSTER_ESHUTDOWN;
    if (cl->role != KC_CLUSTER_LEADER || raft_state(&cl->raft) != RAFT_LEADER ||
        raft_transferee(&cl->raft) != 0 || cl->xfer_active)
        return KC_CLUSTER_ENOTLEADER; /* also while handing the leadership over */
    size_t total = ENTRY_HDR;
    for (size_t i = 0; i < n; i++) {
        if (v[i].len > UINT32_MAX - 64 || total > SIZE_MAX / 2)
            return KC_CLUSTER_EIO;
        total += PART_HDR + v[i].len;
    }
    total = (total + 7) & ~(size_t)7;
    submit_t *s = calloc(1, sizeof(*s));
    uint8_t *p = raft_malloc(total);
    if (s == NULL || p == NULL) {
        free(s);
        raft_free(p);
        return KC_CLUSTER_EIO;
    }
    put32(p, ENTRY_MAGIC);
    put32(p + 4, (uint32_t)cl->self);
    put32(p + 8, (uint32_t)n);
    put32(p + 12, 0);
    put64(p + 16, cl->lead_term);
    size_t off = ENTRY_HDR;
    for (size_t i = 0; i < n; i++) {
        put32(p + off, (uint32_t)v[i].partition);
        put32(p + off + 4, (uint32_t)v[i].len);
        memcpy(p + off + PART_HDR, v[i].batch, v[i].len);
        off += PART_HDR + v[i].len;
    }
    memset(p + off, 0, total - off);
    s->done = done;
    s->arg = arg;
    struct raft_buffer buf = {p, total};
    int rv = raft_apply(&cl->raft, &s->req, &buf, 1, on_applied);
    if (rv != 0) {
        /* Refused before raft took the entry (not the leader, no disk capacity, out of
         * memory): the buffer is still ours. (An entry whose size is not a multiple of 8 is
         * refused later, after raft took it: never submitted, see above.) */
        raft_free(p);
        free(s);
        KC_WARN_LIMITED("cluster", "an entry was refused: %s", raft_strerror(rv));
        return map_status(rv);
    }
    return 0;
}

/* ---- Views ------------------------------------------------------------------------------- */

bool kc_cluster_draining(const kc_cluster_t *cl)
{
    return cl->xfer_active;
}

int32_t kc_cluster_leader(const kc_cluster_t *cl)
{
    if (!cl->started || cl->closing)
        return -1;
    raft_id lid = 0;
    const char *addr = NULL;
    raft_leader((struct raft *)&cl->raft, &lid, &addr);
    return lid ? (int32_t)lid : -1;
}

int32_t kc_cluster_self(const kc_cluster_t *cl)
{
    return cl->self;
}

void kc_cluster_status(const kc_cluster_t *cl, kc_cluster_status_t *out)
{
    struct raft *r = (struct raft *)&cl->raft;
    memset(out, 0, sizeof(*out));
    out->self = cl->self;
    out->leader = kc_cluster_leader(cl);
    out->role = cl->role;
    out->raft_state = raft_state_name(raft_state(r));
    out->term = raft_current_term(r);
    out->commit_index = raft_commit_index(r);
    out->applied_index = raft_last_applied(r);
    out->last_index = raft_last_index(r);
    out->elections = cl->elections;
    out->leadership_changes = cl->leadership_changes;
    out->snapshots = cl->snapshots;
    out->snapshots_restored = cl->restored;
    const struct raft_configuration *c = &r->configuration;
    for (unsigned i = 0; i < c->n && out->n_voters < sizeof(out->voters) / sizeof(out->voters[0]);
         i++) {
        kc_cluster_voter_t *v = &out->voters[out->n_voters++];
        const char *addr = c->servers[i].address;
        v->id = (int32_t)c->servers[i].id;
        snprintf(v->raft_address, sizeof(v->raft_address), "%.*s", (int)raft_addr_len(addr), addr);
        addr_dir_id(addr, v->directory_id);
        if (v->directory_id[0] == '\0')
            snprintf(v->directory_id, sizeof(v->directory_id), "%s",
                     kc_tls_transport_peer_dir(&cl->tlst, c->servers[i].id));
        if (v->id == cl->self)
            memcpy(v->directory_id, cl->dir_id, sizeof(v->directory_id));
        v->role = c->servers[i].role;
        raft_index m = 0;
        if (raft_state(r) == RAFT_LEADER && raft_match_index(r, c->servers[i].id, &m) == 0)
            v->match_index = (int64_t)m;
        else
            v->match_index = v->id == cl->self ? (int64_t)raft_last_index(r) : -1;
        heard_ago(cl, c->servers[i].id, &v->last_contact_ms, &v->last_caught_up_ms);
    }
}

/* The client listeners of the nodes added at runtime, from raft's configuration: read again
 * when the configuration's addresses changed since the last look. */
static void refresh_dyn(kc_cluster_t *cl)
{
    const struct raft_configuration *c = &cl->raft.configuration;
    uint64_t sig = 0xcbf29ce484222325ull ^ c->n;
    for (unsigned i = 0; i < c->n; i++) {
        sig = (sig ^ c->servers[i].id) * 0x100000001b3ull;
        for (const char *p = c->servers[i].address; p && *p; p++)
            sig = (sig ^ (uint8_t)*p) * 0x100000001b3ull;
    }
    if (sig == cl->dyn_sig)
        return;
    cl->dyn_sig = sig;
    cl->n_dyn = 0;
    for (unsigned i = 0; i < c->n; i++) {
        const char *ls = addr_listeners(c->servers[i].address);
        while (ls != NULL && *ls && cl->n_dyn < MAX_BROKERS) {
            const char *end = strchr(ls, ',');
            size_t n = end ? (size_t)(end - ls) : strlen(ls);
            char item[256];
            snprintf(item, sizeof(item), "%.*s", (int)n, ls);
            broker_t *b = &cl->dyn[cl->n_dyn];
            if (parse_endpoint(item, b) == 0) {
                b->id = (int32_t)c->servers[i].id;
                cl->n_dyn++;
            }
            ls = end ? end + 1 : ls + n;
        }
    }
}

const kc_cluster_addr_t *kc_cluster_broker(const kc_cluster_t *cl, int32_t id, const char *listener)
{
    for (size_t i = 0; i < cl->n_brokers; i++)
        if (cl->brokers[i].id == id && strcasecmp(cl->brokers[i].listener, listener) == 0)
            return &cl->brokers[i].addr;
    kc_cluster_t *m = (kc_cluster_t *)cl; /* the cache below is not part of its state */
    if (!cl->started)
        return NULL;
    refresh_dyn(m);
    for (size_t i = 0; i < m->n_dyn; i++)
        if (m->dyn[i].id == id && strcasecmp(m->dyn[i].listener, listener) == 0)
            return &m->dyn[i].addr;
    return NULL;
}

size_t kc_cluster_nodes(const kc_cluster_t *cl, int32_t *ids, size_t cap)
{
    size_t n = 0;
    const struct raft_configuration *c = &cl->raft.configuration;
    if (cl->started && c->n > 0) {
        for (unsigned i = 0; i < c->n && n < cap; i++)
            if (c->servers[i].role == RAFT_VOTER)
                ids[n++] = (int32_t)c->servers[i].id;
        return n;
    }
    for (size_t i = 0; i < cl->n_nodes && n < cap; i++)
        ids[n++] = cl->nodes[i].id;
    return n;
}

const char *kc_cluster_id(const kc_cluster_t *cl)
{
    return cl->tlst.cluster_id;
}

/* ---- Membership ---------------------------------------------------------------------------- */

static int change_status(int rv)
{
    switch (rv) {
    case 0:
        return KC_CLUSTER_OK;
    case RAFT_CANTCHANGE:
        return KC_CLUSTER_EBUSY;
    case RAFT_DUPLICATEID:
        return KC_CLUSTER_EDUPLICATE;
    case RAFT_NOTFOUND:
    case RAFT_BADID:
        return KC_CLUSTER_ENOTFOUND;
    case RAFT_DUPLICATEADDRESS:
    case RAFT_BADROLE:
    case RAFT_MALFORMED:
        return KC_CLUSTER_EINVALID;
    case RAFT_NOCONNECTION:
        return KC_CLUSTER_ETIMEDOUT;
    default:
        return map_status(rv);
    }
}

/* Answer the change's requester, once. */
static void change_answer(change_t *ch, int status, const char *msg)
{
    if (ch->answered)
        return;
    ch->answered = true;
    uv_timer_stop(&ch->cl->change_timer);
    ch->done(ch->arg, status, msg);
}

/* The change is over: raft is done with it and its requester was answered. */
static void change_free(change_t *ch)
{
    if (ch->cl->change == ch)
        ch->cl->change = NULL;
    free(ch);
}

static void on_change_timeout(uv_timer_t *t)
{
    kc_cluster_t *cl = t->data;
    if (cl->change != NULL)
        change_answer(cl->change, KC_CLUSTER_ETIMEDOUT, "the change is not committed yet");
}

static void on_changed(struct raft_change *req, int status);

/* Promote the node to voter once raft has caught it up. Raft abandons a catch-up round that
 * lasts longer than its limit (then the add fails): the limit is what is left of the
 * requester's TimeoutMs, as Kafka abandons an add whose node has not caught up by then (at
 * least 1 s, so that a node that is up gets a chance), rather than raft's 5 s default, which
 * a node receiving a large snapshot could not meet. */
static int promote(kc_cluster_t *cl, change_t *ch)
{
    uint64_t now = uv_now(cl->loop);
    uint64_t left = ch->deadline > now ? ch->deadline - now : 0;
    raft_set_max_catch_up_round_duration(&cl->raft, (unsigned)(left < 1000 ? 1000 : left));
    return raft_assign(&cl->raft, &ch->req, ch->id, RAFT_VOTER, on_changed);
}

static void on_changed(struct raft_change *req, int status)
{
    change_t *ch = req->data;
    kc_cluster_t *cl = ch->cl;
    if (status == 0 && ch->adding && !cl->closing) {
        /* A spare now, with its address in the configuration: catch it up, make it a voter. */
        ch->adding = false;
        ch->new_spare = true;
        KC_INFO("cluster", "node %llu added as a spare; catching it up to make it a voter",
                (unsigned long long)ch->id);
        int rv = promote(cl, ch);
        if (rv == 0)
            return;
        status = rv;
    }
    if (ch->dropping) {
        if (status == 0)
            KC_INFO("cluster",
                    "node %llu, which did not catch up, is no longer in the "
                    "configuration: %u servers",
                    (unsigned long long)ch->id, cl->raft.configuration.n);
        else
            KC_WARN("cluster", "node %llu, which did not catch up, stays a spare: %s",
                    (unsigned long long)ch->id, raft_strerror(status));
        change_free(ch);
        return;
    }
    if (status != 0 && ch->new_spare && !cl->closing && raft_state(&cl->raft) == RAFT_LEADER) {
        /* Raft gave up catching the node up (it did not answer for a catch-up round): the
         * add failed, and as in Kafka a failed add leaves the voters as they were, so the
         * spare it made goes too. Further changes wait for that (EBUSY). */
        KC_WARN("cluster", "the configuration change for node %llu failed: %s; removing it",
                (unsigned long long)ch->id, raft_strerror(status));
        change_answer(ch, change_status(status), raft_strerror(status));
        ch->dropping = true;
        if (raft_remove(&cl->raft, &ch->req, ch->id, on_changed) == 0)
            return;
        ch->dropping = false;
        status = RAFT_NOCONNECTION;
    }
    if (status == 0)
        KC_INFO("cluster", "the configuration change for node %llu is committed: %u servers",
                (unsigned long long)ch->id, cl->raft.configuration.n);
    else
        KC_WARN("cluster", "the configuration change for node %llu failed: %s",
                (unsigned long long)ch->id, raft_strerror(status));
    change_answer(ch, change_status(status), status ? raft_strerror(status) : NULL);
    change_free(ch);
}

/* A change can start: this node leads and has nothing else changing. */
static int change_can_start(kc_cluster_t *cl)
{
    if (cl->closing || !cl->started)
        return KC_CLUSTER_ESHUTDOWN;
    if (cl->role != KC_CLUSTER_LEADER || raft_state(&cl->raft) != RAFT_LEADER || cl->xfer_active)
        return KC_CLUSTER_ENOTLEADER;
    if (cl->change != NULL)
        return KC_CLUSTER_EBUSY;
    return 0;
}

static change_t *change_new(kc_cluster_t *cl, raft_id id, int32_t timeout_ms,
                            kc_cluster_change_cb done, void *arg)
{
    change_t *ch = calloc(1, sizeof(*ch));
    if (ch == NULL)
        return NULL;
    ch->cl = cl;
    ch->id = id;
    ch->done = done;
    ch->arg = arg;
    ch->req.data = ch;
    uint64_t timeout = timeout_ms > 0 ? (uint64_t)timeout_ms : 60000;
    ch->deadline = uv_now(cl->loop) + timeout;
    uv_timer_start(&cl->change_timer, on_change_timeout, timeout, 0);
    return ch;
}

int kc_cluster_add_voter(kc_cluster_t *cl, int32_t id, const char *directory_id,
                         const char *raft_address, const char *listeners, int32_t timeout_ms,
                         kc_cluster_change_cb done, void *arg)
{
    int rc = change_can_start(cl);
    if (rc != 0)
        return rc;
    broker_t probe; /* host:port, a host name or an address */
    if (id < 1 || strlen(directory_id) != 22 || strchr(raft_address, ' ') ||
        strchr(listeners, ' ') || strstr(raft_address, "://") ||
        parse_endpoint(raft_address, &probe) != 0)
        return KC_CLUSTER_EINVALID;
    const struct raft_server *srv = NULL;
    for (unsigned i = 0; i < cl->raft.configuration.n; i++)
        if (cl->raft.configuration.servers[i].id == (raft_id)id)
            srv = &cl->raft.configuration.servers[i];
    if (srv != NULL && srv->role == RAFT_VOTER)
        return KC_CLUSTER_EDUPLICATE;
    change_t *ch = change_new(cl, (raft_id)id, timeout_ms, done, arg);
    if (ch == NULL)
        return KC_CLUSTER_EIO;
    int n = snprintf(ch->address, sizeof(ch->address), "%s %s %s", raft_address, directory_id,
                     listeners);
    int rv;
    if (n < 0 || (size_t)n >= sizeof(ch->address)) {
        rv = RAFT_MALFORMED;
    } else if (srv != NULL) {
        /* A spare or standby from an add that did not finish: promote it. */
        rv = promote(cl, ch);
    } else {
        ch->adding = true;
        rv = raft_add(&cl->raft, &ch->req, (raft_id)id, ch->address, on_changed);
    }
    if (rv != 0) {
        uv_timer_stop(&cl->change_timer);
        free(ch);
        return change_status(rv);
    }
    cl->change = ch;
    KC_INFO("cluster", "adding node %d (raft %s, directory id %s, listeners %s)", id, raft_address,
            directory_id, listeners[0] ? listeners : "none");
    return 0;
}

int kc_cluster_remove_voter(kc_cluster_t *cl, int32_t id, const char *directory_id,
                            int32_t timeout_ms, kc_cluster_change_cb done, void *arg)
{
    int rc = change_can_start(cl);
    if (rc != 0)
        return rc;
    const struct raft_configuration *c = &cl->raft.configuration;
    const struct raft_server *srv = NULL;
    unsigned voters = 0;
    for (unsigned i = 0; i < c->n; i++) {
        voters += c->servers[i].role == RAFT_VOTER;
        if (c->servers[i].id == (raft_id)id)
            srv = &c->servers[i];
    }
    if (srv == NULL)
        return KC_CLUSTER_ENOTFOUND;
    char known[23];
    addr_dir_id(srv->address, known);
    if (known[0] == '\0')
        snprintf(known, sizeof(known), "%s", kc_tls_transport_peer_dir(&cl->tlst, srv->id));
    if (srv->id == (raft_id)cl->self)
        memcpy(known, cl->dir_id, sizeof(known));
    if (known[0] != '\0' && strcmp(known, directory_id) != 0)
        return KC_CLUSTER_ENOTFOUND;
    if (srv->role == RAFT_VOTER && voters == 1)
        return KC_CLUSTER_EINVALID;
    change_t *ch = change_new(cl, (raft_id)id, timeout_ms, done, arg);
    if (ch == NULL)
        return KC_CLUSTER_EIO;
    int rv = raft_remove(&cl->raft, &ch->req, (raft_id)id, on_changed);
    if (rv != 0) {
        uv_timer_stop(&cl->change_timer);
        free(ch);
        return change_status(rv);
    }
    cl->change = ch;
    KC_INFO("cluster", "removing node %d%s", id,
            id == cl->self ? " (this node: it steps down once that is committed)" : "");
    return 0;
}
