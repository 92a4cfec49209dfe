/* wire.h - Kafka wire primitives: a bounded reader with a sticky error and a growable writer.
 *
 * Reading: every kc_rd_* call reads from `r->p` towards `r->end`. When a read would pass the
 * end, or a value is invalid (a varint longer than its type allows, a negative length that is
 * not -1 where null is allowed, an array count larger than the bytes that remain could hold),
 * the reader's `err` is set and stays set; that call and every later one return a zero value
 * (0, an empty view, a NULL array) without touching memory. Decoders therefore run straight
 * through and check `r->err` once at the end.
 *
 * Strings and bytes are views into the reader's buffer: they stay valid as long as that buffer.
 *
 * Writing: kc_wr_* append to a growable buffer. On allocation failure the writer's `err` is set
 * and later writes are dropped; check `w->err` once at the end.
 */
#ifndef KC_PROTO_WIRE_H
#define KC_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

/* A string view. len == -1 means null; p is NULL then. Not NUL-terminated. */
typedef struct kc_str_s {
    const char *p;
    int32_t len;
} kc_str_t;

/* A byte-string view. len == -1 means null. */
typedef struct kc_bytes_s {
    const uint8_t *p;
    int32_t len;
} kc_bytes_t;

typedef struct kc_uuid_s {
    uint8_t b[16];
} kc_uuid_t;

/* Kafka's Uuid.toString(): the 16 bytes as 22 characters of URL-safe base64 without padding. */
void kc_uuid_format(const kc_uuid_t *u, char out[23]);
/* The reverse: 0, or -1 (and *u zero) when `s` is not 22 such characters. */
int kc_uuid_parse(const char *s, kc_uuid_t *u);

#define KC_STR_NULL   ((kc_str_t){NULL, -1})
#define KC_STR_EMPTY  ((kc_str_t){"", 0})
#define KC_STR_LIT(s) ((kc_str_t){(s), (int32_t)(sizeof(s) - 1)})
#define KC_BYTES_NULL ((kc_bytes_t){NULL, -1})

/* Make a view of a NUL-terminated C string (NULL gives a null view). */
kc_str_t kc_str_c(const char *s);
/* True when both views are null or both hold the same bytes. */
bool kc_str_eq(kc_str_t a, kc_str_t b);
/* True when the view is not null and equals the C string. */
bool kc_str_eq_c(kc_str_t a, const char *s);

/* Error codes kept in kc_reader_t.err. */
enum {
    KC_RD_OK = 0,
    KC_RD_SHORT = 1,   /* input ended inside a value */
    KC_RD_INVALID = 2, /* a value is malformed (bad varint, bad length, bad count) */
    KC_RD_NOMEM = 3,   /* the arena refused an allocation */
};

typedef struct kc_reader_s {
    const uint8_t *p;   /* next byte */
    const uint8_t *end; /* one past the last byte */
    int err;            /* sticky: KC_RD_OK until the first failure */
} kc_reader_t;

void kc_rd_init(kc_reader_t *r, const void *buf, size_t len);
static inline size_t kc_rd_remaining(const kc_reader_t *r)
{
    return (size_t)(r->end - r->p);
}
/* Mark the reader failed with `err` unless it already failed. */
void kc_rd_fail(kc_reader_t *r, int err);

bool kc_rd_bool(kc_reader_t *r);
int8_t kc_rd_i8(kc_reader_t *r);
int16_t kc_rd_i16(kc_reader_t *r);
uint16_t kc_rd_u16(kc_reader_t *r);
int32_t kc_rd_i32(kc_reader_t *r);
uint32_t kc_rd_u32(kc_reader_t *r);
int64_t kc_rd_i64(kc_reader_t *r);
double kc_rd_f64(kc_reader_t *r);
kc_uuid_t kc_rd_uuid(kc_reader_t *r);
uint32_t kc_rd_uvarint(kc_reader_t *r);  /* at most 5 bytes */
uint64_t kc_rd_uvarlong(kc_reader_t *r); /* at most 10 bytes */
int32_t kc_rd_varint(kc_reader_t *r);    /* zigzag, at most 5 bytes */
int64_t kc_rd_varlong(kc_reader_t *r);   /* zigzag, at most 10 bytes */
/* Skip n bytes. */
void kc_rd_skip(kc_reader_t *r, size_t n);

/* Strings: classic = int16 length; compact = uvarint length+1 (0 = null).
 * `nullable` false turns a null on the wire into KC_RD_INVALID. */
