/* crc32c.c - CRC-32C with the SSE4.2 CRC32 instruction when the CPU has it, else slicing-by-8.
 *
 * The table code is the classic slicing-by-8: table[0] is the byte-at-a-time table of the
 * reflected polynomial, and table[k][b] is the CRC of byte b followed by k zero bytes, so eight
 * input bytes fold into the CRC with eight lookups. Input bytes are assembled explicitly, so the
 * code does not depend on the machine's byte order.
 *
 * The tables are built, and the implementation chosen, once under pthread_once; after that
 * every call only reads shared state.
 */
#include "log/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_CRC 1
#include <nmmintrin.h>
#endif

#define POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed */

static uint32_t table[8][256];
static bool use_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
#ifdef HAVE_X86_CRC
    __builtin_cpu_init();
    use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* `crc` here is the raw register (already inverted). */
static uint32_t sw_raw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
              table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#ifdef HAVE_X86_CRC
__attribute__((target("sse4.2"))) static uint32_t hw_raw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        crc = _mm_crc32_u8(crc, *p++);
        n--;
    }
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8); /* x86 is little-endian, which is what CRC32 expects */
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

uint32_t kc_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&once, init);
    if (len == 0)
        return crc;
    return ~sw_raw(~crc, buf, len);
}

uint32_t kc_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&once, init);
    if (len == 0)
        return crc;
#ifdef HAVE_X86_CRC
    if (use_hw)
        return ~hw_raw(~crc, buf, len);
#endif
    return ~sw_raw(~crc, buf, len);
}

bool kc_crc32c_hw(void)
{
    pthread_once(&once, init);
    return use_hw;
}
