/* acl.c - principals, the ACL store and the authorizer, with Kafka's StandardAuthorizer rules.
 *
 * The store keeps every ACL twice: in `by_res`, sorted as Kafka's StandardAcl.compareTo sorts
 * (resource type, resource name in REVERSE byte order, pattern type, principal, host, operation,
 * permission), and in `by_id`, sorted by id for removals. Reverse name order puts every name
 * just before the names it is a prefix of... reversed: walking forward from a name meets the
 * name itself, then its prefixes, longest first. kc_auth_authorize starts at the resource's
 * name and walks forward; when it meets a name that is not a prefix of the resource name it
 * jumps (binary search) to the longest common prefix, exactly as StandardAuthorizerData's
 * checkSection; then it walks the LITERAL "*" section. So a check costs a few binary searches
 * plus the ACLs that match, not a scan of every ACL.
 *
 * Insertions and removals memmove the two arrays (ACLs change rarely; lookups are per request).
 * To extend the rules, change find_result (one ACL against one action) or check_section.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"
#include "proto/errors.h"

/* ---- Small helpers ------------------------------------------------------------------------- */

int kc_auth__cmp(kc_str_t a, kc_str_t b)
{
    size_t la = a.len > 0 ? (size_t)a.len : 0, lb = b.len > 0 ? (size_t)b.len : 0;
    size_t n = la < lb ? la : lb;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c != 0)
        return c;
    return la < lb ? -1 : la > lb ? 1 : 0;
}

char *kc_auth__fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static bool str_is(kc_str_t s, const char *c)
{
    return kc_str_eq_c(s, c);
}

void kc_auth_result_clear(kc_auth_result_t *r)
{
    if (r->owned)
        free(r->message);
    r->message = NULL;
    r->owned = false;
    r->error = 0;
}

static void result_static(kc_auth_result_t *r, int16_t error, const char *msg)
{
    r->error = error;
    r->message = (char *)msg;
    r->owned = false;
}

/* Set an owned message; on allocation failure the error stays with no message. */
static void result_owned(kc_auth_result_t *r, int16_t error, char *msg)
{
    r->error = error;
    r->message = msg;
    r->owned = msg != NULL;
}

/* ---- Principals ---------------------------------------------------------------------------- */

static int principal_make(const char *type, size_t type_len, const char *name, size_t name_len,
                          kc_principal_t *out)
{
    memset(out, 0, sizeof(*out));
    char *t = malloc(type_len + 1 + name_len + 1);
    if (t == NULL)
        return KC_AUTH_ENOMEM;
    memcpy(t, type, type_len);
    t[type_len] = ':';
    if (name_len)
        memcpy(t + type_len + 1, name, name_len);
    t[type_len + 1 + name_len] = '\0';
    out->text = t;
    out->len = (uint32_t)(type_len + 1 + name_len);
    out->type_len = (uint32_t)type_len;
    return KC_AUTH_OK;
}

int kc_principal_parse(kc_str_t s, kc_principal_t *out)
{
    memset(out, 0, sizeof(*out));
    if (s.len <= 0)
        return KC_AUTH_EINVAL;
    const char *colon = memchr(s.p, ':', (size_t)s.len);
    if (colon == NULL)
        return KC_AUTH_EINVAL;
    size_t tl = (size_t)(colon - s.p);
    return principal_make(s.p, tl, colon + 1, (size_t)s.len - tl - 1, out);
}

int kc_principal_user(kc_str_t name, kc_principal_t *out)
{
    return principal_make(KC_PRINCIPAL_USER_TYPE, 4, name.p, name.len > 0 ? (size_t)name.len : 0,
                          out);
}

int kc_principal_anonymous(kc_principal_t *out)
{
    return kc_principal_user(KC_STR_LIT("ANONYMOUS"), out);
}

int kc_principal_copy(const kc_principal_t *p, kc_principal_t *out)
{
    if (p->text == NULL) {
        memset(out, 0, sizeof(*out));
        return KC_AUTH_OK;
    }
    return principal_make(p->text, p->type_len, p->text + p->type_len + 1, p->len - p->type_len - 1,
                          out);
}

void kc_principal_free(kc_principal_t *p)
{
    free(p->text);
    memset(p, 0, sizeof(*p));
}

kc_str_t kc_principal_type(const kc_principal_t *p)
{
    return p->text ? (kc_str_t){p->text, (int32_t)p->type_len} : KC_STR_NULL;
}

