/* kcoord_bench.c - kcoord-bench: a load generator for Kafka group coordinators (kcoord or Kafka).
 *
 *     kcoord-bench commit     [--groups G] [--partitions P] [--connections C] [--depth D]
 *                             [--duration S | --count N] [--warmup S]
 *     kcoord-bench join       [--members N] [--rolling] [--heartbeat-ms MS]
 *                             [--protocol classic|consumer [--stall-probe] [--no-leave]]
 *     kcoord-bench heartbeat  [--members M] [--group-size K] [--rate R] [--duration S]
 *     kcoord-bench memory     [--groups G] [--group-size K] [--offsets N] --server-pid PID
 *     kcoord-bench echo       [--listen HOST:PORT]
 *     kcoord-bench fsync-rate DIR [--duration S] [--size BYTES]
 *
 * Common options: --bootstrap HOST:PORT (127.0.0.1:9092), --server-pid PID (CPU and RSS from
 * /proc), --topic NAME (kcoord-bench), --create-topic (CreateTopics first, tolerating
 * TOPIC_ALREADY_EXISTS), --topic-partitions N (100), --group-prefix P, --label TEXT,
 * --session-ms, --rebalance-ms, --timeout S. `kcoord-bench --help` lists them all.
 *
 * Every scenario starts the same way: connect to the bootstrap address, ApiVersions (the
 * versions used are the highest both sides know), CreateTopics when asked, FindCoordinator for
 * every group (batched), then connections to the coordinator it names. It prints its results
 * for humans, then one line of JSON (a line starting with '{') for tests/bench/bench.py. The exit
 * status is 0 when the scenario finished with no error answer at all, 1 otherwise, 2 for a
 * usage error.
 *
 * Scenarios:
 * - commit: "simple consumer" commits (generation -1, empty member id, which Kafka accepts for
 *   groups without members) of P partitions per request, round-robin over G groups, C
 *   connections each keeping D requests in flight. Measures the requests completed in the
 *   measurement window (after the warm-up): requests/s, offsets/s, latency quantiles.
 * - join: N members join one new group at once (each on its own connection); the time until
 *   every member holds an assignment of a generation that has them all. --rolling then adds one
 *   member to the stable group and times the same until all N+1 hold their new assignment.
 *   --protocol consumer: the same with KIP-848 members (bench_consumer.c: ConsumerGroupHeartbeat,
 *   the server-side "uniform" assignor); the time until the group is stable: every member
 *   acknowledged its assignment at the group epoch, the assignments are balanced and hold every
 *   partition of the topic exactly once, and ConsumerGroupDescribe confirms it.
 *   --stall-probe: meanwhile one more connection, on a thread of its own (bench_probe.c), sends
 *   ApiVersions every --stall-probe-ms (5) with one in flight, for --stall-probe-idle seconds
 *   (1) before the join (the floor), then from the first join heartbeat until the group is
 *   stable (and again during the rolling join); its round trips (median, p99, max) show how
 *   long the coordinator's event loop kept other requests waiting. --no-leave: the members do
 *   not leave at the end (the connections just close), for a server that is thrown away next.
 * - heartbeat: M members in groups of K join (in lanes, see bench_group.c), then heartbeat at a
 *   total target rate; achieved rate, latency, and the server's CPU time per 10 000 hb/s.
 * - memory: G x K members join and stay, then their groups commit N offsets; the server's VmRSS
 *   before, after the members and after the offsets gives bytes per member and per offset.
 *   Measured also before the C connections are opened, which gives bytes per connection and
 *   per member with its share of the connections (with C = G x K: a member with its own).
 * - echo: the network floor server (bench_echo.c); run `commit` against it.
 * - fsync-rate: write(small) + fdatasync in a loop on a file in DIR: the durability floor.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "proto/errors.h"

typedef struct opts_s {
    const char *scenario;
    const char *bootstrap;
    const char *label;
    const char *topic;
    const char *group_prefix;
    const char *listen;
    const char *dir;
    const char *probe;
    const char *protocol;
    int server_pid;
    bool create_topic, rolling, stall_probe, no_leave;
    long topic_partitions;
    long groups, partitions, connections, depth, count;
    long members, group_size, offsets, size;
    double duration, warmup, rate, heartbeat_ms, timeout, probe_ms, probe_idle;
    long session_ms, rebalance_ms;
} opts_t;

/* Everything a scenario needs after the common set-up. */
typedef struct ctx_s {
    opts_t *o;
    uv_loop_t loop;
    kc_bench_t b;
    kc_bench_conn_t *boot;
    kc_bench_coord_t coord;
    struct sockaddr_storage coord_addr;
    char **groups;
    size_t ngroups;
    char coord_str[300];
} ctx_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kcoord-bench SCENARIO [options]\n"
            "scenarios:\n"
            "  commit      OffsetCommit throughput and latency (simple-consumer commits)\n"
            "  join        N members join one group; --rolling: then one more joins\n"
            "  heartbeat   M members heartbeat at a target rate; server CPU per 10k hb/s\n"
            "  memory      server RSS per member and per committed offset (--server-pid)\n"
            "  echo        the network-floor server (--listen HOST:PORT)\n"
            "  fsync-rate DIR   write+fdatasync per second in DIR\n"
            "common options:\n"
            "  --bootstrap HOST:PORT   server to start from (127.0.0.1:9092)\n"
            "  --server-pid PID        read the server's CPU time and RSS from /proc\n"
            "  --topic NAME            topic to commit to and subscribe to (kcoord-bench)\n"
            "  --create-topic          create it first (TOPIC_ALREADY_EXISTS is fine)\n"
            "  --topic-partitions N    its partitions when created (100)\n"
            "  --group-prefix P        group names start with P (default: unique per run)\n"
            "  --label TEXT            copied into the JSON result\n"
            "  --timeout S             bound on set-up and join phases (600)\n"
            "  --session-ms MS, --rebalance-ms MS   JoinGroup timeouts\n"
            "commit:    --groups G (100) --partitions P (10) --connections C (8) --depth D (16)\n"
            "           --duration S (10) | --count N, --warmup S (1)\n"
            "join:      --members N (100) --rolling --heartbeat-ms MS (100)\n"
            "           --protocol classic|consumer (classic): JoinGroup/SyncGroup/Heartbeat,\n"
            "           or KIP-848 ConsumerGroupHeartbeat with the server assignor uniform\n"
            "           consumer only: --stall-probe: ApiVersions round trips on a connection\n"
            "           of its own during the join (--stall-probe-ms MS (5) apart, one in\n"
            "           flight; --stall-probe-idle S (1): first, before the join, the floor);\n"
            "           --no-leave: the members do not leave at the end\n"
            "heartbeat: --members M (10000) --group-size K (10) --rate R (10000/s)\n"
            "           --connections C (1000) --duration S (10) --warmup S (2)\n"
            "memory:    --groups G (10000) --group-size K (10) --offsets N (1000000)\n"
            "           --connections C (1000) --heartbeat-ms MS (20000)\n"
            "           --probe CMD: also run CMD at each point; its last number is bytes\n"
            "fsync-rate DIR: --duration S (3) --size BYTES (100)\n");
}

