/* cluster_view.c - the raft cluster on the observability endpoints: the kcoord_cluster_* metric
 * families, the /v1/cluster JSON view and the cluster's part of /readyz.
 *
 * Everything here is written from one kc_cluster_status() reading, taken by obs.c when a
 * request comes (so these functions read no clock and hold nothing). A node knows the other
 * voters' match index and last contact only while it leads: elsewhere they are unknown, shown
 * as null in the JSON and left out of the metrics. The names follow the other families:
 * kcoord_cluster_<what>, counters ending in _total. docs/metrics.md documents each.
 */
#include <stdio.h>
#include <string.h>

#include "obs/obs.h"
#include "util/diag.h"

static const char *role_name(int role)
{
    switch (role) {
    case KC_CLUSTER_LEADER:
        return "leader";
    case KC_CLUSTER_LOADING:
        return "loading";
    default:
        return "follower";
    }
}

/* Raft's roles of a server in its configuration. */
static const char *voter_role_name(int role)
{
    switch (role) {
    case 0:
        return "standby";
    case 1:
        return "voter";
    case 2:
        return "spare";
    default:
        return "unknown";
    }
}

static bool leads(const kc_cluster_status_t *st)
{
    return st->leader >= 0 && st->leader == st->self;
}

/* The entries voter `v` lacks of the leader's log, or -1 when that is not known here (this
 * node does not lead, or the leader has no match index for it yet). */
static int64_t lag_entries(const kc_cluster_status_t *st, const kc_cluster_voter_t *v)
{
    if (!leads(st) || v->match_index < 0)
        return -1;
    if (v->id == st->self)
        return 0;
    return (uint64_t)v->match_index >= st->last_index
               ? 0
               : (int64_t)(st->last_index - (uint64_t)v->match_index);
}

void kc_obs_render_cluster_metrics(kc_obs_buf_t *b, const kc_cluster_status_t *st)
{
    kc_prom_family(b, "kcoord_cluster_term", "gauge", "The raft term this node is in.");
    kc_prom_sample(b, "kcoord_cluster_term", NULL, (double)st->term);
    kc_prom_family(b, "kcoord_cluster_leader", "gauge",
                   "The node id of the raft leader as this node knows it; -1 when none is known.");
    kc_prom_sample(b, "kcoord_cluster_leader", NULL, (double)st->leader);
    kc_prom_family(b, "kcoord_cluster_is_leader", "gauge",
                   "1 when this node is the raft leader, else 0.");
    kc_prom_sample(b, "kcoord_cluster_is_leader", NULL, leads(st) ? 1.0 : 0.0);
    kc_prom_family(b, "kcoord_cluster_commit_index", "gauge",
                   "The index of the last raft entry known to be committed (on a majority).");
    kc_prom_sample(b, "kcoord_cluster_commit_index", NULL, (double)st->commit_index);
    kc_prom_family(b, "kcoord_cluster_applied_index", "gauge",
                   "The index of the last raft entry this node applied to its partitions.");
    kc_prom_sample(b, "kcoord_cluster_applied_index", NULL, (double)st->applied_index);
    kc_prom_family(b, "kcoord_cluster_last_index", "gauge",
                   "The index of the last entry of this node's raft log.");
    kc_prom_sample(b, "kcoord_cluster_last_index", NULL, (double)st->last_index);
    kc_prom_family(b, "kcoord_cluster_servers", "gauge",
                   "The servers of the raft configuration as this node knows it, by raft role "
                   "(voter, standby, spare: a node being added).");
    static const char *const roles[] = {"standby", "voter", "spare"};
    for (int role = 0; role < 3; role++) {
        size_t n = 0;
        for (size_t i = 0; i < st->n_voters; i++)
            n += st->voters[i].role == role;
        char labels[32];
        snprintf(labels, sizeof(labels), "role=\"%s\"", roles[role]);
        kc_prom_sample(b, "kcoord_cluster_servers", labels, (double)n);
    }
    kc_prom_family(b, "kcoord_cluster_follower_lag_entries", "gauge",
                   "On the leader, for each other voter whose match index it knows: the raft "
                   "entries the voter lacks (the leader's last index minus its match index).");
    for (size_t i = 0; i < st->n_voters; i++) {
        const kc_cluster_voter_t *v = &st->voters[i];
        int64_t lag = lag_entries(st, v);
        if (v->id == st->self || lag < 0)
            continue;
        char labels[32];
        snprintf(labels, sizeof(labels), "node=\"%d\"", v->id);
        kc_prom_sample(b, "kcoord_cluster_follower_lag_entries", labels, (double)lag);
    }
    kc_prom_family(b, "kcoord_cluster_elections_total", "counter",
                   "Elections this node started (it became a candidate).");
    kc_prom_sample(b, "kcoord_cluster_elections_total", NULL, (double)st->elections);
    kc_prom_family(b, "kcoord_cluster_leadership_changes_total", "counter",
                   "Times the leader this node knows changed (to another node or to none).");
    kc_prom_sample(b, "kcoord_cluster_leadership_changes_total", NULL,
                   (double)st->leadership_changes);
    kc_prom_family(b, "kcoord_cluster_snapshots_total", "counter",
                   "Raft snapshots taken on this node (kind=\"taken\") and installed from the "
                   "leader or at start (kind=\"restored\").");
    kc_prom_sample(b, "kcoord_cluster_snapshots_total", "kind=\"taken\"", (double)st->snapshots);
    kc_prom_sample(b, "kcoord_cluster_snapshots_total", "kind=\"restored\"",
                   (double)st->snapshots_restored);
}

