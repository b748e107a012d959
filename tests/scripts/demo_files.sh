#!/usr/bin/env bash
# weir-demo --static DIR: GET /files/NAME answers DIR/NAME from the file
# (weir_respond_file) in each mode on both backends: a 9 MiB file (above the
# 4 MiB output limit) byte for byte, an empty one, HEAD; and no name reaches
# a file outside DIR: "..", encoded dots and slashes, absolute paths and a
# symbolic link out are a 400 or a 404, never the file.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
mkdir -p "$TMP/static" "$TMP/outside"
head -c $((9 << 20)) /dev/urandom >"$TMP/static/big.bin"
: >"$TMP/static/empty"
echo secret >"$TMP/outside/secret"
ln -s "$TMP/outside/secret" "$TMP/static/link"
for run in epoll:inline epoll:driven epoll:deferred uring:inline uring:driven uring:deferred; do
    backend=${run%%:*} mode=${run#*:}
    if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
        --mode "$mode" --workers 2 --static "$TMP/static"; then
        echo "$run: backend not available: $(head -n 1 "$TMP/server.err")"
        continue
    fi
    [[ $(fetch /files/big.bin) == 200 ]] || fail "$run: GET /files/big.bin"
    cmp -s "$TMP/static/big.bin" "$TMP/body" || fail "$run: /files/big.bin differs from the file"
    [[ $(fetch /files/empty) == 200 && ! -s $TMP/body ]] || fail "$run: GET /files/empty"
    [[ $(fetch /files/big.bin -I) == 200 ]] || fail "$run: HEAD /files/big.bin"
    grep -qi "^content-length: $((9 << 20))" "$TMP/head" || fail "$run: HEAD without the file's length"
    [[ $(fetch /files/nope) == 404 ]] || fail "$run: a missing file is not a 404"
    for bad in /files/../outside/secret /files/..%2foutside%2fsecret /files/%2e%2e/outside/secret \
        /files/a%2fb "/files/$TMP/outside/secret" /files/link /files/.hidden /files/; do
        code=$(fetch "$bad" --path-as-is)
        [[ $code == 400 || $code == 404 ]] || fail "$run: $bad gave $code"
        grep -q secret "$TMP/body" && fail "$run: $bad reached a file outside the directory"
    done
    stop_server TERM
    [[ $STOP_RC == 0 ]] || fail "$run: exit status $STOP_RC after SIGTERM"
    echo "$run: ok"
done
