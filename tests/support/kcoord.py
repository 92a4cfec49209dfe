"""kcoord: one kcoord process under test, and the small things every such test needs.

Kcoord(data_dir, "name=value", ...) starts $KC_TEST_BIN (default build/kcoord) with
listeners=127.0.0.1:0 and data.dir=data_dir, then the given settings (a later one wins), with
no KCOORD_* variable of the caller's environment. A thread collects its stderr line by line,
so that the process never blocks on a full pipe; wait_line() waits (bounded) for a line
matching a pattern, and fails at once when the process has ended without writing one. The
constructor waits for the Kafka port ("listening on"), for the HTTP port when
metrics.listener is set to an address, and for "all N partitions loaded" unless told not to.

stop() sends SIGTERM (or another signal), waits, kills what is still running and reaps it;
every test stops every Kcoord it started, also on a failure. ScratchKcoord("name=value", ...)
is one in a temporary data directory of its own, removed when it stops.
"""
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BIN = os.environ.get("KC_TEST_BIN", "build/kcoord")
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 20
IO_TIMEOUT_S = 10


def quiet_env():
    """The caller's environment without KCOORD_* (which would set kcoord's settings)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KCOORD_")}


def args(data_dir, *sets, binary=None):
    """The command line of a kcoord (binary, default BIN) on a free Kafka port with data_dir
    and sets."""
    out = [binary or BIN, "--set", "listeners=127.0.0.1:0", "--set", "data.dir=" + data_dir]
    for s in sets:
        out += ["--set", s]
    return out


def no_metrics_listener():
    """The setting that turns the metrics listener off, in a build that has one (its default
    port may be taken); no setting in a build without it."""
    out = subprocess.run([BIN, "--print-config"], stdout=subprocess.PIPE, text=True,
                         env=quiet_env(), check=True).stdout
    return ["metrics.listener="] if re.search(r"^metrics\.listener=", out, re.M) else []


def free_ports(n, host="127.0.0.1"):
    """n distinct TCP ports on host that nothing listened on a moment ago (all bound at once,
    so they differ). Prefer port 0 and reading the bound port from kcoord's log: these can be
    taken before they are used."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host="127.0.0.1"):
    """One port of free_ports."""
    return free_ports(1, host)[0]


def status_kb(pid, field):
    """A kB figure of /proc/<pid>/status: "VmRSS" (resident now), "VmHWM" (peak)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s in /proc/%d/status" % (field, pid))


class Kcoord:
    """A running kcoord; port (Kafka) and http_port (None without a metrics listener).
    binary: another kcoord than BIN; env: variables added to the quiet environment;
    preexec_fn: run in the child before exec; log_path: a file that gets every line of its
    output too, as it comes (for a test that keeps it after the process); new_session: start
    it in a session of its own (a Ctrl-C at the terminal then reaches only the test)."""

    def __init__(self, data_dir, *sets, env=None, wait_loaded=True, wait_port=True,
                 timeout=START_TIMEOUT_S, binary=None, preexec_fn=None, log_path=None,
                 new_session=False):
        e = quiet_env()
        e.update(env or {})
        self.data_dir = data_dir
        self.log_file = open(log_path, "ab") if log_path else None
        self.proc = subprocess.Popen(args(data_dir, *sets, binary=binary), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e,
                                     preexec_fn=preexec_fn, start_new_session=new_session)
        self.lines = []
        self.ended = False  # its stderr reached end of file
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.port = self.http_port = None
        metrics = [s for s in sets if s.startswith("metrics.listener=")]
        try:
            if wait_port:
                self.port = int(self.wait_line(r"listening on 127\.0\.0\.1:(\d+)",
                                               timeout).group(1))
            if wait_port and metrics and metrics[-1] != "metrics.listener=":
                self.http_port = int(self.wait_line(
                    r"metrics\.listener: serving http://127\.0\.0\.1:(\d+)/metrics",
                    timeout).group(1))
            if wait_loaded:
                self.wait_line(r"all \d+ partitions loaded", timeout)
        except BaseException:
            self.kill()  # a start that failed leaves no process behind
            raise

    def _read(self):
        for raw in self.proc.stderr:
            if self.log_file is not None:
                self.log_file.write(raw)
                self.log_file.flush()
            with self.cond:
                self.lines.append(raw.decode(errors="replace"))
                self.cond.notify_all()
        if self.log_file is not None:
            self.log_file.close()
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    # ---- its log ----

    def output(self):
        """Everything it has written to stderr so far."""
        with self.cond:
            return "".join(self.lines)

    log = property(output)

    def find(self, pattern):
        """The first line's match of pattern, None when no line matches (yet)."""
        rx = re.compile(pattern)
        with self.cond:
            for line in self.lines:
                m = rx.search(line)
                if m:
                    return m
        return None

    def count(self, text):
        """How many lines contain text."""
        with self.cond:
            return sum(1 for line in self.lines if text in line)

    def wait_match(self, pattern, timeout=START_TIMEOUT_S):
        """The first line's match of pattern, waiting up to timeout seconds for it; None when
        the time ran out or its output ended without one."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if self.ended or left <= 0:
                    return None
                self.cond.wait(left)

    def wait_line(self, pattern, timeout=START_TIMEOUT_S):
        """As wait_match, but a missing line is an AssertionError that shows the output."""
        m = self.wait_match(pattern, timeout)
        if m is None:
            if self.ended:
                try:
                    why = "it exited (status %s)" % self.proc.wait(IO_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    why = "it closed its stderr"
            else:
                why = "none within %d s" % timeout
            raise AssertionError("kcoord logged no line matching /%s/: %s; its output:\n%s"
                                 % (pattern, why, self.output()))
        return m

    def wait_output(self, timeout):
        """Wait for its next line, or timeout seconds."""
        with self.cond:
            if not self.ended:
                self.cond.wait(timeout)

    # ---- its HTTP listener ----

    def get(self, path):
        """GET path on the metrics listener: (status, content type, body as str)."""
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=IO_TIMEOUT_S)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.getheader("Content-Type"), r.read().decode()
        finally:
            c.close()

    def metric(self, name):
        """The value of an unlabelled sample on /metrics, None when there is none."""
        status, _, body = self.get("/metrics")
        if status != 200:
            raise AssertionError("/metrics answered %d" % status)
        m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
        return None if m is None else float(m.group(1))

    # ---- its memory ----

    def rss_kb(self):
        return status_kb(self.proc.pid, "VmRSS")

    def peak_rss_kb(self):
        return status_kb(self.proc.pid, "VmHWM")

    # ---- its end ----

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT_S):
        """Send sig (if it still runs), wait up to timeout seconds, kill it if it still runs,
        reap it: its exit status (negative: the signal that ended it)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(IO_TIMEOUT_S)
        if not self.reader.is_alive():
            self.proc.stderr.close()
        return self.proc.returncode

    def terminate(self, timeout=STOP_TIMEOUT_S):
        """SIGTERM: its exit status, or None when it still ran after timeout seconds (it is
        killed then)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.stop(signal.SIGKILL)
                return None
        return self.stop()

    def kill(self):
        return self.stop(signal.SIGKILL)


class ScratchKcoord(Kcoord):
    """A Kcoord in a new temporary data directory (self.dir) that stop() removes."""

    def __init__(self, *sets, prefix="kc-py-", **kw):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        super().__init__(self.dir, *sets, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT_S):
        try:
            return super().stop(sig, timeout)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def partition_for(group_id, n):
    """The __consumer_offsets partition of a group id, as Kafka places it:
    abs(Java String.hashCode(group_id)) % n (ASCII ids)."""
    h = 0
    for ch in group_id:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % n
