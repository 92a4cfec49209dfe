#!/usr/bin/env python3
"""hostile: what one hostile (or unlucky) client, clock step or byte on disk does to kcoord.

    tests/bench/hostile.py [--only CASE[,CASE...]] [--label before|after] [--json FILE]
                           [--before FILE] [--after FILE] [--markdown FILE] [--cap S] KCOORD
    tests/bench/hostile.py --render --before FILE [--after FILE] --markdown FILE
    tests/bench/hostile.py --list

For each case (CASES below; --list prints them) it starts a fresh KCOORD on free ports
(listeners=127.0.0.1:0, metrics.listener=127.0.0.1:0) with its own data directory in a new
temporary directory under /tmp, group.initial.rebalance.delay.ms=0, topics=hostile-topic-0001:100
and the case's own --set options. Before the hostile action a probe joins the classic group
"probe" (JoinGroup v5 with the KIP-394 member id round trip, SyncGroup v3, session timeout
10 s) on a connection of its own and sends a Heartbeat v3 every 10 ms: the longest of its waits
(from sending a heartbeat to its answer, or to the end of the case when it never came) is how
long kcoord kept another client waiting. A heartbeat answered UNKNOWN_MEMBER_ID or
ILLEGAL_GENERATION means that healthy member was expelled.

Meanwhile a sampler reads VmRSS and VmHWM from /proc/PID/status every 20 ms: the peak RSS is the
largest VmHWM seen (kept when the process dies); at RSS_LIMIT (8 GB) the process is killed and
the figure is ">8 GB". Every case has a hard cap (--cap, default 25 s) on its own action, every
request loop is bounded, and every wait is bounded by that cap; a case still running 15 s past
it gets kcoord killed (which ends every socket wait). At the end the driver asks a new
connection for ApiVersions (answered within 5 s or "hung"), sends SIGTERM and waits 5 s (or
kills it and says so). A case that stalls kcoord ends only once the probe is answered again
(or at the cap), so that a stall is measured whole. The outcome says what happened: crashed
(and the signal), hung, exited, a start refused, and in bold what went wrong: another client
waiting 1 s or more, acknowledged commits a restart no longer returns (commits are OffsetCommit
v7 with generation -1, one per batch, re-read with OffsetFetch v3 after the restart; a
partition the restart does not serve is reported as such, not as lost), commits refused, a
member expelled or kept, error lines.

Every process started, every socket, every tmpfs mounted (the disk-full and read-only cases
mount a small tmpfs, so they need root; without it they say "not measured") and every temporary
directory is removed on the way out, also on failure or Ctrl-C. Traffic goes to 127.0.0.1 only.
The clock-step cases preload libfaketime (Debian package faketime) with only the wall clock
faked (DONT_FAKE_MONOTONIC=1) and step it through FAKETIME_TIMESTAMP_FILE; without the library
they say "not measured".

--json writes the results, --markdown rewrites only the section "## Hostile load" of that page
(between its heading and the marker line END_MARKER; added at the end when missing), with a
column from the --before results and one from the --after results (the results of this run
count as --label says). `make bench-hostile` runs every case against the current build as
"after" and keeps the saved "before" figures (docs/bench/hostile-before.json).
With --only and --json the other cases already in that file are kept.

To add a case: a function of a Ctx that starts kcoord with ctx.start(SETTINGS) (which also
starts the probe), does the hostile thing within ctx.left() seconds, registers what it opens
with ctx.conn() / ctx.cleanups, and puts what it saw in ctx.result ("action": one sentence;
"harm": what went wrong, in a few words); then a row in CASES with an id and the sentence the
table shows. Keep a case under the cap and its memory under RSS_LIMIT.

Exit status: 0 when every case ran (whatever kcoord did), 1 when the driver itself failed on a
case, 2 on a usage error.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
from kwire import Reader, Writer  # noqa: E402  (tests/compat/kwire.py: the wire primitives)
from tests.support import gen_wire  # noqa: E402  (the messages, generated from proto/)

CAP_S = 25.0
RSS_LIMIT = 8 << 30
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 5
TOPIC = "hostile-topic-0001"  # 18 characters, the length the regex cases are about
TOPIC_PARTITIONS = 100
PROBE_GROUP = "probe"
PROBE_SESSION_MS = 10000
PROBE_INTERVAL_S = 0.010
FAKETIME_LIBS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/lib/faketime/libfaketime.so.1")
BEGIN_HEADING = "## Hostile load"
END_MARKER = "<!-- end of the hostile-load section (tests/bench/hostile.py) -->"
# The line for the list at the top of the page (tests/bench/bench.py writes the same one).
TOP_LINE = ("- Hostile load (its own section, *Hostile load*): `make bench-hostile` "
            "(tests/bench/hostile.py) runs just it and replaces just that section, which says "
            "when and at which commit each column ran.")

API_VERSIONS, METADATA = 18, 3
JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH = 11, 14, 12, 8, 9
DESCRIBE_GROUPS, CG_HEARTBEAT = 15, 68
MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 79, 25, 22
RETRIABLE = (14, 15, 16)


class CaseError(Exception):
    """The driver could not do what the case needs (not something kcoord did)."""


class StartRefused(CaseError):
    """kcoord exited during its start (a refusal, when the case is about its settings)."""


class NotMeasured(Exception):
    """The case cannot run on this machine (a missing tool or privilege)."""


# ---- the wire --------------------------------------------------------------------------------

class Conn:
    """One Kafka connection: request header v1 (v2 when flexible), response header v0 (v1)."""

    def __init__(self, port, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0

    def frame(self, key, version, body, flexible=False):
        self.corr += 1
        head = Writer().i16(key).i16(version).i32(self.corr).string("hostile")
        if flexible:
            head.uvarint(0)
        head = head.bytes()
        return struct.pack(">i", len(head) + len(body)) + head + body

    def send(self, key, version, body, flexible=False):
        self.s.sendall(self.frame(key, version, body, flexible))
        return self.corr

    def recv(self, timeout, flexible=False):
        """(correlation id, Reader of the body); socket.timeout past `timeout` seconds,
        EOFError when the server closed the connection."""
        deadline = time.monotonic() + timeout
        size = struct.unpack(">i", self.exact(4, deadline))[0]
        r = Reader(self.exact(size, deadline))
        corr = r.i32()
        if flexible:
            r.tagged_fields()
        return corr, r

    def call(self, key, version, body, timeout=10.0, flexible=False):
        corr = self.send(key, version, body, flexible)
        while True:
            got, r = self.recv(timeout, flexible)
            if got == corr:
                return r

    def exact(self, n, deadline):
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no answer")
            self.s.settimeout(min(left, 1.0))
            try:
                chunk = self.s.recv(min(n - len(buf), 1 << 20))
            except socket.timeout:
                continue
            if not chunk:
                raise EOFError("connection closed by kcoord")
            buf += chunk
        return bytes(buf)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def join_body(group, member, session_ms=PROBE_SESSION_MS, metadata=None):
    """JoinGroup v5 of the consumer protocol "range"."""
    if metadata is None:
        metadata = Writer().i16(0).raw(
            gen_wire.encode_consumer_protocol_subscription(0, topics=[TOPIC])).bytes()
    return gen_wire.encode_join_group_request(
        5, group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=session_ms,
        member_id=member, protocol_type="consumer",
        protocols=[dict(name="range", metadata=metadata)])


def join_group(conn, group, session_ms=PROBE_SESSION_MS, metadata=None, assignment=None,
               timeout=10.0):
    """Join `group` as its only member (JoinGroup v5 twice, SyncGroup v3): (error of the join,
    error of the sync, generation, member id)."""
    member = ""
    for _ in range(3):
        r = gen_wire.decode_join_group_response(5, conn.call(
            JOIN_GROUP, 5, join_body(group, member, session_ms, metadata), timeout))
        err, gen, member = r.error_code, r.generation_id, r.member_id
        if err != MEMBER_ID_REQUIRED:
            break
    if err != 0:
        return err, None, gen, member
    if assignment is None:
        assignment = Writer().i16(0).raw(gen_wire.encode_consumer_protocol_assignment(
            0, assigned_partitions=[dict(topic=TOPIC, partitions=[0])])).bytes()
    body = gen_wire.encode_sync_group_request(
        3, group_id=group, generation_id=gen, member_id=member,
        assignments=[dict(member_id=member, assignment=assignment)])
    r = gen_wire.decode_sync_group_response(3, conn.call(SYNC_GROUP, 3, body, timeout))
    return 0, r.error_code, gen, member


def heartbeat_body(group, gen, member):
    return gen_wire.encode_heartbeat_request(3, group_id=group, generation_id=gen,
                                             member_id=member)


def commit_body(group, offsets, metadata=""):
    """OffsetCommit v7 with generation -1 (a commit from outside any generation):
    {partition: offset} of TOPIC."""
    return gen_wire.encode_offset_commit_request(
        7, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[dict(name=TOPIC, partitions=[
            dict(partition_index=p, committed_offset=o, committed_metadata=metadata)
            for p, o in sorted(offsets.items())])])


def commit_errors(r):
    out = {}
    for t in gen_wire.decode_offset_commit_response(7, r).topics:
        for p in t.partitions:
            out[p.partition_index] = p.error_code
    return out


def fetch_offsets(conn, group, timeout=10.0):
    """OffsetFetch v3, all topics: ({partition of TOPIC: offset}, group error)."""
    body = gen_wire.encode_offset_fetch_request(3, group_id=group, topics=None)
    r = gen_wire.decode_offset_fetch_response(3, conn.call(OFFSET_FETCH, 3, body, timeout))
    out = {}
    for t in r.topics:
        for p in t.partitions:
            if t.name == TOPIC and p.error_code == 0 and p.committed_offset >= 0:
                out[p.partition_index] = p.committed_offset
    return out, r.error_code


def cg_heartbeat_body(group, regex):
    """ConsumerGroupHeartbeat v1 joining `group` (epoch 0) with SubscribedTopicRegex `regex`."""
    return gen_wire.encode_consumer_group_heartbeat_request(
        1, group_id=group, member_id=os.urandom(11).hex(), member_epoch=0,
        rebalance_timeout_ms=60000, subscribed_topic_regex=regex, topic_partitions=[])


def cg_heartbeat_error(r):
    m = gen_wire.decode_consumer_group_heartbeat_response(1, r)
    return m.error_code, m.error_message


# ---- the daemon ------------------------------------------------------------------------------

def quiet_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("KCOORD_")}


def rss_of(pid):
    """(VmRSS, VmHWM) in bytes, or None when the process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            rss = hwm = 0
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) << 10
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) << 10
            return rss, hwm
    except (OSError, ValueError):
        return None


