"""secure: the security cells of tests/compat/compat.py, run on a secured kcoord and a secured
reference Kafka broker configured the same way, with Kafka's setting names.

One secured server per side serves every security cell (started after that side's other
cells, stopped after its last security cell). Both have the listeners
    PLAINTEXT  bootstrap for the suite's own observations (kwire) and topic creation; its
               principal User:ANONYMOUS is a super user (Kafka's broker reaches its controller
               over it)
    SASL_SSL   sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN; PLAIN users admin and
               bob in listener.name.sasl_ssl.plain.sasl.jaas.config
    SSL        ssl.client.auth=required (mTLS, the principal the certificate's RFC 2253 subject)
with PEM key and certificates made by openssl at run time (tests/support/certs.py),
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer,
super.users=User:ANONYMOUS;User:admin and allow.everyone.if.no.acl.found=false. Once it
serves, the same set-up runs on both through Kafka's own tools, as the admin over SASL_SSL
(PLAIN): `kafka-configs --alter --add-config SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]
--entity-type users --entity-name alice`, and `kafka-acls --add` giving User:alice, User:bob
and the mTLS principal READ (so DESCRIBE) on the topics and groups whose names start with
"sec-" (PREFIXED). Names starting with "noacl-" have no ACL.

Cells (client/scenario):
    secure-librdkafka-debian/scram-sha-512, /plain   librdkafka 2.0.2 (Debian's
        python3-confluent-kafka) over SASL_SSL: join, commit, read the commit back
        (tests/compat/rk_secure.py). Kafka 4 refuses the SCRAM nonce of librdkafka before
        2.6.1: on Kafka that cell expects the refusal (SASL_AUTHENTICATION_FAILED).
    secure-librdkafka-wheel/scram-sha-512, /plain    the same with the newest librdkafka
    secure-kcat/scram-sha-512   kcat -G over SASL_SSL SCRAM-SHA-512 (librdkafka 2.0.2: on
        Kafka, the refusal is expected, as above)
    secure-java/scram-sha-512, /mtls   VerifiableConsumer with a client config (SASL_SSL
        SCRAM-SHA-512; SSL with a PEM keystore): join, auto-commit seen through OffsetFetch
    secure-tools/acls          kafka-acls --add, --list, --remove --force, --list
    secure-tools/scram-users   kafka-configs --alter --add-config SCRAM-SHA-512, --describe,
        the new user authenticates, --delete-config, it no longer does
    secure-tools/group-configs kafka-configs --entity-type groups --alter and --describe
    secure-tools/consumer-groups  kafka-consumer-groups --command-config --list and
        --describe, as the admin and as alice
    secure-refusal/wrong-password, /unknown-user   SCRAM-SHA-512: _AUTHENTICATION
    secure-refusal/unknown-mechanism   OAUTHBEARER, not enabled: _AUTHENTICATION
        (UNSUPPORTED_SASL_MECHANISM in SaslHandshake)
    secure-refusal/no-tls      SASL_PLAINTEXT to the SASL_SSL port: no answer, disconnected
    secure-refusal/plaintext-on-sasl   PLAINTEXT to the SASL_SSL port: disconnected
    secure-refusal/no-client-cert      SSL without a certificate to the mTLS port: _SSL
    secure-refusal/group-acl   a group without an ACL: GROUP_AUTHORIZATION_FAILED, and the
        group does not exist afterwards
    secure-refusal/topic-acl   a topic without an ACL: TOPIC_AUTHORIZATION_FAILED, nothing
        committed
Every refusal cell is judged by the error the client reports, with librdkafka's error names.
Tool outputs are compared, normalised, between the servers as compat.py compares
ConsumerGroupCommand outputs.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from tests.support import certs, kcoord  # noqa: E402
import kwire  # noqa: E402

C = None  # the compat module, set by compat.py before any cell runs

RK_SECURE = os.path.join(ROOT, "tests", "compat", "rk_secure.py")
ACL_CMD = "org.apache.kafka.tools.AclCommand"
CONFIG_CMD = "org.apache.kafka.tools.ConfigCommand"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_USERS = {"admin": "admin-secret", "bob": "bob-secret"}
SCRAM_USER = ("alice", "alice-secret")
MTLS_SUBJECT = "/O=Acme/OU=Services/CN=team-a"
MTLS_PRINCIPAL = "User:CN=team-a,OU=Services,O=Acme"
PREFIX = "sec-"
PARTITIONS = 6

CLIENTS = [
    ("secure-librdkafka-debian", "debian", ["scram-sha-512", "plain"]),
    ("secure-librdkafka-wheel", "wheel", ["scram-sha-512", "plain"]),
    ("secure-kcat", "kcat", ["scram-sha-512"]),
    ("secure-java", "java", ["scram-sha-512", "mtls"]),
    ("secure-tools", "tools", ["acls", "scram-users", "group-configs", "consumer-groups"]),
    ("secure-refusal", "wheel", ["wrong-password", "unknown-user", "unknown-mechanism",
                                 "no-tls", "plaintext-on-sasl", "no-client-cert", "group-acl",
                                 "topic-acl"]),
]

TEXT = {
    "scram-sha-512": "a consumer over SASL_SSL with SCRAM-SHA-512 (user alice, made with "
                     "kafka-configs) joins its group, commits and reads its commit back",
    "plain": "the same with PLAIN (user bob, from the listener's JAAS config)",
    "mtls": "VerifiableConsumer over SSL with a client certificate (principal "
            "`%s`) joins and auto-commits" % MTLS_PRINCIPAL,
    "acls": "kafka-acls --add, --list, --remove --force and --list again, as the admin",
    "scram-users": "kafka-configs adds a SCRAM-SHA-512 user, describes it; the user "
                   "authenticates; its credential is deleted and it no longer does",
    "group-configs": "kafka-configs --alter and --describe of a group's configs",
    "consumer-groups": "kafka-consumer-groups --command-config --list and --describe "
                       "--offsets, as the admin and as alice (who sees her groups only)",
    "wrong-password": "SCRAM-SHA-512 with a wrong password: authentication fails",
    "unknown-user": "SCRAM-SHA-512 as a user that does not exist: authentication fails",
    "unknown-mechanism": "OAUTHBEARER, not enabled on the listener: refused",
    "no-tls": "SASL without TLS (SASL_PLAINTEXT) to the SASL_SSL port: disconnected",
    "plaintext-on-sasl": "a PLAINTEXT client on the SASL_SSL port: disconnected",
    "no-client-cert": "SSL without a client certificate to the mTLS port: TLS handshake "
                      "fails",
    "group-acl": "alice joins a group without an ACL on an allowed topic: "
                 "GROUP_AUTHORIZATION_FAILED, and no group is made",
    "topic-acl": "alice subscribes to a topic without an ACL in an allowed group: "
                 "TOPIC_AUTHORIZATION_FAILED, nothing committed",
}


def doc_section():
    """The security cells' part of docs/COMPATIBILITY.md: the set-up and each scenario."""
    L = ["### Security (SASL_SSL, mTLS, ACLs)", "",
         "The secure-* cells run against one secured server per side, configured alike with "
         "Kafka's setting names (kcoord with `--set`, Kafka with `scripts/kafka-ref start "
         "--secure`): listeners `PLAINTEXT` (the suite's own observations; "
         "`User:ANONYMOUS` is a super user, as Kafka's broker reaches its controller over it), "
         "`SASL_SSL` (`sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN`, PLAIN users "
         "admin and bob in `listener.name.sasl_ssl.plain.sasl.jaas.config`) and `SSL` with "
         "`ssl.client.auth=required`; PEM keystore and truststore made by openssl at run time; "
         "`authorizer.class.name=%s`, `super.users=User:ANONYMOUS;User:admin`, "
         "`allow.everyone.if.no.acl.found=false`. The same set-up then runs on both through "
         "Kafka's tools as the admin: `kafka-configs` adds alice's SCRAM-SHA-256 and "
         "SCRAM-SHA-512 credentials (one mechanism per command: Kafka refuses two credentials "
         "of one user in one AlterUserScramCredentials request), `kafka-acls` gives User:alice, "
         "User:bob and `%s` READ on the groups and topics prefixed `%s`. Refusals are judged "
         "by the error librdkafka 2.16 reports (its names; local errors start with `_`)."
         % (AUTHORIZER, MTLS_PRINCIPAL, PREFIX), ""]
    for s in sorted({s for _, _, s in cells()}, key=list(TEXT).index):
        L.append("- **%s**: %s." % (s, TEXT[s]))
    L.append("")
    L.append("librdkafka before 2.6.1 (Debian 12's 2.0.2, and kcat) sends a longer SCRAM "
             "client nonce than Kafka 4 accepts: Kafka refuses it, kcoord accepts it as Kafka "
             "3.9 did. On Kafka those cells expect the refusal.")
    L.append("")
    return L


