/* test_proto_gen.c - the generated codecs: round trips, truncation and golden bytes.
 *
 * Round trip: for every message in the API and data tables, at every version, sample values
 * (tests/unit/gen_fill.c) are encoded, the encoded length must equal the size function,
 * decoding must consume exactly those bytes, and encoding the decoded struct must give the
 * same bytes. Truncation: every proper prefix of an encoding fails to decode. Golden bytes:
 * a few messages worked out by hand from Kafka's protocol description.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/gen_api.h"

void kc_fill_sample(const kc_codec_t *c, void *m, kc_arena_t *a, int16_t v, uint32_t seed);

enum { SEEDS = 24 };

/* Bytes encoded by round trips, to prove the samples are not trivially empty. */
static size_t encoded_total;

/* Encode a sample of `c` at `v` with `seed`, then check size, decode and re-encode. */
static void round_trip_one(const kc_codec_t *c, int16_t v, uint32_t seed, int check_prefixes)
{
    kc_arena_t a;
    kc_arena_init(&a);
    void *m = kc_arena_alloc(&a, c->struct_size);
    void *back = kc_arena_alloc(&a, c->struct_size);
    assert_non_null(m);
    assert_non_null(back);
    kc_fill_sample(c, m, &a, v, seed);

    kc_writer_t w1, w2;
    kc_wr_init(&w1);
    kc_wr_init(&w2);
    c->encode(&w1, v, m);
    assert_int_equal(w1.err, 0);
    if (c->size(v, m) != w1.len)
        fail_msg("%s v%d seed %u: size %zu but encoded %zu", c->name, v, seed, c->size(v, m),
                 w1.len);

    kc_reader_t r;
    kc_rd_init(&r, w1.buf, w1.len);
    if (c->decode(&r, &a, v, back) != 0)
        fail_msg("%s v%d seed %u: decode failed (err %d)", c->name, v, seed, r.err);
    assert_int_equal(kc_rd_remaining(&r), 0);

    encoded_total += w1.len;
    c->encode(&w2, v, back);
    assert_int_equal(w2.len, w1.len);
    if (w1.len > 0 && memcmp(w1.buf, w2.buf, w1.len) != 0)
        fail_msg("%s v%d seed %u: re-encoding differs", c->name, v, seed);

    if (check_prefixes) {
        for (size_t cut = 0; cut < w1.len; cut++) {
            kc_arena_t a2;
            kc_arena_init(&a2);
            void *t = kc_arena_alloc(&a2, c->struct_size);
            kc_reader_t rt;
            kc_rd_init(&rt, w1.buf, cut);
            if (c->decode(&rt, &a2, v, t) == 0)
                fail_msg("%s v%d: a %zu-byte prefix of %zu decoded", c->name, v, cut, w1.len);
            kc_arena_free(&a2);
        }
    }
    kc_wr_free(&w1);
    kc_wr_free(&w2);
    kc_arena_free(&a);
}

static void test_round_trip_apis(void **state)
{
    (void)state;
    for (size_t i = 0; i < kc_api_count; i++) {
        const kc_api_info_t *api = &kc_api_table[i];
        for (int16_t v = api->min_version; v <= api->max_version; v++) {
            for (uint32_t seed = 1; seed <= SEEDS; seed++) {
                round_trip_one(&api->request, v, seed, seed <= 2);
                round_trip_one(&api->response, v, seed, seed <= 2);
            }
        }
    }
    print_message("round trips encoded %zu bytes\n", encoded_total);
    assert_true(encoded_total > 100000);
}

static void test_round_trip_data(void **state)
{
    (void)state;
    for (size_t i = 0; i < kc_data_count; i++) {
        const kc_data_info_t *d = &kc_data_table[i];
        for (int16_t v = d->min_version; v <= d->max_version; v++)
            for (uint32_t seed = 1; seed <= SEEDS; seed++)
                round_trip_one(&d->codec, v, seed, seed <= 2);
    }
}

static void test_api_table_sorted_and_found(void **state)
{
    (void)state;
    assert_true(kc_api_count > 0);
    for (size_t i = 1; i < kc_api_count; i++)
        assert_true(kc_api_table[i - 1].key < kc_api_table[i].key);
    for (size_t i = 0; i < kc_api_count; i++)
        assert_ptr_equal(kc_api_find(kc_api_table[i].key), &kc_api_table[i]);
    assert_null(kc_api_find(-1));
    assert_null(kc_api_find(32000));
    const kc_api_info_t *av = kc_api_find(KC_API_API_VERSIONS);
    assert_non_null(av);
    assert_int_equal(av->min_version, 0);
    assert_int_equal(av->max_version, 4);
    assert_int_equal(av->first_flexible, 3);
    assert_false(kc_api_is_flexible(av, 2));
    assert_true(kc_api_is_flexible(av, 3));
}

