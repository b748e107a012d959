// The overload manager in the loop (issue 32; overload.h has the levels,
// docs/reliability.md "Overload" the figures). The decision is per worker:
// its in-flight exchanges and connections are its own, the descriptors the
// process's and the buffer memory the engine's (engine_overload.cc). It is
// re-made every pass before the doors and before each request is handed
// out, so a burst parsed in one pass cannot overshoot the in-flight
// watermark by more than the requests of one connection's read.
#include "loop/engine.h"
#include "loop/worker.h"

namespace weir {

namespace {

// With a level held, the wait re-checks at least this often: descriptors and
// memory can fall without an event on this worker (another worker or the
// host frees them), and a paused listener reports nothing.
constexpr int64_t kOverloadRecheckMs = 100;

} // namespace

void Worker::overload_tick() {
    const OverloadMarks &m = overload_.marks();
    if (!m.any())
        return;
    if (uint64_t c = pool_->keep_alive_cuts; c != ka_cuts_seen_) {
        metrics.add(M_OVERLOAD_KEEPALIVE_OFF, c - ka_cuts_seen_);
        ka_cuts_seen_ = c;
    }
    OverloadReadings r;
    r.inflight = tickets_.issued_now();
    r.conns = live_count_;
    if (m.fds)
        r.fds = engine_.overload_fds(now_ms_);
    if (m.mem) {
        metrics.set(M_OVERLOAD_MEM, pool_->bytes());
        r.mem = engine_.overload_mem();
    }
    uint8_t was = overload_.level();
    uint64_t engaged = overload_.engaged();
    if (overload_.update(r) == was)
        return;
    metrics.add(M_OVERLOAD_ENGAGED, overload_.engaged() - engaged);
    metrics.set(M_OVERLOAD_LEVEL, overload_.level());
    pool_->keep_alive_off = overload_.keep_alive_off();
    if (was == OVERLOAD_NONE)
        overload_sweep();
    overload_accepting();
}

// The rise to level 1 (keep-alive off): keep-alive off shapes only answers
// still to be written, so the connections already idle between requests
// would keep their descriptors and buffers for the whole idle timeout, and
// they are the cheapest to let go (Envoy's overload manager does the same).
// Each is closed now, lingering (close_conn: FIN, then the client's own; a
// request it had on its way is discarded, never answered with a reset). A
// connection that has not finished its first request is kept: a new client
// owed an answer (the 503 at level 4). Ones busy now close after their
// answer (keep-alive off), or at their settle once idle (overload_idle_close).
void Worker::overload_sweep() {
    if (stop_begun_ || detach_to_)
        return; // closing or moving them all already
    for (Slot *s = live_; s;) {
        Slot *next = s->live_next; // the close unlinks s
        if (s->session().wait() == ConnWait::Idle)
            overload_idle_close(*s);
        s = next;
    }
}

// An idle keep-alive connection while the level is >= 1: closed and counted
// (WEIR_CLOSE_OVERLOAD, overload_idle_closed). Its caller saw it idle; true
// when it closed.
bool Worker::overload_idle_close(Slot &s) {
    if (!overload_.keep_alive_off() || s.fd < 0 || stop_begun_ || detach_to_)
        return false;
    Session &c = s.session();
    if (c.counters().requests == 0 || c.wait() != ConnWait::Idle)
        return false; // its first request not yet in: a new client, answered first
    metrics.add(M_OVERLOAD_IDLE_CLOSED);
    c.close(WEIR_CLOSE_OVERLOAD);
    close_conn(s, WEIR_CLOSE_OVERLOAD);
    return true;
}

// Paused, the listener stays open and unheard, as the handover's hold keeps
// it (worker_hold.cc): a client arriving meanwhile waits in the kernel's
// queue (or, past the backlog, its SYN is retried by its kernel) instead of
// being accepted only to be dropped; io_uring's multishot accept is
// cancelled, so it takes nothing more either. What the backend had already
// taken stays for the door, admitted on resume.
void Worker::overload_accepting() {
    bool want = overload_.accept_paused();
    if (want == overload_paused_)
        return;
    overload_paused_ = want;
    bool heard = !hold_ && listener_.fd >= 0 &&
                 (listener_.state == ListenerState::Active || listener_.state == ListenerState::Lingering);
    if (want) {
        metrics.add(M_OVERLOAD_ACCEPT_PAUSES);
        if (heard)
            port_->unlisten(listener_.fd);
        return;
    }
    if (heard) {
        // Already heard again when a pause's resume reopened it meanwhile:
        // then the port refuses a second registration, and nothing is lost.
        port_->listen(listener_.fd);
        listen_door_.ready = true; // the queue filled while unheard: no edge will say so
    }
}

// Level 4: the request is answered here, never handed out. keep-alive is
// off at this level, so the last request parsed closes its connection after
// its 503 (WEIR_CLOSE_OVERLOAD), lingering when input was left unread.
void Worker::overload_refuse(Slot &s) {
    static const weir_header_t kRetry[] = {
        {{"Retry-After", 11}, {"1", 1}}, // seconds: the host is behind now, not for long
    };
    Session &c = s.session();
    Exchange *x = c.take_request();
    x->user = &s;
    c.respond(x, 503, kRetry, 1, nullptr, 0, 0);
    metrics.add(M_OVERLOAD_REFUSED);
    mark_dirty(s);
}

int64_t Worker::overload_deadline(int64_t deadline) const {
    if (overload_.level() == OVERLOAD_NONE)
        return deadline;
    int64_t at = mono_ms() + kOverloadRecheckMs;
    return at < deadline ? at : deadline;
}

} // namespace weir
