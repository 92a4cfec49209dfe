/* test_log_batch.c - CRC-32C and Kafka RecordBatch v2 (src/log/crc32c.c, src/log/batch.c).
 *
 * CRC: the RFC 3720 vectors and "123456789", the CPU and table paths agreeing, and extension.
 * Batches: golden bytes of a two-record batch worked out by hand from Kafka's format; zstd round
 * trips (one-shot frames, frames without a content size, several frames, a decompression bomb);
 * every __consumer_offsets key and value version through a batch and back (and through the dump
 * printer); and malformed batches - every prefix, every bit flip, and mangled records with a
 * fixed-up CRC - which must be rejected without reading out of bounds (run under SANITIZE=1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <zstd.h>

#include "log/batch.h"
#include "log/crc32c.h"
#include "log/log.h"
#include "proto/gen_api.h"

void kc_fill_sample(const kc_codec_t *c, void *m, kc_arena_t *a, int16_t v, uint32_t seed);

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

/* ---- CRC-32C ---------------------------------------------------------------------------- */

static void test_crc_vectors(void **state)
{
    (void)state;
    uint8_t buf[48];
    assert_int_equal(kc_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(kc_crc32c_sw(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(kc_crc32c(0, NULL, 0), 0);
    /* RFC 3720 appendix B.4 */
    memset(buf, 0, 32);
    assert_int_equal(kc_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    assert_int_equal(kc_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(kc_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(kc_crc32c(0, buf, 32), 0x113FDB5Cu);
    static const uint8_t pdu[48] = {0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    0, 0, 0, 0,
                                    0x14, 0,    0, 0, 0, 0, 4, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
                                    0x28, 0,    0, 0, 0, 0, 0, 0, 2, 0, 0, 0,    0, 0, 0, 0};
    assert_int_equal(kc_crc32c(0, pdu, sizeof(pdu)), 0xD9963A56u);
    assert_int_equal(kc_crc32c_sw(0, pdu, sizeof(pdu)), 0xD9963A56u);
}

static void test_crc_paths_agree(void **state)
{
    (void)state;
    print_message("crc32c uses the %s path\n", kc_crc32c_hw() ? "SSE4.2" : "table");
    uint8_t buf[1100];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)rnd();
    for (size_t off = 0; off < 9; off++) {
        for (size_t n = 0; n + off <= sizeof(buf); n += 1 + n / 7) {
            uint32_t a = kc_crc32c(0, buf + off, n);
            assert_int_equal(a, kc_crc32c_sw(0, buf + off, n));
            /* Extension: any split gives the same CRC. */
            size_t cut = n / 3;
            assert_int_equal(a, kc_crc32c(kc_crc32c(0, buf + off, cut), buf + off + cut, n - cut));
            assert_int_equal(a,
                             kc_crc32c_sw(kc_crc32c(0, buf + off, cut), buf + off + cut, n - cut));
        }
    }
}

/* ---- golden bytes ----------------------------------------------------------------------- */

/* Base offset 7, leader epoch 0, no compression, two records:
 *   offset 7: key "k1", value "v", timestamp 1000
 *   offset 8: key "k2", null value (a tombstone), timestamp 1003
 * Varints are zigzag: 0 -> 00, 1 -> 02, 2 -> 04, 3 -> 06, 8 -> 10, 9 -> 12, -1 -> 01. */
static const uint8_t golden[80] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* baseOffset 7 */
    0x00, 0x00, 0x00, 0x44,                         /* batchLength 68 = 80 - 12 */
    0x00, 0x00, 0x00, 0x00,                         /* partitionLeaderEpoch 0 */
    0x02,                                           /* magic 2 */
    0x33, 0x0b, 0x3c, 0xdd,                         /* crc: CRC-32C of bytes 21..79 */
    0x00, 0x00,                                     /* attributes: none, CreateTime */
    0x00, 0x00, 0x00, 0x01,                         /* lastOffsetDelta 1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* baseTimestamp 1000 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xeb, /* maxTimestamp 1003 */
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* producerId -1 */
    0xff, 0xff,                                     /* producerEpoch -1 */
    0xff, 0xff, 0xff, 0xff,                         /* baseSequence -1 */
    0x00, 0x00, 0x00, 0x02,                         /* records 2 */
    /* record 0: length 9, attributes 0, timestampDelta 0, offsetDelta 0,
     *           keyLength 2 "k1", valueLength 1 "v", headers 0 */
    0x12, 0x00, 0x00, 0x00, 0x04, 0x6b, 0x31, 0x02, 0x76, 0x00,
    /* record 1: length 8, attributes 0, timestampDelta 3, offsetDelta 1,
     *           keyLength 2 "k2", valueLength -1 (null), headers 0 */
    0x10, 0x00, 0x06, 0x02, 0x04, 0x6b, 0x32, 0x01, 0x00};

static void test_golden_batch(void **state)
{
    (void)state;
    /* The CRC in the golden bytes (computed independently) is what kc_crc32c says. */
    assert_int_equal(kc_crc32c(0, golden + 21, sizeof(golden) - 21), 0x330b3cddu);

    kc_log_record_t recs[2] = {
        {.timestamp_ms = 1000,
         .key = (const uint8_t *)"k1",
         .key_len = 2,
         .value = (const uint8_t *)"v",
         .value_len = 1},
        {.timestamp_ms = 1003, .key = (const uint8_t *)"k2", .key_len = 2, .value = NULL},
    };
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 7);
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_raw(&w, "xyz", 3); /* encoding appends after what the writer holds */
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, recs, 2), 0);
    assert_int_equal(w.len, 3 + sizeof(golden));
    assert_memory_equal(w.buf + 3, golden, sizeof(golden));
    kc_wr_free(&w);

    kc_batch_hdr_t h;
    char why[128];
    assert_int_equal(kc_batch_validate(golden, sizeof(golden), &h, why, sizeof(why)), 0);
    assert_int_equal(h.base_offset, 7);
    assert_int_equal(h.length, 68);
    assert_int_equal(h.magic, 2);
    assert_int_equal(h.crc, 0x330b3cddu);
    assert_int_equal(h.last_offset_delta, 1);
    assert_int_equal(kc_batch_last_offset(&h), 8);
    assert_int_equal(h.base_timestamp, 1000);
    assert_int_equal(h.max_timestamp, 1003);
    assert_int_equal(h.producer_id, -1);
    assert_int_equal(h.producer_epoch, -1);
    assert_int_equal(h.base_sequence, -1);
    assert_int_equal(h.count, 2);
    assert_int_equal(kc_batch_codec(&h), KC_LOG_CODEC_NONE);

    kc_batch_iter_t it;
    kc_log_record_t r;
    assert_int_equal(kc_batch_iter_init(&it, NULL, golden, sizeof(golden)), 0);
    assert_int_equal(kc_batch_iter_next(&it, &r), 1);
    assert_int_equal(r.offset, 7);
    assert_int_equal(r.timestamp_ms, 1000);
    assert_int_equal(r.key_len, 2);
    assert_memory_equal(r.key, "k1", 2);
    assert_non_null(r.value);
    assert_int_equal(r.value_len, 1);
    assert_memory_equal(r.value, "v", 1);
    assert_int_equal(kc_batch_iter_next(&it, &r), 1);
    assert_int_equal(r.offset, 8);
    assert_int_equal(r.timestamp_ms, 1003);
    assert_memory_equal(r.key, "k2", 2);
    assert_null(r.value);
    assert_int_equal(kc_batch_iter_next(&it, &r), 0);
}

static void test_encode_errors(void **state)
{
    (void)state;
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 0);
    kc_writer_t w;
    kc_wr_init(&w);
    kc_log_record_t r = {.timestamp_ms = -1, .key = (const uint8_t *)"k", .key_len = 1};
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, &r, 0), -EINVAL);
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, &r, 1), -EINVAL); /* no timestamp */
    assert_int_equal(w.len, 0);
    assert_int_equal(w.err, 0);
    spec.default_timestamp_ms = 55;
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, &r, 1), 0);
    kc_batch_hdr_t h;
    assert_int_equal(kc_batch_validate(w.buf, w.len, &h, NULL, 0), 0);
    assert_int_equal(h.base_timestamp, 55);
    spec.codec = KC_LOG_CODEC_GZIP;
    size_t before = w.len;
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, &r, 1), -EINVAL);
    assert_int_equal(w.len, before);
    kc_wr_free(&w);
}

