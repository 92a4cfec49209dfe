#!/usr/bin/python3
"""test_obs: the HTTP listener of a real kcoord (metrics.listener): /metrics, /readyz,
/healthz and /v1/groups, driven by real librdkafka clients (confluent-kafka, Debian's
python3-confluent-kafka).

Each test starts build/kcoord (or $KC_TEST_BIN) with listeners=127.0.0.1:0 and
metrics.listener=127.0.0.1:0 in its own temporary data directory, reads both ports from its
log, and stops it with SIGTERM, requiring exit status 0. Every client process a test starts is
killed before the test ends.

- /metrics is checked by a strict parser of the Prometheus text format 0.0.4 (below), and its
  request, error-free commit and connection counters move after an OffsetCommit from a real
  client.
- /readyz is 503 while the partitions load and 200 after: the test writes, before starting
  kcoord, a __consumer_offsets-0 log of a few million OffsetCommit records (zstd batches made
  here, compressed with the system's libzstd through ctypes) so that loading takes a while, and
  polls until it has seen 503 and then 200.
- A classic group member killed with SIGKILL shows up in /v1/groups/<id> as a rebalance with
  cause "session_timeout" and its member id, while a second member stays.
- The listener's bounds: with 30 000 groups (a log written before start), 100 concurrent
  GET /v1/groups read slowly leave kcoord's RSS under a budget, a Kafka request and an offset
  commit on other connections are still answered, every list that was served is whole, and the
  connections beyond metrics.max.connections get 503; a 1 MB request head gets 431 (not a
  reset); a client that sends nothing is closed after metrics.request.timeout.ms.
"""
import ctypes
import ctypes.util
import http.client
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import gen_wire, kcoord, wire  # noqa: E402
from tests.support.kcoord import partition_for  # noqa: E402

TOPIC = "t"
WAIT_S = 40

try:
    import confluent_kafka  # noqa: F401
    from confluent_kafka import Consumer, TopicPartition
except ImportError:
    sys.exit("test_obs: FAILED: confluent-kafka is needed (Debian: python3-confluent-kafka)")


def start_kcoord(data_dir, *sets, wait_loaded=True):
    """The daemon with its metrics listener on a free port, logging at debug."""
    return kcoord.Kcoord(data_dir, "metrics.listener=127.0.0.1:0", "log.level=debug",
                         "topics=%s:4" % TOPIC, *sets, wait_loaded=wait_loaded, timeout=20)


# ---- A strict parser of the Prometheus text format 0.0.4 ---------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(r"^(%s)(\{(?:%s(?:,%s)*)?\})? (\S+)$" % (NAME, LABEL, LABEL))


def parse_value(s):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.match(r"^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$", s):
        raise ValueError("bad value %r" % s)
    return float(s)


