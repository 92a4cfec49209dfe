/* log.h - the log room's door: the durable, segmented log of one __consumer_offsets partition.
 *
 * A kc_plog_t is one partition's directory, <data.dir>/__consumer_offsets-<N>/, laid out as a
 * Kafka broker lays it out: segments named by their 20-digit base offset (.log), each a
 * sequence of Kafka RecordBatch v2 (magic 2, CRC-32C, optionally zstd), each with a sparse
 * offset index beside it (.index). A stopped Kafka broker's directory loads; kcoord's
 * directories can be read by Kafka's tools. docs/log-format.md has the byte layout.
 *
 * Life of a partition log, as the coordinator uses it:
 *
 *     kc_plog_open      scan and validate every batch; repair a torn tail; rebuild indexes
 *     kc_plog_replay    every record, in offset order, into the in-memory state
 *     kc_plog_append    seal records into one batch and write it (no fsync)      } repeat:
 *     kc_plog_sync      fsync: what was appended before is now durable          } group commit
 *     kc_plog_clean_*   now and then (kc_plog_clean_due): compact closed segments on a worker,
 *                       while appends and syncs go on
 *     kc_plog_close
 *
 * Threading. A kc_plog_t has no lock. Calls on one plog must never overlap: the caller
 * serialises them. The intended pattern is that the loop thread appends, then hands the plog to
 * a flusher thread for kc_plog_sync and does not touch that plog (not even the accessors) until
 * the sync has returned; records arriving meanwhile wait in the caller's pending batch.
 * Different plogs share no mutable state and may be used from different threads at once.
 * Compaction is the exception that runs beside the others: kc_plog_clean_begin takes what the
 * clean needs, kc_plog_clean_run (on any thread) works on that alone while the plog goes on
 * appending and syncing, and kc_plog_clean_end puts the result in place. So a flush never
 * waits for a compaction. kc_plog_clean, the three in a row, follows the rule of kc_plog_sync.
 *
 * Failures. Functions return 0 or a negative code: -errno for I/O (-EIO, -ENOSPC, ...), or one
 * of the KC_LOG_E* codes below; kc_log_strerror names any of them, and kc_plog_error(l) holds a
 * sentence about the last failure of that plog (file, position, cause).
 *   - A failed append leaves nothing of its batch in the log: the file is truncated back to
 *     where the batch started. Earlier batches are untouched.
 *   - A failed sync (fsync of the segment or of the directory) means the batches appended since
 *     the last successful sync may or may not be on disk, and after a Linux fsync error they may
 *     be lost later even if the page cache still has them. So the log drops them: the segment
 *     is truncated back to its last synced size and kc_plog_next_offset() rewinds to
 *     kc_plog_synced_offset(). The caller fails the requests that waited on them and must bring
 *     its in-memory state back in line with the log (reload the partition by replaying it).
 *   - When even the truncation fails, the plog remembers it and retries it first at the next
 *     append or sync, which fail with that error until it succeeds. Once the disk recovers
 *     (space freed, device back), the next append works and the log is as if the failed
 *     batches had never been written.
 *   - KC_LOG_EGONE is the exception: the active segment was deleted or replaced under the
 *     plog (see kc_plog_append). It is final for this plog: nothing is retried, and the
 *     partition must stay out of service until the process restarts.
 *
 * Durability ordering. Only the newest (active) segment ever holds unsynced bytes: a roll that
 * falls due while the active segment is not fully synced is deferred to the first append after
 * the next successful sync (the segment grows a little past its size meanwhile). If the caller
 * never syncs (flush policy `never`) and the active segment reaches twice the segment size,
 * append fsyncs it itself before rolling. That is why a torn or corrupt tail can only be a
 * crash in the newest segment, and corruption anywhere else is real damage.
 */
#ifndef KC_LOG_LOG_H
#define KC_LOG_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "log/io.h"

/* One record of the log. Key and value are opaque bytes here; for __consumer_offsets they are
 * the version-prefixed coordinator records of proto/records.kdef, value NULL = tombstone. */
typedef struct kc_log_record_s {
    int64_t offset;       /* set when read; ignored by kc_plog_append (offsets are assigned) */
    int64_t timestamp_ms; /* create time; kc_plog_append uses now_ms when this is negative */
    const uint8_t *key;   /* NULL: a null key (Kafka's coordinator never writes one) */
    size_t key_len;
    const uint8_t *value; /* NULL: a null value, i.e. a tombstone; else value_len bytes */
    size_t value_len;
} kc_log_record_t;

