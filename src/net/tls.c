/* tls.c - TLS server configurations (kc_net_tls_t) with OpenSSL 3, and the pieces of a TLS
 * connection that conn.c drives.
 *
 * A configuration turns one listener's ssl.* settings into an SSL_CTX: the key and certificate
 * chain (a PEM file, or PEM text in the settings), the trusted CAs, the client-certificate
 * policy, the TLS versions and cipher suites. Settings files are read whole and their PEM
 * blocks normalised (Kafka accepts PEM values whose line breaks were lost in a properties file)
 * before OpenSSL parses them. kc_net_tls_reload builds a new context and swaps it in; a
 * connection's SSL holds its own reference to the context it was made with, so existing
 * connections continue and the old context is freed with the last of them. Each file read is
 * watched with a uv_fs_poll: a change reloads, and a reload that fails keeps the old context
 * (logged at error).
 *
 * A connection (conn.c) gets an SSL with two memory BIOs: what the socket reads is written
 * into the read BIO, SSL_read takes plaintext out; SSL_write puts ciphertext into the write
 * BIO, which conn.c drains into its one write in flight. Nothing here touches a socket.
 * Renegotiation is refused, buffers are released while a connection is idle.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/net_int.h"
#include "util/diag.h"

enum { WATCH_INTERVAL_MS = 1000, MAX_FILES = 2 };

struct kc_net_tls_s {
    uv_loop_t *loop;
    kc_net_tls_conf_t conf; /* strings owned */
    kc_net_principal_rules_t *rules;
    SSL_CTX *ctx;
    uv_fs_poll_t polls[MAX_FILES];
    int n_polls, open_handles;
    bool closing;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void kc_tls_last_error(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0)
        snprintf(buf, len, "no further detail");
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
}

/* ---- PEM text ---------------------------------------------------------------------------- */

/* Append n bytes to a growing string. */
typedef struct sbuf_s {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* The PEM blocks of `text` rewritten with their base64 in lines of 64 characters, whatever
 * blanks and line breaks the text had (a block with headers, "Proc-Type: ...", is kept as it
 * is). Text outside the blocks is dropped. NULL when out of memory; "" when there is no block. */
static char *pem_normalise(const char *text)
{
    sbuf_t b = {0};
    sb_add(&b, "", 0);
    const char *p = text;
    for (;;) {
        const char *begin = strstr(p, "-----BEGIN ");
        if (begin == NULL)
            break;
        const char *head_end = strstr(begin + 11, "-----");
        if (head_end == NULL)
            break;
        const char *body = head_end + 5;
        const char *end = strstr(body, "-----END ");
        if (end == NULL)
            break;
        const char *end_end = strstr(end + 9, "-----");
        if (end_end == NULL)
            break;
        end_end += 5;
        if (memchr(body, ':', (size_t)(end - body)) != NULL) {
            sb_add(&b, begin, (size_t)(end_end - begin));
            sb_add(&b, "\n", 1);
        } else {
            sb_add(&b, begin, (size_t)(body - begin));
            sb_add(&b, "\n", 1);
            int col = 0;
            for (const char *q = body; q < end; q++) {
                if (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
                    continue;
                sb_add(&b, q, 1);
                if (++col == 64) {
                    sb_add(&b, "\n", 1);
                    col = 0;
                }
            }
            if (col > 0)
                sb_add(&b, "\n", 1);
            sb_add(&b, end, (size_t)(end_end - end));
            sb_add(&b, "\n", 1);
        }
        p = end_end;
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The whole of file `path`, NUL-terminated; NULL with the reason in err. */
static char *read_file(const char *key, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        seterr(err, errlen, "%s: cannot read %s: %s", key, path, strerror(errno));
        return NULL;
    }
    sbuf_t b = {0};
    char chunk[4096];
    size_t n;
    sb_add(&b, "", 0);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (64u << 20))
        sb_add(&b, chunk, n);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || b.oom) {
        free(b.p);
        seterr(err, errlen, "%s: cannot read %s: %s", key, path, bad ? "read error" : "too big");
        return NULL;
    }
    return b.p;
}

/* PEM text for a key/value pair of settings: the file at `location`, else `value`. */
static char *pem_of(const char *loc_key, const char *location, const char *val_key,
                    const char *value, char *err, size_t errlen, const char **from)
{
    char *raw = NULL;
    if (*location != '\0') {
        if ((raw = read_file(loc_key, location, err, errlen)) == NULL)
            return NULL;
        *from = loc_key;
    } else {
        *from = val_key;
    }
    char *pem = pem_normalise(raw != NULL ? raw : value);
    free(raw);
    if (pem == NULL)
        seterr(err, errlen, "%s: out of memory", *from);
    return pem;
}

static int password_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    const char *pw = u;
    int n = (int)strlen(pw);
    if (n > size)
        n = size;
    memcpy(buf, pw, (size_t)n);
    return n;
}

