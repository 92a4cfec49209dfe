/* bench.h - kcoord-bench's shared parts: a pipelining Kafka client on libuv, statistics, output.
 *
 * The client speaks the Kafka protocol with kcoord's own generated codecs (src/proto): a request
 * is a generated request struct, encoded with its header into the connection's output buffer;
 * a response is decoded by the generated decoder of the API and version it answers into the
 * connection's arena and handed to the callback given with the request. Many requests may be in
 * flight on one connection (pipelining); Kafka answers them in request order, so responses are
 * matched to requests by position, and the correlation id is checked.
 *
 * Writes are batched: kc_bench_send only appends to the connection's output buffer and marks it
 * dirty; a uv_prepare handle writes every dirty connection's buffer in one uv_write before the
 * loop polls, with at most one write in flight per connection.
 *
 * Everything runs on one libuv loop and one thread. Set-up steps (ApiVersions, FindCoordinator,
 * CreateTopics, connecting) are written as blocking calls that run the loop until their answer
 * arrives (kc_bench_run_until), so they can only be called from outside loop callbacks.
 *
 * Other modules: bench_stats.c (histograms, error counts, JSON, /proc readers), bench_group.c
 * (classic group members: join, sync, heartbeat), bench_consumer.c (KIP-848 members),
 * bench_probe.c (the stall probe: a thread of its own with a blocking socket, the one part that
 * does not run on the loop), bench_echo.c (the network-floor server), kcoord_bench.c (the
 * command line and the scenarios).
 */
#ifndef KC_BENCH_H
#define KC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "proto/gen_api.h"

/* Callback errors that are not Kafka error codes. */
enum {
    KC_BENCH_ECONN = -1000,   /* the connection failed or was closed with the request pending */
    KC_BENCH_EDECODE = -1001, /* the response did not decode */
};

enum { KC_BENCH_MAX_KEY = 128 }; /* API keys the version table has room for */

typedef struct kc_bench_s kc_bench_t;
typedef struct kc_bench_conn_s kc_bench_conn_t;

/* Called once per request: err is 0 and `resp` points to the decoded response struct of the
 * request's API (valid only during the call), or err is KC_BENCH_ECONN / KC_BENCH_EDECODE and
 * `resp` is NULL. `sent_ns` is the uv_hrtime() at which the request was queued. The callback may
 * send more requests, on this connection or others, but must not close this one. */
typedef void (*kc_bench_resp_fn)(kc_bench_conn_t *c, void *arg, int err, const void *resp,
                                 uint64_t sent_ns);

/* The client: one loop, the versions the server offers, every open connection. */
struct kc_bench_s {
    uv_loop_t *loop;
    uv_prepare_t flusher; /* writes dirty connections before the loop polls */
    uv_timer_t deadline;  /* kc_bench_run_until's timeout */
    bool timed_out;
    kc_bench_conn_t *dirty; /* connections with bytes to write, linked by next_dirty */
    kc_bench_conn_t *conns; /* every connection until kc_bench_fini, linked by next */
    const char *client_id;  /* request header client id */
    bool have_versions;     /* srv_min/srv_max hold an ApiVersions answer */
    int16_t srv_min[KC_BENCH_MAX_KEY];
    int16_t srv_max[KC_BENCH_MAX_KEY]; /* -1: the server does not offer the API */
    size_t open_conns;                 /* connections whose handle is not closed yet */
    uint64_t requests_sent;            /* over the client's life */
};

/* One connection to a server. Owned by the client and valid until kc_bench_fini, even once
 * closed (kc_bench_conn_close, or the server closed it): sending on it then fails. */
struct kc_bench_conn_s {
    uv_tcp_t tcp;
    uv_connect_t connect_req;
    uv_write_t write_req;
    kc_bench_t *b;
    kc_bench_conn_t *next;       /* in b->conns */
    kc_bench_conn_t *next_dirty; /* in b->dirty while `dirty` */
    bool connected, closing, closed, failed, dirty, writing;
    kc_writer_t out;                 /* encoded requests not yet handed to a write */
    uint8_t *wbuf;                   /* the bytes of the write in flight (owned) */
    uint8_t *rbuf;                   /* received bytes not yet consumed */
    size_t rlen, rcap;               /* bytes held / allocated in rbuf */
    struct kc_bench_pending_s *pend; /* ring of requests awaiting their response */
    size_t pcap, phead, pcount;
    int32_t next_corr;
    kc_arena_t arena; /* decoded responses; reset after each callback */
};

