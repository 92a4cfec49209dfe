#!/usr/bin/python3
"""docker-smoke: build the container image from the Dockerfile and check it end to end, without
a Docker engine: podman builds it, and its root file system runs under chroot on this host.

    tests/docker/docker_smoke.py [--tag TAG] [--keep-logs]

Needs root, podman, debootstrap, chroot and Debian's python3-confluent-kafka (`scripts/deps
--docker` installs them; `make compat` runs this script after it).

  1. The base image. The Dockerfile starts from debian:bookworm-slim, which no registry here
     serves, so when no local image has that name one is made: `debootstrap --variant=minbase
     bookworm` from the Debian mirror of this machine's APT sources, without APT's lists,
     documentation and translations (as the real slim image), imported with `podman import`.
     It is kept for the next run.
  2. `podman build --isolation chroot --format docker -t TAG .` (the docker format keeps the
     HEALTHCHECK). The image size is printed.
  3. `podman create` and `podman mount` give the image's root file system. A new temporary
     directory is bind-mounted on /var/lib/kcoord (the VOLUME) and owned by the image's USER.
     The ENTRYPOINT runs as PID 1 of a new PID namespace (`unshare --pid`), as in a container,
     chrooted there as that USER, in its WORKDIR, with the image's ENV and these overrides:
     KCOORD_LISTENERS and KCOORD_ADVERTISED_LISTENERS on a free loopback port,
     KCOORD_METRICS_LISTENER on another, KCOORD_TOPICS=smoke:3 and no initial rebalance delay.
     The host's network is the container's (there is no network namespace).
  4. Once it logs that every partition is loaded, the image's HEALTHCHECK command runs in the
     same chroot with the same environment and must exit 0 within its timeout. When the binary
     has no metrics.listener setting (`kcoord --print-config` does not list it), the metrics
     variable is dropped and the health check skipped, with a NOTE.
  5. docs/examples/group_consumer.py, the consumer of the compose example (librdkafka through
     confluent-kafka), joins group `smoke` on topic smoke: all three partitions must be
     assigned to it, and it must read back the offsets it committed synchronously.
  6. The image's STOPSIGNAL, SIGTERM, to that PID 1 (which ignores any signal it has no
     handler for): kcoord must exit 0 within STOP_TIMEOUT_S seconds, the health check must then
     fail, and the data directory must hold its __consumer_offsets partitions (the VOLUME was
     used).
  7. A cluster: three more instances of the ENTRYPOINT, each PID 1 of its own PID namespace in
     the same image, with KCOORD_NODE_ID 1..3, the same KCOORD_CLUSTER_VOTERS (raft on free
     loopback ports) and KCOORD_CLUSTER_BROKERS, and its own data directory on the volume.
     group_consumer.py commits 42 through them; the node FindCoordinator names (the raft
     leader) is killed with SIGKILL; group_consumer.py must find 42 on every partition through
     the two left and commit 43; those two must exit 0 on SIGTERM with raft's state in their
     data directories.
  8. Clean-up, on every exit: the process is killed if still running, the mounts undone, the
     container removed. The images stay (TAG and the base image, and the build's layer cache);
     the image that TAG named before this build is removed.

Prints the image size and the elapsed time. Exits 0 when every step passed, 1 when a check
failed (the image does not build, ...), 2 when something around it could not be set up (not
root, a missing tool, no base image). On a failure kcoord's log is printed; --keep-logs also prints it on success.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
from tests.support import kcoord  # noqa: E402
import kwire  # noqa: E402
BASE = "debian:bookworm-slim"
SUITE = "bookworm"
TOPIC = "smoke"
PARTITIONS = 3
GROUP = "smoke"
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 5
CLIENT_TIMEOUT_S = 30
CLUSTER_NODES = (1, 2, 3)
BUILD_TIMEOUT_S = 1200


class Failure(Exception):
    """A failed check: exit 1."""


class SetupError(Exception):
    """Something around the checks failed: exit 2."""


def say(msg):
    print("docker-smoke: " + msg, flush=True)


def run(args, timeout=300, check=True, **kw):
    """Run a command, its output captured as text; a failure raises SetupError with its output."""
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise SetupError("%s: still running after %d s" % (" ".join(args), timeout))
    if check and p.returncode != 0:
        raise SetupError("%s: exit status %d\n%s" % (" ".join(args), p.returncode,
                                                    tail(p.stdout)))
    return p


def tail(text, n=40):
    return "\n".join(text.rstrip("\n").split("\n")[-n:])


# ---- 1. the base image ----------------------------------------------------------------------

def debian_mirror():
    """The first Debian archive URI of this machine's APT sources that serves SUITE, in either
    the one-line or the deb822 format; an error when none does (nothing is guessed)."""
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            f = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
            if len(f) >= 3 and f[0] == "deb" and f[2] == SUITE:
                return f[1]
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        try:
            stanzas = open(path).read().split("\n\n")
        except OSError:
            continue
        for st in stanzas:
            fields = {}
            for line in st.splitlines():
                if ":" in line and not line.startswith(("#", " ")):
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.split()
            if (SUITE in fields.get("suites", []) and "deb" in fields.get("types", [])
                    and "main" in fields.get("components", []) and fields.get("uris")):
                return fields["uris"][0]
    raise RuntimeError("no APT source of this machine serves %s: debootstrap needs one" % SUITE)


def ensure_base():
    if run(["podman", "image", "exists", BASE], check=False).returncode == 0:
        say("base image %s: cached" % BASE)
        return
    mirror = debian_mirror()
    say("base image %s: debootstrap --variant=minbase %s from %s" % (BASE, SUITE, mirror))
    tmp = tempfile.mkdtemp(prefix="kc-smoke-base-", dir="/var/tmp")
    try:
        rootfs = os.path.join(tmp, "rootfs")
        run(["debootstrap", "--variant=minbase", SUITE, rootfs, mirror], timeout=900)
        # As the real slim image: no APT lists or downloaded packages, no docs or translations.
        for pattern in ["var/lib/apt/lists/*", "var/cache/apt/*.bin",
                        "var/cache/apt/archives/*.deb",
                        "usr/share/doc/*", "usr/share/man/*", "usr/share/info/*",
                        "usr/share/locale/*", "var/log/*.log"]:
            for p in glob.glob(os.path.join(rootfs, pattern)):
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imp = run(["podman", "import", "-", BASE], stdin=tar.stdout, check=False)
        tar.stdout.close()
        if tar.wait() != 0 or imp.returncode != 0:
            raise SetupError("podman import failed:\n" + tail(imp.stdout))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- 3. the image's root file system under chroot -------------------------------------------

def image_ids(rootfs, spec):
    """The uid and gid of a USER spec (name or number, optionally :group), from the image's own
    /etc/passwd and /etc/group."""
    user, _, group = (spec or "root").partition(":")

    def lookup(path, name):
        if name.isdigit():
            return int(name), None
        for line in open(os.path.join(rootfs, path)):
            f = line.rstrip("\n").split(":")
            if f[0] == name:
                return int(f[2]), (int(f[3]) if len(f) > 3 and f[3].isdigit() else None)
        raise SetupError("USER %s: no %s in the image's /%s" % (spec, name, path))

    uid, primary = lookup("etc/passwd", user)
    if group:
        gid = lookup("etc/group", group)[0]
    elif primary is not None:
        gid = primary
    else:
        gid = uid
        for line in open(os.path.join(rootfs, "etc/passwd")):
            f = line.split(":")
            if len(f) > 3 and f[2] == str(uid):
                gid = int(f[3])
    return uid, gid


class Chroot:
    """Runs commands inside the image's root file system as its USER, in its WORKDIR."""

    def __init__(self, rootfs, config):
        self.rootfs = rootfs
        self.uid, self.gid = image_ids(rootfs, config.get("User"))
        self.workdir = config.get("WorkingDir") or "/"
        self.env = dict(e.split("=", 1) for e in config.get("Env") or [])

    def _enter(self):
        os.setsid()  # its own process group, killed whole on a timeout
        os.chroot(self.rootfs)
        os.chdir(self.workdir)
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)

    def popen(self, args, env, **kw):
        return subprocess.Popen(args, env=env, preexec_fn=self._enter, stdin=subprocess.DEVNULL,
                                **kw)

    def run(self, args, env, timeout):
        p = self.popen(args, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, _ = p.communicate()
            return None, out
        return p.returncode, out


class Daemon:
    """The ENTRYPOINT as PID 1 of a new PID namespace, as a container runs it: `unshare --pid`
    forks it, then it is chrooted into the image as its USER, in its WORKDIR. Its stderr is
    collected by a thread."""

    def __init__(self, chroot, argv, env):
        cmd = ["unshare", "--pid", "--kill-child", "chroot",
               "--userspec=%d:%d" % (chroot.uid, chroot.gid), "--groups=%d" % chroot.gid,
               chroot.rootfs, "env", "--chdir=" + chroot.workdir] + argv
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.pid = None  # kcoord's process id on this host, once known
        self.log = ""
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def children(self):
        """The host process ids of unshare's children: the namespace's PID 1, once forked."""
        path = "/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)
        try:
            return [int(c) for c in open(path).read().split()]
        except OSError as e:
            raise SetupError("cannot read %s: %s" % (path, e))

    def find_pid1(self):
        """kcoord's host process id (the one child of unshare); checks that it is PID 1 in its
        namespace."""
        children = self.children()
        if len(children) != 1:
            raise Failure("unshare has children %s, expected one" % children)
        pid = children[0]
        status = open("/proc/%d/status" % pid).read()
        nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M)
        comm = open("/proc/%d/comm" % pid).read().strip()
        if comm != "kcoord" or not nspid or nspid.group(1).split()[-1] != "1":
            raise Failure("the entrypoint is not PID 1 of its namespace (%s, NSpid %s)"
                          % (comm, nspid.group(1) if nspid else "?"))
        self.pid = pid
        return pid

    def _read(self):
        for raw in self.proc.stderr:
            with self.cv:
                self.log += raw.decode(errors="replace")
                self.cv.notify_all()

    def wait_log(self, regex, timeout):
        pat = re.compile(regex)
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pat.search(self.log):
                if self.proc.poll() is not None:
                    raise Failure("kcoord exited (status %s) before logging /%s/"
                                  % (self.proc.returncode, regex))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failure("kcoord logged no /%s/ within %d s" % (regex, timeout))
                self.cv.wait(min(left, 0.5))

    def kill(self):
        """Kill the namespace's PID 1, which kills everything in the namespace (unshare's
        --kill-child does not reach it: a change of user clears the parent-death signal), then
        unshare."""
        if self.proc.poll() is None:
            try:
                pids = self.children()
            except SetupError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)


