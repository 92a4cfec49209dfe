/* test_auth_sasl.c - the SASL servers (src/auth/sasl.c): PLAIN and SCRAM-SHA-256/512.
 *
 * SCRAM is checked against RFC 7677's SCRAM-SHA-256 example byte for byte (the scripted random
 * source makes the server pick the RFC's server nonce), and against a client written here from
 * RFC 5802's formulas for both mechanisms: a good exchange, a wrong password, an unknown user
 * (same steps, same answer, a stable fake salt), librdkafka < 2.6.1's doubled nonce (accepted,
 * as Kafka 3.9 did), a wrong nonce, authzid rules, extensions, malformed messages and the
 * state machine. PLAIN follows PlainSaslServer's rules and messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth_support.h"
#include "proto/errors.h"

#define GENERIC_256                                                                                \
    "Authentication failed during authentication due to invalid credentials with SASL mechanism "  \
    "SCRAM-SHA-256"

/* The server's nonce alphabet (sasl.c): a random byte b picks NONCE_CHARS[b % 93]. */
static const char NONCE_CHARS[] = "!\"#$%&'()*+-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

typedef struct fx_s {
    kc_auth_t *auth;
    kc_sasl_creds_t creds;
    script_t script;
    uint8_t script_bytes[64];
} fx_t;

static kc_str_t plain_lookup(void *arg, kc_str_t user)
{
    (void)arg;
    if (kc_str_eq_c(user, "alice"))
        return S("alice-secret");
    if (kc_str_eq_c(user, "bob"))
        return S("b");
    return KC_STR_NULL;
}

static const kc_scram_cred_t *scram_lookup(void *arg, kc_str_t user, int8_t mech)
{
    return kc_auth_scram_lookup(((fx_t *)arg)->auth, user, mech);
}

/* Store a SCRAM credential for user through the record path. */
static void add_user(fx_t *f, const char *user, int8_t mech, const char *password,
                     const uint8_t *salt, size_t salt_len, int32_t iterations)
{
    uint8_t sp[64];
    assert_int_equal(
        kc_scram_salted_password(mech, kc_str_c(password), salt, salt_len, iterations, sp),
        KC_AUTH_OK);
    trecs_t recs = {0};
    assert_int_equal(kc_auth_scram_record(kc_str_c(user), mech, salt, salt_len, sp,
                                          kc_scram_key_len(mech), iterations, trecs_emit, &recs),
                     KC_AUTH_OK);
    trecs_apply(&recs, f->auth);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->auth = kc_auth_new(NULL);
    f->creds.plain_password = plain_lookup;
    f->creds.plain_arg = NULL;
    f->creds.scram = scram_lookup;
    f->creds.scram_arg = f;
    memset(f->creds.fake_secret, 0x5a, sizeof(f->creds.fake_secret));
    f->script = (script_t){f->script_bytes, 0, 0, 99};
    const uint8_t salt[] = "QSXCR+Q6sek8bf92";
    add_user(f, "alice", KC_SCRAM_SHA_256, "alice-secret", salt, 16, 4096);
    add_user(f, "alice", KC_SCRAM_SHA_512, "alice-512", salt, 16, 8192);
    add_user(f, "a,b=c", KC_SCRAM_SHA_256, "odd", salt, 16, 4096);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    kc_auth_free(f->auth);
    free(f);
    return 0;
}

static kc_sasl_server_t *server(fx_t *f, int mech)
{
    kc_sasl_server_t *s = kc_sasl_server_new(mech, &f->creds, script_rand(&f->script), false);
    assert_non_null(s);
    return s;
}

static int step_str(kc_sasl_server_t *s, const char *msg, kc_sasl_step_t *o)
{
    return kc_sasl_server_step(s, (const uint8_t *)msg, strlen(msg), o);
}

static void assert_out(const kc_sasl_step_t *o, const char *want)
{
    char got[512];
    assert_true(o->out_len < sizeof(got));
    memcpy(got, o->out, o->out_len);
    got[o->out_len] = '\0';
    assert_string_equal(got, want);
}

/* ---- A SCRAM client from RFC 5802's formulas ----------------------------------------------- */

static const EVP_MD *md(int8_t mech)
{
    return mech == KC_SCRAM_SHA_256 ? EVP_sha256() : EVP_sha512();
}

