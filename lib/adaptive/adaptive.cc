// The adaptive pair's glue (adaptive.h): samples the active engine on the
// host's ticks and acts on the policy's answer.
#include "adaptive/adaptive.h"

#include <cerrno>
#include <ctime>
#include <new>

#include "loop/engine.h"
#include "util/sized.h"

namespace weir {

namespace {

uint64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

void read_metrics(Engine *e, weir_metrics *m) {
    *m = weir_metrics{};
    m->size = sizeof *m;
    e->metrics(m);
}

} // namespace

int Adaptive::create(Engine *active, Engine *standby, const weir_adaptive_config *cfg, Adaptive **out) {
    std::unique_ptr<Adaptive> a(new Adaptive(active, standby));
    weir_metrics m;
    read_metrics(standby, &m);
    a->standby_backend_ = m.backend;
    read_metrics(active, &m);
    a->active_backend_ = m.backend;
    a->role_uring_ = m.backend == WEIR_BACKEND_URING;
    if (cfg) {
        weir_adaptive_config k;
        adaptive::config_defaults(&k);
        if (!sized::copy_in(cfg, &k))
            return -EINVAL;
        // The active engine takes the role of its backend, the standby the
        // other, even as a second epoll engine.
        a->policy_ = std::make_unique<adaptive::Policy>(k, a->active_backend_ == WEIR_BACKEND_URING);
        const uint64_t t = now_ms();
        a->base_ = m;
        a->base_ms_ = t;
        a->next_ms_ = t + k.interval_ms;
    }
    *out = a.release();
    return 0;
}

// The next sample's deltas start here: after a switch they are the new
// active engine's.
void Adaptive::rebase(uint64_t t) {
    read_metrics(active_, &base_);
    base_ms_ = t;
}

int Adaptive::switch_now(bool by_controller) {
    int rc = active_->switch_to(standby_);
    if (rc < 0) {
        failures_++;
        return rc;
    }
    std::swap(active_, standby_);
    std::swap(active_backend_, standby_backend_);
    role_uring_ = !role_uring_;
    switches_++;
    if (policy_) {
        const uint64_t t = now_ms();
        policy_->switched(t, by_controller);
        rebase(t);
    }
    return 0;
}

int Adaptive::tick() {
    std::lock_guard<std::mutex> lk(mu_);
    const uint64_t t = now_ms();
    if (!policy_ || t < next_ms_)
        return 0;
    next_ms_ = t + policy_->config().interval_ms;
    weir_metrics m;
    read_metrics(active_, &m);
    const adaptive::Sample s = adaptive::sample_from(base_, m, t - base_ms_, t);
    base_ = m;
    base_ms_ = t;
    if (!policy_->decide(s))
        return 0;
    int rc = switch_now(true);
    return rc < 0 ? rc : 1;
}

int Adaptive::timeout_ms() {
    std::lock_guard<std::mutex> lk(mu_);
    if (!policy_)
        return -1;
    const uint64_t t = now_ms();
    return next_ms_ > t ? static_cast<int>(next_ms_ - t) : 0;
}

int Adaptive::force_switch() {
    std::lock_guard<std::mutex> lk(mu_);
    return switch_now(false);
}

void Adaptive::engines(Engine **active, Engine **standby) {
    std::lock_guard<std::mutex> lk(mu_);
    if (active)
        *active = active_;
    if (standby)
        *standby = standby_;
}

void Adaptive::state(weir_adaptive_state *out) {
    std::lock_guard<std::mutex> lk(mu_);
    weir_adaptive_state s{};
    s.size = sizeof s;
    s.active_backend = active_backend_;
    s.standby_backend = standby_backend_;
    s.switches = switches_;
    s.switch_failures = failures_;
    s.role = role_uring_ ? WEIR_BACKEND_URING : WEIR_BACKEND_EPOLL;
    if (const adaptive::Policy *p = policy_.get()) {
        s.controller = 1;
        s.last_reason = p->last();
        s.controller_switches = p->switches;
        s.forced_switches = p->external_switches;
        s.decisions = p->decisions;
        s.streak = p->streak;
        s.held_by_cooldown = p->held_by_cooldown;
        s.held_by_errors = p->held_by_errors;
        s.held_by_lockout = p->held_by_lockout;
        s.lockouts = p->lockouts;
        s.last_conns_per_worker = p->last_sample().conns_per_worker;
        s.last_rps = p->last_sample().rps;
        s.last_error_permille = p->last_sample().error_permille;
    } else {
        s.forced_switches = switches_;
    }
    sized::copy_out(s, out);
}

} // namespace weir
