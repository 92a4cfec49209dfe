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
import http.client
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest

BIN = os.environ.get("KC_TEST_BIN", "build/kcoord")
START_TIMEOUT_S = 30
IO_TIMEOUT_S = 10
ATTEMPTS = 3000
MAX_WRITE_FAILED_LINES = 10
RECOVERY_TRIES = 2000
OFFSET_COMMIT, OFFSET_FETCH = 8, 9


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        if n < 0 or self.p + n > len(self.d):
            raise ValueError("short response")
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        head = i16(key) + i16(version) + i32(self.corr) + string("test-disk-full")
        self.s.sendall(i32(len(head) + len(body)) + head + body)
        size = struct.unpack(">i", self._exact(4))[0]
        r = Reader(self._exact(size))
        if r.i32() != self.corr:
            raise ValueError("correlation id mismatch")
        return r

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError("connection closed")
            buf += chunk
        return buf

    def commit(self, offset):
        """OffsetCommit v7, simple (generation -1): the error code for t/0."""
        body = (string("g") + i32(-1) + string("") + string(None) + i32(1) + string("t") +
                i32(1) + i32(0) + i64(offset) + i32(-1) + string("o%d" % offset))
        r = self.call(OFFSET_COMMIT, 7, body)
        r.i32()  # throttle
        r.i32()
        r.string()
        r.i32()
        r.i32()
        return r.i16()

    def fetch(self):
        """OffsetFetch v1 of t/0: (offset, error)."""
        r = self.call(OFFSET_FETCH, 1, string("g") + i32(1) + string("t") + i32(1) + i32(0))
        r.i32()
        r.string()
        r.i32()
        r.i32()
        offset = r.i64()
        r.string()
        return offset, r.i16()

    def close(self):
        self.s.close()


def http_status(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    try:
        c.request("GET", path)
        resp = c.getresponse()
        return resp.status, resp.read().decode()
    finally:
        c.close()


@unittest.skipUnless(os.geteuid() == 0, "mounts a small tmpfs: run as root (CI does)")
class DiskFullTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kc-diskfull-")
        self.data = os.path.join(self.tmp, "data")
        os.mkdir(self.data)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", self.data], check=True)
        self.proc = None
        self.lines = []
        self.cond = threading.Condition()

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None:
            self.reader.join(IO_TIMEOUT_S)
            self.proc.stderr.close()
        subprocess.run(["umount", self.data], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)
            self.cond.notify_all()

    def wait_line(self, pattern):
        rx = re.compile(pattern)
        with self.cond:
            self.cond.wait_for(lambda: any(l is None or rx.search(l) for l in self.lines),
                               START_TIMEOUT_S)
            for l in self.lines:
                m = l is not None and rx.search(l)
                if m:
                    return m
        self.fail("no line matching %r in:\n%s" % (pattern, self.output()))

    def output(self):
        with self.cond:
            return "".join(l for l in self.lines if l is not None)

    def count(self, text):
        with self.cond:
            return sum(1 for l in self.lines if l is not None and text in l)

    def test_disk_full_then_recovers(self):
        self.proc = subprocess.Popen(
            [BIN, "--set", "data.dir=" + self.data, "--set", "listeners=127.0.0.1:0",
             "--set", "metrics.listener=127.0.0.1:0", "--set", "offsets.topic.num.partitions=1",
             "--set", "topics=t:1", "--set", "offsets.topic.compression.codec=none"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        mport = int(self.wait_line(r"serving http://127\.0\.0\.1:(\d+)/metrics").group(1))
        port = int(self.wait_line(r"advertised as [^ ]+:(\d+),").group(1))
        self.wait_line(r"all 1 partitions loaded")
        conn = Conn(port)
        self.assertEqual(conn.commit(1), 0, self.output())
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
        print("disk full: %d of %d commits failed, %d log write failed lines" % (failed, ATTEMPTS, self.count("log write failed")))
        self.assertGreater(failed, ATTEMPTS // 2, self.output())
        self.assertIsNone(self.proc.poll(), self.output())
        lines = self.count("log write failed")
        self.assertGreaterEqual(lines, 1, self.output())
        self.assertLessEqual(lines, MAX_WRITE_FAILED_LINES, self.output())
        # The partition is failed or reloading now: not ready.
        status, body = http_status(mport, "/readyz")
        self.assertEqual(status, 503, body)
        self.assertEqual(http_status(mport, "/healthz")[0], 200)

        # The disk recovers: the partition comes back without a restart.
        os.unlink(filler)
        for i in range(RECOVERY_TRIES):
            if conn.commit(10000 + i) == 0:
                acked = 10000 + i
                break
            with self.cond:  # wait for the next log line (a reload) or a short while
                self.cond.wait(0.05)
        else:
            self.fail("no commit acknowledged after the disk recovered:\n" + self.output())
        for _ in range(RECOVERY_TRIES):
            status, body = http_status(mport, "/readyz")
            if status == 200:
                break
            conn.commit(acked)  # a successful write is what proves the disk writes
            with self.cond:
                self.cond.wait(0.05)
        self.assertEqual(status, 200, body)
        self.assertEqual(conn.fetch(), (acked, 0))
        conn.close()
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(IO_TIMEOUT_S), 0, self.output())


if __name__ == "__main__":
    unittest.main(verbosity=2)
