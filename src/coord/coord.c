/* coord.c - the partitions: group placement, per-partition timers, retention, records.
 *
 * A group lives in partition abs(hashCode(group id)) % n, as in Kafka. Each partition owns a
 * group manager and an offsets store (pure state machines, given the time) and one uv_timer
 * armed at the group manager's next deadline. Callers mark a partition as touched when they
 * hand it a request; before the loop sleeps a uv_prepare re-arms the timers of the touched
 * partitions, so no caller has to remember to. One more timer runs offsets retention every
 * offsets.retention.check.interval.ms.
 *
 * Records: both state machines emit the __consumer_offsets records Kafka would append. Until
 * the durable log exists they are counted per partition and dropped.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "coord/coord.h"
#include "util/log.h"

typedef struct part_s {
    kc_partition_t pub; /* first: kc_partition_t * and part_t * convert */
    kc_coord_t *coord;
    uv_timer_t timer;
    bool touched;
    uint64_t records; /* records emitted, until the log takes them */
} part_t;

struct kc_coord_s {
    uv_loop_t *loop;
    const kc_conf_t *conf;
    kc_catalog_t *catalog;
    kc_coord_replies_t replies;
    part_t *parts;
    int32_t n;
    uv_prepare_t prepare;
    uv_timer_t retention;
    int open_handles;
    void (*done)(void *);
    void *done_arg;
};

/* ---- Java's String.hashCode over UTF-16 code units -------------------------------------- */

/* Decode one code point of UTF-8 at s[*i] (advancing *i); malformed input gives U+FFFD, one
 * replacement per maximal invalid prefix, as Java's decoder does. */
static uint32_t next_code_point(const uint8_t *s, size_t n, size_t *i)
{
    uint8_t b = s[*i];
    if (b < 0x80) {
        (*i)++;
        return b;
    }
    size_t need;
    uint32_t cp, min;
    if (b >= 0xc2 && b <= 0xdf) {
        need = 1, cp = b & 0x1f, min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
        need = 2, cp = b & 0x0f, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        need = 3, cp = b & 0x07, min = 0x10000;
    } else {
        (*i)++;
        return 0xfffd;
    }
    size_t j = *i + 1;
    for (size_t k = 0; k < need; k++, j++) {
        if (j >= n || (s[j] & 0xc0) != 0x80) {
            *i = j;
            return 0xfffd;
        }
        cp = cp << 6 | (s[j] & 0x3f);
    }
    *i = j;
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0xfffd;
    return cp;
}

int32_t kc_partition_for(kc_str_t group_id, int32_t n)
{
    uint32_t h = 0;
    const uint8_t *s = (const uint8_t *)group_id.p;
    size_t len = group_id.len > 0 ? (size_t)group_id.len : 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = next_code_point(s, len, &i);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = h * 31 + (0xd800 + (cp >> 10));
            h = h * 31 + (0xdc00 + (cp & 0x3ff));
        } else {
            h = h * 31 + cp;
        }
    }
    int32_t sh = (int32_t)h;
    int32_t abs = sh == INT32_MIN ? 0 : (sh < 0 ? -sh : sh);
    return abs % n;
}

/* ---- Partitions ---------------------------------------------------------------------------- */

static void on_record(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len)
{
    part_t *p = ctx;
    (void)key;
    (void)key_len;
    (void)value;
    (void)value_len;
    p->records++;
}

static void on_join_done(void *ctx, void *waiter, const kc_join_group_response_t *resp)
{
    part_t *p = ctx;
    p->coord->replies.join_done(waiter, resp);
}

static void on_sync_done(void *ctx, void *waiter, const kc_sync_group_response_t *resp)
{
    part_t *p = ctx;
    p->coord->replies.sync_done(waiter, resp);
}

