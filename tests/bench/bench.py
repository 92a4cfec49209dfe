#!/usr/bin/env python3
"""bench: kcoord's benchmarks: load scenarios against kcoord and Kafka, and load time.

    tests/bench/bench.py [--quick] [--large] [--no-kafka] [--no-recovery-kafka] [--no-load-time]
                  [--no-scenarios] [--no-offload] [--no-compaction] [--no-member-memory]
                  [--output FILE] [BUILD_DIR]                          (default build; `make bench` passes it)
    tests/bench/bench.py --only-offload [--quick] [--output FILE] [BUILD_DIR]
    tests/bench/bench.py --only-batching [--quick] [--no-kafka] [--output FILE] [BUILD_DIR]
    tests/bench/bench.py --only-compaction [--quick] [--compaction-before OLD_BUILD
                  --compaction-note TEXT] [--output FILE] [BUILD_DIR]
    tests/bench/bench.py --only-member-memory [--quick] [--no-kafka] [--output FILE] [BUILD_DIR]
    tests/bench/bench.py --only-security [--quick] [--no-kafka] [--output FILE] [BUILD_DIR]
    tests/bench/bench.py --only-cluster [--quick] [--no-kafka] [--cluster-before OLD_BUILD
                  --cluster-note TEXT] [--output FILE] [BUILD_DIR]

Security (the section of security_bench.SECURITY_HEADING; only with --only-security, which
replaces only that section): commit throughput and join time over SASL_SSL (SCRAM-SHA-512, ACLs
on) against plaintext, kcoord and Kafka side by side, and handshakes per second (TLS, and
TLS+SCRAM); tests/bench/security_bench.py says how.

Cluster (the section of cluster_bench.CLUSTER_HEADING; only with --only-cluster, which replaces
only that section): commit throughput of a single kcoord, a 3-node kcoord cluster and a 3-broker
Kafka (scripts/kafka-ref start --nodes 3) on this machine, and the coordinator's node killed
(kill -9) under a committing client and a 3-member consumer group: the time to the first
acknowledged commit and whether the group rebalanced; tests/bench/cluster_bench.py says how.
--cluster-before OLD_BUILD runs OLD_BUILD/kcoord's single node too, alternating, for the
single-node commit figure (--cluster-note says what it is: e.g. the commit before the cluster).

Writes docs/BENCHMARKS.md (with --quick: BUILD_DIR/bench/BENCHMARKS-quick.md, so that a smoke
run never replaces the real report; --output FILE chooses). It has two parts.

Load scenarios (BUILD_DIR/bench/kcoord-bench, tests/bench/kcoord_bench.c): the same client
runs the same scenarios against

  - kcoord with log.flush.policy=always (its default: acknowledge after fsync) and =never, each
    run on a fresh process and data directory under /tmp with group.initial.rebalance.delay.ms=0
    and topics=kcoord-bench:100;
  - Apache Kafka, a single KRaft node started by scripts/kafka-ref (start --partitions 50
    --initial-delay 0) with its own KAFKA_REF_STATE, so it never meets a broker someone else
    started; the topic is created by the tool (CreateTopics, 100 partitions). When
    scripts/kafka-ref is missing or fails, or with --no-kafka, the Kafka column says "not run"
    and why;
  - the floors: `kcoord-bench echo` (a server that answers every frame at once: the network
    and client floor of the commit loop) and `kcoord-bench fsync-rate` (write + fdatasync per
    second in a directory on the same filesystem as kcoord's data: the durability floor).

Runs alternate between the servers (kcoord always, kcoord never, Kafka, echo; then again) and
each figure is the median of the repetitions (3; 1 with --quick). Scenarios: commit throughput
and latency, join of N members (and a rolling join of one more) with the classic protocol and
with the KIP-848 consumer protocol (on Kafka with the group's consumer.assignment.interval.ms
set to 0 through IncrementalAlterConfigs, and once more with Kafka's default), heartbeats at a
target rate with the server's CPU time, and (once per server) memory per member and per
committed offset. Then the highest sustained heartbeat rate: a ladder of rates, 3 runs per rate
and server (1 with --quick), kcoord and Kafka alternating, medians. --large adds one heartbeat
run with 100,000 members per server.

Assignment offload (the section "Assignment offload: the event loop during a consumer-protocol
join"; skipped with --no-offload): what group.consumer.assignor.offload.enable buys. For each
case of OFFLOAD_PLANS (members, partitions of the subscribed topic, heartbeat interval), a fresh
kcoord with topics=kcoord-bench:PARTITIONS, once with its defaults (offload on) and once with
group.consumer.assignor.offload.enable=false, alternating, 3 times each (once with --quick, which
also keeps one small case): `kcoord-bench join --protocol consumer --rolling --stall-probe
--no-leave`: the time until the group is stable, and the round trips of an ApiVersions probe sent
every 5 ms on a connection of its own meanwhile (how long the event loop kept other requests
waiting); after each run, kcoord's /metrics tells how many target assignments were computed
inline and offloaded, and /proc/stat how much CPU other processes took meanwhile. With
--only-offload nothing else runs, and only that section of the report (docs/BENCHMARKS.md, or
--output) is replaced (added before "Load time" when the page has none); the rest of the page is
kept as it is.

Assignment batching (the section of BATCHING_HEADING; only with --only-batching): KIP-1263's
group.consumer.assignment.interval.ms. For each member count of BATCHING_PLANS, the
consumer-protocol join (`kcoord-bench join --protocol consumer --rolling`, the load scenarios'
options) on a fresh kcoord with the interval at 0 and at 1000 ms, and on the reference broker
(its default 1000 ms, and 0 as a group config of the run's group), alternating, 3 times (once
with --quick): the time until the group is stable, the rolling join, and kcoord's count of
target assignments from /metrics. Only that section of the report is replaced.

Compaction beside commits (the section of COMPACTION_HEADING; skipped with --no-compaction):
commit latency on partitions being compacted. `kcoord-bench commit` against a fresh kcoord with
offsets.topic.segment.bytes=65536, once with log.cleaner.backoff.ms=200 (the cleaner on) and
once with an hour (off), per flush policy (never, always), alternating, 3 times (once with
--quick): p99 and max latency, commits/s, and the compactions the run saw. The runs are saved
as the column "after" in docs/bench/compaction-after.json, and the section shows it beside the
saved "before" column (docs/bench/compaction-before.json), which is made with a build of the
commit before the change, run alternating with BUILD_DIR so that both see the same machine:

    tests/bench/bench.py --only-compaction --compaction-before OLD_BUILD --compaction-note TEXT

With --only-compaction nothing else runs and only that section of the page is replaced; with
--quick the runs go to BUILD_DIR/bench/ and the page is left alone. A full run without it keeps
the page's section when it did not run the scenario.
Memory per member (the section "Memory per member: its own connection or a shared one"; skipped
with --no-member-memory): `kcoord-bench memory` per MEMBER_PLANS case, kcoord (a fresh process per
run, its RSS) and Kafka (a broker of its own, its live heap after a full GC) alternating: one idle
member with a connection of its own (5,000 members, 5,000 connections), one without (100,000
members over 1,000 connections), and an idle connection alone. With --only-member-memory nothing
else runs, and only that section of the report is replaced (added before "Load time" when the
page has none).

Load time (BUILD_DIR/bench/gen_log): for each case it generates a data directory in a fresh
temporary directory under /tmp, then starts BUILD_DIR/kcoord on it three times (once with
--quick, which also keeps only the 1M case and the smallest one):

    kcoord --set data.dir=DIR --set listeners=127.0.0.1:0 --set log.level=info

and measures, per run, the wall time from just before the process is started to the moment its
stderr says "all N partitions loaded", and its peak resident set (VmHWM of /proc/PID/status)
read right after that line; then (untimed) it fetches the offsets of one sample group per
partition (OffsetFetch) and compares them with what gen_log committed, sends SIGTERM and
expects exit status 0. A run also checks that the partitions together loaded exactly KEYS
offsets and that no partition failed. The table gives the median of the runs. The temporary
directory is removed after each case, also on failure or Ctrl-C. The data is in the page cache
when kcoord reads it (it was just written): these are warm-cache load times, CPU-bound, not
disk-bound.

Compaction. The compacted cases generate the same records with `gen_log --compact
SEGMENT_BYTES`: segments roll at COMPACT_SEGMENT bytes and, once written, every partition is
compacted by kcoord's own log cleaner (kc_plog_clean, what the daemon's cleaner thread runs),
so kcoord then loads a log that was really cleaned: the closed segments hold one record per key,
the active segment (at most COMPACT_SEGMENT bytes) is left as written, as in Kafka.

Recovery in Kafka (tests/bench/kafka_recovery.py; its docstring has the details). For the 1M
and 10M cases, compacted and not (with --quick: the 1M case, once), the same segment files are
also loaded by Apache Kafka after a broker restart: a broker from scripts/kafka-ref (start
--partitions 50 --initial-delay 0 --dir D, its own KAFKA_REF_STATE) creates __consumer_offsets
and is stopped. Per case it is restarted on a copy of D whose partitions hold gen_log's .log
files: once untimed (Kafka rebuilds the indexes), then `repeat` times, each run after a kcoord
run, timed from process start until an OffsetFetch of a sample group in every partition returns
the committed offsets, with Kafka's own per-partition load times from its log ("Finished loading
of metadata from __consumer_offsets-N ... in X ms where Y ms was spent in the scheduler"); after
each such run, once more on a copy of D left empty, timed alike: Kafka's own start-up. A run
fails unless Kafka's log end offsets, record counts and offsets are those gen_log wrote and the
restart was clean. With --no-recovery-kafka or --no-kafka, or when scripts/kafka-ref cannot
start a broker, the Kafka columns say "not run" and why. Every process started is stopped and
every directory removed at the end, also on failure, Ctrl-C or SIGTERM.

Exit status: 0 when the report was written and every run succeeded; 1 when a step failed or a
run reported errors (the report is still written when the load scenarios got that far, and
says which runs failed); 2 on a usage error.
"""
import argparse
import datetime
import json
import os
import platform
import re
import selectors
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no __pycache__ in tests/bench
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafka_recovery  # noqa: E402  (tests/bench/kafka_recovery.py: Kafka's load-time runs)
REPEAT = 3
PARTITIONS = 50  # kcoord's default offsets.topic.num.partitions
CODEC = "zstd"  # kcoord's default offsets.topic.compression.codec
BATCH = 100
LOAD_TIMEOUT_S = 600

# (case, records, keys, compact)
CASES = [
    ("1M records, 100k keys", 1_000_000, 100_000, False),
    ("10M records, 100k keys", 10_000_000, 100_000, False),
    ("1M records, 100k keys, compacted", 1_000_000, 100_000, True),
    ("10M records, 100k keys, compacted", 10_000_000, 100_000, True),
]
LIVE_ONLY = ("live keys only (one record per key)", 100_000, 100_000, False)
COMPACT_SEGMENT = 16384  # segment size of the compacted cases: the part left uncompacted

class BenchError(Exception):
    pass


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_gb = "%.1f" % (int(line.split()[1]) / 1024 / 1024)
    except OSError:
        pass
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return {
        "nproc": nproc,
        "cpu": model,
        "mem": mem_gb + " GiB",
        "kernel": platform.release(),
    }


