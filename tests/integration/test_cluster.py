#!/usr/bin/python3
"""test_cluster: three kcoord nodes replicating on raft elect one leader, route every client to
it, and lose no acknowledged commit when a node dies.

Each test starts its own 3-node cluster (tests/support/cluster.py: free ports on 127.0.0.1,
the same cluster.voters and cluster.brokers on every node, topic t with 4 partitions, 4
__consumer_offsets partitions) and kills every node on the way out.

- routing: every node's FindCoordinator names the same leader, each node logs it
  ("cluster: leader is node L (term T)") and the leader logs that it serves; Metadata on every
  node lists the 3 brokers of cluster.brokers with the leader as controller; a follower answers
  OffsetCommit, OffsetFetch, JoinGroup and Heartbeat with NOT_COORDINATOR at once.
- leader and follower kill: the raw committer commits without pause to 4 groups through
  whichever node FindCoordinator names; kill -9 of the leader, commits acknowledged again once a
  new leader serves, the old leader restarted; then kill -9 of a follower, commits go on, the
  follower restarted. Every acknowledged commit is returned by OffsetFetch afterwards (the same
  or a later offset with its metadata, never one that was not sent), no OffsetFetch during the
  run went below an acknowledged offset, and every node's segments pass verify-log.
- empty data dir (snapshots every 64 raft entries, so that it catches up by snapshot and then
  by log): a follower that lost its data directory is replaced as the README says (removed,
  restarted empty with cluster.bootstrap=false, added again); it catches up, then leads (the
  leader killed; if the other follower wins, it is killed and the first leader, whose log then
  lacks the winner's term, restarted: only the caught-up node can win) and serves every
  acknowledged commit; its own __consumer_offsets segments (dump-log) hold them too.
- leadership loss: a request sent to a leader stopped with SIGSTOP is answered NOT_COORDINATOR
  once it runs again after another node has become leader, and what the new leader committed
  stands; a leader stopped with SIGTERM hands its leadership over first, so that commits go
  on within a fraction of an election timeout (2 s here).
- librdkafka group: 3 confluent-kafka consumers (classic protocol, 10 s session timeout) hold
  2 partitions each; the leader is killed; each commits synchronously through the new leader
  with its old generation, no member sees a revoke or an assignment after the kill, and
  DescribeGroups shows the same members in state Stable.
- host names: cluster.voters names every node `localhost`: they elect a leader, commit, and
  elect another after a leader kill.
- raft port: garbage, a raft-looking handshake with an unknown protocol version and a truncated
  one sent to every node's raft port change nothing (each is refused at kcoord's hello): the same leader and term on every node, no
  node exits, commits acknowledged after them.

Every wait is for an event and bounded; on a failure the nodes' logs are printed.
"""
import os
import queue
import random
import struct
import sys
import threading
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import calls, cluster, wire  # noqa: E402
from tests.support.cluster import NONE, NOT_COORDINATOR  # noqa: E402

TOPIC = "t"
PARTITIONS = 4
SETTINGS = ["topics=%s:%d" % (TOPIC, PARTITIONS), "offsets.topic.num.partitions=4",
            "group.initial.rebalance.delay.ms=0", "log.level=info"]
ACKS_BEFORE = 100   # commits acknowledged before a fault
ACKS_AFTER = 100    # and after it, before the next step
FAULT_TIMEOUT_S = 30


class ClusterCase(unittest.TestCase):
    EXTRA = ()  # settings a test class adds

    def setUp(self):
        self.c = cluster.Cluster(3, *(SETTINGS + list(self.EXTRA)))
        self.committer = None
        self.ok = False
        self.c.start()

    def tearDown(self):
        if self.committer is not None:
            self.committer.stop()
        if not self.ok:
            sys.stderr.write(self.c.logs(tail=120) + "\n")
        self.c.close()

    def commit_through_faults(self):
        self.committer = cluster.Committer(self.c, TOPIC, clients=4, partitions=2).start()
        self.committer.wait_acks_after(0, ACKS_BEFORE, FAULT_TIMEOUT_S)

    def acks_after_now(self, n=ACKS_AFTER):
        return self.committer.wait_acks_after(time.monotonic(), n, FAULT_TIMEOUT_S)

    def assert_nothing_lost(self):
        self.committer.stop()
        checked, violations = self.committer.check()
        self.assertEqual(violations, [])
        self.assertGreater(checked, ACKS_BEFORE)
        return checked


