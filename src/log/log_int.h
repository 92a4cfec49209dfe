/* log_int.h - inside the log room: the segment scanner and file-name helpers that the partition
 * log (plog.c) and the dump and verify tools (dump.c) share. Not part of the door (log.h).
 */
#ifndef KC_LOG_LOG_INT_H
#define KC_LOG_LOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/batch.h"
#include "log/io.h"

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

#endif
