/* conf.h - kcoord's settings: defaults, the config file, the environment and --set, in one table.
 *
 * Every setting is one row of the table in conf.c (Kafka's dotted name, type, default, bounds,
 * one-line doc) and one typed member of kc_conf_t below. Values arrive as text from four
 * sources, and main applies them in this order, each overriding the one before:
 *
 *     defaults (kc_conf_init) < file (kc_conf_load_file) < environment (kc_conf_load_env)
 *         < command line (kc_conf_set with KC_CONF_SRC_SET)
 *
 * Every value goes through kc_conf_set, which validates it against the table and either stores
 * it or leaves the configuration untouched and explains the problem in `err`. Error messages
 * name the setting, the offending value and what was expected, so main can print them as they
 * are and exit.
 *
 * conf/kcoord.conf is the output of kc_conf_write_doc; a unit test fails when it is stale.
 */
#ifndef KC_CONF_H
#define KC_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The number of settings, i.e. rows in conf.c's table. conf.c asserts that the two agree. */
#define KC_CONF_N_SETTINGS 91

/* Where a setting's current value came from. */
typedef enum kc_conf_source_e {
    KC_CONF_SRC_DEFAULT = 0, /* kc_conf_init */
    KC_CONF_SRC_FILE = 1,    /* kc_conf_load_file */
    KC_CONF_SRC_ENV = 2,     /* kc_conf_load_env */
    KC_CONF_SRC_SET = 3,     /* --set key=value on the command line */
} kc_conf_source_t;

/* Values of kc_conf_t.log_level. They are the log module's kc_diag_level_t values; conf does not
 * include the log module so that it can be used (and tested) before logging is set up. */
enum {
    KC_CONF_LOG_DEBUG = 0,
    KC_CONF_LOG_INFO = 1,
    KC_CONF_LOG_WARN = 2,
    KC_CONF_LOG_ERROR = 3,
};

/* Values of kc_conf_t.log_format: the log module's kc_diag_format_t values. */
enum { KC_CONF_LOG_TEXT = 0, KC_CONF_LOG_JSON = 1 };

/* Values of kc_conf_t.log_flush_policy and offsets_topic_compression_codec. */
enum { KC_CONF_FLUSH_ALWAYS = 0, KC_CONF_FLUSH_INTERVAL = 1, KC_CONF_FLUSH_NEVER = 2 };
enum { KC_CONF_CODEC_NONE = 0, KC_CONF_CODEC_ZSTD = 1 };
/* ssl.client.auth. */
enum {
    KC_CONF_SSL_CLIENT_AUTH_NONE = 0,
    KC_CONF_SSL_CLIENT_AUTH_REQUESTED = 1,
    KC_CONF_SSL_CLIENT_AUTH_REQUIRED = 2,
};
/* The security protocols of listener.security.protocol.map, in Kafka's SecurityProtocol order. */
enum {
    KC_CONF_SEC_PLAINTEXT = 0,
    KC_CONF_SEC_SSL = 1,
    KC_CONF_SEC_SASL_PLAINTEXT = 2,
    KC_CONF_SEC_SASL_SSL = 3,
};

/* The one authorizer kcoord has (authorizer.class.name). */
#define KC_CONF_AUTHORIZER "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

/* One per-listener setting, listener.name.<name>.<setting>. */
typedef struct kc_conf_override_s {
    char *listener; /* the listener name, upper case, owned */
    char *key;      /* the setting's name (an ssl.* setting), owned */
    char *value;    /* its value, validated as the setting's own, owned */
    int source;     /* a kc_conf_source_t */
} kc_conf_override_t;
/* group.consumer.migration.policy, in the order of group.h's KC_GM_MIGRATION_*. */
enum {
    KC_CONF_MIGRATION_BIDIRECTIONAL = 0,
    KC_CONF_MIGRATION_UPGRADE = 1,
    KC_CONF_MIGRATION_DOWNGRADE = 2,
    KC_CONF_MIGRATION_DISABLED = 3,
};

