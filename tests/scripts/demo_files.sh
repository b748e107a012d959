#!/usr/bin/env bash
# weir-demo --static DIR: GET /files/NAME answers DIR/NAME from the file
# (weir_serve_file) in each mode on both backends: a 9 MiB file (above the
# 4 MiB output limit) byte for byte, an empty one, HEAD; the validators as
# nginx answers them (ETag, Last-Modified, Accept-Ranges, a Content-Type by
# extension; 304 to If-None-Match and If-Modified-Since, 206 to a Range,
# 416, 412, 405); and no name reaches a file outside DIR: "..", encoded dots
# and slashes, absolute paths and a symbolic link out are a 400 or a 404,
# never the file.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
mkdir -p "$TMP/static" "$TMP/outside"
head -c $((9 << 20)) /dev/urandom >"$TMP/static/big.bin"
: >"$TMP/static/empty"
printf '<p>hello, files</p>\n' >"$TMP/static/page.html"
echo secret >"$TMP/outside/secret"
ln -s "$TMP/outside/secret" "$TMP/static/link"
for run in $(backend_modes inline driven deferred); do
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
    # Validators (the file answer's own tests: tests/integration/test_serve_file.cc).
    [[ $(fetch /files/page.html) == 200 ]] || fail "$run: GET /files/page.html"
    cmp -s "$TMP/static/page.html" "$TMP/body" || fail "$run: /files/page.html differs from the file"
    etag=$(sed -n 's/^[Ee][Tt][Aa][Gg]: *\(.*\)\r$/\1/p' "$TMP/head")
    lm=$(sed -n 's/^[Ll]ast-[Mm]odified: *\(.*\)\r$/\1/p' "$TMP/head")
    [[ $etag == \"*\" && -n $lm ]] || fail "$run: no ETag or Last-Modified: $(cat "$TMP/head")"
    grep -qi '^accept-ranges: bytes' "$TMP/head" || fail "$run: no Accept-Ranges"
    grep -qi '^content-type: text/html; charset=utf-8' "$TMP/head" || fail "$run: Content-Type not by extension"
    [[ $(fetch /files/page.html -H "If-None-Match: $etag") == 304 ]] || fail "$run: If-None-Match did not give 304"
    grep -qi '^content-type:' "$TMP/head" && fail "$run: 304 with a Content-Type"
    [[ $(fetch /files/page.html -H "If-Modified-Since: $lm") == 304 ]] || fail "$run: If-Modified-Since: no 304"
    [[ $(fetch /files/page.html -H 'If-None-Match: "other"') == 200 ]] || fail "$run: If-None-Match other: no 200"
    [[ $(fetch /files/page.html -H 'Range: bytes=3-7') == 206 && $(cat "$TMP/body") == hello ]] ||
        fail "$run: Range did not give 206 hello"
    grep -qi '^content-range: bytes 3-7/20' "$TMP/head" || fail "$run: 206 without its Content-Range"
    [[ $(fetch /files/big.bin -H 'Range: bytes=-1048576') == 206 ]] || fail "$run: suffix Range on big.bin"
    tail -c 1048576 "$TMP/static/big.bin" | cmp -s - "$TMP/body" || fail "$run: suffix Range bytes differ"
    [[ $(fetch /files/page.html -H 'Range: bytes=100-') == 416 ]] || fail "$run: Range past the end: no 416"
    grep -qi '^content-range: bytes \*/20' "$TMP/head" || fail "$run: 416 without bytes */20"
    [[ $(fetch /files/page.html -H 'If-Match: "other"') == 412 ]] || fail "$run: If-Match other: no 412"
    [[ $(fetch /files/page.html -X DELETE) == 405 ]] || fail "$run: DELETE: no 405"
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