/* A batch whose last offset is INT64_MAX is refused (the offset after it must exist), and an
 * unvalidated header's last offset saturates instead of overflowing (the fuzzer's finding). */
static void test_offset_limit(void **state)
{
    (void)state;
    kc_log_record_t r = {.timestamp_ms = 5, .key = (const uint8_t *)"k", .key_len = 1};
    for (int d = 0; d < 3; d++) {
        kc_batch_spec_t spec;
        kc_batch_spec_init(&spec, INT64_MAX - 2 + d); /* last offset MAX-2, MAX-1, MAX */
        kc_writer_t w;
        kc_wr_init(&w);
        assert_int_equal(kc_batch_encode(NULL, &w, &spec, &r, 1), 0);
        kc_batch_hdr_t h;
        char why[160];
        int rc = kc_batch_validate(w.buf, w.len, &h, why, sizeof(why));
        assert_int_equal(rc, d < 2 ? 0 : KC_LOG_ECORRUPT);
        kc_wr_free(&w);
    }
    kc_batch_hdr_t h = {.base_offset = INT64_MAX - 1, .last_offset_delta = 5};
    assert_true(kc_batch_last_offset(&h) == INT64_MAX);
    h = (kc_batch_hdr_t){.base_offset = INT64_MIN + 1, .last_offset_delta = -5};
    assert_true(kc_batch_last_offset(&h) == INT64_MIN);
}

