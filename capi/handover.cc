// weir_engine_listen_fds and weir_handover_* (docs/upgrade.md): each checks
// its handles and goes through the guard; the handle holds a reference to a
// handover its engine holds too (its thread outlives neither).
#include <cerrno>
#include <cstring>
#include <memory>

#include "guard.h"
#include "handover/handover.h"
#include "loop/engine.h"
#include "util/sized.h"
#include "weir.h"

struct weir_handover {
    std::shared_ptr<weir::handover::Handover> h;
};

namespace {

weir::Engine *E(weir_engine *e) { return reinterpret_cast<weir::Engine *>(e); }

// A copy of what the caller gave, to its size (older callers), else the defaults.
int options(const weir_handover_options *in, weir_handover_options *out) {
    std::memset(out, 0, sizeof *out);
    if (!in)
        return 0;
    if (in->size < offsetof(weir_handover_options, deadline_ms) + sizeof in->deadline_ms || in->size > sizeof *out)
        return -EINVAL;
    std::memcpy(out, in, in->size);
    return 0;
}

template <class Side>
int begin(weir_engine *e, const char *path, const weir_handover_options *opt, weir_handover **out) {
    if (!e || !path || !out)
        return -EINVAL;
    weir_handover_options o;
    if (int rc = options(opt, &o); rc < 0)
        return rc;
    return weir::guard([&] {
        std::shared_ptr<Side> side;
        int rc = Side::create(*E(e), path, o, &side);
        if (rc < 0)
            return rc;
        *out = new weir_handover{std::move(side)};
        return 0;
    });
}

} // namespace

WEIR_EXPORT int weir_engine_listen_fds(weir_engine *e, const int *fds, size_t n) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->listen_fds(fds, n); });
}

WEIR_EXPORT int weir_handover_offer(weir_engine *e, const char *path, const weir_handover_options *opt,
                                    weir_handover **out) {
    return begin<weir::handover::Offer>(e, path, opt, out);
}

WEIR_EXPORT int weir_handover_take_over(weir_engine *e, const char *path, const weir_handover_options *opt,
                                        weir_handover **out) {
    return begin<weir::handover::TakeOver>(e, path, opt, out);
}

WEIR_EXPORT int weir_handover_wait(weir_handover *h, int64_t timeout_ns) {
    if (!h)
        return -EINVAL;
    return weir::guard([&] { return h->h->wait(timeout_ns); });
}

WEIR_EXPORT int weir_handover_stats_get(const weir_handover *h, weir_handover_stats *out) {
    if (!h || !out || out->size < offsetof(weir_handover_stats, listeners) + sizeof out->listeners)
        return -EINVAL;
    return weir::guard([&] {
        h->h->stats(out);
        return 0;
    });
}

WEIR_EXPORT void weir_handover_free(weir_handover *h) {
    if (!h)
        return;
    weir::guard_void([&] { h->h->stop(); });
    delete h;
}
