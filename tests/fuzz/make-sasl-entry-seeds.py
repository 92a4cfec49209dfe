#!/usr/bin/env python3
"""make-sasl-entry-seeds.py: write the seed inputs of tests/fuzz/fuzz_sasl_entry.c.

Each seed is a client's byte stream to a SASL_PLAINTEXT listener (size-prefixed frames):
  versions-plain   ApiVersions v3, SaslHandshake v1 PLAIN, SaslAuthenticate v2 (alice): succeeds;
  plain-v1-bad     the same with a wrong password;
  plain-v0         SaslHandshake v0 PLAIN, then the raw token;
  scram-first      SaslHandshake v1 SCRAM-SHA-256, SaslAuthenticate v2 with client-first;
  scram-v0-first   the same with v0 raw tokens;
  unknown-mech     SaslHandshake v1 GSSAPI;
  other-first      a Metadata request first;
  other-after      SaslHandshake v1 PLAIN, then an OffsetCommit;
  versions-twice   ApiVersions twice.

Usage: tests/fuzz/make-sasl-entry-seeds.py [OUTDIR]
(default: tests/fuzz/corpus/fuzz_sasl_entry). Standard library only.
"""
import os
import struct
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def frame(b):
    return struct.pack(">i", len(b)) + b


def request(key, version, body, flexible=False, corr=1):
    h = struct.pack(">hhi", key, version, corr) + struct.pack(">h", 1) + b"c"
    if flexible:
        h += b"\0"
    return frame(h + body)


def string(s):
    return struct.pack(">h", len(s)) + s


def cstring(s):
    return bytes([len(s) + 1]) + s


def cbytes(b):
    return bytes([len(b) + 1]) + b


def versions():
    return request(18, 3, cstring(b"t") + cstring(b"1") + b"\0", flexible=True)


def handshake(mech, v=1):
    return request(17, v, string(mech))


def authenticate(token):
    return request(36, 2, cbytes(token) + b"\0", flexible=True)


SEEDS = {
    "versions-plain": versions() + handshake(b"PLAIN") + authenticate(b"\0alice\0alice-secret"),
    "plain-v1-bad": handshake(b"PLAIN") + authenticate(b"\0alice\0nope"),
    "plain-v0": handshake(b"PLAIN", 0) + frame(b"\0bob\0bob-secret"),
    "scram-first": handshake(b"SCRAM-SHA-256") + authenticate(b"n,,n=alice,r=abcdefgh"),
    "scram-v0-first": handshake(b"SCRAM-SHA-256", 0) + frame(b"n,,n=alice,r=abcdefgh") +
    frame(b"c=biws,r=abcdefgh,p=AAAA"),
    "unknown-mech": handshake(b"GSSAPI"),
    "other-first": request(3, 4, struct.pack(">i", -1) + b"\0"),
    "other-after": handshake(b"PLAIN") + request(8, 2, string(b"g") + struct.pack(">i", -1) +
                                                  string(b"") + struct.pack(">q", -1) +
                                                  struct.pack(">i", 0)),
    "versions-twice": versions() + versions(),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fuzz", "corpus",
                                                             "fuzz_sasl_entry")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