def cells():
    return [(name, kind, s) for name, kind, scen in CLIENTS for s in scen]


def topic_of(client, scenario):
    t = C.slug("%s%s-%s" % (PREFIX, client.replace("secure-", ""), scenario))
    if scenario == "topic-acl":
        t = "noacl-" + t
    return t


def group_of(client, scenario):
    g = "%sg-%s-%s" % (PREFIX, client.replace("secure-", ""), scenario)
    if scenario == "group-acl":
        g = "noacl-" + g
    return C.slug(g)


def all_topics():
    return {topic_of(c, s) for c, _, s in cells()}


# ---- certificates and client configs ------------------------------------------------------


class Material:
    """The certificates and client configs of a run, made once, shared by both servers."""

    def __init__(self, workdir):
        d = self.dir = os.path.join(workdir, "secure-certs")
        os.makedirs(d, exist_ok=True)
        ca = certs.make_ca(d, "ca", "kcoord compat CA")
        self.ca = ca[1]
        self.server = certs.make_cert(d, "server", "/CN=localhost", ca,
                                      "DNS:localhost,IP:127.0.0.1")[2]
        self.client = certs.make_cert(d, "team-a", MTLS_SUBJECT, ca)[2]
        self.admin_conf = self.java_conf("admin", "PLAIN", "admin", PLAIN_USERS["admin"])
        self.alice_conf = self.java_conf("alice", "SCRAM-SHA-512", *SCRAM_USER)
        self.mtls_conf = os.path.join(d, "mtls.properties")
        with open(self.mtls_conf, "w") as f:
            f.write("security.protocol=SSL\nssl.truststore.type=PEM\n"
                    "ssl.truststore.location=%s\nssl.keystore.type=PEM\n"
                    "ssl.keystore.location=%s\n" % (self.ca, self.client))

    def java_conf(self, name, mechanism, user, password):
        path = os.path.join(self.dir, name + ".properties")
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule"
                  if mechanism == "PLAIN" else
                  "org.apache.kafka.common.security.scram.ScramLoginModule")
        with open(path, "w") as f:
            f.write("security.protocol=SASL_SSL\nsasl.mechanism=%s\n"
                    "sasl.jaas.config=%s required username=\"%s\" password=\"%s\";\n"
                    "ssl.truststore.type=PEM\nssl.truststore.location=%s\n"
                    % (mechanism, module, user, password, self.ca))
        return path

    def rk_sasl(self, mechanism, user, password, protocol="SASL_SSL"):
        return ["security.protocol=" + protocol, "ssl.ca.location=" + self.ca,
                "sasl.mechanisms=" + mechanism, "sasl.username=" + user,
                "sasl.password=" + password]