/* One entry of the `topics` setting. */
typedef struct kc_conf_topic_s {
    char *name;         /* a valid Kafka topic name, NUL-terminated; owned by the kc_conf_t */
    int32_t partitions; /* 1..1000000 */
} kc_conf_topic_t;

/* The effective configuration. Read the members directly; change them only through kc_conf_set
 * (or the loaders), which keeps `source` right and the strings owned. Every string member is
 * non-NULL after kc_conf_init (an empty setting is ""), owned by the struct and freed by
 * kc_conf_free; a pointer read from it stays valid until that setting is set again or the
 * struct is freed. */
typedef struct kc_conf_s {
    char *listeners;            /* listeners: validated, parse with kc_conf_parse_listeners */
    char *advertised_listeners; /* advertised.listeners: "" = what listeners is bound to */
    char *listener_security_protocol_map;  /* listener.security.protocol.map: validated */
    int32_t node_id;                       /* node.id */
    char *cluster_voters;                  /* cluster.voters: "" = a single node, no raft */
    char *cluster_brokers;                 /* cluster.brokers */
    char *cluster_id;                      /* cluster.id: "" = derived from cluster.voters */
    bool cluster_bootstrap;                /* cluster.bootstrap */
    int32_t cluster_election_timeout_ms;   /* cluster.election.timeout.ms */
    int32_t cluster_heartbeat_timeout_ms;  /* cluster.heartbeat.timeout.ms */
    int32_t cluster_snapshot_threshold;    /* cluster.snapshot.threshold: entries */
    int32_t cluster_snapshot_trailing;     /* cluster.snapshot.trailing: entries */
    int cluster_security_protocol;         /* cluster.security.protocol: 0 PLAINTEXT, 1 SSL */
    char *cluster_ssl_keystore_location;   /* cluster.ssl.keystore.location */
    char *cluster_ssl_truststore_location; /* cluster.ssl.truststore.location */
    char *data_dir;                        /* data.dir: never empty */
    int32_t socket_request_max_bytes;      /* socket.request.max.bytes */
    int64_t connections_max_idle_ms;       /* connections.max.idle.ms */
    int32_t queued_max_requests;           /* queued.max.requests: per connection */
    int64_t queued_max_request_bytes;    /* queued.max.request.bytes: all connections, -1 = none */
    int64_t connection_max_unsent_bytes; /* connection.max.unsent.bytes */
    int64_t queued_max_unsent_bytes;     /* queued.max.unsent.bytes: all connections */
    int64_t request_max_memory_bytes;    /* request.max.memory.bytes: one request's arena */
    int32_t max_connections;             /* max.connections */
    int32_t max_connections_per_ip;      /* max.connections.per.ip */
    int32_t log_reserved_fds;            /* log.reserved.fds: -1 = from the partition count */
    int log_level;                       /* log.level: KC_CONF_LOG_DEBUG..KC_CONF_LOG_ERROR */
    int log_format;                      /* log.format: KC_CONF_LOG_TEXT or KC_CONF_LOG_JSON */
    kc_conf_topic_t *topics;             /* topics: n_topics entries in the order given, or NULL */
    size_t n_topics;
    bool auto_create_topics_enable;           /* auto.create.topics.enable */
    int32_t num_partitions;                   /* num.partitions */
    int32_t offsets_topic_num_partitions;     /* offsets.topic.num.partitions */
    int32_t group_min_session_timeout_ms;     /* group.min.session.timeout.ms */
    int32_t group_max_session_timeout_ms;     /* group.max.session.timeout.ms */
    int32_t group_initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms */
    int32_t group_max_size;                   /* group.max.size */
    /* KIP-848 consumer groups. */
    int32_t group_consumer_heartbeat_interval_ms;     /* group.consumer.heartbeat.interval.ms */
    int32_t group_consumer_min_heartbeat_interval_ms; /* group.consumer.min.heartbeat.interval.ms */
    int32_t group_consumer_max_heartbeat_interval_ms; /* group.consumer.max.heartbeat.interval.ms */
    int32_t group_consumer_session_timeout_ms;        /* group.consumer.session.timeout.ms */
    int32_t group_consumer_min_session_timeout_ms;    /* group.consumer.min.session.timeout.ms */
    int32_t group_consumer_max_session_timeout_ms;    /* group.consumer.max.session.timeout.ms */
    int32_t group_consumer_max_size;                  /* group.consumer.max.size */
    int32_t group_consumer_assignment_interval_ms;    /* group.consumer.assignment.interval.ms */
    int32_t
        group_consumer_min_assignment_interval_ms; /* group.consumer.min.assignment.interval.ms */
    int32_t
        group_consumer_max_assignment_interval_ms; /* group.consumer.max.assignment.interval.ms */
    char *group_consumer_assignors; /* group.consumer.assignors: "uniform,range"; first = default */
    int group_consumer_migration_policy; /* group.consumer.migration.policy: KC_CONF_MIGRATION_* */
    bool group_consumer_assignor_offload_enable;       /* group.consumer.assignor.offload.enable */
    int64_t group_consumer_assignor_offload_threshold; /* ...offload.threshold (kcoord's) */
    int32_t group_consumer_regex_max_bytes;            /* ...regex.max.bytes (kcoord's) */
    int32_t group_consumer_regex_max_count;            /* ...regex.max.count (kcoord's) */
    int32_t group_consumer_regex_refresh_interval_ms;  /* ...regex.refresh.interval.ms */
    int32_t message_max_bytes;                         /* message.max.bytes */
    int32_t offset_metadata_max_bytes;                 /* offset.metadata.max.bytes */
    int32_t offsets_retention_minutes;                 /* offsets.retention.minutes */
    int64_t offsets_retention_check_interval_ms;       /* offsets.retention.check.interval.ms */
    int log_flush_policy;                              /* log.flush.policy: KC_CONF_FLUSH_* */
    int64_t log_flush_interval_ms;                     /* log.flush.interval.ms */
    int32_t offsets_topic_segment_bytes;               /* offsets.topic.segment.bytes */
    int64_t log_roll_ms;                               /* log.roll.ms */
    int offsets_topic_compression_codec;     /* offsets.topic.compression.codec: KC_CONF_CODEC_* */
    int64_t log_cleaner_delete_retention_ms; /* log.cleaner.delete.retention.ms */
    int64_t log_cleaner_backoff_ms;          /* log.cleaner.backoff.ms */
    int ssl_keystore_type;                   /* ssl.keystore.type: 0 = PEM */
    char *ssl_keystore_location;             /* ssl.keystore.location */
    char *ssl_keystore_certificate_chain;    /* ssl.keystore.certificate.chain */
    char *ssl_keystore_key;                  /* ssl.keystore.key */
    char *ssl_key_password;                  /* ssl.key.password */
    int ssl_truststore_type;                 /* ssl.truststore.type: 0 = PEM */
    char *ssl_truststore_location;           /* ssl.truststore.location */
    char *ssl_truststore_certificates;       /* ssl.truststore.certificates */
    int ssl_client_auth;                     /* ssl.client.auth: KC_CONF_SSL_CLIENT_AUTH_* */
    char *ssl_enabled_protocols;             /* ssl.enabled.protocols: "TLSv1.2,TLSv1.3" */
    char *ssl_cipher_suites;                 /* ssl.cipher.suites */
    char *ssl_principal_mapping_rules;       /* ssl.principal.mapping.rules */
    int64_t ssl_handshake_timeout_ms;        /* ssl.handshake.timeout.ms (kcoord's) */
    char *authorizer_class_name;             /* authorizer.class.name: "" or KC_CONF_AUTHORIZER */
    char *super_users;                       /* super.users: "User:a;User:b", validated */
    bool allow_everyone_if_no_acl_found;     /* allow.everyone.if.no.acl.found */
    char *sasl_enabled_mechanisms;           /* sasl.enabled.mechanisms: "" = none */
    char *plain_sasl_jaas_config;            /* plain.sasl.jaas.config: PLAIN's users */
    int64_t connections_max_reauth_ms;       /* connections.max.reauth.ms: 0 = no expiry */
    int32_t connection_failed_authentication_delay_ms; /* connection.failed.authentication... */
    int32_t sasl_server_max_receive_size;              /* sasl.server.max.receive.size */
    char *metrics_listener; /* metrics.listener: "" (off) or one host:port for the HTTP listener */
    int32_t metrics_max_connections;    /* metrics.max.connections */
    int64_t metrics_request_timeout_ms; /* metrics.request.timeout.ms */
    int32_t metrics_chunk_bytes;        /* metrics.chunk.bytes */
    bool metrics_ssl_enabled;           /* metrics.ssl.enabled (kcoord's) */
    char *metrics_bearer_token;         /* metrics.bearer.token (kcoord's): "" = none */
    kc_conf_override_t *overrides;      /* listener.name.<name>.<setting>, in the order first set */
    size_t n_overrides;
    /* Where each setting's value came from, indexed in table order; use kc_conf_get_source. */
    kc_conf_source_t source[KC_CONF_N_SETTINGS];
} kc_conf_t;

