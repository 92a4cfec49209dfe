/* coord_int.h - inside the coordinator room: what a shard (one __consumer_offsets partition)
 * holds, for coord.c, shard.c and white-box unit tests.
 *
 * Not part of the door (coord.h). Every other room sees kc_partition_t as an opaque type and
 * reaches its groups and offsets through the kc_shard_* functions only, so the rules between
 * groups and offsets live in shard.c alone. Unit tests of the coordinator include this header
 * to set up state directly (a commit with a chosen timestamp, a clock moved back).
 */
#ifndef KC_COORD_COORD_INT_H
#define KC_COORD_COORD_INT_H

#include "coord/coord.h"
#include "group/group.h"
#include "offsets/offsets.h"

/* One __consumer_offsets partition: the groups and offsets it owns. `groups` and `offsets`
 * are NULL unless the state is KC_PART_ACTIVE. */
struct kc_partition_s {
    int32_t index;
    int state; /* KC_PART_* */
    kc_gm_t *groups;
    kc_offsets_t *offsets;
    kc_partition_obs_t obs;
    /* In a cluster: 0 while this node leads and serves, else the error every request for the
     * partition gets (NOT_COORDINATOR on a follower, COORDINATOR_LOAD_IN_PROGRESS on a leader
     * still applying earlier terms). A follower's groups and offsets are kept up to date by
     * replay but serve nothing. Always 0 on a single node. */
    int16_t cluster_err;
};

/* Apply one record read back from the log to `groups` and `offsets` (a partition's state, or
 * the fresh state a load builds): the replay switch on the record type. Offset commits go to
 * the offsets store (after the group manager has noted the simple group an offset implies),
 * group and consumer-group records to the group manager; other types are skipped. Returns 0;
 * -1 when out of memory; -2 when the record is malformed (nothing changed: the loader skips
 * it, as Kafka's does). */
int kc_shard_replay_into(kc_gm_t *groups, kc_offsets_t *offsets, const uint8_t *key, size_t key_len,
                         const uint8_t *value, size_t value_len);

/* ---- The metadata partition (meta.c) --------------------------------------------------------- */

typedef struct kc_meta_s kc_meta_t;
struct kc_log_io_s;

/* Open and replay __kcoord_metadata-0 (on the calling thread). Never NULL unless out of memory;
 * when the log cannot be read, the error is logged and the result serves nothing
 * (kc_meta_ok false: appends fail with KAFKA_STORAGE_ERROR). */
kc_meta_t *kc_meta_open(const kc_conf_t *conf, const struct kc_log_io_s *io, bool clean_start);
bool kc_meta_ok(const kc_meta_t *m);
/* fsync what was written and not yet synced (policies interval, never). 0 or -errno. */
int kc_meta_sync(kc_meta_t *m);
/* Sync, close, free (NULL allowed). 0 or the first error. */
int kc_meta_close(kc_meta_t *m);
/* Whether the coordinator is a cluster node's (coord.c). */
bool kc_coord_clustered(const kc_coord_t *c);
/* Whether it is a cluster node's leader serving (every earlier term applied). */
bool kc_coord_leads(const kc_coord_t *c);
/* The group configs it holds (coord.c). */
struct kc_gconf_s *kc_coord_gconf(kc_coord_t *c);

/* A cluster node's side (see kc_meta_write in coord.h), for coord.c's raft callbacks:
 *   kc_meta_cluster_pending  records wait for the leader's next entry;
 *   kc_meta_cluster_batch    those records as one RecordBatch (malloc'd), and the sequence
 *                            number that its commit completes (0, or a KC_LOG_E* code);
 *   kc_meta_cluster_done     the writes up to `seq` end with err (0: committed and applied);
 *   kc_meta_cluster_fail     drop what was not submitted and end every waiting write with err;
 *   kc_meta_cluster_apply    a committed batch: to the log, the live set and the listeners;
 *   kc_meta_snapshot         the live records, in the snapshot's partition layout;
 *   kc_meta_restore          make the live set recs[0..n) (a snapshot's), telling the
 *                            listeners of each change. 0, or -1 when out of memory. */
bool kc_meta_cluster_pending(const kc_meta_t *m);
int kc_meta_cluster_batch(kc_meta_t *m, int64_t now_ms, uint8_t **buf, size_t *len, uint64_t *seq);
void kc_meta_cluster_done(kc_meta_t *m, uint64_t seq, int16_t err);
void kc_meta_cluster_fail(kc_meta_t *m, int16_t err);
void kc_meta_cluster_apply(kc_coord_t *c, const uint8_t *batch, size_t len);
void kc_meta_snapshot(const kc_meta_t *m, kc_writer_t *w);
struct kc_log_record_s;
int kc_meta_restore(kc_coord_t *c, const struct kc_log_record_s *recs, size_t n);
/* The coordinator's metadata partition (coord.c). */
kc_meta_t *kc_coord_meta(kc_coord_t *c);
/* One record of a raft snapshot's partition section (coord.c, which reads them back): its
 * timestamp, then its key and its value, each an int32 length and the bytes. */
void kc_coord_snap_record(kc_writer_t *w, int64_t ts, const uint8_t *key, size_t key_len,
                          const uint8_t *value, size_t value_len);

/* ---- Group configs (gconf.c) ----------------------------------------------------------------- */

typedef struct kc_gconf_s kc_gconf_t;
kc_gconf_t *kc_gconf_new(void);
void kc_gconf_free(kc_gconf_t *s);
/* Replay the ConfigRecords of the metadata partition into `s`. 0, or -ENOMEM. */
int kc_gconf_load(kc_gconf_t *s, kc_coord_t *c);
void kc_gconf_lookup(const kc_gconf_t *s, kc_str_t group, int32_t out[KC_GCONF_N]);
size_t kc_gconf_each(const kc_gconf_t *s, void (*fn)(void *arg, kc_str_t group), void *arg);
int16_t kc_gconf_alter(kc_gconf_t *s, kc_coord_t *c, const kc_conf_t *conf, kc_str_t group,
                       const kc_gconf_op_t *ops, size_t n, bool validate_only, char *msg,
                       size_t len, kc_meta_done_fn done, void *arg);
/* The ConfigRecord type of the metadata partition (KRaft's), and one such record (a removal
 * when its value is NULL) applied to `s`: 0 (an unknown record is skipped with a warning), or
 * -ENOMEM. */
enum { KC_GCONF_RECORD_TYPE = 4 };
int kc_gconf_apply(kc_gconf_t *s, const kc_meta_rec_t *rec);

#endif