/* Initialise the client on `loop`. Returns 0 or -1. */
int kc_bench_init(kc_bench_t *b, uv_loop_t *loop, const char *client_id);
/* Close every connection (failing their pending requests with KC_BENCH_ECONN), stop the flusher,
 * run the loop until every handle is closed and free the connections. Handles the caller opened
 * must be closed already or be closed by the callbacks this runs. */
void kc_bench_fini(kc_bench_t *b);

/* Resolve "host:port" ("[v6]:port" too) into `out`. Returns 0, or -1 after printing why. */
int kc_bench_resolve(const char *hostport, struct sockaddr_storage *out);
/* The same for a host and a port given apart (as FindCoordinator returns them). */
int kc_bench_resolve_hp(const char *host, int port, struct sockaddr_storage *out);

/* Open `n` connections to `addr`, at most 64 connecting at once, and send ApiVersions on each
 * (as real clients do, and so that the server has allocated what a used connection costs).
 * The first ApiVersions answer fills b->srv_min/srv_max when they are not known yet. Blocks
 * (runs the loop). Returns 0, or -1 after printing why (connections opened so far stay in
 * `out` and are closed by kc_bench_fini). */
int kc_bench_connect_all(kc_bench_t *b, const struct sockaddr *addr, size_t n,
                         kc_bench_conn_t **out, double timeout_s);

/* The version of `key` to use: the highest that kcoord's codecs, the server and `cap` allow.
 * Returns -1 (after printing why) when there is none. */
int16_t kc_bench_version(kc_bench_t *b, int16_t key, int16_t cap);

/* Queue a request: `req` is the generated request struct of API `key` (encoded now; it may be
 * reused as soon as this returns). Returns 0, or -1 when the connection is closing or failed
 * (the callback is then not called). */
int kc_bench_send(kc_bench_conn_t *c, int16_t key, int16_t version, const void *req,
                  kc_bench_resp_fn fn, void *arg);

/* Requests on `c` still awaiting their response. */
static inline size_t kc_bench_inflight(const kc_bench_conn_t *c)
{
    return c->pcount;
}

/* Close a connection; pending requests are answered with KC_BENCH_ECONN first. */
void kc_bench_conn_close(kc_bench_conn_t *c);

/* Run the loop until *flag becomes true (returns 0) or `timeout_s` passes (returns -1).
 * Must not be called from a loop callback. */
int kc_bench_run_until(kc_bench_t *b, const bool *flag, double timeout_s);
/* Run the loop for `s` seconds. */
void kc_bench_sleep(kc_bench_t *b, double s);

/* Send one request and wait for its answer, which `fn` handles as for kc_bench_send.
 * Returns 0 once `fn` ran, or -1 on timeout or when the request could not be sent. */
int kc_bench_call(kc_bench_conn_t *c, int16_t key, int16_t version, const void *req,
                  kc_bench_resp_fn fn, void *arg, double timeout_s);

/* ---- Set-up requests (blocking) ------------------------------------------------------------ */

/* Where FindCoordinator sends the groups: one host and port. */
typedef struct kc_bench_coord_s {
    char host[256];
    int32_t port;
    int32_t node_id;
} kc_bench_coord_t;

/* Ask FindCoordinator (batched from v4) for every group in `groups`, retrying the retriable
 * errors (COORDINATOR_NOT_AVAILABLE while Kafka creates __consumer_offsets, and so on) for up to
 * `timeout_s`. All groups must have the same coordinator (what a single node answers); a
 * different answer is reported as unsupported. Returns 0 with `out` filled, or -1. */
int kc_bench_find_coordinator(kc_bench_conn_t *c, char **groups, size_t n, kc_bench_coord_t *out,
                              double timeout_s);

/* Wait until the coordinator serves every group: OffsetFetch (batched from v8) until no group
 * is answered COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR (a
 * fresh Kafka broker answers FindCoordinator before its __consumer_offsets partitions are
 * led and loaded). Returns 0, or -1 on another error or after `timeout_s`. */
int kc_bench_await_groups(kc_bench_conn_t *c, char **groups, size_t n, double timeout_s);

/* CreateTopics for one topic with `partitions` partitions, replication factor 1;
 * TOPIC_ALREADY_EXISTS counts as success. Then waits until Metadata shows the topic with at
 * least that many partitions. Returns 0 or -1. */
int kc_bench_create_topic(kc_bench_conn_t *c, const char *topic, int32_t partitions,
                          double timeout_s);

/* ---- Statistics (bench_stats.c) ------------------------------------------------------------ */

/* A latency histogram in log-linear buckets: exact below 128 ns, then 64 buckets per power of
 * two (1.6 % resolution), like HdrHistogram with two significant digits. */
enum { KC_HIST_BUCKETS = 64 * 58 + 128 };

