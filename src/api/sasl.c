/* sasl.c - SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's SaslServerAuthenticator.
 *
 * Each connection of a SASL listener carries a sasl_conn_t (kept by the network room as the
 * connection's application state). Until the client has authenticated only this file decides
 * what a frame may be:
 *   - the first request must be ApiVersions or SaslHandshake; anything else (another API, bytes
 *     that are not a Kafka request) closes the connection without an answer; after a valid
 *     ApiVersions only SaslHandshake may come (a second ApiVersions closes it too), after one
 *     answered with an error (a version not served, invalid software fields) the client may
 *     try ApiVersions again;
 *   - SaslHandshake v0 makes the next frames raw SASL tokens (int32 length, no header), v1 makes
 *     them SaslAuthenticate requests; a mechanism the listener has not enabled is answered
 *     UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection closes;
 *   - after a v1 handshake, a request other than SaslAuthenticate is answered with that API's
 *     error response carrying ILLEGAL_SASL_STATE, then the connection closes;
 *   - a failed authentication is answered SASL_AUTHENTICATION_FAILED with Kafka's message after
 *     connection.failed.authentication.delay.ms, then the connection closes (a failed v0 raw
 *     token has no answer: the close alone waits that long);
 *   - until it completes, a frame may be at most sasl.server.max.receive.size bytes.
 * Once complete, the connection's principal is User:<name>, and with connections.max.reauth.ms
 * the session ends that long after (sent as SessionLifetimeMs): the client re-authenticates
 * with a SaslHandshake on the same connection (KIP-368: same mechanism, same principal, at most
 * once a second), and any other request after the end closes the connection.
 * SaslHandshake and SaslAuthenticate outside these exchanges (a non-SASL listener, an
 * authenticated connection that is not re-authenticating) are answered ILLEGAL_SASL_STATE, as
 * Kafka's KafkaApis answers them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "conf.h"
#include "obs/metrics.h"
#include "util/diag.h"

#define PLAIN_MODULE "org.apache.kafka.common.security.plain.PlainLoginModule"

/* The metrics count each exchange under its mechanism's position in the auth room's order. */
_Static_assert(KC_SASL_PLAIN == 0 && KC_SASL_SCRAM_SHA_256 == 1 && KC_SASL_SCRAM_SHA_512 == 2 &&
                   (int)KC_SASL_MECH_COUNT == (int)KC_OBS_SASL_OTHER,
               "kc_obs_sasl counts mechanisms in the auth room's order");

typedef struct plain_user_s {
    char *user, *password;
} plain_user_t;

/* One SASL listener's settings. */
typedef struct sasl_listener_s {
    char name[64];
    int mechs[KC_SASL_MECH_COUNT]; /* enabled, in the order configured */
    size_t n_mechs;
    plain_user_t *users;
    size_t n_users;
    int64_t reauth_ms;
    kc_sasl_creds_t creds;
} sasl_listener_t;

struct kc_api_sasl_s {
    sasl_listener_t *ls;
    size_t n;
    int32_t delay_ms;
    uint32_t max_receive;
    kc_auth_rand_t rand;
};

enum {
    S_HANDSHAKE_OR_VERSIONS = 0, /* the first request */
    S_HANDSHAKE,                 /* after ApiVersions */
    S_AUTHENTICATE,              /* after a v1 SaslHandshake: SaslAuthenticate requests */
    S_RAW,                       /* after a v0 SaslHandshake: raw tokens */
    S_COMPLETE,
    S_REAUTH_BAD_MECHANISM, /* a re-authentication named another mechanism */
    S_FAILED,
};

typedef struct sasl_conn_s {
    int state;
    const sasl_listener_t *l;
    kc_sasl_server_t *srv;
    int mech;
    bool reauth;             /* the exchange under way is a re-authentication */
    char *principal;         /* after the first completion: User:<name> */
    int principal_mech;      /* the mechanism it authenticated with */
    uint64_t expiry_ms;      /* uv_now when the session ends; 0: never */
    uint64_t reauth_started; /* uv_now when the last re-authentication began; 0: none */
} sasl_conn_t;

