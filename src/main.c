/* main.c - kcoord's start-up and shutdown, and nothing else.
 *
 * Order: settings (defaults < file < KCOORD_* environment < --set), logging, the data
 * directory (it must be writable: probe_data_dir), its meta.properties, the topic catalog, the
 * listeners; then the loop runs until SIGTERM or SIGINT, which stops accepting, lets
 * connections finish writing, and exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "api/api.h"
#include "cluster/cluster.h"
#include "conf.h"
#include "coord/coord.h"
#include "log/log.h"
#include "log/meta.h"
#include "net/net.h"
#include "obs/obs.h"
#include "util/diag.h"

#ifndef KCOORD_VERSION
#define KCOORD_VERSION "0.1.0"
#endif

extern char **environ;

enum { MAX_LISTENERS = 16 };

typedef struct daemon_s {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint, sighup, sigusr1;
    uv_timer_t log_flush; /* writes the summaries of rate-limited log lines */
    kc_server_t *server;
    kc_coord_t *coord;
    kc_cluster_t *cluster; /* cluster.voters: this node's raft; NULL on a single node */
    kc_api_ctx_t *api;     /* its coord is cleared when the coordinator closes */
    kc_obs_server_t *obs;  /* metrics.listener, or NULL */
    /* The SSL listeners' configurations (NULL for others), and the HTTP listener's at
     * MAX_LISTENERS (metrics.ssl.enabled). */
    kc_net_tls_t *tls[MAX_LISTENERS + 1];
    const char *tls_name[MAX_LISTENERS + 1]; /* their listener names */
    int stopping;
    /* A cluster node's shutdown is bounded (see on_stop_deadline): the step it is in. */
    uv_timer_t stop_deadline;
    bool stop_armed;
    const char *stop_step;
} daemon_t;

static void usage(FILE *out)
{
    fprintf(out, "usage: kcoord [-c FILE] [--set key=value]... [--print-config] [--version] "
                 "[--help]\n"
                 "\n"
                 "A standalone Kafka consumer-group coordinator.\n"
                 "\n"
                 "  -c, --config FILE   read settings from FILE (Java properties, key=value)\n"
                 "  --set key=value     override one setting (repeatable)\n"
                 "  --print-config      print the effective settings, each with where it came\n"
                 "                      from (default, file, env, --set), and exit\n"
                 "  --version           print the version and exit\n"
                 "  --help              print this help and exit\n"
                 "\n"
                 "Settings are applied in this order: defaults, FILE, KCOORD_<KEY> environment\n"
                 "variables (dots as underscores), --set. docs/CONFIG.md documents them all.\n");
}

static void on_server_stopped(void *arg)
{
    daemon_t *d = arg;
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sighup, NULL);
    uv_close((uv_handle_t *)&d->sigusr1, NULL);
    for (size_t i = 0; i <= MAX_LISTENERS; i++) {
        kc_net_tls_close(d->tls[i]); /* no connection is left to use it */
        d->tls[i] = NULL;
    }
    uv_close((uv_handle_t *)&d->log_flush, NULL);
    if (d->stop_armed)
        uv_close((uv_handle_t *)&d->stop_deadline, NULL);
    kc_diag_repeat_flush();
}

/* A cluster node whose shutdown has not finished in time: a leadership transfer is bounded by
 * 3 election timeouts, and closing raft should take moments, but libraft 0.22.1 was seen to
 * never call back from its close (once, in a rolling restart under load, a snapshot being
 * written at that moment). Nothing is lost by leaving without it: every acknowledged record is
 * in raft's log, written with O_DSYNC or fsynced, raft recovers its files as after a crash, and
 * a cluster node rebuilds its partition logs from raft at every start. */
static void on_stop_deadline(uv_timer_t *t)
{
    daemon_t *d = t->data;
    KC_WARN("main",
            "shutdown: still %s after %llu ms; exiting without waiting more (raft's files are "
            "left as after a crash, which it recovers from; nothing acknowledged is lost)",
            d->stop_step, (unsigned long long)uv_timer_get_repeat(t));
    kc_diag_repeat_flush();
    fflush(NULL);
    _exit(0);
}

static void on_log_flush(uv_timer_t *t)
{
    (void)t;
    kc_diag_repeat_flush();
}

