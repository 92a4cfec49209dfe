#!/usr/bin/python3
"""test_group_clients: consumer groups of a real kcoord, joined by kcat and kafka-python.

Starts build/kcoord (or $KC_TEST_BIN) on a free port for each test (topic t4 with 4
partitions, no initial rebalance delay), and stops it with SIGTERM, requiring exit status 0.

- kcat 1.7.1 in balanced-consumer mode (-G) prints "% Group G rebalanced (memberid M):
  assigned: t4 [0], ..." (and "revoked: ...") on stderr from its rebalance callback: two
  kcats split t4, and the one left takes everything back when the other is stopped with
  SIGTERM. Both must exit 0 on a signal.
- kafka-python (Debian's python3-kafka 2.0.2) KafkaConsumer with group_id: subscribe and poll,
  a second member splits the partitions, commit / committed, offsets that outlive the members,
  and the admin client's view of the group. KafkaConsumer is not thread-safe and blocks in
  poll() while it rejoins, so each consumer lives in its own thread (Member) and everything it
  does runs there.

Every wait is bounded; on a failure the daemon's log and the clients' output are printed.
"""
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import kcoord  # noqa: E402

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

TOPIC = "t4"
PARTITIONS = 4
WAIT_S = 30


class Kcoord(kcoord.ScratchKcoord):
    """kcoord on a free port in a data directory of its own (tests/support), at log level debug."""

    def __init__(self, *sets):
        super().__init__("log.level=debug", *sets)


class Kcat:
    """kcat -G GROUP t4, its stdout and stderr read line by line by a thread."""

    def __init__(self, bootstrap, group, name):
        self.name = name
        args = ["kcat", "-b", bootstrap, "-G", group,
                "-X", "client.id=" + name,
                "-X", "session.timeout.ms=6000",
                "-X", "heartbeat.interval.ms=500",
                TOPIC]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.lines = []
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.cv:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)  # end of output
            self.cv.notify_all()

    def wait_line(self, regex, start=0, timeout=WAIT_S):
        """The first line at index >= start matching regex: (index, match). Fails after timeout
        or when kcat exits first."""
        pat = re.compile(regex)
        deadline = time.monotonic() + timeout
        with self.cv:
            i = start
            while True:
                while i < len(self.lines):
                    line = self.lines[i]
                    if line is None:
                        raise AssertionError("%s exited (status %s) before printing /%s/"
                                             % (self.name, self.proc.poll(), regex))
                    m = pat.search(line)
                    if m:
                        return i, m
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%s printed no /%s/ within %d s"
                                         % (self.name, regex, timeout))
                self.cv.wait(left)

    def stop(self, sig):
        """Send sig and wait for the exit: the exit status, or None if it had to be killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode

    def output(self):
        with self.cv:
            return "\n".join(l for l in self.lines if l is not None)


REBALANCED = r"^% Group (\S+) rebalanced \(memberid (\S+)\): (assigned|revoked): (.*)$"


def parse_partitions(text):
    """{partition} from kcat's "t4 [0], t4 [1]" list; fails on another topic."""
    found = re.findall(r"(\S+) \[(\d+)\]", text)
    for topic, _ in found:
        if topic != TOPIC:
            raise AssertionError("kcat names topic %s in %r" % (topic, text))
    return {int(p) for _, p in found}


