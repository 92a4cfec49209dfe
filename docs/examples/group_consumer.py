"""group_consumer: join a consumer group through kcoord, commit offsets, read them back.

    python3 group_consumer.py [BOOTSTRAP [GROUP [TOPIC [OFFSET]]]]
        (defaults: $BOOTSTRAP or 127.0.0.1:9092, $GROUP or example, $TOPIC or orders,
         $OFFSET or 42)

Needs confluent-kafka (`pip install confluent-kafka`, or Debian's python3-confluent-kafka).
kcoord stores no records, so there is nothing to consume: the consumer subscribes, waits for
its assignment, commits an offset for each assigned partition (as a consumer does after
processing records), reads the committed offsets back from kcoord, and leaves the group.
It prints one line per step: the partitions assigned, the offsets the group had committed
before ("found ... = none" for a new group), the offsets committed and read back. It exits 0,
or 1 when no assignment came within 60 s or a commit failed. docker-compose.yml beside this
file runs it against the kcoord container, cluster/docker-compose.yml against a 3-node
cluster.
"""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition


def main():
    args = sys.argv[1:]
    bootstrap = args[0] if len(args) > 0 else os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
    group = args[1] if len(args) > 1 else os.environ.get("GROUP", "example")
    topic = args[2] if len(args) > 2 else os.environ.get("TOPIC", "orders")
    offset = int(args[3] if len(args) > 3 else os.environ.get("OFFSET", "42"))

    assigned = []
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    try:
        consumer.subscribe([topic], on_assign=lambda _c, parts: assigned.extend(parts))
        deadline = time.monotonic() + 60
        while not assigned:
            if time.monotonic() > deadline:
                print("no assignment within 60 s", file=sys.stderr)
                return 1
            msg = consumer.poll(0.5)  # drives the group protocol; there are no records
            if msg is not None and msg.error():
                print("consumer error: %s" % msg.error(), file=sys.stderr)
        for tp in assigned:
            print("assigned %s [%d]" % (tp.topic, tp.partition))
        for tp in consumer.committed(assigned, timeout=30):
            print("found %s [%d] = %s" % (tp.topic, tp.partition,
                                          tp.offset if tp.offset >= 0 else "none"))

        # Commit "processed up to OFFSET" on every assigned partition, synchronously.
        offsets = [TopicPartition(tp.topic, tp.partition, offset) for tp in assigned]
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            print("commit failed: %s" % e, file=sys.stderr)
            return 1
        for tp in consumer.committed(assigned, timeout=30):
            print("committed %s [%d] = %d" % (tp.topic, tp.partition, tp.offset))
    finally:
        consumer.close()  # leaves the group
    return 0


if __name__ == "__main__":
    sys.exit(main())
