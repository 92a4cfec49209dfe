/* auth.h - the auth room's door: principals, SASL servers (PLAIN, SCRAM-SHA-256/512), SCRAM
 * credentials, the ACL store and its authorizer, and the records that make them durable.
 *
 * A pure library: no sockets, no files, no event loop, no clock. Randomness (server nonces, ACL
 * ids) comes from a kc_auth_rand_t the caller gives, so tests are deterministic. Everything is
 * Kafka's behaviour (4.4), cited per function; where kcoord differs on purpose it says so.
 *
 * How the daemon uses it:
 *   - A connection on a SASL listener makes one kc_sasl_server_t per authentication for the
 *     mechanism the client named in SaslHandshake (kc_sasl_mech_parse; not listed ->
 *     UNSUPPORTED_SASL_MECHANISM), hands it every client token (kc_sasl_server_step) and sends
 *     back what it returns; on KC_SASL_DONE it keeps a copy of kc_sasl_server_principal().
 *   - Every API handler asks kc_auth_authorize(auth, principal, host, operation, resource) and
 *     fills authorized_operations with kc_auth_authorized_ops.
 *   - CreateAcls, DeleteAcls and AlterUserScramCredentials do not change state: they validate,
 *     answer, and emit records (key, value) through a kc_auth_emit_fn. The caller makes the
 *     records durable, then applies each with kc_auth_apply, which is also what replay calls.
 *     State therefore always equals what replaying the records yields.
 *
 * Records (own definitions modelled on KRaft's metadata records; docs/auth-records.md has the
 * byte tables). A key is an int16 record type then the identity; a value an int16 version then
 * the fields, all in Kafka's classic encoding (big-endian, int16-length strings, int32-length
 * bytes). A removal is the tombstone (null value) of the key it removes, so a compacted log
 * keeps only live entries:
 *   type 11  SCRAM credential  key {user string, mechanism int8}
 *            value v0 {salt bytes, stored_key bytes, server_key bytes, iterations int32}
 *            (UserScramCredentialRecord; tombstone = RemoveUserScramCredentialRecord)
 *   type 18  ACL               key {id uuid}
 *            value v0 {resource_type int8, resource_name string, pattern_type int8,
 *                      principal string, host string, operation int8, permission int8}
 *            (AccessControlEntryRecord; tombstone = RemoveAccessControlEntryRecord)
 *
 * Memory: strings passed in are views (kc_str_t) valid for the call only; the library copies
 * what it keeps. Pointers it returns are valid until the next call that changes the same object
 * unless a function says otherwise. Functions that allocate return KC_AUTH_ENOMEM (or NULL) on
 * allocation failure and leave the state unchanged.
 */
#ifndef KC_AUTH_AUTH_H
#define KC_AUTH_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

enum {
    KC_AUTH_OK = 0,
    KC_AUTH_ENOMEM = -1,
    KC_AUTH_EINVAL = -2, /* a malformed record or argument */
};

/* ---- Randomness and records ---------------------------------------------------------------- */

/* Fill buf with n random bytes; return 0, or -1 on failure. kc_auth_rand_default() uses
 * OpenSSL's RAND_bytes. Tests pass a deterministic source. */
typedef struct kc_auth_rand_s {
    int (*fill)(void *arg, uint8_t *buf, size_t n);
    void *arg;
} kc_auth_rand_t;
kc_auth_rand_t kc_auth_rand_default(void);

/* A record to make durable: key and value bytes valid during the call only. value == NULL is
 * a tombstone (a removal). Returns 0, or -1 to stop (the operation then fails with ENOMEM). */
typedef int (*kc_auth_emit_fn)(void *arg, const uint8_t *key, size_t key_len, const uint8_t *value,
                               size_t value_len);

#define KC_AUTH_REC_SCRAM 11
#define KC_AUTH_REC_ACL   18

/* ---- Principals ---------------------------------------------------------------------------- */

/* A principal as Kafka prints it, "Type:name" (KafkaPrincipal.toString), owned, NUL-terminated.
 * type_len is the length of Type. A zeroed kc_principal_t is "none". */
typedef struct kc_principal_s {
    char *text;
    uint32_t len;
    uint32_t type_len;
} kc_principal_t;

#define KC_PRINCIPAL_USER_TYPE "User"
#define KC_PRINCIPAL_ANONYMOUS "User:ANONYMOUS"
#define KC_PRINCIPAL_WILDCARD  "User:*"