static void expect_bytes(const kc_writer_t *w, const uint8_t *want, size_t n)
{
    assert_int_equal(w->err, 0);
    assert_int_equal(w->len, n);
    assert_memory_equal(w->buf, want, n);
}

/* ApiVersions request v3: compact strings "kc" and "1.0", then an empty tag section. */
static void test_golden_api_versions_request_v3(void **state)
{
    (void)state;
    kc_api_versions_request_t m;
    kc_api_versions_request_init(&m);
    m.client_software_name = KC_STR_LIT("kc");
    m.client_software_version = KC_STR_LIT("1.0");
    kc_writer_t w;
    kc_wr_init(&w);
    kc_api_versions_request_encode(&w, 3, &m);
    static const uint8_t want[] = {0x03, 'k', 'c', 0x04, '1', '.', '0', 0x00};
    expect_bytes(&w, want, sizeof(want));

    kc_arena_t a;
    kc_arena_init(&a);
    kc_api_versions_request_t d;
    kc_reader_t r;
    kc_rd_init(&r, want, sizeof(want));
    assert_int_equal(kc_api_versions_request_decode(&r, &a, 3, &d), 0);
    assert_true(kc_str_eq_c(d.client_software_name, "kc"));
    assert_true(kc_str_eq_c(d.client_software_version, "1.0"));
    /* v0 has no fields at all. */
    kc_wr_free(&w);
    kc_wr_init(&w);
    kc_api_versions_request_encode(&w, 0, &m);
    assert_int_equal(w.len, 0);
    kc_wr_free(&w);
    kc_arena_free(&a);
}

/* ApiVersions response v0: error 35 and one key {18, 0..4}, classic int32 array. */
static void test_golden_api_versions_response_v0(void **state)
{
    (void)state;
    kc_api_versions_response_t m;
    kc_api_versions_response_init(&m);
    kc_api_version_t key = {.api_key = 18, .min_version = 0, .max_version = 4};
    m.error_code = 35;
    m.api_keys.v = &key;
    m.api_keys.n = 1;
    m.throttle_time_ms = 7; /* not in v0 */
    kc_writer_t w;
    kc_wr_init(&w);
    kc_api_versions_response_encode(&w, 0, &m);
    static const uint8_t want[] = {0x00, 0x23, 0x00, 0x00, 0x00, 0x01,
                                   0x00, 0x12, 0x00, 0x00, 0x00, 0x04};
    expect_bytes(&w, want, sizeof(want));
    kc_wr_free(&w);

    /* v3: compact array (n+1 = 2), throttle, then a tag section holding only tag 1
     * (finalized_features_epoch) because it differs from its default of -1. */
    m.finalized_features_epoch = 5;
    kc_wr_init(&w);
    kc_api_versions_response_encode(&w, 3, &m);
    static const uint8_t want3[] = {0x00, 0x23, 0x02, 0x00, 0x12, 0x00, 0x00, 0x00, 0x04,
                                    0x00, 0x00, 0x00, 0x00, 0x07, 0x01, 0x01, 0x08, 0,
                                    0,    0,    0,    0,    0,    0,    5};
    expect_bytes(&w, want3, sizeof(want3));
    kc_wr_free(&w);
}

/* FindCoordinator request v0 is a bare string; v1 adds key_type; v4 is a compact array. */
static void test_golden_find_coordinator(void **state)
{
    (void)state;
    kc_find_coordinator_request_t m;
    kc_find_coordinator_request_init(&m);
    m.key = KC_STR_LIT("g1");
    kc_writer_t w;
    kc_wr_init(&w);
    kc_find_coordinator_request_encode(&w, 0, &m);
    static const uint8_t want0[] = {0x00, 0x02, 'g', '1'};
    expect_bytes(&w, want0, sizeof(want0));
    kc_wr_free(&w);

    kc_wr_init(&w);
    kc_find_coordinator_request_encode(&w, 1, &m);
    static const uint8_t want1[] = {0x00, 0x02, 'g', '1', 0x00};
    expect_bytes(&w, want1, sizeof(want1));
    kc_wr_free(&w);

    kc_str_t keys[2] = {KC_STR_LIT("a"), KC_STR_LIT("bc")};
    m.coordinator_keys.v = keys;
    m.coordinator_keys.n = 2;
    kc_wr_init(&w);
    kc_find_coordinator_request_encode(&w, 4, &m);
    static const uint8_t want4[] = {0x00, 0x03, 0x02, 'a', 0x03, 'b', 'c', 0x00};
    expect_bytes(&w, want4, sizeof(want4));
    kc_wr_free(&w);
}