/* Build the client-final message for server_first; nonce_prefix is prepended to the nonce
 * (librdkafka < 2.6.1 prepends its own nonce again), nonce_override replaces it. Writes the
 * expected server-final into want_final. */
static void client_final(int8_t mech, const char *password, const char *first_bare,
                         const char *server_first, const char *nonce_prefix,
                         const char *nonce_override, char *out, char *want_final)
{
    char nonce[256], salt64[256];
    int iter = 0;
    assert_int_equal(sscanf(server_first, "r=%255[^,],s=%255[^,],i=%d", nonce, salt64, &iter), 3);
    uint8_t salt[256];
    int sl = EVP_DecodeBlock(salt, (const unsigned char *)salt64, (int)strlen(salt64));
    assert_true(sl >= 0);
    sl -= (int)(strchr(salt64, '=') ? strlen(strchr(salt64, '=')) : 0);
    size_t kl = kc_scram_key_len(mech);
    uint8_t sp[64], ck[64], sk[64], stored[64], sig[64], proof[64], ssig[64];
    unsigned int n;
    assert_int_equal(kc_scram_salted_password(mech, kc_str_c(password), salt, (size_t)sl, iter, sp),
                     KC_AUTH_OK);
    HMAC(md(mech), sp, (int)kl, (const uint8_t *)"Client Key", 10, ck, &n);
    HMAC(md(mech), sp, (int)kl, (const uint8_t *)"Server Key", 10, sk, &n);
    EVP_Digest(ck, kl, stored, &n, md(mech), NULL);
    char without[600], am[2048];
    snprintf(without, sizeof(without), "c=biws,r=%s%s", nonce_prefix ? nonce_prefix : "",
             nonce_override ? nonce_override : nonce);
    snprintf(am, sizeof(am), "%s,%s,%s", first_bare, server_first, without);
    HMAC(md(mech), stored, (int)kl, (const uint8_t *)am, strlen(am), sig, &n);
    for (size_t i = 0; i < kl; i++)
        proof[i] = ck[i] ^ sig[i];
    HMAC(md(mech), sk, (int)kl, (const uint8_t *)am, strlen(am), ssig, &n);
    char p64[100], s64[100];
    EVP_EncodeBlock((unsigned char *)p64, proof, (int)kl);
    EVP_EncodeBlock((unsigned char *)s64, ssig, (int)kl);
    sprintf(out, "%s,p=%s", without, p64);
    sprintf(want_final, "v=%s", s64);
}

/* A full exchange; returns the final step's status and leaves o set. */
static int scram_run(fx_t *f, int mech, const char *first, const char *password,
                     const char *nonce_prefix, const char *nonce_override, kc_sasl_step_t *o,
                     char *want_final, kc_sasl_server_t **keep)
{
    kc_sasl_server_t *s = server(f, mech);
    int rc = step_str(s, first, o);
    if (rc == KC_SASL_CONTINUE) {
        char sf[512], fin[1024];
        memcpy(sf, o->out, o->out_len);
        sf[o->out_len] = '\0';
        const char *bare = strstr(first, "n=");
        client_final(kc_sasl_mech_scram(mech), password, bare, sf, nonce_prefix, nonce_override,
                     fin, want_final);
        rc = step_str(s, fin, o);
    }
    if (keep) {
        *keep = s;
        return rc;
    }
    /* The step's views die with the server: keep copies. */
    static uint8_t out[512];
    static char message[200], reason[200];
    if (o->out_len)
        memcpy(out, o->out, o->out_len);
    o->out = out;
    if (o->message)
        o->message = strcpy(message, o->message);
    if (o->reason)
        o->reason = strcpy(reason, o->reason);
    kc_sasl_server_free(s);
    return rc;
}

/* ---- SCRAM --------------------------------------------------------------------------------- */

