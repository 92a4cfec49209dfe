/* test_log_plog.c - the partition log (src/log/plog.c) on a real temporary directory.
 *
 * Append, replay and reopen; rolls by size and age (and the deferred roll); the sparse index
 * and its rebuild; Kafka's extra files and compaction leftovers; the named corruption cases of
 * the newest segment (truncated header, truncated body, bad CRC, bad length at the end,
 * zero-filled tail, ...), which after a crash are torn writes when no valid batch follows them
 * and damage when one does (a CRC mismatch or a zeroed batch in the middle, a zero gap before
 * a valid batch), and which after a clean shutdown are all refused without truncating
 * anything; damage in an older segment, which is refused with the file and byte position; an
 * active segment deleted, replaced or truncated under the running log (KC_LOG_EGONE, for
 * good); Kafka's clean-shutdown marker; transactional, control and unsupported batches; I/O faults
 * through the ops table (short writes, EIO and ENOSPC on write, fsync and directory fsync,
 * failing truncation); and crashes that drop, cut, zero or garble everything not fsynced, after
 * which a reopen must give back exactly the synced prefix (or a longer prefix of whole batches).
 * Ends with the verify and dump tools over the same directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch.h"
#include "log/crc32c.h"
#include "log/log.h"
#include "util/diag.h"

static char root[64];   /* the temporary directory of the whole run */
static int dir_counter; /* each test takes a fresh data directory under root */

static uint32_t rnd_state = 777;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static void new_data_dir(char *buf, size_t n)
{
    snprintf(buf, n, "%s/d%d", root, ++dir_counter);
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
    snprintf(root, sizeof(root), "/tmp/kc_log_plog_XXXXXX");
    if (mkdtemp(root) == NULL)
        return -1;
    kc_diag_set_level(KC_DIAG_ERROR); /* torn-write WARN lines are expected here */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- records and a model of what the log should hold ------------------------------------ */

typedef struct model_s {
    char (*key)[24];
    char (*val)[40];
    bool *tomb;
    size_t n, cap;
} model_t;

static void model_add(model_t *m, size_t id)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->key = realloc(m->key, m->cap * sizeof(*m->key));
        m->val = realloc(m->val, m->cap * sizeof(*m->val));
        m->tomb = realloc(m->tomb, m->cap * sizeof(*m->tomb));
    }
    snprintf(m->key[m->n], sizeof(m->key[0]), "k%zu", id % 37);
    snprintf(m->val[m->n], sizeof(m->val[0]), "value-%zu-%u", id, rnd() % 100000);
    m->tomb[m->n] = id % 11 == 10;
    m->n++;
}

static void model_free(model_t *m)
{
    free(m->key);
    free(m->val);
    free(m->tomb);
    memset(m, 0, sizeof(*m));
}

/* Append records [from, from + n) of the model as one batch. */
static int append_range(kc_plog_t *l, const model_t *m, size_t from, size_t n, int64_t now)
{
    kc_log_record_t recs[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        size_t k = from + i;
        recs[i] = (kc_log_record_t){
            .timestamp_ms = -1, .key = (const uint8_t *)m->key[k], .key_len = strlen(m->key[k])};
        if (!m->tomb[k]) {
            recs[i].value = (const uint8_t *)m->val[k];
            recs[i].value_len = strlen(m->val[k]);
        }
    }
    int64_t base = -1;
    int rc = kc_plog_append(l, recs, n, now, &base);
    if (rc == 0)
        assert_int_equal(base, (int64_t)from);
    return rc;
}

typedef struct seen_s {
    const model_t *m;
    size_t n;
    int64_t last_ts;
    bool mismatch;
} seen_t;

static int check_rec(void *arg, const kc_log_record_t *r)
{
    seen_t *s = arg;
    const model_t *m = s->m;
    size_t i = s->n++;
    if (i >= m->n || r->offset != (int64_t)i || r->key_len != strlen(m->key[i]) ||
        memcmp(r->key, m->key[i], r->key_len) != 0 || (r->value == NULL) != m->tomb[i] ||
        (r->value != NULL &&
         (r->value_len != strlen(m->val[i]) || memcmp(r->value, m->val[i], r->value_len) != 0))) {
        s->mismatch = true;
        return 99;
    }
    s->last_ts = r->timestamp_ms;
    return 0;
}

/* Replay and check that the log holds exactly the first `want` records of the model. */
static void expect_replay(kc_plog_t *l, const model_t *m, size_t want)
{
    seen_t s = {.m = m};
    kc_plog_replay_stats_t st;
    int rc = kc_plog_replay(l, check_rec, &s, &st);
    if (rc != 0)
        fail_msg("replay: %d (%s), %zu records in, mismatch %d", rc, kc_plog_error(l), s.n,
                 s.mismatch);
    assert_int_equal(s.n, want);
    assert_int_equal(st.records, (int64_t)want);
    assert_int_equal(kc_plog_next_offset(l), (int64_t)want);
}

static kc_plog_t *open_ok(const char *dir, int32_t part, const kc_log_io_t *io,
                          const kc_plog_opts_t *o)
{
    kc_plog_t *l = NULL;
    char err[512];
    int rc = kc_plog_open(&l, io ? io : kc_log_io_posix(), dir, part, o, err, sizeof(err));
    if (rc != 0)
        fail_msg("open %s/%d: %d: %s", dir, part, rc, err);
    return l;
}