/* One address of `listeners` or `advertised.listeners`. */
typedef struct kc_listener_s {
    char name[64];  /* the listener name, upper case: "PLAINTEXT" for a plain host:port */
    bool named;     /* written NAME://host:port (a plain host:port is not) */
    char host[256]; /* NUL-terminated: a host name, an IPv4 address, or an IPv6 address without
                     * its brackets (ready for uv_ip6_addr) */
    int port;       /* 0..65535; 0 asks the OS for a free port */
} kc_listener_t;

/* Fill `c` with every setting's default, all with source KC_CONF_SRC_DEFAULT. `c` need not be
 * initialised before; anything it held is overwritten, not freed. Aborts the process if memory
 * for the default strings cannot be allocated (this runs once, at startup). */
void kc_conf_init(kc_conf_t *c);

/* Free every string and array `c` owns and leave it zeroed. `c` itself is not freed; it may be
 * passed to kc_conf_init again. Safe on a zeroed struct. */
void kc_conf_free(kc_conf_t *c);

/* Validate `value` for the setting named `key` and store it with the given source (a
 * kc_conf_source_t). The value is taken exactly as given: callers trim it if they want to.
 * Returns 0 on success. On an unknown key, a value that does not validate, an invalid source or
 * out of memory, returns -1, leaves `c` unchanged and writes a NUL-terminated message of at most
 * `errlen` bytes to `err` that names the key and the value and says what was expected, e.g.
 *     socket.request.max.bytes: "abc" is not an integer (expected 16..2147483647)
 *     unknown setting "foo.bar"
 * `err` may be NULL when `errlen` is 0. */