def git_revision():
    """The commit and whether the work tree differs from it (without touching the index)."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, env=env, capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def generate(gen_log, data_dir, records, keys, compact):
    cmd = [gen_log] + (["--compact", str(COMPACT_SEGMENT)] if compact else []) + [
        data_dir, str(records), str(keys), str(PARTITIONS), CODEC, str(BATCH)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError("gen_log failed (%d): %s" % (p.returncode, p.stderr.strip()))
    m = re.search(r"(\d+) log bytes in (\d+) segments, ([0-9.]+) s", p.stdout)
    if m is None:
        raise BenchError("cannot parse gen_log output: %r" % p.stdout)
    stored = None
    if compact:
        # The records left: those in the compacted closed segments plus the active ones.
        c = re.search(r"compacted closed segments: (\d+) -> (\d+) records", p.stdout)
        if c is None:
            raise BenchError("cannot parse gen_log --compact output: %r" % p.stdout)
        stored = records - int(c.group(1)) + int(c.group(2))
    return int(m.group(1)), int(m.group(2)), float(m.group(3)), stored


def vm_hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise BenchError("no VmHWM for pid %d" % pid)


_SIDE_SETTINGS = {}


def side_settings(kcoord):
    """Settings that keep kcoord's side listeners off fixed ports, so that a bench run never
    collides with another kcoord on the host: metrics.listener on a free port, when this build
    has it (asked once, with --print-config)."""
    if kcoord not in _SIDE_SETTINGS:
        out = []
        try:
            p = subprocess.run([kcoord, "--print-config"], capture_output=True, text=True,
                               timeout=30)
            if re.search(r"^metrics\.listener=", p.stdout, re.M):
                out.append("metrics.listener=127.0.0.1:0")
        except (OSError, subprocess.TimeoutExpired):
            pass
        _SIDE_SETTINGS[kcoord] = out
    return _SIDE_SETTINGS[kcoord]


def load_once(kcoord, data_dir, records, keys):
    """Start kcoord on data_dir; return (load ms, VmHWM MB, slowest partition ms, offsets
    checked). After the load, and outside the time, one sample group per partition is fetched
    (OffsetFetch) and compared with what gen_log committed."""
    cmd = [kcoord, "--set", "data.dir=" + data_dir, "--set", "listeners=127.0.0.1:0",
           "--set", "log.level=info"]
    for extra in side_settings(kcoord):
        cmd += ["--set", extra]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    lines = []
    done_re = re.compile(r"all (\d+) partitions loaded")
    part_re = re.compile(r"partition (\d+) loaded in (\d+) ms: .*?, (\d+) offsets of")
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    buf = b""
    load_ms = None
    hwm = None
    checked = None
    try:
        deadline = t0 + LOAD_TIMEOUT_S
        while load_ms is None:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                raise BenchError("kcoord did not finish loading within %d s" % LOAD_TIMEOUT_S)
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                raise BenchError("kcoord exited before loading (status %s):\n%s"
                                 % (proc.wait(), "\n".join(lines[-10:])))
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                lines.append(text)
                if done_re.search(text):
                    load_ms = (time.monotonic() - t0) * 1000
                    hwm = vm_hwm_kb(proc.pid)
                    break
        listen = [m.group(1) for m in map(re.compile(r"listening on (\S+)").search, lines) if m]
        if not listen:
            raise BenchError("kcoord logged no \"listening on\" line before it loaded")
        host, port = listen[0].rsplit(":", 1)
        try:
            checked = kafka_recovery.check_offsets(host, int(port), records, keys,
                                                   kafka_recovery.sample_groups(keys))
        except (OSError, ConnectionError, kafka_recovery.KafkaError) as e:
            raise BenchError("kcoord's offsets after the load: %s" % e)
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        sel.close()
    lines += (buf + rest).decode("utf-8", "replace").splitlines()
    if proc.returncode != 0:
        raise BenchError("kcoord exited with status %d after SIGTERM" % proc.returncode)
    bad = [l for l in lines if " ERROR " in l or " WARN " in l]
    if bad:
        raise BenchError("kcoord complained while loading:\n" + "\n".join(bad[:10]))
    offsets = 0
    slowest = 0
    for l in lines:
        m = part_re.search(l)
        if m:
            slowest = max(slowest, int(m.group(2)))
            offsets += int(m.group(3))
    if offsets != keys:
        raise BenchError("kcoord loaded %d offsets, expected %d" % (offsets, keys))
    return load_ms, hwm / 1024, slowest, checked


def run_case(gen_log, kcoord, name, records, keys, compact, repeat, kafka=None):
    """One load-time case: kcoord `repeat` times and, when `kafka` (a KafkaRecovery that is set
    up) is given, Kafka restarted `repeat` times on the same data, the two alternating."""
    data_dir = tempfile.mkdtemp(prefix="kcoord-bench-", dir="/tmp")
    kf = {"runs": [], "empty": [], "first": None, "error": None} if kafka is not None else None
    try:
        print("== %s: generating %d records over %d keys in %s"
              % (name, records, keys, data_dir), flush=True)
        nbytes, segments, gen_s, stored = generate(gen_log, os.path.join(data_dir, "data"),
                                                   records, keys, compact)
        print("   %d log bytes in %d segments, generated in %.2f s" % (nbytes, segments, gen_s),
              flush=True)
        in_log = stored if stored is not None else records
        bdir = None
        if kafka is not None:
            try:
                print("   Kafka: copying the segments into its __consumer_offsets and starting "
                      "it once (it rebuilds the indexes)", flush=True)
                bdir, kf["first"] = kafka.prepare(os.path.join(data_dir, "data"), records, keys,
                                                  in_log)
                print("   Kafka first start: serving after %.0f ms (load %.0f ms, %d segments "
                      "recovered)" % (kf["first"]["serving_ms"], kf["first"]["sum_ms"],
                                      kf["first"]["recovered"]), flush=True)
            except (kafka_recovery.KafkaError, OSError) as e:
                kf["error"] = "first start: %s" % e
                print("   Kafka FAILED: %s" % kf["error"], flush=True)
        runs = []
        for i in range(repeat):
            ms, mb, slowest, checked = load_once(kcoord, os.path.join(data_dir, "data"),
                                                 records, keys)
            print("   run %d: loaded in %.0f ms, VmHWM %.1f MB, slowest partition %d ms; "
                  "%d offsets checked" % (i + 1, ms, mb, slowest, checked), flush=True)
            runs.append((ms, mb, slowest))
            if bdir is not None and kf["error"] is None:
                try:
                    r = kafka.restart(bdir, "run-%d" % (i + 1), records, keys,
                                      kafka_recovery.sample_groups(keys), in_log)
                    kf["runs"].append(r)
                    print("   Kafka run %d: serving after %.0f ms; load %.0f ms (%d partitions, "
                          "slowest %d ms); \"%s\" after %.0f ms"
                          % (i + 1, r["serving_ms"], r["sum_ms"], kafka_recovery.PARTITIONS,
                             r["max_ms"], kafka_recovery.STARTED_LINE, r["started_ms"]),
                          flush=True)
                    e = kafka.empty_restart(keys, "%d" % (i + 1))
                    kf["empty"].append(e)
                    print("   Kafka run %d, __consumer_offsets empty: serving after %.0f ms; "
                          "\"%s\" after %.0f ms" % (i + 1, e["serving_ms"],
                                                    kafka_recovery.STARTED_LINE,
                                                    e["started_ms"]), flush=True)
                except (kafka_recovery.KafkaError, OSError) as e:
                    kf["error"] = "run %d: %s" % (i + 1, e)
                    print("   Kafka FAILED: %s" % kf["error"], flush=True)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        if kafka is not None:
            kafka.drop_case()
    return {
        "name": name,
        "records": records,
        "keys": keys,
        "bytes": nbytes,
        "segments": segments,
        "gen_s": gen_s,
        "stored": stored if stored is not None else records,
        "runs": runs,
        "ms": statistics.median(r[0] for r in runs),
        "mb": statistics.median(r[1] for r in runs),
        "slowest": statistics.median(r[2] for r in runs),
        "compact": compact,
        "kafka": kf,
    }


def load_section(results, repeat, build, side):
    kcoord_cmd = ("%s/kcoord --set data.dir=DIR --set listeners=127.0.0.1:0 "
                  "--set log.level=info%s" % (build, "".join(" --set " + x for x in side)))
    gen_cmd = ("%s/bench/gen_log DIR RECORDS KEYS %d %s %d" % (build, PARTITIONS, CODEC, BATCH))
    out = []
    w = out.append
    w("## Load time")
    w("")
    w("How long kcoord takes from process start until it serves every group: it opens and "
      "validates each `__consumer_offsets-N` log, then replays every record into memory, one "
      "thread-pool job per partition, and logs `all N partitions loaded`. Until then requests "
      "for groups of a partition still loading get COORDINATOR_LOAD_IN_PROGRESS.")
    w("")
    w("| case | records committed | records in the log | live keys | log bytes | "
      "load time ms (median of %d) | peak RSS MB |" % repeat)
    w("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        w("| %s | %s | %s | %s | %s (%.1f MB) | %.0f | %.1f |"
          % (r["name"], "{:,}".format(r["records"]), "{:,}".format(r["stored"]),
             "{:,}".format(r["keys"]), "{:,}".format(r["bytes"]), r["bytes"] / 1e6, r["ms"],
             r["mb"]))
    w("")
    w("- **load time**: wall time from just before the process is started to the moment its "
      "stderr shows `all %d partitions loaded` (so it includes exec, settings, "
      "meta.properties, opening the listener)." % PARTITIONS)
    w("- **peak RSS**: VmHWM from /proc/PID/status, read right after that line.")
    w("- **log bytes**: the segment files (.log) of all partitions, indexes not counted.")
    w("- **live keys**: distinct (group, topic, partition) keys, i.e. the offsets kcoord holds "
      "after the load; every run checks that the partitions' load lines add up to exactly this.")
    w("- **compacted**: the same commits, generated with `gen_log --compact %d`: segments "
      "roll every %d bytes and kcoord's log cleaner (kc_plog_clean, what the daemon's cleaner "
      "runs) then compacts every partition, keeping the newest record of each key in the closed "
      "segments; the active segment is not compacted, as in Kafka. **records in the log** is "
      "what is left to replay." % (COMPACT_SEGMENT, COMPACT_SEGMENT))
    w("- **live keys only (one record per key)**: a log written with exactly one record per "
      "key, the lower bound any compaction can reach.")
    w("")
    w("### Details")
    w("")
    w("| case | log bytes per record | segments | generation s | runs: load ms | "
      "runs: peak RSS MB | slowest partition ms (median) |")
    w("|---|---:|---:|---:|---|---|---:|")
    for r in results:
        w("| %s | %.1f | %d | %.2f | %s | %s | %.0f |"
          % (r["name"], r["bytes"] / max(1, r["records"]), r["segments"], r["gen_s"],
             ", ".join("%.0f" % x[0] for x in r["runs"]),
             ", ".join("%.1f" % x[1] for x in r["runs"]), r["slowest"]))
    w("")
    w("Generation time is gen_log's own (encoding, compression, writes and a final fsync of "
      "every partition).")
    w("")
    w("### The data")
    w("")
    w("Written by `tests/bench/gen_log.c` through kcoord's own log API (`kc_plog_append`), the "
      "records encoded as kcoord encodes them (key: OffsetCommitKey v1, value: "
      "OffsetCommitValue v3):")
    w("")
    w("- %d partitions (kcoord's default), %s-compressed batches (kcoord's default codec) of "
      "%d records; Kafka's default segment size (100 MiB)." % (PARTITIONS, CODEC, BATCH))
    w("- 100 keys per group (10 topics x 10 partitions), so 100k keys are 1,000 groups, each in "
      "the partition `kc_partition_for` gives it (Kafka's placement).")
    w("- Records cycle over the keys; each key's offsets increase (per-key start and step differ); "
      "commit timestamps advance 1 ms per 10 records; metadata empty, leader epoch 0.")
    w("- Each record is about 70 bytes before compression (36-38 bytes of key, 24 of value, "
      "record framing). Short, regular names compress well: real groups with longer names "
      "and commit metadata make a larger log for the same record count.")
    w("- The data directory is written just before the runs, so it is in the page cache: "
      "these are warm-cache, CPU-bound figures. A cold start also reads the log bytes above "
      "from disk.")
    w("")
    w("Commands, per case: `%s` (with `--compact %d` before DIR for the compacted cases) into "
      "a new directory under /tmp (removed afterwards), then %d times `%s` and SIGTERM."
      % (gen_cmd, COMPACT_SEGMENT, repeat, kcoord_cmd))
    w("")
    return out

def recovery_section(results, repeat, recovery):
    """The load-time cases side by side with Kafka restarted on the same data."""
    out = []
    w = out.append
    rows = [r for r in results
            if (r["name"], r["records"], r["keys"], r["compact"]) in CASES]
    if not rows:
        return out

    def med(kf, key, which="runs"):
        vals = [x[key] for x in kf[which]] if kf else []
        return statistics.median(vals) if vals else None

    def kafka_cell(kf, key, fmt="%.0f", which="runs"):
        v = med(kf, key, which)
        if v is not None:
            return fmt % v
        if kf is None:
            return "not run"
        return "failed"

    def rate(records, ms):
        return "{:,.0f}".format(records / (ms / 1000)) if ms else "-"

    w("## Recovery: kcoord and Kafka on the same data")
    w("")
    w("The issue's question: how long from process start until the server serves the groups "
      "and offsets of a `__consumer_offsets` of 1M and 10M records (compacted and not). kcoord "
      "loads the cases of *Load time* above; Apache Kafka%s, restarted on a copy of the same "
      "segment files, loads the same groups and offsets from its own `__consumer_offsets`%s. "
      "%s."
      % (" " + recovery["version"] if recovery["version"] else "",
         " (here: not run)" if recovery["reason"] else "",
         ("One run each" if repeat == 1 else "Medians of %d runs" % repeat) +
         ("" if recovery["reason"] else ", kcoord and Kafka alternating")))
    w("")
    w("| case | records in the log | kcoord load ms | Kafka load ms | Kafka start to serving ms "
      "| Kafka start to serving, empty, ms | ratio, load | ratio, start to serving | "
      "kcoord records/s | Kafka records/s |")
    w("|---|---:|---:|---:|---:|---:|---|---|---:|---:|")
    for r in rows:
        kf = r["kafka"]
        load = med(kf, "sum_ms")
        serving = med(kf, "serving_ms")
        w("| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |"
          % (r["name"], "{:,}".format(r["stored"]), r["ms"], kafka_cell(kf, "sum_ms"),
             kafka_cell(kf, "serving_ms"), kafka_cell(kf, "serving_ms", which="empty"),
             ratio_text(r["ms"], load, False),
             ratio_text(r["ms"], serving, False), rate(r["stored"], r["ms"]),
             rate(r["stored"], load) if load else kafka_cell(kf, "sum_ms")))
    w("")
    if recovery["reason"]:
        w("- **Kafka: not run**: %s." % recovery["reason"].rstrip("."))
    for r in rows:
        if r["kafka"] is not None and r["kafka"]["error"]:
            # The first line only: the rest is the end of Kafka's log, on the console.
            w("- **Kafka failed** (%s): %s" % (r["name"], r["kafka"]["error"].replace(
                "|", "/").splitlines()[0].rstrip(":")))
    empty = [e["serving_ms"] for r in rows if r["kafka"] for e in r["kafka"]["empty"]]
    empty_started = [e["started_ms"] for r in rows if r["kafka"] for e in r["kafka"]["empty"]]
    w("- **Kafka start to serving, empty**: Kafka's own start-up, the JVM's and the broker's, "
      "which every *start to serving* figure includes and *load ms* does not: the same broker "
      "restarted with its `__consumer_offsets` empty (its directory before the data was copied "
      "in), timed in the same way (every sample group answers, without offsets), right after "
      "each timed run of the case.%s"
      % (" Over all cases: %s; its log says `%s` after %.0f ms%s."
         % ("%.0f ms (1 run)" % empty[0] if len(empty) == 1 else
            "median %.0f ms (%d runs, %.0f to %.0f ms)" % (statistics.median(empty), len(empty),
                                                          min(empty), max(empty)),
            kafka_recovery.STARTED_LINE, statistics.median(empty_started),
            "" if len(empty) == 1 else " (median)")
         if empty else ""))
    w("- **kcoord load ms**: the load time above (process start to `all %d partitions loaded`; "
      "kcoord answers requests from the start, and a group from the moment its partition is "
      "loaded, so this is also its start to serving)." % PARTITIONS)
    w("- **Kafka load ms**: the sum over the %d partitions of Kafka's own load time, from its "
      "log lines `Finished loading of metadata from __consumer_offsets-N with epoch E in X ms "
      "where Y ms was spent in the scheduler. Loaded R records ...`: X - Y. Kafka's "
      "coordinator loader takes the partitions one at a time, so the sum is the load's wall "
      "time (the span from the first partition scheduled to the last loaded is in the details)."
      % kafka_recovery.PARTITIONS)
    w("- **Kafka start to serving ms**: wall time from just before the JVM is started until an "
      "OffsetFetch of one sample group in each of the %d partitions, polled every %d ms (the "
      "groups not served yet, up to the first that is not), returns exactly the offsets gen_log "
      "committed (before that Kafka answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS)."
      % (kafka_recovery.PARTITIONS, kafka_recovery.POLL_S * 1000))
    w("- **ratio**: how many times faster kcoord is, by load ms and by start to serving "
      "(kcoord's load ms against Kafka's start to serving).")
    w("- **records/s**: records in the log divided by the load ms.")
    w("- **Checked**: every kcoord run fetches the same sample groups (100 offsets each) after "
      "its load and compares them with what gen_log committed, as every Kafka run does; both "
      "servers return the same offsets for them. A Kafka run also fails unless each partition's "
      "log end offset (its log line `Completed load of Log(...)`) is the number of records "
      "gen_log wrote into it, the records Kafka loaded add up to the records in the log, no "
      "segment was recovered and nothing was truncated, and it shuts down cleanly.")
    w("")
    w("### Kafka details")
    w("")
    w("| case | runs: start to serving ms | runs: load ms | runs: start to serving, empty, ms "
      "| slowest partition ms | load span ms | `%s` ms | first start: serving ms, load ms | "
      "offsets checked per run |" % kafka_recovery.STARTED_LINE)
    w("|---|---|---|---|---:|---:|---:|---|---:|")
    for r in rows:
        kf = r["kafka"]
        if kf is None:
            w("| %s | not run | | | | | | | |" % r["name"])
            continue
        first = kf["first"]
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
          % (r["name"], ", ".join("%.0f" % x["serving_ms"] for x in kf["runs"]) or "-",
             ", ".join("%.0f" % x["sum_ms"] for x in kf["runs"]) or "-",
             ", ".join("%.0f" % x["serving_ms"] for x in kf["empty"]) or "-",
             kafka_cell(kf, "max_ms"), kafka_cell(kf, "span_ms"), kafka_cell(kf, "started_ms"),
             "%.0f, %.0f (%d segments recovered)" % (first["serving_ms"], first["sum_ms"],
                                                    first["recovered"]) if first else "-",
             "{:,}".format(kf["runs"][0]["checked"]) if kf["runs"] else "-"))
    w("")
    w("How Kafka gets the data (tests/bench/kafka_recovery.py): `scripts/kafka-ref start "
      "--partitions %d --initial-delay 0 --dir D` with a state directory of its own, a "
      "FindCoordinator to make it create `__consumer_offsets`, a wait until its log shows every "
      "partition loaded, `scripts/kafka-ref stop`. Per case, a copy of D: in each "
      "`__consumer_offsets-N` Kafka's `.log`, `.index`, `.timeindex` and `.snapshot` files are "
      "replaced by gen_log's `.log` files of partition N (`partition.metadata`, the topic id, "
      "and `leader-epoch-checkpoint`, epoch 0 from offset 0 as in gen_log's batches, are kept); "
      "`cleaner-offset-checkpoint` gets each partition's last segment base offset, since the "
      "closed segments of the compacted cases were already compacted by kcoord's cleaner (without "
      "it Kafka's cleaner merges them again and Kafka would load other segments than kcoord). "
      "Then one untimed *first start*: Kafka finds segments without index files, recovers them "
      "(checks every batch, rebuilds offset and time indexes and producer state), loads, and on "
      "its clean shutdown writes the recovery points, high watermarks and the clean-shutdown "
      "marker. The timed runs are restarts of that broker (`java -Xmx1g ... kafka.Kafka "
      "server.properties`, as scripts/kafka-ref starts it, on new free ports), SIGTERM after "
      "each, which find what a broker restart finds: indexes, checkpoints, snapshots. The page "
      "cache is warm for both servers. Kafka's JIT starts cold at every restart, as it does in "
      "a real restart." % kafka_recovery.PARTITIONS)
    w("")
    return out


# ---- Load scenarios ------------------------------------------------------------------------

TOPIC = "kcoord-bench"
TOPIC_PARTITIONS = 100
TOOL_TIMEOUT_S = 900

# What each mode runs. The tool's own options, per scenario.
PLANS = {
    "full": {
        "reps": 3,
        "commit": ["--groups", "100", "--partitions", "10", "--connections", "32",
                   "--depth", "4", "--warmup", "2", "--duration", "5"],
        "joins": [10, 100, 1000],
        "join": ["--rolling", "--heartbeat-ms", "100"],
        "cjoin": ["--protocol", "consumer", "--rolling", "--heartbeat-ms", "100",
                  "--timeout", "60"],
        "heartbeat": ["--members", "10000", "--group-size", "10", "--rate", "10000",
                      "--connections", "1000", "--warmup", "2", "--duration", "5"],
        "memory": ["--groups", "10000", "--group-size", "10", "--offsets", "1000000",
                   "--connections", "1000"],
        "large": ["--members", "100000", "--group-size", "10", "--rate", "20000",
                  "--connections", "1000", "--warmup", "5", "--duration", "10"],
        "fsync": ["--duration", "3"],
        # The highest sustained heartbeat rate: these total rates in turn, until one misses;
        # hb_ladder_reps runs per rate and server, the servers alternating, and the median counts.
        "hb_ladder": [5000, 10000, 20000, 40000, 80000, 160000],
        "hb_ladder_reps": 3,
        "hb_ladder_args": ["--members", "10000", "--group-size", "10", "--connections", "1000",
                           "--warmup", "2", "--duration", "5"],
        # Kafka's JIT compiler needs load before Kafka runs at full speed: one untimed pass.
        "kafka_warmup": [("commit", ["--groups", "100", "--partitions", "10", "--connections",
                                     "32", "--depth", "4", "--warmup", "0", "--duration", "15"]),
                         ("join", ["--members", "1000", "--rolling"]),
                         ("join", ["--members", "1000", "--rolling", "--protocol", "consumer"]),
                         ("heartbeat", ["--members", "10000", "--rate", "10000", "--warmup",
                                        "0", "--duration", "5"])],
    },
    "quick": {
        "reps": 1,
        "commit": ["--groups", "100", "--partitions", "10", "--connections", "32",
                   "--depth", "4", "--warmup", "1", "--duration", "2"],
        "joins": [10, 100],
        "join": ["--rolling", "--heartbeat-ms", "100"],
        "cjoin": ["--protocol", "consumer", "--rolling", "--heartbeat-ms", "100",
                  "--timeout", "60"],
        "heartbeat": ["--members", "1000", "--group-size", "10", "--rate", "1000",
                      "--connections", "100", "--warmup", "1", "--duration", "2"],
        "memory": ["--groups", "1000", "--group-size", "10", "--offsets", "100000",
                   "--connections", "100"],
        "large": ["--members", "100000", "--group-size", "10", "--rate", "20000",
                  "--connections", "1000", "--warmup", "5", "--duration", "10"],
        "fsync": ["--duration", "1"],
        "hb_ladder": [1000, 4000],
        "hb_ladder_reps": 1,
        "hb_ladder_args": ["--members", "1000", "--group-size", "10", "--connections", "100",
                           "--warmup", "1", "--duration", "2"],
        "kafka_warmup": [("commit", ["--groups", "100", "--partitions", "10", "--connections",
                                     "32", "--depth", "4", "--warmup", "0", "--duration", "3"])],
    },
}

# The servers, in the order the runs alternate, and how the report names them.
KC_ALWAYS, KC_NEVER, KAFKA, ECHO, DISK = "kcoord-always", "kcoord-never", "kafka", "echo", "disk"
TARGET_NAMES = {
    KC_ALWAYS: "kcoord flush=always",
    KC_NEVER: "kcoord flush=never",
    KAFKA: "Kafka",
    ECHO: "echo floor",
    DISK: "disk floor",
}

# Metrics kept per scenario (JSON keys of the tool's result lines).
METRICS = {
    "commit": ["offsets_per_s", "requests_per_s", "p50_ms", "p99_ms", "p999_ms",
               "server_cpu_us_per_request"],
    "join": ["join_s", "rolling_s"],
    "cjoin": ["join_s", "rolling_s", "heartbeats_sent", "heartbeats_immediate",
              "server_heartbeat_interval_ms"],
    "heartbeat": ["heartbeats_per_s", "p50_ms", "p99_ms", "server_cpu_cores_per_10k_hbps"],
    "memory": ["bytes_per_member", "bytes_per_offset", "probe_bytes_per_member",
               "probe_bytes_per_offset", "rss0_kib", "rss_members_kib", "rss_offsets_kib"],
    "fsync": ["ops_per_s", "p50_ms", "p99_ms"],
}


def wait_for_line(path, pattern, proc, timeout_s):
    """Poll the file `path` until a line matches `pattern`; return the match."""
    deadline = time.monotonic() + timeout_s
    rx = re.compile(pattern)
    while time.monotonic() < deadline:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    m = rx.search(line)
                    if m:
                        return m
        except OSError:
            pass
        if proc.poll() is not None:
            raise BenchError("%s exited with status %d before it listened:\n%s"
                             % (proc.args[0], proc.returncode, tail(path)))
        time.sleep(0.02)
    raise BenchError("%s did not listen within %d s:\n%s" % (proc.args[0], timeout_s, tail(path)))


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def stop_proc(proc, timeout_s=60):
    """SIGTERM a process we started, SIGKILL it after timeout_s; return its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class Kcoord:
    """A fresh kcoord process and data directory, for one batch of runs."""

    def __init__(self, kcoord, policy, partitions=TOPIC_PARTITIONS, extra=()):
        self.kcoord = kcoord
        self.policy = policy
        self.dir = tempfile.mkdtemp(prefix="kcoord-bench-srv-", dir="/tmp")
        self.log = os.path.join(self.dir, "kcoord.log")
        self.settings = ["listeners=127.0.0.1:0", "data.dir=" + os.path.join(self.dir, "data"),
                         "topics=%s:%d" % (TOPIC, partitions),
                         "group.initial.rebalance.delay.ms=0", "log.flush.policy=" + policy]
        self.settings += side_settings(kcoord) + list(extra)
        cmd = [kcoord]
        for s in self.settings:
            cmd += ["--set", s]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT)
        try:
            m = wait_for_line(self.log, r"listening on (\S+)", self.proc, 30)
        except BaseException:
            self.stop()
            raise
        self.bootstrap = m.group(1)
        self.pid = self.proc.pid

    def stop(self):
        """Stop it; return (exit status, the ERROR and WARN lines of its log)."""
        rc = stop_proc(self.proc)
        problems = []
        try:
            with open(self.log, errors="replace") as f:
                problems = [l.rstrip("\n") for l in f if " ERROR " in l or " WARN " in l]
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc, problems


