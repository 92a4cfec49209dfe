#!/usr/bin/python3
"""sasl_client: one confluent-kafka consumer (the confluent-kafka of whichever python runs this
file, and its librdkafka) over a SASL_PLAINTEXT or SASL_SSL listener, for test_sasl.py.

Usage: sasl_client.py JSON, JSON holding bootstrap, group, protocol (SASL_PLAINTEXT or
SASL_SSL), mechanism, user, password, and optionally ca (for SASL_SSL) and hold_s (keep the
connection busy that long after the first commit, committing again every half second: long
enough for connections.max.reauth.ms to make the client re-authenticate). The consumer joins
the group (classic protocol) subscribed to topic t, commits offset 42 of t[0] synchronously
and reads it back with committed(). Prints one JSON line: the library versions, the assigned
partitions, the committed offset, and the number of commits made while holding; exits 0.
Exits 1 with a message (the errors librdkafka reported) on any failure or after 30 s without an
assignment.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition


def main():
    a = json.loads(sys.argv[1])
    errors = []
    conf = {
        "bootstrap.servers": a["bootstrap"],
        "group.id": a["group"],
        "security.protocol": a["protocol"],
        "sasl.mechanisms": a["mechanism"],
        "sasl.username": a["user"],
        "sasl.password": a["password"],
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "error_cb": lambda e: errors.append(str(e)),
    }
    if a.get("ca"):
        conf["ssl.ca.location"] = a["ca"]
    assigned = []
    c = Consumer(conf)
    c.subscribe(["t"], on_assign=lambda consumer, parts: assigned.extend(parts))
    deadline = time.monotonic() + 30
    while not assigned and time.monotonic() < deadline:
        c.poll(0.2)
    if not assigned:
        sys.exit("sasl_client: no assignment within 30 s; errors: %s" % errors[-5:])
    c.commit(offsets=[TopicPartition("t", 0, 42)], asynchronous=False)
    held = 0
    end = time.monotonic() + a.get("hold_s", 0)
    while time.monotonic() < end:
        c.poll(0.5)
        c.commit(offsets=[TopicPartition("t", 0, 42 + held)], asynchronous=False)
        held += 1
    got = c.committed([TopicPartition("t", 0)], timeout=10)
    c.close()
    v = __import__("confluent_kafka")
    version = v.version()
    print(json.dumps({"version": version[0] if isinstance(version, tuple) else version,
                      "librdkafka": v.libversion()[0],
                      "assigned": sorted("%s-%d" % (p.topic, p.partition) for p in assigned),
                      "committed": got[0].offset, "held": held, "errors": errors}))


if __name__ == "__main__":
    main()
