/* principal_re2.cc - the regular expressions of ssl.principal.mapping.rules, over RE2.
 *
 * Kafka applies a rule with Java's String.replaceAll once the pattern matches the whole
 * subject; the replacement uses Java's syntax ($n for group n, \c for a literal c, and Kafka
 * escapes $n beyond the pattern's groups so that they stay literal). This file does the same
 * with RE2, whose syntax is Java's for the patterns these rules use (classes, lazy
 * quantifiers, groups; no back-references or look-around). Nothing here throws into C:
 * allocation failures become "out of memory" or no match.
 */
#include "net/principal_int.h"

#include <re2/re2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

struct kc_prx_s {
    RE2 re;
    kc_prx_s(const re2::StringPiece &p, const RE2::Options &o) : re(p, o) {}
};

extern "C" kc_prx_t *kc_prx_compile(const char *p, size_t n, char *why, size_t whylen)
{
    RE2::Options o;
    o.set_max_mem(1 << 20);
    o.set_log_errors(false);
    kc_prx_t *rx = nullptr;
    try {
        rx = new kc_prx_t(re2::StringPiece(n ? p : "", n), o);
    } catch (const std::bad_alloc &) {
        if (whylen)
            std::snprintf(why, whylen, "out of memory");
        return nullptr;
    }
    if (!rx->re.ok()) {
        if (whylen)
            std::snprintf(why, whylen, "%s", rx->re.error().c_str());
        delete rx;
        return nullptr;
    }
    return rx;
}

/* Append Java's expansion of `repl` for the groups `g` (g[0] the whole match). */
static void expand(std::string &out, const char *repl, const std::vector<re2::StringPiece> &g)
{
    size_t ngroups = g.size() - 1;
    for (const char *p = repl; *p != '\0'; p++) {
        if (*p == '\\' && p[1] != '\0') {
            out += *++p;
        } else if (*p == '$' && p[1] >= '0' && p[1] <= '9' && (size_t)(p[1] - '0') <= ngroups) {
            /* Java takes the longest group number that exists. */
            size_t n = (size_t)(*++p - '0');
            while (p[1] >= '0' && p[1] <= '9' && n * 10 + (size_t)(p[1] - '0') <= ngroups)
                n = n * 10 + (size_t)(*++p - '0');
            out.append(g[n].data() != nullptr ? g[n].data() : "", g[n].size());
        } else {
            out += *p;
        }
    }
}

extern "C" int kc_prx_replace(const kc_prx_t *rx, const char *text, const char *repl, char **out)
{
    *out = nullptr;
    try {
        re2::StringPiece t(text, std::strlen(text));
        int n = 1 + rx->re.NumberOfCapturingGroups();
        std::vector<re2::StringPiece> g((size_t)n);
        if (!rx->re.Match(t, 0, t.size(), RE2::ANCHOR_BOTH, g.data(), n))
            return 0;
        std::string r;
        expand(r, repl, g);
        /* replaceAll goes on after the whole-text match: a pattern that also matches the empty
         * text at the end (".*") is replaced there once more, as Java does. */
        if (rx->re.Match(t, t.size(), t.size(), RE2::UNANCHORED, g.data(), n))
            expand(r, repl, g);
        char *s = static_cast<char *>(std::malloc(r.size() + 1));
        if (s == nullptr)
            return -1;
        std::memcpy(s, r.data(), r.size());
        s[r.size()] = '\0';
        *out = s;
        return 1;
    } catch (const std::bad_alloc &) {
        return -1;
    }
}

extern "C" void kc_prx_free(kc_prx_t *rx)
{
    delete rx;
}