class Kcoord:
    """A kcoord process on free ports; its stderr is read by a thread (each line with the
    monotonic time it arrived) and its memory by a sampler thread."""

    def __init__(self, binary, data_dir, sets=(), env=None, wait_loaded=True, nofile=None):
        self.args = [binary, "--set", "listeners=127.0.0.1:0", "--set", "data.dir=" + data_dir,
                     "--set", "metrics.listener=127.0.0.1:0",
                     "--set", "group.initial.rebalance.delay.ms=0",
                     "--set", "topics=%s:%d" % (TOPIC, TOPIC_PARTITIONS)]
        for s in sets:
            self.args += ["--set", s]
        e = quiet_env()
        e.update(env or {})
        self.t_start = time.monotonic()
        def limit():
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=e, preexec_fn=limit)
        self.pid = self.proc.pid
        self.lines = []  # (monotonic time, line)
        self.cv = threading.Condition()
        self.peak = 0
        self.rss = 0
        self.rss_killed = False
        self.stopping = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()
        self.port = self.http_port = None
        self.stop_text = None  # how it ended when the driver stopped it
        try:
            m = self.wait_log(r"listening on 127\.0\.0\.1:(\d+)", START_TIMEOUT_S)
            self.port = int(m.group(1))
            m = self.wait_log(r"serving http://127\.0\.0\.1:(\d+)/", 5)
            self.http_port = int(m.group(1))
            self.t_loaded = None
            if wait_loaded:
                self.wait_log(r"all \d+ partitions loaded", START_TIMEOUT_S)
                self.t_loaded = time.monotonic()
        except BaseException:
            self.kill()
            raise
        self.base_rss = (rss_of(self.pid) or (0, 0))[0]

    def _read(self):
        for raw in self.proc.stderr:
            with self.cv:
                self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def _sample(self):
        while not self.stopping.is_set():
            v = rss_of(self.pid)
            if v is None or self.proc.poll() is not None:
                return
            self.rss = v[0]
            self.peak = max(self.peak, v[1], v[0])
            if v[0] > RSS_LIMIT:
                self.rss_killed = True
                self.peak = max(self.peak, RSS_LIMIT + 1)
                self.proc.kill()
                return
            time.sleep(0.02)

    def log_text(self):
        with self.cv:
            return "\n".join(line for _, line in self.lines)

    def wait_log(self, regex, timeout, since=0):
        """The first match of `regex` in a stderr line from index `since` on."""
        pat = re.compile(regex)
        deadline = time.monotonic() + timeout
        with self.cv:
            i = since
            while True:
                while i < len(self.lines):
                    m = pat.search(self.lines[i][1])
                    if m:
                        return m
                    i += 1
                if self.proc.poll() is not None and not self.reader.is_alive():
                    last = self.lines[-1][1][25:] if self.lines else "nothing"
                    raise StartRefused("kcoord exited (%s) before logging /%s/; its last "
                                       "line: %s" % (exit_text(self.proc.returncode), regex,
                                                     last))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CaseError("kcoord logged no /%s/ within %.0f s" % (regex, timeout))
                self.cv.wait(min(left, 0.5))

    def count_lines(self, word, t0, t1):
        with self.cv:
            return sum(1 for t, line in self.lines if t0 <= t <= t1 and word in line)

    def alive(self):
        return self.proc.poll() is None

    def answers(self, timeout=5.0):
        """Whether a new connection gets an ApiVersions answer within `timeout`."""
        if not self.alive():
            return False
        try:
            c = Conn(self.port, timeout)
        except OSError:
            return False
        try:
            c.call(API_VERSIONS, 0, b"", timeout)
            return True
        except (OSError, EOFError, ValueError):
            return False
        finally:
            c.close()

    def stop(self):
        """SIGTERM and wait: a text for how the process ended."""
        if self.proc.poll() is not None:
            self.stopping.set()
            return exit_text(self.proc.returncode)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
            text = exit_text(self.proc.returncode)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            text = "SIGTERM not acted on in %d s (killed)" % STOP_TIMEOUT_S
        self.stopping.set()
        self.reader.join(timeout=5)
        self.stop_text = text
        return text

    def kill(self):
        self.stopping.set()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)
        try:
            self.proc.stderr.close()
        except OSError:
            pass


