/* test_wire.c - unit tests for the Kafka wire primitives in src/proto/wire.c.
 *
 * Every primitive is checked three ways: exact bytes on the wire, a round trip through the
 * writer and the reader, and its failure modes (short input, invalid values, the sticky error).
 * The composite test truncates one buffer holding every kind of value at each byte and checks
 * that the reader fails, never advances after failing and returns zero values from then on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* Assert that the writer holds exactly the `n` bytes at `want`, then empty it. */
static void expect_bytes(kc_writer_t *w, const void *want, size_t n)
{
    assert_int_equal(w->err, 0);
    assert_int_equal(w->len, n);
    if (n > 0)
        assert_memory_equal(w->buf, want, n);
    w->len = 0;
}

#define EXPECT_WIRE(w, ...)                                                                        \
    do {                                                                                           \
        const uint8_t want_[] = {__VA_ARGS__};                                                     \
        expect_bytes((w), want_, sizeof want_);                                                    \
    } while (0)

static void rd_from(kc_reader_t *r, const kc_writer_t *w)
{
    kc_rd_init(r, w->buf, w->len);
}

/* ---- fixed-width integers --------------------------------------------------------------- */

static void test_fixed_exact_bytes(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);

    kc_wr_bool(&w, true);
    kc_wr_bool(&w, false);
    EXPECT_WIRE(&w, 0x01, 0x00);
    kc_wr_i8(&w, -1);
    kc_wr_i8(&w, INT8_MIN);
    EXPECT_WIRE(&w, 0xff, 0x80);
    kc_wr_i16(&w, -2);
    kc_wr_i16(&w, 0x1234);
    EXPECT_WIRE(&w, 0xff, 0xfe, 0x12, 0x34);
    kc_wr_u16(&w, 0xbeef);
    EXPECT_WIRE(&w, 0xbe, 0xef);
    kc_wr_i32(&w, 0x01020304);
    kc_wr_i32(&w, INT32_MIN);
    EXPECT_WIRE(&w, 0x01, 0x02, 0x03, 0x04, 0x80, 0x00, 0x00, 0x00);
    kc_wr_u32(&w, 0xdeadbeef);
    EXPECT_WIRE(&w, 0xde, 0xad, 0xbe, 0xef);
    kc_wr_i64(&w, 1);
    EXPECT_WIRE(&w, 0, 0, 0, 0, 0, 0, 0, 1);
    kc_wr_i64(&w, INT64_MIN);
    EXPECT_WIRE(&w, 0x80, 0, 0, 0, 0, 0, 0, 0);
    kc_wr_f64(&w, 1.0);
    EXPECT_WIRE(&w, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
    kc_uuid_t u;
    for (int i = 0; i < 16; i++)
        u.b[i] = (uint8_t)i;
    kc_wr_uuid(&w, u);
    EXPECT_WIRE(&w, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

    kc_wr_free(&w);
}

static void test_fixed_round_trip(void **state)
{
    (void)state;
    static const int8_t i8s[] = {0, 1, -1, INT8_MIN, INT8_MAX};
    static const int16_t i16s[] = {0, 1, -1, INT16_MIN, INT16_MAX};
    static const uint16_t u16s[] = {0, 1, 0x8000, UINT16_MAX};
    static const int32_t i32s[] = {0, 1, -1, INT32_MIN, INT32_MAX};
    static const uint32_t u32s[] = {0, 1, 0x80000000u, UINT32_MAX};
    static const int64_t i64s[] = {0, 1, -1, INT64_MIN, INT64_MAX};
    static const double f64s[] = {0.0, -0.5, 3.141592653589793, 1e300, -1e-300};
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_bool(&w, true);
    kc_wr_bool(&w, false);
    for (size_t i = 0; i < sizeof i8s / sizeof i8s[0]; i++)
        kc_wr_i8(&w, i8s[i]);
    for (size_t i = 0; i < sizeof i16s / sizeof i16s[0]; i++)
        kc_wr_i16(&w, i16s[i]);
    for (size_t i = 0; i < sizeof u16s / sizeof u16s[0]; i++)
        kc_wr_u16(&w, u16s[i]);
    for (size_t i = 0; i < sizeof i32s / sizeof i32s[0]; i++)
        kc_wr_i32(&w, i32s[i]);
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++)
        kc_wr_u32(&w, u32s[i]);
    for (size_t i = 0; i < sizeof i64s / sizeof i64s[0]; i++)
        kc_wr_i64(&w, i64s[i]);
    for (size_t i = 0; i < sizeof f64s / sizeof f64s[0]; i++)
        kc_wr_f64(&w, f64s[i]);
    kc_uuid_t u;
    for (int i = 0; i < 16; i++)
        u.b[i] = (uint8_t)(0xf0 + i);
    kc_wr_uuid(&w, u);
    assert_int_equal(w.err, 0);

    kc_reader_t r;
    rd_from(&r, &w);
    assert_true(kc_rd_bool(&r));
    assert_false(kc_rd_bool(&r));
    for (size_t i = 0; i < sizeof i8s / sizeof i8s[0]; i++)
        assert_int_equal(kc_rd_i8(&r), i8s[i]);
    for (size_t i = 0; i < sizeof i16s / sizeof i16s[0]; i++)
        assert_int_equal(kc_rd_i16(&r), i16s[i]);
    for (size_t i = 0; i < sizeof u16s / sizeof u16s[0]; i++)
        assert_int_equal(kc_rd_u16(&r), u16s[i]);
    for (size_t i = 0; i < sizeof i32s / sizeof i32s[0]; i++)
        assert_int_equal(kc_rd_i32(&r), i32s[i]);
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++)
        assert_int_equal(kc_rd_u32(&r), u32s[i]);
    for (size_t i = 0; i < sizeof i64s / sizeof i64s[0]; i++)
        assert_true(kc_rd_i64(&r) == i64s[i]);
    for (size_t i = 0; i < sizeof f64s / sizeof f64s[0]; i++)
        assert_true(kc_rd_f64(&r) == f64s[i]);
    kc_uuid_t got = kc_rd_uuid(&r);
    assert_memory_equal(got.b, u.b, 16);
    assert_int_equal(r.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);
    kc_wr_free(&w);
}

static void test_bool_nonzero_is_true(void **state)
{
    (void)state;
    const uint8_t buf[] = {0x02, 0xff};
    kc_reader_t r;
    kc_rd_init(&r, buf, sizeof buf);
    assert_true(kc_rd_bool(&r));
    assert_true(kc_rd_bool(&r));
    assert_int_equal(r.err, KC_RD_OK);
}

