/* test_catalog.c - the topic catalog and meta.properties: lookups, stable ids, cluster id,
 * topics added and removed while the daemon runs. */
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

static void test_add_and_remove(void **state)
{
    (void)state;
    kc_conf_topic_t topics[] = {{"orders", 3}};
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster-A", topics, 1), 0);
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("events"), 2), KC_CATALOG_OK);
    assert_int_equal(cat.n, 2);
    const kc_topic_t *e = kc_catalog_find(&cat, KC_STR_LIT("events"));
    assert_non_null(e);
    assert_string_equal(e->name, "events");
    assert_int_equal(e->partitions, 2);
    kc_uuid_t want = kc_topic_id_for("cluster-A", "events", 6);
    assert_memory_equal(e->id.b, want.b, 16);
    assert_ptr_equal(kc_catalog_find_id(&cat, want), e);

    /* The name is copied: the view it came from may go away. */
    char buf[] = "audit";
    assert_int_equal(kc_catalog_add(&cat, (kc_str_t){buf, 5}, 12), KC_CATALOG_OK);
    memset(buf, 'x', 5);
    assert_non_null(kc_catalog_find(&cat, KC_STR_LIT("audit")));

    /* Removal keeps the order of the others. */
    assert_int_equal(kc_catalog_remove(&cat, KC_STR_LIT("events")), 0);
    assert_int_equal(cat.n, 2);
    assert_string_equal(cat.topics[0].name, "orders");
    assert_string_equal(cat.topics[1].name, "audit");
    assert_null(kc_catalog_find(&cat, KC_STR_LIT("events")));
    assert_null(kc_catalog_find_id(&cat, want));
    assert_int_equal(kc_catalog_remove(&cat, KC_STR_LIT("events")), -1);
    assert_int_equal(kc_catalog_remove(&cat, KC_STR_NULL), -1);

    /* Removing the first and the last. */
    assert_int_equal(kc_catalog_remove(&cat, KC_STR_LIT("orders")), 0);
    assert_int_equal(kc_catalog_remove(&cat, KC_STR_LIT("audit")), 0);
    assert_int_equal(cat.n, 0);
    assert_null(kc_catalog_find(&cat, KC_STR_LIT("audit")));
    kc_catalog_free(&cat);
}

static void test_add_duplicate(void **state)
{
    (void)state;
    kc_conf_topic_t topics[] = {{"orders", 3}};
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "c", topics, 1), 0);
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("orders"), 7), KC_CATALOG_EXISTS);
    assert_int_equal(cat.n, 1);
    assert_int_equal(kc_catalog_find(&cat, KC_STR_LIT("orders"))->partitions, 3);
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("new"), 1), KC_CATALOG_OK);
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("new"), 1), KC_CATALOG_EXISTS);
    /* Names differ by case and by '.' against '_': the catalog keeps them apart (the API
     * refuses the collision, not the catalog). */
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("New"), 1), KC_CATALOG_OK);
    assert_int_equal(cat.n, 3);
    kc_catalog_free(&cat);
}

/* Ids depend on the cluster and the name only: the same after growth, removal and re-adding,
 * and names stay where they are while the topic array moves. */
static void test_ids_stable(void **state)
{
    (void)state;
    kc_catalog_t cat;
    assert_int_equal(kc_catalog_init(&cat, "cluster-A", NULL, 0), 0);
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("first"), 1), KC_CATALOG_OK);
    const char *first_name = cat.topics[0].name;
    kc_uuid_t first_id = cat.topics[0].id;
    char name[32];
    for (int i = 0; i < 200; i++) {
        int n = snprintf(name, sizeof(name), "topic-%d", i);
        assert_int_equal(kc_catalog_add(&cat, (kc_str_t){name, n}, i + 1), KC_CATALOG_OK);
    }
    assert_int_equal(cat.n, 201);
    assert_true(cat.cap >= cat.n);
    const kc_topic_t *f = kc_catalog_find(&cat, KC_STR_LIT("first"));
    assert_ptr_equal(f->name, first_name);
    assert_memory_equal(f->id.b, first_id.b, 16);
    for (int i = 0; i < 200; i++) {
        int n = snprintf(name, sizeof(name), "topic-%d", i);
        const kc_topic_t *t = kc_catalog_find(&cat, (kc_str_t){name, n});
        assert_non_null(t);
        assert_int_equal(t->partitions, i + 1);
        kc_uuid_t want = kc_topic_id_for("cluster-A", name, (size_t)n);
        assert_memory_equal(t->id.b, want.b, 16);
        assert_ptr_equal(kc_catalog_find_id(&cat, want), t);
    }
    /* Every id is distinct. */
    for (size_t i = 0; i < cat.n; i++)
        for (size_t j = i + 1; j < cat.n; j++)
            assert_memory_not_equal(cat.topics[i].id.b, cat.topics[j].id.b, 16);

    /* Deleted and created again: the same id (it depends on the name only). */
    assert_int_equal(kc_catalog_remove(&cat, KC_STR_LIT("first")), 0);
    assert_null(kc_catalog_find_id(&cat, first_id));
    assert_int_equal(kc_catalog_add(&cat, KC_STR_LIT("first"), 5), KC_CATALOG_OK);
    f = kc_catalog_find(&cat, KC_STR_LIT("first"));
    assert_memory_equal(f->id.b, first_id.b, 16);
    assert_int_equal(f->partitions, 5);
    assert_ptr_equal(&cat.topics[cat.n - 1], f); /* at the end now */
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

