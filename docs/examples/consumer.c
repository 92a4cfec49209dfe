/* consumer.c - the smallest librdkafka consumer that joins a kcoord group.
 *
 *   cc -o consumer docs/examples/consumer.c -lrdkafka
 *   ./consumer 127.0.0.1:9092 my-group orders
 *
 * It subscribes, prints its assignment once the group has rebalanced, commits offset 42 for
 * each assigned partition, reads the commits back and exits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s BOOTSTRAP GROUP TOPIC\n", argv[0]);
        return 2;
    }
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "group.id", argv[2], err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (rk == NULL) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, argv[3], RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);

    /* Poll until the group has given us partitions (kcoord's topics hold no records). */
    rd_kafka_topic_partition_list_t *mine = NULL;
    for (int i = 0; i < 300 && (mine == NULL || mine->cnt == 0); i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m)
            rd_kafka_message_destroy(m);
        if (mine)
            rd_kafka_topic_partition_list_destroy(mine);
        rd_kafka_assignment(rk, &mine);
    }
    if (mine == NULL || mine->cnt == 0) {
        fprintf(stderr, "no assignment\n");
        return 1;
    }
    for (int i = 0; i < mine->cnt; i++) {
        printf("assigned %s [%" PRId32 "]\n", mine->elems[i].topic, mine->elems[i].partition);
        mine->elems[i].offset = 42;
    }
    rd_kafka_resp_err_t e = rd_kafka_commit(rk, mine, 0);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        e = rd_kafka_committed(rk, mine, 10000);
    for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < mine->cnt; i++)
        printf("committed %s [%" PRId32 "] = %" PRId64 "\n", mine->elems[i].topic,
               mine->elems[i].partition, mine->elems[i].offset);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        fprintf(stderr, "commit: %s\n", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(mine);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return e == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : 1;
}
