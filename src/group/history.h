/* history.h - inside the group room: the rebalance history ring of one group, kept the same
 * way by the classic and the consumer machine (group.h describes what it records and
 * kc_rb_cause_name names its causes). Not part of the room's door.
 */
#ifndef KC_GROUP_HISTORY_H
#define KC_GROUP_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group.h"

/* Rebalance history, the same for both kinds of group (group.h describes what it records).
 * A ring of up to KC_RB_HISTORY entries, allocated at the first rebalance and doubled (1, 2,
 * 4 ..) as entries come, so a group that never rebalances (a simple group holding offsets)
 * costs nothing but the struct and one that rebalanced once holds one entry.
 * Recording is best effort: when memory runs out an entry or a name is left out, and nothing
 * fails. Everything the ring keeps is its own copy. */
/* Member ids kept per joined/dropped list; the rest are counted. */
#define KC_HISTORY_NAMES_MAX 64

/* The member ids of one list, packed in one buffer: each a 4-byte length (native order, not
 * aligned) then its bytes. The buffer doubles as names come and is cut to fit when the
 * entry ends. */
typedef struct kc_history_names_s {
    char *buf;         /* NULL until the first name */
    uint32_t len, cap; /* bytes used, bytes allocated */
    uint32_t n;        /* names kept */
    uint32_t more;     /* left out (beyond KC_HISTORY_NAMES_MAX or no memory) */
} kc_history_names_t;

typedef struct kc_history_entry_s {
    int32_t generation;           /* the generation (group epoch) it produced, -1 until known */
    int64_t start_ms, end_ms;     /* wall clock, for people; end_ms 0 while it runs */
    int64_t start_mono, end_mono; /* monotonic, for the duration */
    int cause;                    /* KC_RB_* */
    kc_str_t member_id;           /* owned copy, null: none */
    kc_str_t reason;              /* owned copy, null: none */
    const char *outcome;          /* a static string once ended: "stable", "empty", "restarted" */
    kc_history_names_t joined, dropped;
} kc_history_entry_t;

typedef struct kc_history_s {
    kc_history_entry_t *v; /* cap entries, NULL before the first rebalance */
    uint32_t cap;          /* 0, then 1, 2, 4 .. KC_RB_HISTORY (a power of two dividing it) */
    uint32_t total;        /* entries ever begun: the newest is v[(total - 1) % cap] */
    bool open;             /* the newest entry is still running */
} kc_history_t;

/* Begin an entry (the caller ends a running one first). Counts the cause in `stats` (when not
 * NULL) even if the entry cannot be recorded. */
void kc_history_begin(kc_history_t *r, kc_gm_stats_t *stats, kc_time_t now, int cause,
                      kc_str_t member_id, kc_str_t reason);
/* Note a member that joined (`joined`) or dropped out of the running entry; nothing when no
 * entry runs or the member is already listed. */
void kc_history_note(kc_history_t *r, bool joined, kc_str_t member_id);
/* The running entry, or NULL. */
kc_history_entry_t *kc_history_current(kc_history_t *r);
/* End the running entry (if any) with the generation it produced and its outcome. Returns the
 * entry ended, or NULL. */
kc_history_entry_t *kc_history_end(kc_history_t *r, kc_time_t now, int32_t generation,
                                   const char *outcome);
/* Log the one info line of an ended entry; `kind` is "group" or "consumer group". */
void kc_history_log(const kc_history_entry_t *e, const char *kind, kc_str_t group_id);
void kc_history_free(kc_history_t *r);
/* Emit the entries as a JSON array, oldest first; a running one has end_ms 0 and its duration
 * so far (`mono_ms`: the monotonic time now). */
void kc_history_json(const kc_history_t *r, int64_t mono_ms, kc_emit_fn emit, void *arg);
/* The newest entry's end (0: none, or it runs) and how many entries were ever begun. */
int64_t kc_history_last_end(const kc_history_t *r);

#endif