/* ---- zstd ------------------------------------------------------------------------------- */

/* n records with keys "key-i" and values of varying, compressible content. */
static kc_log_record_t *make_records(size_t n, uint8_t **store)
{
    kc_log_record_t *r = calloc(n, sizeof(*r));
    *store = malloc(n * 64);
    for (size_t i = 0; i < n; i++) {
        uint8_t *k = *store + i * 64, *v = k + 16;
        int kl = snprintf((char *)k, 16, "key-%zu", i);
        int vl = snprintf((char *)v, 48, "value %zu of the batch, padded padded", i * 7);
        r[i].timestamp_ms = 1700000000000 + (int64_t)i;
        r[i].key = k;
        r[i].key_len = (size_t)kl;
        if (i % 5 != 4) {
            r[i].value = v;
            r[i].value_len = (size_t)vl;
        }
    }
    return r;
}

static void expect_records(const uint8_t *b, size_t len, kc_batch_ctx_t *c, int64_t base,
                           const kc_log_record_t *want, size_t n)
{
    kc_batch_iter_t it;
    assert_int_equal(kc_batch_iter_init(&it, c, b, len), 0);
    kc_log_record_t r;
    for (size_t i = 0; i < n; i++) {
        int rc = kc_batch_iter_next(&it, &r);
        if (rc != 1)
            fail_msg("record %zu: %d (%s)", i, rc, it.why);
        assert_int_equal(r.offset, base + (int64_t)i);
        assert_int_equal(r.timestamp_ms, want[i].timestamp_ms);
        assert_int_equal(r.key_len, want[i].key_len);
        assert_memory_equal(r.key, want[i].key, r.key_len);
        if (want[i].value == NULL) {
            assert_null(r.value);
        } else {
            assert_non_null(r.value);
            assert_int_equal(r.value_len, want[i].value_len);
            assert_memory_equal(r.value, want[i].value, r.value_len);
        }
    }
    assert_int_equal(kc_batch_iter_next(&it, &r), 0);
}

/* Re-wrap the records section of an uncompressed batch with a different body and codec. */
static size_t rewrap(const uint8_t *plain, size_t plain_len, const uint8_t *body, size_t blen,
                     int codec, uint8_t *out)
{
    memcpy(out, plain, KC_BATCH_HEADER_SIZE);
    memcpy(out + KC_BATCH_HEADER_SIZE, body, blen);
    size_t total = KC_BATCH_HEADER_SIZE + blen;
    uint32_t len = (uint32_t)(total - 12);
    out[8] = (uint8_t)(len >> 24);
    out[9] = (uint8_t)(len >> 16);
    out[10] = (uint8_t)(len >> 8);
    out[11] = (uint8_t)len;
    out[21] = 0;
    out[22] = (uint8_t)codec;
    uint32_t crc = kc_crc32c(0, out + 21, total - 21);
    out[17] = (uint8_t)(crc >> 24);
    out[18] = (uint8_t)(crc >> 16);
    out[19] = (uint8_t)(crc >> 8);
    out[20] = (uint8_t)crc;
    (void)plain_len;
    return total;
}

