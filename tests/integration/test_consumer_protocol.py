#!/usr/bin/python3
"""test_consumer_protocol: KIP-848 consumer groups of a real kcoord, joined by confluent-kafka
(librdkafka 2.16) with group.protocol=consumer.

confluent-kafka comes from the compatibility suite's virtual environment (scripts/compat-venv,
in ${XDG_CACHE_HOME:-$HOME/.cache}/kcoord/venv, tests/compat/requirements.txt pins 2.16.1). Run
by any python3, this script makes or updates that venv and runs itself again with its python;
when the venv cannot be made (no network, no python3-venv) it fails with a message saying so:
it never skips.

Each test starts build/kcoord (or $KC_TEST_BIN) on a free port with topic t (6 partitions),
a 1 s heartbeat interval and a 6 s session timeout, and stops it with SIGTERM, requiring exit
status 0. Each consumer polls in its own thread and records its rebalance callbacks.

- three members split t two partitions each; a fourth joins and only the one partition that
  moves to it is revoked (the others see no callback at all);
- a member killed with SIGKILL is replaced after the session timeout, not before;
- a static member that closes (a temporary leave) and comes back with the same instance id
  gets its partitions back, and the other member never sees them;
- commits carry the member epoch (OffsetCommit v9+) and read back; the admin client describes
  the group through ConsumerGroupDescribe and lists it as a consumer group;
- kcoord restarts under a stable group: the members carry on, nothing is revoked or assigned.

Every wait is bounded; on a failure the daemon's log is printed.
"""
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WANT = (2, 12)  # the first confluent-kafka whose librdkafka speaks KIP-848 (GA)


def have_client():
    try:
        import confluent_kafka
    except ImportError:
        return False
    v = confluent_kafka.version()  # a string, or (string, int) in old releases
    v = v[0] if isinstance(v, tuple) else v
    return tuple(int(x) for x in v.split(".")[:2]) >= WANT


