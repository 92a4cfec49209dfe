/* cleaner.c - the log cleaner: compaction of a partition log's closed segments.
 *
 * A clean works on one plog in two passes, on whatever thread the caller picked, and never on
 * the plog itself: kc_plog_clean_begin copies what it needs into a job (a shadow plog holding
 * the closed segments and the synced part of the active one, see "the job" below), the passes
 * run on that, and kc_plog_clean_end puts the resulting list of closed segments into the plog.
 * So the plog appends, syncs and rolls meanwhile, and a flush never waits for a compaction.
 *
 * Pass 1, the key map. Every data record of the durable log (the closed segments, and the
 * active segment up to its synced size) goes into a hash map from its key bytes to the newest
 * record of that key: offset, timestamp, tombstone or not, segment, and an upper bound of its
 * encoded size. Keys are copied into an arena. This is Kafka's OffsetMap, except that keys are
 * compared byte for byte (Kafka compares MD5 digests) and that the map covers the whole log
 * rather than its dirty part. The map then tells each closed segment how many of its records
 * stay (the newest of their key and not an expired tombstone, or with a null key) and how many
 * bytes they take.
 *
 * Grouping. Consecutive closed segments are grouped while what stays of them fits segment_bytes
 * and the group's offsets fit the index's 32-bit relative offsets (Kafka's groupSegmentsBySize,
 * but counting what stays rather than what is). A group of one segment that loses nothing is
 * left alone.
 *
 * Pass 2, group by group, oldest first: read the group's segments again and write the records
 * that stay, with their offsets and timestamps, into <base>.log.cleaned, packed into batches of
 * up to OUT_BATCH_BYTES of records (a new batch also when the leader epoch changes). Each
 * batch's lastOffsetDelta reaches up to just before the next batch, and the last one's up to the
 * last offset of the group, so the new segment ends exactly where the old ones did: the open
 * path's swap recovery takes the end of a .swap segment as the end of what it replaces. A group
 * where nothing stays becomes one empty batch (recordCount 0) over its offsets. Then the index,
 * fsync, and the swap of log.h: .cleaned -> .swap, fsync dir (decided), old -> .deleted, fsync
 * dir, .swap -> .log, fsync dir, unlink .deleted.
 *
 * Failures. Before the swap is decided, a failure removes the new files and the log is as it
 * was. After, the plog runs the open path's leftover resolution at once (kc_plog_reload_closed),
 * which finishes the swap; if even that fails, clean_pending makes the next replay or clean try
 * again first. The first failure stops the clean: groups are swapped strictly in offset order,
 * so a tombstone is never dropped while an older record of its key is still in an earlier group
 * that could not be compacted.
 *
 * To extend: a size limit on the map (Kafka's dedupe buffer) would compact a large log in
 * rounds, building the map from a prefix of the dirty segments each time; a checkpoint of
 * clean_upto (Kafka's cleaner-offset-checkpoint) would let kc_plog_clean_due survive restarts.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "log/batch.h"
#include "log/crc32c.h"
#include "log/log.h"
#include "log/log_int.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/hash.h"

#define MOD             "log"
#define PATH_MAX_       4096
#define OUT_BATCH_BYTES ((size_t)1 << 20) /* records of one written batch, before compression */
#define WRITE_CHUNK     ((size_t)1 << 20) /* sealed batches are written in chunks this big */
/* The most a record's framing takes beside key and value: length (5), attributes (1),
 * timestampDelta (10), offsetDelta (5), keyLength (5), valueLength (5), headerCount (1). */
#define REC_FRAMING 32

/* ---- the key map ------------------------------------------------------------------------ */

typedef struct kentry_s {
    const uint8_t *key; /* in the map's arena */
    uint64_t hash;
    int64_t offset; /* of the newest record of this key */
    int64_t ts;     /* its timestamp */
    uint32_t key_len;
    uint32_t seg; /* its segment: an index into the cleaner's segment list */
    uint32_t est; /* an upper bound of its encoded size */
    bool used;
    bool tomb; /* it is a tombstone */
} kentry_t;

typedef struct kmap_s {
    kentry_t *v;
    size_t cap; /* a power of two, or 0 */
    size_t n;
    kc_arena_t keys;
} kmap_t;

static const uint8_t empty_key[1];

/* FNV-1a, with the high bits folded into the low ones that pick the slot. */
static uint64_t hash_key(const uint8_t *p, size_t n)
{
    return kc_hash_fold(kc_hash_fnv1a(KC_HASH_FNV1A_SEED, p, n));
}

/* The slot holding `key`, or the empty slot where it would go. */
static kentry_t *kmap_slot(kentry_t *v, size_t cap, uint64_t h, const uint8_t *key, size_t len)
{
    size_t i = (size_t)h & (cap - 1);
    while (v[i].used && !(v[i].hash == h && v[i].key_len == len && memcmp(v[i].key, key, len) == 0))
        i = (i + 1) & (cap - 1);
    return &v[i];
}

static int kmap_grow(kmap_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    kentry_t *v = calloc(cap, sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->v[i].used)
            continue;
        size_t j = (size_t)m->v[i].hash & (cap - 1);
        while (v[j].used)
            j = (j + 1) & (cap - 1);
        v[j] = m->v[i];
    }
    free(m->v);
    m->v = v;
    m->cap = cap;
    return 0;
}

