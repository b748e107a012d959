// cfg.on_conn (docs/api.md §5.11): each connection's OPEN and CLOSE, told to
// the host. The events follow the counted closes (weir_metrics.closes): every
// metrics.close of a connection has its CLOSE next to it, so the host's
// ledger and weir's agree. A connection that moves (a transplant, a switch,
// a hot upgrade's image) neither closes where it leaves nor opens where it
// lands: its client saw no close.
#include <sys/socket.h>

#include "loop/engine.h"
#include "loop/worker.h"

namespace weir {

void Worker::conn_event(Slot &s, uint32_t event, uint32_t reason) {
    socklen_t len = s.peer.len();
    on_conn_(conn_user_, reinterpret_cast<weir_worker *>(this), index_, s.session().id(), event, reason,
             len ? s.peer.sa() : nullptr, len);
}

void Worker::conn_event_unslotted(uint64_t id, uint32_t reason, const sockaddr_storage &peer, socklen_t len,
                                  int fd) {
    auto *w = reinterpret_cast<weir_worker *>(this);
    sockaddr_storage asked;
    const sockaddr *sa = len ? reinterpret_cast<const sockaddr *>(&peer) : nullptr;
    if (!sa && fd >= 0) { // a multishot accept gives no address: asked, as admit does
        len = sizeof asked;
        if (::getpeername(fd, reinterpret_cast<sockaddr *>(&asked), &len) == 0)
            sa = reinterpret_cast<const sockaddr *>(&asked);
        else
            len = 0;
    }
    if (id == 0) { // accepted, never admitted: the host still sees it open
        id = engine_.next_conn_id();
        on_conn_(conn_user_, w, index_, id, WEIR_CONN_OPEN, 0, sa, len);
    }
    on_conn_(conn_user_, w, index_, id, WEIR_CONN_CLOSE, reason, sa, len);
}

} // namespace weir
