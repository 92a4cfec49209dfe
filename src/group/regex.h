/* regex.h - subscription regular expressions (KIP-848 SubscribedTopicRegex) as Kafka has them.
 *
 * Kafka compiles a consumer's SubscribedTopicRegex with RE2/J (Pattern.compile) and keeps the
 * topics whose whole name matches (matcher(topic).matches()). kcoord uses RE2 itself, through
 * the one C++ file src/group/regex_re2.cc, which gives the same syntax (Perl-like classes,
 * (?i) and other flags, (?:...) groups, (?P<name>...), repeat counts up to 1000; no
 * back-references or look-around) and the same guarantee: matching is linear in the text, so
 * no pattern can make the event loop wait for it. Two bounds of kcoord's own come first:
 *
 *   - a pattern longer than the configured length (group.consumer.regex.max.bytes) or nested
 *     deeper than KC_RX_MAX_NESTING parentheses is refused before RE2 sees it;
 *   - RE2 compiles with at most KC_RX_MAX_MEM bytes (its max_mem option); a larger program is
 *     refused ("expression too large").
 *
 * So compiling one pattern costs O(its length) time and at most KC_RX_MAX_MEM bytes, and
 * matching one topic name costs O(name length x program size) at worst (RE2's NFA; its DFA,
 * used first, is O(name length)); names are at most 249 bytes.
 *
 * Refusals carry the description RE2/J gives (ex.getDescription(), which Kafka puts in the
 * INVALID_REGULAR_EXPRESSION message), e.g. "missing closing ]".
 *
 * The cache (kc_rx_cache_t, one per __consumer_offsets partition, loop thread only) keeps each
 * pattern compiled once, keyed by its text. Member metadata that holds a pattern takes a
 * reference (kc_rx_cache_ref/unref); patterns with references are "in use", and at most
 * group.consumer.regex.max.count distinct ones may be in use: kc_rx_cache_check refuses one
 * more (KC_RX_FULL). Replay never refuses (what the log holds was accepted), so the count may
 * exceed the cap after the cap was lowered. Patterns nobody references stay compiled in a
 * least-recently-used list of at most KC_RX_IDLE_MAX entries, then are freed. So a cache holds
 * at most (max_count + KC_RX_IDLE_MAX) x (max_len + KC_RX_MAX_MEM) bytes; in practice a
 * compiled pattern takes a few kilobytes plus what RE2's DFA caches while matching.
 *
 * Time on the loop: compiling is O(pattern length) and happens once per distinct pattern;
 * resolving a pattern against T topics is T full matches, each O(name length) in RE2's DFA
 * and O(name length x program size) when the DFA's share of KC_RX_MAX_MEM runs out (measured:
 * 10 000 names of 249 bytes take about 12 ms with a 1 MiB budget).
 */
#ifndef KC_GROUP_REGEX_H
#define KC_GROUP_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RE2's max_mem for one pattern: the compiled program and its DFA caches. */
#define KC_RX_MAX_MEM (1 << 20)

/* The deepest parenthesis nesting accepted (Go's regexp/syntax limit, which RE2/J follows). */
#define KC_RX_MAX_NESTING 1000

/* Patterns nobody uses kept compiled for reuse, per cache. */
#define KC_RX_IDLE_MAX 64

/* One compiled pattern (regex_re2.cc). Immutable; any thread may match with it. */
typedef struct kc_rx_s kc_rx_t;

/* Compile the `n` bytes at `p` (need not be NUL-terminated) with RE2 and at most `max_mem`
 * bytes. Returns the pattern, or NULL with RE2/J's description of the problem in `why` (a
 * NUL-terminated string of at most `whylen` bytes; "out of memory" when allocation failed).
 * Does not check length or nesting: see kc_rx_precheck. */
kc_rx_t *kc_rx_compile(const char *p, size_t n, int64_t max_mem, char *why, size_t whylen);

/* Whether the whole of the `n` bytes at `s` matches (Kafka's matcher(topic).matches()). */
bool kc_rx_full_match(const kc_rx_t *rx, const char *s, size_t n);

/* Free a compiled pattern; NULL is ignored. */
void kc_rx_free(kc_rx_t *rx);

/* The checks made before compiling: a pattern of more than `max_len` bytes, one nested more
 * than KC_RX_MAX_NESTING deep, or one that contains a NUL byte is refused. Returns 0, or -1
 * with the reason in `why`. */
int kc_rx_precheck(const char *p, size_t n, int32_t max_len, char *why, size_t whylen);

typedef struct kc_rx_cache_s kc_rx_cache_t;

/* A cache for patterns of at most `max_len` bytes, at most `max_count` in use (values below 1
 * mean 1). NULL when out of memory. */
kc_rx_cache_t *kc_rx_cache_new(int32_t max_len, int32_t max_count);

/* Free the cache and every compiled pattern in it; NULL is ignored. */
void kc_rx_cache_free(kc_rx_cache_t *c);

enum {
    KC_RX_OK = 0,      /* the pattern may be used */
    KC_RX_INVALID = 1, /* refused: too long, too deep, or not valid RE2 syntax */
    KC_RX_FULL = 2,    /* valid, but not in use and max_count patterns are */
    KC_RX_OOM = -1,    /* out of memory */
};

/* Check a pattern that a request wants a member to use (the heartbeat's check, made when no
 * member of the group uses it yet, as Kafka's). Compiles it (once: the result is cached).
 * Returns a KC_RX_* value; with KC_RX_INVALID or KC_RX_FULL, the reason in `why`. */
int kc_rx_cache_check(kc_rx_cache_t *c, const char *p, size_t n, char *why, size_t whylen);

/* The compiled pattern for resolving it against topics: the cached one, else compiled now
 * (and cached). NULL when it does not compile (it then matches nothing) or when out of memory
 * (*oom set). When the cache could not keep it, *owned is set to the same pointer and the
 * caller frees it with kc_rx_free; otherwise *owned is NULL and the pointer stays valid until
 * the next call on the cache. */
const kc_rx_t *kc_rx_cache_get(kc_rx_cache_t *c, const char *p, size_t n, kc_rx_t **owned,
                               bool *oom);

/* A member's metadata took (ref) or dropped (unref) the pattern. Never fails: under memory
 * pressure a reference may go uncounted, which only makes the in-use count low. */
void kc_rx_cache_ref(kc_rx_cache_t *c, const char *p, size_t n);
void kc_rx_cache_unref(kc_rx_cache_t *c, const char *p, size_t n);

/* Distinct patterns in use (with references), and patterns compiled in the cache. */
size_t kc_rx_cache_in_use(const kc_rx_cache_t *c);
size_t kc_rx_cache_compiled(const kc_rx_cache_t *c);

#ifdef __cplusplus
}
#endif

#endif
