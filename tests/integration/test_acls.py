#!/usr/bin/python3
"""test_acls: kcoord with Kafka's StandardAuthorizer semantics, end to end.

One kcoord serves a PLAINTEXT listener (principal User:ANONYMOUS) and an MTLS listener (an SSL
listener that requires a client certificate and maps its subject to the CN with
ssl.principal.mapping.rules); every key and certificate is made at test time with openssl.
authorizer.class.name is StandardAuthorizer, super.users=User:admin (the admin certificate).

- Kafka's kafka-acls (AclCommand, from the reference jars) adds, lists and removes ACLs
  against kcoord over mTLS as the super user; the ACLs survive a restart.
- For every API kcoord serves, one case without its ACL (the exact Kafka error, and nothing
  changed on the server, checked by the super user) and one with it, over the generated wire
  client as User:ANONYMOUS.
- DENY wins over ALLOW, PREFIXED patterns, User:* and super.users.
- A librdkafka consumer group (Debian's confluent-kafka) that works with READ on its group and
  topic and fails with GROUP_AUTHORIZATION_FAILED / TOPIC_AUTHORIZATION_FAILED without.
- Without an authorizer the ACL APIs answer SECURITY_DISABLED and everything is allowed.
"""
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import kafka_ref, kcoord, wire  # noqa: E402
from tests.support.certs import make_ca, make_cert  # noqa: E402

TOOL_TIMEOUT_S = 120
REGEX_REFRESH_MS = 10000  # group.consumer.regex.refresh.interval.ms: Kafka's minimum
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# Kafka's codes (AclEntry, Errors).
TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED = 3, 4
ANY_OP, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
DESCRIBE_CONFIGS, ALTER_CONFIGS = 10, 11
DENY, ALLOW = 2, 3
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED = 31, 54
ANON = "User:ANONYMOUS"


def have_tools():
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


class AclTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kc-acl-")
        d = cls.dir
        cls.ca = make_ca(d, "ca", "acl-test-ca")
        cls.server = make_cert(d, "server", "/CN=localhost", cls.ca, "DNS:localhost,IP:127.0.0.1")
        cls.admin = make_cert(d, "admin", "/O=Acme/CN=admin", cls.ca)
        cls.alice = make_cert(d, "alice", "/O=Acme/CN=alice", cls.ca)
        cls.k = None
        cls.start()

    @classmethod
    def start(cls):
        cls.ports = kcoord.free_ports(2)
        p, m = cls.ports
        cls.k = kcoord.Kcoord(
            os.path.join(cls.dir, "data"),
            "listeners=PLAINTEXT://127.0.0.1:%d,MTLS://127.0.0.1:%d" % (p, m),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,MTLS:SSL",
            "ssl.keystore.location=" + cls.server[2],
            "ssl.client.auth=required",
            "ssl.truststore.location=" + cls.ca[1],
            "ssl.principal.mapping.rules=RULE:^.*CN=([a-z]+).*$/$1/, DEFAULT",
            "authorizer.class.name=" + AUTHORIZER,
            "super.users=User:admin",
            "auto.create.topics.enable=true",
            "group.consumer.regex.refresh.interval.ms=%d" % REGEX_REFRESH_MS,
            "topics=t:1,u:1,team-a.orders:1,other:1,rx.a:2,rx.b:1",
            "offsets.topic.num.partitions=3",
            "metrics.listener=")

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop() if cls.k else 0
        shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("kcoord exited with status %s" % rc)

    # ---- connections ------------------------------------------------------------------------

    def tls(self, who):
        ctx = ssl.create_default_context(cafile=self.ca[1])
        ctx.load_cert_chain(who[1], who[0])
        c = wire.Conn(self.ports[1], "acl-test")
        c.s = ctx.wrap_socket(c.s, server_hostname="localhost")
        return c

    def anon(self):
        return wire.Conn(self.ports[0], "acl-test")

    def setUp(self):
        self.su = self.tls(self.admin)
        self.a = self.anon()
        self.added = []

    def tearDown(self):
        # Remove every ACL this test added (as the super user), then close.
        if self.added:
            r = self.su.ask("DeleteAcls", 3, filters=self.added)
            for f in r.filter_results:
                self.assertEqual(f.error_code, 0)
        self.su.s.close()
        self.a.s.close()

    # ---- ACL helpers ------------------------------------------------------------------------

    def allow(self, op, rtype, name, principal=ANON, perm=ALLOW, pattern=LITERAL, host="*"):
        acl = dict(resource_type=rtype, resource_name=name, resource_pattern_type=pattern,
                   principal=principal, host=host, operation=op, permission_type=perm)
        r = self.su.ask("CreateAcls", 3, creations=[acl])
        self.assertEqual([x.error_code for x in r.results], [0], r)
        self.added.append(dict(resource_type_filter=rtype, resource_name_filter=name,
                               pattern_type_filter=pattern, principal_filter=principal,
                               host_filter=host, operation=op, permission_type=perm))

    def committed(self, group, topic, part=0):
        """The committed offset of topic[part] in group, as the super user sees it."""
        r = self.su.ask("OffsetFetch", 8, groups=[dict(group_id=group, topics=[
            dict(name=topic, partition_indexes=[part])])])
        g = r.groups[0]
        self.assertEqual(g.error_code, 0, r)
        return g.topics[0].partitions[0].committed_offset

    def commit(self, conn, group, topic, offset):
        r = conn.ask("OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=-1,
                     member_id="", topics=[dict(name=topic, partitions=[
                         dict(partition_index=0, committed_offset=offset)])])
        return r.topics[0].partitions[0].error_code

    # ---- kafka-acls ---------------------------------------------------------------------------

    @unittest.skipUnless(have_tools(), "java or the reference Kafka jars are missing "
                         "(scripts/kafka-ref fetch)")
    def test_kafka_acls_add_list_remove_and_restart(self):
        props = os.path.join(self.dir, "admin.properties")
        with open(props, "w") as f:
            f.write("security.protocol=SSL\nssl.truststore.type=PEM\n"
                    "ssl.truststore.location=%s\nssl.keystore.type=PEM\n"
                    "ssl.keystore.location=%s\n" % (self.ca[1], self.admin[2]))

        def acls(*args):
            cmd = [os.path.join(ROOT, "scripts", "kafka-ref"), "run-class",
                   "org.apache.kafka.tools.AclCommand", "--bootstrap-server",
                   "localhost:%d" % self.ports[1], "--command-config", props] + list(args)
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S)
            out = p.stdout.decode(errors="replace")
            self.assertEqual(p.returncode, 0, out)
            return [ln.strip() for ln in out.splitlines() if ln.strip()]

        acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group",
             "team-a-", "--resource-pattern-type", "prefixed")
        acls("--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.0/8",
             "--operation", "All", "--topic", "*")
        listed = acls("--list")
        self.assertIn("Current ACLs for resource `ResourcePattern(resourceType=GROUP, "
                      "name=team-a-, patternType=PREFIXED)`:", listed)
        self.assertIn("(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
                      listed)
        self.assertIn("(principal=User:mallory, host=10.0.0.0/8, operation=ALL, "
                      "permissionType=DENY)", listed)
        # alice (mTLS) may join a team-a- group now, not another one.
        c = self.tls(self.alice)
        try:
            r = c.ask("FindCoordinator", 3, key="team-a-x", key_type=0)
            self.assertEqual(r.error_code, 0)
            r = c.ask("FindCoordinator", 3, key="team-b-x", key_type=0)
            self.assertEqual(r.error_code, GROUP_AUTHORIZATION_FAILED)
        finally:
            c.s.close()
        # The ACLs are records of the metadata partition: a restart keeps them.
        self.su.s.close()
        self.a.s.close()
        self.assertEqual(type(self).k.stop(), 0)
        type(self).start()
        self.su, self.a = self.tls(self.admin), self.anon()
        listed = acls("--list", "--group", "team-a-", "--resource-pattern-type", "prefixed")
        self.assertIn("(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
                      listed)
        acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
             "--group", "team-a-", "--resource-pattern-type", "prefixed")
        acls("--remove", "--force", "--topic", "*")
        r = self.su.ask("DescribeAcls", 3, resource_type_filter=1, resource_name_filter=None,
                        pattern_type_filter=1, principal_filter=None, host_filter=None,
                        operation=ANY_OP, permission_type=1)
        self.assertEqual((r.error_code, r.resources), (0, []))

    # ---- the ACL APIs -------------------------------------------------------------------------

    def test_acl_apis_need_cluster_describe_and_alter(self):
        acl = dict(resource_type=GROUP, resource_name="g", resource_pattern_type=LITERAL,
                   principal=ANON, host="*", operation=READ, permission_type=ALLOW)
        r = self.a.ask("CreateAcls", 3, creations=[acl])
        self.assertEqual(r.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED)
        f = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                 principal_filter=None, host_filter=None, operation=ANY_OP, permission_type=1)
        r = self.a.ask("DescribeAcls", 3, **f)
        self.assertEqual(r.error_code, CLUSTER_AUTHORIZATION_FAILED)
        r = self.a.ask("DeleteAcls", 3, filters=[f])
        self.assertEqual(r.filter_results[0].error_code, CLUSTER_AUTHORIZATION_FAILED)
        self.assertEqual(self.su.ask("DescribeAcls", 3, **f).resources, [])  # nothing added
        self.allow(ALTER, CLUSTER, "kafka-cluster")
        r = self.a.ask("CreateAcls", 3, creations=[acl])
        self.assertEqual(r.results[0].error_code, 0)
        self.added.append(dict(resource_type_filter=GROUP, resource_name_filter="g",
                               pattern_type_filter=LITERAL, principal_filter=ANON,
                               host_filter="*", operation=READ, permission_type=ALLOW))
        self.allow(DESCRIBE, CLUSTER, "kafka-cluster")
        r = self.a.ask("DescribeAcls", 3, **f)
        self.assertEqual(r.error_code, 0)
        self.assertEqual(len(r.resources), 2)
        # Kafka's validation: a CLUSTER resource is named kafka-cluster.
        bad = dict(acl, resource_type=CLUSTER, resource_name="c")
        r = self.su.ask("CreateAcls", 3, creations=[bad])
        self.assertEqual((r.results[0].error_code, r.results[0].error_message),
                         (42, "The only valid name for the CLUSTER resource is kafka-cluster"))

    def test_acl_apis_answer_as_kafka_4_4(self):
        """What Kafka 4.4's broker answered to the same requests (compared by hand with
        StandardAuthorizer): "" messages on success, a MATCH pattern or an ANY operation fails
        the whole CreateAcls with UNKNOWN_SERVER_ERROR, an UNKNOWN (0) code closes the
        connection, a code Kafka does not know matches nothing."""
        acl = dict(resource_type=GROUP, resource_name="k44", resource_pattern_type=LITERAL,
                   principal="User:k44", host="*", operation=READ, permission_type=ALLOW)
        r = self.su.ask("CreateAcls", 3, creations=[acl, dict(acl, resource_pattern_type=2)])
        self.assertEqual([(x.error_code, x.error_message) for x in r.results],
                         [(-1, None), (-1, None)])
        r = self.su.ask("CreateAcls", 3, creations=[acl])
        self.assertEqual([(x.error_code, x.error_message) for x in r.results], [(0, "")])
        f = dict(resource_type_filter=GROUP, resource_name_filter="k44", pattern_type_filter=1,
                 principal_filter=None, host_filter=None, operation=ANY_OP, permission_type=1)
        r = self.su.ask("DescribeAcls", 3, **f)
        self.assertEqual((r.error_code, r.error_message, len(r.resources)), (0, "", 1))
        r = self.su.ask("DescribeAcls", 3, **dict(f, operation=99))
        self.assertEqual((r.error_code, r.error_message, r.resources), (0, "", []))
        for api, req in (("DescribeAcls", dict(f, operation=0)),
                         ("DeleteAcls", dict(filters=[dict(f, pattern_type_filter=0)])),
                         ("CreateAcls", dict(creations=[dict(acl, permission_type=0)]))):
            c = self.tls(self.admin)
            with self.assertRaises((EOFError, OSError), msg=api):
                c.ask(api, 3, **req)
            c.s.close()
        r = self.su.ask("DeleteAcls", 3, filters=[f])
        self.assertEqual([(x.error_code, x.error_message, len(x.matching_acls))
                          for x in r.filter_results], [(0, None, 1)])

    # ---- the per-API matrix -------------------------------------------------------------------

    def test_find_coordinator(self):
        r = self.a.ask("FindCoordinator", 4, key_type=0, coordinator_keys=["fc"])
        self.assertEqual(r.coordinators[0].error_code, GROUP_AUTHORIZATION_FAILED)
        self.assertEqual(r.coordinators[0].node_id, -1)
        r = self.a.ask("FindCoordinator", 3, key="fc", key_type=0)
        self.assertEqual((r.error_code, r.error_message),
                         (GROUP_AUTHORIZATION_FAILED, "Group authorization failed."))
        self.allow(DESCRIBE, GROUP, "fc")
        r = self.a.ask("FindCoordinator", 4, key_type=0, coordinator_keys=["fc"])
        self.assertEqual(r.coordinators[0].error_code, 0)

    def test_classic_group_apis_need_group_read(self):
        join = dict(group_id="cg", session_timeout_ms=6000, rebalance_timeout_ms=6000,
                    member_id="", protocol_type="consumer",
                    protocols=[dict(name="range", metadata=b"")])
        cases = [("JoinGroup", 5, join),
                 ("SyncGroup", 3, dict(group_id="cg", generation_id=1, member_id="m")),
                 ("Heartbeat", 3, dict(group_id="cg", generation_id=1, member_id="m")),
                 ("LeaveGroup", 3, dict(group_id="cg", members=[dict(member_id="m")]))]
        for api, v, req in cases:
            self.assertEqual(self.a.ask(api, v, **req).error_code, GROUP_AUTHORIZATION_FAILED,
                             api)
        # Nothing was created.
        r = self.su.ask("DescribeGroups", 5, groups=["cg"])
        self.assertEqual(r.groups[0].group_state, "Dead")
        self.allow(READ, GROUP, "cg")
        r = self.a.ask("JoinGroup", 5, **join)
        self.assertEqual(r.error_code, 79)  # MEMBER_ID_REQUIRED: past the authorizer
        for api, v, req in cases[1:]:
            self.assertNotEqual(self.a.ask(api, v, **req).error_code,
                                GROUP_AUTHORIZATION_FAILED, api)

    def test_offset_commit(self):
        self.assertEqual(self.commit(self.a, "oc", "t", 5), GROUP_AUTHORIZATION_FAILED)
        self.allow(READ, GROUP, "oc")
        self.assertEqual(self.commit(self.a, "oc", "t", 5), TOPIC_AUTHORIZATION_FAILED)
        self.assertEqual(self.committed("oc", "t"), -1)  # nothing stored
        # A topic that does not exist, without READ on it: the authorization error.
        self.assertEqual(self.commit(self.a, "oc", "nosuch", 5), TOPIC_AUTHORIZATION_FAILED)
        self.allow(READ, TOPIC, "t")
        self.assertEqual(self.commit(self.a, "oc", "t", 5), 0)
        self.assertEqual(self.committed("oc", "t"), 5)

    def test_offset_fetch(self):
        self.assertEqual(self.commit(self.su, "of", "t", 7), 0)
        self.assertEqual(self.commit(self.su, "of", "u", 8), 0)
        named = dict(group_id="of", topics=[dict(name="t", partition_indexes=[0]),
                                            dict(name="u", partition_indexes=[0])])
        r = self.a.ask("OffsetFetch", 8, groups=[named])
        self.assertEqual(r.groups[0].error_code, GROUP_AUTHORIZATION_FAILED)
        r = self.a.ask("OffsetFetch", 3, group_id="of", topics=None)
        self.assertEqual(r.error_code, GROUP_AUTHORIZATION_FAILED)
        self.allow(DESCRIBE, GROUP, "of")
        self.allow(DESCRIBE, TOPIC, "t")
        r = self.a.ask("OffsetFetch", 8, groups=[named])
        g = r.groups[0]
        self.assertEqual(g.error_code, 0)
        got = {t.name: (t.partitions[0].error_code, t.partitions[0].committed_offset)
               for t in g.topics}
        self.assertEqual(got, {"t": (0, 7), "u": (TOPIC_AUTHORIZATION_FAILED, -1)})
        self.assertEqual([t.name for t in g.topics], ["t", "u"])  # refused ones last
        # Every topic: u is left out.
        r = self.a.ask("OffsetFetch", 8, groups=[dict(group_id="of", topics=None)])
        self.assertEqual([t.name for t in r.groups[0].topics], ["t"])

    def test_offset_delete(self):
        self.assertEqual(self.commit(self.su, "od", "t", 3), 0)
        req = dict(group_id="od", topics=[dict(name="t", partitions=[dict(partition_index=0)])])
        r = self.a.ask("OffsetDelete", 0, **req)
        self.assertEqual((r.error_code, r.topics), (GROUP_AUTHORIZATION_FAILED, []))
        self.allow(DELETE, GROUP, "od")
        r = self.a.ask("OffsetDelete", 0, **req)
        self.assertEqual(r.topics[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED)
        self.assertEqual(self.committed("od", "t"), 3)  # still there
        self.allow(READ, TOPIC, "t")
        r = self.a.ask("OffsetDelete", 0, **req)
        self.assertEqual((r.error_code, r.topics[0].partitions[0].error_code), (0, 0))
        self.assertEqual(self.committed("od", "t"), -1)

    def test_list_describe_delete_groups(self):
        for g in ("lg-a", "lg-b"):
            self.assertEqual(self.commit(self.su, g, "t", 1), 0)
        listed = lambda c: sorted(x.group_id for x in c.ask("ListGroups", 4).groups  # noqa
                                  if x.group_id.startswith("lg-"))
        self.assertEqual(listed(self.a), [])
        self.assertEqual(self.a.ask("ListGroups", 4).error_code, 0)
        self.allow(DESCRIBE, GROUP, "lg-a")
        self.assertEqual(listed(self.a), ["lg-a"])
        # DescribeGroups: the refused group first.
        r = self.a.ask("DescribeGroups", 5, groups=["lg-a", "lg-b"],
                       include_authorized_operations=True)
        self.assertEqual([(g.group_id, g.error_code) for g in r.groups],
                         [("lg-b", GROUP_AUTHORIZATION_FAILED), ("lg-a", 0)])
        self.assertEqual(r.groups[0].authorized_operations, -2147483648)
        self.assertEqual(r.groups[1].authorized_operations, 1 << DESCRIBE)
        # DeleteGroups: refused, nothing deleted.
        r = self.a.ask("DeleteGroups", 2, groups_names=["lg-b"])
        self.assertEqual(r.results[0].error_code, GROUP_AUTHORIZATION_FAILED)
        self.assertEqual(self.committed("lg-b", "t"), 1)
        self.allow(DELETE, GROUP, "lg-b")
        r = self.a.ask("DeleteGroups", 2, groups_names=["lg-b"])
        self.assertEqual(r.results[0].error_code, 0)
        self.assertEqual(self.committed("lg-b", "t"), -1)
        # CLUSTER DESCRIBE lists every group.
        self.allow(DESCRIBE, CLUSTER, "kafka-cluster")
        self.assertEqual(listed(self.a), ["lg-a"])  # lg-b is gone
        self.assertIn("lg-a", [g.group_id for g in self.a.ask("ListGroups", 4).groups])

    def test_consumer_group_heartbeat_and_describe(self):
        hb = dict(group_id="kg", member_id="m-" + os.urandom(6).hex(), member_epoch=0,
                  rebalance_timeout_ms=30000, subscribed_topic_names=["t"], topic_partitions=[])
        r = self.a.ask("ConsumerGroupHeartbeat", 0, **hb)
        self.assertEqual(r.error_code, GROUP_AUTHORIZATION_FAILED)
        self.allow(READ, GROUP, "kg")
        r = self.a.ask("ConsumerGroupHeartbeat", 0, **hb)
        self.assertEqual(r.error_code, TOPIC_AUTHORIZATION_FAILED)
        r = self.su.ask("ConsumerGroupDescribe", 0, group_ids=["kg"])
        self.assertEqual(r.groups[0].error_code, 69)  # GROUP_ID_NOT_FOUND: nothing joined
        self.allow(DESCRIBE, TOPIC, "t")
        r = self.a.ask("ConsumerGroupHeartbeat", 0, **hb)
        self.assertEqual(r.error_code, 0)
        self.assertEqual(len(r.assignment.topic_partitions), 1)
        # Describe: the group needs DESCRIBE (READ implies it), the assigned topics too.
        r = self.a.ask("ConsumerGroupDescribe", 0, group_ids=["kg", "nope"],
                       include_authorized_operations=True)
        self.assertEqual([(g.group_id, g.error_code) for g in r.groups],
                         [("nope", GROUP_AUTHORIZATION_FAILED), ("kg", 0)])
        self.assertEqual(r.groups[1].authorized_operations, (1 << READ) | (1 << DESCRIBE))
        self.su.ask("DeleteAcls", 3, filters=[self.added.pop()])  # no more DESCRIBE on t
        r = self.a.ask("ConsumerGroupDescribe", 0, group_ids=["kg"])
        self.assertEqual((r.groups[0].error_code, r.groups[0].members),
                         (TOPIC_AUTHORIZATION_FAILED, []))
        self.assertEqual(r.groups[0].error_message, "The group has described topic(s) that "
                         "the client is not authorized to describe.")
        r = self.su.ask("ConsumerGroupHeartbeat", 0, group_id="kg", member_id=hb["member_id"],
                        member_epoch=-1)
        self.assertEqual(r.error_code, 0)

    def test_consumer_group_heartbeat_regex_filtered(self):
        """A regex subscription gets only the topics its principal may DESCRIBE (Kafka's
        refreshRegularExpressions filters the matches with the member's request context); an
        ACL added later reaches the assignment at the group's next regex refresh, at most
        group.consumer.regex.refresh.interval.ms after the last one."""
        r = self.su.ask("Metadata", 12, topics=[dict(name="rx.a"), dict(name="rx.b")])
        ids = {t.name: t.topic_id for t in r.topics}
        self.allow(READ, GROUP, "rg")
        self.allow(DESCRIBE, TOPIC, "rx.a")
        member = "m-" + os.urandom(8).hex()

        def beat(epoch, owned):
            r = self.a.ask("ConsumerGroupHeartbeat", 1, group_id="rg", member_id=member,
                           member_epoch=epoch, rebalance_timeout_ms=30000 if epoch == 0 else -1,
                           subscribed_topic_regex="rx\\..*" if epoch == 0 else None,
                           topic_partitions=owned)
            self.assertEqual(r.error_code, 0, r)
            if r.assignment is not None:
                owned = [dict(topic_id=tp.topic_id, partitions=sorted(tp.partitions))
                         for tp in r.assignment.topic_partitions]
            return r.member_epoch, owned

        def topics(owned):
            return sorted(n for n, i in ids.items() for tp in owned if tp["topic_id"] == i)

        epoch, owned = beat(0, [])
        self.assertEqual(topics(owned), ["rx.a"])
        self.assertEqual(owned[0]["partitions"], [0, 1])
        # DESCRIBE on rx.b: the group's resolution stands until it is refreshed (Kafka's
        # interval), so the very next heartbeat still has rx.a alone.
        self.allow(DESCRIBE, TOPIC, "rx.b")
        granted = time.monotonic()
        epoch, owned = beat(epoch, owned)
        self.assertEqual(topics(owned), ["rx.a"])
        # Heartbeat as a client does until the refresh brings rx.b in.
        deadline = granted + REGEX_REFRESH_MS / 1000.0 + 20
        while topics(owned) != ["rx.a", "rx.b"] and time.monotonic() < deadline:
            time.sleep(0.2)
            epoch, owned = beat(epoch, owned)
        self.assertEqual(topics(owned), ["rx.a", "rx.b"])
        r = self.su.ask("ConsumerGroupHeartbeat", 1, group_id="rg", member_id=member,
                        member_epoch=-1)
        self.assertEqual(r.error_code, 0)

    def test_metadata(self):
        r = self.a.ask("Metadata", 12, topics=[dict(name="t"), dict(name="nosuch")],
                       allow_auto_topic_creation=False, include_topic_authorized_operations=True)
        self.assertEqual(sorted((t.name, t.error_code) for t in r.topics),
                         [("nosuch", TOPIC_AUTHORIZATION_FAILED),
                          ("t", TOPIC_AUTHORIZATION_FAILED)])
        r = self.a.ask("Metadata", 12, topics=None)
        self.assertEqual(r.topics, [])
        self.allow(DESCRIBE, TOPIC, "t")
        r = self.a.ask("Metadata", 12, topics=None, include_topic_authorized_operations=True)
        self.assertEqual([(t.name, t.error_code, t.topic_authorized_operations)
                          for t in r.topics], [("t", 0, 1 << DESCRIBE)])
        r = self.a.ask("Metadata", 10, topics=None, include_cluster_authorized_operations=True)
        self.assertEqual(r.cluster_authorized_operations, 0)
        # Auto-creation needs CREATE (topic or cluster) besides DESCRIBE.
        self.allow(DESCRIBE, TOPIC, "auto-", pattern=PREFIXED)
        r = self.a.ask("Metadata", 12, topics=[dict(name="auto-1")],
                       allow_auto_topic_creation=True)
        self.assertEqual(r.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED)
        r = self.su.ask("Metadata", 12, topics=[dict(name="auto-1")],
                        allow_auto_topic_creation=False)
        self.assertEqual(r.topics[0].error_code, 3)  # not created
        self.allow(CREATE, TOPIC, "auto-1")
        r = self.a.ask("Metadata", 12, topics=[dict(name="auto-1")],
                       allow_auto_topic_creation=True)
        self.assertEqual(r.topics[0].error_code, 0)

    def test_create_and_delete_topics(self):
        new = dict(name="ct-1", num_partitions=1, replication_factor=1)
        r = self.a.ask("CreateTopics", 7, topics=[new])
        self.assertEqual((r.topics[0].error_code, r.topics[0].error_message),
                         (TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
        r = self.su.ask("Metadata", 12, topics=[dict(name="ct-1")],
                        allow_auto_topic_creation=False)
        self.assertEqual(r.topics[0].error_code, 3)
        self.allow(CREATE, CLUSTER, "kafka-cluster")
        r = self.a.ask("CreateTopics", 7, topics=[new])
        self.assertEqual(r.topics[0].error_code, 0)
        self.assertEqual(r.topics[0].topic_config_error_code, TOPIC_AUTHORIZATION_FAILED)
        r = self.a.ask("DeleteTopics", 6, topics=[dict(name="ct-1")])
        self.assertEqual(r.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED)
        self.allow(DESCRIBE, TOPIC, "ct-1")
        r = self.a.ask("DeleteTopics", 6, topics=[dict(name="ct-1")])
        self.assertEqual(r.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED)
        r = self.su.ask("Metadata", 12, topics=[dict(name="ct-1")],
                        allow_auto_topic_creation=False)
        self.assertEqual(r.topics[0].error_code, 0)  # still there
        self.allow(DELETE, TOPIC, "ct-1")
        r = self.a.ask("DeleteTopics", 6, topics=[dict(name="ct-1")])
        self.assertEqual(r.responses[0].error_code, 0)

    def test_list_offsets_fetch_produce(self):
        lo = dict(replica_id=-1, topics=[dict(name="t", partitions=[
            dict(partition_index=0, timestamp=-1)])])
        r = self.a.ask("ListOffsets", 7, **lo)
        self.assertEqual(r.topics[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED)
        fetch = dict(max_wait_ms=0, min_bytes=0, topics=[dict(topic="t", partitions=[
            dict(partition=0, fetch_offset=0, partition_max_bytes=1024)])])
        r = self.a.ask("Fetch", 12, **fetch)
        self.assertEqual(r.responses[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED)
        produce = dict(acks=1, timeout_ms=1000, topic_data=[dict(name="t", partition_data=[
            dict(index=0, records=None)])])
        r = self.a.ask("Produce", 9, **produce)
        self.assertEqual(r.responses[0].partition_responses[0].error_code,
                         TOPIC_AUTHORIZATION_FAILED)
        self.allow(DESCRIBE, TOPIC, "t")
        r = self.a.ask("ListOffsets", 7, **lo)
        self.assertEqual(r.topics[0].partitions[0].error_code, 0)
        self.allow(READ, TOPIC, "t")
        r = self.a.ask("Fetch", 12, **fetch)
        self.assertEqual(r.responses[0].partitions[0].error_code, 0)
        self.allow(WRITE, TOPIC, "t")
        r = self.a.ask("Produce", 9, **produce)
        self.assertEqual(r.responses[0].partition_responses[0].error_code, 44)  # kcoord's own

    def test_group_configs(self):
        res = dict(resource_type=32, resource_name="gc", configuration_keys=None)
        r = self.a.ask("DescribeConfigs", 4, resources=[res])
        self.assertEqual((r.results[0].error_code, r.results[0].error_message),
                         (GROUP_AUTHORIZATION_FAILED, "Group authorization failed."))
        alter = dict(resource_type=32, resource_name="gc", configs=[
            dict(name="consumer.session.timeout.ms", config_operation=0, value="50000")])
        r = self.a.ask("IncrementalAlterConfigs", 1, resources=[alter])
        self.assertEqual(r.responses[0].error_code, GROUP_AUTHORIZATION_FAILED)
        r = self.su.ask("DescribeConfigs", 4, resources=[dict(res, configuration_keys=[
            "consumer.session.timeout.ms"])])
        self.assertNotEqual(r.results[0].configs[0].value, "50000")  # unchanged
        r = self.a.ask("ListConfigResources", 1, resource_types=[])
        self.assertEqual(r.error_code, CLUSTER_AUTHORIZATION_FAILED)
        self.allow(ALTER_CONFIGS, GROUP, "gc")  # implies DESCRIBE_CONFIGS
        r = self.a.ask("IncrementalAlterConfigs", 1, resources=[alter])
        self.assertEqual(r.responses[0].error_code, 0)
        r = self.a.ask("DescribeConfigs", 4, resources=[dict(res, configuration_keys=[
            "consumer.session.timeout.ms"])])
        self.assertEqual((r.results[0].error_code, r.results[0].configs[0].value), (0, "50000"))
        self.allow(DESCRIBE_CONFIGS, CLUSTER, "kafka-cluster")
        r = self.a.ask("ListConfigResources", 1, resource_types=[])
        self.assertEqual(r.error_code, 0)
        self.assertIn("gc", [x.resource_name for x in r.config_resources])
        self.su.ask("IncrementalAlterConfigs", 1, resources=[dict(alter, configs=[
            dict(name="consumer.session.timeout.ms", config_operation=1, value=None)])])

    def test_scram_and_quota_apis_need_the_cluster(self):
        """Kafka's checks: DescribeUserScramCredentials CLUSTER DESCRIBE,
        AlterUserScramCredentials CLUSTER ALTER (every named user refused, once, sorted) and
        DescribeClientQuotas CLUSTER DESCRIBE_CONFIGS; nothing is stored without them."""
        r = self.a.ask("DescribeUserScramCredentials", 0, users=None)
        self.assertEqual((r.error_code, r.error_message),
                         (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."))
        up = dict(name="zed", mechanism=1, iterations=4096, salt=b"s" * 16,
                  salted_password=b"p" * 32)
        r = self.a.ask("AlterUserScramCredentials", 0,
                       deletions=[dict(name="amy", mechanism=2)],
                       upsertions=[up, dict(up, mechanism=2)])
        self.assertEqual([(x.user, x.error_code) for x in r.results],
                         [("amy", CLUSTER_AUTHORIZATION_FAILED),
                          ("zed", CLUSTER_AUTHORIZATION_FAILED)])
        r = self.su.ask("DescribeUserScramCredentials", 0, users=[dict(name="zed")])
        self.assertEqual(r.results[0].error_code, 91)  # RESOURCE_NOT_FOUND: nothing stored
        r = self.a.ask("DescribeClientQuotas", 1, components=[], strict=False)
        self.assertEqual(r.error_code, CLUSTER_AUTHORIZATION_FAILED)
        self.allow(ALTER, CLUSTER, "kafka-cluster")
        r = self.a.ask("AlterUserScramCredentials", 0, deletions=[], upsertions=[up])
        self.assertEqual([(x.user, x.error_code) for x in r.results], [("zed", 0)])
        self.allow(DESCRIBE_CONFIGS, CLUSTER, "kafka-cluster")
        r = self.a.ask("DescribeClientQuotas", 1, components=[], strict=False)
        self.assertEqual(r.error_code, 0)
        r = self.su.ask("AlterUserScramCredentials", 0, upsertions=[],
                        deletions=[dict(name="zed", mechanism=1)])
        self.assertEqual(r.results[0].error_code, 0)

    def test_describe_cluster_operations(self):
        r = self.a.ask("DescribeCluster", 1, include_cluster_authorized_operations=True)
        self.assertEqual((r.error_code, r.cluster_authorized_operations), (0, 0))
        # Without DESCRIBE on the cluster, 0 whatever else is allowed.
        self.allow(CREATE, CLUSTER, "kafka-cluster")
        r = self.a.ask("DescribeCluster", 1, include_cluster_authorized_operations=True)
        self.assertEqual(r.cluster_authorized_operations, 0)
        self.su.ask("DeleteAcls", 3, filters=[self.added.pop()])
        self.allow(ALTER, CLUSTER, "kafka-cluster")
        r = self.a.ask("DescribeCluster", 1, include_cluster_authorized_operations=True)
        self.assertEqual(r.cluster_authorized_operations, (1 << ALTER) | (1 << DESCRIBE))
        r = self.su.ask("DescribeCluster", 1, include_cluster_authorized_operations=True)
        every = sum(1 << op for op in (CREATE, ALTER, DESCRIBE, 9, DESCRIBE_CONFIGS,
                                       ALTER_CONFIGS, 12))
        self.assertEqual(r.cluster_authorized_operations, every)

    # ---- the rules ---------------------------------------------------------------------------

    def test_deny_wins_prefixed_wildcard_and_super_users(self):
        fc = lambda c, g: c.ask("FindCoordinator", 4, key_type=0,  # noqa: E731
                                coordinator_keys=[g]).coordinators[0].error_code
        self.allow(DESCRIBE, GROUP, "pre-", principal="User:*", pattern=PREFIXED)
        self.assertEqual(fc(self.a, "pre-1"), 0)
        self.assertEqual(fc(self.a, "pr"), GROUP_AUTHORIZATION_FAILED)
        self.allow(ALL, GROUP, "pre-2", perm=DENY)
        self.assertEqual(fc(self.a, "pre-2"), GROUP_AUTHORIZATION_FAILED)
        self.assertEqual(fc(self.a, "pre-3"), 0)
        # A DENY does not touch the super user; a host ACL is matched against the peer address.
        self.assertEqual(fc(self.su, "pre-2"), 0)
        self.assertEqual(fc(self.su, "anything"), 0)
        self.allow(ALL, GROUP, "pre-3", perm=DENY, host="10.1.2.3")
        self.assertEqual(fc(self.a, "pre-3"), 0)
        self.allow(ALL, GROUP, "pre-3", perm=DENY, host="127.0.0.0/8")
        self.assertEqual(fc(self.a, "pre-3"), GROUP_AUTHORIZATION_FAILED)

    # ---- a real client ----------------------------------------------------------------------

    def test_librdkafka_consumer_group(self):
        if subprocess.run(["/usr/bin/python3", "-c", "import confluent_kafka"]).returncode:
            self.fail("test_acls: Debian's python3-confluent-kafka is needed")
        script = r"""
import json, sys, time
from confluent_kafka import Consumer, KafkaException, TopicPartition
a = json.loads(sys.argv[1])
errs = []
c = Consumer({"bootstrap.servers": a["bootstrap"], "group.id": a["group"],
              "enable.auto.commit": False, "session.timeout.ms": 6000,
              "heartbeat.interval.ms": 500, "error_cb": lambda e: errs.append(e.name())})
assigned = []
c.subscribe([a["topic"]], on_assign=lambda cons, parts: assigned.extend(parts))
deadline = time.monotonic() + 15
while not assigned and time.monotonic() < deadline:
    m = c.poll(0.2)
    if m is not None and m.error():
        errs.append(m.error().name())
    if errs:
        break
out = {"assigned": len(assigned), "errors": sorted(set(errs))}
if assigned:
    c.commit(offsets=[TopicPartition(a["topic"], 0, 42)], asynchronous=False)
    out["committed"] = c.committed([TopicPartition(a["topic"], 0)], timeout=10)[0].offset
c.close()
print(json.dumps(out))
"""

        def run(group):
            a = {"bootstrap": "127.0.0.1:%d" % self.ports[0], "group": group, "topic": "t"}
            p = subprocess.run(["/usr/bin/python3", "-c", script, json.dumps(a)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
            return json.loads(p.stdout.decode().strip().splitlines()[-1])

        out = run("rk-1")
        self.assertEqual(out["assigned"], 0)
        self.assertIn("GROUP_AUTHORIZATION_FAILED", out["errors"])
        self.allow(READ, GROUP, "rk-1")
        out = run("rk-1")
        self.assertEqual(out["assigned"], 0)
        self.assertIn("TOPIC_AUTHORIZATION_FAILED", out["errors"])
        self.assertEqual(self.committed("rk-1", "t"), -1)
        self.allow(READ, TOPIC, "t")
        out = run("rk-1")
        self.assertEqual((out["assigned"], out["errors"], out["committed"]), (1, [], 42))


class NoAuthorizerTest(unittest.TestCase):
    def test_acl_apis_security_disabled_and_everything_allowed(self):
        k = kcoord.ScratchKcoord("topics=t:1", "metrics.listener=")
        try:
            c = wire.Conn(k.port, "acl-test")
            acl = dict(resource_type=GROUP, resource_name="g", resource_pattern_type=LITERAL,
                       principal=ANON, host="*", operation=READ, permission_type=ALLOW)
            r = c.ask("CreateAcls", 3, creations=[acl])
            self.assertEqual((r.results[0].error_code, r.results[0].error_message),
                             (SECURITY_DISABLED, "No Authorizer is configured."))
            f = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                     principal_filter=None, host_filter=None, operation=ANY_OP,
                     permission_type=1)
            r = c.ask("DescribeAcls", 2, **f)
            self.assertEqual((r.error_code, r.error_message),
                             (SECURITY_DISABLED, "No Authorizer is configured."))
            r = c.ask("DeleteAcls", 1, filters=[f])
            self.assertEqual(r.filter_results[0].error_code, SECURITY_DISABLED)
            r = c.ask("DescribeGroups", 5, groups=["g"], include_authorized_operations=True)
            # Kafka 4's supported group operations: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
            # ALTER_CONFIGS.
            self.assertEqual(r.groups[0].authorized_operations, 3400)
            r = c.ask("FindCoordinator", 4, key_type=0, coordinator_keys=["g"])
            self.assertEqual(r.coordinators[0].error_code, 0)
            c.s.close()
        finally:
            self.assertEqual(k.stop(), 0)


if __name__ == "__main__":
    unittest.main()
