"""cluster_bench: a 3-node kcoord cluster beside a single kcoord and a 3-broker Kafka (the
section CLUSTER_HEADING of docs/BENCHMARKS.md; `tests/bench/bench.py --only-cluster` runs it).

Every server runs on this machine over loopback, the clients too:

- single: one kcoord with its defaults (no cluster.voters: no raft on the write path;
  log.flush.policy=always, a commit is acknowledged after fsync);
- cluster: three kcoord nodes (cluster.voters and cluster.brokers naming all three, each its own
  data directory; a commit is acknowledged once a majority stored it in raft's log, fsynced);
- Kafka: three KRaft nodes (each broker and controller) from `scripts/kafka-ref start --nodes 3`
  with offsets.topic.replication.factor=3 and min.insync.replicas=2, its own KAFKA_REF_STATE.
  Without --no-kafka; when it cannot start, its column says why.

Commit throughput, each figure the median of R rounds, the servers alternating, a fresh kcoord
(or cluster) per round:
- `kcoord-bench commit` with the load scenarios' options (bench.py's PLANS): simple-consumer
  OffsetCommits over 100 groups, all coordinated by one node. Single and cluster only: the tool
  drives one coordinator, and Kafka spreads the 100 groups over its 3 brokers;
- librdkafka: C client processes (python3-confluent-kafka of the distribution, /usr/bin/python3),
  each its own group, N asynchronous OffsetCommits at once (security_bench.commit_rate); commits
  per second of all together, on all three servers, after one untimed round each.

Leader kill, K rounds per cluster: a committer thread sends one OffsetCommit (v2, generation -1)
at a time for a group of its own, finding the coordinator with FindCoordinator on any node that
answers, and records when each commit was sent and acknowledged; three members of a consumer
group (librdkafka, /usr/bin/python3, session.timeout.ms=30000, heartbeat.interval.ms=3000, its
default) subscribe to a 6-partition topic and report their assign and revoke callbacks and their
generation (librdkafka's consumer group metadata). The committer's group and the members' group
map to the same __consumer_offsets partition, so one node coordinates both. Once the group is
stable and commits flow, the node FindCoordinator names for the members' group (kcoord: the raft
leader) gets kill -9. Measured: the time from the kill to the acknowledgement of the first commit
sent after it; then, until session timeout + 2 s after the kill, whether any member saw a
callback, and the members' generations and the group's members (DescribeGroups) before and
after. The killed node is started again on its data once commits flow (Kafka: `kafka-ref
restart-node`, and the round waits until the partition's ISR has all three nodes again).

The single node against an earlier build: the page's load-scenario figure for the same
kcoord-bench command (its commit and date), and, with --cluster-before OLD_BUILD (bench.py), that
build's kcoord run alternating with this one's single node in the same run.
"""
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests.support import kcoord as kcoord_support  # noqa: E402
import kwire  # noqa: E402
import security_bench  # noqa: E402

KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-ref")
CLUSTER_HEADING = ("## Cluster: 3 nodes on raft beside one node and a 3-broker Kafka, commit "
                   "throughput and the coordinator killed")
CLUSTER_TOP_LINE = ("- Cluster (its own section, *%s*): `tests/bench/bench.py --only-cluster` "
                    "runs just it and replaces just that section, which says when and at which "
                    "commit it ran." % CLUSTER_HEADING[3:])
PLANS = {"full": {"rounds": 3, "clients": 4, "commits": 3000, "kills": 3, "kafka_kills": 3,
                  "observe_s": 32},
         "quick": {"rounds": 1, "clients": 2, "commits": 500, "kills": 1, "kafka_kills": 1,
                   "observe_s": 5}}
PYTHON = "/usr/bin/python3"  # python3-confluent-kafka of the distribution
NODES = 3
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, kcoord's default and kafka-ref's
MEMBER_TOPIC, MEMBER_PARTITIONS = "cluster-bench", 6
COMMIT_TOPIC = "cluster-bench-commit"
LOAD_TOPIC, LOAD_PARTITIONS = "kcoord-bench", 100  # the load scenarios' topic
SESSION_MS = 30000
KAFKA_HEAP = "1g"
RECOVERY_TIMEOUT_S = 90


class ClusterBenchError(Exception):
    pass


def say(msg):
    print("   " + msg, flush=True)


# ---- the members' group: three librdkafka consumers ------------------------------------------

MEMBER = r'''
import json, select, struct, sys, time
from confluent_kafka import Consumer
a = json.loads(sys.argv[1])
def out(**kw):
    kw["t"] = time.monotonic()
    print(json.dumps(kw), flush=True)
def gen():
    # librdkafka's consumer group metadata: "CGMDv2:", then the generation (int32, host order)
    try:
        m = bytes(c.consumer_group_metadata())
        if m.startswith(b"CGMDv2:"):
            return struct.unpack("=i", m[7:11])[0]
    except Exception:
        pass
    return None
c = Consumer({"bootstrap.servers": a["bootstrap"], "group.id": a["group"],
              "client.id": a["name"], "session.timeout.ms": a["session_ms"],
              "enable.auto.commit": False})
c.subscribe([a["topic"]],
            on_assign=lambda _c, ps: out(ev="assign", parts=[p.partition for p in ps], gen=gen()),
            on_revoke=lambda _c, ps: out(ev="revoke", parts=[p.partition for p in ps], gen=gen()))
while True:
    m = c.poll(0.1)
    if m is not None and m.error() is not None and m.error().name() != "_PARTITION_EOF":
        out(ev="error", err=m.error().name())
    if select.select([sys.stdin], [], [], 0)[0]:
        line = sys.stdin.readline()
        if not line or line.strip() == "stop":
            break
        try:
            member = c.memberid()
        except Exception:
            member = None
        out(ev="gen", gen=gen(), member=member)
c.close()
out(ev="closed")
'''