class Echo:
    """kcoord-bench echo, the network floor."""

    def __init__(self, tool):
        self.dir = tempfile.mkdtemp(prefix="kcoord-bench-echo-", dir="/tmp")
        self.log = os.path.join(self.dir, "echo.log")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([tool, "echo", "--listen", "127.0.0.1:0"],
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT)
        try:
            self.bootstrap = wait_for_line(self.log, r"listening on (\S+)", self.proc,
                                           30).group(1)
        except BaseException:
            self.stop()
            raise
        self.pid = self.proc.pid

    def stop(self):
        rc = stop_proc(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


class KafkaRef:
    """The reference broker of scripts/kafka-ref, with a state directory of our own."""

    def __init__(self):
        self.script = os.path.join(ROOT, "scripts", "kafka-ref")
        self.state = tempfile.mkdtemp(prefix="kcoord-bench-kafka-state-", dir="/tmp")
        self.env = dict(os.environ, KAFKA_REF_STATE=self.state)
        self.running = False
        self.version = None
        self.pid = None
        self.bootstrap = None

    def start(self):
        """Start the broker; return None, or why it could not run."""
        if not os.access(self.script, os.X_OK):
            return "scripts/kafka-ref is not there"
        print("== Kafka: scripts/kafka-ref start --partitions 50 --initial-delay 0", flush=True)
        try:
            p = subprocess.run([self.script, "start", "--partitions", "50", "--initial-delay",
                                "0"], env=self.env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            self.stop()
            return "scripts/kafka-ref start did not finish within 900 s"
        if p.returncode != 0:
            lines = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()
            return ("scripts/kafka-ref start failed (exit %d): %s"
                    % (p.returncode, " / ".join(lines[-3:])))
        self.running = True
        env = subprocess.run([self.script, "env"], env=self.env, capture_output=True,
                             text=True)
        values = {}
        for line in env.stdout.splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                try:
                    values[k] = shlex.split(v)[0] if v else ""
                except ValueError:
                    values[k] = v
        self.bootstrap = values.get("KAFKA_REF_BOOTSTRAP")
        self.version = values.get("KAFKA_REF_VERSION")
        pid = values.get("KAFKA_REF_PID")
        self.pid = int(pid) if pid and pid.isdigit() else None
        if not self.bootstrap:
            self.stop()
            return "scripts/kafka-ref env printed no KAFKA_REF_BOOTSTRAP"
        print("   Kafka %s at %s (pid %s)" % (self.version, self.bootstrap, self.pid), flush=True)
        return None

    def stop(self):
        if os.access(self.script, os.X_OK):
            subprocess.run([self.script, "stop"], env=self.env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=300)
        self.running = False
        shutil.rmtree(self.state, ignore_errors=True)


def heap_probe_cmd(pid):
    """A shell command that prints the JVM's live heap in bytes after a full GC (jcmd)."""
    if shutil.which("jcmd") is None or pid is None:
        return None
    return ("jcmd %d GC.run >/dev/null && jcmd %d GC.heap_info | "
            "sed -n 's/.* used \\([0-9]*\\)K.*/\\1/p' | head -1 | awk '{print $1 * 1024}'"
            % (pid, pid))


class Runs:
    """Every run's result, and the medians the report shows."""

    def __init__(self):
        self.runs = []  # dicts: target, scenario, key, rep, ok, result, error, cmd

    def add(self, **kw):
        self.runs.append(kw)

    def values(self, target, key, metric):
        out = []
        for r in self.runs:
            if r["target"] == target and r["key"] == key and r["ok"] and r["result"]:
                v = r["result"].get(metric)
                if isinstance(v, (int, float)):
                    out.append(float(v))
        return out

    def median(self, target, key, metric):
        v = self.values(target, key, metric)
        return statistics.median(v) if v else None

    def failures(self, target=None):
        return [r for r in self.runs if not r["ok"] and (target is None or r["target"] == target)]


def run_tool(runs, tool, target, key, scenario, args, rep, pid=None, extra=None):
    """Run one kcoord-bench scenario and record it."""
    cmd = [tool, scenario] + args
    if pid is not None:
        cmd += ["--server-pid", str(pid)]
    cmd += extra or []
    shown = " ".join(shlex.quote(c) for c in cmd)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=TOOL_TIMEOUT_S)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "timed out after %d s" % TOOL_TIMEOUT_S
    result = None
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                pass
    ok = rc == 0 and result is not None
    error = None
    if not ok:
        why = [l for l in (err.strip().splitlines() + out.strip().splitlines()) if l][-4:]
        error = "exit %d: %s" % (rc, " / ".join(why) if why else "no output")
    runs.add(target=target, key=key, scenario=scenario, rep=rep, ok=ok, result=result,
             error=error, cmd=shown, seconds=time.monotonic() - t0)
    print("   [%s] %-14s %s%s" % (TARGET_NAMES[target], key, summary(key, result),
                                  "" if ok else "  FAILED: " + error), flush=True)
    return ok


def summary(key, r):
    if not r:
        return "-"
    key = key.split(" ")[0]
    f = lambda k, fmt: (fmt % r[k]) if isinstance(r.get(k), (int, float)) else "-"
    if key == "commit":
        return "%s offsets/s, %s req/s, p99 %s ms" % (f("offsets_per_s", "%.0f"),
                                                     f("requests_per_s", "%.0f"),
                                                     f("p99_ms", "%.2f"))
    if key.startswith(("join", "cjoin", "batch")):
        return "join %s s, rolling %s s" % (f("join_s", "%.3f"), f("rolling_s", "%.3f"))
    if key.startswith("heartbeat"):
        return "%s hb/s, p99 %s ms, CPU %s cores per 10k hb/s" % (
            f("heartbeats_per_s", "%.0f"), f("p99_ms", "%.2f"),
            f("server_cpu_cores_per_10k_hbps", "%.3f"))
    if key == "memory":
        return "%s B/member, %s B/offset (probe: %s, %s)" % (
            f("bytes_per_member", "%.0f"), f("bytes_per_offset", "%.0f"),
            f("probe_bytes_per_member", "%.0f"), f("probe_bytes_per_offset", "%.0f"))
    if key == "fsync":
        return "%s fdatasync/s, p99 %s ms" % (f("ops_per_s", "%.0f"), f("p99_ms", "%.2f"))
    if key == "offload":
        return "join %s s (probe max %s ms), rolling %s s (probe max %s ms)" % (
            f("join_s", "%.3f"), f("probe_join_max_ms", "%.1f"), f("rolling_s", "%.3f"),
            f("probe_rolling_max_ms", "%.1f"))
    return json.dumps(r)[:100]


HB_P99_LIMIT_MS = 10.0


def hb_ladder(tool, servers, plan):
    """The highest sustained heartbeat rate of each server. `servers`: (target, bootstrap, pid,
    extra) in the order the runs alternate. For each rate of plan["hb_ladder"] in turn, each
    server still in the ladder heartbeats at it plan["hb_ladder_reps"] times (a fresh join each
    time), the servers alternating run by run; the rate is sustained when the median achieved
    rate is at least 95% of it and the median p99 latency is below HB_P99_LIMIT_MS (a run that
    failed counts as achieving what it reported, or 0, with an infinite p99). A server leaves
    the ladder at its first rate not sustained. Returns {target: [step, ...]}, a step being a
    dict: rate, achieved (median), p99 (median, None when infinite), sustained, and samples,
    the runs' (achieved, p99 or None, ok)."""
    reps = plan.get("hb_ladder_reps", 1)
    steps = {srv[0]: [] for srv in servers}
    active = [srv[0] for srv in servers]
    scratch = Runs()  # a missed rate is a result here, not a failure of the benchmark
    for rate in plan["hb_ladder"]:
        if not active:
            break
        samples = {t: [] for t in active}
        for rep in range(reps):
            for target, bootstrap, pid, extra in servers:
                if target not in active:
                    continue
                args = ["--bootstrap", bootstrap, "--label", TARGET_NAMES[target], "--rate",
                        str(rate)] + plan["hb_ladder_args"]
                ok = run_tool(scratch, tool, target, "heartbeat-rate-%d" % rate, "heartbeat",
                              args, rep, pid, extra)
                r = scratch.runs[-1]["result"] or {}
                got, p99 = r.get("heartbeats_per_s"), r.get("p99_ms")
                samples[target].append((float(got) if isinstance(got, (int, float)) else 0.0,
                                        float(p99) if isinstance(p99, (int, float)) else None,
                                        ok))
        for target in list(active):
            sm = samples[target]
            got = statistics.median(x[0] for x in sm)
            p99 = statistics.median(x[1] if x[2] and x[1] is not None else float("inf")
                                    for x in sm)
            sustained = got >= 0.95 * rate and p99 < HB_P99_LIMIT_MS
            steps[target].append({"rate": rate, "achieved": got,
                                  "p99": None if p99 == float("inf") else p99,
                                  "sustained": sustained, "samples": sm})
            print("   [%s] heartbeat ladder: %s hb/s %s (median %.0f hb/s, p99 %s ms)"
                  % (TARGET_NAMES[target], "{:,}".format(rate),
                     "sustained" if sustained else "NOT sustained", got,
                     "-" if p99 == float("inf") else "%.2f" % p99), flush=True)
            if not sustained:
                active.remove(target)
    return steps


# Kafka's group-level settings for the consumer-protocol join (IncrementalAlterConfigs on the
# group before the run): Kafka 4.4 computes a consumer group's target assignment at most once
# per group.consumer.assignment.interval.ms (default 1000 ms); the load scenarios run both
# servers at 0 (kcoord with --set, when its build has the setting: interval_zero), and the
# assignment-batching section compares 0 with 1000.
KAFKA_CJOIN_CONFIGS = [("consumer.assignment.interval.ms", "0")]


def interval_zero(kcoord):
    """--set group.consumer.assignment.interval.ms=0 when this build has the setting (asked
    with --print-config), so that its consumer-protocol joins compare with Kafka's at 0."""
    try:
        p = subprocess.run([kcoord, "--print-config"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if re.search(r"^group\.consumer\.assignment\.interval\.ms=", p.stdout, re.M):
        return ["group.consumer.assignment.interval.ms=0"]
    return []


def kafka_group_configs(bootstrap, group, configs):
    """Set group-level configs of `group` on Kafka: IncrementalAlterConfigs v0, resource type
    GROUP (32), operation SET. Returns None, or why it failed."""
    host, port = bootstrap.rsplit(":", 1)
    try:
        c = kafka_recovery.Client(host, int(port))
    except OSError as e:
        return "IncrementalAlterConfigs: %s" % e
    try:
        body = struct.pack(">ib", 1, 32) + kafka_recovery._str(group) + \
            struct.pack(">i", len(configs))
        for k, v in configs:
            body += kafka_recovery._str(k) + struct.pack(">b", 0) + kafka_recovery._str(v)
        body += b"\x00"  # validate only: false
        r = c.request(44, 0, body)
        r.take(">i")  # throttle
        for _ in range(r.take(">i")):
            err, msg = r.take(">h"), r.string()
            r.take(">b")
            r.string()
            if err != 0:
                return "IncrementalAlterConfigs of group %s: error %d%s" % (
                    group, err, ": " + msg if msg else "")
    except (OSError, ConnectionError, struct.error) as e:
        return "IncrementalAlterConfigs: %s" % e
    finally:
        c.close()
    return None


def kafka_cjoin_args(bootstrap, label):
    """A group prefix for one consumer-protocol join on Kafka, its group (the tool names it
    PREFIX-cjoin-0) set up with KAFKA_CJOIN_CONFIGS. Returns (tool arguments, error)."""
    prefix = "kb-cj%d-%d-%s" % (int(time.time()), os.getpid(), label)
    why = kafka_group_configs(bootstrap, prefix + "-cjoin-0", KAFKA_CJOIN_CONFIGS)
    # The setting reaches the group coordinator through the metadata log: give it a moment.
    time.sleep(0.5)
    return ["--group-prefix", prefix], why


def run_scenarios(tool, kcoord, plan, use_kafka, large):
    """All load scenario runs. Returns (Runs, info dict)."""
    runs = Runs()
    info = {"kafka": None, "kafka_reason": None, "kcoord_problems": [], "kcoord_exit": []}
    kafka = None
    if use_kafka:
        kafka = KafkaRef()
        try:
            why = kafka.start()
        except BaseException:  # Ctrl-C or SIGTERM while it starts: stop what it started
            kafka.stop()
            raise
        if why is not None:
            print("   Kafka not run: %s" % why, flush=True)
            info["kafka_reason"] = why
            kafka.stop()
            kafka = None
        else:
            info["kafka"] = kafka.version
            print("== Kafka warm-up (not recorded)", flush=True)
            scratch = Runs()
            for i, (scenario, wargs) in enumerate(plan["kafka_warmup"]):
                if "consumer" in wargs:
                    wargs = wargs + kafka_cjoin_args(kafka.bootstrap, "warm%d" % i)[0]
                run_tool(scratch, tool, KAFKA, scenario + " (warm-up)", scenario,
                         ["--bootstrap", kafka.bootstrap] + wargs, 0, kafka.pid,
                         ["--create-topic", "--topic-partitions", str(TOPIC_PARTITIONS)])
    else:
        info["kafka_reason"] = "--no-kafka was given"
    kafka_extra = ["--create-topic", "--topic-partitions", str(TOPIC_PARTITIONS)]

    def batch(target, server_pid, bootstrap, extra, rep):
        common = ["--bootstrap", bootstrap, "--label", TARGET_NAMES[target]]
        run_tool(runs, tool, target, "commit", "commit", common + plan["commit"], rep,
                 server_pid, extra)
        if target == ECHO:
            return
        for n in plan["joins"]:
            run_tool(runs, tool, target, "join-%d" % n, "join",
                     common + ["--members", str(n)] + plan["join"], rep, server_pid, extra)
        for n in plan["joins"]:
            args = common + ["--members", str(n)] + plan["cjoin"]
            if target == KAFKA:
                more, why = kafka_cjoin_args(bootstrap, "r%d-%d" % (rep, n))
                if why is not None:
                    runs.add(target=target, key="cjoin-%d" % n, scenario="join", rep=rep,
                             ok=False, result=None, error=why, cmd="", seconds=0)
                    print("   [%s] cjoin-%d FAILED: %s" % (TARGET_NAMES[target], n, why),
                          flush=True)
                    continue
                args += more
            run_tool(runs, tool, target, "cjoin-%d" % n, "join", args, rep, server_pid, extra)
        if target == KAFKA:
            # Kafka as it comes: assignment updates batched every 1000 ms (its default).
            for n in plan["joins"]:
                run_tool(runs, tool, target, "cjoin-%d-default" % n, "join",
                         common + ["--members", str(n)] + plan["cjoin"], rep, server_pid, extra)
        run_tool(runs, tool, target, "heartbeat", "heartbeat", common + plan["heartbeat"], rep,
                 server_pid, extra)

    def with_kcoord(policy, fn):
        srv = Kcoord(kcoord, policy, extra=interval_zero(kcoord))
        try:
            fn(srv)
        finally:
            rc, problems = srv.stop()
            info["kcoord_problems"] += ["flush=%s: %s" % (policy, p) for p in problems]
            if rc != 0:
                info["kcoord_exit"].append("flush=%s: exit status %s after SIGTERM" % (policy, rc))

    try:
        for rep in range(plan["reps"]):
            print("== load scenarios, round %d of %d" % (rep + 1, plan["reps"]), flush=True)
            for policy, target in (("always", KC_ALWAYS), ("never", KC_NEVER)):
                with_kcoord(policy, lambda s: batch(target, s.pid, s.bootstrap, None, rep))
            if kafka is not None:
                batch(KAFKA, kafka.pid, kafka.bootstrap, kafka_extra, rep)
            echo = Echo(tool)
            try:
                batch(ECHO, echo.pid, echo.bootstrap, ["--create-topic"], rep)
            finally:
                echo.stop()
        # Before the memory scenario, which leaves Kafka a million offsets (and its log cleaner
        # work) that would run beside the ladder.
        print("== heartbeat: highest sustained rate with p99 under %g ms" % HB_P99_LIMIT_MS,
              flush=True)

        def ladder(srv):
            servers = [(KC_ALWAYS, srv.bootstrap, srv.pid, None)]
            if kafka is not None:
                servers.append((KAFKA, kafka.bootstrap, kafka.pid, kafka_extra))
            info["hb_max"] = hb_ladder(tool, servers, plan)

        info["hb_max"] = {}
        with_kcoord("always", ladder)
        print("== memory (once per server)", flush=True)
        mem = plan["memory"] + ["--topic-partitions", str(TOPIC_PARTITIONS)]
        with_kcoord("always", lambda s: run_tool(
            runs, tool, KC_ALWAYS, "memory", "memory",
            ["--bootstrap", s.bootstrap, "--label", TARGET_NAMES[KC_ALWAYS]] + mem, 0, s.pid))
        if kafka is not None:
            probe = heap_probe_cmd(kafka.pid)
            run_tool(runs, tool, KAFKA, "memory", "memory",
                     ["--bootstrap", kafka.bootstrap, "--label", TARGET_NAMES[KAFKA]] + mem, 0,
                     kafka.pid, kafka_extra + (["--probe", probe] if probe else []))
        if large:
            print("== heartbeat, 100,000 members (once per server)", flush=True)
            with_kcoord("always", lambda s: run_tool(
                runs, tool, KC_ALWAYS, "heartbeat-large", "heartbeat",
                ["--bootstrap", s.bootstrap, "--label", TARGET_NAMES[KC_ALWAYS]] + plan["large"],
                0, s.pid))
            if kafka is not None:
                run_tool(runs, tool, KAFKA, "heartbeat-large", "heartbeat",
                         ["--bootstrap", kafka.bootstrap, "--label", TARGET_NAMES[KAFKA]] +
                         plan["large"], 0, kafka.pid, kafka_extra)
        print("== durability floor", flush=True)
        fdir = tempfile.mkdtemp(prefix="kcoord-bench-fsync-", dir="/tmp")
        try:
            run_tool(runs, tool, DISK, "fsync", "fsync-rate", [fdir] + plan["fsync"], 0)
        finally:
            shutil.rmtree(fdir, ignore_errors=True)
    finally:
        if kafka is not None:
            kafka.stop()
    return runs, info


# ---- Assignment batching (KIP-1263) --------------------------------------------------------

# The section's heading: --only-batching replaces the page's section that starts with it.
BATCHING_HEADING = ("## Assignment batching (KIP-1263): consumer-protocol joins at assignment "
                    "interval 0 and 1000 ms")
BATCHING_SETTING = "group.consumer.assignment.interval.ms"
BATCHING_TOP_LINE = ("- Assignment batching (its own section, *%s*): `tests/bench/bench.py "
                     "--only-batching` runs just it and replaces just that section, which says "
                     "when and at which commit it ran." % BATCHING_HEADING[3:])
# Members per join; each joins one new group with the consumer protocol, at interval 0 and at
# Kafka's default 1000 ms, on kcoord and on Kafka, `reps` times, the four alternating.
BATCHING_PLANS = {
    "full": {"reps": 3, "members": [10, 100, 1000]},
    "quick": {"reps": 1, "members": [10, 100]},
}
BATCHING_INTERVALS = (0, 1000)


def batching_key(members, interval):
    return "batch %d %d" % (members, interval)


def run_batching(tool, kcoord, plan, cjoin_args, use_kafka):
    """The assignment-batching runs: a fresh kcoord per run (its interval set with --set), and
    the reference broker (interval 0 as a group config of the run's group, 1000 as it comes).
    Returns (Runs, info)."""
    runs = Runs()
    info = {"problems": [], "exit": [], "kafka": None, "kafka_reason": None,
            "commit": head_commit(), "stale": sources_newer_than(kcoord)}
    kafka = None
    kafka_extra = ["--create-topic", "--topic-partitions", str(TOPIC_PARTITIONS)]
    if use_kafka:
        kafka = KafkaRef()
        try:
            why = kafka.start()
        except BaseException:
            kafka.stop()
            raise
        if why is not None:
            info["kafka_reason"] = why
            kafka.stop()
            kafka = None
        else:
            info["kafka"] = kafka.version
            print("== Kafka warm-up (not recorded)", flush=True)
            scratch = Runs()
            for i, interval in enumerate(BATCHING_INTERVALS):
                more = kafka_cjoin_args(kafka.bootstrap, "bwarm%d" % i)[0] if interval == 0 \
                    else []
                run_tool(scratch, tool, KAFKA, "cjoin (warm-up)", "join",
                         ["--bootstrap", kafka.bootstrap, "--members", "1000"] + cjoin_args +
                         more, 0, kafka.pid, kafka_extra)
    else:
        info["kafka_reason"] = "--no-kafka was given"
    try:
        for n in plan["members"]:
            print("== assignment batching: %d members" % n, flush=True)
            for rep in range(plan["reps"]):
                for interval in BATCHING_INTERVALS:
                    key = batching_key(n, interval)
                    srv = Kcoord(kcoord, "always", TOPIC_PARTITIONS,
                                 ["%s=%d" % (BATCHING_SETTING, interval)])
                    try:
                        m = wait_for_line(srv.log, r"metrics\.listener: serving (\S+)", srv.proc,
                                          30)
                        run_tool(runs, tool, KC_ALWAYS, key, "join",
                                 ["--bootstrap", srv.bootstrap, "--label", key, "--members",
                                  str(n)] + cjoin_args, rep, srv.pid)
                        r = runs.runs[-1]
                        if r["result"] is not None:
                            try:
                                r["result"].update(scrape_assignments(m.group(1)))
                            except (OSError, ValueError) as e:
                                print("   metrics: %s" % e, flush=True)
                    finally:
                        rc, problems = srv.stop()
                        info["problems"] += ["%s: %s" % (key, p) for p in problems]
                        if rc != 0:
                            info["exit"].append("%s: exit status %s after SIGTERM" % (key, rc))
                    if kafka is None:
                        continue
                    args = ["--bootstrap", kafka.bootstrap, "--label", key, "--members",
                            str(n)] + cjoin_args
                    if interval == 0:
                        more, why = kafka_cjoin_args(kafka.bootstrap, "b%d-%d" % (rep, n))
                        if why is not None:
                            runs.add(target=KAFKA, key=key, scenario="join", rep=rep, ok=False,
                                     result=None, error=why, cmd="", seconds=0)
                            continue
                        args += more
                    run_tool(runs, tool, KAFKA, key, "join", args, rep, kafka.pid, kafka_extra)
    finally:
        if kafka is not None:
            kafka.stop()
    info["commit_end"] = head_commit()
    return runs, info


def batching_section(runs, info, plan, build, started, tool_rel, elapsed, command, cjoin_args):
    out = []
    w = out.append

    def cell(target, key, metric, unit=" s"):
        v = runs.median(target, key, metric)
        if v is None:
            return "not run" if target == KAFKA and info["kafka"] is None else "failed"
        return fmt_num(v, unit)

    def assignments(key):
        i = runs.median(KC_ALWAYS, key, "assign_inline_n")
        o = runs.median(KC_ALWAYS, key, "assign_offloaded_n")
        if i is None and o is None:
            return "-"
        return "%d / %d" % (round(i or 0), round(o or 0))

    w(BATCHING_HEADING)
    w("")
    w("KIP-1263 (Kafka 4.3+): a consumer group's new target assignment is computed at most once "
      "per `%s` (default 1000 ms; a group may override it with its `consumer.assignment."
      "interval.ms` group config), so that a burst of joins costs one assignment; 0 computes it "
      "at every group epoch. kcoord and Apache Kafka %s side by side, each at interval 0 and at "
      "the default 1000 ms. Generated by `%s` on %s UTC, kcoord built from the work tree at "
      "commit %s (uncommitted changes not checked); %d run%s per row, each figure the median, "
      "the four (kcoord 0, Kafka 0, kcoord 1000, Kafka 1000) alternating run by run. The whole "
      "section took %.0f s."
      % (BATCHING_SETTING, info["kafka"] or "(not run)", command,
         started.strftime("%Y-%m-%d %H:%M"), info["commit"], plan["reps"],
         "" if plan["reps"] == 1 else "s", elapsed))
    w("")
    w("| members | interval | join: stable after, kcoord | Kafka | rolling join: stable after, "
      "kcoord | Kafka | kcoord target assignments: inline / offloaded |")
    w("|---:|---:|---:|---:|---:|---:|---|")
    for n in plan["members"]:
        for interval in BATCHING_INTERVALS:
            key = batching_key(n, interval)
            w("| %s | %d ms%s | %s | %s | %s | %s | %s |"
              % ("{:,}".format(n), interval, " (default)" if interval == 1000 else "",
                 cell(KC_ALWAYS, key, "join_s"), cell(KAFKA, key, "join_s"),
                 cell(KC_ALWAYS, key, "rolling_s"), cell(KAFKA, key, "rolling_s"),
                 assignments(key)))
    w("")
    w("- **Each run**: kcoord: a fresh `%s/kcoord --set listeners=127.0.0.1:0 --set "
      "data.dir=DIR --set topics=%s:%d --set group.initial.rebalance.delay.ms=0 --set "
      "log.flush.policy=always --set metrics.listener=127.0.0.1:0 --set %s=0|1000`; Kafka: "
      "the single KRaft node of `scripts/kafka-ref start --partitions 50 --initial-delay 0`, "
      "left at its default interval (1000 ms) and given `consumer.assignment.interval.ms=0` as "
      "a group config of the run's group (IncrementalAlterConfigs) for the 0 rows. Then `%s join "
      "--bootstrap ADDRESS --members N %s` (Kafka: with `--create-topic --topic-partitions %d` "
      "and a group prefix of its own per run)."
      % (build, TOPIC, TOPIC_PARTITIONS, BATCHING_SETTING, tool_rel, " ".join(cjoin_args),
         TOPIC_PARTITIONS))
    w("- **join**: N members join one new group at once with ConsumerGroupHeartbeat (server "
      "assignor uniform), heartbeating every 100 ms; **stable after**: from the first heartbeat "
      "until every member acknowledged a balanced assignment at the group epoch and "
      "ConsumerGroupDescribe confirmed it. **rolling join**: then one more member joins the "
      "stable group; the same until the N+1 are stable.")
    w("- **target assignments**: kcoord's `kcoord_consumer_assignment_seconds` histogram "
      "(/metrics) after the run, over the join and the rolling join: how many target "
      "assignments were computed on the event loop and on the thread pool. Kafka shows no such "
      "count.")
    w("- **Why 1000 ms is slower to settle**: the first member's heartbeat computes the group's "
      "first assignment at once; every epoch bump in the next 1000 ms waits for the group's "
      "timer, which computes one assignment for all of them when the interval is over, and the "
      "members learn of it at their next heartbeat. A burst of N joins then costs about 2 "
      "assignments instead of N, and the group settles about one interval later.")
    if info["kafka_reason"]:
        w("- Kafka not run: %s." % info["kafka_reason"])
    bad = runs.failures()
    if bad:
        w("- **Failed runs**: %s." % "; ".join("%s %s: %s" % (TARGET_NAMES[r["target"]],
                                                               r["key"], r["error"])
                                                for r in bad[:6]))
    if info["exit"]:
        w("- **kcoord did not stop cleanly**: %s." % "; ".join(info["exit"]))
    w("")
    w("Every run:")
    w("")
    w("| members | interval | server | join s | rolling s | assignments inline / offloaded |")
    w("|---:|---:|---|---|---|---|")
    for n in plan["members"]:
        for interval in BATCHING_INTERVALS:
            key = batching_key(n, interval)
            for target in (KC_ALWAYS, KAFKA):
                rs = [r for r in runs.runs if r["target"] == target and r["key"] == key]
                if not rs:
                    continue

                def vals(metric, unit):
                    return ", ".join(
                        fmt_num(r["result"][metric], unit)
                        if r["ok"] and isinstance(r["result"].get(metric), (int, float))
                        else "failed" for r in rs)

                asg = ", ".join(
                    "%d / %d" % (round(r["result"].get("assign_inline_n", 0)),
                                 round(r["result"].get("assign_offloaded_n", 0)))
                    if r["ok"] and target == KC_ALWAYS else "-" for r in rs)
                w("| %s | %d ms | %s | %s | %s | %s |"
                  % ("{:,}".format(n), interval, "kcoord" if target == KC_ALWAYS else "Kafka",
                     vals("join_s", ""), vals("rolling_s", ""), asg))
    w("")
    return out


# ---- Memory per member: its own connection or a shared one -------------------------------

# The section's heading: --only-member-memory replaces the page's section that starts with it.
MEMBER_HEADING = "## Memory per member: its own connection or a shared one"
MEMBER_TOP_LINE = ("- Memory per member (its own section, *%s*): `tests/bench/bench.py "
                   "--only-member-memory` runs just it and replaces just that section, which says "
                   "when and at which commit it ran." % MEMBER_HEADING[3:])

# Each case is one `kcoord-bench memory` run per server and repetition: (key, what the row
# says, arguments). "own": every member on a connection of its own, as real consumers are;
# "shared": many members per connection, what the member structures alone cost.
MEMBER_PLANS = {
    "full": {"reps": 3, "cases": [
        ("memory own", 5000, ["--groups", "500", "--group-size", "10", "--offsets", "500",
                              "--connections", "5000"]),
        ("memory shared", 100000, ["--groups", "10000", "--group-size", "10", "--offsets",
                                   "10000", "--connections", "1000"])]},
    "quick": {"reps": 1, "cases": [
        ("memory own", 1000, ["--groups", "100", "--group-size", "10", "--offsets", "100",
                              "--connections", "1000"]),
        ("memory shared", 10000, ["--groups", "1000", "--group-size", "10", "--offsets", "1000",
                                  "--connections", "100"])]},
}


def run_member_memory(tool, kcoord, plan, use_kafka):
    """The member-memory runs: kcoord (a fresh process per run) and Kafka (one broker, its live
    heap after a full GC) alternating. Returns (Runs, info dict)."""
    runs = Runs()
    info = {"kafka": None, "kafka_reason": None, "exit": [], "commit": git_revision()}
    kafka = None
    if use_kafka:
        kafka = KafkaRef()
        try:
            why = kafka.start()
        except BaseException:
            kafka.stop()
            raise
        if why is not None:
            print("   Kafka not run: %s" % why, flush=True)
            info["kafka_reason"] = why
            kafka.stop()
            kafka = None
        else:
            info["kafka"] = kafka.version
    else:
        info["kafka_reason"] = "--no-kafka was given"
    kafka_extra = ["--create-topic", "--topic-partitions", str(TOPIC_PARTITIONS)]
    try:
        for rep in range(plan["reps"]):
            for key, _members, args in plan["cases"]:
                print("== %s, round %d of %d" % (key, rep + 1, plan["reps"]), flush=True)
                srv = Kcoord(kcoord, "always")
                try:
                    run_tool(runs, tool, KC_ALWAYS, key, "memory",
                             ["--bootstrap", srv.bootstrap, "--label", TARGET_NAMES[KC_ALWAYS]] +
                             args + ["--topic-partitions", str(TOPIC_PARTITIONS)], rep, srv.pid)
                finally:
                    rc, _problems = srv.stop()
                    if rc != 0:
                        info["exit"].append("%s: exit status %s after SIGTERM" % (key, rc))
                if kafka is not None:
                    probe = heap_probe_cmd(kafka.pid)
                    run_tool(runs, tool, KAFKA, key, "memory",
                             ["--bootstrap", kafka.bootstrap, "--label", TARGET_NAMES[KAFKA]] +
                             args, rep, kafka.pid,
                             kafka_extra + (["--probe", probe] if probe else []))
    finally:
        if kafka is not None:
            kafka.stop()
    return runs, info


def member_memory_section(runs, info, plan, build, started, tool_rel, elapsed, command):
    out = []
    w = out.append
    reps = plan["reps"]
    own, shared = plan["cases"][0], plan["cases"][1]

    def med(target, key, metric):
        return runs.median(target, key, metric)

    def cell(v, unit=" B"):
        return "failed" if v is None else fmt_num(v, unit)

    def size(result, target, metric):
        v = result.get(("probe_" if target == KAFKA else "") + metric)
        return fmt_num(v, " B") if isinstance(v, (int, float)) else "-"

    def kafka_cell(key, metric):
        if info["kafka"] is None:
            return "not run"
        return cell(med(KAFKA, key, metric))

    w(MEMBER_HEADING)
    w("")
    w("What one idle member costs each server, counted two ways: with a connection of its own "
      "(as every real consumer holds one, to its group's coordinator) and without one (many "
      "members share a connection: the member's state alone). Generated by `%s` on %s UTC, "
      "kcoord built from the work tree at commit %s%s; "
      "%s per case and server, kcoord (a fresh process each run) and Kafka alternating; each "
      "figure the median. The whole section took %.0f s."
      % (command, started.strftime("%Y-%m-%d %H:%M"), info["commit"],
         "; Apache Kafka %s" % info["kafka"] if info["kafka"] else "",
         "%d runs" % reps if reps > 1 else "one run", elapsed))
    w("")
    w("| per idle member | kcoord | Kafka | ratio |")
    w("|---|---:|---:|---|")
    rows = [
        ("with its own connection (%s members, one connection each): the member and its "
         "connection" % "{:,}".format(own[1]), own[0], "bytes_per_member_with_connection",
         "probe_bytes_per_member_with_connection"),
        ("without a connection of its own (%s members over %s connections): the member alone"
         % ("{:,}".format(shared[1]), "{:,}".format(int(shared[2][shared[2].index(
             "--connections") + 1]))), shared[0], "bytes_per_member", "probe_bytes_per_member"),
        ("an idle connection alone (opened, ApiVersions answered, no member yet; from the "
         "%s-connection runs)" % "{:,}".format(own[1]), own[0], "bytes_per_connection",
         "probe_bytes_per_connection"),
    ]
    for name, key, kc_metric, kafka_metric in rows:
        kc = med(KC_ALWAYS, key, kc_metric)
        kf = med(KAFKA, key, kafka_metric) if info["kafka"] else None
        w("| %s | %s | %s | %s |" % (name, cell(kc), kafka_cell(key, kafka_metric),
                                     ratio_text(kc, kf, False)))
    w("")
    w("- **Each run**: `%s memory --bootstrap ADDRESS ARGS --topic-partitions %d --server-pid "
      "PID` (Kafka: also `--create-topic` and `--probe` with `jcmd PID GC.run` then "
      "`GC.heap_info`), ARGS: %s. kcoord: `%s/kcoord --set listeners=127.0.0.1:0 --set "
      "data.dir=DIR --set topics=%s:%d --set group.initial.rebalance.delay.ms=0 --set "
      "log.flush.policy=always%s`, a fresh process and data directory per run. Kafka: one "
      "broker from scripts/kafka-ref (`start --partitions 50 --initial-delay 0`), as in the "
      "load scenarios, kept for all its runs."
      % (tool_rel, TOPIC_PARTITIONS,
         "; ".join("**%s**: `%s`" % (k.split(" ")[1], " ".join(a)) for k, _m, a in
                   plan["cases"]),
         build, TOPIC, TOPIC_PARTITIONS, "".join(" --set " + x for x in
                                                 side_settings(os.path.join(build, "kcoord")))))
    w("- **What is measured**: the server's VmRSS (kcoord) or live heap after a full GC "
      "(Kafka; its RSS says little: the heap is reserved up front) after 2 s of quiet before the "
      "connections are opened, after they are (each sends ApiVersions), and after the members "
      "joined their groups of 10 (classic protocol, JoinGroup with the MEMBER_ID_REQUIRED round "
      "trip, SyncGroup) and stay, heartbeating every 20 s. **With its own connection**: the "
      "growth from before the connections to after the members, divided by the members. "
      "**Without**: from after the connections to after the members. **An idle connection**: "
      "from before to after the connections, divided by them. kcoord's figures are RSS, so they "
      "include what the allocator keeps of memory freed after the join (the requests held "
      "while the groups formed); Kafka's exclude its garbage.")
    for key, _m, _a in plan["cases"]:
        for target in (KC_ALWAYS, KAFKA):
            vals = [r for r in runs.runs if r["target"] == target and r["key"] == key]
            if not vals:
                continue
            w("- %s, %s: %s" % (TARGET_NAMES[target], key, "; ".join(
                ("per member %s, with its connection %s, per connection %s" % (
                    size(r["result"], target, "bytes_per_member"),
                    size(r["result"], target, "bytes_per_member_with_connection"),
                    size(r["result"], target, "bytes_per_connection")))
                if r["ok"] and r["result"] else "failed (%s)" % r["error"] for r in vals)))
    if info["kafka_reason"]:
        w("- Kafka not run: %s." % info["kafka_reason"])
    if info["exit"]:
        w("- **kcoord did not stop cleanly**: %s." % "; ".join(info["exit"]))
    w("")
    return out


# ---- Assignment offload --------------------------------------------------------------------

# The section's heading: --only-offload replaces the page's section that starts with it.
OFFLOAD_HEADING = "## Assignment offload: the event loop during a consumer-protocol join"
OFFLOAD_SETTING = "group.consumer.assignor.offload.enable"
# Its line in the list at the top of the page.
OFFLOAD_TOP_LINE = ("- Assignment offload (its own section, *%s*): `tests/bench/bench.py --only-offload` "
                    "runs just it and replaces just that section, which says when and at which "
                    "commit it ran." % OFFLOAD_HEADING[3:])

# (members, partitions of the subscribed topic, heartbeat interval ms), each run with offload on
# (kcoord's default) and off, `reps` times, the two alternating run by run.
OFFLOAD_PLANS = {
    "full": {"reps": 3,
             "cases": [(100, 100000, 5000), (1000, 100000, 5000), (1000, 10000, 5000),
                       (100, 100000, 100), (1000, 10000, 100)]},
    "quick": {"reps": 1, "cases": [(100, 10000, 100)]},
}
OFFLOAD_ARGS = ["--protocol", "consumer", "--rolling", "--stall-probe", "--no-leave",
                "--timeout", "600"]
OFFLOAD_METRICS = ["join_s", "rolling_s", "probe_idle_p50_ms", "probe_idle_max_ms",
                   "probe_join_n", "probe_join_p50_ms", "probe_join_p99_ms", "probe_join_max_ms",
                   "probe_steady_p50_ms", "probe_steady_p99_ms", "probe_steady_max_ms",
                   "probe_rolling_n", "probe_rolling_p50_ms", "probe_rolling_p99_ms",
                   "probe_rolling_max_ms", "assign_inline_n", "assign_inline_ms",
                   "assign_offloaded_n", "assign_offloaded_ms", "server_cpu_s", "wall_s",
                   "other_cores"]


def head_commit():
    """HEAD's commit, read from .git without running git (and without saying whether the work
    tree differs from it)."""
    gitdir = os.path.join(ROOT, ".git")
    try:
        with open(os.path.join(gitdir, "HEAD")) as f:
            head = f.read().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        try:
            with open(os.path.join(gitdir, ref)) as f:
                return f.read().strip()[:12]
        except OSError:
            with open(os.path.join(gitdir, "packed-refs")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref:
                        return parts[0][:12]
    except OSError:
        pass
    return "unknown"


def cpu_busy_s():
    """CPU time the machine spent so far (every core), from /proc/stat, in seconds: user, nice,
    system, irq and softirq (the kernel's handling of the run's own loopback traffic counts
    there rather than in the processes' time, so what is left after subtracting the processes
    of the run is an upper bound of what other processes took)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[4 + 1] + v[4 + 2]) / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def scrape_assignments(url):
    """kcoord_consumer_assignment_seconds count and sum per mode from the metrics endpoint."""
    import urllib.request
    out = {}
    with urllib.request.urlopen(url, timeout=30) as r:
        text = r.read().decode("utf-8", "replace")
    for m in re.finditer(r'^kcoord_consumer_assignment_seconds_(sum|count)\{mode="(\w+)"\} (\S+)$',
                         text, re.M):
        kind, mode, v = m.group(1), m.group(2), float(m.group(3))
        key = "assign_%s_%s" % (mode, "n" if kind == "count" else "ms")
        out[key] = v if kind == "count" else v * 1000
    return out


def offload_key(members, partitions, hb, on):
    return "offload %d %d %d %s" % (members, partitions, hb, "on" if on else "off")


def save_offload_runs(runs, build):
    """Every run's JSON result, for a closer look: BUILD_DIR/bench/offload-runs.json."""
    path = os.path.join(build, "bench", "offload-runs.json")
    with open(path, "w") as f:
        json.dump(runs.runs, f, indent=1)
    print("bench: every offload run's result is in %s" % path, flush=True)


def sources_newer_than(binary):
    """The files under src/ changed after `binary` was built (it does not show them)."""
    try:
        built = os.stat(binary).st_mtime
    except OSError:
        return []
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            path = os.path.join(d, f)
            if f.endswith((".c", ".h")) and os.stat(path).st_mtime > built:
                out.append(os.path.relpath(path, ROOT))
    return sorted(out)


def run_offload(tool, kcoord, plan):
    """The assignment-offload runs: a fresh kcoord per run. Returns (Runs, info)."""
    runs = Runs()
    info = {"problems": [], "exit": [], "loadavg": [], "commit": head_commit(),
            "stale": sources_newer_than(kcoord)}
    if info["stale"]:
        print("bench: warning: %s is older than %s" % (kcoord, ", ".join(info["stale"][:5])),
              flush=True)
    for members, partitions, hb in plan["cases"]:
        print("== assignment offload: %d members, %s partitions, heartbeat %d ms"
              % (members, "{:,}".format(partitions), hb), flush=True)
        for rep in range(plan["reps"]):
            for on in (True, False):
                # At assignment interval 0, so that the off rows compute every target
                # assignment inline, as the section says.
                extra = interval_zero(kcoord) + ([] if on else [OFFLOAD_SETTING + "=false"])
                srv = Kcoord(kcoord, "always", partitions, extra)
                key = offload_key(members, partitions, hb, on)
                try:
                    m = wait_for_line(srv.log, r"metrics\.listener: serving (\S+)", srv.proc, 30)
                    with open("/proc/loadavg") as f:
                        info["loadavg"].append(float(f.read().split()[0]))
                    busy0, srv0 = cpu_busy_s(), proc_cpu_s(srv.pid)
                    tool0 = os.times()
                    t0 = time.monotonic()
                    run_tool(runs, tool, KC_ALWAYS, key, "join",
                             ["--bootstrap", srv.bootstrap, "--label", key, "--members",
                              str(members), "--topic-partitions", str(partitions),
                              "--heartbeat-ms", str(hb)] + OFFLOAD_ARGS, rep)
                    wall = time.monotonic() - t0
                    tool1 = os.times()
                    busy1, srv1 = cpu_busy_s(), proc_cpu_s(srv.pid)
                    r = runs.runs[-1]
                    if r["result"] is not None:
                        try:
                            r["result"].update(scrape_assignments(m.group(1)))
                        except (OSError, ValueError) as e:
                            print("   metrics: %s" % e, flush=True)
                        if srv0 is not None and srv1 is not None:
                            tool_s = (tool1.children_user + tool1.children_system -
                                      tool0.children_user - tool0.children_system)
                            r["result"]["server_cpu_s"] = srv1 - srv0
                            r["result"]["wall_s"] = wall
                            r["result"]["other_cores"] = max(
                                0.0, (busy1 - busy0) - (srv1 - srv0) - tool_s) / wall
                finally:
                    rc, problems = srv.stop()
                    info["problems"] += ["%s: %s" % (key, p) for p in problems]
                    if rc != 0:
                        info["exit"].append("%s: exit status %s after SIGTERM" % (key, rc))
    info["commit_end"] = head_commit()
    info["stale_end"] = sources_newer_than(kcoord)
    return runs, info


def offload_section(runs, info, plan, build, started, tool_rel, elapsed, command):
    out = []
    w = out.append
    reps = plan["reps"]

    def med(key, metric):
        return runs.median(KC_ALWAYS, key, metric)

    def num(v, unit=""):
        return "failed" if v is None else fmt_num(v, unit)

    def count(v):
        return "failed" if v is None else "%d" % round(v)

    def trio(key, phase):
        vals = [med(key, "probe_%s_%s_ms" % (phase, q)) for q in ("p50", "p99", "max")]
        if all(v is None for v in vals):
            return "failed"
        return " / ".join(num(v) for v in vals)

    w(OFFLOAD_HEADING)
    w("")
    w("What offloading the server-side assignor (`%s`, default true, with "
      "`group.consumer.assignor.offload.threshold`, default 10000: members + partitions of the "
      "subscribed topics) buys while a KIP-848 consumer group of many members joins at once, on "
      "a topic of many partitions: kcoord with its default settings (offload on) against the same "
      "kcoord with `--set %s=false` (every target assignment computed inside the "
      "ConsumerGroupHeartbeat that bumped the group epoch, on the event loop). Generated by "
      "`%s` on %s UTC, kcoord built from the work tree at commit %s (uncommitted changes not "
      "checked%s); %s, offload on and off alternating run by run. The whole section took %.0f s."
      % (OFFLOAD_SETTING, OFFLOAD_SETTING, command, started.strftime("%Y-%m-%d %H:%M"),
         info["commit"],
         "; **the kcoord binary was older than %s**" % ", ".join(info["stale"]) if info["stale"]
         else "%s%s" % ("; HEAD moved to %s during the runs" % info["commit_end"]
                        if info["commit_end"] != info["commit"] else "",
                        "; **%s changed during the runs, which used the binary built before**"
                        % ", ".join(info["stale_end"]) if info["stale_end"] else ""),
         "one run per row" if reps == 1 else
         "%d runs per row, each figure the median of its %d" % (reps, reps), elapsed))
    w("")
    w("| members x partitions, heartbeat | offload | join: stable after | join: probe ms, "
      "median / p99 / max | stable group: probe ms, median / p99 / max | rolling join: stable "
      "after | rolling join: probe ms, median / p99 / max | target assignments: inline / "
      "offloaded (assignor ms) |")
    w("|---|---|---:|---|---|---:|---|---|")
    for members, partitions, hb in plan["cases"]:
        for on in (True, False):
            key = offload_key(members, partitions, hb, on)
            asg = "%s / %s (%s)" % (
                count(med(key, "assign_inline_n")), count(med(key, "assign_offloaded_n")),
                num((med(key, "assign_inline_ms") or 0) + (med(key, "assign_offloaded_ms") or 0))
                if med(key, "assign_inline_n") is not None else None)
            w("| %s x %s, %d ms | %s | %s | %s | %s | %s | %s | %s |"
              % ("{:,}".format(members), "{:,}".format(partitions), hb,
                 "on (default)" if on else "**off**", num(med(key, "join_s"), " s"),
                 trio(key, "join"), trio(key, "steady"), num(med(key, "rolling_s"), " s"),
                 trio(key, "rolling"), asg))
    w("")
    idle50 = [v for rr in runs.runs if rr["result"] for v in [rr["result"].get("probe_idle_p50_ms")]
              if isinstance(v, (int, float))]
    idlemax = [v for rr in runs.runs if rr["result"]
               for v in [rr["result"].get("probe_idle_max_ms")] if isinstance(v, (int, float))]
    other = [rr["result"]["other_cores"] for rr in runs.runs
             if rr["result"] and isinstance(rr["result"].get("other_cores"), (int, float))]
    w("- **Each run**: a fresh `%s/kcoord --set listeners=127.0.0.1:0 --set data.dir=DIR --set "
      "topics=%s:PARTITIONS --set group.initial.rebalance.delay.ms=0 --set "
      "log.flush.policy=always%s` (plus `--set %s=false` for the **off** rows), then `%s join "
      "--bootstrap ADDRESS --members N --topic-partitions PARTITIONS --heartbeat-ms MS %s`, "
      "then SIGTERM."
      % (build, TOPIC, "".join(" --set " + x for x in side_settings(os.path.join(build, "kcoord"))),
         OFFLOAD_SETTING, tool_rel, " ".join(OFFLOAD_ARGS)))
    w("- **join**: N members join one new group at once with ConsumerGroupHeartbeat, as in "
      "*join (consumer protocol)* above (server assignor uniform, every member on its own "
      "connection, one heartbeat in flight each, the next one at once after an answer that "
      "changed the member's epoch or assignment, else after the heartbeat interval of the row). "
      "**stable after**: from the first heartbeat until every member acknowledged a balanced "
      "assignment of all the partitions at the group epoch and ConsumerGroupDescribe confirmed "
      "it. **rolling join**: then, after the members' heartbeats were spread over the interval "
      "and 2 intervals + 0.5 s passed, one more member joins; the same until the N+1 are stable.")
    w("- **probe**: the load generator's `--stall-probe`: one more connection, on a thread of its "
      "own, sends ApiVersions (answered by kcoord's event loop from a constant table) every 5 ms "
      "with one in flight: the next one 5 ms after the previous one was sent, or at once when "
      "the answer took longer. A round trip counts in the phase in which it was sent: **join** "
      "from the first join heartbeat until stable, **stable group** from then until the rolling "
      "member's first heartbeat (the N members only heartbeat: no assignment is computed), "
      "**rolling join** until stable again. Its max is the longest time a request to this "
      "kcoord waited for an answer, to within 5 ms. Before each join, 1 s of the probe alone "
      "gives the floor: median %s ms, max %s ms (medians over all runs)."
      % (num(statistics.median(idle50)) if idle50 else "-",
         num(statistics.median(idlemax)) if idlemax else "-"))
    w("- **target assignments**: kcoord's `kcoord_consumer_assignment_seconds` histogram "
      "(/metrics) after the run: how many target assignments were computed on the event loop "
      "(inline) and on the thread pool (offloaded) over the join and the rolling join, and the "
      "assignor's time for them in all (the assignor alone: building the members' new "
      "assignments from its result and writing their records runs on the event loop in both "
      "modes).")
    w("- **Machine load**: %s cores (`nproc`) shared by kcoord (its event loop and, offload "
      "on, a thread-pool worker), the load generator and the probe. Other processes (another "
      "engineer's tests may run meanwhile) took at most %s of a core during a run (median over "
      "the runs; the most in one run: %s): the machine's CPU time over the run from /proc/stat "
      "(user, nice, system, irq, softirq) minus kcoord's and the load generator's, per second, "
      "an upper bound since the kernel's handling of the run's own loopback traffic counts in "
      "it. Load average (1 min) at the start of the runs: %s."
      % (machine()["nproc"],
         num(statistics.median(other)) if other else "-",
         num(max(other)) if other else "-",
         "%.2f to %.2f" % (min(info["loadavg"]), max(info["loadavg"])) if info["loadavg"] else "-"))
    w("- **stable after** is quantised by the heartbeat interval: a member learns of a new "
      "target, or that partitions it waits for were released, only from a heartbeat, so a run "
      "that needs one more round of heartbeats takes about one interval longer%s. In the table "
      "of every run, **-**: no probe was sent in that phase (the one in flight, sent in the "
      "phase before, was still waiting)."
      % (" (5 s in the 5000 ms rows)" if any(h == 5000 for _, _, h in plan["cases"]) else ""))
    w("- **Kafka**: Apache Kafka 4.4 also offloads its assignor by default "
      "(`group.consumer.assignor.offload.enable=true`) and is not run here: the question is "
      "what kcoord's offload buys kcoord, and a Kafka broker would need a topic of 100,000 "
      "partitions, i.e. 100,000 partition logs created and led by the single KRaft node of "
      "scripts/kafka-ref on this 2-core machine, a set-up that would measure the broker's "
      "partition handling rather than its group coordinator.")
    w("")
    w("**Reading.** %s" % offload_reading(runs, plan))
    w("")
    w("Every run (offload on and off alternating):")
    w("")
    w("| case | offload | runs | join s | join probe max ms | stable group probe p99 ms | "
      "rolling s | rolling probe max ms | assignments inline / offloaded | kcoord CPU s | "
      "other load, cores |")
    w("|---|---|---:|---|---|---|---|---|---|---|---|")
    for members, partitions, hb in plan["cases"]:
        for on in (True, False):
            key = offload_key(members, partitions, hb, on)
            mine = [rr for rr in runs.runs if rr["key"] == key]

            def col(metric):
                return ", ".join("failed" if not rr["ok"] or not rr["result"] else
                                 fmt_num(rr["result"][metric])
                                 if isinstance(rr["result"].get(metric), (int, float)) else "-"
                                 for rr in mine) or "-"
            asg = ", ".join("%d / %d" % (round(rr["result"].get("assign_inline_n") or 0),
                                         round(rr["result"].get("assign_offloaded_n") or 0))
                            if rr["result"] else "failed" for rr in mine)
            fails = [rr["error"].replace("|", "/")[:200] for rr in mine if not rr["ok"]]
            w("| %s x %s, %d ms | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |"
              % ("{:,}".format(members), "{:,}".format(partitions), hb, "on" if on else "off",
                 len(mine), col("join_s"), col("probe_join_max_ms"), col("probe_steady_p99_ms"),
                 col("rolling_s"), col("probe_rolling_max_ms"), asg, col("server_cpu_s"),
                 col("other_cores") + ("; **failed**: " + "; ".join(fails) if fails else "")))
    w("")
    if info["problems"] or info["exit"]:
        w("kcoord logged warnings or errors during these runs (first 10):")
        w("")
        for p in (info["exit"] + info["problems"])[:10]:
            w("    " + p)
        w("")
    return out


def offload_reading(runs, plan):
    """Two sentences computed from the figures: what offload changed, and how to read the
    times to stable and the stalls."""
    def med(key, metric):
        return runs.median(KC_ALWAYS, key, metric)

    def span(key, metric):
        v = runs.values(KC_ALWAYS, key, metric)
        return "%s-%s" % (fmt_num(min(v)), fmt_num(max(v))) if len(v) > 1 else ""

    def case_name(members, partitions, hb):
        return "%s x %s at %d ms" % ("{:,}".format(members), "{:,}".format(partitions), hb)

    first, slower, steady, failed, waited = [], [], [], [], {}
    for members, partitions, hb in plan["cases"]:
        on = offload_key(members, partitions, hb, True)
        off = offload_key(members, partitions, hb, False)
        name = case_name(members, partitions, hb)
        if med(on, "join_s") is None or med(off, "join_s") is None:
            failed.append(name)
            continue
        first.append("%s: %s / %s s, %s / %s ms, %s / %s s"
                     % (name, fmt_num(med(on, "join_s")), fmt_num(med(off, "join_s")),
                        fmt_num(med(on, "probe_join_max_ms") or 0),
                        fmt_num(med(off, "probe_join_max_ms") or 0),
                        fmt_num(med(on, "server_cpu_s") or 0),
                        fmt_num(med(off, "server_cpu_s") or 0)))
        for what, metric in (("join", "join_s"), ("rolling join", "rolling_s")):
            a, b = med(on, metric), med(off, metric)
            if a is not None and b is not None and a > 1.1 * b:
                ra, rb = span(on, metric), span(off, metric)
                slower.append("the %s of %s (%s / %s s%s)"
                              % (what, name, fmt_num(a), fmt_num(b),
                                 "; runs %s / %s s" % (ra, rb) if ra and rb else ""))
        if hb >= 1000:
            # Offloaded joins either settle within the first round of heartbeats or wait for
            # the next interval: count the runs of each kind.
            v = runs.values(KC_ALWAYS, on, "join_s")
            w_, n_ = waited.get(hb, (0, 0))
            waited[hb] = (w_ + sum(1 for x in v if x >= hb / 2000), n_ + len(v))
        st = med(on, "probe_steady_p99_ms")
        if st is not None:
            steady.append((st, name))
    idle = [rr["result"]["probe_idle_p50_ms"] for rr in runs.runs if rr["result"] and
            isinstance(rr["result"].get("probe_idle_p50_ms"), (int, float))]
    floor = statistics.median(idle) if idle else None
    s1 = ("Offload on / off, medians of the time to stable, of the join's longest probe wait and "
          "of kcoord's CPU time over the run: %s%s." % (
              "; ".join(first) or "no case succeeded",
              " (failed: %s)" % ", ".join(failed) if failed else ""))
    parts = []
    for hb, (w_, n_) in sorted(waited.items()):
        if 0 < w_ < n_:
            parts.append("with offload on, %d of the %d runs at %d ms took about one heartbeat "
                         "interval (%g s) longer than the others, which took under half of one: a "
                         "member whose heartbeat was answered while the job ran learns of its "
                         "new target only from its next interval heartbeat"
                         % (w_, n_, hb, hb / 1000))
    if slower:
        parts.append("%s took longer with offload on" % " and ".join(slower))
    if steady and floor is not None:
        worst = max(steady)
        if worst[0] >= max(10.0, 20 * floor):
            parts.append("even while the group is stable and its members only heartbeat, with "
                         "no assignment to compute, the probe's p99 (offload on) reaches %s ms "
                         "(%s; floor %s ms): work every heartbeat does, which offload does not "
                         "move" % (fmt_num(worst[0]), worst[1], fmt_num(floor)))
        else:
            parts.append("while the group is stable and its members only heartbeat, the "
                         "probe's p99 stays at %s ms or less (floor %s ms), so the stalls are "
                         "the joins' own work" % (fmt_num(worst[0]), fmt_num(floor)))
    if not parts:
        return s1
    s2 = "; ".join(parts)
    return s1 + " " + s2[0].upper() + s2[1:] + "."


def splice_section(path, heading, lines, top_line=None):
    """Replace the section of the page at `path` that starts with `heading` (up to the next
    heading of the same level) with `lines`, or insert it before "## Load time" (or at the end)
    when the page has none; add `top_line` to the list at the top of the page when it has no
    such line yet. The rest of the page is kept as it is."""
    try:
        with open(path) as f:
            page = f.read().split("\n")
    except FileNotFoundError:
        page = ["# kcoord benchmarks", ""]
    level = heading.split(" ", 1)[0] + " "
    start = next((i for i, l in enumerate(page) if l == heading), None)
    if start is not None:
        end = next((i for i in range(start + 1, len(page)) if page[i].startswith(level)),
                   len(page))
    else:
        start = end = next((i for i, l in enumerate(page) if l.startswith("## Load time")),
                           len(page))
    page[start:end] = lines
    if top_line is not None and not any(l.startswith(top_line[:30]) for l in page):
        # The page's list at the top (before its first "## " heading): add the line after it.
        first = next((i for i, l in enumerate(page) if l.startswith("## ")), len(page))
        last = max((i for i in range(first) if page[i].startswith("- ")), default=None)
        if last is not None:
            page.insert(last + 1, top_line)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(page))
    os.replace(path + ".tmp", path)


# The section "## Hostile load" (up to its end marker line) is written by tests/bench/hostile.py
# (`make bench-hostile`); a full run keeps it as the page has it.
HOSTILE_HEADING = "## Hostile load"
HOSTILE_END = "<!-- end of the hostile-load section (tests/bench/hostile.py) -->"
HOSTILE_TOP_LINE = ("- Hostile load (its own section, *Hostile load*): `make bench-hostile` "
                    "(tests/bench/hostile.py) runs just it and replaces just that section, which "
                    "says when and at which commit each column ran.")


def kept_hostile_section(path):
    """The page's hostile-load section, as lines, or [] when it has none."""
    try:
        with open(path) as f:
            page = f.read().split("\n")
    except FileNotFoundError:
        return []
    start = next((i for i, l in enumerate(page) if l == HOSTILE_HEADING), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(page)) if page[i] == HOSTILE_END), None)
    return page[start:end + 1] + [""] if end is not None else []


# ---- Compaction beside commits -------------------------------------------------------------

# The section's heading: --only-compaction replaces the page's section that starts with it.
COMPACTION_HEADING = "## Compaction beside commits: commit latency on partitions being compacted"
COMPACTION_TOP_LINE = ("- Compaction beside commits (its own section, *%s*): `tests/bench/bench.py "
                       "--only-compaction` runs just it and replaces just that section; its "
                       "*before* column is kept in docs/bench/compaction-before.json."
                       % COMPACTION_HEADING[3:])
COMPACTION_SEGMENT = 65536  # offsets.topic.segment.bytes: segments roll every few hundred ms
COMPACTION_BACKOFF_MS = 200  # log.cleaner.backoff.ms with the cleaner on
COMPACTION_OFF_MS = 3600000  # ... and "off": no round within a run
COMPACTION_PLANS = {
    "full": {"reps": 3, "duration": 10},
    "quick": {"reps": 1, "duration": 5},
}
COMPACTION_METRICS = ["p50_ms", "p99_ms", "p999_ms", "max_ms", "requests_per_s", "compactions"]


def compaction_json(label):
    return os.path.join(ROOT, "docs", "bench", "compaction-%s.json" % label)


def run_compaction(tool, builds, plan):
    """`kcoord-bench commit` (its defaults: 100 groups x 10 partitions, 8 connections x depth
    16) against a fresh kcoord with 64 KiB segments, per flush policy with the cleaner on and
    off, and per build (`builds`: [(label, kcoord)]), all alternating, `reps` times. Returns
    {label: (runs: list of dicts, problems)}."""
    out = {label: ([], []) for label, _ in builds}
    plan_runs = [(r, p, c, b) for r in range(plan["reps"]) for p in ("never", "always")
                 for c in ("off", "on") for b in builds]
    for rep, policy, cleaner, (label, kcoord) in plan_runs:
        runs, problems = out[label]
        backoff = COMPACTION_BACKOFF_MS if cleaner == "on" else COMPACTION_OFF_MS
        extra = ["offsets.topic.segment.bytes=%d" % COMPACTION_SEGMENT,
                 "log.cleaner.backoff.ms=%d" % backoff]
        key = "%s %s" % (policy, cleaner)
        print("== compaction beside commits: %s, flush %s, cleaner %s, run %d"
              % (label, policy, cleaner, rep + 1), flush=True)
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
        srv = Kcoord(kcoord, policy, TOPIC_PARTITIONS, extra)
        result, error = None, None
        try:
            wait_for_line(srv.log, r"all \d+ partitions loaded", srv.proc, 60)
            cmd = [tool, "commit", "--bootstrap", srv.bootstrap, "--duration",
                   str(plan["duration"]), "--server-pid", str(srv.pid)]
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=TOOL_TIMEOUT_S)
            for line in p.stdout.splitlines():
                if line.startswith("{"):
                    result = json.loads(line)
            if p.returncode != 0 or result is None:
                error = "exit %d: %s" % (p.returncode, " / ".join(
                    (p.stderr.strip() or p.stdout.strip()).splitlines()[-3:]))
            with open(srv.log, errors="replace") as f:
                done = sum(1 for l in f if " cleaned: " in l)
            if result is not None:
                result["compactions"] = done
        finally:
            rc, bad = srv.stop()
            problems += ["%s: %s" % (key, b) for b in bad]
            if rc != 0:
                problems.append("%s: exit status %s after SIGTERM" % (key, rc))
        runs.append({"key": key, "rep": rep, "ok": error is None, "error": error,
                     "loadavg": load,
                     "result": {m: result.get(m) for m in COMPACTION_METRICS}
                     if result else None})
        r = runs[-1]["result"] or {}
        print("   p99 %s ms, max %s ms, %s commits/s, %s compactions, load %.1f%s"
              % (r.get("p99_ms"), r.get("max_ms"), r.get("requests_per_s"),
                 r.get("compactions"), load, "" if error is None else "  FAILED: " + error),
              flush=True)
    return out