static void test_rfc7677_example(void **state)
{
    fx_t *f = *state;
    /* RFC 7677 section 3: user "user", password "pencil". */
    uint8_t salt[16];
    const char *salt64 = "W22ZaJ0SNY7soEsUEjb6gQ==";
    assert_int_equal(EVP_DecodeBlock(salt, (const unsigned char *)salt64, 24), 18);
    add_user(f, "user", KC_SCRAM_SHA_256, "pencil", salt, 16, 4096);
    const char *snonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    for (size_t i = 0; i < 30; i++)
        f->script_bytes[i] = (uint8_t)(strchr(NONCE_CHARS, snonce[i]) - NONCE_CHARS);
    f->script.n = 30;
    kc_sasl_server_t *s = server(f, KC_SASL_SCRAM_SHA_256);
    kc_sasl_step_t o;
    assert_int_equal(step_str(s, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO", &o), KC_SASL_CONTINUE);
    assert_out(&o, "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                   "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    assert_null(kc_sasl_server_principal(s));
    assert_int_equal(step_str(s,
                              "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                              "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
                              &o),
                     KC_SASL_DONE);
    assert_out(&o, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    assert_string_equal(kc_sasl_server_principal(s)->text, "User:user");
    /* Anything more is a state error. */
    assert_int_equal(step_str(s, "x", &o), KC_SASL_FAILED);
    assert_int_equal(o.error, KC_ERR_ILLEGAL_SASL_STATE);
    kc_sasl_server_free(s);
}

static void test_scram_good_exchanges(void **state)
{
    fx_t *f = *state;
    kc_sasl_step_t o;
    char want[200];
    kc_sasl_server_t *s;
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=alice,r=abcdefgh", "alice-secret",
                               NULL, NULL, &o, want, &s),
                     KC_SASL_DONE);
    assert_out(&o, want);
    assert_string_equal(kc_sasl_server_principal(s)->text, "User:alice");
    assert_int_equal(kc_sasl_server_mech(s), KC_SASL_SCRAM_SHA_256);
    kc_sasl_server_free(s);
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_512, "n,,n=alice,r=x+y/z", "alice-512", NULL,
                               NULL, &o, want, NULL),
                     KC_SASL_DONE);
    assert_out(&o, want);
    assert_int_equal(o.out_len, 2 + 88); /* base64 of 64 bytes */
    /* authzid equal to the user, an escaped name, an ignored extension. */
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,a=alice,n=alice,r=n1", "alice-secret",
                               NULL, NULL, &o, want, NULL),
                     KC_SASL_DONE);
    assert_int_equal(
        scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=a=2Cb=3Dc,r=n1", "odd", NULL, NULL, &o, want, &s),
        KC_SASL_DONE);
    assert_string_equal(kc_sasl_server_principal(s)->text, "User:a,b=c");
    kc_sasl_server_free(s);
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=alice,r=n1,ext=1,tokenauth=false",
                               "alice-secret", NULL, NULL, &o, want, NULL),
                     KC_SASL_DONE);
    /* The server nonce is the scripted source's, so two servers differ only by it. */
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,m=reserved,n=alice,r=n1",
                               "alice-secret", NULL, NULL, &o, want, NULL),
                     KC_SASL_DONE);
}

/* kafka-configs --add-config 'SCRAM-SHA-512=[iterations=8192,password=...]': the client sends
 * a salt and the salted password (AlterUserScramCredentials); the user can then log in. */
static void test_scram_after_alter(void **state)
{
    fx_t *f = *state;
    const uint8_t salt[] = "1f2v3qlbdl7zcvqzl0bl9fxq0";
    uint8_t sp[64];
    assert_int_equal(kc_scram_salted_password(KC_SCRAM_SHA_512, S("carol-pw"), salt, 25, 8192, sp),
                     KC_AUTH_OK);
    kc_scram_upsertion_t up = {S("carol"), KC_SCRAM_SHA_512, 8192, (kc_bytes_t){salt, 25},
                               (kc_bytes_t){sp, 64}};
    trecs_t recs = {0};
    kc_scram_alter_result_t *res;
    size_t n;
    assert_int_equal(kc_auth_scram_alter(f->auth, NULL, 0, &up, 1, trecs_emit, &recs, &res, &n),
                     KC_AUTH_OK);
    assert_int_equal(n, 1);
    assert_int_equal(res[0].r.error, 0);
    kc_auth_scram_alter_free(res, n);
    kc_sasl_step_t o;
    char want[200];
    /* Not before the record is applied. */
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_512, "n,,n=carol,r=k1", "carol-pw", NULL, NULL,
                               &o, want, NULL),
                     KC_SASL_FAILED);
    trecs_apply(&recs, f->auth);
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_512, "n,,n=carol,r=k1", "carol-pw", NULL, NULL,
                               &o, want, NULL),
                     KC_SASL_DONE);
    assert_out(&o, want);
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=carol,r=k1", "carol-pw", NULL, NULL,
                               &o, want, NULL),
                     KC_SASL_FAILED);
}

