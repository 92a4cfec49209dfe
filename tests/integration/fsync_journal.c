/* fsync_journal.c - an LD_PRELOAD shim that journals what a process made durable, so that a
 * crash test can turn its kill -9 into a power loss.
 *
 * Every successful fsync(2) or fdatasync(2) of a regular file appends one line
 *
 *     <size> <path>\n
 *
 * to the file named by $KC_FSYNC_JOURNAL: `size` is the file's size when the call began, so
 * every byte below it was on disk when the call returned; `path` is the file's path as
 * /proc/self/fd names it. The line is written (one write(2) to an O_APPEND descriptor, so lines
 * never interleave) after the real call returns and before the caller sees its result: whatever
 * the caller does because the data is durable (kcoord acknowledging a commit) happens after the
 * line exists. After killing the process, tests/crash/crash_test.py cuts each segment back to the
 * last size journaled for it, dropping what only the page cache held, as a power loss could.
 *
 * Without $KC_FSYNC_JOURNAL the shim only passes the calls through. It is not part of the
 * Makefile's build: tests/crash/crash_test.py compiles it with `cc -shared` into its temporary
 * directory.
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

/* The size of fd when it is a regular file, else -1. */
static long long regular_size(int fd)
{
    struct stat st;
    if (journal_fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    return (long long)st.st_size;
}

static void journal(int fd, long long size)
{
    char link[64], path[4096], line[4200];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0)
        return;
    path[n] = '\0';
    int len = snprintf(line, sizeof(line), "%lld %s\n", size, path);
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
    long long size = regular_size(fd);
    errno = saved;
    int rc = real(fd);
    if (rc == 0 && size >= 0) {
        journal(fd, size);
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