/* Failure codes beyond -errno. */
enum {
    KC_LOG_ECORRUPT = -20001,     /* bytes on disk fail validation (length, magic, CRC, ...) */
    KC_LOG_EUNSUPPORTED = -20002, /* valid but not something kcoord reads (gzip, snappy, lz4) */
    KC_LOG_ECOMPRESS = -20003,    /* zstd failed to compress or decompress */
    KC_LOG_ETOOBIG = -20004,      /* a batch, key or value exceeds the format's int32 limits */
    KC_LOG_EGONE = -20005,        /* the active segment was deleted, replaced or cut short under
                                   * the running log: what it held is gone from the directory */
};

/* A static description of any return code of this room: "ok", a KC_LOG_E* code, or
 * strerror(-rc) for a negative errno. */
const char *kc_log_strerror(int rc);

/* Compression codecs, as attribute bits 0-2 of a RecordBatch (Kafka's CompressionType ids). */
enum {
    KC_LOG_CODEC_NONE = 0,
    KC_LOG_CODEC_GZIP = 1,   /* read: unsupported */
    KC_LOG_CODEC_SNAPPY = 2, /* read: unsupported */
    KC_LOG_CODEC_LZ4 = 3,    /* read: unsupported */
    KC_LOG_CODEC_ZSTD = 4,
};

/* Settings of a partition log. Kafka's names; kc_plog_opts_init gives Kafka's defaults. */
typedef struct kc_plog_opts_s {
    int64_t segment_bytes;        /* offsets.topic.segment.bytes: 104857600 */
    int64_t roll_ms;              /* log.roll.ms: 7 days (604800000) */
    int32_t index_interval_bytes; /* log.index.interval.bytes: 4096 */
    int codec;                    /* KC_LOG_CODEC_NONE (default) or KC_LOG_CODEC_ZSTD */
    int zstd_level;               /* 0 = zstd's default level (3) */
    int32_t leader_epoch;         /* partitionLeaderEpoch written in every batch: 0 */
    /* The data directory held the clean-shutdown marker at start (kc_log_clean_shutdown_take):
     * every segment was fsynced and closed, so kc_plog_open truncates nothing and refuses any
     * bad byte. false (the default): recover as after a crash. */
    bool clean_shutdown;
    /* The topic whose partition this is: the directory is <data.dir>/<topic>-<partition>.
     * NULL (the default): "__consumer_offsets". Not copied: it must outlive the plog. */
    const char *topic;
} kc_plog_opts_t;

void kc_plog_opts_init(kc_plog_opts_t *o);

typedef struct kc_plog_s kc_plog_t;

/* Open (creating if needed) the log of `partition` under `data_dir`. `io` is the I/O table
 * (kc_log_io_posix() in production) and must outlive the plog; `opts` is copied (NULL = the
 * defaults). On start:
 *   - the data directory and the partition directory are created when missing;
 *   - leftovers of an interrupted compaction are resolved as Kafka's LogLoader does: *.deleted
 *     and *.cleaned files are removed, *.swap files are renamed into place (after removing the
 *     segments they replace), or removed when they belong to an unfinished split;
 *   - every batch of every segment is validated (length, magic, CRC, offsets increasing);
 *   - the log never deletes a batch it can read. A bad spot in the newest segment is a torn
 *     write only when opts->clean_shutdown is false (a crash) AND no valid batch follows it:
 *     no byte position after it holds a batch whose header, length and CRC are right and
 *     whose base offset is not below the offset the log has reached. Then the tail from the
 *     bad spot on is truncated, and a WARN line says how many bytes went;
 *   - anything else is damage: a bad spot after a clean shutdown, a bad spot followed by a
 *     valid batch, or any bad spot in an older segment. The open fails with KC_LOG_ECORRUPT,
 *     nothing is changed, and `err` names the file, the byte position and the reason (the
 *     caller must not serve that partition);
 *   - a missing, short, stale or garbled .index is rebuilt from the segment; an index without
 *     a segment is removed;
 *   - Kafka's other files (.timeindex, .txnindex, .snapshot, leader-epoch-checkpoint,
 *     partition.metadata, ...) are left alone.
 * On success stores the plog in *out and returns 0. On failure returns a negative code, writes
 * a sentence into `err` (when errlen > 0) and leaves *out NULL. */