/* The certificates of PEM text `pem`, in order, pushed onto a new stack. */
static STACK_OF(X509) * read_certs(const char *pem)
{
    STACK_OF(X509) *certs = sk_X509_new_null();
    BIO *bio = BIO_new_mem_buf(pem, -1);
    X509 *x;
    while (certs != NULL && bio != NULL && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
        if (!sk_X509_push(certs, x))
            X509_free(x);
    ERR_clear_error(); /* the end of the text reads as "no start line" */
    BIO_free(bio);
    return certs;
}

/* ---- the context ------------------------------------------------------------------------- */

static int load_keystore(const kc_net_tls_t *t, SSL_CTX *ctx, char *err, size_t errlen)
{
    const kc_net_tls_conf_t *c = &t->conf;
    char why[256];
    if (*c->keystore_location != '\0' && (*c->keystore_chain != '\0' || *c->keystore_key != '\0')) {
        seterr(err, errlen,
               "ssl.keystore.location: set it or ssl.keystore.certificate.chain "
               "with ssl.keystore.key, not both");
        return -1;
    }
    if (*c->keystore_location == '\0' && (*c->keystore_chain == '\0' || *c->keystore_key == '\0')) {
        seterr(err, errlen,
               "ssl.keystore.location: an SSL listener needs its key and certificate chain: "
               "ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key");
        return -1;
    }
    const char *from = NULL;
    char *chain = pem_of("ssl.keystore.location", c->keystore_location,
                         "ssl.keystore.certificate.chain", c->keystore_chain, err, errlen, &from);
    if (chain == NULL)
        return -1;
    char *key = *c->keystore_location != '\0' ? chain : pem_normalise(c->keystore_key);
    const char *key_from = *c->keystore_location != '\0' ? from : "ssl.keystore.key";
    int rc = -1;
    STACK_OF(X509) *certs = read_certs(chain);
    EVP_PKEY *pkey = NULL;
    BIO *kb = key != NULL ? BIO_new_mem_buf(key, -1) : NULL;
    if (kb != NULL)
        pkey = PEM_read_bio_PrivateKey(kb, NULL, password_cb, (void *)c->key_password);
    if (certs == NULL || sk_X509_num(certs) == 0) {
        seterr(err, errlen, "%s: no certificate in PEM form", from);
    } else if (pkey == NULL) {
        kc_tls_last_error(why, sizeof why);
        seterr(err, errlen, "%s: no private key that can be read%s (%s)", key_from,
               *c->key_password != '\0' ? " with ssl.key.password" : "", why);
    } else if (SSL_CTX_use_certificate(ctx, sk_X509_value(certs, 0)) != 1 ||
               SSL_CTX_use_PrivateKey(ctx, pkey) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        kc_tls_last_error(why, sizeof why);
        seterr(err, errlen, "%s: the key does not go with the first certificate (%s)", key_from,
               why);
    } else {
        rc = 0;
        for (int i = 1; rc == 0 && i < sk_X509_num(certs); i++) {
            if (SSL_CTX_add1_chain_cert(ctx, sk_X509_value(certs, i)) != 1) {
                kc_tls_last_error(why, sizeof why);
                seterr(err, errlen, "%s: cannot use certificate %d of the chain (%s)", from, i + 1,
                       why);
                rc = -1;
            }
        }
    }
    ERR_clear_error();
    EVP_PKEY_free(pkey);
    BIO_free(kb);
    sk_X509_pop_free(certs, X509_free);
    if (key != chain)
        free(key);
    free(chain);
    return rc;
}

static int load_truststore(const kc_net_tls_t *t, SSL_CTX *ctx, char *err, size_t errlen)
{
    const kc_net_tls_conf_t *c = &t->conf;
    if (*c->truststore_location == '\0' && *c->truststore_certs == '\0') {
        SSL_CTX_set_default_verify_paths(ctx);
        return 0;
    }
    if (*c->truststore_location != '\0' && *c->truststore_certs != '\0') {
        seterr(err, errlen,
               "ssl.truststore.location: set it or ssl.truststore.certificates, "
               "not both");
        return -1;
    }
    const char *from = NULL;
    char *pem = pem_of("ssl.truststore.location", c->truststore_location,
                       "ssl.truststore.certificates", c->truststore_certs, err, errlen, &from);
    if (pem == NULL)
        return -1;
    STACK_OF(X509) *certs = read_certs(pem);
    free(pem);
    int rc = 0;
    if (certs == NULL || sk_X509_num(certs) == 0) {
        seterr(err, errlen, "%s: no certificate in PEM form", from);
        rc = -1;
    }
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    for (int i = 0; rc == 0 && i < sk_X509_num(certs); i++) {
        X509 *x = sk_X509_value(certs, i);
        if (X509_STORE_add_cert(store, x) != 1 || SSL_CTX_add_client_CA(ctx, x) != 1) {
            seterr(err, errlen, "%s: cannot use certificate %d", from, i + 1);
            rc = -1;
        }
    }
    ERR_clear_error();
    sk_X509_pop_free(certs, X509_free);
    return rc;
}

/* ssl.cipher.suites: standard (IANA) names; TLS 1.3 suites go to SSL_CTX_set_ciphersuites,
 * the others, by their OpenSSL names, to SSL_CTX_set_cipher_list. */
static int set_ciphers(const kc_net_tls_t *t, SSL_CTX *ctx, char *err, size_t errlen)
{
    const char *v = t->conf.cipher_suites;
    if (*v == '\0')
        return 0;
    sbuf_t l12 = {0}, l13 = {0};
    sb_add(&l12, "", 0);
    sb_add(&l13, "", 0);
    int rc = 0;
    for (const char *p = v; rc == 0 && *p != '\0';) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e != '\0' && *e != ',' && *e != ' ')
            e++;
        if (e == p)
            break;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(e - p), p);
        p = e;
        bool v13 = strncmp(name, "TLS_AES_", 8) == 0 || strncmp(name, "TLS_CHACHA20_", 13) == 0;
        const char *ossl = v13 ? name : OPENSSL_cipher_name(name);
        if (ossl == NULL || strcmp(ossl, "(NONE)") == 0) {
            seterr(err, errlen, "ssl.cipher.suites: %s is not a cipher suite OpenSSL knows", name);
            rc = -1;
            break;
        }
        sbuf_t *l = v13 ? &l13 : &l12;
        if (l->len > 0)
            sb_add(l, ":", 1);
        sb_add(l, ossl, strlen(ossl));
    }
    if (rc == 0 && (l12.oom || l13.oom)) {
        seterr(err, errlen, "ssl.cipher.suites: out of memory");
        rc = -1;
    }
    /* The suites not named are off, as in Kafka (Java's setEnabledCipherSuites). */
    if (rc == 0 && SSL_CTX_set_ciphersuites(ctx, l13.p) != 1)
        rc = -1;
    if (rc == 0 && l12.len > 0 && SSL_CTX_set_cipher_list(ctx, l12.p) != 1)
        rc = -1;
    if (rc == 0 && l12.len == 0) {
        /* No TLS 1.2 suite named: TLS 1.2 has none left. */
        if (SSL_CTX_get_max_proto_version(ctx) == TLS1_2_VERSION) {
            seterr(err, errlen,
                   "ssl.cipher.suites: no TLSv1.2 suite, but ssl.enabled.protocols "
                   "is TLSv1.2 only");
            rc = -1;
        }
        SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    }
    if (rc == 0 && l13.len == 0 && SSL_CTX_get_min_proto_version(ctx) == TLS1_3_VERSION) {
        seterr(err, errlen,
               "ssl.cipher.suites: no TLSv1.3 suite, but ssl.enabled.protocols is "
               "TLSv1.3 only");
        rc = -1;
    }
    if (rc != 0 && err[0] == '\0')
        seterr(err, errlen, "ssl.cipher.suites: OpenSSL refuses \"%s\"", v);
    ERR_clear_error();
    free(l12.p);
    free(l13.p);
    return rc;
}

