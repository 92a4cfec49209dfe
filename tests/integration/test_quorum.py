#!/usr/bin/python3
"""test_quorum: a kcoord cluster's quorum as Kafka's tools and kcoord's HTTP views show it.

- A single node (no cluster.voters) has no quorum: ApiVersions does not list DescribeQuorum, a
  DescribeQuorum request closes the connection (as a Kafka broker without KRaft), /v1/cluster
  is 404 and /metrics has no kcoord_cluster_* family.
- A 1-voter cluster: DescribeQuorum v0, v1 and v2 name the node leader of __cluster_metadata-0
  with the raft term as epoch, the commit index as high watermark, its own log end and
  timestamps, its directory id, and (v2) its raft address (as CONTROLLER) and listener; another
  partition gets UNKNOWN_TOPIC_OR_PARTITION;
  /v1/cluster, the metrics and /readyz agree.
- A 3-voter cluster: every node names the same leader and term in its views; the leader knows
  every voter's log end and answers DescribeQuorum, a follower answers NOT_LEADER_OR_FOLLOWER
  and closes the connection (as a Kafka controller that does not lead); the leader's metrics
  show each follower's lag; exactly one node says it leads. With two nodes stopped, the last one knows no leader:
  /readyz says so (503) and DescribeQuorum answers NOT_LEADER_OR_FOLLOWER.
- Kafka's kafka-metadata-quorum (MetadataQuorumCommand, from the reference jars) runs
  `describe --status` and `describe --replication` against both clusters, through every node
  of the 3-voter one (skipped without java
  or the jars, as the other tool tests).

Every wait polls with a deadline; every process started is stopped, also on a failure.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import kafka_ref, kcoord, wire  # noqa: E402

TOOL_TIMEOUT_S = 120
WAIT_S = 60
DESCRIBE_QUORUM = 55
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION = 6, 3
TOPIC = "__cluster_metadata"


def have_tools():
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


def wait_for(what, fn, timeout=WAIT_S):
    """Poll fn() until it returns a true value (returned); fail naming `what` after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except (OSError, EOFError, wire.WireError) as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def describe(port, version=2, topic=TOPIC, partition=0):
    return wire.ask(port, "test-quorum", "DescribeQuorum", version,
                    topics=[dict(topic_name=topic, partitions=[dict(partition_index=partition)])])


def only_partition(test, r):
    test.assertEqual(r.error_code, 0, r)
    test.assertEqual(len(r.topics), 1, r)
    test.assertEqual(r.topics[0].topic_name, TOPIC)
    test.assertEqual(len(r.topics[0].partitions), 1, r)
    p = r.topics[0].partitions[0]
    test.assertEqual(p.partition_index, 0)
    return p


def api_range(port, key):
    r = wire.ask(port, "test-quorum", "ApiVersions", 3, client_software_name="test",
                 client_software_version="1")
    for k in r.api_keys:
        if k.api_key == key:
            return (k.min_version, k.max_version)
    return None


def metric_samples(node, name):
    """{labels: value} of a metric on node's /metrics ("" for the unlabelled sample)."""
    status, _, body = node.get("/metrics")
    if status != 200:
        raise AssertionError("/metrics answered %d" % status)
    out = {}
    for m in re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), body, re.M):
        out[m.group(1) or ""] = float(m.group(2))
    return out


class Cluster:
    """n kcoord nodes, ids 1..n, each with a raft port, a Kafka port and a metrics listener."""

    def __init__(self, n):
        self.dir = tempfile.mkdtemp(prefix="kc-quorum-")
        ports = kcoord.free_ports(2 * n)
        self.raft = {i + 1: ports[2 * i] for i in range(n)}
        self.kafka = {i + 1: ports[2 * i + 1] for i in range(n)}
        voters = ",".join("%d@127.0.0.1:%d" % (i, p) for i, p in self.raft.items())
        brokers = ",".join("%d@127.0.0.1:%d" % (i, p) for i, p in self.kafka.items())
        self.nodes = {}
        try:
            for i in self.raft:
                self.nodes[i] = kcoord.Kcoord(
                    os.path.join(self.dir, "n%d" % i), "node.id=%d" % i,
                    "cluster.voters=" + voters, "cluster.brokers=" + brokers,
                    "listeners=127.0.0.1:%d" % self.kafka[i], "metrics.listener=127.0.0.1:0",
                    wait_loaded=False)
        except BaseException:
            self.stop()
            raise

    def leader(self):
        """The leader every running node names at the same term in /v1/cluster, once they agree
        and it answers DescribeQuorum as leader (else None)."""
        seen = set()
        for k in self.nodes.values():
            status, _, body = k.get("/v1/cluster")
            view = json.loads(body) if status == 200 else {}
            if view.get("leader") is None:
                return None
            seen.add((view["leader"], view["term"]))
        if len(seen) != 1:
            return None
        lead, term = next(iter(seen))
        p = only_quiet(describe(self.kafka[lead]))
        ok = p is not None and p.error_code == 0 and (p.leader_id, p.leader_epoch) == (lead, term)
        return lead if ok else None

    def stop(self):
        for k in self.nodes.values():
            k.stop()
        self.nodes = {}
        shutil.rmtree(self.dir, ignore_errors=True)


