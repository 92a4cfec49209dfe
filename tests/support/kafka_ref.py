#!/usr/bin/env python3
"""kafka_ref: a reference Apache Kafka broker from Maven Central jars, to compare kcoord with.

The command scripts/kafka-ref runs this file; suites may also import it as tests.support.kafka_ref.

    scripts/kafka-ref fetch
    scripts/kafka-ref start [--partitions N] [--initial-delay MS] [--dir D] [--heap SIZE]
                            [--timeout S] [--secure --keystore PEM --truststore PEM
                            [--scram USER=PASSWORD]... [--plain USER=PASSWORD]...
                            [--super-user PRINCIPAL]...] [--set KEY=VALUE]...
    scripts/kafka-ref start --nodes N [--partitions N] [--initial-delay MS] [--dir D]
                            [--heap SIZE] [--timeout S] [--set KEY=VALUE]...
    scripts/kafka-ref restart-node ID [--timeout S]
    scripts/kafka-ref stop [--keep] [--timeout S]
    scripts/kafka-ref status
    scripts/kafka-ref env
    scripts/kafka-ref run-class MAIN [ARGS...]

fetch: downloads one pinned Kafka release (VERSION below) with Maven: the jars of
org.apache.kafka:kafka_2.13 (the broker), kafka-tools, kafka-clients and their runtime
dependencies, plus the Log4j2 binding for the SLF4J API that Kafka logs through (slf4j-api
1.7.36, so log4j-slf4j-impl; Maven does not pull a binding in, Kafka's release tarball adds
it). `mvn dependency:copy-dependencies` runs on a generated pom in a temporary directory and
the jars land in

    ${XDG_CACHE_HOME:-$HOME/.cache}/kcoord/kafka-<VERSION>/lib

outside the repository, and prints that directory. A complete cache is reused; the other
commands fetch first when it is missing. Needs java 17+ and mvn (Debian: openjdk-17-jdk-headless
maven; `scripts/deps --compat` installs them).

start: formats and starts a single-node KRaft broker (broker and controller in one process) on
127.0.0.1, on two free ports, in a new temporary directory (or D, which must be empty or
missing), with -Xmx1g (--heap), and waits until it serves: its log says "Kafka Server started"
and the broker port accepts connections. On a timeout (--timeout, default 180 s) or an early
exit it prints the end of the broker's log, kills it and exits 1; once it serves, it prints
KAFKA_REF_BOOTSTRAP=127.0.0.1:PORT on stdout and exits 0. Settings that kcoord shares
are set alike on both servers: --partitions N is offsets.topic.num.partitions (default 50, as
Kafka's) and --initial-delay MS is group.initial.rebalance.delay.ms (default 3000, as Kafka's).
The broker runs detached; its output is <dir>/logs/server.log.

start --secure: the broker gets two more listeners, as a secured Kafka has them, on free ports
of 127.0.0.1 and printed as KAFKA_REF_SASL_SSL=127.0.0.1:PORT and KAFKA_REF_SSL=127.0.0.1:PORT:
    SASL_SSL  SASL over TLS, sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
    SSL       TLS with ssl.client.auth=required (mTLS; the principal is the certificate's
              RFC 2253 subject, User:CN=...,O=...)
PLAINTEXT stays (bootstrap, inter-broker) beside the CONTROLLER listener; both are PLAINTEXT,
so User:ANONYMOUS is a super user (the broker reaches its controller as that principal).
Both TLS listeners use --keystore, one PEM file with the private key (PKCS#8, unencrypted,
as `openssl req -nodes` writes it) and the certificate chain (ssl.keystore.type=PEM), and
--truststore, a PEM file of trusted CA certificates (ssl.truststore.type=PEM). ACLs are on:
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer, super.users
the --super-user principals (and User:ANONYMOUS), allow.everyone.if.no.acl.found false.
--scram USER=PASSWORD: SCRAM-SHA-256 and SCRAM-SHA-512 credentials written at format time
(`kafka-storage format --add-scram`); more can be added later with kafka-configs.
--plain USER=PASSWORD: a PLAIN user, in the SASL_SSL listener's
listener.name.sasl_ssl.plain.sasl.jaas.config (PlainLoginModule user_USER="PASSWORD").
--set KEY=VALUE: any other broker setting, after those above (a later one wins); e.g.
--set allow.everyone.if.no.acl.found=true.

start --nodes N (N > 1): a KRaft cluster of N nodes on 127.0.0.1, each a broker and a
controller in one process (node.id 1..N, controller.quorum.voters naming all N), each with its
own free broker and controller ports, its own -Xmx (--heap) and its directory <dir>/node-ID
(server.properties, data, logs/server.log); storage formatted with one cluster id. Replicated
as a production cluster is: offsets.topic.replication.factor, default.replication.factor and
the transaction and share state topics' replication factors are min(N, 3), min.insync.replicas
and their min.isr min(N, 2). It waits until every node serves, then prints
KAFKA_REF_BOOTSTRAP=127.0.0.1:P1,127.0.0.1:P2,... and, per node, KAFKA_REF_NODE_<ID>=127.0.0.1:P
and KAFKA_REF_NODE_<ID>_PID=PID. --secure is for a single node only. Without --nodes (or with
--nodes 1) start is the single node above, unchanged.

restart-node ID: starts node ID of the running cluster again, after it stopped or was killed
(kill -9 for a failover test), on the same directory, ports and settings; waits until it
serves and prints KAFKA_REF_NODE_<ID>_PID=PID.

stop: SIGTERM (to every node of a cluster at once), then SIGKILL when it has not exited after
--timeout (default 60 s) seconds; removes the temporary directory, unless --keep or the
directory was given with --dir.

status: prints whether the broker runs, its pid and address; exit status 0 when it runs, 3
when it does not.

env: prints shell assignments, for `eval "$(scripts/kafka-ref env)"`:
    KAFKA_REF_VERSION   the Kafka version
    KAFKA_REF_CP        the java class path (the jars, as lib/*)
    KAFKA_REF_BOOTSTRAP 127.0.0.1:PORT of the running broker       (only while one runs)
    KAFKA_REF_DATA      its log.dirs, the __consumer_offsets-N home (only while one runs)
    KAFKA_REF_DIR       its directory                                (only while one runs)
    KAFKA_REF_PID       its process id                               (only while one runs)
    KAFKA_REF_SASL_SSL  127.0.0.1:PORT of its SASL_SSL listener   (only with start --secure)
    KAFKA_REF_SSL       127.0.0.1:PORT of its mTLS listener       (only with start --secure)
    KAFKA_REF_NODE_<ID>      127.0.0.1:PORT of node ID         (only with start --nodes N)
    KAFKA_REF_NODE_<ID>_PID  its process id, while it runs    (only with start --nodes N)
(with --nodes N, KAFKA_REF_DATA, KAFKA_REF_PID are node 1's and KAFKA_REF_BOOTSTRAP lists all)

run-class: runs `java -cp <jars> MAIN ARGS...` with a quiet Log4j2 configuration (warnings and
errors on stderr) and passes its exit status through. Useful classes (Kafka 4.3 and later):
    org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server H:P
    org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server H:P --list
    org.apache.kafka.tools.VerifiableConsumer --bootstrap-server H:P --topic T --group-id G
    org.apache.kafka.tools.DumpLogSegments --offsets-decoder --files 00000000000000000000.log
    org.apache.kafka.tools.TopicCommand --bootstrap-server H:P --create --topic T --partitions 3
The ones with --bootstrap-server work against kcoord as well as against the reference broker;
DumpLogSegments reads segment files offline, kcoord's included.

Environment:
    KAFKA_REF_STATE     where the running broker's state file lives (default
                        <cache>/kcoord/kafka-<VERSION>/run); one broker per state directory, so
                        a script that must not meet a broker someone else started sets its own
    KAFKA_REF_JAVA_OPTS extra JVM options, for the broker and for run-class
    KAFKA_REF_LOG_LEVEL the run-class Log4j2 level (default WARN)
    JAVA                the java binary (default: java on PATH)

Exit status: 0 on success, 1 when a step failed (the message says which), 2 on a usage error,
3 from status when no broker runs.
"""
import argparse
import base64
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