kc_str_t kc_principal_name(const kc_principal_t *p)
{
    return p->text ? (kc_str_t){p->text + p->type_len + 1, (int32_t)(p->len - p->type_len - 1)}
                   : KC_STR_NULL;
}

bool kc_principal_eq(const kc_principal_t *a, const kc_principal_t *b)
{
    if (a->text == NULL || b->text == NULL)
        return a->text == b->text;
    return a->len == b->len && a->type_len == b->type_len && memcmp(a->text, b->text, a->len) == 0;
}

/* ---- Names of codes ------------------------------------------------------------------------ */

const char *kc_auth_resource_type_name(int8_t c)
{
    static const char *const n[] = {
        "UNKNOWN",          "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
        "DELEGATION_TOKEN", "USER"};
    return c >= 0 && c <= KC_RES_USER ? n[c] : "UNKNOWN";
}

const char *kc_auth_pattern_type_name(int8_t c)
{
    static const char *const n[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
    return c >= 0 && c <= KC_PAT_PREFIXED ? n[c] : "UNKNOWN";
}

const char *kc_auth_operation_name(int8_t c)
{
    static const char *const n[] = {"UNKNOWN",
                                    "ANY",
                                    "ALL",
                                    "READ",
                                    "WRITE",
                                    "CREATE",
                                    "DELETE",
                                    "ALTER",
                                    "DESCRIBE",
                                    "CLUSTER_ACTION",
                                    "DESCRIBE_CONFIGS",
                                    "ALTER_CONFIGS",
                                    "IDEMPOTENT_WRITE",
                                    "CREATE_TOKENS",
                                    "DESCRIBE_TOKENS"};
    return c >= 0 && c <= KC_OP_DESCRIBE_TOKENS ? n[c] : "UNKNOWN";
}

const char *kc_auth_permission_name(int8_t c)
{
    static const char *const n[] = {"UNKNOWN", "ANY", "DENY", "ALLOW"};
    return c >= 0 && c <= KC_PERM_ALLOW ? n[c] : "UNKNOWN";
}

/* Kafka's fromCode: a code it does not know is UNKNOWN. */
static int8_t res_norm(int8_t c)
{
    return c >= 0 && c <= KC_RES_USER ? c : KC_RES_UNKNOWN;
}
static int8_t pat_norm(int8_t c)
{
    return c >= 0 && c <= KC_PAT_PREFIXED ? c : KC_PAT_UNKNOWN;
}
static int8_t op_norm(int8_t c)
{
    return c >= 0 && c <= KC_OP_DESCRIBE_TOKENS ? c : KC_OP_UNKNOWN;
}
static int8_t perm_norm(int8_t c)
{
    return c >= 0 && c <= KC_PERM_ALLOW ? c : KC_PERM_UNKNOWN;
}

/* ---- Hosts and CIDRs ----------------------------------------------------------------------- */

const char *kc_auth_host_string(const uint8_t *addr, size_t addr_len, char buf[40])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (addr_len == 16 && memcmp(addr, mapped, 12) == 0) { /* Java gives an Inet4Address */
        addr += 12;
        addr_len = 4;
    }
    if (addr_len == 4) {
        snprintf(buf, 40, "%u.%u.%u.%u", addr[0], addr[1], addr[2], addr[3]);
    } else if (addr_len == 16) {
        char *p = buf;
        for (int i = 0; i < 8; i++) {
            unsigned g = (unsigned)addr[2 * i] << 8 | addr[2 * i + 1];
            p += snprintf(p, (size_t)(buf + 40 - p), i ? ":%x" : "%x", g);
        }
    } else {
        buf[0] = '\0';
    }
    return buf;
}

/* Parse an IPv4 or IPv6 address (no brackets, no zone). */
static bool ip_parse(const char *p, size_t n, uint8_t out[16], uint8_t *len)
{
    char tmp[64];
    if (n == 0 || n >= sizeof(tmp))
        return false;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    if (inet_pton(AF_INET, tmp, out) == 1) {
        *len = 4;
        return true;
    }
    if (memchr(tmp, ':', n) != NULL && inet_pton(AF_INET6, tmp, out) == 1) {
        *len = 16;
        return true;
    }
    return false;
}

bool kc_auth__cidr_parse(kc_str_t s, uint8_t net[16], uint8_t *net_len, uint8_t *prefix)
{
    if (s.len <= 0)
        return false;
    const char *slash = memchr(s.p, '/', (size_t)s.len);
    if (slash == NULL)
        return false;
    if (!ip_parse(s.p, (size_t)(slash - s.p), net, net_len))
        return false;
    const char *d = slash + 1, *end = s.p + s.len;
    if (d == end || end - d > 3)
        return false;
    unsigned v = 0;
    for (; d < end; d++) {
        if (*d < '0' || *d > '9')
            return false;
        v = v * 10 + (unsigned)(*d - '0');
    }
    if (v > (unsigned)*net_len * 8)
        return false;
    *prefix = (uint8_t)v;
    return true;
}