def parse_exposition(text):
    """{(name, frozenset(labels.items())): value}, after checking every rule we rely on."""
    if not text.endswith("\n"):
        raise ValueError("the page does not end with a newline")
    types, helps, samples = {}, set(), {}
    hist = {}  # (family, labels without le) -> [(le, count)]
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if not re.match("^%s$" % NAME, name) or name in helps:
                raise ValueError("bad or repeated HELP: %r" % line)
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram"):
                raise ValueError("bad TYPE: %r" % line)
            if parts[2] in types:
                raise ValueError("family typed twice: %r" % line)
            if parts[3] == "counter" and not parts[2].endswith("_total"):
                raise ValueError("counter not ending in _total: %r" % line)
            types[parts[2]] = parts[3]
            continue
        if line.startswith("#") or line == "":
            raise ValueError("unexpected line %r" % line)
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("bad sample line %r" % line)
        name, labels, value = m.group(1), m.group(2) or "", parse_value(m.groups()[-1])
        pairs = re.findall(LABEL, labels)
        if len(set(k for k, _ in pairs)) != len(pairs):
            raise ValueError("repeated label in %r" % line)
        lab = {k: v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
               for k, v in pairs}
        family = name
        if name not in types:
            for sfx in ("_bucket", "_sum", "_count"):
                if name.endswith(sfx) and types.get(name[:-len(sfx)]) == "histogram":
                    family = name[:-len(sfx)]
        if family not in types:
            raise ValueError("sample before its TYPE line: %r" % line)
        if types[family] == "histogram":
            rest = frozenset((k, v) for k, v in lab.items() if k != "le")
            if name.endswith("_bucket"):
                if "le" not in lab:
                    raise ValueError("bucket without le: %r" % line)
                hist.setdefault((family, rest), []).append((parse_value(lab["le"]), value))
            elif name.endswith("_count"):
                b = hist.get((family, rest))
                if not b or b[-1][0] != math.inf or b[-1][1] != value:
                    raise ValueError("_count not equal to the +Inf bucket: %r" % line)
        key = (name, frozenset(lab.items()))
        if key in samples:
            raise ValueError("repeated series %r" % line)
        samples[key] = value
    for (family, _), buckets in hist.items():
        les = [le for le, _ in buckets]
        counts = [c for _, c in buckets]
        if les != sorted(les) or les[-1] != math.inf or counts != sorted(counts):
            raise ValueError("histogram %s: buckets not increasing or no +Inf" % family)
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def wait_until(what, cond, timeout=WAIT_S, step=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(step)


# ---- A big log, so that loading takes a while ----------------------------------------------------

def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(v):
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7


def zstd_compress(data):
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t, ctypes.c_int]
    lib.ZSTD_isError.restype = ctypes.c_uint
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    cap = lib.ZSTD_compressBound(len(data))
    dst = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(dst, cap, data, len(data), 3)
    if lib.ZSTD_isError(n):
        raise RuntimeError("ZSTD_compress failed")
    return dst.raw[:n]


def commit_key(group, topic, partition):
    """An OffsetCommit record's key: record type 1, then OffsetCommitKey (proto/records.kdef)."""
    return wire.i16(1) + gen_wire.encode_offset_commit_key(1, group=group, topic=topic,
                                                            partition=partition)


def commit_value(offset, ts):
    """An OffsetCommit record's value: version 3 (no leader epoch, empty metadata)."""
    return wire.i16(3) + gen_wire.encode_offset_commit_value(3, offset=offset, metadata="",
                                                              commit_timestamp=ts)


def write_big_log(data_dir, batches, per_batch):
    """__consumer_offsets-0 with batches x per_batch OffsetCommit records (group "load", topic
    t, 100 partitions); one zstd batch repeated at increasing base offsets (the CRC does not
    cover the base offset)."""
    ts = int(time.time() * 1000)
    recs = bytearray()
    for i in range(per_batch):
        key = commit_key("load", "t", i % 100)
        val = commit_value(i, ts)
        body = b"\x00" + varint(0) + varint(i) + varint(len(key)) + key + varint(len(val)) + \
            val + varint(0)
        recs += varint(len(body)) + body
    payload = zstd_compress(bytes(recs))
    after_crc = struct.pack(">hiqqqhii", 4, per_batch - 1, ts, ts, -1, -1, -1, per_batch) + \
        payload
    crc = crc32c(after_crc)
    d = os.path.join(data_dir, "__consumer_offsets-0")
    os.makedirs(d)
    with open(os.path.join(d, "%020d.log" % 0), "wb") as f:
        for b in range(batches):
            head = struct.pack(">qiibI", b * per_batch, 4 + 1 + 4 + len(after_crc), 0, 2, crc)
            f.write(head + after_crc)