static void test_fixed_short(void **state)
{
    (void)state;
    const uint8_t buf[7] = {1, 2, 3, 4, 5, 6, 7};
    kc_reader_t r;

    kc_rd_init(&r, buf, 1);
    assert_int_equal(kc_rd_i16(&r), 0);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf);

    kc_rd_init(&r, buf, 3);
    assert_int_equal(kc_rd_i32(&r), 0);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf);

    kc_rd_init(&r, buf, 7);
    assert_true(kc_rd_i64(&r) == 0);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf);

    kc_rd_init(&r, buf, 7);
    assert_true(kc_rd_f64(&r) == 0.0);
    assert_int_equal(r.err, KC_RD_SHORT);

    kc_rd_init(&r, buf, 7);
    kc_uuid_t u = kc_rd_uuid(&r);
    const uint8_t zero[16] = {0};
    assert_memory_equal(u.b, zero, 16);
    assert_int_equal(r.err, KC_RD_SHORT);

    kc_rd_init(&r, NULL, 0);
    assert_int_equal(kc_rd_remaining(&r), 0);
    assert_false(kc_rd_bool(&r));
    assert_int_equal(r.err, KC_RD_SHORT);
}

static void test_sticky_error(void **state)
{
    (void)state;
    const uint8_t buf[] = {0, 0, 0, 7, 0, 1};
    kc_reader_t r;
    kc_rd_init(&r, buf, sizeof buf);
    kc_rd_fail(&r, KC_RD_INVALID);
    kc_rd_fail(&r, KC_RD_SHORT); /* the first error stays */
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_int_equal(kc_rd_i32(&r), 0);
    assert_int_equal(kc_rd_i16(&r), 0);
    kc_rd_skip(&r, 1);
    assert_ptr_equal(r.p, buf);
    assert_int_equal(r.err, KC_RD_INVALID);
}

static void test_skip(void **state)
{
    (void)state;
    const uint8_t buf[] = {1, 2, 3, 4};
    kc_reader_t r;
    kc_rd_init(&r, buf, sizeof buf);
    kc_rd_skip(&r, 0);
    kc_rd_skip(&r, 3);
    assert_int_equal(kc_rd_i8(&r), 4);
    kc_rd_skip(&r, 1);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf + 4);

    kc_rd_init(&r, buf, sizeof buf);
    kc_rd_skip(&r, SIZE_MAX);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf);
}

/* ---- varints ---------------------------------------------------------------------------- */

struct uvar_case {
    uint64_t v;
    uint8_t bytes[10];
    size_t n;
};

static void test_uvarint_encodings(void **state)
{
    (void)state;
    static const struct uvar_case cases[] = {
        {0, {0x00}, 1},
        {1, {0x01}, 1},
        {127, {0x7f}, 1},
        {128, {0x80, 0x01}, 2},
        {300, {0xac, 0x02}, 2},
        {16383, {0xff, 0x7f}, 2},
        {16384, {0x80, 0x80, 0x01}, 3},
        {0x0fffffff, {0xff, 0xff, 0xff, 0x7f}, 4},
        {0x10000000, {0x80, 0x80, 0x80, 0x80, 0x01}, 5},
        {UINT32_MAX, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
    };
    kc_writer_t w;
    kc_wr_init(&w);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t v = (uint32_t)cases[i].v;
        assert_int_equal(kc_uvarint_size(v), cases[i].n);
        assert_int_equal(kc_uvarlong_size(v), cases[i].n);
        kc_wr_uvarint(&w, v);
        assert_int_equal(w.len, cases[i].n);
        assert_memory_equal(w.buf, cases[i].bytes, cases[i].n);

        kc_reader_t r;
        rd_from(&r, &w);
        assert_int_equal(kc_rd_uvarint(&r), v);
        assert_int_equal(r.err, KC_RD_OK);
        assert_int_equal(kc_rd_remaining(&r), 0);
        rd_from(&r, &w);
        assert_true(kc_rd_uvarlong(&r) == v);
        assert_int_equal(kc_rd_remaining(&r), 0);
        w.len = 0;
    }
    kc_wr_free(&w);
}

