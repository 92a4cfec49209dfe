#!/usr/bin/python3
"""log-interop: kcoord's __consumer_offsets logs against Apache Kafka's, in both directions.

    tests/interop/log_interop.py [--only kcoord-to-kafka|kafka-to-kcoord] [--keep] [BUILD_DIR]

kcoord keeps its state in the files and the record format of Kafka's __consumer_offsets topic
(docs/log-format.md). This script proves it with a real Kafka broker and Kafka's own tools,
run from the jars that scripts/kafka-ref fetches (Kafka 4.4.0; needs java 17+ and mvn once,
then the cache). kcoord is BUILD_DIR/kcoord (default build; $KC_TEST_BIN overrides it). Both
servers run with 5 __consumer_offsets partitions and group.initial.rebalance.delay.ms=0.
Clients: kafka-python (Debian's python3-kafka, hence /usr/bin/python3), kcat, and Kafka's
ConsumerGroupCommand.

kcoord -> Kafka
  1. kcoord (zstd batches) serves: a kcat consumer joins group a-kcat and stays a member; a
     kafka-python consumer joins a-live, commits offsets with metadata and leaves (the group is
     then Empty); offsets are committed without membership for a-simple, a-deleted, a-deloff.
     SIGTERM.
  2. kcoord restarts on the same directory with offsets.topic.compression.codec=none and
     16 KiB segments, so the log holds both codecs and rolled segments with index entries:
     another commit for a-live (UTF-8 metadata), 150 commits for a-bulk, ConsumerGroupCommand
     --delete of a-deleted and --delete-offsets of a-deloff orders:1 (tombstones). SIGTERM.
  3. Kafka's DumpLogSegments --offsets-decoder on every segment: exit 0, no error, no unknown
     record type, no exception, every batch valid; replaying its decoded records gives exactly
     the committed offsets and metadata, the groups with protocol type "consumer", their
     members, subscriptions and assignments, and the tombstones. DumpLogSegments on every
     .index finds no mismatch. `kcoord dump-log` on the same files decodes the same batches
     and the same (offset, timestamp, key, value) records, field for field.

Kafka -> kcoord
  4. A Kafka broker (scripts/kafka-ref start --partitions 5 --initial-delay 0, in this run's
     own directory) gets topics orders (3 partitions) and events (2), some records, and groups:
     b-live (kafka-python joins, commits with metadata, leaves: Empty), b-kcat (a kcat member
     still in the group when Kafka stops), b-reset (ConsumerGroupCommand --reset-offsets),
     b-deloff (--delete-offsets of one partition), b-deleted (--delete), b-848 (Kafka's
     VerifiableConsumer with group.protocol=consumer: KIP-848 records, types 3-8; it left)
     and b-848-live (the same, its member still in the group when Kafka stops). What
     ConsumerGroupCommand --list, --describe --offsets and --describe --state, and kafka-python's
     OffsetFetch (offsets and metadata) report is recorded. Kafka is stopped cleanly.
  5. Its __consumer_offsets-N directories (with Kafka's .timeindex, .snapshot,
     leader-epoch-checkpoint, partition.metadata) are copied into a fresh data.dir;
     `kcoord verify-log` must pass on it, and `kcoord dump-log` must decode Kafka's segments as
     DumpLogSegments does.
  6. kcoord starts on it with the same partition count and topics and must report the same
     groups, committed offsets, metadata, states (the KIP-848 groups with Kafka's server
     assignor), members and assignments. One known gap is printed as KNOWN, not failed: the
     live KIP-848 member's assignment (see KIP848_TOPIC_IDS).
  7. kcoord then appends to Kafka's segments (a commit, a group deletion) and stops; Kafka's
     DumpLogSegments must read the mixed segments without error, verify-log must pass, and a
     restarted kcoord must show the change.

Every wait polls for an event (a log line, an assignment) with a deadline; nothing sleeps a fixed
time. Every process it starts (kcoord, kcat, the Kafka broker) is stopped and its temporary
directory removed at the end, also on failure or Ctrl-C (--keep keeps the directory and says
where). It prints one line per check and ends with "N passed, M failed".

Exit status: 0 when every check passed (KNOWN lines do not count), 1 when one failed or a step
could not run, 2 on a usage error.
"""
import argparse
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-ref")
sys.path.insert(0, ROOT)
from tests.support import kcoord  # noqa: E402
PARTITIONS = 5
TOPICS = {"orders": 3, "events": 2}
TOPICS_SETTING = ",".join("%s:%d" % kv for kv in TOPICS.items())
KCOORD_START_S = 30
KCOORD_STOP_S = 30
CLIENT_S = 60
TOOL_S = 180
SESSION_MS = 120000  # kcat members outlive every phase: no expiry can change the logs
DUMP_CLASS = "org.apache.kafka.tools.DumpLogSegments"
CGC_CLASS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"

try:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata
except ImportError:
    sys.exit("log-interop: the kafka module is missing: install python3-kafka (scripts/deps)")

logging.getLogger("kafka").setLevel(logging.CRITICAL)


class StepError(Exception):
    """A step could not run at all (as opposed to a check that failed)."""


# ---- checks ----

PASSED = 0
FAILED = 0


