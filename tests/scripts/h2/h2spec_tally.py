#!/usr/bin/env python3
"""The tally of one h2spec run, for tests/scripts/h2spec.sh:

  h2spec_tally.py LABEL JUNIT.xml STDOUT.txt

Prints `h2spec [LABEL]: P passed, F failed, S skipped of T` and then each
failed case as `  failed: ID  title` (ID as h2spec takes it back on its
command line: package/index, e.g. http2/3.5/2). The tally comes from the JUnit
report (-j) and must agree with h2spec's own last line ("145 tests, 143
passed, 0 skipped, 2 failed"), and T must be 145 (h2spec v2.2.1): anything
else is a tally that cannot be trusted. Exit 0 when every case passed, 1 when
some failed, 2 when the tally cannot be read or does not agree."""
import re
import sys
import xml.etree.ElementTree as ET

CASES = 145  # h2spec v2.2.1, every spec (generic, http2, hpack)


def bad(label, why):
    print(f"h2spec [{label}]: tally not readable: {why}")
    sys.exit(2)


def main():
    label, junit, stdout = sys.argv[1:4]
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as e:
        bad(label, f"JUnit report {junit}: {e}")
    passed, failed, skipped = 0, [], 0
    for suite in root.iter("testsuite"):
        for i, case in enumerate(suite.iter("testcase"), 1):
            cid = f"{suite.get('package')}/{i}"
            if case.find("skipped") is not None:
                skipped += 1
            elif case.find("failure") is not None or case.find("error") is not None:
                failed.append((cid, case.get("classname", "")))
            else:
                passed += 1
    total = passed + len(failed) + skipped
    try:
        with open(stdout, errors="replace") as f:
            text = f.read()
    except OSError as e:
        bad(label, f"{stdout}: {e}")
    m = re.findall(r"^(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed\s*$", text, re.M)
    if not m:
        bad(label, "h2spec printed no 'N tests, P passed, S skipped, F failed' line")
    own = tuple(int(x) for x in m[-1])
    if own != (total, passed, skipped, len(failed)):
        bad(label, f"h2spec says {own[0]} tests, {own[1]} passed, {own[2]} skipped, {own[3]} failed; "
                   f"its JUnit report {total}, {passed}, {skipped}, {len(failed)}")
    print(f"h2spec [{label}]: {passed} passed, {len(failed)} failed, {skipped} skipped of {total}")
    for cid, title in failed:
        print(f"  failed: {cid}  {title}")
    if total != CASES:
        bad(label, f"{total} cases, want {CASES} (not h2spec v2.2.1?)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
