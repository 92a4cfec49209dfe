/* regex_re2.cc - RE2 behind the C interface of regex.h: compile, full match, free.
 *
 * One of kcoord's two C++ files (src/net/principal_re2.cc is the other). Nothing here throws
 * into C: allocation failures (std::bad_alloc) are caught and reported as "out of memory" or as
 * no match. RE2 parses and compiles without
 * recursing on the stack (its walkers keep explicit stacks), so deep nesting costs heap, not
 * stack; regex.c still refuses nesting deeper than KC_RX_MAX_NESTING first.
 */
#include "group/regex.h"

#include <re2/re2.h>

#include <cstdio>
#include <new>
#include <string>

struct kc_rx_s {
    RE2 re;
    kc_rx_s(const re2::StringPiece &p, const RE2::Options &o) : re(p, o) {}
};

/* What RE2/J says for each problem (its PatternSyntaxException description), which is what
 * Kafka puts in its INVALID_REGULAR_EXPRESSION message. */
static const char *describe(RE2::ErrorCode code)
{
    switch (code) {
    case RE2::ErrorBadEscape:
        return "invalid escape sequence";
    case RE2::ErrorBadCharClass:
        return "invalid character class";
    case RE2::ErrorBadCharRange:
        return "invalid character class range";
    case RE2::ErrorMissingBracket:
        return "missing closing ]";
    case RE2::ErrorMissingParen:
        return "missing closing )";
    case RE2::ErrorUnexpectedParen:
        return "unexpected )";
    case RE2::ErrorTrailingBackslash:
        return "trailing backslash at end of expression";
    case RE2::ErrorRepeatArgument:
        return "missing argument to repetition operator";
    case RE2::ErrorRepeatSize:
        return "invalid repeat count";
    case RE2::ErrorRepeatOp:
        return "invalid nested repetition operator";
    case RE2::ErrorBadPerlOp:
        return "invalid or unsupported Perl syntax";
    case RE2::ErrorBadUTF8:
        return "invalid UTF-8";
    case RE2::ErrorBadNamedCapture:
        return "invalid named capture";
    case RE2::ErrorPatternTooLarge:
        return "expression too large";
    default:
        return "regexp/syntax: internal error";
    }
}

extern "C" kc_rx_t *kc_rx_compile(const char *p, size_t n, int64_t max_mem, char *why,
                                  size_t whylen)
{
    RE2::Options o;
    o.set_max_mem(max_mem);
    o.set_log_errors(false);
    o.set_never_capture(true); /* only whether it matches counts */
    kc_rx_t *rx = nullptr;
    try {
        rx = new kc_rx_t(re2::StringPiece(n ? p : "", n), o);
    } catch (const std::bad_alloc &) {
        if (whylen)
            std::snprintf(why, whylen, "out of memory");
        return nullptr;
    }
    if (!rx->re.ok()) {
        if (whylen)
            std::snprintf(why, whylen, "%s", describe(rx->re.error_code()));
        delete rx;
        return nullptr;
    }
    return rx;
}

extern "C" bool kc_rx_full_match(const kc_rx_t *rx, const char *s, size_t n)
{
    try {
        return RE2::FullMatch(re2::StringPiece(n ? s : "", n), rx->re);
    } catch (const std::bad_alloc &) {
        return false;
    }
}

extern "C" void kc_rx_free(kc_rx_t *rx)
{
    delete rx;
}
