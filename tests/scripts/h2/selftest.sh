#!/usr/bin/env bash
# The HTTP/2 harness checked against servers whose answers are known, so each
# of its rules is seen to pass a good server and to fail a bad one:
#   h2spec_tally.py   (pass arm) h2o's real report: 143 passed, 2 failed -> exit 1
#                     with both ids; the same report with the 2 failures made
#                     passes -> exit 0; (fail arms) h2spec's own last line
#                     disagreeing with the JUnit report -> exit 2; no last line -> 2
#   h2spec.sh         against h2o -> its tally line, exit 1 (2 known failures);
#                     against an HTTP/1.1-only server (python3 -m http.server)
#                     -> 0 passed, 145 failed, exit 1
#   demo_h2.sh        (pass) h2o, nginx; (fail) the Upgrade check on nginx,
#                     whose `listen ... http2` port speaks HTTP/2 only; every
#                     check on HTTP/1.1 only
#                     (nghttp exits 0 there having processed nothing: only the
#                     count of answered streams catches it)
#   h2_goclient.sh    (pass) h2o; (fail) HTTP/1.1 only
#   the weir arms     on a stand-in for weir-demo --protocols (Go's HTTP/2
#                     server, tests/support/h2client/standin): demo_h2.sh passes
#                     on every backend and mode, and fails when --protocols
#                     http1 serves h2c anyway; h2spec.sh tallies each backend;
#                     h2_goclient.sh passes
#   weir-demo         while it has no --protocols, each of the three scripts
#                     fails saying so (never a skip)
# Not in make test (it could be now: it needs only the peers, python3 and Go); see
# docs/http2-tests.md.
here=$(dirname "$0")
[[ -f $here/demo_common.bash ]] || here=$here/..
source "$here/demo_common.bash"
source tests/scripts/h2/h2_common.bash
H2SPEC=$(scripts/h2spec-tool) || fail "h2spec v2.2.1 is not available"
http1_only="python3 -m http.server --bind 127.0.0.1 @PORT@"

# arm WANT_RC GREP WHAT -- COMMAND...: runs it; its exit code must be WANT_RC
# and its output must match GREP (extended regex).
arm() {
    local want=$1 re=$2 what=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    ((rc == want)) || fail "$what: exit $rc, want $want; output:"$'\n'"$(tail -n 15 <<<"$out")"
    grep -qE -- "$re" <<<"$out" || fail "$what: no line matching '$re' in:"$'\n'"$(tail -n 15 <<<"$out")"
    echo "ok: $what (exit $rc)"
}

# the tally, on a real report of h2o's and on doctored copies of it
start_peer h2o
timeout 120 "$H2SPEC" -h 127.0.0.1 -p "$PORT" -o 2 -j "$TMP/j.xml" >"$TMP/out.txt" 2>&1
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
rm -f "$TMP/server.out" "$TMP/server.err" # fail() below shows the scripts' output, not h2o's
tally=tests/scripts/h2/h2spec_tally.py
arm 1 '^h2spec \[h2o\]: 143 passed, 2 failed, 0 skipped of 145$' "tally of h2o's report" -- python3 $tally h2o "$TMP/j.xml" "$TMP/out.txt"
arm 1 'failed: http2/3\.5/2 ' "tally names h2o's failed case http2/3.5/2" -- python3 $tally h2o "$TMP/j.xml" "$TMP/out.txt"
python3 - "$TMP/j.xml" "$TMP/pass.xml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.sub(r"<error>.*?</error>|<failure>.*?</failure>", "", s, flags=re.S))
PY
sed 's/^145 tests, 143 passed, 0 skipped, 2 failed$/145 tests, 145 passed, 0 skipped, 0 failed/' "$TMP/out.txt" >"$TMP/pass.txt"
arm 0 '^h2spec \[x\]: 145 passed, 0 failed, 0 skipped of 145$' "tally: every case passed -> exit 0" -- python3 $tally x "$TMP/pass.xml" "$TMP/pass.txt"
arm 2 'does not agree|JUnit report 145, 143' "tally: h2spec's line disagrees with its report -> exit 2" -- python3 $tally x "$TMP/j.xml" "$TMP/pass.txt"
grep -v '^145 tests' "$TMP/out.txt" >"$TMP/noline.txt"
arm 2 'printed no' "tally: no last line -> exit 2" -- python3 $tally x "$TMP/j.xml" "$TMP/noline.txt"