class Member:
    """A KafkaConsumer that lives in its own thread, polling; calls run there via call()."""

    def __init__(self, bootstrap, group, client_id, subscribe=True):
        self.client_id = client_id
        self.calls = queue.Queue()
        self.error = None
        self.closed = False
        self.started = threading.Event()
        self.consumer = None
        self.assigned = frozenset()  # partitions held, published by the thread after each poll
        self.thread = threading.Thread(target=self._run, args=(bootstrap, group, subscribe),
                                       daemon=True)
        self.thread.start()
        if not self.started.wait(WAIT_S):
            raise AssertionError("%s did not start" % client_id)
        if self.error is not None:
            raise AssertionError("%s: %r" % (client_id, self.error))

    def _run(self, bootstrap, group, subscribe):
        try:
            self.consumer = KafkaConsumer(
                bootstrap_servers=bootstrap, group_id=group, client_id=self.client_id,
                enable_auto_commit=False, auto_offset_reset="earliest",
                session_timeout_ms=6000, heartbeat_interval_ms=500,
                api_version_auto_timeout_ms=10000, request_timeout_ms=15000)
            if subscribe:
                self.consumer.subscribe([TOPIC])
        except Exception as e:  # reported by __init__
            self.error = e
            self.started.set()
            return
        self.started.set()
        while True:
            try:
                fn, box = self.calls.get_nowait()
            except queue.Empty:
                fn = None
            if fn is not None:
                try:
                    box.put((True, fn(self.consumer)))
                except Exception as e:
                    box.put((False, e))
                if self.closed:
                    return
                continue
            if subscribe:
                try:
                    records = self.consumer.poll(timeout_ms=100)
                except Exception as e:
                    self.error = e
                    records = {}
                if records:
                    self.error = AssertionError("records from a kcoord topic: %r" % records)
                self.assigned = frozenset(tp.partition for tp in self.consumer.assignment())
            else:
                time.sleep(0.05)  # idle: nothing to poll without a subscription

    def call(self, fn, timeout=WAIT_S):
        """Run fn(consumer) in the member's thread and return its result (or raise its
        exception)."""
        box = queue.Queue()
        self.calls.put((fn, box))
        try:
            ok, value = box.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("%s: a call did not return within %d s"
                                 % (self.client_id, timeout))
        if not ok:
            raise value
        return value

    def close(self, timeout=WAIT_S):
        if not self.closed:
            self.closed = True
            self.call(lambda c: c.close(), timeout)
            self.thread.join(timeout=timeout)


