/* shard.c - the shard door: one __consumer_offsets partition's groups and offsets, and the
 * rules between them, in one place.
 *
 * A shard pairs a group manager (src/group/) with an offsets store (src/offsets/), both pure
 * state machines that emit the records of their changes. Every request the API room makes of a
 * partition's groups or offsets comes through here, as every write of Kafka's coordinator goes
 * through its GroupCoordinatorShard; the loader and a follower replay records through the one
 * switch below. The rules that involve both halves are written here and nowhere else:
 *
 *   commit       the group validates the commit (generation, member, state) before any offset
 *                is written; a group error answers every partition of the request.
 *   fetch        v9+ member fields are checked against the group, then offsets are read.
 *   delete group a group that holds only offsets (no group state) is still a group, as in
 *                Kafka; a deleted group takes all its offsets with it (tombstones).
 *   delete offs  the group decides (non-empty, subscribed topic); the store deletes.
 *   retention    the group says which offsets may expire and from when; a group left Empty
 *                and without offsets goes, with its tombstone.
 *   replay       offset records to the store (after the manager has noted the simple group an
 *                offset implies), group records to the manager, other types skipped.
 *
 * To add an operation: a kc_shard_* function in coord.h that takes the partition, and its rule
 * here. Nothing outside coord/ sees kc_partition_t's fields.
 */
#include <stdlib.h>
#include <string.h>

#include "coord/coord_int.h"
#include "proto/errors.h"
#include "proto/gen_records.h"
#include "util/diag.h"

_Static_assert((int)KC_SHARD_ANSWERED == (int)KC_GM_ANSWERED &&
                   (int)KC_SHARD_PARKED == (int)KC_GM_PARKED,
               "the shard door passes the group manager's results through");

static bool serves(const kc_partition_t *p)
{
    return p->state == KC_PART_ACTIVE && p->cluster_err == 0 && p->groups != NULL &&
           p->offsets != NULL;
}

int32_t kc_partition_index(const kc_partition_t *p)
{
    return p->index;
}

int kc_partition_state(const kc_partition_t *p)
{
    return p->state;
}

const kc_partition_obs_t *kc_partition_obs(const kc_partition_t *p)
{
    return &p->obs;
}

/* ---- Offsets -------------------------------------------------------------------------------- */

