#!/usr/bin/python3
"""test_hostile_group: subscription regexes and group records a hostile client sends.

Starts build/kcoord (or $KC_TEST_BIN) on a free port with its own data directory, topics
xPy and other, and group.consumer.regex.max.bytes=65536 (so that the deep pattern below
reaches the nesting check rather than the length one). Then, each on its own connection with
the raw protocol (ConsumerGroupHeartbeat v1, JoinGroup v5):

- a SubscribedTopicRegex of 20 000 nested parentheses, a back-reference pattern, a{0,3000}
  and a 100 KB alternation are answered INVALID_REGULAR_EXPRESSION at once; after each, the
  process is alive and another connection is answered, and kcoord's peak RSS stays under
  RSS_BUDGET_MB (another client's longest wait meanwhile is printed, not asserted);
- franz-go's wrapping `.*(?:(?:P)).*` is accepted and gets topic xPy;
- the same refused heartbeat sent three times is logged once;
- a JoinGroup with 16 MB of protocol metadata gets UNKNOWN_SERVER_ERROR, an OffsetCommit with
  2 MB of metadata (offset.metadata.max.bytes is raised to 4 MB) UNKNOWN_SERVER_ERROR,
  and nothing that size reaches the log;
- kcoord exits 0 on SIGTERM.

Every wait is bounded and for an event; the daemon is killed on the way out and its log printed
on a failure.
"""
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import wire  # noqa: E402
from tests.support.kcoord import Kcoord  # noqa: E402

START_TIMEOUT_S = 30
IO_TIMEOUT_S = 10
INVALID_REGULAR_EXPRESSION = 128
UNKNOWN_SERVER_ERROR = -1
MEMBER_ID_REQUIRED = 79
RSS_BUDGET_MB = 128  # glibc's regcomp took +140 MB for a{0,3000} and +3.9 GB for 100 KB


def ask(port, api, version, **fields):
    """One request on a new connection: its decoded answer."""
    return wire.ask(port, "test-hostile", api, version, timeout=IO_TIMEOUT_S, **fields)


def heartbeat(port, group, member, regex=None, topics=None):
    """A joining ConsumerGroupHeartbeat v1: (error code, message, epoch, assigned partitions)."""
    member = member or "m-" + os.urandom(8).hex()  # v1: the client picks its member id
    r = ask(port, "ConsumerGroupHeartbeat", 1, group_id=group, member_id=member, member_epoch=0,
            rebalance_timeout_ms=30000, subscribed_topic_names=topics,
            subscribed_topic_regex=regex, topic_partitions=[])
    parts = 0
    if r.error_code == 0 and r.assignment is not None:
        parts = sum(len(tp.partitions) for tp in r.assignment.topic_partitions)
    return r.error_code, r.error_message, r.member_epoch, parts


def join_big(port, group, size):
    """A JoinGroup v5 with `size` bytes of protocol metadata: its error code."""
    member = ""
    for _ in range(2):
        r = ask(port, "JoinGroup", 5, group_id=group, session_timeout_ms=30000,
                rebalance_timeout_ms=30000, member_id=member, protocol_type="consumer",
                protocols=[dict(name="range", metadata=b"x" * size)])
        err, member = r.error_code, r.member_id
        if err != MEMBER_ID_REQUIRED:
            return err
    return err


def commit(port, group, metadata):
    """A simple OffsetCommit v8 (flexible: metadata may be long) of xPy-0 with `metadata`: its
    partition's error code."""
    r = ask(port, "OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=-1,
            member_id="", topics=[dict(name="xPy", partitions=[dict(
                partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                committed_metadata=metadata)])])
    return r.topics[0].partitions[0].error_code


def api_versions_answered(port):
    return ask(port, "ApiVersions", 0).error_code == 0


def start_kcoord(data_dir):
    # offset.metadata.max.bytes above message.max.bytes, so that a commit can make an
    # offset record too large.
    return Kcoord(data_dir, "topics=xPy:2,other:2", "metrics.listener=",
                  "offsets.topic.num.partitions=2", "group.consumer.regex.max.bytes=65536",
                  "log.level=info", "offset.metadata.max.bytes=4194304", timeout=START_TIMEOUT_S)


class HostileGroupTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-hostile-")
        self.k = start_kcoord(self.dir)

    def tearDown(self):
        self.k.kill()
        if any(e for e in self._outcome.result.errors + self._outcome.result.failures
               if e[0] is self):
            print("\n---- kcoord log ----\n" + self.k.log[-20000:])
        shutil.rmtree(self.dir, ignore_errors=True)

    def assert_alive(self):
        self.assertIsNone(self.k.proc.poll(), "kcoord died")
        self.assertTrue(api_versions_answered(self.k.port), "another connection not answered")
        err, _, epoch, _ = heartbeat(self.k.port, "bystander", "", topics=["other"])
        self.assertEqual(err, 0)
        self.assertGreaterEqual(epoch, 1)

    def peak_rss_mb(self):
        return self.k.peak_rss_kb() // 1024

    def test_hostile_regexes(self):
        port = self.k.port
        # Another client asks all along; its longest wait is printed (never asserted).
        stop = threading.Event()
        worst = [0.0]

        def probe():
            while not stop.is_set():
                t0 = time.monotonic()
                api_versions_answered(port)
                worst[0] = max(worst[0], time.monotonic() - t0)
                stop.wait(0.002)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        self.addCleanup(stop.set)
        alt = "|".join("topic-%d" % i for i in range(12000))[:100 * 1024]
        hostile = {
            "nested": "(" * 20000 + "a" + ")" * 20000,
            "backrefs": "(.*)(.*)(.*)(.*)(.*)(.*)(.*)\\2\\3\\4\\5\\6\\7\\8",
            "repeat": "a{0,3000}",
            "alternation": alt,
        }
        for i, (name, rx) in enumerate(hostile.items()):
            err, msg, _, _ = heartbeat(port, "h%d" % i, "", regex=rx)
            self.assertEqual(err, INVALID_REGULAR_EXPRESSION, name)
            self.assertIn("SubscribedTopicRegex", msg or "", name)
            self.assert_alive()

        # franz-go's wrapping is accepted and resolved.
        err, msg, epoch, parts = heartbeat(port, "franz", "", regex=".*(?:(?:P)).*")
        self.assertEqual(err, 0, msg)
        self.assertGreaterEqual(epoch, 1)
        self.assertEqual(parts, 2)  # xPy's two partitions

        # Logged once per group, not once per request.
        for _ in range(3):
            self.assertEqual(heartbeat(port, "again", "", regex="(x")[0],
                             INVALID_REGULAR_EXPRESSION)
        self.k.wait_line(r"consumer group again: request refused: .*missing closing \)")
        self.assertEqual(len(re.findall(r"consumer group again: request refused", self.k.log)),
                         1)
        stop.set()
        prober.join(IO_TIMEOUT_S)
        rss = self.peak_rss_mb()
        print("\nhostile regexes: another client's longest wait %.1f ms, kcoord's peak RSS %d MB"
              % (worst[0] * 1000, rss))
        self.assertLess(rss, RSS_BUDGET_MB)

    def test_big_join_metadata(self):
        err = join_big(self.k.port, "big", 16 << 20)
        self.assertEqual(err, UNKNOWN_SERVER_ERROR)
        self.assert_alive()
        # An offset record larger than message.max.bytes: UNKNOWN_SERVER_ERROR, as Kafka 4.
        self.assertEqual(commit(self.k.port, "simple", "m" * (2 << 20)), UNKNOWN_SERVER_ERROR)
        self.assertEqual(commit(self.k.port, "simple", "m" * 1000), 0)
        print("\n16 MB JoinGroup: kcoord's peak RSS %d MB" % self.peak_rss_mb())
        self.k.wait_line(r"group big: request refused: .*message\.max\.bytes")
        # SIGTERM: exit 0, and no log file holds anything near the metadata's size.
        self.k.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.k.proc.wait(timeout=START_TIMEOUT_S), 0)
        total = 0
        for root, _, files in os.walk(self.dir):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files
                         if f.endswith(".log"))
        self.assertLess(total, 1 << 20)


if __name__ == "__main__":
    unittest.main(verbosity=2)
