#include "loop/engine.h"

#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <new>

#include "loop/config.h"
#include "loop/hooks.h"
#include "proto/settings.h"
#include "proxy/proxy.h"
#include "util/sized.h"

namespace weir {

int64_t mono_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000 +
           loop_hooks().clock_skew_ms.load(std::memory_order_relaxed);
}

int Engine::create(const weir_config *cfg, Engine **out, PortFactory factory) {
    if (!cfg || !out)
        return -EINVAL;
    std::unique_ptr<Engine> e(new Engine);
    if (!config_resolve(cfg, &e->cfg_))
        return -EINVAL;
    weir_config &c = e->cfg_;
    if (c.mode != WEIR_MODE_INLINE && c.mode != WEIR_MODE_DRIVEN)
        return -EINVAL;
    if (c.mode == WEIR_MODE_INLINE && !c.on_request)
        return -EINVAL;
    if (c.read_buffer_size < 256)
        return -EINVAL;
    if (resolve_numeric(c.host, c.port, &e->addr_, &e->addr_len_) < 0)
        return -EINVAL;
    e->host_ = c.host;
    c.host = e->host_.c_str();
    uint32_t n = c.workers;
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? static_cast<uint32_t>(cpus) : 1;
    }
    if (n > 1024)
        return -EINVAL;
    c.workers = n;
    // The PROXY protocol: the list copied (cfg_ never points at the caller's
    // memory) and parsed once, for every accept.
    if (c.proxy_protocol != WEIR_PROXY_OFF && c.proxy_protocol != WEIR_PROXY_ON)
        return -EINVAL;
    if (c.proxy_max_bytes < proxy::kV2Fixed + proxy::kV2UnixBlock || c.proxy_max_bytes > proxy::kV2Max)
        return -EINVAL;
    if (!e->proxy_trust_.parse(c.proxy_trusted))
        return -EINVAL;
    if (c.proxy_trusted) {
        e->proxy_trusted_ = c.proxy_trusted;
        c.proxy_trusted = e->proxy_trusted_.c_str();
    }
    // What every connection's session is configured with (proto/settings.h).
    if (!session_settings(c, &e->settings_))
        return -EINVAL;
    // A window shorter than a few passes would judge a rate on one read's
    // luck; WEIR_DEADLINE_OFF is no window (the rates have their own off).
    if (c.rate_window_ms < 10 || c.rate_window_ms == WEIR_DEADLINE_OFF)
        return -EINVAL;
    if (int rc = e->set_overload(c); rc < 0)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        std::unique_ptr<Port> port;
        int prc = factory(c.backend, &port);
        if (prc == WEIR_E_UNAVAILABLE) {
            char msg[200];
            std::snprintf(msg, sizeof msg, "backend %s unavailable: %s",
                          backend_long_name(c.backend), backend_unavailable_reason(c.backend));
            e->log_once(LOG_BACKEND, WEIR_LOG_ERROR, msg);
        }
        if (prc < 0)
            return prc; // -EINVAL for an unknown backend, WEIR_E_UNAVAILABLE, -ENOMEM
        std::unique_ptr<Worker> w(new (std::nothrow) Worker(*e, i, std::move(port)));
        if (!w)
            return -ENOMEM;
        int rc = w->init();
        if (rc < 0)
            return rc;
        e->workers_.push_back(std::move(w));
    }
    *out = e.release();
    return 0;
}

Engine::~Engine() {
    std::vector<std::shared_ptr<Attachment>> att;
    {
        std::lock_guard<std::mutex> g(mu_);
        att = attachments_;
    }
    for (auto &a : att)
        a->stop(); // a handover not ended by its host ends now, the workers still there
    {
        // Targets stop giving refused images back (Worker::refuse): from here
        // on they close them themselves.
        std::lock_guard<std::mutex> g(ledger_->mu);
        ledger_->source_alive = false;
    }
    if (state_ == State::Listening && cfg_.mode == WEIR_MODE_DRIVEN) {
        // destroy comes after the hosts stopped polling: nobody runs these
        // loops any more, so finish them here instead of waiting for polls.
        grace_deadline_ms_.store(mono_ms(), std::memory_order_release);
        stopping_.store(true, std::memory_order_release);
        state_ = State::Stopped;
    }
    shutdown(0);
    for (auto &w : workers_)
        w->finish_here(); // driven workers whose hosts stopped polling early
    workers_.clear();
    std::lock_guard<std::mutex> g(mu_);
    attachments_.clear();
}

int Engine::listen() {
    if (state_ != State::Created)
        return WEIR_E_STATE;
    if (stopping())
        return WEIR_E_SHUTDOWN;
    ListenOptions opt;
    opt.backlog = cfg_.backlog;
    opt.defer_accept = cfg_.defer_accept != 0;
    sockaddr_storage a = addr_;
    for (uint32_t i = 0; i < workers_.size(); i++) {
        int fd = workers_[i]->open_listener(a, addr_len_, opt);
        if (fd < 0) {
            for (uint32_t j = 0; j < i; j++)
                workers_[j]->drop_listener();
            return fd;
        }
        if (i == 0) {
            // Port 0: the first bind picked it; the siblings bind to it.
            socklen_t len = sizeof a;
            if (::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) < 0) {
                int rc = -errno;
                workers_[0]->drop_listener();
                return rc;
            }
            addr_ = a;
            addr_len_ = len;
        }
    }
    state_ = State::Listening;
    listened_.store(true, std::memory_order_release);
    return 0;
}

