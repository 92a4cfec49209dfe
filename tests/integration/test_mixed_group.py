#!/usr/bin/python3
"""test_mixed_group: a group of a real kcoord with classic members (confluent-kafka's
librdkafka with group.protocol=classic, the range assignor) and a consumer-protocol member
(group.protocol=consumer) at once: Kafka 4.4's online upgrade and downgrade.

confluent-kafka comes from the compatibility suite's virtual environment, as in
test_consumer_protocol.py (whose daemon wrapper and wait helper this file reuses): run by any
python3, this script makes or updates that venv and runs itself again with its python. The
classic members run the same librdkafka (2.16) with the classic protocol.

- two classic members split t; a consumer-protocol member joins: the group is upgraded and
  settles with two partitions each; at every sample no partition is owned by two members;
- the consumer-protocol member closes: the group is downgraded and the classic members own
  every partition again, never one twice;
- the same with classic members of the system's librdkafka (Debian's 2.0.2, through its
  python3-confluent-kafka, each in a child process run by /usr/bin/python3).

Every wait is bounded; on a failure the daemon's log is printed.
"""
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import confluent_kafka  # noqa: F401
except ImportError:
    if os.environ.get("KC_MIXED_GROUP_REEXEC"):
        sys.exit("test_mixed_group: the compat venv's python has no confluent-kafka")
    import subprocess
    try:
        venv_python = subprocess.run([os.path.join(ROOT, "scripts", "compat-venv")],
                                     check=True, stdout=subprocess.PIPE,
                                     text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("test_mixed_group: FAILED: scripts/compat-venv could not provide "
                 "confluent-kafka (%s)" % (e,))
    os.environ["KC_MIXED_GROUP_REEXEC"] = "1"
    os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])

_spec = importlib.util.spec_from_file_location(
    "test_consumer_protocol", os.path.join(ROOT, "tests", "integration",
                                           "test_consumer_protocol.py"))
cp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cp)

from confluent_kafka import Consumer  # noqa: E402

PARTITIONS = cp.PARTITIONS
TOPIC = cp.TOPIC