static int parse_long(const char *name, const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "kcoord-bench: %s: expected an integer in %ld..%ld, got \"%s\"\n", name,
                min, max, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *name, const char *s, double min, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= min)) {
        fprintf(stderr, "kcoord-bench: %s: expected a number >= %g, got \"%s\"\n", name, min, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Parse argv into `o`. Returns 0, 1 for --help, or -1 on a usage error. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    if (argc < 2)
        return -1;
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        return 1;
    o->scenario = argv[1];
    int i = 2;
    if (strcmp(o->scenario, "fsync-rate") == 0) {
        if (argc < 3 || argv[2][0] == '-')
            return -1;
        o->dir = argv[2];
        i = 3;
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) != 0)
            return -1;
        if (eq != NULL) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
        }
        if (strcmp(name, "--help") == 0)
            return 1;
        if (strcmp(name, "--create-topic") == 0) {
            o->create_topic = true;
            continue;
        }
        if (strcmp(name, "--rolling") == 0) {
            o->rolling = true;
            continue;
        }
        if (strcmp(name, "--stall-probe") == 0) {
            o->stall_probe = true;
            continue;
        }
        if (strcmp(name, "--no-leave") == 0) {
            o->no_leave = true;
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "kcoord-bench: %s needs a value\n", name);
                return -1;
            }
            val = argv[++i];
        }
        long l;
        int rc = 0;
        if (strcmp(name, "--bootstrap") == 0)
            o->bootstrap = val;
        else if (strcmp(name, "--label") == 0)
            o->label = val;
        else if (strcmp(name, "--topic") == 0)
            o->topic = val;
        else if (strcmp(name, "--group-prefix") == 0)
            o->group_prefix = val;
        else if (strcmp(name, "--listen") == 0)
            o->listen = val;
        else if (strcmp(name, "--probe") == 0)
            o->probe = val;
        else if (strcmp(name, "--protocol") == 0)
            o->protocol = val;
        else if (strcmp(name, "--server-pid") == 0)
            rc = parse_long(name, val, 1, 1L << 30, &l), o->server_pid = (int)l;
        else if (strcmp(name, "--topic-partitions") == 0)
            rc = parse_long(name, val, 1, 100000, &o->topic_partitions);
        else if (strcmp(name, "--groups") == 0)
            rc = parse_long(name, val, 1, 10000000, &o->groups);
        else if (strcmp(name, "--partitions") == 0)
            rc = parse_long(name, val, 1, 100000, &o->partitions);
        else if (strcmp(name, "--connections") == 0)
            rc = parse_long(name, val, 1, 100000, &o->connections);
        else if (strcmp(name, "--depth") == 0)
            rc = parse_long(name, val, 1, 100000, &o->depth);
        else if (strcmp(name, "--count") == 0)
            rc = parse_long(name, val, 1, 1L << 40, &o->count);
        else if (strcmp(name, "--members") == 0)
            rc = parse_long(name, val, 1, 10000000, &o->members);
        else if (strcmp(name, "--group-size") == 0)
            rc = parse_long(name, val, 1, 100000, &o->group_size);
        else if (strcmp(name, "--offsets") == 0)
            rc = parse_long(name, val, 1, 1L << 34, &o->offsets);
        else if (strcmp(name, "--size") == 0)
            rc = parse_long(name, val, 1, 1 << 24, &o->size);
        else if (strcmp(name, "--session-ms") == 0)
            rc = parse_long(name, val, 1, INT32_MAX, &o->session_ms);
        else if (strcmp(name, "--rebalance-ms") == 0)
            rc = parse_long(name, val, 1, INT32_MAX, &o->rebalance_ms);
        else if (strcmp(name, "--duration") == 0)
            rc = parse_double(name, val, 0.001, &o->duration);
        else if (strcmp(name, "--warmup") == 0)
            rc = parse_double(name, val, 0, &o->warmup);
        else if (strcmp(name, "--rate") == 0)
            rc = parse_double(name, val, 0.001, &o->rate);
        else if (strcmp(name, "--heartbeat-ms") == 0)
            rc = parse_double(name, val, 1, &o->heartbeat_ms);
        else if (strcmp(name, "--timeout") == 0)
            rc = parse_double(name, val, 0.001, &o->timeout);
        else if (strcmp(name, "--stall-probe-ms") == 0)
            rc = parse_double(name, val, 0.1, &o->probe_ms);
        else if (strcmp(name, "--stall-probe-idle") == 0)
            rc = parse_double(name, val, 0, &o->probe_idle);
        else {
            fprintf(stderr, "kcoord-bench: unknown option %s\n", name);
            return -1;
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Scenario defaults for the options left unset (0). */
static void defaults(opts_t *o)
{
    bool commit = strcmp(o->scenario, "commit") == 0;
    bool join = strcmp(o->scenario, "join") == 0;
    bool memory = strcmp(o->scenario, "memory") == 0;
    if (o->bootstrap == NULL)
        o->bootstrap = "127.0.0.1:9092";
    if (o->topic == NULL)
        o->topic = "kcoord-bench";
    if (o->listen == NULL)
        o->listen = "127.0.0.1:0";
    if (o->protocol == NULL)
        o->protocol = "classic";
    if (o->topic_partitions == 0)
        o->topic_partitions = 100;
    if (o->groups == 0)
        o->groups = memory ? 10000 : 100;
    if (o->partitions == 0)
        o->partitions = 10;
    if (o->connections == 0)
        o->connections = commit ? 8 : 1000;
    if (o->depth == 0)
        o->depth = 16;
    if (o->members == 0)
        o->members = join ? 100 : 10000;
    if (o->group_size == 0)
        o->group_size = 10;
    if (o->offsets == 0)
        o->offsets = 1000000;
    if (o->size == 0)
        o->size = 100;
    if (o->duration == 0)
        o->duration = strcmp(o->scenario, "fsync-rate") == 0 ? 3 : 10;
    if (o->rate == 0)
        o->rate = 10000;
    if (o->heartbeat_ms == 0)
        o->heartbeat_ms = memory ? 20000 : 100;
    if (o->timeout == 0)
        o->timeout = 600;
    if (o->session_ms == 0)
        o->session_ms = memory ? 120000 : 30000;
    if (o->rebalance_ms == 0)
        o->rebalance_ms = 60000;
    if (o->probe_ms == 0)
        o->probe_ms = 5;
    if (o->probe_idle < 0)
        o->probe_idle = 1;
}

static double now_s(void)
{
    return (double)uv_hrtime() / 1e9;
}

static void json_common(kc_json_t *j, const ctx_t *x)
{
    const opts_t *o = x->o;
    if (o->label != NULL)
        kc_json_str(j, "label", o->label);
    kc_json_str(j, "bootstrap", o->bootstrap);
    kc_json_str(j, "coordinator", x->coord_str);
    if (o->server_pid > 0)
        kc_json_int(j, "server_pid", o->server_pid);
}

/* ---- Common set-up ----------------------------------------------------------------------- */

/* Name `n` groups "<prefix>-<kind>-<i>". Returns NULL on allocation failure. */
static char **make_groups(const char *prefix, const char *kind, size_t n)
{
    char **g = calloc(n ? n : 1, sizeof(char *));
    if (g == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char buf[512];
        snprintf(buf, sizeof(buf), "%s-%s-%zu", prefix, kind, i);
        g[i] = strdup(buf);
        if (g[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                free(g[k]);
            free(g);
            return NULL;
        }
    }
    return g;
}

static void free_groups(char **g, size_t n)
{
    for (size_t i = 0; g != NULL && i < n; i++)
        free(g[i]);
    free(g);
}

/* Loop, client, bootstrap connection, versions, topic, groups, coordinator. Returns 0 or -1
 * (then ctx_fini still has to run). */
static int setup(ctx_t *x, opts_t *o, const char *kind, size_t ngroups)
{
    memset(x, 0, sizeof(*x));
    x->o = o;
    uv_loop_init(&x->loop);
    if (kc_bench_init(&x->b, &x->loop, "kcoord-bench") != 0)
        return -1;
    char prefix[256];
    if (o->group_prefix != NULL)
        snprintf(prefix, sizeof(prefix), "%s", o->group_prefix);
    else
        snprintf(prefix, sizeof(prefix), "kb%ld-%d", (long)time(NULL), (int)getpid());
    x->groups = make_groups(prefix, kind, ngroups);
    x->ngroups = ngroups;
    if (x->groups == NULL)
        return -1;
    struct sockaddr_storage boot;
    if (kc_bench_resolve(o->bootstrap, &boot) != 0)
        return -1;
    if (kc_bench_connect_all(&x->b, (struct sockaddr *)&boot, 1, &x->boot, o->timeout) != 0) {
        fprintf(stderr, "kcoord-bench: cannot reach %s\n", o->bootstrap);
        return -1;
    }
    if (o->create_topic &&
        kc_bench_create_topic(x->boot, o->topic, (int32_t)o->topic_partitions, o->timeout) != 0)
        return -1;
    double t0 = now_s();
    if (kc_bench_find_coordinator(x->boot, x->groups, ngroups, &x->coord, o->timeout) != 0)
        return -1;
    snprintf(x->coord_str, sizeof(x->coord_str), "%s:%d", x->coord.host, x->coord.port);
    printf("%s: coordinator of %zu groups is node %d at %s (FindCoordinator %.2f s)\n", o->scenario,
           ngroups, x->coord.node_id, x->coord_str, now_s() - t0);
    if (kc_bench_resolve_hp(x->coord.host, x->coord.port, &x->coord_addr) != 0)
        return -1;
    /* Ask the coordinator itself (FindCoordinator went to the bootstrap server). */
    kc_bench_conn_t *probe;
    if (kc_bench_connect_all(&x->b, (struct sockaddr *)&x->coord_addr, 1, &probe, o->timeout) !=
            0 ||
        kc_bench_await_groups(probe, x->groups, ngroups, o->timeout) != 0)
        return -1;
    kc_bench_conn_close(probe);
    return 0;
}

static int ctx_fini(ctx_t *x)
{
    kc_bench_fini(&x->b);
    free_groups(x->groups, x->ngroups);
    int rc = uv_loop_close(&x->loop);
    if (rc != 0)
        fprintf(stderr, "kcoord-bench: the loop still had handles at exit\n");
    return rc == 0 ? 0 : -1;
}

static int connect_coord(ctx_t *x, size_t n, kc_bench_conn_t ***out)
{
    *out = calloc(n ? n : 1, sizeof(**out));
    if (*out == NULL)
        return -1;
    double t0 = now_s();
    if (kc_bench_connect_all(&x->b, (struct sockaddr *)&x->coord_addr, n, *out, x->o->timeout) != 0)
        return -1;
    printf("%s: %zu connections to %s ready in %.2f s\n", x->o->scenario, n, x->coord_str,
           now_s() - t0);
    return 0;
}

/* ---- commit ------------------------------------------------------------------------------ */

enum { WARMUP, MEASURE, STOP };

typedef struct commit_run_s {
    ctx_t *x;
    int16_t v;
    int32_t parts;
    kc_offset_commit_request_partition_t *pv;
    size_t next_group;
    int64_t offset;
    int phase;
    uint64_t t_measure, t_end;
    uint64_t completed, offsets, count;
    size_t inflight;
    bool drained;
    kc_bench_stats_t st, warm;
    uv_timer_t timer;
    double cpu0, cpu1;
} commit_run_t;

static void send_commit(commit_run_t *r, kc_bench_conn_t *c);

static void commit_stop(commit_run_t *r)
{
    if (r->phase == STOP)
        return;
    r->phase = STOP;
    r->t_end = uv_hrtime();
    if (r->x->o->server_pid > 0)
        r->cpu1 = kc_proc_cpu_s(r->x->o->server_pid);
    if (r->inflight == 0)
        r->drained = true;
}

static void on_commit(kc_bench_conn_t *c, void *arg, int err, const void *resp, uint64_t sent_ns)
{
    commit_run_t *r = arg;
    const kc_offset_commit_response_t *m = resp;
    r->inflight--;
    bool measuring = r->phase == MEASURE;
    kc_bench_stats_t *st = measuring ? &r->st : &r->warm;
    uint64_t failed = 0;
    if (err != 0) {
        kc_stats_error(st, err);
        failed = (uint64_t)r->parts;
    } else {
        for (int32_t t = 0; t < m->topics.n; t++)
            for (int32_t p = 0; p < m->topics.v[t].partitions.n; p++) {
                int16_t code = m->topics.v[t].partitions.v[p].error_code;
                if (code != 0) {
                    kc_stats_error(st, code);
                    failed++;
                }
            }
    }
    if (measuring) {
        kc_stats_record(&r->st, uv_hrtime() - sent_ns);
        r->completed++;
        r->offsets +=
            (uint64_t)r->parts - (failed < (uint64_t)r->parts ? failed : (uint64_t)r->parts);
        if (r->count > 0 && r->completed >= r->count)
            commit_stop(r);
    }
    if (r->phase == STOP) {
        if (r->inflight == 0)
            r->drained = true;
        return;
    }
    if (err == 0)
        send_commit(r, c);
}

static void send_commit(commit_run_t *r, kc_bench_conn_t *c)
{
    ctx_t *x = r->x;
    const char *group = x->groups[r->next_group++ % x->ngroups];
    r->offset++;
    for (int32_t p = 0; p < r->parts; p++)
        r->pv[p].committed_offset = r->offset;
    kc_offset_commit_request_topic_t t;
    memset(&t, 0, sizeof(t));
    t.name = kc_str_c(x->o->topic);
    t.partitions.v = r->pv;
    t.partitions.n = r->parts;
    kc_offset_commit_request_t q;
    kc_offset_commit_request_init(&q);
    q.group_id = kc_str_c(group);
    q.generation_id_or_member_epoch = -1;
    q.member_id = KC_STR_EMPTY;
    q.topics.v = &t;
    q.topics.n = 1;
    if (kc_bench_send(c, KC_API_OFFSET_COMMIT, r->v, &q, on_commit, r) == 0)
        r->inflight++;
}

static void on_commit_timer(uv_timer_t *t)
{
    commit_run_t *r = t->data;
    if (r->phase == WARMUP) {
        r->phase = MEASURE;
        r->t_measure = uv_hrtime();
        if (r->x->o->server_pid > 0)
            r->cpu0 = kc_proc_cpu_s(r->x->o->server_pid);
        if (r->count == 0)
            uv_timer_start(&r->timer, on_commit_timer, (uint64_t)(r->x->o->duration * 1000), 0);
    } else if (r->phase == MEASURE) {
        commit_stop(r);
    }
}

static int run_commit(opts_t *o)
{
    ctx_t x;
    int status = 1;
    kc_bench_conn_t **conns = NULL;
    commit_run_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return 1;
    if (setup(&x, o, "commit", (size_t)o->groups) != 0)
        goto out;
    r->x = &x;
    r->v = kc_bench_version(&x.b, KC_API_OFFSET_COMMIT, 9);
    r->parts = (int32_t)o->partitions;
    r->count = o->count > 0 ? (uint64_t)o->count : 0;
    r->pv = calloc((size_t)r->parts, sizeof(*r->pv));
    if (r->v < 0 || r->pv == NULL)
        goto out;
    for (int32_t p = 0; p < r->parts; p++) {
        r->pv[p].partition_index = p;
        r->pv[p].committed_leader_epoch = -1;
        r->pv[p].commit_timestamp = -1;
        r->pv[p].committed_metadata = KC_STR_EMPTY;
    }
    if (connect_coord(&x, (size_t)o->connections, &conns) != 0)
        goto out;
    kc_stats_reset(&r->st);
    kc_stats_reset(&r->warm);
    uv_timer_init(&x.loop, &r->timer);
    r->timer.data = r;
    r->phase = WARMUP;
    printf("commit: %ld groups x %ld partitions, %ld connections x depth %ld, OffsetCommit v%d, "
           "warm-up %.1f s, then %s\n",
           o->groups, o->partitions, o->connections, o->depth, r->v, o->warmup,
           r->count ? "a count" : "a duration");
    fflush(stdout);
    for (long d = 0; d < o->depth; d++)
        for (long c = 0; c < o->connections; c++)
            send_commit(r, conns[c]);
    uv_timer_start(&r->timer, on_commit_timer, (uint64_t)(o->warmup * 1000), 0);
    double limit = o->warmup + (r->count ? o->timeout : o->duration) + 60;
    if (kc_bench_run_until(&x.b, &r->drained, limit) != 0) {
        fprintf(stderr, "kcoord-bench: commit: requests still unanswered after %.0f s\n", limit);
        commit_stop(r);
        kc_stats_error(&r->st, KC_BENCH_ECONN);
    }
    uv_close((uv_handle_t *)&r->timer, NULL);

    double secs = (double)(r->t_end - r->t_measure) / 1e9;
    double rps = secs > 0 ? (double)r->completed / secs : 0;
    double ops = secs > 0 ? (double)r->offsets / secs : 0;
    printf("commit: %llu requests, %llu offsets in %.2f s: %.0f requests/s, %.0f offsets/s\n",
           (unsigned long long)r->completed, (unsigned long long)r->offsets, secs, rps, ops);
    kc_stats_print(&r->st, "  ");
    if (r->warm.nerrors > 0) {
        printf("  during the warm-up:\n");
        kc_stats_print(&r->warm, "    ");
    }
    kc_json_t j;
    kc_json_begin(&j, "commit");
    json_common(&j, &x);
    kc_json_int(&j, "groups", o->groups);
    kc_json_int(&j, "partitions", o->partitions);
    kc_json_int(&j, "connections", o->connections);
    kc_json_int(&j, "depth", o->depth);
    kc_json_int(&j, "version", r->v);
    kc_json_num(&j, "seconds", secs);
    kc_json_int(&j, "requests", (long long)r->completed);
    kc_json_int(&j, "offsets", (long long)r->offsets);
    kc_json_num(&j, "requests_per_s", rps);
    kc_json_num(&j, "offsets_per_s", ops);
    kc_json_latency(&j, "", &r->st);
    kc_json_errors(&j, "errors", &r->st);
    kc_json_int(&j, "error_total", (long long)r->st.nerrors);
    kc_json_errors(&j, "warmup_errors", &r->warm);
    if (o->server_pid > 0 && r->cpu0 >= 0 && r->cpu1 >= 0 && secs > 0) {
        double util = (r->cpu1 - r->cpu0) / secs;
        printf("  server CPU: %.0f %% of one core, %.1f us per request\n", util * 100,
               rps > 0 ? util / rps * 1e6 : 0);
        kc_json_num(&j, "server_cpu_cores", util);
        kc_json_num(&j, "server_cpu_us_per_request", rps > 0 ? util / rps * 1e6 : 0);
    }
    kc_json_end(&j);
    status = r->st.nerrors == 0 && r->completed > 0 && r->warm.nerrors == 0 ? 0 : 1;
    if (r->warm.nerrors > 0 && r->st.nerrors == 0)
        fprintf(stderr, "kcoord-bench: commit: errors during the warm-up\n");
out:
    if (ctx_fini(&x) != 0)
        status = 1;
    free(conns);
    free(r->pv);
    free(r);
    return status;
}

/* ---- Group scenarios: common parts --------------------------------------------------------- */

static int group_versions(ctx_t *x, kc_grp_opts_t *go)
{
    go->v_join = kc_bench_version(&x->b, KC_API_JOIN_GROUP, 9);
    go->v_sync = kc_bench_version(&x->b, KC_API_SYNC_GROUP, 5);
    go->v_heartbeat = kc_bench_version(&x->b, KC_API_HEARTBEAT, 4);
    go->v_commit = kc_bench_version(&x->b, KC_API_OFFSET_COMMIT, 9);
    return go->v_join < 0 || go->v_sync < 0 || go->v_heartbeat < 0 || go->v_commit < 0 ? -1 : 0;
}

static void json_group_counters(kc_json_t *j, const kc_grp_counters_t *c)
{
    kc_json_int(j, "join_requests", (long long)c->joins);
    kc_json_int(j, "sync_requests", (long long)c->syncs);
    kc_json_int(j, "heartbeats_total", (long long)c->heartbeats);
    kc_json_int(j, "rebalance_in_progress", (long long)c->rebalance_signals);
    kc_json_int(j, "member_id_required", (long long)c->member_id_required);
    kc_json_int(j, "generations", (long long)c->generations);
    kc_json_errors(j, "errors", &c->errors);
    kc_json_int(j, "error_total", (long long)c->errors.nerrors);
}

static void print_group_counters(const kc_grp_counters_t *c)
{
    printf("  requests answered: %llu JoinGroup, %llu SyncGroup, %llu Heartbeat; "
           "%llu MEMBER_ID_REQUIRED, %llu REBALANCE_IN_PROGRESS, %llu generations\n",
           (unsigned long long)c->joins, (unsigned long long)c->syncs,
           (unsigned long long)c->heartbeats, (unsigned long long)c->member_id_required,
           (unsigned long long)c->rebalance_signals, (unsigned long long)c->generations);
    kc_stats_print(&c->errors, "  ");
}

/* Leave every group (so that a shared server does not expire them during the next run). */
static void leave_groups(ctx_t *x, kc_grpset_t *s, kc_bench_stats_t *st)
{
    int16_t v = kc_bench_version(&x->b, KC_API_LEAVE_GROUP, 5);
    bool done = false;
    if (v < 0 || kc_grpset_leave_all(s, v, 256, st, &done) != 0) {
        printf("  (members not removed: LeaveGroup v3+ unavailable)\n");
        return;
    }
    if (kc_bench_run_until(&x->b, &done, x->o->timeout) != 0)
        printf("  LeaveGroup: not all answered\n");
}

/* ---- join --protocol consumer ------------------------------------------------------------- */

static void print_cgrp(const kc_cgrp_t *g)
{
    const kc_cgrp_counters_t *c = kc_cgrp_counters(g);
    printf("  heartbeats: %llu sent (%llu at once after an answer that changed the epoch or the "
           "assignment), %llu answered; %llu assignment changes, %llu epoch changes; group "
           "epoch %d; server interval %d ms\n",
           (unsigned long long)c->sent, (unsigned long long)c->immediate,
           (unsigned long long)c->heartbeats, (unsigned long long)c->assignments,
           (unsigned long long)c->epoch_changes, kc_cgrp_epoch(g), c->server_interval_ms);
    kc_stats_print(&c->errors, "  ");
}

static void print_confirmed(const char *what, const kc_cgrp_describe_t *d)
{
    printf("  %s: ConsumerGroupDescribe: %s, group epoch %d, assignment epoch %d, %d members, "
           "%d at the group epoch\n",
           what, d->state, d->group_epoch, d->assignment_epoch, d->members, d->members_at_epoch);
}

static void json_describe(kc_json_t *j, const char *prefix, const kc_cgrp_describe_t *d)
{
    char key[64];
    snprintf(key, sizeof(key), "%s_state", prefix);
    kc_json_str(j, key, d->state);
    snprintf(key, sizeof(key), "%s_group_epoch", prefix);
    kc_json_int(j, key, d->group_epoch);
    snprintf(key, sizeof(key), "%s_assignment_epoch", prefix);
    kc_json_int(j, key, d->assignment_epoch);
    snprintf(key, sizeof(key), "%s_members_at_epoch", prefix);
    kc_json_int(j, key, d->members_at_epoch);
}

static const char *const PROBE_PHASE_NAMES[KC_PROBE_PHASES] = {"idle", "join", "steady", "rolling",
                                                               "after"};

static void print_probe(const kc_probe_t *p, int phase, double interval_ms)
{
    const kc_bench_stats_t *s = kc_probe_stats(p, phase);
    if (s->n == 0) {
        printf("  stall probe, %s: no round trip\n", PROBE_PHASE_NAMES[phase]);
        return;
    }
    printf("  stall probe, %s: %llu ApiVersions round trips (%.0f ms apart, one in flight): "
           "median %.3f ms, p99 %.3f ms, max %.3f ms\n",
           PROBE_PHASE_NAMES[phase], (unsigned long long)s->n, interval_ms,
           (double)kc_stats_quantile(s, 0.5) / 1e6, (double)kc_stats_quantile(s, 0.99) / 1e6,
           (double)s->max_ns / 1e6);
}

/* "probe_<phase>_n", _p50_ms, _p99_ms, _max_ms (null when there was no round trip). */
static void json_probe(kc_json_t *j, const kc_probe_t *p, int phase)
{
    const kc_bench_stats_t *s = kc_probe_stats(p, phase);
    char key[64];
    snprintf(key, sizeof(key), "probe_%s_n", PROBE_PHASE_NAMES[phase]);
    kc_json_int(j, key, (long long)s->n);
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"p50", 0.5}, {"p99", 0.99}, {"max", 1}};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        snprintf(key, sizeof(key), "probe_%s_%s_ms", PROBE_PHASE_NAMES[phase], qs[i].name);
        if (s->n == 0)
            kc_json_null(j, key);
        else
            kc_json_num(j, key,
                        (double)(qs[i].q >= 1 ? s->max_ns : kc_stats_quantile(s, qs[i].q)) / 1e6);
    }
}