class RoutingTest(ClusterCase):
    def test_one_leader_routes_everyone(self):
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        followers = [i for i in self.c.nodes if i != leader]
        for i, node in self.c.nodes.items():
            m = node.proc.wait_line(cluster.LEADER_LINE)
            self.assertEqual(int(m.group(1)), leader, "node %d logged another leader" % i)
            err, nid, host, port = cluster.find_coordinator(node.host, node.kport, "any-group")
            self.assertEqual((err, nid, host, port),
                             (NONE, leader, "127.0.0.1", self.c.nodes[leader].kport))
            controller, brokers = cluster.metadata(node.host, node.kport)
            self.assertEqual(controller, leader)
            self.assertEqual(brokers, {x.id: (x.host, x.kport) for x in self.c.nodes.values()})
        m = self.c.nodes[leader].proc.wait_line(cluster.SERVES_LINE)
        self.assertEqual(int(m.group(1)), leader)
        for i in followers:
            self.assertIsNone(self.c.nodes[i].proc.find(cluster.SERVES_LINE))
        # A follower refuses group and offset requests at once.
        for i in followers:
            node = self.c.nodes[i]
            with wire.Conn(node.kport, "follower-probe", timeout=2) as conn:
                t0 = time.monotonic()
                errs = calls.commit(conn, "g", -1, "", TOPIC, {0: 1})
                self.assertEqual(errs, {0: NOT_COORDINATOR})
                err, _ = cluster.offset_fetch(conn, "g", TOPIC, [0])
                self.assertEqual(err, NOT_COORDINATOR)
                r = conn.ask("JoinGroup", 5, group_id="g", session_timeout_ms=10000,
                             rebalance_timeout_ms=10000, member_id="",
                             protocol_type="consumer",
                             protocols=[dict(name="range", metadata=calls.subscription(TOPIC))])
                self.assertEqual(r.error_code, NOT_COORDINATOR)
                r = conn.ask("Heartbeat", 3, group_id="g", generation_id=1, member_id="m")
                self.assertEqual(r.error_code, NOT_COORDINATOR)
                self.assertLess(time.monotonic() - t0, 1.5)
        # The leader serves the same requests.
        with wire.Conn(self.c.nodes[leader].kport, "leader-probe") as conn:
            self.assertEqual(calls.commit(conn, "g", -1, "", TOPIC, {0: 1}), {0: NONE})
            err, got = cluster.offset_fetch(conn, "g", TOPIC, [0])
            self.assertEqual((err, got[0][:2]), (NONE, (NONE, 1)))
        self.ok = True


