/* topics.c - CreateTopics, DeleteTopics, ListOffsets, Fetch and Produce: the topic catalog and
 * the record APIs of topics whose partitions hold no records.
 *
 * CreateTopics and DeleteTopics change the catalog (coord.h) and answer as a KRaft controller
 * does: the same checks in the same order, the same error codes and, where Kafka has one, the
 * same error message. The other three answer for partitions that are always empty:
 *
 *   ListOffsets  earliest and latest are offset 0 (leader epoch 0); a timestamp look-up finds no
 *                record (offset -1, timestamp -1), as Kafka answers for an empty log.
 *   Fetch        no records. The high watermark and the last stable offset are the fetch offset
 *                (0 when it is negative) and the log start offset is 0, so a consumer resuming
 *                from a committed offset is in range and sees neither an error nor a reset. The
 *                answer waits max_wait_ms like a long poll that finds nothing, parked on a libuv
 *                timer (never blocking the loop), at most FETCH_PARK_MAX_MS.
 *   Produce      refused per partition with POLICY_VIOLATION and the message "kcoord stores no
 *                records": a non-retriable error, so producers fail fast instead of retrying.
 *
 * Fetch sessions: kcoord is a sessionless broker. A full fetch (epoch 0 or -1) is answered
 * with session id 0, which tells the client that no session was created; an incremental fetch
 * (any other epoch) names a session kcoord never gave out and gets FETCH_SESSION_ID_NOT_FOUND,
 * as Kafka answers for a session it does not have.
 *
 * Every partition is led by this node with leader epoch 0. A request naming a larger epoch
 * gets UNKNOWN_LEADER_EPOCH, as Kafka's leader answers a client that knows a newer epoch than
 * it does; -1 (no epoch) is not checked.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "util/diag.h"

enum {
    MAX_PARTITIONS = 1000000,   /* as many as the `topics` setting allows */
    FETCH_PARK_MAX_MS = 5000,   /* no parked Fetch outlives the server's shutdown grace period */
    INVALID_REQUIRED_ACKS = 21, /* Produce acks other than -1, 0 and 1 */
};

static const char NO_RECORDS[] = "kcoord stores no records";

/* ---- Helpers --------------------------------------------------------------------------------- */

