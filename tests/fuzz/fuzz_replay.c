/* fuzz_replay.c - libFuzzer target: __consumer_offsets records through the load path.
 *
 * What a partition does when it loads (src/coord/coord.c, replay_one), fed arbitrary records:
 * each record goes through the shard's replay switch (kc_shard_replay_into: offset records to
 * the offsets store, group records to the group manager). Then what a loaded partition does
 * with that state before any request: kc_gm_load_complete, the /v1/groups views of every
 * group, offsets retention through the shard (kc_shard_expire, as coord's retention scan), and
 * the group timers run far in the future (every
 * session expires), whose records are counted and dropped. Anything the log can hold must load
 * without a crash, a leak or undefined behaviour; a record replay refuses is skipped as coord
 * skips it.
 *
 * Input format: a sequence of records, each
 *     uint16 key length (big-endian), the key,
 *     int32 value length (big-endian; -1: a tombstone, no bytes follow), the value.
 * Reading stops at a record that runs past the end of the input (or a negative length other
 * than -1). A key is the int16 record type and the key struct, a value the int16 version and
 * the value struct, exactly as in a segment's records (docs/log-format.md).
 *
 * Memory: each key and value is copied into a malloc'd buffer of exactly its size, so that a
 * decoder that reads past it is an AddressSanitizer report, not a silent read of the next
 * record. Everything is freed before the call returns.
 *
 * Seeds: tests/fuzz/make-replay-seeds.py writes records of every type and version of
 * proto/records.kdef in this format.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord_int.h"
#include "fuzz.h"
#include "util/diag.h"

#define NOW_MS 1796229777123LL /* 2026-12-02T16:42:57.123Z */

static size_t records_emitted;

static void on_record(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len)
{
    (void)ctx;
    (void)key;
    (void)key_len;
    (void)value;
    (void)value_len;
    records_emitted++;
}

static void on_join_done(void *ctx, void *waiter, const kc_join_group_response_t *resp)
{
    (void)ctx;
    (void)waiter;
    (void)resp;
}

static void on_sync_done(void *ctx, void *waiter, const kc_sync_group_response_t *resp)
{
    (void)ctx;
    (void)waiter;
    (void)resp;
}

/* Two topics, so that loaded consumer groups subscribed to them have partitions to assign. */
static void on_topics(void *ctx, kc_gm_topics_t *out)
{
    static kc_gm_topic_t topics[2];
    (void)ctx;
    topics[0] = (kc_gm_topic_t){.name = KC_STR_LIT("a"), .partitions = 3};
    topics[0].id.b[15] = 1;
    topics[1] = (kc_gm_topic_t){.name = KC_STR_LIT("t"), .partitions = 1};
    topics[1].id.b[15] = 2;
    out->v = topics;
    out->n = 2;
    out->version = 1;
}

static uint8_t *exact_copy(const uint8_t *p, size_t len)
{
    uint8_t *q = malloc(len != 0 ? len : 1);
    if (q == NULL) {
        fprintf(stderr, "fuzz_replay: out of memory copying %zu bytes\n", len);
        abort();
    }
    if (len != 0)
        memcpy(q, p, len);
    return q;
}

static void discard(void *arg, const char *s, size_t n)
{
    (void)s;
    *(size_t *)arg += n;
}

/* Copies of the group ids (which may hold any byte, NUL included). */
typedef struct ids_s {
    kc_str_t *v;
    size_t n, cap;
} ids_t;

static void collect(void *arg, const kc_group_info_t *g)
{
    ids_t *ids = arg;
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 8;
        kc_str_t *v = realloc(ids->v, cap * sizeof(*v));
        if (v == NULL)
            abort();
        ids->v = v;
        ids->cap = cap;
    }
    size_t len = g->group_id.len > 0 ? (size_t)g->group_id.len : 0;
    ids->v[ids->n] =
        (kc_str_t){(const char *)exact_copy((const uint8_t *)g->group_id.p, len), (int32_t)len};
    ids->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kc_diag_set_level(KC_DIAG_ERROR); /* a load's info and warnings, once per input, are noise */
    kc_gm_config_t cfg = {
        .partition = 0,
        .min_session_timeout_ms = 6000,
        .max_session_timeout_ms = 1800000,
        .initial_rebalance_delay_ms = 3000,
        .max_size = 3, /* small, so that a loaded group larger than this is rebalanced */
        .new_member_join_timeout_ms = 300000,
        .consumer_offload_threshold = -1,
    };
    kc_gm_ops_t gops = {NULL, on_join_done, on_sync_done, on_record, on_topics, NULL, NULL};
    kc_offsets_ops_t oops = {NULL, on_record};
    kc_gm_t *gm = kc_gm_new(&cfg, &gops);
    kc_offsets_t *off = kc_offsets_new(&oops);
    if (gm == NULL || off == NULL)
        abort();
    kc_gm_set_seed(gm, 1);

    size_t pos = 0;
    while (size - pos >= 6) {
        size_t klen = (size_t)data[pos] << 8 | data[pos + 1];
        if (klen > size - pos - 6)
            break;
        const uint8_t *k = data + pos + 2;
        const uint8_t *vp = k + klen;
        int32_t vlen =
            (int32_t)((uint32_t)vp[0] << 24 | (uint32_t)vp[1] << 16 | (uint32_t)vp[2] << 8 | vp[3]);
        pos += 2 + klen + 4;
        if (vlen < -1 || (vlen > 0 && (size_t)vlen > size - pos))
            break;
        uint8_t *key = exact_copy(k, klen);
        uint8_t *value = vlen >= 0 ? exact_copy(data + pos, (size_t)vlen) : NULL;
        /* As coord's replay_one: a record the switch refuses is skipped. */
        (void)kc_shard_replay_into(gm, off, key, klen, value, vlen >= 0 ? (size_t)vlen : 0);
        free(key);
        free(value);
        if (vlen > 0)
            pos += (size_t)vlen;
    }

    /* The partition is loaded: what it does before any request. */
    kc_gm_load_complete(gm, kc_time_same(NOW_MS));
    size_t bytes = 0;
    bool first = true;
    kc_gm_json_list(gm, NOW_MS, discard, &bytes, &first);
    ids_t ids = {0};
    kc_gm_each(gm, collect, &ids);
    for (size_t i = 0; i < ids.n; i++)
        kc_gm_json_group(gm, NOW_MS, ids.v[i], discard, &bytes);
    (void)kc_offsets_total(off);
    (void)kc_offsets_groups(off);
    struct kc_partition_s shard = {
        .index = 0, .state = KC_PART_ACTIVE, .groups = gm, .offsets = off};
    kc_shard_expire(&shard, kc_time_same(NOW_MS + 8 * 86400000LL), 7 * 86400000LL);
    /* Every timer, far in the future: sessions expire, groups rebalance and empty. */
    int64_t t = NOW_MS;
    for (int i = 0; i < 8; i++) {
        int64_t next = kc_gm_next_deadline(gm);
        if (next == INT64_MAX)
            break;
        t = next > t ? next : t;
        kc_gm_tick(gm, kc_time_same(t));
    }
    for (size_t i = 0; i < ids.n; i++)
        free((void *)ids.v[i].p);
    free(ids.v);
    kc_gm_free(gm);
    kc_offsets_free(off);
    return 0;
}
