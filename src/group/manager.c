/* manager.c - the groups of one __consumer_offsets partition: one map, one heap, routing,
 * conversions between kinds, and replay.
 *
 * The shape is Kafka's GroupMetadataManager: one map from group id to a group of either kind
 * (a classic group, classic.c; a KIP-848 consumer group, consumer.c), every group starting
 * with a kc_ghead_t that names its kind. The manager owns that map and the one heap of groups
 * with timers; group.h's door functions land here and go to the machine of the group's kind.
 * The two machines never call each other: when a request of one kind meets a group of the
 * other kind (a classic JoinGroup for an empty consumer group, a consumer heartbeat for an
 * empty classic group, a classic SyncGroup for a consumer group, a GroupMetadata record
 * replayed over a consumer group), the machine asks the manager, and the manager's
 * conversions below decide and call the other machine.
 *
 * Extending: a new request routes in the "Requests" section; a new record type is one more
 * case in kc_gm_replay's switch; a new conversion between kinds (upgrading a classic group
 * with members to a consumer group, and back) belongs in "Conversions between kinds".
 */
#include "group/manager.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "group/classic.h"
#include "group/consumer.h"
#include "group/errors.h"
#include "proto/gen_records.h"
#include "proto/wire.h"
#include "util/diag.h"
#include "util/hash.h"

#define NEVER INT64_MAX

static void set_time(kc_gm_t *gm, kc_time_t t)
{
    gm->now = t.mono_ms;
    gm->wall = t.wall_ms;
}

static kc_time_t gm_time(const kc_gm_t *gm)
{
    return (kc_time_t){gm->now, gm->wall};
}

uint64_t kc_manager_random(kc_gm_t *gm)
{
    return kc_hash_mix64(gm->rng += UINT64_C(0x9e3779b97f4a7c15)); /* splitmix64 */
}

/* ---- Group configs ----------------------------------------------------------------------------
 */

void kc_manager_group_config(const kc_gm_t *gm, kc_str_t id, kc_gm_group_config_t *out)
{
    kc_gm_group_config_t own = {-1, -1, -1};
    if (gm->ops.group_config)
        gm->ops.group_config(gm->ops.ctx, id, &own);
    const kc_gm_config_t *cfg = &gm->cfg;
    out->session_timeout_ms = own.session_timeout_ms >= 0 ? own.session_timeout_ms
                              : cfg->consumer_session_timeout_ms > 0
                                  ? cfg->consumer_session_timeout_ms
                                  : 45000;
    out->heartbeat_interval_ms = own.heartbeat_interval_ms >= 0 ? own.heartbeat_interval_ms
                                 : cfg->consumer_heartbeat_interval_ms > 0
                                     ? cfg->consumer_heartbeat_interval_ms
                                     : 5000;
    out->assignment_interval_ms = own.assignment_interval_ms >= 0
                                      ? own.assignment_interval_ms
                                      : cfg->consumer_assignment_interval_ms;
}

/* ---- The one map and the one heap ------------------------------------------------------------ */

kc_ghead_t *kc_manager_find(const kc_gm_t *gm, kc_str_t id)
{
    if (id.len < 0)
        return NULL;
    return kc_strmap_get(&gm->groups, id.p, (size_t)id.len);
}

kc_ghead_t *kc_manager_find_kind(const kc_gm_t *gm, kc_str_t id, int kind)
{
    kc_ghead_t *h = kc_manager_find(gm, id);
    return h && h->kind == kind ? h : NULL;
}

int kc_manager_reserve(kc_gm_t *gm)
{
    if (kc_heap_reserve(&gm->heap, gm->groups.n + 1) != 0)
        return -1;
    return kc_strmap_reserve(&gm->groups, 1);
}

void kc_manager_put(kc_gm_t *gm, kc_ghead_t *h, kc_str_t id)
{
    kc_strmap_put(&gm->groups, id.p, (size_t)id.len, h); /* reserved: cannot fail */
}