/* printf into the arena. A null string when out of memory: messages are optional. */
static kc_str_t msgf(kc_arena_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kc_str_t msgf(kc_arena_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return KC_STR_NULL;
    char *p = kc_arena_alloc(a, (size_t)n + 1);
    if (p == NULL)
        return KC_STR_NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return (kc_str_t){p, n};
}

/* `n` zeroed elements of `size` bytes from the arena; NULL only when out of memory (n == 0
 * gives a non-NULL pointer to nothing). */
static void *alloc_n(kc_arena_t *a, int32_t n, size_t size)
{
    return kc_arena_alloc(a, n > 0 ? (size_t)n * size : 1);
}

static int32_t count(int32_t n)
{
    return n > 0 ? n : 0;
}

/* Kafka's Topic.validate: 0 when `name` is a legal topic name, else -1 with Kafka's message
 * ("Topic name is invalid: " and the reason, as Kafka 4.4 words it) in *why (from `a`, when `a`
 * is not NULL). */
static int check_topic_name(kc_str_t name, kc_arena_t *a, kc_str_t *why)
{
    kc_str_t msg = KC_STR_NULL;
    int rule = kc_topic_name_check(name.p, name.len > 0 ? (size_t)name.len : 0);
    if (a == NULL || rule == KC_TOPIC_NAME_OK)
        ;
    else if (rule == KC_TOPIC_NAME_EMPTY)
        msg = msgf(a, "Topic name is invalid: the empty string is not allowed");
    else if (rule == KC_TOPIC_NAME_DOTS)
        msg = msgf(a, "Topic name is invalid: '%.*s' is not allowed", name.len, name.p);
    else if (rule == KC_TOPIC_NAME_TOO_LONG)
        msg = msgf(a,
                   "Topic name is invalid: the length of '%.*s' is longer than the max "
                   "allowed length %d",
                   name.len, name.p, KC_TOPIC_NAME_MAX);
    else
        msg = msgf(a,
                   "Topic name is invalid: '%.*s' contains one or more characters other "
                   "than ASCII alphanumerics, '.', '_' and '-'",
                   name.len, name.p);
    if (why)
        *why = msg;
    return rule == KC_TOPIC_NAME_OK ? 0 : -1;
}

/* Topics a client may not create: Kafka's internal topics. kcoord keeps __consumer_offsets
 * itself (its data directory), serves no transactions and has no metadata log. */
static int internal_topic(kc_str_t name)
{
    return kc_str_eq_c(name, "__consumer_offsets") || kc_str_eq_c(name, "__transaction_state") ||
           kc_str_eq_c(name, "__cluster_metadata");
}

/* Kafka refuses a topic whose name differs from an existing one only by '.' against '_' (the
 * two look the same in metric names). Returns the existing topic's name, or NULL. */
static const char *colliding_topic(const kc_catalog_t *cat, kc_str_t name)
{
    if (memchr(name.p, '.', (size_t)name.len) == NULL &&
        memchr(name.p, '_', (size_t)name.len) == NULL)
        return NULL;
    for (size_t i = 0; i < cat->n; i++) {
        const char *t = cat->topics[i].name;
        size_t n = strlen(t);
        if (n == (size_t)name.len && memcmp(t, name.p, n) != 0 &&
            kc_topic_names_collide(t, n, name.p, n))
            return t;
    }
    return NULL;
}

/* Duplicate detection without quadratic time: keys are sorted, runs of equal keys found. */
typedef struct dupkey_s {
    const void *p; /* bytes of the key */
    int32_t len;
    int32_t sub; /* a second key part: a partition, or a kind that keeps names and ids apart */
    int32_t idx; /* the position in the request */
} dupkey_t;

static int key_cmp(const void *x, const void *y)
{
    const dupkey_t *a = x, *b = y;
    if (a->sub != b->sub)
        return a->sub < b->sub ? -1 : 1;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    int c = a->len > 0 ? memcmp(a->p, b->p, (size_t)a->len) : 0;
    if (c != 0)
        return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

enum { UNIQUE = 0, DUP_FIRST = 1, DUP_LATER = 2 };

/* Sort the `nk` keys and mark in dup[idx] (n entries, from `a`, zeroed) whether each key is
 * UNIQUE, the first occurrence of a repeated key (DUP_FIRST) or a later one (DUP_LATER). NULL
 * when out of memory. */
static uint8_t *find_duplicates(dupkey_t *k, int32_t nk, int32_t n, kc_arena_t *a)
{
    uint8_t *dup = alloc_n(a, n, 1);
    if (dup == NULL)
        return NULL;
    if (nk > 1)
        qsort(k, (size_t)nk, sizeof(*k), key_cmp);
    for (int32_t i = 0; i < nk;) {
        int32_t j = i + 1;
        while (j < nk && k[j].sub == k[i].sub && k[j].len == k[i].len &&
               (k[i].len <= 0 || memcmp(k[j].p, k[i].p, (size_t)k[i].len) == 0))
            j++;
        if (j - i > 1)
            for (int32_t m = i; m < j; m++)
                dup[k[m].idx] = m == i ? DUP_FIRST : DUP_LATER;
        i = j;
    }
    return dup;
}

/* A partition of `t` (NULL: unknown topic) by index: the error to answer it with, before any
 * API-specific check. `by_id` picks UNKNOWN_TOPIC_ID for an unknown topic. */
static int16_t partition_error(const kc_topic_t *t, int by_id, int32_t partition,
                               int32_t current_leader_epoch)
{
    if (t == NULL)
        return by_id ? KC_ERR_UNKNOWN_TOPIC_ID : KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (partition < 0 || partition >= t->partitions)
        return KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (current_leader_epoch > 0)
        return KC_ERR_UNKNOWN_LEADER_EPOCH;
    return KC_ERR_NONE;
}

/* ---- CreateTopics ---------------------------------------------------------------------------- */

static int int_cmp(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return a < b ? -1 : a > b;
}

/* Kafka's checks of a manual assignment (ReplicationControlManager.createTopic and
 * validateManualPartitionAssignment) with this node as the only registered broker. Returns
 * the error and sets *msg, or sets *partitions to the number of partitions assigned. */
static int16_t check_assignments(kc_api_ctx_t *ctx, const kc_creatable_topic_t *qt, kc_arena_t *a,
                                 kc_str_t *msg, int32_t *partitions)
{
    if (qt->replication_factor != -1) {
        *msg = msgf(a, "A manual partition assignment was specified, but replication factor was "
                       "not set to -1.");
        return KC_ERR_INVALID_REQUEST;
    }
    if (qt->num_partitions != -1) {
        *msg = msgf(a, "A manual partition assignment was specified, but numPartitions was not "
                       "set to -1.");
        return KC_ERR_INVALID_REQUEST;
    }
    int32_t n = qt->assignments.n;
    uint8_t *seen = alloc_n(a, n, 1); /* partition indexes 0..n-1 met so far */
    if (seen == NULL)
        return -1;
    int32_t rf = -1;
    for (int32_t i = 0; i < n; i++) {
        const kc_creatable_replica_assignment_t *as = &qt->assignments.v[i];
        int32_t p = as->partition_index;
        if (p >= 0 && p < n && seen[p]) {
            *msg = msgf(a, "Found multiple manual partition assignments for partition %d", p);
            return KC_ERR_INVALID_REPLICA_ASSIGNMENT;
        }
        int32_t nb = count(as->broker_ids.n);
        if (nb == 0) {
            *msg = msgf(a, "The manual partition assignment includes an empty replica list.");
            return KC_ERR_INVALID_REPLICA_ASSIGNMENT;
        }
        int32_t *ids = alloc_n(a, nb, sizeof(*ids));
        if (ids == NULL)
            return -1;
        memcpy(ids, as->broker_ids.v, (size_t)nb * sizeof(*ids));
        qsort(ids, (size_t)nb, sizeof(*ids), int_cmp);
        for (int32_t j = 0; j < nb; j++) {
            if (ids[j] != ctx->node_id) {
                *msg = msgf(a,
                            "The manual partition assignment includes broker %d, but no such "
                            "broker is registered.",
                            ids[j]);
                return KC_ERR_INVALID_REPLICA_ASSIGNMENT;
            }
            if (j > 0 && ids[j] == ids[j - 1]) {
                *msg = msgf(a,
                            "The manual partition assignment includes the broker %d more than "
                            "once.",
                            ids[j]);
                return KC_ERR_INVALID_REPLICA_ASSIGNMENT;
            }
        }
        if (rf >= 0 && nb != rf) {
            *msg = msgf(a,
                        "The manual partition assignment includes a partition with %d "
                        "replica(s), but this is not consistent with previous partitions, which "
                        "have %d replica(s).",
                        nb, rf);
            return KC_ERR_INVALID_REPLICA_ASSIGNMENT;
        }
        rf = nb;
        if (p >= 0 && p < n) /* an index outside 0..n-1 leaves a gap, found below */
            seen[p] = 1;
    }
    for (int32_t p = 0; p < n; p++) {
        if (!seen[p]) {
            *msg = msgf(a, "partitions should be a consecutive 0-based integer sequence");
            return KC_ERR_INVALID_REPLICA_ASSIGNMENT;
        }
    }
    *partitions = n;
    return KC_ERR_NONE;
}

/* Kafka's createTopic checks of counts and replication. Returns the error (with *msg) or
 * sets *partitions. -1 when out of memory. */
static int16_t check_new_topic(kc_api_ctx_t *ctx, const kc_creatable_topic_t *qt, kc_arena_t *a,
                               kc_str_t *msg, int32_t *partitions)
{
    if (qt->assignments.n > 0)
        return check_assignments(ctx, qt, a, msg, partitions);
    int16_t rf = qt->replication_factor;
    if (rf < -1 || rf == 0) {
        *msg = msgf(a, "Replication factor must be larger than 0, or -1 to use the default value.");
        return KC_ERR_INVALID_REPLICATION_FACTOR;
    }
    int32_t np = qt->num_partitions;
    if (np < -1 || np == 0) {
        *msg = msgf(a, "Number of partitions was set to an invalid non-positive value.");
        return KC_ERR_INVALID_PARTITIONS;
    }
    if (np == -1)
        np = ctx->conf->num_partitions;
    if (np > MAX_PARTITIONS) {
        *msg = msgf(a, "Number of partitions was set to %d, above the largest kcoord serves (%d).",
                    np, MAX_PARTITIONS);
        return KC_ERR_INVALID_PARTITIONS;
    }
    if (rf > 1) {
        *msg = msgf(a,
                    "Unable to replicate the partition %d time(s): The target replication factor "
                    "of %d cannot be reached because only 1 broker(s) are registered or some "
                    "brokers have all their log directories cordoned.",
                    rf, rf);
        return KC_ERR_INVALID_REPLICATION_FACTOR;
    }
    *partitions = np;
    return KC_ERR_NONE;
}

/* ---- Topic configs ------------------------------------------------------------------------- */

/* The topic configs of Kafka 4.4 (LogConfig), with the type of their values. kcoord stores no
 * records, so none has an effect, but a request naming an unknown config or a value of the
 * wrong type is refused as Kafka refuses it, so that a tool checked against kcoord works with
 * Kafka too. Range validators (at least / between) are not checked. */
typedef enum { CT_LONG, CT_INT, CT_DOUBLE, CT_BOOLEAN, CT_STRING, CT_LIST } ctype_t;

typedef struct topic_config_s {
    const char *name;
    ctype_t type;
    const char *one_of; /* for CT_STRING / CT_LIST: the allowed values, ", "-separated */
} topic_config_t;

static const topic_config_t topic_configs[] = {
    {"cleanup.policy", CT_LIST, "compact, delete"},
    {"compression.gzip.level", CT_INT, NULL},
    {"compression.lz4.level", CT_INT, NULL},
    {"compression.type", CT_STRING, "uncompressed, zstd, lz4, snappy, gzip, producer"},
    {"compression.zstd.level", CT_INT, NULL},
    {"delete.retention.ms", CT_LONG, NULL},
    {"errors.deadletterqueue.group.enable", CT_BOOLEAN, NULL},
    {"file.delete.delay.ms", CT_LONG, NULL},
    {"flush.messages", CT_LONG, NULL},
    {"flush.ms", CT_LONG, NULL},
    {"follower.replication.throttled.replicas", CT_LIST, NULL},
    {"index.interval.bytes", CT_INT, NULL},
    {"leader.replication.throttled.replicas", CT_LIST, NULL},
    {"local.retention.bytes", CT_LONG, NULL},
    {"local.retention.ms", CT_LONG, NULL},
    {"max.compaction.lag.ms", CT_LONG, NULL},
    {"max.decompressed.message.bytes", CT_INT, NULL},
    {"max.message.bytes", CT_INT, NULL},
    {"message.timestamp.after.max.ms", CT_LONG, NULL},
    {"message.timestamp.before.max.ms", CT_LONG, NULL},
    {"message.timestamp.type", CT_STRING, "CreateTime, LogAppendTime"},
    {"min.cleanable.dirty.ratio", CT_DOUBLE, NULL},
    {"min.compaction.lag.ms", CT_LONG, NULL},
    {"min.insync.replicas", CT_INT, NULL},
    {"preallocate", CT_BOOLEAN, NULL},
    {"remote.copy.lag.bytes", CT_LONG, NULL},
    {"remote.copy.lag.ms", CT_LONG, NULL},
    {"remote.log.copy.disable", CT_BOOLEAN, NULL},
    {"remote.log.delete.on.disable", CT_BOOLEAN, NULL},
    {"remote.storage.enable", CT_BOOLEAN, NULL},
    {"retention.bytes", CT_LONG, NULL},
    {"retention.ms", CT_LONG, NULL},
    {"segment.bytes", CT_INT, NULL},
    {"segment.index.bytes", CT_INT, NULL},
    {"segment.jitter.ms", CT_LONG, NULL},
    {"segment.ms", CT_LONG, NULL},
    {"unclean.leader.election.enable", CT_BOOLEAN, NULL},
};

/* Whether [p, p+n) is one of the ", "-separated words of `list`. */
static bool one_of(const char *list, const char *p, size_t n)
{
    while (*list != '\0') {
        size_t w = strcspn(list, ",");
        if (w == n && memcmp(list, p, n) == 0)
            return true;
        list += w;
        while (*list == ',' || *list == ' ')
            list++;
    }
    return false;
}

/* Kafka's ConfigDef.parseType for a number: Java's Long/Integer/Double parsing of the trimmed
 * value. */
static bool parse_number(ctype_t t, const char *v, size_t n)
{
    char buf[64];
    while (n > 0 && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    if (t == CT_DOUBLE) {
        (void)strtod(buf, &end);
        return *end == '\0';
    }
    if (!(buf[0] == '-' || buf[0] == '+' || (buf[0] >= '0' && buf[0] <= '9')))
        return false;
    long long x = strtoll(buf, &end, 10);
    if (*end != '\0' || errno != 0)
        return false;
    return t == CT_LONG || (x >= INT32_MIN && x <= INT32_MAX);
}

/* Check the configs of a new topic as Kafka's controller does. Returns KC_ERR_NONE, or
 * INVALID_CONFIG with Kafka's message in *msg. */
static int16_t check_topic_configs(const kc_creatable_topic_t *qt, kc_arena_t *a, kc_str_t *msg)
{
    static const char *const type_names[] = {"LONG", "INT", "DOUBLE", "BOOLEAN", "STRING", "LIST"};
    for (int32_t i = 0; i < count(qt->configs.n); i++) {
        const kc_creatable_topic_config_t *c = &qt->configs.v[i];
        const topic_config_t *tc = NULL;
        for (size_t j = 0; j < sizeof(topic_configs) / sizeof(topic_configs[0]); j++)
            if (c->name.len >= 0 && (size_t)c->name.len == strlen(topic_configs[j].name) &&
                memcmp(c->name.p, topic_configs[j].name, (size_t)c->name.len) == 0)
                tc = &topic_configs[j];
        if (tc == NULL) {
            *msg = msgf(a, "Unknown topic config name: %.*s", c->name.len, c->name.p);
            return KC_ERR_INVALID_CONFIG;
        }
        if (c->value.len < 0) /* null: the default */
            continue;
        const char *v = c->value.p;
        size_t n = (size_t)c->value.len;
        const char *why = NULL;
        switch (tc->type) {
        case CT_LONG:
        case CT_INT:
        case CT_DOUBLE:
            if (!parse_number(tc->type, v, n))
                why = "Not a number of type ";
            break;
        case CT_BOOLEAN:
            if (!((n == 4 && strncasecmp(v, "true", 4) == 0) ||
                  (n == 5 && strncasecmp(v, "false", 5) == 0)))
                why = "Expected value to be either true or false";
            break;
        case CT_STRING:
            if (tc->one_of != NULL && !one_of(tc->one_of, v, n))
                why = "String must be one of: ";
            break;
        case CT_LIST:
            for (size_t k = 0; tc->one_of != NULL && k <= n && why == NULL;) {
                size_t e = k;
                while (e < n && v[e] != ',')
                    e++;
                size_t b = k, z = e;
                while (b < z && v[b] == ' ')
                    b++;
                while (z > b && v[z - 1] == ' ')
                    z--;
                if (z > b && !one_of(tc->one_of, v + b, z - b))
                    why = "String must be one of: ";
                k = e + 1;
            }
            break;
        }
        if (why != NULL) {
            const char *tail = strcmp(why, "Not a number of type ") == 0 ? type_names[tc->type]
                               : tc->one_of != NULL && why[0] == 'S'     ? tc->one_of
                                                                         : "";
            *msg = msgf(a, "Invalid value %.*s for configuration %s: %s%s", c->value.len,
                        c->value.p, tc->name, why, tail);
            return KC_ERR_INVALID_CONFIG;
        }
    }
    return KC_ERR_NONE;
}

/* A CreateTopics result as Kafka's defaults have it: counts -1, no message, no configs. */
static void result_init(kc_creatable_topic_result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->error_message = KC_STR_NULL;
    r->num_partitions = -1;
    r->replication_factor = -1;
}

int kc_api_create_topics(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                         kc_arena_t *a, void *out)
{
    const kc_create_topics_request_t *q = req->body;
    kc_create_topics_response_t *resp = out;
    kc_catalog_t *cat = ctx->catalog;
    int32_t n = count(q->topics.n);

    /* A name given more than once is not created: it gets one INVALID_REQUEST result, after
     * the others (ControllerApis.createTopics). */
    dupkey_t *keys = alloc_n(a, n, sizeof(*keys));
    kc_creatable_topic_result_t *rs = alloc_n(a, n, sizeof(*rs));
    int32_t *parts = alloc_n(a, n, sizeof(*parts));
    if (keys == NULL || rs == NULL || parts == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < n; i++)
        keys[i] = (dupkey_t){q->topics.v[i].name.p, q->topics.v[i].name.len, 0, i};
    uint8_t *dup = find_duplicates(keys, n, n, a);
    if (dup == NULL)
        return KC_API_CLOSE;

    /* First every check against the catalog as it is, then the creations: topics of one
     * request do not see each other, as in Kafka. */
    /* ControllerApis.createTopics: CREATE on the cluster, or else on each topic; a refused
     * topic is answered TOPIC_AUTHORIZATION_FAILED after the others (and after the
     * duplicates), and the configs of a created topic need DESCRIBE_CONFIGS. */
    bool cluster_create = kc_api_authorized_cluster(call, KC_OP_CREATE);
    int32_t nr = 0;
    int32_t *result_of = alloc_n(a, n, sizeof(*result_of));
    bool *refused = alloc_n(a, n, sizeof(*refused));
    if (result_of == NULL || refused == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < n; i++) {
        const kc_creatable_topic_t *qt = &q->topics.v[i];
        result_of[i] = -1;
        refused[i] = dup[i] == UNIQUE && !cluster_create &&
                     !kc_api_authorized(call, KC_OP_CREATE, KC_RES_TOPIC, qt->name);
        if (dup[i] != UNIQUE || refused[i])
            continue;
        kc_creatable_topic_result_t *r = &rs[nr];
        result_of[i] = nr++;
        result_init(r);
        r->name = qt->name;
        const char *other;
        if (internal_topic(qt->name)) {
            r->error_code = KC_ERR_INVALID_REQUEST;
            r->error_message =
                msgf(a, "Creation of internal topic %.*s is prohibited.", qt->name.len, qt->name.p);
        } else if (kc_catalog_find(cat, qt->name) != NULL) {
            r->error_code = KC_ERR_TOPIC_ALREADY_EXISTS;
            r->error_message = msgf(a, "Topic '%.*s' already exists.", qt->name.len, qt->name.p);
        } else if (check_topic_name(qt->name, a, &r->error_message) != 0) {
            r->error_code = KC_ERR_INVALID_TOPIC_EXCEPTION;
        } else if ((other = colliding_topic(cat, qt->name)) != NULL) {
            r->error_code = KC_ERR_INVALID_TOPIC_EXCEPTION;
            r->error_message = msgf(a, "Topic '%.*s' collides with existing topic: %s",
                                    qt->name.len, qt->name.p, other);
        } else {
            int16_t err = check_new_topic(ctx, qt, a, &r->error_message, &parts[i]);
            if (err < 0)
                return KC_API_CLOSE;
            if (err == KC_ERR_NONE)
                err = check_topic_configs(qt, a, &r->error_message);
            r->error_code = err;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (result_of[i] < 0 || rs[result_of[i]].error_code != KC_ERR_NONE)
            continue;
        const kc_creatable_topic_t *qt = &q->topics.v[i];
        kc_creatable_topic_result_t *r = &rs[result_of[i]];
        if (!q->validate_only) {
            int rc = kc_catalog_add(cat, qt->name, parts[i]);
            if (rc == KC_CATALOG_NOMEM)
                return KC_API_CLOSE;
            KC_INFO("api", "created topic %.*s with %d partitions", qt->name.len, qt->name.p,
                    parts[i]);
        }
        /* Valid configs are accepted and not kept: the topic answers with none. */
        r->topic_id = kc_topic_id_for(cat->cluster_id, qt->name.p, (size_t)qt->name.len);
        r->num_partitions = parts[i];
        r->replication_factor = 1;
        r->configs.n = 0;
        if (!kc_api_authorized(call, KC_OP_DESCRIBE_CONFIGS, KC_RES_TOPIC, qt->name))
            r->topic_config_error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
    }
    for (int32_t i = 0; i < n; i++) {
        if (dup[i] != DUP_FIRST)
            continue;
        kc_creatable_topic_result_t *r = &rs[nr++];
        result_init(r);
        r->name = q->topics.v[i].name;
        r->error_code = KC_ERR_INVALID_REQUEST;
        r->error_message = msgf(a, "Duplicate topic name.");
    }
    for (int32_t i = 0; i < n; i++) {
        if (!refused[i])
            continue;
        kc_creatable_topic_result_t *r = &rs[nr++];
        result_init(r);
        r->name = q->topics.v[i].name;
        r->error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
        r->error_message = KC_STR_LIT("Authorization failed.");
    }
    resp->topics.v = rs;
    resp->topics.n = nr;
    return KC_API_DONE;
}

/* ---- DeleteTopics ---------------------------------------------------------------------------- */

/* What becomes of one entry of a DeleteTopics request. */
typedef struct deletion_s {
    kc_str_t name; /* as given; for a topic found by id, the catalog's name (arena copy) */
    kc_uuid_t id;  /* as given; for a topic found by name, its id */
    int by_id;
    int answered;  /* 1: has a result; 0: none (a later duplicate, or an id a name aliased) */
    int16_t error; /* the result's error */
    kc_str_t message;
    int32_t topic; /* catalog index of the topic to delete, or -1 */
} deletion_t;

static int uuid_zero(kc_uuid_t id)
{
    static const kc_uuid_t zero;
    return memcmp(id.b, zero.b, 16) == 0;
}

static kc_str_t arena_str(kc_arena_t *a, const char *s)
{
    size_t n = strlen(s);
    char *p = kc_arena_dup(a, s, n + 1);
    return p ? (kc_str_t){p, (int32_t)n} : KC_STR_NULL;
}

/* ControllerApis.deleteTopics: entries naming neither or both of name and id, duplicates, and
 * unknown topics are answered with their errors; a name that maps to a topic also given by id
 * is refused (and that id gets no answer of its own); the rest are deleted together. */
/* ControllerApis.deleteTopics: a topic the caller may not DESCRIBE is refused without
 * disclosing whether it exists (by id: without its name); one it may DESCRIBE but not DELETE
 * (nor DELETE the cluster) is refused by name, without its id. Returns true when refused. */
static bool deletion_refused(kc_api_call_t *call, deletion_t *e, const kc_topic_t *t,
                             bool cluster_delete, kc_arena_t *a)
{
    if (e->by_id && t == NULL)
        return false; /* UNKNOWN_TOPIC_ID */
    kc_str_t name = t != NULL ? kc_str_c(t->name) : e->name;
    bool describe = kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC, name);
    if (describe && t == NULL)
        return false; /* UNKNOWN_TOPIC_OR_PARTITION */
    if (describe && (cluster_delete || kc_api_authorized(call, KC_OP_DELETE, KC_RES_TOPIC, name)))
        return false;
    e->error = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
    e->message = msgf(a, "Topic authorization failed.");
    if (e->by_id && !describe) {
        e->name = KC_STR_NULL;
    } else if (e->by_id) {
        e->name = arena_str(a, t->name);
    } else {
        e->id = (kc_uuid_t){{0}};
    }
    return true;
}

int kc_api_delete_topics(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                         kc_arena_t *a, void *out)
{
    const kc_delete_topics_request_t *q = req->body;
    kc_delete_topics_response_t *resp = out;
    kc_catalog_t *cat = ctx->catalog;
    int v6 = call->version >= 6;
    int32_t n = v6 ? count(q->topics.n) : count(q->topic_names.n);
    deletion_t *d = alloc_n(a, n, sizeof(*d));
    dupkey_t *keys = alloc_n(a, n, sizeof(*keys));
    /* Per catalog topic: whether some entry names it by id. */
    uint8_t *named_by_id = kc_arena_alloc(a, cat->n + 1);
    if (d == NULL || keys == NULL || named_by_id == NULL)
        return KC_API_CLOSE;

    int32_t nk = 0;
    for (int32_t i = 0; i < n; i++) {
        d[i].name = v6 ? q->topics.v[i].name : q->topic_names.v[i];
        d[i].id = v6 ? q->topics.v[i].topic_id : (kc_uuid_t){{0}};
        d[i].message = KC_STR_NULL;
        d[i].topic = -1;
        d[i].answered = 1;
        int has_name = d[i].name.len >= 0, has_id = !uuid_zero(d[i].id);
        if (has_name && has_id) {
            d[i].error = KC_ERR_INVALID_REQUEST;
            d[i].message = msgf(a, "You may not specify both topic name and topic id.");
        } else if (!has_name && !has_id) {
            d[i].error = KC_ERR_INVALID_REQUEST;
            d[i].message = msgf(a, "Neither topic name nor id were specified.");
        } else {
            d[i].by_id = has_id;
            keys[nk++] = has_id ? (dupkey_t){d[i].id.b, 16, 1, i}
                                : (dupkey_t){d[i].name.p, d[i].name.len, 0, i};
            if (has_id) {
                const kc_topic_t *t = kc_catalog_find_id(cat, d[i].id);
                if (t != NULL)
                    named_by_id[t - cat->topics] = 1;
            }
        }
    }
    uint8_t *dup = find_duplicates(keys, nk, n, a);
    if (dup == NULL)
        return KC_API_CLOSE;
    bool cluster_delete = kc_api_authorized_cluster(call, KC_OP_DELETE);

    for (int32_t i = 0; i < n; i++) {
        deletion_t *e = &d[i];
        if (e->error != KC_ERR_NONE)
            continue;
        if (dup[i] != UNIQUE) {
            e->answered = dup[i] == DUP_FIRST;
            e->error = KC_ERR_INVALID_REQUEST;
            e->message = msgf(a, e->by_id ? "Duplicate topic id." : "Duplicate topic name.");
            if (!e->by_id)
                e->id = (kc_uuid_t){{0}};
            continue;
        }
        const kc_topic_t *t =
            e->by_id ? kc_catalog_find_id(cat, e->id) : kc_catalog_find(cat, e->name);
        if (deletion_refused(call, e, t, cluster_delete, a))
            continue;
        if (t == NULL) {
            e->error = e->by_id ? KC_ERR_UNKNOWN_TOPIC_ID : KC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            e->message = msgf(a, e->by_id ? "This server does not host this topic ID."
                                          : "This server does not host this topic-partition.");
            continue;
        }
        e->topic = (int32_t)(t - cat->topics);
        if (e->by_id) {
            e->name = arena_str(a, t->name);
            if (e->name.len < 0)
                return KC_API_CLOSE;
        } else {
            e->id = t->id;
        }
    }
    /* A topic given by name and by id: the name is refused, the id neither deleted nor
     * answered (Kafka does not comment on an id it will not act on). */
    for (int32_t i = 0; i < n; i++) {
        deletion_t *e = &d[i];
        if (e->topic < 0 || e->by_id || !named_by_id[e->topic])
            continue;
        e->error = KC_ERR_INVALID_REQUEST;
        e->message = msgf(a, "The provided topic name maps to an ID that was already supplied.");
        for (int32_t j = 0; j < n; j++)
            if (d[j].by_id && d[j].topic == e->topic)
                d[j].answered = 0;
        int32_t gone = e->topic;
        for (int32_t j = 0; j < n; j++)
            if (d[j].topic == gone)
                d[j].topic = -1;
    }

    /* Delete, then tell the coordinator, which drops the topic's committed offsets. */
    for (int32_t i = 0; i < n; i++) {
        deletion_t *e = &d[i];
        if (e->topic < 0 || !e->answered)
            continue;
        if (kc_catalog_remove(cat, e->name) == 0) {
            KC_INFO("api", "deleted topic %.*s", e->name.len, e->name.p);
            if (ctx->coord != NULL)
                kc_coord_topic_deleted(ctx->coord, e->name);
        }
        e->topic = -1;
    }

    kc_deletable_topic_result_t *rs = alloc_n(a, n, sizeof(*rs));
    if (rs == NULL)
        return KC_API_CLOSE;
    int32_t nr = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!d[i].answered)
            continue;
        kc_deletable_topic_result_t *r = &rs[nr++];
        r->name = d[i].name;
        r->topic_id = d[i].id;
        r->error_code = d[i].error;
        r->error_message = d[i].message;
    }
    resp->responses.v = rs;
    resp->responses.n = nr;
    return KC_API_DONE;
}

/* ---- Metadata's auto-creation ---------------------------------------------------------------- */

const kc_topic_t *kc_api_auto_create(kc_api_ctx_t *ctx, kc_str_t name)
{
    kc_catalog_t *cat = ctx->catalog;
    if (!ctx->conf->auto_create_topics_enable || name.len < 0 ||
        check_topic_name(name, NULL, NULL) != 0 || internal_topic(name) ||
        colliding_topic(cat, name) != NULL)
        return NULL;
    int rc = kc_catalog_add(cat, name, ctx->conf->num_partitions);
    if (rc == KC_CATALOG_NOMEM)
        return NULL;
    if (rc == KC_CATALOG_OK)
        KC_INFO("api", "auto-created topic %.*s with %d partitions", name.len, name.p,
                ctx->conf->num_partitions);
    return kc_catalog_find(cat, name);
}

/* ---- ListOffsets ----------------------------------------------------------------------------- */

/* Kafka's special timestamps (ListOffsetsRequest). */
enum {
    LATEST_TIMESTAMP = -1,
    EARLIEST_TIMESTAMP = -2,
    EARLIEST_LOCAL_TIMESTAMP = -4,
};

int kc_api_list_offsets(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                        kc_arena_t *a, void *out)
{
    const kc_list_offsets_request_t *q = req->body;
    kc_list_offsets_response_t *resp = out;
    int32_t nt = count(q->topics.n), total = 0;
    for (int32_t i = 0; i < nt; i++)
        total += count(q->topics.v[i].partitions.n);

    /* A partition asked for more than once is answered once, with INVALID_REQUEST (Kafka's
     * ReplicaManager.fetchOffset over the request's distinct partitions). */
    dupkey_t *keys = alloc_n(a, total, sizeof(*keys));
    kc_list_offsets_topic_response_t *rt = alloc_n(a, nt, sizeof(*rt));
    if (keys == NULL || rt == NULL)
        return KC_API_CLOSE;
    int32_t k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kc_list_offsets_topic_t *qt = &q->topics.v[i];
        for (int32_t j = 0; j < count(qt->partitions.n); j++, k++)
            keys[k] = (dupkey_t){qt->name.p, qt->name.len, qt->partitions.v[j].partition_index, k};
    }
    uint8_t *dup = find_duplicates(keys, total, total, a);
    if (dup == NULL)
        return KC_API_CLOSE;

    k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kc_list_offsets_topic_t *qt = &q->topics.v[i];
        int32_t np = count(qt->partitions.n), nr = 0;
        kc_list_offsets_partition_response_t *rp = alloc_n(a, np, sizeof(*rp));
        if (rp == NULL)
            return KC_API_CLOSE;
        rt[i].name = qt->name;
        rt[i].partitions.v = rp;
        const kc_topic_t *t = kc_catalog_find(ctx->catalog, qt->name);
        /* KafkaApis.handleListOffsetRequest: TOPIC DESCRIBE, else each partition is answered
         * TOPIC_AUTHORIZATION_FAILED with no offset. */
        bool allowed = kc_api_authorized(call, KC_OP_DESCRIBE, KC_RES_TOPIC, qt->name);
        for (int32_t j = 0; j < np; j++, k++) {
            const kc_list_offsets_partition_t *qp = &qt->partitions.v[j];
            if (!allowed) {
                rp[nr++] = (kc_list_offsets_partition_response_t){
                    .partition_index = qp->partition_index,
                    .error_code = KC_ERR_TOPIC_AUTHORIZATION_FAILED,
                    .timestamp = -1,
                    .offset = -1,
                    .leader_epoch = -1};
                continue;
            }
            if (dup[k] == DUP_LATER)
                continue;
            kc_list_offsets_partition_response_t *r = &rp[nr++];
            r->partition_index = qp->partition_index;
            r->timestamp = -1;
            r->offset = -1;
            r->leader_epoch = -1;
            r->error_code = dup[k] != UNIQUE ? KC_ERR_INVALID_REQUEST
                                             : partition_error(t, 0, qp->partition_index,
                                                               qp->current_leader_epoch);
            if (r->error_code != KC_ERR_NONE)
                continue;
            /* The log is empty: it starts and ends at 0, and no record matches a timestamp
             * (nor the largest timestamp, -3, nor a tiered offset). */
            if (qp->timestamp == LATEST_TIMESTAMP || qp->timestamp == EARLIEST_TIMESTAMP ||
                qp->timestamp == EARLIEST_LOCAL_TIMESTAMP) {
                r->offset = 0;
                r->leader_epoch = 0;
            }
        }
        rt[i].partitions.n = nr;
    }
    resp->topics.v = rt;
    resp->topics.n = nt;
    return KC_API_DONE;
}

