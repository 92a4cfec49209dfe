/* dump.c - the log tools: dump segments as JSON lines, verify a data directory.
 *
 * Both walk segment files with the segment scanner (log_int.h) and the batch iterator, and
 * decode record keys and values with the generated __consumer_offsets codecs. Decoding and
 * printing are one pass: every printer takes a FILE that may be NULL, so verify runs the same
 * decoders as dump without printing anything.
 *
 * JSON shapes follow Kafka's DumpLogSegments with --offsets-decoder, which prints a key as
 * {"type":"<record type>","data":{...}} and a value as {"version":"<version>","data":{...}}
 * with the camelCase field names of Kafka's message definitions; bytes are base64 (as
 * Jackson writes them) and topic ids are Kafka's URL-safe base64 Uuid strings. Like Kafka, the
 * subscription and assignment of a "consumer" group's members are decoded too. Strings are
 * printed as UTF-8 with JSON escapes; a byte that is not part of valid UTF-8 becomes U+FFFD.
 *
 * To extend: a new record type needs a row in `types` below with a printer for its value.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* pread, pwrite, ftruncate, strdup, O_CLOEXEC */
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch.h"
#include "log/log.h"
#include "log/log_int.h"
#include "proto/gen_api.h"

#define PATH_MAX_ 4096

/* ---- JSON output ------------------------------------------------------------------------ */

typedef struct jo_s {
    FILE *f;
    int n;
} jo_t;

static void jo_begin(jo_t *o, FILE *f)
{
    o->f = f;
    o->n = 0;
    if (f != NULL)
        fputc('{', f);
}

static void jo_end(jo_t *o)
{
    if (o->f != NULL)
        fputc('}', o->f);
}

static void jo_key(jo_t *o, const char *k)
{
    if (o->f == NULL)
        return;
    if (o->n++ > 0)
        fputc(',', o->f);
    fprintf(o->f, "\"%s\":", k);
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
    uint8_t c = p[0];
    size_t len;
    uint32_t min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        len = 2;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    uint32_t cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static void j_text(FILE *f, const void *s, size_t n)
{
    if (f == NULL)
        return;
    const uint8_t *p = s;
    fputc('"', f);
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t k = utf8_len(p + i, n - i);
            if (k == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, k, f);
                i += k;
            }
        }
    }
    fputc('"', f);
}

static void j_str(FILE *f, kc_str_t s)
{
    if (f == NULL)
        return;
    if (s.len < 0)
        fputs("null", f);
    else
        j_text(f, s.p, (size_t)s.len);
}

static void j_b64(FILE *f, const uint8_t *p, size_t n, bool url)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char urlsafe[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *t = url ? urlsafe : std;
    if (f == NULL)
        return;
    fputc('"', f);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        fputc(t[(v >> 18) & 63], f);
        fputc(t[(v >> 12) & 63], f);
        if (i + 1 < n)
            fputc(t[(v >> 6) & 63], f);
        else if (!url)
            fputc('=', f);
        if (i + 2 < n)
            fputc(t[v & 63], f);
        else if (!url)
            fputc('=', f);
    }
    fputc('"', f);
}

static void j_bytes(FILE *f, kc_bytes_t b)
{
    if (f == NULL)
        return;
    if (b.len < 0)
        fputs("null", f);
    else
        j_b64(f, b.p, (size_t)b.len, false);
}

static void j_uuid(FILE *f, kc_uuid_t u)
{
    j_b64(f, u.b, 16, true);
}

static void j_hex(FILE *f, const uint8_t *p, size_t n)
{
    if (f == NULL)
        return;
    fputc('"', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", p[i]);
    fputc('"', f);
}

static void j_i64(FILE *f, int64_t v)
{
    if (f != NULL)
        fprintf(f, "%lld", (long long)v);
}

static void j_bool(FILE *f, bool v)
{
    if (f != NULL)
        fputs(v ? "true" : "false", f);
}

static void j_i32s(FILE *f, const int32_t *v, int32_t n)
{
    if (f == NULL)
        return;
    if (n < 0 || (n > 0 && v == NULL)) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (int32_t i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", v[i]);
    fputc(']', f);
}

static void j_strs(FILE *f, const kc_str_t *v, int32_t n)
{
    if (f == NULL)
        return;
    if (n < 0) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (int32_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        j_str(f, v[i]);
    }
    fputc(']', f);
}

#define J_FIELD(o, name, call)                                                                     \
    do {                                                                                           \
        jo_key((o), (name));                                                                       \
        call;                                                                                      \
    } while (0)

/* ---- record keys and values ------------------------------------------------------------- */

static const kc_data_info_t *data_info(const char *name)
{
    for (size_t i = 0; i < kc_data_count; i++)
        if (strcmp(kc_data_table[i].name, name) == 0)
            return &kc_data_table[i];
    return NULL;
}

static void p_offset_commit_key(FILE *f, const void *mv, int16_t v)
{
    (void)v;
    const kc_offset_commit_key_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "group", j_str(f, m->group));
    J_FIELD(&o, "topic", j_str(f, m->topic));
    J_FIELD(&o, "partition", j_i64(f, m->partition));
    jo_end(&o);
}

static void p_group_key(FILE *f, const void *mv, int16_t v)
{
    (void)v;
    const kc_group_metadata_key_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "group", j_str(f, m->group));
    jo_end(&o);
}

/* Every KIP-848 key with a group id only (types 3, 4, 6) shares this layout. */
static void p_group_id_key(FILE *f, const void *mv, int16_t v)
{
    (void)v;
    const kc_consumer_group_metadata_key_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "groupId", j_str(f, m->group_id));
    jo_end(&o);
}

/* And those with a group id and a member id (types 5, 7, 8). */
static void p_member_key(FILE *f, const void *mv, int16_t v)
{
    (void)v;
    const kc_consumer_group_member_metadata_key_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "groupId", j_str(f, m->group_id));
    J_FIELD(&o, "memberId", j_str(f, m->member_id));
    jo_end(&o);
}

