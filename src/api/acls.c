/* acls.c - authorization of every API (the helpers in api.h) and the ACL APIs: DescribeAcls,
 * CreateAcls and DeleteAcls, as Kafka's AclApis answers them.
 *
 * The ACL APIs need CLUSTER DESCRIBE (DescribeAcls) or CLUSTER ALTER (CreateAcls, DeleteAcls);
 * without an authorizer they answer SECURITY_DISABLED "No Authorizer is configured.". A change
 * is validated by the auth room, which emits its records; they are appended to the metadata
 * partition and applied (kc_api_auth_commit) before the answer goes out, so an acknowledged ACL
 * is durable and a failed write changes nothing.
 */
#include <arpa/inet.h>
#include <string.h>

#include "api/api.h"
#include "util/diag.h"

#define NO_AUTHORIZER "No Authorizer is configured."
/* Kafka's message is the ClusterAuthorizationException's, which prints the whole request; this
 * is the error's own description (Errors.CLUSTER_AUTHORIZATION_FAILED). */
#define CLUSTER_DENIED "Cluster authorization failed."

bool kc_api_acl_on(const kc_api_ctx_t *ctx)
{
    return ctx != NULL && ctx->auth != NULL && ctx->conf != NULL &&
           ctx->conf->authorizer_class_name != NULL && ctx->conf->authorizer_class_name[0] != '\0';
}

/* The call's principal as a view (no copy): the connection's text outlives the call. */
static kc_principal_t call_principal(const kc_api_call_t *call)
{
    const char *t = call->principal != NULL ? call->principal : KC_PRINCIPAL_ANONYMOUS;
    const char *colon = strchr(t, ':');
    return (kc_principal_t){.text = (char *)t,
                            .len = (uint32_t)strlen(t),
                            .type_len = colon != NULL ? (uint32_t)(colon - t) : 0};
}

/* The peer's address as Java's getHostAddress prints it, which is what ACL hosts match. */
static const char *call_host(kc_api_call_t *call)
{
    if (call->acl_host[0] != '\0')
        return call->acl_host;
    char text[64];
    int32_t n = call->client_host.len;
    const char *p = call->client_host.p;
    if (n > 0 && p[0] == '/') {
        p++;
        n--;
    }
    if (n <= 0 || (size_t)n >= sizeof(text)) {
        call->acl_host[0] = '?'; /* matches only "*" */
        return call->acl_host;
    }
    memcpy(text, p, (size_t)n);
    text[n] = '\0';
    uint8_t addr[16];
    if (inet_pton(AF_INET, text, addr) == 1)
        kc_auth_host_string(addr, 4, call->acl_host);
    else if (inet_pton(AF_INET6, text, addr) == 1)
        kc_auth_host_string(addr, 16, call->acl_host);
    else
        snprintf(call->acl_host, sizeof(call->acl_host), "%.39s", text);
    return call->acl_host;
}

bool kc_api_authorized(kc_api_call_t *call, int8_t op, int8_t resource_type, kc_str_t name)
{
    if (!kc_api_acl_on(call->ctx))
        return true;
    kc_principal_t pr = call_principal(call);
    return kc_auth_authorize(call->ctx->auth, &pr, call_host(call), op, resource_type, name);
}

bool kc_api_authorized_cluster(kc_api_call_t *call, int8_t op)
{
    return kc_api_authorized(call, op, KC_RES_CLUSTER, KC_STR_LIT(KC_AUTH_CLUSTER_NAME));
}

int32_t kc_api_authorized_ops(kc_api_call_t *call, int8_t resource_type, kc_str_t name)
{
    if (!kc_api_acl_on(call->ctx))
        return kc_auth_supported_ops(resource_type);
    kc_principal_t pr = call_principal(call);
    return kc_auth_authorized_ops(call->ctx->auth, &pr, call_host(call), resource_type, name);
}

/* A string view copied into the arena (the auth room's views last one call). */
static kc_str_t dup_str(kc_arena_t *a, kc_str_t s, bool *oom)
{
    if (s.len <= 0)
        return s.len < 0 ? KC_STR_NULL : KC_STR_EMPTY;
    char *p = kc_arena_dup(a, s.p, (size_t)s.len);
    if (p == NULL) {
        *oom = true;
        return KC_STR_EMPTY;
    }
    return (kc_str_t){p, s.len};
}

