#!/usr/bin/python3
"""test_data_dir: a data.dir kcoord cannot write stops start-up, naming data.dir and the error.

Kafka refuses to start when its only log directory is offline; kcoord used to start with every
partition failed, answer /healthz 200 and serve nothing. Each case starts build/kcoord (or
$KC_TEST_BIN) on a free port (listeners port 0, no metrics listener) and requires it to exit
with a non-zero status within EXIT_TIMEOUT_S, with an ERROR line naming data.dir and the
operating system's reason:

- data.dir under a regular file (the directory cannot be created: ENOTDIR), as any user;
- data.dir an existing directory, written by an earlier kcoord (meta.properties and partition
  directories in it), that has become read-only: as root (which ignores permission bits) a
  tmpfs remounted read-only (EROFS); as another user the directory's mode 0555 (EACCES).

Then the same directory made writable again serves: kcoord starts and logs that every partition
loaded. Every wait is bounded and for an event; every process and mount is cleaned up.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support import kcoord  # noqa: E402

EXIT_TIMEOUT_S = 20
START_TIMEOUT_S = 30
PARTITIONS = 3


SETS = ("metrics.listener=", "offsets.topic.num.partitions=%d" % PARTITIONS)


def run_to_exit(data_dir):
    """Start kcoord and wait (bounded) for it to exit: (status, stderr). A kcoord still running
    after EXIT_TIMEOUT_S is killed and reported as status None."""
    p = subprocess.Popen(kcoord.args(data_dir, *SETS), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=kcoord.quiet_env())
    try:
        _, err = p.communicate(timeout=EXIT_TIMEOUT_S)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        return None, err


class DataDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kc-datadir-")
        self.mounted = None
        self.daemons = []

    def tearDown(self):
        for d in self.daemons:
            d.stop(timeout=EXIT_TIMEOUT_S)
        if self.mounted:
            subprocess.run(["umount", self.mounted], check=False)
        os.chmod(self.tmp, 0o755)
        for root, dirs, _ in os.walk(self.tmp):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assert_refused(self, data_dir, reason):
        status, err = run_to_exit(data_dir)
        self.assertIsNotNone(status, "kcoord kept running on an unwritable data.dir:\n" + err)
        self.assertNotEqual(status, 0, err)
        lines = [l for l in err.splitlines() if "ERROR" in l and "data.dir" in l]
        self.assertTrue(lines, "no ERROR line naming data.dir:\n" + err)
        self.assertIn(data_dir, lines[0])
        self.assertIn(reason, lines[0])

    def serve_once(self, data_dir):
        """Start kcoord on data_dir, wait until every partition loaded, stop it (status 0)."""
        d = kcoord.Kcoord(data_dir, *SETS, wait_port=False, wait_loaded=False)
        self.daemons.append(d)
        self.assertTrue(d.wait_match(re.escape("all %d partitions loaded" % PARTITIONS),
                                     START_TIMEOUT_S), d.output())
        self.assertEqual(d.stop(timeout=EXIT_TIMEOUT_S), 0, d.output())
        self.assertNotIn(" ERROR ", d.output())

    def test_data_dir_under_a_file(self):
        f = os.path.join(self.tmp, "file")
        with open(f, "w") as out:
            out.write("not a directory\n")
        self.assert_refused(os.path.join(f, "data"), "Not a directory")
        self.assert_refused(f, "Not a directory")

    def test_read_only_data_dir(self):
        data = os.path.join(self.tmp, "data")
        os.mkdir(data)
        if os.geteuid() == 0:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", data], check=True)
            self.mounted = data
        self.serve_once(data)  # meta.properties and the partition directories exist now
        self.assertTrue(os.path.exists(os.path.join(data, "meta.properties")))
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,ro", data], check=True)
            self.assert_refused(data, "Read-only file system")
            subprocess.run(["mount", "-o", "remount,rw", data], check=True)
        else:
            os.chmod(data, 0o555)
            self.assert_refused(data, "Permission denied")
            os.chmod(data, 0o755)
        self.serve_once(data)  # writable again: it serves


if __name__ == "__main__":
    unittest.main(verbosity=2)