class FailoverTest(ClusterCase):
    # Snapshots every 64 entries, 16 kept behind: the restarted nodes catch up by snapshot and
    # then by log, and raft's log is truncated under the load.
    EXTRA = ("cluster.snapshot.threshold=64", "cluster.snapshot.trailing=16")

    def test_leader_then_follower_kill(self):
        first = self.c.wait_leader()
        self.c.wait_serving(first)
        self.commit_through_faults()
        # kill -9 of the leader: a new one is elected among the two others and serves.
        self.c.kill(first)
        killed_at = time.monotonic()
        second = self.c.wait_leader(exclude=(first,), timeout=FAULT_TIMEOUT_S)
        self.assertNotEqual(second, first)
        first_ack = self.committer.wait_acks_after(killed_at, ACKS_AFTER, FAULT_TIMEOUT_S)
        sys.stderr.write("leader kill: first commit acknowledged %.3f s after it\n"
                         % (first_ack - killed_at))
        # The old leader comes back as a follower of the new one.
        self.c.start_node(first)
        self.c.nodes[first].proc.wait_line(r"cluster: leader is node %d " % second,
                                           FAULT_TIMEOUT_S)
        self.assertEqual(self.c.wait_leader(), second)
        self.acks_after_now()
        # kill -9 of a follower: commits go on (the two others are a majority).
        follower = next(i for i in self.c.nodes if i != second)
        self.c.kill(follower)
        self.acks_after_now()
        self.c.start_node(follower)
        self.c.nodes[follower].proc.wait_line(r"cluster: leader is node %d " % second,
                                              FAULT_TIMEOUT_S)
        self.acks_after_now()
        self.assert_nothing_lost()
        self.assertEqual(self.c.wait_leader(), second)
        for i in self.c.nodes:
            self.c.kill(i)
            ok, out = cluster.verify_log(self.c.nodes[i].data_dir)
            self.assertTrue(ok, out)
        self.ok = True

    def test_empty_data_dir_catches_up_and_leads(self):
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        self.commit_through_faults()
        fresh, other = [i for i in self.c.nodes if i != leader]
        # Its disk lost: removed, restarted empty as a joining node, added again (README).
        old_dir = self.c.directory_id(fresh)
        self.c.kill(fresh)
        self.c.replace_wiped(fresh, old_dir, FAULT_TIMEOUT_S)
        self.assertNotEqual(self.c.directory_id(fresh), old_dir)
        self.c.nodes[fresh].proc.wait_line(r"cluster: node %d is a voter of the cluster" % fresh,
                                           FAULT_TIMEOUT_S)
        self.acks_after_now()
        # Leadership to the fresh node: kill the leader; if the other follower wins, kill it
        # and restart the first leader, whose log then lacks the winner's term.
        self.c.kill(leader)
        winner = self.c.wait_leader(exclude=(leader,), timeout=FAULT_TIMEOUT_S)
        if winner == other:
            self.acks_after_now()
            self.c.kill(other)
            self.c.start_node(leader)
            winner = self.c.wait_leader(exclude=(other,), timeout=FAULT_TIMEOUT_S)
        self.assertEqual(winner, fresh)
        self.c.wait_serving(fresh)
        self.acks_after_now()
        self.assert_nothing_lost()
        # Its own segments hold every acknowledged commit too.
        on_disk = cluster.log_offsets(self.c.nodes[fresh].data_dir)
        for (g, p), acked in self.committer.acked.items():
            if acked >= 0:
                off, meta = on_disk.get((g, TOPIC, p), (-1, None))
                self.assertGreaterEqual(off, acked, "%s/%d in node %d's log" % (g, p, fresh))
        self.ok = True