void kc_manager_del(kc_gm_t *gm, kc_ghead_t *h, kc_str_t id)
{
    kc_heap_remove(&gm->heap, &h->timer);
    kc_strmap_del(&gm->groups, id.p, (size_t)id.len);
}

void kc_manager_arm(kc_gm_t *gm, kc_ghead_t *h, int64_t deadline)
{
    kc_heap_arm(&gm->heap, &h->timer, deadline);
}

void kc_manager_disarm(kc_gm_t *gm, kc_ghead_t *h)
{
    kc_heap_remove(&gm->heap, &h->timer);
}

size_t kc_manager_slots(const kc_gm_t *gm)
{
    return gm->groups.cap;
}

kc_ghead_t *kc_manager_slot(const kc_gm_t *gm, size_t i, int kind)
{
    kc_ghead_t *h = kc_strmap_slot(&gm->groups, i);
    return h && (kind == KC_KIND_NONE || h->kind == kind) ? h : NULL;
}

static bool is_consumer(const kc_gm_t *gm, kc_str_t id)
{
    return kc_manager_find_kind(gm, id, KC_KIND_CONSUMER) != NULL;
}

/* ---- Life --------------------------------------------------------------------------------------
 */

kc_gm_t *kc_gm_new(const kc_gm_config_t *cfg, const kc_gm_ops_t *ops)
{
    kc_gm_t *gm = calloc(1, sizeof(*gm));
    if (!gm)
        return NULL;
    gm->cfg = *cfg;
    if (ops)
        gm->ops = *ops;
    kc_strmap_init(&gm->groups);
    kc_notes_init(&gm->notes);
    gm->consumer = kc_consumer_new(gm, cfg, ops);
    if (!gm->consumer) {
        free(gm);
        return NULL;
    }
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
        seed = (uint64_t)(uintptr_t)gm * 0x9e3779b97f4a7c15ull ^ (uint64_t)cfg->partition;
    gm->rng = seed;
    return gm;
}

void kc_gm_set_seed(kc_gm_t *gm, uint64_t seed)
{
    gm->rng = seed;
}

void kc_gm_free(kc_gm_t *gm)
{
    if (!gm)
        return;
    for (size_t i = 0; i < gm->groups.cap; i++) {
        kc_ghead_t *h;
        while ((h = kc_strmap_slot(&gm->groups, i)) != NULL) {
            if (h->kind == KC_KIND_CLASSIC)
                kc_classic_destroy(gm, h);
            else
                kc_consumer_destroy(gm->consumer, h);
        }
    }
    kc_consumer_free(gm->consumer);
    kc_strmap_free(&gm->groups);
    kc_heap_free(&gm->heap);
    kc_notes_free(&gm->notes);
    free(gm);
}

/* ---- Timers
 * -------------------------------------------------------------------------------------- */

int64_t kc_gm_next_deadline(const kc_gm_t *gm)
{
    const kc_heap_node_t *top = kc_heap_top(&gm->heap);
    return top ? top->key : NEVER;
}

static int64_t tick_budget(const kc_gm_config_t *cfg)
{
    return cfg->tick_budget > 0 ? cfg->tick_budget : KC_GM_TICK_BUDGET_DEFAULT;
}

/* Put back a group whose timers ran, at its next deadline. A classic group still due (its
 * kind's budget ran out) waits on `deferred` for the next tick, after the host served the
 * requests that arrived meanwhile; a consumer group still due is keyed one past now. */
static void requeue(kc_gm_t *gm, kc_ghead_t *h, int64_t next, kc_ghead_t **deferred)
{
    if (next == NEVER)
        return;
    if (h->kind == KC_KIND_CONSUMER) {
        kc_heap_push(&gm->heap, &h->timer, next > gm->now ? next : gm->now + 1);
    } else if (next <= gm->now) {
        h->timer.key = next;
        h->defer_next = *deferred;
        *deferred = h;
    } else {
        kc_heap_push(&gm->heap, &h->timer, next);
    }
}

/* Each kind of group gets the config's tick_budget of timers per call, from the one heap in
 * deadline order. */
