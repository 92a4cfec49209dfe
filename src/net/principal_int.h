/* principal_int.h - private to src/net/: the RE2 side of ssl.principal.mapping.rules
 * (principal_re2.cc), behind a C interface for principal.c. */
#ifndef KC_NET_PRINCIPAL_INT_H
#define KC_NET_PRINCIPAL_INT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One compiled rule pattern. */
typedef struct kc_prx_s kc_prx_t;

/* Compile the `n` bytes at `p`; NULL with RE2's description in `why` on a bad pattern. */
kc_prx_t *kc_prx_compile(const char *p, size_t n, char *why, size_t whylen);

/* When `rx` matches the whole of `text`: 1, with *out (malloc'd) the text as Java's
 * text.replaceAll(pattern, repl) makes it. 0 when it does not match; -1 out of memory. */
int kc_prx_replace(const kc_prx_t *rx, const char *text, const char *repl, char **out);

void kc_prx_free(kc_prx_t *rx);

#ifdef __cplusplus
}
#endif

#endif
