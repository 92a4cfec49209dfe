/* batch.c - Kafka RecordBatch v2: writing one, checking one, and walking its records.
 *
 * Writing. The header is written field by field with placeholders for batchLength and crc; the
 * records follow, either straight into the output or into a scratch buffer that zstd then
 * compresses into the output as one frame (zstd's one-shot API, which records the content size
 * in the frame header). Then batchLength and the CRC-32C of [attributes, end) are patched in.
 *
 * Reading. kc_batch_validate checks the fixed header and the CRC; it never reads past `len`.
 * kc_batch_iter_* then decode the records with the wire reader (sticky error, bounds checked):
 * every length is checked against the bytes left before it is used, and a record must consume
 * exactly its declared length, as Kafka's DefaultRecord.readFrom requires. A zstd section is
 * inflated into the context's buffer: in one call when the frame states its size, otherwise
 * (Kafka's Java producer streams its frames and may not state it; several frames may follow
 * one another) with the streaming API, growing the buffer up to the context's limit.
 *
 * Record layout (Kafka's DefaultRecord; varints are zigzag, like protobuf's sint32/sint64):
 *     length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
 *     keyLength varint | key | valueLength varint | value | headerCount varint | headers
 * with -1 lengths meaning null, and length counting the bytes after itself.
 */
#include "log/batch.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "log/crc32c.h"

/* The header layout is Kafka's and must never change. */
_Static_assert(sizeof(kc_batch_wire_t) == KC_BATCH_HEADER_SIZE, "batch header is 61 bytes");
_Static_assert(offsetof(kc_batch_wire_t, base_offset) == 0, "baseOffset at 0");
_Static_assert(offsetof(kc_batch_wire_t, batch_length) == 8, "batchLength at 8");
_Static_assert(offsetof(kc_batch_wire_t, partition_leader_epoch) == 12, "leader epoch at 12");
_Static_assert(offsetof(kc_batch_wire_t, magic) == 16, "magic at 16");
_Static_assert(offsetof(kc_batch_wire_t, crc) == KC_BATCH_CRC_OFFSET, "crc at 17");
_Static_assert(offsetof(kc_batch_wire_t, attributes) == KC_BATCH_CRC_START, "attributes at 21");
_Static_assert(offsetof(kc_batch_wire_t, last_offset_delta) == 23, "lastOffsetDelta at 23");
_Static_assert(offsetof(kc_batch_wire_t, base_timestamp) == 27, "baseTimestamp at 27");
_Static_assert(offsetof(kc_batch_wire_t, max_timestamp) == 35, "maxTimestamp at 35");
_Static_assert(offsetof(kc_batch_wire_t, producer_id) == 43, "producerId at 43");
_Static_assert(offsetof(kc_batch_wire_t, producer_epoch) == 51, "producerEpoch at 51");
_Static_assert(offsetof(kc_batch_wire_t, base_sequence) == 53, "baseSequence at 53");
_Static_assert(offsetof(kc_batch_wire_t, record_count) == 57, "recordCount at 57");
_Static_assert(KC_BATCH_LOG_OVERHEAD == offsetof(kc_batch_wire_t, partition_leader_epoch),
               "batchLength counts from the leader epoch on");
_Static_assert(KC_BATCH_MIN_LENGTH == 49, "an empty batch has batchLength 49");

/* The smallest record: length, attributes, timestampDelta, offsetDelta, keyLength,
 * valueLength and headerCount, one byte each. */
#define MIN_RECORD_SIZE 7

/* Compression memory kept between batches. zstd sizes a compression context's workspace by
 * the input (about 200 KiB for a small batch at the default level) and keeps the largest it ever
 * needed. So batch contexts do not each own one (every partition would hold its own, and one
 * burst of group records would leave each at its largest): the batches written on one thread
 * share that thread's, freed with the thread, and a workspace or scratch buffer grown past
 * these by one large batch is released after it. */
#define KEEP_CCTX_BYTES    ((size_t)1024 * 1024)
#define KEEP_SCRATCH_BYTES ((size_t)4 * 1024) /* each partition's context has one */

static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;
static pthread_key_t cctx_key;
static bool cctx_key_ok;

static void cctx_free(void *p)
{
    ZSTD_freeCCtx(p);
}