static void seg_path(char *buf, size_t n, const char *dir, int32_t part, int64_t base,
                     const char *suffix)
{
    char pdir[256];
    snprintf(pdir, sizeof(pdir), "%s/__consumer_offsets-%d", dir, part);
    assert_int_equal(kc_log_segment_path(buf, n, pdir, base, suffix), 0);
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
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void append_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Byte positions of the batches of a segment file (n of them at most). */
static size_t batch_positions(const char *path, int64_t *pos, size_t max)
{
    size_t len, k = 0;
    uint8_t *b = read_file(path, &len);
    size_t p = 0;
    while (p + KC_BATCH_HEADER_SIZE <= len && k < max) {
        kc_batch_hdr_t h;
        kc_batch_hdr_parse(b + p, &h);
        pos[k++] = (int64_t)p;
        p += kc_batch_size(&h);
    }
    free(b);
    return k;
}

/* ---- basic life cycle ------------------------------------------------------------------- */

static void test_append_replay_reopen(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    for (size_t i = 0; i < 40; i++)
        model_add(&m, i);

    kc_plog_t *l = open_ok(dir, 7, NULL, NULL);
    assert_string_equal(kc_plog_dir(l) + strlen(dir), "/__consumer_offsets-7");
    assert_int_equal(kc_plog_partition(l), 7);
    assert_int_equal(kc_plog_next_offset(l), 0);
    assert_int_equal(kc_plog_segment_count(l), 1);
    expect_replay(l, &m, 0);
    size_t at = 0;
    for (size_t n = 1; at + n <= 40; at += n, n++)
        assert_int_equal(append_range(l, &m, at, n, 1000 + (int64_t)at), 0);
    assert_int_equal(kc_plog_next_offset(l), (int64_t)at);
    assert_int_equal(kc_plog_synced_offset(l), 0);
    assert_int_equal(kc_plog_sync(l), 0);
    assert_int_equal(kc_plog_synced_offset(l), (int64_t)at);
    assert_int_equal(kc_plog_sync(l), 0); /* nothing to do */
    expect_replay(l, &m, at);
    /* Timestamps: records without one get now_ms. */
    seen_t s = {.m = &m};
    assert_int_equal(kc_plog_replay(l, check_rec, &s, NULL), 0);
    assert_int_equal(s.last_ts, 1000 + (int64_t)(at - 8));
    int64_t size = kc_plog_size_bytes(l);
    assert_int_equal(kc_plog_close(l), 0);

    char p[256];
    seg_path(p, sizeof(p), dir, 7, 0, ".log");
    assert_int_equal(file_size(p), size);
    seg_path(p, sizeof(p), dir, 7, 0, ".index");
    assert_true(file_size(p) >= 0);

    /* Reopen: same records; closing without a sync keeps what was written too. */
    l = open_ok(dir, 7, NULL, NULL);
    expect_replay(l, &m, at);
    model_add(&m, 40);
    assert_int_equal(append_range(l, &m, at, 1, 5000), 0);
    assert_int_equal(kc_plog_close(l), 0);
    l = open_ok(dir, 7, NULL, NULL);
    expect_replay(l, &m, at + 1);
    /* A callback's nonzero return stops the replay and comes back. */
    seen_t bad = {.m = &m, .n = 5}; /* will mismatch at once */
    assert_int_equal(kc_plog_replay(l, check_rec, &bad, NULL), 99);
    /* n == 0 is refused */
    assert_int_equal(kc_plog_append(l, NULL, 0, 1, NULL), -EINVAL);
    kc_plog_close(l);
    model_free(&m);

    /* Bad options are refused with a message. */
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.codec = KC_LOG_CODEC_GZIP;
    char err[256];
    assert_int_equal(kc_plog_open(&l, kc_log_io_posix(), dir, 1, &o, err, sizeof(err)), -EINVAL);
    assert_null(l);
    assert_non_null(strstr(err, "invalid"));
}

static void test_zstd_log(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    for (size_t i = 0; i < 200; i++)
        model_add(&m, i);
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.codec = KC_LOG_CODEC_ZSTD;
    kc_plog_t *l = open_ok(dir, 0, NULL, &o);
    for (size_t at = 0; at < 200; at += 50)
        assert_int_equal(append_range(l, &m, at, 50, 1), 0);
    assert_int_equal(kc_plog_sync(l), 0);
    int64_t zsize = kc_plog_size_bytes(l);
    kc_plog_close(l);
    /* A log written compressed is read by a plog that writes uncompressed, and vice versa. */
    l = open_ok(dir, 0, NULL, NULL);
    expect_replay(l, &m, 200);
    kc_plog_close(l);
    print_message("200 records in 4 zstd batches: %lld bytes\n", (long long)zsize);
    model_free(&m);
}

/* ---- rolling and the index -------------------------------------------------------------- */

/* Check every index entry of segment `base` against its log: the entry's offset is the last
 * offset of the batch at its position, positions grow by more than `interval`. */
static size_t check_index(const char *dir, int32_t part, int64_t base, int interval)
{
    char lp[256], ip[256];
    seg_path(lp, sizeof(lp), dir, part, base, ".log");
    seg_path(ip, sizeof(ip), dir, part, base, ".index");
    size_t llen, ilen;
    uint8_t *log = read_file(lp, &llen), *idx = read_file(ip, &ilen);
    assert_int_equal(ilen % 8, 0);
    int64_t prev = 0;
    for (size_t i = 0; i < ilen / 8; i++) {
        const uint8_t *e = idx + i * 8;
        int32_t rel =
            (int32_t)((uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3]);
        int32_t pos =
            (int32_t)((uint32_t)e[4] << 24 | (uint32_t)e[5] << 16 | (uint32_t)e[6] << 8 | e[7]);
        assert_true(pos - prev > interval);
        assert_true((size_t)pos + KC_BATCH_HEADER_SIZE <= llen);
        kc_batch_hdr_t h;
        kc_batch_hdr_parse(log + pos, &h);
        assert_int_equal(kc_batch_last_offset(&h), base + rel);
        prev = pos;
    }
    free(log);
    free(idx);
    return ilen / 8;
}

static void test_roll_and_index(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    for (size_t i = 0; i < 600; i++)
        model_add(&m, i);
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 2048;
    o.index_interval_bytes = 300;
    kc_plog_t *l = open_ok(dir, 3, NULL, &o);
    int64_t bases[64];
    size_t nb = 0;
    bases[nb++] = 0;
    for (size_t at = 0; at < 600; at += 4) {
        assert_int_equal(append_range(l, &m, at, 4, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        if (kc_plog_active_base(l) != bases[nb - 1])
            bases[nb++] = kc_plog_active_base(l);
    }
    assert_int_equal(kc_plog_segment_count(l), nb);
    assert_true(nb >= 5);
    expect_replay(l, &m, 600);
    kc_plog_close(l);

    size_t entries = 0;
    for (size_t i = 0; i < nb; i++) {
        char p[256];
        seg_path(p, sizeof(p), dir, 3, bases[i], ".log");
        if (i + 1 < nb) /* a synced segment rolls before it would pass the size */
            assert_true(file_size(p) <= 2048);
        entries += check_index(dir, 3, bases[i], 300);
    }
    assert_true(entries >= nb * 3);
    /* The 20-digit names. */
    char p[256];
    snprintf(p, sizeof(p), "%s/__consumer_offsets-3/%020lld.log", dir, (long long)bases[1]);
    assert_true(file_size(p) > 0);

    /* Index rebuild: delete one, garble one, cut one, pad one with zeros (as Kafka's
     * preallocated index looks), and leave an index without a segment. */
    size_t len0;
    seg_path(p, sizeof(p), dir, 3, bases[0], ".index");
    uint8_t *want0 = read_file(p, &len0);
    assert_int_equal(unlink(p), 0);
    seg_path(p, sizeof(p), dir, 3, bases[1], ".index");
    size_t len1;
    uint8_t *want1 = read_file(p, &len1), *junk = malloc(len1);
    for (size_t i = 0; i < len1; i++)
        junk[i] = (uint8_t)rnd();
    write_file(p, junk, len1);
    seg_path(p, sizeof(p), dir, 3, bases[2], ".index");
    size_t len2;
    uint8_t *want2 = read_file(p, &len2);
    write_file(p, want2, 3);
    seg_path(p, sizeof(p), dir, 3, bases[3], ".index");
    static const uint8_t zeros[64];
    append_file(p, zeros, sizeof(zeros));
    seg_path(p, sizeof(p), dir, 3, 999999, ".index");
    write_file(p, zeros, 16);

    l = open_ok(dir, 3, NULL, &o);
    expect_replay(l, &m, 600);
    kc_plog_close(l);
    size_t n;
    uint8_t *got;
    seg_path(p, sizeof(p), dir, 3, bases[0], ".index");
    got = read_file(p, &n);
    assert_int_equal(n, len0);
    assert_memory_equal(got, want0, n);
    free(got);
    seg_path(p, sizeof(p), dir, 3, bases[1], ".index");
    got = read_file(p, &n);
    assert_int_equal(n, len1);
    assert_memory_equal(got, want1, n);
    free(got);
    seg_path(p, sizeof(p), dir, 3, bases[2], ".index");
    got = read_file(p, &n);
    assert_int_equal(n, len2);
    assert_memory_equal(got, want2, n);
    free(got);
    for (size_t i = 0; i < nb; i++)
        check_index(dir, 3, bases[i], 300);
    seg_path(p, sizeof(p), dir, 3, 999999, ".index");
    assert_int_equal(file_size(p), -1);
    free(want0);
    free(want1);
    free(want2);
    free(junk);
    model_free(&m);
}

static void test_roll_by_age_and_deferred(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    for (size_t i = 0; i < 20; i++)
        model_add(&m, i);
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.roll_ms = 1000;
    kc_plog_t *l = open_ok(dir, 0, NULL, &o);
    assert_int_equal(append_range(l, &m, 0, 1, 10000), 0);
    assert_int_equal(append_range(l, &m, 1, 1, 10900), 0);
    assert_int_equal(kc_plog_sync(l), 0);
    assert_int_equal(kc_plog_segment_count(l), 1);
    assert_int_equal(append_range(l, &m, 2, 1, 11001), 0); /* more than roll_ms after 10000 */
    assert_int_equal(kc_plog_segment_count(l), 2);
    assert_int_equal(kc_plog_active_base(l), 2);
    /* Due again at 12002, but the active segment has unsynced bytes: deferred. */
    assert_int_equal(append_range(l, &m, 3, 1, 12500), 0);
    assert_int_equal(kc_plog_segment_count(l), 2);
    assert_int_equal(kc_plog_sync(l), 0);
    assert_int_equal(append_range(l, &m, 4, 1, 12600), 0);
    assert_int_equal(kc_plog_segment_count(l), 3);
    assert_int_equal(kc_plog_active_base(l), 4);
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);
    /* After a reopen the age counts from the first batch's timestamp on disk. */
    l = open_ok(dir, 0, NULL, &o);
    expect_replay(l, &m, 5);
    assert_int_equal(append_range(l, &m, 5, 1, 13000), 0);
    assert_int_equal(kc_plog_segment_count(l), 3);
    assert_int_equal(kc_plog_sync(l), 0);
    assert_int_equal(append_range(l, &m, 6, 1, 13601), 0);
    assert_int_equal(kc_plog_segment_count(l), 4);
    kc_plog_close(l);

    /* Never synced (flush policy `never`): the roll waits until the segment is twice its
     * size, then append syncs it itself. */
    new_data_dir(dir, sizeof(dir));
    model_t big = {0};
    for (size_t i = 0; i < 400; i++)
        model_add(&big, i);
    kc_plog_opts_init(&o);
    o.segment_bytes = 1000;
    l = open_ok(dir, 0, NULL, &o);
    for (size_t at = 0; at < 400; at += 4)
        assert_int_equal(append_range(l, &big, at, 4, 1), 0);
    assert_true(kc_plog_segment_count(l) >= 4);
    assert_true(kc_plog_synced_offset(l) > 0);
    expect_replay(l, &big, 400);
    kc_plog_close(l);
    char p[256];
    seg_path(p, sizeof(p), dir, 0, 0, ".log");
    assert_true(file_size(p) > 1000 && file_size(p) <= 2000);
    model_free(&big);
    model_free(&m);
}

/* ---- the named corruption cases --------------------------------------------------------- */

/* A log of `nbatch` batches of 3 records in partition 0 of `dir`, synced and closed. */
static void build_log(const char *dir, model_t *m, size_t nbatch, const kc_plog_opts_t *o)
{
    while (m->n < nbatch * 3 + 30)
        model_add(m, m->n);
    kc_plog_t *l = open_ok(dir, 0, NULL, o);
    for (size_t b = 0; b < nbatch; b++)
        assert_int_equal(append_range(l, m, b * 3, 3, 100 + (int64_t)b), 0);
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);
}

/* The named corruption cases. Each damages a log of 6 batches (positions pos[0..5]) in the
 * newest segment. `torn` says whether, after a crash (no clean-shutdown marker), it is a torn
 * write (no valid batch follows the bad spot: the tail is truncated, `keep` batches stay) or
 * damage (a valid batch follows: the open is refused and nothing changes). After a clean
 * shutdown every one of them is refused, with the file, the byte position `bad` and a reason. */
enum damage {
    TRUNC_HEADER,     /* the first 30 bytes of another batch */
    TRUNC_BODY,       /* a header and a few record bytes */
    BAD_CRC,          /* a flipped byte in the last batch */
    LEN_TOO_BIG,      /* the last batch's length points past the end of the file */
    LEN_TOO_SMALL,    /* the last batch's length cuts it short */
    ZERO_TAIL,        /* 4 KiB of zeros after the last batch (a file extended by a crash) */
    GARBAGE_TAIL,     /* random bytes after the last batch */
    BAD_MAGIC_LAST,   /* the last batch claims magic 1 */
    STALE_AFTER_TAIL, /* garbage, then a stale copy of the first batch (offsets already used) */
    CRC_MIDDLE,       /* a flipped byte in the third batch of six */
    LEN_MIDDLE,       /* the third batch's length points past the end of the file */
    ZERO_MIDDLE,      /* the third batch zeroed (a lost page), the later ones intact */
    MAGIC_MIDDLE,     /* the third batch claims magic 0 */
    ZERO_GAP_TAIL,    /* 4 KiB of zeros, then a valid batch with the next offsets */
    N_DAMAGE
};

static const char *const damage_names[] = {"truncated header",
                                           "truncated body",
                                           "bad crc in the last batch",
                                           "bad length (too big)",
                                           "bad length (too small)",
                                           "zero-filled tail",
                                           "garbage tail",
                                           "bad magic",
                                           "stale batch after a torn tail",
                                           "crc mismatch in the middle",
                                           "bad length in the middle",
                                           "zeroed batch in the middle",
                                           "bad magic in the middle",
                                           "zero gap, then a valid batch"};

typedef struct damaged_s {
    bool torn;    /* after a crash: a torn write (truncated), else refused */
    size_t keep;  /* batches left after the truncation of a torn write */
    int64_t bad;  /* byte position of the bad spot */
    int64_t size; /* file size after the damage */
} damaged_t;

/* Damage the segment at `p` (6 batches of 3 records of model m, at pos[]) as `d` says. */
static damaged_t apply_damage(int d, const char *p, const model_t *m, const int64_t *pos)
{
    size_t len;
    uint8_t *b = read_file(p, &len);
    damaged_t r = {.torn = true, .keep = 6, .bad = (int64_t)len};
    switch (d) {
    case TRUNC_HEADER:
        append_file(p, b + pos[1], 30);
        break;
    case TRUNC_BODY:
        append_file(p, b + pos[1], KC_BATCH_HEADER_SIZE + 5);
        break;
    case BAD_CRC:
        b[len - 3] ^= 0x40;
        r.keep = 5;
        break;
    case LEN_TOO_BIG:
        b[pos[5] + 8] = 0x7f;
        r.keep = 5;
        break;
    case LEN_TOO_SMALL:
        b[pos[5] + 11] = (uint8_t)(b[pos[5] + 11] - 5);
        r.keep = 5;
        break;
    case ZERO_TAIL: {
        uint8_t *z = calloc(1, 4096);
        append_file(p, z, 4096);
        free(z);
        break;
    }
    case GARBAGE_TAIL:
    case STALE_AFTER_TAIL: {
        uint8_t g[777];
        for (size_t i = 0; i < sizeof(g); i++)
            g[i] = (uint8_t)rnd();
        append_file(p, g, sizeof(g));
        if (d == STALE_AFTER_TAIL)
            append_file(p, b, (size_t)pos[1]);
        break;
    }
    case BAD_MAGIC_LAST:
        b[pos[5] + 16] = 1;
        r.keep = 5;
        break;
    case CRC_MIDDLE:
        b[pos[2] + 70] ^= 0x01;
        r.torn = false;
        break;
    case LEN_MIDDLE:
        b[pos[2] + 8] = 0x7f;
        r.torn = false;
        break;
    case ZERO_MIDDLE:
        memset(b + pos[2], 0, (size_t)(pos[3] - pos[2]));
        r.torn = false;
        break;
    case MAGIC_MIDDLE:
        b[pos[2] + 16] = 0;
        r.torn = false;
        break;
    case ZERO_GAP_TAIL: {
        uint8_t *z = calloc(1, 4096);
        append_file(p, z, 4096);
        free(z);
        /* a batch with offsets 18..20, as the log would have written it next */
        char tmp[128];
        snprintf(tmp, sizeof(tmp), "%s/gap", root);
        kc_plog_t *l = open_ok(tmp, 0, NULL, NULL);
        assert_int_equal(append_range(l, m, 0, 18, 1), 0); /* offsets 0..17 */
        assert_int_equal(append_range(l, m, 18, 3, 1), 0);
        kc_plog_close(l);
        char q[256];
        seg_path(q, sizeof(q), tmp, 0, 0, ".log");
        size_t ql;
        uint8_t *qb = read_file(q, &ql);
        int64_t qpos[4];
        assert_int_equal(batch_positions(q, qpos, 4), 2);
        append_file(p, qb + qpos[1], ql - (size_t)qpos[1]);
        free(qb);
        assert_int_equal(unlink(q), 0);
        seg_path(q, sizeof(q), tmp, 0, 0, ".index");
        unlink(q);
        r.torn = false;
        break;
    }
    }
    if (d == BAD_CRC || d == LEN_TOO_BIG || d == LEN_TOO_SMALL || d == BAD_MAGIC_LAST ||
        d == CRC_MIDDLE || d == LEN_MIDDLE || d == ZERO_MIDDLE || d == MAGIC_MIDDLE)
        write_file(p, b, len);
    if (d >= CRC_MIDDLE && d <= MAGIC_MIDDLE)
        r.bad = pos[2];
    else if (r.keep == 5)
        r.bad = pos[5];
    r.size = file_size(p);
    free(b);
    return r;
}

/* Open must fail with KC_LOG_ECORRUPT, name the file, the byte position and `reason`, and
 * leave the file exactly as it was. */
static void expect_refused(const char *dir, const char *p, const kc_plog_opts_t *o,
                           const damaged_t *r, const char *what, const char *reason)
{
    size_t len0;
    uint8_t *before = read_file(p, &len0);
    kc_plog_t *l = NULL;
    char err[512];
    int rc = kc_plog_open(&l, kc_log_io_posix(), dir, 0, o, err, sizeof(err));
    if (rc != KC_LOG_ECORRUPT)
        fail_msg("%s: open gave %d (%s), want KC_LOG_ECORRUPT", what, rc, err);
    assert_null(l);
    char want[64];
    snprintf(want, sizeof(want), "byte position %lld", (long long)r->bad);
    if (strstr(err, p) == NULL || strstr(err, want) == NULL || strstr(err, reason) == NULL ||
        strstr(err, "nothing truncated") == NULL)
        fail_msg("%s: message '%s' does not name %s, %s and '%s'", what, err, p, want, reason);
    size_t len1;
    uint8_t *after = read_file(p, &len1);
    if (len1 != len0 || memcmp(before, after, len0) != 0)
        fail_msg("%s: the segment changed although the open was refused", what);
    free(before);
    free(after);
}

static void test_torn_tails(void **state)
{
    (void)state;
    for (int d = 0; d < N_DAMAGE; d++) {
        char dir[128];
        new_data_dir(dir, sizeof(dir));
        model_t m = {0};
        build_log(dir, &m, 6, NULL);
        char p[256];
        seg_path(p, sizeof(p), dir, 0, 0, ".log");
        int64_t pos[8];
        assert_int_equal(batch_positions(p, pos, 8), 6);
        damaged_t r = apply_damage(d, p, &m, pos);

        /* After a clean shutdown nothing is a torn write. */
        kc_plog_opts_t clean;
        kc_plog_opts_init(&clean);
        clean.clean_shutdown = true;
        expect_refused(dir, p, &clean, &r, damage_names[d], "shut down cleanly");

        /* After a crash: a torn tail goes, damage is refused. */
        if (!r.torn) {
            expect_refused(dir, p, NULL, &r, damage_names[d], "valid batch follows");
            model_free(&m);
            continue;
        }
        int64_t want_size = r.bad;
        kc_plog_t *l = open_ok(dir, 0, NULL, NULL);
        if (file_size(p) != want_size)
            fail_msg("%s: size %lld after open, want %lld", damage_names[d],
                     (long long)file_size(p), (long long)want_size);
        expect_replay(l, &m, r.keep * 3);
        /* The log goes on from there. */
        assert_int_equal(append_range(l, &m, r.keep * 3, 3, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        kc_plog_close(l);
        l = open_ok(dir, 0, NULL, &clean); /* synced and closed: a clean open works */
        expect_replay(l, &m, r.keep * 3 + 3);
        kc_plog_close(l);
        model_free(&m);
    }
}

/* After a bad spot, the search for a valid batch computes CRCs over candidate batches; 8 MiB
 * crafted so that every 16th byte starts a plausible 64 KiB batch would cost 32 GiB of CRC
 * without the cap. With it the search gives up and refuses: nothing is deleted. */
static void test_scan_ahead_bounded(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    build_log(dir, &m, 2, NULL);
    char p[256];
    seg_path(p, sizeof(p), dir, 0, 0, ".log");
    size_t n = (size_t)8 << 20;
    uint8_t *g = calloc(1, n);
    static const uint8_t period[16] = {2, 0, 0, 0, 0, 0, 0, 0x7f, 0, 1, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++)
        g[i] = period[i % 16];
    g[0] = 0; /* the bad spot: batchLength below the minimum */
    append_file(p, g, n);
    free(g);
    damaged_t r = {.torn = false, .bad = file_size(p) - (int64_t)n, .size = file_size(p)};
    expect_refused(dir, p, NULL, &r, "crafted tail", "may be valid follows");
    model_free(&m);
}

static void test_damage_in_old_segment(void **state)
{
    (void)state;
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 700;
    for (int variant = 0; variant < 4; variant++) {
        char dir[128];
        new_data_dir(dir, sizeof(dir));
        model_t m = {0};
        while (m.n < 200)
            model_add(&m, m.n);
        kc_plog_t *l = open_ok(dir, 0, NULL, &o);
        for (size_t at = 0; at < 60; at += 3) {
            assert_int_equal(append_range(l, &m, at, 3, 1), 0);
            assert_int_equal(kc_plog_sync(l), 0);
        }
        assert_true(kc_plog_segment_count(l) >= 3);
        int64_t second = -1;
        kc_plog_close(l);
        /* find the second segment's base from the directory */
        for (int64_t b = 1; b < 60 && second < 0; b++) {
            char q[256];
            seg_path(q, sizeof(q), dir, 0, b, ".log");
            if (file_size(q) >= 0)
                second = b;
        }
        assert_true(second > 0);
        char p[256];
        int64_t target = variant < 2 ? 0 : second; /* the oldest, or a middle segment */
        seg_path(p, sizeof(p), dir, 0, target, ".log");
        int64_t pos[16];
        size_t nb = batch_positions(p, pos, 16);
        assert_true(nb >= 2);
        size_t len;
        uint8_t *b = read_file(p, &len);
        int64_t bad_at;
        if (variant % 2 == 0) { /* a flipped byte in the second batch */
            b[pos[1] + 40] ^= 0x01;
            write_file(p, b, len);
            bad_at = pos[1];
        } else { /* a torn tail: an older segment cannot have one */
            write_file(p, b, len - 10);
            bad_at = pos[nb - 1];
        }
        free(b);
        char err[512];
        l = NULL;
        int rc = kc_plog_open(&l, kc_log_io_posix(), dir, 0, &o, err, sizeof(err));
        assert_int_equal(rc, KC_LOG_ECORRUPT);
        assert_null(l);
        char want[64];
        snprintf(want, sizeof(want), "byte position %lld", (long long)bad_at);
        if (strstr(err, p) == NULL || strstr(err, want) == NULL)
            fail_msg("variant %d: message '%s' does not name %s and %s", variant, err, p, want);
        /* Nothing was changed: still refused on the next try. */
        assert_int_equal(kc_plog_open(&l, kc_log_io_posix(), dir, 0, &o, err, sizeof(err)),
                         KC_LOG_ECORRUPT);
        model_free(&m);
    }
}

/* ---- Kafka's files and compaction leftovers --------------------------------------------- */

typedef struct offs_s {
    int64_t off[8];
    int n;
} offs_t;

static int collect_offsets(void *arg, const kc_log_record_t *r)
{
    offs_t *g = arg;
    if (g->n < 8)
        g->off[g->n] = r->offset;
    g->n++;
    return 0;
}

static void test_kafka_files_and_leftovers(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 600;
    model_t m = {0};
    while (m.n < 100)
        model_add(&m, m.n);
    kc_plog_t *l = open_ok(dir, 5, NULL, &o);
    for (size_t at = 0; at < 30; at += 3) {
        assert_int_equal(append_range(l, &m, at, 3, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
    }
    size_t nseg = kc_plog_segment_count(l);
    assert_true(nseg >= 3);
    kc_plog_close(l);

    /* Kafka's other files are left alone. */
    char pdir[256], p[300];
    snprintf(pdir, sizeof(pdir), "%s/__consumer_offsets-5", dir);
    const char *extras[] = {"00000000000000000000.timeindex", "00000000000000000000.txnindex",
                            "00000000000000000030.snapshot", "leader-epoch-checkpoint",
                            "partition.metadata"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof(p), "%s/%s", pdir, extras[i]);
        write_file(p, "x", 1);
    }
    /* Leftovers: a deletion that did not finish, and a compaction that did not get to the
     * swap (its .cleaned files, and a .swap at or above them from an unfinished split). */
    const char *gone[] = {"00000000000000000003.log.deleted", "00000000000000000003.index.deleted",
                          "00000000000000000050.log.cleaned", "00000000000000000050.index.cleaned",
                          "00000000000000000060.log.swap"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof(p), "%s/%s", pdir, gone[i]);
        write_file(p, "junk", 4);
    }
    l = open_ok(dir, 5, NULL, &o);
    expect_replay(l, &m, 30);
    assert_int_equal(kc_plog_segment_count(l), nseg);
    kc_plog_close(l);
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof(p), "%s/%s", pdir, extras[i]);
        assert_int_equal(file_size(p), 1);
        snprintf(p, sizeof(p), "%s/%s", pdir, gone[i]);
        assert_int_equal(file_size(p), -1);
    }

    /* A compaction that got as far as its .swap files: they replace the segments they cover.
     * The compacted segment keeps the last record of keys k28 and k29 at their offsets. */
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 28);
    kc_log_record_t recs[2] = {
        {.timestamp_ms = 1,
         .key = (const uint8_t *)m.key[28],
         .key_len = strlen(m.key[28]),
         .value = (const uint8_t *)m.val[28],
         .value_len = strlen(m.val[28])},
        {.timestamp_ms = 1,
         .key = (const uint8_t *)m.key[29],
         .key_len = strlen(m.key[29]),
         .value = (const uint8_t *)m.val[29],
         .value_len = strlen(m.val[29])},
    };
    assert_false(m.tomb[28] || m.tomb[29]);
    kc_writer_t w;
    kc_wr_init(&w);
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, recs, 2), 0);
    snprintf(p, sizeof(p), "%s/00000000000000000000.log.swap", pdir);
    write_file(p, w.buf, w.len);
    snprintf(p, sizeof(p), "%s/00000000000000000000.index.swap", pdir);
    write_file(p, "", 0);
    kc_wr_free(&w);
    l = open_ok(dir, 5, NULL, &o);
    assert_int_equal(kc_plog_segment_count(l), 1);
    assert_int_equal(kc_plog_next_offset(l), 30);
    offs_t got = {{0}, 0};
    assert_int_equal(kc_plog_replay(l, collect_offsets, &got, NULL), 0);
    assert_int_equal(got.n, 2);
    assert_int_equal(got.off[0], 28);
    assert_int_equal(got.off[1], 29);
    kc_plog_close(l);
    snprintf(p, sizeof(p), "%s/00000000000000000000.log.swap", pdir);
    assert_int_equal(file_size(p), -1);
    snprintf(p, sizeof(p), "%s/00000000000000000000.log", pdir);
    assert_true(file_size(p) > 0);
    model_free(&m);
}

