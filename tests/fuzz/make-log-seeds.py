#!/usr/bin/env python3
"""make-log-seeds.py: write the seed inputs of tests/fuzz/fuzz_log_batch.c and
tests/fuzz/fuzz_log_segment.c.

Batches are built by hand from docs/log-format.md: Kafka RecordBatch v2 (magic 2, CRC-32C over
attributes to the end), records with zigzag varints, keys and values in the __consumer_offsets
schemas (OffsetCommitKey v1 + OffsetCommitValue v3, a GroupMetadataKey v2 tombstone) so that
the dump tool's decoders are reached too. zstd sections come from the `zstd` program when it is
installed (the seeds that need it are skipped otherwise); gzip from Python's own module.

fuzz_log_batch seeds are single batches: plain, with a tombstone, a null key, a record header,
no records, offset gaps (as compaction leaves them), zstd, gzip (unsupported), a transaction
control batch and a transactional data batch.

fuzz_log_segment seeds are segment files (the raw input format) and directories (the "KCDR"
format of fuzz_log_segment.c): a whole segment, a torn tail, a CRC mismatch in the middle, a
zero-filled tail, a zstd segment, transactional and control batches, an empty file, two
segments with indexes and Kafka's extra files, and the leftovers of an interrupted compaction
(.swap with .deleted, .cleaned).

Usage: tests/fuzz/make-log-seeds.py [CORPUS_ROOT]   (default: tests/fuzz/corpus)
Standard library only. Existing files with these names are overwritten; other files (the
corpus a fuzzer grew) are left alone.
"""

import gzip
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _crc_table():
    poly = 0x82F63B78  # CRC-32C (Castagnoli), reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(n):
    z = (n << 1) ^ (n >> 63)  # zigzag
    z &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def commit_key(group, topic, partition):
    return struct.pack(">h", 1) + kstr(group) + kstr(topic) + struct.pack(">i", partition)


def commit_value(offset, ts):
    return struct.pack(">hqi", 3, offset, -1) + kstr("") + struct.pack(">q", ts)


def group_key(group):
    return struct.pack(">h", 2) + kstr(group)


def record(offset_delta, ts_delta, key, value, headers=()):
    body = bytearray()
    body.append(0)  # attributes
    body += varint(ts_delta)
    body += varint(offset_delta)
    if key is None:
        body += varint(-1)
    else:
        body += varint(len(key)) + key
    if value is None:
        body += varint(-1)
    else:
        body += varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk
        body += varint(len(hv)) + hv
    return varint(len(body)) + bytes(body)