/* ---- Fetch ----------------------------------------------------------------------------------- */

/* A Fetch waiting for its max_wait_ms. malloc'd; freed when its timer has closed. The call
 * and the response live in the request's arena until kc_api_call_reply. */
typedef struct fetch_wait_s {
    uv_timer_t timer;
    kc_api_call_t *call;
    const kc_fetch_response_t *resp;
} fetch_wait_t;

static void on_fetch_wait_closed(uv_handle_t *h)
{
    free(h->data);
}

static void on_fetch_wait(uv_timer_t *t)
{
    fetch_wait_t *w = t->data;
    kc_api_call_reply(w->call, w->resp);
    uv_close((uv_handle_t *)&w->timer, on_fetch_wait_closed);
}

/* Answer `resp` after `ms` milliseconds. Returns KC_API_PARKED, or KC_API_DONE (answer now)
 * when no timer can be had. A parked Fetch whose connection closes is still answered when its
 * timer fires (the net layer drops the reply), so every timer fires and closes: at shutdown
 * the loop ends at most FETCH_PARK_MAX_MS after the last Fetch came in. */
static int park_fetch(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_fetch_response_t *resp,
                      int32_t ms)
{
    fetch_wait_t *w = malloc(sizeof(*w));
    if (w == NULL)
        return KC_API_DONE;
    w->call = call;
    w->resp = resp;
    w->timer.data = w;
    if (uv_timer_init(ctx->loop, &w->timer) != 0) {
        free(w);
        return KC_API_DONE;
    }
    uv_timer_start(&w->timer, on_fetch_wait, (uint64_t)ms, 0);
    return KC_API_PARKED;
}

