/* test_auth_acl.c - principals, the ACL store and the authorizer (src/auth/acl.c, records.c).
 *
 * The authorizer's rules are Kafka's StandardAuthorizer rules, written as a table: each row
 * is a set of ACLs, a request (principal, host, operation, resource) and the answer Kafka
 * gives. A randomised test then checks the sorted-index lookup against a plain scan of every
 * ACL over thousands of random ACL sets and requests. CreateAcls validation, the filters of
 * DescribeAcls/DeleteAcls, authorized_operations and the records (apply, tombstones,
 * snapshot, malformed input) follow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "auth_support.h"
#include "proto/errors.h"

/* A binding from C strings; NULL name/principal/host = a null view (filters: any). */
static kc_acl_binding_t B(int8_t type, const char *name, int8_t pat, const char *principal,
                          const char *host, int8_t op, int8_t perm)
{
    return (kc_acl_binding_t){type,          pat, op, perm, kc_str_c(name), kc_str_c(principal),
                              kc_str_c(host)};
}

/* Create the bindings through CreateAcls and apply the records. */
static void add_acls(kc_auth_t *a, const kc_acl_binding_t *b, size_t n)
{
    static uint32_t seed = 1;
    script_t sc = {NULL, 0, 0, seed++ * 7919u};
    trecs_t recs = {0};
    kc_auth_result_t res[64];
    assert_true(n <= 64);
    assert_int_equal(kc_auth_acl_create(a, b, n, script_rand(&sc), trecs_emit, &recs, res),
                     KC_AUTH_OK);
    for (size_t i = 0; i < n; i++) {
        if (res[i].error != 0)
            fail_msg("binding %zu refused: %s", i, res[i].message);
        kc_auth_result_clear(&res[i]);
    }
    trecs_apply(&recs, a);
}

static kc_principal_t P(const char *s)
{
    kc_principal_t p;
    assert_int_equal(kc_principal_parse(kc_str_c(s), &p), KC_AUTH_OK);
    return p;
}

static bool can(const kc_auth_t *a, const char *principal, const char *host, int8_t op, int8_t type,
                const char *name)
{
    kc_principal_t p = P(principal);
    bool r = kc_auth_authorize(a, &p, host, op, type, kc_str_c(name));
    kc_principal_free(&p);
    return r;
}

/* ---- Principals ---------------------------------------------------------------------------- */

static void test_principals(void **state)
{
    (void)state;
    kc_principal_t p;
    assert_int_equal(kc_principal_parse(S("User:alice"), &p), KC_AUTH_OK);
    assert_string_equal(p.text, "User:alice");
    assert_true(kc_str_eq(kc_principal_type(&p), S("User")));
    assert_true(kc_str_eq(kc_principal_name(&p), S("alice")));
    kc_principal_free(&p);
    /* Split at the first ':'; empty parts are allowed (SecurityUtils.parseKafkaPrincipal). */
    assert_int_equal(kc_principal_parse(S("User:CN=x,O=a:b"), &p), KC_AUTH_OK);
    assert_true(kc_str_eq(kc_principal_name(&p), S("CN=x,O=a:b")));
    kc_principal_free(&p);
    assert_int_equal(kc_principal_parse(S(":"), &p), KC_AUTH_OK);
    assert_int_equal(kc_principal_type(&p).len, 0);
    assert_int_equal(kc_principal_name(&p).len, 0);
    kc_principal_free(&p);
    assert_int_equal(kc_principal_parse(S("alice"), &p), KC_AUTH_EINVAL);
    assert_null(p.text);
    assert_int_equal(kc_principal_parse(S(""), &p), KC_AUTH_EINVAL);
    assert_int_equal(kc_principal_parse(KC_STR_NULL, &p), KC_AUTH_EINVAL);
    kc_principal_t anon, copy;
    assert_int_equal(kc_principal_anonymous(&anon), KC_AUTH_OK);
    assert_string_equal(anon.text, KC_PRINCIPAL_ANONYMOUS);
    assert_int_equal(kc_principal_copy(&anon, &copy), KC_AUTH_OK);
    assert_true(kc_principal_eq(&anon, &copy));
    kc_principal_t bob;
    assert_int_equal(kc_principal_user(S("bob"), &bob), KC_AUTH_OK);
    assert_string_equal(bob.text, "User:bob");
    assert_false(kc_principal_eq(&anon, &bob));
    kc_principal_free(&anon);
    kc_principal_free(&copy);
    kc_principal_free(&bob);
}

static void test_host_string(void **state)
{
    (void)state;
    char buf[40];
    const uint8_t v4[4] = {10, 0, 0, 255};
    assert_string_equal(kc_auth_host_string(v4, 4, buf), "10.0.0.255");
    uint8_t v6[16] = {0};
    v6[15] = 1;
    assert_string_equal(kc_auth_host_string(v6, 16, buf), "0:0:0:0:0:0:0:1");
    const uint8_t v6b[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd, 0, 0x0f};
    assert_string_equal(kc_auth_host_string(v6b, 16, buf), "2001:db8:0:0:0:0:abcd:f");
    const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 2};
    assert_string_equal(kc_auth_host_string(mapped, 16, buf), "192.168.1.2");
    assert_string_equal(kc_auth_host_string(v4, 3, buf), "");
}

/* ---- The authorizer's rules, as a table ---------------------------------------------------- */

#define T  KC_RES_TOPIC
#define G  KC_RES_GROUP
#define L  KC_PAT_LITERAL
#define PX KC_PAT_PREFIXED
#define AL KC_PERM_ALLOW
#define DN KC_PERM_DENY