static void test_scram_old_librdkafka_nonce(void **state)
{
    fx_t *f = *state;
    kc_sasl_step_t o;
    char want[200];
    /* librdkafka < 2.6.1: r=<cnonce><cnonce><snonce>; Kafka 3.9 accepted it (endsWith). */
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_512, "n,,n=alice,r=cnonce123", "alice-512",
                               "cnonce123", NULL, &o, want, NULL),
                     KC_SASL_DONE);
    assert_out(&o, want);
    /* Only the client nonce (no server part), or a changed server part: refused. */
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=alice,r=cnonce123", "alice-secret",
                               NULL, "cnonce123", &o, want, NULL),
                     KC_SASL_FAILED);
    assert_int_equal(o.error, KC_ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(o.message, GENERIC_256);
    assert_string_equal(o.reason, "Invalid client nonce in the final client message.");
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=alice,r=c", "alice-secret", NULL,
                               "cAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &o, want, NULL),
                     KC_SASL_FAILED);
}

static void test_scram_refusals(void **state)
{
    fx_t *f = *state;
    kc_sasl_step_t o;
    char want[200];
    /* Wrong password: the final message fails with the generic message. */
    assert_int_equal(
        scram_run(f, KC_SASL_SCRAM_SHA_256, "n,,n=alice,r=n1", "wrong", NULL, NULL, &o, want, NULL),
        KC_SASL_FAILED);
    assert_int_equal(o.error, KC_ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(o.message, GENERIC_256);
    assert_string_equal(o.reason, "Invalid client credentials");
    /* A mechanism the user has no credential for counts as an unknown user. */
    assert_int_equal(scram_run(f, KC_SASL_SCRAM_SHA_512, "n,,n=a=2Cb=3Dc,r=n1", "odd", NULL, NULL,
                               &o, want, NULL),
                     KC_SASL_FAILED);
    /* authzid other than the user: told at once. */
    kc_sasl_server_t *s = server(f, KC_SASL_SCRAM_SHA_256);
    assert_int_equal(step_str(s, "n,a=bob,n=alice,r=n1", &o), KC_SASL_FAILED);
    assert_string_equal(o.message, "Authentication failed: Client requested an authorization id "
                                   "that is different from username");
    kc_sasl_server_free(s);
    /* Delegation tokens are not supported. */
    s = server(f, KC_SASL_SCRAM_SHA_256);
    assert_int_equal(step_str(s, "n,,n=alice,r=n1,tokenauth=TRUE", &o), KC_SASL_FAILED);
    assert_string_equal(o.message, GENERIC_256);
    kc_sasl_server_free(s);
    /* A stored credential below the minimum iterations. */
    const uint8_t salt[4] = {1, 2, 3, 4};
    add_user(f, "weak", KC_SCRAM_SHA_256, "w", salt, 4, 1000);
    s = server(f, KC_SASL_SCRAM_SHA_256);
    assert_int_equal(step_str(s, "n,,n=weak,r=n1", &o), KC_SASL_FAILED);
    kc_sasl_server_free(s);
}

static void test_scram_unknown_user(void **state)
{
    fx_t *f = *state;
    kc_sasl_step_t o;
    char sf1[256], sf2[256], sf3[256];
    const char *users[3] = {"nobody", "nobody", "somebody"};
    char *outs[3] = {sf1, sf2, sf3};
    for (int i = 0; i < 3; i++) {
        kc_sasl_server_t *s = server(f, KC_SASL_SCRAM_SHA_256);
        char first[64];
        snprintf(first, sizeof(first), "n,,n=%s,r=n1", users[i]);
        /* The same first step as a known user... */
        assert_int_equal(step_str(s, first, &o), KC_SASL_CONTINUE);
        memcpy(outs[i], o.out, o.out_len);
        outs[i][o.out_len] = '\0';
        /* ...then the same failure as a wrong password. */
        char fin[1024], want[200];
        client_final(KC_SCRAM_SHA_256, "guess", "n=x,r=n1", outs[i], NULL, NULL, fin, want);
        assert_int_equal(step_str(s, fin, &o), KC_SASL_FAILED);
        assert_int_equal(o.error, KC_ERR_SASL_AUTHENTICATION_FAILED);
        assert_string_equal(o.message, GENERIC_256);
        kc_sasl_server_free(s);
    }
    /* A Kafka-like salt (26 base-36 characters), 4096 iterations, stable per name. */
    const char *s1 = strstr(sf1, ",s="), *s2 = strstr(sf2, ",s="), *s3 = strstr(sf3, ",s=");
    assert_non_null(s1);
    assert_string_equal(s1, s2);
    assert_string_not_equal(s1, s3);
    assert_non_null(strstr(s1, ",i=4096"));
    uint8_t salt[64];
    int n =
        EVP_DecodeBlock(salt, (const unsigned char *)s1 + 3, (int)(strchr(s1 + 1, ',') - s1 - 3));
    assert_int_equal(n - 1, 26); /* 28 characters of base64 with one '=' */
    for (int i = 0; i < 26; i++)
        assert_non_null(strchr("0123456789abcdefghijklmnopqrstuvwxyz", salt[i]));
}

static void test_scram_malformed(void **state)
{
    fx_t *f = *state;
    static const char *const firsts[] = {
        "",
        "n,,n=alice",
        "n,,n=alice,r=",
        "n,,n=,r=abc",
        "y,,n=alice,r=abc",
        "p=tls-unique,,n=alice,r=abc",
        "n,n=alice,r=abc",
        "n,,n=al=ice,r=abc",
        "n,,n=al=2,r=abc",
        "n,,n=alice,r=a b",
        "n,,n=alice,r=abc,",
        "n,,n=alice,r=abc,1x=2",
        "n,,n=alice,r=abc,x=",
        "n,,n=al\xc3\xa9,r=abc",
        "n,a=,n=alice,r=abc",
        "n,,r=abc,n=alice",
        "N,,n=alice,r=abc",
    };
    for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
        kc_sasl_server_t *s = server(f, KC_SASL_SCRAM_SHA_256);
        kc_sasl_step_t o;
        if (step_str(s, firsts[i], &o) != KC_SASL_FAILED)
            fail_msg("accepted '%s'", firsts[i]);
        assert_string_equal(o.message, GENERIC_256);
        kc_sasl_server_free(s);
    }
    /* A NUL inside the message. */
    kc_sasl_server_t *s = server(f, KC_SASL_SCRAM_SHA_256);
    kc_sasl_step_t o;
    assert_int_equal(kc_sasl_server_step(s, (const uint8_t *)"n,,n=a\0b,r=x", 12, &o),
                     KC_SASL_FAILED);
    kc_sasl_server_free(s);
    static const char *const finals[] = {
        "",
        "c=biws",
        "c=biws,r=",
        "c=bi,r=n1,p=AAAA",
        "c=biws,p=AAAA",
        "c=biws,r=n1,p=AAA",
        "c=biws,r=n1,p=AAAA,",
        "r=n1,c=biws,p=AAAA",
        "c=biws,r=n1,e x=1,p=AAAA",
    };
    for (size_t i = 0; i < sizeof(finals) / sizeof(finals[0]); i++) {
        s = server(f, KC_SASL_SCRAM_SHA_256);
        assert_int_equal(step_str(s, "n,,n=alice,r=n1", &o), KC_SASL_CONTINUE);
        if (step_str(s, finals[i], &o) != KC_SASL_FAILED)
            fail_msg("accepted final '%s'", finals[i]);
        assert_int_equal(o.error, KC_ERR_SASL_AUTHENTICATION_FAILED);
        /* Failed is final. */
        assert_int_equal(step_str(s, "n,,n=alice,r=n1", &o), KC_SASL_FAILED);
        assert_int_equal(o.error, KC_ERR_ILLEGAL_SASL_STATE);
        kc_sasl_server_free(s);
    }
}

