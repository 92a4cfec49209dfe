"""security_bench: what security costs, kcoord and Kafka side by side (the section
SECURITY_HEADING of docs/BENCHMARKS.md; `tests/bench/bench.py --only-security` runs it).

Each server is set up as the security cells of tests/compat/secure.py set it up (the same
listeners and settings, certificates made by openssl at run time): PLAINTEXT, SASL_SSL (SCRAM
and PLAIN) and SSL with ssl.client.auth=required, ACLs on (StandardAuthorizer); the SCRAM user
alice (kcoord: kafka-configs; Kafka: kafka-storage format --add-scram, through kafka-ref start
--secure --scram) has READ on the groups and topics prefixed "sec-" (kafka-acls). Then, per
server and listener (PLAINTEXT as User:ANONYMOUS, a super user; SASL_SSL as alice with
SCRAM-SHA-512, so every request is authorized against her ACLs):

- commit throughput: C client processes (confluent-kafka, the wheel's librdkafka), each its own
  group with a manual assignment, send N asynchronous OffsetCommits at once; commits per second
  of all together, the median of R rounds;
- join time: J consumers one after the other, each a new process-less Consumer in a new group
  subscribing to a 6-partition topic: from its creation (so connecting, TLS, SASL and
  FindCoordinator included) to its assignment callback; median and the slowest;
- handshakes per second: H connections one after the other from one Python thread, each
  opened, used for one request and closed: TLS (mTLS, the client's certificate, to the SSL
  listener; then ApiVersions) and TLS+SCRAM (to the SASL_SSL listener: SaslHandshake v1,
  SaslAuthenticate v1 with SCRAM-SHA-512 (RFC 5802 client; its salted password is computed
  once and reused, as a client may), then ApiVersions); plain TCP for scale.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
from tests.support import kcoord as kcoord_support  # noqa: E402
import secure  # noqa: E402

KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-ref")
SECURITY_HEADING = "## Security: SASL_SSL against plaintext, and handshakes per second"
SECURITY_TOP_LINE = ("- Security (its own section, *%s*): `tests/bench/bench.py --only-security` "
                     "runs just it and replaces just that section, which says when and at which "
                     "commit it ran." % SECURITY_HEADING[3:])
PLANS = {"full": {"clients": 4, "commits": 5000, "rounds": 5, "joins": 20, "handshakes": 500},
         "quick": {"clients": 2, "commits": 300, "rounds": 1, "joins": 3, "handshakes": 40}}
USER, PASSWORD = secure.SCRAM_USER
TOOLS_ENV_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class SecurityBenchError(Exception):
    pass


CLIENT = r'''
import json, sys, time
from confluent_kafka import Consumer, KafkaException, TopicPartition
a = json.loads(sys.argv[1])
conf = {"bootstrap.servers": a["bootstrap"], "group.id": a["group"], "enable.auto.commit": False}
conf.update(a["props"])
done = [0, 0]
def on_commit(err, parts):
    done[0] += 1
    done[1] += err is not None
conf["on_commit"] = on_commit
c = Consumer(conf)
t0 = time.monotonic()
while True:  # connected, coordinator known and loaded (a fresh Kafka is still loading it)
    try:
        c.commit(offsets=[TopicPartition(a["topic"], 0, 0)], asynchronous=False)
        break
    except KafkaException:
        if time.monotonic() - t0 > 30:
            raise
        time.sleep(0.2)
done[0] = 0
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
for i in range(a["n"]):
    c.commit(offsets=[TopicPartition(a["topic"], 0, i + 1)], asynchronous=True)
    c.poll(0)
while done[0] < a["n"]:
    c.poll(0.05)
print(json.dumps({"s": time.monotonic() - t0, "errors": done[1]}), flush=True)
c.close()
'''

JOINER = r'''
import json, sys, time
from confluent_kafka import Consumer
a = json.loads(sys.argv[1])
out = []
for i in range(a["joins"]):
    got = []
    conf = {"bootstrap.servers": a["bootstrap"], "group.id": "%s-%d" % (a["group"], i),
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
    conf.update(a["props"])
    t0 = time.monotonic()
    c = Consumer(conf)
    c.subscribe([a["topic"]], on_assign=lambda _c, ps: got.append(time.monotonic()))
    while not got and time.monotonic() - t0 < 30:
        m = c.poll(0.01)
        if m is not None and m.error() and m.error().name() != "_PARTITION_EOF":
            print(json.dumps({"error": m.error().str()}), flush=True)
            sys.exit(1)
    if not got:
        print(json.dumps({"error": "no assignment within 30 s"}), flush=True)
        sys.exit(1)
    out.append(got[0] - t0)
    c.close()
print(json.dumps({"joins": out}), flush=True)
'''


# ---- a small Kafka client for the handshakes: SaslHandshake v1, SaslAuthenticate v1 ----


def frame(api_key, version, corr, body):
    head = struct.pack(">hhih", api_key, version, corr, 5) + b"bench"
    msg = head + body
    return struct.pack(">i", len(msg)) + msg


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SecurityBenchError("connection closed")
        buf += chunk
    return buf


def call(s, api_key, version, corr, body):
    s.sendall(frame(api_key, version, corr, body))
    n = struct.unpack(">i", recv_exact(s, 4))[0]
    resp = recv_exact(s, n)
    if struct.unpack(">i", resp[:4])[0] != corr:
        raise SecurityBenchError("correlation id mismatch")
    return resp[4:]


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def api_versions(s, corr):
    r = call(s, 18, 0, corr, b"")
    if struct.unpack(">h", r[:2])[0] != 0:
        raise SecurityBenchError("ApiVersions error")


SALTED = {}


def scram_sha512(s, user, password):
    """SaslHandshake v1 and SCRAM-SHA-512 over SaslAuthenticate v1 (RFC 5802, no channel
    binding); raises unless the server's signature verifies."""
    r = call(s, 17, 1, 1, kstr("SCRAM-SHA-512"))
    if struct.unpack(">h", r[:2])[0] != 0:
        raise SecurityBenchError("SaslHandshake error %d" % struct.unpack(">h", r[:2]))

    def auth(corr, token):
        r = call(s, 36, 1, corr, struct.pack(">i", len(token)) + token)
        err = struct.unpack(">h", r[:2])[0]
        mlen = struct.unpack(">h", r[2:4])[0]
        off = 4 + max(mlen, 0)
        blen = struct.unpack(">i", r[off:off + 4])[0]
        if err != 0:
            raise SecurityBenchError("SaslAuthenticate error %d" % err)
        return r[off + 4:off + 4 + blen]

    nonce = base64.b64encode(os.urandom(18)).decode()
    bare = "n=%s,r=%s" % (user, nonce)
    first = auth(2, ("n,," + bare).encode()).decode()
    f = dict(kv.split("=", 1) for kv in first.split(","))
    salt, it = base64.b64decode(f["s"]), int(f["i"])
    if not f["r"].startswith(nonce):
        raise SecurityBenchError("server nonce does not extend ours")
    key = (salt, it)
    if key not in SALTED:
        SALTED[key] = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, it)
    salted = SALTED[key]
    ckey = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    stored = hashlib.sha512(ckey).digest()
    final_bare = "c=biws,r=" + f["r"]
    msg = ",".join([bare, first, final_bare]).encode()
    sig = hmac.new(stored, msg, hashlib.sha512).digest()
    proof = bytes(a ^ b for a, b in zip(ckey, sig))
    last = auth(3, ("%s,p=%s" % (final_bare, base64.b64encode(proof).decode())).encode())
    skey = hmac.new(salted, b"Server Key", hashlib.sha512).digest()
    want = base64.b64encode(hmac.new(skey, msg, hashlib.sha512).digest()).decode()
    if last.decode() != "v=" + want:
        raise SecurityBenchError("the server's SCRAM signature does not verify")