def exit_text(code):
    if code is None:
        return "running"
    if code < 0:
        try:
            return "killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exit status %d" % code


# ---- the probe -------------------------------------------------------------------------------

class Probe(threading.Thread):
    """A healthy member of the group "probe" heartbeating every 10 ms on its own connection."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.conn = Conn(port)
        err, serr, self.gen, self.member = join_group(self.conn, PROBE_GROUP)
        if err or serr:
            raise CaseError("the probe could not join: JoinGroup %s SyncGroup %s" % (err, serr))
        self.stop_ev = threading.Event()
        self.waits = []
        self.pending_since = None
        self.unanswered = None  # the wait of a heartbeat never answered
        self.expelled = None  # the error that expelled it
        self.ended = None  # how the connection ended, when it did
        self.lock = threading.Lock()

    def run(self):
        body = heartbeat_body(PROBE_GROUP, self.gen, self.member)
        while not self.stop_ev.is_set():
            t0 = time.monotonic()
            try:
                corr = self.conn.send(HEARTBEAT, 3, body)
                with self.lock:
                    self.pending_since = t0
                while True:
                    # finish() shuts the socket down, which ends this wait.
                    got, r = self.conn.recv(3600)
                    if got == corr:
                        break
            except (OSError, EOFError, ValueError) as e:
                with self.lock:
                    if not self.stop_ev.is_set():
                        self.ended = str(e) or type(e).__name__
                    self.unanswered = time.monotonic() - t0
                return
            wait = time.monotonic() - t0
            with self.lock:
                self.pending_since = None
                self.waits.append(wait)
            r.i32()
            err = r.i16()
            if err in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) and self.expelled is None:
                self.expelled = err
            rest = PROBE_INTERVAL_S - (time.monotonic() - t0)
            if rest > 0:
                self.stop_ev.wait(rest)

    def finish(self):
        with self.lock:
            self.stop_ev.set()
        try:
            self.conn.s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.join(timeout=5)
        self.conn.close()
        with self.lock:
            if self.pending_since is not None and (self.unanswered is None or self.is_alive()):
                self.unanswered = time.monotonic() - self.pending_since
        longest = max(self.waits, default=0.0)
        return {
            "probe_requests": len(self.waits),
            "probe_max_ms": round(max(longest, self.unanswered or 0.0) * 1000, 1),
            "probe_answered_max_ms": round(longest * 1000, 1),
            "probe_unanswered": self.unanswered is not None and self.unanswered > longest,
            "probe_expelled": self.expelled,
            "probe_ended": self.ended,
        }


# ---- the cases -------------------------------------------------------------------------------

class Ctx:
    """What a case gets: the binary, a temporary directory, the cap and a list of clean-ups
    (run in reverse order however the case ends)."""

    def __init__(self, binary, cap):
        self.binary = binary
        self.cap = cap
        self.tmp = tempfile.mkdtemp(prefix="kcoord-hostile-")
        self.cleanups = []
        self.daemons = []
        self.probe = None
        self.result = {}
        self.t0 = time.monotonic()
        self.deadline = self.t0 + cap

    def left(self):
        return max(0.1, self.deadline - time.monotonic())

    def start(self, sets=(), data=None, env=None, wait_loaded=True, probe=True, nofile=None):
        """A kcoord on `data` (default TMP/data), and the probe on it."""
        data = data or os.path.join(self.tmp, "data")
        os.makedirs(data, exist_ok=True)
        k = Kcoord(self.binary, data, sets, env, wait_loaded, nofile)
        self.daemons.append(k)
        self.cleanups.append(k.kill)
        if probe:
            try:
                self.probe = Probe(k.port)
                self.probe.start()
            except (CaseError, OSError, EOFError) as e:
                self.result["probe_error"] = str(e) or type(e).__name__
        return k

    def conn(self, k, timeout=10.0):
        c = Conn(k.port, timeout)
        self.cleanups.append(c.close)
        return c

    def mount_tmpfs(self, path, opts):
        if os.geteuid() != 0:
            raise NotMeasured("needs root to mount a tmpfs")
        os.makedirs(path, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path],
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise NotMeasured("mount -t tmpfs failed: %s" % r.stderr.strip())
        self.cleanups.append(lambda: subprocess.run(["umount", "-l", path],
                                                    stderr=subprocess.DEVNULL))

    def wait_probe_quiet(self, least):
        """Wait `least` seconds, then until the probe has had no heartbeat waiting for more
        than 0.2 s for 0.3 s (or the cap)."""
        end = min(self.deadline, time.monotonic() + least)
        while time.monotonic() < end:
            time.sleep(0.05)
        quiet_since = None
        while time.monotonic() < self.deadline:
            if self.probe is None or not self.probe.is_alive():
                return
            with self.probe.lock:
                since = self.probe.pending_since
            if since is None or time.monotonic() - since < 0.2:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= 0.3:
                    return
            else:
                quiet_since = None
            time.sleep(0.05)

    def end_probe(self):
        if self.probe is not None:
            self.result.update(self.probe.finish())
            self.probe = None

    def close(self):
        self.end_probe()
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:  # noqa: BLE001 - every clean-up runs
                pass
        self.cleanups = []
        shutil.rmtree(self.tmp, ignore_errors=True)


def segments(data, partition=0):
    d = os.path.join(data, "__consumer_offsets-%d" % partition)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def batch_spans(path):
    """[(start, length)] of the record batches in a segment file."""
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos + 12 <= len(data):
        n = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        if n <= 0 or pos + 12 + n > len(data):
            break
        out.append((pos, 12 + n))
        pos += 12 + n
    return out


def commit_one_by_one(c, group, parts, base, timeout):
    """Commit offset base+p to each partition p of `parts`, one request each: the acknowledged
    {partition: offset} and the error codes seen."""
    acked, errors = {}, {}
    for p in parts:
        errs = commit_errors(c.call(OFFSET_COMMIT, 7, commit_body(group, {p: base + p}), timeout))
        e = errs.get(p, -1)
        if e == 0:
            acked[p] = base + p
        else:
            errors[e] = errors.get(e, 0) + 1
    return acked, errors


def restart_and_fetch(ctx, data, group, acked, sets=()):
    """Restart kcoord on `data` and fetch `group`'s offsets: (the daemon, the OffsetFetch error
    (-1: no answer), how many of the acknowledged commits it does not return, or None when it
    does not serve the group's partition)."""
    k = ctx.start(sets, data=data, probe=False, wait_loaded=False)
    try:
        k.wait_log(r"all \d+ partitions loaded", 10)
    except CaseError:
        pass  # a partition that does not load: the fetch says so
    c = ctx.conn(k)
    end = time.monotonic() + 5.0
    while True:
        try:
            got, err = fetch_offsets(c, group)
        except (socket.timeout, EOFError, OSError):
            got, err = {}, -1
            break
        if err not in RETRIABLE or time.monotonic() > end:
            break
        time.sleep(0.1)
    if err != 0:
        return k, err, None
    return k, err, sum(1 for p, o in acked.items() if got.get(p, -1) < o)


def log_batches(data, partition=0):
    """How many record batches the partition's segments hold."""
    return sum(len(batch_spans(seg)) for seg in segments(data, partition))


