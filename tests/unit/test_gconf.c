/* test_gconf.c - group configs behind the coordinator's door: Kafka's validation and messages,
 * set / delete / validate-only, and their durability in the metadata partition
 * (__kcoord_metadata-0): a restart replays them, a failed fsync keeps memory equal to the log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/stat.h>

#include "coord/coord_int.h"
#include "log/log.h"
#include "util/diag.h"

static atomic_int fail_fsync; /* fsyncs fail with EIO while set */

static int f_fsync(void *ctx, int fd)
{
    (void)ctx;
    if (atomic_load(&fail_fsync))
        return -5; /* -EIO */
    return kc_log_io_posix()->fsync(NULL, fd);
}

static kc_log_io_t faulty;

static void no_join(void *waiter, const kc_join_group_response_t *resp)
{
    (void)waiter, (void)resp;
}
static void no_sync(void *waiter, const kc_sync_group_response_t *resp)
{
    (void)waiter, (void)resp;
}
static const kc_coord_replies_t replies = {no_join, no_sync};

typedef struct fx_s {
    char dir[64];
    kc_conf_t conf;
    kc_catalog_t cat;
    uv_loop_t loop;
    kc_coord_t *c;
    char msg[256];
} fx_t;

static int closed;
static void on_closed(void *arg)
{
    (void)arg;
    closed = 1;
}

static void fx_open(fx_t *f)
{
    f->c = kc_coord_new(&f->loop, &f->conf, &f->cat, &replies, &faulty);
    assert_non_null(f->c);
    for (int i = 0; i < 100000 && kc_coord_loading(f->c) > 0; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
}

static void fx_close(fx_t *f)
{
    closed = 0;
    kc_coord_close(f->c, on_closed, NULL);
    for (int i = 0; i < 100000 && !closed; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_true(closed);
}

static fx_t *fx_new(void)
{
    faulty = *kc_log_io_posix();
    faulty.fsync = f_fsync;
    fx_t *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/kc-gconf-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    kc_conf_init(&f->conf);
    char err[256];
    assert_int_equal(kc_conf_set(&f->conf, "data.dir", f->dir, KC_CONF_SRC_SET, err, sizeof(err)),
                     0);
    assert_int_equal(kc_conf_set(&f->conf, "offsets.topic.num.partitions", "2", KC_CONF_SRC_SET,
                                 err, sizeof(err)),
                     0);
    assert_int_equal(kc_catalog_init(&f->cat, "cluster", NULL, 0), 0);
    uv_loop_init(&f->loop);
    fx_open(f);
    return f;
}

static void fx_free(fx_t *f)
{
    fx_close(f);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    kc_catalog_free(&f->cat);
    kc_conf_free(&f->conf);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
}

/* One operation on group `g`. */
static int16_t alter1(fx_t *f, const char *g, const char *name, int8_t op, const char *value,
                      bool validate_only)
{
    kc_gconf_op_t o = {kc_str_c(name), op, kc_str_c(value)};
    return kc_coord_alter_group_configs(f->c, kc_str_c(g), &o, 1, validate_only, f->msg,
                                        sizeof(f->msg));
}

static int32_t get(fx_t *f, const char *g, int k)
{
    int32_t v[KC_GCONF_N];
    kc_coord_group_configs(f->c, kc_str_c(g), v);
    return v[k];
}

static void count_group(void *arg, kc_str_t g)
{
    (void)g;
    (*(int *)arg)++;
}

static int groups_with_configs(fx_t *f)
{
    int n = 0;
    kc_coord_each_group_config(f->c, count_group, &n);
    return n;
}

/* Kafka 4.4's answers, message for message (as its broker gave them to kafka-configs). */
static void test_validation(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    assert_int_equal(alter1(f, "g", "foo.bar", KC_GCONF_OP_SET, "1", false), 40);
    assert_string_equal(f->msg, "Unknown group config name: foo.bar");
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, "1000", false),
                     40);
    assert_string_equal(
        f->msg, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.");
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "50000", false), 40);
    assert_string_equal(
        f->msg, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.");
    assert_int_equal(
        alter1(f, "g", "consumer.assignment.interval.ms", KC_GCONF_OP_SET, "20000", false), 40);
    assert_string_equal(
        f->msg, "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive.");
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, "abc", false),
                     40);
    assert_string_equal(f->msg, "Invalid value abc for configuration consumer.session.timeout.ms: "
                                "Not a number of type INT");
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_APPEND, "1", false),
                     40);
    assert_string_equal(
        f->msg, "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.");
    assert_int_equal(
        alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SUBTRACT, "1", false), 40);
    assert_string_equal(
        f->msg, "Can't SUBTRACT to key consumer.session.timeout.ms because its type is not LIST.");
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", 9, "1", false), -1);
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, NULL, false),
                     42);
    assert_string_equal(f->msg, "Null value not supported for : consumer.session.timeout.ms");
    assert_int_equal(alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "-5", false),
                     40);
    assert_string_equal(f->msg,
                        "Invalid value -5 for configuration consumer.heartbeat.interval.ms: "
                        "Value must be at least 1");
    kc_gconf_op_t dup[] = {
        {KC_STR_LIT("consumer.session.timeout.ms"), KC_GCONF_OP_SET, KC_STR_LIT("50000")},
        {KC_STR_LIT("consumer.session.timeout.ms"), KC_GCONF_OP_DELETE, KC_STR_NULL}};
    assert_int_equal(
        kc_coord_alter_group_configs(f->c, KC_STR_LIT("g"), dup, 2, false, f->msg, sizeof(f->msg)),
        42);
    assert_string_equal(f->msg, "Error due to duplicate config keys");
    assert_int_equal(alter1(f, "g", "share.session.timeout.ms", KC_GCONF_OP_SET, "45000", false),
                     40);
    assert_non_null(strstr(f->msg, "no share or streams groups"));
    /* The session timeout must stay above the heartbeat interval, the daemon's settings
     * standing in for what the group does not have. */
    char err[128];
    kc_conf_set(&f->conf, "group.consumer.max.heartbeat.interval.ms", "60000", KC_CONF_SRC_SET, err,
                sizeof(err));
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "45000", false), 40);
    assert_string_equal(f->msg, "consumer.session.timeout.ms must be greater than "
                                "consumer.heartbeat.interval.ms");
    /* Nothing was stored by any of them. */
    assert_int_equal(groups_with_configs(f), 0);
    fx_free(f);
}