static int run_cjoin(opts_t *o)
{
    kc_cgrp_describe_t d_join, d_roll;
    memset(&d_join, 0, sizeof(d_join));
    memset(&d_roll, 0, sizeof(d_roll));
    ctx_t x;
    int status = 1;
    kc_bench_conn_t **conns = NULL;
    kc_cgrp_t *g = NULL;
    kc_probe_t *probe = NULL;
    int probe_err = 0;
    kc_bench_stats_t leave_st;
    kc_stats_reset(&leave_st);
    if (setup(&x, o, "cjoin", 1) != 0)
        goto out;
    kc_cgrp_opts_t co = {
        .partitions = (int32_t)o->topic_partitions,
        .rebalance_ms = (int32_t)o->rebalance_ms,
        .hb_ms = (uint64_t)o->heartbeat_ms,
        .version = kc_bench_version(&x.b, KC_API_CONSUMER_GROUP_HEARTBEAT, 1),
        .assignor = "uniform",
    };
    if (co.version < 0)
        goto out;
    size_t n = (size_t)o->members;
    /* One connection per member, and one for ConsumerGroupDescribe. */
    if (connect_coord(&x, n + 2, &conns) != 0)
        goto out;
    g = kc_cgrp_new(&x.b, x.groups[0], o->topic, (int32_t)n + (o->rolling ? 1 : 0), &co);
    if (g == NULL)
        goto out;
    printf("join: %zu members join consumer group %s (ConsumerGroupHeartbeat v%d, assignor "
           "uniform, %ld partitions; heartbeat every %.0f ms, at once after an answer that "
           "changed the epoch or the assignment)\n",
           n, x.groups[0], co.version, o->topic_partitions, o->heartbeat_ms);
    fflush(stdout);
    if (o->stall_probe) {
        probe = kc_probe_start((struct sockaddr *)&x.coord_addr, o->probe_ms, o->timeout);
        if (probe == NULL)
            goto out;
        if (o->probe_idle > 0) /* a 0 s sleep would block: its timer fires before the poll */
            kc_bench_sleep(&x.b, o->probe_idle);
        kc_probe_phase(probe, KC_PROBE_JOIN);
    }
    bool done = false;
    kc_cgrp_join(g, conns, (int32_t)n, conns[n + 1], &done);
    int rc = kc_bench_run_until(&x.b, &done, o->timeout);
    if (probe != NULL)
        kc_probe_phase(probe, rc == 0 && o->rolling ? KC_PROBE_STEADY : KC_PROBE_AFTER);
    double join_s = kc_cgrp_time(g);
    if (rc != 0)
        printf("join: not stable after %.0f s (%d of %zu members acknowledged epoch %d)\n",
               o->timeout, kc_cgrp_acked(g), n, kc_cgrp_epoch(g));
    else
        printf("join: all %zu members acknowledged their assignment at epoch %d after %.3f s\n", n,
               kc_cgrp_epoch(g), join_s);
    int32_t join_epoch = kc_cgrp_epoch(g);
    d_join = *kc_cgrp_confirmed(g);
    print_confirmed("join", &d_join);
    double roll_s = -1;
    if (rc == 0 && o->rolling) {
        /* As in the classic join: spread the heartbeats over the interval, let them settle. */
        kc_cgrp_spread(g);
        kc_bench_sleep(&x.b, 2 * o->heartbeat_ms / 1000 + 0.5);
        bool done2 = false;
        if (probe != NULL)
            kc_probe_phase(probe, KC_PROBE_ROLLING);
        kc_cgrp_add_member(g, conns[n], &done2);
        rc = kc_bench_run_until(&x.b, &done2, o->timeout);
        if (probe != NULL)
            kc_probe_phase(probe, KC_PROBE_AFTER);
        roll_s = kc_cgrp_time(g);
        if (rc != 0)
            printf("join --rolling: not stable after %.0f s\n", o->timeout);
        else
            printf("join --rolling: one more member: all %zu acknowledged epoch %d after "
                   "%.3f s\n",
                   n + 1, kc_cgrp_epoch(g), roll_s);
        d_roll = *kc_cgrp_confirmed(g);
        print_confirmed("rolling", &d_roll);
    }
    print_cgrp(g);
    if (probe != NULL) {
        probe_err = kc_probe_stop(probe);
        if (probe_err != 0)
            printf("  stall probe: stopped early: %s (%d)\n", kc_err_name(probe_err), probe_err);
        for (int ph = KC_PROBE_IDLE; ph < KC_PROBE_AFTER; ph++)
            if (ph <= KC_PROBE_JOIN || o->rolling)
                print_probe(probe, ph, o->probe_ms);
    }
    const kc_cgrp_counters_t *c = kc_cgrp_counters(g);
    uint64_t errors = c->errors.nerrors;
    if (!o->no_leave) {
        bool left = false;
        kc_cgrp_leave(g, &leave_st, &left);
        if (kc_bench_run_until(&x.b, &left, o->timeout) != 0)
            printf("  leaving: not all answered\n");
    }
    kc_json_t j;
    kc_json_begin(&j, o->rolling ? "join-rolling" : "join");
    json_common(&j, &x);
    kc_json_str(&j, "protocol", "consumer");
    kc_json_int(&j, "members", (long long)n);
    kc_json_num(&j, "heartbeat_ms", o->heartbeat_ms);
    kc_json_int(&j, "server_heartbeat_interval_ms", c->server_interval_ms);
    kc_json_int(&j, "heartbeat_version", co.version);
    kc_json_int(&j, "partitions", o->topic_partitions);
    if (join_s >= 0)
        kc_json_num(&j, "join_s", join_s);
    else
        kc_json_null(&j, "join_s");
    kc_json_int(&j, "join_epoch", join_epoch);
    json_describe(&j, "join_described", &d_join);
    if (o->rolling) {
        if (roll_s >= 0)
            kc_json_num(&j, "rolling_s", roll_s);
        else
            kc_json_null(&j, "rolling_s");
        kc_json_int(&j, "rolling_epoch", kc_cgrp_epoch(g));
        json_describe(&j, "rolling_described", &d_roll);
    }
    if (probe != NULL) {
        kc_json_num(&j, "probe_interval_ms", o->probe_ms);
        for (int ph = KC_PROBE_IDLE; ph < KC_PROBE_AFTER; ph++)
            if (ph <= KC_PROBE_JOIN || o->rolling)
                json_probe(&j, probe, ph);
        kc_json_int(&j, "probe_error", probe_err);
    }
    kc_json_int(&j, "describes", (long long)c->describes);
    kc_json_int(&j, "describes_not_confirming", (long long)c->not_confirmed);
    kc_json_int(&j, "heartbeats_sent", (long long)c->sent);
    kc_json_int(&j, "heartbeats_immediate", (long long)c->immediate);
    kc_json_int(&j, "assignment_changes", (long long)c->assignments);
    kc_json_int(&j, "epoch_changes", (long long)c->epoch_changes);
    kc_json_errors(&j, "errors", &c->errors);
    kc_json_int(&j, "error_total", (long long)errors);
    kc_json_int(&j, "leave_errors", (long long)leave_st.nerrors);
    kc_json_end(&j);
    status = rc == 0 && errors == 0 && probe_err == 0 ? 0 : 1;
out:
    kc_probe_free(probe);
    if (g != NULL)
        kc_cgrp_stop(g);
    if (ctx_fini(&x) != 0)
        status = 1;
    kc_cgrp_free(g);
    free(conns);
    return status;
}