def hostile_call(ctx, k, key, version, body, flexible=False, resp_flexible=None):
    """Send one request on a new connection and wait up to the cap: a text for what came back
    and the Reader (None when nothing did)."""
    c = ctx.conn(k, 10.0)
    t0 = time.monotonic()
    try:
        corr = c.send(key, version, body, flexible)
        while True:
            got, r = c.recv(ctx.left(), flexible if resp_flexible is None else resp_flexible)
            if got == corr:
                break
        return "answered in %s" % fmt_ms((time.monotonic() - t0) * 1000), r
    except socket.timeout:
        return "no answer in %.0f s" % (time.monotonic() - t0), None
    except (OSError, EOFError) as e:
        return "connection ended after %s (%s)" % (fmt_ms((time.monotonic() - t0) * 1000),
                                                  str(e) or type(e).__name__), None


def regex_case(regex, topics=None, must_accept=False):
    def run(ctx):
        sets = ["topics=%s" % topics] if topics else []
        k = ctx.start(sets)
        time.sleep(0.3)
        what, r = hostile_call(ctx, k, CG_HEARTBEAT, 1, cg_heartbeat_body("rx", regex), True)
        if r is not None:
            err, msg = cg_heartbeat_error(r)
            what += ", error %d%s" % (err, " (%s)" % msg[:200] if msg else "")
            if must_accept and err != 0:
                ctx.result["harm"] = "refused (error %d)" % err
        ctx.result["action"] = what
        ctx.wait_probe_quiet(0.5)
    return run


def case_pending_joins(n):
    def run(ctx):
        k = ctx.start(["group.min.session.timeout.ms=500"])
        time.sleep(0.3)
        c = ctx.conn(k, 10.0)
        frames = [c.frame(JOIN_GROUP, 5, join_body("pending", "", 1000)) for _ in range(n)]
        sent = threading.Event()

        def sender():
            try:
                for i in range(0, n, 500):
                    c.s.sendall(b"".join(frames[i:i + 500]))
            except OSError:
                pass
            sent.set()

        t = threading.Thread(target=sender, daemon=True)
        t0 = time.monotonic()
        t.start()
        answered = required = 0
        try:
            while answered < n:
                _, r = c.recv(ctx.left())
                answered += 1
                r.i32()
                if r.i16() == MEMBER_ID_REQUIRED:
                    required += 1
        except (socket.timeout, EOFError, OSError):
            pass
        t_all = time.monotonic() - t0
        ctx.result["action"] = ("%d of %d JoinGroups answered in %.1f s (%d MEMBER_ID_REQUIRED)"
                                % (answered, n, t_all, required))
        # The pending members' session timeout is 1 s: give them 3 s to expire, and then
        # wait (up to the cap) until the probe's heartbeats are answered again.
        ctx.wait_probe_quiet(3.0)
    return run


def case_metadata_unread(ctx):
    k = ctx.start(["topics=big:100000", "group.initial.rebalance.delay.ms=0"])
    c = ctx.conn(k, 10.0)
    body = gen_wire.encode_metadata_request(1, topics=[dict(name="big")])
    c.s.sendall(b"".join(c.frame(METADATA, 1, body) for _ in range(200)))
    settle(ctx, k, 8.0)
    ctx.wait_probe_quiet(0)
    ctx.result["action"] = "200 Metadata v1 requests for big (100 000 partitions), never read"


def settle(ctx, k, most):
    """Wait until kcoord's RSS has not grown for 2 s (at most `most` seconds)."""
    end = min(ctx.deadline, time.monotonic() + most)
    last, t_last = k.rss, time.monotonic()
    while time.monotonic() < end and k.alive():
        time.sleep(0.2)
        if k.rss > last + (1 << 20):
            last, t_last = k.rss, time.monotonic()
        elif time.monotonic() - t_last > 2.0:
            break


def case_describe_3m(ctx):
    k = ctx.start()
    n = 3_000_000
    body = Writer().uvarint(n + 1).bytes() + b"\x01" * n + b"\x00\x00"
    t0 = time.monotonic()
    what, r = hostile_call(ctx, k, DESCRIBE_GROUPS, 5, body, True)
    if r is not None:
        what += " (%.1f MB)" % (len(r.buf) / 1e6)
    ctx.result["action"] = "DescribeGroups v5, %d empty ids (%.1f MB): %s" % (
        n, len(body) / 1e6, what)
    del r
    ctx.wait_probe_quiet(max(0.0, 1.0 - (time.monotonic() - t0)))


def case_big_request_idle(ctx):
    k = ctx.start()
    size = 60 << 20
    # ApiVersions v3 whose client software name is 60 MB: read whole, answered, then idle.
    name = b"x" * size
    body = Writer().uvarint(len(name) + 1).bytes() + name + b"\x01\x00"
    what, r = hostile_call(ctx, k, API_VERSIONS, 3, body, True, resp_flexible=False)
    if r is not None:
        what += ", error %d" % r.i16()
    time.sleep(3.0)
    ctx.result["rss_after_mb"] = round(k.rss / 2**20, 1)
    ctx.result["action"] = ("one 60 MB ApiVersions v3 request: %s; RSS 3 s later, the "
                            "connection idle: %.0f MB" % (what, k.rss / 2**20))