/* Error counts: Kafka codes -1..KC_ERR_CODES-2 by code, then one slot each for
 * KC_BENCH_ECONN, KC_BENCH_EDECODE and everything else. */
enum {
    KC_ERR_CODES = 132,
    KC_ERR_SLOT_CONN = KC_ERR_CODES,
    KC_ERR_SLOT_DECODE,
    KC_ERR_SLOT_OTHER,
    KC_ERR_SLOTS,
};

typedef struct kc_bench_stats_s {
    uint64_t n;      /* latencies recorded */
    uint64_t max_ns; /* largest latency recorded */
    double sum_ns;
    uint64_t hist[KC_HIST_BUCKETS];
    uint64_t errors[KC_ERR_SLOTS];
    uint64_t nerrors;
} kc_bench_stats_t;

void kc_stats_reset(kc_bench_stats_t *s);
void kc_stats_record(kc_bench_stats_t *s, uint64_t latency_ns);
/* Count one error: a Kafka code, or KC_BENCH_ECONN / KC_BENCH_EDECODE. */
void kc_stats_error(kc_bench_stats_t *s, int code);
/* The latency at quantile q (0..1) in ns: the upper bound of its bucket, at most max_ns. */
uint64_t kc_stats_quantile(const kc_bench_stats_t *s, double q);
/* A Kafka error code's name (or "UNKNOWN"), for human-readable output. */
const char *kc_err_name(int code);

/* A JSON object built one member at a time into a growable buffer; kc_json_end prints it as
 * one line on stdout. Keys and string values are escaped. */
typedef struct kc_json_s {
    char *buf;
    size_t len, cap;
    bool first;
} kc_json_t;

void kc_json_begin(kc_json_t *j, const char *scenario);
void kc_json_str(kc_json_t *j, const char *key, const char *v);
void kc_json_int(kc_json_t *j, const char *key, long long v);
void kc_json_num(kc_json_t *j, const char *key, double v);
void kc_json_null(kc_json_t *j, const char *key);
/* "errors": {"code": count, ...} (non-zero slots; "other" for the last slot) and
 * "error_total". */
void kc_json_errors(kc_json_t *j, const char *key, const kc_bench_stats_t *s);
/* "<prefix>p50_ms", p99, p999, max and mean, in milliseconds. */
void kc_json_latency(kc_json_t *j, const char *prefix, const kc_bench_stats_t *s);
void kc_json_end(kc_json_t *j);

/* Print the latency line and the error lines of `s` for humans, each line starting with
 * `indent`. */
void kc_stats_print(const kc_bench_stats_t *s, const char *indent);

/* /proc readers: utime+stime of `pid` in seconds, or -1; VmRSS in KiB, or -1. */
double kc_proc_cpu_s(int pid);
long kc_proc_rss_kb(int pid);

/* ---- Classic group members (bench_group.c) ------------------------------------------------- */

typedef struct kc_grp_s kc_grp_t;
typedef struct kc_grpset_s kc_grpset_t;

/* How the members of a group set behave. */
typedef struct kc_grp_opts_s {
    const char *topic;    /* subscribed topic; the leader assigns its partitions */
    int32_t partitions;   /* of that topic */
    int32_t session_ms;   /* JoinGroup session timeout */
    int32_t rebalance_ms; /* JoinGroup rebalance timeout */
    double hb_joining_s;  /* heartbeat interval while the group has not completed */
    double hb_stable_s;   /* heartbeat interval once it completed */
    int16_t v_join, v_sync, v_heartbeat, v_commit;
    /* Populating, not measuring: a member that got its id (MEMBER_ID_REQUIRED) waits until
     * every member of its group has one, then they all join together, so that the first
     * generation usually has them all (with an initial rebalance delay of 0, members that join
     * apart make generations that only heartbeats, every hb_joining_s, resolve). */
    bool id_barrier;
} kc_grp_opts_t;

/* Create `ngroups` groups named names[i] (copied) of `size` members each. Connections are
 * attached by kc_grpset_join_lanes or kc_grpset_add_member. Returns NULL on allocation
 * failure. */
kc_grpset_t *kc_grpset_new(kc_bench_t *b, char **names, size_t ngroups, int32_t size,
                           const kc_grp_opts_t *opts);
/* Stop: close the members' timers and ignore every answer from now on. Then close the
 * connections (kc_bench_fini, which also runs the loop until the timers are closed), and only
 * then kc_grpset_free: pending requests point at members until their connection is closed. */
void kc_grpset_stop(kc_grpset_t *s);
void kc_grpset_free(kc_grpset_t *s);

