# The backends a test script runs on, from the library's own table
# (tests/support/backend_probe --list, weir_backend_name): no script keeps a
# list. Sourced (run-tests runs only *.sh). WEIR_TEST_BACKENDS (names, space-
# or comma-separated) narrows them; a name no backend has is an error, never
# a silent epoll. Sets BACKENDS or exits 2.
weir_backends() {
    local all be want
    all=$("${B:-build}/tests/support/backend_probe" --list) && [[ -n $all ]] || {
        echo "weir_backends: ${B:-build}/tests/support/backend_probe --list failed (make tests builds it)" >&2
        return 2
    }
    want=${WEIR_TEST_BACKENDS:-$all}
    for be in ${want//,/ }; do
        grep -qxF -- "$be" <<<"$all" || {
            echo "weir_backends: WEIR_TEST_BACKENDS names '$be'; this libweir's backends:" $all >&2
            return 2
        }
    done
    echo ${want//,/ }
}
BACKENDS=$(weir_backends) || exit 2
# Each backend with each handler mode, as backend:mode (the demo scripts' runs).
backend_modes() { # modes...
    local b m
    for b in $BACKENDS; do for m in "$@"; do echo "$b:$m"; done; done
}