/* Request header v1 keeps client_id as a classic nullable string even though v2 is flexible. */
static void test_golden_request_header(void **state)
{
    (void)state;
    kc_request_header_t h;
    kc_request_header_init(&h);
    h.request_api_key = 3;
    h.request_api_version = 12;
    h.correlation_id = 0x01020304;
    h.client_id = KC_STR_NULL;
    kc_writer_t w;
    kc_wr_init(&w);
    kc_request_header_encode(&w, 2, &h);
    static const uint8_t want[] = {0x00, 0x03, 0x00, 0x0c, 0x01, 0x02,
                                   0x03, 0x04, 0xff, 0xff, 0x00};
    expect_bytes(&w, want, sizeof(want));
    kc_wr_free(&w);

    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_rd_init(&r, want, sizeof(want));
    kc_request_header_t d;
    assert_int_equal(kc_request_header_decode(&r, &a, 2, &d), 0);
    assert_int_equal(d.client_id.len, -1);
    assert_int_equal(d.correlation_id, 0x01020304);
    kc_arena_free(&a);
}

/* Metadata request v1 with a null topic array means "all topics"; v0 cannot say null. */
static void test_golden_metadata_request_null_topics(void **state)
{
    (void)state;
    static const uint8_t v1_all[] = {0xff, 0xff, 0xff, 0xff};
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_metadata_request_t m;
    kc_rd_init(&r, v1_all, sizeof(v1_all));
    assert_int_equal(kc_metadata_request_decode(&r, &a, 1, &m), 0);
    assert_int_equal(m.topics.n, -1);
    kc_rd_init(&r, v1_all, sizeof(v1_all));
    assert_int_equal(kc_metadata_request_decode(&r, &a, 0, &m), -1);
    assert_int_not_equal(r.err, 0);
    /* v9 (flexible): compact null array 0x00, allow_auto_topic_creation true, two bools, tags. */
    static const uint8_t v9[] = {0x00, 0x01, 0x00, 0x00, 0x00};
    kc_rd_init(&r, v9, sizeof(v9));
    assert_int_equal(kc_metadata_request_decode(&r, &a, 9, &m), 0);
    assert_int_equal(m.topics.n, -1);
    assert_true(m.allow_auto_topic_creation);
    kc_arena_free(&a);
}

/* An unknown tagged field is skipped; a known one is decoded. */
static void test_unknown_tags_skipped(void **state)
{
    (void)state;
    /* ApiVersions response v3: error 0, empty array, throttle 0, two tags: 9 (unknown, 2 bytes)
     * and 1 (finalized_features_epoch = 42). */
    static const uint8_t in[] = {0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x02, 0x09, 0x02, 0xaa,
                                 0xbb, 0x01, 0x08, 0,    0,    0,    0,    0,    0,    0,    42};
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_api_versions_response_t m;
    kc_rd_init(&r, in, sizeof(in));
    assert_int_equal(kc_api_versions_response_decode(&r, &a, 3, &m), 0);
    assert_int_equal(m.finalized_features_epoch, 42);
    assert_int_equal(kc_rd_remaining(&r), 0);
    /* A tag whose size runs past the end fails. */
    static const uint8_t bad[] = {0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x09, 0x05, 0xaa};
    kc_rd_init(&r, bad, sizeof(bad));
    assert_int_equal(kc_api_versions_response_decode(&r, &a, 3, &m), -1);
    kc_arena_free(&a);
}

/* ConsumerGroupMemberMetadataValue v0 as Kafka 4.4 writes it for a member of the consumer
 * protocol (the value after its int16 version, taken from a broker's log): the tagged nullable
 * struct classicMemberMetadata is present and null, written as tag 0, size 1 and the uvarint
 * null marker 0. It must decode to NULL and encode back to the same bytes; a present struct
 * goes out behind the marker 1. */
