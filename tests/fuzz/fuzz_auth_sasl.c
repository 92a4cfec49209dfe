/* fuzz_auth_sasl.c - libFuzzer target: the SASL servers' message parsers and the auth records
 * (src/auth/auth.h).
 *
 * Input format: one mode byte, then the tokens, separated by the two bytes 0xFF 0xFF.
 *   mode % 4 == 0, 1, 2: a SASL exchange with mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
 *     against users "alice" (password "alice-secret", SCRAM credentials of both mechanisms)
 *     and "bob" (PLAIN only). Every token is one client token. A token that starts with the
 *     byte 0x01 has it replaced by "c=biws,r=<the nonce of the last server-first message>", so
 *     that inputs reach the client-final parser and the proof check.
 *   mode % 4 == 3: records for kc_auth_apply, each token a key, 0xFE, a value (no 0xFE: a
 *     tombstone); then a snapshot of the state is replayed into a second state, which must
 *     take every record.
 * Checked: no crash or sanitizer report; a step's status is one of the three; DONE carries a
 * principal "User:..." and FAILED an error and a message; after DONE or FAILED every step is
 * ILLEGAL_SASL_STATE. Randomness is a counter, so runs are reproducible.
 */
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "fuzz.h"
#include "proto/errors.h"

static int counter_fill(void *arg, uint8_t *buf, size_t n)
{
    uint32_t *c = arg;
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)((*c)++ * 2654435761u >> 24);
    return 0;
}

static kc_str_t plain_pw(void *arg, kc_str_t user)
{
    (void)arg;
    if (kc_str_eq_c(user, "alice"))
        return KC_STR_LIT("alice-secret");
    if (kc_str_eq_c(user, "bob"))
        return KC_STR_LIT("b");
    return KC_STR_NULL;
}

static int apply_into(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    if (kc_auth_apply(arg, k, kl, v, vl) != KC_AUTH_OK)
        abort(); /* a snapshot always replays */
    return 0;
}

static int apply_direct(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    (void)kc_auth_apply(arg, k, kl, v, vl);
    return 0;
}

/* The next token of [*p, end) (separator 0xFF 0xFF); false when none is left. */
static bool next_token(const uint8_t **p, const uint8_t *end, const uint8_t **t, size_t *n)
{
    if (*p == NULL)
        return false;
    const uint8_t *q = *p;
    while (q + 1 < end && !(q[0] == 0xff && q[1] == 0xff))
        q++;
    if (q + 1 >= end)
        q = end;
    *t = *p;
    *n = (size_t)(q - *p);
    *p = q == end ? NULL : q + 2;
    return true;
}

static void records(const uint8_t *p, const uint8_t *end)
{
    kc_auth_t *a = kc_auth_new(NULL), *b = kc_auth_new(NULL);
    if (a == NULL || b == NULL)
        abort();
    const uint8_t *t;
    size_t n;
    while (next_token(&p, end, &t, &n)) {
        const uint8_t *sep = memchr(t, 0xfe, n);
        size_t kl = sep ? (size_t)(sep - t) : n;
        uint8_t *k = malloc(kl ? kl : 1), *v = NULL;
        size_t vl = sep ? n - kl - 1 : 0;
        memcpy(k, t, kl);
        if (sep) {
            v = malloc(vl ? vl : 1);
            memcpy(v, sep + 1, vl);
        }
        int rc = kc_auth_apply(a, k, kl, v, vl);
        if (rc != KC_AUTH_OK && rc != KC_AUTH_EINVAL)
            abort();
        free(k);
        free(v);
    }
    if (kc_auth_snapshot(a, apply_into, b) != KC_AUTH_OK)
        abort();
    if (kc_auth_acl_count(a) != kc_auth_acl_count(b))
        abort();
    kc_auth_free(a);
    kc_auth_free(b);
}

static void check_step(const kc_sasl_server_t *s, int rc, const kc_sasl_step_t *o)
{
    if (rc != o->status)
        abort();
    if (rc == KC_SASL_DONE) {
        const kc_principal_t *p = kc_sasl_server_principal(s);
        if (p == NULL || strncmp(p->text, "User:", 5) != 0)
            abort();
    } else if (rc == KC_SASL_FAILED) {
        if (o->error == 0 || o->message == NULL)
            abort();
    } else if (rc != KC_SASL_CONTINUE) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int mode = data[0] % 4;
    const uint8_t *p = data + 1, *end = data + size;
    if (mode == 3) {
        records(p, end);
        return 0;
    }
    kc_auth_t *a = kc_auth_new(NULL);
    if (a == NULL)
        abort();
    /* The salted passwords are worked out once: PBKDF2 would dominate every run. */
    static const uint8_t salt[] = "0123456789abcdef";
    static uint8_t sp[2][64];
    static bool have_sp;
    for (int8_t m = KC_SCRAM_SHA_256; m <= KC_SCRAM_SHA_512; m++) {
        if (!have_sp &&
            kc_scram_salted_password(m, KC_STR_LIT("alice-secret"), salt, 16, 4096, sp[m - 1]) != 0)
            abort();
        if (kc_auth_scram_record(KC_STR_LIT("alice"), m, salt, 16, sp[m - 1], kc_scram_key_len(m),
                                 4096, apply_direct, a) != 0)
            abort();
    }
    have_sp = true;
    kc_sasl_creds_t creds = {plain_pw, NULL, kc_auth_scram_lookup, a, {0}};
    uint32_t counter = 1;
    kc_sasl_server_t *s =
        kc_sasl_server_new(mode, &creds, (kc_auth_rand_t){counter_fill, &counter}, false);
    if (s == NULL)
        abort();
    char nonce[512] = "";
    int last = KC_SASL_CONTINUE;
    const uint8_t *t;
    size_t n;
    while (next_token(&p, end, &t, &n)) {
        uint8_t *tok;
        size_t tl;
        if (n > 0 && t[0] == 0x01) {
            size_t pre = strlen("c=biws,r=") + strlen(nonce);
            tl = pre + n - 1;
            tok = malloc(tl ? tl : 1);
            memcpy(tok, "c=biws,r=", 9);
            memcpy(tok + 9, nonce, strlen(nonce));
            memcpy(tok + pre, t + 1, n - 1);
        } else {
            tl = n;
            tok = malloc(n ? n : 1);
            memcpy(tok, t, n);
        }
        kc_sasl_step_t o;
        int rc = kc_sasl_server_step(s, tok, tl, &o);
        free(tok);
        check_step(s, rc, &o);
        if (last != KC_SASL_CONTINUE &&
            (rc != KC_SASL_FAILED || o.error != KC_ERR_ILLEGAL_SASL_STATE))
            abort();
        if (rc == KC_SASL_CONTINUE && o.out_len > 2 && o.out_len < sizeof(nonce)) {
            const char *c = memchr(o.out, ',', o.out_len);
            size_t k = c ? (size_t)(c - (const char *)o.out) - 2 : 0;
            memcpy(nonce, (const char *)o.out + 2, k);
            nonce[k] = '\0';
        }
        if (last == KC_SASL_CONTINUE)
            last = rc;
    }
    kc_sasl_server_free(s);
    kc_auth_free(a);
    return 0;
}
