/* weir-demo --adaptive (docs/transplant.md): a standby engine on the other
 * backend (io_uring where the kernel runs it, else a second epoll engine)
 * listens on the same port, paused; SIGWINCH switches the active engine and
 * the standby (weir_engine_switch: resume, transplant, pause) and swaps their
 * roles. With --adaptive-controller (docs/controller.md) the main loop also
 * samples the active engine every interval and demo_controller.h decides
 * when to switch. Included once by weir-demo.c. */
#ifndef WEIR_DEMO_ADAPTIVE_H
#define WEIR_DEMO_ADAPTIVE_H

#include <stdio.h>
#include <time.h>

#include "weir.h"

#include "demo_controller.h"

/* The pair, apart from the active engine itself (the demo's `e`, which every
 * other part of the demo uses). */
typedef struct adaptive {
    weir_engine *standby;
    uint32_t active_backend, standby_backend;
    unsigned switches;
    /* --adaptive-controller */
    int controller;
    uint32_t interval_ms;
    ctl policy;
    weir_metrics base; /* the active engine's, at the last sample or switch */
    uint64_t base_ms, next_ms;
} adaptive;

static const char *demo_backend_name(uint32_t b) { return b == WEIR_BACKEND_URING ? "uring" : "epoll"; }

/* Creates, listens, starts and pauses the standby on the active engine's
 * port. Returns 0 or an error code. */
static int adaptive_start(adaptive *a, weir_engine *active, const weir_config *cfg) {
    weir_config c = *cfg;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    a->active_backend = cfg->backend;
    int rc = weir_engine_addr(active, &ss, &len);
    if (rc < 0)
        return rc;
    c.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    c.backend = cfg->backend == WEIR_BACKEND_URING ? WEIR_BACKEND_EPOLL : WEIR_BACKEND_URING;
    rc = weir_engine_create(&c, &a->standby);
    if (rc < 0 && c.backend == WEIR_BACKEND_URING) {
        fprintf(stderr, "weir-demo: --adaptive: io_uring: %s; the standby runs on epoll\n", weir_strerror(rc));
        c.backend = WEIR_BACKEND_EPOLL;
        rc = weir_engine_create(&c, &a->standby);
    }
    if (rc < 0)
        return rc;
    a->standby_backend = c.backend;
    if ((rc = weir_engine_listen(a->standby)) < 0 || (rc = weir_engine_start(a->standby)) < 0)
        return rc;
    rc = weir_engine_pause(a->standby);
    return rc == -ECANCELED ? 0 : rc;
}

static uint64_t adaptive_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The next sample's deltas start here: after a switch they are the new
 * active engine's. */
static void adaptive_rebase(adaptive *a, weir_engine *active) {
    memset(&a->base, 0, sizeof a->base);
    a->base.size = sizeof a->base;
    weir_engine_metrics(active, &a->base);
    a->base_ms = adaptive_now_ms();
}

/* The controller begins with the active engine in the role of its backend
 * (the standby takes the other role, even as a second epoll engine). */
static void adaptive_controller_start(adaptive *a, weir_engine *active, const ctl_config *cfg, uint32_t interval_ms) {
    a->controller = 1;
    a->interval_ms = interval_ms;
    ctl_init(&a->policy, cfg, a->active_backend == WEIR_BACKEND_URING);
    adaptive_rebase(a, active);
    a->next_ms = a->base_ms + interval_ms;
}

/* SIGWINCH (by_controller 0) or the controller: the standby takes over; the
 * roles swap. */
static void adaptive_switch(adaptive *a, weir_engine **active, int by_controller) {
    int rc = weir_engine_switch(*active, a->standby);
    if (rc < 0) {
        printf("switch failed: %s\n", weir_strerror(rc));
        fflush(stdout);
        return;
    }
    weir_engine *e = *active;
    *active = a->standby;
    a->standby = e;
    uint32_t b = a->active_backend;
    a->active_backend = a->standby_backend;
    a->standby_backend = b;
    a->switches++;
    if (a->controller) {
        ctl_switched(&a->policy, adaptive_now_ms(), by_controller);
        adaptive_rebase(a, *active);
    }
    printf("switched to %s\n", demo_backend_name(a->active_backend));
    fflush(stdout);
}

/* The main loop's poll timeout: until the next sample, or -1 (none). */
static int adaptive_timeout(const adaptive *a) {
    if (!a->controller)
        return -1;
    uint64_t now = adaptive_now_ms();
    return a->next_ms > now ? (int)(a->next_ms - now) : 0;
}

/* After every wakeup of the main loop: a sample when one is due (signals
 * do not delay it), and the switch the controller asks for. */
static void adaptive_tick(adaptive *a, weir_engine **active) {
    uint64_t now = adaptive_now_ms();
    if (!a->controller || now < a->next_ms)
        return;
    a->next_ms = now + a->interval_ms;
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    if (weir_engine_metrics(*active, &m) < 0)
        return;
    ctl_sample s = ctl_sample_from(&a->base, &m, now - a->base_ms, now);
    a->base = m;
    a->base_ms = now;
    if (ctl_decide(&a->policy, &s) != CTL_SWITCH)
        return;
    printf("controller: %s (%llu connections per worker, %llu requests/s, %llu errors per 1000)\n",
           ctl_reason_name(a->policy.last), (unsigned long long)s.conns_per_worker, (unsigned long long)s.rps,
           (unsigned long long)s.error_permille);
    adaptive_switch(a, active, 1);
}

/* SIGHUP's adaptive lines: the switch count, the standby's ledger (the
 * active engine's is in the metrics block itself), the controller's state. */
static void adaptive_print(const adaptive *a) {
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    if (weir_engine_metrics(a->standby, &m) < 0)
        return;
    printf("adaptive.active %s\n", demo_backend_name(a->active_backend));
    printf("adaptive.switches %u\n", a->switches);
    printf("standby.connections_open %llu\n", (unsigned long long)m.connections_open);
    printf("standby.transplant_detached %llu\n", (unsigned long long)m.transplant_detached);
    printf("standby.transplant_adopted %llu\n", (unsigned long long)m.transplant_adopted);
    printf("standby.transplant_refused %llu\n", (unsigned long long)m.transplant_refused);
    printf("standby.transplant_in_flight %llu\n", (unsigned long long)m.transplant_in_flight);
    printf("controller.enabled %d\n", a->controller);
    if (!a->controller)
        return;
    const ctl *c = &a->policy;
    printf("controller.interval_ms %u\n", a->interval_ms);
#define CTL_PRINT(name, def) printf("controller.config.%s %llu\n", #name, (unsigned long long)c->cfg.name);
    CTL_TUNABLES(CTL_PRINT)
#undef CTL_PRINT
    printf("controller.role %s\n", c->on_uring ? "uring" : "epoll");
    printf("controller.last_reason %s\n", ctl_reason_name(c->last));
    printf("controller.last_conns_per_worker %llu\n", (unsigned long long)c->last_sample.conns_per_worker);
    printf("controller.last_rps %llu\n", (unsigned long long)c->last_sample.rps);
    printf("controller.last_error_permille %llu\n", (unsigned long long)c->last_sample.error_permille);
#define F(x) printf("controller.%s %llu\n", #x, (unsigned long long)c->x)
    F(streak);
    F(decisions);
    F(switches);
    F(external_switches);
    F(held_by_cooldown);
    F(held_by_errors);
    F(held_by_lockout);
    F(lockouts);
#undef F
}

#endif /* WEIR_DEMO_ADAPTIVE_H */
