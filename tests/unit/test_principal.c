/* test_principal.c - ssl.principal.mapping.rules (src/net/principal.c): Kafka's syntax, the
 * first rule that applies, Java's replacement syntax, case folding, and the refusals. The
 * expectations are those of Kafka's SslPrincipalMapperTest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/net.h"

/* The name `rules` give `dn`, or NULL when no rule applies. The caller frees it. */
static char *map(const char *rules, const char *dn)
{
    char err[256] = "";
    kc_net_principal_rules_t *r = kc_net_principal_rules_parse(rules, err, sizeof err);
    if (r == NULL)
        print_error("rules \"%s\": %s\n", rules, err);
    assert_non_null(r);
    char *name = NULL;
    int rc = kc_net_principal_map(r, dn, &name);
    kc_net_principal_rules_free(r);
    assert_true(rc == 0 || rc == 1);
    if (rc == 0)
        assert_null(name);
    return name;
}

static void expect(const char *rules, const char *dn, const char *want)
{
    char *got = map(rules, dn);
    if (want == NULL) {
        if (got != NULL)
            print_error("\"%s\" on \"%s\": got \"%s\", want no rule\n", rules, dn, got);
        assert_null(got);
        return;
    }
    if (got == NULL || strcmp(got, want) != 0)
        print_error("\"%s\" on \"%s\": got \"%s\", want \"%s\"\n", rules, dn, got ? got : "(none)",
                    want);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void refused(const char *rules, const char *want)
{
    char err[256] = "";
    kc_net_principal_rules_t *r = kc_net_principal_rules_parse(rules, err, sizeof err);
    if (r != NULL || strstr(err, want) == NULL)
        print_error("rules \"%s\": got \"%s\", want \"%s\"\n", rules, r ? "(accepted)" : err, want);
    assert_null(r);
    assert_non_null(strstr(err, want));
}

static void test_default(void **state)
{
    (void)state;
    expect("DEFAULT", "CN=alice,OU=ServiceUsers,O=Acme", "CN=alice,OU=ServiceUsers,O=Acme");
    expect("", "CN=x", "CN=x"); /* no rule at all: DEFAULT */
    expect("  ", "CN=x", "CN=x");
}

static void test_rules(void **state)
{
    (void)state;
    const char *rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
                        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
                        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U,"
                        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
                        "DEFAULT";
    /* Kafka's SslPrincipalMapperTest cases. */
    expect(rules, "CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke");
    expect(rules, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme");
    expect(rules, "cn=duke,ou=JavaSoft,dc=example,dc=com", "DUKE@JAVASOFT");
    expect(rules, "OU=JavaSoft,O=Sun Microsystems,C=US,CN=duke", "DUKE");
    expect(rules, "OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US");
    /* The first rule that applies wins; without DEFAULT nothing may apply. */
    expect("RULE:^CN=(.*)$/first-$1/,RULE:^CN=(.*)$/second/", "CN=a", "first-a");
    expect("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=a,OU=People", NULL);
    /* The pattern must match the whole subject (Java's matches()). */
    expect("RULE:CN=a/x/", "CN=ab", NULL);
    /* Blanks around rules; case folding; escapes in the replacement; $n beyond the groups is
     * literal (Kafka escapes it). */
    expect("  RULE:^CN=(.*)$/$1/L ,  DEFAULT ", "CN=MiXed", "mixed");
    expect("RULE:^CN=(.*)$/\\$1-$1-$2/", "CN=z", "$1-z-$2");
    /* An escaped '/' inside the pattern and the replacement. */
    expect("RULE:^CN=a\\/b$/x\\/y/", "CN=a/b", "x/y");
    /* replaceAll goes on after a pattern that also matches the empty end of the text. */
    expect("RULE:.*/x/", "CN=a", "xx");
    expect("RULE:^.*$/x/", "CN=a", "x");
}

static void test_refused(void **state)
{
    (void)state;
    refused("RULE:^CN=(.*)$/$1", "Invalid rule");
    refused("RULE:^CN=(.*)$", "Invalid rule");
    refused("RULE:^CN=(.*)$/$1/X", "unmatched substring: `X`");
    refused("DEFAULT,junk", "Invalid rule: `junk`");
    refused("DEFAULTS", "unmatched substring");
    refused("RULE:^CN=(.*$/$1/", "Invalid rule `RULE:^CN=(.*$/$1/`: missing )");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
