#!/usr/bin/python3
"""test_log_damage: damaged or vanished log bytes cost one partition, never an acknowledged commit.

Each case starts build/kcoord (or $KC_TEST_BIN) in its own data directory, on free ports
(listeners and metrics.listener at port 0, read back from its log), with PARTITIONS
__consumer_offsets partitions, no compression (so that a byte of a batch is a byte on disk), the
smallest segment size (so that logs roll) and topic t. GROUPS_PER_PARTITION simple groups
(OffsetCommit v7, generation -1; OffsetFetch v2, and v1 for the damaged partition) are picked per partition by Kafka's placement,
and commit increasing offsets of t/0 one after the other until the victim partition's log has
rolled and its newest segment holds several batches; a commit counts as acknowledged when its
answer is error 0, and every one of these must be.

- Clean shutdown, then one flipped byte: kcoord stops on SIGTERM (status 0, the
  .kafka_cleanshutdown marker written in data.dir); one byte inside a batch of the victim
  partition's newest segment is flipped: in the first batch (later batches follow it), and in
  a second case in the last batch (nothing follows, so only the marker tells damage from a
  torn write). Started again: the victim's groups answer NOT_COORDINATOR, the segment is byte
  for byte the damaged one (nothing truncated), an ERROR line names the segment, /readyz is 503
  and names the partition, and every other partition serves every acknowledged commit.
- A crash, then a torn tail: kcoord is killed with SIGKILL (no marker), and the first part of a
  batch is appended to the victim's newest segment. Started again, exactly that tail is cut
  off (the file equals what it was before), and every acknowledged commit of every partition
  is served.
- The active segment deleted under a running kcoord: the victim's active .log is unlinked; the
  commits to the victim's groups that follow are all answered with an error (none is
  acknowledged, since none can be durable), an ERROR line names the segment,
  kcoord_log_segments_lost_total moves on /metrics and /readyz is 503 naming the partition,
  while the other partitions acknowledge commits. After a restart every acknowledged commit of
  the other partitions is served, and the victim never serves an offset committed after the
  deletion.

Every wait is for an event (a log line, an answer) and bounded; every process started is
stopped on the way out, and on a failure the daemon's log is in the message.
"""
import os
import re
import shutil
import signal
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support.kcoord import Kcoord, partition_for  # noqa: E402
from tests.support import calls  # noqa: E402
from tests.support.wire import Conn, i64  # noqa: E402

PARTITIONS = 4
VICTIM = 2
GROUPS_PER_PARTITION = 2
SEGMENT_BYTES = 1024  # the smallest offsets.topic.segment.bytes: a roll every ~9 commits
MIN_BATCHES = 4       # in the newest segment, once commit_all is done
MAX_ROUNDS = 100
COMMITS = 8           # refused commits tried after the active segment was deleted
FIRST_SEGMENT = "%020d.log" % 0
IO_TIMEOUT_S = 10
TOPIC = "t"
MARKER = ".kafka_cleanshutdown"

NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 16, 14


def pick_groups():
    """{partition: [group ids]}, GROUPS_PER_PARTITION for each partition."""
    out = {p: [] for p in range(PARTITIONS)}
    i = 0
    while any(len(g) < GROUPS_PER_PARTITION for g in out.values()):
        g = "damage-%d" % i
        p = partition_for(g, PARTITIONS)
        if len(out[p]) < GROUPS_PER_PARTITION:
            out[p].append(g)
        i += 1
    return out


class Client(Conn):
    def __init__(self, port):
        super().__init__(port, "test-log-damage", timeout=IO_TIMEOUT_S)

    def commit(self, group, offset):
        """OffsetCommit v7, simple (generation -1), of t/0: its error code."""
        return calls.commit(self, group, -1, "", TOPIC, {0: offset})[0]

    def fetch(self, group):
        """OffsetFetch v2 of t/0: (offset, error), the group's error when it has one (offset
        None when no partition came back)."""
        r = self.ask("OffsetFetch", 2, group_id=group,
                     topics=[dict(name=TOPIC, partition_indexes=[0])])
        offset, err = None, 0
        for t in r.topics:
            for p in t.partitions:
                offset, err = p.committed_offset, p.error_code
        return offset, r.error_code or err

    def fetch_v1(self, group):
        """OffsetFetch v1 of t/0, which has no top-level error: [(partition, offset, error)]."""
        r = self.ask("OffsetFetch", 1, group_id=group,
                     topics=[dict(name=TOPIC, partition_indexes=[0])])
        return [(p.partition_index, p.committed_offset, p.error_code)
                for t in r.topics for p in t.partitions]



