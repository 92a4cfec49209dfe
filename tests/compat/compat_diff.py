#!/usr/bin/env python3
"""compat-diff: the differential check: one fixed sequence of raw requests to kcoord and to a
reference Apache Kafka broker, responses decoded and compared field by field.

    tests/compat/compat_diff.py --kcoord HOST:PORT --kafka HOST:PORT [--json OUT] [--justified FILE]
                        [--run-id ID] [--timeout S] [--verbose]

--kafka defaults to $KAFKA_REF_BOOTSTRAP, else to the broker `scripts/kafka-ref env` reports.
For example:

    scripts/kafka-ref start --initial-delay 0
    build/kcoord --set listeners=127.0.0.1:0 --set data.dir=$(mktemp -d) \\
                 --set group.initial.rebalance.delay.ms=0          # logs "listening on ..."
    tests/compat/compat_diff.py --kcoord 127.0.0.1:PORT --json diff.json

The codec is independent of kcoord's: kafka-python's schema-driven message classes (it vendors
Kafka 4.x message schemas), which encode any request at any version and decode responses into
fields. Requests go over plain TCP sockets with explicit versions; every group member has its
own connection, because a JoinGroup or SyncGroup answer waits for the rest of the group. When
kafka-python cannot be imported, the script re-runs itself with the compatibility suite's venv
(${XDG_CACHE_HOME:-$HOME/.cache}/kcoord/venv, made by scripts/compat-venv).

The sequence runs once against each server, first kcoord, then Kafka, with the same names: two
topics made with CreateTopics (3 partitions and 1 partition) and groups named
cdiff-<run id>-<name>, so runs never meet each other's groups. It covers, valid and invalid:
ApiVersions (v0-4, an unknown version, bad client names), CreateTopics, Metadata v0-13,
FindCoordinator v0-6
(batched keys, a transaction key, an invalid key type), JoinGroup v0-9 (MEMBER_ID_REQUIRED, a
second member, static members, every error), SyncGroup, Heartbeat, OffsetCommit, OffsetFetch,
ListGroups, DescribeGroups, LeaveGroup, OffsetDelete, DeleteGroups, ListOffsets, Fetch,
Produce, DescribeCluster, DeleteTopics, and one API kcoord does not serve. Some requests are
only sent once the group is in a given state; the script waits for that state with
DescribeGroups requests that are not compared.

Both servers must run with group.initial.rebalance.delay.ms=0 and otherwise default group and
offset settings (session timeout bounds, offset.metadata.max.bytes), and must not share the
run's names with anyone else. kcoord needs no topics configured. One name cannot be the run's
own: the empty group id, which the sequence commits to, describes and deletes.

Comparison. Both responses of a step are normalised, then compared field by field:
  - a member id the server generated (KIP-394: client id or group instance id, "-", a UUID)
    becomes <member:NAME>, NAME being the member of the sequence that got it;
  - the answering server's node id becomes <node>, its advertised port <port>, its cluster id
    <cluster-id>, and a topic id it assigned <topic-id:TOPIC>;
  - ListGroups answers keep only this run's groups;
  - an array of records that carry a key field (api_key, group_id, member_id, key, name,
    topic, topic_id, partition_index, index, broker_id, node_id) is compared by key, not by
    position, since Kafka answers in hash-map order; entries of one topic split over several
    records are merged (Kafka's Fetch lists failed partitions last, in entries of their own).
A difference is justified when tests/compat/diff-justified lists it (API or API/step, a field
path pattern, and why); every other difference is a finding. A step's outcome ("response",
"closed" when the server closed the connection, "timeout", or "undecodable", then compared as
the raw frame) is compared as the path $outcome.

Output: every step with an unjustified difference (the request, its version, both normalised
responses and the differing paths), then the summary line. --verbose also shows the
justified differences. --json OUT writes every step with both requests and responses.

Exit status: 0 when every difference is justified, 1 when any is not, 2 on a usage error or
when a server cannot be reached or prepared (topics not ready, coordinator not available).
"""
import argparse
import fnmatch
import json
import os
import re
import secrets
import socket
import struct
import subprocess
import sys
import time
import uuid

# kafka-python, from the compatibility suite's venv when the running python lacks it.
try:
    import kafka
    from kafka.protocol.admin import (CreateTopicsRequest, DeleteGroupsRequest,
                                      DeleteTopicsRequest, DescribeClusterRequest,
                                      DescribeConfigsRequest, DescribeGroupsRequest,
                                      ListGroupsRequest)
    from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, JoinGroupRequest,
                                         LeaveGroupRequest, ListOffsetsRequest,
                                         OffsetCommitRequest, OffsetDeleteRequest,
                                         OffsetFetchRequest, SyncGroupRequest)
    from kafka.protocol.metadata import (ApiVersionsRequest, ApiVersionsResponse,
                                         FindCoordinatorRequest, MetadataRequest)
    from kafka.protocol.producer import ProduceRequest
    from kafka.protocol.api_message import ApiMessage
    from kafka.record.memory_records import MemoryRecordsBuilder
except ImportError:
    _venv = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "kcoord", "venv", "bin", "python")
    if os.path.exists(_venv) and not os.environ.get("COMPAT_DIFF_REEXEC"):
        os.environ["COMPAT_DIFF_REEXEC"] = "1"
        os.execv(_venv, [_venv] + sys.argv)
    sys.stderr.write("compat-diff: kafka-python 3.0.12 is missing; run scripts/compat-venv "
                     "(or pip install kafka-python==3.0.12)\n")
    sys.exit(2)

KAFKA_PYTHON_VERSION = "3.0.12"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JUSTIFIED = os.path.join(ROOT, "tests", "compat", "diff-justified")

UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
CLUSTER_ID_RE = r"[A-Za-z0-9_-]{22}"
ZERO_UUID = "00000000-0000-0000-0000-000000000000"

# Fields holding a node id, and fields holding a port: normalised when they name the server.
NODE_FIELDS = {"node_id", "leader_id", "controller_id", "broker_id", "replica_nodes",
               "isr_nodes", "coordinator_id", "leader"}
PORT_FIELDS = {"port"}
# Fields that identify the records of an array, in order of preference.
KEY_FIELDS = ("api_key", "group_id", "member_id", "key", "name", "topic", "topic_id",
              "partition_index", "index", "broker_id", "node_id")

# Error codes the sequence relies on while preparing (never compared).
RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR

SESSION_MS = 120000    # no member may expire during a run
REBALANCE_MS = 30000   # every member of the sequence rejoins well before this


class Usage(Exception):
    pass


class Unprepared(Exception):
    pass


# ------------------------------------------------------------------------------------------
# Wire: one TCP connection, requests encoded by kafka-python, responses read in order.

class Pending:
    def __init__(self, conn, corr, resp_cls, version):
        self.conn = conn
        self.corr = corr
        self.resp_cls = resp_cls
        self.version = version
        self.outcome = None     # "response", "closed", "timeout", "undecodable"
        self.response = None    # the decoded response
        self.frame = None       # an undecodable response, after the correlation id (hex)
        self.error = None       # what went wrong, for the report


