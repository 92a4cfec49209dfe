/* test_coord.c - group placement against Java's values, and the partitions' durability:
 * acknowledged only once fsynced, failed writes (EIO, ENOSPC through the I/O table) fail the
 * held replies and bring memory back to what the log holds, a partition whose disk stays full
 * or unreadable backs off and comes back when the disk does, and a new coordinator reloads it;
 * the clean-shutdown marker, and an active segment deleted under a running partition.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/resource.h>

#include "coord/coord_int.h"
#include "log/log.h"
#include "net/net.h"
#include "obs/metrics.h"
#include "obs/obs.h"
#include "util/diag.h"

/* Each id's String.hashCode() and abs(hash) % 50 and % 7 as printed by a Java 17 program
 * (Math.abs, with Integer.MIN_VALUE mapped to 0 as Kafka's Utils.abs does). */
static const struct {
    const char *id;
    int32_t mod50, mod7;
} cases[] = {
    {"", 0, 0},
    {"group", 47, 3},
    {"my-group", 12, 1},
    {"consumer-group-1", 20, 6},
    {"group\xc3\xa9", 6, 0},
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x82\xb0\xe3\x83\xab\xe3\x83\xbc\xe3\x83\x97", 31, 3},
    {"emoji\xf0\x9f\x98\x80group", 48, 0}, /* a surrogate pair */
    {"polygenelubricants", 0, 0},          /* hashCode == INT32_MIN */
    {"GydZG_", 0, 0},                      /* hashCode == INT32_MIN */
    {"DESIGNING WORKHOUSES", 0, 0},        /* hashCode == INT32_MIN */
};

static void test_java_hash_placement(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kc_str_t id = kc_str_c(cases[i].id);
        assert_int_equal(kc_partition_for(id, 50), cases[i].mod50);
        assert_int_equal(kc_partition_for(id, 7), cases[i].mod7);
        assert_int_equal(kc_partition_for(id, 1), 0);
    }
}

/* Invalid UTF-8 decodes to U+FFFD as Java's String(bytes, UTF_8) does: Java gives
 * "a\xffb".hashCode() == 2124838 and "x\xc3".hashCode() == 69253. */
static void test_invalid_utf8(void **state)
{
    (void)state;
    assert_int_equal(kc_partition_for(kc_str_c("a\xff"
                                               "b"),
                                      1000003),
                     2124838 % 1000003);
    assert_int_equal(kc_partition_for(kc_str_c("x\xc3"), 1000003), 69253 % 1000003);
}

/* ---- Durability through a fault-injecting I/O table --------------------------------------- */

static atomic_int fail_fsync;  /* next fsyncs fail with EIO while set */
static atomic_int fail_pwrite; /* next pwrites fail with ENOSPC while set */
static atomic_int fail_open;   /* opens fail with EIO while set (an unreadable disk) */
static atomic_int pwrites;     /* pwrites tried */

static int f_open(void *ctx, const char *path, int flags, int mode)
{
    (void)ctx;
    if (atomic_load(&fail_open))
        return -EIO;
    return kc_log_io_posix()->open(NULL, path, flags, mode);
}
static int64_t f_pread(void *ctx, int fd, void *buf, size_t n, int64_t off)
{
    (void)ctx;
    return kc_log_io_posix()->pread(NULL, fd, buf, n, off);
}
static int64_t f_pwrite(void *ctx, int fd, const void *buf, size_t n, int64_t off)
{
    (void)ctx;
    atomic_fetch_add(&pwrites, 1);
    if (atomic_load(&fail_pwrite))
        return -ENOSPC;
    return kc_log_io_posix()->pwrite(NULL, fd, buf, n, off);
}
static int f_fsync(void *ctx, int fd)
{
    (void)ctx;
    if (atomic_load(&fail_fsync))
        return -EIO;
    return kc_log_io_posix()->fsync(NULL, fd);
}
static int f_ftruncate(void *ctx, int fd, int64_t size)
{
    (void)ctx;
    return kc_log_io_posix()->ftruncate(NULL, fd, size);
}
static int64_t f_fsize(void *ctx, int fd)
{
    (void)ctx;
    return kc_log_io_posix()->fsize(NULL, fd);
}
static int f_close(void *ctx, int fd)
{
    (void)ctx;
    return kc_log_io_posix()->close(NULL, fd);
}
static int f_rename(void *ctx, const char *a, const char *b)
{
    (void)ctx;
    return kc_log_io_posix()->rename(NULL, a, b);
}
static int f_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return kc_log_io_posix()->unlink(NULL, path);
}
static int f_mkdir(void *ctx, const char *path, int mode)
{
    (void)ctx;
    return kc_log_io_posix()->mkdir(NULL, path, mode);
}
static int f_listdir(void *ctx, const char *path, int (*fn)(void *, const char *), void *arg)
{
    (void)ctx;
    return kc_log_io_posix()->listdir(NULL, path, fn, arg);
}

