// A worker's connections: slots, admitting (an accept, a hand-off or an
// adopted image: one path), closing, detaching at a request boundary.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "loop/engine.h"
#include "loop/hooks.h"
#include "loop/linger.h"
#include "loop/sock_ops.h"
#include "loop/worker.h"

namespace weir {

namespace {

// Closes after which the peer may still be sending (a refused or timed-out
// request): FIN first and discard what already arrived, so the answer is
// read rather than destroyed by a reset.
bool lingering(uint32_t reason) {
    return reason == WEIR_CLOSE_BAD_REQUEST || reason == WEIR_CLOSE_HEADER_TIMEOUT ||
           reason == WEIR_CLOSE_BODY_TIMEOUT || reason == WEIR_CLOSE_SILENT || reason == WEIR_CLOSE_PROXY ||
           reason == WEIR_CLOSE_REQUEST_TIMEOUT || reason == WEIR_CLOSE_SLOW_BODY;
}

// Closes the server chose after a complete answer: the peer may have sent
// past the request that asked for the close (pipelined, or a body).
bool chosen(uint32_t reason) {
    return reason == WEIR_CLOSE_NOT_KEEP_ALIVE || reason == WEIR_CLOSE_HANDLER || reason == WEIR_CLOSE_HANDLER_TIMEOUT ||
           reason == WEIR_CLOSE_BODY_UNREAD || reason == WEIR_CLOSE_ABORTED || reason == WEIR_CLOSE_HANDOVER;
}

// Closes of a client that trickled (its head, or its request, came slower
// than its deadline allows): its linger ends once the answer is acknowledged
// (reaper.h), or a slowloris keeps its socket to the linger's bound.
bool trickled(uint32_t reason) {
    if (linger_hooks().linger_to_bound.load(std::memory_order_relaxed))
        return false; // the arm that must lose
    return reason == WEIR_CLOSE_HEADER_TIMEOUT || reason == WEIR_CLOSE_REQUEST_TIMEOUT ||
           reason == WEIR_CLOSE_SLOW_BODY;
}

} // namespace

// A graceful shutdown's close (begin_stop asked every connection to finish):
// it comes after the answers to every request parsed, while the client may
// have pipelined more that weir never read, or may still be sending it.
// Those bytes may sit in the kernel, or may have been taken by io_uring's
// multishot recv and dropped at the release, or may be on their way: the
// Conn cannot know. So it always lingers (unless the peer's FIN is in): the
// FIN leaves after the answers, and the reaper reads and discards until the
// client's own FIN (or kLingerMs): a close with unread input, or input
// arriving after it, would reset, and the reset purges the answers still in
// the send queue. The hard close at the end of the grace (forced_) does not
// linger: its answers are dropped anyway, and it must end everything in time.
bool Worker::graceful_stop(uint32_t reason) const { return reason == WEIR_CLOSE_SHUTDOWN && stop_begun_ && !forced_; }

Slot *Worker::alloc_slot() {
    if (!free_slots_) {
        std::unique_ptr<Slot[]> chunk(new (std::nothrow) Slot[kSlotChunk]);
        if (!chunk)
            return nullptr;
        try {
            chunks_.push_back(nullptr);
        } catch (...) {
            return nullptr;
        }
        for (uint32_t i = 0; i < kSlotChunk; i++) {
            chunk[i].worker = this;
            chunk[i].timer.owner = &chunk[i];
            chunk[i].bind.tick.owner = &chunk[i];
            chunk[i].held_timer.owner = &chunk[i];
            chunk[i].next_free = free_slots_;
            free_slots_ = &chunk[i];
        }
        chunks_.back() = std::move(chunk);
    }
    Slot *s = free_slots_;
    free_slots_ = s->next_free;
    s->next_free = nullptr;
    slots_in_use_++;
    return s;
}

void Worker::free_slot(Slot &s) {
    unlink_dirty(s);
    s.session().~Session();
    s.in_use = false;
    s.next_free = free_slots_;
    free_slots_ = &s;
    slots_in_use_--;
}

// A closed or released slot is freed once the kernel names it in no
// operation, no exchange of it is out, and nothing of its Conn is lent; a
// detached one is handed over at that moment (not before: a read the old
// port still had in flight could otherwise land after the adopter read on).
void Worker::free_if_spent(Slot &s) {
    if (s.fd >= 0 || !s.in_use || s.retry_queued || s.ops > 0)
        return;
    if (s.leaving)
        hand_over(s);
    if (s.session().outstanding() == 0 && !s.session().lent())
        free_slot(s);
}

void Worker::fold(Slot &s) {
    const SessionCounters &c = s.session().counters();
    metrics.add(M_REQUESTS, c.requests - s.folded.requests);
    metrics.add(M_RESPONSES, c.responses - s.folded.responses);
    metrics.add(M_PARSE_ERRORS, c.parse_errors - s.folded.parse_errors);
    metrics.add(M_CONTINUES_SENT, c.continues_sent - s.folded.continues_sent);
    s.folded = c;
    if (s.session().proxy_result() != s.proxy_counted)
        count_proxy(s);
    s.session().fold_h2([&](const H2Counters &now, const H2Counters &was) {
        metrics.add(M_H2_SESSIONS, now.sessions - was.sessions);
        metrics.add(M_H2_UPGRADES, now.upgrades - was.upgrades);
        metrics.add(M_H2_STREAMS, now.streams - was.streams);
        metrics.add(M_H2_RESETS_BY_PEER, now.resets_by_peer - was.resets_by_peer);
        metrics.add(M_H2_REFUSED, now.refused - was.refused);
        metrics.add(M_H2_MALFORMED, now.malformed - was.malformed);
        metrics.add(M_H2_FLOODS, now.floods - was.floods);
    });
}

// The PROXY header's outcome, once a connection (it changes at most once).
void Worker::count_proxy(Slot &s) {
    using R = ProxyResult;
    R r = s.session().proxy_result();
    s.proxy_counted = r;
    switch (r) {
    case R::V1Local:
        metrics.add(M_PROXY_LOCAL);
        [[fallthrough]];
    case R::V1:
        metrics.add(M_PROXY_V1);
        break;
    case R::V2Local:
        metrics.add(M_PROXY_LOCAL);
        [[fallthrough]];
    case R::V2:
        metrics.add(M_PROXY_V2);
        break;
    case R::Missing:
        metrics.add(M_PROXY_MISSING);
        break;
    case R::Malformed:
        metrics.add(M_PROXY_MALFORMED);
        break;
    case R::Untrusted:
        metrics.add(M_PROXY_UNTRUSTED);
        break;
    case R::Oversized:
        metrics.add(M_PROXY_OVERSIZED);
        break;
    case R::Timeout:
        metrics.add(M_PROXY_TIMEOUTS);
        break;
    case R::None:
        break;
    }
}

// Every connection enters here, whatever brought it: an accept (an image
// with only fd and peer), a sibling's hand-off, or a detached connection's
// image with its counters and unread bytes. The image's fd is the slot's
// from here on.
void Worker::admit(ConnImage &img) {
    // A new connection (an accept or a sibling's hand-off: no id yet) owes
    // its PROXY header; a moved one read it where it was (its image's peer
    // is the proxied one), or came from an engine that asks for none.
    bool fresh = img.id == 0;
    bool owes_proxy = fresh && engine_.cfg().proxy_protocol == WEIR_PROXY_ON;
    int fd = img.fd;
    img.fd = -1;
    if (nodelay_) { // socket options are the adopter's: re-applied whatever the source set
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    Slot *sp = alloc_slot();
    if (!sp) {
        metrics.close(WEIR_CLOSE_RESOURCE);
        conn_closed(img.id, WEIR_CLOSE_RESOURCE, img.peer, img.peer_len, fd);
        ::close(fd);
        log_once(LOG_NO_MEMORY, "out of memory for a connection slot; connection closed");
        return;
    }
    Slot &s = *sp;
    if (img.peer_len == 0) {
        // A multishot accept gives no address: asked here, once.
        img.peer_len = sizeof img.peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr *>(&img.peer), &img.peer_len) < 0)
            img.peer_len = 0;
    }
    new (s.mem) Session(engine_.settings(), *pool_, img.id ? img.id : engine_.next_conn_id(), fresh);
    s.in_use = true;
    s.fd = fd;
    s.ops = 0;
    s.gone.store(false, std::memory_order_relaxed);
    s.peer_left.store(false, std::memory_order_relaxed);
    s.gone_reported = false;
    s.dirty = s.input_paused = s.retry_queued = s.eof = s.broken = s.activity = s.progress = false;
    s.leaving = nullptr;
    s.leaving_to = nullptr;
    s.upgrade_handle = 0;
    s.body_handle = 0;
    s.answered = false;
    s.proxy_counted = ProxyResult::None;
    // A moved connection's clocks restart here (docs/reliability.md: it
    // moves at a request boundary, so at most a head's start is restarted).
    s.bind.reset(img.requests + 1, now_ms_);
    s.peer.set(img.peer, img.peer_len); // a long address without memory: none, as when the kernel gave none
    s.live_prev = nullptr;
    s.live_next = live_;
    if (live_)
        live_->live_prev = &s;
    live_ = &s;
    live_count_++;
    metrics.add(M_CONNECTIONS_OPEN);
    if (fresh) // a moved one opened where it was accepted
        conn_opened(s);
    // The image's counts were its source's; what its bytes parse to here is ours.
    s.folded.requests = img.requests;
    s.folded.responses = img.responses;
    s.folded.parse_errors = img.parse_errors;
    s.folded.continues_sent = img.continues_sent;
    Session &c = s.session();
    if (owes_proxy && s.peer.len() == 0 && !engine_.proxy_trust().any()) {
        // Reset before its address could be asked (a multishot accept gives
        // none; getpeername then finds ENOTCONN): no source to judge, and no
        // answer could reach it. Not counted as untrusted: it may have been
        // a trusted balancer's health check that sent LOCAL and reset.
        c.close(WEIR_CLOSE_PEER);
    } else if (owes_proxy) {
        c.expect_proxy(&s.peer, engine_.proxy_trust().trusts(s.peer.sa(), s.peer.len()));
    }
    if (!c.adopt(img))
        log_once(LOG_NO_MEMORY, "out of memory for an adopted connection's bytes; connection closed");
    if (detach_to_)
        c.hold();
    if (port_->start(s) < 0) {
        log_once(LOG_BACKEND, "cannot watch an accepted connection; closed");
        c.close(WEIR_CLOSE_RESOURCE);
        close_conn(s, WEIR_CLOSE_RESOURCE);
        settle_now(s);
        return;
    }
    dispatch(s); // requests the image's bytes held
    if (stop_begun_) {
        // Admitted after begin_stop asked every connection to finish (a
        // sibling's hand-off or a transplant that raced the shutdown): the
        // same rule, or it would hold the shutdown until its grace ran out.
        s.session().close(WEIR_CLOSE_SHUTDOWN);
    }
    // Settled as soon as its handlers returned: inside a door's batch its
    // answer leaves now, not when the batch ends (DESIGN.md §4).
    settle_now(s);
}

