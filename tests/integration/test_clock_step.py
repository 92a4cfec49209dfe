#!/usr/bin/python3
"""test_clock_step: stepping kcoord's wall clock neither expels a live member nor keeps a dead one.

NTP, a resumed VM or an operator can step the wall clock by an hour. Group timers must run on
the monotonic clock: a step forward must not expire every session at once, a step back must not
keep a dead member for an hour.

kcoord (build/kcoord or $KC_TEST_BIN) runs under libfaketime (LD_PRELOAD) with
FAKETIME_DONT_FAKE_MONOTONIC=1, so only its wall clock is faked, read from a timestamp file at
every call (FAKETIME_NO_CACHE=1) that the test rewrites to step it. Sessions are 6 s
(group.min.session.timeout.ms), the initial rebalance delay 0.

For each step (+1 h then -1 h, two hours back from there, on one kcoord; -1 h alone on another):
- group "live-N" has one member that heartbeats (Heartbeat v1) every HEARTBEAT_S on its own
  thread; group "dead-N" has one member that stops once it has joined (JoinGroup v5 with the
  KIP-394 member id round trip, SyncGroup v3);
- the wall clock is stepped;
- the dead member must be gone (DescribeGroups v0 shows no members) within DEAD_TIMEOUT_S: its
  session ends 6 s of monotonic time after its join; a wall-clock timer would keep it an hour;
- every heartbeat of the live member must be answered 0 throughout and once more after the dead
  member is gone (by then a wall-clock timer stepped forward would have expelled it too).
kcoord must be alive at the end and must have logged no ERROR.

Every wait is for an event and bounded; every process started is killed on the way out, and on
a failure the daemon's log is printed.
"""
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest

BIN = os.environ.get("KC_TEST_BIN", "build/kcoord")
FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/faketime/libfaketimeMT.so.1"]
SESSION_MS = 6000
HEARTBEAT_S = 0.5
DEAD_TIMEOUT_S = 30
START_TIMEOUT_S = 30
IO_TIMEOUT_S = 10

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, DESCRIBE_GROUPS = 11, 14, 12, 15
MEMBER_ID_REQUIRED = 79


# ---- a minimal Kafka client: non-flexible versions, request header v1, response header v0 ---

def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def bytes_(b):
    return i32(-1) if b is None else i32(len(b)) + b


class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

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

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def bytes_(self):
        n = self.i32()
        return None if n < 0 else self.take(n)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        head = i16(key) + i16(version) + i32(self.corr) + string("test-clock-step")
        self.s.sendall(i32(len(head) + len(body)) + head + body)
        size = struct.unpack(">i", self._exact(4))[0]
        r = Reader(self._exact(size))
        got = r.i32()
        if got != self.corr:
            raise ValueError("correlation id %d, expected %d" % (got, self.corr))
        return r

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError("connection closed")
            buf += chunk
        return buf

    def close(self):
        self.s.close()


def join(conn, group):
    """Join group as its only member: (generation, member id)."""
    meta = i16(0) + i32(1) + string("t") + bytes_(None)  # ConsumerProtocol subscription v0
    member = ""
    for _ in range(3):
        body = (string(group) + i32(SESSION_MS) + i32(SESSION_MS) + string(member) +
                string(None) + string("consumer") + i32(1) + string("range") + bytes_(meta))
        r = conn.call(JOIN_GROUP, 5, body)
        r.i32()  # throttle
        err, gen, _proto, _leader, member = r.i16(), r.i32(), r.string(), r.string(), r.string()
        if err == MEMBER_ID_REQUIRED:
            continue
        if err != 0:
            raise AssertionError("JoinGroup %s: error %d" % (group, err))
        break
    else:
        raise AssertionError("JoinGroup %s: no member id after 3 tries" % group)
    body = (string(group) + i32(gen) + string(member) + string(None) +
            i32(1) + string(member) + bytes_(b""))
    r = conn.call(SYNC_GROUP, 3, body)
    r.i32()
    err = r.i16()
    if err != 0:
        raise AssertionError("SyncGroup %s: error %d" % (group, err))
    return gen, member


def heartbeat(conn, group, gen, member):
    r = conn.call(HEARTBEAT, 1, string(group) + i32(gen) + string(member))
    r.i32()  # throttle
    return r.i16()


def members_of(conn, group):
    """The member ids DescribeGroups v0 lists for group."""
    r = conn.call(DESCRIBE_GROUPS, 0, i32(1) + string(group))
    out = []
    for _ in range(r.i32()):
        err, _gid, _state, _ptype, _proto = r.i16(), r.string(), r.string(), r.string(), r.string()
        if err != 0:
            raise AssertionError("DescribeGroups %s: error %d" % (group, err))
        for _ in range(r.i32()):
            out.append(r.string())
            r.string(), r.string(), r.bytes_(), r.bytes_()
    return out


# ---- the daemon -----------------------------------------------------------------------------

def quiet_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("KCOORD_")}


def extra_sets():
    """No metrics listener, in a build that has one (its default port may be taken)."""
    out = subprocess.run([BIN, "--print-config"], stdout=subprocess.PIPE, text=True,
                         env=quiet_env(), check=True).stdout
    return ["--set", "metrics.listener="] if re.search(r"^metrics\.listener=", out, re.M) else []