static const kc_log_io_t faulty = {NULL,        f_open,    f_pread, f_pwrite, f_fsync,
                                   f_ftruncate, f_fsize,   f_close, f_rename, f_unlink,
                                   f_mkdir,     f_listdir, NULL,    NULL};

static void no_join(void *waiter, const kc_join_group_response_t *resp)
{
    (void)waiter;
    (void)resp;
}
static void no_sync(void *waiter, const kc_sync_group_response_t *resp)
{
    (void)waiter;
    (void)resp;
}
static const kc_coord_replies_t replies = {no_join, no_sync};

typedef struct held_s {
    int released; /* 0 waiting, 1 ok, 2 failed */
} held_t;

static void on_release(void *arg, bool ok)
{
    ((held_t *)arg)->released = ok ? 1 : 2;
}

/* Run the loop until *flag is non-zero (bounded). */
static void run_until(uv_loop_t *loop, const int *flag)
{
    for (int i = 0; i < 100000 && !*flag; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_true(*flag);
}

/* `conf` with its defaults and then sets[0..n) (key, value) applied, each of which must be
 * accepted. */
static void conf_with(kc_conf_t *conf, const char *const sets[][2], size_t n)
{
    char err[256];
    kc_conf_init(conf);
    for (size_t i = 0; i < n; i++)
        if (kc_conf_set(conf, sets[i][0], sets[i][1], KC_CONF_SRC_SET, err, sizeof(err)) != 0)
            fail_msg("%s=%s: %s", sets[i][0], sets[i][1], err);
}

static void run_until_loaded(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p)
{
    for (int i = 0; i < 100000 && (kc_coord_loading(c) > 0 || p->state != KC_PART_ACTIVE); i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(p->state, KC_PART_ACTIVE);
}

/* Commit `offset` for g/t/0 at time `ts` and wait for the held reply: returns 1 (durable) or 2
 * (failed). */
static int commit_at(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p, int64_t offset, int64_t ts)
{
    kc_offset_t o = {.offset = offset,
                     .leader_epoch = -1,
                     .metadata = KC_STR_EMPTY,
                     .commit_ts_ms = ts,
                     .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &o), 0);
    held_t h = {0};
    int32_t idx = p->index;
    assert_int_equal(kc_coord_hold(c, &idx, 1, on_release, &h), 1);
    run_until(loop, &h.released);
    return h.released;
}

static int commit_and_wait(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p, int64_t offset)
{
    return commit_at(loop, c, p, offset, 1000);
}

static int64_t committed(kc_partition_t *p)
{
    const kc_offset_t *o = kc_offsets_get(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0);
    return o ? o->offset : -1;
}

static int closed;
static void on_closed(void *arg)
{
    (void)arg;
    closed = 1;
}

static void test_durable_acks_and_failed_writes(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-coord-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir}, {"offsets.topic.num.partitions", "2"}};
    conf_with(&conf, sets, 2);
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);

    kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, &faulty);
    assert_non_null(c);
    kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
    assert_int_equal(kc_partition_error(p), 14); /* COORDINATOR_LOAD_IN_PROGRESS */
    run_until_loaded(&loop, c, p);
    assert_int_equal(kc_partition_error(p), 0);

    /* A commit is acknowledged once fsynced. */
    assert_int_equal(commit_and_wait(&loop, c, p, 1), 1);
    assert_int_equal(committed(p), 1);

    /* fsync fails (EIO): the reply fails, the partition reloads what is durable. */
    atomic_store(&fail_fsync, 1);
    assert_int_equal(commit_and_wait(&loop, c, p, 2), 2);
    atomic_store(&fail_fsync, 0);
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 1);

    /* The disk is back: commits work again. */
    assert_int_equal(commit_and_wait(&loop, c, p, 3), 1);
    assert_int_equal(committed(p), 3);

    /* The write itself fails (ENOSPC): same. */
    atomic_store(&fail_pwrite, 1);
    assert_int_equal(commit_and_wait(&loop, c, p, 4), 2);
    atomic_store(&fail_pwrite, 0);
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 3);

    /* Nothing to wait for when nothing was emitted. */
    held_t h = {0};
    int32_t idx = p->index;
    assert_int_equal(kc_coord_hold(c, &idx, 1, on_release, &h), 0);

    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    /* A new coordinator on the same directory loads exactly the durable state. */
    c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    p = kc_coord_partition(c, KC_STR_LIT("g"));
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 3);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* commit_and_wait, but turning the loop without blocking, so that no timer that comes due
 * while it would block in poll runs after the reply: what the reply left is still there. */
