/* meta.c - the data directory's own files: <data.dir>/meta.properties and Kafka's
 * clean-shutdown marker <data.dir>/.kafka_cleanshutdown.
 *
 * meta.properties is written once, crash-safely: to meta.properties.tmp, fsync, rename, fsync
 * of the directory. Reading accepts any Java-properties file that has cluster.id; a node.id in
 * it must match the configured one, as Kafka requires.
 *
 * The clean-shutdown marker (log.h) goes through the log's I/O table, like every other file
 * the partition logs depend on, so tests can fail its removal or its write.
 */
#include "log/meta.h"

#include "log/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            buf[i] = c;
        }
    }
    return 0;
}

static int random_bytes(uint8_t *p, size_t n)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r <= 0) {
            close(fd);
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    return 0;
}

void kc_meta_format_cluster_id(const uint8_t bytes[16], char out[23])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t u[18] = {0};
    memcpy(u, bytes, 16);
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    size_t o = 0;
    for (size_t i = 0; i < 18; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];
        for (int k = 3; k >= 0; k--)
            if (o < 22 && !(i == 15 && k < 1))
                out[o++] = b64[(v >> (6 * k)) & 63];
    }
    out[22] = '\0';
}

/* A new cluster or directory id: a random version-4 UUID in URL-safe base64 without padding,
 * never starting with '-', as Kafka's Uuid.randomUuid: the id is typed on command lines
 * (kafka-metadata-quorum remove-controller --controller-directory-id), where a leading '-'
 * reads as an option. */
