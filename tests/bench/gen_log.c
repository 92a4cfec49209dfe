/* gen_log.c - benchmark tool: write a synthetic __consumer_offsets data directory for kcoord.
 *
 *     gen_log [--compact SEGMENT_BYTES] DATA_DIR RECORDS KEYS [PARTITIONS=50] [CODEC=zstd|none]
 *             [BATCH=100]
 *
 * Writes RECORDS offset-commit records over KEYS distinct (group, topic, partition) keys into
 * DATA_DIR/__consumer_offsets-<N> through the partition log API (kc_plog_*), and a
 * meta.properties through kc_meta_load (node.id=0, version=1, a new 22-character cluster.id),
 * so that `kcoord --set data.dir=DATA_DIR` loads it as its own.
 *
 * Shape of the data. Key k (0 <= k < KEYS) is group "bench-group-<k/100>", topic
 * "bench-topic-<(k%100)/10>", partition k%10: every group commits 10 topics of 10 partitions
 * (the last group may have fewer). Records go round-robin over the keys: record i commits key
 * k = i % KEYS in round r = i / KEYS, at offset start(k) + (r + 1) * step(k), with start and step
 * spread over keys by a multiplicative hash (start < 10^6, 1 <= step <= 1000), so every key's
 * offsets increase, keys differ as real partitions do, and the last round is what a load must
 * end up with. Commit timestamps advance 1 ms every 10 records (a cluster committing 10,000
 * offsets a second), the last one being the time the tool started. Each group lands in the
 * __consumer_offsets partition kc_partition_for gives it, as kcoord places it. Records are encoded
 * as src/offsets/offsets.c encodes them: key = int16 1 + OffsetCommitKey v1, value = int16 3 +
 * OffsetCommitValue v3 (leader epoch 0, empty metadata, commit timestamp = now). Each partition
 * collects its records and appends them BATCH at a time as one RecordBatch; since a group's keys
 * are consecutive, a batch is mostly one group's commit, as a real OffsetCommit request writes it.
 *
 * With --compact, segments roll at SEGMENT_BYTES instead of Kafka's 100 MiB, and once every
 * partition is written and fsynced the tool runs kcoord's log cleaner (kc_plog_clean, the same
 * call the daemon's cleaner makes) once on each partition, with Kafka's default tombstone
 * retention: what a long-running kcoord's log looks like after the cleaner caught up. The
 * closed segments then hold one record per key; the active segment (the last SEGMENT_BYTES at
 * most) is never compacted, as in Kafka.
 *
 * At the end every partition is fsynced and closed; the tool prints one line with the records,
 * the log bytes (segments only, not indexes) and the time taken (generation and fsync), and
 * exits 0; or prints an error and exits 1 (2 for a usage error). DATA_DIR must not already
 * hold __consumer_offsets partitions: mixing runs would restart every key's offsets.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "coord/coord.h"
#include "log/log.h"
#include "log/meta.h"
#include "proto/gen_records.h"
#include "proto/wire.h"
#include "util/diag.h"

enum {
    KEYS_PER_GROUP = 100,
    PARTS_PER_TOPIC = 10,
    SLOT_BYTES = 128, /* room for one encoded key + value; ours take about 70 */
};

/* One __consumer_offsets partition being written: its log and its pending batch. `buf` holds
 * the bytes the pending records point into (SLOT_BYTES per record). */
typedef struct gen_part_s {
    kc_plog_t *log;
    kc_log_record_t *recs;
    uint8_t *buf;
    size_t n;
} gen_part_t;

static void usage(void)
{
    fprintf(stderr, "usage: gen_log [--compact SEGMENT_BYTES] DATA_DIR RECORDS KEYS "
                    "[PARTITIONS=50] [CODEC=zstd|none] [BATCH=100]\n");
}

static int parse_count(const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* True when `dir` holds an entry named __consumer_offsets-*. A missing dir holds none. */
static bool has_partitions(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return false;
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "__consumer_offsets-", 19) == 0)
            found = true;
    closedir(d);
    return found;
}

/* Append the pending records of `p` as one batch. Returns 0 or a kc_log code. */
static int flush(gen_part_t *p, int64_t now)
{
    if (p->n == 0)
        return 0;
    int rc = kc_plog_append(p->log, p->recs, p->n, now, NULL);
    p->n = 0;
    return rc;
}

