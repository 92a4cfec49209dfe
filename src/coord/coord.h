/* coord.h - the coordinator room's door: the topic catalog, the partitions that own the
 * groups and offsets, and the shard door through which the other rooms reach them.
 *
 * The catalog is the set of topics consumers can subscribe to: name, topic id and partition
 * count. Their partitions hold no records. It starts with the topics of the configuration;
 * CreateTopics, DeleteTopics and Metadata's auto-creation change it while the daemon runs, in
 * memory only: a restart starts again from the configuration. A topic's id is derived from the
 * cluster id and the topic name, so it is the same in every response and across restarts of the
 * same data directory (the cluster id is kept in meta.properties); a topic deleted and created
 * again gets its old id back.
 */
#ifndef KC_COORD_COORD_H
#define KC_COORD_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "conf.h"
#include "group/group.h"
#include "offsets/offsets.h"
#include "proto/wire.h"

typedef struct kc_topic_s {
    char *name;         /* owned, NUL-terminated */
    kc_uuid_t id;       /* never all-zero */
    int32_t partitions; /* >= 1 */
} kc_topic_t;

typedef struct kc_catalog_s {
    char *cluster_id;   /* owned copy */
    kc_topic_t *topics; /* n entries in the order they were added; owned */
    size_t n;
    size_t cap; /* entries allocated at `topics` */
    /* Changes (grows) whenever a topic is added or removed, so that consumer groups notice a
     * change of the topics they subscribe to by comparing it with the value they last saw. */
    uint64_t version;
} kc_catalog_t;

/* Start a catalog for `cluster_id` holding the topics of the configuration. Returns 0, or -1
 * when out of memory. */
int kc_catalog_init(kc_catalog_t *cat, const char *cluster_id, const kc_conf_topic_t *topics,
                    size_t n);
void kc_catalog_free(kc_catalog_t *cat);

/* Results of kc_catalog_add. */
enum {
    KC_CATALOG_OK = 0,
    KC_CATALOG_NOMEM = -1,  /* out of memory: the catalog is unchanged */
    KC_CATALOG_EXISTS = -2, /* a topic of that name exists: the catalog is unchanged */
};

/* Add the topic `name` (a valid topic name, not null) with `partitions` (>= 1) partitions and
 * the id kc_topic_id_for gives it, after the topics already there. Returns KC_CATALOG_OK,
 * KC_CATALOG_EXISTS or KC_CATALOG_NOMEM. The name is copied. Adding may move the topic array:
 * kc_topic_t pointers taken before are invalid after, but a topic's `name` string stays where
 * it is until that topic is removed. */
int kc_catalog_add(kc_catalog_t *cat, kc_str_t name, int32_t partitions);

/* Remove the topic called `name`, keeping the order of the others. Returns 0, or -1 when there
 * is no such topic. kc_topic_t pointers and the removed topic's name are invalid after. */
int kc_catalog_remove(kc_catalog_t *cat, kc_str_t name);

/* The topic called `name`, or NULL. The pointer is valid until the catalog changes. */
const kc_topic_t *kc_catalog_find(const kc_catalog_t *cat, kc_str_t name);
/* The topic with id `id`, or NULL. */
const kc_topic_t *kc_catalog_find_id(const kc_catalog_t *cat, kc_uuid_t id);

/* The topic id kcoord gives `name` in the cluster `cluster_id`: 128 bits of a hash of both,
 * with the RFC 4122 version (4) and variant bits set, never zero. */
kc_uuid_t kc_topic_id_for(const char *cluster_id, const char *name, size_t name_len);

/* ---- Partitions -------------------------------------------------------------------------- */

/* Kafka's group placement: abs(Java String.hashCode(group_id)) % n, the hash taken over the
 * id's UTF-16 code units (invalid UTF-8 counts as U+FFFD, as Java decodes it), with
 * abs(INT32_MIN) = 0 as Kafka's Utils.abs. */
int32_t kc_partition_for(kc_str_t group_id, int32_t n);

/* A partition's state: its groups are served only when ACTIVE. */
enum {
    KC_PART_LOADING = 0, /* its log is being replayed: COORDINATOR_LOAD_IN_PROGRESS */
    KC_PART_ACTIVE = 1,
    KC_PART_FAILED = 2, /* its log could not be loaded: NOT_COORDINATOR */
};

