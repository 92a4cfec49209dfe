/* records.c - the auth records: encoding, decoding, kc_auth_apply and kc_auth_snapshot.
 *
 * The layouts are in auth.h and docs/auth-records.md. A key starts with an int16 record type
 * (11 SCRAM credential, 18 ACL), a value with an int16 version (0); a null value removes what
 * the key names. Decoding is strict: trailing bytes, an unknown type or version, a negative
 * length or an unknown SCRAM mechanism make the record malformed (KC_AUTH_EINVAL) and nothing
 * changes. To add a field, bump the value version and accept both in decode.
 */
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"

static int emit_writers(kc_writer_t *k, kc_writer_t *v, bool tombstone, kc_auth_emit_fn emit,
                        void *arg)
{
    int rc = -1;
    if (!k->err && (tombstone || !v->err))
        rc = emit(arg, k->buf, k->len, tombstone ? NULL : v->buf, tombstone ? 0 : v->len) == 0 ? 0
                                                                                               : -1;
    kc_wr_free(k);
    kc_wr_free(v);
    return rc;
}

static void acl_key(kc_writer_t *k, kc_uuid_t id)
{
    kc_wr_i16(k, KC_AUTH_REC_ACL);
    kc_wr_uuid(k, id);
}

int kc_auth__emit_acl_binding(kc_uuid_t id, const kc_acl_binding_t *b, kc_auth_emit_fn emit,
                              void *arg)
{
    kc_writer_t k, v;
    kc_wr_init(&k);
    kc_wr_init(&v);
    acl_key(&k, id);
    kc_wr_i16(&v, 0);
    kc_wr_i8(&v, b->resource_type);
    kc_wr_str(&v, b->resource_name);
    kc_wr_i8(&v, b->pattern_type);
    kc_wr_str(&v, b->principal);
    kc_wr_str(&v, b->host);
    kc_wr_i8(&v, b->operation);
    kc_wr_i8(&v, b->permission);
    return emit_writers(&k, &v, false, emit, arg);
}

int kc_auth__emit_acl(const acl_t *acl, kc_auth_emit_fn emit, void *arg)
{
    kc_acl_binding_t b;
    kc_auth__acl_binding(acl, &b);
    return kc_auth__emit_acl_binding(acl->id, &b, emit, arg);
}

int kc_auth__emit_acl_tombstone(kc_uuid_t id, kc_auth_emit_fn emit, void *arg)
{
    kc_writer_t k, v;
    kc_wr_init(&k);
    kc_wr_init(&v);
    acl_key(&k, id);
    return emit_writers(&k, &v, true, emit, arg);
}

static void scram_key(kc_writer_t *k, kc_str_t user, int8_t mechanism)
{
    kc_wr_i16(k, KC_AUTH_REC_SCRAM);
    kc_wr_str(k, user);
    kc_wr_i8(k, mechanism);
}

int kc_auth__emit_scram(kc_str_t user, int8_t mechanism, const kc_scram_cred_t *c,
                        kc_auth_emit_fn emit, void *arg)
{
    kc_writer_t k, v;
    kc_wr_init(&k);
    kc_wr_init(&v);
    scram_key(&k, user, mechanism);
    kc_wr_i16(&v, 0);
    kc_wr_bytes(&v, (kc_bytes_t){c->salt, (int32_t)c->salt_len});
    kc_wr_bytes(&v, (kc_bytes_t){c->stored_key, (int32_t)c->key_len});
    kc_wr_bytes(&v, (kc_bytes_t){c->server_key, (int32_t)c->key_len});
    kc_wr_i32(&v, c->iterations);
    return emit_writers(&k, &v, false, emit, arg);
}

int kc_auth__emit_scram_tombstone(kc_str_t user, int8_t mechanism, kc_auth_emit_fn emit, void *arg)
{
    kc_writer_t k, v;
    kc_wr_init(&k);
    kc_wr_init(&v);
    scram_key(&k, user, mechanism);
    return emit_writers(&k, &v, true, emit, arg);
}

/* ---- Apply --------------------------------------------------------------------------------- */