int kc_plog_open(kc_plog_t **out, const kc_log_io_t *io, const char *data_dir, int32_t partition,
                 const kc_plog_opts_t *opts, char *err, size_t errlen);

/* What kc_plog_replay went through. */
typedef struct kc_plog_replay_stats_s {
    int64_t batches;         /* batches read, including skipped ones */
    int64_t records;         /* records passed to fn */
    int64_t control_batches; /* skipped: transaction markers (control bit set) */
    int64_t txn_batches;     /* skipped: transactional data batches (transactional bit set) */
    int64_t bytes;           /* bytes of segments read */
} kc_plog_replay_stats_t;

/* Call fn(arg, rec) for every record in offset order, from the first segment to the end.
 * Control batches and transactional batches are skipped and counted (kcoord writes neither;
 * a log from a Kafka broker whose groups used transactional offset commits has them, and their
 * records are not applied). `rec` and the bytes it points to are valid only during the call,
 * and fn must not call any kc_plog_* function on `l`. A nonzero return of fn stops the replay
 * and is returned. Returns 0, fn's nonzero value,
 * KC_LOG_ECORRUPT (a malformed record inside a batch whose CRC is right, or a segment changed
 * since the open), KC_LOG_EUNSUPPORTED (gzip, snappy or lz4 batch), KC_LOG_ECOMPRESS or
 * -errno; kc_plog_error says where. `stats` may be NULL. If a failed kc_plog_clean left a swap
 * to finish, the replay finishes it first, and fails with that error when it cannot. */
int kc_plog_replay(kc_plog_t *l, int (*fn)(void *arg, const kc_log_record_t *rec), void *arg,
                   kc_plog_replay_stats_t *stats);

/* Seal recs[0..n) into ONE batch (compressed per the options) with offsets next_offset ..
 * next_offset + n - 1, and write it at the end of the active segment, rolling to a new segment
 * first when the active one is full or older than roll_ms (timestamps: `now_ms`, wall-clock
 * milliseconds, for records whose timestamp_ms is negative and for the roll age). Updates the
 * sparse index. Does not fsync (except the rare forced roll described above). Stores the first
 * offset in *base_offset (may be NULL). Returns 0, -EINVAL (n == 0), KC_LOG_ETOOBIG, -ENOMEM,
 * KC_LOG_ECOMPRESS, KC_LOG_EGONE or -errno; on failure nothing of this batch is in the log.
 *
 * Before writing, append checks that the active segment is still the file of its name: that
 * the open file still has a name (st_nlink > 0), that the name leads to the same file (device
 * and inode), and that the file is not shorter than what the log wrote. When any of that fails
 * (someone deleted, replaced or truncated the segment), what was acknowledged from it is gone
 * from the directory and cannot be made durable again: append fails with KC_LOG_EGONE, and so
 * does every later append and sync of this plog. The caller must stop acknowledging on this
 * partition and must not reload it from the directory (the data is not there). */
int kc_plog_append(kc_plog_t *l, const kc_log_record_t *recs, size_t n, int64_t now_ms,
                   int64_t *base_offset);

/* Remove every file of the directory of `partition` under `data_dir` (through `io`; the
 * directory stays, and is fine if missing): its next kc_plog_open starts an empty log. Never
 * while a plog of it is open. 0 or -errno. */
int kc_plog_remove(const kc_log_io_t *io, const char *data_dir, int32_t partition);

/* Whether any log of __consumer_offsets-0..partitions-1 under `data_dir` holds a byte (a
 * non-empty .log file), through `io`. */
bool kc_log_dir_has_data(const kc_log_io_t *io, const char *data_dir, int32_t partitions);

/* ---- Batches outside a log (a cluster's raft entries) ---------------------------------------
 *
 * A batch of records as kc_plog_append writes it (RecordBatch v2, base offset 0, compressed with
 * `codec`, KC_LOG_CODEC_*), built in memory, and the records read back from such bytes. A
 * cluster replicates these bytes, and every node appends the records to its own log. */

/* Encode recs[0..n) (records with a negative timestamp get now_ms) into *out (malloc'd, *len
 * bytes). Returns 0 or what kc_plog_append would return for them (-EINVAL, KC_LOG_ETOOBIG,
 * -ENOMEM, KC_LOG_ECOMPRESS). */
