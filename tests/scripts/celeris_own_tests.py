#!/usr/bin/env python3
"""Judges the `go test -json` runs of celeris's own tests on weir
(go_celeris.sh). Each run is one line of the manifest:

  BACKEND  PACKAGE  MIN  EXIT  RESULTS.json

A run fails when go test exited non-zero (a failed test, a package that did
not build, a panic, a timeout), when a test or subtest failed, when the
package failed outside any test, or when fewer than MIN tests and subtests
passed (a package that stops being tested, or whose tests stop reaching
weir, must not pass quietly). Every test and subtest counts, and a run that
fails with no test failing counts as one failure, so the summary never says
0 failed for a failing run. Prints a line per run, then the last line of
the script's output:

  celeris: N passed, N failed, N skipped

  celeris_own_tests.py MANIFEST
"""
import json
import sys


def judge(path):
    passed = failed = skipped = 0
    failures, pkg_fail, weir_tests = [], False, set()
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            test, act = ev.get("Test"), ev.get("Action")
            if not test:
                if act == "fail":
                    pkg_fail = True
                continue
            if act == "output" and ev.get("Output", "").startswith("weir-engine: made"):
                weir_tests.add(test.split("/")[0])
            if act == "pass":
                passed += 1
            elif act == "fail":
                failed += 1
                failures.append(test)
            elif act == "skip":
                skipped += 1
    return passed, failed, skipped, failures, pkg_fail, len(weir_tests)


def main():
    total = [0, 0, 0]
    bad = []
    with open(sys.argv[1]) as f:
        runs = [l.split() for l in f if l.strip()]
    for backend, pkg, want, rc, path in runs:
        p, fl, s, failures, pkg_fail, on_weir = judge(path)
        total[0] += p
        total[1] += fl
        total[2] += s
        why = []
        if rc != "0":
            why.append(f"go test exited {rc}")
        if failures:
            why.append("failed: " + ", ".join(failures[:10]) + (" ..." if len(failures) > 10 else ""))
        if pkg_fail and not failures:
            why.append("the package failed outside its tests (build, panic or timeout)")
        if p < int(want):
            why.append(f"{p} passed, fewer than the {want} required")
        print(f"  {backend:5} {pkg:22} {p:5} passed {fl:3} failed {s:3} skipped; "
              f"{on_weir} top-level tests started a weir engine" + ("" if not why else "  <- " + "; ".join(why)))
        if why:
            bad.append(f"{backend} {pkg}: " + "; ".join(why))
            if not failures:
                total[1] += 1  # the run failed with no test failing: the package counts

    if bad:
        print("celeris's own tests on weir failed:\n  " + "\n  ".join(bad))
    print(f"celeris: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
