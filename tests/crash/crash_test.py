#!/usr/bin/env python3
"""crash-test: kill -9 kcoord under a commit storm, again and again; no acknowledged commit may
be lost and no offset may be invented, not even when the kill is a power loss.

    tests/crash/crash_test.py [--quick] [--seed N] [--kill-only] [--policy P] [ROUNDS]

ROUNDS (default 20; --quick: 3, for `make test`) rounds against one data directory, which lives
for the whole run. kcoord is build/kcoord, or $KC_TEST_BIN, started with
log.flush.policy=always on a fixed port (a free one, found at the start), a topic `crash`,
three __consumer_offsets partitions (so the clients' groups share logs and fsyncs) and 64 KiB
segments (so segments roll under the storm). The codec alternates between zstd and none from
round to round: a log holds batches of both.

A round:
  1. CLIENTS (4) threads, each with its own connection, commit increasing offsets for their own
     (group, partition) as fast as they can: OffsetCommit v8 with generation -1 and an empty
     member id (simple commits into an Empty group), WINDOW (8) requests in flight, metadata
     "o<offset>". Each records the last offset it sent and the last one acknowledged (error 0).
  2. After a random 0.2-1.5 s, SIGKILL.
  3. A power loss: a kill -9 loses nothing that write(2) had handed to the kernel, so it cannot
     tell an acknowledgement after fsync from one before it. kcoord runs with an LD_PRELOAD shim
     (tests/integration/fsync_journal.c, compiled with cc into the temporary directory) that
     journals, at every successful fsync, the size of the file fsynced; after the kill each
     segment and index is cut back to the last size journaled for it in this run (or to its
     size when the run started), dropping every byte that only the page cache held. With
     log.flush.policy=always no acknowledged commit may be among them. --kill-only skips this.
  4. `kcoord verify-log DATA_DIR` must exit 0 on the directory the crash left.
  5. Start kcoord again on it; once it logs "all N partitions loaded", OffsetFetch v7 of every
     client's partition must return an offset >= the last acknowledged one (no lost ack),
     <= the last sent one (nothing invented) and not below what the previous round recovered,
     with the metadata written for that very offset. That daemon serves the next round.
A last round stops kcoord with SIGTERM instead, under the storm: exit status 0, and the power
loss may drop no segment byte (a clean stop fsyncs everything, whatever the policy); the same
checks follow. Then an idle SIGTERM (exit 0) and a restart must return exactly the same offsets.

Also a violation: a commit answered with an error, an ERROR line in a restarted daemon's log,
an exit status other than -9 (kill) or 0 (SIGTERM).

--policy interval or never runs the same rounds with another flush policy: under the power loss
they are expected to lose acknowledged commits (that is what the policies trade), which shows
that the emulation has teeth.

Prints a line per round and the summary line
    crash-test: R rounds, A acknowledged commits checked, B unsynced bytes dropped, V violations
Exits 0 when every check held, 1 on any violation, 2 on a usage or setup error. kcoord and the
temporary directory are removed on every exit but a SIGKILL of this script (kcoord dies with it
then; set CRASH_TEST_KEEP=1 to keep the directory); on a failure the daemon's log tail and the
verify-log output are printed.
"""
import argparse
import ctypes
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import gen_wire, kcoord, wire  # noqa: E402

CLIENTS = 4
WINDOW = 8
TOPIC = "crash"
PARTITIONS = 8
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 15
IO_TIMEOUT_S = 10
TOOL_TIMEOUT_S = 60

OFFSET_COMMIT, OFFSET_FETCH = 8, 9
ERR_NAMES = {0: "NONE", 14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
             16: "NOT_COORDINATOR", 3: "UNKNOWN_TOPIC_OR_PARTITION"}


class Failure(Exception):
    """A violated check: the run goes on to clean up and exits 1."""


class SetupError(Exception):
    """Something around the test failed (could not start kcoord, ...): exits 2."""


# ---- Kafka wire format (tests/support: gen_wire.py, generated from proto/) ------------------

def offset_commit_v8(corr, group, partition, offset):
    body = gen_wire.encode_offset_commit_request(
        8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[dict(name=TOPIC, partitions=[dict(partition_index=partition,
                                                  committed_offset=offset,
                                                  committed_metadata="o%d" % offset)])])
    return wire.frame(OFFSET_COMMIT, 8, corr, "crash-test", body, flexible=True)


def answer(data, decode, version):
    """(correlation id, decoded body) of a flexible response frame that must end there."""
    corr, r = wire.response(data, flexible=True)
    m = decode(version, r)
    if not r.at_end():
        raise ValueError("%d bytes after the response" % (len(r.buf) - r.pos))
    return corr, m