int Engine::addr(sockaddr_storage *ss, socklen_t *len) const {
    if (!ss || !len)
        return -EINVAL;
    if (state_ == State::Created)
        return WEIR_E_STATE;
    *ss = addr_;
    *len = addr_len_;
    return 0;
}

int Engine::start() {
    if (cfg_.mode != WEIR_MODE_INLINE || state_ != State::Listening)
        return WEIR_E_STATE;
    try {
        for (auto &w : workers_) {
            Worker *wp = w.get();
            threads_.emplace_back([wp] { wp->run(); });
        }
    } catch (...) {
        // Could not spawn them all: stop the ones that run.
        state_ = State::Started;
        shutdown(0);
        return -EAGAIN;
    }
    state_ = State::Started;
    return 0;
}

int Engine::shutdown(int64_t grace_ns) {
    int64_t now = mono_ms();
    int64_t deadline = grace_ns < 0 ? INT64_MAX : now + (grace_ns + 999999) / 1000000;
    if (shutdown_begun_.exchange(true, std::memory_order_acq_rel)) {
        // Another call is under way (any thread) or done: this one can only
        // bring the end of its grace closer (a host whose patience ran out:
        // what is left closes now), never push it back.
        int64_t cur = grace_deadline_ms_.load(std::memory_order_acquire);
        while (deadline < cur && !grace_deadline_ms_.compare_exchange_weak(cur, deadline, std::memory_order_acq_rel)) {
        }
        for (auto &w : workers_)
            w->wake();
        return 0;
    }
    if (state_ == State::Stopped)
        return 0;
    grace_deadline_ms_.store(deadline, std::memory_order_release);
    stopping_.store(true, std::memory_order_release);
    {
        // A pause() waiting on a linger is released at once.
        std::lock_guard<std::mutex> lk(mu_);
        cv_.notify_all();
    }
    for (auto &w : workers_)
        w->wake();
    int rc = 0;
    if (state_ == State::Started) {
        for (auto &t : threads_)
            t.join();
        threads_.clear();
    } else if (state_ == State::Listening && cfg_.mode == WEIR_MODE_DRIVEN) {
        // The hosts' polls do the work; wait for them, a little past the grace
        // so a host that polls on a timer still gets its last pass in.
        std::unique_lock<std::mutex> lk(mu_);
        auto all_done = [this] {
            for (auto &w : workers_)
                if (!w->finished())
                    return false;
            return true;
        };
        if (deadline == INT64_MAX)
            cv_.wait(lk, all_done);
        else
            cv_.wait_for(lk, std::chrono::milliseconds(deadline - now + 200), all_done);
        if (!all_done())
            rc = -ETIMEDOUT;
    } else {
        // No thread runs the loops (never started): stop them here.
        for (auto &w : workers_)
            w->finish_here();
    }
    for (auto &w : workers_)
        if (w->forced())
            rc = -ETIMEDOUT;
    state_ = State::Stopped;
    return rc;
}

void Engine::metrics(weir_metrics *out) const {
    const WorkerMetrics *m[1024];
    uint32_t n = 0;
    for (auto &w : workers_)
        m[n++] = &w->metrics;
    // Summed once, in full, then given out as far as out->size reaches.
    weir_metrics full{};
    full.size = sizeof full;
    metrics_sum(m, n, &full);
    // The ledger is the source's: its workers count what left, its targets
    // what they adopted or refused. Read in that order, in_flight never
    // goes below 0 (a count read later can only be larger).
    full.transplant_adopted = ledger_->adopted.load(std::memory_order_acquire);
    full.transplant_refused = ledger_->refused.load(std::memory_order_acquire);
    uint64_t settled = full.transplant_adopted + full.transplant_refused;
    full.transplant_in_flight = full.transplant_detached > settled ? full.transplant_detached - settled : 0;
    full.close_lingers = reaper_.lingers();
    full.close_linger_cuts = reaper_.cuts();
    sized::copy_out(full, out); // the C face checked out->size against the rule
}

Worker *Engine::sibling_with_room(const Worker *from) const {
    Worker *best = nullptr;
    uint64_t best_open = cfg_.max_connections;
    for (auto &w : workers_) {
        if (w.get() == from || w->finished())
            continue;
        uint64_t open = w->open_connections();
        if (open < best_open) {
            best = w.get();
            best_open = open;
        }
    }
    return best;
}

void Engine::log_once(uint32_t kind, int level, const char *msg) {
    uint32_t bit = 1u << kind;
    if (!cfg_.log || (logged_.fetch_or(bit, std::memory_order_relaxed) & bit))
        return;
    cfg_.log(cfg_.log_user, level, msg);
}

void Engine::worker_finished() {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
}

} // namespace weir
