/* test_conf.c - unit tests for the settings table in src/conf.c.
 *
 * Each test builds its own kc_conf_t and frees it. Config files are written to mkstemp files
 * under /tmp and removed. The doc test reads conf/kcoord.conf relative to the working
 * directory, so run the binary from the repository root. Run with `--write-doc` it prints
 * kc_conf_write_doc's output instead of testing, to regenerate that file:
 *     build/tests/unit/test_conf --write-doc > conf/kcoord.conf
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"

/* ---- helpers ---- */

/* Write `text` to a new temporary file; returns its path in `path` (at least 32 bytes). */
static void write_tmp(char *path, const char *text)
{
    int fd;
    size_t len = strlen(text);

    strcpy(path, "/tmp/test_conf_XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

/* Read a whole file into a NUL-terminated malloc'd string, or NULL when it cannot be opened. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    size_t cap = 0, n = 0, got;

    if (f == NULL)
        return NULL;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            p = realloc(p, cap);
            assert_non_null(p);
        }
        got = fread(p + n, 1, 4096, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    p[n] = '\0';
    *len = n;
    return p;
}

static char *print_to_string(const kc_conf_t *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    kc_conf_print(c, f);
    fclose(f);
    return buf;
}

static char *doc_to_string(size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);

    assert_non_null(f);
    kc_conf_write_doc(f);
    fclose(f);
    return buf;
}

/* kc_conf_set must succeed. */
static void set_ok(kc_conf_t *c, const char *key, const char *value)
{
    char err[512] = "";
    int rc = kc_conf_set(c, key, value, KC_CONF_SRC_SET, err, sizeof err);

    if (rc != 0)
        print_error("kc_conf_set(%s, \"%s\") failed: %s\n", key, value, err);
    assert_int_equal(rc, 0);
    assert_int_equal(kc_conf_get_source(c, key), KC_CONF_SRC_SET);
}

static bool printable(const char *s)
{
    for (; *s != '\0'; s++)
        if (*s < 0x20 || *s > 0x7e || *s == '"')
            return false;
    return true;
}

/* kc_conf_set must fail, leave the setting's printed value and source alone, and produce an
 * error that names the key and (quoted) the value, and contains `want` when it is not NULL. */
static void set_bad(kc_conf_t *c, const char *key, const char *value, const char *want)
{
    char err[1024] = "", quoted[512];
    char *before = print_to_string(c), *after;
    int rc = kc_conf_set(c, key, value, KC_CONF_SRC_SET, err, sizeof err);

    if (rc == 0)
        print_error("kc_conf_set(%s, \"%s\") succeeded\n", key, value);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, key));
    if (printable(value) && strlen(value) <= 64) { /* otherwise the error shows it altered */
        snprintf(quoted, sizeof quoted, "\"%s\"", value);
        if (strstr(err, quoted) == NULL)
            print_error("error does not quote the value: %s\n", err);
        assert_non_null(strstr(err, quoted));
    }
    assert_non_null(strstr(err, "(expected "));
    if (want != NULL && strstr(err, want) == NULL) {
        print_error("error \"%s\" lacks \"%s\"\n", err, want);
        fail();
    }
    after = print_to_string(c);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* kc_conf_set must fail with exactly `want`. */
static void set_err_is(kc_conf_t *c, const char *key, const char *value, const char *want)
{
    char err[1024] = "";

    assert_int_equal(kc_conf_set(c, key, value, KC_CONF_SRC_SET, err, sizeof err), -1);
    assert_string_equal(err, want);
}

/* ---- defaults and the value types ---- */

static void test_defaults(void **state)
{
    kc_conf_t c;
    char *out;

    (void)state;
    kc_conf_init(&c);
    assert_string_equal(c.listeners, "127.0.0.1:9092");
    assert_string_equal(c.advertised_listeners, "");
    assert_int_equal(c.node_id, 0);
    assert_string_equal(c.data_dir, "./data");
    assert_int_equal(c.socket_request_max_bytes, 104857600);
    assert_true(c.connections_max_idle_ms == 600000);
    assert_int_equal(c.queued_max_requests, 500);
    assert_int_equal(c.log_level, KC_CONF_LOG_INFO);
    assert_null(c.topics);
    assert_int_equal(c.n_topics, 0);
    assert_int_equal(kc_conf_get_source(&c, "listeners"), KC_CONF_SRC_DEFAULT);
    assert_int_equal(kc_conf_get_source(&c, "topics"), KC_CONF_SRC_DEFAULT);
    assert_int_equal(kc_conf_get_source(&c, "no.such"), -1);
    out = print_to_string(&c);
    assert_string_equal(out,
                        "listeners=127.0.0.1:9092  # default\n"
                        "advertised.listeners=  # default\n"
                        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:"
                        "SASL_PLAINTEXT,SASL_SSL:SASL_SSL  # default\n"
                        "node.id=0  # default\n"
                        "cluster.voters=  # default\n"
                        "cluster.brokers=  # default\n"
                        "cluster.id=  # default\n"
                        "cluster.bootstrap=true  # default\n"
                        "cluster.election.timeout.ms=1000  # default\n"
                        "cluster.heartbeat.timeout.ms=100  # default\n"
                        "cluster.snapshot.threshold=8192  # default\n"
                        "cluster.snapshot.trailing=2048  # default\n"
                        "cluster.security.protocol=PLAINTEXT  # default\n"
                        "cluster.ssl.keystore.location=  # default\n"
                        "cluster.ssl.truststore.location=  # default\n"
                        "data.dir=./data  # default\n"
                        "socket.request.max.bytes=104857600  # default\n"
                        "connections.max.idle.ms=600000  # default\n"
                        "queued.max.requests=500  # default\n"
                        "queued.max.request.bytes=268435456  # default\n"
                        "connection.max.unsent.bytes=4194304  # default\n"
                        "queued.max.unsent.bytes=268435456  # default\n"
                        "request.max.memory.bytes=134217728  # default\n"
                        "max.connections=2147483647  # default\n"
                        "max.connections.per.ip=2147483647  # default\n"
                        "log.reserved.fds=-1  # default\n"
                        "log.level=info  # default\n"
                        "log.format=text  # default\n"
                        "topics=  # default\n"
                        "auto.create.topics.enable=false  # default\n"
                        "num.partitions=1  # default\n"
                        "offsets.topic.num.partitions=50  # default\n"
                        "group.min.session.timeout.ms=6000  # default\n"
                        "group.max.session.timeout.ms=1800000  # default\n"
                        "group.initial.rebalance.delay.ms=3000  # default\n"
                        "group.max.size=2147483647  # default\n"
                        "group.consumer.heartbeat.interval.ms=5000  # default\n"
                        "group.consumer.min.heartbeat.interval.ms=5000  # default\n"
                        "group.consumer.max.heartbeat.interval.ms=15000  # default\n"
                        "group.consumer.session.timeout.ms=45000  # default\n"
                        "group.consumer.min.session.timeout.ms=45000  # default\n"
                        "group.consumer.max.session.timeout.ms=60000  # default\n"
                        "group.consumer.assignment.interval.ms=1000  # default\n"
                        "group.consumer.min.assignment.interval.ms=0  # default\n"
                        "group.consumer.max.assignment.interval.ms=15000  # default\n"
                        "group.consumer.max.size=2147483647  # default\n"
                        "group.consumer.assignors=uniform,range  # default\n"
                        "group.consumer.migration.policy=bidirectional  # default\n"
                        "group.consumer.assignor.offload.enable=true  # default\n"
                        "group.consumer.assignor.offload.threshold=10000  # default\n"
                        "group.consumer.regex.max.bytes=16384  # default\n"
                        "group.consumer.regex.max.count=1000  # default\n"
                        "group.consumer.regex.refresh.interval.ms=600000  # default\n"
                        "message.max.bytes=1048588  # default\n"
                        "offset.metadata.max.bytes=4096  # default\n"
                        "offsets.retention.minutes=10080  # default\n"
                        "offsets.retention.check.interval.ms=600000  # default\n"
                        "log.flush.policy=always  # default\n"
                        "log.flush.interval.ms=1000  # default\n"
                        "offsets.topic.segment.bytes=104857600  # default\n"
                        "log.roll.ms=604800000  # default\n"
                        "offsets.topic.compression.codec=zstd  # default\n"
                        "log.cleaner.delete.retention.ms=86400000  # default\n"
                        "log.cleaner.backoff.ms=15000  # default\n"
                        "ssl.keystore.type=PEM  # default\n"
                        "ssl.keystore.location=  # default\n"
                        "ssl.keystore.certificate.chain=  # default\n"
                        "ssl.keystore.key=  # default\n"
                        "ssl.key.password=  # default\n"
                        "ssl.truststore.type=PEM  # default\n"
                        "ssl.truststore.location=  # default\n"
                        "ssl.truststore.certificates=  # default\n"
                        "ssl.client.auth=none  # default\n"
                        "ssl.enabled.protocols=TLSv1.2,TLSv1.3  # default\n"
                        "ssl.cipher.suites=  # default\n"
                        "ssl.principal.mapping.rules=DEFAULT  # default\n"
                        "ssl.handshake.timeout.ms=10000  # default\n"
                        "sasl.enabled.mechanisms=  # default\n"
                        "plain.sasl.jaas.config=  # default\n"
                        "connections.max.reauth.ms=0  # default\n"
                        "connection.failed.authentication.delay.ms=100  # default\n"
                        "sasl.server.max.receive.size=524288  # default\n"
                        "authorizer.class.name=  # default\n"
                        "super.users=  # default\n"
                        "allow.everyone.if.no.acl.found=false  # default\n"
                        "metrics.listener=127.0.0.1:9404  # default\n"
                        "metrics.max.connections=16  # default\n"
                        "metrics.request.timeout.ms=10000  # default\n"
                        "metrics.chunk.bytes=32768  # default\n"
                        "metrics.ssl.enabled=false  # default\n"
                        "metrics.bearer.token=  # default\n");
    free(out);
    kc_conf_free(&c);
    kc_conf_free(&c); /* a freed struct is zeroed; freeing again is harmless */
    kc_conf_init(&c);
    assert_string_equal(c.data_dir, "./data");
    kc_conf_free(&c);
}

static void test_source_names(void **state)
{
    (void)state;
    assert_string_equal(kc_conf_source_name(KC_CONF_SRC_DEFAULT), "default");
    assert_string_equal(kc_conf_source_name(KC_CONF_SRC_FILE), "file");
    assert_string_equal(kc_conf_source_name(KC_CONF_SRC_ENV), "env");
    assert_string_equal(kc_conf_source_name(KC_CONF_SRC_SET), "--set");
    assert_string_equal(kc_conf_source_name(7), "?");
}

static void test_unknown_key(void **state)
{
    kc_conf_t c;
    char err[256], tiny[8];

    (void)state;
    kc_conf_init(&c);
    set_err_is(&c, "foo.bar", "1", "unknown setting \"foo.bar\"");
    set_err_is(&c, "Log.Level", "info", "unknown setting \"Log.Level\""); /* keys are exact */
    set_err_is(&c, "", "1", "unknown setting \"\"");
    /* a small buffer is truncated, still NUL-terminated; no buffer at all is allowed */
    assert_int_equal(kc_conf_set(&c, "foo.bar", "1", KC_CONF_SRC_SET, tiny, sizeof tiny), -1);
    assert_string_equal(tiny, "unknown");
    assert_int_equal(kc_conf_set(&c, "foo.bar", "1", KC_CONF_SRC_SET, NULL, 0), -1);
    /* an invalid source is refused */
    assert_int_equal(kc_conf_set(&c, "node.id", "1", 9, err, sizeof err), -1);
    assert_non_null(strstr(err, "node.id"));
    assert_int_equal(kc_conf_set(&c, "node.id", "1", -1, err, sizeof err), -1);
    assert_int_equal(c.node_id, 0);
    kc_conf_free(&c);
}

static void test_int(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    set_err_is(&c, "socket.request.max.bytes", "abc",
               "socket.request.max.bytes: \"abc\" is not an integer (expected 16..2147483647)");
    set_err_is(&c, "node.id", "-1", "node.id: \"-1\" is out of range (expected 0..2147483647)");
    set_ok(&c, "node.id", "42");
    assert_int_equal(c.node_id, 42);
    set_ok(&c, "node.id", "007");
    assert_int_equal(c.node_id, 7);
    set_bad(&c, "node.id", "", "is not an integer");
    set_bad(&c, "node.id", " 5", "is not an integer");
    set_bad(&c, "node.id", "5 ", "is not an integer");
    set_bad(&c, "node.id", "+5", "is not an integer");
    set_bad(&c, "node.id", "1.5", "is not an integer");
    set_bad(&c, "node.id", "0x10", "is not an integer");
    set_bad(&c, "node.id", "1e3", "is not an integer");
    set_bad(&c, "node.id", "-", "is not an integer");
    set_bad(&c, "node.id", "99999999999999999999999", "is out of range");
    set_bad(&c, "node.id", "-99999999999999999999999", "is out of range");
    assert_int_equal(c.node_id, 7);

    /* node.id 0..2147483647 */
    set_ok(&c, "node.id", "0");
    assert_int_equal(c.node_id, 0);
    set_ok(&c, "node.id", "2147483647");
    assert_int_equal(c.node_id, INT32_MAX);
    set_bad(&c, "node.id", "2147483648", "is out of range (expected 0..2147483647)");
    set_bad(&c, "node.id", "4294967296", "is out of range");

    /* socket.request.max.bytes 16..2147483647 */
    set_bad(&c, "socket.request.max.bytes", "15", "is out of range (expected 16..2147483647)");
    set_ok(&c, "socket.request.max.bytes", "16");
    assert_int_equal(c.socket_request_max_bytes, 16);
    set_ok(&c, "socket.request.max.bytes", "2147483647");
    assert_int_equal(c.socket_request_max_bytes, INT32_MAX);
    set_bad(&c, "socket.request.max.bytes", "2147483648", "is out of range");

    /* queued.max.requests 1..1000000 */
    set_bad(&c, "queued.max.requests", "0", "is out of range (expected 1..1000000)");
    set_ok(&c, "queued.max.requests", "1");
    assert_int_equal(c.queued_max_requests, 1);
    set_ok(&c, "queued.max.requests", "1000000");
    assert_int_equal(c.queued_max_requests, 1000000);
    set_bad(&c, "queued.max.requests", "1000001", "is out of range");
    set_bad(&c, "queued.max.requests", "many", "is not an integer (expected 1..1000000)");

    /* The regex and record bounds. */
    set_bad(&c, "group.consumer.regex.max.bytes", "0", "is out of range (expected 1..1048576)");
    set_ok(&c, "group.consumer.regex.max.bytes", "1048576");
    assert_int_equal(c.group_consumer_regex_max_bytes, 1048576);
    set_bad(&c, "group.consumer.regex.max.bytes", "1048577", "is out of range");
    set_bad(&c, "group.consumer.regex.max.count", "0", "is out of range (expected 1..1000000)");
    set_ok(&c, "group.consumer.regex.max.count", "1");
    assert_int_equal(c.group_consumer_regex_max_count, 1);
    set_bad(&c, "group.consumer.regex.max.count", "1000001", "is out of range");
    set_bad(&c, "group.consumer.regex.refresh.interval.ms", "9999",
            "is out of range (expected 10000..2147483647)");
    set_ok(&c, "group.consumer.regex.refresh.interval.ms", "10000");
    assert_int_equal(c.group_consumer_regex_refresh_interval_ms, 10000);
    set_bad(&c, "message.max.bytes", "1023", "is out of range (expected 1024..2147483647)");
    set_ok(&c, "message.max.bytes", "1024");
    assert_int_equal(c.message_max_bytes, 1024);
    set_ok(&c, "message.max.bytes", "2147483647");
    assert_int_equal(c.message_max_bytes, INT32_MAX);
    /* The network bounds. */
    set_bad(&c, "queued.max.request.bytes", "-2", "is out of range (expected -1..");
    set_ok(&c, "queued.max.request.bytes", "-1");
    assert_true(c.queued_max_request_bytes == -1);
    set_ok(&c, "queued.max.request.bytes", "0");
    set_bad(&c, "connection.max.unsent.bytes", "0", "is out of range (expected 1..");
    set_ok(&c, "connection.max.unsent.bytes", "1");
    assert_true(c.connection_max_unsent_bytes == 1);
    set_bad(&c, "queued.max.unsent.bytes", "0", "is out of range (expected 1..");
    set_ok(&c, "queued.max.unsent.bytes", "9223372036854775807");
    assert_true(c.queued_max_unsent_bytes == INT64_MAX);
    set_bad(&c, "request.max.memory.bytes", "65535", "is out of range (expected 65536..");
    set_ok(&c, "request.max.memory.bytes", "65536");
    assert_true(c.request_max_memory_bytes == 65536);
    set_bad(&c, "max.connections", "0", "is out of range (expected 1..2147483647)");
    set_ok(&c, "max.connections", "1");
    assert_int_equal(c.max_connections, 1);
    set_bad(&c, "max.connections.per.ip", "0", "is out of range (expected 1..2147483647)");
    set_ok(&c, "max.connections.per.ip", "2147483647");
    assert_int_equal(c.max_connections_per_ip, INT32_MAX);
    set_bad(&c, "log.reserved.fds", "-2", "is out of range (expected -1..2147483647)");
    set_ok(&c, "log.reserved.fds", "0");
    assert_int_equal(c.log_reserved_fds, 0);
    kc_conf_free(&c);
}

static void test_long(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    set_bad(&c, "connections.max.idle.ms", "0",
            "is out of range (expected 1..9223372036854775807)");
    set_bad(&c, "connections.max.idle.ms", "-5", "is out of range");
    set_ok(&c, "connections.max.idle.ms", "1");
    assert_true(c.connections_max_idle_ms == 1);
    set_ok(&c, "connections.max.idle.ms", "3000000000");
    assert_true(c.connections_max_idle_ms == 3000000000LL);
    set_ok(&c, "connections.max.idle.ms", "9223372036854775807");
    assert_true(c.connections_max_idle_ms == INT64_MAX);
    set_bad(&c, "connections.max.idle.ms", "9223372036854775808", "is out of range");
    set_bad(&c, "connections.max.idle.ms", "-9223372036854775809", "is out of range");
    set_bad(&c, "connections.max.idle.ms", "10s", "is not an integer");
    assert_true(c.connections_max_idle_ms == INT64_MAX);
    kc_conf_free(&c);
}

static void test_enum(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    set_ok(&c, "log.level", "debug");
    assert_int_equal(c.log_level, KC_CONF_LOG_DEBUG);
    set_ok(&c, "log.level", "warn");
    assert_int_equal(c.log_level, KC_CONF_LOG_WARN);
    set_ok(&c, "log.level", "error");
    assert_int_equal(c.log_level, KC_CONF_LOG_ERROR);
    set_ok(&c, "log.level", "INFO"); /* Kafka writes levels in upper case */
    assert_int_equal(c.log_level, KC_CONF_LOG_INFO);
    set_ok(&c, "log.level", "Debug");
    assert_int_equal(c.log_level, KC_CONF_LOG_DEBUG);
    set_err_is(&c, "log.level", "verbose",
               "log.level: \"verbose\" is not a valid value (expected one of debug, info, warn, "
               "error)");
    set_bad(&c, "log.level", "", "one of debug, info, warn, error");
    set_bad(&c, "log.level", "infos", NULL);
    set_bad(&c, "log.level", "inf", NULL);
    set_bad(&c, "log.level", " info", NULL);
    assert_int_equal(c.log_level, KC_CONF_LOG_DEBUG);
    assert_int_equal(c.group_consumer_migration_policy, KC_CONF_MIGRATION_BIDIRECTIONAL);
    set_ok(&c, "group.consumer.migration.policy", "upgrade");
    assert_int_equal(c.group_consumer_migration_policy, KC_CONF_MIGRATION_UPGRADE);
    set_ok(&c, "group.consumer.migration.policy", "downgrade");
    assert_int_equal(c.group_consumer_migration_policy, KC_CONF_MIGRATION_DOWNGRADE);
    set_ok(&c, "group.consumer.migration.policy", "DISABLED");
    assert_int_equal(c.group_consumer_migration_policy, KC_CONF_MIGRATION_DISABLED);
    set_bad(&c, "group.consumer.migration.policy", "both",
            "one of bidirectional, upgrade, downgrade, disabled");
    assert_int_equal(c.group_consumer_migration_policy, KC_CONF_MIGRATION_DISABLED);
    kc_conf_free(&c);
}

static void test_string(void **state)
{
    kc_conf_t c;
    char err[512], long_value[300];

    (void)state;
    kc_conf_init(&c);
    set_ok(&c, "data.dir", "/var/lib/kcoord");
    assert_string_equal(c.data_dir, "/var/lib/kcoord");
    set_ok(&c, "data.dir", "dir with spaces/é");
    assert_string_equal(c.data_dir, "dir with spaces/é");
    set_err_is(&c, "data.dir", "", "data.dir: \"\" is empty (expected a non-empty string)");
    set_bad(&c, "data.dir", "a\nb", "contains a control character");
    set_bad(&c, "data.dir", "a\tb", "contains a control character");
    assert_string_equal(c.data_dir, "dir with spaces/é");
    /* a control character is shown as '.', a long value is cut */
    assert_int_equal(kc_conf_set(&c, "data.dir", "a\nb", KC_CONF_SRC_SET, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"a.b\""));
    memset(long_value, 'x', sizeof long_value - 2);
    long_value[sizeof long_value - 2] = '\n';
    long_value[sizeof long_value - 1] = '\0';
    assert_int_equal(kc_conf_set(&c, "data.dir", long_value, KC_CONF_SRC_SET, err, sizeof err), -1);
    assert_non_null(strstr(err, "xxx...\" contains a control character"));
    kc_conf_free(&c);
}

/* ---- listeners ---- */

static void test_names(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    assert_string_equal(c.group_consumer_assignors, "uniform,range");
    set_ok(&c, "group.consumer.assignors", " range , uniform ");
    assert_string_equal(c.group_consumer_assignors, "range,uniform");
    set_ok(&c, "group.consumer.assignors", "range");
    assert_string_equal(c.group_consumer_assignors, "range");
    set_err_is(&c, "group.consumer.assignors", "sticky",
               "group.consumer.assignors: \"sticky\" names \"sticky\", which is not a valid value "
               "(expected a comma-separated list of uniform, range)");
    set_bad(&c, "group.consumer.assignors", "", "has an empty entry");
    set_bad(&c, "group.consumer.assignors", "uniform,", "has an empty entry");
    set_bad(&c, "group.consumer.assignors", "Uniform", "which is not a valid value");
    set_bad(&c, "group.consumer.assignors", "range,uniform,range", "names \"range\" twice");
    assert_string_equal(c.group_consumer_assignors, "range");
    kc_conf_free(&c);
}

static void check_is(const kc_conf_t *c, const char *want)
{
    char err[512] = "";

    assert_int_equal(kc_conf_check(c, err, sizeof err), want ? -1 : 0);
    if (want)
        assert_string_equal(err, want);
}

static void test_check(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    check_is(&c, NULL);
    set_ok(&c, "group.consumer.session.timeout.ms", "6000");
    check_is(&c, "group.consumer.min.session.timeout.ms (45000) must be at most "
                 "group.consumer.session.timeout.ms (6000)");
    set_ok(&c, "group.consumer.min.session.timeout.ms", "6000");
    check_is(&c, NULL);
    set_ok(&c, "group.consumer.session.timeout.ms", "70000");
    check_is(&c, "group.consumer.session.timeout.ms (70000) must be at most "
                 "group.consumer.max.session.timeout.ms (60000)");
    set_ok(&c, "group.consumer.session.timeout.ms", "6000");
    set_ok(&c, "group.consumer.min.heartbeat.interval.ms", "20000");
    check_is(&c, "group.consumer.min.heartbeat.interval.ms (20000) must be at most "
                 "group.consumer.max.heartbeat.interval.ms (15000)");
    set_ok(&c, "group.consumer.min.heartbeat.interval.ms", "100");
    set_ok(&c, "group.consumer.heartbeat.interval.ms", "6000");
    check_is(&c, "group.consumer.heartbeat.interval.ms (6000) must be less than "
                 "group.consumer.session.timeout.ms (6000)");
    set_ok(&c, "group.consumer.heartbeat.interval.ms", "500");
    check_is(&c, NULL);
    /* Classic groups: a minimum session timeout above the maximum refuses every JoinGroup. */
    set_ok(&c, "group.min.session.timeout.ms", "1800001");
    check_is(&c, "group.min.session.timeout.ms (1800001) must be at most "
                 "group.max.session.timeout.ms (1800000)");
    set_ok(&c, "group.max.session.timeout.ms", "1800001");
    check_is(&c, NULL);
    kc_conf_free(&c);
}

/* Bounds the log and the process impose: a segment size the log refuses is refused by the
 * table, and a partition count the open-file limit cannot hold is refused at start. */
static void test_module_bounds(void **state)
{
    kc_conf_t c;
    char err[512];

    (void)state;
    kc_conf_init(&c);
    set_ok(&c, "offsets.topic.segment.bytes", "1073741823");
    assert_int_equal(kc_conf_set(&c, "offsets.topic.segment.bytes", "1073741824", KC_CONF_SRC_SET,
                                 err, sizeof err),
                     -1);
    assert_string_equal(err, "offsets.topic.segment.bytes: \"1073741824\" is out of range "
                             "(expected 1024..1073741823)");
    assert_int_equal(kc_conf_files_needed(&c), 50 * 2 + KC_CONF_FILES_SPARE);
    assert_int_equal(kc_conf_check_files(&c, 1024, err, sizeof err), 0);
    set_ok(&c, "offsets.topic.num.partitions", "10000");
    assert_int_equal(kc_conf_check_files(&c, 20064, err, sizeof err), 0);
    assert_int_equal(kc_conf_check_files(&c, 20063, err, sizeof err), -1);
    assert_string_equal(err, "offsets.topic.num.partitions (10000) needs at least 20064 open "
                             "files (2 per partition and 64 more), but the process may open only "
                             "20063 (ulimit -n); raise the limit or lower "
                             "offsets.topic.num.partitions");
    /* The numeric rows are listed with their bounds, and nothing past the table. */
    const char *name;
    int64_t min, max;
    size_t n = 0;
    for (size_t i = 0; i < KC_CONF_N_SETTINGS; i++)
        if (kc_conf_numeric(i, &name, &min, &max)) {
            n++;
            assert_true(min <= max);
            if (strcmp(name, "offsets.topic.segment.bytes") == 0)
                assert_int_equal(max, 1073741823);
        }
    assert_true(n >= 20);
    assert_false(kc_conf_numeric(KC_CONF_N_SETTINGS, &name, &min, &max));
    kc_conf_free(&c);
}

static void test_parse_listeners(void **state)
{
    kc_listener_t l[4];
    size_t n = 99;
    char err[256], host255[300], host256[300];

    (void)state;
    assert_int_equal(kc_conf_parse_listeners("127.0.0.1:9092", l, 4, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(l[0].host, "127.0.0.1");
    assert_int_equal(l[0].port, 9092);

    assert_int_equal(kc_conf_parse_listeners(" PLAINTEXT://localhost:0 , [::1]:65535,"
                                             "plaintext://[fe80::1%eth0]:9093,host-a.b_c:1",
                                             l, 4, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 4);
    assert_string_equal(l[0].host, "localhost");
    assert_int_equal(l[0].port, 0);
    assert_string_equal(l[1].host, "::1");
    assert_int_equal(l[1].port, 65535);
    assert_string_equal(l[2].host, "fe80::1%eth0");
    assert_int_equal(l[2].port, 9093);
    assert_string_equal(l[3].host, "host-a.b_c");
    assert_int_equal(l[3].port, 1);

    assert_int_equal(kc_conf_parse_listeners("[::ffff:10.0.0.1]:9092", l, 4, &n, err, sizeof err),
                     0);
    assert_string_equal(l[0].host, "::ffff:10.0.0.1");

    /* empty is zero entries; NULL out only counts; n may be NULL */
    assert_int_equal(kc_conf_parse_listeners("", l, 4, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(kc_conf_parse_listeners("  ", l, 4, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(kc_conf_parse_listeners("a:1,b:2,c:3,d:4,e:5", NULL, 0, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 5);
    assert_int_equal(kc_conf_parse_listeners("a:1", l, 4, NULL, err, sizeof err), 0);

    /* too many for `out` */
    assert_int_equal(kc_conf_parse_listeners("a:1,b:2,c:3", l, 2, &n, err, sizeof err), -1);
    assert_string_equal(err, "more than 2 listeners");

    /* host length: 255 fits, 256 does not */
    memset(host255, 'h', 255);
    strcpy(host255 + 255, ":1");
    assert_int_equal(kc_conf_parse_listeners(host255, l, 4, &n, err, sizeof err), 0);
    assert_int_equal(strlen(l[0].host), 255);
    memset(host256, 'h', 256);
    strcpy(host256 + 256, ":1");
    assert_int_equal(kc_conf_parse_listeners(host256, l, 4, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than 255 bytes"));

    static const struct {
        const char *in, *want;
    } bad[] = {
        {"localhost", "listener \"localhost\" has no port"},
        {"localhost:", "listener \"localhost:\": port is not a number in 0..65535"},
        {":9092", "listener \":9092\" has no host"},
        {"h:65536", "port is not a number in 0..65535"},
        {"h:99999999999999999999", "port is not a number"},
        {"h:-1", "port is not a number"},
        {"h:+1", "port is not a number"},
        {"h:90 92", "port is not a number"},
        {"h:x", "port is not a number"},
        {"::1:9092", "an IPv6 address must be in brackets"},
        {"[::1]", "listener \"[::1]\" has no port"},
        {"[::1]9092", "expected ':' after ']'"},
        {"[::1:9092", "no ']' after the IPv6 address"},
        {"[]:9092", "brackets hold an IPv6 address"},
        {"[localhost]:9092", "brackets hold an IPv6 address"},
        {"[::g]:9092", "invalid IPv6 address"},
        {"[fe80::1%]:9092", "invalid IPv6 zone"},
        {"[fe80::1%e/0]:9092", "invalid IPv6 zone"},
        {"ho st:9092", "invalid character in host"},
        {"h/x:9092", "invalid character in host"},
        {"://h:9093", "no listener name before ://"},
        {"SS-L://h:9093", "a listener name has only letters, digits and '_'"},
        {"SSL://h", "has no port"},
        {"PLAINTEXT://", "has no port"},
        {"a:1,,b:2", "empty entry in listener list"},
        {"a:1,", "empty entry in listener list"},
        {",a:1", "empty entry in listener list"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (kc_conf_parse_listeners(bad[i].in, l, 4, &n, err, sizeof err) != -1 ||
            strstr(err, bad[i].want) == NULL) {
            print_error("\"%s\": got \"%s\", want \"%s\"\n", bad[i].in, err, bad[i].want);
            fail();
        }
    }
}

/* kc_conf_jaas_options: Kafka's JAAS syntax for one login module, options in order. */
typedef struct jaas_opts_s {
    char text[512];
} jaas_opts_t;

static int jaas_collect(void *arg, const char *key, const char *value)
{
    jaas_opts_t *o = arg;
    size_t n = strlen(o->text);
    snprintf(o->text + n, sizeof o->text - n, "%s=%s|", key, value);
    return strcmp(key, "stop") == 0 ? 7 : 0;
}

static void test_jaas(void **state)
{
    (void)state;
    static const char *const mod = "org.apache.kafka.common.security.plain.PlainLoginModule";
    static const struct {
        const char *text, *want; /* want: the options, or the error */
        int rc;
    } cases[] = {
        {"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"a-s\" "
         "username=admin password=\"p\\\"q\\\\r\";",
         "user_alice=a-s|username=admin|password=p\"q\\r|", 0},
        {"  org.apache.kafka.common.security.plain.PlainLoginModule optional /* c */ // c\n"
         "  user_x=\"\" ; ",
         "user_x=|", 0},
        {"org.apache.kafka.common.security.plain.PlainLoginModule sufficient;", "", 0},
        {"org.apache.kafka.common.security.plain.PlainLoginModule required stop=1 after=2;",
         "stop=1|", 7},
        {"", "expected a login module name", -1},
        {"x.Y required a=\"b\";", "the login module must be " /* ... */, -1},
        {"org.apache.kafka.common.security.plain.PlainLoginModule maybe a=b;",
         "control flag must be required, requisite, sufficient or optional", -1},
        {"org.apache.kafka.common.security.plain.PlainLoginModule required a=\"b\"",
         "expected an option name or ';'", -1},
        {"org.apache.kafka.common.security.plain.PlainLoginModule required a;",
         "option a: expected =value", -1},
        {"org.apache.kafka.common.security.plain.PlainLoginModule required a=\"unterminated;",
         "option a: expected =value", -1},
        {"org.apache.kafka.common.security.plain.PlainLoginModule required a=b; "
         "org.apache.kafka.common.security.plain.PlainLoginModule required c=d;",
         "expected one login module: text follows its ';'", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jaas_opts_t o = {{0}};
        char err[256] = "";
        int rc = kc_conf_jaas_options(cases[i].text, mod, jaas_collect, &o, err, sizeof err);
        assert_int_equal(rc, cases[i].rc);
        if (rc >= 0)
            assert_string_equal(o.text, cases[i].want);
        else
            assert_non_null(strstr(err, cases[i].want));
        assert_null(strstr(err, "a-s")); /* values are never quoted in messages */
    }
}

static void test_listener_settings(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    set_ok(&c, "listeners", "PLAINTEXT://0.0.0.0:0,[::]:9092");
    assert_string_equal(c.listeners, "PLAINTEXT://0.0.0.0:0,[::]:9092");
    set_ok(&c, "listeners", "127.0.0.1:65535");
    set_err_is(&c, "listeners", "localhost",
               "listeners: \"localhost\" is not a valid listener list: listener \"localhost\" has "
               "no port (expected host:port or [ipv6]:port, comma-separated, port 0..65535)");
    set_bad(&c, "listeners", "", "is empty");
    set_bad(&c, "listeners", " ", "is empty");
    set_bad(&c, "listeners", "h:65536", "port is not a number");
    set_bad(&c, "listeners", "a-b://h:1", "a listener name has only letters");
    assert_string_equal(c.listeners, "127.0.0.1:65535");

    set_ok(&c, "advertised.listeners", "broker.example:9092,[2001:db8::1]:9092");
    set_ok(&c, "advertised.listeners", "h:1");
    set_ok(&c, "advertised.listeners", "h:65535");
    set_ok(&c, "advertised.listeners", ""); /* empty: advertise what is bound */
    assert_string_equal(c.advertised_listeners, "");
    set_bad(&c, "advertised.listeners", "h:0",
            "port 0 of h is out of range (expected empty or host:port or [ipv6]:port, "
            "comma-separated, port 1..65535, not 0.0.0.0 or [::])");
    set_bad(&c, "advertised.listeners", "[::1]:0", "port 0 of [::1] is out of range");
    set_bad(&c, "advertised.listeners", "0.0.0.0:9092",
            "0.0.0.0 is not an address clients can reach");
    set_bad(&c, "advertised.listeners", "a:1,[::]:9092", "[::] is not an address clients can");
    set_bad(&c, "advertised.listeners", "a:1,b", "listener \"b\" has no port");
    kc_conf_free(&c);
}

/* Kafka's listener model: names, the protocol map, advertised names, listener.name. overrides. */
static void test_listener_names(void **state)
{
    kc_conf_t c;
    kc_listener_t l[4];
    size_t n = 0;
    char err[512], buf[32];
    bool over = true;

    (void)state;
    assert_int_equal(
        kc_conf_parse_listeners("ssl://h:1,Internal_2://[::1]:2,h:3", l, 4, &n, err, sizeof err),
        0);
    assert_int_equal(n, 3);
    assert_string_equal(l[0].name, "SSL");
    assert_true(l[0].named);
    assert_string_equal(l[1].name, "INTERNAL_2");
    assert_string_equal(l[1].host, "::1");
    assert_string_equal(l[2].name, "PLAINTEXT");
    assert_false(l[2].named);

    kc_conf_init(&c);
    /* Kafka's default map. */
    assert_int_equal(kc_conf_listener_protocol(&c, "PLAINTEXT"), KC_CONF_SEC_PLAINTEXT);
    assert_int_equal(kc_conf_listener_protocol(&c, "ssl"), KC_CONF_SEC_SSL);
    assert_int_equal(kc_conf_listener_protocol(&c, "SASL_PLAINTEXT"), KC_CONF_SEC_SASL_PLAINTEXT);
    assert_int_equal(kc_conf_listener_protocol(&c, "SASL_SSL"), KC_CONF_SEC_SASL_SSL);
    assert_int_equal(kc_conf_listener_protocol(&c, "INTERNAL"), -1);
    assert_string_equal(kc_conf_protocol_name(KC_CONF_SEC_SASL_SSL), "SASL_SSL");

    set_ok(&c, "listener.security.protocol.map", "INTERNAL:ssl, EXTERNAL : PLAINTEXT");
    assert_int_equal(kc_conf_listener_protocol(&c, "internal"), KC_CONF_SEC_SSL);
    assert_int_equal(kc_conf_listener_protocol(&c, "EXTERNAL"), KC_CONF_SEC_PLAINTEXT);
    assert_int_equal(kc_conf_listener_protocol(&c, "SSL"), -1);
    set_bad(&c, "listener.security.protocol.map", "A:TLS", "\"TLS\", which is not PLAINTEXT");
    set_bad(&c, "listener.security.protocol.map", "A", "\"A\" that is not NAME:PROTOCOL");
    set_bad(&c, "listener.security.protocol.map", "A:SSL,", "that is not NAME:PROTOCOL");
    set_bad(&c, "listener.security.protocol.map", "A:SSL,a:PLAINTEXT",
            "names listener \"a\" twice");
    set_bad(&c, "listener.security.protocol.map", "A-1:SSL", "with a character other than");
    set_bad(&c, "listener.security.protocol.map", "", "is empty");

    /* Every listener needs a protocol; names are unique but for plain host:port. */
    set_ok(&c, "listeners", "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), 0);
    set_ok(&c, "listeners", "INTERNAL://127.0.0.1:0,OTHER://127.0.0.1:0");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "listeners: listener OTHER has no security protocol in "
                             "listener.security.protocol.map");
    set_ok(&c, "listeners", "internal://127.0.0.1:0,INTERNAL://127.0.0.1:1");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "listeners: the listener name INTERNAL is used twice");
    set_ok(&c, "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL");
    set_ok(&c, "listeners", "127.0.0.1:0,[::1]:0,SSL://127.0.0.1:0");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), 0);
    set_ok(&c, "listeners", "127.0.0.1:0,PLAINTEXT://[::1]:0");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "listeners: the listener name PLAINTEXT is used twice");

    /* advertised.listeners names listeners. */
    set_ok(&c, "listeners", "127.0.0.1:0,SSL://127.0.0.1:0");
    set_ok(&c, "advertised.listeners", "SSL://broker.example:9093,h:9092");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), 0);
    set_ok(&c, "advertised.listeners", "OTHER://h:1");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "advertised.listeners: OTHER is not the name of a listener in "
                             "listeners");
    set_ok(&c, "advertised.listeners", "SSL://h:1,ssl://h:2");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "advertised.listeners: the listener name SSL is used twice");
    set_ok(&c, "advertised.listeners", "");

    /* Per-listener ssl.* settings. */
    set_ok(&c, "ssl.client.auth", "requested");
    set_ok(&c, "listener.name.ssl.ssl.client.auth", "required");
    set_ok(&c, "listener.name.ssl.ssl.keystore.location", "/a.pem");
    set_ok(&c, "listener.name.ssl.ssl.keystore.location", "/b.pem"); /* a later one wins */
    assert_int_equal(c.n_overrides, 2);
    assert_string_equal(
        kc_conf_listener_value(&c, "SSL", "ssl.client.auth", buf, sizeof buf, &over), "required");
    assert_true(over);
    assert_string_equal(
        kc_conf_listener_value(&c, "ssl", "ssl.keystore.location", buf, sizeof buf, NULL),
        "/b.pem");
    assert_string_equal(
        kc_conf_listener_value(&c, "PLAINTEXT", "ssl.client.auth", buf, sizeof buf, &over),
        "requested");
    assert_false(over);
    assert_string_equal(
        kc_conf_listener_value(&c, "SSL", "ssl.handshake.timeout.ms", buf, sizeof buf, NULL),
        "10000");
    assert_null(kc_conf_listener_value(&c, "SSL", "no.such", buf, sizeof buf, NULL));
    assert_int_equal(kc_conf_check(&c, err, sizeof err), 0);
    set_err_is(&c, "listener.name.ssl.ssl.client.auth", "maybe",
               "listener.name.ssl.ssl.client.auth: \"maybe\" is not a valid value (expected one "
               "of none, requested, required)");
    set_bad(&c, "listener.name.ssl.ssl.enabled.protocols", "TLSv1.1", "not a valid value");
    static const struct {
        const char *key, *want;
    } bad_keys[] = {
        {"listener.name.ssl.node.id", "takes the ssl.* and SASL settings"},
        {"listener.name.ssl", "takes the ssl.* and SASL settings"},
        {"listener.name..ssl.client.auth", "takes the ssl.* and SASL settings"},
        {"listener.name.s-l.ssl.client.auth", "only letters, digits and '_'"},
    };
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        err[0] = '\0';
        assert_int_equal(kc_conf_set(&c, bad_keys[i].key, "none", KC_CONF_SRC_SET, err, sizeof err),
                         -1);
        assert_non_null(strstr(err, bad_keys[i].want));
        assert_non_null(strstr(err, bad_keys[i].key));
    }
    assert_int_equal(c.n_overrides, 2);
    /* Keys, passwords and tokens are not printed, nor quoted in messages. */
    set_ok(&c, "ssl.key.password", "pw-secret");
    set_ok(&c, "listener.name.ssl.ssl.keystore.key", "-----BEGIN PRIVATE KEY-----key-secret");
    set_ok(&c, "metrics.bearer.token", "token-secret");
    char *printed = print_to_string(&c);
    assert_null(strstr(printed, "secret"));
    assert_non_null(strstr(printed, "\nssl.key.password=[hidden]  # --set\n"));
    assert_non_null(strstr(printed, "\nlistener.name.ssl.ssl.keystore.key=[hidden]  # --set\n"));
    assert_non_null(strstr(printed, "\nssl.keystore.key=  # default\n"));
    free(printed);
    err[0] = '\0';
    assert_int_equal(
        kc_conf_set(&c, "ssl.key.password", "a\nsecret", KC_CONF_SRC_SET, err, sizeof err), -1);
    assert_null(strstr(err, "secret"));
    assert_non_null(strstr(err, "ssl.key.password: \"[hidden]\" contains a control character"));
    set_ok(&c, "listener.name.other.ssl.client.auth", "none");
    assert_int_equal(kc_conf_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "listener.name.other.ssl.client.auth: OTHER is not the name of a "
                             "listener in listeners");
    kc_conf_free(&c);
}

/* ---- topics ---- */

static void test_topics(void **state)
{
    kc_conf_t c;
    char name249[300], name250[300], value[400];

    (void)state;
    kc_conf_init(&c);
    set_ok(&c, "topics", "orders:3, payments:12 ,a.b-C_9:1,x:1000000, y : 7");
    assert_int_equal(c.n_topics, 5);
    assert_string_equal(c.topics[0].name, "orders");
    assert_int_equal(c.topics[0].partitions, 3);
    assert_string_equal(c.topics[1].name, "payments");
    assert_int_equal(c.topics[1].partitions, 12);
    assert_string_equal(c.topics[2].name, "a.b-C_9");
    assert_int_equal(c.topics[2].partitions, 1);
    assert_int_equal(c.topics[3].partitions, 1000000);
    assert_string_equal(c.topics[4].name, "y");
    assert_int_equal(c.topics[4].partitions, 7);

    set_err_is(&c, "topics", "a:0",
               "topics: \"a:0\" is not a valid topic list: partition count \"0\" of topic \"a\" "
               "is out of range (expected empty or name:partitions, comma-separated, partitions "
               "1..1000000)");
    set_bad(&c, "topics", "a:1000001", "partition count \"1000001\" of topic \"a\" is out of");
    set_bad(&c, "topics", "a:-1", "is out of range");
    set_bad(&c, "topics", "a:99999999999999999999999999999", "is out of range");
    set_bad(&c, "topics", "a:x", "partition count \"x\" of topic \"a\" is not an integer");
    set_bad(&c, "topics", "a:1x1111111111111111111111111", "is not an integer");
    set_bad(&c, "topics", "a:", "partition count \"\" of topic \"a\" is not an integer");
    set_bad(&c, "topics", "a", "\"a\" has no \":partitions\"");
    set_bad(&c, "topics", "a:1,b", "\"b\" has no \":partitions\"");
    set_bad(&c, "topics", ":3", "an entry has no topic name");
    set_bad(&c, "topics", "a:1,,b:2", "empty entry");
    set_bad(&c, "topics", "a:1,", "empty entry");
    set_bad(&c, "topics", "a b:1", "topic name \"a b\" has a character other than");
    set_bad(&c, "topics", "a/b:1", "has a character other than a-z A-Z 0-9 . _ -");
    set_bad(&c, "topics", "caf\xc3\xa9:1", "has a character other than");
    set_bad(&c, "topics", "a:1:2", "is not an integer");
    set_bad(&c, "topics", ".:1", "\".\" is not a valid topic name");
    set_bad(&c, "topics", "..:1", "\"..\" is not a valid topic name");
    set_bad(&c, "topics", "a:1,b:2,a:3", "topic \"a\" is listed twice");
    set_bad(&c, "topics", "a.b:1,a_b:2", "topics \"a.b\" and \"a_b\" collide");

    /* the failures above left the earlier list in place */
    assert_int_equal(c.n_topics, 5);
    assert_string_equal(c.topics[0].name, "orders");

    /* names: 249 characters fit, 250 do not; "..." and ".a" are fine */
    memset(name249, 'n', 249);
    name249[249] = '\0';
    snprintf(value, sizeof value, "%s:1,...:2,.a:3", name249);
    set_ok(&c, "topics", value);
    assert_int_equal(c.n_topics, 3);
    assert_int_equal(strlen(c.topics[0].name), 249);
    memset(name250, 'n', 250);
    name250[250] = '\0';
    snprintf(value, sizeof value, "%s:1", name250);
    set_bad(&c, "topics", value, "is longer than 249 characters");

    /* empty again */
    set_ok(&c, "topics", "");
    assert_null(c.topics);
    assert_int_equal(c.n_topics, 0);
    set_ok(&c, "topics", "  ");
    assert_int_equal(c.n_topics, 0);
    kc_conf_free(&c);
}

/* ---- the config file ---- */

static void test_file(void **state)
{
    kc_conf_t c;
    char path[64], err[512] = "";

    (void)state;
    write_tmp(path, "\xEF\xBB\xBF# a comment\n"
                    "! another comment\n"
                    "\n"
                    "   \t\n"
                    "  # indented comment = with equals\n"
                    "node.id=5\n"
                    "  log.level :  debug   \n"
                    "data.dir\t=\t/srv/kcoord data  \r\n"
                    "node.id = 6\n" /* a later line wins */
                    "queued.max.requests:7\n"
                    "topics = a:1,\\\n"
                    "         b:2,\\\n"
                    "         c:3\n"
                    "advertised.listeners=\n"
                    "socket.request.max.bytes\\\n"
                    "  = 4096\n"
                    "listeners=host\\:1\\u002c[::1]\\:2"); /* no newline at the end */
    kc_conf_init(&c);
    if (kc_conf_load_file(&c, path, err, sizeof err) != 0) {
        print_error("%s\n", err);
        fail();
    }
    unlink(path);
    assert_int_equal(c.node_id, 6);
    assert_int_equal(c.log_level, KC_CONF_LOG_DEBUG);
    assert_string_equal(c.data_dir, "/srv/kcoord data");
    assert_int_equal(c.queued_max_requests, 7);
    assert_int_equal(c.n_topics, 3);
    assert_string_equal(c.topics[2].name, "c");
    assert_int_equal(c.socket_request_max_bytes, 4096);
    assert_string_equal(c.listeners, "host:1,[::1]:2");
    assert_string_equal(c.advertised_listeners, "");
    assert_int_equal(kc_conf_get_source(&c, "node.id"), KC_CONF_SRC_FILE);
    assert_int_equal(kc_conf_get_source(&c, "advertised.listeners"), KC_CONF_SRC_FILE);
    assert_int_equal(kc_conf_get_source(&c, "connections.max.idle.ms"), KC_CONF_SRC_DEFAULT);
    kc_conf_free(&c);
}

static void test_file_escapes(void **state)
{
    kc_conf_t c;
    char path[64], err[512] = "";

    (void)state;
    kc_conf_init(&c);
    /* \\ is a backslash, \# and \= and \  are literal, \u00e9 is UTF-8, an escaped trailing
     * blank is kept, an even number of backslashes at the end does not continue the line */
    write_tmp(path, "data.dir=a\\\\b\\#c\\=d\\u00e9\\ \n"
                    "listeners=h:1\n");
    assert_int_equal(kc_conf_load_file(&c, path, err, sizeof err), 0);
    assert_string_equal(c.data_dir, "a\\b#c=d\xc3\xa9 ");
    unlink(path);
    write_tmp(path, "data.dir=x\\\\\\\\\n"
                    "node.id=3\n");
    assert_int_equal(kc_conf_load_file(&c, path, err, sizeof err), 0);
    assert_string_equal(c.data_dir, "x\\\\");
    assert_int_equal(c.node_id, 3);
    unlink(path);
    kc_conf_free(&c);
}

/* Load `text` from a file and expect the error `want`, where "%s" stands for the path. */
static void file_err_is(const char *text, const char *want)
{
    kc_conf_t c;
    char path[64], err[1024] = "", expect[1024];

    kc_conf_init(&c);
    write_tmp(path, text);
    assert_int_equal(kc_conf_load_file(&c, path, err, sizeof err), -1);
    snprintf(expect, sizeof expect, want, path);
    assert_string_equal(err, expect);
    unlink(path);
    kc_conf_free(&c);
}

static void test_file_errors(void **state)
{
    kc_conf_t c;
    char err[512];

    (void)state;
    file_err_is("# comment\n\nnode.id=1\ngarbage\n",
                "%s:4: expected key=value or key: value, got \"garbage\"");
    file_err_is("log.level info\n",
                "%s:1: expected key=value or key: value, got \"log.level info\"");
    file_err_is("node.id=1\nfoo.bar=2\n", "%s:2: unknown setting \"foo.bar\"");
    file_err_is("\n\n\nnode.id = abc\n",
                "%s:4: node.id: \"abc\" is not an integer (expected 0..2147483647)");
    file_err_is("=5\n", "%s:1: no key before '='");
    file_err_is("  : 5\n", "%s:1: no key before ':'");
    file_err_is("data.dir=\\u12\n", "%s:1: malformed \\uXXXX escape");
    file_err_is("data.dir=\\ud800\n", "%s:1: malformed \\uXXXX escape");
    /* a continued line is reported at its first line, and swallows what looks like a comment */
    file_err_is("node.id=1\ntopics=a:1,\\\n#b:2\n",
                "%s:2: topics: \"a:1,#b:2\" is not a valid topic list: topic name \"#b\" has a "
                "character other than a-z A-Z 0-9 . _ - (expected empty or name:partitions, "
                "comma-separated, partitions 1..1000000)");
    file_err_is("data.dir=\n", "%s:1: data.dir: \"\" is empty (expected a non-empty string)");
    file_err_is("node.id=1\nnode.id=\x01\n", "%s:2: node.id: \".\" contains a control character "
                                             "(expected 0..2147483647)");

    /* a NUL byte cannot be written through write_tmp's strlen; write it by hand */
    {
        char path[64];
        FILE *f;

        strcpy(path, "/tmp/test_conf_XXXXXX");
        assert_true(mkstemp(path) >= 0);
        f = fopen(path, "wb");
        assert_non_null(f);
        fwrite("node.id=1\nnode.id=2\0\n", 1, 21, f);
        fclose(f);
        kc_conf_init(&c);
        assert_int_equal(kc_conf_load_file(&c, path, err, sizeof err), -1);
        assert_non_null(strstr(err, ":2: line contains a NUL byte"));
        unlink(path);
        kc_conf_free(&c);
    }

    kc_conf_init(&c);
    assert_int_equal(kc_conf_load_file(&c, "/nonexistent/kcoord.conf", err, sizeof err), -1);
    assert_string_equal(err, "/nonexistent/kcoord.conf: cannot open: No such file or directory");
    assert_int_equal(kc_conf_load_file(&c, "/", err, sizeof err), -1); /* a directory */
    assert_non_null(strstr(err, "/:"));
    kc_conf_free(&c);
}

/* ---- the environment ---- */

static void test_env(void **state)
{
    kc_conf_t c;
    char err[512] = "";
    char *env[] = {
        "PATH=/usr/bin",
        "KCOORD_LOG_LEVEL=warn",
        "KCOORD_node_id=9",
        "KCOORD_Data_Dir=/env/dir",
        "KCOORD_TOPICS=t:4",
        "kcoord_node_id=100", /* the prefix is upper-case only: ignored */
        "KCOORD_ADVERTISED_LISTENERS=",
        "KCOORD_NOEQUALS",
        NULL,
    };

    (void)state;
    kc_conf_init(&c);
    assert_int_equal(kc_conf_load_env(&c, env, err, sizeof err), 0);
    assert_int_equal(c.log_level, KC_CONF_LOG_WARN);
    assert_int_equal(c.node_id, 9);
    assert_string_equal(c.data_dir, "/env/dir");
    assert_int_equal(c.n_topics, 1);
    assert_int_equal(c.topics[0].partitions, 4);
    assert_int_equal(kc_conf_get_source(&c, "log.level"), KC_CONF_SRC_ENV);
    assert_int_equal(kc_conf_get_source(&c, "advertised.listeners"), KC_CONF_SRC_ENV);
    assert_int_equal(kc_conf_get_source(&c, "listeners"), KC_CONF_SRC_DEFAULT);
    assert_int_equal(kc_conf_load_env(&c, NULL, err, sizeof err), 0);
    kc_conf_free(&c);
}

static void test_env_errors(void **state)
{
    kc_conf_t c;
    char err[512] = "";
    char *unknown[] = {"KCOORD_LOG_LEVEL=debug", "KCOORD_FOO_BAR=1", NULL};
    char *empty_key[] = {"KCOORD_=1", NULL};
    char *bad[] = {"KCOORD_NODE_ID=-3", NULL};
    char *dotted[] = {"KCOORD_LOG.LEVEL=error", NULL};
    char longname[300];
    char *toolong[] = {longname, NULL};

    (void)state;
    kc_conf_init(&c);
    assert_int_equal(kc_conf_load_env(&c, unknown, err, sizeof err), -1);
    assert_string_equal(err, "unknown environment variable KCOORD_FOO_BAR (no setting is called "
                             "\"foo.bar\")");
    assert_int_equal(kc_conf_load_env(&c, empty_key, err, sizeof err), -1);
    assert_string_equal(err, "unknown environment variable KCOORD_ (no setting is called \"\")");
    assert_int_equal(kc_conf_load_env(&c, bad, err, sizeof err), -1);
    assert_string_equal(err, "environment variable KCOORD_NODE_ID: node.id: \"-3\" is out of range "
                             "(expected 0..2147483647)");
    assert_int_equal(c.node_id, 0);
    assert_int_equal(kc_conf_load_env(&c, dotted, err, sizeof err), 0);
    assert_int_equal(c.log_level, KC_CONF_LOG_ERROR);
    memset(longname, 'A', sizeof longname);
    memcpy(longname, "KCOORD_", 7);
    strcpy(longname + sizeof longname - 3, "=1");
    assert_int_equal(kc_conf_load_env(&c, toolong, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown environment variable KCOORD_AAA"));
    kc_conf_free(&c);
}

/* ---- precedence and printing ---- */

static void test_precedence(void **state)
{
    kc_conf_t c;
    char path[64], err[512] = "", *out;
    char *env[] = {"KCOORD_NODE_ID=2", "KCOORD_LOG_LEVEL=warn", NULL};

    (void)state;
    write_tmp(path, "node.id=1\nlog.level=debug\ndata.dir=/from/file\n");
    kc_conf_init(&c);
    assert_int_equal(kc_conf_load_file(&c, path, err, sizeof err), 0);
    assert_int_equal(kc_conf_load_env(&c, env, err, sizeof err), 0);
    assert_int_equal(kc_conf_set(&c, "node.id", "3", KC_CONF_SRC_SET, err, sizeof err), 0);
    unlink(path);
    assert_int_equal(c.node_id, 3);
    assert_int_equal(c.log_level, KC_CONF_LOG_WARN);
    assert_string_equal(c.data_dir, "/from/file");
    assert_int_equal(c.queued_max_requests, 500);
    assert_int_equal(kc_conf_get_source(&c, "node.id"), KC_CONF_SRC_SET);
    assert_int_equal(kc_conf_get_source(&c, "log.level"), KC_CONF_SRC_ENV);
    assert_int_equal(kc_conf_get_source(&c, "data.dir"), KC_CONF_SRC_FILE);
    assert_int_equal(kc_conf_get_source(&c, "queued.max.requests"), KC_CONF_SRC_DEFAULT);

    set_ok(&c, "topics", "b:2,a:1");
    set_ok(&c, "connections.max.idle.ms", "9223372036854775807");
    out = print_to_string(&c);
    assert_string_equal(out,
                        "listeners=127.0.0.1:9092  # default\n"
                        "advertised.listeners=  # default\n"
                        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:"
                        "SASL_PLAINTEXT,SASL_SSL:SASL_SSL  # default\n"
                        "node.id=3  # --set\n"
                        "cluster.voters=  # default\n"
                        "cluster.brokers=  # default\n"
                        "cluster.id=  # default\n"
                        "cluster.bootstrap=true  # default\n"
                        "cluster.election.timeout.ms=1000  # default\n"
                        "cluster.heartbeat.timeout.ms=100  # default\n"
                        "cluster.snapshot.threshold=8192  # default\n"
                        "cluster.snapshot.trailing=2048  # default\n"
                        "cluster.security.protocol=PLAINTEXT  # default\n"
                        "cluster.ssl.keystore.location=  # default\n"
                        "cluster.ssl.truststore.location=  # default\n"
                        "data.dir=/from/file  # file\n"
                        "socket.request.max.bytes=104857600  # default\n"
                        "connections.max.idle.ms=9223372036854775807  # --set\n"
                        "queued.max.requests=500  # default\n"
                        "queued.max.request.bytes=268435456  # default\n"
                        "connection.max.unsent.bytes=4194304  # default\n"
                        "queued.max.unsent.bytes=268435456  # default\n"
                        "request.max.memory.bytes=134217728  # default\n"
                        "max.connections=2147483647  # default\n"
                        "max.connections.per.ip=2147483647  # default\n"
                        "log.reserved.fds=-1  # default\n"
                        "log.level=warn  # env\n"
                        "log.format=text  # default\n"
                        "topics=b:2,a:1  # --set\n"
                        "auto.create.topics.enable=false  # default\n"
                        "num.partitions=1  # default\n"
                        "offsets.topic.num.partitions=50  # default\n"
                        "group.min.session.timeout.ms=6000  # default\n"
                        "group.max.session.timeout.ms=1800000  # default\n"
                        "group.initial.rebalance.delay.ms=3000  # default\n"
                        "group.max.size=2147483647  # default\n"
                        "group.consumer.heartbeat.interval.ms=5000  # default\n"
                        "group.consumer.min.heartbeat.interval.ms=5000  # default\n"
                        "group.consumer.max.heartbeat.interval.ms=15000  # default\n"
                        "group.consumer.session.timeout.ms=45000  # default\n"
                        "group.consumer.min.session.timeout.ms=45000  # default\n"
                        "group.consumer.max.session.timeout.ms=60000  # default\n"
                        "group.consumer.assignment.interval.ms=1000  # default\n"
                        "group.consumer.min.assignment.interval.ms=0  # default\n"
                        "group.consumer.max.assignment.interval.ms=15000  # default\n"
                        "group.consumer.max.size=2147483647  # default\n"
                        "group.consumer.assignors=uniform,range  # default\n"
                        "group.consumer.migration.policy=bidirectional  # default\n"
                        "group.consumer.assignor.offload.enable=true  # default\n"
                        "group.consumer.assignor.offload.threshold=10000  # default\n"
                        "group.consumer.regex.max.bytes=16384  # default\n"
                        "group.consumer.regex.max.count=1000  # default\n"
                        "group.consumer.regex.refresh.interval.ms=600000  # default\n"
                        "message.max.bytes=1048588  # default\n"
                        "offset.metadata.max.bytes=4096  # default\n"
                        "offsets.retention.minutes=10080  # default\n"
                        "offsets.retention.check.interval.ms=600000  # default\n"
                        "log.flush.policy=always  # default\n"
                        "log.flush.interval.ms=1000  # default\n"
                        "offsets.topic.segment.bytes=104857600  # default\n"
                        "log.roll.ms=604800000  # default\n"
                        "offsets.topic.compression.codec=zstd  # default\n"
                        "log.cleaner.delete.retention.ms=86400000  # default\n"
                        "log.cleaner.backoff.ms=15000  # default\n"
                        "ssl.keystore.type=PEM  # default\n"
                        "ssl.keystore.location=  # default\n"
                        "ssl.keystore.certificate.chain=  # default\n"
                        "ssl.keystore.key=  # default\n"
                        "ssl.key.password=  # default\n"
                        "ssl.truststore.type=PEM  # default\n"
                        "ssl.truststore.location=  # default\n"
                        "ssl.truststore.certificates=  # default\n"
                        "ssl.client.auth=none  # default\n"
                        "ssl.enabled.protocols=TLSv1.2,TLSv1.3  # default\n"
                        "ssl.cipher.suites=  # default\n"
                        "ssl.principal.mapping.rules=DEFAULT  # default\n"
                        "ssl.handshake.timeout.ms=10000  # default\n"
                        "sasl.enabled.mechanisms=  # default\n"
                        "plain.sasl.jaas.config=  # default\n"
                        "connections.max.reauth.ms=0  # default\n"
                        "connection.failed.authentication.delay.ms=100  # default\n"
                        "sasl.server.max.receive.size=524288  # default\n"
                        "authorizer.class.name=  # default\n"
                        "super.users=  # default\n"
                        "allow.everyone.if.no.acl.found=false  # default\n"
                        "metrics.listener=127.0.0.1:9404  # default\n"
                        "metrics.max.connections=16  # default\n"
                        "metrics.request.timeout.ms=10000  # default\n"
                        "metrics.chunk.bytes=32768  # default\n"
                        "metrics.ssl.enabled=false  # default\n"
                        "metrics.bearer.token=  # default\n");
    free(out);
    kc_conf_free(&c);
}

/* ---- the generated conf/kcoord.conf ---- */

static void test_doc_is_current(void **state)
{
    size_t want_len = 0, have_len = 0;
    char *want = doc_to_string(&want_len);
    char *have = read_all("conf/kcoord.conf", &have_len);

    (void)state;
    if (have == NULL) {
        print_error("cannot read conf/kcoord.conf: run the test from the repository root\n");
        fail();
    }
    if (have_len != want_len || memcmp(have, want, want_len) != 0) {
        print_error("conf/kcoord.conf is stale; regenerate it with\n"
                    "    build/tests/unit/test_conf --write-doc > conf/kcoord.conf\n");
        fail();
    }
    free(want);
    free(have);
}

static void test_markdown_is_current(void **state)
{
    char *want = NULL;
    size_t want_len = 0, have_len = 0;
    FILE *f = open_memstream(&want, &want_len);

    (void)state;
    assert_non_null(f);
    kc_conf_write_markdown(f);
    fclose(f);
    char *have = read_all("docs/CONFIG.md", &have_len);
    if (have == NULL) {
        print_error("cannot read docs/CONFIG.md: run the test from the repository root\n");
        fail();
    }
    if (have_len != want_len || memcmp(have, want, want_len) != 0) {
        print_error("docs/CONFIG.md is stale; regenerate it with\n"
                    "    build/tests/unit/test_conf --write-markdown > docs/CONFIG.md\n");
        fail();
    }
    /* Every setting has a row and a section. */
    assert_non_null(strstr(want, "| `offsets.topic.num.partitions` | int | `50` | 1..10000 | "
                                 "`KCOORD_OFFSETS_TOPIC_NUM_PARTITIONS` |"));
    assert_non_null(strstr(want, "\n### log.flush.policy\n"));
    free(want);
    free(have);
}

static void test_doc_content(void **state)
{
    size_t len = 0;
    char *doc = doc_to_string(&len), *line, *save = NULL;
    kc_conf_t c;
    char path[64], err[512] = "", *printed;
    int settings = 0, shown = 0;

    (void)state;
    /* every line is a comment, blank, or key=default; none is wider than 80 columns */
    for (line = strtok_r(doc, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        assert_true(strlen(line) <= 80);
        if (line[0] != '#') {
            assert_non_null(strchr(line, '='));
            shown++;
        }
        if (strncmp(line, "#", 1) == 0 && strchr(line, '=') != NULL && strchr(line, ' ') == NULL)
            settings++;
    }
    assert_int_equal(shown, 2);
    assert_int_equal(settings + shown, KC_CONF_N_SETTINGS);
    free(doc);

    doc = doc_to_string(&len);
    assert_non_null(strstr(doc, "\n# int (bytes), default 104857600, range 16..2147483647\n"
                                "#socket.request.max.bytes=104857600\n"));
    assert_non_null(strstr(doc, "\n# enum, default info, one of debug, info, warn, error\n"
                                "#log.level=info\n"));
    assert_non_null(strstr(doc, "\nlisteners=127.0.0.1:9092\n"));
    assert_non_null(strstr(doc, "\ndata.dir=./data\n"));
    assert_non_null(strstr(doc, "\n#advertised.listeners=\n"));
    assert_non_null(strstr(doc, "\n#topics=\n"));

    /* loading the doc changes no value; the two shown settings come from the file */
    write_tmp(path, doc);
    kc_conf_init(&c);
    assert_int_equal(kc_conf_load_file(&c, path, err, sizeof err), 0);
    unlink(path);
    printed = print_to_string(&c);
    assert_string_equal(printed,
                        "listeners=127.0.0.1:9092  # file\n"
                        "advertised.listeners=  # default\n"
                        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:"
                        "SASL_PLAINTEXT,SASL_SSL:SASL_SSL  # default\n"
                        "node.id=0  # default\n"
                        "cluster.voters=  # default\n"
                        "cluster.brokers=  # default\n"
                        "cluster.id=  # default\n"
                        "cluster.bootstrap=true  # default\n"
                        "cluster.election.timeout.ms=1000  # default\n"
                        "cluster.heartbeat.timeout.ms=100  # default\n"
                        "cluster.snapshot.threshold=8192  # default\n"
                        "cluster.snapshot.trailing=2048  # default\n"
                        "cluster.security.protocol=PLAINTEXT  # default\n"
                        "cluster.ssl.keystore.location=  # default\n"
                        "cluster.ssl.truststore.location=  # default\n"
                        "data.dir=./data  # file\n"
                        "socket.request.max.bytes=104857600  # default\n"
                        "connections.max.idle.ms=600000  # default\n"
                        "queued.max.requests=500  # default\n"
                        "queued.max.request.bytes=268435456  # default\n"
                        "connection.max.unsent.bytes=4194304  # default\n"
                        "queued.max.unsent.bytes=268435456  # default\n"
                        "request.max.memory.bytes=134217728  # default\n"
                        "max.connections=2147483647  # default\n"
                        "max.connections.per.ip=2147483647  # default\n"
                        "log.reserved.fds=-1  # default\n"
                        "log.level=info  # default\n"
                        "log.format=text  # default\n"
                        "topics=  # default\n"
                        "auto.create.topics.enable=false  # default\n"
                        "num.partitions=1  # default\n"
                        "offsets.topic.num.partitions=50  # default\n"
                        "group.min.session.timeout.ms=6000  # default\n"
                        "group.max.session.timeout.ms=1800000  # default\n"
                        "group.initial.rebalance.delay.ms=3000  # default\n"
                        "group.max.size=2147483647  # default\n"
                        "group.consumer.heartbeat.interval.ms=5000  # default\n"
                        "group.consumer.min.heartbeat.interval.ms=5000  # default\n"
                        "group.consumer.max.heartbeat.interval.ms=15000  # default\n"
                        "group.consumer.session.timeout.ms=45000  # default\n"
                        "group.consumer.min.session.timeout.ms=45000  # default\n"
                        "group.consumer.max.session.timeout.ms=60000  # default\n"
                        "group.consumer.assignment.interval.ms=1000  # default\n"
                        "group.consumer.min.assignment.interval.ms=0  # default\n"
                        "group.consumer.max.assignment.interval.ms=15000  # default\n"
                        "group.consumer.max.size=2147483647  # default\n"
                        "group.consumer.assignors=uniform,range  # default\n"
                        "group.consumer.migration.policy=bidirectional  # default\n"
                        "group.consumer.assignor.offload.enable=true  # default\n"
                        "group.consumer.assignor.offload.threshold=10000  # default\n"
                        "group.consumer.regex.max.bytes=16384  # default\n"
                        "group.consumer.regex.max.count=1000  # default\n"
                        "group.consumer.regex.refresh.interval.ms=600000  # default\n"
                        "message.max.bytes=1048588  # default\n"
                        "offset.metadata.max.bytes=4096  # default\n"
                        "offsets.retention.minutes=10080  # default\n"
                        "offsets.retention.check.interval.ms=600000  # default\n"
                        "log.flush.policy=always  # default\n"
                        "log.flush.interval.ms=1000  # default\n"
                        "offsets.topic.segment.bytes=104857600  # default\n"
                        "log.roll.ms=604800000  # default\n"
                        "offsets.topic.compression.codec=zstd  # default\n"
                        "log.cleaner.delete.retention.ms=86400000  # default\n"
                        "log.cleaner.backoff.ms=15000  # default\n"
                        "ssl.keystore.type=PEM  # default\n"
                        "ssl.keystore.location=  # default\n"
                        "ssl.keystore.certificate.chain=  # default\n"
                        "ssl.keystore.key=  # default\n"
                        "ssl.key.password=  # default\n"
                        "ssl.truststore.type=PEM  # default\n"
                        "ssl.truststore.location=  # default\n"
                        "ssl.truststore.certificates=  # default\n"
                        "ssl.client.auth=none  # default\n"
                        "ssl.enabled.protocols=TLSv1.2,TLSv1.3  # default\n"
                        "ssl.cipher.suites=  # default\n"
                        "ssl.principal.mapping.rules=DEFAULT  # default\n"
                        "ssl.handshake.timeout.ms=10000  # default\n"
                        "sasl.enabled.mechanisms=  # default\n"
                        "plain.sasl.jaas.config=  # default\n"
                        "connections.max.reauth.ms=0  # default\n"
                        "connection.failed.authentication.delay.ms=100  # default\n"
                        "sasl.server.max.receive.size=524288  # default\n"
                        "authorizer.class.name=  # default\n"
                        "super.users=  # default\n"
                        "allow.everyone.if.no.acl.found=false  # default\n"
                        "metrics.listener=127.0.0.1:9404  # default\n"
                        "metrics.max.connections=16  # default\n"
                        "metrics.request.timeout.ms=10000  # default\n"
                        "metrics.chunk.bytes=32768  # default\n"
                        "metrics.ssl.enabled=false  # default\n"
                        "metrics.bearer.token=  # default\n");
    free(printed);
    kc_conf_free(&c);
    free(doc);
}

/* The HTTP listener's bounds: defaults, and each end of their ranges. */
/* The authorizer settings: Kafka's names, its one authorizer, super.users as Kafka parses it. */
static void test_authorizer(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    assert_string_equal(c.authorizer_class_name, "");
    assert_string_equal(c.super_users, "");
    assert_false(c.allow_everyone_if_no_acl_found);
    set_ok(&c, "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
    set_ok(&c, "authorizer.class.name", "");
    set_bad(&c, "authorizer.class.name", "kafka.security.authorizer.AclAuthorizer",
            "not an authorizer kcoord has");
    set_ok(&c, "super.users", "User:admin; User:CN=ops,O=example ;;");
    assert_string_equal(c.super_users, "User:admin; User:CN=ops,O=example ;;");
    set_bad(&c, "super.users", "User:admin;bob", "\"bob\", which is not a principal");
    set_ok(&c, "allow.everyone.if.no.acl.found", "true");
    assert_true(c.allow_everyone_if_no_acl_found);
    /* With an authorizer, an HTTP listener beyond loopback needs HTTPS and a token. */
    set_ok(&c, "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
    check_is(&c, NULL);
    set_ok(&c, "metrics.listener", "0.0.0.0:9404");
    check_is(&c, "metrics.listener (0.0.0.0:9404) is not a loopback address: with "
                 "authorizer.class.name set it needs metrics.ssl.enabled=true and "
                 "metrics.bearer.token, since /v1/groups shows member hosts and offsets that "
                 "the ACLs protect");
    set_ok(&c, "metrics.ssl.enabled", "true");
    set_ok(&c, "metrics.bearer.token", "t0ken");
    check_is(&c, NULL);
    set_ok(&c, "metrics.listener", "[::1]:9404");
    set_ok(&c, "metrics.bearer.token", "");
    check_is(&c, NULL);
    set_ok(&c, "authorizer.class.name", "");
    set_ok(&c, "metrics.listener", "0.0.0.0:9404");
    check_is(&c, NULL);
    kc_conf_free(&c);
}

static void test_metrics_bounds(void **state)
{
    kc_conf_t c;

    (void)state;
    kc_conf_init(&c);
    assert_int_equal(c.metrics_max_connections, 16);
    assert_int_equal(c.metrics_request_timeout_ms, 10000);
    assert_int_equal(c.metrics_chunk_bytes, 32768);
    set_ok(&c, "metrics.max.connections", "1");
    set_ok(&c, "metrics.max.connections", "10000");
    assert_int_equal(c.metrics_max_connections, 10000);
    set_bad(&c, "metrics.max.connections", "0", "is out of range (expected 1..10000)");
    set_bad(&c, "metrics.max.connections", "10001", "is out of range (expected 1..10000)");
    set_ok(&c, "metrics.request.timeout.ms", "100");
    set_ok(&c, "metrics.request.timeout.ms", "3600000");
    assert_int_equal(c.metrics_request_timeout_ms, 3600000);
    set_bad(&c, "metrics.request.timeout.ms", "99", "is out of range (expected 100..3600000)");
    set_ok(&c, "metrics.chunk.bytes", "1024");
    set_ok(&c, "metrics.chunk.bytes", "1048576");
    assert_int_equal(c.metrics_chunk_bytes, 1048576);
    set_bad(&c, "metrics.chunk.bytes", "1023", "is out of range (expected 1024..1048576)");
    set_bad(&c, "metrics.chunk.bytes", "1048577", "is out of range (expected 1024..1048576)");
    kc_conf_free(&c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_source_names),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_int),
        cmocka_unit_test(test_long),
        cmocka_unit_test(test_enum),
        cmocka_unit_test(test_string),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_module_bounds),
        cmocka_unit_test(test_parse_listeners),
        cmocka_unit_test(test_listener_settings),
        cmocka_unit_test(test_listener_names),
        cmocka_unit_test(test_topics),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_file_escapes),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_env_errors),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_doc_is_current),
        cmocka_unit_test(test_markdown_is_current),
        cmocka_unit_test(test_doc_content),
        cmocka_unit_test(test_metrics_bounds),
        cmocka_unit_test(test_jaas),
        cmocka_unit_test(test_authorizer),
    };

    if (argc == 2 && strcmp(argv[1], "--write-doc") == 0) {
        kc_conf_write_doc(stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (argc == 2 && strcmp(argv[1], "--write-markdown") == 0) {
        kc_conf_write_markdown(stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