/* ---- transactional, control and unsupported batches ------------------------------------- */

static void set_crc(uint8_t *b, size_t len)
{
    uint32_t crc = kc_crc32c(0, b + 21, len - 21);
    b[17] = (uint8_t)(crc >> 24);
    b[18] = (uint8_t)(crc >> 16);
    b[19] = (uint8_t)(crc >> 8);
    b[20] = (uint8_t)crc;
}

static void raw_batch(const char *path, int64_t base, int16_t attrs, int codec, size_t n)
{
    static const uint8_t k[] = {0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 0};
    kc_log_record_t recs[4];
    for (size_t i = 0; i < n; i++)
        recs[i] = (kc_log_record_t){.timestamp_ms = 1, .key = k, .key_len = sizeof(k)};
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, base);
    spec.extra_attrs = attrs;
    if (attrs != 0) {
        spec.producer_id = 9;
        spec.producer_epoch = 0;
        spec.base_sequence = 0;
    }
    kc_writer_t w;
    kc_wr_init(&w);
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, recs, n), 0);
    if (codec != 0) { /* claim a codec the records are not in */
        w.buf[22] = (uint8_t)(w.buf[22] | codec);
        set_crc(w.buf, w.len);
    }
    append_file(path, w.buf, w.len);
    kc_wr_free(&w);
}