def case_http_groups(ctx):
    k = ctx.start(["log.flush.policy=never", "offsets.topic.num.partitions=50"])
    c = ctx.conn(k, 30.0)
    n = 30000
    batch = 500
    for i in range(0, n, batch):
        for g in range(i, i + batch):
            c.send(OFFSET_COMMIT, 7, commit_body("g%05d" % g, {0: 1}))
        for _ in range(batch):
            c.recv(ctx.left())
    ctx.result["setup"] = "30 000 groups created by OffsetCommit in %.1f s" % (
        time.monotonic() - ctx.t0)
    # The probe's waits count from here: reset it.
    ctx.deadline = time.monotonic() + ctx.cap
    with ctx.probe.lock:
        ctx.probe.waits = []
    rss_setup = k.rss
    socks = []
    for _ in range(100):
        s = socket.create_connection(("127.0.0.1", k.http_port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        ctx.cleanups.append(s.close)
        socks.append(s)
    refused = 0
    for s in socks:
        try:
            s.sendall(b"GET /v1/groups HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        except OSError:
            refused += 1
    settle(ctx, k, 10.0)
    ctx.wait_probe_quiet(0)
    # What an 8 KB+ request header gets.
    hdr = "no answer"
    try:
        s = socket.create_connection(("127.0.0.1", k.http_port), timeout=5)
        ctx.cleanups.append(s.close)
        s.sendall(b"GET /v1/groups HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 9000 +
                  b"\r\n\r\n")
        line = s.recv(256).split(b"\r\n", 1)[0].decode(errors="replace")
        hdr = line or "connection closed"
    except ConnectionResetError:
        hdr = "connection reset"
    except OSError as e:
        hdr = str(e)
    ctx.result["action"] = ("%s (RSS then %.0f MB); 100 connections sent GET /v1/groups and "
                            "read nothing%s; a 9 KB header got: %s"
                            % (ctx.result.pop("setup"), rss_setup / 2**20,
                               " (%d could not send it)" % refused if refused else "", hdr))


def case_fd_limit(ctx):
    limit = 256
    # The limit from the start, as `ulimit -n` or systemd's LimitNOFILE set it.
    k = ctx.start(["offsets.topic.segment.bytes=1024", "offsets.topic.num.partitions=1"],
                  nofile=limit)
    c = ctx.conn(k, 10.0)
    opened = 0
    for _ in range(limit + 50):
        try:
            s = socket.create_connection(("127.0.0.1", k.port), timeout=2)
        except OSError:
            break
        ctx.cleanups.append(s.close)
        opened += 1
    time.sleep(0.5)
    acked, errors = commit_one_by_one(c, "fd", range(40), 100, ctx.left())
    got, err = fetch_offsets(c, "fd")
    ctx.result["action"] = ("fd limit %d, %d idle connections opened; 40 commits (1 KB segments): "
                            "%d acknowledged, errors %s; OffsetFetch error %d, %d offsets"
                            % (limit, opened, len(acked), errors or "none", err, len(got)))
    ctx.result["commits_failed"] = 40 - len(acked)
    if len(acked) < 40:
        ctx.result["harm"] = "%d of 40 commits failed" % (40 - len(acked))


def case_flipped_byte(ctx):
    sets = ["offsets.topic.num.partitions=1"]
    data = os.path.join(ctx.tmp, "data")
    k = ctx.start(sets)
    c = ctx.conn(k)
    acked, errors = commit_one_by_one(c, "flip", range(100), 1000, ctx.left())
    ctx.end_probe()
    how = k.stop()
    seg = segments(data)[-1]
    spans = batch_spans(seg)
    if len(spans) < 10:
        raise CaseError("only %d batches in %s" % (len(spans), seg))
    start, length = spans[len(spans) // 2]
    with open(seg, "r+b") as f:
        f.seek(start + length - 2)
        b = f.read(1)
        f.seek(start + length - 2)
        f.write(bytes([b[0] ^ 0x01]))
    k2, err, lost = restart_and_fetch(ctx, data, "flip", acked, sets)
    n_err = k2.count_lines(" ERROR ", 0, time.monotonic())
    k2.stop()
    kept = log_batches(data)
    ctx.result["lost"] = lost
    if lost:
        ctx.result["harm"] = "%d of %d acknowledged commits lost" % (lost, len(acked))
    elif lost is None and kept < len(spans):
        ctx.result["harm"] = "partition not served and %d of %d batches deleted" % (
            len(spans) - kept, len(spans))
    ctx.result["action"] = ("%d commits acknowledged, one per batch; clean stop (%s); one byte "
                            "of batch %d of %d flipped; at restart %s; %d ERROR lines; %d of %d "
                            "batches left on disk" % (
                                len(acked), how, len(spans) // 2 + 1, len(spans),
                                "%d acknowledged commits missing" % lost if lost is not None
                                else "the partition is not served (OffsetFetch error %d)" % err,
                                n_err, kept, len(spans)))


def case_segment_deleted(ctx):
    sets = ["offsets.topic.num.partitions=1"]
    data = os.path.join(ctx.tmp, "data")
    k = ctx.start(sets)
    c = ctx.conn(k)
    first, _ = commit_one_by_one(c, "del", range(50), 1000, ctx.left())
    for seg in segments(data):
        os.unlink(seg)
    t_del = time.monotonic()
    after, errors = commit_one_by_one(c, "del", range(50, 100), 1000, ctx.left())
    n_err = k.count_lines(" ERROR ", t_del, time.monotonic())
    ctx.end_probe()
    k.stop()
    k2, err, lost = restart_and_fetch(ctx, data, "del", after, sets)
    k2.stop()
    ctx.result["lost"] = lost
    if lost:
        ctx.result["harm"] = "%d of %d commits acknowledged after the deletion lost%s" % (
            lost, len(after), ", nothing logged" if n_err == 0 else "")
    ctx.result["action"] = ("active segment deleted after 50 commits; then %d of 50 commits "
                            "acknowledged (errors %s), %d ERROR lines; at restart %s" % (
                                len(after), errors or "none", n_err,
                                "%d of those %d missing" % (lost, len(after)) if lost is not None
                                else "the partition is not served (OffsetFetch error %d)" % err))


def case_big_member(ctx):
    data = os.path.join(ctx.tmp, "data")
    k = ctx.start()
    c = ctx.conn(k, 30.0)
    meta = Writer().i16(0).i32(1).string(TOPIC).i32(16 << 20).bytes() + os.urandom(16 << 20)
    assignment = (Writer().i16(0).i32(1).string(TOPIC).i32(1).i32(0).i32(16 << 20).bytes() +
                  os.urandom(16 << 20))
    try:
        jerr, serr, _gen, _member = join_group(c, "big-member", metadata=meta,
                                               assignment=assignment, timeout=ctx.left())
        what = "JoinGroup error %d, SyncGroup error %s" % (jerr, serr)
    except (socket.timeout, EOFError, OSError) as e:
        what = "failed: %s" % (str(e) or type(e).__name__)
    time.sleep(0.5)
    ctx.end_probe()
    k.stop()
    size = sum(os.path.getsize(p) for d in os.listdir(data) if d.startswith("__consumer")
               for p in segments(data, int(d.rsplit("-", 1)[1])))
    k2 = ctx.start(data=data, probe=False)
    load = k2.t_loaded - k2.t_start
    k2.stop()
    if "error 0, SyncGroup error 0" in what:
        ctx.result["harm"] = "accepted"
    ctx.result["action"] = ("16 MB metadata + 16 MB assignment: %s; log %.0f MB; restart "
                            "loaded in %.2f s" % (what, size / 1e6, load))


def case_disk_full(ctx):
    mnt = os.path.join(ctx.tmp, "mnt")
    ctx.mount_tmpfs(mnt, "size=16m")
    data = os.path.join(mnt, "data")
    k = ctx.start(["offsets.topic.num.partitions=4"], data=data)
    filler = os.path.join(mnt, "filler")
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    c = ctx.conn(k, 10.0)
    t0 = time.monotonic()
    sent = acked = 0
    errors = {}
    window = 8
    inflight = 0
    while time.monotonic() - t0 < 5.0 and time.monotonic() < ctx.deadline:
        while inflight < window:
            c.send(OFFSET_COMMIT, 7, commit_body("full%d" % (sent % 16), {sent % 100: sent},
                                                "x" * 512))
            sent += 1
            inflight += 1
        try:
            _, r = c.recv(min(ctx.left(), 5.0))
        except (socket.timeout, EOFError, OSError):
            break
        inflight -= 1
        for e in commit_errors(r).values():
            if e == 0:
                acked += 1
            else:
                errors[e] = errors.get(e, 0) + 1
    t1 = time.monotonic()
    n_err = k.count_lines(" ERROR ", t0, t1)
    os.unlink(filler)
    # Does it come back once there is room again?
    back = "no"
    end = min(ctx.deadline, time.monotonic() + 5.0)
    c2 = ctx.conn(k, 5.0)
    while time.monotonic() < end:
        try:
            e = commit_errors(c2.call(OFFSET_COMMIT, 7, commit_body("back", {0: 1}), 5.0))
        except (socket.timeout, EOFError, OSError):
            break
        if e.get(0) == 0:
            back = "yes, after %.1f s" % (time.monotonic() - (end - 5.0))
            break
        time.sleep(0.2)
    ctx.result["error_lines"] = n_err
    if n_err > 50:
        ctx.result["harm"] = "%d ERROR lines in 5 s" % n_err
    ctx.result["action"] = ("tmpfs full, 5 s of commits: %d sent, %d acknowledged, errors %s; "
                            "%d ERROR lines in %.1f s; commits accepted again after room was "
                            "made: %s" % (sent, acked, errors or "none", n_err, t1 - t0, back))


def case_readonly_start(ctx):
    mnt = os.path.join(ctx.tmp, "mnt")
    ctx.mount_tmpfs(mnt, "size=16m")
    # A data directory kcoord wrote before (a commit in it), then read-only.
    k0 = ctx.start(data=os.path.join(mnt, "data"), probe=False)
    c0 = ctx.conn(k0, 5.0)
    commit_errors(c0.call(OFFSET_COMMIT, 7, commit_body("ro", {0: 1}), 5.0))
    c0.close()
    k0.stop()
    subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
    try:
        k = ctx.start(data=os.path.join(mnt, "data"), wait_loaded=False, probe=False)
    except CaseError as e:
        ctx.result["action"] = "start-up stopped: %s" % e
        ctx.result["refused_start"] = True
        return
    time.sleep(1.0)
    if not k.alive():
        ctx.result["action"] = "kcoord stopped (%s): %s" % (
            exit_text(k.proc.returncode), k.log_text().strip().split("\n")[-1][:160])
        return
    health = http_status(k.http_port, "/healthz")
    subprocess.run(["mount", "-o", "remount,rw", mnt], check=True)
    back = "no"
    c = ctx.conn(k, 5.0)
    end = time.monotonic() + 8.0
    while time.monotonic() < end:
        e = commit_errors(c.call(OFFSET_COMMIT, 7, commit_body("ro", {0: 2}), 5.0))
        if e.get(0) == 0:
            back = "yes"
            break
        time.sleep(0.2)
    ctx.result["harm"] = "runs on a read-only data.dir, /healthz %s%s" % (
        health, "" if back == "yes" else ", no retry once writable")
    ctx.result["action"] = ("kcoord runs on a read-only data.dir, /healthz %s; made writable, "
                            "commits accepted within 8 s: %s" % (health, back))


def http_status(port, path):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path)
                      .encode())
            line = s.recv(256).split(b"\r\n", 1)[0].decode(errors="replace")
            return line.split(" ", 2)[1] if line.count(" ") else line
    except OSError as e:
        return str(e)


def case_segment_bytes(ctx):
    k = ctx.start(["offsets.topic.segment.bytes=1073741824"], wait_loaded=False)
    try:
        k.wait_log(r"all \d+ partitions loaded", 10)
    except CaseError:
        pass
    c = ctx.conn(k, 5.0)
    err = None
    end = time.monotonic() + 5.0
    while time.monotonic() < end:
        err = commit_errors(c.call(OFFSET_COMMIT, 7, commit_body("seg", {0: 1}), 5.0)).get(0)
        if err == 0:
            break
        time.sleep(0.2)
    if err != 0:
        ctx.result["harm"] = "serves nothing"
    ctx.result["action"] = "a commit after start: error %s%s" % (
        err, " (serves)" if err == 0 else " (serves nothing)")


def faketime_lib():
    return next((p for p in FAKETIME_LIBS if os.path.exists(p)), None)


def clock_case(step):
    def run(ctx):
        lib = faketime_lib()
        if lib is None:
            raise NotMeasured("libfaketime is not installed (Debian package faketime)")
        stamp = os.path.join(ctx.tmp, "faketime")
        with open(stamp, "w") as f:
            f.write("+0\n")
        env = {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": stamp, "FAKETIME_NO_CACHE": "1",
               "DONT_FAKE_MONOTONIC": "1"}
        # One __consumer_offsets partition: every group shares its timer, as thousands of
        # groups do on 50 partitions.
        k = ctx.start(["group.min.session.timeout.ms=1000", "offsets.topic.num.partitions=1"],
                      env=env)
        # A member of another group that stops heartbeating at the step, and one that
        # heartbeats every 3 s (the Java consumer's default interval) with a 10 s session.
        c = ctx.conn(k)
        join_group(c, "quiet", session_ms=2000)
        live = ctx.conn(k)
        _, _, gen, member = join_group(live, "live")
        with open(stamp + ".tmp", "w") as f:
            f.write("%s\n" % step)
        os.replace(stamp + ".tmp", stamp)
        errs = []
        for _ in range(3):
            time.sleep(3.0)
            r = live.call(HEARTBEAT, 3, heartbeat_body("live", gen, member), 5.0)
            r.i32()
            errs.append(r.i16())
        state, members = describe_group(c, "quiet")
        ctx.end_probe()
        expelled = [e for e in errs if e in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)]
        harm = (["live member expelled"] if expelled else []) + (
            ["silent member kept"] if members else [])
        if harm:
            ctx.result["harm"] = " and ".join(harm)
        ctx.result["action"] = ("wall clock stepped %s: a live member heartbeating every 3 s "
                                "(session 10 s) %s; a member silent for 9 s (session 2 s): %s"
                                % (step, "was expelled (heartbeat errors %s)" % errs
                                   if expelled else "kept its membership (errors %s)" % errs,
                                   "still a member (group %s)" % state
                                   if members else "expelled (group %s)" % state))
    return run


def describe_group(c, group):
    """DescribeGroups v0: (state, number of members)."""
    body = gen_wire.encode_describe_groups_request(0, groups=[group])
    g = gen_wire.decode_describe_groups_response(0, c.call(DESCRIBE_GROUPS, 0, body)).groups[0]
    return g.group_state, len(g.members)


def alternation(size):
    out, i = [], 0
    n = 0
    while n < size:
        w = "t%05d" % i
        out.append(w)
        n += len(w) + 1
        i += 1
    return "|".join(out)


# (id, what the case does (the table's first column), function, cap override or None)
CASES = [
    ("regex-nested", "ConsumerGroupHeartbeat, `SubscribedTopicRegex` = 20 000 nested "
     "parentheses (40 KB)", regex_case("(" * 20000 + ")" * 20000)),
    ("regex-backref", "ConsumerGroupHeartbeat, back-reference regex "
     "`(.*)(.*)(.*)(.*)(.*)(.*)(.*)\\2\\3\\4\\5\\6\\7\\8` (42 bytes), one 18-character topic",
     regex_case(r"(.*)(.*)(.*)(.*)(.*)(.*)(.*)\2\3\4\5\6\7\8", "%s:1" % TOPIC)),
    ("regex-repeat", "ConsumerGroupHeartbeat, `a{0,3000}` (9 bytes)", regex_case("a{0,3000}")),
    ("regex-alternation", "ConsumerGroupHeartbeat, a 100 KB alternation `t00000|t00001|...`",
     regex_case(alternation(100 * 1024))),
    ("regex-franz-go", "ConsumerGroupHeartbeat, franz-go's `.*(?:(?:hostile-topic-0001)).*` "
     "(not hostile: must be accepted)", regex_case(".*(?:(?:%s)).*" % TOPIC, must_accept=True)),
    ("pending-30k", "30 000 JoinGroups with an empty member id (KIP-394 pending members, "
     "session 1 s) that never come back", case_pending_joins(30000)),
    ("pending-100k", "100 000 such JoinGroups", case_pending_joins(100000)),
    ("metadata-unread", "200 Metadata requests for a 100 000-partition topic, never read",
     case_metadata_unread),
    ("describe-3m", "one DescribeGroups v5 with 3 million empty group ids (2.9 MB)",
     case_describe_3m),
    ("request-60mb", "one 60 MB request, then the connection stays idle", case_big_request_idle),
    ("http-groups", "100 x `GET /v1/groups` with 30 000 groups, never read", case_http_groups),
    ("fd-limit", "idle connections up to the fd limit (256, RLIMIT_NOFILE at start), then 40 "
     "commits with 1 KB segments", case_fd_limit),
    ("clock-forward", "the wall clock stepped +1 h (libfaketime; one offsets partition)",
     clock_case("+1h")),
    ("clock-back", "the wall clock stepped -1 h (libfaketime; one offsets partition)",
     clock_case("-1h")),
    ("readonly-datadir", "`data.dir` read-only at start (a tmpfs remounted ro), then writable",
     case_readonly_start),
    ("flipped-byte", "one flipped byte in the newest segment after a clean shutdown (100 "
     "acknowledged commits, one per batch)", case_flipped_byte),
    ("segment-deleted", "the active segment deleted under a running kcoord, then 50 commits",
     case_segment_deleted),
    ("member-16mb", "a member with 16 MB of protocol metadata and a 16 MB assignment",
     case_big_member),
    ("disk-full", "the disk full under a commit load (a 16 MB tmpfs), 5 s", case_disk_full),
    ("segment-bytes-1g", "`offsets.topic.segment.bytes=1073741824` (inside the documented range)",
     case_segment_bytes),
]


def run_case(binary, case, cap, say):
    cid, title, fn = case
    ctx = Ctx(binary, cap)
    res = {"id": cid}
    box = {}

    def body():
        try:
            fn(ctx)
        except BaseException as e:  # noqa: BLE001 - reported below
            box["error"] = e

    t0 = time.monotonic()
    t = threading.Thread(target=body, daemon=True)
    try:
        t.start()
        t.join(cap + 15)
        if t.is_alive():
            box["overran"] = True
            for k in ctx.daemons:
                k.kill()
            t.join(10)
        err = box.get("error")
        k = ctx.daemons[0] if ctx.daemons else None
        if isinstance(err, NotMeasured):
            res["not_measured"] = str(err)
        elif isinstance(err, StartRefused) and not ctx.daemons:
            res["refused_start"] = True
            ctx.result.setdefault("action", str(err))
        elif isinstance(err, CaseError) and k is not None and not k.alive():
            pass  # kcoord died under the case: reported below
        elif err is not None and not isinstance(err, (socket.timeout, EOFError, OSError)):
            res["driver_error"] = "%s: %s" % (type(err).__name__, err)
        elif err is not None:
            res["client_error"] = "%s: %s" % (type(err).__name__, str(err) or "")
        ctx.end_probe()
        if k is not None and "not_measured" not in res:
            # The process the outcome is about: the first that ended without being stopped by
            # the case, else the last one started.
            died = [d for d in ctx.daemons if d.proc.poll() is not None and d.stop_text is None]
            first = ctx.daemons[0]
            main = died[0] if died else ctx.daemons[-1]
            if main.stop_text is not None:
                res["alive"] = res["answering"] = True
                res["exit"] = main.stop_text
            else:
                res["alive"] = main.alive()
                res["answering"] = main.answers() if main.alive() else False
                res["exit"] = main.stop() if main.alive() else exit_text(main.proc.returncode)
            res["rss_killed"] = any(d.rss_killed for d in ctx.daemons)
            res["peak_rss_mb"] = round(max(first.peak, main.peak) / 2**20, 1)
            res["base_rss_mb"] = round(first.base_rss / 2**20, 1)
            res["overran"] = box.get("overran", False)
        res.update(ctx.result)
    finally:
        ctx.close()
    res["seconds"] = round(time.monotonic() - t0, 1)
    say("%-18s %s" % (cid, summary(res)))
    return res


# ---- the report ------------------------------------------------------------------------------

def fmt_ms(ms):
    if ms is None:
        return "-"
    if ms >= 1000:
        return "%.1f s" % (ms / 1000)
    if ms >= 10:
        return "%.0f ms" % ms
    return "%.1f ms" % ms


def wait_text(r):
    if r is None:
        return "not run"
    if "not_measured" in r:
        return "not measured"
    if r.get("probe_error"):
        m = re.search(r"JoinGroup (-?\d+)", r["probe_error"])
        return "- (the probe could not join%s)" % (": error " + m.group(1) if m else "")
    if r.get("probe_max_ms") is None:
        return "-"
    t = fmt_ms(r["probe_max_ms"])
    if r.get("probe_ended"):
        t = "%s, then its connection was lost" % fmt_ms(r.get("probe_answered_max_ms"))
    elif r.get("probe_unanswered"):
        t = ">" + t + " (no answer)"
    if r.get("probe_expelled"):
        t += ", probe expelled"
    return t


def rss_text(r):
    if r is None:
        return "not run"
    if "not_measured" in r:
        return "not measured"
    if r.get("rss_killed"):
        return ">8 GB (killed)"
    if r.get("peak_rss_mb") is None:
        return "-"
    t = "%.0f MB" % r["peak_rss_mb"]
    if r.get("rss_after_mb") is not None:
        t += ", %.0f MB after" % r["rss_after_mb"]
    return t


def outcome_text(r, full=True):
    """What happened; `full` adds what the hostile client saw (the table keeps it short)."""
    if r is None:
        return "not run"
    if "not_measured" in r:
        return "not measured: " + r["not_measured"]
    if "driver_error" in r:
        return "driver failed: " + r["driver_error"]
    exit_ = r.get("exit", "")
    if r.get("refused_start"):
        head = "start-up refused"
    elif r.get("rss_killed"):
        head = "killed at the 8 GB RSS cap"
    elif exit_.startswith("killed by") and exit_ != "killed by SIGKILL":
        head = "**crashed (%s)**" % exit_[len("killed by "):]
    elif not r.get("alive", True):
        head = "**exited (%s)**" % exit_
    elif not r.get("answering", True):
        head = "**hung** (no answer to a new connection in 5 s; %s)" % exit_
    elif exit_.startswith("SIGTERM not"):
        head = "answering, but **%s**" % exit_
    else:
        head = "survived"
    harms = [r["harm"]] if r.get("harm") else []
    if (r.get("probe_max_ms") or 0) >= 1000 and not r.get("probe_ended"):
        harms.insert(0, "another client waited %s%s" % (
            ">" if r.get("probe_unanswered") else "", fmt_ms(r["probe_max_ms"])))
    for h in harms:
        head += (" and **%s**" if ", but" in head else ", but **%s**") % h
    parts = [head]
    if r.get("overran"):
        parts.append("the case overran its cap")
    if full and r.get("action"):
        parts.append(r["action"])
    if r.get("client_error"):
        parts.append("client: " + r["client_error"])
    return "; ".join(parts)


def summary(r):
    return "wait %s | rss %s | %s" % (wait_text(r), rss_text(r), outcome_text(r))


def load(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def md_cell(s):
    return s.replace("|", "\\|").replace("\n", " ")


def section(before, after, cap):
    out = []
    w = out.append
    w(BEGIN_HEADING)
    w("")
    w("Generated by `tests/bench/hostile.py` (`make bench-hostile`); do not edit by hand, run it "
      "again. Each case starts a fresh kcoord (free ports, its own data directory under /tmp, "
      "`group.initial.rebalance.delay.ms=0`, `topics=%s:%d`, plus the case's settings) and "
      "a probe: a healthy member of another classic group heartbeating every 10 ms on its own "
      "connection (session timeout 10 s). *Longest wait* is the longest time the probe waited "
      "for one answer (from sending it to its answer, or to the end of the case when none "
      "came); *peak RSS* is kcoord's largest VmHWM (/proc/PID/status, sampled every 20 ms; the "
      "process is killed at 8 GB). Every case is capped at %.0f s. *Outcome*: survived (a new "
      "connection is answered at the end and SIGTERM stops it), crashed (the signal) or hung, "
      "and in bold what went wrong. Single runs on a 2-core machine shared with other work: "
      "the waits are orders of magnitude, not precise timings." % (TOPIC, TOPIC_PARTITIONS, cap))
    w("")
    for label, res in (("Before", before), ("After", after)):
        if res:
            w("- %s: `%s` built from the daemon source of commit %s (the last to change src/ or "
              "proto/; HEAD was %s), %s UTC on %s; command %s." % (
                label, res["binary"], res.get("src_rev", "?"), res["rev"], res["started"],
                res["machine"],
                ", then ".join("`%s`" % c for c in res.get("commands", [res["command"]]))))
        else:
            w("- %s: not measured yet (`make bench-hostile` on the fixed build fills it)." % label)
    w("")
    w("| case | longest wait, before | after | peak RSS, before | after | outcome, before | "
      "after |")
    w("|---|---|---|---|---|---|---|")
    bres = {r["id"]: r for r in (before or {}).get("cases", [])}
    ares = {r["id"]: r for r in (after or {}).get("cases", [])}
    for cid, title, _ in CASES:
        b, a = bres.get(cid), ares.get(cid)
        w("| %s (`%s`) | %s | %s | %s | %s | %s | %s |" % ((md_cell(title), cid) + tuple(
            md_cell(x) for x in (wait_text(b), wait_text(a), rss_text(b), rss_text(a),
                                 outcome_text(b, False), outcome_text(a, False)))))
    w("")
    w("### What each case did and saw")
    w("")
    w("One case alone: `tests/bench/hostile.py --only ID build/kcoord` (`--list` names them; "
      "`--json FILE` keeps the figures). Start-up RSS is %s MB before." % (
          "/".join(sorted({"%.0f" % r["base_rss_mb"] for r in bres.values()
                           if "base_rss_mb" in r})) or "-"))
    w("")
    for cid, title, _ in CASES:
        b, a = bres.get(cid), ares.get(cid)
        w("- `%s`: %s." % (cid, title))
        for label, r in (("before", b), ("after", a)):
            if r is not None:
                w("  %s: %s (%.0f s)." % (label.capitalize(), outcome_text(r), r.get("seconds", 0)))
    w("")
    w(END_MARKER)
    return out


def splice(path, lines):
    """Replace the page's hostile-load section (its heading to END_MARKER) with `lines`, or
    add it at the end; the rest of the page stays as it is."""
    try:
        with open(path) as f:
            page = f.read().split("\n")
    except FileNotFoundError:
        page = ["# kcoord benchmarks", ""]
    start = next((i for i, l in enumerate(page) if l == BEGIN_HEADING), None)
    if start is not None:
        end = next((i for i in range(start, len(page)) if page[i] == END_MARKER), None)
        if end is None:
            end = next((i for i in range(start + 1, len(page)) if page[i].startswith("## ")),
                       len(page) - 1)
        page[start:end + 1] = lines
    else:
        while page and page[-1] == "":
            page.pop()
        page += [""] + lines + [""]
    if not any(l.startswith(TOP_LINE[:30]) for l in page):
        # The page's list at the top (before its first "## " heading): add the line after it.
        first = next((i for i, l in enumerate(page) if l.startswith("## ")), len(page))
        last = max((i for i in range(first) if page[i].startswith("- ")), default=None)
        if last is not None:
            page.insert(last + 1, TOP_LINE)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(page))
    os.replace(path + ".tmp", path)


def git_rev(*args):
    """The short hash of HEAD, or with args (`--`, paths) of the last commit changing them."""
    cmd = ["git", "-C", ROOT, "log", "-1", "--format=%h", "HEAD"] + list(args)
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             check=True).stdout.strip()
        return out or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")),
                       cpu)
    except OSError:
        pass
    return "%s, %d cores, Linux %s" % (cpu, os.cpu_count() or 0, platform.release())


