/* test_log_cleaner.c - the log cleaner (src/log/cleaner.c) on real temporary directories.
 *
 * The state a replay builds (key -> last value, a tombstone deleting) must be the same before
 * and after compaction, and after a reopen, over logs with many overwrites and tombstones across
 * many small segments, uncompressed and zstd; records keep their offsets, keys, values and
 * timestamps; no superseded record is left in a closed segment; the active segment is not
 * touched, and a newer record that is not yet synced does not make an older one go; tombstones
 * go only when older than the retention; control and transactional batches go, null keys stay;
 * a group where nothing stays becomes one empty batch. Then the swap under failure: an I/O
 * error at each step (the plog goes on, and a later clean or replay finishes what was decided),
 * and a crash at each step, with and without losing what was not fsynced (unsynced data and
 * directory operations after the last directory fsync, in order), after which a reopen must
 * give the same state and leave no leftovers. Last, load time: 100k commits over 1k keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch.h"
#include "log/crc32c.h"
#include "log/log.h"
#include "util/diag.h"

static char root[64];
static char trash_dir[128];
static int dir_counter;

static uint32_t rnd_state = 4242;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static void new_data_dir(char *buf, size_t n)
{
    snprintf(buf, n, "%s/d%d", root, ++dir_counter);
}

static void part_dir(char *buf, size_t n, const char *dir, int part)
{
    snprintf(buf, n, "%s/__consumer_offsets-%d", dir, part);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    /* tmpfs when there is one: the crash model lives in the I/O table, so the real file
     * system's durability does not matter here, and the crash and failure tests fsync some
     * thousands of times. */
    snprintf(root, sizeof(root), "/dev/shm/kc_log_cleaner_XXXXXX");
    if (mkdtemp(root) == NULL) {
        snprintf(root, sizeof(root), "/tmp/kc_log_cleaner_XXXXXX");
        if (mkdtemp(root) == NULL)
            return -1;
    }
    snprintf(trash_dir, sizeof(trash_dir), "%s/trash", root);
    if (mkdir(trash_dir, 0755) != 0)
        return -1;
    kc_diag_set_level(KC_DIAG_ERROR); /* failure WARN lines are expected here */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n > 0)
        assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Copy partition `part` of data directory `from` into the fresh data directory `to`. */
static void copy_partition(const char *from, const char *to, int part)
{
    char src[256], dst[256];
    part_dir(src, sizeof(src), from, part);
    part_dir(dst, sizeof(dst), to, part);
    assert_int_equal(mkdir(to, 0755), 0);
    assert_int_equal(mkdir(dst, 0755), 0);
    DIR *d = opendir(src);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char a[600], b[600];
        snprintf(a, sizeof(a), "%s/%s", src, e->d_name);
        snprintf(b, sizeof(b), "%s/%s", dst, e->d_name);
        size_t n;
        uint8_t *buf = read_file(a, &n);
        write_file(b, buf, n);
        free(buf);
    }
    closedir(d);
}

/* Fail when the partition directory holds compaction leftovers. */
static void expect_no_leftovers(const char *dir, int part, const char *ctx)
{
    char p[256];
    part_dir(p, sizeof(p), dir, part);
    DIR *d = opendir(p);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, ".cleaned") || strstr(e->d_name, ".swap") ||
            strstr(e->d_name, ".deleted"))
            fail_msg("%s: leftover %s", ctx, e->d_name);
    }
    closedir(d);
}

static size_t count_logs(const char *dir, int part)
{
    char p[256];
    part_dir(p, sizeof(p), dir, part);
    DIR *d = opendir(p);
    assert_non_null(d);
    struct dirent *e;
    size_t n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".log") == 0;
    }
    closedir(d);
    return n;
}

/* kcoord verify-log over the data directory must find nothing. */
static void expect_verify_clean(const char *dir, const char *ctx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    int problems = kc_log_verify(dir, f);
    fclose(f);
    if (problems != 0)
        fail_msg("%s: verify-log found %d problems:\n%s", ctx, problems, buf);
    free(buf);
}

static kc_plog_t *open_ok(const char *dir, int part, const kc_log_io_t *io, const kc_plog_opts_t *o)
{
    kc_plog_t *l = NULL;
    char err[512];
    int rc = kc_plog_open(&l, io ? io : kc_log_io_posix(), dir, part, o, err, sizeof(err));
    if (rc != 0)
        fail_msg("open %s/%d: %d: %s", dir, part, rc, err);
    return l;
}

/* ---- the replayed state: key -> last value ---------------------------------------------- */

typedef struct rec_s {
    int64_t off, ts;
    uint8_t *key; /* NULL: a null key */
    size_t klen;
    uint8_t *val; /* NULL: a tombstone */
    size_t vlen;
} rec_t;

typedef struct sentry_s {
    const rec_t *last; /* the last record of this key */
    bool used;
} sentry_t;

/* Everything a replay passed, and the state it builds. */
typedef struct snap_s {
    rec_t *r;
    size_t n, cap;
    sentry_t *map;
    size_t mcap, keys;
    kc_plog_replay_stats_t st;
} snap_t;

static uint64_t hkey(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 31);
}

static sentry_t *snap_slot(sentry_t *m, size_t cap, const uint8_t *k, size_t n)
{
    size_t i = (size_t)hkey(k, n) & (cap - 1);
    while (m[i].used && !(m[i].last->klen == n && memcmp(m[i].last->key, k, n) == 0))
        i = (i + 1) & (cap - 1);
    return &m[i];
}

static void snap_index(snap_t *s)
{
    free(s->map);
    s->mcap = 1024;
    while (s->mcap < s->n * 2 + 2)
        s->mcap *= 2;
    s->map = calloc(s->mcap, sizeof(*s->map));
    s->keys = 0;
    for (size_t i = 0; i < s->n; i++) {
        const rec_t *r = &s->r[i];
        if (r->key == NULL)
            continue;
        sentry_t *e = snap_slot(s->map, s->mcap, r->key, r->klen);
        if (!e->used)
            s->keys++;
        e->used = true;
        e->last = r;
    }
}

static const rec_t *snap_last(const snap_t *s, const uint8_t *k, size_t n)
{
    sentry_t *e = snap_slot(s->map, s->mcap, k, n);
    return e->used ? e->last : NULL;
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n + 1);
    if (n > 0)
        memcpy(c, p, n);
    return c;
}

static int snap_cb(void *arg, const kc_log_record_t *r)
{
    snap_t *s = arg;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->r = realloc(s->r, s->cap * sizeof(*s->r));
    }
    rec_t *c = &s->r[s->n++];
    c->off = r->offset;
    c->ts = r->timestamp_ms;
    c->key = r->key ? dup_bytes(r->key, r->key_len) : NULL;
    c->klen = r->key_len;
    c->val = r->value ? dup_bytes(r->value, r->value_len) : NULL;
    c->vlen = r->value_len;
    return 0;
}

static void snap_free(snap_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->r[i].key);
        free(s->r[i].val);
    }
    free(s->r);
    free(s->map);
    memset(s, 0, sizeof(*s));
}

static void snapshot(kc_plog_t *l, snap_t *s)
{
    memset(s, 0, sizeof(*s));
    int rc = kc_plog_replay(l, snap_cb, s, &s->st);
    if (rc != 0)
        fail_msg("replay: %d (%s)", rc, kc_plog_error(l));
    snap_index(s);
}

static bool same_rec(const rec_t *a, const rec_t *b)
{
    return a->off == b->off && a->ts == b->ts && (a->key == NULL) == (b->key == NULL) &&
           a->klen == b->klen && (a->key == NULL || memcmp(a->key, b->key, a->klen) == 0) &&
           (a->val == NULL) == (b->val == NULL) && a->vlen == b->vlen &&
           (a->val == NULL || memcmp(a->val, b->val, a->vlen) == 0);
}

/* The state of `a` and `b` is the same: every key has the same value, or is deleted (its last
 * record is a tombstone, or it has none) in both, but for `extra` keys that only `b` has.
 * Null-key records are compared as a list. */
