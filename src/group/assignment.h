/* assignment.h - inside the group room: partition sets for the consumer machine: lists of
 * (topic, partition) pairs, assignments, and the count of members holding each partition. */
#ifndef KC_GROUP_ASSIGNMENT_H
#define KC_GROUP_ASSIGNMENT_H

#include "group/consumer_group.h"

/* Append a pair; on allocation failure set l->oom and keep the list as it was. */
void kc_asg_tpv_add(tpv_t *l, const kc_uuid_t *topic, int32_t part);

/* Free the list's array (the list may be used again). */
void kc_asg_tpv_free(tpv_t *l);

/* Byte order of two topic ids. */
int kc_asg_uuid_cmp(const kc_uuid_t *a, const kc_uuid_t *b);

/* kc_asg_uuid_cmp for qsort and bsearch. */
int kc_asg_uuid_qcmp(const void *x, const void *y);

/* Order of two (topic, partition) pairs, for qsort and bsearch. */
int kc_asg_tp_cmp(const void *x, const void *y);

/* Sort and de-duplicate the pairs of `l` and build an assignment from them: NULL when empty
 * (or, with *oom set, out of memory). */
asg_t *kc_asg_build(tpv_t *l, bool *oom);

/* Append every pair of `a` (NULL: none) to `l`. */
void kc_asg_pairs(const asg_t *a, tpv_t *l);

/* A copy of `a` (NULL for NULL; NULL with *oom set when out of memory). */
asg_t *kc_asg_dup(const asg_t *a, bool *oom);

/* Whether two assignments hold the same pairs (NULL is empty). */
bool kc_asg_eq(const asg_t *a, const asg_t *b);

/* The partitions `a` holds of `topic`, or NULL. */
const tpl_t *kc_asg_topic(const asg_t *a, const kc_uuid_t *topic);

/* Whether `a` holds (topic, part). */
bool kc_asg_has(const asg_t *a, const kc_uuid_t *topic, int32_t part);

/* Sorted pairs, searched by bsearch (the partitions some members hold). */
bool kc_asg_pairs_has(const tpv_t *l, const kc_uuid_t *topic, int32_t part);

/* How many members hold (topic, part). */
int32_t kc_asg_holders_count(const holders_t *h, const kc_uuid_t *topic, int32_t part);

/* Free the map and clear it (invalid: rebuilt from the members when next needed). */
void kc_asg_holders_drop(holders_t *h);

/* Count (delta +1) or uncount (-1) the partitions of `a`; drops the map when memory runs out. */
void kc_asg_holders_apply(holders_t *h, const asg_t *a, int delta);

#endif
