// The engine and exchange entry points: weir_config_init, weir_engine_* (the
// accept pause included),
// weir_worker_poll, weir_close_reason_name, weir_exchange_*, weir_respond,
// weir_defer. Each checks its handles and goes through the guard.
#include <cerrno>
#include <cstring>

#include "guard.h"
#include "loop/config.h"
#include "loop/engine.h"
#include "util/codes.h"
#include "util/sized.h"
#include "weir.h"

using weir::Engine;
using weir::Worker;

namespace {

Engine *E(weir_engine *e) { return reinterpret_cast<Engine *>(e); }

} // namespace

WEIR_EXPORT void weir_config_init(weir_config *cfg) {
    if (cfg)
        weir::config_defaults(cfg);
}

WEIR_EXPORT int weir_engine_create(const weir_config *cfg, weir_engine **out) {
    if (!cfg || !out)
        return -EINVAL;
    return weir::guard([&] {
        Engine *e = nullptr;
        int rc = Engine::create(cfg, &e);
        if (rc == 0)
            *out = reinterpret_cast<weir_engine *>(e);
        return rc;
    });
}

WEIR_EXPORT int weir_engine_listen(weir_engine *e) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->listen(); });
}

WEIR_EXPORT int weir_engine_addr(weir_engine *e, struct sockaddr_storage *ss, socklen_t *len) {
    if (!e || !ss || !len)
        return -EINVAL;
    return weir::guard([&] { return E(e)->addr(ss, len); });
}

WEIR_EXPORT int weir_engine_start(weir_engine *e) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->start(); });
}

WEIR_EXPORT int weir_engine_shutdown(weir_engine *e, int64_t grace_ns) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->shutdown(grace_ns); });
}

WEIR_EXPORT int weir_engine_begin_pause(weir_engine *e) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->begin_pause(); });
}

WEIR_EXPORT int weir_engine_pause(weir_engine *e) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->pause(); });
}

WEIR_EXPORT int weir_engine_resume(weir_engine *e) {
    if (!e)
        return -EINVAL;
    return weir::guard([&] { return E(e)->resume(); });
}

WEIR_EXPORT int weir_engine_transplant(weir_engine *from, weir_engine *to, uint32_t flags) {
    if (!from || from == to || (flags & ~WEIR_TRANSPLANT_END) || (!to && !(flags & WEIR_TRANSPLANT_END)))
        return -EINVAL;
    if (flags & WEIR_TRANSPLANT_END)
        return weir::guard([&] {
            E(from)->end_transplant(to ? E(to) : nullptr);
            return 0;
        });
    return weir::guard([&] { return E(from)->transplant(E(to)); });
}

WEIR_EXPORT int weir_engine_switch(weir_engine *from, weir_engine *to) {
    if (!from || !to)
        return -EINVAL;
    return weir::guard([&] { return E(from)->switch_to(E(to)); });
}

WEIR_EXPORT void weir_engine_destroy(weir_engine *e) {
    if (!e)
        return;
    weir::guard_void([&] { delete E(e); });
}

WEIR_EXPORT int weir_engine_worker(weir_engine *e, uint32_t index, weir_worker **out) {
    if (!e || !out)
        return -EINVAL;
    Engine *en = E(e);
    if (en->cfg().mode != WEIR_MODE_DRIVEN)
        return WEIR_E_STATE;
    if (index >= en->worker_count())
        return -EINVAL;
    *out = reinterpret_cast<weir_worker *>(en->worker(index));
    return 0;
}

WEIR_EXPORT int weir_engine_workers(weir_engine *e) {
    if (!e)
        return -EINVAL;
    return static_cast<int>(E(e)->worker_count());
}

WEIR_EXPORT int weir_engine_metrics(weir_engine *e, weir_metrics *out) {
    if (!e || !out || !weir::sized::size_ok<weir_metrics>(out->size))
        return -EINVAL;
    return weir::guard([&] {
        E(e)->metrics(out);
        return 0;
    });
}

WEIR_EXPORT int weir_worker_poll(weir_worker *w, weir_exchange **out, uint32_t max, int timeout_ms) {
    if (!w || (!out && max > 0))
        return -EINVAL;
    return weir::guard([&] {
        return reinterpret_cast<Worker *>(w)->poll(out, max, timeout_ms);
    });
}