static void expect_state_plus(const snap_t *a, const snap_t *b, size_t extra, const char *ctx)
{
    size_t live_a = 0, live_b = 0;
    for (size_t i = 0; i < a->mcap; i++) {
        if (!a->map[i].used || a->map[i].last->val == NULL)
            continue;
        live_a++;
        const rec_t *x = a->map[i].last;
        const rec_t *y = snap_last(b, x->key, x->klen);
        if (y == NULL || y->val == NULL || y->vlen != x->vlen || memcmp(y->val, x->val, x->vlen))
            fail_msg("%s: key '%.*s' differs (offset %lld)", ctx, (int)x->klen, (char *)x->key,
                     (long long)x->off);
    }
    for (size_t i = 0; i < b->mcap; i++)
        live_b += b->map[i].used && b->map[i].last->val != NULL;
    if (live_a + extra != live_b)
        fail_msg("%s: %zu live keys before, %zu after", ctx, live_a, live_b);
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < a->n; i++)
        na += a->r[i].key == NULL;
    for (size_t i = 0; i < b->n; i++)
        nb += b->r[i].key == NULL;
    assert_int_equal(na, nb);
}

static void expect_same_state(const snap_t *a, const snap_t *b, const char *ctx)
{
    expect_state_plus(a, b, 0, ctx);
}

static const rec_t *find_off(const snap_t *s, int64_t off)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->r[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->r[lo].off == off ? &s->r[lo] : NULL;
}

/* `after` is a compaction of `before`: same state, every record as it was at its offset, and
 * (when `newest`) every keyed record below `active_base` the last of its key in `before`.
 * Returns the number of records below active_base. */
static size_t expect_compaction_of(const snap_t *before, const snap_t *after, int64_t active_base,
                                   bool newest, const char *ctx)
{
    expect_same_state(before, after, ctx);
    size_t closed = 0;
    for (size_t i = 0; i < after->n; i++) {
        const rec_t *r = &after->r[i];
        const rec_t *o = find_off(before, r->off);
        if (o == NULL || !same_rec(o, r))
            fail_msg("%s: record at offset %lld is not the one that was there", ctx,
                     (long long)r->off);
        if (r->off >= active_base)
            continue;
        closed++;
        if (newest && r->key != NULL && snap_last(before, r->key, r->klen) != o)
            fail_msg("%s: superseded record at offset %lld left in a closed segment", ctx,
                     (long long)r->off);
    }
    /* The active segment's records are all still there. */
    for (size_t i = 0; i < before->n; i++)
        if (before->r[i].off >= active_base && find_off(after, before->r[i].off) == NULL)
            fail_msg("%s: record %lld of the active segment went", ctx,
                     (long long)before->r[i].off);
    return closed;
}

/* ---- writing logs ----------------------------------------------------------------------- */

typedef struct wl_s {
    size_t nkeys;
    unsigned tomb_pct; /* percent of records that are tombstones */
    unsigned val_len;  /* extra value bytes */
    int64_t ts0;       /* timestamp of record 0; record i gets ts0 + i */
} wl_t;

static char filler[65536];

static size_t mk_key(char *buf, size_t n, size_t id)
{
    return (size_t)snprintf(buf, n, "group-%zu/topic/%zu", id % 97, id);
}

/* Append records [from, from + n) of the workload as one batch. */
static void append_wl(kc_plog_t *l, const wl_t *w, size_t from, size_t n)
{
    kc_log_record_t recs[64];
    char keys[64][64], vals[64][80];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        size_t k = rnd() % w->nkeys;
        size_t kl = mk_key(keys[i], sizeof(keys[i]), k);
        recs[i] = (kc_log_record_t){.timestamp_ms = w->ts0 + (int64_t)(from + i),
                                    .key = (const uint8_t *)keys[i],
                                    .key_len = kl};
        if (rnd() % 100 >= w->tomb_pct) {
            int vl = snprintf(vals[i], sizeof(vals[i]), "v%zu-%u:", from + i, rnd() % 1000);
            recs[i].value = (const uint8_t *)vals[i];
            recs[i].value_len = (size_t)vl;
            if (w->val_len > 0) { /* a value with a big tail: point into the filler */
                recs[i].value = (const uint8_t *)filler + (from + i) % 64;
                recs[i].value_len = w->val_len;
            }
        }
    }
    int64_t base = -1;
    int rc = kc_plog_append(l, recs, n, 0, &base);
    if (rc != 0)
        fail_msg("append: %d (%s)", rc, kc_plog_error(l));
    assert_int_equal(base, (int64_t)from);
}

/* Append `total` records in batches of 1..maxb, syncing every batch. */
static void fill(kc_plog_t *l, const wl_t *w, size_t total, size_t maxb)
{
    size_t at = (size_t)kc_plog_next_offset(l), end = at + total;
    while (at < end) {
        size_t n = 1 + rnd() % maxb;
        if (n > end - at)
            n = end - at;
        append_wl(l, w, at, n);
        assert_int_equal(kc_plog_sync(l), 0);
        at += n;
    }
}

static void append_one(kc_plog_t *l, const char *key, const char *val, int64_t ts)
{
    kc_log_record_t r = {.timestamp_ms = ts, .key = (const uint8_t *)key, .key_len = strlen(key)};
    if (val != NULL) {
        r.value = (const uint8_t *)val;
        r.value_len = strlen(val);
    }
    int rc = kc_plog_append(l, &r, 1, ts, NULL);
    if (rc != 0)
        fail_msg("append: %d (%s)", rc, kc_plog_error(l));
}

static void expect_clean(kc_plog_t *l, int64_t now, int64_t retention, kc_plog_clean_stats_t *st)
{
    int rc = kc_plog_clean(l, now, retention, st);
    if (rc != 0)
        fail_msg("clean: %d (%s)", rc, kc_plog_error(l));
    assert_int_equal(st->records_after,
                     st->records_before - st->superseded - st->tombstones_dropped);
}

static void print_stats(const char *what, const kc_plog_clean_stats_t *s)
{
    print_message("%s: closed segments %lld -> %lld (%lld rewritten), bytes %lld -> %lld, "
                  "records %lld -> %lld (%lld superseded, %lld tombstones expired), %lld keys, "
                  "%lld bytes read, %lld written\n",
                  what, (long long)s->segments_before, (long long)s->segments_after,
                  (long long)s->segments_rewritten, (long long)s->bytes_before,
                  (long long)s->bytes_after, (long long)s->records_before,
                  (long long)s->records_after, (long long)s->superseded,
                  (long long)s->tombstones_dropped, (long long)s->keys, (long long)s->bytes_read,
                  (long long)s->bytes_written);
}

/* ---- same state, offsets kept, active segment untouched ---------------------------------- */

