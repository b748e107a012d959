// The adaptive pair's entry points (weir_adaptive_*, docs/adaptive.md). Each
// checks its handles and goes through the guard.
#include <cerrno>

#include "adaptive/adaptive.h"
#include "adaptive/policy.h"
#include "guard.h"
#include "loop/engine.h"
#include "util/sized.h"
#include "weir.h"

using weir::Adaptive;
using weir::Engine;

namespace {

Engine *E(weir_engine *e) { return reinterpret_cast<Engine *>(e); }
Adaptive *A(weir_adaptive *a) { return reinterpret_cast<Adaptive *>(a); }

} // namespace

WEIR_EXPORT void weir_adaptive_config_init(weir_adaptive_config *cfg) {
    if (cfg)
        weir::adaptive::config_defaults(cfg);
}

WEIR_EXPORT const char *weir_adaptive_config_error(const weir_adaptive_config *cfg) {
    if (!cfg)
        return "no config";
    if (!weir::sized::size_ok<weir_adaptive_config>(cfg->size))
        return weir::adaptive::config_error(cfg);
    // Fields past the caller's size keep their defaults: judge what create
    // would use.
    weir_adaptive_config k;
    weir::adaptive::config_defaults(&k);
    weir::sized::copy_in(cfg, &k);
    return weir::adaptive::config_error(&k);
}

WEIR_EXPORT int weir_adaptive_create(weir_engine *active, weir_engine *standby, const weir_adaptive_config *cfg,
                                     weir_adaptive **out) {
    if (!active || !standby || active == standby || !out || (cfg && weir_adaptive_config_error(cfg)))
        return -EINVAL;
    return weir::guard([&] {
        Adaptive *a = nullptr;
        int rc = Adaptive::create(E(active), E(standby), cfg, &a);
        if (rc == 0)
            *out = reinterpret_cast<weir_adaptive *>(a);
        return rc;
    });
}

WEIR_EXPORT void weir_adaptive_destroy(weir_adaptive *a) {
    if (a)
        weir::guard_void([&] { delete A(a); });
}

WEIR_EXPORT int weir_adaptive_tick(weir_adaptive *a) {
    if (!a)
        return -EINVAL;
    return weir::guard([&] { return A(a)->tick(); });
}

WEIR_EXPORT int weir_adaptive_timeout_ms(weir_adaptive *a) {
    if (!a)
        return -EINVAL;
    return weir::guard([&] { return A(a)->timeout_ms(); });
}

WEIR_EXPORT int weir_adaptive_switch(weir_adaptive *a) {
    if (!a)
        return -EINVAL;
    return weir::guard([&] { return A(a)->force_switch(); });
}

WEIR_EXPORT int weir_adaptive_engines(weir_adaptive *a, weir_engine **active, weir_engine **standby) {
    if (!a)
        return -EINVAL;
    return weir::guard([&] {
        Engine *ac = nullptr, *sb = nullptr;
        A(a)->engines(&ac, &sb);
        if (active)
            *active = reinterpret_cast<weir_engine *>(ac);
        if (standby)
            *standby = reinterpret_cast<weir_engine *>(sb);
        return 0;
    });
}

WEIR_EXPORT int weir_adaptive_state_get(weir_adaptive *a, weir_adaptive_state *out) {
    if (!a || !out || !weir::sized::size_ok<weir_adaptive_state>(out->size))
        return -EINVAL;
    return weir::guard([&] {
        A(a)->state(out);
        return 0;
    });
}

WEIR_EXPORT const char *weir_adaptive_reason_name(uint32_t reason) { return weir::adaptive::reason_name(reason); }