_Static_assert(sizeof(kc_consumer_group_partition_metadata_key_t) ==
                       sizeof(kc_consumer_group_metadata_key_t) &&
                   sizeof(kc_consumer_group_target_assignment_metadata_key_t) ==
                       sizeof(kc_consumer_group_metadata_key_t),
               "group-id keys share one printer");
_Static_assert(sizeof(kc_consumer_group_target_assignment_member_key_t) ==
                       sizeof(kc_consumer_group_member_metadata_key_t) &&
                   sizeof(kc_consumer_group_current_member_assignment_key_t) ==
                       sizeof(kc_consumer_group_member_metadata_key_t),
               "member keys share one printer");

static void p_offset_commit_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)a;
    const kc_offset_commit_value_t *m = mv;
    static const kc_uuid_t zero;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "offset", j_i64(f, m->offset));
    if (v >= 3)
        J_FIELD(&o, "leaderEpoch", j_i64(f, m->leader_epoch));
    J_FIELD(&o, "metadata", j_str(f, m->metadata));
    J_FIELD(&o, "commitTimestamp", j_i64(f, m->commit_timestamp));
    if (v == 1)
        J_FIELD(&o, "expireTimestamp", j_i64(f, m->expire_timestamp));
    if (v >= 4 && memcmp(&m->topic_id, &zero, sizeof(zero)) != 0)
        J_FIELD(&o, "topicId", j_uuid(f, m->topic_id));
    jo_end(&o);
}

static void p_topic_partitions(FILE *f, const kc_str_t *topic, const int32_t *parts, int32_t n)
{
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "topic", j_str(f, *topic));
    J_FIELD(&o, "partitions", j_i32s(f, parts, n));
    jo_end(&o);
}

/* A "consumer" protocol subscription or assignment (int16 version + struct), decoded as
 * Kafka's dump tool does; anything that does not decode stays base64. */
static void p_consumer_bytes(FILE *f, kc_bytes_t b, bool assignment, kc_arena_t *a)
{
    if (f == NULL)
        return;
    if (b.len < 2) {
        j_bytes(f, b);
        return;
    }
    kc_reader_t r;
    kc_rd_init(&r, b.p, (size_t)b.len);
    int16_t v = kc_rd_i16(&r);
    if (v < 0 || v > 3) {
        j_bytes(f, b);
        return;
    }
    if (assignment) {
        kc_consumer_protocol_assignment_t m;
        kc_consumer_protocol_assignment_init(&m);
        if (kc_consumer_protocol_assignment_decode(&r, a, v, &m) != 0) {
            j_bytes(f, b);
            return;
        }
        jo_t o;
        jo_begin(&o, f);
        jo_key(&o, "assignedPartitions");
        fputc('[', f);
        for (int32_t i = 0; i < m.assigned_partitions.n; i++) {
            if (i)
                fputc(',', f);
            const kc_consumer_protocol_assignment_topic_partition_t *tp =
                &m.assigned_partitions.v[i];
            p_topic_partitions(f, &tp->topic, tp->partitions.v, tp->partitions.n);
        }
        fputc(']', f);
        J_FIELD(&o, "userData", j_bytes(f, m.user_data));
        jo_end(&o);
        return;
    }
    kc_consumer_protocol_subscription_t m;
    kc_consumer_protocol_subscription_init(&m);
    if (kc_consumer_protocol_subscription_decode(&r, a, v, &m) != 0) {
        j_bytes(f, b);
        return;
    }
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "topics", j_strs(f, m.topics.v, m.topics.n));
    J_FIELD(&o, "userData", j_bytes(f, m.user_data));
    if (v >= 1) {
        jo_key(&o, "ownedPartitions");
        fputc('[', f);
        for (int32_t i = 0; i < m.owned_partitions.n; i++) {
            if (i)
                fputc(',', f);
            const kc_consumer_protocol_subscription_topic_partition_t *tp =
                &m.owned_partitions.v[i];
            p_topic_partitions(f, &tp->topic, tp->partitions.v, tp->partitions.n);
        }
        fputc(']', f);
    }
    if (v >= 2)
        J_FIELD(&o, "generationId", j_i64(f, m.generation_id));
    if (v >= 3)
        J_FIELD(&o, "rackId", j_str(f, m.rack_id));
    jo_end(&o);
}

static void p_group_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    const kc_group_metadata_value_t *m = mv;
    bool consumer = kc_str_eq_c(m->protocol_type, "consumer");
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "protocolType", j_str(f, m->protocol_type));
    J_FIELD(&o, "generation", j_i64(f, m->generation));
    J_FIELD(&o, "protocol", j_str(f, m->protocol));
    J_FIELD(&o, "leader", j_str(f, m->leader));
    if (v >= 2)
        J_FIELD(&o, "currentStateTimestamp", j_i64(f, m->current_state_timestamp));
    jo_key(&o, "members");
    if (f != NULL)
        fputc('[', f);
    for (int32_t i = 0; i < m->members.n; i++) {
        const kc_member_metadata_t *mm = &m->members.v[i];
        if (f != NULL && i)
            fputc(',', f);
        jo_t e;
        jo_begin(&e, f);
        J_FIELD(&e, "memberId", j_str(f, mm->member_id));
        if (v >= 3)
            J_FIELD(&e, "groupInstanceId", j_str(f, mm->group_instance_id));
        J_FIELD(&e, "clientId", j_str(f, mm->client_id));
        J_FIELD(&e, "clientHost", j_str(f, mm->client_host));
        if (v >= 1)
            J_FIELD(&e, "rebalanceTimeout", j_i64(f, mm->rebalance_timeout));
        J_FIELD(&e, "sessionTimeout", j_i64(f, mm->session_timeout));
        if (consumer) {
            J_FIELD(&e, "subscription", p_consumer_bytes(f, mm->subscription, false, a));
            J_FIELD(&e, "assignment", p_consumer_bytes(f, mm->assignment, true, a));
        } else {
            J_FIELD(&e, "subscription", j_bytes(f, mm->subscription));
            J_FIELD(&e, "assignment", j_bytes(f, mm->assignment));
        }
        jo_end(&e);
    }
    if (f != NULL)
        fputc(']', f);
    jo_end(&o);
}

