/* sasl.c - SASL server mechanisms as step functions: PLAIN (RFC 4616) and SCRAM-SHA-256/512
 * (RFC 5802, RFC 7677), with Kafka's behaviour (PlainSaslServer, ScramSaslServer,
 * ScramMessages, ScramFormatter, and SaslServerAuthenticator for what the client is told).
 *
 * A server is made per exchange and fed client tokens; each step returns a token to send, DONE
 * with the principal, or FAILED with Kafka's error and message. Nothing here blocks or does
 * I/O, so the connection (src/net) drives it from the event loop.
 *
 * SCRAM messages are parsed field by field (split at ','), which accepts exactly what Kafka's
 * regular expressions accept: only ASCII (\x01-\x7F) in names and values, printable ASCII in
 * nonces, strict base64. Where kcoord differs from Kafka 4.4, on purpose:
 *   - Nonce of the client-final message: Kafka 4 requires it to equal the server-first nonce
 *     (cnonce + snonce), as RFC 5802 says. librdkafka before 2.6.1 (Debian 12's 2.0.2, kcat)
 *     sends cnonce + (cnonce + snonce): it prepended its own nonce a second time
 *     (librdkafka PR #4895). Kafka 3.8.1 and 3.9 accepted any nonce that ENDS WITH the
 *     server-first nonce, and so do we: the server's random part is still checked, so a replay
 *     of an old exchange still fails, and the proof covers the nonce the client sent.
 *   - Unknown user: Kafka fails the first message at once; we answer with a fake credential
 *     derived from a secret and the name (same salt every time, Kafka-like salt and 4096
 *     iterations) and fail the final message, so an unknown user costs the same steps and gets
 *     the same answer as a wrong password (RFC 5802 section 9).
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth_int.h"
#include "proto/errors.h"

/* ---- Mechanisms and randomness ------------------------------------------------------------- */

static const char *const MECH_NAMES[KC_SASL_MECH_COUNT] = {"PLAIN", "SCRAM-SHA-256",
                                                           "SCRAM-SHA-512"};

const char *kc_sasl_mech_name(int mech)
{
    return mech >= 0 && mech < KC_SASL_MECH_COUNT ? MECH_NAMES[mech] : NULL;
}

int kc_sasl_mech_parse(kc_str_t name)
{
    for (int i = 0; i < KC_SASL_MECH_COUNT; i++)
        if (kc_str_eq_c(name, MECH_NAMES[i]))
            return i;
    return -1;
}

int8_t kc_sasl_mech_scram(int mech)
{
    return mech == KC_SASL_SCRAM_SHA_256   ? KC_SCRAM_SHA_256
           : mech == KC_SASL_SCRAM_SHA_512 ? KC_SCRAM_SHA_512
                                           : KC_SCRAM_UNKNOWN;
}

static int rand_openssl(void *arg, uint8_t *buf, size_t n)
{
    (void)arg;
    return RAND_bytes(buf, (int)n) == 1 ? 0 : -1;
}

kc_auth_rand_t kc_auth_rand_default(void)
{
    return (kc_auth_rand_t){rand_openssl, NULL};
}

/* ---- Base64, strictly as Kafka's BASE64 pattern -------------------------------------------- */

static bool b64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* (?:[b64]{4})*(?:[b64]{3}=|[b64]{2}==)? ; decodes into out (cap bytes), or only checks when
 * out is NULL. -1 when malformed or too long; else the decoded length. */
static int b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 != 0)
        return -1;
    size_t pad = 0;
    for (size_t i = 0; i < n; i++) {
        if (b64_char(s[i]))
            continue;
        if (s[i] == '=' && i >= n - 2 && (i == n - 1 || s[n - 1] == '=')) {
            pad++;
            continue;
        }
        return -1;
    }
    if (n == 0 || out == NULL)
        return (int)(n / 4 * 3 - pad);
    if (n / 4 * 3 > cap)
        return -1;
    int got = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    if (got < 0)
        return -1;
    return got - (int)pad;
}

/* Append base64 of in to the buffer at dst (which has room for 4*ceil(n/3)+1). */
static size_t b64_encode(const uint8_t *in, size_t n, char *dst)
{
    return (size_t)EVP_EncodeBlock((unsigned char *)dst, in, (int)n);
}

/* ---- The server ---------------------------------------------------------------------------- */

enum { ST_FIRST, ST_FINAL, ST_DONE, ST_FAILED };