def check(ok, what, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print("ok    " + what, flush=True)
    else:
        FAILED += 1
        print("FAIL  " + what + (":\n      " + detail.replace("\n", "\n      ") if detail else ""),
              flush=True)
    return ok


T0 = time.monotonic()


def info(msg):
    print("[%5.1f s] %s" % (time.monotonic() - T0, msg), flush=True)


KNOWN = 0


def known_gap(ok, what, gap, detail=""):
    """A comparison that fails for a known, documented gap in kcoord: printed, not failed.
    When it passes, it says so, so that the marker can be removed."""
    global PASSED, KNOWN
    if ok:
        PASSED += 1
        print("ok    %s (the known gap \"%s\" is closed: make this a check)" % (what, gap),
              flush=True)
    else:
        KNOWN += 1
        print("KNOWN " + what + ": " + gap + (":\n      " + detail.replace("\n", "\n      ")
                                              if detail else ""), flush=True)


def section(title):
    print("\n== " + title, flush=True)


def brief(obj, limit=600):
    try:
        s = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False)
    except TypeError:  # tuple keys and the like
        s = repr(obj)
    return s if len(s) <= limit else s[:limit] + "..."


# ---- processes ----


def clean_env():
    """The environment without KCOORD_* settings, which kcoord would apply."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KCOORD_")}


class Stream:
    """Drains a child's pipe on a thread into text that can be waited on."""

    def __init__(self, pipe):
        self.text = ""
        self.cond = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe):
        for chunk in iter(lambda: pipe.read1(65536), b""):
            with self.cond:
                self.text += chunk.decode(errors="replace")
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, pattern, timeout, proc=None):
        """The first match of `pattern`, or None when the deadline passes or the pipe closes."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                m = rx.search(self.text)
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self.cond.wait(min(left, 0.5))


class Kcoord(kcoord.Kcoord):
    """A kcoord process on a free port (tests/support); waits until every partition has loaded."""

    def __init__(self, binary, data_dir, *sets):
        try:
            # No metrics listener: another kcoord on this host may hold its default port, and
            # its warning would fail the "no warning" checks.
            super().__init__(data_dir, "offsets.topic.num.partitions=%d" % PARTITIONS,
                             "group.initial.rebalance.delay.ms=0", "topics=" + TOPICS_SETTING,
                             "metrics.listener=", *sets, binary=binary, timeout=KCOORD_START_S)
        except AssertionError:
            raise StepError("kcoord did not start:\n" + self.output()[-4000:]) from None
        PROCS.append(self)
        self.bootstrap = "127.0.0.1:%d" % self.port

    def stop(self):
        """SIGTERM; returns the exit status (or -9 after a SIGKILL on timeout)."""
        rc = super().stop(timeout=KCOORD_STOP_S)
        if self in PROCS:
            PROCS.remove(self)
        return rc

    def kill(self):
        super().kill()
        if self in PROCS:
            PROCS.remove(self)


class Kcat:
    """A kcat balanced consumer (librdkafka) that stays in its group until killed."""

    def __init__(self, bootstrap, group, topics):
        args = ["kcat", "-b", bootstrap, "-G", group, "-X", "session.timeout.ms=%d" % SESSION_MS,
                "-X", "auto.offset.reset=latest"] + list(topics)
        # kcat prints its rebalance events on stderr (not with -q).
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        PROCS.append(self)
        self.err = Stream(self.proc.stderr)
        m = self.err.wait_for(r"rebalanced.*assigned: (.*)\n", CLIENT_S)
        if m is None:
            self.kill()
            raise StepError("kcat did not get an assignment in group %s:\n%s"
                            % (group, self.err.text[-3000:]))
        self.assigned = m.group(1)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self in PROCS:
            PROCS.remove(self)


class LiveConsumer:
    """Kafka's VerifiableConsumer with group.protocol=consumer (KIP-848), running until killed;
    waits for its first assignment."""

    def __init__(self, bootstrap, group, topic):
        args = [KAFKA_REF, "run-class", "org.apache.kafka.tools.VerifiableConsumer",
                "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group,
                "--group-protocol", "consumer", "--reset-policy", "earliest"]
        env = dict(os.environ, KAFKA_REF_STATE=KAFKA_STATE["dir"])
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env)
        PROCS.append(self)
        self.out = Stream(self.proc.stdout)
        if self.out.wait_for(r'"name":"partitions_assigned","partitions":\[\{', TOOL_S) is None:
            self.kill()
            raise StepError("VerifiableConsumer got no assignment in group %s:\n%s"
                            % (group, self.out.text[-3000:]))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self in PROCS:
            PROCS.remove(self)


PROCS = []
KAFKA_STATE = {}


def kafka_ref(*args, check_rc=True, timeout=TOOL_S):
    env = dict(os.environ, KAFKA_REF_STATE=KAFKA_STATE["dir"])
    p = subprocess.run([KAFKA_REF] + list(args),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=timeout)
    if check_rc and p.returncode != 0:
        raise StepError("scripts/kafka-ref %s failed (exit %d):\n%s%s"
                        % (" ".join(args[:3]), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def run_class(*args):
    return kafka_ref("run-class", *args, check_rc=False)


def cgc(bootstrap, *args):
    """ConsumerGroupCommand against `bootstrap`; fails the step on a non-zero exit."""
    p = run_class(CGC_CLASS, "--bootstrap-server", bootstrap, *args)
    if p.returncode != 0:
        raise StepError("ConsumerGroupCommand %s failed (exit %d):\n%s%s"
                        % (" ".join(args), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def cleanup():
    for p in list(PROCS):
        p.kill()
    if KAFKA_STATE.get("running"):
        try:
            kafka_ref("stop", "--keep", check_rc=False, timeout=120)
        except Exception as e:  # keep cleaning up
            print("log-interop: stopping the Kafka broker: %s" % e, file=sys.stderr)
        KAFKA_STATE["running"] = False


# ---- clients (kafka-python) ----


def tp(t, p):
    return TopicPartition(t, p)


def join_and_commit(bootstrap, group, topics, commits):
    """A kafka-python consumer joins `group` subscribed to `topics`, commits `commits`
    ({(topic, partition): (offset, metadata)}) as a group member and leaves the group."""
    c = KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group,
                      enable_auto_commit=False, api_version_auto_timeout_ms=10000,
                      request_timeout_ms=30000)
    try:
        deadline = time.monotonic() + CLIENT_S
        while not c.assignment():
            if time.monotonic() > deadline:
                raise StepError("kafka-python got no assignment in group %s" % group)
            c.poll(timeout_ms=100)
        assigned = {(x.topic, x.partition) for x in c.assignment()}
        c.commit({tp(t, p): OffsetAndMetadata(o, m) for (t, p), (o, m) in commits.items()})
        return assigned
    finally:
        c.close(autocommit=False)


def simple_commit(bootstrap, group, commits):
    """Commits without joining: OffsetCommit with generation -1 into an Empty group."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      api_version_auto_timeout_ms=10000)
    try:
        c.assign([tp(t, p) for (t, p) in commits])
        c.commit({tp(t, p): OffsetAndMetadata(o, m) for (t, p), (o, m) in commits.items()})
    finally:
        c.close(autocommit=False)