/* ---- Settings ------------------------------------------------------------------------------- */

typedef struct users_s {
    sasl_listener_t *l;
    bool oom;
} users_t;

static int add_user(void *arg, const char *key, const char *value)
{
    users_t *u = arg;
    if (strncmp(key, "user_", 5) != 0)
        return 0;
    plain_user_t *v = realloc(u->l->users, (u->l->n_users + 1) * sizeof(*v));
    if (v == NULL)
        return u->oom = true, -1;
    u->l->users = v;
    plain_user_t *p = &v[u->l->n_users];
    p->user = strdup(key + 5);
    p->password = strdup(value);
    if (p->user == NULL || p->password == NULL) {
        free(p->user);
        free(p->password);
        return u->oom = true, -1;
    }
    u->l->n_users++;
    return 0;
}

static kc_str_t plain_password(void *arg, kc_str_t user)
{
    const sasl_listener_t *l = arg;
    for (size_t i = 0; i < l->n_users; i++)
        if (user.len >= 0 && strlen(l->users[i].user) == (size_t)user.len &&
            memcmp(l->users[i].user, user.p, (size_t)user.len) == 0)
            return kc_str_c(l->users[i].password);
    return KC_STR_NULL;
}

/* Listener `name`'s settings into l. 0, or -1 with the problem in err. */
static int listener_init(kc_api_sasl_t *s, sasl_listener_t *l, const kc_conf_t *conf,
                         const char *name, kc_auth_t *auth, char *err, size_t errlen)
{
    char buf[32];
    snprintf(l->name, sizeof l->name, "%s", name);
    const char *mechs =
        kc_conf_listener_value(conf, name, "sasl.enabled.mechanisms", buf, sizeof buf, NULL);
    for (const char *p = mechs; p != NULL && *p != '\0';) {
        const char *e = strchr(p, ',');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        int m = kc_sasl_mech_parse((kc_str_t){p, (int32_t)n});
        if (m >= 0 && l->n_mechs < KC_SASL_MECH_COUNT)
            l->mechs[l->n_mechs++] = m;
        p = e != NULL ? e + 1 : NULL;
    }
    if (l->n_mechs == 0) {
        snprintf(err, errlen,
                 "listener %s: sasl.enabled.mechanisms is empty: a SASL listener needs PLAIN, "
                 "SCRAM-SHA-256 or SCRAM-SHA-512 (listener.name.%s.sasl.enabled.mechanisms)",
                 name, name);
        return -1;
    }
    const char *jaas =
        kc_conf_listener_value(conf, name, "plain.sasl.jaas.config", buf, sizeof buf, NULL);
    bool plain = false;
    for (size_t i = 0; i < l->n_mechs; i++)
        plain = plain || l->mechs[i] == KC_SASL_PLAIN;
    if (plain && (jaas == NULL || *jaas == '\0')) {
        snprintf(err, errlen,
                 "listener %s: PLAIN is enabled but no plain.sasl.jaas.config gives its users "
                 "(listener.name.%s.plain.sasl.jaas.config)",
                 name, name);
        return -1;
    }
    if (plain) {
        users_t u = {.l = l};
        char jerr[256];
        if (kc_conf_jaas_options(jaas, PLAIN_MODULE, add_user, &u, jerr, sizeof jerr) != 0) {
            snprintf(err, errlen, "listener %s: plain.sasl.jaas.config: %s", name,
                     u.oom ? "out of memory" : jerr);
            return -1;
        }
    }
    l->reauth_ms = strtoll(
        kc_conf_listener_value(conf, name, "connections.max.reauth.ms", buf, sizeof buf, NULL),
        NULL, 10);
    l->creds.plain_password = plain_password;
    l->creds.plain_arg = l;
    l->creds.scram = kc_auth_scram_lookup;
    l->creds.scram_arg = auth;
    if (s->rand.fill(s->rand.arg, l->creds.fake_secret, sizeof l->creds.fake_secret) != 0) {
        snprintf(err, errlen, "listener %s: no random bytes for SCRAM", name);
        return -1;
    }
    return 0;
}

