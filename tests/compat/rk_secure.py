"""rk_secure: one librdkafka consumer over a secured listener, for the security cells of
tests/compat/compat.py (tests/compat/secure.py): join, commit, read the commit back, close.

    PYTHON tests/compat/rk_secure.py --bootstrap H:P --group G --topic T [-X KEY=VALUE]...
                                     [--timeout S]

-X sets any librdkafka property (security.protocol, sasl.mechanisms, sasl.username, ...).
It runs with any confluent-kafka from 1.7 on. It subscribes to T in group G, waits for its
assignment, commits offset 10+p for each partition p it holds, reads the commits back with
OffsetFetch and closes; on the first error (an error callback, a consumer error or a failed
call) it stops. Its one line of output, a JSON object:

    {"librdkafka": "2.0.2", "assigned": [p...], "committed": {"p": offset...},
     "fetched": {"p": offset...}, "errors": [{"code": "GROUP_AUTHORIZATION_FAILED",
     "text": "..."}...]}

Error codes are librdkafka's names (KafkaError.name(): broker errors as Kafka names them,
local ones with a leading underscore, e.g. _AUTHENTICATION, _TRANSPORT, _SSL). The exit status
is 0 when it got through the commit and its read-back, 1 otherwise.
"""
import argparse
import json
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, TopicPartition


def err_entry(e):
    try:
        name = e.name()
    except AttributeError:
        name = str(e.code())
    return {"code": name, "text": e.str() if hasattr(e, "str") else str(e)}


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("-X", action="append", default=[], dest="props")
    ap.add_argument("--timeout", type=float, default=30)
    args = ap.parse_args(argv)
    errors = []
    out = {"librdkafka": confluent_kafka.libversion()[0], "assigned": [], "committed": {},
           "fetched": {}, "errors": errors}
    assigned = []
    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
            "error_cb": lambda e: errors.append(err_entry(e))}
    for kv in args.props:
        k, _, v = kv.partition("=")
        conf[k] = v
    ok = False
    c = Consumer(conf)
    try:
        c.subscribe([args.topic], on_assign=lambda _c, ps: assigned.extend(
            tp.partition for tp in ps if tp.topic == args.topic))
        deadline = time.monotonic() + args.timeout
        while not assigned and not errors and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() and m.error().name() != "_PARTITION_EOF":
                errors.append(err_entry(m.error()))
        out["assigned"] = sorted(assigned)
        if assigned and not errors:
            tps = [TopicPartition(args.topic, p, 10 + p) for p in sorted(assigned)]
            try:
                res = c.commit(offsets=tps, asynchronous=False)
                out["committed"] = {str(tp.partition): tp.offset for tp in res
                                    if tp.error is None}
                errors.extend(err_entry(tp.error) for tp in res if tp.error is not None)
                got = c.committed([TopicPartition(args.topic, p) for p in sorted(assigned)],
                                  timeout=10)
                out["fetched"] = {str(tp.partition): tp.offset for tp in got}
                errors.extend(err_entry(tp.error) for tp in got if tp.error is not None)
                ok = not errors
            except KafkaException as e:
                errors.append(err_entry(e.args[0]))
        elif not errors:
            errors.append({"code": "(none)", "text": "no assignment within %g s" % args.timeout})
    finally:
        try:
            c.close()
        except KafkaException as e:
            errors.append(err_entry(e.args[0]))
    print(json.dumps(out), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