class Member:
    """A consumer of either protocol polling in its own thread; owned follows its rebalance
    callbacks. Every change is checked by the test's watcher."""

    def __init__(self, port, protocol, watcher):
        conf = {
            "bootstrap.servers": "127.0.0.1:%d" % port,
            "group.id": "g",
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if protocol == "classic":
            conf.update({"partition.assignment.strategy": "range",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
        self.protocol = protocol
        self.watcher = watcher
        self.lock = threading.Lock()
        self.owned = set()
        self.c = Consumer(conf)
        self.c.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke,
                         on_lost=self._on_revoke)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _on_assign(self, consumer, partitions):
        with self.lock:
            self.owned |= {(p.topic, p.partition) for p in partitions}
        self.watcher()

    def _on_revoke(self, consumer, partitions):
        with self.lock:
            self.owned -= {(p.topic, p.partition) for p in partitions}
        self.watcher()

    def _run(self):
        while not self.stopping.is_set():
            self.c.poll(0.1)

    def assigned(self):
        with self.lock:
            return set(self.owned)

    def close(self):
        self.stopping.set()
        self.thread.join(10)
        self.c.close()


# A classic member in a process of its own: Debian's python3-confluent-kafka over the system
# librdkafka (2.0.2, which knows only the classic protocol), run by /usr/bin/python3. It prints
# "assign p,p" / "revoke p,p" as its rebalance callbacks run, and closes when stdin closes.
DEBIAN_MEMBER = r"""
import sys, threading
from confluent_kafka import Consumer
port = sys.argv[1]
c = Consumer({"bootstrap.servers": "127.0.0.1:" + port, "group.id": "g",
              "enable.auto.commit": False, "partition.assignment.strategy": "range",
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
def say(kind, ps):
    print(kind, ",".join(str(p.partition) for p in ps), flush=True)
c.subscribe(["t"], on_assign=lambda c, ps: say("assign", ps),
            on_revoke=lambda c, ps: say("revoke", ps))
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
while not stop.is_set():
    c.poll(0.1)
c.close()
"""


class DebianMember:
    """A classic member run by the system's librdkafka in a child process."""

    def __init__(self, port, watcher):
        import subprocess
        self.protocol = "classic"
        self.watcher = watcher
        self.lock = threading.Lock()
        self.owned = set()
        self.p = subprocess.Popen(["/usr/bin/python3", "-c", DEBIAN_MEMBER, str(port)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.p.stdout:
            kind, _, parts = line.strip().partition(" ")
            ps = {(TOPIC, int(x)) for x in parts.split(",") if x}
            with self.lock:
                if kind == "assign":
                    self.owned |= ps
                else:
                    self.owned -= ps
            self.watcher()

    def assigned(self):
        with self.lock:
            return set(self.owned)

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(20)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
        self.thread.join(10)


class MixedGroupTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-mixed-")
        self.kc = cp.Kcoord(self.dir, cp.kcoord.free_port(), ["group.initial.rebalance.delay.ms=0"])
        self.members = []
        self.twice = []  # partitions seen owned by two members at once
        self.check_lock = threading.Lock()

    def tearDown(self):
        for m in self.members:
            try:
                m.close()
            except Exception:  # noqa: BLE001 - a member may already be closed
                pass
        rc = self.kc.stop()
        failed = not getattr(self._outcome, "success", True)
        if rc != 0 or failed or os.environ.get("KC_TEST_VERBOSE"):
            sys.stderr.write(self.kc.log.decode(errors="replace")[-20000:])
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertEqual(rc, 0, "kcoord exit status")

    def check(self):
        """No partition owned by two members: checked at every callback and every sample."""
        with self.check_lock:
            seen = {}
            for m in list(self.members):
                for p in m.assigned():
                    if p in seen:
                        self.twice.append(p)
                    seen[p] = m

    def member(self, protocol):
        if protocol == "debian":
            m = DebianMember(self.kc.port, self.check)
        else:
            m = Member(self.kc.port, protocol, self.check)
        self.members.append(m)
        return m

    def wait_split(self, ms, sizes):
        def ok():
            self.check()
            owned = [m.assigned() for m in ms]
            union = set().union(*owned)
            return (sorted(len(o) for o in owned) == sorted(sizes)
                    and union == cp.all_partitions())
        cp.wait_until("the members own %s partitions" % (sizes,), ok, timeout=60)

    def test_upgrade_then_downgrade(self):
        a, b = self.member("classic"), self.member("classic")
        self.wait_split([a, b], [3, 3])
        c = self.member("consumer")
        self.wait_split([a, b, c], [2, 2, 2])
        self.assertIn(b"converted the classic group", self.kc.log)
        time.sleep(3)  # a few more heartbeats: it stays split
        self.wait_split([a, b, c], [2, 2, 2])
        self.members.remove(c)
        c.close()
        self.wait_split([a, b], [3, 3])
        self.assertIn(b"converted the consumer group", self.kc.log)
        self.assertEqual(self.twice, [], "partitions owned twice")

    def test_debian_librdkafka_classic_members(self):
        """The same with classic members of the system's librdkafka 2.0.2."""
        a, b = self.member("debian"), self.member("debian")
        self.wait_split([a, b], [3, 3])
        c = self.member("consumer")
        self.wait_split([a, b, c], [2, 2, 2])
        self.assertIn(b"converted the classic group", self.kc.log)
        self.members.remove(c)
        c.close()
        self.wait_split([a, b], [3, 3])
        self.assertIn(b"converted the consumer group", self.kc.log)
        self.assertEqual(self.twice, [], "partitions owned twice")


if __name__ == "__main__":
    unittest.main(verbosity=2)
