#!/usr/bin/python3
"""chaos: a kcoord cluster under a continuous commit load through many rounds of faults; no
acknowledged commit may be lost.

    tests/chaos/chaos.py [--short] [--rounds N] [--nodes 3|5] [--seed N] [--loopback]
                         [--faults F,F...] [--keep] [--out FILE] [--append [--title T]]

Runs build/kcoord (or $KC_TEST_BIN) as a cluster of --nodes (3) nodes. As root, each node runs
in a network namespace of its own with one veth into a bridge in the root namespace (subnet
10.217.117.0/24: node i is .i, the bridge .254; nothing is routed anywhere else), where the
clients run; --loopback (or not root) runs the nodes on 127.0.0.1 instead, without the network
faults. Every namespace, veth and the bridge are removed at the end, also on a failure or an
interrupt, and every node is killed.

The raw committer (tests/support/cluster.py) commits increasing offsets without pause to 6
groups through whichever node FindCoordinator names, recording every commit answered with
error 0. Faults, --rounds (10; --short: 1, 2 for the leader kill) rounds each, in a shuffled
order (--seed):

  leader-kill       kill -9 of the leader; restarted once a new leader serves
  follower-kill     kill -9 of a follower; restarted
  leader-stop       SIGSTOP of the leader; SIGCONT once a new leader serves
  leader-isolate    the leader's link down (it and its clients cut off); up again
  one-way           nftables in the leader's namespace drops what it sends to the others
                    (they still reach it), or, in turn, what it receives from them (it
                    still reaches them); removed once a new leader serves
  empty-restart     a node (follower or leader, in turn) killed and its disk lost: as the
                    README says, it is removed from the cluster (RemoveRaftVoter), restarted on
                    an empty data directory as a node that joins (cluster.bootstrap=false) and
                    added again (AddRaftVoter); it must catch up and count as a voter again.
                    (Restarted as a founding node instead, it would have forgotten its vote of
                    the current term and could help elect a second leader of that term.)
  power-loss        a node (leader or follower, in turn) killed with kill -9, every byte it
                    had not fsynced dropped (below), and restarted on what is left
  rolling-restart   every node in turn stopped with SIGTERM and started again, the leader last

The power loss: a kill -9 loses nothing that write(2) handed to the kernel, so on its own it
cannot tell a node that fsyncs before it answers from one that does not. When power-loss is
among the faults, every node runs under the LD_PRELOAD shim tests/integration/fsync_journal.c
(compiled with cc into the run's directory), which journals, at every successful fsync or
fdatasync of a regular file, its size and inode; each start of a node gets a journal of its own,
and the size of every file in its data directory is recorded (by inode) just before the start.
After the kill, every regular file under the node's data directory (kcoord's
__consumer_offsets-N and __kcoord_metadata-0 segments and indexes, and libraft's files under
raft/: closed segments, snapshots, metadata1/2) is cut back to the last size journaled for its
inode by that start (a file fsynced and then renamed, as the cleaner's output or a closed raft
segment, is found by its inode), or to its size when that start began if that start never
fsynced it; a file that start created and never fsynced is removed. Removing it rather than
leaving it empty: none of its bytes were durable, and whether its directory entry was is not
known (the shim journals no directory fsync); a missing file is the harder case for the node
(kcoord rebuilds a missing index, libraft ignores a temporary file), and it is what a power loss
before the directory's journal commit leaves. Directory entries otherwise stay as the kill left
them: a rename or unlink is kept even though a power loss could undo one that no directory
fsync followed (the emulation is milder there), and so is a file created and deleted again in
between whose inode number a new file took (it is then treated as the old one).
The exception is libraft's open segments (raft/open-N): libraft 0.22.1 preallocates them with
fallocate and writes them with kernel AIO and RWF_DSYNC (uv_writer.c), so that each completed
write is durable on its own with no fsync call for the shim to journal, and their size (the
preallocated one) says nothing about what was written. They are kept as they are, which is what
a power loss leaves of completed DSYNC writes (a write still in flight at the kill completes
before the process is reaped; a real power loss could tear it). The bytes each round dropped
and the kinds of files the journal listed are logged and reported.

A round ends when every node is back and all agree on one leader that serves, and commits are
acknowledged again. Measured: the time from the fault to the first commit acknowledged after
it. At the end the committer stops and the checker asks OffsetFetch for every group: an offset
below the last acknowledged one is a lost commit, one above the last sent one an invented
commit; an OffsetFetch that went below an acknowledged offset while running is a violation too,
and so are a node that exits by itself (a crash) and one that does not exit with status 0 within
20 s of a rolling restart's SIGTERM (it is killed then).
Then every node is killed and its __consumer_offsets segments must pass `kcoord verify-log`.

It writes --out (default docs/RELIABILITY.md): rounds per fault, acknowledged commits checked,
lost, time to the first commit after each fault (median and max), the bytes each power loss
dropped and the command line; --append adds the report as a section (## --title, default
"N nodes") at the end of --out instead. Exit status 0 when nothing was lost or violated, 1
otherwise.
"""
import argparse
import os
import random
import re
import signal
import stat
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import cluster  # noqa: E402