static void test_uvarlong_encodings(void **state)
{
    (void)state;
    static const struct uvar_case cases[] = {
        {0, {0x00}, 1},
        {300, {0xac, 0x02}, 2},
        {UINT64_C(0x100000000), {0x80, 0x80, 0x80, 0x80, 0x10}, 5},
        {UINT64_C(0x7fffffffffffffff), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 9},
        {UINT64_C(0x8000000000000000),
         {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
         10},
        {UINT64_MAX, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
    };
    kc_writer_t w;
    kc_wr_init(&w);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(kc_uvarlong_size(cases[i].v), cases[i].n);
        kc_wr_uvarlong(&w, cases[i].v);
        assert_int_equal(w.len, cases[i].n);
        assert_memory_equal(w.buf, cases[i].bytes, cases[i].n);
        kc_reader_t r;
        rd_from(&r, &w);
        assert_true(kc_rd_uvarlong(&r) == cases[i].v);
        assert_int_equal(r.err, KC_RD_OK);
        assert_int_equal(kc_rd_remaining(&r), 0);
        w.len = 0;
    }
    kc_wr_free(&w);
}

static void test_varint_zigzag(void **state)
{
    (void)state;
    static const struct {
        int32_t v;
        uint8_t bytes[5];
        size_t n;
    } cases[] = {
        {0, {0x00}, 1},
        {-1, {0x01}, 1},
        {1, {0x02}, 1},
        {-2, {0x03}, 1},
        {2, {0x04}, 1},
        {-64, {0x7f}, 1},
        {64, {0x80, 0x01}, 2},
        {150, {0xac, 0x02}, 2},
        {INT32_MAX, {0xfe, 0xff, 0xff, 0xff, 0x0f}, 5},
        {INT32_MIN, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
    };
    kc_writer_t w;
    kc_wr_init(&w);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(kc_varint_size(cases[i].v), cases[i].n);
        assert_int_equal(kc_varlong_size(cases[i].v), cases[i].n);
        kc_wr_varint(&w, cases[i].v);
        assert_int_equal(w.len, cases[i].n);
        assert_memory_equal(w.buf, cases[i].bytes, cases[i].n);
        kc_reader_t r;
        rd_from(&r, &w);
        assert_int_equal(kc_rd_varint(&r), cases[i].v);
        assert_int_equal(r.err, KC_RD_OK);
        assert_int_equal(kc_rd_remaining(&r), 0);
        /* A 32-bit value as a varlong has the same encoding. */
        rd_from(&r, &w);
        assert_true(kc_rd_varlong(&r) == cases[i].v);
        w.len = 0;
    }
    kc_wr_free(&w);
}

static void test_varlong_zigzag(void **state)
{
    (void)state;
    static const int64_t vals[] = {0,         -1,        1,         INT32_MIN,
                                   INT32_MAX, INT64_MIN, INT64_MAX, -1234567890123LL};
    kc_writer_t w;
    kc_wr_init(&w);

    kc_wr_varlong(&w, INT64_MAX);
    EXPECT_WIRE(&w, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
    kc_wr_varlong(&w, INT64_MIN);
    EXPECT_WIRE(&w, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
    kc_wr_varlong(&w, -1);
    EXPECT_WIRE(&w, 0x01);

    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        kc_wr_varlong(&w, vals[i]);
    kc_reader_t r;
    rd_from(&r, &w);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const uint8_t *before = r.p;
        assert_true(kc_rd_varlong(&r) == vals[i]);
        assert_int_equal((size_t)(r.p - before), kc_varlong_size(vals[i]));
    }
    assert_int_equal(r.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);
    kc_wr_free(&w);
}

/* Expect reading the given bytes as a 32-bit uvarint to fail with `err` without advancing. */
static void expect_uvarint_fail(const uint8_t *buf, size_t n, int err)
{
    kc_reader_t r;
    kc_rd_init(&r, buf, n);
    assert_int_equal(kc_rd_uvarint(&r), 0);
    assert_int_equal(r.err, err);
    assert_ptr_equal(r.p, buf);
    kc_rd_init(&r, buf, n);
    assert_int_equal(kc_rd_varint(&r), 0);
    assert_int_equal(r.err, err);
    assert_ptr_equal(r.p, buf);
}

static void expect_uvarlong_fail(const uint8_t *buf, size_t n, int err)
{
    kc_reader_t r;
    kc_rd_init(&r, buf, n);
    assert_true(kc_rd_uvarlong(&r) == 0);
    assert_int_equal(r.err, err);
    assert_ptr_equal(r.p, buf);
    kc_rd_init(&r, buf, n);
    assert_true(kc_rd_varlong(&r) == 0);
    assert_int_equal(r.err, err);
    assert_ptr_equal(r.p, buf);
}

static void test_varint_invalid(void **state)
{
    (void)state;
    /* Over-long: a sixth byte would be needed. */
    const uint8_t over6[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    expect_uvarint_fail(over6, sizeof over6, KC_RD_INVALID);
    /* The continuation bit on the 5th byte is over-long even if the input ends there. */
    expect_uvarint_fail(over6, 5, KC_RD_INVALID);
    /* Bits beyond 32 in the 5th byte. */
    const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0x10};
    expect_uvarint_fail(big, sizeof big, KC_RD_INVALID);
    const uint8_t big2[] = {0x80, 0x80, 0x80, 0x80, 0x70};
    expect_uvarint_fail(big2, sizeof big2, KC_RD_INVALID);
    /* Input ends inside the varint. */
    const uint8_t trunc[] = {0x80, 0x80};
    expect_uvarint_fail(trunc, sizeof trunc, KC_RD_SHORT);
    expect_uvarint_fail(trunc, 0, KC_RD_SHORT);

    /* 64-bit: eleven bytes, and a 10th byte with more than bit 63. */
    const uint8_t over11[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    expect_uvarlong_fail(over11, sizeof over11, KC_RD_INVALID);
    const uint8_t big64[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    expect_uvarlong_fail(big64, sizeof big64, KC_RD_INVALID);
    expect_uvarlong_fail(big64, 9, KC_RD_SHORT);

    /* A non-minimal encoding within the byte limit is accepted, as protobuf does. */
    const uint8_t padded[] = {0x80, 0x00};
    kc_reader_t r;
    kc_rd_init(&r, padded, sizeof padded);
    assert_int_equal(kc_rd_uvarint(&r), 0);
    assert_int_equal(r.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);
}

static void test_varint_sizes_match_writer(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    for (int shift = 0; shift < 64; shift++) {
        uint64_t base = UINT64_C(1) << shift;
        uint64_t vals[] = {base - 1, base, base + 1};
        for (size_t i = 0; i < 3; i++) {
            kc_wr_uvarlong(&w, vals[i]);
            assert_int_equal(w.len, kc_uvarlong_size(vals[i]));
            w.len = 0;
            kc_wr_varlong(&w, (int64_t)vals[i]);
            assert_int_equal(w.len, kc_varlong_size((int64_t)vals[i]));
            w.len = 0;
            if (vals[i] <= UINT32_MAX) {
                kc_wr_uvarint(&w, (uint32_t)vals[i]);
                assert_int_equal(w.len, kc_uvarint_size((uint32_t)vals[i]));
                w.len = 0;
                kc_wr_varint(&w, (int32_t)(uint32_t)vals[i]);
                assert_int_equal(w.len, kc_varint_size((int32_t)(uint32_t)vals[i]));
                w.len = 0;
            }
        }
    }
    kc_wr_free(&w);
}

/* ---- strings and bytes ------------------------------------------------------------------ */

static void test_str_helpers(void **state)
{
    (void)state;
    kc_str_t n = kc_str_c(NULL);
    assert_int_equal(n.len, -1);
    assert_null(n.p);
    kc_str_t ab = kc_str_c("ab");
    assert_int_equal(ab.len, 2);
    assert_true(kc_str_eq(ab, KC_STR_LIT("ab")));
    assert_false(kc_str_eq(ab, KC_STR_LIT("abc")));
    assert_false(kc_str_eq(ab, KC_STR_LIT("ac")));
    assert_true(kc_str_eq(KC_STR_NULL, KC_STR_NULL));
    assert_false(kc_str_eq(KC_STR_NULL, KC_STR_EMPTY));
    assert_false(kc_str_eq(KC_STR_EMPTY, KC_STR_NULL));
    assert_true(kc_str_eq(KC_STR_EMPTY, (kc_str_t){NULL, 0}));
    assert_true(kc_str_eq_c(ab, "ab"));
    assert_false(kc_str_eq_c(ab, "a"));
    assert_false(kc_str_eq_c(ab, "abc"));
    assert_true(kc_str_eq_c(KC_STR_EMPTY, ""));
    assert_false(kc_str_eq_c(KC_STR_NULL, ""));
    assert_false(kc_str_eq_c(ab, NULL));
}

static void test_str_encodings(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_str(&w, KC_STR_NULL);
    EXPECT_WIRE(&w, 0xff, 0xff);
    kc_wr_str(&w, KC_STR_EMPTY);
    EXPECT_WIRE(&w, 0x00, 0x00);
    kc_wr_str(&w, (kc_str_t){NULL, 0}); /* empty, not null */
    EXPECT_WIRE(&w, 0x00, 0x00);
    kc_wr_str(&w, KC_STR_LIT("abc"));
    EXPECT_WIRE(&w, 0x00, 0x03, 'a', 'b', 'c');
    kc_wr_cstr(&w, KC_STR_NULL);
    EXPECT_WIRE(&w, 0x00);
    kc_wr_cstr(&w, KC_STR_EMPTY);
    EXPECT_WIRE(&w, 0x01);
    kc_wr_cstr(&w, KC_STR_LIT("abc"));
    EXPECT_WIRE(&w, 0x04, 'a', 'b', 'c');
    kc_wr_bytes(&w, KC_BYTES_NULL);
    EXPECT_WIRE(&w, 0xff, 0xff, 0xff, 0xff);
    kc_wr_bytes(&w, (kc_bytes_t){(const uint8_t *)"", 0});
    EXPECT_WIRE(&w, 0x00, 0x00, 0x00, 0x00);
    kc_wr_bytes(&w, (kc_bytes_t){(const uint8_t *)"\x01\x02", 2});
    EXPECT_WIRE(&w, 0x00, 0x00, 0x00, 0x02, 0x01, 0x02);
    kc_wr_cbytes(&w, KC_BYTES_NULL);
    EXPECT_WIRE(&w, 0x00);
    kc_wr_cbytes(&w, (kc_bytes_t){NULL, 0});
    EXPECT_WIRE(&w, 0x01);
    kc_wr_cbytes(&w, (kc_bytes_t){(const uint8_t *)"\x01\x02", 2});
    EXPECT_WIRE(&w, 0x03, 0x01, 0x02);

    /* A compact string of 127 bytes needs a two-byte length (128 = 80 01). */
    char big[127];
    memset(big, 'x', sizeof big);
    kc_wr_cstr(&w, (kc_str_t){big, (int32_t)sizeof big});
    assert_int_equal(w.len, 2 + sizeof big);
    assert_int_equal(w.buf[0], 0x80);
    assert_int_equal(w.buf[1], 0x01);
    kc_wr_free(&w);
}

static void test_str_too_long_for_classic(void **state)
{
    (void)state;
    char *big = malloc(INT16_MAX + 1);
    assert_non_null(big);
    memset(big, 'y', INT16_MAX + 1);
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_str(&w, (kc_str_t){big, INT16_MAX});
    assert_int_equal(w.err, 0);
    assert_int_equal(w.len, 2 + INT16_MAX);
    kc_wr_str(&w, (kc_str_t){big, INT16_MAX + 1});
    assert_int_not_equal(w.err, 0);
    assert_int_equal(w.len, 2 + INT16_MAX);
    kc_wr_free(&w);
    free(big);
}

static void test_str_read(void **state)
{
    (void)state;
    kc_reader_t r;
    kc_str_t s;

    /* Classic null: allowed when nullable, invalid otherwise. */
    const uint8_t null16[] = {0xff, 0xff};
    kc_rd_init(&r, null16, sizeof null16);
    s = kc_rd_str(&r, true);
    assert_int_equal(s.len, -1);
    assert_null(s.p);
    assert_int_equal(r.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);
    kc_rd_init(&r, null16, sizeof null16);
    s = kc_rd_str(&r, false);
    assert_int_equal(s.len, 0);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, null16);

    /* Classic empty: not null. */
    const uint8_t empty16[] = {0x00, 0x00};
    kc_rd_init(&r, empty16, sizeof empty16);
    s = kc_rd_str(&r, false);
    assert_int_equal(s.len, 0);
    assert_non_null(s.p);
    assert_true(kc_str_eq_c(s, ""));
    assert_int_equal(r.err, KC_RD_OK);

    /* Classic value, then a length below -1, then a length past the end. */
    const uint8_t abc[] = {0x00, 0x03, 'a', 'b', 'c', 0xff, 0xfe};
    kc_rd_init(&r, abc, sizeof abc);
    s = kc_rd_str(&r, false);
    assert_true(kc_str_eq_c(s, "abc"));
    assert_ptr_equal(s.p, abc + 2); /* a view, not a copy */
    s = kc_rd_str(&r, true);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, abc + 5);
    kc_rd_init(&r, abc, 4);
    s = kc_rd_str(&r, true);
    assert_int_equal(s.len, 0);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, abc);

    /* Compact: 0 = null, 1 = empty, n+1. */
    const uint8_t cnull[] = {0x00};
    kc_rd_init(&r, cnull, sizeof cnull);
    s = kc_rd_cstr(&r, true);
    assert_int_equal(s.len, -1);
    assert_null(s.p);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, cnull, sizeof cnull);
    s = kc_rd_cstr(&r, false);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, cnull);
    const uint8_t cempty[] = {0x01, 0x04, 'x', 'y', 'z'};
    kc_rd_init(&r, cempty, sizeof cempty);
    s = kc_rd_cstr(&r, false);
    assert_int_equal(s.len, 0);
    assert_non_null(s.p);
    s = kc_rd_cstr(&r, false);
    assert_true(kc_str_eq_c(s, "xyz"));
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, cempty + 1, 3);
    s = kc_rd_cstr(&r, true);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, cempty + 1);

    /* Compact length UINT32_MAX - 1 does not fit int32: invalid. */
    const uint8_t chuge[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 'a'};
    kc_rd_init(&r, chuge, sizeof chuge);
    s = kc_rd_cstr(&r, true);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, chuge);
    /* Compact length INT32_MAX fits but is short. */
    const uint8_t cbig[] = {0x80, 0x80, 0x80, 0x80, 0x08, 'a'};
    kc_rd_init(&r, cbig, sizeof cbig);
    s = kc_rd_cstr(&r, true);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, cbig);
}