def bulk_commit(bootstrap, group, tp_, n):
    """`n` commits of one partition, one request each, with 100-byte metadata: enough batches
    to roll small segments and fill their indexes. Returns the last (offset, metadata)."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      api_version_auto_timeout_ms=10000)
    try:
        c.assign([tp(*tp_)])
        for i in range(n):
            last = (1000 + i, ("bulk-%d-" % i).ljust(100, "x"))
            c.commit({tp(*tp_): OffsetAndMetadata(*last)})
        return last
    finally:
        c.close(autocommit=False)


def fetch_offsets(bootstrap, groups):
    """{group: {(topic, partition): (offset, metadata)}} through OffsetFetch."""
    a = KafkaAdminClient(bootstrap_servers=bootstrap, api_version_auto_timeout_ms=10000)
    try:
        out = {}
        for g in groups:
            r = a.list_consumer_group_offsets(g)
            out[g] = {(k.topic, k.partition): (v.offset, v.metadata) for k, v in r.items()}
        return out
    finally:
        a.close()


# ---- ConsumerGroupCommand output ----


def parse_table(text, header_start):
    """Rows (token lists) of every table whose header starts with `header_start`."""
    rows = []
    in_table = False
    for line in text.splitlines():
        if line.startswith(header_start):
            in_table = True
            continue
        if not line.strip():
            in_table = False
            continue
        if in_table:
            rows.append(line.split())
    return rows


def describe_offsets(bootstrap):
    """{(group, topic, partition): (current offset, consumer id, host, client id)}: the
    columns of --describe --offsets that do not depend on the topic's log end."""
    out = cgc(bootstrap, "--describe", "--all-groups", "--offsets")
    res = {}
    for r in parse_table(out, "GROUP "):
        if len(r) != 9:
            raise StepError("cannot parse --describe --offsets row %r" % r)
        res[(r[0], r[1], int(r[2]))] = (r[3], r[6], r[7], r[8])
    return res


def describe_state(bootstrap):
    """{group: (assignment strategy, state, members)} from --describe --state."""
    out = cgc(bootstrap, "--describe", "--all-groups", "--state")
    return {r[0]: tuple(r[-3:]) for r in parse_table(out, "GROUP ")}


def describe_members(bootstrap):
    """{(group, consumer id): (host, client id, #partitions, assignment)} from --members
    --verbose."""
    out = cgc(bootstrap, "--describe", "--all-groups", "--members", "--verbose")
    res = {}
    for line in out.splitlines():
        if line.startswith("GROUP ") or not line.strip():
            continue
        f = line.split(None, 5)
        if len(f) < 5:
            continue
        # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT (the assignment has spaces)
        res[(f[0], f[1])] = (f[2], f[3], f[4], f[5].strip() if len(f) > 5 else "")
    return res


def list_groups(bootstrap):
    return set(cgc(bootstrap, "--list").split())


# ---- dumps ----

BAD_WORDS = ["Error", "Exception", "Unknown record type", "Failed to decode", "isvalid: false",
             "Mismatches", "corrupt", "invalid bytes"]
BATCH_FIELDS = ["baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl",
                "position", "size", "magic", "compresscodec", "crc", "isvalid"]


def segment_files(data_dir, suffix):
    out = []
    for d in sorted(os.listdir(data_dir)):
        if not d.startswith("__consumer_offsets-"):
            continue
        for f in sorted(os.listdir(os.path.join(data_dir, d))):
            if f.endswith(suffix):
                out.append(os.path.join(data_dir, d, f))
    return out