def compaction_values(data, key, metric):
    return [r["result"][metric] for r in data["runs"]
            if r["key"] == key and r["ok"] and isinstance(r["result"].get(metric), (int, float))]


def compaction_section(started, elapsed, command):
    """The section, from docs/bench/compaction-before.json and compaction-after.json (whichever
    exist), as lines."""
    out = []
    w = out.append
    data = {}
    for label in ("before", "after"):
        try:
            with open(compaction_json(label)) as f:
                data[label] = json.load(f)
        except (OSError, ValueError):
            pass
    w(COMPACTION_HEADING)
    w("")
    w("What a partition's log cleaner costs the commits to that partition (issue 14: a "
      "compaction must never delay a flush). `kcoord-bench commit` (100 groups x 10 partitions "
      "per OffsetCommit, 8 connections x 16 in flight, %s s after a 1 s warm-up) against a fresh "
      "kcoord with `offsets.topic.segment.bytes=%d`, so that every partition rolls a segment "
      "every few hundred milliseconds, and `log.cleaner.backoff.ms=%d` (cleaner on: a round "
      "over the 50 partitions every 200 ms compacts each one whose closed segments are half "
      "new) or `=%d` (cleaner off: no round within the run); per flush policy, cleaner off "
      "and on, before and after, all alternating run by run. **compactions** counts the partitions the cleaner compacted "
      "during the run (its `cleaned:` log lines). Latencies are per request, from the "
      "client, in ms."
      % (COMPACTION_PLANS["full"]["duration"], COMPACTION_SEGMENT, COMPACTION_BACKOFF_MS,
         COMPACTION_OFF_MS))
    w("")
    w("This section was written by `%s` on %s UTC (its runs took %.0f s). The columns:" %
      (command, started.strftime("%Y-%m-%d %H:%M"), elapsed))
    w("")
    for label in ("before", "after"):
        if label in data:
            d = data[label]
            loads = sorted(r["loadavg"] for r in d["runs"] if "loadavg" in r)
            w("- **%s**: %s; %son %s UTC, %s; the machine's load average as each run "
              "started: %s." % (label, d["note"], "" if d["command"] == command else
                                "`%s` " % d["command"], d["when"], d["machine"],
                                "median %.1f (%.1f to %.1f)" % (statistics.median(loads),
                                                                loads[0], loads[-1])
                                if loads else "-"))
        else:
            w("- **%s**: not run." % label)
    w("")
    w("| flush policy | cleaner | %s |" % " | ".join(
        "%s: p99 ms (runs) | %s: max ms (runs) | %s: commits/s | %s: compactions"
        % (l, l, l, l) for l in ("before", "after")))
    w("|---|---|%s" % ("---|" * 8))

    def med(label, key, metric):
        v = compaction_values(data[label], key, metric) if label in data else []
        return statistics.median(v) if v else None

    def runs_text(label, key, metric):
        v = compaction_values(data[label], key, metric) if label in data else []
        if not v:
            return "-"
        return "**%.1f** (%s)" % (statistics.median(v), ", ".join("%.1f" % x for x in v))

    for policy in ("never", "always"):
        for cleaner in ("off", "on"):
            key = "%s %s" % (policy, cleaner)
            cells = []
            for label in ("before", "after"):
                rps, comp = med(label, key, "requests_per_s"), med(label, key, "compactions")
                cells += [runs_text(label, key, "p99_ms"), runs_text(label, key, "max_ms"),
                          "-" if rps is None else "{:,.0f}".format(rps),
                          "-" if comp is None else "%.0f" % comp]
            w("| %s | %s | %s |" % (policy, cleaner, " | ".join(cells)))
    w("")
    w("Bold: the median of the runs. The target: with the cleaner on, the longest commit stays "
      "within twice the longest with it off (medians of the runs' max):")
    w("")
    for label in ("before", "after"):
        for policy in ("never", "always"):
            on, off = med(label, policy + " on", "max_ms"), med(label, policy + " off", "max_ms")
            if on is None or off is None:
                continue
            w("- %s, flush=%s: %.1f ms on against %.1f ms off, %.1fx: %s." % (
                label, policy, on, off, on / off if off > 0 else float("inf"),
                "within twice" if on <= 2 * off else "**not** within twice"))
            offs = [x for x in (med(l, policy + " off", "max_ms") for l in data) if x]
            if label == "after" and len(offs) > 1 and min(offs) < off:
                w("  Against the lowest cleaner-off figure of both columns, %.1f ms: %.1fx, %s."
                  % (min(offs), on / min(offs), "within twice" if on <= 2 * min(offs)
                     else "**not** within twice"))
    w("")
    w("Before, a compaction held its partition's one job slot, so that partition's flushes "
      "(append, then fsync) waited for the whole compaction; after, the compaction runs on a "
      "copy of the segment list beside the flushes (kc_plog_clean_begin/run/end), one "
      "partition at a time so that it never takes the thread pool's threads from fsyncs. The "
      "machine is shared with the load generator (and may be with other work): a single run's "
      "max moves by tens of ms from run to run, which is why every run is shown.")
    w("")
    return out


