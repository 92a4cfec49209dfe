/* gconf.c - group configs: the settings a consumer group may have of its own (KIP-848's
 * GroupConfig), their validation, and their records in the metadata partition (meta.c).
 *
 * Kafka 4.4 lets an operator give one group its own session timeout, heartbeat interval and
 * assignment interval (IncrementalAlterConfigs on a GROUP resource). It keeps them in KRaft as
 * ConfigRecord {ResourceType 32, ResourceName, Name, Value}; kcoord keeps the same four fields
 * in __kcoord_metadata-0 (key: record type 4, version 0, resource type, resource name, name;
 * value: version 0, value; a removal is a null value). Configs belong to the group id, not to
 * the group: they may be set before the group exists and stay when it is deleted, as in Kafka.
 *
 * Validation is Kafka's GroupConfig.validate: the names must be known, the values integers,
 * within the broker's group.consumer.{min,max}.* bounds, and, with the group's other configs
 * (or the daemon's settings where it has none), the session timeout above the heartbeat
 * interval. The messages are Kafka's.
 *
 * The consumer machine reads a group's configs at each heartbeat through the group manager's
 * group_config callback (kc_gconf_lookup), so a change takes effect at the next one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord_int.h"
#include "proto/errors.h"
#include "util/diag.h"

enum { CONFIG_RECORD = KC_GCONF_RECORD_TYPE, RESOURCE_GROUP = 32 };

const kc_gconf_key_t kc_gconf_keys[KC_GCONF_N] = {
    [KC_GCONF_SESSION] = {"consumer.session.timeout.ms", "group.consumer.session.timeout.ms",
                          "group.consumer.min.session.timeout.ms",
                          "group.consumer.max.session.timeout.ms", 1,
                          "The timeout to detect client failures when using the consumer group "
                          "protocol."},
    [KC_GCONF_HEARTBEAT] = {"consumer.heartbeat.interval.ms",
                            "group.consumer.heartbeat.interval.ms",
                            "group.consumer.min.heartbeat.interval.ms",
                            "group.consumer.max.heartbeat.interval.ms", 1,
                            "The heartbeat interval given to the members of a consumer group."},
    [KC_GCONF_ASSIGNMENT] = {"consumer.assignment.interval.ms",
                             "group.consumer.assignment.interval.ms",
                             "group.consumer.min.assignment.interval.ms",
                             "group.consumer.max.assignment.interval.ms", 0,
                             "The interval between assignment updates for a consumer group."},
};

typedef struct entry_s {
    char *group;
    size_t len;
    int32_t v[KC_GCONF_N]; /* -1: not set */
} entry_t;

struct kc_gconf_s {
    entry_t *v;
    size_t n, cap;
};

int kc_gconf_key(kc_str_t name)
{
    for (int i = 0; i < KC_GCONF_N; i++)
        if (kc_str_eq_c(name, kc_gconf_keys[i].name))
            return i;
    return -1;
}

/* The daemon's setting and bounds of key `k`. */
static void bounds(const kc_conf_t *conf, int k, int32_t *def, int32_t *min, int32_t *max)
{
    switch (k) {
    case KC_GCONF_SESSION:
        *def = conf->group_consumer_session_timeout_ms;
        *min = conf->group_consumer_min_session_timeout_ms;
        *max = conf->group_consumer_max_session_timeout_ms;
        break;
    case KC_GCONF_HEARTBEAT:
        *def = conf->group_consumer_heartbeat_interval_ms;
        *min = conf->group_consumer_min_heartbeat_interval_ms;
        *max = conf->group_consumer_max_heartbeat_interval_ms;
        break;
    default:
        *def = conf->group_consumer_assignment_interval_ms;
        *min = conf->group_consumer_min_assignment_interval_ms;
        *max = conf->group_consumer_max_assignment_interval_ms;
        break;
    }
}

int32_t kc_gconf_default(const kc_conf_t *conf, int k)
{
    int32_t def, min, max;
    bounds(conf, k, &def, &min, &max);
    return def;
}

kc_gconf_t *kc_gconf_new(void)
{
    return calloc(1, sizeof(kc_gconf_t));
}

void kc_gconf_free(kc_gconf_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].group);
    free(s->v);
    free(s);
}

