#!/usr/bin/env python3
"""Reads `go test -json` of celeris's own tests run with weir as every
Server's engine (go_celeris.sh) and says, per test, whether it served over a
weir engine and how it ended; then holds that against the list of expected
outcomes (go-binding/celeris/patches/celeris-own-tests.expect: a test that
starts an engine and fails must be listed with its reason, and a listed
failure that now passes must leave the list). Exit 1 on any difference.

  celeris_own_tests.py RESULTS.json EXPECT BACKEND

Tests are named PACKAGE:TEST (PACKAGE relative to celeris's root, "." for
the root); EXPECT lines are "PACKAGE:TEST OUTCOME epoll|uring|both REASON",
OUTCOME pass, fail, skip, or hang (go_celeris.sh skips it: it would wait
out the timeout).
"""
import json
import sys


def outcomes(path):
    status, engine, order = {}, {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            ev = json.loads(line)
            test = ev.get("Test")
            if not test or "/" in test:
                continue  # package lines and subtests: the top-level test decides
            pkg = ev.get("Package", "").removeprefix("github.com/goceleris/celeris").lstrip("/") or "."
            test = f"{pkg}:{test}"
            if test not in status:
                order.append(test)
                status[test] = "run"
            if ev["Action"] == "output" and ev.get("Output", "").startswith("weir-engine: made"):
                engine[test] = engine.get(test, 0) + 1
            if ev["Action"] in ("pass", "fail", "skip"):
                status[test] = ev["Action"]
    return order, status, engine


def expected(path, backend):
    want = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, outcome, where, *why = line.split(None, 3)
            if where in ("both", backend):
                want[name] = (outcome, why[0] if why else "")
    return want


def main():
    results, expect, backend = sys.argv[1:4]
    order, status, engine = outcomes(results)
    want = expected(expect, backend)
    bad, served = [], 0
    for t in order:
        on_weir = engine.get(t, 0) > 0
        served += on_weir
        got = status[t]
        exp, why = want.get(t, ("pass", ""))
        mark = "weir" if on_weir else "    "
        note = f"  ({why})" if why and got == exp and got != "pass" else ""
        print(f"  {got:4} {mark} {t}{note}")
        if on_weir or t in want:
            if got != exp:
                bad.append(f"{t}: {got}, expected {exp}" + (f" ({why})" if why else ""))
    for t, (exp, why) in want.items():
        if exp == "hang":
            print(f"  hang      {t}  (skipped: {why})")
        elif t not in status:
            bad.append(f"{t}: listed in {expect} but not run")
    passed = sum(1 for t in order if engine.get(t) and status[t] == "pass")
    failed = sum(1 for t in order if engine.get(t) and status[t] == "fail")
    print(f"celeris's own tests on weir ({backend}): {served} started a weir engine: {passed} passed, "
          f"{failed} failed (each listed with its reason); {len(order) - served} never started an engine")
    if bad:
        print("unexpected:\n  " + "\n  ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