/* Parse "Type:name" as SecurityUtils.parseKafkaPrincipal does: split at the first ':'; the
 * type and the name may be empty, the string may not be, and it must hold a ':'. Returns
 * KC_AUTH_OK, KC_AUTH_EINVAL (out left zeroed) or KC_AUTH_ENOMEM. */
int kc_principal_parse(kc_str_t s, kc_principal_t *out);
/* "User:<name>". */
int kc_principal_user(kc_str_t name, kc_principal_t *out);
/* User:ANONYMOUS, what a PLAINTEXT connection is (DefaultKafkaPrincipalBuilder). */
int kc_principal_anonymous(kc_principal_t *out);
int kc_principal_copy(const kc_principal_t *p, kc_principal_t *out);
void kc_principal_free(kc_principal_t *p);
kc_str_t kc_principal_type(const kc_principal_t *p);
kc_str_t kc_principal_name(const kc_principal_t *p);
bool kc_principal_eq(const kc_principal_t *a, const kc_principal_t *b);

/* ---- ACL vocabulary (Kafka's codes, on the wire) ------------------------------------------- */

enum {
    KC_RES_UNKNOWN = 0,
    KC_RES_ANY = 1,
    KC_RES_TOPIC = 2,
    KC_RES_GROUP = 3,
    KC_RES_CLUSTER = 4,
    KC_RES_TRANSACTIONAL_ID = 5,
    KC_RES_DELEGATION_TOKEN = 6,
    KC_RES_USER = 7,
};
enum {
    KC_PAT_UNKNOWN = 0,
    KC_PAT_ANY = 1,
    KC_PAT_MATCH = 2,
    KC_PAT_LITERAL = 3,
    KC_PAT_PREFIXED = 4,
};
enum {
    KC_OP_UNKNOWN = 0,
    KC_OP_ANY = 1,
    KC_OP_ALL = 2,
    KC_OP_READ = 3,
    KC_OP_WRITE = 4,
    KC_OP_CREATE = 5,
    KC_OP_DELETE = 6,
    KC_OP_ALTER = 7,
    KC_OP_DESCRIBE = 8,
    KC_OP_CLUSTER_ACTION = 9,
    KC_OP_DESCRIBE_CONFIGS = 10,
    KC_OP_ALTER_CONFIGS = 11,
    KC_OP_IDEMPOTENT_WRITE = 12,
    KC_OP_CREATE_TOKENS = 13,
    KC_OP_DESCRIBE_TOKENS = 14,
};
enum {
    KC_PERM_UNKNOWN = 0,
    KC_PERM_ANY = 1,
    KC_PERM_DENY = 2,
    KC_PERM_ALLOW = 3,
};

#define KC_AUTH_CLUSTER_NAME "kafka-cluster"
#define KC_AUTH_WILDCARD     "*"

/* Names as Kafka prints them ("TOPIC", "PREFIXED", "DESCRIBE_CONFIGS", "ALLOW"); "UNKNOWN" for
 * a code Kafka does not know. */
const char *kc_auth_resource_type_name(int8_t code);
const char *kc_auth_pattern_type_name(int8_t code);
const char *kc_auth_operation_name(int8_t code);
const char *kc_auth_permission_name(int8_t code);

/* One ACL binding (AclBinding) or, in filters, an AclBindingFilter: there a null view
 * (len -1) of resource_name, principal or host matches anything, and ANY codes match any
 * value. All views. */
typedef struct kc_acl_binding_s {
    int8_t resource_type;
    int8_t pattern_type;
    int8_t operation;
    int8_t permission;
    kc_str_t resource_name;
    kc_str_t principal;
    kc_str_t host;
} kc_acl_binding_t;

/* ---- The auth state: ACLs, SCRAM credentials, authorizer settings -------------------------- */

typedef struct kc_auth_s kc_auth_t;

typedef struct kc_auth_conf_s {
    /* super.users: principals separated by ';', each trimmed as Java's String.trim (bytes up
     * to ' '), NULL = none. */
    const char *super_users;
    /* allow.everyone.if.no.acl.found (Kafka's default: false). */
    bool allow_if_no_acl;
} kc_auth_conf_t;

