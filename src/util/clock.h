/* clock.h - the time the state machines are given: a monotonic and a wall-clock reading.
 *
 * Timers (session, rebalance, join, sync and pending-member timeouts, ages and durations)
 * compare the monotonic reading, which never jumps: stepping the wall clock (NTP, a VM that
 * resumes, an operator) must neither expel live members nor keep dead ones. The wall-clock
 * reading only goes where Kafka puts wall-clock time: timestamps written into records (commit
 * and state timestamps), rebalance start and end times shown to people, and offset retention,
 * which compares the persisted commit timestamps with the current wall-clock time.
 *
 * The state machines never read a clock; their host takes one kc_time_t per event and passes
 * it in, so tests drive them with a fake clock that can step either reading alone.
 */
#ifndef KC_UTIL_CLOCK_H
#define KC_UTIL_CLOCK_H

#include <stdint.h>

typedef struct kc_time_s {
    int64_t mono_ms; /* monotonic milliseconds, arbitrary origin: for every timer and age */
    int64_t wall_ms; /* milliseconds since the Unix epoch: for records and people only */
} kc_time_t;

/* A time whose two readings are the same number (tests that do not care about the wall). */
static inline kc_time_t kc_time_same(int64_t ms)
{
    return (kc_time_t){ms, ms};
}

#endif