if not have_client():
    if os.environ.get("KC_CONSUMER_PROTOCOL_REEXEC"):
        sys.exit("test_consumer_protocol: the compat venv's python has no confluent-kafka >= "
                 "%d.%d" % WANT)
    try:
        venv_python = subprocess.run([os.path.join(ROOT, "scripts", "compat-venv")],
                                     check=True, stdout=subprocess.PIPE,
                                     text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("test_consumer_protocol: FAILED: confluent-kafka >= %d.%d is needed and "
                 "scripts/compat-venv could not provide it (%s); run scripts/compat-venv "
                 "(it needs network access to PyPI and python3-venv)" % (WANT + (e,)))
    os.environ["KC_CONSUMER_PROTOCOL_REEXEC"] = "1"
    os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import kcoord  # noqa: E402
TOPIC = "t"
PARTITIONS = 6
WAIT_S = 40
SESSION_MS = 6000
SETTINGS = [
    "topics=%s:%d" % (TOPIC, PARTITIONS),
    "group.consumer.heartbeat.interval.ms=1000",
    "group.consumer.min.heartbeat.interval.ms=1000",
    "group.consumer.session.timeout.ms=%d" % SESSION_MS,
    "group.consumer.min.session.timeout.ms=%d" % SESSION_MS,
]


class Kcoord:
    """The daemon on a fixed port and data directory (so that it can be restarted in place):
    a tests.support Kcoord per run; log is the output of every run so far, as bytes."""

    def __init__(self, data_dir, port, extra=()):
        self.dir = data_dir
        self.port = port
        self.extra = list(extra)
        self.runs = []
        self.proc = None
        self.start()

    def start(self):
        self.proc = kcoord.Kcoord(self.dir, "listeners=127.0.0.1:%d" % self.port,
                                  "log.level=debug", *(SETTINGS + self.extra))
        self.runs.append(self.proc)

    @property
    def log(self):
        return "".join(run.output() for run in self.runs).encode()

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc is None:
            return 0
        rc = self.proc.stop()
        self.proc = None
        return rc


class Member:
    """A confluent-kafka consumer of the KIP-848 protocol polling in its own thread; its
    rebalance callbacks are recorded in self.events as ("assign" | "revoke", {(topic, p)})."""

    def __init__(self, port, group="g", instance=None, topics=(TOPIC,)):
        conf = {
            "bootstrap.servers": "127.0.0.1:%d" % port,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if instance:
            conf["group.instance.id"] = instance
        self.lock = threading.Lock()
        self.events = []
        self.owned = set()
        self.errors = []
        self.c = Consumer(conf)
        self.c.subscribe(list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke,
                         on_lost=self._on_revoke)
        self.calls = queue.Queue()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _on_assign(self, consumer, partitions):
        with self.lock:
            got = {(p.topic, p.partition) for p in partitions}
            self.events.append(("assign", got))
            self.owned |= got

    def _on_revoke(self, consumer, partitions):
        with self.lock:
            gone = {(p.topic, p.partition) for p in partitions}
            self.events.append(("revoke", gone))
            self.owned -= gone

    def _run(self):
        while not self.stopping.is_set():
            msg = self.c.poll(0.1)
            if msg is not None and msg.error():
                with self.lock:
                    self.errors.append(msg.error())
            while not self.calls.empty():
                fn, done = self.calls.get()
                try:
                    done.put((True, fn(self.c)))
                except Exception as e:  # noqa: BLE001 - handed to the caller
                    done.put((False, e))

    def assigned(self):
        with self.lock:
            return set(self.owned)

    def clear_events(self):
        with self.lock:
            self.events = []

    def revoked(self):
        with self.lock:
            return [e for kind, e in self.events if kind == "revoke" and e]

    def assigned_events(self):
        with self.lock:
            return [e for kind, e in self.events if kind == "assign" and e]

    def call(self, fn):
        """Run fn(consumer) on the polling thread (the consumer is used from one thread only)
        and return its result."""
        done = queue.Queue()
        self.calls.put((fn, done))
        ok, value = done.get(timeout=WAIT_S)
        if not ok:
            raise value
        return value

    def close(self):
        self.stopping.set()
        self.thread.join(10)
        self.c.close()


def wait_until(what, cond, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting until " + what)


def all_partitions():
    return {(TOPIC, p) for p in range(PARTITIONS)}


class ConsumerProtocolTest(unittest.TestCase):
    EXTRA = []  # more settings for kcoord

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-848-")
        self.kc = Kcoord(self.dir, kcoord.free_port(), self.EXTRA)
        self.members = []

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

    def member(self, **kw):
        m = Member(self.kc.port, **kw)
        self.members.append(m)
        return m

    def wait_split(self, ms, sizes):
        """Until the members own every partition of t between them, in these sizes."""
        def ok():
            owned = [m.assigned() for m in ms]
            union = set().union(*owned)
            return (sorted(len(o) for o in owned) == sorted(sizes) and union == all_partitions()
                    and sum(len(o) for o in owned) == PARTITIONS)
        wait_until("the members own %s partitions" % (sizes,), ok)

    def test_three_then_fourth_only_moved_partitions_revoked(self):
        ms = [self.member() for _ in range(3)]
        self.wait_split(ms, [2, 2, 2])
        before = [m.assigned() for m in ms]
        for m in ms:
            m.clear_events()
        fourth = self.member()
        self.wait_split(ms + [fourth], [2, 2, 1, 1])
        time.sleep(2)  # two more heartbeats: nothing else may move
        self.wait_split(ms + [fourth], [2, 2, 1, 1])
        revoked = [p for m in ms for e in m.revoked() for p in e]
        self.assertEqual(len(revoked), 1, "exactly one partition moves: %r" % revoked)
        self.assertEqual(fourth.assigned(), set(revoked))
        for m, b in zip(ms, before):
            if not m.revoked():
                self.assertEqual(m.events, [], "a member that keeps its partitions sees nothing")
                self.assertEqual(m.assigned(), b)
            else:
                self.assertEqual(m.assigned(), b - set(revoked))
                self.assertEqual(m.assigned_events(), [])

        # The admin client describes it with ConsumerGroupDescribe and lists it.
        admin = AdminClient({"bootstrap.servers": "127.0.0.1:%d" % self.kc.port})
        desc = admin.describe_consumer_groups(["g"])["g"].result(timeout=WAIT_S)
        self.assertEqual(desc.type.name, "CONSUMER")
        self.assertEqual(desc.state.name, "STABLE")
        self.assertEqual(desc.partition_assignor, "uniform")
        self.assertEqual(len(desc.members), 4)
        described = set()
        for md in desc.members:
            for tp in md.assignment.topic_partitions:
                described.add((tp.topic, tp.partition))
        self.assertEqual(described, all_partitions())
        listed = admin.list_consumer_groups().result(timeout=WAIT_S)
        groups = {g.group_id: g for g in listed.valid}
        self.assertIn("g", groups)
        self.assertEqual(groups["g"].type.name, "CONSUMER")

    def test_killed_member_replaced_after_session_timeout(self):
        code = ("import sys, time\n"
                "from confluent_kafka import Consumer\n"
                "c = Consumer({'bootstrap.servers': '127.0.0.1:%d', 'group.id': 'g',\n"
                "              'group.protocol': 'consumer', 'enable.auto.commit': False})\n"
                "c.subscribe(['%s'])\n"
                "while True:\n"
                "    c.poll(0.1)\n" % (self.kc.port, TOPIC))
        victim = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
        try:
            ms = [self.member(), self.member()]
            wait_until("the three members split t",
                       lambda: [len(m.assigned()) for m in ms] == [2, 2]
                       and not (ms[0].assigned() & ms[1].assigned()))
            time.sleep(1.5)
            kept = [len(m.assigned()) for m in ms]
            self.assertEqual(kept, [2, 2])
            victim.kill()
            killed = time.monotonic()
            self.wait_split(ms, [3, 3])
            took = time.monotonic() - killed
            # Its session started at its last heartbeat (at most one interval before the kill).
            self.assertGreaterEqual(took, SESSION_MS / 1000 - 1.5, "replaced too early")
            self.assertLess(took, SESSION_MS / 1000 + 10, "replaced too late")
            self.assertIn(b"the member session expired", self.kc.log)
        finally:
            victim.kill()
            victim.wait()

    def test_static_member_restart_gets_its_partitions_back(self):
        a = self.member(instance="i1")
        b = self.member()
        self.wait_split([a, b], [3, 3])
        mine = a.assigned()
        b.clear_events()
        a.close()  # a static member's close is a temporary leave (epoch -2)
        self.members.remove(a)
        wait_until("the temporary leave", lambda: b"left temporarily" in self.kc.log)
        time.sleep(2.5)  # two heartbeats of b: its partitions do not move
        self.assertEqual(len(b.assigned()), 3)
        self.assertEqual(b.events, [])
        a2 = self.member(instance="i1")
        wait_until("the static member gets its partitions back", lambda: a2.assigned() == mine)
        time.sleep(1.5)
        self.assertEqual(b.events, [], "the other member saw no rebalance")
        self.assertEqual(a2.assigned(), mine)
        self.assertIn(b"rejoins as", self.kc.log)

    def test_commits_with_member_epoch(self):
        m = self.member()
        wait_until("the member owns t", lambda: m.assigned() == all_partitions())
        offsets = [TopicPartition(TOPIC, p, 10 + p) for p in range(PARTITIONS)]
        m.call(lambda c: c.commit(offsets=offsets, asynchronous=False))
        got = m.call(lambda c: c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                           timeout=20))
        self.assertEqual(sorted((tp.partition, tp.offset) for tp in got),
                         [(p, 10 + p) for p in range(PARTITIONS)])
        # Another member of the group reads them too, once it has partitions.
        n = self.member()
        self.wait_split([m, n], [3, 3])
        got = n.call(lambda c: c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                           timeout=20))
        self.assertEqual(sorted((tp.partition, tp.offset) for tp in got),
                         [(p, 10 + p) for p in range(PARTITIONS)])
        self.assertNotIn(b"STALE_MEMBER_EPOCH", self.kc.log)

    def test_restart_without_reassignment(self):
        ms = [self.member(), self.member()]
        self.wait_split(ms, [3, 3])
        time.sleep(1.5)
        before = [m.assigned() for m in ms]
        for m in ms:
            m.clear_events()
        self.assertEqual(self.kc.stop(), 0)
        self.kc.start()
        self.assertIn(b"loaded 1 consumer groups with 2 members", self.kc.log)
        # Several heartbeat intervals after the restart nothing has moved.
        time.sleep(SESSION_MS / 1000 + 2)
        for m, b in zip(ms, before):
            self.assertEqual(m.assigned(), b)
            self.assertEqual(m.events, [], "no revocation, no assignment")
        admin = AdminClient({"bootstrap.servers": "127.0.0.1:%d" % self.kc.port})
        desc = admin.describe_consumer_groups(["g"])["g"].result(timeout=WAIT_S)
        self.assertEqual(desc.state.name, "STABLE")
        self.assertEqual(len(desc.members), 2)



class OffloadedAssignmentTest(ConsumerProtocolTest):
    """Every scenario again with each target assignment computed on a worker thread
    (group.consumer.assignor.offload.threshold=0): a member then learns of its new target at
    the heartbeat after the one that caused it, and the group is Assigning meanwhile."""

    EXTRA = ["group.consumer.assignor.offload.threshold=0"]

    def tearDown(self):
        offloaded = b"goes off the loop" in self.kc.log
        super().tearDown()
        self.assertTrue(offloaded, "an assignment was computed off the loop")


if __name__ == "__main__":
    unittest.main(verbosity=2)
