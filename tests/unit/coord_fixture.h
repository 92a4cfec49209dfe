/* coord_fixture.h - a coordinator on a temporary data directory, for the unit tests of what
 * lives behind the coordinator's door (group configs, the security records): open, close and
 * reopen it on the same directory (a restart), with fsyncs that fail while asked to. */
#ifndef KC_TESTS_COORD_FIXTURE_H
#define KC_TESTS_COORD_FIXTURE_H

#include <stdbool.h>

#include "coord/coord.h"

typedef struct fx_s {
    char dir[64];
    kc_conf_t conf;
    kc_catalog_t cat;
    uv_loop_t loop;
    kc_coord_t *c;
    char msg[256];
} fx_t;

/* A coordinator of 2 partitions on a new directory /tmp/<prefix>-XXXXXX, loaded. */
fx_t *fx_new(const char *prefix);
/* Open the coordinator again on the same directory and wait for its load. */
void fx_open(fx_t *f);
/* Close it, waiting until it is closed. */
void fx_close(fx_t *f);
/* Close it and remove the directory. */
void fx_free(fx_t *f);
/* While on, every fsync of the coordinator's log fails with EIO. */
void fx_fail_fsync(bool on);

#endif
