#!/usr/bin/python3
"""test_kafka_python: kafka-python (Debian's python3-kafka) bootstraps against a real kcoord.

Starts build/kcoord (or $KC_TEST_BIN) on a free port, waits for its "listening on" line, checks
that the consumer's metadata and the admin client's DescribeCluster show the configured
topics and this broker, then stops it with SIGTERM and requires exit status 0.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import kcoord  # noqa: E402

from kafka import KafkaAdminClient, KafkaConsumer


class Kcoord(kcoord.ScratchKcoord):
    """kcoord on a free port in a data directory of its own (tests/support)."""

    def __init__(self, *sets):
        super().__init__(*sets)


class KafkaPythonTest(unittest.TestCase):
    def setUp(self):
        self.k = Kcoord("topics=orders:3,events:1", "node.id=5")
        self.bootstrap = "127.0.0.1:%d" % self.k.port

    def tearDown(self):
        self.assertEqual(self.k.stop(), 0)

    def test_consumer_sees_topics(self):
        c = KafkaConsumer(bootstrap_servers=self.bootstrap, api_version_auto_timeout_ms=10000)
        try:
            self.assertEqual(c.topics(), {"orders", "events"})
            self.assertEqual(c.partitions_for_topic("orders"), {0, 1, 2})
            self.assertEqual(c.partitions_for_topic("events"), {0})
        finally:
            c.close()

    def test_admin_describe_cluster(self):
        a = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            d = a.describe_cluster()
            self.assertEqual(d["controller_id"], 5)
            self.assertEqual([(b["node_id"], b["host"], b["port"]) for b in d["brokers"]],
                             [(5, "127.0.0.1", self.k.port)])
            self.assertEqual(len(d["cluster_id"]), 22)
        finally:
            a.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