def kafka_dump(files):
    """Runs DumpLogSegments --offsets-decoder on `files`; returns (exit status, full output,
    {file: {"batches": [dict], "records": [dict]}})."""
    p = run_class(DUMP_CLASS, "--offsets-decoder", "--files", ",".join(files))
    text = p.stdout + p.stderr
    per = {}
    cur = None
    dec = json.JSONDecoder()
    for line in p.stdout.splitlines():
        if line.startswith("Dumping "):
            cur = per.setdefault(line[len("Dumping "):].strip(), {"batches": [], "records": []})
        elif line.startswith("baseOffset: ") and cur is not None:
            b = dict(re.findall(r"(\w+): (\S+)", line))
            for ts in ("CreateTime", "LogAppendTime"):
                if ts in b:
                    b["timestampType"], b["maxTimestamp"] = ts, b.pop(ts)
            cur["batches"].append(b)
        elif line.startswith("| offset: ") and cur is not None:
            head = dict(re.findall(r"(\w+): (\S+)", line.split(" key: ", 1)[0]))
            rest = line.split(" key: ", 1)[1]
            key, end = dec.raw_decode(rest)
            rest = rest[end:]
            if not rest.startswith(" payload: "):
                raise StepError("cannot parse DumpLogSegments record line: " + line)
            rest = rest[len(" payload: "):]
            payload = None if rest == "<DELETE>" else json.loads(rest)
            ts = head.get("CreateTime", head.get("LogAppendTime"))
            cur["records"].append({"offset": int(head["offset"]), "timestamp": int(ts),
                                   "keySize": int(head["keySize"]),
                                   "valueSize": int(head["valueSize"]), "key": key,
                                   "payload": payload})
    return p.returncode, text, per


def kcoord_dump(binary, files, what):
    """`kcoord dump-log` on `files`: {file: {"batches": [dict], "records": [dict]}}."""
    p = subprocess.run([binary, "dump-log"] + files, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=clean_env())
    errs = [ln for ln in p.stdout.splitlines() if '"error"' in ln]
    check(p.returncode == 0 and not errs, what + ": kcoord dump-log exits 0, decodes every record",
          "exit %d\n%s\n%s" % (p.returncode, "\n".join(errs[:5]), p.stderr[-2000:]))
    per = {f: {"batches": [], "records": []} for f in files}
    cur = None
    for line in p.stdout.splitlines():
        o = json.loads(line)
        if "baseOffset" in o:
            cur = per.setdefault(o["file"], {"batches": [], "records": []})
            cur["batches"].append(o)
        else:
            cur["records"].append({k: o[k] for k in ("offset", "timestamp", "keySize",
                                                     "valueSize", "key", "payload")})
    return per


def norm_batch(b):
    """A batch's fields as strings, so Kafka's text and kcoord's JSON compare."""
    out = {}
    for f in BATCH_FIELDS + ["maxTimestamp", "timestampType"]:
        v = b.get(f)
        out[f] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def check_dump_output(rc, text, files, what):
    check(rc == 0, what + ": DumpLogSegments exits 0", "exit %d\n%s" % (rc, text[-3000:]))
    bad = [ln for ln in text.splitlines() if any(w in ln for w in BAD_WORDS)]
    check(not bad, what + ": no error, unknown record type, exception or invalid batch",
          "\n".join(bad[:20]))


def compare_dumps(kafka, kc, what):
    """Kafka's and kcoord's decoding of the same files, batch for batch and record for record."""
    mism = []
    nb = nr = 0
    for f in sorted(set(kafka) | set(kc)):
        kb = [norm_batch(b) for b in kafka.get(f, {}).get("batches", [])]
        cb = [norm_batch(b) for b in kc.get(f, {}).get("batches", [])]
        if kb != cb:
            diff = [(x, y) for x, y in zip(kb, cb) if x != y][:2]
            mism.append("%s: batches differ (%d vs %d): %s" % (f, len(kb), len(cb), brief(diff)))
        kr = kafka.get(f, {}).get("records", [])
        cr = kc.get(f, {}).get("records", [])
        if kr != cr:
            diff = [(x, y) for x, y in zip(kr, cr) if x != y][:2]
            mism.append("%s: records differ (%d vs %d): %s" % (f, len(kr), len(cr), brief(diff)))
        nb += len(kb)
        nr += len(kr)
    check(not mism, "%s: kcoord dump-log decodes the same %d batches and %d records as "
          "DumpLogSegments (every field)" % (what, nb, nr), "\n".join(mism))
    return nb, nr


def replay(per):
    """The state the decoded records leave: ({(g, t, p): value data or None},
    {group: value data or None}, [all GroupMetadata values in order])."""
    offsets, groups, history = {}, {}, []
    for f in sorted(per):
        for r in per[f]["records"]:
            k = r["key"]
            data = r["payload"]["data"] if r["payload"] is not None else None
            if k["type"] in ("0", "1"):
                kd = k["data"]
                offsets[(kd["group"], kd["topic"], kd["partition"])] = data
            elif k["type"] == "2":
                groups[k["data"]["group"]] = data
                if data is not None:
                    history.append((k["data"]["group"], data))
    return offsets, groups, history


def verify_log(binary, data_dir, what):
    p = subprocess.run([binary, "verify-log", data_dir], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=clean_env())
    check(p.returncode == 0, what + ": kcoord verify-log exits 0",
          "exit %d\n%s%s" % (p.returncode, p.stdout[-3000:], p.stderr[-2000:]))
    return p.stdout


