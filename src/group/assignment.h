/* assignment.h - inside the group room: partition sets for the consumer machine: lists of
 * (topic, partition) pairs, assignments, and the count of members holding each partition. */
#ifndef KC_GROUP_ASSIGNMENT_H
#define KC_GROUP_ASSIGNMENT_H

#include "group/consumer_group.h"

void kc_asg_tpv_add(tpv_t *l, const kc_uuid_t *topic, int32_t part);

void kc_asg_tpv_free(tpv_t *l);

int kc_asg_uuid_cmp(const kc_uuid_t *a, const kc_uuid_t *b);

int kc_asg_uuid_qcmp(const void *x, const void *y);

int kc_asg_tp_cmp(const void *x, const void *y);

/* Sort and de-duplicate the pairs of `l` and build an assignment from them: NULL when empty
 * (or, with *oom set, out of memory). */
asg_t *kc_asg_build(tpv_t *l, bool *oom);

void kc_asg_pairs(const asg_t *a, tpv_t *l);

asg_t *kc_asg_dup(const asg_t *a, bool *oom);

bool kc_asg_eq(const asg_t *a, const asg_t *b);

const tpl_t *kc_asg_topic(const asg_t *a, const kc_uuid_t *topic);

bool kc_asg_has(const asg_t *a, const kc_uuid_t *topic, int32_t part);

/* Sorted pairs, searched by bsearch (the partitions some members hold). */
bool kc_asg_pairs_has(const tpv_t *l, const kc_uuid_t *topic, int32_t part);

int32_t kc_asg_holders_count(const holders_t *h, const kc_uuid_t *topic, int32_t part);

void kc_asg_holders_drop(holders_t *h);

/* Count (delta +1) or uncount (-1) the partitions of `a`; drops the map when memory runs out. */
void kc_asg_holders_apply(holders_t *h, const asg_t *a, int delta);

#endif
