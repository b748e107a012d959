/* weir-demo --adaptive (docs/transplant.md): a standby engine on the other
 * backend (io_uring where the kernel runs it, else a second epoll engine)
 * listens on the same port, paused; SIGWINCH switches the active engine and
 * the standby (weir_engine_switch: resume, transplant, pause) and swaps their
 * roles. Included once by weir-demo.c. */
#ifndef WEIR_DEMO_ADAPTIVE_H
#define WEIR_DEMO_ADAPTIVE_H

#include <stdio.h>

#include "weir.h"

static const char *demo_backend_name(uint32_t b) { return b == WEIR_BACKEND_URING ? "uring" : "epoll"; }

/* Creates, listens, starts and pauses the standby on the active engine's
 * port. Returns 0 or an error code. */
static int adaptive_start(weir_engine *active, const weir_config *cfg, weir_engine **standby, uint32_t *backend) {
    weir_config c = *cfg;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int rc = weir_engine_addr(active, &ss, &len);
    if (rc < 0)
        return rc;
    c.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    c.backend = cfg->backend == WEIR_BACKEND_URING ? WEIR_BACKEND_EPOLL : WEIR_BACKEND_URING;
    rc = weir_engine_create(&c, standby);
    if (rc < 0 && c.backend == WEIR_BACKEND_URING) {
        fprintf(stderr, "weir-demo: --adaptive: io_uring: %s; the standby runs on epoll\n", weir_strerror(rc));
        c.backend = WEIR_BACKEND_EPOLL;
        rc = weir_engine_create(&c, standby);
    }
    if (rc < 0)
        return rc;
    *backend = c.backend;
    if ((rc = weir_engine_listen(*standby)) < 0 || (rc = weir_engine_start(*standby)) < 0)
        return rc;
    rc = weir_engine_pause(*standby);
    return rc == -ECANCELED ? 0 : rc;
}

/* SIGWINCH: the standby takes over; the roles swap. */
static void adaptive_switch(weir_engine **active, weir_engine **standby, uint32_t *active_backend,
                            uint32_t *standby_backend, unsigned *switches) {
    int rc = weir_engine_switch(*active, *standby);
    if (rc < 0) {
        printf("switch failed: %s\n", weir_strerror(rc));
        fflush(stdout);
        return;
    }
    weir_engine *e = *active;
    *active = *standby;
    *standby = e;
    uint32_t b = *active_backend;
    *active_backend = *standby_backend;
    *standby_backend = b;
    (*switches)++;
    printf("switched to %s\n", demo_backend_name(*active_backend));
    fflush(stdout);
}

/* SIGHUP's adaptive lines: the switch count and the standby's ledger (the
 * active engine's is in the metrics block itself). */
static void adaptive_print(weir_engine *standby, uint32_t active_backend, unsigned switches) {
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    if (weir_engine_metrics(standby, &m) < 0)
        return;
    printf("adaptive.active %s\n", demo_backend_name(active_backend));
    printf("adaptive.switches %u\n", switches);
    printf("standby.connections_open %llu\n", (unsigned long long)m.connections_open);
    printf("standby.transplant_detached %llu\n", (unsigned long long)m.transplant_detached);
    printf("standby.transplant_adopted %llu\n", (unsigned long long)m.transplant_adopted);
    printf("standby.transplant_refused %llu\n", (unsigned long long)m.transplant_refused);
    printf("standby.transplant_in_flight %llu\n", (unsigned long long)m.transplant_in_flight);
}

#endif /* WEIR_DEMO_ADAPTIVE_H */
