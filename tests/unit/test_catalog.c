/* test_catalog.c - the topic catalog and meta.properties: lookups, stable ids, cluster id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coord/coord.h"
#include "log/meta.h"

static void test_lookup_and_ids(void **state)
{
    (void)state;
    kc_conf_topic_t topics[] = {{"orders", 3}, {"events", 1}};
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster-A", topics, 2), 0);
    const kc_topic_t *o = kc_catalog_find(&cat, KC_STR_LIT("orders"));
    assert_non_null(o);
    assert_int_equal(o->partitions, 3);
    assert_null(kc_catalog_find(&cat, KC_STR_LIT("order")));
    assert_null(kc_catalog_find(&cat, KC_STR_NULL));
    assert_ptr_equal(kc_catalog_find_id(&cat, o->id), o);
    const kc_topic_t *e = kc_catalog_find(&cat, KC_STR_LIT("events"));
    assert_memory_not_equal(o->id.b, e->id.b, 16);
    kc_uuid_t zero = {{0}};
    assert_null(kc_catalog_find_id(&cat, zero));

    /* The same cluster and name give the same id; another cluster gives another. */
    kc_uuid_t again = kc_topic_id_for("cluster-A", "orders", 6);
    assert_memory_equal(again.b, o->id.b, 16);
    kc_uuid_t other = kc_topic_id_for("cluster-B", "orders", 6);
    assert_memory_not_equal(other.b, o->id.b, 16);
    assert_int_equal(o->id.b[6] >> 4, 4);
    assert_int_equal(o->id.b[8] & 0xc0, 0x80);
    kc_catalog_free(&cat);
}

static void test_empty_catalog(void **state)
{
    (void)state;
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "c", NULL, 0), 0);
    assert_int_equal(cat.n, 0);
    assert_null(kc_catalog_find(&cat, KC_STR_LIT("x")));
    kc_catalog_free(&cat);
}

static void test_meta_created_then_kept(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-meta-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/a/b", dir);
    char id1[64], id2[64], err[256];
    assert_int_equal(kc_meta_load(sub, 7, id1, sizeof(id1), err, sizeof(err)), 0);
    assert_int_equal(strlen(id1), 22);
    for (const char *p = id1; *p; p++)
        assert_non_null(
            strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *p));
    assert_int_equal(kc_meta_load(sub, 7, id2, sizeof(id2), err, sizeof(err)), 0);
    assert_string_equal(id1, id2);
    /* Another node id is refused, naming both. */
    assert_int_equal(kc_meta_load(sub, 8, id2, sizeof(id2), err, sizeof(err)), -1);
    assert_non_null(strstr(err, "node.id"));

    /* A Kafka-written file is read. */
    char path[300];
    snprintf(path, sizeof(path), "%s/meta.properties", dir);
    FILE *f = fopen(path, "w");
    fputs("#\n#Tue Jan 01 00:00:00 UTC "
          "2026\nnode.id=1\ndirectory.id=abc\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n",
          f);
    fclose(f);
    assert_int_equal(kc_meta_load(dir, 1, id2, sizeof(id2), err, sizeof(err)), 0);
    assert_string_equal(id2, "MkU3OEVBNTcwNTJENDM2Qk");

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_and_ids),
        cmocka_unit_test(test_empty_catalog),
        cmocka_unit_test(test_meta_created_then_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