def handshakes(addr, n, ctx=None, scram=False):
    host, port = addr.rsplit(":", 1)
    t0 = time.monotonic()
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if ctx is not None:
                s = ctx.wrap_socket(s, server_hostname="localhost")
            if scram:
                scram_sha512(s, USER, PASSWORD)
            api_versions(s, 9)
        finally:
            s.close()
    return n / (time.monotonic() - t0)


# ---- servers ---------------------------------------------------------------------------------


def tool(addr, conf, cls, *args):
    env = dict(os.environ, KAFKA_REF_JAVA_OPTS=TOOLS_ENV_OPTS)
    p = subprocess.run([KAFKA_REF, "run-class", cls, "--bootstrap-server", addr,
                        "--command-config", conf] + list(args), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if p.returncode != 0:
        raise SecurityBenchError("%s %s: exit %d:\n%s" % (cls.rsplit(".", 1)[-1],
                                                          " ".join(args), p.returncode,
                                                          p.stdout[-1500:]))


def grant(addr, m, scram_user):
    if scram_user:
        tool(addr, m.admin_conf, secure.CONFIG_CMD, "--alter", "--entity-type", "users",
             "--entity-name", USER, "--add-config", "SCRAM-SHA-512=[password=%s]" % PASSWORD)
    tool(addr, m.admin_conf, secure.ACL_CMD, "--add", "--allow-principal", "User:" + USER,
         "--operation", "Read", "--topic", secure.PREFIX, "--group", secure.PREFIX,
         "--resource-pattern-type", "prefixed")


class KcoordSide:
    name = "kcoord"

    def __init__(self, binary, workdir, m):
        self.binary, self.workdir, self.m, self.run = binary, workdir, m, None

    def start(self):
        port, sport, tport = kcoord_support.free_ports(3)
        sets = secure.Secured("kcoord", self.workdir, self.m).server_settings(port, sport, tport)
        try:
            self.run = kcoord_support.Kcoord(
                os.path.join(self.workdir, "kcoord-data"), *sets,
                "topics=sec-bench-commit:1,sec-bench-join:6", "log.flush.policy=never",
                "group.initial.rebalance.delay.ms=0",
                binary=self.binary, log_path=os.path.join(self.workdir, "kcoord.log"))
        except AssertionError as e:
            raise SecurityBenchError("the secured kcoord did not start: %s"
                                     % str(e).strip().splitlines()[-1][:300]) from None
        self.plain, self.sasl, self.ssl = ("127.0.0.1:%d" % p for p in (port, sport, tport))
        grant(self.sasl, self.m, True)

    def stop(self):
        if self.run is not None:
            self.run.stop()


class KafkaSide:
    name = "kafka"

    def __init__(self, workdir, m):
        self.m, self.started = m, False
        self.env = dict(os.environ, KAFKA_REF_STATE=os.path.join(workdir, "kafka-ref"))
        self.env.pop("KAFKA_REF_JAVA_OPTS", None)

    def start(self):
        args = [KAFKA_REF, "start", "--partitions", "50", "--initial-delay", "0", "--secure",
                "--keystore", self.m.server, "--truststore", self.m.ca, "--super-user",
                "User:admin", "--scram", "%s=%s" % (USER, PASSWORD)]
        for u, p in sorted(secure.PLAIN_USERS.items()):
            args += ["--plain", "%s=%s" % (u, p)]
        self.started = True
        p = subprocess.run(args, env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        got = dict(re.findall(r"^(KAFKA_REF_\w+)=(\S+)$", p.stdout, re.M))
        if p.returncode != 0 or "KAFKA_REF_SASL_SSL" not in got:
            raise SecurityBenchError("kafka-ref start --secure failed:\n" + p.stdout[-1500:])
        self.plain, self.sasl, self.ssl = (got["KAFKA_REF_BOOTSTRAP"], got["KAFKA_REF_SASL_SSL"],
                                           got["KAFKA_REF_SSL"])
        import kwire
        res = kwire.create_topics(self.plain, {"sec-bench-commit": 1, "sec-bench-join": 6})
        if any(e[0] != 0 for e in res.values()):
            raise SecurityBenchError("CreateTopics: %r" % res)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            md = kwire.metadata(self.plain, ["sec-bench-commit", "sec-bench-join"])
            if all(md.get(t, (1,))[0] == 0 and md[t][1] for t in md) and len(md) == 2:
                break
            time.sleep(0.2)
        grant(self.sasl, self.m, False)  # alice's SCRAM credentials were made at format time

    def stop(self):
        if self.started:
            subprocess.run([KAFKA_REF, "stop", "--timeout", "30"], env=self.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# ---- runs --------------------------------------------------------------------------------


def commit_rate(python, addr, props, plan, tag, topic="sec-bench-commit"):
    procs = []
    for i in range(plan["clients"]):
        a = {"bootstrap": addr, "group": "sec-bench-%s-%d" % (tag, i), "props": props,
             "n": plan["commits"], "topic": topic}
        procs.append(subprocess.Popen([python, "-c", CLIENT, json.dumps(a)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    try:
        for p in procs:
            if p.stdout.readline().strip() != "ready":
                raise SecurityBenchError("a commit client did not start (%s)" % tag)
        t0 = time.monotonic()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        errors = 0
        for p in procs:
            errors += json.loads(p.stdout.readline())["errors"]
            p.wait(60)
        elapsed = time.monotonic() - t0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if errors:
        raise SecurityBenchError("%d commits failed (%s)" % (errors, tag))
    return plan["clients"] * plan["commits"] / elapsed


def join_times(python, addr, props, plan, tag):
    a = {"bootstrap": addr, "group": "sec-bench-join-%s" % tag, "props": props,
         "joins": plan["joins"], "topic": "sec-bench-join"}
    p = subprocess.run([python, "-c", JOINER, json.dumps(a)], stdout=subprocess.PIPE,
                       text=True, timeout=60 + 35 * plan["joins"])
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if "error" in res:
        raise SecurityBenchError("join (%s): %s" % (tag, res["error"]))
    return res["joins"]


def measure(side, python, plan, m):
    sasl_props = {"security.protocol": "SASL_SSL", "ssl.ca.location": m.ca,
                  "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": USER,
                  "sasl.password": PASSWORD}
    out = {}
    for label, addr, props in (("PLAINTEXT", side.plain, {}),
                               ("SASL_SSL SCRAM-SHA-512", side.sasl, sasl_props)):
        tag = "%s-%s" % (side.name, label.split()[0].lower())
        rates = [commit_rate(python, addr, props, plan, "%s-%d" % (tag, r))
                 for r in range(plan["rounds"])]
        joins = join_times(python, addr, props, plan, tag)
        out[label] = {"commits_per_s": statistics.median(rates), "rounds": rates,
                      "join_median_s": statistics.median(joins), "join_max_s": max(joins)}
    mtls = ssl.create_default_context(cafile=m.ca)
    mtls.load_cert_chain(m.client)
    plain_ctx = ssl.create_default_context(cafile=m.ca)
    n = plan["handshakes"]
    out["handshakes"] = {"TCP (PLAINTEXT)": handshakes(side.plain, n),
                         "TLS (mTLS)": handshakes(side.ssl, n, mtls),
                         "TLS+SCRAM-SHA-512": handshakes(side.sasl, n, plain_ctx, True)}
    return out


def client_python():
    venv = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                        os.path.join(os.path.expanduser("~"), ".cache"), "kcoord", "venv",
                        "bin", "python")
    if os.access(venv, os.X_OK):
        return venv
    return subprocess.run([os.path.join(ROOT, "scripts", "compat-venv")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def run(binary, quick=False, use_kafka=True):
    """{server: results or {"error": text}}, and the plan."""
    plan = PLANS["quick" if quick else "full"]
    python = client_python()
    workdir = tempfile.mkdtemp(prefix="kcoord-secbench-")
    m = secure.Material(workdir)
    results = {}
    sides = [KcoordSide(binary, workdir, m)] + ([KafkaSide(workdir, m)] if use_kafka else [])
    for side in sides:
        try:
            side.start()
            results[side.name] = measure(side, python, plan, m)
        except (SecurityBenchError, subprocess.TimeoutExpired, OSError, ValueError) as e:
            results[side.name] = {"error": str(e).strip().splitlines()[0][:300]}
        finally:
            side.stop()
    return results, plan


def section(results, plan, when, commit, command, elapsed):
    L = [SECURITY_HEADING, ""]
    L.append("Run on %s at commit %s with `%s` (%.0f s). Each server is secured as the "
             "security cells of `make compat` secure it (`tests/compat/secure.py`: PLAINTEXT, "
             "SASL_SSL with SCRAM and PLAIN, SSL with required client certificates, ACLs "
             "on; Kafka through `scripts/kafka-ref start --secure`, its SCRAM user made at "
             "format time). Over SASL_SSL the clients are alice with SCRAM-SHA-512, so every "
             "request is authorized against her ACLs; over PLAINTEXT, User:ANONYMOUS, a super "
             "user. kcoord runs with `log.flush.policy=never` (the disk would hide the network's "
             "cost). Commits: %d client processes (librdkafka of the wheel) × %d asynchronous "
             "OffsetCommits, commits per second of all together, the median of %d round(s). "
             "Join: %d new consumers one after the other, from creating the consumer (connect, "
             "TLS, SASL, FindCoordinator included) to its assignment. Handshakes: %d "
             "connections one after the other from one Python thread, each used for one "
             "ApiVersions and closed (TLS+SCRAM: SaslHandshake and the two SCRAM round trips "
             "first); the client's TLS and SCRAM work is in the figure, on the same 2 cores."
             % (when, commit, command, elapsed, plan["clients"], plan["commits"],
                plan["rounds"], plan["joins"], plan["handshakes"]))
    L.append("")
    servers = [s for s in ("kcoord", "kafka") if s in results]
    names = {"kcoord": "kcoord", "kafka": "Kafka"}
    for s in servers:
        if "error" in results[s]:
            L.append("- %s did not run: %s" % (names[s], results[s]["error"]))
    L.append("")
    ok = [s for s in servers if "error" not in results[s]]
    if ok:
        L.append("| listener | " + " | ".join("%s commits/s | %s join median (max)"
                                               % (names[s], names[s]) for s in ok) + " |")
        L.append("| --- |" + " --- | --- |" * len(ok))
        for label in ("PLAINTEXT", "SASL_SSL SCRAM-SHA-512"):
            row = []
            for s in ok:
                r = results[s][label]
                row.append("%.0f | %.0f ms (%.0f ms)" % (r["commits_per_s"],
                                                         r["join_median_s"] * 1000,
                                                         r["join_max_s"] * 1000))
            L.append("| %s | %s |" % (label, " | ".join(row)))
        L.append("")
        L.append("| connection | " + " | ".join("%s per second" % names[s] for s in ok) + " |")
        L.append("| --- |" + " --- |" * len(ok))
        for h in ("TCP (PLAINTEXT)", "TLS (mTLS)", "TLS+SCRAM-SHA-512"):
            L.append("| %s | %s |" % (h, " | ".join("%.0f" % results[s]["handshakes"][h]
                                                     for s in ok)))
        L.append("")
        for s in ok:
            r = results[s]
            ratio = (r["SASL_SSL SCRAM-SHA-512"]["commits_per_s"] /
                     r["PLAINTEXT"]["commits_per_s"])
            L.append("- %s: SASL_SSL commits at %.0f%% of its plaintext rate; commit rounds "
                     "%s (plaintext) and %s (SASL_SSL)."
                     % (names[s], ratio * 100,
                        ", ".join("%.0f" % x for x in r["PLAINTEXT"]["rounds"]),
                        ", ".join("%.0f" % x for x in r["SASL_SSL SCRAM-SHA-512"]["rounds"])))
        L.append("")
    return L
