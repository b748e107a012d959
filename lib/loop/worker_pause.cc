// A worker's side of the pause linger (DESIGN.md §5, docs/pause.md): the
// listener's ACTIVE -> LINGERING -> CLOSED states and the way back, all on
// the worker's own thread, in its pass, before the doors run.
//
//   ACTIVE -> LINGERING   raise TCP_SYNCNT to 1 when tcp_synack_retries reads
//                         0, clear TCP_DEFER_ACCEPT, take the deadline after
//                         the setsockopt returned (CLOCK_MONOTONIC).
//   LINGERING             the normal path accepts and serves (batch and all);
//                         wait_timeout caps the wait at the deadline.
//   LINGERING -> CLOSED   at the deadline: accept until EAGAIN, close, notify.
//   LINGERING -> ACTIVE   resume: the option back on the same fd.
//   CLOSED -> ACTIVE      resume: a new SO_REUSEPORT socket on the same address.
// A listener without TCP_DEFER_ACCEPT (or linger_ms == 0) goes ACTIVE ->
// CLOSED at once, its accept queue drained first: nothing on it is deferred,
// and closing with a non-empty accept queue would reset those clients.
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "loop/engine.h"
#include "loop/linger.h"
#include "loop/worker.h"

namespace weir {

namespace {

void hook_event(uint32_t worker, LingerEvent ev) {
    if (auto f = linger_hooks().on_event.load(std::memory_order_acquire))
        f(worker, ev);
}

void sleep_ms(int ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

} // namespace

void Worker::set_listener_state(ListenerState s) {
    listener_.state = s;
    pub_fd_.store(listener_.fd, std::memory_order_release);
    pub_state_.store(s, std::memory_order_release);
}

bool Worker::pause_unseen() const { return pause_seen_ != engine_.pause_gen(); }

void Worker::pause_failure(uint32_t metric, uint32_t log_kind, const char *what, int rc) {
    metrics.add(metric);
    char msg[160];
    std::snprintf(msg, sizeof msg, "pause: %s: %s", what, strerrorname_np(-rc));
    engine_.log_once(log_kind, WEIR_LOG_WARN, msg);
}

void Worker::pause_tick() {
    uint64_t gen = engine_.pause_gen();
    if (gen != pause_seen_) {
        pause_seen_ = gen;
        // The latest command wins: acting on it is idempotent, so commands
        // that came and went between two passes need no replay.
        if (!stop_begun_ && listener_.state != ListenerState::None) {
            if (engine_.pause_wanted())
                pause_begin();
            else
                pause_resume();
        }
    }
    if (listener_.state == ListenerState::Lingering && mono_ms() >= linger_deadline_ms_)
        linger_close();
}

void Worker::pause_begin() {
    reopen_owed_ = false;
    if (listener_.state != ListenerState::Active)
        return; // lingering keeps its deadline; closed stays closed
    LingerHooks &hooks = linger_hooks();
    int delay = hooks.react_delay_ms.load();
    int who = hooks.react_delay_worker.load();
    if (delay > 0 && (who < 0 || static_cast<uint32_t>(who) == index_))
        sleep_ms(delay);
    const weir_config &c = engine_.cfg();
    if (!listener_deferred_ || c.linger_ms == 0) {
        linger_close();
        return;
    }
    int fd = listener_.fd;
    // The guard first: once the option is cleared, a request sock whose
    // listener allows no SYN-ACK retransmit expires at its first timeout.
    // TCP_SYNCNT below 1 is refused by the kernel, and a guess is never
    // applied: only a sysctl that was read and is 0 calls for it.
    const char *path = hooks.sysctl_path.load();
    int retries = path ? read_synack_retries(path) : read_synack_retries();
    if (retries < 0) {
        pause_failure(M_PAUSE_SYSCTL_UNREADABLE, LOG_PAUSE_SYSCTL, "cannot read net.ipv4.tcp_synack_retries; no guard",
                      retries);
    } else if (retries == 0 && !hooks.skip_guard.load()) {
        int rc = syncnt_set(fd, 1);
        if (rc < 0)
            pause_failure(M_PAUSE_SETSOCKOPT_ERRORS, LOG_PAUSE_SETSOCKOPT, "TCP_SYNCNT=1", rc);
        else
            metrics.add(M_PAUSE_GUARDS);
    }
    // Cleared, the SYN-ACK retransmit's ACK promotes a silent client, and a
    // new one goes straight to the accept queue. If the clear fails the
    // linger still saves the clients already waiting: with a one-second
    // option the kernel promotes them at that same retransmit.
    defer_cleared_ = false;
    if (!hooks.skip_clear.load()) {
        int rc = defer_accept_set(fd, 0);
        if (rc < 0) {
            pause_failure(M_PAUSE_SETSOCKOPT_ERRORS, LOG_PAUSE_SETSOCKOPT, "clearing TCP_DEFER_ACCEPT", rc);
        } else {
            defer_cleared_ = true;
            metrics.add(M_PAUSE_DEFER_CLEARS);
        }
    }
    linger_deadline_ms_ = mono_ms() + c.linger_ms; // after the setsockopt returned
    set_listener_state(ListenerState::Lingering);
    metrics.add(M_PAUSE_LINGERS);
    listen_door_.ready = true; // whatever the clear let through is taken this pass
    hook_event(index_, LingerEvent::Clear);
}

// Accept until EAGAIN (whatever the accept queue holds is admitted and read
// now, and served by this pass's flush), then close and tell the waiters.
void Worker::linger_close() {
    // Stop hearing first, so the drain below empties everything: what the
    // backend took already (a multishot accept) and the listener's queue.
    if (listener_.fd >= 0)
        port_->unlisten(listener_.fd);
    listen_door_.ready = true;
    BatchResult r = run_batch(listen_door_, 0, now_ms_, retry_ms_, [this] { return accept_one(true); });
    if (r.ran)
        metrics.add(M_ACCEPT_BATCHES);
    metrics.add(M_PAUSE_DRAIN_ACCEPTED, r.taken);
    listener_.close_now();
    set_listener_state(ListenerState::Closed);
    door_clear(listen_door_);
    defer_cleared_ = false;
    metrics.add(M_PAUSE_CLOSES);
    engine_.pause_notify();
    hook_event(index_, LingerEvent::Close);
}

void Worker::pause_resume() {
    if (listener_.state == ListenerState::Lingering) {
        if (defer_cleared_) {
            int rc = defer_accept_set(listener_.fd, kDeferAcceptSeconds);
            if (rc < 0)
                pause_failure(M_PAUSE_SETSOCKOPT_ERRORS, LOG_PAUSE_SETSOCKOPT, "restoring TCP_DEFER_ACCEPT", rc);
            else
                metrics.add(M_PAUSE_DEFER_RESTORES);
            defer_cleared_ = false;
        }
        // TCP_SYNCNT stays at 1 if the guard raised it: the kernel refuses
        // 0 ("use the sysctl"), and one retransmit more than tcp_synack_retries
        // = 0 asks for is harmless.
        set_listener_state(ListenerState::Active);
        metrics.add(M_PAUSE_ABORTS);
        hook_event(index_, LingerEvent::Restore);
    } else if (listener_.state == ListenerState::Closed) {
        // A switch is moving a listener here (worker_give.cc): a new socket
        // would only be one more to close later. Opened after all if the
        // promise is called off.
        if (inbox_.promised.load(std::memory_order_acquire) > 0 || inbox_.has()) {
            reopen_owed_ = true;
            return;
        }
        reopen_listener();
    }
}

void Worker::reopen_listener() {
    reopen_owed_ = false;
    ListenOptions opt;
    opt.backlog = engine_.cfg().backlog;
    opt.defer_accept = listener_deferred_;
    int fd = open_listener(engine_.bound_addr(), engine_.bound_addr_len(), opt);
    if (fd < 0) {
        pause_failure(M_PAUSE_REOPEN_ERRORS, LOG_PAUSE_REOPEN, "reopening the listener", fd);
        return;
    }
    metrics.add(M_PAUSE_REOPENS);
    hook_event(index_, LingerEvent::Reopen);
}

} // namespace weir
