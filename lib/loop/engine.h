// The engine: a config, N workers of one backend, their threads (inline mode)
// and the shutdown that ends them. The C ABI in capi/engine.cc maps
// weir_engine to Engine, weir_worker to Worker, weir_exchange to Exchange.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loop/overload.h"
#include "loop/port.h"
#include "loop/reaper.h"
#include "loop/worker.h"
#include "proto/exchange.h"
#include "proxy/trust.h"
#include "weir.h"

namespace weir {

// Something that must live as long as the engine's workers (a handover's
// thread: the workers post to it, it posts to them). The engine stops each
// before its workers stop, and frees them after the workers are gone.
class Attachment {
  public:
    virtual ~Attachment() = default;
    virtual void stop() = 0; // joins its thread; idempotent
};

class Engine {
  public:
    enum class State { Created, Listening, Started, Stopped };

    // factory: the port maker (make_port; tests pass a scripted one).
    static int create(const weir_config *cfg, Engine **out, PortFactory factory = make_port);
    ~Engine();

    int listen();
    int start();
    int shutdown(int64_t grace_ns);
    int addr(sockaddr_storage *ss, socklen_t *len) const;
    void metrics(weir_metrics *out) const;

    // Transplant and the switch (lib/transplant/transplant.cc, DESIGN.md §6). Any thread.
    int transplant(Engine *to);
    // The adaptive switch: resume `to`, transplant to it, pause this one.
    int switch_to(Engine *to);
    // Ends this engine's transplant if it goes into `into` (nullptr: wherever
    // it goes); connections it held parse on here.
    void end_transplant(Engine *into);
    const std::shared_ptr<Ledger> &ledger() const { return ledger_; }
    // Hot upgrade (engine_handover.cc, lib/handover/).
    // weir_engine_listen_fds: the workers serve these listening sockets.
    int listen_fds(const int *fds, size_t n);
    // The accept hold: listeners stay open and unheard (worker_hold.cc).
    void hold_accept(bool on);
    bool accept_held() const { return accept_held_.load(std::memory_order_acquire); }
    // The handover's deadline: every worker closes what it still holds.
    void cut_now();
    uint64_t cut_gen() const { return cut_gen_.load(std::memory_order_acquire); }
    // The listeners a handover offers, worker by worker: WEIR_E_STATE unless
    // every one is open and not pausing.
    int listener_fds(std::vector<int> &out) const;
    // One handover at a time, and never with a transplant (either way).
    bool claim_handover();
    void release_handover();
    bool handover_claimed() const { return handover_.load(std::memory_order_acquire); }
    // Every worker detaches everything to s (nullptr: called off).
    void sink_to(ImageSink *s);
    // As of each worker's last pass: the connections still held, and
    // whether every worker acted on the accept hold.
    uint64_t holding(bool *all_held) const;
    void attach(std::shared_ptr<Attachment> a);
    // Lingering closes (reaper.h). Any thread.
    Reaper &reaper() { return reaper_; }

    // The accept pause (engine_pause.cc, DESIGN.md §5). Any thread.
    int begin_pause();
    int pause();
    int resume();

    // For workers.
    const weir_config &cfg() const { return cfg_; }
    const ConnSettings &settings() const { return settings_; }
    // cfg.proxy_trusted, parsed at create (any thread: read-only since).
    const proxy::TrustList &proxy_trust() const { return proxy_trust_; }
    bool stopping() const { return stopping_.load(std::memory_order_acquire); }
    int64_t grace_deadline_ms() const { return grace_deadline_ms_.load(std::memory_order_acquire); }
    uint64_t next_conn_id() { return next_id_.fetch_add(1, std::memory_order_relaxed) + 1; }
    Worker *sibling_with_room(const Worker *from) const;
    void log_once(uint32_t kind, int level, const char *msg);
    void worker_finished();
    uint32_t worker_count() const { return static_cast<uint32_t>(workers_.size()); }
    Worker *worker(uint32_t i) const { return workers_[i].get(); }
    State state() const { return state_; }
    // The address every listener is bound to (after listen).
    const sockaddr_storage &bound_addr() const { return addr_; }
    socklen_t bound_addr_len() const { return addr_len_; }
    // A pause command reaches each worker as a new generation: the worker
    // compares it with the one it last acted on and acts on pause_wanted().
    uint64_t pause_gen() const { return pause_gen_.load(std::memory_order_acquire); }
    bool pause_wanted() const { return pause_want_.load(std::memory_order_acquire); }
    // A worker's listener closed, lingered or came back: wakes pause().
    void pause_notify();

    // The overload manager (engine_overload.cc): the watermarks, and the
    // readings kept per process and per engine. Any thread.
    const OverloadMarks &overload_marks() const { return overload_marks_; }
    // Open descriptors, sampled at most every kOverloadFdSampleMs by
    // whichever worker asks first after that.
    uint64_t overload_fds(int64_t now_ms);
    // Descriptors this engine opened (+1, an accept) or let go (-1, a
    // connection's close) since the last sample: the reading follows a
    // flood at once instead of at the next sample. Only with overload_fds set.
    void overload_fd_moved(int64_t d) {
        if (overload_marks_.fds)
            fds_drift_.fetch_add(d, std::memory_order_relaxed);
    }
    // Every worker's buffer bytes as each last published them.
    uint64_t overload_mem() const;

  private:
    Engine() = default;
    weir_config cfg_{};
    std::string host_;
    std::string proxy_trusted_; // cfg_.proxy_trusted points here (or is NULL)
    proxy::TrustList proxy_trust_;
    ConnSettings settings_{};
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::thread> threads_;
    State state_ = State::Created;
    sockaddr_storage addr_{};
    socklen_t addr_len_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> shutdown_begun_{false}; // the first shutdown call's; later ones only shorten
    std::atomic<int64_t> grace_deadline_ms_{INT64_MAX};
    std::atomic<uint64_t> next_id_{0};
    std::shared_ptr<Ledger> ledger_ = std::make_shared<Ledger>();
    Reaper reaper_;
    std::atomic<Engine *> transplanting_to_{nullptr};
    std::atomic<bool> accept_held_{false};
    std::atomic<uint64_t> cut_gen_{0};
    std::atomic<bool> handover_{false};
    std::vector<std::shared_ptr<Attachment>> attachments_; // under mu_
    std::atomic<uint32_t> logged_{0};
    std::mutex mu_;
    std::condition_variable cv_; // driven shutdown and pause() wait here
    // pause: set under mu_ (so a waiter sees them in order), read by workers
    std::atomic<bool> listened_{false};
    std::atomic<uint64_t> pause_gen_{0};
    std::atomic<bool> pause_want_{false};
    uint64_t resumes_ = 0; // under mu_
    OverloadMarks overload_marks_;
    std::atomic<uint64_t> fds_seen_{0};
    std::atomic<int64_t> fds_at_ms_{0}; // CLOCK_MONOTONIC ms: 0 is never
    std::atomic<int64_t> fds_drift_{0}; // overload_fd_moved since the sample
    int set_overload(const weir_config &c);
    int command(bool pause, uint64_t *resumes_at);
    bool every_listener_closed() const;
};

int64_t mono_ms();

} // namespace weir
