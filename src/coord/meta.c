/* meta.c - the daemon's own metadata partition, __kcoord_metadata-0: records that belong to no
 * group (group configs, ACL bindings, SCRAM credentials), durable across restarts and, on a
 * cluster node, replicated through raft (the second half of this file).
 *
 * Kafka keeps such state in its KRaft metadata log (ConfigRecord, AccessControlEntryRecord...).
 * kcoord has no KRaft log, so it keeps one log partition of its own beside the
 * __consumer_offsets-N directories, written with the same segmented log and Kafka record
 * batches (docs/log-format.md, "The metadata partition"). Tools that walk the data directory
 * look for __consumer_offsets-N only, so they pass it by.
 *
 * Records are key/value pairs whose key starts with an int16 record type (KRaft's
 * MetadataRecordType numbers: ConfigRecord is 4) and whose value is null for a removal, so
 * the log compacts as a __consumer_offsets partition does: the newest record per key wins.
 * The live records (newest per key, removals dropped) are kept in memory in the order of their
 * last write; a room replays those of its record types at start (kc_meta_each) and appends
 * changes (kc_meta_append), which are durable when the call returns.
 *
 * The partition is small (a few records per group with configs, per ACL binding, per user), so
 * it is opened and replayed on the loop thread in kc_coord_new, before anything is served, and
 * a single node's append writes (and, with log.flush.policy=always, fsyncs) on the loop thread
 * too: an admin change costs the loop one fsync. The live records are kept in an array searched
 * linearly. A cluster node starts it empty, as its __consumer_offsets partitions: raft's
 * snapshot and entries fill it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "coord/coord_int.h"
#include "log/log.h"
#include "proto/errors.h"
#include "util/diag.h"

typedef struct live_s {
    uint8_t *key;
    size_t key_len;
    uint8_t *value;
    size_t value_len;
} live_t;

/* A cluster node's write waiting for raft (kc_meta_write). */
typedef struct mwaiter_s {
    struct mwaiter_s *next;
    uint64_t seq; /* released once the records up to this one are committed and applied */
    kc_meta_done_fn done;
    void *arg;
} mwaiter_t;

/* A request held until no write is in flight (kc_meta_when_idle). */
typedef struct midle_s {
    struct midle_s *next;
    void (*fn)(void *arg);
    void *arg;
} midle_t;

struct kc_meta_s {
    kc_plog_t *log; /* NULL when it could not be opened: appends fail */
    int flush_policy;
    live_t *v;
    size_t n, cap;
    bool unsynced; /* written, not fsynced (policies interval and never) */
    /* A cluster node: records kc_meta_write queued for the leader's next raft entry (keys and
     * values owned), the writes waiting for their commit in submission order, and who is told
     * of every record applied from raft. */
    kc_log_record_t *pend;
    size_t n_pend, cap_pend;
    uint64_t seq_emitted; /* records queued so far */
    mwaiter_t *waiters, **waiters_tail;
    midle_t *idle, **idle_tail;
    kc_meta_listen_fn listen;
    void *listen_arg;
};

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int16_t rec_type(const uint8_t *key, size_t key_len)
{
    return key_len >= 2 ? (int16_t)((key[0] << 8) | key[1]) : -1;
}

static live_t *find(kc_meta_t *m, const uint8_t *key, size_t key_len)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].key_len == key_len && memcmp(m->v[i].key, key, key_len) == 0)
            return &m->v[i];
    return NULL;
}

/* Apply one record to the live set: the newest value per key, moved to the end (the order of
 * last writes), or removed by a null value. 0, or -1 when out of memory (nothing changed). */
static int apply(kc_meta_t *m, const uint8_t *key, size_t key_len, const uint8_t *value,
                 size_t value_len)
{
    live_t *old = find(m, key, key_len);
    if (value == NULL) {
        if (old) {
            free(old->key);
            free(old->value);
            memmove(old, old + 1, (size_t)(m->v + m->n - (old + 1)) * sizeof(*old));
            m->n--;
        }
        return 0;
    }
    live_t e = {malloc(key_len ? key_len : 1), key_len, malloc(value_len ? value_len : 1),
                value_len};
    if (!e.key || !e.value) {
        free(e.key);
        free(e.value);
        return -1;
    }
    if (!old && m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        live_t *v = realloc(m->v, cap * sizeof(*v));
        if (!v) {
            free(e.key);
            free(e.value);
            return -1;
        }
        m->v = v;
        m->cap = cap;
    }
    memcpy(e.key, key, key_len);
    memcpy(e.value, value, value_len);
    if (old) {
        free(old->key);
        free(old->value);
        memmove(old, old + 1, (size_t)(m->v + m->n - (old + 1)) * sizeof(*old));
        m->n--;
    }
    m->v[m->n++] = e;
    return 0;
}