# ---- the secured servers ------------------------------------------------------------------


class Secured:
    """Common to both: the addresses, the set-up through Kafka's tools, check_alive."""

    def __init__(self, name, workdir, material):
        self.name = name
        self.workdir = workdir
        self.m = material
        self.bootstrap = self.sasl = self.ssl = None
        self.log = os.path.join(workdir, "secure-%s-setup.log" % name)

    def tool(self, cls, *args, conf=None, timeout=90):
        return C.run_tool([C.KAFKA_REF, "run-class", cls, "--bootstrap-server", self.sasl,
                           "--command-config", conf or self.m.admin_conf] + list(args),
                          self.log, timeout, env=C.TOOLS_ENV)

    def set_up(self):
        # One mechanism per command: Kafka refuses two credentials of one user in one
        # AlterUserScramCredentials request (DuplicateResourceException).
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            rc, out = self.tool(CONFIG_CMD, "--alter", "--entity-type", "users",
                                "--entity-name", SCRAM_USER[0], "--add-config",
                                "%s=[password=%s]" % (mech, SCRAM_USER[1]))
            if rc != 0:
                raise C.SetupError("kafka-configs could not add the %s user (exit %d):\n%s"
                                   % (mech, rc, out[-1500:]))
        principals = []
        for p in ["User:alice", "User:bob", MTLS_PRINCIPAL]:
            principals += ["--allow-principal", p]
        rc, out = self.tool(ACL_CMD, "--add", *principals, "--operation", "Read",
                            "--topic", PREFIX, "--group", PREFIX, "--resource-pattern-type",
                            "prefixed")
        if rc != 0:
            raise C.SetupError("kafka-acls could not add the team's ACLs (exit %d):\n%s"
                               % (rc, out[-1500:]))

    def server_settings(self, port, sport, tport):
        """kcoord's settings, with Kafka's names; the reference broker gets the same ones from
        scripts/kafka-ref start --secure."""
        jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required %s;"
                % " ".join('user_%s="%s"' % kv for kv in sorted(PLAIN_USERS.items())))
        return [
            "listeners=PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,SSL://127.0.0.1:%d"
            % (port, sport, tport),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
            "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
            "ssl.keystore.type=PEM", "ssl.keystore.location=" + self.m.server,
            "ssl.truststore.type=PEM", "ssl.truststore.location=" + self.m.ca,
            "listener.name.ssl.ssl.client.auth=required",
            "listener.name.sasl_ssl.plain.sasl.jaas.config=" + jaas,
            "authorizer.class.name=" + AUTHORIZER,
            "super.users=User:ANONYMOUS;User:admin",
            "allow.everyone.if.no.acl.found=false",
        ]

    def check_alive(self):
        return None


