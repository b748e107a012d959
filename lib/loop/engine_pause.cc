// The engine's side of the pause linger (DESIGN.md §5, docs/pause.md): the
// commands that reach the workers and the wait of weir_engine_pause. The
// socket work happens on each worker's own thread (worker_pause.cc); here a
// command is only a new generation plus a wake, and the wait is a condition
// variable the workers notify (a listener closed, a linger ended, a worker
// exited) and shutdown notifies — never a sleep-poll loop.
#include <cerrno>
#include <chrono>

#include "loop/engine.h"
#include "loop/linger.h"

namespace weir {

// Publishes a command under mu_ so a waiter that read resumes_ sees every
// later resume, then wakes every worker: wait_timeout returns 0 while the
// generation is unseen, so a worker acts in its next pass.
int Engine::command(bool pause, uint64_t *resumes_at) {
    if (!listened_.load(std::memory_order_acquire))
        return WEIR_E_STATE;
    if (stopping())
        return WEIR_E_SHUTDOWN;
    if (handover_claimed())
        return WEIR_E_STATE; // a hot upgrade holds and hands over these listeners
    {
        std::lock_guard<std::mutex> lk(mu_);
        pause_want_.store(pause, std::memory_order_release);
        pause_gen_.fetch_add(1, std::memory_order_acq_rel);
        if (!pause) {
            resumes_++;
            cv_.notify_all();
        }
        if (resumes_at)
            *resumes_at = resumes_;
    }
    for (auto &w : workers_)
        w->wake();
    return 0;
}

int Engine::begin_pause() { return command(true, nullptr); }

int Engine::resume() { return command(false, nullptr); }

bool Engine::every_listener_closed() const {
    bool gives = !linger_hooks().pause_ignores_gives.load(std::memory_order_relaxed);
    for (auto &w : workers_)
        if (!w->finished() && (w->listener_state() != ListenerState::Closed || (gives && w->gives_open() > 0)))
            return false;
    return true;
}

int Engine::pause() {
    uint64_t resumes_at = 0;
    int rc = command(true, &resumes_at);
    if (rc < 0)
        return rc;
    // Each worker's deadline is linger_ms after its own clear; a second past
    // that covers a worker that is late to act.
    auto bound = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t{cfg_.linger_ms} + 1000);
    std::unique_lock<std::mutex> lk(mu_);
    int result = -ETIMEDOUT;
    auto ended = [&] {
        if (stopping())
            result = WEIR_E_SHUTDOWN;
        else if (resumes_ != resumes_at)
            result = -ECANCELED;
        else if (every_listener_closed())
            result = 0;
        else
            return false;
        return true;
    };
    if (!cv_.wait_until(lk, bound, ended))
        return -ETIMEDOUT;
    return result;
}

void Engine::pause_notify() {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
}

} // namespace weir
