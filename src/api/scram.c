/* scram.c - DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): the SCRAM
 * credentials SASL listeners check, kept as records of the metadata partition.
 *
 * The logic (validation, Kafka's messages and result order) is the auth room's
 * (kc_auth_scram_describe, kc_auth_scram_alter); an alteration's records are made durable by
 * kc_api_auth_commit before the answer, and applied to ctx->auth once they are. As in Kafka,
 * describing needs CLUSTER DESCRIBE and altering CLUSTER ALTER, checked before anything is read
 * or changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "util/diag.h"

#define CLUSTER_DENIED "Cluster authorization failed."

/* A message of the auth room (valid until its result is freed) copied into the arena. */
static kc_str_t message(kc_arena_t *a, const kc_auth_result_t *r)
{
    if (r->message == NULL)
        return KC_STR_NULL;
    char *m = kc_arena_dup(a, r->message, strlen(r->message) + 1);
    return m != NULL ? kc_str_c(m) : KC_STR_NULL;
}

int kc_api_describe_user_scram_credentials(kc_api_ctx_t *ctx, kc_api_call_t *call,
                                           const kc_request_t *req, kc_arena_t *a, void *resp_)
{
    const kc_describe_user_scram_credentials_request_t *rq = req->body;
    kc_describe_user_scram_credentials_response_t *resp = resp_;
    if (!kc_api_authorized_cluster(call, KC_OP_DESCRIBE)) {
        resp->error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = KC_STR_LIT(CLUSTER_DENIED);
        return KC_API_DONE;
    }
    size_t n_users = rq->users.n > 0 ? (size_t)rq->users.n : 0;
    kc_str_t *users = n_users > 0 ? kc_arena_alloc(a, n_users * sizeof(*users)) : NULL;
    if (n_users > 0 && users == NULL)
        return KC_API_CLOSE;
    for (size_t i = 0; i < n_users; i++)
        users[i] = rq->users.v[i].name;
    kc_scram_describe_row_t *rows = NULL;
    size_t n_rows = 0;
    if (ctx->auth == NULL ||
        kc_auth_scram_describe(ctx->auth, users, n_users, &rows, &n_rows) != KC_AUTH_OK) {
        resp->error_code = KC_ERR_UNKNOWN_SERVER_ERROR;
        return KC_API_DONE;
    }
    kc_describe_user_scram_credentials_result_t *out =
        n_rows > 0 ? kc_arena_alloc(a, n_rows * sizeof(*out)) : NULL;
    int rc = n_rows > 0 && out == NULL ? KC_API_CLOSE : KC_API_DONE;
    for (size_t i = 0; rc == KC_API_DONE && i < n_rows; i++) {
        kc_describe_user_scram_credentials_result_t *r = &out[i];
        const kc_scram_describe_row_t *row = &rows[i];
        char *user = kc_arena_dup(a, row->user, row->user_len + 1);
        kc_credential_info_t *infos =
            row->n_infos > 0 ? kc_arena_alloc(a, row->n_infos * sizeof(*infos)) : NULL;
        if (user == NULL || (row->n_infos > 0 && infos == NULL)) {
            rc = KC_API_CLOSE;
            break;
        }
        for (size_t k = 0; k < row->n_infos; k++)
            infos[k] = (kc_credential_info_t){.mechanism = row->infos[k].mechanism,
                                              .iterations = row->infos[k].iterations};
        *r = (kc_describe_user_scram_credentials_result_t){
            .user = {user, (int32_t)row->user_len},
            .error_code = row->r.error,
            .error_message = message(a, &row->r),
            .credential_infos = {infos, (int32_t)row->n_infos},
        };
    }
    kc_auth_scram_describe_free(rows, n_rows);
    resp->results.v = out;
    resp->results.n = (int32_t)n_rows;
    return rc;
}

static int cmp_str(const void *x, const void *y)
{
    const kc_str_t *p = x, *q = y;
    int32_t n = p->len < q->len ? p->len : q->len;
    int c = n > 0 ? memcmp(p->p, q->p, (size_t)n) : 0;
    return c != 0 ? c : (p->len > q->len) - (p->len < q->len);
}

/* Without CLUSTER ALTER: every user the request names, once each and sorted, with
 * CLUSTER_AUTHORIZATION_FAILED (Kafka's AlterUserScramCredentialsRequest.getErrorResponse). */