/* ---- DescribeAcls ---------------------------------------------------------------------------- */

typedef struct describe_s {
    kc_arena_t *a;
    kc_describe_acls_resource_t *res; /* NULL while counting */
    kc_acl_description_t *acls;
    int32_t n_res, n_acls;
    bool oom;
} describe_t;

static bool same_pattern(const kc_describe_acls_resource_t *r, const kc_acl_binding_t *b)
{
    return r->resource_type == b->resource_type && r->pattern_type == b->pattern_type &&
           r->resource_name.len == b->resource_name.len &&
           memcmp(r->resource_name.p, b->resource_name.p, (size_t)b->resource_name.len) == 0;
}

static int describe_visit(void *arg, const kc_acl_binding_t *b)
{
    describe_t *d = arg;
    if (d->res == NULL) {
        d->n_acls++;
        return 0;
    }
    if (d->n_res == 0 || !same_pattern(&d->res[d->n_res - 1], b)) {
        kc_describe_acls_resource_t *r = &d->res[d->n_res++];
        r->resource_type = b->resource_type;
        r->resource_name = dup_str(d->a, b->resource_name, &d->oom);
        r->pattern_type = b->pattern_type;
        r->acls.v = &d->acls[d->n_acls];
        r->acls.n = 0;
    }
    kc_describe_acls_resource_t *r = &d->res[d->n_res - 1];
    kc_acl_description_t *e = &d->acls[d->n_acls++];
    e->principal = dup_str(d->a, b->principal, &d->oom);
    e->host = dup_str(d->a, b->host, &d->oom);
    e->operation = b->operation;
    e->permission_type = b->permission;
    r->acls.n++;
    return d->oom ? -1 : 0;
}

/* Whether a filter holds an UNKNOWN (0) code, which Kafka's request parsers refuse. */
static bool filter_unknown(const kc_acl_binding_t *f)
{
    return f->resource_type == KC_RES_UNKNOWN || f->pattern_type == KC_PAT_UNKNOWN ||
           f->operation == KC_OP_UNKNOWN || f->permission == KC_PERM_UNKNOWN;
}

int kc_api_describe_acls(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                         kc_arena_t *a, void *out)
{
    const kc_describe_acls_request_t *q = req->body;
    kc_describe_acls_response_t *resp = out;
    if (!kc_api_authorized_cluster(call, KC_OP_DESCRIBE)) {
        resp->error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = KC_STR_LIT(CLUSTER_DENIED);
        return KC_API_DONE;
    }
    if (!kc_api_acl_on(ctx)) {
        resp->error_code = KC_ERR_SECURITY_DISABLED;
        resp->error_message = KC_STR_LIT(NO_AUTHORIZER);
        return KC_API_DONE;
    }
    kc_acl_binding_t f = {.resource_type = q->resource_type_filter,
                          .pattern_type = q->pattern_type_filter,
                          .operation = q->operation,
                          .permission = q->permission_type,
                          .resource_name = q->resource_name_filter,
                          .principal = q->principal_filter,
                          .host = q->host_filter};
    /* Kafka's request parser refuses an UNKNOWN filter element and closes the connection
     * (DescribeAclsRequest.validate). */
    if (filter_unknown(&f))
        return KC_API_CLOSE;
    /* A code Kafka does not know reads as UNKNOWN there, and its authorizer's filter then
     * matches nothing: an empty success. */
    resp->error_message = KC_STR_EMPTY; /* Kafka's success answer carries "" */
    kc_auth_result_t check = kc_auth_acl_filter_check(&f);
    if (check.error != KC_ERR_NONE)
        return KC_API_DONE;
    describe_t d = {.a = a};
    kc_auth_acl_describe(ctx->auth, &f, describe_visit, &d);
    if (d.n_acls == 0)
        return KC_API_DONE;
    d.res = kc_arena_alloc(a, (size_t)d.n_acls * sizeof(*d.res));
    d.acls = kc_arena_alloc(a, (size_t)d.n_acls * sizeof(*d.acls));
    if (d.res == NULL || d.acls == NULL)
        return KC_API_CLOSE;
    d.n_acls = 0;
    kc_auth_acl_describe(ctx->auth, &f, describe_visit, &d);
    if (d.oom)
        return KC_API_CLOSE;
    resp->resources.v = d.res;
    resp->resources.n = d.n_res;
    return KC_API_DONE;
}