int16_t kc_shard_commit_offsets(kc_partition_t *p, kc_time_t now, int16_t version,
                                kc_str_t group_id, int32_t generation, kc_str_t member_id,
                                kc_str_t instance_id, kc_shard_commit_t *v, size_t n)
{
    int16_t group_err = kc_gm_validate_commit(p->groups, now, version, group_id, generation,
                                              member_id, instance_id);
    for (size_t i = 0; i < n; i++) {
        if (group_err != KC_ERR_NONE) {
            v[i].error_code = group_err;
            continue;
        }
        if (v[i].error_code != KC_ERR_NONE)
            continue;
        v[i].error_code =
            kc_offsets_commit(p->offsets, group_id, v[i].topic, v[i].partition, &v[i].value) == 0
                ? KC_ERR_NONE
                : KC_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    return group_err;
}

int16_t kc_shard_fetch_check(kc_partition_t *p, kc_str_t group_id, kc_str_t member_id,
                             int32_t member_epoch)
{
    return kc_gm_validate_fetch(p->groups, group_id, member_id, member_epoch);
}

const kc_offset_t *kc_shard_fetch_offset(const kc_partition_t *p, kc_str_t group_id, kc_str_t topic,
                                         int32_t partition)
{
    return serves(p) ? kc_offsets_get(p->offsets, group_id, topic, partition) : NULL;
}

void kc_shard_fetch_all(const kc_partition_t *p, kc_str_t group_id,
                        void (*fn)(void *arg, kc_str_t topic, int32_t partition,
                                   const kc_offset_t *value),
                        void *arg)
{
    if (serves(p))
        kc_offsets_each(p->offsets, group_id, fn, arg);
}

int16_t kc_shard_delete_offsets(kc_partition_t *p, kc_str_t group_id, kc_shard_offset_del_t *v,
                                size_t n)
{
    int16_t err = kc_gm_validate_offset_delete(p->groups, group_id, KC_STR_NULL);
    if (err != KC_ERR_NONE)
        return err;
    /* The topic check once per run of entries of the same topic (a request lists a topic's
     * partitions together). */
    kc_str_t topic = KC_STR_NULL;
    int16_t topic_err = KC_ERR_NONE;
    for (size_t i = 0; i < n; i++) {
        if (v[i].error_code != KC_ERR_NONE)
            continue;
        if (topic.len < 0 || !kc_str_eq(topic, v[i].topic)) {
            topic = v[i].topic;
            topic_err = kc_gm_validate_offset_delete(p->groups, group_id, topic);
        }
        v[i].error_code = topic_err;
        if (topic_err == KC_ERR_NONE)
            kc_offsets_delete(p->offsets, group_id, v[i].topic, v[i].partition);
    }
    return KC_ERR_NONE;
}

/* ---- Groups --------------------------------------------------------------------------------- */

int16_t kc_shard_delete_group(kc_partition_t *p, kc_time_t now, kc_str_t group_id,
                              size_t *offsets_deleted)
{
    if (offsets_deleted)
        *offsets_deleted = 0;
    int16_t err = kc_gm_delete(p->groups, now, group_id);
    if (err == KC_ERR_GROUP_ID_NOT_FOUND && kc_offsets_count(p->offsets, group_id) > 0)
        err = KC_ERR_NONE; /* offsets alone still make a group, as in Kafka */
    if (err != KC_ERR_NONE)
        return err;
    size_t gone = kc_offsets_delete_group(p->offsets, group_id);
    if (offsets_deleted)
        *offsets_deleted = gone;
    return KC_ERR_NONE;
}

int kc_shard_join(kc_partition_t *p, kc_time_t now, int16_t version,
                  const kc_join_group_request_t *req, kc_str_t client_id, kc_str_t client_host,
                  void *waiter, kc_arena_t *a, kc_join_group_response_t *resp)
{
    return kc_gm_join(p->groups, now, version, req, client_id, client_host, waiter, a, resp);
}

int kc_shard_sync(kc_partition_t *p, kc_time_t now, int16_t version,
                  const kc_sync_group_request_t *req, void *waiter, kc_arena_t *a,
                  kc_sync_group_response_t *resp)
{
    return kc_gm_sync(p->groups, now, version, req, waiter, a, resp);
}

void kc_shard_heartbeat(kc_partition_t *p, kc_time_t now, int16_t version,
                        const kc_heartbeat_request_t *req, kc_heartbeat_response_t *resp)
{
    kc_gm_heartbeat(p->groups, now, version, req, resp);
}

void kc_shard_leave(kc_partition_t *p, kc_time_t now, int16_t version,
                    const kc_leave_group_request_t *req, kc_arena_t *a,
                    kc_leave_group_response_t *resp)
{
    kc_gm_leave(p->groups, now, version, req, a, resp);
}

int16_t kc_shard_consumer_check(const char *assignors, int16_t version,
                                const kc_consumer_group_heartbeat_request_t *req, kc_arena_t *a,
                                kc_str_t *message)
{
    return kc_gm_consumer_heartbeat_check(assignors, version, req, a, message);
}

void kc_shard_consumer_heartbeat(kc_partition_t *p, kc_time_t now, int16_t version,
                                 const kc_consumer_group_heartbeat_request_t *req,
                                 kc_str_t client_id, kc_str_t client_host,
                                 const kc_gm_topic_filter_t *filter, kc_arena_t *a,
                                 kc_consumer_group_heartbeat_response_t *resp)
{
    kc_gm_consumer_heartbeat_filtered(p->groups, now, version, req, client_id, client_host, filter,
                                      a, resp);
}

void kc_shard_describe(const kc_partition_t *p, int16_t version, kc_str_t group_id,
                       bool include_authorized_operations, kc_arena_t *a,
                       kc_describe_groups_described_group_t *out)
{
    kc_gm_describe(p->groups, version, group_id, include_authorized_operations, a, out);
}

void kc_shard_consumer_describe(const kc_partition_t *p, int16_t version, kc_str_t group_id,
                                bool include_authorized_operations, kc_arena_t *a,
                                kc_consumer_group_describe_described_group_t *out)
{
    kc_gm_consumer_describe(p->groups, version, group_id, include_authorized_operations, a, out);
}

void kc_shard_each_group(const kc_partition_t *p, void (*fn)(void *arg, const kc_group_info_t *g),
                         void *arg)
{
    if (serves(p))
        kc_gm_each(p->groups, fn, arg);
}

/* ---- Retention ------------------------------------------------------------------------------ */

typedef struct retention_arg_s {
    kc_partition_t *p;
    kc_time_t now;
} retention_arg_t;

static bool protected_topic(void *arg, kc_str_t group, kc_str_t topic)
{
    retention_arg_t *r = arg;
    return kc_gm_subscribed(r->p->groups, group, topic);
}

static void retention_policy(void *arg, kc_str_t group, kc_offsets_retention_t *out)
{
    retention_arg_t *r = arg;
    out->expirable = kc_gm_offsets_expirable(r->p->groups, group, &out->base_ms);
    out->protected_topic = protected_topic;
    out->arg = r;
}

static void retention_emptied(void *arg, kc_str_t group)
{
    retention_arg_t *r = arg;
    kc_gm_remove_if_empty(r->p->groups, r->now, group);
}

typedef struct empty_groups_s {
    kc_offsets_t *offsets;
    char **ids;
    size_t n, cap;
} empty_groups_t;

/* Collect Empty groups with no offsets left (kc_gm_each must not change the manager). */
static void collect_empty(void *arg, const kc_group_info_t *g)
{
    empty_groups_t *e = arg;
    if (g->state != KC_GROUP_EMPTY || kc_offsets_count(e->offsets, g->group_id) > 0)
        return;
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 8;
        char **ids = realloc(e->ids, cap * sizeof(*ids));
        if (ids == NULL)
            return;
        e->ids = ids;
        e->cap = cap;
    }
    e->ids[e->n] = strndup(g->group_id.p, (size_t)g->group_id.len);
    if (e->ids[e->n])
        e->n++;
}

