#!/usr/bin/python3
"""test_kafka_python: kafka-python (Debian's python3-kafka) bootstraps against a real kcoord.

Starts build/kcoord (or $KC_TEST_BIN) on a free port, waits for its "listening on" line, checks
that the consumer's metadata and the admin client's DescribeCluster show the configured
topics and this broker, then stops it with SIGTERM and requires exit status 0.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from kafka import KafkaAdminClient, KafkaConsumer

BIN = os.environ.get("KC_TEST_BIN", "build/kcoord")


class Kcoord:
    def __init__(self, *sets):
        self.dir = tempfile.mkdtemp(prefix="kc-py-")
        args = [BIN, "--set", "listeners=127.0.0.1:0", "--set", "data.dir=" + self.dir]
        for s in sets:
            args += ["--set", s]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE)
        self.log = b""
        self.port = None
        deadline = time.monotonic() + 20
        while self.port is None:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("kcoord did not start:\n" + self.log.decode(errors="replace"))
            ready, _, _ = select.select([self.proc.stderr], [], [], left)
            if ready:
                chunk = os.read(self.proc.stderr.fileno(), 65536)
                self.log += chunk
                m = re.search(rb"listening on 127\.0\.0\.1:(\d+)", self.log)
                if m and b"partitions loaded" not in self.log:
                    m = None  # wait until every partition serves
                if m:
                    self.port = int(m.group(1))

    def stop(self):
        rc = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            rc = self.proc.returncode
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


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
