/* plog.c - one __consumer_offsets partition's segmented log: open and recover, replay, append,
 * sync, roll.
 *
 * State. A kc_plog_t knows every segment by {base offset, valid size, next offset}; only the
 * newest (active) one is kept open, with its sparse index in memory (entries {relative offset,
 * position}, Kafka's OffsetIndex format) mirrored in its .index file. `synced_size` and
 * `synced_next` say how much of the active segment is known durable; `dir_dirty` says a
 * segment was created since the directory was last fsynced. Older segments are always fully
 * durable (see "Durability ordering" in log.h), which is what lets kc_plog_open tell a torn
 * write (newest segment) from damage (anywhere else).
 *
 * Open. (1) Create the directories. (2) Resolve compaction leftovers exactly as Kafka's
 * LogLoader.removeTempFilesAndCollectSwapFiles and its swap passes do. (3) Scan every segment
 * in base-offset order with the segment scanner, checking each batch and that offsets only
 * grow, and compute the index Kafka would have built. A bad spot in the newest segment is a torn
 * write, truncated, only after a crash and only when kc_segscan_find_valid finds no valid batch
 * after it; any other bad byte is refused, and nothing is changed. (4) Rewrite any .index that
 * differs from the computed one. (5) fsync the active segment so that what is there counts as
 * synced.
 *
 * Identity. Before each append and sync, check_active makes sure the active segment is still
 * the file of its name (not deleted, replaced or cut short); once it is not, the plog refuses
 * every write with KC_LOG_EGONE for good.
 *
 * Append. Encode the batch into a reusable buffer, roll if due (deferring the roll while the
 * active segment has unsynced bytes), pwrite at the end, add an index entry when more than
 * index_interval_bytes were written since the last one. A failed write is cut off again with
 * ftruncate; if that fails too, `need_truncate` makes every later append and sync retry it
 * first.
 *
 * Index writes are best effort: the index only speeds up lookups and is recomputed at every
 * open, so a failed index write marks it stale (rewritten at roll or close) and never fails an
 * append.
 *
 * Compaction. The log cleaner (cleaner.c) rewrites closed segments and swaps them in with
 * <base>.log.cleaned -> .swap -> .log, renaming the replaced segments to .deleted on the way
 * (docs/log-format.md, "Compaction"); step (2) of the open finishes or undoes each step of that
 * after a crash, and kc_plog_reload_closed runs the same step in a running plog when a clean
 * failed half-way.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* pread, pwrite, ftruncate, strdup, O_CLOEXEC */
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/batch.h"
#include "log/log.h"
#include "log/log_int.h"
#include "util/diag.h"

/* The topic of the partition logs (opts.topic NULL). */
#define KC_LOG_TOPIC "__consumer_offsets"

#define MOD        "log"
#define SCAN_CHUNK ((size_t)1 << 20)
#define PATH_MAX_  4096
/* The encode buffer a partition keeps between appends; a larger one (a burst of group
 * metadata) is given back after its write, so an idle partition does not hold it. */
#define KEEP_WBUF_BYTES ((size_t)4 * 1024)

/* The plog's state (struct kc_plog_s, its segments and index entries) is declared in
 * log_int.h, because the log cleaner (cleaner.c) works on it too. */
typedef kc_log_seg_t seg_t;
typedef kc_log_idx_entry_t idx_entry_t;

/* ---- small helpers ---------------------------------------------------------------------- */

const char *kc_log_strerror(int rc)
{
    switch (rc) {
    case 0:
        return "ok";
    case KC_LOG_ECORRUPT:
        return "corrupt log data";
    case KC_LOG_EUNSUPPORTED:
        return "unsupported log data";
    case KC_LOG_ECOMPRESS:
        return "compression failed";
    case KC_LOG_ETOOBIG:
        return "too large for a record batch";
    case KC_LOG_EGONE:
        return "segment deleted or replaced under the running log";
    default:
        return rc < 0 ? strerror(-rc) : "unknown error";
    }
}

void kc_plog_opts_init(kc_plog_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->segment_bytes = 104857600;
    o->roll_ms = 7LL * 24 * 3600 * 1000;
    o->index_interval_bytes = 4096;
    o->codec = KC_LOG_CODEC_NONE;
    o->zstd_level = 0;
    o->leader_epoch = 0;
}

int kc_log_segment_path(char *buf, size_t n, const char *dir, int64_t base_offset,
                        const char *suffix)
{
    int w = snprintf(buf, n, "%s/%020lld%s", dir, (long long)base_offset, suffix);
    return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

__attribute__((format(printf, 2, 3))) static void set_err(kc_plog_t *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->err, sizeof(l->err), fmt, ap);
    va_end(ap);
}

static seg_t *active(kc_plog_t *l)
{
    return &l->segs[l->nsegs - 1];
}

static int push_seg(kc_plog_t *l, seg_t s)
{
    if (l->nsegs == l->capsegs) {
        size_t cap = l->capsegs ? l->capsegs * 2 : 8;
        seg_t *n = realloc(l->segs, cap * sizeof(*n));
        if (n == NULL)
            return -ENOMEM;
        l->segs = n;
        l->capsegs = cap;
    }
    l->segs[l->nsegs++] = s;
    return 0;
}

static int push_idx(idx_entry_t **v, size_t *n, size_t *cap, idx_entry_t e)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        idx_entry_t *nv = realloc(*v, c * sizeof(*nv));
        if (nv == NULL)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = e;
    return 0;
}

static void put32(uint8_t *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (uint8_t)(u >> 24);
    p[1] = (uint8_t)(u >> 16);
    p[2] = (uint8_t)(u >> 8);
    p[3] = (uint8_t)u;
}

static int32_t get32(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    return u <= INT32_MAX ? (int32_t)u : -(int32_t)(UINT32_MAX - u) - 1;
}

/* Write entries to an index file, replacing its content. */
static int write_index(const kc_log_io_t *io, int fd, const idx_entry_t *e, size_t n)
{
    return kc_log_index_write(io, fd, e, n);
}

int kc_log_index_write(const kc_log_io_t *io, int fd, const kc_log_idx_entry_t *e, size_t n)
{
    size_t bytes = n * 8;
    uint8_t *buf = malloc(bytes ? bytes : 1);
    if (buf == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        put32(buf + i * 8, e[i].rel);
        put32(buf + i * 8 + 4, e[i].pos);
    }
    int rc = kc_log_io_write_all(io, fd, buf, bytes, 0);
    free(buf);
    if (rc == 0)
        rc = io->ftruncate(io->ctx, fd, (int64_t)bytes);
    return rc;
}

