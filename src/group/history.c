/* history.c - the rebalance history of a group, the same for both kinds of group (history.h).
 *
 * A ring of up to KC_RB_HISTORY entries per group, begun at the group's first rebalance and
 * doubled as entries come until it holds KC_RB_HISTORY. An entry is begun by the event that
 * starts a rebalance, collects the members that joined and dropped out while it runs, and is
 * ended (with one info line) when the group settles.
 */
#include "group/history.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/text.h"
#include "util/diag.h"

static const char *const rb_cause_names[KC_RB_CAUSES] = {
    "member_joined",    "member_left",     "session_timeout", "static_member_replaced",
    "metadata_changed", "leader_rejoined", "sync_timeout",    "upgrade",
    "downgrade",        "other",
};

const char *kc_rb_cause_name(int cause)
{
    return cause >= 0 && cause < KC_RB_CAUSES ? rb_cause_names[cause] : "other";
}

static void rb_entry_clear(kc_history_entry_t *e)
{
    kc_text_own_free(e->member_id);
    kc_text_own_free(e->reason);
    free(e->joined.buf);
    free(e->dropped.buf);
    memset(e, 0, sizeof(*e));
}

/* The name at byte `*pos` of `l`, moving *pos past it. */
static kc_str_t names_next(const kc_history_names_t *l, uint32_t *pos)
{
    uint32_t len;
    memcpy(&len, l->buf + *pos, sizeof(len));
    kc_str_t s = {l->buf + *pos + sizeof(len), (int32_t)len};
    *pos += (uint32_t)sizeof(len) + len;
    return s;
}

/* Add `id` to `l` unless it is there; counts it as left out when it cannot be kept. */
static void names_add(kc_history_names_t *l, kc_str_t id)
{
    uint32_t pos = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (kc_str_eq(names_next(l, &pos), id))
            return;
    size_t need = sizeof(uint32_t) + (size_t)id.len;
    if (l->n >= KC_HISTORY_NAMES_MAX || need > UINT32_MAX - l->len) {
        l->more++;
        return;
    }
    if (need > l->cap - l->len) {
        size_t cap = l->cap ? l->cap : 128;
        while (cap - l->len < need)
            cap *= 2;
        char *buf = cap <= UINT32_MAX ? realloc(l->buf, cap) : NULL;
        if (!buf) {
            l->more++;
            return;
        }
        l->buf = buf;
        l->cap = (uint32_t)cap;
    }
    uint32_t len = (uint32_t)id.len;
    memcpy(l->buf + l->len, &len, sizeof(len));
    if (len)
        memcpy(l->buf + l->len + sizeof(len), id.p, len);
    l->len += (uint32_t)need;
    l->n++;
}

/* Give back the room a list will not use: its entry has ended. */
static void names_fit(kc_history_names_t *l)
{
    if (!l->buf || l->len == l->cap)
        return;
    if (l->len == 0) {
        free(l->buf);
        l->buf = NULL;
        l->cap = 0;
        return;
    }
    char *buf = realloc(l->buf, l->len);
    if (buf) {
        l->buf = buf;
        l->cap = l->len;
    }
}

/* Double the ring (1, 2, 4 .. KC_RB_HISTORY entries). Only called while it is full and has
 * not wrapped, so entry k stays at index k % cap. */
static int ring_grow(kc_history_t *r)
{
    uint32_t cap = r->cap ? r->cap * 2 : 1;
    if (cap > KC_RB_HISTORY)
        cap = KC_RB_HISTORY;
    kc_history_entry_t *v = realloc(r->v, cap * sizeof(*v));
    if (!v)
        return -1;
    memset(v + r->cap, 0, (cap - r->cap) * sizeof(*v));
    r->v = v;
    r->cap = cap;
    return 0;
}

