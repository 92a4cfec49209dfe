/* coord.c - the partitions: loading, group commit to the log, held replies, timers, retention.
 *
 * Each __consumer_offsets partition owns a group manager, an offsets store (pure state
 * machines, given the time) and its log. The manager and the store together are the
 * partition's shard: the other rooms reach them only through the shard door (coord.h,
 * shard.c), which also holds the rules between them and the replay switch; this file runs
 * the shards' lives. A partition's life:
 *
 *   LOADING   at start (and after a failed write) a thread-pool job opens the log and replays
 *             every record into a fresh manager and store; requests for its groups answer
 *             COORDINATOR_LOAD_IN_PROGRESS meanwhile, and the listener is open at once.
 *   ACTIVE    records the state machines emit go to the partition's pending batch. Before the
 *             loop sleeps (uv_prepare, like Redis' beforeSleep) each partition with pending
 *             records appends them as ONE RecordBatch and, with log.flush.policy=always, hands
 *             the fsync to the thread pool. Replies that depend on those records are held
 *             (kc_coord_hold) until the fsync returns: many requests share one write and one
 *             fsync. A reply that cannot be held (out of memory) is never sent as a success:
 *             the API room answers NOT_COORDINATOR instead, which the client retries.
 *   FAILED    the log could not be opened (corruption in an old segment, unreadable): the
 *             partition is not served (NOT_COORDINATOR); the others are.
 *
 * A failed append or fsync fails the held replies with NOT_COORDINATOR, drops what was not
 * durable, and reloads the partition from its log, so memory again equals what replaying the
 * log yields. Retries back off: the first failure after a success reloads at once; a failure
 * after that (the write after the reload failed too, or the reload itself) leaves the
 * partition FAILED (NOT_COORDINATOR, /readyz 503) for RETRY_MIN_MS, doubling up to
 * RETRY_MAX_MS, and then reloads it; a durable write ends the backoff. So a full or read-only
 * disk costs one attempt per partition every few seconds, and the partition comes back, reads
 * and writes, once the disk does. A load that fails with an I/O error is retried the same way,
 * also at start; corrupt or unsupported log data is not (it does not heal; /readyz names the
 * partition). The lines these failures write are rate-limited (KC_ERROR_LIMITED). /healthz
 * stays 200 meanwhile: it is a liveness probe, and restarting the process would not bring the
 * disk back sooner than these retries; /readyz is the one that says the partition is out.
 * Except when the active segment was deleted or replaced under us (KC_LOG_EGONE): the
 * acknowledged data is gone from the directory, so reloading would silently serve less. That
 * partition goes FAILED, loudly, until a restart.
 *
 * Clean shutdown: the data directory's Kafka marker (.kafka_cleanshutdown) is taken at start;
 * the first load of each partition then truncates nothing and refuses any bad byte (reloads
 * after a failed write recover as after a crash). The marker is written again at close when
 * every log was synced and closed and no partition was left waiting to reload.
 *
 * Compaction: every log.cleaner.backoff.ms, a round over the partitions cleans each one whose
 * closed segments are mostly new since its last compaction, on the thread pool (newest record
 * per key kept, old tombstones dropped); load time then grows with live keys, not with history.
 * One partition at a time, the next at once after it (as Kafka's one cleaner thread), so
 * compactions never take the pool's threads from fsyncs. A compaction is not the partition's
 * job: it works on a copy of what it needs (kc_plog_clean_begin/run/end), and the partition's
 * flushes go on meanwhile. A reload waits for it (both use the partition's directory). A
 * cluster node compacts its logs the same way (they grow with every applied entry between
 * restarts); a raft snapshot restored while one runs waits for that run first.
 *
 * Threading: the loop thread owns everything, except that while a partition's job runs (load
 * or fsync) the job's thread uses that partition's log (and, for a load, the new manager
 * and store) and the loop thread does not touch them. A consumer group's large target
 * assignment also runs on the thread pool (on_offload), on a copy of the group that only the
 * job touches; any number of those may run next to a partition's job.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cluster/cluster.h"
#include "coord/coord_int.h"
#include "log/log.h"
#include "proto/errors.h"
#include "util/container.h"
#include "util/diag.h"
#include "util/hash.h"

enum { RETRY_MIN_MS = 100, RETRY_MAX_MS = 5000 };

typedef struct part_s {
    kc_partition_t pub; /* first: kc_partition_t * and part_t * convert */
    kc_coord_t *coord;
    uv_timer_t timer; /* the group manager's next deadline */
    uv_timer_t retry; /* reload after a failure */
    bool touched;

    kc_plog_t *log;
    kc_log_record_t *pend; /* pending records; key and value owned */
    size_t n_pend, cap_pend;
    uint64_t seq_emitted; /* records emitted so far */
    uint64_t seq_written; /* of those, appended to the log */
    uint64_t seq_durable; /* of those, durable (acknowledged) */
    uint64_t seq_synced;  /* of those, fsynced (differs from durable with interval/never) */

    /* The job on the thread pool (at most one): a load or an fsync. */
    uv_work_t work;
    bool busy;
    bool job_is_load;
    /* The compaction, beside that job (kc_plog_clean_begin/run/end): flushes go on meanwhile. */
    uv_work_t clean_work;
    kc_plog_clean_job_t *clean_job;
    bool cleaning;      /* its run is on the thread pool */
    bool clean_ready;   /* its run returned; it ends when no fsync is in flight */
    bool clean_ran;     /* the run returned (set on the worker, under the coordinator's mutex) */
    bool clean_ended;   /* ended on the loop before after_clean (clean_finish_now) */
    bool load_deferred; /* a reload waits for the run to return (both use the directory) */
    kc_plog_clean_stats_t clean;
    uint64_t sync_target;
    uint64_t sync_ns; /* how long the job's fsync took, for the metrics */
    int job_rc;
    char job_err[512];
    kc_gm_t *new_groups;
    kc_offsets_t *new_offsets;
    kc_plog_t *new_log;
    kc_plog_replay_stats_t stats;
    int64_t malformed;
    int64_t load_ms;
    bool reloading;    /* the load follows a failed write */
    int64_t retry_ms;  /* the backoff before the next reload after a failure; 0: no failure
                        * since the last durable write */
    bool queue_failed; /* a record could not be queued: memory is ahead of the log */
    /* A cluster's leader: batches of this partition it submitted that raft has not applied
     * yet; their records are in memory already, so their apply only writes the log. */
    uint64_t own_inflight;
    bool reload_pending; /* a cluster reload waits for a compaction run to return */
} part_t;

static void cluster_reload(part_t *p);

/* A reply held until its partitions' records are durable. */
typedef struct waiter_s {
    struct waiter_s *next;
    void (*release)(void *arg, bool ok);
    void *arg;
    size_t n;
    struct {
        int32_t part;
        uint64_t seq;
    } need[];
} waiter_t;

struct kc_coord_s {
    uv_loop_t *loop;
    const kc_conf_t *conf;
    kc_catalog_t *catalog;
    kc_coord_replies_t replies;
    const kc_log_io_t *io;
    part_t *parts;
    int32_t n;
    int32_t loading;
    uv_prepare_t prepare;
    uv_check_t check;          /* after each poll: when the loop last read its sockets */
    int64_t prepared_ms;       /* when on_prepare last ended, just before a poll */
    int64_t polled_ms;         /* every request that arrived before this has been read */
    uv_timer_t retention;      /* every offsets.retention.check.interval.ms: start a scan */
    uv_timer_t retention_step; /* the scan's next partition, after the loop served others */
    int32_t retention_next;    /* the partition the running scan looks at next; -1: none */
    size_t retention_removed;  /* offsets the running scan removed so far */
    uv_timer_t flush_timer;    /* log.flush.policy=interval */
    uv_timer_t cleaner;        /* log.cleaner.backoff.ms */
    uv_mutex_t clean_mu;       /* with clean_cv: a run's end, for clean_finish_now */
    uv_cond_t clean_cv;
    bool clean_running; /* one compaction at a time, as Kafka's one cleaner thread */
    int32_t clean_next; /* the round's next partition to look at; n: no round */
    waiter_t *waiters, **waiters_tail;
    int open_handles;
    int jobs; /* thread-pool jobs in flight */
    bool loaded_once;
    bool closing;
    bool clean_start; /* data.dir held the clean-shutdown marker at start */
    /* The catalog as consumer groups see it (kc_gm_topics_t), rebuilt when its version moves. */
    kc_gm_topic_t *topics;
    size_t n_topics;
    uint64_t topics_version;  /* 0: not built */
    kc_coord_events_t events; /* what observers are told; hooks may be NULL */
    kc_meta_t *meta;          /* __kcoord_metadata-0 */
    kc_gconf_t *gconf;        /* the group configs it holds */
    /* A cluster node: raft and this node's role in it (KC_CLUSTER_*); lead_gen grows at each
     * loss of leadership, so that completions of batches submitted before are ignored. */
    bool clustered;
    kc_cluster_t *cluster;
    int role;
    uint64_t lead_gen;
    void (*done)(void *);
    void *done_arg;
};

/* Tell the observers, when they listen. */
#define EVENT(c, hook, ...)                                                                        \
    do {                                                                                           \
        if ((c)->events.hook)                                                                      \
            (c)->events.hook(__VA_ARGS__);                                                         \
    } while (0)

void kc_coord_set_events(kc_coord_t *c, const kc_coord_events_t *ev)
{
    if (ev)
        c->events = *ev;
    else
        memset(&c->events, 0, sizeof(c->events));
}

static int64_t mono_ms(void)
{
    return (int64_t)(uv_hrtime() / 1000000);
}

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int64_t kc_coord_now(const kc_coord_t *c)
{
    (void)c;
    return mono_ms();
}

kc_time_t kc_coord_time(const kc_coord_t *c)
{
    (void)c;
    return (kc_time_t){mono_ms(), wall_ms()};
}

/* ---- Callbacks from the state machines ---------------------------------------------------- */