/* Whether the index file holds exactly these entries. */
static bool index_matches(const kc_log_io_t *io, int fd, const idx_entry_t *e, size_t n)
{
    int64_t size = io->fsize(io->ctx, fd);
    if (size < 0 || (uint64_t)size != (uint64_t)n * 8)
        return false;
    if (n == 0)
        return true;
    uint8_t *buf = malloc(n * 8);
    if (buf == NULL)
        return false;
    bool ok = kc_log_io_read_all(io, fd, buf, n * 8, 0) == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = get32(buf + i * 8) == e[i].rel && get32(buf + i * 8 + 4) == e[i].pos;
    free(buf);
    return ok;
}

/* ---- the segment scanner ---------------------------------------------------------------- */

void kc_segscan_init(kc_segscan_t *s, const kc_log_io_t *io, int fd, int64_t size, int64_t pos)
{
    memset(s, 0, sizeof(*s));
    s->io = io;
    s->fd = fd;
    s->size = size;
    s->pos = pos;
    s->batch_pos = pos;
}

void kc_segscan_free(kc_segscan_t *s)
{
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

/* Make [off, off + need) available in s->buf; the caller knows it lies inside the file. */
static int scan_fill(kc_segscan_t *s, int64_t off, size_t need)
{
    if (s->buf_len > 0 && off >= s->buf_off &&
        (uint64_t)(off - s->buf_off) + need <= (uint64_t)s->buf_len)
        return 0;
    size_t want = need > SCAN_CHUNK ? need : SCAN_CHUNK;
    if ((uint64_t)want > (uint64_t)(s->size - off))
        want = (size_t)(s->size - off);
    if (want < need)
        want = need;
    if (want > s->cap) {
        uint8_t *b = realloc(s->buf, want);
        if (b == NULL)
            return -ENOMEM;
        s->buf = b;
        s->cap = want;
    }
    s->buf_len = 0;
    int rc = kc_log_io_read_all(s->io, s->fd, s->buf, want, off);
    if (rc != 0)
        return rc;
    s->buf_off = off;
    s->buf_len = want;
    return 0;
}

int kc_segscan_next(kc_segscan_t *s, const uint8_t **p, size_t *len, kc_batch_hdr_t *h)
{
    s->batch_pos = s->pos;
    s->torn = false;
    s->why[0] = '\0';
    int64_t rem = s->size - s->pos;
    if (rem <= 0)
        return 0;
    if (rem < KC_BATCH_HEADER_SIZE) {
        s->torn = true;
        snprintf(s->why, sizeof(s->why), "only %lld bytes left, less than a batch header",
                 (long long)rem);
        return KC_LOG_ECORRUPT;
    }
    int rc = scan_fill(s, s->pos, KC_BATCH_HEADER_SIZE);
    if (rc == -ENODATA) {
        snprintf(s->why, sizeof(s->why), "the file ended early (did it change while read?)");
        return KC_LOG_ECORRUPT;
    }
    if (rc != 0)
        return rc;
    const uint8_t *b = s->buf + (s->pos - s->buf_off);
    kc_batch_hdr_parse(b, h);
    if (h->length < KC_BATCH_MIN_LENGTH) {
        snprintf(s->why, sizeof(s->why), "batchLength %d is below the minimum of %d", h->length,
                 KC_BATCH_MIN_LENGTH);
        return KC_LOG_ECORRUPT;
    }
    if (h->magic != KC_BATCH_MAGIC) {
        snprintf(s->why, sizeof(s->why), "magic %d (only 2 is supported)", h->magic);
        return KC_LOG_ECORRUPT;
    }
    int64_t total = (int64_t)h->length + KC_BATCH_LOG_OVERHEAD;
    if (total > rem) {
        s->torn = true;
        snprintf(s->why, sizeof(s->why), "batch of %lld bytes but only %lld left in the file",
                 (long long)total, (long long)rem);
        return KC_LOG_ECORRUPT;
    }
    rc = scan_fill(s, s->pos, (size_t)total);
    if (rc == -ENODATA) {
        snprintf(s->why, sizeof(s->why), "the file ended early (did it change while read?)");
        return KC_LOG_ECORRUPT;
    }
    if (rc != 0)
        return rc;
    b = s->buf + (s->pos - s->buf_off);
    rc = kc_batch_validate(b, (size_t)total, h, s->why, sizeof(s->why));
    if (rc != 0)
        return rc;
    *p = b;
    *len = (size_t)total;
    s->pos += total;
    return 1;
}

bool kc_segscan_skip(kc_segscan_t *s, const kc_batch_hdr_t *h)
{
    int64_t total = (int64_t)h->length + KC_BATCH_LOG_OVERHEAD;
    if (s->torn || h->length < KC_BATCH_MIN_LENGTH || h->magic != KC_BATCH_MAGIC ||
        total > s->size - s->batch_pos)
        return false;
    s->pos = s->batch_pos + total;
    return true;
}

/* Whether the header at p could start a batch that follows a bad spot: the checks that cost
 * nothing, made before a CRC is computed over what may be a large garbage length. */
static bool plausible_header(const kc_batch_hdr_t *h, int64_t room, int64_t min_base)
{
    return h->magic == KC_BATCH_MAGIC && h->length >= KC_BATCH_MIN_LENGTH &&
           (int64_t)h->length + KC_BATCH_LOG_OVERHEAD <= room && h->base_offset >= min_base &&
           h->last_offset_delta >= 0 && h->count >= 0 &&
           (int64_t)h->count <= (int64_t)h->last_offset_delta + 1 &&
           kc_batch_codec(h) <= KC_LOG_CODEC_ZSTD;
}

int kc_segscan_find_valid(kc_segscan_t *s, int64_t from, int64_t min_base, int64_t *at)
{
    /* Each candidate that passes the cheap checks costs a CRC over its length; a file of
     * adversarial bytes could make that quadratic, so the total is capped. Past the cap the
     * answer is "cannot tell", which the caller treats like "found": nothing is deleted. */
    int64_t budget = 4 * (s->size - from) + ((int64_t)16 << 20);
    char why[sizeof(s->why)];
    for (int64_t q = from < 0 ? 0 : from; q + KC_BATCH_HEADER_SIZE <= s->size; q++) {
        int rc = scan_fill(s, q, KC_BATCH_HEADER_SIZE);
        if (rc != 0)
            return rc == -ENODATA ? -EIO : rc;
        kc_batch_hdr_t h;
        kc_batch_hdr_parse(s->buf + (q - s->buf_off), &h);
        if (!plausible_header(&h, s->size - q, min_base))
            continue;
        int64_t total = (int64_t)h.length + KC_BATCH_LOG_OVERHEAD;
        budget -= total;
        if (budget < 0) {
            *at = q;
            return 2;
        }
        if ((rc = scan_fill(s, q, (size_t)total)) != 0)
            return rc == -ENODATA ? -EIO : rc;
        if (kc_batch_validate(s->buf + (q - s->buf_off), (size_t)total, &h, why, sizeof(why)) ==
            0) {
            *at = q;
            return 1;
        }
    }
    return 0;
}

/* ---- file names and directory listing ---------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

kc_log_file_kind_t kc_log_file_kind(const char *name, int64_t *offset)
{
    *offset = -1;
    const char *p = name;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9') {
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10) {
            v = -1;
            break;
        }
        v = v * 10 + d;
        p++;
    }
    bool numbered = p != name && v >= 0 && *p == '.';
    if (numbered)
        *offset = v;
    if (ends_with(name, ".deleted"))
        return KC_LF_DELETED;
    if (ends_with(name, ".cleaned"))
        return KC_LF_CLEANED;
    if (ends_with(name, ".swap"))
        return KC_LF_SWAP;
    if (numbered && strcmp(p, ".log") == 0)
        return KC_LF_LOG;
    if (numbered && strcmp(p, ".index") == 0)
        return KC_LF_INDEX;
    return KC_LF_OTHER;
}

typedef struct names_s {
    char **v;
    size_t n, cap;
} names_t;

static int collect_name(void *arg, const char *name)
{
    names_t *ns = arg;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 32;
        char **v = realloc(ns->v, cap * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        ns->v = v;
        ns->cap = cap;
    }
    char *c = strdup(name);
    if (c == NULL)
        return -ENOMEM;
    ns->v[ns->n++] = c;
    return 0;
}

static void names_free(names_t *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
    memset(ns, 0, sizeof(*ns));
}

static int list_dir(kc_plog_t *l, names_t *ns)
{
    names_free(ns);
    int rc = l->io->listdir(l->io->ctx, l->dir, collect_name, ns);
    if (rc != 0)
        set_err(l, "cannot list %s: %s", l->dir, kc_log_strerror(rc));
    return rc;
}

static int join(kc_plog_t *l, char *buf, size_t n, const char *name)
{
    int w = snprintf(buf, n, "%s/%s", l->dir, name);
    if (w < 0 || (size_t)w >= n) {
        set_err(l, "path too long: %s/%s", l->dir, name);
        return -ENAMETOOLONG;
    }
    return 0;
}

static int remove_file(kc_plog_t *l, const char *name, const char *why)
{
    char path[PATH_MAX_];
    int rc = join(l, path, sizeof(path), name);
    if (rc != 0)
        return rc;
    rc = l->io->unlink(l->io->ctx, path);
    if (rc != 0 && rc != -ENOENT) {
        set_err(l, "cannot remove %s: %s", path, kc_log_strerror(rc));
        return rc;
    }
    KC_INFO(MOD, "partition %d: removed %s (%s)", (int)l->partition, path, why);
    return 0;
}

/* ---- open ------------------------------------------------------------------------------- */

/* mkdir -p through the I/O table; *created tells whether the last component was created. */
static int make_dir(kc_plog_t *l, const char *path, bool *created)
{
    char buf[PATH_MAX_];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf)) {
        set_err(l, "bad directory name '%s'", path);
        return -ENAMETOOLONG;
    }
    memcpy(buf, path, n + 1);
    *created = false;
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        int rc = l->io->mkdir(l->io->ctx, buf, 0755);
        if (rc != 0 && rc != -EEXIST) {
            set_err(l, "cannot create directory %s: %s", buf, kc_log_strerror(rc));
            return rc;
        }
        *created = rc == 0;
        buf[i] = c;
    }
    return 0;
}