arm 1 '^h2spec \[h2o\]: 143 passed, 2 failed, 0 skipped of 145$' "h2spec.sh against h2o" -- env H2SPEC_PEER=h2o tests/scripts/h2/h2spec.sh
arm 1 '^h2spec \[http1-only\]: 0 passed, 145 failed, 0 skipped of 145$' "h2spec.sh against HTTP/1.1 only" -- env H2SPEC_PEER_CMD="$http1_only" H2SPEC_PEER_NAME=http1-only H2SPEC_TIMEOUT=1 tests/scripts/h2/h2spec.sh

arm 0 'h2o: Upgrade: h2c: ok' "demo_h2.sh client checks on h2o" -- env DEMO_H2_PEER=h2o tests/scripts/h2/demo_h2.sh
arm 0 'nginx: prior knowledge and nghttp -m 10' "demo_h2.sh client checks on nginx" -- env DEMO_H2_PEER=nginx tests/scripts/h2/demo_h2.sh
arm 1 "GET / with Upgrade: h2c: got '000 0', want '200 2'" "demo_h2.sh Upgrade check fails on nginx (http2 listen: no HTTP/1.1, no Upgrade)" -- env DEMO_H2_PEER=nginx DEMO_H2_UPGRADE=1 tests/scripts/h2/demo_h2.sh
arm 1 'GET / by prior knowledge: got' "demo_h2.sh fails on HTTP/1.1 only" -- env DEMO_H2_PEER_CMD="$http1_only" tests/scripts/h2/demo_h2.sh

arm 0 'h2client: 200 requests, 32 concurrent, 1 connections: ok' "h2_goclient.sh on h2o" -- env H2_PEER=h2o tests/scripts/h2/h2_goclient.sh
arm 1 'h2client: 200 of 200 requests failed' "h2_goclient.sh fails on HTTP/1.1 only" -- env H2_PEER_CMD="$http1_only" tests/scripts/h2/h2_goclient.sh

# The weir arms, on a stand-in for weir-demo --protocols built on Go's HTTP/2
# server (tests/support/h2client/standin: weir-demo's flags, routes, metrics
# line and exits), in a build folder of its own beside this build's
# backend_probe: every backend, every mode, each protocol choice.
fake=$TMP/fakeb
mkdir -p "$fake/bin" "$fake/tests/support"
(cd tests/support/h2client && GOWORK=off GOFLAGS=-mod=mod timeout 300 go build -o "$fake/bin/weir-demo" ./standin) ||
    fail "go build of tests/support/h2client/standin failed"
ln -s "$(realpath "$B/tests/support/backend_probe")" "$fake/tests/support/backend_probe"
arm 0 'auto and http1: ok \(prior knowledge on http1: curl exit' "demo_h2.sh's weir arms on the stand-in" -- env B="$fake" tests/scripts/h2/demo_h2.sh
arm 1 'a prior-knowledge client was served' "demo_h2.sh fails a --protocols http1 that serves h2c" -- env B="$fake" STANDIN_H2_ALWAYS=1 tests/scripts/h2/demo_h2.sh
arm 1 '^h2spec \[[a-z]+\]: [0-9]+ passed, [1-9][0-9]* failed, 0 skipped of 145$' "h2spec.sh's backend loop on the stand-in (Go's h2c fails a few)" -- env B="$fake" tests/scripts/h2/h2spec.sh
arm 0 'h2client: 8 requests, 4 concurrent, 1 connections: ok' "h2_goclient.sh's weir arms on the stand-in" -- env B="$fake" tests/scripts/h2/h2_goclient.sh

if ! "$B/bin/weir-demo" --protocols h2c --version >/dev/null 2>&1; then
    for t in h2spec demo_h2 h2_goclient; do
        arm 1 'weir-demo refused --protocols' "$t.sh fails while weir-demo has no --protocols" -- tests/scripts/h2/$t.sh
    done
fi
echo "selftest: ok"