static void test_zstd_round_trip(void **state)
{
    (void)state;
    enum { N = 300 };
    uint8_t *store;
    kc_log_record_t *recs = make_records(N, &store);
    kc_batch_ctx_t *c = kc_batch_ctx_new(0);
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 1000);
    kc_writer_t plain, z;
    kc_wr_init(&plain);
    kc_wr_init(&z);
    assert_int_equal(kc_batch_encode(c, &plain, &spec, recs, N), 0);
    spec.codec = KC_LOG_CODEC_ZSTD;
    assert_int_equal(kc_batch_encode(c, &z, &spec, recs, N), 0);
    kc_batch_hdr_t h;
    assert_int_equal(kc_batch_validate(z.buf, z.len, &h, NULL, 0), 0);
    assert_int_equal(kc_batch_codec(&h), KC_LOG_CODEC_ZSTD);
    assert_int_equal(h.attributes, 4);
    assert_true(z.len < plain.len / 3);
    print_message("%d records: %zu bytes plain, %zu with zstd\n", N, plain.len, z.len);
    expect_records(z.buf, z.len, c, 1000, recs, N);
    /* Without a context the iterator cannot inflate. */
    kc_batch_iter_t it;
    assert_int_equal(kc_batch_iter_init(&it, NULL, z.buf, z.len), -EINVAL);

    /* A frame that does not state its size (as streaming writers make), and two frames one
     * after the other: both are read with the streaming decoder. */
    const uint8_t *body = plain.buf + KC_BATCH_HEADER_SIZE;
    size_t blen = plain.len - KC_BATCH_HEADER_SIZE;
    size_t cap = ZSTD_compressBound(blen) * 2 + 64;
    uint8_t *frames = malloc(cap), *batch = malloc(cap + KC_BATCH_HEADER_SIZE);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
    ZSTD_inBuffer in = {body, blen, 0};
    ZSTD_outBuffer out = {frames, cap, 0};
    assert_int_equal(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0);
    assert_true(ZSTD_getFrameContentSize(frames, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
    size_t n = rewrap(plain.buf, plain.len, frames, out.pos, KC_LOG_CODEC_ZSTD, batch);
    expect_records(batch, n, c, 1000, recs, N);

    size_t half = blen / 2;
    size_t f1 = ZSTD_compress(frames, cap, body, half, 1);
    assert_false(ZSTD_isError(f1));
    size_t f2 = ZSTD_compress(frames + f1, cap - f1, body + half, blen - half, 1);
    assert_false(ZSTD_isError(f2));
    n = rewrap(plain.buf, plain.len, frames, f1 + f2, KC_LOG_CODEC_ZSTD, batch);
    expect_records(batch, n, c, 1000, recs, N);

    /* A truncated frame (with a CRC made to match) is refused. */
    n = rewrap(plain.buf, plain.len, frames, f1 - 3, KC_LOG_CODEC_ZSTD, batch);
    assert_int_equal(kc_batch_iter_init(&it, c, batch, n), KC_LOG_ECOMPRESS);
    /* Garbage instead of a frame. */
    n = rewrap(plain.buf, plain.len, (const uint8_t *)"not zstd at all", 15, KC_LOG_CODEC_ZSTD,
               batch);
    assert_int_equal(kc_batch_iter_init(&it, c, batch, n), KC_LOG_ECOMPRESS);
    /* Other codecs are reported as unsupported, not as corruption. */
    for (int codec = 1; codec <= 3; codec++) {
        n = rewrap(plain.buf, plain.len, body, blen, codec, batch);
        assert_int_equal(kc_batch_iter_init(&it, c, batch, n), KC_LOG_EUNSUPPORTED);
    }
    n = rewrap(plain.buf, plain.len, body, blen, 6, batch);
    assert_int_equal(kc_batch_iter_init(&it, c, batch, n), KC_LOG_EUNSUPPORTED);

    /* A decompression bomb: a context limited to 1 KiB refuses both kinds of frame. */
    kc_batch_ctx_t *small = kc_batch_ctx_new(1024);
    assert_int_equal(kc_batch_iter_init(&it, small, z.buf, z.len), KC_LOG_ECOMPRESS);
    n = rewrap(plain.buf, plain.len, frames, f1 + f2, KC_LOG_CODEC_ZSTD, batch);
    assert_int_equal(kc_batch_iter_init(&it, small, batch, n), KC_LOG_ECOMPRESS);
    kc_batch_ctx_free(small);

    ZSTD_freeCCtx(cc);
    free(frames);
    free(batch);
    kc_wr_free(&plain);
    kc_wr_free(&z);
    kc_batch_ctx_free(c);
    free(recs);
    free(store);
}

/* ---- every record schema version through a batch ---------------------------------------- */

static const kc_data_info_t *find_data(const char *name)
{
    for (size_t i = 0; i < kc_data_count; i++)
        if (strcmp(kc_data_table[i].name, name) == 0)
            return &kc_data_table[i];
    return NULL;
}

/* Encode int16 version + the message into w. */
static void encode_prefixed(kc_writer_t *w, const kc_codec_t *c, int16_t v, const void *m)
{
    kc_wr_i16(w, v);
    c->encode(w, v, m);
    assert_int_equal(w->err, 0);
}

static void test_record_schemas_through_batches(void **state)
{
    (void)state;
    kc_batch_ctx_t *ctx = kc_batch_ctx_new(0);
    char tmpl[] = "/tmp/kc_log_batch_XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    FILE *seg = fdopen(fd, "wb");
    int64_t next = 0;
    size_t pairs = 0;
    for (size_t i = 0; i < kc_data_count; i++) {
        const kc_data_info_t *kd = &kc_data_table[i];
        if (kd->record_key < 0)
            continue;
        char vname[96];
        snprintf(vname, sizeof(vname), "%.*sValue", (int)(strlen(kd->name) - 3), kd->name);
        const kc_data_info_t *vd = find_data(vname);
        assert_non_null(vd);
        for (int16_t kv = kd->min_version; kv <= kd->max_version; kv++) {
            for (int16_t vv = vd->min_version; vv <= vd->max_version; vv++) {
                for (uint32_t seed = 1; seed <= 3; seed++) {
                    kc_arena_t a;
                    kc_arena_init(&a);
                    void *km = kc_arena_alloc(&a, kd->codec.struct_size);
                    void *vm = kc_arena_alloc(&a, vd->codec.struct_size);
                    kc_fill_sample(&kd->codec, km, &a, kv, seed);
                    kc_fill_sample(&vd->codec, vm, &a, vv, seed + 100);
                    kc_writer_t kw, vw, bw;
                    kc_wr_init(&kw);
                    kc_wr_init(&vw);
                    kc_wr_init(&bw);
                    encode_prefixed(&kw, &kd->codec, kv, km); /* key version = record type */
                    encode_prefixed(&vw, &vd->codec, vv, vm);
                    kc_log_record_t recs[2] = {
                        {.timestamp_ms = 5,
                         .key = kw.buf,
                         .key_len = kw.len,
                         .value = vw.buf,
                         .value_len = vw.len},
                        {.timestamp_ms = 6, .key = kw.buf, .key_len = kw.len}, /* tombstone */
                    };
                    kc_batch_spec_t spec;
                    kc_batch_spec_init(&spec, next);
                    spec.codec = seed == 2 ? KC_LOG_CODEC_ZSTD : KC_LOG_CODEC_NONE;
                    assert_int_equal(kc_batch_encode(ctx, &bw, &spec, recs, 2), 0);
                    assert_int_equal(fwrite(bw.buf, 1, bw.len, seg), bw.len);

                    kc_batch_iter_t it;
                    kc_log_record_t r;
                    assert_int_equal(kc_batch_iter_init(&it, ctx, bw.buf, bw.len), 0);
                    assert_int_equal(kc_batch_iter_next(&it, &r), 1);
                    assert_int_equal(r.offset, next);
                    assert_int_equal(r.key_len, kw.len);
                    assert_memory_equal(r.key, kw.buf, kw.len);
                    assert_int_equal(r.value_len, vw.len);
                    assert_memory_equal(r.value, vw.buf, vw.len);
                    /* The value decodes at its version and encodes to the same bytes. */
                    kc_reader_t rd;
                    kc_rd_init(&rd, r.value, r.value_len);
                    assert_int_equal(kc_rd_i16(&rd), vv);
                    void *back = kc_arena_alloc(&a, vd->codec.struct_size);
                    assert_int_equal(vd->codec.decode(&rd, &a, vv, back), 0);
                    assert_int_equal(kc_rd_remaining(&rd), 0);
                    kc_writer_t again;
                    kc_wr_init(&again);
                    encode_prefixed(&again, &vd->codec, vv, back);
                    assert_int_equal(again.len, vw.len);
                    assert_memory_equal(again.buf, vw.buf, vw.len);
                    kc_wr_free(&again);
                    assert_int_equal(kc_batch_iter_next(&it, &r), 1);
                    assert_null(r.value);
                    assert_int_equal(kc_batch_iter_next(&it, &r), 0);

                    next += 2;
                    pairs++;
                    kc_wr_free(&kw);
                    kc_wr_free(&vw);
                    kc_wr_free(&bw);
                    kc_arena_free(&a);
                }
            }
        }
    }
    assert_int_equal(fclose(seg), 0);
    print_message("%zu key/value version pairs through batches\n", pairs);
    assert_true(pairs >= 3 * (2 * 5 + 5 + 6));

    /* The dump tool decodes every one of them: no "error", one line per batch and record. */
    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_dump(out, tmpl), 0);
    fclose(out);
    assert_null(strstr(text, "\"error\""));
    assert_null(strstr(text, "\"raw\""));
    size_t lines = 0;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, pairs * 3);
    assert_non_null(strstr(text, "\"key\":{\"type\":\"1\",\"data\":{\"group\":"));
    assert_non_null(strstr(text, "\"payload\":{\"version\":\"3\",\"data\":{\"offset\":"));
    assert_non_null(strstr(text, "\"payload\":null"));
    assert_non_null(strstr(text, "\"compresscodec\":\"zstd\""));
    free(text);
    unlink(tmpl);
    kc_batch_ctx_free(ctx);
}

