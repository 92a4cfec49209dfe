"""rk_member: one consumer-group member on librdkafka (confluent-kafka), for tests/compat/compat.py.

    PYTHON tests/compat/rk_member.py --bootstrap H:P --group G --topic T --client-id C
                                     [--instance-id I] [--session-timeout MS] [--no-subscribe]
                                     [--assignor NAME] [--group-protocol classic|consumer]

It runs with any confluent-kafka from 1.7 on (Debian's python3-confluent-kafka on the system
librdkafka, or the PyPI wheel in the suite's venv) and speaks the same language as Kafka's
VerifiableConsumer, so that tests/compat/compat.py drives every client alike: one JSON object per
line on stdout, with a "name" of

    startup_complete     {"librdkafka": "2.0.2", "client": "1.7.0", "commit_metadata": false}
    partitions_assigned  {"partitions": [{"topic", "partition"}...]}  (rebalance callback)
    partitions_revoked   {"partitions": [...]}  (with --group-protocol consumer, also from the
                         lost callback, with "lost": true)
    offsets_committed    {"offsets": [{"topic", "partition", "offset"}...], "success", "error"}
    committed            {"offsets": [{"topic", "partition", "offset", "metadata"}...]}
    error                {"error": "..."}  (a consumer error from poll, or a failed command)
    shutdown_complete    after close() returned

It polls every 100 ms and reads commands, one JSON object per line, from stdin:

    {"cmd": "commit", "offsets": [[partition, offset, metadata]...]}   synchronous commit
    {"cmd": "committed", "partitions": [partition...]}                 OffsetFetch
    {"cmd": "close"}                                                   close and exit

SIGTERM, SIGINT and the end of stdin close the consumer (revoke, LeaveGroup for a dynamic
member) and exit 0. With --no-subscribe it never joins: it only serves commands. With a
cooperative assignor the callbacks carry the incremental changes (confluent-kafka then assigns
incrementally by itself).

With --group-protocol consumer (KIP-848, librdkafka 2.12 and later) the member heartbeats with
ConsumerGroupHeartbeat and its callbacks are always incremental. The heartbeat interval, the
session timeout and the assignor are the server's then: librdkafka refuses session.timeout.ms,
heartbeat.interval.ms and partition.assignment.strategy with this protocol, so they are not
set, and --assignor names the server-side assignor (group.remote.assignor).
"""
import argparse
import json
import os
import select
import signal
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, TopicPartition


def emit(name, **fields):
    fields = dict(name=name, timestamp=int(time.time() * 1000), **fields)
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def parts(tps):
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def make_tp(topic, partition, offset, metadata):
    """A TopicPartition with commit metadata where this confluent-kafka supports it (2.1+)."""
    if metadata is not None:
        try:
            return TopicPartition(topic, partition, offset, metadata=metadata)
        except TypeError:
            pass
    return TopicPartition(topic, partition, offset)


def metadata_supported():
    try:
        TopicPartition("t", 0, 0, metadata="m")
        return True
    except TypeError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--instance-id")
    ap.add_argument("--session-timeout", type=int, default=30000)
    ap.add_argument("--assignor", help="partition.assignment.strategy, or with "
                    "--group-protocol consumer group.remote.assignor (default: the client's, or "
                    "the server's)")
    ap.add_argument("--no-subscribe", action="store_true")
    ap.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic")
    args = ap.parse_args()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stop.append("SIGINT"))

    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id,
        "session.timeout.ms": args.session_timeout,
        "heartbeat.interval.ms": 500,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    }
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if args.group_protocol == "consumer":
        conf["group.protocol"] = "consumer"
        del conf["session.timeout.ms"], conf["heartbeat.interval.ms"]
        if args.assignor:
            conf["group.remote.assignor"] = args.assignor
    elif args.assignor:
        conf["partition.assignment.strategy"] = args.assignor
    c = Consumer(conf)
    v = confluent_kafka.version()  # a (str, int) tuple in 1.x, a str in 2.x
    emit("startup_complete", librdkafka=confluent_kafka.libversion()[0],
         client=v if isinstance(v, str) else v[0], commit_metadata=metadata_supported())
    if not args.no_subscribe:
        callbacks = {
            "on_assign": lambda _c, tps: emit("partitions_assigned", partitions=parts(tps)),
            "on_revoke": lambda _c, tps: emit("partitions_revoked", partitions=parts(tps))}
        if args.group_protocol == "consumer":
            callbacks["on_lost"] = lambda _c, tps: emit("partitions_revoked",
                                                        partitions=parts(tps), lost=True)
        c.subscribe([args.topic], **callbacks)

    stdin_open = True
    pending = b""
    while not stop:
        if not args.no_subscribe:
            msg = c.poll(0.1)
            if msg is not None and msg.error():
                emit("error", error=str(msg.error()))
            elif msg is not None:
                emit("error", error="unexpected record at %s [%d] offset %d"
                     % (msg.topic(), msg.partition(), msg.offset()))
        if not stdin_open:
            if args.no_subscribe:
                break
            continue
        ready, _, _ = select.select([sys.stdin], [], [], 0 if not args.no_subscribe else 0.1)
        if not ready:
            continue
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            stdin_open = False
            stop.append("eof")
            continue
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                if command(c, args.topic, json.loads(line)) == "close":
                    stop.append("close")
    c.close()
    emit("shutdown_complete", reason=stop[0] if stop else "")


def command(c, topic, cmd):
    try:
        if cmd["cmd"] == "close":
            return "close"
        if cmd["cmd"] == "commit":
            tps = [make_tp(topic, p, o, m) for p, o, m in cmd["offsets"]]
            try:
                done = c.commit(offsets=tps, asynchronous=False)
            except KafkaException as e:
                emit("offsets_committed", offsets=[], success=False, error=str(e))
                return None
            errs = [tp for tp in done if tp.error is not None]
            emit("offsets_committed",
                 offsets=[{"topic": tp.topic, "partition": tp.partition, "offset": tp.offset}
                          for tp in done],
                 success=not errs, error=str(errs[0].error) if errs else None)
        elif cmd["cmd"] == "committed":
            tps = [TopicPartition(topic, p) for p in cmd["partitions"]]
            got = c.committed(tps, timeout=15)
            emit("committed", offsets=[
                {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset,
                 "metadata": getattr(tp, "metadata", None),
                 "error": str(tp.error) if tp.error is not None else None} for tp in got])
        else:
            emit("error", error="unknown command %r" % cmd)
    except KafkaException as e:
        emit("error", error="%s failed: %s" % (cmd.get("cmd"), e))
    return None


if __name__ == "__main__":
    main()