class LeadershipLossTest(ClusterCase):
    # Elections take 2-4 s: a leader that stops without handing over is told apart from one
    # that hands over (well under a second) by a wide margin.
    EXTRA = ("cluster.election.timeout.ms=2000",)
    HANDOVER_S = 2.0

    def test_paused_leader_fails_what_waits(self):
        old = self.c.wait_leader()
        self.c.wait_serving(old)
        node = self.c.nodes[old]
        with wire.Conn(node.kport, "paused", timeout=30) as conn:
            self.assertEqual(calls.commit(conn, "p", -1, "", TOPIC, {0: 1}), {0: NONE})
            self.c.pause(old)
            # Sent to the stopped leader: the kernel holds it until SIGCONT.
            conn.send(calls.OFFSET_COMMIT, 7,
                      calls.commit_request("p", -1, "", TOPIC, {0: 2}))
            new = self.c.wait_leader(exclude=(old,))
            self.c.wait_serving(new)
            with wire.Conn(self.c.nodes[new].kport, "new-leader") as c2:
                self.assertEqual(calls.commit(c2, "p", -1, "", TOPIC, {0: 3}), {0: NONE})
            self.c.resume(old)
            _, r = conn.recv()
            self.assertEqual(calls.commit_errors(r), {0: NOT_COORDINATOR})
        self.c.nodes[old].proc.wait_line(r"cluster: leader is node %d " % new, FAULT_TIMEOUT_S)
        self.assertEqual(self.c.wait_leader(), new)
        with wire.Conn(self.c.nodes[new].kport, "check") as c3:
            err, got = cluster.offset_fetch(c3, "p", TOPIC, [0])
            self.assertEqual((err, got[0][:2]), (NONE, (NONE, 3)))
        self.ok = True

    def test_sigterm_leader_hands_over(self):
        """A leader stopped with SIGTERM hands its leadership over before it goes: commits are
        acknowledged again well within an election timeout, and it exits 0."""
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        self.commit_through_faults()
        stopped = time.monotonic()
        rc = self.c.nodes[leader].proc.stop()
        self.c.nodes[leader].proc = None
        first = self.committer.wait_acks_after(stopped, 1, FAULT_TIMEOUT_S)
        self.assertEqual(rc, 0)
        self.assertLess(first - stopped, self.HANDOVER_S,
                        "no commit within %.1f s of the leader's SIGTERM (%.3f s)"
                        % (self.HANDOVER_S, first - stopped))
        self.assertNotEqual(self.c.wait_leader(), leader)
        self.assert_nothing_lost()
        self.ok = True


class GroupTest(ClusterCase):
    """librdkafka consumers of a classic group keep their generation across a leader kill."""

    SESSION_MS = 10000

    def test_group_survives_leader_kill(self):
        from confluent_kafka import Consumer, TopicPartition
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        bootstrap = ",".join("127.0.0.1:%d" % x.kport for x in self.c.nodes.values())
        members = [RkMember(Consumer, bootstrap, "rk", "m%d" % k, self.SESSION_MS)
                   for k in range(3)]
        self.members = members
        try:
            everything = {(TOPIC, p) for p in range(PARTITIONS)}
            wait_until("the members share every partition",
                       lambda: set().union(*(m.assigned() for m in members)) == everything
                       and all(m.assigned() for m in members), FAULT_TIMEOUT_S)
            before = describe(self.c.nodes[leader], "rk")
            self.assertEqual(before[0], "Stable")
            for m in members:
                m.clear_events()
            self.c.kill(leader)
            new = self.c.wait_leader(exclude=(leader,), timeout=FAULT_TIMEOUT_S)
            self.c.wait_serving(new)
            # Each member commits through the new leader with the generation it had.
            for k, m in enumerate(members):
                offs = [TopicPartition(t, p, 10 + k) for t, p in sorted(m.assigned())]
                m.call(lambda c, o=offs: c.commit(offsets=o, asynchronous=False))
            after = describe(self.c.nodes[new], "rk")
            self.assertEqual(after, before)
            for m in members:
                self.assertEqual(m.events(), [], "%s rebalanced after the kill" % m.name)
        finally:
            for m in members:
                m.close()
        self.ok = True