/* A GroupMetadataValue of protocol type "consumer": members' subscription and assignment are
 * decoded in the dump, as Kafka's tool does. */
static void test_dump_consumer_group(void **state)
{
    (void)state;
    kc_writer_t sub, asg, key, val, b;
    kc_wr_init(&sub);
    kc_wr_init(&asg);
    kc_wr_init(&key);
    kc_wr_init(&val);
    kc_wr_init(&b);
    kc_str_t topics[1] = {KC_STR_LIT("orders")};
    kc_consumer_protocol_subscription_t s;
    kc_consumer_protocol_subscription_init(&s);
    s.topics.v = topics;
    s.topics.n = 1;
    kc_wr_i16(&sub, 0);
    kc_consumer_protocol_subscription_encode(&sub, 0, &s);
    int32_t parts[2] = {0, 2};
    kc_consumer_protocol_assignment_topic_partition_t tp = {KC_STR_LIT("orders"), {parts, 2}};
    kc_consumer_protocol_assignment_t as;
    kc_consumer_protocol_assignment_init(&as);
    as.assigned_partitions.v = &tp;
    as.assigned_partitions.n = 1;
    kc_wr_i16(&asg, 0);
    kc_consumer_protocol_assignment_encode(&asg, 0, &as);

    kc_group_metadata_key_t k = {KC_STR_LIT("g\"1")};
    kc_wr_i16(&key, 2);
    kc_group_metadata_key_encode(&key, 2, &k);
    kc_member_metadata_t mm = {.member_id = KC_STR_LIT("m-1"),
                               .group_instance_id = KC_STR_NULL,
                               .client_id = KC_STR_LIT("c\xff"),
                               .client_host = KC_STR_LIT("/127.0.0.1"),
                               .rebalance_timeout = 300000,
                               .session_timeout = 45000,
                               .subscription = {sub.buf, (int32_t)sub.len},
                               .assignment = {asg.buf, (int32_t)asg.len}};
    kc_group_metadata_value_t g;
    kc_group_metadata_value_init(&g);
    g.protocol_type = KC_STR_LIT("consumer");
    g.generation = 4;
    g.protocol = KC_STR_LIT("range");
    g.leader = KC_STR_LIT("m-1");
    g.current_state_timestamp = 1234;
    g.members.v = &mm;
    g.members.n = 1;
    kc_wr_i16(&val, 3);
    kc_group_metadata_value_encode(&val, 3, &g);
    kc_log_record_t r = {.timestamp_ms = 9,
                         .key = key.buf,
                         .key_len = key.len,
                         .value = val.buf,
                         .value_len = val.len};
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 0);
    assert_int_equal(kc_batch_encode(NULL, &b, &spec, &r, 1), 0);
    /* Unknown record type 9 (a share group record): printed raw, not an error. */
    static const uint8_t k9[] = {0, 9, 1, 2, 3};
    kc_log_record_t r9 = {
        .timestamp_ms = 9, .key = k9, .key_len = 5, .value = k9 + 2, .value_len = 3};
    kc_batch_spec_init(&spec, 1);
    assert_int_equal(kc_batch_encode(NULL, &b, &spec, &r9, 1), 0);

    char tmpl[] = "/tmp/kc_log_dump_XXXXXX";
    int fd = mkstemp(tmpl);
    assert_int_equal(write(fd, b.buf, b.len), (ssize_t)b.len);
    close(fd);
    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_dump(out, tmpl), 0);
    fclose(out);
    assert_non_null(strstr(
        text, "\"key\":{\"type\":\"2\",\"data\":{\"group\":\"g\\\"1\"}},\"payload\":{\"version\":"
              "\"3\",\"data\":{\"protocolType\":\"consumer\",\"generation\":4,\"protocol\":"
              "\"range\",\"leader\":\"m-1\",\"currentStateTimestamp\":1234,\"members\":[{"
              "\"memberId\":\"m-1\",\"groupInstanceId\":null,\"clientId\":\"c\\ufffd\","
              "\"clientHost\":\"/127.0.0.1\",\"rebalanceTimeout\":300000,\"sessionTimeout\":"
              "45000,\"subscription\":{\"topics\":[\"orders\"],\"userData\":null},"
              "\"assignment\":{\"assignedPartitions\":[{\"topic\":\"orders\",\"partitions\":[0,"
              "2]}],\"userData\":null}}]}}"));
    assert_non_null(strstr(text, "\"key\":{\"type\":\"9\",\"raw\":\"0009010203\"},\"payload\":{"
                                 "\"version\":\"258\",\"raw\":\"010203\"}"));
    free(text);
    unlink(tmpl);
    kc_wr_free(&sub);
    kc_wr_free(&asg);
    kc_wr_free(&key);
    kc_wr_free(&val);
    kc_wr_free(&b);
}