def main(argv):
    ap = argparse.ArgumentParser(prog="tests/bench/hostile.py",
                                 description="kcoord under hostile load")
    ap.add_argument("binary", nargs="?", help="the kcoord binary")
    ap.add_argument("--only", help="comma-separated case ids")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    ap.add_argument("--label", choices=("before", "after"), default="after")
    ap.add_argument("--json", help="write this run's results here")
    ap.add_argument("--before", help="the results for the Before column")
    ap.add_argument("--after", help="the results for the After column")
    ap.add_argument("--markdown", help="rewrite the hostile-load section of this page")
    ap.add_argument("--render", action="store_true",
                    help="run nothing: only write the section from --before/--after")
    ap.add_argument("--cap", type=float, default=CAP_S, help="each case's cap in seconds")
    args = ap.parse_args(argv[1:])
    if args.list:
        for cid, title, _ in CASES:
            print("%-18s %s" % (cid, title))
        return 0
    if args.render:
        if not args.markdown:
            ap.error("--render needs --markdown")
        before, after = load(args.before), load(args.after)
        cap = (before or after or {}).get("cap_s", args.cap)
        splice(args.markdown, section(before, after, cap))
        return 0
    if not args.binary or not os.access(args.binary, os.X_OK):
        ap.error("give the kcoord binary to run")
    cases = CASES
    if args.only:
        want = args.only.split(",")
        unknown = [x for x in want if x not in {c[0] for c in CASES}]
        if unknown:
            ap.error("unknown case(s): %s (see --list)" % ", ".join(unknown))
        cases = [c for c in CASES if c[0] in want]
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    started = datetime.datetime.now(datetime.timezone.utc)
    results = []
    status = 0
    try:
        for case in cases:
            r = run_case(os.path.abspath(args.binary), case, args.cap,
                         lambda m: print(m, flush=True))
            results.append(r)
            if "driver_error" in r:
                status = 1
    except KeyboardInterrupt:
        print("hostile: interrupted", file=sys.stderr)
        return 1
    run = {"label": args.label, "rev": git_rev(), "src_rev": git_rev("--", "src", "proto"),
           "binary": os.path.relpath(
        os.path.abspath(args.binary), ROOT), "started": started.strftime("%Y-%m-%d %H:%M"),
        "machine": machine(), "cap_s": args.cap,
        "command": " ".join(["tests/bench/hostile.py"] + [shlex.quote(a) for a in argv[1:]]),
        "cases": results}
    if args.json:
        old = load(args.json) if args.only else None
        if old:  # --only: keep the other cases of an earlier run
            keep = [r for r in old["cases"] if r["id"] not in {x["id"] for x in results}]
            if keep:
                run["commands"] = old.get("commands", [old["command"]]) + [run["command"]]
                run["started"] = old["started"]
            order = [c[0] for c in CASES]
            run["cases"] = sorted(keep + results, key=lambda r: order.index(r["id"])
                                  if r["id"] in order else len(order))
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json + ".tmp", "w") as f:
            json.dump(run, f, indent=1)
            f.write("\n")
        os.replace(args.json + ".tmp", args.json)
    if args.markdown:
        before = run if args.label == "before" else load(args.before)
        after = run if args.label == "after" else load(args.after)
        splice(args.markdown, section(before, after, args.cap))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
