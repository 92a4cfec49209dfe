/* io.h - the log room's file I/O, behind a table of function pointers.
 *
 * Every file operation of src/log/ (segments, indexes, directories) goes through a kc_log_io_t,
 * so tests can put their own table in front of the real one and inject short writes, EIO,
 * ENOSPC or a crash (drop or garble what was not fsynced) at a chosen call. kc_log_io_posix()
 * is the real thing.
 *
 * Conventions, as libuv's: a function returns 0 (or a count, or a descriptor) on success and a
 * negative errno value on failure (-EIO, -ENOSPC, ...), never -1 with errno. Paths are
 * NUL-terminated. Descriptors are plain ints that only the same table understands. There is no
 * write(2)-style call: the log always knows the position it writes at, so pwrite says it.
 *
 * A table and its ctx must outlive every kc_plog_t opened with it. The POSIX table is
 * stateless and may be used from any thread; a test table decides its own rules.
 */
#ifndef KC_LOG_IO_H
#define KC_LOG_IO_H

#include <stddef.h>
#include <stdint.h>

/* What kc_log_io_t's fstat and stat report of a file. */
typedef struct kc_log_stat_s {
    uint64_t dev, ino; /* st_dev, st_ino: which file it is */
    uint64_t nlink;    /* st_nlink: 0 once the file has no name left */
    int64_t size;
} kc_log_stat_t;

typedef struct kc_log_io_s {
    void *ctx; /* passed as the first argument of every call */
    /* open(2): `flags` are open(2) flags (O_RDONLY, O_RDWR | O_CREAT, O_DIRECTORY, ...), and
     * O_CLOEXEC is added by the implementation. Returns a descriptor >= 0 or -errno. */
    int (*open)(void *ctx, const char *path, int flags, int mode);
    /* pread(2): up to n bytes at `off`. Returns the count (0 at end of file) or -errno. */
    int64_t (*pread)(void *ctx, int fd, void *buf, size_t n, int64_t off);
    /* pwrite(2): up to n bytes at `off`. Returns the count, which may be short, or -errno.
     * Callers loop on short counts (see kc_log_io_write_all). */
    int64_t (*pwrite)(void *ctx, int fd, const void *buf, size_t n, int64_t off);
    /* fsync(2) of a file or of a directory opened with O_RDONLY | O_DIRECTORY. */
    int (*fsync)(void *ctx, int fd);
    /* ftruncate(2). */
    int (*ftruncate)(void *ctx, int fd, int64_t size);
    /* The current size of the open file, or -errno. */
    int64_t (*fsize)(void *ctx, int fd);
    /* close(2). The descriptor is gone even when this fails. */
    int (*close)(void *ctx, int fd);
    /* rename(2), unlink(2). */
    int (*rename)(void *ctx, const char *from, const char *to);
    int (*unlink)(void *ctx, const char *path);
    /* mkdir(2): 0 when created, -EEXIST when something of that name exists, or -errno. */
    int (*mkdir)(void *ctx, const char *path, int mode);
    /* Call fn(arg, name) for every entry of the directory but "." and "..", in no particular
     * order. Stops at the first fn that returns nonzero and returns that value; else 0, or
     * -errno when the directory cannot be read. */
    int (*listdir)(void *ctx, const char *path, int (*fn)(void *arg, const char *name), void *arg);
    /* fstat(2) of an open file, stat(2) of a path (following symlinks). Return 0 or -errno.
     * Either may be NULL in a test table: the log then skips its checks that a segment is
     * still the file of its name (kc_plog_append). */
    int (*fstat)(void *ctx, int fd, kc_log_stat_t *st);
    int (*stat)(void *ctx, const char *path, kc_log_stat_t *st);
} kc_log_io_t;

/* The table that calls the operating system. Static; never NULL. */
const kc_log_io_t *kc_log_io_posix(void);

/* Write all n bytes at `off`, looping over short writes. Returns 0, the first error, or -EIO
 * when a pwrite makes no progress. After a failure an unknown prefix may have been written. */
int kc_log_io_write_all(const kc_log_io_t *io, int fd, const void *buf, size_t n, int64_t off);

/* Read exactly n bytes at `off`. Returns 0, -errno, or -ENODATA when the file ends first. */
int kc_log_io_read_all(const kc_log_io_t *io, int fd, void *buf, size_t n, int64_t off);

/* fsync a directory: open it read-only, fsync, close. Returns 0 or -errno. */
int kc_log_io_fsync_dir(const kc_log_io_t *io, const char *path);

#endif