static void test_txn_control_unsupported(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    build_log(dir, &m, 1, NULL); /* offsets 0..2 */
    char p[256];
    seg_path(p, sizeof(p), dir, 0, 0, ".log");
    raw_batch(p, 3, KC_BATCH_ATTR_TRANSACTIONAL, 0, 2);                         /* 3..4 */
    raw_batch(p, 5, KC_BATCH_ATTR_TRANSACTIONAL | KC_BATCH_ATTR_CONTROL, 0, 1); /* 5 */
    kc_plog_t *l = open_ok(dir, 0, NULL, NULL);
    assert_int_equal(kc_plog_next_offset(l), 6);
    kc_log_record_t r = {.timestamp_ms = 1, .key = (const uint8_t *)"x", .key_len = 1};
    int64_t base;
    assert_int_equal(kc_plog_append(l, &r, 1, 1, &base), 0);
    assert_int_equal(base, 6);
    offs_t got = {{0}, 0};
    kc_plog_replay_stats_t st;
    assert_int_equal(kc_plog_replay(l, collect_offsets, &got, &st), 0);
    assert_int_equal(got.n, 4);
    assert_int_equal(got.off[2], 2);
    assert_int_equal(got.off[3], 6);
    assert_int_equal(st.batches, 4);
    assert_int_equal(st.records, 4);
    assert_int_equal(st.txn_batches, 1);
    assert_int_equal(st.control_batches, 1);
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);

    /* A gzip batch is whole (its CRC is right) but kcoord cannot read it. */
    raw_batch(p, 7, 0, KC_LOG_CODEC_GZIP, 1);
    l = open_ok(dir, 0, NULL, NULL);
    assert_int_equal(kc_plog_next_offset(l), 8);
    got.n = 0;
    assert_int_equal(kc_plog_replay(l, collect_offsets, &got, NULL), KC_LOG_EUNSUPPORTED);
    assert_non_null(strstr(kc_plog_error(l), "gzip"));
    assert_int_equal(got.n, 4);
    kc_plog_close(l);
    model_free(&m);
}