static void test_bytes_read(void **state)
{
    (void)state;
    kc_reader_t r;
    kc_bytes_t b;

    const uint8_t null32[] = {0xff, 0xff, 0xff, 0xff};
    kc_rd_init(&r, null32, sizeof null32);
    b = kc_rd_bytes(&r, true);
    assert_int_equal(b.len, -1);
    assert_null(b.p);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, null32, sizeof null32);
    b = kc_rd_bytes(&r, false);
    assert_int_equal(b.len, 0);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, null32);

    const uint8_t neg[] = {0xff, 0xff, 0xff, 0xfe};
    kc_rd_init(&r, neg, sizeof neg);
    b = kc_rd_bytes(&r, true);
    assert_int_equal(r.err, KC_RD_INVALID);

    const uint8_t vals[] = {0, 0, 0, 0, 0, 0, 0, 2, 9, 8};
    kc_rd_init(&r, vals, sizeof vals);
    b = kc_rd_bytes(&r, false);
    assert_int_equal(b.len, 0);
    assert_non_null(b.p);
    b = kc_rd_bytes(&r, false);
    assert_int_equal(b.len, 2);
    assert_ptr_equal(b.p, vals + 8);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, vals + 4, 5);
    b = kc_rd_bytes(&r, false);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, vals + 4);

    const uint8_t cvals[] = {0x00, 0x01, 0x03, 7, 6};
    kc_rd_init(&r, cvals, sizeof cvals);
    b = kc_rd_cbytes(&r, true);
    assert_int_equal(b.len, -1);
    b = kc_rd_cbytes(&r, true);
    assert_int_equal(b.len, 0);
    assert_non_null(b.p);
    b = kc_rd_cbytes(&r, true);
    assert_int_equal(b.len, 2);
    assert_int_equal(b.p[0], 7);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, cvals, sizeof cvals);
    b = kc_rd_cbytes(&r, false);
    assert_int_equal(r.err, KC_RD_INVALID);
    kc_rd_init(&r, cvals + 2, 2);
    b = kc_rd_cbytes(&r, false);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, cvals + 2);
}