def index_check(data_dir, what):
    """DumpLogSegments on every .index: it checks each entry against the batch it points at."""
    idx = segment_files(data_dir, ".index")
    rc, text, _ = kafka_dump(idx)
    entries = len(re.findall(r"^offset: \d+ position: \d+", text, re.M))
    check(rc == 0 and not [ln for ln in text.splitlines() if any(w in ln for w in BAD_WORDS)],
          "%s: DumpLogSegments checks the %d entries of %d .index files: no mismatch"
          % (what, entries, len(idx)), text[-3000:])
    return entries


# ---- kcoord -> Kafka ----

A_COMMITS = {
    "a-live": {("orders", 0): (42, "meta-0"), ("orders", 1): (7, ""),
               ("events", 1): (3, '{"k":"v"}')},
    "a-simple": {("orders", 2): (100, "simple"), ("events", 0): (1, "")},
    "a-deleted": {("orders", 0): (5, ""), ("orders", 1): (6, "gone")},
    "a-deloff": {("orders", 0): (10, ""), ("orders", 1): (11, ""), ("events", 0): (12, "")},
}
BULK_TP = ("events", 1)
BULK_N = 150
BULK_SEGMENT = 16384
A_LATER = {("orders", 2): (99, "m\u00e9tadonn\u00e9e \u2713")}  # a-live, after the restart


def member_topics(m):
    return sorted(m["subscription"]["topics"])


def assigned_set(m):
    return {(a["topic"], p) for a in m["assignment"]["assignedPartitions"] for p in a["partitions"]}


def kcoord_to_kafka(binary, work):
    section("kcoord -> Kafka: kcoord writes, Kafka's DumpLogSegments reads")
    data = os.path.join(work, "a-data")
    os.makedirs(data)

    kc = Kcoord(binary, data, "offsets.topic.compression.codec=zstd")
    info("kcoord (zstd) on %s, data.dir %s" % (kc.bootstrap, data))
    kcat = Kcat(kc.bootstrap, "a-kcat", ["orders", "events"])
    info("kcat joined a-kcat: %s" % kcat.assigned)
    assigned = join_and_commit(kc.bootstrap, "a-live", ["orders", "events"], A_COMMITS["a-live"])
    check(assigned == {(t, p) for t, n in TOPICS.items() for p in range(n)},
          "kafka-python joined a-live and got every partition", brief(sorted(assigned)))
    for g in ("a-simple", "a-deleted", "a-deloff"):
        simple_commit(kc.bootstrap, g, A_COMMITS[g])
    check(kc.stop() == 0, "kcoord exits 0 on SIGTERM (zstd phase)", kc.output()[-2000:])
    kcat.kill()

    kc = Kcoord(binary, data, "offsets.topic.compression.codec=none",
                "offsets.topic.segment.bytes=%d" % BULK_SEGMENT)
    info("kcoord (no compression, %d-byte segments) on %s, same data.dir"
          % (BULK_SEGMENT, kc.bootstrap))
    simple_commit(kc.bootstrap, "a-live", A_LATER)
    bulk_last = bulk_commit(kc.bootstrap, "a-bulk", BULK_TP, BULK_N)
    out = cgc(kc.bootstrap, "--delete", "--group", "a-deleted")
    check("was successful" in out, "ConsumerGroupCommand --delete a-deleted on kcoord",
          out)
    out = cgc(kc.bootstrap, "--delete-offsets", "--group", "a-deloff", "--topic", "orders:1")
    check("Successful" in out, "ConsumerGroupCommand --delete-offsets a-deloff orders:1 on kcoord",
          out)
    groups = list_groups(kc.bootstrap)
    check(groups == {"a-kcat", "a-live", "a-simple", "a-deloff", "a-bulk"},
          "ConsumerGroupCommand --list on kcoord", brief(sorted(groups)))
    check(kc.stop() == 0, "kcoord exits 0 on SIGTERM (uncompressed phase)", kc.output()[-2000:])
    errors = [ln for ln in kc.output().splitlines() if " ERROR " in ln or " WARN " in ln]
    check(not errors, "kcoord logged no warning or error", "\n".join(errors[:10]))

    logs = [f for f in segment_files(data, ".log") if os.path.getsize(f) > 0]
    check(len(logs) > PARTITIONS, "kcoord wrote %d non-empty segments (rolled at %d bytes)"
          % (len(logs), BULK_SEGMENT), brief(logs))
    rc, text, kdump = kafka_dump(logs)
    check_dump_output(rc, text, logs, "kcoord's segments")
    batches = [b for f in kdump for b in kdump[f]["batches"]]
    codecs = {b.get("compresscodec") for b in batches}
    check(len(batches) > 0 and all(b.get("isvalid") == "true" for b in batches),
          "DumpLogSegments: all %d batches have a valid CRC (isvalid: true)" % len(batches))
    check(codecs == {"zstd", "none"}, "DumpLogSegments: batches of both codecs, zstd and none",
          brief(sorted(codecs)))
    check(all(b.get("magic") == "2" for b in batches), "DumpLogSegments: every batch is magic 2")

    offsets, groups, history = replay(kdump)
    want = {}
    for g, cs in A_COMMITS.items():
        for (t, p), (o, m) in cs.items():
            want[(g, t, p)] = (o, m)
    for (t, p), (o, m) in A_LATER.items():
        want[("a-live", t, p)] = (o, m)
    want[("a-bulk",) + BULK_TP] = bulk_last
    for t, p in A_COMMITS["a-deleted"]:
        del want[("a-deleted", t, p)]
    del want[("a-deloff", "orders", 1)]
    live = {k: (v["offset"], v["metadata"]) for k, v in offsets.items() if v is not None}
    check(live == want, "Kafka decodes exactly the committed offsets and metadata (%d)" % len(want),
          "decoded %s\nwant    %s" % (brief(sorted(live.items())), brief(sorted(want.items()))))
    dead = sorted(k for k, v in offsets.items() if v is None)
    want_dead = sorted([("a-deleted", "orders", 0), ("a-deleted", "orders", 1),
                        ("a-deloff", "orders", 1)])
    check(dead == want_dead, "Kafka decodes the offset tombstones of --delete and "
          "--delete-offsets", brief(dead))
    check("a-deleted" in groups and groups["a-deleted"] is None,
          "Kafka decodes a GroupMetadata tombstone for the deleted group a-deleted",
          brief(groups.get("a-deleted", "no record")))

    # a-live: a generation with the kafka-python member, then Empty after it left.
    lv = [d for g, d in history if g == "a-live"]
    with_member = [d for d in lv if d["members"]]
    ok = bool(with_member)
    if ok:
        d = with_member[-1]
        m = d["members"][0]
        ok = (d["protocolType"] == "consumer" and d["protocol"] == "range" and
              len(d["members"]) == 1 and d["leader"] == m["memberId"] and
              m["clientId"].startswith("kafka-python") and
              member_topics(m) == ["events", "orders"] and
              assigned_set(m) == {(t, p) for t, n in TOPICS.items() for p in range(n)})
    check(ok, "a-live GroupMetadata: protocol type consumer, range, its member with clientId, "
          "subscription and assignment", brief(lv))
    fin = groups.get("a-live")
    check(fin is not None and fin["protocolType"] == "consumer" and fin["members"] == [] and
          with_member and fin["generation"] == with_member[-1]["generation"] + 1,
          "a-live's last GroupMetadata: Empty (no members) one generation after the member left",
          brief(fin))
    fk = groups.get("a-kcat")
    ok = fk is not None and fk["protocolType"] == "consumer" and len(fk["members"]) == 1
    if ok:
        m = fk["members"][0]
        ok = (m["clientId"] == "rdkafka" and m["sessionTimeout"] == SESSION_MS and
              member_topics(m) == ["events", "orders"] and fk["leader"] == m["memberId"] and
              assigned_set(m) == {(t, p) for t, n in TOPICS.items() for p in range(n)})
    check(ok, "a-kcat's last GroupMetadata: protocol type consumer, the kcat member (rdkafka, "
          "session timeout, subscription, assignment)", brief(fk))

    cdump = kcoord_dump(binary, logs, "kcoord's segments")
    compare_dumps(kdump, cdump, "kcoord's segments")
    n = index_check(data, "kcoord's indexes")
    check(n > 0, "kcoord's indexes have entries (%d) for DumpLogSegments to check" % n)
    verify_log(binary, data, "kcoord's data.dir")