/* mkdir -p: 0, or -1 with errno set. */
static int make_dirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf)) {
        errno = n == 0 ? ENOENT : ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Create, write, fsync, close and remove the file `path`. 0, or -1 with errno set and *what
 * saying which step failed (the file is removed then too). */
static int probe_file(const char *path, const char **what)
{
    static const char text[] = "kcoord checks that data.dir is writable\n";
    *what = "cannot create a file in it";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = 0;
    *what = "cannot write a file in it";
    errno = ENOSPC; /* a short write sets no errno */
    if (write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1))
        rc = -1;
    if (rc == 0) {
        *what = "cannot fsync a file in it";
        rc = fsync(fd);
    }
    int saved = errno;
    if (close(fd) != 0 && rc == 0) {
        *what = "cannot close a file in it";
        saved = errno;
        rc = -1;
    }
    if (unlink(path) != 0 && rc == 0) {
        *what = "cannot remove a file from it";
        saved = errno;
        rc = -1;
    }
    errno = saved;
    return rc;
}

/* Refuse a data directory kcoord cannot write, as Kafka refuses to start when its only log
 * directory is offline (otherwise every partition would fail and the daemon would look alive
 * while serving nothing): create it when missing, then create, write, fsync and remove a probe
 * file in it and fsync the directory. Returns 0, or -1 with a sentence naming data.dir and the
 * error in `err`. */
static int probe_data_dir(const char *dir, char *err, size_t errlen)
{
    char path[4200];
    const char *what = "cannot create the directory";
    int rc = make_dirs(dir);
    if (rc == 0) {
        snprintf(path, sizeof(path), "%s/.kcoord-probe-%ld", dir, (long)getpid());
        rc = probe_file(path, &what);
    }
    if (rc == 0) {
        what = "cannot fsync the directory";
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rc = dfd < 0 ? -1 : fsync(dfd);
        int saved = errno;
        if (dfd >= 0)
            close(dfd);
        errno = saved;
        if (rc != 0 && errno == EINVAL) /* some file systems cannot fsync a directory */
            rc = 0;
    }
    if (rc == 0)
        return 0;
    snprintf(err, errlen, "data.dir \"%s\": %s: %s; kcoord needs a data directory it can write",
             dir, what, strerror(errno));
    return -1;
}

/* The coordinator goes after raft: what raft still had to commit is answered first (its
 * waiters fail: not acknowledged), and nothing of raft refers to the coordinator after. */
static void close_coord(void *arg)
{
    daemon_t *d = arg;
    d->stop_step = "closing the coordinator and the connections";
    /* Parked JoinGroup/SyncGroup requests are answered first, then connections drain. */
    kc_coord_close(d->coord, NULL, NULL);
    d->coord = NULL;
    d->api->coord = NULL;
    kc_server_shutdown(d->server, on_server_stopped, d);
}

static void close_cluster(void *arg)
{
    daemon_t *d = arg;
    d->stop_step = "closing raft";
    kc_cluster_t *cl = d->cluster;
    d->cluster = NULL;
    d->api->cluster = NULL;
    kc_coord_set_cluster(d->coord, NULL);
    kc_cluster_close(cl, close_coord, d);
}