static int alter_denied(const kc_alter_user_scram_credentials_request_t *rq, kc_arena_t *a,
                        kc_alter_user_scram_credentials_response_t *resp)
{
    size_t n_dels = rq->deletions.n > 0 ? (size_t)rq->deletions.n : 0;
    size_t n = n_dels + (rq->upsertions.n > 0 ? (size_t)rq->upsertions.n : 0);
    kc_str_t *users = n > 0 ? kc_arena_alloc(a, n * sizeof(*users)) : NULL;
    kc_alter_user_scram_credentials_result_t *out =
        n > 0 ? kc_arena_alloc(a, n * sizeof(*out)) : NULL;
    if (n > 0 && (users == NULL || out == NULL))
        return KC_API_CLOSE;
    for (size_t i = 0; i < n; i++)
        users[i] = i < n_dels ? rq->deletions.v[i].name : rq->upsertions.v[i - n_dels].name;
    if (n > 1)
        qsort(users, n, sizeof(*users), cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && cmp_str(&users[i], &out[k - 1].user) == 0)
            continue;
        out[k++] = (kc_alter_user_scram_credentials_result_t){
            .user = users[i],
            .error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED,
            .error_message = KC_STR_LIT(CLUSTER_DENIED)};
    }
    resp->results.v = out;
    resp->results.n = (int32_t)k;
    return KC_API_DONE;
}

/* A cluster node's alteration whose records raft did not commit: every user that was to
 * succeed gets the error (as when the write fails on a single node). */
static void alter_fix(kc_api_meta_wait_t *w, size_t slot, int16_t err)
{
    (void)slot;
    kc_alter_user_scram_credentials_response_t *resp = w->resp;
    for (int32_t i = 0; i < resp->results.n; i++)
        if (resp->results.v[i].error_code == KC_ERR_NONE)
            resp->results.v[i].error_code = err;
}

int kc_api_alter_user_scram_credentials(kc_api_ctx_t *ctx, kc_api_call_t *call,
                                        const kc_request_t *req, kc_arena_t *a, void *resp_)
{
    const kc_alter_user_scram_credentials_request_t *rq = req->body;
    kc_alter_user_scram_credentials_response_t *resp = resp_;
    if (!kc_api_authorized_cluster(call, KC_OP_ALTER))
        return alter_denied(rq, a, resp);
    size_t n_dels = rq->deletions.n > 0 ? (size_t)rq->deletions.n : 0;
    size_t n_ups = rq->upsertions.n > 0 ? (size_t)rq->upsertions.n : 0;
    kc_scram_deletion_t *dels = n_dels > 0 ? kc_arena_alloc(a, n_dels * sizeof(*dels)) : NULL;
    kc_scram_upsertion_t *ups = n_ups > 0 ? kc_arena_alloc(a, n_ups * sizeof(*ups)) : NULL;
    if ((n_dels > 0 && dels == NULL) || (n_ups > 0 && ups == NULL))
        return KC_API_CLOSE;
    for (size_t i = 0; i < n_dels; i++)
        dels[i] = (kc_scram_deletion_t){.name = rq->deletions.v[i].name,
                                        .mechanism = rq->deletions.v[i].mechanism};
    for (size_t i = 0; i < n_ups; i++) {
        const kc_scram_credential_upsertion_t *u = &rq->upsertions.v[i];
        ups[i] = (kc_scram_upsertion_t){.name = u->name,
                                        .mechanism = u->mechanism,
                                        .iterations = u->iterations,
                                        .salt = u->salt,
                                        .salted_password = u->salted_password};
    }
    kc_api_meta_wait_t *w =
        ctx->cluster != NULL ? kc_api_meta_wait(call, a, resp, alter_fix) : NULL;
    void *arg = w != NULL ? kc_api_meta_slot(w, 0) : NULL;
    kc_api_auth_batch_t batch = {0};
    kc_scram_alter_result_t *results = NULL;
    size_t n_results = 0;
    int16_t commit = KC_ERR_UNKNOWN_SERVER_ERROR;
    if (ctx->auth != NULL &&
        kc_auth_scram_alter(ctx->auth, dels, n_dels, ups, n_ups, kc_api_auth_collect, &batch,
                            &results, &n_results) == KC_AUTH_OK) /* durable (and applied) first */
        commit = kc_api_auth_commit(ctx, &batch, arg ? kc_api_meta_done : NULL, arg);
    kc_api_auth_batch_free(&batch);
    if (commit == KC_META_PENDING) { /* a cluster node: answered once raft committed them */
        commit = KC_ERR_NONE;
        w->pending++;
    } else if (w != NULL && commit == KC_ERR_NOT_CONTROLLER) {
        w->not_controller = true;
    }
    if (results == NULL && n_results == 0 && commit != KC_ERR_NONE) {
        /* nothing validated: every user named gets the error */
        size_t n = n_dels + n_ups;
        kc_alter_user_scram_credentials_result_t *out =
            n > 0 ? kc_arena_alloc(a, n * sizeof(*out)) : NULL;
        if (n > 0 && out == NULL)
            return KC_API_CLOSE;
        for (size_t i = 0; i < n; i++)
            out[i] = (kc_alter_user_scram_credentials_result_t){
                .user = i < n_dels ? dels[i].name : ups[i - n_dels].name,
                .error_code = commit,
                .error_message = KC_STR_NULL};
        resp->results.v = out;
        resp->results.n = (int32_t)n;
        return KC_API_DONE;
    }
    kc_alter_user_scram_credentials_result_t *out =
        n_results > 0 ? kc_arena_alloc(a, n_results * sizeof(*out)) : NULL;
    int rc = n_results > 0 && out == NULL ? KC_API_CLOSE : KC_API_DONE;
    for (size_t i = 0; rc == KC_API_DONE && i < n_results; i++) {
        const kc_scram_alter_result_t *r = &results[i];
        bool accepted = r->r.error == KC_ERR_NONE;
        out[i] = (kc_alter_user_scram_credentials_result_t){
            .user = r->user,
            .error_code = accepted ? commit : r->r.error,
            .error_message = accepted ? KC_STR_NULL : message(a, &r->r)};
    }
    if (commit != KC_ERR_NONE)
        KC_ERROR_LIMITED("api", "AlterUserScramCredentials: the records were not stored (%d)",
                         commit);
    kc_auth_scram_alter_free(results, n_results);
    resp->results.v = out;
    resp->results.n = (int32_t)n_results;
    if (w == NULL)
        return rc;
    if (rc == KC_API_CLOSE && w->pending > 0)
        resp->results.n = 0; /* answered with no results rather than left unanswered */
    return rc == KC_API_CLOSE && w->pending == 0 ? rc : kc_api_meta_end(w);
}

