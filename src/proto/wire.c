/* wire.c - Kafka wire primitives: the sticky-error reader and the growable writer of wire.h.
 *
 * Reader. Every read first checks `r->err`; once it is set nothing more is read and every call
 * returns its zero value (0, false, an empty view, a zero UUID). A failing call leaves `r->p`
 * where it was before that call: reads that consume a prefix and then fail (a string whose
 * length was read but whose body is short, a varint that runs off the end) put the pointer back,
 * so after a failure `r->p` points at the start of the value that failed.
 *
 * Error choice: input that ends inside a value is KC_RD_SHORT; a value that can never be valid
 * (an over-long varint, a 5th varint byte with bits above bit 31, a length below -1, a null where
 * null is not allowed, an array count that the remaining bytes cannot hold) is KC_RD_INVALID.
 * A string or bytes length that is well-formed but longer than the remaining input is
 * KC_RD_SHORT, since more input could make it valid.
 *
 * Varints follow protobuf: 7 bits per byte, least significant group first, high bit set on every
 * byte but the last. A 32-bit varint has at most 5 bytes and its 5th byte may only use the low
 * 4 bits; a 64-bit one has at most 10 and its 10th byte may only be 0 or 1. Signed varints are
 * zigzag-encoded ((n << 1) ^ (n >> 31)).
 *
 * Writer. The buffer doubles when it runs out (starting at 64 bytes). `w->err` is set to a
 * nonzero value when an allocation fails, when a size computation would overflow, when a value
 * cannot be encoded (a classic string longer than INT16_MAX bytes) or when kc_wr_patch_i32 is
 * given a position outside what was written; after that every write is dropped.
 *
 * Signed/unsigned conversions go through u32_to_i32/u64_to_i64 so that no result depends on
 * implementation-defined conversions.
 */
#include "proto/wire.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(double) == 8, "float64 must be an 8-byte double");

#define WR_INITIAL_CAP ((size_t)64)

/* ---- helpers ---------------------------------------------------------------------------- */

static int32_t u32_to_i32(uint32_t u)
{
    if (u <= (uint32_t)INT32_MAX)
        return (int32_t)u;
    return -(int32_t)(~u) - 1;
}