def only_partition(m, partition, api):
    """The one partition of TOPIC an answer carries, or ValueError."""
    if (len(m.topics) != 1 or m.topics[0].name != TOPIC or len(m.topics[0].partitions) != 1
            or m.topics[0].partitions[0].partition_index != partition):
        raise ValueError("%s answer for something else" % api)
    return m.topics[0].partitions[0]


def parse_offset_commit_v8(data, partition):
    """(correlation id, error code of the one partition)."""
    corr, m = answer(data, gen_wire.decode_offset_commit_response, 8)
    return corr, only_partition(m, partition, "OffsetCommit").error_code


def offset_fetch_v7(corr, group, partition):
    body = gen_wire.encode_offset_fetch_request(
        7, group_id=group, topics=[dict(name=TOPIC, partition_indexes=[partition])],
        require_stable=False)
    return wire.frame(OFFSET_FETCH, 7, corr, "crash-test", body, flexible=True)


def parse_offset_fetch_v7(data, partition):
    """(correlation id, offset, metadata, partition error, group error)."""
    corr, m = answer(data, gen_wire.decode_offset_fetch_response, 7)
    p = only_partition(m, partition, "OffsetFetch")
    return corr, p.committed_offset, p.metadata, p.error_code, m.error_code


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by kcoord")
        buf += chunk
    return bytes(buf)


def recv_frame(sock):
    (n,) = struct.unpack(">i", recv_exact(sock, 4))
    if n < 0 or n > 1 << 20:
        raise ValueError("response size %d" % n)
    return recv_exact(sock, n)


# ---- The daemon ----------------------------------------------------------------------------

def die_with_parent():
    """In the child before exec: SIGKILL when this script dies, whatever kills it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def build_shim(tmp):
    """Compile the fsync journal shim; returns the path of the shared object."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                       "fsync_journal.c")
    so = os.path.join(tmp, "fsync_journal.so")
    cc = os.environ.get("CC") or "cc"
    out = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra",
                          "-Werror", "-o", so, src, "-ldl"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if out.returncode != 0:
        raise SetupError("cannot build the fsync journal shim:\n" + out.stdout.decode())
    return so


def segment_sizes(data):
    """{real path: size} of every segment (.log) and index (.index) in the data directory."""
    sizes = {}
    for d in sorted(os.listdir(data)) if os.path.isdir(data) else []:
        if not d.startswith("__consumer_offsets-"):
            continue
        pd = os.path.join(data, d)
        for name in os.listdir(pd):
            if name.endswith(".log") or name.endswith(".index"):
                path = os.path.realpath(os.path.join(pd, name))
                sizes[path] = os.path.getsize(path)
    return sizes


def power_loss(data, before, journal):
    """Cut every segment and index back to what was fsynced in the run: the last size journaled
    for it, or its size when the run started (0 for a file the run created). Returns (files cut,
    bytes dropped from segments, bytes dropped from indexes)."""
    synced = {}
    try:
        with open(journal, "rb") as f:
            for line in f.read().decode(errors="replace").splitlines():
                size, _ino, path = line.split(" ", 2)  # see fsync_journal.c
                synced[os.path.realpath(path)] = int(size)
    except FileNotFoundError:
        pass
    cut = dropped_log = dropped_index = 0
    for path, size in segment_sizes(data).items():
        keep = synced.get(path, before.get(path, 0))
        if size > keep:
            os.truncate(path, keep)
            cut += 1
            if path.endswith(".log"):
                dropped_log += size - keep
            else:
                dropped_index += size - keep
    return cut, dropped_log, dropped_index


