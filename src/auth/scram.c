/* scram.c - SCRAM credentials: the formulas (ScramFormatter), the store, and the logic of
 * DescribeUserScramCredentials (ScramImage.describe) and AlterUserScramCredentials
 * (ScramControlManager.alterCredentials).
 *
 * The store is an array sorted by (user bytes, mechanism): lookups are a binary search, changes
 * a memmove (credentials change rarely). Alter validates and emits records; kc_auth_apply makes
 * them state, so a crash between the two leaves the state as the log says.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"
#include "proto/errors.h"

/* ---- Formulas ------------------------------------------------------------------------------ */

static const EVP_MD *md_of(int8_t mechanism)
{
    switch (mechanism) {
    case KC_SCRAM_SHA_256:
        return EVP_sha256();
    case KC_SCRAM_SHA_512:
        return EVP_sha512();
    default:
        return NULL;
    }
}

size_t kc_scram_key_len(int8_t mechanism)
{
    return mechanism == KC_SCRAM_SHA_256 ? 32 : mechanism == KC_SCRAM_SHA_512 ? 64 : 0;
}

int kc_auth__hmac(int8_t mechanism, const uint8_t *key, size_t key_len, const uint8_t *msg,
                  size_t msg_len, uint8_t *out)
{
    const EVP_MD *md = md_of(mechanism);
    unsigned int n = 0;
    static const uint8_t empty[1] = {0};
    if (md == NULL || HMAC(md, key_len ? key : empty, (int)key_len, msg_len ? msg : empty, msg_len,
                           out, &n) == NULL)
        return -1;
    return n == kc_scram_key_len(mechanism) ? 0 : -1;
}

int kc_auth__hash(int8_t mechanism, const uint8_t *msg, size_t len, uint8_t *out)
{
    const EVP_MD *md = md_of(mechanism);
    unsigned int n = 0;
    if (md == NULL || EVP_Digest(msg, len, out, &n, md, NULL) != 1)
        return -1;
    return 0;
}

int kc_scram_salted_password(int8_t mechanism, kc_str_t password, const uint8_t *salt,
                             size_t salt_len, int32_t iterations, uint8_t *out)
{
    const EVP_MD *md = md_of(mechanism);
    static const uint8_t empty[1] = {0};
    if (md == NULL || iterations <= 0 || password.len < 0)
        return KC_AUTH_EINVAL;
    if (PKCS5_PBKDF2_HMAC(password.len ? password.p : "", password.len, salt_len ? salt : empty,
                          (int)salt_len, iterations, md, (int)kc_scram_key_len(mechanism),
                          out) != 1)
        return KC_AUTH_EINVAL;
    return KC_AUTH_OK;
}

/* StoredKey and ServerKey of a salted password. */
static int keys_of(int8_t mech, const uint8_t *sp, size_t sp_len, kc_scram_cred_t *c)
{
    uint8_t client_key[KC_SCRAM_MAX_KEY];
    size_t n = kc_scram_key_len(mech);
    if (n == 0 || kc_auth__hmac(mech, sp, sp_len, (const uint8_t *)"Client Key", 10, client_key) ||
        kc_auth__hash(mech, client_key, n, c->stored_key) ||
        kc_auth__hmac(mech, sp, sp_len, (const uint8_t *)"Server Key", 10, c->server_key))
        return -1;
    c->key_len = n;
    return 0;
}

int kc_auth_scram_record(kc_str_t user, int8_t mechanism, const uint8_t *salt, size_t salt_len,
                         const uint8_t *salted_password, size_t sp_len, int32_t iterations,
                         kc_auth_emit_fn emit, void *arg)
{
    kc_scram_cred_t c = {0};
    if (keys_of(mechanism, salted_password, sp_len, &c) != 0)
        return KC_AUTH_EINVAL;
    c.salt = (uint8_t *)salt;
    c.salt_len = salt_len;
    c.iterations = iterations;
    return kc_auth__emit_scram(user, mechanism, &c, emit, arg) == 0 ? KC_AUTH_OK : KC_AUTH_ENOMEM;
}

/* ---- The store ----------------------------------------------------------------------------- */

static int entry_cmp(kc_str_t user, int8_t mech, const scram_entry_t *e)
{
    int c = kc_auth__cmp(user, (kc_str_t){e->user, (int32_t)e->user_len});
    if (c != 0)
        return c;
    return mech < e->mechanism ? -1 : mech > e->mechanism ? 1 : 0;
}