/* One row: the ACLs as "type|name|pattern|principal|host|operation|permission" separated by
 * ';' (type T, G or C; pattern L or P; permission A or D; operation by Kafka's name), then the
 * request and Kafka's answer. */
typedef struct rule_row_s {
    const char *what;
    const char *acls;
    const char *principal;
    const char *host;
    const char *op;
    char type;
    const char *name;
    bool allow_if_no_acl;
    bool expect;
} rule_row_t;

static const rule_row_t RULES[] = {
    {"no ACL, default deny", "", "User:alice", "10.1.2.3", "READ", 'T', "t", false, false},
    {"no ACL, allow.everyone.if.no.acl.found", "", "User:alice", "10.1.2.3", "READ", 'T', "t", true,
     true},
    {"an ACL for someone else on the resource: deny even with allow-if-no-acl",
     "T|t|L|User:bob|*|READ|A", "User:alice", "10.1.2.3", "READ", 'T', "t", true, false},
    {"an ACL on another resource leaves allow-if-no-acl in force", "T|u|L|User:bob|*|READ|A",
     "User:alice", "10.1.2.3", "READ", 'T', "t", true, true},
    {"ALLOW READ", "T|t|L|User:alice|*|READ|A", "User:alice", "10.1.2.3", "READ", 'T', "t", false,
     true},
    {"ALLOW READ implies DESCRIBE", "T|t|L|User:alice|*|READ|A", "User:alice", "10.1.2.3",
     "DESCRIBE", 'T', "t", false, true},
    {"ALLOW WRITE implies DESCRIBE", "T|t|L|User:alice|*|WRITE|A", "User:alice", "10.1.2.3",
     "DESCRIBE", 'T', "t", false, true},
    {"ALLOW DELETE implies DESCRIBE", "G|g|L|User:alice|*|DELETE|A", "User:alice", "10.1.2.3",
     "DESCRIBE", 'G', "g", false, true},
    {"ALLOW ALTER implies DESCRIBE", "T|t|L|User:alice|*|ALTER|A", "User:alice", "10.1.2.3",
     "DESCRIBE", 'T', "t", false, true},
    {"ALLOW CREATE does not imply DESCRIBE", "T|t|L|User:alice|*|CREATE|A", "User:alice",
     "10.1.2.3", "DESCRIBE", 'T', "t", false, false},
    {"ALLOW READ does not allow WRITE", "T|t|L|User:alice|*|READ|A", "User:alice", "10.1.2.3",
     "WRITE", 'T', "t", false, false},
    {"ALLOW DESCRIBE does not allow READ", "T|t|L|User:alice|*|DESCRIBE|A", "User:alice",
     "10.1.2.3", "READ", 'T', "t", false, false},
    {"ALLOW ALTER_CONFIGS implies DESCRIBE_CONFIGS", "G|g|L|User:alice|*|ALTER_CONFIGS|A",
     "User:alice", "10.1.2.3", "DESCRIBE_CONFIGS", 'G', "g", false, true},
    {"ALLOW DESCRIBE_CONFIGS does not allow ALTER_CONFIGS", "G|g|L|User:alice|*|DESCRIBE_CONFIGS|A",
     "User:alice", "10.1.2.3", "ALTER_CONFIGS", 'G', "g", false, false},
    {"ALLOW ALTER does not imply DESCRIBE_CONFIGS", "G|g|L|User:alice|*|ALTER|A", "User:alice",
     "10.1.2.3", "DESCRIBE_CONFIGS", 'G', "g", false, false},
    {"ALLOW ALL allows anything", "T|t|L|User:alice|*|ALL|A", "User:alice", "10.1.2.3",
     "ALTER_CONFIGS", 'T', "t", false, true},
    {"ALLOW on the cluster", "C|kafka-cluster|L|User:alice|*|ALTER|A", "User:alice", "10.1.2.3",
     "DESCRIBE", 'C', "kafka-cluster", false, true},
    {"DENY wins over ALLOW", "T|t|L|User:alice|*|ALL|A;T|t|L|User:alice|*|READ|D", "User:alice",
     "10.1.2.3", "READ", 'T', "t", false, false},
    {"DENY READ does not deny DESCRIBE", "T|t|L|User:alice|*|ALL|A;T|t|L|User:alice|*|READ|D",
     "User:alice", "10.1.2.3", "DESCRIBE", 'T', "t", false, true},
    {"DENY ALL denies everything", "T|t|L|User:alice|*|READ|A;T|t|L|User:alice|*|ALL|D",
     "User:alice", "10.1.2.3", "DESCRIBE", 'T', "t", false, false},
    {"DENY for User:* wins over an ALLOW for the user",
     "T|t|L|User:alice|*|READ|A;T|t|L|User:*|*|READ|D", "User:alice", "10.1.2.3", "READ", 'T', "t",
     false, false},
    {"ALLOW for User:* applies to every principal", "T|t|L|User:*|*|READ|A", "Group:x", "10.1.2.3",
     "READ", 'T', "t", false, true},
    {"DENY on a PREFIXED pattern wins over a LITERAL ALLOW",
     "T|orders|L|User:alice|*|READ|A;T|ord|P|User:alice|*|READ|D", "User:alice", "10.1.2.3", "READ",
     'T', "orders", false, false},
    {"DENY on the '*' resource wins", "T|t|L|User:alice|*|READ|A;T|*|L|User:alice|*|READ|D",
     "User:alice", "10.1.2.3", "READ", 'T', "t", false, false},
    {"LITERAL '*' matches any name", "T|*|L|User:alice|*|READ|A", "User:alice", "10.1.2.3", "READ",
     'T', "anything", false, true},
    {"PREFIXED matches a longer name", "T|team-|P|User:alice|*|READ|A", "User:alice", "10.1.2.3",
     "READ", 'T', "team-orders", false, true},
    {"PREFIXED matches the name itself", "T|team-|P|User:alice|*|READ|A", "User:alice", "10.1.2.3",
     "READ", 'T', "team-", false, true},
    {"PREFIXED does not match a shorter name", "T|team-|P|User:alice|*|READ|A", "User:alice",
     "10.1.2.3", "READ", 'T', "team", false, false},
    {"PREFIXED '*' is a prefix, not a wildcard", "T|*|P|User:alice|*|READ|A", "User:alice",
     "10.1.2.3", "READ", 'T', "orders", false, false},
    {"LITERAL does not match a longer name", "T|team|L|User:alice|*|READ|A", "User:alice",
     "10.1.2.3", "READ", 'T', "team-orders", false, false},
    {"names are case-sensitive", "T|Orders|L|User:alice|*|READ|A", "User:alice", "10.1.2.3", "READ",
     'T', "orders", false, false},
    {"another principal's ALLOW does not apply", "T|t|L|User:bob|*|READ|A", "User:alice",
     "10.1.2.3", "READ", 'T', "t", false, false},
    {"another resource type's ALLOW does not apply", "G|t|L|User:alice|*|READ|A", "User:alice",
     "10.1.2.3", "READ", 'T', "t", false, false},
    {"host equal", "T|t|L|User:alice|10.1.2.3|READ|A", "User:alice", "10.1.2.3", "READ", 'T', "t",
     false, true},
    {"host different", "T|t|L|User:alice|10.1.2.4|READ|A", "User:alice", "10.1.2.3", "READ", 'T',
     "t", true, false},
    {"CIDR holds the host", "T|t|L|User:alice|10.1.0.0/16|READ|A", "User:alice", "10.1.2.3", "READ",
     'T', "t", false, true},
    {"CIDR /32", "T|t|L|User:alice|10.1.2.3/32|READ|A", "User:alice", "10.1.2.3", "READ", 'T', "t",
     false, true},
    {"CIDR /0 holds every IPv4", "T|t|L|User:alice|0.0.0.0/0|READ|A", "User:alice", "10.1.2.3",
     "READ", 'T', "t", false, true},
    {"CIDR does not hold the host", "T|t|L|User:alice|10.2.0.0/16|READ|A", "User:alice", "10.1.2.3",
     "READ", 'T', "t", false, false},
    {"CIDR with host bits set still matches its network", "T|t|L|User:alice|10.1.9.9/16|READ|A",
     "User:alice", "10.1.2.3", "READ", 'T', "t", false, true},
    {"DENY by CIDR", "T|t|L|User:alice|*|READ|A;T|t|L|User:alice|10.0.0.0/8|READ|D", "User:alice",
     "10.1.2.3", "READ", 'T', "t", false, false},
    {"IPv6 CIDR", "T|t|L|User:alice|2001:db8::/32|READ|A", "User:alice", "2001:db8:0:0:0:0:0:7",
     "READ", 'T', "t", false, true},
    {"an IPv4 CIDR does not hold an IPv6 host", "T|t|L|User:alice|0.0.0.0/0|READ|A", "User:alice",
     "0:0:0:0:0:0:0:1", "READ", 'T', "t", false, false},
};