if __name__ == "__main__":  # run as a command: the repository root holds the tests package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support.kcoord import free_ports  # noqa: E402

# One pinned release: the newest 4.x that resolves from Maven Central. 4.3 and later keep
# DumpLogSegments in kafka-tools (org.apache.kafka.tools); 4.0-4.2 had it in kafka_2.13.
VERSION = "4.4.0"
# Kafka 4.4.0 depends on slf4j-api 1.7.36 and log4j-core 2.25.5: the SLF4J 1.x binding of the
# same Log4j2 release.
SLF4J_BINDING = ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.5")
ARTIFACTS = [
    ("org.apache.kafka", "kafka_2.13", VERSION),
    ("org.apache.kafka", "kafka-tools", VERSION),
    ("org.apache.kafka", "kafka-clients", VERSION),
    SLF4J_BINDING,
]
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
STARTED_LINE = "Kafka Server started"


class Failure(Exception):
    pass


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kcoord", "kafka-" + VERSION)


def lib_dir():
    return os.path.join(cache_root(), "lib")


def class_path():
    return os.path.join(lib_dir(), "*")


def state_dir():
    return os.environ.get("KAFKA_REF_STATE") or os.path.join(cache_root(), "run")


def state_file():
    return os.path.join(state_dir(), "state.json")


