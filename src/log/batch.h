/* batch.h - Kafka RecordBatch v2 (magic 2): encode, validate, iterate records.
 *
 * Inside the log room: kc_plog_t, the dump and verify tools, the tests and the log cleaner use
 * it; the rest of kcoord goes through log.h. The layout, field by field, is in
 * docs/log-format.md; in short, a 61-byte header
 *
 *     baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (2) |
 *     crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
 *     maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
 *     recordCount int32
 *
 * (big-endian; batchLength counts the bytes after itself; the CRC-32C covers attributes to the
 * end of the batch), then the records, zstd-compressed as one frame when the codec is 4.
 */
#ifndef KC_LOG_BATCH_H
#define KC_LOG_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log.h"
#include "proto/wire.h"

/* Byte layout of the header: every member is a byte array, so there is no padding and the
 * offsets below are frozen by the asserts in batch.c. Not used to access memory. */
typedef struct kc_batch_wire_s {
    uint8_t base_offset[8];
    uint8_t batch_length[4];
    uint8_t partition_leader_epoch[4];
    uint8_t magic[1];
    uint8_t crc[4];
    uint8_t attributes[2];
    uint8_t last_offset_delta[4];
    uint8_t base_timestamp[8];
    uint8_t max_timestamp[8];
    uint8_t producer_id[8];
    uint8_t producer_epoch[2];
    uint8_t base_sequence[4];
    uint8_t record_count[4];
} kc_batch_wire_t;

#define KC_BATCH_HEADER_SIZE  61 /* Kafka's RECORD_BATCH_OVERHEAD */
#define KC_BATCH_LOG_OVERHEAD 12 /* baseOffset + batchLength: what batchLength does not count */
#define KC_BATCH_CRC_OFFSET   17 /* where the crc field is */
#define KC_BATCH_CRC_START    21 /* the CRC covers [21, end): attributes onwards */
#define KC_BATCH_MAGIC        2
/* The smallest legal batchLength: a header without records. */
#define KC_BATCH_MIN_LENGTH (KC_BATCH_HEADER_SIZE - KC_BATCH_LOG_OVERHEAD)

/* Attribute bits (Kafka's DefaultRecordBatch). */
#define KC_BATCH_ATTR_CODEC_MASK      0x07
#define KC_BATCH_ATTR_LOG_APPEND_TIME 0x08
#define KC_BATCH_ATTR_TRANSACTIONAL   0x10
#define KC_BATCH_ATTR_CONTROL         0x20

/* The decoded header. */
typedef struct kc_batch_hdr_s {
    int64_t base_offset;
    int32_t length; /* batchLength: size of the batch minus KC_BATCH_LOG_OVERHEAD */
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t count;
} kc_batch_hdr_t;

/* baseOffset + lastOffsetDelta, saturated at INT64_MIN / INT64_MAX for a header that has not
 * been validated (a validated one never needs it: its last offset is below INT64_MAX). */
static inline int64_t kc_batch_last_offset(const kc_batch_hdr_t *h)
{
    if (h->last_offset_delta > 0 && h->base_offset > INT64_MAX - h->last_offset_delta)
        return INT64_MAX;
    if (h->last_offset_delta < 0 && h->base_offset < INT64_MIN - h->last_offset_delta)
        return INT64_MIN;
    return h->base_offset + h->last_offset_delta;
}
static inline size_t kc_batch_size(const kc_batch_hdr_t *h)
{
    return (size_t)h->length + KC_BATCH_LOG_OVERHEAD;
}
static inline int kc_batch_codec(const kc_batch_hdr_t *h)
{
    return h->attributes & KC_BATCH_ATTR_CODEC_MASK;
}
static inline bool kc_batch_is_control(const kc_batch_hdr_t *h)
{
    return (h->attributes & KC_BATCH_ATTR_CONTROL) != 0;
}
static inline bool kc_batch_is_transactional(const kc_batch_hdr_t *h)
{
    return (h->attributes & KC_BATCH_ATTR_TRANSACTIONAL) != 0;
}
/* "none", "gzip", "snappy", "lz4", "zstd", or "unknown". */
const char *kc_batch_codec_name(int codec);

/* Scratch for encoding and decoding: zstd contexts and buffers, reused from batch to batch.
 * One per thread (a kc_plog_t owns one). */
typedef struct kc_batch_ctx_s kc_batch_ctx_t;