void Worker::unlink_live(Slot &s) {
    if (s.live_prev)
        s.live_prev->live_next = s.live_next;
    else
        live_ = s.live_next;
    if (s.live_next)
        s.live_next->live_prev = s.live_prev;
    s.live_prev = s.live_next = nullptr;
    live_count_--;
    metrics.sub(M_CONNECTIONS_OPEN);
}

// The worker is done with the socket; the Conn stays (a zombie) while
// exchanges are out, and the slot while the port has operations in flight.
void Worker::close_conn(Slot &s, uint32_t reason) {
    if (s.fd < 0)
        return;
    timers_.disarm(s.timer);
    timers_.disarm(s.bind.tick);
    timers_.disarm(s.held_timer);
    fold(s);
    // Counted before the peer can see the close, so a client that saw it
    // reads consistent metrics.
    metrics.close(reason);
    engine_.overload_fd_moved(-1); // a lingering close's descriptor stays until the next sample
    if (on_conn_ && !loop_hooks().skip_close_event.load(std::memory_order_relaxed)) // the test's mutant
        conn_event(s, WEIR_CONN_CLOSE, reason);
    if (reason == WEIR_CLOSE_RESOURCE) // whatever ran out first for it was logged already, or is now
        log_once(LOG_NO_MEMORY, "out of memory or buffers for a connection; connection closed");
    bool error = lingering(reason) && !s.broken && !linger_hooks().skip_error_drain.load();
    bool unread = s.session().peer_sent_more();
    // An overload close (an idle keep-alive connection swept, or an answer
    // that closed only because keep-alive was off) was not the client's
    // idea: it may be sending its next request right now, so it always
    // lingers, as a graceful stop's does.
    // An HTTP/2 close (GOAWAY sent: drained, a protocol error, abuse) comes
    // while the peer may still be sending frames (a PING, WINDOW_UPDATEs, the
    // rest of a flood) the session will never read, and a close with them
    // unread resets, purging the GOAWAY that says why: it always lingers.
    // H2Session cannot tell unread input (peer_sent_more) from here.
    bool h2 = reason == WEIR_CLOSE_GOAWAY || reason == WEIR_CLOSE_H2_PROTOCOL || reason == WEIR_CLOSE_H2_ABUSE;
    bool always = graceful_stop(reason) || h2 ||
                  (reason == WEIR_CLOSE_OVERLOAD && !loop_hooks().overload_close_plain.load(std::memory_order_relaxed));
    if (!linger_hooks().skip_close_linger.load() && !s.broken && (error || (chosen(reason) && unread) || always))
        close_lingering(s, unread || always, trickled(reason));
    else
        port_->close(s, error);
    s.session().on_closed();
    let_go(s);
    report_gone(s);
    if (s.upgrade_handle) // answered 101, died before it could leave: the host learns
        upgrade_deliver(s, nullptr);
    if (s.body_handle)
        mark_dirty(s); // the host waits for a body that will not come: settle hands it back
    // A zombie kept for exchanges the host still holds: the handler deadline
    // (if any) still frees it.
    if (s.session().outstanding() > 0)
        timers_.arm(s.timer, TimerKind::Handler, now_ms_);
}

