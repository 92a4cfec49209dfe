/* conf.c - the settings table, and the parsing, printing and documentation it drives.
 *
 * `settings[]` below has one row per setting: its Kafka-style dotted name, its type, where its
 * value lives in kc_conf_t (offsetof), its default written as a user would write it, its bounds
 * and a one-line doc. Nothing else in this file names a setting:
 *   - kc_conf_init feeds every row's default through kc_conf_set, so defaults obey the same
 *     validation as user input (a default that does not validate aborts at startup);
 *   - kc_conf_load_file and kc_conf_load_env turn lines and variables into (key, value) pairs
 *     and hand them to kc_conf_set;
 *   - kc_conf_set finds the row, checks the text against the row's type and bounds, and stores
 *     it, or leaves the struct alone and writes "key: "value" problem (expected ...)";
 *   - kc_conf_print and kc_conf_write_doc walk the table.
 *
 * Bounds by type: numbers use min..max for the value; listener lists use min..max for each
 * port; topic lists use min..max for each partition count; enums list their values. Flags add
 * the rest (whether "" is allowed, whether 0.0.0.0 may be advertised, whether the generated
 * conf/kcoord.conf sets the value or shows it commented out).
 *
 * To add a setting: add a typed member to kc_conf_t in conf.h, bump KC_CONF_N_SETTINGS, add a
 * row here, regenerate conf/kcoord.conf from the repository root with
 *     build/tests/unit/test_conf --write-doc > conf/kcoord.conf
 * and add tests for its bounds. A new type is a new vtype_t case in
 * parse_value, free_value, write_value and write_bounds.
 */
#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef enum vtype_e {
    T_INT,       /* int32_t member; value in min..max */
    T_LONG,      /* int64_t member; value in min..max */
    T_STRING,    /* char * member, owned */
    T_BOOL,      /* bool member; "true" or "false", any case */
    T_ENUM,      /* int member: index into values[]; any case */
    T_LISTENERS, /* char * member, owned; a kc_conf_parse_listeners list, each port in min..max */
    T_TOPICS,    /* kc_conf_topic_t * at off and size_t count at off_n; partitions in min..max */
    T_NAMES,     /* char * member, owned: a comma-separated, non-empty list of distinct names
                  * from values[] (exact case), stored without blanks; with F_EMPTY_OK also
                  * empty (or blanks: stored as "") */
} vtype_t;

#define F_EMPTY_OK 0x1u  /* "" (or, for lists, only blanks) is a valid value */
#define F_ROUTABLE 0x2u  /* listener lists: 0.0.0.0 and :: are rejected (nobody can connect) */
#define F_SHOWN    0x4u  /* kc_conf_write_doc writes `key=default` rather than `#key=default` */
#define F_SINGLE   0x8u  /* listener lists: at most one entry */
#define F_LISTENER 0x10u /* may be set for one listener: listener.name.<name>.<setting> */
#define F_SECRET   0x20u /* a password or a key: printed and quoted in messages as [hidden] */

typedef struct setting_s {
    const char *name; /* Kafka's dotted name; the key in files and after --set */
    vtype_t type;
    size_t off;                /* offset of the member in kc_conf_t */
    size_t off_n;              /* T_TOPICS: offset of the size_t entry count */
    const char *def;           /* default, as text; must pass kc_conf_set */
    int64_t min, max;          /* see "Bounds by type" above */
    const char *const *values; /* T_ENUM: allowed values, NULL-terminated */
    const char *unit;          /* shown after the type in the doc, or NULL */
    unsigned flags;            /* F_* */
    const char *doc;           /* one sentence or two, for conf/kcoord.conf */
    /* T_STRING: a further check of a value (NULL: none); 0, or -1 with the problem in prob. */
    int (*check)(const char *v, char *prob, size_t problen);
} setting_t;

#define OFF(member) offsetof(kc_conf_t, member)

