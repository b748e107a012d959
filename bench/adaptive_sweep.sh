#!/usr/bin/env bash
# The measurement behind docs/adaptive.md's thresholds: weir-demo (one
# worker) on each backend under bench/kaload's closed-loop keep-alive load
# at rising connection counts, SECS seconds each; prints requests/s, the
# server's CPU µs per request (utime+stime from /proc) and its RSS. Loopback
# only, bounded: 2 backends x len(CONNS) x SECS.
#   bench/adaptive_sweep.sh [SECS] [CONNS...]   (after make)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
SECS=${1:-4}
shift || true
CONNS=("${@:-4 64 512}")
read -r -a CONNS <<<"${CONNS[*]}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null || true' EXIT
tick=$(getconf CLK_TCK)
printf '%-6s %6s %10s %12s %8s\n' backend conns req/s cpu_us/req rss_kb
for backend in epoll uring; do
    for c in "${CONNS[@]}"; do
        "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 >"$tmp/out" 2>&1 &
        pid=$!
        for _ in $(seq 100); do grep -q 'listening' "$tmp/out" 2>/dev/null && break; sleep 0.05; done
        port=$(grep -o '127.0.0.1:[0-9]*' "$tmp/out" | head -1 | cut -d: -f2)
        cpu0=$(awk '{print $14+$15}' "/proc/$pid/stat")
        "$B/bench/kaload" 127.0.0.1 "$port" "$c" "$SECS" "$tmp/log" >"$tmp/ka" 2>&1
        cpu1=$(awk '{print $14+$15}' "/proc/$pid/stat")
        rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
        req=$(awk '$1=="requests"{print $2}' "$tmp/ka")
        kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
        awk -v b="$backend" -v c="$c" -v r="$req" -v s="$SECS" -v d="$((cpu1 - cpu0))" -v t="$tick" -v m="$rss" \
            'BEGIN { printf "%-6s %6d %10.0f %12.2f %8d\n", b, c, r / s, r ? d / t * 1e6 / r : 0, m }'
    done
done
