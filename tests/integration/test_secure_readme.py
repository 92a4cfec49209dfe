#!/usr/bin/python3
"""test_secure_readme: the README's "A secured set-up from nothing" runs as written.

The shell blocks between the README's `<!-- secure-setup begin -->` and `<!-- secure-setup
end -->` markers are extracted and run one after the other with `bash -e -o pipefail`, in a
fresh directory, with build/kcoord as `kcoord` and Kafka's tools as `kafka-configs.sh`,
`kafka-acls.sh` and `kafka-consumer-groups.sh` (scripts/kafka-ref run-class of the same
classes) on the PATH. The only change made to the text is the port: 9093 becomes a free one.

- against kcoord: every block (kcat joins the team's group and reads to the end, the
  team's user lists that group and is refused another), then kcoord stops on SIGTERM;
- against the reference Kafka 4.4 broker (scripts/kafka-ref start --secure with the
  certificate of block 1, the same PLAIN admin and topics): the certificate, tool and
  kafka-consumer-groups blocks (not kcoord's start, and not kcat, whose librdkafka 2.0.2
  SCRAM Kafka 4 refuses), so that the commands are known to be Kafka's.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
from tests.support import kafka_ref, kcoord  # noqa: E402
import kwire  # noqa: E402

KAFKA_REF = os.path.join(ROOT, "scripts", "kafka-ref")
TOOLS = {"kafka-configs.sh": "org.apache.kafka.tools.ConfigCommand",
         "kafka-acls.sh": "org.apache.kafka.tools.AclCommand",
         "kafka-consumer-groups.sh":
         "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"}
BIN = os.environ.get("KC_TEST_BIN", os.path.join(ROOT, "build", "kcoord"))


def readme_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- secure-setup begin -->\n(.*?)<!-- secure-setup end -->", text, re.S)
    if m is None:
        raise AssertionError("README.md has no secure-setup markers")
    blocks = re.findall(r"```sh\n(.*?)```", m.group(1), re.S)
    if len(blocks) != 5:
        raise AssertionError("expected 5 sh blocks in the secured set-up, found %d"
                             % len(blocks))
    return blocks


def have_tools():
    return shutil.which(kafka_ref.java_bin()) is not None and kafka_ref.cache_complete()


@unittest.skipUnless(have_tools(), "Kafka's tools need java and the reference jars "
                     "(scripts/kafka-ref fetch; CI fetches them before make test)")
class SecureReadmeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kc-secure-readme-")
        self.bin = os.path.join(self.dir, ".bin")
        os.makedirs(self.bin)
        os.symlink(os.path.abspath(BIN), os.path.join(self.bin, "kcoord"))
        for name, cls in TOOLS.items():
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write('#!/bin/sh\nexec "%s" run-class %s "$@"\n' % (KAFKA_REF, cls))
            os.chmod(path, 0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KCOORD_")}
        self.env["PATH"] = self.bin + os.pathsep + self.env["PATH"]
        self.env["KAFKA_REF_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        self.env["KAFKA_REF_STATE"] = os.path.join(self.dir, ".kafka-ref")
        self.port = kcoord.free_port()
        self.kafka = False

    def tearDown(self):
        pid_file = os.path.join(self.dir, "kcoord.pid")
        if os.path.exists(pid_file):
            with open(pid_file) as f:
                pid = int(f.read())
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.kafka:
            subprocess.run([KAFKA_REF, "stop"], env=self.env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_block(self, i, text, port):
        text = text.replace("9093", str(port))
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=self.dir,
                           env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=180)
        self.assertEqual(p.returncode, 0, "README secured set-up, block %d failed:\n%s\n%s"
                         % (i + 1, text, p.stdout[-3000:]))
        return p.stdout

    def test_against_kcoord(self):
        blocks = readme_blocks()
        for i, b in enumerate(blocks):
            out = self.run_block(i, b, self.port)
            if i == 2:
                self.assertIn("User:payments-app", out)
            if i == 3:  # kcat: joined the group, read every partition to its end
                self.assertNotIn("ERROR", out)
            if i == 4:
                self.assertIn("payments.billing", out.split())
        with open(os.path.join(self.dir, "kcoord.pid")) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and os.path.exists("/proc/%d" % pid):
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split()[2] == "Z":
                    break
            time.sleep(0.1)
        else:
            if os.path.exists("/proc/%d" % pid):
                self.fail("kcoord did not stop within 20 s of SIGTERM")

    def test_tool_commands_against_kafka(self):
        blocks = readme_blocks()
        self.run_block(0, blocks[0], 0)
        p = subprocess.run([KAFKA_REF, "start", "--partitions", "3", "--initial-delay", "0",
                            "--heap", "512m", "--secure",
                            "--keystore", os.path.join(self.dir, "kcoord.pem"),
                            "--truststore", os.path.join(self.dir, "ca.pem"),
                            "--plain", "admin=admin-secret", "--super-user", "User:admin"],
                           env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=240)
        self.kafka = True
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        got = dict(re.findall(r"^(KAFKA_REF_\w+)=(\S+)$", p.stdout, re.M))
        res = kwire.create_topics(got["KAFKA_REF_BOOTSTRAP"],
                                  {"payments.orders": 6, "payments.refunds": 6})
        self.assertEqual({t: e[0] for t, e in res.items()},
                         {"payments.orders": 0, "payments.refunds": 0})
        port = int(got["KAFKA_REF_SASL_SSL"].rsplit(":", 1)[1])
        out = self.run_block(2, blocks[2], port)
        self.assertIn("User:payments-app", out)
        out = self.run_block(4, blocks[4], port)
        self.assertIn("GroupAuthorizationException", out)


if __name__ == "__main__":
    unittest.main()