struct kc_sasl_server_s {
    int mech;
    int8_t scram; /* KC_SCRAM_* or UNKNOWN for PLAIN */
    int state;
    bool reauth;
    const kc_sasl_creds_t *creds;
    kc_auth_rand_t rand;
    kc_principal_t principal;
    /* SCRAM, between the two messages. */
    char *user; /* unescaped user name, NUL-terminated */
    size_t user_len;
    char *first_bare; /* client-first-message-bare as Kafka rebuilds it */
    size_t first_bare_len;
    char *server_first;
    size_t server_first_len;
    size_t nonce_len; /* cnonce + snonce, the start of server_first after "r=" */
    uint8_t salt_buf[64];
    kc_scram_cred_t cred; /* salt points into salt_buf or salt_heap */
    uint8_t *salt_heap;
    /* The last step's output. */
    char *out;
    char message[160];
};

kc_sasl_server_t *kc_sasl_server_new(int mech, const kc_sasl_creds_t *creds, kc_auth_rand_t rand,
                                     bool reauth)
{
    if (mech < 0 || mech >= KC_SASL_MECH_COUNT || creds == NULL)
        return NULL;
    kc_sasl_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->mech = mech;
    s->scram = kc_sasl_mech_scram(mech);
    s->creds = creds;
    s->rand = rand;
    s->reauth = reauth;
    return s;
}

static void scram_clear(kc_sasl_server_t *s)
{
    free(s->user);
    free(s->first_bare);
    free(s->server_first);
    free(s->salt_heap);
    s->user = s->first_bare = s->server_first = NULL;
    s->salt_heap = NULL;
    OPENSSL_cleanse(&s->cred, sizeof(s->cred));
}

void kc_sasl_server_free(kc_sasl_server_t *s)
{
    if (s == NULL)
        return;
    scram_clear(s);
    free(s->out);
    kc_principal_free(&s->principal);
    free(s);
}

const kc_principal_t *kc_sasl_server_principal(const kc_sasl_server_t *s)
{
    return s->state == ST_DONE ? &s->principal : NULL;
}

int kc_sasl_server_mech(const kc_sasl_server_t *s)
{
    return s->mech;
}

/* Fail with the generic message (a SaslException in Kafka: the client learns nothing). */
static int fail_generic(kc_sasl_server_t *s, kc_sasl_step_t *o, const char *reason)
{
    scram_clear(s);
    s->state = ST_FAILED;
    snprintf(s->message, sizeof(s->message),
             "Authentication failed during %s due to invalid credentials with SASL mechanism %s",
             s->reauth ? "re-authentication" : "authentication", MECH_NAMES[s->mech]);
    *o = (kc_sasl_step_t){KC_SASL_FAILED, NULL,  0, KC_ERR_SASL_AUTHENTICATION_FAILED,
                          s->message,     reason};
    return KC_SASL_FAILED;
}

/* Fail with a message the client is told (a SaslAuthenticationException in Kafka). */
static int fail_told(kc_sasl_server_t *s, kc_sasl_step_t *o, int16_t err, const char *msg)
{
    scram_clear(s);
    s->state = ST_FAILED;
    snprintf(s->message, sizeof(s->message), "%s", msg);
    *o = (kc_sasl_step_t){KC_SASL_FAILED, NULL, 0, err, s->message, msg};
    return KC_SASL_FAILED;
}

static int done(kc_sasl_server_t *s, kc_sasl_step_t *o, const char *user, size_t user_len,
                size_t out_len)
{
    if (kc_principal_user((kc_str_t){user, (int32_t)user_len}, &s->principal) != KC_AUTH_OK)
        return fail_generic(s, o, "out of memory");
    scram_clear(s);
    s->state = ST_DONE;
    *o = (kc_sasl_step_t){KC_SASL_DONE, (const uint8_t *)s->out, out_len, 0, NULL, NULL};
    return KC_SASL_DONE;
}

/* ---- PLAIN --------------------------------------------------------------------------------- */