static int64_t u64_to_i64(uint64_t u)
{
    if (u <= (uint64_t)INT64_MAX)
        return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

static uint16_t load16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t load32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t load64(const uint8_t *p)
{
    return (uint64_t)load32(p) << 32 | load32(p + 4);
}

static void store32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Zigzag without relying on unsigned wraparound, so that clang's -fsanitize=integer is quiet. */
static uint32_t zigzag32(int32_t v)
{
    uint32_t u = (uint32_t)v;
    uint32_t shifted = (u & 0x7fffffffu) << 1;
    return (u >> 31) ? ~shifted : shifted;
}

static uint64_t zigzag64(int64_t v)
{
    uint64_t u = (uint64_t)v;
    uint64_t shifted = (u & UINT64_C(0x7fffffffffffffff)) << 1;
    return (u >> 63) ? ~shifted : shifted;
}

static int32_t unzigzag32(uint32_t u)
{
    return u32_to_i32((u & 1) ? ~(u >> 1) : u >> 1);
}

static int64_t unzigzag64(uint64_t u)
{
    return u64_to_i64((u & 1) ? ~(u >> 1) : u >> 1);
}

/* The zero values returned by failed string and bytes reads: empty, not null. */
static const uint8_t empty_buf[1];

static kc_str_t str_zero(void)
{
    return KC_STR_EMPTY;
}

static kc_bytes_t bytes_zero(void)
{
    return (kc_bytes_t){empty_buf, 0};
}

/* ---- string views ----------------------------------------------------------------------- */

kc_str_t kc_str_c(const char *s)
{
    if (s == NULL)
        return KC_STR_NULL;
    size_t n = strlen(s);
    /* A C string longer than INT32_MAX cannot be a Kafka string; clamp rather than wrap. */
    return (kc_str_t){s, n > (size_t)INT32_MAX ? INT32_MAX : (int32_t)n};
}

bool kc_str_eq(kc_str_t a, kc_str_t b)
{
    if (a.len < 0 || b.len < 0)
        return a.len < 0 && b.len < 0;
    if (a.len != b.len)
        return false;
    return a.len == 0 || memcmp(a.p, b.p, (size_t)a.len) == 0;
}

bool kc_str_eq_c(kc_str_t a, const char *s)
{
    if (a.len < 0 || s == NULL)
        return false;
    size_t n = strlen(s);
    return n == (size_t)a.len && (n == 0 || memcmp(a.p, s, n) == 0);
}

/* ---- reader ----------------------------------------------------------------------------- */

void kc_rd_init(kc_reader_t *r, const void *buf, size_t len)
{
    /* Never keep a NULL pointer: pointer arithmetic on NULL is undefined even with offset 0. */
    r->p = buf != NULL ? buf : empty_buf;
    r->end = r->p + (buf != NULL ? len : 0);
    r->err = KC_RD_OK;
}

void kc_rd_fail(kc_reader_t *r, int err)
{
    if (r->err == KC_RD_OK)
        r->err = err;
}

/* True when `n` more bytes can be read; otherwise fails the reader (if it has not already
 * failed) and returns false. */
static bool need(kc_reader_t *r, size_t n)
{
    if (r->err != KC_RD_OK)
        return false;
    if (n > kc_rd_remaining(r)) {
        kc_rd_fail(r, KC_RD_SHORT);
        return false;
    }
    return true;
}

bool kc_rd_bool(kc_reader_t *r)
{
    if (!need(r, 1))
        return false;
    return *r->p++ != 0;
}

int8_t kc_rd_i8(kc_reader_t *r)
{
    if (!need(r, 1))
        return 0;
    uint8_t b = *r->p++;
    return b <= INT8_MAX ? (int8_t)b : (int8_t)(-(int)(uint8_t)~b - 1);
}

uint16_t kc_rd_u16(kc_reader_t *r)
{
    if (!need(r, 2))
        return 0;
    uint16_t v = load16(r->p);
    r->p += 2;
    return v;
}

int16_t kc_rd_i16(kc_reader_t *r)
{
    uint16_t u = kc_rd_u16(r);
    return u <= INT16_MAX ? (int16_t)u : (int16_t)(-(int)(uint16_t)~u - 1);
}

uint32_t kc_rd_u32(kc_reader_t *r)
{
    if (!need(r, 4))
        return 0;
    uint32_t v = load32(r->p);
    r->p += 4;
    return v;
}

int32_t kc_rd_i32(kc_reader_t *r)
{
    return u32_to_i32(kc_rd_u32(r));
}

static uint64_t rd_u64(kc_reader_t *r)
{
    if (!need(r, 8))
        return 0;
    uint64_t v = load64(r->p);
    r->p += 8;
    return v;
}

int64_t kc_rd_i64(kc_reader_t *r)
{
    return u64_to_i64(rd_u64(r));
}

double kc_rd_f64(kc_reader_t *r)
{
    uint64_t u = rd_u64(r);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static const char uuid_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void kc_uuid_format(const kc_uuid_t *u, char out[23])
{
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (int i = 0; i < 16; i++) {
        acc = acc << 8 | u->b[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = uuid_b64[(acc >> bits) & 63];
        }
    }
    out[o++] = uuid_b64[(acc << (6 - bits)) & 63]; /* the last 2 bits */
    out[o] = '\0';
}

int kc_uuid_parse(const char *s, kc_uuid_t *u)
{
    memset(u, 0, sizeof(*u));
    if (strlen(s) != 22)
        return -1;
    uint32_t acc = 0;
    int bits = 0, o = 0;
    for (int i = 0; i < 22; i++) {
        const char *p = strchr(uuid_b64, s[i]);
        if (p == NULL) {
            memset(u, 0, sizeof(*u));
            return -1;
        }
        acc = acc << 6 | (uint32_t)(p - uuid_b64);
        bits += 6;
        if (bits >= 8 && o < 16) {
            bits -= 8;
            u->b[o++] = (uint8_t)(acc >> bits);
        }
    }
    return 0;
}

kc_uuid_t kc_rd_uuid(kc_reader_t *r)
{
    kc_uuid_t u;
    memset(&u, 0, sizeof u);
    if (!need(r, sizeof u.b))
        return u;
    memcpy(u.b, r->p, sizeof u.b);
    r->p += sizeof u.b;
    return u;
}

/* Read an unsigned varint of at most `max_bytes` bytes whose last possible byte may only carry
 * the bits in `last_mask`. On failure nothing is consumed and *out is 0. */
static bool rd_uvar(kc_reader_t *r, unsigned max_bytes, uint8_t last_mask, uint64_t *out)
{
    *out = 0;
    if (r->err != KC_RD_OK)
        return false;
    const uint8_t *p = r->p;
    uint64_t v = 0;
    for (unsigned i = 0; i < max_bytes; i++) {
        if (p == r->end) {
            kc_rd_fail(r, KC_RD_SHORT);
            return false;
        }
        uint8_t b = *p++;
        if (i == max_bytes - 1 && (b & (uint8_t)~last_mask) != 0) {
            kc_rd_fail(r, KC_RD_INVALID); /* over-long, or bits beyond the type */
            return false;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            r->p = p;
            *out = v;
            return true;
        }
    }
    /* Unreachable: the last byte's continuation bit is rejected by last_mask above. */
    kc_rd_fail(r, KC_RD_INVALID);
    return false;
}

uint32_t kc_rd_uvarint(kc_reader_t *r)
{
    uint64_t v;
    rd_uvar(r, 5, 0x0f, &v);
    return (uint32_t)v;
}

uint64_t kc_rd_uvarlong(kc_reader_t *r)
{
    uint64_t v;
    rd_uvar(r, 10, 0x01, &v);
    return v;
}

int32_t kc_rd_varint(kc_reader_t *r)
{
    return unzigzag32(kc_rd_uvarint(r));
}

int64_t kc_rd_varlong(kc_reader_t *r)
{
    return unzigzag64(kc_rd_uvarlong(r));
}

void kc_rd_skip(kc_reader_t *r, size_t n)
{
    if (need(r, n))
        r->p += n;
}

/* Finish a length-prefixed read whose length prefix started at `start` and was decoded as
 * `len` (-1 = null, as read from the wire). On success returns true with *p set to the body
 * (NULL for null) and the reader past it; on failure restores the reader to `start`. */
static bool rd_body(kc_reader_t *r, const uint8_t *start, int64_t len, bool nullable,
                    const uint8_t **p)
{
    *p = NULL;
    if (r->err != KC_RD_OK)
        return false;
    if (len == -1 && nullable)
        return true;
    if (len < 0 || len > INT32_MAX) {
        r->p = start;
        kc_rd_fail(r, KC_RD_INVALID);
        return false;
    }
    if ((uint64_t)len > kc_rd_remaining(r)) {
        r->p = start;
        kc_rd_fail(r, KC_RD_SHORT);
        return false;
    }
    *p = r->p;
    r->p += len;
    return true;
}

kc_str_t kc_rd_str(kc_reader_t *r, bool nullable)
{
    const uint8_t *start = r->p, *p;
    int64_t len = kc_rd_i16(r);
    if (!rd_body(r, start, len, nullable, &p))
        return str_zero();
    if (p == NULL)
        return KC_STR_NULL;
    return (kc_str_t){(const char *)p, (int32_t)len};
}

kc_str_t kc_rd_cstr(kc_reader_t *r, bool nullable)
{
    const uint8_t *start = r->p, *p;
    int64_t len = (int64_t)kc_rd_uvarint(r) - 1;
    if (!rd_body(r, start, len, nullable, &p))
        return str_zero();
    if (p == NULL)
        return KC_STR_NULL;
    return (kc_str_t){(const char *)p, (int32_t)len};
}

kc_bytes_t kc_rd_bytes(kc_reader_t *r, bool nullable)
{
    const uint8_t *start = r->p, *p;
    int64_t len = kc_rd_i32(r);
    if (!rd_body(r, start, len, nullable, &p))
        return bytes_zero();
    if (p == NULL)
        return KC_BYTES_NULL;
    return (kc_bytes_t){p, (int32_t)len};
}

kc_bytes_t kc_rd_cbytes(kc_reader_t *r, bool nullable)
{
    const uint8_t *start = r->p, *p;
    int64_t len = (int64_t)kc_rd_uvarint(r) - 1;
    if (!rd_body(r, start, len, nullable, &p))
        return bytes_zero();
    if (p == NULL)
        return KC_BYTES_NULL;
    return (kc_bytes_t){p, (int32_t)len};
}

/* Validate an array count read from `start` (-1 = null). Returns the count, -1 for an allowed
 * null, or 0 after failing the reader and restoring it to `start`. */
static int32_t array_len(kc_reader_t *r, const uint8_t *start, int64_t n, bool nullable,
                         size_t min_elem_size)
{
    if (r->err != KC_RD_OK)
        return 0;
    if (n == -1 && nullable)
        return -1;
    if (min_elem_size == 0)
        min_elem_size = 1;
    if (n < 0 || n > INT32_MAX || (uint64_t)n > kc_rd_remaining(r) / min_elem_size) {
        r->p = start;
        kc_rd_fail(r, KC_RD_INVALID);
        return 0;
    }
    return (int32_t)n;
}

int32_t kc_rd_array_len(kc_reader_t *r, bool nullable, size_t min_elem_size)
{
    const uint8_t *start = r->p;
    int64_t n = kc_rd_i32(r);
    return array_len(r, start, n, nullable, min_elem_size);
}

int32_t kc_rd_carray_len(kc_reader_t *r, bool nullable, size_t min_elem_size)
{
    const uint8_t *start = r->p;
    int64_t n = (int64_t)kc_rd_uvarint(r) - 1;
    return array_len(r, start, n, nullable, min_elem_size);
}

void *kc_rd_alloc_array(kc_reader_t *r, kc_arena_t *a, int32_t n, size_t size)
{
    if (r->err != KC_RD_OK || n <= 0)
        return NULL;
    if (size != 0 && (size_t)n > SIZE_MAX / size) {
        kc_rd_fail(r, KC_RD_NOMEM);
        return NULL;
    }
    void *p = kc_arena_alloc(a, (size_t)n * size);
    if (p == NULL)
        kc_rd_fail(r, KC_RD_NOMEM);
    return p;
}

kc_reader_t kc_rd_sub(kc_reader_t *r, size_t n)
{
    kc_reader_t s;
    if (need(r, n)) {
        s.p = r->p;
        s.end = r->p + n;
        s.err = KC_RD_OK;
        r->p += n;
    } else {
        /* A failed sub-reader is empty and carries the parent's error, so reads from it
         * return zero values too. */
        s.p = r->p;
        s.end = r->p;
        s.err = r->err;
    }
    return s;
}

void kc_rd_skip_tags(kc_reader_t *r)
{
    const uint8_t *start = r->p;
    uint32_t n = kc_rd_uvarint(r);
    if (r->err != KC_RD_OK)
        return;
    /* Each field takes at least two bytes (tag and size), so validate the count first. */
    if (n > kc_rd_remaining(r) / 2) {
        r->p = start;
        kc_rd_fail(r, KC_RD_INVALID);
        return;
    }
    for (uint32_t i = 0; i < n && r->err == KC_RD_OK; i++) {
        (void)kc_rd_uvarint(r); /* tag */
        kc_rd_skip(r, kc_rd_uvarint(r));
    }
    if (r->err != KC_RD_OK)
        r->p = start; /* a failed call consumes nothing */
}

/* ---- writer ----------------------------------------------------------------------------- */

void kc_wr_init(kc_writer_t *w)
{
    w->buf = NULL;
    w->len = 0;
    w->cap = 0;
    w->err = 0;
}

void kc_wr_free(kc_writer_t *w)
{
    free(w->buf);
    kc_wr_init(w);
}

uint8_t *kc_wr_steal(kc_writer_t *w, size_t *len)
{
    uint8_t *buf = w->buf;
    if (len != NULL)
        *len = w->len;
    kc_wr_init(w);
    return buf;
}

bool kc_wr_reserve(kc_writer_t *w, size_t n)
{
    if (w->err)
        return false;
    if (n <= w->cap - w->len)
        return true;
    if (n > SIZE_MAX - w->len) {
        w->err = 1;
        return false;
    }
    size_t want = w->len + n;
    size_t cap = w->cap != 0 ? w->cap : WR_INITIAL_CAP;
    while (cap < want)
        cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    uint8_t *buf = realloc(w->buf, cap);
    if (buf == NULL) {
        w->err = 1;
        return false;
    }
    w->buf = buf;
    w->cap = cap;
    return true;
}

void kc_wr_raw(kc_writer_t *w, const void *p, size_t n)
{
    if (n == 0 || !kc_wr_reserve(w, n))
        return;
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

/* Append the low `n` bytes of v, most significant first. */
static void wr_be(kc_writer_t *w, uint64_t v, unsigned n)
{
    if (!kc_wr_reserve(w, n))
        return;
    for (unsigned i = 0; i < n; i++)
        w->buf[w->len + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    w->len += n;
}

void kc_wr_bool(kc_writer_t *w, bool v)
{
    wr_be(w, v ? 1 : 0, 1);
}
void kc_wr_i8(kc_writer_t *w, int8_t v)
{
    wr_be(w, (uint8_t)v, 1);
}
void kc_wr_i16(kc_writer_t *w, int16_t v)
{
    wr_be(w, (uint16_t)v, 2);
}
void kc_wr_u16(kc_writer_t *w, uint16_t v)
{
    wr_be(w, v, 2);
}
void kc_wr_i32(kc_writer_t *w, int32_t v)
{
    wr_be(w, (uint32_t)v, 4);
}
void kc_wr_u32(kc_writer_t *w, uint32_t v)
{
    wr_be(w, v, 4);
}
void kc_wr_i64(kc_writer_t *w, int64_t v)
{
    wr_be(w, (uint64_t)v, 8);
}

void kc_wr_f64(kc_writer_t *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    wr_be(w, u, 8);
}

void kc_wr_uuid(kc_writer_t *w, kc_uuid_t v)
{
    kc_wr_raw(w, v.b, sizeof v.b);
}

void kc_wr_uvarlong(kc_writer_t *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    kc_wr_raw(w, tmp, n);
}

void kc_wr_uvarint(kc_writer_t *w, uint32_t v)
{
    kc_wr_uvarlong(w, v);
}
void kc_wr_varint(kc_writer_t *w, int32_t v)
{
    kc_wr_uvarlong(w, zigzag32(v));
}
void kc_wr_varlong(kc_writer_t *w, int64_t v)
{
    kc_wr_uvarlong(w, zigzag64(v));
}

void kc_wr_str(kc_writer_t *w, kc_str_t s)
{
    if (s.len < 0) {
        kc_wr_i16(w, -1);
        return;
    }
    if (s.len > INT16_MAX) {
        w->err = 1; /* cannot be encoded with an int16 length */
        return;
    }
    kc_wr_i16(w, (int16_t)s.len);
    kc_wr_raw(w, s.p, (size_t)s.len);
}

void kc_wr_cstr(kc_writer_t *w, kc_str_t s)
{
    if (s.len < 0) {
        kc_wr_uvarint(w, 0);
        return;
    }
    kc_wr_uvarint(w, (uint32_t)s.len + 1);
    kc_wr_raw(w, s.p, (size_t)s.len);
}

void kc_wr_bytes(kc_writer_t *w, kc_bytes_t b)
{
    if (b.len < 0) {
        kc_wr_i32(w, -1);
        return;
    }
    kc_wr_i32(w, b.len);
    kc_wr_raw(w, b.p, (size_t)b.len);
}

void kc_wr_cbytes(kc_writer_t *w, kc_bytes_t b)
{
    if (b.len < 0) {
        kc_wr_uvarint(w, 0);
        return;
    }
    kc_wr_uvarint(w, (uint32_t)b.len + 1);
    kc_wr_raw(w, b.p, (size_t)b.len);
}

void kc_wr_array_len(kc_writer_t *w, int32_t n)
{
    kc_wr_i32(w, n < 0 ? -1 : n);
}

void kc_wr_carray_len(kc_writer_t *w, int32_t n)
{
    kc_wr_uvarint(w, n < 0 ? 0 : (uint32_t)n + 1);
}

void kc_wr_patch_i32(kc_writer_t *w, size_t pos, int32_t v)
{
    if (w->err)
        return;
    if (pos > w->len || w->len - pos < 4) {
        w->err = 1; /* a position that was never written: a caller bug, made visible */
        return;
    }
    store32(w->buf + pos, (uint32_t)v);
}

/* ---- sizes ------------------------------------------------------------------------------ */

size_t kc_uvarlong_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t kc_uvarint_size(uint32_t v)
{
    return kc_uvarlong_size(v);
}
size_t kc_varint_size(int32_t v)
{
    return kc_uvarlong_size(zigzag32(v));
}
size_t kc_varlong_size(int64_t v)
{
    return kc_uvarlong_size(zigzag64(v));
}