/* ---- join -------------------------------------------------------------------------------- */

static int run_join(opts_t *o)
{
    if (strcmp(o->protocol, "consumer") == 0)
        return run_cjoin(o);
    ctx_t x;
    int status = 1;
    kc_bench_conn_t **conns = NULL;
    kc_grpset_t *s = NULL;
    kc_bench_stats_t leave_st;
    kc_stats_reset(&leave_st);
    if (setup(&x, o, "join", 1) != 0)
        goto out;
    kc_grp_opts_t go = {
        .topic = o->topic,
        .partitions = (int32_t)o->topic_partitions,
        .session_ms = (int32_t)o->session_ms,
        .rebalance_ms = (int32_t)o->rebalance_ms,
        .hb_joining_s = o->heartbeat_ms / 1000,
        .hb_stable_s = o->heartbeat_ms / 1000,
    };
    if (group_versions(&x, &go) != 0)
        goto out;
    size_t n = (size_t)o->members;
    if (connect_coord(&x, n + (o->rolling ? 1 : 0), &conns) != 0)
        goto out;
    s = kc_grpset_new(&x.b, x.groups, 1, (int32_t)n, &go);
    if (s == NULL)
        goto out;
    printf("join: %zu members join %s (JoinGroup v%d, SyncGroup v%d, Heartbeat v%d every %.0f "
           "ms)\n",
           n, x.groups[0], go.v_join, go.v_sync, go.v_heartbeat, o->heartbeat_ms);
    fflush(stdout);
    bool done = false;
    kc_grpset_join_lanes(s, conns, n, &done);
    int rc = kc_bench_run_until(&x.b, &done, o->timeout);
    double join_s = kc_grpset_group_time(s, 0);
    if (rc != 0)
        printf("join: not complete after %.0f s\n", o->timeout);
    else
        printf("join: all %zu members hold their assignment after %.3f s\n", n, join_s);
    double roll_s = -1;
    if (rc == 0 && o->rolling) {
        /* Members that synced together heartbeat in step; spread them over the interval, as
         * members of a long-lived group are, then let them settle into that rhythm. */
        kc_grpset_set_interval(s, o->heartbeat_ms / 1000);
        kc_bench_sleep(&x.b, 2 * o->heartbeat_ms / 1000 + 0.5);
        bool done2 = false;
        kc_grpset_add_member(s, 0, conns[n], &done2);
        rc = kc_bench_run_until(&x.b, &done2, o->timeout);
        roll_s = kc_grpset_group_time(s, 0);
        if (rc != 0)
            printf("join --rolling: not complete after %.0f s\n", o->timeout);
        else
            printf("join --rolling: one more member: all %zu hold their new assignment after "
                   "%.3f s\n",
                   n + 1, roll_s);
    }
    const kc_grp_counters_t *c = kc_grpset_counters(s);
    print_group_counters(c);
    leave_groups(&x, s, &leave_st);
    kc_json_t j;
    kc_json_begin(&j, o->rolling ? "join-rolling" : "join");
    json_common(&j, &x);
    kc_json_int(&j, "members", (long long)n);
    kc_json_num(&j, "heartbeat_ms", o->heartbeat_ms);
    kc_json_int(&j, "session_ms", o->session_ms);
    kc_json_int(&j, "join_version", go.v_join);
    if (join_s >= 0)
        kc_json_num(&j, "join_s", join_s);
    else
        kc_json_null(&j, "join_s");
    if (o->rolling) {
        if (roll_s >= 0)
            kc_json_num(&j, "rolling_s", roll_s);
        else
            kc_json_null(&j, "rolling_s");
    }
    json_group_counters(&j, c);
    kc_json_int(&j, "leave_errors", (long long)leave_st.nerrors);
    kc_json_end(&j);
    status = rc == 0 && c->errors.nerrors == 0 ? 0 : 1;
out:
    if (s != NULL)
        kc_grpset_stop(s);
    if (ctx_fini(&x) != 0)
        status = 1;
    kc_grpset_free(s);
    free(conns);
    return status;
}