def write_many_groups(data_dir, ids, partitions=50):
    """One uncompressed batch of OffsetCommit records (topic t, partition 0) per
    __consumer_offsets partition, one record per group id: on load, each id is a group."""
    ts = int(time.time() * 1000)
    by_part = {}
    for gid in ids:
        by_part.setdefault(partition_for(gid, partitions), []).append(gid)
    for part in range(partitions):
        d = os.path.join(data_dir, "__consumer_offsets-%d" % part)
        os.makedirs(d)
        gids = by_part.get(part, [])
        with open(os.path.join(d, "%020d.log" % 0), "wb") as f:
            if not gids:
                continue
            recs = bytearray()
            for i, g in enumerate(gids):
                key = commit_key(g, "t", 0)
                val = commit_value(i, ts)
                body = b"\x00" + varint(0) + varint(i) + varint(len(key)) + key + \
                    varint(len(val)) + val + varint(0)
                recs += varint(len(body)) + body
            after_crc = struct.pack(">hiqqqhii", 0, len(gids) - 1, ts, ts, -1, -1, -1,
                                    len(gids)) + bytes(recs)
            head = struct.pack(">qiibI", 0, 4 + 1 + 4 + len(after_crc), 0, 2,
                               crc32c(after_crc))
            f.write(head + after_crc)


def api_versions(port, timeout=WAIT_S):
    """An ApiVersions v0 request on a new connection: the error code of its answer."""
    return wire.ask(port, "test", "ApiVersions", 0, timeout=timeout).error_code


def dechunk(data):
    """The body of a chunked HTTP answer, checking the framing."""
    out, i = bytearray(), 0
    while True:
        j = data.index(b"\r\n", i)
        size = int(data[i:j], 16)
        i = j + 2
        if size == 0:
            if data[i:] != b"\r\n":
                raise ValueError("bytes after the last chunk")
            return bytes(out)
        out += data[i:i + size]
        if data[i + size:i + size + 2] != b"\r\n":
            raise ValueError("a chunk without its CRLF")
        i += size + 2


CONSUMER = r"""
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "client.id": sys.argv[3], "session.timeout.ms": 2000,
              "heartbeat.interval.ms": 200, "enable.auto.commit": False})
c.subscribe([sys.argv[4]])
while True:
    c.poll(0.1)
"""


class ObsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-obs-")
        self.kc = None
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        rc = self.kc.stop() if self.kc else 0
        if rc != 0 or os.environ.get("KC_TEST_VERBOSE"):
            sys.stderr.write(self.kc.output()[-20000:])
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertEqual(rc, 0, "kcoord did not exit cleanly")

    def start(self, *sets, wait_loaded=True):
        self.kc = start_kcoord(os.path.join(self.dir, "data"), *sets, wait_loaded=wait_loaded)
        return self.kc

    def test_metrics_parse_and_count_requests(self):
        kc = self.start()
        st, ctype, body = kc.get("/healthz")
        self.assertEqual((st, body), (200, "ok\n"))
        st, ctype, body = kc.get("/metrics")
        self.assertEqual(st, 200)
        self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8")
        before = parse_exposition(body)
        self.assertEqual(value(before, "kcoord_partitions"), 50)
        self.assertEqual(value(before, "kcoord_partitions_loading"), 0)

        c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % kc.port, "group.id": "obs-g",
                      "enable.auto.commit": False})
        try:
            c.commit(offsets=[TopicPartition(TOPIC, 0, 5), TopicPartition(TOPIC, 1, 7)],
                     asynchronous=False)
            got = c.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)],
                              timeout=WAIT_S)
            self.assertEqual(sorted(tp.offset for tp in got), [5, 7])
            st, _, body = kc.get("/metrics")
            after = parse_exposition(body)
        finally:
            c.close()

        def moved(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)

        api_versions = sum(v for (n, l), v in after.items()
                           if n == "kcoord_requests_total" and ("api", "ApiVersions") in l)
        self.assertGreaterEqual(api_versions, 1)
        commits = sum(v for (n, l), v in after.items()
                      if n == "kcoord_requests_total" and ("api", "OffsetCommit") in l)
        self.assertGreaterEqual(commits, 1)
        self.assertGreaterEqual(moved("kcoord_offset_commits_total"), 1)
        self.assertEqual(moved("kcoord_offsets_committed_total"), 2)
        self.assertGreaterEqual(moved("kcoord_connections_accepted_total"), 1)
        self.assertGreaterEqual(moved("kcoord_log_append_bytes_total"), 1)
        self.assertGreaterEqual(moved("kcoord_log_fsync_duration_seconds_count"), 1)
        self.assertGreaterEqual(
            value(after, "kcoord_request_duration_seconds_count", api="OffsetCommit"), 1)
        self.assertEqual(value(after, "kcoord_groups", type="classic", state="Empty"), 1)

        # The group list and the group itself, by a percent-encoded id.
        st, ctype, body = kc.get("/v1/groups")
        self.assertEqual((st, ctype), (200, "application/json"))
        groups = json.loads(body)
        self.assertIn("obs-g", [g["group_id"] for g in groups])
        st, _, body = kc.get("/v1/groups/" + urllib.parse.quote("obs-g", safe=""))
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(body)["group_id"], "obs-g")
        st, _, body = kc.get("/v1/groups/no%20such%22group")
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body), {"error": "no such group",
                                            "group_id": 'no such"group'})
        st, _, _ = kc.get("/v1/groups/bad%zz")
        self.assertEqual(st, 400)
        self.assertEqual(kc.get("/nope")[0], 404)

    def test_readyz_while_loading(self):
        write_big_log(os.path.join(self.dir, "data"), 300, 10000)
        kc = self.start("offsets.topic.num.partitions=1", wait_loaded=False)
        seen = []

        def poll():
            st, _, body = kc.get("/readyz")
            if not seen or seen[-1][0] != st:
                seen.append((st, body))
            return st == 200

        wait_until("readyz 200", poll, timeout=120, step=0.01)
        self.assertEqual(seen[0][0], 503, "loading was never observed: %r" % seen)
        self.assertIn("1 of 1 partitions loading", seen[0][1])
        self.assertEqual([s for s, _ in seen], [503, 200])
        st, _, body = kc.get("/metrics")
        m = parse_exposition(body)
        self.assertEqual(value(m, "kcoord_partition_state", partition="0"), 1)
        self.assertGreater(value(m, "kcoord_partition_load_seconds", partition="0"), 0)
        self.assertGreater(value(m, "kcoord_log_bytes", partition="0"), 0)
        self.assertEqual(value(m, "kcoord_log_segments", partition="0"), 1)

    def test_killed_member_session_timeout_in_history(self):
        kc = self.start("group.min.session.timeout.ms=1000",
                        "group.initial.rebalance.delay.ms=0")
        boot = "127.0.0.1:%d" % kc.port
        for name in ("survivor", "victim"):
            self.procs.append(subprocess.Popen(
                [sys.executable, "-c", CONSUMER, boot, "obs-kill", name, TOPIC],
                stdin=subprocess.DEVNULL))
        victim = self.procs[1]

        def stable_with_both():
            st, _, body = kc.get("/v1/groups/obs-kill")
            if st != 200:
                return None
            g = json.loads(body)
            ids = {m["client_id"]: m["member_id"] for m in g["members"]}
            if g["state"] == "Stable" and set(ids) == {"survivor", "victim"}:
                return g, ids
            return None

        g, ids = wait_until("a Stable group with both members", stable_with_both)
        victim_id = ids["victim"]
        self.assertEqual(g["protocol_type"], "consumer")
        assigned = sorted(p for m in g["members"] for ps in m["assignment"].values() for p in ps)
        self.assertEqual(assigned, [0, 1, 2, 3])
        victim.kill()
        victim.wait()

        def timed_out():
            st, _, body = kc.get("/v1/groups/obs-kill")
            g = json.loads(body)
            for rb in g["rebalances"]:
                if rb["cause"] == "session_timeout" and rb["member_id"] == victim_id:
                    return g
            return None

        g = wait_until("a session_timeout rebalance of the victim", timed_out)
        self.assertEqual([m["client_id"] for m in g["members"]], ["survivor"])
        st, _, body = kc.get("/metrics")
        m = parse_exposition(body)
        self.assertGreaterEqual(value(m, "kcoord_rebalances_total", cause="session_timeout"), 1)
        self.assertGreaterEqual(value(m, "kcoord_rebalance_join_phase_seconds_count"), 1)


