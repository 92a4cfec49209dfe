/* assignor.h - the server-side partition assignors of KIP-848 consumer groups: "uniform" and
 * "range".
 *
 * An assignor is a pure function: it takes the group's members (their subscriptions and
 * their current target assignment), the topic table (partition counts), and computes the new
 * target assignment of every member. No I/O, no clock, no global state; the only side effect
 * is memory allocation. The same input always gives the same output, whatever order the
 * caller lists members and topics in (see "Determinism" below).
 *
 * Topics are small integer indexes into spec->topics. A member subscribes to topic indexes,
 * and both its current and its new assignment are lists of (topic index, partitions). The
 * result of one call can therefore be fed back as the `current` of the next call, as long as
 * the caller keeps topic indexes stable (or translates them).
 *
 *   uniform  Kafka's default. Balanced first, then sticky. With homogeneous subscriptions
 *            every member gets floor or ceil of partitions/members and a change moves the
 *            fewest partitions that balance allows. With heterogeneous subscriptions every
 *            partition goes to a member subscribed to its topic, and the partition counts are
 *            as even as the subscriptions allow: there is no chain of members, each passing
 *            one partition of a topic the next one subscribes to, that runs from a member to
 *            one with at least 2 partitions fewer (unless a work bound cut a pathological
 *            case short, see docs/assignors.md). Partitions stay with their current owner
 *            unless balance needs them elsewhere.
 *   range    Kafka 4.x's server-side range assignor: per topic, contiguous ranges across the
 *            members subscribed to it, ordered by instance id (static members first) and then
 *            by member id; co-partitioned topics give each member the same partition numbers.
 *            Like Kafka since KAFKA-16944 (2024) it ignores the current assignment:
 *            its stickiness comes from static members' instance ids.
 *
 * docs/assignors.md describes the guarantees, the algorithms and their cost in detail.
 *
 * Determinism: members are ordered internally by member id (bytes, then length), topics by
 * name (bytes, then length; equal or missing names fall back to the table index). Every tie
 * is broken in that order, so the result as a set of (member, topic, partition) does not
 * depend on the order of spec->members or spec->topics, nor on the order of subscription or
 * assignment lists, provided member ids are unique (required) and topic names are unique.
 */
#ifndef KC_GROUP_ASSIGNOR_H
#define KC_GROUP_ASSIGNOR_H

#include <stddef.h>
#include <stdint.h>

/* The partitions of one topic held by one member. */
typedef struct kc_assign_tparts_s {
    uint32_t topic;            /* index into spec->topics */
    uint32_t n_partitions;     /* entries in partitions */
    const int32_t *partitions; /* partition numbers; ascending in results */
} kc_assign_tparts_t;

/* A member's assignment: a list of topics with their partitions. In results the topics are in
 * ascending topic index, each present only when it holds at least one partition. */
typedef struct kc_assign_owned_s {
    const kc_assign_tparts_t *topics;
    uint32_t n_topics;
} kc_assign_owned_t;

typedef struct kc_assign_member_s {
    const char *id; /* member id; unique in the group */
    size_t id_len;
    const char *instance_id; /* group.instance.id of a static member; NULL when dynamic */
    size_t instance_id_len;
    const char *rack; /* client.rack, or NULL; accepted but not used yet */
    size_t rack_len;
    const uint32_t *topics; /* subscribed topic indexes, any order; duplicates are ignored */
    uint32_t n_topics;
    /* The member's current target assignment (for stickiness). Entries that no longer make
     * sense are dropped: a topic index outside the table, a partition outside its topic (a
     * deleted topic can be given 0 partitions), a topic the member no longer subscribes to,
     * and a partition that a member with a smaller id also claims. */
    kc_assign_owned_t current;
} kc_assign_member_t;

typedef struct kc_assign_topic_s {
    const char *name; /* only orders topics for ties; NULL allowed (index order then) */
    size_t name_len;
    int32_t partitions; /* partition count, >= 0 */
} kc_assign_topic_t;

typedef struct kc_assign_spec_s {
    const kc_assign_member_t *members;
    uint32_t n_members;
    const kc_assign_topic_t *topics;
    uint32_t n_topics;
    /* 0: no limit. Otherwise the most bytes one call may allocate (its scratch memory plus the
     * result); past it the call fails with -ENOMEM. Bounds the cost of one huge group. */
    size_t mem_limit;
} kc_assign_spec_t;

/* A computed assignment. All of it lives in memory owned by the result: free it with
 * kc_assign_result_free. */
typedef struct kc_assign_result_s {
    kc_assign_owned_t *members; /* n_members entries, in the order of spec->members */
    uint32_t n_members;
    uint32_t n_assigned; /* partitions assigned in total */
    uint32_t n_kept;     /* of those, partitions that stay with their current owner */
    uint32_t n_moved;    /* of those, partitions taken from a current owner in the group */
    /* n_assigned - n_kept - n_moved partitions had no (valid) current owner in the group:
     * new partitions, partitions of members that left, of topics newly subscribed. */
} kc_assign_result_t;

/* Compute a new target assignment into *out. Returns 0, -ENOMEM when memory (or
 * spec->mem_limit) runs out, or -EINVAL for an invalid spec: a subscription to a topic index
 * outside the table, a negative partition count, more than INT32_MAX partitions in total, a
 * NULL pointer with a non-zero length, or two members with the same id. On failure *out is
 * zeroed and owns nothing (kc_assign_result_free on it is harmless). The spec is only read,
 * and nothing in *out points into it. */
int kc_assign_uniform(const kc_assign_spec_t *spec, kc_assign_result_t *out);
int kc_assign_range(const kc_assign_spec_t *spec, kc_assign_result_t *out);

/* Release a result's memory and zero it. */
void kc_assign_result_free(kc_assign_result_t *res);

typedef int (*kc_assign_fn)(const kc_assign_spec_t *spec, kc_assign_result_t *out);

typedef struct kc_assignor_s {
    const char *name; /* "uniform", "range" */
    kc_assign_fn assign;
} kc_assignor_t;

/* Kafka's group.consumer.assignors default is "uniform,range": the first is the default. */
#define KC_ASSIGNOR_DEFAULT "uniform"

/* The assignor called `name` (len bytes, not necessarily NUL-terminated, exact match as Kafka
 * compares names), or NULL: the heartbeat then fails with UNSUPPORTED_ASSIGNOR. */
const kc_assignor_t *kc_assignor_find(const char *name, size_t len);

/* The i-th assignor in preference order (0 is the default), NULL past the last one. */
const kc_assignor_t *kc_assignor_at(size_t i);

#endif
