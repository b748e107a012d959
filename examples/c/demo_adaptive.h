/* weir-demo --adaptive (docs/transplant.md): a standby engine on the other
 * backend (io_uring where the kernel runs it, else a second epoll engine)
 * listens on the same port, paused; the library's adaptive pair
 * (weir_adaptive_*, docs/adaptive.md) switches them — SIGWINCH forces a
 * switch, and with --adaptive-controller the main loop ticks the pair's
 * controller every interval. This file only creates the standby, ticks and
 * prints: the policy is weir's. Included once by weir-demo.c. */
#ifndef WEIR_DEMO_ADAPTIVE_H
#define WEIR_DEMO_ADAPTIVE_H

#include <stdio.h>

#include "weir.h"

#include "demo_args.h"

/* The pair, apart from the active engine itself (the demo's `e`, which every
 * other part of the demo uses and which follows the pair's switches). */
typedef struct adaptive {
    weir_engine *standby;
    weir_adaptive *pair;
    weir_adaptive_config cfg; /* in force, for SIGHUP's controller.config.* lines */
} adaptive;

static const char *demo_backend_name(uint32_t b) { return weir_backend_name(b) ? weir_backend_name(b) : "?"; }

/* Creates, listens, starts and pauses the standby on the active engine's
 * port, then the pair over both; ctl NULL: no controller. Returns 0 or an
 * error code. */
static int adaptive_start(adaptive *a, weir_engine *active, const weir_config *cfg, const weir_adaptive_config *ctl) {
    weir_config c = *cfg;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
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
    if ((rc = weir_engine_listen(a->standby)) < 0 || (rc = weir_engine_start(a->standby)) < 0)
        return rc;
    rc = weir_engine_pause(a->standby);
    if (rc < 0 && rc != -ECANCELED)
        return rc;
    if (ctl)
        a->cfg = *ctl;
    return weir_adaptive_create(active, a->standby, ctl, &a->pair);
}

/* After a switch: the demo's `e` and the standby follow the pair. */
static void adaptive_follow(adaptive *a, weir_engine **active) {
    weir_adaptive_engines(a->pair, active, &a->standby);
    weir_adaptive_state st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    weir_adaptive_state_get(a->pair, &st);
    printf("switched to %s\n", demo_backend_name(st.active_backend));
    fflush(stdout);
}

/* SIGWINCH: the standby takes over, whatever the controller says. */
static void adaptive_switch(adaptive *a, weir_engine **active) {
    int rc = weir_adaptive_switch(a->pair);
    if (rc < 0) {
        printf("switch failed: %s\n", weir_strerror(rc));
        fflush(stdout);
        return;
    }
    adaptive_follow(a, active);
}

/* The main loop's poll timeout: until the next sample, or -1 (none). */
static int adaptive_timeout(const adaptive *a) { return a->pair ? weir_adaptive_timeout_ms(a->pair) : -1; }

/* After every wakeup of the main loop: the pair samples when a sample is due
 * (signals do not delay it) and makes the switch its controller asks for. */
static void adaptive_tick(adaptive *a, weir_engine **active) {
    if (!a->pair)
        return;
    int rc = weir_adaptive_tick(a->pair);
    if (rc == 0)
        return;
    weir_adaptive_state st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    weir_adaptive_state_get(a->pair, &st);
    printf("controller: %s (%llu connections per worker, %llu requests/s, %llu errors per 1000)\n",
           weir_adaptive_reason_name(st.last_reason), (unsigned long long)st.last_conns_per_worker,
           (unsigned long long)st.last_rps, (unsigned long long)st.last_error_permille);
    if (rc < 0) {
        printf("switch failed: %s\n", weir_strerror(rc));
        fflush(stdout);
        return;
    }
    adaptive_follow(a, active);
}

/* SIGHUP's adaptive lines: the switch count, the standby's ledger (the
 * active engine's is in the metrics block itself), the controller's state. */
static void adaptive_print(const adaptive *a) {
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    weir_adaptive_state st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (weir_engine_metrics(a->standby, &m) < 0 || weir_adaptive_state_get(a->pair, &st) < 0)
        return;
    printf("adaptive.active %s\n", demo_backend_name(st.active_backend));
    printf("adaptive.switches %llu\n", (unsigned long long)st.switches);
    printf("adaptive.switch_failures %llu\n", (unsigned long long)st.switch_failures);
    printf("standby.connections_open %llu\n", (unsigned long long)m.connections_open);
    printf("standby.transplant_detached %llu\n", (unsigned long long)m.transplant_detached);
    printf("standby.transplant_adopted %llu\n", (unsigned long long)m.transplant_adopted);
    printf("standby.transplant_refused %llu\n", (unsigned long long)m.transplant_refused);
    printf("standby.transplant_in_flight %llu\n", (unsigned long long)m.transplant_in_flight);
    printf("controller.enabled %u\n", st.controller);
    if (!st.controller)
        return;
    printf("controller.interval_ms %u\n", a->cfg.interval_ms);
#define CTL_PRINT(name) printf("controller.config.%s %llu\n", #name, (unsigned long long)a->cfg.name);
    DEMO_CTL_TUNABLES(CTL_PRINT)
#undef CTL_PRINT
    printf("controller.role %s\n", demo_backend_name(st.role));
    printf("controller.last_reason %s\n", weir_adaptive_reason_name(st.last_reason));
    printf("controller.last_conns_per_worker %llu\n", (unsigned long long)st.last_conns_per_worker);
    printf("controller.last_rps %llu\n", (unsigned long long)st.last_rps);
    printf("controller.last_error_permille %llu\n", (unsigned long long)st.last_error_permille);
#define F(line, x) printf("controller.%s %llu\n", line, (unsigned long long)st.x)
    F("streak", streak);
    F("decisions", decisions);
    F("switches", controller_switches);
    F("external_switches", forced_switches);
    F("held_by_cooldown", held_by_cooldown);
    F("held_by_errors", held_by_errors);
    F("held_by_lockout", held_by_lockout);
    F("lockouts", lockouts);
#undef F
}

#endif /* WEIR_DEMO_ADAPTIVE_H */