static void p_cg_metadata_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)v;
    (void)a;
    const kc_consumer_group_metadata_value_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "epoch", j_i64(f, m->epoch));
    if (m->metadata_hash != 0)
        J_FIELD(&o, "metadataHash", j_i64(f, m->metadata_hash));
    jo_end(&o);
}

static void p_cg_partition_metadata_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)v;
    (void)a;
    const kc_consumer_group_partition_metadata_value_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    jo_key(&o, "topics");
    if (f != NULL)
        fputc('[', f);
    for (int32_t i = 0; i < m->topics.n; i++) {
        const kc_topic_metadata_t *t = &m->topics.v[i];
        if (f != NULL && i)
            fputc(',', f);
        jo_t e;
        jo_begin(&e, f);
        J_FIELD(&e, "topicId", j_uuid(f, t->topic_id));
        J_FIELD(&e, "topicName", j_str(f, t->topic_name));
        J_FIELD(&e, "numPartitions", j_i64(f, t->num_partitions));
        jo_key(&e, "partitionMetadata");
        if (f != NULL)
            fputc('[', f);
        for (int32_t k = 0; k < t->partition_metadata.n; k++) {
            const kc_partition_metadata_t *pm = &t->partition_metadata.v[k];
            if (f != NULL && k)
                fputc(',', f);
            jo_t q;
            jo_begin(&q, f);
            J_FIELD(&q, "partition", j_i64(f, pm->partition));
            J_FIELD(&q, "racks", j_strs(f, pm->racks.v, pm->racks.n));
            jo_end(&q);
        }
        if (f != NULL)
            fputc(']', f);
        jo_end(&e);
    }
    if (f != NULL)
        fputc(']', f);
    jo_end(&o);
}

static void p_cg_member_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)v;
    (void)a;
    const kc_consumer_group_member_metadata_value_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "instanceId", j_str(f, m->instance_id));
    J_FIELD(&o, "rackId", j_str(f, m->rack_id));
    J_FIELD(&o, "clientId", j_str(f, m->client_id));
    J_FIELD(&o, "clientHost", j_str(f, m->client_host));
    J_FIELD(&o, "subscribedTopicNames",
            j_strs(f, m->subscribed_topic_names.v, m->subscribed_topic_names.n));
    J_FIELD(&o, "subscribedTopicRegex", j_str(f, m->subscribed_topic_regex));
    J_FIELD(&o, "rebalanceTimeoutMs", j_i64(f, m->rebalance_timeout_ms));
    J_FIELD(&o, "serverAssignor", j_str(f, m->server_assignor));
    if (m->classic_member_metadata == NULL) {
        /* A member of the consumer protocol: Kafka writes the tag with a null marker, and its
         * tool prints the null. */
        jo_key(&o, "classicMemberMetadata");
        if (f != NULL)
            fputs("null", f);
    } else {
        const kc_classic_member_metadata_t *c = m->classic_member_metadata;
        jo_key(&o, "classicMemberMetadata");
        jo_t e;
        jo_begin(&e, f);
        J_FIELD(&e, "sessionTimeoutMs", j_i64(f, c->session_timeout_ms));
        jo_key(&e, "supportedProtocols");
        if (f != NULL)
            fputc('[', f);
        for (int32_t i = 0; i < c->supported_protocols.n; i++) {
            const kc_classic_protocol_t *p = &c->supported_protocols.v[i];
            if (f != NULL && i)
                fputc(',', f);
            jo_t q;
            jo_begin(&q, f);
            J_FIELD(&q, "name", j_str(f, p->name));
            J_FIELD(&q, "metadata", j_bytes(f, p->metadata));
            jo_end(&q);
        }
        if (f != NULL)
            fputc(']', f);
        jo_end(&e);
    }
    jo_end(&o);
}

static void p_cg_target_metadata_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)v;
    (void)a;
    const kc_consumer_group_target_assignment_metadata_value_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "assignmentEpoch", j_i64(f, m->assignment_epoch));
    if (m->assignment_timestamp != 0)
        J_FIELD(&o, "assignmentTimestamp", j_i64(f, m->assignment_timestamp));
    jo_end(&o);
}

static void p_cg_target_member_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)v;
    (void)a;
    const kc_consumer_group_target_assignment_member_value_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    jo_key(&o, "topicPartitions");
    if (f != NULL)
        fputc('[', f);
    for (int32_t i = 0; i < m->topic_partitions.n; i++) {
        const kc_consumer_group_target_assignment_member_value_topic_partition_t *t =
            &m->topic_partitions.v[i];
        if (f != NULL && i)
            fputc(',', f);
        jo_t e;
        jo_begin(&e, f);
        J_FIELD(&e, "topicId", j_uuid(f, t->topic_id));
        J_FIELD(&e, "partitions", j_i32s(f, t->partitions.v, t->partitions.n));
        jo_end(&e);
    }
    if (f != NULL)
        fputc(']', f);
    jo_end(&o);
}

