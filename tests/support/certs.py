"""certs: a throw-away CA and certificates made with the openssl command, for tests that need
TLS (nothing is committed: every key is made at test time, in a directory the caller owns).

    ca = make_ca(d, "ca", "Test CA")                       -> (key, pem)
    server = make_cert(d, "server", "/CN=localhost", ca, "DNS:localhost,IP:127.0.0.1")
                                                           -> (key, crt, key+crt in one pem)

Keys are RSA 2048, unencrypted PKCS#8 (what `openssl req -nodes` writes, and what Kafka's PEM
keystore reads without ssl.key.password); certificates are valid for two days.
"""
import os
import subprocess


def openssl(*args):
    p = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError("openssl %s failed:\n%s" % (" ".join(args), p.stdout))


def read(path):
    with open(path) as f:
        return f.read()


def make_ca(d, name, cn):
    key, pem = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", pem,
            "-days", "2", "-subj", "/CN=" + cn)
    return key, pem


def make_cert(d, name, subj, ca, san=None):
    """A key and a certificate signed by ca (key, pem): (key, crt, key and crt in one pem)."""
    key, csr, crt = (os.path.join(d, name + x) for x in (".key", ".csr", ".crt"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", subj)
    args = ["x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial",
            "-out", crt, "-days", "2"]
    if san:
        ext = os.path.join(d, name + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\n" % san)
        args += ["-extfile", ext]
    openssl(*args)
    both = os.path.join(d, name + ".pem")
    with open(both, "w") as out:
        out.write(read(key) + read(crt))
    return key, crt, both