static int make_dirs(kc_plog_t *l, const char *data_dir)
{
    bool created;
    int rc = make_dir(l, data_dir, &created);
    if (rc != 0)
        return rc;
    rc = make_dir(l, l->dir, &created);
    if (rc != 0)
        return rc;
    if (created) { /* make the new directory's name durable in the data directory */
        rc = kc_log_io_fsync_dir(l->io, data_dir);
        if (rc != 0) {
            set_err(l, "cannot fsync %s: %s", data_dir, kc_log_strerror(rc));
            return rc;
        }
    }
    return 0;
}

/* The offset after the last batch of the file at `path`; checks every batch. */
static int scan_next_offset(kc_plog_t *l, const char *path, int64_t base, int64_t *next)
{
    int fd = l->io->open(l->io->ctx, path, O_RDONLY, 0);
    if (fd < 0) {
        set_err(l, "cannot open %s: %s", path, kc_log_strerror(fd));
        return fd;
    }
    int64_t size = l->io->fsize(l->io->ctx, fd);
    if (size < 0) {
        l->io->close(l->io->ctx, fd);
        set_err(l, "cannot stat %s: %s", path, kc_log_strerror((int)size));
        return (int)size;
    }
    kc_segscan_t s;
    kc_segscan_init(&s, l->io, fd, size, 0);
    *next = base;
    const uint8_t *p;
    size_t len;
    kc_batch_hdr_t h;
    int rc;
    while ((rc = kc_segscan_next(&s, &p, &len, &h)) == 1)
        *next = kc_batch_last_offset(&h) + 1;
    if (rc == KC_LOG_ECORRUPT)
        set_err(l, "corrupt batch in %s at byte position %lld: %s", path, (long long)s.batch_pos,
                s.why);
    else if (rc < 0)
        set_err(l, "cannot read %s: %s", path, kc_log_strerror(rc));
    kc_segscan_free(&s);
    l->io->close(l->io->ctx, fd);
    return rc;
}

/* Finish or undo an interrupted compaction, as Kafka's LogLoader does: remove *.deleted;
 * remove *.swap at or above the lowest *.cleaned offset (an unfinished split) and then every
 * *.cleaned; for the remaining .log.swap files, remove the segments they replace (base offsets
 * in [lowest swap base, highest swap end)) and rename every .swap into place. */
