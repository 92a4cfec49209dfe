/* auth_support.h - what the test_auth_*.c files share: a record collector for the auth room's
 * kc_auth_emit_fn, applying what it collected, and a scripted random source.
 *
 * Included by tests only; every function is static inline so a file uses what it needs.
 */
#ifndef KC_TESTS_AUTH_SUPPORT_H
#define KC_TESTS_AUTH_SUPPORT_H

#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

typedef struct trec_s {
    uint8_t *key;
    size_t key_len;
    uint8_t *value; /* NULL: tombstone */
    size_t value_len;
} trec_t;

typedef struct trecs_s {
    trec_t v[256];
    size_t n;
} trecs_t;

static inline int trecs_emit(void *arg, const uint8_t *key, size_t key_len, const uint8_t *value,
                             size_t value_len)
{
    trecs_t *r = arg;
    assert_true(r->n < 256);
    trec_t *t = &r->v[r->n++];
    t->key = malloc(key_len);
    assert_non_null(t->key);
    memcpy(t->key, key, key_len);
    t->key_len = key_len;
    t->value = NULL;
    t->value_len = value_len;
    if (value != NULL) {
        t->value = malloc(value_len ? value_len : 1);
        assert_non_null(t->value);
        memcpy(t->value, value, value_len);
    }
    return 0;
}

static inline void trecs_clear(trecs_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].key);
        free(r->v[i].value);
    }
    r->n = 0;
}

/* Apply every collected record to a, then forget them. */
static inline void trecs_apply(trecs_t *r, kc_auth_t *a)
{
    for (size_t i = 0; i < r->n; i++)
        assert_int_equal(
            kc_auth_apply(a, r->v[i].key, r->v[i].key_len, r->v[i].value, r->v[i].value_len),
            KC_AUTH_OK);
    trecs_clear(r);
}

/* A random source that returns scripted bytes, then a counter. */
typedef struct script_s {
    const uint8_t *bytes;
    size_t n, pos;
    uint32_t counter;
} script_t;

static inline int script_fill(void *arg, uint8_t *buf, size_t n)
{
    script_t *s = arg;
    for (size_t i = 0; i < n; i++) {
        if (s->pos < s->n)
            buf[i] = s->bytes[s->pos++];
        else
            buf[i] = (uint8_t)(s->counter++ * 2654435761u >> 24);
    }
    return 0;
}

static inline kc_auth_rand_t script_rand(script_t *s)
{
    return (kc_auth_rand_t){script_fill, s};
}

#define S(lit) KC_STR_LIT(lit)

#endif