static int commit_and_wait_nowait(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p, int64_t offset,
                                  int64_t ts)
{
    kc_offset_t o = {.offset = offset,
                     .leader_epoch = -1,
                     .metadata = KC_STR_EMPTY,
                     .commit_ts_ms = ts,
                     .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &o), 0);
    held_t h = {0};
    int32_t idx = p->index;
    assert_int_equal(kc_coord_hold(c, &idx, 1, on_release, &h), 1);
    uint64_t deadline = uv_hrtime() + 10000000000ull;
    while (!h.released && uv_hrtime() < deadline)
        uv_run(loop, UV_RUN_NOWAIT);
    return h.released;
}

/* Run the loop until p is in `state` (bounded by 100 000 turns). */
static void run_until_state(uv_loop_t *loop, kc_partition_t *p, int state)
{
    for (int i = 0; i < 100000 && p->state != state; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(p->state, state);
}

/* A disk that stays full, then recovers: the partition backs off (FAILED, NOT_COORDINATOR)
 * instead of trying every write, and comes back, reads and writes, once the disk does; a
 * partition whose log cannot be read at start is retried too and comes back. */

/* The rate limiter's clock, stopped long after any line written so far: the first line of a
 * call site is written, every repeat falls in its first interval. */
static int64_t frozen_ms(void)
{
    return INT64_MAX / 4;
}

/* Point stderr at a temporary file; release_stderr restores it and returns what was written
 * (malloc'd, NUL-terminated). */
static int capture_stderr(void)
{
    char path[] = "/tmp/kc-coord-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    return saved;
}

static char *release_stderr(int saved)
{
    fflush(stderr);
    off_t n = lseek(2, 0, SEEK_END);
    assert_true(n >= 0);
    char *out = malloc((size_t)n + 1);
    assert_non_null(out);
    assert_int_equal(pread(2, out, (size_t)n, 0), n);
    out[n] = '\0';
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    return out;
}

/* Lines of `s` holding `needle`, not counting the summaries of lines dropped earlier. */
static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[2048];
        snprintf(line, sizeof(line), "%.*s", (int)len, p);
        n += strstr(line, needle) != NULL && strstr(line, " ... repeated ") == NULL;
        p += len + (end != NULL);
    }
    return n;
}