// A close with the peer perhaps still sending (engine's Reaper, reaper.h):
// the port lets go of the socket (epoll stops watching it, io_uring cancels
// its recv and drops what it parked), the FIN leaves, and what arrived is
// discarded. A peer that already closed, or that sent nothing past the
// request and nothing since, is closed now; one that is sending lingers in
// the reaper until its own FIN or a bound.
void Worker::close_lingering(Slot &s, bool unread, bool until_acked) {
    int fd = s.fd;
    port_->release(s);
    size_t got = 0;
    bool done = fin_and_drain(fd, 16, &got); // a peer still sending is the reaper's to read
    if (!done && (unread || got > 0) && engine_.reaper().take(fd, until_acked))
        return;
    ::close(fd);
}

// cfg.report_gone: what the host still holds comes back (once), so it can
// stop working for a client that is not there (the Go binding cancels the
// request's context): at the peer's FIN, or when the connection dies first.
// Only those a poll has handed out already (seen 1 -> 2, which
// weir_exchange_gone reports): one still on its way out is handed out once,
// as a request whose client has gone (weir_exchange_gone 1), so the host
// never mistakes a report for a new request.
void Worker::report_gone(Slot &s) {
    if (!report_gone_ || s.gone_reported || s.session().outstanding() == 0)
        return;
    s.gone_reported = true;
    s.session().each_taken([&](Exchange *x) { report_exchange_gone(x); });
}