/* ---- Populating many groups (heartbeat, memory) -------------------------------------------- */

/* Join all groups of `s` over `nconns` connections; prints the time taken. */
static int populate(ctx_t *x, kc_grpset_t *s, kc_bench_conn_t **conns, size_t nconns,
                    size_t members)
{
    double t0 = now_s();
    bool done = false;
    kc_grpset_join_lanes(s, conns, nconns, &done);
    double limit = x->o->timeout;
    while (!done && now_s() - t0 < limit) {
        (void)kc_bench_run_until(&x->b, &done, 5);
        if (!done)
            printf("  ... %zu of %zu groups joined after %.0f s\n", kc_grpset_completed(s),
                   x->ngroups, now_s() - t0);
        fflush(stdout);
    }
    if (!done) {
        printf("%s: only %zu of %zu groups joined within %.0f s\n", x->o->scenario,
               kc_grpset_completed(s), x->ngroups, limit);
        return -1;
    }
    printf("%s: %zu members in %zu groups joined in %.2f s\n", x->o->scenario, members, x->ngroups,
           now_s() - t0);
    return 0;
}

/* ---- heartbeat --------------------------------------------------------------------------- */

static int run_heartbeat(opts_t *o)
{
    ctx_t x;
    int status = 1;
    kc_bench_conn_t **conns = NULL;
    kc_grpset_t *s = NULL;
    kc_bench_stats_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return 1;
    kc_bench_stats_t leave_st;
    kc_stats_reset(&leave_st);
    size_t k = (size_t)o->group_size;
    size_t ngroups = ((size_t)o->members + k - 1) / k;
    size_t members = ngroups * k;
    size_t nconns = (size_t)o->connections / k * k;
    if (nconns == 0)
        nconns = k;
    if (nconns > members)
        nconns = members;
    double interval = (double)members / o->rate;
    double secs = 0, per10k = -1;
    if (setup(&x, o, "hb", ngroups) != 0)
        goto out;
    kc_grp_opts_t go = {
        .topic = o->topic,
        .partitions = (int32_t)o->topic_partitions,
        .session_ms = (int32_t)o->session_ms,
        .rebalance_ms = (int32_t)o->rebalance_ms,
        .hb_joining_s = 0.1,
        .id_barrier = true,
        .hb_stable_s = interval,
    };
    if (interval * 1000 > o->session_ms / 2.0)
        printf("heartbeat: warning: interval %.1f s is long for a %ld ms session\n", interval,
               o->session_ms);
    if (group_versions(&x, &go) != 0 || connect_coord(&x, nconns, &conns) != 0)
        goto out;
    s = kc_grpset_new(&x.b, x.groups, ngroups, (int32_t)k, &go);
    if (s == NULL)
        goto out;
    printf("heartbeat: %zu members in %zu groups of %zu over %zu connections; then %.0f hb/s "
           "(every %.3f s each)\n",
           members, ngroups, k, nconns, o->rate, interval);
    fflush(stdout);
    if (populate(&x, s, conns, nconns, members) != 0)
        goto report;
    kc_grpset_set_interval(s, interval);
    double warm = o->warmup > 0 ? o->warmup : 2;
    if (warm < interval)
        warm = interval;
    kc_bench_sleep(&x.b, warm);
    kc_stats_reset(st);
    kc_grpset_measure(s, st);
    double cpu0 = o->server_pid > 0 ? kc_proc_cpu_s(o->server_pid) : -1;
    double t0 = now_s();
    kc_bench_sleep(&x.b, o->duration);
    secs = now_s() - t0;
    double cpu1 = o->server_pid > 0 ? kc_proc_cpu_s(o->server_pid) : -1;
    kc_grpset_measure(s, NULL);
    double achieved = (double)st->n / secs;
    printf("heartbeat: %llu heartbeats in %.2f s: %.0f hb/s (target %.0f)\n",
           (unsigned long long)st->n, secs, achieved, o->rate);
    kc_stats_print(st, "  ");
    if (cpu0 >= 0 && cpu1 >= 0 && achieved > 0) {
        double util = (cpu1 - cpu0) / secs;
        per10k = util / (achieved / 10000);
        printf("  server CPU: %.1f %% of one core, %.2f %% per 10 000 hb/s\n", util * 100,
               per10k * 100);
    }
report:;
    const kc_grp_counters_t *c = s ? kc_grpset_counters(s) : NULL;
    if (c != NULL) {
        print_group_counters(c);
        printf("  heartbeats due while the previous was unanswered: %llu (%llu while "
               "measuring)\n",
               (unsigned long long)c->hb_late, (unsigned long long)c->hb_late_measured);
        leave_groups(&x, s, &leave_st);
    }
    kc_json_t j;
    kc_json_begin(&j, "heartbeat");
    json_common(&j, &x);
    kc_json_int(&j, "members", (long long)members);
    kc_json_int(&j, "group_size", (long long)k);
    kc_json_int(&j, "connections", (long long)nconns);
    kc_json_num(&j, "target_per_s", o->rate);
    if (c != NULL && st->n > 0) {
        kc_json_num(&j, "seconds", secs);
        kc_json_int(&j, "heartbeats", (long long)st->n);
        kc_json_num(&j, "heartbeats_per_s", (double)st->n / secs);
        kc_json_latency(&j, "", st);
        kc_json_errors(&j, "measured_errors", st);
        if (per10k >= 0)
            kc_json_num(&j, "server_cpu_cores_per_10k_hbps", per10k);
        kc_json_int(&j, "late", (long long)c->hb_late_measured);
    }
    if (c != NULL)
        json_group_counters(&j, c);
    kc_json_end(&j);
    status = c != NULL && st->n > 0 && st->nerrors == 0 && c->errors.nerrors == 0 ? 0 : 1;
out:
    if (s != NULL)
        kc_grpset_stop(s);
    if (ctx_fini(&x) != 0)
        status = 1;
    kc_grpset_free(s);
    free(conns);
    free(st);
    return status;
}

