/* harness.c - start, watch and stop a real kcoord; raw Kafka frames over plain sockets.
 *
 * kc_proc_start forks and execs the daemon with its stdout and stderr on one pipe, and reads
 * that pipe with poll() (bounded by KC_START_TIMEOUT_MS) until the daemon logs
 * "listening on 127.0.0.1:PORT". From then on a thread keeps draining the pipe into an
 * in-memory log until the daemon closes it, so the daemon never blocks on a full pipe and the
 * log can be printed when a test fails. kc_proc_stop sends SIGTERM and waits for the exit on a
 * pidfd (bounded by KC_STOP_TIMEOUT_MS, then SIGKILL). The child gets PR_SET_PDEATHSIG, so a
 * test binary that crashes takes its daemons with it.
 *
 * The daemon gets the environment without KCOORD_* variables, which it would read as settings.
 * Everything the harness opens is close-on-exec, so a daemon never inherits another daemon's
 * pipe or a test's sockets. Sockets are read with MSG_DONTWAIT and poll(), so every wait has a
 * deadline and nothing sleeps a fixed time.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_EXTRA_SETS = 32,
    ARGV_CAP = 2 + 2 * (3 + MAX_EXTRA_SETS), /* the daemon's argv, NULL included */
    LOG_MAX = 16 << 20,                      /* keep at most this much of a daemon's output */
    LOG_PRINT_MAX = 64 << 10,                /* print at most this much of its tail */
    FRAME_MAX = 64 << 20,                    /* refuse response frames larger than this */
};

static const char LISTEN_MARK[] = "listening on 127.0.0.1:";

/* ---- Time ------------------------------------------------------------------------------------ */

int64_t kc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds until `deadline`, 0 once it has passed. */
static int left_ms(int64_t deadline)
{
    int64_t d = deadline - kc_now_ms();
    return d > 0 ? (int)d : 0;
}

/* ---- Child processes ------------------------------------------------------------------------- */

/* The status as kc_proc_stop reports it: the exit code, or 128 + the signal. */
static int decode_status(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return -1;
}

/* Reap `pid` within `timeout_ms`, waiting on a pidfd. Returns 0 with *ws set, or -1 on timeout
 * or error (the child is then still unreaped). */
static int wait_exit(pid_t pid, int timeout_ms, int *ws)
{
    int64_t deadline = kc_now_ms() + timeout_ms;
    int pfd = -1;
#ifdef SYS_pidfd_open
    pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    int rc = -1;
    for (;;) {
        pid_t r = waitpid(pid, ws, WNOHANG);
        if (r == pid) {
            rc = 0;
            break;
        }
        if (r < 0 && errno != EINTR)
            break;
        int left = left_ms(deadline);
        if (left == 0)
            break;
        if (pfd >= 0) {
            struct pollfd q = {.fd = pfd, .events = POLLIN};
            poll(&q, 1, left);
        } else {
            /* No pidfd (kernel older than 5.3): look again every 10 ms. */
            poll(NULL, 0, left < 10 ? left : 10);
        }
    }
    if (pfd >= 0)
        close(pfd);
    return rc;
}

/* In a freshly forked child: stdin from /dev/null, stdout and stderr to `out`, then exec with
 * `envp`, or the current environment when it is NULL. Only async-signal-safe calls here: the
 * parent may have other threads. */
