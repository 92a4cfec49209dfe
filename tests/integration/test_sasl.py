#!/usr/bin/python3
"""test_sasl: SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on SASL_PLAINTEXT and SASL_SSL
listeners, against real clients and against the wire.

The TLS keys and certificates are made at test time with the openssl command (test_tls's
helpers), none is committed. One kcoord serves four listeners: PLAINTEXT (where the SCRAM users
are created with AlterUserScramCredentials, and where the tests look at what a refused client
left behind), SASL_PLAINTEXT, SASL_SSL, and REAUTH (SASL_PLAINTEXT with
listener.name.reauth.connections.max.reauth.ms=3000). PLAIN users come from
listener.name.<name>.plain.sasl.jaas.config in Kafka's JAAS form.

Cases:
- real librdkafka clients, Debian's (confluent-kafka 1.7 over librdkafka 2.0.2, whose SCRAM
  nonce Kafka 4 refuses) and the confluent-kafka 2.16 wheel (from scripts/compat-venv; the test
  fails, never skips, without it), over SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
  SCRAM-SHA-512: join a group, commit, read the commit back; kcat with SCRAM-SHA-512 (metadata);
- librdkafka 2.16 re-authenticating when the session ends (KIP-368) while it keeps committing;
- SCRAM credentials created with AlterUserScramCredentials, described, and surviving a
  restart; Kafka's kafka-configs (through scripts/kafka-ref; skipped, saying so, without java
  and its jars) adding, describing (DescribeClientQuotas then DescribeUserScramCredentials) and
  deleting one; DescribeClientQuotas' filter refusals (kcoord has no quotas: no entries);
- refusals, each with Kafka's exact error and nothing changed on the server: a wrong password and
  an unknown user (PLAIN and SCRAM), an unknown mechanism, a plaintext client on a SASL port (its
  first request is not ApiVersions or SaslHandshake), another request after ApiVersions, a request
  other than SaslAuthenticate after the handshake (ILLEGAL_SASL_STATE), a frame above
  sasl.server.max.receive.size, a session that expired, re-authentication as another principal or
  with another mechanism, and SaslHandshake/SaslAuthenticate on a plain listener; a failed v0
  raw-token exchange closed only after connection.failed.authentication.delay.ms;
- kcoord_sasl_authentications_total and kcoord_sasl_reauthentications_total counting successes
  and failures by mechanism, and the failure log lines naming the peer and the mechanism, never
  the password.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import socket
import ssl  # noqa: F401 (test_tls's helpers)
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests.support import gen_wire, kafka_ref, kcoord, wire  # noqa: E402
import test_tls  # noqa: E402

CLIENT = os.path.join(ROOT, "tests", "integration", "sasl_client.py")
MECHS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" '
        'user_alice="alice-secret" user_bob="bob-secret";')
GENERIC = ("Authentication failed during authentication due to invalid credentials with SASL "
           "mechanism %s")
PLAIN_BAD = "Authentication failed: Invalid username or password"
SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS, METADATA = 17, 36, 18, 3
DELAY_MS = 300


def scram_salted(mech, password, salt, iterations):
    h = "sha256" if mech == "SCRAM-SHA-256" else "sha512"
    return hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)


def alter_scram(port, user, mech, password, iterations=8192):
    salt = os.urandom(16)
    code = 1 if mech == "SCRAM-SHA-256" else 2
    r = wire.ask(port, "admin", "AlterUserScramCredentials", 0, deletions=[], upsertions=[{
        "name": user, "mechanism": code, "iterations": iterations, "salt": salt,
        "salted_password": scram_salted(mech, password, salt, iterations)}])
    return [(x.user, x.error_code, x.error_message) for x in r.results]


class ScramClient:
    """RFC 5802 without channel binding, as Kafka's ScramSaslClient."""

    def __init__(self, mech, user, password):
        self.h = hashlib.sha256 if mech == "SCRAM-SHA-256" else hashlib.sha512
        self.mech, self.user, self.password = mech, user, password
        self.nonce = base64.b64encode(os.urandom(18)).decode()

    def first(self):
        self.bare = "n=%s,r=%s" % (self.user.replace("=", "=3D").replace(",", "=2C"), self.nonce)
        return ("n,," + self.bare).encode()

    def final(self, server_first):
        sf = server_first.decode()
        f = dict(x.split("=", 1) for x in sf.split(","))
        salted = hashlib.pbkdf2_hmac(self.h().name, self.password.encode(),
                                     base64.b64decode(f["s"]), int(f["i"]))
        without = "c=biws,r=" + f["r"]
        auth = ",".join([self.bare, sf, without]).encode()
        ck = hmac.new(salted, b"Client Key", self.h).digest()
        sig = hmac.new(self.h(ck).digest(), auth, self.h).digest()
        proof = bytes(a ^ b for a, b in zip(ck, sig))
        self.server_sig = hmac.new(hmac.new(salted, b"Server Key", self.h).digest(), auth,
                                   self.h).digest()
        return (without + ",p=" + base64.b64encode(proof).decode()).encode()