int64_t kc_coord_now(const kc_coord_t *c)
{
    (void)c;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void on_part_timer(uv_timer_t *t)
{
    part_t *p = t->data;
    kc_gm_tick(p->pub.groups, kc_coord_now(p->coord));
    p->touched = true;
}

/* Before the loop sleeps: arm each touched partition's timer at its next deadline. */
static void on_prepare(uv_prepare_t *h)
{
    kc_coord_t *c = h->data;
    int64_t now = -1;
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        if (!p->touched)
            continue;
        p->touched = false;
        int64_t when = kc_gm_next_deadline(p->pub.groups);
        if (when == INT64_MAX) {
            uv_timer_stop(&p->timer);
            continue;
        }
        if (now < 0)
            now = kc_coord_now(c);
        uint64_t delay = when > now ? (uint64_t)(when - now) : 0;
        uv_timer_start(&p->timer, on_part_timer, delay, 0);
    }
}

typedef struct retention_arg_s {
    kc_coord_t *coord;
    part_t *part;
    int64_t now;
} retention_arg_t;

static bool protected_topic(void *arg, kc_str_t group, kc_str_t topic)
{
    retention_arg_t *r = arg;
    return kc_gm_subscribed(r->part->pub.groups, group, topic);
}

static void retention_policy(void *arg, kc_str_t group, kc_offsets_retention_t *out)
{
    retention_arg_t *r = arg;
    out->expirable = kc_gm_offsets_expirable(r->part->pub.groups, group, &out->base_ms);
    out->protected_topic = protected_topic;
    out->arg = r;
}

static void retention_emptied(void *arg, kc_str_t group)
{
    retention_arg_t *r = arg;
    kc_gm_remove_if_empty(r->part->pub.groups, r->now, group);
}

typedef struct empty_groups_s {
    kc_offsets_t *offsets;
    char **ids;
    size_t n, cap;
} empty_groups_t;

/* Collect Empty groups with no offsets left (kc_gm_each must not change the manager). */
static void collect_empty(void *arg, const kc_group_info_t *g)
{
    empty_groups_t *e = arg;
    if (g->state != KC_GROUP_EMPTY || kc_offsets_count(e->offsets, g->group_id) > 0)
        return;
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 8;
        char **ids = realloc(e->ids, cap * sizeof(*ids));
        if (ids == NULL)
            return;
        e->ids = ids;
        e->cap = cap;
    }
    e->ids[e->n] = strndup(g->group_id.p, (size_t)g->group_id.len);
    if (e->ids[e->n])
        e->n++;
}

/* Kafka's cleanup also removes Empty groups that hold no offsets at all (every member left
 * without committing, or their offsets were deleted): they are gone with a tombstone. */
static void remove_empty_groups(part_t *p, int64_t now)
{
    empty_groups_t e = {.offsets = p->pub.offsets};
    kc_gm_each(p->pub.groups, collect_empty, &e);
    for (size_t i = 0; i < e.n; i++) {
        kc_gm_remove_if_empty(p->pub.groups, now, kc_str_c(e.ids[i]));
        free(e.ids[i]);
    }
    free(e.ids);
}

static void on_retention(uv_timer_t *t)
{
    kc_coord_t *c = t->data;
    int64_t now = kc_coord_now(c);
    int64_t retention_ms = (int64_t)c->conf->offsets_retention_minutes * 60000;
    size_t total = 0;
    for (int32_t i = 0; i < c->n; i++) {
        retention_arg_t arg = {c, &c->parts[i], now};
        total += kc_offsets_expire(c->parts[i].pub.offsets, now, retention_ms, retention_policy,
                                   retention_emptied, &arg);
        remove_empty_groups(&c->parts[i], now);
        c->parts[i].touched = true;
    }
    if (total > 0)
        KC_INFO("coord", "offsets retention removed %zu expired offsets", total);
}

