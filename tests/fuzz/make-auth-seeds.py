#!/usr/bin/env python3
"""make-auth-seeds.py: write the seed inputs of tests/fuzz/fuzz_auth_sasl.c.

The input format is described at the top of fuzz_auth_sasl.c: a mode byte, then tokens
separated by 0xFF 0xFF. Seeds:

  plain-*        PLAIN exchanges (good, authzid, wrong password, malformed);
  scram256-ok    a complete SCRAM-SHA-256 exchange that succeeds: the server nonce is worked
  scram512-ok    out here from the target's counter random source (byte i of the source is
                 ((i + 1) * 2654435761 mod 2**32) >> 24, a nonce character is
                 NONCE_CHARS[byte % 93]) and the proof from RFC 5802's formulas;
  scram*-old     the same with librdkafka < 2.6.1's doubled client nonce;
  scram-*        malformed first and final messages;
  rec-*          auth records (mode 3): an ACL, a SCRAM credential, their tombstones.

Usage: tests/fuzz/make-auth-seeds.py [OUTDIR]  (default: tests/fuzz/corpus/fuzz_auth_sasl)
Standard library only. Files with these names are overwritten; others are left alone.
"""
import base64
import hashlib
import hmac
import os
import struct
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SEP = b"\xff\xff"
NONCE_CHARS = (b"!\"#$%&'()*+-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
               b"[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~")
assert len(NONCE_CHARS) == 93
SALT = b"0123456789abcdef"


def server_nonce():
    out = bytearray()
    for c in range(1, 31):
        out.append(NONCE_CHARS[(((c * 2654435761) & 0xFFFFFFFF) >> 24) % 93])
    return bytes(out)


def scram_seed(mode, algo, cnonce, doubled):
    first = b"n,,n=alice,r=" + cnonce
    nonce = cnonce + server_nonce()
    server_first = b"r=" + nonce + b",s=" + base64.b64encode(SALT) + b",i=4096"
    sp = hashlib.pbkdf2_hmac(algo, b"alice-secret", SALT, 4096)
    ck = hmac.new(sp, b"Client Key", algo).digest()
    stored = hashlib.new(algo, ck).digest()
    sent_nonce = (cnonce + nonce) if doubled else nonce
    without = b"c=biws,r=" + sent_nonce
    am = first[3:] + b"," + server_first + b"," + without
    sig = hmac.new(stored, am, algo).digest()
    proof = bytes(x ^ y for x, y in zip(ck, sig))
    rest = (cnonce if doubled else b"") + b",p=" + base64.b64encode(proof)
    # The target replaces a leading 0x01 by "c=biws,r=<server-first nonce>".
    if doubled:
        final = without + b",p=" + base64.b64encode(proof)
    else:
        final = b"\x01" + rest
    return bytes([mode]) + first + SEP + final


def acl_record():
    key = struct.pack(">h", 18) + bytes(range(16))
    def s(x):
        return struct.pack(">h", len(x)) + x
    value = (struct.pack(">hb", 0, 2) + s(b"orders") + struct.pack(">b", 4) + s(b"User:alice") +
             s(b"10.0.0.0/8") + struct.pack(">bb", 3, 3))
    return key, value


def scram_record():
    key = struct.pack(">h", 11) + struct.pack(">h", 5) + b"alice" + struct.pack(">b", 1)
    def b(x):
        return struct.pack(">i", len(x)) + x
    value = struct.pack(">h", 0) + b(SALT) + b(bytes(32)) + b(bytes(32)) + struct.pack(">i", 4096)
    return key, value


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests/fuzz/corpus/fuzz_auth_sasl")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "plain-ok": b"\x00" + b"\x00alice\x00alice-secret",
        "plain-authzid": b"\x00" + b"alice\x00alice\x00alice-secret",
        "plain-wrong-then-more": b"\x00" + b"\x00bob\x00x" + SEP + b"\x00bob\x00b",
        "plain-empty": b"\x00",
        "scram256-ok": scram_seed(1, "sha256", b"fyko+d2lbbFgONRv9qkxdawL", False),
        "scram512-ok": scram_seed(2, "sha512", b"rOprNGfwEbeRWgbNEkqO", False),
        "scram256-old": scram_seed(1, "sha256", b"librdkafkanonce", True),
        "scram-authzid-escaped": b"\x01" + b"n,a=al=2Cice,n=al=3Dice,r=x,ext=1,tokenauth=true",
        "scram-bad-header": b"\x02" + b"p=tls-unique,,n=alice,r=abc",
        "scram-final-ext": b"\x01" + b"n,,m=x,n=alice,r=abc" + SEP + b"\x01,e=1,p=AAAA" + SEP +
                           b"again",
        "scram-final-bad64": b"\x01" + b"n,,n=alice,r=abc" + SEP + b"c=biws,r=abc,p=A=AA",
    }
    k, v = acl_record()
    k2, v2 = scram_record()
    seeds["rec-acl"] = b"\x03" + k + b"\xfe" + v + SEP + k2 + b"\xfe" + v2
    seeds["rec-tombstones"] = b"\x03" + k + b"\xfe" + v + SEP + k + SEP + k2 + b"\xfe" + v2 + SEP + k2
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("make-auth-seeds: %d seeds in %s" % (len(seeds), out))


if __name__ == "__main__":
    main()
