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
#include "coord_fixture.h"
#include "log/log.h"
#include "util/diag.h"

/* One operation on group `g`. */
static int16_t alter1(fx_t *f, const char *g, const char *name, int8_t op, const char *value,
                      bool validate_only)
{
    kc_gconf_op_t o = {kc_str_c(name), op, kc_str_c(value)};
    return kc_coord_alter_group_configs(f->c, kc_str_c(g), &o, 1, validate_only, f->msg,
                                        sizeof(f->msg), NULL, NULL);
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
    fx_t *f = fx_new("kc-gconf");
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
    assert_int_equal(kc_coord_alter_group_configs(f->c, KC_STR_LIT("g"), dup, 2, false, f->msg,
                                                  sizeof(f->msg), NULL, NULL),
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
    fx_t *f = fx_new("kc-gconf");
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
    assert_int_equal(kc_coord_alter_group_configs(f->c, KC_STR_LIT("h"), two, 2, false, f->msg,
                                                  sizeof(f->msg), NULL, NULL),
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
    fx_t *f = fx_new("kc-gconf");
    assert_int_equal(alter1(f, "g", "consumer.session.timeout.ms", KC_GCONF_OP_SET, "50000", false),
                     0);
    assert_int_equal(
        alter1(f, "h", "consumer.assignment.interval.ms", KC_GCONF_OP_SET, "200", false), 0);
    assert_int_equal(
        alter1(f, "h", "consumer.assignment.interval.ms", KC_GCONF_OP_DELETE, NULL, false), 0);
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "7000", false), 0);
    fx_fail_fsync(true);
    assert_int_equal(
        alter1(f, "g", "consumer.heartbeat.interval.ms", KC_GCONF_OP_SET, "8000", false), 56);
    fx_fail_fsync(false);
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
    fx_t *f = fx_new("kc-gconf");
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