void kc_gm_tick(kc_gm_t *gm, kc_time_t now)
{
    set_time(gm, now);
    int64_t budget[3] = {0, tick_budget(&gm->cfg), tick_budget(&gm->cfg)};
    kc_ghead_t *deferred = NULL;
    kc_heap_node_t *top;
    while ((budget[KC_KIND_CLASSIC] > 0 || budget[KC_KIND_CONSUMER] > 0) &&
           (top = kc_heap_top(&gm->heap)) != NULL && top->key <= gm->now) {
        kc_ghead_t *h = kc_heap_entry(top, kc_ghead_t, timer);
        int64_t key = top->key;
        kc_manager_disarm(gm, h);
        if (budget[h->kind] <= 0) {
            /* Its kind's budget ran out, the other kind's did not: it waits, as it is, for
             * the next tick. */
            h->timer.key = key;
            h->defer_next = deferred;
            deferred = h;
            continue;
        }
        budget[h->kind]--;
        gm->stats.timers_examined++;
        int64_t next = h->kind == KC_KIND_CLASSIC
                           ? kc_classic_timers(gm, h, &budget[KC_KIND_CLASSIC])
                           : kc_consumer_timers(gm->consumer, h, now, &budget[KC_KIND_CONSUMER]);
        if (next == KC_GROUP_GONE)
            continue; /* converted to the other kind: h is freed, the new group armed itself */
        kc_manager_disarm(gm, h); /* arming may have put it back */
        requeue(gm, h, next, &deferred);
    }
    while (deferred) {
        kc_ghead_t *h = deferred;
        deferred = h->defer_next;
        kc_heap_push(&gm->heap, &h->timer, h->timer.key);
    }
    top = kc_heap_top(&gm->heap);
    if (top && (top->key <= gm->now || (budget[KC_KIND_CONSUMER] <= 0 && top->key <= gm->now + 1)))
        gm->stats.tick_slices++;
}

/* ---- Requests
 * ------------------------------------------------------------------------------------ */

/* The classic protocol's requests go to the classic machine, which asks the conversions below
 * when the id names a consumer group. */
int kc_gm_join(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_join_group_request_t *req,
               kc_str_t client_id, kc_str_t client_host, void *waiter, kc_arena_t *a,
               kc_join_group_response_t *resp)
{
    /* Kafka's classicGroupJoin: a consumer group with members takes the classic member
     * (classicGroupJoinToConsumerGroup); an empty one becomes a classic group. */
    if (is_consumer(gm, req->group_id) && !kc_consumer_is_empty(gm->consumer, req->group_id)) {
        set_time(gm, now);
        kc_consumer_classic_join(gm->consumer, now, version, req, client_id, client_host, a, resp);
        return KC_GM_ANSWERED;
    }
    return kc_classic_join(gm, now, version, req, client_id, client_host, waiter, a, resp);
}

int kc_gm_sync(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_sync_group_request_t *req,
               void *waiter, kc_arena_t *a, kc_sync_group_response_t *resp)
{
    if (is_consumer(gm, req->group_id)) { /* classicGroupSyncToConsumerGroup */
        set_time(gm, now);
        kc_consumer_classic_sync(gm->consumer, now, version, req, a, resp);
        return KC_GM_ANSWERED;
    }
    return kc_classic_sync(gm, now, version, req, waiter, a, resp);
}

void kc_gm_heartbeat(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_heartbeat_request_t *req,
                     kc_heartbeat_response_t *resp)
{
    if (is_consumer(gm, req->group_id)) { /* classicGroupHeartbeatToConsumerGroup */
        set_time(gm, now);
        kc_consumer_classic_heartbeat(gm->consumer, now, version, req, resp);
        return;
    }
    kc_classic_heartbeat(gm, now, version, req, resp);
}

void kc_gm_leave(kc_gm_t *gm, kc_time_t now, int16_t version, const kc_leave_group_request_t *req,
                 kc_arena_t *a, kc_leave_group_response_t *resp)
{
    kc_classic_leave(gm, now, version, req, a, resp);
}

