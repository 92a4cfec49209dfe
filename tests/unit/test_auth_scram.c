/* test_auth_scram.c - SCRAM credentials (src/auth/scram.c, records.c): the formulas against
 * published vectors, AlterUserScramCredentials and DescribeUserScramCredentials with
 * ScramControlManager's and ScramImage's per-user errors and messages, and the credential
 * records (apply, tombstones, snapshot, malformed input).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "auth_support.h"
#include "proto/errors.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_formulas(void **state)
{
    (void)state;
    uint8_t sp[64];
    char h[129];
    /* PBKDF2-HMAC-SHA256("password", "salt", 4096, 32): the published vector. */
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_SHA_256, S("password"),
                                              (const uint8_t *)"salt", 4, 4096, sp),
                     KC_AUTH_OK);
    hex(sp, 32, h);
    assert_string_equal(h, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a");
    /* PBKDF2-HMAC-SHA512("password", "salt", 1, 64). */
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_SHA_512, S("password"),
                                              (const uint8_t *)"salt", 4, 1, sp),
                     KC_AUTH_OK);
    hex(sp, 64, h);
    assert_string_equal(h, "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252"
                           "c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce");
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_UNKNOWN, S("p"), NULL, 0, 4096, sp),
                     KC_AUTH_EINVAL);
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_SHA_256, S("p"), NULL, 0, 0, sp),
                     KC_AUTH_EINVAL);
    assert_int_equal(kc_scram_key_len(KC_SCRAM_SHA_256), 32);
    assert_int_equal(kc_scram_key_len(KC_SCRAM_SHA_512), 64);
    assert_int_equal(kc_scram_key_len(3), 0);
}

/* RFC 7677's credential: StoredKey and ServerKey of "pencil" with its salt. */
static void test_stored_keys(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    const uint8_t salt[16] = {0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e,
                              0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81};
    uint8_t sp[32];
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_SHA_256, S("pencil"), salt, 16, 4096, sp),
                     KC_AUTH_OK);
    trecs_t recs = {0};
    assert_int_equal(kc_auth_scram_record(S("user"), KC_SCRAM_SHA_256, salt, 16, sp, 32, 4096,
                                          trecs_emit, &recs),
                     KC_AUTH_OK);
    assert_int_equal(recs.n, 1);
    /* Key: type 11, "user", mechanism 1. */
    const uint8_t key[] = {0, 11, 0, 4, 'u', 's', 'e', 'r', 1};
    assert_int_equal(recs.v[0].key_len, sizeof(key));
    assert_memory_equal(recs.v[0].key, key, sizeof(key));
    /* Value: version 0, salt, stored key, server key, iterations. */
    assert_int_equal(recs.v[0].value_len, 2 + 4 + 16 + 4 + 32 + 4 + 32 + 4);
    trecs_apply(&recs, a);
    const kc_scram_cred_t *c = kc_auth_scram_get(a, S("user"), KC_SCRAM_SHA_256);
    assert_non_null(c);
    assert_int_equal(c->iterations, 4096);
    assert_int_equal(c->salt_len, 16);
    assert_memory_equal(c->salt, salt, 16);
    char h[65];
    /* H(HMAC(SP, "Client Key")) and HMAC(SP, "Server Key") for RFC 7677's example, worked out
     * with Python's hashlib and hmac. */
    hex(c->stored_key, 32, h);
    assert_string_equal(h, "586e5df283e6dceb5c3e791d8b8528ec191e664045ce971792e2e6b5bb13e2a6");
    hex(c->server_key, 32, h);
    assert_string_equal(h, "c1f3cbc1c13a9d35a14c0990eed97629ea225863e566a4314ab99f3f00e5d9d5");
    kc_auth_free(a);
}

static kc_scram_upsertion_t UP(const char *name, int8_t mech, int32_t iter)
{
    static const uint8_t salt[8] = "saltsalt";
    static const uint8_t sp[64] = {1, 2, 3};
    return (kc_scram_upsertion_t){kc_str_c(name), mech, iter, (kc_bytes_t){salt, 8},
                                  (kc_bytes_t){sp, (int32_t)kc_scram_key_len(mech ? mech : 1)}};
}