class HttpBoundsTest(unittest.TestCase):
    N_GROUPS = 30000
    N_CLIENTS = 100
    RSS_BUDGET_KB = 64 * 1024  # growth allowed while the slow readers are connected

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-obs-")
        self.kc = None
        self.socks = []

    def tearDown(self):
        for s in self.socks:
            s.close()
        rc = self.kc.stop() if self.kc else 0
        if rc != 0 or os.environ.get("KC_TEST_VERBOSE"):
            sys.stderr.write(self.kc.output()[-20000:])
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertEqual(rc, 0, "kcoord did not exit cleanly")

    def connect(self, rcvbuf=None):
        import socket
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(WAIT_S)
        s.connect(("127.0.0.1", self.kc.http_port))
        self.socks.append(s)
        return s

    def test_many_slow_group_lists(self):
        ids = ["grp-%05d" % i for i in range(self.N_GROUPS)]
        data = os.path.join(self.dir, "data")
        write_many_groups(data, ids)
        kc = self.kc = start_kcoord(data, "metrics.request.timeout.ms=120000")
        st, ctype, body = kc.get("/v1/groups")
        self.assertEqual((st, ctype), (200, "application/json"))
        listed = json.loads(body)
        self.assertEqual(sorted(g["group_id"] for g in listed), ids)
        # urllib reads the chunked answer too, and pages cover the same list.
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d/v1/groups?limit=5" % kc.http_port,
                                    timeout=WAIT_S) as r:
            page = json.loads(r.read())
        self.assertEqual(page, listed[:5])
        st, _, body = kc.get("/v1/groups?limit=5&after=" +
                             urllib.parse.quote(page[-1]["group_id"], safe=""))
        self.assertEqual(json.loads(body), listed[5:10])
        base = kc.rss_kb()

        # 100 clients ask for the list and read a few bytes each, slowly.
        for _ in range(self.N_CLIENTS):
            s = self.connect(rcvbuf=4096)
            s.sendall(b"GET /v1/groups HTTP/1.1\r\nHost: x\r\n\r\n")
        heads = []
        for s in self.socks:
            got = b""
            while b"\r\n\r\n" not in got:
                try:
                    d = s.recv(512)
                except ConnectionResetError:  # beyond twice the cap: closed at once
                    got = b""
                    break
                if not d:
                    break
                got += d
            heads.append(got)
        served = [i for i, h in enumerate(heads) if h.startswith(b"HTTP/1.1 200 ")]
        refused = [i for i, h in enumerate(heads) if h.startswith(b"HTTP/1.1 503 ")]
        self.assertEqual(len(served), 16, [h[:40] for h in heads])  # metrics.max.connections
        self.assertEqual(len(served) + len(refused) + heads.count(b""), self.N_CLIENTS)
        self.assertGreater(len(refused), 0)

        # While they hold their lists, the Kafka listener answers, and a commit is acknowledged.
        self.assertEqual(api_versions(kc.port), 0)
        c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % kc.port, "group.id": "grp-00007",
                      "enable.auto.commit": False})
        try:
            c.commit(offsets=[TopicPartition(TOPIC, 0, 42)], asynchronous=False)
            got = c.committed([TopicPartition(TOPIC, 0)], timeout=WAIT_S)
            self.assertEqual(got[0].offset, 42)
        finally:
            c.close()
        grown = kc.rss_kb() - base
        self.assertLess(grown, self.RSS_BUDGET_KB, "RSS grew by %d kB" % grown)

        # Each served list is whole: read the rest.
        for i in served:
            s = self.socks[i]
            data = heads[i]
            while True:
                d = s.recv(1 << 16)
                if not d:
                    break
                data += d
            head, _, rest = data.partition(b"\r\n\r\n")
            self.assertIn(b"\r\nTransfer-Encoding: chunked\r\n", head + b"\r\n")
            groups = json.loads(dechunk(rest))
            self.assertEqual(len(groups), self.N_GROUPS)
        grown = kc.rss_kb() - base
        self.assertLess(grown, self.RSS_BUDGET_KB, "RSS grew by %d kB" % grown)
        for s in self.socks:
            s.close()
        self.socks = []
        st, _, body = kc.get("/metrics")
        m = parse_exposition(body)
        self.assertGreaterEqual(value(m, "kcoord_http_connections_refused_total"), len(refused))
        self.assertGreater(value(m, "kcoord_http_response_bytes_total"),
                           len(served) * self.N_GROUPS * 100)

    def test_big_head_and_silent_client(self):
        kc = self.kc = start_kcoord(os.path.join(self.dir, "data"),
                                    "metrics.request.timeout.ms=300")
        # A 1 MB header: the answer is 431, read whole, never a reset.
        c = http.client.HTTPConnection("127.0.0.1", kc.http_port, timeout=WAIT_S)
        try:
            c.putrequest("GET", "/metrics")
            c.putheader("X-Big", "a" * (1 << 20))
            c.endheaders()
            r = c.getresponse()
            self.assertEqual((r.status, r.read()), (431, b"request head too large\n"))
        finally:
            c.close()
        # A client that sends nothing, or half a head, is closed without an answer.
        for req in (b"", b"GET /metrics HTTP/1.1\r\n"):
            s = self.connect()
            s.sendall(req)
            self.assertEqual(s.recv(100), b"")
        st, _, body = kc.get("/metrics")
        m = parse_exposition(body)
        self.assertEqual(value(m, "kcoord_http_timeouts_total"), 2)
        self.assertEqual(value(m, "kcoord_http_requests_total", code="431"), 1)


