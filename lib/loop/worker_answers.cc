// Handing requests out (inline handlers or the driven queue) and taking
// answers back: directly on the owning thread, through the MPSC queue from
// any other.
#include <cerrno>

#include "http1/response.h"
#include "loop/engine.h"
#include "loop/hooks.h"
#include "loop/worker.h"

namespace weir {

void Worker::dispatch(Slot &s) {
    Conn &c = s.conn();
    if (inline_) {
        while (Exchange *x = c.take_request()) {
            x->user = &s;
            call_handler(x);
        }
        return;
    }
    while (c.has_request()) {
        if (!ready_room()) {
            // Not a request can be handed out without its place in the queue.
            log_once(LOG_NO_MEMORY, "out of memory for the driven request queue; connection closed");
            c.close(WEIR_CLOSE_RESOURCE);
            mark_dirty(s);
            return;
        }
        Exchange *x = c.take_request();
        x->user = &s;
        ready_.push_back(x); // cannot throw: ready_room() made the room
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

void Worker::call_handler(Exchange *x) {
    cur_ex_ = x;
    cur_answered_ = cur_deferred_ = false;
    engine_.cfg().on_request(engine_.cfg().user, reinterpret_cast<weir_exchange *>(x));
    cur_ex_ = nullptr;
    if (!cur_answered_ && !cur_deferred_) {
        // The contract says answer or defer; a handler that did neither
        // would leave the connection hanging forever.
        log_once(LOG_NO_ANSWER, "on_request returned without weir_respond or weir_defer; answered 500");
        Slot &s = *static_cast<Slot *>(x->user);
        s.conn().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
        mark_dirty(s);
    }
}

int Worker::respond(Exchange *x, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                    uint32_t flags) {
    Slot &s = *static_cast<Slot *>(x->user);
    if (owner_thread()) {
        int rc = s.conn().respond(x, status, h, nh, body, len, flags);
        if (rc != -EINVAL && x == cur_ex_)
            cur_answered_ = true;
        mark_dirty(s);
        return rc;
    }
    // The same rules Conn::respond applies, so a foreign caller gets -EINVAL
    // at once rather than an answer the connection would refuse later.
    int rc = http1::validate_answer(status, h, nh, body, len);
    if (rc < 0)
        return rc;
    if (finished())
        return WEIR_E_GONE;
    if (s.gone.load(std::memory_order_acquire)) {
        // Still post, so the worker releases the exchange and frees the
        // zombie: the exchange itself is the node, so no allocation can fail
        // and leave the slot out for ever.
        if (!loop_hooks().drop_by_answer.load(std::memory_order_relaxed)) {
            post_drop(x);
        } else if (Answer *a = answer_pool_.make_drop(x)) { // the arm: the drop as it was
            push_and_wake(answers_, a);
        }
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, status, h, nh, body, len, flags);
    if (!a)
        return -ENOMEM;
    push_and_wake(answers_, a);
    return 0;
}

int Worker::defer(Exchange *x) {
    if (!inline_ || !owner_thread() || x != cur_ex_ || cur_answered_ || cur_deferred_)
        return -EINVAL;
    cur_deferred_ = true;
    return 0;
}

// Any thread: x's connection closed; the worker releases it in its next pass.
// A foreign poster like push_and_wake's, bracketed by posting_ the same way
// (see ~Worker): the drop may be taken and the engine destroyed before the
// wake returns.
void Worker::post_drop(Exchange *x) {
    posting_.fetch_add(1, std::memory_order_relaxed);
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
        s.conn().respond(x, 500, nullptr, 0, nullptr, 0, 0); // WEIR_E_GONE: x is released
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
    Slot &s = *static_cast<Slot *>(a->x->user);
    int rc = s.conn().respond(a->x, a->status, a->headers, a->num_headers, a->body, a->body_len, a->flags);
    if (rc == -EINVAL) {
        // Checked before posting, so this is a bug, not bad input: the
        // exchange still needs an answer.
        log_once(LOG_BAD_ANSWER, "a deferred answer was refused by the connection; answered 500");
        s.conn().respond(a->x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
    }
    mark_dirty(s);
    answer_pool_.give(a);
}

} // namespace weir
