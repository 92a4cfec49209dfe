/* fuzz_log_segment.c - libFuzzer target: a partition directory as kcoord finds it on disk,
 * read by the verify and dump tools, then opened (recovered) and replayed by the partition log.
 *
 * Input format. Either
 *   - raw: the input is the bytes of one segment file, written as
 *     __consumer_offsets-0/00000000000000000000.log, so any .log file of kcoord or of a Kafka
 *     broker is a valid input as it is; or
 *   - a directory: the magic "KCDR", then up to MAX_FILES entries, each a 1-byte name length,
 *     the name, a 4-byte big-endian content length and the content, written into
 *     __consumer_offsets-0/. Names are kept to [0-9A-Za-z._-] (others are skipped) so that
 *     segments, indexes and compaction leftovers (.cleaned, .swap, .deleted) and Kafka's own
 *     files can be combined. Parsing stops at the first entry that does not fit.
 *
 * Per input, in a fresh data directory under a temporary root (in /dev/shm when there is one):
 *   1. kc_log_verify and kc_log_dump over the directory (read only; output to /dev/null).
 *   2. kc_plog_open as after a clean shutdown. Nothing may be truncated: in raw mode the segment
 *      must be byte for byte the input afterwards, whether the open succeeded or not. When it
 *      succeeds, replay.
 *   3. kc_plog_open as after a crash. In raw mode the segment must then be a prefix of the
 *      input. When it succeeds and the replay too: append one record, sync, close, open again
 *      and replay: exactly one more record, with the offset the first open announced.
 * Replays check that record offsets strictly increase. Every check that fails aborts.
 *
 * fsync is a no-op in the I/O table used here (what is tested is the reading, and fsync would
 * make each run cost a disk flush); everything else is the POSIX table. Log lines below ERROR
 * are dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "log/log.h"
#include "util/diag.h"

#define MAX_FILES 8
#define SEG0      "00000000000000000000.log"

static char root[256];    /* the temporary root of this process */
static char data[300];    /* root/d: the data directory of one run */
static char pdir[340];    /* data/__consumer_offsets-0 */
static kc_log_io_t quick; /* POSIX, without fsync */
static FILE *devnull;

static _Noreturn void fail(const char *what, long long a, long long b)
{
    fprintf(stderr, "fuzz_log_segment: %s (%lld vs %lld)\n", what, a, b);
    abort();
}