void kc_gm_describe(const kc_gm_t *gm, int16_t version, kc_str_t group_id,
                    bool include_authorized_operations, kc_arena_t *a,
                    kc_describe_groups_described_group_t *out)
{
    kc_classic_describe(gm, version, group_id, include_authorized_operations, a, out);
}

/* The consumer protocol's requests go to the consumer machine. */
void kc_gm_consumer_heartbeat(kc_gm_t *gm, kc_time_t now, int16_t version,
                              const kc_consumer_group_heartbeat_request_t *req, kc_str_t client_id,
                              kc_str_t client_host, kc_arena_t *a,
                              kc_consumer_group_heartbeat_response_t *resp)
{
    kc_gm_consumer_heartbeat_filtered(gm, now, version, req, client_id, client_host, NULL, a, resp);
}

void kc_gm_consumer_heartbeat_filtered(kc_gm_t *gm, kc_time_t now, int16_t version,
                                       const kc_consumer_group_heartbeat_request_t *req,
                                       kc_str_t client_id, kc_str_t client_host,
                                       const kc_gm_topic_filter_t *filter, kc_arena_t *a,
                                       kc_consumer_group_heartbeat_response_t *resp)
{
    set_time(gm, now);
    kc_consumer_heartbeat(gm->consumer, now, version, req, client_id, client_host, filter, a, resp);
}

void kc_gm_consumer_describe(const kc_gm_t *gm, int16_t version, kc_str_t group_id,
                             bool include_authorized_operations, kc_arena_t *a,
                             kc_consumer_group_describe_described_group_t *out)
{
    kc_consumer_describe(gm->consumer, version, group_id, include_authorized_operations, a, out);
}

size_t kc_gm_consumer_dump(const kc_gm_t *gm, kc_str_t group_id, char *buf, size_t len)
{
    return kc_consumer_dump(gm->consumer, group_id, buf, len);
}

/* The rest go to the machine of the group's kind. */
int kc_gm_info(const kc_gm_t *gm, kc_str_t group_id, kc_group_info_t *out)
{
    if (is_consumer(gm, group_id))
        return kc_consumer_info(gm->consumer, group_id, out);
    return kc_classic_info(gm, group_id, out);
}

void kc_gm_each(const kc_gm_t *gm, void (*fn)(void *arg, const kc_group_info_t *g), void *arg)
{
    kc_classic_each(gm, fn, arg);
    kc_consumer_each(gm->consumer, fn, arg);
}

int16_t kc_gm_validate_commit(kc_gm_t *gm, kc_time_t now, int16_t version, kc_str_t group_id,
                              int32_t generation, kc_str_t member_id, kc_str_t instance_id)
{
    set_time(gm, now);
    if (group_id.len >= 0 && is_consumer(gm, group_id))
        return kc_consumer_validate_commit(gm->consumer, version, group_id, generation, member_id);
    return kc_classic_validate_commit(gm, now, version, group_id, generation, member_id,
                                      instance_id);
}

int16_t kc_gm_validate_fetch(kc_gm_t *gm, kc_str_t group_id, kc_str_t member_id,
                             int32_t member_epoch)
{
    if (is_consumer(gm, group_id))
        return kc_consumer_validate_fetch(gm->consumer, group_id, member_id, member_epoch);
    return kc_classic_validate_fetch(gm, group_id, member_id, member_epoch);
}

bool kc_gm_subscribed(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic)
{
    if (is_consumer(gm, group_id))
        return kc_consumer_subscribed(gm->consumer, group_id, topic);
    return kc_classic_subscribed(gm, group_id, topic);
}

bool kc_gm_offsets_expirable(const kc_gm_t *gm, kc_str_t group_id, int64_t *base_ms)
{
    /* A consumer group (Kafka's ConsumerGroup.offsetExpirationCondition) counts from each
     * offset's commit time; kc_gm_subscribed protects the topics its members subscribe to. */
    if (is_consumer(gm, group_id)) {
        *base_ms = -1;
        return true;
    }
    return kc_classic_offsets_expirable(gm, group_id, base_ms);
}