/* Why a partition is KC_PART_FAILED (kc_partition_obs_t.out), for /readyz. */
enum {
    KC_PART_OUT_LOAD = 0,    /* its log could not be loaded (corrupt, unsupported): no retry */
    KC_PART_OUT_LOAD_RETRY,  /* its load failed with an I/O error: reloaded after a backoff */
    KC_PART_OUT_WRITE_RETRY, /* its log writes failed: reloaded after a backoff */
    KC_PART_OUT_LOST,        /* its active segment was lost under it: out until a restart */
};

/* What the coordinator shows of a partition's log to observers (src/obs/), kept up to date on
 * the loop thread: the log itself must not be read while a thread-pool job uses it. */
typedef struct kc_partition_obs_s {
    int64_t load_ms;         /* duration of the last successful load, 0 before the first */
    int64_t log_bytes;       /* the log's size and segments after its last load, append or */
    int64_t log_segments;    /* compaction */
    bool write_failing;      /* its last append or fsync failed, and none has succeeded since */
    int64_t write_failed_ms; /* when that last failure happened (kc_coord_now: monotonic) */
    int out;                 /* KC_PART_OUT_*: why the partition is FAILED, when it is */
} kc_partition_obs_t;

/* One __consumer_offsets partition: a shard, owning the groups and offsets that hash to it.
 * Opaque: other rooms read it through the accessors below and change it through the shard
 * door (kc_shard_*). A kc_partition_t pointer stays valid until kc_coord_close. */
typedef struct kc_partition_s kc_partition_t;

/* The partition's number, its state (KC_PART_*) and its log figures for observers. */
int32_t kc_partition_index(const kc_partition_t *p);
int kc_partition_state(const kc_partition_t *p);
const kc_partition_obs_t *kc_partition_obs(const kc_partition_t *p);

/* The Kafka error a request for a group of `p` gets now: 0 when ACTIVE,
 * COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR when the partition failed. */
int16_t kc_partition_error(const kc_partition_t *p);

typedef struct kc_coord_s kc_coord_t;

/* Completion of parked JoinGroup / SyncGroup requests: `waiter` is what the API handler gave
 * kc_shard_join / kc_shard_sync. */
typedef struct kc_coord_replies_s {
    void (*join_done)(void *waiter, const kc_join_group_response_t *resp);
    void (*sync_done)(void *waiter, const kc_sync_group_response_t *resp);
} kc_coord_replies_t;

/* Create the offsets.topic.num.partitions partitions on `loop` and start loading them from
 * the logs under conf->data_dir, with the file operations of `io` (NULL: the real ones; tests
 * pass a table that injects faults). `conf`, `cat` and `io` must outlive the coordinator.
 * NULL when out of memory. */
struct kc_log_io_s;
kc_coord_t *kc_coord_new(uv_loop_t *loop, const kc_conf_t *conf, kc_catalog_t *cat,
                         const kc_coord_replies_t *replies, const struct kc_log_io_s *io);

/* Close the timers and free everything; parked requests are answered with an error first.
 * `done` runs from the loop once every handle is closed. */
void kc_coord_close(kc_coord_t *c, void (*done)(void *arg), void *arg);

/* The partition that owns `group_id`. Whatever the caller then does to its groups or offsets,
 * the partition's timer is re-armed before the loop next sleeps. */
kc_partition_t *kc_coord_partition(kc_coord_t *c, kc_str_t group_id);

/* Partition by index, 0 <= i < kc_coord_partitions(c); also marks it for re-arming. */
kc_partition_t *kc_coord_partition_at(kc_coord_t *c, int32_t i);
int32_t kc_coord_partitions(const kc_coord_t *c);

/* The time the group state machines are given: the monotonic clock (timers, ages,
 * durations) and the wall clock (timestamps in records, and what people read). */
kc_time_t kc_coord_time(const kc_coord_t *c);

/* Monotonic milliseconds (arbitrary origin), for timers, ages and windows: never the wall
 * clock, which may be stepped. */
int64_t kc_coord_now(const kc_coord_t *c);