/* Join every group: the connections are cut into lanes of `size` connections (nconns must be a
 * multiple of the group size); lane l joins groups l, l + lanes, ... one after another, member m
 * of a group on the lane's connection m, so that a JoinGroup held by the coordinator never
 * waits behind another group's on the same connection. A group is complete when the leader's
 * JoinGroup answer listed all its members and every member holds a SyncGroup assignment of that
 * generation. Sets *done when every group completed. */
void kc_grpset_join_lanes(kc_grpset_t *s, kc_bench_conn_t **conns, size_t nconns, bool *done);

/* Add one member to group `g` on connection `c` (the rolling join): the group expects one
 * member more and is complete again when all hold an assignment of a generation with them all.
 * Sets *done then. */
void kc_grpset_add_member(kc_grpset_t *s, size_t g, kc_bench_conn_t *c, bool *done);

/* Switch every member to heartbeating every `interval_s`, starting at a random point within
 * the first interval (spreads the load evenly). */
void kc_grpset_set_interval(kc_grpset_t *s, double interval_s);

/* Measure heartbeats answered from now on into `st` (NULL stops measuring). */
void kc_grpset_measure(kc_grpset_t *s, kc_bench_stats_t *st);

/* Each group's first member commits `partitions` partitions of the topic (generation and member
 * id of its membership), at most `window` requests in flight in all; *done when all answered.
 * Errors go to `st`. */
void kc_grpset_commit_all(kc_grpset_t *s, int32_t partitions, size_t window, kc_bench_stats_t *st,
                          bool *done);

/* Every group leaves: one LeaveGroup (v3+, all members of the group at once) per group, at
 * most `window` in flight; heartbeats stop first and later answers to the members' requests
 * are ignored. *done when all answered; errors go to `st`. Returns -1 (nothing sent) when
 * version < 3. Leaving keeps a shared server (Kafka across runs) from expiring thousands of
 * sessions, and rebalancing, during the next run. */
int kc_grpset_leave_all(kc_grpset_t *s, int16_t version, size_t window, kc_bench_stats_t *st,
                        bool *done);

/* Counters of the whole set. */
typedef struct kc_grp_counters_s {
    uint64_t joins, syncs, heartbeats; /* requests answered */
    uint64_t rebalance_signals;        /* REBALANCE_IN_PROGRESS answers (expected) */
    uint64_t member_id_required;       /* MEMBER_ID_REQUIRED answers (expected) */
    uint64_t hb_late;                  /* heartbeat due while the previous one was pending */
    uint64_t hb_late_measured;         /* the same, while measuring */
    uint64_t generations;              /* distinct generations the leaders saw */
    kc_bench_stats_t errors;           /* unexpected errors (latencies unused) */
} kc_grp_counters_t;

const kc_grp_counters_t *kc_grpset_counters(const kc_grpset_t *s);
/* Completion time of group g in seconds since its join started (or since add_member), or -1. */
double kc_grpset_group_time(const kc_grpset_t *s, size_t g);
size_t kc_grpset_completed(const kc_grpset_t *s);

/* ---- KIP-848 consumer group members (bench_consumer.c) ------------------------------------- */

typedef struct kc_cgrp_s kc_cgrp_t;

typedef struct kc_cgrp_opts_s {
    int32_t partitions;   /* of the subscribed topic: a stable group holds each exactly once */
    int32_t rebalance_ms; /* sent when joining */
    uint64_t hb_ms;       /* the bench's heartbeat interval (the server's is not used) */
    int16_t version;      /* ConsumerGroupHeartbeat version; v1+: member ids made here */
    const char *assignor; /* server assignor named when joining */
} kc_cgrp_opts_t;

typedef struct kc_cgrp_counters_s {
    uint64_t sent, heartbeats;  /* heartbeats sent, answered (leaving not counted) */
    uint64_t immediate;         /* sent at once after an answer that changed something */
    uint64_t assignments;       /* answers that changed a member's assignment */
    uint64_t epoch_changes;     /* answers that changed a member's epoch */
    uint64_t hb_late;           /* interval passed with the previous heartbeat in flight */
    uint64_t describes;         /* ConsumerGroupDescribe answers (confirming stability) */
    uint64_t not_confirmed;     /* ... that did not confirm what the members saw */
    int32_t server_interval_ms; /* heartbeat interval the coordinator returned (last) */
    kc_bench_stats_t errors;    /* error answers and transport errors */
} kc_cgrp_counters_t;

/* One consumer group `group` of up to `capacity` members subscribed to `topic` (names copied).
 * Returns NULL on allocation failure. */
