/* configs.c - DescribeConfigs, IncrementalAlterConfigs and ListConfigResources: the configs of
 * consumer groups (KIP-848 group configs, ConfigResource type GROUP = 32).
 *
 * kcoord has configs for groups only. A GROUP resource shows its consumer keys
 * (kc_gconf_keys: consumer.session.timeout.ms, consumer.heartbeat.interval.ms,
 * consumer.assignment.interval.ms) as Kafka 4.4 fills them: the group's own value with source
 * GROUP_CONFIG (8), else the daemon's setting with source DEFAULT_CONFIG (5); synonyms on
 * request (the group's value, then the broker setting it overrides); type INT and Kafka's
 * documentation from v3 on request. Kafka's share.*, streams.* and dead-letter-queue keys are not
 * shown, and setting them is refused with INVALID_CONFIG: kcoord serves no share or streams
 * groups. A group resource without a name gets Kafka's INVALID_REQUEST. A TOPIC that is not
 * in the catalog gets UNKNOWN_TOPIC_OR_PARTITION, as from Kafka; any other resource (a known
 * topic, BROKER, BROKER_LOGGER, CLIENT_METRICS) gets INVALID_REQUEST with a message saying
 * kcoord keeps configs of groups only. ListConfigResources v1 lists the groups that have
 * configs (GROUP, or no type named); the other types Kafka knows list nothing, an unknown type
 * gets UNSUPPORTED_VERSION as from Kafka. The rules
 * (validation, storage, durability) live behind the coordinator's door (gconf.c).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "util/diag.h"

enum {
    RESOURCE_TOPIC = 2,
    RESOURCE_BROKER = 4,
    RESOURCE_BROKER_LOGGER = 8,
    RESOURCE_CLIENT_METRICS = 16,
    RESOURCE_GROUP = 32,
    SOURCE_DEFAULT_CONFIG = 5,
    SOURCE_GROUP_CONFIG = 8,
    CONFIG_TYPE_INT = 3,
};

static const char *resource_name(int8_t t)
{
    switch (t) {
    case RESOURCE_TOPIC:
        return "TOPIC";
    case RESOURCE_BROKER:
        return "BROKER";
    case RESOURCE_BROKER_LOGGER:
        return "BROKER_LOGGER";
    case RESOURCE_CLIENT_METRICS:
        return "CLIENT_METRICS";
    default:
        return "UNKNOWN";
    }
}

/* The answer for a resource that is not a group: its error and message, from the arena. */
static int16_t not_a_group(kc_arena_t *a, int8_t type, kc_str_t *msg)
{
    char buf[160];
    snprintf(buf, sizeof(buf),
             "kcoord keeps configs of groups only (resource type 32); resource type %d (%s) has "
             "none.",
             (int)type, resource_name(type));
    bool oom = false;
    *msg = kc_str_c(buf);
    size_t n = strlen(buf);
    char *p = kc_arena_alloc(a, n);
    if (p == NULL)
        oom = true;
    else
        memcpy(p, buf, n);
    *msg = oom ? KC_STR_NULL : (kc_str_t){p, (int32_t)n};
    return KC_ERR_INVALID_REQUEST;
}

static kc_str_t arena_str(kc_arena_t *a, const char *s, bool *oom)
{
    size_t n = strlen(s);
    char *p = kc_arena_alloc(a, n ? n : 1);
    if (p == NULL) {
        *oom = true;
        return KC_STR_EMPTY;
    }
    memcpy(p, s, n);
    return (kc_str_t){p, (int32_t)n};
}

static bool wanted(const kc_describe_configs_resource_t *r, int k)
{
    if (r->configuration_keys.n < 0)
        return true;
    for (int32_t i = 0; i < r->configuration_keys.n; i++)
        if (kc_str_eq_c(r->configuration_keys.v[i], kc_gconf_keys[k].name))
            return true;
    return false;
}

