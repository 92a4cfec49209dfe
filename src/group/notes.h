/* notes.h - "log this once per group": which refusal reasons were already logged for a group.
 *
 * A request refused for a reason its user must act on (an invalid regex, a record too large)
 * is logged at info once per group and reason, not once per request: a client retrying every
 * second must not fill the log. A kc_notes_t remembers, per group id, the hashes of the last
 * few reasons logged. It is bounded: past KC_NOTES_MAX groups it forgets everything and
 * starts again (each group's reason is then logged once more). Loop thread only.
 */
#ifndef KC_GROUP_NOTES_H
#define KC_GROUP_NOTES_H

#include <stdbool.h>

#include "group/strmap.h"
#include "proto/wire.h"

#define KC_NOTES_MAX 10000

typedef struct kc_notes_s {
    kc_strmap_t map; /* group id -> its note */
} kc_notes_t;

void kc_notes_init(kc_notes_t *n);
void kc_notes_free(kc_notes_t *n);

/* Whether `reason` is news for `group` (and remember it): true the first time, false while
 * it is among the last reasons remembered for the group. Out of memory: true. */
bool kc_notes_first(kc_notes_t *n, kc_str_t group, kc_str_t reason);

#endif
