#!/usr/bin/python3
"""test_cluster_meta: a 3-node cluster replicates group configs, ACLs and SCRAM credentials (the
metadata partition, __kcoord_metadata-0) through raft, so a new leader enforces and answers them
as the old one did.

Each node serves a PLAINTEXT listener (User:ANONYMOUS, a super user: the cluster helpers and the
admin requests go there) and a SASL_PLAINTEXT one (SCRAM-SHA-256), every node's both listeners in
cluster.brokers; StandardAuthorizer is on. Snapshots every 64 raft entries, 16 kept behind.

test_metadata_survives_failover_and_reaches_an_empty_node:
- a follower refuses IncrementalAlterConfigs, CreateAcls, DeleteAcls and
  AlterUserScramCredentials with NOT_CONTROLLER (41: what Kafka's controller answers when it is
  not the active one), closes the connection after that answer, and changes nothing;
- on the leader: a group config (consumer.session.timeout.ms), ACLs (alice may READ groups
  prefixed "ok-" and topic t, DENY on group "ok-denied") and alice's SCRAM-SHA-256 credential,
  each acknowledged with 0; every follower then describes the same config and ACLs (applied
  there from raft, not loaded);
- kill -9 of the leader; on the new leader: DescribeConfigs and DescribeAcls answer the same,
  alice logs in with SCRAM (the wire client, and a librdkafka consumer that joins group "ok-rk",
  commits and reads its commit back), and her OffsetCommit is refused
  (GROUP_AUTHORIZATION_FAILED) on group "ok-denied" and on a group no ACL names; a DeleteAcls on the new leader lifts the DENY;
- the old leader, restarted on an empty data directory after enough commits for a snapshot to
  cover the metadata records, restores a snapshot and then describes the same configs and ACLs
  and authenticates alice; its own __kcoord_metadata-0 holds the records.

test_second_alter_sees_the_first: two IncrementalAlterConfigs of one group sent to the leader at
once, each valid alone and invalid together: exactly one is refused (INVALID_CONFIG).

test_kafka_tools_through_any_node (skipped, saying so, without java and the reference jars):
Kafka 4.4's kafka-acls --add and kafka-configs --alter (group configs, a SCRAM user) succeed
bootstrapped from any node. Its AdminClient sends CreateAcls and IncrementalAlterConfigs to a
node of its choosing (any broker: Kafka's brokers forward them to the controller, kcoord does
not) and, on NOT_CONTROLLER, retries on the connection it has; with that connection closed it
retries on another node, and reaches the leader. Every change then shows on every node.
"""
import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import calls, cluster, kcoord, wire  # noqa: E402
from tests.support.cluster import NONE  # noqa: E402

TOPIC = "t"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SETTINGS = ["topics=%s:1" % TOPIC, "offsets.topic.num.partitions=4",
            "group.initial.rebalance.delay.ms=0", "log.level=info",
            "cluster.snapshot.threshold=64", "cluster.snapshot.trailing=16",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms=SCRAM-SHA-256",
            "authorizer.class.name=" + AUTHORIZER, "super.users=User:ANONYMOUS"]
CLIENT = os.path.join(ROOT, "tests", "integration", "sasl_client.py")
TIMEOUT_S = 30

# Kafka's codes (AclEntry, Errors).
TOPIC_RES, GROUP_RES = 2, 3
LITERAL, PREFIXED = 3, 4
READ = 3
DENY, ALLOW = 2, 3
NOT_CONTROLLER, GROUP_AUTHORIZATION_FAILED, SASL_AUTHENTICATION_FAILED = 41, 30, 58
INVALID_CONFIG = 40
ALICE = "User:alice"
SESSION_KEY = "consumer.session.timeout.ms"

ACLS = [dict(resource_type=GROUP_RES, resource_name="ok-", resource_pattern_type=PREFIXED,
             principal=ALICE, host="*", operation=READ, permission_type=ALLOW),
        dict(resource_type=TOPIC_RES, resource_name=TOPIC, resource_pattern_type=LITERAL,
             principal=ALICE, host="*", operation=READ, permission_type=ALLOW),
        dict(resource_type=GROUP_RES, resource_name="ok-denied", resource_pattern_type=LITERAL,
             principal=ALICE, host="*", operation=READ, permission_type=DENY)]
ANY_FILTER = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                  principal_filter=None, host_filter=None, operation=1, permission_type=1)