static void on_record(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len)
{
    part_t *p = ctx;
    if (p->pub.state != KC_PART_ACTIVE || p->pub.cluster_err != 0)
        return; /* a manager being freed answers its parked requests, and a follower's replays
                 * its leader's records: neither writes anything */
    if (p->n_pend == p->cap_pend) {
        size_t cap = p->cap_pend ? p->cap_pend * 2 : 16;
        kc_log_record_t *v = realloc(p->pend, cap * sizeof(*v));
        if (v == NULL)
            goto oom;
        p->pend = v;
        p->cap_pend = cap;
    }
    uint8_t *k = malloc(key_len ? key_len : 1);
    uint8_t *val = value ? malloc(value_len ? value_len : 1) : NULL;
    if (k == NULL || (value && val == NULL)) {
        free(k);
        free(val);
        goto oom;
    }
    memcpy(k, key, key_len);
    if (value)
        memcpy(val, value, value_len);
    p->pend[p->n_pend++] = (kc_log_record_t){
        .timestamp_ms = -1, .key = k, .key_len = key_len, .value = val, .value_len = value_len};
    p->seq_emitted++;
    return;
oom:
    /* Memory now differs from what the log will hold: treat it as a failed write. */
    KC_ERROR_LIMITED("coord", "partition %d: out of memory queueing a record", p->pub.index);
    p->seq_emitted++;
    p->queue_failed = true;
}

static void on_join_done(void *ctx, void *waiter, const kc_join_group_response_t *resp)
{
    part_t *p = ctx;
    p->coord->replies.join_done(waiter, resp);
}

static void on_sync_done(void *ctx, void *waiter, const kc_sync_group_response_t *resp)
{
    part_t *p = ctx;
    p->coord->replies.sync_done(waiter, resp);
}

/* The catalog for consumer groups: a view of its topics, rebuilt when its version moved (the
 * names stay the catalog's, valid until the next change). */
static void on_topics(void *ctx, kc_gm_topics_t *out)
{
    part_t *p = ctx;
    kc_coord_t *c = p->coord;
    const kc_catalog_t *cat = c->catalog;
    memset(out, 0, sizeof(*out));
    if (c->topics_version != cat->version) {
        kc_gm_topic_t *v = cat->n ? realloc(c->topics, cat->n * sizeof(*v)) : c->topics;
        if (cat->n && v == NULL) {
            KC_ERROR_LIMITED("coord", "out of memory listing the topics for consumer groups");
            out->version = 0;
            return;
        }
        c->topics = v;
        for (size_t i = 0; i < cat->n; i++) {
            v[i].name = kc_str_c(cat->topics[i].name);
            v[i].id = cat->topics[i].id;
            v[i].partitions = cat->topics[i].partitions;
        }
        c->n_topics = cat->n;
        c->topics_version = cat->version;
    }
    out->v = c->topics;
    out->n = c->n_topics;
    out->version = c->topics_version;
}

/* ---- Held replies ------------------------------------------------------------------------- */

/* A partition whose emitted records are not all durable yet. */
static bool part_pending(const part_t *p)
{
    return p->pub.state == KC_PART_ACTIVE && p->seq_emitted > p->seq_durable;
}

bool kc_coord_pending(const kc_coord_t *c, const int32_t *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (part_pending(&c->parts[parts[i]]))
            return true;
    return false;
}

int kc_coord_hold(kc_coord_t *c, const int32_t *parts, size_t n, void (*release)(void *, bool),
                  void *arg)
{
    size_t need = 0;
    for (size_t i = 0; i < n; i++)
        if (part_pending(&c->parts[parts[i]]))
            need++;
    if (need == 0)
        return 0;
    waiter_t *w = malloc(sizeof(*w) + need * sizeof(w->need[0]));
    if (w == NULL)
        return -1; /* cannot wait: the caller must not acknowledge what is not durable */
    w->next = NULL;
    w->release = release;
    w->arg = arg;
    w->n = 0;
    for (size_t i = 0; i < n; i++) {
        part_t *p = &c->parts[parts[i]];
        if (part_pending(p)) {
            w->need[w->n].part = parts[i];
            w->need[w->n].seq = p->seq_emitted;
            w->n++;
        }
    }
    *c->waiters_tail = w;
    c->waiters_tail = &w->next;
    return 1;
}

/* Release every waiter whose records are durable, and, when `failed` is set, fail every waiter
 * that needed records of `failed` beyond what is durable there. */
static void check_waiters(kc_coord_t *c, const part_t *failed)
{
    waiter_t **pp = &c->waiters;
    while (*pp) {
        waiter_t *w = *pp;
        bool ok = true, bad = false;
        for (size_t i = 0; i < w->n; i++) {
            const part_t *p = &c->parts[w->need[i].part];
            if (p->seq_durable < w->need[i].seq) {
                ok = false;
                if (p == failed)
                    bad = true;
            }
        }
        if (!ok && !bad) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        if (c->waiters_tail == &w->next)
            c->waiters_tail = pp;
        w->release(w->arg, ok);
        free(w);
    }
}

/* ---- Loading ------------------------------------------------------------------------------ */

static void on_part_timer(uv_timer_t *t);
static void start_load(part_t *p);
static void retry_later(part_t *p);
static void maybe_free(kc_coord_t *c);

/* A consumer group's target assignment on the thread pool (the manager's offload op). The
 * job is self-contained; the partition's manager may be freed (reload, close) while it runs,
 * and kc_gm_job_done copes with that. */
typedef struct assign_req_s {
    uv_work_t work;
    part_t *p;
    kc_gm_job_t *job;
} assign_req_t;

static void assign_work(uv_work_t *w)
{
    assign_req_t *r = container_of(w, assign_req_t, work);
    kc_gm_job_run(r->job);
}

static void after_assign(uv_work_t *w, int status)
{
    assign_req_t *r = container_of(w, assign_req_t, work);
    part_t *p = r->p;
    kc_coord_t *c = p->coord;
    c->jobs--;
    if (status != 0) /* cancelled before it ran: compute it here */
        kc_gm_job_run(r->job);
    kc_gm_job_done(r->job, kc_coord_time(c));
    p->touched = true;
    free(r);
    if (c->closing)
        maybe_free(c);
}

static int on_offload(void *ctx, kc_gm_job_t *job)
{
    part_t *p = ctx;
    kc_coord_t *c = p->coord;
    if (c->closing)
        return -1;
    assign_req_t *r = malloc(sizeof(*r));
    if (r == NULL)
        return -1;
    r->p = p;
    r->job = job;
    if (uv_queue_work(c->loop, &r->work, assign_work, after_assign) != 0) {
        free(r);
        return -1;
    }
    c->jobs++;
    return 0;
}

/* The settings table's migration policies are the group room's, in the same order. */
_Static_assert((int)KC_CONF_MIGRATION_BIDIRECTIONAL == (int)KC_GM_MIGRATION_BIDIRECTIONAL &&
                   (int)KC_CONF_MIGRATION_UPGRADE == (int)KC_GM_MIGRATION_UPGRADE &&
                   (int)KC_CONF_MIGRATION_DOWNGRADE == (int)KC_GM_MIGRATION_DOWNGRADE &&
                   (int)KC_CONF_MIGRATION_DISABLED == (int)KC_GM_MIGRATION_DISABLED,
               "group.consumer.migration.policy values");

/* A group's configs, for its consumer machine (loop thread). */
static void on_group_config(void *ctx, kc_str_t group_id, kc_gm_group_config_t *out)
{
    part_t *p = ctx;
    int32_t v[KC_GCONF_N];
    kc_gconf_lookup(p->coord->gconf, group_id, v);
    out->session_timeout_ms = v[KC_GCONF_SESSION];
    out->heartbeat_interval_ms = v[KC_GCONF_HEARTBEAT];
    out->assignment_interval_ms = v[KC_GCONF_ASSIGNMENT];
}

static void make_state(part_t *p, kc_gm_t **gm, kc_offsets_t **off)
{
    const kc_conf_t *conf = p->coord->conf;
    kc_gm_config_t gcfg = {
        .partition = p->pub.index,
        .min_session_timeout_ms = conf->group_min_session_timeout_ms,
        .max_session_timeout_ms = conf->group_max_session_timeout_ms,
        .initial_rebalance_delay_ms = conf->group_initial_rebalance_delay_ms,
        .max_size = conf->group_max_size,
        .new_member_join_timeout_ms = 300000,
        .consumer_heartbeat_interval_ms = conf->group_consumer_heartbeat_interval_ms,
        .consumer_session_timeout_ms = conf->group_consumer_session_timeout_ms,
        .consumer_max_size = conf->group_consumer_max_size,
        .consumer_assignment_interval_ms = conf->group_consumer_assignment_interval_ms,
        .consumer_assignors = conf->group_consumer_assignors,
        .consumer_migration_policy = conf->group_consumer_migration_policy,
        .consumer_offload_threshold = !conf->group_consumer_assignor_offload_enable ? -1
                                      : conf->group_consumer_assignor_offload_threshold > 0
                                          ? conf->group_consumer_assignor_offload_threshold
                                          : 1,
        .consumer_regex_max_bytes = conf->group_consumer_regex_max_bytes,
        .consumer_regex_max_count = conf->group_consumer_regex_max_count,
        .consumer_regex_filtered =
            conf->authorizer_class_name != NULL && conf->authorizer_class_name[0] != '\0',
        .consumer_regex_refresh_interval_ms = conf->group_consumer_regex_refresh_interval_ms,
        .record_max_bytes = conf->message_max_bytes,
        .reload = p->reloading || p->retry_ms > 0,
    };
    kc_gm_ops_t gops = {p,         on_join_done, on_sync_done,   on_record,
                        on_topics, on_offload,   on_group_config};
    kc_offsets_ops_t oops = {p, on_record};
    *gm = kc_gm_new(&gcfg, &gops);
    *off = kc_offsets_new(&oops);
}

static int replay_one(void *arg, const kc_log_record_t *rec)
{
    part_t *p = arg;
    int rc = kc_shard_replay_into(p->new_groups, p->new_offsets, rec->key, rec->key_len, rec->value,
                                  rec->value_len);
    if (rc == -2) {
        p->malformed++; /* skipped, as Kafka's loader skips what it cannot read */
        rc = 0;
    }
    return rc;
}