kc_api_sasl_t *kc_api_sasl_new(const kc_conf_t *conf, const char *const *names,
                               const int *protocols, size_t n, kc_auth_t *auth, char *err,
                               size_t errlen)
{
    kc_api_sasl_t *s = calloc(1, sizeof(*s));
    if (s == NULL || (n > 0 && (s->ls = calloc(n, sizeof(*s->ls))) == NULL)) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->delay_ms = conf->connection_failed_authentication_delay_ms;
    s->max_receive = (uint32_t)conf->sasl_server_max_receive_size;
    s->rand = kc_auth_rand_default();
    for (size_t i = 0; i < n; i++) {
        if (protocols[i] != KC_NET_SASL_PLAINTEXT && protocols[i] != KC_NET_SASL_SSL)
            continue;
        bool seen = false;
        for (size_t k = 0; k < s->n; k++)
            seen = seen || strcasecmp(s->ls[k].name, names[i]) == 0;
        if (seen)
            continue;
        if (listener_init(s, &s->ls[s->n++], conf, names[i], auth, err, errlen) != 0) {
            kc_api_sasl_free(s);
            return NULL;
        }
    }
    return s;
}

void kc_api_sasl_free(kc_api_sasl_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->ls[i].n_users; k++) {
            free(s->ls[i].users[k].user);
            free(s->ls[i].users[k].password);
        }
        free(s->ls[i].users);
    }
    free(s->ls);
    free(s);
}

/* ---- Connections ---------------------------------------------------------------------------- */

static void conn_state_free(void *p)
{
    sasl_conn_t *st = p;
    kc_sasl_server_free(st->srv);
    free(st->principal);
    free(st);
}

static bool is_sasl(const kc_conn_t *conn)
{
    int p = kc_conn_protocol(conn);
    return p == KC_NET_SASL_PLAINTEXT || p == KC_NET_SASL_SSL;
}

/* The connection's SASL state, made at its first frame; NULL when out of memory or when the
 * listener has no SASL settings (never: main builds them for every SASL listener). */
static sasl_conn_t *conn_state(kc_api_ctx_t *ctx, kc_conn_t *conn)
{
    sasl_conn_t *st = kc_conn_app(conn);
    if (st != NULL || ctx->sasl == NULL)
        return st;
    const sasl_listener_t *l = NULL;
    for (size_t i = 0; i < ctx->sasl->n && l == NULL; i++)
        if (strcasecmp(ctx->sasl->ls[i].name, kc_conn_listener(conn)) == 0)
            l = &ctx->sasl->ls[i];
    if (l == NULL || (st = calloc(1, sizeof(*st))) == NULL)
        return NULL;
    st->l = l;
    st->state = S_HANDSHAKE_OR_VERSIONS;
    kc_conn_set_app(conn, st, conn_state_free);
    kc_conn_set_frames(conn, KC_NET_MIN_FRAME, ctx->sasl->max_receive);
    return st;
}

static uint64_t now_ms(const kc_api_ctx_t *ctx)
{
    return ctx->loop != NULL ? uv_now(ctx->loop) : 0;
}

/* A failed authentication's answer, sent after connection.failed.authentication.delay.ms, then
 * the close. */
typedef struct delayed_s {
    uv_timer_t timer;
    kc_slot_t *slot;
    uint8_t *buf;
    size_t len;
} delayed_t;

static void delayed_closed(uv_handle_t *h)
{
    free(h->data);
}

