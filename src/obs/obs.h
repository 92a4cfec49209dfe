/* obs.h - the observability room's door: an HTTP listener with Prometheus metrics, health,
 * readiness and a JSON view of the groups.
 *
 * Endpoints (docs/metrics.md has the details and every metric):
 *   GET /metrics          Prometheus text format 0.0.4: the counters of obs/metrics.h, and what
 *                         is computed from the coordinator when scraped (groups by state and
 *                         type, members, rebalances and phase durations, partition states, log
 *                         sizes)
 *   GET /healthz          200 "ok" while the event loop runs
 *   GET /readyz           200 once every partition is active and no partition's log writes
 *                         are failing (a write failed within KC_OBS_WRITE_FAIL_WINDOW_MS and
 *                         none succeeded since); 503 otherwise, with the reasons in the body
 *   GET /v1/groups        a JSON array with a summary of every group, streamed a piece at a
 *                         time (metrics.chunk.bytes) in the order partition, then group id;
 *                         ?limit=N lists at most N groups, ?after=<id> (percent-encoded) starts
 *                         after that group id (a page's last), whether it still exists or not
 *   GET /v1/groups/<id>   one group in full (members, assignments, heartbeat ages, recent
 *                         rebalances); <id> percent-encoded; 404 with a JSON error when missing
 *   GET /v1/cluster       the raft cluster as this node sees it (self, leader, role, raft
 *                         state, term, commit/applied/last index, voters with their match index,
 *                         lag and last contact, elections, leadership changes, snapshots); 404
 *                         with a JSON error on a single node (no cluster.voters)
 * On a node of a cluster, /metrics also has the kcoord_cluster_* families and /readyz says 503
 * while no leader is known.
 * Everything runs on the loop thread and only reads the coordinator.
 */
#ifndef KC_OBS_OBS_H
#define KC_OBS_OBS_H

#include <uv.h>

#include "cluster/cluster.h"
#include "coord/coord.h"
#include "obs/metrics.h"

/* How long after a partition's failed write /readyz keeps saying so when no write has been
 * tried since (an idle partition cannot prove that its disk recovered). */
#define KC_OBS_WRITE_FAIL_WINDOW_MS 30000

typedef struct kc_obs_server_s kc_obs_server_t;

/* A server on `loop` answering from `coord` (which may be NULL: then only /healthz and the
 * counters are served, and /readyz says 503). NULL when out of memory. */
kc_obs_server_t *kc_obs_server_new(uv_loop_t *loop, kc_coord_t *coord);

/* Take the HTTP listener's bounds from `conf` (metrics.max.connections,
 * metrics.request.timeout.ms, metrics.chunk.bytes); until then, their defaults apply. */
void kc_obs_server_configure(kc_obs_server_t *s, const kc_conf_t *conf);
/* The raft cluster this node is in (NULL, the default: a single node), for /v1/cluster, /readyz
 * and the cluster metrics. Not owned: it must stay valid until kc_obs_server_close or until it
 * is replaced (kc_obs_server_set_cluster(s, NULL) before the cluster closes). */
void kc_obs_server_set_cluster(kc_obs_server_t *s, kc_cluster_t *cluster);

/* Serve HTTPS with `tls` (metrics.ssl.enabled; not owned, closed by its owner after this
 * server), before kc_obs_server_listen. */
void kc_obs_server_set_tls(kc_obs_server_t *s, kc_net_tls_t *tls);

/* Listen on host:port; port 0 picks one, stored in *bound_port. 0 or a libuv error code. */
int kc_obs_server_listen(kc_obs_server_t *s, const char *host, int port, int *bound_port);

/* Close the listener and its connections and free the server once they are closed (from the
 * loop). Call it when the coordinator closes: the server never uses it after this call. */
void kc_obs_server_close(kc_obs_server_t *s);

/* The coordinator's log events, counted in the counters of obs/metrics.h (kc_obs_log_append,
 * kc_obs_log_fsync...): main hands it to kc_coord_set_events, so that the coordinator, below
 * this room, never includes it. */
extern const kc_coord_events_t kc_obs_coord_events;
/* The same for the network room's events: main hands it to kc_net_set_events. */
extern const kc_net_events_t kc_obs_net_events;

/* Write the whole /metrics page for `coord` (NULL: the counters only) to `b`. */
void kc_obs_render_metrics(kc_obs_buf_t *b, kc_coord_t *coord);

/* The /readyz verdict: true when ready. A sentence per reason goes to `b`. */
bool kc_obs_ready(kc_obs_buf_t *b, kc_coord_t *coord);

/* The cluster's part of the endpoints (cluster_view.c), from one kc_cluster_status reading:
 * the kcoord_cluster_* metric families; the /v1/cluster JSON object (and a newline); and the
 * cluster's /readyz verdict, true when a leader is known, else false with a "not ready: ..."
 * line saying why. */
void kc_obs_render_cluster_metrics(kc_obs_buf_t *b, const kc_cluster_status_t *st);
void kc_obs_cluster_json(kc_obs_buf_t *b, const kc_cluster_status_t *st);
bool kc_obs_cluster_ready(kc_obs_buf_t *b, const kc_cluster_status_t *st);

#endif