static int8_t type_of(char c)
{
    return c == 'T' ? KC_RES_TOPIC : c == 'G' ? KC_RES_GROUP : KC_RES_CLUSTER;
}

static int8_t op_named(const char *s, size_t n)
{
    for (int8_t op = 0; op <= KC_OP_DESCRIBE_TOKENS; op++)
        if (strlen(kc_auth_operation_name(op)) == n &&
            memcmp(kc_auth_operation_name(op), s, n) == 0)
            return op;
    fail_msg("no operation %.*s", (int)n, s);
    return 0;
}

/* Parse a row's ACLs into b (views into the row's string). */
static size_t parse_acls(const char *spec, kc_acl_binding_t *b, size_t cap)
{
    size_t n = 0;
    const char *p = spec;
    while (*p) {
        kc_str_t f[7];
        for (int i = 0; i < 7; i++) {
            size_t len = strcspn(p, i < 6 ? "|" : ";");
            f[i] = (kc_str_t){p, (int32_t)len};
            p += len + (p[len] != '\0');
        }
        assert_true(n < cap);
        b[n++] = (kc_acl_binding_t){type_of(f[0].p[0]),
                                    f[2].p[0] == 'L' ? KC_PAT_LITERAL : KC_PAT_PREFIXED,
                                    op_named(f[5].p, (size_t)f[5].len),
                                    f[6].p[0] == 'A' ? KC_PERM_ALLOW : KC_PERM_DENY,
                                    f[1],
                                    f[3],
                                    f[4]};
    }
    return n;
}

static void test_authorizer_rules(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(RULES) / sizeof(RULES[0]); i++) {
        const rule_row_t *r = &RULES[i];
        kc_auth_conf_t conf = {NULL, r->allow_if_no_acl};
        kc_auth_t *a = kc_auth_new(&conf);
        assert_non_null(a);
        kc_acl_binding_t acls[8];
        add_acls(a, acls, parse_acls(r->acls, acls, 8));
        bool got = can(a, r->principal, r->host, op_named(r->op, strlen(r->op)), type_of(r->type),
                       r->name);
        if (got != r->expect)
            fail_msg("row %zu (%s): expected %s", i, r->what, r->expect ? "allow" : "deny");
        kc_auth_free(a);
    }
}