def kept_compaction_section(path):
    """The page's compaction section, as lines, or [] when it has none: a full run keeps it
    (it is long and its before column needs another build; --only-compaction renews it)."""
    try:
        with open(path) as f:
            page = f.read().split("\n")
    except FileNotFoundError:
        return []
    start = next((i for i, l in enumerate(page) if l == COMPACTION_HEADING), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(page)) if page[i].startswith("## ")), len(page))
    return page[start:end]


def compaction_run(args, argv, build, mode):
    """Run the compaction plan on BUILD_DIR (and, with --compaction-before, on that build too,
    alternating) and save each build's runs as its column (docs/bench/compaction-LABEL.json;
    with --quick under BUILD_DIR/bench/). Returns (ok, started, elapsed, command), ok None when
    it could not run."""
    builds = [("after", build)]
    if args.compaction_before:
        builds.insert(0, ("before", args.compaction_before))
    command = " ".join(["tests/bench/bench.py"] + [shlex.quote(a) for a in argv[1:]])
    started = datetime.datetime.now(datetime.timezone.utc)
    for _, b in builds:
        for f in (os.path.join(b, "kcoord"), os.path.join(b, "bench", "kcoord-bench")):
            if not os.access(f, os.X_OK):
                print("bench: %s is missing; run `make bench-tools`" % f, file=sys.stderr)
                return None, started, 0, command
    tool = os.path.abspath(os.path.join(build, "bench", "kcoord-bench"))
    revision = git_revision()  # before this run writes its own files
    t0 = time.monotonic()
    res = run_compaction(tool, [(l, os.path.abspath(os.path.join(b, "kcoord")))
                                for l, b in builds], COMPACTION_PLANS[mode])
    elapsed = time.monotonic() - t0
    info = machine()
    ok = True
    for label, _ in builds:
        runs, problems = res[label]
        ok = ok and all(r["ok"] for r in runs)
        note = (args.compaction_note if label == "before" else None) or \
            "commit %s" % revision
        data = {"label": label, "note": note, "command": command,
                "when": started.strftime("%Y-%m-%d %H:%M"),
                "machine": "%s, nproc %s" % (info["cpu"], info["nproc"]),
                "runs": runs, "problems": problems}
        path = compaction_json(label) if mode == "full" else os.path.join(
            build, "bench", "compaction-%s.json" % label)
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        print("bench: the %s runs are in %s" % (label, os.path.relpath(path, ROOT)), flush=True)
        for p in problems[:10]:
            print("   server log: %s" % p)
    return ok, started, elapsed, command