static void cctx_key_init(void)
{
    cctx_key_ok = pthread_key_create(&cctx_key, cctx_free) == 0;
}

/* This thread's compression context, created at its first use; NULL when out of memory. */
static ZSTD_CCtx *thread_cctx(void)
{
    pthread_once(&cctx_once, cctx_key_init);
    if (!cctx_key_ok)
        return NULL;
    ZSTD_CCtx *z = pthread_getspecific(cctx_key);
    if (z == NULL && (z = ZSTD_createCCtx()) != NULL && pthread_setspecific(cctx_key, z) != 0) {
        ZSTD_freeCCtx(z);
        z = NULL;
    }
    return z;
}

/* After a batch: a workspace grown past KEEP_CCTX_BYTES goes. */
static void thread_cctx_trim(ZSTD_CCtx *z)
{
    if (ZSTD_sizeof_CCtx(z) > KEEP_CCTX_BYTES && pthread_setspecific(cctx_key, NULL) == 0)
        ZSTD_freeCCtx(z);
}

struct kc_batch_ctx_s {
    ZSTD_DCtx *dctx;     /* created at the first decompression */
    kc_writer_t scratch; /* uncompressed records while encoding */
    uint8_t *dbuf;       /* inflated records while reading */
    size_t dcap;
    size_t max_records_bytes;
};

const char *kc_batch_codec_name(int codec)
{
    switch (codec) {
    case KC_LOG_CODEC_NONE:
        return "none";
    case KC_LOG_CODEC_GZIP:
        return "gzip";
    case KC_LOG_CODEC_SNAPPY:
        return "snappy";
    case KC_LOG_CODEC_LZ4:
        return "lz4";
    case KC_LOG_CODEC_ZSTD:
        return "zstd";
    default:
        return "unknown";
    }
}

kc_batch_ctx_t *kc_batch_ctx_new(size_t max_records_bytes)
{
    kc_batch_ctx_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    kc_wr_init(&c->scratch);
    c->max_records_bytes =
        max_records_bytes != 0 ? max_records_bytes : KC_BATCH_DEFAULT_MAX_RECORDS_BYTES;
    return c;
}

void kc_batch_ctx_free(kc_batch_ctx_t *c)
{
    if (c == NULL)
        return;
    ZSTD_freeDCtx(c->dctx);
    kc_wr_free(&c->scratch);
    free(c->dbuf);
    free(c);
}

void kc_batch_spec_init(kc_batch_spec_t *s, int64_t base_offset)
{
    memset(s, 0, sizeof(*s));
    s->base_offset = base_offset;
    s->partition_leader_epoch = 0;
    s->codec = KC_LOG_CODEC_NONE;
    s->producer_id = -1;
    s->producer_epoch = -1;
    s->base_sequence = -1;
    s->default_timestamp_ms = -1;
}

/* ---- encoding --------------------------------------------------------------------------- */

/* Bytes of one record after its length varint, or 0 when a part is too long. */
static size_t record_body_size(const kc_log_record_t *r, int64_t ts_delta, int32_t off_delta)
{
    if (r->key_len > INT32_MAX || r->value_len > INT32_MAX)
        return 0;
    int32_t kl = r->key != NULL ? (int32_t)r->key_len : -1;
    int32_t vl = r->value != NULL ? (int32_t)r->value_len : -1;
    uint64_t n = 1 + kc_varlong_size(ts_delta) + kc_varint_size(off_delta) + kc_varint_size(kl) +
                 (kl > 0 ? (uint64_t)kl : 0) + kc_varint_size(vl) + (vl > 0 ? (uint64_t)vl : 0) +
                 kc_varint_size(0);
    return n > INT32_MAX ? 0 : (size_t)n;
}

static int64_t ts_of(const kc_log_record_t *r, const kc_batch_spec_t *s)
{
    return r->timestamp_ms >= 0 ? r->timestamp_ms : s->default_timestamp_ms;
}