/* In KC_CONF_LOG_* order. */
static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
/* In KC_CONF_LOG_TEXT, KC_CONF_LOG_JSON order. */
static const char *const log_formats[] = {"text", "json", NULL};
/* In KC_CONF_FLUSH_* and KC_CONF_CODEC_* order. */
static const char *const flush_policies[] = {"always", "interval", "never", NULL};
static const char *const compression_codecs[] = {"none", "zstd", NULL};
/* In KC_CONF_SSL_CLIENT_AUTH_* order. */
static const char *const ssl_client_auths[] = {"none", "requested", "required", NULL};
static const char *const pem_only[] = {"PEM", NULL};
static const char *const sasl_mechanisms[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", NULL};
static const char *const tls_protocols[] = {"TLSv1.2", "TLSv1.3", NULL};

static int check_protocol_map(const char *v, char *prob, size_t problen);
static int check_plain_jaas(const char *v, char *prob, size_t problen);
static int check_authorizer(const char *v, char *prob, size_t problen);
static int check_super_users(const char *v, char *prob, size_t problen);
static int check_voters(const char *v, char *prob, size_t problen);
static int check_brokers(const char *v, char *prob, size_t problen);
static int check_cluster_id(const char *v, char *prob, size_t problen);

/* The server-side assignors of src/group/assignor.c. */
static const char *const consumer_assignors[] = {"uniform", "range", NULL};
/* cluster.security.protocol: what raft's port speaks. */
static const char *const cluster_protocols[] = {"PLAINTEXT", "SSL", NULL};
/* In KC_CONF_MIGRATION_* order. */
static const char *const migration_policies[] = {"bidirectional", "upgrade", "downgrade",
                                                 "disabled", NULL};

static const setting_t settings[] = {
    {.name = "listeners",
     .type = T_LISTENERS,
     .off = OFF(listeners),
     .def = "127.0.0.1:9092",
     .min = 0,
     .max = 65535,
     .flags = F_SHOWN,
     .doc = "Comma-separated NAME://host:port addresses to accept Kafka clients on, as Kafka's "
            "listeners; listener.security.protocol.map gives each name its security protocol. "
            "A plain host:port is a PLAINTEXT listener. An IPv6 host goes in brackets "
            "([::1]:9092) and port 0 picks a free port. Names are case-insensitive and unique, "
            "except that several plain host:port entries may share the name PLAINTEXT."},
    {.name = "advertised.listeners",
     .type = T_LISTENERS,
     .off = OFF(advertised_listeners),
     .def = "",
     .min = 1,
     .max = 65535,
     .flags = F_EMPTY_OK | F_ROUTABLE,
     .doc = "Comma-separated NAME://host:port addresses that clients are told to connect to: "
            "Metadata and FindCoordinator answer with the address of the listener a client "
            "came in on. Each name must be one of listeners; a plain host:port names PLAINTEXT. "
            "A listener with no entry here advertises the address it is bound to (the host "
            "name for 0.0.0.0 or [::])."},
    {.name = "listener.security.protocol.map",
     .type = T_STRING,
     .off = OFF(listener_security_protocol_map),
     .def = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
     .check = check_protocol_map,
     .doc = "Comma-separated NAME:PROTOCOL pairs giving each listener name its security "
            "protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. Every name in listeners must "
            "have one. The ssl.* and SASL settings can be given for one listener as "
            "listener.name.<name>.<setting> (name in lower case), which wins over the plain "
            "setting for that listener."},
    {.name = "node.id",
     .type = T_INT,
     .off = OFF(node_id),
     .def = "0",
     .min = 0,
     .max = INT32_MAX,
     .doc = "The broker id kcoord gives clients for itself."},
    {.name = "cluster.voters",
     .type = T_STRING,
     .off = OFF(cluster_voters),
     .def = "",
     .check = check_voters,
     .flags = F_EMPTY_OK,
     .doc = "The nodes of a kcoord cluster, as Kafka's controller.quorum.voters: comma-separated "
            "ID@host:port, each node's id (its node.id) and the address its raft transport "
            "listens on and the others reach it at. Empty: kcoord is a single node, with no raft. "
            "Every node of a cluster has the same list, its own node.id among them; on first "
            "start (an empty <data.dir>/raft) each bootstraps the cluster with these voters."},
    {.name = "cluster.brokers",
     .type = T_STRING,
     .off = OFF(cluster_brokers),
     .def = "",
     .check = check_brokers,
     .flags = F_EMPTY_OK,
     .doc = "The client addresses of every node of the cluster: comma-separated "
            "ID@NAME://host:port (or ID@host:port for PLAINTEXT), one per node and listener name. "
            "Metadata lists the nodes and FindCoordinator names the leader at the address of the "
            "listener name the client came in on. This node's own entries default to its "
            "advertised listeners."},
    {.name = "cluster.id",
     .type = T_STRING,
     .off = OFF(cluster_id),
     .def = "",
     .check = check_cluster_id,
     .flags = F_EMPTY_OK,
     .doc = "The cluster's id (22 characters of URL-safe base64, as Kafka's). Empty: derived from "
            "cluster.voters, so that nodes with the same list agree without a formatting step. "
            "Set it on a node whose cluster.voters differs from the list the cluster was formed "
            "with (a node added later): the id is in DescribeCluster, /v1/cluster and "
            "kafka-metadata-quorum describe --status. A raft peer naming another id is refused."},
    {.name = "cluster.bootstrap",
     .type = T_BOOL,
     .off = OFF(cluster_bootstrap),
     .def = "true",
     .doc = "Whether this node, on its first start (an empty <data.dir>/raft), forms the cluster "
            "from cluster.voters. false for a node that joins a running cluster (added with "
            "AddRaftVoter, kafka-metadata-quorum add-controller), including a node coming back "
            "with an emptied data dir after it was removed: it waits until the leader adds it "
            "and sends it the cluster's state."},
    {.name = "cluster.election.timeout.ms",
     .type = T_INT,
     .off = OFF(cluster_election_timeout_ms),
     .def = "1000",
     .min = 100,
     .max = 60000,
     .doc = "Raft's election timeout: a follower that hears nothing from the leader for this long "
            "(randomized between 1x and 2x) starts an election, and a leader that cannot reach a "
            "majority for this long steps down."},
    {.name = "cluster.heartbeat.timeout.ms",
     .type = T_INT,
     .off = OFF(cluster_heartbeat_timeout_ms),
     .def = "100",
     .min = 10,
     .max = 10000,
     .doc = "How often the raft leader contacts idle followers. Must be below "
            "cluster.election.timeout.ms."},
    {.name = "cluster.snapshot.threshold",
     .type = T_INT,
     .off = OFF(cluster_snapshot_threshold),
     .def = "8192",
     .min = 16,
     .max = INT32_MAX,
     .doc = "Raft log entries applied since the last snapshot after which a node takes a snapshot "
            "(its compacted partition logs) and truncates its raft log behind it."},
    {.name = "cluster.snapshot.trailing",
     .type = T_INT,
     .off = OFF(cluster_snapshot_trailing),
     .def = "2048",
     .min = 0,
     .max = INT32_MAX,
     .doc = "Raft log entries kept behind a snapshot, so that a follower a little behind catches "
            "up from the log rather than by a whole snapshot."},
    {.name = "cluster.security.protocol",
     .type = T_ENUM,
     .off = OFF(cluster_security_protocol),
     .def = "PLAINTEXT",
     .values = cluster_protocols,
     .doc = "What the raft port of a cluster node speaks. SSL: mutual TLS, each node presenting "
            "the certificate of cluster.ssl.keystore.location and trusting only the CA of "
            "cluster.ssl.truststore.location, then naming its cluster id, which must be this "
            "cluster's; a connection that fails either is refused and logged before raft sees "
            "it. PLAINTEXT: anyone who reaches the raft port can take part in the cluster (vote, "
            "lead, write its log): only on a network no one else reaches."},
    {.name = "cluster.ssl.keystore.location",
     .type = T_STRING,
     .off = OFF(cluster_ssl_keystore_location),
     .def = "",
     .flags = F_EMPTY_OK,
     .doc = "With cluster.security.protocol=SSL: a PEM file holding this node's certificate "
            "chain and its private key (unencrypted), used both to accept and to make raft "
            "connections."},
    {.name = "cluster.ssl.truststore.location",
     .type = T_STRING,
     .off = OFF(cluster_ssl_truststore_location),
     .def = "",
     .flags = F_EMPTY_OK,
     .doc = "With cluster.security.protocol=SSL: a PEM file of the CA certificates that sign the "
            "cluster's nodes; a peer whose certificate they do not verify is refused."},
    {.name = "data.dir",
     .type = T_STRING,
     .off = OFF(data_dir),
     .def = "./data",
     .flags = F_SHOWN,
     .doc = "Directory that holds kcoord's persistent state."},
    {.name = "socket.request.max.bytes",
     .type = T_INT,
     .off = OFF(socket_request_max_bytes),
     .def = "104857600",
     .min = 16,
     .max = INT32_MAX,
     .unit = "bytes",
     .doc = "The largest request kcoord accepts; a connection that announces a larger one is "
            "closed."},
    {.name = "connections.max.idle.ms",
     .type = T_LONG,
     .off = OFF(connections_max_idle_ms),
     .def = "600000",
     .min = 1,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .doc = "Connections idle for longer than this are closed."},
    {.name = "queued.max.requests",
     .type = T_INT,
     .off = OFF(queued_max_requests),
     .def = "500",
     .min = 1,
     .max = 1000000,
     .doc = "Per connection, how many requests may be read but not yet answered before kcoord "
            "stops reading from that connection."},
    {.name = "queued.max.request.bytes",
     .type = T_LONG,
     .off = OFF(queued_max_request_bytes),
     .def = "268435456",
     .min = -1,
     .max = INT64_MAX,
     .unit = "bytes",
     .doc = "Bytes of requests read and not yet answered (parked JoinGroup, SyncGroup and Fetch "
            "requests and answers waiting for fsync included) and of buffers for requests larger "
            "than 64 KiB being received, over all connections; above it kcoord reads no more "
            "requests (clients wait) until answers drain, as Kafka's memory pool does. -1 "
            "(Kafka's default) or 0: no limit."},
    {.name = "connection.max.unsent.bytes",
     .type = T_LONG,
     .off = OFF(connection_max_unsent_bytes),
     .def = "4194304",
     .min = 1,
     .max = INT64_MAX,
     .unit = "bytes",
     .doc = "Per connection, bytes of answers not yet written to the client above which kcoord "
            "stops reading that connection's requests until the client reads them."},
    {.name = "queued.max.unsent.bytes",
     .type = T_LONG,
     .off = OFF(queued_max_unsent_bytes),
     .def = "268435456",
     .min = 1,
     .max = INT64_MAX,
     .unit = "bytes",
     .doc = "Bytes of answers not yet written, over all connections; above it kcoord stops "
            "reading every connection that has answers of its own waiting, until they drain. "
            "Answers already owed are never dropped."},
    {.name = "request.max.memory.bytes",
     .type = T_LONG,
     .off = OFF(request_max_memory_bytes),
     .def = "134217728",
     .min = 65536,
     .max = INT64_MAX,
     .unit = "bytes",
     .doc = "The most memory one request may take beyond its own bytes: its decoded form, the "
            "handler's work and the response (and, separately, the encoded response). A "
            "request that would need more closes its connection, as an oversized request does."},
    {.name = "max.connections",
     .type = T_INT,
     .off = OFF(max_connections),
     .def = "2147483647",
     .min = 1,
     .max = INT32_MAX,
     .doc = "The most Kafka client connections open at once. At the limit kcoord accepts no new "
            "connection (they wait in the listen backlog) until one closes, as Kafka does."},
    {.name = "max.connections.per.ip",
     .type = T_INT,
     .off = OFF(max_connections_per_ip),
     .def = "2147483647",
     .min = 1,
     .max = INT32_MAX,
     .doc = "The most Kafka client connections open at once from one IP address; a new one over "
            "it is closed as soon as it is accepted, as Kafka does."},
    {.name = "log.reserved.fds",
     .type = T_INT,
     .off = OFF(log_reserved_fds),
     .def = "-1",
     .min = -1,
     .max = INT32_MAX,
     .doc = "File descriptors no client connection may take, kept for log segments, indexes and "
            "the cleaner; a connection that would use one is closed as soon as it is accepted. "
            "-1: 4 per offsets.topic.num.partitions partition, plus 64. kcoord raises its soft "
            "open-file limit to the hard limit at start."},
    {.name = "log.level",
     .type = T_ENUM,
     .off = OFF(log_level),
     .def = "info",
     .values = log_levels,
     .doc = "The least severe messages that are logged."},
    {.name = "log.format",
     .type = T_ENUM,
     .off = OFF(log_format),
     .def = "text",
     .values = log_formats,
     .doc = "How log lines are written to stderr: text (time, level, module, message) or json "
            "(one object per line with ts, level, module and msg)."},
    {.name = "topics",
     .type = T_TOPICS,
     .off = OFF(topics),
     .off_n = OFF(n_topics),
     .def = "",
     .min = 1,
     .max = 1000000,
     .flags = F_EMPTY_OK,
     .doc = "The topics kcoord knows, as comma-separated name:partitions pairs, e.g. "
            "orders:3,payments:12. Names are 1 to 249 of a-z A-Z 0-9 . _ - (not . or ..)."},
    {.name = "auto.create.topics.enable",
     .type = T_BOOL,
     .off = OFF(auto_create_topics_enable),
     .def = "false",
     .doc = "Whether a Metadata request for an unknown topic creates it (with num.partitions "
            "partitions), as Kafka's setting of the same name."},
    {.name = "num.partitions",
     .type = T_INT,
     .off = OFF(num_partitions),
     .def = "1",
     .min = 1,
     .max = 1000000,
     .doc = "Partitions of a topic created by auto.create.topics.enable, or by CreateTopics "
            "asking for -1."},
    {.name = "offsets.topic.num.partitions",
     .type = T_INT,
     .off = OFF(offsets_topic_num_partitions),
     .def = "50",
     .min = 1,
     .max = 10000,
     .doc = "How many __consumer_offsets partitions groups are spread over: a group lives in "
            "partition abs(hashCode(group id)) % this, as in Kafka."},
    {.name = "group.min.session.timeout.ms",
     .type = T_INT,
     .off = OFF(group_min_session_timeout_ms),
     .def = "6000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The smallest session timeout a classic group member may ask for."},
    {.name = "group.max.session.timeout.ms",
     .type = T_INT,
     .off = OFF(group_max_session_timeout_ms),
     .def = "1800000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The largest session timeout a classic group member may ask for."},
    {.name = "group.initial.rebalance.delay.ms",
     .type = T_INT,
     .off = OFF(group_initial_rebalance_delay_ms),
     .def = "3000",
     .min = 0,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "How long the first rebalance of an empty group waits for more members to join."},
    {.name = "group.max.size",
     .type = T_INT,
     .off = OFF(group_max_size),
     .def = "2147483647",
     .min = 1,
     .max = INT32_MAX,
     .doc = "The most members a classic group may have."},
    {.name = "group.consumer.heartbeat.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_heartbeat_interval_ms),
     .def = "5000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "How often members of a consumer group (KIP-848 protocol) are told to heartbeat. "
            "Must lie within group.consumer.min.heartbeat.interval.ms and "
            "group.consumer.max.heartbeat.interval.ms, and be below "
            "group.consumer.session.timeout.ms."},
    {.name = "group.consumer.min.heartbeat.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_min_heartbeat_interval_ms),
     .def = "5000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The lower bound of group.consumer.heartbeat.interval.ms."},
    {.name = "group.consumer.max.heartbeat.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_max_heartbeat_interval_ms),
     .def = "15000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The upper bound of group.consumer.heartbeat.interval.ms."},
    {.name = "group.consumer.session.timeout.ms",
     .type = T_INT,
     .off = OFF(group_consumer_session_timeout_ms),
     .def = "45000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "A consumer group member (KIP-848 protocol) that has not heartbeated for this long "
            "is removed from its group. Must lie within group.consumer.min.session.timeout.ms "
            "and group.consumer.max.session.timeout.ms."},
    {.name = "group.consumer.min.session.timeout.ms",
     .type = T_INT,
     .off = OFF(group_consumer_min_session_timeout_ms),
     .def = "45000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The lower bound of group.consumer.session.timeout.ms."},
    {.name = "group.consumer.max.session.timeout.ms",
     .type = T_INT,
     .off = OFF(group_consumer_max_session_timeout_ms),
     .def = "60000",
     .min = 1,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The upper bound of group.consumer.session.timeout.ms."},
    {.name = "group.consumer.assignment.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_assignment_interval_ms),
     .def = "1000",
     .min = 0,
     .max = 15000,
     .unit = "milliseconds",
     .doc = "KIP-1263: a consumer group's new target assignment is computed at most once per "
            "this interval; changes that arrive meanwhile (joins, leaves, new subscriptions) "
            "wait for the next computation, so a burst of joins costs one assignment. 0 "
            "computes it at every change. A group may override it with its "
            "consumer.assignment.interval.ms group config."},
    {.name = "group.consumer.min.assignment.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_min_assignment_interval_ms),
     .def = "0",
     .min = 0,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The lower bound of a group's consumer.assignment.interval.ms group config."},
    {.name = "group.consumer.max.assignment.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_max_assignment_interval_ms),
     .def = "15000",
     .min = 0,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "The upper bound of a group's consumer.assignment.interval.ms group config."},
    {.name = "group.consumer.max.size",
     .type = T_INT,
     .off = OFF(group_consumer_max_size),
     .def = "2147483647",
     .min = 1,
     .max = INT32_MAX,
     .doc = "The most members a consumer group (KIP-848 protocol) may have; a member joining a "
            "full group gets GROUP_MAX_SIZE_REACHED."},
    {.name = "group.consumer.assignors",
     .type = T_NAMES,
     .off = OFF(group_consumer_assignors),
     .def = "uniform,range",
     .values = consumer_assignors,
     .doc = "The server-side assignors consumer groups may ask for (their group.remote.assignor), "
            "comma-separated; the first is used when no member asks for one."},
    {.name = "group.consumer.migration.policy",
     .type = T_ENUM,
     .off = OFF(group_consumer_migration_policy),
     .def = "bidirectional",
     .values = migration_policies,
     .doc = "Online migration between the classic and the consumer protocol, as Kafka's "
            "setting: bidirectional (default), upgrade (a classic group with members becomes a "
            "consumer group when a consumer-protocol member joins), downgrade (a consumer group "
            "becomes a classic group when its last consumer-protocol member leaves) or "
            "disabled (neither, and classic members may not join a consumer group)."},
    {.name = "group.consumer.assignor.offload.enable",
     .type = T_BOOL,
     .off = OFF(group_consumer_assignor_offload_enable),
     .def = "true",
     .doc = "Compute large consumer-group target assignments on a worker thread instead of the "
            "event loop, as Kafka does with this setting. Meanwhile the group is Assigning and "
            "its members keep their current targets; they get the new one at their next "
            "heartbeat."},
    {.name = "group.consumer.assignor.offload.threshold",
     .type = T_LONG,
     .off = OFF(group_consumer_assignor_offload_threshold),
     .def = "10000",
     .min = 0,
     .max = INT64_MAX,
     .doc = "kcoord's own: with offload enabled, a target assignment is computed on a worker "
            "thread when the group's members plus the partitions of its subscribed topics reach "
            "this many (0: always); smaller ones are computed at once, so the heartbeat that "
            "caused them already carries the new assignment."},
    {.name = "group.consumer.regex.max.bytes",
     .type = T_INT,
     .off = OFF(group_consumer_regex_max_bytes),
     .def = "16384",
     .min = 1,
     .max = 1048576,
     .unit = "bytes",
     .doc = "kcoord's own: the longest SubscribedTopicRegex a consumer may subscribe with (RE2 "
            "syntax, as Kafka); a longer one gets INVALID_REGULAR_EXPRESSION. The default holds "
            "an alternation of a few hundred topic names."},
    {.name = "group.consumer.regex.max.count",
     .type = T_INT,
     .off = OFF(group_consumer_regex_max_count),
     .def = "1000",
     .min = 1,
     .max = 1000000,
     .doc = "kcoord's own: per __consumer_offsets partition, how many distinct subscription "
            "regexes members may use at once (each is compiled once, with at most 1 MiB of "
            "memory). A member bringing one more gets INVALID_REGULAR_EXPRESSION naming this "
            "setting; members already using a regex are not affected."},
    {.name = "group.consumer.regex.refresh.interval.ms",
     .type = T_INT,
     .off = OFF(group_consumer_regex_refresh_interval_ms),
     .def = "600000",
     .min = 10000,
     .max = INT32_MAX,
     .unit = "ms",
     .doc = "With an authorizer, a consumer group's subscription regexes are resolved again, "
            "with the rights of the member whose heartbeat comes first, once their last "
            "resolution is this old, so that a changed ACL reaches the assignment (a new or "
            "deleted topic is seen at once). Kafka's internal setting of the same name; its "
            "default and minimum."},
    {.name = "message.max.bytes",
     .type = T_INT,
     .off = OFF(message_max_bytes),
     .def = "1048588",
     .min = 1024,
     .max = INT32_MAX,
     .unit = "bytes",
     .doc = "The largest record a group may write to __consumer_offsets (Kafka's setting and "
            "default). A classic group whose GroupMetadata record (every member's protocol "
            "metadata and assignment) would be larger fails the leader's SyncGroup with "
            "UNKNOWN_SERVER_ERROR and rebalances, as Kafka; a JoinGroup whose protocol metadata "
            "alone cannot fit, and a consumer-group member whose metadata record would not, "
            "get UNKNOWN_SERVER_ERROR at once, and so does each partition of an OffsetCommit "
            "whose record would be larger (possible only with offset.metadata.max.bytes "
            "raised)."},
    {.name = "offset.metadata.max.bytes",
     .type = T_INT,
     .off = OFF(offset_metadata_max_bytes),
     .def = "4096",
     .min = 0,
     .max = INT32_MAX,
     .unit = "bytes",
     .doc = "The longest metadata string a committed offset may carry."},
    {.name = "offsets.retention.minutes",
     .type = T_INT,
     .off = OFF(offsets_retention_minutes),
     .def = "10080",
     .min = 1,
     .max = INT32_MAX,
     .unit = "minutes",
     .doc = "How long committed offsets are kept after a group becomes empty (KIP-211)."},
    {.name = "offsets.retention.check.interval.ms",
     .type = T_LONG,
     .off = OFF(offsets_retention_check_interval_ms),
     .def = "600000",
     .min = 1,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .doc = "How often expired offsets are looked for."},
    {.name = "log.flush.policy",
     .type = T_ENUM,
     .off = OFF(log_flush_policy),
     .def = "always",
     .values = flush_policies,
     .doc = "When a write to the log is acknowledged: always (after fsync; many requests share "
            "one fsync), interval (after write, fsync every log.flush.interval.ms) or never "
            "(after write, fsync left to the OS, as Kafka's default)."},
    {.name = "log.flush.interval.ms",
     .type = T_LONG,
     .off = OFF(log_flush_interval_ms),
     .def = "1000",
     .min = 1,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .doc = "With log.flush.policy=interval, how often the log is fsynced."},
    {.name = "offsets.topic.segment.bytes",
     .type = T_INT,
     .off = OFF(offsets_topic_segment_bytes),
     .def = "104857600",
     .min = 1024,
     .max = 1073741823,
     .unit = "bytes",
     .doc = "A log segment is closed and a new one started at this size. At most 1 GiB - 1 "
            "(Kafka allows 2 GiB - 1): a segment may grow to twice this before its fsync lets it "
            "roll, and positions in a segment are 32-bit."},
    {.name = "log.roll.ms",
     .type = T_LONG,
     .off = OFF(log_roll_ms),
     .def = "604800000",
     .min = 1,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .doc = "A log segment older than this is closed at the next write."},
    {.name = "offsets.topic.compression.codec",
     .type = T_ENUM,
     .off = OFF(offsets_topic_compression_codec),
     .def = "zstd",
     .values = compression_codecs,
     .doc = "Compression of the record batches kcoord writes: none or zstd."},
    {.name = "log.cleaner.delete.retention.ms",
     .type = T_LONG,
     .off = OFF(log_cleaner_delete_retention_ms),
     .def = "86400000",
     .min = 0,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .doc = "How long the cleaner keeps tombstones (deleted offsets and groups) in compacted "
            "segments."},
    {.name = "log.cleaner.backoff.ms",
     .type = T_LONG,
     .off = OFF(log_cleaner_backoff_ms),
     .def = "15000",
     .min = 1,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .doc = "How often the cleaner looks for partitions whose closed segments are worth "
            "compacting (half of them written since the last compaction)."},
    {.name = "ssl.keystore.type",
     .type = T_ENUM,
     .off = OFF(ssl_keystore_type),
     .def = "PEM",
     .values = pem_only,
     .flags = F_LISTENER,
     .doc = "The format of the server's key and certificate chain on SSL listeners: PEM only."},
    {.name = "ssl.keystore.location",
     .type = T_STRING,
     .off = OFF(ssl_keystore_location),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER,
     .doc = "A PEM file holding the server's private key and its certificate chain (the "
            "server's certificate first). Read at start-up, on SIGHUP and when the file "
            "changes. Set this or ssl.keystore.certificate.chain with ssl.keystore.key."},
    {.name = "ssl.keystore.certificate.chain",
     .type = T_STRING,
     .off = OFF(ssl_keystore_certificate_chain),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER,
     .doc = "The server's certificate chain as PEM text in the value (line breaks may be left "
            "out), the server's certificate first."},
    {.name = "ssl.keystore.key",
     .type = T_STRING,
     .off = OFF(ssl_keystore_key),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER | F_SECRET,
     .doc = "The server's private key as PEM text in the value, with "
            "ssl.keystore.certificate.chain."},
    {.name = "ssl.key.password",
     .type = T_STRING,
     .off = OFF(ssl_key_password),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER | F_SECRET,
     .doc = "The password of an encrypted private key; empty for a key that is not encrypted."},
    {.name = "ssl.truststore.type",
     .type = T_ENUM,
     .off = OFF(ssl_truststore_type),
     .def = "PEM",
     .values = pem_only,
     .flags = F_LISTENER,
     .doc = "The format of the certificates trusted to sign client certificates: PEM only."},
    {.name = "ssl.truststore.location",
     .type = T_STRING,
     .off = OFF(ssl_truststore_location),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER,
     .doc = "A PEM file of the CA certificates that client certificates must chain to. Read "
            "at start-up, on SIGHUP and when the file changes. Empty, with "
            "ssl.truststore.certificates empty too: the system's default CAs."},
    {.name = "ssl.truststore.certificates",
     .type = T_STRING,
     .off = OFF(ssl_truststore_certificates),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER,
     .doc = "The trusted CA certificates as PEM text in the value, instead of "
            "ssl.truststore.location."},
    {.name = "ssl.client.auth",
     .type = T_ENUM,
     .off = OFF(ssl_client_auth),
     .def = "none",
     .values = ssl_client_auths,
     .flags = F_LISTENER,
     .doc = "Whether SSL clients present a certificate: none (not asked), requested (asked; a "
            "client without one connects as User:ANONYMOUS, one with a certificate that does "
            "not verify is refused) or required (a client without a valid one is refused)."},
    {.name = "ssl.enabled.protocols",
     .type = T_NAMES,
     .off = OFF(ssl_enabled_protocols),
     .def = "TLSv1.2,TLSv1.3",
     .values = tls_protocols,
     .flags = F_LISTENER,
     .doc = "The TLS versions SSL listeners accept."},
    {.name = "ssl.cipher.suites",
     .type = T_STRING,
     .off = OFF(ssl_cipher_suites),
     .def = "",
     .flags = F_EMPTY_OK | F_LISTENER,
     .doc = "Comma-separated cipher suites by their standard names "
            "(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256); empty: OpenSSL's "
            "defaults. A name OpenSSL does not know stops start-up."},
    {.name = "ssl.principal.mapping.rules",
     .type = T_STRING,
     .off = OFF(ssl_principal_mapping_rules),
     .def = "DEFAULT",
     .flags = F_LISTENER,
     .doc = "How the RFC 2253 subject of a client certificate becomes its principal name, as "
            "Kafka's: comma-separated RULE:pattern/replacement/ (optionally followed by L or U "
            "for lower or upper case) and DEFAULT (the subject as it is); the first rule whose "
            "pattern matches the whole subject wins, and a subject no rule matches is refused."},
    {.name = "ssl.handshake.timeout.ms",
     .type = T_LONG,
     .off = OFF(ssl_handshake_timeout_ms),
     .def = "10000",
     .min = 100,
     .max = 3600000,
     .unit = "milliseconds",
     .flags = F_LISTENER,
     .doc = "kcoord's own: a TLS handshake not finished this long after the connection was "
            "accepted closes that connection (kcoord_tls_failures_total)."},
    {.name = "sasl.enabled.mechanisms",
     .type = T_NAMES,
     .off = OFF(sasl_enabled_mechanisms),
     .def = "",
     .values = sasl_mechanisms,
     .flags = F_EMPTY_OK | F_LISTENER,
     .doc = "The SASL mechanisms SASL_PLAINTEXT and SASL_SSL listeners accept, in the order "
            "SaslHandshake lists them: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. Kafka's default, "
            "GSSAPI (Kerberos), is not implemented by kcoord, so the default is empty and a SASL "
            "listener without mechanisms stops start-up rather than accept no one."},
    {.name = "plain.sasl.jaas.config",
     .type = T_STRING,
     .off = OFF(plain_sasl_jaas_config),
     .def = "",
     .check = check_plain_jaas,
     .flags = F_EMPTY_OK | F_LISTENER | F_SECRET,
     .doc = "The PLAIN users, in Kafka's JAAS form: "
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            "user_alice=\"alice-secret\" user_bob=\"bob-secret\"; (each user_<name> option is "
            "a user and its password; other options are ignored). Usually given for one "
            "listener, as Kafka's listener.name.<name>.plain.sasl.jaas.config; without a "
            "prefix it applies to every SASL listener. A listener with PLAIN enabled and no "
            "users accepts no PLAIN client."},
    {.name = "connections.max.reauth.ms",
     .type = T_LONG,
     .off = OFF(connections_max_reauth_ms),
     .def = "0",
     .min = 0,
     .max = INT64_MAX,
     .unit = "milliseconds",
     .flags = F_LISTENER,
     .doc = "The lifetime of a SASL session (KIP-368), sent to clients as SessionLifetimeMs: "
            "before it ends the client re-authenticates on the same connection with the same "
            "principal, and a connection whose session has ended is closed at its next request. "
            "0: sessions do not end."},
    {.name = "connection.failed.authentication.delay.ms",
     .type = T_INT,
     .off = OFF(connection_failed_authentication_delay_ms),
     .def = "100",
     .min = 0,
     .max = INT32_MAX,
     .unit = "milliseconds",
     .doc = "How long a failed SASL authentication waits before its error is answered and the "
            "connection closed, to slow down password guessing."},
    {.name = "sasl.server.max.receive.size",
     .type = T_INT,
     .off = OFF(sasl_server_max_receive_size),
     .def = "524288",
     .min = 1,
     .max = INT32_MAX,
     .unit = "bytes",
     .doc = "The largest request or SASL token a client that has not authenticated yet may "
            "send; a larger one closes the connection."},
    {.name = "authorizer.class.name",
     .type = T_STRING,
     .off = OFF(authorizer_class_name),
     .def = "",
     .flags = F_EMPTY_OK,
     .check = check_authorizer,
     .doc = "The authorizer, as Kafka's setting of the same name: empty (every client may do "
            "everything, and the ACL APIs answer SECURITY_DISABLED) or "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer (every request is checked "
            "against the ACLs, kept in kcoord's metadata partition, with Kafka's rules)."},
    {.name = "super.users",
     .type = T_STRING,
     .off = OFF(super_users),
     .def = "",
     .flags = F_EMPTY_OK,
     .check = check_super_users,
     .doc = "Principals the authorizer lets do everything, as Kafka's: Type:name entries "
            "separated by ';', e.g. User:admin;User:CN=ops,O=example."},
    {.name = "allow.everyone.if.no.acl.found",
     .type = T_BOOL,
     .off = OFF(allow_everyone_if_no_acl_found),
     .def = "false",
     .doc = "With an authorizer: whether a resource that has no ACL at all is open to everyone "
            "(Kafka's setting; false denies it to all but super.users)."},
    {.name = "metrics.listener",
     .type = T_LISTENERS,
     .off = OFF(metrics_listener),
     .def = "127.0.0.1:9404",
     .min = 0,
     .max = 65535,
     .flags = F_EMPTY_OK | F_SINGLE,
     .doc = "One host:port for the HTTP listener that serves /metrics (Prometheus), /healthz, "
            "/readyz and /v1/groups (docs/metrics.md); port 0 picks a free port, empty turns "
            "it off. An address that cannot be listened on stops start-up, except the default "
            "one, which is then skipped with a warning (another daemon on the host may hold "
            "it)."},
    {.name = "metrics.max.connections",
     .type = T_INT,
     .off = OFF(metrics_max_connections),
     .def = "16",
     .min = 1,
     .max = 10000,
     .doc = "How many HTTP connections the metrics listener serves at once. As many more are "
            "answered `503 Service Unavailable` (with `Retry-After: 1`) at once and closed; "
            "beyond that a new connection is closed without an answer "
            "(kcoord_http_connections_refused_total)."},
    {.name = "metrics.request.timeout.ms",
     .type = T_LONG,
     .off = OFF(metrics_request_timeout_ms),
     .def = "10000",
     .min = 100,
     .max = 3600000,
     .unit = "milliseconds",
     .doc = "An HTTP client has this long to send its request head after it connects, and then "
            "this long to take each piece of the answer; otherwise its connection is closed "
            "(kcoord_http_timeouts_total)."},
    {.name = "metrics.chunk.bytes",
     .type = T_INT,
     .off = OFF(metrics_chunk_bytes),
     .def = "32768",
     .min = 1024,
     .max = 1048576,
     .unit = "bytes",
     .doc = "How much of a streamed answer (/v1/groups) one HTTP connection builds per event-loop "
            "turn, and holds in memory: the next piece is built once the previous one has "
            "been written to the socket. At least one group per piece."},
    {.name = "metrics.ssl.enabled",
     .type = T_BOOL,
     .off = OFF(metrics_ssl_enabled),
     .def = "false",
     .doc = "kcoord's own: serve the HTTP listener over TLS (HTTPS) with the ssl.* settings "
            "(the plain ones, not a listener.name. override), reloaded with the Kafka "
            "listeners' on SIGHUP and when a file changes. /v1/groups shows member hosts and "
            "offsets: keep metrics.listener on a loopback address, or set this and "
            "metrics.bearer.token when it is bound elsewhere."},
    {.name = "metrics.bearer.token",
     .type = T_STRING,
     .off = OFF(metrics_bearer_token),
     .def = "",
     .flags = F_EMPTY_OK | F_SECRET,
     .doc = "kcoord's own: when set, every HTTP request but /healthz and /readyz must carry "
            "`Authorization: Bearer <token>`, else it is answered 401. Send it only over "
            "HTTPS (metrics.ssl.enabled)."},
};

#define N_SETTINGS (sizeof settings / sizeof settings[0])
_Static_assert(N_SETTINGS == KC_CONF_N_SETTINGS, "KC_CONF_N_SETTINGS must count settings[]");
_Static_assert(KC_CONF_LOG_ERROR == 3, "log_levels[] follows KC_CONF_LOG_*");
_Static_assert(KC_CONF_LOG_JSON == 1, "log_formats[] follows KC_CONF_LOG_TEXT/JSON");

#define QUOTE_MAX 80 /* size of a buffer for quote() */

/* ---- small helpers ---- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Copy `len` bytes of `s` into `buf` (QUOTE_MAX bytes) for an error message: bytes outside
 * printable ASCII become '.', '"' becomes '\'', and more than 64 bytes are cut with "...".
 * Returns buf. */
static const char *quote_n(char *buf, const char *s, size_t len)
{
    size_t i, n = len > 64 ? 64 : len;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[i] = ch == '"' ? '\'' : (ch < 0x20 || ch > 0x7e) ? '.' : (char)ch;
    }
    if (n < len) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static const char *quote(char *buf, const char *s)
{
    return quote_n(buf, s, strlen(s));
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\f' || ch == '\r' || ch == '\n' || ch == '\v';
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool is_alnum(char ch)
{
    return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

static char upper(char ch)
{
    return ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
}

/* ASCII case-insensitive comparison of the `n` bytes at `a` with the C string `b`. */
static bool ieq_n(const char *a, size_t n, const char *b)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (b[i] == '\0' || lower(a[i]) != lower(b[i]))
            return false;
    return b[n] == '\0';
}

/* Trim blanks from both ends of the span [*b, *e). */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_blank(**b))
        (*b)++;
    while (*e > *b && is_blank((*e)[-1]))
        (*e)--;
}

/* Parse the whole of `s` as a decimal integer: an optional '-', then digits, nothing else.
 * Returns 0 and sets *out, 1 when `s` is not an integer, 2 when it does not fit in 64 bits. */
static int parse_i64(const char *s, int64_t *out)
{
    const char *p = s[0] == '-' ? s + 1 : s;
    long long v;

    if (*p == '\0')
        return 1;
    for (; *p != '\0'; p++)
        if (!is_digit(*p))
            return 1;
    errno = 0;
    v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return 2;
    *out = (int64_t)v;
    return 0;
}

static const setting_t *find(const char *name)
{
    size_t i;

    for (i = 0; i < N_SETTINGS; i++)
        if (strcmp(settings[i].name, name) == 0)
            return &settings[i];
    return NULL;
}

static void *member(kc_conf_t *c, const setting_t *s)
{
    return (char *)c + s->off;
}

static const void *cmember(const kc_conf_t *c, const setting_t *s)
{
    return (const char *)c + s->off;
}

/* ---- listeners ---- */

static bool is_host_char(char ch)
{
    return is_alnum(ch) || ch == '.' || ch == '-' || ch == '_';
}

/* Parse one listener, the span [b, e) (already trimmed, non-empty), into *l. */
static int parse_listener(const char *b, const char *e, kc_listener_t *l, char *err, size_t errlen)
{
    char q[QUOTE_MAX];
    const char *p, *hb, *he, *colon = NULL;
    size_t i;
    long port = 0;

    quote_n(q, b, (size_t)(e - b));
    const char *nb = NULL, *ne = NULL;
    for (p = b; p + 3 <= e; p++) {
        if (memcmp(p, "://", 3) == 0) {
            nb = b;
            ne = p;
            b = p + 3;
            break;
        }
    }
    if (nb != NULL) {
        if (ne == nb) {
            seterr(err, errlen, "listener \"%s\": no listener name before ://", q);
            return -1;
        }
        if ((size_t)(ne - nb) >= sizeof l->name) {
            seterr(err, errlen, "listener \"%s\": the name is longer than %zu characters", q,
                   sizeof l->name - 1);
            return -1;
        }
        for (p = nb; p < ne; p++) {
            if (!is_alnum(*p) && *p != '_') {
                seterr(err, errlen,
                       "listener \"%s\": a listener name has only letters, digits and '_'", q);
                return -1;
            }
        }
    }
    if (b < e && *b == '[') {
        hb = b + 1;
        he = memchr(hb, ']', (size_t)(e - hb));
        if (he == NULL) {
            seterr(err, errlen, "listener \"%s\": no ']' after the IPv6 address", q);
            return -1;
        }
        if (memchr(hb, ':', (size_t)(he - hb)) == NULL) {
            seterr(err, errlen, "listener \"%s\": brackets hold an IPv6 address, as [::1]:9092", q);
            return -1;
        }
        for (p = hb; p < he && *p != '%'; p++) {
            if (!(is_digit(*p) || (lower(*p) >= 'a' && lower(*p) <= 'f') || *p == ':' ||
                  *p == '.')) {
                seterr(err, errlen, "listener \"%s\": invalid IPv6 address", q);
                return -1;
            }
        }
        if (p < he) { /* %zone */
            for (p++; p < he && is_host_char(*p); p++)
                ;
            if (p < he || he[-1] == '%') {
                seterr(err, errlen, "listener \"%s\": invalid IPv6 zone", q);
                return -1;
            }
        }
        colon = he + 1 < e && he[1] == ':' ? he + 1 : NULL;
        if (colon == NULL && he + 1 < e) {
            seterr(err, errlen, "listener \"%s\": expected ':' after ']'", q);
            return -1;
        }
    } else {
        for (p = b; p < e; p++)
            if (*p == ':')
                colon = p;
        hb = b;
        he = colon != NULL ? colon : e;
        for (p = hb; p < he; p++) {
            if (*p == ':') {
                seterr(err, errlen,
                       "listener \"%s\": an IPv6 address must be in brackets, as [::1]:9092", q);
                return -1;
            }
            if (!is_host_char(*p)) {
                seterr(err, errlen, "listener \"%s\": invalid character in host", q);
                return -1;
            }
        }
    }
    if (colon == NULL) {
        seterr(err, errlen, "listener \"%s\" has no port", q);
        return -1;
    }
    if (he == hb) {
        seterr(err, errlen, "listener \"%s\" has no host", q);
        return -1;
    }
    if ((size_t)(he - hb) >= sizeof l->host) {
        seterr(err, errlen, "listener \"%s\": host is longer than %zu bytes", q,
               sizeof l->host - 1);
        return -1;
    }
    for (p = colon + 1; p < e && is_digit(*p) && port <= 65535; p++)
        port = port * 10 + (*p - '0');
    if (p == colon + 1 || p < e || port > 65535) {
        seterr(err, errlen, "listener \"%s\": port is not a number in 0..65535", q);
        return -1;
    }
    if (l != NULL) {
        for (i = 0; hb + i < he; i++)
            l->host[i] = hb[i];
        l->host[i] = '\0';
        l->port = (int)port;
        l->named = nb != NULL;
        if (nb == NULL)
            nb = "PLAINTEXT", ne = nb + 9;
        for (i = 0; nb + i < ne; i++)
            l->name[i] = upper(nb[i]);
        l->name[i] = '\0';
    }
    return 0;
}

int kc_conf_parse_listeners(const char *s, kc_listener_t *out, size_t max, size_t *n, char *err,
                            size_t errlen)
{
    const char *b = s, *e = s + strlen(s), *end = e, *comma;
    size_t count = 0;

    trim(&b, &e);
    if (b == e) {
        if (n != NULL)
            *n = 0;
        return 0;
    }
    for (b = s;; b = comma + 1) {
        const char *eb = b;

        comma = memchr(b, ',', (size_t)(end - b));
        e = comma != NULL ? comma : end;
        trim(&eb, &e);
        if (eb == e) {
            seterr(err, errlen, "empty entry in listener list");
            return -1;
        }
        if (out != NULL && count == max) {
            seterr(err, errlen, "more than %zu listeners", max);
            return -1;
        }
        if (parse_listener(eb, e, out != NULL ? &out[count] : NULL, err, errlen) != 0)
            return -1;
        count++;
        if (comma == NULL)
            break;
    }
    if (n != NULL)
        *n = count;
    return 0;
}

/* Check a listener list for setting `s`: kc_conf_parse_listeners, then each port within s's
 * bounds and, with F_ROUTABLE, no wildcard address. Writes the problem to prob. */
static int check_listeners(const setting_t *s, const char *v, char *prob, size_t problen)
{
    char why[256];
    kc_listener_t *ls;
    size_t n, i;
    int rc = 0;

    if (kc_conf_parse_listeners(v, NULL, 0, &n, why, sizeof why) != 0) {
        seterr(prob, problen, "is not a valid listener list: %s", why);
        return -1;
    }
    if (n == 0) {
        if (s->flags & F_EMPTY_OK)
            return 0;
        seterr(prob, problen, "is empty");
        return -1;
    }
    if (n > 1 && (s->flags & F_SINGLE)) {
        seterr(prob, problen, "is not a single host:port (it has %zu entries)", n);
        return -1;
    }
    ls = calloc(n, sizeof *ls);
    if (ls == NULL) {
        seterr(prob, problen, "could not be checked: out of memory");
        return -1;
    }
    if (kc_conf_parse_listeners(v, ls, n, &n, why, sizeof why) != 0) {
        seterr(prob, problen, "is not a valid listener list: %s", why);
        rc = -1;
    }
    for (i = 0; rc == 0 && i < n; i++) {
        const char *l = strchr(ls[i].host, ':') != NULL ? "[" : "";
        const char *r = *l != '\0' ? "]" : "";

        if (ls[i].port < s->min || ls[i].port > s->max) {
            seterr(prob, problen, "is not a valid listener list: port %d of %s%s%s is out of range",
                   ls[i].port, l, ls[i].host, r);
            rc = -1;
        } else if ((s->flags & F_ROUTABLE) &&
                   (strcmp(ls[i].host, "0.0.0.0") == 0 || strcmp(ls[i].host, "::") == 0)) {
            seterr(prob, problen,
                   "is not a valid listener list: %s%s%s is not an address clients can reach", l,
                   ls[i].host, r);
            rc = -1;
        }
    }
    free(ls);
    return rc;
}

/* ---- listener names, protocols and per-listener settings ---- */

static const char *const sec_protocols[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", NULL};

const char *kc_conf_protocol_name(int protocol)
{
    return protocol >= 0 && protocol < 4 ? sec_protocols[protocol] : "?";
}

/* Walk listener.security.protocol.map `v`. With `want` (a listener name, any case), returns
 * that name's protocol or -1; without, returns 0 for a valid map or -1 with the problem in
 * prob. */
static int walk_protocol_map(const char *v, const char *want, char *prob, size_t problen)
{
    const char *b, *e, *end = v + strlen(v), *comma;
    char q[QUOTE_MAX];
    enum { MAX_NAMES = 64 };
    const char *names[MAX_NAMES];
    size_t lens[MAX_NAMES], count = 0;

    for (b = v;; b = comma + 1) {
        comma = memchr(b, ',', (size_t)(end - b));
        e = comma != NULL ? comma : end;
        trim(&b, &e);
        const char *colon = memchr(b, ':', (size_t)(e - b));
        if (b == e || colon == NULL || colon == b) {
            seterr(prob, problen, "has an entry \"%s\" that is not NAME:PROTOCOL",
                   quote_n(q, b, (size_t)(e - b)));
            return -1;
        }
        const char *ne = colon, *pb = colon + 1;
        while (ne > b && is_blank(ne[-1]))
            ne--;
        while (pb < e && is_blank(*pb))
            pb++;
        int proto = -1;
        for (int i = 0; sec_protocols[i] != NULL; i++)
            if (ieq_n(pb, (size_t)(e - pb), sec_protocols[i]))
                proto = i;
        if (proto < 0) {
            seterr(prob, problen,
                   "has \"%s\", which is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                   quote_n(q, pb, (size_t)(e - pb)));
            return -1;
        }
        for (const char *p = b; p < ne; p++) {
            if (!is_alnum(*p) && *p != '_') {
                seterr(prob, problen,
                       "has a listener name \"%s\" with a character other than letters, digits "
                       "and '_'",
                       quote_n(q, b, (size_t)(ne - b)));
                return -1;
            }
        }
        if (want != NULL && ieq_n(b, (size_t)(ne - b), want))
            return proto;
        for (size_t i = 0; i < count; i++) {
            bool same = lens[i] == (size_t)(ne - b);
            for (size_t k = 0; same && k < lens[i]; k++)
                same = lower(names[i][k]) == lower(b[k]);
            if (same) {
                seterr(prob, problen, "names listener \"%s\" twice",
                       quote_n(q, b, (size_t)(ne - b)));
                return -1;
            }
        }
        if (count == MAX_NAMES) {
            seterr(prob, problen, "has more than %d entries", MAX_NAMES);
            return -1;
        }
        names[count] = b;
        lens[count++] = (size_t)(ne - b);
        if (comma == NULL)
            break;
    }
    return want != NULL ? -1 : 0;
}

static int check_protocol_map(const char *v, char *prob, size_t problen)
{
    return walk_protocol_map(v, NULL, prob, problen);
}

/* cluster.voters (ID@host:port) and cluster.brokers (ID@NAME://host:port, the name optional):
 * the syntax of every comma-separated entry. */
static int walk_id_list(const char *v, bool named, char *prob, size_t problen)
{
    const char *s = v;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        char item[256];
        if (n == 0 || n >= sizeof(item)) {
            seterr(prob, problen, "has an empty or overlong entry");
            return -1;
        }
        memcpy(item, s, n);
        item[n] = '\0';
        char *at = strchr(item, '@');
        char *idend = NULL;
        long id = at ? strtol(item, &idend, 10) : -1;
        if (at == NULL || idend != at || at == item || id < 0 || id > INT32_MAX) {
            seterr(prob, problen, "entry \"%s\" is not %s", item,
                   named ? "ID@NAME://host:port" : "ID@host:port");
            return -1;
        }
        char *addr = at + 1;
        char *sep = named ? strstr(addr, "://") : NULL;
        if (sep) {
            for (char *q = addr; q < sep; q++)
                if (!(isalnum((unsigned char)*q) || *q == '_' || *q == '-')) {
                    seterr(prob, problen, "entry \"%s\" has a bad listener name", item);
                    return -1;
                }
            addr = sep + 3;
        }
        char *colon = strrchr(addr, ':');
        char *pend = NULL;
        long port = colon ? strtol(colon + 1, &pend, 10) : -1;
        if (colon == NULL || colon == addr || pend == NULL || *pend != '\0' || port < 1 ||
            port > 65535) {
            seterr(prob, problen, "entry \"%s\" has no host:port with a port in 1..65535", item);
            return -1;
        }
        s = end ? end + 1 : s + n;
    }
    return 0;
}

static int check_voters(const char *v, char *prob, size_t problen)
{
    return walk_id_list(v, false, prob, problen);
}

static int check_brokers(const char *v, char *prob, size_t problen)
{
    return walk_id_list(v, true, prob, problen);
}

/* cluster.id: Kafka's form, 22 characters of URL-safe base64. */
static int check_cluster_id(const char *v, char *prob, size_t problen)
{
    size_t n = strlen(v);
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)v[i]) || v[i] == '-' || v[i] == '_'))
            n = 1;
    if (n == 22 || *v == '\0')
        return 0;
    seterr(prob, problen, "is not 22 characters of URL-safe base64 (a Kafka cluster id)");
    return -1;
}