kc_str_t kc_rd_str(kc_reader_t *r, bool nullable);
kc_str_t kc_rd_cstr(kc_reader_t *r, bool nullable);
/* Bytes: classic = int32 length; compact = uvarint length+1 (0 = null). */
kc_bytes_t kc_rd_bytes(kc_reader_t *r, bool nullable);
kc_bytes_t kc_rd_cbytes(kc_reader_t *r, bool nullable);

/* Array counts. Classic = int32 (-1 = null); compact = uvarint count+1 (0 = null).
 * Returns the count, or -1 for null (only when `nullable`; otherwise the reader fails).
 * A count that cannot fit in the remaining bytes at `min_elem_size` bytes per element
 * fails the reader with KC_RD_INVALID (validate before allocating). */
int32_t kc_rd_array_len(kc_reader_t *r, bool nullable, size_t min_elem_size);
int32_t kc_rd_carray_len(kc_reader_t *r, bool nullable, size_t min_elem_size);

/* Allocate `n` zeroed elements of `size` bytes from the arena for a decoded array; on
 * failure fails the reader with KC_RD_NOMEM and returns NULL. n <= 0 returns NULL. */
void *kc_rd_alloc_array(kc_reader_t *r, kc_arena_t *a, int32_t n, size_t size);

/* Tagged-field sections (flexible versions): the caller loops
 *     n = kc_rd_uvarint(r);  for each: tag = kc_rd_uvarint(r); size = kc_rd_uvarint(r);
 * and decodes a known tag from a sub-reader made by kc_rd_sub(r, size), or skips it with
 * kc_rd_skip(r, size). */
kc_reader_t kc_rd_sub(kc_reader_t *r, size_t n);
/* Skip a whole tagged-field section. */
void kc_rd_skip_tags(kc_reader_t *r);

typedef struct kc_writer_s {
    uint8_t *buf; /* owned, malloc'd; NULL until the first write */
    size_t len;
    size_t cap;
    int err; /* set on allocation failure; later writes are dropped */
} kc_writer_t;

void kc_wr_init(kc_writer_t *w);
void kc_wr_free(kc_writer_t *w);
/* Take ownership of the buffer (caller frees with free()); the writer is reset to empty. */
uint8_t *kc_wr_steal(kc_writer_t *w, size_t *len);
/* Make room for n more bytes; returns false (and sets err) on failure. */
bool kc_wr_reserve(kc_writer_t *w, size_t n);

void kc_wr_raw(kc_writer_t *w, const void *p, size_t n);
void kc_wr_bool(kc_writer_t *w, bool v);
void kc_wr_i8(kc_writer_t *w, int8_t v);
void kc_wr_i16(kc_writer_t *w, int16_t v);
void kc_wr_u16(kc_writer_t *w, uint16_t v);
void kc_wr_i32(kc_writer_t *w, int32_t v);
void kc_wr_u32(kc_writer_t *w, uint32_t v);
void kc_wr_i64(kc_writer_t *w, int64_t v);
void kc_wr_f64(kc_writer_t *w, double v);
void kc_wr_uuid(kc_writer_t *w, kc_uuid_t v);
void kc_wr_uvarint(kc_writer_t *w, uint32_t v);
void kc_wr_uvarlong(kc_writer_t *w, uint64_t v);
void kc_wr_varint(kc_writer_t *w, int32_t v);
void kc_wr_varlong(kc_writer_t *w, int64_t v);
void kc_wr_str(kc_writer_t *w, kc_str_t s);       /* int16 length, -1 = null */
void kc_wr_cstr(kc_writer_t *w, kc_str_t s);      /* uvarint length+1, 0 = null */
void kc_wr_bytes(kc_writer_t *w, kc_bytes_t b);   /* int32 length, -1 = null */
void kc_wr_cbytes(kc_writer_t *w, kc_bytes_t b);  /* uvarint length+1, 0 = null */
void kc_wr_array_len(kc_writer_t *w, int32_t n);  /* int32, -1 = null */
void kc_wr_carray_len(kc_writer_t *w, int32_t n); /* uvarint n+1, 0 = null */
/* Overwrite 4 bytes at `pos` (a length prefix reserved earlier) with a big-endian int32. */
void kc_wr_patch_i32(kc_writer_t *w, size_t pos, int32_t v);

/* Encoded sizes, for the generated *_size functions. */
size_t kc_uvarint_size(uint32_t v);
size_t kc_uvarlong_size(uint64_t v);
size_t kc_varint_size(int32_t v);
size_t kc_varlong_size(int64_t v);

#endif