def closed(c, timeout=5):
    """True when the peer closed the connection (end of stream or reset) within timeout."""
    c.s.settimeout(timeout)
    try:
        return c.s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class SaslTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kc-sasl-")
        d = cls.dir
        cls.ca = test_tls.make_ca(d, "ca", "Test CA")
        cls.server = test_tls.make_cert(d, "server", "/CN=localhost", cls.ca,
                                        "DNS:localhost,IP:127.0.0.1")
        cls.ports = kcoord.free_ports(4)
        p, sp, ss, ra = cls.ports
        cls.k = kcoord.Kcoord(
            os.path.join(d, "data"),
            "listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
            "SASL_SSL://127.0.0.1:%d,REAUTH://127.0.0.1:%d" % (p, sp, ss, ra),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,REAUTH:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms=" + ",".join(MECHS),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config=" + JAAS,
            "listener.name.reauth.plain.sasl.jaas.config=" + JAAS,
            "listener.name.reauth.connections.max.reauth.ms=3000",
            "connection.failed.authentication.delay.ms=%d" % DELAY_MS,
            "ssl.keystore.location=" + cls.server[2],
            "topics=t:1", "offsets.topic.num.partitions=3", "log.level=debug",
            "group.initial.rebalance.delay.ms=0", "metrics.listener=127.0.0.1:0")
        for user in ("alice", "carol"):
            for mech in MECHS[1:]:
                got = alter_scram(p, user, mech, user + "-scram")
                assert got == [(user, 0, None)], got

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("kcoord exited with status %s:\n%s" % (rc, cls.k.output()))

    # ---- helpers ----

    def run_client(self, python, port, protocol, mech, group, user="alice", password=None,
                   hold_s=0):
        if password is None:
            password = "alice-secret" if mech == "PLAIN" else "alice-scram"
        a = {"bootstrap": "127.0.0.1:%d" % port, "group": group, "protocol": protocol,
             "mechanism": mech, "user": user, "password": password, "hold_s": hold_s}
        if protocol == "SASL_SSL":
            a["ca"] = self.ca[1]
        p = subprocess.run([python, CLIENT, json.dumps(a)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError("%s %s failed (%d): %s\n%s\nkcoord:\n%s" % (
                python, group, p.returncode, p.stderr[-3000:], p.stdout, self.k.output()[-6000:]))
        return json.loads(p.stdout.strip().splitlines()[-1])

    def committed(self, group):
        """The offset of t[0] committed by `group`, read over the PLAINTEXT listener."""
        r = wire.ask(self.ports[0], "check", "OffsetFetch", 5, group_id=group,
                     topics=[{"name": "t", "partition_indexes": [0]}])
        return r.topics[0].partitions[0].committed_offset

    def handshake(self, c, mech, version=1):
        return c.ask("SaslHandshake", version, mechanism=mech)

    def authenticate(self, c, token, version=2):
        return c.ask("SaslAuthenticate", version, auth_bytes=token)

    def plain_login(self, c, user, password, version=2):
        r = self.handshake(c, "PLAIN")
        self.assertEqual(r.error_code, 0)
        return self.authenticate(c, b"\0" + user.encode() + b"\0" + password.encode(), version)

    def scram_login(self, c, mech, user, password):
        self.assertEqual(self.handshake(c, mech).error_code, 0)
        sc = ScramClient(mech, user, password)
        r = self.authenticate(c, sc.first())
        self.assertEqual(r.error_code, 0, r)
        t0 = time.monotonic()
        r = self.authenticate(c, sc.final(r.auth_bytes))
        return r, time.monotonic() - t0, sc

    def assert_failed_after_delay(self, c, r, elapsed, message):
        self.assertEqual(r.error_code, 58)  # SASL_AUTHENTICATION_FAILED
        self.assertEqual(r.error_message, message)
        self.assertGreaterEqual(elapsed, DELAY_MS / 1000 * 0.9)
        self.assertTrue(closed(c), "the connection stays open after a failed authentication")

    # ---- real clients ----

    def test_clients(self):
        clients = [("debian", "/usr/bin/python3"), ("wheel", test_tls.venv_python())]
        for name, python in clients:
            for protocol, port in (("SASL_PLAINTEXT", self.ports[1]),
                                   ("SASL_SSL", self.ports[2])):
                for mech in MECHS:
                    group = "g-%s-%s-%s" % (name, protocol, mech)
                    with self.subTest(client=name, protocol=protocol, mechanism=mech):
                        r = self.run_client(python, port, protocol, mech, group)
                        if name == "debian":
                            self.assertTrue(r["librdkafka"].startswith("2.0."), r)
                        else:
                            self.assertTrue(r["version"].startswith("2.16"), r)
                        self.assertEqual(r["assigned"], ["t-0"])
                        self.assertEqual(r["committed"], 42)
                        self.assertEqual(self.committed(group), 42)
                        self.assertIsNotNone(self.k.find(
                            r"authenticated as User:alice with %s on listener %s" %
                            (mech, protocol)))

    def test_kcat_scram(self):
        p = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % self.ports[2], "-L", "-J",
                            "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + self.ca[1],
                            "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=carol",
                            "-X", "sasl.password=carol-scram", "-m", "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        md = json.loads(p.stdout)
        self.assertEqual([t["topic"] for t in md["topics"] if t["topic"] == "t"], ["t"])
        self.assertIsNotNone(self.k.find(r"authenticated as User:carol with SCRAM-SHA-512"))
        p = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % self.ports[2], "-L",
                            "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + self.ca[1],
                            "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=carol",
                            "-X", "sasl.password=wrong", "-m", "5"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(GENERIC % "SCRAM-SHA-512", p.stderr)

    def test_reauthentication_with_librdkafka(self):
        before = self.k.count("re-authenticated as User:alice with SCRAM-SHA-256 on listener REAUTH")
        r = self.run_client(test_tls.venv_python(), self.ports[3], "SASL_PLAINTEXT",
                            "SCRAM-SHA-256", "g-reauth", hold_s=8)
        self.assertEqual(r["assigned"], ["t-0"])
        self.assertGreater(r["held"], 5)
        self.assertEqual(r["errors"], [])
        self.assertEqual(self.committed("g-reauth"), r["committed"])
        after = self.k.count("re-authenticated as User:alice with SCRAM-SHA-256 on listener REAUTH")
        self.assertGreaterEqual(after - before, 2, self.k.output()[-4000:])
        self.assertEqual(self.k.count("its SASL session expired"), self.expired_closes())

    def expired_closes(self):
        return getattr(SaslTest, "_expired", 0)

    # ---- the wire: successes ----

    def test_wire_v0_raw_tokens_and_versions(self):
        with wire.Conn(self.ports[1], "raw") as c:
            # an ApiVersions answered with an error may be sent again (Kafka's authenticator)
            r = c.ask("ApiVersions", 3, client_software_name="bad name!",
                      client_software_version="1")
            self.assertEqual(r.error_code, 42)  # INVALID_REQUEST
            r = c.ask("ApiVersions", 3, client_software_name="t", client_software_version="1")
            self.assertEqual(r.error_code, 0)
            keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
            self.assertEqual(keys[SASL_HANDSHAKE], (0, 1))
            self.assertEqual(keys[SASL_AUTHENTICATE], (0, 2))
            self.assertEqual(keys[50], (0, 0))
            self.assertEqual(keys[51], (0, 0))
            r = self.handshake(c, "SCRAM-SHA-512", version=0)
            self.assertEqual((r.error_code, r.mechanisms), (0, list(MECHS)))
            sc = ScramClient("SCRAM-SHA-512", "carol", "carol-scram")
            c.s.sendall(struct.pack(">i", len(sc.first())) + sc.first())
            n = struct.unpack(">i", c.exact(4))[0]
            final = sc.final(c.exact(n))
            c.s.sendall(struct.pack(">i", len(final)) + final)
            n = struct.unpack(">i", c.exact(4))[0]
            self.assertEqual(c.exact(n), b"v=" + base64.b64encode(sc.server_sig))
            r = c.ask("Metadata", 4, topics=None, allow_auto_topic_creation=False)
            self.assertIn("t", [t.name for t in r.topics])

    def test_wire_v0_raw_token_failure_closes_after_delay(self):
        # a failed v0 raw-token exchange has no answer to carry the error: Kafka delays the
        # close by connection.failed.authentication.delay.ms as it delays every failure
        for token in (b"\0alice\0wrong", b"\0nobody\0x"):
            with wire.Conn(self.ports[1], "raw-bad") as c:
                r = self.handshake(c, "PLAIN", version=0)
                self.assertEqual(r.error_code, 0)
                t0 = time.monotonic()
                c.s.sendall(struct.pack(">i", len(token)) + token)
                self.assertTrue(closed(c))
                self.assertGreaterEqual(time.monotonic() - t0, DELAY_MS / 1000 * 0.9)
        with wire.Conn(self.ports[1], "raw-ok") as c:  # and others are still served
            self.assertEqual(self.handshake(c, "PLAIN", version=0).error_code, 0)
            token = b"\0alice\0alice-secret"
            c.s.sendall(struct.pack(">i", len(token)) + token)
            self.assertEqual(struct.unpack(">i", c.exact(4))[0], 0)
            r = c.ask("Metadata", 4, topics=None, allow_auto_topic_creation=False)
            self.assertIn("t", [t.name for t in r.topics])

    def sasl_counts(self, family="kcoord_sasl_authentications_total"):
        """{(mechanism, result): count} of one SASL counter family, from /metrics."""
        _, _, body = self.k.get("/metrics")
        return {(m, r): float(v) for m, r, v in re.findall(
            r'^%s\{mechanism="([^"]+)",result="([^"]+)"\} (\S+)$' % family, body, re.M)}

    def test_metrics_and_failure_log_lines(self):
        before = self.sasl_counts()
        re_before = self.sasl_counts("kcoord_sasl_reauthentications_total")
        with wire.Conn(self.ports[1], "m-ok") as c:
            self.assertEqual(self.plain_login(c, "alice", "alice-secret").error_code, 0)
        with wire.Conn(self.ports[1], "m-bad") as c:
            r = self.plain_login(c, "alice", "m-wrong-password")
            self.assertEqual(r.error_code, 58)
            self.assertTrue(closed(c))
        with wire.Conn(self.ports[1], "m-scram") as c:
            r, _, _ = self.scram_login(c, "SCRAM-SHA-256", "carol", "m-wrong-scram")
            self.assertEqual(r.error_code, 58)
            self.assertTrue(closed(c))
        with wire.Conn(self.ports[1], "m-gssapi") as c:
            self.assertEqual(self.handshake(c, "GSSAPI").error_code, 33)
            self.assertTrue(closed(c))
        after = self.sasl_counts()
        delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
        self.assertEqual(delta, {("PLAIN", "ok"): 1, ("PLAIN", "failed"): 1,
                                 ("SCRAM-SHA-256", "failed"): 1, ("other", "failed"): 1})
        self.assertEqual(self.sasl_counts("kcoord_sasl_reauthentications_total"), re_before)
        # a line per failure (rate-limited per call site, so a burst shows its first one)
        # naming the peer and the mechanism, never the password
        self.assertIsNotNone(self.k.find(
            r"127\.0\.0\.1:\d+: SASL (PLAIN|SCRAM-SHA-256) authentication failed on listener "
            r"SASL_PLAINTEXT"))
        self.assertIsNotNone(self.k.find(r"127\.0\.0\.1:\d+: SASL mechanism 'GSSAPI'"))
        self.assertNotIn("m-wrong-password", self.k.output())
        self.assertNotIn("m-wrong-scram", self.k.output())
        # a re-authentication is counted apart
        with wire.Conn(self.ports[3], "m-reauth") as c:
            self.assertEqual(self.plain_login(c, "alice", "alice-secret").error_code, 0)
            self.assertEqual(self.plain_login(c, "alice", "alice-secret").error_code, 0)
        got = self.sasl_counts("kcoord_sasl_reauthentications_total")
        self.assertEqual(got[("PLAIN", "ok")] - re_before[("PLAIN", "ok")], 1)

    def test_wire_session_lifetime_and_reauth(self):
        with wire.Conn(self.ports[3], "reauth") as c:
            r = self.plain_login(c, "alice", "alice-secret")
            self.assertEqual((r.error_code, r.session_lifetime_ms), (0, 3000))
            r = self.plain_login(c, "alice", "alice-secret", version=1)  # re-authentication
            self.assertEqual((r.error_code, r.session_lifetime_ms), (0, 3000))
            r = c.ask("Metadata", 4, topics=None, allow_auto_topic_creation=False)
            self.assertIn("t", [t.name for t in r.topics])
        with wire.Conn(self.ports[1], "noreauth") as c:  # connections.max.reauth.ms=0
            r = self.plain_login(c, "alice", "alice-secret")
            self.assertEqual((r.error_code, r.session_lifetime_ms), (0, 0))
            r = self.handshake(c, "PLAIN")  # no session to renew: KafkaApis' answer
            self.assertEqual((r.error_code, r.mechanisms), (34, []))
            r = self.authenticate(c, b"\0alice\0alice-secret")
            self.assertEqual(r.error_code, 34)
            self.assertEqual(r.error_message,
                             "SaslAuthenticate request received after successful authentication")
            r = c.ask("Metadata", 4, topics=None, allow_auto_topic_creation=False)
            self.assertIn("t", [t.name for t in r.topics])

    def test_sasl_apis_on_plain_listener(self):
        with wire.Conn(self.ports[0], "plain") as c:
            r = self.handshake(c, "PLAIN")
            self.assertEqual((r.error_code, r.mechanisms), (34, []))
            r = self.authenticate(c, b"\0alice\0alice-secret")
            self.assertEqual(r.error_code, 34)

    # ---- SCRAM credentials ----

    def test_describe_scram(self):
        r = wire.ask(self.ports[0], "admin", "DescribeUserScramCredentials", 0,
                     users=[{"name": "carol"}, {"name": "nobody"}])
        self.assertEqual(r.error_code, 0)
        got = {x.user: (x.error_code, x.error_message,
                        sorted((i.mechanism, i.iterations) for i in x.credential_infos))
               for x in r.results}
        self.assertEqual(got["carol"], (0, None, [(1, 8192), (2, 8192)]))
        self.assertEqual(got["nobody"], (
            91, "Attempt to describe a user credential that does not exist: nobody", []))
        r = alter_scram(self.ports[0], "dave", "SCRAM-SHA-256", "x", iterations=1000)
        self.assertEqual(r, [("dave", 93, "Too few iterations")])  # UNACCEPTABLE_CREDENTIAL
        r = wire.ask(self.ports[0], "admin", "DescribeUserScramCredentials", 0, users=None)
        self.assertNotIn("dave", [x.user for x in r.results])

    def test_scram_survives_restart(self):
        port = kcoord.free_port()
        d = tempfile.mkdtemp(prefix="kc-sasl-restart-")
        sets = ["listeners=PLAINTEXT://127.0.0.1:%d" % port, "offsets.topic.num.partitions=1",
                "metrics.listener="]
        try:
            k = kcoord.Kcoord(d, *sets)
            try:
                self.assertEqual(alter_scram(port, "erin", "SCRAM-SHA-512", "erin-scram"),
                                 [("erin", 0, None)])
            finally:
                self.assertEqual(k.stop(), 0)
            sets[0] = "listeners=SASL_PLAINTEXT://127.0.0.1:%d" % port
            k = kcoord.Kcoord(d, *sets, "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256")
            try:
                self.assertIsNotNone(k.find(r"loaded \d+ ACL and SCRAM records"))
                with wire.Conn(port, "after") as c:
                    r, _, sc = self.scram_login(c, "SCRAM-SHA-512", "erin", "erin-scram")
                    self.assertEqual(r.error_code, 0, r)
                    self.assertEqual(r.auth_bytes, b"v=" + base64.b64encode(sc.server_sig))
            finally:
                self.assertEqual(k.stop(), 0)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    @unittest.skipUnless(shutil.which(kafka_ref.java_bin()) is not None and
                         kafka_ref.cache_complete(),
                         "Kafka's kafka-configs needs java and the reference jars "
                         "(scripts/kafka-ref fetch)")
    def test_kafka_configs(self):
        def configs(*args):
            p = subprocess.run(
                [os.path.join(ROOT, "scripts", "kafka-ref"), "run-class",
                 "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                 "127.0.0.1:%d" % self.ports[0]] + list(args),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout)
            return p.stdout
        out = configs("--alter", "--add-config",
                      "SCRAM-SHA-256=[iterations=8192,password=frank-scram]",
                      "--entity-type", "users", "--entity-name", "frank")
        self.assertIn("Completed updating config for user frank.", out)
        out = configs("--describe", "--entity-type", "users")
        self.assertIn("SCRAM credential configs for user-principal 'frank' are "
                      "SCRAM-SHA-256=iterations=8192", out)
        self.assertIn("SCRAM credential configs for user-principal 'carol' are "
                      "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=8192", out)
        with wire.Conn(self.ports[1], "frank") as c:
            r, _, _ = self.scram_login(c, "SCRAM-SHA-256", "frank", "frank-scram")
            self.assertEqual(r.error_code, 0, r)
        out = configs("--alter", "--delete-config", "SCRAM-SHA-256", "--entity-type", "users",
                      "--entity-name", "frank")
        with wire.Conn(self.ports[1], "frank") as c:
            r, _, _ = self.scram_login(c, "SCRAM-SHA-256", "frank", "frank-scram")
            self.assertEqual(r.error_code, 58)

    def test_describe_client_quotas(self):
        def ask(*components):
            return wire.ask(self.ports[0], "q", "DescribeClientQuotas", 1, strict=False,
                            components=[{"entity_type": t, "match_type": 2, "match": None}
                                        for t in components])
        r = ask("user")
        self.assertEqual((r.error_code, r.entries), (0, []))
        for comps, err, msg in [
                (("user", "user"), 42, "Duplicate user filter component entity type"),
                (("",), 42, "Unexpected empty filter component entity type"),
                (("group",), 35, "Custom entity type group not supported"),
                (("ip", "user"), 42, "Invalid entity filter component combination, IP filter "
                 "component should not be used with User or ClientId filter component.")]:
            r = ask(*comps)
            self.assertEqual((r.error_code, r.error_message, r.entries), (err, msg, None))

    # ---- refusals ----

    def assert_nothing_changed(self, group):
        self.assertEqual(self.committed(group), -1)
        r = wire.ask(self.ports[0], "check", "Metadata", 4, topics=[{"name": "refused-topic"}],
                     allow_auto_topic_creation=False)
        self.assertEqual(r.topics[0].error_code, 3)  # UNKNOWN_TOPIC_OR_PARTITION

    def commit_body(self, group):
        return dict(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                    retention_time_ms=-1,
                    topics=[{"name": "t", "partitions": [{"partition_index": 0,
                                                          "committed_offset": 7,
                                                          "committed_metadata": ""}]}])

    def test_refused_wrong_password_and_unknown_user(self):
        for port in self.ports[1:3]:
            if port == self.ports[2]:
                continue  # the SASL_SSL path is the same after TLS; clients cover it
            cases = [("PLAIN", "alice", "nope", PLAIN_BAD), ("PLAIN", "zed", "x", PLAIN_BAD)]
            for mech in MECHS[1:]:
                cases += [(mech, "alice", "nope", GENERIC % mech),
                          (mech, "zed", "x", GENERIC % mech)]
            for mech, user, password, message in cases:
                with self.subTest(mechanism=mech, user=user):
                    with wire.Conn(port, "bad") as c:
                        if mech == "PLAIN":
                            t0 = time.monotonic()
                            r = self.plain_login(c, user, password)
                            elapsed = time.monotonic() - t0
                        else:
                            r, elapsed, _ = self.scram_login(c, mech, user, password)
                        self.assert_failed_after_delay(c, r, elapsed, message)
        # librdkafka reports Kafka's message
        a = {"bootstrap": "127.0.0.1:%d" % self.ports[1], "group": "g-bad", "protocol":
             "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "user": "alice", "password": "no"}
        p = subprocess.run([test_tls.venv_python(), CLIENT, json.dumps(a)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(GENERIC % "SCRAM-SHA-256", p.stderr)
        self.assert_nothing_changed("g-bad")

    def test_refused_unknown_mechanism(self):
        for mech in ("GSSAPI", "OAUTHBEARER", "plain"):
            with wire.Conn(self.ports[1], "mech") as c:
                t0 = time.monotonic()
                r = self.handshake(c, mech)
                self.assertGreaterEqual(time.monotonic() - t0, DELAY_MS / 1000 * 0.9)
                self.assertEqual((r.error_code, r.mechanisms), (33, list(MECHS)))
                self.assertTrue(closed(c))
        with wire.Conn(self.ports[3], "mech") as c:  # PLAIN then SCRAM on re-authentication
            self.assertEqual(self.plain_login(c, "alice", "alice-secret").error_code, 0)
            self.assertEqual(self.handshake(c, "SCRAM-SHA-256").error_code, 0)
            c.send(SASL_AUTHENTICATE, 2, wire.compact_bytes(b"n,,n=alice,r=abc") + b"\0", True)
            self.assertTrue(closed(c))

    def test_refused_plaintext_client_and_first_requests(self):
        group = "g-first"
        # a plaintext Kafka client on a SASL port: its first request is neither ApiVersions
        # nor SaslHandshake, and is never answered
        for first in ("OffsetCommit", "Metadata"):
            with wire.Conn(self.ports[1], "plain-client") as c:
                if first == "OffsetCommit":
                    c.send(8, 8, gen_wire.encode_offset_commit_request(8, self.commit_body(group)))
                else:
                    c.send(METADATA, 4, gen_wire.encode_metadata_request(
                        4, {"topics": [{"name": "refused-topic"}],
                                        "allow_auto_topic_creation": True}))
                self.assertTrue(closed(c))
        # ApiVersions, then anything but SaslHandshake (a second ApiVersions too)
        for then in (METADATA, API_VERSIONS):
            with wire.Conn(self.ports[1], "after-versions") as c:
                c.ask("ApiVersions", 3, client_software_name="t", client_software_version="1")
                if then == METADATA:
                    c.send(METADATA, 4, gen_wire.encode_metadata_request(
                        4, {"topics": [{"name": "refused-topic"}],
                                        "allow_auto_topic_creation": True}))
                else:
                    c.send(API_VERSIONS, 0, b"")
                self.assertTrue(closed(c))
        # after the handshake, anything but SaslAuthenticate: that API's answer with
        # ILLEGAL_SASL_STATE, after the failure delay, then the close
        with wire.Conn(self.ports[1], "after-handshake") as c:
            self.assertEqual(self.handshake(c, "PLAIN").error_code, 0)
            t0 = time.monotonic()
            r = c.ask("OffsetCommit", 8, self.commit_body(group))
            self.assertGreaterEqual(time.monotonic() - t0, DELAY_MS / 1000 * 0.9)
            self.assertEqual(r.topics[0].partitions[0].error_code, 34)
            self.assertTrue(closed(c))
        # garbage, and a frame above sasl.server.max.receive.size
        with socket.create_connection(("127.0.0.1", self.ports[1])) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(5)
            self.assertEqual(s.recv(1), b"")
        with socket.create_connection(("127.0.0.1", self.ports[1])) as s:
            s.sendall(struct.pack(">i", 524289) + b"\0" * 1024)
            s.settimeout(5)
            try:
                self.assertEqual(s.recv(1), b"")
            except ConnectionResetError:
                pass
        self.assert_nothing_changed(group)

    def test_refused_expired_session_and_other_principal(self):
        with wire.Conn(self.ports[3], "expire") as c:
            self.assertEqual(self.plain_login(c, "alice", "alice-secret").error_code, 0)
            time.sleep(3.3)
            c.send(8, 8, gen_wire.encode_offset_commit_request(8, self.commit_body("g-exp")))
            self.assertTrue(closed(c))
            SaslTest._expired = self.expired_closes() + 1
        with wire.Conn(self.ports[3], "other") as c:
            self.assertEqual(self.plain_login(c, "alice", "alice-secret").error_code, 0)
            t0 = time.monotonic()
            r = self.plain_login(c, "bob", "bob-secret")
            self.assert_failed_after_delay(
                c, r, time.monotonic() - t0,
                "Cannot change principals during re-authentication from User.alice: User.bob")
        self.assert_nothing_changed("g-exp")


class StartupTest(unittest.TestCase):
    def refused(self, *sets):
        d = tempfile.mkdtemp(prefix="kc-sasl-start-")
        try:
            p = subprocess.run(kcoord.args(os.path.join(d, "data"), *sets),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=kcoord.quiet_env(), timeout=30)
            return p.returncode, p.stderr
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_settings_refused(self):
        lst = "listeners=SASL_PLAINTEXT://127.0.0.1:0"
        cases = [
            ((lst,), "listener SASL_PLAINTEXT: sasl.enabled.mechanisms is empty"),
            ((lst, "sasl.enabled.mechanisms=GSSAPI"),
             'sasl.enabled.mechanisms: "GSSAPI" names "GSSAPI", which is not a valid value'),
            ((lst, "sasl.enabled.mechanisms=PLAIN"),
             "listener SASL_PLAINTEXT: PLAIN is enabled but no plain.sasl.jaas.config gives its "
             "users"),
            ((lst, "sasl.enabled.mechanisms=PLAIN",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config=x.Y required user_a=\"b\";"),
             '"[hidden]" is not a JAAS configuration: the login module must be '
             "org.apache.kafka.common.security.plain.PlainLoginModule, not x.Y"),
            ((lst, "sasl.enabled.mechanisms=PLAIN", "plain.sasl.jaas.config=" + JAAS[:-1]),
             '"[hidden]" is not a JAAS configuration: expected an option name or \';\''),
            ((lst, "sasl.server.max.receive.size=0"), "sasl.server.max.receive.size"),
        ]
        for sets, want in cases:
            with self.subTest(sets=sets):
                rc, err = self.refused(*sets)
                self.assertEqual(rc, 2, err)
                self.assertIn(want, err)
                self.assertNotIn("secret", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