/* DescribeClientQuotas: kcoord enforces no client quotas, so every valid filter matches no
 * entity. The filter is validated as Kafka's broker does (ClientQuotaCache): a repeated entity
 * type, an empty one, one other than user, client-id or ip, and ip combined with another are
 * refused. Kafka requires CLUSTER DESCRIBE_CONFIGS, checked first. */
int kc_api_describe_client_quotas(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                  kc_arena_t *a, void *resp_)
{
    (void)ctx;
    const kc_describe_client_quotas_request_t *rq = req->body;
    kc_describe_client_quotas_response_t *resp = resp_;
    if (!kc_api_authorized_cluster(call, KC_OP_DESCRIBE_CONFIGS)) {
        resp->error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = KC_STR_LIT(CLUSTER_DENIED);
        resp->entries.v = NULL;
        resp->entries.n = -1;
        return KC_API_DONE;
    }
    bool ip = false;
    for (int32_t i = 0; i < rq->components.n; i++) {
        kc_str_t t = rq->components.v[i].entity_type;
        int16_t err = KC_ERR_NONE;
        char msg[200];
        bool dup = false;
        for (int32_t k = 0; k < i; k++)
            dup = dup || (rq->components.v[k].entity_type.len == t.len &&
                          memcmp(rq->components.v[k].entity_type.p, t.p, (size_t)t.len) == 0);
        int n = t.len > 100 ? 100 : t.len;
        if (dup) {
            err = KC_ERR_INVALID_REQUEST;
            snprintf(msg, sizeof msg, "Duplicate %.*s filter component entity type", n, t.p);
        } else if (t.len <= 0) {
            err = KC_ERR_INVALID_REQUEST;
            snprintf(msg, sizeof msg, "Unexpected empty filter component entity type");
        } else if (!kc_str_eq_c(t, "user") && !kc_str_eq_c(t, "client-id") &&
                   !kc_str_eq_c(t, "ip")) {
            err = KC_ERR_UNSUPPORTED_VERSION;
            snprintf(msg, sizeof msg, "Custom entity type %.*s not supported", n, t.p);
        }
        ip = ip || kc_str_eq_c(t, "ip");
        if (err == KC_ERR_NONE && ip && rq->components.n > 1 && i == rq->components.n - 1) {
            err = KC_ERR_INVALID_REQUEST;
            snprintf(msg, sizeof msg,
                     "Invalid entity filter component combination, IP filter component should "
                     "not be used with User or ClientId filter component.");
        }
        if (err != KC_ERR_NONE) {
            char *m = kc_arena_dup(a, msg, strlen(msg) + 1);
            resp->error_code = err;
            resp->error_message = m != NULL ? kc_str_c(m) : KC_STR_NULL;
            resp->entries.v = NULL;
            resp->entries.n = -1;
            return KC_API_DONE;
        }
    }
    resp->entries.v = NULL;
    resp->entries.n = 0;
    return KC_API_DONE;
}