class Conn:
    def __init__(self, addr, client_id):
        self.addr = addr
        self.client_id = client_id
        self.corr = 0
        self.inflight = []
        self.buf = b""
        self.closed = False
        try:
            self.sock = socket.create_connection(addr, timeout=10)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            raise Unprepared("cannot connect to %s:%d: %s" % (addr[0], addr[1], e))

    def send(self, req, version):
        """Encode REQ at VERSION with a request header and send it; returns its Pending."""
        self.corr += 1
        req.API_VERSION = version
        req.with_header(correlation_id=self.corr, client_id=self.client_id)
        data = bytes(req.encode(framed=True, header=True))
        return self._send(data, req.header.get_response_class(), version)

    def send_raw(self, api_key, version, flexible_header, body, resp_cls, resp_version):
        """Send a hand-made request (a version kafka-python cannot encode)."""
        self.corr += 1
        cid = self.client_id.encode()
        hdr = struct.pack(">hhih", api_key, version, self.corr, len(cid)) + cid
        if flexible_header:
            hdr += b"\x00"
        data = hdr + body
        return self._send(struct.pack(">i", len(data)) + data, resp_cls, resp_version)

    def _send(self, data, resp_cls, version):
        p = Pending(self, self.corr, resp_cls, version)
        if self.closed:
            p.outcome, p.error = "closed", "connection already closed"
            return p
        try:
            self.sock.sendall(data)
        except OSError as e:
            self._close("send: %s" % e)
            p.outcome, p.error = "closed", "send: %s" % e
            return p
        self.inflight.append(p)
        return p

    def _close(self, why):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        for q in self.inflight:
            if q.outcome is None:
                q.outcome, q.error = "closed", why
        self.inflight = []

    def _read_frame(self, deadline):
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack(">i", self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    frame, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError()
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buf += chunk

    def wait(self, p, timeout):
        """Read responses in order until P has one (or the connection fails)."""
        deadline = time.monotonic() + timeout
        while p.outcome is None:
            try:
                frame = self._read_frame(deadline)
            except TimeoutError:
                # The stream is out of step now: give up on this connection.
                self._close("no response within %.0f s" % timeout)
                p.outcome = "timeout"
                break
            except (ConnectionError, OSError) as e:
                self._close(str(e))
                break
            q = self.inflight.pop(0)
            corr = struct.unpack(">i", frame[:4])[0] if len(frame) >= 4 else None
            try:
                if corr != q.corr:
                    raise ValueError("correlation id %s, expected %d" % (corr, q.corr))
                q.response = decode(q.resp_cls, frame, q.version)
                q.outcome = "response"
            except Exception as e:  # a decoding failure is a finding, not a crash
                q.outcome = "undecodable"
                q.frame = frame[4:].hex()
                q.error = "%s: %s" % (type(e).__name__, e)
        return p


def decode(resp_cls, frame, version):
    """Decode a response frame (after its size) at VERSION.

    kafka-python decodes every ApiVersions answer with an error as a v0 body; Kafka does that
    only for UNSUPPORTED_VERSION (KIP-511), other errors come in the requested version."""
    if resp_cls.name == "ApiVersionsResponse":
        err = struct.unpack(">h", frame[4:6])[0] if len(frame) >= 6 else 0
        v = 0 if err == 35 else version
        return ApiMessage.decode.__func__(resp_cls[None], frame, version=v, header=True)
    return resp_cls.decode(frame, version=version, header=True)


# ------------------------------------------------------------------------------------------
# Requests from plain dicts, responses to plain dicts.

def build(cls_or_field, fields):
    """A kafka-python data object from FIELDS, a dict whose nested structs are dicts too."""
    struct_ = cls_or_field._struct if hasattr(cls_or_field, "_struct") else cls_or_field
    vals = {}
    for name, v in fields.items():
        f = struct_.fields[name]
        if f.is_struct() and isinstance(v, dict):
            v = build(f, v)
        elif f.is_struct_array() and v is not None:
            v = [build(f.array_of, e) if isinstance(e, dict) else e for e in v]
        vals[name] = v
    if hasattr(cls_or_field, "_struct"):
        return cls_or_field(**vals)
    return struct_.data_class(**vals)


def scalar(v):
    if isinstance(v, memoryview):
        v = v.tobytes()
    if isinstance(v, (bytes, bytearray)):
        return "hex:" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (set, frozenset)):
        return sorted(v)
    if isinstance(v, tuple):
        return list(v)
    return v


def plain(obj, struct_, version):
    """The fields of OBJ that exist at VERSION, as JSON-able values."""
    out = {}
    for f in struct_._fields:
        if not f.for_version_q(version):
            continue
        v = getattr(obj, f.name)
        if v is None:
            out[f.name] = None
        elif f.is_struct():
            out[f.name] = plain(v, f, version)
        elif f.is_struct_array():
            out[f.name] = [plain(e, f.array_of, version) for e in v]
        elif isinstance(v, list):
            out[f.name] = [scalar(e) for e in v]
        else:
            out[f.name] = scalar(v)
    return out


def subscription(topics):
    """ConsumerProtocolSubscription v0: the metadata bytes of a "consumer" JoinGroup."""
    b = struct.pack(">hi", 0, len(topics))
    for t in topics:
        b += struct.pack(">h", len(t)) + t.encode()
    return b + struct.pack(">i", -1)


def assignment(parts):
    """ConsumerProtocolAssignment v0 for {topic: [partitions]}."""
    b = struct.pack(">hi", 0, len(parts))
    for t, ps in parts.items():
        b += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps))
        b += b"".join(struct.pack(">i", p) for p in ps)
    return b + struct.pack(">i", -1)


def record_batch():
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    b.append(timestamp=1700000000000, key=b"k", value=b"compat-diff")
    b.close()
    return bytes(b.buffer())


# ------------------------------------------------------------------------------------------
# One server's run of the sequence.