/* One GROUP resource of a DescribeConfigs. 0, or -1 when out of memory. */
static int describe_group(kc_api_ctx_t *ctx, const kc_request_t *req, kc_arena_t *a,
                          const kc_describe_configs_request_t *q,
                          const kc_describe_configs_resource_t *r,
                          kc_describe_configs_result_t *out)
{
    int32_t own[KC_GCONF_N];
    kc_coord_group_configs(ctx->coord, r->resource_name, own);
    kc_describe_configs_resource_result_t *v = kc_arena_alloc(a, KC_GCONF_N * sizeof(*v));
    if (v == NULL)
        return -1;
    bool oom = false;
    int32_t n = 0;
    for (int k = 0; k < KC_GCONF_N; k++) {
        if (!wanted(r, k))
            continue;
        kc_describe_configs_resource_result_t *e = &v[n++];
        memset(e, 0, sizeof(*e));
        int32_t def = kc_gconf_default(ctx->conf, k);
        char num[16], dnum[16];
        snprintf(num, sizeof(num), "%d", (int)(own[k] >= 0 ? own[k] : def));
        snprintf(dnum, sizeof(dnum), "%d", (int)def);
        e->name = kc_str_c(kc_gconf_keys[k].name);
        e->value = arena_str(a, num, &oom);
        e->read_only = false;
        e->config_source = own[k] >= 0 ? SOURCE_GROUP_CONFIG : SOURCE_DEFAULT_CONFIG;
        e->is_sensitive = false;
        e->config_type = CONFIG_TYPE_INT;
        e->documentation = req->api_version >= 3 && q->include_documentation
                               ? kc_str_c(kc_gconf_keys[k].doc)
                               : KC_STR_NULL;
        if (q->include_synonyms) {
            kc_describe_configs_synonym_t *s = kc_arena_alloc(a, 2 * sizeof(*s));
            if (s == NULL)
                return -1;
            int32_t ns = 0;
            if (own[k] >= 0)
                s[ns++] = (kc_describe_configs_synonym_t){e->name, e->value, SOURCE_GROUP_CONFIG};
            s[ns++] =
                (kc_describe_configs_synonym_t){kc_str_c(kc_gconf_keys[k].setting),
                                                arena_str(a, dnum, &oom), SOURCE_DEFAULT_CONFIG};
            e->synonyms.v = s;
            e->synonyms.n = ns;
        }
    }
    out->configs.v = v;
    out->configs.n = n;
    return oom ? -1 : 0;
}

/* ConfigHelper / KafkaApis: a resource's configs need DESCRIBE_CONFIGS (or ALTER_CONFIGS) on
 * the cluster for BROKER, BROKER_LOGGER and CLIENT_METRICS resources, on the topic for a TOPIC,
 * on the group for a GROUP. Returns 0 when allowed, else the resource's authorization error. */
static int16_t config_refusal(kc_api_call_t *call, int8_t type, kc_str_t name, int8_t op)
{
    switch (type) {
    case RESOURCE_BROKER:
    case RESOURCE_BROKER_LOGGER:
    case RESOURCE_CLIENT_METRICS:
        return kc_api_authorized_cluster(call, op) ? 0 : KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
    case RESOURCE_TOPIC:
        return kc_api_authorized(call, op, KC_RES_TOPIC, name) ? 0
                                                               : KC_ERR_TOPIC_AUTHORIZATION_FAILED;
    case RESOURCE_GROUP:
        return kc_api_authorized(call, op, KC_RES_GROUP, name) ? 0
                                                               : KC_ERR_GROUP_AUTHORIZATION_FAILED;
    default:
        return 0;
    }
}

/* The description Kafka gives a refusal (Errors.message()). */
static kc_str_t refusal_message(int16_t err)
{
    switch (err) {
    case KC_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return KC_STR_LIT("Cluster authorization failed.");
    case KC_ERR_TOPIC_AUTHORIZATION_FAILED:
        return KC_STR_LIT("Topic authorization failed.");
    default:
        return KC_STR_LIT("Group authorization failed.");
    }
}

int kc_api_describe_configs(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                            kc_arena_t *a, void *resp)
{
    const kc_describe_configs_request_t *q = req->body;
    kc_describe_configs_response_t *out = resp;
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    kc_describe_configs_result_t *v = n ? kc_arena_alloc(a, (size_t)n * sizeof(*v)) : NULL;
    int16_t *refused = n ? kc_arena_alloc(a, (size_t)n * sizeof(*refused)) : NULL;
    if (n && (v == NULL || refused == NULL))
        return KC_API_CLOSE;
    /* The resources the caller may describe are answered first, then the refused ones, with
     * the error and its description and no configs (ConfigHelper.handleDescribeConfigsRequest). */
    int32_t k = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < n; i++) {
            const kc_describe_configs_resource_t *r = &q->resources.v[i];
            if (pass == 0)
                refused[i] = config_refusal(call, r->resource_type, r->resource_name,
                                            KC_OP_DESCRIBE_CONFIGS);
            if ((pass == 1) != (refused[i] != 0))
                continue;
            kc_describe_configs_result_t *e = &v[k++];
            memset(e, 0, sizeof(*e));
            e->error_message = KC_STR_NULL;
            e->resource_type = r->resource_type;
            e->resource_name = r->resource_name;
            if (refused[i]) {
                e->error_code = refused[i];
                e->error_message = refusal_message(refused[i]);
                continue;
            }
            if (r->resource_type == RESOURCE_TOPIC &&
                kc_catalog_find(ctx->catalog, r->resource_name) == NULL) {
                e->error_code = KC_ERR_UNKNOWN_TOPIC_OR_PARTITION; /* as Kafka, for any broker */
                e->error_message = KC_STR_EMPTY;
                continue;
            }
            if (r->resource_type != RESOURCE_GROUP) {
                e->error_code = not_a_group(a, r->resource_type, &e->error_message);
                continue;
            }
            if (r->resource_name.len <= 0) {
                e->error_code = KC_ERR_INVALID_REQUEST;
                e->error_message = KC_STR_LIT("Group name must not be empty");
                continue;
            }
            e->error_message = KC_STR_EMPTY; /* Kafka's success answer carries "" */
            if (describe_group(ctx, req, a, q, r, e) != 0)
                return KC_API_CLOSE;
        }
    }
    out->results.v = v;
    out->results.n = n;
    return KC_API_DONE;
}