/* Thread pool: open and replay. Touches only this partition's new_* fields. */
static void load_work(uv_work_t *w)
{
    part_t *p = container_of(w, part_t, work);
    const kc_conf_t *conf = p->coord->conf;
    kc_plog_opts_t opts;
    kc_plog_opts_init(&opts);
    opts.segment_bytes = conf->offsets_topic_segment_bytes;
    opts.roll_ms = conf->log_roll_ms;
    opts.codec = conf->offsets_topic_compression_codec == KC_CONF_CODEC_ZSTD ? KC_LOG_CODEC_ZSTD
                                                                             : KC_LOG_CODEC_NONE;
    opts.clean_shutdown = p->coord->clean_start && !p->reloading;
    int64_t t0 = mono_ms();
    p->job_err[0] = '\0';
    p->malformed = 0;
    memset(&p->stats, 0, sizeof(p->stats));
    p->job_rc = kc_plog_open(&p->new_log, p->coord->io, conf->data_dir, p->pub.index, &opts,
                             p->job_err, sizeof(p->job_err));
    if (p->job_rc != 0) {
        /* Its message starts with "partition N: ", which after_load's line says already. */
        char pre[32];
        size_t n = (size_t)snprintf(pre, sizeof(pre), "partition %d: ", (int)p->pub.index);
        if (strncmp(p->job_err, pre, n) == 0)
            memmove(p->job_err, p->job_err + n, strlen(p->job_err + n) + 1);
        return;
    }
    make_state(p, &p->new_groups, &p->new_offsets);
    if (p->new_groups == NULL || p->new_offsets == NULL) {
        p->job_rc = -12;
        snprintf(p->job_err, sizeof(p->job_err), "out of memory");
        return;
    }
    p->job_rc = kc_plog_replay(p->new_log, replay_one, p, &p->stats);
    p->load_ms = mono_ms() - t0;
    if (p->job_rc != 0)
        snprintf(p->job_err, sizeof(p->job_err), "%s", kc_plog_error(p->new_log));
}

static void discard_new(part_t *p)
{
    if (p->new_groups)
        kc_gm_free(p->new_groups);
    if (p->new_offsets)
        kc_offsets_free(p->new_offsets);
    kc_plog_close(p->new_log);
    p->new_groups = NULL;
    p->new_offsets = NULL;
    p->new_log = NULL;
}

static void maybe_free(kc_coord_t *c);

/* Note the log's size for the metrics; only when no job uses the log. */
static void note_log_size(part_t *p)
{
    if (p->log == NULL)
        return;
    p->pub.obs.log_bytes = kc_plog_size_bytes(p->log);
    p->pub.obs.log_segments = (int64_t)kc_plog_segment_count(p->log);
}

static void on_retry(uv_timer_t *t)
{
    part_t *p = t->data;
    if (!p->coord->closing && !p->busy)
        start_load(p);
}

/* Leave `p` FAILED for its backoff, then reload it; the next backoff is twice as long. */
static void retry_later(part_t *p)
{
    p->pub.state = KC_PART_FAILED;
    p->pub.obs.out = p->reloading ? KC_PART_OUT_WRITE_RETRY : KC_PART_OUT_LOAD_RETRY;
    uv_timer_start(&p->retry, on_retry, (uint64_t)p->retry_ms, 0);
    p->retry_ms = p->retry_ms * 2 < RETRY_MAX_MS ? p->retry_ms * 2 : RETRY_MAX_MS;
}

/* The first load of every partition has ended, each served or failed: one line says so (tests
 * and operators wait for it), whichever partition ended last. */
static void load_settled(kc_coord_t *c)
{
    if (c->loading != 0 || c->loaded_once)
        return;
    c->loaded_once = true;
    int failed = 0;
    for (int i = 0; i < c->n; i++)
        failed += c->parts[i].pub.state == KC_PART_FAILED;
    if (failed == 0)
        KC_INFO("coord", "all %d partitions loaded", c->n);
    else
        KC_WARN("coord", "all %d partitions loaded; %d of them failed to load and are not served",
                c->n, failed);
}

static void after_load(uv_work_t *w, int status)
{
    part_t *p = container_of(w, part_t, work);
    kc_coord_t *c = p->coord;
    p->busy = false;
    c->jobs--;
    c->loading--;
    if (c->closing || status != 0) {
        discard_new(p);
        maybe_free(c);
        return;
    }
    if (p->job_rc != 0) {
        /* An I/O error (a negative errno: EIO, EROFS, ENOSPC, EACCES, EMFILE, ENOMEM...) may
         * heal; corrupt or unsupported log data (KC_LOG_E*) and refused options do not. */
        bool heals = p->job_rc < 0 && p->job_rc > -4096 && p->job_rc != -EINVAL &&
                     p->job_rc != -ENAMETOOLONG;
        if (heals && p->retry_ms == 0)
            p->retry_ms = RETRY_MIN_MS;
        KC_ERROR_LIMITED("coord", "partition %d is not served: %s%s", p->pub.index,
                         p->job_err[0] ? p->job_err : kc_log_strerror(p->job_rc),
                         heals ? "; retrying with backoff" : "");
        if (p->job_rc == KC_LOG_ECORRUPT)
            EVENT(c, log_corrupt);
        discard_new(p);
        p->pub.state = KC_PART_FAILED;
        p->pub.obs.out = KC_PART_OUT_LOAD;
        if (heals)
            retry_later(p);
        load_settled(c);
        return;
    }
    p->pub.groups = p->new_groups;
    p->pub.offsets = p->new_offsets;
    p->log = p->new_log;
    p->new_groups = NULL;
    p->new_offsets = NULL;
    p->new_log = NULL;
    bool after_failure = p->reloading || p->retry_ms > 0; /* a failed write or load */
    p->pub.state = KC_PART_ACTIVE;
    p->job_rc = 0;
    p->pub.obs.load_ms = p->load_ms;
    note_log_size(p);
    if (p->pub.cluster_err == 0)
        kc_gm_load_complete(p->pub.groups, kc_coord_time(c));
    p->touched = true;
    p->reloading = false;
    if (after_failure)
        KC_INFO_LIMITED("coord", "partition %d is served again, reloaded from its log in %lld ms",
                        p->pub.index, (long long)p->load_ms);
    else if (p->stats.records > 0 || p->malformed > 0)
        KC_INFO("coord",
                "partition %d loaded in %lld ms: %lld records in %lld batches, %zu offsets of "
                "%zu groups%s",
                p->pub.index, (long long)p->load_ms, (long long)p->stats.records,
                (long long)p->stats.batches, kc_offsets_total(p->pub.offsets),
                kc_offsets_groups(p->pub.offsets),
                p->malformed ? " (unreadable records skipped)" : "");
    load_settled(c);
}

static void start_load(part_t *p)
{
    kc_coord_t *c = p->coord;
    p->pub.state = KC_PART_LOADING;
    if (p->cleaning) { /* after_clean starts it */
        p->load_deferred = true;
        return;
    }
    p->busy = true;
    p->job_is_load = true;
    c->jobs++;
    c->loading++;
    uv_queue_work(c->loop, &p->work, load_work, after_load);
}

/* ---- Group commit ------------------------------------------------------------------------- */

static void free_pending(part_t *p)
{
    for (size_t i = 0; i < p->n_pend; i++) {
        free((void *)p->pend[i].key);
        free((void *)p->pend[i].value);
    }
    p->n_pend = 0;
}

static void end_clean(part_t *p);

/* A write or fsync failed: fail what waited on it, drop what is not durable, and reload the
 * partition so that memory equals the log again. */
static void write_failed(part_t *p, int rc)
{
    kc_coord_t *c = p->coord;
    bool lost = rc == KC_LOG_EGONE; /* no reload: the data is not in the directory any more */
    if (lost)
        KC_ERROR("coord",
                 "partition %d: %s; failing %llu unwritten records; the partition is out of "
                 "service until a restart",
                 p->pub.index, kc_plog_error(p->log),
                 (unsigned long long)(p->seq_emitted - p->seq_durable));
    else
        KC_ERROR_LIMITED(
            "coord",
            "partition %d: log write failed: %s; failing %llu unwritten records and reloading the "
            "partition from its log%s",
            p->pub.index,
            p->log && kc_plog_error(p->log)[0] ? kc_plog_error(p->log) : kc_log_strerror(rc),
            (unsigned long long)(p->seq_emitted - p->seq_durable),
            p->retry_ms > 0 ? " after a backoff" : "");
    EVENT(c, log_write_failed);
    if (lost)
        EVENT(c, log_segment_lost);
    p->pub.obs.write_failing = true;
    p->pub.obs.write_failed_ms = kc_coord_now(c);
    free_pending(p);
    p->pub.state = KC_PART_LOADING;
    check_waiters(c, p);
    p->seq_written = p->seq_durable = p->seq_synced = p->seq_emitted;
    kc_gm_t *gm = p->pub.groups;
    kc_offsets_t *off = p->pub.offsets;
    p->pub.groups = NULL;
    p->pub.offsets = NULL;
    if (gm)
        kc_gm_free(gm); /* answers its parked requests; on_record ignores a LOADING partition */
    if (off)
        kc_offsets_free(off);
    kc_plog_close(p->log);
    p->log = NULL;
    end_clean(p); /* a compaction that finished meanwhile: its files stay, the reload reads them */
    uv_timer_stop(&p->timer);
    if (lost) {
        p->pub.state = KC_PART_FAILED;
        p->pub.obs.out = KC_PART_OUT_LOST;
        return;
    }
    p->reloading = true;
    if (c->closing)
        return;
    if (p->retry_ms == 0) { /* the first failure since a durable write: reload at once */
        p->retry_ms = RETRY_MIN_MS;
        start_load(p);
    } else {
        retry_later(p);
    }
}

static void sync_work(uv_work_t *w)
{
    part_t *p = container_of(w, part_t, work);
    uint64_t t0 = uv_hrtime();
    p->job_rc = kc_plog_sync(p->log);
    p->sync_ns = uv_hrtime() - t0;
}

static void flush_partition(part_t *p);