# ---- Kafka -> kcoord ----

# A live KIP-848 member's assignment names topics by Kafka's topic ids, which are random per
# cluster; kcoord's are a hash of its own cluster id and the name, so it cannot resolve them
# (the offset commits of Kafka 4.1+ carry the (id, name) pairs it would need).
KIP848_TOPIC_IDS = ("a KIP-848 member loaded from Kafka's log keeps Kafka's topic ids, unknown "
                    "to kcoord's catalog, so its assignment reads as empty")


def split_group(rows, group):
    """Removes the rows of `group` from `rows` (keyed by tuples starting with the group) and
    returns them."""
    out = {k: v for k, v in rows.items() if k[0] == group}
    for k in out:
        del rows[k]
    return out


B_LIVE = {("orders", 0): (11, "from-kafka"), ("events", 1): (4, "m\u00e9ta \u2713"),
          ("orders", 2): (6, "")}


def kafka_to_kcoord(binary, work):
    section("Kafka -> kcoord: Kafka writes, kcoord loads and serves")
    kdir = os.path.join(work, "kafka")
    t0 = time.monotonic()
    KAFKA_STATE["running"] = True
    kafka_ref("start", "--partitions", str(PARTITIONS), "--initial-delay", "0", "--dir", kdir)
    env = dict(re.findall(r"^(KAFKA_REF_\w+)=(.*)$", kafka_ref("env").stdout, re.M))
    boot = env["KAFKA_REF_BOOTSTRAP"]
    kdata = env["KAFKA_REF_DATA"].strip("'")
    info("Kafka %s on %s (started in %.1f s)" % (env["KAFKA_REF_VERSION"], boot,
                                                  time.monotonic() - t0))

    for t, n in TOPICS.items():
        p = run_class("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", boot,
                      "--create", "--topic", t, "--partitions", str(n),
                      "--replication-factor", "1")
        if p.returncode != 0:
            raise StepError("TopicCommand --create %s failed:\n%s%s" % (t, p.stdout, p.stderr))
    prod = KafkaProducer(bootstrap_servers=boot, api_version_auto_timeout_ms=10000)
    try:
        for t, n in TOPICS.items():
            for part in range(n):
                for i in range(20):
                    prod.send(t, value=b"r%d" % i, partition=part)
        prod.flush(CLIENT_S)
    finally:
        prod.close()

    join_and_commit(boot, "b-live", ["orders", "events"], B_LIVE)
    kcat = Kcat(boot, "b-kcat", ["orders", "events"])
    info("kcat joined b-kcat on Kafka: %s" % kcat.assigned)
    cgc(boot, "--reset-offsets", "--group", "b-reset", "--topic", "orders", "--to-offset", "9",
        "--execute")
    cgc(boot, "--reset-offsets", "--group", "b-reset", "--topic", "events:1", "--to-offset", "17",
        "--execute")
    cgc(boot, "--reset-offsets", "--group", "b-deloff", "--topic", "orders:0,1", "--to-offset",
        "5", "--execute")
    cgc(boot, "--delete-offsets", "--group", "b-deloff", "--topic", "orders:1")
    cgc(boot, "--reset-offsets", "--group", "b-deleted", "--topic", "events", "--to-earliest",
        "--execute")
    cgc(boot, "--delete", "--group", "b-deleted")
    # A KIP-848 group (group.protocol=consumer): Kafka writes ConsumerGroup* records (types
    # 3-8) for it, which kcoord must load as well.
    info("Kafka groups b-live, b-kcat, b-reset, b-deloff, b-deleted done")
    p = run_class("org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", boot,
                  "--topic", "orders", "--group-id", "b-848", "--group-protocol", "consumer",
                  "--reset-policy", "earliest", "--max-messages", "45")
    if p.returncode != 0 or '"offsets_committed"' not in p.stdout:
        raise StepError("VerifiableConsumer (group.protocol=consumer) failed (exit %d):\n%s%s"
                        % (p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    # And one whose member is still in the group when Kafka stops.
    live848 = LiveConsumer(boot, "b-848-live", "events")
    info("VerifiableConsumer joined b-848-live (group.protocol=consumer)")

    ref_groups = list_groups(boot)
    ref_offsets = describe_offsets(boot)
    ref_state = describe_state(boot)
    ref_members = describe_members(boot)
    ref_fetch = fetch_offsets(boot, sorted(ref_groups | {"b-deleted"}))
    info("Kafka reports groups %s" % sorted(ref_groups))
    check(ref_groups == {"b-live", "b-kcat", "b-reset", "b-deloff", "b-848", "b-848-live"},
          "Kafka's own view is the scenario's (sanity)", brief(sorted(ref_groups)))
    check(ref_fetch["b-live"] == B_LIVE, "Kafka's OffsetFetch of b-live has the metadata "
          "(sanity)", brief(sorted(ref_fetch["b-live"].items())))

    kafka_ref("stop", "--keep")
    KAFKA_STATE["running"] = False
    info("Kafka stopped")
    live848.kill()
    kcat.kill()

    data = os.path.join(work, "b-data")
    os.makedirs(data)
    copied = []
    for d in sorted(os.listdir(kdata)):
        if d.startswith("__consumer_offsets-"):
            shutil.copytree(os.path.join(kdata, d), os.path.join(data, d))
            copied.append(d)
    extras = sorted({f.split(".")[-1] if "." in f else f for d in copied
                     for f in os.listdir(os.path.join(data, d))})
    check(len(copied) == PARTITIONS, "copied Kafka's %d __consumer_offsets directories (files: %s)"
          % (len(copied), ", ".join(extras)))
    verify_log(binary, data, "Kafka's __consumer_offsets")
    logs = [f for f in segment_files(data, ".log") if os.path.getsize(f) > 0]
    rc, text, kdump = kafka_dump(logs)
    check_dump_output(rc, text, logs, "Kafka's segments")
    types = {r["key"]["type"] for f in kdump for r in kdump[f]["records"]}
    check({"1", "2", "3", "5", "6", "7", "8"} <= types,
          "Kafka's segments hold offset, classic group and KIP-848 group records (types %s)"
          % ",".join(sorted(types, key=int)))
    cdump = kcoord_dump(binary, logs, "Kafka's segments")
    compare_dumps(kdump, cdump, "Kafka's segments")

    kc = Kcoord(binary, data)
    info("kcoord on %s loaded Kafka's directories" % kc.bootstrap)
    got_groups = list_groups(kc.bootstrap)
    check(got_groups == ref_groups, "kcoord --list equals Kafka's (%d groups)" % len(ref_groups),
          "kcoord %s\nKafka  %s" % (sorted(got_groups), sorted(ref_groups)))
    got_offsets = describe_offsets(kc.bootstrap)
    live, ref_live = split_group(got_offsets, "b-848-live"), split_group(ref_offsets, "b-848-live")
    check(got_offsets == ref_offsets,
          "kcoord --describe --offsets equals Kafka's: %d rows (group, topic, partition, "
          "committed offset, consumer id, host, client id)" % len(ref_offsets),
          "kcoord %s\nKafka  %s" % (brief(sorted(got_offsets.items()), 2000),
                                    brief(sorted(ref_offsets.items()), 2000)))
    known_gap(live == ref_live, "kcoord --describe --offsets of b-848-live equals Kafka's",
              KIP848_TOPIC_IDS, "kcoord %s\nKafka  %s" % (brief(sorted(live.items())),
                                                          brief(sorted(ref_live.items()))))
    got_state = describe_state(kc.bootstrap)
    check(got_state == ref_state, "kcoord --describe --state equals Kafka's (assignment "
          "strategy, state, members), the KIP-848 group b-848 included",
          "kcoord %s\nKafka  %s" % (got_state, ref_state))
    got_members = describe_members(kc.bootstrap)
    live, ref_live = split_group(got_members, "b-848-live"), split_group(ref_members, "b-848-live")
    check(got_members == ref_members, "kcoord --describe --members --verbose equals Kafka's",
          "kcoord %s\nKafka  %s" % (got_members, ref_members))
    known_gap(live == ref_live, "kcoord --describe --members --verbose of b-848-live equals "
              "Kafka's", KIP848_TOPIC_IDS, "kcoord %s\nKafka  %s" % (live, ref_live))
    got_fetch = fetch_offsets(kc.bootstrap, sorted(ref_groups | {"b-deleted"}))
    check(got_fetch == ref_fetch, "kcoord OffsetFetch (offsets and metadata) equals Kafka's for "
          "every group, the deleted one included",
          "kcoord %s\nKafka  %s" % (brief(got_fetch, 2000), brief(ref_fetch, 2000)))

    # kcoord appends to the segments Kafka wrote; Kafka's tool must still read them.
    simple_commit(kc.bootstrap, "b-reset", {("orders", 2): (15, "kcoord-after-kafka")})
    cgc(kc.bootstrap, "--delete", "--group", "b-live")
    check(kc.stop() == 0, "kcoord exits 0 on SIGTERM", kc.output()[-2000:])
    errors = [ln for ln in kc.output().splitlines() if " ERROR " in ln or " WARN " in ln]
    check(not errors, "kcoord logged no warning or error on Kafka's directories",
          "\n".join(errors[:10]))
    logs = [f for f in segment_files(data, ".log") if os.path.getsize(f) > 0]
    rc, text, kdump = kafka_dump(logs)
    check_dump_output(rc, text, logs, "Kafka's segments with kcoord's appends")
    offsets, groups, _ = replay(kdump)
    v = offsets.get(("b-reset", "orders", 2))
    check(v is not None and v["offset"] == 15 and v["metadata"] == "kcoord-after-kafka",
          "DumpLogSegments decodes kcoord's commit appended after Kafka's records", brief(v))
    check("b-live" in groups and groups["b-live"] is None and
          all(v is None for k, v in offsets.items() if k[0] == "b-live"),
          "DumpLogSegments decodes kcoord's tombstones for b-live")
    compare_dumps(kdump, kcoord_dump(binary, logs, "mixed segments"), "mixed segments")
    index_check(data, "mixed indexes")
    verify_log(binary, data, "mixed data.dir")

    kc = Kcoord(binary, data)
    got = list_groups(kc.bootstrap)
    want = ref_groups - {"b-live"}
    check(got == want, "restarted kcoord lists the groups but b-live", brief(sorted(got)))
    f = fetch_offsets(kc.bootstrap, ["b-reset"])["b-reset"]
    check(f.get(("orders", 2)) == (15, "kcoord-after-kafka"),
          "restarted kcoord returns its own commit over Kafka's", brief(sorted(f.items())))
    check(kc.stop() == 0, "kcoord exits 0 on SIGTERM")


def main(argv):
    ap = argparse.ArgumentParser(prog="log-interop", description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build", help="build directory (default build)")
    ap.add_argument("--only", choices=["kcoord-to-kafka", "kafka-to-kcoord"])
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)
    binary = os.environ.get("KC_TEST_BIN") or os.path.join(args.build, "kcoord")
    binary = os.path.abspath(binary)
    if not os.access(binary, os.X_OK):
        print("log-interop: %s not found; run make first" % binary, file=sys.stderr)
        return 2
    for tool in ("kcat", "java", "mvn"):
        if shutil.which(tool) is None:
            print("log-interop: %s not found (scripts/deps installs it)" % tool, file=sys.stderr)
            return 1

    def on_signal(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, on_signal)
    work = tempfile.mkdtemp(prefix="kc-interop-")
    KAFKA_STATE["dir"] = os.path.join(work, "kafka-ref-state")
    t0 = time.monotonic()
    rc = 1
    try:
        p = kafka_ref("fetch")
        info("Kafka jars: %s" % p.stdout.strip())
        if args.only in (None, "kcoord-to-kafka"):
            kcoord_to_kafka(binary, work)
        if args.only in (None, "kafka-to-kcoord"):
            kafka_to_kcoord(binary, work)
        rc = 0 if FAILED == 0 else 1
    except StepError as e:
        check(False, "step failed", str(e))
    except subprocess.TimeoutExpired as e:
        check(False, "step timed out", str(e))
    except KeyboardInterrupt:
        print("\nlog-interop: interrupted", file=sys.stderr)
        rc = 130
    except Exception:  # a bug here or a client library surprise: still clean up
        import traceback
        check(False, "step raised", traceback.format_exc())
    finally:
        cleanup()
        if args.keep:
            print("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\nlog-interop: %.1f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (PASSED, FAILED))
    if KNOWN:
        print("%d known gaps (the KNOWN lines)" % KNOWN)
    return rc if FAILED == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
