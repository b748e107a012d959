// The exchange entry points capi/ calls: each resolves the host's handle to
// its worker's ticket table first (loop/tickets.h), so a handle that is
// stale — answered, timed out, or of a destroyed engine — is refused without
// touching memory that may now belong to another request.
#include "loop/worker.h"

namespace weir {

namespace {

uint64_t H(weir_exchange *ex) { return reinterpret_cast<uintptr_t>(ex); }

} // namespace

int exchange_respond(weir_exchange *ex, int status, const weir_header_t *h, size_t nh, const void *body,
                     size_t len, uint32_t flags) {
    TicketRef r(H(ex));
    if (!r)
        return WEIR_E_STALE;
    return r.worker()->respond(r, status, h, nh, body, len, flags);
}

int exchange_defer(weir_exchange *ex) {
    TicketRef r(H(ex));
    if (!r)
        return WEIR_E_STALE;
    return r.worker()->defer(r.handle());
}

int exchange_stream_start(weir_exchange *ex, int status, const weir_header_t *h, size_t nh, uint64_t length,
                          uint32_t flags) {
    TicketRef r(H(ex));
    return r ? r.worker()->stream_start(r, status, h, nh, length, flags) : WEIR_E_STALE;
}

int exchange_stream_write(weir_exchange *ex, const void *p, size_t n) {
    TicketRef r(H(ex));
    return r ? r.worker()->stream_write(r, p, n) : WEIR_E_STALE;
}

int exchange_stream_end(weir_exchange *ex, const weir_header_t *tr, size_t nt) {
    TicketRef r(H(ex));
    return r ? r.worker()->stream_end(r, tr, nt) : WEIR_E_STALE;
}

int exchange_stream_abort(weir_exchange *ex) {
    TicketRef r(H(ex));
    return r ? r.worker()->stream_abort(r) : WEIR_E_STALE;
}

int64_t exchange_stream_room(weir_exchange *ex) {
    TicketRef r(H(ex));
    return r ? r.worker()->stream_room_now(r) : WEIR_E_STALE;
}

int exchange_upgrade(weir_exchange *ex, const weir_header_t *h, size_t nh, bool raw) {
    TicketRef r(H(ex));
    return r ? r.worker()->upgrade(r, h, nh, raw) : WEIR_E_STALE;
}

int exchange_upgrade_take(weir_exchange *ex, int *fd, void *buf, size_t cap, size_t *len) {
    TicketRef r(H(ex));
    return r ? r.worker()->upgrade_take(r, fd, buf, cap, len) : WEIR_E_STALE;
}

int exchange_respond_file(weir_exchange *ex, int status, const weir_header_t *h, size_t nh, int fd,
                          uint64_t off, uint64_t len, uint32_t flags) {
    TicketRef r(H(ex));
    return r ? r.worker()->respond_file(r, status, h, nh, fd, off, len, flags) : WEIR_E_STALE;
}

int exchange_interim(weir_exchange *ex, int status, const weir_header_t *h, size_t nh) {
    TicketRef r(H(ex));
    return r ? r.worker()->interim(r, status, h, nh) : WEIR_E_STALE;
}

int64_t exchange_body_read(weir_exchange *ex, void *buf, size_t cap) {
    TicketRef r(H(ex));
    return r ? r.worker()->body_read(r, buf, cap) : WEIR_E_STALE;
}

const weir_request *exchange_request(weir_exchange *ex) {
    TicketRef r(H(ex));
    Exchange *x = r ? r.peek() : nullptr;
    return x ? &x->req : nullptr;
}

int exchange_peer(weir_exchange *ex, sockaddr_storage *ss, socklen_t *len) {
    TicketRef r(H(ex));
    Exchange *x = r ? r.peek() : nullptr;
    if (!x)
        return WEIR_E_STALE;
    auto *s = static_cast<const Slot *>(x->user);
    s->peer.get(ss, len);
    return 0;
}

int exchange_gone(weir_exchange *ex) {
    TicketRef r(H(ex));
    Exchange *x = r ? r.peek() : nullptr;
    if (!x && r && r.stream(&x) != 0) // a streamed answer's handle: its exchange all the same
        x = nullptr;
    if (!x)
        return WEIR_E_STALE;
    auto *s = static_cast<const Slot *>(x->user);
    if (!s->gone.load(std::memory_order_acquire) && !s->peer_left.load(std::memory_order_acquire) &&
        !r.ticket().stream_gone.load(std::memory_order_acquire))
        return 0;
    return r.ticket().seen.load(std::memory_order_relaxed) == 2 ? 2 : 1;
}

Worker *exchange_worker(weir_exchange *ex) {
    TicketRef r(H(ex));
    return r && r.peek() ? r.worker() : nullptr;
}

} // namespace weir