static SSL_CTX *build_ctx(const kc_net_tls_t *t, char *err, size_t errlen)
{
    const kc_net_tls_conf_t *c = &t->conf;
    if (errlen > 0)
        err[0] = '\0';
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        seterr(err, errlen, "ssl: cannot create an OpenSSL context");
        return NULL;
    }
    bool v12 = strstr(c->protocols, "TLSv1.2") != NULL,
         v13 = strstr(c->protocols, "TLSv1.3") != NULL;
    SSL_CTX_set_min_proto_version(ctx, v12 ? TLS1_2_VERSION : TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, v13 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    /* Resumption goes through stateless tickets: no server-side cache holds sessions. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    static const unsigned char sid[] = "kcoord";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    int verify = SSL_VERIFY_NONE;
    if (strcmp(c->client_auth, "requested") == 0)
        verify = SSL_VERIFY_PEER;
    else if (strcmp(c->client_auth, "required") == 0)
        verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, verify, NULL);
    if (load_keystore(t, ctx, err, errlen) != 0 ||
        (verify != SSL_VERIFY_NONE && load_truststore(t, ctx, err, errlen) != 0) ||
        set_ciphers(t, ctx, err, errlen) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- the configuration ------------------------------------------------------------------- */

static void on_file_changed(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
                            const uv_stat_t *curr)
{
    kc_net_tls_t *t = h->data;
    (void)prev;
    (void)curr;
    if (t->closing || status < 0)
        return; /* a file that went away: keep the context until it is back */
    char err[512];
    if (kc_net_tls_reload(t, err, sizeof err) != 0)
        KC_ERROR("net",
                 "listener %s: a certificate file changed, but %s; keeping the previous "
                 "certificates",
                 t->conf.listener, err);
    else
        KC_INFO("net", "listener %s: certificates reloaded (a file changed)", t->conf.listener);
}

static void free_conf(kc_net_tls_conf_t *c)
{
    const char **s[] = {&c->listener,         &c->keystore_location, &c->keystore_chain,
                        &c->keystore_key,     &c->key_password,      &c->truststore_location,
                        &c->truststore_certs, &c->client_auth,       &c->protocols,
                        &c->cipher_suites,    &c->principal_rules};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        free((char *)*s[i]);
        *s[i] = NULL;
    }
}

