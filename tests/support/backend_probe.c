/* Whether a backend exists here, for scripts/run-tests: exit 0 when
 * weir_engine_create accepts it, 77 (printing why) when it answers
 * WEIR_E_UNAVAILABLE, 1 on anything else.
 *
 *   backend_probe epoll|uring
 */
#include <stdio.h>
#include <string.h>
#include <weir.h>

int main(int argc, char **argv) {
    weir_config cfg;
    weir_engine *e = NULL;
    int rc;
    if (argc != 2 || (strcmp(argv[1], "epoll") != 0 && strcmp(argv[1], "uring") != 0)) {
        fprintf(stderr, "usage: backend_probe epoll|uring\n");
        return 2;
    }
    weir_config_init(&cfg);
    cfg.backend = strcmp(argv[1], "uring") == 0 ? WEIR_BACKEND_URING : WEIR_BACKEND_EPOLL;
    cfg.workers = 1;
    cfg.mode = WEIR_MODE_DRIVEN;
    rc = weir_engine_create(&cfg, &e);
    weir_engine_destroy(e);
    if (rc == 0)
        return 0;
    printf("%s (%s)\n", weir_strerror(rc), weir_err_name(rc));
    return rc == WEIR_E_UNAVAILABLE ? 77 : 1;
}
