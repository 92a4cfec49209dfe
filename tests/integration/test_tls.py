#!/usr/bin/python3
"""test_tls: Kafka listeners with TLS, against real clients.

Every key and certificate is made at test time with the openssl command, in a temporary
directory (none is committed): a CA, a server certificate for localhost and 127.0.0.1, a client
certificate (CN=alice,OU=ServiceUsers,O=Acme) from that CA, and a second CA with a client
certificate of its own (mallory), which kcoord must not trust.

One kcoord serves three listeners on fixed free ports: PLAINTEXT, SSL (server certificate
only) and MTLS (an SSL listener whose listener.name.mtls. overrides require a client
certificate from the CA and map its subject with ssl.principal.mapping.rules), each advertised
as its own address (MTLS as localhost). Cases:

- real librdkafka clients over SSL and mTLS, both Debian's (confluent-kafka 1.7 over librdkafka
  2.0.2, /usr/bin/python3) and the confluent-kafka 2.16 wheel (its bundled librdkafka, from
  the venv of scripts/compat-venv, which is made when missing; the test fails, never skips,
  when it cannot be): a consumer group join, a commit, the commit read back, and Metadata
  answering with the address of the listener the client came in on; the mTLS client's
  principal is the mapped User:alice;
- refusals, each closing that connection only, logged, and counted in kcoord_tls_failures_total:
  a client certificate from the other CA; no client certificate where one is required; a
  plaintext Kafka request and garbage bytes on the TLS port; a client that sends nothing past
  ssl.handshake.timeout.ms; all while another TLS client keeps being served; a client that
  trusts only the other CA refuses the server;
- certificates reload without a restart, when the keystore file changes and on SIGHUP: new
  connections get the new certificate, an existing connection goes on being served;
- the HTTP listener over HTTPS (metrics.ssl.enabled) with metrics.bearer.token: 401 without
  the token except on /healthz and /readyz, plain HTTP on its port not served;
- start-up refusals naming the key: a SASL listener without sasl.enabled.mechanisms and an SSL
  listener without a keystore.
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
from tests.support import kcoord, wire  # noqa: E402
from tests.support.certs import make_ca, make_cert, openssl, read  # noqa: E402,F401

CLIENT = os.path.join(ROOT, "tests", "integration", "tls_client.py")
WAIT_S = 20


def venv_python():
    """The python of scripts/compat-venv (confluent-kafka 2.16 with its own librdkafka)."""
    try:
        return subprocess.run([os.path.join(ROOT, "scripts", "compat-venv")], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise AssertionError("test_tls: FAILED: the confluent-kafka wheel is needed and "
                             "scripts/compat-venv could not provide it (%s)" % e)


def tls_context(ca, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def tls_conn(port, ctx, host="localhost"):
    """A wire.Conn over TLS."""
    c = wire.Conn(port, "tls-test", host="127.0.0.1")
    c.s = ctx.wrap_socket(c.s, server_hostname=host)
    return c


def api_versions(c):
    r = c.ask("ApiVersions", 3, client_software_name="t", client_software_version="1")
    return r["error_code"]


def closed(sock, timeout=WAIT_S):
    """Whether the server closes sock (end of stream or reset) within timeout."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    except OSError:
        return True


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kc-tls-")
        d = cls.dir
        cls.ca = make_ca(d, "ca", "Test CA")
        cls.other_ca = make_ca(d, "other-ca", "Other CA")
        cls.server = make_cert(d, "server", "/CN=localhost", cls.ca,
                               "DNS:localhost,IP:127.0.0.1")
        cls.alice = make_cert(d, "alice", "/O=Acme/OU=ServiceUsers/CN=alice", cls.ca)
        cls.bob = make_cert(d, "bob", "/O=Acme/OU=People/CN=Bob", cls.ca)
        cls.mallory = make_cert(d, "mallory", "/O=Acme/OU=ServiceUsers/CN=mallory",
                                cls.other_ca)
        cls.ports = kcoord.free_ports(3)
        p, s, m = cls.ports
        cls.k = kcoord.Kcoord(
            os.path.join(d, "data"),
            "listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,MTLS://127.0.0.1:%d" % (p, s, m),
            "advertised.listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
            "MTLS://localhost:%d" % (p, s, m),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
            "ssl.keystore.location=" + cls.server[2],
            "ssl.handshake.timeout.ms=1500",
            "listener.name.mtls.ssl.client.auth=required",
            "listener.name.mtls.ssl.truststore.location=" + cls.ca[1],
            "listener.name.mtls.ssl.principal.mapping.rules="
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "topics=t:1", "offsets.topic.num.partitions=3", "log.level=debug",
            "metrics.listener=127.0.0.1:0")

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("kcoord exited with status %s:\n%s" % (rc, cls.k.output()))

    def failures(self, reason):
        _, _, body = self.k.get("/metrics")
        m = re.search(r'^kcoord_tls_failures_total\{reason="%s"\} (\S+)$' % reason, body, re.M)
        return float(m.group(1))

    def run_client(self, python, port, group, cert=None):
        a = {"bootstrap": "127.0.0.1:%d" % port, "group": group, "ca": self.ca[1]}
        if cert:
            a["cert"], a["key"] = cert[1], cert[0]
        p = subprocess.run([python, CLIENT, json.dumps(a)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=90)
        if p.returncode != 0:
            raise AssertionError("%s %s failed (%d): %s\n%s\nkcoord:\n%s" % (
                python, group, p.returncode, p.stderr[-3000:], p.stdout, self.k.output()[-6000:]))
        return json.loads(p.stdout.strip().splitlines()[-1])

    # ---- real clients ----

    def clients(self):
        return [("debian", "/usr/bin/python3"), ("wheel", venv_python())]

    def test_clients_over_ssl(self):
        s = self.ports[1]
        for name, python in self.clients():
            with self.subTest(client=name):
                r = self.run_client(python, s, "g-ssl-" + name)
                if name == "debian":
                    self.assertTrue(r["librdkafka"].startswith("2.0."), r)
                else:
                    self.assertTrue(r["version"].startswith("2.16"), r)
                self.assertEqual(r["assigned"], ["t-0"])
                self.assertEqual(r["committed"], 42)
                # Metadata answers with the SSL listener's advertised address.
                self.assertEqual(r["brokers"], ["127.0.0.1:%d" % s])

    def test_clients_over_mtls(self):
        m = self.ports[2]
        for name, python in self.clients():
            with self.subTest(client=name):
                r = self.run_client(python, m, "g-mtls-" + name, cert=self.alice)
                self.assertEqual(r["assigned"], ["t-0"])
                self.assertEqual(r["committed"], 42)
                self.assertEqual(r["brokers"], ["localhost:%d" % m])
        self.assertIsNotNone(self.k.find(r"on listener MTLS as User:alice$"))

    def test_principal_default_rule(self):
        """A subject the first rule does not match falls to DEFAULT: its RFC 2253 form."""
        c = tls_conn(self.ports[2], tls_context(self.ca[1], self.bob[1], self.bob[0]))
        try:
            self.assertEqual(api_versions(c), 0)
        finally:
            c.close()
        self.k.wait_line(r"on listener MTLS as User:CN=Bob,OU=People,O=Acme$")

    def test_metadata_follows_listener(self):
        p = self.ports[0]
        r = wire.ask(p, "t", "Metadata", 12, topics=None, allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)
        self.assertEqual([(b["host"], b["port"]) for b in r["brokers"]], [("127.0.0.1", p)])
        c = tls_conn(self.ports[2], tls_context(self.ca[1], self.alice[1], self.alice[0]))
        try:
            r = c.ask("FindCoordinator", 4, key_type=0, coordinator_keys=["g"])
            self.assertEqual([(x["host"], x["port"]) for x in r["coordinators"]],
                             [("localhost", self.ports[2])])
        finally:
            c.close()

    def test_large_and_pipelined_requests(self):
        """Frames larger than a TLS record, and many requests in one write, over TLS."""
        c = tls_conn(self.ports[1], tls_context(self.ca[1]))
        try:
            big = "x" * 300000  # a valid software name, in a frame of many TLS records
            r = c.ask("ApiVersions", 3, client_software_name=big, client_software_version="1")
            self.assertEqual(r["error_code"], 0)
            self.assertGreater(len(r["api_keys"]), 10)
            from tests.support import gen_wire
            body = gen_wire.encode_api_versions_request(3, None, client_software_name="p",
                                                        client_software_version="1")
            burst = b"".join(wire.frame(18, 3, 1000 + i, "p", body, flexible=True)
                             for i in range(200))
            c.s.sendall(burst)
            for i in range(200):
                corr, _ = c.recv()
                self.assertEqual(corr, 1000 + i)
            self.assertEqual(api_versions(c), 0)
        finally:
            c.close()

    # ---- refusals ----

    def assertRefused(self, port, ctx):
        """A TLS client with ctx is refused: its handshake fails, or (TLS 1.3, where the server
        checks the client's certificate after the client has finished) its first request."""
        c = wire.Conn(port, "refused")
        try:
            with self.assertRaises((ssl.SSLError, ConnectionResetError, EOFError, OSError)):
                c.s = ctx.wrap_socket(c.s, server_hostname="localhost")
                api_versions(c)
        finally:
            c.close()

    def test_wrong_ca_refused(self):
        before = self.failures("handshake")
        keeper = tls_conn(self.ports[1], tls_context(self.ca[1]))
        try:
            self.assertEqual(api_versions(keeper), 0)
            ctx = tls_context(self.ca[1], self.mallory[1], self.mallory[0])
            self.assertRefused(self.ports[2], ctx)
            self.k.wait_line(r"TLS handshake failed .*certificate verify failed")
            # The client side: trusting only the other CA, the server is refused.
            c = wire.Conn(self.ports[1], "other-ca")
            try:
                with self.assertRaises(ssl.SSLCertVerificationError):
                    c.s = tls_context(self.other_ca[1]).wrap_socket(c.s,
                                                                    server_hostname="localhost")
            finally:
                c.close()
            self.assertEqual(api_versions(keeper), 0)
        finally:
            keeper.close()
        self.assertGreater(self.failures("handshake"), before)

    def test_required_without_certificate(self):
        self.assertRefused(self.ports[2], tls_context(self.ca[1]))
        self.k.wait_line(r"TLS handshake failed .*peer did not return a certificate")

    def test_plaintext_and_garbage_close_only_that_connection(self):
        s = self.ports[1]
        before = self.failures("handshake")
        keeper = tls_conn(s, tls_context(self.ca[1]))
        try:
            self.assertEqual(api_versions(keeper), 0)
            plain = socket.create_connection(("127.0.0.1", s), timeout=WAIT_S)
            plain.sendall(wire.frame(18, 0, 1, "plain", b""))
            self.assertTrue(closed(plain))
            plain.close()
            self.assertEqual(api_versions(keeper), 0)
            junk = socket.create_connection(("127.0.0.1", s), timeout=WAIT_S)
            junk.sendall(os.urandom(3000))
            self.assertTrue(closed(junk))
            junk.close()
            self.assertEqual(api_versions(keeper), 0)
            # The plaintext port is untouched by all this.
            self.assertEqual(wire.ask(self.ports[0], "t", "ApiVersions", 0)["error_code"], 0)
        finally:
            keeper.close()
        self.assertGreaterEqual(self.failures("handshake"), before + 2)

    def test_handshake_timeout(self):
        before = self.failures("timeout")
        keeper = tls_conn(self.ports[1], tls_context(self.ca[1]))
        try:
            mute = socket.create_connection(("127.0.0.1", self.ports[1]), timeout=WAIT_S)
            t0 = time.monotonic()
            self.assertTrue(closed(mute))
            waited = time.monotonic() - t0
            mute.close()
            self.assertGreater(waited, 1.0)
            self.assertLess(waited, 10)
            self.assertEqual(api_versions(keeper), 0)
        finally:
            keeper.close()
        self.assertEqual(self.failures("timeout"), before + 1)
        self.k.wait_line(r"no TLS handshake within 1500 ms")


def serial(port, ca):
    ctx = tls_context(ca)
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert()["serialNumber"]


class ReloadTest(unittest.TestCase):
    def test_reload_on_file_change_and_sighup(self):
        d = tempfile.mkdtemp(prefix="kc-tls-reload-")
        k = None
        try:
            ca = make_ca(d, "ca", "Reload CA")
            certs = [make_cert(d, "s%d" % i, "/CN=localhost", ca, "DNS:localhost")[2]
                     for i in range(3)]
            ks = os.path.join(d, "keystore.pem")
            shutil.copy(certs[0], ks)
            port = kcoord.free_port()
            k = kcoord.Kcoord(os.path.join(d, "data"), "listeners=SSL://127.0.0.1:%d" % port,
                              "ssl.keystore.location=" + ks, "offsets.topic.num.partitions=1",
                              *kcoord.no_metrics_listener(), wait_port=False)
            k.wait_line(r"listening on 127\.0\.0\.1:%d \(SSL, SSL\)" % port)
            first = serial(port, ca[1])
            keeper = tls_conn(port, tls_context(ca[1]))
            self.assertEqual(api_versions(keeper), 0)

            tmp = ks + ".new"
            shutil.copy(certs[1], tmp)
            os.rename(tmp, ks)
            k.wait_line(r"listener SSL: certificates reloaded \(a file changed\)")
            second = serial(port, ca[1])
            self.assertNotEqual(second, first)
            self.assertEqual(api_versions(keeper), 0)

            # SIGHUP re-reads too; write the file in place so that the watch may also see it.
            with open(ks, "w") as f:
                f.write(read(certs[2]))
            k.proc.send_signal(signal.SIGHUP)
            k.wait_line(r"SIGHUP: listener SSL reloaded its certificates")
            third = serial(port, ca[1])
            self.assertNotIn(third, (first, second))
            self.assertEqual(api_versions(keeper), 0)

            # A keystore that no longer loads keeps the previous certificates.
            with open(ks, "w") as f:
                f.write("not a certificate\n")
            k.proc.send_signal(signal.SIGHUP)
            k.wait_line(r"SIGHUP: listener SSL keeps its previous certificates: "
                        r"ssl.keystore.location: no certificate")
            self.assertEqual(serial(port, ca[1]), third)
            keeper.close()
            self.assertEqual(k.stop(), 0)
            k = None
        finally:
            if k is not None:
                k.kill()
            shutil.rmtree(d, ignore_errors=True)


class PemValuesTest(unittest.TestCase):
    def test_pem_text_in_a_properties_file_and_an_encrypted_key(self):
        """ssl.keystore.certificate.chain, ssl.keystore.key (encrypted, PKCS#8, with
        ssl.key.password) and ssl.truststore.certificates as PEM text, written in a properties
        file with continuation lines, which join the PEM lines without their line breaks."""
        d = tempfile.mkdtemp(prefix="kc-tls-pem-")
        try:
            ca = make_ca(d, "ca", "Pem CA")
            key, crt, _ = make_cert(d, "server", "/CN=localhost", ca, "DNS:localhost")
            enc = os.path.join(d, "server.enc.key")
            openssl("pkcs8", "-topk8", "-in", key, "-out", enc, "-passout", "pass:s3cret")
            alice = make_cert(d, "alice", "/CN=alice", ca)

            def value(path):
                return " \\\n    ".join(read(path).strip().splitlines())

            conf = os.path.join(d, "kcoord.conf")
            with open(conf, "w") as f:
                f.write("ssl.keystore.certificate.chain=%s\n" % value(crt))
                f.write("ssl.keystore.key=%s\n" % value(enc))
                f.write("ssl.key.password=s3cret\n")
                f.write("ssl.truststore.certificates=%s\n" % value(ca[1]))
                f.write("ssl.client.auth=requested\n")
            port = kcoord.free_port()
            p = subprocess.Popen([kcoord.BIN, "-c", conf] + sum(
                (["--set", x] for x in ("listeners=SSL://127.0.0.1:%d" % port,
                                        "data.dir=" + os.path.join(d, "data"),
                                        "offsets.topic.num.partitions=1", "log.level=debug",
                                        *kcoord.no_metrics_listener())), []),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                env=kcoord.quiet_env())
            try:
                line = b""
                deadline = time.monotonic() + WAIT_S
                while b"listening on" not in line and time.monotonic() < deadline:
                    line = p.stderr.readline()
                    if not line:
                        break
                self.assertIn(b"(SSL, SSL)", line)
                # requested: a client without a certificate is anonymous, one with is alice.
                c = tls_conn(port, tls_context(ca[1]))
                self.assertEqual(api_versions(c), 0)
                c.close()
                c = tls_conn(port, tls_context(ca[1], alice[1], alice[0]))
                self.assertEqual(api_versions(c), 0)
                c.close()
            finally:
                p.send_signal(signal.SIGTERM)
                out = p.communicate(timeout=30)[1].decode()
            self.assertEqual(p.returncode, 0, out)
            self.assertIn("as User:ANONYMOUS", out)
            self.assertIn("as User:CN=alice", out)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class MetricsTest(unittest.TestCase):
    """The HTTP listener over TLS (metrics.ssl.enabled) with metrics.bearer.token: /healthz
    and /readyz stay open, everything else needs the token, and plain HTTP is not served."""

    def get(self, port, ctx, path, token=None):
        import http.client
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=WAIT_S, context=ctx)
        try:
            headers = {"Authorization": "Bearer " + token} if token else {}
            c.request("GET", path, headers=headers)
            r = c.getresponse()
            return r.status, r.getheader("WWW-Authenticate"), r.read().decode()
        finally:
            c.close()

    def test_https_and_bearer_token(self):
        d = tempfile.mkdtemp(prefix="kc-tls-metrics-")
        k = None
        try:
            ca = make_ca(d, "ca", "Metrics CA")
            pem = make_cert(d, "server", "/CN=localhost", ca, "DNS:localhost,IP:127.0.0.1")[2]
            k = kcoord.Kcoord(os.path.join(d, "data"), "offsets.topic.num.partitions=1",
                              "metrics.ssl.enabled=true", "metrics.bearer.token=s3cret-token",
                              "ssl.keystore.location=" + pem, "metrics.listener=127.0.0.1:0",
                              wait_port=False)
            port = int(k.wait_line(r"metrics\.listener: serving https://127\.0\.0\.1:(\d+)/")
                       .group(1))
            k.wait_line(r"all \d+ partitions loaded")
            ctx = tls_context(ca[1])
            ctx.check_hostname = False
            self.assertEqual(self.get(port, ctx, "/healthz")[0], 200)
            status, auth, _ = self.get(port, ctx, "/metrics")
            self.assertEqual((status, auth), (401, "Bearer"))
            self.assertEqual(self.get(port, ctx, "/v1/groups")[0], 401)
            self.assertEqual(self.get(port, ctx, "/metrics", "wrong")[0], 401)
            self.assertEqual(self.get(port, ctx, "/metrics", "s3cret-token-")[0], 401)
            status, _, body = self.get(port, ctx, "/metrics", "s3cret-token")
            self.assertEqual(status, 200)
            self.assertIn("kcoord_tls_failures_total", body)
            self.assertEqual(self.get(port, ctx, "/v1/groups", "s3cret-token")[0], 200)
            # Plain HTTP on the HTTPS port gets no answer, and the listener goes on serving.
            with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as plain:
                plain.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertTrue(closed(plain))
            self.assertEqual(self.get(port, ctx, "/healthz")[0], 200)
            self.assertEqual(k.stop(), 0)
            k = None
        finally:
            if k is not None:
                k.kill()
            shutil.rmtree(d, ignore_errors=True)


