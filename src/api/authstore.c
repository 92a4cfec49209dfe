/* authstore.c - the security records: from the auth room's emitters to the metadata partition
 * and back into the ACL and credential state (the contract is in api.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "util/diag.h"

int kc_api_auth_collect(void *arg, const uint8_t *key, size_t key_len, const uint8_t *value,
                        size_t value_len)
{
    kc_api_auth_batch_t *b = arg;
    if (b->failed)
        return KC_AUTH_ENOMEM;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4;
        kc_meta_rec_t *r = realloc(b->recs, cap * sizeof(*r));
        if (r == NULL) {
            b->failed = true;
            return KC_AUTH_ENOMEM;
        }
        b->recs = r;
        b->cap = cap;
    }
    uint8_t *k = malloc(key_len ? key_len : 1);
    uint8_t *v = value != NULL ? malloc(value_len ? value_len : 1) : NULL;
    if (k == NULL || (value != NULL && v == NULL)) {
        free(k);
        free(v);
        b->failed = true;
        return KC_AUTH_ENOMEM;
    }
    memcpy(k, key, key_len);
    if (value != NULL)
        memcpy(v, value, value_len);
    b->recs[b->n++] = (kc_meta_rec_t){
        .key = k, .key_len = key_len, .value = v, .value_len = value != NULL ? value_len : 0};
    return 0;
}

int16_t kc_api_auth_commit(kc_api_ctx_t *ctx, kc_api_auth_batch_t *b, kc_meta_done_fn done,
                           void *arg)
{
    if (b->failed)
        return KC_ERR_UNKNOWN_SERVER_ERROR;
    if (ctx->cluster != NULL && ctx->coord != NULL) /* applied when committed, on every node */
        return done != NULL ? kc_meta_write(ctx->coord, b->recs, b->n, done, arg)
                            : (int16_t)KC_ERR_UNKNOWN_SERVER_ERROR;
    if (b->n == 0)
        return KC_ERR_NONE;
    if (ctx->coord == NULL || ctx->auth == NULL)
        return KC_ERR_KAFKA_STORAGE_ERROR;
    int16_t err = kc_meta_append(ctx->coord, b->recs, b->n);
    if (err != KC_ERR_NONE)
        return err;
    for (size_t i = 0; i < b->n; i++) {
        const kc_meta_rec_t *r = &b->recs[i];
        int rc = kc_auth_apply(ctx->auth, r->key, r->key_len, r->value, r->value_len);
        if (rc != KC_AUTH_OK) /* the records were made by the auth room a moment ago */
            KC_ERROR("api",
                     "a security record written to %s-0 did not apply (%d); the state "
                     "catches up at the next start",
                     KC_META_TOPIC, rc);
    }
    return KC_ERR_NONE;
}

void kc_api_auth_batch_free(kc_api_auth_batch_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free((void *)b->recs[i].key);
        free((void *)b->recs[i].value);
    }
    free(b->recs);
    *b = (kc_api_auth_batch_t){0};
}

typedef struct load_s {
    kc_auth_t *auth;
    size_t bad;
    size_t n;
} load_t;

static int load_one(void *arg, const kc_meta_rec_t *rec)
{
    load_t *l = arg;
    if (kc_auth_apply(l->auth, rec->key, rec->key_len, rec->value, rec->value_len) != KC_AUTH_OK)
        l->bad++;
    else
        l->n++;
    return 0;
}

/* A cluster node: a security record raft committed, applied here. */
static void on_meta_applied(void *arg, const kc_meta_rec_t *rec)
{
    kc_api_ctx_t *ctx = arg;
    int16_t type = rec->key_len >= 2 ? (int16_t)((rec->key[0] << 8) | rec->key[1]) : -1;
    if (type != KC_AUTH_REC_SCRAM && type != KC_AUTH_REC_ACL)
        return;
    int rc = kc_auth_apply(ctx->auth, rec->key, rec->key_len, rec->value, rec->value_len);
    if (rc != KC_AUTH_OK)
        KC_ERROR("api", "a committed security record of %s-0 did not apply (%d)", KC_META_TOPIC,
                 rc);
}

int kc_api_auth_load(kc_api_ctx_t *ctx, char *err, size_t errlen)
{
    if (ctx->cluster != NULL)
        kc_meta_listen(ctx->coord, on_meta_applied, ctx);
    static const int16_t types[] = {KC_AUTH_REC_SCRAM, KC_AUTH_REC_ACL};
    load_t l = {.auth = ctx->auth};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        kc_meta_each(ctx->coord, types[i], load_one, &l);
    if (l.bad > 0) {
        snprintf(err, errlen, "%zu security records of %s-0 do not decode", l.bad, KC_META_TOPIC);
        return -1;
    }
    if (l.n > 0)
        KC_INFO("api", "loaded %zu ACL and SCRAM records from %s-0", l.n, KC_META_TOPIC);
    return 0;
}

/* ---- Answers that wait for metadata writes ------------------------------------------------ */

typedef struct meta_slot_s {
    kc_api_meta_wait_t *w;
    size_t slot;
} meta_slot_t;

kc_api_meta_wait_t *kc_api_meta_wait(kc_api_call_t *call, kc_arena_t *a, void *resp,
                                     kc_api_meta_fix_fn fix)
{
    kc_api_meta_wait_t *w = kc_arena_alloc(a, sizeof(*w));
    if (w != NULL)
        *w = (kc_api_meta_wait_t){.call = call, .a = a, .resp = resp, .fix = fix};
    return w;
}

void *kc_api_meta_slot(kc_api_meta_wait_t *w, size_t slot)
{
    meta_slot_t *s = w != NULL ? kc_arena_alloc(w->a, sizeof(*s)) : NULL;
    if (s != NULL)
        *s = (meta_slot_t){w, slot};
    return s;
}

/* Send the answer; after a NOT_CONTROLLER, close the connection once it is written (see
 * api.h). The call is gone after this. */
static void meta_answer(kc_api_meta_wait_t *w)
{
    if (w->not_controller)
        kc_api_call_reply_close(w->call, w->resp);
    else
        kc_api_call_reply(w->call, w->resp);
}

void kc_api_meta_done(void *arg, int16_t err)
{
    meta_slot_t *s = arg;
    kc_api_meta_wait_t *w = s->w;
    if (err != KC_ERR_NONE) {
        KC_WARN_LIMITED("api", "%s: the metadata records were not committed (error %d)",
                        w->call->api->name, err);
        w->fix(w, s->slot, err);
        w->not_controller = w->not_controller || err == KC_ERR_NOT_CONTROLLER;
    }
    if (--w->pending == 0 && w->ended)
        meta_answer(w);
}

int kc_api_meta_end(kc_api_meta_wait_t *w)
{
    w->ended = true;
    if (w->pending > 0)
        return KC_API_PARKED;
    if (!w->not_controller)
        return KC_API_DONE;
    meta_answer(w);
    return KC_API_PARKED;
}
