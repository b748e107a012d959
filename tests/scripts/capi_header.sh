#!/usr/bin/env bash
# The header is plain C: tests/capi/header_use.c (every type, every function
# at its exact signature) compiles as strict C99 and C11 and as C++17, with gcc
# and clang when present; weir.h alone compiles first in each mode (it includes
# what it needs). The C example in README.md, between its markers, compiles as
# strict C99 too, so the README cannot drift from the header.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ccs=(gcc) cxxs=(g++)
command -v clang-14 >/dev/null && ccs+=(clang-14) && cxxs+=(clang++-14)
strict_c=(-pedantic -Wall -Wextra -Werror -Iinclude)
strict_cxx=(-std=c++17 -pedantic -Wall -Wextra -Werror -Iinclude)
fail=0
try() { # label cmd...
    local label=$1; shift
    if "$@" 2>"$tmp/err"; then echo "ok    $label"; else echo "FAIL  $label: $*"; cat "$tmp/err"; fail=1; fi
}

printf '#include <weir.h>\n' >"$tmp/alone.c"
for cc in "${ccs[@]}"; do
    for std in c99 c11; do
        try "$cc -std=$std weir.h alone" "$cc" -std=$std "${strict_c[@]}" -c "$tmp/alone.c" -o "$tmp/a.o"
        try "$cc -std=$std header_use.c" "$cc" -std=$std "${strict_c[@]}" -c tests/capi/header_use.c -o "$tmp/u.o"
    done
done
for cxx in "${cxxs[@]}"; do
    try "$cxx -std=c++17 weir.h alone" "$cxx" -x c++ "${strict_cxx[@]}" -c "$tmp/alone.c" -o "$tmp/a.o"
    try "$cxx -std=c++17 header_use.c" "$cxx" -x c++ "${strict_cxx[@]}" -c tests/capi/header_use.c -o "$tmp/u.o"
done

# header_use.c must keep up with the header: every declared function and every
# typedef'd struct is used there, so a new one is checked at its signature too.
for name in $(sed -nE 's/^WEIR_API [^(]*[^A-Za-z0-9_](weir_[A-Za-z0-9_]+)\(.*/\1/p' include/weir.h) \
    $(sed -nE 's/^typedef struct (weir_[A-Za-z0-9_]+) \{.*/\1/p' include/weir.h); do
    grep -qw "$name" tests/capi/header_use.c || { echo "FAIL  tests/capi/header_use.c does not use $name"; fail=1; }
done

# The README example: the ```c block between <!-- example:begin --> and <!-- example:end -->.
awk '/<!-- example:begin -->/{on=1; next} /<!-- example:end -->/{on=0} on && /^```c/{code=1; next} on && /^```/{code=0} code' \
    README.md >"$tmp/readme.c"
if [[ $(wc -l <"$tmp/readme.c") -lt 10 ]]; then
    echo "FAIL  README.md has no C example between <!-- example:begin --> and <!-- example:end -->"
    fail=1
else
    try "gcc -std=c99 README example" gcc -std=c99 "${strict_c[@]}" -c "$tmp/readme.c" -o "$tmp/r.o"
fi
exit $fail