static void test_super_users(void **state)
{
    (void)state;
    kc_auth_conf_t conf = {" User:admin ; User:ops;;", false};
    kc_auth_t *a = kc_auth_new(&conf);
    assert_non_null(a);
    kc_acl_binding_t deny = B(T, "*", L, "User:*", "*", KC_OP_ALL, DN);
    add_acls(a, &deny, 1);
    assert_true(can(a, "User:admin", "1.2.3.4", KC_OP_DELETE, T, "x"));
    assert_true(can(a, "User:ops", "1.2.3.4", KC_OP_ALTER, KC_RES_CLUSTER, "kafka-cluster"));
    assert_false(can(a, "User:other", "1.2.3.4", KC_OP_READ, T, "x"));
    assert_false(can(a, "User:admin2", "1.2.3.4", KC_OP_READ, T, "x"));
    /* A reload replaces the list. */
    kc_auth_conf_t conf2 = {"User:other", false};
    assert_int_equal(kc_auth_configure(a, &conf2), KC_AUTH_OK);
    assert_false(can(a, "User:admin", "1.2.3.4", KC_OP_READ, T, "x"));
    assert_true(can(a, "User:other", "1.2.3.4", KC_OP_READ, T, "x"));
    kc_auth_free(a);
}

/* Kafka's own example of the walk (StandardAuthorizerData.findAclRule): for "foobar" only
 * foobar/PREFIXED, foo/PREFIXED and f/PREFIXED apply, whatever else is near in the index. */
static void test_prefix_walk(void **state)
{
    (void)state;
    const char *al = "User:alice";
    kc_acl_binding_t acls[] = {
        B(T, "gar", PX, al, "*", KC_OP_READ, DN),    B(T, "foob", L, al, "*", KC_OP_READ, DN),
        B(T, "fb", PX, al, "*", KC_OP_READ, DN),     B(T, "fa", PX, al, "*", KC_OP_READ, DN),
        B(T, "eeee", L, al, "*", KC_OP_READ, DN),    B(T, "foobarx", PX, al, "*", KC_OP_READ, DN),
        B(T, "f", PX, al, "*", KC_OP_WRITE, AL),     B(T, "foo", PX, al, "*", KC_OP_DESCRIBE, AL),
        B(T, "foobar", PX, al, "*", KC_OP_READ, AL),
    };
    kc_auth_t *a = kc_auth_new(NULL);
    add_acls(a, acls, sizeof(acls) / sizeof(acls[0]));
    assert_true(can(a, al, "h", KC_OP_READ, T, "foobar"));
    assert_true(can(a, al, "h", KC_OP_WRITE, T, "foobar"));
    assert_true(can(a, al, "h", KC_OP_DESCRIBE, T, "foobar"));
    assert_false(can(a, al, "h", KC_OP_READ, T, "foob"));     /* the LITERAL DENY */
    assert_false(can(a, al, "h", KC_OP_READ, T, "foobarxy")); /* foobarx PREFIXED DENY */
    assert_true(can(a, al, "h", KC_OP_WRITE, T, "fzz"));
    assert_false(can(a, al, "h", KC_OP_READ, T, "fbi"));
    kc_auth_free(a);
}

/* ---- The index against a plain scan -------------------------------------------------------- */

static bool ref_pattern(const kc_acl_binding_t *b, const char *name)
{
    size_t n = strlen(name), m = (size_t)b->resource_name.len;
    if (b->pattern_type == L)
        return (m == n && memcmp(b->resource_name.p, name, n) == 0) ||
               kc_str_eq_c(b->resource_name, "*");
    return m <= n && memcmp(b->resource_name.p, name, m) == 0;
}

static int ref_op(const kc_acl_binding_t *b, int8_t op)
{
    if (b->operation == KC_OP_ALL || b->operation == op)
        return 1;
    if (b->permission != AL)
        return 0;
    if (op == KC_OP_DESCRIBE)
        return b->operation == KC_OP_READ || b->operation == KC_OP_WRITE ||
               b->operation == KC_OP_DELETE || b->operation == KC_OP_ALTER;
    if (op == KC_OP_DESCRIBE_CONFIGS)
        return b->operation == KC_OP_ALTER_CONFIGS;
    return 0;
}

/* The rules stated plainly, over every ACL. */
static bool ref_authorize(const kc_acl_binding_t *acls, size_t n, const char *principal,
                          const char *host, int8_t op, int8_t type, const char *name, bool dflt)
{
    bool any = false, allow = false;
    for (size_t i = 0; i < n; i++) {
        const kc_acl_binding_t *b = &acls[i];
        if (b->resource_type != type || !ref_pattern(b, name))
            continue;
        any = true;
        if (!kc_str_eq_c(b->principal, principal) && !kc_str_eq_c(b->principal, "User:*"))
            continue;
        if (!kc_str_eq_c(b->host, "*") && !kc_str_eq_c(b->host, host))
            continue;
        if (!ref_op(b, op))
            continue;
        if (b->permission == DN)
            return false;
        allow = true;
    }
    return allow || (!any && dflt);
}

static uint32_t next_rnd(uint32_t *r, uint32_t n)
{
    *r = *r * 1103515245u + 12345u;
    return (*r >> 8) % n;
}

static void test_index_matches_scan(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "ab", "abc", "abd", "b", "ba", "*", "abcd", "x*", ""};
    static const char *const principals[] = {"User:alice", "User:bob", "User:*"};
    static const char *const hosts[] = {"*", "10.0.0.1", "10.0.0.2"};
    static const int8_t ops[] = {KC_OP_ALL,    KC_OP_READ,          KC_OP_WRITE,
                                 KC_OP_DELETE, KC_OP_DESCRIBE,      KC_OP_CREATE,
                                 KC_OP_ALTER,  KC_OP_ALTER_CONFIGS, KC_OP_DESCRIBE_CONFIGS};
    uint32_t rnd = 12345;
