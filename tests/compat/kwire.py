"""kwire: a tiny Kafka wire-protocol client, the compatibility suite's independent observer.

The suite judges a scenario by what the clients under test report (their rebalance callbacks,
commit results) and, separately, by what the server itself says about the group. This module
asks the server, with fixed old request versions that Kafka 4.x and kcoord both serve, so that
the observer depends on no client library under test:

    FindCoordinator v1, DescribeGroups v4, OffsetFetch v3, Metadata v1, CreateTopics v2,
    ConsumerGroupDescribe v0 (KIP-848 consumer groups; flexible in every version)

Every call opens its own connection, sends one request and reads one response (header v0, or
v1 for the flexible ConsumerGroupDescribe), and raises KwireError on a socket error, a short or garbled
response, or a Kafka error code the caller did not ask to tolerate. Coordinator errors that a
waiting caller should retry (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR) raise KwireRetry, a subclass.

To extend: write the request body with the Writer, parse the response with the Reader (it
raises on a short read), and keep to versions below the first flexible one where there is
one (the Writer and Reader have the compact forms for an API that is flexible only).
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import wire  # noqa: E402

# Kafka error codes used below.
NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
TOPIC_ALREADY_EXISTS = 36
GROUP_ID_NOT_FOUND = 69
RETRIABLE = (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)

CLIENT_ID = "kcoord-compat-observer"


class KwireError(Exception):
    pass


class KwireRetry(KwireError):
    pass


# The encoders and the Reader are the test support's (tests/support/wire.py); a short or
# garbled response raises KwireError here.
Writer = wire.Writer


class Reader(wire.Reader):
    error = KwireError


def split_addr(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def call(addr, api_key, version, body, timeout=10.0, flexible=False):
    """Send one request to addr ("host:port") and return a Reader over the response body
    (request header v1 and response header v0, or v2 and v1 when flexible)."""
    header = Writer().i16(api_key).i16(version).i32(1).string(CLIENT_ID)
    if flexible:
        header.uvarint(0)  # no tagged fields
    header = header.bytes()
    frame = header + body
    try:
        with socket.create_connection(split_addr(addr), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", recv_exact(s, 4))[0]
            if size < 4 or size > 64 << 20:
                raise KwireError("response size %d" % size)
            payload = recv_exact(s, size)
    except OSError as e:
        raise KwireError("%s: %s" % (addr, e)) from None
    r = Reader(payload)
    if r.i32() != 1:
        raise KwireError("response with another correlation id")
    if flexible:
        r.tagged_fields()
    return r


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise KwireError("connection closed after %d of %d bytes" % (len(out), n))
        out += chunk
    return out


def find_coordinator(addr, group):
    """The group coordinator's "host:port" (FindCoordinator v1)."""
    r = call(addr, 10, 1, Writer().string(group).i8(0).bytes())
    r.i32()  # throttle
    err = r.i16()
    msg = r.string()
    r.i32()  # node id
    host = r.string()
    port = r.i32()
    if err in RETRIABLE:
        raise KwireRetry("FindCoordinator(%s): error %d %s" % (group, err, msg or ""))
    if err != NONE:
        raise KwireError("FindCoordinator(%s): error %d %s" % (group, err, msg or ""))
    return "%s:%d" % (host, port)


def decode_assignment(b):
    """{topic: [partitions]} from ConsumerProtocolAssignment bytes (any version)."""
    if not b:
        return {}
    r = Reader(b)
    r.i16()  # version
    out = {}
    for topic, parts in r.array(lambda r: (r.string(), r.array(Reader.i32))):
        out.setdefault(topic, []).extend(parts)
    return {t: sorted(p) for t, p in out.items()}


def describe_group(addr, group):
    """DescribeGroups v4 of one group: a dict with error, state, protocol_type, protocol and
    members (each member_id, instance_id, client_id, client_host, assignment)."""
    coord = find_coordinator(addr, group)
    body = Writer().i32(1).string(group).i8(0).bytes()
    r = call(coord, 15, 4, body)
    r.i32()  # throttle

    def member(r):
        m = {"member_id": r.string(), "instance_id": r.string(), "client_id": r.string(),
             "client_host": r.string()}
        r.bytes_()  # subscription metadata
        m["assignment"] = decode_assignment(r.bytes_())
        return m

    def grp(r):
        g = {"error": r.i16(), "group": r.string(), "state": r.string(),
             "protocol_type": r.string(), "protocol": r.string(), "members": r.array(member)}
        r.i32()  # authorized operations
        return g

    groups = r.array(grp)
    if not groups or len(groups) != 1:
        raise KwireError("DescribeGroups returned %r" % groups)
    g = groups[0]
    if g["error"] in RETRIABLE:
        raise KwireRetry("DescribeGroups(%s): error %d" % (group, g["error"]))
    return g