class MetaCluster(cluster.Cluster):
    """A cluster whose nodes also serve SASL_PLAINTEXT, both listeners in cluster.brokers."""

    def __init__(self, *sets):
        super().__init__(3, *sets)
        ports = kcoord.free_ports(len(self.nodes))
        self.sasl = {i: ports[k] for k, i in enumerate(sorted(self.nodes))}
        self.brokers = ",".join("%d@PLAINTEXT://%s:%d,%d@SASL_PLAINTEXT://%s:%d"
                                % (x.id, x.host, x.kport, x.id, x.host, self.sasl[x.id])
                                for x in self.nodes.values())

    def node_sets(self, node):
        sets = super().node_sets(node)
        return ["listeners=PLAINTEXT://%s:%d,SASL_PLAINTEXT://%s:%d"
                % (node.host, node.kport, node.host, self.sasl[node.id])
                if s.startswith("listeners=") else s for s in sets]


def salted(password, salt, iterations):
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)


def scram_login(port, user, password):
    """A SCRAM-SHA-256 login over the wire (RFC 5802, as Kafka's client); the final error."""
    with wire.Conn(port, "scram-probe") as c:
        r = c.ask("SaslHandshake", 1, mechanism="SCRAM-SHA-256")
        if r.error_code != NONE:
            return r.error_code
        nonce = base64.b64encode(os.urandom(18)).decode()
        bare = "n=%s,r=%s" % (user, nonce)
        r = c.ask("SaslAuthenticate", 2, auth_bytes=("n,," + bare).encode())
        if r.error_code != NONE:
            return r.error_code
        sf = r.auth_bytes.decode()
        f = dict(x.split("=", 1) for x in sf.split(","))
        key = salted(password, base64.b64decode(f["s"]), int(f["i"]))
        without = "c=biws,r=" + f["r"]
        auth = ",".join([bare, sf, without]).encode()
        ck = hmac.new(key, b"Client Key", hashlib.sha256).digest()
        sig = hmac.new(hashlib.sha256(ck).digest(), auth, hashlib.sha256).digest()
        proof = bytes(a ^ b for a, b in zip(ck, sig))
        r = c.ask("SaslAuthenticate", 2,
                  auth_bytes=(without + ",p=" + base64.b64encode(proof).decode()).encode())
        return r.error_code


def wait_until(what, fn, timeout=TIMEOUT_S):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("%s: not within %d s (last: %r)" % (what, timeout, last))