/* A KIP-848 member record as Kafka 4.4 writes it for a member of the consumer protocol: its
 * null classicMemberMetadata (tag 0, size 1, null marker 0) is valid and printed as Kafka's
 * DumpLogSegments prints it. */
static void test_dump_kafka_member_record(void **state)
{
    (void)state;
    static const uint8_t key[] = {0x00, 0x05, 0x00, 0x05, 'b', '-', '8', '4', '8', 0x00, 0x01, 'm'};
    static const uint8_t value[] = {0x00, 0x00, 0x00, 0x00, 0x11, 'c',  'o',  'n',  's',  'u',
                                    'm',  'e',  'r',  '-',  'b',  '-',  '8',  '4',  '8',  '-',
                                    '1',  0x0b, '/',  '1',  '2',  '7',  '.',  '0',  '.',  '0',
                                    '.',  '1',  0x02, 0x07, 'o',  'r',  'd',  'e',  'r',  's',
                                    0x01, 0x00, 0x04, 0x93, 0xe0, 0x00, 0x01, 0x00, 0x01, 0x00};
    kc_log_record_t r = {.timestamp_ms = 9,
                         .key = key,
                         .key_len = sizeof(key),
                         .value = value,
                         .value_len = sizeof(value)};
    kc_writer_t b;
    kc_wr_init(&b);
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 0);
    assert_int_equal(kc_batch_encode(NULL, &b, &spec, &r, 1), 0);
    char tmpl[] = "/tmp/kc_log_dump_XXXXXX";
    int fd = mkstemp(tmpl);
    assert_int_equal(write(fd, b.buf, b.len), (ssize_t)b.len);
    close(fd);
    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    assert_int_equal(kc_log_dump(out, tmpl), 0);
    fclose(out);
    assert_null(strstr(text, "error"));
    assert_non_null(
        strstr(text, "\"key\":{\"type\":\"5\",\"data\":{\"groupId\":\"b-848\",\"memberId\":\"m\"}},"
                     "\"payload\":{\"version\":\"0\",\"data\":{\"instanceId\":null,\"rackId\":null,"
                     "\"clientId\":\"consumer-b-848-1\",\"clientHost\":\"/127.0.0.1\","
                     "\"subscribedTopicNames\":[\"orders\"],\"subscribedTopicRegex\":\"\","
                     "\"rebalanceTimeoutMs\":300000,\"serverAssignor\":null,"
                     "\"classicMemberMetadata\":null}}"));
    free(text);
    unlink(tmpl);
    kc_wr_free(&b);
}

