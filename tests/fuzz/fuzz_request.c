/* fuzz_request.c - libFuzzer target: frames through kc_request_parse, then a codec round trip.
 *
 * Input format. The input is read the way the server reads a socket: a stream of frames, each
 * a 4-byte big-endian size followed by that many bytes. Reading stops at the first size that is
 * negative, larger than FRAME_MAX, or runs past the end of the input, and at a tail shorter than
 * four bytes. One exception: when the first input byte is odd it is a mode byte, not part of
 * the stream (a valid size never starts with an odd byte, since FRAME_MAX < 2^24), and the
 * frames start at offset 1. So a captured client stream is a valid input as it is.
 *
 * Per frame:
 *   1. kc_request_parse with a `served` callback that accepts every (key, version) inside
 *      kc_api_table's range. On KC_REQ_OK the decoded body goes through check_roundtrip()
 *      with the API's request codec.
 *   2. Only in response mode (odd first byte): the frame's first four bytes name an API key and
 *      version (int16 each, big-endian); when kc_api_table has them, the bytes from offset 4
 *      are decoded with that API's response codec and, when that succeeds, go through
 *      check_roundtrip() as well. Response decoders are not on the server's request path; the
 *      benchmark tool uses them.
 *
 * check_roundtrip() encodes the decoded message at the same version and requires: the codec's
 * size function equals the encoded length; the encoding decodes again, consuming every byte;
 * encoding that second decode gives identical bytes. The first encoding may differ from the
 * input (unknown tags are dropped, a bool byte 2 becomes 1, a present-marker 0 becomes 1), but
 * from then on encoding must be a fixed point. Any failure is a codec bug: it prints what failed
 * and calls abort(), which libFuzzer and the replayer both report as a crash.
 *
 * Memory: each frame is copied into a malloc'd buffer of exactly its size and gets its own
 * arena (decoded arrays and bodies); both are freed before the next frame. The re-decode reads
 * an exact-size copy of the encoding too. So a decoder that reads past its input is caught by
 * AddressSanitizer instead of reading the next frame's bytes. Writer buffers and copies are
 * freed before check_roundtrip() returns. The arena has no limit, as
 * kc_arena_init leaves it; array counts are validated against the frame's bytes, so a frame of
 * at most FRAME_MAX bytes bounds what a decode can allocate.
 *
 * Extending: a new API in a proto/ .kdef file reaches this target through kc_api_table with
 * no change here; add seeds for it by rerunning tests/fuzz/make-seeds.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/request.h"
#include "fuzz.h"
#include "proto/gen_api.h"
#include "proto/wire.h"
#include "util/arena.h"

#define FRAME_MAX ((size_t)1 << 20) /* the largest frame this target hands to the parser */

/* Accept every (key, version) that kc_api_table can decode. */
static int served_all(int16_t key, int16_t version)
{
    const kc_api_info_t *api = kc_api_find(key);
    return api != NULL && version >= api->min_version && version <= api->max_version;
}

/* Report a codec bug and abort. */
static _Noreturn void fail(const kc_codec_t *c, int16_t v, const char *what, size_t x, size_t y)
{
    fprintf(stderr, "fuzz_request: %s v%d: %s (%zu vs %zu)\n", c->name, (int)v, what, x, y);
    abort();
}

/* A malloc'd copy of exactly `len` bytes (at least one byte is allocated, so the result is
 * never NULL for len == 0). Aborts when memory runs out: the target cannot go on without it. */
static uint8_t *exact_copy(const uint8_t *p, size_t len)
{
    uint8_t *q = malloc(len != 0 ? len : 1);
    if (q == NULL) {
        fprintf(stderr, "fuzz_request: out of memory copying %zu bytes\n", len);
        abort();
    }
    if (len != 0)
        memcpy(q, p, len);
    return q;
}

/* Encode `m` (a decoded message of codec `c` at version `v`) and check the round trip
 * described at the top of this file. Arrays of the second decode come from `a`, which the
 * caller frees; nothing else outlives the call. */
