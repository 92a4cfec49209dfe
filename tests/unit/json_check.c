/* json_check.c - see json_check.h. */
#include "json_check.h"

#include <stdlib.h>
#include <string.h>

typedef struct jp_s {
    const unsigned char *p, *e;
} jp_t;

static void jp_ws(jp_t *j)
{
    while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool jp_string(jp_t *j)
{
    if (j->p >= j->e || *j->p != '"')
        return false;
    j->p++;
    while (j->p < j->e) {
        unsigned char c = *j->p;
        if (c == '"') {
            j->p++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (++j->p >= j->e)
                return false;
            unsigned char x = *j->p++;
            if (x == 'u') {
                for (int i = 0; i < 4; i++, j->p++)
                    if (j->p >= j->e || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
                        return false;
            } else if (!strchr("\"\\/bfnrt", x) || !x) {
                return false;
            }
            continue;
        }
        int extra = c < 0x80                 ? 0
                    : c >= 0xc2 && c <= 0xdf ? 1
                    : c >= 0xe0 && c <= 0xef ? 2
                    : c >= 0xf0 && c <= 0xf4 ? 3
                                             : -1;
        if (extra < 0 || j->e - j->p <= extra)
            return false;
        for (int i = 1; i <= extra; i++)
            if ((j->p[i] & 0xc0) != 0x80)
                return false;
        j->p += 1 + extra;
    }
    return false;
}

static bool jp_digits(jp_t *j)
{
    const unsigned char *s = j->p;
    while (j->p < j->e && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > s;
}

static bool jp_value(jp_t *j, int depth)
{
    jp_ws(j);
    if (j->p >= j->e || depth > 64)
        return false;
    unsigned char c = *j->p;
    if (c == '"')
        return jp_string(j);
    if (c == '{' || c == '[') {
        unsigned char close = c == '{' ? '}' : ']';
        j->p++;
        jp_ws(j);
        if (j->p < j->e && *j->p == close) {
            j->p++;
            return true;
        }
        for (;;) {
            if (c == '{') {
                jp_ws(j);
                if (!jp_string(j))
                    return false;
                jp_ws(j);
                if (j->p >= j->e || *j->p++ != ':')
                    return false;
            }
            if (!jp_value(j, depth + 1))
                return false;
            jp_ws(j);
            if (j->p >= j->e)
                return false;
            if (*j->p == ',') {
                j->p++;
                continue;
            }
            if (*j->p++ != close)
                return false;
            return true;
        }
    }
    static const char *const lits[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lits[i]);
        if ((size_t)(j->e - j->p) >= n && memcmp(j->p, lits[i], n) == 0) {
            j->p += n;
            return true;
        }
    }
    if (*j->p == '-')
        j->p++;
    if (j->p < j->e && *j->p == '0')
        j->p++;
    else if (!jp_digits(j))
        return false;
    if (j->p < j->e && *j->p == '.') {
        j->p++;
        if (!jp_digits(j))
            return false;
    }
    if (j->p < j->e && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->e && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (!jp_digits(j))
            return false;
    }
    return true;
}

bool json_valid(const char *s, size_t n)
{
    jp_t j = {(const unsigned char *)s, (const unsigned char *)s + n};
    if (!jp_value(&j, 0))
        return false;
    jp_ws(&j);
    return j.p == j.e;
}

void jb_emit(void *arg, const char *s, size_t n)
{
    jbuf_t *b = arg;
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (b->p == NULL)
            abort();
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}
