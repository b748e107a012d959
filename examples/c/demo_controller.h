/*
 * demo_controller.h — weir-demo --adaptive-controller (docs/controller.md):
 * decides, once per sample of the active engine, whether the adaptive pair
 * should switch. Pure: no I/O, no clock, no engine call. demo_adaptive.h
 * takes the samples and acts, so tests/unit/demo/test_demo_controller.cc can
 * drive the policy with synthetic samples and exact times. Header-only, C
 * that also compiles as C++ (the unit test is C++).
 *
 * The controller tracks which role the active engine holds, not its backend:
 * where io_uring is unavailable the standby is a second epoll engine, holds
 * the io_uring role in name, and the switches still happen.
 */
#ifndef WEIR_DEMO_CONTROLLER_H
#define WEIR_DEMO_CONTROLLER_H

#include <stdint.h>
#include <string.h>

#include "weir.h"

/* The tunables and their defaults, in one list for the config struct, the
 * --controller parser and SIGHUP's controller.config.* lines. Why these
 * values: docs/controller.md. */
#define CTL_TUNABLES(X)                                                                                                \
    X(up_conns, 256)             /* to io_uring at >= this many connections per worker ...  */                       \
    X(up_rps, 20000)             /* ... or at >= this many requests per second              */                       \
    X(down_conns, 64)            /* to epoll when below this per worker ...                 */                       \
    X(down_rps, 5000)            /* ... and below this rate: both                           */                       \
    X(max_error_permille, 50)    /* no switch while errors per 1000 requests are above this */                       \
    X(hold, 3)                   /* consecutive samples the condition must hold             */                       \
    X(cooldown_ms, 10000)        /* no switch this long after any switch                    */                       \
    X(flap_count, 3)             /* this many switches ... (0: no lock-out)                 */                       \
    X(flap_window_ms, 60000)     /* ... within this window ...                              */                       \
    X(lockout_ms, 300000)        /* ... lock switching out this long                        */

#define CTL_FLAP_MAX 16 /* flap_count's ceiling: the switch times kept */

typedef struct ctl_config {
#define CTL_FIELD(name, def) uint64_t name;
    CTL_TUNABLES(CTL_FIELD)
#undef CTL_FIELD
} ctl_config;

/* Why the last sample decided what it did. */
#define CTL_REASONS(X)                                                                                                 \
    X(CTL_NONE, "none")         /* no sample yet                                          */                          \
    X(CTL_STEADY, "steady")     /* the load fits the active engine's role                 */                          \
    X(CTL_HOLD, "hold")         /* the load asks for a switch, for fewer than hold samples */                         \
    X(CTL_LOCKOUT, "lockout")   /* it would switch, but flapping locked switching out     */                          \
    X(CTL_COOLDOWN, "cooldown") /* it would switch, but a switch was too recent           */                          \
    X(CTL_ERRORS, "errors")     /* it would switch, but the error rate is too high        */                          \
    X(CTL_UP, "up")             /* switch: to the io_uring role                           */                          \
    X(CTL_DOWN, "down")         /* switch: to the epoll role                              */

enum ctl_reason {
#define CTL_ENUM(id, name) id,
    CTL_REASONS(CTL_ENUM)
#undef CTL_ENUM
};