class SettingTest(unittest.TestCase):
    def run_kcoord(self, *sets):
        d = tempfile.mkdtemp(prefix="kc-obs-")
        try:
            p = subprocess.run(kcoord.args(d, *sets), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=kcoord.quiet_env(), timeout=30)
            return p.returncode, p.stderr.decode(errors="replace")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_bad_value_stops_start_up(self):
        rc, err = self.run_kcoord("metrics.listener=nonsense")
        self.assertEqual(rc, 2)
        self.assertIn('metrics.listener: "nonsense"', err)

    def test_listen_failure_stops_start_up(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        try:
            rc, err = self.run_kcoord("metrics.listener=127.0.0.1:%d" % s.getsockname()[1])
        finally:
            s.close()
        self.assertEqual(rc, 1)
        self.assertIn("metrics.listener: cannot listen on 127.0.0.1:", err)

    def test_busy_default_address_only_warns(self):
        import socket
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", 9404))  # the default; if someone else holds it, so much the better
            s.listen(1)
        except OSError:
            pass
        d = tempfile.mkdtemp(prefix="kc-obs-")
        kc = None
        try:
            kc = kcoord.Kcoord(d, wait_port=False, wait_loaded=False)
            kc.wait_line("serving no metrics", 20)
            kc.wait_line("partitions loaded", 20)
            self.assertEqual(kc.stop(timeout=20), 0)
        finally:
            if kc is not None:
                kc.kill()
            s.close()
            shutil.rmtree(d, ignore_errors=True)
        log = kc.output()
        self.assertIn("metrics.listener: cannot listen on the default 127.0.0.1:9404", log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