static entry_t *find(const kc_gconf_t *s, kc_str_t group)
{
    for (size_t i = 0; s && group.len >= 0 && i < s->n; i++)
        if (s->v[i].len == (size_t)group.len && memcmp(s->v[i].group, group.p, s->v[i].len) == 0)
            return &s->v[i];
    return NULL;
}

/* Set (value >= 0) or remove (-1) key k of `group`. 0, or -1 when out of memory. */
static int put(kc_gconf_t *s, kc_str_t group, int k, int32_t value)
{
    entry_t *e = find(s, group);
    if (!e && value < 0)
        return 0;
    if (!e) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            entry_t *v = realloc(s->v, cap * sizeof(*v));
            if (!v)
                return -1;
            s->v = v;
            s->cap = cap;
        }
        char *g = malloc((size_t)group.len + 1);
        if (!g)
            return -1;
        memcpy(g, group.p, (size_t)group.len);
        g[group.len] = '\0';
        e = &s->v[s->n++];
        *e = (entry_t){g, (size_t)group.len, {-1, -1, -1}};
    }
    e->v[k] = value;
    bool any = false;
    for (int i = 0; i < KC_GCONF_N; i++)
        any = any || e->v[i] >= 0;
    if (!any) {
        free(e->group);
        *e = s->v[--s->n];
    }
    return 0;
}

/* ---- Records ----------------------------------------------------------------------------------
 */

static void encode_key(kc_writer_t *w, kc_str_t group, const char *name)
{
    kc_wr_i16(w, CONFIG_RECORD);
    kc_wr_i16(w, 0);
    kc_wr_i8(w, RESOURCE_GROUP);
    kc_wr_str(w, group);
    kc_wr_str(w, kc_str_c(name));
}

/* Parse a decimal int32, surrounding whitespace allowed ("Not a number of type INT"
 * otherwise, as Kafka's ConfigDef, which trims the value first). */
static bool parse_int(kc_str_t s, int32_t *out)
{
    int32_t i = 0, n = s.len;
    while (i < n && (s.p[i] == ' ' || s.p[i] == '\t'))
        i++;
    while (n > i && (s.p[n - 1] == ' ' || s.p[n - 1] == '\t'))
        n--;
    if (n - i <= 0 || n - i > 11)
        return false;
    char buf[16];
    memcpy(buf, s.p + i, (size_t)(n - i));
    buf[n - i] = '\0';
    if (buf[0] == '+' || buf[0] == ' ')
        return false;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || end == buf || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

int kc_gconf_apply(kc_gconf_t *s, const kc_meta_rec_t *rec)
{
    if (s == NULL)
        return -ENOMEM;
    kc_reader_t r;
    kc_rd_init(&r, rec->key, rec->key_len);
    (void)kc_rd_i16(&r); /* the type, CONFIG_RECORD */
    int16_t kv = kc_rd_i16(&r);
    int8_t rt = kc_rd_i8(&r);
    kc_str_t res = kc_rd_str(&r, false);
    kc_str_t name = kc_rd_str(&r, false);
    int32_t n = -1; /* a removal */
    bool bad = false;
    if (rec->value != NULL) {
        kc_reader_t rv;
        kc_rd_init(&rv, rec->value, rec->value_len);
        int16_t vv = kc_rd_i16(&rv);
        kc_str_t val = kc_rd_str(&rv, false);
        bad = rv.err || vv != 0 || !parse_int(val, &n);
    }
    int k = kc_gconf_key(name);
    if (bad || r.err || kv != 0 || rt != RESOURCE_GROUP || k < 0) {
        KC_WARN_LIMITED("coord", "%s-0: a config record kcoord does not know was skipped",
                        KC_META_TOPIC);
        return 0;
    }
    return put(s, res, k, n) == 0 ? 0 : -ENOMEM;
}

/* One live ConfigRecord of the metadata partition into the store. */
static int replay_one(void *arg, const kc_meta_rec_t *rec)
{
    return kc_gconf_apply(arg, rec);
}

int kc_gconf_load(kc_gconf_t *s, kc_coord_t *c)
{
    return kc_meta_each(c, CONFIG_RECORD, replay_one, s);
}

/* ---- Lookups ----------------------------------------------------------------------------------
 */

void kc_gconf_lookup(const kc_gconf_t *s, kc_str_t group, int32_t out[KC_GCONF_N])
{
    const entry_t *e = find(s, group);
    for (int i = 0; i < KC_GCONF_N; i++)
        out[i] = e ? e->v[i] : -1;
}

size_t kc_gconf_each(const kc_gconf_t *s, void (*fn)(void *arg, kc_str_t group), void *arg)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (fn)
            fn(arg, (kc_str_t){s->v[i].group, (int32_t)s->v[i].len});
    return s ? s->n : 0;
}