int main(int argc, char **argv)
{
    long long records, keys, nparts = 50, batch = 100;
    long long compact_segment = 0;
    int codec = KC_LOG_CODEC_ZSTD;
    if (argc > 2 && strcmp(argv[1], "--compact") == 0) {
        if (parse_count(argv[2], 4096, INT32_MAX, &compact_segment) != 0) {
            usage();
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    if (argc < 4 || argc > 7 || parse_count(argv[2], 0, INT64_MAX / 2, &records) != 0 ||
        parse_count(argv[3], 1, 100000000, &keys) != 0 ||
        (argc > 4 && parse_count(argv[4], 1, 10000, &nparts) != 0) ||
        (argc > 6 && parse_count(argv[6], 1, 100000, &batch) != 0)) {
        usage();
        return 2;
    }
    if (argc > 5) {
        if (strcmp(argv[5], "zstd") == 0) {
            codec = KC_LOG_CODEC_ZSTD;
        } else if (strcmp(argv[5], "none") == 0) {
            codec = KC_LOG_CODEC_NONE;
        } else {
            usage();
            return 2;
        }
    }
    const char *dir = argv[1];
    if (has_partitions(dir)) {
        fprintf(stderr, "gen_log: %s already holds __consumer_offsets partitions\n", dir);
        return 1;
    }

    kc_diag_set_level(KC_DIAG_WARN); /* the log's per-roll and per-clean lines are noise here */
    double t0 = mono_s();
    char err[512], cluster_id[64];
    if (kc_meta_load(dir, 0, cluster_id, sizeof(cluster_id), err, sizeof(err)) != 0) {
        fprintf(stderr, "gen_log: %s\n", err);
        return 1;
    }
    kc_plog_opts_t opts;
    kc_plog_opts_init(&opts);
    opts.codec = codec;
    if (compact_segment > 0)
        opts.segment_bytes = compact_segment;
    kc_plog_clean_stats_t clean_total = {0};

    int rc = 0;
    long long ngroups = (keys + KEYS_PER_GROUP - 1) / KEYS_PER_GROUP;
    int64_t bytes = 0;
    size_t segments = 0;
    gen_part_t *parts = calloc((size_t)nparts, sizeof(*parts));
    if (parts == NULL) {
        fprintf(stderr, "gen_log: out of memory\n");
        return 1;
    }
    for (int32_t i = 0; i < nparts; i++) {
        gen_part_t *p = &parts[i];
        p->recs = calloc((size_t)batch, sizeof(*p->recs));
        p->buf = malloc((size_t)batch * SLOT_BYTES);
        if (p->recs == NULL || p->buf == NULL) {
            fprintf(stderr, "gen_log: out of memory\n");
            rc = 1;
            goto out;
        }
        int prc = kc_plog_open(&p->log, kc_log_io_posix(), dir, i, &opts, err, sizeof(err));
        if (prc != 0) {
            fprintf(stderr, "gen_log: partition %d: %s\n", i, err);
            rc = 1;
            goto out;
        }
    }

    /* The partition of every group, computed once. */
    int32_t *group_part = malloc((size_t)ngroups * sizeof(*group_part));
    if (group_part == NULL) {
        fprintf(stderr, "gen_log: out of memory\n");
        rc = 1;
        goto out;
    }
    for (long long g = 0; g < ngroups; g++) {
        char name[48];
        snprintf(name, sizeof(name), "bench-group-%lld", g);
        group_part[g] = kc_partition_for(kc_str_c(name), (int32_t)nparts);
    }

    kc_writer_t kw, vw;
    kc_wr_init(&kw);
    kc_wr_init(&vw);
    int64_t now = wall_ms();
    for (long long i = 0; i < records; i++) {
        long long k = i % keys, g = k / KEYS_PER_GROUP;
        char group[48], topic[48];
        int gl = snprintf(group, sizeof(group), "bench-group-%lld", g);
        int tl = snprintf(topic, sizeof(topic), "bench-topic-%lld",
                          (k % KEYS_PER_GROUP) / PARTS_PER_TOPIC);
        kc_offset_commit_key_t key = {{group, gl}, {topic, tl}, (int32_t)(k % PARTS_PER_TOPIC)};
        kc_offset_commit_value_t val;
        kc_offset_commit_value_init(&val);
        uint64_t h = (uint64_t)k * 2654435761u;
        val.offset = (int64_t)(h % 1000000) + (i / keys + 1) * (int64_t)(1 + (h >> 20) % 1000);
        val.leader_epoch = 0;
        val.metadata = KC_STR_EMPTY;
        int64_t ts = now - (records - 1 - i) / 10;
        val.commit_timestamp = ts;
        val.expire_timestamp = -1;
        kw.len = 0;
        vw.len = 0;
        kc_wr_i16(&kw, KC_RECORD_OFFSET_COMMIT_KEY);
        kc_offset_commit_key_encode(&kw, KC_RECORD_OFFSET_COMMIT_KEY, &key);
        kc_wr_i16(&vw, 3);
        kc_offset_commit_value_encode(&vw, 3, &val);
        if (kw.err != 0 || vw.err != 0 || kw.len + vw.len > SLOT_BYTES) {
            fprintf(stderr, "gen_log: cannot encode record %lld\n", i);
            rc = 1;
            break;
        }
        gen_part_t *p = &parts[group_part[g]];
        uint8_t *slot = p->buf + p->n * SLOT_BYTES;
        memcpy(slot, kw.buf, kw.len);
        memcpy(slot + kw.len, vw.buf, vw.len);
        p->recs[p->n++] = (kc_log_record_t){.timestamp_ms = ts,
                                            .key = slot,
                                            .key_len = kw.len,
                                            .value = slot + kw.len,
                                            .value_len = vw.len};
        if (p->n == (size_t)batch) {
            int arc = flush(p, now);
            if (arc != 0) {
                fprintf(stderr, "gen_log: partition %d: append: %s\n", group_part[g],
                        kc_plog_error(p->log)[0] ? kc_plog_error(p->log) : kc_log_strerror(arc));
                rc = 1;
                break;
            }
        }
    }
    kc_wr_free(&kw);
    kc_wr_free(&vw);
    free(group_part);

    for (int32_t i = 0; i < nparts && rc == 0; i++) {
        gen_part_t *p = &parts[i];
        int prc = flush(p, now);
        if (prc == 0)
            prc = kc_plog_sync(p->log);
        if (prc == 0 && compact_segment > 0) {
            kc_plog_clean_stats_t st;
            prc = kc_plog_clean(p->log, wall_ms(), KC_PLOG_DELETE_RETENTION_MS_DEFAULT, &st);
            clean_total.records_before += st.records_before;
            clean_total.records_after += st.records_after;
            clean_total.bytes_before += st.bytes_before;
            clean_total.bytes_after += st.bytes_after;
        }
        if (prc != 0) {
            fprintf(stderr, "gen_log: partition %d: %s\n", i,
                    kc_plog_error(p->log)[0] ? kc_plog_error(p->log) : kc_log_strerror(prc));
            rc = 1;
            break;
        }
        bytes += kc_plog_size_bytes(p->log);
        segments += kc_plog_segment_count(p->log);
    }
out:
    for (int32_t i = 0; i < nparts; i++) {
        if (kc_plog_close(parts[i].log) != 0 && rc == 0) {
            fprintf(stderr, "gen_log: partition %d: close failed\n", i);
            rc = 1;
        }
        free(parts[i].recs);
        free(parts[i].buf);
    }
    free(parts);
    if (rc == 0)
        printf("gen_log: %lld records over %lld keys (%lld groups) in %lld partitions, %s, "
               "batches of %lld: %lld log bytes in %zu segments, %.3f s\n",
               records, keys, ngroups, nparts, codec == KC_LOG_CODEC_ZSTD ? "zstd" : "none", batch,
               (long long)bytes, segments, mono_s() - t0);
    if (rc == 0 && compact_segment > 0)
        printf("gen_log: compacted closed segments: %lld -> %lld records, %lld -> %lld bytes\n",
               (long long)clean_total.records_before, (long long)clean_total.records_after,
               (long long)clean_total.bytes_before, (long long)clean_total.bytes_after);
    return rc;
}
