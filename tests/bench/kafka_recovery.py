"""kafka_recovery: Apache Kafka's side of tests/bench/bench.py's load-time cases (python3, stdlib).

tests/bench/bench.py imports this module. It also runs on its own, as a small client:

    python3 tests/bench/kafka_recovery.py fetch HOST:PORT GROUP [RECORDS KEYS]

prints the committed offsets of GROUP (OffsetFetch v5, all topics) from kcoord or Kafka, and
with RECORDS KEYS checks them against what `gen_log DIR RECORDS KEYS` committed.

What it does, for one bench run:

1. Template (once): `scripts/kafka-ref start --partitions 50 --initial-delay 0 --dir D` with a
   KAFKA_REF_STATE of its own, a FindCoordinator that makes the broker create
   `__consumer_offsets`, a wait until the log says all 50 partitions were loaded, then
   `scripts/kafka-ref stop` (a clean shutdown; D is kept). D is the template: a formatted
   single-node KRaft broker whose 50 offsets partitions exist and are empty. One copy of it
   stays empty: restarted on it (as in 3., with every sample group answering without offsets),
   start to serving is the JVM's and the broker's own start-up, which the load adds to.
   tests/bench/bench.py restarts it after each timed run of a case, so that both see the same load
   on the machine.

2. Per case: a copy of the template, whose partition directories get gen_log's segments:
   Kafka's `.log`, `.index`, `.timeindex`, `.txnindex` and `.snapshot` files are removed, the
   `.log` files of the same partition of gen_log's data directory copied in (kcoord's `.index`
   files are not: Kafka rebuilds its own), `partition.metadata` (the topic id) and
   `leader-epoch-checkpoint` (epoch 0 from offset 0, which is what gen_log's batches carry) are
   kept. `cleaner-offset-checkpoint` gets, per partition, the base offset of its last segment:
   the closed segments of the compacted cases were compacted by kcoord's cleaner, and without
   it Kafka's cleaner would clean them again (merge them into one segment), so that Kafka would
   no longer load the data kcoord loads. The checkpoints of recovery point, log start and high
   watermark are left as the template has them (0): then the broker is started once, untimed
   for the table ("first start"): it finds segments without index files, recovers them
   (validates every batch, rebuilds the indexes and the producer state), loads, and on the
   clean shutdown after it writes the recovery points, high watermarks and the clean-shutdown
   marker as a broker restart finds them.

3. Per run: the broker is started on that directory (new free ports each time, the rest of its
   configuration as scripts/kafka-ref writes it) and timed from just before the process starts
   until an OffsetFetch of one sample group in each of the 50 partitions returns exactly the
   offsets gen_log committed (until then Kafka answers NOT_COORDINATOR or
   COORDINATOR_LOAD_IN_PROGRESS), polled every 20 ms on one connection: each poll fetches the
   groups not yet served, in partition order, up to the first that is not. Its log gives, per
   partition, "Finished loading of metadata from __consumer_offsets-N with epoch E in X ms where
   Y ms was spent in the scheduler. Loaded R records which total to B bytes." (Kafka's
   coordinator loader works through the partitions one at a time: X - Y is the partition's own
   load) and "Completed load of Log(...) with S segments, ... log-end-offset L". A run fails
   unless every partition's log end offset is the number of records gen_log wrote into it (no
   truncation), the records loaded add up to the records in the log, no segment was recovered
   (a clean restart), no log line says the log was truncated or corrupt, and the broker exits
   after SIGTERM (status 0, or 143 as a JVM does after a clean shutdown on SIGTERM), having
   removed the clean-shutdown marker while it ran and written it again.
"""
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import gen_wire, wire  # noqa: E402
from tests.support.kcoord import free_ports  # noqa: E402

KEYS_PER_GROUP = 100  # gen_log: every group commits 10 topics x 10 partitions
PARTS_PER_TOPIC = 10
PARTITIONS = 50
STARTED_LINE = "Kafka Server started"
POLL_S = 0.02
STOP_TIMEOUT_S = 120

# Kafka error codes a loading broker answers with.
ERR_NONE = 0
ERRORS = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
          16: "NOT_COORDINATOR"}


class KafkaError(Exception):
    pass


# ---- gen_log's data --------------------------------------------------------------------------

def group_name(g):
    return "bench-group-%d" % g