/* ---- IncrementalAlterConfigs ------------------------------------------------------------------
 */

void kc_gconf_write_error(int16_t err, char *msg, size_t len)
{
    snprintf(msg, len, "The group configs could not be written: %s",
             err == KC_ERR_KAFKA_STORAGE_ERROR ? "the metadata log failed"
             : err == KC_ERR_NOT_CONTROLLER
                 ? "this node does not lead the kcoord cluster; send it to the leader"
                 : "out of memory");
}

/* Kafka's GroupConfig.validate over the group's configs after the change, `v` (-1: not set,
 * the daemon's setting applies). 0 or INVALID_CONFIG with Kafka's message. */
static int16_t validate(const kc_conf_t *conf, const int32_t v[KC_GCONF_N], char *msg, size_t len)
{
    int32_t eff[KC_GCONF_N];
    for (int k = 0; k < KC_GCONF_N; k++) {
        int32_t def, min, max;
        bounds(conf, k, &def, &min, &max);
        eff[k] = v[k] >= 0 ? v[k] : def;
        if (v[k] >= 0 && (v[k] < min || v[k] > max)) {
            snprintf(msg, len, "%s must be in the range %d to %d inclusive.", kc_gconf_keys[k].name,
                     (int)min, (int)max);
            return KC_ERR_INVALID_CONFIG;
        }
    }
    if (eff[KC_GCONF_SESSION] <= eff[KC_GCONF_HEARTBEAT]) {
        snprintf(msg, len, "%s must be greater than %s", kc_gconf_keys[KC_GCONF_SESSION].name,
                 kc_gconf_keys[KC_GCONF_HEARTBEAT].name);
        return KC_ERR_INVALID_CONFIG;
    }
    return KC_ERR_NONE;
}

/* Whether `name` is a group config of Kafka's that kcoord does not serve (its share, streams
 * and dead-letter-queue keys: kcoord runs no share or streams groups). */
static bool foreign_key(kc_str_t name)
{
    static const char *prefixes[] = {"share.", "streams.", "errors.deadletterqueue."};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t n = strlen(prefixes[i]);
        if (name.len >= (int32_t)n && memcmp(name.p, prefixes[i], n) == 0)
            return true;
    }
    return false;
}

