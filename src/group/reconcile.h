/* reconcile.h - inside the group room: reconciliation of a consumer member's current
 * assignment towards its target (reconcile.c). */
#ifndef KC_GROUP_RECONCILE_H
#define KC_GROUP_RECONCILE_H

#include "group/consumer_group.h"

/* Kafka's isSubset: every reported partition is in `assigned` (false when not reported). */
bool kc_reconcile_owned_subset(const owned_t *owned, const asg_t *assigned);

/* Kafka's maybeReconcile + CurrentAssignmentBuilder.build(): the member's next current
 * assignment. out->changed tells whether it differs (a record is then due). */
void kc_reconcile(const rin_t *in, recon_t *out);

#endif
