/* principal.c - ssl.principal.mapping.rules: a client certificate's subject to a principal name,
 * as Kafka's SslPrincipalMapper does it.
 *
 * The setting is a comma-separated list of rules, tried in order; the first that applies gives
 * the name:
 *   DEFAULT                        the subject as it is (RFC 2253, as X500Principal.getName());
 *   RULE:pattern/replacement/      when the pattern matches the whole subject, the subject
 *                                  rewritten as Java's replaceAll(pattern, replacement) does
 *   RULE:pattern/replacement/L     ... then lower-cased (U: upper-cased).
 * A backslash escapes the next character inside a pattern or a replacement (so "\/" is a '/'
 * that does not end it, and a ',' inside a pattern does not end the rule). Blanks around rules
 * and commas are ignored; an empty list means DEFAULT. A subject no rule applies to is refused
 * (Kafka: "No rules apply to DN"), and so is its connection. Patterns are RE2's (principal_re2.cc).
 */
#include <stdlib.h>
#include <string.h>

#include "net/net.h"
#include "net/principal_int.h"

typedef struct rule_s {
    kc_prx_t *rx; /* NULL: DEFAULT */
    char *repl;
    char kase; /* 'L', 'U' or 0 */
} rule_t;

struct kc_net_principal_rules_s {
    rule_t *rules;
    size_t n;
};

static void seterr(char *err, size_t errlen, const char *what, const char *b, size_t n)
{
    if (errlen > 0)
        snprintf(err, errlen, "%s: `%.*s`", what, (int)(n > 200 ? 200 : n), b);
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* One '/'-terminated part from *p: its bytes, escapes kept, into a new string. NULL at the end
 * of the text without a '/'. */
static char *part(const char **p)
{
    const char *b = *p, *q = b;
    while (*q != '\0' && *q != '/')
        q += q[0] == '\\' && q[1] != '\0' ? 2 : 1;
    if (*q != '/')
        return NULL;
    char *s = strndup(b, (size_t)(q - b));
    *p = q + 1;
    return s;
}

void kc_net_principal_rules_free(kc_net_principal_rules_t *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n; i++) {
        kc_prx_free(r->rules[i].rx);
        free(r->rules[i].repl);
    }
    free(r->rules);
    free(r);
}

kc_net_principal_rules_t *kc_net_principal_rules_parse(const char *text, char *err, size_t errlen)
{
    kc_net_principal_rules_t *r = calloc(1, sizeof(*r));
    size_t cap = 1;
    for (const char *p = text; *p != '\0'; p++)
        cap += *p == ',';
    if (r == NULL || (r->rules = calloc(cap, sizeof(*r->rules))) == NULL) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    const char *p = text;
    while (is_space(*p))
        p++;
    while (*p != '\0') {
        const char *start = p;
        rule_t *rule = &r->rules[r->n];
        if (strncmp(p, "DEFAULT", 7) == 0) {
            p += 7;
            r->n++;
        } else if (strncmp(p, "RULE:", 5) == 0) {
            p += 5;
            char why[200];
            char *pat = part(&p), *repl = pat != NULL ? part(&p) : NULL;
            if (pat == NULL || repl == NULL) {
                free(pat);
                seterr(err, errlen, "Invalid rule", start, strlen(start));
                kc_net_principal_rules_free(r);
                return NULL;
            }
            rule->rx = kc_prx_compile(pat, strlen(pat), why, sizeof why);
            free(pat);
            rule->repl = repl;
            r->n++;
            if (rule->rx == NULL) {
                if (errlen > 0)
                    snprintf(err, errlen, "Invalid rule `%.200s`: %s", start, why);
                kc_net_principal_rules_free(r);
                return NULL;
            }
            if (*p == 'L' || *p == 'U')
                rule->kase = *p++;
        } else {
            const char *e = strchr(p, ',');
            seterr(err, errlen, "Invalid rule", p, e != NULL ? (size_t)(e - p) : strlen(p));
            kc_net_principal_rules_free(r);
            return NULL;
        }
        while (is_space(*p))
            p++;
        if (*p == ',') {
            p++;
            while (is_space(*p))
                p++;
        } else if (*p != '\0') {
            const char *e = strchr(p, ',');
            if (errlen > 0)
                snprintf(err, errlen, "Invalid rule: `%.*s`, unmatched substring: `%.*s`",
                         (int)(p - start), start, (int)(e != NULL ? e - p : (long)strlen(p)), p);
            kc_net_principal_rules_free(r);
            return NULL;
        }
    }
    if (r->n == 0)
        r->n = 1; /* no rule: DEFAULT (the first slot is zeroed: rx NULL) */
    return r;
}

int kc_net_principal_map(const kc_net_principal_rules_t *r, const char *dn, char **name)
{
    *name = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const rule_t *rule = &r->rules[i];
        if (rule->rx == NULL) {
            *name = strdup(dn);
            return *name != NULL ? 1 : -1;
        }
        int rc = kc_prx_replace(rule->rx, dn, rule->repl, name);
        if (rc == 0)
            continue;
        if (rc < 0)
            return -1;
        for (char *q = *name; rule->kase != 0 && *q != '\0'; q++) {
            if (rule->kase == 'L' && *q >= 'A' && *q <= 'Z')
                *q = (char)(*q - 'A' + 'a');
            else if (rule->kase == 'U' && *q >= 'a' && *q <= 'z')
                *q = (char)(*q - 'a' + 'A');
        }
        return 1;
    }
    return 0;
}
