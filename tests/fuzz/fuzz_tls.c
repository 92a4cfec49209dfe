/* fuzz_tls.c - libFuzzer target: the TLS entry of an SSL listener (src/net/tls.c) and
 * ssl.principal.mapping.rules (src/net/principal.c).
 *
 * Input format: the first byte picks what the rest is.
 *   0: bytes a client sends to an SSL listener: written into the read BIO of a server SSL made
 *      by kc_tls_new_conn (its context built once, from a key and self-signed certificate made
 *      in memory and given as PEM text, client certificates requested), then the handshake is
 *      driven and plaintext read as conn.c does it; if it ever finishes, the principal is
 *      built. What the server writes back is drained.
 *   1: a rule list, a NUL byte, a subject: parsed, and when valid, the subject mapped.
 *   2: PEM text given as ssl.keystore.certificate.chain and ssl.keystore.key (and as
 *      ssl.truststore.certificates): a configuration is built from it, or refused.
 * Any crash, leak or sanitizer report is a bug; so is a rule list that parses but maps no
 * subject while it holds DEFAULT.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "fuzz.h"
#include "net/net_int.h"

static kc_net_tls_t *server;

/* A P-256 key and a self-signed certificate for CN=fuzz, as PEM text. */
static void make_identity(char **cert_pem, char **key_pem)
{
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pkey);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
    X509_set_issuer_name(x, n);
    X509_sign(x, pkey, EVP_sha256());
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(cb, x);
    PEM_write_bio_PrivateKey(kb, pkey, NULL, NULL, 0, NULL, NULL);
    char *p;
    long len = BIO_get_mem_data(cb, &p);
    *cert_pem = strndup(p, (size_t)len);
    len = BIO_get_mem_data(kb, &p);
    *key_pem = strndup(p, (size_t)len);
    BIO_free(cb);
    BIO_free(kb);
    X509_free(x);
    EVP_PKEY_free(pkey);
}

static kc_net_tls_t *configure(const char *chain, const char *key, const char *trust)
{
    kc_net_tls_conf_t c = {
        .listener = "FUZZ",
        .keystore_location = "",
        .keystore_chain = chain,
        .keystore_key = key,
        .key_password = "",
        .truststore_location = "",
        .truststore_certs = trust,
        .client_auth = "requested",
        .protocols = "TLSv1.2,TLSv1.3",
        .cipher_suites = "",
        .principal_rules = "RULE:^CN=(.*)$/$1/L,DEFAULT",
        .handshake_timeout_ms = 1000,
    };
    char err[512];
    return kc_net_tls_new(NULL, &c, err, sizeof err); /* no file: the loop is never used */
}

static void handshake(const uint8_t *data, size_t size)
{
    if (server == NULL) {
        char *cert, *key;
        make_identity(&cert, &key);
        server = configure(cert, key, cert);
        free(cert);
        free(key);
        if (server == NULL)
            abort();
    }
    SSL *ssl = kc_tls_new_conn(server);
    if (ssl == NULL)
        return;
    BIO_write(SSL_get_rbio(ssl), data, (int)size);
    uint8_t buf[4096], out[4096];
    for (int round = 0; round < 4; round++) {
        int r = SSL_do_handshake(ssl);
        while (BIO_read(SSL_get_wbio(ssl), out, sizeof out) > 0)
            ;
        if (r == 1) {
            char *principal = NULL, why[256];
            if (kc_tls_principal(server, ssl, &principal, why, sizeof why) == 0)
                free(principal);
            while (SSL_read(ssl, buf, sizeof buf) > 0)
                ;
            break;
        }
        int e = SSL_get_error(ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            break;
    }
    ERR_clear_error();
    SSL_free(ssl);
}

static void rules(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    char *text = strndup((const char *)data, nul ? (size_t)(nul - data) : size);
    char *dn = nul ? strndup((const char *)nul + 1, size - (size_t)(nul + 1 - data))
                   : strdup("CN=alice,OU=ServiceUsers,O=Acme");
    char err[256];
    kc_net_principal_rules_t *r =
        text && dn ? kc_net_principal_rules_parse(text, err, sizeof err) : NULL;
    if (r != NULL) {
        char *name = NULL;
        int rc = kc_net_principal_map(r, dn, &name);
        if (rc == 0 && strstr(text, "DEFAULT") != NULL && strstr(text, "RULE:") == NULL)
            abort(); /* DEFAULT alone always applies */
        free(name);
        kc_net_principal_rules_free(r);
    }
    free(text);
    free(dn);
}

static void pem(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *)data, size);
    if (text == NULL)
        return;
    kc_net_tls_t *t = configure(text, text, text);
    kc_net_tls_close(t);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        handshake(data + 1, size - 1);
        break;
    case 1:
        rules(data + 1, size - 1);
        break;
    default:
        pem(data + 1, size - 1);
        break;
    }
    return 0;
}
