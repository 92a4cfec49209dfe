/* fuzz_regex.c - libFuzzer target: subscription regexes (src/group/regex.h).
 *
 * Input format: the pattern, then optionally a NUL byte and topic names separated by NUL bytes
 * (without one, the names "orders", "xPy" and "" are used). The pattern goes through
 * kc_rx_cache_check of a small cache (length 4096, two patterns in use) and, when accepted,
 * is referenced, matched in full against every name, and released; a second cache check of
 * the same pattern must give the same answer. Any crash, sanitizer report or a check that
 * answers differently the second time is a bug. Nothing may take longer than linear time:
 * libFuzzer's -timeout catches a pattern that would stall the event loop.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "group/regex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size;
    kc_rx_cache_t *c = kc_rx_cache_new(4096, 2);
    if (!c)
        return 0;
    char why[256];
    int rc = kc_rx_cache_check(c, p, plen, why, sizeof(why));
    if (rc == KC_RX_OK) {
        kc_rx_cache_ref(c, p, plen);
        kc_rx_t *owned = NULL;
        bool oom = false;
        const kc_rx_t *rx = kc_rx_cache_get(c, p, plen, &owned, &oom);
        if (!rx && !oom)
            abort(); /* accepted, so it compiles */
        if (rx) {
            if (nul) {
                const char *s = (const char *)nul + 1, *end = (const char *)data + size;
                while (s <= end) {
                    const char *e = memchr(s, 0, (size_t)(end - s));
                    size_t n = e ? (size_t)(e - s) : (size_t)(end - s);
                    (void)kc_rx_full_match(rx, s, n);
                    s += n + 1;
                }
            } else {
                (void)kc_rx_full_match(rx, "orders", 6);
                (void)kc_rx_full_match(rx, "xPy", 3);
                (void)kc_rx_full_match(rx, "", 0);
            }
        }
        kc_rx_free(owned);
        kc_rx_cache_unref(c, p, plen);
    }
    if (rc != KC_RX_OOM) {
        int again = kc_rx_cache_check(c, p, plen, why, sizeof(why));
        if (again != rc && again != KC_RX_OOM)
            abort();
    }
    kc_rx_cache_free(c);
    return 0;
}