def start_kcoord(data_dir):
    """kcoord on free ports (Kafka and HTTP) with data_dir, once every partition loaded."""
    return Kcoord(data_dir, "metrics.listener=127.0.0.1:0",
                  "offsets.topic.num.partitions=%d" % PARTITIONS, "topics=%s:1" % TOPIC,
                  "offsets.topic.compression.codec=none",
                  "offsets.topic.segment.bytes=%d" % SEGMENT_BYTES)


def newest_segment(data_dir, partition):
    d = os.path.join(data_dir, "__consumer_offsets-%d" % partition)
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    if not logs:
        raise AssertionError("no segment in %s: %s" % (d, os.listdir(d)))
    return os.path.join(d, logs[-1])


def batches(data):
    """[(position, size)] of the record batches in a segment's bytes."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = 12 + struct.unpack(">i", data[pos + 8:pos + 12])[0]
        out.append((pos, size))
        pos += size
    return out


class LogDamageTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kc-damage-")
        self.data = os.path.join(self.tmp, "data")
        self.daemons = []
        self.groups = pick_groups()

    def tearDown(self):
        for d in self.daemons:
            d.stop(signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self):
        d = start_kcoord(self.data)
        self.daemons.append(d)
        return d

    def commit_all(self, d, acked):
        """Every group commits increasing offsets, round after round, until the victim's log
        has rolled (several segments) and its newest segment holds at least MIN_BATCHES
        batches; every commit must be acknowledged. acked: {group: last acknowledged offset},
        updated."""
        conn = Client(d.port)
        try:
            for i in range(MAX_ROUNDS):
                for p in range(PARTITIONS):
                    for g in self.groups[p]:
                        offset = 100 * i + p
                        self.assertEqual(conn.commit(g, offset), 0, d.output())
                        acked[g] = offset
                seg = newest_segment(self.data, VICTIM)
                with open(seg, "rb") as f:
                    n = len(batches(f.read()))
                if os.path.basename(seg) != FIRST_SEGMENT and n >= MIN_BATCHES:
                    return
            self.fail("no roll with %d batches after it in %d rounds:\n%s" %
                      (MIN_BATCHES, MAX_ROUNDS, d.output()))
        finally:
            conn.close()

    def assert_served(self, d, acked, partitions):
        conn = Client(d.port)
        try:
            for p in partitions:
                for g in self.groups[p]:
                    self.assertEqual(conn.fetch(g), (acked[g], 0),
                                     "group %s (partition %d)\n%s" % (g, p, d.output()))
        finally:
            conn.close()

    def others(self):
        return [p for p in range(PARTITIONS) if p != VICTIM]

    # ---- a flipped byte after a clean shutdown ----

    def flipped_byte_after_clean_shutdown(self, which):
        d = self.start()
        acked = {}
        self.commit_all(d, acked)
        self.assertEqual(d.stop(), 0, d.output())
        self.assertTrue(os.path.exists(os.path.join(self.data, MARKER)), d.output())

        seg = newest_segment(self.data, VICTIM)
        with open(seg, "rb") as f:
            data = bytearray(f.read())
        bs = batches(data)
        self.assertGreaterEqual(len(bs), MIN_BATCHES, "batches: %r" % bs)
        pos, size = bs[which]
        at = pos + size - 3  # in the last record, covered by the batch's CRC
        data[at] ^= 0x40
        with open(seg, "wb") as f:
            f.write(data)
        damaged = bytes(data)

        d = self.start()
        conn = Client(d.port)
        try:
            for g in self.groups[VICTIM]:
                _, err = conn.fetch(g)
                self.assertEqual(err, NOT_COORDINATOR, d.output())
                # v0-1 carry the group's error on every requested partition, offset -1; an
                # empty answer would read as "nothing committed" and reset the consumer.
                self.assertEqual(conn.fetch_v1(g), [(0, -1, NOT_COORDINATOR)], d.output())
                self.assertEqual(conn.commit(g, 99999), NOT_COORDINATOR, d.output())
        finally:
            conn.close()
        self.assert_served(d, acked, self.others())
        errors = [l for l in d.output().splitlines() if " ERROR " in l and seg in l]
        self.assertTrue(errors, "no ERROR line names %s:\n%s" % (seg, d.output()))
        status, _, body = d.get("/readyz")
        self.assertEqual(status, 503, body)
        self.assertIn("partition %d failed to load (not served)" % VICTIM, body)
        with open(seg, "rb") as f:
            self.assertEqual(f.read(), damaged, "the damaged segment was changed")
        self.assertEqual(d.stop(), 0, d.output())
        with open(seg, "rb") as f:
            self.assertEqual(f.read(), damaged, "the damaged segment was changed")

    def test_flipped_byte_in_an_early_batch_after_clean_shutdown(self):
        self.flipped_byte_after_clean_shutdown(0)

    def test_flipped_byte_in_the_last_batch_after_clean_shutdown(self):
        self.flipped_byte_after_clean_shutdown(-1)

    # ---- a torn tail after a crash ----

    def test_torn_tail_after_crash(self):
        d = self.start()
        acked = {}
        self.commit_all(d, acked)
        self.assertEqual(d.stop(signal.SIGKILL), -signal.SIGKILL)
        self.assertFalse(os.path.exists(os.path.join(self.data, MARKER)), d.output())

        seg = newest_segment(self.data, VICTIM)
        with open(seg, "rb") as f:
            before = f.read()
        pos, size = batches(before)[-1]
        last = before[pos:pos + size]
        base = struct.unpack(">q", last[:8])[0]
        # The first part of a next batch: what a write cut short by the crash leaves.
        torn = i64(base + 1) + last[8:size * 2 // 3]
        with open(seg, "ab") as f:
            f.write(torn)

        d = self.start()
        self.assert_served(d, acked, range(PARTITIONS))
        with open(seg, "rb") as f:
            self.assertEqual(f.read(), before, "not exactly the torn tail was cut off")
        self.assertNotIn(" ERROR ", d.output())
        self.assertIsNotNone(d.find(r" WARN .*torn write.*%s" % re.escape(seg)), d.output())
        status, _, body = d.get("/readyz")
        self.assertEqual(status, 200, body)
        self.assertEqual(d.stop(), 0, d.output())

    # ---- the active segment deleted under a running kcoord ----

    def test_active_segment_deleted_while_running(self):
        d = self.start()
        acked = {}
        self.commit_all(d, acked)
        lost0 = d.metric("kcoord_log_segments_lost_total") or 0
        seg = newest_segment(self.data, VICTIM)
        os.unlink(seg)

        conn = Client(d.port)
        after = {}  # victim group: offsets acknowledged after the deletion
        try:
            for i in range(COMMITS):
                for g in self.groups[VICTIM]:
                    offset = 10000 + i
                    if conn.commit(g, offset) == 0:
                        after.setdefault(g, []).append(offset)
            self.assertEqual(after, {}, "commits acknowledged after the active segment was "
                             "deleted:\n" + d.output())
            # The other partitions still take commits.
            for p in self.others():
                for g in self.groups[p]:
                    self.assertEqual(conn.commit(g, 20000 + p), 0, d.output())
                    acked[g] = 20000 + p
        finally:
            conn.close()
        d.wait_line(r" ERROR .*%s" % re.escape(seg))
        self.assertGreater(d.metric("kcoord_log_segments_lost_total") or 0, lost0)
        status, _, body = d.get("/readyz")
        self.assertEqual(status, 503, body)
        self.assertIn("partition %d: active segment lost" % VICTIM, body)
        self.assert_served(d, acked, self.others())
        self.assertEqual(d.stop(), 0, d.output())

        d = self.start()
        self.assert_served(d, acked, self.others())
        conn = Client(d.port)
        try:
            for g in self.groups[VICTIM]:
                offset, err = conn.fetch(g)
                self.assertIn(err, (0, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS))
                self.assertTrue(offset is None or offset < 10000,
                                "offset %r, refused after the deletion, is served" % offset)
        finally:
            conn.close()
        self.assertEqual(d.stop(), 0, d.output())


if __name__ == "__main__":
    unittest.main(verbosity=2)