class Kcoord:
    """kcoord on a free port with its wall clock read from `clock_file`."""

    def __init__(self, data_dir, lib, clock_file):
        args = [BIN, "--set", "listeners=127.0.0.1:0", "--set", "data.dir=" + data_dir,
                "--set", "topics=t:4", "--set", "offsets.topic.num.partitions=4",
                "--set", "group.initial.rebalance.delay.ms=0",
                "--set", "group.min.session.timeout.ms=%d" % SESSION_MS] + extra_sets()
        env = quiet_env()
        env.update({"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": clock_file,
                    "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                    "NO_FAKE_STAT": "1",
                    # An ASan build must not insist on coming first in the preload list.
                    "ASAN_OPTIONS": env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"})
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     env=env)
        self.log = ""
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        m = self.wait_log(r"listening on 127\.0\.0\.1:(\d+)")
        self.port = int(m.group(1))
        self.wait_log(r"all \d+ partitions loaded")

    def _read(self):
        for raw in self.proc.stderr:
            with self.cv:
                self.log += raw.decode(errors="replace")
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def wait_log(self, regex, timeout=START_TIMEOUT_S):
        pat = re.compile(regex)
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                m = pat.search(self.log)
                if m:
                    return m
                if self.proc.poll() is not None:
                    raise AssertionError("kcoord exited (status %s) before logging /%s/"
                                         % (self.proc.returncode, regex))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("kcoord logged no /%s/ within %d s" % (regex, timeout))
                self.cv.wait(min(left, 0.5))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)
        if not self.reader.is_alive():
            self.proc.stderr.close()


class Heartbeater(threading.Thread):
    """Heartbeats one member every HEARTBEAT_S until stopped; keeps every answer."""

    def __init__(self, port, group, gen, member):
        super().__init__(daemon=True)
        self.conn = Conn(port)
        self.args = (group, gen, member)
        self.stop = threading.Event()
        self.answers = []
        self.failure = None

    def run(self):
        try:
            while not self.stop.wait(HEARTBEAT_S):
                self.answers.append(heartbeat(self.conn, *self.args))
        except Exception as e:  # reported by the test
            self.failure = e
        finally:
            self.conn.close()


def find_faketime():
    for lib in FAKETIME_LIBS:
        if os.path.exists(lib):
            return lib
    return None


class ClockStepTest(unittest.TestCase):
    def setUp(self):
        self.lib = find_faketime()
        self.assertIsNotNone(self.lib, "libfaketime is not installed (scripts/deps installs it)")
        self.dir = tempfile.mkdtemp(prefix="kc-clock-step-")
        self.clock = os.path.join(self.dir, "faketime.rc")
        self.set_clock("+0")
        self.kc = Kcoord(os.path.join(self.dir, "data"), self.lib, self.clock)

    def tearDown(self):
        self.kc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def set_clock(self, offset):
        tmp = self.clock + ".tmp"
        with open(tmp, "w") as f:
            f.write(offset + "\n")
        os.replace(tmp, self.clock)

    def step(self, n, offset):
        """One step of the wall clock to `offset` with a live and a dead member."""
        conn = Conn(self.kc.port)
        try:
            live = join(conn, "live-%d" % n)
            hb = Heartbeater(self.kc.port, "live-%d" % n, *live)
            hb.start()
            dead_conn = Conn(self.kc.port)
            join(dead_conn, "dead-%d" % n)
            dead_conn.close()
            self.assertEqual(len(members_of(conn, "dead-%d" % n)), 1)
            deadline = time.monotonic() + IO_TIMEOUT_S
            while not hb.answers and hb.failure is None and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(hb.answers[:1], [0], "no heartbeat answered before the step")
            self.set_clock(offset)
            deadline = time.monotonic() + DEAD_TIMEOUT_S
            while members_of(conn, "dead-%d" % n):
                self.assertLess(time.monotonic(), deadline,
                                "step %s: the dead member is still there after %d s"
                                % (offset, DEAD_TIMEOUT_S))
                self.assertIsNone(self.kc.proc.poll(), "kcoord exited")
                time.sleep(0.2)
            hb.stop.set()
            hb.join(timeout=IO_TIMEOUT_S)
            self.assertIsNone(hb.failure, "step %s: heartbeats failed: %r" % (offset, hb.failure))
            self.assertGreater(len(hb.answers), 0)
            self.assertEqual(set(hb.answers), {0},
                             "step %s: the live member's heartbeats were answered %s"
                             % (offset, hb.answers))
            self.assertEqual(heartbeat(conn, "live-%d" % n, *live), 0)
            self.assertEqual(members_of(conn, "live-%d" % n), [live[1]])
        finally:
            conn.close()

    def steps(self, *offsets):
        try:
            for n, offset in enumerate(offsets):
                self.step(n, offset)
            self.assertIsNone(self.kc.proc.poll(), "kcoord exited")
            self.assertNotIn("ERROR", self.kc.log)
        except Exception:
            print(self.kc.log)
            raise

    def test_step_forward_then_back(self):
        self.steps("+1h", "-1h")

    def test_step_back(self):
        self.steps("-1h")


if __name__ == "__main__":
    unittest.main()