static int plain_step(kc_sasl_server_t *s, const uint8_t *in, size_t n, kc_sasl_step_t *o)
{
    /* PlainSaslServer.split: up to three fields separated by NUL; a missing one is empty and
     * anything after a third NUL is ignored. */
    kc_str_t f[3] = {KC_STR_EMPTY, KC_STR_EMPTY, KC_STR_EMPTY};
    const char *p = (const char *)in, *end = p + n;
    for (int i = 0; i < 3; i++) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        f[i] = (kc_str_t){p, (int32_t)((z ? z : end) - p)};
        if (z == NULL)
            break;
        p = z + 1;
    }
    if (f[1].len == 0)
        return fail_generic(s, o, "Authentication failed: username not specified");
    if (f[2].len == 0)
        return fail_generic(s, o, "Authentication failed: password not specified");
    kc_str_t want = s->creds->plain_password ? s->creds->plain_password(s->creds->plain_arg, f[1])
                                             : KC_STR_NULL;
    /* Compare in constant time over the given password's length, known user or not. */
    bool ok = want.len == f[2].len;
    const char *cmp = ok ? want.p : f[2].p;
    ok = CRYPTO_memcmp(cmp, f[2].p, (size_t)f[2].len) == 0 && ok;
    if (!ok)
        return fail_told(s, o, KC_ERR_SASL_AUTHENTICATION_FAILED,
                         "Authentication failed: Invalid username or password");
    if (f[0].len != 0 && !kc_str_eq(f[0], f[1]))
        return fail_told(s, o, KC_ERR_SASL_AUTHENTICATION_FAILED,
                         "Authentication failed: Client requested an authorization id that is "
                         "different from username");
    return done(s, o, f[1].p, (size_t)f[1].len, 0);
}

/* ---- SCRAM message pieces ------------------------------------------------------------------ */

/* [\x01-\x7F] except those in `not`. */
static bool ascii_not(char c, const char * not )
{
    unsigned char u = (unsigned char)c;
    return u >= 0x01 && u <= 0x7f && strchr(not, c) == NULL;
}

/* SASLNAME = ([\x01-\x7F except '=' ',']  | "=2C" | "=3D")+ */
static bool saslname_ok(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '=') {
            if (i + 2 >= n)
                return false;
            if (!((p[i + 1] == '2' && p[i + 2] == 'C') || (p[i + 1] == '3' && p[i + 2] == 'D')))
                return false;
            i += 2;
        } else if (!ascii_not(p[i], "=,")) {
            return false;
        }
    }
    return true;
}

/* VALUE = [\x01-\x7F except ',']+ ; PRINTABLE = [\x21-\x7E except ',']+ */
static bool value_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ascii_not(p[i], ","))
            return false;
    return n > 0;
}

static bool printable_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x21 || (unsigned char)p[i] > 0x7e || p[i] == ',')
            return false;
    return n > 0;
}