/* The OffsetCommit example of docs/log-format.md. */
static void test_doc_offset_commit_example(void **state)
{
    (void)state;
    kc_offset_commit_key_t k = {KC_STR_LIT("g"), KC_STR_LIT("t"), 0};
    kc_offset_commit_value_t v;
    kc_offset_commit_value_init(&v);
    v.offset = 42;
    v.leader_epoch = -1;
    v.metadata = KC_STR_LIT("");
    v.commit_timestamp = 1000;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, 1);
    kc_offset_commit_key_encode(&w, 1, &k);
    static const uint8_t key[] = {0x00, 0x01, 0x00, 0x01, 0x67, 0x00, 0x01, 0x74, 0, 0, 0, 0};
    assert_int_equal(w.len, sizeof(key));
    assert_memory_equal(w.buf, key, sizeof(key));
    w.len = 0;
    kc_wr_i16(&w, 3);
    kc_offset_commit_value_encode(&w, 3, &v);
    static const uint8_t val[] = {0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x2a, 0xff, 0xff,
                                  0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0,    0x03, 0xe8};
    assert_int_equal(w.len, sizeof(val));
    assert_memory_equal(w.buf, val, sizeof(val));
    kc_wr_free(&w);
}

/* ---- malformed batches ------------------------------------------------------------------ */

static int iterate_all(const uint8_t *p, size_t len, kc_batch_ctx_t *c)
{
    kc_batch_iter_t it;
    int rc = kc_batch_iter_init(&it, c, p, len);
    kc_log_record_t r;
    while (rc == 0 && (rc = kc_batch_iter_next(&it, &r)) == 1) {
        /* touch every byte the record claims, so ASan sees any overrun */
        volatile uint8_t sink = 0;
        for (size_t i = 0; r.key != NULL && i < r.key_len; i++)
            sink ^= r.key[i];
        for (size_t i = 0; r.value != NULL && i < r.value_len; i++)
            sink ^= r.value[i];
        (void)sink;
        rc = 0;
    }
    return rc;
}

static void set_crc(uint8_t *b, size_t len)
{
    uint32_t crc = kc_crc32c(0, b + 21, len - 21);
    b[17] = (uint8_t)(crc >> 24);
    b[18] = (uint8_t)(crc >> 16);
    b[19] = (uint8_t)(crc >> 8);
    b[20] = (uint8_t)crc;
}