kc_coord_t *kc_coord_new(uv_loop_t *loop, const kc_conf_t *conf, kc_catalog_t *cat,
                         const kc_coord_replies_t *replies)
{
    kc_coord_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->loop = loop;
    c->conf = conf;
    c->catalog = cat;
    c->replies = *replies;
    c->n = conf->offsets_topic_num_partitions;
    c->parts = calloc((size_t)c->n, sizeof(*c->parts));
    if (c->parts == NULL) {
        free(c);
        return NULL;
    }
    for (int32_t i = 0; i < c->n; i++) {
        part_t *p = &c->parts[i];
        p->coord = c;
        p->pub.index = i;
        kc_gm_config_t gcfg = {
            .partition = i,
            .min_session_timeout_ms = conf->group_min_session_timeout_ms,
            .max_session_timeout_ms = conf->group_max_session_timeout_ms,
            .initial_rebalance_delay_ms = conf->group_initial_rebalance_delay_ms,
            .max_size = conf->group_max_size,
            .new_member_join_timeout_ms = 300000,
        };
        kc_gm_ops_t gops = {p, on_join_done, on_sync_done, on_record};
        kc_offsets_ops_t oops = {p, on_record};
        p->pub.groups = kc_gm_new(&gcfg, &gops);
        p->pub.offsets = kc_offsets_new(&oops);
        if (p->pub.groups == NULL || p->pub.offsets == NULL) {
            KC_ERROR("coord", "out of memory creating partition %d", i);
            abort(); /* start-up only */
        }
        uv_timer_init(loop, &p->timer);
        p->timer.data = p;
    }
    uv_prepare_init(loop, &c->prepare);
    c->prepare.data = c;
    uv_prepare_start(&c->prepare, on_prepare);
    uv_unref((uv_handle_t *)&c->prepare);
    uv_timer_init(loop, &c->retention);
    c->retention.data = c;
    uint64_t every = (uint64_t)conf->offsets_retention_check_interval_ms;
    uv_timer_start(&c->retention, on_retention, every, every);
    c->open_handles = c->n + 2;
    return c;
}

kc_partition_t *kc_coord_partition_at(kc_coord_t *c, int32_t i)
{
    c->parts[i].touched = true;
    return &c->parts[i].pub;
}

kc_partition_t *kc_coord_partition(kc_coord_t *c, kc_str_t group_id)
{
    return kc_coord_partition_at(c, kc_partition_for(group_id, c->n));
}

int32_t kc_coord_partitions(const kc_coord_t *c)
{
    return c->n;
}

void kc_coord_topic_deleted(kc_coord_t *c, kc_str_t topic)
{
    size_t total = 0;
    for (int32_t i = 0; i < c->n; i++)
        total += kc_offsets_delete_topic(c->parts[i].pub.offsets, topic);
    KC_INFO("coord", "topic %.*s deleted with %zu committed offsets", topic.len > 0 ? topic.len : 0,
            topic.p, total);
}

static void handle_closed(kc_coord_t *c)
{
    if (--c->open_handles > 0)
        return;
    for (int32_t i = 0; i < c->n; i++) {
        kc_offsets_free(c->parts[i].pub.offsets);
    }
    void (*done)(void *) = c->done;
    void *arg = c->done_arg;
    free(c->parts);
    free(c);
    if (done)
        done(arg);
}

static void on_handle_closed(uv_handle_t *h)
{
    handle_closed(h->data);
}

static void on_part_timer_closed(uv_handle_t *h)
{
    handle_closed(((part_t *)h->data)->coord);
}

void kc_coord_close(kc_coord_t *c, void (*done)(void *arg), void *arg)
{
    c->done = done;
    c->done_arg = arg;
    /* Answer parked requests before the connections go. */
    for (int32_t i = 0; i < c->n; i++) {
        kc_gm_free(c->parts[i].pub.groups);
        c->parts[i].pub.groups = NULL;
    }
    for (int32_t i = 0; i < c->n; i++)
        uv_close((uv_handle_t *)&c->parts[i].timer, on_part_timer_closed);
    uv_close((uv_handle_t *)&c->prepare, on_handle_closed);
    uv_close((uv_handle_t *)&c->retention, on_handle_closed);
}
