// The adaptive pair (weir_adaptive_*, docs/adaptive.md): an active engine and
// a paused standby on one port, switched by weir's switch (Engine::switch_to)
// when forced or when the policy (policy.h) asks. Owns neither engine. One
// mutex serialises every call, so a forced switch from a signal thread and a
// tick from the host's timer never race over which engine is active.
#pragma once

#include <memory>
#include <mutex>

#include "adaptive/policy.h"
#include "weir.h"

namespace weir {

class Engine;

class Adaptive {
  public:
    // cfg nullptr: no controller. Returns 0 or a negative errno.
    static int create(Engine *active, Engine *standby, const weir_adaptive_config *cfg, Adaptive **out);

    int tick();
    int timeout_ms();
    int force_switch();
    void engines(Engine **active, Engine **standby);
    void state(weir_adaptive_state *out);

  private:
    Adaptive(Engine *active, Engine *standby) : active_(active), standby_(standby) {}
    int switch_now(bool by_controller); // under mu_
    void rebase(uint64_t now_ms);       // under mu_

    std::mutex mu_;
    Engine *active_, *standby_;
    uint32_t active_backend_ = 0, standby_backend_ = 0;
    bool role_uring_ = false; // the active engine's role; swaps at every switch (the policy's own when it has one)
    uint64_t switches_ = 0, failures_ = 0;
    std::unique_ptr<adaptive::Policy> policy_; // null: no controller
    weir_metrics base_{};                      // the active engine's, at the last sample or switch
    uint64_t base_ms_ = 0, next_ms_ = 0;
};

} // namespace weir