/* One GROUP resource of an IncrementalAlterConfigs. */
static void alter_group(kc_api_ctx_t *ctx, kc_arena_t *a, bool validate_only,
                        const kc_alter_configs_resource_t *r,
                        kc_alter_configs_resource_response_t *e, kc_api_meta_wait_t *w, size_t slot)
{
    int32_t n = r->configs.n > 0 ? r->configs.n : 0;
    kc_gconf_op_t *ops = n ? kc_arena_alloc(a, (size_t)n * sizeof(*ops)) : NULL;
    char msg[256] = "";
    bool oom = n && ops == NULL;
    if (!oom) {
        for (int32_t i = 0; i < n; i++)
            ops[i] = (kc_gconf_op_t){r->configs.v[i].name, r->configs.v[i].config_operation,
                                     r->configs.v[i].value};
        void *arg = w != NULL ? kc_api_meta_slot(w, slot) : NULL;
        e->error_code = kc_coord_alter_group_configs(ctx->coord, r->resource_name, ops, (size_t)n,
                                                     validate_only, msg, sizeof(msg),
                                                     arg != NULL ? kc_api_meta_done : NULL, arg);
        if (e->error_code == KC_META_PENDING) { /* a cluster node: answered once committed */
            e->error_code = KC_ERR_NONE;
            w->pending++;
        } else if (w != NULL && e->error_code == KC_ERR_NOT_CONTROLLER) {
            w->not_controller = true;
        }
    } else {
        e->error_code = KC_ERR_UNKNOWN_SERVER_ERROR;
        snprintf(msg, sizeof(msg), "out of memory");
    }
    if (e->error_code && msg[0]) {
        e->error_message = arena_str(a, msg, &oom);
        if (oom)
            e->error_message = KC_STR_NULL;
    }
}

/* A cluster node's group config write that failed after the handler returned. */
static void alter_failed(kc_api_meta_wait_t *w, size_t slot, int16_t err)
{
    kc_incremental_alter_configs_response_t *out = w->resp;
    kc_alter_configs_resource_response_t *e = &out->responses.v[slot];
    char msg[256];
    bool oom = false;
    kc_gconf_write_error(err, msg, sizeof(msg));
    e->error_code = err;
    e->error_message = arena_str(w->a, msg, &oom);
    if (oom)
        e->error_message = KC_STR_NULL;
}

/* An alter held until the metadata writes before it are committed (see below). */
typedef struct held_alter_s {
    kc_api_ctx_t *ctx;
    kc_api_call_t *call;
    kc_request_t req; /* a copy: the handler's is dispatch's, on its stack; the body it points
                       * to is in the call's arena, as is the frame */
    kc_arena_t *a;
    void *resp;
} held_alter_t;

static void alter_when_idle(void *arg)
{
    held_alter_t *h = arg;
    switch (kc_api_incremental_alter_configs(h->ctx, h->call, &h->req, h->a, h->resp)) {
    case KC_API_DONE:
        kc_api_call_reply(h->call, h->resp);
        break;
    case KC_API_CLOSE:
        kc_slot_close(h->call->slot, "cannot answer IncrementalAlterConfigs");
        break;
    default: /* parked: answered later */
        break;
    }
}