/* ---- CreateAcls ------------------------------------------------------------------------------ */

static kc_str_t result_message(kc_arena_t *a, const kc_auth_result_t *r)
{
    if (r->message == NULL) /* Kafka's AclCreationResult of a success carries "" */
        return r->error == KC_ERR_NONE ? KC_STR_EMPTY : KC_STR_NULL;
    bool oom = false;
    kc_str_t s = dup_str(a, kc_str_c(r->message), &oom);
    return oom ? KC_STR_NULL : s;
}

/* A cluster node's CreateAcls whose records raft did not commit: every creation that was to
 * succeed gets the error (as when the write fails on a single node). */
static void created_fix(kc_api_meta_wait_t *w, size_t slot, int16_t err)
{
    (void)slot;
    kc_create_acls_response_t *resp = w->resp;
    for (int32_t i = 0; i < resp->results.n; i++)
        if (resp->results.v[i].error_code == KC_ERR_NONE)
            resp->results.v[i] = (kc_acl_creation_result_t){err, KC_STR_NULL};
}

int kc_api_create_acls(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                       kc_arena_t *a, void *out)
{
    const kc_create_acls_request_t *q = req->body;
    kc_create_acls_response_t *resp = out;
    int32_t n = q->creations.n;
    kc_acl_creation_result_t *res = kc_arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof(*res));
    kc_acl_binding_t *b = kc_arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof(*b));
    kc_auth_result_t *r = kc_arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof(*r));
    if (res == NULL || b == NULL || r == NULL)
        return KC_API_CLOSE;
    resp->results.v = res;
    resp->results.n = n;
    int16_t all = KC_ERR_NONE;
    const char *all_msg = NULL;
    if (!kc_api_authorized_cluster(call, KC_OP_ALTER)) {
        all = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        all_msg = CLUSTER_DENIED;
    } else if (!kc_api_acl_on(ctx)) {
        all = KC_ERR_SECURITY_DISABLED;
        all_msg = NO_AUTHORIZER;
    }
    if (all != KC_ERR_NONE) {
        for (int32_t i = 0; i < n; i++)
            res[i] = (kc_acl_creation_result_t){all, kc_str_c(all_msg)};
        return KC_API_DONE;
    }
    /* Kafka's request parser refuses an UNKNOWN (0) code in a creation, closing the
     * connection (CreateAclsRequest.validate); a MATCH or ANY pattern type, an ANY operation
     * or permission cannot even be made a binding (AclBinding's constructors throw), which
     * fails the whole request with UNKNOWN_SERVER_ERROR. */
    bool unbuildable = false;
    for (int32_t i = 0; i < n; i++) {
        const kc_acl_creation_t *c = &q->creations.v[i];
        if (c->resource_type == KC_RES_UNKNOWN || c->resource_pattern_type == KC_PAT_UNKNOWN ||
            c->operation == KC_OP_UNKNOWN || c->permission_type == KC_PERM_UNKNOWN)
            return KC_API_CLOSE;
        if (c->resource_pattern_type == KC_PAT_ANY || c->resource_pattern_type == KC_PAT_MATCH ||
            c->operation == KC_OP_ANY || c->permission_type == KC_PERM_ANY)
            unbuildable = true;
    }
    if (unbuildable) {
        for (int32_t i = 0; i < n; i++)
            res[i] = (kc_acl_creation_result_t){KC_ERR_UNKNOWN_SERVER_ERROR, KC_STR_NULL};
        return KC_API_DONE;
    }
    for (int32_t i = 0; i < n; i++) {
        const kc_acl_creation_t *c = &q->creations.v[i];
        b[i] = (kc_acl_binding_t){.resource_type = c->resource_type,
                                  .pattern_type = c->resource_pattern_type,
                                  .operation = c->operation,
                                  .permission = c->permission_type,
                                  .resource_name = c->resource_name,
                                  .principal = c->principal,
                                  .host = c->host};
    }
    kc_api_meta_wait_t *w =
        ctx->cluster != NULL ? kc_api_meta_wait(call, a, out, created_fix) : NULL;
    void *arg = w != NULL ? kc_api_meta_slot(w, 0) : NULL;
    kc_api_auth_batch_t batch = {0};
    int rc = kc_auth_acl_create(ctx->auth, b, (size_t)n, kc_auth_rand_default(),
                                kc_api_auth_collect, &batch, r);
    int16_t err = rc == KC_AUTH_OK
                      ? kc_api_auth_commit(ctx, &batch, arg ? kc_api_meta_done : NULL, arg)
                      : (int16_t)KC_ERR_UNKNOWN_SERVER_ERROR;
    kc_api_auth_batch_free(&batch);
    if (err == KC_META_PENDING) { /* a cluster node: answered once raft committed them */
        err = KC_ERR_NONE;
        w->pending++;
    } else if (w != NULL && err == KC_ERR_NOT_CONTROLLER) {
        w->not_controller = true;
    }
    for (int32_t i = 0; i < n; i++) {
        if (rc != KC_AUTH_OK || (err != KC_ERR_NONE && r[i].error == KC_ERR_NONE))
            res[i] = (kc_acl_creation_result_t){err, KC_STR_NULL};
        else
            res[i] = (kc_acl_creation_result_t){r[i].error, result_message(a, &r[i])};
        if (rc == KC_AUTH_OK)
            kc_auth_result_clear(&r[i]);
    }
    if (err != KC_ERR_NONE)
        KC_WARN("api", "CreateAcls: the ACL records could not be written (error %d)", err);
    return w != NULL ? kc_api_meta_end(w) : KC_API_DONE;
}

