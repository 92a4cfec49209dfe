#!/usr/bin/python3
"""test_disk_full: a full disk under a commit load, then the disk recovers.

Starts build/kcoord (or $KC_TEST_BIN) with its data.dir on a small tmpfs of its own (root only:
it mounts one), one __consumer_offsets partition, topic t, on free ports (listeners and
metrics.listener at port 0, read back from the log). Then:

- a commit is acknowledged (OffsetCommit v7, a simple commit: generation -1, no member);
- the tmpfs is filled by a filler file, and ATTEMPTS commits are sent one after the other on
  one connection; each gets an answer (the daemon lives), and while the disk stays full the
  daemon writes at most MAX_WRITE_FAILED_LINES "log write failed" lines however many commits
  fail (one per failed write used to be 8 000-19 000 lines in 5 s), and /readyz answers 503;
- the filler is removed: without a restart, a commit is acknowledged again (bounded number of
  tries, each answered), /readyz comes back to 200, and OffsetFetch returns the last
  acknowledged offset: nothing acknowledged was lost and the partition serves reads again.

Every wait is bounded and for an event; the process and the mount are cleaned up.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support.kcoord import Kcoord  # noqa: E402
from tests.support import calls  # noqa: E402
from tests.support.wire import Conn  # noqa: E402

IO_TIMEOUT_S = 10
ATTEMPTS = 3000
MAX_WRITE_FAILED_LINES = 10
RECOVERY_TRIES = 2000


class Client(Conn):
    def __init__(self, port):
        super().__init__(port, "test-disk-full", timeout=IO_TIMEOUT_S)

    def commit(self, offset):
        """OffsetCommit v7, simple (generation -1): the error code for t/0."""
        return calls.commit(self, "g", -1, "", "t", {0: offset})[0]

    def fetch(self):
        """OffsetFetch v1 of t/0: (offset, error)."""
        r = self.ask("OffsetFetch", 1, group_id="g", topics=[dict(name="t", partition_indexes=[0])])
        p = r.topics[0].partitions[0]
        return p.committed_offset, p.error_code


@unittest.skipUnless(os.geteuid() == 0, "mounts a small tmpfs: run as root (CI does)")
class DiskFullTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kc-diskfull-")
        self.data = os.path.join(self.tmp, "data")
        os.mkdir(self.data)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", self.data], check=True)
        self.kc = None

    def tearDown(self):
        if self.kc is not None:
            self.kc.kill()
        subprocess.run(["umount", self.data], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_disk_full_then_recovers(self):
        kc = self.kc = Kcoord(self.data, "metrics.listener=127.0.0.1:0",
                              "offsets.topic.num.partitions=1", "topics=t:1",
                              "offsets.topic.compression.codec=none")
        conn = Client(kc.port)
        self.assertEqual(conn.commit(1), 0, kc.output())
        acked = 1

        # Fill the file system.
        filler = os.path.join(self.data, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        failed = 0
        for i in range(ATTEMPTS):
            err = conn.commit(100 + i)
            if err == 0:
                acked = 100 + i  # it fitted in a page the segment already had
            else:
                failed += 1
        print("disk full: %d of %d commits failed, %d log write failed lines" % (failed, ATTEMPTS, kc.count("log write failed")))
        self.assertGreater(failed, ATTEMPTS // 2, kc.output())
        self.assertIsNone(kc.proc.poll(), kc.output())
        lines = kc.count("log write failed")
        self.assertGreaterEqual(lines, 1, kc.output())
        self.assertLessEqual(lines, MAX_WRITE_FAILED_LINES, kc.output())
        # The partition is failed or reloading now: not ready.
        status, _, body = kc.get("/readyz")
        self.assertEqual(status, 503, body)
        self.assertEqual(kc.get("/healthz")[0], 200)

        # The disk recovers: the partition comes back without a restart.
        os.unlink(filler)
        for i in range(RECOVERY_TRIES):
            if conn.commit(10000 + i) == 0:
                acked = 10000 + i
                break
            kc.wait_output(0.05)  # the next log line (a reload) or a short while
        else:
            self.fail("no commit acknowledged after the disk recovered:\n" + kc.output())
        for _ in range(RECOVERY_TRIES):
            status, _, body = kc.get("/readyz")
            if status == 200:
                break
            conn.commit(acked)  # a successful write is what proves the disk writes
            kc.wait_output(0.05)
        self.assertEqual(status, 200, body)
        self.assertEqual(conn.fetch(), (acked, 0))
        conn.close()
        self.assertEqual(kc.stop(timeout=IO_TIMEOUT_S), 0, kc.output())


if __name__ == "__main__":
    unittest.main(verbosity=2)
