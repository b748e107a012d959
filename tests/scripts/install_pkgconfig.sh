#!/usr/bin/env bash
# `make install` / `make uninstall`, and pkg-config as a consumer uses it:
#  1. staged (packaging): PREFIX=/usr DESTDIR=stage installs exactly the
#     expected files, weir.pc names /usr (DESTDIR does not leak into it), and a
#     program built through PKG_CONFIG_SYSROOT_DIR links and runs against the
#     staged library; uninstall with the same DESTDIR leaves no file behind.
#  2. prefix (a real install): PREFIX=tmp; a program built with
#     `pkg-config --cflags --libs weir` runs (rpath from pkg-config's libdir),
#     one built with `pkg-config --static --libs weir` and libweir.a runs
#     without libweir.so; the README example links; uninstall removes it all.
source "$(dirname "$0")/install_common.bash"
command -v pkg-config >/dev/null || skip "pkg-config not installed"
major=$(sed -n 's/^#define WEIR_VERSION_MAJOR \([0-9]*\).*/\1/p' include/weir.h)
version=$(awk '/^#define WEIR_VERSION_(MAJOR|MINOR|PATCH) /{v = v (v == "" ? "" : ".") $3} END {print v}' include/weir.h)

cat >"$tmp/probe.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <weir.h>
int main(void) {
    if (weir_version() != WEIR_VERSION_HEX) {
        fprintf(stderr, "header %x, library %x\n", (unsigned)WEIR_VERSION_HEX, (unsigned)weir_version());
        return 1;
    }
    if (strcmp(weir_err_name(WEIR_E_STATE), "WEIR_E_STATE") != 0 || weir_http1_status(WEIR_E_BODY_TOO_LARGE) != 413)
        return 1;
    printf("weir %s\n", weir_version_string());
    return 0;
}
C

# ---- 1. staged install
stage=$tmp/stage
make -s install PREFIX=/usr DESTDIR="$stage" SAN=0 >"$tmp/stage.log" 2>&1 || { cat "$tmp/stage.log"; die "make install DESTDIR"; }
(cd "$stage" && find . \( -type f -o -type l \) | sort) >"$tmp/files"
cat >"$tmp/want" <<W
./usr/include/weir.h
./usr/lib/libweir.a
./usr/lib/libweir.so
./usr/lib/libweir.so.$major
./usr/lib/libweir.so.$version
./usr/lib/pkgconfig/weir.pc
W
diff -u "$tmp/want" "$tmp/files" || die "staged install: unexpected file list (want above)"
[[ $(readlink "$stage/usr/lib/libweir.so") == "libweir.so.$major" ]] || die "libweir.so -> $(readlink "$stage/usr/lib/libweir.so")"
[[ $(readlink "$stage/usr/lib/libweir.so.$major") == "libweir.so.$version" ]] || die "libweir.so.$major link"
[[ -x $stage/usr/lib/libweir.so.$version && ! -L $stage/usr/lib/libweir.so.$version ]] || die "real .so not an executable file"
[[ $(readelf -d "$stage/usr/lib/libweir.so.$version") == *"(SONAME)"*"[libweir.so.$major]"* ]] || die "installed SONAME"
cmp -s include/weir.h "$stage/usr/include/weir.h" || die "installed weir.h differs from include/weir.h"
! grep -rq "$stage" "$stage/usr/lib/pkgconfig/weir.pc" || die "DESTDIR leaked into weir.pc: $(cat "$stage/usr/lib/pkgconfig/weir.pc")"
grep -qx 'prefix=/usr' "$stage/usr/lib/pkgconfig/weir.pc" || die "weir.pc prefix is not /usr"
grep -qx "Version: $version" "$stage/usr/lib/pkgconfig/weir.pc" || die "weir.pc Version is not $version"
echo "ok    staged install: $(wc -l <"$tmp/files") files, weir.pc names /usr"