/* New cluster and directory ids never start with '-' (as Kafka's Uuid.randomUuid): a directory
 * id is passed to kafka-metadata-quorum's --controller-directory-id, which would read it as an
 * option. 1 in 64 random ids would; over 400 data directories a generator that allowed it
 * passes with a chance below 1e-5. */
static void test_new_ids_never_start_with_dash(void **state)
{
    (void)state;
    char dir[] = "/tmp/kc-meta-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (int i = 0; i < 400; i++) {
        char sub[256], id[64], dir_id[23], err[256];
        snprintf(sub, sizeof(sub), "%s/%d", dir, i);
        assert_int_equal(kc_meta_load(sub, 1, id, sizeof(id), err, sizeof(err)), 0);
        assert_int_equal(kc_meta_directory_id(sub, dir_id, err, sizeof(err)), 0);
        assert_int_equal(strlen(dir_id), 22);
        assert_true(id[0] != '-');
        assert_true(dir_id[0] != '-');
    }
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Topic ids are visible to clients and must survive an upgrade: these were computed before the
 * hash helpers moved to util/hash.h, and must never change. */
static void test_ids_pinned(void **state)
{
    (void)state;
    static const struct {
        const char *cluster, *name;
        uint8_t id[16];
    } cases[] = {
        {"cluster-A",
         "orders",
         {0x8d, 0x4e, 0x88, 0x8b, 0xe4, 0x06, 0x44, 0x11, 0x9e, 0x47, 0x4f, 0x3e, 0xd4, 0x56, 0xdf,
          0x85}},
        {"cluster-A",
         "events",
         {0xfd, 0xe7, 0x6f, 0xd2, 0xe5, 0x07, 0x45, 0x07, 0xa9, 0x5d, 0x7e, 0xe5, 0x5f, 0x1a, 0xc5,
          0xd2}},
        {"cluster-A",
         "kcoord-bench",
         {0x8b, 0xce, 0x0a, 0x15, 0x1e, 0xae, 0x4c, 0xbd, 0x84, 0x5a, 0x7c, 0x59, 0xff, 0xf9, 0x87,
          0x2f}},
        {"",
         "",
         {0x73, 0x82, 0xb4, 0x1b, 0xa8, 0xb4, 0x42, 0x66, 0x95, 0x6a, 0x1c, 0x7f, 0x96, 0x0d, 0xc6,
          0x43}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kc_uuid_t id = kc_topic_id_for(cases[i].cluster, cases[i].name, strlen(cases[i].name));
        assert_memory_equal(id.b, cases[i].id, 16);
    }
}

/* Kafka's topic-name rules, shared by the configuration and CreateTopics. */
static void test_topic_name_rules(void **state)
{
    (void)state;
    char name[600];
    assert_int_equal(kc_topic_name_check("orders.v2_x-Y", 13), KC_TOPIC_NAME_OK);
    assert_int_equal(kc_topic_name_check("", 0), KC_TOPIC_NAME_EMPTY);
    assert_int_equal(kc_topic_name_check(".", 1), KC_TOPIC_NAME_DOTS);
    assert_int_equal(kc_topic_name_check("..", 2), KC_TOPIC_NAME_DOTS);
    assert_int_equal(kc_topic_name_check("...", 3), KC_TOPIC_NAME_OK);
    assert_int_equal(kc_topic_name_check("a b", 3), KC_TOPIC_NAME_CHARS);
    assert_int_equal(kc_topic_name_check("caf\xc3\xa9", 5), KC_TOPIC_NAME_CHARS);
    memset(name, 'a', sizeof(name));
    assert_int_equal(kc_topic_name_check(name, KC_TOPIC_NAME_MAX), KC_TOPIC_NAME_OK);
    assert_int_equal(kc_topic_name_check(name, KC_TOPIC_NAME_MAX + 1), KC_TOPIC_NAME_TOO_LONG);
    /* Lengths are Java's: a 4-byte UTF-8 character counts two (the CHARS rule then refuses it,
     * but only after the length rule: Kafka's order). */
    for (int i = 0; i < 125; i++)
        memcpy(name + 4 * i, "\xf0\x9f\x98\x80", 4);
    assert_int_equal(kc_topic_name_check(name, 4 * 124), KC_TOPIC_NAME_CHARS);    /* 248 */
    assert_int_equal(kc_topic_name_check(name, 4 * 125), KC_TOPIC_NAME_TOO_LONG); /* 250 */

    assert_true(kc_topic_names_collide("a.b", 3, "a_b", 3));
    assert_true(kc_topic_names_collide("a.b", 3, "a.b", 3));
    assert_false(kc_topic_names_collide("a.b", 3, "a-b", 3));
    assert_false(kc_topic_names_collide("a.b", 3, "a_bc", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_and_ids),
        cmocka_unit_test(test_empty_catalog),
        cmocka_unit_test(test_add_and_remove),
        cmocka_unit_test(test_add_duplicate),
        cmocka_unit_test(test_ids_stable),
        cmocka_unit_test(test_meta_created_then_kept),
        cmocka_unit_test(test_ids_pinned),
        cmocka_unit_test(test_topic_name_rules),
        cmocka_unit_test(test_new_ids_never_start_with_dash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