static bool copy_conf(kc_net_tls_conf_t *d, const kc_net_tls_conf_t *c)
{
    *d = *c;
    const char **s[] = {&d->listener,         &d->keystore_location, &d->keystore_chain,
                        &d->keystore_key,     &d->key_password,      &d->truststore_location,
                        &d->truststore_certs, &d->client_auth,       &d->protocols,
                        &d->cipher_suites,    &d->principal_rules};
    bool ok = true;
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        *s[i] = strdup(*s[i] != NULL ? *s[i] : "");
        ok = ok && *s[i] != NULL;
    }
    return ok;
}

static void tls_free(kc_net_tls_t *t)
{
    SSL_CTX_free(t->ctx);
    kc_net_principal_rules_free(t->rules);
    free_conf(&t->conf);
    free(t);
}

kc_net_tls_t *kc_net_tls_new(uv_loop_t *loop, const kc_net_tls_conf_t *conf, char *err,
                             size_t errlen)
{
    kc_net_tls_t *t = calloc(1, sizeof(*t));
    if (t == NULL || !copy_conf(&t->conf, conf)) {
        if (t != NULL)
            tls_free(t);
        seterr(err, errlen, "ssl: out of memory");
        return NULL;
    }
    t->loop = loop;
    char why[300];
    if ((t->rules = kc_net_principal_rules_parse(t->conf.principal_rules, why, sizeof why)) ==
        NULL) {
        seterr(err, errlen, "ssl.principal.mapping.rules: %s", why);
        tls_free(t);
        return NULL;
    }
    if ((t->ctx = build_ctx(t, err, errlen)) == NULL) {
        tls_free(t);
        return NULL;
    }
    const char *files[MAX_FILES] = {
        t->conf.keystore_location,
        strcmp(t->conf.client_auth, "none") != 0 ? t->conf.truststore_location : ""};
    for (int i = 0; i < MAX_FILES; i++) {
        if (*files[i] == '\0')
            continue;
        uv_fs_poll_t *h = &t->polls[t->n_polls];
        uv_fs_poll_init(loop, h);
        h->data = t;
        t->n_polls++;
        t->open_handles++;
        if (uv_fs_poll_start(h, on_file_changed, files[i], WATCH_INTERVAL_MS) != 0)
            KC_WARN("net", "listener %s: cannot watch %s for changes (SIGHUP still reloads)",
                    t->conf.listener, files[i]);
    }
    return t;
}