/* ---- PLAIN --------------------------------------------------------------------------------- */

static int plain(fx_t *f, const char *msg, size_t len, kc_sasl_step_t *o, char *principal)
{
    kc_sasl_server_t *s = server(f, KC_SASL_PLAIN);
    int rc = kc_sasl_server_step(s, (const uint8_t *)msg, len, o);
    if (rc == KC_SASL_DONE) {
        strcpy(principal, kc_sasl_server_principal(s)->text);
        assert_int_equal(o->out_len, 0);
    }
    static char msg_copy[200];
    if (o->message) {
        snprintf(msg_copy, sizeof(msg_copy), "%s", o->message);
        o->message = msg_copy;
    }
    kc_sasl_server_free(s);
    return rc;
}

static void test_plain(void **state)
{
    fx_t *f = *state;
    kc_sasl_step_t o;
    char who[64] = "";
    const char *generic = "Authentication failed during authentication due to invalid "
                          "credentials with SASL mechanism PLAIN";
    const char *bad = "Authentication failed: Invalid username or password";
#define M(lit) lit, sizeof(lit) - 1
    assert_int_equal(plain(f, M("\0alice\0alice-secret"), &o, who), KC_SASL_DONE);
    assert_string_equal(who, "User:alice");
    assert_int_equal(plain(f, M("alice\0alice\0alice-secret"), &o, who), KC_SASL_DONE);
    /* Fields after a third NUL are ignored, as PlainSaslServer.split does. */
    assert_int_equal(plain(f, M("\0bob\0b\0junk"), &o, who), KC_SASL_DONE);
    assert_string_equal(who, "User:bob");
    assert_int_equal(plain(f, M("bob\0alice\0alice-secret"), &o, who), KC_SASL_FAILED);
    assert_string_equal(o.message, "Authentication failed: Client requested an authorization id "
                                   "that is different from username");
    assert_int_equal(plain(f, M("\0alice\0wrong"), &o, who), KC_SASL_FAILED);
    assert_int_equal(o.error, KC_ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(o.message, bad);
    assert_int_equal(plain(f, M("\0alice\0alice-secreT"), &o, who), KC_SASL_FAILED);
    assert_int_equal(plain(f, M("\0alice\0alice-secret2"), &o, who), KC_SASL_FAILED);
    assert_int_equal(plain(f, M("\0nobody\0alice-secret"), &o, who), KC_SASL_FAILED);
    assert_string_equal(o.message, bad);
    assert_int_equal(plain(f, M("\0\0pw"), &o, who), KC_SASL_FAILED);
    assert_string_equal(o.message, generic);
    assert_string_equal(o.reason, "Authentication failed: username not specified");
    assert_int_equal(plain(f, M("\0alice"), &o, who), KC_SASL_FAILED);
    assert_string_equal(o.message, generic);
    assert_int_equal(plain(f, M("alice"), &o, who), KC_SASL_FAILED);
    assert_int_equal(plain(f, M(""), &o, who), KC_SASL_FAILED);
#undef M
    /* Re-authentication changes the wording. */
    kc_sasl_server_t *s =
        kc_sasl_server_new(KC_SASL_PLAIN, &f->creds, script_rand(&f->script), true);
    assert_int_equal(kc_sasl_server_step(s, (const uint8_t *)"", 0, &o), KC_SASL_FAILED);
    assert_string_equal(o.message, "Authentication failed during re-authentication due to "
                                   "invalid credentials with SASL mechanism PLAIN");
    kc_sasl_server_free(s);
}

static void test_mechanisms(void **state)
{
    (void)state;
    assert_int_equal(kc_sasl_mech_parse(S("PLAIN")), KC_SASL_PLAIN);
    assert_int_equal(kc_sasl_mech_parse(S("SCRAM-SHA-256")), KC_SASL_SCRAM_SHA_256);
    assert_int_equal(kc_sasl_mech_parse(S("SCRAM-SHA-512")), KC_SASL_SCRAM_SHA_512);
    assert_int_equal(kc_sasl_mech_parse(S("scram-sha-256")), -1);
    assert_int_equal(kc_sasl_mech_parse(S("GSSAPI")), -1);
    assert_int_equal(kc_sasl_mech_parse(S("OAUTHBEARER")), -1);
    assert_int_equal(kc_sasl_mech_parse(KC_STR_NULL), -1);
    for (int m = 0; m < KC_SASL_MECH_COUNT; m++)
        assert_int_equal(kc_sasl_mech_parse(kc_str_c(kc_sasl_mech_name(m))), m);
    assert_null(kc_sasl_mech_name(KC_SASL_MECH_COUNT));
    assert_int_equal(kc_sasl_mech_scram(KC_SASL_PLAIN), KC_SCRAM_UNKNOWN);
    assert_null(kc_sasl_server_new(7, NULL, kc_auth_rand_default(), false));
    uint8_t b[8] = {0}, z[8] = {0};
    kc_auth_rand_t r = kc_auth_rand_default();
    assert_int_equal(r.fill(r.arg, b, 8), 0);
    assert_memory_not_equal(b, z, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rfc7677_example, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_good_exchanges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_after_alter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_old_librdkafka_nonce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_unknown_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain, setup, teardown),
        cmocka_unit_test(test_mechanisms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
