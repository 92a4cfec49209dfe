/* json_check.h - for unit tests: a strict JSON syntax check, and a growing buffer that
 * collects what the JSON emitters (kc_emit_fn) write. */
#ifndef KC_TESTS_JSON_CHECK_H
#define KC_TESTS_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..n) is one JSON value (RFC 8259): structure, numbers, string escapes, no raw
 * control characters and valid UTF-8 in strings, nothing after it but whitespace. */
bool json_valid(const char *s, size_t n);

/* What a kc_emit_fn wrote, NUL-terminated; free p when done. */
typedef struct jbuf_s {
    char *p;
    size_t n, cap;
} jbuf_t;

/* A kc_emit_fn appending to the jbuf_t `arg` (aborts when memory runs out). */
void jb_emit(void *arg, const char *s, size_t n);

#endif