int16_t kc_gm_validate_offset_delete(const kc_gm_t *gm, kc_str_t group_id, kc_str_t topic)
{
    if (is_consumer(gm, group_id))
        /* ConsumerGroup.validateOffsetDelete accepts; subscribed topics are refused. */
        return topic.len >= 0 && kc_consumer_subscribed(gm->consumer, group_id, topic)
                   ? KC_ERR_GROUP_SUBSCRIBED_TO_TOPIC
                   : 0;
    return kc_classic_validate_offset_delete(gm, group_id, topic);
}

int16_t kc_gm_delete(kc_gm_t *gm, kc_time_t now, kc_str_t group_id)
{
    set_time(gm, now);
    if (is_consumer(gm, group_id))
        return kc_consumer_delete(gm->consumer, now, group_id, "deleted by DeleteGroups");
    return kc_classic_delete(gm, now, group_id);
}

void kc_gm_remove_if_empty(kc_gm_t *gm, kc_time_t now, kc_str_t group_id)
{
    set_time(gm, now);
    if (is_consumer(gm, group_id)) {
        if (kc_consumer_is_empty(gm->consumer, group_id))
            kc_consumer_delete(gm->consumer, now, group_id, "empty group without offsets removed");
        return;
    }
    kc_classic_remove_if_empty(gm, now, group_id);
}

/* ---- Loading
 * ------------------------------------------------------------------------------------- */

/* Kafka's GroupCoordinatorShard.replay: one switch over the record types. */
int kc_gm_replay(kc_gm_t *gm, const uint8_t *key, size_t key_len, const uint8_t *value,
                 size_t value_len)
{
    kc_reader_t r;
    kc_rd_init(&r, key, key_len);
    int16_t type = kc_rd_i16(&r);
    if (r.err) {
        KC_WARN("group", "record key of %zu bytes has no type", key_len);
        return -2;
    }
    switch (type) {
    case 0: /* an offset commit of the old key version */
    case KC_RECORD_OFFSET_COMMIT_KEY:
        return value ? kc_classic_replay_offset_commit(gm, &r) : 1;
    case KC_RECORD_GROUP_METADATA_KEY: {
        kc_arena_t a;
        kc_arena_init(&a);
        int rc = kc_classic_replay_metadata(gm, &r, &a, value, value_len);
        kc_arena_free(&a);
        return rc;
    }
    case KC_RECORD_CONSUMER_GROUP_METADATA_KEY:
    case KC_RECORD_CONSUMER_GROUP_PARTITION_METADATA_KEY:
    case KC_RECORD_CONSUMER_GROUP_MEMBER_METADATA_KEY:
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY:
    case KC_RECORD_CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY:
    case KC_RECORD_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY:
        return kc_consumer_replay(gm->consumer, type, key, key_len, value, value_len);
    default:
        return 1; /* not a group record */
    }
}

void kc_gm_load_complete(kc_gm_t *gm, kc_time_t now)
{
    set_time(gm, now);
    kc_classic_load_complete(gm, now);
    kc_consumer_load_complete(gm->consumer, now);
}

/* ---- Conversions between kinds
 * --------------------------------------------------------------------
 *
 * As Kafka 4.4's GroupMetadataManager, under group.consumer.migration.policy: an empty group
 * of either kind becomes the other kind when a member of the other protocol joins it (the
 * consumer machine decides that from kc_manager_classic_kind and calls
 * kc_manager_classic_remove); a classic group with members becomes a consumer group when a
 * consumer-protocol member joins and the policy allows upgrades (kc_manager_upgrade: the
 * classic machine exports the group, the consumer machine builds it); a consumer group takes
 * classic members (kc_gm_join routes them to consumer_classic.c) unless the policy is
 * "disabled".
 */

int kc_manager_classic_kind(const kc_gm_t *gm, kc_str_t id)
{
    return kc_classic_kind(gm, id);
}

void kc_manager_classic_remove(kc_gm_t *gm, kc_time_t now, kc_str_t id, bool tombstone,
                               const char *reason)
{
    kc_classic_remove(gm, now, id, tombstone, reason);
}

