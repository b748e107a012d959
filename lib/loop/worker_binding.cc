// The deadlines that bind, on the worker: each settle reads a connection's
// clocks (binding.h) and keeps its tick armed while some clock charges it;
// the tick judges them and cuts a client that spent its budget.
#include "loop/session.h"
#include "loop/worker.h"

namespace weir {

namespace {

uint32_t off_is_zero(uint32_t v) { return v == WEIR_DEADLINE_OFF ? 0 : v; }

} // namespace

BindLimits bind_limits_of(const weir_config &c) {
    BindLimits l;
    l.request_ms = off_is_zero(c.request_timeout_ms);
    l.body_rate = off_is_zero(c.min_body_rate);
    l.send_rate = off_is_zero(c.min_send_rate);
    l.window_ms = c.rate_window_ms;
    return l;
}

void Worker::bind_settle(Slot &s, ConnWait w) {
    if (!bind_limits_.any())
        return;
    s.bind.observe(w, session_reading(s.session()), now_ms_);
    if (!bind_limits_.charges(w))
        timers_.disarm(s.bind.tick);
    else if (!timers_.armed(s.bind.tick))
        timers_.arm(s.bind.tick, TimerKind::Bind, now_ms_); // not re-armed by progress: it is a tick
}

void Worker::bind_expired(Slot &s) {
    if (s.fd < 0)
        return;
    Session &c = s.session();
    ConnWait w = c.wait();
    s.bind.observe(w, session_reading(c), now_ms_);
    BindCut cut = s.bind.judge(bind_limits_);
    if (cut != BindCut::None) {
        // What a cut means is the session's (session.h): a 408 it then
        // settles, or a close the loop makes now.
        if (uint32_t reason = session_cut(c, cut))
            close_conn(s, reason);
        else
            mark_dirty(s);
        return;
    }
    if (bind_limits_.charges(w))
        timers_.arm(s.bind.tick, TimerKind::Bind, now_ms_);
    else
        mark_dirty(s); // the settle due this pass decides
}

} // namespace weir
