/* diag.h - the daemon's diagnostic log: one line per call on stderr.
 *
 * Each line reads
 *     2026-12-02T16:42:57.123Z INFO  net: message
 * that is the UTC time with milliseconds, the level padded to five characters, the module and
 * the message. Messages are formatted like printf; a line never contains a newline of its own
 * (newlines and carriage returns in the message become spaces, a trailing one is dropped).
 *
 * The level is process-wide and safe to read from any thread; lines are written with a single
 * stdio call, so lines from different threads do not interleave. Use the KC_DEBUG..KC_ERROR
 * macros: they skip evaluating and formatting the arguments when the level is filtered out.
 *
 * With kc_diag_set_format(KC_DIAG_JSON) each line is a JSON object instead (see below).
 *
 * This is not the __consumer_offsets log (src/log/); it is only for humans.
 */
#ifndef KC_UTIL_DIAG_H
#define KC_UTIL_DIAG_H

#include <stddef.h>
#include <stdint.h>

typedef enum { KC_DIAG_DEBUG, KC_DIAG_INFO, KC_DIAG_WARN, KC_DIAG_ERROR } kc_diag_level_t;

typedef enum { KC_DIAG_TEXT, KC_DIAG_JSON } kc_diag_format_t;

/* How lines are written (process-wide, like the level). KC_DIAG_TEXT is the default, the line
 * shown above. KC_DIAG_JSON writes one JSON object per line instead:
 *     {"ts":"2026-12-02T16:42:57.123Z","level":"info","module":"net","msg":"message"}
 * with the message JSON-escaped (kc_diag_json_escape), so a line is always valid JSON. */
void kc_diag_set_format(kc_diag_format_t fmt);
kc_diag_format_t kc_diag_get_format(void);

/* Parse "text" or "json" (any case) into *out. 0, or -1 (*out untouched) for anything else. */
int kc_diag_parse_format(const char *s, kc_diag_format_t *out);

/* Append the `n` bytes at `s` as the inside of a JSON string (no quotes) through `put`, which
 * appends the bytes it is given: '"' and '\\' are escaped, control characters become \n, \r, \t,
 * \b, \f or \u00XX, DEL becomes \u007f, and every byte that is not part of valid UTF-8 (stray
 * continuation bytes, truncated or overlong sequences, surrogates, code points above
 * U+10FFFF) becomes \ufffd, so the output is valid JSON whatever the input. Valid UTF-8 is
 * copied as is. */
void kc_diag_json_escape(const void *s, size_t n, void (*put)(void *arg, const char *s, size_t n),
                        void *arg);

/* Format one JSON log line (newline included) into `buf` (capacity `cap`) for a message of
 * `msg_len` bytes written at `ts_ms` (Unix milliseconds). Returns the length the whole line
 * needs, like snprintf; the line is cut short (still NUL-terminated) when cap is too small.
 * kc_diag_write uses it in KC_DIAG_JSON mode; tests call it with a fixed time. */
size_t kc_diag_json_line(char *buf, size_t cap, int64_t ts_ms, kc_diag_level_t lvl,
                        const char *module, const char *msg, size_t msg_len);

/* Lines below `lvl` are dropped. The default is KC_DIAG_INFO. */
void kc_diag_set_level(kc_diag_level_t lvl);
kc_diag_level_t kc_diag_get_level(void);

/* Parse "debug", "info", "warn" or "error" (any case) into *out. Returns 0 on success, or -1
 * (leaving *out untouched) when `s` is NULL or not one of those names. */
int kc_diag_parse_level(const char *s, kc_diag_level_t *out);

/* Write one line at `lvl` for `module` (a short name such as "net"; NULL prints "-"), unless
 * `lvl` is below the current level. A message too long for the stack buffer is formatted into
 * a heap buffer; if that allocation fails the line is truncated, never lost. */