def healthcheck_argv(check):
    test = check.get("Test") or []
    if not test or test[0] == "NONE":
        raise Failure("the image has no HEALTHCHECK")
    if test[0] == "CMD":
        return test[1:]
    if test[0] == "CMD-SHELL":
        return ["/bin/sh", "-c", test[1]]
    raise Failure("unknown HEALTHCHECK form %r" % test[0])


def run_healthcheck(chroot, check, env):
    argv = healthcheck_argv(check)
    timeout = (check.get("Timeout") or 30 * 10**9) / 1e9
    rc, out = chroot.run(argv, env, timeout)
    if rc != 0:
        raise Failure("HEALTHCHECK %s within %.0f s%s"
                      % ("did not finish" if rc is None else "exited %d" % rc, timeout,
                         ": " + out.strip() if out.strip() else ""))


# ---- 5. a librdkafka consumer ---------------------------------------------------------------

def consume_and_commit(bootstrap, offset=42, found=None):
    """docs/examples/group_consumer.py (the compose example's consumer) against the image: it
    must be assigned every partition and read its commits back (offset, on each); with found,
    it must first find that offset committed on each. Returns its output lines."""
    script = os.path.join(ROOT, "docs", "examples", "group_consumer.py")
    try:
        p = subprocess.run([sys.executable, script, bootstrap, GROUP, TOPIC, str(offset)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=CLIENT_TIMEOUT_S + 60)
    except subprocess.TimeoutExpired:
        raise Failure("group_consumer.py still running after %d s" % (CLIENT_TIMEOUT_S + 60))
    lines = p.stdout.splitlines()
    want = (["assigned %s [%d]" % (TOPIC, i) for i in range(PARTITIONS)] +
            ["committed %s [%d] = %d" % (TOPIC, i, offset) for i in range(PARTITIONS)])
    kinds = ("assigned ", "committed ")
    if found is not None:
        want += ["found %s [%d] = %s" % (TOPIC, i, found) for i in range(PARTITIONS)]
        kinds += ("found ",)
    got = sorted(l for l in lines if l.startswith(kinds))
    if p.returncode != 0 or got != sorted(want):
        raise Failure("group_consumer.py: exit status %d, output:\n%s"
                      % (p.returncode, p.stdout.rstrip("\n")))
    return got


# ---- 7. a cluster of three containers -------------------------------------------------------

def find_leader(ports):
    """The node id FindCoordinator names for GROUP when every node (ports: {id: Kafka port})
    names the same one; nodes that answer NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (no leader
    known yet) or disagree are asked again until START_TIMEOUT_S, then it is a failure."""
    by_port = {p: n for n, p in ports.items()}
    deadline = time.monotonic() + START_TIMEOUT_S
    named = {}
    while time.monotonic() < deadline:
        named = {}
        for n, port in ports.items():
            try:
                addr = kwire.find_coordinator("127.0.0.1:%d" % port, GROUP)
            except kwire.KwireError as e:  # KwireRetry too: no leader yet
                named[n] = str(e)
                continue
            named[n] = by_port.get(int(addr.rsplit(":", 1)[1]), addr)
        if len(set(named.values())) == 1 and isinstance(named[min(named)], int):
            return named[min(named)]
        time.sleep(0.2)
    raise Failure("the nodes named no common coordinator within %d s: %s"
                  % (START_TIMEOUT_S, named))


def smoke_cluster(chroot, entrypoint, base_env, state):
    """Three instances of the ENTRYPOINT, each as PID 1 of its own PID namespace with its own
    data directory on the volume, as the nodes of a raft cluster on loopback (libraft from the
    image). A consumer commits through them; the leader is killed (SIGKILL); the consumer must
    find its commits on the two left and commit again; they must exit 0 on SIGTERM."""
    ports = kcoord.free_ports(6)
    kafka = dict(zip(CLUSTER_NODES, ports[:3]))
    raft = dict(zip(CLUSTER_NODES, ports[3:]))
    voters = ",".join("%d@127.0.0.1:%d" % (n, raft[n]) for n in CLUSTER_NODES)
    brokers = ",".join("%d@127.0.0.1:%d" % (n, kafka[n]) for n in CLUSTER_NODES)
    nodes = {}
    for n in CLUSTER_NODES:
        env = dict(base_env)
        env.pop("KCOORD_METRICS_LISTENER", None)
        env.update({"KCOORD_NODE_ID": str(n), "KCOORD_CLUSTER_VOTERS": voters,
                    "KCOORD_CLUSTER_BROKERS": brokers,
                    "KCOORD_LISTENERS": "127.0.0.1:%d" % kafka[n],
                    "KCOORD_ADVERTISED_LISTENERS": "127.0.0.1:%d" % kafka[n],
                    "KCOORD_DATA_DIR": "/var/lib/kcoord/node%d" % n})
        if state["metrics"]:
            env["KCOORD_METRICS_LISTENER"] = ""
        nodes[n] = Daemon(chroot, entrypoint, env)
        state["cluster"].append(nodes[n])
    for n, d in nodes.items():
        d.wait_log(r"listening on", START_TIMEOUT_S)
        d.find_pid1()
    leader = find_leader(kafka)
    bootstrap = ",".join("127.0.0.1:%d" % kafka[n] for n in CLUSTER_NODES)
    consume_and_commit(bootstrap, 42, "none")
    if find_leader(kafka) != leader:
        raise Failure("the leader changed while the cluster was undisturbed")
    say("cluster of 3: committed through node %d, the leader; killing it" % leader)
    nodes[leader].kill()
    t = time.monotonic()
    consume_and_commit(bootstrap, 43, "42")
    say("cluster: the consumer found its commits and committed again %.1f s after the kill"
        % (time.monotonic() - t))
    for n, d in nodes.items():
        if n != leader:
            os.kill(d.pid, signal.SIGTERM)
    for n, d in nodes.items():
        if n == leader:
            continue
        try:
            rc = d.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure("cluster node %d still running %d s after SIGTERM" % (n, STOP_TIMEOUT_S))
        if rc != 0:
            raise Failure("cluster node %d exited with status %d on SIGTERM" % (n, rc))
        if not os.path.isdir(os.path.join(state["data"], "node%d" % n, "raft")):
            raise Failure("cluster node %d kept no raft state in its data directory" % n)


# ---- the run --------------------------------------------------------------------------------

def smoke(args, state):
    ensure_base()

    say("podman build --isolation chroot -t %s ." % args.tag)
    old = run(["podman", "image", "inspect", "--format", "{{.Id}}", args.tag], check=False)
    t = time.monotonic()
    p = run(["podman", "build", "--isolation", "chroot", "--pull=never", "--format", "docker",
             "-t", args.tag, ROOT], timeout=BUILD_TIMEOUT_S, check=False)
    if p.returncode != 0:
        raise Failure("podman build failed:\n" + tail(p.stdout))
    say("built in %.1f s" % (time.monotonic() - t))
    info = json.loads(run(["podman", "image", "inspect", args.tag]).stdout)[0]
    if old.returncode == 0 and old.stdout.strip() not in ("", info["Id"]):
        # The image this build replaced under the same name; layers still in use stay.
        run(["podman", "rmi", old.stdout.strip()], check=False)
    state["size"] = int(info["Size"])
    say("image size: %d bytes (%.1f MB)" % (state["size"], state["size"] / 1e6))
    config = info.get("Config") or {}
    check = info.get("Healthcheck") or config.get("Healthcheck") or {}
    entrypoint = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
    if not entrypoint:
        raise Failure("the image has no ENTRYPOINT or CMD")
    if "/var/lib/kcoord" not in (config.get("Volumes") or {}):
        raise Failure("the image declares no VOLUME /var/lib/kcoord")
    if config.get("User") in (None, "", "root", "0", "0:0"):
        raise Failure("the image runs as root (USER %r)" % config.get("User"))
    stop_signal = signal.Signals[config.get("StopSignal") or "SIGTERM"]
    if stop_signal != signal.SIGTERM:
        raise Failure("the image's STOPSIGNAL is %s, not SIGTERM" % stop_signal.name)

    name = "kcoord-smoke-%d" % os.getpid()
    state["container"] = run(["podman", "create", "--name", name, args.tag]).stdout.strip()
    rootfs = run(["podman", "mount", state["container"]]).stdout.strip().splitlines()[-1]
    state["mounted"] = True
    chroot = Chroot(rootfs, config)

    data = tempfile.mkdtemp(prefix="kc-smoke-data-")
    state["data"] = data
    os.chown(data, chroot.uid, chroot.gid)
    vol = os.path.join(rootfs, "var/lib/kcoord")
    os.makedirs(vol, exist_ok=True)
    run(["mount", "--bind", data, vol])
    state["binds"].append(vol)

    port, mport = kcoord.free_ports(2)
    env = dict(chroot.env)
    env.update({"KCOORD_LISTENERS": "127.0.0.1:%d" % port,
                "KCOORD_ADVERTISED_LISTENERS": "127.0.0.1:%d" % port,
                "KCOORD_METRICS_LISTENER": "127.0.0.1:%d" % mport,
                "KCOORD_TOPICS": "%s:%d" % (TOPIC, PARTITIONS),
                "KCOORD_GROUP_INITIAL_REBALANCE_DELAY_MS": "0"})

    # Does this build have the metrics listener? Ask without the variable, which an older
    # binary refuses as an unknown setting.
    probe_env = {k: v for k, v in env.items() if k != "KCOORD_METRICS_LISTENER"}
    rc, out = chroot.run(entrypoint + ["--print-config"], probe_env, 10)
    if rc != 0:
        raise Failure("ENTRYPOINT --print-config: %s\n%s"
                      % ("still running after 10 s" if rc is None else "exit status %d" % rc,
                         out.rstrip("\n")))
    metrics = re.search(r"^metrics\.listener=", out, re.M) is not None
    state["metrics"] = metrics
    if not metrics:
        env = probe_env
        say("NOTE: this kcoord has no metrics.listener setting yet: KCOORD_METRICS_LISTENER is "
            "left out and the HEALTHCHECK step is skipped")

    say("starting %s in the image as %d:%d, listening on 127.0.0.1:%d"
        % (" ".join(entrypoint), chroot.uid, chroot.gid, port))
    d = Daemon(chroot, entrypoint, env)
    state["daemon"] = d
    d.wait_log(r"all \d+ partitions loaded", START_TIMEOUT_S)
    say("serving; kcoord is PID 1 of its own PID namespace (host pid %d)" % d.find_pid1())

    if metrics:
        run_healthcheck(chroot, check, env)
        say("HEALTHCHECK passed (metrics listener 127.0.0.1:%d)" % mport)

    consume_and_commit("127.0.0.1:%d" % port)
    say("docs/examples/group_consumer.py in group %s: assigned %s [0..%d], committed, read back"
        % (GROUP, TOPIC, PARTITIONS - 1))

    os.kill(d.pid, stop_signal)  # what `docker stop` does: the STOPSIGNAL to PID 1
    t = time.monotonic()
    try:
        rc = d.proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Failure("kcoord still running %d s after SIGTERM" % STOP_TIMEOUT_S)
    if rc != 0:
        raise Failure("kcoord exited with status %d on SIGTERM" % rc)
    say("SIGTERM: exit status 0 after %.2f s" % (time.monotonic() - t))
    if metrics:
        rc, _ = chroot.run(healthcheck_argv(check), env, 10)
        if rc == 0:
            raise Failure("the HEALTHCHECK passes with kcoord stopped")
    if not glob.glob(os.path.join(data, "__consumer_offsets-*")):
        raise Failure("the data directory on /var/lib/kcoord holds no __consumer_offsets-*")

    smoke_cluster(chroot, entrypoint, env, state)


def cleanup(state):
    for d in state["cluster"] + [state.get("daemon")]:
        if d is not None:
            d.kill()
    for path in reversed(state["binds"]):
        run(["umount", path], check=False)
    if state.get("mounted"):
        run(["podman", "umount", state["container"]], check=False)
    if state.get("container"):
        run(["podman", "rm", "-f", state["container"]], check=False)
    if state.get("data"):
        shutil.rmtree(state["data"], ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tag", default="kcoord:smoke", help="the image's name (default %(default)s)")
    ap.add_argument("--keep-logs", action="store_true", help="print kcoord's log on success too")
    args = ap.parse_args()

    if os.geteuid() != 0:
        say("needs root (podman build, mount, chroot)")
        return 2
    missing = [t for t in ("podman", "debootstrap", "tar", "mount", "unshare", "chroot")
               if shutil.which(t) is None]
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        missing.append("python3-confluent-kafka")
    if missing:
        say("missing: %s (scripts/deps --docker installs them)" % " ".join(missing))
        return 2

    start = time.monotonic()
    state = {"binds": [], "cluster": []}
    rc = 0
    try:
        smoke(args, state)
    except Failure as e:
        say("FAILED: %s" % e)
        rc = 1
    except SetupError as e:
        say("setup failed: %s" % e)
        rc = 2
    finally:
        d = state.get("daemon")
        cleanup(state)
        if d is not None and (rc != 0 or args.keep_logs):
            print("---- kcoord log\n" + d.log.rstrip("\n"), flush=True)
        for i, c in enumerate(state["cluster"]):
            if rc != 0 or args.keep_logs:
                print("---- cluster node %d log\n%s" % (i + 1, c.log.rstrip("\n")), flush=True)
    size = state.get("size")
    say("%s in %.1f s, image size %s"
        % ("passed" if rc == 0 else "failed", time.monotonic() - start,
           "%.1f MB" % (size / 1e6) if size else "unknown"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