/* A new, empty state. NULL on allocation failure. */
kc_auth_t *kc_auth_new(const kc_auth_conf_t *conf);
void kc_auth_free(kc_auth_t *a);
/* Replace the authorizer settings (a reload). KC_AUTH_OK or KC_AUTH_ENOMEM (unchanged). */
int kc_auth_configure(kc_auth_t *a, const kc_auth_conf_t *conf);

/* Apply one record (see the top of this file): an ACL or a SCRAM credential added or
 * replaced, or removed by its tombstone. A tombstone of something absent is a no-op (a
 * compacted log may hold it alone). KC_AUTH_OK, KC_AUTH_EINVAL (malformed: nothing changed)
 * or KC_AUTH_ENOMEM. */
int kc_auth_apply(kc_auth_t *a, const uint8_t *key, size_t key_len, const uint8_t *value,
                  size_t value_len);

/* Emit every live entry as records, ACLs then credentials, in a stable order: what a
 * compacted copy of the log holds. KC_AUTH_OK or KC_AUTH_ENOMEM. */
int kc_auth_snapshot(const kc_auth_t *a, kc_auth_emit_fn emit, void *arg);

/* ---- The authorizer (StandardAuthorizer / StandardAuthorizerData) -------------------------- */

/* May `principal`, connected from `host`, do `operation` on the resource (type, name)?
 * `host` is the client address as Kafka prints it (kc_auth_host_string). Rules, Kafka's:
 *   - a super user may do everything;
 *   - the ACLs that apply are those of the resource type whose pattern matches the name
 *     (LITERAL equal, LITERAL "*", PREFIXED prefix), whose principal is the principal or
 *     User:*, whose host is "*", the host, or a CIDR holding it;
 *   - any DENY of the operation (or ALL) denies; else any ALLOW allows, where an ALLOW of READ,
 *     WRITE, DELETE or ALTER also allows DESCRIBE and ALTER_CONFIGS allows DESCRIBE_CONFIGS;
 *   - no ALLOW: denied if the resource has any ACL at all (for anyone), else
 *     allow.everyone.if.no.acl.found decides.
 * The lookup walks a sorted index (resource type, name in reverse order, ...) from the name,
 * jumping back to each prefix, then the "*" section: O(log n + matching ACLs). */
bool kc_auth_authorize(const kc_auth_t *a, const kc_principal_t *principal, const char *host,
                       int8_t operation, int8_t resource_type, kc_str_t resource_name);

/* The operations Kafka lists for a resource type (AclEntry.supportedOperations) as a bit field
 * (bit `op` set), and those of them `principal` may do on the resource: the
 * authorized_operations of DescribeGroups, Metadata, DescribeCluster, ConsumerGroupDescribe
 * (AuthHelper.authorizedOperations). Without an authorizer the caller uses the supported set. */
int32_t kc_auth_supported_ops(int8_t resource_type);
int32_t kc_auth_authorized_ops(const kc_auth_t *a, const kc_principal_t *principal,
                               const char *host, int8_t resource_type, kc_str_t resource_name);

/* The error a refused check answers with (AclEntry.authorizationError): TOPIC_, GROUP_,
 * CLUSTER_, TRANSACTIONAL_ID_ or DELEGATION_TOKEN_AUTHORIZATION_FAILED; UNKNOWN_SERVER_ERROR for
 * a type that has none (USER, ANY, UNKNOWN). */
int16_t kc_auth_authorization_error(int8_t resource_type);

/* Print an IPv4 (4 bytes) or IPv6 (16 bytes) address as Java's InetAddress.getHostAddress
 * does: dotted quad (also for an IPv4-mapped IPv6 address, which Java makes an Inet4Address),
 * or eight lowercase hex groups without zero compression ("0:0:0:0:0:0:0:1"). buf must hold
 * 40 bytes. Returns buf. */
const char *kc_auth_host_string(const uint8_t *addr, size_t addr_len, char buf[40]);

/* Number of ACLs. */
size_t kc_auth_acl_count(const kc_auth_t *a);

/* ---- ACL administration (CreateAcls, DescribeAcls, DeleteAcls) ----------------------------- */

/* A per-item answer: error 0 (NONE) or a Kafka error code, and its message (a static string or
 * one owned by the result; NULL when none). */
typedef struct kc_auth_result_s {
    int16_t error;
    char *message; /* free with kc_auth_result_clear */
    bool owned;    /* message is malloc'd */
} kc_auth_result_t;
void kc_auth_result_clear(kc_auth_result_t *r);