/* A context that refuses to decompress a batch's records to more than `max_records_bytes`
 * bytes (0 = KC_BATCH_DEFAULT_MAX_RECORDS_BYTES), a guard against corrupt or hostile sizes.
 * NULL when out of memory. */
#define KC_BATCH_DEFAULT_MAX_RECORDS_BYTES (256u << 20)
kc_batch_ctx_t *kc_batch_ctx_new(size_t max_records_bytes);
void kc_batch_ctx_free(kc_batch_ctx_t *c);

/* How to write a batch. kc_batch_spec_init sets what kcoord writes: no compression, leader
 * epoch 0, create-time timestamps, no producer (-1, -1, -1), not transactional, not control. */
typedef struct kc_batch_spec_s {
    int64_t base_offset;
    int32_t partition_leader_epoch;
    int codec;              /* KC_LOG_CODEC_NONE or KC_LOG_CODEC_ZSTD */
    int zstd_level;         /* 0 = zstd's default */
    int16_t extra_attrs;    /* OR-ed into attributes: KC_BATCH_ATTR_TRANSACTIONAL, _CONTROL */
    int64_t producer_id;    /* -1 */
    int16_t producer_epoch; /* -1 */
    int32_t base_sequence;  /* -1 */
    /* The timestamp of records whose timestamp_ms is negative; -1 = such records are refused. */
    int64_t default_timestamp_ms;
} kc_batch_spec_t;

void kc_batch_spec_init(kc_batch_spec_t *s, int64_t base_offset);

/* Append to `w` one batch of recs[0..n): record i gets offset base_offset + i and timestamp
 * recs[i].timestamp_ms (or spec->default_timestamp_ms when that is negative); baseTimestamp is the
 * first record's, maxTimestamp the largest; records carry no headers. Returns 0, -EINVAL (n == 0, a
 * negative timestamp without a default, or an unsupported codec), KC_LOG_ETOOBIG (more than
 * INT32_MAX records, a key or value longer than INT32_MAX, or a batch longer than batchLength can
 * say), -ENOMEM or KC_LOG_ECOMPRESS. On failure w->len is back to where it was. */
int kc_batch_encode(kc_batch_ctx_t *c, kc_writer_t *w, const kc_batch_spec_t *spec,
                    const kc_log_record_t *recs, size_t n);

/* Decode the 61-byte header at `p` (no validation). */
void kc_batch_hdr_parse(const uint8_t *p, kc_batch_hdr_t *h);

/* Validate the complete batch of `len` bytes at `p`: at least a header, batchLength ==
 * len - 12, magic 2, CRC-32C right, lastOffsetDelta >= 0, 0 <= recordCount <=
 * lastOffsetDelta + 1, base offset >= 0 and last offset < INT64_MAX. Fills *h (also on failure,
 * when len allows). Returns 0 or KC_LOG_ECORRUPT with a short reason in `why` (when whylen > 0). */
int kc_batch_validate(const uint8_t *p, size_t len, kc_batch_hdr_t *h, char *why, size_t whylen);

/* A cursor over the records of one batch. */
typedef struct kc_batch_iter_s {
    kc_batch_hdr_t hdr;
    kc_reader_t r;       /* over the (decompressed) records section */
    int32_t left;        /* records not yet returned */
    int64_t last_offset; /* offset of the last record returned, -1 before the first */
    char why[160];       /* reason of the last failure */
} kc_batch_iter_t;

/* Validate the batch at p (as kc_batch_validate) and prepare to read its records, inflating a
 * zstd records section into the context's buffer. Record views point into `p` or into that
 * buffer: they stay valid until the next kc_batch_iter_init with the same context, or until
 * `p` goes. Returns 0, KC_LOG_ECORRUPT, KC_LOG_EUNSUPPORTED (gzip, snappy, lz4, or an unknown
 * codec), KC_LOG_ECOMPRESS (the zstd frame is damaged or inflates past the context's limit) or
 * -ENOMEM, with it->why set. */
int kc_batch_iter_init(kc_batch_iter_t *it, kc_batch_ctx_t *c, const uint8_t *p, size_t len);

/* The next record into *rec. Returns 1, 0 after the last (having checked that no bytes are
 * left over), or KC_LOG_ECORRUPT with it->why set: a length or count that does not add up, an
 * offset delta outside [0, lastOffsetDelta] or not increasing. Header entries are skipped. */
int kc_batch_iter_next(kc_batch_iter_t *it, kc_log_record_t *rec);

#endif