#define RND(n) next_rnd(&rnd, (n))
    for (int round = 0; round < 300; round++) {
        kc_auth_conf_t conf = {NULL, round % 2 == 0};
        kc_auth_t *a = kc_auth_new(&conf);
        kc_acl_binding_t acls[24];
        size_t n = RND(24);
        for (size_t i = 0; i < n; i++) {
            const char *nm = names[RND(9)]; /* never "" in an ACL */
            int8_t ty = RND(2) ? T : G, pt = RND(2) ? L : PX;
            const char *pr = principals[RND(3)], *ho = hosts[RND(3)];
            int8_t op = ops[RND(9)], pm = RND(3) ? AL : DN;
            acls[i] = B(ty, nm, pt, pr, ho, op, pm);
        }
        add_acls(a, acls, n);
        for (int q = 0; q < 60; q++) {
            const char *nm = names[RND(10)];
            const char *pr = principals[RND(2)], *ho = hosts[1 + RND(2)];
            int8_t op = ops[1 + RND(8)], ty = RND(2) ? T : G;
            bool want = ref_authorize(acls, n, pr, ho, op, ty, nm, conf.allow_if_no_acl);
            if (can(a, pr, ho, op, ty, nm) != want)
                fail_msg("round %d query %d: %s %s op %d type %d '%s': expected %d", round, q, pr,
                         ho, op, ty, nm, want);
        }
        kc_auth_free(a);
    }
#undef RND
}

/* ---- authorized_operations ----------------------------------------------------------------- */

static void test_authorized_ops(void **state)
{
    (void)state;
#define BIT(op) ((int32_t)1 << (op))
    assert_int_equal(kc_auth_supported_ops(G), BIT(KC_OP_READ) | BIT(KC_OP_DESCRIBE) |
                                                   BIT(KC_OP_DELETE) | BIT(KC_OP_DESCRIBE_CONFIGS) |
                                                   BIT(KC_OP_ALTER_CONFIGS));
    assert_int_equal(kc_auth_supported_ops(KC_RES_CLUSTER),
                     BIT(KC_OP_CREATE) | BIT(KC_OP_CLUSTER_ACTION) | BIT(KC_OP_DESCRIBE_CONFIGS) |
                         BIT(KC_OP_ALTER_CONFIGS) | BIT(KC_OP_IDEMPOTENT_WRITE) | BIT(KC_OP_ALTER) |
                         BIT(KC_OP_DESCRIBE));
    assert_int_equal(kc_auth_supported_ops(T), 3576); /* what Kafka answers for a topic */
    assert_int_equal(kc_auth_supported_ops(KC_RES_ANY), 0);
    assert_int_equal(kc_auth_authorization_error(KC_RES_TOPIC), 29);
    assert_int_equal(kc_auth_authorization_error(KC_RES_GROUP), 30);
    assert_int_equal(kc_auth_authorization_error(KC_RES_CLUSTER), 31);
    assert_int_equal(kc_auth_authorization_error(KC_RES_TRANSACTIONAL_ID), 53);
    assert_int_equal(kc_auth_authorization_error(KC_RES_DELEGATION_TOKEN), 65);
    assert_int_equal(kc_auth_authorization_error(KC_RES_USER), -1);
    kc_auth_t *a = kc_auth_new(NULL);
    kc_acl_binding_t acls[] = {
        B(G, "g", L, "User:alice", "*", KC_OP_READ, AL),
        B(G, "g", L, "User:alice", "*", KC_OP_ALTER_CONFIGS, AL),
        B(G, "g", L, "User:alice", "*", KC_OP_DESCRIBE_CONFIGS, DN),
    };
    add_acls(a, acls, 3);
    kc_principal_t p = P("User:alice");
    assert_int_equal(kc_auth_authorized_ops(a, &p, "h", G, S("g")),
                     BIT(KC_OP_READ) | BIT(KC_OP_DESCRIBE) | BIT(KC_OP_ALTER_CONFIGS));
    assert_int_equal(kc_auth_authorized_ops(a, &p, "h", G, S("other")), 0);
    kc_principal_free(&p);
    kc_auth_free(a);
#undef BIT
}

/* ---- CreateAcls ---------------------------------------------------------------------------- */

