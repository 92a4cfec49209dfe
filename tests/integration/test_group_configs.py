#!/usr/bin/python3
"""test_group_configs: Kafka's own kafka-configs tool (ConfigCommand, from the reference jars)
against kcoord on GROUP resources: --alter --add-config, --describe, --delete-config, the
errors Kafka 4.4's broker gives, the configs after a restart, and their effect on a member's
next ConsumerGroupHeartbeat.

The expected lines are what the same commands printed against a Kafka 4.4 broker
(`scripts/kafka-ref start`, then the same commands). Needs java and the reference jars
(scripts/kafka-ref fetch); without them the test is skipped, saying so.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import kafka_ref, kcoord, wire  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL_TIMEOUT_S = 120


def have_tools():
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


@unittest.skipUnless(have_tools(), "java or the reference Kafka jars are missing "
                     "(scripts/kafka-ref fetch)")
class GroupConfigsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-gconf-")
        self.k = None
        self.start()

    def tearDown(self):
        if self.k is not None:
            self.assertEqual(self.k.stop(), 0)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self):
        self.k = kcoord.Kcoord(self.dir, "topics=t:6", "metrics.listener=")

    def configs(self, *args):
        """kafka-configs on groups against kcoord: (exit status, output lines without Java's
        stack frames)."""
        cmd = [os.path.join(ROOT, "scripts", "kafka-ref"), "run-class",
               "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
               "127.0.0.1:%d" % self.k.port, "--entity-type", "groups"] + list(args)
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S)
        lines = [ln for ln in p.stdout.decode(errors="replace").splitlines()
                 if not ln.lstrip().startswith("at ") and "log4j" not in ln.lower()]
        return p.returncode, lines

    def heartbeat_interval(self, group):
        """The heartbeat interval a joining member of `group` is told."""
        r = wire.ask(self.k.port, "test-gconf", "ConsumerGroupHeartbeat", 1, group_id=group,
                     member_id="m-" + os.urandom(8).hex(), member_epoch=0,
                     rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                     topic_partitions=[])
        self.assertEqual(r.error_code, 0)
        return r.heartbeat_interval_ms

    def test_alter_describe_delete_restart(self):
        rc, out = self.configs("--entity-name", "G1", "--describe")
        self.assertEqual(out, ["The group 'G1' doesn't exist and doesn't have dynamic config."])
        rc, out = self.configs("--entity-name", "G1", "--describe", "--all")
        self.assertEqual(out, [
            "All configs for group G1 are:",
            "  consumer.assignment.interval.ms=1000 sensitive=false "
            "synonyms={DEFAULT_CONFIG:group.consumer.assignment.interval.ms=1000}",
            "  consumer.heartbeat.interval.ms=5000 sensitive=false "
            "synonyms={DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
            "  consumer.session.timeout.ms=45000 sensitive=false "
            "synonyms={DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}"])
        rc, out = self.configs("--entity-name", "G1", "--alter", "--add-config",
                               "consumer.session.timeout.ms=50000,"
                               "consumer.heartbeat.interval.ms=6000")
        self.assertEqual((rc, out), (0, ["Completed updating config for group G1."]))
        self.assertEqual(self.heartbeat_interval("G1"), 6000)
        self.assertEqual(self.heartbeat_interval("G2"), 5000)
        want = [
            "Dynamic configs for group G1 are:",
            "  consumer.heartbeat.interval.ms=6000 sensitive=false "
            "synonyms={DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=6000, "
            "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
            "  consumer.session.timeout.ms=50000 sensitive=false "
            "synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
            "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}"]
        rc, out = self.configs("--entity-name", "G1", "--describe")
        self.assertEqual(out, want)

        # Durable: a restart replays them.
        self.assertEqual(self.k.stop(), 0)
        self.start()
        rc, out = self.configs("--entity-name", "G1", "--describe")
        self.assertEqual(out, want)
        self.assertEqual(self.heartbeat_interval("G1"), 6000)

        rc, out = self.configs("--entity-name", "G1", "--alter", "--delete-config",
                               "consumer.heartbeat.interval.ms")
        self.assertEqual((rc, out), (0, ["Completed updating config for group G1."]))
        self.assertEqual(self.heartbeat_interval("G1"), 5000)
        rc, out = self.configs("--entity-name", "G1", "--describe")
        self.assertEqual(out, want[:1] + want[2:])

    def test_errors_as_kafka(self):
        cases = [
            ("foo.bar=1", "Unknown group config name: foo.bar"),
            ("consumer.session.timeout.ms=1000",
             "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
            ("consumer.heartbeat.interval.ms=50000",
             "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
            ("consumer.assignment.interval.ms=20000",
             "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive."),
            ("consumer.session.timeout.ms=abc",
             "Invalid value abc for configuration consumer.session.timeout.ms: "
             "Not a number of type INT"),
        ]
        for setting, message in cases:
            rc, out = self.configs("--entity-name", "G1", "--alter", "--add-config", setting)
            self.assertNotEqual(rc, 0, setting)
            self.assertIn("Caused by: org.apache.kafka.common.errors."
                          "InvalidConfigurationException: " + message, out, setting)
        rc, out = self.configs("--entity-name", "G1", "--describe")
        self.assertEqual(out, ["The group 'G1' doesn't exist and doesn't have dynamic config."])


class ConfigApisTest(unittest.TestCase):
    """The three APIs on the wire, where Kafka 4.4's broker was asked the same (no java
    needed): the answers Kafka gave, or kcoord's own for what it does not keep."""

    def setUp(self):
        self.k = kcoord.ScratchKcoord("topics=t:1", "metrics.listener=")

    def tearDown(self):
        self.assertEqual(self.k.stop(), 0)

    def ask(self, api, version, **fields):
        return wire.ask(self.k.port, "test-gconf", api, version, **fields)

    def alter(self, name, key, value, version=1, validate_only=False):
        r = self.ask("IncrementalAlterConfigs", version, validate_only=validate_only,
                     resources=[dict(resource_type=32, resource_name=name, configs=[
                         dict(name=key, config_operation=0, value=value)])])
        return [(x.error_code, x.error_message) for x in r.responses]

    def describe(self, rtype, name, keys=None, version=4, synonyms=False):
        r = self.ask("DescribeConfigs", version, include_synonyms=synonyms,
                     include_documentation=True,
                     resources=[dict(resource_type=rtype, resource_name=name,
                                     configuration_keys=keys)])
        return r.results[0]

    def listed(self, version, types=None):
        r = self.ask("ListConfigResources", version,
                     **({"resource_types": types} if version >= 1 else {}))
        return r.error_code, sorted((x.resource_name, x.get("resource_type"))
                                    for x in r.config_resources)

    def test_group_resources(self):
        self.assertEqual(self.alter("", "consumer.session.timeout.ms", "50000"),
                         [(42, "Default group resources are not allowed.")])
        d = self.describe(32, "")
        self.assertEqual((d.error_code, d.error_message), (42, "Group name must not be empty"))
        self.assertEqual(self.alter("g", "consumer.session.timeout.ms", "50000",
                                    validate_only=True), [(0, None)])
        self.assertEqual(self.listed(1, [32]), (0, []))
        self.assertEqual(self.alter("g", "consumer.session.timeout.ms", "50000", version=0),
                         [(0, None)])
        d = self.describe(32, "g", synonyms=True)
        self.assertEqual((d.error_code, d.error_message), (0, ""))
        got = {c.name: (c.value, c.config_source, c.config_type, c.read_only, c.is_sensitive,
                        [(s.name, s.value, s.source) for s in c.synonyms]) for c in d.configs}
        self.assertEqual(got, {
            "consumer.session.timeout.ms": ("50000", 8, 3, False, False, [
                ("consumer.session.timeout.ms", "50000", 8),
                ("group.consumer.session.timeout.ms", "45000", 5)]),
            "consumer.heartbeat.interval.ms": ("5000", 5, 3, False, False, [
                ("group.consumer.heartbeat.interval.ms", "5000", 5)]),
            "consumer.assignment.interval.ms": ("1000", 5, 3, False, False, [
                ("group.consumer.assignment.interval.ms", "1000", 5)])})
        self.assertTrue(all(c.documentation for c in d.configs))
        d = self.describe(32, "g", keys=["consumer.heartbeat.interval.ms"], version=1)
        self.assertEqual([c.name for c in d.configs], ["consumer.heartbeat.interval.ms"])
        self.assertEqual(self.listed(0), (0, []))  # v0: client metrics resources, none
        self.assertEqual(self.listed(1, []), (0, [("g", 32)]))
        self.assertEqual(self.listed(1, [32]), (0, [("g", 32)]))
        self.assertEqual(self.listed(1, [2]), (0, []))
        self.assertEqual(self.listed(1, [99]), (35, []))

    def test_configs_outlive_the_group(self):
        """Configs belong to the group id: set before the group exists, kept when it is
        deleted (as Kafka 4.4 keeps them after DeleteGroups)."""
        self.assertEqual(self.alter("g", "consumer.heartbeat.interval.ms", "6000"), [(0, None)])
        member = "m-" + os.urandom(8).hex()
        r = self.ask("ConsumerGroupHeartbeat", 1, group_id="g", member_id=member,
                     member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                     topic_partitions=[])
        self.assertEqual((r.error_code, r.heartbeat_interval_ms), (0, 6000))
        r = self.ask("ConsumerGroupHeartbeat", 1, group_id="g", member_id=member,
                     member_epoch=-1)
        self.assertEqual(r.error_code, 0)
        r = self.ask("DeleteGroups", 2, groups_names=["g"])
        self.assertEqual([(x.group_id, x.error_code) for x in r.results], [("g", 0)])
        d = self.describe(32, "g")
        self.assertEqual({c.name: (c.value, c.config_source) for c in d.configs
                          if c.name == "consumer.heartbeat.interval.ms"},
                         {"consumer.heartbeat.interval.ms": ("6000", 8)})
        self.assertEqual(self.listed(1, [32]), (0, [("g", 32)]))

    def test_other_resources(self):
        d = self.describe(2, "nope")
        self.assertEqual(d.error_code, 3)  # UNKNOWN_TOPIC_OR_PARTITION, as Kafka
        for rtype, name in ((2, "t"), (4, "0"), (16, "m")):
            d = self.describe(rtype, name)
            self.assertEqual(d.error_code, 42, (rtype, name))
            self.assertIn("configs of groups only", d.error_message)
        r = self.ask("IncrementalAlterConfigs", 1, validate_only=False, resources=[
            dict(resource_type=4, resource_name="0",
                 configs=[dict(name="x", config_operation=0, value="1")])])
        self.assertEqual(r.responses[0].error_code, 42)


if __name__ == "__main__":
    unittest.main(verbosity=2)
