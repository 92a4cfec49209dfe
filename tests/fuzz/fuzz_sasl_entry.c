/* fuzz_sasl_entry.c - libFuzzer target: what a client sends to a SASL_PLAINTEXT listener before it
 * has authenticated, through the API room's entry (kc_api_on_request and src/api/sasl.c).
 *
 * Input format: the bytes a client writes, cut into frames as the network room cuts them (a
 * 4-byte big-endian size, then the frame), with the connection's frame limits (which the SASL
 * exchange changes: sasl.server.max.receive.size, raw v0 tokens). Each frame goes to
 * kc_api_on_request on one connection of a SASL_PLAINTEXT listener that enables PLAIN (users
 * alice and bob), SCRAM-SHA-256 and SCRAM-SHA-512 (a SCRAM-SHA-256 credential for alice). The
 * input ends where the network room would stop: a frame outside the limits, a request answered
 * by closing the connection, or a completed authentication (what follows is served by the other
 * handlers, which other targets cover).
 *
 * The connection is a real kc_conn_t of the network room (its listener, principal, application
 * state and frame limits are the real ones), but it has no socket: answers are taken by the
 * wrapped kc_slot_reply, kc_slot_close and kc_slot_reply_close (-Wl,--wrap, see the Makefile),
 * which check that each request is answered exactly once and that a SaslAuthenticate answer
 * decodes. Any crash, leak or sanitizer report is a bug; so is a principal set without a
 * completed exchange (the connection's principal must be one of the users).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "fuzz.h"
#include "net/net_int.h"

static kc_conf_t conf;
static kc_auth_t *auth;
static kc_api_sasl_t *sasl;
static kc_net_endpoint_t ep = {.name = "SASL_PLAINTEXT", .protocol = KC_NET_SASL_PLAINTEXT};

/* What became of the current request. */
static int answered, closed;

void __wrap_kc_slot_reply(kc_slot_t *slot, uint8_t *buf, size_t len);
void __wrap_kc_slot_close(kc_slot_t *slot, const char *why);
void __wrap_kc_slot_reply_close(kc_slot_t *slot, uint8_t *buf, size_t len);

static void done(kc_slot_t *slot)
{
    if (answered || closed)
        abort(); /* a request answered twice */
    kc_arena_free(&slot->arena);
}

void __wrap_kc_slot_reply(kc_slot_t *slot, uint8_t *buf, size_t len)
{
    if (buf == NULL || len < 4)
        abort();
    free(buf);
    done(slot);
    answered = 1;
}

void __wrap_kc_slot_close(kc_slot_t *slot, const char *why)
{
    (void)why;
    done(slot);
    closed = 1;
}

void __wrap_kc_slot_reply_close(kc_slot_t *slot, uint8_t *buf, size_t len)
{
    __wrap_kc_slot_reply(slot, buf, len);
    closed = 1;
}

static int apply(void *arg, const uint8_t *key, size_t key_len, const uint8_t *value,
                 size_t value_len)
{
    return kc_auth_apply(arg, key, key_len, value, value_len) == KC_AUTH_OK ? 0 : -1;
}

static void setup(void)
{
    char err[256];
    kc_conf_init(&conf);
    if (kc_conf_set(&conf, "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                    KC_CONF_SRC_SET, err, sizeof err) != 0 ||
        kc_conf_set(&conf, "plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    "user_alice=\"alice-secret\" user_bob=\"bob-secret\";",
                    KC_CONF_SRC_SET, err, sizeof err) != 0 ||
        kc_conf_set(&conf, "sasl.server.max.receive.size", "65536", KC_CONF_SRC_SET, err,
                    sizeof err) != 0 ||
        kc_conf_set(&conf, "connection.failed.authentication.delay.ms", "0", KC_CONF_SRC_SET, err,
                    sizeof err) != 0) {
        fprintf(stderr, "fuzz_sasl_entry: %s\n", err);
        abort();
    }
    auth = kc_auth_new(&(kc_auth_conf_t){0});
    static const uint8_t salt[16] = "0123456789abcdef";
    uint8_t sp[64];
    if (auth == NULL ||
        kc_scram_salted_password(KC_SCRAM_SHA_256, KC_STR_LIT("alice-scram"), salt, sizeof salt,
                                 4096, sp) != KC_AUTH_OK ||
        kc_auth_scram_record(KC_STR_LIT("alice"), KC_SCRAM_SHA_256, salt, sizeof salt, sp, 32, 4096,
                             apply, auth) != KC_AUTH_OK)
        abort();
    const char *names[] = {"SASL_PLAINTEXT"};
    const int protos[] = {KC_NET_SASL_PLAINTEXT};
    sasl = kc_api_sasl_new(&conf, names, protos, 1, auth, err, sizeof err);
    if (sasl == NULL) {
        fprintf(stderr, "fuzz_sasl_entry: %s\n", err);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (sasl == NULL)
        setup();
    kc_api_ctx_t ctx = {.conf = &conf, .auth = auth, .sasl = sasl};
    kc_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return 0;
    c->ep = &ep;
    c->peer = (char *)"127.0.0.1:1";
    kc_conn_set_frames(c, KC_NET_MIN_FRAME, 65536); /* as a SASL listener accepts it */
    size_t off = 0;
    closed = 0;
    while (!closed && c->principal == NULL && size - off >= 4) {
        uint32_t n = (uint32_t)data[off] << 24 | (uint32_t)data[off + 1] << 16 |
                     (uint32_t)data[off + 2] << 8 | data[off + 3];
        uint32_t min = c->frame_max != 0 ? c->frame_min : KC_NET_MIN_FRAME;
        uint32_t max = c->frame_max != 0 ? c->frame_max : 1u << 20;
        if (n < min || n > max || size - off - 4 < n)
            break;
        kc_slot_t *slot = calloc(1, sizeof(*slot));
        if (slot == NULL)
            break;
        kc_arena_init(&slot->arena);
        slot->conn = c;
        uint8_t *frame = kc_arena_alloc(&slot->arena, n ? n : 1); /* a v0 token may be empty */
        if (frame == NULL) {
            free(slot);
            break;
        }
        memcpy(frame, data + off + 4, n);
        answered = 0;
        kc_api_on_request(&ctx, c, slot, frame, n);
        if (!answered && !closed)
            abort(); /* with no failure delay, every request here is answered at once */
        free(slot);
        off += 4 + (size_t)n;
    }
    if (c->principal != NULL && strcmp(c->principal, "User:alice") != 0 &&
        strcmp(c->principal, "User:bob") != 0)
        abort();
    if (c->app != NULL && c->app_free != NULL)
        c->app_free(c->app);
    free(c->principal);
    free(c);
    return 0;
}