def only_quiet(r):
    """The one partition of a DescribeQuorum answer, or None when it has another shape."""
    if r.error_code != 0 or len(r.topics) != 1 or len(r.topics[0].partitions) != 1:
        return None
    return r.topics[0].partitions[0]


def run_tool(port, *args):
    cmd = [os.path.join(ROOT, "scripts", "kafka-ref"), "run-class",
           "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
           "127.0.0.1:%d" % port, "describe"] + list(args)
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S)
    return p.returncode, p.stdout.decode(errors="replace")


def status_fields(out):
    """kafka-metadata-quorum describe --status: {"LeaderId": "1", ...}."""
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^(\w+):\s+(.*)$", out, re.M)}


def replication_rows(out):
    """kafka-metadata-quorum describe --replication: the table's rows as lists of cells."""
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    head = [i for i, ln in enumerate(lines) if ln and ln[0] == "NodeId"]
    if not head:
        raise AssertionError("no table in:\n" + out)
    return lines[head[0] + 1:]


class SingleNodeTest(unittest.TestCase):
    def test_no_quorum_on_a_single_node(self):
        k = kcoord.ScratchKcoord("metrics.listener=127.0.0.1:0")
        try:
            self.assertIsNone(api_range(k.port, DESCRIBE_QUORUM))
            self.assertIsNotNone(api_range(k.port, 60))  # DescribeCluster stays
            with self.assertRaises(EOFError):
                describe(k.port)
            status, ctype, body = k.get("/v1/cluster")
            self.assertEqual(status, 404, body)
            self.assertEqual(ctype, "application/json")
            self.assertIn("not a cluster", json.loads(body)["error"])
            _, _, body = k.get("/metrics")
            self.assertNotIn("kcoord_cluster_", body)
            self.assertEqual(k.get("/readyz")[0], 200)
        finally:
            self.assertEqual(k.stop(), 0)


class OneVoterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(1)
        cls.port = cls.c.kafka[1]
        cls.node = cls.c.nodes[1]
        wait_for("node 1 to lead", lambda: cls.c.leader() == 1)
        wait_for("node 1 to be ready", lambda: cls.node.get("/readyz")[0] == 200)

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def test_describe_quorum(self):
        self.assertEqual(api_range(self.port, DESCRIBE_QUORUM), (0, 2))
        before = int(time.time() * 1000)
        r = describe(self.port, 2)
        after = int(time.time() * 1000)
        p = only_partition(self, r)
        self.assertIsNone(r.error_message)
        self.assertEqual((p.error_code, p.leader_id), (0, 1))
        self.assertGreaterEqual(p.leader_epoch, 1)
        self.assertGreaterEqual(p.high_watermark, 1)  # the leader's first entry of its term
        self.assertEqual([v.replica_id for v in p.current_voters], [1])
        self.assertEqual(p.observers, [])
        v = p.current_voters[0]
        self.assertGreaterEqual(v.log_end_offset, p.high_watermark)
        self.assertTrue(before <= v.last_fetch_timestamp <= after, v)
        self.assertEqual(v.last_caught_up_timestamp, v.last_fetch_timestamp)
        self.assertEqual(len(r.nodes), 1)
        self.assertEqual(r.nodes[0].node_id, 1)
        # Its raft address, under the name AddRaftVoter takes it, then its client listener.
        self.assertEqual([(ln.name, ln.host, ln.port) for ln in r.nodes[0].listeners],
                         [("CONTROLLER", "127.0.0.1", self.c.raft[1]),
                          ("PLAINTEXT", "127.0.0.1", self.port)])
        # Its directory id, from its meta.properties.
        with open(os.path.join(self.c.dir, "n1", "meta.properties")) as f:
            dir_id = [ln.split("=", 1)[1].strip() for ln in f if ln.startswith("directory.id=")]
        self.assertEqual(len(dir_id), 1)
        self.assertEqual(bytes(v.replica_directory_id),
                         base64.urlsafe_b64decode(dir_id[0] + "=="))
        # What the HTTP view and the metrics say is the same quorum.
        status, _, body = self.node.get("/v1/cluster")
        self.assertEqual(status, 200, body)
        view = json.loads(body)
        self.assertEqual((view["self"], view["leader"], view["is_leader"]), (1, 1, True))
        self.assertEqual((view["role"], view["raft_state"]), ("leader", "leader"))
        self.assertEqual(view["term"], p.leader_epoch)
        self.assertGreaterEqual(view["commit_index"], p.high_watermark)
        self.assertLessEqual(view["applied_index"], view["commit_index"])
        self.assertEqual([x["id"] for x in view["voters"]], [1])
        self.assertEqual(self.node.metric("kcoord_cluster_leader"), 1)
        self.assertEqual(self.node.metric("kcoord_cluster_is_leader"), 1)
        self.assertEqual(self.node.metric("kcoord_cluster_term"), p.leader_epoch)
        self.assertGreaterEqual(self.node.metric("kcoord_cluster_commit_index"), p.high_watermark)
        self.assertIsNotNone(self.node.metric("kcoord_cluster_applied_index"))
        self.assertGreaterEqual(self.node.metric("kcoord_cluster_elections_total"), 0)
        self.assertGreaterEqual(self.node.metric("kcoord_cluster_leadership_changes_total"), 1)
        self.assertEqual(metric_samples(self.node, "kcoord_cluster_follower_lag_entries"), {})

    def test_older_versions_and_errors(self):
        p0 = only_partition(self, describe(self.port, 0))
        self.assertEqual(p0.leader_id, 1)
        self.assertEqual(p0.current_voters[0].last_fetch_timestamp, -1)  # not in v0
        p1 = only_partition(self, describe(self.port, 1))
        self.assertGreater(p1.current_voters[0].last_fetch_timestamp, 0)
        for topic, part in (("__consumer_offsets", 0), (TOPIC, 1)):
            r = describe(self.port, 2, topic, part)
            self.assertEqual(r.error_code, 0)
            self.assertEqual(r.topics[0].topic_name, topic)
            self.assertEqual(r.topics[0].partitions[0].partition_index, part)
            self.assertEqual(r.topics[0].partitions[0].error_code, UNKNOWN_TOPIC_OR_PARTITION)

    @unittest.skipUnless(have_tools(), "java or the reference Kafka jars are missing "
                         "(scripts/kafka-ref fetch)")
    def test_kafka_metadata_quorum(self):
        rc, out = run_tool(self.port, "--status")
        self.assertEqual(rc, 0, out)
        f = status_fields(out)
        cluster_id = wire.ask(self.port, "test-quorum", "DescribeCluster", 0).cluster_id
        self.assertEqual(f.get("ClusterId"), cluster_id, out)
        self.assertEqual(f.get("LeaderId"), "1", out)
        self.assertEqual(f.get("MaxFollowerLag"), "0", out)
        self.assertIn('"id": 1', f.get("CurrentVoters", ""), out)
        self.assertIn("PLAINTEXT://127.0.0.1:%d" % self.port, f.get("CurrentVoters", ""), out)
        rc, out = run_tool(self.port, "--replication")
        self.assertEqual(rc, 0, out)
        rows = replication_rows(out)
        self.assertEqual([(r[0], r[-1]) for r in rows], [("1", "Leader")], out)


class ThreeVotersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(3)
        cls.lead = wait_for("the nodes to agree on a leader", cls.c.leader)

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def test_every_node_names_the_leader(self):
        c = self.c
        wait_for("every node to be ready",
                 lambda: all(k.get("/readyz")[0] == 200 for k in c.nodes.values()))
        # The leader hears from every voter: their log ends, and it leads alone.
        def leader_knows_all():
            p = only_quiet(describe(c.kafka[self.lead]))
            return p if p and all(v.log_end_offset >= 0 for v in p.current_voters) else None
        p = wait_for("the leader to know every voter's log end", leader_knows_all)
        self.assertEqual(sorted(v.replica_id for v in p.current_voters), [1, 2, 3])
        # It has heard from each follower lately (raft's heartbeats are answered), and each
        # had everything it had: Kafka's LastFetchTimestamp and LastCaughtUpTimestamp.
        now_ms = int(time.time() * 1000)
        for v in p.current_voters:
            self.assertTrue(now_ms - 10000 <= v.last_fetch_timestamp <= now_ms + 1000, v)
            self.assertTrue(now_ms - 10000 <= v.last_caught_up_timestamp <= now_ms + 1000, v)
        self.assertEqual(sorted(n.node_id for n in describe(c.kafka[self.lead]).nodes),
                         [1, 2, 3])
        is_leader = {i: k.metric("kcoord_cluster_is_leader") for i, k in c.nodes.items()}
        self.assertEqual(is_leader, {i: 1.0 if i == self.lead else 0.0 for i in c.nodes})
        lag = metric_samples(c.nodes[self.lead], "kcoord_cluster_follower_lag_entries")
        self.assertEqual(sorted(lag),
                         sorted('{node="%d"}' % i for i in c.nodes if i != self.lead))
        self.assertTrue(all(v >= 0 for v in lag.values()), lag)
        for i, k in c.nodes.items():
            view = json.loads(k.get("/v1/cluster")[2])
            self.assertEqual((view["self"], view["leader"]), (i, self.lead))
            self.assertEqual(view["is_leader"], i == self.lead)
            self.assertEqual(sorted(x["id"] for x in view["voters"]), [1, 2, 3])
            if i == self.lead:
                self.assertTrue(all(0 <= x["last_contact_ms"] <= 10000
                                    for x in view["voters"] if not x["self"]), view)
            if i != self.lead:
                # A follower leaves DescribeQuorum to the leader, as a Kafka controller that
                # does not lead: NOT_LEADER_OR_FOLLOWER, then the connection closes.
                with wire.Conn(c.kafka[i], "test-quorum") as conn:
                    r = conn.ask("DescribeQuorum", 2, topics=[
                        dict(topic_name=TOPIC, partitions=[dict(partition_index=0)])])
                    fp = only_partition(self, r)
                    self.assertEqual(fp.error_code, NOT_LEADER_OR_FOLLOWER)
                    self.assertEqual(len(fp.current_voters), 0)
                    self.assertRaises((EOFError, OSError), conn.exact, 1)
                # It knows no voter's lag either.
                self.assertEqual(metric_samples(k, "kcoord_cluster_follower_lag_entries"), {})
                self.assertEqual([x["lag_entries"] for x in view["voters"]], [None] * 3)

    @unittest.skipUnless(have_tools(), "java or the reference Kafka jars are missing "
                         "(scripts/kafka-ref fetch)")
    def test_kafka_metadata_quorum(self):
        # Through every node: a follower's NOT_LEADER_OR_FOLLOWER sends the tool on to the
        # leader, whose view it shows (every voter's log end known, no voter lagging far).
        for i in sorted(self.c.nodes):
            port = self.c.kafka[i]
            rc, out = run_tool(port, "--status")
            self.assertEqual(rc, 0, out)
            f = status_fields(out)
            self.assertEqual(f.get("LeaderId"), str(self.lead), out)
            for j in (1, 2, 3):
                self.assertIn('"id": %d' % j, f.get("CurrentVoters", ""), out)
            self.assertGreaterEqual(int(f.get("MaxFollowerLag", "-1")), 0, out)
            rc, out = run_tool(port, "--replication")
            self.assertEqual(rc, 0, out)
            rows = replication_rows(out)
            self.assertEqual(sorted((r[0], r[-1]) for r in rows),
                             sorted((str(j), "Leader" if j == self.lead else "Follower")
                                    for j in (1, 2, 3)), out)
            self.assertTrue(all(int(r[2]) >= 0 and int(r[3]) >= 0 for r in rows), out)

    def test_zz_no_leader_without_a_majority(self):
        # Runs last (by name): it stops two nodes.
        c = self.c
        last = min(i for i in c.nodes if i != self.lead)
        before = c.nodes[last].metric("kcoord_cluster_leadership_changes_total")
        for i in [i for i in c.nodes if i != last]:
            self.assertEqual(c.nodes.pop(i).stop(), 0)
        k = c.nodes[last]

        def unready():
            status, _, body = k.get("/readyz")
            return body if status == 503 and "no known leader" in body else None
        body = wait_for("node %d to know no leader" % last, unready)
        self.assertIn("not ready: node %d is a member of a cluster with no known leader" % last,
                      body)
        p = only_partition(self, describe(c.kafka[last]))
        self.assertEqual(p.error_code, NOT_LEADER_OR_FOLLOWER)
        self.assertEqual(k.metric("kcoord_cluster_leader"), -1)
        self.assertGreater(k.metric("kcoord_cluster_leadership_changes_total"), before)
        wait_for("node %d to stand for election" % last,
                 lambda: k.metric("kcoord_cluster_elections_total") >= 1)
        self.assertIsNone(json.loads(k.get("/v1/cluster")[2])["leader"])


if __name__ == "__main__":
    unittest.main()