class Kcoord:
    def __init__(self, binary, tmp, port, policy, shim):
        self.binary = binary
        self.tmp = tmp
        self.data = os.path.join(tmp, "data")
        self.port = port
        self.policy = policy
        self.shim = shim
        self.proc = None
        self.runs = 0
        self.log_path = None
        self.journal = None
        self.sizes_at_start = {}
        self.run = None  # the tests.support Kcoord of the current run

    def start(self, codec):
        self.runs += 1
        self.log_path = os.path.join(self.tmp, "kcoord-%d.log" % self.runs)
        sets = ["listeners=127.0.0.1:%d" % self.port,
                "log.flush.policy=" + self.policy, "topics=%s:%d" % (TOPIC, PARTITIONS),
                "offsets.topic.num.partitions=3", "offsets.topic.segment.bytes=65536",
                "offsets.topic.compression.codec=" + codec, "log.level=info"]
        env = {}
        self.sizes_at_start = segment_sizes(self.data)
        self.journal = None
        if self.shim:
            self.journal = os.path.join(self.tmp, "fsync-journal-%d" % self.runs)
            env["KC_FSYNC_JOURNAL"] = self.journal
            env["LD_PRELOAD"] = " ".join(filter(None, [self.shim, os.environ.get("LD_PRELOAD")]))
            # An ASan build (gcc links libasan dynamically) wants its runtime first.
            env["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                                         "verify_asan_link_order=0"]))
        try:
            self.run = kcoord.Kcoord(self.data, *sets, binary=self.binary, env=env,
                                     preexec_fn=die_with_parent, log_path=self.log_path,
                                     timeout=START_TIMEOUT_S)
        except AssertionError as e:  # it exited, or logged no "partitions loaded" in time
            raise SetupError("kcoord did not start: %s" % str(e).split("; its output:")[0]
                             + "\n" + self.tail()) from None
        self.proc = self.run.proc
        if self.run.port != self.port:
            raise SetupError("kcoord listens on %d, not %d" % (self.run.port, self.port))

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except (OSError, TypeError):
            return ""

    def tail(self, n=60):
        lines = self.log().splitlines()
        return "\n".join("    " + l for l in lines[-n:])

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.run.stop()  # reaped already: its last lines reach the log file
        return self.proc.returncode

    def lose_power(self):
        """After the process ended: drop what the run did not fsync. Returns (files cut,
        segment bytes dropped, index bytes dropped)."""
        if not self.journal:
            return 0, 0, 0
        return power_loss(self.data, self.sizes_at_start, self.journal)

    def stop(self):
        """SIGTERM; returns the exit status (-1 when it had to be killed)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = -1
        self.run.stop()  # reaped already: its last lines reach the log file
        return rc

    def cleanup(self):
        if self.run is not None:
            self.run.kill()

    def verify_log(self):
        """(exit status, output) of `kcoord verify-log DATA`."""
        try:
            out = subprocess.run([self.binary, "verify-log", self.data], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return -1, "verify-log still running after %d s" % TOOL_TIMEOUT_S
        return out.returncode, out.stdout.decode(errors="replace")


# ---- Clients -------------------------------------------------------------------------------

class Client:
    """One (group, partition) and what has happened to its commits so far."""

    def __init__(self, i):
        self.group = "crash-g%d" % i
        self.partition = i
        self.next = 1          # the next offset to commit; offsets only grow
        self.sent = -1         # the last offset written to a socket (in any round)
        self.acked = -1        # the last offset acknowledged with error 0 (in any round)
        self.recovered = -1    # what the last restart returned
        self.round_acks = 0
        self.errors = {}       # error code -> count, this round
        self.failure = None    # an unexpected exception of the thread
        self.last_fetch = -1   # what the last OffsetFetch returned

    def run(self, port, stop):
        """Commit as fast as the window allows until kcoord goes away or `stop` is set."""
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        except OSError as e:
            self.failure = "connect: %s" % e
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inflight = {}  # correlation id -> offset, in send order
        corr = 0
        try:
            while True:
                if not stop.is_set():
                    burst = []
                    while len(inflight) + len(burst) < WINDOW:
                        corr += 1
                        inflight[corr] = self.next
                        burst.append(offset_commit_v8(corr, self.group, self.partition, self.next))
                        self.sent = self.next  # conservative: counted before the bytes leave
                        self.next += 1
                    if burst:
                        sock.sendall(b"".join(burst))
                elif not inflight:
                    break
                got_corr, err = parse_offset_commit_v8(recv_frame(sock), self.partition)
                want_corr = next(iter(inflight))
                if got_corr != want_corr:
                    raise ValueError("answer %d, expected %d: out of order" % (got_corr, want_corr))
                offset = inflight.pop(got_corr)
                if err == 0:
                    self.acked = offset
                    self.round_acks += 1
                else:
                    self.errors[err] = self.errors.get(err, 0) + 1
        except (ConnectionError, socket.timeout, OSError) as e:
            if not stop.is_set() and isinstance(e, socket.timeout):
                self.failure = "no answer within %d s" % IO_TIMEOUT_S
        except ValueError as e:
            self.failure = str(e)
        finally:
            sock.close()


def fetch(port, clients):
    """OffsetFetch v7 of every client's partition: {group: (offset, metadata)}."""
    out = {}
    with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S) as sock:
        for corr, c in enumerate(clients, 1):
            sock.sendall(offset_fetch_v7(corr, c.group, c.partition))
            got_corr, offset, metadata, perr, gerr = parse_offset_fetch_v7(recv_frame(sock),
                                                                           c.partition)
            if got_corr != corr or perr != 0 or gerr != 0:
                raise Failure("OffsetFetch of %s: correlation id %d (want %d), errors %d/%d"
                              % (c.group, got_corr, corr, perr, gerr))
            out[c.group] = (offset, metadata)
    return out