class StartupTest(unittest.TestCase):
    def refused(self, *sets):
        d = tempfile.mkdtemp(prefix="kc-tls-start-")
        try:
            p = subprocess.run(kcoord.args(os.path.join(d, "data"), *sets),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=kcoord.quiet_env(), timeout=30)
            return p.returncode, p.stderr
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_sasl_listener_without_mechanisms_refused(self):
        # SASL is served (tests/integration/test_sasl.py); a SASL listener without mechanisms
        # (kcoord implements none of Kafka's default, GSSAPI) still stops start-up.
        for proto in ("SASL_SSL", "SASL_PLAINTEXT"):
            rc, err = self.refused("listeners=%s://127.0.0.1:0" % proto)
            self.assertEqual(rc, 2, err)
            self.assertIn("listener %s: sasl.enabled.mechanisms is empty" % proto, err)

    def test_ssl_without_keystore_refused(self):
        rc, err = self.refused("listeners=SSL://127.0.0.1:0")
        self.assertEqual(rc, 2, err)
        self.assertIn("listener SSL (SSL): ssl.keystore.location: an SSL listener needs", err)
        rc, err = self.refused("listeners=SSL://127.0.0.1:0",
                               "ssl.keystore.location=/nonexistent/k.pem")
        self.assertEqual(rc, 2, err)
        self.assertIn("ssl.keystore.location: cannot read /nonexistent/k.pem", err)

    def test_unknown_listener_name_refused(self):
        rc, err = self.refused("listeners=INTERNAL://127.0.0.1:0")
        self.assertEqual(rc, 2, err)
        self.assertIn("listener INTERNAL has no security protocol in "
                      "listener.security.protocol.map", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