class Member:
    def __init__(self, bootstrap, group, name):
        a = {"bootstrap": bootstrap, "group": group, "name": name, "topic": MEMBER_TOPIC,
             "session_ms": SESSION_MS}
        self.name = name
        self.events, self.lock = [], threading.Lock()
        self.proc = subprocess.Popen([PYTHON, "-c", MEMBER, json.dumps(a)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(ev)

    def since(self, t, kinds=("assign", "revoke")):
        with self.lock:
            return [e for e in self.events if e["t"] > t and e["ev"] in kinds]

    def last(self, kind):
        with self.lock:
            evs = [e for e in self.events if e["ev"] == kind]
        return evs[-1] if evs else None

    def ask_gen(self, timeout=10):
        t = time.monotonic()
        self.proc.stdin.write("gen\n")
        self.proc.stdin.flush()
        deadline = t + timeout
        while time.monotonic() < deadline:
            got = self.since(t, ("gen",))
            if got:
                return got[0]
            time.sleep(0.02)
        raise ClusterBenchError("member %s did not answer" % self.name)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
                self.proc.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


# ---- the committer -------------------------------------------------------------------------


class Committer:
    """One OffsetCommit at a time for group, to the coordinator that FindCoordinator on any of
    addrs() names; acks: (sent, acknowledged) monotonic times of every commit answered with
    error 0; errors: (time, text) of the others."""

    def __init__(self, addrs, group):
        self.addrs, self.group = addrs, group
        self.acks, self.errors = [], []
        self.lock, self.done = threading.Lock(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _coordinator(self):
        for addr in self.addrs():
            try:
                return kwire.find_coordinator(addr, self.group)
            except kwire.KwireError as e:
                self._error(e)
        return None

    def _error(self, e):
        with self.lock:
            self.errors.append((time.monotonic(), str(e).splitlines()[0][:120]))

    def _run(self):
        coord, offset = None, 0
        while not self.done.is_set():
            if coord is None:
                coord = self._coordinator()
                if coord is None:
                    time.sleep(0.02)
                    continue
            offset += 1
            sent = time.monotonic()
            try:
                r = kwire.ask(coord, "OffsetCommit", 2, timeout=5, group_id=self.group,
                              generation_id_or_member_epoch=-1, member_id="",
                              retention_time_ms=-1, topics=[dict(name=COMMIT_TOPIC, partitions=[
                                  dict(partition_index=0, committed_offset=offset,
                                       committed_metadata="")])])
                errs = [p.error_code for t in r.topics for p in t.partitions]
                if errs == [0]:
                    with self.lock:
                        self.acks.append((sent, time.monotonic()))
                    continue
                self._error("OffsetCommit error %s" % errs)
            except kwire.KwireError as e:
                self._error(e)
            coord = None
            time.sleep(0.02)

    def first_ack_sent_after(self, t):
        with self.lock:
            return next((a for s, a in self.acks if s > t), None)

    def acked_since(self, t):
        with self.lock:
            return sum(1 for s, _ in self.acks if s > t)

    def errors_between(self, t0, t1):
        with self.lock:
            return [e for t, e in self.errors if t0 <= t <= t1]

    def stop(self):
        self.done.set()
        self.thread.join(10)


def java_hash(s):
    """Java's String.hashCode: over the UTF-16 code units, in 32-bit two's complement."""
    b = s.encode("utf-16-be")
    h = 0
    for k in range(0, len(b), 2):
        h = (31 * h + (b[k] << 8 | b[k + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group):
    """The __consumer_offsets partition of a group, as Kafka (and kcoord) computes it:
    Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % OFFSETS_PARTITIONS


def same_partition_group(group, prefix):
    """A group name starting with prefix that maps to group's __consumer_offsets partition."""
    want = offsets_partition(group)
    for i in range(100000):
        name = "%s-%d" % (prefix, i)
        if offsets_partition(name) == want:
            return name
    raise ClusterBenchError("no group name maps to partition %d" % want)


# ---- servers -------------------------------------------------------------------------------


def kcoord_sets():
    return ["topics=%s:%d,%s:%d,%s:1,sec-bench-commit:1" % (LOAD_TOPIC, LOAD_PARTITIONS,
                                                            MEMBER_TOPIC, MEMBER_PARTITIONS,
                                                            COMMIT_TOPIC),
            "group.initial.rebalance.delay.ms=0", "metrics.listener=127.0.0.1:0"]


class KcoordSingle:
    name = "single"

    def __init__(self, binary, workdir):
        self.binary, self.dir = binary, tempfile.mkdtemp(prefix="single-", dir=workdir)
        self.run = kcoord_support.Kcoord(os.path.join(self.dir, "data"), *kcoord_sets(),
                                         binary=binary,
                                         log_path=os.path.join(self.dir, "kcoord.log"))
        self.bootstrap = "127.0.0.1:%d" % self.run.port

    def stop(self):
        self.run.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class KcoordCluster:
    """Three kcoord nodes on loopback."""
    name = "cluster"

    def __init__(self, binary, workdir):
        self.binary, self.dir = binary, tempfile.mkdtemp(prefix="cluster-", dir=workdir)
        ports = kcoord_support.free_ports(2 * NODES)
        self.kports = {i: ports[i - 1] for i in range(1, NODES + 1)}
        rports = {i: ports[NODES + i - 1] for i in range(1, NODES + 1)}
        self.voters = ",".join("%d@127.0.0.1:%d" % (i, rports[i]) for i in sorted(rports))
        self.brokers = ",".join("%d@127.0.0.1:%d" % (i, self.kports[i])
                                for i in sorted(self.kports))
        self.nodes, self.starts = {}, {}
        try:
            for i in sorted(self.kports):
                self.start_node(i, wait_leader=False)
            for i in sorted(self.kports):
                self.nodes[i].wait_line(r"cluster: leader is node \d+", 60)
        except BaseException:
            self.stop()
            raise
        self.bootstrap = ",".join("127.0.0.1:%d" % self.kports[i] for i in sorted(self.kports))

    def start_node(self, i, wait_leader=True):
        self.starts[i] = self.starts.get(i, 0) + 1
        node = kcoord_support.Kcoord(
            os.path.join(self.dir, "n%d" % i), *kcoord_sets(), "node.id=%d" % i,
            "listeners=127.0.0.1:%d" % self.kports[i], "cluster.voters=" + self.voters,
            "cluster.brokers=" + self.brokers, binary=self.binary,
            log_path=os.path.join(self.dir, "n%d.log" % i))
        self.nodes[i] = node
        if wait_leader:
            node.wait_line(r"cluster: leader is node \d+", 60)

    def addrs(self):
        return ["127.0.0.1:%d" % self.kports[i] for i in sorted(self.nodes)
                if self.nodes[i].proc.poll() is None]

    def coordinator(self, group):
        """The node id FindCoordinator names for group."""
        addr = retry(lambda: kwire.find_coordinator(self.addrs()[0], group), 30)
        port = int(addr.rsplit(":", 1)[1])
        return next(i for i, p in self.kports.items() if p == port)

    def kill(self, i):
        self.nodes[i].proc.send_signal(signal.SIGKILL)

    def restart(self, i):
        self.nodes[i].stop()
        self.start_node(i)

    def settled(self, group):
        pass  # a restarted node catches up by itself; the next round's kill hits the leader

    def stop(self):
        for node in self.nodes.values():
            node.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class KafkaCluster:
    name = "kafka"

    def __init__(self, workdir):
        self.env = dict(os.environ, KAFKA_REF_STATE=os.path.join(workdir, "kafka-ref"))
        self.env.pop("KAFKA_REF_JAVA_OPTS", None)
        self.started = True  # stop() cleans up what a failed start left
        p = subprocess.run([KAFKA_REF, "start", "--nodes", str(NODES), "--partitions",
                            str(OFFSETS_PARTITIONS), "--initial-delay", "0", "--heap", KAFKA_HEAP],
                           env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=300)
        got = dict(re.findall(r"^(KAFKA_REF_\w+)=(\S+)$", p.stdout, re.M))
        if p.returncode != 0 or "KAFKA_REF_NODE_1" not in got:
            self.stop()
            raise ClusterBenchError("kafka-ref start --nodes %d failed: %s"
                                    % (NODES, p.stdout.strip().splitlines()[-1:]))
        self.bootstrap = got["KAFKA_REF_BOOTSTRAP"]
        self.kaddr = {i: got["KAFKA_REF_NODE_%d" % i] for i in range(1, NODES + 1)}
        self.pids = {i: int(got["KAFKA_REF_NODE_%d_PID" % i]) for i in range(1, NODES + 1)}
        self.down = set()
        topics = [dict(name=MEMBER_TOPIC, num_partitions=MEMBER_PARTITIONS, replication_factor=3),
                  dict(name=COMMIT_TOPIC, num_partitions=1, replication_factor=3),
                  dict(name="sec-bench-commit", num_partitions=1, replication_factor=3),
                  dict(name=LOAD_TOPIC, num_partitions=LOAD_PARTITIONS, replication_factor=3)]
        r = kwire.ask(self.addrs()[0], "CreateTopics", 2, timeout=40, topics=topics,
                      timeout_ms=30000, validate_only=False)
        bad = [(t.name, t.error_code) for t in r.topics if t.error_code not in (0, 36)]
        if bad:
            self.stop()
            raise ClusterBenchError("CreateTopics: %r" % bad)

    def addrs(self):
        return [self.kaddr[i] for i in sorted(self.kaddr) if i not in self.down]

    def coordinator(self, group):
        addr = retry(lambda: kwire.find_coordinator(self.addrs()[0], group), 60)
        return next(i for i, a in self.kaddr.items() if a == addr)

    def kill(self, i):
        os.kill(self.pids[i], signal.SIGKILL)
        self.down.add(i)

    def restart(self, i):
        p = subprocess.run([KAFKA_REF, "restart-node", str(i)], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        m = re.search(r"^KAFKA_REF_NODE_%d_PID=(\d+)$" % i, p.stdout, re.M)
        if p.returncode != 0 or m is None:
            raise ClusterBenchError("kafka-ref restart-node %d failed: %s"
                                    % (i, p.stdout.strip().splitlines()[-1:]))
        self.pids[i] = int(m.group(1))
        self.down.discard(i)

    def settled(self, group):
        """Until the group's __consumer_offsets partition has all nodes in its ISR."""
        part = offsets_partition(group)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                r = kwire.ask(self.addrs()[0], "Metadata", 1,
                              topics=[dict(name="__consumer_offsets")])
                for t in r.topics:
                    for p in t.partitions:
                        if p.partition_index == part and len(p.isr_nodes) == NODES:
                            return
            except kwire.KwireError:
                pass
            time.sleep(0.5)
        raise ClusterBenchError("__consumer_offsets-%d did not get its ISR back" % part)

    def stop(self):
        if self.started:
            subprocess.run([KAFKA_REF, "stop", "--timeout", "30"], env=self.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = False


ERROR_NAMES = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
               16: "NOT_COORDINATOR", 7: "REQUEST_TIMED_OUT"}


def error_kind(text):
    """A failed attempt's text, as a class: the Kafka error's name or what the socket said."""
    m = re.search(r"error \[?(-?\d+)", text)
    if m:
        code = int(m.group(1))
        return "%s %s" % ("FindCoordinator" if text.startswith("FindCoordinator") else
                          "OffsetCommit", ERROR_NAMES.get(code, "error %d" % code))
    for pat, name in (("refused", "connection refused"), ("closed", "connection closed"),
                      ("reset", "connection reset"), ("timed out", "timed out")):
        if pat in text:
            return name
    return text[:40]


def retry(fn, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except kwire.KwireError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# ---- throughput ----------------------------------------------------------------------------


def bench_commit(tool, bootstrap, args):
    """kcoord-bench commit: its result line (a dict)."""
    cmd = [tool, "commit", "--bootstrap", bootstrap.split(",")[0]] + list(args)
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=300)
    res = next((json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")),
               None)
    if p.returncode != 0 or res is None:
        raise ClusterBenchError("kcoord-bench commit: exit %d: %s" % (
            p.returncode, " / ".join((p.stderr.strip().splitlines() or ["no output"])[-3:])))
    return res


def one_group(load_args):
    """The load scenarios' commit options with one group instead of many (every commit to one
    coordinator, on Kafka too)."""
    out = list(load_args)
    out[out.index("--groups") + 1] = "1"
    return out


def throughput(binary, tool, load_args, plan, workdir, kafka, before=None):
    """{side: {"bench": [result...], "bench1": [result...], "rdkafka": [commits/s...]}};
    Kafka's in kafka["bench1"] and kafka["rdkafka"] (or kafka["error"]); with before (another
    build's kcoord), its single node's kcoord-bench rounds in out["before"]["bench"]."""
    out = {"single": {"bench": [], "bench1": [], "rdkafka": []},
           "cluster": {"bench": [], "bench1": [], "rdkafka": []}, "before": {"bench": []}}
    cplan = {"clients": plan["clients"], "commits": plan["commits"]}
    warm = " (warm-up, not counted)"
    for r in range(plan["rounds"] + 1):  # round 0: untimed, each side's warm-up
        if before is not None:
            srv = KcoordSingle(before, workdir)
            try:
                res = bench_commit(tool, srv.bootstrap, load_args)
            finally:
                srv.stop()
            say("[before] round %d: kcoord-bench %.0f offsets/s (p99 %.2f ms)%s"
                % (r, res["offsets_per_s"], res["p99_ms"], warm if r == 0 else ""))
            if r > 0:
                out["before"]["bench"].append(res)
        for kind in (KcoordSingle, KcoordCluster):
            srv = kind(binary, workdir)
            try:
                res = bench_commit(tool, srv.bootstrap, load_args)
                res1 = bench_commit(tool, srv.bootstrap, one_group(load_args))
                rate = security_bench.commit_rate(PYTHON, srv.bootstrap, {}, cplan,
                                                  "%s-%d" % (kind.name, r), COMMIT_TOPIC)
            finally:
                srv.stop()
            say("[%s] round %d: kcoord-bench %.0f offsets/s (p99 %.2f ms), one group %.0f; "
                "librdkafka %.0f commits/s%s" % (kind.name, r, res["offsets_per_s"],
                                                 res["p99_ms"], res1["offsets_per_s"], rate,
                                                 warm if r == 0 else ""))
            if r > 0:
                out[kind.name]["bench"].append(res)
                out[kind.name]["bench1"].append(res1)
                out[kind.name]["rdkafka"].append(rate)
        if kafka is not None and "srv" in kafka and "error" not in kafka:
            try:
                res1 = bench_commit(tool, kafka["srv"].bootstrap, one_group(load_args))
                rate = security_bench.commit_rate(PYTHON, kafka["srv"].bootstrap, {}, cplan,
                                                  "kafka-%d" % r, COMMIT_TOPIC)
                say("[kafka] round %d: kcoord-bench one group %.0f offsets/s (p99 %.2f ms); "
                    "librdkafka %.0f commits/s%s" % (r, res1["offsets_per_s"], res1["p99_ms"],
                                                     rate, warm if r == 0 else ""))
                if r > 0:
                    kafka.setdefault("bench1", []).append(res1)
                    kafka.setdefault("rdkafka", []).append(rate)
            except (ClusterBenchError, security_bench.SecurityBenchError,
                    subprocess.TimeoutExpired, OSError, ValueError) as e:
                kafka["error"] = "commit throughput: %s" % str(e).splitlines()[0][:200]
    return out


# ---- the leader kill -----------------------------------------------------------------------


def stable(members, srv, group, timeout=90):
    """Until every member holds an assignment of one generation that covers the topic and
    DescribeGroups says Stable with them all: (generation, sorted member ids)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gens = [m.ask_gen() for m in members]
        assigns = [m.last("assign") for m in members]
        revokes = [m.last("revoke") for m in members]
        held = all(a is not None and (r is None or r["t"] < a["t"])
                   for a, r in zip(assigns, revokes))
        if held and len({g["gen"] for g in gens}) == 1 and gens[0]["gen"] is not None and \
                sorted(p for a in assigns for p in a["parts"]) == list(range(MEMBER_PARTITIONS)):
            try:
                g = kwire.describe_group(srv.addrs()[0], group)
                if g["state"] == "Stable" and len(g["members"]) == len(members):
                    return gens[0]["gen"], sorted(x["member_id"] for x in g["members"])
            except kwire.KwireError:
                pass
        time.sleep(0.5)
    raise ClusterBenchError("the group did not become stable within %d s" % timeout)


def kill_rounds(srv, rounds, observe_s, tag):
    group = "cluster-bench-%s-%d" % (tag, os.getpid())
    cgroup = same_partition_group(group, "cluster-bench-committer-%s" % tag)
    members = [Member(srv.bootstrap, group, "m%d" % i) for i in range(3)]
    committer = None
    out = []
    try:
        gen0, ids0 = stable(members, srv, group)
        committer = Committer(srv.addrs, cgroup)
        for rnd in range(rounds):
            gen_before, ids_before = stable(members, srv, group)
            t = time.monotonic()
            while committer.acked_since(t) < 20:
                if time.monotonic() - t > 60:
                    raise ClusterBenchError("commits do not flow before the kill")
                time.sleep(0.05)
            victim = srv.coordinator(group)
            if srv.coordinator(cgroup) != victim:
                raise ClusterBenchError("the committer's group has another coordinator")
            t_kill = time.monotonic()
            srv.kill(victim)
            while committer.first_ack_sent_after(t_kill) is None:
                if time.monotonic() - t_kill > RECOVERY_TIMEOUT_S:
                    raise ClusterBenchError("no commit acknowledged within %d s of the kill"
                                            % RECOVERY_TIMEOUT_S)
                time.sleep(0.01)
            t_ack = committer.first_ack_sent_after(t_kill)
            errors = committer.errors_between(t_kill, t_ack)
            srv.restart(victim)
            left = t_kill + observe_s - time.monotonic()
            if left > 0:
                time.sleep(left)
            gen_after, ids_after = stable(members, srv, group)
            callbacks = sum(len(m.since(t_kill)) for m in members)
            kinds = sorted({error_kind(e) for e in errors})
            res = {"victim": victim, "recovery_s": t_ack - t_kill, "callbacks": callbacks,
                   "gen_before": gen_before, "gen_after": gen_after,
                   "same_members": ids_before == ids_after, "errors": len(errors),
                   "error_kinds": kinds[:4], "observed_s": time.monotonic() - t_kill}
            say("[%s] kill %d: node %d; first commit acknowledged %.3f s after the kill; "
                "%d callbacks; generation %s -> %s; members %s" % (
                    tag, rnd + 1, victim, res["recovery_s"], callbacks, gen_before, gen_after,
                    "the same" if res["same_members"] else "changed"))
            out.append(res)
            srv.settled(group)
    finally:
        if committer is not None:
            committer.stop()
        for m in members:
            m.stop()
    return out


# ---- the run -------------------------------------------------------------------------------


def print_config(binary):
    """kcoord's settings with their defaults (--print-config): {name: value}."""
    try:
        p = subprocess.run([binary, "--print-config"], capture_output=True, text=True,
                           timeout=30, env=kcoord_support.quiet_env())
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return dict(re.findall(r"^([a-z][\w.]*)=(\S*)", p.stdout, re.M))



def run(binary, tool, load_args, quick=False, use_kafka=True, before=None):
    """(results, plan): results["throughput"], results["kill"] per side, results["kafka"];
    before: another build's kcoord, run beside the single node (kcoord-bench only)."""
    plan = PLANS["quick" if quick else "full"]
    workdir = tempfile.mkdtemp(prefix="kcoord-clusterbench-")
    results = {"kill": {}, "kafka": {"error": "--no-kafka was given"} if not use_kafka else {},
               "config": print_config(binary), "loadavg": [os.getloadavg()[0]]}
    kafka = results["kafka"]
    try:
        if use_kafka:
            try:
                kafka["srv"] = KafkaCluster(workdir)
            except (ClusterBenchError, subprocess.TimeoutExpired, OSError,
                    kwire.KwireError) as e:
                kafka["error"] = str(e).strip().splitlines()[0][:300]
        results["throughput"] = throughput(binary, tool, load_args, plan, workdir, kafka,
                                           before)
        srv = KcoordCluster(binary, workdir)
        try:
            results["kill"]["kcoord"] = kill_rounds(srv, plan["kills"], plan["observe_s"],
                                                    "kcoord")
        except (ClusterBenchError, kwire.KwireError, AssertionError) as e:
            results["kill"]["kcoord"] = {"error": str(e).strip().splitlines()[0][:300]}
        finally:
            srv.stop()
        if "srv" in kafka and "error" not in kafka:
            try:
                results["kill"]["kafka"] = kill_rounds(kafka["srv"], plan["kafka_kills"],
                                                       plan["observe_s"], "kafka")
            except (ClusterBenchError, kwire.KwireError, subprocess.TimeoutExpired) as e:
                results["kill"]["kafka"] = {"error": str(e).strip().splitlines()[0][:300]}
    finally:
        if "srv" in kafka:
            kafka.pop("srv").stop()
        shutil.rmtree(workdir, ignore_errors=True)
    results["loadavg"].append(os.getloadavg()[0])
    return results, plan


# ---- the section ---------------------------------------------------------------------------


def previous_single_figure(path):
    """The page's load-scenario figure for kcoord's commit with flush=always, with the commit
    and command it was made with: (offsets/s, commit, command) or None."""
    try:
        with open(path) as f:
            page = f.read()
    except OSError:
        return None
    m = re.search(r"^\| commit, offsets/s, flush=always \| ([\d,]+) \|", page, re.M)
    c = re.search(r"^- Versions: kcoord \S+ \(commit ([0-9a-f]+)", page, re.M)
    cmd = re.search(r"^- Command: `([^`]+)`", page, re.M)
    when = re.search(r"^Generated by .* on (\S+ \S+ UTC)", page, re.M)
    if m is None:
        return None
    return (float(m.group(1).replace(",", "")), c.group(1) if c else "unknown",
            cmd.group(1) if cmd else "unknown", when.group(1) if when else "unknown")


def fmt(v, unit=""):
    return "{:,.0f}".format(v) + unit


def section(results, plan, load_args, previous, when, commit, command, elapsed,
            before_note=None):
    tp = results["throughput"]
    kafka = results["kafka"]
    L = [CLUSTER_HEADING, ""]
    L.append(
        "Run on %s at commit %s with `%s` (%.0f s), on one machine of 2 cores (`nproc`): every "
        "node of a cluster, every client and the load generator share the 2 cores and talk over "
        "loopback, so a cluster's replication costs CPU the single node keeps for itself, and "
        "no network delay is in the figures. **single**: one kcoord, no `cluster.voters`, "
        "`log.flush.policy=always` (its default: a commit is acknowledged after fsync). "
        "**cluster**: three kcoord nodes (`node.id`, `cluster.voters`, `cluster.brokers`, one "
        "data directory each, the rest default): a commit is acknowledged once a majority "
        "stored it in raft's log, fsynced. **Kafka**: Apache Kafka 4.4.0, three KRaft nodes "
        "each broker and controller from `scripts/kafka-ref start --nodes 3` (1 GiB heap each, "
        "offsets.topic.replication.factor=3, min.insync.replicas=2, its default flush settings: "
        "no fsync per write, acks from all in-sync replicas). The machine is shared: its load "
        "average (1 min) was %.1f as the run started and %.1f as it ended." % (
            when, commit, command, elapsed, results["loadavg"][0], results["loadavg"][-1]))
    L.append("")
    if "error" in kafka:
        L.append("- Kafka did not run: %s" % kafka["error"])
        L.append("")
    L.append("### Commit throughput")
    L.append("")

    def med(xs, key=None):
        vals = [x[key] for x in xs] if key else xs
        return statistics.median(vals) if vals else None

    kafka_rd = kafka.get("rdkafka") or []
    kafka_b1 = kafka.get("bench1") or []
    L.append("| load | single kcoord | 3-node kcoord | 3-broker Kafka |")
    L.append("| --- | ---: | ---: | ---: |")
    L.append("| kcoord-bench commit, 100 groups, offsets/s | %s | %s | not run (below) |" % (
        fmt(med(tp["single"]["bench"], "offsets_per_s")),
        fmt(med(tp["cluster"]["bench"], "offsets_per_s"))))
    L.append("| kcoord-bench commit, 100 groups, p99 latency | %.2f ms | %.2f ms | - |" % (
        med(tp["single"]["bench"], "p99_ms"), med(tp["cluster"]["bench"], "p99_ms")))
    L.append("| kcoord-bench commit, 1 group, offsets/s | %s | %s | %s |" % (
        fmt(med(tp["single"]["bench1"], "offsets_per_s")),
        fmt(med(tp["cluster"]["bench1"], "offsets_per_s")),
        fmt(med(kafka_b1, "offsets_per_s")) if kafka_b1 else "not run"))
    L.append("| kcoord-bench commit, 1 group, p99 latency | %.2f ms | %.2f ms | %s |" % (
        med(tp["single"]["bench1"], "p99_ms"), med(tp["cluster"]["bench1"], "p99_ms"),
        "%.2f ms" % med(kafka_b1, "p99_ms") if kafka_b1 else "-"))
    L.append("| librdkafka, commits/s | %s | %s | %s |" % (
        fmt(med(tp["single"]["rdkafka"])), fmt(med(tp["cluster"]["rdkafka"])),
        fmt(med(kafka_rd)) if kafka_rd else "not run"))
    L.append("")
    L.append("- Each figure is the median of %d round(s), the servers alternating, a fresh "
             "kcoord (or cluster of three) per round, after one untimed round of each (Kafka's "
             "JIT compiler needs it); Kafka's cluster is started once." % plan["rounds"])
    L.append("- **kcoord-bench commit, 100 groups**: `build/bench/kcoord-bench commit "
             "--bootstrap ADDRESS %s`, the load scenarios' commit row (simple-consumer "
             "OffsetCommits of 10 partitions, 32 connections with 4 requests in flight each), "
             "against the single node and against the cluster (the tool asks FindCoordinator "
             "and drives the leader). Not against Kafka: the tool drives one coordinator, and "
             "Kafka spreads the 100 groups' coordinators over its three brokers. **1 group**: "
             "the same with `--groups 1`, so that every commit goes to one coordinator on Kafka "
             "too (a broker that leads that group's __consumer_offsets partition and waits "
             "for its two followers)." % " ".join(load_args))
    L.append("- **librdkafka**: %d client processes (`/usr/bin/python3`, the distribution's "
             "python3-confluent-kafka and librdkafka), each its own group and committing one "
             "partition, send %d asynchronous OffsetCommits each at once; commits per second of "
             "all together (tests/bench/security_bench.py's commit_rate). Each client has one "
             "connection to its coordinator; Kafka handles one request of a connection at a "
             "time (the next one waits until the previous one's answer is sent), so with "
             "replication each commit waits for the followers' next fetch, one after the other; "
             "kcoord reads on and answers each when it is committed. On Kafka the groups' "
             "coordinators are on whichever brokers lead their __consumer_offsets partitions."
             % (plan["clients"], plan["commits"]))
    single_rd, cluster_rd = med(tp["single"]["rdkafka"]), med(tp["cluster"]["rdkafka"])
    if single_rd and cluster_rd and 0.8 <= cluster_rd / single_rd <= 1.25:
        L.append("- With librdkafka the single kcoord and the cluster are within 25%% of each "
                 "other (%.2fx): there the %d client processes, on the same 2 cores, set the rate "
                 "rather than the servers; kcoord-bench's rows show the servers' own."
                 % (cluster_rd / single_rd, plan["clients"]))
    L.append("- Rounds (offsets/s, then commits/s): kcoord-bench 100 groups: single %s; "
             "cluster %s. 1 group: single %s; cluster %s%s. librdkafka: single %s; cluster %s%s."
             % (", ".join(fmt(x["offsets_per_s"]) for x in tp["single"]["bench"]),
                ", ".join(fmt(x["offsets_per_s"]) for x in tp["cluster"]["bench"]),
                ", ".join(fmt(x["offsets_per_s"]) for x in tp["single"]["bench1"]),
                ", ".join(fmt(x["offsets_per_s"]) for x in tp["cluster"]["bench1"]),
                "; Kafka " + ", ".join(fmt(x["offsets_per_s"]) for x in kafka_b1)
                if kafka_b1 else "",
                ", ".join(fmt(x) for x in tp["single"]["rdkafka"]),
                ", ".join(fmt(x) for x in tp["cluster"]["rdkafka"]),
                "; Kafka " + ", ".join(fmt(x) for x in kafka_rd) if kafka_rd else ""))
    L.append("")
    L.append("### The coordinator's node killed")
    L.append("")
    L += kill_table(results["kill"], plan, results.get("config") or {})
    L.append("")
    L.append("### The single node is not slower")
    L.append("")
    now = med(tp["single"]["bench"], "offsets_per_s")
    old_runs = tp.get("before", {}).get("bench") or []
    if old_runs:
        was = med(old_runs, "offsets_per_s")
        L.append("- In this run, alternating round by round with the single node above, the "
                 "same `kcoord-bench commit %s` against a single kcoord built from %s: %s "
                 "offsets/s (p99 %.2f ms; rounds %s) against %s now (p99 %.2f ms; rounds %s): "
                 "%.2fx." % (" ".join(load_args), before_note or "another build", fmt(was),
                             med(old_runs, "p99_ms"),
                             ", ".join(fmt(x["offsets_per_s"]) for x in old_runs), fmt(now),
                             med(tp["single"]["bench"], "p99_ms"),
                             ", ".join(fmt(x["offsets_per_s"]) for x in tp["single"]["bench"]),
                             now / was))
    if previous is None:
        L.append("- The page had no earlier load-scenario commit figure to compare with; this "
                 "run's single node: %s offsets/s." % fmt(now))
    else:
        prev, pcommit, pcmd, pwhen = previous
        L.append("- `kcoord-bench commit %s` against a single kcoord with flush=always: %s "
                 "offsets/s now (commit %s, median of %d), against %s offsets/s in the load "
                 "scenarios above (commit %s, `%s`, %s, median of 3), the same tool, options and "
                 "settings: %.2fx. The two ran at different times on a shared machine, so "
                 "this comparison carries the machine's load as well." % (
                     " ".join(load_args), fmt(now), commit, plan["rounds"], fmt(prev), pcommit,
                     pcmd, pwhen, now / prev))
    L.append("")
    return L


def kill_table(kill, plan, config):
    L = []
    sides = [("kcoord", "3-node kcoord"), ("kafka", "3-broker Kafka")]
    ok = [(s, n) for s, n in sides if isinstance(kill.get(s), list) and kill[s]]
    for s, n in sides:
        if isinstance(kill.get(s), dict):
            L.append("- %s: the kill rounds did not finish: %s" % (n, kill[s]["error"]))
    if not ok:
        return L
    L.append("| | " + " | ".join(n for _, n in ok) + " |")
    L.append("| --- |" + " ---: |" * len(ok))

    def row(label, fn):
        L.append("| %s | %s |" % (label, " | ".join(fn(kill[s]) for s, _ in ok)))

    row("rounds", lambda rs: "%d" % len(rs))
    row("kill -9 to the first acknowledged commit, median",
        lambda rs: "%.2f s" % statistics.median(r["recovery_s"] for r in rs))
    row("the same, max", lambda rs: "%.2f s" % max(r["recovery_s"] for r in rs))
    row("rounds in which a member saw an assign or revoke callback",
        lambda rs: "%d of %d" % (sum(1 for r in rs if r["callbacks"]), len(rs)))
    row("rounds in which the generation changed",
        lambda rs: "%d of %d" % (sum(1 for r in rs if r["gen_before"] != r["gen_after"]),
                                 len(rs)))
    row("rounds in which DescribeGroups listed other members after",
        lambda rs: "%d of %d" % (sum(1 for r in rs if not r["same_members"]), len(rs)))
    L.append("")
    for s, n in ok:
        L.append("- %s, per round (killed node, kill to first acknowledged commit, callbacks, "
                 "generation before -> after, failed commit attempts meanwhile): %s." % (
                     n, "; ".join("node %d, %.3f s, %d, %s -> %s, %d%s" % (
                         r["victim"], r["recovery_s"], r["callbacks"], r["gen_before"],
                         r["gen_after"], r["errors"],
                         " (%s)" % ", ".join(r["error_kinds"]) if r["error_kinds"] else "")
                         for r in kill[s])))
    L.append("- How: a committer thread sends one OffsetCommit (v2, generation -1, its own "
             "group) at a time to the coordinator that FindCoordinator on any live node names, "
             "and after an error or a refused connection asks again after 20 ms; the figure is "
             "the time from kill -9 to the acknowledgement of the first commit it *sent* after "
             "the kill. Three librdkafka consumers (`/usr/bin/python3`, session.timeout.ms=%d, "
             "heartbeat.interval.ms=3000, classic protocol) form a group subscribed to a "
             "6-partition topic; the committer's group maps to the same __consumer_offsets "
             "partition, so the killed node coordinates both. Callbacks are counted from the kill "
             "to %d s after it (past the session timeout, so a member a new coordinator did not "
             "know would have been expelled by then); the generation is each member's own "
             "(librdkafka's consumer group metadata) once the group is stable; DescribeGroups "
             "has no generation, its member ids before and after are compared. The killed node "
             "is started again on its data right after the first acknowledged commit (Kafka: "
             "`kafka-ref restart-node`, and the next round waits until the partition's ISR has "
             "all three again). Kafka's own settings are its defaults: a dead broker is fenced "
             "after broker.session.timeout.ms=9000 without heartbeats, and only then does "
             "another broker lead its partitions and load the group."
             % (SESSION_MS, plan["observe_s"]))
    if "cluster.election.timeout.ms" in config:
        L.append("- kcoord's raft settings are its defaults: cluster.election.timeout.ms=%s "
                 "(randomized between 1x and 2x: a follower that hears nothing from the leader "
                 "for that long starts an election) and cluster.heartbeat.timeout.ms=%s; the "
                 "election is most of kcoord's figure, and the members' group needs no load on "
                 "the new leader, which applied every committed record as a follower."
                 % (config["cluster.election.timeout.ms"],
                    config.get("cluster.heartbeat.timeout.ms", "?")))
    return L
