/* test_heap.c - the timers' min-heap (src/util/heap.h): random pushes, removals and earlier
 * deadlines checked against a plain array, and the heap property after every step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util/heap.h"

#define N 200

typedef struct item_s {
    int id;
    kc_heap_node_t node;
} item_t;

static void check_heap(const kc_heap_t *h)
{
    for (size_t i = 0; i < h->n; i++) {
        assert_int_equal(h->v[i]->idx, i);
        if (i > 0)
            assert_true(h->v[(i - 1) / 2]->key <= h->v[i]->key);
    }
}

/* The smallest deadline among the items in the heap (the model), INT64_MAX when none. */
static int64_t model_min(const item_t *items, const int64_t *due, const int *in)
{
    int64_t m = INT64_MAX;
    for (int i = 0; i < N; i++)
        if (in[i] && due[i] < m)
            m = due[i];
    (void)items;
    return m;
}

static void test_random_operations(void **state)
{
    (void)state;
    item_t items[N];
    int64_t due[N];
    int in[N];
    kc_heap_t h = {0};
    assert_int_equal(kc_heap_reserve(&h, N), 0);
    assert_true(h.cap >= N);
    for (int i = 0; i < N; i++) {
        items[i].id = i;
        kc_heap_node_init(&items[i].node);
        in[i] = 0;
        due[i] = 0;
    }
    assert_null(kc_heap_top(&h));
    srand(42);
    for (int step = 0; step < 20000; step++) {
        int i = rand() % N;
        int op = rand() % 4;
        int64_t key = rand() % 1000;
        if (op == 0 && !in[i]) {
            kc_heap_push(&h, &items[i].node, key);
            in[i] = 1;
            due[i] = key;
        } else if (op == 1) {
            kc_heap_remove(&h, &items[i].node); /* also when not in: nothing happens */
            assert_int_equal(items[i].node.idx, KC_HEAP_NONE);
            in[i] = 0;
        } else if (op == 2) {
            /* arm: in with this deadline, or moved earlier, never later */
            kc_heap_arm(&h, &items[i].node, key);
            if (!in[i] || key < due[i])
                due[i] = key;
            in[i] = 1;
            assert_int_equal(items[i].node.key, due[i]);
        } else if (h.n > 0) {
            /* pop the first, as a tick does */
            kc_heap_node_t *top = kc_heap_top(&h);
            item_t *it = kc_heap_entry(top, item_t, node);
            assert_int_equal(top->key, model_min(items, due, in));
            kc_heap_remove(&h, top);
            in[it->id] = 0;
        }
        check_heap(&h);
        size_t count = 0;
        for (int k = 0; k < N; k++)
            count += (size_t)in[k];
        assert_int_equal(h.n, count);
        if (h.n)
            assert_int_equal(kc_heap_top(&h)->key, model_min(items, due, in));
    }
    kc_heap_free(&h);
    assert_null(h.v);
    assert_int_equal(h.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_operations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