/* ---- memory ------------------------------------------------------------------------------ */

/* A size, or null when it could not be measured (negative). */
static void json_size(kc_json_t *j, const char *key, double v)
{
    if (v >= 0)
        kc_json_num(j, key, v);
    else
        kc_json_null(j, key);
}

/* Run the --probe command; the last number it prints is a size in bytes. Returns -1 when it
 * fails or prints no number. */
static double run_probe(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    if (f == NULL)
        return -1;
    char line[512];
    double last = -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *end;
        double v = strtod(line, &end);
        if (end != line)
            last = v;
    }
    int rc = pclose(f);
    return rc == 0 ? last : -1;
}

/* RSS after letting the server settle for a moment; -1 without a pid. With --probe, its size
 * goes to *probe (else -1). */
static long settled_rss(ctx_t *x, double *probe)
{
    kc_bench_sleep(&x->b, 2);
    *probe = x->o->probe != NULL ? run_probe(x->o->probe) : -1;
    return x->o->server_pid > 0 ? kc_proc_rss_kb(x->o->server_pid) : -1;
}

static int run_memory(opts_t *o)
{
    ctx_t x;
    int status = 1;
    kc_bench_conn_t **conns = NULL;
    kc_grpset_t *s = NULL;
    kc_bench_stats_t *cst = calloc(1, sizeof(*cst));
    if (cst == NULL)
        return 1;
    kc_bench_stats_t leave_st;
    kc_stats_reset(&leave_st);
    size_t k = (size_t)o->group_size;
    size_t ngroups = (size_t)o->groups;
    size_t members = ngroups * k;
    int32_t per_group = (int32_t)((size_t)o->offsets / ngroups);
    size_t offsets = (size_t)per_group * ngroups;
    size_t nconns = (size_t)o->connections / k * k;
    if (nconns == 0)
        nconns = k;
    if (nconns > members)
        nconns = members;
    long rssc = -1, rss0 = -1, rss1 = -1, rss2 = -1;
    double prc = -1, pr0 = -1, pr1 = -1, pr2 = -1;
    if (o->server_pid <= 0)
        printf("memory: no --server-pid: RSS is not measured\n");
    if (per_group > o->topic_partitions) {
        fprintf(stderr,
                "kcoord-bench: memory: %d offsets per group need a topic of as many "
                "partitions (--topic-partitions, --offsets, --groups)\n",
                per_group);
        free(cst);
        return 2;
    }
    if (setup(&x, o, "mem", ngroups) != 0)
        goto out;
    kc_grp_opts_t go = {
        .topic = o->topic,
        .partitions = (int32_t)o->topic_partitions,
        .session_ms = (int32_t)o->session_ms,
        .rebalance_ms = (int32_t)o->rebalance_ms,
        .hb_joining_s = 0.1,
        .id_barrier = true,
        .hb_stable_s = o->heartbeat_ms / 1000,
    };
    if (group_versions(&x, &go) != 0)
        goto out;
    /* Before the members' connections: what a connection costs counts in the member's cost
     * when each member has its own (--connections = groups x group size). */
    rssc = settled_rss(&x, &prc);
    printf("memory: RSS %ld KiB before the connections\n", rssc);
    if (connect_coord(&x, nconns, &conns) != 0)
        goto out;
    s = kc_grpset_new(&x.b, x.groups, ngroups, (int32_t)k, &go);
    if (s == NULL)
        goto out;
    rss0 = settled_rss(&x, &pr0);
    printf("memory: baseline RSS %ld KiB with %zu connections open\n", rss0, nconns);
    fflush(stdout);
    if (populate(&x, s, conns, nconns, members) != 0)
        goto report;
    rss1 = settled_rss(&x, &pr1);
    printf("memory: RSS %ld KiB with %zu members\n", rss1, members);
    fflush(stdout);
    double t0 = now_s();
    bool done = false;
    kc_stats_reset(cst);
    kc_grpset_commit_all(s, per_group, 64, cst, &done);
    if (kc_bench_run_until(&x.b, &done, o->timeout) != 0) {
        printf("memory: commits not answered within %.0f s\n", o->timeout);
        goto report;
    }
    printf("memory: %zu offsets committed (%d per group) in %.2f s\n", offsets, per_group,
           now_s() - t0);
    kc_stats_print(cst, "  ");
    rss2 = settled_rss(&x, &pr2);
    printf("memory: RSS %ld KiB with %zu members and %zu offsets\n", rss2, members, offsets);
report:;
    double per_member = rss0 >= 0 && rss1 >= 0 ? (double)(rss1 - rss0) * 1024 / members : -1;
    double per_offset = rss1 >= 0 && rss2 >= 0 ? (double)(rss2 - rss1) * 1024 / offsets : -1;
    /* Connections and members together, from before the connections were opened. */
    double per_conn = rssc >= 0 && rss0 >= 0 ? (double)(rss0 - rssc) * 1024 / nconns : -1;
    double per_member_conn = rssc >= 0 && rss1 >= 0 ? (double)(rss1 - rssc) * 1024 / members : -1;
    if (per_conn >= 0)
        printf("  RSS per connection (opened, before any member): %.0f bytes\n", per_conn);
    if (per_member_conn >= 0)
        printf("  RSS per member, its share of the connections included: %.0f bytes\n",
               per_member_conn);
    if (per_member >= 0)
        printf("  RSS per member: %.0f bytes\n", per_member);
    if (per_offset >= 0)
        printf("  RSS per committed offset: %.0f bytes\n", per_offset);
    double pr_member = pr0 >= 0 && pr1 >= 0 ? (pr1 - pr0) / members : -1;
    double pr_offset = pr1 >= 0 && pr2 >= 0 ? (pr2 - pr1) / offsets : -1;
    double pr_conn = prc >= 0 && pr0 >= 0 ? (pr0 - prc) / nconns : -1;
    double pr_member_conn = prc >= 0 && pr1 >= 0 ? (pr1 - prc) / members : -1;
    if (o->probe != NULL)
        printf("  probe: %.0f, %.0f, %.0f bytes: %.0f per member, %.0f per offset\n", pr0, pr1, pr2,
               pr_member, pr_offset);
    const kc_grp_counters_t *c = s ? kc_grpset_counters(s) : NULL;
    if (c != NULL) {
        print_group_counters(c);
        leave_groups(&x, s, &leave_st);
    }
    kc_json_t j;
    kc_json_begin(&j, "memory");
    json_common(&j, &x);
    kc_json_int(&j, "members", (long long)members);
    kc_json_int(&j, "groups", (long long)ngroups);
    kc_json_int(&j, "offsets", (long long)offsets);
    kc_json_int(&j, "connections", (long long)nconns);
    kc_json_int(&j, "rss_before_connections_kib", rssc);
    kc_json_int(&j, "rss0_kib", rss0);
    kc_json_int(&j, "rss_members_kib", rss1);
    kc_json_int(&j, "rss_offsets_kib", rss2);
    if (per_member >= 0)
        kc_json_num(&j, "bytes_per_member", per_member);
    else
        kc_json_null(&j, "bytes_per_member");
    json_size(&j, "bytes_per_connection", per_conn);
    json_size(&j, "bytes_per_member_with_connection", per_member_conn);
    if (per_offset >= 0)
        kc_json_num(&j, "bytes_per_offset", per_offset);
    else
        kc_json_null(&j, "bytes_per_offset");
    if (o->probe != NULL) {
        json_size(&j, "probe0_bytes", pr0);
        json_size(&j, "probe_members_bytes", pr1);
        json_size(&j, "probe_offsets_bytes", pr2);
        json_size(&j, "probe_bytes_per_member", pr_member);
        json_size(&j, "probe_bytes_per_offset", pr_offset);
        json_size(&j, "probe_before_connections_bytes", prc);
        json_size(&j, "probe_bytes_per_connection", pr_conn);
        json_size(&j, "probe_bytes_per_member_with_connection", pr_member_conn);
    }
    kc_json_errors(&j, "commit_errors", cst);
    if (c != NULL)
        json_group_counters(&j, c);
    kc_json_end(&j);
    status = c != NULL && rss2 >= 0 && cst->nerrors == 0 && c->errors.nerrors == 0 ? 0 : 1;
    if (o->server_pid <= 0 && c != NULL && c->errors.nerrors == 0 && cst->nerrors == 0)
        status = 0;
out:
    if (s != NULL)
        kc_grpset_stop(s);
    if (ctx_fini(&x) != 0)
        status = 1;
    kc_grpset_free(s);
    free(conns);
    free(cst);
    return status;
}