static void test_partition_recovers(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-coord-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir}, {"offsets.topic.num.partitions", "1"}};
    conf_with(&conf, sets, 2);
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);

    kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, &faulty);
    kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
    run_until_loaded(&loop, c, p);
    assert_int_equal(commit_and_wait(&loop, c, p, 1), 1);

    /* The disk fills. The first failure reloads at once (it may be a passing error)... */
    atomic_store(&fail_pwrite, 1);
    assert_int_equal(commit_and_wait(&loop, c, p, 2), 2);
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 1);
    /* ...the next one, with no durable write between, takes the partition out for a backoff. */
    assert_int_equal(commit_and_wait_nowait(&loop, c, p, 3, 1000), 2);
    assert_int_equal(p->state, KC_PART_FAILED);
    assert_int_equal(kc_partition_error(p), 16); /* NOT_COORDINATOR */
    /* Through the backoffs (100, 200, 400 ms, ...), each reload is tried with one write. The
     * lines each reload writes are rate-limited: with the limiter's clock stopped, one each. */
    int tried0 = atomic_load(&pwrites);
    kc_diag_set_repeat_clock(frozen_ms);
    int log_fd = capture_stderr();
    for (int round = 0; round < 3; round++) {
        run_until_state(&loop, p, KC_PART_ACTIVE);
        assert_int_equal(committed(p), 1);
        assert_int_equal(commit_and_wait_nowait(&loop, c, p, 10 + round, 1000), 2);
        assert_int_equal(p->state, KC_PART_FAILED);
    }
    char *lines = release_stderr(log_fd);
    kc_diag_set_repeat_clock(NULL);
    assert_int_equal(count_lines(lines, "is served again"), 1);
    assert_int_equal(count_lines(lines, "partition 0: reloaded 1 classic groups"), 1);
    assert_int_equal(count_lines(lines, "partition 0: loaded"), 0);
    free(lines);
    assert_true(atomic_load(&pwrites) - tried0 <= 3 * 4); /* a few pwrites per attempt at most */

    /* The disk is back: the partition reloads on its own, with what is durable. */
    atomic_store(&fail_pwrite, 0);
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 1);
    assert_int_equal(commit_and_wait(&loop, c, p, 4), 1);
    assert_int_equal(committed(p), 4);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    /* A log that cannot be opened at start (EIO): FAILED, then retried until the disk reads
     * again, and loaded with everything durable. */
    atomic_store(&fail_open, 1);
    c = kc_coord_new(&loop, &conf, &cat, &replies, &faulty);
    p = kc_coord_partition(c, KC_STR_LIT("g"));
    run_until_state(&loop, p, KC_PART_FAILED);
    assert_int_equal(kc_partition_error(p), 16);
    atomic_store(&fail_open, 0);
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 4);
    assert_int_equal(commit_and_wait(&loop, c, p, 5), 1);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static int count_segments(const char *dir, int32_t partition)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/__consumer_offsets-%d", dir, partition);
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".log") == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* The cleaner compacts a partition's closed segments in the background, and the compacted log
 * loads the same state. */
static void test_cleaner_compacts(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-clean-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir},
                             {"offsets.topic.num.partitions", "1"},
                             {"offsets.topic.segment.bytes", "1024"},
                             {"offsets.topic.compression.codec", "none"},
                             {"log.cleaner.backoff.ms", "20"}};
    conf_with(&conf, sets, sizeof(sets) / sizeof(sets[0]));
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
    run_until_loaded(&loop, c, p);
    for (int64_t i = 1; i <= 200; i++)
        assert_int_equal(commit_and_wait(&loop, c, p, i), 1);
    /* 200 records of about 100 bytes in 1 KiB segments would be some 20 segments; wait
     * (bounded) for the cleaner, which runs every 20 ms, to merge the closed ones. */
    uint64_t deadline = uv_now(&loop) + 10000;
    while (count_segments(dir, p->index) > 3 && uv_now(&loop) < deadline)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(count_segments(dir, p->index) <= 3);
    assert_int_equal(committed(p), 200);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    p = kc_coord_partition(c, KC_STR_LIT("g"));
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 200);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The retention scan removes expired offsets one partition per loop turn, with the poll in
 * between, not every partition's at once; the commit timestamps it compares are wall-clock
 * ones (a commit from 1970 has long expired). */