/* authorizer.class.name: kcoord has one authorizer, Kafka's StandardAuthorizer. */
static int check_authorizer(const char *v, char *prob, size_t problen)
{
    if (*v == '\0' || strcmp(v, KC_CONF_AUTHORIZER) == 0)
        return 0;
    seterr(prob, problen, "is not an authorizer kcoord has (expected empty or %s)",
           KC_CONF_AUTHORIZER);
    return -1;
}

/* super.users as StandardAuthorizer reads it: split at ';', each entry trimmed (bytes up to
 * ' ', as Java's String.trim), empty entries skipped, the others "Type:name"
 * (SecurityUtils.parseKafkaPrincipal: a ':' is required). */
static int check_super_users(const char *v, char *prob, size_t problen)
{
    char q[QUOTE_MAX];
    for (const char *b = v; *b != '\0';) {
        const char *e = strchr(b, ';');
        if (e == NULL)
            e = b + strlen(b);
        const char *tb = b, *te = e;
        while (tb < te && (unsigned char)*tb <= ' ')
            tb++;
        while (te > tb && (unsigned char)te[-1] <= ' ')
            te--;
        if (te > tb && memchr(tb, ':', (size_t)(te - tb)) == NULL) {
            seterr(prob, problen,
                   "has \"%s\", which is not a principal (expected Type:name entries separated by "
                   "';')",
                   quote_n(q, tb, (size_t)(te - tb)));
            return -1;
        }
        b = *e == ';' ? e + 1 : e;
    }
    return 0;
}

