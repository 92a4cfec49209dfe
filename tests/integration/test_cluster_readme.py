#!/usr/bin/python3
"""test_cluster_readme: the README's "Three nodes on one host" runs as written, and the cluster
examples of docs/examples/cluster/ have settings kcoord accepts.

test_readme_three_nodes: the shell blocks between the README's `<!-- cluster-example begin -->`
and `<!-- cluster-example end -->` markers are run in one `bash -e -o pipefail` (as a reader
pastes them into one shell), in a fresh directory that has the repository's layout where the
blocks use it (build/kcoord is KC_TEST_BIN, docs/examples/group_consumer.py the example), with
this interpreter as `python3` and Kafka's `kafka-consumer-groups.sh` (scripts/kafka-ref
run-class) on the PATH. The only change made to the text: each of the nine ports (Kafka N9092,
raft N9193, metrics N9404) becomes a free one. Checked from what the blocks print:
- block 2: the consumer is assigned orders 0..2 of a new group, commits 42 and reads it back;
- block 3: kafka-consumer-groups names a coordinator among nodes 1..3, and that node is killed;
- block 4: after the kill, the consumer finds 42 on every partition and commits 43 through the
  two nodes left;
- block 5: the killed node starts again; then the three nodes stop on SIGTERM.
Then, beyond the text: the three nodes start again from their data directories (raft's state
and the logs), the test asks FindCoordinator for the leader and kills, with kill -9, a node
other than the one block 3 killed (the leader when it is another node), so that the node that
was dead is one of the two that must store every commit; the consumer must find 43 and commit
44; the two left exit 0 on SIGTERM.

test_failover_keeps_the_member (the README's "Failover as clients see it"): a librdkafka consumer
in a group of a fresh 3-node cluster, polling all along (session.timeout.ms 10 s); the leader is
killed with kill -9; a synchronous commit must succeed through the two left within the session
timeout, the consumer must see no revocation or new assignment (it keeps its generation and its
partitions: no rebalance), and its commit must be what OffsetFetch returns on the new leader.

test_example_settings: every kcoord service of docs/examples/cluster/docker-compose.yml (its
environment, YAML merge keys resolved) and node1.conf..node3.conf are accepted by
`kcoord --print-config`, with the node.id of the service or file, the same cluster.voters and
cluster.brokers on every node, and every node in both lists; the nodes of the systemd example,
on several hosts, have raft over mutual TLS.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
from tests.support import kafka_ref, kcoord  # noqa: E402
import kwire  # noqa: E402

KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-ref")
BIN = os.path.abspath(os.environ.get("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord")))
EXAMPLES = os.path.join(ROOT, "docs", "examples")
PORT_RE = re.compile(r"\b([123])9(092|193|404)\b")
NODES = (1, 2, 3)
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 20
LEADER_TIMEOUT_S = 30


def readme_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- cluster-example begin -->\n(.*?)<!-- cluster-example end -->", text,
                  re.S)
    if m is None:
        raise AssertionError("README.md has no cluster-example markers")
    blocks = re.findall(r"```sh\n(.*?)```", m.group(1), re.S)
    if len(blocks) != 5:
        raise AssertionError("expected 5 sh blocks in the cluster example, found %d"
                             % len(blocks))
    return blocks


def have_tools():
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


def have_confluent_kafka():
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


def alive(pid):
    """Whether pid runs (a zombie, or a process gone, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def consumer_lines(out, kind):
    return sorted(l for l in out.splitlines() if l.startswith(kind + " "))


@unittest.skipUnless(have_tools(), "kafka-consumer-groups needs java and the reference jars "
                     "(scripts/kafka-ref fetch; CI fetches them before make test)")
@unittest.skipUnless(have_confluent_kafka(), "the example consumer needs python3-confluent-kafka")
class ClusterReadmeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-cluster-readme-")
        # The repository's layout, as far as the blocks use it.
        os.makedirs(os.path.join(self.dir, "build"))
        os.symlink(BIN, os.path.join(self.dir, "build", "kcoord"))
        os.makedirs(os.path.join(self.dir, "docs", "examples"))
        os.symlink(os.path.join(EXAMPLES, "group_consumer.py"),
                   os.path.join(self.dir, "docs", "examples", "group_consumer.py"))
        self.bin = os.path.join(self.dir, ".bin")
        os.makedirs(self.bin)
        os.symlink(sys.executable, os.path.join(self.bin, "python3"))
        tool = os.path.join(self.bin, "kafka-consumer-groups.sh")
        with open(tool, "w") as f:
            f.write('#!/bin/sh\nexec "%s" run-class '
                    'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "$@"\n' % KAFKA_REF)
        os.chmod(tool, 0o755)
        self.env = kcoord.quiet_env()
        self.env["PATH"] = self.bin + os.pathsep + self.env["PATH"]
        self.env["KAFKA_REF_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        free = iter(kcoord.free_ports(9))
        self.ports = {"%s9%s" % (n, kind): next(free)
                      for n in NODES for kind in ("092", "193", "404")}
        self.procs = []  # the nodes this test starts itself

    def tearDown(self):
        for n in NODES:
            try:
                with open(self.path("data/node%d.pid" % n)) as f:
                    pid = int(f.read())
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, rel):
        return os.path.join(self.dir, rel)

    def kafka_port(self, n):
        return self.ports["%d9092" % n]

    def node_logs(self):
        out = ""
        for n in NODES:
            try:
                with open(self.path("data/node%d.log" % n), errors="replace") as f:
                    out += "---- node %d\n%s" % (n, f.read()[-6000:])
            except OSError:
                pass
        return out

    def run_readme(self, blocks):
        """All blocks in one shell, each announced by a marker line; their outputs by block."""
        script = ""
        for i, b in enumerate(blocks):
            script += 'echo "@@ block %d @@"\n' % (i + 1)
            script += PORT_RE.sub(lambda m: str(self.ports[m.group(0)]), b)
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=self.dir,
                           env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=400)
        self.assertEqual(p.returncode, 0, "README cluster example failed:\n%s\n%s"
                         % (p.stdout[-4000:], self.node_logs()))
        parts = re.split(r"^@@ block (\d) @@\n", p.stdout, flags=re.M)
        return {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}

    def wait_gone(self, pid, what):
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while alive(pid):
            if time.monotonic() > deadline:
                self.fail("%s still running %d s after SIGTERM\n%s"
                          % (what, STOP_TIMEOUT_S, self.node_logs()))
            time.sleep(0.1)

    def start_node(self, n):
        """Node n again, from the README's settings file and data directory, as a child."""
        log = open(self.path("data/node%d.log" % n), "w")
        p = subprocess.Popen([BIN, "-c", "data/node%d.conf" % n], cwd=self.dir, env=self.env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs.append(p)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with open(self.path("data/node%d.log" % n), errors="replace") as f:
                if "listening on" in f.read():
                    return p
            if p.poll() is not None:
                self.fail("node %d exited with status %d on restart\n%s"
                          % (n, p.returncode, self.node_logs()))
            if time.monotonic() > deadline:
                self.fail("node %d logged no listener within %d s" % (n, START_TIMEOUT_S))
            time.sleep(0.1)

    def leader(self, nodes):
        """The node that FindCoordinator names for my-group when each of nodes names the same
        one; asked again while any answers an error (no leader known yet) or they disagree."""
        deadline = time.monotonic() + LEADER_TIMEOUT_S
        by_port = {self.kafka_port(n): n for n in NODES}
        named = {}
        while time.monotonic() < deadline:
            named = {}
            for n in nodes:
                try:
                    addr = kwire.find_coordinator("127.0.0.1:%d" % self.kafka_port(n),
                                                  "my-group")
                except kwire.KwireError as e:  # KwireRetry too: no leader yet
                    named[n] = str(e)
                    continue
                named[n] = by_port.get(int(addr.rsplit(":", 1)[1]), addr)
            if len(set(named.values())) == 1 and named[nodes[0]] in NODES:
                return named[nodes[0]]
            time.sleep(0.2)
        self.fail("the nodes named no common coordinator within %d s: %s"
                  % (LEADER_TIMEOUT_S, named))

    def consume(self, offset):
        bootstrap = ",".join("127.0.0.1:%d" % self.kafka_port(n) for n in NODES)
        p = subprocess.run([sys.executable, os.path.join(EXAMPLES, "group_consumer.py"),
                            bootstrap, "my-group", "orders", str(offset)], cwd=self.dir,
                           env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + self.node_logs())
        return p.stdout

    def assert_consumer(self, out, found, committed):
        self.assertEqual(consumer_lines(out, "assigned"),
                         ["assigned orders [%d]" % i for i in range(3)], out)
        self.assertEqual(consumer_lines(out, "found"),
                         ["found orders [%d] = %s" % (i, found) for i in range(3)], out)
        self.assertEqual(consumer_lines(out, "committed"),
                         ["committed orders [%d] = %d" % (i, committed) for i in range(3)], out)

    def test_readme_three_nodes(self):
        out = self.run_readme(readme_blocks())
        self.assertEqual(sorted(out), [1, 2, 3, 4, 5])
        self.assert_consumer(out[2], "none", 42)
        with open(self.path("data/state.txt")) as f:
            m = re.search(r"^my-group\s+127\.0\.0\.1:(\d+)\s+\((\d+)\)", f.read(), re.M)
        self.assertIsNotNone(m, out[3])
        killed = int(m.group(2))
        self.assertIn(killed, NODES)
        self.assertEqual(int(m.group(1)), self.kafka_port(killed),
                         "the coordinator's address is not its node's cluster.brokers entry")
        self.assert_consumer(out[4], "42", 43)
        for n in NODES:  # block 5 sent SIGTERM to the three
            with open(self.path("data/node%d.pid" % n)) as f:
                self.wait_gone(int(f.read()), "node %d" % n)
            os.unlink(self.path("data/node%d.pid" % n))

        # The cluster again, from its data directories; then a kill that leaves the node that
        # was dead in the majority that must store the next commit.
        procs = {n: self.start_node(n) for n in NODES}
        leader = self.leader(NODES)
        victim = leader if leader != killed else next(n for n in NODES if n != killed)
        procs[victim].kill()
        procs[victim].wait()
        self.assert_consumer(self.consume(44), "43", 44)
        self.assertNotEqual(self.leader([n for n in NODES if n != victim]), victim)
        for n in NODES:
            if n != victim:
                procs[n].send_signal(signal.SIGTERM)
        for n in NODES:
            if n != victim:
                try:
                    rc = procs[n].wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self.fail("node %d still running %d s after SIGTERM" % (n, STOP_TIMEOUT_S))
                self.assertEqual(rc, 0, "node %d exited %d on SIGTERM\n%s"
                                 % (n, rc, self.node_logs()))


@unittest.skipUnless(have_confluent_kafka(), "needs python3-confluent-kafka")
class FailoverClientTest(unittest.TestCase):
    SESSION_MS = 10000

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-cluster-failover-")
        free = kcoord.free_ports(6)
        self.kafka = dict(zip(NODES, free[:3]))
        raft = dict(zip(NODES, free[3:]))
        voters = ",".join("%d@127.0.0.1:%d" % (n, raft[n]) for n in NODES)
        brokers = ",".join("%d@127.0.0.1:%d" % (n, self.kafka[n]) for n in NODES)
        self.procs = {}
        self.logs = {}
        for n in NODES:
            self.logs[n] = os.path.join(self.dir, "node%d.log" % n)
            with open(self.logs[n], "w") as log:
                self.procs[n] = subprocess.Popen(
                    [BIN, "--set", "node.id=%d" % n, "--set", "cluster.voters=" + voters,
                     "--set", "cluster.brokers=" + brokers,
                     "--set", "listeners=127.0.0.1:%d" % self.kafka[n],
                     "--set", "data.dir=" + os.path.join(self.dir, "node%d" % n),
                     "--set", "topics=orders:3", "--set", "group.initial.rebalance.delay.ms=0"]
                    + sum((["--set", x] for x in kcoord.no_metrics_listener()), []),
                    env=kcoord.quiet_env(), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT)

    def tearDown(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def node_logs(self):
        out = ""
        for n in NODES:
            with open(self.logs[n], errors="replace") as f:
                out += "---- node %d\n%s" % (n, f.read()[-4000:])
        return out

    def coordinator(self, nodes, deadline):
        """The node every one of nodes names as my-group's coordinator."""
        by_port = {p: n for n, p in self.kafka.items()}
        named = {}
        while time.monotonic() < deadline:
            named = {}
            for n in nodes:
                try:
                    addr = kwire.find_coordinator("127.0.0.1:%d" % self.kafka[n], "my-group")
                    named[n] = by_port.get(int(addr.rsplit(":", 1)[1]), addr)
                except kwire.KwireError as e:
                    named[n] = str(e)
            if len(set(named.values())) == 1 and named[nodes[0]] in NODES:
                return named[nodes[0]]
            time.sleep(0.2)
        self.fail("no common coordinator: %s\n%s" % (named, self.node_logs()))

    def test_failover_keeps_the_member(self):
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        leader = self.coordinator(NODES, time.monotonic() + LEADER_TIMEOUT_S)
        events = []
        c = Consumer({"bootstrap.servers": ",".join("127.0.0.1:%d" % self.kafka[n]
                                                    for n in NODES),
                      "group.id": "my-group", "enable.auto.commit": False,
                      "session.timeout.ms": self.SESSION_MS, "heartbeat.interval.ms": 500,
                      "log.connection.close": False})
        try:
            c.subscribe(["orders"],
                        on_assign=lambda _c, ps: events.append(("assign", sorted(
                            p.partition for p in ps))),
                        on_revoke=lambda _c, ps: events.append(("revoke", sorted(
                            p.partition for p in ps))))
            deadline = time.monotonic() + 60
            while not events and time.monotonic() < deadline:
                c.poll(0.2)
            self.assertEqual(events, [("assign", [0, 1, 2])], self.node_logs())
            c.commit(offsets=[TopicPartition("orders", 0, 7)], asynchronous=False)

            self.procs[leader].kill()
            self.procs[leader].wait()
            killed = time.monotonic()
            committed = False
            while not committed:
                self.assertLess(time.monotonic() - killed, self.SESSION_MS / 1000.0,
                                "no commit went through within the session timeout\n"
                                + self.node_logs())
                c.poll(0.2)
                try:
                    c.commit(offsets=[TopicPartition("orders", 0, 8)], asynchronous=False)
                    committed = True
                except KafkaException:
                    pass  # the coordinator moves: the client looks it up again
            # A few more heartbeats on the new leader, then nothing must have changed.
            until = time.monotonic() + 2
            while time.monotonic() < until:
                c.poll(0.2)
            self.assertEqual(events, [("assign", [0, 1, 2])],
                             "the member was rebalanced by the failover\n" + self.node_logs())
            survivors = [n for n in NODES if n != leader]
            new = self.coordinator(survivors, time.monotonic() + LEADER_TIMEOUT_S)
            self.assertNotEqual(new, leader)
            got = c.committed([TopicPartition("orders", 0)], timeout=30)
            self.assertEqual(got[0].offset, 8)
        finally:
            c.close()
        for n in survivors:
            self.procs[n].send_signal(signal.SIGTERM)
        for n in survivors:
            self.assertEqual(self.procs[n].wait(timeout=STOP_TIMEOUT_S), 0, self.node_logs())


class ExampleSettingsTest(unittest.TestCase):
    def print_config(self, env=None, conf=None):
        e = kcoord.quiet_env()
        e.update(env or {})
        args = [BIN, "--print-config"] + (["-c", conf] if conf else [])
        p = subprocess.run(args, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 0, "%s: %s" % (conf or env, p.stdout))
        return dict(re.findall(r"^([a-z0-9_.]+)=(.*?)\s+# \w+", p.stdout, re.M))

    def check_nodes(self, settings):
        """settings: {node id: effective settings}, one per node of one example cluster."""
        ids = sorted(settings)
        self.assertEqual(ids, [1, 2, 3])
        voters = {s["cluster.voters"] for s in settings.values()}
        brokers = {s["cluster.brokers"] for s in settings.values()}
        self.assertEqual(len(voters), 1, voters)
        self.assertEqual(len(brokers), 1, brokers)
        voter_ids = sorted(int(v.split("@")[0]) for v in voters.pop().split(","))
        broker_ids = sorted({int(b.split("@")[0]) for b in brokers.pop().split(",")})
        self.assertEqual(voter_ids, ids)
        self.assertEqual(broker_ids, ids)
        for n, s in settings.items():
            self.assertEqual(s["node.id"], str(n))

    def test_node_conf_files(self):
        d = os.path.join(EXAMPLES, "cluster")
        settings = {n: self.print_config(conf=os.path.join(d, "node%d.conf" % n))
                    for n in NODES}
        self.check_nodes(settings)
        for n, s in settings.items():  # nodes on several hosts: raft over mutual TLS
            self.assertEqual(s["cluster.security.protocol"], "SSL", "node%d.conf" % n)

    def test_compose_services(self):
        try:
            import yaml
        except ImportError:
            self.skipTest("needs python3-yaml (scripts/deps installs it)")
        with open(os.path.join(EXAMPLES, "cluster", "docker-compose.yml")) as f:
            compose = yaml.safe_load(f)
        settings = {}
        for name, svc in compose["services"].items():
            env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
            if not any(k.startswith("KCOORD_") for k in env):
                continue  # the consumer
            self.assertEqual(svc.get("image"), "kcoord", name)
            self.assertTrue(any(v.endswith(":/var/lib/kcoord") for v in svc["volumes"]), name)
            s = self.print_config(env=env)
            settings[int(s["node.id"])] = s
            # Every published Kafka port is the EXTERNAL listener it advertises.
            published = {p.split(":")[0] for p in svc["ports"]}
            for adv in s["advertised.listeners"].split(","):
                if adv.startswith("EXTERNAL://"):
                    self.assertIn(adv.rsplit(":", 1)[1], published, name)
        self.check_nodes(settings)


if __name__ == "__main__":
    unittest.main(verbosity=2)
