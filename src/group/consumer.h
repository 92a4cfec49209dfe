/* consumer.h - inside the group room: the consumer group machine (KIP-848, consumer.c) as the
 * manager (manager.c) calls it. Not part of the room's door (group.h).
 *
 * The consumer machine keeps its own state (a kc_consumer_t: its copy of the config, the
 * compiled subscription regexes, its refusal notes) and its groups in the manager's one map and
 * one heap. It never includes the classic machine; what it needs of a classic group of the
 * same id it asks the manager (manager.h's conversions). Every function takes the time from
 * the caller and emits records through the manager's ops.
 */
#ifndef KC_GROUP_CONSUMER_H
#define KC_GROUP_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"
#include "group/manager.h"

/* A new consumer machine for `gm`. The config and ops are copied (NULL when out of memory).
 * kc_consumer_free frees the machine; its groups are freed first with kc_consumer_destroy. */
kc_consumer_t *kc_consumer_new(kc_gm_t *gm, const kc_gm_config_t *cfg, const kc_gm_ops_t *ops);
void kc_consumer_free(kc_consumer_t *c);
void kc_consumer_destroy(kc_consumer_t *c, kc_ghead_t *h);

/* Requests (group.h's kc_gm_consumer_*). */
void kc_consumer_heartbeat(kc_consumer_t *c, kc_time_t now, int16_t version,
                           const kc_consumer_group_heartbeat_request_t *req, kc_str_t client_id,
                           kc_str_t client_host, const kc_gm_topic_filter_t *filter, kc_arena_t *a,
                           kc_consumer_group_heartbeat_response_t *resp);
void kc_consumer_describe(const kc_consumer_t *c, int16_t version, kc_str_t group_id,
                          bool include_authorized_operations, kc_arena_t *a,
                          kc_consumer_group_describe_described_group_t *out);
size_t kc_consumer_dump(const kc_consumer_t *c, kc_str_t group_id, char *buf, size_t len);

/* Whether `id` names a consumer group, and whether it has members. */
bool kc_consumer_exists(const kc_consumer_t *c, kc_str_t id);
bool kc_consumer_is_empty(const kc_consumer_t *c, kc_str_t id);

/* Delete an empty consumer group with Kafka's tombstones (DeleteGroups, retention, JoinGroup
 * turning it into a classic group). Returns 0, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP. */
int16_t kc_consumer_delete(kc_consumer_t *c, kc_time_t now, kc_str_t id, const char *reason);

/* The upgrade's consumer half (manager.h's kc_manager_upgrade): build the consumer group of
 * the classic group `cv` (Kafka's ConsumerGroup.fromClassicGroup), in no map yet, its records
 * encoded. 0 with *out; GROUP_ID_NOT_FOUND with *why (Kafka's message, a format with one
 * %.*s) when a member's subscription or assignment cannot be read or a custom assignor's user
 * data would be lost; COORDINATOR_NOT_AVAILABLE when out of memory. Then exactly one of
 * kc_consumer_import_commit (the group is in, its records emitted, its members' sessions
 * started) or kc_consumer_import_free. `member_id`: the consumer-protocol member whose
 * heartbeat converts (for the rebalance history). */
typedef struct kc_cimport_s kc_cimport_t;
int16_t kc_consumer_import_prepare(kc_consumer_t *c, const kc_conv_group_t *cv, kc_str_t member_id,
                                   kc_cimport_t **out, const char **why);
void kc_consumer_import_commit(kc_consumer_t *c, kc_cimport_t *im);
void kc_consumer_import_free(kc_cimport_t *im);

/* Forget a consumer group without records (a GroupMetadata record replayed for its id). */
void kc_consumer_drop(kc_consumer_t *c, kc_str_t id);

/* The classic APIs on a consumer group (see group.h): a classic member's JoinGroup,
 * SyncGroup and Heartbeat (consumer_classic.c), answered at once, and LeaveGroup. */
void kc_consumer_classic_join(kc_consumer_t *c, kc_time_t now, int16_t version,
                              const kc_join_group_request_t *req, kc_str_t client_id,
                              kc_str_t client_host, kc_arena_t *a, kc_join_group_response_t *resp);
void kc_consumer_classic_sync(kc_consumer_t *c, kc_time_t now, int16_t version,
                              const kc_sync_group_request_t *req, kc_arena_t *a,
                              kc_sync_group_response_t *resp);
void kc_consumer_classic_heartbeat(kc_consumer_t *c, kc_time_t now, int16_t version,
                                   const kc_heartbeat_request_t *req,
                                   kc_heartbeat_response_t *resp);
void kc_consumer_classic_leave(kc_consumer_t *c, kc_time_t now, kc_str_t id,
                               const kc_member_identity_t *ids, int32_t n, int16_t *errors);

/* Summaries for ListGroups and retention (kc_consumer_info: 0, or -1 when there is none). */
int kc_consumer_info(const kc_consumer_t *c, kc_str_t id, kc_group_info_t *out);
void kc_consumer_each(const kc_consumer_t *c, void (*fn)(void *arg, const kc_group_info_t *g),
                      void *arg);

/* Offsets against a consumer group (Kafka's ConsumerGroup.validateOffsetCommit, ...). */
int16_t kc_consumer_validate_commit(kc_consumer_t *c, int16_t version, kc_str_t id, int32_t epoch,
                                    kc_str_t member_id);
int16_t kc_consumer_validate_fetch(const kc_consumer_t *c, kc_str_t id, kc_str_t member_id,
                                   int32_t epoch);
bool kc_consumer_subscribed(const kc_consumer_t *c, kc_str_t id, kc_str_t topic);

/* Loading: a record of type 3-8 (0, -1 out of memory, -2 malformed). */
int kc_consumer_replay(kc_consumer_t *c, int16_t type, const uint8_t *key, size_t key_len,
                       const uint8_t *value, size_t value_len);
void kc_consumer_load_complete(kc_consumer_t *c, kc_time_t now);

/* Introspection (group.h's kc_gm_json_*): a consumer group's JSON summary / full object;
 * 0, or -1 when there is none. */
void kc_consumer_json_list(const kc_consumer_t *c, int64_t mono_ms, kc_emit_fn emit, void *arg,
                           bool *first);
int kc_consumer_json_group(const kc_consumer_t *c, int64_t mono_ms, kc_str_t id, kc_emit_fn emit,
                           void *arg);
int kc_consumer_json_summary(const kc_consumer_t *c, kc_str_t id, kc_emit_fn emit, void *arg);

/* Timers: fire the group's due session and rebalance timeouts (at most *budget of them,
 * counted down) and return its next deadline (INT64_MAX: none). The manager took it out of the
 * heap first. */
int64_t kc_consumer_timers(kc_consumer_t *c, kc_ghead_t *h, kc_time_t now, int64_t *budget);

/* The partition's subscription regexes: distinct ones in use, and ones compiled. */
void kc_consumer_regex_counts(const kc_consumer_t *c, size_t *in_use, size_t *compiled);

#endif