static int no_fsync(void *ctx, int fd)
{
    (void)ctx;
    (void)fd;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    if (root[0] != '\0')
        nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void init_once(void)
{
    if (root[0] != '\0')
        return;
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(root, sizeof(root), "%s/kc_fuzz_log_XXXXXX", tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(root) == NULL)
        abort();
    atexit(cleanup);
    snprintf(data, sizeof(data), "%s/d", root);
    snprintf(pdir, sizeof(pdir), "%s/__consumer_offsets-0", data);
    quick = *kc_log_io_posix();
    quick.fsync = no_fsync;
    kc_diag_set_level(KC_DIAG_ERROR);
    devnull = fopen("/dev/null", "w");
    if (devnull == NULL)
        abort();
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", pdir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (n > 0 && fwrite(p, 1, n, f) != n)
        abort();
    if (fclose(f) != 0)
        abort();
}

/* The segment 0 as it is now: a malloc'd copy and its size, or NULL when it is gone. */
static uint8_t *read_seg0(size_t *n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/" SEG0, pdir);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        abort();
    *n = (size_t)st.st_size;
    uint8_t *b = malloc(*n ? *n : 1);
    if (b == NULL || (*n > 0 && fread(b, 1, *n, f) != *n))
        abort();
    fclose(f);
    return b;
}

static bool name_ok(const uint8_t *p, size_t n)
{
    if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Lay the input out in pdir; returns true in raw mode. */
static bool lay_out(const uint8_t *in, size_t size)
{
    if (size < 4 || memcmp(in, "KCDR", 4) != 0) {
        write_file(SEG0, in, size);
        return true;
    }
    size_t at = 4;
    for (int k = 0; k < MAX_FILES && at < size; k++) {
        size_t nl = in[at++];
        if (nl > size - at)
            break;
        const uint8_t *name = in + at;
        at += nl;
        if (size - at < 4)
            break;
        size_t cl =
            (size_t)in[at] << 24 | (size_t)in[at + 1] << 16 | (size_t)in[at + 2] << 8 | in[at + 3];
        at += 4;
        if (cl > size - at)
            break;
        if (name_ok(name, nl)) {
            char nm[256];
            memcpy(nm, name, nl);
            nm[nl] = '\0';
            write_file(nm, in + at, cl);
        }
        at += cl;
    }
    return false;
}

typedef struct seen_s {
    int64_t n;
    int64_t last;
} seen_t;

static int on_record(void *arg, const kc_log_record_t *r)
{
    seen_t *s = arg;
    if (r->offset <= s->last)
        fail("replayed offsets do not increase", r->offset, s->last);
    s->last = r->offset;
    s->n++;
    return 0;
}

static kc_plog_t *open_log(bool clean)
{
    kc_plog_opts_t o;
    kc_plog_opts_init(&o);
    o.segment_bytes = 1 << 20;
    o.clean_shutdown = clean;
    kc_plog_t *l = NULL;
    char err[512];
    int rc = kc_plog_open(&l, &quick, data, 0, &o, err, sizeof(err));
    if ((rc == 0) != (l != NULL))
        fail("open's result and its plog disagree", rc, l != NULL);
    if (rc != 0 && err[0] == '\0')
        fail("a failed open without a message", rc, 0);
    return l;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    init_once();
    nftw(data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (mkdir(data, 0755) != 0 || mkdir(pdir, 0755) != 0)
        abort();
    bool raw = lay_out(in, size);

    /* 1. The tools read it without changing anything. */
    (void)kc_log_verify(data, devnull);
    (void)kc_log_dump(devnull, pdir);

    /* 2. After a clean shutdown nothing is truncated. */
    kc_plog_t *l = open_log(true);
    if (l != NULL) {
        seen_t s = {0, -1};
        (void)kc_plog_replay(l, on_record, &s, NULL);
        kc_plog_close(l);
    }
    size_t n = 0;
    uint8_t *now = raw ? read_seg0(&n) : NULL;
    if (raw && (now == NULL || n != size || (n > 0 && memcmp(now, in, n) != 0)))
        fail("a clean open changed the segment", (long long)n, (long long)size);
    free(now);

    /* 3. After a crash only a tail may go, and the log goes on from there. */
    l = open_log(false);
    now = raw ? read_seg0(&n) : NULL;
    if (raw && (now == NULL || n > size || (n > 0 && memcmp(now, in, n) != 0)))
        fail("a crash recovery left more than a prefix", (long long)n, (long long)size);
    free(now);
    if (l == NULL)
        return 0;
    seen_t s = {0, -1};
    int rc = kc_plog_replay(l, on_record, &s, NULL);
    int64_t next = kc_plog_next_offset(l);
    if (rc != 0 || next > INT64_MAX - 16) {
        kc_plog_close(l);
        return 0;
    }
    if (s.last >= next)
        fail("a record at or past the log end offset", s.last, next);
    static const uint8_t key[] = {0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 0};
    kc_log_record_t rec = {.timestamp_ms = 1, .key = key, .key_len = sizeof(key)};
    int64_t base = -1;
    rc = kc_plog_append(l, &rec, 1, 1000, &base);
    if (rc == 0)
        rc = kc_plog_sync(l);
    kc_plog_close(l);
    if (rc != 0)
        return 0; /* a segment kcoord cannot write next to (say, at the offset limit) */
    if (base != next)
        fail("appended at another offset than the log end", base, next);
    l = open_log(false);
    if (l == NULL)
        fail("the log does not open after an append to it", 0, 0);
    seen_t s2 = {0, -1};
    rc = kc_plog_replay(l, on_record, &s2, NULL);
    if (rc != 0 || s2.n != s.n + 1 || s2.last != next)
        fail("the appended record did not come back", s2.n, s.n + 1);
    kc_plog_close(l);
    return 0;
}