static void after_sync(uv_work_t *w, int status)
{
    part_t *p = container_of(w, part_t, work);
    kc_coord_t *c = p->coord;
    p->busy = false;
    c->jobs--;
    if (status == 0 && p->job_rc == 0) {
        EVENT(c, log_fsync, p->sync_ns);
        p->pub.obs.write_failing = false;
        p->retry_ms = 0;
        p->seq_synced = p->sync_target;
        if (p->seq_durable < p->sync_target)
            p->seq_durable = p->sync_target;
        check_waiters(c, NULL);
        end_clean(p);
    } else {
        write_failed(p, status ? status : p->job_rc);
    }
    if (c->closing) {
        flush_partition(p);
        maybe_free(c);
    }
}

static void start_sync(part_t *p)
{
    kc_coord_t *c = p->coord;
    p->busy = true;
    p->job_is_load = false;
    p->sync_target = p->seq_written;
    c->jobs++;
    uv_queue_work(c->loop, &p->work, sync_work, after_sync);
}

/* Append the pending records as one batch; then make them durable as the policy says. At
 * shutdown the fsync runs here, on the loop thread. */
static void cluster_flush(part_t *p);
static void cluster_flush_all(kc_coord_t *c);

static void flush_partition(part_t *p)
{
    kc_coord_t *c = p->coord;
    if (c->clustered) {
        cluster_flush(p);
        return;
    }
    if (p->pub.state != KC_PART_ACTIVE || p->busy)
        return;
    if (p->queue_failed) {
        p->queue_failed = false;
        write_failed(p, -12);
        return;
    }
    if (p->n_pend > 0) {
        int64_t size0 = kc_plog_size_bytes(p->log);
        int rc = kc_plog_append(p->log, p->pend, p->n_pend, wall_ms(), NULL);
        if (rc != 0) {
            write_failed(p, rc);
            return;
        }
        note_log_size(p);
        int64_t grown = p->pub.obs.log_bytes - size0;
        EVENT(c, log_append, p->n_pend, grown > 0 ? (uint64_t)grown : 0);
        if (c->conf->log_flush_policy != KC_CONF_FLUSH_ALWAYS) {
            p->pub.obs.write_failing = false; /* no fsync will say so */
            p->retry_ms = 0;
        }
        free_pending(p);
        p->seq_written = p->seq_emitted;
    }
    if (p->seq_synced == p->seq_written)
        return;
    int policy = c->conf->log_flush_policy;
    if (c->closing) {
        uint64_t t0 = uv_hrtime();
        int rc = kc_plog_sync(p->log);
        EVENT(c, log_fsync, uv_hrtime() - t0);
        if (rc != 0) {
            write_failed(p, rc);
            return;
        }
        p->seq_synced = p->seq_durable = p->seq_written;
        check_waiters(c, NULL);
    } else if (policy == KC_CONF_FLUSH_ALWAYS) {
        start_sync(p);
    } else if (p->seq_durable < p->seq_written) {
        p->seq_durable = p->seq_written; /* interval and never: acknowledged once written */
        check_waiters(c, NULL);
    }
}

static void on_flush_timer(uv_timer_t *t)
{
    kc_coord_t *c = t->data;
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (p->pub.state == KC_PART_ACTIVE && !p->busy && p->seq_synced < p->seq_written)
            start_sync(p);
    }
    int rc = kc_meta_sync(c->meta);
    if (rc != 0)
        KC_ERROR_LIMITED("coord", "%s-0: fsync failed: %s", KC_META_TOPIC, kc_log_strerror(rc));
}

/* A partition's timers are due. They are judged at the time the loop last read its sockets,
 * not later: a heartbeat that arrived before a member's deadline has then been handled
 * before the member's expiry is judged, even when the loop was held up meanwhile. The group
 * manager fires a bounded slice of timers per tick; when more are due, its next deadline is
 * already past and this timer runs again at 0 ms, after the loop has polled its sockets. */
static void on_part_timer(uv_timer_t *t)
{
    part_t *p = t->data;
    if (p->pub.state != KC_PART_ACTIVE || p->pub.cluster_err != 0)
        return;
    kc_time_t now = kc_coord_time(p->coord);
    if (now.mono_ms > p->coord->polled_ms)
        now.mono_ms = p->coord->polled_ms;
    kc_gm_tick(p->pub.groups, now);
    p->touched = true;
}

/* After the loop polled and handled what it read: whatever arrived before the poll began
 * (on_prepare's end) or before it returned (uv_now, the loop's time updated then, on the same
 * monotonic clock as mono_ms but coarser) has been read. */
static void on_check(uv_check_t *h)
{
    kc_coord_t *c = h->data;
    int64_t returned = (int64_t)uv_now(c->loop);
    c->polled_ms = returned > c->prepared_ms ? returned : c->prepared_ms;
}

/* Before the loop sleeps: write the pending batches, and arm each touched partition's timer at
 * its group manager's next deadline (0 ms when its last tick stopped with more due: the timer
 * then runs after the poll). */
static void on_retention_step(uv_timer_t *t);

static void on_prepare(uv_prepare_t *h)
{
    kc_coord_t *c = h->data;
    /* Armed here, not from a timer callback: libuv runs a timer started at 0 ms from another
     * timer's callback in the same pass, before any poll. */
    if (c->retention_next >= 0 && !c->closing && !uv_is_active((uv_handle_t *)&c->retention_step))
        uv_timer_start(&c->retention_step, on_retention_step, 0, 0);
    int64_t now = -1;
    if (c->clustered)
        cluster_flush_all(c);
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (p->n_pend > 0 || p->queue_failed)
            flush_partition(p);
        if (!p->touched)
            continue;
        p->touched = false;
        if (p->pub.state != KC_PART_ACTIVE || p->pub.cluster_err != 0)
            continue;
        int64_t when = kc_gm_next_deadline(p->pub.groups);
        if (when == INT64_MAX) {
            uv_timer_stop(&p->timer);
            continue;
        }
        if (now < 0)
            now = kc_coord_now(c);
        uint64_t delay = when > now ? (uint64_t)(when - now) : 0;
        uv_timer_start(&p->timer, on_part_timer, delay, 0);
    }
    c->prepared_ms = mono_ms();
}

/* ---- The cleaner ---------------------------------------------------------------------------- */

/* Thread pool: compact the closed segments (kc_plog_clean_run), on the job alone. The loop
 * goes on appending to the partition's log and fsyncing it meanwhile. */
static void clean_work(uv_work_t *w)
{
    part_t *p = container_of(w, part_t, clean_work);
    (void)kc_plog_clean_run(p->clean_job);
    uv_mutex_lock(&p->coord->clean_mu);
    p->clean_ran = true;
    uv_cond_broadcast(&p->coord->clean_cv);
    uv_mutex_unlock(&p->coord->clean_mu);
}

/* Put a finished compaction into the log (or drop the job when the log was closed meanwhile).
 * Only when no fsync is in flight: otherwise after_sync calls this again. */
static void end_clean(part_t *p)
{
    if (!p->clean_ready || (p->busy && p->log != NULL))
        return;
    p->clean_ready = false;
    memset(&p->clean, 0, sizeof(p->clean));
    int rc = kc_plog_clean_end(p->log, p->clean_job, &p->clean);
    p->clean_job = NULL;
    EVENT(p->coord, cleaner_run, rc == 0, p->clean.bytes_before - p->clean.bytes_after);
    if (p->log == NULL)
        return;
    note_log_size(p);
    if (rc == 0) {
        KC_INFO("coord",
                "partition %d cleaned: %lld -> %lld bytes, %lld -> %lld records in closed "
                "segments (%lld superseded, %lld tombstones dropped)",
                p->pub.index, (long long)p->clean.bytes_before, (long long)p->clean.bytes_after,
                (long long)p->clean.records_before, (long long)p->clean.records_after,
                (long long)p->clean.superseded, (long long)p->clean.tombstones_dropped);
    } else {
        /* The log stays consistent (a half-done swap is finished at the next clean or
         * replay); only the compaction is lost. */
        KC_WARN_LIMITED("coord", "partition %d: cleaning failed: %s", p->pub.index,
                        kc_plog_error(p->log)[0] ? kc_plog_error(p->log) : kc_log_strerror(rc));
    }
}

static void start_clean(kc_coord_t *c);

/* A cluster node that must replace a partition's log now (a raft snapshot restored) while its
 * compaction runs: wait on the loop until the run returns (it works on a copy of the closed
 * segments, a bounded job), and put it in place, so that the log is the partition's alone
 * again. after_clean only does the bookkeeping then. */
static void clean_finish_now(part_t *p)
{
    if (!p->cleaning)
        return;
    uv_mutex_lock(&p->coord->clean_mu);
    while (!p->clean_ran)
        uv_cond_wait(&p->coord->clean_cv, &p->coord->clean_mu);
    uv_mutex_unlock(&p->coord->clean_mu);
    p->cleaning = false;
    p->clean_ended = true;
    p->clean_ready = true;
    end_clean(p);
}

static void after_clean(uv_work_t *w, int status)
{
    part_t *p = container_of(w, part_t, clean_work);
    kc_coord_t *c = p->coord;
    (void)status; /* the work is never cancelled */
    p->cleaning = false;
    p->clean_ready = !p->clean_ended; /* else clean_finish_now ended it */
    p->clean_ended = false;
    c->clean_running = false;
    c->jobs--;
    end_clean(p);
    if (p->reload_pending && !c->closing)
        cluster_reload(p);
    if (p->load_deferred) {
        p->load_deferred = false;
        if (!c->closing)
            start_load(p);
    }
    if (c->closing)
        maybe_free(c);
    else
        start_clean(c); /* the round's next partition that is due, at once */
}

/* Go on with the round: start the compaction of the next partition whose closed segments are
 * worth it, unless one runs already. A partition with an fsync in flight at that moment is
 * passed over until the next round. */