/* ---- DeleteAcls ------------------------------------------------------------------------------ */

/* A cluster node's DeleteAcls whose records raft did not commit: nothing was removed, so no
 * ACL is listed as deleted (as when the write fails on a single node). */
static void deleted_fix(kc_api_meta_wait_t *w, size_t slot, int16_t err)
{
    (void)slot;
    kc_delete_acls_response_t *resp = w->resp;
    for (int32_t i = 0; i < resp->filter_results.n; i++)
        resp->filter_results.v[i] =
            (kc_delete_acls_filter_result_t){.error_code = err, .error_message = KC_STR_NULL};
}

typedef struct deleted_s {
    kc_arena_t *a;
    kc_delete_acls_filter_result_t *res;
    int32_t *cap; /* per filter: room in matching_acls */
    bool oom;
} deleted_t;

static int deleted_visit(void *arg, size_t i, const kc_acl_binding_t *b)
{
    deleted_t *d = arg;
    kc_delete_acls_filter_result_t *fr = &d->res[i];
    if (fr->matching_acls.n == d->cap[i]) {
        int32_t cap = d->cap[i] ? d->cap[i] * 2 : 4;
        kc_delete_acls_matching_acl_t *v = kc_arena_alloc(d->a, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            d->oom = true;
            return -1;
        }
        if (fr->matching_acls.n > 0)
            memcpy(v, fr->matching_acls.v, (size_t)fr->matching_acls.n * sizeof(*v));
        fr->matching_acls.v = v;
        d->cap[i] = cap;
    }
    kc_delete_acls_matching_acl_t *m = &fr->matching_acls.v[fr->matching_acls.n++];
    *m = (kc_delete_acls_matching_acl_t){.error_code = KC_ERR_NONE,
                                         .error_message = KC_STR_NULL,
                                         .resource_type = b->resource_type,
                                         .pattern_type = b->pattern_type,
                                         .operation = b->operation,
                                         .permission_type = b->permission};
    m->resource_name = dup_str(d->a, b->resource_name, &d->oom);
    m->principal = dup_str(d->a, b->principal, &d->oom);
    m->host = dup_str(d->a, b->host, &d->oom);
    return d->oom ? -1 : 0;
}

