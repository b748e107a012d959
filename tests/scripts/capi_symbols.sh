#!/usr/bin/env bash
# The ABI surface: libweir.so exports exactly the functions weir.h declares
# (every WEIR_API function, nothing else: no std::, no internals), each bound to
# the WEIR_* version node of capi/weir.map that names it; its SONAME is
# libweir.so.<major>; and libweir.a defines every declared function too.
# capi/weir.map names every function (no pattern in a global: list, which
# would put a new function silently into an old node), each in one node, and
# a released node never changes: each node with a tests/capi/weir_X.Y.symbols
# (WEIR_0.1, WEIR_0.2, WEIR_0.3) must equal it.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
so=$B/lib/libweir.so a=$B/lib/libweir.a
for f in "$so" "$a"; do [[ -e $f ]] || { echo "FAIL  $f missing: run make"; exit 1; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL  $*"; fail=1; }

major=$(sed -n 's/^#define WEIR_VERSION_MAJOR \([0-9]*\).*/\1/p' include/weir.h)
# Declared: the name before the first '(' on each WEIR_API line (the header keeps
# name and '(' on that line; a declaration that does not is itself reported).
grep -E '^WEIR_API ' include/weir.h >"$tmp/decl.lines"
sed -nE 's/^WEIR_API [^(]*[^A-Za-z0-9_](weir_[A-Za-z0-9_]+)\(.*/\1/p' "$tmp/decl.lines" | sort >"$tmp/declared"
if [[ $(wc -l <"$tmp/declared") -ne $(wc -l <"$tmp/decl.lines") ]]; then
    bad "some WEIR_API line in weir.h does not carry 'weir_name(' on it:"
    grep -vE 'weir_[A-Za-z0-9_]+\(' "$tmp/decl.lines" || true
fi
if ! uniq -d "$tmp/declared" | diff /dev/null - >/dev/null; then bad "declared twice: $(uniq -d "$tmp/declared")"; fi
echo "weir.h declares $(wc -l <"$tmp/declared") functions"

nm -D --defined-only "$so" >"$tmp/nm"
# Version-node symbols (type A, e.g. WEIR_0.1) are the version script's; everything else must be weir_*.
awk '$2 == "A"' "$tmp/nm" | awk '{print $3}' >"$tmp/nodes"
awk '$2 != "A"' "$tmp/nm" >"$tmp/syms"
while read -r node; do
    [[ $node =~ ^WEIR_[0-9]+\.[0-9]+$ ]] || bad "unexpected version node $node"
done <"$tmp/nodes"
[[ -s $tmp/nodes ]] || bad "no WEIR_* version node: is capi/weir.map applied?"
while read -r _ type sym; do
    name=${sym%%@*}
    ver=${sym#"$name"}
    [[ $name =~ ^weir_[a-z0-9_]+$ ]] || bad "exported symbol is not weir_*: $sym ($type)"
    [[ $ver =~ ^@@?WEIR_[0-9]+\.[0-9]+$ ]] || bad "symbol without a WEIR_* version: $sym"
    [[ $type == T ]] || bad "exported symbol is not a function in .text: $sym ($type)"
done <"$tmp/syms"
awk '{print $3}' "$tmp/syms" | sed 's/@.*//' | sort -u >"$tmp/exported"
if grep -q '_Z' "$tmp/nm"; then bad "C++ symbols exported: $(grep _Z "$tmp/nm" | head -n 5)"; fi

missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
[[ -z $missing ]] || bad "declared in weir.h but not exported by $so:" $missing
[[ -z $extra ]] || bad "exported by $so but not declared in weir.h:" $extra

# The version script: node name, then each global name in it, one line each
# ("NODE name"); comments stripped, patterns kept so they can be refused.
perl -0pe 's{/\*.*?\*/}{}gs' capi/weir.map | awk '
    /^[[:space:]]*$/ { next }
    { gsub(/[[:space:]]+/, " ") }
    match($0, /[A-Za-z0-9_.]+ *\{/) { node = $1; sect = "global"; }
    /global:/ { sect = "global" }
    /local:/ { sect = "local" }
    {
        n = split($0, w, /[ ;]+/)
        for (i = 1; i <= n; i++)
            if (w[i] ~ /^[A-Za-z0-9_*?\[\]]+$/ && w[i] != node && sect == "global" && node != "")
                print node, w[i]
    }
    /\}/ { node = "" }' >"$tmp/map"
if grep -E ' .*[*?[]' "$tmp/map" >"$tmp/globs"; then bad "capi/weir.map has a pattern in a global list (name each function): $(tr '\n' ' ' <"$tmp/globs")"; fi
awk '{print $2}' "$tmp/map" | sort >"$tmp/mapped_all"
if ! uniq -d "$tmp/mapped_all" | diff /dev/null - >/dev/null; then bad "named in two nodes of capi/weir.map: $(uniq -d "$tmp/mapped_all" | tr '\n' ' ')"; fi
sort -u "$tmp/mapped_all" >"$tmp/mapped"
unmapped=$(comm -23 "$tmp/declared" "$tmp/mapped")
[[ -z $unmapped ]] || bad "declared in weir.h but in no node of capi/weir.map:" $unmapped
stray=$(comm -23 "$tmp/exported" "$tmp/mapped")
[[ -z $stray ]] || bad "exported by $so but in no node of capi/weir.map:" $stray
undeclared=$(comm -13 "$tmp/declared" "$tmp/mapped")
[[ -z $undeclared ]] || bad "named in capi/weir.map but not declared in weir.h:" $undeclared
# Each exported symbol carries the version of the node that names it.
while read -r _ _ sym; do
    name=${sym%%@*} ver=${sym##*@}
    want=$(awk -v n="$name" '$2 == n {print $1}' "$tmp/map")
    [[ -z $want || $ver == "$want" ]] || bad "$name is exported as @$ver, capi/weir.map puts it in $want"
done <"$tmp/syms"
# Released nodes are frozen: each tests/capi/weir_X.Y.symbols is its node.
frozen=
for f in tests/capi/weir_*.symbols; do
    v=$(basename "$f" .symbols)
    v=${v#weir_}
    frozen+="WEIR_$v "
    awk -v n="WEIR_$v" '$1 == n {print $2}' "$tmp/map" | sort >"$tmp/node_$v"
    if ! diff -u "$f" "$tmp/node_$v" >"$tmp/node.diff"; then
        bad "node WEIR_$v of capi/weir.map differs from the frozen $f (a released node never changes; add new functions to a new node):"
        sed 's/^/      /' "$tmp/node.diff"
    fi
done
[[ $frozen == *WEIR_0.1* ]] || bad "tests/capi/weir_0.1.symbols is missing"

soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "libweir.so.$major" ]] || bad "SONAME is '$soname', want libweir.so.$major"

nm --defined-only "$a" 2>/dev/null | awk '$2 == "T" {print $3}' | sort -u >"$tmp/static"
smissing=$(comm -23 "$tmp/declared" "$tmp/static")
[[ -z $smissing ]] || bad "declared in weir.h but not defined in $a:" $smissing

# Every weir code and close reason of weir.h has its line in lib/util/codes.h
# (the one list weir_strerror, weir_err_name, weir_http1_status and
# weir_close_reason_name read), and the list names nothing weir.h lacks.
for kind in E CLOSE; do
    sed -nE "s/^#define (WEIR_${kind}_[A-Z0-9_]+) .*/\1/p" include/weir.h |
        grep -vE '^WEIR_(E_BASE|E_LAST|CLOSE_REASONS)$' | sort >"$tmp/h_$kind"
    grep -oE "X\((WEIR_${kind}_[A-Z0-9_]+)," lib/util/codes.h | sed -E 's/X\(|,//g' | sort >"$tmp/l_$kind"
    d=$(comm -3 "$tmp/h_$kind" "$tmp/l_$kind" | tr -d '\t' | tr '\n' ' ')
    [[ -z $d ]] || bad "weir.h and lib/util/codes.h disagree on WEIR_${kind}_*: $d"
done

if [[ $fail == 0 ]]; then
    echo "ok    $(wc -l <"$tmp/exported") exported functions == declared == named in capi/weir.map; frozen: $frozen; SONAME $soname; nodes: $(tr '\n' ' ' <"$tmp/nodes")"
fi
exit $fail