static void start_clean(kc_coord_t *c)
{
    while (c->clean_next < c->n && !c->clean_running) {
        part_t *p = &c->parts[c->clean_next++];
        if (p->pub.state != KC_PART_ACTIVE || p->busy || p->cleaning || p->clean_ready ||
            !kc_plog_clean_due(p->log, KC_PLOG_MIN_CLEANABLE_RATIO_DEFAULT))
            continue;
        if (kc_plog_clean_begin(p->log, wall_ms(), c->conf->log_cleaner_delete_retention_ms,
                                &p->clean_job) != 0)
            continue; /* out of memory: the next round tries again */
        p->cleaning = true;
        p->clean_ran = false;
        c->clean_running = true;
        c->jobs++;
        uv_queue_work(c->loop, &p->clean_work, clean_work, after_clean);
    }
}

/* Every log.cleaner.backoff.ms: a round over the partitions, unless the last one still runs. */
static void on_cleaner(uv_timer_t *t)
{
    kc_coord_t *c = t->data;
    if (c->clean_next < c->n || c->clean_running)
        return;
    c->clean_next = 0;
    start_clean(c);
}

/* ---- Retention ---------------------------------------------------------------------------- */

/* One partition of the retention scan; on_prepare runs the next one at the next loop turn,
 * after the poll: a scan of every partition's offsets at once would hold the loop for all of
 * them. */
static void on_retention_step(uv_timer_t *t)
{
    kc_coord_t *c = t->data;
    if (c->retention_next < 0 || c->retention_next >= c->n)
        return;
    part_t *p = &c->parts[c->retention_next++];
    if (p->pub.state == KC_PART_ACTIVE && p->pub.cluster_err == 0) {
        int64_t retention_ms = (int64_t)c->conf->offsets_retention_minutes * 60000;
        c->retention_removed += kc_shard_expire(&p->pub, kc_coord_time(c), retention_ms);
        p->touched = true;
    }
    if (c->retention_next < c->n)
        return; /* on_prepare starts the step timer again */
    if (c->retention_removed > 0)
        KC_INFO("coord", "offsets retention removed %zu expired offsets", c->retention_removed);
    c->retention_next = -1;
}

static void on_retention(uv_timer_t *t)
{
    kc_coord_t *c = t->data;
    if (c->retention_next >= 0)
        return; /* the last scan is still running */
    c->retention_next = 0;
    c->retention_removed = 0;
    on_retention_step(&c->retention_step);
}

/* ---- A cluster node ------------------------------------------------------------------------

 * Raft is the log of a cluster node: the leader's pending records go to raft as one batch per
 * partition and loop turn (cluster_flush), replies wait for raft's commit (on_committed), and
 * every committed batch comes back through cluster_apply, on every node, in log order, to be
 * appended to the partition's own log and, unless the leader has those records in memory
 * already, replayed into its groups and offsets. */

/* One submission (the batches of several partitions), for its completion. */
typedef struct submit_tok_s {
    uint64_t lead_gen; /* the coordinator's lead_gen then */
    kc_coord_t *c;
    uint64_t meta_seq; /* the metadata partition's writes it completes; 0: none */
    size_t n;
    struct {
        part_t *p;
        uint64_t seq; /* the partition's seq_emitted when it was submitted */
    } e[];
} submit_tok_t;

static void set_cluster_err(kc_coord_t *c, int16_t err)
{
    for (int32_t i = 0; i < c->n; i++)
        c->parts[i].pub.cluster_err = err;
}

static kc_plog_opts_t plog_opts(const kc_conf_t *conf)
{
    kc_plog_opts_t opts;
    kc_plog_opts_init(&opts);
    opts.segment_bytes = conf->offsets_topic_segment_bytes;
    opts.roll_ms = conf->log_roll_ms;
    opts.codec = conf->offsets_topic_compression_codec == KC_CONF_CODEC_ZSTD ? KC_LOG_CODEC_ZSTD
                                                                             : KC_LOG_CODEC_NONE;
    return opts;
}

/* The partition cannot follow raft any more (its log could not take a committed batch): out of
 * service until a restart, which rebuilds it from raft. */
static void cluster_diverged(part_t *p, const char *why)
{
    KC_ERROR("coord",
             "partition %d: %s; the partition is out of service until a restart "
             "rebuilds it from the cluster",
             p->pub.index, why);
    p->pub.state = KC_PART_FAILED;
    p->pub.obs.out = KC_PART_OUT_LOST;
    p->pub.obs.write_failing = true;
    p->pub.obs.write_failed_ms = kc_coord_now(p->coord);
    EVENT(p->coord, log_write_failed);
}

/* Throw the partition's groups and offsets away and replay them from its log, which holds
 * exactly what raft committed and this node applied. Waits for a compaction run to return. */
static void cluster_reload(part_t *p)
{
    kc_coord_t *c = p->coord;
    p->own_inflight = 0;
    free_pending(p);
    p->seq_written = p->seq_durable = p->seq_synced = p->seq_emitted;
    kc_gm_t *gm = p->pub.groups;
    kc_offsets_t *off = p->pub.offsets;
    p->pub.groups = NULL;
    p->pub.offsets = NULL;
    int state = p->pub.state;
    p->pub.state = KC_PART_LOADING; /* on_record ignores what the freed manager says */
    if (gm)
        kc_gm_free(gm); /* answers its parked requests */
    if (off)
        kc_offsets_free(off);
    uv_timer_stop(&p->timer);
    if (state == KC_PART_FAILED || p->log == NULL) {
        p->pub.state = KC_PART_FAILED;
        return;
    }
    if (p->cleaning) {
        p->reload_pending = true; /* after_clean calls again; applies only append meanwhile */
        return;
    }
    p->reload_pending = false;
    make_state(p, &p->new_groups, &p->new_offsets);
    int rc = p->new_groups && p->new_offsets ? 0 : -ENOMEM;
    p->malformed = 0;
    if (rc == 0)
        rc = kc_plog_replay(p->log, replay_one, p, &p->stats);
    if (rc != 0) {
        if (p->new_groups)
            kc_gm_free(p->new_groups);
        if (p->new_offsets)
            kc_offsets_free(p->new_offsets);
        p->new_groups = NULL;
        p->new_offsets = NULL;
        cluster_diverged(p, rc == -ENOMEM ? "out of memory reloading" : kc_plog_error(p->log));
        return;
    }
    p->pub.groups = p->new_groups;
    p->pub.offsets = p->new_offsets;
    p->new_groups = NULL;
    p->new_offsets = NULL;
    p->pub.state = KC_PART_ACTIVE;
    if (p->pub.cluster_err == 0)
        kc_gm_load_complete(p->pub.groups, kc_coord_time(c));
    p->touched = true;
}

static void on_committed(void *arg, int status)
{
    submit_tok_t *t = arg;
    kc_coord_t *c = t->c;
    if (t->lead_gen != c->lead_gen || c->closing) {
        free(t); /* leadership was lost since: its waiters failed and the state was reloaded */
        return;
    }
    if (t->meta_seq > 0) /* applied already: every node applies it when committed */
        kc_meta_cluster_done(c->meta, t->meta_seq,
                             status == KC_CLUSTER_OK    ? KC_ERR_NONE
                             : status == KC_CLUSTER_EIO ? KC_ERR_KAFKA_STORAGE_ERROR
                                                        : KC_ERR_NOT_CONTROLLER);
    if (status == KC_CLUSTER_OK) {
        for (size_t i = 0; i < t->n; i++) {
            part_t *p = t->e[i].p;
            if (p->seq_durable < t->e[i].seq)
                p->seq_durable = t->e[i].seq;
            p->pub.obs.write_failing = false;
        }
        free(t);
        check_waiters(c, NULL);
        return;
    }
    /* Not committed: memory is ahead of what raft holds. Fail what waited on the partitions
     * and go back to their logs. A lost leadership also reloads everything (cluster_role). */
    KC_WARN_LIMITED("coord",
                    "the batches of %zu partitions were not committed (%s); failing "
                    "what waited on them and reloading them from their logs",
                    t->n,
                    status == KC_CLUSTER_ENOTLEADER  ? "leadership lost"
                    : status == KC_CLUSTER_ESHUTDOWN ? "shutting down"
                                                     : "raft could not store them");
    for (size_t i = 0; i < t->n; i++) {
        check_waiters(c, t->e[i].p);
        cluster_reload(t->e[i].p);
    }
    free(t);
}

/* A partition's pending records that cannot go to raft: fail what waited on them. */
static void cluster_unsubmitted(part_t *p, const char *why)
{
    KC_WARN_LIMITED("coord",
                    "partition %d: %zu records not submitted (%s); failing what "
                    "waited on them",
                    p->pub.index, p->n_pend, why);
    p->queue_failed = false;
    check_waiters(p->coord, p);
    cluster_reload(p);
}

/* The metadata partition's pending records as the entry's batch v[*k] (then ++*k); their
 * sequence number, or 0 when there are none or they failed (their writes are told). */
static uint64_t cluster_meta_batch(kc_coord_t *c, kc_cluster_part_t *v, size_t *k, int64_t now)
{
    if (!kc_meta_cluster_pending(c->meta))
        return 0;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t seq = 0;
    int rc = kc_meta_cluster_batch(c->meta, now, &buf, &len, &seq);
    if (rc != 0) {
        KC_ERROR_LIMITED("coord", "%s-0: no batch: %s", KC_META_TOPIC, kc_log_strerror(rc));
        kc_meta_cluster_fail(c->meta, KC_ERR_UNKNOWN_SERVER_ERROR);
        return 0;
    }
    v[(*k)++] = (kc_cluster_part_t){KC_COORD_META_PARTITION, buf, len};
    return seq;
}

/* The leader's turn: the pending records of every partition, one batch each, and of the
 * metadata partition, as one raft entry. */
