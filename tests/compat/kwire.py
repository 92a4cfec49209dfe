"""kwire: a tiny Kafka wire-protocol client, the compatibility suite's independent observer.

The suite judges a scenario by what the clients under test report (their rebalance callbacks,
commit results) and, separately, by what the server itself says about the group. This module
asks the server, with fixed old request versions that Kafka 4.x and kcoord both serve, so that
the observer depends on no client library under test:

    FindCoordinator v1, DescribeGroups v4, OffsetFetch v3, OffsetCommit v2, Metadata v1,
    CreateTopics v2, ConsumerGroupDescribe v0 and v1 (v1: KIP-1099 member types) and
    ConsumerGroupHeartbeat v0 (KIP-848 consumer groups; flexible in every version)

Every call opens its own connection, sends one request and reads one response (header v0, or
v1 for the flexible ConsumerGroupDescribe), and raises KwireError on a socket error, a short or garbled
response, or a Kafka error code the caller did not ask to tolerate. Coordinator errors that a
waiting caller should retry (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR) raise KwireRetry, a subclass.

To extend: send the request with ask(), which builds it with the client generated from
proto/ (tests/support/gen_wire.py) and decodes the answer, and keep to versions below the
first flexible one where there is one.
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import gen_wire, wire  # noqa: E402

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


# The primitives are the test support's (tests/support/wire.py; tests/bench/hostile.py uses
# them through here); a short or garbled response raises KwireError here.
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


def ask(addr, api, version, timeout=10.0, **fields):
    """Send request `api` (a name of gen_wire.APIS) built by gen_wire.py from fields to addr
    and decode its answer: a wire.Msg. A short or garbled answer raises KwireError."""
    key, _, _, first_flexible = gen_wire.APIS[api]
    flexible = first_flexible is not None and version >= first_flexible
    name = wire._snake(api)
    body = getattr(gen_wire, "encode_%s_request" % name)(version, **fields)
    r = call(addr, key, version, body, timeout=timeout, flexible=flexible)
    try:
        return getattr(gen_wire, "decode_%s_response" % name)(version, r)
    except wire.WireError as e:
        raise KwireError(str(e)) from None


def find_coordinator(addr, group):
    """The group coordinator's "host:port" (FindCoordinator v1)."""
    r = ask(addr, "FindCoordinator", 1, key=group, key_type=0)
    err, msg = r.error_code, r.error_message
    if err in RETRIABLE:
        raise KwireRetry("FindCoordinator(%s): error %d %s" % (group, err, msg or ""))
    if err != NONE:
        raise KwireError("FindCoordinator(%s): error %d %s" % (group, err, msg or ""))
    return "%s:%d" % (r.host, r.port)


def decode_assignment(b):
    """{topic: [partitions]} from ConsumerProtocolAssignment bytes (any version)."""
    if not b:
        return {}
    r = Reader(b)
    version = r.i16()
    try:
        a = gen_wire.decode_consumer_protocol_assignment(min(version, 3), r)
    except wire.WireError as e:
        raise KwireError(str(e)) from None
    out = {}
    for tp in a.assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return {t: sorted(p) for t, p in out.items()}


