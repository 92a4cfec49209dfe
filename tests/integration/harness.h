/* harness.h - a real kcoord process for integration tests, and raw Kafka frames to talk to it.
 *
 * A test starts the daemon with kc_proc_start (a fresh temporary data directory, port 0, the
 * test's extra settings), talks to it with librdkafka or with the raw socket helpers below, and
 * stops it with kc_proc_stop, which must report exit status 0. kc_proc_finish is the teardown
 * half: it stops the daemon if it still runs and prints the daemon's log unless the test set
 * `ok` as its last statement and the daemon exited 0. cmocka runs teardowns after a failed
 * assertion too, so no process outlives its test. Durability tests restart the daemon on the
 * same data directory with kc_proc_restart (SIGTERM, or SIGKILL for a crash), or stop it with
 * kc_proc_halt and look at the directory before restarting it.
 *
 * The frame helpers (kc_buf_t, kc_in_t) follow Kafka's protocol description and share no code
 * with src/proto: a mistake made the same way in the daemon's encoder and decoder cannot hide
 * itself from these tests.
 */
#ifndef KC_TESTS_INTEGRATION_HARNESS_H
#define KC_TESTS_INTEGRATION_HARNESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
    KC_START_TIMEOUT_MS = 20000, /* until "listening on 127.0.0.1:PORT" is logged */
    KC_STOP_TIMEOUT_MS = 10000,  /* from SIGTERM to exit, then SIGKILL */
    KC_IO_TIMEOUT_MS = 10000,    /* default bound for one socket exchange */
};

/* ---- The daemon process ---------------------------------------------------------------------- */

typedef struct kc_proc_s {
    pid_t pid;     /* the running daemon; 0 once it was reaped */
    int port;      /* the port it listens on, parsed from its log */
    char dir[256]; /* temporary directory holding data/; removed by kc_proc_stop */
    int status;    /* what kc_proc_stop returned, once it was called */
    int ok;        /* the test sets this as its last statement; see kc_proc_finish */
    char **argv;   /* the daemon's command line (owned), kept for kc_proc_restart */
    int restarts;  /* kc_proc_restart calls so far */

    /* The daemon's stderr and stdout, kept in memory: read by kc_proc_start until the
     * listening line, then by a thread until the daemon closes the pipe. */
    int out_fd;
    pthread_t drainer;
    int draining;
    pthread_mutex_t log_mu;
    pthread_cond_t log_cv; /* broadcast on every append, and when the pipe closes */
    char *log;
    size_t log_len, log_cap;
    size_t run_from; /* where the current run's output starts in `log` (0 until a restart) */
    int log_eof;
} kc_proc_t;

/* Start build/kcoord (or $KC_TEST_BIN) with
 *     --set listeners=127.0.0.1:0 --set data.dir=DIR/data --set log.level=debug
 * followed by `--set K=V` for each string of `extra_sets` (NULL-terminated, may be NULL); an
 * extra setting replaces the default of the same key. The daemon's environment is ours minus
 * every KCOORD_* variable (it would read them as settings). Waits until
 * the daemon logs its port.
 * Returns 0, or -1 after printing why and the daemon's log, with nothing left running or
 * allocated. On success a thread writes into *p: it must not move until kc_proc_finish. */
int kc_proc_start(kc_proc_t *p, const char *const *extra_sets);

/* Send SIGTERM, wait up to KC_STOP_TIMEOUT_MS for the exit (then SIGKILL), collect the rest of
 * the log and remove the temporary directory. Returns the exit status (0-255), 128 + N when a
 * signal N ended it, or -1 when it had to be killed or could not be waited for. Calling it
 * again returns the same value. The log stays readable until kc_proc_finish. */
int kc_proc_stop(kc_proc_t *p);

/* Teardown: kc_proc_stop, then print the log when `ok` is not set or the status is not 0 (or
 * always, when $KC_TEST_LOG is set), then free the log. Returns 0 when the daemon exited 0,
 * else -1. Safe on a kc_proc_t whose start failed (all zero). */
int kc_proc_finish(kc_proc_t *p);

/* Stop the daemon with `sig`, keeping its data directory and its log: SIGTERM waits for the exit
 * as kc_proc_stop does (SIGKILL after KC_STOP_TIMEOUT_MS), SIGKILL is a crash. Returns the exit
 * status as kc_proc_stop reports it (0 after a clean SIGTERM, 128 + 9 after SIGKILL); when the
 * daemon was already halted, the status of that halt. p->dir/data stays for kc_proc_restart
 * (or for tools to read) until kc_proc_stop or kc_proc_finish removes it. */
int kc_proc_halt(kc_proc_t *p, int sig);

/* kc_proc_halt(p, sig) unless it is already halted, then start the daemon again with the same
 * binary, settings and data directory, and wait for its port and "partitions loaded" as
 * kc_proc_start does. The settings include `listeners`: with the default port 0 the new run
 * listens on another port (p->port is updated), so a test whose clients must reconnect to the
 * same address passes a fixed listeners=127.0.0.1:PORT. The log goes on in p->log after a
 * "==== harness: restart N ..." line (a log grown past 8 MiB keeps only its printable tail),
 * and kc_proc_wait_log sees only the new run's lines.
 * Stores the stopped run's status in *halt_status (may be NULL). Returns 0, or -1 after printing
 * why: the daemon is then not running, and kc_proc_finish reports the failure and cleans up. */
int kc_proc_restart(kc_proc_t *p, int sig, int *halt_status);

