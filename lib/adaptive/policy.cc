// The policy of lib/adaptive/policy.h; why each rule is what it is:
// docs/adaptive.md.
#include "adaptive/policy.h"

#include <cstring>

#include "util/sized.h"

namespace weir::adaptive {

void config_defaults(weir_adaptive_config *c) {
    std::memset(c, 0, sizeof *c);
    c->size = sizeof *c;
    c->interval_ms = 1000;
    c->up_conns = 64;
    c->up_rps = 20000;
    c->down_conns = 16;
    c->down_rps = 5000;
    c->max_error_permille = 50;
    c->hold = 3;
    c->cooldown_ms = 10000;
    c->flap_count = 3;
    c->flap_window_ms = 60000;
    c->lockout_ms = 300000;
}

const char *config_error(const weir_adaptive_config *c) {
    if (!sized::size_ok<weir_adaptive_config>(c->size))
        return "size is not sizeof(weir_adaptive_config) of a known layout";
    if (c->interval_ms < 10 || c->interval_ms > 60000)
        return "interval_ms is 10 to 60000";
    if (c->down_conns >= c->up_conns || c->down_rps >= c->up_rps)
        return "the down thresholds must be below the up ones (down_conns < up_conns, down_rps < up_rps)";
    if (c->hold < 1)
        return "hold must be at least 1";
    if (c->flap_count > kFlapMax)
        return "flap_count is at most 16";
    if (c->max_error_permille > 1000)
        return "max_error_permille is at most 1000";
    return nullptr;
}

namespace {

uint64_t delta(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

} // namespace

// BAD_REQUEST closes are not errors here: each is the close after a parse
// error already counted. Parse errors are in the denominator because
// `requests` counts complete requests only, so a flood of garbage is 1000.
Sample sample_from(const weir_metrics &prev, const weir_metrics &cur, uint64_t elapsed_ms, uint64_t now_ms) {
    static const uint32_t error_closes[] = {WEIR_CLOSE_IO_ERROR, WEIR_CLOSE_RESOURCE, WEIR_CLOSE_OUTPUT_LIMIT,
                                            WEIR_CLOSE_WRITE_TIMEOUT};
    Sample s;
    s.now_ms = now_ms;
    s.conns_per_worker = cur.workers ? cur.connections_open / cur.workers : cur.connections_open;
    const uint64_t req = delta(cur.requests, prev.requests);
    const uint64_t bad = delta(cur.parse_errors, prev.parse_errors);
    s.rps = elapsed_ms ? req * 1000 / elapsed_ms : 0;
    uint64_t errors = bad;
    for (uint32_t r : error_closes)
        errors += delta(cur.closes[r], prev.closes[r]);
    s.error_permille = req + bad ? errors * 1000 / (req + bad) : errors ? 1000 : 0;
    if (s.error_permille > 1000)
        s.error_permille = 1000;
    return s;
}

Policy::Policy(const weir_adaptive_config &cfg, bool on_uring) : cfg_(cfg), on_uring_(on_uring) {}

// The load condition counts toward hold even while a gate (lock-out,
// cooldown, errors) holds the switch back, so a switch the load has long
// asked for happens at the first sample the gates allow.
bool Policy::decide(const Sample &s) {
    const weir_adaptive_config &k = cfg_;
    decisions++;
    last_sample_ = s;
    const bool want = on_uring_ ? s.conns_per_worker < k.down_conns && s.rps < k.down_rps
                                : s.conns_per_worker >= k.up_conns || s.rps >= k.up_rps;
    if (!want) {
        streak = 0;
        last_ = WEIR_ADAPTIVE_STEADY;
        return false;
    }
    if (++streak < k.hold) {
        last_ = WEIR_ADAPTIVE_HOLD;
        return false;
    }
    if (s.now_ms < lockout_until_) {
        held_by_lockout++;
        last_ = WEIR_ADAPTIVE_LOCKOUT;
    } else if (s.now_ms < cooldown_until_) {
        held_by_cooldown++;
        last_ = WEIR_ADAPTIVE_COOLDOWN;
    } else if (s.error_permille > k.max_error_permille) {
        held_by_errors++;
        last_ = WEIR_ADAPTIVE_ERRORS;
    } else {
        last_ = on_uring_ ? WEIR_ADAPTIVE_DOWN : WEIR_ADAPTIVE_UP;
        return true;
    }
    return false;
}

// A lock-out forgets the switches that caused it, so its end starts a fresh
// window.
void Policy::switched(uint64_t now_ms, bool by_controller) {
    const weir_adaptive_config &k = cfg_;
    if (by_controller)
        switches++;
    else
        external_switches++;
    on_uring_ = !on_uring_;
    streak = 0;
    cooldown_until_ = now_ms + k.cooldown_ms;
    if (k.flap_count == 0)
        return;
    if (nflaps_ == k.flap_count) {
        std::memmove(flaps_, flaps_ + 1, (nflaps_ - 1) * sizeof flaps_[0]);
        nflaps_--;
    }
    flaps_[nflaps_++] = now_ms;
    if (nflaps_ == k.flap_count && now_ms - flaps_[0] < k.flap_window_ms) {
        lockout_until_ = now_ms + k.lockout_ms;
        lockouts++;
        nflaps_ = 0;
    }
}

const char *reason_name(uint32_t r) {
    static const char *const names[WEIR_ADAPTIVE_REASON_COUNT] = {"none",    "steady",   "hold", "lockout",
                                                                  "cooldown", "errors", "up",   "down"};
    return r < WEIR_ADAPTIVE_REASON_COUNT ? names[r] : "unknown";
}

} // namespace weir::adaptive
