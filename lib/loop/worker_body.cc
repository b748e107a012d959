// Streamed request bodies (weir_body_read): the host reads a body on the
// worker's thread as it arrives. A read that finds nothing (-EAGAIN) leaves
// the exchange with the host, and the loop hands it back once a read would
// find something (bytes, the end, or the reason there will be none): inline,
// on_request again; driven, in the next poll batch, as streams are.
#include <cerrno>

#include "loop/engine.h"
#include "loop/worker.h"

namespace weir {

int64_t Worker::body_read(TicketRef &r, void *buf, size_t cap) {
    if (!owner_thread())
        return WEIR_E_STATE; // the buffer is the loop's: only its thread reads it
    uint64_t h = r.handle();
    TicketState st = tickets_.state(h);
    if (st != TicketState::Local && st != TicketState::Any) {
        // Its answer began (a stream, an upgrade): the handle is live for
        // those calls. Any other claim consumed it, though weir may still
        // hold the ticket (a stream that found its connection gone, until
        // the loop releases it): stale, as every other call says.
        const Ticket *t = tickets_.at(h);
        bool began = st == TicketState::Stream || st == TicketState::Upgraded ||
                     (st == TicketState::Claimed && t && t->upgrading.load(std::memory_order_acquire));
        return began ? WEIR_E_STATE : WEIR_E_STALE;
    }
    Exchange *x = tickets_.live(h);
    if (!x)
        return WEIR_E_STALE;
    Slot &s = *static_cast<Slot *>(x->user);
    held_from(s, x); // the host is at work on it
    int64_t n = s.session().body_read(x, buf, cap);
    if (n == WEIR_E_GONE) {
        tickets_.retire(h); // consumed (the failure rule): the connection is gone
        if (x == cur_ex_)
            cur_answered_ = true;
    } else if (n == WEIR_E_BODY_TOO_LARGE) {
        body_refuse(s, x, h);
    } else if (n == -EAGAIN) {
        s.body_handle = h;
        if (x == cur_ex_)
            cur_deferred_ = true; // it comes back: the handler may return unanswered
    }
    s.answered = true; // the host is at work: its deadline starts again
    mark_dirty(s);     // room to read again, or requests pipelined behind the body
    return n;
}

// A chunk size took x's body past max_body (the Conn counted it and is
// closing): weir answers 413 itself, as it refuses a declared length too
// large before the host sees it, so the limit holds whatever the host does
// with the error; ex is consumed (its handle turns stale, as the handler
// deadline's 503 leaves it). The answers before it leave first; the close
// lingers (WEIR_CLOSE_BAD_REQUEST), so the client reads the 413 while it is
// still sending.
void Worker::body_refuse(Slot &s, Exchange *x, uint64_t h) {
    if (!tickets_.cancel(h))
        return; // cannot happen on the owning thread between the read and here
    static const weir_header_t kText[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
    static const char kMsg[] = "request body too large\n";
    // No WEIR_RESPOND_CLOSE: the Conn is closing already, and its reason
    // (WEIR_CLOSE_BAD_REQUEST) is the one counted. A failure (WEIR_E_GONE,
    // -ENOMEM) released x all the same.
    s.session().respond(x, 413, kText, 1, kMsg, sizeof kMsg - 1, 0);
    mark_dirty(s);
    if (x == cur_ex_)
        cur_answered_ = true;
}

// Settle: the host waits for s's body (it was told -EAGAIN); hand the
// exchange back once a read would answer something else.
void Worker::body_hand_back(Slot &s) {
    uint64_t h = s.body_handle;
    Exchange *x = tickets_.live(h);
    if (!x || tickets_.state(h) == TicketState::Stream) {
        s.body_handle = 0; // answered, or taken back by the deadline
        return;
    }
    if (!s.session().body_ready(x))
        return;
    s.body_handle = 0;
    hand_back(h);
}

} // namespace weir