static void test_str_bytes_round_trip(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_str(&w, KC_STR_LIT("group-1"));
    kc_wr_str(&w, KC_STR_NULL);
    kc_wr_cstr(&w, KC_STR_LIT("consumer"));
    kc_wr_cstr(&w, KC_STR_NULL);
    kc_wr_cstr(&w, KC_STR_EMPTY);
    kc_wr_bytes(&w, (kc_bytes_t){(const uint8_t *)"\0\1\2", 3});
    kc_wr_cbytes(&w, (kc_bytes_t){(const uint8_t *)"\xff", 1});
    kc_wr_cbytes(&w, KC_BYTES_NULL);
    kc_reader_t r;
    rd_from(&r, &w);
    assert_true(kc_str_eq_c(kc_rd_str(&r, false), "group-1"));
    assert_true(kc_str_eq(kc_rd_str(&r, true), KC_STR_NULL));
    assert_true(kc_str_eq_c(kc_rd_cstr(&r, false), "consumer"));
    assert_true(kc_str_eq(kc_rd_cstr(&r, true), KC_STR_NULL));
    assert_true(kc_str_eq(kc_rd_cstr(&r, true), KC_STR_EMPTY));
    kc_bytes_t b = kc_rd_bytes(&r, false);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.p, "\0\1\2", 3);
    b = kc_rd_cbytes(&r, false);
    assert_int_equal(b.len, 1);
    assert_int_equal(b.p[0], 0xff);
    b = kc_rd_cbytes(&r, true);
    assert_int_equal(b.len, -1);
    assert_int_equal(r.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);
    kc_wr_free(&w);
}

/* ---- arrays ----------------------------------------------------------------------------- */

static void test_array_len_encodings(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_array_len(&w, -1);
    EXPECT_WIRE(&w, 0xff, 0xff, 0xff, 0xff);
    kc_wr_array_len(&w, 3);
    EXPECT_WIRE(&w, 0, 0, 0, 3);
    kc_wr_carray_len(&w, -1);
    EXPECT_WIRE(&w, 0x00);
    kc_wr_carray_len(&w, 0);
    EXPECT_WIRE(&w, 0x01);
    kc_wr_carray_len(&w, 127);
    EXPECT_WIRE(&w, 0x80, 0x01);
    kc_wr_free(&w);
}

static void test_array_len_classic(void **state)
{
    (void)state;
    kc_reader_t r;
    const uint8_t three[] = {0, 0, 0, 3, 'a', 'b', 'c'};
    kc_rd_init(&r, three, sizeof three);
    assert_int_equal(kc_rd_array_len(&r, false, 1), 3);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, three, sizeof three);
    assert_int_equal(kc_rd_array_len(&r, false, 0), 3); /* 0 is treated as 1 */
    kc_rd_init(&r, three, sizeof three);
    assert_int_equal(kc_rd_array_len(&r, false, 2), 0); /* 3 * 2 > 3 bytes */
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, three);
    kc_rd_init(&r, three, 6);
    assert_int_equal(kc_rd_array_len(&r, false, 1), 0);
    assert_int_equal(r.err, KC_RD_INVALID);
    kc_rd_init(&r, three, sizeof three);
    assert_int_equal(kc_rd_array_len(&r, false, SIZE_MAX), 0);
    assert_int_equal(r.err, KC_RD_INVALID);

    const uint8_t empty[] = {0, 0, 0, 0};
    kc_rd_init(&r, empty, sizeof empty);
    assert_int_equal(kc_rd_array_len(&r, false, 8), 0);
    assert_int_equal(r.err, KC_RD_OK);

    const uint8_t null[] = {0xff, 0xff, 0xff, 0xff};
    kc_rd_init(&r, null, sizeof null);
    assert_int_equal(kc_rd_array_len(&r, true, 4), -1);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, null, sizeof null);
    assert_int_equal(kc_rd_array_len(&r, false, 4), 0);
    assert_int_equal(r.err, KC_RD_INVALID);

    const uint8_t neg[] = {0xff, 0xff, 0xff, 0xfe};
    kc_rd_init(&r, neg, sizeof neg);
    assert_int_equal(kc_rd_array_len(&r, true, 4), 0);
    assert_int_equal(r.err, KC_RD_INVALID);

    kc_rd_init(&r, three, 3);
    assert_int_equal(kc_rd_array_len(&r, true, 4), 0);
    assert_int_equal(r.err, KC_RD_SHORT);
}

static void test_array_len_compact(void **state)
{
    (void)state;
    kc_reader_t r;
    const uint8_t two[] = {0x03, 0, 0, 0, 0, 0, 0, 0, 0};
    kc_rd_init(&r, two, sizeof two);
    assert_int_equal(kc_rd_carray_len(&r, false, 4), 2);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, two, sizeof two);
    assert_int_equal(kc_rd_carray_len(&r, false, 5), 0);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, two);

    const uint8_t null_empty[] = {0x00, 0x01};
    kc_rd_init(&r, null_empty, sizeof null_empty);
    assert_int_equal(kc_rd_carray_len(&r, true, 1), -1);
    assert_int_equal(kc_rd_carray_len(&r, true, 1), 0);
    assert_int_equal(r.err, KC_RD_OK);
    kc_rd_init(&r, null_empty, sizeof null_empty);
    assert_int_equal(kc_rd_carray_len(&r, false, 1), 0);
    assert_int_equal(r.err, KC_RD_INVALID);

    /* A count above INT32_MAX. */
    const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    kc_rd_init(&r, huge, sizeof huge);
    assert_int_equal(kc_rd_carray_len(&r, true, 0), 0);
    assert_int_equal(r.err, KC_RD_INVALID);
}

static void test_array_count_rejected_before_alloc(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    /* 2^31 - 1 elements claimed, 8 bytes present. */
    const uint8_t lie[] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8};
    kc_reader_t r;
    kc_rd_init(&r, lie, sizeof lie);
    int32_t n = kc_rd_array_len(&r, false, 4);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_int_equal(n, 0);
    assert_null(kc_rd_alloc_array(&r, &a, n, 16));
    assert_null(a.head); /* nothing was allocated */
    assert_int_equal(a.total, 0);

    const uint8_t clie[] = {0xff, 0xff, 0xff, 0xff, 0x07, 1, 2, 3};
    kc_rd_init(&r, clie, sizeof clie);
    n = kc_rd_carray_len(&r, false, 1);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_null(kc_rd_alloc_array(&r, &a, n, 16));
    assert_null(a.head);
    kc_arena_free(&a);
}

static void test_alloc_array(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    const uint8_t buf[1] = {0};
    kc_reader_t r;
    kc_rd_init(&r, buf, sizeof buf);

    assert_null(kc_rd_alloc_array(&r, &a, 0, 8));
    assert_null(kc_rd_alloc_array(&r, &a, -1, 8));
    assert_int_equal(r.err, KC_RD_OK);

    int64_t *v = kc_rd_alloc_array(&r, &a, 10, sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < 10; i++)
        assert_true(v[i] == 0);
    assert_int_equal(r.err, KC_RD_OK);

    /* n * size overflows size_t. */
    assert_null(kc_rd_alloc_array(&r, &a, INT32_MAX, SIZE_MAX / 2));
    assert_int_equal(r.err, KC_RD_NOMEM);
    assert_null(kc_rd_alloc_array(&r, &a, 1, 1)); /* sticky */

    /* The arena's limit turns into KC_RD_NOMEM. */
    kc_arena_free(&a);
    kc_arena_init(&a);
    a.limit = 64;
    kc_rd_init(&r, buf, sizeof buf);
    assert_non_null(kc_rd_alloc_array(&r, &a, 8, 8));
    assert_null(kc_rd_alloc_array(&r, &a, 1, 1));
    assert_int_equal(r.err, KC_RD_NOMEM);
    kc_arena_free(&a);
}