int kc_conf_set(kc_conf_t *c, const char *key, const char *value, int source, char *err,
                size_t errlen);

/* Apply the settings in the Java-properties style file at `path`, with source KC_CONF_SRC_FILE.
 * Syntax: one `key=value` or `key: value` per line; whitespace around the key and the value is
 * trimmed; blank lines and lines whose first non-blank character is `#` or `!` are ignored; a
 * line ending in an odd number of backslashes continues on the next line (whose leading
 * whitespace is dropped); backslash escapes as in Java (\\ \= \: \# \! \t \n \r \f \uXXXX,
 * any other \c is c). A key repeated later in the file overrides the earlier one.
 * Returns 0 on success. Returns -1 on the first error (cannot open or read the file, a line
 * without a separator, an unknown key, an invalid value) with a message in `err` that starts
 * with `path:line: ` (or `path: ` when the file cannot be read). Settings on the lines before
 * the failing one have been applied by then; callers are expected to exit on failure. */
int kc_conf_load_file(kc_conf_t *c, const char *path, char *err, size_t errlen);

/* Apply every environment variable `KCOORD_<KEY>=value` in the NULL-terminated `envp` (as
 * main's envp or `environ`), with source KC_CONF_SRC_ENV. <KEY> is the setting's name with dots
 * written as underscores, in any case: KCOORD_LOG_LEVEL and KCOORD_log_level both set log.level.
 * The prefix itself must be upper-case `KCOORD_`.
 * Variables without the prefix are ignored; a NULL envp applies nothing.
 * Returns 0 on success, -1 on the first error: a KCOORD_ variable that names no setting (the
 * message names the variable) or an invalid value (the message names the variable and the
 * setting). As with the file, variables processed before the failing one stay applied. */
