#!/usr/bin/env python3
"""make-replay-seeds.py: write the seed inputs of tests/fuzz/fuzz_replay.c.

Every __consumer_offsets record type of proto/records.kdef (a key `data` with its `...Value`)
becomes records in fuzz_replay's input format (uint16 key length, key, int32 value length or
-1 for a tombstone, value), with the key and value structs encoded by make-seeds.py's Encoder
from the same field lists:

  rec-<Key>-v<N>-empty   the key, then its value at version N with every field at its smallest
  rec-<Key>-v<N>-one     value, or with one element in every array, "a" in every string and 1
                         in every number (all members, topics and groups are then named "a");
  rec-<Key>-tombstone    the "one" key, then a tombstone for it;

and `log`, every "one" record in kdef order followed by a tombstone of each, the way a
partition's log holds records that a later compaction will drop; `log-classic` and
`log-consumer`, the records a classic group and a KIP-848 group with committed offsets write.

Usage: tests/fuzz/make-replay-seeds.py [OUTDIR]   (default: tests/fuzz/corpus/fuzz_replay)
Standard library only. Files with these names are overwritten; others are left alone.
"""

import importlib.machinery
import importlib.util
import os
import struct
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def load(name, path):
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def record(key, value):
    out = struct.pack(">H", len(key)) + key
    if value is None:
        return out + struct.pack(">i", -1)
    return out + struct.pack(">i", len(value)) + value


def main(argv):
    outdir = argv[0] if argv else os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_replay")
    gp = load("gen_proto", os.path.join(ROOT, "scripts", "gen_proto.py"))
    seeds_mod = load("make_seeds", os.path.join(ROOT, "tests", "fuzz", "make-seeds.py"))
    Encoder = seeds_mod.Encoder

    datas = [m for m in gp.parse_file(os.path.join(ROOT, "proto", "records.kdef"))
             if m.kind == "data"]
    by_name = {m.name: m for m in datas}
    keys = [m for m in datas if m.name.endswith("Key")]

    def enc(msg, v, full):
        return struct.pack(">h", v) + Encoder(msg, v, full).struct(msg.sections["fields"])

    seeds = {}
    log, tombstones = b"", b""
    per_type = {}
    for km in keys:
        vm = by_name[km.name[:-3] + "Value"]
        kv = km.valid[1]
        key_one = enc(km, kv, True)
        for v in range(vm.valid[0], vm.valid[1] + 1):
            for full in (False, True):
                kind = "one" if full else "empty"
                key = enc(km, kv, full)
                seeds["rec-%s-v%d-%s" % (km.name, v, kind)] = record(key, enc(vm, v, full))
        seeds["rec-%s-tombstone" % km.name] = record(key_one, enc(vm, vm.valid[1], True)) + \
            record(key_one, None)
        one = record(key_one, enc(vm, vm.valid[1], True))
        per_type[km.name] = one
        log += one
        tombstones += record(key_one, None)
    seeds["log"] = log + tombstones
    seeds["log-classic"] = per_type["GroupMetadataKey"] + per_type["OffsetCommitKey"]
    seeds["log-consumer"] = b"".join(
        v for k, v in per_type.items() if k.startswith("ConsumerGroup")) + \
        per_type["OffsetCommitKey"]

    os.makedirs(outdir, exist_ok=True)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
    print("make-replay-seeds: %d seeds for %d record types in %s" % (len(seeds), len(keys), outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