static void delayed_fire(uv_timer_t *t)
{
    delayed_t *d = t->data;
    if (d->buf != NULL)
        kc_slot_reply_close(d->slot, d->buf, d->len);
    else
        kc_slot_close(d->slot, NULL);
    uv_close((uv_handle_t *)&d->timer, delayed_closed);
}

/* Close the slot's connection after connection.failed.authentication.delay.ms, with no answer:
 * a failed v0 raw-token exchange has no response to carry the error (Kafka's Selector delays
 * that close as it delays every authentication failure's). */
static void close_later(kc_api_ctx_t *ctx, kc_slot_t *slot)
{
    delayed_t *d = ctx->sasl->delay_ms > 0 && ctx->loop != NULL ? malloc(sizeof(*d)) : NULL;
    if (d == NULL) {
        kc_slot_close(slot, NULL);
        return;
    }
    *d = (delayed_t){.slot = slot};
    uv_timer_init(ctx->loop, &d->timer);
    d->timer.data = d;
    uv_timer_start(&d->timer, delayed_fire, (uint64_t)ctx->sasl->delay_ms, 0);
}

static void fail_later(kc_api_ctx_t *ctx, kc_slot_t *slot, uint8_t *buf, size_t len)
{
    if (buf == NULL) {
        kc_slot_close(slot, "out of memory encoding a SASL failure");
        return;
    }
    delayed_t *d = ctx->sasl->delay_ms > 0 && ctx->loop != NULL ? malloc(sizeof(*d)) : NULL;
    if (d == NULL) {
        kc_slot_reply_close(slot, buf, len);
        return;
    }
    *d = (delayed_t){.slot = slot, .buf = buf, .len = len};
    uv_timer_init(ctx->loop, &d->timer);
    d->timer.data = d;
    uv_timer_start(&d->timer, delayed_fire, (uint64_t)ctx->sasl->delay_ms, 0);
}

static void call_fail_later(kc_api_call_t *call, const void *resp)
{
    size_t len = 0;
    uint8_t *buf = kc_api_call_encode(call, resp, &len);
    fail_later(call->ctx, call->slot, buf, len);
}

/* The exchange completed with principal p: the connection is authenticated (or, re-authenticated,
 * keeps its principal). Returns the session lifetime to tell the client. */
static int64_t complete(kc_api_ctx_t *ctx, kc_conn_t *conn, sasl_conn_t *st, const char *p)
{
    kc_obs_sasl(st->mech, st->reauth, true);
    if (!st->reauth) {
        free(st->principal);
        st->principal = strdup(p);
        st->principal_mech = st->mech;
        kc_conn_set_principal(conn, p);
    }
    KC_DEBUG("api", "%s: %s as %s with %s on listener %s", kc_conn_peer(conn),
             st->reauth ? "re-authenticated" : "authenticated", p, kc_sasl_mech_name(st->mech),
             st->l->name);
    kc_sasl_server_free(st->srv);
    st->srv = NULL;
    st->state = S_COMPLETE;
    st->reauth = false;
    kc_conn_set_frames(conn, 0, 0);
    st->expiry_ms = st->l->reauth_ms > 0 ? now_ms(ctx) + (uint64_t)st->l->reauth_ms : 0;
    return st->l->reauth_ms > 0 ? st->l->reauth_ms : 0;
}

/* A re-authentication that completed as someone else: Kafka's message, or NULL when it is the
 * same principal. */
static char *principal_changed(const sasl_conn_t *st, const char *p, kc_arena_t *a)
{
    if (!st->reauth || strcmp(st->principal, p) == 0)
        return NULL;
    const char *c1 = strchr(st->principal, ':'), *c2 = strchr(p, ':');
    if (c1 == NULL || c2 == NULL)
        return NULL;
    char tmp[600];
    int n = snprintf(tmp, sizeof tmp,
                     "Cannot change principals during re-authentication from %.*s.%s: %.*s.%s",
                     (int)(c1 - st->principal), st->principal, c1 + 1, (int)(c2 - p), p, c2 + 1);
    if (n < 0)
        return NULL;
    char *out = kc_arena_dup(a, tmp, strlen(tmp) + 1);
    return out != NULL ? out : (char *)"Cannot change principals during re-authentication";
}