int kc_log_batch_build(const kc_log_record_t *recs, size_t n, int64_t now_ms, int codec,
                       uint8_t **out, size_t *len);

/* Decode the batch batch[0..len) (validated: length, magic, CRC; zstd inflated) into a record
 * array *recs of *n records, whose keys and values point into `batch` or into a buffer that
 * *keep owns; free both with kc_log_batch_records_free. Returns 0, KC_LOG_ECORRUPT,
 * KC_LOG_EUNSUPPORTED, KC_LOG_ECOMPRESS or -ENOMEM. */
typedef struct kc_log_batch_keep_s kc_log_batch_keep_t;
int kc_log_batch_records(const uint8_t *batch, size_t len, kc_log_record_t **recs, size_t *n,
                         kc_log_batch_keep_t **keep);
void kc_log_batch_records_free(kc_log_record_t *recs, kc_log_batch_keep_t *keep);

/* Make everything appended so far durable: fsync the active segment, then the partition
 * directory if a segment was created since the last sync. Cheap when there is nothing to do.
 * Makes the same check as kc_plog_append first (KC_LOG_EGONE).
 * Returns 0 or -errno; on failure the unsynced batches are dropped (see Failures above). May
 * run on another thread than the appends, never at the same time as another call on `l`. */
int kc_plog_sync(kc_plog_t *l);

/* The offset the next appended record gets (the log end offset). */
int64_t kc_plog_next_offset(const kc_plog_t *l);
/* The log end offset as of the last successful sync (or the open). */
int64_t kc_plog_synced_offset(const kc_plog_t *l);
/* Number of segments, and their total size in bytes. */
size_t kc_plog_segment_count(const kc_plog_t *l);
int64_t kc_plog_size_bytes(const kc_plog_t *l);
/* Base offset of the active segment. */
int64_t kc_plog_active_base(const kc_plog_t *l);
int32_t kc_plog_partition(const kc_plog_t *l);
/* The partition directory, e.g. "data/__consumer_offsets-7". Valid until kc_plog_close. */
const char *kc_plog_dir(const kc_plog_t *l);
/* A sentence about the last failure of `l` ("" when none). Valid until the next call on l. */
const char *kc_plog_error(const kc_plog_t *l);

/* Close the files and free the plog (NULL is allowed). Writes out an index that could not be
 * written earlier, but does not fsync the segment: call kc_plog_sync first for a clean
 * shutdown. Returns 0 or the first error met while closing; the plog is freed either way. */
int kc_plog_close(kc_plog_t *l);

/* ---- compaction (the log cleaner) --------------------------------------------------------
 *
 * kc_plog_clean compacts the closed segments (every segment but the active one) the way Kafka's
 * LogCleaner compacts a topic with cleanup.policy=compact: of all the records with the same key
 * (key bytes compared exactly), only the one with the highest offset is kept; a tombstone that
 * is the newest of its key is kept until it is older than delete_retention_ms, then dropped too.
 * docs/log-format.md ("Compaction") has the details; in short:
 *   - Which record is the newest of its key is decided over the whole durable log, the active
 *     segment's synced part included, so a record superseded in the active segment goes, while
 *     the active segment itself is never rewritten. A record whose newer version is not yet
 *     synced is kept.
 *   - A tombstone's age is now_ms minus its record timestamp (the time it was written). It is
 *     dropped when the age is more than delete_retention_ms, kept otherwise.
 *   - Records keep their offsets, keys, values and timestamps, so replaying the log gives the
 *     same state before and after. Batches in a compacted segment have gaps in their offsets.
 *     Control and transactional batches, which kc_plog_replay skips, are dropped; records with a
 *     null key are kept.
 *   - Consecutive closed segments whose live records fit in offsets.topic.segment.bytes are
 *     merged into one segment, named by the first one's base offset, with a rebuilt index. A
 *     lone segment with nothing to drop is left as it is.
 *   - Each new segment is swapped in crash-safely: written as .cleaned and fsynced, renamed to
 *     .swap, directory fsynced (from here on the swap is decided), the replaced segments renamed
 *     to .deleted, directory fsynced, .swap renamed to .log, directory fsynced, .deleted
 *     unlinked. A crash at any point leaves a directory that kc_plog_open loads to the same
 *     state, without leftovers.
 */