static void
p_assigned(FILE *f, jo_t *o, const char *name,
           const kc_consumer_group_current_member_assignment_value_topic_partitions_t *v, int32_t n)
{
    jo_key(o, name);
    if (f != NULL)
        fputc('[', f);
    for (int32_t i = 0; i < n; i++) {
        if (f != NULL && i)
            fputc(',', f);
        jo_t e;
        jo_begin(&e, f);
        J_FIELD(&e, "topicId", j_uuid(f, v[i].topic_id));
        J_FIELD(&e, "partitions", j_i32s(f, v[i].partitions.v, v[i].partitions.n));
        if (v[i].assignment_epochs.n >= 0 && v[i].assignment_epochs.v != NULL)
            J_FIELD(&e, "assignmentEpochs",
                    j_i32s(f, v[i].assignment_epochs.v, v[i].assignment_epochs.n));
        jo_end(&e);
    }
    if (f != NULL)
        fputc(']', f);
}

static void p_cg_current_value(FILE *f, const void *mv, int16_t v, kc_arena_t *a)
{
    (void)v;
    (void)a;
    const kc_consumer_group_current_member_assignment_value_t *m = mv;
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "memberEpoch", j_i64(f, m->member_epoch));
    J_FIELD(&o, "previousMemberEpoch", j_i64(f, m->previous_member_epoch));
    J_FIELD(&o, "state", j_i64(f, m->state));
    p_assigned(f, &o, "assignedPartitions", m->assigned_partitions.v, m->assigned_partitions.n);
    p_assigned(f, &o, "partitionsPendingRevocation", m->partitions_pending_revocation.v,
               m->partitions_pending_revocation.n);
    jo_end(&o);
}

/* The record types kcoord knows: type = key version, key and value definitions, printers. */
typedef struct rectype_s {
    int16_t type;
    const char *key_name;
    const char *value_name;
    void (*pkey)(FILE *f, const void *m, int16_t v);
    void (*pvalue)(FILE *f, const void *m, int16_t v, kc_arena_t *a);
} rectype_t;

static const rectype_t types[] = {
    {0, "OffsetCommitKey", "OffsetCommitValue", p_offset_commit_key, p_offset_commit_value},
    {1, "OffsetCommitKey", "OffsetCommitValue", p_offset_commit_key, p_offset_commit_value},
    {2, "GroupMetadataKey", "GroupMetadataValue", p_group_key, p_group_value},
    {3, "ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue", p_group_id_key,
     p_cg_metadata_value},
    {4, "ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue", p_group_id_key,
     p_cg_partition_metadata_value},
    {5, "ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue", p_member_key,
     p_cg_member_value},
    {6, "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMetadataValue",
     p_group_id_key, p_cg_target_metadata_value},
    {7, "ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue",
     p_member_key, p_cg_target_member_value},
    {8, "ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue",
     p_member_key, p_cg_current_value},
};

static const rectype_t *find_type(int16_t t)
{
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (types[i].type == t)
            return &types[i];
    return NULL;
}

/* Decode, and print unless f is NULL, one record's key and value as the "key" and "payload"
 * members of `o`. Returns 0, 1 when the record type is not one kcoord knows (printed raw), or
 * -1 when a known key or value does not decode (printed raw with "error"; `why` says what). */
static int decode_record(FILE *f, jo_t *o, const kc_log_record_t *rec, char *why, size_t wl)
{
    jo_key(o, "key");
    if (rec->key == NULL || rec->key_len < 2) {
        if (f != NULL)
            fputs("null", f);
        snprintf(why, wl, "record without a key");
        return -1;
    }
    kc_arena_t a;
    kc_arena_init(&a);
    kc_reader_t r;
    kc_rd_init(&r, rec->key, rec->key_len);
    int16_t type = kc_rd_i16(&r);
    const rectype_t *t = find_type(type);
    const kc_data_info_t *kd = t != NULL ? data_info(t->key_name) : NULL;
    const kc_data_info_t *vd = t != NULL ? data_info(t->value_name) : NULL;
    int rc = 0;
    jo_t k;
    jo_begin(&k, f);
    char tbuf[16];
    snprintf(tbuf, sizeof(tbuf), "%d", type);
    J_FIELD(&k, "type", j_text(f, tbuf, strlen(tbuf)));
    void *m = kd != NULL ? kc_arena_alloc(&a, kd->codec.struct_size) : NULL;
    if (kd == NULL || vd == NULL) {
        J_FIELD(&k, "raw", j_hex(f, rec->key, rec->key_len));
        rc = 1;
    } else if (m == NULL || kd->codec.decode(&r, &a, type, m) != 0) {
        snprintf(why, wl, "%s does not decode", t->key_name);
        J_FIELD(&k, "error", j_text(f, why, strlen(why)));
        J_FIELD(&k, "raw", j_hex(f, rec->key, rec->key_len));
        rc = -1;
    } else {
        J_FIELD(&k, "data", t->pkey(f, m, type));
    }
    jo_end(&k);

    jo_key(o, "payload");
    if (rec->value == NULL) {
        if (f != NULL)
            fputs("null", f); /* a tombstone: Kafka prints <DELETE> */
        kc_arena_free(&a);
        return rc;
    }
    jo_t p;
    jo_begin(&p, f);
    kc_rd_init(&r, rec->value, rec->value_len);
    int16_t v = kc_rd_i16(&r);
    snprintf(tbuf, sizeof(tbuf), "%d", v);
    if (r.err == KC_RD_OK)
        J_FIELD(&p, "version", j_text(f, tbuf, strlen(tbuf)));
    if (rc != 0) {
        J_FIELD(&p, "raw", j_hex(f, rec->value, rec->value_len));
    } else if (r.err != KC_RD_OK || v < vd->min_version || v > vd->max_version) {
        snprintf(why, wl, "%s version %d is not one kcoord reads", t->value_name, v);
        J_FIELD(&p, "error", j_text(f, why, strlen(why)));
        J_FIELD(&p, "raw", j_hex(f, rec->value, rec->value_len));
        rc = -1;
    } else if ((m = kc_arena_alloc(&a, vd->codec.struct_size)) == NULL ||
               vd->codec.decode(&r, &a, v, m) != 0) {
        snprintf(why, wl, "%s v%d does not decode", t->value_name, v);
        J_FIELD(&p, "error", j_text(f, why, strlen(why)));
        J_FIELD(&p, "raw", j_hex(f, rec->value, rec->value_len));
        rc = -1;
    } else {
        J_FIELD(&p, "data", t->pvalue(f, m, v, &a));
    }
    jo_end(&p);
    kc_arena_free(&a);
    return rc;
}

