/* test_authstore.c - the security records behind the API room: what the auth room emits is
 * appended to the metadata partition, applied only once durable, and replayed at start, so ACL
 * bindings and SCRAM credentials survive a restart and a failed write changes nothing.
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

#include "api/api.h"
#include "coord_fixture.h"
#include "log/log.h"
#include "util/diag.h"

static kc_api_ctx_t ctx_of(fx_t *f)
{
    kc_api_ctx_t ctx = {.conf = &f->conf, .catalog = &f->cat, .loop = &f->loop, .coord = f->c};
    ctx.auth = kc_auth_new(&(kc_auth_conf_t){0});
    assert_non_null(ctx.auth);
    return ctx;
}

static int16_t add_user(kc_api_ctx_t *ctx, const char *user)
{
    static const uint8_t salt[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint8_t sp[KC_SCRAM_MAX_KEY];
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_SHA_256, kc_str_c("secret"), salt,
                                              sizeof(salt), 4096, sp),
                     KC_AUTH_OK);
    kc_api_auth_batch_t b = {0};
    assert_int_equal(kc_auth_scram_record(kc_str_c(user), KC_SCRAM_SHA_256, salt, sizeof(salt), sp,
                                          kc_scram_key_len(KC_SCRAM_SHA_256), 4096,
                                          kc_api_auth_collect, &b),
                     KC_AUTH_OK);
    assert_int_equal(b.n, 1);
    int16_t err = kc_api_auth_commit(ctx, &b, NULL, NULL);
    kc_api_auth_batch_free(&b);
    return err;
}

static int16_t add_acl(kc_api_ctx_t *ctx, const char *topic)
{
    kc_acl_binding_t acl = {.resource_type = KC_RES_TOPIC,
                            .pattern_type = KC_PAT_LITERAL,
                            .operation = KC_OP_READ,
                            .permission = KC_PERM_ALLOW,
                            .resource_name = kc_str_c(topic),
                            .principal = kc_str_c("User:alice"),
                            .host = kc_str_c("*")};
    kc_api_auth_batch_t b = {0};
    kc_auth_result_t r = {0};
    assert_int_equal(
        kc_auth_acl_create(ctx->auth, &acl, 1, kc_auth_rand_default(), kc_api_auth_collect, &b, &r),
        KC_AUTH_OK);
    assert_int_equal(r.error, 0);
    kc_auth_result_clear(&r);
    int16_t err = kc_api_auth_commit(ctx, &b, NULL, NULL);
    kc_api_auth_batch_free(&b);
    return err;
}

static bool alice_reads(kc_api_ctx_t *ctx, const char *topic)
{
    kc_principal_t p;
    assert_int_equal(kc_principal_parse(kc_str_c("User:alice"), &p), 0);
    bool ok =
        kc_auth_authorize(ctx->auth, &p, "127.0.0.1", KC_OP_READ, KC_RES_TOPIC, kc_str_c(topic));
    kc_principal_free(&p);
    return ok;
}

/* Committed records are live at once and again after a restart. */
static void test_durable(void **state)
{
    (void)state;
    fx_t *f = fx_new("kc-authst");
    kc_api_ctx_t ctx = ctx_of(f);
    char err[256];
    assert_int_equal(kc_api_auth_load(&ctx, err, sizeof(err)), 0);
    assert_null(kc_auth_scram_get(ctx.auth, kc_str_c("alice"), KC_SCRAM_SHA_256));
    assert_false(alice_reads(&ctx, "orders"));

    assert_int_equal(add_user(&ctx, "alice"), KC_ERR_NONE);
    assert_int_equal(add_acl(&ctx, "orders"), KC_ERR_NONE);
    assert_non_null(kc_auth_scram_get(ctx.auth, kc_str_c("alice"), KC_SCRAM_SHA_256));
    assert_true(alice_reads(&ctx, "orders"));
    assert_false(alice_reads(&ctx, "payments"));
    kc_auth_free(ctx.auth);

    fx_close(f);
    fx_open(f);
    ctx = ctx_of(f);
    assert_int_equal(kc_api_auth_load(&ctx, err, sizeof(err)), 0);
    const kc_scram_cred_t *c = kc_auth_scram_get(ctx.auth, kc_str_c("alice"), KC_SCRAM_SHA_256);
    assert_non_null(c);
    assert_int_equal(c->iterations, 4096);
    assert_int_equal(kc_auth_acl_count(ctx.auth), 1);
    assert_true(alice_reads(&ctx, "orders"));
    kc_auth_free(ctx.auth);
    fx_free(f);
}

/* A write that fails changes nothing, in memory or after a restart. */
static void test_failed_write(void **state)
{
    (void)state;
    fx_t *f = fx_new("kc-authst");
    kc_api_ctx_t ctx = ctx_of(f);
    fx_fail_fsync(true);
    assert_int_equal(add_user(&ctx, "bob"), KC_ERR_KAFKA_STORAGE_ERROR);
    fx_fail_fsync(false);
    assert_null(kc_auth_scram_get(ctx.auth, kc_str_c("bob"), KC_SCRAM_SHA_256));
    kc_auth_free(ctx.auth);

    fx_close(f);
    fx_open(f);
    ctx = ctx_of(f);
    char err[256];
    assert_int_equal(kc_api_auth_load(&ctx, err, sizeof(err)), 0);
    assert_null(kc_auth_scram_get(ctx.auth, kc_str_c("bob"), KC_SCRAM_SHA_256));
    assert_int_equal(add_user(&ctx, "bob"), KC_ERR_NONE);
    kc_auth_free(ctx.auth);
    fx_free(f);
}

/* An empty batch is no write; a batch that ran out of memory is refused. */
static void test_edges(void **state)
{
    (void)state;
    fx_t *f = fx_new("kc-authst");
    kc_api_ctx_t ctx = ctx_of(f);
    kc_api_auth_batch_t b = {0};
    assert_int_equal(kc_api_auth_commit(&ctx, &b, NULL, NULL), KC_ERR_NONE);
    b.failed = true;
    assert_int_equal(kc_api_auth_commit(&ctx, &b, NULL, NULL), KC_ERR_UNKNOWN_SERVER_ERROR);
    kc_api_auth_batch_free(&b);
    kc_auth_free(ctx.auth);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durable),
        cmocka_unit_test(test_failed_write),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