def java_bin():
    return os.environ.get("JAVA") or shutil.which("java") or "java"


def extra_java_opts():
    return os.environ.get("KAFKA_REF_JAVA_OPTS", "").split()


def say(msg):
    print("kafka-ref: " + msg, file=sys.stderr, flush=True)


# ---- fetch ----


def marker_text():
    return "\n".join(":".join(a) for a in ARTIFACTS) + "\n"


def cache_complete():
    try:
        with open(os.path.join(lib_dir(), ".complete")) as f:
            return f.read() == marker_text()
    except OSError:
        return False


def pom_xml():
    deps = "".join(
        "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId>"
        "<version>%s</version></dependency>\n" % a for a in ARTIFACTS)
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n"
            "  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>kcoord.local</groupId><artifactId>kafka-ref-jars</artifactId>"
            "<version>1</version>\n"
            "  <dependencies>\n" + deps + "  </dependencies>\n</project>\n")


def fetch():
    """Makes sure the jars are in the cache; downloads them when they are not."""
    if cache_complete():
        return
    if shutil.which("mvn") is None:
        raise Failure("mvn not found: install Maven (Debian: apt-get install maven)")
    os.makedirs(cache_root(), exist_ok=True)
    with open(os.path.join(cache_root(), ".fetch.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another fetch may be on its way
        if cache_complete():
            return
        say("fetching Kafka %s jars with Maven into %s" % (VERSION, lib_dir()))
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kafka-ref-pom-") as tmp:
            with open(os.path.join(tmp, "pom.xml"), "w") as f:
                f.write(pom_xml())
            out = os.path.join(tmp, "lib")
            p = subprocess.run(["mvn", "-B", "-q", "dependency:copy-dependencies",
                                "-DoutputDirectory=" + out, "-DincludeScope=runtime"],
                               cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            if p.returncode != 0:
                tail = "\n".join(p.stdout.splitlines()[-30:])
                raise Failure("mvn dependency:copy-dependencies failed (exit %d):\n%s"
                              % (p.returncode, tail))
            jars = [n for n in os.listdir(out) if n.endswith(".jar")]
            want = ["%s-%s.jar" % (a, v) for _, a, v in ARTIFACTS]
            missing = [w for w in want if w not in jars]
            if missing:
                raise Failure("mvn did not fetch: " + ", ".join(missing))
            with open(os.path.join(out, ".complete"), "w") as f:
                f.write(marker_text())
            shutil.rmtree(lib_dir(), ignore_errors=True)
            shutil.move(out, lib_dir())
        say("fetched %d jars in %.1f s" % (len(jars), time.monotonic() - t0))


def check_java():
    try:
        p = subprocess.run([java_bin(), "-version"], capture_output=True, text=True)
    except OSError:
        raise Failure("java not found: install Java 17+ (Debian: openjdk-17-jdk-headless)")
    first = (p.stderr or p.stdout).splitlines()[0] if (p.stderr or p.stdout) else ""
    try:
        ver = first.split('"')[1]
        major = int(ver.split(".")[0])
    except (IndexError, ValueError):
        return  # an unusual banner: let java itself complain if it must
    if major < 17:
        raise Failure("Kafka %s needs Java 17 or later, %s is %s" % (VERSION, java_bin(), ver))


def tools_log4j2():
    """A Log4j2 configuration for run-class: warnings and errors only, on stderr."""
    level = os.environ.get("KAFKA_REF_LOG_LEVEL", "WARN").upper()
    path = os.path.join(cache_root(), "tools-log4j2-%s.properties" % level.lower())
    if not os.path.exists(path):
        text = ("rootLogger.level=%s\n"
                "rootLogger.appenderRef.e.ref=STDERR\n"
                "appender.e.type=Console\n"
                "appender.e.name=STDERR\n"
                "appender.e.target=SYSTEM_ERR\n"
                "appender.e.layout.type=PatternLayout\n"
                "appender.e.layout.pattern=[%%d] %%p %%m (%%c)%%n\n" % level)
        tmp = path + ".%d" % os.getpid()
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


# ---- state ----


def read_state():
    try:
        with open(state_file()) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def pid_is_broker(st):
    """True when st's pid is alive and still the java process this state describes."""
    try:
        with open("/proc/%d/cmdline" % st["pid"], "rb") as f:
            cmd = f.read().split(b"\0")
    except (OSError, KeyError, TypeError):
        return False
    return b"kafka.Kafka" in cmd and st["config"].encode() in cmd


def running_state():
    """The state of the broker that runs from this state directory, or None; drops stale state."""
    st = read_state()
    if st is None:
        return None
    if any(pid_is_broker(x) for x in st.get("nodes") or [st]):
        return st
    return None


def cluster_id():
    """A random Kafka Uuid in its base64url form, not starting with '-' (like Uuid.randomUuid)."""
    while True:
        s = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def log_tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log at %s)\n" % path


def port_accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# ---- start ----


SERVER_PROPERTIES = """\
# Written by kcoord's scripts/kafka-ref: a single-node KRaft broker for comparisons.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{cport}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data}
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions={partitions}
group.initial.rebalance.delay.ms={initial_delay}
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
"""

SECURE_PROPERTIES = """\
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport},\
SASL_SSL://127.0.0.1:{sport},SSL://127.0.0.1:{tport}
advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sport},\
SSL://127.0.0.1:{tport}
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,\
SSL:SSL
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
ssl.keystore.type=PEM
ssl.keystore.location={keystore}
ssl.truststore.type=PEM
ssl.truststore.location={truststore}
listener.name.ssl.ssl.client.auth=required
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users={super_users}
allow.everyone.if.no.acl.found=false
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=\
org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=\
org.apache.kafka.common.security.scram.ScramLoginModule required;
"""


def jaas_value(text):
    """text as a Java properties value: backslashes and the line end escaped."""
    return text.replace("\\", "\\\\")


def user_pair(arg, what):
    user, sep, password = arg.partition("=")
    if not sep or not user or not password or any(c in user for c in ",=[]\"\\ "):
        raise Failure("%s %r: give USER=PASSWORD (the user without , = [ ] quotes or spaces)"
                      % (what, arg))
    if any(c in password for c in ",[]\"\\\n"):
        raise Failure("%s %r: a password without , [ ] quotes, backslashes or line ends"
                      % (what, arg))
    return user, password


def secure_properties(args, ports):
    """The settings --secure adds (they replace the plain listener lines)."""
    for what, path in (("--keystore", args.keystore), ("--truststore", args.truststore)):
        if not path or not os.path.isfile(path):
            raise Failure("--secure needs %s, a PEM file (%s is not one)" % (what, path))
    port, cport, sport, tport = ports
    supers = ["User:ANONYMOUS"] + [p for p in args.super_user if p != "User:ANONYMOUS"]
    text = SECURE_PROPERTIES.format(port=port, cport=cport, sport=sport, tport=tport,
                                    keystore=os.path.abspath(args.keystore),
                                    truststore=os.path.abspath(args.truststore),
                                    super_users=";".join(supers))
    # Kafka needs a JAAS entry for every enabled mechanism: PLAIN's lists its users (none
    # when no --plain is given).
    users = " ".join('user_%s="%s"' % user_pair(u, "--plain") for u in args.plain)
    text += ("listener.name.sasl_ssl.plain.sasl.jaas.config="
             "org.apache.kafka.common.security.plain.PlainLoginModule required %s;\n"
             % jaas_value(users))
    return text


def scram_format_args(args):
    out = []
    for u in args.scram:
        user, password = user_pair(u, "--scram")
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            out += ["--add-scram", "%s=[name=%s,password=%s]" % (mech, user, password)]
    return out


def extra_properties(args):
    lines = []
    for kv in args.set:
        k, sep, v = kv.partition("=")
        if not sep or not k.strip():
            raise Failure("--set %r: give KEY=VALUE" % kv)
        lines.append("%s=%s" % (k.strip(), v.replace("\n", "\\n")))
    return "".join(line + "\n" for line in lines)


SERVER_LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.o.ref=STDOUT
appender.o.type=Console
appender.o.name=STDOUT
appender.o.layout.type=PatternLayout
appender.o.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=INFO
logger.state.name=state.change.logger
logger.state.level=WARN
"""


def format_storage(java, cid, config, more=()):
    fmt = subprocess.run(java + ["-Dlog4j2.configurationFile=" + tools_log4j2(), "-cp",
                                 class_path(), "kafka.tools.StorageTool", "format", "-t",
                                 cid, "-c", config] + list(more),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if fmt.returncode != 0:
        raise Failure("formatting the storage failed (exit %d):\n%s"
                      % (fmt.returncode, fmt.stdout))


def broker_cmd(java, heap, log4j, logs, config):
    return java + ["-Xmx" + heap, "-Djava.awt.headless=true",
                   "-Dlog4j2.configurationFile=" + log4j, "-Dkafka.logs.dir=" + logs,
                   "-cp", class_path(), "kafka.Kafka", config]


def spawn(cmd, server_log, cwd):
    """The broker process, detached, its output appended to server_log."""
    with open(server_log, "ab") as out:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd)


def wait_started(proc, server_log, port, deadline, timeout, log_from=0, what="the broker"):
    """Until server_log (from byte log_from on) says STARTED_LINE and port accepts
    connections; Failure when proc exits first or at the deadline."""
    delay = 0.05
    while True:
        rc = proc.poll()
        if rc is not None:
            raise Failure("%s exited with status %d while starting; end of %s:\n%s"
                          % (what, rc, server_log, log_tail(server_log)))
        with open(server_log, errors="replace") as f:
            f.seek(log_from)
            started = STARTED_LINE in f.read()
        if started and port_accepts(port):
            return
        if time.monotonic() > deadline:
            raise Failure("%s did not start within %d s; end of %s:\n%s"
                          % (what, timeout, server_log, log_tail(server_log)))
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def write_state(st):
    tmp = state_file() + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, state_file())


def start(args):
    if args.partitions < 1:
        raise Failure("--partitions must be at least 1")
    if args.initial_delay < 0:
        raise Failure("--initial-delay must not be negative")
    if not args.secure and (args.keystore or args.truststore or args.scram or args.plain or
                            args.super_user):
        raise Failure("--keystore, --truststore, --scram, --plain and --super-user go with "
                      "--secure")
    if args.nodes < 1:
        raise Failure("--nodes must be at least 1")
    if args.nodes > 1 and args.secure:
        raise Failure("--secure is for a single node (--nodes 1)")
    st = running_state()
    if st is not None:
        raise Failure("a broker already runs from %s (pid %d, %s); stop it first, or set "
                      "KAFKA_REF_STATE" % (state_dir(), st["pid"], st["bootstrap"]))
    fetch()
    check_java()
    os.makedirs(state_dir(), exist_ok=True)
    if args.dir:
        work = os.path.abspath(args.dir)
        if os.path.exists(work) and os.listdir(work):
            raise Failure("--dir %s is not empty" % work)
        os.makedirs(work, exist_ok=True)
        owned = False
    else:
        work = tempfile.mkdtemp(prefix="kafka-ref-")
        owned = True
    if args.nodes > 1:
        start_cluster(args, work, owned)
        return
    proc = None
    try:
        data = os.path.join(work, "data")
        logs = os.path.join(work, "logs")
        os.makedirs(logs)
        ports = free_ports(4 if args.secure else 2)
        port, cport = ports[:2]
        config = os.path.join(work, "server.properties")
        with open(config, "w") as f:
            f.write(SERVER_PROPERTIES.format(cport=cport, port=port, data=data,
                                             partitions=args.partitions,
                                             initial_delay=args.initial_delay))
            if args.secure:
                f.write(secure_properties(args, ports))
            f.write(extra_properties(args))
        listeners = {}
        if args.secure:
            listeners = {"SASL_SSL": "127.0.0.1:%d" % ports[2], "SSL": "127.0.0.1:%d" % ports[3]}
        log4j = os.path.join(work, "log4j2.properties")
        with open(log4j, "w") as f:
            f.write(SERVER_LOG4J2)
        java = [java_bin()] + extra_java_opts()
        format_storage(java, cluster_id(), config, scram_format_args(args))
        server_log = os.path.join(logs, "server.log")
        cmd = broker_cmd(java, args.heap, log4j, logs, config)
        proc = spawn(cmd, server_log, work)
        st = {"pid": proc.pid, "bootstrap": "127.0.0.1:%d" % port, "controller": cport,
              "dir": work, "data": data, "log": server_log, "config": config, "owned": owned,
              "version": VERSION, "partitions": args.partitions,
              "initial_delay": args.initial_delay, "listeners": listeners}
        write_state(st)

        t0 = time.monotonic()
        wait_started(proc, server_log, port, t0 + args.timeout, args.timeout)
        say("Kafka %s started in %.1f s: pid %d, bootstrap 127.0.0.1:%d, dir %s"
            % (VERSION, time.monotonic() - t0, proc.pid, port, work))
        print("KAFKA_REF_BOOTSTRAP=127.0.0.1:%d" % port)
        for name, addr in sorted(listeners.items()):
            print("KAFKA_REF_%s=%s" % (name, addr))
    except BaseException:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        try:
            os.unlink(state_file())
        except OSError:
            pass
        if owned:
            shutil.rmtree(work, ignore_errors=True)
        raise


# ---- start --nodes N: a cluster ----

CLUSTER_PROPERTIES = """\
# Written by kcoord's scripts/kafka-ref: node {node} of a {nodes}-node KRaft cluster (each node
# broker and controller) for comparisons.
process.roles=broker,controller
node.id={node}
controller.quorum.voters={voters}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data}
num.partitions=1
default.replication.factor={rf}
min.insync.replicas={min_isr}
offsets.topic.replication.factor={rf}
offsets.topic.num.partitions={partitions}
group.initial.rebalance.delay.ms={initial_delay}
transaction.state.log.replication.factor={rf}
transaction.state.log.min.isr={min_isr}
share.coordinator.state.topic.replication.factor={rf}
share.coordinator.state.topic.min.isr={min_isr}
"""


def start_cluster(args, work, owned):
    """start --nodes N: N nodes, each its own process in <work>/node-ID."""
    n = args.nodes
    ports = free_ports(2 * n)
    ids = list(range(1, n + 1))
    voters = ",".join("%d@127.0.0.1:%d" % (i, ports[2 * k + 1]) for k, i in enumerate(ids))
    rf = min(n, 3)
    min_isr = min(rf, 2)
    java = [java_bin()] + extra_java_opts()
    cid = cluster_id()
    nodes, procs = [], []
    try:
        for k, i in enumerate(ids):
            home = os.path.join(work, "node-%d" % i)
            logs = os.path.join(home, "logs")
            os.makedirs(logs)
            config = os.path.join(home, "server.properties")
            with open(config, "w") as f:
                f.write(CLUSTER_PROPERTIES.format(
                    node=i, nodes=n, voters=voters, port=ports[2 * k], cport=ports[2 * k + 1],
                    data=os.path.join(home, "data"), rf=rf, min_isr=min_isr,
                    partitions=args.partitions, initial_delay=args.initial_delay))
                f.write(extra_properties(args))
            log4j = os.path.join(home, "log4j2.properties")
            with open(log4j, "w") as f:
                f.write(SERVER_LOG4J2)
            format_storage(java, cid, config)
            nodes.append({"id": i, "port": ports[2 * k], "controller": ports[2 * k + 1],
                          "bootstrap": "127.0.0.1:%d" % ports[2 * k], "dir": home,
                          "data": os.path.join(home, "data"), "config": config,
                          "log": os.path.join(logs, "server.log"),
                          "cmd": broker_cmd(java, args.heap, log4j, logs, config)})
        t0 = time.monotonic()
        for node in nodes:
            proc = spawn(node["cmd"], node["log"], node["dir"])
            procs.append(proc)
            node["pid"] = proc.pid
        st = {"pid": nodes[0]["pid"], "bootstrap": ",".join(x["bootstrap"] for x in nodes),
              "controller": nodes[0]["controller"], "dir": work, "data": nodes[0]["data"],
              "log": nodes[0]["log"], "config": nodes[0]["config"], "owned": owned,
              "version": VERSION, "partitions": args.partitions,
              "initial_delay": args.initial_delay, "listeners": {}, "nodes": nodes}
        write_state(st)
        for node, proc in zip(nodes, procs):
            wait_started(proc, node["log"], node["port"], t0 + args.timeout, args.timeout,
                         what="node %d" % node["id"])
        say("Kafka %s cluster of %d nodes started in %.1f s: bootstrap %s, dir %s"
            % (VERSION, n, time.monotonic() - t0, st["bootstrap"], work))
        print("KAFKA_REF_BOOTSTRAP=%s" % st["bootstrap"])
        for node in nodes:
            print("KAFKA_REF_NODE_%d=%s" % (node["id"], node["bootstrap"]))
            print("KAFKA_REF_NODE_%d_PID=%d" % (node["id"], node["pid"]))
    except BaseException:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        try:
            os.unlink(state_file())
        except OSError:
            pass
        if owned:
            shutil.rmtree(work, ignore_errors=True)
        raise


def restart_node(args):
    """restart-node ID: start node ID of the running cluster again (after it stopped or was
    killed), on its directory and ports, and wait until it serves."""
    st = read_state()
    if st is None or not st.get("nodes"):
        raise Failure("no cluster (start --nodes N) runs from %s" % state_dir())
    node = next((x for x in st["nodes"] if x["id"] == args.node), None)
    if node is None:
        raise Failure("the cluster has no node %d" % args.node)
    if pid_is_broker(node):
        raise Failure("node %d runs (pid %d)" % (args.node, node["pid"]))
    log_from = os.path.getsize(node["log"]) if os.path.exists(node["log"]) else 0
    t0 = time.monotonic()
    proc = spawn(node["cmd"], node["log"], node["dir"])
    node["pid"] = proc.pid
    if node["id"] == st["nodes"][0]["id"]:
        st["pid"] = proc.pid
    write_state(st)
    try:
        wait_started(proc, node["log"], node["port"], t0 + args.timeout, args.timeout,
                     log_from, what="node %d" % node["id"])
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise
    say("node %d restarted in %.1f s: pid %d" % (node["id"], time.monotonic() - t0, proc.pid))
    print("KAFKA_REF_NODE_%d_PID=%d" % (node["id"], proc.pid))


# ---- stop, status, env ----


def stop_pids(sts, timeout):
    """SIGTERM to every broker of sts (all at once: a cluster's last node would wait for a
    quorum its stopped peers no longer form), then SIGKILL to those still running after
    timeout seconds."""
    for st in sts:
        os.kill(st["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(pid_is_broker(st) for st in sts) and time.monotonic() < deadline:
        for st in sts:
            try:
                os.waitpid(st["pid"], os.WNOHANG)  # reaps it only when we are its parent
            except ChildProcessError:
                pass
        time.sleep(0.1)
    for st in sts:
        if pid_is_broker(st):
            say("pid %d did not exit within %d s: SIGKILL" % (st["pid"], timeout))
            os.kill(st["pid"], signal.SIGKILL)
            while pid_is_broker(st):
                time.sleep(0.05)
        say("stopped pid %d" % st["pid"])


def stop(args):
    st = read_state()
    if st is None:
        say("no broker state in %s: nothing to stop" % state_dir())
        return
    nodes = st.get("nodes") or [st]
    for node in nodes:
        if not pid_is_broker(node):
            say("the broker (pid %s) was not running" % node.get("pid"))
    stop_pids([node for node in nodes if pid_is_broker(node)], args.timeout)
    os.unlink(state_file())
    if st.get("owned") and not args.keep:
        shutil.rmtree(st["dir"], ignore_errors=True)
    else:
        say("kept %s" % st["dir"])


def status(_args):
    st = running_state()
    if st is None:
        print("not running")
        return 3
    if st.get("nodes"):
        print("running: Kafka %s cluster of %d nodes, bootstrap %s dir %s"
              % (st["version"], len(st["nodes"]), st["bootstrap"], st["dir"]))
        for node in st["nodes"]:
            print("  node %d %s: %s" % (node["id"], node["bootstrap"],
                                       "pid %d" % node["pid"] if pid_is_broker(node)
                                       else "not running"))
        return 0
    print("running: Kafka %s pid %d bootstrap %s dir %s"
          % (st["version"], st["pid"], st["bootstrap"], st["dir"]))
    return 0


def env(_args):
    print("KAFKA_REF_VERSION=%s" % VERSION)
    print("KAFKA_REF_CP='%s'" % class_path())
    st = running_state()
    if st is not None:
        print("KAFKA_REF_BOOTSTRAP=%s" % st["bootstrap"])
        print("KAFKA_REF_DATA='%s'" % st["data"])
        print("KAFKA_REF_DIR='%s'" % st["dir"])
        print("KAFKA_REF_PID=%d" % st["pid"])
        for name, addr in sorted((st.get("listeners") or {}).items()):
            print("KAFKA_REF_%s=%s" % (name, addr))
        for node in st.get("nodes") or []:
            print("KAFKA_REF_NODE_%d=%s" % (node["id"], node["bootstrap"]))
            if pid_is_broker(node):
                print("KAFKA_REF_NODE_%d_PID=%d" % (node["id"], node["pid"]))


def run_class(argv):
    if not argv:
        raise Failure("run-class needs a main class")
    fetch()
    cmd = ([java_bin()] + extra_java_opts() +
           ["-Dlog4j2.configurationFile=" + tools_log4j2(), "-cp", class_path()] + argv)
    sys.stdout.flush()
    os.execvp(cmd[0], cmd)


def main(argv):
    ap = argparse.ArgumentParser(prog="kafka-ref", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch")
    p = sub.add_parser("start")
    p.add_argument("--partitions", type=int, default=50,
                   help="offsets.topic.num.partitions (default 50)")
    p.add_argument("--initial-delay", type=int, default=3000,
                   help="group.initial.rebalance.delay.ms (default 3000)")
    p.add_argument("--dir", help="the broker's directory (empty or missing; kept at stop)")
    p.add_argument("--heap", default="1g", help="JVM heap (default 1g)")
    p.add_argument("--timeout", type=int, default=180, help="start timeout in s (default 180)")
    p.add_argument("--secure", action="store_true",
                   help="add SASL_SSL and mTLS listeners, with ACLs on")
    p.add_argument("--keystore", help="PEM key and certificate chain (with --secure)")
    p.add_argument("--truststore", help="PEM CA certificates (with --secure)")
    p.add_argument("--scram", action="append", default=[], metavar="USER=PASSWORD",
                   help="a SCRAM-SHA-256/512 user made at format time (with --secure)")
    p.add_argument("--plain", action="append", default=[], metavar="USER=PASSWORD",
                   help="a PLAIN user of the SASL_SSL listener (with --secure)")
    p.add_argument("--super-user", action="append", default=[], metavar="PRINCIPAL",
                   help="a super.users principal, e.g. User:admin (with --secure)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any other broker setting (a later one wins)")
    p.add_argument("--nodes", type=int, default=1,
                   help="a KRaft cluster of N nodes, each broker and controller (default 1)")
    p = sub.add_parser("restart-node")
    p.add_argument("node", type=int, help="the node id (1..N)")
    p.add_argument("--timeout", type=int, default=180, help="start timeout in s (default 180)")
    p = sub.add_parser("stop")
    p.add_argument("--keep", action="store_true", help="keep the broker's directory")
    p.add_argument("--timeout", type=int, default=60, help="SIGKILL after S s (default 60)")
    sub.add_parser("status")
    sub.add_parser("env")
    sub.add_parser("run-class", add_help=False)

    if len(argv) >= 1 and argv[0] == "run-class":
        run_class(argv[1:])  # everything after the class belongs to it
        return 0
    args = ap.parse_args(argv)
    if args.cmd == "fetch":
        fetch()
        print(lib_dir())
        return 0
    if args.cmd == "start":
        start(args)
        return 0
    if args.cmd == "restart-node":
        restart_node(args)
        return 0
    if args.cmd == "stop":
        stop(args)
        return 0
    if args.cmd == "status":
        return status(args)
    if args.cmd == "env":
        env(args)
        return 0
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        say(str(e))
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