int kc_conf_listener_protocol(const kc_conf_t *c, const char *name)
{
    return walk_protocol_map(c->listener_security_protocol_map, name, NULL, 0);
}

/* Whether `a` and `b` are the same listener name (case-insensitive). */
static bool same_name(const char *a, const char *b)
{
    return ieq_n(a, strlen(a), b);
}

static const char override_prefix[] = "listener.name.";

/* Set listener.name.<name>.<setting> `key` (it starts with override_prefix). */
static int set_override(kc_conf_t *c, const char *key, const char *value, int source, char *err,
                        size_t errlen);

/* ---- topics ---- */

static void free_topics(kc_conf_topic_t *t, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(t[i].name);
    free(t);
}

/* Parse a topic list for setting `s` into a new array (*out, *n); *out is NULL for an empty
 * list. On failure nothing is allocated and the problem is in prob. */
static int parse_topics(const setting_t *s, const char *v, kc_conf_topic_t **out, size_t *n,
                        char *prob, size_t problen)
{
    const char *b = v, *e = v + strlen(v), *end = e, *comma, *p;
    char q[QUOTE_MAX], q2[QUOTE_MAX], qn[QUOTE_MAX];
    kc_conf_topic_t *t;
    size_t cap = 1, count = 0, i;

    *out = NULL;
    *n = 0;
    trim(&b, &e);
    if (b == e) {
        if (s->flags & F_EMPTY_OK)
            return 0;
        seterr(prob, problen, "is empty");
        return -1;
    }
    for (p = v; *p != '\0'; p++)
        cap += *p == ',';
    t = calloc(cap, sizeof *t);
    if (t == NULL)
        goto nomem;
    for (b = v;; b = comma + 1) {
        const char *colon, *ne, *pb;
        char num[24];
        int64_t parts = 0;
        int rc;

        comma = strchr(b, ',');
        e = comma != NULL ? comma : end;
        trim(&b, &e);
        if (b == e) {
            seterr(prob, problen, "is not a valid topic list: empty entry");
            goto fail;
        }
        quote_n(q, b, (size_t)(e - b));
        colon = memchr(b, ':', (size_t)(e - b));
        if (colon == NULL) {
            seterr(prob, problen, "is not a valid topic list: \"%s\" has no \":partitions\"", q);
            goto fail;
        }
        for (ne = colon; ne > b && is_blank(ne[-1]); ne--)
            ;
        quote_n(q, b, (size_t)(ne - b));
        if (ne == b) {
            seterr(prob, problen, "is not a valid topic list: an entry has no topic name");
            goto fail;
        }
        switch (kc_topic_name_check(b, (size_t)(ne - b))) {
        case KC_TOPIC_NAME_OK:
            break;
        case KC_TOPIC_NAME_TOO_LONG:
            seterr(prob, problen,
                   "is not a valid topic list: topic name \"%s\" is longer than %d characters", q,
                   KC_TOPIC_NAME_MAX);
            goto fail;
        case KC_TOPIC_NAME_CHARS:
            seterr(prob, problen,
                   "is not a valid topic list: topic name \"%s\" has a character other than "
                   "a-z A-Z 0-9 . _ -",
                   q);
            goto fail;
        default: /* "." or ".." (an empty name was refused above) */
            seterr(prob, problen, "is not a valid topic list: \"%s\" is not a valid topic name", q);
            goto fail;
        }
        pb = colon + 1;
        while (pb < e && is_blank(*pb))
            pb++;
        quote_n(qn, pb, (size_t)(e - pb));
        if ((size_t)(e - pb) >= sizeof num) {
            for (p = pb + (*pb == '-'); p < e && is_digit(*p); p++)
                ;
            rc = p == e ? 2 : 1; /* all digits: too big for any bound */
        } else {
            memcpy(num, pb, (size_t)(e - pb));
            num[e - pb] = '\0';
            rc = parse_i64(num, &parts);
        }
        if (rc != 0 || parts < s->min || parts > s->max) {
            seterr(prob, problen,
                   "is not a valid topic list: partition count \"%s\" of topic \"%s\" is %s", qn, q,
                   rc == 1 ? "not an integer" : "out of range");
            goto fail;
        }
        t[count].name = strndup(b, (size_t)(ne - b));
        if (t[count].name == NULL)
            goto nomem;
        t[count].partitions = (int32_t)parts;
        for (i = 0; i < count; i++) {
            if (strcmp(t[i].name, t[count].name) == 0) {
                seterr(prob, problen, "is not a valid topic list: topic \"%s\" is listed twice",
                       quote(q, t[i].name));
                count++;
                goto fail;
            }
            if (kc_topic_names_collide(t[i].name, strlen(t[i].name), t[count].name,
                                       strlen(t[count].name))) {
                seterr(prob, problen,
                       "is not a valid topic list: topics \"%s\" and \"%s\" collide ('.' and '_' "
                       "are the same to Kafka)",
                       quote(q, t[i].name), quote(q2, t[count].name));
                count++;
                goto fail;
            }
        }
        count++;
        if (comma == NULL)
            break;
    }
    *out = t;
    *n = count;
    return 0;

nomem:
    seterr(prob, problen, "could not be stored: out of memory");
fail:
    if (t != NULL)
        free_topics(t, count);
    return -1;
}

