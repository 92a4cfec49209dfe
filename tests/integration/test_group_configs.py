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


if __name__ == "__main__":
    unittest.main(verbosity=2)