/* Whether some record emitted so far by the partitions parts[0..n) is not durable yet: a
 * reply that depends on them must then be held (kc_coord_hold), never sent now. */
bool kc_coord_pending(const kc_coord_t *c, const int32_t *parts, size_t n);

/* Hold a reply until the records emitted so far by the partitions parts[0..n) are durable.
 * Returns 0 when nothing needs waiting (answer now), 1 when the reply is held: release(arg, ok)
 * is then called later from the loop, ok = true once they are durable, false when their write
 * failed (the reply must then become an error, NOT_COORDINATOR). Returns -1 when a wait is
 * needed but cannot be set up (out of memory): release is never called, and the reply must not
 * be the success answer (answer NOT_COORDINATOR, which the client retries, or close). */
int kc_coord_hold(kc_coord_t *c, const int32_t *parts, size_t n,
                  void (*release)(void *arg, bool ok), void *arg);

/* ---- A cluster node (cluster.voters set) -----------------------------------------------------
 *
 * The coordinator of a cluster node writes nothing to its logs itself: each partition's pending
 * records go to raft as one batch, all partitions' batches of a loop turn in one entry
 * (kc_cluster_submit), and a reply held by kc_coord_hold is released when raft has committed them.
 * Every committed batch, this node's or the leader's, reaches the partition's log through the
 * callbacks kc_coord_cluster_ops gives, and a follower also replays it into its groups and offsets.
 * The partition logs are rebuilt from raft at every start: kc_coord_new then starts them empty, and
 * raft's snapshot and entries fill them. */
struct kc_cluster_s;
struct kc_cluster_ops_s;

/* The callbacks a kc_cluster_t needs, bound to `c` (a coordinator made with cluster.voters). */
void kc_coord_cluster_ops(kc_coord_t *c, struct kc_cluster_ops_s *ops);
/* The cluster the coordinator submits its batches to; set before kc_cluster_start. */
void kc_coord_set_cluster(kc_coord_t *c, struct kc_cluster_s *cl);

/* Number of partitions still loading. */
int32_t kc_coord_loading(const kc_coord_t *c);

/* A topic was deleted: remove its committed offsets in every group. */
void kc_coord_topic_deleted(kc_coord_t *c, kc_str_t topic);

/* ---- Events for observers ------------------------------------------------------------------
 *
 * The coordinator counts nothing itself: it reports what happens to its logs through these
 * hooks, and the observability room (which sits above this one) counts them. Any hook may be
 * NULL. Each is called on the loop thread. */
typedef struct kc_coord_events_s {
    void (*log_append)(uint64_t records, uint64_t bytes); /* a batch was appended */
    void (*log_fsync)(uint64_t ns);                       /* an fsync took `ns` */
    void (*log_write_failed)(void);                       /* an append or fsync failed */
    void (*log_segment_lost)(void); /* an active segment was deleted or replaced under us */
    void (*log_corrupt)(void);      /* a load was refused for corrupt log data */
    void (*cleaner_run)(bool ok, int64_t bytes_reclaimed); /* a compaction ended */
} kc_coord_events_t;

/* Report to `ev` (copied; NULL: to nobody, the default) from now on. */
void kc_coord_set_events(kc_coord_t *c, const kc_coord_events_t *ev);

/* ---- The shard door --------------------------------------------------------------------------
 *
 * Every partition is a shard, as Kafka's GroupCoordinatorShard: the one interface through which
 * the API room and the observability room reach a partition's groups and offsets. A write
 * (commit, join, delete...) runs against the shard, answers, and emits the __consumer_offsets
 * records it causes to the partition's pending batch; the caller holds its answer until they
 * are durable (kc_coord_hold). The rules that tie groups and offsets together live behind
 * this door alone: a commit is validated by the group before its offsets are written, offsets
 * alone still make a group for DeleteGroups, retention removes Empty groups without offsets.
 *
 * The request functions take a partition that serves (kc_partition_error(p) == 0: ACTIVE);
 * the read-only views (each_group, stats, json_*) accept any partition and show nothing of one
 * that does not serve. Times are kc_coord_time(c). Strings and arrays of answers come from the
 * caller's arena `a`; strings handed out otherwise are views valid until the shard changes. */

