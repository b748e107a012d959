/* hello — the smallest complete weir server: hello [--addr 127.0.0.1:8080] */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "weir.h"

static void on_request(void *user, weir_exchange *ex) {
    static const weir_header_t type[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
    const weir_request *r = weir_exchange_request(ex);
    (void)user;
    if (r->method.len == 3 && !memcmp(r->method.ptr, "GET", 3) && r->path.len == 1 && r->path.ptr[0] == '/')
        weir_respond(ex, 200, type, 1, "Hello, World!", 13, 0);
    else
        weir_respond(ex, 404, type, 1, "Not Found\n", 10, 0);
}

int main(int argc, char **argv) {
    static char host[64] = "127.0.0.1";
    /* Before 1.0 a minor release may change the ABI: major and minor must match. */
    if ((weir_version() >> 8) != (WEIR_VERSION_HEX >> 8))
        return fprintf(stderr, "weir %s, built for %d.%d\n", weir_version_string(), WEIR_VERSION_MAJOR,
                       WEIR_VERSION_MINOR), 1;
    weir_config cfg;
    weir_config_init(&cfg);
    cfg.host = host, cfg.port = 8080, cfg.workers = 1, cfg.on_request = on_request;
    if (argc == 3 && !strcmp(argv[1], "--addr") && strchr(argv[2], ':') && strlen(argv[2]) < sizeof host) {
        cfg.port = (uint32_t)atoi(strrchr(argv[2], ':') + 1);
        *strrchr(strcpy(host, argv[2]), ':') = 0;
    } else if (argc != 1) {
        return fprintf(stderr, "usage: hello [--addr HOST:PORT]\n"), 2;
    }
    sigset_t set; /* blocked before the workers exist, so only sigwait takes them */
    sigemptyset(&set), sigaddset(&set, SIGTERM), sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    weir_engine *e = NULL;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int rc = weir_engine_create(&cfg, &e), sig;
    if (rc == 0) rc = weir_engine_listen(e);
    if (rc == 0) rc = weir_engine_start(e);
    if (rc == 0) rc = weir_engine_addr(e, &ss, &len);
    if (rc < 0)
        return fprintf(stderr, "hello: %s\n", weir_strerror(rc)), weir_engine_destroy(e), 1;
    printf("listening on %s:%u\n", host, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    fflush(stdout);
    sigwait(&set, &sig);
    weir_engine_shutdown(e, 2000000000LL);
    weir_engine_destroy(e);
    return 0;
}
