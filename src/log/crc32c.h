/* crc32c.h - CRC-32C (Castagnoli), the checksum of Kafka's RecordBatch v2.
 *
 * The polynomial is 0x1EDC6F41 (reflected 0x82F63B78), with the initial value and the final
 * XOR both 0xFFFFFFFF, as RFC 3720 (iSCSI) and Kafka's Crc32C define it: "123456789" gives
 * 0xE3069283. On x86-64 CPUs with SSE4.2 the CRC32 instruction is used (detected once, at the
 * first call); elsewhere a slicing-by-8 table. Both give identical results.
 *
 * All functions are safe to call from any thread.
 */
#ifndef KC_LOG_CRC32C_H
#define KC_LOG_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of `len` bytes at `buf`, continuing from `crc`: pass 0 to start, or the result
 * of an earlier call to extend it, so that
 *     kc_crc32c(kc_crc32c(0, a, na), b, nb) == kc_crc32c(0, a || b, na + nb).
 * `buf` may be NULL when len is 0. */
uint32_t kc_crc32c(uint32_t crc, const void *buf, size_t len);

/* The same computed with the portable table code only (tests compare the two paths). */
uint32_t kc_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* True when kc_crc32c uses the CPU's CRC32 instruction. */
bool kc_crc32c_hw(void);

#endif