class ServerRun:
    def __init__(self, label, addr, run, timeout):
        self.label = label
        self.addr = addr
        self.run = run
        self.timeout = timeout
        self.conns = {}
        self.steps = []
        self.names = set()
        self.subst = {}         # generated string -> placeholder
        self.node_id = None
        self.topic_ids = {}     # topic name -> id (str)

    # -- connections and steps

    def conn(self, name):
        c = self.conns.get(name)
        if c is None or c.closed:
            c = Conn(self.addr, "cdiff-" + name)
            self.conns[name] = c
        return c

    def send(self, step, conn, cls, version, fields):
        """Send a compared request without waiting; wait() records it."""
        assert step not in self.names, step
        self.names.add(step)
        req = build(cls, fields)
        rec = {"step": step, "api": cls.name.replace("Request", ""), "version": version,
               "conn": conn, "request": plain(req, req._struct, version)}
        rec["pending"] = self.conn(conn).send(req, version)
        self.steps.append(rec)
        return rec

    def wait(self, rec, timeout=None):
        p = rec.pop("pending")
        p.conn.wait(p, timeout or self.timeout)
        rec["outcome"] = p.outcome
        rec["response"] = None
        if p.outcome == "response":
            rec["response"] = plain(p.response, p.response._struct, p.response.version
                                    if p.response.version is not None else p.version)
            if rec["api"] == "CreateTopics":
                self.learn_topic_ids(p.response)
            elif rec["api"] == "Metadata":
                self.learn_metadata(p.response)
        elif p.outcome == "undecodable":
            rec["response"] = {"undecodable_frame": "hex:" + p.frame}
        if p.error:
            rec["error"] = p.error
        return p.response if p.outcome == "response" else None

    def call(self, step, conn, cls, version, fields, timeout=None):
        return self.wait(self.send(step, conn, cls, version, fields), timeout)

    def quiet(self, conn, cls, version, fields, timeout=None):
        """A request that is not compared (waiting for a state, preparing)."""
        c = self.conn(conn)
        p = c.wait(c.send(build(cls, fields), version), timeout or self.timeout)
        return p.response if p.outcome == "response" else None

    def raw_step(self, step, conn, api, api_key, version, flexible_header, body, resp_cls,
                 resp_version):
        assert step not in self.names, step
        self.names.add(step)
        rec = {"step": step, "api": api, "version": version, "conn": conn,
               "request": {"raw": "hex:" + body.hex()}}
        self.steps.append(rec)
        rec["pending"] = self.conn(conn).send_raw(api_key, version, flexible_header, body,
                                                  resp_cls, resp_version)
        return self.wait(rec)

    # -- generated values

    def member(self, name, member_id, prefix):
        """Note MEMBER_ID as the member NAME's id when it has Kafka's form PREFIX-UUID."""
        if isinstance(member_id, str) and re.fullmatch(re.escape(prefix) + "-" + UUID_RE,
                                                       member_id):
            self.subst[member_id] = "<member:%s>" % name
        return member_id or ""

    def learn_topic_ids(self, resp):
        """Topic ids a CreateTopics (v7) answer hands out."""
        for t in (resp.topics if resp is not None else None) or []:
            tid = str(getattr(t, "topic_id", None) or ZERO_UUID)
            if t.name and tid != ZERO_UUID:
                self.topic_ids.setdefault(t.name, tid)
                self.subst[tid] = "<topic-id:%s>" % t.name.replace(self.run, "<run>")

    def learn_metadata(self, resp):
        if resp is None:
            return
        if len(resp.brokers or []) == 1:
            self.node_id = resp.brokers[0].node_id
        cid = getattr(resp, "cluster_id", None)
        if isinstance(cid, str) and re.fullmatch(CLUSTER_ID_RE, cid):
            self.subst[cid] = "<cluster-id>"
        for t in resp.topics or []:
            tid = str(getattr(t, "topic_id", None) or ZERO_UUID)
            if t.name and tid != ZERO_UUID:
                self.topic_ids[t.name] = tid
                self.subst[tid] = "<topic-id:%s>" % t.name.replace(self.run, "<run>")

    # -- normalisation

    def normalise(self, v, field=None):
        if isinstance(v, dict):
            return {k: self.normalise(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [self.normalise(x, field) for x in v]
        if isinstance(v, str):
            return self.subst.get(v, v)
        if isinstance(v, int) and not isinstance(v, bool):
            if field in NODE_FIELDS and self.node_id is not None and v == self.node_id:
                return "<node>"
            if field in PORT_FIELDS and v == self.addr[1]:
                return "<port>"
        return v


# ------------------------------------------------------------------------------------------
# The sequence.

def scenario(s):
    run = s.run
    T, U, W = run + "-t", run + "-u", run + "-w"     # 3 partitions, 1, 1 (W: default count)
    X = run + "-nosuch"

    def G(n):
        return "%s-%s" % (run, n)

    gA, gS, gSt, gX = G("a"), G("simple"), G("static"), G("missing")
    jgroups = [G("j%d" % v) for v in range(10)]
    sub = subscription([T])

    def protocols(*names):
        return [{"name": n, "metadata": sub} for n in (names or ("range", "roundrobin"))]

    def join_fields(group, member, v, **kw):
        f = {"group_id": group, "session_timeout_ms": SESSION_MS, "member_id": member,
             "protocol_type": "consumer", "protocols": protocols()}
        if v >= 1:
            f["rebalance_timeout_ms"] = REBALANCE_MS
        if v >= 8:
            f["reason"] = "compat-diff"
        f.update(kw)
        return f

    def sync_fields(group, gen, member, v, assignments, **kw):
        f = {"group_id": group, "generation_id": gen, "member_id": member,
             "assignments": [{"member_id": m, "assignment": a} for m, a in assignments]}
        if v >= 5:
            f["protocol_type"] = "consumer"
            f["protocol_name"] = "range"
        f.update(kw)
        return f

    def commit_fields(group, gen, member, v, offsets, **kw):
        """OFFSETS: {topic: {partition: (offset, metadata)}}; v10 names topics by id."""
        topics = []
        for t, ps in offsets.items():
            parts = [{"partition_index": p, "committed_offset": o, "committed_metadata": m}
                     for p, (o, m) in ps.items()]
            if v >= 6:
                for part in parts:
                    part["committed_leader_epoch"] = 0
            if v >= 10:
                topics.append({"topic_id": s.topic_ids.get(t, str(uuid.UUID(int=7))),
                               "partitions": parts})
            else:
                topics.append({"name": t, "partitions": parts})
        f = {"group_id": group, "topics": topics}
        if v >= 1:
            f["generation_id_or_member_epoch"] = gen
            f["member_id"] = member
        f.update(kw)
        return f

    def fetch_fields(v, groups, require_stable=False):
        """GROUPS: [(group, {topic: [partitions]} or None)]; one group below v8."""
        def topics(ts):
            if ts is None:
                return None
            if v >= 10:
                return [{"topic_id": s.topic_ids.get(t, str(uuid.UUID(int=7))),
                         "partition_indexes": ps} for t, ps in ts.items()]
            return [{"name": t, "partition_indexes": ps} for t, ps in ts.items()]
        if v < 8:
            (g, ts), = groups
            f = {"group_id": g, "topics": topics(ts)}
        else:
            f = {"groups": [{"group_id": g, "topics": topics(ts)} for g, ts in groups]}
        if v >= 7:
            f["require_stable"] = require_stable
        return f

    def hb_fields(group, gen, member, **kw):
        f = {"group_id": group, "generation_id": gen, "member_id": member}
        f.update(kw)
        return f

    def describe(groups, v=5, ops=False):
        f = {"groups": groups}
        if v >= 3:
            f["include_authorized_operations"] = ops
        return f

    def wait_state(group, state):
        """Poll DescribeGroups (not compared) until GROUP is in STATE."""
        deadline = time.monotonic() + s.timeout
        while time.monotonic() < deadline:
            r = s.quiet("probe", DescribeGroupsRequest, 5, describe([group]))
            if r is not None and r.groups and r.groups[0].group_state == state:
                return True
            time.sleep(0.02)
        return False

    # ---- preparation (not compared): who the server is, coordinators ready
    md = s.quiet("main", MetadataRequest, 12, {"topics": [], "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
    if md is None:
        raise Unprepared("no Metadata answer")
    s.learn_metadata(md)
    all_groups = [gA, gS, gSt, gX, G("err"), G("nogroup")] + jgroups
    deadline = time.monotonic() + 60
    while True:
        r = s.quiet("main", FindCoordinatorRequest, 6, {"key_type": 0,
                                                        "coordinator_keys": all_groups})
        if r is not None and all(c.error_code == 0 for c in r.coordinators):
            r = s.quiet("main", OffsetFetchRequest, 8,
                        fetch_fields(8, [(g, None) for g in all_groups]))
            if r is not None and all(g.error_code == 0 for g in r.groups):
                break
        if time.monotonic() > deadline:
            raise Unprepared("the group coordinator is not available")
        time.sleep(0.2)

    # ---- ApiVersions
    for v in range(5):
        f = {}
        if v >= 3:
            f = {"client_software_name": "compat-diff", "client_software_version": "1.0"}
        s.call("api-versions-v%d" % v, "main", ApiVersionsRequest, v, f)
    s.call("api-versions-v3-bad-software-name", "raw", ApiVersionsRequest, 3, {
        "client_software_name": "bad name!", "client_software_version": "1.0"})
    s.call("api-versions-v4-empty-software-name", "raw", ApiVersionsRequest, 4, {
        "client_software_name": "", "client_software_version": ""})
    # KIP-511: an unknown version gets UNSUPPORTED_VERSION and a v0 body.
    body = b"\x0ccompat-diff\x041.0\x00"
    s.raw_step("api-versions-v127", "raw", "ApiVersions", 18, 127, True, body,
               ApiVersionsResponse, 0)

    # ---- CreateTopics
    s.learn_topic_ids(s.call("create-topics", "main", CreateTopicsRequest, 7, {
        "topics": [{"name": T, "num_partitions": 3, "replication_factor": 1},
                   {"name": U, "num_partitions": 1, "replication_factor": 1},
                   {"name": W, "num_partitions": -1, "replication_factor": -1}],
        "timeout_ms": 30000}))
    for v in range(2, 8):
        s.call("create-topics-exists-v%d" % v, "main", CreateTopicsRequest, v, {
            "topics": [{"name": T, "num_partitions": 3, "replication_factor": 1}],
            "timeout_ms": 30000})
    s.call("create-topics-invalid", "main", CreateTopicsRequest, 7, {
        "topics": [{"name": run + "-p0", "num_partitions": 0, "replication_factor": 1},
                   {"name": run + "-rf3", "num_partitions": 1, "replication_factor": 3},
                   {"name": run + "/bad", "num_partitions": 1, "replication_factor": 1},
                   {"name": "", "num_partitions": 1, "replication_factor": 1},
                   {"name": ".", "num_partitions": 1, "replication_factor": 1},
                   {"name": "..", "num_partitions": 1, "replication_factor": 1},
                   {"name": run + "-" + "x" * 240, "num_partitions": 1, "replication_factor": 1},
                   {"name": "__consumer_offsets", "num_partitions": 1, "replication_factor": 1},
                   {"name": run + "-rf0", "num_partitions": 1, "replication_factor": 0}],
        "timeout_ms": 30000})
    s.learn_topic_ids(s.call("create-topics-validate-only", "main", CreateTopicsRequest, 7, {
        "topics": [{"name": run + "-vo", "num_partitions": 2, "replication_factor": 1}],
        "timeout_ms": 30000, "validate_only": True}))
    s.call("create-topics-configs", "main", CreateTopicsRequest, 7, {
        "topics": [{"name": run + "-c1", "num_partitions": 1, "replication_factor": 1,
                    "configs": [{"name": "retention.ms", "value": "1000"}]},
                   {"name": run + "-c2", "num_partitions": 1, "replication_factor": 1,
                    "configs": [{"name": "no.such.config", "value": "x"}]},
                   {"name": run + "-c3", "num_partitions": 1, "replication_factor": 1,
                    "configs": [{"name": "cleanup.policy", "value": "sideways"}]}],
        "timeout_ms": 30000, "validate_only": True})
    s.call("create-topics-duplicate", "main", CreateTopicsRequest, 7, {
        "topics": [{"name": run + "-dup", "num_partitions": 1, "replication_factor": 1},
                   {"name": run + "-dup", "num_partitions": 2, "replication_factor": 1}],
        "timeout_ms": 30000, "validate_only": True})
    s.call("create-topics-assignment", "main", CreateTopicsRequest, 7, {
        "topics": [{"name": run + "-as", "num_partitions": -1, "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [s.node_id]},
                                    {"partition_index": 1, "broker_ids": [s.node_id]}]},
                   {"name": run + "-as2", "num_partitions": -1, "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [12345]}]}],
        "timeout_ms": 30000, "validate_only": True})
    deadline = time.monotonic() + 60
    while True:  # until every partition has a leader (not compared)
        r = s.quiet("main", MetadataRequest, 12, {
            "topics": [{"name": t} for t in (T, U, W)], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})
        if r is not None and len(r.topics) == 3 and all(
                t.error_code == 0 and t.partitions and
                all(p.leader_id >= 0 for p in t.partitions) for t in r.topics):
            s.learn_metadata(r)
            break
        if time.monotonic() > deadline:
            raise Unprepared("the topics did not get leaders")
        time.sleep(0.1)

    # ---- Metadata
    for v in range(14):
        f = {"topics": [{"name": T}, {"name": U}]}
        if v >= 4:
            f["topics"].append({"name": X})
            f["allow_auto_topic_creation"] = False
        if v >= 8:
            f["include_topic_authorized_operations"] = False
        if 8 <= v <= 10:
            f["include_cluster_authorized_operations"] = False
        s.learn_metadata(s.call("metadata-v%d" % v, "main", MetadataRequest, v, f))
    s.call("metadata-brokers-only-v1", "main", MetadataRequest, 1, {"topics": []})
    s.call("metadata-brokers-only-v13", "main", MetadataRequest, 13, {
        "topics": [], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    s.call("metadata-by-topic-id-v12", "main", MetadataRequest, 12, {
        "topics": [{"topic_id": s.topic_ids.get(T, ZERO_UUID), "name": None}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    s.call("metadata-topic-ops-v12", "main", MetadataRequest, 12, {
        "topics": [{"name": U}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True})

    # ---- FindCoordinator
    s.call("find-coordinator-v0", "main", FindCoordinatorRequest, 0, {"key": gA})
    for v in (1, 2, 3):
        s.call("find-coordinator-v%d" % v, "main", FindCoordinatorRequest, v,
               {"key": gA, "key_type": 0})
    for v in (4, 5, 6):
        s.call("find-coordinator-batch-v%d" % v, "main", FindCoordinatorRequest, v,
               {"key_type": 0, "coordinator_keys": [gA, gS, gX]})
    s.call("find-coordinator-no-keys-v6", "main", FindCoordinatorRequest, 6,
           {"key_type": 0, "coordinator_keys": []})
    s.call("find-coordinator-empty-key-v3", "main", FindCoordinatorRequest, 3,
           {"key": "", "key_type": 0})
    s.call("find-coordinator-bad-type-v3", "main", FindCoordinatorRequest, 3,
           {"key": gA, "key_type": 7})
    s.call("find-coordinator-bad-type-v6", "bad-type", FindCoordinatorRequest, 6,
           {"key_type": 7, "coordinator_keys": [gA]})
    s.call("find-coordinator-txn-v3", "main", FindCoordinatorRequest, 3,
           {"key": run + "-txn", "key_type": 1})

    # ---- JoinGroup/SyncGroup/Heartbeat/OffsetCommit/OffsetFetch at every version: one
    # single-member group per JoinGroup version, left and deleted further down.
    jmember = {}
    for v in range(10):
        g, m = jgroups[v], "j%d" % v
        r = s.call("join-v%d-first" % v, m, JoinGroupRequest, v, join_fields(g, "", v))
        mid = s.member(m, r.member_id if r else "", "cdiff-" + m)
        gen = r.generation_id if r else -1
        if v >= 4:
            r = s.call("join-v%d" % v, m, JoinGroupRequest, v, join_fields(g, mid, v))
            gen = r.generation_id if r else -1
        jmember[v] = (mid, gen)
        sv, hv = min(v, 5), min(v, 4)
        s.call("sync-v%d-leader" % sv if v <= 5 else "sync-v5-leader-j%d" % v, m,
               SyncGroupRequest, sv,
               sync_fields(g, gen, mid, sv, [(mid, assignment({T: [0, 1, 2]}))]))
        if v <= 4:
            s.call("heartbeat-v%d" % hv, m, HeartbeatRequest, hv, hb_fields(g, gen, mid))
        cv = min(v + 2, 10)
        s.call("commit-member-j%d-v%d" % (v, cv), m, OffsetCommitRequest, cv,
               commit_fields(g, gen, mid, cv, {T: {0: (v, "j%d" % v), 1: (v + 1, None)}}))
        fv = min(v + 1, 10)
        s.call("fetch-j%d-v%d" % (v, fv), m, OffsetFetchRequest, fv,
               fetch_fields(fv, [(g, {T: [0, 1, 2]})]))

    # ---- JoinGroup errors
    s.call("join-empty-group-id", "x", JoinGroupRequest, 5, join_fields("", "", 5))
    s.call("join-session-too-short", "x", JoinGroupRequest, 5,
           join_fields(G("err"), "", 5, session_timeout_ms=5999))
    s.call("join-session-too-long", "x", JoinGroupRequest, 5,
           join_fields(G("err"), "", 5, session_timeout_ms=1800001))
    s.call("join-unknown-member-new-group", "x", JoinGroupRequest, 5,
           join_fields(G("err"), "cdiff-x-bogus", 5))
    s.call("join-no-protocols", "x", JoinGroupRequest, 5,
           join_fields(G("err"), "", 5, protocols=[]))
    s.call("join-empty-protocol-type", "x", JoinGroupRequest, 5,
           join_fields(G("err"), "", 5, protocol_type=""))

    # ---- the main group: member a, then b
    r = s.call("a-join-first", "a", JoinGroupRequest, 5, join_fields(gA, "", 5))
    a = s.member("a", r.member_id if r else "", "cdiff-a")
    r = s.call("a-join", "a", JoinGroupRequest, 5, join_fields(gA, a, 5))
    gen = r.generation_id if r else -1
    s.call("a-sync", "a", SyncGroupRequest, 3,
           sync_fields(gA, gen, a, 3, [(a, assignment({T: [0, 1, 2]}))]))
    s.call("a-heartbeat", "a", HeartbeatRequest, 4, hb_fields(gA, gen, a))
    s.call("a-commit", "a", OffsetCommitRequest, 8, commit_fields(
        gA, gen, a, 8, {T: {0: (10, "m-a"), 1: (11, ""), 2: (12, None)}, U: {0: (5, "u")}}))
    s.call("a-commit-wrong-generation", "a", OffsetCommitRequest, 8,
           commit_fields(gA, gen + 5, a, 8, {T: {0: (13, "")}}))
    s.call("a-commit-unknown-member", "a", OffsetCommitRequest, 8,
           commit_fields(gA, gen, "cdiff-a-bogus", 8, {T: {0: (13, "")}}))
    s.call("a-commit-no-member", "a", OffsetCommitRequest, 8,
           commit_fields(gA, -1, "", 8, {T: {0: (13, "")}}))
    s.call("a-commit-unknown-topic", "a", OffsetCommitRequest, 8, commit_fields(
        gA, gen, a, 8, {X: {0: (1, "")}, T: {7: (1, ""), 0: (14, "")}}))
    s.call("a-commit-metadata-too-large", "a", OffsetCommitRequest, 8, commit_fields(
        gA, gen, a, 8, {T: {0: (15, "x" * 4097), 1: (15, "y" * 4096)}}))
    s.call("a-commit-static-unknown", "a", OffsetCommitRequest, 8,
           commit_fields(gA, gen, a, 8, {T: {0: (16, "")}}, group_instance_id="nobody"))
    s.call("commit-unknown-group-v8", "x", OffsetCommitRequest, 8,
           commit_fields(G("nogroup"), 3, "cdiff-x-bogus", 8, {T: {0: (1, "")}}))
    s.call("commit-unknown-group-v9", "x", OffsetCommitRequest, 9,
           commit_fields(G("nogroup"), 3, "cdiff-x-bogus", 9, {T: {0: (1, "")}}))
    s.call("a-heartbeat-wrong-generation", "a", HeartbeatRequest, 4, hb_fields(gA, gen + 1, a))
    s.call("a-heartbeat-unknown-member", "a", HeartbeatRequest, 4,
           hb_fields(gA, gen, "cdiff-a-bogus"))
    s.call("heartbeat-unknown-group", "x", HeartbeatRequest, 4,
           hb_fields(G("nogroup"), 1, "cdiff-x-bogus"))
    s.call("heartbeat-empty-group-id", "x", HeartbeatRequest, 4, hb_fields("", 1, a))
    s.call("heartbeat-static-unknown", "a", HeartbeatRequest, 3,
           hb_fields(gA, gen, a, group_instance_id="nobody"))
    s.call("a-sync-wrong-generation", "a", SyncGroupRequest, 5,
           sync_fields(gA, gen + 8, a, 5, []))
    s.call("a-sync-unknown-member", "a", SyncGroupRequest, 5,
           sync_fields(gA, gen, "cdiff-a-bogus", 5, []))
    s.call("a-sync-protocol-name-mismatch", "a", SyncGroupRequest, 5,
           sync_fields(gA, gen, a, 5, [], protocol_name="roundrobin"))
    s.call("a-sync-protocol-type-mismatch", "a", SyncGroupRequest, 5,
           sync_fields(gA, gen, a, 5, [], protocol_type="other"))
    s.call("a-sync-stable", "a", SyncGroupRequest, 5, sync_fields(gA, gen, a, 5, []))
    s.call("a-sync-null-protocol", "a", SyncGroupRequest, 5,
           sync_fields(gA, gen, a, 5, [], protocol_type=None, protocol_name=None))
    s.call("sync-unknown-group", "x", SyncGroupRequest, 5,
           sync_fields(G("nogroup"), 1, "cdiff-x-bogus", 5, []))
    s.call("sync-empty-group-id", "x", SyncGroupRequest, 5, sync_fields("", 1, a, 5, []))
    s.call("join-inconsistent-protocol-type", "x", JoinGroupRequest, 5,
           join_fields(gA, "", 5, protocol_type="other"))
    s.call("join-no-common-protocol", "x", JoinGroupRequest, 5,
           join_fields(gA, "", 5, protocols=[{"name": "sticky", "metadata": sub}]))
    s.call("join-unknown-member", "x", JoinGroupRequest, 5, join_fields(gA, "cdiff-x-bogus", 5))
    s.call("join-unknown-member-v9", "x", JoinGroupRequest, 9,
           join_fields(gA, "cdiff-x-bogus", 9))
    s.call("join-inconsistent-protocol-type-v9", "x", JoinGroupRequest, 9,
           join_fields(gA, "", 9, protocol_type="other"))
    s.call("join-empty-group-id-v9", "x", JoinGroupRequest, 9, join_fields("", "", 9))
    s.call("describe-stable-one-member", "main", DescribeGroupsRequest, 5, describe([gA]))

    # b joins: a rebalance, during which a's heartbeat, sync and commit are checked.
    r = s.call("b-join-first", "b", JoinGroupRequest, 7, join_fields(gA, "", 7))
    b = s.member("b", r.member_id if r else "", "cdiff-b")
    b_join = s.send("b-join", "b", JoinGroupRequest, 7, join_fields(gA, b, 7))
    wait_state(gA, "PreparingRebalance")
    s.call("a-heartbeat-rebalancing", "a", HeartbeatRequest, 4, hb_fields(gA, gen, a))
    s.call("a-sync-rebalancing", "a", SyncGroupRequest, 5, sync_fields(gA, gen, a, 5, []))
    s.call("a-commit-rebalancing", "a", OffsetCommitRequest, 8,
           commit_fields(gA, gen, a, 8, {T: {0: (20, "during rebalance")}}))
    s.call("describe-preparing-rebalance", "main", DescribeGroupsRequest, 5, describe([gA]))
    s.call("list-groups-preparing-v4", "main", ListGroupsRequest, 4,
           {"states_filter": ["PreparingRebalance"]})
    a_join = s.send("a-rejoin", "a", JoinGroupRequest, 5, join_fields(gA, a, 5))
    s.wait(b_join)
    r = s.wait(a_join)
    gen = r.generation_id if r else -1
    s.call("a-commit-completing-rebalance", "main", OffsetCommitRequest, 8,
           commit_fields(gA, gen, a, 8, {T: {0: (21, "")}}))
    s.call("a-heartbeat-completing-rebalance", "main", HeartbeatRequest, 4,
           hb_fields(gA, gen, a))
    s.call("describe-completing-rebalance", "main", DescribeGroupsRequest, 5, describe([gA]))
    b_sync = s.send("b-sync", "b", SyncGroupRequest, 5, sync_fields(gA, gen, b, 5, []))
    s.call("a-sync-leader", "a", SyncGroupRequest, 5, sync_fields(gA, gen, a, 5, [
        (a, assignment({T: [0, 1]})), (b, assignment({T: [2]}))]))
    s.wait(b_sync)
    s.call("b-heartbeat", "b", HeartbeatRequest, 3, hb_fields(gA, gen, b))
    s.call("b-sync-again", "b", SyncGroupRequest, 4, sync_fields(gA, gen, b, 4, []))
    # A follower rejoining with the same metadata in Stable gets the current generation.
    s.call("b-rejoin-stable", "b", JoinGroupRequest, 7, join_fields(gA, b, 7))
    s.call("heartbeat-empty-group", "x", HeartbeatRequest, 4, hb_fields(gS, 0, "cdiff-x-bogus"))
    s.call("b-commit", "b", OffsetCommitRequest, 9,
           commit_fields(gA, gen, b, 9, {T: {2: (30, "b")}}))
    s.call("a-commit-old-generation", "a", OffsetCommitRequest, 7,
           commit_fields(gA, gen - 1, a, 7, {T: {0: (31, "")}}))

    # ---- static members (KIP-345)
    r = s.call("static-join-1", "s1", JoinGroupRequest, 5,
               join_fields(gSt, "", 5, group_instance_id="inst-1"))
    s1 = s.member("s1", r.member_id if r else "", "inst-1")
    sgen = r.generation_id if r else -1
    s.call("static-sync-1", "s1", SyncGroupRequest, 5, sync_fields(
        gSt, sgen, s1, 5, [(s1, assignment({T: [0, 1, 2]}))], group_instance_id="inst-1"))
    r = s.call("static-join-replace", "s2", JoinGroupRequest, 9,
               join_fields(gSt, "", 9, group_instance_id="inst-1"))
    s2 = s.member("s2", r.member_id if r else "", "inst-1")
    s.call("static-heartbeat-fenced", "s1", HeartbeatRequest, 3,
           hb_fields(gSt, sgen, s1, group_instance_id="inst-1"))
    s.call("static-heartbeat-old-id", "s1", HeartbeatRequest, 3, hb_fields(gSt, sgen, s1))
    s.call("static-heartbeat-new", "s2", HeartbeatRequest, 3,
           hb_fields(gSt, sgen, s2, group_instance_id="inst-1"))
    s.call("static-sync-new", "s2", SyncGroupRequest, 5,
           sync_fields(gSt, sgen, s2, 5, [], group_instance_id="inst-1"))
    s.call("static-commit-fenced", "s1", OffsetCommitRequest, 7, commit_fields(
        gSt, sgen, s1, 7, {T: {0: (1, "")}}, group_instance_id="inst-1"))
    s.call("static-join-fenced", "s1", JoinGroupRequest, 5,
           join_fields(gSt, s1, 5, group_instance_id="inst-1"))
    s.call("static-leave-fenced", "s1", LeaveGroupRequest, 3, {"group_id": gSt, "members": [
        {"member_id": s1, "group_instance_id": "inst-1"}]})
    s.call("describe-static", "main", DescribeGroupsRequest, 5, describe([gSt]))
    s.call("static-leave", "s2", LeaveGroupRequest, 4, {"group_id": gSt, "members": [
        {"member_id": "", "group_instance_id": "inst-1"},
        {"member_id": "", "group_instance_id": "inst-9"}]})

    # ---- simple (manual assignment) commits: generation -1, no member
    for v in range(0, 11):
        conn = "old" if v < 2 else "main"  # Kafka 4 serves OffsetCommit from v2
        s.call("simple-commit-v%d" % v, conn, OffsetCommitRequest, v, commit_fields(
            gS, -1, "", v, {T: {0: (100 + v, "v%d" % v), 1: (200 + v, ""), 2: (300 + v, None)}}))
    s.call("simple-commit-retention-v2", "main", OffsetCommitRequest, 2, commit_fields(
        gS, -1, "", 2, {U: {0: (7, "")}}, retention_time_ms=3600000))
    s.call("simple-commit-generation", "main", OffsetCommitRequest, 8,
           commit_fields(gS, 4, "", 8, {T: {0: (1, "")}}))
    s.call("simple-commit-unknown-topic-id-v10", "main", OffsetCommitRequest, 10, {
        "group_id": gS, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"topic_id": str(uuid.UUID(int=7)), "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})
    s.call("simple-commit-odd-offsets", "main", OffsetCommitRequest, 8, commit_fields(
        gS, -1, "", 8, {U: {0: (-5, "negative")}, T: {-1: (3, "")}}))
    s.call("simple-commit-empty-group-id", "main", OffsetCommitRequest, 8,
           commit_fields("", -1, "", 8, {T: {0: (5, "empty id")}}))

    # ---- OffsetFetch
    s.call("fetch-offsets-v0", "old", OffsetFetchRequest, 0,
           {"group_id": gS, "topics": [{"name": T, "partition_indexes": [0]}]})
    for v in range(1, 8):
        s.call("fetch-offsets-v%d" % v, "main", OffsetFetchRequest, v,
               fetch_fields(v, [(gS, {T: [0, 1, 2, 5], X: [0]})]))
    for v in range(2, 8):
        s.call("fetch-offsets-all-v%d" % v, "main", OffsetFetchRequest, v,
               fetch_fields(v, [(gS, None)]))
    s.call("fetch-offsets-require-stable-v7", "main", OffsetFetchRequest, 7,
           fetch_fields(7, [(gA, None)], require_stable=True))
    s.call("fetch-offsets-unknown-group-v5", "main", OffsetFetchRequest, 5,
           fetch_fields(5, [(gX, {T: [0]})]))
    s.call("fetch-offsets-empty-group-id-v5", "main", OffsetFetchRequest, 5,
           fetch_fields(5, [("", {T: [0]})]))
    for v in (8, 9, 10):
        s.call("fetch-offsets-groups-v%d" % v, "main", OffsetFetchRequest, v, fetch_fields(
            v, [(gS, None), (gA, {T: [0, 1, 2], U: [0]}), (gX, {T: [0]}), (gSt, None)],
            require_stable=(v == 9)))
    f = fetch_fields(9, [(gA, {T: [0]})])
    f["groups"][0].update(member_id=a, member_epoch=gen)
    s.call("fetch-offsets-member-v9", "a", OffsetFetchRequest, 9, f)
    f = fetch_fields(9, [(gA, {T: [0]})])
    f["groups"][0].update(member_id=a, member_epoch=gen + 7)
    s.call("fetch-offsets-member-wrong-epoch-v9", "a", OffsetFetchRequest, 9, f)
    f = fetch_fields(9, [(gA, {T: [0]})])
    f["groups"][0].update(member_id="cdiff-x-bogus", member_epoch=-1)
    s.call("fetch-offsets-unknown-member-v9", "a", OffsetFetchRequest, 9, f)

    # ---- ListGroups and DescribeGroups
    for v in range(6):
        s.call("list-groups-v%d" % v, "main", ListGroupsRequest, v, {})
    for states in (["Stable"], ["Empty"], ["stable", "empty"], ["Dead"], ["nonsense"]):
        s.call("list-groups-v4-%s" % ",".join(states), "main", ListGroupsRequest, 4,
               {"states_filter": states})
    for types in (["classic"], ["Classic"], ["consumer"], ["share", "streams"], ["nonsense"]):
        s.call("list-groups-v5-%s" % ",".join(types), "main", ListGroupsRequest, 5,
               {"types_filter": types})
    s.call("list-groups-v5-both", "main", ListGroupsRequest, 5,
           {"states_filter": ["Stable"], "types_filter": ["classic"]})
    for v in range(7):
        s.call("describe-groups-v%d" % v, "main", DescribeGroupsRequest, v,
               describe([gA, gS, gSt, gX, ""], v))
    s.call("describe-groups-ops-v3", "main", DescribeGroupsRequest, 3,
           describe([gA, gX], 3, ops=True))

    # ---- LeaveGroup v0..v5 on the per-version groups, and the error cases
    for v in range(6):
        mid = jmember[v][0]
        if v <= 2:
            f = {"group_id": jgroups[v], "member_id": mid}
        else:
            f = {"group_id": jgroups[v], "members": [{"member_id": mid}]}
            if v >= 5:
                f["members"][0]["reason"] = "compat-diff"
        s.call("leave-v%d" % v, "j%d" % v, LeaveGroupRequest, v, f)
    for v in range(6, 10):
        s.call("leave-batch-j%d" % v, "j%d" % v, LeaveGroupRequest, 5, {
            "group_id": jgroups[v], "members": [
                {"member_id": jmember[v][0], "reason": None},
                {"member_id": "cdiff-x-bogus", "reason": "not a member"}]})
    s.call("leave-unknown-member-v1", "main", LeaveGroupRequest, 1,
           {"group_id": gA, "member_id": "cdiff-x-bogus"})
    s.call("leave-unknown-group-v1", "main", LeaveGroupRequest, 1,
           {"group_id": G("nogroup"), "member_id": "cdiff-x-bogus"})
    s.call("leave-unknown-group-v3", "main", LeaveGroupRequest, 3,
           {"group_id": G("nogroup"), "members": [{"member_id": "cdiff-x-bogus"}]})
    s.call("leave-empty-group-id-v3", "main", LeaveGroupRequest, 3,
           {"group_id": "", "members": [{"member_id": "cdiff-x-bogus"}]})
    s.call("leave-empty-members-v3", "main", LeaveGroupRequest, 3,
           {"group_id": gA, "members": []})
    s.call("b-leave", "b", LeaveGroupRequest, 5, {"group_id": gA, "members": [
        {"member_id": b, "reason": "done"}, {"member_id": "cdiff-x-bogus"}]})
    wait_state(gA, "PreparingRebalance")
    s.call("a-heartbeat-after-leave", "a", HeartbeatRequest, 4, hb_fields(gA, gen, a))
    r = s.call("a-rejoin-alone", "a", JoinGroupRequest, 6, join_fields(gA, a, 6))
    gen = r.generation_id if r else -1
    s.call("a-sync-alone", "a", SyncGroupRequest, 5,
           sync_fields(gA, gen, a, 5, [(a, assignment({T: [0, 1, 2]}))]))

    # ---- OffsetDelete
    s.call("offset-delete-subscribed", "main", OffsetDeleteRequest, 0, {
        "group_id": gA, "topics": [{"name": T, "partitions": [{"partition_index": 0},
                                                              {"partition_index": 1}]},
                                   {"name": U, "partitions": [{"partition_index": 0}]}]})
    s.call("offset-delete-simple", "main", OffsetDeleteRequest, 0, {
        "group_id": gS, "topics": [{"name": T, "partitions": [{"partition_index": 0},
                                                              {"partition_index": 9}]}]})
    s.call("offset-delete-unknown-topic", "main", OffsetDeleteRequest, 0, {
        "group_id": gS, "topics": [{"name": X, "partitions": [{"partition_index": 0}]}]})
    s.call("offset-delete-unknown-group", "main", OffsetDeleteRequest, 0, {
        "group_id": gX, "topics": [{"name": T, "partitions": [{"partition_index": 0}]}]})
    s.call("offset-delete-empty-group-id", "main", OffsetDeleteRequest, 0, {
        "group_id": "", "topics": [{"name": T, "partitions": [{"partition_index": 0}]}]})
    s.call("fetch-offsets-after-delete", "main", OffsetFetchRequest, 8, fetch_fields(
        8, [(gA, None), (gS, None)]))

    # ---- DeleteGroups
    s.call("delete-groups-v0", "main", DeleteGroupsRequest, 0,
           {"groups_names": [gA, gX, jgroups[0]]})
    s.call("delete-groups-v1", "main", DeleteGroupsRequest, 1,
           {"groups_names": [jgroups[1], jgroups[2], gS]})
    s.call("delete-groups-v2", "main", DeleteGroupsRequest, 2,
           {"groups_names": jgroups[3:] + [gSt, "", jgroups[0]]})
    s.call("describe-after-delete", "main", DescribeGroupsRequest, 5,
           describe([jgroups[0], gS, gA]))
    s.call("fetch-offsets-after-delete-groups", "main", OffsetFetchRequest, 8, fetch_fields(
        8, [(gS, None), (jgroups[0], {T: [0]})]))
    s.call("list-groups-after-delete", "main", ListGroupsRequest, 5, {})

    # ---- ListOffsets, Fetch, Produce: kcoord stores no records
    for v in range(1, 12):
        f = {"replica_id": -1, "topics": [{"name": T, "partitions": [
            {"partition_index": 0, "timestamp": -1}, {"partition_index": 1, "timestamp": -2},
            {"partition_index": 2, "timestamp": 0}]},
            {"name": X, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
        if v >= 2:
            f["isolation_level"] = 0
        if v >= 10:
            f["timeout_ms"] = 1000
        s.call("list-offsets-v%d" % v, "main", ListOffsetsRequest, v, f)
    s.call("list-offsets-duplicate-v5", "main", ListOffsetsRequest, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": T, "partitions": [
            {"partition_index": 0, "timestamp": -1}, {"partition_index": 0, "timestamp": -2},
            {"partition_index": 1, "timestamp": -1}]}]})
    s.call("list-offsets-max-timestamp-v7", "main", ListOffsetsRequest, 7, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": T, "partitions": [
            {"partition_index": 0, "timestamp": -3}, {"partition_index": 5, "timestamp": -1}]}]})
    for v in (4, 11, 12, 13, 17):
        topic = {"partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20},
            {"partition": 1, "fetch_offset": 5, "partition_max_bytes": 1 << 20}]}
        if v >= 13:
            topic["topic_id"] = s.topic_ids.get(T, ZERO_UUID)
        else:
            topic["topic"] = T
        s.call("fetch-v%d" % v, "main", FetchRequest, v, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [topic],
            "forgotten_topics_data": [], "rack_id": ""})
    s.call("fetch-unknown-v12", "main", FetchRequest, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
            {"topic": X, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]},
            {"topic": T, "partitions": [
                {"partition": 7, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    s.call("fetch-unknown-v4", "main", FetchRequest, 4, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 1, "topics": [
            {"topic": X, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]},
            {"topic": T, "partitions": [
                {"partition": 7, "fetch_offset": 0, "partition_max_bytes": 1 << 20},
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    s.call("fetch-unknown-topic-id-v13", "main", FetchRequest, 13, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
            {"topic_id": str(uuid.UUID(int=7)), "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    s.call("produce-v9", "main", ProduceRequest, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": U, "partition_data": [{"index": 0, "records": record_batch()}]},
            {"name": X, "partition_data": [{"index": 0, "records": record_batch()}]}]})
    for v in (11, 13):
        topic = {"partition_data": [{"index": 0, "records": record_batch()},
                                    {"index": 5, "records": record_batch()}]}
        if v >= 13:
            topic["topic_id"] = s.topic_ids.get(U, ZERO_UUID)
        else:
            topic["name"] = U
        s.call("produce-v%d" % v, "main", ProduceRequest, v, {
            "transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [topic]})

    # ---- DescribeCluster, an API kcoord does not serve
    for v in range(3):
        f = {"include_cluster_authorized_operations": False}
        if v >= 1:
            f["endpoint_type"] = 1
        if v >= 2:
            f["include_fenced_brokers"] = False
        s.call("describe-cluster-v%d" % v, "main", DescribeClusterRequest, v, f)
    s.call("describe-cluster-controllers-v1", "main", DescribeClusterRequest, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": 2})
    s.call("describe-cluster-ops-v0", "main", DescribeClusterRequest, 0, {
        "include_cluster_authorized_operations": True})
    s.call("describe-configs-topic", "main", DescribeConfigsRequest, 4, {
        "resources": [{"resource_type": 2, "resource_name": T, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    s.call("describe-configs-group", "main", DescribeConfigsRequest, 4, {
        "resources": [{"resource_type": 32, "resource_name": gX,
                       "configuration_keys": ["consumer.session.timeout.ms",
                                              "consumer.heartbeat.interval.ms"]}],
        "include_synonyms": True, "include_documentation": False})

    # ---- DeleteTopics
    s.call("delete-topics-v0", "old", DeleteTopicsRequest, 0,
           {"topic_names": [X], "timeout_ms": 30000})
    s.call("delete-topics-v1", "main", DeleteTopicsRequest, 1,
           {"topic_names": [T], "timeout_ms": 30000})
    s.call("delete-topics-name-and-id-v6", "main", DeleteTopicsRequest, 6, {"topics": [
        {"name": U, "topic_id": s.topic_ids.get(U, ZERO_UUID)}], "timeout_ms": 30000})
    s.call("delete-topics-unknown-v5", "main", DeleteTopicsRequest, 5,
           {"topic_names": [X], "timeout_ms": 30000})
    s.call("delete-topics-v6", "main", DeleteTopicsRequest, 6, {"topics": [
        {"name": U, "topic_id": ZERO_UUID},
        {"name": None, "topic_id": s.topic_ids.get(W, ZERO_UUID)},
        {"name": None, "topic_id": str(uuid.UUID(int=7))}], "timeout_ms": 30000})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # Kafka's metadata learns of deletions a little later
        r = s.quiet("main", MetadataRequest, 12, {
            "topics": [{"name": t} for t in (T, U, W)], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})
        if r is None or all(t.error_code != 0 for t in r.topics):
            break
        time.sleep(0.1)
    s.call("metadata-after-delete-topics", "main", MetadataRequest, 12, {
        "topics": [{"name": T}, {"name": U}, {"name": W}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})


# ------------------------------------------------------------------------------------------
# Comparison

def merged(records, k):
    """Records of one topic split over several entries, as one entry: every other field equal,
    or keyed records (dicts) with no key in common. None when they cannot be merged."""
    out = {}
    for rec in records:
        for f, val in rec.items():
            if f not in out:
                out[f] = val
            elif out[f] == val:
                continue
            elif isinstance(out[f], dict) and isinstance(val, dict) and f != k and \
                    not set(out[f]) & set(val):
                out[f] = dict(out[f], **val)
            else:
                return None
    return out


def keyed(v):
    """A list of records with a unique key field becomes {"[key]": record}. Topic entries
    that repeat a topic are merged first (Kafka's Fetch answers list failed partitions after
    the others, in entries of their own)."""
    if isinstance(v, dict):
        return {k: keyed(x) for k, x in v.items()}
    if isinstance(v, list):
        v = [keyed(x) for x in v]
        if v and all(isinstance(x, dict) for x in v):
            for k in KEY_FIELDS:
                if all(k in x for x in v):
                    keys = [str(x[k]) for x in v]
                    if len(set(keys)) == len(keys):
                        return {"[%s]" % x[k]: x for x in v}
                    if k in ("topic", "name", "topic_id"):
                        groups = {}
                        for x in v:
                            groups.setdefault(str(x[k]), []).append(x)
                        m = {"[%s]" % key: merged(g, k) for key, g in groups.items()}
                        if all(x is not None for x in m.values()):
                            return m
                    break
        return v
    return v


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            p = path + k if k.startswith("[") else (path + "." + k if path else k)
            if k not in b:
                out.append((p, a[k], "<absent>"))
            elif k not in a:
                out.append((p, "<absent>", b[k]))
            else:
                diff(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            any(isinstance(x, (dict, list)) for x in a + b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out)
    elif a != b or type(a) is not type(b):
        out.append((path, a, b))


def glob_re(pattern):
    """* matches within one path segment, ** across segments."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += r"[^.\[\]]*"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def load_justified(path):
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                raise Usage("%s:%d: expected API[/step] PATH WHY" % (path, n))
            api = parts[0] if "/" in parts[0] else parts[0] + "/*"
            path, only = parts[1], None
            if path[0] in "-+":
                path, only = path[1:], "kafka" if path[0] == "-" else "kcoord"
            rules.append({"api": api, "path": path, "re": glob_re(path), "only": only,
                          "why": parts[2], "line": n, "used": 0})
    return rules


def justify(rules, api, step, path, x, y):
    only = "kafka" if x == "<absent>" else "kcoord" if y == "<absent>" else None
    for r in rules:
        if r["only"] is not None and r["only"] != only:
            continue
        if fnmatch.fnmatchcase(api + "/" + step, r["api"]) and r["re"].match(path):
            r["used"] += 1
            return r
    return None


def compare(kc, kf, rules):
    results = []
    kf_steps = {r["step"]: r for r in kf.steps}
    for rk in kc.steps:
        rf = kf_steps.get(rk["step"])
        if rf is None:
            continue
        ak = {"$outcome": rk["outcome"], "body": keyed(kc.normalise(rk["response"]))}
        af = {"$outcome": rf["outcome"], "body": keyed(kf.normalise(rf["response"]))}
        raw = []
        if ak["$outcome"] != af["$outcome"]:
            raw.append(("$outcome", ak["$outcome"], af["$outcome"]))
        else:
            diff(ak["body"], af["body"], "", raw)
        diffs = []
        for path, x, y in raw:
            r = justify(rules, rk["api"], rk["step"], path, x, y)
            diffs.append({"path": path, "kcoord": x, "kafka": y,
                          "justified": ("%s (line %d)" % (r["why"], r["line"])) if r else None})
        if not diffs:
            verdict = "equal"
        elif all(d["justified"] for d in diffs):
            verdict = "justified"
        else:
            verdict = "unjustified"
        results.append({"step": rk["step"], "api": rk["api"], "version": rk["version"],
                        "verdict": verdict, "differences": diffs,
                        "kcoord": {k: rk.get(k) for k in ("request", "outcome", "response",
                                                          "error")},
                        "kafka": {k: rf.get(k) for k in ("request", "outcome", "response",
                                                         "error")},
                        "normalised": {"kcoord": kc.normalise(rk["response"]),
                                       "kafka": kf.normalise(rf["response"])}})
    return results


def only_run_groups(sess, run):
    """ListGroups answers keep only this run's groups (the servers may hold others)."""
    for rec in sess.steps:
        if rec["api"] == "ListGroups" and rec.get("response"):
            rec["response"]["groups"] = [g for g in rec["response"].get("groups") or []
                                         if g.get("group_id", "").startswith(run + "-")]


def short(v, limit=2000):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + "...(%d chars)" % len(s)


def kafka_ref_bootstrap():
    """The address of the broker scripts/kafka-ref runs, or None."""
    try:
        out = subprocess.run([os.path.join(ROOT, "scripts", "kafka-ref"), "env"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^KAFKA_REF_BOOTSTRAP=['\"]?([^'\"\s]+)", out, re.M)
    return m.group(1) if m else None


def parse_addr(s):
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise Usage("expected HOST:PORT, got %r" % s)
    return host.strip("[]"), int(port)


def main():
    ap = argparse.ArgumentParser(
        description="Send one fixed request sequence to kcoord and to a reference Kafka "
                    "broker and compare the decoded responses field by field.")
    ap.add_argument("--kcoord", required=True, metavar="HOST:PORT")
    ap.add_argument("--kafka", default=os.environ.get("KAFKA_REF_BOOTSTRAP"),
                    metavar="HOST:PORT",
                    help="default: $KAFKA_REF_BOOTSTRAP, else `scripts/kafka-ref env`")
    ap.add_argument("--json", metavar="OUT", help="write every step and difference to OUT")
    ap.add_argument("--justified", default=JUSTIFIED, metavar="FILE",
                    help="the justified differences (default tests/compat/diff-justified)")
    ap.add_argument("--run-id", help="names: cdiff-<run id>-... (default: random)")
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="seconds to wait for one response (default 20)")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="also show justified differences")
    args = ap.parse_args()
    try:
        if not args.kafka:
            args.kafka = kafka_ref_bootstrap()
        if not args.kafka:
            raise Usage("--kafka is required (no KAFKA_REF_BOOTSTRAP, and scripts/kafka-ref "
                        "env names no running broker)")
        kc_addr, kf_addr = parse_addr(args.kcoord), parse_addr(args.kafka)
        rules = load_justified(args.justified)
    except (Usage, OSError) as e:
        print("compat-diff: %s" % e, file=sys.stderr)
        return 2
    if kafka.__version__ != KAFKA_PYTHON_VERSION:
        print("compat-diff: warning: kafka-python %s, the check is written for %s"
              % (kafka.__version__, KAFKA_PYTHON_VERSION), file=sys.stderr)
    run = "cdiff-" + (args.run_id or secrets.token_hex(4))

    sessions = []
    for label, addr in (("kcoord", kc_addr), ("kafka", kf_addr)):
        s = ServerRun(label, addr, run, args.timeout)
        t0 = time.monotonic()
        try:
            scenario(s)
        except Unprepared as e:
            print("compat-diff: %s at %s:%d: %s" % (label, addr[0], addr[1], e),
                  file=sys.stderr)
            return 2
        finally:
            for c in s.conns.values():
                if not c.closed:
                    c._close("done")
        only_run_groups(s, run)
        print("compat-diff: %s %s:%d: %d requests in %.1f s"
              % (label, addr[0], addr[1], len(s.steps), time.monotonic() - t0))
        sessions.append(s)

    results = compare(sessions[0], sessions[1], rules)
    counts = {"equal": 0, "justified": 0, "unjustified": 0}
    ndiff = {"justified": 0, "unjustified": 0}
    for r in results:
        counts[r["verdict"]] += 1
        for d in r["differences"]:
            ndiff["justified" if d["justified"] else "unjustified"] += 1
        if r["verdict"] == "unjustified" or (args.verbose and r["verdict"] == "justified"):
            print("\n%s %s v%d %s" % ("DIFF" if r["verdict"] == "unjustified" else "justified",
                                      r["api"], r["version"], r["step"]))
            for d in r["differences"]:
                print("  %s %s: kcoord %s, kafka %s" % (
                    "ok  " if d["justified"] else "BAD ", d["path"], short(d["kcoord"], 200),
                    short(d["kafka"], 200)) + ("  [%s]" % d["justified"] if d["justified"]
                                               and args.verbose else ""))
            if r["verdict"] == "unjustified":
                print("  request (kcoord): %s" % short(r["kcoord"]["request"]))
                for side in ("kcoord", "kafka"):
                    extra = r[side].get("error")
                    print("  %s: %s %s%s" % (side, r[side]["outcome"],
                                            short(r["normalised"][side]),
                                            "  (%s)" % extra if extra else ""))
    unused = [r for r in rules if not r["used"]]
    if args.verbose:
        for r in unused:
            print("compat-diff: justification on line %d matched nothing: %s %s"
                  % (r["line"], r["api"], r["path"]))
    summary = {"run": run, "requests": len(results), "equal": counts["equal"],
               "justified": counts["justified"], "unjustified": counts["unjustified"],
               "justified_differences": ndiff["justified"],
               "unjustified_differences": ndiff["unjustified"],
               "unused_justifications": len(unused)}
    print("\ncompat-diff: %(requests)d requests to each server: %(equal)d equal, %(justified)d "
          "with only justified differences (%(justified_differences)d), %(unjustified)d with "
          "unjustified differences (%(unjustified_differences)d)" % summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kcoord": args.kcoord, "kafka": args.kafka, "summary": summary,
                       "steps": results}, f, indent=1, sort_keys=True)
            f.write("\n")
    return 1 if counts["unjustified"] else 0


if __name__ == "__main__":
    sys.exit(main())
