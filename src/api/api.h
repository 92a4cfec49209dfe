/* api.h - the API room's door: decoded requests in, encoded responses out.
 *
 * kc_api_on_request is the network layer's request callback. It decodes the frame, finds the
 * handler for the API, lets it fill the response struct, and encodes the response frame with
 * the right header version. The one list of served APIs is their rows in proto/apis.kdef
 * (generated into proto/gen_api_rows.h): an API is served, and advertised in ApiVersions, in
 * the versions of its row, by the handler its row names, declared below from the same rows.
 */
#ifndef KC_API_API_H
#define KC_API_API_H

#include <stdint.h>

#include "api/request.h"
#include "auth/auth.h"
#include "conf.h"
#include "coord/coord.h"
#include "net/net.h"
#include "proto/errors.h"

/* What the handlers know about this broker. Owned by main; must outlive the server. */
typedef struct kc_api_ctx_s {
    int32_t node_id;
    const char *host; /* advertised host */
    int32_t port;     /* advertised port */
    kc_catalog_t *catalog;
    const kc_conf_t *conf;
    uv_loop_t *loop;   /* for handlers that park a request on a timer (Fetch) */
    kc_coord_t *coord; /* the partitions with their groups and offsets */
    kc_auth_t *auth;   /* ACL bindings and SCRAM credentials, kept in the metadata partition */
    struct kc_api_sasl_s *sasl;   /* the SASL listeners' settings (sasl.c); NULL: none */
    struct kc_cluster_s *cluster; /* the raft cluster this node is in; NULL: a single node */
} kc_api_ctx_t;

/* A request being answered: where the answer goes and how to encode it. Lives in the
 * request's arena, so it stays valid until it is answered. */
typedef struct kc_api_call_s {
    kc_slot_t *slot;
    const kc_api_info_t *api;
    int16_t version;
    int flexible;
    int32_t correlation_id;
    kc_str_t client_host;  /* the peer's address as Kafka shows it: "/127.0.0.1" */
    const char *principal; /* the connection's principal ("User:ANONYMOUS"); NULL: anonymous */
    char acl_host[40];     /* the peer's address as the authorizer matches it ("" until asked) */
    struct kc_api_ctx_s *ctx;
    const void *request; /* the decoded request body */
    /* Partitions whose records this reply depends on (see kc_api_partition). */
    int32_t *parts;
    int32_t n_parts, cap_parts;
    uint64_t start_ns; /* uv_hrtime() when the request was decoded, for the latency metric */
    size_t frame_len;  /* the request's size, for logs */
} kc_api_call_t;

/* Handler results. */
enum {
    KC_API_DONE = 0,   /* `resp` is filled: encode and send it now */
    KC_API_CLOSE = -1, /* close the connection instead of answering */
    KC_API_PARKED = 1, /* the handler kept `call` and answers later with kc_api_call_reply */
};

/* A handler fills `resp` (already initialised to the response's defaults) for `req`. Memory
 * for arrays and strings comes from `a`, which lives until the response is written; so do
 * `req->body` (and the frame it was decoded from) and `call`, but not `req` itself, which is
 * the caller's: a handler that parks and needs it later keeps a copy. Returns KC_API_DONE,
 * KC_API_CLOSE or KC_API_PARKED. A parked request must be answered exactly once, from the
 * loop thread. */
typedef int (*kc_api_handler_fn)(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                                 kc_arena_t *a, void *resp);

/* The partition that owns `group_id`, for a handler of `call`. When the partition cannot
 * serve (loading, or failed) returns NULL with the error in *err. Otherwise, for the APIs whose
 * answer depends on what is durable (their row says waits-for-log: JoinGroup, SyncGroup,
 * LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, ConsumerGroupHeartbeat),
 * the call remembers the partition, and
 * kc_api_call_reply holds the answer until the records the partition emitted so far are on
 * disk; a failed write turns the answer into NOT_COORDINATOR, and so does a lack of memory to
 * hold it (or, when even that answer cannot be encoded, the connection closes): nothing is
 * acknowledged before it is durable. */
kc_partition_t *kc_api_partition(kc_api_ctx_t *ctx, kc_api_call_t *call, kc_str_t group_id,
                                 int16_t *err);

/* Encode `resp` (a response struct of the call's API) and send it. `call` is gone after this:
 * its arena, the request and everything the handler allocated in the arena are freed. */
void kc_api_call_reply(kc_api_call_t *call, const void *resp);

/* The response frame of `resp` for the call, malloc'd (*len bytes), without sending it (a SASL
 * failure answered later); NULL when out of memory. The call stays valid. */
uint8_t *kc_api_call_encode(kc_api_call_t *call, const void *resp, size_t *len);

/* kc_api_call_reply, then close the connection once the answer is written: a NOT_CONTROLLER or
 * NOT_LEADER_OR_FOLLOWER from a cluster follower, so that Kafka's AdminClient, which would retry
 * on the same connection, picks another node (the leader, in time). `call` is gone after this;
 * the handler returns KC_API_PARKED. */