class SecuredKcoord(Secured):
    def __init__(self, binary, workdir, material):
        Secured.__init__(self, "kcoord", workdir, material)
        self.binary = binary
        self.run = None
        self.exit_status = 0

    def start(self):
        port, sport, tport = kcoord.free_ports(3)
        spec = ",".join("%s:%d" % (t, PARTITIONS) for t in sorted(all_topics()))
        try:
            self.run = kcoord.Kcoord(os.path.join(self.workdir, "kcoord-secure-data"),
                                     *self.server_settings(port, sport, tport),
                                     "topics=" + spec, "node.id=1",
                                     "offsets.topic.num.partitions=%d" % C.OFFSETS_PARTITIONS,
                                     "group.initial.rebalance.delay.ms=0",
                                     binary=self.binary,
                                     log_path=os.path.join(self.workdir, "kcoord-secure.log"),
                                     new_session=True)
        except AssertionError as e:
            raise C.SetupError("the secured kcoord did not start: " +
                               str(e).strip().splitlines()[-1][:400]) from None
        C.CHILDREN.add(self.run.proc)
        self.bootstrap = "127.0.0.1:%d" % port
        self.sasl = "127.0.0.1:%d" % sport
        self.ssl = "127.0.0.1:%d" % tport
        self.set_up()

    def check_alive(self):
        if self.run is None or self.run.proc.poll() is None:
            return None
        return "the secured kcoord exited with status %s" % self.run.proc.returncode

    def stop(self):
        if self.run is not None:
            self.exit_status = self.run.stop()


