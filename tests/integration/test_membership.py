#!/usr/bin/python3
"""test_membership: nodes join and leave a running kcoord cluster (KIP-853's AddRaftVoter and
RemoveRaftVoter), driven by Kafka's own kafka-metadata-quorum, and no acknowledged commit is
lost on the way.

- grow, shrink, hand over: a 3-node cluster commits without pause (the raw committer); a 4th
  node started with cluster.bootstrap=false and the cluster's id waits; `kafka-metadata-quorum
  --bootstrap-controller <a follower> --command-config <its properties> add-controller` adds it
  (the tool finds the leader through DescribeCluster's controllers); DescribeQuorum then lists 4
  voters, node 4 with the directory id of its meta.properties, and Metadata on every node lists
  node 4 at the listener it was added with, and node 4 logs that it is a voter.
  `remove-controller` removes the leader itself (it steps down, another leads, and it logs its
  removal) and then another founding node; the two left serve, node 4 takes
  the leadership over (SIGUSR1 on the other), and every acknowledged commit is there. A removed
  node is gone from Metadata and DescribeQuorum.
- a wiped node: a follower is removed, its data directory emptied, started again with
  cluster.bootstrap=false and added back with its new directory id; it catches up, and with
  the leader then killed the two left (it one of them) elect a leader that serves every
  acknowledged commit: it counts toward the majority again.
- refusals, as KafkaRaftClient answers them: another cluster id (INCONSISTENT_CLUSTER_ID with
  Kafka's message), a follower (NOT_LEADER_OR_FOLLOWER), a voter already in (DUPLICATE_VOTER),
  no CONTROLLER endpoint or no directory id (INVALID_REQUEST), an unknown voter or a wrong
  directory id (VOTER_NOT_FOUND), a second change while one is in flight (REQUEST_TIMED_OUT);
  nothing changes. An add whose node never answers fails at its TimeoutMs and leaves no spare
  behind; changes are accepted again after it. A single node serves neither API (not in ApiVersions).

Every wait polls with a deadline; every process started is stopped, also on a failure. The
tool steps are skipped without java or the reference jars, as in the other tool tests.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import cluster, kafka_ref, kcoord, wire  # noqa: E402

TOPIC = "t"
SETTINGS = ["topics=%s:4" % TOPIC, "offsets.topic.num.partitions=4",
            "group.initial.rebalance.delay.ms=0", "log.level=info",
            # a joining node catches up by snapshot, then by log
            "cluster.snapshot.threshold=64", "cluster.snapshot.trailing=16"]
TOOL_TIMEOUT_S = 120
WAIT_S = 60
ACKS = 100
NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, INVALID_REQUEST = 6, 7, 42
INCONSISTENT_CLUSTER_ID, DUPLICATE_VOTER, VOTER_NOT_FOUND = 104, 126, 127
TOPIC_META = "__cluster_metadata"


def have_tools():
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


def wait_for(what, fn, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except cluster.NET_ERRORS as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def quorum(node):
    """DescribeQuorum v2 on node: (leader id, {voter id: directory id bytes}, {node id:
    {listener name: (host, port)}})."""
    r = wire.ask(node.kport, "test-membership", "DescribeQuorum", 2,
                 topics=[dict(topic_name=TOPIC_META, partitions=[dict(partition_index=0)])])
    p = r.topics[0].partitions[0]
    if p.error_code != 0:
        return None
    voters = {v.replica_id: bytes(v.replica_directory_id) for v in p.current_voters}
    nodes = {n.node_id: {ln.name: (ln.host, ln.port) for ln in n.listeners} for n in r.nodes}
    return p.leader_id, voters, nodes


def tool(port, *args):
    cmd = [os.path.join(ROOT, "scripts", "kafka-ref"), "run-class",
           "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller",
           "127.0.0.1:%d" % port] + list(args)
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S)
    return p.returncode, p.stdout.decode(errors="replace")


def add_voter(port, node_id, dir_id, listeners, cluster_id=None, version=1, timeout_ms=30000):
    r = wire.ask(port, "test-membership", "AddRaftVoter", version, cluster_id=cluster_id,
                 timeout_ms=timeout_ms, voter_id=node_id, voter_directory_id=dir_id,
                 listeners=[dict(name=n, host=h, port=p) for n, h, p in listeners],
                 ack_when_committed=True)
    return r.error_code, r.error_message


def remove_voter(port, node_id, dir_id, cluster_id=None):
    r = wire.ask(port, "test-membership", "RemoveRaftVoter", 0, cluster_id=cluster_id,
                 voter_id=node_id, voter_directory_id=dir_id)
    return r.error_code, r.error_message


class MembershipCase(unittest.TestCase):
    def setUp(self):
        self.c = cluster.Cluster(3, *SETTINGS)
        self.committer = None
        self.ok = False
        self.removed = set()  # nodes removed but running: no leader to follow
        self.tmp = tempfile.mkdtemp(prefix="kc-membership-")
        self.c.start()

    def tearDown(self):
        if self.committer is not None:
            self.committer.stop()
        if not self.ok:
            sys.stderr.write(self.c.logs(tail=120) + "\n")
        self.c.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def leader(self, exclude=()):
        lead = self.c.wait_leader(exclude=exclude)
        self.c.wait_serving(lead)
        return lead

    def commit(self):
        self.committer = cluster.Committer(self.c, TOPIC, clients=4, partitions=2).start()
        self.committer.wait_acks_after(0, ACKS, WAIT_S)

    def acks_after_now(self):
        return self.committer.wait_acks_after(time.monotonic(), ACKS, WAIT_S)

    def assert_nothing_lost(self):
        self.committer.stop()
        checked, violations = self.committer.check()
        self.assertEqual(violations, [])
        self.assertGreater(checked, ACKS)

    def properties(self, node):
        """What kafka-metadata-quorum add-controller reads (--command-config): the node's id,
        its raft endpoint as its controller listener and its client listener, and its data dir
        (meta.properties' directory.id)."""
        path = os.path.join(self.tmp, "node-%d.properties" % node.id)
        with open(path, "w") as f:
            f.write("node.id=%d\nprocess.roles=controller\n"
                    "controller.listener.names=CONTROLLER,PLAINTEXT\n"
                    "listeners=CONTROLLER://%s:%d,PLAINTEXT://%s:%d\nlog.dirs=%s\n"
                    % (node.id, node.host, node.rport, node.host, node.kport, node.data_dir))
        return path

    def start_joining(self, node):
        self.c.start_node(node.id)
        node.proc.wait_line(r"is not in a cluster yet", 30)

    def add_with_tool(self, via, node):
        rc, out = tool(self.c.nodes[via].kport, "--command-config", self.properties(node),
                       "add-controller")
        self.assertEqual(rc, 0, out)
        self.assertIn("Added controller %d with directory id %s" %
                      (node.id, self.c.directory_id(node.id)), out)

    def remove_with_tool(self, via, node_id):
        rc, out = tool(self.c.nodes[via].kport, "remove-controller", "--controller-id",
                       str(node_id), "--controller-directory-id", self.c.directory_id(node_id))
        self.assertEqual(rc, 0, out)
        self.assertIn("Removed KRaft controller %d" % node_id, out)
        self.removed.add(node_id)

    def wait_voters(self, ids):
        """Until the leader's DescribeQuorum lists exactly `ids` as voters."""
        def ok():
            lead = self.c.wait_leader(ignore=self.removed)
            q = quorum(self.c.nodes[lead])
            return q if q and sorted(q[1]) == sorted(ids) else None
        return wait_for("voters %s" % sorted(ids), ok)


@unittest.skipUnless(have_tools(), "java or the Kafka reference jars are missing")
class GrowShrinkTest(MembershipCase):
    def test_add_remove_and_hand_over(self):
        lead = self.leader()
        self.commit()
        node4 = self.c.add_node()
        self.start_joining(node4)
        follower = next(i for i in self.c.nodes if i not in (lead, 4))
        self.add_with_tool(follower, node4)
        _, voters, nodes = self.wait_voters([1, 2, 3, 4])
        self.assertEqual(voters[4], cluster.uuid_bytes(self.c.directory_id(4)))
        node4.proc.wait_line(r"cluster: node 4 is a voter of the cluster", 30)
        self.assertEqual(nodes[4]["CONTROLLER"], (node4.host, node4.rport))
        self.assertEqual(nodes[4]["PLAINTEXT"], (node4.host, node4.kport))
        for i in (1, 2, 3, 4):
            wait_for("node %d's Metadata to list node 4" % i,
                     lambda: cluster.metadata("127.0.0.1", self.c.nodes[i].kport)[1].get(4)
                     == (node4.host, node4.kport))
        self.acks_after_now()

        # The leader removes itself: it steps down once that is committed.
        self.remove_with_tool(follower, lead)
        self.wait_voters([i for i in (1, 2, 3, 4) if i != lead])
        self.c.nodes[lead].proc.wait_line(r"node %d was removed from the cluster" % lead, 30)
        second = next(i for i in (1, 2, 3) if i not in (lead, follower))
        self.remove_with_tool(4, second)
        q = self.wait_voters([follower, 4])
        self.c.kill(lead)
        self.c.kill(second)
        self.acks_after_now()
        for i in (follower, 4):
            _, brokers = cluster.metadata("127.0.0.1", self.c.nodes[i].kport)
            self.assertEqual(sorted(brokers), sorted([follower, 4]))
        # Node 4 takes the leadership over: what it serves came to it through raft.
        if q[0] != 4:
            os.kill(self.c.nodes[follower].proc.proc.pid, signal.SIGUSR1)
            wait_for("node 4 to lead", lambda: self.c.coordinator_seen_by(follower) == (0, 4))
        self.c.wait_serving(4)
        self.acks_after_now()
        self.assert_nothing_lost()
        self.ok = True


@unittest.skipUnless(have_tools(), "java or the Kafka reference jars are missing")
class WipedNodeTest(MembershipCase):
    def test_wiped_node_removed_and_added_back(self):
        lead = self.leader()
        self.commit()
        victim = next(i for i in self.c.nodes if i != lead)
        old_dir = self.c.directory_id(victim)
        self.remove_with_tool(lead, victim)
        self.wait_voters([i for i in (1, 2, 3) if i != victim])
        self.c.kill(victim)
        shutil.rmtree(self.c.nodes[victim].data_dir)
        self.c.nodes[victim].joining = True
        self.start_joining(self.c.nodes[victim])
        self.assertNotEqual(self.c.directory_id(victim), old_dir)
        self.acks_after_now()
        self.add_with_tool(lead, self.c.nodes[victim])
        _, voters, _ = self.wait_voters([1, 2, 3])
        self.assertEqual(voters[victim], cluster.uuid_bytes(self.c.directory_id(victim)))
        self.acks_after_now()
        # With the leader gone, the two left need the wiped node's vote.
        self.c.kill(lead)
        new = self.c.wait_leader(exclude=(lead,))
        self.c.wait_serving(new)
        self.acks_after_now()
        self.assert_nothing_lost()
        self.ok = True


class RefusalTest(MembershipCase):
    def test_refusals(self):
        lead = self.leader()
        ln = self.c.nodes[lead]
        follower = next(i for i in self.c.nodes if i != lead)
        cid = self.c.cluster_id()
        d1 = cluster.uuid_bytes(self.c.directory_id(1))
        new_dir = bytes(range(1, 17))
        ep = [("CONTROLLER", "127.0.0.1", 1), ("PLAINTEXT", "127.0.0.1", 2)]

        err, msg = add_voter(ln.kport, 9, new_dir, ep, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
        self.assertEqual(err, INCONSISTENT_CLUSTER_ID)
        self.assertEqual(msg, "The given id \"AAAAAAAAAAAAAAAAAAAAAA\" doesn't match the "
                              "cluster id \"%s\"" % cid)
        err, _ = remove_voter(ln.kport, 1, d1, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
        self.assertEqual(err, INCONSISTENT_CLUSTER_ID)
        self.assertEqual(add_voter(self.c.nodes[follower].kport, 9, new_dir, ep, cid)[0],
                         NOT_LEADER_OR_FOLLOWER)
        self.assertEqual(remove_voter(self.c.nodes[follower].kport, 1, d1)[0],
                         NOT_LEADER_OR_FOLLOWER)
        err, msg = add_voter(ln.kport, 1, d1, ep)
        self.assertEqual(err, DUPLICATE_VOTER, msg)
        err, msg = add_voter(ln.kport, 9, new_dir, ep[1:])
        self.assertEqual(err, INVALID_REQUEST)
        self.assertIn("CONTROLLER", msg)
        self.assertEqual(add_voter(ln.kport, 9, bytes(16), ep)[0], INVALID_REQUEST)
        self.assertEqual(add_voter(ln.kport, 9, new_dir, [("CONTROLLER", "a b", 1)])[0],
                         INVALID_REQUEST)
        self.assertEqual(remove_voter(ln.kport, 9, new_dir)[0], VOTER_NOT_FOUND)
        self.assertEqual(remove_voter(ln.kport, 1, new_dir)[0], VOTER_NOT_FOUND)
        self.assertEqual(remove_voter(ln.kport, 1, bytes(16))[0], INVALID_REQUEST)

        # A node that never comes up keeps its add in flight while raft tries to catch it up:
        # a second change meanwhile is refused. At the first's TimeoutMs raft gives the
        # catch-up up, the add fails, and the spare it made is removed again, as a failed add
        # leaves Kafka's voters as they were; then changes are accepted again.
        first = {}
        t = threading.Thread(target=lambda: first.update(r=add_voter(
            ln.kport, 9, new_dir, [("CONTROLLER", "127.0.0.1", 1)], cid, timeout_ms=3000)))
        t.start()
        try:
            ln.proc.wait_line(r"cluster: adding node 9 ", 10)
            err, msg = add_voter(ln.kport, 10, new_dir, ep)
            self.assertEqual(err, REQUEST_TIMED_OUT, msg)
            self.assertIn("previous voter change", msg)
        finally:
            t.join(15)
        self.assertEqual(first["r"][0], REQUEST_TIMED_OUT, first)
        ln.proc.wait_line(r"node 9, which did not catch up, is no longer in the configuration", 15)
        self.assertEqual(sorted(quorum(ln)[1]), [1, 2, 3])
        self.assertEqual(remove_voter(ln.kport, 9, new_dir)[0], VOTER_NOT_FOUND)
        err, msg = add_voter(ln.kport, 10, new_dir, [("CONTROLLER", "127.0.0.1", 2)],
                             timeout_ms=1000)
        self.assertEqual(err, REQUEST_TIMED_OUT, msg)
        self.assertNotIn("previous voter change", msg)
        ln.proc.wait_line(r"node 10, which did not catch up, is no longer in the configuration",
                          15)
        self.assertEqual(sorted(self.wait_voters([1, 2, 3])[1]), [1, 2, 3])
        self.ok = True

    def test_single_node_serves_neither(self):
        k = kcoord.Kcoord(os.path.join(self.tmp, "single"))
        try:
            r = wire.ask(k.port, "test-membership", "ApiVersions", 3,
                         client_software_name="t", client_software_version="1")
            keys = {a.api_key for a in r.api_keys}
            self.assertNotIn(80, keys)
            self.assertNotIn(81, keys)
        finally:
            k.stop()
        self.ok = True


if __name__ == "__main__":
    unittest.main()