# PKG_CONFIG_PATH: weir.pc from the stage, liburing.pc (Requires.private) from the system.
flags=$(PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_PATH=$stage/usr/lib/pkgconfig pkg-config --cflags --libs weir) ||
    die "pkg-config --cflags --libs weir on the staged tree"
[[ $flags == *"-I$stage/usr/include"* && $flags == *"-L$stage/usr/lib"* ]] || die "sysroot not applied: $flags"
# shellcheck disable=SC2086
cc -std=c99 -Wall -Werror -o "$tmp/probe-staged" "$tmp/probe.c" $flags || die "build against the staged tree: $flags"
# (Output captured before matching: `ldd | grep -q` can fail under pipefail.)
deps=$(LD_LIBRARY_PATH=$stage/usr/lib ldd "$tmp/probe-staged")
[[ $deps == *"libweir.so.$major => $stage/usr/lib/"* ]] || die "probe does not load the staged libweir: $deps"
LD_LIBRARY_PATH=$stage/usr/lib "$tmp/probe-staged" || die "probe against the staged library"
echo "ok    built and ran through PKG_CONFIG_SYSROOT_DIR"

make -s uninstall PREFIX=/usr DESTDIR="$stage" SAN=0 >/dev/null || die "make uninstall DESTDIR"
left=$(cd "$stage" && find . \( -type f -o -type l \))
[[ -z $left ]] || die "uninstall left: $left"
echo "ok    uninstall removed every staged file"

# ---- 2. prefix install
install_weir
libdir=$(pkg-config --variable=libdir weir)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/probe-dyn" "$tmp/probe.c" $(pkg-config --cflags --libs weir) -Wl,-rpath,"$libdir" ||
    die "dynamic build with pkg-config --cflags --libs weir"
deps=$(env -u LD_LIBRARY_PATH ldd "$tmp/probe-dyn")
[[ $deps == *"libweir.so.$major => $libdir/"* ]] || die "dynamic probe loads: $deps"
env -u LD_LIBRARY_PATH "$tmp/probe-dyn" || die "dynamic probe did not run"
echo "ok    dynamic link through pkg-config, rpath $libdir"

# Static: the archive by name (with both in libdir, -lweir picks the .so), and
# Libs.private/Requires.private supply what it needs (libstdc++, liburing).
static_libs=$(pkg-config --static --libs weir | sed 's/-lweir\b/-l:libweir.a/') || die "pkg-config --static --libs weir"
# shellcheck disable=SC2046,SC2086
cc -std=c99 -Wall -Werror -o "$tmp/probe-static" "$tmp/probe.c" $(pkg-config --cflags weir) $static_libs ||
    die "static build with: $static_libs"
[[ $(readelf -d "$tmp/probe-static") != *"[libweir.so"* ]] || die "static probe still needs libweir.so"
env -u LD_LIBRARY_PATH "$tmp/probe-static" || die "static probe did not run"
echo "ok    static link through pkg-config --static ($static_libs)"

# The README example, as a reader would build it.
awk '/<!-- example:begin -->/{on=1; next} /<!-- example:end -->/{on=0} on && /^```c/{code=1; next} on && /^```/{code=0} code' \
    README.md >"$tmp/readme.c"
[[ -s $tmp/readme.c ]] || die "README.md has no example between its markers"
if engine_landed; then
    # shellcheck disable=SC2046
    cc -std=c99 -pedantic -Wall -Wextra -Werror -o "$tmp/readme" "$tmp/readme.c" $(pkg-config --cflags --libs weir) ||
        die "README example does not build against the installed weir"
    echo "ok    README example builds and links"
else
    echo "note  the engine has not landed in libweir.so yet: README example link not tried"
fi

make -s uninstall PREFIX="$prefix" SAN=0 >/dev/null || die "make uninstall PREFIX"
left=$(cd "$prefix" && find . \( -type f -o -type l \))
[[ -z $left ]] || die "uninstall left: $left"
echo "ok    uninstall removed every file of the prefix install"
