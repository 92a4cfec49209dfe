#!/usr/bin/python3
"""test_cluster_tls: the raft port lets in only the cluster's own nodes.

Three kcoord nodes with cluster.security.protocol=SSL (each its own certificate, one CA made
here with openssl) elect a leader and serve commits; the leader is killed and commits go on:
raft over mutual TLS replicates as the plaintext transport does. Then, each time with node 3 down
and its place (id, addresses) taken by an outsider, the two remaining nodes refuse and log:

- a node whose certificate another CA signed (and which trusts that other CA only);
- a node with a certificate of the cluster's CA but of another cluster (its cluster.voters, and
  so its cluster id, differ): its hello names a cluster id that is not this one;
- a node that speaks plaintext raft to the TLS port;
- garbage bytes;

and after each the leader and term are unchanged, commits are acknowledged, and no node exits.
A plaintext cluster refuses the node of another cluster the same way, by its hello. Node 3,
started again as itself, rejoins. Every acknowledged commit is then returned by OffsetFetch.
"""
import os
import random
import shutil
import sys
import tempfile
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import certs, cluster  # noqa: E402

TOPIC = "t"
SETTINGS = ["topics=%s:4" % TOPIC, "offsets.topic.num.partitions=4",
            "group.initial.rebalance.delay.ms=0", "log.level=info"]
TIMEOUT_S = 30


class TlsCluster(cluster.Cluster):
    """A Cluster whose node i gets overrides[i] after the common settings."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.overrides = {}

    def node_sets(self, node):
        return super().node_sets(node) + self.overrides.get(node.id, [])


class Case(unittest.TestCase):
    TLS = True

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="kc-rafttls-")
        self.ca = certs.make_ca(self.d, "ca", "cluster CA")
        self.other_ca = certs.make_ca(self.d, "other", "another CA")
        self.c = TlsCluster(3, *SETTINGS)
        for i in self.c.nodes:
            self.c.overrides[i] = self.tls(self.cert("node%d" % i, self.ca), self.ca)
        self.committer = None
        self.ok = False
        self.c.start()

    def tearDown(self):
        if self.committer is not None:
            self.committer.stop()
        if not self.ok:
            sys.stderr.write(self.c.logs(tail=80) + "\n")
        self.c.close()
        shutil.rmtree(self.d, ignore_errors=True)

    def cert(self, name, ca):
        return certs.make_cert(self.d, name, "/CN=" + name, ca)[2]

    def tls(self, pem, ca):
        if not self.TLS:
            return []
        return ["cluster.security.protocol=SSL", "cluster.ssl.keystore.location=" + pem,
                "cluster.ssl.truststore.location=" + ca[1]]

    def acks(self, n=50):
        return self.committer.wait_acks_after(time.monotonic(), n, TIMEOUT_S)

    def outsider(self, sets, refused, empty=False):
        """Node 3 (down) started as an outsider with `sets`: the live nodes refuse it with a
        line containing `refused`; leader, term and commits are unaffected."""
        leader = self.c.wait_leader(ignore=(3,))
        live = [i for i in self.c.nodes if i != 3]
        terms = {i: self.c.term(i) for i in live}
        before = {i: self.c.nodes[i].proc.count(refused) for i in live}
        self.c.overrides[3] = sets
        self.c.start_node(3, empty=empty)
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if all(self.c.nodes[i].proc.count(refused) > before[i] for i in live):
                break
            time.sleep(0.1)
        for i in live:
            self.assertGreater(self.c.nodes[i].proc.count(refused), before[i],
                               "node %d logged no refusal (%r)" % (i, refused))
        self.acks()
        for i in live:
            self.assertTrue(self.c.nodes[i].alive, "node %d exited" % i)
            self.assertEqual(self.c.term(i), terms[i], "node %d changed its term" % i)
        self.assertEqual(self.c.wait_leader(ignore=(3,)), leader)
        self.c.kill(3)

    def assert_nothing_lost(self):
        self.committer.stop()
        checked, violations = self.committer.check()
        self.assertEqual(violations, [])
        self.assertGreater(checked, 0)


class TlsClusterTest(Case):
    def test_mutual_tls_replicates_and_refuses_outsiders(self):
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        self.committer = cluster.Committer(self.c, TOPIC, clients=3, partitions=2).start()
        self.acks(100)
        # raft over TLS survives a leader kill like the plaintext transport
        self.c.kill(leader)
        self.acks()
        self.c.start_node(leader)
        self.acks()
        # node 3 makes room for the outsiders (a new leader if it led)
        self.c.kill(3)
        self.acks()
        other = self.cert("intruder", self.other_ca)
        self.outsider(self.tls(other, self.other_ca), "refused:")
        foreign = self.c.voters + ",4@127.0.0.1:1"
        self.outsider(self.tls(self.cert("node3b", self.ca), self.ca)
                      + ["cluster.voters=" + foreign], "is not this cluster's", empty=True)
        self.outsider([], "refused:", empty=True)  # plaintext raft on a TLS port
        node = self.c.nodes[1]
        rnd = random.Random(7)
        cluster.raft_garbage(node.host, node.rport,
                             [bytes(rnd.getrandbits(8) for _ in range(2048)), b"\x16\x03\x01"],
                             timeout=2)
        self.acks()
        self.assertTrue(node.alive)
        # node 3 as itself again (its data directory was taken by the outsiders: empty)
        self.c.overrides[3] = self.tls(self.cert("node3", self.ca), self.ca)
        self.c.start_node(3, empty=True)
        self.c.nodes[3].proc.wait_line(r"cluster: leader is node", TIMEOUT_S)
        self.acks()
        self.assert_nothing_lost()
        self.ok = True


class PlainHelloTest(Case):
    TLS = False

    def test_plaintext_refuses_another_cluster(self):
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        self.committer = cluster.Committer(self.c, TOPIC, clients=2, partitions=2).start()
        self.acks()
        self.c.kill(3)
        self.acks()
        self.outsider(["cluster.voters=" + self.c.voters + ",4@127.0.0.1:1"],
                      "is not this cluster's", empty=True)
        self.assert_nothing_lost()
        self.ok = True


if __name__ == "__main__":
    unittest.main(verbosity=2)
