/* hash.h - the 64-bit hashes kcoord uses, defined once.
 *
 * kc_hash_fnv1a: FNV-1a over bytes, continuing from `h` (start from KC_HASH_FNV1A_SEED). Simple
 * and byte-at-a-time: fine for the short keys of hash tables (group ids, record keys).
 * kc_hash_fmix64: MurmurHash3's 64-bit finaliser: every input bit affects every output bit.
 * kc_hash_mix64: the splitmix64 finaliser, the same property with other constants.
 * kc_hash_fold: FNV-1a's low bits are weak; a table that picks its slot from the low bits
 * folds the high ones in.
 *
 * Some results are persisted or visible (topic ids from kc_topic_id_for): these functions must
 * never change what they return.
 */
#ifndef KC_UTIL_HASH_H
#define KC_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KC_HASH_FNV1A_SEED  UINT64_C(0xcbf29ce484222325)
#define KC_HASH_FNV1A_PRIME UINT64_C(0x100000001b3)

static inline uint64_t kc_hash_fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= KC_HASH_FNV1A_PRIME;
    }
    return h;
}

static inline uint64_t kc_hash_fold(uint64_t h)
{
    return h ^ (h >> 29);
}

static inline uint64_t kc_hash_fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

static inline uint64_t kc_hash_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

#endif