/* CreateAcls (AclApis.handleCreateAcls, AclControlManager.createAcls): one result per binding.
 * INVALID_REQUEST for an UNKNOWN/ANY resource type, a pattern type other than LITERAL or
 * PREFIXED, an UNKNOWN/ANY operation, a permission other than ALLOW/DENY, an empty resource
 * name, a CLUSTER name other than kafka-cluster, a principal that does not parse, an empty
 * host or a malformed CIDR host. A valid binding that already exists (or repeats one of this
 * request) succeeds without a record; each new one is emitted as an ACL record with a fresh
 * random id. results must hold n entries. Returns KC_AUTH_OK or KC_AUTH_ENOMEM (results then
 * undefined, nothing emitted that should be kept). */
int kc_auth_acl_create(const kc_auth_t *a, const kc_acl_binding_t *bindings, size_t n,
                       kc_auth_rand_t rand, kc_auth_emit_fn emit, void *arg,
                       kc_auth_result_t *results);

/* Validate a filter of DescribeAcls or DeleteAcls: INVALID_REQUEST "Unknown patternFilter."
 * when its resource or pattern type is UNKNOWN (a code Kafka does not know counts as UNKNOWN),
 * "Unknown entryFilter." when its operation or permission is; else NONE. */
kc_auth_result_t kc_auth_acl_filter_check(const kc_acl_binding_t *filter);
/* AclBindingFilter.matches: does the filter match the binding? MATCH pattern type: the filter
 * name matches a LITERAL ACL of that name or "*", and a PREFIXED ACL that is a prefix of it. */
bool kc_auth_acl_filter_matches(const kc_acl_binding_t *filter, const kc_acl_binding_t *b);

/* Visit the ACLs a filter matches, in the index's order (DescribeAcls): the bindings of one
 * resource pattern (type, name, pattern type) come one after another, so the caller can group
 * them into DescribeAcls' resources as it goes. The binding's views are valid during the call.
 * Returns what the last call of fn returned if it stopped the walk (non-zero), else 0. The filter
 * must have passed kc_auth_acl_filter_check. */
typedef int (*kc_acl_visit_fn)(void *arg, const kc_acl_binding_t *b);
int kc_auth_acl_describe(const kc_auth_t *a, const kc_acl_binding_t *filter, kc_acl_visit_fn fn,
                         void *arg);

/* DeleteAcls (AclControlManager.deleteAcls): for each valid filter, visit (fn(arg, i, b)) every
 * ACL it matches and emit one tombstone per matched ACL (an ACL matched by two filters is
 * listed under both and removed once). results[i] is the filter's check. fn may be NULL.
 * Returns KC_AUTH_OK or KC_AUTH_ENOMEM. */
typedef int (*kc_acl_deleted_fn)(void *arg, size_t filter_index, const kc_acl_binding_t *b);
int kc_auth_acl_delete(const kc_auth_t *a, const kc_acl_binding_t *filters, size_t n,
                       kc_acl_deleted_fn fn, void *fn_arg, kc_auth_emit_fn emit, void *arg,
                       kc_auth_result_t *results);

/* ---- SCRAM --------------------------------------------------------------------------------- */

/* Mechanism codes of Describe/AlterUserScramCredentials (ScramMechanism.type()). */
enum {
    KC_SCRAM_UNKNOWN = 0,
    KC_SCRAM_SHA_256 = 1,
    KC_SCRAM_SHA_512 = 2,
};
#define KC_SCRAM_MIN_ITERATIONS 4096
#define KC_SCRAM_MAX_ITERATIONS 16384
#define KC_SCRAM_MAX_KEY        64 /* SHA-512 */

/* A stored credential (ScramCredential). salt is owned by whoever holds the struct. */
typedef struct kc_scram_cred_s {
    uint8_t *salt;
    size_t salt_len;
    uint8_t stored_key[KC_SCRAM_MAX_KEY];
    uint8_t server_key[KC_SCRAM_MAX_KEY];
    size_t key_len; /* 32 or 64 */
    int32_t iterations;
} kc_scram_cred_t;

/* The digest size of a mechanism (32, 64), 0 for an unknown one. */
size_t kc_scram_key_len(int8_t mechanism);
/* SaltedPassword = PBKDF2-HMAC-SHA-x(password, salt, iterations) as ScramFormatter.hi: the
 * password's bytes as given (UTF-8, no SASLprep). out must hold kc_scram_key_len bytes.
 * KC_AUTH_OK or KC_AUTH_EINVAL. */
