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
};

/* Apply one record read back from the log to `groups` and `offsets` (a partition's state, or
 * the fresh state a load builds): the replay switch on the record type. Offset commits go to
 * the offsets store (after the group manager has noted the simple group an offset implies),
 * group and consumer-group records to the group manager; other types are skipped. Returns 0;
 * -1 when out of memory; -2 when the record is malformed (nothing changed: the loader skips
 * it, as Kafka's does). */
int kc_shard_replay_into(kc_gm_t *groups, kc_offsets_t *offsets, const uint8_t *key, size_t key_len,
                         const uint8_t *value, size_t value_len);

#endif
