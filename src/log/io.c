/* io.c - the POSIX implementation of the log's I/O table, and helpers over any table.
 *
 * Each operation is the system call, retried on EINTR, with errno turned into a negative
 * return value. Nothing here keeps state, so the table is shared by every log and thread.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* pread, pwrite, ftruncate, strdup, O_CLOEXEC */
#endif

#include "log/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int p_open(void *ctx, const char *path, int flags, int mode)
{
    (void)ctx;
    int fd;
    do
        fd = open(path, flags | O_CLOEXEC, (mode_t)mode);
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

static int64_t p_pread(void *ctx, int fd, void *buf, size_t n, int64_t off)
{
    (void)ctx;
    ssize_t r;
    do
        r = pread(fd, buf, n, (off_t)off);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : (int64_t)r;
}

static int64_t p_pwrite(void *ctx, int fd, const void *buf, size_t n, int64_t off)
{
    (void)ctx;
    ssize_t r;
    do
        r = pwrite(fd, buf, n, (off_t)off);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : (int64_t)r;
}

static int p_fsync(void *ctx, int fd)
{
    (void)ctx;
    int r;
    do
        r = fsync(fd);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static int p_ftruncate(void *ctx, int fd, int64_t size)
{
    (void)ctx;
    int r;
    do
        r = ftruncate(fd, (off_t)size);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static int64_t p_fsize(void *ctx, int fd)
{
    (void)ctx;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    return (int64_t)st.st_size;
}

static int p_close(void *ctx, int fd)
{
    (void)ctx;
    /* Linux closes the descriptor even when close fails with EINTR: never retry. */
    return close(fd) != 0 && errno != EINTR ? -errno : 0;
}

static int p_rename(void *ctx, const char *from, const char *to)
{
    (void)ctx;
    return rename(from, to) != 0 ? -errno : 0;
}

static int p_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return unlink(path) != 0 ? -errno : 0;
}

static int p_mkdir(void *ctx, const char *path, int mode)
{
    (void)ctx;
    return mkdir(path, (mode_t)mode) != 0 ? -errno : 0;
}

static int p_listdir(void *ctx, const char *path, int (*fn)(void *arg, const char *name), void *arg)
{
    (void)ctx;
    DIR *d = opendir(path);
    if (d == NULL)
        return -errno;
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (e == NULL) {
            if (errno != 0)
                rc = -errno;
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        rc = fn(arg, e->d_name);
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

static void fill_stat(const struct stat *st, kc_log_stat_t *out)
{
    out->dev = (uint64_t)st->st_dev;
    out->ino = (uint64_t)st->st_ino;
    out->nlink = (uint64_t)st->st_nlink;
    out->size = (int64_t)st->st_size;
}

static int p_fstat(void *ctx, int fd, kc_log_stat_t *out)
{
    (void)ctx;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    fill_stat(&st, out);
    return 0;
}

static int p_stat(void *ctx, const char *path, kc_log_stat_t *out)
{
    (void)ctx;
    struct stat st;
    if (stat(path, &st) != 0)
        return -errno;
    fill_stat(&st, out);
    return 0;
}

static const kc_log_io_t posix_io = {
    .ctx = NULL,
    .open = p_open,
    .pread = p_pread,
    .pwrite = p_pwrite,
    .fsync = p_fsync,
    .ftruncate = p_ftruncate,
    .fsize = p_fsize,
    .close = p_close,
    .rename = p_rename,
    .unlink = p_unlink,
    .mkdir = p_mkdir,
    .listdir = p_listdir,
    .fstat = p_fstat,
    .stat = p_stat,
};

const kc_log_io_t *kc_log_io_posix(void)
{
    return &posix_io;
}

int kc_log_io_write_all(const kc_log_io_t *io, int fd, const void *buf, size_t n, int64_t off)
{
    const uint8_t *p = buf;
    while (n > 0) {
        int64_t w = io->pwrite(io->ctx, fd, p, n, off);
        if (w < 0)
            return (int)w;
        if (w == 0 || (uint64_t)w > n)
            return -EIO;
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

int kc_log_io_read_all(const kc_log_io_t *io, int fd, void *buf, size_t n, int64_t off)
{
    uint8_t *p = buf;
    while (n > 0) {
        int64_t r = io->pread(io->ctx, fd, p, n, off);
        if (r < 0)
            return (int)r;
        if (r == 0)
            return -ENODATA;
        if ((uint64_t)r > n)
            return -EIO;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

int kc_log_io_fsync_dir(const kc_log_io_t *io, const char *path)
{
    int fd = io->open(io->ctx, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    int rc = io->fsync(io->ctx, fd);
    int rc2 = io->close(io->ctx, fd);
    return rc != 0 ? rc : rc2;
}
