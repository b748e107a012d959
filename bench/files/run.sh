#!/usr/bin/env bash
# Server CPU per GiB of a large file answer (weir_respond_file) over
# loopback: weir-demo --static serves a 256 MiB file, curl fetches it FETCHES
# times per round, and the server's CPU (utime + stime of every thread, the
# io_uring workers that run splices included: /proc/PID/stat) is read around
# each round. Each backend runs its file-range path (sendfile on epoll,
# splice on io_uring) and the read path (WEIR_FILE_RANGES=0: pread into the
# output, then send), interleaved round by round. docs/benchmarks.md "File
# answers" holds the figures.
#   bench/files/run.sh [ROUNDS] [FETCHES]     (B=build by default)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
ROUNDS=${1:-5}
FETCHES=${2:-4}
MIB=256
TMP=$(mktemp -d)
PID=
trap '[[ -n $PID ]] && kill -KILL $PID 2>/dev/null; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/static"
head -c $((MIB << 20)) /dev/urandom >"$TMP/static/big.bin"
tck=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start() { # backend ranges
    WEIR_FILE_RANGES=$2 "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$1" --mode inline --workers 1 \
        --static "$TMP/static" >"$TMP/out" 2>"$TMP/err" &
    PID=$!
    PORT=
    for _ in $(seq 200); do
        PORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$TMP/out" | head -n 1)
        [[ -n $PORT ]] && break
        sleep 0.05
    done
    [[ -n $PORT ]] || { echo "weir-demo did not start: $(cat "$TMP/err")"; exit 1; }
    curl -s -o /dev/null "http://127.0.0.1:$PORT/files/big.bin" # warm: page cache, pools
}

stop() { kill -TERM $PID; wait $PID 2>/dev/null; PID=; }

declare -A sum
configs=${CONFIGS:-"epoll:1 epoll:0 uring:1 uring:0"}
echo "round config cpu_s_per_gib wall_s_per_gib"
for r in $(seq "$ROUNDS"); do
    for c in $configs; do
        start "${c%%:*}" "${c#*:}"
        t0=$(cpu_ticks $PID)
        w0=$(date +%s.%N)
        for _ in $(seq "$FETCHES"); do
            n=$(curl -s -o /dev/null -w '%{size_download}' "http://127.0.0.1:$PORT/files/big.bin")
            [[ $n == $((MIB << 20)) ]] || { echo "short download: $n"; exit 1; }
        done
        w1=$(date +%s.%N)
        t1=$(cpu_ticks $PID)
        stop
        gib=$(echo "$FETCHES * $MIB / 1024" | bc -l)
        cpu=$(echo "($t1 - $t0) / $tck / $gib" | bc -l)
        wall=$(echo "($w1 - $w0) / $gib" | bc -l)
        printf '%d %s %.3f %.3f\n' "$r" "$c" "$cpu" "$wall"
    done
done