static int apply_acl(kc_auth_t *a, kc_reader_t *kr, const uint8_t *value, size_t value_len)
{
    kc_uuid_t id = kc_rd_uuid(kr);
    if (kr->err || kc_rd_remaining(kr) != 0)
        return KC_AUTH_EINVAL;
    if (value == NULL) {
        kc_auth__acl_remove(a, id);
        return KC_AUTH_OK;
    }
    kc_reader_t r;
    kc_rd_init(&r, value, value_len);
    int16_t version = kc_rd_i16(&r);
    kc_acl_binding_t b;
    b.resource_type = kc_rd_i8(&r);
    b.resource_name = kc_rd_str(&r, false);
    b.pattern_type = kc_rd_i8(&r);
    b.principal = kc_rd_str(&r, false);
    b.host = kc_rd_str(&r, false);
    b.operation = kc_rd_i8(&r);
    b.permission = kc_rd_i8(&r);
    if (r.err || kc_rd_remaining(&r) != 0 || version != 0)
        return KC_AUTH_EINVAL;
    acl_t *acl = kc_auth__acl_make(id, &b);
    if (acl == NULL) /* a malformed CIDR cannot have been created: treat as malformed */
        return b.host.len > 0 && memchr(b.host.p, '/', (size_t)b.host.len) ? KC_AUTH_EINVAL
                                                                           : KC_AUTH_ENOMEM;
    int rc = kc_auth__acl_put(a, acl);
    if (rc != KC_AUTH_OK)
        free(acl);
    return rc;
}

static int apply_scram(kc_auth_t *a, kc_reader_t *kr, const uint8_t *value, size_t value_len)
{
    kc_str_t user = kc_rd_str(kr, false);
    int8_t mech = kc_rd_i8(kr);
    size_t klen = kc_scram_key_len(mech);
    if (kr->err || kc_rd_remaining(kr) != 0 || klen == 0)
        return KC_AUTH_EINVAL;
    if (value == NULL) {
        kc_auth__scram_remove(a, user, mech);
        return KC_AUTH_OK;
    }
    kc_reader_t r;
    kc_rd_init(&r, value, value_len);
    int16_t version = kc_rd_i16(&r);
    kc_bytes_t salt = kc_rd_bytes(&r, false);
    kc_bytes_t stored = kc_rd_bytes(&r, false);
    kc_bytes_t server = kc_rd_bytes(&r, false);
    int32_t iterations = kc_rd_i32(&r);
    if (r.err || kc_rd_remaining(&r) != 0 || version != 0 || (size_t)stored.len != klen ||
        (size_t)server.len != klen || iterations <= 0)
        return KC_AUTH_EINVAL;
    kc_scram_cred_t c = {0};
    c.salt = (uint8_t *)salt.p;
    c.salt_len = (size_t)salt.len;
    memcpy(c.stored_key, stored.p, klen);
    memcpy(c.server_key, server.p, klen);
    c.key_len = klen;
    c.iterations = iterations;
    return kc_auth__scram_put(a, user, mech, &c);
}

int kc_auth_apply(kc_auth_t *a, const uint8_t *key, size_t key_len, const uint8_t *value,
                  size_t value_len)
{
    if (key == NULL)
        return KC_AUTH_EINVAL;
    kc_reader_t kr;
    kc_rd_init(&kr, key, key_len);
    int16_t type = kc_rd_i16(&kr);
    if (kr.err)
        return KC_AUTH_EINVAL;
    switch (type) {
    case KC_AUTH_REC_ACL:
        return apply_acl(a, &kr, value, value_len);
    case KC_AUTH_REC_SCRAM:
        return apply_scram(a, &kr, value, value_len);
    default:
        return KC_AUTH_EINVAL;
    }
}

int kc_auth_snapshot(const kc_auth_t *a, kc_auth_emit_fn emit, void *arg)
{
    for (size_t i = 0; i < a->n_acls; i++)
        if (kc_auth__emit_acl(a->by_id[i], emit, arg) != 0)
            return KC_AUTH_ENOMEM;
    for (size_t i = 0; i < a->n_creds; i++) {
        const scram_entry_t *e = &a->creds[i];
        if (kc_auth__emit_scram((kc_str_t){e->user, (int32_t)e->user_len}, e->mechanism, &e->cred,
                                emit, arg) != 0)
            return KC_AUTH_ENOMEM;
    }
    return KC_AUTH_OK;
}