static void test_retention_scan_in_slices(void **state)
{
    (void)state;
    enum { NP = 4 };
    char dir[] = "/tmp/kc-retain-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir},
                             {"offsets.topic.num.partitions", "4"},
                             {"offsets.retention.check.interval.ms", "20"},
                             {"log.flush.policy", "never"}};
    conf_with(&conf, sets, sizeof(sets) / sizeof(sets[0]));
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    for (int i = 0; i < 100000 && kc_coord_loading(c) > 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(kc_coord_loading(c), 0);
    /* One group per partition, each with an offset committed at wall-clock time 1000. */
    char groups[NP][16] = {{0}};
    int found = 0;
    for (int i = 0; found < NP && i < 1000; i++) {
        char id[16];
        snprintf(id, sizeof(id), "g%d", i);
        int32_t part = kc_partition_for(kc_str_c(id), NP);
        if (groups[part][0] != '\0')
            continue;
        snprintf(groups[part], sizeof(groups[part]), "%s", id);
        found++;
    }
    assert_int_equal(found, NP);
    for (int i = 0; i < NP; i++) {
        kc_partition_t *p = kc_coord_partition_at(c, i);
        kc_offset_t o = {.offset = 5,
                         .leader_epoch = -1,
                         .metadata = KC_STR_EMPTY,
                         .commit_ts_ms = 1000,
                         .expire_ts_ms = -1};
        assert_int_equal(kc_offsets_commit(p->offsets, kc_str_c(groups[i]), KC_STR_LIT("t"), 0, &o),
                         0);
    }
    /* Each loop turn removes at most one partition's. */
    int gone = 0;
    for (int turn = 0; turn < 100000 && gone < NP; turn++) {
        uv_run(&loop, UV_RUN_ONCE);
        int now_gone = 0;
        for (int i = 0; i < NP; i++)
            now_gone +=
                kc_offsets_count(kc_coord_partition_at(c, i)->offsets, kc_str_c(groups[i])) == 0;
        assert_true(now_gone - gone <= 1);
        gone = now_gone;
    }
    assert_int_equal(gone, NP);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);
    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- Timers judged at the time of the last poll ------------------------------------------- */

typedef struct stall_s {
    kc_coord_t *c;
    kc_partition_t *p;
    int fds[2], slow[2];
    uv_poll_t readable, stall;
    char member[128];
    int16_t rejoin_error; /* -1 until the rejoin was handled */
    int closed;
} stall_t;

static int join_v4(stall_t *st, const char *member, kc_arena_t *a, kc_join_group_response_t *r)
{
    kc_join_group_request_t q;
    kc_join_group_request_init(&q);
    q.group_id = KC_STR_LIT("g");
    q.session_timeout_ms = 500;
    q.rebalance_timeout_ms = 500;
    q.member_id = kc_str_c(member);
    q.group_instance_id = KC_STR_NULL;
    q.protocol_type = KC_STR_LIT("consumer");
    kc_join_group_request_protocol_t pr = {KC_STR_LIT("range"), {(const uint8_t *)"m", 1}};
    q.protocols.v = &pr;
    q.protocols.n = 1;
    q.reason = KC_STR_NULL;
    return kc_gm_join(st->p->groups, kc_coord_time(st->c), 4, &q, KC_STR_LIT("c"), KC_STR_LIT("/h"),
                      st, a, r);
}

/* The "request": the pending member comes back with its id. */
static void on_readable(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    stall_t *st = h->data;
    char b;
    assert_int_equal(read(st->fds[0], &b, 1), 1);
    uv_poll_stop(h);
    kc_arena_t a;
    kc_arena_init(&a);
    kc_join_group_response_t r;
    int rc = join_v4(st, st->member, &a, &r);
    st->rejoin_error = rc == KC_GM_PARKED ? 0 : r.error_code;
    kc_arena_free(&a);
}

/* A slow request holds the loop up (after its poll, before the next timers): the rejoin
 * arrives during the hold-up, before the member's deadline, and the hold-up ends after it. */
static void on_stall(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    stall_t *st = h->data;
    uv_poll_stop(h);
    assert_int_equal(write(st->fds[1], "x", 1), 1);
    usleep(800 * 1000);
}

static void on_stall_closed(uv_handle_t *h)
{
    stall_t *st = h->data;
    st->closed++;
}