int kc_scram_salted_password(int8_t mechanism, kc_str_t password, const uint8_t *salt,
                             size_t salt_len, int32_t iterations, uint8_t *out);

/* Emit the record that stores (user, mechanism) from a salted password: StoredKey =
 * H(HMAC(SP, "Client Key")), ServerKey = HMAC(SP, "Server Key"). Checks nothing: callers
 * validate (kc_auth_scram_alter does). KC_AUTH_OK, KC_AUTH_EINVAL or KC_AUTH_ENOMEM. */
int kc_auth_scram_record(kc_str_t user, int8_t mechanism, const uint8_t *salt, size_t salt_len,
                         const uint8_t *salted_password, size_t sp_len, int32_t iterations,
                         kc_auth_emit_fn emit, void *arg);

/* The stored credential, or NULL. Valid until the state changes. */
const kc_scram_cred_t *kc_auth_scram_get(const kc_auth_t *a, kc_str_t user, int8_t mechanism);

/* AlterUserScramCredentials (ScramControlManager.alterCredentials). */
typedef struct kc_scram_deletion_s {
    kc_str_t name;
    int8_t mechanism;
} kc_scram_deletion_t;
typedef struct kc_scram_upsertion_s {
    kc_str_t name;
    int8_t mechanism;
    int32_t iterations;
    kc_bytes_t salt;
    kc_bytes_t salted_password;
} kc_scram_upsertion_t;
typedef struct kc_scram_alter_result_s {
    kc_str_t user; /* a view of the request's name */
    kc_auth_result_t r;
} kc_scram_alter_result_t;
/* One result per distinct user, in Kafka's order: users whose deletion is accepted, users
 * whose upsertion is accepted, then users with an error, each group in the order the users
 * first appear. A user altered twice in one request (whatever the mechanisms) gets
 * DUPLICATE_RESOURCE "A user credential cannot be altered twice in the same request" and no
 * change; an empty name UNACCEPTABLE_CREDENTIAL "Username must not be empty"; an unknown
 * mechanism UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"; iterations out of
 * [4096, 16384] UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many iterations"; the
 * deletion of an absent credential RESOURCE_NOT_FOUND "Attempt to delete a user credential that
 * does not exist". Accepted changes are emitted as records. *results is malloc'd (free with
 * kc_auth_scram_alter_free), *n_results set. KC_AUTH_OK or KC_AUTH_ENOMEM. */
int kc_auth_scram_alter(const kc_auth_t *a, const kc_scram_deletion_t *dels, size_t n_dels,
                        const kc_scram_upsertion_t *ups, size_t n_ups, kc_auth_emit_fn emit,
                        void *arg, kc_scram_alter_result_t **results, size_t *n_results);
void kc_auth_scram_alter_free(kc_scram_alter_result_t *results, size_t n);

/* DescribeUserScramCredentials (ScramImage.describe). users NULL or n_users 0: every user with
 * a credential, in name order. Otherwise one row per distinct name in first-seen order: a name
 * asked twice gets DUPLICATE_RESOURCE "Cannot describe SCRAM credentials for the same user
 * twice in a single request: <name>", one without credentials RESOURCE_NOT_FOUND "Attempt to
 * describe a user credential that does not exist: <name>". */
typedef struct kc_scram_info_s {
    int8_t mechanism;
    int32_t iterations;
} kc_scram_info_t;
typedef struct kc_scram_describe_row_s {
    char *user; /* owned, NUL-terminated */
    size_t user_len;
    kc_auth_result_t r;
    kc_scram_info_t infos[2];
    size_t n_infos;
} kc_scram_describe_row_t;
int kc_auth_scram_describe(const kc_auth_t *a, const kc_str_t *users, size_t n_users,
                           kc_scram_describe_row_t **rows, size_t *n_rows);
void kc_auth_scram_describe_free(kc_scram_describe_row_t *rows, size_t n);

/* ---- SASL servers -------------------------------------------------------------------------- */

enum {
    KC_SASL_PLAIN = 0,
    KC_SASL_SCRAM_SHA_256 = 1,
    KC_SASL_SCRAM_SHA_512 = 2,
    KC_SASL_MECH_COUNT = 3,
};
/* The mechanisms kcoord implements, in this order: "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512".
 * A listener enables a subset (sasl.enabled.mechanisms) and answers SaslHandshake with it. */
