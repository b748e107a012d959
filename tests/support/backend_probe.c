/* The backends, for scripts/run-tests and the tests/scripts shell tests, from the
 * library's own table (weir_backend_name), so no runner keeps a list:
 *
 *   backend_probe --list   every backend name of this libweir, one a line
 *   backend_probe NAME     exit 0 when weir_engine_create accepts it, 77
 *                          (printing why) when it answers WEIR_E_UNAVAILABLE,
 *                          2 for a name no backend has, 1 on anything else.
 */
#include <stdio.h>
#include <string.h>
#include <weir.h>

int main(int argc, char **argv) {
    weir_config cfg;
    weir_engine *e = NULL;
    int rc, id;
    if (argc != 2) {
        fprintf(stderr, "usage: backend_probe --list | NAME\n");
        return 2;
    }
    if (strcmp(argv[1], "--list") == 0) {
        for (uint32_t i = 1; weir_backend_name(i); i++)
            printf("%s\n", weir_backend_name(i));
        return 0;
    }
    id = weir_backend_by_name(argv[1]);
    if (id < 0) {
        fprintf(stderr, "backend_probe: '%s' names no backend (backend_probe --list)\n", argv[1]);
        return 2;
    }
    weir_config_init(&cfg);
    cfg.backend = (uint32_t)id;
    cfg.workers = 1;
    cfg.mode = WEIR_MODE_DRIVEN;
    rc = weir_engine_create(&cfg, &e);
    weir_engine_destroy(e);
    if (rc == 0)
        return 0;
    printf("%s (%s)\n", weir_strerror(rc), weir_err_name(rc));
    return rc == WEIR_E_UNAVAILABLE ? 77 : 1;
}
