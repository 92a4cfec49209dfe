"""cluster: a kcoord cluster under test (3 or 5 nodes of raft), its faults and a raw committer.

Cluster(n, "name=value", ...) gives every node its own data directory, a Kafka port and a raft
port picked free beforehand (127.0.0.1), and the same cluster.voters and cluster.brokers; start()
starts them all. Each node runs as a tests.support Kcoord (one per incarnation; every
incarnation's output also goes to <root>/node-N.log, which survives for a failure's report).
With a NetLab the nodes run in network namespaces of their own instead (see NetLab).

    with Cluster(3, "topics=t:4") as c:
        c.start()
        leader = c.wait_leader()             # every live node's FindCoordinator names it
        c.wait_serving(leader)               # it answers group requests (error 0)
        c.kill(leader)                       # kill -9; also pause/resume (SIGSTOP/SIGCONT)
        c.restart(leader, empty=True)        # start it again, optionally on an empty data dir

close() (and leaving the with block) kills every node it started and removes the directories
(unless keep=True). Committer is the raw committer of the reliability tests: threads commit
increasing offsets through whichever node FindCoordinator names, record every commit answered
with error 0, and check() asks OffsetFetch for all of them afterwards.

Kafka error codes the cluster answers with are named here: NOT_COORDINATOR (16),
COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14).
"""
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from tests.support import calls, kcoord, wire
from tests.support.calls import OFFSET_COMMIT, commit_errors

NONE = 0
NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT = 6, 7
DUPLICATE_VOTER, VOTER_NOT_FOUND = 126, 127
LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
IO_TIMEOUT_S = 3
START_TIMEOUT_S = 30
LEADER_TIMEOUT_S = 30

# What a request to a node that dies, stops or is cut off raises (a closed connection is an
# EOFError in wire.Conn).
NET_ERRORS = (OSError, EOFError, wire.WireError)


class NodeCrashed(AssertionError):
    """A node that was not killed here has exited: node (its id) and status."""

    def __init__(self, msg, node, status):
        super().__init__(msg)
        self.node = node
        self.status = status

LEADER_LINE = r"cluster: leader is node (-?\d+) \(term (\d+)\)"
SERVES_LINE = r"cluster: node (\d+) serves as the leader \(term (\d+)\)"


def uuid_bytes(text):
    """A Kafka Uuid's 22 characters of URL-safe base64 as its 16 bytes."""
    import base64
    return base64.urlsafe_b64decode(text + "==")


def ask_at(node, api, version, io_timeout=IO_TIMEOUT_S, **fields):
    """One request to node (its Kafka listener) on a connection of its own: the answer."""
    with wire.Conn(node.kport, "kc-cluster", host=node.host, timeout=io_timeout) as c:
        return c.ask(api, version, **fields)


def find_coordinator(host, port, key, timeout=IO_TIMEOUT_S):
    """FindCoordinator v3 of group `key` on host:port: (error, node id, host, port)."""
    with wire.Conn(port, "kc-cluster", host=host, timeout=timeout) as c:
        r = c.ask("FindCoordinator", 3, key=key, key_type=0)
        return r.error_code, r.node_id, r.host, r.port


def metadata(host, port, timeout=IO_TIMEOUT_S):
    """Metadata v1 with no topics: (controller id, {node id: (host, port)})."""
    with wire.Conn(port, "kc-cluster", host=host, timeout=timeout) as c:
        r = c.ask("Metadata", 1, topics=[])
        return r.controller_id, {b.node_id: (b.host, b.port) for b in r.brokers}


def offset_fetch(conn, group, topic, partitions):
    """OffsetFetch v7 of one topic's partitions on conn: (top error, {partition: (error, offset,
    metadata)})."""
    r = conn.ask("OffsetFetch", 7, group_id=group,
                 topics=[dict(name=topic, partition_indexes=list(partitions))],
                 require_stable=False)
    out = {}
    for t in r.topics:
        for p in t.partitions:
            out[p.partition_index] = (p.error_code, p.committed_offset, p.metadata)
    return r.error_code, out