static kc_scram_deletion_t DEL(const char *name, int8_t mech)
{
    return (kc_scram_deletion_t){kc_str_c(name), mech};
}

typedef struct want_s {
    const char *user;
    int16_t error;
    const char *message;
} want_t;

static void alter(kc_auth_t *a, const kc_scram_deletion_t *d, size_t nd,
                  const kc_scram_upsertion_t *u, size_t nu, const want_t *want, size_t nw,
                  size_t n_records)
{
    trecs_t recs = {0};
    kc_scram_alter_result_t *res;
    size_t n;
    assert_int_equal(kc_auth_scram_alter(a, d, nd, u, nu, trecs_emit, &recs, &res, &n), KC_AUTH_OK);
    assert_int_equal(n, nw);
    for (size_t i = 0; i < n; i++) {
        if (!kc_str_eq_c(res[i].user, want[i].user))
            fail_msg("result %zu: user '%.*s', expected '%s'", i, (int)res[i].user.len,
                     res[i].user.p, want[i].user);
        assert_int_equal(res[i].r.error, want[i].error);
        if (want[i].message)
            assert_string_equal(res[i].r.message, want[i].message);
        else
            assert_null(res[i].r.message);
    }
    kc_auth_scram_alter_free(res, n);
    assert_int_equal(recs.n, n_records);
    trecs_apply(&recs, a);
}

