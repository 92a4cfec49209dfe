#!/usr/bin/python3
"""tls_client: one confluent-kafka consumer (the confluent-kafka of whichever python runs this
file, and its librdkafka) over an SSL listener, for test_tls.py.

Usage: tls_client.py JSON, JSON holding bootstrap, group, ca, and optionally cert and key (a
client certificate for mTLS). The consumer joins the group (classic protocol) subscribed to
topic t, commits offset 42 of t[0] synchronously, reads it back with committed(), and asks for
metadata. Prints one JSON line: the library versions, the assigned partitions, the committed
offset and the broker addresses metadata gave; exits 0. Exits 1 with a message on any failure
or after 40 s without an assignment.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition


def main():
    a = json.loads(sys.argv[1])
    conf = {
        "bootstrap.servers": a["bootstrap"],
        "group.id": a["group"],
        "security.protocol": "SSL",
        "ssl.ca.location": a["ca"],
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }
    if a.get("cert"):
        conf["ssl.certificate.location"] = a["cert"]
        conf["ssl.key.location"] = a["key"]
    assigned = []
    c = Consumer(conf)
    c.subscribe(["t"], on_assign=lambda consumer, parts: assigned.extend(parts))
    deadline = time.monotonic() + 40
    while not assigned and time.monotonic() < deadline:
        c.poll(0.2)
    if not assigned:
        sys.exit("tls_client: no assignment within 40 s")
    c.commit(offsets=[TopicPartition("t", 0, 42)], asynchronous=False)
    got = c.committed([TopicPartition("t", 0)], timeout=10)
    md = c.list_topics(timeout=10)
    brokers = sorted("%s:%d" % (b.host, b.port) for b in md.brokers.values())
    c.close()
    v = __import__("confluent_kafka")
    version = v.version()  # a string, or (string, int) in old releases
    print(json.dumps({"version": version[0] if isinstance(version, tuple) else version,
                      "librdkafka": v.libversion()[0],
                      "assigned": sorted("%s-%d" % (p.topic, p.partition) for p in assigned),
                      "committed": got[0].offset, "brokers": brokers}))


if __name__ == "__main__":
    main()