def check_recovered(k, clients, what):
    """The restarted daemon's offsets against what the clients know. Returns violations."""
    got = fetch(k.port, clients)
    bad = []
    for c in clients:
        offset, metadata = got[c.group]
        floor = max(c.acked, c.recovered)
        if offset < floor:
            bad.append("%s: LOST ACK: offset %d came back, %d was acknowledged%s"
                       % (c.group, offset, c.acked,
                          " (and %d recovered before)" % c.recovered if c.recovered > c.acked
                          else ""))
        if offset > c.sent:
            bad.append("%s: INVENTED: offset %d came back, the last one sent was %d"
                       % (c.group, offset, c.sent))
        want_md = "o%d" % offset if offset >= 0 else ""
        if (metadata or "") != want_md:
            bad.append("%s: offset %d came back with metadata %r, it was committed with %r"
                       % (c.group, offset, metadata, want_md))
        c.recovered = max(c.recovered, offset)
        c.last_fetch = offset
    for b in bad:
        print("  VIOLATION %s: %s" % (what, b))
    return bad


# ---- Main ----------------------------------------------------------------------------------

class Run:
    """The state of one crash-test run: the daemon, the clients, what was found."""

    def __init__(self, k, clients, rng, power_loss_on):
        self.k = k
        self.clients = clients
        self.rng = rng
        self.power_loss_on = power_loss_on
        self.violations = []
        self.total_acks = 0
        self.total_dropped = 0

    def violation(self, text):
        print("  VIOLATION %s" % text)
        self.violations.append(text)

    def round(self, name, how, codec):
        """Storm, stop kcoord (`how`: "kill" for SIGKILL, "term" for SIGTERM), emulate the power
        loss, verify the log, restart with `codec` and check what came back. Returns the line to
        print."""
        k, clients = self.k, self.clients
        stop = threading.Event()
        for c in clients:
            c.round_acks = 0
            c.errors = {}
            c.failure = None
        threads = [threading.Thread(target=c.run, args=(k.port, stop), daemon=True)
                   for c in clients]
        for t in threads:
            t.start()
        delay = self.rng.uniform(0.2, 1.5)
        time.sleep(delay)
        if how == "kill":
            status, want = k.kill(), -signal.SIGKILL
        else:
            status, want = k.stop(), 0
        for t in threads:
            t.join(IO_TIMEOUT_S + 5)
        stop.set()
        if any(t.is_alive() for t in threads):
            raise SetupError("a client thread did not end after kcoord stopped")
        if status != want:
            self.violation("%s: kcoord exit status %s, want %d" % (name, status, want))
        for c in clients:
            if c.failure:
                self.violation("%s: %s: %s" % (name, c.group, c.failure))
        acks = sum(c.round_acks for c in clients)
        self.total_acks += acks
        errs = {}
        for c in clients:
            for e, n in c.errors.items():
                errs[e] = errs.get(e, 0) + n
        if errs:
            self.violation("%s: commits answered with errors %s"
                           % (name, ", ".join("%s x%d" % (ERR_NAMES.get(e, e), n)
                                              for e, n in sorted(errs.items()))))

        cut, dropped, dropped_index = k.lose_power()
        self.total_dropped += dropped
        if how == "term" and dropped > 0:
            self.violation("%s: after a clean stop %d segment bytes were not fsynced"
                           % (name, dropped))
        rc, out = k.verify_log()
        if rc != 0:
            self.violation("%s: kcoord verify-log exit status %d:\n%s"
                           % (name, rc, "\n".join("    " + l for l in out.splitlines()[-40:])))
        k.start(codec)
        log = k.log()
        torn = len(re.findall(r"torn write at the end of", log))
        for l in log.splitlines():
            if " ERROR " in l:
                self.violation("%s: the restarted daemon logged: %s" % (name, l))
        bad = check_recovered(k, clients, name)
        self.violations += bad
        detail = ", ".join("%s acked %d sent %d got %d" % (c.group, c.acked, c.sent, c.last_fetch)
                           for c in clients)
        return ("%s: %s after %.2f s, %d commits acknowledged; %s; verify-log %s; %d torn tails "
                "repaired; restarted (%s); recovered %s: %s"
                % (name, "killed" if how == "kill" else "SIGTERM", delay, acks,
                   "power loss dropped %d unsynced segment bytes (+%d index bytes) of %d files"
                   % (dropped, dropped_index, cut) if self.power_loss_on else "no power loss",
                   "ok" if rc == 0 else "FAILED (%d)" % rc, torn, codec,
                   "ok" if not bad else "with VIOLATIONS", detail))