/* Results of the request functions that may park their request. */
enum {
    KC_SHARD_ANSWERED = 0, /* the response is filled now */
    KC_SHARD_PARKED = 1,   /* answered later through kc_coord_replies_t with `waiter` */
};

/* One partition of an OffsetCommit, as the API room resolved it against the catalog. */
typedef struct kc_shard_commit_s {
    kc_str_t topic;     /* the topic name */
    int32_t partition;  /* the topic's partition */
    kc_offset_t value;  /* what to store; the metadata is copied */
    int16_t error_code; /* in: an error the caller found (unknown topic, metadata too large):
                         * the entry is not stored; out: the entry's answer */
} kc_shard_commit_t;

/* OffsetCommit (version `version`) of `group_id` by member `member_id` (generation or member
 * epoch `generation`, -1 for a simple or admin commit; instance id `instance_id`): the group
 * validates the commit first (generation, member, state: kc_gm_validate_commit, which may
 * create an Empty group for a simple commit, and counts as a member's heartbeat), and only
 * then is each entry of v[0..n) whose error_code is 0 stored, with its record. A group error
 * replaces every entry's error_code; an entry that cannot be stored gets
 * COORDINATOR_NOT_AVAILABLE. Returns the group's error, 0 when the commit was accepted. */
int16_t kc_shard_commit_offsets(kc_partition_t *p, kc_time_t now, int16_t version,
                                kc_str_t group_id, int32_t generation, kc_str_t member_id,
                                kc_str_t instance_id, kc_shard_commit_t *v, size_t n);

/* OffsetFetch v9+'s member check (KIP-848 groups only): 0 when the fetch may proceed. */
int16_t kc_shard_fetch_check(kc_partition_t *p, kc_str_t group_id, kc_str_t member_id,
                             int32_t member_epoch);
/* The committed offset of one partition, or NULL. Valid until the shard changes. */
const kc_offset_t *kc_shard_fetch_offset(const kc_partition_t *p, kc_str_t group_id, kc_str_t topic,
                                         int32_t partition);
/* Every committed offset of the group, ordered by topic name then partition. fn must not
 * change the shard. */
void kc_shard_fetch_all(const kc_partition_t *p, kc_str_t group_id,
                        void (*fn)(void *arg, kc_str_t topic, int32_t partition,
                                   const kc_offset_t *value),
                        void *arg);

/* One partition of an OffsetDelete. */
typedef struct kc_shard_offset_del_s {
    kc_str_t topic;
    int32_t partition;
    int16_t error_code; /* in: an error the caller found (unknown topic or partition): the
                         * entry is left alone; out: the entry's answer */
} kc_shard_offset_del_t;

/* OffsetDelete of `group_id`: the group-level check first (GROUP_ID_NOT_FOUND,
 * NON_EMPTY_GROUP), returned with nothing done; then, per entry of v[0..n) whose error_code is
 * 0, the topic check (GROUP_SUBSCRIBED_TO_TOPIC) and, when it passes, the offset's deletion
 * with its tombstone. Returns the group-level error, 0 when the entries were looked at. */
int16_t kc_shard_delete_offsets(kc_partition_t *p, kc_str_t group_id, kc_shard_offset_del_t *v,
                                size_t n);

/* DeleteGroups for one group: the group goes (tombstone) when it is Empty, and so do all its
 * offsets; a group that holds only offsets (no group state) is still a group, as in Kafka.
 * Returns 0, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP; *offsets_deleted (may be NULL) is set to
 * how many offsets went. */
int16_t kc_shard_delete_group(kc_partition_t *p, kc_time_t now, kc_str_t group_id,
                              size_t *offsets_deleted);

/* The classic group protocol: JoinGroup, SyncGroup (KC_SHARD_ANSWERED or KC_SHARD_PARKED; a
 * parked request is answered once through kc_coord_replies_t with `waiter`), Heartbeat and
 * LeaveGroup (answered at once). Contracts as kc_gm_join and friends in group/group.h. */
int kc_shard_join(kc_partition_t *p, kc_time_t now, int16_t version,
                  const kc_join_group_request_t *req, kc_str_t client_id, kc_str_t client_host,
                  void *waiter, kc_arena_t *a, kc_join_group_response_t *resp);