class Node:
    """One node of a Cluster: its id, addresses, data directory and current process (None
    while it is down)."""

    def __init__(self, node_id, host, kport, rport, data_dir, log_path, netns=None):
        self.id = node_id
        self.host = host
        self.kport = kport
        self.rport = rport
        self.data_dir = data_dir
        self.log_path = log_path
        self.netns = netns
        self.joining = False  # added at runtime: cluster.bootstrap=false, the cluster's id
        self.proc = None
        self.paused = False
        self.runs = []

    @property
    def up(self):
        """Running and not stopped by SIGSTOP."""
        return self.proc is not None and self.proc.proc.poll() is None and not self.paused

    @property
    def alive(self):
        return self.proc is not None and self.proc.proc.poll() is None

    def output(self):
        """Every incarnation's output."""
        return "".join(r.output() for r in self.runs)


class Cluster:
    """n kcoord nodes (ids 1..n) forming one raft cluster. sets are added to every node's
    command line; root is where the data directories and logs go (a new temporary directory,
    removed by close() unless keep). netlab: a NetLab whose namespaces the nodes run in.
    raft_host: a host name for every node's raft address in cluster.voters (they resolve it).
    """

    def __init__(self, n=3, *sets, root=None, keep=False, netlab=None, binary=None,
                 raft_host=None):
        self.n = n
        self.sets = list(sets)
        self.own_root = root is None
        self.root = root or tempfile.mkdtemp(prefix="kc-cluster-")
        self.keep = keep
        self.netlab = netlab
        self.binary = binary
        self.nodes = {}
        if netlab is None:
            ports = kcoord.free_ports(2 * n)
            for i in range(1, n + 1):
                self.nodes[i] = Node(i, "127.0.0.1", ports[2 * i - 2], ports[2 * i - 1],
                                     os.path.join(self.root, "node-%d" % i),
                                     os.path.join(self.root, "node-%d.log" % i))
        else:
            for i in range(1, n + 1):
                self.nodes[i] = Node(i, netlab.ip(i), 9092, 9093,
                                     os.path.join(self.root, "node-%d" % i),
                                     os.path.join(self.root, "node-%d.log" % i),
                                     netns=netlab.ns(i))
        # raft_host: the name every node's raft address gives instead of its address
        self.voters = ",".join("%d@%s:%d" % (x.id, raft_host or x.host, x.rport)
                               for x in self.nodes.values())
        self.brokers = ",".join("%d@%s:%d" % (x.id, x.host, x.kport)
                                for x in self.nodes.values())

    # ---- processes ----

    def node_sets(self, node):
        voters, brokers, extra = self.voters, self.brokers, []
        if node.joining:
            # A node added at runtime knows the cluster's founding voters and itself; it does
            # not form a cluster of its own, and it names the cluster's id.
            if not any(v.split("@")[0] == str(node.id) for v in voters.split(",")):
                voters += ",%d@%s:%d" % (node.id, node.host, node.rport)
                brokers += ",%d@%s:%d" % (node.id, node.host, node.kport)
            extra = ["cluster.bootstrap=false", "cluster.id=" + self.cluster_id()]
        return ["node.id=%d" % node.id, "listeners=%s:%d" % (node.host, node.kport),
                "cluster.voters=" + voters, "cluster.brokers=" + brokers,
                "metrics.listener=127.0.0.1:0"] + extra + self.sets

    def cluster_id(self):
        """The cluster's id, from a node's meta.properties."""
        for node in self.nodes.values():
            path = os.path.join(node.data_dir, "meta.properties")
            if os.path.exists(path):
                with open(path) as f:
                    for line in f:
                        if line.startswith("cluster.id="):
                            return line.split("=", 1)[1].strip()
        raise AssertionError("no node has a meta.properties yet")

    def directory_id(self, i):
        """Node i's directory id (its meta.properties' directory.id)."""
        with open(os.path.join(self.nodes[i].data_dir, "meta.properties")) as f:
            for line in f:
                if line.startswith("directory.id="):
                    return line.split("=", 1)[1].strip()
        raise AssertionError("node %d's meta.properties has no directory.id" % i)

    def add_node(self):
        """A new node (the next id, free ports on 127.0.0.1), not started: it joins the running
        cluster once started and added (AddRaftVoter)."""
        assert self.netlab is None, "add_node runs on loopback"
        i = max(self.nodes) + 1
        kport, rport = kcoord.free_ports(2)
        node = Node(i, "127.0.0.1", kport, rport, os.path.join(self.root, "node-%d" % i),
                    os.path.join(self.root, "node-%d.log" % i))
        node.joining = True
        self.nodes[i] = node
        return node

    def node_env(self, node):
        """Variables added to node's environment at each start of it, called just before (after
        an emptying): none here; a subclass may add some."""
        return {}

    def start(self):
        """Start every node (without waiting for a leader)."""
        for i in self.nodes:
            self.start_node(i)

    def start_node(self, i, empty=False):
        """Start node i (down), on an emptied data directory when empty; waits for its Kafka
        port."""
        node = self.nodes[i]
        assert node.proc is None or not node.alive, "node %d still runs" % i
        if empty:
            shutil.rmtree(node.data_dir, ignore_errors=True)
        os.makedirs(node.data_dir, exist_ok=True)
        pre = self.netlab.preexec(i) if self.netlab is not None else None
        node.paused = False
        node.proc = kcoord.Kcoord(node.data_dir, *self.node_sets(node), env=self.node_env(node),
                                  wait_loaded=False, wait_port=False, binary=self.binary,
                                  preexec_fn=pre, log_path=node.log_path)
        node.runs.append(node.proc)
        node.proc.wait_line(r"listening on %s:%d" % (re.escape(node.host), node.kport),
                            START_TIMEOUT_S)
        return node

    def kill(self, i, sig=signal.SIGKILL):
        """Kill node i (kill -9 unless told), reaped; it is down afterwards. Returns its exit
        status (negative: the signal that ended it; -9 also when it did not end within
        STOP_TIMEOUT_S of sig), None when it was down already."""
        node = self.nodes[i]
        rc = None
        if node.proc is not None:
            if node.paused and sig != signal.SIGKILL:
                os.kill(node.proc.proc.pid, signal.SIGCONT)
            rc = node.proc.stop(sig)
        node.proc = None
        node.paused = False
        return rc

    def pause(self, i):
        """SIGSTOP node i."""
        node = self.nodes[i]
        os.kill(node.proc.proc.pid, signal.SIGSTOP)
        node.paused = True

    def resume(self, i):
        """SIGCONT node i."""
        node = self.nodes[i]
        os.kill(node.proc.proc.pid, signal.SIGCONT)
        node.paused = False

    def restart(self, i, empty=False):
        """kill -9 node i if it runs, then start it again (on an emptied data dir when empty)."""
        self.kill(i)
        return self.start_node(i, empty=empty)

    def close(self):
        """Kill every node, remove the directories (unless keep)."""
        for i in list(self.nodes):
            try:
                self.kill(i)
            except Exception:  # noqa: BLE001 - the others must go too
                pass
        if self.own_root and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def logs(self, tail=60):
        """The last lines of every node's output (all incarnations), for a failure report."""
        out = []
        for node in self.nodes.values():
            lines = node.output().splitlines()[-tail:]
            out.append("---- node %d ----\n%s" % (node.id, "\n".join(lines)))
        return "\n".join(out)

    # ---- membership ----

    def leader_call(self, what, fn, timeout=LEADER_TIMEOUT_S, ignore=()):
        """fn(leader node) until it returns an error code other than NOT_LEADER_OR_FOLLOWER or
        REQUEST_TIMED_OUT (a leader moving, a change still in flight); that code."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                lead = self.wait_leader(max(1.0, deadline - time.monotonic()), ignore=ignore)
                last = fn(self.nodes[lead])
                if last not in (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT):
                    return last
            except NET_ERRORS as e:
                last = e
            time.sleep(0.1)
        raise AssertionError("%s: no answer but %r within %d s" % (what, last, timeout))

    def replace_wiped(self, i, old_dir_id, timeout=LEADER_TIMEOUT_S):
        """Node i (down) lost its data directory: as the README says, remove it from the
        cluster (its old directory id), start it on an empty directory as a node that joins
        (cluster.bootstrap=false, the cluster's id) and add it again (its new directory id),
        through whichever node leads; returns once the leader lists it as a voter."""
        node = self.nodes[i]
        assert node.proc is None, "node %d still runs" % i
        old = uuid_bytes(old_dir_id)
        err = self.leader_call("RemoveRaftVoter %d" % i, lambda n: ask_at(
            n, "RemoveRaftVoter", 0, cluster_id=None, voter_id=i,
            voter_directory_id=old).error_code, timeout, ignore=(i,))
        if err not in (0, VOTER_NOT_FOUND):  # not found: an earlier try removed it
            raise AssertionError("RemoveRaftVoter %d: error %d" % (i, err))
        node.joining = True
        self.start_node(i, empty=True)
        node.proc.wait_line(r"is not in a cluster yet", START_TIMEOUT_S)
        new = uuid_bytes(self.directory_id(i))
        listeners = [dict(name="CONTROLLER", host=node.host, port=node.rport),
                     dict(name="PLAINTEXT", host=node.host, port=node.kport)]
        err = self.leader_call("AddRaftVoter %d" % i, lambda n: ask_at(
            n, "AddRaftVoter", 1, io_timeout=timeout, cluster_id=None,
            timeout_ms=int(timeout * 1000), voter_id=i, voter_directory_id=new,
            listeners=listeners, ack_when_committed=True).error_code, timeout, ignore=(i,))
        if err not in (0, DUPLICATE_VOTER):  # duplicate: an earlier try added it
            raise AssertionError("AddRaftVoter %d: error %d" % (i, err))

    # ---- leadership ----

    def check_alive(self):
        """Raise AssertionError when a node that was not killed here has exited (a crash),
        with the end of its output."""
        for node in self.nodes.values():
            if node.proc is not None and node.proc.proc.poll() is not None:
                lines = node.proc.output().splitlines()[-15:]
                raise NodeCrashed("node %d exited by itself (status %s); its last lines:\n%s"
                                  % (node.id, node.proc.proc.returncode, "\n".join(lines)),
                                  node.id, node.proc.proc.returncode)

    def up(self):
        """The ids of the nodes running and not paused."""
        return [i for i, x in self.nodes.items() if x.up]

    def coordinator_seen_by(self, i, key="kc-probe"):
        """What node i's FindCoordinator says: (error, node id), (None, None) when it cannot be
        asked."""
        node = self.nodes[i]
        try:
            err, nid, _, _ = find_coordinator(node.host, node.kport, key)
            return err, nid
        except NET_ERRORS:
            return None, None

    def wait_leader(self, timeout=LEADER_TIMEOUT_S, exclude=(), ignore=(), key="kc-probe"):
        """Wait until every running node (but those in ignore, which clients cannot reach or
        which cannot reach the others) has FindCoordinator name the same running node (not in
        exclude) with error 0, and return its id."""
        deadline = time.monotonic() + timeout
        seen = {}
        while time.monotonic() < deadline:
            self.check_alive()
            seen = {i: self.coordinator_seen_by(i, key) for i in self.up() if i not in ignore}
            ids = {nid for err, nid in seen.values() if err == NONE}
            if (seen and len(ids) == 1 and all(err == NONE for err, _ in seen.values())):
                leader = ids.pop()
                if leader in self.nodes and self.nodes[leader].up and leader not in exclude:
                    return leader
            time.sleep(0.05)
        raise AssertionError("no agreed leader within %d s: %s\n%s"
                             % (timeout, seen, self.logs()))

    def wait_serving(self, i, timeout=LEADER_TIMEOUT_S, group="kc-probe", topic="kc-probe"):
        """Wait until node i answers OffsetFetch of group with error 0 (a leader that has
        applied everything before its term); returns the seconds it took."""
        node = self.nodes[i]
        start = time.monotonic()
        deadline = start + timeout
        last = None
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                with wire.Conn(node.kport, "kc-cluster", host=node.host,
                               timeout=IO_TIMEOUT_S) as c:
                    last, _ = offset_fetch(c, group, topic, [0])
                    if last == NONE:
                        return time.monotonic() - start
            except NET_ERRORS as e:
                last = e
            time.sleep(0.05)
        raise AssertionError("node %d does not serve within %d s (last: %s)\n%s"
                             % (i, timeout, last, self.logs()))

    def term(self, i):
        """The last term node i logged a leader for (its current incarnation), None if none."""
        node = self.nodes[i]
        found = re.findall(LEADER_LINE, node.proc.output()) if node.proc else []
        return int(found[-1][1]) if found else None

    def leader_logged(self, i):
        """The last leader node i logged (its current incarnation), None if none."""
        node = self.nodes[i]
        found = re.findall(LEADER_LINE, node.proc.output()) if node.proc else []
        return int(found[-1][0]) if found else None


class NetLab:
    """Network namespaces for n nodes, each with one veth into a bridge in the root namespace
    (which has the address .254 of the subnet, so clients in the root namespace reach every
    node): node i is <subnet>.i in namespace kcc<tag>-i. Nothing is routed anywhere else.
    Root only. Faults: isolate(i)/heal(i) (its link down/up), block(i, peers, direction) and
    unblock(i) (an nftables table in node i's namespace dropping what it sends to or receives
    from peers: a one-way cut).
    close() removes every namespace, veth and the bridge; it is safe to call twice."""

    CLONE_NEWNET = 0x40000000

    def __init__(self, n, subnet="10.217.117", tag=None):
        self.n = n
        self.subnet = subnet
        self.tag = tag or str(os.getpid() % 100000)
        self.bridge = "kcb" + self.tag
        self.made = []  # ("route" | "ns" | "link", name), removed in reverse order
        self.kept_route = None
        self.libc = ctypes.CDLL(None, use_errno=True)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def ns(self, i):
        return "kcc%s-%d" % (self.tag, i)

    def veth(self, i):
        return "kcv%s-%d" % (self.tag, i)

    def ip(self, i):
        return "%s.%d" % (self.subnet, i)

    def _run(self, *cmd):
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _subnet_taken(self):
        taken = subprocess.run(["ip", "-4", "route", "show", "table", "all", "match",
                                self.subnet + ".1"], stdout=subprocess.PIPE, text=True,
                               check=True).stdout
        return re.search(r"^(blackhole )?%s\.0/24" % re.escape(self.subnet), taken, re.M)

    def _setup(self):
        # A run just before this one removes its blackhole route from a detached process
        # shortly after it exits (release_later): give that a few seconds.
        deadline = time.monotonic() + 5
        while self._subnet_taken() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._subnet_taken():
            raise RuntimeError("%s.0/24 is in use on this machine (another run's namespaces? "
                               "`ip netns list`, `ip route`)" % self.subnet)
        # A blackhole under the bridge's own route: once the bridge is gone, a client still
        # trying a node's address gets an error here instead of going out the default route.
        self._run("ip", "route", "add", "blackhole", self.subnet + ".0/24", "metric", "4242")
        self.made.append(("route", self.subnet + ".0/24"))
        self._run("ip", "link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", self.bridge))
        self._run("ip", "addr", "add", "%s.254/24" % self.subnet, "dev", self.bridge)
        self._run("ip", "link", "set", self.bridge, "up")
        for i in range(1, self.n + 1):
            ns, veth = self.ns(i), self.veth(i)
            self._run("ip", "netns", "add", ns)
            self.made.append(("ns", ns))
            self._run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
                      "netns", ns)
            self.made.append(("link", veth))
            self._run("ip", "link", "set", veth, "master", self.bridge, "up")
            self._run("ip", "-n", ns, "addr", "add", "%s/24" % self.ip(i), "dev", "eth0")
            self._run("ip", "-n", ns, "link", "set", "eth0", "up")
            self._run("ip", "-n", ns, "link", "set", "lo", "up")

    def preexec(self, i):
        """A preexec_fn that moves the child into node i's namespace before exec."""
        path = "/run/netns/" + self.ns(i)
        libc, flag = self.libc, self.CLONE_NEWNET

        def enter():
            fd = os.open(path, os.O_RDONLY)
            if libc.setns(fd, flag) != 0:
                os._exit(126)
            os.close(fd)
        return enter

    def isolate(self, i):
        self._run("ip", "link", "set", self.veth(i), "down")

    def heal(self, i):
        self._run("ip", "link", "set", self.veth(i), "up")

    def block(self, i, peers, direction="out"):
        """A one-way cut in node i's namespace: "out" drops everything it sends to the nodes
        `peers` (they still reach it), "in" everything it receives from them (it still reaches
        them)."""
        ns = self.ns(i)
        hook, field = ("output", "daddr") if direction == "out" else ("input", "saddr")
        rules = ("table inet kcchaos {\n chain cut {\n  type filter hook %s priority 0;\n"
                 "  ip %s { %s } drop\n }\n}\n"
                 % (hook, field, ", ".join(self.ip(p) for p in peers)))
        subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=rules.encode(),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def unblock(self, i):
        subprocess.run(["ip", "netns", "exec", self.ns(i), "nft", "delete", "table", "inet",
                        "kcchaos"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self, keep_blackhole=False):
        """Remove what was made; with keep_blackhole the subnet's blackhole route stays (for
        clients of this process that may still try the nodes): release_later() removes it once
        this process has ended."""
        while self.made:
            kind, name = self.made.pop()
            if kind == "route":
                if keep_blackhole:
                    self.kept_route = name
                else:
                    subprocess.run(["ip", "route", "del", "blackhole", name, "metric", "4242"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            elif kind == "ns":
                subprocess.run(["ip", "netns", "del", name], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            else:
                subprocess.run(["ip", "link", "del", name], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def release_later(self):
        """Remove the kept blackhole route from a detached process, after this one has
        exited (call just before exiting)."""
        if self.kept_route:
            subprocess.Popen(["sh", "-c", 'while kill -0 "$1" 2>/dev/null; do sleep 0.2; done; '
                              'ip route del blackhole "$2" metric 4242', "release",
                              str(os.getpid()), self.kept_route],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
            self.kept_route = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Committer:
    """The raw committer: `clients` threads, each the one writer of its own group (named
    <prefix>-<k>), commit increasing offsets of `partitions` partitions of topic through the
    node FindCoordinator names (asking the nodes in turn), as simple commits (generation -1,
    member ""), one request at a time. Every commit answered with error 0 is recorded; after
    every `fetch_every` acknowledgements the client reads its offsets back with OffsetFetch
    from the coordinator and records a violation when one is below an acknowledged offset (an
    offset that went backwards). acks_log holds (sent, answered), the monotonic times of every
    acknowledged request."""

    def __init__(self, cluster, topic, clients=4, partitions=2, prefix="rc", fetch_every=20):
        self.cluster = cluster
        self.topic = topic
        self.partitions = partitions
        self.fetch_every = fetch_every
        self.groups = ["%s-%d" % (prefix, k) for k in range(clients)]
        self.lock = threading.Lock()
        self.acked = {(g, p): -1 for g in self.groups for p in range(partitions)}
        self.sent = {(g, p): -1 for g in self.groups for p in range(partitions)}
        self.acks = 0
        self.acks_log = []  # (sent, answered) of every acknowledged request, in answer order
        self.errors = {}  # error code or exception name: count
        self.violations = []
        self.stopping = threading.Event()
        self.conns = {}
        self.threads = [threading.Thread(target=self._guarded, args=(g,), daemon=True)
                        for g in self.groups]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(2 * IO_TIMEOUT_S + 5)

    def _count(self, what):
        with self.lock:
            self.errors[what] = self.errors.get(what, 0) + 1

    def _connect(self, group, turn):
        """A connection to the coordinator some running node names, None when none does."""
        ids = list(self.cluster.nodes)
        for k in range(len(ids)):
            node = self.cluster.nodes[ids[(turn + k) % len(ids)]]
            try:
                err, nid, host, port = find_coordinator(node.host, node.kport, group)
            except NET_ERRORS:
                continue
            if err != NONE:
                self._count(err)
                continue
            try:
                return wire.Conn(port, "kc-committer", host=host, timeout=IO_TIMEOUT_S)
            except OSError:
                continue
        return None

    def _guarded(self, group):
        """_run; a client that fails in an unforeseen way is a violation, not a silent stop."""
        try:
            self._run(group)
        except Exception as e:  # noqa: BLE001 - reported by check()
            with self.lock:
                self.violations.append("%s: the committer failed: %r" % (group, e))

    def _run(self, group):
        self.conns[group] = None
        try:
            self._loop(group)
        finally:
            if self.conns[group] is not None:
                self.conns[group].close()

    def _loop(self, group):
        conn = None
        turn = 0
        next_offset = 0
        since_fetch = 0
        parts = list(range(self.partitions))
        while not self.stopping.is_set():
            if conn is None:
                turn += 1
                conn = self.conns[group] = self._connect(group, turn)
                if conn is None:
                    self.stopping.wait(0.05)
                    continue
            offsets = {p: next_offset for p in parts}
            next_offset += 1
            with self.lock:
                for p in parts:
                    self.sent[(group, p)] = offsets[p]
            sent_at = time.monotonic()
            try:
                errs = commit_errors(conn.call(OFFSET_COMMIT, 7, calls.commit_request(
                    group, -1, "", self.topic, offsets)))
            except NET_ERRORS as e:
                self._count(type(e).__name__)
                conn.close()
                conn = None
                continue
            now = time.monotonic()
            bad = {p: e for p, e in errs.items() if e != NONE}
            with self.lock:
                for p, e in errs.items():
                    if e == NONE and p in offsets:
                        self.acked[(group, p)] = max(self.acked[(group, p)], offsets[p])
                if not bad and set(errs) == set(parts):
                    self.acks += 1
                    self.acks_log.append((sent_at, now))
            if bad:
                for e in set(bad.values()):
                    self._count(e)
                conn.close()
                conn = None
                self.stopping.wait(0.02)  # not a busy loop while no leader serves
                continue
            since_fetch += 1
            if since_fetch >= self.fetch_every:
                since_fetch = 0
                self._check_monotonic(conn, group, parts)

    def _check_monotonic(self, conn, group, parts):
        with self.lock:
            floor = {p: self.acked[(group, p)] for p in parts}
        try:
            err, got = offset_fetch(conn, group, self.topic, parts)
        except NET_ERRORS:
            return
        if err != NONE:
            return
        for p in parts:
            e, off, _ = got.get(p, (None, -1, None))
            if e == NONE and off < floor[p]:
                with self.lock:
                    self.violations.append("%s/%d: OffsetFetch returned %d after %d was "
                                           "acknowledged" % (group, p, off, floor[p]))

    def first_ack_after(self, t):
        """The answer time of the first acknowledged request sent after monotonic time t (so
        not one already on its way at t), None if none yet."""
        with self.lock:
            first = None
            for sent, answered in reversed(self.acks_log):
                if answered <= t:
                    break
                if sent > t and (first is None or answered < first):
                    first = answered
        return first

    def wait_acks_after(self, t, count=1, timeout=LEADER_TIMEOUT_S):
        """Wait until `count` requests sent after monotonic time t were acknowledged; returns
        the time of the first, or raises AssertionError."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                n_after = 0
                for sent, answered in reversed(self.acks_log):
                    if answered <= t or n_after >= count:
                        break
                    if sent > t:
                        n_after += 1
            if n_after >= count:
                return self.first_ack_after(t)
            self.cluster.check_alive()
            time.sleep(0.02)
        raise AssertionError("fewer than %d commits acknowledged within %d s of the fault "
                             "(errors %s)\n%s" % (count, timeout, self.errors,
                                                  self.cluster.logs()))

    def check(self, timeout=LEADER_TIMEOUT_S):
        """After stop(): OffsetFetch of every group from the serving coordinator. Returns
        (acknowledged commits checked, list of violations): an offset below the last
        acknowledged one (a lost acknowledgement) or above the last sent one (invented), and
        every backwards step seen while running."""
        violations = list(self.violations)
        for g in self.groups:
            got = self.fetch_final(g, self.topic, range(self.partitions), timeout)
            for p in range(self.partitions):
                acked, sent = self.acked[(g, p)], self.sent[(g, p)]
                e, off, meta = got.get(p, (None, -1, None))
                if e != NONE:
                    violations.append("%s/%d: OffsetFetch error %s" % (g, p, e))
                elif off < acked:
                    violations.append("%s/%d: LOST: offset %d, %d was acknowledged"
                                      % (g, p, off, acked))
                elif off > sent:
                    violations.append("%s/%d: offset %d never sent (last sent %d)"
                                      % (g, p, off, sent))
                elif off >= 0 and meta != "o%d" % off:
                    violations.append("%s/%d: offset %d with metadata %r" % (g, p, off, meta))
        return self.acks, violations

    def fetch_final(self, group, topic, partitions, timeout=LEADER_TIMEOUT_S):
        """OffsetFetch of group's partitions of topic from its coordinator, retried until it
        answers without an error: {partition: (error, offset, metadata)}."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            conn = self._connect(group, 0)
            if conn is not None:
                try:
                    err, got = offset_fetch(conn, group, topic, partitions)
                    if err == NONE and all(v[0] == NONE for v in got.values()):
                        return got
                    last = (err, got)
                except NET_ERRORS as e:
                    last = e
                finally:
                    conn.close()
            time.sleep(0.05)
        raise AssertionError("OffsetFetch of %s not answered within %d s (last: %s)\n%s"
                             % (group, timeout, last, self.cluster.logs()))


def raft_garbage(host, port, payloads, timeout=IO_TIMEOUT_S):
    """Connect to a raft port and send each payload on its own connection, then read until
    the node closes it or timeout; returns how many connections the node closed itself."""
    closed = 0
    for data in payloads:
        s = socket.create_connection((host, port), timeout=timeout)
        try:
            s.sendall(data)
            try:
                s.shutdown(socket.SHUT_WR)
                while s.recv(4096):
                    pass
                closed += 1
            except socket.timeout:
                pass
            except OSError:
                closed += 1
        finally:
            s.close()
    return closed


def log_offsets(data_dir, binary=None):
    """The committed offsets a node's __consumer_offsets segments hold, read with `kcoord
    dump-log`: {(group, topic, partition): (offset, metadata)}, the last record of each key
    winning (a tombstone removes it)."""
    parts = sorted(os.path.join(data_dir, d) for d in os.listdir(data_dir)
                   if d.startswith("__consumer_offsets-"))
    if not parts:
        return {}
    out = subprocess.run([binary or kcoord.BIN, "dump-log"] + parts, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=kcoord.quiet_env())
    if out.returncode != 0:
        raise AssertionError("dump-log %s: status %d: %s" % (data_dir, out.returncode,
                                                              out.stderr[-2000:]))
    got = {}
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        key = rec.get("key")
        if not isinstance(key, dict) or key.get("type") not in ("0", "1"):
            continue
        k = (key["data"]["group"], key["data"]["topic"], key["data"]["partition"])
        payload = rec.get("payload")
        if payload is None:
            got.pop(k, None)
        else:
            got[k] = (payload["data"]["offset"], payload["data"]["metadata"])
    return got


def verify_log(data_dir, binary=None):
    """`kcoord verify-log` of every __consumer_offsets partition of a node's data directory:
    (ok, its output)."""
    parts = sorted(os.path.join(data_dir, d) for d in os.listdir(data_dir)
                   if d.startswith("__consumer_offsets-"))
    outs, ok = [], True
    for p in parts:
        r = subprocess.run([binary or kcoord.BIN, "verify-log", p], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=kcoord.quiet_env())
        ok = ok and r.returncode == 0
        outs.append(r.stdout)
    return ok, "".join(outs)
