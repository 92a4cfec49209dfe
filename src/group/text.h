/* text.h - inside the group room: the string and JSON helpers every group file shares.
 *
 * Strings are kc_str_t views; a null view (len < 0) stays null through every copy. Nothing
 * here keeps state. Not part of the room's door (group.h).
 */
#ifndef KC_GROUP_TEXT_H
#define KC_GROUP_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"

/* printf arguments for "%.*s" of a view (null prints as ""). */
#define SV(s) (int)((s).len > 0 ? (s).len : 0), ((s).p ? (s).p : "")

/* Not null. */
static inline bool kc_text_present(kc_str_t s)
{
    return s.len >= 0;
}

/* Kafka's "isNotEmpty": not null and not "". */
static inline bool kc_text_set(kc_str_t s)
{
    return s.len > 0;
}

/* The bytes kc_text_put needs for `s`: its length and a NUL (0 for null). */
static inline size_t kc_text_space(kc_str_t s)
{
    return s.len >= 0 ? (size_t)s.len + 1 : 0;
}

/* Copy `s` (with a NUL) to *cursor and advance it by kc_text_space(s); null stays null. */
kc_str_t kc_text_put(char **cursor, kc_str_t s);

/* A copy of `s` in the arena (null stays null). Sets *oom and returns "" on failure. */
kc_str_t kc_text_arena(kc_arena_t *a, kc_str_t s, bool *oom);

/* Byte order of two views, shorter first on a common prefix; a null view sorts first. */
int kc_text_cmp(kc_str_t x, kc_str_t y);
/* The same for qsort over an array of kc_str_t. */
int kc_text_qcmp(const void *a, const void *b);

/* A malloc'd copy of `s` with a NUL (null for null, or when out of memory); free with
 * kc_text_own_free. */
kc_str_t kc_text_own(kc_str_t s);
void kc_text_own_free(kc_str_t s);

/* JSON pieces: a literal, a quoted escaped string (null for a null view), a number. */
void kc_text_json_lit(kc_emit_fn emit, void *arg, const char *s);
void kc_text_json_str(kc_emit_fn emit, void *arg, kc_str_t s);
void kc_text_json_i64(kc_emit_fn emit, void *arg, int64_t v);

#endif
