// Where a switch leaves a listening socket for the worker that takes it over
// (docs/transplant.md, "The listener moves"). The outgoing worker stops
// hearing its listener and puts the fd here; the incoming worker adopts it
// in its next pass. The socket is never closed on the way, so its accept
// queue and its SYN-RECV queue (TCP_DEFER_ACCEPT's silent clients) move
// with it: nothing is orphaned whatever net.ipv4.tcp_migrate_req says.
//
// `promised` counts listeners a switch has told another worker to give
// here and that have not arrived (or been called off): while it is above 0
// a resume does not open a new socket (one is on its way), and when it
// drops to 0 with nothing arrived the worker opens one as a resume would.
#pragma once

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace weir {

class ListenerInbox {
  public:
    // Any thread. false once the worker stopped: the giver keeps the fd.
    bool put(int fd) {
        std::lock_guard<std::mutex> g(mu_);
        if (closed_)
            return false;
        try {
            fds_.push_back(fd);
        } catch (...) {
            return false;
        }
        has_.store(true, std::memory_order_release);
        return true;
    }
    // Owning thread.
    std::vector<int> take() {
        std::vector<int> out;
        if (!has_.load(std::memory_order_acquire))
            return out;
        std::lock_guard<std::mutex> g(mu_);
        out.swap(fds_);
        has_.store(false, std::memory_order_release);
        return out;
    }
    bool has() const { return has_.load(std::memory_order_acquire); }
    // The worker stops: what arrives later stays with its giver, and what
    // is here closes with the worker's own listener (shutdown's close).
    void close_all() {
        std::lock_guard<std::mutex> g(mu_);
        closed_ = true;
        for (int fd : fds_)
            ::close(fd);
        fds_.clear();
        has_.store(false, std::memory_order_release);
    }

    std::atomic<int> promised{0};

  private:
    std::mutex mu_;
    std::vector<int> fds_;
    bool closed_ = false;
    std::atomic<bool> has_{false};
};

} // namespace weir