class MetaBase(unittest.TestCase):
    """A MetaCluster per test, with the requests the tests make."""

    def setUp(self):
        self.c = MetaCluster(*SETTINGS)
        self.ok = False
        self.c.start()

    def tearDown(self):
        if not self.ok:
            sys.stderr.write(self.c.logs(tail=120) + "\n")
        self.c.close()

    # ---- the admin requests, over a node's PLAINTEXT listener (a super user) ----

    def ask(self, i, api, version, **fields):
        return wire.ask(self.c.nodes[i].kport, "meta-admin", api, version, **fields)

    def set_config(self, i, group, value):
        r = self.ask(i, "IncrementalAlterConfigs", 1, validate_only=False, resources=[
            dict(resource_type=32, resource_name=group,
                 configs=[dict(name=SESSION_KEY, config_operation=0, value=value)])])
        return [(x.error_code, x.error_message) for x in r.responses]

    def config(self, i, group):
        """The group's own consumer.session.timeout.ms on node i (None: the default's)."""
        r = self.ask(i, "DescribeConfigs", 4, include_synonyms=False,
                     include_documentation=False,
                     resources=[dict(resource_type=32, resource_name=group,
                                     configuration_keys=[SESSION_KEY])])
        res = r.results[0]
        self.assertEqual(res.error_code, NONE)
        got = [x for x in res.configs if x.name == SESSION_KEY]
        # config_source 8 is GROUP_CONFIG: the group's own value, not the broker's default.
        return got[0].value if got and got[0].config_source == 8 else None

    def acls(self, i):
        r = self.ask(i, "DescribeAcls", 3, **ANY_FILTER)
        self.assertEqual(r.error_code, NONE)
        return sorted((x.resource_type, x.resource_name, x.pattern_type, a.principal, a.host,
                       a.operation, a.permission_type)
                      for x in r.resources for a in x.acls)

    def alter_scram(self, i, user, password):
        salt = os.urandom(16)
        r = self.ask(i, "AlterUserScramCredentials", 0, deletions=[], upsertions=[dict(
            name=user, mechanism=1, iterations=4096, salt=salt,
            salted_password=salted(password, salt, 4096))])
        return [(x.user, x.error_code) for x in r.results]

    def expected_acls(self, acls=ACLS):
        return sorted((a["resource_type"], a["resource_name"], a["resource_pattern_type"],
                       a["principal"], a["host"], a["operation"], a["permission_type"])
                      for a in acls)

    # ---- as alice, over a node's SASL listener ----

    def alice_commit(self, i, group):
        """An OffsetCommit of t[0] in group (which needs READ on the group) as alice, logged in
        with SCRAM on node i: its error."""
        with wire.Conn(self.c.sasl[i], "alice") as conn:
            self.assertEqual(conn.ask("SaslHandshake", 1, mechanism="SCRAM-SHA-256").error_code,
                             NONE)
            nonce = base64.b64encode(os.urandom(18)).decode()
            bare = "n=alice,r=" + nonce
            r = conn.ask("SaslAuthenticate", 2, auth_bytes=("n,," + bare).encode())
            sf = r.auth_bytes.decode()
            f = dict(x.split("=", 1) for x in sf.split(","))
            key = salted("alice-scram", base64.b64decode(f["s"]), int(f["i"]))
            without = "c=biws,r=" + f["r"]
            auth = ",".join([bare, sf, without]).encode()
            ck = hmac.new(key, b"Client Key", hashlib.sha256).digest()
            sig = hmac.new(hashlib.sha256(ck).digest(), auth, hashlib.sha256).digest()
            proof = bytes(a ^ b for a, b in zip(ck, sig))
            r = conn.ask("SaslAuthenticate", 2, auth_bytes=(
                without + ",p=" + base64.b64encode(proof).decode()).encode())
            self.assertEqual(r.error_code, NONE)
            return calls.commit(conn, group, -1, "", TOPIC, {0: 7})[0]

    def rdkafka_consumer(self, i, group):
        a = {"bootstrap": "127.0.0.1:%d" % self.c.sasl[i], "group": group,
             "protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "user": "alice",
             "password": "alice-scram"}
        p = subprocess.run(["/usr/bin/python3", CLIENT, json.dumps(a)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return json.loads(p.stdout.strip().splitlines()[-1])

    def commits(self, i, n):
        """n OffsetCommits on node i (each a raft entry): enough of them make a snapshot."""
        with wire.Conn(self.c.nodes[i].kport, "filler") as conn:
            for k in range(n):
                self.assertEqual(calls.commit(conn, "filler", -1, "", TOPIC, {0: k}), {0: NONE})


class MetaTest(MetaBase):
    def test_metadata_survives_failover_and_reaches_an_empty_node(self):
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        followers = [i for i in self.c.nodes if i != leader]

        # A follower refuses every metadata write with NOT_CONTROLLER and changes nothing.
        f = followers[0]
        self.assertEqual([e for e, _ in self.set_config(f, "cfg-g", "50000")], [NOT_CONTROLLER])
        # ... and closes the connection after the answer, so that a client retries elsewhere.
        with wire.Conn(self.c.nodes[f].kport, "meta-admin") as conn:
            r = conn.ask("CreateAcls", 3, creations=ACLS[:1])
            self.assertEqual([x.error_code for x in r.results], [NOT_CONTROLLER])
            conn.s.settimeout(5)
            self.assertEqual(conn.s.recv(1), b"")
        r = self.ask(f, "CreateAcls", 3, creations=ACLS[:1])
        self.assertEqual([x.error_code for x in r.results], [NOT_CONTROLLER])
        r = self.ask(f, "DeleteAcls", 3, filters=[ANY_FILTER])
        self.assertEqual([x.error_code for x in r.filter_results], [NOT_CONTROLLER])
        self.assertEqual(self.alter_scram(f, "alice", "alice-scram"), [("alice", NOT_CONTROLLER)])
        for i in self.c.nodes:
            self.assertIsNone(self.config(i, "cfg-g"))
            self.assertEqual(self.acls(i), [])

        # The leader takes them, acknowledged once raft committed them.
        self.assertEqual(self.set_config(leader, "cfg-g", "50000"), [(NONE, None)])
        r = self.ask(leader, "CreateAcls", 3, creations=ACLS)
        self.assertEqual([x.error_code for x in r.results], [NONE] * len(ACLS))
        self.assertEqual(self.alter_scram(leader, "alice", "alice-scram"), [("alice", NONE)])
        self.assertEqual(self.config(leader, "cfg-g"), "50000")
        self.assertEqual(self.acls(leader), self.expected_acls())
        self.assertEqual(scram_login(self.c.sasl[leader], "alice", "alice-scram"), NONE)
        # Every follower applied them from raft.
        for i in followers:
            wait_until("node %d has the group config" % i,
                       lambda i=i: self.config(i, "cfg-g") == "50000")
            wait_until("node %d has the ACLs" % i,
                       lambda i=i: self.acls(i) == self.expected_acls())
            wait_until("node %d authenticates alice" % i,
                       lambda i=i: scram_login(self.c.sasl[i], "alice", "alice-scram") == NONE)

        # kill -9 of the leader: the new one answers and enforces the same.
        self.c.kill(leader)
        new = self.c.wait_leader(exclude=(leader,), timeout=TIMEOUT_S)
        self.c.wait_serving(new)
        self.assertEqual(self.config(new, "cfg-g"), "50000")
        self.assertEqual(self.acls(new), self.expected_acls())
        self.assertEqual(scram_login(self.c.sasl[new], "alice", "alice-scram"), NONE)
        self.assertEqual(scram_login(self.c.sasl[new], "alice", "wrong"),
                         SASL_AUTHENTICATION_FAILED)
        self.assertEqual(self.alice_commit(new, "ok-commit"), NONE)
        self.assertEqual(self.alice_commit(new, "ok-denied"), GROUP_AUTHORIZATION_FAILED)
        self.assertEqual(self.alice_commit(new, "elsewhere"), GROUP_AUTHORIZATION_FAILED)
        got = self.rdkafka_consumer(new, "ok-rk")
        self.assertEqual((got["assigned"], got["committed"]), (["t-0"], 42))
        # The new leader writes: the DENY goes, alice may read ok-denied.
        deny = ACLS[2]
        r = self.ask(new, "DeleteAcls", 3, filters=[dict(
            resource_type_filter=deny["resource_type"], resource_name_filter="ok-denied",
            pattern_type_filter=LITERAL, principal_filter=ALICE, host_filter="*",
            operation=READ, permission_type=DENY)])
        self.assertEqual([(x.error_code, len(x.matching_acls)) for x in r.filter_results],
                         [(NONE, 1)])
        self.assertEqual(self.alice_commit(new, "ok-denied"), NONE)
        self.assertEqual(self.set_config(new, "cfg-h", "55000"), [(NONE, None)])

        # The old leader on an empty data directory: the metadata come by snapshot.
        self.commits(new, 150)
        self.c.start_node(leader, empty=True)
        node = self.c.nodes[leader]
        node.proc.wait_line(r"cluster: restored a snapshot", TIMEOUT_S)
        node.proc.wait_line(r"cluster: leader is node %d " % new, TIMEOUT_S)
        wait_until("the restarted node has the group configs",
                   lambda: self.config(leader, "cfg-g") == "50000"
                   and self.config(leader, "cfg-h") == "55000")
        self.assertEqual(self.acls(leader), self.expected_acls(ACLS[:2]))
        self.assertEqual(scram_login(self.c.sasl[leader], "alice", "alice-scram"), NONE)
        self.assertEqual(self.alice_commit(leader, "elsewhere"), GROUP_AUTHORIZATION_FAILED)
        self.assertTrue(os.path.isdir(os.path.join(node.data_dir, "__kcoord_metadata-0")))
        self.ok = True


def have_tools():
    from tests.support import kafka_ref
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


class ConcurrentAlterTest(MetaBase):
    """Two IncrementalAlterConfigs of one group on the leader at the same moment, each valid
    alone, that together break GroupConfig.validate's rule (session timeout above heartbeat
    interval): the second is checked against the first's change, as Kafka's controller checks
    against its uncommitted state, so exactly one is refused with INVALID_CONFIG and the group
    keeps a valid pair. (Bounds widened so that the two ranges overlap.)"""

    def setUp(self):
        self.c = MetaCluster(*(SETTINGS + ["group.consumer.min.session.timeout.ms=10000",
                                           "group.consumer.max.heartbeat.interval.ms=20000"]))
        self.ok = False
        self.c.start()

    def test_second_alter_sees_the_first(self):
        from tests.support import gen_wire
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        port = self.c.nodes[leader].kport
        hb_key = "consumer.heartbeat.interval.ms"
        for rnd in range(5):
            group = "race-%d" % rnd
            alters = [(SESSION_KEY, "12000"), (hb_key, "15000")]
            if rnd % 2:
                alters.reverse()
            conns = [wire.Conn(port, "meta-admin-%d" % k) for k in range(2)]
            try:
                key, _, _, first_flexible = gen_wire.APIS["IncrementalAlterConfigs"]
                corrs = []
                for conn, (name, value) in zip(conns, alters):
                    body = gen_wire.encode_incremental_alter_configs_request(
                        1, None, validate_only=False, resources=[dict(
                            resource_type=32, resource_name=group,
                            configs=[dict(name=name, config_operation=0, value=value)])])
                    corrs.append(conn.send(key, 1, body, True))
                got = []
                for conn, corr in zip(conns, corrs):
                    c, r = conn.recv(True)
                    self.assertEqual(c, corr)
                    x = gen_wire.decode_incremental_alter_configs_response(1, r).responses[0]
                    got.append((x.error_code, x.error_message))
            finally:
                for conn in conns:
                    conn.close()
            self.assertEqual(sorted(e for e, _ in got), [NONE, INVALID_CONFIG], got)
            refused = [m for e, m in got if e == INVALID_CONFIG][0]
            self.assertIn("must be greater than", refused)
            # The group has the one that was accepted, and a valid pair.
            r = self.ask(leader, "DescribeConfigs", 4, include_synonyms=False,
                         include_documentation=False,
                         resources=[dict(resource_type=32, resource_name=group,
                                         configuration_keys=[SESSION_KEY, hb_key])])
            vals = {x.name: int(x.value) for x in r.results[0].configs}
            self.assertGreater(vals[SESSION_KEY], vals[hb_key], vals)
        # An alter held behind another whose client has gone meanwhile: it still runs, and
        # the leader goes on serving.
        key, _, _, _ = gen_wire.APIS["IncrementalAlterConfigs"]
        conns = [wire.Conn(port, "meta-admin-%d" % k) for k in range(2)]
        try:
            for k, conn in enumerate(conns):
                body = gen_wire.encode_incremental_alter_configs_request(
                    1, None, validate_only=False, resources=[dict(
                        resource_type=32, resource_name="gone-%d" % k,
                        configs=[dict(name=SESSION_KEY, config_operation=0, value="50000")])])
                conn.send(key, 1, body, True)
            conns[1].close()
            c, r = conns[0].recv(True)
            self.assertEqual(
                gen_wire.decode_incremental_alter_configs_response(1, r).responses[0].error_code,
                NONE)
        finally:
            for conn in conns:
                conn.close()
        self.assertEqual(wait_until("the gone client's alter to be applied",
                                    lambda: self.config(leader, "gone-1")), "50000")
        self.c.check_alive()
        self.ok = True


class KafkaToolsTest(MetaBase):
    """Kafka's own tools against a cluster, through any node."""

    def tool(self, i, cls, *args):
        cmd = [os.path.join(ROOT, "scripts", "kafka-ref"), "run-class", cls,
               "--bootstrap-server", "127.0.0.1:%d" % self.c.nodes[i].kport] + list(args)
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode(errors="replace")
        self.assertEqual(p.returncode, 0, out)
        return out

    @unittest.skipUnless(have_tools(), "java or the reference Kafka jars are missing "
                         "(scripts/kafka-ref fetch)")
    def test_kafka_tools_through_any_node(self):
        """kafka-acls and kafka-configs (groups, SCRAM users) succeed whichever node they
        bootstrap from: the AdminClient sends CreateAcls and IncrementalAlterConfigs to a node of
        its choice, and a follower's NOT_CONTROLLER with its connection closed sends it on to the
        leader. Each change is then on every node."""
        leader = self.c.wait_leader()
        self.c.wait_serving(leader)
        acl, config = "org.apache.kafka.tools.AclCommand", "org.apache.kafka.tools.ConfigCommand"
        names = []
        for k in range(6):
            i = sorted(self.c.nodes)[k % 3]
            self.tool(i, acl, "--add", "--allow-principal", "User:u%d" % k, "--operation",
                      "Read", "--group", "tool-g%d" % k)
            names.append("tool-g%d" % k)
            out = self.tool(i, config, "--entity-type", "groups", "--entity-name", "tg%d" % k,
                            "--alter", "--add-config", "%s=%d" % (SESSION_KEY, 50000 + k))
            self.assertIn("Completed updating config for group tg%d." % k, out)
        out = self.tool(followers(self.c, leader)[0], config, "--alter", "--add-config",
                        "SCRAM-SHA-256=[iterations=4096,password=bob-scram]",
                        "--entity-type", "users", "--entity-name", "bob")
        self.assertIn("Completed updating config for user bob.", out)
        for i in self.c.nodes:
            wait_until("node %d has every change" % i,
                       lambda i=i: sorted(a[1] for a in self.acls(i)) == names
                       and all(self.config(i, "tg%d" % k) == str(50000 + k) for k in range(6)))
            wait_until("node %d authenticates bob" % i,
                       lambda i=i: scram_login(self.c.sasl[i], "bob", "bob-scram") == NONE)
        self.ok = True


def followers(c, leader):
    return [i for i in sorted(c.nodes) if i != leader]


if __name__ == "__main__":
    unittest.main()
