"""calls: the Kafka requests several tests send, encoded by hand over a wire.Conn.

Classic-group membership (JoinGroup v5 with the KIP-394 member id round trip, then SyncGroup
v3) and OffsetCommit v7, the non-flexible versions every supported client can send. A test
that needs another request writes it with the encoders of wire.py; one that two tests need
comes here.
"""
from tests.support.wire import bytes_, i16, i32, i64, string

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, SYNC_GROUP = 8, 9, 11, 14
MEMBER_ID_REQUIRED = 79


def subscription(topic):
    """ConsumerProtocol subscription v0 of one topic."""
    return i16(0) + i32(1) + string(topic) + bytes_(None)


def assignment(topic, partitions):
    """ConsumerProtocol assignment v0 of partitions of one topic."""
    return (i16(0) + i32(1) + string(topic) + i32(len(partitions)) +
            b"".join(i32(p) for p in partitions) + bytes_(None))


def join_classic(conn, group, session_ms, topic, partitions=None):
    """Join group as its only member (protocol "range" of type "consumer", subscribed to
    topic), then sync giving itself `partitions` of topic (empty assignment bytes when None):
    (generation, leader, member id). An error answer raises AssertionError."""
    meta = subscription(topic)
    member = ""
    for _ in range(3):
        body = (string(group) + i32(session_ms) + i32(session_ms) + string(member) +
                string(None) + string("consumer") + i32(1) + string("range") + bytes_(meta))
        r = conn.call(JOIN_GROUP, 5, body)
        r.i32()  # throttle
        err, gen, _proto, leader, member = r.i16(), r.i32(), r.string(), r.string(), r.string()
        if err == MEMBER_ID_REQUIRED:
            continue
        if err != 0:
            raise AssertionError("JoinGroup %s: error %d" % (group, err))
        break
    else:
        raise AssertionError("JoinGroup %s: no member id after 3 tries" % group)
    given = b"" if partitions is None else assignment(topic, partitions)
    body = (string(group) + i32(gen) + string(member) + string(None) +
            i32(1) + string(member) + bytes_(given))
    r = conn.call(SYNC_GROUP, 3, body)
    r.i32()  # throttle
    err = r.i16()
    if err != 0:
        raise AssertionError("SyncGroup %s: error %d" % (group, err))
    return gen, leader, member


def commit_request(group, gen, member, topic, offsets):
    """OffsetCommit v7 of {partition: offset} on topic, metadata "o<offset>" (generation -1 and
    member "" make a simple commit)."""
    parts = b"".join(i32(p) + i64(o) + i32(-1) + string("o%d" % o) for p, o in offsets.items())
    return (string(group) + i32(gen) + string(member) + string(None) +
            i32(1) + string(topic) + i32(len(offsets)) + parts)


def commit_errors(r):
    """{partition: error code} of an OffsetCommit v7 response."""
    r.i32()  # throttle
    out = {}
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            p = r.i32()
            out[p] = r.i16()
    return out


def commit(conn, group, gen, member, topic, offsets):
    """Send an OffsetCommit v7 on conn and read it: {partition: error code}."""
    return commit_errors(conn.call(OFFSET_COMMIT, 7,
                                   commit_request(group, gen, member, topic, offsets)))