int kc_shard_sync(kc_partition_t *p, kc_time_t now, int16_t version,
                  const kc_sync_group_request_t *req, void *waiter, kc_arena_t *a,
                  kc_sync_group_response_t *resp);
void kc_shard_heartbeat(kc_partition_t *p, kc_time_t now, int16_t version,
                        const kc_heartbeat_request_t *req, kc_heartbeat_response_t *resp);
void kc_shard_leave(kc_partition_t *p, kc_time_t now, int16_t version,
                    const kc_leave_group_request_t *req, kc_arena_t *a,
                    kc_leave_group_response_t *resp);

/* ConsumerGroupHeartbeat: the request checks alone (no partition needed: Kafka validates
 * before it looks for the group's partition; `assignors` is group.consumer.assignors), then
 * the heartbeat itself, answered at once. */
int16_t kc_shard_consumer_check(const char *assignors, int16_t version,
                                const kc_consumer_group_heartbeat_request_t *req, kc_arena_t *a,
                                kc_str_t *message);
/* `filter`: the caller's DESCRIBE rights on topics when an authorizer is on (NULL: none), for
 * the group's subscription regexes (kc_gm_consumer_heartbeat_filtered). */
void kc_shard_consumer_heartbeat(kc_partition_t *p, kc_time_t now, int16_t version,
                                 const kc_consumer_group_heartbeat_request_t *req,
                                 kc_str_t client_id, kc_str_t client_host,
                                 const kc_gm_topic_filter_t *filter, kc_arena_t *a,
                                 kc_consumer_group_heartbeat_response_t *resp);

/* DescribeGroups and ConsumerGroupDescribe of one group. */
void kc_shard_describe(const kc_partition_t *p, int16_t version, kc_str_t group_id,
                       bool include_authorized_operations, kc_arena_t *a,
                       kc_describe_groups_described_group_t *out);
void kc_shard_consumer_describe(const kc_partition_t *p, int16_t version, kc_str_t group_id,
                                bool include_authorized_operations, kc_arena_t *a,
                                kc_consumer_group_describe_described_group_t *out);

/* Call fn for every group of the shard (Dead excluded; none when it does not serve). fn must
 * not change the shard. ListGroups and the observers use it. */
void kc_shard_each_group(const kc_partition_t *p, void (*fn)(void *arg, const kc_group_info_t *g),
                         void *arg);

/* Retention: expire the offsets older than `retention_ms` at wall time now.wall_ms (KIP-211,
 * the group says which are protected), then remove the Empty groups left without offsets.
 * Returns the number of offsets removed. */
size_t kc_shard_expire(kc_partition_t *p, kc_time_t now, int64_t retention_ms);

/* A topic was deleted: remove its offsets in every group of the shard; returns how many. */
size_t kc_shard_delete_topic(kc_partition_t *p, kc_str_t topic);

/* Apply one committed record (a follower's replay; the loader uses the same switch): offset
 * records to the offsets, group records to the groups, other record types skipped. Returns 0,
 * -1 (out of memory, or the shard does not serve) or -2 (malformed); on error nothing changed. */
int kc_shard_replay(kc_partition_t *p, const uint8_t *key, size_t key_len, const uint8_t *value,
                    size_t value_len);

/* Views for observers: ADD the shard's group counters to *out (nothing when it does not
 * serve); a group's JSON summary and full JSON (0, or -1 when there is no such group or the
 * shard does not serve; see kc_gm_json_summary and kc_gm_json_group); the label of a
 * KC_GM_REFUSED_* kind. */
void kc_shard_stats(const kc_partition_t *p, kc_gm_stats_t *out);
int kc_shard_json_summary(const kc_partition_t *p, kc_str_t group_id, kc_emit_fn emit, void *arg);
int kc_shard_json_group(const kc_partition_t *p, int64_t mono_ms, kc_str_t group_id,
                        kc_emit_fn emit, void *arg);
const char *kc_shard_refused_name(int kind);