static int replay_one(void *arg, const kc_log_record_t *rec)
{
    kc_meta_t *m = arg;
    if (rec->key == NULL || rec->key_len < 2)
        return 0; /* not a metadata record: skipped, as the offsets loader skips them */
    return apply(m, rec->key, rec->key_len, rec->value, rec->value_len) == 0 ? 0 : -ENOMEM;
}

kc_meta_t *kc_meta_open(const kc_conf_t *conf, const struct kc_log_io_s *io, bool clean_start)
{
    kc_meta_t *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->flush_policy = conf->log_flush_policy;
    m->waiters_tail = &m->waiters;
    m->idle_tail = &m->idle;
    kc_plog_opts_t opts;
    kc_plog_opts_init(&opts);
    opts.topic = KC_META_TOPIC;
    opts.segment_bytes = conf->offsets_topic_segment_bytes;
    opts.roll_ms = conf->log_roll_ms;
    opts.clean_shutdown = clean_start;
    char err[512] = "";
    int rc = kc_plog_open(&m->log, io, conf->data_dir, 0, &opts, err, sizeof(err));
    if (rc == 0)
        rc = kc_plog_replay(m->log, replay_one, m, NULL);
    if (rc != 0) {
        KC_ERROR("coord",
                 "%s-0 cannot be read (%s): group configs are not served and cannot be changed",
                 KC_META_TOPIC,
                 err[0]   ? err
                 : m->log ? kc_plog_error(m->log)
                          : kc_log_strerror(rc));
        kc_plog_close(m->log);
        m->log = NULL;
        for (size_t i = 0; i < m->n; i++) {
            free(m->v[i].key);
            free(m->v[i].value);
        }
        m->n = 0;
    } else if (m->n > 0) {
        KC_INFO("coord", "%s-0 loaded: %zu live records", KC_META_TOPIC, m->n);
    }
    return m;
}

bool kc_meta_ok(const kc_meta_t *m)
{
    return m && m->log != NULL;
}

int kc_meta_sync(kc_meta_t *m)
{
    if (!m || !m->log || !m->unsynced)
        return 0;
    int rc = kc_plog_sync(m->log);
    if (rc == 0)
        m->unsynced = false;
    return rc;
}

int kc_meta_close(kc_meta_t *m)
{
    if (!m)
        return 0;
    int rc = kc_meta_sync(m);
    int rc2 = kc_plog_close(m->log);
    for (midle_t *h = m->idle, *next; h; h = next) { /* none should be left by now */
        next = h->next;
        free(h);
    }
    m->idle = NULL;
    m->idle_tail = &m->idle;
    kc_meta_cluster_fail(m, KC_ERR_NOT_CONTROLLER); /* none should be left by now */
    free(m->pend);
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].key);
        free(m->v[i].value);
    }
    free(m->v);
    free(m);
    return rc ? rc : rc2;
}

int kc_meta_each(kc_coord_t *c, int16_t type, int (*fn)(void *arg, const kc_meta_rec_t *rec),
                 void *arg)
{
    kc_meta_t *m = kc_coord_meta(c);
    for (size_t i = 0; m && i < m->n; i++) {
        if (rec_type(m->v[i].key, m->v[i].key_len) != type)
            continue;
        kc_meta_rec_t r = {m->v[i].key, m->v[i].key_len, m->v[i].value, m->v[i].value_len};
        int rc = fn(arg, &r);
        if (rc)
            return rc;
    }
    return 0;
}

const kc_meta_rec_t *kc_meta_get(kc_coord_t *c, const uint8_t *key, size_t key_len,
                                 kc_meta_rec_t *out)
{
    kc_meta_t *m = kc_coord_meta(c);
    live_t *e = m ? find(m, key, key_len) : NULL;
    if (!e)
        return NULL;
    *out = (kc_meta_rec_t){e->key, e->key_len, e->value, e->value_len};
    return out;
}

