// The doors (DESIGN.md §4): the listener and the hand-off queue, one batch
// each per pass, after the pass's other connections were settled. Where the
// connections come from is the port's business (Port::accept); how many a
// batch admits is decided here, by run_batch (doors.h).
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "loop/engine.h"
#include "loop/hooks.h"
#include "loop/linger.h"
#include "loop/sock_ops.h"
#include "loop/worker.h"

namespace weir {

void Worker::run_doors() {
    bool took = false;
    if (!hold_ && !overload_paused_ &&
        (listener_.state == ListenerState::Active || listener_.state == ListenerState::Lingering)) {
        uint32_t batch = overload_batch(overload_.level(), accept_batch_); // accept_batch_ below level 2
        BatchResult r = run_batch(listen_door_, batch, now_ms_, retry_ms_, [this, batch] { return accept_one(batch == 0); });
        took = r.taken > 0;
        if (r.ran) {
            metrics.add(M_ACCEPT_BATCHES);
            if (batch != accept_batch_)
                metrics.add(M_OVERLOAD_ACCEPT_SHRUNK);
            if (r.was_owed)
                metrics.add(M_ACCEPT_OWED);
        }
    }
    BatchResult h = run_batch(handoff_door_, accept_batch_, now_ms_, retry_ms_, [this] { return admit_handoff(); });
    if (h.ran && h.was_owed)
        metrics.add(M_HANDOFFS_OWED);
    // A flood of connects raises the counts here, not where the pass began:
    // re-read now, or the batch that passed a watermark goes unseen (the
    // level 0, its sweep not run, the wait unbounded) until some later
    // event, while the next connects keep taking descriptors.
    if ((took || h.taken > 0) && !loop_hooks().overload_skip_batch_reread.load(std::memory_order_relaxed))
        overload_tick();
}

Take Worker::accept_one(bool drain) {
    Accepted a;
    return accepted(port_->accept(listener_.fd, a, drain), a);
}

// What one take from a listener gave: admitted, refused at the limit, or
// the error counted.
Take Worker::accepted(Take t, Accepted &a) {
    if (t == Take::Empty)
        return t;
    if (t != Take::Took) {
        if (a.error == EINTR)
            return Take::Other;
        char msg[128];
        if (t == Take::Resource) {
            metrics.add(M_ACCEPT_RESOURCE_ERRORS);
            std::snprintf(msg, sizeof msg, "accept: %s; accepting paused until the next retry",
                          strerrorname_np(a.error));
            log_once(LOG_ACCEPT_RESOURCE, msg);
            return t;
        }
        metrics.add(M_ACCEPT_OTHER_ERRORS);
        std::snprintf(msg, sizeof msg, "accept: %s", strerrorname_np(a.error));
        log_once(LOG_ACCEPT_OTHER, msg);
        return t;
    }
    metrics.add(M_ACCEPTED);
    accepted_in_poll_++;
    engine_.overload_fd_moved(+1);
    if (auto hook = linger_hooks().on_accept.load(std::memory_order_relaxed))
        hook(a.fd);
    if (live_count_ >= max_connections_) {
        if (hand_off(a))
            return Take::Took;
        metrics.close(WEIR_CLOSE_MAX_CONNECTIONS); // counted before the peer can see it
        conn_closed(0, WEIR_CLOSE_MAX_CONNECTIONS, a.peer, a.peer_len, a.fd);
        answer_over_limit(a.fd);
        return Take::Took;
    }
    ConnImage img;
    img.fd = a.fd;
    img.peer = a.peer;
    img.peer_len = a.peer_len;
    admit(img);
    return Take::Took;
}

// Over max_connections with no sibling to take it: the client is told to
// come back (issue 32) rather than reset. A canned 503, written once without
// blocking (a fresh socket's send buffer takes it whole; anything else is
// dropped: no buffer, no slot, no timer), then the lingering close's FIN and
// drain, so a client whose request is already in (or still on its way) reads
// the 503 and then EOF, not a reset. The fd is closed here or by the reaper.
void Worker::answer_over_limit(int fd) {
    if (loop_hooks().skip_limit_answer.load(std::memory_order_relaxed)) { // the arm as it was
        ::close(fd);
        return;
    }
    static constexpr char k503[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Retry-After: 1\r\n" // seconds: a slot frees as soon as a client leaves
                                   "Connection: close\r\n"
                                   "Content-Length: 0\r\n\r\n";
    ::send(fd, k503, sizeof k503 - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    // Not done: the peer has not closed, and a request arriving after a
    // plain close would draw the reset that purges the 503. The reaper reads
    // until its FIN or a bound (kLingerMs, kLingerBytes).
    if (!fin_and_drain(fd, 16) && engine_.reaper().take(fd))
        return;
    ::close(fd);
}

// Over max_connections: the sibling with the most room takes the connection
// through its hand-off door.
bool Worker::hand_off(const Accepted &a) {
    if (engine_.stopping())
        return false;
    Worker *to = engine_.sibling_with_room(this);
    if (!to)
        return false;
    auto *n = new (std::nothrow) ImageNode;
    if (!n)
        return false;
    n->img.fd = a.fd;
    n->img.peer = a.peer;
    n->img.peer_len = a.peer_len;
    to->post_image(n);
    metrics.add(M_HANDOFFS);
    return true;
}

Take Worker::admit_handoff() {
    if (!handoff_local_)
        handoff_local_ = handoffs_.take_all();
    if (!handoff_local_)
        return Take::Empty;
    auto *n = static_cast<ImageNode *>(handoff_local_);
    handoff_local_ = n->next;
    if (n->close_reason) { // a handover's, given back to be closed where it is counted
        metrics.close(n->close_reason);
        conn_closed(n->img.id, n->close_reason, n->img.peer, n->img.peer_len, n->img.fd);
        drop_image(n, 0);
        return Take::Took;
    }
    if (n->refused || (n->ledger && engine_.stopping())) {
        refuse(n, WEIR_CLOSE_SHUTDOWN); // ours given back, or a transplant's that came too late
        return Take::Took;
    }
    // Never passed on again: two full workers must not play ping-pong.
    if (live_count_ >= max_connections_ && !stop_begun_) {
        refuse(n, WEIR_CLOSE_MAX_CONNECTIONS);
    } else {
        if (n->ledger) {
            n->ledger->adopted.fetch_add(1, std::memory_order_release);
            metrics.add(M_TRANSPLANT_RECEIVED);
        }
        admit(n->img);
        delete n;
    }
    return Take::Took;
}

// An image this worker will not serve. One of ours that a transplant's
// target gave back closes here, where the engine it left counts its closes
// (WEIR_CLOSE_TRANSPLANT_REFUSED). A transplant's goes back to its source
// worker while the source engine lives; any other closes here for `reason`.
void Worker::refuse(ImageNode *n, uint32_t reason) {
    if (n->refused) {
        reason = WEIR_CLOSE_TRANSPLANT_REFUSED;
    } else if (n->ledger && n->from) {
        std::lock_guard<std::mutex> g(n->ledger->mu);
        if (n->ledger->source_alive) {
            n->refused = true;
            n->from->post_image(n);
            return;
        }
    }
    metrics.close(reason);
    conn_closed(n->img.id, reason, n->img.peer, n->img.peer_len, n->img.fd);
    drop_image(n, reason);
}

// Closes an image's socket (FIN first: it sits at a request boundary, and
// its client may be sending the next request) and settles its ledger. A
// fresh hand-off refused over max_connections is answered 503 first.
void Worker::drop_image(ImageNode *n, uint32_t reason) {
    if (n->img.fd >= 0 && reason == WEIR_CLOSE_MAX_CONNECTIONS && !n->ledger) {
        answer_over_limit(n->img.fd);
    } else if (n->img.fd >= 0) {
        fin_and_drain(n->img.fd);
        ::close(n->img.fd);
    }
    if (n->ledger)
        n->ledger->refused.fetch_add(1, std::memory_order_release);
    delete n;
}

// Images nobody will admit any more (destroy): their sockets close.
void Worker::drop_images() {
    MpscNode *lists[2] = {handoff_local_, handoffs_.take_all()};
    handoff_local_ = nullptr;
    for (MpscNode *n : lists)
        while (n) {
            MpscNode *next = n->next;
            refuse(static_cast<ImageNode *>(n), WEIR_CLOSE_SHUTDOWN);
            n = next;
        }
}

} // namespace weir
