#!/usr/bin/env bash
# One list of backends, and an unknown name is an error everywhere a runner
# takes one (DESIGN.md §1, issue 31). What it checks:
#  - backend_probe --list is the library's table (weir_backend_name), and
#    backends.bash's BACKENDS is that list;
#  - WEIR_TEST_BACKEND=<no backend> fails an integration binary (exit 2,
#    nothing passed) instead of running it on epoll -- both one that asks
#    test_backend() and one that never does (test_pause_netns); the same
#    binaries with WEIR_TEST_BACKEND=epoll run (the control arm: the failure
#    is the name's, not the binary's);
#  - the C ABI contract test that reads it (test_systemd) fails too;
#  - backend_probe, scripts/run-tests (WEIR_TEST_BACKENDS) and backends.bash
#    refuse the name with exit 2 and run nothing; run-tests with
#    WEIR_TEST_BACKENDS=epoll runs that backend only.
# The loss the rule guards against, shown by the mutant the lead can rerun:
# with tests/support/net.cc's old "anything but uring is epoll", the first
# bogus-name arm passes the binary on epoll and this script fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
fail() { echo "FAIL  $*"; exit 1; }
probe=$B/tests/support/backend_probe
[[ -x $probe ]] || fail "$probe not built (make tests)"
bogus=no-such-backend

list=$("$probe" --list) || fail "backend_probe --list failed"
[[ $(head -n 1 <<<"$list") == epoll ]] || fail "backend_probe --list does not begin with epoll: '$list'"
grep -qx uring <<<"$list" || fail "backend_probe --list lacks uring: '$list'"
source tests/scripts/backends.bash
[[ $BACKENDS == "$(echo $list)" ]] || fail "BACKENDS '$BACKENDS' is not the library's list '$(echo $list)'"

"$probe" "$bogus" >/dev/null 2>&1
rc=$?
((rc == 2)) || fail "backend_probe $bogus: exit $rc, want 2"

# An integration binary: the bogus name ends it with 2 before any test runs.
for t in test_engine_basic test_pause_netns; do
    bin=$B/tests/integration/$t
    [[ -x $bin ]] || fail "$bin not built"
    out=$(WEIR_TEST_BACKEND=$bogus timeout 120 "$bin" 2>&1)
    rc=$?
    ((rc == 2)) || fail "$t with WEIR_TEST_BACKEND=$bogus: exit $rc, want 2 (ran as epoll?): $(tail -n 5 <<<"$out")"
    grep -q 'PASSED' <<<"$out" && fail "$t with WEIR_TEST_BACKEND=$bogus passed tests"
    grep -q "names no backend" <<<"$out" || fail "$t: no message naming the bad WEIR_TEST_BACKEND: $out"
    # Control: the same binary runs on a real name (a skip is a run too).
    out=$(WEIR_TEST_BACKEND=epoll timeout 300 "$bin" 2>&1)
    rc=$?
    ((rc == 0)) || fail "control arm: $t on epoll: exit $rc: $(tail -n 20 <<<"$out")"
    grep -qE 'PASSED|SKIPPED' <<<"$out" || fail "control arm: $t on epoll ran nothing"
done

out=$(WEIR_TEST_BACKEND=$bogus timeout 60 "$B/tests/capi/test_systemd" 2>&1)
rc=$?
((rc != 0)) || fail "test_systemd with WEIR_TEST_BACKEND=$bogus passed (ran as epoll)"

# The runners: run-tests and backends.bash refuse the name, run nothing.
out=$(WEIR_TEST_BACKENDS="epoll,$bogus" timeout 60 scripts/run-tests "$B" 0 test_engine_basic 2>&1)
rc=$?
((rc == 2)) || fail "run-tests with WEIR_TEST_BACKENDS=epoll,$bogus: exit $rc, want 2: $(tail -n 5 <<<"$out")"
grep -q '^ok ' <<<"$out" && fail "run-tests ran something with a bogus backend name"
out=$(WEIR_TEST_BACKENDS=$bogus bash -c 'B='"$B"'; source tests/scripts/backends.bash; echo "ran on: $BACKENDS"' 2>&1)
rc=$?
((rc == 2)) || fail "backends.bash with WEIR_TEST_BACKENDS=$bogus: exit $rc, want 2: $out"
grep -q 'ran on' <<<"$out" && fail "backends.bash went on with a bogus name"

# Narrowed to one backend: run-tests runs that one only.
out=$(WEIR_TEST_BACKENDS=epoll timeout 300 scripts/run-tests "$B" 0 integration/test_engine_basic 2>&1)
rc=$?
((rc == 0)) || fail "run-tests WEIR_TEST_BACKENDS=epoll: exit $rc: $(tail -n 20 <<<"$out")"
grep -q 'test_engine_basic \[epoll\]' <<<"$out" || fail "run-tests did not run test_engine_basic on epoll: $out"
grep -q '\[uring\]' <<<"$out" && fail "run-tests ran uring with WEIR_TEST_BACKENDS=epoll"
echo "ok: one list ($(echo $list)); unknown names refused by binaries, probe, run-tests and backends.bash"