int16_t kc_meta_append(kc_coord_t *c, const kc_meta_rec_t *v, size_t n)
{
    kc_meta_t *m = kc_coord_meta(c);
    if (n == 0)
        return KC_ERR_NONE;
    if (kc_coord_clustered(c)) {
        /* A cluster node's writes wait for raft (kc_meta_write): one written here alone would
         * be missing on the other nodes. */
        KC_WARN_LIMITED("coord", "%s-0: refusing a write that does not go through raft",
                        KC_META_TOPIC);
        return KC_ERR_POLICY_VIOLATION;
    }
    if (!kc_meta_ok(m))
        return KC_ERR_KAFKA_STORAGE_ERROR;
    kc_log_record_t *recs = calloc(n, sizeof(*recs));
    if (!recs)
        return KC_ERR_UNKNOWN_SERVER_ERROR;
    for (size_t i = 0; i < n; i++)
        recs[i] = (kc_log_record_t){.timestamp_ms = -1,
                                    .key = v[i].key,
                                    .key_len = v[i].key_len,
                                    .value = v[i].value,
                                    .value_len = v[i].value_len};
    int rc = kc_plog_append(m->log, recs, n, wall_ms(), NULL);
    free(recs);
    if (rc == 0 && m->flush_policy == KC_CONF_FLUSH_ALWAYS)
        rc = kc_plog_sync(m->log);
    else if (rc == 0)
        m->unsynced = true;
    if (rc != 0) {
        /* The log dropped what it could not make durable; memory was not changed. */
        KC_ERROR_LIMITED("coord", "%s-0: write failed: %s", KC_META_TOPIC,
                         kc_plog_error(m->log)[0] ? kc_plog_error(m->log) : kc_log_strerror(rc));
        if (rc == KC_LOG_EGONE) {
            kc_plog_close(m->log);
            m->log = NULL;
        }
        return KC_ERR_KAFKA_STORAGE_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        if (apply(m, v[i].key, v[i].key_len, v[i].value, v[i].value_len) != 0) {
            /* Durable but not in memory: memory must equal the log, and only a reload would
             * bring it back; say so loudly. The next restart reads it. */
            KC_ERROR("coord", "%s-0: out of memory applying a written record; restart to load it",
                     KC_META_TOPIC);
            return KC_ERR_UNKNOWN_SERVER_ERROR;
        }
    }
    return KC_ERR_NONE;
}

/* ---- A cluster node: the partition replicated through raft ---------------------------------
 *
 * On a cluster node the metadata partition travels in the same raft entries as the
 * __consumer_offsets partitions, tagged KC_COORD_META_PARTITION. kc_meta_write queues the
 * records; the leader's next loop turn puts them in its entry (kc_meta_cluster_batch, from
 * coord.c's cluster_flush_all); every node, the leader included, applies the committed batch
 * (kc_meta_cluster_apply): to its own __kcoord_metadata-0 log, to the live set, to the group
 * configs and to the listener (the API room's ACL and SCRAM state). Unlike a group partition's,
 * the leader's memory is never ahead of raft: a change is applied when it is committed, so a
 * lost leadership has nothing to undo, only waiters to fail. A request is therefore validated
 * against what is committed; one that validates (IncrementalAlterConfigs) waits while a write
 * is in flight (kc_meta_when_idle), so that it sees the writes before it, as Kafka's controller
 * validates against its uncommitted state: two alters of one group sent at once cannot each
 * pass a check (session timeout above heartbeat interval) that their sum fails. */

static void notify(kc_coord_t *c, kc_meta_t *m, const uint8_t *key, size_t key_len,
                   const uint8_t *value, size_t value_len)
{
    kc_meta_rec_t r = {key, key_len, value, value_len};
    if (rec_type(key, key_len) == KC_GCONF_RECORD_TYPE &&
        kc_gconf_apply(kc_coord_gconf(c), &r) != 0)
        KC_ERROR("coord", "%s-0: out of memory applying a group config record", KC_META_TOPIC);
    if (m->listen)
        m->listen(m->listen_arg, &r);
}

void kc_meta_listen(kc_coord_t *c, kc_meta_listen_fn fn, void *arg)
{
    kc_meta_t *m = kc_coord_meta(c);
    if (m) {
        m->listen = fn;
        m->listen_arg = arg;
    }
}

/* Drop the queued records from `from` on. */
static void free_pend(kc_meta_t *m, size_t from)
{
    for (size_t i = from; i < m->n_pend; i++) {
        free((void *)m->pend[i].key);
        free((void *)m->pend[i].value);
    }
    m->n_pend = from;
}

