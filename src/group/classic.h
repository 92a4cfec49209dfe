/* classic.h - inside the group room: the classic group machine (classic.c) as the manager
 * (manager.c) calls it. Not part of the room's door (group.h).
 *
 * Each entry point is the classic half of the group.h function of the same name: the manager
 * has already routed away the requests for a consumer group, so "no classic group" here means
 * what Kafka answers for an unknown group. The classic machine never includes the consumer
 * machine; what it needs of a group of the other kind it asks the manager (manager.h).
 */
#ifndef KC_GROUP_CLASSIC_H
#define KC_GROUP_CLASSIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"
#include "group/manager.h"
#include "proto/wire.h"

/* Requests (group.h's kc_gm_join, kc_gm_sync, kc_gm_heartbeat, kc_gm_leave). */
int kc_classic_join(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_join_group_request_t *req,
                    kc_str_t client_id, kc_str_t client_host, void *waiter, kc_arena_t *a,
                    kc_join_group_response_t *resp);
int kc_classic_sync(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_sync_group_request_t *req,
                    void *waiter, kc_arena_t *a, kc_sync_group_response_t *resp);
void kc_classic_heartbeat(kc_gm_t *gm, kc_time_t now, int16_t version,
                          const kc_heartbeat_request_t *req, kc_heartbeat_response_t *resp);
void kc_classic_leave(kc_gm_t *gm, kc_time_t now, int16_t version,
                      const kc_leave_group_request_t *req, kc_arena_t *a,
                      kc_leave_group_response_t *resp);

/* Summaries: kc_classic_info returns 0, or -1 when no classic group has the id. */
int kc_classic_info(const kc_gm_t *gm, kc_str_t group_id, kc_group_info_t *out);
void kc_classic_each(const kc_gm_t *gm, void (*fn)(void *arg, const kc_group_info_t *g), void *arg);

/* Offsets and admin against a classic group (or none). */
int16_t kc_classic_validate_commit(kc_gm_t *gm, kc_time_t now, int16_t version, kc_str_t group_id,
                                   int32_t generation, kc_str_t member_id, kc_str_t instance_id);
int16_t kc_classic_validate_fetch(kc_gm_t *gm, kc_str_t group_id, kc_str_t member_id,
                                  int32_t member_epoch);
bool kc_classic_subscribed(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic);
bool kc_classic_offsets_expirable(const kc_gm_t *gm, kc_str_t group_id, int64_t *base_ms);
int16_t kc_classic_validate_offset_delete(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic);
void kc_classic_describe(const kc_gm_t *gm, int16_t version, kc_str_t group_id,
                         bool include_authorized_operations, kc_arena_t *a,
                         kc_describe_groups_described_group_t *out);
int16_t kc_classic_delete(kc_gm_t *gm, kc_time_t now, kc_str_t group_id);
void kc_classic_remove_if_empty(kc_gm_t *gm, kc_time_t now, kc_str_t group_id);

/* Loading: a GroupMetadata record (key reader past its type) and an offset commit (the simple
 * group that holds it). Return as kc_gm_replay. */
int kc_classic_replay_metadata(kc_gm_t *gm, kc_reader_t *kr, kc_arena_t *a, const uint8_t *value,
                               size_t value_len);
int kc_classic_replay_offset_commit(kc_gm_t *gm, kc_reader_t *kr);
void kc_classic_load_complete(kc_gm_t *gm, kc_time_t now);

/* Introspection (group.h's kc_gm_json_*); -1 when no live classic group has the id. */
void kc_classic_json_list(const kc_gm_t *gm, int64_t mono_ms, kc_emit_fn emit, void *arg,
                          bool *first);
int kc_classic_json_summary(const kc_gm_t *gm, kc_str_t group_id, kc_emit_fn emit, void *arg);
int kc_classic_json_group(const kc_gm_t *gm, int64_t mono_ms, kc_str_t group_id, kc_emit_fn emit,
                          void *arg);

/* Timers: fire the group's due timers (at most *budget of them, counted down) and return its
 * next deadline (INT64_MAX: none). The manager took it out of the heap first. */
int64_t kc_classic_timers(kc_gm_t *gm, kc_ghead_t *h, int64_t *budget);
/* Free a classic group (its parked requests get COORDINATOR_NOT_AVAILABLE). */
void kc_classic_destroy(kc_gm_t *gm, kc_ghead_t *h);

/* For the conversions (manager.h): what the classic group `id` is (KC_CLASSIC_*), and its
 * removal. */
int kc_classic_kind(const kc_gm_t *gm, kc_str_t id);
void kc_classic_remove(kc_gm_t *gm, kc_time_t now, kc_str_t id, bool tombstone, const char *reason);

/* For the upgrade (manager.h): the classic group `id` as a kc_conv_group_t copied into `a`
 * (0; -1 when out of memory or there is no such group), and its removal once converted: its
 * GroupMetadata tombstone, its parked JoinGroup and SyncGroup answered REBALANCE_IN_PROGRESS. */
int kc_classic_export(const kc_gm_t *gm, kc_str_t id, kc_arena_t *a, kc_conv_group_t *out);
void kc_classic_convert_away(kc_gm_t *gm, kc_time_t now, kc_str_t id);

/* For the downgrade (manager.h): a Stable classic group built from `cv` (Kafka's
 * ClassicGroup.fromConsumerGroup: generation = the group epoch, protocol type "consumer", the
 * protocol the members have in common, each member's assignment from cv), put in the map, its
 * GroupMetadata record written, its members' sessions started; then a rebalance when
 * `rebalance` (cause KC_RB_DOWNGRADE, `member_id` and `reason` for the history). 0, or -1 when
 * out of memory (nothing changed). */
int kc_classic_import(kc_gm_t *gm, kc_time_t now, const kc_conv_group_t *cv, bool rebalance,
                      kc_str_t member_id, const char *reason);

#endif