const char *kc_sasl_mech_name(int mech);
/* The mechanism named exactly (case-sensitive, as Kafka), or -1: the caller answers
 * UNSUPPORTED_SASL_MECHANISM (also for a known name the listener has not enabled). */
int kc_sasl_mech_parse(kc_str_t name);
/* The SCRAM mechanism code of a SASL SCRAM mechanism, KC_SCRAM_UNKNOWN for PLAIN. */
int8_t kc_sasl_mech_scram(int mech);

/* Where the servers find users. plain_password: the password of `user` for PLAIN, or a null
 * view when there is none (the view must stay valid during the step). scram: the credential of
 * (user, mechanism) or NULL (kc_auth_scram_lookup does it from a kc_auth_t). fake_secret: 32
 * bytes the daemon draws once at start; an unknown SCRAM user gets a fake credential derived
 * from it and the name, so that it costs the same steps (and gets the same salt each time) as a
 * wrong password. */
typedef struct kc_sasl_creds_s {
    kc_str_t (*plain_password)(void *plain_arg, kc_str_t user);
    void *plain_arg;
    const kc_scram_cred_t *(*scram)(void *scram_arg, kc_str_t user, int8_t mechanism);
    void *scram_arg;
    uint8_t fake_secret[32];
} kc_sasl_creds_t;
/* A scram callback over a kc_auth_t passed as scram_arg. */
const kc_scram_cred_t *kc_auth_scram_lookup(void *auth, kc_str_t user, int8_t mechanism);

enum {
    KC_SASL_CONTINUE = 0, /* send out (a challenge) and wait for the next client token */
    KC_SASL_DONE = 1,     /* send out (may be empty); the principal is set */
    KC_SASL_FAILED = 2,   /* answer error + message, then close (after the failure delay) */
};
typedef struct kc_sasl_step_s {
    int status;
    const uint8_t *out; /* valid until the next step or kc_sasl_server_free */
    size_t out_len;
    int16_t error;       /* FAILED: SASL_AUTHENTICATION_FAILED or ILLEGAL_SASL_STATE */
    const char *message; /* FAILED: what the client is told; valid like out */
    const char *reason;  /* FAILED: why, for the log only (may name the user) */
} kc_sasl_step_t;

typedef struct kc_sasl_server_s kc_sasl_server_t;
/* A server for one exchange. creds must outlive it. reauth: this is a KIP-368
 * re-authentication (only the wording of failures changes). NULL on allocation failure. */
kc_sasl_server_t *kc_sasl_server_new(int mech, const kc_sasl_creds_t *creds, kc_auth_rand_t rand,
                                     bool reauth);
void kc_sasl_server_free(kc_sasl_server_t *s);
/* Feed one client token. Returns the step's status (also in out->status).
 *   PLAIN (PlainSaslServer): "[authzid]\0authcid\0password"; an empty user or password, an
 *   unknown user or wrong password, or an authzid other than empty or the user fail.
 *   SCRAM (ScramSaslServer, RFC 5802/7677 without channel binding or SASLprep): client-first
 *   "n,[a=authzid],n=user,r=nonce[,ext=val]*" -> server-first "r=cnonce+snonce,s=salt,i=iter";
 *   client-final "c=biws,r=nonce[,ext]*,p=proof" -> server-final "v=signature", DONE. Only the
 *   gs2 header "n" is accepted ('y' and 'p' fail as a malformed message, as Kafka's pattern
 *   does); "tokenauth=true" (delegation tokens) fails, other extensions are ignored.
 * A failure the client may read about (an authzid that is not the user, the PLAIN wording for
 * bad credentials) carries Kafka's message; any other carries Kafka's generic "Authentication
 * failed during authentication due to invalid credentials with SASL mechanism <M>". A step
 * after DONE or FAILED fails with ILLEGAL_SASL_STATE. */
int kc_sasl_server_step(kc_sasl_server_t *s, const uint8_t *in, size_t in_len, kc_sasl_step_t *out);
/* After DONE: User:<authorization id>. NULL before. Owned by the server. */
const kc_principal_t *kc_sasl_server_principal(const kc_sasl_server_t *s);
int kc_sasl_server_mech(const kc_sasl_server_t *s);

#endif
