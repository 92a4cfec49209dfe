/* offsets.c - the committed offsets of one __consumer_offsets partition, and their retention.
 *
 * Layout. The store is a hash map from group name to a group; a group holds its topics in an
 * array sorted by name (bytewise), and each topic its partitions in an array sorted by number.
 * A lookup is one hash probe and two binary searches; a group's offsets come out in order
 * (topic, then partition) without sorting; deleting a topic from a group is one search. All
 * strings are owned copies (NUL-terminated, for debuggers). The group map is open addressing
 * with linear probing; a removed group leaves a tombstone slot, so groups can be removed while
 * the map is being walked (delete_topic, expire); tombstones go at the next growth. The hash is
 * seeded with the store's address, so group names chosen by clients cannot be lined up on one
 * probe chain in advance (not a cryptographic defence).
 *
 * Records. Every change is emitted through ops.record as Kafka's GroupCoordinatorRecordHelpers
 * writes it (CoordinatorRecordSerde: key = int16 record type + key struct, value = int16
 * value version + value struct, tombstone = no value):
 *
 *     key    int16   1              record type OffsetCommit (== key version 1; 0 is legacy)
 *            string  group          int16 length + bytes
 *            string  topic          int16 length + bytes
 *            int32   partition
 *     value  int16   3              or 1 when the commit has an explicit expire timestamp
 *            int64   offset
 *            int32   leader epoch   v3 only (-1 when unknown)
 *            string  metadata       int16 length + bytes ("" when none)
 *            int64   commit timestamp
 *            int64   expire timestamp   v1 only
 *
 * Kafka 4.0 writes value v3 (v1 with an expire timestamp); Kafka 4.1+ (KAFKA-19141) writes v4,
 * the first flexible version, only to carry the topic id as tagged field 0. We do not keep
 * topic ids, and v3 is what every Kafka since 2.1 reads, so we write v3. kc_offsets_replay
 * reads every version, 0 to 4.
 *
 * Out of memory. A change first encodes its record and makes every allocation it needs, and
 * only then touches the store, so a failure changes nothing. Tombstones never allocate: the key
 * buffer only grows, and every stored key was encoded (or reserved) in it once, so it is
 * always large enough for any stored key.
 *
 * To extend: a new per-offset field goes into kc_offset_t (offsets.h), encode_value and
 * kc_offsets_replay; a new query walks group -> topics -> partitions as kc_offsets_each does.
 */
#include <stdlib.h>
#include <string.h>

#include "offsets/offsets.h"
#include "offsets/offsets_int.h"
#include "proto/gen_records.h"
#include "util/diag.h"
#include "util/hash.h"

#define VALUE_VERSION        3               /* OffsetCommitValue without an expire timestamp */
#define VALUE_VERSION_EXPIRE 1               /* the only version with expireTimestamp */
#define KEY_FIXED_SIZE       (2 + 2 + 2 + 4) /* type, two string lengths, partition */

long kc_offsets__alloc_budget = -1;

/* Every allocation of this file goes through here, so tests can make any of them fail. */
static void *xrealloc(void *p, size_t n)
{
    if (kc_offsets__alloc_budget == 0)
        return NULL;
    if (kc_offsets__alloc_budget > 0)
        kc_offsets__alloc_budget--;
    return realloc(p, n != 0 ? n : 1);
}

static void *xmalloc(size_t n)
{
    return xrealloc(NULL, n);
}

typedef struct poff_s {
    int32_t partition;
    kc_offset_t v; /* v.metadata.p is owned when v.metadata.len > 0, else it is EMPTY */
} poff_t;

typedef struct topic_s {
    kc_str_t name; /* owned */
    poff_t *parts; /* sorted by partition; n >= 1 while the topic is in a group */
    size_t n;
    size_t cap;
} topic_t;

typedef struct group_s {
    kc_str_t name; /* owned */
    uint64_t hash;
    topic_t **topics; /* sorted by name; ntopics >= 1 while the group is in the map */
    size_t ntopics;
    size_t cap;
    size_t count; /* offsets over all topics */
} group_t;