void kc_api_call_reply_close(kc_api_call_t *call, const void *resp);

/* Answer the call with nothing at all (Kafka sends no response to a Produce with acks=0 that
 * succeeded). `call` is gone after this, as after kc_api_call_reply; a handler that calls it
 * returns KC_API_PARKED at once, touching nothing of the request. */
void kc_api_call_skip(kc_api_call_t *call);

/* The kc_request_cb for kc_server_opts_t; `app` is a kc_api_ctx_t. */
void kc_api_on_request(void *app, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                       size_t len);

/* Non-zero when `key` has a handler and `version` is within its range. */
int kc_api_served(int16_t key, int16_t version);

/* Fill an ApiVersions answer's key list with every served API (from `a`). */
void kc_api_fill_versions(kc_api_versions_response_t *resp, kc_arena_t *a);

/* The handler of every served API, one per row: kc_api_<name>, a kc_api_handler_fn, in the
 * file of its API family (discovery.c, groups.c, consumer.c, offsets.c, topics.c). */
#define KC_API_ROW(key, name, min, max, handler, flags)                                            \
    int handler(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req, kc_arena_t *a,    \
                void *resp);
#include "proto/gen_api_rows.h"

/* Put `err` into every error field of `resp`, a response of the call's API (fail.c), for a
 * request that cannot be served: COORDINATOR_LOAD_IN_PROGRESS while its partition loads,
 * NOT_COORDINATOR when the partition is not served or its write failed. The fields proto/
 * marks `failreset` go back to their defaults first (a JoinGroup's members, a SyncGroup's
 * assignment...). `request` is the decoded request (OffsetCommit's per-partition answers and
 * OffsetFetch's per-group answers are built from it when `resp` is still empty).
 * Returns 0, or -1 when out of memory: some error could not be placed (an OffsetCommit answer
 * would lack requested partitions, which a client may read as committed), so the answer must
 * not be sent; close the connection instead. */
int kc_api_fail(const kc_api_call_t *call, const void *request, void *resp, int16_t err,
                kc_arena_t *a);

/* The classic groups' parked answers (groups.c), for kc_coord_new. */
extern const kc_coord_replies_t kc_api_group_replies;

/* ---- The security records (authstore.c) ------------------------------------------------------
 *
 * ACL bindings and SCRAM credentials change only through records: kc_auth_acl_create,
 * kc_auth_acl_delete, kc_auth_scram_alter and kc_auth_scram_record emit them (through
 * kc_api_auth_collect into a batch), kc_api_auth_commit appends the batch to the metadata
 * partition (kc_meta_append) and, once it is durable, applies it to ctx->auth. So the state
 * never holds what the log does not, and a cluster can replicate exactly these records. */
typedef struct kc_api_auth_batch_s {
    kc_meta_rec_t *recs; /* keys and values owned by the batch */
    size_t n, cap;
    bool failed; /* out of memory while collecting: the commit fails, nothing is written */
} kc_api_auth_batch_t;

/* A kc_auth_emit_fn: copies one record into the batch `arg`. Returns 0, or KC_AUTH_ENOMEM. */
int kc_api_auth_collect(void *arg, const uint8_t *key, size_t key_len, const uint8_t *value,
                        size_t value_len);

/* Appends the batch to the metadata partition and applies it to ctx->auth. Returns 0 (also for an
 * empty batch), KAFKA_STORAGE_ERROR when the log could not take it, UNKNOWN_SERVER_ERROR when out
 * of memory; nothing changes then. The batch is left as it was: free it with
 * kc_api_auth_batch_free. On a cluster node (ctx->cluster) with `done`, the batch goes through
 * kc_meta_write instead: NOT_CONTROLLER on a node that does not lead, or KC_META_PENDING, and
 * done(arg, err) is called once raft committed it and every node's listener applied it (see
 * kc_api_auth_load), or failed. */
int16_t kc_api_auth_commit(kc_api_ctx_t *ctx, kc_api_auth_batch_t *b, kc_meta_done_fn done,
                           void *arg);
void kc_api_auth_batch_free(kc_api_auth_batch_t *b);

/* At start, after the coordinator has loaded (on a cluster node, after kc_cluster_start):
 * applies every live ACL and SCRAM record of the metadata partition to ctx->auth, and on a
 * cluster node listens (kc_meta_listen) for every such record raft commits later, so a
 * follower authorizes and authenticates as the leader does. Returns 0, or -1 with a message in
 * err when a record does not decode (the data directory is not one this kcoord wrote). */
int kc_api_auth_load(kc_api_ctx_t *ctx, char *err, size_t errlen);