static const char *ctl_reason_name(enum ctl_reason r) {
    static const char *const names[] = {
#define CTL_NAME(id, name) name,
        CTL_REASONS(CTL_NAME)
#undef CTL_NAME
    };
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

/* One interval of the active engine, from two weir_metrics of that engine. */
typedef struct ctl_sample {
    uint64_t now_ms;           /* a monotonic clock, at the later metrics */
    uint64_t conns_per_worker; /* connections_open / workers, now */
    uint64_t rps;              /* requests per second over the interval */
    uint64_t error_permille;   /* errors per 1000 requests over the interval, at most 1000 */
} ctl_sample;

typedef struct ctl {
    ctl_config cfg;
    int on_uring; /* the active engine holds the io_uring role */
    uint64_t streak;
    uint64_t cooldown_until, lockout_until; /* ms; nothing switches before these */
    uint64_t flaps[CTL_FLAP_MAX];           /* the last switches' times, oldest first */
    uint32_t nflaps;
    enum ctl_reason last;
    ctl_sample last_sample;
    /* counters */
    uint64_t decisions, switches, external_switches;
    uint64_t held_by_cooldown, held_by_errors, held_by_lockout, lockouts;
} ctl;

static void ctl_config_defaults(ctl_config *c) {
#define CTL_DEF(name, def) c->name = (def);
    CTL_TUNABLES(CTL_DEF)
#undef CTL_DEF
}

/* NULL when c is usable, else what is wrong with it. */
static const char *ctl_config_check(const ctl_config *c) {
    if (c->down_conns >= c->up_conns || c->down_rps >= c->up_rps)
        return "the down thresholds must be below the up ones (down_conns < up_conns, down_rps < up_rps)";
    if (c->hold < 1)
        return "hold must be at least 1";
    if (c->flap_count > CTL_FLAP_MAX)
        return "flap_count is at most 16";
    if (c->max_error_permille > 1000)
        return "max_error_permille is at most 1000";
    return NULL;
}

static void ctl_init(ctl *c, const ctl_config *cfg, int on_uring) {
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->on_uring = on_uring;
    c->last = CTL_NONE;
}

static uint64_t ctl_delta(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

/* The sample of one interval: prev and cur are the same engine's metrics,
 * elapsed_ms apart, cur taken at now_ms. Errors are the parse errors plus the
 * closes for IO_ERROR, RESOURCE, OUTPUT_LIMIT and WRITE_TIMEOUT; BAD_REQUEST
 * closes are not added, each is the close after a parse error already
 * counted. They are over the requests parsed plus the parse errors (weir's
 * `requests` counts complete requests only), so a flood of garbage is 1000. */
static ctl_sample ctl_sample_from(const weir_metrics *prev, const weir_metrics *cur, uint64_t elapsed_ms,
                                  uint64_t now_ms) {
    static const uint32_t error_closes[] = {WEIR_CLOSE_IO_ERROR, WEIR_CLOSE_RESOURCE, WEIR_CLOSE_OUTPUT_LIMIT,
                                            WEIR_CLOSE_WRITE_TIMEOUT};
    ctl_sample s;
    memset(&s, 0, sizeof s);
    s.now_ms = now_ms;
    s.conns_per_worker = cur->workers ? cur->connections_open / cur->workers : cur->connections_open;
    uint64_t req = ctl_delta(cur->requests, prev->requests);
    uint64_t bad = ctl_delta(cur->parse_errors, prev->parse_errors);
    s.rps = elapsed_ms ? req * 1000 / elapsed_ms : 0;
    uint64_t errors = bad;
    for (size_t i = 0; i < sizeof error_closes / sizeof error_closes[0]; i++)
        errors += ctl_delta(cur->closes[error_closes[i]], prev->closes[error_closes[i]]);
    s.error_permille = req + bad ? errors * 1000 / (req + bad) : errors ? 1000 : 0;
    if (s.error_permille > 1000)
        s.error_permille = 1000;
    return s;
}

enum ctl_decision { CTL_STAY, CTL_SWITCH };

/* One sample: whether to switch, with the reason in c->last. The load
 * condition counts toward hold even while a gate (lock-out, cooldown,
 * errors) holds the switch back, so a switch the load has long asked for
 * happens at the first sample the gates allow. A switch takes effect only
 * when the caller reports it (ctl_switched): a failed one is asked for again. */
static enum ctl_decision ctl_decide(ctl *c, const ctl_sample *s) {
    const ctl_config *k = &c->cfg;
    c->decisions++;
    c->last_sample = *s;
    int want = c->on_uring ? s->conns_per_worker < k->down_conns && s->rps < k->down_rps
                           : s->conns_per_worker >= k->up_conns || s->rps >= k->up_rps;
    if (!want) {
        c->streak = 0;
        c->last = CTL_STEADY;
        return CTL_STAY;
    }
    if (++c->streak < k->hold) {
        c->last = CTL_HOLD;
        return CTL_STAY;
    }
    if (s->now_ms < c->lockout_until) {
        c->held_by_lockout++;
        c->last = CTL_LOCKOUT;
    } else if (s->now_ms < c->cooldown_until) {
        c->held_by_cooldown++;
        c->last = CTL_COOLDOWN;
    } else if (s->error_permille > k->max_error_permille) {
        c->held_by_errors++;
        c->last = CTL_ERRORS;
    } else {
        c->last = c->on_uring ? CTL_DOWN : CTL_UP;
        return CTL_SWITCH;
    }
    return CTL_STAY;
}

/* A switch happened at now_ms: the controller's own (by_controller) or the
 * operator's SIGWINCH. Either way the roles swap, the streak restarts, the
 * cooldown begins and the switch counts toward a flap. A lock-out forgets the
 * switches that caused it, so its end starts a fresh window. */
static void ctl_switched(ctl *c, uint64_t now_ms, int by_controller) {
    const ctl_config *k = &c->cfg;
    if (by_controller)
        c->switches++;
    else
        c->external_switches++;
    c->on_uring = !c->on_uring;
    c->streak = 0;
    c->cooldown_until = now_ms + k->cooldown_ms;
    if (k->flap_count == 0)
        return;
    if (c->nflaps == k->flap_count) {
        memmove(c->flaps, c->flaps + 1, (c->nflaps - 1) * sizeof c->flaps[0]);
        c->nflaps--;
    }
    c->flaps[c->nflaps++] = now_ms;
    if (c->nflaps == k->flap_count && now_ms - c->flaps[0] < k->flap_window_ms) {
        c->lockout_until = now_ms + k->lockout_ms;
        c->lockouts++;
        c->nflaps = 0;
    }
}

#endif /* WEIR_DEMO_CONTROLLER_H */
