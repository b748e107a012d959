#include "loop/reaper.h"

#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace weir {

namespace {

int64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

constexpr uint64_t kWake = ~0ull;

} // namespace

Reaper::~Reaper() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    if (thread_.joinable()) {
        uint64_t one = 1;
        ssize_t n = ::write(evfd_, &one, sizeof one);
        (void)n;
        thread_.join();
    }
    for (const Pending &p : pending_)
        ::close(p.fd);
    for (auto &e : entries_)
        ::close(e.first);
    if (epfd_ >= 0)
        ::close(epfd_);
    if (evfd_ >= 0)
        ::close(evfd_);
}

bool Reaper::start_locked() {
    if (started_)
        return thread_.joinable();
    started_ = true;
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    evfd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epfd_ < 0 || evfd_ < 0)
        return false;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWake;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev) < 0)
        return false;
    try {
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        return false;
    }
    return true;
}

bool Reaper::take(int fd, bool until_acked) {
    {
        std::lock_guard<std::mutex> g(mu_);
        if (stop_ || held_ >= kLingerMaxSockets || !start_locked())
            return false;
        try {
            pending_.push_back(Pending{fd, until_acked});
        } catch (...) {
            return false;
        }
        held_++;
    }
    uint64_t one = 1;
    ssize_t n = ::write(evfd_, &one, sizeof one);
    (void)n; // the counter only grows: a full one still wakes the thread
    lingers_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void Reaper::admit_pending() {
    std::vector<Pending> fds;
    {
        std::lock_guard<std::mutex> g(mu_);
        fds.swap(pending_);
    }
    int64_t at = now_ms() + kLingerMs;
    for (const Pending &p : fds) {
        int fd = p.fd;
        uint64_t gen = ++next_gen_;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.u64 = static_cast<uint64_t>(fd);
        bool ok = true;
        try {
            entries_[fd] = Entry{gen, 0, p.until_acked};
            due_.push_back(Due{fd, gen, at});
        } catch (...) {
            ok = false;
        }
        if (!ok || ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) < 0) {
            finish(fd, true);
            continue;
        }
        drain(fd); // what arrived before it was watched
    }
}

// Reads and discards what is there; the peer's FIN (or an error) ends the
// linger, as does the byte bound.
void Reaper::drain(int fd) {
    auto it = entries_.find(fd);
    if (it == entries_.end())
        return;
    static thread_local char sink[64 * 1024];
    for (;;) {
        ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
            it->second.bytes += static_cast<uint64_t>(n);
            if (it->second.bytes >= kLingerBytes) {
                finish(fd, true);
                return;
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int unacked = 0;
            if (it->second.until_acked && ::ioctl(fd, SIOCOUTQ, &unacked) == 0 && unacked == 0)
                finish(fd, true); // the answer and the FIN are the client's: a reset loses nothing of them
            return;
        }
        if (n < 0 && errno == EINTR)
            continue;
        finish(fd, false); // EOF, or an error (a reset: nothing left to protect)
        return;
    }
}

void Reaper::finish(int fd, bool cut) {
    entries_.erase(fd);
    ::close(fd); // also leaves the epoll set
    if (cut)
        cuts_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(mu_);
    held_--;
}

void Reaper::run() {
    epoll_event evs[64];
    for (;;) {
        int timeout = -1;
        if (!due_.empty())
            timeout = static_cast<int>(std::max<int64_t>(0, due_.front().at_ms - now_ms()));
        int n = ::epoll_wait(epfd_, evs, 64, timeout);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 == kWake) {
                uint64_t v;
                ssize_t r = ::read(evfd_, &v, sizeof v);
                (void)r;
                {
                    std::lock_guard<std::mutex> g(mu_);
                    if (stop_)
                        return;
                }
                admit_pending();
                continue;
            }
            drain(static_cast<int>(evs[i].data.u64));
        }
        // The deadline: what still lingers is closed now (a fd closed
        // earlier and reused since is a newer generation, left alone).
        int64_t now = now_ms();
        while (!due_.empty() && due_.front().at_ms <= now) {
            Due d = due_.front();
            due_.pop_front();
            auto it = entries_.find(d.fd);
            if (it != entries_.end() && it->second.gen == d.gen)
                finish(d.fd, true);
        }
    }
}

} // namespace weir