static void test_timers_judged_after_poll(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-stall-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir},
                             {"offsets.topic.num.partitions", "1"},
                             {"group.min.session.timeout.ms", "100"},
                             {"group.initial.rebalance.delay.ms", "0"},
                             {"log.flush.policy", "never"}};
    conf_with(&conf, sets, sizeof(sets) / sizeof(sets[0]));
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    stall_t st = {.rejoin_error = -1};
    st.c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    st.p = kc_coord_partition(st.c, KC_STR_LIT("g"));
    run_until_loaded(&loop, st.c, st.p);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, st.fds), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, st.slow), 0);
    uv_poll_init(&loop, &st.readable, st.fds[0]);
    st.readable.data = &st;
    uv_poll_start(&st.readable, UV_READABLE, on_readable);
    uv_poll_init(&loop, &st.stall, st.slow[0]);
    st.stall.data = &st;

    /* A KIP-394 pending member with a 500 ms session. */
    kc_arena_t a;
    kc_arena_init(&a);
    kc_join_group_response_t r;
    assert_int_equal(join_v4(&st, "", &a, &r), KC_GM_ANSWERED);
    assert_int_equal(r.error_code, 79); /* MEMBER_ID_REQUIRED */
    snprintf(st.member, sizeof(st.member), "%.*s", (int)r.member_id.len, r.member_id.p);
    kc_arena_free(&a);
    uv_poll_start(&st.stall, UV_READABLE, on_stall);
    assert_int_equal(write(st.slow[1], "x", 1), 1);
    for (int i = 0; i < 100000 && st.rejoin_error < 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    /* Its deadline had passed when the loop got going again, but its rejoin had arrived
     * before: it is handled first, and the member is not expired. */
    assert_int_equal(st.rejoin_error, 0);

    uv_close((uv_handle_t *)&st.readable, on_stall_closed);
    uv_close((uv_handle_t *)&st.stall, on_stall_closed);
    close(st.fds[0]);
    close(st.fds[1]);
    close(st.slow[0]);
    close(st.slow[1]);
    closed = 0;
    kc_coord_close(st.c, on_closed, NULL);
    run_until(&loop, &closed);
    for (int i = 0; i < 1000 && st.closed < 2; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Settings that meet: a record larger than offsets.topic.segment.bytes at its minimum (offset
 * metadata up to offset.metadata.max.bytes, 4096 by default, is larger than a 1024-byte
 * segment) gets a segment of its own, and loads back. */
static void test_record_larger_than_segment(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-coord-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir},
                             {"offsets.topic.num.partitions", "1"},
                             {"offsets.topic.segment.bytes", "1024"},
                             {"offsets.topic.compression.codec", "none"}};
    conf_with(&conf, sets, sizeof(sets) / sizeof(sets[0]));
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    static char meta[4096];
    memset(meta, 'm', sizeof(meta));
    for (int round = 0; round < 2; round++) {
        kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
        kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
        run_until_loaded(&loop, c, p);
        if (round == 0) {
            for (int32_t part = 0; part < 3; part++) {
                kc_offset_t o = {.offset = 7 + part,
                                 .leader_epoch = -1,
                                 .metadata = {meta, (int32_t)sizeof(meta)},
                                 .commit_ts_ms = kc_coord_time(c).wall_ms,
                                 .expire_ts_ms = -1};
                assert_int_equal(
                    kc_offsets_commit(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), part, &o), 0);
                held_t h = {0};
                int32_t idx = p->index;
                assert_int_equal(kc_coord_hold(c, &idx, 1, on_release, &h), 1);
                run_until(&loop, &h.released);
                assert_int_equal(h.released, 1);
            }
            assert_true(count_segments(dir, p->index) >= 3);
        }
        for (int32_t part = 0; part < 3; part++) {
            const kc_offset_t *o =
                kc_offsets_get(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), part);
            assert_non_null(o);
            assert_int_equal(o->offset, 7 + part);
            assert_int_equal(o->metadata.len, (int32_t)sizeof(meta));
        }
        closed = 0;
        kc_coord_close(c, on_closed, NULL);
        run_until(&loop, &closed);
    }
    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- Every numeric setting at its bounds ------------------------------------------------- */

static void no_request(void *app, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                       size_t len)
{
    (void)app;
    (void)frame;
    (void)len;
    (void)conn;
    kc_slot_close(slot, "not expected in this test");
}

static int server_stopped;
static void on_server_stopped(void *arg)
{
    (void)arg;
    server_stopped = 1;
}

/* Start what `conf` configures on a fresh data directory: the listener (kc_server), and the
 * coordinator until its partitions are loaded; commit to group g, wait until it is durable,
 * close; then a second coordinator on the same directory must load that commit. */