/* ---- The metadata partition (meta.c) ---------------------------------------------------------
 *
 * The daemon's own records, which belong to no group: group configs (below), and whatever other
 * rooms keep across restarts (ACL bindings, SCRAM credentials). Kafka keeps them in its KRaft
 * log; kcoord in one log partition of its own, <data.dir>/__kcoord_metadata-0, written as the
 * __consumer_offsets partitions are (Kafka record batches; docs/log-format.md). A record's key
 * starts with an int16 record type, KRaft's MetadataRecordType number (ConfigRecord 4,
 * AccessControlEntryRecord 22...), then the record's key fields; its value is the record's value
 * fields, or NULL to remove the key. The newest record per key wins; the log compacts.
 * Loaded in kc_coord_new before anything is served. Loop thread only. */
#define KC_META_TOPIC "__kcoord_metadata"

typedef struct kc_meta_rec_s {
    const uint8_t *key; /* record type (int16, big-endian) first */
    size_t key_len;
    const uint8_t *value; /* NULL: remove the key */
    size_t value_len;
} kc_meta_rec_t;

/* Call fn for every live record (newest per key, removed keys left out) whose record type is
 * `type`, in the order they were last written; a room replays its state with it at start. The
 * record is valid only during the call, and fn must not append. A nonzero return of fn stops
 * the walk and is returned; 0 otherwise. */
int kc_meta_each(kc_coord_t *c, int16_t type, int (*fn)(void *arg, const kc_meta_rec_t *rec),
                 void *arg);

/* The live record of key `key`, in *out (valid until the next append), or NULL. */
const kc_meta_rec_t *kc_meta_get(kc_coord_t *c, const uint8_t *key, size_t key_len,
                                 kc_meta_rec_t *out);

/* A single node: append v[0..n) as one batch and make it durable as log.flush.policy says
 * (always: written and fsynced before this returns; interval, never: written). Returns 0 once it
 * is, and the records are then live (kc_meta_each, kc_meta_get); KAFKA_STORAGE_ERROR when the
 * log could not be read at start or the write failed (nothing of the batch is kept, in the log
 * or in memory); UNKNOWN_SERVER_ERROR when out of memory. The bytes are copied. A cluster node
 * refuses it (POLICY_VIOLATION): its writes wait for raft, through kc_meta_write. */
int16_t kc_meta_append(kc_coord_t *c, const kc_meta_rec_t *v, size_t n);

/* ---- The metadata partition on a cluster node --------------------------------------------------
 *
 * A cluster node replicates the partition through raft with the __consumer_offsets partitions:
 * its batches travel in the same raft entries, tagged with the partition number
 * KC_COORD_META_PARTITION, which no __consumer_offsets partition has (they are 0..n-1). It is
 * part of every raft snapshot, and every node applies every committed batch to its own
 * __kcoord_metadata-0 and to the state read from it (group configs here, ACLs and SCRAM
 * credentials through kc_meta_listen), so every node authorizes, authenticates and describes
 * from the same records, and a new leader needs no load. Only the leader writes: as Kafka's
 * controller, a node that does not lead answers NOT_CONTROLLER (kcoord forwards nothing). */
#define KC_COORD_META_PARTITION (-1)

/* kc_meta_write's answer when the write waits for raft. Not a Kafka error code. */
#define KC_META_PENDING ((int16_t)0x7fff)

/* The end of a write that waited: err 0 once raft committed the records and this node applied
 * them (kc_meta_each and the listener saw them), NOT_CONTROLLER when the leadership was lost
 * before (the change may still be committed by the next leader, as a Kafka client's timed-out
 * request may have been), KAFKA_STORAGE_ERROR when raft could not store it. */
typedef void (*kc_meta_done_fn)(void *arg, int16_t err);

/* Write v[0..n) (bytes copied). A single node: kc_meta_append, whose code is returned (done is
 * never called). A cluster node: NOT_CONTROLLER when this node is not the leader serving
 * (a follower, or a leader still applying earlier terms; also when n is 0, so that a request
 * that changes nothing is refused as one that does), UNKNOWN_SERVER_ERROR when out of memory,
 * 0 when n is 0; otherwise the records go into the leader's next raft entry and
 * KC_META_PENDING is returned: done(arg, err) is called once, later, from the loop. */
