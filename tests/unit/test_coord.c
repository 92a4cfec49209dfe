/* test_coord.c - group placement against Java's values, and the partitions' durability:
 * acknowledged only once fsynced, failed writes (EIO, ENOSPC through the I/O table) fail the
 * held replies and bring memory back to what the log holds, and a new coordinator reloads it;
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

#include "coord/coord.h"
#include "log/log.h"
#include "obs/metrics.h"

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

static int f_open(void *ctx, const char *path, int flags, int mode)
{
    (void)ctx;
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

static void run_until_loaded(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p)
{
    for (int i = 0; i < 100000 && (kc_coord_loading(c) > 0 || p->state != KC_PART_ACTIVE); i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(p->state, KC_PART_ACTIVE);
}

/* Commit `offset` for g/t/0 and wait for the held reply: returns 1 (durable) or 2 (failed). */
static int commit_and_wait(uv_loop_t *loop, kc_coord_t *c, kc_partition_t *p, int64_t offset)
{
    kc_offset_t o = {.offset = offset,
                     .leader_epoch = -1,
                     .metadata = KC_STR_EMPTY,
                     .commit_ts_ms = 1000,
                     .expire_ts_ms = -1};
    assert_int_equal(kc_offsets_commit(p->offsets, KC_STR_LIT("g"), KC_STR_LIT("t"), 0, &o), 0);
    held_t h = {0};
    int32_t idx = p->index;
    assert_true(kc_coord_hold(c, &idx, 1, on_release, &h));
    run_until(loop, &h.released);
    return h.released;
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
    kc_conf_init(&conf);
    char err[256];
    assert_int_equal(kc_conf_set(&conf, "data.dir", dir, KC_CONF_SRC_SET, err, sizeof(err)), 0);
    assert_int_equal(
        kc_conf_set(&conf, "offsets.topic.num.partitions", "2", KC_CONF_SRC_SET, err, sizeof(err)),
        0);
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
    assert_false(kc_coord_hold(c, &idx, 1, on_release, &h));

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
    kc_conf_init(&conf);
    char err[256];
    const char *sets[][2] = {{"data.dir", dir},
                             {"offsets.topic.num.partitions", "1"},
                             {"offsets.topic.segment.bytes", "1024"},
                             {"offsets.topic.compression.codec", "none"},
                             {"log.cleaner.backoff.ms", "20"}};
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
        assert_int_equal(
            kc_conf_set(&conf, sets[i][0], sets[i][1], KC_CONF_SRC_SET, err, sizeof(err)), 0);
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

/* Kafka's clean-shutdown marker decides how a partition's bad bytes are read, and an active
 * segment deleted under a running partition takes only that partition out of service. */
static void test_clean_shutdown_and_lost_segment(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-lost-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kc_conf_t conf;
    kc_conf_init(&conf);
    char err[256];
    assert_int_equal(kc_conf_set(&conf, "data.dir", dir, KC_CONF_SRC_SET, err, sizeof(err)), 0);
    assert_int_equal(
        kc_conf_set(&conf, "offsets.topic.num.partitions", "2", KC_CONF_SRC_SET, err, sizeof(err)),
        0);
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
        cmocka_unit_test(test_cleaner_compacts),
        cmocka_unit_test(test_clean_shutdown_and_lost_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