/* ---- an I/O table that fails on demand and can crash ------------------------------------ */

enum { OP_PWRITE, OP_FSYNC, OP_DIRSYNC, OP_FTRUNCATE, OP_OPEN, OP_N };

typedef struct tracked_s {
    char path[300];
    int64_t synced; /* bytes known durable */
    bool pending;   /* created, and its directory not fsynced since */
    bool used;
} tracked_t;

typedef struct fault_s {
    kc_log_io_t io; /* what the plog gets; io.ctx points back here */
    const kc_log_io_t *real;
    int countdown[OP_N]; /* > 0: the countdown-th call from now fails */
    int repeat[OP_N];    /* how many calls after that one fail too */
    int err[OP_N];
    bool short_first; /* the failing pwrite first writes half of its bytes and "succeeds" */
    size_t max_write; /* > 0: every pwrite writes at most this */
    int calls[OP_N];
    bool crashed; /* every call but close fails */
    char fd_path[1024][300];
    bool fd_dir[1024];
    tracked_t files[256];
} fault_t;

static bool fails(fault_t *f, int op, int *err)
{
    f->calls[op]++;
    if (f->crashed) {
        *err = -EIO;
        return true;
    }
    if (f->countdown[op] > 0 && --f->countdown[op] == 0) {
        *err = -f->err[op];
        if (f->repeat[op] > 0) {
            f->repeat[op]--;
            f->countdown[op] = 1;
        }
        return true;
    }
    return false;
}

static tracked_t *track(fault_t *f, const char *path, bool add)
{
    tracked_t *free_slot = NULL;
    for (size_t i = 0; i < sizeof(f->files) / sizeof(f->files[0]); i++) {
        if (f->files[i].used && strcmp(f->files[i].path, path) == 0)
            return &f->files[i];
        if (!f->files[i].used && free_slot == NULL)
            free_slot = &f->files[i];
    }
    if (!add || free_slot == NULL)
        return NULL;
    memset(free_slot, 0, sizeof(*free_slot));
    snprintf(free_slot->path, sizeof(free_slot->path), "%s", path);
    free_slot->used = true;
    return free_slot;
}

static int f_open(void *ctx, const char *path, int flags, int mode)
{
    fault_t *f = ctx;
    int e;
    if (fails(f, OP_OPEN, &e))
        return e;
    bool existed = file_size(path) >= 0;
    int fd = f->real->open(f->real->ctx, path, flags, mode);
    if (fd < 0 || fd >= 1024)
        return fd;
    snprintf(f->fd_path[fd], sizeof(f->fd_path[fd]), "%s", path);
    f->fd_dir[fd] = (flags & O_DIRECTORY) != 0;
    if (!f->fd_dir[fd]) {
        tracked_t *t = track(f, path, false);
        if (t == NULL) {
            t = track(f, path, true);
            t->synced = existed ? file_size(path) : 0;
            t->pending = !existed;
        } else if (!existed) {
            t->synced = 0;
            t->pending = true;
        }
        if (flags & O_TRUNC)
            t->synced = 0;
    }
    return fd;
}

static int64_t f_pread(void *ctx, int fd, void *buf, size_t n, int64_t off)
{
    fault_t *f = ctx;
    if (f->crashed)
        return -EIO;
    return f->real->pread(f->real->ctx, fd, buf, n, off);
}

static int64_t f_pwrite(void *ctx, int fd, const void *buf, size_t n, int64_t off)
{
    fault_t *f = ctx;
    int e;
    if (fails(f, OP_PWRITE, &e)) {
        if (f->short_first && n > 1 && !f->crashed) {
            f->short_first = false;
            f->countdown[OP_PWRITE] = 1;
            f->err[OP_PWRITE] = -e;
            return f->real->pwrite(f->real->ctx, fd, buf, n / 2, off);
        }
        return e;
    }
    if (f->max_write > 0 && n > f->max_write)
        n = f->max_write;
    return f->real->pwrite(f->real->ctx, fd, buf, n, off);
}

