/* regex.c - the checks made before RE2 sees a pattern, and the cache of compiled patterns.
 *
 * See regex.h for what is promised. The cache is a map from pattern text to an entry that
 * owns a copy of the text, the compiled pattern (or none when it does not compile) and a
 * reference count. Entries with references are counted as in use; entries without are kept
 * on a least-recently-used list of at most KC_RX_IDLE_MAX (or max_count, when smaller)
 * entries, so that a pattern that comes back (a member that leaves and rejoins, a client
 * retrying a refused one) is not compiled again.
 */
#include "group/regex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/strmap.h"

typedef struct entry_s {
    struct entry_s *prev, *next; /* the idle list, when refs == 0 */
    char *text;                  /* owned, len bytes + NUL; the map's key */
    size_t len;
    int64_t refs;
    bool compiled; /* compilation was tried: rx is the result */
    kc_rx_t *rx;   /* owned; NULL: does not compile */
} entry_t;

struct kc_rx_cache_s {
    kc_strmap_t map; /* text -> entry_t */
    int32_t max_len, max_count;
    size_t in_use;
    size_t n_compiled;
    entry_t *idle_head, *idle_tail; /* most recently used first */
    size_t n_idle;
};

int kc_rx_precheck(const char *p, size_t n, int32_t max_len, char *why, size_t whylen)
{
    if (max_len >= 0 && n > (size_t)max_len) {
        snprintf(why, whylen,
                 "it is %zu bytes long, longer than group.consumer.regex.max.bytes (%d)", n,
                 (int)max_len);
        return -1;
    }
    if (n && memchr(p, '\0', n)) {
        snprintf(why, whylen, "it contains a NUL character");
        return -1;
    }
    /* Parenthesis depth outside character classes and \Q...\E quotes, escapes skipped. */
    int depth = 0;
    bool cls = false;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == '\\' && i + 1 < n) {
            if (!cls && p[i + 1] == 'Q') {
                const char *e = NULL;
                for (size_t j = i + 2; j + 1 < n && !e; j++)
                    if (p[j] == '\\' && p[j + 1] == 'E')
                        e = p + j;
                if (!e)
                    break; /* quoted to the end */
                i = (size_t)(e - p) + 1;
                continue;
            }
            i++;
            continue;
        }
        if (cls) {
            if (ch == '[' && i + 1 < n && p[i + 1] == ':') {
                /* [:alpha:] inside a class */
                const char *e = NULL;
                for (size_t j = i + 2; j + 1 < n && !e; j++)
                    if (p[j] == ':' && p[j + 1] == ']')
                        e = p + j;
                if (e)
                    i = (size_t)(e - p) + 1;
            } else if (ch == ']') {
                cls = false;
            }
            continue;
        }
        if (ch == '[') {
            cls = true;
            /* A ']' right after '[' or '[^' is a literal. */
            if (i + 1 < n && p[i + 1] == '^')
                i++;
            if (i + 1 < n && p[i + 1] == ']')
                i++;
        } else if (ch == '(') {
            if (++depth > KC_RX_MAX_NESTING) {
                snprintf(why, whylen, "expression nests too deeply");
                return -1;
            }
        } else if (ch == ')' && depth > 0) {
            depth--;
        }
    }
    return 0;
}

kc_rx_cache_t *kc_rx_cache_new(int32_t max_len, int32_t max_count)
{
    kc_rx_cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    kc_strmap_init(&c->map);
    c->max_len = max_len;
    c->max_count = max_count > 0 ? max_count : 1;
    return c;
}

static void entry_free(kc_rx_cache_t *c, entry_t *e)
{
    if (e->rx)
        c->n_compiled--;
    kc_rx_free(e->rx);
    free(e->text);
    free(e);
}

void kc_rx_cache_free(kc_rx_cache_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->map.cap; i++) {
        entry_t *e = kc_strmap_slot(&c->map, i);
        if (e)
            entry_free(c, e);
    }
    kc_strmap_free(&c->map);
    free(c);
}

static void idle_unlink(kc_rx_cache_t *c, entry_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->idle_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->idle_tail = e->prev;
    e->prev = e->next = NULL;
    c->n_idle--;
}

static void idle_push(kc_rx_cache_t *c, entry_t *e)
{
    e->prev = NULL;
    e->next = c->idle_head;
    if (c->idle_head)
        c->idle_head->prev = e;
    else
        c->idle_tail = e;
    c->idle_head = e;
    c->n_idle++;
}

/* Drop least recently used idle entries beyond the cap. */
static void idle_trim(kc_rx_cache_t *c)
{
    size_t cap = c->max_count < KC_RX_IDLE_MAX ? (size_t)c->max_count : KC_RX_IDLE_MAX;
    while (c->n_idle > cap) {
        entry_t *e = c->idle_tail;
        idle_unlink(c, e);
        kc_strmap_del(&c->map, e->text, e->len);
        entry_free(c, e);
    }
}