/* A record of kcoord's metadata partition (docs/log-format.md, "The metadata partition"): its
 * record type, then key and value as hex (a null value: null, a removal). */
static void print_raw(FILE *f, jo_t *o, const kc_log_record_t *rec)
{
    jo_key(o, "key");
    if (rec->key == NULL) {
        if (f != NULL)
            fputs("null", f);
    } else {
        jo_t k;
        jo_begin(&k, f);
        if (rec->key_len >= 2) {
            char tbuf[16];
            snprintf(tbuf, sizeof(tbuf), "%d", (int)(int16_t)((rec->key[0] << 8) | rec->key[1]));
            J_FIELD(&k, "type", j_text(f, tbuf, strlen(tbuf)));
        }
        J_FIELD(&k, "raw", j_hex(f, rec->key, rec->key_len));
        jo_end(&k);
    }
    jo_key(o, "payload");
    if (rec->value == NULL) {
        if (f != NULL)
            fputs("null", f);
        return;
    }
    jo_t p;
    jo_begin(&p, f);
    J_FIELD(&p, "raw", j_hex(f, rec->value, rec->value_len));
    jo_end(&p);
}

/* A control record: key int16 version + int16 type (0 ABORT, 1 COMMIT); value int16 version +
 * int32 coordinator epoch. */
static void print_control(FILE *f, jo_t *o, const kc_log_record_t *rec)
{
    kc_reader_t r;
    kc_rd_init(&r, rec->key, rec->key != NULL ? rec->key_len : 0);
    (void)kc_rd_i16(&r);
    int16_t type = kc_rd_i16(&r);
    jo_key(o, "controlType");
    if (r.err != KC_RD_OK)
        j_text(f, "unknown", 7);
    else if (type == 0 || type == 1)
        j_text(f, type ? "COMMIT" : "ABORT", type ? 6 : 5);
    else
        j_i64(f, type);
    kc_rd_init(&r, rec->value, rec->value != NULL ? rec->value_len : 0);
    (void)kc_rd_i16(&r);
    int32_t epoch = kc_rd_i32(&r);
    if (r.err == KC_RD_OK)
        J_FIELD(o, "coordinatorEpoch", j_i64(f, epoch));
}

/* Kafka's lastSequence: baseSequence + lastOffsetDelta, wrapping past INT32_MAX to 0 as
 * DefaultRecordBatch.incrementSequence does; -1 without a producer. */
static int64_t last_sequence(const kc_batch_hdr_t *h)
{
    if (h->base_sequence < 0)
        return -1;
    int64_t s = (int64_t)h->base_sequence + h->last_offset_delta;
    return s > INT32_MAX ? s - INT32_MAX - 1 : s;
}

static void print_batch(FILE *f, const char *path, int64_t pos, const kc_batch_hdr_t *h, bool valid,
                        const char *why)
{
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "file", j_text(f, path, strlen(path)));
    J_FIELD(&o, "position", j_i64(f, pos));
    J_FIELD(&o, "baseOffset", j_i64(f, h->base_offset));
    J_FIELD(&o, "lastOffset", j_i64(f, kc_batch_last_offset(h)));
    J_FIELD(&o, "count", j_i64(f, h->count));
    J_FIELD(&o, "baseSequence", j_i64(f, h->base_sequence));
    J_FIELD(&o, "lastSequence", j_i64(f, last_sequence(h)));
    J_FIELD(&o, "producerId", j_i64(f, h->producer_id));
    J_FIELD(&o, "producerEpoch", j_i64(f, h->producer_epoch));
    J_FIELD(&o, "partitionLeaderEpoch", j_i64(f, h->partition_leader_epoch));
    J_FIELD(&o, "isTransactional", j_bool(f, kc_batch_is_transactional(h)));
    J_FIELD(&o, "isControl", j_bool(f, kc_batch_is_control(h)));
    const char *tt = h->attributes & KC_BATCH_ATTR_LOG_APPEND_TIME ? "LogAppendTime" : "CreateTime";
    J_FIELD(&o, "timestampType", j_text(f, tt, strlen(tt)));
    J_FIELD(&o, "baseTimestamp", j_i64(f, h->base_timestamp));
    J_FIELD(&o, "maxTimestamp", j_i64(f, h->max_timestamp));
    J_FIELD(&o, "size", j_i64(f, (int64_t)kc_batch_size(h)));
    J_FIELD(&o, "magic", j_i64(f, h->magic));
    const char *codec = kc_batch_codec_name(kc_batch_codec(h));
    J_FIELD(&o, "compresscodec", j_text(f, codec, strlen(codec)));
    J_FIELD(&o, "crc", j_i64(f, h->crc));
    J_FIELD(&o, "isvalid", j_bool(f, valid));
    if (why != NULL)
        J_FIELD(&o, "error", j_text(f, why, strlen(why)));
    jo_end(&o);
    fputc('\n', f);
}

static void print_error(FILE *f, const char *path, int64_t pos, const char *why)
{
    jo_t o;
    jo_begin(&o, f);
    J_FIELD(&o, "file", j_text(f, path, strlen(path)));
    if (pos >= 0)
        J_FIELD(&o, "position", j_i64(f, pos));
    J_FIELD(&o, "error", j_text(f, why, strlen(why)));
    jo_end(&o);
    fputc('\n', f);
}

/* ---- walking files ---------------------------------------------------------------------- */