int kc_conf_load_env(kc_conf_t *c, char *const *envp, char *err, size_t errlen);

/* Check the rules that tie settings together, as Kafka's GroupCoordinatorConfig does at start-up:
 * group.consumer.min.heartbeat.interval.ms <= group.consumer.heartbeat.interval.ms <=
 * group.consumer.max.heartbeat.interval.ms, the same for group.consumer.session.timeout.ms and
 * its bounds, group.consumer.heartbeat.interval.ms < group.consumer.session.timeout.ms, and
 * group.min.session.timeout.ms <= group.max.session.timeout.ms (else every JoinGroup would get
 * INVALID_SESSION_TIMEOUT).
 * Returns 0, or -1 with a message naming both settings and their values in `err`. Main calls it
 * once every source has been applied. */
int kc_conf_check(const kc_conf_t *c, char *err, size_t errlen);
/* kc_conf_check also checks the listeners as Kafka does: every listener name appears in
 * listener.security.protocol.map; names are unique, except plain host:port entries, which all
 * share the name PLAINTEXT; every advertised.listeners name is a listener's, at most once; every
 * listener.name.<name>. override names a listener. */

/* Every open __consumer_offsets partition holds its active segment and its index open; the
 * process needs a few more files of its own (listeners, the loop, a cleaner's files). */
#define KC_CONF_FILES_PER_PARTITION 2
#define KC_CONF_FILES_SPARE         64

/* How many open files the settings need: KC_CONF_FILES_PER_PARTITION per
 * offsets.topic.num.partitions, plus KC_CONF_FILES_SPARE. Connections come on top. */
uint64_t kc_conf_files_needed(const kc_conf_t *c);

/* Whether a process that may open `max_files` files (RLIMIT_NOFILE) can serve these settings:
 * 0, or -1 with a message naming offsets.topic.num.partitions and the limit in `err`. Main
 * calls it at start, after raising its soft limit as far as the hard one allows. */
int kc_conf_check_files(const kc_conf_t *c, uint64_t max_files, char *err, size_t errlen);

/* The name and bounds of the i-th setting of the table, when it is a number (an integer or a
 * long): true. False for another type or i >= KC_CONF_N_SETTINGS. Tests walk the table with it. */
bool kc_conf_numeric(size_t i, const char **name, int64_t *min, int64_t *max);

/* Where the value of setting `key` came from: a kc_conf_source_t, or -1 for an unknown key. */
int kc_conf_get_source(const kc_conf_t *c, const char *key);

/* "default", "file", "env" or "--set"; "?" for anything else. The string is static. */
const char *kc_conf_source_name(int source);

/* Write the effective settings to `out` in table order, one per line as `key=value  # source`,
 * e.g. `log.level=debug  # env`. */
void kc_conf_print(const kc_conf_t *c, FILE *out);

/* Write the documented default configuration file: a header, then for every setting its doc,
 * a line with its type, default and bounds, and `key=default` (commented out with `#` unless
 * the setting is one conf/kcoord.conf sets for `make run`). conf/kcoord.conf is this output. */
void kc_conf_write_doc(FILE *out);