int kc_net_tls_reload(kc_net_tls_t *t, char *err, size_t errlen)
{
    SSL_CTX *ctx = build_ctx(t, err, errlen);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(t->ctx); /* connections that use it hold their own reference */
    t->ctx = ctx;
    return 0;
}

static void on_poll_closed(uv_handle_t *h)
{
    kc_net_tls_t *t = h->data;
    if (--t->open_handles == 0)
        tls_free(t);
}

void kc_net_tls_close(kc_net_tls_t *t)
{
    if (t == NULL)
        return;
    t->closing = true;
    if (t->n_polls == 0) {
        tls_free(t);
        return;
    }
    for (int i = 0; i < t->n_polls; i++)
        uv_close((uv_handle_t *)&t->polls[i], on_poll_closed);
}

/* ---- connections ------------------------------------------------------------------------- */

SSL *kc_tls_new_conn(kc_net_tls_t *t)
{
    SSL *ssl = SSL_new(t->ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    if (ssl == NULL || rb == NULL || wb == NULL) {
        SSL_free(ssl);
        BIO_free(rb);
        BIO_free(wb);
        ERR_clear_error();
        return NULL;
    }
    BIO_set_mem_eof_return(rb, -1); /* an empty read BIO means "wait", not end of stream */
    SSL_set_bio(ssl, rb, wb);
    SSL_set_accept_state(ssl);
    return ssl;
}

/* A memory BIO keeps the capacity its largest burst needed (a 16 KiB record, the handshake's
 * certificate chain). Once it is empty, one above `keep` bytes is replaced with a new one, so
 * that an idle connection holds no such buffer. */
static void shrink(SSL *ssl, BIO *b, bool rbio, size_t keep)
{
    BUF_MEM *bm = NULL;
    if (BIO_ctrl_pending(b) != 0 || BIO_get_mem_ptr(b, &bm) != 1 || bm == NULL || bm->max <= keep)
        return;
    BIO *fresh = BIO_new(BIO_s_mem());
    if (fresh == NULL)
        return; /* keep the old one */
    if (rbio) {
        BIO_set_mem_eof_return(fresh, -1);
        SSL_set0_rbio(ssl, fresh); /* frees the old one */
    } else {
        SSL_set0_wbio(ssl, fresh);
    }
}

void kc_tls_idle(SSL *ssl)
{
    shrink(ssl, SSL_get_rbio(ssl), true, 1024);
    shrink(ssl, SSL_get_wbio(ssl), false, 1024);
}

int kc_tls_principal(const kc_net_tls_t *t, SSL *ssl, char **principal, char *why, size_t len)
{
    *principal = NULL;
    X509 *cert = SSL_get0_peer_certificate(ssl);
    if (cert == NULL)
        return 0; /* User:ANONYMOUS */
    BIO *b = BIO_new(BIO_s_mem());
    /* RFC 2253 as Java's X500Principal.getName() writes it: UTF-8 kept as it is. */
    if (b == NULL ||
        X509_NAME_print_ex(b, X509_get_subject_name(cert), 0,
                           XN_FLAG_RFC2253 & ~(unsigned long)ASN1_STRFLGS_ESC_MSB) < 0) {
        BIO_free(b);
        snprintf(why, len, "cannot print the certificate's subject");
        ERR_clear_error();
        return -1;
    }
    char *dn = NULL;
    long n = BIO_get_mem_data(b, &dn);
    char *subject = strndup(dn != NULL ? dn : "", n > 0 ? (size_t)n : 0);
    BIO_free(b);
    char *name = NULL;
    int rc = subject != NULL ? kc_net_principal_map(t->rules, subject, &name) : -1;
    if (rc <= 0) {
        snprintf(why, len, rc == 0 ? "No rules apply to DN \"%.200s\"" : "out of memory",
                 subject != NULL ? subject : "");
        free(subject);
        return -1;
    }
    free(subject);
    size_t nl = strlen(name);
    if ((*principal = malloc(nl + 6)) != NULL) {
        memcpy(*principal, "User:", 5);
        memcpy(*principal + 5, name, nl + 1);
    }
    free(name);
    if (*principal == NULL) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    return 0;
}

int64_t kc_tls_handshake_timeout(const kc_net_tls_t *t)
{
    return t->conf.handshake_timeout_ms;
}

/* ---- sessions for other protocols (the HTTP listener) ------------------------------------ */

struct kc_net_tls_session_s {
    SSL *ssl;
};

kc_net_tls_session_t *kc_net_tls_session_new(kc_net_tls_t *t)
{
    kc_net_tls_session_t *s = calloc(1, sizeof(*s));
    if (s != NULL && (s->ssl = kc_tls_new_conn(t)) == NULL) {
        free(s);
        s = NULL;
    }
    return s;
}

void kc_net_tls_session_free(kc_net_tls_session_t *s)
{
    if (s == NULL)
        return;
    SSL_free(s->ssl);
    free(s);
}

int kc_net_tls_session_feed(kc_net_tls_session_t *s, const void *p, size_t n)
{
    return BIO_write(SSL_get_rbio(s->ssl), p, (int)n) == (int)n ? 0 : -1;
}

long kc_net_tls_session_read(kc_net_tls_session_t *s, void *buf, size_t cap, char *why,
                             size_t whylen)
{
    ERR_clear_error();
    int n = SSL_read(s->ssl, buf, (int)cap);
    if (n > 0)
        return n;
    int e = SSL_get_error(s->ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    if (e == SSL_ERROR_ZERO_RETURN)
        snprintf(why, whylen, "the peer closed its TLS session");
    else
        kc_tls_last_error(why, whylen);
    ERR_clear_error();
    return -1;
}

int kc_net_tls_session_write(kc_net_tls_session_t *s, const void *p, size_t n)
{
    ERR_clear_error();
    int rc = n == 0 || SSL_write(s->ssl, p, (int)n) == (int)n ? 0 : -1;
    ERR_clear_error();
    return rc;
}

uint8_t *kc_net_tls_session_output(kc_net_tls_session_t *s, size_t *len)
{
    BIO *wb = SSL_get_wbio(s->ssl);
    size_t pend = BIO_ctrl_pending(wb);
    *len = 0;
    if (pend == 0)
        return NULL;
    uint8_t *p = malloc(pend);
    if (p == NULL)
        return NULL;
    int got = BIO_read(wb, p, (int)pend);
    if (got <= 0) {
        free(p);
        return NULL;
    }
    *len = (size_t)got;
    return p;
}
