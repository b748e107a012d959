// weir_engine_listen_systemd and weir_engine_store_systemd
// (docs/upgrade-systemd.md): handles and sizes checked, then the guard.
#include <cerrno>
#include <cstring>

#include "guard.h"
#include "loop/engine.h"
#include "systemd/systemd.h"
#include "weir.h"

namespace {

weir::Engine *E(weir_engine *e) { return reinterpret_cast<weir::Engine *>(e); }

// The caller's stats, to its size (an older caller's is shorter).
bool stats_ok(const weir_systemd_stats *out) {
    return !out || out->size >= offsetof(weir_systemd_stats, connections) + sizeof out->connections;
}

void stats_out(const weir_systemd_stats &s, weir_systemd_stats *out) {
    if (!out)
        return;
    size_t n = out->size < sizeof s ? out->size : sizeof s;
    uint32_t size = out->size;
    std::memcpy(out, &s, n);
    out->size = size;
}

template <class F> int run(weir_engine *e, weir_systemd_stats *out, F &&f) {
    if (!e || !stats_ok(out))
        return -EINVAL;
    return weir::guard([&] {
        weir_systemd_stats s{};
        int rc = f(*E(e), s);
        stats_out(s, out);
        return rc;
    });
}

} // namespace

WEIR_EXPORT int weir_engine_listen_systemd(weir_engine *e, const char *name, weir_systemd_stats *out) {
    return run(e, out, [&](weir::Engine &en, weir_systemd_stats &s) { return weir::systemd::listen_systemd(en, name, s); });
}

WEIR_EXPORT int weir_engine_store_systemd(weir_engine *e, int64_t timeout_ns, weir_systemd_stats *out) {
    return run(e, out,
               [&](weir::Engine &en, weir_systemd_stats &s) { return weir::systemd::store_systemd(en, timeout_ns, s); });
}
