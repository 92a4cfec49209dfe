/* cluster.h - the cluster room's door: kcoord nodes replicating the coordinator's records over
 * raft (cowsql's libraft, on the daemon's libuv loop), leadership, and where each node is.
 *
 * One raft group holds every partition: an entry holds the batches of records the partitions
 * wrote in one turn of the leader's loop (each a Kafka RecordBatch, the bytes a single node
 * appends to its __consumer_offsets-N log), each tagged with its partition. The leader's partitions
 * answer requests; an answer that waits for records is sent once raft has committed them (a
 * majority of voters stored them) and this node applied them. Every node applies every committed
 * entry, in log order, through kc_cluster_ops_t.apply: to its own partition logs and to its
 * in-memory groups, so a follower is a hot standby.
 *
 * The room knows nothing of groups, partitions' contents or sockets: it moves opaque batches,
 * snapshots and leadership news between raft and the coordinator room (coord/), which registers
 * its callbacks. Without cluster.voters there is no kc_cluster_t, and the coordinator writes its
 * logs itself as a single node. Loop thread only.
 */
#ifndef KC_CLUSTER_CLUSTER_H
#define KC_CLUSTER_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "conf.h"

typedef struct kc_cluster_s kc_cluster_t;

/* What this node is for the coordinator. */
enum {
    KC_CLUSTER_FOLLOWER = 0, /* not the leader (or no leader known): answer NOT_COORDINATOR */
    KC_CLUSTER_LOADING = 1,  /* elected, applying what was committed before its term */
    KC_CLUSTER_LEADER = 2,   /* leader, everything before its term applied: serve */
};

/* The coordinator's side, called on the loop thread. */
typedef struct kc_cluster_ops_s {
    void *ctx;
    /* A committed entry: the batch `batch[0..len)` of `partition`. `own` is true when this node
     * proposed it as the leader it still is, in the same term without a loss of leadership in
     * between: its in-memory state has those records already, and only its log needs them. */
    void (*apply)(void *ctx, int32_t partition, const uint8_t *batch, size_t len, bool own);
    /* Fill *out (malloc'd, *len bytes) with everything applied so far: the snapshot raft keeps
     * instead of the entries before it. 0, or -1 when it cannot be taken now (raft tries again
     * later). */
    int (*snapshot)(void *ctx, uint8_t **out, size_t *len);
    /* Replace every partition's log and state with a snapshot (kc_cluster_ops_t.snapshot's
     * bytes, from this node or the leader). 0, or -1 when it cannot be read. */
    int (*restore)(void *ctx, const uint8_t *data, size_t len);
    /* The node's role changed (KC_CLUSTER_*). LEADER comes after LOADING, once every entry of
     * earlier terms is applied; FOLLOWER after LEADER or LOADING means leadership was lost:
     * whatever the leader changed in memory and raft did not commit must be thrown away. */
    void (*role)(void *ctx, int role);
} kc_cluster_ops_t;

/* One node of cluster.voters with its client addresses (cluster.brokers). */
typedef struct kc_cluster_node_s {
    int32_t id;
    const char *raft_address; /* host:port */
    bool voter;
} kc_cluster_node_t;

/* The cluster id of this node's cluster: cluster.id when set, else kc_cluster_derive_id of
 * cluster.voters. */
void kc_cluster_conf_id(const kc_conf_t *conf, char out[23]);

/* The cluster id every node of cluster.voters `voters` shares (22 characters of URL-safe base64
 * of a version-4-shaped UUID, as Kafka's), derived from the voters' ids and addresses so that
 * every node computes the same one without a formatting step; its meta.properties keeps it. */
void kc_cluster_derive_id(const char *voters, char out[23]);

/* Whether data.dir may be a cluster node's: refused (-1, err names data.dir) when it holds the
 * partition logs of a single node (no <data.dir>/raft, a non-empty log), which the cluster does
 * not have; a node's own logs are rebuilt from raft at each start. 0 otherwise. */
int kc_cluster_check_data_dir(const kc_conf_t *conf, char *err, size_t errlen);

/* Start this node's raft on `loop`: its log and snapshots under <data.dir>/raft, its transport
 * on its own cluster.voters address, the voters bootstrapped from cluster.voters on first start.
 * NULL with `err` filled when it cannot start. Callbacks begin once kc_cluster_start is called. */
kc_cluster_t *kc_cluster_new(uv_loop_t *loop, const kc_conf_t *conf, const kc_cluster_ops_t *ops,
                             char *err, size_t errlen);
/* Load the raft log and snapshot (restore, then role and apply callbacks), join the cluster.
 * 0, or -1 with err filled. */
int kc_cluster_start(kc_cluster_t *cl, char *err, size_t errlen);
/* Hand the leadership to the most up-to-date other voter (raft's transfer: the target is told
 * to start an election at once), before a planned stop. done(arg) is called once from the loop
 * when it is over, whether it worked or not (it gives up after an election timeout). Returns 0,
 * or -1 when this node does not lead or has no other voter (done is then never called). */
int kc_cluster_transfer(kc_cluster_t *cl, void (*done)(void *arg), void *arg);

/* Stop raft: pending submissions complete with KC_CLUSTER_ESHUTDOWN; done(arg) from the loop
 * once its handles are closed. */
void kc_cluster_close(kc_cluster_t *cl, void (*done)(void *arg), void *arg);