static size_t cred_lower_bound(const kc_auth_t *a, kc_str_t user, int8_t mech)
{
    size_t lo = 0, hi = a->n_creds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entry_cmp(user, mech, &a->creds[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const kc_scram_cred_t *kc_auth_scram_get(const kc_auth_t *a, kc_str_t user, int8_t mechanism)
{
    size_t i = cred_lower_bound(a, user, mechanism);
    if (i < a->n_creds && entry_cmp(user, mechanism, &a->creds[i]) == 0)
        return &a->creds[i].cred;
    return NULL;
}

const kc_scram_cred_t *kc_auth_scram_lookup(void *auth, kc_str_t user, int8_t mechanism)
{
    return kc_auth_scram_get(auth, user, mechanism);
}

int kc_auth__scram_put(kc_auth_t *a, kc_str_t user, int8_t mechanism, const kc_scram_cred_t *c)
{
    uint8_t *salt = malloc(c->salt_len ? c->salt_len : 1);
    if (salt == NULL)
        return KC_AUTH_ENOMEM;
    if (c->salt_len)
        memcpy(salt, c->salt, c->salt_len);
    size_t i = cred_lower_bound(a, user, mechanism);
    if (i < a->n_creds && entry_cmp(user, mechanism, &a->creds[i]) == 0) {
        scram_entry_t *e = &a->creds[i];
        free(e->cred.salt);
        e->cred = *c;
        e->cred.salt = salt;
        return KC_AUTH_OK;
    }
    size_t ul = user.len > 0 ? (size_t)user.len : 0;
    char *name = malloc(ul + 1);
    if (name == NULL) {
        free(salt);
        return KC_AUTH_ENOMEM;
    }
    if (a->n_creds == a->cap_creds) {
        size_t cap = a->cap_creds ? a->cap_creds * 2 : 8;
        scram_entry_t *n = realloc(a->creds, cap * sizeof(*n));
        if (n == NULL) {
            free(salt);
            free(name);
            return KC_AUTH_ENOMEM;
        }
        a->creds = n;
        a->cap_creds = cap;
    }
    if (ul)
        memcpy(name, user.p, ul);
    name[ul] = '\0';
    memmove(&a->creds[i + 1], &a->creds[i], (a->n_creds - i) * sizeof(*a->creds));
    scram_entry_t *e = &a->creds[i];
    e->user = name;
    e->user_len = ul;
    e->mechanism = mechanism;
    e->cred = *c;
    e->cred.salt = salt;
    a->n_creds++;
    return KC_AUTH_OK;
}

void kc_auth__scram_remove(kc_auth_t *a, kc_str_t user, int8_t mechanism)
{
    size_t i = cred_lower_bound(a, user, mechanism);
    if (i >= a->n_creds || entry_cmp(user, mechanism, &a->creds[i]) != 0)
        return;
    free(a->creds[i].user);
    free(a->creds[i].cred.salt);
    memmove(&a->creds[i], &a->creds[i + 1], (a->n_creds - i - 1) * sizeof(*a->creds));
    a->n_creds--;
}

void kc_auth__scram_free_all(kc_auth_t *a)
{
    for (size_t i = 0; i < a->n_creds; i++) {
        free(a->creds[i].user);
        free(a->creds[i].cred.salt);
    }
    free(a->creds);
    a->creds = NULL;
    a->n_creds = a->cap_creds = 0;
}

/* ---- AlterUserScramCredentials ------------------------------------------------------------- */

enum { ALT_NONE, ALT_DELETE, ALT_UPSERT, ALT_ERROR };

/* One distinct user of the request: what happens to it. */
typedef struct alt_user_s {
    kc_str_t name;
    int what;
    size_t index; /* into dels or ups */
    kc_auth_result_t r;
} alt_user_t;

static alt_user_t *alt_find(alt_user_t *u, size_t n, kc_str_t name)
{
    for (size_t i = 0; i < n; i++)
        if (kc_str_eq(u[i].name, name))
            return &u[i];
    return NULL;
}

static bool name_mech_check(kc_str_t name, int8_t mech, kc_auth_result_t *r)
{
    if (name.len <= 0) {
        r->error = KC_ERR_UNACCEPTABLE_CREDENTIAL;
        r->message = "Username must not be empty";
        return false;
    }
    if (kc_scram_key_len(mech) == 0) {
        r->error = KC_ERR_UNSUPPORTED_SASL_MECHANISM;
        r->message = "Unknown SCRAM mechanism";
        return false;
    }
    return true;
}

static const char *const TWICE = "A user credential cannot be altered twice in the same request";

/* The decision for one alteration of `name`; u/n is the table of users so far. */
static void alt_one(alt_user_t *u, size_t *n, kc_str_t name, int what, size_t index,
                    kc_auth_result_t r)
{
    alt_user_t *x = alt_find(u, *n, name);
    if (x != NULL) {
        if (x->what != ALT_ERROR) { /* altered twice: the earlier one is dropped */
            x->what = ALT_ERROR;
            x->r = (kc_auth_result_t){KC_ERR_DUPLICATE_RESOURCE, (char *)TWICE, false};
        }
        return;
    }
    x = &u[(*n)++];
    x->name = name;
    x->what = r.error ? ALT_ERROR : what;
    x->index = index;
    x->r = r;
}

int kc_auth_scram_alter(const kc_auth_t *a, const kc_scram_deletion_t *dels, size_t n_dels,
                        const kc_scram_upsertion_t *ups, size_t n_ups, kc_auth_emit_fn emit,
                        void *arg, kc_scram_alter_result_t **results, size_t *n_results)
{
    *results = NULL;
    *n_results = 0;
    size_t cap = n_dels + n_ups, n = 0;
    alt_user_t *u = calloc(cap ? cap : 1, sizeof(*u));
    kc_scram_alter_result_t *out = calloc(cap ? cap : 1, sizeof(*out));
    if (u == NULL || out == NULL) {
        free(u);
        free(out);
        return KC_AUTH_ENOMEM;
    }
    for (size_t i = 0; i < n_dels; i++) {
        kc_auth_result_t r = {0};
        if (name_mech_check(dels[i].name, dels[i].mechanism, &r) &&
            kc_auth_scram_get(a, dels[i].name, dels[i].mechanism) == NULL) {
            r.error = KC_ERR_RESOURCE_NOT_FOUND;
            r.message = "Attempt to delete a user credential that does not exist";
        }
        alt_one(u, &n, dels[i].name, ALT_DELETE, i, r);
    }
    for (size_t i = 0; i < n_ups; i++) {
        kc_auth_result_t r = {0};
        if (name_mech_check(ups[i].name, ups[i].mechanism, &r)) {
            if (ups[i].iterations < KC_SCRAM_MIN_ITERATIONS) {
                r.error = KC_ERR_UNACCEPTABLE_CREDENTIAL;
                r.message = "Too few iterations";
            } else if (ups[i].iterations > KC_SCRAM_MAX_ITERATIONS) {
                r.error = KC_ERR_UNACCEPTABLE_CREDENTIAL;
                r.message = "Too many iterations";
            }
        }
        alt_one(u, &n, ups[i].name, ALT_UPSERT, i, r);
    }
    int rc = KC_AUTH_OK;
    size_t k = 0;
    for (int pass = ALT_DELETE; pass <= ALT_ERROR; pass++) {
        for (size_t i = 0; i < n; i++) {
            if (u[i].what != pass)
                continue;
            if (rc == KC_AUTH_OK && pass == ALT_DELETE)
                rc = kc_auth__emit_scram_tombstone(u[i].name, dels[u[i].index].mechanism, emit,
                                                   arg) == 0
                         ? KC_AUTH_OK
                         : KC_AUTH_ENOMEM;
            if (rc == KC_AUTH_OK && pass == ALT_UPSERT) {
                const kc_scram_upsertion_t *x = &ups[u[i].index];
                int e = kc_auth_scram_record(
                    x->name, x->mechanism, x->salt.p, x->salt.len > 0 ? (size_t)x->salt.len : 0,
                    x->salted_password.p,
                    x->salted_password.len > 0 ? (size_t)x->salted_password.len : 0, x->iterations,
                    emit, arg);
                rc = e == KC_AUTH_OK ? KC_AUTH_OK : KC_AUTH_ENOMEM;
            }
            out[k].user = u[i].name;
            out[k].r = u[i].r;
            k++;
        }
    }
    free(u);
    if (rc != KC_AUTH_OK) {
        free(out);
        return rc;
    }
    *results = out;
    *n_results = k;
    return KC_AUTH_OK;
}

void kc_auth_scram_alter_free(kc_scram_alter_result_t *results, size_t n)
{
    for (size_t i = 0; results && i < n; i++)
        kc_auth_result_clear(&results[i].r);
    free(results);
}

/* ---- DescribeUserScramCredentials ---------------------------------------------------------- */

static int row_add(kc_scram_describe_row_t *row, kc_str_t user)
{
    size_t ul = user.len > 0 ? (size_t)user.len : 0;
    row->user = malloc(ul + 1);
    if (row->user == NULL)
        return -1;
    if (ul)
        memcpy(row->user, user.p, ul);
    row->user[ul] = '\0';
    row->user_len = ul;
    return 0;
}

static void row_fill(const kc_auth_t *a, kc_scram_describe_row_t *row)
{
    kc_str_t user = {row->user, (int32_t)row->user_len};
    for (int8_t m = KC_SCRAM_SHA_256; m <= KC_SCRAM_SHA_512; m++) {
        const kc_scram_cred_t *c = kc_auth_scram_get(a, user, m);
        if (c != NULL)
            row->infos[row->n_infos++] = (kc_scram_info_t){m, c->iterations};
    }
}

int kc_auth_scram_describe(const kc_auth_t *a, const kc_str_t *users, size_t n_users,
                           kc_scram_describe_row_t **rows, size_t *n_rows)
{
    size_t cap = users && n_users ? n_users : a->n_creds, n = 0;
    kc_scram_describe_row_t *out = calloc(cap ? cap : 1, sizeof(*out));
    bool *twice = calloc(cap ? cap : 1, sizeof(bool));
    int rc = out && twice ? KC_AUTH_OK : KC_AUTH_ENOMEM;
    if (rc == KC_AUTH_OK && (users == NULL || n_users == 0)) {
        for (size_t i = 0; rc == KC_AUTH_OK && i < a->n_creds; i++) {
            if (i > 0 && a->creds[i - 1].user_len == a->creds[i].user_len &&
                memcmp(a->creds[i - 1].user, a->creds[i].user, a->creds[i].user_len) == 0)
                continue;
            if (row_add(&out[n], (kc_str_t){a->creds[i].user, (int32_t)a->creds[i].user_len}))
                rc = KC_AUTH_ENOMEM;
            else
                row_fill(a, &out[n++]);
        }
    } else if (rc == KC_AUTH_OK) {
        for (size_t i = 0; rc == KC_AUTH_OK && i < n_users; i++) {
            size_t j = 0;
            while (j < n && !kc_str_eq((kc_str_t){out[j].user, (int32_t)out[j].user_len},
                                       users[i].len < 0 ? KC_STR_EMPTY : users[i]))
                j++;
            if (j < n) {
                twice[j] = true;
                continue;
            }
            if (row_add(&out[n++], users[i]))
                rc = KC_AUTH_ENOMEM;
        }
        for (size_t j = 0; rc == KC_AUTH_OK && j < n; j++) {
            kc_scram_describe_row_t *row = &out[j];
            if (twice[j]) {
                row->r.error = KC_ERR_DUPLICATE_RESOURCE;
                row->r.message = kc_auth__fmt("Cannot describe SCRAM credentials for the same "
                                              "user twice in a single request: %s",
                                              row->user);
            } else {
                row_fill(a, row);
                if (row->n_infos == 0) {
                    row->r.error = KC_ERR_RESOURCE_NOT_FOUND;
                    row->r.message = kc_auth__fmt(
                        "Attempt to describe a user credential that does not exist: %s", row->user);
                }
            }
            row->r.owned = row->r.message != NULL;
            if (row->r.error && row->r.message == NULL)
                rc = KC_AUTH_ENOMEM;
        }
    }
    free(twice);
    if (rc != KC_AUTH_OK) {
        kc_auth_scram_describe_free(out, n);
        return rc;
    }
    *rows = out;
    *n_rows = n;
    return KC_AUTH_OK;
}

void kc_auth_scram_describe_free(kc_scram_describe_row_t *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].user);
        kc_auth_result_clear(&rows[i].r);
    }
    free(rows);
}