int kc_api_fetch(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req, kc_arena_t *a,
                 void *out)
{
    const kc_fetch_request_t *q = req->body;
    kc_fetch_response_t *resp = out;
    int16_t v = call->version;
    int by_id = v >= 13;
    resp->session_id = 0;
    if (v >= 7 && q->session_epoch != 0 && q->session_epoch != -1) {
        /* An incremental fetch: its session cannot exist, none was ever created. */
        resp->error_code = KC_ERR_FETCH_SESSION_ID_NOT_FOUND;
        return KC_API_DONE;
    }
    int32_t nt = count(q->topics.n), partitions = 0, errors = 0;
    kc_fetchable_topic_response_t *rt = alloc_n(a, nt, sizeof(*rt));
    if (rt == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < nt; i++) {
        const kc_fetch_topic_t *qt = &q->topics.v[i];
        int32_t np = count(qt->partitions.n);
        kc_partition_data_t *rp = alloc_n(a, np, sizeof(*rp));
        if (rp == NULL)
            return KC_API_CLOSE;
        /* Views into the request, not the catalog: a parked answer must not point at a
         * topic that DeleteTopics may free meanwhile. */
        rt[i].topic = qt->topic;
        rt[i].topic_id = qt->topic_id;
        rt[i].partitions.v = rp;
        rt[i].partitions.n = np;
        const kc_topic_t *t = by_id ? kc_catalog_find_id(ctx->catalog, qt->topic_id)
                                    : kc_catalog_find(ctx->catalog, qt->topic);
        /* KafkaApis.handleFetchRequest: a consumer needs TOPIC READ (an unknown id is
         * answered as such first). */
        bool refused =
            (t != NULL || !by_id) && !kc_api_authorized(call, KC_OP_READ, KC_RES_TOPIC,
                                                        t != NULL ? kc_str_c(t->name) : qt->topic);
        for (int32_t j = 0; j < np; j++) {
            const kc_fetch_partition_t *qp = &qt->partitions.v[j];
            kc_partition_data_t *r = &rp[j];
            r->partition_index = qp->partition;
            r->diverging_epoch.epoch = -1;
            r->diverging_epoch.end_offset = -1;
            r->current_leader.leader_id = -1;
            r->current_leader.leader_epoch = -1;
            r->snapshot_id.end_offset = -1;
            r->snapshot_id.epoch = -1;
            r->preferred_read_replica = -1;
            r->records = (kc_bytes_t){(const uint8_t *)"", 0};
            /* Kafka leaves out aborted transactions (null) unless reading committed. */
            r->aborted_transactions.n = q->isolation_level == 1 ? 0 : -1;
            r->error_code =
                refused ? KC_ERR_TOPIC_AUTHORIZATION_FAILED
                        : partition_error(t, by_id, qp->partition, qp->current_leader_epoch);
            partitions++;
            if (r->error_code != KC_ERR_NONE) {
                /* Kafka's error entry (FetchResponse.partitionResponse): an empty list of
                 * aborted transactions, not null. */
                r->aborted_transactions.n = 0;
                r->high_watermark = -1;
                r->last_stable_offset = -1;
                r->log_start_offset = -1;
                errors++;
                continue;
            }
            r->high_watermark = qp->fetch_offset > 0 ? qp->fetch_offset : 0;
            r->last_stable_offset = r->high_watermark;
            r->log_start_offset = 0;
        }
    }
    resp->responses.v = rt;
    resp->responses.n = nt;
    /* Kafka answers at once when there is nothing to wait for: no wait asked, no partitions,
     * min_bytes already met by nothing, or an error to report. Otherwise nothing will arrive:
     * wait it out. */
    if (q->max_wait_ms <= 0 || partitions == 0 || q->min_bytes <= 0 || errors > 0 ||
        ctx->loop == NULL)
        return KC_API_DONE;
    return park_fetch(ctx, call, resp,
                      q->max_wait_ms < FETCH_PARK_MAX_MS ? q->max_wait_ms : FETCH_PARK_MAX_MS);
}