/* Print the daemon's log so far to stderr (the last 64 KiB of it). */
void kc_proc_print_log(kc_proc_t *p);

/* Wait up to `timeout_ms` for a line of the daemon's log that contains `a` and, unless it is
 * NULL, `b`. After kc_proc_restart only the lines of the current run count. Returns 1 when
 * there is one, else 0. */
int kc_proc_wait_log(kc_proc_t *p, const char *a, const char *b, int timeout_ms);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t kc_now_ms(void);

/* ---- Other processes ------------------------------------------------------------------------- */

/* Run argv[0] (searched in PATH) with stdout and stderr captured into *out (malloc'd,
 * NUL-terminated, the caller frees it; set even on failure). A child still running after
 * `timeout_ms` is killed. Returns the exit status as kc_proc_stop does, or -1. */
int kc_run(const char *const *argv, int timeout_ms, char **out);

/* ---- Byte buffers and request frames --------------------------------------------------------- */

/* A growable byte buffer. Zero-initialise it; kc_buf_free releases it. Growth aborts the test
 * process on allocation failure. */
typedef struct kc_buf_s {
    uint8_t *p;
    size_t len, cap;
} kc_buf_t;

void kc_buf_free(kc_buf_t *b);
void kc_out_bytes(kc_buf_t *b, const void *src, size_t n);
void kc_out_i8(kc_buf_t *b, int8_t v);
void kc_out_i16(kc_buf_t *b, int16_t v);
void kc_out_i32(kc_buf_t *b, int32_t v);
void kc_out_uvarint(kc_buf_t *b, uint32_t v);
void kc_out_str(kc_buf_t *b, const char *s);  /* int16 length + bytes; NULL writes -1 */
void kc_out_cstr(kc_buf_t *b, const char *s); /* compact: uvarint length + 1; NULL writes 0 */

/* Append a size placeholder and a request header: v1, or v2 when `flexible` (client_id stays
 * an int16-length string; v2 adds an empty tagged-field section). Returns the frame's offset
 * in `b`, for kc_req_end once the body has been appended. Frames can follow each other in one
 * buffer, to be sent in one write. */
size_t kc_req_begin(kc_buf_t *b, int16_t key, int16_t version, int32_t corr, const char *client_id,
                    int flexible);
/* Write the size of the frame that starts at `frame`. */
void kc_req_end(kc_buf_t *b, size_t frame);

/* A reader over a response with a sticky error: after any short read every read returns 0 and
 * `err` stays set, so a decoder checks once at the end. */
typedef struct kc_in_s {
    const uint8_t *p, *end;
    int err;
} kc_in_t;

void kc_in_init(kc_in_t *r, const void *p, size_t n);
size_t kc_in_left(const kc_in_t *r);
int8_t kc_in_i8(kc_in_t *r);
int16_t kc_in_i16(kc_in_t *r);
int32_t kc_in_i32(kc_in_t *r);
int64_t kc_in_i64(kc_in_t *r);
uint32_t kc_in_uvarint(kc_in_t *r);
void kc_in_skip(kc_in_t *r, size_t n);
/* An array count: int32, or for `compact` a uvarint N + 1. Null arrays give -1. A count larger
 * than the bytes left (each element takes at least one byte) sets the error. */
int32_t kc_in_count(kc_in_t *r, int compact);
/* A string, int16-length or (`compact`) uvarint N + 1, copied NUL-terminated into dst (which
 * holds `cap` bytes; a longer string sets the error). Returns its length, or -1 for null. */
int kc_in_str(kc_in_t *r, int compact, char *dst, size_t cap);
/* Skip a tagged-field section. */
void kc_in_tags(kc_in_t *r);

/* ---- Sockets --------------------------------------------------------------------------------- */

/* Results of the socket helpers. */
enum {
    KC_SOCK_OK = 0,
    KC_SOCK_CLOSED = -1, /* the peer closed (read returned 0, or ECONNRESET) */
    KC_SOCK_TIMEOUT = -2,
    KC_SOCK_ERROR = -3, /* another error, or a frame size out of range */
    KC_SOCK_DATA = -4,  /* kc_sock_wait_closed: bytes arrived instead of a close */
};
const char *kc_sock_strerror(int rc);

/* A blocking TCP connection to 127.0.0.1:port with TCP_NODELAY, or -1. */
int kc_sock_connect(int port);
/* Write this end's address, as the daemon names its peer ("127.0.0.1:PORT"), into buf. */
void kc_sock_name(int fd, char *buf, size_t cap);
/* Close with an RST instead of a FIN (SO_LINGER 0). */
void kc_sock_reset(int fd);
/* Send all of buf (MSG_NOSIGNAL), waiting for room at most KC_IO_TIMEOUT_MS. */
int kc_sock_send(int fd, const void *buf, size_t len);
/* Read one response frame into `out` (replacing its contents; the 4-byte size is not kept),
 * within `timeout_ms`. */
int kc_sock_read_frame(int fd, kc_buf_t *out, int timeout_ms);
/* Wait up to `timeout_ms` for the peer to close the connection. Returns KC_SOCK_CLOSED,
 * KC_SOCK_DATA (the bytes are consumed), KC_SOCK_TIMEOUT or KC_SOCK_ERROR. */
int kc_sock_wait_closed(int fd, int timeout_ms);

/* Send ApiVersions v0 with correlation id `corr` and check the answer: that correlation id,
 * error 0, and ApiVersions (18) served as 0-4. Returns 0, or -1 after printing what was wrong. */
int kc_check_api_versions(int fd, int32_t corr);

#endif
