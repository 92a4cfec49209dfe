#!/usr/bin/python3
"""test_sigterm: SIGTERM under a commit load exits 0 and loses no acknowledged commit.

This is what `docker stop` and `systemctl stop` do to kcoord. Starts build/kcoord (or
$KC_TEST_BIN) with the default flush policy (always) on a free port, with its own data
directory, topic sig (8 partitions), 4 __consumer_offsets partitions (so groups share logs and
fsyncs) and no initial rebalance delay.

COMMITTERS threads are each the one member of their own classic group, joined with the raw
protocol (JoinGroup v5 with the KIP-394 member id round trip, SyncGroup v3), so that their
commits carry a real generation and member id. Each then commits, on its own connection with
WINDOW requests in flight, increasing offsets for its two partitions of sig (OffsetCommit v7,
metadata "o<offset>"), and records per partition the last offset sent and the last one
acknowledged (error 0). Once every committer has had ACKED_BEFORE_TERM commits acknowledged,
kcoord gets SIGTERM while the load goes on:

- it must exit with status 0 within STOP_TIMEOUT_S seconds;
- no commit may have been answered with an error before the signal;
- every committer's connection must end (kcoord closes them);
- kcoord started again on the same data directory must return, through kafka-python's
  KafkaConsumer.committed() (OffsetFetch), for every partition an offset >= the last
  acknowledged one and <= the last sent one;
- the groups survive the restart: each member commits once more with its old generation and
  member id, and that commit is accepted;
- the restarted kcoord stops with exit status 0 too, and neither run logs an ERROR.

Every wait is for an event and bounded; every process started is killed on the way out, and on
a failure the daemons' logs are printed.
"""
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

from kafka import KafkaConsumer, TopicPartition

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import calls, kcoord  # noqa: E402
from tests.support.calls import OFFSET_COMMIT, commit_errors  # noqa: E402
from tests.support.wire import Conn  # noqa: E402

TOPIC = "sig"
PARTITIONS = 8
COMMITTERS = 4
WINDOW = 8
ACKED_BEFORE_TERM = 200
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 5
LOAD_TIMEOUT_S = 60
IO_TIMEOUT_S = 10

# ---- a minimal Kafka client: non-flexible versions, request header v1, response header v0 ---

def connect(port):
    """One connection; send() and recv() are separate so that requests can be pipelined."""
    return Conn(port, "test-sigterm", timeout=IO_TIMEOUT_S)


def join(conn, group, partitions):
    """Join group as its only member and take partitions: (generation, member id)."""
    gen, leader, member = calls.join_classic(conn, group, 30000, TOPIC, partitions)
    if leader != member:
        raise AssertionError("JoinGroup %s: %s is not the leader %s" % (group, member, leader))
    return gen, member


def commit_request(group, gen, member, offsets):
    """OffsetCommit v7 of {partition: offset} on TOPIC, metadata "o<offset>"."""
    return calls.commit_request(group, gen, member, TOPIC, offsets)


# ---- the daemon -----------------------------------------------------------------------------

def start_kcoord(data_dir):
    """kcoord on a free port and the given data directory, its stderr read by a thread."""
    return kcoord.Kcoord(data_dir, "topics=%s:%d" % (TOPIC, PARTITIONS),
                         "offsets.topic.num.partitions=4", "group.initial.rebalance.delay.ms=0",
                         *kcoord.no_metrics_listener(), timeout=START_TIMEOUT_S)


# ---- the load -------------------------------------------------------------------------------

class Committer(threading.Thread):
    """One group member committing increasing offsets on its partitions until its connection
    ends."""

    def __init__(self, index, port, term_sent):
        super().__init__(daemon=True)
        self.group = "sig-%d" % index
        self.partitions = [2 * index, 2 * index + 1]
        self.port = port
        self.term_sent = term_sent  # an Event, set just before SIGTERM
        self.sent = {p: -1 for p in self.partitions}
        self.acked = {p: -1 for p in self.partitions}
        self.n_acked = 0
        self.acked_after_term = 0
        self.errors_before_term = []
        self.failure = None
        self.ended = None  # how the connection ended
        self.joined = threading.Event()
        self.progress = threading.Condition()
        self.gen = self.member = None

    def run(self):
        try:
            conn = connect(self.port)
        except OSError as e:
            self.failure = "connect: %s" % e
            self.joined.set()
            return
        try:
            self.gen, self.member = join(conn, self.group, self.partitions)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.failure = "join: %s" % e
            conn.close()
            self.joined.set()
            return
        self.joined.set()
        inflight = {}  # correlation id -> {partition: offset}
        offset = 0
        try:
            while True:
                while len(inflight) < WINDOW:
                    offset += 1
                    offsets = {p: offset for p in self.partitions}
                    corr = conn.send(OFFSET_COMMIT, 7,
                                     commit_request(self.group, self.gen, self.member, offsets))
                    self.sent.update(offsets)
                    inflight[corr] = offsets
                corr, r = conn.recv()
                offsets = inflight.pop(corr, None)
                if offsets is None:
                    raise ValueError("unexpected correlation id %d" % corr)
                errs = commit_errors(r)
                after = self.term_sent.is_set()
                with self.progress:
                    for p, o in offsets.items():
                        e = errs.get(p)
                        if e == 0:
                            self.acked[p] = max(self.acked[p], o)
                        elif not after:
                            self.errors_before_term.append((p, o, e))
                    if all(errs.get(p) == 0 for p in offsets):
                        self.n_acked += 1
                        if after:
                            self.acked_after_term += 1
                    self.progress.notify_all()
        except (EOFError, ConnectionError) as e:
            self.ended = str(e) or type(e).__name__
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.failure = "%s: %s" % (type(e).__name__, e)
        finally:
            conn.close()
            with self.progress:
                self.progress.notify_all()

    def wait_acked(self, n, deadline):
        with self.progress:
            while self.n_acked < n:
                if not self.is_alive() or self.failure:
                    raise AssertionError("%s stopped after %d acknowledged commits: %s"
                                         % (self.group, self.n_acked, self.failure or self.ended))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%s: %d acknowledged commits within %d s, wanted %d"
                                         % (self.group, self.n_acked, LOAD_TIMEOUT_S, n))
                self.progress.wait(min(left, 0.5))


class SigtermTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-sigterm-")
        self.daemons = []
        self.committers = []
        self.passed = False

    def tearDown(self):
        for d in self.daemons:
            d.kill()
        for c in self.committers:
            c.join(timeout=IO_TIMEOUT_S)
        if not self.passed:
            for i, d in enumerate(self.daemons):
                print("---- kcoord log, run %d\n%s" % (i + 1, d.log.rstrip("\n")))
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self):
        k = start_kcoord(self.dir)
        self.daemons.append(k)
        return k

    def test_sigterm_under_commit_load(self):
        k = self.start()
        term_sent = threading.Event()
        self.committers = [Committer(i, k.port, term_sent) for i in range(COMMITTERS)]
        for c in self.committers:
            c.start()
        for c in self.committers:
            self.assertTrue(c.joined.wait(START_TIMEOUT_S), "%s did not join" % c.group)
            self.assertIsNone(c.failure, c.group)
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        for c in self.committers:
            c.wait_acked(ACKED_BEFORE_TERM, deadline)

        term_sent.set()
        t0 = time.monotonic()
        rc = k.terminate(STOP_TIMEOUT_S)
        stop_s = time.monotonic() - t0
        self.assertIsNotNone(rc, "kcoord still running %d s after SIGTERM" % STOP_TIMEOUT_S)
        self.assertEqual(rc, 0, "exit status on SIGTERM under load")
        for c in self.committers:
            c.join(timeout=IO_TIMEOUT_S)
            self.assertFalse(c.is_alive(), "%s: connection still open after exit" % c.group)
            self.assertIsNone(c.failure, c.group)
            self.assertEqual(c.errors_before_term, [], "%s: commits refused" % c.group)
        print("\nSIGTERM: exit 0 after %.2f s; %d commits acknowledged, %d of them after the "
              "signal" % (stop_s, sum(c.n_acked for c in self.committers),
                          sum(c.acked_after_term for c in self.committers)))

        k2 = self.start()
        consumers = {}
        try:
            for c in self.committers:
                cons = KafkaConsumer(bootstrap_servers="127.0.0.1:%d" % k2.port,
                                     group_id=c.group, enable_auto_commit=False,
                                     api_version_auto_timeout_ms=10000)
                consumers[c.group] = cons
                for p in c.partitions:
                    got = cons.committed(TopicPartition(TOPIC, p))
                    self.assertIsNotNone(got, "%s %s-%d: no committed offset" % (c.group, TOPIC, p))
                    self.assertGreaterEqual(got, c.acked[p], "%s %s-%d: acknowledged commit lost"
                                            % (c.group, TOPIC, p))
                    self.assertLessEqual(got, c.sent[p], "%s %s-%d: offset never sent"
                                         % (c.group, TOPIC, p))
        finally:
            for cons in consumers.values():
                cons.close()

        # The groups came back with their members: a commit with the old generation works.
        for c in self.committers:
            conn = connect(k2.port)
            try:
                offsets = {p: c.sent[p] + 1 for p in c.partitions}
                errs = commit_errors(conn.call(OFFSET_COMMIT, 7,
                                               commit_request(c.group, c.gen, c.member, offsets)))
            finally:
                conn.close()
            self.assertEqual(errs, {p: 0 for p in c.partitions},
                             "%s: commit of generation %d after the restart" % (c.group, c.gen))

        self.assertEqual(k2.terminate(STOP_TIMEOUT_S), 0,
                         "exit status of the restarted kcoord on SIGTERM")
        for i, d in enumerate(self.daemons):
            self.assertNotRegex(d.log, r"\bERROR\b", "run %d logged an error" % (i + 1))
        self.passed = True


if __name__ == "__main__":
    unittest.main(verbosity=2)