static void test_create_validation(void **state)
{
    (void)state;
    const char *al = "User:alice";
    struct {
        kc_acl_binding_t b;
        const char *msg; /* NULL: accepted */
    } rows[] = {
        {B(T, "t", L, al, "*", KC_OP_READ, AL), NULL},
        {B(T, "t", PX, al, "10.0.0.0/8", KC_OP_WRITE, DN), NULL},
        {B(KC_RES_CLUSTER, "kafka-cluster", L, al, "*", KC_OP_ALTER, AL), NULL},
        {B(T, "t", L, al, "2001:db8::/32", KC_OP_READ, AL), NULL},
        {B(T, "t", L, al, "example.com", KC_OP_READ, AL), NULL},
        {B(KC_RES_CLUSTER, "other", L, al, "*", KC_OP_ALTER, AL),
         "The only valid name for the CLUSTER resource is kafka-cluster"},
        {B(T, "", L, al, "*", KC_OP_READ, AL), "Invalid empty resource name"},
        {B(KC_RES_ANY, "t", L, al, "*", KC_OP_READ, AL), "Invalid resourceType ANY"},
        {B(KC_RES_UNKNOWN, "t", L, al, "*", KC_OP_READ, AL), "Invalid resourceType UNKNOWN"},
        {B(42, "t", L, al, "*", KC_OP_READ, AL), "Invalid resourceType UNKNOWN"},
        {B(T, "t", KC_PAT_MATCH, al, "*", KC_OP_READ, AL), "Invalid patternType MATCH"},
        {B(T, "t", KC_PAT_ANY, al, "*", KC_OP_READ, AL), "Invalid patternType ANY"},
        {B(T, "t", 9, al, "*", KC_OP_READ, AL), "Invalid patternType UNKNOWN"},
        {B(T, "t", L, al, "*", KC_OP_ANY, AL), "Invalid operation ANY"},
        {B(T, "t", L, al, "*", KC_OP_UNKNOWN, AL), "Invalid operation UNKNOWN"},
        {B(T, "t", L, al, "*", KC_OP_READ, KC_PERM_ANY), "Invalid permissionType ANY"},
        {B(T, "t", L, al, "*", KC_OP_READ, 7), "Invalid permissionType UNKNOWN"},
        {B(T, "t", L, al, "", KC_OP_READ, AL), "Invalid empty host"},
        {B(T, "t", L, al, "10.0.0.0/33", KC_OP_READ, AL),
         "Invalid CIDR notation for host pattern '10.0.0.0/33'"},
        {B(T, "t", L, al, "example.com/8", KC_OP_READ, AL),
         "Invalid CIDR notation for host pattern 'example.com/8'"},
        {B(T, "t", L, al, "10.0.0.0/", KC_OP_READ, AL),
         "Invalid CIDR notation for host pattern '10.0.0.0/'"},
        {B(T, "t", L, "alice", "*", KC_OP_READ, AL),
         "Could not parse principal from `alice` (no colon is present separating the principal "
         "type from the principal name)"},
        {B(T, "t", L, "", "*", KC_OP_READ, AL),
         "Could not parse principal from `` (no colon is present separating the principal type "
         "from the principal name)"},
    };
    size_t n = sizeof(rows) / sizeof(rows[0]);
    kc_auth_t *a = kc_auth_new(NULL);
    for (size_t i = 0; i < n; i++) {
        script_t sc = {NULL, 0, 0, (uint32_t)i};
        trecs_t recs = {0};
        kc_auth_result_t r;
        assert_int_equal(
            kc_auth_acl_create(a, &rows[i].b, 1, script_rand(&sc), trecs_emit, &recs, &r),
            KC_AUTH_OK);
        if (rows[i].msg == NULL) {
            if (r.error != 0)
                fail_msg("row %zu refused: %s", i, r.message);
            assert_int_equal(recs.n, 1);
        } else {
            assert_int_equal(r.error, KC_ERR_INVALID_REQUEST);
            assert_string_equal(r.message, rows[i].msg);
            assert_int_equal(recs.n, 0);
        }
        kc_auth_result_clear(&r);
        trecs_clear(&recs);
    }
    kc_auth_free(a);
}

static void test_create_dedupe_and_records(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    kc_acl_binding_t b[3] = {
        B(T, "t", L, "User:alice", "*", KC_OP_READ, AL),
        B(T, "t", L, "User:alice", "*", KC_OP_READ, AL), /* the same again */
        B(T, "t", L, "User:bob", "*", KC_OP_READ, AL),
    };
    script_t sc = {NULL, 0, 0, 7};
    trecs_t recs = {0};
    kc_auth_result_t r[3];
    assert_int_equal(kc_auth_acl_create(a, b, 3, script_rand(&sc), trecs_emit, &recs, r),
                     KC_AUTH_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].error, 0);
    assert_int_equal(recs.n, 2); /* Kafka: one record per new ACL */
    /* The key is type 18 then a version-4 uuid; the value starts with version 0. */
    assert_int_equal(recs.v[0].key_len, 18);
    assert_int_equal(recs.v[0].key[0], 0);
    assert_int_equal(recs.v[0].key[1], KC_AUTH_REC_ACL);
    assert_int_equal(recs.v[0].key[2 + 6] >> 4, 4);
    assert_int_equal(recs.v[0].value[0], 0);
    assert_int_equal(recs.v[0].value[1], 0);
    /* Nothing changes until the records are applied. */
    assert_int_equal(kc_auth_acl_count(a), 0);
    trecs_apply(&recs, a);
    assert_int_equal(kc_auth_acl_count(a), 2);
    /* Creating an existing ACL succeeds without a record. */
    assert_int_equal(kc_auth_acl_create(a, b, 1, script_rand(&sc), trecs_emit, &recs, r),
                     KC_AUTH_OK);
    assert_int_equal(r[0].error, 0);
    assert_int_equal(recs.n, 0);
    /* Applying a record twice replaces, it does not duplicate. */
    trecs_t snap = {0};
    assert_int_equal(kc_auth_snapshot(a, trecs_emit, &snap), KC_AUTH_OK);
    assert_int_equal(snap.n, 2);
    assert_int_equal(
        kc_auth_apply(a, snap.v[0].key, snap.v[0].key_len, snap.v[0].value, snap.v[0].value_len),
        KC_AUTH_OK);
    assert_int_equal(kc_auth_acl_count(a), 2);
    /* The snapshot rebuilds the same state elsewhere. */
    kc_auth_t *b2 = kc_auth_new(NULL);
    trecs_apply(&snap, b2);
    assert_int_equal(kc_auth_acl_count(b2), 2);
    assert_true(can(b2, "User:bob", "h", KC_OP_DESCRIBE, T, "t"));
    assert_false(can(b2, "User:carol", "h", KC_OP_DESCRIBE, T, "t"));
    kc_auth_free(b2);
    kc_auth_free(a);
}