class SecuredKafka(Secured):
    def __init__(self, workdir, material):
        Secured.__init__(self, "kafka", workdir, material)
        self.env = C.clean_env({"KAFKA_REF_STATE": os.path.join(workdir, "kafka-ref-secure")})
        self.env.pop("KAFKA_REF_JAVA_OPTS", None)
        self.started = False

    def start(self):
        args = [C.KAFKA_REF, "start", "--partitions", str(C.OFFSETS_PARTITIONS),
                "--initial-delay", "0", "--heap", "512m", "--secure",
                "--keystore", self.m.server,
                "--truststore", self.m.ca, "--super-user", "User:admin"]
        for u, p in sorted(PLAIN_USERS.items()):
            args += ["--plain", "%s=%s" % (u, p)]
        self.started = True
        p = subprocess.run(args, env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        with open(self.log, "a") as f:
            f.write(p.stdout)
        got = dict(re.findall(r"^(KAFKA_REF_\w+)=(\S+)$", p.stdout, re.M))
        if p.returncode != 0 or "KAFKA_REF_SASL_SSL" not in got:
            raise C.SetupError("kafka-ref start --secure failed:\n" + p.stdout[-2000:])
        self.bootstrap = got["KAFKA_REF_BOOTSTRAP"]
        self.sasl, self.ssl = got["KAFKA_REF_SASL_SSL"], got["KAFKA_REF_SSL"]
        res = kwire.create_topics(self.bootstrap, {t: PARTITIONS for t in all_topics()})
        bad = {t: e for t, e in res.items() if e[0] != 0}
        if bad:
            raise C.SetupError("CreateTopics on the secured Kafka: %r" % bad)

        def led():
            md = kwire.metadata(self.bootstrap, sorted(all_topics()))
            missing = [t for t in all_topics() if t not in md or md[t][0] != 0 or
                       len(md[t][1]) != PARTITIONS]
            return True if not missing else "no leaders yet for %s" % missing[:5]

        try:
            C.wait_until("the secured Kafka's topics have leaders", led, timeout=60)
        except C.Fail as e:
            raise C.SetupError(str(e))
        self.set_up()

    def check_alive(self):
        p = subprocess.run([C.KAFKA_REF, "status"], env=self.env, capture_output=True,
                           text=True)
        return None if p.returncode == 0 else "the secured Kafka broker is not running"

    def stop(self):
        if self.started:
            subprocess.run([C.KAFKA_REF, "stop", "--timeout", "30"], env=self.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# ---- cells --------------------------------------------------------------------------------


def rk(cell, python, props, bootstrap=None, topic=None, group=None, timeout=30):
    """Run rk_secure.py: its JSON result."""
    args = [python, RK_SECURE, "--bootstrap", bootstrap or cell.server.sasl,
            "--group", group or cell.group, "--topic", topic or cell.topic,
            "--timeout", str(timeout)]
    for p in props:
        args += ["-X", p]
    _, out = C.run_tool(args, os.path.join(cell.dir, "rk.log"), timeout + 60)
    for line in out.splitlines()[::-1]:
        if line.startswith("{"):
            return json.loads(line)
    raise C.Fail("rk_secure.py printed no result:\n" + out[-800:])


def codes(res):
    return [e["code"] for e in res["errors"]]


def expect_ok(cell, res, what):
    want = {str(p): 10 + p for p in range(PARTITIONS)}
    if res["errors"] or res["assigned"] != list(range(PARTITIONS)):
        raise C.Fail("%s: assigned %s, errors %s" % (what, res["assigned"],
                                                      [e["text"][:160] for e in res["errors"]]))
    if res["committed"] != want or res["fetched"] != want:
        raise C.Fail("%s: committed %s, read back %s" % (what, res["committed"],
                                                         res["fetched"]))
    got = {p: o for (t, p), (o, _) in kwire.fetch_offsets(cell.server.bootstrap,
                                                         cell.group).items()
           if t == cell.topic}
    if got != {p: 10 + p for p in range(PARTITIONS)}:
        raise C.Fail("%s: the server's OffsetFetch shows %s" % (what, got))
    cell.note("joined (6 partitions), committed 6 offsets, read them back")


def expect_refusal(cell, res, wanted, what, text=None):
    """One of the wanted error codes (the first of them seen is noted), its text matching the
    regular expression text when given; the client must not have joined."""
    seen = codes(res)
    hits = [e for e in res["errors"] if e["code"] in wanted and
            (text is None or re.search(text, e["text"]))]
    if not hits or res["assigned"] or res["committed"]:
        raise C.Fail("%s: expected %s%s, got %s, assigned %s (%s)" % (
            what, "/".join(wanted), " matching /%s/" % text if text else "", seen or "no error",
            res["assigned"], "; ".join(e["text"][:160] for e in res["errors"][:2])))
    first = min(hits, key=lambda e: wanted.index(e["code"]))
    cell.note("refused: %s" % first["code"])
    cell.extra.setdefault("refusal", first["code"])


OLD_SCRAM = ("Kafka 4 refuses the SCRAM client nonce of librdkafka before 2.6.1: the "
             "refusal is expected there")


def python_of(kind):
    return C.DEBIAN_PYTHON if kind == "debian" else C.WHEEL.python


def sc_rk(cell, kind):
    m = cell.server.m
    if cell.scenario == "plain":
        props = m.rk_sasl("PLAIN", "bob", PLAIN_USERS["bob"])
    else:
        props = m.rk_sasl("SCRAM-SHA-512", *SCRAM_USER)
    res = rk(cell, python_of(kind), props)
    if kind == "debian" and cell.scenario != "plain" and cell.server.name == "kafka":
        expect_refusal(cell, res, ["_AUTHENTICATION"], "librdkafka 2.0.2 SCRAM on Kafka 4")
        cell.note(OLD_SCRAM)
        return
    expect_ok(cell, res, "librdkafka %s" % res.get("librdkafka"))


def sc_kcat(cell):
    m = cell.server.m
    args = ["kcat", "-b", cell.server.sasl, "-X", "security.protocol=SASL_SSL",
            "-X", "ssl.ca.location=" + m.ca, "-X", "sasl.mechanisms=SCRAM-SHA-512",
            "-X", "sasl.username=" + SCRAM_USER[0], "-X", "sasl.password=" + SCRAM_USER[1],
            "-X", "session.timeout.ms=10000", "-G", cell.group, "-e", "-v", cell.topic]
    try:
        rc, out = C.run_tool(args, os.path.join(cell.dir, "kcat.log"), 45)
    except C.Fail as e:
        rc, out = -1, str(e)
    with open(os.path.join(cell.dir, "kcat.log"), errors="replace") as f:
        text = f.read()
    assigned = re.search(r"rebalanced .*assigned: (.*)", text)
    if cell.server.name == "kafka":
        if "Authentication failed" not in text:
            raise C.Fail("kcat (librdkafka 2.0.2) SCRAM on Kafka 4: expected the refusal, "
                         "got exit %s" % rc)
        cell.note("refused: SASL authentication failed")
        cell.note(OLD_SCRAM)
        return
    if rc != 0 or not assigned or assigned.group(1).count(cell.topic) != PARTITIONS:
        raise C.Fail("kcat -G: exit %s, %s" % (rc, (assigned.group(0) if assigned else
                                                    text.strip().splitlines()[-1:])))
    cell.note("kcat joined (6 partitions) and read to the end")


def sc_java(cell):
    m = cell.server.m
    conf = m.mtls_conf if cell.scenario == "mtls" else m.alice_conf
    addr = cell.server.ssl if cell.scenario == "mtls" else cell.server.sasl
    path = os.path.join(cell.dir, "consumer.properties")
    with open(conf) as f, open(path, "w") as out:
        out.write(f.read() + "client.id=c0\nauto.commit.interval.ms=500\n"
                  "heartbeat.interval.ms=500\n")
    args = [C.KAFKA_REF, "run-class", C.VERIFIABLE, "--bootstrap-server", addr,
            "--topic", cell.topic, "--group-id", cell.group, "--group-protocol", "classic",
            "--command-config", path, "--session-timeout", "10000", "--enable-autocommit"]
    fake = type("Client", (), {"kind": "java", "env": C.TOOLS_ENV, "name": "java",
                               "member_args": lambda *a: args})()
    member = C.Member(cell, fake, 0)
    member.wait_event("partitions_assigned")

    def held():
        return True if len(member.held) == PARTITIONS else "holds %s" % sorted(member.held)

    C.wait_until("c0 holds every partition", held)

    def committed():
        got = kwire.fetch_offsets(cell.server.bootstrap, cell.group)
        n = sum(1 for (t, _) in got if t == cell.topic)
        return True if n == PARTITIONS else "%d offsets committed" % n

    C.wait_until("the auto-commit reaches the server", committed)
    member.stop()
    cell.note("joined (6 partitions) as %s, auto-committed 6 offsets"
              % (MTLS_PRINCIPAL if cell.scenario == "mtls" else "User:alice (SCRAM-SHA-512)"))


def tool(cell, cls, *args, conf=None):
    """A Kafka tool against the secured server's SASL_SSL listener; its output is kept,
    normalised, to be compared with the other server's."""
    rc, out = C.run_tool([C.KAFKA_REF, "run-class", cls, "--bootstrap-server",
                          cell.server.sasl, "--command-config",
                          conf or cell.server.m.admin_conf] + list(args),
                         os.path.join(cell.dir, "tools.log"), 90, env=C.TOOLS_ENV)
    name = cls.rsplit(".", 1)[-1]
    cell.extra.setdefault("tool_outputs", []).append(
        ("%s %s" % (name, " ".join(args)), C.normalise(out, cell.server.sasl)))
    return rc, out


def sc_acls(cell):
    pat = ["--group", cell.group]
    rc, out = tool(cell, ACL_CMD, "--add", "--allow-principal", "User:carol", "--operation",
                   "Read", "--operation", "Delete", *pat)
    if rc != 0:
        raise C.Fail("kafka-acls --add: exit %d: %s" % (rc, out.strip()[-300:]))
    rc, out = tool(cell, ACL_CMD, "--list", *pat)
    if rc != 0 or "User:carol" not in out or "READ" not in out or "DELETE" not in out:
        raise C.Fail("kafka-acls --list after --add: exit %d: %s" % (rc, out.strip()[-300:]))
    rc, out = tool(cell, ACL_CMD, "--remove", "--force", "--allow-principal", "User:carol",
                   "--operation", "Read", *pat)
    if rc != 0:
        raise C.Fail("kafka-acls --remove: exit %d: %s" % (rc, out.strip()[-300:]))
    rc, out = tool(cell, ACL_CMD, "--list", *pat)
    if rc != 0 or "READ" in out or "DELETE" not in out:
        raise C.Fail("kafka-acls --list after --remove of READ: %s" % out.strip()[-300:])
    cell.note("added READ and DELETE for User:carol, listed, removed READ, listed DELETE only")


def sc_scram_users(cell):
    user, pw = "dave", "dave-secret"
    rc, out = tool(cell, CONFIG_CMD, "--alter", "--entity-type", "users", "--entity-name",
                   user, "--add-config", "SCRAM-SHA-512=[iterations=8192,password=%s]" % pw)
    if rc != 0:
        raise C.Fail("kafka-configs --alter --add-config: exit %d: %s" % (rc, out[-300:]))
    rc, out = tool(cell, CONFIG_CMD, "--describe", "--entity-type", "users",
                   "--entity-name", user)
    if rc != 0 or "SCRAM-SHA-512=iterations=8192" not in out:
        raise C.Fail("kafka-configs --describe: exit %d: %s" % (rc, out.strip()[-300:]))
    # dave has no ACL: authenticated, he is refused the group, which tells the two apart.
    props = cell.server.m.rk_sasl("SCRAM-SHA-512", user, pw)
    res = rk(cell, C.WHEEL.python, props, timeout=20)
    if "_AUTHENTICATION" in codes(res) or "GROUP_AUTHORIZATION_FAILED" not in codes(res):
        raise C.Fail("the new user: expected authentication, then GROUP_AUTHORIZATION_FAILED "
                     "(no ACL); got %s" % codes(res))
    rc, out = tool(cell, CONFIG_CMD, "--alter", "--entity-type", "users", "--entity-name",
                   user, "--delete-config", "SCRAM-SHA-512")
    if rc != 0:
        raise C.Fail("kafka-configs --delete-config: exit %d: %s" % (rc, out[-300:]))
    res = rk(cell, C.WHEEL.python, props, timeout=20)
    if "_AUTHENTICATION" not in codes(res):
        raise C.Fail("after --delete-config the user still authenticates: %s" % codes(res))
    cell.note("added (8192 iterations), described, authenticated; deleted, refused")


def sc_group_configs(cell):
    rc, out = tool(cell, CONFIG_CMD, "--alter", "--entity-type", "groups", "--entity-name",
                   cell.group, "--add-config", "consumer.session.timeout.ms=50000")
    if rc != 0:
        raise C.Fail("kafka-configs --alter groups: exit %d: %s" % (rc, out.strip()[-300:]))
    rc, out = tool(cell, CONFIG_CMD, "--describe", "--entity-type", "groups",
                   "--entity-name", cell.group)
    if rc != 0 or "consumer.session.timeout.ms=50000" not in out:
        raise C.Fail("kafka-configs --describe groups: exit %d: %s" % (rc, out.strip()[-300:]))
    cell.note("set and described consumer.session.timeout.ms=50000")


def sc_consumer_groups(cell):
    m = cell.server.m
    expect_ok(cell, rk(cell, C.WHEEL.python, m.rk_sasl("SCRAM-SHA-512", *SCRAM_USER)),
              "alice's commit")
    for who, conf in (("admin", m.admin_conf), ("alice", m.alice_conf)):
        rc, out = tool(cell, C.CGC, "--list", conf=conf)
        if rc != 0 or cell.group not in out.split():
            raise C.Fail("--list as %s: exit %d: %s" % (who, rc, out.strip()[-300:]))
        rc, out = tool(cell, C.CGC, "--describe", "--offsets", "--group", cell.group, conf=conf)
        rows = [l for l in out.splitlines() if l.split()[:2] == [cell.group, cell.topic]]
        if rc != 0 or len(rows) != PARTITIONS:
            raise C.Fail("--describe --offsets as %s: exit %d: %s"
                         % (who, rc, out.strip()[-300:]))
    cell.note("listed and described as the admin and as alice")


def sc_refusal(cell):
    m = cell.server.m
    srv = cell.server
    py = C.WHEEL.python
    s = cell.scenario
    if s == "wrong-password":
        res = rk(cell, py, m.rk_sasl("SCRAM-SHA-512", SCRAM_USER[0], "not-" + SCRAM_USER[1]))
        expect_refusal(cell, res, ["_AUTHENTICATION"], s, "Authentication failed")
    elif s == "unknown-user":
        res = rk(cell, py, m.rk_sasl("SCRAM-SHA-512", "nobody", "whatever"))
        expect_refusal(cell, res, ["_AUTHENTICATION"], s, "Authentication failed")
    elif s == "unknown-mechanism":
        res = rk(cell, py, ["security.protocol=SASL_SSL", "ssl.ca.location=" + m.ca,
                            "sasl.mechanisms=OAUTHBEARER",
                            "enable.sasl.oauthbearer.unsecure.jwt=true",
                            "sasl.oauthbearer.config=principal=alice"], timeout=15)
        expect_refusal(cell, res, ["_AUTHENTICATION", "UNSUPPORTED_SASL_MECHANISM"], s,
                       "Unsupported SASL mechanism")
    elif s == "no-tls":
        res = rk(cell, py, m.rk_sasl("SCRAM-SHA-512", *SCRAM_USER, protocol="SASL_PLAINTEXT"),
                 timeout=15)
        expect_refusal(cell, res, ["_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT"], s)
    elif s == "plaintext-on-sasl":
        res = rk(cell, py, ["security.protocol=PLAINTEXT"], timeout=15)
        expect_refusal(cell, res, ["_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT"], s)
    elif s == "no-client-cert":
        res = rk(cell, py, ["security.protocol=SSL", "ssl.ca.location=" + m.ca],
                 bootstrap=srv.ssl, timeout=15)
        expect_refusal(cell, res, ["_SSL", "_TRANSPORT"], s, "SSL|certificate")
    elif s == "group-acl":
        res = rk(cell, py, m.rk_sasl("SCRAM-SHA-512", *SCRAM_USER), timeout=20)
        expect_refusal(cell, res, ["GROUP_AUTHORIZATION_FAILED"], s)
        g = kwire.describe_group(srv.bootstrap, cell.group)
        if g["state"] not in ("Dead", "") or g["members"]:
            raise C.Fail("the refused group exists: %s" % g["state"])
    elif s == "topic-acl":
        res = rk(cell, py, m.rk_sasl("SCRAM-SHA-512", *SCRAM_USER), timeout=20)
        expect_refusal(cell, res, ["TOPIC_AUTHORIZATION_FAILED"], s)
        got = kwire.fetch_offsets(srv.bootstrap, cell.group)
        if got:
            raise C.Fail("offsets were committed: %s" % got)


def run(cell):
    """The cell function compat.py calls for every security cell."""
    cell.topic = topic_of(cell.client.name, cell.scenario)
    cell.group = group_of(cell.client.name, cell.scenario)
    kind = cell.client.secure_kind
    if cell.client.name == "secure-refusal":
        return sc_refusal(cell)
    if kind in ("debian", "wheel"):
        return sc_rk(cell, kind)
    if kind == "kcat":
        return sc_kcat(cell)
    if kind == "java":
        return sc_java(cell)
    return {"acls": sc_acls, "scram-users": sc_scram_users, "group-configs": sc_group_configs,
            "consumer-groups": sc_consumer_groups}[cell.scenario](cell)


def compare_refusals(results):
    """A note on each refusal cell: the same error on both servers, or not."""
    for (client, _scenario), by in results.items():
        k, r = by.get("kcoord"), by.get("kafka")
        if client != "secure-refusal" or not hasattr(k, "extra") or not hasattr(r, "extra"):
            continue
        a, b = k.extra.get("refusal"), r.extra.get("refusal")
        if a and b:
            k.extra["compare"] = ("the same error as Kafka" if a == b else
                                  "Kafka: %s" % b)