kc_cgrp_t *kc_cgrp_new(kc_bench_t *b, const char *group, const char *topic, int32_t capacity,
                       const kc_cgrp_opts_t *opts);
/* `n` members join at once, member i on conns[i]; *done when the group is stable (see
 * bench_consumer.c) with all of them, which ConsumerGroupDescribe on `admin` (a connection no
 * member uses) confirms. The time counts from this call. */
void kc_cgrp_join(kc_cgrp_t *g, kc_bench_conn_t **conns, int32_t n, kc_bench_conn_t *admin,
                  bool *done);
/* One more member joins on `c` (the rolling join); *done when the group is stable again with
 * it. The time counts from this call. */
void kc_cgrp_add_member(kc_cgrp_t *g, kc_bench_conn_t *c, bool *done);
/* Restart every member's heartbeat timer at a random point within one interval. */
void kc_cgrp_spread(kc_cgrp_t *g);
/* Seconds from the last join or add_member until stable, or -1 when it is not. */
double kc_cgrp_time(const kc_cgrp_t *g);
/* The highest member epoch any answer carried (the group epoch once stable). */
int32_t kc_cgrp_epoch(const kc_cgrp_t *g);
/* Members that acknowledged their assignment at that epoch. */
int32_t kc_cgrp_acked(const kc_cgrp_t *g);
const kc_cgrp_counters_t *kc_cgrp_counters(const kc_cgrp_t *g);

/* What ConsumerGroupDescribe says of the group. */
typedef struct kc_cgrp_describe_s {
    int error; /* Kafka error code, or KC_BENCH_ECONN / KC_BENCH_EDECODE */
    char state[32];
    int32_t group_epoch, assignment_epoch;
    int32_t members, members_at_epoch; /* members, and those whose epoch is the group epoch */
} kc_cgrp_describe_t;

/* The ConsumerGroupDescribe answer that confirmed the last completion (or, before one, the
 * last that did not). */
const kc_cgrp_describe_t *kc_cgrp_confirmed(const kc_cgrp_t *g);
/* Every member leaves (heartbeat with epoch -1); errors go to `st`, *done when all answered.
 * Heartbeats stop first and later answers to them are ignored. */
void kc_cgrp_leave(kc_cgrp_t *g, kc_bench_stats_t *st, bool *done);
/* As kc_grpset_stop and kc_grpset_free. */
void kc_cgrp_stop(kc_cgrp_t *g);
void kc_cgrp_free(kc_cgrp_t *g);

/* ---- The stall probe (bench_probe.c) ------------------------------------------------------- */

/* Phases of a probed run: each round trip counts in the phase current when it was sent. */
enum {
    KC_PROBE_IDLE,    /* before the measured work: the floor */
    KC_PROBE_JOIN,    /* from the first join heartbeat until the group is stable */
    KC_PROBE_STEADY,  /* then, while the stable group heartbeats (before a rolling join) */
    KC_PROBE_ROLLING, /* from the rolling member's first heartbeat until stable again */
    KC_PROBE_AFTER,   /* after the last measured phase: not recorded; a round trip sent now
                       * is abandoned when the probe stops */
    KC_PROBE_PHASES,
};

typedef struct kc_probe_s kc_probe_t;

/* Connect to `addr` and start probing on a thread of its own: ApiVersions v0 every
 * `interval_ms`, one in flight, in phase KC_PROBE_IDLE. An answer may take `timeout_s` before
 * the probe gives up. Returns NULL (after printing why) when it cannot connect. */
kc_probe_t *kc_probe_start(const struct sockaddr *addr, double interval_ms, double timeout_s);
/* Round trips sent from now on count in `phase`. */
void kc_probe_phase(kc_probe_t *p, int phase);
/* Stop the thread (after the request in flight is answered, unless it was sent in
 * KC_PROBE_AFTER). Returns 0, or the error that
 * stopped the probe early (a Kafka code, KC_BENCH_ECONN or KC_BENCH_EDECODE). The statistics
 * may be read once this returned. */
int kc_probe_stop(kc_probe_t *p);
const kc_bench_stats_t *kc_probe_stats(const kc_probe_t *p, int phase);
/* Stop if needed, close, free. NULL is fine. */
void kc_probe_free(kc_probe_t *p);

/* ---- The echo server (bench_echo.c) -------------------------------------------------------- */

/* Serve on `listen` ("host:port", port 0 = any) until SIGINT or SIGTERM: ApiVersions gets
 * kcoord's codec table, FindCoordinator this server's own address for every key, and any other
 * request the empty response of its API and version. Prints "listening on HOST:PORT" on
 * stderr. Returns the exit status. */
int kc_bench_echo_main(const char *listen);

#endif