static void cluster_flush_all(kc_coord_t *c)
{
    if (c->cluster != NULL && kc_cluster_draining(c->cluster))
        return; /* handing the leadership over: kept until it is lost, then thrown away */
    size_t n = 0;
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (p->pub.state != KC_PART_ACTIVE || (p->n_pend == 0 && !p->queue_failed))
            continue;
        if (p->queue_failed || c->cluster == NULL || p->pub.cluster_err != 0)
            cluster_unsubmitted(p, p->queue_failed ? "out of memory queueing a record"
                                                   : "not the leader");
        else
            n++;
    }
    bool meta = kc_meta_cluster_pending(c->meta);
    if (meta && (c->cluster == NULL || c->role != KC_CLUSTER_LEADER)) {
        kc_meta_cluster_fail(c->meta, KC_ERR_NOT_CONTROLLER);
        meta = false;
    }
    if (n == 0 && !meta)
        return;
    submit_tok_t *t = malloc(sizeof(*t) + n * sizeof(t->e[0]));
    kc_cluster_part_t *v = calloc(n + 1, sizeof(*v));
    const char *why = t && v ? NULL : "out of memory";
    int codec = c->conf->offsets_topic_compression_codec == KC_CONF_CODEC_ZSTD ? KC_LOG_CODEC_ZSTD
                                                                               : KC_LOG_CODEC_NONE;
    size_t k = 0;
    int64_t now = wall_ms();
    for (int32_t i = 0; i < c->n && why == NULL; i++) {
        part_t *p = &c->parts[i];
        if (p->pub.state != KC_PART_ACTIVE || p->n_pend == 0)
            continue;
        uint8_t *buf = NULL;
        size_t len = 0;
        int rc = kc_log_batch_build(p->pend, p->n_pend, now, codec, &buf, &len);
        if (rc != 0) {
            cluster_unsubmitted(p, kc_log_strerror(rc));
            continue;
        }
        v[k] = (kc_cluster_part_t){p->pub.index, buf, len};
        t->e[k].p = p;
        t->e[k].seq = p->seq_emitted;
        k++;
    }
    size_t nv = k;
    uint64_t meta_seq = why == NULL ? cluster_meta_batch(c, v, &nv, now) : 0;
    if (why != NULL)
        kc_meta_cluster_fail(c->meta, KC_ERR_UNKNOWN_SERVER_ERROR);
    int rc = why == NULL && nv > 0 ? 0 : -1;
    if (rc == 0) {
        t->lead_gen = c->lead_gen;
        t->c = c;
        t->meta_seq = meta_seq;
        t->n = k;
        rc = kc_cluster_submit(c->cluster, v, nv, on_committed, t);
        if (rc != 0)
            why = rc == KC_CLUSTER_ENOTLEADER ? "not the leader" : "raft refused the entry";
    }
    for (size_t i = 0; i < k; i++) {
        free((void *)v[i].batch);
        part_t *p = t->e[i].p;
        if (rc == 0) {
            p->own_inflight++;
            free_pending(p);
            p->seq_written = p->seq_emitted;
        } else if (why != NULL) {
            cluster_unsubmitted(p, why);
        }
    }
    if (nv > k) {
        free((void *)v[k].batch);
        if (rc != 0)
            kc_meta_cluster_done(c->meta, meta_seq,
                                 rc == KC_CLUSTER_ENOTLEADER ? KC_ERR_NOT_CONTROLLER
                                                             : KC_ERR_KAFKA_STORAGE_ERROR);
    }
    free(v);
    if (rc != 0)
        free(t);
}

/* A partition alone (at shutdown): its records cannot be submitted any more. */
static void cluster_flush(part_t *p)
{
    if (p->pub.state == KC_PART_ACTIVE && (p->n_pend > 0 || p->queue_failed))
        cluster_unsubmitted(p, "the node is stopping");
}

/* A committed batch: to the partition's log, and into memory unless it is there already. */
static void cluster_apply(void *ctx, int32_t part, const uint8_t *batch, size_t len, bool own)
{
    kc_coord_t *c = ctx;
    if (part == KC_COORD_META_PARTITION) {
        kc_meta_cluster_apply(c, batch, len); /* applied on every node: see kc_meta_write */
        return;
    }
    if (part < 0 || part >= c->n) {
        KC_ERROR_LIMITED("coord", "a committed batch names partition %d of %d: skipped", part,
                         c->n);
        return;
    }
    part_t *p = &c->parts[part];
    if (p->pub.state == KC_PART_FAILED || p->log == NULL)
        return; /* diverged: a restart rebuilds it */
    kc_log_record_t *recs = NULL;
    size_t n = 0;
    kc_log_batch_keep_t *keep = NULL;
    int rc = kc_log_batch_records(batch, len, &recs, &n, &keep);
    if (rc != 0) {
        cluster_diverged(p, "a committed batch cannot be read");
        return;
    }
    if (n > 0) {
        int64_t size0 = kc_plog_size_bytes(p->log);
        rc = kc_plog_append(p->log, recs, n, wall_ms(), NULL);
        if (rc != 0) {
            kc_log_batch_records_free(recs, keep);
            cluster_diverged(p, kc_plog_error(p->log)[0] ? kc_plog_error(p->log)
                                                         : kc_log_strerror(rc));
            return;
        }
        note_log_size(p);
        int64_t grown = p->pub.obs.log_bytes - size0;
        EVENT(c, log_append, n, grown > 0 ? (uint64_t)grown : 0);
    }
    if (own && p->own_inflight > 0) {
        p->own_inflight--;
    } else if (!p->reload_pending && p->pub.groups != NULL) {
        for (size_t i = 0; i < n; i++) {
            rc = kc_shard_replay_into(p->pub.groups, p->pub.offsets, recs[i].key, recs[i].key_len,
                                      recs[i].value, recs[i].value_len);
            if (rc == -1) {
                kc_log_batch_records_free(recs, keep);
                cluster_diverged(p, "out of memory replaying a committed batch");
                return;
            }
        }
        p->touched = true;
    }
    kc_log_batch_records_free(recs, keep);
}

static void cluster_role(void *ctx, int role)
{
    kc_coord_t *c = ctx;
    int was = c->role;
    c->role = role;
    if (role == KC_CLUSTER_LOADING) {
        set_cluster_err(c, KC_ERR_COORDINATOR_LOAD_IN_PROGRESS);
        return;
    }
    if (role == KC_CLUSTER_LEADER) {
        /* Everything committed before this term is applied: the groups are current. Members'
         * sessions start now, as after a load, so a failover within their session timeout
         * costs no rebalance. */
        set_cluster_err(c, 0);
        kc_time_t now = kc_coord_time(c);
        for (int32_t i = 0; i < c->n; i++) {
            part_t *p = &c->parts[i];
            if (p->pub.state == KC_PART_ACTIVE && p->pub.groups != NULL)
                kc_gm_load_complete(p->pub.groups, now);
            p->touched = true;
        }
        return;
    }
    set_cluster_err(c, KC_ERR_NOT_COORDINATOR);
    if (was == KC_CLUSTER_FOLLOWER)
        return;
    /* Leadership lost: what waits fails with NOT_COORDINATOR, and memory (which may hold
     * changes raft never committed, and the leader's in-memory-only rebalances) goes back to
     * what the logs hold. Batches of the lost term that raft still commits are replayed. */
    c->lead_gen++;
    while (c->waiters) {
        waiter_t *w = c->waiters;
        c->waiters = w->next;
        w->release(w->arg, false);
        free(w);
    }
    c->waiters_tail = &c->waiters;
    kc_meta_cluster_fail(c->meta, KC_ERR_NOT_CONTROLLER);
    for (int32_t i = 0; i < c->n; i++)
        cluster_reload(&c->parts[i]);
}

/* ---- Snapshots: every partition's live records (the newest per key, tombstones dropped) ---- */

enum { SNAP_MAGIC = 0x4b435331u /* "KCS1" */ };

typedef struct snap_rec_s {
    int64_t ts;
    size_t key_off, key_len;
    size_t value_off; /* SIZE_MAX: tombstone */
    size_t value_len;
    uint64_t hash;
} snap_rec_t;

typedef struct snap_part_s {
    kc_writer_t data; /* keys and values */
    snap_rec_t *v;
    size_t n, cap;
    bool oom;
} snap_part_t;

static int snap_collect(void *arg, const kc_log_record_t *rec)
{
    snap_part_t *sp = arg;
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 256;
        snap_rec_t *v = realloc(sp->v, cap * sizeof(*v));
        if (v == NULL) {
            sp->oom = true;
            return -1;
        }
        sp->v = v;
        sp->cap = cap;
    }
    snap_rec_t *r = &sp->v[sp->n++];
    r->ts = rec->timestamp_ms;
    r->key_off = sp->data.len;
    r->key_len = rec->key ? rec->key_len : 0;
    kc_wr_raw(&sp->data, rec->key, r->key_len);
    r->value_off = rec->value ? sp->data.len : SIZE_MAX;
    r->value_len = rec->value ? rec->value_len : 0;
    if (rec->value)
        kc_wr_raw(&sp->data, rec->value, r->value_len);
    r->hash = kc_hash_fnv1a(KC_HASH_FNV1A_SEED, rec->key, r->key_len);
    if (sp->data.err) {
        sp->oom = true;
        return -1;
    }
    return 0;
}

/* Mark in keep[] the newest record of each key (an open-addressing table of record indexes). */
static int snap_newest(const snap_part_t *sp, bool *keep)
{
    size_t size = 16;
    while (size < sp->n * 2)
        size *= 2;
    size_t *slot = malloc(size * sizeof(*slot));
    if (slot == NULL)
        return -1;
    for (size_t i = 0; i < size; i++)
        slot[i] = SIZE_MAX;
    const uint8_t *base = sp->data.buf;
    for (size_t i = 0; i < sp->n; i++) {
        const snap_rec_t *r = &sp->v[i];
        size_t j = (size_t)r->hash & (size - 1);
        while (slot[j] != SIZE_MAX) {
            const snap_rec_t *o = &sp->v[slot[j]];
            if (o->hash == r->hash && o->key_len == r->key_len &&
                memcmp(base + o->key_off, base + r->key_off, r->key_len) == 0)
                break;
            j = (j + 1) & (size - 1);
        }
        if (slot[j] != SIZE_MAX)
            keep[slot[j]] = false;
        slot[j] = i;
        keep[i] = r->value_off != SIZE_MAX;
    }
    free(slot);
    return 0;
}