static void json_string(kc_obs_buf_t *b, const char *s)
{
    kc_obs_buf_puts(b, "\"");
    kc_diag_json_escape(s, strlen(s), kc_obs_buf_emit, b);
    kc_obs_buf_puts(b, "\"");
}

/* An integer, or null when negative (not known). */
static void json_known(kc_obs_buf_t *b, int64_t v)
{
    if (v < 0)
        kc_obs_buf_puts(b, "null");
    else
        kc_obs_buf_printf(b, "%lld", (long long)v);
}

void kc_obs_cluster_json(kc_obs_buf_t *b, const kc_cluster_status_t *st)
{
    kc_obs_buf_printf(b, "{\"self\":%d,\"leader\":", st->self);
    json_known(b, st->leader);
    kc_obs_buf_printf(b, ",\"is_leader\":%s,\"role\":", leads(st) ? "true" : "false");
    json_string(b, role_name(st->role));
    kc_obs_buf_puts(b, ",\"raft_state\":");
    json_string(b, st->raft_state != NULL ? st->raft_state : "unknown");
    kc_obs_buf_printf(b,
                      ",\"term\":%llu,\"commit_index\":%llu,\"applied_index\":%llu,"
                      "\"last_index\":%llu,\"elections\":%llu,\"leadership_changes\":%llu,"
                      "\"snapshots\":{\"taken\":%llu,\"restored\":%llu},\"voters\":[",
                      (unsigned long long)st->term, (unsigned long long)st->commit_index,
                      (unsigned long long)st->applied_index, (unsigned long long)st->last_index,
                      (unsigned long long)st->elections, (unsigned long long)st->leadership_changes,
                      (unsigned long long)st->snapshots,
                      (unsigned long long)st->snapshots_restored);
    for (size_t i = 0; i < st->n_voters; i++) {
        const kc_cluster_voter_t *v = &st->voters[i];
        kc_obs_buf_printf(b, "%s{\"id\":%d,\"raft_address\":", i ? "," : "", v->id);
        json_string(b, v->raft_address);
        kc_obs_buf_puts(b, ",\"directory_id\":");
        if (v->directory_id[0])
            json_string(b, v->directory_id);
        else
            kc_obs_buf_puts(b, "null");
        kc_obs_buf_puts(b, ",\"role\":");
        json_string(b, voter_role_name(v->role));
        kc_obs_buf_printf(
            b, ",\"self\":%s,\"leader\":%s,\"match_index\":", v->id == st->self ? "true" : "false",
            v->id == st->leader ? "true" : "false");
        json_known(b, v->match_index);
        kc_obs_buf_puts(b, ",\"lag_entries\":");
        json_known(b, lag_entries(st, v));
        kc_obs_buf_puts(b, ",\"last_contact_ms\":");
        json_known(b, v->last_contact_ms);
        kc_obs_buf_puts(b, "}");
    }
    kc_obs_buf_puts(b, "]}\n");
}

bool kc_obs_cluster_ready(kc_obs_buf_t *b, const kc_cluster_status_t *st)
{
    if (st->leader >= 0)
        return true;
    kc_obs_buf_printf(b,
                      "not ready: node %d is a member of a cluster with no known leader (raft "
                      "state %s, term %llu): it cannot tell clients which node coordinates "
                      "their groups\n",
                      st->self, st->raft_state != NULL ? st->raft_state : "unknown",
                      (unsigned long long)st->term);
    return false;
}