/* What one walk over a segment found. */
typedef struct walk_s {
    FILE *out;        /* NULL: decode only */
    FILE *problems;   /* verify: one line per problem; NULL for dump */
    int64_t base;     /* segment base offset (from the name), -1 when unknown */
    int64_t expected; /* the least next batch base offset */
    int64_t *bpos;    /* verify: position, base and last offset of every batch read */
    int64_t *bbase, *blast;
    size_t nb, capb;
    int64_t batches, records, bad;
    bool raw; /* not a __consumer_offsets segment (__kcoord_metadata-0): records as hex */
} walk_t;

/* Count a problem and, for verify, print "PROBLEM <path> position <pos>: <what><why>". */
static void problem(walk_t *w, const char *path, int64_t pos, const char *what, const char *why)
{
    w->bad++;
    if (w->problems == NULL)
        return;
    fprintf(w->problems, "PROBLEM %s", path);
    if (pos >= 0)
        fprintf(w->problems, " position %lld", (long long)pos);
    fprintf(w->problems, ": %s%s\n", what, why);
}

static void note_batch(walk_t *w, int64_t pos, int64_t base, int64_t last)
{
    if (w->problems == NULL)
        return;
    if (w->nb == w->capb) {
        size_t c = w->capb ? w->capb * 2 : 64;
        int64_t *p = realloc(w->bpos, c * sizeof(*p)), *b = NULL, *l = NULL;
        if (p != NULL)
            w->bpos = p;
        if (p != NULL && (b = realloc(w->bbase, c * sizeof(*b))) != NULL)
            w->bbase = b;
        if (b != NULL && (l = realloc(w->blast, c * sizeof(*l))) != NULL)
            w->blast = l;
        if (l == NULL)
            return;
        w->capb = c;
    }
    w->bpos[w->nb] = pos;
    w->bbase[w->nb] = base;
    w->blast[w->nb] = last;
    w->nb++;
}

static void walk_free(walk_t *w)
{
    free(w->bpos);
    free(w->bbase);
    free(w->blast);
}

/* Walk the batches of one segment file. Returns 0, or -1 when it cannot be read at all. */
static int walk_segment(walk_t *w, const char *path, kc_batch_ctx_t *ctx)
{
    const kc_log_io_t *io = kc_log_io_posix();
    int fd = io->open(io->ctx, path, O_RDONLY, 0);
    int64_t size = fd >= 0 ? io->fsize(io->ctx, fd) : fd;
    if (size < 0) {
        char why[256];
        snprintf(why, sizeof(why), "cannot read: %s", kc_log_strerror((int)size));
        if (w->out != NULL)
            print_error(w->out, path, -1, why);
        problem(w, path, -1, "", why);
        if (fd >= 0)
            io->close(io->ctx, fd);
        return -1;
    }
    kc_segscan_t s;
    kc_segscan_init(&s, io, fd, size, 0);
    const uint8_t *p;
    size_t len;
    kc_batch_hdr_t h;
    for (;;) {
        int rc = kc_segscan_next(&s, &p, &len, &h);
        if (rc == 0)
            break;
        if (rc < 0) {
            const char *why = rc == KC_LOG_ECORRUPT ? s.why : kc_log_strerror(rc);
            bool skip = rc == KC_LOG_ECORRUPT && kc_segscan_skip(&s, &h);
            if (w->out != NULL) {
                if (skip)
                    print_batch(w->out, path, s.batch_pos, &h, false, why);
                else
                    print_error(w->out, path, s.batch_pos, why);
            }
            problem(w, path, s.batch_pos, s.torn ? "torn batch: " : "bad batch: ", why);
            if (!skip)
                break;
            continue;
        }
        w->batches++;
        if (w->out != NULL)
            print_batch(w->out, path, s.batch_pos, &h, true, NULL);
        if (h.base_offset < w->expected) {
            char why[128];
            snprintf(why, sizeof(why), "batch base offset %lld, expected at least %lld",
                     (long long)h.base_offset, (long long)w->expected);
            problem(w, path, s.batch_pos, "", why);
        }
        w->expected = kc_batch_last_offset(&h) + 1;
        note_batch(w, s.batch_pos, h.base_offset, kc_batch_last_offset(&h));

        kc_batch_iter_t it;
        int r = kc_batch_iter_init(&it, ctx, p, len);
        kc_log_record_t rec;
        while (r == 0 && (r = kc_batch_iter_next(&it, &rec)) == 1) {
            w->records++;
            r = 0;
            jo_t o;
            jo_begin(&o, w->out);
            J_FIELD(&o, "offset", j_i64(w->out, rec.offset));
            J_FIELD(&o, "timestamp", j_i64(w->out, rec.timestamp_ms));
            J_FIELD(&o, "keySize", j_i64(w->out, rec.key ? (int64_t)rec.key_len : -1));
            J_FIELD(&o, "valueSize", j_i64(w->out, rec.value ? (int64_t)rec.value_len : -1));
            if (kc_batch_is_control(&h)) {
                print_control(w->out, &o, &rec);
            } else if (w->raw) {
                print_raw(w->out, &o, &rec);
            } else {
                char why[160];
                if (decode_record(w->out, &o, &rec, why, sizeof(why)) < 0) {
                    char where[64];
                    snprintf(where, sizeof(where), "offset %lld: ", (long long)rec.offset);
                    problem(w, path, s.batch_pos, where, why);
                }
            }
            jo_end(&o);
            if (w->out != NULL)
                fputc('\n', w->out);
        }
        if (r < 0) {
            if (w->out != NULL)
                print_error(w->out, path, s.batch_pos, it.why);
            problem(w, path, s.batch_pos, "bad records: ", it.why);
        }
    }
    kc_segscan_free(&s);
    io->close(io->ctx, fd);
    return 0;
}