/* ---- Filters, DescribeAcls, DeleteAcls ----------------------------------------------------- */

static void test_filters(void **state)
{
    (void)state;
    kc_acl_binding_t lit = B(T, "orders", L, "User:alice", "*", KC_OP_READ, AL);
    kc_acl_binding_t star = B(T, "*", L, "User:alice", "*", KC_OP_READ, AL);
    kc_acl_binding_t pre = B(T, "ord", PX, "User:alice", "10.0.0.1", KC_OP_WRITE, DN);
    struct {
        kc_acl_binding_t f;
        bool lit, star, pre;
    } rows[] = {
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 1, 1, 1},
        {B(T, "orders", KC_PAT_LITERAL, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 1, 0, 0},
        {B(T, "orders", KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 1, 0, 0},
        {B(T, "ord", KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 0, 0, 1},
        {B(T, "orders", KC_PAT_MATCH, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 1, 1, 1},
        {B(T, "or", KC_PAT_MATCH, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 0, 1, 0},
        {B(T, NULL, KC_PAT_PREFIXED, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 0, 0, 1},
        {B(T, NULL, KC_PAT_MATCH, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 1, 1, 1},
        {B(G, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY), 0, 0, 0},
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, "User:alice", NULL, KC_OP_ANY, KC_PERM_ANY), 1, 1, 1},
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, "User:bob", NULL, KC_OP_ANY, KC_PERM_ANY), 0, 0, 0},
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, NULL, "10.0.0.1", KC_OP_ANY, KC_PERM_ANY), 0, 0, 1},
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_READ, KC_PERM_ANY), 1, 1, 0},
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_DENY), 0, 0, 1},
        {B(KC_RES_ANY, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ALL, KC_PERM_ANY), 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(kc_auth_acl_filter_check(&rows[i].f).error, 0);
        if (kc_auth_acl_filter_matches(&rows[i].f, &lit) != rows[i].lit ||
            kc_auth_acl_filter_matches(&rows[i].f, &star) != rows[i].star ||
            kc_auth_acl_filter_matches(&rows[i].f, &pre) != rows[i].pre)
            fail_msg("filter row %zu", i);
    }
    kc_acl_binding_t bad[] = {
        B(KC_RES_UNKNOWN, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY),
        B(T, NULL, KC_PAT_UNKNOWN, NULL, NULL, KC_OP_ANY, KC_PERM_ANY),
        B(T, NULL, 17, NULL, NULL, KC_OP_ANY, KC_PERM_ANY),
        B(T, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_UNKNOWN, KC_PERM_ANY),
        B(T, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, 9),
    };
    const char *const msgs[] = {"Unknown patternFilter.", "Unknown patternFilter.",
                                "Unknown patternFilter.", "Unknown entryFilter.",
                                "Unknown entryFilter."};
    for (size_t i = 0; i < 5; i++) {
        kc_auth_result_t r = kc_auth_acl_filter_check(&bad[i]);
        assert_int_equal(r.error, KC_ERR_INVALID_REQUEST);
        assert_string_equal(r.message, msgs[i]);
    }
}

typedef struct seen_s {
    char names[16][32];
    size_t filter[16];
    size_t n;
} seen_t;

static int on_acl(void *arg, const kc_acl_binding_t *b)
{
    seen_t *s = arg;
    snprintf(s->names[s->n++], 32, "%.*s/%s", (int)b->resource_name.len, b->resource_name.p,
             kc_auth_operation_name(b->operation));
    return 0;
}

static int on_deleted(void *arg, size_t f, const kc_acl_binding_t *b)
{
    seen_t *s = arg;
    s->filter[s->n] = f;
    return on_acl(arg, b);
}

static void test_describe_delete(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    kc_acl_binding_t acls[] = {
        B(T, "orders", L, "User:alice", "*", KC_OP_READ, AL),
        B(T, "ord", PX, "User:alice", "*", KC_OP_WRITE, AL),
        B(G, "g", L, "User:alice", "*", KC_OP_READ, AL),
    };
    add_acls(a, acls, 3);
    seen_t seen = {0};
    kc_acl_binding_t f = B(T, "orders", KC_PAT_MATCH, NULL, NULL, KC_OP_ANY, KC_PERM_ANY);
    assert_int_equal(kc_auth_acl_describe(a, &f, on_acl, &seen), 0);
    assert_int_equal(seen.n, 2);
    /* Index order: reverse name order within a type. */
    assert_string_equal(seen.names[0], "orders/READ");
    assert_string_equal(seen.names[1], "ord/WRITE");

    kc_acl_binding_t filters[3] = {
        B(T, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY),
        B(T, "orders", KC_PAT_LITERAL, NULL, NULL, KC_OP_ANY, KC_PERM_ANY),
        B(T, NULL, KC_PAT_UNKNOWN, NULL, NULL, KC_OP_ANY, KC_PERM_ANY),
    };
    kc_auth_result_t res[3];
    trecs_t recs = {0};
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(kc_auth_acl_delete(a, filters, 3, on_deleted, &seen, trecs_emit, &recs, res),
                     KC_AUTH_OK);
    assert_int_equal(res[0].error, 0);
    assert_int_equal(res[1].error, 0);
    assert_int_equal(res[2].error, KC_ERR_INVALID_REQUEST);
    assert_int_equal(seen.n, 3); /* orders listed under both filters */
    assert_int_equal(seen.filter[0], 0);
    assert_int_equal(seen.filter[2], 1);
    assert_int_equal(recs.n, 2); /* but removed once */
    assert_null(recs.v[0].value);
    assert_int_equal(kc_auth_acl_count(a), 3);
    trecs_apply(&recs, a);
    assert_int_equal(kc_auth_acl_count(a), 1);
    assert_true(can(a, "User:alice", "h", KC_OP_READ, G, "g"));
    assert_false(can(a, "User:alice", "h", KC_OP_READ, T, "orders"));
    kc_auth_free(a);
}