/* The entry of `key`, created (with a copy of the key) when missing; NULL when out of memory. */
static kentry_t *kmap_put(kmap_t *m, const uint8_t *key, size_t len)
{
    if ((m->n + 1) * 4 > m->cap * 3 && kmap_grow(m) != 0)
        return NULL;
    uint64_t h = hash_key(key, len);
    kentry_t *e = kmap_slot(m->v, m->cap, h, key, len);
    if (e->used)
        return e;
    const uint8_t *copy = len > 0 ? kc_arena_dup(&m->keys, key, len) : empty_key;
    if (copy == NULL)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->key = copy;
    e->key_len = (uint32_t)len;
    e->hash = h;
    e->used = true;
    m->n++;
    return e;
}

static const kentry_t *kmap_get(const kmap_t *m, const uint8_t *key, size_t len)
{
    if (m->cap == 0)
        return NULL;
    const kentry_t *e = kmap_slot(m->v, m->cap, hash_key(key, len), key, len);
    return e->used ? e : NULL;
}

static void kmap_free(kmap_t *m)
{
    free(m->v);
    kc_arena_free(&m->keys);
    memset(m, 0, sizeof(*m));
}

/* ---- the cleaner's state ---------------------------------------------------------------- */

/* What pass 1 learnt about one segment. */
typedef struct seginfo_s {
    int64_t records;     /* data records */
    int64_t live;        /* of which stay */
    int64_t live_bytes;  /* an upper bound of their encoded size */
    int64_t odd_batches; /* control and transactional batches */
} seginfo_t;

/* The new segment being written. */
typedef struct out_s {
    int fd;           /* <base>.log.cleaned; -1 when closed */
    int64_t base;     /* its base offset */
    int64_t pos;      /* bytes of batches sealed so far */
    kc_writer_t buf;  /* sealed batches not yet written: they start at pos - buf.len */
    kc_writer_t recs; /* the open batch's records, uncompressed */
    bool open;        /* a batch is open */
    int32_t count, epoch;
    int64_t first_offset, base_ts, max_ts;
    int64_t last_sealed; /* last offset of the last sealed batch; -1 before the first */
    kc_log_idx_entry_t *idx;
    size_t nidx, capidx;
    int64_t last_entry_pos;
} out_t;

/* What pass 2 did with the group being written. */
typedef struct gcount_s {
    int64_t kept, superseded, tombstones_dropped, batches_dropped;
} gcount_t;

typedef struct cleaner_s {
    kc_plog_t *l;
    int64_t horizon; /* a tombstone timestamped before this is older than the retention */
    kmap_t map;
    size_t nclosed;
    kc_log_seg_t *orig; /* the closed segments as they were at the start, then the active one */
    seginfo_t *info;    /* per entry of orig */
    int64_t last_ts;    /* max timestamp of the last batch read */
    int32_t last_epoch; /* and its leader epoch */
    out_t out;
    gcount_t g;
    ZSTD_CCtx *cctx;
    kc_plog_clean_stats_t st;
} cleaner_t;

typedef int (*rec_fn_t)(cleaner_t *c, size_t si, const kc_batch_hdr_t *h, const kc_log_record_t *r);

__attribute__((format(printf, 2, 3))) static void set_err(kc_plog_t *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->err, sizeof(l->err), fmt, ap);
    va_end(ap);
}

static int seg_file(kc_plog_t *l, char *buf, int64_t base, const char *suffix)
{
    int rc = kc_log_segment_path(buf, PATH_MAX_, l->dir, base, suffix);
    if (rc != 0)
        set_err(l, "path too long in %s", l->dir);
    return rc;
}