/* ---- the table-driven core ---- */

/* Write what setting `s` accepts: "16..2147483647", "one of debug, info, warn, error", ... */
static void write_bounds(const setting_t *s, char *buf, size_t len)
{
    size_t i, used;

    switch (s->type) {
    case T_INT:
    case T_LONG:
        seterr(buf, len, "%" PRId64 "..%" PRId64, s->min, s->max);
        break;
    case T_STRING:
        seterr(buf, len, "%s", s->flags & F_EMPTY_OK ? "any text" : "a non-empty string");
        break;
    case T_BOOL:
        seterr(buf, len, "true or false");
        break;
    case T_ENUM:
        seterr(buf, len, "one of ");
        for (i = 0; s->values[i] != NULL; i++) {
            used = strlen(buf);
            seterr(buf + used, len - used, "%s%s", i > 0 ? ", " : "", s->values[i]);
        }
        break;
    case T_LISTENERS:
        seterr(buf, len, "%shost:port or [ipv6]:port%s, port %" PRId64 "..%" PRId64 "%s",
               s->flags & F_EMPTY_OK ? "empty or " : "",
               s->flags & F_SINGLE ? "" : ", comma-separated", s->min, s->max,
               s->flags & F_ROUTABLE ? ", not 0.0.0.0 or [::]" : "");
        break;
    case T_TOPICS:
        seterr(buf, len, "%sname:partitions, comma-separated, partitions %" PRId64 "..%" PRId64,
               s->flags & F_EMPTY_OK ? "empty or " : "", s->min, s->max);
        break;
    case T_NAMES:
        seterr(buf, len, "a comma-separated list of ");
        for (i = 0; s->values[i] != NULL; i++) {
            used = strlen(buf);
            seterr(buf + used, len - used, "%s%s", i > 0 ? ", " : "", s->values[i]);
        }
        break;
    }
}

static void free_value(kc_conf_t *c, const setting_t *s)
{
    switch (s->type) {
    case T_STRING:
    case T_LISTENERS:
    case T_NAMES:
        free(*(char **)member(c, s));
        *(char **)member(c, s) = NULL;
        break;
    case T_TOPICS:
        free_topics(*(kc_conf_topic_t **)member(c, s), *(size_t *)((char *)c + s->off_n));
        *(kc_conf_topic_t **)member(c, s) = NULL;
        *(size_t *)((char *)c + s->off_n) = 0;
        break;
    default:
        break;
    }
}

typedef struct buf_s {
    char *p;
    size_t len, cap;
} buf_t;

