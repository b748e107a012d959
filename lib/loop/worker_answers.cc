// Handing requests out (inline handlers or the driven queue) and taking
// answers back: directly on the owning thread, through the MPSC queue from
// any other. Every exchange reaches the host as a ticket (loop/tickets.h):
// an answer first claims it, so a repeated or late answer is refused
// (WEIR_E_STALE) instead of reaching the request now at that address.
#include <cerrno>

#include "loop/engine.h"
#include "loop/hooks.h"
#include "loop/worker.h"
#include "proto/answer_rules.h"

namespace weir {

namespace {

bool is_head(const Exchange *x) {
    const weir_str_t &m = x->req.method;
    return m.len == 4 && m.ptr[0] == 'H' && m.ptr[1] == 'E' && m.ptr[2] == 'A' && m.ptr[3] == 'D';
}

// The least the answer occupies in the output: its body (none for HEAD) and
// its fields. An answer above max_output_bytes would only be queued to be
// aborted, so it is refused before it is taken (docs/api.md §5).
size_t answer_floor(const weir_header_t *h, size_t nh, size_t body_len, bool head) {
    size_t n = head ? 0 : body_len;
    for (size_t i = 0; i < nh; i++)
        n += h[i].name.len + h[i].value.len + 4;
    return n;
}

} // namespace

void Worker::dispatch(Slot &s) {
    Session &c = s.session();
    while (c.has_request()) {
        overload_tick(); // each handed out raises the in-flight count
        if (overload_.refusing()) {
            overload_refuse(s);
            continue;
        }
        if (!tickets_.reserve() || (!inline_ && !ready_room())) {
            // Not a request can be handed out without its handle and, driven,
            // its place in the queue.
            log_once(LOG_NO_MEMORY, "out of memory for exchange handles; connection closed");
            c.close(WEIR_CLOSE_RESOURCE);
            mark_dirty(s);
            return;
        }
        Exchange *x = c.take_request();
        x->user = &s;
        x->drop_abort = 0;
        if (c.exchanges_expire_alone()) [[unlikely]]
            held_from(s, x); // HTTP/1 pays one branch

        if (inline_) {
            call_handler(x, tickets_.issue(x, TicketState::Local, is_head(x)));
        } else {
            tickets_.issue(x, TicketState::Any, is_head(x));
            ready_.push_back(x->handle); // ready_room() made the room
        }
    }
}

// Room for one more driven request, growing the queue without throwing.
bool Worker::ready_room() {
    if (ready_.size() < ready_.capacity())
        return true;
    try {
        ready_.reserve(ready_.capacity() * 2 + 64);
    } catch (...) {
        return false;
    }
    return true;
}

void Worker::call_handler(Exchange *x, uint64_t h) {
    cur_ex_ = x;
    cur_answered_ = cur_deferred_ = false;
    engine_.cfg().on_request(engine_.cfg().user, reinterpret_cast<weir_exchange *>(h));
    cur_ex_ = nullptr;
    if (!cur_answered_ && !cur_deferred_ && tickets_.cancel(x->handle)) {
        // The contract says answer or defer; a handler that did neither
        // would leave the connection hanging forever. Its handle is stale
        // from here, so a thread it gave it to is refused, not misdelivered.
        log_once(LOG_NO_ANSWER, "on_request returned without weir_respond or weir_defer; answered 500");
        Slot &s = *static_cast<Slot *>(x->user);
        s.session().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
        mark_dirty(s);
    }
}

int Worker::respond(TicketRef &r, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                    uint32_t flags) {
    // Everything that leaves the exchange as it was is checked before the
    // claim, on every thread alike (the one failure rule, weir.h).
    if (flags & ~(WEIR_RESPOND_CLOSE | WEIR_RESPOND_ABORT))
        return -EINVAL;
    int rc = answer_check(status, h, nh, body, len);
    if (rc < 0)
        return rc;
    flags |= kAnswerChecked; // the session's own check would repeat this one (here and when posted)
    if (answer_floor(h, nh, len, r.head()) > engine_.settings().max_output_bytes)
        return -EMSGSIZE;
    bool own = owner_thread();
    Exchange *x = nullptr;
    rc = r.claim(own, &x);
    if (rc < 0)
        return rc;
    Slot &s = *static_cast<Slot *>(x->user);
    if (own && x == cur_ex_)
        cur_answered_ = true; // also when it is posted behind an interim answer (below)
    if (own && nothing_posted(r)) {
        uint64_t handle = x->handle; // x may be gone after the call (below)
        rc = s.session().respond(x, status, h, nh, body, len, flags);
        if (rc == -EINVAL) {
            // Checked above, so a bug, not bad input: the claimed exchange
            // still needs its answer.
            log_once(LOG_BAD_ANSWER, "an answer was refused by the connection; answered 500");
            s.session().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
            rc = -ENOMEM == rc ? rc : WEIR_E_GONE;
        }
        tickets_.retire(handle);
        if (x == cur_ex_)
            cur_answered_ = true;
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    if (finished())
        return WEIR_E_GONE; // the claim stays: the table goes with the worker
    if (s.gone.load(std::memory_order_acquire)) {
        // Still post, so the worker releases the exchange and frees the
        // zombie: the exchange itself is the node, so no allocation can fail
        // and leave the slot out for ever.
        if (!loop_hooks().drop_by_answer.load(std::memory_order_relaxed)) {
            post_drop(x, false);
        } else if (Answer *a = answer_pool_.make_drop(x)) { // the arm: the drop as it was
            push_and_wake(answers_, a);
        }
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, status, h, nh, body, len, flags);
    if (!a) {
        // Consumed as on the owning thread: the exchange is answered 500 and
        // its connection closed (WEIR_CLOSE_RESOURCE), with no allocation.
        post_drop(x, true);
        return -ENOMEM;
    }
    loop_hooks().posted_answers.fetch_add(1, std::memory_order_relaxed);
    push_and_wake(answers_, a);
    return 0;
}

int Worker::defer(uint64_t h) {
    if (!tickets_.live(h))
        return WEIR_E_STALE;
    if (!inline_ || !owner_thread() || !cur_ex_ || tickets_.live(h) != cur_ex_ || cur_answered_ || cur_deferred_)
        return -EINVAL;
    if (!tickets_.make_any(h))
        return -EINVAL;
    cur_deferred_ = true;
    return 0;
}

// Any thread: x's connection closed (or its answer found no memory:
// abort); the worker releases it in its next pass.
// A foreign poster like push_and_wake's, bracketed by posting_ the same way
// (see ~Worker): the drop may be taken and the engine destroyed before the
// wake returns.
void Worker::post_drop(Exchange *x, bool abort) {
    posting_.fetch_add(1, std::memory_order_relaxed);
    x->drop_abort = abort ? 1 : 0;
    Exchange *head = drops_.load(std::memory_order_relaxed);
    do {
        x->next_drop = head;
    } while (!drops_.compare_exchange_weak(head, x, std::memory_order_release, std::memory_order_relaxed));
    wake();
    posting_.fetch_sub(1, std::memory_order_release);
}

void Worker::drain_answers() {
    for (Exchange *x = drops_.exchange(nullptr, std::memory_order_acquire); x;) {
        Exchange *next = x->next_drop;
        Slot &s = *static_cast<Slot *>(x->user);
        // Read before the answer: on a dead connection it gives the
        // connection's state (x's ring) back to the pool, which may free it.
        uint64_t handle = x->handle;
        if (x->drop_abort && s.session().streaming(x))
            s.session().abort_now(WEIR_CLOSE_RESOURCE); // its head has left: no 500 can follow
        else if (x->drop_abort)
            s.session().close(WEIR_CLOSE_RESOURCE); // the 500 below then closes it, with that reason
        // A dead connection gives WEIR_E_GONE: x is released.
        s.session().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
        tickets_.retire(handle);
        s.answered = true;
        mark_dirty(s); // settle frees the slot once nothing is out
        x = next;
    }
    if (answers_.empty())
        return;
    for (MpscNode *n = answers_.take_all(); n;) {
        auto *a = static_cast<Answer *>(n);
        n = n->next;
        apply(a);
    }
}

void Worker::apply(Answer *a) {
    if (a->kind == AnswerKind::Upgrade) {
        apply_upgrade(a);
        return;
    }
    if (a->kind == AnswerKind::File) {
        apply_file(a);
        return;
    }
    if (a->kind == AnswerKind::Interim) {
        apply_interim(a);
        return;
    }
    if (a->kind != AnswerKind::Respond) {
        apply_stream(a);
        return;
    }
    Exchange *x = a->x;
    Slot &s = *static_cast<Slot *>(x->user);
    uint64_t handle = x->handle; // as drain_answers: x may be gone after the answer
    int rc = s.session().respond(x, a->status, a->headers, a->num_headers, a->body, a->body_len, a->flags);
    if (rc == -EINVAL) {
        // Checked before posting, so this is a bug, not bad input: the
        // exchange still needs an answer.
        log_once(LOG_BAD_ANSWER, "a deferred answer was refused by the connection; answered 500");
        s.session().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
    }
    tickets_.retire(handle);
    s.answered = true;
    mark_dirty(s);
    answer_pool_.give(a);
}

// The handler deadline passed for s (handler_timeout_ms): every exchange of
// it the host still holds is taken back (its handle turns stale); the first
// in request order is answered 503 and the connection closes after it, so
// the rest are dropped. One whose answer is already on its way is left to
// arrive.
void Worker::expire_handlers(Slot &s) {
    Session &c = s.session();
    bool open = s.fd >= 0;
    bool h2 = c.proto() == Session::Proto::Http2;
    if (open)
        c.close(WEIR_CLOSE_HANDLER_TIMEOUT);
    bool answered = false;
    c.each_taken([&](Exchange *x) {
        TicketState was = TicketState::Free;
        if (!tickets_.cancel(x->handle, &was))
            return;
        if (was == TicketState::Stream && c.streaming(x)) {
            c.abort_now(WEIR_CLOSE_HANDLER_TIMEOUT); // its head has left: no 503 can follow
            c.respond(x, 500, nullptr, 0, nullptr, 0, 0); // dropped: released
            return;
        }
        // HTTP/1 answers in order, so the first 503 closes and the rest are
        // dropped; on HTTP/2 each stream held gets its own 503, then the
        // connection drains (the close above is a GOAWAY there).
        if (open && h2 && c.respond(x, 503, nullptr, 0, nullptr, 0, 0) == 0)
            return;
        if (open && !answered && c.respond(x, 503, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE) == 0)
            answered = true;
        else
            c.respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE); // dropped: released
    });
    mark_dirty(s);
}

// x is the host's from now (taken, or worked on: a streamed answer's piece,
// a body read): for a session whose exchanges expire one by one, its
// handler deadline counts from here, and the slot's Held timer runs while
// any is held (at the oldest's deadline: expire_held moves it on). The
// clock is read here, not now_ms_: requests are taken while the port
// reports, before the pass reads the time its wait ended.
void Worker::held_from(Slot &s, Exchange *x) {
    if (!s.session().exchanges_expire_alone())
        return;
    x->host_ms = mono_ms();
    if (!timers_.armed(s.held_timer) && !loop_hooks().h2_connection_deadline.load(std::memory_order_relaxed))
        timers_.arm(s.held_timer, TimerKind::Held, x->host_ms);
}

// The Held timer fired: each exchange the host has held past
// handler_timeout_ms since it took it or last worked on it is taken back
// alone (its handle turns stale) and answered 503, or its stream reset
// once its answer began; the connection and the other streams go on
// (HTTP/1's whole-connection rule is expire_handlers). Exchanges that wait
// for the peer (a body arriving, an answer held by the peer's window) are
// the body and write deadlines' to judge: their clock starts again. The
// timer moves to the next oldest's deadline.
void Worker::expire_held(Slot &s) {
    if (s.fd < 0)
        return; // closed: the zombie's Handler timer frees what is left
    Session &c = s.session();
    const int64_t dur = timers_.duration(TimerKind::Held);
    int64_t oldest = INT64_MAX;
    bool cut = false;
    c.each_taken([&](Exchange *x) {
        TicketState st = tickets_.state(x->handle);
        if (st != TicketState::Local && st != TicketState::Any && st != TicketState::Stream)
            return; // its answer is given (or on its way): the host's part is over
        if (c.waits_for_peer(x))
            x->host_ms = now_ms_;
        if (x->host_ms + dur > now_ms_) {
            oldest = x->host_ms < oldest ? x->host_ms : oldest;
            return;
        }
        TicketState was = TicketState::Free;
        if (!tickets_.cancel(x->handle, &was))
            return; // claimed by an answer in this instant: it arrives
        cut = true;
        metrics.add(M_H2_HANDLER_TIMEOUTS);
        if (was == TicketState::Stream && c.streaming(x)) {
            c.stream_abort(x); // its head has left: no 503 can follow
            return;
        }
        if (c.respond(x, 503, nullptr, 0, nullptr, 0, 0) != 0)
            c.respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE); // dropped: released
    });
    if (oldest != INT64_MAX)
        timers_.arm_at(s.held_timer, TimerKind::Held, oldest + dur);
    if (cut)
        mark_dirty(s);
}

} // namespace weir
