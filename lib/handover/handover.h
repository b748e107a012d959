// A hot upgrade's two sides (docs/upgrade.md): Offer, in the running
// process, and TakeOver, in its successor. Each is a thread of its own
// talking over one SOCK_SEQPACKET Unix socket (wire.h), attached to its
// engine (it lives as long as the workers that post to it and that it posts
// to); weir_handover is the host's reference to one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loop/engine.h"
#include "weir.h"

namespace weir::handover {

struct Msg;

// What both sides share: the state and counts the host reads, the wait.
class Handover : public Attachment {
  public:
    ~Handover() override;
    // weir_handover_wait: 0 at DONE, the error at FAILED, -ETIMEDOUT.
    int wait(int64_t timeout_ns);
    virtual void stats(weir_handover_stats *out) const;
    // Ends the thread (a handover not DONE ends as a failure) and joins it.
    void stop() override;

  protected:
    explicit Handover(Engine &e);
    void set_state(uint32_t s);
    void finish(uint32_t state, int error); // DONE or FAILED, once
    void add(uint64_t weir_handover_stats::*field, uint64_t n);
    // Waits for the socket (POLLIN, and POLLOUT if `out`) or the wake, up to ms.
    void poll_once(bool out, int ms);

    Engine &e_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    weir_handover_stats st_{}; // under mu_
    int64_t moving_since_ns_ = 0;
    int sock_ = -1;
    int wake_fd_ = -1; // an eventfd: stop(), and the offer's new images
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::unique_ptr<Msg> msg_;
};

// The running process's side: the listeners, then every connection at its
// request boundary (an ImageSink its workers detach to).
class Offer final : public Handover, public ImageSink {
  public:
    static int create(Engine &e, const char *path, const weir_handover_options &o, std::shared_ptr<Offer> *out);
    ~Offer() override;
    void post_image(ImageNode *n) override;
    bool transplant_target() const override { return false; }
    bool closes_at_boundary() const override { return listeners_only_; }

  private:
    Offer(Engine &e, const weir_handover_options &o);
    void run();
    int meet();   // a successor: its hello, the listeners, its ready
    int move();   // the connections, until the successor commits
    int send_images();
    void give_back(ImageNode *n, bool to_serve);
    void fail(int err);

    std::string path_;
    int lsock_ = -1;
    uint32_t wait_ms_, deadline_ms_;
    bool listeners_only_;
    bool held_ = false;
    std::mutex in_mu_;
    std::vector<ImageNode *> incoming_; // under in_mu_, posted by the workers
    bool ended_ = false;                // under in_mu_: images go back
    bool done_ = false;                 // under in_mu_: ... to be closed
    std::deque<ImageNode *> outq_, unacked_;
    std::vector<unsigned char> batch_; // one Image message being built
    uint64_t next_seq_ = 1;
    uint64_t closes_at_start_ = 0;
};

// The successor's side: takes the listeners (synchronously, in create), then
// admits every image that comes and, at Done, lets the engine accept.
class TakeOver final : public Handover {
  public:
    static int create(Engine &e, const char *path, const weir_handover_options &o, std::shared_ptr<TakeOver> *out);
    ~TakeOver() override = default;
    void stats(weir_handover_stats *out) const override;

  private:
    explicit TakeOver(Engine &e);
    int meet(const char *path, uint32_t wait_ms);
    void run();
    int receive(std::vector<ImageNode *> &batch, ImageNode *&partial, size_t &have);
    void fail(int err);

    std::shared_ptr<Ledger> ledger_ = std::make_shared<Ledger>();
    uint64_t received_ = 0, last_holding_ = 0, received_at_report_ = 0;
    uint32_t next_worker_ = 0;
    // Test hooks (docs/upgrade.md "Testing"): WEIR_HANDOVER_TEST_CRASH.
    bool crash_after_listeners_ = false;
    uint64_t crash_after_images_ = 0;
};

int64_t now_ms();

} // namespace weir::handover
