/* coord_fixture.c - see coord_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/coord_int.h"
#include "log/log.h"
#include "coord_fixture.h"

static atomic_int fail_fsync; /* fsyncs fail with EIO while set */

static int f_fsync(void *ctx, int fd)
{
    (void)ctx;
    if (atomic_load(&fail_fsync))
        return -5; /* -EIO */
    return kc_log_io_posix()->fsync(NULL, fd);
}

static kc_log_io_t faulty;

static void no_join(void *waiter, const kc_join_group_response_t *resp)
{
    (void)waiter, (void)resp;
}
static void no_sync(void *waiter, const kc_sync_group_response_t *resp)
{
    (void)waiter, (void)resp;
}
static const kc_coord_replies_t replies = {no_join, no_sync};

static int closed;
static void on_closed(void *arg)
{
    (void)arg;
    closed = 1;
}

void fx_open(fx_t *f)
{
    f->c = kc_coord_new(&f->loop, &f->conf, &f->cat, &replies, &faulty);
    assert_non_null(f->c);
    for (int i = 0; i < 100000 && kc_coord_loading(f->c) > 0; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
}

void fx_close(fx_t *f)
{
    closed = 0;
    kc_coord_close(f->c, on_closed, NULL);
    for (int i = 0; i < 100000 && !closed; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_true(closed);
}

fx_t *fx_new(const char *prefix)
{
    faulty = *kc_log_io_posix();
    faulty.fsync = f_fsync;
    fx_t *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/%s-XXXXXX", prefix);
    assert_non_null(mkdtemp(f->dir));
    kc_conf_init(&f->conf);
    char err[256];
    assert_int_equal(kc_conf_set(&f->conf, "data.dir", f->dir, KC_CONF_SRC_SET, err, sizeof(err)),
                     0);
    assert_int_equal(kc_conf_set(&f->conf, "offsets.topic.num.partitions", "2", KC_CONF_SRC_SET,
                                 err, sizeof(err)),
                     0);
    assert_int_equal(kc_catalog_init(&f->cat, "cluster", NULL, 0), 0);
    uv_loop_init(&f->loop);
    fx_open(f);
    return f;
}

void fx_free(fx_t *f)
{
    fx_close(f);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    kc_catalog_free(&f->cat);
    kc_conf_free(&f->conf);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
}

void fx_fail_fsync(bool on)
{
    atomic_store(&fail_fsync, on ? 1 : 0);
}