static void test_state_preserved(void **state)
{
    (void)state;
    for (int zstd = 0; zstd <= 1; zstd++) {
        rnd_state = 100 + (uint32_t)zstd;
        char dir[128], p[300];
        new_data_dir(dir, sizeof(dir));
        kc_plog_opts_t o;
        kc_plog_opts_init(&o);
        o.segment_bytes = 2048;
        o.index_interval_bytes = 256;
        o.codec = zstd ? KC_LOG_CODEC_ZSTD : KC_LOG_CODEC_NONE;
        wl_t w = {.nkeys = 150, .tomb_pct = 10, .ts0 = 1000000};
        kc_plog_t *l = open_ok(dir, 4, NULL, &o);
        assert_false(kc_plog_clean_due(l, 0.5)); /* nothing closed yet */
        fill(l, &w, 4000, 6);
        size_t nseg = kc_plog_segment_count(l);
        assert_true(nseg >= 10);
        assert_true(kc_plog_clean_due(l, 0.5));
        int64_t active = kc_plog_active_base(l), next = kc_plog_next_offset(l);
        snap_t before;
        snapshot(l, &before);
        kc_log_segment_path(p, sizeof(p), kc_plog_dir(l), active, ".log");
        size_t alen;
        uint8_t *abytes = read_file(p, &alen);

        /* Every tombstone is younger than the retention: they all stay. */
        kc_plog_clean_stats_t st;
        expect_clean(l, w.ts0 + 4000, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
        print_stats(zstd ? "zstd, 4000 records over 150 keys" : "4000 records over 150 keys", &st);
        assert_int_equal(st.segments_before, (int64_t)nseg - 1);
        assert_int_equal(st.tombstones_dropped, 0);
        assert_true(st.superseded > 0);
        assert_true(st.keys <= 150 && st.keys > 100);
        assert_true(st.segments_after < st.segments_before);
        assert_true(st.bytes_after * 4 < st.bytes_before);
        assert_int_equal(st.segments_after, (int64_t)kc_plog_segment_count(l) - 1);
        assert_int_equal(kc_plog_active_base(l), active);
        assert_int_equal(kc_plog_next_offset(l), next);
        assert_false(kc_plog_clean_due(l, 0.5));
        assert_false(kc_plog_clean_due(l, 0.0));

        snap_t after;
        snapshot(l, &after);
        size_t closed = expect_compaction_of(&before, &after, active, true, "after clean");
        assert_int_equal((int64_t)closed, st.records_after);
        assert_true(after.st.bytes < before.st.bytes);
        size_t alen2;
        uint8_t *abytes2 = read_file(p, &alen2);
        assert_int_equal(alen2, alen);
        assert_memory_equal(abytes2, abytes, alen);
        free(abytes2);
        kc_plog_close(l);
        expect_verify_clean(dir, "after clean");
        expect_no_leftovers(dir, 4, "after clean");

        /* Reopen: the same. A second clean right away has nothing to do. */
        l = open_ok(dir, 4, NULL, &o);
        assert_int_equal(kc_plog_segment_count(l), (size_t)st.segments_after + 1);
        snap_t again;
        snapshot(l, &again);
        expect_compaction_of(&before, &again, active, true, "after reopen");
        assert_int_equal(again.n, after.n);
        snap_free(&again);
        kc_plog_clean_stats_t st2;
        expect_clean(l, w.ts0 + 4000, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st2);
        assert_int_equal(st2.segments_rewritten, 0);
        assert_int_equal(st2.bytes_after, st.bytes_after);

        /* Much later: the tombstones that are the newest of their key expire. */
        expect_clean(l, w.ts0 + 4000 + 2LL * KC_PLOG_DELETE_RETENTION_MS_DEFAULT,
                     KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st2);
        assert_true(st2.tombstones_dropped > 0);
        snap_t late;
        snapshot(l, &late);
        expect_compaction_of(&before, &late, active, true, "after the tombstones expired");
        for (size_t i = 0; i < late.n; i++)
            assert_true(late.r[i].off >= active || late.r[i].val != NULL);

        /* More history: due again; compacting merges the new segments with the clean ones. */
        fill(l, &w, 2000, 6);
        assert_true(kc_plog_clean_due(l, 0.5));
        int64_t active2 = kc_plog_active_base(l);
        snap_t before2;
        snapshot(l, &before2);
        expect_clean(l, w.ts0 + 6000, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st2);
        snap_t after2;
        snapshot(l, &after2);
        expect_compaction_of(&before2, &after2, active2, true, "second round");
        assert_true(st2.segments_after <= st.segments_after + 1);
        kc_plog_close(l);
        expect_verify_clean(dir, "second round");

        snap_free(&before);
        snap_free(&after);
        snap_free(&late);
        snap_free(&before2);
        snap_free(&after2);
        free(abytes);
    }
}

/* The newest record of a key may be in the active segment: then every older one goes from the
 * closed segments, but only if that newest record is synced. */
static void test_active_segment(void **state)
{
    (void)state;
    char dir[128], p[300];
    new_data_dir(dir, sizeof(dir));
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 1024;
    kc_plog_t *l = open_ok(dir, 0, NULL, &o);
    char val[32];
    for (int i = 0; i < 200; i++) {
        snprintf(val, sizeof(val), "value-%d", i);
        append_one(l, i % 2 ? "synced-key" : "unsynced-key", val, 5000 + i);
        append_one(l, "filler", val, 5000 + i);
        assert_int_equal(kc_plog_sync(l), 0);
    }
    kc_plog_close(l);
    /* A new segment at the next append (by age), then no roll: what follows stays in it. */
    o.segment_bytes = 1 << 20;
    o.roll_ms = 1;
    l = open_ok(dir, 0, NULL, &o);
    assert_true(kc_plog_segment_count(l) >= 4);
    /* The newest "synced-key" goes to the active segment and is synced; the newest
     * "unsynced-key" is appended without a sync. */
    append_one(l, "synced-key", "newest", 9000);
    assert_int_equal(kc_plog_sync(l), 0);
    int64_t active = kc_plog_active_base(l);
    assert_int_equal(active, 400);
    kc_log_segment_path(p, sizeof(p), kc_plog_dir(l), active, ".log");
    int64_t synced_file = file_size(p);
    snap_t synced_state;
    snapshot(l, &synced_state);
    append_one(l, "unsynced-key", "not yet durable", 9001);
    assert_int_equal(kc_plog_active_base(l), active);
    snap_t before;
    snapshot(l, &before);
    size_t alen;
    uint8_t *abytes = read_file(p, &alen);

    kc_plog_clean_stats_t st;
    expect_clean(l, 10000, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    print_stats("active segment", &st);
    snap_t after;
    snapshot(l, &after);
    expect_compaction_of(&before, &after, active, false, "active");
    /* Closed: no "synced-key" (its newest is in the active segment), one "unsynced-key" (its
     * newest durable record), and a "filler" only if the active segment has none. */
    size_t n_synced = 0, n_unsynced = 0, n_filler = 0;
    for (size_t i = 0; i < after.n; i++) {
        if (after.r[i].off >= active)
            continue;
        n_synced += after.r[i].klen == 10 && memcmp(after.r[i].key, "synced-key", 10) == 0;
        n_unsynced += after.r[i].klen == 12 && memcmp(after.r[i].key, "unsynced-key", 12) == 0;
        n_filler += after.r[i].klen == 6 && memcmp(after.r[i].key, "filler", 6) == 0;
    }
    assert_int_equal(n_synced, 0);
    assert_int_equal(n_unsynced, 1);
    assert_int_equal(n_filler, snap_last(&before, (const uint8_t *)"filler", 6)->off < active);
    size_t alen2;
    uint8_t *abytes2 = read_file(p, &alen2);
    assert_int_equal(alen2, alen);
    assert_memory_equal(abytes2, abytes, alen);
    free(abytes);
    free(abytes2);

    /* The power goes before the sync: the unsynced record is lost, and the older value of its
     * key must still be in the log. */
    kc_plog_close(l);
    assert_int_equal(truncate(p, synced_file), 0);
    l = open_ok(dir, 0, NULL, &o);
    snap_t lost;
    snapshot(l, &lost);
    expect_same_state(&synced_state, &lost, "unsynced record lost");
    const rec_t *u = snap_last(&lost, (const uint8_t *)"unsynced-key", 12);
    assert_non_null(u);
    assert_int_equal(u->vlen, 9);
    assert_memory_equal(u->val, "value-198", 9);
    kc_plog_close(l);
    expect_verify_clean(dir, "active");
    snap_free(&lost);
    snap_free(&before);
    snap_free(&after);
    snap_free(&synced_state);
}

/* ---- tombstones ------------------------------------------------------------------------- */

static bool closed_has(const snap_t *s, int64_t active, const char *key, bool tomb)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < s->n; i++)
        if (s->r[i].off < active && s->r[i].klen == n && memcmp(s->r[i].key, key, n) == 0 &&
            (s->r[i].val == NULL) == tomb)
            return true;
    return false;
}