void kc_diag_write(kc_diag_level_t lvl, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write into `dst` (capacity `dstlen`, including the NUL) a printable sample of the `n` bytes at
 * `src`: bytes 0x20..0x7e are copied, every other byte becomes '.'. The result is always
 * NUL-terminated (when dstlen > 0) and truncated to dstlen - 1 bytes. For logging malformed
 * input without writing raw bytes to the terminal. */
void kc_diag_sanitize(char *dst, size_t dstlen, const void *src, size_t n);

/* ---- Repeated lines ------------------------------------------------------------------------
 *
 * A line that can repeat at the rate of requests or writes (a full disk fails every write) is
 * rate-limited by its call site: the first one is written, the ones that follow within the
 * interval (5 s unless kc_diag_set_repeat_interval says otherwise) are counted, and then one
 * line says so, with the text of the last one dropped:
 *     ... ERROR coord: partition 3: log write failed: No space left on device ... repeated
 *         9311 times in the last 5 s
 * That summary is written by the first call after the interval, or by kc_diag_repeat_flush()
 * (the daemon calls it every second) once the interval has ended, whichever comes first. Use
 * the KC_*_LIMITED macros: each expansion has its own static kc_diag_limit_t, so one call site
 * is one key whatever its arguments. Safe from any thread (one mutex, taken only by these
 * lines). */

/* The state of one rate-limited call site. Zero-initialised (static storage); never freed,
 * since kc_diag_repeat_flush keeps a list of those used. Members are private to diag.c. */
typedef struct kc_diag_limit_s {
    struct kc_diag_limit_s *next; /* in the list of those used */
    int listed;
    kc_diag_level_t level; /* of the last line dropped */
    const char *module;   /* of the last line dropped */
    int64_t window_ms;    /* when the last line was written (monotonic) */
    uint64_t suppressed;  /* lines dropped since then */
    char last[256];       /* the last line dropped, cut to fit */
} kc_diag_limit_t;

/* Write one line through `lim` as described above (lvl filtering as kc_diag_write). The message
 * is cut at about 1 KB; the text kept for the summary at 255 bytes. */
void kc_diag_limited(kc_diag_limit_t *lim, kc_diag_level_t lvl, const char *module, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

/* Write the summary of every call site whose interval has ended with lines dropped. Cheap
 * when there are none; the daemon calls it once a second. */
void kc_diag_repeat_flush(void);

/* The interval of the rate limit in milliseconds (default 5000); 0 turns it off (every line is
 * written). Process-wide. */
void kc_diag_set_repeat_interval(int64_t ms);

/* The monotonic clock the rate limit reads, in milliseconds; NULL restores CLOCK_MONOTONIC.
 * For tests, which drive it by hand. */
void kc_diag_set_repeat_clock(int64_t (*now_ms)(void));

#define KC_DIAG_LIMITED_(lvl, mod, ...)                                                             \
    do {                                                                                           \
        static kc_diag_limit_t kc_diag_limit_;                                                       \
        if ((lvl) >= kc_diag_get_level())                                                           \
            kc_diag_limited(&kc_diag_limit_, (lvl), (mod), __VA_ARGS__);                             \
    } while (0)

#define KC_INFO_LIMITED(mod, ...)  KC_DIAG_LIMITED_(KC_DIAG_INFO, mod, __VA_ARGS__)
#define KC_WARN_LIMITED(mod, ...)  KC_DIAG_LIMITED_(KC_DIAG_WARN, mod, __VA_ARGS__)
#define KC_ERROR_LIMITED(mod, ...) KC_DIAG_LIMITED_(KC_DIAG_ERROR, mod, __VA_ARGS__)

#define KC_DIAG_AT_(lvl, mod, ...)                                                                  \
    do {                                                                                           \
        if ((lvl) >= kc_diag_get_level())                                                           \
            kc_diag_write((lvl), (mod), __VA_ARGS__);                                               \
    } while (0)

#define KC_DEBUG(mod, ...) KC_DIAG_AT_(KC_DIAG_DEBUG, mod, __VA_ARGS__)
#define KC_INFO(mod, ...)  KC_DIAG_AT_(KC_DIAG_INFO, mod, __VA_ARGS__)
#define KC_WARN(mod, ...)  KC_DIAG_AT_(KC_DIAG_WARN, mod, __VA_ARGS__)
#define KC_ERROR(mod, ...) KC_DIAG_AT_(KC_DIAG_ERROR, mod, __VA_ARGS__)

#endif