/* A v0 raw token. */
static void raw_token(kc_api_ctx_t *ctx, kc_conn_t *conn, sasl_conn_t *st, kc_slot_t *slot,
                      const uint8_t *frame, size_t len)
{
    kc_sasl_step_t step;
    int rc = kc_sasl_server_step(st->srv, frame, len, &step);
    const char *p = NULL;
    if (rc == KC_SASL_DONE) {
        p = kc_sasl_server_principal(st->srv)->text;
        if (principal_changed(st, p, kc_slot_arena(slot)) != NULL)
            rc = KC_SASL_FAILED, step.reason = "the principal changed";
    }
    if (rc == KC_SASL_FAILED) {
        KC_INFO_LIMITED("api", "%s: SASL %s failed on listener %s: %s", kc_conn_peer(conn),
                        kc_sasl_mech_name(st->mech), st->l->name, step.reason);
        kc_obs_sasl(st->mech, st->reauth, false);
        st->state = S_FAILED;
        close_later(ctx, slot);
        return;
    }
    uint8_t *buf = malloc(4 + step.out_len);
    if (buf == NULL) {
        kc_slot_close(slot, "out of memory");
        return;
    }
    buf[0] = (uint8_t)(step.out_len >> 24);
    buf[1] = (uint8_t)(step.out_len >> 16);
    buf[2] = (uint8_t)(step.out_len >> 8);
    buf[3] = (uint8_t)step.out_len;
    if (step.out_len > 0)
        memcpy(buf + 4, step.out, step.out_len);
    if (rc == KC_SASL_DONE)
        complete(ctx, conn, st, p);
    kc_slot_reply(slot, buf, 4 + step.out_len);
}

bool kc_api_sasl_frame(kc_api_ctx_t *ctx, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                       size_t len)
{
    if (ctx->sasl == NULL || ctx->sasl->n == 0 || !is_sasl(conn))
        return false; /* no SASL listener: nothing to check */
    sasl_conn_t *st = conn_state(ctx, conn);
    if (st == NULL) {
        kc_slot_close(slot, "no SASL state for the connection");
        return true;
    }
    switch (st->state) {
    case S_RAW:
        raw_token(ctx, conn, st, slot, frame, len);
        return true;
    case S_FAILED:
        kc_slot_close(slot, NULL);
        return true;
    case S_REAUTH_BAD_MECHANISM:
        KC_INFO_LIMITED("api", "closing %s: re-authentication with another SASL mechanism (%s)",
                        kc_conn_peer(conn), kc_sasl_mech_name(st->mech));
        kc_obs_sasl(st->mech, true, false);
        st->state = S_FAILED;
        kc_slot_close(slot, NULL);
        return true;
    case S_COMPLETE: {
        int16_t key = len >= 2 ? (int16_t)((frame[0] << 8) | frame[1]) : -1;
        uint64_t now = now_ms(ctx);
        if (key == KC_API_SASL_HANDSHAKE && st->expiry_ms != 0 &&
            (st->reauth_started == 0 || now - st->reauth_started >= 1000)) {
            st->reauth_started = now;
            st->reauth = true;
            st->state = S_HANDSHAKE;
            kc_conn_set_frames(conn, KC_NET_MIN_FRAME, ctx->sasl->max_receive);
            return false;
        }
        if (st->expiry_ms != 0 && now > st->expiry_ms) {
            KC_INFO_LIMITED("api", "closing %s: its SASL session expired", kc_conn_peer(conn));
            kc_slot_close(slot, NULL);
            return true;
        }
        return false;
    }
    default:
        return false;
    }
}