static int new_cluster_id(char out[23])
{
    do {
        uint8_t u[16];
        if (random_bytes(u, 16) != 0)
            return -1;
        kc_meta_format_cluster_id(u, out);
    } while (out[0] == '-');
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* meta.properties at `path`: its cluster id into cluster_id (len bytes), its directory id (22
 * characters, "" when it has none) into dir_id; node.id, when node_id >= 0, must match. */
static int read_meta(const char *path, int32_t node_id, char *cluster_id, size_t len,
                     char dir_id[23], char *err, size_t errlen)
{
    dir_id[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int have_cluster = 0;
    while (fgets(line, sizeof(line), f)) {
        char *s = trim(line);
        if (*s == '#' || *s == '!' || *s == '\0')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        if (strcmp(key, "cluster.id") == 0) {
            if (strlen(val) == 0 || strlen(val) >= len) {
                snprintf(err, errlen, "%s: invalid cluster.id \"%s\"", path, val);
                fclose(f);
                return -1;
            }
            strcpy(cluster_id, val);
            have_cluster = 1;
        } else if (strcmp(key, "directory.id") == 0 && strlen(val) == 22) {
            memcpy(dir_id, val, 23);
        } else if (node_id >= 0 && (strcmp(key, "node.id") == 0 || strcmp(key, "broker.id") == 0)) {
            char *end;
            long id = strtol(val, &end, 10);
            if (*end != '\0' || id != node_id) {
                snprintf(err, errlen,
                         "%s: node.id %s does not match the configured node.id %d (this data "
                         "directory belongs to another node)",
                         path, val, node_id);
                fclose(f);
                return -1;
            }
        }
    }
    fclose(f);
    if (!have_cluster) {
        snprintf(err, errlen, "%s: no cluster.id", path);
        return -1;
    }
    return 0;
}

static int write_meta(const char *dir, const char *path, int32_t node_id, const char *cluster_id,
                      const char *dir_id, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    char text[512];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char when[64];
    strftime(when, sizeof(when), "%a %b %d %H:%M:%S UTC %Y", &tm);
    int n = snprintf(text, sizeof(text),
                     "#\n#%s\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n", when,
                     node_id, dir_id, cluster_id);
    int ok = write(fd, text, (size_t)n) == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int kc_meta_load(const char *data_dir, int32_t node_id, char *cluster_id, size_t cluster_id_len,
                 char *err, size_t errlen)
{
    return kc_meta_load_as(data_dir, node_id, NULL, cluster_id, cluster_id_len, err, errlen);
}

int kc_meta_load_as(const char *data_dir, int32_t node_id, const char *want, char *cluster_id,
                    size_t cluster_id_len, char *err, size_t errlen)
{
    if (mkdir_p(data_dir) != 0) {
        snprintf(err, errlen, "data.dir %s: cannot create: %s", data_dir, strerror(errno));
        return -1;
    }
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s/meta.properties", data_dir) >= sizeof(path)) {
        snprintf(err, errlen, "data.dir: path too long");
        return -1;
    }
    char dir_id[23];
    if (access(path, F_OK) == 0) {
        if (read_meta(path, node_id, cluster_id, cluster_id_len, dir_id, err, errlen) != 0)
            return -1;
        if (want != NULL && strcmp(want, cluster_id) != 0) {
            snprintf(err, errlen,
                     "%s: cluster.id %s is not the cluster's (%s): this data directory belongs "
                     "to another cluster",
                     path, cluster_id, want);
            return -1;
        }
        /* A file from before directory ids (or another writer's without one) gets one, as
         * Kafka 3.7+ adds it to its log directories' meta.properties. */
        if (dir_id[0] == '\0' &&
            (new_cluster_id(dir_id) != 0 ||
             write_meta(data_dir, path, node_id, cluster_id, dir_id, err, errlen) != 0)) {
            if (dir_id[0] == '\0')
                snprintf(err, errlen, "cannot generate a directory id");
            return -1;
        }
        return 0;
    }
    char id[23];
    if (want != NULL && strlen(want) < sizeof(id))
        strcpy(id, want);
    else if (cluster_id_len < sizeof(id) || new_cluster_id(id) != 0) {
        snprintf(err, errlen, "cannot generate a cluster id");
        return -1;
    }
    if (cluster_id_len < sizeof(id)) {
        snprintf(err, errlen, "cluster id buffer too small");
        return -1;
    }
    if (new_cluster_id(dir_id) != 0) {
        snprintf(err, errlen, "cannot generate a directory id");
        return -1;
    }
    if (write_meta(data_dir, path, node_id, id, dir_id, err, errlen) != 0)
        return -1;
    strcpy(cluster_id, id);
    return 0;
}

int kc_meta_directory_id(const char *data_dir, char out[23], char *err, size_t errlen)
{
    char path[4096], cluster_id[64];
    if ((size_t)snprintf(path, sizeof(path), "%s/meta.properties", data_dir) >= sizeof(path)) {
        snprintf(err, errlen, "data.dir: path too long");
        return -1;
    }
    if (read_meta(path, -1, cluster_id, sizeof(cluster_id), out, err, errlen) != 0)
        return -1;
    if (out[0] == '\0') {
        snprintf(err, errlen, "%s: no directory.id", path);
        return -1;
    }
    return 0;
}

/* ---- the clean-shutdown marker ------------------------------------------------------------- */

static int marker_path(char *buf, size_t n, const char *data_dir)
{
    int w = snprintf(buf, n, "%s/%s", data_dir, KC_LOG_CLEAN_SHUTDOWN_FILE);
    return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int kc_log_clean_shutdown_take(const kc_log_io_t *io, const char *data_dir, bool *was_clean)
{
    *was_clean = false;
    char path[4096];
    int rc = marker_path(path, sizeof(path), data_dir);
    if (rc != 0)
        return rc;
    rc = io->unlink(io->ctx, path);
    if (rc == -ENOENT)
        return 0; /* no marker: the last run did not shut down cleanly (or there was none) */
    if (rc == 0)
        rc = kc_log_io_fsync_dir(io, data_dir);
    if (rc != 0)
        return rc;
    *was_clean = true;
    return 0;
}

int kc_log_clean_shutdown_mark(const kc_log_io_t *io, const char *data_dir)
{
    static const char text[] = "{\"version\":\"0\",\"broker_epoch\":\"-1\"}";
    char path[4096];
    int rc = marker_path(path, sizeof(path), data_dir);
    if (rc != 0)
        return rc;
    int fd = io->open(io->ctx, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return fd;
    rc = kc_log_io_write_all(io, fd, text, sizeof(text) - 1, 0);
    if (rc == 0)
        rc = io->fsync(io->ctx, fd);
    int rc2 = io->close(io->ctx, fd);
    if (rc == 0)
        rc = rc2;
    if (rc == 0)
        rc = kc_log_io_fsync_dir(io, data_dir);
    if (rc != 0)
        (void)io->unlink(io->ctx, path); /* half a marker must not vouch for anything */
    return rc;
}