def java_hash(s):
    """Java's String.hashCode (UTF-16 code units; our names are ASCII)."""
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group, n=PARTITIONS):
    """Kafka's placement: Utils.abs(groupId.hashCode()) % n (as kc_partition_for)."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % n


def group_keys(g, keys):
    return range(g * KEYS_PER_GROUP, min(keys, (g + 1) * KEYS_PER_GROUP))


def key_tp(k):
    """(topic, partition) of key k."""
    return ("bench-topic-%d" % ((k % KEYS_PER_GROUP) // PARTS_PER_TOPIC), k % PARTS_PER_TOPIC)


def key_records(k, records, keys):
    return records // keys + (1 if k < records % keys else 0)


def expected_offset(k, records, keys):
    """The offset key k ends with: gen_log's record i commits key i % KEYS in round i / KEYS at
    start(k) + (round + 1) * step(k); None when no record commits k."""
    n = key_records(k, records, keys)
    if n == 0:
        return None
    h = (k * 2654435761) & 0xFFFFFFFFFFFFFFFF
    return h % 1000000 + n * (1 + (h >> 20) % 1000)


def expected_group(g, records, keys):
    """{(topic, partition): offset} that group g holds after loading gen_log's data."""
    out = {}
    for k in group_keys(g, keys):
        off = expected_offset(k, records, keys)
        if off is not None:
            out[key_tp(k)] = off
    return out