static void test_set_delete_validate_only(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, "50000", true),
                     0);
    assert_int_equal(get(f, "g", KC_GCONF_SESSION), -1); /* validate only */
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, "50000", false),
                     0);
    assert_int_equal(get(f, "g", KC_GCONF_SESSION), 50000);
    /* Kafka trims a value before it parses it. */
    assert_int_equal(
        alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, " 51000 ", false), 0);
    assert_int_equal(get(f, "g", KC_GCONF_SESSION), 51000);
    kc_gconf_op_t two[] = {
        {KC_STR_LIT("consumer.heartbeat.interval.ms"), KC_GCONF_OP_SET, KC_STR_LIT("6000")},
        {KC_STR_LIT("consumer.assignment.interval.ms"), KC_GCONF_OP_SET, KC_STR_LIT("0")}};
    assert_int_equal(
        kc_coord_alter_group_configs(f->c, KC_STR_LIT("h"), two, 2, false, f->msg, sizeof(f->msg)),
        0);
    assert_int_equal(get(f, "h", KC_GCONF_HEARTBEAT), 6000);
    assert_int_equal(get(f, "h", KC_GCONF_ASSIGNMENT), 0);
    assert_int_equal(groups_with_configs(f), 2);
    /* Deleting what is not set is no error, as in Kafka. */
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_DELETE, NULL, false), 0);
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_DELETE, NULL, false),
                     0);
    assert_int_equal(get(f, "g", KC_GCONF_SESSION), -1);
    assert_int_equal(groups_with_configs(f), 1);
    fx_free(f);
}

/* Configs survive a restart (replayed from __kcoord_metadata-0), deletions too, and a failed
 * fsync leaves memory as the log is. */
static void test_durable(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, "50000", false),
                     0);
    assert_int_equal(
        alter1(f, "h", "consumer.assignment.interval.ms", KC_GCONF_OP_SET, "200", false), 0);
    assert_int_equal(
        alter1(f, "h", "consumer.assignment.interval.ms", KC_GCONF_OP_DELETE, NULL, false), 0);
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "7000", false), 0);
    atomic_store(&fail_fsync, 1);
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "8000", false), 56);
    atomic_store(&fail_fsync, 0);
    assert_int_equal(get(f, "g", KC_GCONF_HEARTBEAT), 7000);
    fx_close(f);

    char path[128];
    struct stat st;
    snprintf(path, sizeof(path), "%s/__kcoord_metadata-0", f->dir);
    assert_int_equal(stat(path, &st), 0);
    fx_open(f);
    assert_int_equal(get(f, "g", KC_GCONF_SESSION), 50000);
    assert_int_equal(get(f, "g", KC_GCONF_HEARTBEAT), 7000);
    assert_int_equal(get(f, "g", KC_GCONF_ASSIGNMENT), -1);
    assert_int_equal(get(f, "h", KC_GCONF_ASSIGNMENT), -1);
    assert_int_equal(groups_with_configs(f), 1);
    /* The write works again once the disk does. */
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "8000", false), 0);
    assert_int_equal(get(f, "g", KC_GCONF_HEARTBEAT), 8000);
    fx_free(f);
}

/* The metadata partition is generic: another room's record type is replayed to it alone. */
typedef struct seen_s {
    int n;
    char last[32];
} seen_t;

static int seen(void *arg, const kc_meta_rec_t *r)
{
    seen_t *s = arg;
    s->n++;
    snprintf(s->last, sizeof(s->last), "%.*s", (int)r->value_len, (const char *)r->value);
    return 0;
}

static void test_meta_records_by_type(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    const uint8_t k1[] = {0, 22, 'a'}, k2[] = {0, 22, 'b'}, k3[] = {0, 23, 'a'};
    kc_meta_rec_t recs[] = {{k1, sizeof(k1), (const uint8_t *)"one", 3},
                            {k2, sizeof(k2), (const uint8_t *)"two", 3},
                            {k3, sizeof(k3), (const uint8_t *)"other", 5}};
    assert_int_equal(kc_meta_append(f->c, recs, 3), 0);
    kc_meta_rec_t del = {k1, sizeof(k1), NULL, 0};
    assert_int_equal(kc_meta_append(f->c, &del, 1), 0);
    fx_close(f);
    fx_open(f);
    seen_t s = {0};
    assert_int_equal(kc_meta_each(f->c, 22, seen, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.last, "two");
    memset(&s, 0, sizeof(s));
    assert_int_equal(kc_meta_each(f->c, 23, seen, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.last, "other");
    kc_meta_rec_t out;
    assert_null(kc_meta_get(f->c, k1, sizeof(k1), &out));
    assert_non_null(kc_meta_get(f->c, k2, sizeof(k2), &out));
    fx_free(f);
}

int main(void)
{
    kc_diag_set_level(KC_DIAG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_set_delete_validate_only),
        cmocka_unit_test(test_durable),
        cmocka_unit_test(test_meta_records_by_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