static void on_signal(uv_signal_t *h, int signum)
{
    daemon_t *d = h->data;
    if (d->stopping)
        return;
    d->stopping = 1;
    KC_INFO("main", "%s: shutting down", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    if (d->obs != NULL) {
        kc_obs_server_close(d->obs); /* before the coordinator it reads goes away */
        d->obs = NULL;
    }
    if (d->cluster != NULL) {
        uint64_t ms = 3 * (uint64_t)d->api->conf->cluster_election_timeout_ms + 10000;
        if (uv_timer_init(&d->loop, &d->stop_deadline) == 0) {
            d->stop_armed = true;
            d->stop_deadline.data = d;
            uv_timer_start(&d->stop_deadline, on_stop_deadline, ms, ms);
        }
        d->stop_step = "handing the leadership over";
        /* A leader first hands its leadership over, so that clients move to the new leader
         * at once rather than after an election timeout. */
        if (kc_cluster_transfer(d->cluster, close_cluster, d) == 0)
            return;
        close_cluster(d);
        return;
    }
    /* Parked JoinGroup/SyncGroup requests are answered first, then connections drain. */
    kc_coord_close(d->coord, NULL, NULL);
    d->coord = NULL;
    d->api->coord = NULL;
    kc_server_shutdown(d->server, on_server_stopped, d);
}

/* SIGHUP: every SSL listener re-reads its certificates and keys; new connections get them,
 * existing ones continue with theirs. A listener whose new ones do not load keeps the old. */
/* SIGUSR1: a leader hands its leadership to another voter and goes on as a follower (before
 * maintenance of its host, say). */
static void on_sigusr1(uv_signal_t *h, int signum)
{
    daemon_t *d = h->data;
    (void)signum;
    if (d->cluster == NULL) {
        KC_WARN("main", "SIGUSR1: not a cluster node: nothing to hand over");
        return;
    }
    if (kc_cluster_transfer(d->cluster, NULL, NULL) != 0)
        KC_INFO("main", "SIGUSR1: this node does not lead: nothing to hand over");
}

static void on_sighup(uv_signal_t *h, int signum)
{
    daemon_t *d = h->data;
    char err[512];
    (void)signum;
    for (size_t i = 0; i <= MAX_LISTENERS; i++) {
        if (d->tls[i] == NULL)
            continue;
        if (kc_net_tls_reload(d->tls[i], err, sizeof err) != 0)
            KC_ERROR("main", "SIGHUP: listener %s keeps its previous certificates: %s",
                     d->tls_name[i], err);
        else
            KC_INFO("main", "SIGHUP: listener %s reloaded its certificates", d->tls_name[i]);
    }
}

/* The security protocol of every listener (all four are served; the SASL settings are checked
 * by kc_api_sasl_new). 0, or 2 after printing the error. */
static int check_protocols(const kc_conf_t *conf, const kc_listener_t *ls, size_t n, int *proto)
{
    char err[512];
    kc_net_principal_rules_t *rules =
        kc_net_principal_rules_parse(conf->ssl_principal_mapping_rules, err, sizeof err);
    if (rules == NULL) {
        fprintf(stderr, "kcoord: ssl.principal.mapping.rules: %s\n", err);
        return 2;
    }
    kc_net_principal_rules_free(rules);
    for (size_t i = 0; i < n; i++)
        proto[i] = kc_conf_listener_protocol(conf, ls[i].name);
    return 0;
}

/* The TLS configuration of SSL listener `n` from its ssl.* settings (listener.name.<name>.
 * overrides first; the plain settings alone for n NULL, the HTTP listener). NULL after printing
 * the error, which names the listener and the key. */
static kc_net_tls_t *tls_for(uv_loop_t *loop, const kc_conf_t *conf, const char *n)
{
    char b[12][32], err[512];
#define V(i, key) kc_conf_listener_value(conf, n, key, b[i], sizeof b[i], NULL)
    kc_net_tls_conf_t tc = {
        .listener = n != NULL ? n : "metrics.listener",
        .keystore_location = V(0, "ssl.keystore.location"),
        .keystore_chain = V(1, "ssl.keystore.certificate.chain"),
        .keystore_key = V(2, "ssl.keystore.key"),
        .key_password = V(3, "ssl.key.password"),
        .truststore_location = V(4, "ssl.truststore.location"),
        .truststore_certs = V(5, "ssl.truststore.certificates"),
        .client_auth = V(6, "ssl.client.auth"),
        .protocols = V(7, "ssl.enabled.protocols"),
        .cipher_suites = V(8, "ssl.cipher.suites"),
        .principal_rules = V(9, "ssl.principal.mapping.rules"),
        .handshake_timeout_ms = strtoll(V(10, "ssl.handshake.timeout.ms"), NULL, 10),
    };
#undef V
    kc_net_tls_t *t = kc_net_tls_new(loop, &tc, err, sizeof err);
    if (t == NULL && n == NULL)
        fprintf(stderr, "kcoord: metrics.ssl.enabled: %s\n", err);
    else if (t == NULL)
        fprintf(stderr, "kcoord: listener %s (SSL): %s%s\n", n, err,
                conf->n_overrides > 0 ? " (or its listener.name. override)" : "");
    return t;
}

/* Apply the settings sources in order. Returns 0, or 2 after printing the error. */
static int load_settings(kc_conf_t *conf, int argc, char **argv, bool *print_config)
{
    char err[512];
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("kcoord %s\n", KCOORD_VERSION);
            exit(0);
        } else if (strcmp(argv[i], "--print-config") == 0) {
            *print_config = true;
        } else if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            if (++i == argc) {
                fprintf(stderr, "kcoord: %s needs a file name\n", argv[i - 1]);
                return 2;
            }
            file = argv[i];
        } else if (strcmp(argv[i], "--set") == 0) {
            if (++i == argc) {
                fprintf(stderr, "kcoord: --set needs key=value\n");
                return 2;
            }
        } else {
            fprintf(stderr, "kcoord: unknown argument \"%s\" (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (file && kc_conf_load_file(conf, file, err, sizeof(err)) != 0) {
        fprintf(stderr, "kcoord: %s\n", err);
        return 2;
    }
    if (kc_conf_load_env(conf, environ, err, sizeof(err)) != 0) {
        fprintf(stderr, "kcoord: %s\n", err);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            i++;
        } else if (strcmp(argv[i], "--set") == 0) {
            char *kv = argv[++i];
            char *eq = strchr(kv, '=');
            if (eq == NULL) {
                fprintf(stderr, "kcoord: --set %s: expected key=value\n", kv);
                return 2;
            }
            *eq = '\0';
            int rc = kc_conf_set(conf, kv, eq + 1, KC_CONF_SRC_SET, err, sizeof(err));
            *eq = '=';
            if (rc != 0) {
                fprintf(stderr, "kcoord: %s\n", err);
                return 2;
            }
        }
    }
    if (kc_conf_check(conf, err, sizeof(err)) != 0) {
        fprintf(stderr, "kcoord: %s\n", err);
        return 2;
    }
    return 0;
}