static void exec_child(int out, const char *path, char *const *argv, char *const *envp)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    dup2(out, 1);
    dup2(out, 2);
    if (envp == NULL)
        execvp(path, argv);
    else
        execve(path, argv, envp);
    static const char msg[] = "harness: exec failed\n";
    ssize_t ignored = write(2, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* ---- The daemon's log ------------------------------------------------------------------------ */

static void log_append(kc_proc_t *p, const char *s, size_t n)
{
    pthread_mutex_lock(&p->log_mu);
    if (p->log_len + n + 1 > p->log_cap && p->log_len + n + 1 <= LOG_MAX) {
        size_t cap = p->log_cap ? p->log_cap : 4096;
        while (cap < p->log_len + n + 1)
            cap *= 2;
        char *grown = realloc(p->log, cap);
        if (grown != NULL) {
            p->log = grown;
            p->log_cap = cap;
        }
    }
    if (p->log_len + n + 1 <= p->log_cap) {
        memcpy(p->log + p->log_len, s, n);
        p->log_len += n;
        p->log[p->log_len] = '\0';
    }
    pthread_cond_broadcast(&p->log_cv);
    pthread_mutex_unlock(&p->log_mu);
}

/* Whether a line of the current run's log contains `a` and (unless NULL) `b`. Called with
 * log_mu held. */
static int log_has(const kc_proc_t *p, const char *a, const char *b)
{
    if (p->log == NULL)
        return 0;
    const char *s = p->log + p->run_from, *end = p->log + p->log_len;
    while (s != NULL && s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        if (memmem(s, n, a, strlen(a)) != NULL && (b == NULL || memmem(s, n, b, strlen(b))))
            return 1;
        s = nl ? nl + 1 : NULL;
    }
    return 0;
}

int kc_proc_wait_log(kc_proc_t *p, const char *a, const char *b, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&p->log_mu);
    int found;
    while (!(found = log_has(p, a, b)) && !p->log_eof)
        if (pthread_cond_timedwait(&p->log_cv, &p->log_mu, &until) == ETIMEDOUT)
            break;
    if (!found)
        found = log_has(p, a, b);
    pthread_mutex_unlock(&p->log_mu);
    return found;
}

/* The port of the first complete "listening on 127.0.0.1:PORT" in the current run's log, or
 * 0. */
static int find_port(kc_proc_t *p)
{
    int port = 0;
    pthread_mutex_lock(&p->log_mu);
    const char *m = p->log ? memmem(p->log + p->run_from, p->log_len - p->run_from, LISTEN_MARK,
                                    sizeof(LISTEN_MARK) - 1)
                           : NULL;
    if (m != NULL) {
        const char *d = m + sizeof(LISTEN_MARK) - 1, *end = p->log + p->log_len;
        long v = 0;
        while (d < end && *d >= '0' && *d <= '9' && v <= 65535)
            v = v * 10 + (*d++ - '0');
        /* Only a number followed by something is complete. */
        if (d < end && d > m + sizeof(LISTEN_MARK) - 1 && v > 0 && v <= 65535)
            port = (int)v;
    }
    pthread_mutex_unlock(&p->log_mu);
    return port;
}

/* The drain thread: copy the daemon's output into the log until it closes the pipe. */
static void *drain_main(void *arg)
{
    kc_proc_t *p = arg;
    char buf[4096];
    for (;;) {
        ssize_t n = read(p->out_fd, buf, sizeof(buf));
        if (n > 0)
            log_append(p, buf, (size_t)n);
        else if (n < 0 && errno == EINTR)
            continue;
        else
            break;
    }
    pthread_mutex_lock(&p->log_mu);
    p->log_eof = 1;
    pthread_cond_broadcast(&p->log_cv);
    pthread_mutex_unlock(&p->log_mu);
    return NULL;
}

void kc_proc_print_log(kc_proc_t *p)
{
    if (p->log == NULL) {
        fprintf(stderr, "---- kcoord log: empty ----\n");
        return;
    }
    pthread_mutex_lock(&p->log_mu);
    size_t from = p->log_len > LOG_PRINT_MAX ? p->log_len - LOG_PRINT_MAX : 0;
    fprintf(stderr, "---- kcoord log (port %d)%s ----\n%s", p->port, from ? ", last 64 KiB" : "",
            p->log + from);
    if (p->log_len > 0 && p->log[p->log_len - 1] != '\n')
        fputc('\n', stderr);
    fprintf(stderr, "---- end of kcoord log ----\n");
    pthread_mutex_unlock(&p->log_mu);
}

/* ---- Start and stop -------------------------------------------------------------------------- */

