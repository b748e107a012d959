#!/usr/bin/env bash
# Memory that follows the load (issue 32): after 2,000 keep-alive connections
# arrive at once and go idle, weir-demo's RSS per connection falls back near
# what 64-at-a-time arrival leaves, and stays high with --trim-interval-ms off
# (the negative arm). Both backends; the client and the checks are
# tests/scripts/demo_trim.py (about 15 s a backend).
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
ran=0
for backend in epoll uring; do
    timeout 120 python3 tests/scripts/demo_trim.py "$backend"
    rc=$?
    case $rc in
        0) ran=$((ran + 1)) ;;
        77) echo "$backend: not available on this kernel, skipped" ;;
        *) fail "$backend: memory after a burst (rc $rc)" ;;
    esac
done
[[ $ran -gt 0 ]] || { echo "no backend ran"; exit 77; }
echo ok