static int dump_index(FILE *out, const char *path, int64_t base)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        print_error(out, path, -1, strerror(errno));
        return -1;
    }
    uint8_t e[8];
    int64_t i = 0;
    size_t got;
    while ((got = fread(e, 1, 8, f)) == 8) {
        int32_t rel =
            (int32_t)((uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3]);
        int32_t pos =
            (int32_t)((uint32_t)e[4] << 24 | (uint32_t)e[5] << 16 | (uint32_t)e[6] << 8 | e[7]);
        jo_t o;
        jo_begin(&o, out);
        J_FIELD(&o, "file", j_text(out, path, strlen(path)));
        J_FIELD(&o, "entry", j_i64(out, i++));
        J_FIELD(&o, "offset", j_i64(out, base + rel));
        J_FIELD(&o, "position", j_i64(out, pos));
        jo_end(&o);
        fputc('\n', out);
    }
    fclose(f);
    if (got != 0) {
        print_error(out, path, i * 8, "index ends inside an entry");
        return 1;
    }
    return 0;
}

typedef struct seglist_s {
    int64_t *v;
    size_t n, cap;
    int64_t min_cleaned;
    char **odd; /* leftovers and orphan indexes, for verify */
    size_t nodd, capodd;
    int64_t *idx;
    size_t nidx, capidx;
} seglist_t;

