#!/usr/bin/env python3
"""compat: run the same consumer-group scenarios with real clients against kcoord and against a
reference Apache Kafka broker, and write docs/COMPATIBILITY.md from the results.

    tests/compat/compat.py [--server kcoord|kafka|both] [--only CLIENT/SCENARIO]... [--quick]
                   [--build DIR] [--doc PATH] [--list] [--keep-logs] [--jobs N]

Clients (the first part of a cell's name):
    librdkafka-debian  librdkafka 2.0.2 through Debian's python3-confluent-kafka 1.7.0
                       (/usr/bin/python3), driven by tests/compat/rk_member.py
    librdkafka-wheel   the newest librdkafka, bundled in the confluent-kafka wheel pinned in
                       tests/compat/requirements.txt (the venv of scripts/compat-venv)
    java               the Java consumer of kafka-clients (classic protocol), through Kafka's
                       own org.apache.kafka.tools.VerifiableConsumer
    mixed              one group of a java, a librdkafka-debian and a librdkafka-wheel member
    librdkafka-consumer  the librdkafka of the wheel with group.protocol=consumer (KIP-848)
    java-consumer      VerifiableConsumer with --group-protocol consumer (KIP-848)
    mixed-consumer     one consumer-protocol group of java-consumer and librdkafka-consumer
                       members
    java-migration     VerifiableConsumer members restarted, one at a time, between
                       --group-protocol classic and consumer (one group of both kinds)
    librdkafka-migration  the same with the wheel's librdkafka (group.protocol)
    mixed-protocol     one group of a classic java, a java-consumer and a
                       librdkafka-consumer member
    kafka-tools        Kafka's ConsumerGroupCommand, BrokerApiVersionsCommand and ConfigCommand
    raw-diff           the differential raw-request checker (tests/compat/compat_diff.py),
                       when present
    secure-*           security cells (SASL_SSL SCRAM and PLAIN, mTLS, Kafka's ACL and SCRAM
                       tools, refusals) on one secured server per side, run after that side's
                       other cells: tests/compat/secure.py describes them

Consumer scenarios (every consumer client runs each one):
    split    3 members subscribe to a 6-partition topic: each partition has exactly one owner
    leave    one of 3 members closes: its partitions move before its session would expire
    kill     one of 3 members is killed with SIGKILL: its partitions move after the 6 s session
             timeout, not before
    static   3 static members (group.instance.id); a follower restarts with the same id: it
             gets the same partitions back and the others see no rebalance
    static-leader  the same, with the group leader restarting
    cooperative    3 members with the cooperative-sticky assignor; one leaves: the others only
             gain partitions
    commit   committed offsets are read back by the member, by a new consumer, and by the
             server's OffsetFetch
    empty    every member leaves: the group is Empty with no members, its offsets kept
The mixed client runs split, leave and cooperative.

Consumer-protocol scenarios (librdkafka-consumer and java-consumer; mixed-consumer runs
incremental, leave, kill and static): incremental (3 members split the topic, a fourth joins: the others'
revoke callbacks name only the partitions that move to it), leave, kill (after the server's
45 s session timeout), static, commit (with member epochs) and empty, as above but judged
through ConsumerGroupDescribe; static-leader and cooperative are n/a. Both servers keep Kafka's
defaults for consumer groups (45 s sessions, 5 s heartbeats, the uniform assignor). These cells
run side by side, up to --jobs (default 8) at once, after the classic cells of each server.
Mixed-group scenarios: rolling (java-migration, librdkafka-migration: 3 classic members are
restarted one at a time with the consumer protocol, then back to classic) and join-leave
(mixed-protocol); after every close and every start the group must settle with one owner per
partition, the server agreeing (ConsumerGroupDescribe or DescribeGroups, whichever kind the
group is then) and the committed offsets kept; the members' callbacks, replayed in timestamp
order, never show a partition given to a member before its previous owner revoked it. They run
side by side with the consumer-protocol cells.
Tool scenarios: kafka-tools/describe (--list, --describe --members/--offsets/--state, refusals
on an active group), kafka-tools/reset-delete (--reset-offsets --execute, --delete-offsets,
--delete), kafka-tools/api-versions (BrokerApiVersionsCommand; kcoord's answer goes into the
document), kafka-tools/group-configs (ConfigCommand --entity-type groups: --alter --add-config,
--describe, --delete-config). raw-diff/requests runs tests/compat/compat_diff.py once with both
servers' addresses (--kcoord, --kafka); its exit status is the cell's result. Every
ConsumerGroupCommand and ConfigCommand output of a cell is also compared, normalised, with the
same command's output on Kafka (of a --list, only the cell's own group), and the document lists
any difference.

Each cell is judged twice: by what the clients report (rebalance callbacks, commit results, tool
output) and by what the server says about the group (tests/compat/kwire.py: DescribeGroups and
OffsetFetch with old, fixed request versions; ConsumerGroupDescribe v0 for consumer groups). Waits are for events, bounded; nothing sleeps a
fixed time except the static scenario's short check that no rebalance follows the restart.

Servers are set up alike: every cell has its own topic (6 partitions) and group, kcoord is
started once with all topics (`--set topics=...`), Kafka (scripts/kafka-ref, one broker for the
whole run, its own KAFKA_REF_STATE) gets them through CreateTopics; both have node id 1,
offsets.topic.num.partitions=10 and group.initial.rebalance.delay.ms=0.

--server: which servers to run against (default both). --only: glob(s) over CLIENT/SCENARIO,
e.g. 'java/*' or '*/kill' (repeatable). --quick: split, leave and commit for each consumer
client, and kafka-tools/describe (about a minute). --build: where kcoord is (default build).
--doc: where the table goes; by default docs/COMPATIBILITY.md, and only after a full run (both
servers, every cell). --list: print the cells and exit. --keep-logs: keep the run's directory
of logs even when everything passed (it is always kept after a failure, and its path printed).

Exit status: 0 when every cell that ran on kcoord passed; 1 when a cell failed on kcoord and
passed on Kafka (or Kafka did not run it), or failed on both (a suite problem to fix); 2 on a
usage error or when a server or client could not be set up.
"""
import argparse
import concurrent.futures
import datetime
import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
sys.path.insert(0, ROOT)
from tests.support import kcoord  # noqa: E402
import kwire  # noqa: E402
import secure  # noqa: E402

KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-ref")
RK_MEMBER = os.path.join(ROOT, "tests", "compat", "rk_member.py")
DEBIAN_PYTHON = "/usr/bin/python3"
PARTITIONS = 6
OFFSETS_PARTITIONS = 10
KILL_SESSION_MS = 6000       # kill: group.min.session.timeout.ms of both servers
SESSION_MS = 30000           # everything else: long enough never to expire by accident
# Consumer groups (KIP-848): the session timeout, heartbeat interval and assignor are the
# server's. Both servers run with Kafka's defaults (group.consumer.session.timeout.ms 45000,
# which is also Kafka's group.consumer.min.session.timeout.ms, and
# group.consumer.heartbeat.interval.ms 5000), as scripts/kafka-ref sets no others.
CONSUMER_SESSION_MS = 45000
CONSUMER_HEARTBEAT_MS = 5000
CONSUMER_ASSIGNOR = "uniform"
WAIT_S = 45                  # the longest any single wait may take
CGC = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
APIVERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
VERIFIABLE = "org.apache.kafka.tools.VerifiableConsumer"
# Client JVMs start faster with the C1 compiler only and the serial collector.
CLIENT_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

CONSUMER_SCENARIOS = ["split", "leave", "kill", "static", "static-leader", "cooperative",
                      "commit", "empty"]
MIXED_SCENARIOS = ["split", "leave", "cooperative"]
# The consumer-protocol clients: incremental replaces split (it starts with one) and
# cooperative (the protocol is always incremental); static-leader is n/a (no group leader).
KIP848_SCENARIOS = ["incremental", "leave", "kill", "static", "static-leader", "cooperative",
                    "commit", "empty"]