/* ---- sub-readers and tagged fields ------------------------------------------------------ */

static void test_sub_reader(void **state)
{
    (void)state;
    const uint8_t buf[] = {0, 1, 0, 2, 0, 3};
    kc_reader_t r;
    kc_rd_init(&r, buf, sizeof buf);

    kc_reader_t s = kc_rd_sub(&r, 4);
    assert_int_equal(s.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&s), 4);
    assert_ptr_equal(r.p, buf + 4); /* the parent moved past the sub-range */
    assert_int_equal(kc_rd_i16(&s), 1);
    assert_int_equal(kc_rd_i16(&s), 2);
    assert_int_equal(kc_rd_i16(&s), 0); /* past the sub-reader's end */
    assert_int_equal(s.err, KC_RD_SHORT);
    assert_int_equal(r.err, KC_RD_OK); /* the parent is not affected */
    assert_int_equal(kc_rd_i16(&r), 3);

    kc_rd_init(&r, buf, sizeof buf);
    s = kc_rd_sub(&r, 0);
    assert_int_equal(s.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&s), 0);
    assert_ptr_equal(r.p, buf);

    s = kc_rd_sub(&r, 6);
    assert_int_equal(s.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);

    /* More than remains: the parent fails, does not move, and the sub-reader fails too. */
    kc_rd_init(&r, buf, sizeof buf);
    kc_rd_i8(&r);
    s = kc_rd_sub(&r, 6);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf + 1);
    assert_int_not_equal(s.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&s), 0);
    assert_int_equal(kc_rd_i8(&s), 0);

    /* A sub-reader of an already failed reader is failed. */
    s = kc_rd_sub(&r, 1);
    assert_int_not_equal(s.err, KC_RD_OK);
    assert_ptr_equal(r.p, buf + 1);

    kc_rd_init(&r, buf, sizeof buf);
    s = kc_rd_sub(&r, SIZE_MAX);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, buf);
}

static void test_skip_tags(void **state)
{
    (void)state;
    kc_reader_t r;

    const uint8_t none[] = {0x00, 0x2a};
    kc_rd_init(&r, none, sizeof none);
    kc_rd_skip_tags(&r);
    assert_int_equal(kc_rd_i8(&r), 42);
    assert_int_equal(r.err, KC_RD_OK);

    /* Two fields: tag 0 with 3 bytes, tag 300 with 0 bytes; then a sentinel. */
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_uvarint(&w, 2);
    kc_wr_uvarint(&w, 0);
    kc_wr_uvarint(&w, 3);
    kc_wr_raw(&w, "abc", 3);
    kc_wr_uvarint(&w, 300);
    kc_wr_uvarint(&w, 0);
    kc_wr_i8(&w, 42);
    rd_from(&r, &w);
    kc_rd_skip_tags(&r);
    assert_int_equal(kc_rd_i8(&r), 42);
    assert_int_equal(r.err, KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);

    /* The same section decoded by hand with a sub-reader for the known tag. */
    rd_from(&r, &w);
    uint32_t n = kc_rd_uvarint(&r);
    assert_int_equal(n, 2);
    assert_int_equal(kc_rd_uvarint(&r), 0);
    kc_reader_t s = kc_rd_sub(&r, kc_rd_uvarint(&r));
    assert_int_equal(kc_rd_i8(&s), 'a');
    assert_int_equal(kc_rd_uvarint(&r), 300);
    kc_rd_skip(&r, kc_rd_uvarint(&r));
    assert_int_equal(kc_rd_i8(&r), 42);
    assert_int_equal(r.err, KC_RD_OK);

    /* Every truncation of the section fails without moving the reader. */
    for (size_t len = 0; len < w.len - 1; len++) {
        kc_rd_init(&r, w.buf, len);
        kc_rd_skip_tags(&r);
        assert_int_not_equal(r.err, KC_RD_OK);
        assert_ptr_equal(r.p, w.buf);
    }
    kc_wr_free(&w);

    /* A field count that the remaining bytes cannot hold. */
    const uint8_t lie[] = {0x05, 0, 0, 0, 0};
    kc_rd_init(&r, lie, sizeof lie);
    kc_rd_skip_tags(&r);
    assert_int_equal(r.err, KC_RD_INVALID);
    assert_ptr_equal(r.p, lie);

    /* A field size past the end. */
    const uint8_t longf[] = {0x01, 0x00, 0x05, 'a'};
    kc_rd_init(&r, longf, sizeof longf);
    kc_rd_skip_tags(&r);
    assert_int_equal(r.err, KC_RD_SHORT);
    assert_ptr_equal(r.p, longf);

    /* An over-long varint in the tag. */
    const uint8_t badtag[] = {0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00};
    kc_rd_init(&r, badtag, sizeof badtag);
    kc_rd_skip_tags(&r);
    assert_int_equal(r.err, KC_RD_INVALID);
}

/* ---- a composite buffer truncated at every byte ----------------------------------------- */

static const uint8_t uuid_bytes[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2,  3,  4,
                                       5,    6,    7,    8,    9, 10, 11, 12};

static void write_composite(kc_writer_t *w)
{
    kc_uuid_t u;
    memcpy(u.b, uuid_bytes, 16);
    kc_wr_bool(w, true);
    kc_wr_i8(w, -7);
    kc_wr_i16(w, -300);
    kc_wr_u16(w, 65000);
    kc_wr_i32(w, -123456789);
    kc_wr_u32(w, 4000000000u);
    kc_wr_i64(w, INT64_MIN + 5);
    kc_wr_f64(w, 2.5);
    kc_wr_uuid(w, u);
    kc_wr_uvarint(w, 300);
    kc_wr_uvarlong(w, UINT64_C(1) << 40);
    kc_wr_varint(w, -12345);
    kc_wr_varlong(w, INT64_MIN);
    kc_wr_str(w, KC_STR_LIT("hello"));
    kc_wr_str(w, KC_STR_NULL);
    kc_wr_cstr(w, KC_STR_LIT("world"));
    kc_wr_cstr(w, KC_STR_NULL);
    kc_wr_bytes(w, (kc_bytes_t){(const uint8_t *)"\1\2\3", 3});
    kc_wr_cbytes(w, (kc_bytes_t){(const uint8_t *)"\4\5", 2});
    kc_wr_array_len(w, 2);
    kc_wr_i32(w, 11);
    kc_wr_i32(w, 22);
    kc_wr_carray_len(w, 1);
    kc_wr_cstr(w, KC_STR_LIT("member"));
    kc_wr_i32(w, 6); /* a length-prefixed section read through a sub-reader */
    kc_wr_i32(w, 77);
    kc_wr_i16(w, 88);
    kc_wr_uvarint(w, 1); /* one tagged field */
    kc_wr_uvarint(w, 3);
    kc_wr_uvarint(w, 2);
    kc_wr_i16(w, 99);
    kc_wr_i8(w, 1); /* final byte */
}

