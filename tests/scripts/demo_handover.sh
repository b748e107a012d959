#!/usr/bin/env bash
# weir-demo's hot upgrade (issue 15, docs/upgrade.md): --upgrade-socket offers
# a running demo on SIGQUIT, --take-over starts its successor, and the
# listeners and live connections move. Driven by demo_handover.py under four
# kinds of loopback clients (keep-alive with idle spells, pipelined 8 deep,
# a new connection per request, connected-and-silent 100-800 ms):
# - main (must hold): 20 back-to-back upgrades, epoll -> io_uring and back
#   (uring skipped where it does not start): 0 failed requests, 0 resets,
#   0 refused connects, 0 keep-alive reconnects; each step's ledgers balance
#   (old sent == new received + refused; refused, lost, closed, returned 0)
#   and every client connection moved;
# - crash (must hold): a successor that SIGKILLs itself after taking the
#   listeners, then one after receiving 4 connections: "handover: failed",
#   the old process serves on, the clients lose nothing; a normal upgrade
#   after it succeeds.
# - nosuccessor (must hold): two offers nobody takes each end "handover:
#   failed" at --handover-wait-ms, and the demo serves on.
# The arms that must lose:
# - plain: SIGTERM and a new demo on the same port: refused connects,
#   resets or failed requests > 0. It needs nothing new, so it runs (and
#   must lose) even before the feature lands;
# - listeners-only (--handover-listeners-only, what nginx, HAProxy and Envoy
#   do): keep-alive clients reconnect > 0, and the old process counts closed > 0.
# Until weir-demo knows --take-over, the plain arm runs and the rest skip (77).
# Arguments are the driver's: --rounds N --backends epoll,uring --arms A,B.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "skip: python3 needed for the clients"; exit 77; }

# Under a sanitizer (SAN=1, SAN=tsan) the demo runs 3-10 times slower: fewer
# rounds, and every bound three times as long.
ROUNDS=20 SLOW=1
if [[ ${SAN:-0} != 0 ]]; then
    ROUNDS=6 SLOW=3
fi
# No __pycache__ left in the tree by the import of demo_handover_load.py.
drive() { PYTHONDONTWRITEBYTECODE=1 python3 tests/scripts/demo_handover.py --bin "$B/bin/weir-demo" --tmp "$TMP" \
    --rounds "$ROUNDS" --slow "$SLOW" "$@"; }

# The help is read whole before grep -q: an early grep exit would SIGPIPE the
# demo and fail the pipe (pipefail), skipping the arms (as demo_max_conns.sh).
help=$("$B/bin/weir-demo" --help 2>&1)
if ! grep -q -- '--take-over' <<<"$help"; then
    drive --arms plain "$@" || fail "the plain stop-and-start arm"
    echo "skip: weir-demo has no --take-over yet (the plain arm ran and lost, as it must)"
    exit 77
fi
drive "$@" || fail "the handover arms"
echo "ok"