/* Raise the soft open-file limit to the hard one (connections and the log share it), and
 * return how many descriptors connections must leave to the log: log.reserved.fds, or 4 per
 * __consumer_offsets partition (active segment and index, a roll's new pair, the cleaner's
 * files) plus 64 for the rest (directories, meta files, the HTTP listener). */
static int32_t reserve_fds(const kc_conf_t *conf)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            KC_WARN("main", "cannot raise the open-file limit from %llu to %llu: %s",
                    (unsigned long long)was, (unsigned long long)rl.rlim_max, strerror(errno));
    }
    int64_t reserve = conf->log_reserved_fds >= 0
                          ? conf->log_reserved_fds
                          : 4 * (int64_t)conf->offsets_topic_num_partitions + 64;
    if (reserve > INT32_MAX)
        reserve = INT32_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        KC_INFO("main", "open-file limit %llu, %lld kept for the log (log.reserved.fds)",
                (unsigned long long)rl.rlim_cur, (long long)reserve);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (uint64_t)reserve + 64 > (uint64_t)rl.rlim_cur)
        KC_WARN("main",
                "the open-file limit %llu leaves little room for connections beside the %lld "
                "descriptors kept for the log (log.reserved.fds)",
                (unsigned long long)rl.rlim_cur, (long long)reserve);
    return (int32_t)reserve;
}

/* The HTTP listener for /metrics, /healthz, /readyz and /v1/groups, after the Kafka ones: 0,
 * or a libuv error. Failing to take the default address only warns: another daemon on this
 * host may hold it. */
static int start_metrics(daemon_t *d, const kc_conf_t *conf)
{
    char err[512];
    kc_listener_t mlisten;
    size_t n_mlisten = 0;
    if (kc_conf_parse_listeners(conf->metrics_listener, &mlisten, 1, &n_mlisten, err, sizeof err) !=
            0 ||
        n_mlisten != 1)
        return 0;
    int mport = 0;
    if (conf->metrics_ssl_enabled) {
        d->tls_name[MAX_LISTENERS] = "metrics.listener";
        if ((d->tls[MAX_LISTENERS] = tls_for(&d->loop, conf, NULL)) == NULL)
            return UV_EINVAL;
    }
    d->obs = kc_obs_server_new(&d->loop, d->coord);
    if (d->obs != NULL)
        kc_obs_server_configure(d->obs, conf);
    if (d->obs != NULL)
        kc_obs_server_set_cluster(d->obs, d->cluster);
    if (d->obs != NULL && d->tls[MAX_LISTENERS] != NULL)
        kc_obs_server_set_tls(d->obs, d->tls[MAX_LISTENERS]);
    int rc = d->obs == NULL ? UV_ENOMEM
                            : kc_obs_server_listen(d->obs, mlisten.host, mlisten.port, &mport);
    const char *l = strchr(mlisten.host, ':') != NULL ? "[" : "";
    const char *r = *l != '\0' ? "]" : "";
    if (rc != 0 && kc_conf_get_source(conf, "metrics.listener") == KC_CONF_SRC_DEFAULT) {
        KC_WARN("main",
                "metrics.listener: cannot listen on the default %s%s%s:%d: %s; serving no "
                "metrics (set metrics.listener to choose an address)",
                l, mlisten.host, r, mlisten.port, uv_strerror(rc));
        kc_obs_server_close(d->obs);
        d->obs = NULL;
        rc = 0;
    } else if (rc != 0) {
        KC_ERROR("main", "metrics.listener: cannot listen on %s%s%s:%d: %s", l, mlisten.host, r,
                 mlisten.port, uv_strerror(rc));
    } else {
        KC_INFO("main", "metrics.listener: serving %s://%s%s%s:%d/metrics",
                conf->metrics_ssl_enabled ? "https" : "http", l, mlisten.host, r, mport);
    }
    return rc;
}

