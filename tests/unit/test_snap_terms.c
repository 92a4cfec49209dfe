/* test_snap_terms.c - the snapshot terms a cluster node keeps so that every InstallSnapshot it
 * sends carries the term of the snapshot it carries (libraft 0.22.1 loads the snapshot after the
 * message took an older snapshot's index and term, then moves the index to the newer one and
 * keeps the older term). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/cluster_int.h"

static struct raft_message install(raft_index index, raft_term term)
{
    struct raft_message m;
    memset(&m, 0, sizeof(m));
    m.type = RAFT_INSTALL_SNAPSHOT;
    m.server_id = 2;
    m.server_address = "10.0.0.2:9093";
    m.install_snapshot.term = 13;
    m.install_snapshot.last_index = index;
    m.install_snapshot.last_term = term;
    m.install_snapshot.conf_index = 27700;
    return m;
}

/* The case make chaos met: snapshots at 26758 (term 11) and 27784 (term 13); the message says
 * 27784 with term 11. The copy carries term 13 and everything else as it was. */
static void test_newer_snapshot_gets_its_own_term(void **state)
{
    (void)state;
    kc_snap_terms_t t = {0};
    kc_snap_terms_note(&t, 26758, 11);
    kc_snap_terms_note(&t, 27784, 13);
    struct raft_message m = install(27784, 11), fixed;
    assert_true(kc_snap_terms_fix(&t, &m, &fixed));
    assert_int_equal(fixed.install_snapshot.last_term, 13);
    assert_int_equal(fixed.install_snapshot.last_index, 27784);
    assert_int_equal(fixed.install_snapshot.term, 13);
    assert_int_equal(fixed.install_snapshot.conf_index, 27700);
    assert_int_equal(fixed.server_id, 2);
    assert_string_equal(fixed.server_address, "10.0.0.2:9093");
    assert_int_equal(m.install_snapshot.last_term, 11); /* the original is untouched */
}

/* A message already right, one for a snapshot not noted (loaded at start), and any other
 * message are sent as they are. */
static void test_others_unchanged(void **state)
{
    (void)state;
    kc_snap_terms_t t = {0};
    struct raft_message fixed, m = install(500, 3);
    assert_false(kc_snap_terms_fix(&t, &m, &fixed));
    kc_snap_terms_note(&t, 500, 3);
    assert_false(kc_snap_terms_fix(&t, &m, &fixed));
    m = install(400, 2);
    assert_false(kc_snap_terms_fix(&t, &m, &fixed));
    memset(&m, 0, sizeof(m));
    m.type = RAFT_APPEND_ENTRIES;
    m.append_entries.prev_log_index = 500;
    m.append_entries.prev_log_term = 1;
    assert_false(kc_snap_terms_fix(&t, &m, &fixed));
}

/* The last 4 are kept, the newest first: an index noted again (a snapshot installed from the
 * leader after one of its own) takes the newer term; an old one falls out. */
static void test_last_four_newest_first(void **state)
{
    (void)state;
    kc_snap_terms_t t = {0};
    for (raft_index i = 1; i <= 6; i++)
        kc_snap_terms_note(&t, 100 * i, i);
    assert_int_equal(kc_snap_terms_of(&t, 100), 0);
    assert_int_equal(kc_snap_terms_of(&t, 200), 0);
    for (raft_index i = 3; i <= 6; i++)
        assert_int_equal(kc_snap_terms_of(&t, 100 * i), i);
    kc_snap_terms_note(&t, 500, 9);
    assert_int_equal(kc_snap_terms_of(&t, 500), 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newer_snapshot_gets_its_own_term),
        cmocka_unit_test(test_others_unchanged),
        cmocka_unit_test(test_last_four_newest_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