int16_t kc_manager_classic_join(kc_gm_t *gm, kc_str_t id, bool unknown_member)
{
    /* GroupMetadataManager.classicGroupJoinToClassicGroup on an empty consumer group: it
     * becomes a classic group (its tombstones first), as in Kafka. */
    if (!is_consumer(gm, id))
        return 0;
    if (!kc_consumer_is_empty(gm->consumer, id))
        return KC_ERR_INCONSISTENT_GROUP_PROTOCOL; /* (kc_gm_join routed those away) */
    if (!unknown_member)
        return KC_ERR_UNKNOWN_MEMBER_ID;
    if (kc_consumer_delete(gm->consumer, gm_time(gm), id,
                           "a classic member joins: the empty group becomes a classic group") != 0)
        return KC_ERR_COORDINATOR_NOT_AVAILABLE;
    return 0;
}

int16_t kc_manager_upgrade_check(const kc_gm_t *gm, kc_str_t id, const char **why)
{
    /* Kafka's validateOnlineUpgrade. */
    int policy = gm->cfg.consumer_migration_policy;
    int32_t max = gm->cfg.consumer_max_size > 0 ? gm->cfg.consumer_max_size : INT32_MAX;
    kc_group_info_t info;
    if (policy != KC_GM_MIGRATION_BIDIRECTIONAL && policy != KC_GM_MIGRATION_UPGRADE) {
        *why = "Cannot upgrade classic group %.*s to consumer group because online upgrade is "
               "disabled.";
        return KC_ERR_GROUP_ID_NOT_FOUND;
    }
    if (kc_classic_info(gm, id, &info) != 0)
        return KC_ERR_COORDINATOR_NOT_AVAILABLE; /* (the caller saw it: cannot happen) */
    if (!kc_str_eq(info.protocol_type, KC_STR_LIT("consumer"))) {
        *why = "Cannot upgrade classic group %.*s to consumer group because the group does not "
               "use the consumer embedded protocol.";
        return KC_ERR_GROUP_ID_NOT_FOUND;
    }
    if (info.n_members > max) {
        *why = "Cannot upgrade classic group %.*s to consumer group because the group size "
               "exceeds the consumer group maximum size.";
        return KC_ERR_GROUP_ID_NOT_FOUND;
    }
    return 0;
}

int16_t kc_manager_upgrade(kc_gm_t *gm, kc_str_t id, kc_str_t member_id, kc_arena_t *a,
                           const char **why)
{
    kc_conv_group_t cv;
    int16_t err = kc_manager_upgrade_check(gm, id, why);
    if (err)
        return err;
    if (kc_classic_export(gm, id, a, &cv) != 0)
        return KC_ERR_COORDINATOR_NOT_AVAILABLE;
    /* Kafka's convertToConsumerGroup: the consumer group is prepared first (it may still be
     * refused), then the classic group goes, then the consumer group's records. */
    kc_cimport_t *im = NULL;
    err = kc_consumer_import_prepare(gm->consumer, &cv, member_id, &im, why);
    if (err)
        return err;
    kc_classic_convert_away(gm, gm_time(gm), id);
    kc_consumer_import_commit(gm->consumer, im);
    KC_INFO("group",
            "group %.*s: converted the classic group (%d members, generation %d) to a "
            "consumer group",
            (int)id.len, id.p, (int)cv.n, (int)cv.generation);
    return 0;
}

bool kc_manager_downgrade_allowed(const kc_gm_t *gm, int32_t remaining)
{
    int policy = gm->cfg.consumer_migration_policy;
    int32_t max = gm->cfg.max_size > 0 ? gm->cfg.max_size : INT32_MAX;
    if (remaining <= 0)
        return false;
    if (policy != KC_GM_MIGRATION_BIDIRECTIONAL && policy != KC_GM_MIGRATION_DOWNGRADE) {
        KC_DEBUG("group", "cannot downgrade a consumer group: the online downgrade is disabled");
        return false;
    }
    return remaining <= max;
}