static int f_fsync(void *ctx, int fd)
{
    fault_t *f = ctx;
    int e;
    if (f->fd_dir[fd]) {
        if (fails(f, OP_DIRSYNC, &e))
            return e;
        int rc = f->real->fsync(f->real->ctx, fd);
        size_t dl = strlen(f->fd_path[fd]);
        for (size_t i = 0; rc == 0 && i < sizeof(f->files) / sizeof(f->files[0]); i++)
            if (f->files[i].used && strncmp(f->files[i].path, f->fd_path[fd], dl) == 0 &&
                f->files[i].path[dl] == '/' && strchr(f->files[i].path + dl + 1, '/') == NULL)
                f->files[i].pending = false;
        return rc;
    }
    if (fails(f, OP_FSYNC, &e))
        return e;
    int rc = f->real->fsync(f->real->ctx, fd);
    tracked_t *t = track(f, f->fd_path[fd], false);
    if (rc == 0 && t != NULL)
        t->synced = file_size(t->path);
    return rc;
}

static int f_ftruncate(void *ctx, int fd, int64_t size)
{
    fault_t *f = ctx;
    int e;
    if (fails(f, OP_FTRUNCATE, &e))
        return e;
    int rc = f->real->ftruncate(f->real->ctx, fd, size);
    tracked_t *t = track(f, f->fd_path[fd], false);
    if (rc == 0 && t != NULL && t->synced > size)
        t->synced = size;
    return rc;
}

static int64_t f_fsize(void *ctx, int fd)
{
    fault_t *f = ctx;
    return f->crashed ? -EIO : f->real->fsize(f->real->ctx, fd);
}

static int f_close(void *ctx, int fd)
{
    fault_t *f = ctx;
    if (fd >= 0 && fd < 1024) {
        f->fd_path[fd][0] = '\0';
        f->fd_dir[fd] = false;
    }
    return f->real->close(f->real->ctx, fd);
}

static int f_rename(void *ctx, const char *from, const char *to)
{
    fault_t *f = ctx;
    if (f->crashed)
        return -EIO;
    int rc = f->real->rename(f->real->ctx, from, to);
    tracked_t *t = track(f, from, false);
    if (rc == 0 && t != NULL)
        snprintf(t->path, sizeof(t->path), "%s", to);
    return rc;
}

static int f_unlink(void *ctx, const char *path)
{
    fault_t *f = ctx;
    if (f->crashed)
        return -EIO;
    int rc = f->real->unlink(f->real->ctx, path);
    tracked_t *t = track(f, path, false);
    if (rc == 0 && t != NULL)
        t->used = false;
    return rc;
}

static int f_mkdir(void *ctx, const char *path, int mode)
{
    fault_t *f = ctx;
    return f->crashed ? -EIO : f->real->mkdir(f->real->ctx, path, mode);
}

static int f_listdir(void *ctx, const char *path, int (*fn)(void *, const char *), void *arg)
{
    fault_t *f = ctx;
    return f->crashed ? -EIO : f->real->listdir(f->real->ctx, path, fn, arg);
}