static int write_records(kc_writer_t *w, const kc_batch_spec_t *s, const kc_log_record_t *recs,
                         size_t n, int64_t base_ts)
{
    for (size_t i = 0; i < n; i++) {
        const kc_log_record_t *r = &recs[i];
        int64_t ts_delta = ts_of(r, s) - base_ts;
        size_t body = record_body_size(r, ts_delta, (int32_t)i);
        if (body == 0)
            return KC_LOG_ETOOBIG;
        kc_wr_varint(w, (int32_t)body);
        kc_wr_i8(w, 0); /* record attributes: none are defined */
        kc_wr_varlong(w, ts_delta);
        kc_wr_varint(w, (int32_t)i);
        if (r->key != NULL) {
            kc_wr_varint(w, (int32_t)r->key_len);
            kc_wr_raw(w, r->key, r->key_len);
        } else {
            kc_wr_varint(w, -1);
        }
        if (r->value != NULL) {
            kc_wr_varint(w, (int32_t)r->value_len);
            kc_wr_raw(w, r->value, r->value_len);
        } else {
            kc_wr_varint(w, -1);
        }
        kc_wr_varint(w, 0); /* no headers */
    }
    return w->err ? -ENOMEM : 0;
}

static int encode(kc_batch_ctx_t *c, kc_writer_t *w, const kc_batch_spec_t *s,
                  const kc_log_record_t *recs, size_t n, size_t start)
{
    if (n == 0 || s->base_offset < 0)
        return -EINVAL;
    if (n > (size_t)INT32_MAX)
        return KC_LOG_ETOOBIG;
    if (s->codec != KC_LOG_CODEC_NONE && s->codec != KC_LOG_CODEC_ZSTD)
        return -EINVAL;
    int64_t base_ts = ts_of(&recs[0], s), max_ts = base_ts;
    for (size_t i = 0; i < n; i++) {
        int64_t ts = ts_of(&recs[i], s);
        if (ts < 0)
            return -EINVAL;
        if (ts > max_ts)
            max_ts = ts;
    }

    kc_wr_i64(w, s->base_offset);
    kc_wr_i32(w, 0); /* batchLength, patched below */
    kc_wr_i32(w, s->partition_leader_epoch);
    kc_wr_i8(w, KC_BATCH_MAGIC);
    kc_wr_u32(w, 0); /* crc, patched below */
    kc_wr_i16(w, (int16_t)(s->codec | (s->extra_attrs & ~KC_BATCH_ATTR_CODEC_MASK)));
    kc_wr_i32(w, (int32_t)(n - 1));
    kc_wr_i64(w, base_ts);
    kc_wr_i64(w, max_ts);
    kc_wr_i64(w, s->producer_id);
    kc_wr_i16(w, s->producer_epoch);
    kc_wr_i32(w, s->base_sequence);
    kc_wr_i32(w, (int32_t)n);
    if (w->err)
        return -ENOMEM;

    int rc;
    if (s->codec == KC_LOG_CODEC_NONE) {
        rc = write_records(w, s, recs, n, base_ts);
        if (rc != 0)
            return rc;
    } else {
        ZSTD_CCtx *cctx = thread_cctx();
        if (cctx == NULL)
            return -ENOMEM;
        c->scratch.len = 0;
        c->scratch.err = 0;
        rc = write_records(&c->scratch, s, recs, n, base_ts);
        if (rc != 0)
            return rc;
        size_t bound = ZSTD_compressBound(c->scratch.len);
        if (ZSTD_isError(bound))
            return KC_LOG_ETOOBIG;
        if (!kc_wr_reserve(w, bound))
            return -ENOMEM;
        size_t z = ZSTD_compressCCtx(cctx, w->buf + w->len, bound, c->scratch.buf, c->scratch.len,
                                     s->zstd_level);
        thread_cctx_trim(cctx);
        if (c->scratch.cap > KEEP_SCRATCH_BYTES) {
            kc_wr_free(&c->scratch);
            kc_wr_init(&c->scratch);
        }
        if (ZSTD_isError(z))
            return KC_LOG_ECOMPRESS;
        w->len += z;
    }

    size_t total = w->len - start;
    if (total - KC_BATCH_LOG_OVERHEAD > (size_t)INT32_MAX)
        return KC_LOG_ETOOBIG;
    kc_wr_patch_i32(w, start + 8, (int32_t)(total - KC_BATCH_LOG_OVERHEAD));
    uint32_t crc = kc_crc32c(0, w->buf + start + KC_BATCH_CRC_START, total - KC_BATCH_CRC_START);
    kc_wr_patch_i32(w, start + KC_BATCH_CRC_OFFSET, (int32_t)crc);
    return w->err ? -ENOMEM : 0;
}