class RaftPortTest(ClusterCase):
    def test_garbage_changes_nothing(self):
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        self.commit_through_faults()
        terms = {i: self.c.term(i) for i in self.c.nodes}
        lines = {i: self.c.nodes[i].proc.count("cluster: leader is node") for i in self.c.nodes}
        rnd = random.Random(17)
        payloads = [
            bytes(rnd.getrandbits(8) for _ in range(4096)),
            b"\xff" * 64,
            # a raft-looking handshake with an unknown protocol version
            struct.pack("<QQQ", 0xDEADBEEF, 2, 16) + b"127.0.0.1:1\0\0\0\0\0",
            # protocol 1 from "node 2" whose address never comes
            struct.pack("<QQQ", 1, 2, 4096) + b"127.0",
            # protocol 1 with an address length that cannot be
            struct.pack("<QQQ", 1, 9, 1 << 62),
            # a handshake cut inside its first word
            struct.pack("<Q", 1)[:5],
        ]
        for node in self.c.nodes.values():
            cluster.raft_garbage(node.host, node.rport, payloads, timeout=2)
        self.acks_after_now()
        for i, node in self.c.nodes.items():
            self.assertTrue(node.alive, "node %d exited" % i)
            self.assertEqual(self.c.term(i), terms[i])
            self.assertEqual(node.proc.count("cluster: leader is node"), lines[i])
        self.assertEqual(self.c.wait_leader(), leader)
        self.assert_nothing_lost()
        self.ok = True


class HostNameTest(ClusterCase):
    """cluster.voters may name the nodes by host name: each resolves its own to listen on, and
    the others' to connect to them (libuv's resolver, off the loop)."""

    def setUp(self):
        self.c = cluster.Cluster(3, *SETTINGS, raft_host="localhost")
        self.committer = None
        self.ok = False
        self.c.start()

    def test_voters_by_host_name(self):
        self.assertIn("@localhost:", self.c.voters)
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        self.commit_through_faults()
        self.c.kill(leader)
        self.c.wait_serving(self.c.wait_leader(exclude=(leader,)))
        self.acks_after_now()
        self.c.start_node(leader)
        self.acks_after_now()
        self.assert_nothing_lost()
        self.ok = True


# ---- librdkafka members -------------------------------------------------------------------

class RkMember:
    """A confluent-kafka consumer of a classic group polling in its own thread; its rebalance
    callbacks after clear_events() are in events()."""

    def __init__(self, consumer_cls, bootstrap, group, name, session_ms):
        self.name = name
        self.lock = threading.Lock()
        self._events = []
        self.owned = set()
        self.c = consumer_cls({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
            "session.timeout.ms": session_ms, "heartbeat.interval.ms": 500,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
        })
        self.c.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke,
                         on_lost=self._on_revoke)
        self.calls = queue.Queue()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _on_assign(self, consumer, partitions):
        with self.lock:
            got = {(p.topic, p.partition) for p in partitions}
            self._events.append(("assign", sorted(got)))
            self.owned = got

    def _on_revoke(self, consumer, partitions):
        with self.lock:
            self._events.append(("revoke", sorted((p.topic, p.partition) for p in partitions)))
            self.owned = set()

    def _run(self):
        while not self.stopping.is_set():
            self.c.poll(0.1)
            while not self.calls.empty():
                fn, done = self.calls.get()
                try:
                    done.put((True, fn(self.c)))
                except Exception as e:  # noqa: BLE001 - handed to the caller
                    done.put((False, e))

    def assigned(self):
        with self.lock:
            return set(self.owned)

    def events(self):
        with self.lock:
            return list(self._events)

    def clear_events(self):
        with self.lock:
            self._events = []

    def call(self, fn):
        done = queue.Queue()
        self.calls.put((fn, done))
        ok, value = done.get(timeout=FAULT_TIMEOUT_S)
        if not ok:
            raise value
        return value

    def close(self):
        self.stopping.set()
        self.thread.join(10)
        self.c.close()


def describe(node, group):
    """DescribeGroups v4 of group on node: (state, sorted (member id, client id, assignment))."""
    with wire.Conn(node.kport, "describe", host=node.host) as conn:
        r = conn.ask("DescribeGroups", 4, groups=[group], include_authorized_operations=False)
    g = r.groups[0]
    if g.error_code != NONE:
        raise AssertionError("DescribeGroups %s: error %d" % (group, g.error_code))
    return g.group_state, sorted((m.member_id, m.client_id, bytes(m.member_assignment))
                                 for m in g.members)


def wait_until(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting until " + what)


if __name__ == "__main__":
    unittest.main(verbosity=2)
