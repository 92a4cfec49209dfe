#!/usr/bin/env python3
"""test_gen_wire: the generated Python wire client (gen_wire.py) against frames encoded
independently of it.

tests/fuzz/make-seeds.py encodes, by its own hand-written rules, a request and a response of
every API at its lowest, first flexible and highest version, once with every field at its
smallest value and once with every array holding one element, every string "a", every number 1
and every tagged field present (tests/fuzz/corpus/fuzz_request/req-* and rsp-*). Each one must
decode with gen_wire.py to the end of its body, and encode back to the same bytes. A seed
missing, or an API in gen_wire.APIS without seeds, fails the test, so it cannot pass by
finding nothing. Exits 0 when every seed round-trips.

Usage: tests/support/test_gen_wire.py
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
from tests.support import gen_wire  # noqa: E402
from tests.support.wire import Reader, _snake  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_request")
SEED = re.compile(r"^(req|rsp)-([A-Za-z]+)-v(\d+)-(empty|one)$")


def body_of(kind, data, api, version):
    """The message body of a seed: after the request header, or after the response mode's
    key and version."""
    key, _, _, first_flexible = gen_wire.APIS[api]
    r = Reader(data)
    if kind == "rsp":
        assert r.take(1) == b"\x01"
    size = r.i32()
    if size != len(data) - r.pos:
        raise AssertionError("frame size %d, %d bytes follow" % (size, len(data) - r.pos))
    if (r.i16(), r.i16()) != (key, version):
        raise AssertionError("key/version of the frame differ from its name")
    if kind == "req":
        r.i32()  # correlation id
        r.string()  # client id
        if first_flexible is not None and version >= first_flexible:
            r.tagged_fields()
    return data[r.pos:]


def main():
    seen, failed, seeds = set(), 0, 0
    for name in sorted(os.listdir(CORPUS)):
        m = SEED.match(name)
        if not m:
            continue
        kind, api, version = m.group(1), m.group(2), int(m.group(3))
        seeds += 1
        with open(os.path.join(CORPUS, name), "rb") as f:
            data = f.read()
        section = "request" if kind == "req" else "response"
        fn = _snake(api) + "_" + section
        try:
            body = body_of(kind, data, api, version)
            r = Reader(body)
            msg = getattr(gen_wire, "decode_" + fn)(version, r)
            if not r.at_end():
                raise AssertionError("%d bytes left after decoding" % (len(body) - r.pos))
            again = getattr(gen_wire, "encode_" + fn)(version, msg)
            if again != body:
                raise AssertionError("re-encoded differs:\n  seed %s\n  gen  %s"
                                     % (body.hex(), again.hex()))
            seen.add((api, section))
        except Exception as e:  # one line per failing seed, then the verdict
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
    missing = [(a, s) for a in gen_wire.APIS for s in ("request", "response")
               if (a, s) not in seen]
    for a, s in missing:
        failed += 1
        print("FAIL %s %s: no seed round-tripped" % (a, s))
    print("test_gen_wire: %d seeds, %d messages of %d APIs round-trip, %d failures"
          % (seeds, len(seen), len(gen_wire.APIS), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