static const uint8_t kafka_member_v0[] = {
    0x00, 0x00, /* instance, rack: null */
    0x11, 'c',  'o',  'n',  's', 'u', 'm', 'e', 'r', '-', 'b', '-', '8', '4',
    '8',  '-',  '1',  0x0b, '/', '1', '2', '7', '.', '0', '.', '0', '.', '1', /* client, host */
    0x02, 0x07, 'o',  'r',  'd', 'e', 'r', 's',                               /* ["orders"] */
    0x01,                                                                     /* regex "" */
    0x00, 0x04, 0x93, 0xe0,                                                   /* rebalance 300000 */
    0x00,                                                                     /* assignor: null */
    0x01, 0x00, 0x01, 0x00,                                                   /* tag 0: null */
};

static void test_golden_member_metadata_null_struct_tag(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_consumer_group_member_metadata_value_t m;
    kc_rd_init(&r, kafka_member_v0, sizeof(kafka_member_v0));
    assert_int_equal(kc_consumer_group_member_metadata_value_decode(&r, &a, 0, &m), 0);
    assert_int_equal(kc_rd_remaining(&r), 0);
    assert_null(m.classic_member_metadata);
    assert_int_equal(m.instance_id.len, -1);
    assert_int_equal(m.client_id.len, 16);
    assert_memory_equal(m.client_id.p, "consumer-b-848-1", 16);
    assert_int_equal(m.subscribed_topic_names.n, 1);
    assert_int_equal(m.subscribed_topic_regex.len, 0);
    assert_int_equal(m.rebalance_timeout_ms, 300000);
    assert_int_equal(m.server_assignor.len, -1);

    kc_writer_t w;
    kc_wr_init(&w);
    kc_consumer_group_member_metadata_value_encode(&w, 0, &m);
    expect_bytes(&w, kafka_member_v0, sizeof(kafka_member_v0));
    assert_int_equal(kc_consumer_group_member_metadata_value_size(0, &m), sizeof(kafka_member_v0));
    kc_wr_free(&w);

    /* A classic member: tag 0, size, marker 1, then session timeout 45000 and the protocol
     * "range" with metadata 0xab, each struct with its empty tag section. */
    kc_classic_protocol_t proto = {KC_STR_LIT("range"), {(const uint8_t *)"\xab", 1}};
    kc_classic_member_metadata_t c = {45000, {&proto, 1}};
    m.classic_member_metadata = &c;
    kc_wr_init(&w);
    kc_consumer_group_member_metadata_value_encode(&w, 0, &m);
    static const uint8_t tail[] = {0x01, 0x00, 0x10, 0x01, 0x00, 0x00, 0xaf, 0xc8, 0x02, 0x06,
                                   'r',  'a',  'n',  'g',  'e',  0x02, 0xab, 0x00, 0x00};
    size_t head = sizeof(kafka_member_v0) - 4;
    assert_int_equal(w.err, 0);
    assert_int_equal(w.len, head + sizeof(tail));
    assert_memory_equal(w.buf, kafka_member_v0, head);
    assert_memory_equal(w.buf + head, tail, sizeof(tail));
    kc_rd_init(&r, w.buf, w.len);
    kc_consumer_group_member_metadata_value_t back;
    assert_int_equal(kc_consumer_group_member_metadata_value_decode(&r, &a, 0, &back), 0);
    assert_non_null(back.classic_member_metadata);
    assert_int_equal(back.classic_member_metadata->session_timeout_ms, 45000);
    assert_int_equal(back.classic_member_metadata->supported_protocols.n, 1);
    kc_wr_free(&w);
    kc_arena_free(&a);
}

static void test_version_out_of_range(void **state)
{
    (void)state;
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_api_versions_request_t m;
    kc_rd_init(&r, "", 0);
    assert_int_equal(kc_api_versions_request_decode(&r, &a, 5, &m), -1);
    kc_rd_init(&r, "", 0);
    assert_int_equal(kc_api_versions_request_decode(&r, &a, -1, &m), -1);
    kc_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_table_sorted_and_found),
        cmocka_unit_test(test_round_trip_apis),
        cmocka_unit_test(test_round_trip_data),
        cmocka_unit_test(test_golden_api_versions_request_v3),
        cmocka_unit_test(test_golden_api_versions_response_v0),
        cmocka_unit_test(test_golden_find_coordinator),
        cmocka_unit_test(test_golden_request_header),
        cmocka_unit_test(test_golden_metadata_request_null_topics),
        cmocka_unit_test(test_unknown_tags_skipped),
        cmocka_unit_test(test_golden_member_metadata_null_struct_tag),
        cmocka_unit_test(test_version_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