void kc_history_begin(kc_history_t *r, kc_gm_stats_t *stats, kc_time_t now, int cause,
                      kc_str_t member_id, kc_str_t reason)
{
    if (cause < 0 || cause >= KC_RB_CAUSES)
        cause = KC_RB_OTHER;
    if (stats)
        stats->rebalances[cause]++;
    r->open = false;
    if (r->total == r->cap && r->cap < KC_RB_HISTORY && ring_grow(r) != 0)
        return;
    kc_history_entry_t *e = &r->v[r->total % r->cap];
    rb_entry_clear(e);
    e->generation = -1;
    e->start_ms = now.wall_ms;
    e->start_mono = now.mono_ms;
    e->cause = cause;
    e->member_id = kc_text_own(member_id);
    e->reason = kc_text_own(reason);
    r->total++;
    r->open = true;
}

kc_history_entry_t *kc_history_current(kc_history_t *r)
{
    return r->open && r->v && r->total > 0 ? &r->v[(r->total - 1) % r->cap] : NULL;
}

void kc_history_note(kc_history_t *r, bool joined, kc_str_t member_id)
{
    kc_history_entry_t *e = kc_history_current(r);
    if (!e || member_id.len < 0)
        return;
    names_add(joined ? &e->joined : &e->dropped, member_id);
}

kc_history_entry_t *kc_history_end(kc_history_t *r, kc_time_t now, int32_t generation,
                                   const char *outcome)
{
    kc_history_entry_t *e = kc_history_current(r);
    r->open = false;
    if (!e)
        return NULL;
    e->end_ms = now.wall_ms;
    e->end_mono = now.mono_ms;
    names_fit(&e->joined);
    names_fit(&e->dropped);
    e->generation = generation;
    e->outcome = outcome;
    return e;
}

int64_t kc_history_last_end(const kc_history_t *r)
{
    if (!r->v || r->total == 0 || r->open)
        return 0;
    return r->v[(r->total - 1) % r->cap].end_ms;
}

void kc_history_free(kc_history_t *r)
{
    for (uint32_t i = 0; i < r->cap; i++)
        rb_entry_clear(&r->v[i]);
    free(r->v);
    memset(r, 0, sizeof(*r));
}

/* A bounded text buffer for the log line (cut short, never overrun). */
typedef struct tbuf_s {
    char b[2048];
    size_t n;
} tbuf_t;

__attribute__((format(printf, 2, 3))) static void tput(tbuf_t *t, const char *fmt, ...)
{
    if (t->n >= sizeof(t->b) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->b + t->n, sizeof(t->b) - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n += (size_t)k < sizeof(t->b) - t->n ? (size_t)k : sizeof(t->b) - 1 - t->n;
}

static void tput_names(tbuf_t *t, const char *label, const kc_history_names_t *l)
{
    enum { SHOWN = 10 };
    tput(t, " %s [", label);
    uint32_t pos = 0;
    for (uint32_t i = 0; i < l->n && i < SHOWN; i++) {
        kc_str_t s = names_next(l, &pos);
        tput(t, "%s%.*s", i ? ", " : "", SV(s));
    }
    uint32_t rest = l->more + (l->n > SHOWN ? l->n - SHOWN : 0);
    if (rest)
        tput(t, "%s+%u more", l->n ? ", " : "", (unsigned)rest);
    tput(t, "]");
}

/* "session timeout of member X" and the like. */
static void tput_cause(tbuf_t *t, const kc_history_entry_t *e)
{
    static const char *const with_member[] = {
        "member %.*s joined",
        "member %.*s left",
        "session timeout of member %.*s",
        "static member %.*s replaced",
        "metadata changed by member %.*s",
        "leader %.*s rejoined",
        "sync timeout of member %.*s",
        "upgrade to the consumer protocol as member %.*s joined",
        "downgrade to the classic protocol as member %.*s left",
        "other (member %.*s)",
    };
    _Static_assert(sizeof(with_member) / sizeof(with_member[0]) == KC_RB_CAUSES,
                   "one text per cause");
    int cause = e->cause >= 0 && e->cause < KC_RB_CAUSES ? e->cause : KC_RB_OTHER;
    if (e->member_id.len >= 0)
        tput(t, with_member[cause], SV(e->member_id));
    else
        tput(t, "%s", kc_rb_cause_name(cause));
    if (e->reason.len >= 0)
        tput(t, " (%.*s)", SV(e->reason));
}

void kc_history_log(const kc_history_entry_t *e, const char *kind, kc_str_t group_id)
{
    if (kc_diag_get_level() > KC_DIAG_INFO)
        return;
    tbuf_t t;
    t.n = 0;
    t.b[0] = '\0';
    const char *how = "";
    if (e->outcome && strcmp(e->outcome, "empty") == 0)
        how = " (no members left)";
    else if (e->outcome && strcmp(e->outcome, "restarted") == 0)
        how = " (restarted before it was stable)";
    tput(&t, "%s \"%.*s\" rebalance to generation %d took %lld ms%s: ", kind, SV(group_id),
         (int)e->generation, (long long)(e->end_mono - e->start_mono), how);
    tput_cause(&t, e);
    tput(&t, ";");
    tput_names(&t, "joined", &e->joined);
    tput_names(&t, "dropped", &e->dropped);
    KC_INFO("group", "%s", t.b);
}

static void json_names(kc_emit_fn emit, void *arg, const kc_history_names_t *l)
{
    emit(arg, "[", 1);
    uint32_t pos = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        if (i)
            emit(arg, ",", 1);
        kc_text_json_str(emit, arg, names_next(l, &pos));
    }
    emit(arg, "]", 1);
}