WEIR_EXPORT int weir_worker_wake(weir_worker *w) {
    if (!w)
        return -EINVAL;
    reinterpret_cast<Worker *>(w)->host_wake();
    return 0;
}

WEIR_EXPORT int weir_worker_own(weir_worker *w, int own) {
    if (!w)
        return -EINVAL;
    return reinterpret_cast<Worker *>(w)->own(own != 0);
}

WEIR_EXPORT const char *weir_close_reason_name(uint32_t reason) {
    const char *n = weir::close_reason_name(reason);
    return n ? n : "unknown";
}

WEIR_EXPORT const weir_request *weir_exchange_request(weir_exchange *ex) {
    return ex ? weir::exchange_request(ex) : nullptr;
}

WEIR_EXPORT int weir_exchange_peer(weir_exchange *ex, struct sockaddr_storage *ss, socklen_t *len) {
    if (!ex || !ss || !len)
        return -EINVAL;
    return weir::exchange_peer(ex, ss, len);
}

WEIR_EXPORT int weir_respond(weir_exchange *ex, int status, const weir_header_t *headers, size_t num_headers,
                             const void *body, size_t body_len, uint32_t flags) {
    if (!ex || (num_headers && !headers) || (body_len && !body))
        return -EINVAL;
    return weir::guard(
        [&] { return weir::exchange_respond(ex, status, headers, num_headers, body, body_len, flags); });
}

WEIR_EXPORT int weir_stream_start(weir_exchange *ex, int status, const weir_header_t *headers, size_t num_headers,
                                  uint64_t length, uint32_t flags) {
    if (!ex || (num_headers && !headers))
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_stream_start(ex, status, headers, num_headers, length, flags); });
}

WEIR_EXPORT int weir_stream_write(weir_exchange *ex, const void *data, size_t len) {
    if (!ex || (len && !data))
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_stream_write(ex, data, len); });
}

WEIR_EXPORT int weir_stream_end(weir_exchange *ex, const weir_header_t *trailers, size_t num_trailers) {
    if (!ex || (num_trailers && !trailers))
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_stream_end(ex, trailers, num_trailers); });
}

WEIR_EXPORT int weir_stream_abort(weir_exchange *ex) {
    if (!ex)
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_stream_abort(ex); });
}

WEIR_EXPORT int64_t weir_stream_room(weir_exchange *ex) {
    if (!ex)
        return -EINVAL;
    try {
        return weir::exchange_stream_room(ex);
    } catch (...) {
        return -EIO;
    }
}

WEIR_EXPORT int64_t weir_body_read(weir_exchange *ex, void *buf, size_t cap) {
    if (!ex || (cap && !buf))
        return -EINVAL;
    try {
        return weir::exchange_body_read(ex, buf, cap);
    } catch (...) {
        return -EIO;
    }
}

WEIR_EXPORT int weir_respond_file(weir_exchange *ex, int status, const weir_header_t *headers, size_t num_headers,
                                  int fd, uint64_t offset, uint64_t length, uint32_t flags) {
    if (!ex || (num_headers && !headers))
        return -EINVAL;
    return weir::guard([&] {
        return weir::exchange_respond_file(ex, status, headers, num_headers, fd, offset, length, flags);
    });
}

WEIR_EXPORT int weir_upgrade(weir_exchange *ex, const weir_header_t *headers, size_t num_headers) {
    if (!ex || (num_headers && !headers))
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_upgrade(ex, headers, num_headers, false); });
}

WEIR_EXPORT int weir_exchange_gone(weir_exchange *ex) {
    if (!ex)
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_gone(ex); });
}

WEIR_EXPORT int weir_upgrade_raw(weir_exchange *ex) {
    if (!ex)
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_upgrade(ex, nullptr, 0, true); });
}

WEIR_EXPORT int weir_upgrade_take(weir_exchange *ex, int *fd, void *buf, size_t cap, size_t *len) {
    if (!ex || !fd || !len || (cap && !buf))
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_upgrade_take(ex, fd, buf, cap, len); });
}

WEIR_EXPORT int weir_defer(weir_exchange *ex) {
    if (!ex)
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_defer(ex); });
}