def records_per_partition(records, keys, n=PARTITIONS):
    """How many records gen_log wrote into each partition (= its log end offset)."""
    out = [0] * n
    base, extra = divmod(records, keys)
    for g in range((keys + KEYS_PER_GROUP - 1) // KEYS_PER_GROUP):
        ks = group_keys(g, keys)
        cnt = base * len(ks) + max(0, min(ks.stop, extra) - ks.start)
        out[partition_for(group_name(g), n)] += cnt
    return out


def sample_groups(keys, n=PARTITIONS):
    """One group per offsets partition (the first gen_log places there): {partition: g}."""
    out = {}
    for g in range((keys + KEYS_PER_GROUP - 1) // KEYS_PER_GROUP):
        p = partition_for(group_name(g), n)
        if p not in out:
            out[p] = g
        if len(out) == n:
            break
    return out


# ---- A minimal Kafka protocol client (non-flexible versions only) ----------------------------
# Messages of proto/ go through the generated client (Client.ask); request() and _str stay for
# the one request tests/bench/bench.py sends that proto/ does not describe (IncrementalAlterConfigs).

def _str(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Reader:
    def __init__(self, data):
        self.d = data
        self.o = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.o)
        self.o += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.d[self.o:self.o + n].decode("utf-8", "replace")
        self.o += n
        return s


class Client:
    """One connection; one request at a time."""

    def __init__(self, host, port, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.cid = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by the server")
            buf += chunk
        return buf

    def request(self, api, version, body):
        self.cid += 1
        msg = struct.pack(">hhi", api, version, self.cid) + _str("kcoord-bench") + body
        self.sock.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", self._recv(4))[0]
        r = Reader(self._recv(size))
        if r.take(">i") != self.cid:
            raise ConnectionError("correlation id mismatch")
        return r

    def ask(self, api, version, **fields):
        """A request of proto/ (gen_wire.APIS names it, non-flexible versions) built by the
        generated client: its decoded answer."""
        key = gen_wire.APIS[api][0]
        name = wire._snake(api)
        body = getattr(gen_wire, "encode_%s_request" % name)(version, **fields)
        r = self.request(key, version, body)
        return getattr(gen_wire, "decode_%s_response" % name)(version, r.d[r.o:])

    def find_coordinator(self, group):
        """FindCoordinator v1: (error code, node id)."""
        m = self.ask("FindCoordinator", 1, key=group, key_type=0)
        return m.error_code, m.node_id

    def offset_fetch(self, group):
        """OffsetFetch v5 of all the group's offsets: (error code, {(topic, p): (offset, err)})."""
        m = self.ask("OffsetFetch", 5, group_id=group, topics=None)
        out = {}
        for t in m.topics:
            for p in t.partitions:
                out[(t.name, p.partition_index)] = (p.committed_offset, p.error_code)
        return m.error_code, out


def check_group(got, want):
    """None when the OffsetFetch result `got` is exactly `want`, else what differs."""
    bad = [tp for tp, (off, err) in got.items() if err != 0 or want.get(tp) != off]
    missing = [tp for tp in want if tp not in got]
    if not bad and not missing:
        return None
    parts = []
    if missing:
        parts.append("%d of %d offsets missing (e.g. %s-%d)" % (len(missing), len(want),
                                                               missing[0][0], missing[0][1]))
    if bad:
        tp = bad[0]
        parts.append("%d wrong (e.g. %s-%d: got %s, error %d; want %s)"
                     % (len(bad), tp[0], tp[1], got[tp][0], got[tp][1], want.get(tp)))
    return "; ".join(parts)


def check_offsets(host, port, records, keys, groups, timeout=10.0):
    """Fetch every group of {partition: g} once; return the number of offsets checked.
    Raises KafkaError on any error or difference from what gen_log committed."""
    c = Client(host, port, timeout)
    try:
        n = 0
        for _p, g in sorted(groups.items()):
            err, got = c.offset_fetch(group_name(g))
            if err != ERR_NONE:
                raise KafkaError("OffsetFetch %s: error %d" % (group_name(g), err))
            why = check_group(got, expected_group(g, records, keys))
            if why:
                raise KafkaError("OffsetFetch %s: %s" % (group_name(g), why))
            n += len(got)
        return n
    finally:
        c.close()


# ---- The broker -------------------------------------------------------------------------------

def _set_pdeathsig():
    """In the child: die with the parent (a bench killed with SIGKILL leaves no broker)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


LOG_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
FINISHED = re.compile(r"Finished loading of metadata from __consumer_offsets-(\d+) with epoch "
                      r"\d+ in (\d+)ms where (\d+)ms was spent in the scheduler\. Loaded (\d+) "
                      r"records which total to (\d+) bytes")
SCHEDULED = re.compile(r"Scheduling loading of metadata from __consumer_offsets-(\d+) ")
COMPLETED = re.compile(r"Completed load of Log\(dir=\S*/__consumer_offsets-(\d+), .*\) with "
                       r"(\d+) segments, local-log-start-offset (\d+) and log-end-offset (\d+) "
                       r"in (\d+)ms")
# Lines that say a segment was recovered or the log cut: a clean restart has none.
RECOVERED = re.compile(r"Could not find offset index|Recovering unflushed segment|"
                       r"[Tt]runcat|[Cc]orrupt|Found invalid|rebuilding index")


def log_time(line):
    m = LOG_TS.match(line)
    if not m:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


class Broker:
    """Kafka, started by us on a broker directory made by scripts/kafka-ref."""

    def __init__(self, kref):
        self.kref = kref
        self.proc = None

    def start(self, bdir, log_path):
        """Start the broker on bdir with fresh ports; returns (t0 wall, t0 monotonic, port)."""
        config = os.path.join(bdir, "server.properties")
        port, cport = free_ports(2)
        with open(config) as f:
            text = f.read()
        subs = {
            "log.dirs": os.path.join(bdir, "data"),
            "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % port,
            "controller.quorum.voters": "1@127.0.0.1:%d" % cport,
        }
        for k, v in subs.items():
            text, n = re.subn(r"(?m)^%s=.*$" % re.escape(k), lambda _m: "%s=%s" % (k, v), text)
            if n != 1:
                raise KafkaError("%s has no single %s line" % (config, k))
        with open(config, "w") as f:
            f.write(text)
        cmd = ([self.kref.java] + self.kref.java_opts +
               ["-Xmx" + self.kref.heap, "-Djava.awt.headless=true",
                "-Dlog4j2.configurationFile=" + os.path.join(bdir, "log4j2.properties"),
                "-Dkafka.logs.dir=" + os.path.join(bdir, "logs"),
                "-cp", self.kref.cp, "kafka.Kafka", config])
        self.log_path = log_path
        with open(log_path, "wb") as out:
            t0w = time.time()
            t0 = time.monotonic()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, cwd=bdir,
                                         start_new_session=True, preexec_fn=_set_pdeathsig)
        return t0w, t0, port

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM, SIGKILL after STOP_TIMEOUT_S; returns the exit status (None: not started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                raise KafkaError("Kafka did not exit within %d s of SIGTERM (killed)"
                                 % STOP_TIMEOUT_S)
        rc = self.proc.returncode
        self.proc = None
        return rc

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def tail(path, n=12):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


class KafkaRecovery:
    """Kafka's load-time runs. Use as a context manager: everything it started is stopped and
    its directory removed on exit, also on an exception or Ctrl-C."""

    def __init__(self, root, repeat, say=print):
        self.root = root
        self.script = os.path.join(root, "scripts", "kafka-ref")
        self.repeat = repeat
        self.say = say
        self.work = None
        self.template = None
        self.version = None
        self.kref_running = False
        self.broker = None
        self.java = os.environ.get("JAVA") or shutil.which("java") or "java"
        self.java_opts = os.environ.get("KAFKA_REF_JAVA_OPTS", "").split()
        self.heap = "1g"  # scripts/kafka-ref's default
        self.cp = None

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="kcoord-bench-kafka-", dir="/tmp")
        self.env = dict(os.environ, KAFKA_REF_STATE=os.path.join(self.work, "state"))
        self.broker = Broker(self)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self.broker is not None:
            self.broker.kill()
        if self.kref_running:
            self._kref("stop", timeout=120, check=False)
            self.kref_running = False
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None

    def _kref(self, *args, timeout=900, check=True):
        try:
            p = subprocess.run([self.script] + list(args), env=self.env,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            raise KafkaError("scripts/kafka-ref %s did not finish within %d s"
                             % (args[0], timeout))
        if check and p.returncode != 0:
            lines = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()
            raise KafkaError("scripts/kafka-ref %s failed (exit %d): %s"
                             % (args[0], p.returncode, " / ".join(lines[-3:])))
        return p

    def _env_values(self):
        values = {}
        for line in self._kref("env", timeout=60).stdout.splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                try:
                    values[k] = shlex.split(v)[0] if v else ""
                except ValueError:
                    values[k] = v
        return values

    # -- 1. the template

    def setup(self):
        """Make the template (and its copy for the empty restarts). Raises KafkaError."""
        if not os.access(self.script, os.X_OK):
            raise KafkaError("scripts/kafka-ref is not there")
        self.template = os.path.join(self.work, "template")
        self.say("== Kafka: scripts/kafka-ref start --partitions %d --initial-delay 0 --dir "
                 "%s; creating __consumer_offsets" % (PARTITIONS, self.template))
        self.kref_running = True
        self._kref("start", "--partitions", str(PARTITIONS), "--initial-delay", "0", "--dir",
                   self.template)
        values = self._env_values()
        self.version = values.get("KAFKA_REF_VERSION")
        self.cp = values.get("KAFKA_REF_CP")
        boot = values.get("KAFKA_REF_BOOTSTRAP")
        if not boot or not self.cp:
            raise KafkaError("scripts/kafka-ref env printed no KAFKA_REF_BOOTSTRAP or "
                             "KAFKA_REF_CP")
        host, port = boot.rsplit(":", 1)
        server_log = os.path.join(self.template, "logs", "server.log")
        deadline = time.monotonic() + 180
        c = Client(host, int(port))
        try:
            while True:  # COORDINATOR_NOT_AVAILABLE until the topic exists
                err, _node = c.find_coordinator("kcoord-bench-probe")
                if err == ERR_NONE:
                    break
                if time.monotonic() > deadline:
                    raise KafkaError("FindCoordinator still answers error %d after 180 s" % err)
                time.sleep(0.2)
        finally:
            c.close()
        while True:
            with open(server_log, errors="replace") as f:
                loaded = {int(m.group(1)) for m in FINISHED.finditer(f.read())}
            if len(loaded) == PARTITIONS:
                break
            if time.monotonic() > deadline:
                raise KafkaError("__consumer_offsets: %d of %d partitions loaded after 180 s"
                                 % (len(loaded), PARTITIONS))
            time.sleep(0.2)
        self._kref("stop", timeout=300)
        self.kref_running = False
        data = os.path.join(self.template, "data")
        if not os.path.exists(os.path.join(data, ".kafka_cleanshutdown")):
            raise KafkaError("Kafka left no .kafka_cleanshutdown after scripts/kafka-ref stop")
        missing = [p for p in range(PARTITIONS) if not os.path.exists(
            os.path.join(data, "__consumer_offsets-%d" % p, "partition.metadata"))]
        if missing:
            raise KafkaError("the template lacks __consumer_offsets-%d" % missing[0])
        shutil.copytree(self.template, os.path.join(self.work, "empty"), symlinks=True)

    def empty_restart(self, keys, label):
        """Restart the broker with its __consumer_offsets empty (a copy of the template): its
        own start-up. Returns the figures of restart(); raises KafkaError."""
        return self.restart(os.path.join(self.work, "empty"), "empty-%s" % label, 0, keys,
                            sample_groups(keys), None, empty=True)

    # -- 2. a case

    def prepare(self, gen_dir, records, keys, stored):
        """A broker directory holding gen_log's data in gen_dir, after its first start (which
        rebuilds the indexes). Returns (directory, first start dict)."""
        bdir = os.path.join(self.work, "case")
        shutil.rmtree(bdir, ignore_errors=True)
        shutil.copytree(self.template, bdir, symlinks=True)
        data = os.path.join(bdir, "data")
        cleaner = []
        for p in range(PARTITIONS):
            src = os.path.join(gen_dir, "__consumer_offsets-%d" % p)
            dst = os.path.join(data, "__consumer_offsets-%d" % p)
            for name in os.listdir(dst):
                if name.endswith((".log", ".index", ".timeindex", ".txnindex", ".snapshot",
                                  ".deleted", ".cleaned", ".swap")):
                    os.unlink(os.path.join(dst, name))
            segs = sorted(n for n in os.listdir(src) if n.endswith(".log"))
            if not segs:
                raise KafkaError("%s has no segment" % src)
            for name in segs:
                shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
            cleaner.append((p, int(segs[-1][:-4])))
        with open(os.path.join(data, "cleaner-offset-checkpoint"), "w") as f:
            f.write("0\n%d\n" % len(cleaner))
            for p, off in cleaner:
                f.write("__consumer_offsets %d %d\n" % (p, off))
        groups = sample_groups(keys)
        first = self.restart(bdir, "first", records, keys, groups, stored, first=True)
        return bdir, first

    def drop_case(self):
        """Remove the case's broker directory (its copy of the data)."""
        if self.broker is not None:
            self.broker.kill()
        if self.work:
            shutil.rmtree(os.path.join(self.work, "case"), ignore_errors=True)

    # -- 3. a run

    def restart(self, bdir, label, records, keys, groups, stored, empty=False, first=False):
        """Start the broker on bdir, time it until every sample group answers right, check its
        log, stop it. Returns a dict of figures; raises KafkaError."""
        log_path = os.path.join(bdir, "logs", "run-%s.log" % label)
        t0w, t0, port = self.broker.start(bdir, log_path)
        want = {p: expected_group(g, records, keys) if not empty else {}
                for p, g in groups.items()}
        pending = dict(groups)
        last_err = {}
        serving_ms = None
        client = None
        try:
            deadline = t0 + 600
            while serving_ms is None:
                if not self.broker.alive():
                    raise KafkaError("Kafka exited with status %s while starting:\n%s"
                                     % (self.broker.proc.returncode, tail(log_path)))
                if time.monotonic() > deadline:
                    raise KafkaError("Kafka was not serving after 600 s (%d groups pending; "
                                     "last answers: %s):\n%s"
                                     % (len(pending), sorted(set(last_err.values()))[:3],
                                        tail(log_path)))
                try:
                    if client is None:
                        client = Client("127.0.0.1", port, timeout=30)
                    # Until the first group that is not served yet: one request per poll while
                    # Kafka loads, so that polling takes little of the CPU the load needs.
                    for p in sorted(pending):
                        g = pending[p]
                        err, got = client.offset_fetch(group_name(g))
                        if err != ERR_NONE:
                            last_err[p] = ERRORS.get(err, "error %d" % err)
                            break
                        why = check_group(got, want[p])
                        if why:
                            last_err[p] = why
                            break
                        del pending[p]
                    if not pending:
                        serving_ms = (time.monotonic() - t0) * 1000
                        break
                except (OSError, ConnectionError, struct.error):
                    if client is not None:
                        client.close()
                        client = None
                time.sleep(POLL_S)
        except BaseException:
            if client is not None:
                client.close()
            self.broker.kill()
            raise
        client.close()
        marker = os.path.join(bdir, "data", ".kafka_cleanshutdown")
        marker_while_running = os.path.exists(marker)
        # Every partition is loaded (each has a sample group); its line may lag the answer.
        deadline = time.monotonic() + 30
        while True:
            with open(log_path, errors="replace") as f:
                lines = f.read().splitlines()
            fin = {}
            for l in lines:
                m = FINISHED.search(l)
                if m:
                    fin[int(m.group(1))] = (l, m)
            if (len(fin) == PARTITIONS and any(STARTED_LINE in l for l in lines)) or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        rc = self.broker.stop()
        if rc not in (0, 128 + signal.SIGTERM):  # the JVM exits 143 after a clean SIGTERM
            raise KafkaError("Kafka exited with status %s after SIGTERM:\n%s"
                             % (rc, tail(log_path)))
        if marker_while_running:
            raise KafkaError("Kafka kept %s while running" % marker)
        if not os.path.exists(marker):
            raise KafkaError("Kafka left no clean-shutdown marker (%s)" % marker)
        checked = sum(len(v) for v in want.values())
        return self._figures(lines, fin, t0w, serving_ms, records, keys, stored, empty, first,
                             checked)

    def _figures(self, lines, fin, t0w, serving_ms, records, keys, stored, empty, first,
                 checked):
        if len(fin) != PARTITIONS:
            raise KafkaError("Kafka's log shows %d of %d partitions loaded"
                             % (len(fin), PARTITIONS))
        started = [log_time(l) for l in lines if STARTED_LINE in l]
        if not started or started[0] is None:
            raise KafkaError("Kafka's log has no \"%s\" line" % STARTED_LINE)
        sched = {}
        leo = {}
        segments = 0
        recovered = []
        for l in lines:
            m = SCHEDULED.search(l)
            if m:
                sched[int(m.group(1))] = log_time(l)  # the last scheduling counts
            m = COMPLETED.search(l)
            if m:
                leo[int(m.group(1))] = int(m.group(4))
                segments += int(m.group(2))
            if RECOVERED.search(l) and "__consumer_offsets" in l:
                recovered.append(l)
        want_leo = records_per_partition(records, keys) if not empty else [0] * PARTITIONS
        for p in range(PARTITIONS):
            if leo.get(p) != want_leo[p]:
                raise KafkaError("__consumer_offsets-%d: Kafka's log end offset is %s, gen_log "
                                 "wrote %d records" % (p, leo.get(p), want_leo[p]))
        if recovered and not first:
            raise KafkaError("a restart recovered or truncated segments:\n" +
                             "\n".join(recovered[:5]))
        own = [int(m.group(2)) - int(m.group(3)) for _l, m in fin.values()]
        loaded = sum(int(m.group(4)) for _l, m in fin.values())
        want_loaded = 0 if empty else (stored if stored is not None else records)
        if loaded != want_loaded:
            raise KafkaError("Kafka loaded %d records, the log holds %d" % (loaded, want_loaded))
        t_fin = [log_time(l) for l, _m in fin.values()]
        t_first = min(sched[p] for p in fin if p in sched) if sched else min(t_fin)
        return {
            "serving_ms": serving_ms,
            "started_ms": (started[0] - t0w) * 1000,
            "loaded_ms": (max(t_fin) - t0w) * 1000,  # start to the last partition loaded
            "span_ms": (max(t_fin) - t_first) * 1000,  # first scheduled to last loaded
            "sum_ms": sum(own),  # the partitions' own load times, added up
            "max_ms": max(own),
            "records": loaded,
            "bytes": sum(int(m.group(5)) for _l, m in fin.values()),
            "segments": segments,
            "recovered": len(recovered),
            "checked": checked,
        }


def main(argv):
    if len(argv) not in (3, 5) or argv[0] != "fetch":
        print("usage: kafka_recovery.py fetch HOST:PORT GROUP [RECORDS KEYS]", file=sys.stderr)
        return 2
    host, port = argv[1].rsplit(":", 1)
    c = Client(host, int(port))
    try:
        err, got = c.offset_fetch(argv[2])
    finally:
        c.close()
    print(json.dumps({"error": err, "offsets": {"%s-%d" % tp: v[0] for tp, v in
                                                sorted(got.items())}}))
    if len(argv) == 5:
        m = re.match(r"bench-group-(\d+)$", argv[2])
        if not m:
            print("not a gen_log group", file=sys.stderr)
            return 1
        why = check_group(got, expected_group(int(m.group(1)), int(argv[3]), int(argv[4])))
        print(why or "ok: as gen_log committed")
        return 1 if why or err else 0
    return 1 if err else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