KIP848_MIXED_SCENARIOS = ["incremental", "leave", "kill", "static"]
JAVA_ASSIGNORS = {"cooperative-sticky":
                  "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}
TOOL_SCENARIOS = ["describe", "reset-delete", "api-versions", "group-configs"]
QUICK = {"split", "leave", "commit", "describe"}

SERVERS = ["kcoord", "kafka"]


class Fail(Exception):
    """A cell failed; the message says what was expected and what happened."""


class NotApplicable(Exception):
    """A cell that cannot run with this client; the message says why."""


class SetupError(Exception):
    pass


def log(msg):
    print(msg, flush=True)


# ---- child processes -------------------------------------------------------------------------


class Children:
    """Every process the run starts, so that all of them are ended on any exit."""

    def __init__(self):
        self.procs = []
        self.lock = threading.Lock()

    def add(self, p):
        with self.lock:
            self.procs.append(p)

    def kill_all(self):
        with self.lock:
            procs = list(self.procs)
        for p in procs:
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


CHILDREN = Children()


def clean_env(extra=None):
    """The environment for children: no KCOORD_* (kcoord rejects unknown settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCOORD_")}
    env.update(extra or {})
    return env


def spawn(args, logpath, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=None,
          stderr=None):
    """Start a child in its own session (a Ctrl-C reaches only this script, which then ends
    every child), stderr to logpath (or where stderr says)."""
    err = open(logpath, "ab")
    try:
        p = subprocess.Popen(args, stdin=stdin, stdout=stdout, stderr=stderr or err,
                             env=env or clean_env(),
                             start_new_session=True, cwd=ROOT)
    finally:
        err.close()
    CHILDREN.add(p)
    return p


def run_tool(args, logpath, timeout=90, env=None, stderr=None):
    """Run a command to its end: (exit status, its stdout as text; also its stderr with
    stderr=subprocess.STDOUT)."""
    with open(logpath, "ab") as lf:
        lf.write(("$ %s\n" % " ".join(shlex.quote(a) for a in args)).encode())
    p = spawn(args, logpath, stdout=subprocess.PIPE, env=env, stderr=stderr)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Fail("%s did not finish within %d s" % (os.path.basename(args[0]), timeout))
    text = out.decode(errors="replace")
    with open(logpath, "a") as lf:
        lf.write(text)
    # The tools print their errors on stdout or stderr; both are in logpath, stdout in text.
    return p.returncode, text


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def wait_until(what, cond, timeout=WAIT_S, interval=0.1):
    """Poll cond() until it returns True; it returns anything else (a description of the
    current state) while not yet. Raises Fail with the last state after timeout."""
    deadline = time.monotonic() + timeout
    state = None
    while True:
        try:
            state = cond()
        except kwire.KwireError as e:
            state = "server: %s" % e
        if state is True:
            return
        if time.monotonic() >= deadline:
            raise Fail("%s: not within %d s; last: %s" % (what, timeout, state))
        time.sleep(interval)


def retrying(what, fn, timeout=WAIT_S):
    """fn() once the server answers it without a retriable coordinator error (a fresh Kafka
    creates its offsets topic on the first FindCoordinator)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except kwire.KwireRetry as e:
            if time.monotonic() >= deadline:
                raise Fail("%s: not within %d s; last: %s" % (what, timeout, e))
            time.sleep(0.2)


# ---- servers ---------------------------------------------------------------------------------


class Kcoord:
    name = "kcoord"

    def __init__(self, binary, workdir, topics):
        self.binary = binary
        self.dir = os.path.join(workdir, "kcoord")
        self.topics = topics
        self.proc = None
        self.bootstrap = None
        self.log = os.path.join(workdir, "kcoord.log")
        self.starts = 0
        self.exit_status = 0
        self.run = None  # the tests.support Kcoord of the current start

    def start(self):
        data = os.path.join(self.dir, "data-%d" % self.starts)
        self.starts += 1
        os.makedirs(data)
        spec = ",".join("%s:%d" % (t, PARTITIONS) for t in sorted(self.topics))
        try:
            self.run = kcoord.Kcoord(data, "topics=" + spec,
                                     "node.id=1",  # as Kafka's (tool output names the node)
                                     "offsets.topic.num.partitions=%d" % OFFSETS_PARTITIONS,
                                     "group.initial.rebalance.delay.ms=0", binary=self.binary,
                                     log_path=self.log, new_session=True)
        except AssertionError as e:  # it exited, or did not load its partitions within 30 s
            raise SetupError("kcoord did not start:\n" + str(e)[-3000:]) from None
        self.proc = self.run.proc
        CHILDREN.add(self.proc)
        self.bootstrap = "127.0.0.1:%d" % self.run.port

    def check_alive(self):
        """None, or why the server is gone (it is restarted for the next cell)."""
        if self.proc.poll() is None:
            return None
        rc = self.proc.returncode
        self.start()
        return "kcoord exited with status %s (restarted for the next cell)" % rc

    def stop(self):
        """SIGTERM; the exit status must be 0 (a sanitizer build reports its findings here)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.exit_status = self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_status = "still running 20 s after SIGTERM"
        if self.run is not None:
            self.run.stop()  # reaped already: its last lines reach the log file

    def describe(self):
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return (out.stdout or out.stderr).strip()


class Kafka:
    """The reference broker of scripts/kafka-ref, started in the background at once (so that its
    JVM warms up while the kcoord cells run) and waited for before its first cell."""
    name = "kafka"

    def __init__(self, workdir, topics):
        self.state = os.path.join(workdir, "kafka-ref-state")
        self.env = clean_env({"KAFKA_REF_STATE": self.state})
        self.env.pop("KAFKA_REF_JAVA_OPTS", None)
        self.topics = topics
        self.log = os.path.join(workdir, "kafka-ref.log")
        self.bootstrap = None
        self.starter = None
        self.version = None

    def begin(self):
        self.starter = spawn([KAFKA_REF, "start", "--partitions", str(OFFSETS_PARTITIONS),
                              "--initial-delay", "0"], self.log, env=self.env)

    def finish_start(self):
        if self.bootstrap is not None:
            return
        try:
            out, _ = self.starter.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            raise SetupError("kafka-ref start did not finish in 240 s:\n" + tail(self.log))
        m = re.search(r"KAFKA_REF_BOOTSTRAP=(\S+)", out.decode(errors="replace"))
        if self.starter.returncode != 0 or not m:
            raise SetupError("kafka-ref start failed:\n" + tail(self.log, 40))
        self.bootstrap = m.group(1)
        got = kwire.create_topics(self.bootstrap, {t: PARTITIONS for t in self.topics})
        bad = {t: e for t, e in got.items() if e[0] != 0}
        if bad:
            raise SetupError("CreateTopics on Kafka: %r" % bad)

        def led():
            md = kwire.metadata(self.bootstrap, sorted(self.topics))
            missing = [t for t in self.topics
                       if t not in md or md[t][0] != 0 or len(md[t][1]) != PARTITIONS]
            return True if not missing else "no leaders yet for %s" % missing[:5]

        try:
            wait_until("Kafka's topics have leaders", led, timeout=60)
        except Fail as e:
            raise SetupError(str(e))

    def start(self):
        self.finish_start()

    def check_alive(self):
        p = subprocess.run([KAFKA_REF, "status"], env=self.env, capture_output=True, text=True)
        return None if p.returncode == 0 else "the Kafka broker is not running: " + p.stdout

    def stop(self):
        if self.starter is not None and self.starter.poll() is None:
            self.starter.kill()
            self.starter.wait()
        if self.starter is not None:
            subprocess.run([KAFKA_REF, "stop", "--timeout", "30"], env=self.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kafka_ref_env():
    p = subprocess.run([KAFKA_REF, "env"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SetupError("scripts/kafka-ref env failed: " + p.stderr)
    env = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition("=")
        env[k] = v.strip("'")
    return env


# ---- members ---------------------------------------------------------------------------------


class Member:
    """One consumer process (rk_member.py or VerifiableConsumer): its JSON events, read by a
    thread, and the partitions it holds according to its rebalance callbacks."""

    def __init__(self, cell, client, idx, instance=None, session_ms=SESSION_MS,
                 subscribe=True, autocommit=False, assignor=None):
        self.cell = cell
        self.client = client
        self.name = "%s-m%d%s" % (cell.group, idx, "" if instance is None else "-" + instance)
        self.client_id = "c%d" % idx
        self.logpath = os.path.join(cell.dir, "%s.%d.log" % (self.client_id, cell.next_seq()))
        self.events = []
        self.held = frozenset()
        self.lock = threading.Lock()
        args = client.member_args(cell, self, instance, session_ms, subscribe, autocommit,
                                  assignor)
        self.proc = spawn(args, self.logpath, stdin=subprocess.PIPE, env=client.env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        cell.members.append(self)

    def _read(self):
        out = open(self.logpath + ".events", "w")
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            out.write(line + "\n")
            out.flush()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            ev["t"] = time.monotonic()
            with self.lock:
                parts = frozenset(p["partition"] for p in ev.get("partitions") or []
                                  if isinstance(p, dict) and p.get("topic") == self.cell.topic)
                if ev.get("name") == "partitions_revoked":
                    self.held = self.held - parts
                elif ev.get("name") == "partitions_assigned":
                    self.held = self.held | parts
                self.events.append(ev)
        out.close()

    def alive(self):
        return self.proc.poll() is None

    def count(self, *names):
        with self.lock:
            return sum(1 for e in self.events if e.get("name") in names)

    def find(self, name, after=0):
        with self.lock:
            for e in self.events[after:]:
                if e.get("name") == name:
                    return e
        return None

    def wait_event(self, name, after=0, timeout=WAIT_S):
        box = []

        def cond():
            e = self.find(name, after)
            if e is not None:
                box.append(e)
                return True
            if not self.alive() and not self.reader.is_alive():
                raise Fail("%s exited (status %s) before %s:\n%s"
                           % (self.client_id, self.proc.returncode, name, tail(self.logpath)))
            return "no %s event yet" % name

        wait_until("%s: %s" % (self.client_id, name), cond, timeout)
        return box[0]

    def send(self, cmd):
        if self.client.kind != "rk":
            raise NotApplicable("%s takes no commands" % self.client.name)
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.stdin.flush()

    def commit(self, offsets):
        """offsets: {partition: (offset, metadata)}; synchronous; raises Fail unless committed."""
        n = len(self.events)
        self.send({"cmd": "commit",
                   "offsets": [[p, o, m] for p, (o, m) in sorted(offsets.items())]})
        e = self.wait_event("offsets_committed", n)
        if not e.get("success"):
            raise Fail("%s: commit failed: %s" % (self.client_id, e.get("error")))

    def committed(self, partitions):
        """{partition: (offset, metadata)} as the client reads them back (OffsetFetch)."""
        n = len(self.events)
        self.send({"cmd": "committed", "partitions": sorted(partitions)})
        e = self.wait_event("committed", n)
        return {o["partition"]: (o["offset"], o.get("metadata")) for o in e["offsets"]}

    def stop(self, timeout=WAIT_S):
        """A graceful close (SIGTERM: revoke, LeaveGroup unless static), waited for."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Fail("%s did not exit within %d s of SIGTERM" % (self.client_id, timeout))
        self.reader.join(timeout=10)
        if self.find("shutdown_complete") is None:
            raise Fail("%s exited (status %s) without shutdown_complete:\n%s"
                       % (self.client_id, self.proc.returncode, tail(self.logpath)))

    def kill(self):
        self.proc.kill()
        self.proc.wait()


class Client:
    """A client under test: how to start one member, and what it can do."""

    def __init__(self, name, kind, label, python=None, protocol="classic"):
        self.name = name
        self.kind = kind  # "rk", "java", "mixed", "tools", "diff"
        self.label = label
        self.python = python
        self.protocol = protocol  # group.protocol: "classic" or "consumer" (KIP-848)
        self.env = None
        self.version = None

    def member_args(self, cell, m, instance, session_ms, subscribe, autocommit, assignor):
        if self.kind == "rk":
            args = [self.python, RK_MEMBER, "--bootstrap", cell.server.bootstrap,
                    "--group", cell.group, "--topic", cell.topic, "--client-id", m.client_id]
            if self.protocol == "consumer":
                # The session timeout and heartbeat interval are the server's.
                args += ["--group-protocol", "consumer"]
            else:
                args += ["--session-timeout", str(session_ms)]
            if instance:
                args += ["--instance-id", instance]
            if not subscribe:
                args.append("--no-subscribe")
            if assignor:
                args += ["--assignor", assignor]
            return args
        if self.kind == "java":
            if not subscribe:
                raise NotApplicable("VerifiableConsumer always subscribes")
            conf = m.logpath + ".properties"
            consumer = self.protocol == "consumer"
            with open(conf, "w") as f:
                # The Java client refuses heartbeat.interval.ms and session.timeout.ms with the
                # consumer protocol: the server sets them.
                f.write("client.id=%s\n%sauto.commit.interval.ms=500\n"
                        % (m.client_id, "" if consumer else "heartbeat.interval.ms=500\n"))
            args = [KAFKA_REF, "run-class", VERIFIABLE, "--bootstrap-server",
                    cell.server.bootstrap, "--topic", cell.topic, "--group-id", cell.group,
                    "--group-protocol", self.protocol, "--command-config", conf]
            if not consumer:
                args += ["--session-timeout", str(session_ms)]
            if instance:
                args += ["--group-instance-id", instance]
            if autocommit:
                args.append("--enable-autocommit")
            if assignor and consumer:
                args += ["--group-remote-assignor", assignor]
            elif assignor:
                args += ["--assignment-strategy", JAVA_ASSIGNORS[assignor]]
            return args
        raise NotApplicable("%s has no consumer" % self.name)


# ---- cells -----------------------------------------------------------------------------------


def slug(s):
    return re.sub(r"[^a-z0-9-]", "-", s.lower())


class Cell:
    """One (client, scenario, server) run: its names, its members, its log directory."""

    def __init__(self, client, scenario, server, workdir):
        self.client = client
        self.scenario = scenario
        self.server = server
        self.topic = topic_name(client.name, scenario)
        self.group = "g-" + self.topic
        self.dir = os.path.join(workdir, server.name, "%s-%s" % (client.name, scenario))
        os.makedirs(self.dir, exist_ok=True)
        self.members = []
        self.notes = []
        self.seq = 0
        self.extra = {}

    def next_seq(self):
        self.seq += 1
        return self.seq

    def note(self, text):
        self.notes.append(text)

    def member(self, idx, **kw):
        """Member idx of this cell's client; in the mixed client, of each client in turn."""
        client = self.client
        if client.kind == "mixed":
            client = client.parts[idx % len(client.parts)]
        return Member(self, client, idx, **kw)

    def cleanup(self):
        for m in self.members:
            if m.alive():
                m.kill()
            try:
                m.proc.stdin.close()
            except OSError:
                pass
            m.reader.join(timeout=5)

    # Observations through the server (kwire).

    def describe(self):
        """The group as the server describes it: DescribeGroups for a classic group,
        ConsumerGroupDescribe for a consumer group (state, members with client_id, instance_id,
        member_id, member_epoch, assignment and target)."""
        if self.client.protocol == "consumer":
            g = kwire.consumer_group_describe(self.server.bootstrap, self.group)
            if g["error"] == kwire.GROUP_ID_NOT_FOUND:
                g["state"] = "(no group)"
            elif g["error"] != kwire.NONE:
                raise kwire.KwireError("ConsumerGroupDescribe(%s): error %d %s"
                                       % (self.group, g["error"], g["message"] or ""))
            return g
        return kwire.describe_group(self.server.bootstrap, self.group)

    def offsets(self):
        """{partition: (offset, metadata)} committed for this cell's topic."""
        got = kwire.fetch_offsets(self.server.bootstrap, self.group)
        return {p: v for (t, p), v in got.items() if t == self.topic}

    def tool(self, *args, timeout=90):
        """Run ConsumerGroupCommand against this cell's server: its output. The output is also
        kept, normalised, to be compared with the other server's; of a --list, only the header
        and this cell's group are compared. The other groups of the run are not the cell's to
        judge, and their states depend on the moment: a static member that closed in an
        earlier cell stays in its group until its session times out (30 s), about when the
        tool cells list the groups, so one server may list that group Stable and the other,
        a moment later, Empty."""
        rc, out = run_tool([KAFKA_REF, "run-class", CGC, "--bootstrap-server",
                            self.server.bootstrap] + list(args),
                           os.path.join(self.dir, "tools.log"), timeout, env=TOOLS_ENV)
        kept = out
        if "--list" in args:
            kept = "\n".join(l for l in out.splitlines()
                             if l.split()[:1] in ([self.group], ["GROUP"]))
        self.extra.setdefault("tool_outputs", []).append(
            (" ".join(args), normalise(kept, self.server.bootstrap)))
        return out


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalise(out, bootstrap):
    """Tool output with what must differ between two servers masked (address, generated member
    ids, Java stack frames) and its lines sorted (Kafka prints rows in hash-map order)."""
    out = out.replace(bootstrap, "HOST:PORT")
    out = UUID.sub("UUID", out)
    lines = [re.sub(r"\s+", " ", l).strip() for l in out.splitlines()]
    return sorted(l for l in lines if l and not l.startswith("at ") and l != "...")


def topic_name(client, scenario):
    return slug("%s-%s" % (client, scenario))


def split_state(cell, members, partitions=PARTITIONS, protocol="range"):
    """True when the members' own views split the topic (each partition exactly one owner, an
    even share each) and the server's DescribeGroups agrees: Stable, these members, these
    assignments. Otherwise a description of what is not yet so."""
    for m in members:
        if not m.alive():
            raise Fail("%s exited (status %s):\n%s"
                       % (m.client_id, m.proc.returncode, tail(m.logpath)))
    held = {m.client_id: m.held for m in members}
    allp = set(range(partitions))
    owned = [p for s in held.values() for p in s]
    share = partitions // len(members)
    if sorted(owned) != sorted(allp) or \
            any(len(s) not in (share, -(-partitions // len(members))) for s in held.values()):
        return "clients hold %s" % {c: sorted(s) for c, s in held.items()}
    if cell.client.protocol == "consumer":
        return consumer_split_state(cell, held)
    g = cell.describe()
    if g["state"] != "Stable" or len(g["members"]) != len(members):
        return "server: state %s, %d members" % (g["state"], len(g["members"]))
    if (g["protocol_type"], g["protocol"]) != ("consumer", protocol):
        raise Fail("DescribeGroups: protocol type %r, protocol %r; want consumer, %s"
                   % (g["protocol_type"], g["protocol"], protocol))
    seen = {}
    for gm in g["members"]:
        seen[gm["client_id"]] = frozenset(gm["assignment"].get(cell.topic, []))
    if seen != held:
        return "server says %s, clients %s" % ({c: sorted(s) for c, s in seen.items()},
                                               {c: sorted(s) for c, s in held.items()})
    return True


def consumer_split_state(cell, held):
    """split_state's server side for a consumer group (ConsumerGroupDescribe): Stable, these
    members, each one's assignment its target and what its client holds."""
    g = cell.describe()
    if g["state"].lower() != "stable" or len(g["members"]) != len(held):
        return "server: state %s, %d members" % (g["state"], len(g["members"]))
    if g["assignor"] != CONSUMER_ASSIGNOR:
        raise Fail("ConsumerGroupDescribe: assignor %r; want %s" % (g["assignor"],
                                                                     CONSUMER_ASSIGNOR))
    seen, target = {}, {}
    for gm in g["members"]:
        seen[gm["client_id"]] = frozenset(gm["assignment"].get(cell.topic, []))
        target[gm["client_id"]] = frozenset(gm["target"].get(cell.topic, []))
    if seen != held or target != held:
        return "server says %s (target %s), clients %s" % (
            {c: sorted(s) for c, s in seen.items()}, {c: sorted(s) for c, s in target.items()},
            {c: sorted(s) for c, s in held.items()})
    return True


def wait_split(cell, members, what, timeout=WAIT_S, protocol="range"):
    wait_until(what, lambda: split_state(cell, members, protocol=protocol), timeout)
    return {m.client_id: sorted(m.held) for m in members}


def fmt_assign(a):
    return " ".join("%s%s" % (c, "".join("[%d]" % p for p in ps)) for c, ps in sorted(a.items()))


# ---- consumer scenarios ----------------------------------------------------------------------


def sc_split(cell):
    ms = [cell.member(i) for i in range(3)]
    a = wait_split(cell, ms, "3 members split the topic")
    cell.note("split %s" % fmt_assign(a))
    for m in ms:
        m.stop()


def sc_leave(cell):
    ms = [cell.member(i) for i in range(3)]
    wait_split(cell, ms, "3 members split the topic")
    t0 = time.monotonic()
    ms[0].stop()
    if ms[0].count("partitions_revoked") == 0:
        raise Fail("c0 closed without a revoke callback")
    wait_split(cell, ms[1:], "the 2 others take c0's partitions")
    dt = time.monotonic() - t0
    session = CONSUMER_SESSION_MS if cell.client.protocol == "consumer" else SESSION_MS
    if dt * 1000 >= session * 0.8:
        raise Fail("partitions moved only after %.1f s: the LeaveGroup was not honoured" % dt)
    cell.note("moved %.1f s after the close" % dt)
    for m in ms[1:]:
        m.stop()


def sc_kill(cell):
    session, heartbeat = KILL_SESSION_MS, 500
    if cell.client.protocol == "consumer":
        session, heartbeat = CONSUMER_SESSION_MS, CONSUMER_HEARTBEAT_MS
    ms = [cell.member(i, session_ms=KILL_SESSION_MS) for i in range(3)]
    wait_split(cell, ms, "3 members split the topic")
    t0 = time.monotonic()
    ms[0].kill()
    wait_split(cell, ms[1:], "the 2 others take the killed member's partitions",
               timeout=session / 1000 + 30)
    dt = time.monotonic() - t0
    # The last heartbeat came at most heartbeat.interval.ms before the kill.
    if dt < (session - heartbeat) / 1000 - 0.5:
        raise Fail("partitions moved %.1f s after the kill, before the %d ms session timeout"
                   % (dt, session))
    cell.note("moved %.1f s after SIGKILL" % dt)
    for m in ms[1:]:
        m.stop()


def sc_incremental(cell):
    """Consumer protocol: 3 members split the topic, a fourth joins; the old members give up
    only the partitions that move to it (each revoke callback names only those) and keep the
    others without a callback."""
    ms = [cell.member(i) for i in range(3)]
    a = wait_split(cell, ms, "3 members split the topic")
    marks = [len(m.events) for m in ms]
    t0 = time.monotonic()
    ms.append(cell.member(3))
    b = wait_split(cell, ms, "4 members split the topic")
    dt = time.monotonic() - t0
    moved = []
    for m, mark in zip(ms[:3], marks):
        with m.lock:
            evs = list(m.events[mark:])
        revoked = set()
        for e in evs:
            ps = {p["partition"] for p in e.get("partitions") or []
                  if p.get("topic") == cell.topic}
            if e.get("name") == "partitions_revoked":
                if e.get("lost"):
                    raise Fail("%s lost partitions %s" % (m.client_id, sorted(ps)))
                revoked |= ps
            elif e.get("name") == "partitions_assigned" and ps:
                raise Fail("%s was assigned %s when c3 joined" % (m.client_id, sorted(ps)))
        lost = set(a[m.client_id]) - set(b[m.client_id])
        if revoked != lost:
            raise Fail("%s had %s, keeps %s, but its revoke callbacks named %s"
                       % (m.client_id, a[m.client_id], b[m.client_id], sorted(revoked)))
        if lost:
            moved.append("%s%s" % (m.client_id, "".join("[%d]" % p for p in sorted(lost))))
    if set(b["c3"]) != {p for c in a for p in set(a[c]) - set(b[c])}:
        raise Fail("c3 holds %s, not what the others gave up" % b["c3"])
    cell.note("split %s; c3 joined: %s (%.1f s), only %s revoked"
              % (fmt_assign(a), fmt_assign(b), dt, " ".join(moved)))
    for m in ms:
        m.stop()


def sc_cooperative(cell):
    if cell.client.protocol == "consumer":
        raise NotApplicable("the consumer protocol is always incremental, with a server-side "
                            "assignor: see incremental")
    coop = "cooperative-sticky"
    ms = [cell.member(i, assignor=coop) for i in range(3)]
    a = wait_split(cell, ms, "3 cooperative members split the topic", protocol=coop)
    marks = [len(m.events) for m in ms[1:]]
    t0 = time.monotonic()
    ms[0].stop()
    b = wait_split(cell, ms[1:], "the 2 others take c0's partitions", protocol=coop)
    dt = time.monotonic() - t0
    for m, mark in zip(ms[1:], marks):
        revoked = [e for e in m.events[mark:] if e.get("name") == "partitions_revoked"
                   and e.get("partitions")]
        if revoked:
            raise Fail("%s had partitions revoked after c0 left: %s"
                       % (m.client_id, [e["partitions"] for e in revoked]))
        if not set(a[m.client_id]) <= set(b[m.client_id]):
            raise Fail("%s lost partitions: had %s, has %s"
                       % (m.client_id, a[m.client_id], b[m.client_id]))
    cell.note("split %s; after c0 left %s (%.1f s), nothing revoked"
              % (fmt_assign(a), fmt_assign(b), dt))
    for m in ms[1:]:
        m.stop()


def sc_static(cell, restart=2):
    """Static members c0 (the leader: it joins first, alone), c1, c2; member `restart` closes
    (a static member stays in the group until its session expires) and comes back."""
    inst = ["%s-i%d" % (cell.group, i) for i in range(3)]
    consumer = cell.client.protocol == "consumer"
    if consumer and restart == 0:
        raise NotApplicable("a consumer group has no leader: the coordinator assigns")
    if consumer:
        ms = [cell.member(i, instance=inst[i]) for i in range(3)]
    else:
        m0 = cell.member(0, instance=inst[0])
        wait_split(cell, [m0], "the first static member gets the topic")
        ms = [m0] + [cell.member(i, instance=inst[i]) for i in (1, 2)]
    a = wait_split(cell, ms, "3 static members split the topic")
    name = "c%d" % restart
    before = cell.describe()
    old_id = [gm["member_id"] for gm in before["members"] if gm["client_id"] == name]
    if [gm["instance_id"] for gm in before["members"] if gm["client_id"] == name] != \
            [inst[restart]]:
        raise Fail("DescribeGroups does not show %s's group.instance.id: %r"
                   % (name, before["members"]))
    others = [m for i, m in enumerate(ms) if i != restart]
    counts = [m.count("partitions_assigned", "partitions_revoked") for m in others]
    marks = [len(m.events) for m in others]
    ms[restart].stop()
    g = cell.describe()
    if len(g["members"]) != 3:
        raise Fail("after the static member's close the group has %d members (state %s): "
                   "it left instead of staying until its session timeout"
                   % (len(g["members"]), g["state"]))
    t0 = time.monotonic()
    again = cell.member(restart, instance=inst[restart])

    def back():
        if not again.alive():
            raise Fail("the restarted member exited:\n" + tail(again.logpath))
        if again.count("partitions_assigned") == 0:
            return "the restarted member has no assignment yet"
        return True if sorted(again.held) == a[name] else \
            "the restarted member holds %s, had %s" % (sorted(again.held), a[name])

    wait_until("the restarted static member gets its partitions back", back)
    dt = time.monotonic() - t0
    # No rebalance: with 500 ms heartbeats, a rebalance reaches the others well within 2 s; a
    # consumer group's member hears of one at its next heartbeat.
    settle = time.monotonic() + (CONSUMER_HEARTBEAT_MS / 1000 + 1.0 if consumer else 2.0)
    while time.monotonic() < settle:
        now = [m.count("partitions_assigned", "partitions_revoked") for m in others]
        if now != counts:
            raise Fail("the other members rebalanced after the restart: %s" % [
                [e["name"] for e in m.events[mark:]] for m, mark in zip(others, marks)])
        time.sleep(0.1)
    final = [again if i == restart else m for i, m in enumerate(ms)]
    wait_until("the group is Stable with the same split", lambda: split_state(cell, final))
    g = cell.describe()
    new_id = [gm["member_id"] for gm in g["members"] if gm["instance_id"] == inst[restart]]
    if new_id == old_id:
        cell.note("the restarted member kept its member id")
    cell.note("same partitions back %.1f s after the restart; others untouched" % dt)
    for m in final:
        m.stop()


def sc_static_leader(cell):
    sc_static(cell, restart=0)


def target_offsets(cell, member=None):
    """The offsets a scenario commits: with metadata where the member's client can send it
    (confluent-kafka 2.1 and later)."""
    meta = member is None or member.wait_event("startup_complete").get("commit_metadata")
    return {p: (100 + 10 * p, "compat-%d" % p if meta else None) for p in range(PARTITIONS)}


def check_offsets(what, got, want, metadata=True):
    """Compare {partition: (offset, metadata)}; metadata only where the reader returns it."""
    bad = []
    for p, (o, m) in sorted(want.items()):
        if p not in got:
            bad.append("%d missing" % p)
            continue
        go, gm = got[p]
        if go != o:
            bad.append("%d: offset %s, want %s" % (p, go, o))
        elif metadata and gm is not None and m is not None and gm.rstrip("\0") != m:
            bad.append("%d: metadata %r, want %r" % (p, gm, m))
    extra = sorted(set(got) - set(want))
    if extra:
        bad.append("unexpected partitions %s" % extra)
    if bad:
        raise Fail("%s: %s" % (what, "; ".join(bad)))


def sc_commit(cell):
    if cell.client.kind == "java":
        return commit_java(cell)
    m = cell.member(0)
    wait_split(cell, [m], "the member gets the topic")
    want = target_offsets(cell, m)
    if want[0][1] is None:
        cell.note("this confluent-kafka sends no commit metadata")
    epoch_note(cell)
    m.commit(want)
    check_offsets("the member reads back", m.committed(range(PARTITIONS)), want)
    server = cell.offsets()
    check_offsets("OffsetFetch", server, want)
    if any(v[1] is not None and v[1].endswith("\0") for v in server.values()):
        cell.note("the client stores commit metadata with a trailing NUL byte")
    m.stop()
    reader = cell.member(1, subscribe=False)
    reader.wait_event("startup_complete")
    check_offsets("a new consumer reads back", reader.committed(range(PARTITIONS)), want)
    reader.stop()
    cell.note("6 offsets committed and read back by the member, a new consumer and OffsetFetch")


def epoch_note(cell):
    """A consumer group's member commits with its member epoch (OffsetCommit v9+: the
    generation id field); the epoch it has, as ConsumerGroupDescribe says, goes in the notes.
    A consumer group starts at group epoch 1 (Kafka 4.4, KAFKA-20268), so a member's epoch is at
    least 2."""
    if cell.client.protocol != "consumer":
        return
    g = cell.describe()
    epochs = [gm["member_epoch"] for gm in g["members"]]
    if len(epochs) != 1 or epochs[0] < 2:
        raise Fail("ConsumerGroupDescribe: member epochs %s, want one member with epoch >= 2"
                   % epochs)
    cell.note("committed with member epoch %d" % epochs[0])


def commit_java(cell):
    """VerifiableConsumer commits only what it consumed; with empty partitions its auto-commit
    commits its positions (0 after the reset to earliest). Read back by OffsetFetch and by
    ConsumerGroupCommand (the Java Admin client)."""
    m = cell.member(0, autocommit=True)
    wait_split(cell, [m], "the member gets the topic")
    epoch_note(cell)
    want = {p: (0, None) for p in range(PARTITIONS)}

    def committed():
        got = cell.offsets()
        return True if sorted(got) == sorted(want) else "committed so far: %s" % got

    wait_until("auto-commit commits every partition", committed)
    m.stop()
    check_offsets("OffsetFetch", cell.offsets(), want)
    out = cell.tool("--describe", "--group", cell.group, "--offsets")
    rows = table(out, "GROUP")
    got = {int(r["PARTITION"]): (int(r["CURRENT-OFFSET"]), None) for r in rows
           if r.get("TOPIC") == cell.topic and r.get("CURRENT-OFFSET", "-") != "-"}
    check_offsets("ConsumerGroupCommand --describe --offsets", got, want)
    cell.note("auto-commit of positions (0: no records); read back by OffsetFetch and "
              "ConsumerGroupCommand")


def sc_empty(cell):
    java = cell.client.kind == "java"
    ms = [cell.member(i, autocommit=java) for i in range(2)]
    wait_split(cell, ms, "2 members split the topic")
    if java:
        want = {p: (0, None) for p in range(PARTITIONS)}
        wait_until("auto-commit commits every partition",
                   lambda: True if sorted(cell.offsets()) == sorted(want) else
                   "committed so far: %s" % cell.offsets())
    else:
        want = target_offsets(cell, ms[0])
        ms[0].commit(want)
    for m in ms:
        m.stop()

    def empty():
        g = cell.describe()
        if cell.client.protocol == "consumer":
            if g["state"].lower() == "empty" and not g["members"]:
                return True
            return "state %s, %d members" % (g["state"], len(g["members"]))
        if (g["state"], len(g["members"]), g["protocol_type"]) == ("Empty", 0, "consumer"):
            return True
        return "state %s, %d members, protocol type %r" % (
            g["state"], len(g["members"]), g["protocol_type"])

    t0 = time.monotonic()
    wait_until("the group is Empty once every member left", empty, timeout=10)
    dt = time.monotonic() - t0
    check_offsets("offsets of the Empty group (OffsetFetch)", cell.offsets(), want)
    if not java:
        reader = cell.member(2, subscribe=False)
        reader.wait_event("startup_complete")
        check_offsets("a new consumer reads back", reader.committed(range(PARTITIONS)), want)
        reader.stop()
    cell.note("Empty %s; offsets kept" % ("at once" if dt < 0.5 else "after %.1f s" % dt))


# ---- mixed groups: classic and consumer-protocol members in one group -------------------------


def group_view(cell):
    """The server's view of a group that may be a classic or a consumer group: ("consumer",
    ConsumerGroupDescribe) or, when the server says it is no consumer group, ("classic",
    DescribeGroups)."""
    g = kwire.consumer_group_describe(cell.server.bootstrap, cell.group, version=1)
    if g["error"] == kwire.NONE:
        return "consumer", g
    if g["error"] != kwire.GROUP_ID_NOT_FOUND:
        raise kwire.KwireError("ConsumerGroupDescribe(%s): error %d %s"
                               % (cell.group, g["error"], g["message"] or ""))
    return "classic", kwire.describe_group(cell.server.bootstrap, cell.group)


def member_label(m):
    """A member process: its client id, protocol and start number (c0.4: the 4th process the
    cell started)."""
    return "%s (%s)" % (os.path.basename(m.logpath)[:-len(".log")], m.client.name)


def check_owners(cell):
    """Every rebalance callback of every member the cell started, the stopped ones included,
    replayed in the order of the clients' own timestamps (one clock: the clients run on one
    machine): raises Fail at the first partition assigned to a member while another member
    still held it. A member gives up a partition when its revoke (or lost) callback has run,
    which it does before the server may give the partition to another member: on a classic
    member's rejoin, in a consumer member's acknowledging heartbeat, or before its LeaveGroup;
    an exit without a callback gives up what it held at its shutdown_complete."""
    streams = []
    for m in cell.members:
        with m.lock:
            events = list(m.events)
        evs = []
        for e in events:
            name, ts = e.get("name"), e.get("timestamp")
            if ts is None or name not in ("partitions_assigned", "partitions_revoked",
                                          "shutdown_complete"):
                continue
            ps = [p["partition"] for p in e.get("partitions") or []
                  if isinstance(p, dict) and p.get("topic") == cell.topic]
            evs.append((ts, 1 if name == "partitions_assigned" else 0, member_label(m), name,
                        ps))
        streams.append(evs)
    # Merge the members' streams by timestamp. One member's own callbacks keep their order
    # (a client may assign and revoke within one millisecond); between members, at the same
    # millisecond, what is given up goes before what is taken.
    evs = []
    heads = [0] * len(streams)
    while True:
        best = None
        for i, st in enumerate(streams):
            if heads[i] == len(st):
                continue
            if best is None or st[heads[i]][:2] < streams[best][heads[best]][:2]:
                best = i
        if best is None:
            break
        evs.append(streams[best][heads[best]])
        heads[best] += 1
    owner = {}
    for ts, _, who, name, ps in evs:
        if name == "shutdown_complete":
            owner = {p: w for p, w in owner.items() if w != who}
        elif name == "partitions_revoked":
            for p in ps:
                if owner.get(p) == who:
                    del owner[p]
        else:
            for p in ps:
                if owner.get(p, who) != who:
                    raise Fail("partition %d assigned to %s at %d while %s still held it"
                               % (p, who, ts, owner[p]))
                owner[p] = who


def clients_split(members):
    """None when the members' own views split the topic (every partition exactly one owner,
    an even share each); otherwise what they hold."""
    for m in members:
        if not m.alive():
            raise Fail("%s exited (status %s):\n%s"
                       % (member_label(m), m.proc.returncode, tail(m.logpath)))
        e = m.find("error")
        if e is not None and "_FATAL" in str(e.get("error")):
            raise Fail("%s: %s" % (member_label(m), e["error"]))
    held = {m.client_id: m.held for m in members}
    owned = sorted(p for s in held.values() for p in s)
    lo = PARTITIONS // len(members)
    if owned != list(range(PARTITIONS)) or \
            any(len(s) not in (lo, -(-PARTITIONS // len(members))) for s in held.values()):
        return "clients hold %s" % {c: sorted(s) for c, s in held.items()}
    return None


def mixed_settled(cell, members, kind):
    """True when the members split the topic and the server agrees: a Stable group of the
    expected kind (classic or consumer) with these members, each one's assignment (and, in a
    consumer group, its target) what its client holds. A partition in two members'
    assignments in one answer of the server fails at once."""
    check_owners(cell)
    why = clients_split(members)
    if why:
        return why
    held = {m.client_id: frozenset(m.held) for m in members}
    got, g = group_view(cell)
    seen, target = {}, {}
    for gm in g["members"]:
        seen[gm["client_id"]] = frozenset(gm["assignment"].get(cell.topic, []))
        target[gm["client_id"]] = frozenset(gm.get("target", gm["assignment"]).get(cell.topic,
                                                                                   []))
    dup = [p for p in range(PARTITIONS) if sum(1 for a in seen.values() if p in a) > 1]
    if dup:
        raise Fail("the server assigns partitions %s to two members: %s"
                   % (dup, {c: sorted(a) for c, a in seen.items()}))
    if got != kind:
        return "server: a %s group, want %s" % (got, kind)
    if g["state"].lower() != "stable" or len(g["members"]) != len(members):
        return "server: state %s, %d members" % (g["state"], len(g["members"]))
    if seen != held or target != held:
        return "server says %s (target %s), clients %s" % (
            {c: sorted(a) for c, a in seen.items()}, {c: sorted(a) for c, a in target.items()},
            {c: sorted(a) for c, a in held.items()})
    if got == "consumer":
        # ConsumerGroupDescribe v1 (KIP-1099): 0 for a classic member, 1 for a consumer one.
        types = {gm["client_id"]: gm["member_type"] for gm in g["members"]}
        want = {m.client_id: 1 if m.client.protocol == "consumer" else 0 for m in members}
        if types != want:
            raise Fail("ConsumerGroupDescribe v1: member types %s, want %s" % (types, want))
    return True


def settle(cell, members, kind, want, what):
    """Wait until the group settles (mixed_settled), then check the committed offsets: the
    seconds it took."""
    t0 = time.monotonic()
    wait_until(what, lambda: mixed_settled(cell, members, kind))
    check_offsets("offsets after: %s (OffsetFetch)" % what, cell.offsets(), want)
    return time.monotonic() - t0


def commit_held(cell, m, want, base):
    """A librdkafka member commits the partitions it holds (offset base + partition); want
    follows. Java's VerifiableConsumer commits only what it consumed: nothing here."""
    if m.client.kind != "rk":
        return 0
    offsets = {p: (base + p, "%s-%d" % (m.client_id, base + p)) for p in sorted(m.held)}
    m.commit(offsets)
    meta = m.wait_event("startup_complete").get("commit_metadata")
    want.update({p: (o, mt if meta else None) for p, (o, mt) in offsets.items()})
    return 1


def seed_offsets(cell):
    """Offsets committed before any member joins (the group is empty then), to be kept through
    every step."""
    want = {p: (100 + 10 * p, "compat-%d" % p) for p in range(PARTITIONS)}
    retrying("OffsetCommit", lambda: kwire.commit_offsets(cell.server.bootstrap, cell.group,
                                                          cell.topic, want))
    check_offsets("seeded offsets (OffsetFetch)", cell.offsets(), want)
    return want


def wait_empty_classic(cell, want):
    """Once every member has left: an Empty classic group, its offsets kept."""
    def empty():
        kind, g = group_view(cell)
        if (kind, g["state"], len(g["members"])) == ("classic", "Empty", 0):
            return True
        return "a %s group, state %s, %d members" % (kind, g["state"], len(g["members"]))

    wait_until("the group is an Empty classic group once every member left", empty, timeout=10)
    check_offsets("offsets of the Empty group (OffsetFetch)", cell.offsets(), want)


def sc_rolling(cell):
    """3 classic members; each in turn closes (the 2 others take its partitions) and comes
    back with group.protocol=consumer; then each in turn goes back to classic. The group
    becomes a consumer group when the first consumer member joins, and a classic group again
    when the last consumer member leaves."""
    classic, consumer = cell.client.parts
    want = seed_offsets(cell)
    ms = [Member(cell, classic, i) for i in range(3)]
    settle(cell, ms, "classic", want, "3 classic members split the topic")
    commits, times = 0, {}
    for phase, new in (("upgrade", consumer), ("downgrade", classic)):
        t0 = time.monotonic()
        for i in range(3):
            ms[i].stop()
            rest = ms[:i] + ms[i + 1:]
            # Upgrading, the group is classic until c0 comes back as a consumer member;
            # downgrading, it is a consumer group until c2, the last consumer member, leaves.
            kind = ("classic" if i == 0 else "consumer") if phase == "upgrade" else \
                ("consumer" if i < 2 else "classic")
            settle(cell, rest, kind, want, "%s: the 2 others take c%d's partitions" % (phase, i))
            ms[i] = Member(cell, new, i)
            kind = "consumer" if phase == "upgrade" else ("consumer" if i < 2 else "classic")
            settle(cell, ms, kind, want, "%s: c%d back with group.protocol=%s"
                   % (phase, i, new.protocol))
            commits += commit_held(cell, ms[i], want, 1000 * (len(times) * 3 + i + 1))
        times[phase] = time.monotonic() - t0
    for m in ms:
        m.stop()
    check_owners(cell)
    wait_empty_classic(cell, want)
    cell.note("upgrade in %.0f s, downgrade in %.0f s: a consumer group from c0's return, "
              "classic again when c2 left; at every step one owner per partition and the "
              "server agreeing; offsets kept (%s)"
              % (times["upgrade"], times["downgrade"],
                 "%d commits by the members" % commits if commits else "seeded before"))


def sc_join_leave(cell):
    """A classic Java member alone, then a consumer Java member and a consumer librdkafka
    member join (the group becomes a consumer group); the consumer Java member leaves, then the
    librdkafka one (the group is classic again)."""
    want = seed_offsets(cell)
    parts = cell.client.parts
    ms = [Member(cell, parts[0], 0)]
    settle(cell, ms, "classic", want, "c0 (classic) alone gets the topic")
    t0 = time.monotonic()
    for i in (1, 2):
        ms.append(Member(cell, parts[i], i))
        settle(cell, ms, "consumer", want, "c%d (%s) joined" % (i, parts[i].name))
    commits = commit_held(cell, ms[2], want, 1000)
    joined = time.monotonic() - t0
    ms[1].stop()
    settle(cell, [ms[0], ms[2]], "consumer", want, "c1 (consumer) left")
    commits += commit_held(cell, ms[2], want, 2000)
    ms[2].stop()
    settle(cell, [ms[0]], "classic", want, "c2 (consumer, the last one) left")
    ms[0].stop()
    check_owners(cell)
    wait_empty_classic(cell, want)
    cell.note("c1 and c2 joined c0 in %.0f s (a consumer group), left one by one (classic "
              "again when c2 left); at every step one owner per partition and the server "
              "agreeing; offsets kept (%d commits by c2)" % (joined, commits))


# ---- tool scenarios --------------------------------------------------------------------------


def table(out, first):
    """Rows of the table in a tool's output whose header starts with `first`, as dicts; a
    second table with the same header (ConsumerGroupCommand prints one per group) continues."""
    rows, header = [], None
    for line in out.splitlines():
        words = line.split()
        if not words:
            header = None if header is None else header
            continue
        if words[0] == first and len(words) > 1 and words[1].isupper():
            header = words
            continue
        if header is not None and len(words) >= len(header):
            rows.append(dict(zip(header, words)))
    return rows


def tools_members(cell, n):
    """n members of the newest librdkafka, subscribed and split, with the target offsets."""
    ms = [Member(cell, WHEEL, i) for i in range(n)]
    wait_split(cell, ms, "%d members split the topic" % n)
    want = target_offsets(cell, ms[0])
    ms[0].commit(want)
    return ms, want


def sc_describe(cell):
    ms, want = tools_members(cell, 2)
    out = cell.tool("--list")
    if cell.group not in out.split():
        raise Fail("--list does not name %s:\n%s" % (cell.group, out))
    rows = table(cell.tool("--list", "--state"), "GROUP")
    got = [r["STATE"] for r in rows if r["GROUP"] == cell.group]
    if got != ["Stable"]:
        raise Fail("--list --state: %s is %s" % (cell.group, got or "missing"))
    rows = table(cell.tool("--list", "--type"), "GROUP")
    got = [r["TYPE"] for r in rows if r["GROUP"] == cell.group]
    if got != ["Classic"]:
        raise Fail("--list --type: %s is %s" % (cell.group, got or "missing"))

    out = cell.tool("--describe", "--group", cell.group, "--members", "--verbose")
    rows = table(out, "GROUP")
    got = sorted((r["CLIENT-ID"], r["#PARTITIONS"]) for r in rows)
    if got != [("c0", "3"), ("c1", "3")]:
        raise Fail("--describe --members: %s\n%s" % (got, out))
    for r in rows:
        m = [x for x in ms if x.client_id == r["CLIENT-ID"]][0]
        expect = "%s:%s" % (cell.topic, ",".join(str(p) for p in sorted(m.held)))
        if r.get("CURRENT-ASSIGNMENT") != expect:
            raise Fail("--describe --members --verbose: %s has %s, the client holds %s"
                       % (r["CLIENT-ID"], r.get("CURRENT-ASSIGNMENT"), expect))

    out = cell.tool("--describe", "--group", cell.group, "--state")
    line = [l.split() for l in out.splitlines() if l.startswith(cell.group + " ")]
    if len(line) != 1 or line[0][-3:] != ["range", "Stable", "2"]:
        raise Fail("--describe --state: %s" % out)

    out = cell.tool("--describe", "--group", cell.group, "--offsets")
    rows = table(out, "GROUP")
    got = {int(r["PARTITION"]): (int(r["CURRENT-OFFSET"]), None) for r in rows}
    check_offsets("--describe --offsets", got, want)
    owners = {r["PARTITION"]: r["CLIENT-ID"] for r in rows}
    if sorted(set(owners.values())) != ["c0", "c1"]:
        raise Fail("--describe --offsets names owners %s" % owners)

    # An active group can be neither deleted nor reset.
    out = cell.tool("--delete", "--group", cell.group)
    if "NonEmptyGroupException" not in out and "not empty" not in out:
        raise Fail("--delete of an active group did not fail as non-empty:\n%s" % out)
    out = cell.tool("--reset-offsets", "--group", cell.group, "--topic", cell.topic,
                    "--to-earliest", "--execute")
    if "inactive" not in out:
        raise Fail("--reset-offsets of an active group was not refused:\n%s" % out)
    check_offsets("offsets after the refused reset", cell.offsets(), want)
    for m in ms:
        m.stop()
    cell.note("--list (--state, --type), --describe --members/--state/--offsets; --delete and "
              "--reset-offsets refused while Stable")


def sc_reset_delete(cell):
    ms, want = tools_members(cell, 1)
    for m in ms:
        m.stop()
    wait_until("the group is Empty",
               lambda: True if cell.describe()["state"] == "Empty" else cell.describe()["state"],
               timeout=10)
    out = cell.tool("--reset-offsets", "--group", cell.group, "--topic", cell.topic,
                    "--to-earliest", "--execute")
    rows = table(out, "GROUP")
    got = {int(r["PARTITION"]): (int(r["NEW-OFFSET"]), None) for r in rows}
    zero = {p: (0, None) for p in range(PARTITIONS)}
    check_offsets("--reset-offsets --to-earliest --execute output", got, zero)
    check_offsets("OffsetFetch after the reset", cell.offsets(), zero)

    out = cell.tool("--delete-offsets", "--group", cell.group, "--topic", "%s:0,1" % cell.topic)
    rows = table(out, "TOPIC")
    got = sorted((r["PARTITION"], r["STATUS"]) for r in rows)
    if got != [("0", "Successful"), ("1", "Successful")]:
        raise Fail("--delete-offsets: %s\n%s" % (got, out))
    left = {p: (0, None) for p in range(2, PARTITIONS)}
    check_offsets("OffsetFetch after --delete-offsets", cell.offsets(), left)
    out = cell.tool("--describe", "--group", cell.group, "--offsets")
    got = {int(r["PARTITION"]): (int(r["CURRENT-OFFSET"]), None) for r in table(out, "GROUP")}
    check_offsets("--describe --offsets after --delete-offsets", got, left)

    out = cell.tool("--delete", "--group", cell.group)
    if "was successful" not in out:
        raise Fail("--delete:\n%s" % out)
    if cell.offsets():
        raise Fail("offsets outlive the deleted group: %s" % cell.offsets())
    out = cell.tool("--list")
    if cell.group in out.split():
        raise Fail("--list still names the deleted group:\n%s" % out)
    out = cell.tool("--delete", "--group", cell.group)
    if "GroupIdNotFoundException" not in out:
        raise Fail("--delete of a deleted group did not say GroupIdNotFoundException:\n%s" % out)
    cell.note("reset to earliest, 2 offsets deleted, group deleted (then GROUP_ID_NOT_FOUND)")


CONFIGS = "org.apache.kafka.tools.ConfigCommand"


def configs_tool(cell, *args):
    """ConfigCommand on this cell's group: (exit status, output). The output is kept,
    normalised, to be compared with the other server's, as ConsumerGroupCommand's is."""
    args = ["--bootstrap-server", cell.server.bootstrap, "--entity-type", "groups"] + list(args)
    rc, out = run_tool([KAFKA_REF, "run-class", CONFIGS] + args,
                       os.path.join(cell.dir, "tools.log"), env=TOOLS_ENV,
                       stderr=subprocess.STDOUT)
    shown = [a for a in args[2:]]
    cell.extra.setdefault("tool_outputs", []).append(
        ("kafka-configs " + " ".join(shown).replace(cell.group, "G"),
         normalise(out.replace(cell.group, "G"), cell.server.bootstrap)))
    return rc, out


def group_configs(out):
    """{key: value} of a ConfigCommand --describe of one group."""
    got = {}
    for line in out.splitlines():
        m = re.match(r"^\s+([a-z.]+)=(\S*) sensitive=", line)
        if m:
            got[m.group(1)] = m.group(2)
    return got


def heartbeat_interval(cell):
    """The heartbeat interval the server gives a consumer member joining the group now (a
    ConsumerGroupHeartbeat join, then a leave)."""
    r = retrying("ConsumerGroupHeartbeat", lambda: kwire.consumer_group_heartbeat(
        cell.server.bootstrap, cell.group, topics=[cell.topic]))
    if r["error"] != kwire.NONE:
        raise Fail("ConsumerGroupHeartbeat join: error %d %s" % (r["error"], r["message"]))
    kwire.consumer_group_heartbeat(cell.server.bootstrap, cell.group, r["member_id"], -1)
    return r["heartbeat_interval_ms"]


def sc_group_configs(cell):
    """kafka-configs on a group: set the consumer group's session timeout and heartbeat
    interval, describe them, see a joining member get the interval, have an out-of-bounds value
    refused, delete them."""
    name = ["--entity-name", cell.group]
    rc, out = configs_tool(cell, *name, "--describe")
    if rc != 0 or group_configs(out):
        raise Fail("--describe of a group without configs (exit %d):\n%s" % (rc, out))
    keys = {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
    rc, out = configs_tool(cell, *name, "--alter", "--add-config",
                           ",".join("%s=%s" % kv for kv in sorted(keys.items())))
    if rc != 0 or "Completed updating config" not in out:
        raise Fail("--alter --add-config (exit %d):\n%s" % (rc, out))
    rc, out = configs_tool(cell, *name, "--describe")
    if rc != 0 or group_configs(out) != keys:
        raise Fail("--describe after --add-config (exit %d): %s\n%s"
                   % (rc, group_configs(out), out))
    rc, out = configs_tool(cell, "--describe")
    if rc != 0 or ("group %s " % cell.group) not in out:
        raise Fail("--describe of every group does not name %s (exit %d):\n%s"
                   % (cell.group, rc, out))
    hb = heartbeat_interval(cell)
    if hb != 6000:
        raise Fail("a member joining after the change gets a %d ms heartbeat interval, not "
                   "6000" % hb)
    # Below group.consumer.min.session.timeout.ms (45000, Kafka's default): refused.
    rc, out = configs_tool(cell, *name, "--alter", "--add-config",
                           "consumer.session.timeout.ms=1000")
    if rc == 0 or "InvalidConfigurationException" not in out:
        raise Fail("an out-of-bounds session timeout was not refused (exit %d):\n%s" % (rc, out))
    rc, out = configs_tool(cell, *name, "--describe")
    if group_configs(out) != keys:
        raise Fail("the refused change altered the configs: %s" % group_configs(out))
    rc, out = configs_tool(cell, *name, "--alter", "--delete-config", ",".join(sorted(keys)))
    if rc != 0 or "Completed updating config" not in out:
        raise Fail("--alter --delete-config (exit %d):\n%s" % (rc, out))
    rc, out = configs_tool(cell, *name, "--describe")
    if rc != 0 or group_configs(out):
        raise Fail("--describe after --delete-config (exit %d):\n%s" % (rc, out))
    hb = heartbeat_interval(cell)
    if hb != CONSUMER_HEARTBEAT_MS:
        raise Fail("after --delete-config a joining member gets a %d ms heartbeat interval, not "
                   "the server's %d" % (hb, CONSUMER_HEARTBEAT_MS))
    cell.note("--add-config of consumer.session.timeout.ms and consumer.heartbeat.interval.ms "
              "(a joining member gets the new interval), --describe (of the group and of every "
              "group), an out-of-bounds value refused, --delete-config")


API_LINE = re.compile(r"^\s*(\w+)\((\d+)\): (.*?),?$")
GROUP_APIS = ["FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
              "OffsetCommit", "OffsetFetch", "ListGroups", "DescribeGroups", "DeleteGroups",
              "OffsetDelete", "Metadata", "ApiVersions"]


def sc_api_versions(cell):
    rc, out = run_tool([KAFKA_REF, "run-class", APIVERSIONS, "--bootstrap-server",
                        cell.server.bootstrap], os.path.join(cell.dir, "tools.log"),
                       env=TOOLS_ENV)
    apis = {}
    for line in out.splitlines():
        m = API_LINE.match(line)
        if m:
            apis[m.group(1)] = m.group(3)
    if rc != 0 or not apis:
        raise Fail("BrokerApiVersionsCommand exit %d:\n%s" % (rc, out[-2000:]))
    missing = [a for a in GROUP_APIS if "usable" not in apis.get(a, "")]
    if missing:
        raise Fail("not usable: %s" % ", ".join(missing))
    cell.extra["apiversions"] = out.strip()
    usable = sum(1 for v in apis.values() if "usable" in v)
    cell.note("%d APIs usable, %d listed as unsupported" % (usable, len(apis) - usable))


SCENARIOS = {
    "split": sc_split, "leave": sc_leave, "kill": sc_kill, "static": sc_static,
    "commit": sc_commit, "empty": sc_empty, "describe": sc_describe,
    "cooperative": sc_cooperative, "static-leader": sc_static_leader,
    "incremental": sc_incremental,
    "reset-delete": sc_reset_delete, "api-versions": sc_api_versions,
    "group-configs": sc_group_configs, "rolling": sc_rolling, "join-leave": sc_join_leave,
}

SCENARIO_TEXT = {
    "split": "3 members subscribe to a 6-partition topic: every partition has exactly one "
             "owner, 2 each, and the server's DescribeGroups (Stable, 3 members) shows the same "
             "assignment",
    "leave": "one of 3 members closes (SIGTERM: revoke, LeaveGroup): the 2 others take its "
             "partitions long before its 30 s session could expire",
    "kill": "one of 3 members (session.timeout.ms 6000) is killed with SIGKILL: the 2 others "
            "take its partitions after the session timeout, not before",
    "incremental": "3 members split the topic, then a fourth joins: the server-side assignor "
                   "(uniform) gives it what it takes from the others (6 partitions over 4 "
                   "members: 2, 2, 1, 1), the revoke callbacks of the 3 others name only the "
                   "partitions that move, they are assigned nothing and keep the rest, and "
                   "ConsumerGroupDescribe shows a Stable group whose members' assignments equal "
                   "their targets and what the clients hold",
    "static-leader": "as static, but the member that restarts is c0, the group leader (it "
                     "joined first, alone)",
    "cooperative": "3 members with the cooperative-sticky assignor (incremental rebalancing, "
                   "DescribeGroups protocol cooperative-sticky) split the topic; one leaves: "
                   "the 2 others only gain partitions, none is revoked from them",
    "static": "3 members with group.instance.id; the follower c2 closes (a static member does "
              "not leave) and restarts with the same id: it gets the same partitions back, the "
              "others get no rebalance callback",
    "commit": "librdkafka: 6 offsets with metadata committed synchronously and read back by the "
              "member, by a new consumer and by OffsetFetch. Java: VerifiableConsumer commits "
              "only what it consumed, so its auto-commit commits its positions (0) every "
              "500 ms; read back by OffsetFetch and ConsumerGroupCommand",
    "empty": "2 members commit and leave: the group is Empty with no members and protocol type "
             "consumer, and its offsets are still there",
    "describe": "2 librdkafka (wheel) members in a Stable group: --list, --list --state, "
                "--list --type, --describe --members --verbose, --describe --state, --describe "
                "--offsets; --delete and --reset-offsets are refused while the group is active",
    "reset-delete": "an Empty group: --reset-offsets --to-earliest --execute, --delete-offsets "
                    "of 2 partitions, --delete, then --delete again fails with "
                    "GroupIdNotFoundException",
    "api-versions": "BrokerApiVersionsCommand: every group API is usable",
    "group-configs": "ConfigCommand (kafka-configs --entity-type groups) on a group: "
                     "--alter --add-config of consumer.session.timeout.ms=50000 and "
                     "consumer.heartbeat.interval.ms=6000, --describe of the group and of every "
                     "group, a member joining then gets a 6000 ms heartbeat interval "
                     "(ConsumerGroupHeartbeat), consumer.session.timeout.ms=1000 is refused "
                     "(InvalidConfigurationException: below group.consumer.min.session.timeout.ms"
                     "), --delete-config, and a member joining then gets the server's 5000 ms",
    "rolling": "a rolling upgrade, then a rolling downgrade, of a 3-member group: offsets are "
               "committed before any member joins; 3 classic members split the topic; each in "
               "turn closes (the 2 others take its partitions) and comes back with "
               "group.protocol=consumer (the group becomes a consumer group when c0 comes "
               "back), then each in turn goes back to classic (a classic group again once c2, "
               "the last consumer member, has left). After every close and every return the "
               "group settles: each partition exactly one owner, an even share each, and the "
               "server (ConsumerGroupDescribe, or DescribeGroups for a classic group) shows a "
               "Stable group of the expected kind with the same assignment (and target, and each "
               "member's type, classic or consumer: ConsumerGroupDescribe v1); the "
               "committed offsets are the expected ones, and librdkafka members commit the "
               "partitions they hold after each return; once all have left, the group is an Empty "
               "classic group with its offsets. Throughout, the members' rebalance "
               "callbacks, replayed in the order of their timestamps, never show a partition "
               "assigned to a member before the member that held it revoked it",
    "join-leave": "a classic Java member (c0) alone gets the topic; a consumer-protocol Java "
                  "member (c1) joins (the group becomes a consumer group with a classic "
                  "member), then a consumer-protocol librdkafka member (c2); c1 leaves, then "
                  "c2 (the last consumer member: a classic group again). Each step is judged "
                  "as in rolling, c2 commits the partitions it holds after each step, and when "
                  "c0 has left too the group is an Empty classic group with its offsets",
    "requests": "the differential raw-request checker: the same requests to both servers, the "
                "answers compared",
}


# ---- the raw-diff hook -----------------------------------------------------------------------


def diff_command():
    """The differential checker, when another part of the suite provides one."""
    for rel in ("tests/compat/compat_diff.py", "tests/compat/diff", "tests/compat/diff.py"):
        path = os.path.join(ROOT, rel)
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return [path]
            if path.endswith(".py"):
                return [sys.executable, path]
    return None


def run_raw_diff(kc, kafka, workdir):
    """The checker's verdict: (status, note). It gets both servers' addresses as arguments."""
    cmd = diff_command()
    if cmd is None:
        return "n/a", "no differential checker (tests/compat/diff*) in this tree"
    logpath = os.path.join(workdir, "raw-diff.log")
    args = cmd + ["--kcoord", kc.bootstrap, "--kafka", kafka.bootstrap]
    try:
        rc, out = run_tool(args, logpath, timeout=600)
    except Fail as e:
        return "FAIL", str(e)
    lines = [l for l in out.strip().splitlines() if l.strip()]
    summary = lines[-1] if lines else ""
    steps = [l.split(None, 1)[1] for l in lines if l.startswith("DIFF ")]
    note = "exit %d: %s" % (rc, summary[:300])
    if steps:
        note += "; steps with unjustified differences: " + ", ".join(steps)
    return ("pass" if rc == 0 else "FAIL"), note


# ---- the run ---------------------------------------------------------------------------------


TOOLS_ENV = None
WHEEL = None


def make_clients(venv_python):
    debian = Client("librdkafka-debian", "rk",
                    "librdkafka 2.0.2 via Debian python3-confluent-kafka 1.7.0", DEBIAN_PYTHON)
    wheel = Client("librdkafka-wheel", "rk",
                   "librdkafka 2.16 via the confluent-kafka 2.16.1 wheel", venv_python)
    java = Client("java", "java", "Java kafka-clients 4.4.0 (classic) via VerifiableConsumer")
    tools = Client("kafka-tools", "tools", "Kafka 4.4.0 ConsumerGroupCommand, "
                   "BrokerApiVersionsCommand")
    mixed = Client("mixed", "mixed", "one group of java (c0), librdkafka-debian (c1) and "
                   "librdkafka-wheel (c2) members")
    mixed.parts = [java, debian, wheel]
    rk848 = Client("librdkafka-consumer", "rk", "librdkafka 2.16 via the confluent-kafka 2.16.1 "
                   "wheel, consumer protocol", venv_python, protocol="consumer")
    java848 = Client("java-consumer", "java", "Java kafka-clients 4.4.0 (consumer protocol) via "
                     "VerifiableConsumer", protocol="consumer")
    mixed848 = Client("mixed-consumer", "mixed", "one consumer-protocol group of java-consumer "
                      "(c0, c2) and librdkafka-consumer (c1, c3) members", protocol="consumer")
    mixed848.parts = [java848, rk848]
    javamig = Client("java-migration", "migrate", "Java kafka-clients 4.4.0 via "
                     "VerifiableConsumer, each member restarted from group.protocol=classic "
                     "to consumer and back", protocol="mixed")
    javamig.parts = [java, java848]
    rkmig = Client("librdkafka-migration", "migrate", "librdkafka of the wheel, each member "
                   "restarted from group.protocol=classic to consumer and back",
                   venv_python, protocol="mixed")
    rkmig.parts = [wheel, rk848]
    mixp = Client("mixed-protocol", "migrate", "one group of a classic java (c0), a "
                  "java-consumer (c1) and a librdkafka-consumer (c2) member", protocol="mixed")
    mixp.parts = [java, java848, rk848]
    diff = Client("raw-diff", "diff", "differential raw-request checker")
    labels = {"debian": "librdkafka 2.0.2 (Debian) over SASL_SSL (tests/compat/rk_secure.py)",
              "wheel": "librdkafka 2.16 (the wheel) over SASL_SSL (tests/compat/rk_secure.py)",
              "kcat": "kcat (Debian, librdkafka 2.0.2) over SASL_SSL",
              "java": "Java kafka-clients 4.4.0 via VerifiableConsumer with a client config",
              "tools": "Kafka 4.4.0 AclCommand, ConfigCommand, ConsumerGroupCommand with "
                       "--command-config"}
    sec = []
    for name, kind, _ in secure.CLIENTS:
        label = labels[kind] if name != "secure-refusal" else \
            "refusals seen by librdkafka 2.16 (the wheel)"
        c = Client(name, "secure", label)
        c.secure_kind = kind
        sec.append(c)
    return [debian, wheel, java, mixed, rk848, java848, mixed848, javamig, rkmig, mixp, tools,
            diff] + sec


def all_cells(clients):
    out = []
    for c in clients:
        if c.kind in ("rk", "java"):
            out += [(c, s) for s in (KIP848_SCENARIOS if c.protocol == "consumer"
                                     else CONSUMER_SCENARIOS)]
        elif c.kind == "mixed":
            out += [(c, s) for s in (KIP848_MIXED_SCENARIOS if c.protocol == "consumer"
                                     else MIXED_SCENARIOS)]
        elif c.kind == "migrate":
            out.append((c, "rolling" if len(c.parts) == 2 else "join-leave"))
        elif c.kind == "tools":
            out += [(c, s) for s in TOOL_SCENARIOS]
        elif c.kind == "secure":
            out += [(c, s) for name, _, s in secure.cells() if name == c.name]
        else:
            out.append((c, "requests"))
    return out


def selected(cells, only, quick):
    res = []
    for c, s in cells:
        name = "%s/%s" % (c.name, s)
        if only and not any(fnmatch.fnmatchcase(name, pat) for pat in only):
            continue
        if quick and s not in QUICK:
            continue
        res.append((c, s))
    return res


def probe_versions(clients, venv_python):
    """Fill in the versions the clients really are; raises SetupError when one is missing."""
    for c in clients:
        if c.kind != "rk":
            continue
        p = subprocess.run([c.python, "-c",
                            "import confluent_kafka as k; v = k.version(); "
                            "print(v if isinstance(v, str) else v[0], k.libversion()[0])"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            hint = ("apt-get install python3-confluent-kafka" if c.python == DEBIAN_PYTHON
                    else "scripts/compat-venv")
            raise SetupError("%s: confluent_kafka cannot be imported with %s (%s):\n%s"
                             % (c.name, c.python, hint, p.stderr.strip()[-500:]))
        py, lib = p.stdout.split()
        c.version = (py, lib)
        if c.name == "librdkafka-debian":
            c.label = "librdkafka %s via Debian python3-confluent-kafka %s" % (lib, py)
        else:
            c.label = "librdkafka %s via the confluent-kafka %s wheel" % (lib, py)
        if c.protocol == "consumer":
            c.label += " (consumer protocol: `group.protocol=consumer`)"


def run_cell(client, scenario, server, workdir):
    cell = Cell(client, scenario, server, workdir)
    t0 = time.monotonic()
    status = "pass"
    try:
        if client.kind == "secure":
            secure.run(cell)
        else:
            SCENARIOS[scenario](cell)
    except NotApplicable as e:
        status = "n/a"
        cell.note(str(e))
    except Fail as e:
        status = "FAIL"
        cell.notes.insert(0, str(e).splitlines()[0][:300])
        with open(os.path.join(cell.dir, "FAILED"), "w") as f:
            f.write(str(e) + "\n")
    except kwire.KwireError as e:
        status = "FAIL"
        cell.notes.insert(0, "server observation failed: %s" % e)
    finally:
        cell.cleanup()
    gone = server.check_alive()
    if gone:
        status = "FAIL"
        cell.notes.insert(0, gone)
    cell.seconds = time.monotonic() - t0
    cell.status = status
    return cell


LOG_LOCK = threading.Lock()


def report_cell(cell, results):
    """Record a finished cell and log its line (and, when it failed, its members' output)."""
    with LOG_LOCK:
        results[(cell.client.name, cell.scenario)][cell.server.name] = cell
        log("%-8s %-36s %-5s %5.1fs  %s" % (cell.server.name, "%s/%s" % (
            cell.client.name, cell.scenario), cell.status, cell.seconds,
            "; ".join(cell.notes)[:160]))
        if cell.status == "FAIL":
            for m in cell.members:
                for what, path in (("stderr", m.logpath), ("events", m.logpath + ".events")):
                    t = tail(path, 6)
                    if t:
                        log("    --- %s %s ---\n%s" % (m.client_id, what,
                                                      t.rstrip()[-1500:]))


def compare_tool_outputs(results):
    """The ConsumerGroupCommand runs of a cell whose normalised output differs between kcoord
    and Kafka: [(cell name, command, kcoord-only lines, Kafka-only lines)]. Each such cell gets
    a note."""
    diffs = []
    for (client, scenario), by in results.items():
        k, r = by.get("kcoord"), by.get("kafka")
        if not (isinstance(k, Cell) and isinstance(r, Cell)):
            continue
        ko, ro = k.extra.get("tool_outputs", []), r.extra.get("tool_outputs", [])
        if not ko or not ro:
            continue
        tool = "ConfigCommand" if ko[0][0].startswith("kafka-configs") else \
            "ConsumerGroupCommand"
        n = 0
        for (cmd, kl), (cmd2, rl) in zip(ko, ro):
            if cmd != cmd2 or kl == rl:
                continue
            n += 1
            diffs.append(("%s/%s" % (client, scenario), cmd,
                          [l for l in kl if l not in rl], [l for l in rl if l not in kl]))
        same = min(len(ko), len(ro)) - n
        if n:
            k.extra["compare"] = ("%s output differs from Kafka's in %d of %d commands "
                                  "(below)" % (tool, n, min(len(ko), len(ro))))
        else:
            k.extra["compare"] = "%s output as Kafka's (%d command%s)" % (
                tool, same, "" if same == 1 else "s")
        if len(ko) != len(ro):
            k.extra["compare"] += "; %d commands on kcoord, %d on Kafka" % (len(ko), len(ro))
    return diffs


def versions_of_packages():
    out = {}
    for pkg in ("python3-confluent-kafka", "librdkafka1", "openjdk-17-jre-headless"):
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                           text=True)
        if p.returncode == 0 and p.stdout:
            out[pkg] = p.stdout
    return out


def java_version():
    try:
        p = subprocess.run(["java", "-version"], capture_output=True, text=True)
        return (p.stderr or p.stdout).splitlines()[0]
    except (OSError, IndexError):
        return "?"


NUMBER = re.compile(r"\d+(?:\.\d+)?")


def merge_notes(k, r):
    """One note for both servers when they say the same thing, with at most two numbers
    differing ("moved 6.2 s (Kafka: 6.1 s)"); None when they differ more."""
    if k == r:
        return k
    if NUMBER.split(k) != NUMBER.split(r):
        return None
    kn, rn = NUMBER.findall(k), NUMBER.findall(r)
    if sum(1 for a, b in zip(kn, rn) if a != b) > 2:
        return None
    parts = NUMBER.split(k)
    out = parts[0]
    for i, (a, b) in enumerate(zip(kn, rn)):
        out += a if a == b else "%s (Kafka: %s)" % (a, b)
        out += parts[i + 1]
    return out


def md_cell(c):
    if c is None:
        return "–"
    return {"pass": "pass", "FAIL": "**FAIL**", "n/a": "n/a"}[c.status]


def write_doc(path, results, clients, meta, apiversions, tool_diffs):
    """results: {(client, scenario): {server: Cell or (status, note)}}."""
    L = []
    L.append("# Compatibility")
    L.append("")
    L.append("Generated by `%s` on %s; do not edit: run `make compat` to regenerate it."
             % (meta["command"], meta["date"]))
    L.append("")
    L.append("The same consumer-group scenarios run with real clients against kcoord and "
             "against the reference Apache Kafka broker, each scenario with its own topic "
             "(%d partitions) and group on both servers. Both servers have "
             "`offsets.topic.num.partitions=%d` and `group.initial.rebalance.delay.ms=0`. "
             "A cell passes when what the clients report (rebalance callbacks, commit results, "
             "tool output) and what the server itself answers (DescribeGroups or, for consumer "
             "groups, ConsumerGroupDescribe, and OffsetFetch, sent by "
             "`tests/compat/kwire.py`) are both as expected."
             % (PARTITIONS, OFFSETS_PARTITIONS))
    L.append("")
    L.append("| | version |")
    L.append("| --- | --- |")
    L.append("| kcoord | %s |" % meta["kcoord"])
    L.append("| reference broker | Apache Kafka %s (KRaft, single node, `scripts/kafka-ref`) |"
             % meta["kafka"])
    for c in clients:
        L.append("| %s | %s |" % (c.name, c.label))
    L.append("| Java | %s |" % meta["java"])
    for pkg, v in sorted(meta["packages"].items()):
        L.append("| Debian %s | %s |" % (pkg, v))
    L.append("")
    L.append("Run: %d cells in %.0f s (`%s`)." % (meta["ncells"], meta["seconds"],
                                                  meta["command"]))
    L.append("")
    L.append("## Results")
    L.append("")
    L.append("| client | scenario | kcoord | Kafka %s | notes |" % meta["kafka"])
    L.append("| --- | --- | --- | --- | --- |")
    for (client, scenario), by in results.items():
        k, r = by.get("kcoord"), by.get("kafka")
        notes = []
        merged = None
        if k is not None and r is not None:
            merged = merge_notes("; ".join(k.notes), "; ".join(r.notes))
        if merged is not None:
            notes.append(merged)
        else:
            for label, c in (("kcoord", k), ("Kafka", r)):
                if c is not None and c.notes:
                    notes.append("%s: %s" % (label, "; ".join(c.notes)))
        if isinstance(k, Cell) and "compare" in k.extra:
            notes.append(k.extra["compare"])
        notes = " — ".join(n.replace("|", "\\|").replace("\n", " ") for n in notes)
        rcol = "(reference)" if client == "raw-diff" else md_cell(r)
        if client == "raw-diff":
            notes = notes.replace("kcoord: ", "", 1)
        L.append("| %s | %s | %s | %s | %s |" % (client, scenario, md_cell(k), rcol, notes))
    L.append("")
    L.append("## Scenarios")
    L.append("")
    for s in CONSUMER_SCENARIOS + TOOL_SCENARIOS + ["requests"]:
        L.append("- **%s**: %s." % (s, SCENARIO_TEXT[s]))
    L.append("")
    L.append("Every consumer uses `heartbeat.interval.ms=500` and, except in cooperative, the "
             "eager range assignor (librdkafka's default, VerifiableConsumer's default). The "
             "librdkafka members are `tests/compat/rk_member.py`, which prints the same JSON "
             "events as Kafka's VerifiableConsumer. The mixed client's group has a Java member "
             "(c0), a librdkafka 2.0.2 member (c1) "
             "and a newest-librdkafka member (c2); it runs split, leave and cooperative.")
    L.append("")
    L.append("### Consumer protocol (KIP-848)")
    L.append("")
    L.append("The clients librdkafka-consumer, java-consumer and mixed-consumer use "
             "`group.protocol=consumer`: they heartbeat with ConsumerGroupHeartbeat and the "
             "coordinator assigns partitions with its server-side assignor (%s, the default "
             "of both servers), and the server's view of the group is ConsumerGroupDescribe "
             "(sent by `tests/compat/kwire.py`). The session timeout and heartbeat interval "
             "are the server's (both clients refuse `session.timeout.ms` and "
             "`heartbeat.interval.ms` with this protocol): both servers run with Kafka's "
             "defaults, `group.consumer.session.timeout.ms=%d` (Kafka's "
             "`group.consumer.min.session.timeout.ms` is also %d, and not dynamically "
             "reconfigurable) and `group.consumer.heartbeat.interval.ms=%d`, so a member "
             "hears of a change in its assignment up to %d s after it, and a killed member "
             "is replaced after %d s. These cells run side by side (`--jobs`), after the "
             "classic ones, each in its own group. The mixed-consumer group has Java members "
             "(c0, c2) and librdkafka members (c1, c3); it runs incremental, leave, kill and "
             "static."
             % (CONSUMER_ASSIGNOR, CONSUMER_SESSION_MS, CONSUMER_SESSION_MS,
                CONSUMER_HEARTBEAT_MS, CONSUMER_HEARTBEAT_MS / 1000,
                CONSUMER_SESSION_MS / 1000))
    L.append("")
    for s in KIP848_SCENARIOS:
        L.append("- **%s**: %s." % (s, KIP848_TEXT.get(s) or SCENARIO_TEXT[s]))
    L.append("")
    L.append("### Mixed groups (classic and consumer-protocol members)")
    L.append("")
    L.append("The clients java-migration and librdkafka-migration restart the members of one "
             "group, one at a time, from `group.protocol=classic` to `consumer` and back "
             "(rolling); mixed-protocol has classic and consumer-protocol members of different "
             "clients in one group (join-leave). A consumer-protocol member joining a classic "
             "group converts it into a consumer group, which serves its classic members "
             "through JoinGroup, SyncGroup and Heartbeat; when its last consumer-protocol "
             "member leaves, it is converted back (`group.consumer.migration.policy`, "
             "`bidirectional` by default on both servers). These cells run side by side with "
             "the consumer-protocol ones.")
    L.append("")
    for s in ("rolling", "join-leave"):
        L.append("- **%s**: %s." % (s, SCENARIO_TEXT[s]))
    L.append("")
    if any(k[0].startswith("secure-") for k in results):
        L.extend(secure.doc_section())
    L.append("## Known differences")
    L.append("")
    for d in KNOWN_DIFFERENCES:
        L.append("- " + d)
    L.append("")
    L.append("## ConsumerGroupCommand and ConfigCommand output, kcoord vs Kafka")
    L.append("")
    L.append("Every ConsumerGroupCommand or ConfigCommand run of a cell is compared with the "
             "same run against Kafka, once the address, generated member ids and Java stack "
             "frames are masked and the lines sorted (Kafka prints rows in hash-map order).")
    L.append("")
    if not tool_diffs:
        L.append("No differences.")
    for name, cmd, konly, ronly in tool_diffs:
        L.append("`%s`: `%s`" % (name, cmd))
        L.append("")
        L.append("```")
        L.extend("kcoord: " + l for l in konly)
        L.extend("Kafka:  " + l for l in ronly)
        L.append("```")
        L.append("")
    L.append("")
    if apiversions:
        L.append("## BrokerApiVersionsCommand against kcoord")
        L.append("")
        L.append("`scripts/kafka-ref run-class %s --bootstrap-server HOST:PORT` (Kafka %s):"
                 % (APIVERSIONS, meta["kafka"]))
        L.append("")
        L.append("```")
        L.append(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", apiversions))
        L.append("```")
        L.append("")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(L))
    os.replace(tmp, path)


KIP848_TEXT = {
    "leave": "one of 3 members closes (SIGTERM: revoke, then a ConsumerGroupHeartbeat with "
             "member epoch -1): the 2 others take its partitions long before its 45 s session "
             "could expire. Neither server hastens the others: each hears of its new partitions "
             "in the answer to its next regular heartbeat, so the time varies from a fraction "
             "of a second to the 5 s interval with how the members' heartbeats happen to be "
             "phased (a fraction when the closing member was the last to get its partitions, "
             "the others' next heartbeats then being almost due)",
    "kill": "one of 3 members is killed with SIGKILL: the 2 others take its partitions after "
            "the 45 s session timeout (counted from its last heartbeat, at most one 5 s "
            "interval before the kill), not before; they hear of it at their next heartbeat, so "
            "the partitions move 40 to 50 s after the kill, depending on how the members' "
            "heartbeats happen to be phased",
    "static": "3 members with group.instance.id; c2 closes (a static member stays in the "
              "group until its session expires) and restarts with "
              "the same id: it gets the same partitions back, and the others get no callback "
              "within a heartbeat interval and a second",
    "static-leader": "n/a: a consumer group has no leader",
    "cooperative": "n/a: the protocol is always incremental (see incremental)",
    "commit": "as for the classic clients (librdkafka commits 6 offsets with metadata; "
              "VerifiableConsumer auto-commits its positions), each commit with the member "
              "epoch (OffsetCommit v9 and later), the epoch ConsumerGroupDescribe shows in the "
              "notes; ConsumerGroupCommand describes the group with ConsumerGroupDescribe",
    "empty": "2 members commit and leave: ConsumerGroupDescribe shows the group Empty with no "
             "members, and its offsets are still there",
}

KNOWN_DIFFERENCES = [
    "kcoord stores no records: a Fetch at any offset answers with no records and a high "
    "watermark equal to the fetch offset, so a consumer resuming from a committed offset past "
    "the end of the (empty) log keeps that position. Kafka answers OFFSET_OUT_OF_RANGE and the "
    "consumer resets (`auto.offset.reset`); with auto-commit it then commits the reset "
    "position. The scenarios commit explicit offsets or positions of a fresh group, where the "
    "two agree (see the Fetch note in `src/api/topics.c`).",
]


MATERIAL = []


def run_secure_cells(cells, sname, kc, workdir, results, started):
    """The security cells (tests/compat/secure.py) on one side, against one secured server
    started for them and stopped after them. When it cannot be set up, each cell fails with
    the reason."""
    if not cells:
        return
    try:
        if not MATERIAL:
            MATERIAL.append(secure.Material(workdir))
    except RuntimeError as e:
        raise SetupError("certificates: %s" % e)
    if sname == "kcoord":
        server = secure.SecuredKcoord(kc.binary, workdir, MATERIAL[0])
    else:
        server = secure.SecuredKafka(workdir, MATERIAL[0])
    started.append(server)
    why = None
    t0 = time.monotonic()
    try:
        server.start()
        log("compat: secured %s at SASL_SSL %s, SSL %s (set up in %.1f s)"
            % (sname, server.sasl, server.ssl, time.monotonic() - t0))
    except (SetupError, Fail, kwire.KwireError) as e:
        why = str(e)
        log("compat: the secured %s could not be set up: %s" % (sname, why[:600]))
    for client, scenario in cells:
        if why is None:
            report_cell(run_cell(client, scenario, server, workdir), results)
            continue
        cell = Cell(client, scenario, server, workdir)
        cell.status, cell.seconds = "FAIL", 0.0
        cell.notes.append("secured %s not set up: %s" % (sname, why.splitlines()[0][:200]))
        report_cell(cell, results)
    server.stop()
    started.remove(server)


def main(argv):
    ap = argparse.ArgumentParser(prog="compat", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", choices=["kcoord", "kafka", "both"], default="both")
    ap.add_argument("--only", action="append", default=[], metavar="CLIENT/SCENARIO")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--build", default="build")
    ap.add_argument("--doc", default=None)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--jobs", type=int, default=8, metavar="N")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")

    servers = SERVERS if args.server == "both" else [args.server]
    venv = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                        os.path.join(os.path.expanduser("~"), ".cache"), "kcoord", "venv")
    venv_python = os.path.join(venv, "bin", "python")
    clients = make_clients(venv_python)
    cells = selected(all_cells(clients), args.only, args.quick)
    if args.list:
        for c, s in cells:
            print("%s/%s" % (c.name, s))
        return 0
    if not cells:
        print("compat: no cell matches %s" % " ".join(args.only), file=sys.stderr)
        return 2
    full = args.server == "both" and not args.only and not args.quick
    doc = args.doc or (os.path.join(ROOT, "docs", "COMPATIBILITY.md") if full else None)

    binary = os.path.join(ROOT, args.build, "kcoord") if not os.path.isabs(args.build) \
        else os.path.join(args.build, "kcoord")
    global TOOLS_ENV, WHEEL
    TOOLS_ENV = clean_env({"KAFKA_REF_JAVA_OPTS": CLIENT_JAVA_OPTS})
    WHEEL = clients[1]
    for c in clients:
        if c.kind in ("java", "tools"):
            c.env = TOOLS_ENV
    workdir = tempfile.mkdtemp(prefix="kcoord-compat-")
    t_start = time.monotonic()
    topics = {topic_name(c.name, s) for c, s in cells if c.kind != "secure"}
    secure.C = sys.modules[__name__]
    kc = Kcoord(binary, workdir, topics)
    plain_needed = any(c.kind != "secure" for c, _ in cells)  # the unsecured servers
    kafka = Kafka(workdir, topics)
    started = []
    results = {}
    interrupted = False

    def on_signal(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)

    # Also SIGINT: when started in the background it may have been ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        try:
            if not os.access(binary, os.X_OK):
                raise SetupError("%s not found: run make first" % binary)
            need = {c.name for c, _ in cells}
            used = [c for c in clients if c.name in need]
            if any(c.kind in ("java", "tools", "mixed", "migrate", "secure") for c in used) or \
                    "kafka" in servers or \
                    "raw-diff" in need:
                kafka_ref_env()
            for c in list(used):
                for part in getattr(c, "parts", []) + ([WHEEL] if c.kind == "tools" else []):
                    if part not in used:
                        used.append(part)
            probe_versions(used, venv_python)
            if "kafka" in servers and plain_needed:
                kafka.begin()
                started.append(kafka)
            if "kcoord" in servers and plain_needed:
                kc.start()
                started.append(kc)
                log("compat: kcoord %s at %s; logs in %s" % (kc.describe(), kc.bootstrap,
                                                             workdir))
        except SetupError as e:
            print("compat: setup failed: %s" % e, file=sys.stderr)
            return 2

        order = [s for s in ("kcoord", "kafka") if s in servers]
        for sname in order:
            server = kc if sname == "kcoord" else kafka
            if sname == "kafka" and plain_needed:
                try:
                    kafka.finish_start()
                except SetupError as e:
                    print("compat: the Kafka broker could not be set up: %s" % e,
                          file=sys.stderr)
                    return 2
                log("compat: Kafka at %s" % kafka.bootstrap)
            for client, scenario in cells:
                if client.kind != "diff":
                    results.setdefault((client.name, scenario), {})
            # The classic cells one after the other (their timings are tight), then the
            # consumer-protocol and mixed cells side by side: they mostly wait for 5 s
            # heartbeats and 45 s sessions, each in its own group, the longest (kill) first.
            side_protocols = ("consumer", "mixed")
            serial = [(c, s) for c, s in cells
                      if c.kind not in ("diff", "secure") and c.protocol not in side_protocols]
            side = sorted([(c, s) for c, s in cells if c.protocol in side_protocols],
                          key=lambda cs: cs[1] != "kill")
            for client, scenario in serial:
                report_cell(run_cell(client, scenario, server, workdir), results)
            if side:
                pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
                try:
                    futures = [pool.submit(run_cell, c, s, server, workdir) for c, s in side]
                    for f in concurrent.futures.as_completed(futures):
                        report_cell(f.result(), results)
                finally:
                    pool.shutdown(wait=False, cancel_futures=True)
            run_secure_cells([(c, s) for c, s in cells if c.kind == "secure"], sname, kc,
                             workdir, results, started)
        if any(c.kind == "diff" for c, _ in cells):
            if len(order) == 2:
                status, note = run_raw_diff(kc, kafka, workdir)
            else:
                status, note = "n/a", "needs both servers"
            fake = type("C", (), {})()
            fake.status, fake.notes = status, [note]
            results[("raw-diff", "requests")] = {"kcoord": fake}
            log("%-8s %-36s %-5s         %s" % ("both", "raw-diff/requests", status, note))
    except KeyboardInterrupt:
        interrupted = True
        print("\ncompat: interrupted; stopping every process it started", file=sys.stderr)
    finally:
        CHILDREN.kill_all()
        for s in reversed(started):
            s.stop()
        CHILDREN.kill_all()
    if interrupted:
        print("compat: logs in %s" % workdir, file=sys.stderr)
        return 130

    seconds = time.monotonic() - t_start
    secure.compare_refusals(results)
    tool_diffs = compare_tool_outputs(results)
    regress, both, passed, failed = [], [], 0, 0
    for key, by in results.items():
        k, r = by.get("kcoord"), by.get("kafka")
        for c in (k, r):
            if c is not None and c.status == "pass":
                passed += 1
            elif c is not None and c.status == "FAIL":
                failed += 1
        if k is not None and k.status == "FAIL":
            if r is not None and r.status == "FAIL":
                both.append("%s/%s" % key)
            else:
                regress.append("%s/%s" % key)
        elif k is None and r is not None and r.status == "FAIL":
            both.append("%s/%s (Kafka)" % key)

    if doc:
        apiv = None
        c = results.get(("kafka-tools", "api-versions"), {}).get("kcoord")
        if c is not None and hasattr(c, "extra"):
            apiv = c.extra.get("apiversions")
        meta = {
            "command": "make compat" if full and args.doc is None else
            "tests/compat/compat.py " + " ".join(shlex.quote(a) for a in argv),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "kcoord": kc.describe() if os.access(binary, os.X_OK) else "?",
            "kafka": kafka_ref_env().get("KAFKA_REF_VERSION", "?"),
            "java": java_version(),
            "packages": versions_of_packages(),
            "ncells": sum(len(v) for v in results.values()),
            "seconds": seconds,
        }
        write_doc(doc, results, [c for c in clients if any(k[0] == c.name for k in results)],
                  meta, apiv, tool_diffs)
        log("compat: wrote %s" % os.path.relpath(doc, ROOT))

    log("")
    log("compat: %d cells in %.0f s: %d passed, %d failed" % (passed + failed, seconds, passed,
                                                             failed))
    if regress:
        log("compat: FAILED on kcoord only: %s" % ", ".join(regress))
    if both:
        log("compat: failed on both servers (a suite problem): %s" % ", ".join(both))
    bad_exit = kc.exit_status not in (0, None)
    if bad_exit:
        log("compat: kcoord's exit status at the end was %s; end of its log:\n%s"
            % (kc.exit_status, tail(kc.log, 30)))
    if regress or both or failed or bad_exit:
        log("compat: logs kept in %s" % workdir)
    elif args.keep_logs:
        log("compat: logs in %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if regress or both or bad_exit else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
