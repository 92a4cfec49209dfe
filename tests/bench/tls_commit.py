#!/usr/bin/python3
"""tls_commit: offset commit throughput over a PLAINTEXT and an SSL listener of one kcoord.

Usage: tests/bench/tls_commit.py [--commits N] [--clients C] [--rounds R] [--conns K] [BUILD_DIR]

Makes a CA and a server certificate with openssl in a temporary directory, starts
BUILD_DIR/kcoord (default build) with both listeners, log.flush.policy=never (so that the disk
does not hide the network's cost) and topic t:1, then, for each listener and round, starts C
client processes at once; each is a confluent-kafka consumer (its group of its own, offsets
assigned manually, no rebalance) that sends N asynchronous OffsetCommit requests of t[0] and
waits for every acknowledgement. Prints commits per second (all clients together, from the
first start to the last acknowledgement, the median of the rounds) per listener, and the ratio.
The clients need a confluent-kafka: the python running this script's, else the venv of
scripts/compat-venv.

Then K connections (default 500) are opened to each listener from this process, one after
the other, each sending one ApiVersions request and reading its answer (over SSL, a full
handshake each, no resumption), and kept open: prints connections per second (a bound on
handshakes per second from one client thread) and kcoord's resident memory per open
connection (the growth of VmRSS while they are open, divided by K).
"""
import argparse
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from tests.support import kcoord, wire  # noqa: E402

CLIENT = r'''
import json, sys, time
from confluent_kafka import Consumer, TopicPartition
a = json.loads(sys.argv[1])
conf = {"bootstrap.servers": a["bootstrap"], "group.id": a["group"], "enable.auto.commit": False}
if a["ssl"]:
    conf.update({"security.protocol": "SSL", "ssl.ca.location": a["ca"]})
done = [0, 0]
def on_commit(err, parts):
    done[0] += 1
    done[1] += err is not None
conf["on_commit"] = on_commit
c = Consumer(conf)
c.commit(offsets=[TopicPartition("t", 0, 0)], asynchronous=False)  # connected, coordinator known
done[0] = 0
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
for i in range(a["n"]):
    c.commit(offsets=[TopicPartition("t", 0, i + 1)], asynchronous=True)
    c.poll(0)
while done[0] < a["n"]:
    c.poll(0.05)
print(json.dumps({"s": time.monotonic() - t0, "errors": done[1]}), flush=True)
c.close()
'''


def client_python():
    try:
        import confluent_kafka  # noqa: F401
        return sys.executable
    except ImportError:
        return subprocess.run([os.path.join(ROOT, "scripts", "compat-venv")], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def run(python, port, ssl_on, ca, clients, n, tag):
    procs = []
    for i in range(clients):
        a = {"bootstrap": "127.0.0.1:%d" % port, "group": "%s-%d" % (tag, i), "ssl": ssl_on,
             "ca": ca, "n": n}
        p = subprocess.Popen([python, "-c", CLIENT, json.dumps(a)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise SystemExit("tls_commit: a client did not start")
    t0 = time.monotonic()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    errors = 0
    for p in procs:
        errors += json.loads(p.stdout.readline())["errors"]
        p.wait(60)
    elapsed = time.monotonic() - t0
    if errors:
        raise SystemExit("tls_commit: %d commits failed" % errors)
    return clients * n / elapsed


def conns(k, port, ca, n):
    """Open n connections to port (TLS when ca), each answering one ApiVersions: (per second,
    kcoord's RSS growth per connection in bytes)."""
    ctx = None
    if ca:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
    before = k.rss_kb()
    held = []
    t0 = time.monotonic()
    try:
        for _ in range(n):
            c = wire.Conn(port, "bench")
            if ctx:
                c.s = ctx.wrap_socket(c.s)
            c.ask("ApiVersions", 3, client_software_name="b", client_software_version="1")
            held.append(c)
        rate = n / (time.monotonic() - t0)
        return rate, (k.rss_kb() - before) * 1024 / n
    finally:
        for c in held:
            c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=20000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=500)
    ap.add_argument("build", nargs="?", default="build")
    args = ap.parse_args()
    os.environ["KC_TEST_BIN"] = os.path.join(args.build, "kcoord")
    kcoord.BIN = os.environ["KC_TEST_BIN"]
    python = client_python()
    d = tempfile.mkdtemp(prefix="kc-tls-bench-")
    k = None
    try:
        ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
                "-days", "2", "-subj", "/CN=Bench CA")
        key, csr, crt = (os.path.join(d, "server" + x) for x in (".key", ".csr", ".crt"))
        ext = os.path.join(d, "san.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
                "/CN=127.0.0.1")
        openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                "-out", crt, "-days", "2", "-extfile", ext)
        pem = os.path.join(d, "server.pem")
        with open(pem, "w") as out, open(key) as k1, open(crt) as k2:
            out.write(k1.read() + k2.read())
        plain, tls = kcoord.free_ports(2)
        k = kcoord.Kcoord(os.path.join(d, "data"),
                          "listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d" % (plain, tls),
                          "ssl.keystore.location=" + pem, "topics=t:1",
                          "log.flush.policy=never", *kcoord.no_metrics_listener())
        rates = {"PLAINTEXT": [], "SSL": []}
        for r in range(args.rounds):
            for name, port, on in (("PLAINTEXT", plain, False), ("SSL", tls, True)):
                rates[name].append(run(python, port, on, ca, args.clients, args.commits,
                                       "%s-%d" % (name, r)))
        med = {n: statistics.median(v) for n, v in rates.items()}
        for n in ("PLAINTEXT", "SSL"):
            print("%-9s %8.0f commits/s  (rounds: %s)" % (
                n, med[n], ", ".join("%.0f" % x for x in rates[n])))
        print("SSL / PLAINTEXT: %.2f" % (med["SSL"] / med["PLAINTEXT"]))
        for name, port, c in (("PLAINTEXT", plain, None), ("SSL", tls, ca)):
            rate, per = conns(k, port, c, args.conns)
            print("%-9s %d connections: %6.0f per second, %6.0f bytes of kcoord RSS each" % (
                name, args.conns, rate, per))
        rc = k.stop()
        k = None
        if rc != 0:
            raise SystemExit("tls_commit: kcoord exited with status %d" % rc)
    finally:
        if k is not None:
            k.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