// One exchange whose client is gone (a connection's, or an HTTP/2 stream the
// peer reset): handed back once, if the host asked (cfg.report_gone).
void Worker::report_exchange_gone(Exchange *x) {
    if (!report_gone_)
        return;
    Ticket *t = tickets_.live(x->handle) ? tickets_.at(x->handle) : nullptr;
    if (!t || t->seen.load(std::memory_order_relaxed) != 1 || !ready_room())
        return;
    t->seen.store(2, std::memory_order_relaxed);
    ready_.push_back(x->handle);
}

// The worker no longer owns s's socket (closed, or released into an image):
// foreign answers are dropped, and settle frees the slot once nothing is out.
void Worker::let_go(Slot &s) {
    s.fd = -1;
    s.gone.store(true, std::memory_order_release);
    unlink_live(s);
    mark_dirty(s);
}

// Closes every open connection at once (a forced shutdown, destroy).
void Worker::close_all(uint32_t reason) {
    while (live_) {
        Slot &s = *live_;
        s.session().close(reason);
        close_conn(s, reason);
    }
    flush();
}

// ---------------------------------------------------------------- moving

void Worker::post_image(ImageNode *n) {
    push_and_wake(handoffs_, n);
}

void Worker::detach_all_to(ImageSink *to) {
    detach_to_ = to;
    for (Slot *s = live_; s; s = s->live_next) {
        if (to)
            s->session().hold();
        else
            s->session().unhold(); // called off: what waited in the buffer is served here
        mark_dirty(*s);
    }
}