TOPIC = "chaos"
TOPIC_PARTITIONS = 6
RK_SESSION_MS = 30000
RK_COMMIT_S = 0.2
SETTINGS = ["topics=%s:%d" % (TOPIC, TOPIC_PARTITIONS), "offsets.topic.num.partitions=6",
            "group.initial.rebalance.delay.ms=0", "log.level=info", "log.flush.policy=always",
            # snapshots (and raft log truncation) several times a run; a node restarted on an
            # empty data dir catches up by snapshot, then by log
            "cluster.snapshot.threshold=1024", "cluster.snapshot.trailing=256"]
FAULTS = ["leader-kill", "follower-kill", "leader-stop", "leader-isolate", "one-way",
          "empty-restart", "power-loss", "rolling-restart"]
NET_FAULTS = {"leader-isolate", "one-way"}
STEP_TIMEOUT_S = 60
STOP_TIMEOUT_S = cluster.kcoord.STOP_TIMEOUT_S
MAX_CRASHES = 5  # a run with more node crashes than this stops
SETTLE_ACKS = 20


def log(msg):
    sys.stderr.write("%s chaos: %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def build_shim(where):
    """Compile the fsync journal shim into where; returns the shared object's path."""
    src = os.path.join(ROOT, "tests", "integration", "fsync_journal.c")
    so = os.path.join(where, "fsync_journal.so")
    out = subprocess.run([os.environ.get("CC") or "cc", "-shared", "-fPIC", "-O2", "-std=c11",
                          "-Wall", "-Wextra", "-Werror", "-o", so, src, "-ldl"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if out.returncode != 0:
        raise AssertionError("cannot build the fsync journal shim:\n" + out.stdout.decode())
    return so


def data_files(data_dir):
    """{inode: (size, path)} of every regular file under data_dir."""
    files = {}
    for top, _dirs, names in os.walk(data_dir):
        for name in names:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                files[st.st_ino] = (st.st_size, path)
    return files


def kind(rel):
    """A file's kind, its path with every number as N (raft/N-N, __consumer_offsets-N/N.log)."""
    return re.sub(r"[0-9]+", "N", rel)


def is_raft_open_segment(rel):
    """libraft's open segments: written with AIO and RWF_DSYNC, never fsynced (see above)."""
    return rel.startswith("raft" + os.sep) and os.path.basename(rel).startswith("open-")


class PowerLoss:
    """What one power loss did to one node's data directory."""

    def __init__(self):
        self.victim = ""  # "leader" or "follower"
        self.dropped = {"kcoord": 0, "raft": 0}  # bytes dropped, by whose files
        self.cut = {"kcoord": 0, "raft": 0}      # files cut back
        self.removed = {"kcoord": 0, "raft": 0}  # files created, never fsynced, removed
        self.open_kept = 0                        # raft open segments kept as they were
        self.fsyncs = 0                           # lines in the journal
        self.journaled = {}                       # kind: fsyncs of files of that kind
        self.removed_kinds = {}                   # kind: files of that kind removed

    def total(self):
        return sum(self.dropped.values())

    def __str__(self):
        return ("dropped %d unsynced bytes: kcoord %d (%d files cut, %d removed), libraft %d "
                "(%d files cut, %d removed); %d raft open segments kept; the journal had %d "
                "fsyncs" % (self.total(), self.dropped["kcoord"], self.cut["kcoord"],
                            self.removed["kcoord"], self.dropped["raft"], self.cut["raft"],
                            self.removed["raft"], self.open_kept, self.fsyncs))


def power_loss(data_dir, at_start, journal):
    """After the node's process ended: cut every regular file under data_dir back to the last
    size journaled for its inode, else to its size in at_start ({inode: size} when the process
    started); remove a file the process created and never fsynced; keep libraft's open segments
    (see the module's docstring). Returns a PowerLoss."""
    out = PowerLoss()
    synced = {}
    try:
        with open(journal, "rb") as f:
            for line in f.read().decode(errors="replace").splitlines():
                size, ino, path = line.split(" ", 2)  # see fsync_journal.c
                synced[int(ino)] = int(size)
                out.fsyncs += 1
                k = kind(os.path.relpath(path, data_dir))
                out.journaled[k] = out.journaled.get(k, 0) + 1
    except FileNotFoundError:
        pass
    for ino, (size, path) in data_files(data_dir).items():
        rel = os.path.relpath(path, data_dir)
        whose = "raft" if rel.startswith("raft" + os.sep) else "kcoord"
        if is_raft_open_segment(rel):
            out.open_kept += 1
            continue
        keep = synced.get(ino, at_start.get(ino))
        if keep is None:
            os.unlink(path)
            out.removed[whose] += 1
            out.removed_kinds[kind(rel)] = out.removed_kinds.get(kind(rel), 0) + 1
            out.dropped[whose] += size
        elif size > keep:
            os.truncate(path, keep)
            out.cut[whose] += 1
            out.dropped[whose] += size - keep
    return out


class PowerCluster(cluster.Cluster):
    """A Cluster whose nodes run under the fsync journal shim (when shim is given), with a
    journal of their own for each start; lose_power(i) drops, once node i is down, what its
    last start did not fsync."""

    def __init__(self, *a, shim=None, **kw):
        super().__init__(*a, **kw)
        self.shim = build_shim(self.root) if shim else None
        self.starts = {}    # node id: how many times it was started
        self.journal = {}   # node id: the journal of its last start
        self.at_start = {}  # node id: {inode: size} of its files just before its last start

    def node_env(self, node):
        if self.shim is None:
            return {}
        k = self.starts[node.id] = self.starts.get(node.id, 0) + 1
        self.journal[node.id] = os.path.join(self.root, "fsync-journal-%d-%d" % (node.id, k))
        self.at_start[node.id] = {ino: size for ino, (size, _) in
                                  data_files(node.data_dir).items()}
        return {"KC_FSYNC_JOURNAL": self.journal[node.id],
                "LD_PRELOAD": " ".join(filter(None, [self.shim, os.environ.get("LD_PRELOAD")])),
                # an ASan build (gcc links libasan dynamically) wants its runtime first
                "ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                                       "verify_asan_link_order=0"]))}

    def lose_power(self, i):
        node = self.nodes[i]
        assert node.proc is None, "node %d still runs" % i
        return power_loss(node.data_dir, self.at_start[i], self.journal[i])


class Run:
    """One chaos run: the cluster, the committer and what each round measured."""

    def __init__(self, c, committer, rk=None):
        self.c = c
        self.com = committer
        self.rk = rk
        self.times = {f: [] for f in FAULTS}  # seconds from fault to the first ack after it
        self.rebalances = {f: 0 for f in FAULTS}  # librdkafka assignments after the faults
        self.empty_turn = 0
        self.power_turn = 0
        self.oneway_turn = 0
        self.power = []  # a PowerLoss for each power-loss round
        self.crashes = []  # what check_alive said of each crash
        self.bad_stops = []  # a SIGTERM a node did not exit 0 on, with its last lines

    def recover(self, crashed):
        """After a crash in a round: heal every fault, start every node that is down (the
        crashed one on its data dir), wait until the cluster serves again."""
        c = self.c
        if c.netlab is not None:
            for i in c.nodes:
                c.netlab.heal(i)
                c.netlab.unblock(i)
        for i, node in c.nodes.items():
            if node.paused:
                c.resume(i)
            if node.proc is None or not node.alive:
                node.proc = None
                c.start_node(i)
        self.settle()

    def settle(self, ignore=()):
        """Every running node agrees on one serving leader and commits are acknowledged."""
        leader = self.c.wait_leader(STEP_TIMEOUT_S, ignore=ignore)
        self.c.wait_serving(leader, STEP_TIMEOUT_S)
        self.com.wait_acks_after(time.monotonic(), SETTLE_ACKS, STEP_TIMEOUT_S)
        return leader

    def measure(self, fault, t0):
        first = self.com.wait_acks_after(t0, 1, STEP_TIMEOUT_S)
        self.times[fault].append(first - t0)
        return first - t0

    def round(self, fault):
        c = self.c
        leader = self.settle()
        followers = [i for i in c.nodes if i != leader]
        if fault == "leader-kill":
            c.kill(leader)
            t0 = time.monotonic()  # the fault is in place
            c.wait_leader(STEP_TIMEOUT_S, exclude=(leader,))
            took = self.measure(fault, t0)
            c.start_node(leader)
        elif fault == "follower-kill":
            victim = random.choice(followers)
            c.kill(victim)
            t0 = time.monotonic()  # the fault is in place
            log("killed follower %d" % victim)
            took = self.measure(fault, t0)
            c.start_node(victim)
        elif fault == "leader-stop":
            c.pause(leader)
            t0 = time.monotonic()  # the fault is in place
            c.wait_leader(STEP_TIMEOUT_S, exclude=(leader,))
            took = self.measure(fault, t0)
            c.resume(leader)
        elif fault == "leader-isolate":
            c.netlab.isolate(leader)
            t0 = time.monotonic()  # the fault is in place
            c.wait_leader(STEP_TIMEOUT_S, exclude=(leader,), ignore=(leader,))
            took = self.measure(fault, t0)
            c.netlab.heal(leader)
        elif fault == "one-way":
            self.oneway_turn += 1
            direction = "out" if self.oneway_turn % 2 else "in"
            c.netlab.block(leader, followers, direction)
            t0 = time.monotonic()  # the fault is in place
            c.wait_leader(STEP_TIMEOUT_S, exclude=(leader,), ignore=(leader,))
            took = self.measure(fault, t0)
            c.netlab.unblock(leader)
            fault += " (leader %s)" % ("cannot send" if direction == "out" else "cannot hear")
        elif fault == "empty-restart":
            self.empty_turn += 1
            victim = leader if self.empty_turn % 2 == 0 else random.choice(followers)
            old_dir = c.directory_id(victim)
            c.kill(victim)
            t0 = time.monotonic()  # the fault is in place
            took = self.measure(fault, t0)
            c.replace_wiped(victim, old_dir, STEP_TIMEOUT_S)
            fault += " (%s)" % ("leader" if victim == leader else "follower")
        elif fault == "power-loss":
            self.power_turn += 1
            victim = leader if self.power_turn % 2 else random.choice(followers)
            c.kill(victim)
            t0 = time.monotonic()  # the fault is in place
            lost = c.lose_power(victim)
            lost.victim = "leader" if victim == leader else "follower"
            self.power.append(lost)
            log("power loss of node %d: %s" % (victim, lost))
            log("  fsynced (journal): %s; removed: %s" % (
                ", ".join("%s %d" % kv for kv in sorted(lost.journaled.items())),
                ", ".join("%s %d" % kv for kv in sorted(lost.removed_kinds.items()))))
            c.start_node(victim)
            took = self.measure(fault, t0)
            fault += " (%s)" % ("leader" if victim == leader else "follower")
        elif fault == "rolling-restart":
            # the longest wait for a commit after one of its stops
            t0 = time.monotonic()
            took = 0.0
            for i in followers + [leader]:
                step = time.monotonic()
                out = c.nodes[i].proc
                rc = c.kill(i, signal.SIGTERM)
                if rc != 0:
                    # a stop must end in exit status 0, within the harness's stop timeout
                    what = ("did not exit within %d s of SIGTERM (killed)" % STOP_TIMEOUT_S
                            if rc == -signal.SIGKILL else "exited with status %s" % rc)
                    role = "leader" if i == leader else "follower"
                    tail = "\n".join(out.output().splitlines()[-15:])
                    self.bad_stops.append("node %d (%s) %s in a rolling restart; its last "
                                          "lines:\n%s" % (i, role, what, tail))
                    log("BAD STOP: node %d %s" % (i, what))
                took = max(took, self.com.wait_acks_after(step, 1, STEP_TIMEOUT_S) - step)
                c.start_node(i)
                self.settle()
            self.times[fault].append(took)
        else:
            raise ValueError(fault)
        self.settle()
        kind = fault.split(" ")[0]
        extra = ""
        if self.rk is not None:
            n = self.rk.rebalances_after(t0)
            self.rebalances[kind] += n
            extra = ", %d librdkafka rebalances" % n
        log("%-26s leader was %d, first commit after it %.3f s%s" % (fault, leader, took, extra))


class RkGroup:
    """A librdkafka (confluent-kafka) classic group of `members` consumers of TOPIC, session
    timeout RK_SESSION_MS, each committing the partitions it holds synchronously every
    RK_COMMIT_S with offsets that only grow (a shared millisecond clock). Every commit librdkafka
    reports as successful is recorded; check() reads them back with OffsetFetch. Rebalance
    callbacks are recorded with their times: a failover within the session timeout should
    cause none. A partition held by two members at once (by their callbacks) is a violation."""

    def __init__(self, c, members=3, group="chaos-rk"):
        from confluent_kafka import Consumer
        self.c = c
        self.group = group
        self.lock = threading.Lock()
        self.acked = {}   # partition: highest offset acknowledged
        self.sent = {}    # partition: highest offset sent
        self.commits = 0
        self.errors = {}
        self.events = []  # (monotonic time, member, "assign" | "revoke", partitions)
        self.owned = {}   # member: set of partitions
        self.violations = []
        self.stopping = threading.Event()
        self.closed = False
        self.closers = []
        bootstrap = ",".join("%s:%d" % (x.host, x.kport) for x in c.nodes.values())
        self.consumers = []
        for k in range(members):
            name = "rk%d" % k
            self.owned[name] = set()
            self.consumers.append((name, Consumer({
                "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                "session.timeout.ms": RK_SESSION_MS, "heartbeat.interval.ms": 1000,
                "enable.auto.commit": False, "log_level": 3,
                "partition.assignment.strategy": "range"})))
        self.threads = [threading.Thread(target=self._run, args=(n, cons), daemon=True)
                        for n, cons in self.consumers]
        for t in self.threads:
            t.start()

    def _on_assign(self, name, parts):
        with self.lock:
            got = {p.partition for p in parts}
            for other, held in self.owned.items():
                if other != name and held & got:
                    self.violations.append("%s: partitions %s assigned to %s while %s held "
                                           "them" % (self.group, sorted(held & got), name,
                                                     other))
            self.owned[name] = got
            self.events.append((time.monotonic(), name, "assign", sorted(got)))

    def _on_revoke(self, name, parts):
        with self.lock:
            self.owned[name] = set()
            self.events.append((time.monotonic(), name, "revoke",
                                sorted(p.partition for p in parts)))

    def _run(self, name, cons):
        from confluent_kafka import KafkaException, TopicPartition
        cons.subscribe([TOPIC], on_assign=lambda _c, ps: self._on_assign(name, ps),
                       on_revoke=lambda _c, ps: self._on_revoke(name, ps),
                       on_lost=lambda _c, ps: self._on_revoke(name, ps))
        last = 0.0
        while not self.stopping.is_set():
            cons.poll(0.05)
            with self.lock:
                held = sorted(self.owned[name])
            if not held or time.monotonic() - last < RK_COMMIT_S:
                continue
            last = time.monotonic()
            off = int(time.time() * 1000)
            with self.lock:
                for p in held:
                    self.sent[p] = max(self.sent.get(p, -1), off)
            try:
                got = cons.commit(offsets=[TopicPartition(TOPIC, p, off) for p in held],
                                  asynchronous=False)
            except KafkaException as e:
                self._count(e.args[0].name() if e.args else repr(e))
                continue
            with self.lock:
                for tp in got:
                    if tp.error is None:
                        self.acked[tp.partition] = max(self.acked.get(tp.partition, -1), off)
                        self.commits += 1
                    else:
                        self.errors[tp.error.name()] = self.errors.get(tp.error.name(), 0) + 1

    def _count(self, what):
        with self.lock:
            self.errors[what] = self.errors.get(what, 0) + 1

    def wait_stable(self, timeout):
        """Every member holds partitions and together they hold them all."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                held = [self.owned[n] for n, _ in self.consumers]
            if all(held) and set().union(*held) == set(range(TOPIC_PARTITIONS)):
                return
            time.sleep(0.1)
        raise AssertionError("the librdkafka group did not settle within %d s" % timeout)

    def rebalances_after(self, t):
        with self.lock:
            return sum(1 for e in self.events if e[0] > t and e[2] == "assign")

    def stop(self, timeout=15):
        """Stop polling and close the consumers, giving up after timeout seconds (a consumer
        whose coordinator is gone can take long to close; the process ends anyway)."""
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        if self.closed or any(t.is_alive() for t in self.threads):
            return
        self.closed = True
        closers = [threading.Thread(target=cons.close, daemon=True) for _, cons in self.consumers]
        for t in closers:
            t.start()
        for t in closers:
            t.join(max(0.1, deadline - time.monotonic()))
        self.closers = closers

    def closed_all(self):
        """Every consumer closed (none left trying to reach the cluster)."""
        return self.closed and not any(t.is_alive() for t in self.closers)

    def check(self, com):
        """Every acknowledged commit read back (through the committer's coordinator lookup):
        (commits acknowledged, violations)."""
        violations = list(self.violations)
        parts = sorted(self.acked)
        if not parts:
            return 0, violations + ["%s: no commit was acknowledged" % self.group]
        got = com.fetch_final(self.group, TOPIC, parts, STEP_TIMEOUT_S)
        for p in parts:
            e, off, _ = got.get(p, (None, -1, None))
            if e != 0 or off < self.acked[p]:
                violations.append("%s/%d: LOST: OffsetFetch %s (error %s), %d acknowledged"
                                  % (self.group, p, off, e, self.acked[p]))
            elif off > self.sent[p]:
                violations.append("%s/%d: offset %d never sent" % (self.group, p, off))
        return self.commits, violations


def summary(values):
    if not values:
        return "-", "-"
    return "%.3f" % statistics.median(values), "%.3f" % max(values)


def write_report(path, args, run, faults, checked, violations, errors, elapsed, netns,
                 rk=None, rk_checked=0, failure=None):
    lost = [v for v in violations if "LOST" in v]
    cmd = "tests/chaos/chaos.py" + "".join(" " + a for a in sys.argv[1:])
    if args.append:
        head = ["", "## " + (args.title or "%d nodes" % args.nodes), "",
                "Generated by `%s` (seed %d, appended to this file)" % (cmd, args.seed)]
    else:
        head = ["# Reliability", "",
                "Generated by `make chaos` (`%s`, seed %d)" % (cmd, args.seed)]
    lines = head[:-1] + [
        head[-1] + " on %s: a %d-node kcoord cluster on raft%s, "
        "a raw committer committing without pause to %d groups through whichever node "
        "FindCoordinator names, a librdkafka group of 3 consumers (classic protocol, %d s "
        "session timeout) committing what it holds every %.1f s, and the faults below. A "
        "failover within the session timeout should cause the group no rebalance. "
        "Checker: every commit answered with "
        "error 0 must be returned by OffsetFetch afterwards with the same or a later offset "
        "(never one that was not sent), and no OffsetFetch while running may go below an "
        "acknowledged offset; every node's segments must pass `kcoord verify-log`."
        % (time.strftime("%Y-%m-%d", time.gmtime()), args.nodes,
           " (each node in its own network namespace, joined by veth pairs to a bridge)"
           if netns else " (on loopback, without the network faults)", args.groups,
           RK_SESSION_MS // 1000, RK_COMMIT_S),
        "",
        "Time to the first commit: from the fault to the first acknowledgement of a commit "
        "sent after it (for a rolling restart, the longest such wait after one of its stops).",
        "",
        "| fault | rounds | first commit after the fault, median (s) | max (s) "
        "| librdkafka rebalances after it |",
        "|---|---|---|---|---|",
    ]
    for f in FAULTS:
        if f not in faults:
            continue
        med, mx = summary(run.times[f])
        lines.append("| %s | %d | %s | %s | %s |" % (f, len(run.times[f]), med, mx,
                                                    run.rebalances[f] if rk else "-"))
    lines += [
        "",
        "- acknowledged commits checked: %d (raw committer) + %d (librdkafka group)"
        % (checked, rk_checked),
        "- lost: %d" % len(lost),
        "- other violations: %d" % (len(violations) - len(lost)),
        "- errors the committer saw and retried (Kafka error code or exception: count): %s"
        % (", ".join("%s: %d" % (k, v) for k, v in sorted(errors.items(), key=str)) or "none"),
        "- errors the librdkafka group's commits got: %s"
        % ((", ".join("%s: %d" % kv for kv in sorted(rk.errors.items())) or "none")
           if rk else "-"),
        "- run time: %.0f s" % elapsed,
        "",
        "The time to the first commit includes the clients' own detection: a request to a "
        "stopped or cut-off node waits for the committer's %d s timeout before it asks "
        "FindCoordinator again." % cluster.IO_TIMEOUT_S,
    ]
    if run.power:
        lines += power_report(run.power)
    if run.crashes or run.bad_stops:
        lines += ["", "**Node crashes and bad stops** (each node restarted on its data dir and "
                  "the run went on; each is a violation):", ""]
        for x in run.crashes + run.bad_stops:
            head, _, tail = x.partition("\n")
            lines += ["- " + head, "", "```", tail.strip()[-1500:], "```", ""]
    if failure:
        lines += ["", "**The run did not finish**: after %d rounds the cluster did not recover "
                  "(a wait of up to %d s failed, or a node crashed again when restarted), so "
                  "the acknowledged commits were not checked:"
                  % (sum(len(v) for v in run.times.values()), STEP_TIMEOUT_S), "",
                  "```", failure.strip()[:3000], "```"]
    if violations:
        lines += ["", "Violations:", ""] + ["- " + v for v in violations[:50]]
    # the nodes' log lines name the run's temporary directory: not worth keeping
    text = "\n".join(lines).replace(run.c.root, "RUN_DIR")
    with open(path, "a" if args.append else "w") as f:
        f.write(text + "\n")


def power_report(losses):
    """The report's paragraph on the power losses."""
    kinds, removed = {}, {}
    for x in losses:
        for k, n in x.journaled.items():
            kinds[k] = kinds.get(k, 0) + n
        for k, n in x.removed_kinds.items():
            removed[k] = removed.get(k, 0) + n
    return [
        "",
        "Power loss: each node runs under an LD_PRELOAD shim that journals every fsync "
        "(tests/integration/fsync_journal.c); after the kill -9, every file under the node's "
        "data directory, kcoord's segments and indexes and libraft's closed segments, "
        "snapshots and metadata, is cut back to the size it had at its last fsync (by inode, "
        "so through renames) or when the node started, and a file created and never fsynced "
        "is removed. libraft 0.22.1's open segments (raft/open-N) are kept as they are: "
        "libraft writes them with kernel AIO and RWF_DSYNC, each completed write durable "
        "without an fsync the shim could see, into a file preallocated with fallocate whose "
        "size says nothing; what a write in flight at the kill would leave after a real power "
        "loss is not emulated. Renames and unlinks are kept as the kill left them.",
        "",
        "| power-loss round | victim | unsynced bytes dropped: kcoord's files "
        "| libraft's files | files cut back | files removed | raft open segments kept |",
        "|---|---|---|---|---|---|---|",
    ] + ["| %d | %s | %d | %d | %d | %d | %d |"
         % (k + 1, x.victim, x.dropped["kcoord"], x.dropped["raft"], sum(x.cut.values()),
            sum(x.removed.values()), x.open_kept) for k, x in enumerate(losses)] + [
        "",
        "Files the victims' journals listed as fsynced (every number shown as N; fsyncs): %s. "
        "Files removed (created and never fsynced): %s."
        % (", ".join("`%s` %d" % kv for kv in sorted(kinds.items())),
           ", ".join("`%s` %d" % kv for kv in sorted(removed.items())) or "none"),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="a few rounds (under 3 minutes)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per fault (10)")
    ap.add_argument("--nodes", type=int, default=3, choices=(3, 5))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--loopback", action="store_true", help="no namespaces, no network faults")
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="comma-separated faults to run (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep the data directories and logs")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "RELIABILITY.md"))
    ap.add_argument("--append", action="store_true",
                    help="add the report as a section at the end of --out")
    ap.add_argument("--title", default=None,
                    help="the --append section's title (default: N nodes)")
    args = ap.parse_args()
    args.groups = 6
    if args.seed is None:
        args.seed = random.randrange(1 << 16)
    random.seed(args.seed)
    netns = not args.loopback and os.geteuid() == 0
    chosen = args.faults.split(",")
    for f in chosen:
        if f not in FAULTS:
            ap.error("unknown fault %r (known: %s)" % (f, ", ".join(FAULTS)))
    faults = [f for f in FAULTS if f in chosen and (netns or f not in NET_FAULTS)]
    rounds = args.rounds or (1 if args.short else 10)
    plan = [f for f in faults for _ in range(rounds)]
    if args.short:
        plan.append("leader-kill")
    random.shuffle(plan)

    # A SIGTERM or SIGHUP unwinds like Ctrl-C, so that the cleanup below always runs.
    def interrupt(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)

    start = time.monotonic()
    lab = c = com = rk = run = None
    ok = False
    try:
        lab = cluster.NetLab(args.nodes) if netns else None
        c = PowerCluster(args.nodes, *SETTINGS, netlab=lab, keep=args.keep,
                         shim="power-loss" in faults)
        log("%d nodes%s, data in %s, seed %d, %d rounds" % (
            args.nodes, " in namespaces" if netns else " on loopback", c.root, args.seed,
            len(plan)))
        c.start()
        leader = c.wait_leader(STEP_TIMEOUT_S)
        c.wait_serving(leader, STEP_TIMEOUT_S)
        com = cluster.Committer(c, TOPIC, clients=args.groups, partitions=2, prefix="chaos")
        com.start()
        rk = RkGroup(c)
        rk.wait_stable(STEP_TIMEOUT_S)
        run = Run(c, com, rk)
        run.settle()
        for k, fault in enumerate(plan):
            log("round %d/%d: %s" % (k + 1, len(plan), fault))
            try:
                run.round(fault)
            except cluster.NodeCrashed as e:
                # A crash is a violation; the run goes on (the node restarted, every fault
                # healed) so that the acknowledged commits are still checked at the end.
                run.crashes.append("round %d (%s): %s" % (k + 1, fault, e))
                log("CRASH in round %d: node %d exited with status %s; restarting it"
                    % (k + 1, e.node, e.status))
                if len(run.crashes) > MAX_CRASHES:
                    raise
                run.recover(e.node)
        com.stop()
        rk.stop()
        checked, violations = com.check(STEP_TIMEOUT_S)
        violations += ["node crash, %s" % x.split("; its last lines")[0] for x in run.crashes]
        violations += ["bad stop: %s" % x.split("; its last lines")[0] for x in run.bad_stops]
        rk_checked, rk_violations = rk.check(com)
        violations += rk_violations
        for i, node in c.nodes.items():
            c.kill(i)
            good, out = cluster.verify_log(node.data_dir)
            if not good:
                violations.append("node %d: verify-log failed: %s" % (i, out.strip()[-500:]))
        elapsed = time.monotonic() - start
        write_report(args.out, args, run, faults, checked, violations, com.errors, elapsed,
                     netns, rk, rk_checked)
        log("%d + %d acknowledged commits checked, %d violations, %.0f s; wrote %s"
            % (checked, rk_checked, len(violations), elapsed, args.out))
        for v in violations:
            log("VIOLATION " + v)
        ok = not violations
    except (AssertionError, KeyboardInterrupt) as e:
        log("FAILED: %s" % e)
        if run is not None and isinstance(e, AssertionError):
            write_report(args.out, args, run, faults, 0, [], com.errors,
                         time.monotonic() - start, netns, rk, 0,
                         failure=str(e).split("\n---- node")[0])
            log("wrote %s (an unfinished run)" % args.out)
        if c is not None and "---- node" not in str(e):
            sys.stderr.write(c.logs(tail=80) + "\n")
        if c is not None:
            c.keep = True  # every node's whole log stays for the post-mortem
            log("the nodes' data and logs (node-N.log) are kept in %s" % c.root)
    finally:
        # Nothing may interrupt the cleanup: every node killed, every namespace removed.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if com is not None:
            com.stop()
        if rk is not None:
            rk.stop()  # while the nodes still answer, so that the consumers leave and close
        if c is not None:
            c.close()
            if c.keep:
                log("kept %s" % c.root)
        if lab is not None:
            # consumers that would not close keep trying the nodes: into the blackhole
            lingering = (rk is not None and not rk.closed_all()) or \
                (com is not None and any(t.is_alive() for t in com.threads))
            lab.close(keep_blackhole=lingering)
            lab.release_later()
    return 0 if ok else 1


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # librdkafka consumers that could not close must not hold the process at exit.
    os._exit(rc)
