// Settling connections, and the callbacks through which the port reports.
//
// Every connection something happened to is marked dirty and settled once
// per pass (and a connection admitted inside a door's batch as soon as its
// handlers returned): its requests handed out, its output given to the port
// in one write, its timer armed for what it waits on, its close when it is
// done, and its slot freed when nothing is out any more.
#include <cerrno>

#include "loop/engine.h"
#include "loop/hooks.h"
#include "loop/linger.h"
#include "loop/session.h"
#include "loop/sock_ops.h"
#include "loop/worker.h"

namespace weir {


void Worker::mark_dirty(Slot &s) {
    if (s.dirty || &s == settling_)
        return;
    s.dirty = true;
    s.next_dirty = nullptr;
    s.prev_dirty = dirty_tail_;
    if (dirty_tail_)
        dirty_tail_->next_dirty = &s;
    else
        dirty_ = &s;
    dirty_tail_ = &s;
}

void Worker::unlink_dirty(Slot &s) {
    if (!s.dirty)
        return;
    if (s.prev_dirty)
        s.prev_dirty->next_dirty = s.next_dirty;
    else
        dirty_ = s.next_dirty;
    if (s.next_dirty)
        s.next_dirty->prev_dirty = s.prev_dirty;
    else
        dirty_tail_ = s.prev_dirty;
    s.next_dirty = s.prev_dirty = nullptr;
    s.dirty = false;
}

void Worker::flush() {
    while (dirty_) {
        Slot *s = dirty_;
        unlink_dirty(*s);
        settle(*s);
    }
}

void Worker::settle_now(Slot &s) {
    unlink_dirty(s);
    settle(s);
}

// Once per pass for every connection the pass touched: one write of all its
// output, then the timer its state calls for, a read to resume if the Conn
// has room again, a close when it is done, a detach when one is asked for and
// it is at a request boundary, and a free when a zombie is spent.
void Worker::settle(Slot &s) {
    Slot *outer = settling_;
    settling_ = &s;
    if (s.fd >= 0) {
        Session &c = s.session();
        // HTTP/2 streams the peer reset while the host held them: each is
        // told as weir_exchange_gone tells a connection's (report_gone).
        while (Exchange *x = c.take_reset()) [[unlikely]] {
            if (tickets_.live(x->handle))
                tickets_.at(x->handle)->stream_gone.store(true, std::memory_order_release);
            report_exchange_gone(x);
        }
        // Answers free pipeline room: requests the Conn already holds (it may
        // have read past max_pipeline) are handed out now, before the write,
        // so inline answers to them leave in the same write.
        // A body handed back first: reading it to its end parses the
        // requests behind it, which dispatch then hands out.
        if (s.body_handle)
            body_hand_back(s); // before the write: an inline answer leaves in it
        dispatch(s);
        if (c.streams()) {
            c.feed_files(engine_.settings().stream_window);
            publish_streams(s);
        }
        fold(s); // before the write, so a client that sees the answer sees the counts
        if (c.output_pending() > 0 && !s.broken)
            port_->write(s);
    }
    if (s.fd >= 0) {
        Session &c = s.session();
        ConnWait w = c.wait();
        if (w == ConnWait::Done || s.broken) {
            // After an error nothing more can be sent: the Conn turns zombie
            // for the exchanges still out, whose answers get WEIR_E_GONE.
            close_conn(s, c.close_reason());
        } else if (detach_to_ && c.detachable()) {
            detach(s);
        } else if (s.upgrade_handle && c.upgrade_ready()) {
            upgrade_detach(s);
        } else if (w == ConnWait::Idle && overload_idle_close(s)) {
            // closed: idle, kept alive by an answer that left before the level rose
        } else {
            TimerKind k = session_timer(w);
            // Exchanges that expire alone have the Held timer (expire_held).
            if (k == TimerKind::Handler && c.exchanges_expire_alone() &&
                !loop_hooks().h2_connection_deadline.load(std::memory_order_relaxed))
                k = TimerKind::None;
            // The head's deadline is one for the whole head (a trickle must not
            // extend it); a body's is a wait between reads, so an upload that
            // keeps coming is never cut however long it takes.
            bool rearm = k != s.timer.kind || ((k == TimerKind::Idle || k == TimerKind::Body) && s.activity) ||
                         (k == TimerKind::Output && s.progress) || (k == TimerKind::Handler && s.answered);
            if (k == TimerKind::None)
                timers_.disarm(s.timer);
            else if (rearm)
                timers_.arm(s.timer, k, now_ms_);
            bind_settle(s, w);
            if (s.input_paused && !s.eof && !s.retry_queued && c.can_read()) {
                s.retry_queued = true;
                s.next_retry = retry_;
                retry_ = &s;
            }
        }
    }
    s.activity = s.progress = s.answered = false;
    settling_ = outer;
    // A write that drained the output at once (epoll writes inside settle)
    // reports no later progress: a stream refused for room is handed back
    // in another settle now, not never.
    if (s.fd >= 0 && s.session().streams() && streams_have_room(s))
        mark_dirty(s);
    if (s.fd < 0) {
        if (s.body_handle)
            body_hand_back(s); // a zombie: the host learns its body is gone
        free_if_spent(s);
    }
}

void Worker::retry_reads() {
    Slot *r = retry_;
    retry_ = nullptr;
    while (r) {
        Slot *s = r;
        r = s->next_retry;
        s->next_retry = nullptr;
        s->retry_queued = false;
        if (s->fd >= 0 && !s->eof && s->input_paused) {
            s->input_paused = false;
            port_->want_read(*s);
        }
        mark_dirty(*s);
    }
}

void Worker::expire_timers() {
    TimerKind k;
    while (TimerNode *n = timers_.pop_expired(now_ms_, &k)) {
        Slot &s = *static_cast<Slot *>(n->owner);
        if (k == TimerKind::Bind) {
            bind_expired(s);
            continue;
        }
        if (k == TimerKind::Held) {
            expire_held(s);
            continue;
        }
        if (k == TimerKind::Handler && (s.fd < 0 || s.session().wait() == ConnWait::Handler)) {
            // The host held an exchange past handler_timeout_ms (a zombie's
            // too: it pins the slot and its buffers).
            expire_handlers(s);
            continue;
        }
        if (session_timer(s.session().wait()) != k) {
            // This pass's events moved the connection on (its head completed,
            // its output drained, its next request began) before its settle
            // re-armed the timer: the deadline was met, settle arms the next.
            mark_dirty(s);
            continue;
        }
        // The session's own deadline: what passing it means is its
        // protocol's (session.h); closing is the loop's.
        if (uint32_t reason = session_expire(s.session(), k))
            close_conn(s, reason);
        else
            mark_dirty(s);
    }
}

// ---------------------------------------------------------------- the port's callbacks

// lend_input found no room: input waits for want_read().
void Worker::no_input_room(Slot &s) {
    Session &c = s.session();
    s.input_paused = true;
    if (c.wants_close() && c.close_reason() == WEIR_CLOSE_RESOURCE)
        log_once(LOG_NO_MEMORY, "out of memory for a connection's buffers; connection closed");
    mark_dirty(s);
}

bool Worker::input(Slot &s, size_t n) {
    s.session().on_read(n);
    if (n == 0)
        return false;
    metrics.add(M_BYTES_IN, n);
    s.bind.in += n;
    s.activity = true;
    mark_dirty(s);
    dispatch(s);
    return true;
}

size_t Worker::input_lent(Slot &s, const char *p, size_t n) {
    size_t took = s.session().take_bytes(p, n);
    if (took < n)
        s.input_paused = true;
    if (took) {
        metrics.add(M_BYTES_IN, took);
        s.bind.in += took;
        s.activity = true;
        dispatch(s);
    }
    mark_dirty(s);
    return took;
}

void Worker::input_end(Slot &s, int err) {
    Session &c = s.session();
    s.eof = true;
    s.peer_left.store(true, std::memory_order_release);
    report_gone(s);
    if (err == 0) {
        c.on_eof();
    } else {
        c.close(close_for_errno(err));
        s.broken = true;
    }
    mark_dirty(s);
    dispatch(s);
}

void Worker::written(Slot &s, ssize_t n) {
    Session &c = s.session();
    if (n >= 0) {
        if (n > 0) {
            metrics.add(M_BYTES_OUT, static_cast<uint64_t>(n));
            s.bind.out += static_cast<uint64_t>(n);
            s.activity = s.progress = true;
        }
        c.on_written(static_cast<size_t>(n));
    } else {
        c.on_written(0);
        c.close(close_for_errno(static_cast<int>(-n)));
        s.broken = true;
    }
    mark_dirty(s);
}

void Worker::op_end(Slot &s) {
    if (s.ops > 0)
        s.ops--;
    if (s.ops == 0 && s.fd < 0)
        mark_dirty(s); // settle frees (or hands over) what the kernel no longer names
}

} // namespace weir