/* ---- Records ------------------------------------------------------------------------------- */

static void test_records_malformed(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    kc_acl_binding_t b = B(T, "t", L, "User:alice", "10.0.0.0/8", KC_OP_READ, AL);
    script_t sc = {NULL, 0, 0, 3};
    trecs_t recs = {0};
    kc_auth_result_t r;
    assert_int_equal(kc_auth_acl_create(a, &b, 1, script_rand(&sc), trecs_emit, &recs, &r),
                     KC_AUTH_OK);
    trec_t *t = &recs.v[0];
    uint8_t buf[256];
    /* Truncated key or value, trailing bytes, unknown type, unknown version. */
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len - 1, t->value, t->value_len),
                     KC_AUTH_EINVAL);
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len, t->value, t->value_len - 1),
                     KC_AUTH_EINVAL);
    memcpy(buf, t->value, t->value_len);
    buf[t->value_len] = 0;
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len, buf, t->value_len + 1), KC_AUTH_EINVAL);
    buf[1] = 1;
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len, buf, t->value_len), KC_AUTH_EINVAL);
    memcpy(buf, t->key, t->key_len);
    buf[1] = 99;
    assert_int_equal(kc_auth_apply(a, buf, t->key_len, t->value, t->value_len), KC_AUTH_EINVAL);
    assert_int_equal(kc_auth_apply(a, NULL, 0, NULL, 0), KC_AUTH_EINVAL);
    assert_int_equal(kc_auth_acl_count(a), 0);
    /* A tombstone of an absent ACL is a no-op. */
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len, NULL, 0), KC_AUTH_OK);
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len, t->value, t->value_len), KC_AUTH_OK);
    assert_int_equal(kc_auth_acl_count(a), 1);
    assert_true(can(a, "User:alice", "10.9.9.9", KC_OP_READ, T, "t"));
    assert_int_equal(kc_auth_apply(a, t->key, t->key_len, NULL, 0), KC_AUTH_OK);
    assert_int_equal(kc_auth_acl_count(a), 0);
    trecs_clear(&recs);
    kc_auth_free(a);
}

static int refuse(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    (void)k, (void)kl, (void)v, (void)vl;
    (*(int *)arg)++;
    return -1;
}

/* A record that cannot be taken fails the operation; nothing changes. */
static void test_emit_refused(void **state)
{
    (void)state;
    kc_auth_t *a = kc_auth_new(NULL);
    kc_acl_binding_t b = B(T, "t", L, "User:alice", "*", KC_OP_READ, AL);
    add_acls(a, &b, 1);
    script_t sc = {NULL, 0, 0, 5};
    int calls = 0;
    kc_auth_result_t r;
    kc_acl_binding_t b2 = B(T, "u", L, "User:alice", "*", KC_OP_READ, AL);
    assert_int_equal(kc_auth_acl_create(a, &b2, 1, script_rand(&sc), refuse, &calls, &r),
                     KC_AUTH_ENOMEM);
    kc_acl_binding_t any = B(KC_RES_ANY, NULL, KC_PAT_ANY, NULL, NULL, KC_OP_ANY, KC_PERM_ANY);
    assert_int_equal(kc_auth_acl_delete(a, &any, 1, NULL, NULL, refuse, &calls, &r),
                     KC_AUTH_ENOMEM);
    assert_int_equal(kc_auth_snapshot(a, refuse, &calls), KC_AUTH_ENOMEM);
    kc_scram_upsertion_t up = {
        S("alice"), KC_SCRAM_SHA_256, 4096, {(const uint8_t *)"s", 1}, {(const uint8_t *)"p", 1}};
    kc_scram_alter_result_t *res = (kc_scram_alter_result_t *)&calls;
    size_t n = 7;
    assert_int_equal(kc_auth_scram_alter(a, NULL, 0, &up, 1, refuse, &calls, &res, &n),
                     KC_AUTH_ENOMEM);
    assert_null(res);
    assert_int_equal(n, 0);
    assert_int_equal(calls, 4);
    assert_int_equal(kc_auth_acl_count(a), 1);
    assert_null(kc_auth_scram_get(a, S("alice"), KC_SCRAM_SHA_256));
    kc_auth_free(a);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(kc_auth_resource_type_name(KC_RES_TRANSACTIONAL_ID), "TRANSACTIONAL_ID");
    assert_string_equal(kc_auth_resource_type_name(-3), "UNKNOWN");
    assert_string_equal(kc_auth_pattern_type_name(KC_PAT_PREFIXED), "PREFIXED");
    assert_string_equal(kc_auth_operation_name(KC_OP_DESCRIBE_CONFIGS), "DESCRIBE_CONFIGS");
    assert_string_equal(kc_auth_operation_name(15), "UNKNOWN");
    assert_string_equal(kc_auth_permission_name(KC_PERM_DENY), "DENY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_principals),
        cmocka_unit_test(test_host_string),
        cmocka_unit_test(test_authorizer_rules),
        cmocka_unit_test(test_super_users),
        cmocka_unit_test(test_prefix_walk),
        cmocka_unit_test(test_index_matches_scan),
        cmocka_unit_test(test_authorized_ops),
        cmocka_unit_test(test_create_validation),
        cmocka_unit_test(test_create_dedupe_and_records),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_describe_delete),
        cmocka_unit_test(test_records_malformed),
        cmocka_unit_test(test_emit_refused),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
