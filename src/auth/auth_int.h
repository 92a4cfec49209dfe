/* auth_int.h - the auth room's inside: the state behind kc_auth_t and the helpers its files
 * share (acl.c, scram.c, sasl.c, records.c). Nothing outside src/auth/ includes it.
 */
#ifndef KC_AUTH_AUTH_INT_H
#define KC_AUTH_AUTH_INT_H

#include "auth/auth.h"

/* One stored ACL. Its strings live in one block after the struct (name, principal, host, each
 * NUL-terminated). A CIDR host ("10.0.0.0/8", "2001:db8::/32") is parsed once, when stored. */
typedef struct acl_s {
    kc_uuid_t id;
    int8_t resource_type;
    int8_t pattern_type;
    int8_t operation;
    int8_t permission;
    kc_str_t name;
    kc_str_t principal;
    kc_str_t host;
    bool cidr;
    uint8_t net_len; /* 4 or 16 */
    uint8_t prefix;  /* bits */
    uint8_t net[16];
} acl_t;

/* One stored SCRAM credential; user is owned (NUL-terminated), cred.salt too. */
typedef struct scram_entry_s {
    char *user;
    size_t user_len;
    int8_t mechanism;
    kc_scram_cred_t cred;
} scram_entry_t;

struct kc_auth_s {
    acl_t **by_res; /* sorted by resource (see acl.c: acl_cmp) */
    acl_t **by_id;  /* the same ACLs, sorted by id */
    size_t n_acls;
    size_t cap_acls;
    scram_entry_t *creds; /* sorted by (user bytes, mechanism) */
    size_t n_creds;
    size_t cap_creds;
    char **super_users; /* "Type:name", owned */
    size_t n_super;
    bool allow_if_no_acl;
};

/* Byte-wise comparison of two views, shorter first on a common prefix (memcmp order). */
int kc_auth__cmp(kc_str_t a, kc_str_t b);
/* A malloc'd printf. NULL on allocation failure. */
char *kc_auth__fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* acl.c: store (taking ownership of acl) or remove by id; used by kc_auth_apply. */
int kc_auth__acl_put(kc_auth_t *a, acl_t *acl);
void kc_auth__acl_remove(kc_auth_t *a, kc_uuid_t id);
/* A new acl_t holding copies of b's strings (CIDR parsed); NULL on allocation failure or when
 * the host is a malformed CIDR. */
acl_t *kc_auth__acl_make(kc_uuid_t id, const kc_acl_binding_t *b);
void kc_auth__acl_binding(const acl_t *acl, kc_acl_binding_t *b);
/* Parse "ip/prefix" into net (4 or 16 bytes); false when malformed. */
bool kc_auth__cidr_parse(kc_str_t s, uint8_t net[16], uint8_t *net_len, uint8_t *prefix);

/* scram.c: store (copying) or remove a credential; used by kc_auth_apply. */
int kc_auth__scram_put(kc_auth_t *a, kc_str_t user, int8_t mechanism, const kc_scram_cred_t *c);
void kc_auth__scram_remove(kc_auth_t *a, kc_str_t user, int8_t mechanism);
void kc_auth__scram_free_all(kc_auth_t *a);
/* HMAC and hash of a SCRAM mechanism's digest; out holds kc_scram_key_len bytes. 0 or -1. */
int kc_auth__hmac(int8_t mechanism, const uint8_t *key, size_t key_len, const uint8_t *msg,
                  size_t msg_len, uint8_t *out);
int kc_auth__hash(int8_t mechanism, const uint8_t *msg, size_t len, uint8_t *out);

/* records.c: encoders. Each emits one record; 0 or -1 (allocation failure or emit stopped). */
int kc_auth__emit_acl(const acl_t *acl, kc_auth_emit_fn emit, void *arg);
int kc_auth__emit_acl_binding(kc_uuid_t id, const kc_acl_binding_t *b, kc_auth_emit_fn emit,
                              void *arg);
int kc_auth__emit_acl_tombstone(kc_uuid_t id, kc_auth_emit_fn emit, void *arg);
int kc_auth__emit_scram(kc_str_t user, int8_t mechanism, const kc_scram_cred_t *c,
                        kc_auth_emit_fn emit, void *arg);
int kc_auth__emit_scram_tombstone(kc_str_t user, int8_t mechanism, kc_auth_emit_fn emit, void *arg);

#endif