/* ---- fsync-rate -------------------------------------------------------------------------- */

static int run_fsync(opts_t *o)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/kcoord-bench-fsync.%d", o->dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "kcoord-bench: fsync-rate: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *buf = calloc(1, (size_t)o->size);
    kc_bench_stats_t *st = calloc(1, sizeof(*st));
    int status = 1;
    if (buf == NULL || st == NULL)
        goto out;
    memset(buf, 'k', (size_t)o->size);
    uint64_t start = uv_hrtime(), end = start + (uint64_t)(o->duration * 1e9), t;
    uint64_t ops = 0;
    while ((t = uv_hrtime()) < end) {
        if (write(fd, buf, (size_t)o->size) != (ssize_t)o->size || fdatasync(fd) != 0) {
            fprintf(stderr, "kcoord-bench: fsync-rate: %s: %s\n", path, strerror(errno));
            goto out;
        }
        kc_stats_record(st, uv_hrtime() - t);
        ops++;
    }
    double secs = (double)(uv_hrtime() - start) / 1e9;
    printf("fsync-rate: %llu x (write %ld bytes + fdatasync) in %.2f s: %.0f per second\n",
           (unsigned long long)ops, o->size, secs, (double)ops / secs);
    kc_stats_print(st, "  ");
    kc_json_t j;
    kc_json_begin(&j, "fsync-rate");
    if (o->label != NULL)
        kc_json_str(&j, "label", o->label);
    kc_json_str(&j, "dir", o->dir);
    kc_json_int(&j, "size", o->size);
    kc_json_num(&j, "seconds", secs);
    kc_json_int(&j, "ops", (long long)ops);
    kc_json_num(&j, "ops_per_s", (double)ops / secs);
    kc_json_latency(&j, "", st);
    kc_json_end(&j);
    status = 0;
