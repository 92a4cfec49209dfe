/* text.c - the group room's shared string and JSON helpers (text.h). */
#include "group/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/diag.h"

kc_str_t kc_text_put(char **cursor, kc_str_t s)
{
    if (s.len < 0)
        return KC_STR_NULL;
    char *p = *cursor;
    if (s.len)
        memcpy(p, s.p, (size_t)s.len);
    p[s.len] = '\0';
    *cursor = p + s.len + 1;
    return (kc_str_t){p, s.len};
}

kc_str_t kc_text_arena(kc_arena_t *a, kc_str_t s, bool *oom)
{
    if (s.len < 0)
        return KC_STR_NULL;
    char *p = kc_arena_alloc(a, (size_t)s.len + 1);
    if (!p) {
        *oom = true;
        return KC_STR_EMPTY;
    }
    if (s.len)
        memcpy(p, s.p, (size_t)s.len);
    return (kc_str_t){p, s.len};
}

int kc_text_cmp(kc_str_t x, kc_str_t y)
{
    int32_t n = x.len < y.len ? x.len : y.len;
    int c = n > 0 ? memcmp(x.p, y.p, (size_t)n) : 0;
    if (c)
        return c;
    return (x.len > y.len) - (x.len < y.len);
}

int kc_text_qcmp(const void *a, const void *b)
{
    return kc_text_cmp(*(const kc_str_t *)a, *(const kc_str_t *)b);
}

kc_str_t kc_text_own(kc_str_t s)
{
    if (s.len < 0)
        return KC_STR_NULL;
    char *p = malloc((size_t)s.len + 1);
    if (!p)
        return KC_STR_NULL;
    if (s.len)
        memcpy(p, s.p, (size_t)s.len);
    p[s.len] = '\0';
    return (kc_str_t){p, s.len};
}

void kc_text_own_free(kc_str_t s)
{
    free((void *)s.p);
}

void kc_text_json_lit(kc_emit_fn emit, void *arg, const char *s)
{
    emit(arg, s, strlen(s));
}

void kc_text_json_str(kc_emit_fn emit, void *arg, kc_str_t s)
{
    if (s.len < 0) {
        emit(arg, "null", 4);
        return;
    }
    emit(arg, "\"", 1);
    kc_diag_json_escape(s.p, (size_t)s.len, emit, arg);
    emit(arg, "\"", 1);
}

void kc_text_json_i64(kc_emit_fn emit, void *arg, int64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%lld", (long long)v);
    emit(arg, b, (size_t)n);
}
