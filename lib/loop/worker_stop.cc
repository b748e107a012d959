// Shutdown (stop accepting, let in-flight exchanges finish within the grace,
// then close what is left) and the driven host's poll.
#include <unistd.h>

#include <climits>

#include "loop/engine.h"
#include "loop/worker.h"

namespace weir {

// Stop accepting: admit what siblings handed over, close the listener, clear
// both doors; ask every connection to finish (idle ones close at once).
void Worker::begin_stop() {
    stop_begun_ = true;
    handoff_door_.ready = true;
    run_batch(handoff_door_, 0, now_ms_, retry_ms_, [this] { return admit_handoff(); });
    door_clear(handoff_door_);
    // The listener closes before what the backend took is dropped: from
    // here the kernel refuses new connections (and resets what its own
    // queue held, as any close does). Drained instead, a connect flood kept
    // it open: each connection accepted only to be closed, for as long as
    // the flood lasted (the shutdown storm, test_storms.cc, saw io_uring
    // accept and reset about 5,000 in the 116 ms of one shutdown).
    if (listener_.fd >= 0)
        port_->unlisten(listener_.fd);
    listener_.close_now();
    // A listener a switch is moving here closes too (or stays with its
    // giver, if it comes later); one this worker was to give, it closed.
    inbox_.close_all();
    if (Worker *to = give_to_.exchange(nullptr, std::memory_order_acq_rel))
        to->listener_not_coming();
    drop_unadmitted();
    set_listener_state(ListenerState::Closed);
    door_clear(listen_door_);
    for (Slot *s = live_; s; s = s->live_next) {
        s->session().close(WEIR_CLOSE_SHUTDOWN);
        mark_dirty(*s);
    }
}

// What the backend took from the listener and the worker never admitted
// (a multishot accept's fds) closes with the listener, as the kernel's own
// accept queue does: counted as accepted and closed for shutdown. The
// listener is closed already (fd -1), so the port gives only what it holds
// (epoll: nothing) and never takes more from the kernel.
void Worker::drop_unadmitted() {
    Accepted a;
    for (uint32_t i = 0; i < max_connections_ && port_->accept(-1, a, false) == Take::Took; i++) {
        metrics.add(M_ACCEPTED);
        metrics.close(WEIR_CLOSE_SHUTDOWN);
        conn_closed(0, WEIR_CLOSE_SHUTDOWN, a.peer, a.peer_len, a.fd);
        ::close(a.fd);
        a = Accepted{};
    }
}

void Worker::stop_tick() {
    if (live_count_ > 0 && now_ms_ >= engine_.grace_deadline_ms()) {
        forced_ = true;
        close_all(WEIR_CLOSE_SHUTDOWN);
    }
    if (live_count_ == 0)
        finished_now();
}

void Worker::finished_now() {
    if (finished())
        return;
    port_->push(); // the last closes leave now, not at a wait that never comes
    finished_.store(true, std::memory_order_release);
    engine_.worker_finished();
}

void Worker::finish_here() {
    if (finished())
        return;
    take_ownership();
    now_ms_ = mono_ms();
    if (!stop_begun_)
        begin_stop();
    flush();
    if (live_count_ > 0)
        forced_ = true;
    close_all(WEIR_CLOSE_SHUTDOWN);
    drain_answers();
    flush();
    finished_now();
}

int Worker::poll(weir_exchange **out, uint32_t max, int timeout_ms) {
    if (finished())
        return WEIR_E_SHUTDOWN;
    if (listener_.state == ListenerState::None && !stop_begun_)
        return WEIR_E_STATE;
    take_ownership();
    accepted_in_poll_ = 0;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : mono_ms() + timeout_ms;
    bool first = true;
    while (ready_head_ == ready_.size() && !finished()) {
        int t = -1;
        if (timeout_ms >= 0) {
            int64_t rel = deadline - mono_ms();
            t = rel > 0 ? static_cast<int>(rel) : 0;
        }
        if (!first && t == 0)
            break;
        first = false;
        pass(t);
        if (host_woken_.load(std::memory_order_relaxed) && host_woken_.exchange(false, std::memory_order_acquire))
            break; // weir_worker_wake: the host has work for this thread
    }
    // Owed accepts are taken now, up to max_connections accepts' worth, so
    // one poll does not leave the backlog waiting on the host's handlers.
    while (!finished() && (listen_door_.owed || handoff_door_.owed) && accepted_in_poll_ < max_connections_)
        pass(0);
    size_t avail = ready_.size() - ready_head_;
    if (avail == 0 && finished())
        return WEIR_E_SHUTDOWN;
    size_t n = 0;
    while (n < max && ready_head_ < ready_.size()) {
        uint64_t h = ready_[ready_head_++];
        // One the handler deadline took back before the host polled it is
        // not handed out: its handle is stale already.
        if (Exchange *x = tickets_.live(h)) {
            Ticket *t = report_gone_ ? tickets_.at(h) : nullptr;
            if (t && t->seen.load(std::memory_order_relaxed) == 0)
                t->seen.store(1, std::memory_order_relaxed); // handed out: from now on a report may follow
            out[n++] = reinterpret_cast<weir_exchange *>(
                tickets_raw_pointers().load(std::memory_order_relaxed) ? reinterpret_cast<uintptr_t>(x) : h);
        } else if (tickets_.state(h) == TicketState::Upgraded)
            out[n++] = reinterpret_cast<weir_exchange *>(h); // an upgraded connection, for weir_upgrade_take
    }
    if (ready_head_ == ready_.size()) {
        ready_.clear();
        ready_head_ = 0;
    }
    return static_cast<int>(n);
}

} // namespace weir