static int buf_add(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap != 0 ? b->cap : 128;
        char *p;

        while (b->len + n + 1 > cap)
            cap *= 2;
        p = realloc(b->p, cap);
        if (p == NULL)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Parse a T_NAMES list for setting `s` into a new string without blanks (*out). On failure
 * nothing is allocated and the problem is in prob. */
static int parse_names(const setting_t *s, const char *v, char **out, char *prob, size_t problen)
{
    const char *b, *e, *end = v + strlen(v), *comma;
    char q[QUOTE_MAX];
    buf_t names = {0};
    size_t i, count = 0;

    *out = NULL;
    for (b = v;; b = comma + 1) {
        comma = memchr(b, ',', (size_t)(end - b));
        e = comma != NULL ? comma : end;
        trim(&b, &e);
        if (b == e) {
            seterr(prob, problen, "has an empty entry");
            goto fail;
        }
        for (i = 0; s->values[i] != NULL; i++)
            if (strlen(s->values[i]) == (size_t)(e - b) && memcmp(s->values[i], b, e - b) == 0)
                break;
        if (s->values[i] == NULL) {
            seterr(prob, problen, "names \"%s\", which is not a valid value",
                   quote_n(q, b, (size_t)(e - b)));
            goto fail;
        }
        /* A name listed twice: look for ",name," in ",<names so far>,". */
        for (const char *p = names.p; p != NULL && *p != '\0';) {
            const char *pe = strchr(p, ',');
            size_t n = pe != NULL ? (size_t)(pe - p) : strlen(p);
            if (n == (size_t)(e - b) && memcmp(p, b, n) == 0) {
                seterr(prob, problen, "names \"%s\" twice", quote_n(q, b, n));
                goto fail;
            }
            p += n + (pe != NULL);
        }
        if ((count > 0 && buf_add(&names, ",", 1) != 0) ||
            buf_add(&names, b, (size_t)(e - b)) != 0) {
            seterr(prob, problen, "could not be stored: out of memory");
            goto fail;
        }
        count++;
        if (comma == NULL)
            break;
    }
    *out = names.p;
    return 0;
fail:
    free(names.p);
    return -1;
}

/* Validate `v` for `s` and store it in c; on failure c is unchanged and prob says why. */
static int parse_value(kc_conf_t *c, const setting_t *s, const char *v, char *prob, size_t problen)
{
    int64_t num = 0;
    size_t i, n;
    char *str;
    kc_conf_topic_t *topics;
    int rc;

    switch (s->type) {
    case T_INT:
    case T_LONG:
        rc = parse_i64(v, &num);
        if (rc == 1) {
            seterr(prob, problen, "is not an integer");
            return -1;
        }
        if (rc == 2 || num < s->min || num > s->max) {
            seterr(prob, problen, "is out of range");
            return -1;
        }
        if (s->type == T_INT)
            *(int32_t *)member(c, s) = (int32_t)num;
        else
            *(int64_t *)member(c, s) = num;
        return 0;
    case T_BOOL:
        if (ieq_n(v, strlen(v), "true") || ieq_n(v, strlen(v), "false")) {
            *(bool *)member(c, s) = lower(v[0]) == 't';
            return 0;
        }
        seterr(prob, problen, "is not a boolean");
        return -1;
    case T_ENUM:
        for (i = 0; s->values[i] != NULL; i++) {
            if (ieq_n(v, strlen(v), s->values[i])) {
                *(int *)member(c, s) = (int)i;
                return 0;
            }
        }
        seterr(prob, problen, "is not a valid value");
        return -1;
    case T_STRING:
    case T_LISTENERS:
        if (s->type == T_LISTENERS) {
            if (check_listeners(s, v, prob, problen) != 0)
                return -1;
        } else if (*v == '\0' && !(s->flags & F_EMPTY_OK)) {
            seterr(prob, problen, "is empty");
            return -1;
        } else if (s->check != NULL && s->check(v, prob, problen) != 0) {
            return -1;
        }
        str = strdup(v);
        if (str == NULL) {
            seterr(prob, problen, "could not be stored: out of memory");
            return -1;
        }
        free_value(c, s);
        *(char **)member(c, s) = str;
        return 0;
    case T_TOPICS:
        if (parse_topics(s, v, &topics, &n, prob, problen) != 0)
            return -1;
        free_value(c, s);
        *(kc_conf_topic_t **)member(c, s) = topics;
        *(size_t *)((char *)c + s->off_n) = n;
        return 0;
    case T_NAMES:
        if ((s->flags & F_EMPTY_OK) && v[strspn(v, " \t")] == '\0')
            str = strdup("");
        else if (parse_names(s, v, &str, prob, problen) != 0)
            return -1;
        if (str == NULL) {
            seterr(prob, problen, "could not be stored: out of memory");
            return -1;
        }
        free_value(c, s);
        *(char **)member(c, s) = str;
        return 0;
    }
    seterr(prob, problen, "has an unknown type");
    return -1;
}

int kc_conf_set(kc_conf_t *c, const char *key, const char *value, int source, char *err,
                size_t errlen)
{
    const setting_t *s = find(key);
    char qv[QUOTE_MAX], prob[512], bounds[192];
    const char *p;

    if (s == NULL && strncmp(key, override_prefix, sizeof override_prefix - 1) == 0)
        return set_override(c, key, value, source, err, errlen);
    if (s == NULL) {
        seterr(err, errlen, "unknown setting \"%s\"", quote(qv, key));
        return -1;
    }
    if (source < KC_CONF_SRC_DEFAULT || source > KC_CONF_SRC_SET) {
        seterr(err, errlen, "%s: invalid source %d", s->name, source);
        return -1;
    }
    for (p = value; *p != '\0' && (unsigned char)*p >= 0x20 && *p != 0x7f; p++)
        ;
    if (*p != '\0')
        seterr(prob, sizeof prob, "contains a control character");
    else if (parse_value(c, s, value, prob, sizeof prob) == 0) {
        c->source[s - settings] = (kc_conf_source_t)source;
        return 0;
    }
    write_bounds(s, bounds, sizeof bounds);
    seterr(err, errlen, "%s: \"%s\" %s (expected %s)", s->name,
           s->flags & F_SECRET ? "[hidden]" : quote(qv, value), prob, bounds);
    return -1;
}

static int set_override(kc_conf_t *c, const char *key, const char *value, int source, char *err,
                        size_t errlen)
{
    char qv[QUOTE_MAX], prob[512], bounds[192];
    const char *nb = key + sizeof override_prefix - 1, *dot = strchr(nb, '.');
    const setting_t *s = dot != NULL ? find(dot + 1) : NULL;
    const char *p;

    if (dot == NULL || dot == nb || s == NULL || !(s->flags & F_LISTENER)) {
        seterr(err, errlen,
               "unknown setting \"%s\" (listener.name.<name>. takes the ssl.* and SASL settings)",
               quote(qv, key));
        return -1;
    }
    if ((size_t)(dot - nb) >= sizeof(((kc_listener_t *)0)->name)) {
        seterr(err, errlen, "%s: the listener name is too long", quote(qv, key));
        return -1;
    }
    for (p = nb; p < dot; p++) {
        if (!is_alnum(*p) && *p != '_') {
            seterr(err, errlen, "%s: a listener name has only letters, digits and '_'",
                   quote(qv, key));
            return -1;
        }
    }
    if (source < KC_CONF_SRC_DEFAULT || source > KC_CONF_SRC_SET) {
        seterr(err, errlen, "%s: invalid source %d", key, source);
        return -1;
    }
    for (p = value; *p != '\0' && (unsigned char)*p >= 0x20 && *p != 0x7f; p++)
        ;
    /* Validate the value as the setting's own, in a scratch configuration. */
    kc_conf_t scratch;
    memset(&scratch, 0, sizeof scratch);
    int rc = *p != '\0' ? (seterr(prob, sizeof prob, "contains a control character"), -1)
                        : parse_value(&scratch, s, value, prob, sizeof prob);
    free_value(&scratch, s);
    if (rc != 0) {
        write_bounds(s, bounds, sizeof bounds);
        seterr(err, errlen, "%s: \"%s\" %s (expected %s)", key,
               s->flags & F_SECRET ? "[hidden]" : quote(qv, value), prob, bounds);
        return -1;
    }
    char *name = strndup(nb, (size_t)(dot - nb)), *v = strdup(value), *k = strdup(s->name);
    kc_conf_override_t *o = NULL;
    for (size_t i = 0; i < c->n_overrides; i++)
        if (same_name(c->overrides[i].listener, name != NULL ? name : "") &&
            strcmp(c->overrides[i].key, s->name) == 0)
            o = &c->overrides[i];
    if (o == NULL && name != NULL && v != NULL && k != NULL) {
        kc_conf_override_t *grown =
            realloc(c->overrides, (c->n_overrides + 1) * sizeof(*c->overrides));
        if (grown != NULL) {
            c->overrides = grown;
            o = &grown[c->n_overrides++];
            memset(o, 0, sizeof *o);
        }
    }
    if (o == NULL || name == NULL || v == NULL || k == NULL) {
        free(name);
        free(v);
        free(k);
        seterr(err, errlen, "%s: could not be stored: out of memory", key);
        return -1;
    }
    for (char *q = name; *q != '\0'; q++)
        *q = upper(*q);
    free(o->listener);
    free(o->key);
    free(o->value);
    o->listener = name;
    o->key = k;
    o->value = v;
    o->source = source;
    return 0;
}

const char *kc_conf_listener_value(const kc_conf_t *c, const char *name, const char *key, char *buf,
                                   size_t cap, bool *overridden)
{
    const setting_t *s = find(key);

    if (s == NULL)
        return NULL;
    for (size_t i = 0; name != NULL && i < c->n_overrides; i++) {
        if (same_name(c->overrides[i].listener, name) && strcmp(c->overrides[i].key, key) == 0) {
            if (overridden != NULL)
                *overridden = true;
            return c->overrides[i].value;
        }
    }
    if (overridden != NULL)
        *overridden = false;
    switch (s->type) {
    case T_INT:
        snprintf(buf, cap, "%" PRId32, *(const int32_t *)cmember(c, s));
        return buf;
    case T_LONG:
        snprintf(buf, cap, "%" PRId64, *(const int64_t *)cmember(c, s));
        return buf;
    case T_BOOL:
        return *(const bool *)cmember(c, s) ? "true" : "false";
    case T_ENUM:
        return s->values[*(const int *)cmember(c, s)];
    case T_TOPICS:
        return NULL;
    default:
        return *(char *const *)cmember(c, s);
    }
}

void kc_conf_init(kc_conf_t *c)
{
    char err[512];
    size_t i;

    memset(c, 0, sizeof *c);
    for (i = 0; i < N_SETTINGS; i++) {
        if (kc_conf_set(c, settings[i].name, settings[i].def, KC_CONF_SRC_DEFAULT, err,
                        sizeof err) != 0) {
            fprintf(stderr, "kcoord: cannot apply the default of %s: %s\n", settings[i].name, err);
            abort();
        }
    }
}

void kc_conf_free(kc_conf_t *c)
{
    size_t i;

    for (i = 0; i < N_SETTINGS; i++)
        free_value(c, &settings[i]);
    for (i = 0; i < c->n_overrides; i++) {
        free(c->overrides[i].listener);
        free(c->overrides[i].key);
        free(c->overrides[i].value);
    }
    free(c->overrides);
    memset(c, 0, sizeof *c);
}

/* The rules between settings (kc_conf_check): setting `a` must be <= (or, with `strict`, <)
 * setting `b`. Both are T_INT settings. */
static const struct {
    const char *a, *b;
    bool strict;
} rules[] = {
    {"group.min.session.timeout.ms", "group.max.session.timeout.ms", false},
    {"group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", false},
    {"group.consumer.min.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", false},
    {"group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", false},
    {"group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", false},
    {"group.consumer.min.session.timeout.ms", "group.consumer.session.timeout.ms", false},
    {"group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms", false},
    {"group.consumer.heartbeat.interval.ms", "group.consumer.session.timeout.ms", true},
    {"group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms",
     false},
    {"group.consumer.min.assignment.interval.ms", "group.consumer.assignment.interval.ms", false},
    {"group.consumer.assignment.interval.ms", "group.consumer.max.assignment.interval.ms", false},
};

/* kc_conf_check's part for listeners (conf.h). */
static int check_listener_names(const kc_conf_t *c, char *err, size_t errlen)
{
    enum { MAX = 64 };
    kc_listener_t *ls = calloc(2 * MAX, sizeof *ls), *ad = ls + MAX;
    size_t n = 0, na = 0, i, k;
    char why[256];
    int rc = -1;

    if (ls == NULL) {
        seterr(err, errlen, "listeners: could not be checked: out of memory");
        return -1;
    }
    if (kc_conf_parse_listeners(c->listeners, ls, MAX, &n, why, sizeof why) != 0) {
        seterr(err, errlen, "listeners: %s", why);
        goto out;
    }
    if (kc_conf_parse_listeners(c->advertised_listeners, ad, MAX, &na, why, sizeof why) != 0) {
        seterr(err, errlen, "advertised.listeners: %s", why);
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (kc_conf_listener_protocol(c, ls[i].name) < 0) {
            seterr(err, errlen,
                   "listeners: listener %s has no security protocol in "
                   "listener.security.protocol.map",
                   ls[i].name);
            goto out;
        }
        for (k = 0; k < i; k++) {
            if (strcmp(ls[k].name, ls[i].name) == 0 && (ls[k].named || ls[i].named)) {
                seterr(err, errlen, "listeners: the listener name %s is used twice", ls[i].name);
                goto out;
            }
        }
    }
    for (i = 0; i < na; i++) {
        for (k = 0; k < n && strcmp(ls[k].name, ad[i].name) != 0; k++)
            ;
        if (k == n) {
            seterr(err, errlen,
                   "advertised.listeners: %s is not the name of a listener in listeners",
                   ad[i].name);
            goto out;
        }
        for (k = 0; k < i; k++) {
            if (strcmp(ad[k].name, ad[i].name) == 0) {
                seterr(err, errlen, "advertised.listeners: the listener name %s is used twice",
                       ad[i].name);
                goto out;
            }
        }
    }
    for (i = 0; i < c->n_overrides; i++) {
        for (k = 0; k < n && strcmp(ls[k].name, c->overrides[i].listener) != 0; k++)
            ;
        if (k == n) {
            char lname[64];
            size_t j;
            for (j = 0; c->overrides[i].listener[j] != '\0' && j + 1 < sizeof lname; j++)
                lname[j] = lower(c->overrides[i].listener[j]);
            lname[j] = '\0';
            seterr(err, errlen, "%s%s.%s: %s is not the name of a listener in listeners",
                   override_prefix, lname, c->overrides[i].key, c->overrides[i].listener);
            goto out;
        }
    }
    rc = 0;
out:
    free(ls);
    return rc;
}

/* Whether host (a listener's, without brackets) is a loopback address or name. */
static bool loopback_host(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

/* With an authorizer, the HTTP listener shows member hosts and offsets to whoever reaches it,
 * with no principal to check: bound beyond loopback it must hold HTTPS and a bearer token
 * (whose holders see every group, as a super user would). */
static int check_metrics_exposure(const kc_conf_t *c, char *err, size_t errlen)
{
    kc_listener_t l;
    size_t n = 0;
    char ignored[256];
    if (c->authorizer_class_name[0] == '\0' ||
        kc_conf_parse_listeners(c->metrics_listener, &l, 1, &n, ignored, sizeof ignored) != 0 ||
        n != 1 || loopback_host(l.host) ||
        (c->metrics_ssl_enabled && c->metrics_bearer_token[0] != '\0'))
        return 0;
    seterr(err, errlen,
           "metrics.listener (%s) is not a loopback address: with authorizer.class.name set it "
           "needs metrics.ssl.enabled=true and metrics.bearer.token, since /v1/groups shows "
           "member hosts and offsets that the ACLs protect",
           c->metrics_listener);
    return -1;
}

int kc_conf_check(const kc_conf_t *c, char *err, size_t errlen)
{
    size_t i;

    if (check_listener_names(c, err, errlen) != 0)
        return -1;
    if (check_metrics_exposure(c, err, errlen) != 0)
        return -1;

    for (i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const setting_t *a = find(rules[i].a), *b = find(rules[i].b);
        int32_t va = *(const int32_t *)cmember(c, a), vb = *(const int32_t *)cmember(c, b);

        if (rules[i].strict ? va < vb : va <= vb)
            continue;
        seterr(err, errlen, "%s (%" PRId32 ") must be %s %s (%" PRId32 ")", a->name, va,
               rules[i].strict ? "less than" : "at most", b->name, vb);
        return -1;
    }
    return 0;
}

uint64_t kc_conf_files_needed(const kc_conf_t *c)
{
    return (uint64_t)c->offsets_topic_num_partitions * KC_CONF_FILES_PER_PARTITION +
           KC_CONF_FILES_SPARE;
}

int kc_conf_check_files(const kc_conf_t *c, uint64_t max_files, char *err, size_t errlen)
{
    uint64_t need = kc_conf_files_needed(c);

    if (need <= max_files)
        return 0;
    seterr(err, errlen,
           "offsets.topic.num.partitions (%" PRId32 ") needs at least %" PRIu64
           " open files (%d per partition and %d more), but the process may open only %" PRIu64
           " (ulimit -n); raise the limit or lower offsets.topic.num.partitions",
           c->offsets_topic_num_partitions, need, KC_CONF_FILES_PER_PARTITION, KC_CONF_FILES_SPARE,
           max_files);
    return -1;
}

bool kc_conf_numeric(size_t i, const char **name, int64_t *min, int64_t *max)
{
    if (i >= N_SETTINGS || (settings[i].type != T_INT && settings[i].type != T_LONG))
        return false;
    *name = settings[i].name;
    *min = settings[i].min;
    *max = settings[i].max;
    return true;
}

int kc_conf_get_source(const kc_conf_t *c, const char *key)
{
    const setting_t *s = find(key);
    const char *nb = key + sizeof override_prefix - 1, *dot;

    if (s == NULL && strncmp(key, override_prefix, sizeof override_prefix - 1) == 0 &&
        (dot = strchr(nb, '.')) != NULL) {
        for (size_t i = 0; i < c->n_overrides; i++)
            if (ieq_n(nb, (size_t)(dot - nb), c->overrides[i].listener) &&
                strcmp(dot + 1, c->overrides[i].key) == 0)
                return c->overrides[i].source;
    }
    return s != NULL ? (int)c->source[s - settings] : -1;
}

const char *kc_conf_source_name(int source)
{
    switch (source) {
    case KC_CONF_SRC_DEFAULT:
        return "default";
    case KC_CONF_SRC_FILE:
        return "file";
    case KC_CONF_SRC_ENV:
        return "env";
    case KC_CONF_SRC_SET:
        return "--set";
    }
    return "?";
}

/* ---- the config file ---- */

static int hexval(char ch)
{
    if (is_digit(ch))
        return ch - '0';
    ch = lower(ch);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Undo Java-properties escapes in [b, e), writing into `out` (at least e - b + 1 bytes) and
 * NUL-terminating it. With `trim_end`, blanks at the end that were not escaped are dropped.
 * Returns -1 on a malformed \uXXXX (or one naming a UTF-16 surrogate). */
static int unescape(const char *b, const char *e, char *out, bool trim_end)
{
    size_t n = 0, keep = 0;
    int i, h;
    unsigned cp;

    while (b < e) {
        if (*b != '\\' || b + 1 == e) {
            if (!is_blank(*b))
                keep = n + 1;
            out[n++] = *b++;
            continue;
        }
        b++;
        switch (*b) {
        case 't':
            out[n++] = '\t';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'u':
            cp = 0;
            for (i = 1; i <= 4; i++) {
                h = b + i < e ? hexval(b[i]) : -1;
                if (h < 0)
                    return -1;
                cp = cp * 16 + (unsigned)h;
            }
            if (cp >= 0xd800 && cp <= 0xdfff)
                return -1;
            if (cp < 0x80) {
                out[n++] = (char)cp;
            } else if (cp < 0x800) { /* \uXXXX is at least 6 bytes; UTF-8 needs at most 3 */
                out[n++] = (char)(0xc0 | (cp >> 6));
                out[n++] = (char)(0x80 | (cp & 0x3f));
            } else {
                out[n++] = (char)(0xe0 | (cp >> 12));
                out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[n++] = (char)(0x80 | (cp & 0x3f));
            }
            b += 4;
            break;
        default:
            out[n++] = *b;
            break;
        }
        b++;
        keep = n;
    }
    out[trim_end ? keep : n] = '\0';
    return 0;
}

/* Apply one logical line (leading blanks already removed, not a comment, not empty). */
static int apply_line(kc_conf_t *c, const char *line, size_t len, const char *path,
                      unsigned long lineno, char *err, size_t errlen)
{
    const char *p = line, *e = line + len, *kend;
    char *key = NULL, *value = NULL, msg[768], q[QUOTE_MAX];
    int rc = -1;

    while (p < e && *p != '=' && *p != ':' && !is_blank(*p))
        p += *p == '\\' && p + 1 < e ? 2 : 1;
    kend = p;
    while (p < e && is_blank(*p))
        p++;
    if (p == e || (*p != '=' && *p != ':')) {
        seterr(err, errlen, "%s:%lu: expected key=value or key: value, got \"%s\"", path, lineno,
               quote_n(q, line, len));
        return -1;
    }
    if (kend == line) {
        seterr(err, errlen, "%s:%lu: no key before '%c'", path, lineno, *p);
        return -1;
    }
    p++;
    while (p < e && is_blank(*p))
        p++;
    key = malloc((size_t)(kend - line) + 1);
    value = malloc((size_t)(e - p) + 1);
    if (key == NULL || value == NULL) {
        seterr(err, errlen, "%s:%lu: out of memory", path, lineno);
        goto out;
    }
    if (unescape(line, kend, key, false) != 0 || unescape(p, e, value, true) != 0) {
        seterr(err, errlen, "%s:%lu: malformed \\uXXXX escape", path, lineno);
        goto out;
    }
    if (kc_conf_set(c, key, value, KC_CONF_SRC_FILE, msg, sizeof msg) != 0) {
        seterr(err, errlen, "%s:%lu: %s", path, lineno, msg);
        goto out;
    }
    rc = 0;
out:
    free(key);
    free(value);
    return rc;
}

int kc_conf_load_file(kc_conf_t *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    buf_t logical = {0};
    unsigned long lineno = 0, start = 0;
    bool more = false; /* the logical line continues on the next physical line */
    int rc = 0;

    if (f == NULL) {
        seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        const char *b, *e;
        size_t slashes = 0;

        errno = 0;
        got = getline(&line, &cap, f);
        if (got < 0) {
            if (ferror(f)) {
                seterr(err, errlen, "%s:%lu: cannot read: %s", path, lineno + 1, strerror(errno));
                rc = -1;
            } else if (more) {
                rc = apply_line(c, logical.p, logical.len, path, start, err, errlen);
            }
            break;
        }
        lineno++;
        b = line;
        e = line + got;
        if (memchr(b, '\0', (size_t)got) != NULL) {
            seterr(err, errlen, "%s:%lu: line contains a NUL byte", path, lineno);
            rc = -1;
            break;
        }
        if (lineno == 1 && got >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0)
            b += 3;
        while (e > b && (e[-1] == '\n' || e[-1] == '\r'))
            e--;
        while (b < e && is_blank(*b))
            b++;
        if (!more) {
            if (b == e || *b == '#' || *b == '!')
                continue;
            logical.len = 0;
            start = lineno;
        }
        while (e - slashes > b && e[-1 - (ptrdiff_t)slashes] == '\\')
            slashes++;
        more = slashes % 2 == 1;
        if (buf_add(&logical, b, (size_t)(e - b) - (more ? 1 : 0)) != 0) {
            seterr(err, errlen, "%s:%lu: out of memory", path, lineno);
            rc = -1;
            break;
        }
        if (!more && (rc = apply_line(c, logical.p, logical.len, path, start, err, errlen)) != 0)
            break;
    }
    free(line);
    free(logical.p);
    fclose(f);
    return rc;
}

/* ---- the environment ---- */

int kc_conf_load_env(kc_conf_t *c, char *const *envp, char *err, size_t errlen)
{
    static const char prefix[] = "KCOORD_";
    const size_t plen = sizeof prefix - 1;
    char key[128], msg[768], q[QUOTE_MAX];

    for (; envp != NULL && *envp != NULL; envp++) {
        const char *var = *envp, *eq = strchr(var, '=');
        size_t klen, i;

        if (strncmp(var, prefix, plen) != 0 || eq == NULL)
            continue;
        klen = (size_t)(eq - var) - plen;
        quote_n(q, var, (size_t)(eq - var));
        for (i = 0; i < klen && i < sizeof key - 1; i++)
            key[i] = var[plen + i] == '_' ? '.' : lower(var[plen + i]);
        key[i] = '\0';
        if (klen >= sizeof key || find(key) == NULL) {
            seterr(err, errlen, "unknown environment variable %s (no setting is called \"%s\")", q,
                   quote(msg, key));
            return -1;
        }
        if (kc_conf_set(c, key, eq + 1, KC_CONF_SRC_ENV, msg, sizeof msg) != 0) {
            seterr(err, errlen, "environment variable %s: %s", q, msg);
            return -1;
        }
    }
    return 0;
}

/* ---- printing ---- */

static void write_value(FILE *out, const kc_conf_t *c, const setting_t *s)
{
    const kc_conf_topic_t *t;
    size_t i, n;

    switch (s->type) {
    case T_INT:
        fprintf(out, "%" PRId32, *(const int32_t *)cmember(c, s));
        break;
    case T_LONG:
        fprintf(out, "%" PRId64, *(const int64_t *)cmember(c, s));
        break;
    case T_STRING:
    case T_LISTENERS:
    case T_NAMES:
        fputs(*(char *const *)cmember(c, s), out);
        break;
    case T_BOOL:
        fputs(*(const bool *)cmember(c, s) ? "true" : "false", out);
        break;
    case T_ENUM:
        fputs(s->values[*(const int *)cmember(c, s)], out);
        break;
    case T_TOPICS:
        t = *(kc_conf_topic_t *const *)cmember(c, s);
        n = *(const size_t *)((const char *)c + s->off_n);
        for (i = 0; i < n; i++)
            fprintf(out, "%s%s:%" PRId32, i > 0 ? "," : "", t[i].name, t[i].partitions);
        break;
    }
}

void kc_conf_print(const kc_conf_t *c, FILE *out)
{
    size_t i;

    for (i = 0; i < N_SETTINGS; i++) {
        fprintf(out, "%s=", settings[i].name);
        if ((settings[i].flags & F_SECRET) && **(char *const *)cmember(c, &settings[i]) != '\0')
            fputs("[hidden]", out);
        else
            write_value(out, c, &settings[i]);
        fprintf(out, "  # %s\n", kc_conf_source_name((int)c->source[i]));
    }
    for (i = 0; i < c->n_overrides; i++) {
        const kc_conf_override_t *o = &c->overrides[i];
        fprintf(out, "%s", override_prefix);
        for (const char *p = o->listener; *p != '\0'; p++)
            fputc(lower(*p), out);
        fprintf(out, ".%s=%s  # %s\n", o->key,
                (find(o->key)->flags & F_SECRET) && *o->value != '\0' ? "[hidden]" : o->value,
                kc_conf_source_name(o->source));
    }
}

/* Write `text` as `# ` comment lines of at most 80 columns, breaking at spaces. */
static void write_wrapped(FILE *out, const char *text)
{
    const size_t width = 80 - 2;
    const char *p = text;

    while (*p != '\0') {
        size_t n = strlen(p), cut = n;

        if (n > width) {
            for (cut = width; cut > 0 && p[cut] != ' '; cut--)
                ;
            if (cut == 0) /* one word longer than the line */
                for (cut = width; p[cut] != '\0' && p[cut] != ' '; cut++)
                    ;
        }
        fprintf(out, "# %.*s\n", (int)cut, p);
        p += cut;
        while (*p == ' ')
            p++;
    }
}

static const char *type_name(vtype_t t)
{
    switch (t) {
    case T_INT:
        return "int";
    case T_LONG:
        return "long";
    case T_STRING:
        return "string";
    case T_BOOL:
        return "bool";
    case T_ENUM:
        return "enum";
    case T_LISTENERS:
        return "listeners";
    case T_TOPICS:
        return "topics";
    case T_NAMES:
        return "list";
    }
    return "?";
}

/* `key=default`, commented out unless F_SHOWN. A commented line wider than 80 columns is cut
 * after a comma and continued (Java properties' trailing backslash) on indented lines. */
static void write_default(FILE *out, const setting_t *s)
{
    const char *hash = s->flags & F_SHOWN ? "" : "#", *p = s->def;
    size_t room = 80 - strlen(hash) - strlen(s->name) - 1;

    fprintf(out, "%s%s=", hash, s->name);
    while (*hash != '\0' && strlen(p) > room) {
        size_t cut = room - 1; /* the backslash */
        while (cut > 0 && p[cut - 1] != ',')
            cut--;
        if (cut == 0)
            break;
        fprintf(out, "%.*s\\\n#    ", (int)cut, p);
        p += cut;
        room = 80 - 5;
    }
    fprintf(out, "%s\n", p);
}

void kc_conf_write_doc(FILE *out)
{
    char bounds[192], line[512];
    size_t i;

    write_wrapped(out, "kcoord configuration.");
    fputs("#\n", out);
    write_wrapped(out,
                  "Java-properties syntax: key=value or key: value, one per line; lines starting "
                  "with # or ! are comments; a line ending in \\ continues on the next. Any "
                  "setting can also come from the environment as KCOORD_<KEY>, dots written as "
                  "underscores (KCOORD_LOG_LEVEL=debug), or from the command line as --set "
                  "key=value. Later sources win: defaults < this file < environment < --set.");
    fputs("#\n", out);
    write_wrapped(out, "Generated by kc_conf_write_doc() from the settings table in src/conf.c; "
                       "a unit test fails when this file is stale.");
    for (i = 0; i < N_SETTINGS; i++) {
        const setting_t *s = &settings[i];

        fputs("\n", out);
        write_wrapped(out, s->doc);
        write_bounds(s, bounds, sizeof bounds);
        snprintf(line, sizeof line, "%s%s%s%s, default %s, %s%s", type_name(s->type),
                 s->unit != NULL ? " (" : "", s->unit != NULL ? s->unit : "",
                 s->unit != NULL ? ")" : "", *s->def != '\0' ? s->def : "empty",
                 s->type == T_INT || s->type == T_LONG ? "range " : "", bounds);
        write_wrapped(out, line);
        write_default(out, s);
    }
}

/* The environment variable of a setting: KCOORD_ and the name upper-cased, dots as underscores. */
static void env_name(const char *name, char *buf, size_t len)
{
    size_t i = (size_t)snprintf(buf, len, "KCOORD_");

    for (; *name != '\0' && i + 1 < len; name++)
        buf[i++] = *name == '.' ? '_' : (char)(*name >= 'a' && *name <= 'z' ? *name - 32 : *name);
    buf[i] = '\0';
}

/* Write `s` for a Markdown table cell: `|` escaped, everything else as it is. */
static void write_cell(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

void kc_conf_write_markdown(FILE *out)
{
    char bounds[192], env[128];
    size_t i;

    fputs("# kcoord configuration\n\n"
          "Generated by `kc_conf_write_markdown()` from the settings table in `src/conf.c`; a unit "
          "test fails when this file is stale (regenerate with `build/tests/unit/test_conf "
          "--write-markdown > docs/CONFIG.md`). `conf/kcoord.conf` is the same table as a "
          "commented configuration file.\n\n"
          "Every setting comes, each source overriding the one before, from its default, the "
          "configuration file (`kcoord -c FILE`, Java-properties syntax), the environment "
          "(`KCOORD_<KEY>`: the name upper-cased, dots as underscores) and the command line "
          "(`--set key=value`). A value outside its bounds, an unknown key in the file, or an "
          "unknown `KCOORD_*` variable stops start-up with a message naming the key. "
          "`kcoord --print-config` prints the effective settings and where each came from.\n\n"
          "Names, defaults and meanings follow Kafka's broker settings of the same name where "
          "Kafka has one.\n\n"
          "| setting | type | default | allowed values | environment |\n"
          "|---|---|---|---|---|\n",
          out);
    for (i = 0; i < N_SETTINGS; i++) {
        const setting_t *s = &settings[i];

        write_bounds(s, bounds, sizeof bounds);
        env_name(s->name, env, sizeof env);
        fprintf(out, "| `%s` | %s%s%s%s | ", s->name, type_name(s->type),
                s->unit != NULL ? " (" : "", s->unit != NULL ? s->unit : "",
                s->unit != NULL ? ")" : "");
        if (*s->def != '\0') {
            fputc('`', out);
            write_cell(out, s->def);
            fputc('`', out);
        } else {
            fputs("empty", out);
        }
        fputs(" | ", out);
        write_cell(out, bounds);
        fprintf(out, " | `%s` |\n", env);
    }
    for (i = 0; i < N_SETTINGS; i++) {
        const setting_t *s = &settings[i];

        fprintf(out, "\n### %s\n\n%s\n", s->name, s->doc);
    }
}

int kc_topic_name_check(const char *name, size_t len)
{
    if (len == 0)
        return KC_TOPIC_NAME_EMPTY;
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return KC_TOPIC_NAME_DOTS;
    size_t java_len = 0; /* UTF-16 code units: two for a character outside the BMP */
    for (size_t i = 0; i < len; i++) {
        uint8_t b = (uint8_t)name[i];
        if ((b & 0xc0) != 0x80)
            java_len += b >= 0xf0 ? 2 : 1;
    }
    if (java_len > KC_TOPIC_NAME_MAX)
        return KC_TOPIC_NAME_TOO_LONG;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return KC_TOPIC_NAME_CHARS;
    }
    return KC_TOPIC_NAME_OK;
}

bool kc_topic_names_collide(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (a[i] != b[i] && !((a[i] == '.' || a[i] == '_') && (b[i] == '.' || b[i] == '_')))
            return false;
    return true;
}

/* ---- JAAS (sasl.jaas.config) ----------------------------------------------------------------- */

typedef struct jaas_s {
    const char *p;
} jaas_t;

static void jaas_skip(jaas_t *j)
{
    for (;;) {
        while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
            j->p++;
        if (j->p[0] == '/' && j->p[1] == '/') {
            while (*j->p != '\0' && *j->p != '\n')
                j->p++;
        } else if (j->p[0] == '/' && j->p[1] == '*') {
            const char *e = strstr(j->p + 2, "*/");
            j->p = e != NULL ? e + 2 : j->p + strlen(j->p);
        } else {
            return;
        }
    }
}

static bool jaas_word_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '$' ||
           (unsigned char)c >= 0x80;
}

static bool jaas_word_char(char c)
{
    return jaas_word_start(c) || (c >= '0' && c <= '9') || c == '.';
}

/* A word, or with `quoted_ok` a "quoted" string, into a malloc'd *out. 0, or -1. */
static int jaas_token(jaas_t *j, bool quoted_ok, char **out)
{
    jaas_skip(j);
    *out = NULL;
    if (quoted_ok && *j->p == '"') {
        buf_t b = {0};
        for (j->p++; *j->p != '"'; j->p++) {
            if (*j->p == '\0') {
                free(b.p);
                return -1;
            }
            if (*j->p == '\\' && j->p[1] != '\0')
                j->p++;
            if (buf_add(&b, j->p, 1) != 0) {
                free(b.p);
                return -1;
            }
        }
        j->p++;
        *out = b.p != NULL ? b.p : strdup("");
        return *out != NULL ? 0 : -1;
    }
    const char *b = j->p;
    if (!jaas_word_start(*b) && !(quoted_ok && *b >= '0' && *b <= '9'))
        return -1;
    while (jaas_word_char(*j->p))
        j->p++;
    *out = strndup(b, (size_t)(j->p - b));
    return *out != NULL ? 0 : -1;
}

int kc_conf_jaas_options(const char *text, const char *module,
                         int (*on_option)(void *arg, const char *key, const char *value), void *arg,
                         char *err, size_t errlen)
{
    static const char *const flags[] = {"required", "requisite", "sufficient", "optional"};
    jaas_t j = {text};
    char *name = NULL, *flag = NULL, *key = NULL, *value = NULL;
    int rc = -1;
    if (jaas_token(&j, false, &name) != 0) {
        seterr(err, errlen, "expected a login module name");
        goto out;
    }
    if (strcmp(name, module) != 0) {
        seterr(err, errlen, "the login module must be %s, not %s", module, name);
        goto out;
    }
    bool known = false;
    if (jaas_token(&j, false, &flag) == 0)
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
            known = known || strcmp(flag, flags[i]) == 0;
    if (!known) {
        seterr(err, errlen,
               "the login module's control flag must be required, requisite, "
               "sufficient or optional");
        goto out;
    }
    for (;;) {
        jaas_skip(&j);
        if (*j.p == ';')
            break;
        if (jaas_token(&j, false, &key) != 0) {
            seterr(err, errlen, "expected an option name or ';'");
            goto out;
        }
        jaas_skip(&j);
        if (*j.p++ != '=' || jaas_token(&j, true, &value) != 0) {
            seterr(err, errlen, "option %s: expected =value", key);
            goto out;
        }
        int cb = on_option != NULL ? on_option(arg, key, value) : 0;
        free(key);
        free(value);
        key = value = NULL;
        if (cb != 0) {
            rc = cb;
            goto out;
        }
    }
    j.p++;
    jaas_skip(&j);
    if (*j.p != '\0') {
        seterr(err, errlen, "expected one login module: text follows its ';'");
        goto out;
    }
    rc = 0;
out:
    free(name);
    free(flag);
    free(key);
    free(value);
    return rc;
}

static int check_plain_jaas(const char *v, char *prob, size_t problen)
{
    const char *p = v;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0')
        return 0;
    char err[256];
    if (kc_conf_jaas_options(v, "org.apache.kafka.common.security.plain.PlainLoginModule", NULL,
                             NULL, err, sizeof err) != 0) {
        seterr(prob, problen, "is not a JAAS configuration: %s", err);
        return -1;
    }
    return 0;
}
