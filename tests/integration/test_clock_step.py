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
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import calls, kcoord  # noqa: E402
from tests.support.wire import Conn  # noqa: E402

FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/faketime/libfaketimeMT.so.1"]
SESSION_MS = 6000
HEARTBEAT_S = 0.5
DEAD_TIMEOUT_S = 30
IO_TIMEOUT_S = 10



# ---- a minimal Kafka client: non-flexible versions, request header v1, response header v0 ---

def connect(port):
    return Conn(port, "test-clock-step", timeout=IO_TIMEOUT_S)


def join(conn, group):
    """Join group as its only member: (generation, member id)."""
    gen, _leader, member = calls.join_classic(conn, group, SESSION_MS, "t")
    return gen, member


def heartbeat(conn, group, gen, member):
    return conn.ask("Heartbeat", 1, group_id=group, generation_id=gen,
                    member_id=member).error_code


def members_of(conn, group):
    """The member ids DescribeGroups v0 lists for group."""
    out = []
    for g in conn.ask("DescribeGroups", 0, groups=[group]).groups:
        if g.error_code != 0:
            raise AssertionError("DescribeGroups %s: error %d" % (group, g.error_code))
        out += [m.member_id for m in g.members]
    return out


# ---- the daemon -----------------------------------------------------------------------------

def start_kcoord(data_dir, lib, clock_file):
    """kcoord on a free port with its wall clock read from `clock_file`."""
    env = {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": clock_file,
           "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
           "NO_FAKE_STAT": "1",
           # An ASan build must not insist on coming first in the preload list.
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    return kcoord.Kcoord(data_dir, "topics=t:4", "offsets.topic.num.partitions=4",
                         "group.initial.rebalance.delay.ms=0",
                         "group.min.session.timeout.ms=%d" % SESSION_MS,
                         *kcoord.no_metrics_listener(), env=env)


class Heartbeater(threading.Thread):
    """Heartbeats one member every HEARTBEAT_S until stopped; keeps every answer."""

    def __init__(self, port, group, gen, member):
        super().__init__(daemon=True)
        self.conn = connect(port)
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
        self.kc = start_kcoord(os.path.join(self.dir, "data"), self.lib, self.clock)

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
        conn = connect(self.kc.port)
        try:
            live = join(conn, "live-%d" % n)
            hb = Heartbeater(self.kc.port, "live-%d" % n, *live)
            hb.start()
            dead_conn = connect(self.kc.port)
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