/* Check one read: when the reader was already failed before the call, or the call failed, the
 * value must be zero and the pointer must not have moved; otherwise it must equal `want`. */
#define CHECK(r, type, call, want, eq, zero)                                                       \
    do {                                                                                           \
        int was_ = (r)->err;                                                                       \
        const uint8_t *before_ = (r)->p;                                                           \
        type got_ = (call);                                                                        \
        if (was_ != KC_RD_OK || (r)->err != KC_RD_OK) {                                            \
            assert_ptr_equal((r)->p, before_);                                                     \
            assert_true(zero(got_));                                                               \
        } else {                                                                                   \
            assert_true(eq(got_, (want)));                                                         \
        }                                                                                          \
    } while (0)

#define EQ(a, b)     ((a) == (b))
#define IS0(a)       ((a) == 0)
#define STR_EQ(a, b) kc_str_eq((a), (b))
#define STR0(a)      ((a).len == 0)
#define BYTES_EQ(a, b)                                                                             \
    ((a).len == (b).len && ((a).len <= 0 || memcmp((a).p, (b).p, (size_t)(a).len) == 0))
#define UUID_EQ(u, want) (memcmp((u).b, (want), 16) == 0)
#define UUID0(u)         (memcmp((u).b, zero16, 16) == 0)

static const uint8_t zero16[16];

/* Decode the composite buffer, checking every value; returns the reader's error. */
static int read_composite(kc_reader_t *r, kc_arena_t *a)
{
    CHECK(r, bool, kc_rd_bool(r), true, EQ, !);
    CHECK(r, int8_t, kc_rd_i8(r), -7, EQ, IS0);
    CHECK(r, int16_t, kc_rd_i16(r), -300, EQ, IS0);
    CHECK(r, uint16_t, kc_rd_u16(r), 65000, EQ, IS0);
    CHECK(r, int32_t, kc_rd_i32(r), -123456789, EQ, IS0);
    CHECK(r, uint32_t, kc_rd_u32(r), 4000000000u, EQ, IS0);
    CHECK(r, int64_t, kc_rd_i64(r), INT64_MIN + 5, EQ, IS0);
    CHECK(r, double, kc_rd_f64(r), 2.5, EQ, IS0);
    CHECK(r, kc_uuid_t, kc_rd_uuid(r), uuid_bytes, UUID_EQ, UUID0);
    CHECK(r, uint32_t, kc_rd_uvarint(r), 300, EQ, IS0);
    CHECK(r, uint64_t, kc_rd_uvarlong(r), UINT64_C(1) << 40, EQ, IS0);
    CHECK(r, int32_t, kc_rd_varint(r), -12345, EQ, IS0);
    CHECK(r, int64_t, kc_rd_varlong(r), INT64_MIN, EQ, IS0);
    CHECK(r, kc_str_t, kc_rd_str(r, false), KC_STR_LIT("hello"), STR_EQ, STR0);
    CHECK(r, kc_str_t, kc_rd_str(r, true), KC_STR_NULL, STR_EQ, STR0);
    CHECK(r, kc_str_t, kc_rd_cstr(r, false), KC_STR_LIT("world"), STR_EQ, STR0);
    CHECK(r, kc_str_t, kc_rd_cstr(r, true), KC_STR_NULL, STR_EQ, STR0);
    CHECK(r, kc_bytes_t, kc_rd_bytes(r, false), ((kc_bytes_t){(const uint8_t *)"\1\2\3", 3}),
          BYTES_EQ, STR0);
    CHECK(r, kc_bytes_t, kc_rd_cbytes(r, false), ((kc_bytes_t){(const uint8_t *)"\4\5", 2}),
          BYTES_EQ, STR0);

    int32_t n;
    CHECK(r, int32_t, (n = kc_rd_array_len(r, false, 4)), 2, EQ, IS0);
    int32_t *ints = kc_rd_alloc_array(r, a, n, sizeof *ints);
    assert_true(r->err != KC_RD_OK ? ints == NULL : ints != NULL);
    for (int32_t i = 0; i < n; i++)
        CHECK(r, int32_t, (ints[i] = kc_rd_i32(r)), 11 * (i + 1), EQ, IS0);

    CHECK(r, int32_t, (n = kc_rd_carray_len(r, false, 1)), 1, EQ, IS0);
    kc_str_t *strs = kc_rd_alloc_array(r, a, n, sizeof *strs);
    for (int32_t i = 0; i < n; i++)
        CHECK(r, kc_str_t, (strs[i] = kc_rd_cstr(r, false)), KC_STR_LIT("member"), STR_EQ, STR0);

    int32_t sublen;
    CHECK(r, int32_t, (sublen = kc_rd_i32(r)), 6, EQ, IS0);
    int was = r->err;
    kc_reader_t sub = kc_rd_sub(r, sublen < 0 ? 0 : (size_t)sublen);
    if (was == KC_RD_OK && r->err == KC_RD_OK) {
        CHECK(&sub, int32_t, kc_rd_i32(&sub), 77, EQ, IS0);
        CHECK(&sub, int16_t, kc_rd_i16(&sub), 88, EQ, IS0);
        assert_int_equal(sub.err, KC_RD_OK);
        assert_int_equal(kc_rd_remaining(&sub), 0);
    } else {
        assert_int_not_equal(sub.err, KC_RD_OK);
        assert_int_equal(kc_rd_i32(&sub), 0);
    }

    const uint8_t *before = r->p;
    was = r->err;
    kc_rd_skip_tags(r);
    if (was != KC_RD_OK || r->err != KC_RD_OK)
        assert_ptr_equal(r->p, before);
    CHECK(r, int8_t, kc_rd_i8(r), 1, EQ, IS0);
    return r->err;
}

static void test_truncated_every_byte(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    write_composite(&w);
    assert_int_equal(w.err, 0);

    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    rd_from(&r, &w);
    assert_int_equal(read_composite(&r, &a), KC_RD_OK);
    assert_int_equal(kc_rd_remaining(&r), 0);

    for (size_t len = 0; len < w.len; len++) {
        kc_arena_reset(&a);
        /* Copy to an exact-size heap buffer so that ASan catches any read past `len`. */
        uint8_t *buf = malloc(len > 0 ? len : 1);
        assert_non_null(buf);
        memcpy(buf, w.buf, len);
        kc_rd_init(&r, buf, len);
        int err = read_composite(&r, &a);
        assert_true(err == KC_RD_SHORT || err == KC_RD_INVALID);
        /* After the failure nothing reads or moves. */
        const uint8_t *at = r.p;
        assert_true(at <= buf + len);
        assert_false(kc_rd_bool(&r));
        assert_int_equal(kc_rd_i32(&r), 0);
        assert_true(kc_rd_i64(&r) == 0);
        assert_int_equal(kc_rd_uvarint(&r), 0);
        assert_true(kc_rd_varlong(&r) == 0);
        assert_int_equal(kc_rd_str(&r, true).len, 0);
        assert_int_equal(kc_rd_cbytes(&r, true).len, 0);
        assert_int_equal(kc_rd_array_len(&r, true, 1), 0);
        assert_int_equal(kc_rd_carray_len(&r, true, 1), 0);
        assert_null(kc_rd_alloc_array(&r, &a, 4, 4));
        kc_rd_skip(&r, 0);
        kc_rd_skip_tags(&r);
        assert_ptr_equal(r.p, at);
        assert_int_equal(r.err, err);
        free(buf);
    }
    kc_arena_free(&a);
    kc_wr_free(&w);
}