def compaction_main(args, argv, build, output, mode):
    """--only-compaction: compaction_run, then replace the page's section (not with --quick,
    which leaves the page alone)."""
    try:
        ok, started, elapsed, command = compaction_run(args, argv, build, mode)
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 1
    if ok is None:
        return 1
    if mode == "full":
        splice_section(output, COMPACTION_HEADING,
                       compaction_section(started, elapsed, command),
                       COMPACTION_TOP_LINE)
        print("bench: replaced the compaction section of %s in %.0f s"
              % (os.path.relpath(output, ROOT), elapsed))
    return 0 if ok else 1


# ---- The report --------------------------------------------------------------------------

def fmt_num(v, unit=""):
    if v is None:
        return None
    if abs(v) >= 100:
        s = "{:,.0f}".format(v)
    elif abs(v) >= 10:
        s = "%.1f" % v
    elif abs(v) >= 1:
        s = "%.2f" % v
    else:
        s = "%.3f" % v
    return s + unit


def ratio_text(kc, kafka, higher_better):
    """How many times better kcoord is (or worse)."""
    if kc is None or kafka is None or kc <= 0 or kafka <= 0:
        return "-"
    r = kc / kafka if higher_better else kafka / kc
    if 0.95 <= r <= 1.05:
        return "about equal (%.2fx)" % r
    return "%.1fx better" % r if r >= 1 else "%.1fx worse" % (1 / r)