static void test_malformed(void **state)
{
    (void)state;
    uint8_t b[sizeof(golden)];
    kc_batch_hdr_t h;
    char why[160];

    /* Every proper prefix fails validation. */
    for (size_t n = 0; n < sizeof(golden); n++)
        assert_int_equal(kc_batch_validate(golden, n, &h, why, sizeof(why)), KC_LOG_ECORRUPT);

    /* Every bit flip is caught, except in baseOffset and partitionLeaderEpoch, which the CRC
     * does not cover by design (the broker assigns them); a negative baseOffset (the sign bit)
     * is refused by the range check. */
    for (size_t i = 0; i < sizeof(golden); i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(b, golden, sizeof(b));
            b[i] ^= (uint8_t)(1 << bit);
            int rc = kc_batch_validate(b, sizeof(b), &h, why, sizeof(why));
            bool uncovered = (i < 8 && !(i == 0 && bit == 7)) || (i >= 12 && i < 16);
            if (uncovered && rc != 0)
                fail_msg("flip at %zu bit %d refused: %s", i, bit, why);
            if (!uncovered && rc == 0)
                fail_msg("flip at %zu bit %d accepted", i, bit);
        }
    }
    memcpy(b, golden, sizeof(b));
    b[16] = 1;
    assert_int_equal(kc_batch_validate(b, sizeof(b), &h, why, sizeof(why)), KC_LOG_ECORRUPT);
    assert_non_null(strstr(why, "magic"));
    memcpy(b, golden, sizeof(b));
    b[20] ^= 1;
    assert_int_equal(kc_batch_validate(b, sizeof(b), &h, why, sizeof(why)), KC_LOG_ECORRUPT);
    assert_non_null(strstr(why, "crc"));

    /* Record-level damage with a CRC made to match: each must be refused by the iterator. */
    struct {
        size_t at;
        uint8_t byte;
        const char *what;
    } cases[] = {
        {61, 0x7e, "record length past the end"},
        {61, 0x01, "negative record length"},
        {61, 0x10, "record length shorter than its fields"},
        {65, 0x40, "key length past the record"},
        {65, 0x03, "key length below -1"},
        {64, 0x08, "offset delta past lastOffsetDelta"},
        {64, 0x01, "negative offset delta"},
        {74, 0x00, "second record has the first's offset"},
        {70, 0x02, "a header count without headers"},
        {70, 0x01, "negative header count"},
        {60, 0x03, "more records than present"},
        {60, 0x01, "fewer records than present"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(b, golden, sizeof(b));
        b[cases[i].at] = cases[i].byte;
        set_crc(b, sizeof(b));
        int rc = iterate_all(b, sizeof(b), NULL);
        if (rc != KC_LOG_ECORRUPT)
            fail_msg("%s: got %d", cases[i].what, rc);
    }

    /* Random damage anywhere in the records section (CRC fixed up): never a crash. */
    uint8_t *store;
    kc_log_record_t *recs = make_records(40, &store);
    kc_batch_ctx_t *c = kc_batch_ctx_new(1 << 20);
    for (int codec = 0; codec <= 4; codec += 4) {
        kc_writer_t w;
        kc_wr_init(&w);
        kc_batch_spec_t spec;
        kc_batch_spec_init(&spec, 0);
        spec.codec = codec;
        assert_int_equal(kc_batch_encode(c, &w, &spec, recs, 40), 0);
        uint8_t *m = malloc(w.len);
        int refused = 0;
        for (int round = 0; round < 3000; round++) {
            memcpy(m, w.buf, w.len);
            int flips = 1 + (int)(rnd() % 4);
            for (int f = 0; f < flips; f++)
                m[KC_BATCH_HEADER_SIZE + rnd() % (w.len - KC_BATCH_HEADER_SIZE)] = (uint8_t)rnd();
            if (round % 3 == 0)
                m[57 + rnd() % 4] = (uint8_t)rnd(); /* the record count too */
            set_crc(m, w.len);
            refused += iterate_all(m, w.len, c) != 0;
        }
        print_message("codec %d: %d of 3000 damaged batches refused\n", codec, refused);
        assert_true(refused > 1000);
        free(m);
        kc_wr_free(&w);
    }
    kc_batch_ctx_free(c);
    free(recs);
    free(store);
}

/* Control and transactional batches: flags readable; an empty batch iterates to nothing. */
static void test_flags_and_empty(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 10);
    spec.extra_attrs = KC_BATCH_ATTR_TRANSACTIONAL | KC_BATCH_ATTR_CONTROL;
    spec.producer_id = 77;
    spec.producer_epoch = 3;
    spec.base_sequence = 0;
    static const uint8_t ck[] = {0, 0, 0, 1}, cv[] = {0, 0, 0, 0, 0, 5};
    kc_log_record_t r = {.timestamp_ms = 1, .key = ck, .key_len = 4, .value = cv, .value_len = 6};
    assert_int_equal(kc_batch_encode(NULL, &w, &spec, &r, 1), 0);
    kc_batch_hdr_t h;
    assert_int_equal(kc_batch_validate(w.buf, w.len, &h, NULL, 0), 0);
    assert_true(kc_batch_is_control(&h));
    assert_true(kc_batch_is_transactional(&h));
    assert_int_equal(h.attributes, 0x30);
    assert_int_equal(h.producer_id, 77);

    /* An empty batch (as Kafka's cleaner keeps): header only, count 0. */
    uint8_t e[KC_BATCH_HEADER_SIZE];
    memcpy(e, golden, sizeof(e));
    e[8] = e[9] = e[10] = 0;
    e[11] = 49;
    e[57] = e[58] = e[59] = e[60] = 0;
    set_crc(e, sizeof(e));
    assert_int_equal(kc_batch_validate(e, sizeof(e), &h, NULL, 0), 0);
    assert_int_equal(iterate_all(e, sizeof(e), NULL), 0);
    kc_wr_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_vectors),
        cmocka_unit_test(test_crc_paths_agree),
        cmocka_unit_test(test_golden_batch),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_offset_limit),
        cmocka_unit_test(test_zstd_round_trip),
        cmocka_unit_test(test_record_schemas_through_batches),
        cmocka_unit_test(test_dump_consumer_group),
        cmocka_unit_test(test_dump_kafka_member_record),
        cmocka_unit_test(test_doc_offset_commit_example),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_flags_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