/* Kafka's log.cleaner.delete.retention.ms and log.cleaner.min.cleanable.ratio defaults. */
#define KC_PLOG_DELETE_RETENTION_MS_DEFAULT 86400000
#define KC_PLOG_MIN_CLEANABLE_RATIO_DEFAULT 0.5

/* What kc_plog_clean did, over the closed segments before and after it. After a failure the
 * counts cover the groups of segments compacted before it. */
typedef struct kc_plog_clean_stats_s {
    int64_t segments_before;    /* closed segments */
    int64_t segments_after;     /* closed segments afterwards */
    int64_t segments_rewritten; /* closed segments that were replaced */
    int64_t bytes_before;       /* bytes of the closed segments */
    int64_t bytes_after;
    int64_t records_before; /* records of the closed segments (control/txn batches not counted) */
    int64_t records_after;  /* = records_before - superseded - tombstones_dropped on success */
    int64_t superseded;     /* dropped: a newer record of the same key is in the log */
    int64_t tombstones_dropped; /* dropped: the newest of its key, older than the retention */
    int64_t batches_dropped;    /* control and transactional batches dropped */
    int64_t keys;               /* distinct non-null keys in the durable log */
    int64_t bytes_read;         /* read: the whole durable log once, the rewritten segments again */
    int64_t bytes_written;      /* written: the new segments and their indexes */
} kc_plog_clean_stats_t;

/* Compact the closed segments of `l`, synchronously (see above). `now_ms` is the wall-clock
 * time in milliseconds, against which tombstone ages are measured; `delete_retention_ms` is
 * log.cleaner.delete.retention.ms (KC_PLOG_DELETE_RETENTION_MS_DEFAULT). Updates the plog's
 * list of segments. Memory: 64 to 128 bytes plus the key per distinct key.
 * Returns 0, -EINVAL (negative retention), -ENOMEM, KC_LOG_ECORRUPT, KC_LOG_EUNSUPPORTED,
 * KC_LOG_ECOMPRESS, KC_LOG_ETOOBIG or -errno, with kc_plog_error saying where. A failure leaves
 * the log holding the same state as before and the plog usable: appends and syncs go on, and
 * the next clean starts afresh. If the failure came after a swap was decided and the plog
 * could not finish it at once, kc_plog_replay and kc_plog_clean finish it first (or fail until
 * they can); kc_plog_open would finish it too. Segments compacted before the failure stay
 * compacted. `stats` may be NULL. Same threading rule as kc_plog_sync. */
int kc_plog_clean(kc_plog_t *l, int64_t now_ms, int64_t delete_retention_ms,
                  kc_plog_clean_stats_t *stats);

/* The same clean in three steps, so that the plog is not held while it runs: a flush (append,
 * then sync on the flusher thread) of the same partition goes on meanwhile.
 *
 *   kc_plog_clean_begin  on the plog's owner thread, when no other call on `l` runs (no sync in
 *                        flight): copies what the clean needs (the list of closed segments, the
 *                        active segment's synced size, the options) into a job. No I/O. Returns
 *                        0 with *job set, -EINVAL (negative retention) or -ENOMEM.
 *   kc_plog_clean_run    on any thread, exactly once: the whole compaction, on the job alone. It
 *                        reads the closed segments and the synced part of the active segment,
 *                        and writes and swaps closed segments only. Meanwhile the owner may call
 *                        kc_plog_append, kc_plog_sync (on the flusher thread, as usual), the
 *                        accessors and kc_plog_close on `l`, and segments may roll; a second
 *                        job on the same plog, kc_plog_replay and kc_plog_open of the same
 *                        partition directory must wait until run has returned (they would race
 *                        on its files). Returns what kc_plog_clean returns.
 *   kc_plog_clean_end    on the owner thread, after run returned, when no other call on `l` runs:
 *                        puts the compacted segments into the plog's list, stores the stats
 *                        (may be NULL), frees the job and returns run's result (with
 *                        kc_plog_error(l) saying why when it failed). With l == NULL (the plog
 *                        was closed meanwhile, after a failed write say) it only frees the job;
 *                        the directory is consistent either way, and the next open finishes a
 *                        swap the job left half-done. A NULL job is a no-op returning 0.
 *
 * A write that fails while the job runs is handled as always (the plog truncates what was not
 * synced, which is never in a closed segment). The job never holds the plog's descriptors. */