def scenario_section(runs, info, plan, mode, tool_rel, large):
    out = []
    w = out.append
    kafka_cell_missing = ("not run: %s" % info["kafka_reason"]) if info["kafka_reason"] else \
        "not run"

    def cell(target, key, metric, unit="", scale=1.0):
        v = runs.median(target, key, metric)
        if v is None:
            if target == KAFKA and info["kafka_reason"]:
                return "not run"
            fails = [r for r in runs.failures(target) if r["key"] == key]
            return "failed" if fails else "-"
        return fmt_num(v * scale, unit)

    def row(name, key, metric, higher_better, unit="", floor="-", kc_target=KC_ALWAYS,
            scale=1.0, kafka_metric=None):
        kc = runs.median(kc_target, key, metric)
        kf = runs.median(KAFKA, key, kafka_metric or metric)
        w("| %s | %s | %s | %s | %s |"
          % (name, cell(kc_target, key, metric, unit, scale),
             cell(KAFKA, key, kafka_metric or metric, unit, scale),
             ratio_text(kc, kf, higher_better), floor))

    reps = plan["reps"]
    w("## Load scenarios: kcoord and Kafka")
    w("")
    w("The same load generator (`%s`, tests/bench/kcoord_bench.c: kcoord's own protocol codecs, "
      "libuv, pipelined requests) drives kcoord and Apache Kafka %s; figures are medians of %d "
      "run%s, the servers alternating. kcoord runs with log.flush.policy=always (its default: "
      "a commit is acknowledged after fsync) unless a row says flush=never (acknowledged after "
      "write, as Kafka's default). Kafka: %s."
      % (tool_rel, info["kafka"] or "(not run)", reps, "" if reps == 1 else "s",
         "a single KRaft node from scripts/kafka-ref, `--partitions 50 --initial-delay 0`, "
         "default flush settings (no fsync per write), 1 GiB heap, warmed up by one untimed pass "
         "of commits, a 1000-member join of each protocol and heartbeats (its JIT compiler "
         "needs it)"
         if info["kafka"]
         else kafka_cell_missing))
    w("")
    w("| scenario | kcoord | Kafka | ratio | floor |")
    w("|---|---:|---:|---|---:|")
    echo_off = runs.median(ECHO, "commit", "offsets_per_s")
    echo_p99 = runs.median(ECHO, "commit", "p99_ms")
    fsync = runs.median(DISK, "fsync", "ops_per_s")
    floor_net = "%s (echo)" % fmt_num(echo_off) if echo_off else "-"
    floor_always = floor_net + ("; %s fsync/s (disk)" % fmt_num(fsync) if fsync else "")
    row("commit, offsets/s, flush=always", "commit", "offsets_per_s", True, "", floor_always)
    row("commit, offsets/s, flush=never", "commit", "offsets_per_s", True, "", floor_net,
        kc_target=KC_NEVER)
    row("commit, p99 latency, flush=always", "commit", "p99_ms", False, " ms",
        "%s ms (echo)" % fmt_num(echo_p99) if echo_p99 else "-")
    row("commit, p99 latency, flush=never", "commit", "p99_ms", False, " ms",
        "%s ms (echo)" % fmt_num(echo_p99) if echo_p99 else "-", kc_target=KC_NEVER)
    for n in plan["joins"]:
        row("join: %d members, until all hold an assignment" % n, "join-%d" % n, "join_s", False,
            " s")
    for n in plan["joins"]:
        row("rolling join: 1 more into a stable group of %d" % n, "join-%d" % n, "rolling_s",
            False, " s")
    for n in plan["joins"]:
        row("join (consumer protocol): %d members, until the group is stable" % n,
            "cjoin-%d" % n, "join_s", False, " s")
    for n in plan["joins"]:
        row("rolling join (consumer protocol): 1 more into a stable group of %d" % n,
            "cjoin-%d" % n, "rolling_s", False, " s")
    hb = dict(zip(plan["heartbeat"][0::2], plan["heartbeat"][1::2]))
    hb_name = "heartbeat: %s members at %s/s" % ("{:,}".format(int(hb["--members"])),
                                                 "{:,}".format(int(hb["--rate"])))
    row(hb_name + ", achieved hb/s", "heartbeat", "heartbeats_per_s", True)
    row(hb_name + ", p99 latency", "heartbeat", "p99_ms", False, " ms")
    row(hb_name + ", server CPU per 10k hb/s", "heartbeat", "server_cpu_cores_per_10k_hbps",
        False, "% of a core", scale=100)
    if large:
        lg = dict(zip(plan["large"][0::2], plan["large"][1::2]))
        lname = "heartbeat: %s members at %s/s" % ("{:,}".format(int(lg["--members"])),
                                                   "{:,}".format(int(lg["--rate"])))
        row(lname + ", achieved hb/s", "heartbeat-large", "heartbeats_per_s", True)
        row(lname + ", p99 latency", "heartbeat-large", "p99_ms", False, " ms")
        row(lname + ", server CPU per 10k hb/s", "heartbeat-large",
            "server_cpu_cores_per_10k_hbps", False, "% of a core", scale=100)
    mem = dict(zip(plan["memory"][0::2], plan["memory"][1::2]))
    members = int(mem["--groups"]) * int(mem["--group-size"])
    row("memory: bytes per idle member (%s members)" % "{:,}".format(members), "memory",
        "bytes_per_member", False, " B", kafka_metric="probe_bytes_per_member")
    row("memory: bytes per committed offset (%s offsets)" % "{:,}".format(int(mem["--offsets"])),
        "memory", "bytes_per_offset", False, " B", kafka_metric="probe_bytes_per_offset")
    w("")
    if info["kafka_reason"]:
        w("- **Kafka: not run**: %s." % info["kafka_reason"])
    w("- **ratio**: how many times better kcoord does than Kafka on that row (throughput: "
      "higher is better; times, latencies, CPU and bytes: lower is better).")
    w("- **floor**: the best any server could do on this machine with this client. *echo*: "
      "`kcoord-bench echo`, a server that answers every frame at once with an empty response "
      "(the client, the kernel and the loopback alone); *disk*: `kcoord-bench fsync-rate`, "
      "write(100 B) + fdatasync per second on the filesystem of kcoord's data directory. "
      "kcoord's flush=always commits many requests with one fsync per partition and loop turn, "
      "so it can commit more offsets per second than the disk does fsyncs.")
    w("- **commit**: `commit %s`: simple-consumer OffsetCommits (generation -1, empty member "
      "id) of 10 partitions each, round-robin over 100 groups, 32 connections x 4 requests in "
      "flight; offsets/s counts partitions committed without error in the measurement window, "
      "after a warm-up." % " ".join(plan["commit"]))
    w("- **join**: `join --members N %s`: N members, each on its own connection, join one new "
      "group at once (classic protocol, JoinGroup with the MEMBER_ID_REQUIRED round trip, range "
      "assignment computed by the leader, SyncGroup); the time from the first JoinGroup until "
      "every member holds an assignment of a generation that has them all. Members heartbeat "
      "every 100 ms and rejoin on REBALANCE_IN_PROGRESS, as consumers do; the initial "
      "rebalance delay is 0 on both servers. **rolling join**: then one more member joins the "
      "stable group (heartbeats spread over the interval); the time until all N+1 hold their "
      "new assignment (the others learn of the rebalance from their next heartbeat, so the "
      "heartbeat interval bounds it from below)." % " ".join(plan["join"]))
    hb_ms = dict(zip(plan["cjoin"][0::2], plan["cjoin"][1::2])).get("--heartbeat-ms", "100")
    intervals = []
    for target in (KC_ALWAYS, KAFKA):
        v = sorted({int(x) for n in plan["joins"]
                    for x in runs.values(target, "cjoin-%d" % n, "server_heartbeat_interval_ms")})
        intervals.append("%s %s ms" % ("kcoord" if target == KC_ALWAYS else "Kafka",
                                       "/".join(str(x) for x in v) if v else "-"))
    w("- **join (consumer protocol)**: `join --members N %s`: N KIP-848 members, each on its "
      "own connection, join one new group at once with ConsumerGroupHeartbeat (the highest "
      "version both sides know, v1: member ids made by the client; member epoch 0, the "
      "subscribed topic, server assignor `uniform`, rebalance timeout 60 s, an empty owned "
      "list), then keep heartbeating. What the client does: it heartbeats every %s ms (a fixed "
      "interval of the bench, as the classic rows' heartbeats; the coordinators return their "
      "default interval, %s, which is not used); when an answer changed its epoch or its "
      "assignment it sends the next heartbeat at once instead of waiting the interval; it owns "
      "a new assignment at once (a revoked partition is given up without a commit); a "
      "heartbeat carries the owned partitions (topic id and partitions) whenever the "
      "coordinator has not heard them since the assignment changed, else null, as the Java "
      "client does; one heartbeat in flight per member. Measured: the time from the first "
      "heartbeat until the group is stable: every member acknowledged its assignment (a "
      "heartbeat with epoch E, its owned partitions equal to its assignment already reported, "
      "was answered with epoch E and no other assignment) at the same epoch, the highest any "
      "member was given; the assignments are disjoint, hold all %d partitions and are "
      "balanced (sizes differ by at most one, as the uniform assignor's final assignment of one "
      "topic is); and a ConsumerGroupDescribe sent at that moment, on a connection of its own, "
      "confirms it (state Stable, group epoch = assignment epoch = every member's epoch, N "
      "members). A member learns of a new target only from its next heartbeat, and a member "
      "that waits for partitions another member must first give up learns of their release "
      "only at its next interval heartbeat, so these times are bounded from below by about one "
      "heartbeat interval (%s ms), where the classic protocol's held JoinGroup answers at once. "
      "**rolling join (consumer protocol)**: then the members' heartbeats are spread over the "
      "interval, and one more member joins; the same until the N+1 are stable again. Both "
      "servers run with the same consumer-group settings, their defaults: "
      "group.consumer.heartbeat.interval.ms=5000, group.consumer.session.timeout.ms=45000. "
      "Kafka 4.4 also batches target assignment updates, computing a group's new target at most "
      "once per `group.consumer.assignment.interval.ms` (default 1000 ms; kcoord computes it at "
      "every group epoch): for these rows each Kafka group is given "
      "`consumer.assignment.interval.ms=0` (IncrementalAlterConfigs on the group, before the "
      "run) so that both servers do the same work; its assignor still runs on Kafka's "
      "background thread (`group.consumer.assignor.offload.enable=true`, its default)."
      % (" ".join(plan["cjoin"]), hb_ms, ", ".join(intervals), TOPIC_PARTITIONS, hb_ms))
    dflt = [(n, runs.median(KAFKA, "cjoin-%d-default" % n, "join_s"),
             runs.median(KAFKA, "cjoin-%d-default" % n, "rolling_s")) for n in plan["joins"]]
    if any(j is not None for _, j, _ in dflt):
        w("  Kafka with its default assignment interval (1000 ms), same runs otherwise, "
          "medians: %s." % "; ".join(
              "%d members: join %s, rolling %s" % (n, fmt_num(j, " s") or "failed",
                                                   fmt_num(r, " s") or "failed")
              for n, j, r in dflt))
    w("- **heartbeat**: `heartbeat %s`: members join in groups of 10 (untimed), then heartbeat "
      "at the target rate in total; achieved rate and latency over the measurement window; "
      "server CPU is utime+stime of the server process (/proc/PID/stat) over the window, as a "
      "share of one core, per 10,000 heartbeats/s." % " ".join(plan["heartbeat"]))
    w("- **memory**: `memory %s`: the server's VmRSS after 2 s of quiet before any group, after "
      "the members joined (and stay, heartbeating every 20 s) and after their groups committed "
      "the offsets (100 partitions per group, as members); bytes per member and per offset are "
      "the RSS growth divided by the count. For Kafka a JVM's RSS says little (the heap is "
      "reserved up front and kept after collections), so its column is the live heap after a "
      "full GC (`jcmd PID GC.run`, then `GC.heap_info` used) at the same points."
      % " ".join(plan["memory"]))
    w("")
    w("### Heartbeat: the highest sustained rate")
    w("")
    lreps = plan.get("hb_ladder_reps", 1)
    w("`heartbeat --rate R %s` for R = %s heartbeats/s in turn (a fresh join of the members "
      "each run), %s, until a rate is not sustained: a median of fewer than 95%% of R "
      "achieved, or a median p99 latency of %g ms or more (a failed run counts as an infinite "
      "p99). A server leaves the ladder at its first rate not sustained. kcoord with "
      "flush=always, one process for the whole ladder, as Kafka is one."
      % (" ".join(plan["hb_ladder_args"]), ", ".join("{:,}".format(x) for x in plan["hb_ladder"]),
         "%d runs per rate and server, kcoord and Kafka alternating run by run, medians of the "
         "%d" % (lreps, lreps) if lreps > 1 else "one run per rate and server", HB_P99_LIMIT_MS))
    w("")
    ladder = info.get("hb_max") or {}
    w("| server | highest sustained rate, hb/s |")
    w("|---|---:|")
    for target in (KC_ALWAYS, KAFKA):
        steps = ladder.get(target)
        if not steps:
            w("| %s | not run%s |" % (TARGET_NAMES[target], "" if target != KAFKA or
                                      not info["kafka_reason"] else
                                      " (%s)" % info["kafka_reason"]))
            continue
        best = max([st["rate"] for st in steps if st["sustained"]], default=None)
        top = steps[-1]["sustained"] and steps[-1]["rate"] == plan["hb_ladder"][-1]
        w("| %s | %s%s |" % (TARGET_NAMES[target],
                             "below " + "{:,}".format(steps[0]["rate"]) if best is None else
                             "{:,}".format(best), " (the highest rate tried)" if top else ""))
    w("")

    def step_cells(st):
        if st is None:
            return "- | - | -"
        runs_p99 = ", ".join("failed" if not ok else "-" if p is None else "%.2f" % p
                             for _, p, ok in st["samples"])
        runs_got = ", ".join("{:,.0f}".format(g) for g, _, _ in st["samples"])
        return "%s (%s) | %s (%s) | %s" % (
            "{:,.0f}".format(st["achieved"]), runs_got,
            "-" if st["p99"] is None else "%.2f" % st["p99"], runs_p99,
            "yes" if st["sustained"] else "**no**")

    w("| target hb/s | kcoord: achieved hb/s, median (runs) | kcoord: p99 ms, median (runs) "
      "| kcoord sustained | Kafka: achieved hb/s, median (runs) | Kafka: p99 ms, median (runs) "
      "| Kafka sustained |")
    w("|---:|---|---|---|---|---|---|")
    for rate in plan["hb_ladder"]:
        by = {t: next((st for st in ladder.get(t) or [] if st["rate"] == rate), None)
              for t in (KC_ALWAYS, KAFKA)}
        if by[KC_ALWAYS] is None and by[KAFKA] is None:
            continue
        w("| %s | %s | %s |" % ("{:,}".format(rate), step_cells(by[KC_ALWAYS]),
                                step_cells(by[KAFKA])))
    w("")
    w("### Issue targets (reported, not asserted)")
    w("")

    def target_line(text, value, ok, shown):
        if value is None:
            w("- %s: not measured%s." % (text, "" if not info["kafka_reason"] or "Kafka" not in
                                         text else " (Kafka not run)"))
        else:
            w("- %s: **%s** (%s)." % (text, "met" if ok else "not met", shown))

    kf_c = runs.median(KAFKA, "commit", "offsets_per_s")
    kn_c = runs.median(KC_NEVER, "commit", "offsets_per_s")
    ka_c = runs.median(KC_ALWAYS, "commit", "offsets_per_s")
    r = kn_c / kf_c if kn_c and kf_c else None
    target_line("commit throughput with flush=never >= 5x Kafka's", r, r is not None and r >= 5,
                "%.1fx" % r if r else "")
    r = ka_c / kf_c if ka_c and kf_c else None
    target_line("commit throughput with flush=always >= Kafka's", r, r is not None and r >= 1,
                "%.1fx" % r if r else "")
    big = max(plan["joins"])
    kj = runs.median(KC_ALWAYS, "join-%d" % big, "join_s")
    fj = runs.median(KAFKA, "join-%d" % big, "join_s")
    r = kj / fj if kj and fj else None
    target_line("join time for %d members <= 1/3 of Kafka's" % big, r,
                r is not None and r <= 1 / 3, "kcoord/Kafka = %.2f" % r if r else "")
    pm = runs.median(KC_ALWAYS, "memory", "bytes_per_member")
    target_line("RSS per idle member <= 2 KiB", pm, pm is not None and pm <= 2048,
                "%.0f B" % pm if pm is not None else "")
    po = runs.median(KC_ALWAYS, "memory", "bytes_per_offset")
    target_line("RSS per committed offset <= 128 B", po, po is not None and po <= 128,
                "%.0f B" % po if po is not None else "")
    w("")
    w("### Every run")
    w("")
    w("| server | scenario | runs | values |")
    w("|---|---|---:|---|")
    keys = []
    for rr in runs.runs:
        if (rr["target"], rr["key"]) not in keys:
            keys.append((rr["target"], rr["key"]))
    for target, key in keys:
        mine = [rr for rr in runs.runs if rr["target"] == target and rr["key"] == key]
        base = "join" if key.startswith("join") else "cjoin" if key.startswith("cjoin") else (
            "heartbeat" if key.startswith("heartbeat") else key)
        parts = []
        for metric in METRICS.get(base, []):
            vals = runs.values(target, key, metric)
            if vals:
                parts.append("%s: %s" % (metric, ", ".join(fmt_num(v) for v in vals)))
        nfail = sum(1 for rr in mine if not rr["ok"])
        if nfail:
            parts.append("**%d failed**: %s" % (nfail, "; ".join(
                rr["error"].replace("|", "/") for rr in mine if not rr["ok"])[:300]))
        w("| %s | %s | %d | %s |" % (TARGET_NAMES[target], key, len(mine), "; ".join(parts)))
    w("")
    if info["kcoord_problems"] or info["kcoord_exit"]:
        w("kcoord logged warnings or errors during these runs (first 10):")
        w("")
        for p in (info["kcoord_exit"] + info["kcoord_problems"])[:10]:
            w("    " + p)
        w("")
    return out