struct kc_offsets_s {
    kc_offsets_ops_t ops;
    uint64_t seed;
    group_t **slots; /* NULL = empty, TOMB = removed, else a group */
    size_t cap;      /* 0 or a power of two */
    size_t used;     /* live groups */
    size_t tombs;    /* TOMB slots */
    size_t total;    /* offsets over all groups */
    kc_writer_t key; /* scratch for record keys; only grows */
    kc_writer_t val; /* scratch for record values */
};

static const char EMPTY[] = "";
static group_t tomb_marker;
#define TOMB (&tomb_marker)

/* ---- Strings ------------------------------------------------------------------------------ */

static size_t str_len(kc_str_t s)
{
    return s.len > 0 ? (size_t)s.len : 0;
}

static bool str_eq(kc_str_t a, kc_str_t b)
{
    size_t n = str_len(a);
    return n == str_len(b) && (n == 0 || memcmp(a.p, b.p, n) == 0);
}

/* Bytewise order, a prefix first: the order of kc_offsets_each. */
static int str_cmp(kc_str_t a, kc_str_t b)
{
    size_t na = str_len(a), nb = str_len(b);
    size_t n = na < nb ? na : nb;
    int c = n != 0 ? memcmp(a.p, b.p, n) : 0;
    if (c != 0)
        return c;
    return (na > nb) - (na < nb);
}

/* Free an owned string (the views are const; the copies are ours). */
static void str_free(kc_str_t s)
{
    free((void *)(uintptr_t)s.p);
}

/* An owned, NUL-terminated copy; p is NULL when out of memory. */
static kc_str_t str_dup(kc_str_t s)
{
    size_t n = str_len(s);
    char *p = xmalloc(n + 1);
    if (p != NULL) {
        if (n != 0)
            memcpy(p, s.p, n);
        p[n] = '\0';
    }
    return (kc_str_t){p, (int32_t)n};
}

static uint64_t hash_str(uint64_t seed, kc_str_t s)
{
    const uint8_t *p = (const uint8_t *)s.p;
    size_t n = str_len(s);
    uint64_t h = seed ^ ((uint64_t)n * UINT64_C(0x9e3779b97f4a7c15));
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = kc_hash_mix64(h ^ w);
    }
    uint64_t w = 0;
    if (n != 0)
        memcpy(&w, p, n);
    return kc_hash_mix64(h ^ w ^ ((uint64_t)n << 59));
}

/* ---- The group map -------------------------------------------------------------------------- */

static group_t *map_find(const kc_offsets_t *o, kc_str_t name, uint64_t h)
{
    if (o->cap == 0)
        return NULL;
    size_t mask = o->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        group_t *g = o->slots[i];
        if (g == NULL)
            return NULL;
        if (g != TOMB && g->hash == h && str_eq(g->name, name))
            return g;
    }
}

/* Place g (not yet in the map) in its first free slot; room was reserved. */
static void map_place(group_t **slots, size_t cap, group_t *g, size_t *tombs)
{
    size_t mask = cap - 1;
    size_t i = (size_t)g->hash & mask;
    while (slots[i] != NULL && slots[i] != TOMB)
        i = (i + 1) & mask;
    if (slots[i] == TOMB)
        (*tombs)--;
    slots[i] = g;
}

/* Make room for one more group, so that map_insert cannot fail. Rehashing drops tombstones.
 * Returns false when out of memory (the map is unchanged). */
static bool map_reserve_one(kc_offsets_t *o)
{
    if ((o->used + o->tombs + 1) * 4 <= o->cap * 3)
        return true;
    size_t cap = 16;
    while (cap < (o->used + 1) * 2)
        cap *= 2;
    group_t **slots = xmalloc(cap * sizeof(*slots));
    if (slots == NULL)
        return false;
    memset(slots, 0, cap * sizeof(*slots));
    size_t tombs = 0;
    for (size_t i = 0; i < o->cap; i++)
        if (o->slots[i] != NULL && o->slots[i] != TOMB)
            map_place(slots, cap, o->slots[i], &tombs);
    free(o->slots);
    o->slots = slots;
    o->cap = cap;
    o->tombs = 0;
    return true;
}