int kc_batch_encode(kc_batch_ctx_t *c, kc_writer_t *w, const kc_batch_spec_t *s,
                    const kc_log_record_t *recs, size_t n)
{
    size_t start = w->len;
    int had_err = w->err;
    kc_batch_ctx_t *tmp = NULL;
    if (c == NULL && s->codec == KC_LOG_CODEC_ZSTD) {
        if ((tmp = kc_batch_ctx_new(0)) == NULL)
            return -ENOMEM;
        c = tmp;
    }
    int rc = had_err ? -ENOMEM : encode(c, w, s, recs, n, start);
    kc_batch_ctx_free(tmp);
    if (rc != 0) {
        w->len = start < w->len ? start : w->len;
        if (!had_err)
            w->err = 0; /* our own failure: the writer is usable again at its old length */
    }
    return rc;
}

/* ---- decoding --------------------------------------------------------------------------- */

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}
static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t be64(const uint8_t *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}
/* Two's-complement conversions without implementation-defined casts. */
static int16_t s16(uint16_t v)
{
    return v <= INT16_MAX ? (int16_t)v : (int16_t)(-(int32_t)(UINT16_MAX - v) - 1);
}
static int32_t s32(uint32_t v)
{
    return v <= INT32_MAX ? (int32_t)v : -(int32_t)(UINT32_MAX - v) - 1;
}
static int64_t s64(uint64_t v)
{
    return v <= INT64_MAX ? (int64_t)v : -(int64_t)(UINT64_MAX - v) - 1;
}

void kc_batch_hdr_parse(const uint8_t *p, kc_batch_hdr_t *h)
{
    h->base_offset = s64(be64(p + 0));
    h->length = s32(be32(p + 8));
    h->partition_leader_epoch = s32(be32(p + 12));
    h->magic = p[16] < 0x80 ? (int8_t)p[16] : (int8_t)((int)p[16] - 256);
    h->crc = be32(p + 17);
    h->attributes = s16(be16(p + 21));
    h->last_offset_delta = s32(be32(p + 23));
    h->base_timestamp = s64(be64(p + 27));
    h->max_timestamp = s64(be64(p + 35));
    h->producer_id = s64(be64(p + 43));
    h->producer_epoch = s16(be16(p + 51));
    h->base_sequence = s32(be32(p + 53));
    h->count = s32(be32(p + 57));
}

#define WHY(...)                                                                                   \
    do {                                                                                           \
        if (whylen > 0)                                                                            \
            snprintf(why, whylen, __VA_ARGS__);                                                    \
    } while (0)

int kc_batch_validate(const uint8_t *p, size_t len, kc_batch_hdr_t *h, char *why, size_t whylen)
{
    if (len < KC_BATCH_HEADER_SIZE) {
        memset(h, 0, sizeof(*h));
        WHY("batch of %zu bytes is shorter than the %d-byte header", len, KC_BATCH_HEADER_SIZE);
        return KC_LOG_ECORRUPT;
    }
    kc_batch_hdr_parse(p, h);
    if (h->length < KC_BATCH_MIN_LENGTH || (size_t)h->length != len - KC_BATCH_LOG_OVERHEAD) {
        WHY("batchLength %d does not match the batch size %zu", h->length, len);
        return KC_LOG_ECORRUPT;
    }
    if (h->magic != KC_BATCH_MAGIC) {
        WHY("magic %d (only 2 is supported)", h->magic);
        return KC_LOG_ECORRUPT;
    }
    uint32_t crc = kc_crc32c(0, p + KC_BATCH_CRC_START, len - KC_BATCH_CRC_START);
    if (crc != h->crc) {
        WHY("crc mismatch: stored 0x%08x, computed 0x%08x", h->crc, crc);
        return KC_LOG_ECORRUPT;
    }
    if (h->base_offset < 0 || h->last_offset_delta < 0 ||
        h->base_offset > INT64_MAX - 1 - h->last_offset_delta) { /* last + 1 must exist */
        WHY("offsets out of range: baseOffset %lld, lastOffsetDelta %d", (long long)h->base_offset,
            h->last_offset_delta);
        return KC_LOG_ECORRUPT;
    }
    if (h->count < 0 || (int64_t)h->count > (int64_t)h->last_offset_delta + 1) {
        WHY("record count %d does not fit lastOffsetDelta %d", h->count, h->last_offset_delta);
        return KC_LOG_ECORRUPT;
    }
    return 0;
}