/* ALPHA "=" VALUE */
static bool extension_ok(const char *p, size_t n, size_t *key_len)
{
    size_t k = 0;
    while (k < n && ((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z')))
        k++;
    *key_len = k;
    return k > 0 && k < n && p[k] == '=' && value_ok(p + k + 1, n - k - 1);
}

/* A cursor over ','-separated fields. */
typedef struct cur_s {
    const char *p, *end;
    bool over; /* the last field has been taken */
} cur_t;

/* The next field: sets f/len; false when none is left. */
static bool next_field(cur_t *c, const char **f, size_t *len)
{
    if (c->over)
        return false;
    const char *comma = memchr(c->p, ',', (size_t)(c->end - c->p));
    *f = c->p;
    *len = (size_t)((comma ? comma : c->end) - c->p);
    if (comma)
        c->p = comma + 1;
    else
        c->over = true;
    return true;
}

static bool has_prefix(const char *f, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && memcmp(f, pre, k) == 0;
}

/* Unescape =2C and =3D of a valid SASLNAME into a new string. */
static char *saslname_decode(const char *p, size_t n, size_t *out_len)
{
    char *u = malloc(n + 1);
    if (u == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '=') {
            u[k++] = p[i + 1] == '2' ? ',' : '=';
            i += 2;
        } else {
            u[k++] = p[i];
        }
    }
    u[k] = '\0';
    *out_len = k;
    return u;
}

/* The fake credential of an unknown user: a Kafka-looking salt (26 base-36 characters, as
 * ScramFormatter.secureRandomBytes makes) and keys derived from the secret and the name. */
static void fake_cred(kc_sasl_server_t *s)
{
    uint8_t mac[64], msg[600];
    size_t ul = s->user_len < 512 ? s->user_len : 512;
    msg[0] = (uint8_t)s->scram;
    memcpy(msg + 1, s->user, ul);
    uint8_t digest[64];
    for (int i = 0; i < 3; i++) {
        msg[1 + ul] = (uint8_t)i;
        kc_auth__hmac(KC_SCRAM_SHA_512, s->creds->fake_secret, 32, msg, ul + 2, mac);
        if (i == 0) {
            memcpy(digest, mac, 64);
        } else {
            memcpy(i == 1 ? s->cred.stored_key : s->cred.server_key, mac, KC_SCRAM_MAX_KEY);
        }
    }
    static const char b36[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < 26; i++)
        s->salt_buf[i] = (uint8_t)b36[digest[i] % 36];
    s->cred.salt = s->salt_buf;
    s->cred.salt_len = 26;
    s->cred.key_len = kc_scram_key_len(s->scram);
    s->cred.iterations = KC_SCRAM_MIN_ITERATIONS;
}

/* ---- SCRAM client-first -------------------------------------------------------------------- */

typedef struct first_s {
    const char *authzid;
    size_t authzid_len;
    const char *name;
    size_t name_len;
    const char *nonce;
    size_t nonce_len;
    const char *bare_ext; /* the extensions as sent, from the ',' before the first, or NULL */
    size_t bare_ext_len;
    bool tokenauth;
} first_t;

/* "n,(a=SASLNAME)?,(m=VALUE,)?n=SASLNAME,r=PRINTABLE(,ALPHA=VALUE)*" */
static bool parse_first(const char *p, size_t n, first_t *m)
{
    cur_t c = {p, p + n, false};
    const char *f;
    size_t len;
    memset(m, 0, sizeof(*m));
    if (!next_field(&c, &f, &len) || len != 1 || f[0] != 'n')
        return false;
    if (!next_field(&c, &f, &len))
        return false;
    if (len != 0) {
        if (!has_prefix(f, len, "a=") || !saslname_ok(f + 2, len - 2))
            return false;
        m->authzid = f + 2;
        m->authzid_len = len - 2;
    }
    if (!next_field(&c, &f, &len))
        return false;
    if (has_prefix(f, len, "m=")) {
        if (!value_ok(f + 2, len - 2) || !next_field(&c, &f, &len))
            return false;
    }
    if (!has_prefix(f, len, "n=") || !saslname_ok(f + 2, len - 2))
        return false;
    m->name = f + 2;
    m->name_len = len - 2;
    if (!next_field(&c, &f, &len) || !has_prefix(f, len, "r=") || !printable_ok(f + 2, len - 2))
        return false;
    m->nonce = f + 2;
    m->nonce_len = len - 2;
    m->bare_ext = c.over ? NULL : c.p - 1;
    m->bare_ext_len = c.over ? 0 : (size_t)(c.end - (c.p - 1));
    while (next_field(&c, &f, &len)) {
        size_t kl;
        if (!extension_ok(f, len, &kl))
            return false;
        /* ScramExtensions.tokenAuthenticated: Boolean.parseBoolean, case-insensitive. */
        if (kl == 9 && memcmp(f, "tokenauth", 9) == 0)
            m->tokenauth = len - kl - 1 == 4 && strncasecmp(f + kl + 1, "true", 4) == 0;
    }
    return true;
}

/* The server's part of the nonce: 30 characters of PRINTABLE (0x21-0x7E but ','), each from one
 * random byte (b % 93; the bias leaves over 190 bits, Kafka's has 130). 30 is the length of
 * RFC 7677's example, which the unit test replays byte for byte. */
#define SNONCE_LEN 30
static const char NONCE_CHARS[] = "!\"#$%&'()*+-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
_Static_assert(sizeof(NONCE_CHARS) - 1 == 93, "PRINTABLE without ','");

static int scram_first(kc_sasl_server_t *s, const uint8_t *in, size_t n, kc_sasl_step_t *o)
{
    first_t m;
    if (!parse_first((const char *)in, n, &m))
        return fail_generic(s, o, "Invalid SCRAM client first message format");
    s->user = saslname_decode(m.name, m.name_len, &s->user_len);
    if (s->user == NULL)
        return fail_generic(s, o, "out of memory");
    if (m.tokenauth)
        return fail_generic(s, o,
                            "Token Authentication failed: delegation tokens are not "
                            "supported");
    const kc_scram_cred_t *c =
        s->creds->scram ? s->creds->scram(s->creds->scram_arg,
                                          (kc_str_t){s->user, (int32_t)s->user_len}, s->scram)
                        : NULL;
    if (c != NULL && c->key_len == kc_scram_key_len(s->scram)) {
        s->cred = *c;
        s->cred.salt =
            c->salt_len <= sizeof(s->salt_buf) ? s->salt_buf : (s->salt_heap = malloc(c->salt_len));
        if (s->cred.salt == NULL)
            return fail_generic(s, o, "out of memory");
        if (c->salt_len)
            memcpy(s->cred.salt, c->salt, c->salt_len);
    } else {
        fake_cred(s);
    }
    if (m.authzid_len != 0) {
        size_t al;
        char *az = saslname_decode(m.authzid, m.authzid_len, &al);
        bool same = az != NULL && al == s->user_len && memcmp(az, s->user, al) == 0;
        free(az);
        if (!same)
            return fail_told(s, o, KC_ERR_SASL_AUTHENTICATION_FAILED,
                             "Authentication failed: Client requested an authorization id that "
                             "is different from username");
    }
    if (s->cred.iterations < KC_SCRAM_MIN_ITERATIONS)
        return fail_generic(s, o, "Iterations less than the minimum");
    /* client-first-message-bare: "n=<name>,r=<nonce>" plus the extensions. */
    s->first_bare_len = 2 + m.name_len + 3 + m.nonce_len + m.bare_ext_len;
    s->first_bare = malloc(s->first_bare_len + 1);
    /* Server nonce: SNONCE_LEN printable characters, each picked by one random byte. */
    uint8_t rnd[SNONCE_LEN];
    char snonce[SNONCE_LEN + 1];
    if (s->first_bare == NULL || s->rand.fill(s->rand.arg, rnd, sizeof(rnd)) != 0)
        return fail_generic(s, o, "out of memory or no randomness");
    for (size_t i = 0; i < SNONCE_LEN; i++)
        snonce[i] = NONCE_CHARS[rnd[i] % (sizeof(NONCE_CHARS) - 1)];
    snonce[SNONCE_LEN] = '\0';
    snprintf(s->first_bare, s->first_bare_len + 1, "n=%.*s,r=%.*s%.*s", (int)m.name_len, m.name,
             (int)m.nonce_len, m.nonce, (int)m.bare_ext_len, m.bare_ext ? m.bare_ext : "");
    size_t salt64 = (s->cred.salt_len + 2) / 3 * 4;
    size_t cap = 2 + m.nonce_len + SNONCE_LEN + 3 + salt64 + 3 + 12 + 1;
    free(s->out);
    s->out = malloc(cap);
    s->server_first = malloc(cap);
    if (s->out == NULL || s->server_first == NULL)
        return fail_generic(s, o, "out of memory");
    int k = snprintf(s->server_first, cap, "r=%.*s%s,s=", (int)m.nonce_len, m.nonce, snonce);
    k += (int)b64_encode(s->cred.salt, s->cred.salt_len, s->server_first + k);
    k += snprintf(s->server_first + k, cap - (size_t)k, ",i=%d", (int)s->cred.iterations);
    s->server_first_len = (size_t)k;
    s->nonce_len = m.nonce_len + SNONCE_LEN;
    memcpy(s->out, s->server_first, (size_t)k + 1);
    s->state = ST_FINAL;
    *o = (kc_sasl_step_t){KC_SASL_CONTINUE, (const uint8_t *)s->out, (size_t)k, 0, NULL, NULL};
    return KC_SASL_CONTINUE;
}

/* ---- SCRAM client-final -------------------------------------------------------------------- */

/* "c=BASE64,r=PRINTABLE(,ALPHA=VALUE)*,p=BASE64": the nonce, the part AuthMessage uses
 * ("c=...,r=<nonce>", as ClientFinalMessage.clientFinalMessageWithoutProof rebuilds it), the
 * proof. */
static bool parse_final(const char *p, size_t n, const char **nonce, size_t *nonce_len,
                        size_t *without_proof_len, uint8_t *proof, int *proof_len)
{
    cur_t c = {p, p + n, false};
    const char *f;
    size_t len;
    /* The channel binding is checked for form only: Kafka never compares it with the gs2
     * header (ScramSaslServer), so neither do we. */
    if (!next_field(&c, &f, &len) || !has_prefix(f, len, "c=") ||
        b64_decode(f + 2, len - 2, NULL, 0) < 0)
        return false;
    if (!next_field(&c, &f, &len) || !has_prefix(f, len, "r=") || !printable_ok(f + 2, len - 2))
        return false;
    *nonce = f + 2;
    *nonce_len = len - 2;
    *without_proof_len = (size_t)(f + len - p);
    for (;;) {
        if (!next_field(&c, &f, &len))
            return false;
        if (c.over) { /* the last field: the proof */
            if (!has_prefix(f, len, "p="))
                return false;
            *proof_len = b64_decode(f + 2, len - 2, proof, KC_SCRAM_MAX_KEY + 3);
            return *proof_len >= 0;
        }
        size_t kl;
        if (!extension_ok(f, len, &kl))
            return false;
    }
}

static int scram_final(kc_sasl_server_t *s, const uint8_t *in, size_t n, kc_sasl_step_t *o)
{
    const char *nonce;
    size_t nonce_len, wp_len;
    uint8_t proof[KC_SCRAM_MAX_KEY + 3];
    int proof_len;
    if (!parse_final((const char *)in, n, &nonce, &nonce_len, &wp_len, proof, &proof_len))
        return fail_generic(s, o, "Invalid SCRAM client final message format");
    const char *want = s->server_first + 2;
    /* Kafka 3.9's endsWith (see the top of this file), which equality satisfies. */
    if (nonce_len < s->nonce_len ||
        memcmp(nonce + nonce_len - s->nonce_len, want, s->nonce_len) != 0)
        return fail_generic(s, o, "Invalid client nonce in the final client message.");
    /* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
    size_t am_len = s->first_bare_len + 1 + s->server_first_len + 1 + wp_len;
    char *am = malloc(am_len);
    if (am == NULL)
        return fail_generic(s, o, "out of memory");
    memcpy(am, s->first_bare, s->first_bare_len);
    am[s->first_bare_len] = ',';
    memcpy(am + s->first_bare_len + 1, s->server_first, s->server_first_len);
    am[s->first_bare_len + 1 + s->server_first_len] = ',';
    memcpy(am + s->first_bare_len + 2 + s->server_first_len, in, wp_len);
    size_t kl = s->cred.key_len;
    uint8_t sig[KC_SCRAM_MAX_KEY], key[KC_SCRAM_MAX_KEY], computed[KC_SCRAM_MAX_KEY];
    int bad = kc_auth__hmac(s->scram, s->cred.stored_key, kl, (uint8_t *)am, am_len, sig);
    for (size_t i = 0; i < kl; i++)
        key[i] = proof[i % (size_t)(proof_len ? proof_len : 1)] ^ sig[i];
    bad |= kc_auth__hash(s->scram, key, kl, computed);
    bad |= (size_t)proof_len != kl;
    bad |= CRYPTO_memcmp(computed, s->cred.stored_key, kl) != 0;
    if (bad) {
        free(am);
        return fail_generic(s, o, "Invalid client credentials");
    }
    uint8_t server_sig[KC_SCRAM_MAX_KEY];
    bad = kc_auth__hmac(s->scram, s->cred.server_key, kl, (uint8_t *)am, am_len, server_sig);
    free(am);
    free(s->out);
    s->out = malloc(2 + (kl + 2) / 3 * 4 + 1);
    if (bad || s->out == NULL)
        return fail_generic(s, o, "out of memory");
    memcpy(s->out, "v=", 2);
    size_t len = 2 + b64_encode(server_sig, kl, s->out + 2);
    return done(s, o, s->user, s->user_len, len);
}

int kc_sasl_server_step(kc_sasl_server_t *s, const uint8_t *in, size_t in_len, kc_sasl_step_t *o)
{
    static const uint8_t none[1] = {0};
    if (in == NULL)
        in = none;
    switch (s->state) {
    case ST_FIRST:
        if (s->mech == KC_SASL_PLAIN)
            return plain_step(s, in, in_len, o);
        return scram_first(s, in, in_len, o);
    case ST_FINAL:
        return scram_final(s, in, in_len, o);
    default:
        snprintf(s->message, sizeof(s->message), "Unexpected challenge in Sasl server state %s",
                 s->state == ST_DONE ? "COMPLETE" : "FAILED");
        *o = (kc_sasl_step_t){KC_SASL_FAILED, NULL,      0, KC_ERR_ILLEGAL_SASL_STATE,
                              s->message,     s->message};
        return KC_SASL_FAILED;
    }
}
