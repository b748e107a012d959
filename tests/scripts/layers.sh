#!/usr/bin/env bash
# The layering DESIGN.md §1, §2 and §2b state, checked on the sources:
#  1. lib/http1/ is pure: it includes only http1/, util/ and weir.h (the
#     connection's output instantiates the writers on its own side);
#  2. lib/loop/ names no backend: no epoll/ or uring/ include (the table is
#     lib/backends/); lib/backends/ is the only place that includes both;
#  3. every Conn method lib/loop/ calls is in §2b's table (the inventory the
#     protocol seam replaces): a new call from the loop into HTTP/1 has to be
#     placed in the seam's grouping, or the seam's count goes stale unseen;
#  4. lib/loop/ names nothing of HTTP/1: no include of http1/ or conn/ (a
#     session's vocabulary and its rules come from proto/), no http1:: and
#     no Conn class in its code (comments aside; ConnImage, ConnSettings,
#     ConnWait and ConnPool are the sessions' shared vocabulary).
# Each rule fails on the tree before its change (checked: re-adding
# "conn/out_queue.h" to http1/response.h fails 1; an epoll include in
# lib/loop/engine.cc fails 2; dropping a method's name from §2b fails 3;
# http1::validate_answer back in worker_answers.cc, with its include, fails 4).
set -uo pipefail
cd "$(dirname "$0")/../.."
fail=0
bad() { echo "FAIL  $*"; fail=1; }

# 1. http1 is pure.
while IFS= read -r line; do
    inc=${line#*\"}; inc=${inc%\"*}
    case $inc in http1/* | util/* | weir.h) ;; *) bad "lib/http1 includes $inc: ${line%%:*}" ;; esac
done < <(grep -H '^#include "' lib/http1/*.h lib/http1/*.cc)

# 2. the loop names no backend; only lib/backends/ includes both.
if grep -nE '^#include "(epoll|uring)/' lib/loop/*.h lib/loop/*.cc; then bad "lib/loop includes a backend (above)"; fi
for f in $(grep -lE '^#include "epoll/' lib capi -r); do
    if grep -qE '^#include "uring/' "$f" && [[ $f != lib/backends/* ]]; then bad "$f includes both backends (lib/backends/ is the one place)"; fi
done

# 3. every Conn method the loop calls is placed in DESIGN.md §2b.
section=$(awk '/^## 2b\./{on=1; next} /^## /{on=0} on' docs/DESIGN.md)
[[ -n $section ]] || bad "docs/DESIGN.md has no §2b"
# The loop's direct calls, and those made through the seam (session.h's
# s.m( on its Session): both are placed in §2b.
methods=$( (sed -e 's|//.*||' lib/loop/*.h lib/loop/*.cc |
    grep -oE '(conn\(\)|session\(\)|\bc)[[:space:]]*(\.|->)[[:space:]]*[a-z_0-9]+[[:space:]]*\('
    sed -e 's|//.*||' lib/loop/session.h | grep -oE '\bs\.[a-z_0-9]+\(') |
    sed -E 's/.*(\.|->)[[:space:]]*//; s/[[:space:]]*\(//' | sort -u)
n=0
for m in $methods; do
    grep -qE "(^|[^a-z_])$m\(" lib/conn/conn.h || continue # not a Conn method
    n=$((n + 1))
    grep -q "\`$m\`" <<<"$section" || bad "lib/loop calls Conn::$m, which DESIGN.md §2b does not place"
done
((n > 0)) || bad "found no Conn call in lib/loop: the inventory's pattern is broken"
# 4. the loop names nothing of HTTP/1.
if grep -nE '^#include "(http1|conn)/' lib/loop/*.h lib/loop/*.cc; then bad "lib/loop includes HTTP/1's code (above): its rules are proto/'s"; fi
names=$(awk '{ sub(/\/\/.*/, ""); if ($0 ~ /http1::|(^|[^A-Za-z0-9_])Conn([^A-Za-z0-9_]|$)/) print FILENAME ":" FNR ": " $0 }' lib/loop/*.h lib/loop/*.cc)
[[ -z $names ]] || bad "lib/loop names HTTP/1's code: $names"

echo "lib/loop calls $n Conn methods (directly or through session.h), each placed in DESIGN.md §2b"
exit $fail