/* ---- writer ----------------------------------------------------------------------------- */

static void test_writer_growth(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    assert_null(w.buf);
    assert_int_equal(w.len, 0);
    size_t last_cap = 0, growths = 0;
    for (int i = 0; i < 100000; i++) {
        kc_wr_i8(&w, (int8_t)(i & 0x7f));
        if (w.cap != last_cap) {
            if (last_cap != 0)
                assert_int_equal(w.cap, last_cap * 2); /* doubling */
            last_cap = w.cap;
            growths++;
        }
    }
    assert_int_equal(w.err, 0);
    assert_int_equal(w.len, 100000);
    assert_true(growths < 20);
    for (int i = 0; i < 100000; i++)
        assert_int_equal(w.buf[i], i & 0x7f);

    /* A reservation bigger than double the capacity is met in one step. */
    assert_true(kc_wr_reserve(&w, 10 * w.cap));
    assert_true(w.cap - w.len >= 10 * last_cap);

    size_t len = 0;
    uint8_t *buf = kc_wr_steal(&w, &len);
    assert_non_null(buf);
    assert_int_equal(len, 100000);
    assert_null(w.buf);
    assert_int_equal(w.len, 0);
    assert_int_equal(w.cap, 0);
    free(buf);

    /* The writer is usable after stealing, and free on an empty writer is safe. */
    kc_wr_i16(&w, 5);
    EXPECT_WIRE(&w, 0, 5);
    kc_wr_free(&w);
    kc_wr_free(&w);

    kc_wr_raw(&w, NULL, 0);
    assert_null(w.buf);
    buf = kc_wr_steal(&w, &len);
    assert_null(buf);
    assert_int_equal(len, 0);
}

static void test_writer_err_sticky(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i32(&w, 1);
    /* A request whose size overflows fails like an allocation failure. */
    assert_false(kc_wr_reserve(&w, SIZE_MAX));
    assert_int_not_equal(w.err, 0);
    kc_wr_i32(&w, 2);
    kc_wr_str(&w, KC_STR_LIT("dropped"));
    kc_wr_uvarint(&w, 300);
    kc_wr_patch_i32(&w, 0, 9);
    assert_int_equal(w.len, 4);
    assert_memory_equal(w.buf, "\0\0\0\1", 4);
    assert_false(kc_wr_reserve(&w, 1));
    kc_wr_free(&w);
    assert_int_equal(w.err, 0);
}

static void test_patch_i32(void **state)
{
    (void)state;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_wr_i16(&w, 7);
    size_t pos = w.len;
    kc_wr_i32(&w, 0); /* placeholder for a length */
    kc_wr_raw(&w, "payload", 7);
    kc_wr_patch_i32(&w, pos, (int32_t)(w.len - pos - 4));
    EXPECT_WIRE(&w, 0, 7, 0, 0, 0, 7, 'p', 'a', 'y', 'l', 'o', 'a', 'd');

    kc_wr_i32(&w, 0);
    kc_wr_patch_i32(&w, 0, -2);
    EXPECT_WIRE(&w, 0xff, 0xff, 0xff, 0xfe);

    /* Outside what was written: the writer fails rather than writing out of bounds. */
    kc_wr_i32(&w, 0);
    kc_wr_patch_i32(&w, 1, 5);
    assert_int_not_equal(w.err, 0);
    kc_wr_free(&w);
    kc_wr_init(&w);
    kc_wr_i8(&w, 0);
    kc_wr_patch_i32(&w, SIZE_MAX - 1, 5);
    assert_int_not_equal(w.err, 0);
    kc_wr_free(&w);
}

/* Kafka's Uuid.toString and Uuid.fromString: its ONE_UUID, all ones, and refusals. */
static void test_uuid_text(void **state)
{
    (void)state;
    kc_uuid_t u = {{0}}, back;
    char text[23];
    u.b[15] = 1;
    kc_uuid_format(&u, text);
    assert_string_equal(text, "AAAAAAAAAAAAAAAAAAAAAQ");
    assert_int_equal(kc_uuid_parse(text, &back), 0);
    assert_memory_equal(back.b, u.b, 16);
    memset(u.b, 0xff, 16);
    kc_uuid_format(&u, text);
    assert_string_equal(text, "_____________________w");
    assert_int_equal(kc_uuid_parse(text, &back), 0);
    assert_memory_equal(back.b, u.b, 16);
    assert_int_equal(kc_uuid_parse("", &back), -1);
    assert_int_equal(kc_uuid_parse("AAAAAAAAAAAAAAAAAAAAA", &back), -1);
    assert_int_equal(kc_uuid_parse("AAAAAAAAAAAAAAAAAAAA+Q", &back), -1);
    for (int i = 0; i < 16; i++)
        assert_int_equal(back.b[i], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid_text),
        cmocka_unit_test(test_fixed_exact_bytes),
        cmocka_unit_test(test_fixed_round_trip),
        cmocka_unit_test(test_bool_nonzero_is_true),
        cmocka_unit_test(test_fixed_short),
        cmocka_unit_test(test_sticky_error),
        cmocka_unit_test(test_skip),
        cmocka_unit_test(test_uvarint_encodings),
        cmocka_unit_test(test_uvarlong_encodings),
        cmocka_unit_test(test_varint_zigzag),
        cmocka_unit_test(test_varlong_zigzag),
        cmocka_unit_test(test_varint_invalid),
        cmocka_unit_test(test_varint_sizes_match_writer),
        cmocka_unit_test(test_str_helpers),
        cmocka_unit_test(test_str_encodings),
        cmocka_unit_test(test_str_too_long_for_classic),
        cmocka_unit_test(test_str_read),
        cmocka_unit_test(test_bytes_read),
        cmocka_unit_test(test_str_bytes_round_trip),
        cmocka_unit_test(test_array_len_encodings),
        cmocka_unit_test(test_array_len_classic),
        cmocka_unit_test(test_array_len_compact),
        cmocka_unit_test(test_array_count_rejected_before_alloc),
        cmocka_unit_test(test_alloc_array),
        cmocka_unit_test(test_sub_reader),
        cmocka_unit_test(test_skip_tags),
        cmocka_unit_test(test_truncated_every_byte),
        cmocka_unit_test(test_writer_growth),
        cmocka_unit_test(test_writer_err_sticky),
        cmocka_unit_test(test_patch_i32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