static void test_tombstone_retention(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 512;
    const int64_t now = 100000, ret = 1000;
    kc_plog_t *l = open_ok(dir, 1, NULL, &o);
    static const char *const keys[] = {"t-old",     "t-edge",       "t-young",
                                       "t-ancient", "t-superseded", "t-in-active"};
    for (size_t i = 0; i < 6; i++)
        append_one(l, keys[i], "a value", 1);
    append_one(l, "t-old", NULL, now - ret - 1);   /* older than the retention: goes */
    append_one(l, "t-edge", NULL, now - ret);      /* exactly the retention: stays */
    append_one(l, "t-young", NULL, now - 10);      /* stays */
    append_one(l, "t-ancient", NULL, 5);           /* goes */
    append_one(l, "t-superseded", NULL, now - 10); /* superseded by the value below: goes */
    append_one(l, "t-superseded", "back again", now - 5);
    for (int i = 0; i < 40; i++)
        append_one(l, "pad", "padding", now - 1);
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);
    o.segment_bytes = 1 << 20;
    l = open_ok(dir, 1, NULL, &o);
    append_one(l, "t-in-active", NULL, 5); /* old, but the active segment is never compacted */
    assert_int_equal(kc_plog_sync(l), 0);
    int64_t active = kc_plog_active_base(l);
    assert_true(kc_plog_segment_count(l) >= 4);
    snap_t before;
    snapshot(l, &before);
    assert_true(closed_has(&before, active, "t-superseded", true));

    kc_plog_clean_stats_t st;
    expect_clean(l, now, ret, &st);
    assert_int_equal(st.tombstones_dropped, 2);
    snap_t after;
    snapshot(l, &after);
    expect_compaction_of(&before, &after, active, true, "tombstones");
    assert_false(closed_has(&after, active, "t-old", true));
    assert_true(closed_has(&after, active, "t-edge", true));
    assert_true(closed_has(&after, active, "t-young", true));
    assert_false(closed_has(&after, active, "t-ancient", true));
    assert_false(closed_has(&after, active, "t-superseded", true));
    assert_true(closed_has(&after, active, "t-superseded", false));
    for (size_t i = 0; i < 6; i++) /* no old value comes back */
        assert_false(i != 4 && closed_has(&after, active, keys[i], false));
    const rec_t *t = snap_last(&after, (const uint8_t *)"t-in-active", 11);
    assert_true(t != NULL && t->val == NULL && t->off >= active);

    /* The default retention, to the millisecond. */
    expect_clean(l, now - ret + KC_PLOG_DELETE_RETENTION_MS_DEFAULT,
                 KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    assert_int_equal(st.tombstones_dropped, 0);
    expect_clean(l, now - ret + KC_PLOG_DELETE_RETENTION_MS_DEFAULT + 1,
                 KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    assert_int_equal(st.tombstones_dropped, 1); /* t-edge */
    snap_t later;
    snapshot(l, &later);
    expect_compaction_of(&before, &later, active, true, "default retention");
    assert_false(closed_has(&later, active, "t-edge", true));
    assert_true(closed_has(&later, active, "t-young", true));
    /* A negative retention is refused. */
    assert_int_equal(kc_plog_clean(l, now, -1, &st), -EINVAL);
    kc_plog_close(l);
    expect_verify_clean(dir, "tombstones");
    snap_free(&before);
    snap_free(&after);
    snap_free(&later);
}

/* ---- what a Kafka broker's log may hold; a group where nothing stays --------------------- */

static void set_crc(uint8_t *b, size_t len)
{
    uint32_t crc = kc_crc32c(0, b + 21, len - 21);
    b[17] = (uint8_t)(crc >> 24);
    b[18] = (uint8_t)(crc >> 16);
    b[19] = (uint8_t)(crc >> 8);
    b[20] = (uint8_t)crc;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Append a batch to `w`: records {key, value} at offsets base.. (attrs: transactional,
 * control), or with n == 0 an empty batch over [base, base + delta]. */
static void raw_batch(kc_writer_t *w, int64_t base, int16_t attrs, const char *const *kv, size_t n,
                      int32_t delta)
{
    kc_log_record_t recs[4];
    size_t m = n > 0 ? n : 1;
    for (size_t i = 0; i < m; i++) {
        const char *k = n > 0 ? kv[2 * i] : "x";
        const char *v = n > 0 ? kv[2 * i + 1] : "x";
        recs[i] = (kc_log_record_t){.timestamp_ms = 7};
        if (k != NULL) {
            recs[i].key = (const uint8_t *)k;
            recs[i].key_len = strlen(k);
        }
        if (v != NULL) {
            recs[i].value = (const uint8_t *)v;
            recs[i].value_len = strlen(v);
        }
    }
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, base);
    spec.extra_attrs = attrs;
    if (attrs != 0) {
        spec.producer_id = 9;
        spec.producer_epoch = 0;
        spec.base_sequence = 0;
    }
    size_t start = w->len;
    assert_int_equal(kc_batch_encode(NULL, w, &spec, recs, m), 0);
    if (n == 0) { /* keep the header only: count 0, batchLength 49, lastOffsetDelta `delta` */
        w->len = start + KC_BATCH_HEADER_SIZE;
        put_be32(w->buf + start + 8, KC_BATCH_MIN_LENGTH);
        put_be32(w->buf + start + 23, (uint32_t)delta);
        put_be32(w->buf + start + 57, 0);
        set_crc(w->buf + start, KC_BATCH_HEADER_SIZE);
    }
}

static void test_kafka_batches_and_empty_group(void **state)
{
    (void)state;
    char dir[128], pdir[256], p[300];
    new_data_dir(dir, sizeof(dir));
    part_dir(pdir, sizeof(pdir), dir, 2);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(pdir, 0755), 0);
    kc_writer_t w;
    kc_wr_init(&w);
    static const char *const b0[] = {"k1", "a", "k2", "b"};
    static const char *const txn[] = {"k1", "in a transaction", "k3", "in a transaction"};
    static const char *const ctl[] = {"\0\0\0\0", "\0\0\0\0\0\0"};
    static const char *const b5[] = {NULL, "null key", "k1", "c"};
    raw_batch(&w, 0, 0, b0, 2, 0);                                                    /* 0-1 */
    raw_batch(&w, 2, KC_BATCH_ATTR_TRANSACTIONAL, txn, 2, 0);                         /* 2-3 */
    raw_batch(&w, 4, KC_BATCH_ATTR_TRANSACTIONAL | KC_BATCH_ATTR_CONTROL, ctl, 1, 0); /* 4 */
    raw_batch(&w, 5, 0, b5, 2, 0);                                                    /* 5-6 */
    raw_batch(&w, 7, 0, NULL, 0, 2);                                                  /* 7-9 */
    snprintf(p, sizeof(p), "%s/%020d.log", pdir, 0);
    write_file(p, w.buf, w.len);
    kc_wr_free(&w);

    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 200;
    kc_plog_t *l = open_ok(dir, 2, NULL, &o);
    assert_int_equal(kc_plog_next_offset(l), 10);
    append_one(l, "k2", "d", 10); /* rolls: segment 0 is closed now */
    assert_int_equal(kc_plog_sync(l), 0);
    assert_int_equal(kc_plog_segment_count(l), 2);
    snap_t before;
    snapshot(l, &before);
    assert_int_equal(before.st.txn_batches, 1);
    assert_int_equal(before.st.control_batches, 1);

    kc_plog_clean_stats_t st;
    expect_clean(l, 100, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    assert_int_equal(st.batches_dropped, 2);
    assert_int_equal(st.records_before, 4);
    assert_int_equal(st.superseded, 2); /* k1=a, k2=b */
    assert_int_equal(st.records_after, 2);
    snap_t after;
    snapshot(l, &after);
    expect_compaction_of(&before, &after, 10, true, "kafka batches");
    assert_int_equal(after.st.txn_batches, 0);
    assert_int_equal(after.st.control_batches, 0);
    assert_int_equal(after.n, 3);
    assert_int_equal(after.r[0].off, 5);
    assert_null(after.r[0].key);
    assert_int_equal(after.r[1].off, 6);
    assert_int_equal(kc_plog_next_offset(l), 11);
    kc_plog_close(l);
    /* One batch: offsets 5..9, two records. */
    size_t len;
    uint8_t *b = read_file(p, &len);
    kc_batch_hdr_t h;
    assert_true(len >= KC_BATCH_HEADER_SIZE);
    kc_batch_hdr_parse(b, &h);
    assert_int_equal(kc_batch_size(&h), len);
    assert_int_equal(h.base_offset, 5);
    assert_int_equal(kc_batch_last_offset(&h), 9);
    assert_int_equal(h.count, 2);
    free(b);
    l = open_ok(dir, 2, NULL, &o);
    assert_int_equal(kc_plog_next_offset(l), 11);
    kc_plog_close(l);
    /* verify-log knows __consumer_offsets: the null key is its only complaint. */
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(kc_log_verify(dir, devnull), 1);
    fclose(devnull);

    /* Every closed record superseded by the active segment: one empty batch is left. */
    new_data_dir(dir, sizeof(dir));
    o.segment_bytes = 300;
    l = open_ok(dir, 2, NULL, &o);
    for (int i = 0; i < 60; i++) {
        append_one(l, i % 2 ? "ka" : "kb", "some value", 10 + i);
        assert_int_equal(kc_plog_sync(l), 0);
    }
    kc_plog_close(l);
    o.segment_bytes = 1 << 20;
    l = open_ok(dir, 2, NULL, &o);
    append_one(l, "ka", "newest", 100);
    append_one(l, "kb", "newest", 100);
    assert_int_equal(kc_plog_sync(l), 0);
    int64_t active = kc_plog_active_base(l);
    assert_true(kc_plog_segment_count(l) >= 5);
    snap_free(&before);
    snap_free(&after);
    snapshot(l, &before);
    expect_clean(l, 200, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    print_stats("everything superseded", &st);
    assert_int_equal(st.segments_after, 1);
    assert_int_equal(st.records_after, 0);
    assert_int_equal(st.bytes_after, KC_BATCH_HEADER_SIZE);
    snapshot(l, &after);
    expect_compaction_of(&before, &after, active, true, "empty group");
    kc_plog_close(l);
    part_dir(pdir, sizeof(pdir), dir, 2);
    snprintf(p, sizeof(p), "%s/%020d.log", pdir, 0);
    b = read_file(p, &len);
    assert_int_equal(len, KC_BATCH_HEADER_SIZE);
    kc_batch_hdr_parse(b, &h);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(kc_batch_last_offset(&h), active - 1);
    assert_int_equal(h.count, 0);
    free(b);
    l = open_ok(dir, 2, NULL, &o);
    assert_int_equal(kc_plog_next_offset(l), 62);
    assert_int_equal(kc_plog_segment_count(l), 2);
    /* Nothing closed at all: nothing to do. */
    kc_plog_close(l);
    expect_verify_clean(dir, "empty group");
    new_data_dir(dir, sizeof(dir));
    l = open_ok(dir, 2, NULL, NULL);
    append_one(l, "a", "b", 1);
    expect_clean(l, 200, 0, &st);
    assert_int_equal(st.segments_before, 0);
    assert_int_equal(st.bytes_read, 0); /* unsynced: not even read */
    assert_int_equal(kc_plog_next_offset(l), 1);
    kc_plog_close(l);
    snap_free(&before);
    snap_free(&after);
}

/* Big values: several batches per compacted segment and several compacted segments, index
 * entries, and batches that keep their leader epoch. */
static void test_big_values_and_epochs(void **state)
{
    (void)state;
    rnd_state = 9;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 2 << 20;
    o.index_interval_bytes = 4096;
    wl_t w = {.nkeys = 1000, .tomb_pct = 3, .val_len = 8000, .ts0 = 50};
    kc_plog_t *l = open_ok(dir, 3, NULL, &o);
    fill(l, &w, 600, 4);
    int64_t switch_at = kc_plog_next_offset(l);
    kc_plog_close(l);
    o.leader_epoch = 3;
    l = open_ok(dir, 3, NULL, &o);
    fill(l, &w, 600, 4);
    int64_t active = kc_plog_active_base(l);
    assert_true(kc_plog_segment_count(l) >= 3);
    snap_t before;
    snapshot(l, &before);
    kc_plog_clean_stats_t st;
    expect_clean(l, 10000, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    print_stats("8 KB values", &st);
    snap_t after;
    snapshot(l, &after);
    expect_compaction_of(&before, &after, active, true, "big values");
    assert_true(st.segments_after >= 1);
    kc_plog_close(l);
    expect_verify_clean(dir, "big values");

    /* Each batch of the compacted segments holds one epoch. */
    char pdir[256];
    part_dir(pdir, sizeof(pdir), dir, 3);
    DIR *d = opendir(pdir);
    struct dirent *e;
    size_t batches = 0, entries = 0;
    while ((e = readdir(d)) != NULL) {
        long long base;
        char suffix[16];
        if (sscanf(e->d_name, "%lld%15s", &base, suffix) != 2 || base >= active)
            continue;
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", pdir, e->d_name);
        if (strcmp(suffix, ".index") == 0) {
            entries += (size_t)file_size(p) / 8;
            continue;
        }
        if (strcmp(suffix, ".log") != 0)
            continue;
        size_t len;
        uint8_t *b = read_file(p, &len);
        for (size_t pos = 0; pos < len;) {
            kc_batch_hdr_t h;
            kc_batch_hdr_parse(b + pos, &h);
            assert_int_equal(h.partition_leader_epoch, h.base_offset >= switch_at ? 3 : 0);
            pos += kc_batch_size(&h);
            batches++;
        }
        free(b);
    }
    closedir(d);
    print_message("compacted: %zu batches, %zu index entries\n", batches, entries);
    assert_true(batches >= 4);
    assert_true(entries >= 2);
    assert_true(st.segments_after >= 2);
    snap_free(&before);
    snap_free(&after);
}

/* ---- the I/O table: failures and crashes at each step ------------------------------------ */

enum { NS_CREATE, NS_RENAME, NS_UNLINK };

typedef struct nsop_s {
    int kind;
    char a[300], b[300], t[300]; /* create a; rename a -> b (t: what b was); unlink a (into t) */
} nsop_t;

typedef struct tfile_s {
    dev_t dev;
    ino_t ino;
    int64_t synced; /* bytes known durable */
} tfile_t;

/* Every call that changes a file or a name is a step. When armed: the step numbered crash_at
 * and everything after fail (the process died); steps fail_at .. fail_at + fail_times - 1
 * fail with fail_err (the disk misbehaves, the process goes on). Directory operations since the
 * last directory fsync are journaled (unlinked files wait in the trash) and files created are
 * tracked by inode with their synced size, so that a power cut can be played afterwards. */
typedef struct fio_s {
    kc_log_io_t io;
    const kc_log_io_t *real;
    bool armed, crashed;
    int steps, crash_at, fail_at, fail_times, fail_err;
    bool is_dir[1024];
    nsop_t ops[600];
    size_t nops;
    tfile_t files[256];
    size_t nfiles;
    int ntrash;
} fio_t;

static int step(fio_t *f)
{
    if (f->crashed)
        return -EIO;
    if (!f->armed)
        return 0;
    int k = ++f->steps;
    if (f->crash_at > 0 && k >= f->crash_at) {
        f->crashed = true;
        return -EIO;
    }
    if (f->fail_at > 0 && k >= f->fail_at && k < f->fail_at + f->fail_times)
        return -f->fail_err;
    return 0;
}

static tfile_t *tracked(fio_t *f, int fd, bool add)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return NULL;
    for (size_t i = 0; i < f->nfiles; i++)
        if (f->files[i].dev == st.st_dev && f->files[i].ino == st.st_ino)
            return &f->files[i];
    if (!add || f->nfiles == sizeof(f->files) / sizeof(f->files[0]))
        return NULL;
    f->files[f->nfiles] = (tfile_t){st.st_dev, st.st_ino, (int64_t)st.st_size};
    return &f->files[f->nfiles++];
}

static nsop_t *journal(fio_t *f, int kind)
{
    assert_true(f->nops < sizeof(f->ops) / sizeof(f->ops[0]));
    nsop_t *op = &f->ops[f->nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    return op;
}

static void to_trash(fio_t *f, const char *path, char *t, size_t n)
{
    snprintf(t, n, "%s/t%d", trash_dir, ++f->ntrash);
    assert_int_equal(rename(path, t), 0);
}

static int f_open(void *ctx, const char *path, int flags, int mode)
{
    fio_t *f = ctx;
    bool creating = (flags & (O_CREAT | O_TRUNC)) != 0;
    if (f->crashed)
        return -EIO;
    int e = creating ? step(f) : 0;
    if (e != 0)
        return e;
    bool existed = access(path, F_OK) == 0;
    int fd = f->real->open(f->real->ctx, path, flags, mode);
    if (fd < 0 || fd >= 1024)
        return fd;
    f->is_dir[fd] = (flags & O_DIRECTORY) != 0;
    if (f->armed && creating && !f->is_dir[fd]) {
        tfile_t *t = tracked(f, fd, true);
        assert_non_null(t);
        if (!existed || (flags & O_TRUNC))
            t->synced = 0;
        if (!existed)
            snprintf(journal(f, NS_CREATE)->a, sizeof(f->ops[0].a), "%s", path);
    }
    return fd;
}

static int64_t f_pread(void *ctx, int fd, void *buf, size_t n, int64_t off)
{
    fio_t *f = ctx;
    return f->crashed ? -EIO : f->real->pread(f->real->ctx, fd, buf, n, off);
}

static int64_t f_pwrite(void *ctx, int fd, const void *buf, size_t n, int64_t off)
{
    fio_t *f = ctx;
    int e = step(f);
    return e != 0 ? e : f->real->pwrite(f->real->ctx, fd, buf, n, off);
}

static int f_fsync(void *ctx, int fd)
{
    fio_t *f = ctx;
    int e = step(f);
    if (e != 0)
        return e;
    int rc = f->real->fsync(f->real->ctx, fd);
    if (rc != 0)
        return rc;
    if (fd < 1024 && f->is_dir[fd]) { /* the journal is durable now */
        for (size_t i = 0; i < f->nops; i++)
            if (f->ops[i].t[0] != '\0')
                unlink(f->ops[i].t);
        f->nops = 0;
    } else {
        tfile_t *t = tracked(f, fd, false);
        if (t != NULL)
            t->synced = f->real->fsize(f->real->ctx, fd);
    }
    return 0;
}

static int f_ftruncate(void *ctx, int fd, int64_t size)
{
    fio_t *f = ctx;
    int e = step(f);
    if (e != 0)
        return e;
    int rc = f->real->ftruncate(f->real->ctx, fd, size);
    tfile_t *t = rc == 0 ? tracked(f, fd, false) : NULL;
    if (t != NULL && t->synced > size)
        t->synced = size;
    return rc;
}

static int64_t f_fsize(void *ctx, int fd)
{
    fio_t *f = ctx;
    return f->crashed ? -EIO : f->real->fsize(f->real->ctx, fd);
}

static int f_close(void *ctx, int fd)
{
    fio_t *f = ctx;
    if (fd >= 0 && fd < 1024)
        f->is_dir[fd] = false;
    return f->real->close(f->real->ctx, fd);
}

static int f_rename(void *ctx, const char *from, const char *to)
{
    fio_t *f = ctx;
    int e = step(f);
    if (e != 0)
        return e;
    if (!f->armed)
        return f->real->rename(f->real->ctx, from, to);
    if (access(from, F_OK) != 0)
        return -ENOENT;
    nsop_t *op = journal(f, NS_RENAME);
    snprintf(op->a, sizeof(op->a), "%s", from);
    snprintf(op->b, sizeof(op->b), "%s", to);
    if (access(to, F_OK) == 0)
        to_trash(f, to, op->t, sizeof(op->t));
    assert_int_equal(f->real->rename(f->real->ctx, from, to), 0);
    return 0;
}

static int f_unlink(void *ctx, const char *path)
{
    fio_t *f = ctx;
    int e = step(f);
    if (e != 0)
        return e;
    if (!f->armed)
        return f->real->unlink(f->real->ctx, path);
    if (access(path, F_OK) != 0)
        return -ENOENT;
    nsop_t *op = journal(f, NS_UNLINK);
    snprintf(op->a, sizeof(op->a), "%s", path);
    to_trash(f, path, op->t, sizeof(op->t));
    return 0;
}

static int f_mkdir(void *ctx, const char *path, int mode)
{
    fio_t *f = ctx;
    return f->crashed ? -EIO : f->real->mkdir(f->real->ctx, path, mode);
}

static int f_listdir(void *ctx, const char *path, int (*fn)(void *, const char *), void *arg)
{
    fio_t *f = ctx;
    return f->crashed ? -EIO : f->real->listdir(f->real->ctx, path, fn, arg);
}

static fio_t *fio_new(void)
{
    fio_t *f = calloc(1, sizeof(*f));
    f->real = kc_log_io_posix();
    f->io = (kc_log_io_t){.ctx = f,
                          .open = f_open,
                          .pread = f_pread,
                          .pwrite = f_pwrite,
                          .fsync = f_fsync,
                          .ftruncate = f_ftruncate,
                          .fsize = f_fsize,
                          .close = f_close,
                          .rename = f_rename,
                          .unlink = f_unlink,
                          .mkdir = f_mkdir,
                          .listdir = f_listdir};
    return f;
}

static void empty_trash(void)
{
    DIR *d = opendir(trash_dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[600];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", trash_dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

/* After the process died: a power cut undoes the last `undo` directory operations not covered
 * by a directory fsync (newest first, as a journaling file system keeps them in order) and
 * loses every byte not fsynced. undo < 0: no power cut, only the process died. */
static void power_cut(fio_t *f, const char *pdir, int undo)
{
    if (undo >= 0) {
        for (int i = 0; i < undo && f->nops > 0; i++) {
            nsop_t *op = &f->ops[--f->nops];
            if (op->kind == NS_CREATE) {
                assert_int_equal(unlink(op->a), 0);
            } else if (op->kind == NS_RENAME) {
                assert_int_equal(rename(op->b, op->a), 0);
                if (op->t[0] != '\0')
                    assert_int_equal(rename(op->t, op->b), 0);
            } else {
                assert_int_equal(rename(op->t, op->a), 0);
            }
        }
        DIR *d = opendir(pdir);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char p[600];
            struct stat st;
            snprintf(p, sizeof(p), "%s/%s", pdir, e->d_name);
            if (e->d_name[0] == '.' || stat(p, &st) != 0)
                continue;
            for (size_t i = 0; i < f->nfiles; i++)
                if (f->files[i].dev == st.st_dev && f->files[i].ino == st.st_ino &&
                    (int64_t)st.st_size > f->files[i].synced)
                    assert_int_equal(truncate(p, f->files[i].synced), 0);
        }
        closedir(d);
    }
    empty_trash();
}

/* A log of three or more compaction groups, built once. */
static char tmpl_dir[128];
static kc_plog_opts_t tmpl_opts;
static snap_t tmpl;
static int64_t tmpl_active, tmpl_next;
static size_t tmpl_logs;
#define TMPL_NOW 900000

static void build_template(void)
{
    if (tmpl_dir[0] != '\0')
        return;
    rnd_state = 31337;
    new_data_dir(tmpl_dir, sizeof(tmpl_dir));
    kc_plog_opts_init(&tmpl_opts);
    tmpl_opts.segment_bytes = 1000;
    tmpl_opts.index_interval_bytes = 200;
    wl_t w = {.nkeys = 60, .tomb_pct = 15, .ts0 = 1000};
    kc_plog_t *l = open_ok(tmpl_dir, 0, NULL, &tmpl_opts);
    fill(l, &w, 500, 4);
    tmpl_active = kc_plog_active_base(l);
    tmpl_next = kc_plog_next_offset(l);
    snapshot(l, &tmpl);
    kc_plog_close(l);
    tmpl_logs = count_logs(tmpl_dir, 0);
}

/* The checks after a failure or a crash: the log in `dir` replays to the template's state and
 * goes on. */
static void expect_template_state(kc_plog_t *l, const char *ctx)
{
    snap_t s;
    snapshot(l, &s);
    expect_compaction_of(&tmpl, &s, tmpl_active, false, ctx);
    assert_int_equal(kc_plog_next_offset(l), tmpl_next);
    assert_int_equal(kc_plog_active_base(l), tmpl_active);
    snap_free(&s);
}

static void test_fail_at_each_step(void **state)
{
    (void)state;
    build_template();
    int total = 0, failed = 0, pending_seen = 0;
    for (int forever = 0; forever <= 1; forever++) {
        for (int k = 1;; k++) {
            char dir[128], ctx[96];
            snprintf(ctx, sizeof(ctx), "fail at step %d%s", k, forever ? " and after" : "");
            new_data_dir(dir, sizeof(dir));
            copy_partition(tmpl_dir, dir, 0);
            fio_t *f = fio_new();
            kc_plog_t *l = open_ok(dir, 0, &f->io, &tmpl_opts);
            f->armed = true;
            f->fail_at = k;
            f->fail_times = forever ? 1000000 : 1;
            f->fail_err = k % 2 ? EIO : ENOSPC;
            kc_plog_clean_stats_t st;
            int rc = kc_plog_clean(l, TMPL_NOW, 100, &st);
            bool done = f->steps < k;
            if (done) {
                assert_int_equal(rc, 0);
                total = f->steps;
            } else if (rc != 0) {
                failed++;
                assert_true(kc_plog_error(l)[0] != '\0');
            }
            if (forever) {
                /* The disk is still broken: a replay may have to finish a swap and fail. */
                snap_t s;
                memset(&s, 0, sizeof(s));
                int r = kc_plog_replay(l, snap_cb, &s, NULL);
                pending_seen += r != 0;
                snap_free(&s);
                /* A swap left to finish makes a clean due whatever the ratio. */
                assert_int_equal(kc_plog_clean_due(l, 2.0), r != 0);
            }
            f->fail_at = 0; /* the disk works again */
            expect_template_state(l, ctx);
            append_one(l, "after", "the failure", TMPL_NOW);
            assert_int_equal(kc_plog_sync(l), 0);
            assert_int_equal(kc_plog_clean(l, TMPL_NOW, 100, &st), 0);
            snap_t s;
            snapshot(l, &s);
            expect_state_plus(&tmpl, &s, 1, ctx);
            kc_plog_close(l);
            free(f);
            snap_free(&s);
            l = open_ok(dir, 0, NULL, &tmpl_opts);
            snapshot(l, &s);
            const rec_t *a = snap_last(&s, (const uint8_t *)"after", 5);
            assert_true(a != NULL && a->off == tmpl_next);
            kc_plog_close(l);
            snap_free(&s);
            expect_no_leftovers(dir, 0, ctx);
            expect_verify_clean(dir, ctx);
            if (done)
                break;
        }
    }
    print_message("%d steps in a clean of %zu segments; %d failures reported; %d replays had to "
                  "wait for the disk\n",
                  total, tmpl_logs, failed, pending_seen);
    assert_true(total > 20);
    assert_true(pending_seen > 0);
}

static void test_crash_at_each_step(void **state)
{
    (void)state;
    build_template();
    static const char *const how[] = {"process only", "power, nothing undone",
                                      "power, everything undone", "power, some undone"};
    /* A run without a crash: how many steps, and the layout after. */
    char dir[128], pdir[256], ctx[128];
    new_data_dir(dir, sizeof(dir));
    copy_partition(tmpl_dir, dir, 0);
    fio_t *f = fio_new();
    kc_plog_t *l = open_ok(dir, 0, &f->io, &tmpl_opts);
    f->armed = true;
    kc_plog_clean_stats_t st, st0;
    assert_int_equal(kc_plog_clean(l, TMPL_NOW, 100, &st0), 0);
    int total = f->steps;
    size_t final_segs = kc_plog_segment_count(l);
    kc_plog_close(l);
    free(f);
    assert_true(final_segs < tmpl_logs);

    int rolled_back = 0, rolled_forward = 0, mixed = 0;
    for (int k = 1; k <= total; k++) {
        for (int v = 0; v < 4; v++) {
            snprintf(ctx, sizeof(ctx), "crash at step %d, %s", k, how[v]);
            new_data_dir(dir, sizeof(dir));
            part_dir(pdir, sizeof(pdir), dir, 0);
            copy_partition(tmpl_dir, dir, 0);
            f = fio_new();
            l = open_ok(dir, 0, &f->io, &tmpl_opts);
            f->armed = true;
            f->crash_at = k;
            (void)kc_plog_clean(l, TMPL_NOW, 100, &st);
            assert_true(f->crashed);
            kc_plog_close(l);
            int undo = v == 0 ? -1 : v == 1 ? 0 : v == 2 ? 1000 : (int)(rnd() % (f->nops + 1));
            power_cut(f, pdir, undo);
            free(f);

            l = open_ok(dir, 0, NULL, &tmpl_opts);
            expect_template_state(l, ctx);
            size_t logs = kc_plog_segment_count(l);
            kc_plog_close(l);
            expect_no_leftovers(dir, 0, ctx);
            expect_verify_clean(dir, ctx);
            if (logs == tmpl_logs)
                rolled_back++;
            else if (logs == final_segs)
                rolled_forward++;
            else
                mixed++; /* some groups swapped in, the rest not */
            /* And it compacts from there. */
            l = open_ok(dir, 0, NULL, &tmpl_opts);
            assert_int_equal(kc_plog_clean(l, TMPL_NOW, 100, &st), 0);
            expect_template_state(l, ctx);
            kc_plog_close(l);
            expect_verify_clean(dir, ctx);
        }
    }
    print_message(
        "%zu segments (the active one too) became %zu (%lld records -> %lld, %lld tombstones "
        "expired); crash at each of %d steps, 4 ways: %d loaded as before, %d as after, "
        "%d with some groups compacted\n",
        tmpl_logs, final_segs, (long long)st0.records_before, (long long)st0.records_after,
        (long long)st0.tombstones_dropped, total, rolled_back, rolled_forward, mixed);
    assert_true(rolled_back > 0 && rolled_forward > 0 && mixed > 0);
}

/* ---- load time depends on live keys, not history ------------------------------------------ */

static void test_live_keys_not_history(void **state)
{
    (void)state;
    rnd_state = 5;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 64 << 10;
    wl_t w = {.nkeys = 1000, .tomb_pct = 1, .ts0 = 1000};
    kc_plog_t *l = open_ok(dir, 9, NULL, &o);
    for (size_t at = 0; at < 100000; at += 10) { /* 100k commits, 10 per group commit */
        append_wl(l, &w, at, 10);
        if (at % 100 == 90)
            assert_int_equal(kc_plog_sync(l), 0);
    }
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);
    l = open_ok(dir, 9, NULL, &o);
    snap_t before;
    snapshot(l, &before);
    size_t segs = kc_plog_segment_count(l);
    int64_t active = kc_plog_active_base(l);
    kc_plog_clean_stats_t st;
    expect_clean(l, 200000, KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
    kc_plog_close(l);

    l = open_ok(dir, 9, NULL, &o);
    snap_t after;
    snapshot(l, &after);
    size_t closed = expect_compaction_of(&before, &after, active, true, "100k commits");
    kc_plog_close(l);
    expect_verify_clean(dir, "100k commits");
    print_stats("100k commits over 1k keys", &st);
    print_message("load before: %zu segments, %lld bytes, %lld records; after: %zu segments, "
                  "%lld bytes, %lld records (%zu in closed segments, %zu keys)\n",
                  segs, (long long)before.st.bytes, (long long)before.st.records,
                  (size_t)st.segments_after + 1, (long long)after.st.bytes,
                  (long long)after.st.records, closed, after.keys);
    assert_true(closed <= 1000);
    assert_true(after.st.bytes * 10 < before.st.bytes);
    assert_true(after.st.records * 10 < before.st.records);
    snap_free(&before);
    snap_free(&after);
}

/* ---- a flush beside a running clean ----------------------------------------------------------
 *
 * kc_plog_clean_run on a thread of its own, held inside one of its renames (before the swap is
 * decided: .log.cleaned -> .log.swap; or after: .log.swap -> .log) until the test lets it go.
 * Meanwhile the test appends and syncs on the plog, rolls segments, and has a write fail: every
 * flush must complete while the clean is still held, and after both the log holds the compacted
 * closed segments plus everything appended, also after a reopen. */

typedef struct bio_s {
    kc_log_io_t io;
    const kc_log_io_t *real;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *hold_from; /* hold the first rename whose source ends with this */
    bool held, released;
    bool fail_writes; /* pwrite fails with ENOSPC on the test's own thread */
    pthread_t owner;
} bio_t;

static bool bio_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int b_open(void *ctx, const char *path, int flags, int mode)
{
    bio_t *b = ctx;
    return b->real->open(b->real->ctx, path, flags, mode);
}
static int64_t b_pread(void *ctx, int fd, void *buf, size_t n, int64_t off)
{
    bio_t *b = ctx;
    return b->real->pread(b->real->ctx, fd, buf, n, off);
}
static int64_t b_pwrite(void *ctx, int fd, const void *buf, size_t n, int64_t off)
{
    bio_t *b = ctx;
    pthread_mutex_lock(&b->mu);
    bool fail = b->fail_writes && pthread_equal(pthread_self(), b->owner);
    pthread_mutex_unlock(&b->mu);
    return fail ? -ENOSPC : b->real->pwrite(b->real->ctx, fd, buf, n, off);
}
static int b_fsync(void *ctx, int fd)
{
    bio_t *b = ctx;
    return b->real->fsync(b->real->ctx, fd);
}
static int b_ftruncate(void *ctx, int fd, int64_t size)
{
    bio_t *b = ctx;
    return b->real->ftruncate(b->real->ctx, fd, size);
}
static int64_t b_fsize(void *ctx, int fd)
{
    bio_t *b = ctx;
    return b->real->fsize(b->real->ctx, fd);
}
static int b_close(void *ctx, int fd)
{
    bio_t *b = ctx;
    return b->real->close(b->real->ctx, fd);
}
static int b_rename(void *ctx, const char *from, const char *to)
{
    bio_t *b = ctx;
    pthread_mutex_lock(&b->mu);
    if (b->hold_from != NULL && !b->held && bio_suffix(from, b->hold_from)) {
        b->held = true;
        pthread_cond_broadcast(&b->cv);
        while (!b->released)
            pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return b->real->rename(b->real->ctx, from, to);
}
static int b_unlink(void *ctx, const char *path)
{
    bio_t *b = ctx;
    return b->real->unlink(b->real->ctx, path);
}
static int b_mkdir(void *ctx, const char *path, int mode)
{
    bio_t *b = ctx;
    return b->real->mkdir(b->real->ctx, path, mode);
}
static int b_listdir(void *ctx, const char *path, int (*fn)(void *, const char *), void *arg)
{
    bio_t *b = ctx;
    return b->real->listdir(b->real->ctx, path, fn, arg);
}
static int b_fstat(void *ctx, int fd, kc_log_stat_t *st)
{
    bio_t *b = ctx;
    return b->real->fstat(b->real->ctx, fd, st);
}
static int b_stat(void *ctx, const char *path, kc_log_stat_t *st)
{
    bio_t *b = ctx;
    return b->real->stat(b->real->ctx, path, st);
}

static void bio_init(bio_t *b, const char *hold_from)
{
    memset(b, 0, sizeof(*b));
    b->real = kc_log_io_posix();
    b->io = (kc_log_io_t){b,       b_open,   b_pread,  b_pwrite, b_fsync,   b_ftruncate, b_fsize,
                          b_close, b_rename, b_unlink, b_mkdir,  b_listdir, b_fstat,     b_stat};
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->hold_from = hold_from;
    b->owner = pthread_self();
}

static void bio_wait_held(bio_t *b)
{
    pthread_mutex_lock(&b->mu);
    while (!b->held)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static bool bio_still_held(bio_t *b)
{
    pthread_mutex_lock(&b->mu);
    bool held = b->held && !b->released;
    pthread_mutex_unlock(&b->mu);
    return held;
}

static void bio_release(bio_t *b)
{
    pthread_mutex_lock(&b->mu);
    b->released = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void bio_fail_writes(bio_t *b, bool on)
{
    pthread_mutex_lock(&b->mu);
    b->fail_writes = on;
    pthread_mutex_unlock(&b->mu);
}

typedef struct runner_s {
    kc_plog_clean_job_t *job;
    int rc;
    pthread_t t;
} runner_t;

static void *run_clean(void *arg)
{
    runner_t *r = arg;
    r->rc = kc_plog_clean_run(r->job);
    return NULL;
}

/* Append "new-<i>" = "v<i>-xxx..." (some 300 bytes, so that a few of them roll a segment) for
 * i in [from, from + n), one record a batch, each synced. */
static void append_new(kc_plog_t *l, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char k[32], v[320];
        snprintf(k, sizeof(k), "new-%d", i);
        int vl = snprintf(v, sizeof(v), "v%d-", i);
        memset(v + vl, 'x', sizeof(v) - 1 - (size_t)vl);
        v[sizeof(v) - 1] = '\0';
        append_one(l, k, v, TMPL_NOW);
        assert_int_equal(kc_plog_sync(l), 0);
    }
}

/* The log replays to the template's state with the compacted closed segments, plus `n` new
 * keys appended from offset tmpl_next on. */
static void expect_template_plus_new(kc_plog_t *l, int n, const char *ctx)
{
    snap_t s;
    snapshot(l, &s);
    expect_state_plus(&tmpl, &s, (size_t)n, ctx);
    for (size_t i = 0; i < s.n; i++) {
        const rec_t *r = &s.r[i];
        if (r->off >= tmpl_next)
            continue;
        const rec_t *o = find_off(&tmpl, r->off);
        if (o == NULL || !same_rec(o, r))
            fail_msg("%s: record at offset %lld is not the one that was there", ctx,
                     (long long)r->off);
        if (r->off < tmpl_active && r->key != NULL && snap_last(&tmpl, r->key, r->klen) != o)
            fail_msg("%s: superseded record at offset %lld left in a closed segment", ctx,
                     (long long)r->off);
    }
    for (int i = 0; i < n; i++) {
        char k[32];
        int kl = snprintf(k, sizeof(k), "new-%d", i);
        const rec_t *r = snap_last(&s, (const uint8_t *)k, (size_t)kl);
        if (r == NULL || r->off != tmpl_next + i || r->val == NULL)
            fail_msg("%s: %s is not at offset %lld", ctx, k, (long long)(tmpl_next + i));
    }
    assert_int_equal(kc_plog_next_offset(l), tmpl_next + n);
    snap_free(&s);
}

static void test_flush_beside_clean(void **state)
{
    (void)state;
    build_template();
    static const char *const holds[] = {".log.cleaned", ".log.swap"};
    for (size_t h = 0; h < 2; h++) {
        char dir[128], ctx[96];
        snprintf(ctx, sizeof(ctx), "clean held at the rename of its %s", holds[h]);
        new_data_dir(dir, sizeof(dir));
        copy_partition(tmpl_dir, dir, 0);
        bio_t b;
        bio_init(&b, holds[h]);
        kc_plog_t *l = open_ok(dir, 0, &b.io, &tmpl_opts);
        size_t segs0 = kc_plog_segment_count(l);
        runner_t r = {0};
        assert_int_equal(kc_plog_clean_begin(l, TMPL_NOW, 100, &r.job), 0);
        assert_int_equal(pthread_create(&r.t, NULL, run_clean, &r), 0);
        bio_wait_held(&b);

        /* Flushes while the clean is held: ten records, enough to roll segments. */
        append_new(l, 0, 10);
        assert_true(kc_plog_segment_count(l) > segs0);
        /* A write that fails meanwhile: the plog drops that batch, as always; the next works. */
        bio_fail_writes(&b, true);
        kc_log_record_t bad = {.timestamp_ms = TMPL_NOW,
                               .key = (const uint8_t *)"bad",
                               .key_len = 3,
                               .value = (const uint8_t *)"x",
                               .value_len = 1};
        assert_int_equal(kc_plog_append(l, &bad, 1, TMPL_NOW, NULL), -ENOSPC);
        bio_fail_writes(&b, false);
        append_new(l, 10, 5);
        /* Every flush above completed first: the clean is still where it was held. */
        assert_true(bio_still_held(&b));

        bio_release(&b);
        assert_int_equal(pthread_join(r.t, NULL), 0);
        assert_int_equal(r.rc, 0);
        kc_plog_clean_stats_t st;
        assert_int_equal(kc_plog_clean_end(l, r.job, &st), 0);
        assert_true(st.segments_rewritten > 0);
        assert_true(st.superseded > 0);
        assert_int_equal(kc_plog_segment_count(l), count_logs(dir, 0));
        assert_true(kc_plog_segment_count(l) < segs0 + 10);
        expect_template_plus_new(l, 15, ctx);
        /* The clean left the rolled segments as they were: nothing more is due but them. */
        append_new(l, 15, 1);
        kc_plog_close(l);
        expect_no_leftovers(dir, 0, ctx);
        expect_verify_clean(dir, ctx);
        l = open_ok(dir, 0, NULL, &tmpl_opts);
        expect_template_plus_new(l, 16, ctx);
        kc_plog_close(l);
        pthread_mutex_destroy(&b.mu);
        pthread_cond_destroy(&b.cv);
    }
}

/* The plog is closed while its clean runs (the coordinator does that after a failed write) and
 * reopened once the clean returned: the directory holds the compacted segments and every
 * appended record. */
static void test_close_beside_clean(void **state)
{
    (void)state;
    build_template();
    static const char *const holds[] = {".log.cleaned", ".log.swap"};
    for (size_t h = 0; h < 2; h++) {
        char dir[128], ctx[96];
        snprintf(ctx, sizeof(ctx), "closed while the clean was held at its %s", holds[h]);
        new_data_dir(dir, sizeof(dir));
        copy_partition(tmpl_dir, dir, 0);
        bio_t b;
        bio_init(&b, holds[h]);
        kc_plog_t *l = open_ok(dir, 0, &b.io, &tmpl_opts);
        runner_t r = {0};
        assert_int_equal(kc_plog_clean_begin(l, TMPL_NOW, 100, &r.job), 0);
        assert_int_equal(pthread_create(&r.t, NULL, run_clean, &r), 0);
        bio_wait_held(&b);
        append_new(l, 0, 4);
        assert_int_equal(kc_plog_close(l), 0);
        assert_true(bio_still_held(&b));
        bio_release(&b);
        assert_int_equal(pthread_join(r.t, NULL), 0);
        assert_int_equal(r.rc, 0);
        kc_plog_clean_stats_t st;
        assert_int_equal(kc_plog_clean_end(NULL, r.job, &st), 0);
        assert_true(st.segments_rewritten > 0);
        expect_no_leftovers(dir, 0, ctx);
        expect_verify_clean(dir, ctx);
        l = open_ok(dir, 0, NULL, &tmpl_opts);
        expect_template_plus_new(l, 4, ctx);
        kc_plog_close(l);
        pthread_mutex_destroy(&b.mu);
        pthread_cond_destroy(&b.cv);
    }
    assert_int_equal(kc_plog_clean_end(NULL, NULL, NULL), 0);
}

int main(void)
{
    memset(filler, 'f', sizeof(filler));
    if (getenv("KC_TEST_FILTER") != NULL) /* e.g. KC_TEST_FILTER='*crash*' */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_preserved),
        cmocka_unit_test(test_active_segment),
        cmocka_unit_test(test_tombstone_retention),
        cmocka_unit_test(test_kafka_batches_and_empty_group),
        cmocka_unit_test(test_big_values_and_epochs),
        cmocka_unit_test(test_fail_at_each_step),
        cmocka_unit_test(test_crash_at_each_step),
        cmocka_unit_test(test_live_keys_not_history),
        cmocka_unit_test(test_flush_beside_clean),
        cmocka_unit_test(test_close_beside_clean),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    snap_free(&tmpl);
    return rc;
}