def wait_for(what, cond, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        state = cond()
        if state is True:
            return
        if time.monotonic() >= deadline:
            raise AssertionError("%s within %d s: %s" % (what, timeout, state))
        time.sleep(0.1)


def split_state(members):
    """True when the members' assignments split t4 disjointly and completely, else a summary."""
    sets = [m.assigned for m in members]
    for m in members:
        if m.error is not None:
            return "%s: %r" % (m.client_id, m.error)
    union = set().union(*sets)
    if union == set(range(PARTITIONS)) and sum(len(s) for s in sets) == PARTITIONS and \
            all(len(s) == PARTITIONS // len(members) for s in sets):
        return True
    return "assignments %s" % {m.client_id: sorted(s) for m, s in zip(members, sets)}


class GroupClientsTest(unittest.TestCase):
    def setUp(self):
        self.k = Kcoord("topics=%s:%d" % (TOPIC, PARTITIONS),
                        "group.initial.rebalance.delay.ms=0")
        self.bootstrap = "127.0.0.1:%d" % self.k.port
        self.kcats = []
        self.members = []
        self.ok = False  # set by each test as its last statement

    def tearDown(self):
        for m in self.members:
            try:
                m.close(timeout=5)
            except Exception as e:
                print("closing %s: %r" % (m.client_id, e), file=sys.stderr)
        for c in self.kcats:
            c.stop(signal.SIGKILL)
        rc = self.k.stop()
        if not self.ok or rc != 0 or os.environ.get("KC_TEST_LOG"):
            for c in self.kcats:
                print("---- %s output ----\n%s" % (c.name, c.output()), file=sys.stderr)
            print("---- kcoord log ----\n%s\n---- end of kcoord log ----"
                  % self.k.output()[-65536:], file=sys.stderr)
        self.assertEqual(rc, 0)

    def kcat(self, group, name):
        c = Kcat(self.bootstrap, group, name)
        self.kcats.append(c)
        return c

    def test_kcat_balanced_consumers(self):
        a = self.kcat("kc-kcat", "kcat-a")
        i, m = a.wait_line(REBALANCED)
        self.assertEqual((m.group(1), m.group(3)), ("kc-kcat", "assigned"), m.group(0))
        self.assertEqual(parse_partitions(m.group(4)), set(range(PARTITIONS)))
        member_a = m.group(2)
        self.assertNotEqual(member_a, "")

        # A second kcat joins: the first revokes everything (eager) and both get two.
        b = self.kcat("kc-kcat", "kcat-b")
        ib, mb = b.wait_line(REBALANCED)
        self.assertEqual(mb.group(3), "assigned", mb.group(0))
        self.assertNotEqual(mb.group(2), member_a)
        i, m = a.wait_line(REBALANCED, i + 1)
        self.assertEqual(m.group(3), "revoked", m.group(0))
        self.assertEqual(parse_partitions(m.group(4)), set(range(PARTITIONS)))
        i, m = a.wait_line(REBALANCED, i + 1)
        self.assertEqual(m.group(3), "assigned", m.group(0))
        got_a, got_b = parse_partitions(m.group(4)), parse_partitions(mb.group(4))
        self.assertEqual(len(got_a), 2, m.group(0))
        self.assertEqual(len(got_b), 2, mb.group(0))
        self.assertEqual(got_a | got_b, set(range(PARTITIONS)))

        # SIGTERM: kcat closes its consumer (revoke, LeaveGroup) and exits 0; the other takes
        # everything back well within the session timeout.
        t0 = time.monotonic()
        self.assertEqual(b.stop(signal.SIGTERM), 0)
        _, m = b.wait_line(REBALANCED, ib + 1, timeout=1)
        self.assertEqual(m.group(3), "revoked", m.group(0))
        self.assertEqual(parse_partitions(m.group(4)), got_b)
        i, m = a.wait_line(REBALANCED, i + 1, timeout=5)
        self.assertEqual(m.group(3), "revoked", m.group(0))
        i, m = a.wait_line(REBALANCED, i + 1, timeout=5)
        self.assertEqual(m.group(3), "assigned", m.group(0))
        self.assertEqual(parse_partitions(m.group(4)), set(range(PARTITIONS)))
        self.assertLess(time.monotonic() - t0, 5.5)

        self.assertEqual(a.stop(signal.SIGINT), 0)
        _, m = a.wait_line(REBALANCED, i + 1, timeout=1)
        self.assertEqual(m.group(3), "revoked", m.group(0))
        self.assertEqual(parse_partitions(m.group(4)), set(range(PARTITIONS)))
        self.ok = True

    def member(self, group, client_id, subscribe=True):
        m = Member(self.bootstrap, group, client_id, subscribe)
        self.members.append(m)
        return m

    def test_kafka_python_group(self):
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        c1 = self.member("kp", "kp-1")
        wait_for("kp-1 gets all of t4", lambda: split_state([c1]))

        offsets = {tp: OffsetAndMetadata(42 + tp.partition, "meta-%d" % tp.partition)
                   for tp in tps}
        c1.call(lambda c: c.commit(offsets))
        for tp in tps:
            self.assertEqual(c1.call(lambda c: c.committed(tp)), 42 + tp.partition)

        c2 = self.member("kp", "kp-2")
        wait_for("kp-1 and kp-2 split t4", lambda: split_state([c1, c2]))

        # The admin client sees the Stable group, both members and their client ids.
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="kp-admin")
        try:
            self.assertIn(("kp", "consumer"), admin.list_consumer_groups())
            [g] = admin.describe_consumer_groups(["kp"])
            self.assertEqual((g.error_code, g.group, g.state, g.protocol_type),
                             (0, "kp", "Stable", "consumer"))
            self.assertEqual(sorted(m.client_id for m in g.members), ["kp-1", "kp-2"])
            got = admin.list_consumer_group_offsets("kp")
            self.assertEqual(got, offsets)
        finally:
            admin.close()

        c2.close()
        wait_for("kp-1 takes t4 back", lambda: split_state([c1]), timeout=5)
        c1.close()

        # The offsets outlive the members: a consumer that never joins reads them.
        c3 = self.member("kp", "kp-3", subscribe=False)
        for tp in tps:
            self.assertEqual(c3.call(lambda c: c.committed(tp)), 42 + tp.partition)
        c3.close()

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="kp-admin")
        try:
            [g] = admin.describe_consumer_groups(["kp"])
            self.assertEqual((g.error_code, g.state, len(g.members)), (0, "Empty", 0))
            self.assertEqual(admin.list_consumer_group_offsets("kp"), offsets)
            [(group, err)] = admin.delete_consumer_groups(["kp"])
            self.assertEqual((group, err.errno), ("kp", 0))
            self.assertNotIn("kp", [g for g, _ in admin.list_consumer_groups()])
        finally:
            admin.close()
        self.ok = True


if __name__ == "__main__":
    unittest.main(verbosity=2)