/* Grow the decompression buffer to at least n bytes (n <= the limit). */
static int dbuf_reserve(kc_batch_ctx_t *c, size_t n)
{
    if (n <= c->dcap)
        return 0;
    size_t cap = c->dcap != 0 ? c->dcap : 4096;
    while (cap < n)
        cap = cap > SIZE_MAX / 2 ? n : cap * 2;
    if (cap > c->max_records_bytes)
        cap = c->max_records_bytes;
    uint8_t *b = realloc(c->dbuf, cap);
    if (b == NULL)
        return -ENOMEM;
    c->dbuf = b;
    c->dcap = cap;
    return 0;
}

/* Inflate `n` bytes of zstd frames at `src` into c->dbuf; *out_len gets the size. */
static int inflate(kc_batch_ctx_t *c, const uint8_t *src, size_t n, size_t *out_len, char *why,
                   size_t whylen)
{
    if (c->dctx == NULL && (c->dctx = ZSTD_createDCtx()) == NULL) {
        WHY("out of memory for a zstd context");
        return -ENOMEM;
    }
    unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
    if (fcs == ZSTD_CONTENTSIZE_ERROR) {
        WHY("records section is not a zstd frame");
        return KC_LOG_ECOMPRESS;
    }
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs > c->max_records_bytes) {
        WHY("zstd frame inflates to %llu bytes, more than the limit of %zu", fcs,
            c->max_records_bytes);
        return KC_LOG_ECOMPRESS;
    }
    /* One frame of known size: a single call. */
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && ZSTD_findFrameCompressedSize(src, n) == n) {
        if (dbuf_reserve(c, fcs > 0 ? (size_t)fcs : 1) != 0) {
            WHY("out of memory inflating %llu bytes", fcs);
            return -ENOMEM;
        }
        size_t got = ZSTD_decompressDCtx(c->dctx, c->dbuf, (size_t)fcs, src, n);
        if (ZSTD_isError(got) || got != fcs) {
            WHY("zstd: %s", ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch");
            return KC_LOG_ECOMPRESS;
        }
        *out_len = got;
        return 0;
    }
    /* Unknown size, or several frames: stream, growing the buffer up to the limit. */
    ZSTD_DCtx_reset(c->dctx, ZSTD_reset_session_only);
    if (dbuf_reserve(c, n * 4 < c->max_records_bytes ? n * 4 + 64 : c->max_records_bytes) != 0) {
        WHY("out of memory inflating a zstd section");
        return -ENOMEM;
    }
    ZSTD_inBuffer in = {src, n, 0};
    ZSTD_outBuffer out = {c->dbuf, c->dcap, 0};
    for (;;) {
        size_t ret = ZSTD_decompressStream(c->dctx, &out, &in);
        if (ZSTD_isError(ret)) {
            WHY("zstd: %s", ZSTD_getErrorName(ret));
            return KC_LOG_ECOMPRESS;
        }
        if (ret == 0 && in.pos == in.size)
            break;
        if (out.pos == out.size) {
            if (c->dcap >= c->max_records_bytes) {
                WHY("zstd section inflates past the limit of %zu bytes", c->max_records_bytes);
                return KC_LOG_ECOMPRESS;
            }
            if (dbuf_reserve(c, c->dcap + 1) != 0) {
                WHY("out of memory inflating a zstd section");
                return -ENOMEM;
            }
            out.dst = c->dbuf;
            out.size = c->dcap;
        } else if (in.pos == in.size) {
            WHY("zstd frame is truncated");
            return KC_LOG_ECOMPRESS;
        }
    }
    *out_len = out.pos;
    return 0;
}