/* What the clients of listener `l` (bound to `port`) are told to connect to: the
 * advertised.listeners entry of its name, else the address it is bound to (the machine's host
 * name, into `hostname`, for a wildcard address). */
static void advertise(const char **host, int32_t *port, const kc_listener_t *advertised,
                      size_t n_advertised, const kc_listener_t *l, int bound_port, char *hostname,
                      size_t cap)
{
    for (size_t i = 0; i < n_advertised; i++) {
        if (strcmp(advertised[i].name, l->name) == 0) {
            *host = advertised[i].host;
            *port = advertised[i].port;
            return;
        }
    }
    *host = l->host;
    *port = bound_port;
    if (strcmp(*host, "0.0.0.0") == 0 || strcmp(*host, "::") == 0) {
        if (hostname[0] == '\0' && gethostname(hostname, cap) != 0)
            snprintf(hostname, cap, "localhost");
        hostname[cap - 1] = '\0';
        *host = hostname;
    }
}

int main(int argc, char **argv)
{
    /* Offline tools over a data directory: kcoord dump-log PATH..., kcoord verify-log DIR. */
    if (argc > 1 && (strcmp(argv[1], "dump-log") == 0 || strcmp(argv[1], "verify-log") == 0))
        return kc_log_tool_main(argc - 1, argv + 1);
    kc_conf_t conf;
    kc_conf_init(&conf);
    bool print_config = false;
    int rc = load_settings(&conf, argc, argv, &print_config);
    if (rc != 0 || print_config) {
        if (rc == 0)
            kc_conf_print(&conf, stdout);
        kc_conf_free(&conf);
        return rc;
    }
    kc_diag_set_level((kc_diag_level_t)conf.log_level);
    kc_diag_set_format((kc_diag_format_t)conf.log_format);
    signal(SIGPIPE, SIG_IGN);

    char err[512];
    kc_listener_t listeners[MAX_LISTENERS], advertised[MAX_LISTENERS];
    size_t n_listeners = 0, n_advertised = 0;
    if (kc_conf_parse_listeners(conf.listeners, listeners, MAX_LISTENERS, &n_listeners, err,
                                sizeof(err)) != 0 ||
        kc_conf_parse_listeners(conf.advertised_listeners, advertised, MAX_LISTENERS, &n_advertised,
                                err, sizeof(err)) != 0) {
        fprintf(stderr, "kcoord: %s\n", err);
        kc_conf_free(&conf);
        return 2;
    }
    int proto[MAX_LISTENERS];
    if (check_protocols(&conf, listeners, n_listeners, proto) != 0) {
        kc_conf_free(&conf);
        return 2;
    }

    /* Raise the soft open-file limit to the hard one, keep log.reserved.fds of it from
     * connections, and refuse to start when even the partitions' own files do not fit. */
    int32_t reserved_fds = reserve_fds(&conf);
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
        kc_conf_check_files(&conf, (uint64_t)nofile.rlim_cur, err, sizeof(err)) != 0) {
        KC_ERROR("main", "%s", err);
        kc_conf_free(&conf);
        return 1;
    }

    char cluster_id[64];
    if (probe_data_dir(conf.data_dir, err, sizeof(err)) != 0) {
        KC_ERROR("main", "%s", err);
        kc_conf_free(&conf);
        return 1;
    }
    char derived[23];
    if (conf.cluster_voters[0] != '\0')
        kc_cluster_conf_id(&conf, derived);
    if (kc_meta_load_as(conf.data_dir, conf.node_id,
                        conf.cluster_voters[0] != '\0' ? derived : NULL, cluster_id,
                        sizeof(cluster_id), err, sizeof(err)) != 0) {
        KC_ERROR("main", "data.dir: %s", err);
        kc_conf_free(&conf);
        return 1;
    }
    kc_catalog_t catalog;
    if (kc_catalog_init(&catalog, cluster_id, conf.topics, conf.n_topics) != 0) {
        KC_ERROR("main", "out of memory loading the topic catalog");
        kc_conf_free(&conf);
        return 1;
    }

    /* ACL bindings and SCRAM credentials (loaded from the metadata partition below), and the
     * SASL listeners' settings, checked before anything is opened. */
    kc_auth_t *auth = kc_auth_new(&(kc_auth_conf_t){
        .super_users = conf.super_users, .allow_if_no_acl = conf.allow_everyone_if_no_acl_found});
    const char *names[MAX_LISTENERS];
    for (size_t i = 0; i < n_listeners; i++)
        names[i] = listeners[i].name;
    kc_api_sasl_t *sasl =
        auth != NULL ? kc_api_sasl_new(&conf, names, proto, n_listeners, auth, err, sizeof(err))
                     : NULL;
    if (sasl == NULL) {
        fprintf(stderr, "kcoord: %s\n", auth != NULL ? err : "out of memory");
        kc_auth_free(auth);
        kc_catalog_free(&catalog);
        kc_conf_free(&conf);
        return 2;
    }
    daemon_t d;
    memset(&d, 0, sizeof(d));
    uv_loop_init(&d.loop);
    for (size_t i = 0; i < n_listeners; i++) {
        d.tls_name[i] = listeners[i].name;
        if ((proto[i] == KC_CONF_SEC_SSL || proto[i] == KC_CONF_SEC_SASL_SSL) &&
            (d.tls[i] = tls_for(&d.loop, &conf, listeners[i].name)) == NULL) {
            for (size_t k = 0; k < i; k++)
                kc_net_tls_close(d.tls[k]);
            uv_run(&d.loop, UV_RUN_DEFAULT);
            uv_loop_close(&d.loop);
            kc_api_sasl_free(sasl);
            kc_auth_free(auth);
            kc_catalog_free(&catalog);
            kc_conf_free(&conf);
            return 2;
        }
    }
    kc_api_ctx_t ctx = {.node_id = conf.node_id,
                        .catalog = &catalog,
                        .conf = &conf,
                        .loop = &d.loop,
                        .auth = auth,
                        .sasl = sasl};
    bool clustered = conf.cluster_voters[0] != '\0';
    char cl_err[512];
    if (clustered && kc_cluster_check_data_dir(&conf, cl_err, sizeof(cl_err)) != 0) {
        KC_ERROR("main", "%s; refusing to start", cl_err);
        return 2;
    }
    d.coord = kc_coord_new(&d.loop, &conf, &catalog, &kc_api_group_replies, NULL);
    if (d.coord == NULL) {
        KC_ERROR("main", "out of memory");
        return 1;
    }
    if (clustered) {
        kc_cluster_ops_t ops;
        kc_coord_cluster_ops(d.coord, &ops);
        d.cluster = kc_cluster_new(&d.loop, &conf, &ops, cl_err, sizeof(cl_err));
        if (d.cluster != NULL) {
            kc_coord_set_cluster(d.coord, d.cluster);
            if (kc_cluster_start(d.cluster, cl_err, sizeof(cl_err)) != 0)
                d.cluster = NULL; /* its handles are closed with the process */
        }
        if (d.cluster == NULL) {
            KC_ERROR("main", "%s; refusing to start", cl_err);
            return 2;
        }
        ctx.cluster = d.cluster;
    }
    kc_coord_set_events(d.coord, &kc_obs_coord_events); /* log events count in the metrics */
    kc_net_set_events(&kc_obs_net_events);              /* and so do connection events */
    ctx.coord = d.coord;
    /* ACL bindings and SCRAM credentials: their records in the metadata partition, which
     * kc_coord_new has loaded. */
    char auth_err[256];
    if (kc_api_auth_load(&ctx, auth_err, sizeof(auth_err)) != 0) {
        KC_ERROR("main", "%s; refusing to start", auth_err);
        return 1;
    }
    d.api = &ctx;
    kc_server_opts_t opts = {
        .max_request_bytes = conf.socket_request_max_bytes,
        .idle_ms = conf.connections_max_idle_ms,
        .max_queued = conf.queued_max_requests,
        .max_request_bytes_queued = conf.queued_max_request_bytes,
        .conn_unsent_bytes = conf.connection_max_unsent_bytes,
        .max_unsent_bytes = conf.queued_max_unsent_bytes,
        .max_connections = conf.max_connections,
        .max_connections_per_ip = conf.max_connections_per_ip,
        .reserved_fds = reserved_fds,
        .on_request = kc_api_on_request,
        .app = &ctx,
    };
    d.server = kc_server_new(&d.loop, &opts);
    if (d.server == NULL) {
        KC_ERROR("main", "out of memory");
        return 1;
    }
    char hostname[256] = "";
    for (size_t i = 0; i < n_listeners; i++) {
        int port = 0;
        kc_net_endpoint_t *ep = NULL;
        kc_net_listen_opts_t lo = {.host = listeners[i].host,
                                   .port = listeners[i].port,
                                   .name = listeners[i].name,
                                   .protocol = proto[i],
                                   .tls = d.tls[i]};
        if (proto[i] == KC_CONF_SEC_SASL_PLAINTEXT || proto[i] == KC_CONF_SEC_SASL_SSL)
            lo.first_frames_max = (uint32_t)conf.sasl_server_max_receive_size;
        rc = kc_server_listen_on(d.server, &lo, &port, &ep);
        if (rc != 0) {
            KC_ERROR("main", "listeners: cannot listen on %s:%d: %s", listeners[i].host,
                     listeners[i].port, uv_strerror(rc));
            break;
        }
        const char *host;
        int32_t aport;
        advertise(&host, &aport, advertised, n_advertised, &listeners[i], port, hostname,
                  sizeof(hostname));
        kc_net_endpoint_advertise(ep, host, aport);
        if (i == 0) { /* the address of the first listener, for a connection without one */
            ctx.host = host;
            ctx.port = aport;
        }
    }

    if (rc == 0)
        rc = start_metrics(&d, &conf);

    uv_signal_init(&d.loop, &d.sigterm);
    uv_signal_init(&d.loop, &d.sigint);
    uv_signal_init(&d.loop, &d.sighup);
    d.sighup.data = &d;
    uv_signal_init(&d.loop, &d.sigusr1);
    d.sigusr1.data = &d;
    uv_timer_init(&d.loop, &d.log_flush);
    uv_timer_start(&d.log_flush, on_log_flush, 1000, 1000);
    uv_unref((uv_handle_t *)&d.log_flush);
    d.sigterm.data = &d;
    d.sigint.data = &d;
    if (rc == 0) {
        uv_signal_start(&d.sigterm, on_signal, SIGTERM);
        uv_signal_start(&d.sigint, on_signal, SIGINT);
        uv_signal_start(&d.sighup, on_sighup, SIGHUP);
        uv_signal_start(&d.sigusr1, on_sigusr1, SIGUSR1);
        KC_INFO("main", "kcoord %s serving cluster %s as node %d, advertised as %s:%d, %zu topics",
                KCOORD_VERSION, cluster_id, conf.node_id, ctx.host, ctx.port, catalog.n);
    } else {
        d.stopping = 1;
        if (d.obs != NULL) {
            kc_obs_server_close(d.obs);
            d.obs = NULL;
        }
        if (d.cluster != NULL) {
            kc_coord_set_cluster(d.coord, NULL);
            ctx.cluster = NULL;
            kc_cluster_close(d.cluster, NULL, NULL);
            d.cluster = NULL;
        }
        kc_coord_close(d.coord, NULL, NULL);
        d.coord = NULL;
        ctx.coord = NULL;
        kc_server_shutdown(d.server, on_server_stopped, &d);
    }
    uv_run(&d.loop, UV_RUN_DEFAULT);
    kc_server_free(d.server);
    kc_api_sasl_free(ctx.sasl);
    kc_auth_free(ctx.auth);
    int close_rc = uv_loop_close(&d.loop);
    if (close_rc != 0)
        KC_WARN("main", "event loop closed with handles still open");
    kc_catalog_free(&catalog);
    kc_conf_free(&conf);
    if (rc != 0)
        return 1;
    KC_INFO("main", "stopped");
    return 0;
}