/* Results of submissions (done's status). */
enum {
    KC_CLUSTER_OK = 0,
    KC_CLUSTER_ENOTLEADER = -1, /* not the leader, or leadership was lost before the commit */
    KC_CLUSTER_ESHUTDOWN = -2,  /* the node is stopping */
    KC_CLUSTER_EIO = -3,        /* raft could not store it (disk, memory, too big) */
    /* Membership changes only: */
    KC_CLUSTER_EDUPLICATE = -4, /* the node is a voter already */
    KC_CLUSTER_ENOTFOUND = -5,  /* no such voter (id, or id and directory id) */
    KC_CLUSTER_EBUSY = -6,      /* another change is not committed yet */
    KC_CLUSTER_ETIMEDOUT = -7,  /* not done within the time given (it may still complete) */
    KC_CLUSTER_EINVALID = -8,   /* a malformed address, or the last voter */
};

/* ---- Membership (KIP-853's AddRaftVoter and RemoveRaftVoter, on the leader) -------------------
 *
 * A node joins as raft's spare with the address string "RAFT DIRID LISTENERS": its raft
 * host:port, its directory id (meta.properties' directory.id, 22 characters) and its client
 * listeners (NAME://host:port,...), kept in raft's configuration and so known to every node
 * (kc_cluster_broker, kc_cluster_nodes) without a change to anyone's cluster.brokers; the
 * leader then catches it up and makes it a voter. Nodes of cluster.voters have a plain host:port.
 * One change at a time. done(arg, status, message) is called once from the loop: KC_CLUSTER_OK
 * once the new configuration is committed, an error, or KC_CLUSTER_ETIMEDOUT after timeout_ms
 * (the change goes on and may still complete). Returns 0, or an error (done never called). */
typedef void (*kc_cluster_change_cb)(void *arg, int status, const char *message);
int kc_cluster_add_voter(kc_cluster_t *cl, int32_t id, const char *directory_id,
                         const char *raft_address, const char *listeners, int32_t timeout_ms,
                         kc_cluster_change_cb done, void *arg);
/* Remove voter `id` (whose directory id must be `directory_id` when this node knows it). The
 * leader may remove itself: it steps down once the change is committed. */
int kc_cluster_remove_voter(kc_cluster_t *cl, int32_t id, const char *directory_id,
                            int32_t timeout_ms, kc_cluster_change_cb done, void *arg);
/* The cluster id the nodes share (kc_cluster_conf_id). */
const char *kc_cluster_id(const kc_cluster_t *cl);

/* One partition's batch in a submission. The partition number is the coordinator's and opaque
 * here: 0..n-1 for __consumer_offsets-N, -1 for its metadata partition (KC_COORD_META_PARTITION,
 * coord.h). */
typedef struct kc_cluster_part_s {
    int32_t partition;
    const uint8_t *batch;
    size_t len;
} kc_cluster_part_t;

/* Propose the batches v[0..n) (copied) as ONE raft entry: what every partition wrote in a loop
 * turn commits together, with one append and one round of replication. done(arg, status) is
 * called once from the loop: KC_CLUSTER_OK after the entry is committed and applied here
 * (ops.apply ran for each batch first, in order), or an error. Returns 0, or an error (done is
 * then never called). Only the leader may submit. */
int kc_cluster_submit(kc_cluster_t *cl, const kc_cluster_part_t *v, size_t n,
                      void (*done)(void *arg, int status), void *arg);

/* Whether the leader is handing its leadership over (kc_cluster_transfer): submissions are
 * refused meanwhile, and the coordinator keeps what it would submit until the new leader's
 * term (when this node then loses the leadership, that is thrown away with its waiters). */
bool kc_cluster_draining(const kc_cluster_t *cl);

/* The leader's node id (-1 when none is known); the role is in kc_cluster_status. */
int32_t kc_cluster_leader(const kc_cluster_t *cl);
int32_t kc_cluster_self(const kc_cluster_t *cl);

/* What observers and DescribeQuorum show. */
typedef struct kc_cluster_voter_s {
    int32_t id;
    char raft_address[128];  /* host:port */
    char directory_id[23];   /* "" when this node does not know it */
    int role;                /* 0 standby, 1 voter, 2 spare (raft's roles) */
    int64_t match_index;     /* the leader's view of its log end; -1 when not known here */
    int64_t last_contact_ms; /* ms since the leader last heard from it; -1 unknown */
    /* ms since the leader last heard it had every entry the leader had; -1 unknown */
    int64_t last_caught_up_ms;
} kc_cluster_voter_t;

typedef struct kc_cluster_status_s {
    int32_t self;
    int32_t leader;         /* -1 when none is known */
    int role;               /* KC_CLUSTER_* */
    const char *raft_state; /* raft's name of its state: "follower", "candidate", "leader" */
    uint64_t term;
    uint64_t commit_index;
    uint64_t applied_index;
    uint64_t last_index;
    uint64_t elections;          /* elections this node started (it became candidate) */
    uint64_t leadership_changes; /* times the known leader changed */
    uint64_t snapshots;          /* snapshots taken here */
    uint64_t snapshots_restored; /* snapshots installed here */
    size_t n_voters;
    kc_cluster_voter_t voters[16];
} kc_cluster_status_t;

void kc_cluster_status(const kc_cluster_t *cl, kc_cluster_status_t *out);

/* The client addresses of node `id` (cluster.brokers, or the listeners it was added with): the
 * address for listener `listener` (a name of listeners, case-insensitive), or NULL when that node
 * has none for it. Valid until the loop turn ends. */
typedef struct kc_cluster_addr_s {
    const char *host;
    int32_t port;
} kc_cluster_addr_t;
const kc_cluster_addr_t *kc_cluster_broker(const kc_cluster_t *cl, int32_t id,
                                           const char *listener);
/* The ids of the cluster's voters (raft's configuration; cluster.voters until this node has
 * one), in order; returns how many (<= cap written). */
size_t kc_cluster_nodes(const kc_cluster_t *cl, int32_t *ids, size_t cap);

#endif