int16_t kc_meta_write(kc_coord_t *c, const kc_meta_rec_t *v, size_t n, kc_meta_done_fn done,
                      void *arg);

/* A cluster node: whether a write is queued or waiting for its commit. */
bool kc_meta_busy(kc_coord_t *c);

/* A cluster node: call fn(arg) once no write is queued or waiting for its commit (after the
 * waiters' done, also when they failed), in the order asked; 0, or -1 when out of memory or
 * not a cluster node. For a request validated against the state the writes before it make. */
int kc_meta_when_idle(kc_coord_t *c, void (*fn)(void *arg), void *arg);

/* A cluster node: fn(arg, rec) for every record raft commits, as this node applies it (the
 * leader too), rec->value NULL for a removal; and, when a snapshot is restored, for every key
 * whose value it changes or removes. rec is valid during the call only. One listener; NULL
 * stops it. A single node never calls it: its writers apply their records themselves. */
typedef void (*kc_meta_listen_fn)(void *arg, const kc_meta_rec_t *rec);
void kc_meta_listen(kc_coord_t *c, kc_meta_listen_fn fn, void *arg);

/* ---- Group configs (gconf.c) -----------------------------------------------------------------
 *
 * A consumer group's own settings (Kafka's GroupConfig, the consumer keys): set and removed with
 * IncrementalAlterConfigs on a GROUP resource, kept in the metadata partition, read by the
 * consumer machine at each heartbeat. They belong to the group id: they may exist before the
 * group does, and stay after it is deleted, as in Kafka. */
enum { KC_GCONF_SESSION, KC_GCONF_HEARTBEAT, KC_GCONF_ASSIGNMENT, KC_GCONF_N };

/* IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType ids). */
enum {
    KC_GCONF_OP_SET = 0,
    KC_GCONF_OP_DELETE = 1,
    KC_GCONF_OP_APPEND = 2,
    KC_GCONF_OP_SUBTRACT = 3
};

typedef struct kc_gconf_key_s {
    const char *name;        /* "consumer.session.timeout.ms" */
    const char *setting;     /* the daemon's setting it overrides */
    const char *min_setting; /* its bounds */
    const char *max_setting;
    int32_t at_least; /* Kafka's ConfigDef range: atLeast(1), or 0 for the assignment interval */
    const char *doc;  /* Kafka's documentation of the key */
} kc_gconf_key_t;

extern const kc_gconf_key_t kc_gconf_keys[KC_GCONF_N];

/* The index of the key named `name`, or -1. */
int kc_gconf_key(kc_str_t name);

/* The daemon's value of key k (its setting). */
int32_t kc_gconf_default(const kc_conf_t *conf, int k);

typedef struct kc_gconf_op_s {
    kc_str_t name;
    int8_t op; /* KC_GCONF_OP_* */
    kc_str_t value;
} kc_gconf_op_t;

/* The group's own values, out[k] = -1 where it has none. */
void kc_coord_group_configs(const kc_coord_t *c, kc_str_t group, int32_t out[KC_GCONF_N]);

/* IncrementalAlterConfigs of one GROUP resource: the operations ops[0..n) applied together,
 * validated as Kafka's GroupConfig.validate (INVALID_CONFIG with Kafka's message in msg), then,
 * unless validate_only, written to the metadata partition and applied once durable. Returns 0 or
 * the error code (msg says why). With `done` on a cluster node the write goes through
 * kc_meta_write: KC_META_PENDING then means done(arg, err) tells the end (for an error, the
 * message is kc_gconf_write_error's). With done NULL the write is kc_meta_append's. */
int16_t kc_coord_alter_group_configs(kc_coord_t *c, kc_str_t group, const kc_gconf_op_t *ops,
                                     size_t n, bool validate_only, char *msg, size_t len,
                                     kc_meta_done_fn done, void *arg);

/* The message of a group config write that failed with `err`. */
void kc_gconf_write_error(int16_t err, char *msg, size_t len);

/* Call fn for every group id that has configs; returns how many. fn must not change them. */
size_t kc_coord_each_group_config(const kc_coord_t *c, void (*fn)(void *arg, kc_str_t group),
                                  void *arg);

#endif