def main():
    ap = argparse.ArgumentParser(description="kill -9 kcoord under a commit storm")
    ap.add_argument("rounds", nargs="?", type=int, default=20, help="rounds (default 20)")
    ap.add_argument("--quick", action="store_true", help="3 rounds (for make test)")
    ap.add_argument("--seed", type=int, default=None, help="for the kill delays (printed)")
    ap.add_argument("--kill-only", action="store_true",
                    help="a plain kill -9: keep what was written but not fsynced")
    ap.add_argument("--policy", choices=["always", "interval", "never"], default="always",
                    help="log.flush.policy (only always must lose nothing under a power loss)")
    args = ap.parse_args()
    rounds = 3 if args.quick else args.rounds
    if rounds < 1:
        ap.error("ROUNDS must be at least 1")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    binary = os.environ.get("KC_TEST_BIN") or "build/kcoord"
    if not os.access(binary, os.X_OK):
        print("crash-test: cannot execute %s (set KC_TEST_BIN or run in the repo root)" % binary,
              file=sys.stderr)
        return 2

    tmp = tempfile.mkdtemp(prefix="kcoord-crash-")
    k = Kcoord(binary, tmp, kcoord.free_port(), args.policy, None)
    clients = [Client(i) for i in range(CLIENTS)]
    run = Run(k, clients, random.Random(seed), not args.kill_only)
    done_rounds = 0
    setup_failed = False

    def on_signal(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    t_start = time.monotonic()
    print("crash-test: %d rounds, %d clients, window %d, seed %d, %s, policy %s, %s, port %d, "
          "dir %s" % (rounds, CLIENTS, WINDOW, seed, binary, args.policy,
                      "kill -9 only" if args.kill_only else "kill -9 + power loss", k.port, tmp))
    try:
        if not args.kill_only:
            k.shim = build_shim(tmp)
        k.start("zstd")
        for rnd in range(1, rounds + 1):
            line = run.round("round %d/%d" % (rnd, rounds), "kill", "none" if rnd % 2 else "zstd")
            done_rounds = rnd
            print(line)

        # A clean stop under the storm: exit 0 and everything written fsynced, whatever the
        # policy; then an idle stop, after which a restart returns exactly the same offsets.
        print(run.round("final", "term", "zstd"))
        status = k.stop()
        if status != 0:
            run.violation("idle SIGTERM: kcoord exit status %d, want 0" % status)
        before = {c.group: c.last_fetch for c in clients}
        k.start("none")
        got = fetch(k.port, clients)
        for c in clients:
            if got[c.group][0] != before[c.group]:
                run.violation("%s: offset %d after an idle restart, %d before"
                              % (c.group, got[c.group][0], before[c.group]))
        status = k.stop()
        if status != 0:
            run.violation("idle SIGTERM: kcoord exit status %d, want 0" % status)
        print("final: idle SIGTERM and restart returned the same offsets: %s"
              % ("yes" if all(got[c.group][0] == before[c.group] for c in clients) else "NO"))
    except SetupError as e:
        print("crash-test: setup error: %s" % e, file=sys.stderr)
        setup_failed = True
        run.violations.append("setup error")
    except (Failure, ValueError, OSError) as e:
        print("crash-test: FAILED: %s" % e)
        run.violations.append(str(e))
    except KeyboardInterrupt as e:
        print("crash-test: interrupted (%s)" % (e or "SIGINT"), file=sys.stderr)
        run.violations.append("interrupted")
    finally:
        k.cleanup()
        if run.violations and k.log_path:
            print("---- kcoord log tail (%s) ----\n%s\n---- end ----"
                  % (os.path.basename(k.log_path), k.tail()))
        if os.environ.get("CRASH_TEST_KEEP"):
            print("crash-test: kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print("crash-test: %d rounds, %d acknowledged commits checked, %d unsynced bytes dropped, "
          "%d violations (%.1f s)" % (done_rounds, run.total_acks, run.total_dropped,
                                      len(run.violations), time.monotonic() - t_start))
    if setup_failed:
        return 2
    return 1 if run.violations else 0


if __name__ == "__main__":
    sys.exit(main())
