"""calls: the Kafka requests several tests send, over a wire.Conn, built by gen_wire.py.

Classic-group membership (JoinGroup v5 with the KIP-394 member id round trip, then SyncGroup
v3) and OffsetCommit v7, the non-flexible versions every supported client can send. A test
that needs another request sends it with Conn.ask; one that two tests need comes here.
"""
from tests.support import gen_wire
from tests.support.wire import i16

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, SYNC_GROUP = 8, 9, 11, 14
MEMBER_ID_REQUIRED = 79


def subscription(topic):
    """ConsumerProtocol subscription v0 of one topic."""
    return i16(0) + gen_wire.encode_consumer_protocol_subscription(0, topics=[topic])


def assignment(topic, partitions):
    """ConsumerProtocol assignment v0 of partitions of one topic."""
    return i16(0) + gen_wire.encode_consumer_protocol_assignment(
        0, assigned_partitions=[dict(topic=topic, partitions=list(partitions))])


def join_classic(conn, group, session_ms, topic, partitions=None):
    """Join group as its only member (protocol "range" of type "consumer", subscribed to
    topic), then sync giving itself `partitions` of topic (empty assignment bytes when None):
    (generation, leader, member id). An error answer raises AssertionError."""
    meta = subscription(topic)
    member = ""
    for _ in range(3):
        r = conn.ask("JoinGroup", 5, group_id=group, session_timeout_ms=session_ms,
                     rebalance_timeout_ms=session_ms, member_id=member,
                     protocol_type="consumer", protocols=[dict(name="range", metadata=meta)])
        err, gen, leader, member = r.error_code, r.generation_id, r.leader, r.member_id
        if err == MEMBER_ID_REQUIRED:
            continue
        if err != 0:
            raise AssertionError("JoinGroup %s: error %d" % (group, err))
        break
    else:
        raise AssertionError("JoinGroup %s: no member id after 3 tries" % group)
    given = b"" if partitions is None else assignment(topic, partitions)
    r = conn.ask("SyncGroup", 3, group_id=group, generation_id=gen, member_id=member,
                 assignments=[dict(member_id=member, assignment=given)])
    if r.error_code != 0:
        raise AssertionError("SyncGroup %s: error %d" % (group, r.error_code))
    return gen, leader, member


def commit_request(group, gen, member, topic, offsets):
    """OffsetCommit v7 of {partition: offset} on topic, metadata "o<offset>" (generation -1 and
    member "" make a simple commit)."""
    return gen_wire.encode_offset_commit_request(
        7, group_id=group, generation_id_or_member_epoch=gen, member_id=member,
        topics=[dict(name=topic, partitions=[
            dict(partition_index=p, committed_offset=o, committed_metadata="o%d" % o)
            for p, o in offsets.items()])])


def commit_errors(r):
    """{partition: error code} of an OffsetCommit v7 response (a wire.Reader of its body)."""
    out = {}
    for t in gen_wire.decode_offset_commit_response(7, r).topics:
        for p in t.partitions:
            out[p.partition_index] = p.error_code
    return out


def commit(conn, group, gen, member, topic, offsets):
    """Send an OffsetCommit v7 on conn and read it: {partition: error code}."""
    return commit_errors(conn.call(OFFSET_COMMIT, 7,
                                   commit_request(group, gen, member, topic, offsets)))
