// Upgrades (weir_upgrade, weir_upgrade_raw, weir_upgrade_take): the host
// answers an Upgrade request 101 (raw: the host writes it on the socket it
// takes, as net/http's Hijack and celeris's websocket middleware do); once
// that answer and every one before it has left, the connection is lifted
// out at that boundary as transplant lifts one (the unread bytes past the
// request travel with it, and on io_uring bytes a recv still had in flight
// join them, Worker::input_late), counted as
// WEIR_CLOSE_UPGRADED, and handed back to the host: inline, on_request is
// called again with the same handle; driven, the handle comes back in a poll
// batch. The host then takes the fd and the bytes on that thread.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "loop/engine.h"
#include "loop/worker.h"
#include "proto/answer_rules.h"

namespace weir {

int Worker::upgrade(TicketRef &r, const weir_header_t *h, size_t nh, bool raw) {
    if (int rc = fields_check(h, nh); rc < 0)
        return rc;
    Exchange *px = r.peek(); // the request stays as it was while its handle is live
    const uint32_t want = WEIR_REQ_UPGRADE | WEIR_REQ_KEEP_ALIVE;
    if (px && (px->req.flags & want) != want)
        return -EINVAL; // the client did not ask for an upgrade (or asked to close)
    if (px && (px->req.flags & WEIR_REQ_BODY_STREAM))
        return -EINVAL; // a body to read first, on a connection about to leave: not supported
    bool own = owner_thread();
    Exchange *x = nullptr;
    // Marked before the claim, so the owning thread's weir_upgrade_take never
    // sees this claim unmarked (it would say stale to a live upgrade).
    // A refused call (a second weir_upgrade of the same handle) leaves the
    // mark as it found it.
    bool marked = r.ticket().upgrading.exchange(true, std::memory_order_acq_rel);
    if (int rc = r.claim(own, &x); rc < 0) {
        if (!marked)
            r.ticket().upgrading.store(false, std::memory_order_relaxed);
        return rc;
    }
    Slot &s = *static_cast<Slot *>(x->user);
    if (own && x == cur_ex_)
        cur_answered_ = true; // also when it is posted behind an interim answer (below)
    if (own && nothing_posted(r)) {
        uint64_t handle = x->handle;
        int rc = s.session().upgrade(x, h, nh, raw);
        if (rc == 0)
            s.upgrade_handle = handle; // the ticket stays Claimed until the connection leaves
        else
            tickets_.retire(handle);
        if (x == cur_ex_)
            cur_answered_ = true;
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    return post_foreign(x, AnswerKind::Upgrade, raw ? 0 : 101, h, nh, nullptr); // status 0: raw
}

void Worker::apply_upgrade(Answer *a) {
    Exchange *x = a->x;
    Slot &s = *static_cast<Slot *>(x->user);
    uint64_t handle = x->handle;
    int rc = s.session().upgrade(x, a->headers, a->num_headers, a->status == 0);
    if (rc == 0) {
        s.upgrade_handle = handle;
    } else {
        if (rc == -EINVAL) { // checked before posting: the request moved on (a bug)
            log_once(LOG_BAD_ANSWER, "an upgrade was refused by the connection; answered 500");
            s.session().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
        }
        tickets_.retire(handle);
    }
    s.answered = true;
    mark_dirty(s);
    answer_pool_.give(a);
}

// Settle: the 101 has left; lift the connection out (as Worker::detach).
bool Worker::upgrade_detach(Slot &s) {
    auto *n = new (std::nothrow) ImageNode;
    if (!n)
        return false; // tried again at the next settle
    if (!s.session().detach_upgraded(n->img)) {
        delete n;
        return false;
    }
    leave(s, n, nullptr);
    return true;
}

// The image is complete (no operation names the slot), or the connection
// died first (n null): the host learns either way.
void Worker::upgrade_deliver(Slot &s, ImageNode *n) {
    uint64_t h = s.upgrade_handle;
    s.upgrade_handle = 0;
    if (n && n->img.fd < 0) { // spoiled by input_late (counted there)
        delete n;
        n = nullptr;
    }
    if (n) {
        metrics.close(WEIR_CLOSE_UPGRADED);
        conn_closed(s, WEIR_CLOSE_UPGRADED);
    }
    try {
        upgraded_.push_back(h);
    } catch (...) {
        // Nowhere to remember it: the host's take would find it all the same
        // through the ticket; only destroy's sweep would miss it.
    }
    tickets_.set_upgraded(h, n);
    hand_back(h);
}

void Worker::hand_back(uint64_t h) {
    if (inline_) {
        Exchange *outer = cur_ex_;
        cur_ex_ = nullptr;
        engine_.cfg().on_request(engine_.cfg().user, reinterpret_cast<weir_exchange *>(h));
        cur_ex_ = outer;
    } else if (ready_room()) {
        ready_.push_back(h);
    }
}

int Worker::upgrade_take(TicketRef &r, int *fd, void *buf, size_t cap, size_t *len) {
    if (!owner_thread())
        return WEIR_E_STATE; // inside on_request, or on the polling thread
    uint64_t h = r.handle();
    TicketState st = tickets_.state(h);
    if (st == TicketState::Claimed) {
        Ticket *t = tickets_.at(h);
        if (t && t->upgrading.load(std::memory_order_acquire))
            return -EAGAIN; // the 101 has not left yet: it comes back when it has
        return WEIR_E_STALE; // consumed by another answer, which weir still holds
    }
    if (st != TicketState::Upgraded)
        return st == TicketState::Free ? WEIR_E_STALE : WEIR_E_STATE;
    auto *n = static_cast<ImageNode *>(tickets_.at(h)->image);
    if (n && n->img.unread_len > cap) {
        *len = n->img.unread_len;
        return -ENOBUFS; // nothing taken: call again with room
    }
    void *img = nullptr;
    tickets_.take_upgraded(h, &img);
    tickets_.retire(h);
    upgraded_.erase(std::remove(upgraded_.begin(), upgraded_.end(), h), upgraded_.end());
    if (!n)
        return WEIR_E_GONE; // it died before the 101 left
    if (n->img.unread_len)
        std::memcpy(buf, n->img.unread, n->img.unread_len);
    *len = n->img.unread_len;
    *fd = n->img.fd;
    n->img.fd = -1;
    delete n;
    return 0;
}

// ~Worker: connections handed back and never taken are closed.
void Worker::drop_upgrades() {
    for (uint64_t h : upgraded_) {
        void *img = nullptr;
        if (tickets_.take_upgraded(h, &img) && img) {
            auto *n = static_cast<ImageNode *>(img);
            if (n->img.fd >= 0)
                ::close(n->img.fd);
            delete n;
        }
    }
    upgraded_.clear();
}

} // namespace weir