static int cluster_snapshot(void *ctx, uint8_t **out, size_t *len)
{
    kc_coord_t *c = ctx;
    for (int32_t i = 0; i < c->n; i++) {
        const part_t *p = &c->parts[i];
        if (p->cleaning || p->busy || p->reload_pending)
            return -1; /* raft asks again later */
    }
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i32(&w, (int32_t)SNAP_MAGIC);
    kc_wr_i32(&w, c->n);
    int rc = 0;
    for (int32_t i = 0; i < c->n && rc == 0; i++) {
        part_t *p = &c->parts[i];
        snap_part_t sp = {0};
        kc_wr_init(&sp.data);
        if (p->log != NULL && p->pub.state != KC_PART_FAILED)
            rc = kc_plog_replay(p->log, snap_collect, &sp, NULL);
        bool *keep = rc == 0 && sp.n ? malloc(sp.n * sizeof(*keep)) : NULL;
        if (rc == 0 && sp.n && (keep == NULL || snap_newest(&sp, keep) != 0))
            rc = -ENOMEM;
        if (rc == 0) {
            uint32_t live = 0;
            for (size_t k = 0; k < sp.n; k++)
                live += keep[k];
            kc_wr_i32(&w, i);
            kc_wr_i32(&w, (int32_t)live);
            for (size_t k = 0; k < sp.n; k++) {
                if (!keep[k])
                    continue;
                const snap_rec_t *r = &sp.v[k];
                kc_coord_snap_record(&w, r->ts, sp.data.buf + r->key_off, r->key_len,
                                     sp.data.buf + r->value_off, r->value_len);
            }
        }
        free(keep);
        free(sp.v);
        kc_wr_free(&sp.data);
        if (rc != 0)
            KC_ERROR_LIMITED("coord", "partition %d: no snapshot: %s", i,
                             rc == -ENOMEM ? "out of memory" : kc_plog_error(p->log));
    }
    if (rc == 0)
        kc_meta_snapshot(c->meta, &w); /* after the partitions: a snapshot without it is empty */
    if (rc != 0 || w.err) {
        kc_wr_free(&w);
        return -1;
    }
    *out = kc_wr_steal(&w, len);
    return 0;
}

/* Replace partition p's log and state with recs (the snapshot's live records), n of them. */
static int reset_partition(part_t *p, const kc_log_record_t *recs, size_t n)
{
    kc_coord_t *c = p->coord;
    const kc_conf_t *conf = c->conf;
    p->own_inflight = 0;
    p->reload_pending = false;
    free_pending(p);
    p->seq_written = p->seq_durable = p->seq_synced = p->seq_emitted;
    kc_gm_t *gm = p->pub.groups;
    kc_offsets_t *off = p->pub.offsets;
    p->pub.groups = NULL;
    p->pub.offsets = NULL;
    p->pub.state = KC_PART_LOADING;
    if (gm)
        kc_gm_free(gm);
    if (off)
        kc_offsets_free(off);
    uv_timer_stop(&p->timer);
    kc_plog_close(p->log);
    p->log = NULL;
    int rc = kc_plog_remove(c->io, conf->data_dir, p->pub.index);
    kc_plog_opts_t opts = plog_opts(conf);
    char err[256] = "";
    if (rc == 0)
        rc = kc_plog_open(&p->log, c->io, conf->data_dir, p->pub.index, &opts, err, sizeof(err));
    for (size_t i = 0; rc == 0 && i < n;) {
        size_t k = 0, bytes = 0;
        while (i + k < n && k < 4096 && bytes < (1u << 20)) {
            bytes += recs[i + k].key_len + recs[i + k].value_len;
            k++;
        }
        rc = kc_plog_append(p->log, recs + i, k, wall_ms(), NULL);
        i += k;
    }
    make_state(p, &p->new_groups, &p->new_offsets);
    if (rc == 0 && (p->new_groups == NULL || p->new_offsets == NULL))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (kc_shard_replay_into(p->new_groups, p->new_offsets, recs[i].key, recs[i].key_len,
                                 recs[i].value, recs[i].value_len) == -1)
            rc = -ENOMEM;
    if (rc != 0) {
        if (p->new_groups)
            kc_gm_free(p->new_groups);
        if (p->new_offsets)
            kc_offsets_free(p->new_offsets);
        p->new_groups = NULL;
        p->new_offsets = NULL;
        KC_ERROR("coord", "partition %d: cannot rebuild its log: %s", p->pub.index,
                 err[0]                               ? err
                 : p->log && kc_plog_error(p->log)[0] ? kc_plog_error(p->log)
                                                      : kc_log_strerror(rc));
        p->pub.state = KC_PART_FAILED;
        p->pub.obs.out = KC_PART_OUT_LOST;
        return -1;
    }
    p->pub.groups = p->new_groups;
    p->pub.offsets = p->new_offsets;
    p->new_groups = NULL;
    p->new_offsets = NULL;
    p->pub.state = KC_PART_ACTIVE;
    note_log_size(p);
    if (p->pub.cluster_err == 0)
        kc_gm_load_complete(p->pub.groups, kc_coord_time(c));
    p->touched = true;
    return 0;
}

void kc_coord_snap_record(kc_writer_t *w, int64_t ts, const uint8_t *key, size_t key_len,
                          const uint8_t *value, size_t value_len)
{
    kc_wr_i64(w, ts);
    kc_wr_i32(w, (int32_t)key_len);
    kc_wr_raw(w, key, key_len);
    kc_wr_i32(w, (int32_t)value_len);
    kc_wr_raw(w, value, value_len);
}

/* An int32 length and that many bytes of a snapshot, as a view into it. */
static void snap_bytes(kc_reader_t *r, const uint8_t **p, size_t *len)
{
    int32_t n = kc_rd_i32(r);
    if (r->err || n < 0 || (size_t)n > kc_rd_remaining(r)) {
        kc_rd_fail(r, KC_RD_INVALID);
        *p = NULL;
        *len = 0;
        return;
    }
    *p = r->p;
    *len = (size_t)n;
    kc_rd_skip(r, (size_t)n);
}

/* One section of a snapshot: partition `idx`'s records, as views into the snapshot, in
 * *recs (calloc'd, NULL when none; the caller frees it) and *n. -1 when it is not that
 * partition's or does not read. */
static int snap_section(kc_reader_t *r, int32_t idx, size_t len, kc_log_record_t **recs, size_t *n)
{
    *recs = NULL;
    *n = 0;
    int32_t at = kc_rd_i32(r);
    int32_t count = kc_rd_i32(r);
    if (r->err || at != idx || count < 0 || (size_t)count > len)
        return -1;
    kc_log_record_t *v = count ? calloc((size_t)count, sizeof(*v)) : NULL;
    if (count && v == NULL)
        return -1;
    for (int32_t k = 0; k < count && !r->err; k++) {
        v[k].timestamp_ms = kc_rd_i64(r);
        snap_bytes(r, &v[k].key, &v[k].key_len);
        snap_bytes(r, &v[k].value, &v[k].value_len);
    }
    if (r->err) {
        free(v);
        return -1;
    }
    *recs = v;
    *n = (size_t)count;
    return 0;
}

/* The metadata partition's section of a snapshot, after the partitions' (none: it was empty). */
static int restore_meta(kc_coord_t *c, kc_reader_t *r, size_t len)
{
    if (kc_rd_remaining(r) == 0)
        return kc_meta_restore(c, NULL, 0);
    kc_log_record_t *recs;
    size_t n;
    if (snap_section(r, KC_COORD_META_PARTITION, len, &recs, &n) != 0)
        return -1;
    int rc = kc_meta_restore(c, recs, n);
    free(recs);
    return rc;
}

static int cluster_restore(void *ctx, const uint8_t *data, size_t len)
{
    kc_coord_t *c = ctx;
    kc_reader_t r;
    kc_rd_init(&r, data, len);
    if (kc_rd_i32(&r) != (int32_t)SNAP_MAGIC) {
        KC_ERROR("coord", "a raft snapshot kcoord cannot read (%zu bytes)", len);
        return -1;
    }
    int32_t nparts = kc_rd_i32(&r);
    if (r.err || nparts != c->n) {
        KC_ERROR("coord",
                 "a raft snapshot of %d partitions, but offsets.topic.num.partitions is "
                 "%d",
                 nparts, c->n);
        return -1;
    }
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (p->busy) { /* a cluster node has no fsync or load job of its own */
            KC_ERROR("coord", "partition %d is busy: the snapshot cannot be restored now", i);
            return -1;
        }
    }
    for (int32_t i = 0; i < c->n; i++)
        clean_finish_now(&c->parts[i]);
    int rc = 0;
    for (int32_t i = 0; i < c->n && rc == 0; i++) {
        kc_log_record_t *recs;
        size_t n;
        rc = snap_section(&r, i, len, &recs, &n);
        if (rc == 0)
            rc = reset_partition(&c->parts[i], recs, n) != 0 ? -1 : 0;
        free(recs);
    }
    if (rc == 0)
        rc = restore_meta(c, &r, len);
    if (rc != 0)
        KC_ERROR("coord", "a raft snapshot could not be restored (%zu bytes)", len);
    return rc;
}

/* At start, a cluster node's partitions begin empty: raft's snapshot and entries fill them. */
static void cluster_start_empty(kc_coord_t *c)
{
    c->clustered = true;
    c->role = KC_CLUSTER_FOLLOWER;
    set_cluster_err(c, KC_ERR_NOT_COORDINATOR);
    int failed = 0;
    for (int32_t i = 0; i < c->n; i++)
        failed += reset_partition(&c->parts[i], NULL, 0) != 0;
    if (kc_meta_restore(c, NULL, 0) != 0) /* its records too come from raft */
        KC_ERROR("coord", "%s-0: out of memory emptying it", KC_META_TOPIC);
    c->loaded_once = true;
    if (failed == 0)
        KC_INFO("coord", "all %d partitions loaded (empty: a cluster node fills them from raft)",
                c->n);
    else
        KC_WARN("coord", "all %d partitions loaded; %d of them failed to load and are not served",
                c->n, failed);
}

void kc_coord_cluster_ops(kc_coord_t *c, kc_cluster_ops_t *ops)
{
    ops->ctx = c;
    ops->apply = cluster_apply;
    ops->snapshot = cluster_snapshot;
    ops->restore = cluster_restore;
    ops->role = cluster_role;
}

void kc_coord_set_cluster(kc_coord_t *c, kc_cluster_t *cl)
{
    c->cluster = cl;
}