/* The entry for the text, or a new idle one (NULL when out of memory). */
static entry_t *entry_get(kc_rx_cache_t *c, const char *p, size_t n)
{
    entry_t *e = kc_strmap_get(&c->map, n ? p : "", n);
    if (e)
        return e;
    e = calloc(1, sizeof(*e));
    char *text = malloc(n + 1);
    if (!e || !text || kc_strmap_reserve(&c->map, 1) != 0) {
        free(e);
        free(text);
        return NULL;
    }
    if (n)
        memcpy(text, p, n);
    text[n] = '\0';
    e->text = text;
    e->len = n;
    kc_strmap_put(&c->map, e->text, e->len, e); /* reserved */
    idle_push(c, e);
    return e;
}

/* Compile into the entry once. Returns 0, or -1 when out of memory (nothing kept). */
static int entry_compile(kc_rx_cache_t *c, entry_t *e, char *why, size_t whylen)
{
    if (e->compiled)
        return 0;
    char tmp[128];
    if (!why || !whylen) {
        why = tmp;
        whylen = sizeof(tmp);
    }
    /* Nesting is checked for every pattern compiled, whatever its source; length only for the
     * ones requests bring (kc_rx_cache_check), so a replayed member keeps its pattern. */
    if (kc_rx_precheck(e->text, e->len, -1, why, whylen) == 0) {
        e->rx = kc_rx_compile(e->text, e->len, KC_RX_MAX_MEM, why, whylen);
        if (!e->rx && strcmp(why, "out of memory") == 0)
            return -1;
    }
    if (e->rx)
        c->n_compiled++;
    e->compiled = true;
    return 0;
}

int kc_rx_cache_check(kc_rx_cache_t *c, const char *p, size_t n, char *why, size_t whylen)
{
    if (kc_rx_precheck(p, n, c->max_len, why, whylen) != 0)
        return KC_RX_INVALID;
    entry_t *e = entry_get(c, p, n);
    if (!e)
        return KC_RX_OOM;
    if (e->compiled && !e->rx) {
        /* Known to be invalid: compile again (bounded) for the description. */
        kc_rx_t *rx = kc_rx_compile(e->text, e->len, KC_RX_MAX_MEM, why, whylen);
        bool ok = rx != NULL; /* not expected: RE2 is deterministic */
        kc_rx_free(rx);
        return ok ? KC_RX_OK : strcmp(why, "out of memory") == 0 ? KC_RX_OOM : KC_RX_INVALID;
    }
    if (entry_compile(c, e, why, whylen) != 0)
        return KC_RX_OOM;
    if (e->refs == 0) {
        idle_unlink(c, e);
        idle_push(c, e);
    }
    idle_trim(c); /* an idle e is at the head of the list: it stays */
    if (!e->rx)
        return KC_RX_INVALID;
    if (e->refs == 0 && c->in_use >= (size_t)c->max_count) {
        snprintf(why, whylen,
                 "this coordinator partition already holds %zu distinct subscription regexes, "
                 "the most group.consumer.regex.max.count allows",
                 c->in_use);
        return KC_RX_FULL;
    }
    return KC_RX_OK;
}

const kc_rx_t *kc_rx_cache_get(kc_rx_cache_t *c, const char *p, size_t n, kc_rx_t **owned,
                               bool *oom)
{
    *owned = NULL;
    entry_t *e = entry_get(c, p, n);
    if (!e) {
        /* Not kept: compile for this one use. */
        char why[128];
        if (kc_rx_precheck(p, n, -1, why, sizeof(why)) != 0)
            return NULL;
        *owned = kc_rx_compile(p, n, KC_RX_MAX_MEM, why, sizeof(why));
        if (!*owned && strcmp(why, "out of memory") == 0)
            *oom = true;
        return *owned;
    }
    if (entry_compile(c, e, NULL, 0) != 0) {
        *oom = true;
        return NULL;
    }
    if (e->refs == 0) {
        idle_unlink(c, e);
        idle_push(c, e);
    }
    idle_trim(c); /* an idle e is at the head of the list: it stays */
    return e->rx;
}

void kc_rx_cache_ref(kc_rx_cache_t *c, const char *p, size_t n)
{
    entry_t *e = entry_get(c, p, n);
    if (!e)
        return;
    if (e->refs++ == 0) {
        idle_unlink(c, e);
        c->in_use++;
    }
}

void kc_rx_cache_unref(kc_rx_cache_t *c, const char *p, size_t n)
{
    entry_t *e = kc_strmap_get(&c->map, n ? p : "", n);
    if (!e || e->refs == 0)
        return;
    if (--e->refs == 0) {
        c->in_use--;
        idle_push(c, e);
        idle_trim(c);
    }
}

size_t kc_rx_cache_in_use(const kc_rx_cache_t *c)
{
    return c->in_use;
}

size_t kc_rx_cache_compiled(const kc_rx_cache_t *c)
{
    return c->n_compiled;
}