typedef struct kc_plog_clean_job_s kc_plog_clean_job_t;

int kc_plog_clean_begin(kc_plog_t *l, int64_t now_ms, int64_t delete_retention_ms,
                        kc_plog_clean_job_t **job);
int kc_plog_clean_run(kc_plog_clean_job_t *job);
int kc_plog_clean_end(kc_plog_t *l, kc_plog_clean_job_t *job, kc_plog_clean_stats_t *stats);

/* Whether a clean is worth running, as Kafka's min.cleanable.dirty.ratio decides: the closed
 * segments rolled since the last successful clean of this plog (all of them after an open) are
 * "dirty", the ones it produced or kept are "clean", and a clean is due when there are dirty
 * bytes and dirty / (clean + dirty) >= min_dirty_ratio (KC_PLOG_MIN_CLEANABLE_RATIO_DEFAULT; 0
 * = whenever a segment was rolled since). Also due when a failed clean left a swap to finish.
 * Cheap: a walk over the segment list, no I/O. */
bool kc_plog_clean_due(const kc_plog_t *l, double min_dirty_ratio);

/* ---- the clean-shutdown marker -------------------------------------------------------------
 *
 * Kafka's: a broker writes <log dir>/.kafka_cleanshutdown when it has flushed and closed every
 * log of that directory, and deletes it at start before it loads anything (so a crash while
 * loading counts as a crash). kcoord's data.dir is laid out as a Kafka log dir, so it uses the
 * same file with the same content, and a directory moves between kcoord and a Kafka broker
 * either way. docs/log-format.md ("Clean shutdown") has the rules. */
#define KC_LOG_CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"

/* At start: whether `data_dir` holds the marker, which is then removed (and the directory
 * fsynced) before anything else is written. Returns 0 with *was_clean set, or -errno when the
 * marker exists but could not be removed; *was_clean is then false, so that the logs are
 * recovered as after a crash (a marker left behind must not vouch for this run). */
int kc_log_clean_shutdown_take(const kc_log_io_t *io, const char *data_dir, bool *was_clean);

/* At shutdown, after every partition log was synced and closed without error: write the
 * marker (Kafka's JSON content, {"version":"0","broker_epoch":"-1"}), fsync it and the
 * directory. Returns 0 or -errno. */
int kc_log_clean_shutdown_mark(const kc_log_io_t *io, const char *data_dir);

/* Write "<dir>/<20-digit base offset><suffix>" into buf (suffix like ".log", ".index",
 * ".log.swap"). Returns 0, or -ENAMETOOLONG when it does not fit in n bytes. */
int kc_log_segment_path(char *buf, size_t n, const char *dir, int64_t base_offset,
                        const char *suffix);

/* Print a segment file (.log), an index file (.index), or every segment of a partition
 * directory, as JSON lines in the spirit of `kafka-dump-log --offsets-decoder`: a line per
 * batch (offsets, counts, producer fields, position, timestamps, size, codec, crc, isvalid),
 * then a line per record with its key and value decoded from the __consumer_offsets schemas
 *     {"offset":7,...,"key":{"type":"1","data":{...}},"payload":{"version":"3","data":{...}}}
 * (a tombstone's payload is null; a record type or version kcoord does not know is printed as
 * hex under "raw"). A batch that fails validation is printed as a line with "error", and the
 * file stops there. Returns 0 when everything printed was valid, 1 when some of it was not,
 * and -1 when a path could not be read (said in an "error" line). */
int kc_log_dump(FILE *out, const char *path);

/* Check a data directory (every __consumer_offsets-<N> directory in it) or one partition
 * directory without changing anything: every batch's length, magic and CRC, that offsets
 * increase, that every record parses and every known key and value decodes, that indexes match
 * their segments, and that no compaction leftovers remain. Prints one line per problem and a
 * summary line per partition to `out`. Returns the number of problems (0 = clean), or -1 when
 * `dir` cannot be read. A stale index or a compaction leftover counts as a problem too: the
 * next open repairs them, but they mean something was interrupted. */
int kc_log_verify(const char *dir, FILE *out);

/* The command-line part: argv[0] is "dump-log" (args: PATH...) or "verify-log" (args: DIR).
 * Prints to stdout (errors and usage to stderr) and returns the process exit status: 0 clean,
 * 1 problems found, 2 usage or I/O error. */
int kc_log_tool_main(int argc, char **argv);

#endif