static bool cidr_holds(const acl_t *acl, const uint8_t *ip, uint8_t ip_len)
{
    if (ip_len != acl->net_len)
        return false;
    unsigned bits = acl->prefix, i = 0;
    for (; bits >= 8; bits -= 8, i++)
        if (ip[i] != acl->net[i])
            return false;
    if (bits == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff00u >> bits);
    return (ip[i] & mask) == (acl->net[i] & mask);
}

/* ---- Stored ACLs --------------------------------------------------------------------------- */

acl_t *kc_auth__acl_make(kc_uuid_t id, const kc_acl_binding_t *b)
{
    size_t nl = b->resource_name.len > 0 ? (size_t)b->resource_name.len : 0;
    size_t pl = b->principal.len > 0 ? (size_t)b->principal.len : 0;
    size_t hl = b->host.len > 0 ? (size_t)b->host.len : 0;
    acl_t *acl = calloc(1, sizeof(*acl) + nl + pl + hl + 3);
    if (acl == NULL)
        return NULL;
    char *p = (char *)(acl + 1);
    acl->id = id;
    acl->resource_type = b->resource_type;
    acl->pattern_type = b->pattern_type;
    acl->operation = b->operation;
    acl->permission = b->permission;
    if (nl)
        memcpy(p, b->resource_name.p, nl);
    acl->name = (kc_str_t){p, (int32_t)nl};
    p += nl + 1;
    if (pl)
        memcpy(p, b->principal.p, pl);
    acl->principal = (kc_str_t){p, (int32_t)pl};
    p += pl + 1;
    if (hl)
        memcpy(p, b->host.p, hl);
    acl->host = (kc_str_t){p, (int32_t)hl};
    if (hl && memchr(acl->host.p, '/', hl) != NULL) {
        if (!kc_auth__cidr_parse(acl->host, acl->net, &acl->net_len, &acl->prefix)) {
            free(acl);
            return NULL;
        }
        acl->cidr = true;
    }
    return acl;
}

void kc_auth__acl_binding(const acl_t *acl, kc_acl_binding_t *b)
{
    b->resource_type = acl->resource_type;
    b->pattern_type = acl->pattern_type;
    b->operation = acl->operation;
    b->permission = acl->permission;
    b->resource_name = acl->name;
    b->principal = acl->principal;
    b->host = acl->host;
}

/* The by_res order: type, name descending, pattern, principal, host, operation, permission. */
typedef struct acl_key_s {
    int8_t type, pattern, op, perm;
    kc_str_t name, principal, host;
} acl_key_t;

static int key_cmp(const acl_key_t *a, const acl_t *b)
{
    if (a->type != b->resource_type)
        return a->type < b->resource_type ? -1 : 1;
    int c = kc_auth__cmp(b->name, a->name); /* reversed */
    if (c != 0)
        return c;
    if (a->pattern != b->pattern_type)
        return a->pattern < b->pattern_type ? -1 : 1;
    if ((c = kc_auth__cmp(a->principal, b->principal)) != 0)
        return c;
    if ((c = kc_auth__cmp(a->host, b->host)) != 0)
        return c;
    if (a->op != b->operation)
        return a->op < b->operation ? -1 : 1;
    if (a->perm != b->permission)
        return a->perm < b->permission ? -1 : 1;
    return 0;
}

static acl_key_t key_of_binding(const kc_acl_binding_t *b)
{
    return (acl_key_t){b->resource_type, b->pattern_type, b->operation, b->permission,
                       b->resource_name, b->principal,    b->host};
}