def describe_group(addr, group):
    """DescribeGroups v4 of one group: a dict with error, state, protocol_type, protocol and
    members (each member_id, instance_id, client_id, client_host, assignment)."""
    coord = find_coordinator(addr, group)
    r = ask(coord, "DescribeGroups", 4, groups=[group], include_authorized_operations=False)
    groups = [{"error": g.error_code, "group": g.group_id, "state": g.group_state,
               "protocol_type": g.protocol_type, "protocol": g.protocol_data,
               "members": [{"member_id": m.member_id, "instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "assignment": decode_assignment(m.member_assignment)}
                           for m in g.members]}
              for g in r.groups]
    if not groups or len(groups) != 1:
        raise KwireError("DescribeGroups returned %r" % groups)
    g = groups[0]
    if g["error"] in RETRIABLE:
        raise KwireRetry("DescribeGroups(%s): error %d" % (group, g["error"]))
    return g


def consumer_group_describe(addr, group, version=0):
    """ConsumerGroupDescribe v0 (or v1) of one KIP-848 consumer group: a dict with error,
    state, group_epoch, assignment_epoch, assignor and members (each member_id, instance_id,
    member_epoch, client_id, topics, assignment and target, both {topic: [partitions]}, and
    with v1 member_type: 0 classic, 1 consumer)."""
    coord = find_coordinator(addr, group)
    r = ask(coord, "ConsumerGroupDescribe", version, group_ids=[group],
            include_authorized_operations=False)

    def assignment(a):
        out = {}
        for tp in a.topic_partitions or []:
            out.setdefault(tp.topic_name, []).extend(tp.partitions or [])
        return {t: sorted(p) for t, p in out.items()}

    def member(m):
        return {"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id,
                "client_host": m.client_host, "topics": m.subscribed_topic_names,
                "regex": m.subscribed_topic_regex, "assignment": assignment(m.assignment),
                "target": assignment(m.target_assignment),
                "member_type": m.member_type if version >= 1 else None}

    groups = [{"error": g.error_code, "message": g.error_message, "group": g.group_id,
               "state": g.group_state, "group_epoch": g.group_epoch,
               "assignment_epoch": g.assignment_epoch, "assignor": g.assignor_name,
               "members": [member(m) for m in g.members or []]}
              for g in r.groups or []]
    if not groups or len(groups) != 1:
        raise KwireError("ConsumerGroupDescribe returned %r" % groups)
    g = groups[0]
    if g["error"] in RETRIABLE:
        raise KwireRetry("ConsumerGroupDescribe(%s): error %d" % (group, g["error"]))
    return g


def consumer_group_heartbeat(addr, group, member_id="", epoch=0, topics=None):
    """One ConsumerGroupHeartbeat v0: a join (epoch 0, empty member id: the server names the
    member) subscribing to topics, or a leave (epoch -1). A dict with error, message,
    member_id, member_epoch and heartbeat_interval_ms."""
    coord = find_coordinator(addr, group)
    joining = epoch == 0
    r = ask(coord, "ConsumerGroupHeartbeat", 0, group_id=group, member_id=member_id,
            member_epoch=epoch, rebalance_timeout_ms=300000 if joining else -1,
            subscribed_topic_names=list(topics or []) if joining else None,
            topic_partitions=[] if joining else None)
    if r.error_code in RETRIABLE:
        raise KwireRetry("ConsumerGroupHeartbeat(%s): error %d" % (group, r.error_code))
    return {"error": r.error_code, "message": r.error_message, "member_id": r.member_id,
            "member_epoch": r.member_epoch, "heartbeat_interval_ms": r.heartbeat_interval_ms}


def fetch_offsets(addr, group):
    """Every committed offset of the group (OffsetFetch v3, all topics):
    {(topic, partition): (offset, metadata)}."""
    coord = find_coordinator(addr, group)
    r = ask(coord, "OffsetFetch", 3, group_id=group, topics=None)
    err = r.error_code
    if err in RETRIABLE:
        raise KwireRetry("OffsetFetch(%s): error %d" % (group, err))
    if err != NONE:
        raise KwireError("OffsetFetch(%s): error %d" % (group, err))
    out = {}
    for t in r.topics or []:
        for p in t.partitions:
            if p.error_code != NONE:
                raise KwireError("OffsetFetch(%s) %s-%d: error %d"
                                 % (group, t.name, p.partition_index, p.error_code))
            if p.committed_offset >= 0:
                out[(t.name, p.partition_index)] = (p.committed_offset, p.metadata)
    return out


def commit_offsets(addr, group, topic, offsets):
    """Commit {partition: (offset, metadata)} of one topic as an administrator would
    (OffsetCommit v2, generation -1, no member id: accepted while the group has no members).
    Raises KwireError unless every partition was committed."""
    coord = find_coordinator(addr, group)
    r = ask(coord, "OffsetCommit", 2, group_id=group, generation_id_or_member_epoch=-1,
            member_id="", retention_time_ms=-1,
            topics=[dict(name=topic, partitions=[
                dict(partition_index=p, committed_offset=o, committed_metadata=m or "")
                for p, (o, m) in sorted(offsets.items())])])
    bad = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions
           if p.error_code != NONE}
    if any(e in RETRIABLE for e in bad.values()):
        raise KwireRetry("OffsetCommit(%s): errors %s" % (group, bad))
    if bad:
        raise KwireError("OffsetCommit(%s): errors %s" % (group, bad))


def metadata(addr, topics):
    """Metadata v1 for the named topics: {topic: (error, {partition: leader})}."""
    r = ask(addr, "Metadata", 1, topics=[dict(name=t) for t in topics])
    return {t.name: (t.error_code, {p.partition_index: p.leader_id for p in t.partitions
                                    if p.error_code == NONE})
            for t in r.topics}


def create_topics(addr, topics, timeout_ms=30000):
    """CreateTopics v2 with replication factor 1: topics is {name: partitions}. Returns
    {name: (error, message)}; TOPIC_ALREADY_EXISTS counts as success."""
    r = ask(addr, "CreateTopics", 2, timeout=timeout_ms / 1000 + 10,
            topics=[dict(name=name, num_partitions=parts, replication_factor=1)
                    for name, parts in sorted(topics.items())],
            timeout_ms=timeout_ms, validate_only=False)
    return {t.name: (NONE if t.error_code == TOPIC_ALREADY_EXISTS else t.error_code,
                     t.error_message) for t in r.topics}