static void run_with(const kc_conf_t *conf, const char *what)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    kc_server_opts_t opts = {
        .max_request_bytes = conf->socket_request_max_bytes,
        .idle_ms = conf->connections_max_idle_ms,
        .max_queued = conf->queued_max_requests,
        .on_request = no_request,
    };
    kc_server_t *srv = kc_server_new(&loop, &opts);
    assert_non_null(srv);
    int port = 0;
    assert_int_equal(kc_server_listen(srv, "127.0.0.1", 0, &port), 0);
    server_stopped = 0;
    kc_server_shutdown(srv, on_server_stopped, NULL);
    run_until(&loop, &server_stopped);
    kc_server_free(srv);

    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", conf->topics, conf->n_topics), 0);
    for (int round = 0; round < 2; round++) {
        kc_coord_t *c = kc_coord_new(&loop, conf, &cat, &replies, NULL);
        assert_non_null(c);
        kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
        for (int i = 0; i < 1000000 && kc_coord_loading(c) > 0; i++)
            uv_run(&loop, UV_RUN_ONCE);
        if (p->state != KC_PART_ACTIVE)
            fail_msg("%s: partition %d is not served (state %d)", what, p->index, p->state);
        for (int32_t i = 0; i < kc_coord_partitions(c); i++)
            assert_int_equal(kc_coord_partition_at(c, i)->state, KC_PART_ACTIVE);
        if (round == 0) {
            /* Committed now, so that offsets retention (checked every millisecond at the
             * minimum) keeps it; without blocking, since with log.flush.interval.ms at its
             * maximum the reply comes before the loop sleeps and nothing wakes it soon. */
            if (commit_and_wait_nowait(&loop, c, p, 42, kc_coord_time(c).wall_ms) != 1)
                fail_msg("%s: a commit was not made durable", what);
        } else if (committed(p) != 42) {
            fail_msg("%s: the commit was not reloaded", what);
        }
        closed = 0;
        kc_coord_close(c, on_closed, NULL);
        run_until(&loop, &closed);
    }
    kc_catalog_free(&cat);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Every value the settings table accepts for a number runs, or is refused at start with the
 * setting's name: each numeric setting at its minimum and at its maximum (the others at their
 * defaults, one __consumer_offsets partition) either fails kc_conf_check or
 * kc_conf_check_files with a message that names it, or starts the listener and the coordinator
 * and keeps a commit across a restart. */
static void test_settings_at_bounds(void **state)
{
    (void)state;
    struct rlimit nofile;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile), 0);
    if (nofile.rlim_cur < nofile.rlim_max) { /* as kcoord's main does */
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile), 0);
    }
    int ran = 0, refused = 0;
    for (size_t i = 0; i < KC_CONF_N_SETTINGS; i++) {
        const char *name;
        int64_t bound[2];
        if (!kc_conf_numeric(i, &name, &bound[0], &bound[1]))
            continue;
        for (int b = 0; b < 2; b++) {
            char dir[] = "/tmp/kc-bounds-XXXXXX";
            assert_non_null(mkdtemp(dir));
            kc_conf_t conf;
            kc_conf_init(&conf);
            char err[512], val[32], what[160];
            snprintf(val, sizeof(val), "%lld", (long long)bound[b]);
            snprintf(what, sizeof(what), "%s=%s", name, val);
            assert_int_equal(kc_conf_set(&conf, "data.dir", dir, KC_CONF_SRC_SET, err, sizeof(err)),
                             0);
            assert_int_equal(kc_conf_set(&conf, "offsets.topic.num.partitions", "1",
                                         KC_CONF_SRC_SET, err, sizeof(err)),
                             0);
            if (strcmp(name, "log.flush.interval.ms") == 0)
                assert_int_equal(kc_conf_set(&conf, "log.flush.policy", "interval", KC_CONF_SRC_SET,
                                             err, sizeof(err)),
                                 0);
            if (kc_conf_set(&conf, name, val, KC_CONF_SRC_SET, err, sizeof(err)) != 0)
                fail_msg("%s: the table refuses its own bound: %s", what, err);
            if (kc_conf_check(&conf, err, sizeof(err)) != 0 ||
                kc_conf_check_files(&conf, (uint64_t)nofile.rlim_cur, err, sizeof(err)) != 0) {
                if (strstr(err, name) == NULL)
                    fail_msg("%s: refused without naming the setting: %s", what, err);
                refused++;
            } else {
                run_with(&conf, what);
                ran++;
            }
            kc_conf_free(&conf);
            char cmd[300];
            snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
            assert_int_equal(system(cmd), 0);
        }
    }
    print_message("settings at their bounds: %d ran, %d refused at start with the key's name\n",
                  ran, refused);
    assert_true(ran > refused);
}

