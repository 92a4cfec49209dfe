#!/usr/bin/python3
"""test_examples: the README's client examples work against a real kcoord.

Builds docs/examples/consumer.c with the system compiler and librdkafka, runs it against a
fresh kcoord, and checks the assignment and the committed offsets it prints; then runs the
README's kcat group consumer and waits for its assignment line.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from test_kafka_python import Kcoord


class ExamplesTest(unittest.TestCase):
    def setUp(self):
        self.k = Kcoord("topics=orders:3", "group.initial.rebalance.delay.ms=0")
        self.bootstrap = "127.0.0.1:%d" % self.k.port
        self.tmp = tempfile.mkdtemp(prefix="kc-ex-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(self.k.stop(), 0)

    def test_librdkafka_consumer_example(self):
        exe = os.path.join(self.tmp, "consumer")
        subprocess.run(["cc", "-o", exe, "docs/examples/consumer.c", "-lrdkafka"], check=True)
        out = subprocess.run([exe, self.bootstrap, "my-group", "orders"], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(sorted(l for l in lines if l.startswith("assigned")),
                         ["assigned orders [0]", "assigned orders [1]", "assigned orders [2]"])
        self.assertEqual(sorted(l for l in lines if l.startswith("committed")),
                         ["committed orders [%d] = 42" % p for p in range(3)])

    def test_kcat_group_example(self):
        proc = subprocess.Popen(["kcat", "-b", self.bootstrap, "-G", "readme-group", "orders"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        text = b""
        line = re.compile(rb"Group readme-group rebalanced \(memberid [^)]+\): assigned: (.*)\n")
        deadline = time.monotonic() + 30
        try:
            # Wait for the whole line: a read may end in the middle of it.
            while line.search(text) is None and time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stderr], [], [], 1)
                if ready:
                    chunk = os.read(proc.stderr.fileno(), 4096)
                    if not chunk:
                        break
                    text += chunk
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stderr.close()
        m = line.search(text)
        self.assertIsNotNone(m, text.decode(errors="replace"))
        self.assertEqual(m.group(1).decode().strip(), "orders [0], orders [1], orders [2]")


if __name__ == "__main__":
    unittest.main(verbosity=2)
