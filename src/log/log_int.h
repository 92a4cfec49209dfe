/* log_int.h - inside the log room: the segment scanner and file-name helpers that the partition
 * log (plog.c) and the dump and verify tools (dump.c) share, and the partition log's state,
 * which plog.c and the log cleaner (cleaner.c) share. Not part of the door (log.h).
 */
#ifndef KC_LOG_LOG_INT_H
#define KC_LOG_LOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/batch.h"
#include "log/io.h"
#include "log/log.h"

/* Reads the batches of one segment file front to back, validating each (kc_batch_validate).
 * Reads go through a buffer of at least 1 MiB that grows to hold the largest batch; a batch
 * is never larger than what the file holds, so a garbage length cannot make it allocate more
 * than the file's size. */
typedef struct kc_segscan_s {
    const kc_log_io_t *io;
    int fd;
    int64_t size;      /* file size when the scan started */
    int64_t pos;       /* where the next batch starts */
    int64_t batch_pos; /* where the batch last returned (or the failure) starts */
    uint8_t *buf;
    size_t cap;
    int64_t buf_off; /* file offset of buf[0] */
    size_t buf_len;  /* valid bytes in buf */
    bool torn;       /* the last failure was a batch cut short by the end of the file */
    char why[200];   /* the last failure */
} kc_segscan_t;

/* Start scanning the open file `fd` of `size` bytes from `pos`. Cannot fail. */
void kc_segscan_init(kc_segscan_t *s, const kc_log_io_t *io, int fd, int64_t size, int64_t pos);
void kc_segscan_free(kc_segscan_t *s);

/* The next batch: returns 1 with *p (valid until the next call) and *len and *h set, and
 * s->pos moved past it; 0 at the end of the file; KC_LOG_ECORRUPT with s->why, s->batch_pos
 * and s->torn set (fewer bytes left than a header, or than batchLength says, set torn); -ENOMEM
 * or -errno from the I/O table. */
int kc_segscan_next(kc_segscan_t *s, const uint8_t **p, size_t *len, kc_batch_hdr_t *h);

/* After a KC_LOG_ECORRUPT whose header was readable and whose batchLength fits in the file (a
 * CRC mismatch, say), move past that batch and return true, so that a tool can report the bad
 * batch and go on; false when the batch cannot be delimited (torn, bad length or magic). */
bool kc_segscan_skip(kc_segscan_t *s, const kc_batch_hdr_t *h);

/* Look for a valid batch (header, length, CRC and record count right) starting at any byte
 * position in [from, size), with a base offset of at least `min_base`: what tells damage from
 * a torn write after a bad spot. Uses s's buffer; s->pos is unchanged. Returns 1 with *at set;
 * 0 when there is none; 2 with *at set when the CRC work (capped at 4 times the bytes searched
 * plus 16 MiB, against quadratic work on garbage) ran out before the answer was known; -ENOMEM
 * or -errno. */
int kc_segscan_find_valid(kc_segscan_t *s, int64_t from, int64_t min_base, int64_t *at);

/* Kinds of files in a partition directory. */
typedef enum {
    KC_LF_OTHER = 0, /* not ours: Kafka's .timeindex, .snapshot, checkpoints, anything else */
    KC_LF_LOG,       /* <offset>.log */
    KC_LF_INDEX,     /* <offset>.index */
    KC_LF_DELETED,   /* *.deleted */
    KC_LF_CLEANED,   /* *.cleaned */
    KC_LF_SWAP,      /* *.swap */
} kc_log_file_kind_t;

/* Classify a file name; *offset gets the leading number when there is one (else -1). */
kc_log_file_kind_t kc_log_file_kind(const char *name, int64_t *offset);

/* The index entries Kafka's LogSegment builds for a segment: an entry {lastOffset - base,
 * position} for a batch at `pos` when pos - (position of the previous entry, or 0) is more than
 * `interval` bytes. */
static inline bool kc_log_index_due(int64_t pos, int64_t last_entry_pos, int32_t interval)
{
    return pos - last_entry_pos > (int64_t)interval;
}

/* ---- the partition log's state (plog.c, cleaner.c) ------------------------------------- */

/* One segment as the plog knows it. */
typedef struct kc_log_seg_s {
    int64_t base;
    int64_t size;        /* bytes of valid batches */
    int64_t next_offset; /* the offset after its last batch; base when empty */
} kc_log_seg_t;

/* One entry of a sparse offset index (Kafka's OffsetIndex), as in the .index file. */
typedef struct kc_log_idx_entry_s {
    int32_t rel; /* last offset of the batch minus the segment's base */
    int32_t pos; /* byte position of the batch */
} kc_log_idx_entry_t;

struct kc_plog_s {
    const kc_log_io_t *io;
    kc_plog_opts_t opts;
    int32_t partition;
    char *dir;
    kc_log_seg_t *segs; /* oldest first; the last one is the active segment */
    size_t nsegs, capsegs;
    int fd;     /* active segment */
    int idx_fd; /* active index; -1 when it could not be opened */
    kc_log_idx_entry_t *idx;
    size_t nidx, capidx;
    bool idx_stale;       /* the .index file does not hold exactly idx[] */
    int64_t roll_base_ms; /* max timestamp of the active segment's first batch; -1 unknown */
    int64_t synced_size;  /* durable bytes of the active segment */
    int64_t synced_next;  /* next offset as of synced_size */
    bool dir_dirty;       /* a segment was created since the last directory fsync */
    bool need_truncate;   /* the active file may hold bytes past its valid size */
    bool gone;            /* the active segment was deleted or replaced: KC_LOG_EGONE for good */
    kc_batch_ctx_t *bctx;
    kc_writer_t wbuf;
    char err[600];
    /* The cleaner's (zero after kc_plog_open). */
    int64_t clean_upto; /* closed segments based below this were compacted by the last clean */
    bool clean_pending; /* a clean failed after it began to swap: finish it before reading */
};

/* Write entries to an index file, replacing its content. Returns 0 or -errno / -ENOMEM. */
int kc_log_index_write(const kc_log_io_t *io, int fd, const kc_log_idx_entry_t *e, size_t n);

/* For a running plog whose closed segments' files changed under it (a clean that failed
 * half-way): resolve compaction leftovers exactly as kc_plog_open does, then read the list of
 * closed segments again from the directory, checking each and its index as the open does. The
 * active segment is not touched. Returns 0, or a negative code with l->err set; on failure the
 * old list is kept. (plog.c) */
int kc_plog_reload_closed(kc_plog_t *l);

/* If l->clean_pending, kc_plog_reload_closed and clear the flag; else nothing. Returns 0 or
 * kc_plog_reload_closed's error. kc_plog_replay and kc_plog_clean call it first. (cleaner.c) */
int kc_plog_clean_finish(kc_plog_t *l);

#endif