/* Kafka's cleanup also removes Empty groups that hold no offsets at all (every member left
 * without committing, or their offsets were deleted): they go with a tombstone. */
static void remove_empty_groups(kc_partition_t *p, kc_time_t now)
{
    empty_groups_t e = {.offsets = p->offsets};
    kc_gm_each(p->groups, collect_empty, &e);
    for (size_t i = 0; i < e.n; i++) {
        kc_gm_remove_if_empty(p->groups, now, kc_str_c(e.ids[i]));
        free(e.ids[i]);
    }
    free(e.ids);
}

size_t kc_shard_expire(kc_partition_t *p, kc_time_t now, int64_t retention_ms)
{
    if (!serves(p))
        return 0;
    /* Kafka compares the persisted commit timestamps with the wall clock. */
    retention_arg_t arg = {p, now};
    size_t removed = kc_offsets_expire(p->offsets, now.wall_ms, retention_ms, retention_policy,
                                       retention_emptied, &arg);
    remove_empty_groups(p, now);
    return removed;
}

size_t kc_shard_delete_topic(kc_partition_t *p, kc_str_t topic)
{
    return serves(p) ? kc_offsets_delete_topic(p->offsets, topic) : 0;
}

/* ---- Replay --------------------------------------------------------------------------------- */

int kc_shard_replay_into(kc_gm_t *groups, kc_offsets_t *offsets, const uint8_t *key, size_t key_len,
                         const uint8_t *value, size_t value_len)
{
    if (key_len < 2) {
        KC_WARN("coord", "record key of %zu bytes has no type", key_len);
        return -2;
    }
    int16_t type = (int16_t)(key[0] << 8 | key[1]);
    int rc;
    switch (type) {
    case 0: /* the legacy OffsetCommitKey version */
    case KC_RECORD_OFFSET_COMMIT_KEY:
        /* The manager first notes the simple group an offset commit implies (Kafka's
         * OffsetMetadataManager.replay creates it); it answers 1: not a group record. */
        rc = kc_gm_replay(groups, key, key_len, value, value_len);
        if (rc == 1)
            rc = kc_offsets_replay(offsets, key, key_len, value, value_len);
        return rc;
    default:
        /* Every other type is the group manager's to keep or skip: it answers 1 for the
         * types kcoord does not keep (transactions, share groups...). */
        rc = kc_gm_replay(groups, key, key_len, value, value_len);
        return rc == 1 ? 0 : rc;
    }
}

int kc_shard_replay(kc_partition_t *p, const uint8_t *key, size_t key_len, const uint8_t *value,
                    size_t value_len)
{
    if (!serves(p))
        return -1;
    return kc_shard_replay_into(p->groups, p->offsets, key, key_len, value, value_len);
}

/* ---- Views for observers -------------------------------------------------------------------- */

void kc_shard_stats(const kc_partition_t *p, kc_gm_stats_t *out)
{
    if (serves(p))
        kc_gm_stats(p->groups, out);
}

int kc_shard_json_summary(const kc_partition_t *p, kc_str_t group_id, kc_emit_fn emit, void *arg)
{
    return serves(p) ? kc_gm_json_summary(p->groups, group_id, emit, arg) : -1;
}

int kc_shard_json_group(const kc_partition_t *p, int64_t mono_ms, kc_str_t group_id,
                        kc_emit_fn emit, void *arg)
{
    return serves(p) ? kc_gm_json_group(p->groups, mono_ms, group_id, emit, arg) : -1;
}

const char *kc_shard_refused_name(int kind)
{
    return kc_gm_refused_name(kind);
}