/* Kafka's clean-shutdown marker decides how a partition's bad bytes are read, and an active
 * segment deleted under a running partition takes only that partition out of service. */
static void test_clean_shutdown_and_lost_segment(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-lost-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    const char *sets[][2] = {{"data.dir", dir}, {"offsets.topic.num.partitions", "2"}};
    conf_with(&conf, sets, 2);
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster", NULL, 0), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    char marker[300], seg[300];
    snprintf(marker, sizeof(marker), "%s/.kafka_cleanshutdown", dir);
    struct stat st;

    kc_coord_t *c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    kc_partition_t *p = kc_coord_partition(c, KC_STR_LIT("g"));
    run_until_loaded(&loop, c, p);
    assert_int_equal(commit_and_wait(&loop, c, p, 1), 1);
    assert_int_equal(commit_and_wait(&loop, c, p, 2), 1);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);
    assert_int_equal(stat(marker, &st), 0); /* a clean shutdown */

    /* A flipped byte in the last batch after a clean shutdown: that partition is not served,
     * nothing is truncated, the other partition serves. */
    snprintf(seg, sizeof(seg), "%s/__consumer_offsets-%d/00000000000000000000.log", dir,
             (int)kc_partition_for(KC_STR_LIT("g"), 2));
    FILE *f = fopen(seg, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -2, SEEK_END), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, -2, SEEK_END), 0);
    fputc(ch ^ 0x10, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(stat(seg, &st), 0);
    off_t size = st.st_size;
    c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    assert_int_not_equal(stat(marker, &st), 0); /* taken at start */
    p = kc_coord_partition(c, KC_STR_LIT("g"));
    kc_partition_t *other = kc_coord_partition_at(c, 1 - p->index);
    run_until_loaded(&loop, c, other);
    for (int i = 0; i < 100000 && kc_coord_loading(c) > 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(p->state, KC_PART_FAILED);
    assert_int_equal(kc_partition_error(p), 16); /* NOT_COORDINATOR: retriable */
    assert_int_equal(stat(seg, &st), 0);
    assert_int_equal(st.st_size, size);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    /* After a crash (no marker) the same bytes are a torn tail: the last batch goes. */
    assert_int_equal(unlink(marker), 0);
    c = kc_coord_new(&loop, &conf, &cat, &replies, NULL);
    kc_coord_set_events(c, &kc_obs_coord_events); /* the segment lost is counted */
    p = kc_coord_partition(c, KC_STR_LIT("g"));
    other = kc_coord_partition_at(c, 1 - p->index);
    run_until_loaded(&loop, c, p);
    assert_int_equal(committed(p), 1);

    /* The active segment deleted under the running partition: the next commit fails, and the
     * partition stays out of service (no reload from what is left), the other one serves. */
    uint64_t lost0 = kc_obs.log_segments_lost;
    assert_int_equal(commit_and_wait(&loop, c, p, 3), 1);
    assert_int_equal(unlink(seg), 0);
    assert_int_equal(commit_and_wait(&loop, c, p, 4), 2);
    assert_int_equal(kc_obs.log_segments_lost, lost0 + 1);
    for (int i = 0; i < 100; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(p->state, KC_PART_FAILED);
    assert_int_equal(kc_coord_loading(c), 0);
    assert_int_equal(other->state, KC_PART_ACTIVE);
    closed = 0;
    kc_coord_close(c, on_closed, NULL);
    run_until(&loop, &closed);

    assert_int_equal(uv_loop_close(&loop), 0);
    kc_catalog_free(&cat);
    kc_conf_free(&conf);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_hash_placement),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_durable_acks_and_failed_writes),
        cmocka_unit_test(test_partition_recovers),
        cmocka_unit_test(test_cleaner_compacts),
        cmocka_unit_test(test_retention_scan_in_slices),
        cmocka_unit_test(test_timers_judged_after_poll),
        cmocka_unit_test(test_record_larger_than_segment),
        cmocka_unit_test(test_settings_at_bounds),
        cmocka_unit_test(test_clean_shutdown_and_lost_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