int kc_batch_iter_init(kc_batch_iter_t *it, kc_batch_ctx_t *c, const uint8_t *p, size_t len)
{
    memset(it, 0, sizeof(*it));
    it->last_offset = -1;
    kc_rd_init(&it->r, NULL, 0);
    int rc = kc_batch_validate(p, len, &it->hdr, it->why, sizeof(it->why));
    if (rc != 0)
        return rc;
    const uint8_t *recs = p + KC_BATCH_HEADER_SIZE;
    size_t n = len - KC_BATCH_HEADER_SIZE;
    int codec = kc_batch_codec(&it->hdr);
    if (it->hdr.count == 0) {
        /* An empty batch (Kafka keeps one after compaction removed every record, to remember
         * producer state): nothing to read, whatever follows the header. */
        it->left = 0;
        return 0;
    }
    if (codec == KC_LOG_CODEC_ZSTD) {
        if (c == NULL) {
            snprintf(it->why, sizeof(it->why), "a zstd batch needs a batch context");
            return -EINVAL;
        }
        size_t out = 0;
        rc = inflate(c, recs, n, &out, it->why, sizeof(it->why));
        if (rc != 0)
            return rc;
        kc_rd_init(&it->r, c->dbuf, out);
    } else if (codec == KC_LOG_CODEC_NONE) {
        kc_rd_init(&it->r, recs, n);
    } else {
        snprintf(it->why, sizeof(it->why), "compression codec %d (%s) is not supported", codec,
                 kc_batch_codec_name(codec));
        return KC_LOG_EUNSUPPORTED;
    }
    if ((size_t)it->hdr.count > kc_rd_remaining(&it->r) / MIN_RECORD_SIZE) {
        snprintf(it->why, sizeof(it->why), "record count %d cannot fit in %zu bytes", it->hdr.count,
                 kc_rd_remaining(&it->r));
        return KC_LOG_ECORRUPT;
    }
    it->left = it->hdr.count;
    return 0;
}

static int bad(kc_batch_iter_t *it, const char *what)
{
    snprintf(it->why, sizeof(it->why), "record %d of %d: %s", it->hdr.count - it->left,
             it->hdr.count, what);
    return KC_LOG_ECORRUPT;
}

int kc_batch_iter_next(kc_batch_iter_t *it, kc_log_record_t *rec)
{
    if (it->left <= 0) {
        if (kc_rd_remaining(&it->r) != 0) {
            snprintf(it->why, sizeof(it->why), "%zu bytes left after the last record",
                     kc_rd_remaining(&it->r));
            return KC_LOG_ECORRUPT;
        }
        return 0;
    }
    int32_t len = kc_rd_varint(&it->r);
    if (it->r.err != KC_RD_OK || len < 0 || (size_t)len > kc_rd_remaining(&it->r))
        return bad(it, "bad record length");
    kc_reader_t s = kc_rd_sub(&it->r, (size_t)len);
    (void)kc_rd_i8(&s); /* attributes: none defined */
    int64_t ts_delta = kc_rd_varlong(&s);
    int32_t off_delta = kc_rd_varint(&s);
    int32_t kl = kc_rd_varint(&s);
    if (s.err != KC_RD_OK || kl < -1 || (kl > 0 && (size_t)kl > kc_rd_remaining(&s)))
        return bad(it, "bad key length");
    const uint8_t *key = kl >= 0 ? s.p : NULL;
    kc_rd_skip(&s, kl > 0 ? (size_t)kl : 0);
    int32_t vl = kc_rd_varint(&s);
    if (s.err != KC_RD_OK || vl < -1 || (vl > 0 && (size_t)vl > kc_rd_remaining(&s)))
        return bad(it, "bad value length");
    const uint8_t *value = vl >= 0 ? s.p : NULL;
    kc_rd_skip(&s, vl > 0 ? (size_t)vl : 0);
    int32_t hc = kc_rd_varint(&s);
    if (s.err != KC_RD_OK || hc < 0 || (size_t)hc > kc_rd_remaining(&s) / 2)
        return bad(it, "bad header count");
    for (int32_t i = 0; i < hc; i++) {
        int32_t hk = kc_rd_varint(&s);
        if (s.err != KC_RD_OK || hk < 0 || (size_t)hk > kc_rd_remaining(&s))
            return bad(it, "bad header key length");
        kc_rd_skip(&s, (size_t)hk);
        int32_t hv = kc_rd_varint(&s);
        if (s.err != KC_RD_OK || hv < -1 || (hv > 0 && (size_t)hv > kc_rd_remaining(&s)))
            return bad(it, "bad header value length");
        kc_rd_skip(&s, hv > 0 ? (size_t)hv : 0);
    }
    if (s.err != KC_RD_OK || kc_rd_remaining(&s) != 0)
        return bad(it, "record length does not match its fields");
    if (off_delta < 0 || off_delta > it->hdr.last_offset_delta)
        return bad(it, "offset delta outside the batch");
    int64_t offset = it->hdr.base_offset + off_delta;
    if (offset <= it->last_offset)
        return bad(it, "offsets do not increase");
    it->last_offset = offset;
    it->left--;

    rec->offset = offset;
    if (it->hdr.attributes & KC_BATCH_ATTR_LOG_APPEND_TIME)
        rec->timestamp_ms = it->hdr.max_timestamp;
    else
        rec->timestamp_ms = s64((uint64_t)it->hdr.base_timestamp + (uint64_t)ts_delta);
    rec->key = key;
    rec->key_len = kl > 0 ? (size_t)kl : 0;
    rec->value = value;
    rec->value_len = vl > 0 ? (size_t)vl : 0;
    return 1;
}

