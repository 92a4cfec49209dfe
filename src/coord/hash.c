/* hash.c - Kafka's group placement: abs(Java String.hashCode(group id)) % partitions.
 *
 * Java hashes a String's UTF-16 code units; the group id arrives as UTF-8 bytes, so it is
 * decoded here the way Java's UTF-8 decoder does (malformed input becomes U+FFFD) and code
 * points above U+FFFF count as their surrogate pair.
 */
#include "coord/coord.h"

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