int16_t kc_meta_write(kc_coord_t *c, const kc_meta_rec_t *v, size_t n, kc_meta_done_fn done,
                      void *arg)
{
    if (!kc_coord_clustered(c))
        return kc_meta_append(c, v, n);
    kc_meta_t *m = kc_coord_meta(c);
    if (!m || !kc_coord_leads(c))
        return KC_ERR_NOT_CONTROLLER; /* even for no change: every write goes to the leader */
    if (n == 0)
        return KC_ERR_NONE;
    mwaiter_t *w = malloc(sizeof(*w));
    if (!w)
        return KC_ERR_UNKNOWN_SERVER_ERROR;
    if (m->n_pend + n > m->cap_pend) {
        size_t cap = m->cap_pend ? m->cap_pend : 16;
        while (cap < m->n_pend + n)
            cap *= 2;
        kc_log_record_t *p = realloc(m->pend, cap * sizeof(*p));
        if (!p) {
            free(w);
            return KC_ERR_UNKNOWN_SERVER_ERROR;
        }
        m->pend = p;
        m->cap_pend = cap;
    }
    size_t n0 = m->n_pend;
    for (size_t i = 0; i < n; i++) {
        uint8_t *k = malloc(v[i].key_len ? v[i].key_len : 1);
        uint8_t *val = v[i].value ? malloc(v[i].value_len ? v[i].value_len : 1) : NULL;
        if (!k || (v[i].value && !val)) {
            free(k);
            free(val);
            free_pend(m, n0);
            free(w);
            return KC_ERR_UNKNOWN_SERVER_ERROR;
        }
        memcpy(k, v[i].key, v[i].key_len);
        if (val)
            memcpy(val, v[i].value, v[i].value_len);
        m->pend[m->n_pend++] = (kc_log_record_t){.timestamp_ms = -1,
                                                 .key = k,
                                                 .key_len = v[i].key_len,
                                                 .value = val,
                                                 .value_len = val ? v[i].value_len : 0};
    }
    m->seq_emitted += n;
    *w = (mwaiter_t){NULL, m->seq_emitted, done, arg};
    *m->waiters_tail = w;
    m->waiters_tail = &w->next;
    return KC_META_PENDING;
}

bool kc_meta_cluster_pending(const kc_meta_t *m)
{
    return m && m->n_pend > 0;
}

int kc_meta_cluster_batch(kc_meta_t *m, int64_t now_ms, uint8_t **buf, size_t *len, uint64_t *seq)
{
    int rc = kc_log_batch_build(m->pend, m->n_pend, now_ms, KC_LOG_CODEC_NONE, buf, len);
    if (rc != 0)
        return rc;
    free_pend(m, 0);
    *seq = m->seq_emitted;
    return 0;
}

bool kc_meta_busy(kc_coord_t *c)
{
    kc_meta_t *m = kc_coord_meta(c);
    return m && (m->n_pend > 0 || m->waiters);
}

int kc_meta_when_idle(kc_coord_t *c, void (*fn)(void *arg), void *arg)
{
    kc_meta_t *m = kc_coord_clustered(c) ? kc_coord_meta(c) : NULL;
    midle_t *h = m ? malloc(sizeof(*h)) : NULL;
    if (!h)
        return -1;
    *h = (midle_t){NULL, fn, arg};
    *m->idle_tail = h;
    m->idle_tail = &h->next;
    return 0;
}

/* The held requests, in order, while nothing is in flight: one that writes makes the rest wait
 * for its commit. */
static void run_idle(kc_meta_t *m)
{
    while (m->idle && !m->waiters && m->n_pend == 0) {
        midle_t *h = m->idle;
        m->idle = h->next;
        if (!m->idle)
            m->idle_tail = &m->idle;
        void (*fn)(void *) = h->fn;
        void *arg = h->arg;
        free(h);
        fn(arg);
    }
}

void kc_meta_cluster_done(kc_meta_t *m, uint64_t seq, int16_t err)
{
    while (m && m->waiters && m->waiters->seq <= seq) {
        mwaiter_t *w = m->waiters;
        m->waiters = w->next;
        if (!m->waiters)
            m->waiters_tail = &m->waiters;
        w->done(w->arg, err);
        free(w);
    }
    if (m)
        run_idle(m);
}

void kc_meta_cluster_fail(kc_meta_t *m, int16_t err)
{
    if (!m)
        return;
    if (m->n_pend > 0)
        KC_WARN_LIMITED("coord", "%s-0: %zu records not submitted; failing what waited on them",
                        KC_META_TOPIC, m->n_pend);
    free_pend(m, 0);
    kc_meta_cluster_done(m, UINT64_MAX, err);
}