/* ---- Produce --------------------------------------------------------------------------------- */

int kc_api_produce(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req, kc_arena_t *a,
                   void *out)
{
    const kc_produce_request_t *q = req->body;
    kc_produce_response_t *resp = out;
    int by_id = call->version >= 13;
    int acks_ok = q->acks == -1 || q->acks == 0 || q->acks == 1;
    int32_t nt = count(q->topic_data.n), partitions = 0;
    kc_topic_produce_response_t *rt = alloc_n(a, nt, sizeof(*rt));
    if (rt == NULL)
        return KC_API_CLOSE;
    for (int32_t i = 0; i < nt; i++) {
        const kc_topic_produce_data_t *qt = &q->topic_data.v[i];
        int32_t np = count(qt->partition_data.n);
        kc_partition_produce_response_t *rp = alloc_n(a, np, sizeof(*rp));
        if (rp == NULL)
            return KC_API_CLOSE;
        rt[i].name = qt->name;
        rt[i].topic_id = qt->topic_id;
        rt[i].partition_responses.v = rp;
        rt[i].partition_responses.n = np;
        const kc_topic_t *t = by_id ? kc_catalog_find_id(ctx->catalog, qt->topic_id)
                                    : kc_catalog_find(ctx->catalog, qt->name);
        /* KafkaApis.handleProduceRequest: WRITE on the transactional id when there is one
         * (every partition refused), then TOPIC WRITE per topic. */
        int16_t refused = KC_ERR_NONE;
        if (q->transactional_id.len >= 0 &&
            !kc_api_authorized(call, KC_OP_WRITE, KC_RES_TRANSACTIONAL_ID, q->transactional_id))
            refused = KC_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        else if ((t != NULL || !by_id) &&
                 !kc_api_authorized(call, KC_OP_WRITE, KC_RES_TOPIC,
                                    t != NULL ? kc_str_c(t->name) : qt->name))
            refused = KC_ERR_TOPIC_AUTHORIZATION_FAILED;
        for (int32_t j = 0; j < np; j++) {
            kc_partition_produce_response_t *r = &rp[j];
            r->index = qt->partition_data.v[j].index;
            r->base_offset = -1;
            r->log_append_time_ms = -1;
            r->log_start_offset = -1;
            r->error_message = KC_STR_NULL;
            r->current_leader.leader_id = -1;
            r->current_leader.leader_epoch = -1;
            partitions++;
            /* Unknown partitions as Kafka answers them (retriable: the client's metadata is
             * stale); bad acks as Kafka; everything else refused for good. */
            r->error_code = refused ? refused : partition_error(t, by_id, r->index, -1);
            if (r->error_code != KC_ERR_NONE)
                continue;
            if (!acks_ok) {
                r->error_code = INVALID_REQUIRED_ACKS;
                continue;
            }
            r->error_code = KC_ERR_POLICY_VIOLATION;
            r->error_message = KC_STR_LIT(NO_RECORDS);
        }
    }
    resp->responses.v = rt;
    resp->responses.n = nt;
    if (q->acks == 0) {
        /* No answer is expected. Kafka closes the connection when a partition failed, so that
         * the producer notices; with no partition at all nothing failed and nothing is sent. */
        if (partitions == 0) {
            kc_api_call_skip(call);
            return KC_API_PARKED;
        }
        KC_INFO("api", "Produce with acks=0 from client %.*s refused (%s): closing its connection",
                req->client_id.len > 0 ? req->client_id.len : 0, req->client_id.p, NO_RECORDS);
        return KC_API_CLOSE;
    }
    return KC_API_DONE;
}