/* First index of by_res whose ACL is >= key. */
static size_t res_lower_bound(const kc_auth_t *a, const acl_key_t *key)
{
    size_t lo = 0, hi = a->n_acls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(key, a->by_res[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t id_lower_bound(const kc_auth_t *a, kc_uuid_t id)
{
    size_t lo = 0, hi = a->n_acls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(a->by_id[mid]->id.b, id.b, 16) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool acl_exists(const kc_auth_t *a, const acl_key_t *key)
{
    size_t i = res_lower_bound(a, key);
    return i < a->n_acls && key_cmp(key, a->by_res[i]) == 0;
}

void kc_auth__acl_remove(kc_auth_t *a, kc_uuid_t id)
{
    size_t i = id_lower_bound(a, id);
    if (i >= a->n_acls || memcmp(a->by_id[i]->id.b, id.b, 16) != 0)
        return;
    acl_t *acl = a->by_id[i];
    memmove(&a->by_id[i], &a->by_id[i + 1], (a->n_acls - i - 1) * sizeof(acl_t *));
    /* Find it in by_res: equal keys are possible only for distinct ids, so compare pointers. */
    kc_acl_binding_t b;
    kc_auth__acl_binding(acl, &b);
    acl_key_t key = key_of_binding(&b);
    size_t j = res_lower_bound(a, &key);
    while (j < a->n_acls && a->by_res[j] != acl)
        j++;
    if (j < a->n_acls)
        memmove(&a->by_res[j], &a->by_res[j + 1], (a->n_acls - j - 1) * sizeof(acl_t *));
    a->n_acls--;
    free(acl);
}

int kc_auth__acl_put(kc_auth_t *a, acl_t *acl)
{
    kc_auth__acl_remove(a, acl->id); /* a record for a known id replaces it */
    if (a->n_acls == a->cap_acls) {
        size_t cap = a->cap_acls ? a->cap_acls * 2 : 16;
        acl_t **r = realloc(a->by_res, cap * sizeof(*r));
        if (r == NULL)
            return KC_AUTH_ENOMEM;
        a->by_res = r;
        acl_t **d = realloc(a->by_id, cap * sizeof(*d));
        if (d == NULL)
            return KC_AUTH_ENOMEM;
        a->by_id = d;
        a->cap_acls = cap;
    }
    kc_acl_binding_t b;
    kc_auth__acl_binding(acl, &b);
    acl_key_t key = key_of_binding(&b);
    size_t i = res_lower_bound(a, &key);
    memmove(&a->by_res[i + 1], &a->by_res[i], (a->n_acls - i) * sizeof(acl_t *));
    a->by_res[i] = acl;
    size_t j = id_lower_bound(a, acl->id);
    memmove(&a->by_id[j + 1], &a->by_id[j], (a->n_acls - j) * sizeof(acl_t *));
    a->by_id[j] = acl;
    a->n_acls++;
    return KC_AUTH_OK;
}

size_t kc_auth_acl_count(const kc_auth_t *a)
{
    return a->n_acls;
}

/* ---- The state ----------------------------------------------------------------------------- */

static void super_free(kc_auth_t *a)
{
    for (size_t i = 0; i < a->n_super; i++)
        free(a->super_users[i]);
    free(a->super_users);
    a->super_users = NULL;
    a->n_super = 0;
}

int kc_auth_configure(kc_auth_t *a, const kc_auth_conf_t *conf)
{
    char **list = NULL;
    size_t n = 0;
    const char *s = conf && conf->super_users ? conf->super_users : "";
    while (*s) {
        const char *e = strchr(s, ';');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        const char *b = s, *t = s + len;
        while (b < t && (unsigned char)*b <= ' ') /* String.trim */
            b++;
        while (t > b && (unsigned char)t[-1] <= ' ')
            t--;
        if (t > b) {
            char **nl = realloc(list, (n + 1) * sizeof(*nl));
            char *one = nl ? strndup(b, (size_t)(t - b)) : NULL;
            if (nl)
                list = nl;
            if (one == NULL) {
                for (size_t i = 0; i < n; i++)
                    free(list[i]);
                free(list);
                return KC_AUTH_ENOMEM;
            }
            list[n++] = one;
        }
        s += len;
        if (*s == ';')
            s++;
    }
    super_free(a);
    a->super_users = list;
    a->n_super = n;
    a->allow_if_no_acl = conf ? conf->allow_if_no_acl : false;
    return KC_AUTH_OK;
}

kc_auth_t *kc_auth_new(const kc_auth_conf_t *conf)
{
    kc_auth_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    if (kc_auth_configure(a, conf) != KC_AUTH_OK) {
        free(a);
        return NULL;
    }
    return a;
}

void kc_auth_free(kc_auth_t *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->n_acls; i++)
        free(a->by_id[i]);
    free(a->by_id);
    free(a->by_res);
    kc_auth__scram_free_all(a);
    super_free(a);
    free(a);
}

/* ---- The authorizer ------------------------------------------------------------------------ */

/* What one authorization is asked, and what the walk found (MatchingRuleBuilder). */
typedef struct action_s {
    const kc_principal_t *principal;
    const char *host;
    size_t host_len;
    int8_t op;
    int8_t type;
    kc_str_t name;
    int ip_state; /* 0 not parsed yet, 1 parsed, -1 not an IP */
    uint8_t ip[16];
    uint8_t ip_len;
    bool has_resource_acls;
    bool allow;
    bool deny;
} action_t;

static bool host_matches(action_t *x, const acl_t *acl)
{
    if (str_is(acl->host, KC_AUTH_WILDCARD))
        return true;
    if (acl->cidr) {
        if (x->ip_state == 0)
            x->ip_state = ip_parse(x->host, x->host_len, x->ip, &x->ip_len) ? 1 : -1;
        return x->ip_state == 1 && cidr_holds(acl, x->ip, x->ip_len);
    }
    return (size_t)acl->host.len == x->host_len && memcmp(acl->host.p, x->host, x->host_len) == 0;
}

/* StandardAuthorizerData.findResult: 1 ALLOWED, -1 DENIED, 0 the ACL does not apply. */
static int find_result(action_t *x, const acl_t *acl)
{
    kc_str_t p = {x->principal->text, (int32_t)x->principal->len};
    if (!kc_str_eq(acl->principal, p) && !str_is(acl->principal, KC_PRINCIPAL_WILDCARD))
        return 0;
    if (!host_matches(x, acl))
        return 0;
    if (acl->operation != KC_OP_ALL) {
        if (acl->permission == KC_PERM_ALLOW) {
            switch (x->op) {
            case KC_OP_DESCRIBE:
                if (acl->operation != KC_OP_DESCRIBE && acl->operation != KC_OP_READ &&
                    acl->operation != KC_OP_WRITE && acl->operation != KC_OP_DELETE &&
                    acl->operation != KC_OP_ALTER)
                    return 0;
                break;
            case KC_OP_DESCRIBE_CONFIGS:
                if (acl->operation != KC_OP_DESCRIBE_CONFIGS &&
                    acl->operation != KC_OP_ALTER_CONFIGS)
                    return 0;
                break;
            default:
                if (x->op != acl->operation)
                    return 0;
            }
        } else if (x->op != acl->operation) {
            return 0;
        }
    }
    return acl->permission == KC_PERM_ALLOW ? 1 : -1;
}

static size_t matches_up_to(kc_str_t resource, kc_str_t pattern)
{
    size_t i = 0;
    while (i < (size_t)resource.len && i < (size_t)pattern.len && resource.p[i] == pattern.p[i])
        i++;
    return i;
}

/* StandardAuthorizerData.checkSection: walk forward from (type, exemplar name, pattern) while
 * the names are prefixes of the resource name, jumping to the common prefix when one is not. */
static void check_section(const kc_auth_t *a, action_t *x, kc_str_t ex_name, int8_t ex_pattern)
{
    acl_key_t key = {x->type, ex_pattern, 0, 0, ex_name, KC_STR_EMPTY, KC_STR_EMPTY};
    size_t i = res_lower_bound(a, &key);
    while (i < a->n_acls) {
        const acl_t *acl = a->by_res[i];
        if (acl->resource_type != x->type)
            break;
        size_t m = matches_up_to(x->name, acl->name);
        if (m == (size_t)acl->name.len) {
            if (acl->pattern_type == KC_PAT_LITERAL && m != (size_t)x->name.len) {
                i++;
                continue;
            }
        } else if (!(acl->pattern_type == KC_PAT_LITERAL && str_is(acl->name, KC_AUTH_WILDCARD))) {
            key.name = (kc_str_t){x->name.p, (int32_t)m};
            i = res_lower_bound(a, &key);
            continue;
        }
        x->has_resource_acls = true;
        int r = find_result(x, acl);
        if (r > 0) {
            x->allow = true;
        } else if (r < 0) {
            x->deny = true;
            return;
        }
        i++;
    }
}

static bool is_super(const kc_auth_t *a, const kc_principal_t *p)
{
    for (size_t i = 0; i < a->n_super; i++)
        if (strlen(a->super_users[i]) == p->len && memcmp(a->super_users[i], p->text, p->len) == 0)
            return true;
    return false;
}

bool kc_auth_authorize(const kc_auth_t *a, const kc_principal_t *principal, const char *host,
                       int8_t operation, int8_t resource_type, kc_str_t resource_name)
{
    if (principal == NULL || principal->text == NULL)
        return false;
    if (is_super(a, principal))
        return true;
    action_t x = {0};
    x.principal = principal;
    x.host = host ? host : "";
    x.host_len = strlen(x.host);
    x.op = operation;
    x.type = resource_type;
    x.name = resource_name.len > 0 ? resource_name : KC_STR_EMPTY;
    check_section(a, &x, x.name, KC_PAT_UNKNOWN);
    if (!x.deny)
        check_section(a, &x, KC_STR_LIT(KC_AUTH_WILDCARD), KC_PAT_LITERAL);
    if (x.deny)
        return false;
    if (x.allow)
        return true;
    return x.has_resource_acls ? false : a->allow_if_no_acl;
}

int32_t kc_auth_supported_ops(int8_t t)
{
#define B(op) ((int32_t)1 << (op))
    switch (t) {
    case KC_RES_TOPIC:
        return B(KC_OP_READ) | B(KC_OP_WRITE) | B(KC_OP_CREATE) | B(KC_OP_DESCRIBE) |
               B(KC_OP_DELETE) | B(KC_OP_ALTER) | B(KC_OP_DESCRIBE_CONFIGS) |
               B(KC_OP_ALTER_CONFIGS);
    case KC_RES_GROUP:
        return B(KC_OP_READ) | B(KC_OP_DESCRIBE) | B(KC_OP_DELETE) | B(KC_OP_DESCRIBE_CONFIGS) |
               B(KC_OP_ALTER_CONFIGS);
    case KC_RES_CLUSTER:
        return B(KC_OP_CREATE) | B(KC_OP_CLUSTER_ACTION) | B(KC_OP_DESCRIBE_CONFIGS) |
               B(KC_OP_ALTER_CONFIGS) | B(KC_OP_IDEMPOTENT_WRITE) | B(KC_OP_ALTER) |
               B(KC_OP_DESCRIBE);
    case KC_RES_TRANSACTIONAL_ID:
        return B(KC_OP_DESCRIBE) | B(KC_OP_WRITE);
    case KC_RES_DELEGATION_TOKEN:
        return B(KC_OP_DESCRIBE);
    case KC_RES_USER:
        return B(KC_OP_CREATE_TOKENS) | B(KC_OP_DESCRIBE_TOKENS);
    default:
        return 0;
    }
#undef B
}

int16_t kc_auth_authorization_error(int8_t t)
{
    switch (t) {
    case KC_RES_TOPIC:
        return KC_ERR_TOPIC_AUTHORIZATION_FAILED;
    case KC_RES_GROUP:
        return KC_ERR_GROUP_AUTHORIZATION_FAILED;
    case KC_RES_CLUSTER:
        return KC_ERR_CLUSTER_AUTHORIZATION_FAILED;
    case KC_RES_TRANSACTIONAL_ID:
        return KC_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    case KC_RES_DELEGATION_TOKEN:
        return KC_ERR_DELEGATION_TOKEN_AUTHORIZATION_FAILED;
    default:
        return KC_ERR_UNKNOWN_SERVER_ERROR;
    }
}

int32_t kc_auth_authorized_ops(const kc_auth_t *a, const kc_principal_t *principal,
                               const char *host, int8_t resource_type, kc_str_t resource_name)
{
    uint32_t supported = (uint32_t)kc_auth_supported_ops(resource_type), out = 0;
    for (int op = 0; op <= KC_OP_DESCRIBE_TOKENS; op++)
        if ((supported & (1u << op)) &&
            kc_auth_authorize(a, principal, host, (int8_t)op, resource_type, resource_name))
            out |= 1u << op;
    return (int32_t)out;
}

/* ---- CreateAcls ---------------------------------------------------------------------------- */

/* AclApis.handleCreateAcls then AclControlManager.validateNewAcl, in their order; a principal
 * without a colon is refused with validateNewAcl's message (KAFKA-18051), not with
 * SecurityUtils.parseKafkaPrincipal's. */
static void validate_new(const kc_acl_binding_t *b, kc_auth_result_t *r)
{
    int8_t rt = res_norm(b->resource_type), pt = pat_norm(b->pattern_type);
    int8_t op = op_norm(b->operation), pm = perm_norm(b->permission);
    const int16_t bad = KC_ERR_INVALID_REQUEST;
    result_static(r, 0, NULL);
    if (rt == KC_RES_CLUSTER && !str_is(b->resource_name, KC_AUTH_CLUSTER_NAME))
        result_static(r, bad,
                      "The only valid name for the CLUSTER resource is " KC_AUTH_CLUSTER_NAME);
    else if (b->resource_name.len <= 0)
        result_static(r, bad, "Invalid empty resource name");
    else if (rt == KC_RES_UNKNOWN || rt == KC_RES_ANY)
        result_owned(r, bad,
                     kc_auth__fmt("Invalid resourceType %s", kc_auth_resource_type_name(rt)));
    else if (pt != KC_PAT_LITERAL && pt != KC_PAT_PREFIXED)
        result_owned(r, bad, kc_auth__fmt("Invalid patternType %s", kc_auth_pattern_type_name(pt)));
    else if (op == KC_OP_UNKNOWN || op == KC_OP_ANY)
        result_owned(r, bad, kc_auth__fmt("Invalid operation %s", kc_auth_operation_name(op)));
    else if (pm != KC_PERM_ALLOW && pm != KC_PERM_DENY)
        result_owned(r, bad,
                     kc_auth__fmt("Invalid permissionType %s", kc_auth_permission_name(pm)));
    else if (b->host.len <= 0)
        result_static(r, bad, "Invalid empty host");
    else if (memchr(b->host.p, '/', (size_t)b->host.len) != NULL) {
        uint8_t net[16], nl, pre;
        if (!kc_auth__cidr_parse(b->host, net, &nl, &pre))
            result_owned(r, bad,
                         kc_auth__fmt("Invalid CIDR notation for host pattern '%.*s'",
                                      (int)b->host.len, b->host.p));
    }
    if (r->error == 0 &&
        (b->principal.len <= 0 || !memchr(b->principal.p, ':', (size_t)b->principal.len)))
        result_owned(r, bad,
                     kc_auth__fmt("Could not parse principal from `%.*s` (no colon is present "
                                  "separating the principal type from the principal name)",
                                  (int)(b->principal.len > 0 ? b->principal.len : 0),
                                  b->principal.len > 0 ? b->principal.p : ""));
}

static bool same_binding(const kc_acl_binding_t *x, const kc_acl_binding_t *y)
{
    return x->resource_type == y->resource_type && x->pattern_type == y->pattern_type &&
           x->operation == y->operation && x->permission == y->permission &&
           kc_str_eq(x->resource_name, y->resource_name) && kc_str_eq(x->principal, y->principal) &&
           kc_str_eq(x->host, y->host);
}

static int new_id(const kc_auth_t *a, kc_auth_rand_t rand, const kc_uuid_t *taken, size_t n_taken,
                  kc_uuid_t *out)
{
    for (;;) {
        if (rand.fill(rand.arg, out->b, 16) != 0)
            return -1;
        /* A version 4 UUID, as Uuid.randomUuid; never the all-zero id. */
        out->b[6] = (uint8_t)((out->b[6] & 0x0f) | 0x40);
        out->b[8] = (uint8_t)((out->b[8] & 0x3f) | 0x80);
        size_t i = id_lower_bound(a, *out);
        bool dup = i < a->n_acls && memcmp(a->by_id[i]->id.b, out->b, 16) == 0;
        for (size_t k = 0; !dup && k < n_taken; k++)
            dup = memcmp(taken[k].b, out->b, 16) == 0;
        if (!dup)
            return 0;
    }
}

int kc_auth_acl_create(const kc_auth_t *a, const kc_acl_binding_t *bindings, size_t n,
                       kc_auth_rand_t rand, kc_auth_emit_fn emit, void *arg,
                       kc_auth_result_t *results)
{
    kc_uuid_t *ids = n ? malloc(n * sizeof(*ids)) : NULL;
    const kc_acl_binding_t **fresh = n ? malloc(n * sizeof(*fresh)) : NULL;
    size_t n_fresh = 0;
    int rc = KC_AUTH_OK;
    if (n && (ids == NULL || fresh == NULL))
        rc = KC_AUTH_ENOMEM;
    for (size_t i = 0; rc == KC_AUTH_OK && i < n; i++) {
        const kc_acl_binding_t *b = &bindings[i];
        validate_new(b, &results[i]);
        if (results[i].error != 0)
            continue;
        acl_key_t key = key_of_binding(b);
        bool dup = acl_exists(a, &key);
        for (size_t k = 0; !dup && k < n_fresh; k++)
            dup = same_binding(fresh[k], b);
        if (dup)
            continue; /* existingAcls.add() was false: success, no record */
        if (new_id(a, rand, ids, n_fresh, &ids[n_fresh]) != 0 ||
            kc_auth__emit_acl_binding(ids[n_fresh], b, emit, arg) != 0) {
            rc = KC_AUTH_ENOMEM;
            break;
        }
        fresh[n_fresh++] = b;
    }
    free(ids);
    free(fresh);
    return rc;
}

/* ---- Filters, DescribeAcls, DeleteAcls ----------------------------------------------------- */

kc_auth_result_t kc_auth_acl_filter_check(const kc_acl_binding_t *f)
{
    kc_auth_result_t r = {0};
    if (res_norm(f->resource_type) == KC_RES_UNKNOWN || pat_norm(f->pattern_type) == KC_PAT_UNKNOWN)
        result_static(&r, KC_ERR_INVALID_REQUEST, "Unknown patternFilter.");
    else if (op_norm(f->operation) == KC_OP_UNKNOWN || perm_norm(f->permission) == KC_PERM_UNKNOWN)
        result_static(&r, KC_ERR_INVALID_REQUEST, "Unknown entryFilter.");
    return r;
}

/* ResourcePatternFilter.matches. */
static bool pattern_matches(const kc_acl_binding_t *f, const kc_acl_binding_t *b)
{
    int8_t ft = res_norm(f->resource_type), fp = pat_norm(f->pattern_type);
    if (ft != KC_RES_ANY && ft != b->resource_type)
        return false;
    if (fp != KC_PAT_ANY && fp != KC_PAT_MATCH && fp != b->pattern_type)
        return false;
    if (f->resource_name.len < 0)
        return true;
    if (fp == KC_PAT_ANY || fp == b->pattern_type)
        return kc_str_eq(f->resource_name, b->resource_name);
    switch (b->pattern_type) {
    case KC_PAT_LITERAL:
        return kc_str_eq(f->resource_name, b->resource_name) ||
               str_is(b->resource_name, KC_AUTH_WILDCARD);
    case KC_PAT_PREFIXED:
        return f->resource_name.len >= b->resource_name.len &&
               memcmp(f->resource_name.p, b->resource_name.p, (size_t)b->resource_name.len) == 0;
    default:
        return false;
    }
}

/* AccessControlEntryFilter.matches. */
static bool entry_matches(const kc_acl_binding_t *f, const kc_acl_binding_t *b)
{
    if (f->principal.len >= 0 && !kc_str_eq(f->principal, b->principal))
        return false;
    if (f->host.len >= 0 && !kc_str_eq(f->host, b->host))
        return false;
    int8_t op = op_norm(f->operation), pm = perm_norm(f->permission);
    if (op != KC_OP_ANY && op != b->operation)
        return false;
    return pm == KC_PERM_ANY || pm == b->permission;
}

bool kc_auth_acl_filter_matches(const kc_acl_binding_t *f, const kc_acl_binding_t *b)
{
    return pattern_matches(f, b) && entry_matches(f, b);
}

int kc_auth_acl_describe(const kc_auth_t *a, const kc_acl_binding_t *filter, kc_acl_visit_fn fn,
                         void *arg)
{
    for (size_t i = 0; i < a->n_acls; i++) {
        kc_acl_binding_t b;
        kc_auth__acl_binding(a->by_res[i], &b);
        if (kc_auth_acl_filter_matches(filter, &b)) {
            int rc = fn(arg, &b);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int kc_auth_acl_delete(const kc_auth_t *a, const kc_acl_binding_t *filters, size_t n,
                       kc_acl_deleted_fn fn, void *fn_arg, kc_auth_emit_fn emit, void *arg,
                       kc_auth_result_t *results)
{
    bool *gone = a->n_acls ? calloc(a->n_acls, sizeof(bool)) : NULL;
    if (a->n_acls && gone == NULL)
        return KC_AUTH_ENOMEM;
    int rc = KC_AUTH_OK;
    for (size_t f = 0; rc == KC_AUTH_OK && f < n; f++) {
        results[f] = kc_auth_acl_filter_check(&filters[f]);
        if (results[f].error != 0)
            continue;
        for (size_t i = 0; i < a->n_acls; i++) {
            kc_acl_binding_t b;
            kc_auth__acl_binding(a->by_res[i], &b);
            if (!kc_auth_acl_filter_matches(&filters[f], &b))
                continue;
            if (fn != NULL && fn(fn_arg, f, &b) != 0) {
                rc = KC_AUTH_ENOMEM;
                break;
            }
            if (!gone[i]) {
                gone[i] = true;
                if (kc_auth__emit_acl_tombstone(a->by_res[i]->id, emit, arg) != 0) {
                    rc = KC_AUTH_ENOMEM;
                    break;
                }
            }
        }
    }
    free(gone);
    return rc;
}