/* Append recs[0..n) to the node's own copy of the partition. A failure is logged and the copy
 * closed: the state stays served from memory (raft holds it), and a restart rebuilds the log. */
static void cluster_log(kc_meta_t *m, const kc_log_record_t *recs, size_t n)
{
    if (!m->log || n == 0)
        return;
    int rc = kc_plog_append(m->log, recs, n, wall_ms(), NULL);
    if (rc == 0) {
        m->unsynced = true; /* raft's log is the durable copy; this one is synced at close */
        return;
    }
    KC_ERROR("coord",
             "%s-0: a committed batch cannot be written (%s); served from memory "
             "until a restart rebuilds the log from the cluster",
             KC_META_TOPIC, kc_plog_error(m->log)[0] ? kc_plog_error(m->log) : kc_log_strerror(rc));
    kc_plog_close(m->log);
    m->log = NULL;
}

void kc_meta_cluster_apply(kc_coord_t *c, const uint8_t *batch, size_t len)
{
    kc_meta_t *m = kc_coord_meta(c);
    if (!m)
        return;
    kc_log_record_t *recs = NULL;
    size_t n = 0;
    kc_log_batch_keep_t *keep = NULL;
    if (kc_log_batch_records(batch, len, &recs, &n, &keep) != 0) {
        KC_ERROR("coord", "%s-0: a committed batch cannot be read: skipped", KC_META_TOPIC);
        return;
    }
    cluster_log(m, recs, n);
    for (size_t i = 0; i < n; i++) {
        if (!recs[i].key || recs[i].key_len < 2)
            continue;
        if (apply(m, recs[i].key, recs[i].key_len, recs[i].value, recs[i].value_len) != 0) {
            KC_ERROR("coord", "%s-0: out of memory applying a committed record", KC_META_TOPIC);
            continue;
        }
        notify(c, m, recs[i].key, recs[i].key_len, recs[i].value, recs[i].value_len);
    }
    kc_log_batch_records_free(recs, keep);
}

void kc_meta_snapshot(const kc_meta_t *m, kc_writer_t *w)
{
    kc_wr_i32(w, KC_COORD_META_PARTITION);
    kc_wr_i32(w, m ? (int32_t)m->n : 0);
    for (size_t i = 0; m && i < m->n; i++)
        kc_coord_snap_record(w, -1, m->v[i].key, m->v[i].key_len, m->v[i].value, m->v[i].value_len);
}

static bool in_snapshot(const kc_log_record_t *recs, size_t n, const live_t *e)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i].key_len == e->key_len && memcmp(recs[i].key, e->key, e->key_len) == 0)
            return true;
    return false;
}

int kc_meta_restore(kc_coord_t *c, const kc_log_record_t *recs, size_t n)
{
    kc_meta_t *m = kc_coord_meta(c);
    if (!m)
        return -1;
    /* What changes: a removal for every live key the snapshot lacks, then every snapshot
     * record whose value differs from the live one. Written to the node's log and applied as
     * committed records are, so the listeners see each change once. */
    kc_log_record_t *diff = calloc(m->n + n + 1, sizeof(*diff));
    if (!diff)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!in_snapshot(recs, n, &m->v[i]))
            diff[k++] = (kc_log_record_t){
                .timestamp_ms = -1, .key = m->v[i].key, .key_len = m->v[i].key_len};
    for (size_t i = 0; i < n; i++) {
        const live_t *e = find(m, recs[i].key, recs[i].key_len);
        if (recs[i].value && recs[i].key_len >= 2 &&
            (!e || e->value_len != recs[i].value_len ||
             memcmp(e->value, recs[i].value, recs[i].value_len) != 0))
            diff[k++] = recs[i];
    }
    cluster_log(m, diff, k);
    /* The removals' keys are the live set's own: each is copied before apply frees it. */
    int rc = 0;
    for (size_t i = 0; i < k; i++) {
        size_t kl = diff[i].key_len;
        uint8_t *key = malloc(kl ? kl : 1);
        if (!key) {
            rc = -1;
            continue;
        }
        memcpy(key, diff[i].key, kl);
        if (apply(m, key, kl, diff[i].value, diff[i].value_len) != 0)
            rc = -1;
        else
            notify(c, m, key, kl, diff[i].value, diff[i].value_len);
        free(key);
    }
    if (rc != 0)
        KC_ERROR("coord", "%s-0: out of memory restoring a snapshot", KC_META_TOPIC);
    free(diff);
    return rc;
}