int kc_api_incremental_alter_configs(kc_api_ctx_t *ctx, kc_api_call_t *call,
                                     const kc_request_t *req, kc_arena_t *a, void *resp)
{
    const kc_incremental_alter_configs_request_t *q = req->body;
    kc_incremental_alter_configs_response_t *out = resp;
    if (ctx->cluster != NULL && !q->validate_only && kc_meta_busy(ctx->coord)) {
        /* A cluster leader validates against what is committed: while metadata writes are in
         * flight, wait for them, so that this alter is checked against the configs they make
         * (Kafka's controller validates against its uncommitted state). */
        held_alter_t *h = kc_arena_alloc(a, sizeof(*h));
        /* The principal is the connection's, which may be gone when the alter runs. */
        const char *who = call->principal != NULL
                              ? kc_arena_dup(a, call->principal, strlen(call->principal) + 1)
                              : NULL;
        if (h != NULL && (call->principal == NULL || who != NULL)) {
            call->principal = who;
            *h = (held_alter_t){ctx, call, *req, a, resp};
            if (kc_meta_when_idle(ctx->coord, alter_when_idle, h) == 0)
                return KC_API_PARKED;
        }
        /* out of memory: validated against what is committed */
    }
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    kc_alter_configs_resource_response_t *v = n ? kc_arena_alloc(a, (size_t)n * sizeof(*v)) : NULL;
    int16_t *refused = n ? kc_arena_alloc(a, (size_t)n * sizeof(*refused)) : NULL;
    if (n && (v == NULL || refused == NULL))
        return KC_API_CLOSE;
    kc_api_meta_wait_t *w = NULL;
    if (ctx->cluster != NULL && !q->validate_only &&
        (w = kc_api_meta_wait(call, a, resp, alter_failed)) == NULL)
        return KC_API_CLOSE;
    out->responses.v = v;
    out->responses.n = n;
    /* The resources the caller may alter first, then the refused ones (the error alone, no
     * message), which change nothing. */
    int32_t k = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < n; i++) {
            const kc_alter_configs_resource_t *r = &q->resources.v[i];
            if (pass == 0)
                refused[i] =
                    config_refusal(call, r->resource_type, r->resource_name, KC_OP_ALTER_CONFIGS);
            if ((pass == 1) != (refused[i] != 0))
                continue;
            kc_alter_configs_resource_response_t *e = &v[k++];
            memset(e, 0, sizeof(*e));
            e->error_message = KC_STR_NULL;
            e->resource_type = r->resource_type;
            e->resource_name = r->resource_name;
            if (refused[i]) {
                e->error_code = refused[i];
                continue;
            }
            if (r->resource_type != RESOURCE_GROUP) {
                e->error_code = not_a_group(a, r->resource_type, &e->error_message);
                continue;
            }
            if (r->resource_name.len <= 0) {
                e->error_code = KC_ERR_INVALID_REQUEST;
                e->error_message = KC_STR_LIT("Default group resources are not allowed.");
                continue;
            }
            alter_group(ctx, a, q->validate_only, r, e, w, (size_t)(k - 1));
        }
    }
    return w != NULL ? kc_api_meta_end(w) : KC_API_DONE;
}

/* ---- ListConfigResources ----------------------------------------------------------------------
 */

typedef struct list_s {
    kc_config_resource_t *v;
    int32_t n, cap;
    kc_arena_t *a;
    bool oom;
} list_t;

static void add(list_t *l, kc_str_t name, int8_t type)
{
    if (l->n == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 16;
        kc_config_resource_t *v = kc_arena_alloc(l->a, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            l->oom = true;
            return;
        }
        if (l->n)
            memcpy(v, l->v, (size_t)l->n * sizeof(*v));
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (kc_config_resource_t){name, type};
}

static void add_group(void *arg, kc_str_t group)
{
    list_t *l = arg;
    bool oom = false;
    char *p = kc_arena_alloc(l->a, group.len > 0 ? (size_t)group.len : 1);
    if (p == NULL)
        oom = true;
    else if (group.len > 0)
        memcpy(p, group.p, (size_t)group.len);
    if (oom)
        l->oom = true;
    else
        add(l, (kc_str_t){p, group.len}, RESOURCE_GROUP);
}

int kc_api_list_config_resources(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                 kc_arena_t *a, void *resp)
{
    const kc_list_config_resources_request_t *q = req->body;
    kc_list_config_resources_response_t *out = resp;
    list_t l = {.a = a};
    /* KafkaApis.handleListConfigResources: CLUSTER DESCRIBE_CONFIGS. */
    if (!kc_api_authorized_cluster(call, KC_OP_DESCRIBE_CONFIGS)) {
        out->error_code = KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KC_API_DONE;
    }
    /* v0 (ListClientMetricsResources) lists client metrics resources: kcoord has none. v1
     * (KIP-1142) lists the resources of the requested types that have configs, every
     * supported type when none is named. */
    if (req->api_version >= 1) {
        bool groups = q->resource_types.n <= 0;
        for (int32_t i = 0; i < q->resource_types.n; i++) {
            int8_t t = q->resource_types.v[i];
            if (t == RESOURCE_GROUP) {
                groups = true;
            } else if (t != RESOURCE_TOPIC && t != RESOURCE_BROKER && t != RESOURCE_BROKER_LOGGER &&
                       t != RESOURCE_CLIENT_METRICS) {
                out->error_code = KC_ERR_UNSUPPORTED_VERSION; /* Kafka's answer */
                return KC_API_DONE;
            }
        }
        if (groups)
            kc_coord_each_group_config(ctx->coord, add_group, &l);
    }
    if (l.oom)
        return KC_API_CLOSE;
    out->config_resources.v = l.v;
    out->config_resources.n = l.n;
    return KC_API_DONE;
}