static void test_alter(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    const int8_t S256 = KC_SCRAM_SHA_256, S512 = KC_SCRAM_SHA_512;
    /* Accepted upsertions, bounds included. */
    kc_scram_upsertion_t u1[] = {UP("alice", S256, 4096), UP("bob", S512, 16384)};
    want_t w1[] = {{"alice", 0, NULL}, {"bob", 0, NULL}};
    alter(a, NULL, 0, u1, 2, w1, 2, 2);
    assert_non_null(kc_auth_scram_get(a, S("alice"), S256));
    assert_null(kc_auth_scram_get(a, S("alice"), S512));
    assert_int_equal(kc_auth_scram_get(a, S("bob"), S512)->iterations, 16384);

    /* Every refusal, each for its own user. Order: accepted deletions, accepted upsertions,
     * then the errors. */
    kc_scram_deletion_t d2[] = {DEL("alice", S512), DEL("", S256), DEL("carol", 0),
                                DEL("bob", S512)};
    kc_scram_upsertion_t u2[] = {UP("dave", S256, 4095), UP("erin", S256, 16385),
                                 UP("frank", 3, 4096), UP("gina", S512, 8192)};
    want_t w2[] = {
        {"bob", 0, NULL},
        {"gina", 0, NULL},
        {"alice", KC_ERR_RESOURCE_NOT_FOUND,
         "Attempt to delete a user credential that does not exist"},
        {"", KC_ERR_UNACCEPTABLE_CREDENTIAL, "Username must not be empty"},
        {"carol", KC_ERR_UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"},
        {"dave", KC_ERR_UNACCEPTABLE_CREDENTIAL, "Too few iterations"},
        {"erin", KC_ERR_UNACCEPTABLE_CREDENTIAL, "Too many iterations"},
        {"frank", KC_ERR_UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"},
    };
    alter(a, d2, 4, u2, 4, w2, 8, 2);
    assert_null(kc_auth_scram_get(a, S("bob"), S512));
    assert_non_null(kc_auth_scram_get(a, S("gina"), S512));

    /* A user altered twice, whatever the mechanisms: DUPLICATE_RESOURCE and no change. */
    const char *twice = "A user credential cannot be altered twice in the same request";
    kc_scram_upsertion_t u3[] = {UP("alice", S256, 5000), UP("alice", S512, 5000),
                                 UP("hugo", S256, 4096)};
    want_t w3[] = {{"hugo", 0, NULL}, {"alice", KC_ERR_DUPLICATE_RESOURCE, twice}};
    alter(a, NULL, 0, u3, 3, w3, 2, 1);
    assert_int_equal(kc_auth_scram_get(a, S("alice"), S256)->iterations, 4096);
    assert_null(kc_auth_scram_get(a, S("alice"), S512));
    kc_scram_deletion_t d4[] = {DEL("alice", S256)};
    kc_scram_upsertion_t u4[] = {UP("alice", S512, 4096)};
    want_t w4[] = {{"alice", KC_ERR_DUPLICATE_RESOURCE, twice}};
    alter(a, d4, 1, u4, 1, w4, 1, 0);
    assert_non_null(kc_auth_scram_get(a, S("alice"), S256));
    /* The first error of a user stays; later alterations of it are not looked at. */
    kc_scram_deletion_t d5[] = {DEL("zed", S256)};
    kc_scram_upsertion_t u5[] = {UP("zed", S256, 4096)};
    want_t w5[] = {{"zed", KC_ERR_RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist"}};
    alter(a, d5, 1, u5, 1, w5, 1, 0);
    /* Nothing at all. */
    alter(a, NULL, 0, NULL, 0, NULL, 0, 0);
    kc_auth_free(a);
}

static void test_describe(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    kc_scram_upsertion_t u[] = {UP("bob", KC_SCRAM_SHA_512, 8192), UP("alice", 1, 4096)};
    want_t w[] = {{"bob", 0, NULL}, {"alice", 0, NULL}};
    alter(a, NULL, 0, u, 2, w, 2, 2);
    kc_scram_upsertion_t u2[] = {UP("alice", KC_SCRAM_SHA_512, 10000)};
    want_t w2[] = {{"alice", 0, NULL}};
    alter(a, NULL, 0, u2, 1, w2, 1, 1);

    kc_scram_describe_row_t *rows;
    size_t n;
    /* All users, in name order. */
    assert_int_equal(kc_auth_scram_describe(a, NULL, 0, &rows, &n), KC_AUTH_OK);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].user, "alice");
    assert_int_equal(rows[0].r.error, 0);
    assert_int_equal(rows[0].n_infos, 2);
    assert_int_equal(rows[0].infos[0].mechanism, KC_SCRAM_SHA_256);
    assert_int_equal(rows[0].infos[0].iterations, 4096);
    assert_int_equal(rows[0].infos[1].mechanism, KC_SCRAM_SHA_512);
    assert_int_equal(rows[0].infos[1].iterations, 10000);
    assert_string_equal(rows[1].user, "bob");
    assert_int_equal(rows[1].n_infos, 1);
    kc_auth_scram_describe_free(rows, n);
    /* Named users: one row per distinct name, first-seen order. */
    kc_str_t users[] = {S("bob"), S("nobody"), S("alice"), S("bob")};
    assert_int_equal(kc_auth_scram_describe(a, users, 4, &rows, &n), KC_AUTH_OK);
    assert_int_equal(n, 3);
    assert_string_equal(rows[0].user, "bob");
    assert_int_equal(rows[0].r.error, KC_ERR_DUPLICATE_RESOURCE);
    assert_string_equal(rows[0].r.message, "Cannot describe SCRAM credentials for the same user "
                                           "twice in a single request: bob");
    assert_int_equal(rows[0].n_infos, 0);
    assert_string_equal(rows[1].user, "nobody");
    assert_int_equal(rows[1].r.error, KC_ERR_RESOURCE_NOT_FOUND);
    assert_string_equal(rows[1].r.message,
                        "Attempt to describe a user credential that does not exist: nobody");
    assert_string_equal(rows[2].user, "alice");
    assert_int_equal(rows[2].r.error, 0);
    assert_int_equal(rows[2].n_infos, 2);
    kc_auth_scram_describe_free(rows, n);
    /* An empty store. */
    kc_auth_t *e = kc_auth_new(NULL);
    assert_int_equal(kc_auth_scram_describe(e, NULL, 0, &rows, &n), KC_AUTH_OK);
    assert_int_equal(n, 0);
    kc_auth_scram_describe_free(rows, n);
    kc_auth_free(e);
    kc_auth_free(a);
}

static void test_records(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    kc_scram_upsertion_t u[] = {UP("alice", 1, 4096), UP("bob", 2, 4096)};
    want_t w[] = {{"alice", 0, NULL}, {"bob", 0, NULL}};
    alter(a, NULL, 0, u, 2, w, 2, 2);
    kc_acl_binding_t acl = {KC_RES_GROUP, KC_PAT_LITERAL,  KC_OP_READ, KC_PERM_ALLOW,
                            S("g"),       S("User:alice"), S("*")};
    script_t sc = {NULL, 0, 0, 1};
    trecs_t recs = {0};
    kc_auth_result_t r;
    assert_int_equal(kc_auth_acl_create(a, &acl, 1, script_rand(&sc), trecs_emit, &recs, &r),
                     KC_AUTH_OK);
    trecs_apply(&recs, a);
    /* Snapshot: ACLs then credentials; replaying it elsewhere gives the same answers. */
    trecs_t snap = {0};
    assert_int_equal(kc_auth_snapshot(a, trecs_emit, &snap), KC_AUTH_OK);
    assert_int_equal(snap.n, 3);
    assert_int_equal(snap.v[0].key[1], KC_AUTH_REC_ACL);
    assert_int_equal(snap.v[1].key[1], KC_AUTH_REC_SCRAM);
    trec_t cred = snap.v[1];
    uint8_t *k = malloc(cred.key_len), *v = malloc(cred.value_len + 1);
    memcpy(k, cred.key, cred.key_len);
    memcpy(v, cred.value, cred.value_len);
    kc_auth_t *b = kc_auth_new(NULL);
    trecs_apply(&snap, b);
    assert_int_equal(kc_auth_acl_count(b), 1);
    const kc_scram_cred_t *x = kc_auth_scram_get(a, S("alice"), 1);
    const kc_scram_cred_t *y = kc_auth_scram_get(b, S("alice"), 1);
    assert_non_null(y);
    assert_memory_equal(x->stored_key, y->stored_key, 32);
    assert_memory_equal(x->server_key, y->server_key, 32);
    /* Malformed credential records change nothing. */
    size_t kl = cred.key_len, vl = cred.value_len;
    k[kl - 1] = 9; /* unknown mechanism */
    assert_int_equal(kc_auth_apply(b, k, kl, v, vl), KC_AUTH_EINVAL);
    assert_int_equal(kc_auth_apply(b, k, kl, NULL, 0), KC_AUTH_EINVAL);
    k[kl - 1] = 1;
    assert_int_equal(kc_auth_apply(b, k, kl - 1, v, vl), KC_AUTH_EINVAL);
    assert_int_equal(kc_auth_apply(b, k, kl, v, vl - 1), KC_AUTH_EINVAL);
    v[vl] = 0;
    assert_int_equal(kc_auth_apply(b, k, kl, v, vl + 1), KC_AUTH_EINVAL);
    v[1] = 1; /* version 1 */
    assert_int_equal(kc_auth_apply(b, k, kl, v, vl), KC_AUTH_EINVAL);
    assert_non_null(kc_auth_scram_get(b, S("alice"), 1));
    /* The tombstone removes; a second one is a no-op. */
    assert_int_equal(kc_auth_apply(b, k, kl, NULL, 0), KC_AUTH_OK);
    assert_null(kc_auth_scram_get(b, S("alice"), 1));
    assert_int_equal(kc_auth_apply(b, k, kl, NULL, 0), KC_AUTH_OK);
    assert_non_null(kc_auth_scram_get(b, S("bob"), 2));
    free(k);
    free(v);
    kc_auth_free(b);
    kc_auth_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formulas), cmocka_unit_test(test_stored_keys),
        cmocka_unit_test(test_alter),    cmocka_unit_test(test_describe),
        cmocka_unit_test(test_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