/* Write docs/CONFIG.md: a table of every setting (name, type, default, bounds, environment
 * variable) and then each setting's doc. A unit test fails when docs/CONFIG.md is stale. */
void kc_conf_write_markdown(FILE *out);

/* Parse a comma-separated listener list such as
 *     127.0.0.1:9092,SSL://[::1]:0,internal://broker.example:9093
 * Each entry is `host:port` (a PLAINTEXT listener) or `NAME://host:port`, NAME being letters,
 * digits and '_' (at most 63), stored upper-cased as Kafka normalises listener names; an IPv6
 * host is written in brackets; the host is non-empty and at most 255 bytes; the port is
 * 0..65535. Whitespace around entries is ignored. An empty (or all-blank) string is zero
 * entries. Entries are stored in out[0..max); when `out` is NULL they are only validated and
 * counted. On success returns 0 and sets *n (if `n` is not NULL) to the number of entries.
 * Returns -1 with a message in `err` naming the offending entry when an entry is malformed or,
 * with a non-NULL `out`, when there are more than `max` entries; `out` may then be partly
 * written. */
int kc_conf_parse_listeners(const char *s, kc_listener_t *out, size_t max, size_t *n, char *err,
                            size_t errlen);

/* The security protocol listener.security.protocol.map gives listener `name` (any case): a
 * KC_CONF_SEC_*, or -1 when the map does not name it. */
int kc_conf_listener_protocol(const kc_conf_t *c, const char *name);

/* "PLAINTEXT", "SSL", "SASL_PLAINTEXT" or "SASL_SSL" for a KC_CONF_SEC_*; "?" otherwise. */
const char *kc_conf_protocol_name(int protocol);

/* The value of setting `key` for listener `name` (any case), as text: its
 * listener.name.<name>.<key> override when there is one, else the setting's own value (an enum
 * as its value's name, a number in decimal into `buf`). NULL for an unknown key. The pointer is
 * valid until the setting is set again, or, for numbers, until `buf` is reused. *overridden
 * (when not NULL) says whether the value came from the listener.name.<name>. override. */
const char *kc_conf_listener_value(const kc_conf_t *c, const char *name, const char *key, char *buf,
                                   size_t cap, bool *overridden);

/* The options of one login module in a JAAS configuration as Kafka's sasl.jaas.config takes it
 * (JaasConfig): `module.Class flag key=value ... ;`, flag one of required, requisite,
 * sufficient or optional, a value a word or a "quoted" string (\\ and \" escaped), comments
 * as in Java. Exactly one module, named `module`, is accepted (Kafka wants one per listener and
 * mechanism). Calls on_option for each option in order (key and value NUL-terminated, valid
 * during the call; a non-zero return stops the parse with that value). Returns 0, a callback's
 * value, or -1 with the problem in `err` (which never quotes a value: they are secrets). */
int kc_conf_jaas_options(const char *text, const char *module,
                         int (*on_option)(void *arg, const char *key, const char *value), void *arg,
                         char *err, size_t errlen);

/* Kafka's topic-name rules (Topic.validate), the one check behind the configuration's topic
 * list and CreateTopics: the first rule `name` (len bytes) breaks, in Kafka's order. Lengths are
 * Java's (UTF-16 code units). */
enum {
    KC_TOPIC_NAME_OK = 0,
    KC_TOPIC_NAME_EMPTY,    /* no characters */
    KC_TOPIC_NAME_DOTS,     /* "." or ".." */
    KC_TOPIC_NAME_TOO_LONG, /* more than KC_TOPIC_NAME_MAX characters */
    KC_TOPIC_NAME_CHARS,    /* a character other than a-z A-Z 0-9 . _ - */
};
#define KC_TOPIC_NAME_MAX 249
int kc_topic_name_check(const char *name, size_t len);
/* Whether two topic names collide for Kafka: equal once '.' and '_' are taken as the same
 * character (they look the same in metric names). Equal names collide too. */
bool kc_topic_names_collide(const char *a, size_t alen, const char *b, size_t blen);

#endif