/* ---- Life ---------------------------------------------------------------------------------- */

kc_coord_t *kc_coord_new(uv_loop_t *loop, const kc_conf_t *conf, kc_catalog_t *cat,
                         const kc_coord_replies_t *replies, const kc_log_io_t *io)
{
    kc_coord_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->loop = loop;
    c->conf = conf;
    c->catalog = cat;
    c->replies = *replies;
    c->io = io ? io : kc_log_io_posix();
    c->waiters_tail = &c->waiters;
    c->n = conf->offsets_topic_num_partitions;
    c->parts = calloc((size_t)c->n, sizeof(*c->parts));
    c->clean_next = c->n; /* no cleaner round yet */
    if (c->parts == NULL || uv_mutex_init(&c->clean_mu) != 0) {
        free(c->parts);
        free(c);
        return NULL;
    }
    if (uv_cond_init(&c->clean_cv) != 0) {
        uv_mutex_destroy(&c->clean_mu);
        free(c->parts);
        free(c);
        return NULL;
    }
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        p->coord = c;
        p->pub.index = i;
        uv_timer_init(loop, &p->timer);
        uv_timer_init(loop, &p->retry);
        p->timer.data = p;
        p->retry.data = p;
    }
    uv_prepare_init(loop, &c->prepare);
    c->prepare.data = c;
    uv_prepare_start(&c->prepare, on_prepare);
    uv_unref((uv_handle_t *)&c->prepare);
    c->polled_ms = mono_ms();
    uv_check_init(loop, &c->check);
    c->check.data = c;
    uv_check_start(&c->check, on_check);
    uv_unref((uv_handle_t *)&c->check);
    uv_timer_init(loop, &c->retention);
    c->retention.data = c;
    uint64_t every = (uint64_t)conf->offsets_retention_check_interval_ms;
    uv_timer_start(&c->retention, on_retention, every, every);
    uv_timer_init(loop, &c->retention_step);
    c->retention_step.data = c;
    c->retention_next = -1;
    uv_timer_init(loop, &c->cleaner);
    c->cleaner.data = c;
    uint64_t backoff = (uint64_t)conf->log_cleaner_backoff_ms;
    uv_timer_start(&c->cleaner, on_cleaner, backoff, backoff);
    uv_timer_init(loop, &c->flush_timer);
    c->flush_timer.data = c;
    if (conf->log_flush_policy == KC_CONF_FLUSH_INTERVAL) {
        uint64_t ms = (uint64_t)conf->log_flush_interval_ms;
        uv_timer_start(&c->flush_timer, on_flush_timer, ms, ms);
    }
    c->open_handles = 2 * c->n + 6;
    int mrc = kc_log_clean_shutdown_take(c->io, conf->data_dir, &c->clean_start);
    if (mrc != 0)
        KC_ERROR("coord", "cannot remove %s/%s: %s; recovering every partition as after a crash",
                 conf->data_dir, KC_LOG_CLEAN_SHUTDOWN_FILE, kc_log_strerror(mrc));
    c->meta = kc_meta_open(conf, c->io, c->clean_start);
    c->gconf = kc_gconf_new();
    if (c->meta == NULL || c->gconf == NULL || kc_gconf_load(c->gconf, c) != 0)
        KC_ERROR("coord", "out of memory loading the group configs");
    else if (kc_coord_each_group_config(c, NULL, NULL) > 0)
        KC_INFO("coord", "%zu groups have group configs",
                kc_coord_each_group_config(c, NULL, NULL));
    if (conf->cluster_voters[0] != '\0') {
        cluster_start_empty(c);
        return c;
    }
    KC_INFO("coord", "loading %d partitions from %s (%s)", c->n, conf->data_dir,
            c->clean_start ? "after a clean shutdown"
                           : "no clean-shutdown marker: recovering as after a crash");
    for (int32_t i = 0; i < c->n; i++)
        start_load(&c->parts[i]);
    return c;
}

kc_partition_t *kc_coord_partition_at(kc_coord_t *c, int32_t i)
{
    c->parts[i].touched = true;
    return &c->parts[i].pub;
}

kc_partition_t *kc_coord_partition(kc_coord_t *c, kc_str_t group_id)
{
    return kc_coord_partition_at(c, kc_partition_for(group_id, c->n));
}

int32_t kc_coord_partitions(const kc_coord_t *c)
{
    return c->n;
}

int32_t kc_coord_loading(const kc_coord_t *c)
{
    return c->loading;
}

int16_t kc_partition_error(const kc_partition_t *p)
{
    switch (p->state) {
    case KC_PART_ACTIVE:
        return p->cluster_err;
    case KC_PART_LOADING:
        return KC_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    default:
        return KC_ERR_NOT_COORDINATOR;
    }
}

void kc_coord_topic_deleted(kc_coord_t *c, kc_str_t topic)
{
    size_t total = 0;
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (p->pub.state == KC_PART_ACTIVE) {
            total += kc_shard_delete_topic(&p->pub, topic);
            p->touched = true;
        }
    }
    KC_INFO("coord", "topic %.*s deleted with %zu committed offsets", topic.len > 0 ? topic.len : 0,
            topic.p, total);
}

static void maybe_free(kc_coord_t *c)
{
    if (!c->closing || c->open_handles > 0 || c->jobs > 0)
        return;
    bool clean = true;
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        clean = clean && !p->reloading;
        (void)kc_plog_clean_end(p->log, p->clean_job, NULL);
        if (p->log != NULL) {
            int rc = kc_plog_sync(p->log);
            if (rc != 0)
                KC_ERROR("coord", "partition %d: final fsync failed: %s", i, kc_log_strerror(rc));
            int rc2 = kc_plog_close(p->log);
            clean = clean && rc == 0 && rc2 == 0;
        }
        if (p->pub.offsets)
            kc_offsets_free(p->pub.offsets);
        free_pending(p);
        free(p->pend);
    }
    while (c->waiters) { /* nothing should wait by now; answer rather than leak */
        waiter_t *w = c->waiters;
        c->waiters = w->next;
        w->release(w->arg, false);
        free(w);
    }
    int meta_rc = kc_meta_close(c->meta);
    if (meta_rc != 0)
        KC_ERROR("coord", "%s-0: final fsync failed: %s", KC_META_TOPIC, kc_log_strerror(meta_rc));
    clean = clean && meta_rc == 0;
    kc_gconf_free(c->gconf);
    int mrc = clean ? kc_log_clean_shutdown_mark(c->io, c->conf->data_dir) : 0;
    if (mrc != 0)
        KC_WARN("coord", "cannot write %s/%s: %s (the next start recovers as after a crash)",
                c->conf->data_dir, KC_LOG_CLEAN_SHUTDOWN_FILE, kc_log_strerror(mrc));
    void (*done)(void *) = c->done;
    void *arg = c->done_arg;
    free(c->topics);
    free(c->parts);
    uv_cond_destroy(&c->clean_cv);
    uv_mutex_destroy(&c->clean_mu);
    free(c);
    if (done)
        done(arg);
}

static void on_handle_closed(uv_handle_t *h)
{
    kc_coord_t *c = h->data;
    c->open_handles--;
    maybe_free(c);
}

static void on_part_handle_closed(uv_handle_t *h)
{
    part_t *p = h->data;
    p->coord->open_handles--;
    maybe_free(p->coord);
}

void kc_coord_close(kc_coord_t *c, void (*done)(void *arg), void *arg)
{
    c->done = done;
    c->done_arg = arg;
    c->closing = true;
    /* Write and fsync what is pending, so every acknowledged change is on disk; a partition
     * whose fsync is in flight finishes in after_sync. */
    for (int32_t i = 0; i < c->n; i++)
        flush_partition(&c->parts[i]);
    if (c->clustered) /* metadata writes not committed yet: the node is stopping */
        kc_meta_cluster_fail(c->meta, KC_ERR_NOT_CONTROLLER);
    /* Answer parked requests before the connections go. */
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (p->pub.groups) {
            kc_gm_t *gm = p->pub.groups;
            p->pub.groups = NULL;
            kc_gm_free(gm);
        }
    }
    for (int32_t i = 0; i < c->n; i++) {
        uv_close((uv_handle_t *)&c->parts[i].timer, on_part_handle_closed);
        uv_close((uv_handle_t *)&c->parts[i].retry, on_part_handle_closed);
    }
    uv_close((uv_handle_t *)&c->prepare, on_handle_closed);
    uv_close((uv_handle_t *)&c->check, on_handle_closed);
    uv_close((uv_handle_t *)&c->retention, on_handle_closed);
    uv_close((uv_handle_t *)&c->retention_step, on_handle_closed);
    uv_close((uv_handle_t *)&c->flush_timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->cleaner, on_handle_closed);
}

/* ---- The metadata partition and group configs --------------------------------------------- */

bool kc_coord_clustered(const kc_coord_t *c)
{
    return c->clustered;
}

bool kc_coord_leads(const kc_coord_t *c)
{
    return c->clustered && c->cluster != NULL && c->role == KC_CLUSTER_LEADER;
}

kc_gconf_t *kc_coord_gconf(kc_coord_t *c)
{
    return c->gconf;
}

kc_meta_t *kc_coord_meta(kc_coord_t *c)
{
    return c->meta;
}

void kc_coord_group_configs(const kc_coord_t *c, kc_str_t group, int32_t out[KC_GCONF_N])
{
    kc_gconf_lookup(c->gconf, group, out);
}

int16_t kc_coord_alter_group_configs(kc_coord_t *c, kc_str_t group, const kc_gconf_op_t *ops,
                                     size_t n, bool validate_only, char *msg, size_t len,
                                     kc_meta_done_fn done, void *arg)
{
    if (c->gconf == NULL) {
        snprintf(msg, len, "out of memory");
        return KC_ERR_UNKNOWN_SERVER_ERROR;
    }
    return kc_gconf_alter(c->gconf, c, c->conf, group, ops, n, validate_only, msg, len, done, arg);
}

size_t kc_coord_each_group_config(const kc_coord_t *c, void (*fn)(void *arg, kc_str_t group),
                                  void *arg)
{
    return kc_gconf_each(c->gconf, fn, arg);
}