int16_t kc_gconf_alter(kc_gconf_t *s, kc_coord_t *c, const kc_conf_t *conf, kc_str_t group,
                       const kc_gconf_op_t *ops, size_t n, bool validate_only, char *msg,
                       size_t len, kc_meta_done_fn done, void *arg)
{
    int32_t v[KC_GCONF_N];
    kc_gconf_lookup(s, group, v);
    bool touched[KC_GCONF_N] = {false};
    msg[0] = '\0';
    /* The request's own checks first, as Kafka's ConfigAdminManager makes them. */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (kc_str_eq(ops[i].name, ops[j].name)) {
                snprintf(msg, len, "Error due to duplicate config keys");
                return KC_ERR_INVALID_REQUEST;
            }
        }
        if (ops[i].op == KC_GCONF_OP_SET && ops[i].value.len < 0) {
            snprintf(msg, len, "Null value not supported for : %.*s",
                     ops[i].name.len > 0 ? (int)ops[i].name.len : 0,
                     ops[i].name.p ? ops[i].name.p : "");
            return KC_ERR_INVALID_REQUEST;
        }
        if (ops[i].op < KC_GCONF_OP_SET || ops[i].op > KC_GCONF_OP_SUBTRACT)
            return KC_ERR_UNKNOWN_SERVER_ERROR; /* Kafka fails it so, without a message */
    }
    for (size_t i = 0; i < n; i++) {
        const kc_gconf_op_t *op = &ops[i];
        int k = kc_gconf_key(op->name);
        if (k < 0) {
            if (foreign_key(op->name))
                snprintf(msg, len,
                         "Group config %.*s is not supported: kcoord serves consumer groups only, "
                         "no share or streams groups.",
                         (int)op->name.len, op->name.p);
            else
                snprintf(msg, len, "Unknown group config name: %.*s",
                         op->name.len > 0 ? (int)op->name.len : 0, op->name.p ? op->name.p : "");
            return KC_ERR_INVALID_CONFIG;
        }
        if (op->op == KC_GCONF_OP_SET) {
            int32_t x;
            if (!parse_int(op->value, &x)) {
                snprintf(msg, len,
                         "Invalid value %.*s for configuration %s: Not a number of type INT",
                         op->value.len > 0 ? (int)op->value.len : 0, op->value.p ? op->value.p : "",
                         kc_gconf_keys[k].name);
                return KC_ERR_INVALID_CONFIG;
            }
            if (x < kc_gconf_keys[k].at_least) {
                snprintf(msg, len,
                         "Invalid value %d for configuration %s: Value must be at least %d", (int)x,
                         kc_gconf_keys[k].name, kc_gconf_keys[k].at_least);
                return KC_ERR_INVALID_CONFIG;
            }
            v[k] = x;
        } else if (op->op == KC_GCONF_OP_DELETE) {
            v[k] = -1;
        } else {
            /* APPEND and SUBTRACT: for LIST keys only, and every group key is an INT. */
            snprintf(msg, len, "Can't %s to key %s because its type is not LIST.",
                     op->op == KC_GCONF_OP_APPEND ? "APPEND" : "SUBTRACT", kc_gconf_keys[k].name);
            return KC_ERR_INVALID_CONFIG;
        }
        touched[k] = true;
    }
    int16_t err = validate(conf, v, msg, len);
    if (err || validate_only)
        return err;

    /* The records, then the store once they are durable. */
    int32_t had[KC_GCONF_N];
    kc_gconf_lookup(s, group, had);
    kc_writer_t kw[KC_GCONF_N], vw[KC_GCONF_N];
    kc_meta_rec_t recs[KC_GCONF_N];
    size_t nr = 0;
    bool oom = false;
    for (int k = 0; k < KC_GCONF_N; k++) {
        if (!touched[k] || (v[k] < 0 && had[k] < 0))
            continue;
        kc_wr_init(&kw[nr]);
        kc_wr_init(&vw[nr]);
        encode_key(&kw[nr], group, kc_gconf_keys[k].name);
        recs[nr] = (kc_meta_rec_t){kw[nr].buf, kw[nr].len, NULL, 0};
        if (v[k] >= 0) {
            char num[16];
            snprintf(num, sizeof(num), "%d", (int)v[k]);
            kc_wr_i16(&vw[nr], 0);
            kc_wr_str(&vw[nr], kc_str_c(num));
            recs[nr].value = vw[nr].buf;
            recs[nr].value_len = vw[nr].len;
        }
        oom = oom || kw[nr].err || vw[nr].err;
        nr++;
    }
    /* A cluster node's change is applied to the store when raft has committed it (kc_gconf_apply,
     * on every node); a single node's once kc_meta_append returns. */
    bool async = done != NULL && kc_coord_clustered(c);
    err = oom     ? KC_ERR_UNKNOWN_SERVER_ERROR
          : async ? kc_meta_write(c, recs, nr, done, arg)
                  : kc_meta_append(c, recs, nr);
    for (size_t i = 0; i < nr; i++) {
        kc_wr_free(&kw[i]);
        kc_wr_free(&vw[i]);
    }
    if (err == KC_META_PENDING) {
        KC_INFO("coord", "group %.*s: group configs change submitted", (int)group.len, group.p);
        return err;
    }
    if (err) {
        kc_gconf_write_error(err, msg, len);
        return err;
    }
    for (int k = 0; k < KC_GCONF_N; k++)
        if (touched[k] && put(s, group, k, v[k]) != 0) {
            snprintf(msg, len, "out of memory");
            return KC_ERR_UNKNOWN_SERVER_ERROR;
        }
    KC_INFO("coord", "group %.*s: group configs changed", (int)group.len, group.p);
    return KC_ERR_NONE;
}
