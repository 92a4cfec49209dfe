/* offsets_int.h - inside the offsets room: a fault-injection seam for the unit tests.
 *
 * Not part of the door (offsets.h). Only tests/unit/test_offsets.c includes it, to prove that
 * every allocation failure leaves the store exactly as it was.
 */
#ifndef KC_OFFSETS_OFFSETS_INT_H
#define KC_OFFSETS_OFFSETS_INT_H

/* How many more allocations the offsets store may make before they start failing; -1 (the
 * default) means no limit. Every allocation the store makes, including the growth of its
 * record buffers, counts. Event-loop thread only, like the store itself. */
extern long kc_offsets__alloc_budget;

#endif