void kc_history_json(const kc_history_t *r, int64_t mono_ms, kc_emit_fn emit, void *arg)
{
    emit(arg, "[", 1);
    uint32_t count = r->total < r->cap ? r->total : r->cap;
    for (uint32_t k = 0; k < count; k++) {
        const kc_history_entry_t *e = &r->v[(r->total - count + k) % r->cap];
        bool running = r->open && k == count - 1;
        if (k)
            emit(arg, ",", 1);
        kc_text_json_lit(emit, arg, "{\"generation\":");
        if (e->generation >= 0)
            kc_text_json_i64(emit, arg, e->generation);
        else
            kc_text_json_lit(emit, arg, "null");
        kc_text_json_lit(emit, arg, ",\"start_ms\":");
        kc_text_json_i64(emit, arg, e->start_ms);
        kc_text_json_lit(emit, arg, ",\"end_ms\":");
        kc_text_json_i64(emit, arg, running ? 0 : e->end_ms);
        kc_text_json_lit(emit, arg, ",\"duration_ms\":");
        int64_t d = (running ? mono_ms : e->end_mono) - e->start_mono;
        kc_text_json_i64(emit, arg, d > 0 ? d : 0);
        kc_text_json_lit(emit, arg, ",\"cause\":\"");
        kc_text_json_lit(emit, arg, kc_rb_cause_name(e->cause));
        kc_text_json_lit(emit, arg, "\",\"member_id\":");
        kc_text_json_str(emit, arg, e->member_id);
        kc_text_json_lit(emit, arg, ",\"reason\":");
        kc_text_json_str(emit, arg, e->reason);
        kc_text_json_lit(emit, arg, ",\"outcome\":");
        kc_text_json_str(emit, arg, running || !e->outcome ? KC_STR_NULL : kc_str_c(e->outcome));
        kc_text_json_lit(emit, arg, ",\"joined\":");
        json_names(emit, arg, &e->joined);
        kc_text_json_lit(emit, arg, ",\"dropped\":");
        json_names(emit, arg, &e->dropped);
        if (e->joined.more) {
            kc_text_json_lit(emit, arg, ",\"joined_omitted\":");
            kc_text_json_i64(emit, arg, e->joined.more);
        }
        if (e->dropped.more) {
            kc_text_json_lit(emit, arg, ",\"dropped_omitted\":");
            kc_text_json_i64(emit, arg, e->dropped.more);
        }
        emit(arg, "}", 1);
    }
    emit(arg, "]", 1);
}
