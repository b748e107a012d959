// Lingering closes (nginx's lingering_close): a connection closed while its
// peer may still be sending — after Connection: close, a handler's close,
// an error answer, a header timeout — has its FIN sent and is then read and
// discarded until the peer's own FIN, kLingerBytes or kLingerMs, and only
// then closed. A socket closed with unread input makes the kernel send a
// reset, and the reset purges what of the last answer the peer had not yet
// received; the linger lets the answer arrive first. One reaper per engine,
// its own thread and epoll, started at the first linger, so neither backend
// carries a connection that is only being drained.
//
// A client cut for trickling (a head or a request its deadline ended) lingers
// only until it has acknowledged everything sent, the answer and the FIN
// (SIOCOUTQ 0, checked each time its bytes are read): the linger protects
// the answer from a reset, and once the client's kernel holds it there is
// nothing left to protect, while a slowloris that keeps writing would
// otherwise hold its socket to the bound, kLingerMs past its deadline.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace weir {

inline constexpr int64_t kLingerMs = 5000;            // from the FIN, in all
inline constexpr uint64_t kLingerBytes = 8ull << 20;  // discarded, in all
inline constexpr size_t kLingerMaxSockets = 16384;    // held at once; past it, closed at once

class Reaper {
  public:
    Reaper() = default;
    Reaper(const Reaper &) = delete;
    Reaper &operator=(const Reaper &) = delete;
    // Closes what still lingers (their FIN went long ago) and stops.
    ~Reaper();
    // Any thread: fd's FIN was sent and nobody else uses it; the reaper reads
    // and closes it. false: it cannot (no thread, no memory, too many): the
    // caller closes it now. until_acked: a trickling client's (above).
    bool take(int fd, bool until_acked = false);
    uint64_t lingers() const { return lingers_.load(std::memory_order_relaxed); }
    uint64_t cuts() const { return cuts_.load(std::memory_order_relaxed); }

  private:
    struct Entry {
        uint64_t gen;
        uint64_t bytes;
        bool until_acked;
    };
    struct Pending {
        int fd;
        bool until_acked;
    };
    struct Due {
        int fd;
        uint64_t gen;
        int64_t at_ms;
    };
    bool start_locked();
    void run();
    void admit_pending();
    void drain(int fd);
    void finish(int fd, bool cut);

    std::mutex mu_; // guards pending_, started_, stop_, held_
    std::vector<Pending> pending_;
    bool started_ = false;
    bool stop_ = false;
    size_t held_ = 0;
    int epfd_ = -1;
    int evfd_ = -1;
    std::thread thread_;
    // The reaper's thread only:
    std::unordered_map<int, Entry> entries_;
    std::deque<Due> due_; // in deadline order (every linger lasts kLingerMs)
    uint64_t next_gen_ = 0;
    std::atomic<uint64_t> lingers_{0};
    std::atomic<uint64_t> cuts_{0};
};

} // namespace weir