def zstd_compress(data):
    exe = shutil.which("zstd")
    if exe is None:
        return None
    return subprocess.run([exe, "-q", "-c", "-3"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def batch(base_offset, recs, last_delta=None, codec=0, attrs=0, base_ts=1700000000000,
          max_ts=None, producer=(-1, -1, -1)):
    """recs: list of (offset_delta, ts_delta, key, value[, headers])."""
    records = b"".join(record(*r) for r in recs)
    if codec == 4:
        records = zstd_compress(records)
        if records is None:
            return None
    elif codec == 1:
        records = gzip.compress(records)
    if last_delta is None:
        last_delta = max((r[0] for r in recs), default=0)
    if max_ts is None:
        max_ts = base_ts + max((r[1] for r in recs), default=0)
    after_crc = struct.pack(">hiqqqhii", codec | attrs, last_delta, base_ts, max_ts,
                            producer[0], producer[1], producer[2], len(recs)) + records
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, the rest
    return struct.pack(">qiibI", base_offset, length, 0, 2, crc) + after_crc


def commits(n, first_offset):
    return [(i, i, commit_key("group-%d" % (i % 3), "topic", i % 4),
             commit_value(first_offset + i, 1700000000000 + i)) for i in range(n)]


def plain_segment(nbatches, per_batch=3, start=0):
    out = bytearray()
    off = start
    for _ in range(nbatches):
        out += batch(off, commits(per_batch, off))
        off += per_batch
    return bytes(out), off


def kcdr(files):
    out = bytearray(b"KCDR")
    for name, content in files:
        n = name.encode()
        out += bytes([len(n)]) + n + struct.pack(">I", len(content)) + content
    return bytes(out)


def index_entries(entries):
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


def batch_seeds():
    s = {}
    s["batch-commits"] = batch(0, commits(3, 0))
    s["batch-one"] = batch(42, commits(1, 42))
    s["batch-tombstone"] = batch(7, [(0, 0, group_key("g"), None),
                                     (1, 5, commit_key("g", "t", 0), None)])
    s["batch-null-key"] = batch(0, [(0, 0, None, b"value")])
    s["batch-header"] = batch(0, [(0, 0, b"k", b"v", [(b"h1", b"x"), (b"h2", b"")])])
    s["batch-empty"] = batch(100, [], last_delta=0)
    s["batch-gaps"] = batch(10, [(0, 0, commit_key("g", "t", 0), commit_value(1, 1)),
                                 (5, 3, commit_key("g", "t", 1), commit_value(2, 2))],
                            last_delta=9)
    s["batch-zstd"] = batch(3, commits(5, 3), codec=4)
    s["batch-gzip"] = batch(0, commits(2, 0), codec=1)
    control_key = struct.pack(">hh", 0, 1)  # version 0, COMMIT
    control_value = struct.pack(">hi", 0, 0)  # version 0, coordinator epoch
    s["batch-control"] = batch(20, [(0, 0, control_key, control_value)], attrs=0x30,
                               producer=(4000, 0, -1))
    s["batch-txn"] = batch(18, commits(2, 18), attrs=0x10, producer=(4000, 0, 0))
    return s


def segment_seeds():
    s = {}
    seg, end = plain_segment(6)
    s["seg-six-batches"] = seg
    second = batch(3, commits(3, 3))
    s["seg-torn-header"] = seg + second[:30]
    s["seg-torn-body"] = seg + second[:70]
    starts = [0]
    for _ in range(5):
        h = struct.unpack(">qi", seg[starts[-1]:starts[-1] + 12])
        starts.append(starts[-1] + 12 + h[1])
    mid = bytearray(seg)
    mid[starts[2] + 70] ^= 0x01
    s["seg-crc-middle"] = bytes(mid)
    last = bytearray(seg)
    last[-3] ^= 0x40
    s["seg-crc-last"] = bytes(last)
    s["seg-zero-tail"] = seg + bytes(512)
    zero_gap = seg + bytes(256) + batch(end, commits(3, end))
    s["seg-zero-gap-then-batch"] = zero_gap
    s["seg-stale-after-tail"] = seg + bytes(range(97)) + seg[:starts[1]]
    z1 = batch(0, commits(4, 0), codec=4)
    z2 = batch(4, commits(2, 4))
    if z1 is not None:
        s["seg-zstd"] = z1 + z2
    control_key = struct.pack(">hh", 0, 1)
    s["seg-txn-control"] = (batch(0, commits(2, 0), attrs=0x10, producer=(4000, 0, 0)) +
                            batch(2, [(0, 0, control_key, struct.pack(">hi", 0, 0))],
                                  attrs=0x30, producer=(4000, 0, -1)) +
                            batch(3, commits(2, 3)))
    s["seg-empty"] = b""
    seg0, end0 = plain_segment(3)
    seg9, end9 = plain_segment(2, start=end0)
    s["dir-two-segments"] = kcdr([
        ("00000000000000000000.log", seg0),
        ("00000000000000000000.index", index_entries([(2, 0), (5, 200)])),
        ("00000000000000000000.timeindex", bytes(12)),
        ("%020d.log" % end0, seg9),
        ("leader-epoch-checkpoint", b"0\n1\n0 0\n"),
        ("partition.metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n"),
    ])
    compacted = batch(0, [(i, i, commit_key("group-%d" % (i % 3), "topic", i % 4),
                           commit_value(i, i)) for i in (6, 7, 8)], last_delta=8)
    s["dir-swap-leftover"] = kcdr([
        ("00000000000000000000.log.swap", compacted),
        ("00000000000000000000.log.deleted", seg0),
        ("%020d.log" % end0, seg9),
    ])
    s["dir-cleaned-leftover"] = kcdr([
        ("00000000000000000000.log", seg0),
        ("00000000000000000000.log.cleaned", compacted),
        ("%020d.log" % end0, seg9),
        ("%020d.log.swap" % end0, seg9),
    ])
    s["dir-overlap"] = kcdr([
        ("00000000000000000000.log", seg0),
        ("00000000000000000004.log", seg9),
    ])
    return s


def write(corpus, name, content):
    if content is None:
        print("skipped %s (no zstd program)" % name, file=sys.stderr)
        return
    os.makedirs(corpus, exist_ok=True)
    with open(os.path.join(corpus, name), "wb") as f:
        f.write(content)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fuzz", "corpus")
    n = 0
    for name, content in batch_seeds().items():
        write(os.path.join(root, "fuzz_log_batch"), name, content)
        n += 1
    for name, content in segment_seeds().items():
        write(os.path.join(root, "fuzz_log_segment"), name, content)
        n += 1
    print("wrote %d seeds under %s" % (n, root))


if __name__ == "__main__":
    main()