/* ---- Answers that wait for metadata writes (authstore.c) -------------------------------------
 *
 * A cluster node answers IncrementalAlterConfigs, CreateAcls, DeleteAcls and
 * AlterUserScramCredentials once raft has committed their records (Kafka acknowledges a change
 * once its metadata log has it). The handler fills the answer as for a success, starts each
 * write with kc_api_meta_done as its done and a slot's arg, counts those that returned
 * KC_META_PENDING in `pending`, and returns kc_api_meta_end's result. A write that fails later
 * calls fix(w, slot, err), which turns that part of the answer into the error; the answer is
 * sent when the last write ends. Everything lives in the call's arena.
 *
 * A write refused with NOT_CONTROLLER (this node does not lead; the handler sets
 * not_controller when its write returns it, kc_api_meta_done when a pending one ends with it)
 * makes the answer close the connection once written. Kafka's AdminClient (4.4) retries
 * NOT_CONTROLLER on the connection it has, to the same node, until its timeout; with that
 * connection gone it retries on another node, and finds the leader within a try per node.
 * A client that does not retry sees NOT_CONTROLLER. */
typedef struct kc_api_meta_wait_s kc_api_meta_wait_t;
typedef void (*kc_api_meta_fix_fn)(kc_api_meta_wait_t *w, size_t slot, int16_t err);
struct kc_api_meta_wait_s {
    kc_api_call_t *call;
    kc_arena_t *a;
    void *resp;
    kc_api_meta_fix_fn fix;
    size_t pending;
    bool ended;
    bool not_controller; /* a write got NOT_CONTROLLER: the answer closes the connection */
};
/* NULL when out of memory. */
kc_api_meta_wait_t *kc_api_meta_wait(kc_api_call_t *call, kc_arena_t *a, void *resp,
                                     kc_api_meta_fix_fn fix);
/* The done arg of slot `slot`; NULL when out of memory (then write synchronously: done NULL). */
void *kc_api_meta_slot(kc_api_meta_wait_t *w, size_t slot);
void kc_api_meta_done(void *arg, int16_t err);
/* KC_API_DONE when no write is pending (answer now), else KC_API_PARKED. */
int kc_api_meta_end(kc_api_meta_wait_t *w);

/* ---- Authorization (acls.c) -----------------------------------------------------------------
 *
 * Every handler asks, for the principal and peer address of its call, what Kafka's KafkaApis
 * asks of the authorizer (authorizer.class.name). With no authorizer everything is allowed and
 * the authorized operations are the supported ones (AuthHelper.authorizedOperations). */

/* Whether an authorizer is configured. */
bool kc_api_acl_on(const kc_api_ctx_t *ctx);

/* May the call's principal, from its peer's address, do `op` on the resource (type, name)? */
bool kc_api_authorized(kc_api_call_t *call, int8_t op, int8_t resource_type, kc_str_t name);

/* The same for the cluster resource (kafka-cluster). */
bool kc_api_authorized_cluster(kc_api_call_t *call, int8_t op);

/* The authorized_operations bit field of a resource for the call (Int.MIN is the caller's when
 * the request did not ask). */
int32_t kc_api_authorized_ops(kc_api_call_t *call, int8_t resource_type, kc_str_t name);

/* ---- SASL (sasl.c) ------------------------------------------------------------------------
 *
 * The settings of every SASL_PLAINTEXT and SASL_SSL listener among names[0..n) (protocols[i] a
 * KC_NET_*): sasl.enabled.mechanisms (none stops start-up), PLAIN's users from
 * plain.sasl.jaas.config (required when PLAIN is enabled), connections.max.reauth.ms; SCRAM
 * credentials come from `auth`. NULL with the problem in err, naming the listener. */
typedef struct kc_api_sasl_s kc_api_sasl_t;
kc_api_sasl_t *kc_api_sasl_new(const kc_conf_t *conf, const char *const *names,
                               const int *protocols, size_t n, kc_auth_t *auth, char *err,
                               size_t errlen);
void kc_api_sasl_free(kc_api_sasl_t *s);

/* For kc_api_on_request, before a frame is decoded: true when the SASL exchange took the frame
 * (a raw v0 token, a connection that failed, a request after its session expired). */
bool kc_api_sasl_frame(kc_api_ctx_t *ctx, kc_conn_t *conn, kc_slot_t *slot, const uint8_t *frame,
                       size_t len);
/* For kc_api_on_request, once decoded: KC_API_DONE when the call's handler may run, else
 * KC_API_PARKED (the request was refused: the connection closes, with or without an answer). */
int kc_api_sasl_admit(kc_api_ctx_t *ctx, kc_api_call_t *call, const kc_request_t *req,
                      kc_arena_t *a, void *resp);

/* Metadata's auto-creation (topics.c), for a request that allows it: add the unknown topic
 * `name` to the catalog with num.partitions partitions, when auto.create.topics.enable is on and
 * CreateTopics would accept the name (legal, not internal, no '.'/'_' collision). Returns the
 * topic (valid until the catalog next changes), or NULL when it was not created. */
const kc_topic_t *kc_api_auto_create(kc_api_ctx_t *ctx, kc_str_t name);

#endif