static int resolve_leftovers(kc_plog_t *l)
{
    names_t ns = {0};
    int rc = list_dir(l, &ns);
    if (rc != 0)
        goto out;
    bool changed = false;
    int64_t min_cleaned = INT64_MAX;
    for (size_t i = 0; i < ns.n; i++) {
        int64_t off;
        kc_log_file_kind_t k = kc_log_file_kind(ns.v[i], &off);
        if (k == KC_LF_DELETED) {
            if ((rc = remove_file(l, ns.v[i], "left by an interrupted deletion")) != 0)
                goto out;
            changed = true;
        } else if (k == KC_LF_CLEANED && off >= 0 && off < min_cleaned) {
            min_cleaned = off;
        }
    }
    for (size_t i = 0; i < ns.n; i++) {
        int64_t off;
        kc_log_file_kind_t k = kc_log_file_kind(ns.v[i], &off);
        if ((k == KC_LF_SWAP && off >= min_cleaned) || k == KC_LF_CLEANED) {
            if ((rc = remove_file(l, ns.v[i], "left by an unfinished compaction")) != 0)
                goto out;
            changed = true;
        }
    }
    int64_t min_swap = INT64_MAX, max_swap_end = INT64_MIN;
    for (size_t i = 0; i < ns.n; i++) {
        int64_t off;
        if (kc_log_file_kind(ns.v[i], &off) != KC_LF_SWAP || off < 0 || off >= min_cleaned ||
            !ends_with(ns.v[i], ".log.swap"))
            continue;
        char path[PATH_MAX_];
        int64_t next = off;
        if ((rc = join(l, path, sizeof(path), ns.v[i])) != 0 ||
            (rc = scan_next_offset(l, path, off, &next)) != 0)
            goto out;
        if (off < min_swap)
            min_swap = off;
        if (next > max_swap_end)
            max_swap_end = next;
    }
    if (min_swap != INT64_MAX) {
        for (size_t i = 0; i < ns.n; i++) {
            int64_t off;
            kc_log_file_kind_t k = kc_log_file_kind(ns.v[i], &off);
            bool segment_file =
                k == KC_LF_LOG || k == KC_LF_INDEX ||
                (k == KC_LF_OTHER && off >= 0 &&
                 (ends_with(ns.v[i], ".timeindex") || ends_with(ns.v[i], ".txnindex")));
            if (segment_file && off >= min_swap && off < max_swap_end) {
                if ((rc = remove_file(l, ns.v[i], "replaced by a compacted segment")) != 0)
                    goto out;
                changed = true;
            }
        }
    }
    for (size_t i = 0; i < ns.n; i++) {
        int64_t off;
        if (kc_log_file_kind(ns.v[i], &off) != KC_LF_SWAP || off < 0 || off >= min_cleaned)
            continue;
        char from[PATH_MAX_], to[PATH_MAX_];
        if ((rc = join(l, from, sizeof(from), ns.v[i])) != 0)
            goto out;
        memcpy(to, from, sizeof(to));
        to[strlen(to) - strlen(".swap")] = '\0';
        rc = l->io->rename(l->io->ctx, from, to);
        if (rc != 0) {
            set_err(l, "cannot rename %s: %s", from, kc_log_strerror(rc));
            goto out;
        }
        KC_INFO(MOD, "partition %d: finished an interrupted compaction: %s", (int)l->partition, to);
        changed = true;
    }
    if (changed && (rc = kc_log_io_fsync_dir(l->io, l->dir)) != 0)
        set_err(l, "cannot fsync %s: %s", l->dir, kc_log_strerror(rc));
out:
    names_free(&ns);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Bring the .index of a segment in line with the computed entries. On success with the newest
 * segment, keeps the descriptor in *keep_fd (else closes it). Index problems are never fatal. */
static void check_index(kc_plog_t *l, int64_t base, const idx_entry_t *e, size_t n, int *keep_fd)
{
    char path[PATH_MAX_];
    if (kc_log_segment_path(path, sizeof(path), l->dir, base, ".index") != 0)
        return;
    int fd = l->io->open(l->io->ctx, path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        KC_WARN(MOD, "partition %d: cannot open %s: %s", (int)l->partition, path,
                kc_log_strerror(fd));
        return;
    }
    if (!index_matches(l->io, fd, e, n)) {
        int rc = write_index(l->io, fd, e, n);
        if (rc != 0) {
            KC_WARN(MOD, "partition %d: cannot rebuild %s: %s", (int)l->partition, path,
                    kc_log_strerror(rc));
            if (keep_fd != NULL)
                l->idx_stale = true;
        } else {
            KC_INFO(MOD, "partition %d: rebuilt %s (%zu entries)", (int)l->partition, path, n);
        }
    }
    if (keep_fd != NULL)
        *keep_fd = fd;
    else
        l->io->close(l->io->ctx, fd);
}

/* Scan one segment; see the file comment. `prev_next` is where the previous segment ended. */
static int load_segment(kc_plog_t *l, int64_t base, bool newest, int64_t prev_next)
{
    char path[PATH_MAX_];
    if (kc_log_segment_path(path, sizeof(path), l->dir, base, ".log") != 0) {
        set_err(l, "path too long in %s", l->dir);
        return -ENAMETOOLONG;
    }
    if (base < prev_next) {
        set_err(l,
                "segment %s starts at offset %lld, inside the previous segment (which ends "
                "at offset %lld)",
                path, (long long)base, (long long)prev_next);
        return KC_LOG_ECORRUPT;
    }
    int fd = l->io->open(l->io->ctx, path, newest ? O_RDWR : O_RDONLY, 0);
    if (fd < 0) {
        set_err(l, "cannot open %s: %s", path, kc_log_strerror(fd));
        return fd;
    }
    int64_t size = l->io->fsize(l->io->ctx, fd);
    if (size < 0) {
        set_err(l, "cannot stat %s: %s", path, kc_log_strerror((int)size));
        l->io->close(l->io->ctx, fd);
        return (int)size;
    }

    kc_segscan_t s;
    kc_segscan_init(&s, l->io, fd, size, 0);
    idx_entry_t *e = NULL;
    size_t ne = 0, cape = 0;
    int64_t expected = base, last_entry_pos = 0, first_ts = -1, valid = 0;
    const uint8_t *p;
    size_t len;
    kc_batch_hdr_t h;
    int rc;
    for (;;) {
        rc = kc_segscan_next(&s, &p, &len, &h);
        if (rc == 1) {
            int64_t last = kc_batch_last_offset(&h);
            if (h.base_offset < expected) {
                snprintf(s.why, sizeof(s.why), "batch base offset %lld, expected at least %lld",
                         (long long)h.base_offset, (long long)expected);
                rc = KC_LOG_ECORRUPT;
            } else if (last - base > INT32_MAX || s.pos > INT32_MAX) {
                snprintf(s.why, sizeof(s.why),
                         "offset %lld or position %lld out of range for "
                         "a segment based at %lld",
                         (long long)last, (long long)s.pos, (long long)base);
                rc = KC_LOG_ECORRUPT;
            }
        }
        if (rc != 1)
            break;
        int64_t last = kc_batch_last_offset(&h);
        if (kc_log_index_due(s.batch_pos, last_entry_pos, l->opts.index_interval_bytes)) {
            idx_entry_t ent = {(int32_t)(last - base), (int32_t)s.batch_pos};
            if (push_idx(&e, &ne, &cape, ent) != 0) {
                rc = -ENOMEM;
                break;
            }
            last_entry_pos = s.batch_pos;
        }
        if (s.batch_pos == 0)
            first_ts = h.max_timestamp;
        expected = last + 1;
        valid = s.pos;
    }
    int64_t next_valid = -1;
    int found = 0;
    if (rc == KC_LOG_ECORRUPT && newest && !l->opts.clean_shutdown) {
        /* A torn write only if no valid batch follows the bad spot (see kc_plog_open). */
        found = kc_segscan_find_valid(&s, s.batch_pos + 1, expected, &next_valid);
        if (found < 0) {
            set_err(l, "cannot read %s: %s", path, kc_log_strerror(found));
            rc = found;
        }
    }
    if (rc == KC_LOG_ECORRUPT && newest && !l->opts.clean_shutdown && found == 0) {
        int64_t dropped = size - s.batch_pos;
        KC_WARN(MOD,
                "partition %d: torn write at the end of %s: dropping %lld bytes from byte "
                "position %lld (%s; no valid batch follows)",
                (int)l->partition, path, (long long)dropped, (long long)s.batch_pos, s.why);
        rc = l->io->ftruncate(l->io->ctx, fd, s.batch_pos);
        if (rc == 0)
            rc = l->io->fsync(l->io->ctx, fd);
        if (rc != 0)
            set_err(l, "cannot truncate %s: %s", path, kc_log_strerror(rc));
        valid = s.batch_pos;
    } else if (rc == KC_LOG_ECORRUPT && newest && l->opts.clean_shutdown) {
        set_err(l,
                "corrupt batch in %s at byte position %lld: %s; the log was shut down cleanly, "
                "so this is damage, not a torn write: nothing truncated",
                path, (long long)s.batch_pos, s.why);
    } else if (rc == KC_LOG_ECORRUPT && newest) {
        set_err(l,
                "corrupt batch in %s at byte position %lld: %s; %s at byte position %lld, so "
                "this is damage, not a torn write: nothing truncated",
                path, (long long)s.batch_pos, s.why,
                found == 1 ? "a valid batch follows" : "a batch that may be valid follows",
                (long long)next_valid);
    } else if (rc == KC_LOG_ECORRUPT) {
        set_err(l, "corrupt batch in %s at byte position %lld: %s", path, (long long)s.batch_pos,
                s.why);
    } else if (rc < 0) {
        set_err(l, "cannot read %s: %s", path, kc_log_strerror(rc));
    }
    kc_segscan_free(&s);
    if (rc == 0)
        rc = push_seg(l, (seg_t){base, valid, expected});
    if (rc != 0) {
        free(e);
        l->io->close(l->io->ctx, fd);
        return rc;
    }
    if (newest) {
        l->fd = fd;
        free(l->idx);
        l->idx = e;
        l->nidx = ne;
        l->capidx = cape;
        l->roll_base_ms = first_ts;
        check_index(l, base, e, ne, &l->idx_fd);
    } else {
        check_index(l, base, e, ne, NULL);
        free(e);
        l->io->close(l->io->ctx, fd);
    }
    return 0;
}

/* Open a new, empty active segment at `base`. On failure nothing changed. */
static int create_segment(kc_plog_t *l, int64_t base)
{
    char path[PATH_MAX_], ipath[PATH_MAX_];
    if (kc_log_segment_path(path, sizeof(path), l->dir, base, ".log") != 0 ||
        kc_log_segment_path(ipath, sizeof(ipath), l->dir, base, ".index") != 0) {
        set_err(l, "path too long in %s", l->dir);
        return -ENAMETOOLONG;
    }
    int rc = push_seg(l, (seg_t){base, 0, base});
    if (rc != 0)
        return rc;
    l->nsegs--; /* room reserved; committed below */
    int fd = l->io->open(l->io->ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        set_err(l, "cannot create %s: %s", path, kc_log_strerror(fd));
        return fd;
    }
    int ifd = l->io->open(l->io->ctx, ipath, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (ifd < 0)
        KC_WARN(MOD, "partition %d: cannot create %s: %s", (int)l->partition, ipath,
                kc_log_strerror(ifd));

    /* Seal the old active segment: its index must be whole now. */
    if (l->nsegs > 0) {
        if (l->idx_stale && l->idx_fd >= 0 && write_index(l->io, l->idx_fd, l->idx, l->nidx) != 0)
            KC_WARN(MOD, "partition %d: index of segment %lld left stale (rebuilt at next open)",
                    (int)l->partition, (long long)active(l)->base);
        if (l->idx_fd >= 0)
            l->io->close(l->io->ctx, l->idx_fd);
        if (l->fd >= 0)
            l->io->close(l->io->ctx, l->fd);
    }
    l->nsegs++;
    l->fd = fd;
    l->idx_fd = ifd;
    l->idx_stale = ifd < 0;
    l->nidx = 0;
    l->roll_base_ms = -1;
    l->synced_size = 0;
    l->synced_next = base;
    l->need_truncate = false;
    l->dir_dirty = true;
    KC_DEBUG(MOD, "partition %d: new segment %s", (int)l->partition, path);
    return 0;
}

static int sync_now(kc_plog_t *l);
static int fix_tail(kc_plog_t *l);

int kc_plog_open(kc_plog_t **out, const kc_log_io_t *io, const char *data_dir, int32_t partition,
                 const kc_plog_opts_t *opts, char *err, size_t errlen)
{
    *out = NULL;
    if (errlen > 0)
        err[0] = '\0';
    kc_plog_t *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        if (errlen > 0)
            snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    l->io = io;
    l->partition = partition;
    l->fd = -1;
    l->idx_fd = -1;
    l->roll_base_ms = -1;
    kc_wr_init(&l->wbuf);
    if (opts != NULL)
        l->opts = *opts;
    else
        kc_plog_opts_init(&l->opts);

    int rc = 0;
    const char *topic = l->opts.topic ? l->opts.topic : KC_LOG_TOPIC;
    size_t dlen = strlen(data_dir) + strlen(topic) + 16;
    if (partition < 0 || l->opts.segment_bytes < KC_BATCH_HEADER_SIZE ||
        l->opts.segment_bytes > INT32_MAX / 2 || l->opts.roll_ms <= 0 ||
        l->opts.index_interval_bytes < 0 ||
        (l->opts.codec != KC_LOG_CODEC_NONE && l->opts.codec != KC_LOG_CODEC_ZSTD)) {
        set_err(l, "invalid partition or log options");
        rc = -EINVAL;
    } else if ((l->dir = malloc(dlen)) == NULL || (l->bctx = kc_batch_ctx_new(0)) == NULL) {
        set_err(l, "out of memory");
        rc = -ENOMEM;
    } else {
        snprintf(l->dir, dlen, "%s/%s-%d", data_dir, topic, (int)partition);
        rc = make_dirs(l, data_dir);
    }
    if (rc == 0)
        rc = resolve_leftovers(l);

    names_t ns = {0};
    int64_t *bases = NULL;
    size_t nb = 0;
    if (rc == 0)
        rc = list_dir(l, &ns);
    if (rc == 0 && (bases = malloc((ns.n + 1) * sizeof(*bases))) == NULL) {
        set_err(l, "out of memory");
        rc = -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < ns.n; i++) {
        int64_t off;
        if (kc_log_file_kind(ns.v[i], &off) == KC_LF_LOG)
            bases[nb++] = off;
    }
    if (rc == 0)
        qsort(bases, nb, sizeof(*bases), cmp_i64);
    for (size_t i = 0; rc == 0 && i < ns.n; i++) { /* an index without its segment goes */
        int64_t off;
        if (kc_log_file_kind(ns.v[i], &off) != KC_LF_INDEX ||
            bsearch(&off, bases, nb, sizeof(*bases), cmp_i64) != NULL)
            continue;
        rc = remove_file(l, ns.v[i], "an index without its segment");
    }
    names_free(&ns);
    int64_t prev_next = 0;
    for (size_t i = 0; rc == 0 && i < nb; i++) {
        rc = load_segment(l, bases[i], i + 1 == nb, prev_next);
        if (rc == 0)
            prev_next = active(l)->next_offset;
    }
    free(bases);
    if (rc == 0 && l->nsegs == 0)
        rc = create_segment(l, 0);
    if (rc == 0) {
        /* Whatever is on disk now counts as written: make it durable before building on it.
         * A failing fsync here fails the open but drops nothing: those bytes may well have
         * been durable since an earlier run, and the caller retries the open later. */
        seg_t *seg = active(l);
        rc = fix_tail(l);
        if (rc == 0 && (rc = l->io->fsync(l->io->ctx, l->fd)) != 0)
            set_err(l, "fsync of the active segment failed: %s", kc_log_strerror(rc));
        if (rc == 0 && l->dir_dirty && (rc = kc_log_io_fsync_dir(l->io, l->dir)) != 0)
            set_err(l, "fsync of directory %s failed: %s", l->dir, kc_log_strerror(rc));
        if (rc == 0) {
            l->synced_size = seg->size;
            l->synced_next = seg->next_offset;
            l->dir_dirty = false;
        }
    }
    if (rc != 0) {
        if (errlen > 0)
            snprintf(err, errlen, "partition %d: %s", (int)partition,
                     l->err[0] ? l->err : kc_log_strerror(rc));
        l->idx_stale = false;
        kc_plog_close(l);
        return rc;
    }
    l->err[0] = '\0';
    KC_DEBUG(MOD, "partition %d: %zu segments, %lld bytes, next offset %lld", (int)partition,
             l->nsegs, (long long)kc_plog_size_bytes(l), (long long)kc_plog_next_offset(l));
    *out = l;
    return 0;
}

/* ---- reload after an interrupted compaction ---------------------------------------------- */

int kc_plog_reload_closed(kc_plog_t *l)
{
    int rc = resolve_leftovers(l);
    if (rc != 0)
        return rc;
    seg_t act = *active(l);
    names_t ns = {0};
    int64_t *bases = NULL;
    size_t nb = 0;
    rc = list_dir(l, &ns);
    if (rc == 0 && (bases = malloc((ns.n + 1) * sizeof(*bases))) == NULL) {
        set_err(l, "out of memory");
        rc = -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < ns.n; i++) {
        int64_t off;
        if (kc_log_file_kind(ns.v[i], &off) == KC_LF_LOG && off < act.base)
            bases[nb++] = off;
    }
    if (rc == 0)
        qsort(bases, nb, sizeof(*bases), cmp_i64);
    for (size_t i = 0; rc == 0 && i < ns.n; i++) { /* an index without its segment goes */
        int64_t off;
        if (kc_log_file_kind(ns.v[i], &off) != KC_LF_INDEX || off >= act.base ||
            bsearch(&off, bases, nb, sizeof(*bases), cmp_i64) != NULL)
            continue;
        rc = remove_file(l, ns.v[i], "an index without its segment");
    }
    names_free(&ns);
    seg_t *saved = NULL;
    size_t nsaved = l->nsegs - 1;
    if (rc == 0 && (saved = malloc((nsaved + 1) * sizeof(*saved))) == NULL) {
        set_err(l, "out of memory");
        rc = -ENOMEM;
    }
    if (rc == 0) {
        memcpy(saved, l->segs, nsaved * sizeof(*saved));
        l->nsegs = 0;
        int64_t prev_next = 0;
        for (size_t i = 0; rc == 0 && i < nb; i++) {
            rc = load_segment(l, bases[i], false, prev_next);
            if (rc == 0)
                prev_next = active(l)->next_offset;
        }
        if (rc == 0 && act.base < prev_next) {
            set_err(l,
                    "the active segment %lld starts inside the closed segments (which end at %lld)",
                    (long long)act.base, (long long)prev_next);
            rc = KC_LOG_ECORRUPT;
        }
        if (rc == 0)
            rc = push_seg(l, act);
        if (rc != 0) { /* put the old list back; the caller will try again */
            memcpy(l->segs, saved, nsaved * sizeof(*saved));
            l->segs[nsaved] = act;
            l->nsegs = nsaved + 1;
        }
    }
    free(saved);
    free(bases);
    return rc;
}

/* ---- replay ----------------------------------------------------------------------------- */

int kc_plog_replay(kc_plog_t *l, int (*fn)(void *arg, const kc_log_record_t *rec), void *arg,
                   kc_plog_replay_stats_t *stats)
{
    kc_plog_replay_stats_t st = {0};
    int rc = kc_plog_clean_finish(l); /* a compaction that failed half-way: finish it first */
    for (size_t i = 0; rc == 0 && i < l->nsegs; i++) {
        const seg_t *seg = &l->segs[i];
        char path[PATH_MAX_];
        if (kc_log_segment_path(path, sizeof(path), l->dir, seg->base, ".log") != 0) {
            set_err(l, "path too long in %s", l->dir);
            rc = -ENAMETOOLONG;
            break;
        }
        bool is_active = i + 1 == l->nsegs;
        int fd = is_active ? l->fd : l->io->open(l->io->ctx, path, O_RDONLY, 0);
        if (fd < 0) {
            set_err(l, "cannot open %s: %s", path, kc_log_strerror(fd));
            rc = fd;
            break;
        }
        kc_segscan_t s;
        kc_segscan_init(&s, l->io, fd, seg->size, 0);
        const uint8_t *p;
        size_t len;
        kc_batch_hdr_t h;
        while (rc == 0) {
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
            st.batches++;
            st.bytes += (int64_t)len;
            if (kc_batch_is_control(&h)) {
                st.control_batches++;
                continue;
            }
            if (kc_batch_is_transactional(&h)) {
                st.txn_batches++;
                continue;
            }
            kc_batch_iter_t it;
            r = kc_batch_iter_init(&it, l->bctx, p, len);
            kc_log_record_t rec;
            while (r == 0 && (r = kc_batch_iter_next(&it, &rec)) == 1) {
                st.records++;
                r = fn(arg, &rec);
                if (r != 0) {
                    rc = r;
                    break;
                }
                r = 0;
            }
            if (rc == 0 && r < 0) {
                set_err(l, "bad batch in %s at byte position %lld: %s", path,
                        (long long)s.batch_pos, it.why);
                rc = r;
            }
        }
        kc_segscan_free(&s);
        if (!is_active)
            l->io->close(l->io->ctx, fd);
    }
    if (stats != NULL)
        *stats = st;
    return rc;
}

/* ---- append, sync, roll ----------------------------------------------------------------- */

/* Whether the active segment is still the file of its name, no shorter than what was written
 * to it (see kc_plog_append). Returns 0, or KC_LOG_EGONE (sticky) with l->err set. A check that
 * cannot be made (a test table without fstat or stat, an fstat error) passes: the write that
 * follows meets the same disk and reports its own error. */
static int check_active(kc_plog_t *l)
{
    if (l->gone)
        return KC_LOG_EGONE;
    if (l->io->fstat == NULL || l->io->stat == NULL)
        return 0;
    seg_t *seg = active(l);
    char path[PATH_MAX_];
    (void)kc_log_segment_path(path, sizeof(path), l->dir, seg->base, ".log");
    kc_log_stat_t fs, ps;
    if (l->io->fstat(l->io->ctx, l->fd, &fs) != 0)
        return 0;
    const char *what = NULL;
    int rc = l->io->stat(l->io->ctx, path, &ps);
    if (rc == 0 && (ps.dev != fs.dev || ps.ino != fs.ino))
        what = "was replaced by another file";
    else if (fs.nlink == 0 || rc == -ENOENT || rc == -ENOTDIR)
        what = "was deleted";
    else if (fs.size < seg->size)
        what = "was truncated";
    if (what == NULL)
        return 0;
    l->gone = true;
    set_err(l,
            "segment %s %s under the running log (%lld bytes, offsets %lld..%lld, were in it): "
            "what it held is gone from the directory; refusing every write until a restart",
            path, what, (long long)seg->size, (long long)seg->base,
            (long long)seg->next_offset - 1);
    return KC_LOG_EGONE;
}

/* Cut the active file back to its valid size, if an earlier failure left bytes past it. */
static int fix_tail(kc_plog_t *l)
{
    if (!l->need_truncate)
        return 0;
    int rc = l->io->ftruncate(l->io->ctx, l->fd, active(l)->size);
    if (rc != 0) {
        set_err(l, "cannot truncate segment %lld of partition %d back to %lld bytes: %s",
                (long long)active(l)->base, (int)l->partition, (long long)active(l)->size,
                kc_log_strerror(rc));
        return rc;
    }
    l->need_truncate = false;
    return 0;
}

/* Drop index entries at or past `size` in memory and in the file. */
static void trim_index(kc_plog_t *l, int64_t size)
{
    size_t n = l->nidx;
    while (n > 0 && l->idx[n - 1].pos >= size)
        n--;
    if (n == l->nidx)
        return;
    l->nidx = n;
    if (l->idx_fd < 0 || l->io->ftruncate(l->io->ctx, l->idx_fd, (int64_t)n * 8) != 0)
        l->idx_stale = true;
}

/* After a failed fsync: forget everything past the last synced size (see log.h). */
static void drop_unsynced(kc_plog_t *l)
{
    seg_t *seg = active(l);
    if (seg->size > l->synced_size)
        KC_WARN_LIMITED(MOD, "partition %d: dropping %lld unsynced bytes (offsets %lld..%lld)",
                        (int)l->partition, (long long)(seg->size - l->synced_size),
                        (long long)l->synced_next, (long long)seg->next_offset - 1);
    seg->size = l->synced_size;
    seg->next_offset = l->synced_next;
    if (seg->size == 0)
        l->roll_base_ms = -1;
    trim_index(l, seg->size);
    l->need_truncate = true;
    (void)fix_tail(l);
}

static int sync_now(kc_plog_t *l)
{
    int rc = check_active(l);
    if (rc != 0)
        return rc;
    rc = fix_tail(l);
    if (rc != 0)
        return rc;
    seg_t *seg = active(l);
    if (l->synced_size == seg->size && !l->dir_dirty)
        return 0;
    char path[PATH_MAX_];
    (void)kc_log_segment_path(path, sizeof(path), l->dir, seg->base, ".log");
    if (l->synced_size != seg->size && (rc = l->io->fsync(l->io->ctx, l->fd)) != 0) {
        set_err(l, "fsync of %s failed: %s", path, kc_log_strerror(rc));
        drop_unsynced(l);
        return rc;
    }
    if (l->dir_dirty && (rc = kc_log_io_fsync_dir(l->io, l->dir)) != 0) {
        set_err(l, "fsync of directory %s failed: %s", l->dir, kc_log_strerror(rc));
        drop_unsynced(l);
        return rc;
    }
    l->synced_size = seg->size;
    l->synced_next = seg->next_offset;
    l->dir_dirty = false;
    return 0;
}

int kc_plog_sync(kc_plog_t *l)
{
    return sync_now(l);
}

/* Roll before writing a batch of `blen` bytes whose last offset is `last`, if due. */
static int maybe_roll(kc_plog_t *l, size_t blen, int64_t last, int64_t now_ms)
{
    seg_t *seg = active(l);
    if (seg->size == 0)
        return 0;
    bool hard = last - seg->base > INT32_MAX || seg->size + (int64_t)blen > INT32_MAX;
    bool full = seg->size + (int64_t)blen > l->opts.segment_bytes;
    bool old = l->roll_base_ms >= 0 && now_ms - l->roll_base_ms > l->opts.roll_ms;
    if (!hard && !full && !old)
        return 0;
    if (l->synced_size < seg->size || l->dir_dirty) {
        if (!hard && seg->size + (int64_t)blen <= 2 * l->opts.segment_bytes)
            return 0; /* deferred until the active segment is synced */
        KC_INFO(MOD, "partition %d: segment %lld was never synced; syncing it before the roll",
                (int)l->partition, (long long)seg->base);
        int rc = sync_now(l);
        if (rc != 0)
            return rc;
    }
    KC_DEBUG(MOD, "partition %d: rolling segment %lld (%s)", (int)l->partition,
             (long long)seg->base,
             hard   ? "offsets"
             : full ? "size"
                    : "age");
    return create_segment(l, seg->next_offset);
}

int kc_plog_append(kc_plog_t *l, const kc_log_record_t *recs, size_t n, int64_t now_ms,
                   int64_t *base_offset)
{
    if (n == 0)
        return -EINVAL;
    int rc = check_active(l);
    if (rc != 0)
        return rc;
    rc = fix_tail(l);
    if (rc != 0)
        return rc;
    int64_t base = active(l)->next_offset;
    if ((uint64_t)n > (uint64_t)(INT64_MAX - 1 - base)) {
        set_err(l, "offsets %lld + %zu records would pass the largest offset", (long long)base, n);
        return KC_LOG_ETOOBIG;
    }
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, base);
    spec.partition_leader_epoch = l->opts.leader_epoch;
    spec.codec = l->opts.codec;
    spec.zstd_level = l->opts.zstd_level;
    spec.default_timestamp_ms = now_ms;
    l->wbuf.len = 0;
    l->wbuf.err = 0;
    rc = kc_batch_encode(l->bctx, &l->wbuf, &spec, recs, n);
    if (rc != 0) {
        set_err(l, "cannot encode a batch of %zu records: %s", n, kc_log_strerror(rc));
        return rc;
    }
    size_t blen = l->wbuf.len;
    int64_t last = base + (int64_t)n - 1;
    if ((rc = maybe_roll(l, blen, last, now_ms)) != 0)
        return rc;

    seg_t *seg = active(l);
    int64_t pos = seg->size;
    rc = kc_log_io_write_all(l->io, l->fd, l->wbuf.buf, blen, pos);
    if (rc != 0) {
        set_err(l, "write of %zu bytes at position %lld of segment %lld failed: %s", blen,
                (long long)pos, (long long)seg->base, kc_log_strerror(rc));
        l->need_truncate = true;
        (void)fix_tail(l);
        return rc;
    }
    seg->size += (int64_t)blen;
    seg->next_offset = last + 1;
    if (l->wbuf.cap > KEEP_WBUF_BYTES) {
        kc_wr_free(&l->wbuf);
        kc_wr_init(&l->wbuf);
    }
    if (pos == 0 || l->roll_base_ms < 0)
        l->roll_base_ms = now_ms; /* the batch's max timestamp, as Kafka's rollingBasedTimestamp */
    int64_t last_entry_pos = l->nidx > 0 ? l->idx[l->nidx - 1].pos : 0;
    if (kc_log_index_due(pos, last_entry_pos, l->opts.index_interval_bytes)) {
        idx_entry_t e = {(int32_t)(last - seg->base), (int32_t)pos};
        if (push_idx(&l->idx, &l->nidx, &l->capidx, e) != 0) {
            l->idx_stale = true; /* rebuilt at the next open */
        } else if (!l->idx_stale && l->idx_fd >= 0) {
            uint8_t b[8];
            put32(b, e.rel);
            put32(b + 4, e.pos);
            if (kc_log_io_write_all(l->io, l->idx_fd, b, 8, (int64_t)(l->nidx - 1) * 8) != 0)
                l->idx_stale = true;
        }
    }
    if (base_offset != NULL)
        *base_offset = base;
    return 0;
}

/* ---- accessors and close ---------------------------------------------------------------- */

int64_t kc_plog_next_offset(const kc_plog_t *l)
{
    return l->segs[l->nsegs - 1].next_offset;
}

int64_t kc_plog_synced_offset(const kc_plog_t *l)
{
    return l->synced_next;
}

size_t kc_plog_segment_count(const kc_plog_t *l)
{
    return l->nsegs;
}

int64_t kc_plog_size_bytes(const kc_plog_t *l)
{
    int64_t n = 0;
    for (size_t i = 0; i < l->nsegs; i++)
        n += l->segs[i].size;
    return n;
}

int64_t kc_plog_active_base(const kc_plog_t *l)
{
    return l->segs[l->nsegs - 1].base;
}

int32_t kc_plog_partition(const kc_plog_t *l)
{
    return l->partition;
}

const char *kc_plog_dir(const kc_plog_t *l)
{
    return l->dir;
}

const char *kc_plog_error(const kc_plog_t *l)
{
    return l->err;
}

int kc_plog_close(kc_plog_t *l)
{
    if (l == NULL)
        return 0;
    int rc = 0;
    if (l->idx_fd >= 0) {
        if (l->idx_stale)
            (void)write_index(l->io, l->idx_fd, l->idx, l->nidx);
        l->io->close(l->io->ctx, l->idx_fd);
    }
    if (l->fd >= 0)
        rc = l->io->close(l->io->ctx, l->fd);
    kc_batch_ctx_free(l->bctx);
    kc_wr_free(&l->wbuf);
    free(l->idx);
    free(l->segs);
    free(l->dir);
    free(l);
    return rc;
}

/* ---- Whole partition directories ----------------------------------------------------------- */

typedef struct dir_walk_s {
    const kc_log_io_t *io;
    char dir[PATH_MAX];
    int rc;        /* kc_plog_remove: the first failure */
    bool has_data; /* kc_log_dir_has_data: a non-empty .log was seen */
} dir_walk_t;

static int remove_one(void *arg, const char *name)
{
    dir_walk_t *w = arg;
    char path[PATH_MAX + 256];
    snprintf(path, sizeof(path), "%s/%s", w->dir, name);
    int rc = w->io->unlink(w->io->ctx, path);
    if (rc != 0 && rc != -ENOENT && w->rc == 0)
        w->rc = rc;
    return 0;
}

int kc_plog_remove(const kc_log_io_t *io, const char *data_dir, int32_t partition)
{
    dir_walk_t w = {.io = io};
    if ((size_t)snprintf(w.dir, sizeof(w.dir), "%s/%s-%d", data_dir, KC_LOG_TOPIC, partition) >=
        sizeof(w.dir))
        return -ENAMETOOLONG;
    int rc = io->listdir(io->ctx, w.dir, remove_one, &w);
    if (rc == -ENOENT)
        return 0;
    return rc != 0 ? rc : w.rc;
}

static int note_data(void *arg, const char *name)
{
    dir_walk_t *w = arg;
    size_t n = strlen(name);
    if (n < 4 || strcmp(name + n - 4, ".log") != 0 || w->io->stat == NULL)
        return 0;
    char path[PATH_MAX + 256];
    snprintf(path, sizeof(path), "%s/%s", w->dir, name);
    kc_log_stat_t st;
    if (w->io->stat(w->io->ctx, path, &st) == 0 && st.size > 0)
        w->has_data = true;
    return w->has_data;
}

bool kc_log_dir_has_data(const kc_log_io_t *io, const char *data_dir, int32_t partitions)
{
    for (int32_t i = 0; i < partitions; i++) {
        dir_walk_t w = {.io = io};
        if ((size_t)snprintf(w.dir, sizeof(w.dir), "%s/%s-%d", data_dir, KC_LOG_TOPIC, i) >=
            sizeof(w.dir))
            continue;
        (void)io->listdir(io->ctx, w.dir, note_data, &w);
        if (w.has_data)
            return true;
    }
    return false;
}