int kc_manager_downgrade(kc_gm_t *gm, const kc_conv_group_t *cv, bool rebalance, kc_str_t member_id,
                         const char *reason)
{
    int rc = kc_classic_import(gm, gm_time(gm), cv, rebalance, member_id, reason);
    if (rc == 0)
        KC_INFO("group",
                "group %.*s: converted the consumer group (%d members, epoch %d) to a classic "
                "group%s",
                (int)cv->id.len, cv->id.p, (int)cv->n, (int)cv->generation,
                rebalance ? ", rebalancing" : "");
    return rc;
}

bool kc_manager_classic_leave(kc_gm_t *gm, kc_str_t id, const kc_member_identity_t *ids, int32_t n,
                              int16_t *errors)
{
    if (!is_consumer(gm, id))
        return false;
    kc_consumer_classic_leave(gm->consumer, gm_time(gm), id, ids, n, errors);
    return true;
}

bool kc_manager_is_consumer(const kc_gm_t *gm, kc_str_t id)
{
    return is_consumer(gm, id);
}

void kc_manager_replay_drop_consumer(kc_gm_t *gm, kc_str_t id)
{
    kc_consumer_drop(gm->consumer, id);
}

/* ---- Introspection
 * -------------------------------------------------------------------------------- */

void kc_gm_json_list(const kc_gm_t *gm, int64_t mono_ms, kc_emit_fn emit, void *arg, bool *first)
{
    kc_classic_json_list(gm, mono_ms, emit, arg, first);
    kc_consumer_json_list(gm->consumer, mono_ms, emit, arg, first);
}

int kc_gm_json_summary(const kc_gm_t *gm, kc_str_t group_id, kc_emit_fn emit, void *arg)
{
    if (is_consumer(gm, group_id))
        return kc_consumer_json_summary(gm->consumer, group_id, emit, arg);
    return kc_classic_json_summary(gm, group_id, emit, arg);
}

int kc_gm_json_group(const kc_gm_t *gm, int64_t mono_ms, kc_str_t group_id, kc_emit_fn emit,
                     void *arg)
{
    if (is_consumer(gm, group_id))
        return kc_consumer_json_group(gm->consumer, mono_ms, group_id, emit, arg);
    return kc_classic_json_group(gm, mono_ms, group_id, emit, arg);
}

/* ---- Statistics
 * ------------------------------------------------------------------------------------ */

const double kc_gm_assign_bounds_s[KC_GM_ASSIGN_BUCKETS - 1] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5};

void kc_gm_stats(const kc_gm_t *gm, kc_gm_stats_t *out)
{
    const kc_gm_stats_t *s = &gm->stats;
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < KC_GM_ASSIGN_BUCKETS; i++)
            out->assign_time[m][i] += s->assign_time[m][i];
        out->assign_time_sum_s[m] += s->assign_time_sum_s[m];
    }
    out->assign_failed += s->assign_failed;
    for (int i = 0; i < KC_RB_CAUSES; i++)
        out->rebalances[i] += s->rebalances[i];
    for (int i = 0; i < KC_GM_PHASE_BUCKETS; i++) {
        out->join_phase[i] += s->join_phase[i];
        out->sync_phase[i] += s->sync_phase[i];
    }
    out->join_phase_sum_s += s->join_phase_sum_s;
    out->sync_phase_sum_s += s->sync_phase_sum_s;
    out->timers_fired += s->timers_fired;
    out->timers_examined += s->timers_examined;
    out->tick_slices += s->tick_slices;
    for (int i = 0; i < KC_GM_REFUSED_KINDS; i++)
        out->refused[i] += s->refused[i];
    size_t in_use = 0, compiled = 0;
    kc_consumer_regex_counts(gm->consumer, &in_use, &compiled);
    out->regexes_in_use += in_use;
    out->regexes_compiled += compiled;
}

const char *kc_gm_refused_name(int kind)
{
    static const char *const names[KC_GM_REFUSED_KINDS] = {"regex_invalid", "regex_limit",
                                                           "record_too_large", "protocol_mix"};
    return kind >= 0 && kind < KC_GM_REFUSED_KINDS ? names[kind] : "unknown";
}