/* ---- Batches outside a log (log.h) ------------------------------------------------------------
 */

int kc_log_batch_build(const kc_log_record_t *recs, size_t n, int64_t now_ms, int codec,
                       uint8_t **out, size_t *len)
{
    kc_batch_ctx_t *c = kc_batch_ctx_new(0);
    if (c == NULL)
        return -ENOMEM;
    kc_batch_spec_t spec;
    kc_batch_spec_init(&spec, 0);
    spec.codec = codec;
    spec.default_timestamp_ms = now_ms;
    kc_writer_t w;
    kc_wr_init(&w);
    int rc = kc_batch_encode(c, &w, &spec, recs, n);
    kc_batch_ctx_free(c);
    if (rc == 0 && w.err)
        rc = -ENOMEM;
    if (rc != 0) {
        kc_wr_free(&w);
        return rc;
    }
    *out = kc_wr_steal(&w, len);
    return 0;
}

/* What the records of a decoded batch may point into: the context's inflate buffer. */
struct kc_log_batch_keep_s {
    kc_batch_ctx_t *ctx;
};

int kc_log_batch_records(const uint8_t *batch, size_t len, kc_log_record_t **recs, size_t *n,
                         kc_log_batch_keep_t **keep)
{
    *recs = NULL;
    *n = 0;
    *keep = NULL;
    kc_log_batch_keep_t *k = malloc(sizeof(*k));
    if (k == NULL)
        return -ENOMEM;
    k->ctx = kc_batch_ctx_new(0);
    if (k->ctx == NULL) {
        free(k);
        return -ENOMEM;
    }
    kc_batch_iter_t it;
    int rc = kc_batch_iter_init(&it, k->ctx, batch, len);
    if (rc != 0)
        goto fail;
    size_t cap = it.left > 0 ? (size_t)it.left : 1;
    kc_log_record_t *v = malloc(cap * sizeof(*v));
    if (v == NULL) {
        rc = -ENOMEM;
        goto fail;
    }
    size_t k_n = 0;
    kc_log_record_t rec;
    while ((rc = kc_batch_iter_next(&it, &rec)) == 1) {
        if (k_n == cap) { /* recordCount said fewer: the iterator checks the count itself */
            rc = KC_LOG_ECORRUPT;
            break;
        }
        v[k_n++] = rec;
    }
    if (rc != 0) {
        free(v);
        goto fail;
    }
    *recs = v;
    *n = k_n;
    *keep = k;
    return 0;
fail:
    kc_batch_ctx_free(k->ctx);
    free(k);
    return rc;
}

void kc_log_batch_records_free(kc_log_record_t *recs, kc_log_batch_keep_t *keep)
{
    free(recs);
    if (keep) {
        kc_batch_ctx_free(keep->ctx);
        free(keep);
    }
}