// At a request boundary: the Conn becomes an image, the port lets go of the
// fd, and the image leaves once no operation names the slot.
bool Worker::detach(Slot &s) {
    if (detach_to_->closes_at_boundary()) { // a listeners-only handover: what others do
        Session &c = s.session();
        c.close(WEIR_CLOSE_HANDOVER);
        close_conn(s, WEIR_CLOSE_HANDOVER);
        return true;
    }
    auto *n = new (std::nothrow) ImageNode;
    if (!n)
        return false; // tried again at the next settle
    if (!s.session().detach(n->img)) {
        delete n;
        return false;
    }
    n->from = this; // a refusal or a handover's return comes back here
    // A transplant's move (not a bare detach_all_to, not a handover): the
    // target counts it adopted or refused.
    if (transplant_seen_ == detach_to_ && detach_to_->transplant_target()) {
        n->ledger = engine_.ledger();
        metrics.add(M_TRANSPLANT_DETACHED);
    }
    leave(s, n, detach_to_);
    return true;
}

// A Conn lifted into n's image leaves its slot: n takes the socket, and is
// handed over (to `to`, or to the host for an upgrade: nullptr) once no
// operation names the slot.
void Worker::leave(Slot &s, ImageNode *n, ImageSink *to) {
    n->img.fd = s.fd;
    s.peer.get(&n->img.peer, &n->img.peer_len);
    timers_.disarm(s.timer);
    timers_.disarm(s.bind.tick);
    timers_.disarm(s.held_timer);
    fold(s);
    s.leaving = n; // before the release: bytes the port still holds join the image
    s.leaving_to = to;
    leaving_count_++;
    port_->release(s);
    let_go(s);
}

void Worker::input_late(Slot &s, const char *p, size_t n) {
    ConnImage &img = s.leaving->img;
    if (img.fd < 0 || n == 0)
        return; // already spoiled
    auto *nb = static_cast<char *>(std::realloc(img.unread, img.unread_len + n));
    if (!nb) {
        // The image would miss bytes of its stream: it cannot be served.
        ::close(img.fd);
        img.fd = -1;
        metrics.close(WEIR_CLOSE_RESOURCE);
        conn_closed(s, WEIR_CLOSE_RESOURCE);
        log_once(LOG_NO_MEMORY, "out of memory for a moving connection's bytes; connection closed");
        return;
    }
    std::memcpy(nb + img.unread_len, p, n);
    img.unread = nb;
    img.unread_len += n;
}

void Worker::hand_over(Slot &s) {
    ImageNode *n = s.leaving;
    s.leaving = nullptr;
    leaving_count_--;
    if (s.upgrade_handle) { // the host's, not another worker's
        upgrade_deliver(s, n);
        return;
    }
    if (n->img.fd < 0) {
        if (n->ledger)
            n->ledger->refused.fetch_add(1, std::memory_order_release);
        delete n; // spoiled by input_late (counted there)
    }
    else
        s.leaving_to->post_image(n);
    s.leaving_to = nullptr;
}

} // namespace weir