out:
    close(fd);
    unlink(path);
    free(buf);
    free(st);
    return status;
}

int main(int argc, char **argv)
{
    opts_t o;
    memset(&o, 0, sizeof(o));
    o.warmup = -1;
    o.probe_idle = -1;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0) {
        usage(rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    if (o.warmup < 0)
        o.warmup = strcmp(o.scenario, "commit") == 0 ? 1 : 0;
    defaults(&o);
    if (strcmp(o.protocol, "classic") != 0 && strcmp(o.protocol, "consumer") != 0) {
        fprintf(stderr, "kcoord-bench: --protocol: classic or consumer, not \"%s\"\n", o.protocol);
        return 2;
    }
    if ((o.stall_probe || o.no_leave) &&
        (strcmp(o.scenario, "join") != 0 || strcmp(o.protocol, "consumer") != 0)) {
        fprintf(stderr, "kcoord-bench: --stall-probe and --no-leave are for join --protocol "
                        "consumer\n");
        return 2;
    }
    srand((unsigned)uv_hrtime());
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(o.scenario, "commit") == 0)
        return run_commit(&o);
    if (strcmp(o.scenario, "join") == 0)
        return run_join(&o);
    if (strcmp(o.scenario, "heartbeat") == 0)
        return run_heartbeat(&o);
    if (strcmp(o.scenario, "memory") == 0)
        return run_memory(&o);
    if (strcmp(o.scenario, "echo") == 0)
        return kc_bench_echo_main(o.listen);
    if (strcmp(o.scenario, "fsync-rate") == 0)
        return run_fsync(&o);
    fprintf(stderr, "kcoord-bench: unknown scenario \"%s\"\n", o.scenario);
    usage(stderr);
    return 2;
}