int kc_api_sasl_admit(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                      kc_arena_t *a, void *resp)
{
    if (ctx->sasl == NULL || ctx->sasl->n == 0)
        return KC_API_DONE;
    kc_conn_t *conn = kc_slot_conn(call->slot);
    if (conn == NULL || !is_sasl(conn))
        return KC_API_DONE;
    sasl_conn_t *st = kc_conn_app(conn);
    if (st == NULL)
        return KC_API_DONE;
    int16_t key = req->api_key;
    switch (st->state) {
    case S_HANDSHAKE_OR_VERSIONS:
        if (key == KC_API_API_VERSIONS) { /* answered here: only a valid one moves on */
            if (kc_api_api_versions(ctx, call, req, a, resp) != KC_API_DONE) {
                kc_slot_close(call->slot, NULL);
                return KC_API_PARKED;
            }
            if (((const kc_api_versions_response_t *)resp)->error_code == KC_ERR_NONE)
                st->state = S_HANDSHAKE;
            kc_api_call_reply(call, resp);
            return KC_API_PARKED;
        }
        /* fall through */
    case S_HANDSHAKE:
        if (key == KC_API_SASL_HANDSHAKE)
            return KC_API_DONE;
        KC_INFO_LIMITED("api",
                        "closing %s: unexpected Kafka request of type %s during SASL handshake "
                        "(a client configured with the wrong security protocol?)",
                        kc_conn_peer(conn), call->api->name);
        st->state = S_FAILED;
        kc_slot_close(call->slot, NULL);
        return KC_API_PARKED;
    case S_AUTHENTICATE:
        if (key == KC_API_SASL_AUTHENTICATE)
            return KC_API_DONE;
        KC_INFO_LIMITED("api",
                        "%s: unexpected Kafka request of type %s during SASL %s "
                        "authentication",
                        kc_conn_peer(conn), call->api->name, kc_sasl_mech_name(st->mech));
        kc_obs_sasl(st->mech, st->reauth, false);
        st->state = S_FAILED;
        if (kc_api_fail(call, req->body, resp, KC_ERR_ILLEGAL_SASL_STATE, a) != 0) {
            kc_slot_close(call->slot, NULL);
            return KC_API_PARKED;
        }
        call_fail_later(call, resp);
        return KC_API_PARKED;
    default:
        return KC_API_DONE;
    }
}

/* ---- SaslHandshake and SaslAuthenticate ----------------------------------------------------- */

int kc_api_sasl_handshake(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                          kc_arena_t *a, void *resp_)
{
    const kc_sasl_handshake_request_t *rq = req->body;
    kc_sasl_handshake_response_t *resp = resp_;
    kc_conn_t *conn = kc_slot_conn(call->slot);
    sasl_conn_t *st = conn != NULL && is_sasl(conn) ? kc_conn_app(conn) : NULL;
    if (st == NULL || (st->state != S_HANDSHAKE_OR_VERSIONS && st->state != S_HANDSHAKE)) {
        resp->error_code = KC_ERR_ILLEGAL_SASL_STATE; /* KafkaApis: not in an exchange */
        return KC_API_DONE;
    }
    kc_str_t *names = kc_arena_alloc(a, KC_SASL_MECH_COUNT * sizeof(*names));
    if (names == NULL)
        return KC_API_CLOSE;
    int mech = kc_sasl_mech_parse(rq->mechanism);
    bool enabled = false;
    for (size_t i = 0; i < st->l->n_mechs; i++) {
        names[i] = kc_str_c(kc_sasl_mech_name(st->l->mechs[i]));
        enabled = enabled || st->l->mechs[i] == mech;
    }
    resp->mechanisms.v = names;
    resp->mechanisms.n = (int32_t)st->l->n_mechs;
    if (!enabled) {
        KC_INFO_LIMITED("api",
                        "%s: SASL mechanism '%.*s' requested by client is not enabled on "
                        "listener %s",
                        kc_conn_peer(conn), rq->mechanism.len > 0 ? (int)rq->mechanism.len : 0,
                        rq->mechanism.p, st->l->name);
        resp->error_code = KC_ERR_UNSUPPORTED_SASL_MECHANISM;
        kc_obs_sasl(mech, st->reauth, false); /* -1: a name kcoord does not implement */
        st->state = S_FAILED;
        call_fail_later(call, resp);
        return KC_API_PARKED;
    }
    st->mech = mech;
    if (st->reauth && mech != st->principal_mech) {
        st->state = S_REAUTH_BAD_MECHANISM; /* answered, then the next token closes */
        return KC_API_DONE;
    }
    kc_sasl_server_free(st->srv);
    st->srv = kc_sasl_server_new(mech, &st->l->creds, ctx->sasl->rand, st->reauth);
    if (st->srv == NULL)
        return KC_API_CLOSE;
    st->state = call->version == 0 ? S_RAW : S_AUTHENTICATE;
    if (st->state == S_RAW) /* a token has no request header: any size up to the receive limit */
        kc_conn_set_frames(conn, 0, ctx->sasl->max_receive);
    return KC_API_DONE;
}

