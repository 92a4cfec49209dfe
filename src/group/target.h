/* target.h - inside the group room: target assignment for the consumer machine: subscription
 * resolution (topic names and regular expressions), assignment jobs and their results. */
#ifndef KC_GROUP_TARGET_H
#define KC_GROUP_TARGET_H

#include "group/consumer_group.h"

/* The host's topics (the ops' topics callback), or none. */
void kc_target_topics_of(const kc_consumer_t *c, kc_gm_topics_t *tv);

/* The topic of id `id`, or NULL. */
const kc_gm_topic_t *kc_target_tv_id(const kc_gm_topics_t *tv, const kc_uuid_t *id);

/* Resolve `regex` against the topics: a new rres_t (NULL when out of memory, *oom set). A
 * regex that does not compile matches nothing. The compiled pattern comes from the partition's
 * cache (src/group/regex.h), so a resolution compiles nothing after the first; its cost is
 * bounded by the topics: at most O(topics x 249 x program size), the program bounded by
 * KC_RX_MAX_MEM. During a heartbeat with a filter (c->filter), the topics it refuses are
 * left out: one filter call per match. */
rres_t *kc_target_rx_resolve(kc_consumer_t *c, const kc_gm_topics_t *tv, kc_str_t regex, bool *oom);

/* A copy of a resolution (NULL when out of memory). */
rres_t *kc_target_rres_dup(const rres_t *r);

/* Whether two resolutions of a regular expression match the same topics. */
bool kc_target_rres_eq(const rres_t *a, const rres_t *b);

/* The group's resolution of `regex` at its last metadata check, or NULL. */
const rres_t *kc_target_rres_cached(const cgroup_t *g, kc_str_t regex);

/* Sort the names and drop duplicates. */
void kc_target_strv_sort_unique(strv_t *l);

/* Free the list's array. */
void kc_target_strv_free(strv_t *l);

/* Free the list (not the resolutions it points to). */
void kc_target_keep_free(keep_t *k);

/* The topic names a member with metadata `m` subscribes to: its names and what its regex
 * resolves to. Resolutions made on the way go to `keep`, so the views stay valid until it is
 * freed. */
void kc_target_member_subs(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                           strv_t *out, keep_t *keep);

/* Whether a member with metadata `m` subscribes to `topic`. */
bool kc_target_member_subscribed(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                                 kc_str_t topic);

/* The union of the subscriptions of the group's members, `skip1` and `skip2` left out and
 * `extra` (the metadata a member is about to have) added: sorted, distinct. */
void kc_target_group_subs(const cgroup_t *g, const kc_gm_topics_t *tv, const cmember_t *skip1,
                          const cmember_t *skip2, const cmeta_t *extra, strv_t *out, keep_t *keep);

/* The metadata hash of a group subscribed to `names` (sorted, distinct): the role of Kafka's
 * KIP-1101 hash (which topics exist, their ids and partition counts), computed kcoord's way
 * (Kafka's exact value depends on its release's hash library). 0 when none of the topics
 * exists, as Kafka. */
int64_t kc_target_metadata_hash(const kc_gm_topics_t *tv, const strv_t *names);

/* The ids of the existing topics a member with metadata `m` subscribes to, sorted (malloc'd
 * into *out; *n 0 for none). -1 when out of memory. */
int kc_target_member_topic_ids(const cgroup_t *g, const kc_gm_topics_t *tv, const cmeta_t *m,
                               kc_uuid_t **out, size_t *n);

/* The assignor the group uses: the one most members ask for (ties go to the earlier one in
 * group.consumer.assignors), the default when none asks. `skip1`/`skip2` are left out and
 * `extra` counted, as Kafka's computePreferredServerAssignor. */
kc_str_t kc_target_preferred_assignor(const cgroup_t *g, const cmember_t *skip1,
                                      const cmember_t *skip2, const cmeta_t *extra);

/* The group of `job` is gone: the job frees itself when it comes back. */
void kc_target_job_orphan(kc_gm_job_t *job);

/* Free a job (NULL: nothing). */
void kc_target_job_free(kc_gm_job_t *job);

/* The job computing the target assignment of group `g` for `epoch`: every member except
 * `upd_old` and `gone`, plus, when `upd_meta` is not NULL, member `upd_id` with that metadata
 * (the member a heartbeat is updating; its current target, or that of `gone`, the static
 * member it replaces, is its starting point). NULL when out of memory. */
kc_gm_job_t *kc_target_job_build(cgroup_t *g, const kc_gm_topics_t *tv, int32_t epoch,
                                 kc_str_t upd_id, const cmeta_t *upd_meta, const cmember_t *upd_old,
                                 const cmember_t *gone);

/* Kafka's updateTargetAssignment, second half: plan a target record for every member whose
 * target the job changed, then the assignment epoch record. With `remap` (the job ran off the
 * loop while the group went on), members that left since are skipped and the result of a
 * static member that was replaced since goes to its successor, as if those changes came after
 * the assignment. Returns a copy of the new target of member `mine` (null id: none; owned by
 * the caller); *err is a Kafka error when the assignor failed (p->oom when memory ran out). */
asg_t *kc_target_job_plan(plan_t *p, const kc_gm_job_t *job, bool remap, kc_str_t mine, int64_t now,
                          int16_t *err);

/* Whether `job` runs off the loop: the host can, it is enabled, and the job is large enough
 * (a group still at assignment epoch 0, written by an older kcoord, is computed inline: its
 * joining members could only be given the reserved epoch 0 meanwhile). */
bool kc_target_job_offload_wanted(const kc_consumer_t *c, const cgroup_t *g,
                                  const kc_gm_job_t *job);

/* Count the job's assignor run in the manager's histograms (or its failure). */
void kc_target_job_count(kc_consumer_t *c, const kc_gm_job_t *job);

/* Attach `job` (built for the committed group `g`) to it and hand it to the host when
 * `offload`; compute and apply it at once when not, or when the host cannot take it. */
void kc_target_job_start(cgroup_t *g, kc_gm_job_t *job, bool offload);

/* KIP-1263 batching. Whether the target assignment of `epoch` must wait because the group's
 * last one started less than its assignment interval ago (kc_manager_group_config); if so the
 * group's timer is armed for when the interval is over (kc_target_deferred_due). */
bool kc_target_defer(cgroup_t *g, int32_t epoch);

/* The group's deferred assignment is due: start it (inline or off the loop) when the group is
 * still behind and no job runs (a running job starts the next one when it ends). */
void kc_target_deferred_due(cgroup_t *g);

#endif
