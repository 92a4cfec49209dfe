#!/usr/bin/env python3
"""make-seeds.py: write the seed inputs of tests/fuzz/fuzz_request.c.

For every API in proto/*.kdef, at its lowest version, its first flexible version and its
highest version, this writes two request seeds and two response seeds:

  req-<Api>-v<N>-empty   one request frame whose body has every field at its smallest value:
                         empty arrays, empty strings (null where the version allows it), zero
                         numbers, no tagged fields;
  req-<Api>-v<N>-one     the same frame with one element in every array, "a" in every string,
                         1 in every number and every tagged field present, so that the fuzzer
                         starts inside nested structs and tag sections;
  rsp-<Api>-v<N>-empty   response mode (see fuzz_request.c): the byte 0x01, then one frame of
  rsp-<Api>-v<N>-one     key, version and a response body built the same two ways;

and one stream seed, `req-stream`, with every "empty" request frame back to back, the way a
client pipelines requests on one socket.

Frames are encoded by hand from the field lists, following the wire rules in
docs/proto-format.md (and src/proto/wire.h): classic or compact strings, bytes and arrays by
the version's flexibility, nullable structs as an int8 marker, a tagged-field section at the
end of every struct in flexible versions, the request header v1 or v2 before the body. The
field lists come from proto/*.kdef through scripts/gen_proto.py's own parser, so a new API gets
seeds by rerunning this script.

Usage: tests/fuzz/make-seeds.py [OUTDIR]   (default: tests/fuzz/corpus/fuzz_request)
Standard library only. Existing files with these names are overwritten; other files in OUTDIR
(the corpus the fuzzer grew) are left alone.
"""

import importlib.machinery
import importlib.util
import os
import struct
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def load_gen_proto():
    # Import scripts/gen_proto.py as a module without leaving a __pycache__ next to it.
    sys.dont_write_bytecode = True
    path = os.path.join(ROOT, "scripts", "gen_proto.py")
    loader = importlib.machinery.SourceFileLoader("gen_proto", path)
    spec = importlib.util.spec_from_loader("gen_proto", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def in_range(rng, v):
    return rng is not None and rng[0] <= v <= rng[1]


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class Encoder:
    """Encodes one message at one version, either minimal ("empty") or populated ("one")."""

    def __init__(self, msg, version, full):
        self.msg = msg
        self.v = version
        self.full = full
        self.flex = msg.flexible is not None and version >= msg.flexible

    def string(self, s, noncompact=False):
        if s is None:
            return uvarint(0) if self.flex and not noncompact else struct.pack(">h", -1)
        b = s.encode()
        if self.flex and not noncompact:
            return uvarint(len(b) + 1) + b
        return struct.pack(">h", len(b)) + b

    def bytes_(self, b):
        if b is None:
            return uvarint(0) if self.flex else struct.pack(">i", -1)
        return (uvarint(len(b) + 1) if self.flex else struct.pack(">i", len(b))) + b

    def array_len(self, n):
        return uvarint(n + 1) if self.flex else struct.pack(">i", n)

    def prim(self, elem, nullable, noncompact=False):
        """One primitive value: 0 / empty / null when minimal, 1 / "a" when populated."""
        one = 1 if self.full else 0
        fixed = {"bool": ">B", "int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i",
                 "int64": ">q"}
        if elem in fixed:
            return struct.pack(fixed[elem], one)
        if elem == "float64":
            return struct.pack(">d", float(one))
        if elem == "uuid":
            return bytes([one] * 16)
        if elem == "string":
            if self.full:
                return self.string("a", noncompact)
            return self.string(None if nullable else "", noncompact)
        if elem in ("bytes", "records"):
            if self.full:
                return self.bytes_(b"a")
            return self.bytes_(None if nullable else b"")
        raise ValueError("unknown type %r" % elem)

    def field(self, f):
        nullable = in_range(f.nullable, self.v)
        if f.is_array:
            n = 1 if self.full else 0
            out = self.array_len(n)
            for _ in range(n):
                if f.elem_is_struct:
                    out += self.struct(f.fields)
                else:
                    out += self.prim(f.elem, False)
            return out
        if not f.elem_is_struct:
            return self.prim(f.elem, nullable, f.noncompact)
        if nullable:
            if not self.full:
                return struct.pack(">b", -1)
            return struct.pack(">b", 1) + self.struct(f.fields)
        return self.struct(f.fields)

    def struct(self, fields):
        out = b""
        for f in fields:
            if f.tag is None and in_range(f.versions, self.v):
                out += self.field(f)
        if self.flex:
            tagged = []
            if self.full:
                tagged = sorted((f for f in fields
                                 if f.tag is not None and in_range(f.versions, self.v)),
                                key=lambda f: f.tag)
            out += uvarint(len(tagged))
            for f in tagged:
                body = self.field(f)
                out += uvarint(f.tag) + uvarint(len(body)) + body
        return out


def request_frame(msg, v, full, correlation_id):
    flex = msg.flexible is not None and v >= msg.flexible
    hdr = struct.pack(">hhi", msg.key, v, correlation_id)
    hdr += struct.pack(">h", 10) + b"make-seeds"  # client_id: always a classic string
    if flex:
        hdr += uvarint(0)  # request header v2: empty tagged-field section
    body = Encoder(msg, v, full).struct(msg.sections["request"])
    frame = hdr + body
    return struct.pack(">i", len(frame)) + frame


def response_input(msg, v, full):
    frame = struct.pack(">hh", msg.key, v) + Encoder(msg, v, full).struct(msg.sections["response"])
    return b"\x01" + struct.pack(">i", len(frame)) + frame


def seed_versions(msg):
    lo, hi = msg.valid
    vs = [lo]
    if msg.flexible is not None and lo < msg.flexible <= hi:
        vs.append(msg.flexible)
    vs.append(hi)
    return sorted(set(vs))


def main(argv):
    outdir = argv[0] if argv else os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_request")
    gp = load_gen_proto()
    apis = []
    proto_dir = os.path.join(ROOT, "proto")
    for name in sorted(os.listdir(proto_dir)):
        if name.endswith(".kdef"):
            apis += [m for m in gp.parse_file(os.path.join(proto_dir, name)) if m.kind == "api"]
    apis.sort(key=lambda m: m.key)

    os.makedirs(outdir, exist_ok=True)
    seeds = {}
    stream = b""
    for msg in apis:
        for v in seed_versions(msg):
            for full in (False, True):
                kind = "one" if full else "empty"
                frame = request_frame(msg, v, full, len(seeds) + 1)
                seeds["req-%s-v%d-%s" % (msg.name, v, kind)] = frame
                if not full:
                    stream += frame
                seeds["rsp-%s-v%d-%s" % (msg.name, v, kind)] = response_input(msg, v, full)
    seeds["req-stream"] = stream

    for name, data in sorted(seeds.items()):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
    print("make-seeds: %d seeds for %d APIs in %s" % (len(seeds), len(apis), outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
