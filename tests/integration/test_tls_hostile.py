#!/usr/bin/python3
"""test_tls_hostile: the hostile-client cases of test_malformed, test_net_bounds and
test_hostile_group, against TLS listeners.

Keys and certificates are made at test time with openssl (test_tls's helpers). One kcoord
serves an SSL listener and a SASL_SSL listener (PLAIN) with socket.request.max.bytes=4096 and
ssl.handshake.timeout.ms=1500. Each case opens a hostile connection; the daemon must close
that connection alone (where the case is one that closes) while a healthy TLS client, opened
before the case, keeps being answered on the same listener, and a new one is served after it:

- after the TLS handshake: every bad frame of test_malformed (sizes 0x7fffffff, limit + 1,
  negative, 0, 4; a header cut short; a client id past the end; an unknown API key), random
  garbage, and raw bytes that are not TLS records at all under the session;
- a slow writer (a request sent a byte at a time, answered once it is whole) and a slow reader
  (requests sent without reading a single answer until the daemon stops reading them, its
  resident memory grown by less than RSS_BUDGET_MB: the encrypted answers are bounded too);
- half-open connections: a TLS client that half-closes its socket after the handshake, a
  client that stops inside its ClientHello (closed by ssl.handshake.timeout.ms);
- a flood of 60 TCP connections that never start a handshake, and 20 finished TLS handshakes
  that send nothing, with the healthy client answered meanwhile;
- on the SASL_SSL listener: garbage before authentication, a frame above
  sasl.server.max.receive.size, a Kafka request other than ApiVersions or SaslHandshake, and a
  plaintext client; a healthy SASL client authenticates and is served throughout.
The daemon must exit 0 on SIGTERM at the end.
"""
import os
import shutil
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests.support import gen_wire, kcoord, wire  # noqa: E402
import test_tls  # noqa: E402

MAX_REQUEST = 4096
HANDSHAKE_MS = 1500
RSS_BUDGET_MB = 64  # how much a client that never reads may make the daemon's RSS grow
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_alice="alice-secret";')


def frame_of(body):
    return struct.pack(">i", len(body)) + body


def header(key, version, corr=1, client_id=b"h"):
    return struct.pack(">hhih", key, version, corr, len(client_id)) + client_id


def xorshift_bytes(n, state=0x2545F491):
    out = bytearray()
    for _ in range(n):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        out.append(state & 0xFF)
    return bytes(out)


# The bad frames of test_malformed.c, as bytes sent inside the TLS session.
BAD_FRAMES = [
    ("size 0x7fffffff", struct.pack(">i", 0x7FFFFFFF) + b"\0" * 16),
    ("size socket.request.max.bytes + 1", struct.pack(">i", MAX_REQUEST + 1) + b"\0" * 64),
    ("size 0xffffffff", b"\xff\xff\xff\xff"),
    ("size 0", struct.pack(">i", 0)),
    ("size 4 with 4 bytes", struct.pack(">i", 4) + b"\0\x12\0\0"),
    ("header cut inside client_id length", frame_of(struct.pack(">hhi", 18, 0, 1) + b"\0")),
    ("client_id past the end", frame_of(struct.pack(">hhih", 18, 0, 1, 200) + b"ab")),
    ("unknown API key 9999", frame_of(header(9999, 0))),
    ("Metadata v12 with a random body", frame_of(header(3, 12) + b"\0" + xorshift_bytes(64))),
    ("random garbage", xorshift_bytes(3000, 0x1234567)),
]


class TlsHostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kc-tls-hostile-")
        d = cls.dir
        cls.ca = test_tls.make_ca(d, "ca", "Test CA")
        server = test_tls.make_cert(d, "server", "/CN=localhost", cls.ca,
                                    "DNS:localhost,IP:127.0.0.1")
        cls.ctx = test_tls.tls_context(cls.ca[1])
        cls.ssl_port, cls.sasl_port = kcoord.free_ports(2)
        cls.k = kcoord.Kcoord(
            os.path.join(d, "data"),
            "listeners=SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d" % (cls.ssl_port,
                                                                     cls.sasl_port),
            "listener.security.protocol.map=SSL:SSL,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config=" + JAAS,
            "connection.failed.authentication.delay.ms=100",
            "ssl.keystore.location=" + server[2],
            "ssl.handshake.timeout.ms=%d" % HANDSHAKE_MS,
            "socket.request.max.bytes=%d" % MAX_REQUEST,
            "topics=t:1", "offsets.topic.num.partitions=3",
            *kcoord.no_metrics_listener(),
            # a sanitizer build keeps freed memory in quarantine (256 MB by default): keep it
            # small so that the slow reader's memory figure means the same in both builds
            env={"ASAN_OPTIONS": ":".join(x for x in (os.environ.get("ASAN_OPTIONS", ""),
                                                      "quarantine_size_mb=8") if x)})

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("kcoord exited with status %s:\n%s" % (rc, cls.k.output()))

    def setUp(self):
        self.healthy = self.tls()
        self.assertEqual(test_tls.api_versions(self.healthy), 0)

    def tearDown(self):
        self.healthy.s.close()

    # ---- helpers ----

    def tls(self, port=None):
        return test_tls.tls_conn(port or self.ssl_port, self.ctx)

    def assert_served(self, sasl=False):
        """The healthy connection is answered, and so is a new one (on the SASL_SSL
        listener, after authenticating)."""
        self.assertEqual(test_tls.api_versions(self.healthy), 0, self.k.output()[-3000:])
        if not sasl:
            c = self.tls()
            try:
                r = c.ask("Metadata", 4, topics=None, allow_auto_topic_creation=False)
                self.assertIn("t", [t.name for t in r.topics])
            finally:
                c.s.close()
            return
        c = self.tls(self.sasl_port)
        try:
            self.assertEqual(c.ask("SaslHandshake", 1, mechanism="PLAIN").error_code, 0)
            r = c.ask("SaslAuthenticate", 2, auth_bytes=b"\0alice\0alice-secret")
            self.assertEqual(r.error_code, 0)
            r = c.ask("Metadata", 4, topics=None, allow_auto_topic_creation=False)
            self.assertIn("t", [t.name for t in r.topics])
        finally:
            c.s.close()

    def rss_mb(self):
        with open("/proc/%d/status" % self.k.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        raise AssertionError("no VmRSS for kcoord")

    def assert_closed(self, sock, what):
        self.assertTrue(test_tls.closed(sock), "%s: the connection stays open" % what)

    # ---- after the handshake ----

    def test_bad_frames_after_handshake(self):
        for name, data in BAD_FRAMES:
            with self.subTest(case=name):
                c = self.tls()
                try:
                    c.s.sendall(data)
                    self.assert_closed(c.s, name)
                finally:
                    c.s.close()
                self.assert_served()

    def test_raw_bytes_under_the_session(self):
        c = self.tls()
        try:
            self.assertEqual(test_tls.api_versions(c), 0)
            os.write(c.s.fileno(), xorshift_bytes(512, 0xBADF00D))  # not a TLS record
            self.assert_closed(c.s, "raw bytes under TLS")
        finally:
            c.s.close()
        self.assert_served()

    def test_slow_writer(self):
        c = self.tls()
        try:
            body = gen_wire.encode_api_versions_request(3, None, client_software_name="slow",
                                                        client_software_version="1")
            data = wire.frame(18, 3, 1, "slow", body, True)
            for i, b in enumerate(data):
                c.s.sendall(bytes([b]))
                if i % 8 == 0:
                    self.assertEqual(test_tls.api_versions(self.healthy), 0)
                time.sleep(0.01)
            corr, _ = c.recv(False)
            self.assertEqual(corr, 1)
        finally:
            c.s.close()
        self.assert_served()

    def test_slow_reader(self):
        c = self.tls()
        body = wire.frame(3, 4, 1, "reader", b"\xff\xff\xff\xff\0", False)
        sent, stop, blocked = [0], threading.Event(), threading.Event()

        def flood():
            c.s.settimeout(2)
            try:
                while not stop.is_set() and sent[0] < 200000:
                    c.s.sendall(body)
                    sent[0] += 1
            except socket.timeout:
                blocked.set()  # the daemon stopped reading us: that is the point
            except (OSError, ssl.SSLError):
                pass

        rss0 = self.rss_mb()
        t = threading.Thread(target=flood)
        t.start()
        try:
            t.join(60)
            self.assertFalse(t.is_alive(), "the flood did not end")
            self.assertTrue(blocked.is_set(), "the daemon read every request of a non-reader "
                            "(%d sent)" % sent[0])
            self.assertGreater(sent[0], 10)
            grew = self.rss_mb() - rss0
            print("slow reader: %d requests sent before the daemon stopped reading, "
                  "kcoord RSS grew %.1f MB" % (sent[0], grew))
            self.assertLess(grew, RSS_BUDGET_MB)
            self.assert_served()
        finally:
            stop.set()
            c.s.close()
            t.join(10)
        self.assert_served()

    def test_half_closed_after_handshake(self):
        c = self.tls()
        try:
            self.assertEqual(test_tls.api_versions(c), 0)
            c.s.shutdown(socket.SHUT_WR)  # TCP half-close, no close_notify
            self.assert_closed(c.s, "half-closed")
        finally:
            c.s.close()
        self.assert_served()

    def test_stops_inside_client_hello(self):
        s = socket.create_connection(("127.0.0.1", self.ssl_port), timeout=10)
        try:
            # a TLS handshake record header announcing 512 bytes, and 5 of them
            s.sendall(b"\x16\x03\x01\x02\x00" + b"\x01\x00\x01\xfc\x03")
            self.assert_served()
            t0 = time.monotonic()
            self.assert_closed(s, "a ClientHello cut short")
            self.assertLess(time.monotonic() - t0, HANDSHAKE_MS / 1000 + 10)
        finally:
            s.close()
        self.assert_served()

    def test_connection_flood(self):
        raw, done = [], []
        try:
            for _ in range(60):
                raw.append(socket.create_connection(("127.0.0.1", self.ssl_port), timeout=10))
            for _ in range(20):
                done.append(self.tls())
            self.assert_served()
            for s in raw:  # never started a handshake: ssl.handshake.timeout.ms
                self.assert_closed(s, "a connection that never starts its handshake")
            for c in done:  # finished handshakes that send nothing are served still
                self.assertEqual(test_tls.api_versions(c), 0)
        finally:
            for s in raw:
                s.close()
            for c in done:
                c.s.close()
        self.assert_served()

    # ---- SASL_SSL, before authentication ----

    def test_sasl_ssl_before_authentication(self):
        cases = [("garbage", xorshift_bytes(2000, 0xC0FFEE)),
                 ("above sasl.server.max.receive.size",
                  struct.pack(">i", 524289) + b"\0" * 1024),
                 ("OffsetFetch before authentication",
                  wire.frame(9, 1, 1, "h", gen_wire.encode_offset_fetch_request(
                      1, None, group_id="g", topics=[{"name": "t", "partition_indexes": [0]}]))),
                 ("unknown API key", frame_of(header(9999, 0)))]
        for name, data in cases:
            with self.subTest(case=name):
                c = self.tls(self.sasl_port)
                try:
                    c.s.sendall(data)
                    self.assert_closed(c.s, name)
                finally:
                    c.s.close()
                self.assert_served(sasl=True)
        with self.subTest(case="a plaintext client"):
            with wire.Conn(self.sasl_port, "plain") as c:
                c.send(18, 0, b"")
                self.assert_closed(c.s, "a plaintext client on SASL_SSL")
            self.assert_served(sasl=True)


if __name__ == "__main__":
    unittest.main()
