/* fuzz_log_batch.c - libFuzzer target: one RecordBatch through the log's batch reader.
 *
 * Input format. The input is one batch as it would sit in a segment file (Kafka RecordBatch
 * v2: baseOffset, batchLength, ..., records), so a batch cut out of any segment is a valid
 * input as it is. It is run twice:
 *   1. as it is, through kc_batch_validate, then kc_batch_iter_init and kc_batch_iter_next to
 *      the end when it validates;
 *   2. when it holds at least a header, on a copy whose batchLength is set to the input's size
 *      and whose CRC-32C is computed afresh, so that the fuzzer gets past the checksum and
 *      reaches the record decoder (varints, lengths, headers, zstd frames).
 *
 * Checks, each a crash (abort) when broken:
 *   - a batch that validates and whose records all decode gives strictly increasing offsets
 *     inside [baseOffset, baseOffset + lastOffsetDelta] and recordCount records;
 *   - those records, encoded again with kc_batch_encode (no compression, then zstd) at the
 *     same base offset, validate and decode to the same keys, values (null stays null) and
 *     timestamps.
 * Sanitizers catch any read past the exact-size copies.
 *
 * Memory: decoding goes through a context limited to MAX_INFLATE bytes of inflated records, so
 * a zstd frame that claims gigabytes is refused (KC_LOG_ECOMPRESS) instead of allocated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "log/batch.h"
#include "log/crc32c.h"
#include "log/log.h"
#include "proto/wire.h"

#define MAX_INFLATE  ((size_t)8 << 20)
#define MAX_RECORDS  4096 /* records checked by the round trip */
#define TS_UNCHECKED INT64_MIN

static _Noreturn void fail(const char *what, long long a, long long b)
{
    fprintf(stderr, "fuzz_log_batch: %s (%lld vs %lld)\n", what, a, b);
    abort();
}

typedef struct decoded_s {
    kc_log_record_t recs[MAX_RECORDS];
    size_t n;
    bool too_many;
} decoded_t;

/* Decode every record of the batch at p. Returns 0 when all decode (recs filled as far as they
 * fit), else the error. Record views stay valid until the context decodes another batch. */
static int decode(kc_batch_ctx_t *ctx, const uint8_t *p, size_t len, decoded_t *d,
                  kc_batch_hdr_t *h)
{
    char why[160];
    d->n = 0;
    d->too_many = false;
    int rc = kc_batch_validate(p, len, h, why, sizeof(why));
    if (rc != 0)
        return rc;
    kc_batch_iter_t it;
    rc = kc_batch_iter_init(&it, ctx, p, len);
    if (rc != 0)
        return rc;
    kc_log_record_t r;
    int64_t prev = -1;
    int64_t count = 0;
    while ((rc = kc_batch_iter_next(&it, &r)) == 1) {
        if (r.offset <= prev || r.offset < h->base_offset || r.offset > kc_batch_last_offset(h))
            fail("record offset out of order or outside the batch", r.offset, prev);
        if ((r.key == NULL && r.key_len != 0) || (r.value == NULL && r.value_len != 0))
            fail("a null key or value with a length", (long long)r.key_len, (long long)r.value_len);
        if (r.key_len > len || r.value_len > len + MAX_INFLATE)
            fail("a key or value longer than the batch", (long long)r.key_len, (long long)len);
        prev = r.offset;
        count++;
        if (d->n < MAX_RECORDS)
            d->recs[d->n++] = r;
        else
            d->too_many = true;
    }
    if (rc == 0 && count != h->count)
        fail("records decoded differ from recordCount", count, h->count);
    return rc;
}

static bool same_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    if ((a == NULL) != (b == NULL) || an != bn)
        return false;
    return an == 0 || memcmp(a, b, an) == 0;
}

/* Encode d's records again and check they come back the same. */
static void roundtrip(const decoded_t *d, const kc_batch_hdr_t *h, int codec)
{
    if (d->n == 0 || d->too_many)
        return;
    static kc_batch_ctx_t *ctx2;
    static decoded_t again;
    if (ctx2 == NULL && (ctx2 = kc_batch_ctx_new(MAX_INFLATE)) == NULL)
        abort();
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, h->base_offset);
    spec.codec = codec;
    spec.default_timestamp_ms = 0; /* records with a negative timestamp get 0 */
    kc_writer_t w;
    kc_wr_init(&w);
    int rc = kc_batch_encode(ctx2, &w, &spec, d->recs, d->n);
    if (rc == KC_LOG_ETOOBIG || rc == -12 /* -ENOMEM */) {
        kc_wr_free(&w);
        return;
    }
    if (rc != 0)
        fail("records that decoded do not encode again", rc, 0);
    uint8_t *copy = malloc(w.len);
    if (copy == NULL)
        abort();
    memcpy(copy, w.buf, w.len);
    kc_batch_hdr_t h2;
    rc = decode(ctx2, copy, w.len, &again, &h2);
    if (rc != 0)
        fail("a batch kcoord encoded does not decode", rc, 0);
    if (again.n != d->n)
        fail("record count changed in the round trip", (long long)again.n, (long long)d->n);
    for (size_t i = 0; i < d->n; i++) {
        const kc_log_record_t *a = &d->recs[i], *b = &again.recs[i];
        if (!same_bytes(a->key, a->key_len, b->key, b->key_len))
            fail("key changed in the round trip", (long long)i, 0);
        if (!same_bytes(a->value, a->value_len, b->value, b->value_len))
            fail("value changed in the round trip", (long long)i, 0);
        int64_t want_ts = a->timestamp_ms < 0 ? 0 : a->timestamp_ms;
        if (b->timestamp_ms != want_ts)
            fail("timestamp changed in the round trip", b->timestamp_ms, want_ts);
        if (b->offset != h->base_offset + (int64_t)i)
            fail("offset of a re-encoded record", b->offset, h->base_offset + (int64_t)i);
    }
    free(copy);
    kc_wr_free(&w);
}

static void run(const uint8_t *p, size_t len)
{
    static kc_batch_ctx_t *ctx;
    static decoded_t d;
    if (ctx == NULL && (ctx = kc_batch_ctx_new(MAX_INFLATE)) == NULL)
        abort();
    kc_batch_hdr_t h;
    if (decode(ctx, p, len, &d, &h) != 0)
        return;
    roundtrip(&d, &h, KC_LOG_CODEC_NONE);
    roundtrip(&d, &h, KC_LOG_CODEC_ZSTD);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = calloc(1, size ? size : 1);
    if (copy == NULL)
        return 0;
    if (size > 0)
        memcpy(copy, data, size);
    run(copy, size);
    if (size >= KC_BATCH_HEADER_SIZE && size - KC_BATCH_LOG_OVERHEAD <= INT32_MAX) {
        memcpy(copy, data, size);
        put_be32(copy + 8, (uint32_t)(size - KC_BATCH_LOG_OVERHEAD));
        put_be32(copy + KC_BATCH_CRC_OFFSET,
                 kc_crc32c(0, copy + KC_BATCH_CRC_START, size - KC_BATCH_CRC_START));
        run(copy, size);
    }
    free(copy);
    return 0;
}