static fault_t *fault_new(void)
{
    fault_t *f = calloc(1, sizeof(*f));
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

static void fail_next(fault_t *f, int op, int err, int times)
{
    f->countdown[op] = 1;
    f->err[op] = err;
    f->repeat[op] = times - 1;
}

enum crash_mode { CRASH_DROP, CRASH_CUT, CRASH_ZERO, CRASH_GARBLE, N_CRASH };
static const char *const crash_names[] = {"drop", "cut", "zero", "garble"};

/* What a power cut does to everything not fsynced: files whose directory entry was never
 * fsynced vanish; the unsynced tail of the others is dropped, cut at a random point, zeroed
 * or filled with garbage. */
static void crash(fault_t *f, int mode)
{
    for (size_t i = 0; i < sizeof(f->files) / sizeof(f->files[0]); i++) {
        tracked_t *t = &f->files[i];
        if (!t->used)
            continue;
        t->used = false;
        if (t->pending) {
            unlink(t->path);
            continue;
        }
        int64_t size = file_size(t->path);
        if (size <= t->synced)
            continue;
        int64_t tail = size - t->synced;
        if (mode == CRASH_DROP) {
            assert_int_equal(truncate(t->path, t->synced), 0);
        } else if (mode == CRASH_CUT) {
            assert_int_equal(truncate(t->path, t->synced + (int64_t)(rnd() % (tail + 1))), 0);
        } else {
            uint8_t *b = malloc((size_t)tail);
            for (int64_t k = 0; k < tail; k++)
                b[k] = mode == CRASH_ZERO ? 0 : (uint8_t)rnd();
            int fd = open(t->path, O_WRONLY);
            assert_true(fd >= 0);
            assert_int_equal(pwrite(fd, b, (size_t)tail, t->synced), tail);
            close(fd);
            free(b);
        }
    }
}

/* ---- faults ----------------------------------------------------------------------------- */

static void test_write_faults(void **state)
{
    (void)state;
    static const struct {
        int err;
        bool short_first;
    } v[] = {{ENOSPC, true}, {ENOSPC, false}, {EIO, false}, {EIO, true}};
    for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
        char dir[128];
        new_data_dir(dir, sizeof(dir));
        model_t m = {0};
        while (m.n < 20)
            model_add(&m, m.n);
        fault_t *f = fault_new();
        kc_plog_t *l = open_ok(dir, 0, &f->io, NULL);
        assert_int_equal(append_range(l, &m, 0, 3, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        int64_t size = kc_plog_size_bytes(l);
        fail_next(f, OP_PWRITE, v[k].err, 1);
        f->short_first = v[k].short_first;
        assert_int_equal(append_range(l, &m, 3, 6, 1), -v[k].err);
        assert_non_null(strstr(kc_plog_error(l), "failed"));
        /* Nothing of the batch is left: not in the plog, not in the file. */
        assert_int_equal(kc_plog_next_offset(l), 3);
        assert_int_equal(kc_plog_size_bytes(l), size);
        char p[256];
        seg_path(p, sizeof(p), dir, 0, 0, ".log");
        assert_int_equal(file_size(p), size);
        expect_replay(l, &m, 3);
        /* The disk is back: the next append works. */
        assert_int_equal(append_range(l, &m, 3, 6, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        kc_plog_close(l);
        l = open_ok(dir, 0, NULL, NULL);
        expect_replay(l, &m, 9);
        kc_plog_close(l);
        free(f);
        model_free(&m);
    }
}

static void test_truncate_fault_and_short_writes(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    while (m.n < 40)
        model_add(&m, m.n);
    fault_t *f = fault_new();
    kc_plog_t *l = open_ok(dir, 0, &f->io, NULL);
    assert_int_equal(append_range(l, &m, 0, 3, 1), 0);
    int64_t size = kc_plog_size_bytes(l);
    /* The write fails after half of it, and cutting it off fails twice. */
    fail_next(f, OP_PWRITE, EIO, 1);
    f->short_first = true;
    fail_next(f, OP_FTRUNCATE, EIO, 2);
    assert_int_equal(append_range(l, &m, 3, 3, 1), -EIO);
    char p[256];
    seg_path(p, sizeof(p), dir, 0, 0, ".log");
    assert_true(file_size(p) > size);                     /* the half batch is still there */
    assert_int_equal(append_range(l, &m, 3, 3, 1), -EIO); /* retrying the cut fails again */
    assert_int_equal(kc_plog_next_offset(l), 3);
    expect_replay(l, &m, 3);                           /* replay reads only the valid part */
    assert_int_equal(append_range(l, &m, 3, 3, 1), 0); /* cut, then written */
    /* Short writes that make progress are just slow. */
    f->max_write = 7;
    assert_int_equal(append_range(l, &m, 6, 20, 1), 0);
    f->max_write = 0;
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);
    l = open_ok(dir, 0, NULL, NULL);
    expect_replay(l, &m, 26);
    kc_plog_close(l);
    free(f);
    model_free(&m);
}

static void test_fsync_faults(void **state)
{
    (void)state;
    static const int errs[] = {ENOSPC, EIO};
    for (size_t k = 0; k < 2; k++) {
        char dir[128];
        new_data_dir(dir, sizeof(dir));
        model_t m = {0};
        while (m.n < 30)
            model_add(&m, m.n);
        fault_t *f = fault_new();
        kc_plog_t *l = open_ok(dir, 0, &f->io, NULL);
        assert_int_equal(append_range(l, &m, 0, 3, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        int64_t size = kc_plog_size_bytes(l);
        assert_int_equal(append_range(l, &m, 3, 3, 1), 0);
        assert_int_equal(append_range(l, &m, 6, 3, 1), 0);
        fail_next(f, OP_FSYNC, errs[k], 1);
        assert_int_equal(kc_plog_sync(l), -errs[k]);
        assert_non_null(strstr(kc_plog_error(l), "fsync"));
        /* The unsynced batches are gone: the log is its last synced state. */
        assert_int_equal(kc_plog_next_offset(l), 3);
        assert_int_equal(kc_plog_synced_offset(l), 3);
        assert_int_equal(kc_plog_size_bytes(l), size);
        char p[256];
        seg_path(p, sizeof(p), dir, 0, 0, ".log");
        assert_int_equal(file_size(p), size);
        expect_replay(l, &m, 3);
        assert_int_equal(append_range(l, &m, 3, 6, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        kc_plog_close(l);
        l = open_ok(dir, 0, NULL, NULL);
        expect_replay(l, &m, 9);
        kc_plog_close(l);
        free(f);
        model_free(&m);
    }

    /* The directory fsync after a roll fails: the new segment's batch goes; a later sync
     * retries the directory. */
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    while (m.n < 300)
        model_add(&m, m.n);
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 500;
    fault_t *f = fault_new();
    kc_plog_t *l = open_ok(dir, 0, &f->io, &o);
    size_t at = 0;
    for (;;) {
        size_t segs = kc_plog_segment_count(l);
        assert_int_equal(append_range(l, &m, at, 3, 1), 0);
        at += 3;
        if (kc_plog_segment_count(l) != segs)
            break;
        assert_int_equal(kc_plog_sync(l), 0);
    }
    int64_t base = kc_plog_active_base(l);
    assert_int_equal(base, (int64_t)at - 3);
    fail_next(f, OP_DIRSYNC, EIO, 1);
    assert_int_equal(kc_plog_sync(l), -EIO);
    assert_int_equal(kc_plog_next_offset(l), base);
    assert_int_equal(kc_plog_sync(l), 0); /* the directory, this time */
    assert_int_equal(append_range(l, &m, at - 3, 3, 1), 0);
    assert_int_equal(kc_plog_sync(l), 0);
    kc_plog_close(l);
    l = open_ok(dir, 0, NULL, &o);
    expect_replay(l, &m, at);
    kc_plog_close(l);
    free(f);
    model_free(&m);

    /* Open fails cleanly when the disk does. */
    new_data_dir(dir, sizeof(dir));
    f = fault_new();
    fail_next(f, OP_OPEN, EACCES, 1);
    char err[256];
    l = NULL;
    int rc = kc_plog_open(&l, &f->io, dir, 0, NULL, err, sizeof(err));
    assert_int_equal(rc, -EACCES);
    assert_null(l);
    assert_non_null(strstr(err, "partition 0"));
    free(f);
}

/* ---- crashes ---------------------------------------------------------------------------- */

static void test_crash_recovery(void **state)
{
    (void)state;
    int runs[N_CRASH] = {0};
    for (uint32_t seed = 1; seed <= 64; seed++) {
        rnd_state = seed * 7919;
        int mode = (int)(seed % N_CRASH);
        char dir[128];
        new_data_dir(dir, sizeof(dir));
        model_t m = {0};
        while (m.n < 400)
            model_add(&m, m.n);
        kc_plog_opts_t o;
        kc_plog_opts_init(&o);
        o.segment_bytes = 900;
        o.index_interval_bytes = 200;
        o.codec = seed % 3 == 0 ? KC_LOG_CODEC_ZSTD : KC_LOG_CODEC_NONE;
        fault_t *f = fault_new();
        kc_plog_t *l = open_ok(dir, 2, &f->io, &o);
        size_t appended = 0, synced = 0;
        int rounds = 5 + (int)(rnd() % 50);
        for (int r = 0; r < rounds; r++) {
            size_t n = 1 + rnd() % 5;
            assert_int_equal(append_range(l, &m, appended, n, 1000 + r), 0);
            appended += n;
            if (rnd() % 3 == 0) {
                assert_int_equal(kc_plog_sync(l), 0);
                synced = appended;
            }
        }
        assert_true(kc_plog_synced_offset(l) >= (int64_t)synced);
        synced = (size_t)kc_plog_synced_offset(l); /* a forced roll may have synced more */
        f->crashed = true;
        kc_plog_close(l);
        crash(f, mode);
        free(f);

        l = open_ok(dir, 2, NULL, &o);
        seen_t s = {.m = &m};
        int rc = kc_plog_replay(l, check_rec, &s, NULL);
        if (rc != 0)
            fail_msg("seed %u (%s): replay %d: %s", seed, crash_names[mode], rc, kc_plog_error(l));
        if (s.n < synced || s.n > appended || (mode != CRASH_CUT && s.n != synced))
            fail_msg("seed %u (%s): %zu records back; %zu synced, %zu appended", seed,
                     crash_names[mode], s.n, synced, appended);
        assert_int_equal(kc_plog_next_offset(l), (int64_t)s.n);
        /* And it goes on. */
        assert_int_equal(append_range(l, &m, s.n, 2, 5000), 0);
        assert_int_equal(kc_plog_sync(l), 0);
        kc_plog_close(l);
        l = open_ok(dir, 2, NULL, &o);
        expect_replay(l, &m, s.n + 2);
        kc_plog_close(l);
        runs[mode]++;
        model_free(&m);
    }
    for (int i = 0; i < N_CRASH; i++)
        assert_true(runs[i] > 0);
}

/* ---- a segment deleted or replaced under the running log -------------------------------- */

enum gone_how { GONE_DELETED, GONE_REPLACED, GONE_TRUNCATED, GONE_DIR_DELETED, N_GONE };
static const char *const gone_names[] = {"was deleted", "was replaced by another file",
                                         "was truncated", "was deleted"};

static int rm_tree(const char *path)
{
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_segment_gone(void **state)
{
    (void)state;
    for (int how = 0; how < N_GONE; how++) {
        for (int at_sync = 0; at_sync < 2; at_sync++) {
            char dir[128];
            new_data_dir(dir, sizeof(dir));
            model_t m = {0};
            while (m.n < 30)
                model_add(&m, m.n);
            kc_plog_t *l = open_ok(dir, 0, NULL, NULL);
            assert_int_equal(append_range(l, &m, 0, 3, 1), 0);
            assert_int_equal(kc_plog_sync(l), 0);
            if (at_sync) /* acknowledged once the sync returns: the sync must refuse */
                assert_int_equal(append_range(l, &m, 3, 3, 1), 0);
            char p[256];
            seg_path(p, sizeof(p), dir, 0, 0, ".log");
            switch (how) {
            case GONE_DELETED:
                assert_int_equal(unlink(p), 0);
                break;
            case GONE_REPLACED: { /* what `cp` to a new name + `mv` over the old one does */
                char t[300];
                snprintf(t, sizeof(t), "%s.new", p);
                size_t len;
                uint8_t *b = read_file(p, &len);
                write_file(t, b, len);
                free(b);
                assert_int_equal(rename(t, p), 0);
                break;
            }
            case GONE_TRUNCATED:
                assert_int_equal(truncate(p, 10), 0);
                break;
            case GONE_DIR_DELETED: {
                char pdir[200];
                snprintf(pdir, sizeof(pdir), "%s/__consumer_offsets-0", dir);
                assert_int_equal(rm_tree(pdir), 0);
                break;
            }
            }
            int rc = at_sync ? kc_plog_sync(l) : append_range(l, &m, 3, 3, 2);
            if (rc != KC_LOG_EGONE)
                fail_msg("%s (at %s): got %d, want KC_LOG_EGONE", gone_names[how],
                         at_sync ? "sync" : "append", rc);
            const char *e = kc_plog_error(l);
            if (strstr(e, p) == NULL || strstr(e, gone_names[how]) == NULL)
                fail_msg("%s: message '%s' does not name %s and what happened", gone_names[how], e,
                         p);
            /* For good: no later append or sync succeeds, nothing is retried. */
            assert_int_equal(append_range(l, &m, 3, 3, 3), KC_LOG_EGONE);
            assert_int_equal(kc_plog_sync(l), KC_LOG_EGONE);
            assert_int_equal(append_range(l, &m, 3, 3, 4), KC_LOG_EGONE);
            assert_string_equal(kc_log_strerror(KC_LOG_EGONE),
                                "segment deleted or replaced under the running log");
            kc_plog_close(l);
            model_free(&m);
        }
    }
    /* A roll is not a replacement: the new active segment is checked as itself. */
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    while (m.n < 200)
        model_add(&m, m.n);
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 400;
    kc_plog_t *l = open_ok(dir, 0, NULL, &o);
    for (size_t at = 0; at < 60; at += 3) {
        assert_int_equal(append_range(l, &m, at, 3, 1), 0);
        assert_int_equal(kc_plog_sync(l), 0);
    }
    assert_true(kc_plog_segment_count(l) > 2);
    kc_plog_close(l);
    l = open_ok(dir, 0, NULL, &o);
    expect_replay(l, &m, 60);
    kc_plog_close(l);
    model_free(&m);
}

/* ---- the clean-shutdown marker ----------------------------------------------------------- */

static void test_clean_shutdown_marker(void **state)
{
    (void)state;
    const kc_log_io_t *io = kc_log_io_posix();
    char dir[128], path[200];
    new_data_dir(dir, sizeof(dir));
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/.kafka_cleanshutdown", dir);
    bool clean = true;
    assert_int_equal(kc_log_clean_shutdown_take(io, dir, &clean), 0);
    assert_false(clean); /* a first start, or a crash */
    assert_int_equal(kc_log_clean_shutdown_mark(io, dir), 0);
    size_t len;
    uint8_t *b = read_file(path, &len);
    const char want[] = "{\"version\":\"0\",\"broker_epoch\":\"-1\"}"; /* Kafka's content */
    assert_int_equal(len, sizeof(want) - 1);
    assert_memory_equal(b, want, len);
    free(b);
    assert_int_equal(kc_log_clean_shutdown_take(io, dir, &clean), 0);
    assert_true(clean);
    assert_int_equal(file_size(path), -1); /* taken: a crash from now on is a crash */
    assert_int_equal(kc_log_clean_shutdown_take(io, dir, &clean), 0);
    assert_false(clean);
    /* A Kafka broker's marker (any content, even empty) counts too. */
    write_file(path, "", 0);
    assert_int_equal(kc_log_clean_shutdown_take(io, dir, &clean), 0);
    assert_true(clean);
    /* A marker that cannot be removed does not vouch for this run. */
    assert_int_equal(mkdir(path, 0755), 0); /* unlink(2) of a directory fails */
    assert_true(kc_log_clean_shutdown_take(io, dir, &clean) < 0);
    assert_false(clean);
    assert_int_equal(rmdir(path), 0);
    /* No directory: nothing to take, and the mark fails. */
    char missing[200];
    snprintf(missing, sizeof(missing), "%s/nope", dir);
    assert_int_equal(kc_log_clean_shutdown_take(io, missing, &clean), 0);
    assert_false(clean);
    assert_true(kc_log_clean_shutdown_mark(io, missing) < 0);
}

/* ---- the tools -------------------------------------------------------------------------- */

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void test_verify_and_dump(void **state)
{
    (void)state;
    char dir[128];
    new_data_dir(dir, sizeof(dir));
    model_t m = {0};
    while (m.n < 120)
        model_add(&m, m.n);
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 800;
    for (int32_t part = 0; part < 3; part += 2) {
        kc_plog_t *l = open_ok(dir, part, NULL, &o);
        for (size_t at = 0; at < 90; at += 3) {
            assert_int_equal(append_range(l, &m, at, 3, 1), 0);
            assert_int_equal(kc_plog_sync(l), 0);
        }
        kc_plog_close(l);
    }
    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_verify(dir, out), 0);
    fclose(out);
    assert_int_equal(count(text, "OK "), 2);
    assert_int_equal(count(text, "PROBLEM"), 0);
    assert_non_null(strstr(text, "30 batches, 90 records, 0 problems"));
    free(text);

    /* dump-log of a partition directory: every batch valid, every record decoded. */
    char pdir[256];
    snprintf(pdir, sizeof(pdir), "%s/__consumer_offsets-2", dir);
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_dump(out, pdir), 0);
    fclose(out);
    assert_int_equal(count(text, "\"isvalid\":true"), 30);
    assert_int_equal(count(text, "\"offset\":"), 90);
    free(text);

    /* Index entries are checked by meaning: an entry for a whole append (the offset of a later
     * batch at the position of an earlier one, as brokers before 3.x wrote) is fine; one that
     * points inside a batch is not. */
    char p[300], ip[300];
    seg_path(p, sizeof(p), dir, 0, 0, ".log");
    seg_path(ip, sizeof(ip), dir, 0, 0, ".index");
    int64_t pos[4];
    assert_int_equal(batch_positions(p, pos, 4), 4);
    uint8_t ent[8] = {0, 0, 0, 8, 0, 0, 0, (uint8_t)pos[1]}; /* offset 8: batch 2; at batch 1 */
    assert_true(pos[1] < 256);
    write_file(ip, ent, 8);
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_verify(dir, out), 0);
    fclose(out);
    free(text);
    ent[7] = (uint8_t)(pos[1] + 1);
    write_file(ip, ent, 8);
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_verify(dir, out), 1);
    fclose(out);
    assert_non_null(strstr(text, "is not the start of a batch"));
    free(text);
    unlink(ip); /* a missing index (one a power loss took) is noted, not a problem */
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_verify(dir, out), 0);
    fclose(out);
    assert_non_null(strstr(text, "NOTE "));
    assert_non_null(strstr(text, "00000000000000000000.index: missing"));
    free(text);
    kc_plog_t *l = open_ok(dir, 0, NULL, &o); /* the open rebuilds it */
    kc_plog_close(l);

    /* Damage: a flipped byte in an old segment of partition 2 and a leftover file. */
    seg_path(p, sizeof(p), dir, 2, 0, ".log");
    size_t len;
    uint8_t *b = read_file(p, &len);
    b[100] ^= 0x10;
    write_file(p, b, len);
    free(b);
    snprintf(p, sizeof(p), "%s/00000000000000000003.log.deleted", pdir);
    write_file(p, "x", 1);
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_verify(dir, out), 2);
    fclose(out);
    assert_non_null(strstr(text, "crc mismatch"));
    assert_non_null(strstr(text, ".log.deleted"));
    assert_int_equal(count(text, "BAD "), 1);
    free(text);
    seg_path(p, sizeof(p), dir, 2, 0, ".log");
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_dump(out, p), 1);
    fclose(out);
    assert_int_equal(count(text, "\"isvalid\":false"), 1);
    assert_true(count(text, "\"isvalid\":true") >= 1); /* goes on after the bad batch */
    free(text);
    /* An index file is dumped as entries. */
    seg_path(p, sizeof(p), dir, 0, 0, ".index");
    out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_dump(out, p), 0);
    fclose(out);
    free(text);

    /* Command-line handling (usage text on stderr, silenced here). */
    char *a1[] = {"dump-log"}, *a2[] = {"nope", "x"}, *a3[] = {"verify-log"};
    char *a4[] = {"verify-log", "/nonexistent/kcoord"};
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    int r1 = kc_log_tool_main(1, a1), r2 = kc_log_tool_main(2, a2);
    int r3 = kc_log_tool_main(1, a3), r4 = kc_log_tool_main(2, a4);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    close(devnull);
    assert_int_equal(r1, 2);
    assert_int_equal(r2, 2);
    assert_int_equal(r3, 2);
    assert_int_equal(r4, 2);
    assert_string_equal(kc_log_strerror(KC_LOG_ECORRUPT), "corrupt log data");
    assert_string_equal(kc_log_strerror(-ENOSPC), strerror(ENOSPC));
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_replay_reopen),
        cmocka_unit_test(test_zstd_log),
        cmocka_unit_test(test_roll_and_index),
        cmocka_unit_test(test_roll_by_age_and_deferred),
        cmocka_unit_test(test_torn_tails),
        cmocka_unit_test(test_scan_ahead_bounded),
        cmocka_unit_test(test_damage_in_old_segment),
        cmocka_unit_test(test_kafka_files_and_leftovers),
        cmocka_unit_test(test_txn_control_unsupported),
        cmocka_unit_test(test_write_faults),
        cmocka_unit_test(test_truncate_fault_and_short_writes),
        cmocka_unit_test(test_fsync_faults),
        cmocka_unit_test(test_crash_recovery),
        cmocka_unit_test(test_segment_gone),
        cmocka_unit_test(test_clean_shutdown_marker),
        cmocka_unit_test(test_verify_and_dump),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