static void check_roundtrip(const kc_codec_t *c, int16_t v, const void *m, kc_arena_t *a)
{
    kc_writer_t w1, w2;
    kc_wr_init(&w1);
    kc_wr_init(&w2);

    c->encode(&w1, v, m);
    if (w1.err)
        fail(c, v, "encode of a decoded message failed", w1.len, 0);
    size_t predicted = c->size(v, m);
    if (predicted != w1.len)
        fail(c, v, "size function disagrees with encoded length", predicted, w1.len);

    /* Decode from an exact-size copy, so that AddressSanitizer sees a read past the end. */
    uint8_t *copy = exact_copy(w1.buf, w1.len);
    void *m2 = kc_arena_alloc(a, c->struct_size);
    if (m2 == NULL)
        fail(c, v, "arena allocation failed", c->struct_size, 0);
    kc_reader_t r;
    kc_rd_init(&r, copy, w1.len);
    if (c->decode(&r, a, v, m2) != 0)
        fail(c, v, "re-decode of the encoding failed (reader error, offset)", (size_t)r.err,
             (size_t)(r.p - copy));
    if (kc_rd_remaining(&r) != 0)
        fail(c, v, "re-decode left bytes unread (left, encoded)", kc_rd_remaining(&r), w1.len);

    /* m2's strings point into `copy`: keep it until the second encode is done. */
    c->encode(&w2, v, m2);
    free(copy);
    if (w2.err)
        fail(c, v, "second encode failed", w2.len, 0);
    if (w2.len != w1.len)
        fail(c, v, "second encode has a different length", w2.len, w1.len);
    predicted = c->size(v, m2);
    if (predicted != w2.len)
        fail(c, v, "size function disagrees on the re-decoded message", predicted, w2.len);
    if (w1.len != 0 && memcmp(w1.buf, w2.buf, w1.len) != 0) {
        size_t i = 0;
        while (w1.buf[i] == w2.buf[i])
            i++;
        fail(c, v, "second encode differs (first differing offset, length)", i, w1.len);
    }

    kc_wr_free(&w1);
    kc_wr_free(&w2);
}

/* Decode bytes 4.. of `frame` as the response of the API and version in bytes 0..3. */
static void fuzz_response(const uint8_t *frame, size_t len, kc_arena_t *a)
{
    if (len < 4)
        return;
    kc_reader_t r;
    kc_rd_init(&r, frame, 4);
    int16_t key = kc_rd_i16(&r);
    int16_t version = kc_rd_i16(&r);
    const kc_api_info_t *api = kc_api_find(key);
    if (api == NULL || version < api->min_version || version > api->max_version)
        return;

    const kc_codec_t *c = &api->response;
    void *body = kc_arena_alloc(a, c->struct_size);
    if (body == NULL)
        return;
    kc_rd_init(&r, frame + 4, len - 4);
    if (c->decode(&r, a, version, body) != 0)
        return;
    check_roundtrip(c, version, body, a);
}

/* One frame: the request path always, the response decoders in response mode. */
static void fuzz_frame(const uint8_t *in, size_t len, int response_mode)
{
    /* The frame gets a buffer of its own, so that a read past its end is an ASan report rather
     * than a silent read of the next frame's bytes. */
    uint8_t *frame = exact_copy(in, len);
    kc_arena_t a;
    kc_arena_init(&a);

    kc_request_t req;
    if (kc_request_parse(frame, len, &a, served_all, &req) == KC_REQ_OK)
        check_roundtrip(&req.api->request, req.api_version, req.body, &a);

    if (response_mode) {
        kc_arena_reset(&a);
        fuzz_response(frame, len, &a);
    }

    kc_arena_free(&a);
    free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    int response_mode = size > 0 && (data[0] & 1);
    if (response_mode)
        off = 1;

    while (size - off >= 4) {
        const uint8_t *p = data + off;
        uint32_t u = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        /* A size with the top bit set is negative as an int32: stop like the server. */
        if (u > (uint32_t)INT32_MAX || u > FRAME_MAX || u > size - off - 4)
            break;
        off += 4;
        fuzz_frame(data + off, u, response_mode);
        off += u;
    }
    return 0;
}