/* Whether `extra` (NULL-terminated) sets the key of `kv` ("key=value"). */
static int overridden(const char *const *extra, const char *kv)
{
    size_t klen = strcspn(kv, "=");
    for (; extra != NULL && *extra != NULL; extra++)
        if (strncmp(*extra, kv, klen) == 0 && (*extra)[klen] == '=')
            return 1;
    return 0;
}

static void free_argv(kc_proc_t *p)
{
    for (size_t i = 0; p->argv != NULL && i < ARGV_CAP; i++)
        free(p->argv[i]);
    free(p->argv);
    p->argv = NULL;
}

/* Undo a partial start: kill the child, release everything, leave *p all zero. */
static void abandon(kc_proc_t *p, const char *why)
{
    fprintf(stderr, "harness: kcoord did not start: %s\n", why);
    if (p->pid > 0) {
        int ws;
        kill(p->pid, SIGKILL);
        if (wait_exit(p->pid, KC_STOP_TIMEOUT_MS, &ws) == 0)
            fprintf(stderr, "harness: kcoord exit status %d\n", decode_status(ws));
    }
    kc_proc_print_log(p);
    if (p->out_fd >= 0)
        close(p->out_fd);
    if (p->dir[0] != '\0')
        nftw(p->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free_argv(p);
    free(p->log);
    pthread_mutex_destroy(&p->log_mu);
    pthread_cond_destroy(&p->log_cv);
    memset(p, 0, sizeof(*p));
}

/* Fork and exec the daemon with p->argv (stdout and stderr on a new pipe, the environment
 * without KCOORD_* variables), read its output until it logs its port, start the drain thread,
 * and wait for "partitions loaded". Only output from p->run_from on counts. Returns 0, or -1
 * with the reason in `why`, or -1 with `why` empty when the daemon started but did not load
 * its partitions (its log was printed; the caller stops it). */
static int spawn(kc_proc_t *p, char *why, size_t why_len)
{
    why[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(why, why_len, "pipe2: %s", strerror(errno));
        return -1;
    }
    /* The daemon reads KCOORD_* variables as settings and refuses unknown ones (KC_TEST_BIN):
     * it gets none, so only the settings above apply. */
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char **envp = calloc(n_env + 1, sizeof(*envp));
    if (envp == NULL) {
        close(fds[0]);
        close(fds[1]);
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    for (size_t i = 0, j = 0; i < n_env; i++)
        if (strncmp(environ[i], "KCOORD_", 7) != 0)
            envp[j++] = environ[i];
    p->log_eof = 0;
    p->port = 0;
    p->pid = fork();
    if (p->pid == 0)
        exec_child(fds[1], p->argv[0], p->argv, envp);
    free(envp);
    close(fds[1]);
    p->out_fd = fds[0];
    if (p->pid < 0) {
        p->pid = 0;
        snprintf(why, why_len, "fork: %s", strerror(errno));
        return -1;
    }

    int64_t deadline = kc_now_ms() + KC_START_TIMEOUT_MS;
    while ((p->port = find_port(p)) == 0) {
        int left = left_ms(deadline);
        if (left == 0) {
            snprintf(why, why_len, "no \"%s\" within %d ms", LISTEN_MARK, KC_START_TIMEOUT_MS);
            return -1;
        }
        struct pollfd q = {.fd = p->out_fd, .events = POLLIN};
        if (poll(&q, 1, left) <= 0)
            continue;
        char buf[4096];
        ssize_t n = read(p->out_fd, buf, sizeof(buf));
        if (n > 0) {
            log_append(p, buf, (size_t)n);
        } else if (n == 0 || errno != EINTR) {
            snprintf(why, why_len, "it closed its output before logging its port (did it exit?)");
            return -1;
        }
    }

    if (pthread_create(&p->drainer, NULL, drain_main, p) != 0) {
        snprintf(why, why_len, "pthread_create failed");
        return -1;
    }
    p->draining = 1;
    /* Partitions load in the background once the listener is open; tests start from a daemon
     * that serves every group (a client would be told COORDINATOR_LOAD_IN_PROGRESS and retry). */
    if (!kc_proc_wait_log(p, "partitions loaded", NULL, KC_START_TIMEOUT_MS)) {
        fprintf(stderr, "harness: kcoord did not finish loading its partitions\n");
        kc_proc_print_log(p);
        return -1;
    }
    return 0;
}

int kc_proc_start(kc_proc_t *p, const char *const *extra_sets)
{
    memset(p, 0, sizeof(*p));
    p->out_fd = -1;
    pthread_mutex_init(&p->log_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->log_cv, &ca);
    pthread_condattr_destroy(&ca);

    const char *bin = getenv("KC_TEST_BIN");
    if (bin == NULL || bin[0] == '\0')
        bin = "build/kcoord";
    char why[512];
    if (access(bin, X_OK) != 0) {
        snprintf(why, sizeof(why),
                 "cannot execute %s: %s (set KC_TEST_BIN or run in the repo root)", bin,
                 strerror(errno));
        abandon(p, why);
        return -1;
    }

    const char *tmp = getenv("TMPDIR");
    snprintf(p->dir, sizeof(p->dir), "%s/kcoord-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(p->dir) == NULL) {
        snprintf(why, sizeof(why), "mkdtemp %s: %s", p->dir, strerror(errno));
        p->dir[0] = '\0';
        abandon(p, why);
        return -1;
    }
    char defaults[3][320];
    snprintf(defaults[0], sizeof(defaults[0]), "listeners=127.0.0.1:0");
    snprintf(defaults[1], sizeof(defaults[1]), "data.dir=%s/data", p->dir);
    snprintf(defaults[2], sizeof(defaults[2]), "log.level=debug");
    if (mkdir(defaults[1] + strlen("data.dir="), 0700) != 0) {
        snprintf(why, sizeof(why), "mkdir %s: %s", defaults[1], strerror(errno));
        abandon(p, why);
        return -1;
    }

    /* The command line, kept (with copies of every string) for kc_proc_restart. */
    p->argv = calloc(ARGV_CAP, sizeof(*p->argv));
    if (p->argv == NULL) {
        abandon(p, "out of memory");
        return -1;
    }
    int argc = 0;
    p->argv[argc++] = strdup(bin);
    for (int i = 0; i < 3; i++) {
        if (!overridden(extra_sets, defaults[i])) {
            p->argv[argc++] = strdup("--set");
            p->argv[argc++] = strdup(defaults[i]);
        }
    }
    for (int i = 0; extra_sets != NULL && extra_sets[i] != NULL; i++) {
        if (i == MAX_EXTRA_SETS) {
            abandon(p, "too many extra settings");
            return -1;
        }
        p->argv[argc++] = strdup("--set");
        p->argv[argc++] = strdup(extra_sets[i]);
    }
    for (int i = 0; i < argc; i++) {
        if (p->argv[i] == NULL) {
            abandon(p, "out of memory");
            return -1;
        }
    }

    if (spawn(p, why, sizeof(why)) != 0) {
        if (why[0] == '\0') { /* started, but did not load: the log was printed */
            kc_proc_stop(p);
            kc_proc_finish(p);
        } else {
            abandon(p, why);
        }
        return -1;
    }
    return 0;
}

/* Stop the daemon with `sig` (SIGTERM: bounded by KC_STOP_TIMEOUT_MS, then SIGKILL), reap it,
 * and collect the rest of its log. Sets p->status unless nothing ran. */
static void halt_process(kc_proc_t *p, int sig)
{
    if (p->pid > 0) {
        int ws;
        kill(p->pid, sig);
        if (wait_exit(p->pid, KC_STOP_TIMEOUT_MS, &ws) == 0) {
            p->status = decode_status(ws);
        } else {
            fprintf(stderr, "harness: kcoord (pid %ld) still running %d ms after %s\n",
                    (long)p->pid, KC_STOP_TIMEOUT_MS, sig == SIGTERM ? "SIGTERM" : "SIGKILL");
            kill(p->pid, SIGKILL);
            wait_exit(p->pid, KC_STOP_TIMEOUT_MS, &ws);
            p->status = -1;
        }
        p->pid = 0;
    }
    if (p->draining) {
        pthread_join(p->drainer, NULL);
        p->draining = 0;
    }
    if (p->out_fd >= 0) {
        close(p->out_fd);
        p->out_fd = -1;
    }
}

int kc_proc_stop(kc_proc_t *p)
{
    halt_process(p, SIGTERM);
    if (p->dir[0] != '\0') {
        nftw(p->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        p->dir[0] = '\0';
    }
    return p->status;
}

int kc_proc_halt(kc_proc_t *p, int sig)
{
    if (p->pid > 0)
        halt_process(p, sig);
    return p->status;
}

int kc_proc_restart(kc_proc_t *p, int sig, int *halt_status)
{
    int status = kc_proc_halt(p, sig);
    if (halt_status != NULL)
        *halt_status = status;
    if (p->argv == NULL || p->dir[0] == '\0') {
        fprintf(stderr,
                "harness: kc_proc_restart of a daemon that was not started or is stopped\n");
        return -1;
    }
    p->restarts++;
    /* Only the tail of the log is ever printed: keep room for the new run's lines. */
    pthread_mutex_lock(&p->log_mu);
    if (p->log_len > LOG_MAX / 2) {
        size_t drop = p->log_len - LOG_PRINT_MAX;
        memmove(p->log, p->log + drop, p->log_len - drop + 1);
        p->log_len -= drop;
    }
    pthread_mutex_unlock(&p->log_mu);
    char mark[160];
    snprintf(mark, sizeof(mark),
             "==== harness: restart %d, the last run ended with status %d ====\n", p->restarts,
             status);
    log_append(p, mark, strlen(mark));
    pthread_mutex_lock(&p->log_mu);
    p->run_from = p->log_len;
    pthread_mutex_unlock(&p->log_mu);
    p->status = 0;
    char why[512];
    if (spawn(p, why, sizeof(why)) == 0)
        return 0;
    if (why[0] != '\0') {
        fprintf(stderr, "harness: kcoord did not restart: %s\n", why);
        kc_proc_print_log(p);
    }
    /* Leave a stopped daemon with a failed status: kc_proc_finish reports it and cleans up. */
    halt_process(p, SIGKILL);
    p->status = -1;
    return -1;
}

int kc_proc_finish(kc_proc_t *p)
{
    if (p->port == 0 && p->argv == NULL)
        return 0; /* never started, or abandon() already cleaned up */
    int status = kc_proc_stop(p);
    if (status != 0)
        fprintf(stderr, "harness: kcoord exit status %d, expected 0\n", status);
    if (!p->ok || status != 0 || getenv("KC_TEST_LOG") != NULL)
        kc_proc_print_log(p);
    free_argv(p);
    free(p->log);
    pthread_mutex_destroy(&p->log_mu);
    pthread_cond_destroy(&p->log_cv);
    memset(p, 0, sizeof(*p));
    return status == 0 ? 0 : -1;
}

int kc_run(const char *const *argv, int timeout_ms, char **out)
{
    kc_buf_t b = {0};
    int status = -1, fds[2];
    *out = NULL;
    if (pipe2(fds, O_CLOEXEC) != 0)
        goto done;
    pid_t pid = fork();
    if (pid == 0)
        exec_child(fds[1], argv[0], (char *const *)argv, NULL);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        goto done;
    }
    int64_t deadline = kc_now_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        int left = left_ms(deadline);
        if (left == 0) {
            timed_out = 1;
            break;
        }
        struct pollfd q = {.fd = fds[0], .events = POLLIN};
        if (poll(&q, 1, left) <= 0)
            continue;
        char chunk[4096];
        ssize_t n = read(fds[0], chunk, sizeof(chunk));
        if (n > 0)
            kc_out_bytes(&b, chunk, (size_t)n);
        else if (n == 0 || errno != EINTR)
            break;
    }
    close(fds[0]);
    int ws;
    if (!timed_out && wait_exit(pid, left_ms(deadline) + 1, &ws) == 0) {
        status = decode_status(ws);
    } else {
        fprintf(stderr, "harness: %s still running after %d ms; killed\n", argv[0], timeout_ms);
        kill(pid, SIGKILL);
        wait_exit(pid, KC_STOP_TIMEOUT_MS, &ws);
    }
done:
    kc_out_bytes(&b, "", 1);
    *out = (char *)b.p;
    return status;
}

/* ---- Buffers --------------------------------------------------------------------------------- */

void kc_buf_free(kc_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Make room for n more bytes after b->len. */
static void reserve(kc_buf_t *b, size_t n)
{
    if (b->len + n <= b->cap && b->p != NULL)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    uint8_t *grown = realloc(b->p, cap);
    if (grown == NULL) {
        fprintf(stderr, "harness: out of memory\n");
        abort();
    }
    b->p = grown;
    b->cap = cap;
}

void kc_out_bytes(kc_buf_t *b, const void *src, size_t n)
{
    reserve(b, n);
    if (n > 0)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

void kc_out_i8(kc_buf_t *b, int8_t v)
{
    uint8_t x = (uint8_t)v;
    kc_out_bytes(b, &x, 1);
}

void kc_out_i16(kc_buf_t *b, int16_t v)
{
    uint16_t u = (uint16_t)v;
    uint8_t x[2] = {(uint8_t)(u >> 8), (uint8_t)u};
    kc_out_bytes(b, x, 2);
}

void kc_out_i32(kc_buf_t *b, int32_t v)
{
    uint32_t u = (uint32_t)v;
    uint8_t x[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
    kc_out_bytes(b, x, 4);
}

void kc_out_uvarint(kc_buf_t *b, uint32_t v)
{
    while (v >= 0x80) {
        kc_out_i8(b, (int8_t)(uint8_t)(v | 0x80));
        v >>= 7;
    }
    kc_out_i8(b, (int8_t)v);
}

void kc_out_str(kc_buf_t *b, const char *s)
{
    if (s == NULL) {
        kc_out_i16(b, -1);
        return;
    }
    size_t n = strlen(s);
    kc_out_i16(b, (int16_t)n);
    kc_out_bytes(b, s, n);
}

void kc_out_cstr(kc_buf_t *b, const char *s)
{
    if (s == NULL) {
        kc_out_uvarint(b, 0);
        return;
    }
    size_t n = strlen(s);
    kc_out_uvarint(b, (uint32_t)n + 1);
    kc_out_bytes(b, s, n);
}

size_t kc_req_begin(kc_buf_t *b, int16_t key, int16_t version, int32_t corr, const char *client_id,
                    int flexible)
{
    size_t frame = b->len;
    kc_out_i32(b, 0);
    kc_out_i16(b, key);
    kc_out_i16(b, version);
    kc_out_i32(b, corr);
    kc_out_str(b, client_id);
    if (flexible)
        kc_out_uvarint(b, 0);
    return frame;
}

void kc_req_end(kc_buf_t *b, size_t frame)
{
    uint32_t size = (uint32_t)(b->len - frame - 4);
    uint8_t x[4] = {(uint8_t)(size >> 24), (uint8_t)(size >> 16), (uint8_t)(size >> 8),
                    (uint8_t)size};
    memcpy(b->p + frame, x, 4);
}

/* ---- Reader ---------------------------------------------------------------------------------- */

void kc_in_init(kc_in_t *r, const void *p, size_t n)
{
    r->p = p;
    r->end = r->p + n;
    r->err = 0;
}

size_t kc_in_left(const kc_in_t *r)
{
    return (size_t)(r->end - r->p);
}

/* The next n bytes, or NULL (and the sticky error) when fewer are left. */
static const uint8_t *take(kc_in_t *r, size_t n)
{
    if (r->err || kc_in_left(r) < n) {
        r->err = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

int8_t kc_in_i8(kc_in_t *r)
{
    const uint8_t *x = take(r, 1);
    return x ? (int8_t)x[0] : 0;
}

int16_t kc_in_i16(kc_in_t *r)
{
    const uint8_t *x = take(r, 2);
    return x ? (int16_t)(uint16_t)((x[0] << 8) | x[1]) : 0;
}

int32_t kc_in_i32(kc_in_t *r)
{
    const uint8_t *x = take(r, 4);
    if (x == NULL)
        return 0;
    return (int32_t)(((uint32_t)x[0] << 24) | ((uint32_t)x[1] << 16) | ((uint32_t)x[2] << 8) |
                     x[3]);
}

int64_t kc_in_i64(kc_in_t *r)
{
    uint64_t hi = (uint32_t)kc_in_i32(r), lo = (uint32_t)kc_in_i32(r);
    return (int64_t)((hi << 32) | lo);
}

uint32_t kc_in_uvarint(kc_in_t *r)
{
    uint32_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        const uint8_t *x = take(r, 1);
        if (x == NULL)
            return 0;
        v |= (uint32_t)(x[0] & 0x7f) << shift;
        if (!(x[0] & 0x80))
            return v;
    }
    r->err = 1;
    return 0;
}

void kc_in_skip(kc_in_t *r, size_t n)
{
    take(r, n);
}

int32_t kc_in_count(kc_in_t *r, int compact)
{
    int64_t n = compact ? (int64_t)kc_in_uvarint(r) - 1 : kc_in_i32(r);
    if (r->err || n < -1 || n > (int64_t)kc_in_left(r)) {
        r->err = 1;
        return 0;
    }
    return (int32_t)n;
}

int kc_in_str(kc_in_t *r, int compact, char *dst, size_t cap)
{
    int64_t n = compact ? (int64_t)kc_in_uvarint(r) - 1 : kc_in_i16(r);
    if (cap > 0)
        dst[0] = '\0';
    if (!r->err && n == -1)
        return -1;
    if (r->err || n < 0 || (size_t)n >= cap) {
        r->err = 1;
        return 0;
    }
    const uint8_t *x = take(r, (size_t)n);
    if (x == NULL)
        return 0;
    memcpy(dst, x, (size_t)n);
    dst[n] = '\0';
    return (int)n;
}

void kc_in_tags(kc_in_t *r)
{
    uint32_t n = kc_in_uvarint(r);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        kc_in_uvarint(r); /* the tag */
        kc_in_skip(r, kc_in_uvarint(r));
    }
}

/* ---- Sockets --------------------------------------------------------------------------------- */

const char *kc_sock_strerror(int rc)
{
    switch (rc) {
    case KC_SOCK_OK:
        return "ok";
    case KC_SOCK_CLOSED:
        return "connection closed by the peer";
    case KC_SOCK_TIMEOUT:
        return "timed out";
    case KC_SOCK_DATA:
        return "the peer sent data instead of closing";
    default:
        return "socket error";
    }
}

int kc_sock_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        fprintf(stderr, "harness: connect 127.0.0.1:%d: %s\n", port, strerror(errno));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

void kc_sock_name(int fd, char *buf, size_t cap)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0 || a.sin_family != AF_INET) {
        snprintf(buf, cap, "?");
        return;
    }
    char host[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
    snprintf(buf, cap, "%s:%d", host, ntohs(a.sin_port));
}

void kc_sock_reset(int fd)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(fd);
}

/* Wait up to `deadline` for `events` on fd. Returns KC_SOCK_OK or KC_SOCK_TIMEOUT. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int left = left_ms(deadline);
        if (left == 0)
            return KC_SOCK_TIMEOUT;
        struct pollfd q = {.fd = fd, .events = events};
        int n = poll(&q, 1, left);
        if (n > 0)
            return KC_SOCK_OK;
        if (n < 0 && errno != EINTR)
            return KC_SOCK_ERROR;
    }
}

int kc_sock_send(int fd, const void *buf, size_t len)
{
    int64_t deadline = kc_now_ms() + KC_IO_TIMEOUT_MS;
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLOUT, deadline);
            if (rc != KC_SOCK_OK)
                return rc;
        } else if (errno == EPIPE || errno == ECONNRESET) {
            return KC_SOCK_CLOSED;
        } else if (errno != EINTR) {
            return KC_SOCK_ERROR;
        }
    }
    return KC_SOCK_OK;
}

static int read_exact(int fd, uint8_t *dst, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, dst + got, n - got, MSG_DONTWAIT);
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0 || errno == ECONNRESET) {
            return KC_SOCK_CLOSED;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLIN, deadline);
            if (rc != KC_SOCK_OK)
                return rc;
        } else if (errno != EINTR) {
            return KC_SOCK_ERROR;
        }
    }
    return KC_SOCK_OK;
}

int kc_sock_read_frame(int fd, kc_buf_t *out, int timeout_ms)
{
    int64_t deadline = kc_now_ms() + timeout_ms;
    uint8_t sz[4];
    int rc = read_exact(fd, sz, 4, deadline);
    if (rc != KC_SOCK_OK)
        return rc;
    uint32_t n = ((uint32_t)sz[0] << 24) | ((uint32_t)sz[1] << 16) | ((uint32_t)sz[2] << 8) | sz[3];
    if (n > FRAME_MAX) {
        fprintf(stderr, "harness: response frame size %u is out of range\n", n);
        return KC_SOCK_ERROR;
    }
    out->len = 0;
    reserve(out, n);
    rc = read_exact(fd, out->p, n, deadline);
    out->len = rc == KC_SOCK_OK ? n : 0;
    return rc;
}

int kc_sock_wait_closed(int fd, int timeout_ms)
{
    int64_t deadline = kc_now_ms() + timeout_ms;
    for (;;) {
        uint8_t buf[512];
        ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r > 0)
            return KC_SOCK_DATA;
        if (r == 0 || errno == ECONNRESET)
            return KC_SOCK_CLOSED;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLIN, deadline);
            if (rc != KC_SOCK_OK)
                return rc;
        } else if (errno != EINTR) {
            return KC_SOCK_ERROR;
        }
    }
}

int kc_check_api_versions(int fd, int32_t corr)
{
    kc_buf_t b = {0};
    size_t f = kc_req_begin(&b, 18, 0, corr, "kcoord-it", 0);
    kc_req_end(&b, f);
    int rc = kc_sock_send(fd, b.p, b.len);
    if (rc == KC_SOCK_OK)
        rc = kc_sock_read_frame(fd, &b, KC_IO_TIMEOUT_MS);
    if (rc != KC_SOCK_OK) {
        fprintf(stderr, "harness: ApiVersions v0 (corr %d): %s\n", corr, kc_sock_strerror(rc));
        kc_buf_free(&b);
        return -1;
    }
    kc_in_t r;
    kc_in_init(&r, b.p, b.len);
    int32_t got_corr = kc_in_i32(&r);
    int16_t err = kc_in_i16(&r);
    int32_t n = kc_in_count(&r, 0);
    int found = 0;
    for (int32_t i = 0; i < n; i++) {
        int16_t key = kc_in_i16(&r), min = kc_in_i16(&r), max = kc_in_i16(&r);
        if (key == 18 && min == 0 && max == 4)
            found = 1;
    }
    const char *bad = r.err                 ? "the response does not decode"
                      : kc_in_left(&r) != 0 ? "bytes after the v0 body"
                      : got_corr != corr    ? "wrong correlation id"
                      : err != 0            ? "non-zero error code"
                      : !found              ? "ApiVersions 0-4 is not listed"
                                            : NULL;
    if (bad != NULL)
        fprintf(stderr, "harness: ApiVersions v0 (corr %d, answered corr %d, error %d): %s\n", corr,
                got_corr, err, bad);
    kc_buf_free(&b);
    return bad ? -1 : 0;
}
