/* heap.c - see heap.h. */
#include "util/heap.h"

#include <stdlib.h>
#include <string.h>

void kc_heap_node_init(kc_heap_node_t *x)
{
    x->idx = KC_HEAP_NONE;
    x->key = 0;
}

int kc_heap_reserve(kc_heap_t *h, size_t n)
{
    if (h->cap >= n)
        return 0;
    size_t cap = h->cap ? h->cap : 16;
    while (cap < n)
        cap *= 2;
    kc_heap_node_t **v = realloc(h->v, cap * sizeof(*v));
    if (v == NULL)
        return -1;
    h->v = v;
    h->cap = cap;
    return 0;
}

static void place(kc_heap_t *h, size_t i, kc_heap_node_t *x)
{
    h->v[i] = x;
    x->idx = i;
}

static void sift_up(kc_heap_t *h, size_t i)
{
    kc_heap_node_t *x = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent]->key <= x->key)
            break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, x);
}

static void sift_down(kc_heap_t *h, size_t i)
{
    kc_heap_node_t *x = h->v[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        int64_t key = x->key;
        if (l < h->n && h->v[l]->key < key) {
            m = l;
            key = h->v[l]->key;
        }
        if (r < h->n && h->v[r]->key < key)
            m = r;
        if (m == i)
            break;
        place(h, i, h->v[m]);
        i = m;
    }
    place(h, i, x);
}

void kc_heap_push(kc_heap_t *h, kc_heap_node_t *x, int64_t key)
{
    x->key = key;
    place(h, h->n++, x);
    sift_up(h, x->idx);
}

void kc_heap_remove(kc_heap_t *h, kc_heap_node_t *x)
{
    size_t i = x->idx;
    if (i == KC_HEAP_NONE)
        return;
    x->idx = KC_HEAP_NONE;
    kc_heap_node_t *last = h->v[--h->n];
    if (last == x)
        return;
    place(h, i, last);
    sift_down(h, i);
    sift_up(h, last->idx);
}

void kc_heap_arm(kc_heap_t *h, kc_heap_node_t *x, int64_t key)
{
    if (x->idx == KC_HEAP_NONE) {
        kc_heap_push(h, x, key);
    } else if (key < x->key) {
        x->key = key;
        sift_up(h, x->idx);
    }
}

void kc_heap_free(kc_heap_t *h)
{
    free(h->v);
    memset(h, 0, sizeof(*h));
}
