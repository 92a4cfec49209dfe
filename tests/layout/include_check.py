#!/usr/bin/env python3
"""include_check.py: fail when two rooms of src/ include each other.

A room is a folder directly under src/ (src/group/, src/coord/, ...); a file directly in src/
is a room of its own, named by its stem (src/conf.c and src/conf.h are the room "conf").
Every `#include "..."` line of a .c, .cc or .h file is resolved relative to the including
file first, then relative to src/; an include that resolves to neither (a system header
written with quotes) is ignored. Room A includes room B when some file of A includes a file
of B. Two rooms that include each other break the plan of docs/architecture.md: each room
has one door, and doors are used one way.

Usage: tests/layout/include_check.py [SRC_DIR]     (default: src/ of this repository)
       tests/layout/include_check.py --self-test
Prints, for each pair of rooms that include each other, the pair and every file:line on
both sides, then exits 1; exits 0 (printing the room count) when there is none.
Standard library only.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCES = (".c", ".cc", ".h")


def room_of(rel):
    """The room of a path relative to src/: its first folder, or the file's stem."""
    parts = rel.split(os.sep)
    if len(parts) > 1:
        return parts[0]
    return os.path.splitext(parts[0])[0]


def edges(src):
    """{(from_room, to_room): [(file relative to src, line number, included path)]}."""
    src = os.path.abspath(src)
    out = {}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SOURCES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = None
                    for base in (dirpath, src):
                        cand = os.path.normpath(os.path.join(base, m.group(1)))
                        if os.path.isfile(cand):
                            target = cand
                            break
                    if target is None or os.path.relpath(target, src).startswith(".."):
                        continue
                    a, b = room_of(rel), room_of(os.path.relpath(target, src))
                    if a != b:
                        out.setdefault((a, b), []).append((rel, lineno, m.group(1)))
    return out


def cycles(found):
    """The pairs (a, b), a < b, where a includes b and b includes a."""
    return sorted((a, b) for (a, b) in found if a < b and (b, a) in found)


def report(src, out):
    found = edges(src)
    bad = cycles(found)
    for a, b in bad:
        out.write("include_check: rooms %s and %s include each other\n" % (a, b))
        for x, y in ((a, b), (b, a)):
            for rel, lineno, inc in found[(x, y)]:
                out.write("  %s -> %s: src/%s:%d: #include \"%s\"\n" % (x, y, rel, lineno, inc))
    if not bad:
        rooms = {r for pair in found for r in pair}
        out.write("include_check: %d rooms, no two include each other\n" % len(rooms))
    return 1 if bad else 0


def self_test():
    """Build small trees and check the verdicts, so the check cannot pass vacuously."""
    def tree(files):
        d = tempfile.mkdtemp(prefix="include-check-")
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        return d

    class Sink:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s

    cases = [
        # (name, files, expected exit, text the report must contain)
        ("one way", {"a/a.h": "", "b/b.c": '#include "a/a.h"\n'}, 0, "no two"),
        ("both ways, src-relative",
         {"a/a.c": '#include "b/b.h"\n', "a/a.h": "",
          "b/b.h": '#include <stdio.h>\n\n#include "a/a.h"\n'},
         1, "src/b/b.h:3"),
        ("both ways, file-relative",
         {"a/x.c": '#include "../b/b.h"\n', "a/a.h": "", "b/b.h": "",
          "b/y.c": '  # include "../a/a.h"\n'},
         1, "rooms a and b include each other"),
        ("top-level file is a room by stem",
         {"conf.h": '#include "util/u.h"\n', "conf.c": '#include "conf.h"\n',
          "util/u.h": "", "util/u.c": '#include "../conf.h"\n'},
         1, "rooms conf and util"),
        ("same room, and a quoted system header",
         {"a/a.c": '#include "a.h"\n#include "zstd.h"\n', "a/a.h": '#include "a/b.h"\n',
          "a/b.h": ""},
         0, "no two"),
        ("sibling file shadows src-relative path",
         {"a/b/c.h": "", "a/x.c": '#include "b/c.h"\n', "b/c.h": '#include "../a/x.c"\n'},
         0, "no two"),
    ]
    failed = 0
    for name, files, want, text in cases:
        s = Sink()
        got = report(tree(files), s)
        ok = got == want and text in s.text
        if not ok:
            failed += 1
            sys.stderr.write("include_check self-test %r: exit %d (want %d), output:\n%s"
                             % (name, got, want, s.text))
    print("include_check self-test: %d of %d cases passed" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        sys.stderr.write("usage: include_check.py [SRC_DIR] | --self-test\n")
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    src = argv[0] if argv else os.path.join(here, "..", "..", "src")
    return report(src, sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