static uint32_t rec_estimate(const kc_log_record_t *r)
{
    uint64_t n = REC_FRAMING + (uint64_t)r->key_len + (uint64_t)r->value_len;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* a - b with two's-complement wrap-around, as the batch reader adds deltas back. */
static int64_t wrap_sub(int64_t a, int64_t b)
{
    uint64_t d = (uint64_t)a - (uint64_t)b;
    return d <= INT64_MAX ? (int64_t)d : -(int64_t)(UINT64_MAX - d) - 1;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* Call fn for every data record of the first `size` bytes of `seg` (entry si of c->orig), and
 * with r == NULL for every control or transactional batch. `fd` is the open active segment, or
 * -1 to open the file. Returns 0, fn's nonzero return, or a read or validation error. */
static int walk_segment(cleaner_t *c, size_t si, const kc_log_seg_t *seg, int64_t size, int fd,
                        rec_fn_t fn)
{
    kc_plog_t *l = c->l;
    char path[PATH_MAX_];
    int rc = seg_file(l, path, seg->base, ".log");
    if (rc != 0)
        return rc;
    bool own = fd < 0;
    if (own && (fd = l->io->open(l->io->ctx, path, O_RDONLY, 0)) < 0) {
        set_err(l, "cannot open %s: %s", path, kc_log_strerror(fd));
        return fd;
    }
    kc_segscan_t s;
    kc_segscan_init(&s, l->io, fd, size, 0);
    for (;;) {
        const uint8_t *p;
        size_t len;
        kc_batch_hdr_t h;
        int r = kc_segscan_next(&s, &p, &len, &h);
        if (r == 0)
            break;
        if (r < 0) {
            if (r == KC_LOG_ECORRUPT)
                set_err(l, "corrupt batch in %s at byte position %lld: %s", path,
                        (long long)s.batch_pos, s.why);
            else
                set_err(l, "cannot read %s: %s", path, kc_log_strerror(r));
            rc = r;
            break;
        }
        c->st.bytes_read += (int64_t)len;
        c->last_ts = h.max_timestamp;
        c->last_epoch = h.partition_leader_epoch;
        if (kc_batch_is_control(&h) || kc_batch_is_transactional(&h)) {
            if ((rc = fn(c, si, &h, NULL)) != 0)
                break;
            continue;
        }
        kc_batch_iter_t it;
        kc_log_record_t rec;
        r = kc_batch_iter_init(&it, l->bctx, p, len);
        while (r == 0 && (r = kc_batch_iter_next(&it, &rec)) == 1) {
            if ((rc = fn(c, si, &h, &rec)) != 0)
                break;
            r = 0;
        }
        if (rc != 0)
            break;
        if (r < 0) {
            set_err(l, "bad batch in %s at byte position %lld: %s", path, (long long)s.batch_pos,
                    it.why);
            rc = r;
            break;
        }
    }
    kc_segscan_free(&s);
    if (own)
        l->io->close(l->io->ctx, fd);
    return rc;
}

/* Pass 1: remember the newest record of every key. */
static int map_record(cleaner_t *c, size_t si, const kc_batch_hdr_t *h, const kc_log_record_t *r)
{
    (void)h;
    seginfo_t *in = &c->info[si];
    if (r == NULL) {
        in->odd_batches++;
        return 0;
    }
    in->records++;
    uint32_t est = rec_estimate(r);
    if (r->key == NULL) { /* nothing to compare it with: it stays */
        in->live++;
        in->live_bytes += est;
        return 0;
    }
    kentry_t *e = kmap_put(&c->map, r->key, r->key_len);
    if (e == NULL) {
        set_err(c->l, "out of memory for the cleaner's key map (%zu keys)", c->map.n);
        return -ENOMEM;
    }
    e->offset = r->offset;
    e->ts = r->timestamp_ms;
    e->tomb = r->value == NULL;
    e->seg = (uint32_t)si;
    e->est = est;
    return 0;
}

enum { KEEP, SUPERSEDED, EXPIRED };

static int verdict(const cleaner_t *c, const kc_log_record_t *r)
{
    if (r->key == NULL)
        return KEEP;
    const kentry_t *e = kmap_get(&c->map, r->key, r->key_len);
    if (e == NULL) /* cannot happen: pass 1 saw every record; keeping is the safe answer */
        return KEEP;
    if (e->offset != r->offset)
        return SUPERSEDED;
    return e->tomb && e->ts < c->horizon ? EXPIRED : KEEP;
}

/* ---- writing ---------------------------------------------------------------------------- */

static int out_flush(cleaner_t *c)
{
    out_t *o = &c->out;
    if (o->buf.len == 0)
        return 0;
    int rc =
        kc_log_io_write_all(c->l->io, o->fd, o->buf.buf, o->buf.len, o->pos - (int64_t)o->buf.len);
    if (rc != 0) {
        set_err(c->l, "write of %zu bytes to the compacted segment %lld of partition %d failed: %s",
                o->buf.len, (long long)o->base, (int)c->l->partition, kc_log_strerror(rc));
        return rc;
    }
    c->st.bytes_written += (int64_t)o->buf.len;
    o->buf.len = 0;
    return 0;
}

/* Seal one batch over offsets [base_off, last_off] holding `count` records (recs, recs_len:
 * the uncompressed records section) into the output. */
static int emit_batch(cleaner_t *c, int64_t base_off, int64_t last_off, int32_t epoch,
                      int64_t base_ts, int64_t max_ts, int32_t count, const uint8_t *recs,
                      size_t recs_len)
{
    kc_plog_t *l = c->l;
    out_t *o = &c->out;
    kc_writer_t *w = &o->buf;
    size_t start = w->len;
    int codec = count > 0 ? l->opts.codec : KC_LOG_CODEC_NONE;
    if (last_off - base_off > INT32_MAX) {
        set_err(l, "a compacted batch would span offsets %lld..%lld", (long long)base_off,
                (long long)last_off);
        return KC_LOG_ETOOBIG;
    }
    kc_wr_i64(w, base_off);
    kc_wr_i32(w, 0); /* batchLength, patched below */
    kc_wr_i32(w, epoch);
    kc_wr_i8(w, KC_BATCH_MAGIC);
    kc_wr_u32(w, 0); /* crc, patched below */
    kc_wr_i16(w, (int16_t)codec);
    kc_wr_i32(w, (int32_t)(last_off - base_off));
    kc_wr_i64(w, base_ts);
    kc_wr_i64(w, max_ts);
    kc_wr_i64(w, -1); /* producerId */
    kc_wr_i16(w, -1); /* producerEpoch */
    kc_wr_i32(w, -1); /* baseSequence */
    kc_wr_i32(w, count);
    if (codec == KC_LOG_CODEC_ZSTD) {
        if (c->cctx == NULL && (c->cctx = ZSTD_createCCtx()) == NULL) {
            set_err(l, "out of memory for a zstd context");
            return -ENOMEM;
        }
        size_t bound = ZSTD_compressBound(recs_len);
        if (ZSTD_isError(bound) || !kc_wr_reserve(w, bound)) {
            set_err(l, "out of memory compressing a compacted batch");
            return -ENOMEM;
        }
        size_t z =
            ZSTD_compressCCtx(c->cctx, w->buf + w->len, bound, recs, recs_len, l->opts.zstd_level);
        if (ZSTD_isError(z)) {
            set_err(l, "zstd: %s", ZSTD_getErrorName(z));
            return KC_LOG_ECOMPRESS;
        }
        w->len += z;
    } else if (recs_len > 0) {
        kc_wr_raw(w, recs, recs_len);
    }
    if (w->err) {
        set_err(l, "out of memory writing a compacted batch");
        return -ENOMEM;
    }
    size_t total = w->len - start;
    int64_t pos = o->pos;
    if (total - KC_BATCH_LOG_OVERHEAD > (size_t)INT32_MAX || pos + (int64_t)total > INT32_MAX) {
        set_err(l, "the compacted segment %lld would pass 2 GiB", (long long)o->base);
        return KC_LOG_ETOOBIG;
    }
    kc_wr_patch_i32(w, start + 8, (int32_t)(total - KC_BATCH_LOG_OVERHEAD));
    uint32_t crc = kc_crc32c(0, w->buf + start + KC_BATCH_CRC_START, total - KC_BATCH_CRC_START);
    kc_wr_patch_i32(w, start + KC_BATCH_CRC_OFFSET, (int32_t)crc);
    if (kc_log_index_due(pos, o->last_entry_pos, l->opts.index_interval_bytes)) {
        if (o->nidx == o->capidx) {
            size_t cap = o->capidx ? o->capidx * 2 : 64;
            kc_log_idx_entry_t *v = realloc(o->idx, cap * sizeof(*v));
            if (v == NULL) {
                set_err(l, "out of memory for an index");
                return -ENOMEM;
            }
            o->idx = v;
            o->capidx = cap;
        }
        o->idx[o->nidx++] = (kc_log_idx_entry_t){(int32_t)(last_off - o->base), (int32_t)pos};
        o->last_entry_pos = pos;
    }
    o->pos += (int64_t)total;
    o->last_sealed = last_off;
    return w->len >= WRITE_CHUNK ? out_flush(c) : 0;
}

static int seal_open(cleaner_t *c, int64_t last_off)
{
    out_t *o = &c->out;
    o->open = false;
    return emit_batch(c, o->first_offset, last_off, o->epoch, o->base_ts, o->max_ts, o->count,
                      o->recs.buf, o->recs.len);
}

/* Add a record that stays to the open batch, sealing it first (up to the offset before this
 * record) when it is full or the leader epoch changes. */
static int out_record(cleaner_t *c, int32_t epoch, const kc_log_record_t *r)
{
    out_t *o = &c->out;
    int rc;
    if (o->open &&
        (epoch != o->epoch || o->count == INT32_MAX ||
         o->recs.len + rec_estimate(r) > OUT_BATCH_BYTES) &&
        (rc = seal_open(c, r->offset - 1)) != 0)
        return rc;
    if (!o->open) {
        o->open = true;
        o->count = 0;
        o->epoch = epoch;
        o->first_offset = r->offset;
        o->base_ts = o->max_ts = r->timestamp_ms;
        o->recs.len = 0;
        o->recs.err = 0;
    }
    if (r->timestamp_ms > o->max_ts)
        o->max_ts = r->timestamp_ms;
    int64_t ts_delta = wrap_sub(r->timestamp_ms, o->base_ts);
    int64_t off_delta = r->offset - o->first_offset;
    int32_t kl = r->key != NULL ? (int32_t)r->key_len : -1;
    int32_t vl = r->value != NULL ? (int32_t)r->value_len : -1;
    uint64_t body = 1 + kc_varlong_size(ts_delta) + kc_varint_size((int32_t)off_delta) +
                    kc_varint_size(kl) + (kl > 0 ? (uint64_t)kl : 0) + kc_varint_size(vl) +
                    (vl > 0 ? (uint64_t)vl : 0) + 1;
    if (off_delta > INT32_MAX || body > INT32_MAX) {
        set_err(c->l, "record at offset %lld does not fit a compacted batch", (long long)r->offset);
        return KC_LOG_ETOOBIG;
    }
    kc_writer_t *w = &o->recs;
    kc_wr_varint(w, (int32_t)body);
    kc_wr_i8(w, 0); /* record attributes */
    kc_wr_varlong(w, ts_delta);
    kc_wr_varint(w, (int32_t)off_delta);
    kc_wr_varint(w, kl);
    if (kl > 0)
        kc_wr_raw(w, r->key, (size_t)kl);
    kc_wr_varint(w, vl);
    if (vl > 0)
        kc_wr_raw(w, r->value, (size_t)vl);
    kc_wr_varint(w, 0); /* no headers */
    o->count++;
    if (w->err) {
        set_err(c->l, "out of memory writing a compacted batch");
        return -ENOMEM;
    }
    return 0;
}

/* Close the group [group_base, end): the last batch reaches to end - 1, or an empty batch
 * covers what no batch does. */
static int out_end(cleaner_t *c, int64_t group_base, int64_t end)
{
    out_t *o = &c->out;
    if (o->open)
        return seal_open(c, end - 1);
    int64_t from = o->last_sealed >= 0 ? o->last_sealed + 1 : group_base;
    if (from > end - 1)
        return 0;
    return emit_batch(c, from, end - 1, c->last_epoch, c->last_ts, c->last_ts, 0, NULL, 0);
}

/* Pass 2: copy what stays. */
static int copy_record(cleaner_t *c, size_t si, const kc_batch_hdr_t *h, const kc_log_record_t *r)
{
    (void)si;
    if (r == NULL) {
        c->g.batches_dropped++;
        return 0;
    }
    switch (verdict(c, r)) {
    case SUPERSEDED:
        c->g.superseded++;
        return 0;
    case EXPIRED:
        c->g.tombstones_dropped++;
        return 0;
    default:
        c->g.kept++;
        return out_record(c, h->partition_leader_epoch, r);
    }
}

/* ---- one group -------------------------------------------------------------------------- */

static const char *const seg_suffixes[] = {".log", ".index", ".timeindex", ".txnindex"};
#define N_SUFFIXES (sizeof(seg_suffixes) / sizeof(seg_suffixes[0]))

static int do_rename(kc_plog_t *l, const char *from, const char *to, bool missing_ok)
{
    int rc = l->io->rename(l->io->ctx, from, to);
    if (rc == -ENOENT && missing_ok)
        return 0;
    if (rc != 0)
        set_err(l, "cannot rename %s to %s: %s", from, to, kc_log_strerror(rc));
    return rc;
}

static int sync_dir(kc_plog_t *l)
{
    int rc = kc_log_io_fsync_dir(l->io, l->dir);
    if (rc != 0)
        set_err(l, "fsync of directory %s failed: %s", l->dir, kc_log_strerror(rc));
    return rc;
}

/* Rename every file of segment `base` to its .deleted name, or with `purge`, unlink those. */
static int old_files(cleaner_t *c, int64_t base, bool purge)
{
    kc_plog_t *l = c->l;
    for (size_t k = 0; k < N_SUFFIXES; k++) {
        char from[PATH_MAX_], to[PATH_MAX_], del[32];
        snprintf(del, sizeof(del), "%s.deleted", seg_suffixes[k]);
        int rc;
        if ((rc = seg_file(l, from, base, seg_suffixes[k])) != 0 ||
            (rc = seg_file(l, to, base, del)) != 0)
            return rc;
        if (purge) {
            rc = l->io->unlink(l->io->ctx, to);
            if (rc != 0 && rc != -ENOENT) /* harmless: the next open removes it */
                KC_WARN(MOD, "partition %d: cannot remove %s: %s", (int)l->partition, to,
                        kc_log_strerror(rc));
        } else if ((rc = do_rename(l, from, to, k > 0)) != 0) {
            return rc;
        }
    }
    return 0;
}

/* Compact c->orig[a .. a + m) into one segment and swap it in. `*shift` is how many entries
 * earlier groups removed from l->segs (so orig[i] is l->segs[i - *shift]). */
static int clean_group(cleaner_t *c, size_t a, size_t m, size_t *shift)
{
    kc_plog_t *l = c->l;
    const kc_log_io_t *io = l->io;
    const kc_log_seg_t *g = &c->orig[a];
    int64_t base = g[0].base, end = g[m - 1].next_offset;
    char logc[PATH_MAX_], idxc[PATH_MAX_], logs[PATH_MAX_], idxs[PATH_MAX_], logn[PATH_MAX_],
        idxn[PATH_MAX_];
    int rc;
    if ((rc = seg_file(l, logc, base, ".log.cleaned")) != 0 ||
        (rc = seg_file(l, idxc, base, ".index.cleaned")) != 0 ||
        (rc = seg_file(l, logs, base, ".log.swap")) != 0 ||
        (rc = seg_file(l, idxs, base, ".index.swap")) != 0 ||
        (rc = seg_file(l, logn, base, ".log")) != 0 ||
        (rc = seg_file(l, idxn, base, ".index")) != 0)
        return rc;

    out_t *o = &c->out;
    o->base = base;
    o->pos = 0;
    o->buf.len = 0;
    o->buf.err = 0;
    o->open = false;
    o->last_sealed = -1;
    o->nidx = 0;
    o->last_entry_pos = 0;
    memset(&c->g, 0, sizeof(c->g));
    bool decided = false;
    int ifd = -1;

    /* Write <base>.log.cleaned and <base>.index.cleaned. */
    if ((o->fd = io->open(io->ctx, logc, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) {
        set_err(l, "cannot create %s: %s", logc, kc_log_strerror(o->fd));
        rc = o->fd;
        goto fail;
    }
    for (size_t i = 0; i < m; i++)
        if ((rc = walk_segment(c, a + i, &g[i], g[i].size, -1, copy_record)) != 0)
            goto fail;
    if ((rc = out_end(c, base, end)) != 0 || (rc = out_flush(c)) != 0)
        goto fail;
    if ((ifd = io->open(io->ctx, idxc, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) {
        set_err(l, "cannot create %s: %s", idxc, kc_log_strerror(ifd));
        rc = ifd;
        goto fail;
    }
    if ((rc = kc_log_index_write(io, ifd, o->idx, o->nidx)) != 0) {
        set_err(l, "cannot write %s: %s", idxc, kc_log_strerror(rc));
        goto fail;
    }
    c->st.bytes_written += (int64_t)o->nidx * 8;
    io->close(io->ctx, ifd);
    ifd = -1;
    /* The segment must be durable before its name can say it replaces anything. The index is
     * not fsynced, as elsewhere: every open checks it and rebuilds it when it is wrong. */
    if ((rc = io->fsync(io->ctx, o->fd)) != 0) {
        set_err(l, "fsync of %s failed: %s", logc, kc_log_strerror(rc));
        goto fail;
    }
    io->close(io->ctx, o->fd);
    o->fd = -1;

    /* .cleaned -> .swap, the segment last; then the directory: from here on the swap is
     * decided (an open finishes it). */
    if ((rc = do_rename(l, idxc, idxs, false)) != 0 ||
        (rc = do_rename(l, logc, logs, false)) != 0 || (rc = sync_dir(l)) != 0)
        goto fail;
    decided = true;

    /* The replaced segments go to .deleted, durably before the new segment takes its name, so
     * that no old segment can reappear beside it. */
    for (size_t i = 0; i < m; i++)
        if ((rc = old_files(c, g[i].base, false)) != 0)
            goto fail;
    if ((rc = sync_dir(l)) != 0)
        goto fail;
    if ((rc = do_rename(l, idxs, idxn, false)) != 0 ||
        (rc = do_rename(l, logs, logn, false)) != 0 || (rc = sync_dir(l)) != 0)
        goto fail;

    size_t at = a - *shift;
    l->segs[at] = (kc_log_seg_t){base, o->pos, end};
    memmove(&l->segs[at + 1], &l->segs[at + m], (l->nsegs - at - m) * sizeof(*l->segs));
    l->nsegs -= m - 1;
    *shift += m - 1;
    for (size_t i = 0; i < m; i++)
        (void)old_files(c, g[i].base, true);
    c->st.segments_rewritten += (int64_t)m;
    c->st.superseded += c->g.superseded;
    c->st.tombstones_dropped += c->g.tombstones_dropped;
    c->st.batches_dropped += c->g.batches_dropped;
    KC_DEBUG(MOD,
             "partition %d: compacted %zu segments from %lld into %s (%lld bytes, %lld records)",
             (int)l->partition, m, (long long)base, logn, (long long)o->pos, (long long)c->g.kept);
    return 0;

fail:
    if (ifd >= 0)
        io->close(io->ctx, ifd);
    if (o->fd >= 0) {
        io->close(io->ctx, o->fd);
        o->fd = -1;
    }
    KC_WARN(MOD, "partition %d: compaction of segments from %lld failed%s: %s", (int)l->partition,
            (long long)base, decided ? " after the swap was decided" : "", l->err);
    if (!decided) { /* undo: the old segments are all there */
        const char *mine[] = {logc, idxc, logs, idxs};
        bool undone = true;
        for (size_t k = 0; k < 4; k++) {
            int r = io->unlink(io->ctx, mine[k]);
            if (r != 0 && r != -ENOENT)
                undone = false;
        }
        if (undone)
            return rc;
    }
    /* Let the open path's rules finish (or undo) it now, or at the next replay or clean. */
    char why[sizeof(l->err)];
    memcpy(why, l->err, sizeof(why));
    l->clean_pending = true;
    int r = kc_plog_clean_finish(l);
    if (r != 0) {
        char how[sizeof(l->err)];
        memcpy(how, l->err, sizeof(how));
        snprintf(l->err, sizeof(l->err), "%.280s; finishing the swap failed too: %.280s", why, how);
    } else {
        memcpy(l->err, why, sizeof(why));
    }
    return rc;
}

/* ---- the door --------------------------------------------------------------------------- */

int kc_plog_clean_finish(kc_plog_t *l)
{
    if (!l->clean_pending)
        return 0;
    int rc = kc_plog_reload_closed(l);
    if (rc != 0)
        return rc;
    l->clean_pending = false;
    KC_INFO(MOD, "partition %d: finished an interrupted compaction (%zu segments)",
            (int)l->partition, l->nsegs);
    return 0;
}

/* An upper bound of the size of a segment holding `live_bytes` of records: the records and the
 * batch headers. Counted per group, so that a group's compacted segment, compacted again,
 * forms the same group. */
static int64_t size_estimate(int64_t live_bytes)
{
    return live_bytes + KC_BATCH_HEADER_SIZE * (1 + live_bytes / (int64_t)OUT_BATCH_BYTES);
}

/* The whole clean, on a job's shadow `l` (see kc_plog_clean_begin): its closed segments are the
 * plog's at the start, its "active" segment the plog's active one cut at its synced size. */
static int clean_closed(kc_plog_t *l, int64_t now_ms, int64_t delete_retention_ms,
                        kc_plog_clean_stats_t *stats)
{
    cleaner_t c;
    memset(&c, 0, sizeof(c));
    c.l = l;
    c.out.fd = -1;
    kc_wr_init(&c.out.buf);
    kc_wr_init(&c.out.recs);
    kc_arena_init(&c.map.keys);
    int rc = 0;
    if (delete_retention_ms < 0) {
        set_err(l, "negative delete retention");
        rc = -EINVAL;
        goto out;
    }
    if ((rc = kc_plog_clean_finish(l)) != 0)
        goto out;
    c.nclosed = l->nsegs - 1;
    c.horizon = now_ms < INT64_MIN + delete_retention_ms ? INT64_MIN : now_ms - delete_retention_ms;
    c.st.segments_before = (int64_t)c.nclosed;
    for (size_t i = 0; i < c.nclosed; i++)
        c.st.bytes_before += l->segs[i].size;
    if (c.nclosed == 0)
        goto done;
    c.orig = malloc(l->nsegs * sizeof(*c.orig));
    c.info = calloc(l->nsegs, sizeof(*c.info));
    if (c.orig == NULL || c.info == NULL) {
        set_err(l, "out of memory");
        rc = -ENOMEM;
        goto done;
    }
    memcpy(c.orig, l->segs, l->nsegs * sizeof(*c.orig));

    /* Pass 1: the newest record of every key, over the durable log. */
    for (size_t i = 0; i < c.nclosed; i++)
        if ((rc = walk_segment(&c, i, &c.orig[i], c.orig[i].size, -1, map_record)) != 0)
            goto done;
    const kc_log_seg_t *act = &c.orig[c.nclosed];
    if ((rc = walk_segment(&c, c.nclosed, act, l->synced_size, l->fd, map_record)) != 0)
        goto done;
    c.st.keys = (int64_t)c.map.n;
    for (size_t i = 0; i < c.map.cap; i++) {
        const kentry_t *e = &c.map.v[i];
        if (!e->used || e->seg >= c.nclosed || (e->tomb && e->ts < c.horizon))
            continue;
        c.info[e->seg].live++;
        c.info[e->seg].live_bytes += e->est;
    }
    for (size_t i = 0; i < c.nclosed; i++)
        c.st.records_before += c.info[i].records;

    /* Pass 2, group by group. */
    size_t shift = 0;
    for (size_t i = 0; i < c.nclosed;) {
        size_t j = i + 1;
        int64_t live = c.info[i].live_bytes;
        while (j < c.nclosed &&
               size_estimate(live + c.info[j].live_bytes) <= l->opts.segment_bytes &&
               c.orig[j].next_offset - 1 - c.orig[i].base <= INT32_MAX)
            live += c.info[j++].live_bytes;
        bool lossless =
            j == i + 1 && c.info[i].live == c.info[i].records && c.info[i].odd_batches == 0;
        if (!lossless && (rc = clean_group(&c, i, j - i, &shift)) != 0)
            break;
        i = j;
    }

done:
    c.st.records_after = c.st.records_before - c.st.superseded - c.st.tombstones_dropped;
    c.st.segments_after = (int64_t)l->nsegs - 1;
    for (size_t i = 0; i + 1 < l->nsegs; i++)
        c.st.bytes_after += l->segs[i].size;
    if (rc == 0) {
        l->clean_upto = l->segs[l->nsegs - 1].base;
        if (c.st.segments_rewritten > 0)
            KC_INFO(MOD,
                    "partition %d: compacted %lld of %lld closed segments into %lld: %lld -> %lld "
                    "bytes, %lld -> %lld records (%lld superseded, %lld tombstones expired), "
                    "%lld keys",
                    (int)l->partition, (long long)c.st.segments_rewritten,
                    (long long)c.st.segments_before, (long long)c.st.segments_after,
                    (long long)c.st.bytes_before, (long long)c.st.bytes_after,
                    (long long)c.st.records_before, (long long)c.st.records_after,
                    (long long)c.st.superseded, (long long)c.st.tombstones_dropped,
                    (long long)c.st.keys);
    }
out:
    if (c.out.fd >= 0)
        l->io->close(l->io->ctx, c.out.fd);
    kc_wr_free(&c.out.buf);
    kc_wr_free(&c.out.recs);
    free(c.out.idx);
    ZSTD_freeCCtx(c.cctx);
    kmap_free(&c.map);
    free(c.orig);
    free(c.info);
    if (stats != NULL)
        *stats = c.st;
    return rc;
}

/* ---- the job: a clean beside the appends ---------------------------------------------------
 *
 * The shadow is a kc_plog_t of its own that knows only what the clean needs: the closed
 * segments as they were at kc_plog_clean_begin and, as its "active" segment, the plog's active
 * one cut at its synced size. Its descriptors start closed (walk_segment opens the active file
 * by name and reads only its synced part, which no append, sync or truncation changes), it has
 * its own batch context and error buffer, and everything above (clean_closed, clean_group,
 * kc_plog_clean_finish) works on it unchanged. The plog goes on appending, syncing and rolling
 * meanwhile: that only changes its active segment and adds segments after it, never a closed
 * one, and the clean only changes closed ones. kc_plog_clean_end then puts the shadow's closed
 * segments in place of the first `nclosed` entries of the plog's list. */
struct kc_plog_clean_job_s {
    kc_plog_t *sh;
    size_t nclosed; /* the plog's closed segments at begin */
    int64_t now_ms, retention_ms;
    int rc;
    kc_plog_clean_stats_t st;
};

static void job_free(kc_plog_clean_job_t *j)
{
    if (j == NULL)
        return;
    kc_plog_close(j->sh);
    free(j);
}

int kc_plog_clean_begin(kc_plog_t *l, int64_t now_ms, int64_t delete_retention_ms,
                        kc_plog_clean_job_t **out)
{
    *out = NULL;
    if (delete_retention_ms < 0) {
        set_err(l, "negative delete retention");
        return -EINVAL;
    }
    kc_plog_clean_job_t *j = calloc(1, sizeof(*j));
    kc_plog_t *sh = j != NULL ? calloc(1, sizeof(*sh)) : NULL;
    if (sh == NULL) {
        free(j);
        set_err(l, "out of memory");
        return -ENOMEM;
    }
    j->sh = sh;
    sh->fd = -1;
    sh->idx_fd = -1;
    kc_wr_init(&sh->wbuf);
    sh->io = l->io;
    sh->opts = l->opts;
    sh->partition = l->partition;
    sh->roll_base_ms = -1;
    sh->dir = strdup(l->dir);
    sh->bctx = kc_batch_ctx_new(0);
    sh->segs = malloc(l->nsegs * sizeof(*sh->segs));
    if (sh->dir == NULL || sh->bctx == NULL || sh->segs == NULL) {
        job_free(j);
        set_err(l, "out of memory");
        return -ENOMEM;
    }
    memcpy(sh->segs, l->segs, l->nsegs * sizeof(*sh->segs));
    sh->nsegs = sh->capsegs = l->nsegs;
    kc_log_seg_t *act = &sh->segs[sh->nsegs - 1];
    act->size = l->synced_size;
    act->next_offset = l->synced_next;
    sh->synced_size = l->synced_size;
    sh->synced_next = l->synced_next;
    sh->clean_upto = l->clean_upto;
    sh->clean_pending = l->clean_pending;
    j->nclosed = l->nsegs - 1;
    j->now_ms = now_ms;
    j->retention_ms = delete_retention_ms;
    *out = j;
    return 0;
}

int kc_plog_clean_run(kc_plog_clean_job_t *j)
{
    j->rc = clean_closed(j->sh, j->now_ms, j->retention_ms, &j->st);
    return j->rc;
}

int kc_plog_clean_end(kc_plog_t *l, kc_plog_clean_job_t *j, kc_plog_clean_stats_t *stats)
{
    if (j == NULL)
        return 0;
    int rc = j->rc;
    if (stats != NULL)
        *stats = j->st;
    if (l == NULL) {
        job_free(j);
        return rc;
    }
    kc_plog_t *sh = j->sh;
    size_t nnew = sh->nsegs - 1, rest = l->nsegs - j->nclosed;
    if (j->nclosed >= l->nsegs || l->segs[j->nclosed].base != sh->segs[nnew].base) {
        /* Not the plog the job began on, or its list changed in a way no append makes. */
        set_err(l, "a compaction ended on a log it did not begin on");
        job_free(j);
        return -EINVAL;
    }
    if (nnew + rest > l->capsegs) {
        kc_log_seg_t *v = realloc(l->segs, (nnew + rest) * sizeof(*v));
        if (v == NULL) {
            /* The files changed, the list did not: read it again from the directory before
             * the next replay or clean. */
            l->clean_pending = true;
            set_err(l, "out of memory");
            job_free(j);
            return rc != 0 ? rc : -ENOMEM;
        }
        l->segs = v;
        l->capsegs = nnew + rest;
    }
    memmove(&l->segs[nnew], &l->segs[j->nclosed], rest * sizeof(*l->segs));
    memcpy(l->segs, sh->segs, nnew * sizeof(*l->segs));
    l->nsegs = nnew + rest;
    l->clean_pending = sh->clean_pending;
    l->clean_upto = sh->clean_upto;
    if (rc != 0)
        memcpy(l->err, sh->err, sizeof(l->err));
    job_free(j);
    return rc;
}

int kc_plog_clean(kc_plog_t *l, int64_t now_ms, int64_t delete_retention_ms,
                  kc_plog_clean_stats_t *stats)
{
    kc_plog_clean_job_t *j;
    int rc = kc_plog_clean_begin(l, now_ms, delete_retention_ms, &j);
    if (rc != 0) {
        if (stats != NULL)
            memset(stats, 0, sizeof(*stats));
        return rc;
    }
    (void)kc_plog_clean_run(j);
    return kc_plog_clean_end(l, j, stats);
}

bool kc_plog_clean_due(const kc_plog_t *l, double min_dirty_ratio)
{
    if (l->clean_pending)
        return true;
    int64_t clean = 0, dirty = 0;
    for (size_t i = 0; i + 1 < l->nsegs; i++) {
        if (l->segs[i].base < l->clean_upto)
            clean += l->segs[i].size;
        else
            dirty += l->segs[i].size;
    }
    return dirty > 0 && (double)dirty >= min_dirty_ratio * (double)(clean + dirty);
}