int kc_api_delete_acls(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                       kc_arena_t *a, void *out)
{
    const kc_delete_acls_request_t *q = req->body;
    kc_delete_acls_response_t *resp = out;
    int32_t n = q->filters.n;
    size_t room = (size_t)(n > 0 ? n : 1);
    kc_delete_acls_filter_result_t *res = kc_arena_alloc(a, room * sizeof(*res));
    kc_acl_binding_t *f = kc_arena_alloc(a, room * sizeof(*f));
    kc_auth_result_t *r = kc_arena_alloc(a, room * sizeof(*r));
    int32_t *cap = kc_arena_alloc(a, room * sizeof(*cap));
    if (res == NULL || f == NULL || r == NULL || cap == NULL)
        return KC_API_CLOSE;
    memset(res, 0, room * sizeof(*res));
    memset(cap, 0, room * sizeof(*cap));
    resp->filter_results.v = res;
    resp->filter_results.n = n;
    int16_t all = KC_ERR_NONE;
    const char *all_msg = NULL;
    if (!kc_api_authorized_cluster(call, KC_OP_ALTER)) {
        all = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        all_msg = CLUSTER_DENIED;
    } else if (!kc_api_acl_on(ctx)) {
        all = KC_ERR_SECURITY_DISABLED;
        all_msg = NO_AUTHORIZER;
    }
    for (int32_t i = 0; i < n; i++)
        res[i].error_message = all != KC_ERR_NONE ? kc_str_c(all_msg) : KC_STR_NULL;
    if (all != KC_ERR_NONE) {
        for (int32_t i = 0; i < n; i++)
            res[i].error_code = all;
        return KC_API_DONE;
    }
    for (int32_t i = 0; i < n; i++) {
        const kc_delete_acls_filter_t *x = &q->filters.v[i];
        f[i] = (kc_acl_binding_t){.resource_type = x->resource_type_filter,
                                  .pattern_type = x->pattern_type_filter,
                                  .operation = x->operation,
                                  .permission = x->permission_type,
                                  .resource_name = x->resource_name_filter,
                                  .principal = x->principal_filter,
                                  .host = x->host_filter};
        if (filter_unknown(&f[i])) /* DeleteAclsRequest.validate, as DescribeAcls */
            return KC_API_CLOSE;
    }
    deleted_t d = {.a = a, .res = res, .cap = cap};
    kc_api_meta_wait_t *w =
        ctx->cluster != NULL ? kc_api_meta_wait(call, a, out, deleted_fix) : NULL;
    void *arg = w != NULL ? kc_api_meta_slot(w, 0) : NULL;
    kc_api_auth_batch_t batch = {0};
    int rc = kc_auth_acl_delete(ctx->auth, f, (size_t)n, deleted_visit, &d, kc_api_auth_collect,
                                &batch, r);
    int16_t err = rc == KC_AUTH_OK && !d.oom
                      ? kc_api_auth_commit(ctx, &batch, arg ? kc_api_meta_done : NULL, arg)
                      : (int16_t)KC_ERR_UNKNOWN_SERVER_ERROR;
    kc_api_auth_batch_free(&batch);
    if (err == KC_META_PENDING) { /* a cluster node: answered once raft committed them */
        err = KC_ERR_NONE;
        w->pending++;
    } else if (w != NULL && err == KC_ERR_NOT_CONTROLLER) {
        w->not_controller = true;
    }
    for (int32_t i = 0; i < n; i++) {
        if (err != KC_ERR_NONE) { /* nothing was removed: no ACL is listed as deleted */
            res[i] =
                (kc_delete_acls_filter_result_t){.error_code = err, .error_message = KC_STR_NULL};
        } else {
            res[i].error_code = r[i].error;
            /* Kafka's DeleteAcls filter result of a success carries null. */
            res[i].error_message = r[i].message != NULL ? result_message(a, &r[i]) : KC_STR_NULL;
        }
        if (rc == KC_AUTH_OK)
            kc_auth_result_clear(&r[i]);
    }
    if (err != KC_ERR_NONE)
        KC_WARN("api", "DeleteAcls: the ACL records could not be written (error %d)", err);
    return w != NULL ? kc_api_meta_end(w) : KC_API_DONE;
}