static void map_insert(kc_offsets_t *o, group_t *g)
{
    map_place(o->slots, o->cap, g, &o->tombs);
    o->used++;
}

/* Leaves a tombstone: walks over the slots stay valid. */
static void map_remove(kc_offsets_t *o, group_t *g)
{
    size_t mask = o->cap - 1;
    for (size_t i = (size_t)g->hash & mask;; i = (i + 1) & mask) {
        if (o->slots[i] == g) {
            o->slots[i] = TOMB;
            o->used--;
            o->tombs++;
            return;
        }
    }
}

/* ---- Groups and topics ---------------------------------------------------------------------- */

static void topic_free(topic_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->parts[i].v.metadata.len > 0)
            str_free(t->parts[i].v.metadata);
    free(t->parts);
    str_free(t->name);
    free(t);
}

static void group_free(group_t *g)
{
    for (size_t i = 0; i < g->ntopics; i++)
        topic_free(g->topics[i]);
    free(g->topics);
    str_free(g->name);
    free(g);
}

/* Index of the first topic whose name is >= name; *found when it is equal. */
static size_t topic_search(const group_t *g, kc_str_t name, bool *found)
{
    size_t lo = 0, hi = g->ntopics;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (str_cmp(g->topics[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < g->ntopics && str_eq(g->topics[lo]->name, name);
    return lo;
}

static size_t part_search(const topic_t *t, int32_t partition, bool *found)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->parts[mid].partition < partition)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < t->n && t->parts[lo].partition == partition;
    return lo;
}

static bool grow(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap != 0 ? *cap * 2 : 4;
    if (ncap > SIZE_MAX / size)
        return false;
    void *p = xrealloc(*arr, ncap * size);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

static group_t *group_lookup(const kc_offsets_t *o, kc_str_t group)
{
    return map_find(o, group, hash_str(o->seed, group));
}

static const poff_t *lookup(const kc_offsets_t *o, kc_str_t group, kc_str_t topic,
                            int32_t partition)
{
    group_t *g = group_lookup(o, group);
    if (g == NULL)
        return NULL;
    bool found;
    size_t ti = topic_search(g, topic, &found);
    if (!found)
        return NULL;
    const topic_t *t = g->topics[ti];
    size_t pi = part_search(t, partition, &found);
    return found ? &t->parts[pi] : NULL;
}

/* ---- Records ---------------------------------------------------------------------------- */

static void scratch_reset(kc_writer_t *w)
{
    w->len = 0;
    w->err = 0;
}

/* Make the scratch buffer hold at least n bytes, through xrealloc (the writer would realloc by
 * itself, out of reach of the tests' fault injection). */
static bool scratch_reserve(kc_writer_t *w, size_t n)
{
    if (n <= w->cap)
        return true;
    uint8_t *p = xrealloc(w->buf, n);
    if (p == NULL)
        return false;
    w->buf = p;
    w->cap = n;
    return true;
}

static size_t key_size(kc_str_t group, kc_str_t topic)
{
    return KEY_FIXED_SIZE + str_len(group) + str_len(topic);
}

/* Encode the key into o->key. Cannot fail once scratch_reserve(key_size) succeeded. */
static void encode_key(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition)
{
    kc_offset_commit_key_t k = {group, topic, partition};
    scratch_reset(&o->key);
    kc_wr_i16(&o->key, KC_RECORD_OFFSET_COMMIT_KEY);
    kc_offset_commit_key_encode(&o->key, KC_RECORD_OFFSET_COMMIT_KEY, &k);
}

static int16_t value_version(const kc_offset_t *v)
{
    return v->expire_ts_ms != -1 ? VALUE_VERSION_EXPIRE : VALUE_VERSION;
}

/* Encode the value into o->val; false when out of memory. */
static bool encode_value(kc_offsets_t *o, const kc_offset_t *v)
{
    kc_offset_commit_value_t m;
    kc_offset_commit_value_init(&m);
    m.offset = v->offset;
    m.leader_epoch = v->leader_epoch;
    m.metadata = v->metadata;
    m.commit_timestamp = v->commit_ts_ms;
    m.expire_timestamp = v->expire_ts_ms;
    int16_t version = value_version(v);
    if (!scratch_reserve(&o->val, 2 + kc_offset_commit_value_size(version, &m)))
        return false;
    scratch_reset(&o->val);
    kc_wr_i16(&o->val, version);
    kc_offset_commit_value_encode(&o->val, version, &m);
    return o->val.err == 0;
}

static void emit(kc_offsets_t *o, bool with_value)
{
    if (o->ops.record == NULL)
        return;
    if (o->key.err != 0 || (with_value && o->val.err != 0)) {
        KC_ERROR("offsets", "record encoding failed; record dropped"); /* cannot happen */
        return;
    }
    o->ops.record(o->ops.ctx, o->key.buf, o->key.len, with_value ? o->val.buf : NULL,
                  with_value ? o->val.len : 0);
}

static void emit_tombstone(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition)
{
    encode_key(o, group, topic, partition); /* the buffer is already large enough */
    emit(o, false);
}

/* ---- Changes ------------------------------------------------------------------------------ */

/* Store v (metadata not yet copied) at (group, topic, partition); with `record`, emit the
 * record, which the caller has encoded into o->key and o->val. Returns 0 or -1 (out of memory,
 * nothing changed). */
static int put(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition,
               const kc_offset_t *v, bool record)
{
    kc_str_t md = KC_STR_EMPTY;
    if (v->metadata.len > 0) {
        md = str_dup(v->metadata);
        if (md.p == NULL)
            return -1;
    }

    uint64_t h = hash_str(o->seed, group);
    group_t *g = map_find(o, group, h);
    group_t *new_group = NULL;
    topic_t *new_topic = NULL;
    if (g == NULL) {
        if (!map_reserve_one(o))
            goto oom;
        new_group = xmalloc(sizeof(*new_group));
        if (new_group == NULL)
            goto oom;
        memset(new_group, 0, sizeof(*new_group));
        new_group->name = str_dup(group);
        if (new_group->name.p == NULL)
            goto oom;
        new_group->hash = h;
        g = new_group;
    }
    bool found;
    size_t ti = topic_search(g, topic, &found);
    topic_t *t = found ? g->topics[ti] : NULL;
    if (t == NULL) {
        if (!grow((void **)&g->topics, &g->cap, g->ntopics, sizeof(*g->topics)))
            goto oom;
        new_topic = xmalloc(sizeof(*new_topic));
        if (new_topic == NULL)
            goto oom;
        memset(new_topic, 0, sizeof(*new_topic));
        new_topic->name = str_dup(topic);
        if (new_topic->name.p == NULL)
            goto oom;
        t = new_topic;
    }
    size_t pi = part_search(t, partition, &found);
    if (!found && !grow((void **)&t->parts, &t->cap, t->n, sizeof(*t->parts)))
        goto oom;

    /* Nothing can fail from here on. */
    if (new_group != NULL)
        map_insert(o, new_group);
    if (new_topic != NULL) {
        memmove(&g->topics[ti + 1], &g->topics[ti], (g->ntopics - ti) * sizeof(*g->topics));
        g->topics[ti] = new_topic;
        g->ntopics++;
    }
    poff_t *p = &t->parts[pi];
    if (found) {
        if (p->v.metadata.len > 0)
            str_free(p->v.metadata);
    } else {
        memmove(p + 1, p, (t->n - pi) * sizeof(*p));
        t->n++;
        g->count++;
        o->total++;
    }
    p->partition = partition;
    p->v = *v;
    p->v.metadata = md.len > 0 ? md : (kc_str_t){EMPTY, 0};
    if (record)
        emit(o, true);
    return 0;

oom:
    if (new_topic != NULL)
        topic_free(new_topic); /* holds no partition yet */
    if (new_group != NULL)
        group_free(new_group); /* holds no topic yet */
    if (md.len > 0)
        str_free(md);
    return -1;
}

/* Remove partition index pi of topic index ti of g, with a tombstone when `record`. Removes
 * the topic when it becomes empty; the caller removes an empty group. */
static void remove_at(kc_offsets_t *o, group_t *g, size_t ti, size_t pi, bool record)
{
    topic_t *t = g->topics[ti];
    poff_t *p = &t->parts[pi];
    if (record)
        emit_tombstone(o, g->name, t->name, p->partition);
    if (p->v.metadata.len > 0)
        str_free(p->v.metadata);
    memmove(p, p + 1, (t->n - pi - 1) * sizeof(*p));
    t->n--;
    g->count--;
    o->total--;
    if (t->n == 0) {
        memmove(&g->topics[ti], &g->topics[ti + 1], (g->ntopics - ti - 1) * sizeof(*g->topics));
        g->ntopics--;
        topic_free(t);
    }
}

/* Remove topic index ti of g with a tombstone per partition; returns how many. */
static size_t remove_topic_at(kc_offsets_t *o, group_t *g, size_t ti)
{
    topic_t *t = g->topics[ti];
    size_t n = t->n;
    for (size_t i = 0; i < n; i++)
        emit_tombstone(o, g->name, t->name, t->parts[i].partition);
    g->count -= n;
    o->total -= n;
    memmove(&g->topics[ti], &g->topics[ti + 1], (g->ntopics - ti - 1) * sizeof(*g->topics));
    g->ntopics--;
    topic_free(t);
    return n;
}

/* ---- The door ----------------------------------------------------------------------------- */

kc_offsets_t *kc_offsets_new(const kc_offsets_ops_t *ops)
{
    kc_offsets_t *o = xmalloc(sizeof(*o));
    if (o == NULL)
        return NULL;
    memset(o, 0, sizeof(*o));
    if (ops != NULL)
        o->ops = *ops;
    o->seed = kc_hash_mix64((uint64_t)(uintptr_t)o ^ UINT64_C(0x2545f4914f6cdd1d));
    kc_wr_init(&o->key);
    kc_wr_init(&o->val);
    return o;
}

void kc_offsets_free(kc_offsets_t *o)
{
    if (o == NULL)
        return;
    for (size_t i = 0; i < o->cap; i++)
        if (o->slots[i] != NULL && o->slots[i] != TOMB)
            group_free(o->slots[i]);
    free(o->slots);
    kc_wr_free(&o->key);
    kc_wr_free(&o->val);
    free(o);
}

int kc_offsets_commit(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition,
                      const kc_offset_t *value)
{
    if (group.len < 0 || group.len > INT16_MAX || topic.len < 0 || topic.len > INT16_MAX ||
        value->metadata.len > INT16_MAX)
        return -2;
    kc_offset_t v = *value;
    if (v.metadata.len < 0)
        v.metadata = KC_STR_EMPTY;
    if (v.expire_ts_ms != -1)
        v.leader_epoch = -1; /* value v1 cannot carry it; keep memory equal to the log */
    if (!scratch_reserve(&o->key, key_size(group, topic)) || !encode_value(o, &v))
        return -1;
    encode_key(o, group, topic, partition);
    return put(o, group, topic, partition, &v, true);
}

int kc_offsets_replay(kc_offsets_t *o, const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len)
{
    kc_reader_t r;
    kc_rd_init(&r, key, key_len);
    int16_t type = kc_rd_i16(&r);
    if (r.err != 0 || (type != 0 && type != KC_RECORD_OFFSET_COMMIT_KEY))
        return -2;
    kc_arena_t a; /* the offset-commit decoders allocate nothing; the API wants one */
    kc_arena_init(&a);
    kc_offset_commit_key_t k;
    int rc = kc_offset_commit_key_decode(&r, &a, KC_RECORD_OFFSET_COMMIT_KEY, &k);
    if (rc != 0) {
        kc_arena_free(&a);
        return -2;
    }
    if (value == NULL) {
        kc_arena_free(&a);
        group_t *g = group_lookup(o, k.group);
        if (g == NULL)
            return 0;
        bool found;
        size_t ti = topic_search(g, k.topic, &found);
        if (!found)
            return 0;
        size_t pi = part_search(g->topics[ti], k.partition, &found);
        if (!found)
            return 0;
        remove_at(o, g, ti, pi, false);
        if (g->count == 0) {
            map_remove(o, g);
            group_free(g);
        }
        return 0;
    }
    kc_rd_init(&r, value, value_len);
    int16_t version = kc_rd_i16(&r);
    kc_offset_commit_value_t m;
    if (r.err != 0 || kc_offset_commit_value_decode(&r, &a, version, &m) != 0) {
        kc_arena_free(&a);
        return -2;
    }
    /* As Kafka's OffsetAndMetadata.fromRecord: -1 means no leader epoch / no expire time. */
    kc_offset_t v = {
        .offset = m.offset,
        .leader_epoch = m.leader_epoch,
        .metadata = m.metadata,
        .commit_ts_ms = m.commit_timestamp,
        .expire_ts_ms = m.expire_timestamp,
    };
    rc = -1;
    if (scratch_reserve(&o->key, key_size(k.group, k.topic)))
        rc = put(o, k.group, k.topic, k.partition, &v, false);
    kc_arena_free(&a);
    return rc;
}

const kc_offset_t *kc_offsets_get(const kc_offsets_t *o, kc_str_t group, kc_str_t topic,
                                  int32_t partition)
{
    const poff_t *p = lookup(o, group, topic, partition);
    return p != NULL ? &p->v : NULL;
}

void kc_offsets_each(const kc_offsets_t *o, kc_str_t group,
                     void (*fn)(void *arg, kc_str_t topic, int32_t partition,
                                const kc_offset_t *value),
                     void *arg)
{
    const group_t *g = group_lookup(o, group);
    if (g == NULL)
        return;
    for (size_t ti = 0; ti < g->ntopics; ti++) {
        const topic_t *t = g->topics[ti];
        for (size_t pi = 0; pi < t->n; pi++)
            fn(arg, t->name, t->parts[pi].partition, &t->parts[pi].v);
    }
}

void kc_offsets_each_group(const kc_offsets_t *o,
                           void (*fn)(void *arg, kc_str_t group, size_t count), void *arg)
{
    for (size_t i = 0; i < o->cap; i++) {
        const group_t *g = o->slots[i];
        if (g != NULL && g != TOMB)
            fn(arg, g->name, g->count);
    }
}

size_t kc_offsets_count(const kc_offsets_t *o, kc_str_t group)
{
    const group_t *g = group_lookup(o, group);
    return g != NULL ? g->count : 0;
}

size_t kc_offsets_total(const kc_offsets_t *o)
{
    return o->total;
}

size_t kc_offsets_groups(const kc_offsets_t *o)
{
    return o->used;
}

bool kc_offsets_has_topic(const kc_offsets_t *o, kc_str_t group, kc_str_t topic)
{
    const group_t *g = group_lookup(o, group);
    bool found = false;
    if (g != NULL)
        (void)topic_search(g, topic, &found);
    return found;
}

bool kc_offsets_delete(kc_offsets_t *o, kc_str_t group, kc_str_t topic, int32_t partition)
{
    group_t *g = group_lookup(o, group);
    if (g == NULL)
        return false;
    bool found;
    size_t ti = topic_search(g, topic, &found);
    if (!found)
        return false;
    size_t pi = part_search(g->topics[ti], partition, &found);
    if (!found)
        return false;
    remove_at(o, g, ti, pi, true);
    if (g->count == 0) {
        map_remove(o, g);
        group_free(g);
    }
    return true;
}

size_t kc_offsets_delete_group(kc_offsets_t *o, kc_str_t group)
{
    group_t *g = group_lookup(o, group);
    if (g == NULL)
        return 0;
    size_t n = 0;
    while (g->ntopics > 0)
        n += remove_topic_at(o, g, 0);
    map_remove(o, g);
    group_free(g);
    return n;
}

size_t kc_offsets_delete_topic(kc_offsets_t *o, kc_str_t topic)
{
    size_t n = 0;
    for (size_t i = 0; i < o->cap; i++) {
        group_t *g = o->slots[i];
        if (g == NULL || g == TOMB)
            continue;
        bool found;
        size_t ti = topic_search(g, topic, &found);
        if (!found)
            continue;
        n += remove_topic_at(o, g, ti);
        if (g->count == 0) {
            map_remove(o, g); /* a tombstone: the walk goes on safely */
            group_free(g);
        }
    }
    return n;
}

/* now - base >= span, without overflowing. */
static bool elapsed(int64_t now, int64_t base, int64_t span)
{
    if (base > 0 && now < INT64_MIN + base)
        return false; /* now - base is below INT64_MIN */
    if (base < 0 && now > INT64_MAX + base)
        return true; /* now - base is above INT64_MAX */
    return now - base >= span;
}

/* OffsetExpirationConditionImpl.isOffsetExpired. */
static bool is_expired(const kc_offset_t *v, int64_t now_ms, int64_t retention_ms, int64_t base_ms)
{
    if (v->expire_ts_ms != -1)
        return now_ms >= v->expire_ts_ms;
    return elapsed(now_ms, base_ms != -1 ? base_ms : v->commit_ts_ms, retention_ms);
}

/* OffsetMetadataManager.cleanupExpiredOffsets for one group; returns how many expired. */
static size_t expire_group(kc_offsets_t *o, group_t *g, int64_t now_ms, int64_t retention_ms,
                           const kc_offsets_retention_t *rp)
{
    size_t n = 0;
    for (size_t ti = 0; ti < g->ntopics;) {
        topic_t *t = g->topics[ti];
        if (rp->protected_topic != NULL && rp->protected_topic(rp->arg, g->name, t->name)) {
            ti++;
            continue;
        }
        size_t kept = 0;
        for (size_t pi = 0; pi < t->n; pi++) {
            poff_t *p = &t->parts[pi];
            if (is_expired(&p->v, now_ms, retention_ms, rp->base_ms)) {
                emit_tombstone(o, g->name, t->name, p->partition);
                if (p->v.metadata.len > 0)
                    str_free(p->v.metadata);
                n++;
            } else {
                t->parts[kept++] = *p;
            }
        }
        size_t gone = t->n - kept;
        t->n = kept;
        g->count -= gone;
        o->total -= gone;
        if (kept == 0) {
            memmove(&g->topics[ti], &g->topics[ti + 1], (g->ntopics - ti - 1) * sizeof(*g->topics));
            g->ntopics--;
            topic_free(t);
        } else {
            ti++;
        }
    }
    return n;
}

size_t kc_offsets_expire(kc_offsets_t *o, int64_t now_ms, int64_t retention_ms,
                         void (*policy)(void *arg, kc_str_t group, kc_offsets_retention_t *out),
                         void (*emptied)(void *arg, kc_str_t group), void *arg)
{
    size_t total = 0;
    for (size_t i = 0; i < o->cap; i++) {
        group_t *g = o->slots[i];
        if (g == NULL || g == TOMB)
            continue;
        kc_offsets_retention_t rp = {true, -1, NULL, NULL};
        if (policy != NULL) {
            rp.expirable = false;
            policy(arg, g->name, &rp);
        }
        if (!rp.expirable)
            continue;
        size_t n = expire_group(o, g, now_ms, retention_ms, &rp);
        total += n;
        if (n > 0 && g->count == 0) {
            map_remove(o, g); /* a tombstone: the walk goes on safely */
            if (emptied != NULL)
                emptied(arg, g->name);
            group_free(g);
        }
    }
    return total;
}