def consumer_group_describe(addr, group):
    """ConsumerGroupDescribe v0 of one KIP-848 consumer group: a dict with error, state,
    group_epoch, assignment_epoch, assignor and members (each member_id, instance_id,
    member_epoch, client_id, topics, assignment and target, both {topic: [partitions]})."""
    coord = find_coordinator(addr, group)
    body = Writer().uvarint(2).compact_string(group).i8(0).uvarint(0).bytes()
    r = call(coord, 69, 0, body, flexible=True)
    r.i32()  # throttle

    def assignment(r):
        def tp(r):
            r.take(16)  # topic id
            t = (r.compact_string(), r.compact_array(Reader.i32))
            r.tagged_fields()
            return t

        out = {}
        for topic, parts in r.compact_array(tp) or []:
            out.setdefault(topic, []).extend(parts or [])
        r.tagged_fields()
        return {t: sorted(p) for t, p in out.items()}

    def member(r):
        m = {"member_id": r.compact_string(), "instance_id": r.compact_string(),
             "rack_id": r.compact_string(), "member_epoch": r.i32(),
             "client_id": r.compact_string(), "client_host": r.compact_string(),
             "topics": r.compact_array(Reader.compact_string),
             "regex": r.compact_string(), "assignment": assignment(r),
             "target": assignment(r)}
        r.tagged_fields()
        return m

    def grp(r):
        g = {"error": r.i16(), "message": r.compact_string(), "group": r.compact_string(),
             "state": r.compact_string(), "group_epoch": r.i32(),
             "assignment_epoch": r.i32(), "assignor": r.compact_string(),
             "members": r.compact_array(member) or []}
        r.i32()  # authorized operations
        r.tagged_fields()
        return g

    groups = r.compact_array(grp)
    if not groups or len(groups) != 1:
        raise KwireError("ConsumerGroupDescribe returned %r" % groups)
    g = groups[0]
    if g["error"] in RETRIABLE:
        raise KwireRetry("ConsumerGroupDescribe(%s): error %d" % (group, g["error"]))
    return g


def fetch_offsets(addr, group):
    """Every committed offset of the group (OffsetFetch v3, all topics):
    {(topic, partition): (offset, metadata)}."""
    coord = find_coordinator(addr, group)
    r = call(coord, 9, 3, Writer().string(group).i32(-1).bytes())
    r.i32()  # throttle

    def part(r):
        return (r.i32(), r.i64(), r.string(), r.i16())

    topics = r.array(lambda r: (r.string(), r.array(part)))
    err = r.i16()
    if err in RETRIABLE:
        raise KwireRetry("OffsetFetch(%s): error %d" % (group, err))
    if err != NONE:
        raise KwireError("OffsetFetch(%s): error %d" % (group, err))
    out = {}
    for topic, parts in topics or []:
        for p, off, meta, perr in parts:
            if perr != NONE:
                raise KwireError("OffsetFetch(%s) %s-%d: error %d" % (group, topic, p, perr))
            if off >= 0:
                out[(topic, p)] = (off, meta)
    return out


def metadata(addr, topics):
    """Metadata v1 for the named topics: {topic: (error, {partition: leader})}."""
    w = Writer().i32(len(topics))
    for t in topics:
        w.string(t)
    r = call(addr, 3, 1, w.bytes())
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))  # brokers
    r.i32()  # controller

    def part(r):
        err, p, leader = r.i16(), r.i32(), r.i32()
        r.array(Reader.i32)
        r.array(Reader.i32)
        return p, leader, err

    def topic(r):
        err, name = r.i16(), r.string()
        r.boolean()
        parts = r.array(part)
        return name, (err, {p: leader for p, leader, perr in parts if perr == NONE})

    return dict(r.array(topic))


def create_topics(addr, topics, timeout_ms=30000):
    """CreateTopics v2 with replication factor 1: topics is {name: partitions}. Returns
    {name: (error, message)}; TOPIC_ALREADY_EXISTS counts as success."""
    w = Writer().i32(len(topics))
    for name, parts in sorted(topics.items()):
        w.string(name).i32(parts).i16(1).i32(0).i32(0)
    w.i32(timeout_ms).i8(0)
    r = call(addr, 19, 2, w.bytes(), timeout=timeout_ms / 1000 + 10)
    r.i32()  # throttle
    out = {}
    for name, err, msg in r.array(lambda r: (r.string(), r.i16(), r.string())):
        out[name] = (NONE if err == TOPIC_ALREADY_EXISTS else err, msg)
    return out
