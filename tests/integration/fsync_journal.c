/* fsync_journal.c - an LD_PRELOAD shim that journals what a process made durable, so that a
 * crash test can turn its kill -9 into a power loss.
 *
 * Every successful fsync(2) or fdatasync(2) of a regular file appends one line
 *
 *     <size> <inode> <path>\n
 *
 * to the file named by $KC_FSYNC_JOURNAL: `size` is the file's size when the call began, so
 * every byte below it was on disk when the call returned; `inode` is its inode number (a file
 * fsynced and then renamed, as a log cleaner's output or a raft segment being closed, is found
 * by it under its new name); `path` is the file's path as /proc/self/fd names it at the call.
 * The line is written (one write(2) to an O_APPEND descriptor, so lines
 * never interleave) after the real call returns and before the caller sees its result: whatever
 * the caller does because the data is durable (kcoord acknowledging a commit) happens after the
 * line exists. After killing the process, tests/crash/crash_test.py cuts each segment back to the
 * last size journaled for it, dropping what only the page cache held, as a power loss could;
 * tests/chaos/chaos.py does the same to a cluster node's every file, by inode.
 *
 * Without $KC_FSYNC_JOURNAL the shim only passes the calls through. It is not part of the
 * Makefile's build: tests/crash/crash_test.py and tests/chaos/chaos.py compile it with
 * `cc -shared` into their temporary directories.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int journal_fd = -1;

__attribute__((constructor)) static void journal_open(void)
{
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    const char *path = getenv("KC_FSYNC_JOURNAL");
    if (path != NULL && path[0] != '\0')
        journal_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

/* The size of fd when it is a regular file (and its inode in *ino), else -1. */
static long long regular_size(int fd, unsigned long long *ino)
{
    struct stat st;
    if (journal_fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    *ino = (unsigned long long)st.st_ino;
    return (long long)st.st_size;
}

static void journal(int fd, long long size, unsigned long long ino)
{
    char link[64], path[4096], line[4200];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0)
        return;
    path[n] = '\0';
    int len = snprintf(line, sizeof(line), "%lld %llu %s\n", size, ino, path);
    if (len > 0 && (size_t)len < sizeof(line)) {
        ssize_t ignored = write(journal_fd, line, (size_t)len);
        (void)ignored;
    }
}

static int synced(int (*real)(int), const char *name, int fd)
{
    if (real == NULL) /* called before the constructor ran */
        real = (int (*)(int))dlsym(RTLD_NEXT, name);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int saved = errno;
    unsigned long long ino = 0;
    long long size = regular_size(fd, &ino);
    errno = saved;
    int rc = real(fd);
    if (rc == 0 && size >= 0) {
        journal(fd, size, ino);
        errno = saved;
    }
    return rc;
}

int fsync(int fd)
{
    return synced(real_fsync, "fsync", fd);
}

int fdatasync(int fd)
{
    return synced(real_fdatasync, "fdatasync", fd);
}