static int push64(int64_t **v, size_t *n, size_t *cap, int64_t x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 32;
        int64_t *nv = realloc(*v, c * sizeof(*nv));
        if (nv == NULL)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int seglist_add(void *arg, const char *name)
{
    seglist_t *sl = arg;
    int64_t off;
    switch (kc_log_file_kind(name, &off)) {
    case KC_LF_LOG:
        return push64(&sl->v, &sl->n, &sl->cap, off);
    case KC_LF_INDEX:
        return push64(&sl->idx, &sl->nidx, &sl->capidx, off);
    case KC_LF_DELETED:
    case KC_LF_CLEANED:
    case KC_LF_SWAP:
        if (sl->nodd == sl->capodd) {
            size_t c = sl->capodd ? sl->capodd * 2 : 8;
            char **nv = realloc(sl->odd, c * sizeof(*nv));
            if (nv == NULL)
                return -ENOMEM;
            sl->odd = nv;
            sl->capodd = c;
        }
        if ((sl->odd[sl->nodd] = strdup(name)) == NULL)
            return -ENOMEM;
        sl->nodd++;
        return 0;
    default:
        return 0;
    }
}

static void seglist_free(seglist_t *sl)
{
    for (size_t i = 0; i < sl->nodd; i++)
        free(sl->odd[i]);
    free(sl->odd);
    free(sl->v);
    free(sl->idx);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int list_segments(const char *dir, seglist_t *sl)
{
    memset(sl, 0, sizeof(*sl));
    const kc_log_io_t *io = kc_log_io_posix();
    int rc = io->listdir(io->ctx, dir, seglist_add, sl);
    if (rc == 0) {
        if (sl->n > 1) /* qsort's base may not be NULL, even for no elements */
            qsort(sl->v, sl->n, sizeof(*sl->v), cmp64);
        if (sl->nidx > 1)
            qsort(sl->idx, sl->nidx, sizeof(*sl->idx), cmp64);
    }
    return rc;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int dump_file(FILE *out, const char *path, kc_batch_ctx_t *ctx)
{
    const char *name = strrchr(path, '/');
    name = name != NULL ? name + 1 : path;
    int64_t off;
    kc_log_file_kind_t k = kc_log_file_kind(name, &off);
    if (k == KC_LF_INDEX)
        return dump_index(out, path, off);
    walk_t w = {
        .out = out, .base = -1, .expected = 0, .raw = strstr(path, "__kcoord_metadata-") != NULL};
    if (walk_segment(&w, path, ctx) != 0)
        return -1;
    return w.bad > 0 ? 1 : 0;
}

int kc_log_dump(FILE *out, const char *path)
{
    kc_batch_ctx_t *ctx = kc_batch_ctx_new(0);
    if (ctx == NULL) {
        print_error(out, path, -1, "out of memory");
        return -1;
    }
    int rc = 0;
    if (!is_dir(path)) {
        rc = dump_file(out, path, ctx);
    } else {
        seglist_t sl;
        int lr = list_segments(path, &sl);
        if (lr != 0) {
            print_error(out, path, -1, kc_log_strerror(lr));
            rc = -1;
        }
        for (size_t i = 0; lr == 0 && i < sl.n; i++) {
            char p[PATH_MAX_];
            if (kc_log_segment_path(p, sizeof(p), path, sl.v[i], ".log") != 0)
                continue;
            int r = dump_file(out, p, ctx);
            if (r < 0 || (r > 0 && rc == 0))
                rc = r;
        }
        seglist_free(&sl);
    }
    kc_batch_ctx_free(ctx);
    return rc;
}

/* ---- verify ----------------------------------------------------------------------------- */

/* Check an offset index against the batches of its segment by what its entries mean rather
 * than byte for byte (Kafka brokers before 3.x indexed whole appends, not single batches):
 * whole 8-byte entries; offsets and positions strictly increasing; each position the start of
 * a batch whose base offset is at most the entry's offset; no offset past the segment's end.
 * Returns NULL when it is sound, else what is wrong. */
static const char *index_problem(const char *path, const walk_t *w, char *buf, size_t bl)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return "missing";
    uint8_t e[8];
    size_t got, n = 0;
    int64_t prev_off = -1, prev_pos = -1;
    const char *bad = NULL;
    while (bad == NULL && (got = fread(e, 1, 8, f)) == 8) {
        int64_t off = w->base + (int32_t)((uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 |
                                          (uint32_t)e[2] << 8 | e[3]);
        int64_t pos =
            (int32_t)((uint32_t)e[4] << 24 | (uint32_t)e[5] << 16 | (uint32_t)e[6] << 8 | e[7]);
        size_t lo = 0, hi = w->nb;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (w->bpos[mid] < pos)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (off <= prev_off || pos <= prev_pos) {
            snprintf(buf, bl, "entry %zu does not increase", n);
            bad = buf;
        } else if (lo == w->nb || w->bpos[lo] != pos) {
            snprintf(buf, bl, "entry %zu: position %lld is not the start of a batch", n,
                     (long long)pos);
            bad = buf;
        } else if (w->bbase[lo] > off || off > w->blast[w->nb - 1]) {
            snprintf(buf, bl, "entry %zu: offset %lld does not match the batch at %lld", n,
                     (long long)off, (long long)pos);
            bad = buf;
        }
        prev_off = off;
        prev_pos = pos;
        n++;
    }
    if (bad == NULL && got != 0)
        bad = "ends inside an entry";
    fclose(f);
    return bad;
}

static int64_t verify_partition(const char *dir, FILE *out, kc_batch_ctx_t *ctx)
{
    seglist_t sl;
    int rc = list_segments(dir, &sl);
    if (rc != 0) {
        fprintf(out, "PROBLEM %s: cannot list: %s\n", dir, kc_log_strerror(rc));
        seglist_free(&sl);
        return 1;
    }
    int64_t bad = 0, batches = 0, records = 0;
    for (size_t i = 0; i < sl.nodd; i++) {
        fprintf(out, "PROBLEM %s/%s: left by an interrupted compaction or deletion\n", dir,
                sl.odd[i]);
        bad++;
    }
    for (size_t i = 0; i < sl.nidx; i++) {
        if (sl.n == 0 || bsearch(&sl.idx[i], sl.v, sl.n, sizeof(*sl.v), cmp64) == NULL) {
            char p[PATH_MAX_];
            (void)kc_log_segment_path(p, sizeof(p), dir, sl.idx[i], ".index");
            fprintf(out, "PROBLEM %s: an index without its segment\n", p);
            bad++;
        }
    }
    int64_t expected = 0;
    for (size_t i = 0; i < sl.n; i++) {
        char p[PATH_MAX_];
        if (kc_log_segment_path(p, sizeof(p), dir, sl.v[i], ".log") != 0)
            continue;
        if (sl.v[i] < expected) {
            fprintf(out, "PROBLEM %s: starts at offset %lld, inside the previous segment\n", p,
                    (long long)sl.v[i]);
            bad++;
        }
        walk_t w = {.out = NULL, .problems = out, .base = sl.v[i]};
        w.expected = sl.v[i];
        w.raw = strstr(dir, "__kcoord_metadata-") != NULL; /* its records are not decoded */
        (void)walk_segment(&w, p, ctx);
        bad += w.bad;
        batches += w.batches;
        records += w.records;
        expected = w.expected;
        char why[160];
        const char *ip;
        if (kc_log_segment_path(p, sizeof(p), dir, sl.v[i], ".index") != 0) {
            /* no index path: nothing to check */
        } else if (access(p, F_OK) != 0 && errno == ENOENT) {
            /* Indexes are never fsynced (the open rebuilds a missing or unsound one), so after
             * a power loss a new segment's index may be gone: a note, not a problem. */
            fprintf(out, "NOTE %s: missing (rebuilt at the next open)\n", p);
        } else if ((ip = index_problem(p, &w, why, sizeof(why))) != NULL) {
            fprintf(out, "PROBLEM %s: %s (rebuilt at the next open)\n", p, ip);
            bad++;
        }
        walk_free(&w);
    }
    fprintf(out, "%s %s: %zu segments, %lld batches, %lld records, %lld problems\n",
            bad ? "BAD" : "OK", dir, sl.n, (long long)batches, (long long)records, (long long)bad);
    seglist_free(&sl);
    return bad;
}

static int name_partition(void *arg, const char *name)
{
    static const char prefix[] = "__consumer_offsets-";
    if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
        return 0;
    const char *p = name + sizeof(prefix) - 1;
    int64_t n = 0;
    if (*p == '\0')
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || n > 1000000)
            return 0;
        n = n * 10 + (*p - '0');
    }
    seglist_t *sl = arg;
    return push64(&sl->v, &sl->n, &sl->cap, n);
}

int kc_log_verify(const char *dir, FILE *out)
{
    if (!is_dir(dir)) {
        fprintf(out, "PROBLEM %s: not a directory\n", dir);
        return -1;
    }
    kc_batch_ctx_t *ctx = kc_batch_ctx_new(0);
    if (ctx == NULL)
        return -1;
    seglist_t parts;
    memset(&parts, 0, sizeof(parts));
    const kc_log_io_t *io = kc_log_io_posix();
    int rc = io->listdir(io->ctx, dir, name_partition, &parts);
    int64_t bad = 0;
    if (rc != 0) {
        fprintf(out, "PROBLEM %s: cannot list: %s\n", dir, kc_log_strerror(rc));
        bad = -1;
    } else if (parts.n == 0) {
        bad = verify_partition(dir, out, ctx); /* a partition directory itself */
    } else {
        qsort(parts.v, parts.n, sizeof(*parts.v), cmp64);
        for (size_t i = 0; i < parts.n; i++) {
            char p[PATH_MAX_];
            snprintf(p, sizeof(p), "%s/__consumer_offsets-%lld", dir, (long long)parts.v[i]);
            if (is_dir(p))
                bad += verify_partition(p, out, ctx);
        }
        /* kcoord's metadata partition, when there is one: its batches, offsets and index. */
        char p[PATH_MAX_];
        snprintf(p, sizeof(p), "%s/__kcoord_metadata-0", dir);
        if (is_dir(p))
            bad += verify_partition(p, out, ctx);
    }
    seglist_free(&parts);
    kc_batch_ctx_free(ctx);
    return bad > INT32_MAX ? INT32_MAX : (int)bad;
}