def kcoord_version(kcoord):
    try:
        p = subprocess.run([kcoord, "--version"], capture_output=True, text=True, timeout=10)
        return (p.stdout.strip() or p.stderr.strip()).splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "kcoord (version unknown)"


def interrupted(_signum, _frame):
    raise KeyboardInterrupt()


def security_main(args, argv, build):
    """--only-security: tests/bench/security_bench.py's runs, and only its section replaced."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import security_bench
    binary = os.path.join(build, "kcoord")
    if not os.access(binary, os.X_OK):
        print("bench: %s is missing; run make" % binary, file=sys.stderr)
        return 1
    output = args.output or (os.path.join(build, "bench", "BENCHMARKS-quick.md") if args.quick
                             else os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    try:
        results, plan = security_bench.run(os.path.abspath(binary), args.quick,
                                           not args.no_kafka)
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - t0
    command = " ".join(["tests/bench/bench.py"] + argv[1:])
    splice_section(output, security_bench.SECURITY_HEADING,
                   security_bench.section(results, plan, started.strftime("%Y-%m-%d %H:%M UTC"),
                                          git_revision(), command, elapsed),
                   security_bench.SECURITY_TOP_LINE)
    bad = [s for s, r in results.items() if "error" in r]
    print("bench: replaced the security section of %s in %.0f s%s"
          % (os.path.relpath(output, ROOT), elapsed,
             "" if not bad else "; did not run on: " + ", ".join(bad)))
    return 1 if bad else 0


def cluster_main(args, argv, build):
    """--only-cluster: tests/bench/cluster_bench.py's runs, and only its section replaced."""
    import cluster_bench
    binary = os.path.join(build, "kcoord")
    tool = os.path.join(build, "bench", "kcoord-bench")
    for b in (binary, tool):
        if not os.access(b, os.X_OK):
            print("bench: %s is missing; run `make bench-tools`" % b, file=sys.stderr)
            return 1
    mode = "quick" if args.quick else "full"
    output = args.output or (os.path.join(build, "bench", "BENCHMARKS-quick.md") if args.quick
                             else os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    # The single node's figure of the load scenarios, as the page had it before this run.
    previous = cluster_bench.previous_single_figure(os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    try:
        before = None
        if args.cluster_before:
            before = os.path.abspath(os.path.join(args.cluster_before, "kcoord"))
            if not os.access(before, os.X_OK):
                print("bench: %s is missing" % before, file=sys.stderr)
                return 1
        results, plan = cluster_bench.run(os.path.abspath(binary), os.path.abspath(tool),
                                          PLANS[mode]["commit"], args.quick, not args.no_kafka,
                                          before)
    except cluster_bench.ClusterBenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - t0
    command = " ".join(shlex.quote(a) for a in ["tests/bench/bench.py"] + argv[1:])
    splice_section(output, cluster_bench.CLUSTER_HEADING,
                   cluster_bench.section(results, plan, PLANS[mode]["commit"], previous,
                                         started.strftime("%Y-%m-%d %H:%M UTC"), git_revision(),
                                         command, elapsed, args.cluster_note),
                   cluster_bench.CLUSTER_TOP_LINE)
    bad = [s for s, r in results["kill"].items() if not isinstance(r, list)]
    bad += ["kafka"] if "error" in results["kafka"] and not args.no_kafka else []
    print("bench: replaced the cluster section of %s in %.0f s%s"
          % (os.path.relpath(output, ROOT), elapsed,
             "" if not bad else "; did not finish on: " + ", ".join(sorted(set(bad)))))
    return 1 if bad else 0


def main(argv):
    ap = argparse.ArgumentParser(prog="tests/bench/bench.py", description="kcoord's benchmarks")
    ap.add_argument("--quick", action="store_true", help="a short smoke run")
    ap.add_argument("--large", action="store_true",
                    help="also one heartbeat run with 100,000 members per server")
    ap.add_argument("--no-kafka", action="store_true",
                    help="do not start Kafka (implies --no-recovery-kafka)")
    ap.add_argument("--no-recovery-kafka", action="store_true",
                    help="load time: do not restart Kafka on the same data")
    ap.add_argument("--no-load-time", action="store_true", help="skip the load-time cases")
    ap.add_argument("--no-scenarios", action="store_true", help="skip the load scenarios")
    ap.add_argument("--no-offload", action="store_true",
                    help="skip the assignment-offload scenario")
    ap.add_argument("--only-batching", action="store_true",
                    help="run only the assignment-batching (KIP-1263) section and replace it in "
                         "the report")
    ap.add_argument("--only-offload", action="store_true",
                    help="run only the assignment-offload scenario and replace only its section "
                    "of the report, keeping the rest of the page as it is")
    ap.add_argument("--only-compaction", action="store_true",
                    help="run only the compaction-beside-commits scenario and replace only its "
                    "section of the report")
    ap.add_argument("--no-compaction", action="store_true",
                    help="skip the compaction-beside-commits scenario (the page keeps its "
                    "section as it is)")
    ap.add_argument("--compaction-before", metavar="OLD_BUILD",
                    help="also run the compaction scenario on this build (its kcoord and "
                    "bench/kcoord-bench), alternating, as the column 'before'")
    ap.add_argument("--compaction-note", help="what OLD_BUILD is, for the 'before' column")
    ap.add_argument("--no-member-memory", action="store_true",
                    help="skip the memory-per-member section")
    ap.add_argument("--only-member-memory", action="store_true",
                    help="run only the memory-per-member runs and replace only their section "
                    "of the report, keeping the rest of the page as it is")
    ap.add_argument("--only-security", action="store_true",
                    help="run only the security runs (SASL_SSL against plaintext, handshakes "
                    "per second) and replace only their section of the report")
    ap.add_argument("--only-cluster", action="store_true",
                    help="run only the cluster runs (commit throughput of one kcoord, a 3-node "
                    "kcoord and a 3-broker Kafka; the coordinator's node killed) and replace "
                    "only their section of the report")
    ap.add_argument("--cluster-before", metavar="OLD_BUILD",
                    help="with --only-cluster: also run the single-node commit figure on this "
                    "build's kcoord, alternating, to compare the single-node path with it")
    ap.add_argument("--cluster-note", help="what OLD_BUILD of --cluster-before is")
    ap.add_argument("--output", help="the report (default docs/BENCHMARKS.md, or "
                    "BUILD_DIR/bench/BENCHMARKS-quick.md with --quick)")
    ap.add_argument("build", nargs="?", default="build")
    args = ap.parse_args(argv[1:])
    build = args.build
    # A SIGTERM cleans up as Ctrl-C does (the finally blocks stop every process we started).
    signal.signal(signal.SIGTERM, interrupted)
    os.chdir(ROOT)
    if args.only_compaction:
        return compaction_main(args, argv, build, args.output or os.path.join(
            ROOT, "docs", "BENCHMARKS.md"), "quick" if args.quick else "full")
    if args.only_security:
        return security_main(args, argv, build)
    if args.only_cluster:
        return cluster_main(args, argv, build)
    kcoord = os.path.join(build, "kcoord")
    gen_log = os.path.join(build, "bench", "gen_log")
    tool = os.path.join(build, "bench", "kcoord-bench")
    for b in (kcoord, gen_log, tool):
        if not os.access(b, os.X_OK):
            print("bench: %s is missing; run `make bench`" % b, file=sys.stderr)
            return 1
    mode = "quick" if args.quick else "full"
    plan = PLANS[mode]
    if args.only_offload and args.no_offload:
        print("bench: --only-offload and --no-offload exclude each other", file=sys.stderr)
        return 2
    output = args.output or (os.path.join(build, "bench", "BENCHMARKS-quick.md") if args.quick
                             else os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    repeat = 1 if args.quick else REPEAT
    info = machine()
    info["rev"] = git_revision()
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    status = 0
    scen = None
    results = []
    offload = None
    compaction_ran = None
    if args.only_offload:
        try:
            oruns, oinfo = run_offload(os.path.abspath(tool), os.path.abspath(kcoord),
                                       OFFLOAD_PLANS[mode])
        except BenchError as e:
            print("bench: %s" % e, file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("bench: interrupted", file=sys.stderr)
            return 1
        elapsed = time.monotonic() - t0
        save_offload_runs(oruns, build)
        splice_section(output, OFFLOAD_HEADING,
                       offload_section(oruns, oinfo, OFFLOAD_PLANS[mode], build, started,
                                       "%s/bench/kcoord-bench" % build, elapsed,
                                       " ".join(["tests/bench/bench.py"] + argv[1:])),
                       OFFLOAD_TOP_LINE)
        bad = oruns.failures() or oinfo["exit"]
        print("bench: replaced the assignment-offload section of %s in %.0f s%s"
              % (os.path.relpath(output, ROOT), elapsed,
                 "" if not bad else "; some runs failed (see it)"))
        return 1 if bad else 0
    if args.only_batching:
        cjoin = PLANS[mode]["cjoin"]
        try:
            bruns, binfo = run_batching(os.path.abspath(tool), os.path.abspath(kcoord),
                                        BATCHING_PLANS[mode], cjoin, not args.no_kafka)
        except BenchError as e:
            print("bench: %s" % e, file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("bench: interrupted", file=sys.stderr)
            return 1
        elapsed = time.monotonic() - t0
        splice_section(output, BATCHING_HEADING,
                       batching_section(bruns, binfo, BATCHING_PLANS[mode], build, started,
                                        "%s/bench/kcoord-bench" % build, elapsed,
                                        " ".join(["tests/bench/bench.py"] + argv[1:]), cjoin),
                       BATCHING_TOP_LINE)
        bad = bruns.failures() or binfo["exit"]
        print("bench: replaced the assignment-batching section of %s in %.0f s%s"
              % (os.path.relpath(output, ROOT), elapsed,
                 "" if not bad else "; some runs failed (see it)"))
        return 1 if bad else 0
    if args.only_member_memory:
        try:
            mruns, minfo = run_member_memory(os.path.abspath(tool), os.path.abspath(kcoord),
                                             MEMBER_PLANS[mode], not args.no_kafka)
        except BenchError as e:
            print("bench: %s" % e, file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("bench: interrupted", file=sys.stderr)
            return 1
        elapsed = time.monotonic() - t0
        splice_section(output, MEMBER_HEADING,
                       member_memory_section(mruns, minfo, MEMBER_PLANS[mode], build, started,
                                             "%s/bench/kcoord-bench" % build, elapsed,
                                             " ".join(["tests/bench/bench.py"] + argv[1:])),
                       MEMBER_TOP_LINE)
        bad = mruns.failures() or minfo["exit"]
        print("bench: replaced the memory-per-member section of %s in %.0f s%s"
              % (os.path.relpath(output, ROOT), elapsed,
                 "" if not bad else "; some runs failed (see it)"))
        return 1 if bad else 0
    member = None
    # Kafka's side of the load-time cases (tests/bench/kafka_recovery.py).
    recovery = {"reason": None, "set_up": False, "version": None}
    try:
        if not args.no_scenarios:
            runs, sinfo = run_scenarios(os.path.abspath(tool), os.path.abspath(kcoord), plan,
                                        not args.no_kafka, args.large)
            scen = (runs, sinfo)
            if runs.failures() or sinfo["kcoord_exit"]:
                status = 1
        if not args.no_member_memory:
            t_mem = time.monotonic()
            mruns, minfo = run_member_memory(os.path.abspath(tool), os.path.abspath(kcoord),
                                             MEMBER_PLANS[mode], not args.no_kafka)
            member = (mruns, minfo, time.monotonic() - t_mem)
            if mruns.failures() or minfo["exit"]:
                status = 1
        if not args.no_offload:
            t_off = time.monotonic()
            oruns, oinfo = run_offload(os.path.abspath(tool), os.path.abspath(kcoord),
                                       OFFLOAD_PLANS[mode])
            offload = (oruns, oinfo, time.monotonic() - t_off)
            save_offload_runs(oruns, build)
            if oruns.failures() or oinfo["exit"]:
                status = 1
        if not args.no_compaction:
            compaction_ran = compaction_run(args, argv, build, mode)
            if compaction_ran[0] is not True:
                status = 1
        if not args.no_load_time:
            cases = [CASES[0], LIVE_ONLY] if args.quick else CASES + [LIVE_ONLY]
            if args.no_kafka or args.no_recovery_kafka:
                recovery["reason"] = "--no-kafka was given" if args.no_kafka else \
                    "--no-recovery-kafka was given"
            with kafka_recovery.KafkaRecovery(ROOT, repeat, say=lambda m: print(m, flush=True)) \
                    as kafka:
                for name, records, keys, compact in cases:
                    use = None
                    if (name, records, keys, compact) in CASES and recovery["reason"] is None:
                        if not recovery["set_up"]:
                            try:
                                kafka.setup()
                                recovery["set_up"] = True
                                recovery["version"] = kafka.version
                            except (kafka_recovery.KafkaError, OSError) as e:
                                recovery["reason"] = str(e).splitlines()[0]
                                print("   Kafka not run: %s" % e, flush=True)
                                kafka.close()
                        if recovery["set_up"]:
                            use = kafka
                    r = run_case(os.path.abspath(gen_log), os.path.abspath(kcoord), name,
                                 records, keys, compact, repeat, use)
                    results.append(r)
                    if r["kafka"] is not None and r["kafka"]["error"]:
                        status = 1
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - t0

    out = []
    w = out.append
    w("# kcoord benchmarks")
    w("")
    w("Generated by `%s` (tests/bench/bench.py) on %s UTC, commit %s; do not edit by hand, run it "
      "again.%s" % ("make bench" + (" BENCH_ARGS=--quick" if args.quick else ""),
                    started.strftime("%Y-%m-%d %H:%M"), info["rev"],
                    " **A --quick smoke run: one repetition, small sizes.**" if args.quick
                    else ""))
    w("")
    w("- Machine: %s, `nproc` = %s; memory %s; Linux %s. The load generator, the server and "
      "(for the floors) the echo server share these cores." % (info["cpu"], info["nproc"],
                                                                info["mem"], info["kernel"]))
    kafka_version = (scen[1]["kafka"] if scen and scen[1]["kafka"] else None) or \
        recovery["version"]
    w("- Versions: %s (commit %s)%s." % (kcoord_version(kcoord), info["rev"],
                                         "; Apache Kafka %s" % kafka_version
                                         if kafka_version else ""))
    opts = argv[1:]
    if opts and opts[-1] == args.build:
        opts = opts[:-1]
    w("- Command: `make bench%s` (= `tests/bench/bench.py %s%s`); the whole run took %.0f s."
      % (" BENCH_ARGS=%s" % shlex.quote(" ".join(opts)) if opts else "",
         " ".join(opts) + " " if opts else "", build, elapsed))
    side = "".join(" --set " + x for x in side_settings(kcoord))
    w("- kcoord for the load scenarios: `%s/kcoord --set listeners=127.0.0.1:0 --set "
      "data.dir=DIR --set topics=%s:%d --set group.initial.rebalance.delay.ms=0 --set "
      "log.flush.policy=always|never%s`, a fresh process and data directory under /tmp per "
      "round and policy%s." % (build, TOPIC, TOPIC_PARTITIONS, side,
                               "; the metrics listener on a free port, so that no run collides "
                               "with another kcoord on its default port" if side else ""))
    w(MEMBER_TOP_LINE)
    w(OFFLOAD_TOP_LINE)
    hostile = kept_hostile_section(output)
    compaction = kept_compaction_section(output)
    if compaction_ran is not None and not args.quick:
        compaction = compaction_section(compaction_ran[1], compaction_ran[2], compaction_ran[3])
    if compaction:
        w(COMPACTION_TOP_LINE)
    if hostile:
        w(HOSTILE_TOP_LINE)
    w("")
    if scen is not None:
        out += scenario_section(scen[0], scen[1], plan, mode, "%s/bench/kcoord-bench" % build,
                                args.large)
    if member is not None:
        out += member_memory_section(member[0], member[1], MEMBER_PLANS[mode], build, started,
                                     "%s/bench/kcoord-bench" % build, member[2],
                                     " ".join(["tests/bench/bench.py"] + argv[1:]))
    if offload is not None:
        out += offload_section(offload[0], offload[1], OFFLOAD_PLANS[mode], build, started,
                               "%s/bench/kcoord-bench" % build, offload[2],
                               " ".join(["tests/bench/bench.py"] + argv[1:]))
    if results:
        out += load_section(results, repeat, build, side_settings(kcoord))
        out += recovery_section(results, repeat, recovery)
    if compaction:
        if out and out[-1] != "":
            out.append("")
        out += compaction
    if hostile:
        if out and out[-1] != "":
            out.append("")
        out += hostile
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output + ".tmp", "w") as f:
        f.write("\n".join(out))
    os.replace(output + ".tmp", output)
    print("bench: wrote %s in %.0f s%s" % (os.path.relpath(output, ROOT), elapsed,
                                           "" if status == 0 else "; some runs failed (see it)"))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
