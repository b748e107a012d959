// A worker's side of the listener a switch moves (docs/transplant.md, "The
// listener moves"; listener_inbox.h). weir_engine_switch(from, to) tells
// worker i of `to` that a listener is coming and worker i of `from` to give
// it; both act in their own pass, before the pause tick.
//
// Giving: stop hearing the listener (io_uring: the multishot accept is
// cancelled and its last completion reaped, so no ring but the next one
// accepts on it), admit what the backend already took from it (held at
// admission: the transplant moves them too), then put the fd in the
// taker's inbox. The socket stays open throughout, so nothing in its accept
// queue or SYN-RECV queue is reset, whatever net.ipv4.tcp_migrate_req says.
// Taking: the engine's own options on the fd (TCP_DEFER_ACCEPT, backlog),
// then heard by this worker's port, as a listener it opened.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "loop/engine.h"
#include "loop/linger.h"
#include "loop/sock_ops.h"
#include "loop/worker.h"

namespace weir {

namespace {

void hook_event(uint32_t worker, LingerEvent ev) {
    if (auto f = linger_hooks().on_event.load(std::memory_order_acquire))
        f(worker, ev);
}

bool open_state(ListenerState s) { return s == ListenerState::Active || s == ListenerState::Lingering; }

} // namespace

void Worker::give_listener_to(Worker *to) {
    if (to)
        gives_open_.fetch_add(1, std::memory_order_acq_rel); // before the command can be taken
    // A command not acted on yet is replaced: its taker hears that nothing
    // is coming (a switch back before this worker gave: it keeps its own).
    if (Worker *old = give_to_.exchange(to, std::memory_order_acq_rel)) {
        old->listener_not_coming();
        gives_open_.fetch_sub(1, std::memory_order_acq_rel);
    }
    wake();
}

void Worker::listener_not_coming() {
    inbox_.promised.fetch_sub(1, std::memory_order_acq_rel);
    wake();
}

bool Worker::receive_listener(int fd) {
    if (!inbox_.put(fd))
        return false;
    // After the put: a reader never sees neither the promise nor the fd.
    inbox_.promised.fetch_sub(1, std::memory_order_acq_rel);
    wake();
    return true;
}

bool Worker::give_pending() const {
    if (inbox_.has())
        return true;
    bool waiting = inbox_.promised.load(std::memory_order_acquire) > 0;
    if (give_to_.load(std::memory_order_acquire) && (open_state(listener_.state) || !waiting))
        return true;
    return reopen_owed_ && !waiting;
}

void Worker::give_tick() {
    taken_in_ = false;
    for (int fd : inbox_.take())
        take_in(fd);
    bool waiting = inbox_.promised.load(std::memory_order_acquire) > 0;
    if (give_to_.load(std::memory_order_acquire) && (open_state(listener_.state) || !waiting)) {
        // With no listener and one promised (a switch back that came while
        // the listener was still on its way here), the command waits for it.
        if (Worker *to = give_to_.exchange(nullptr, std::memory_order_acq_rel)) {
            if (open_state(listener_.state) && !stop_begun_)
                give_out(to);
            else
                to->listener_not_coming();
            // Done with `to`: only now may a pause waiter return (and its
            // host destroy `to`'s engine). TSan found a pause that returned
            // on the listener's Closed (set before the hand-off) while this
            // worker was still inside to->wake().
            if (int ms = linger_hooks().give_done_delay_ms.load(std::memory_order_relaxed))
                std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            gives_open_.fetch_sub(1, std::memory_order_acq_rel);
            engine_.pause_notify();
        }
    }
    // One arrived after this engine was switched away again: it pauses as
    // the engine asks (the linger), as a listener of its own would have.
    if (taken_in_ && listener_.state == ListenerState::Active && engine_.pause_wanted())
        pause_begin();
    if (reopen_owed_ && !waiting && !inbox_.has() && !stop_begun_ && listener_.state == ListenerState::Closed &&
        !engine_.pause_wanted())
        reopen_listener(); // the promise was called off: a resume's new socket after all
}

void Worker::give_out(Worker *to) {
    int fd = listener_.fd;
    port_->unlisten(fd);
    // Only what the backend already took (a multishot accept's fds): fd -1
    // makes the port give those and never take from the kernel's queue,
    // which moves with the socket.
    listen_door_.ready = true;
    BatchResult r = run_batch(listen_door_, 0, now_ms_, retry_ms_, [this] {
        Accepted a;
        Take t = port_->accept(-1, a, false);
        return t == Take::Took ? accepted(t, a) : Take::Empty;
    });
    if (r.ran)
        metrics.add(M_ACCEPT_BATCHES);
    door_clear(listen_door_);
    listener_.fd = -1;
    defer_cleared_ = false; // the taker sets the option as its engine wants
    set_listener_state(ListenerState::Closed);
    if (!to->receive_listener(fd)) {
        // The taker stopped first: this worker keeps it, and pauses it as
        // its engine asks.
        to->listener_not_coming();
        take_in(fd);
        return;
    }
    hook_event(index_, LingerEvent::Given);
    engine_.pause_notify(); // weir_engine_pause counts it closed here
}

void Worker::take_in(int fd) {
    if (stop_begun_) {
        ::close(fd); // shutting down: closed as the worker's own listener was
        return;
    }
    if (open_state(listener_.state)) {
        // Two listeners for one worker (both engines were listening): the
        // one that came is emptied into this worker and closed.
        drain_and_close(fd);
        return;
    }
    const weir_config &c = engine_.cfg();
    listener_deferred_ = c.defer_accept != 0;
    if (int rc = defer_accept_set(fd, listener_deferred_ ? kDeferAcceptSeconds : 0); rc < 0)
        pause_failure(M_PAUSE_SETSOCKOPT_ERRORS, LOG_PAUSE_SETSOCKOPT, "TCP_DEFER_ACCEPT on a moved listener", rc);
    ::listen(fd, static_cast<int>(c.backlog)); // this engine's backlog; the queue is kept
    defer_cleared_ = false;
    if (!hold_) {
        if (int rc = port_->listen(fd); rc < 0) {
            log_once(LOG_BACKEND, "switch: cannot hear a moved listener; drained and closed");
            drain_and_close(fd);
            return;
        }
    }
    listener_.fd = fd;
    set_listener_state(ListenerState::Active);
    listen_door_.ready = true; // its queue filled while it moved
    reopen_owed_ = false;
    taken_in_ = true;
    hook_event(index_, LingerEvent::Taken);
    engine_.pause_notify();
}

// Every connection the listener holds is admitted here, then it closes: a
// close like the linger's last, with the same window (docs/pause.md).
void Worker::drain_and_close(int fd) {
    Door d;
    d.ready = true;
    BatchResult r = run_batch(d, 0, now_ms_, retry_ms_, [this, fd] {
        Accepted a;
        return accepted(accept_now(fd, a), a);
    });
    if (r.ran)
        metrics.add(M_ACCEPT_BATCHES);
    metrics.add(M_PAUSE_DRAIN_ACCEPTED, r.taken);
    ::close(fd);
    metrics.add(M_PAUSE_CLOSES);
}

} // namespace weir