int kc_api_sasl_authenticate(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                             kc_arena_t *a, void *resp_)
{
    (void)ctx;
    const kc_sasl_authenticate_request_t *rq = req->body;
    kc_sasl_authenticate_response_t *resp = resp_;
    kc_conn_t *conn = kc_slot_conn(call->slot);
    sasl_conn_t *st = conn != NULL && is_sasl(conn) ? kc_conn_app(conn) : NULL;
    if (st == NULL || st->state != S_AUTHENTICATE) {
        resp->error_code = KC_ERR_ILLEGAL_SASL_STATE;
        resp->error_message = KC_STR_LIT("SaslAuthenticate request received after successful "
                                         "authentication");
        return KC_API_DONE;
    }
    kc_sasl_step_t step;
    int rc = kc_sasl_server_step(st->srv, rq->auth_bytes.p,
                                 (size_t)(rq->auth_bytes.len > 0 ? rq->auth_bytes.len : 0), &step);
    const char *p = NULL, *changed = NULL;
    if (rc == KC_SASL_DONE) {
        p = kc_sasl_server_principal(st->srv)->text;
        if ((changed = principal_changed(st, p, a)) != NULL) {
            rc = KC_SASL_FAILED;
            step.error = KC_ERR_SASL_AUTHENTICATION_FAILED;
            step.message = changed;
            step.reason = changed;
        }
    }
    if (rc == KC_SASL_FAILED) {
        KC_INFO_LIMITED("api", "%s: SASL %s %s failed on listener %s: %s", kc_conn_peer(conn),
                        kc_sasl_mech_name(st->mech),
                        st->reauth ? "re-authentication" : "authentication", st->l->name,
                        step.reason);
        kc_obs_sasl(st->mech, st->reauth, false);
        resp->error_code = step.error;
        char *m =
            step.message != NULL ? kc_arena_dup(a, step.message, strlen(step.message) + 1) : NULL;
        resp->error_message = m != NULL ? kc_str_c(m) : KC_STR_NULL;
        st->state = S_FAILED;
        call_fail_later(call, resp);
        return KC_API_PARKED;
    }
    uint8_t *out = step.out_len > 0 ? kc_arena_dup(a, step.out, step.out_len) : NULL;
    if (step.out_len > 0 && out == NULL)
        return KC_API_CLOSE;
    resp->auth_bytes = (kc_bytes_t){out != NULL ? out : (const uint8_t *)"", (int32_t)step.out_len};
    if (rc == KC_SASL_DONE)
        resp->session_lifetime_ms = complete(ctx, conn, st, p);
    return KC_API_DONE;
}
