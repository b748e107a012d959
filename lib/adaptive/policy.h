// The adaptive controller's policy (docs/adaptive.md): once per sample of
// the active engine, whether the pair should switch. Pure: no I/O, no clock,
// no engine call, so tests/unit/adaptive/test_adaptive_policy.cc drives it
// with synthetic samples at exact times; lib/adaptive/adaptive.cc takes the
// samples and acts. It tracks the role the active engine holds, not its
// backend: where io_uring is refused the standby is a second epoll engine
// that holds the io_uring role in name, and the switches still happen.
#pragma once

#include <cstdint>

#include "weir.h"

namespace weir::adaptive {

constexpr uint32_t kFlapMax = 16; // flap_count's ceiling: the switch times kept

void config_defaults(weir_adaptive_config *c);
// nullptr when c is usable, else what is wrong with it (a static sentence).
const char *config_error(const weir_adaptive_config *c);

// One interval of the active engine, from two weir_metrics of that engine.
struct Sample {
    uint64_t now_ms = 0;           // a monotonic clock, at the later metrics
    uint64_t conns_per_worker = 0; // connections_open / workers, now
    uint64_t rps = 0;              // requests per second over the interval
    uint64_t error_permille = 0;   // errors per 1000 requests over the interval, at most 1000
};

// prev and cur are the same engine's metrics, elapsed_ms apart, cur taken at
// now_ms.
Sample sample_from(const weir_metrics &prev, const weir_metrics &cur, uint64_t elapsed_ms, uint64_t now_ms);

class Policy {
  public:
    Policy(const weir_adaptive_config &cfg, bool on_uring);

    // One sample: true to switch, the reason in last(). A switch takes effect
    // only when the caller reports it (switched): a failed one is asked for
    // again at the next sample.
    bool decide(const Sample &s);
    // A switch happened at now_ms, the controller's own (by_controller) or a
    // forced one: the roles swap, the cooldown begins, it counts as a flap.
    void switched(uint64_t now_ms, bool by_controller);

    const weir_adaptive_config &config() const { return cfg_; }
    bool on_uring() const { return on_uring_; }
    uint32_t last() const { return last_; }
    const Sample &last_sample() const { return last_sample_; }

    // Counters, as weir_adaptive_state names them.
    uint64_t streak = 0, decisions = 0, switches = 0, external_switches = 0;
    uint64_t held_by_cooldown = 0, held_by_errors = 0, held_by_lockout = 0, lockouts = 0;

  private:
    weir_adaptive_config cfg_;
    bool on_uring_;
    uint64_t cooldown_until_ = 0, lockout_until_ = 0; // ms; nothing switches before these
    uint64_t flaps_[kFlapMax] = {};                   // the last switches' times, oldest first
    uint32_t nflaps_ = 0;
    uint32_t last_ = WEIR_ADAPTIVE_NONE;
    Sample last_sample_;
};

const char *reason_name(uint32_t r);

} // namespace weir::adaptive
