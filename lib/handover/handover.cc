// What both sides of a handover share (handover.h).
#include "handover/handover.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "handover/wire.h"

namespace weir::handover {

int64_t now_ms() { return mono_ms(); }

namespace {

int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

} // namespace

Handover::Handover(Engine &e) : e_(e), msg_(std::make_unique<Msg>()) {
    st_.state = WEIR_HANDOVER_WAITING;
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Handover::~Handover() {
    stop();
    if (sock_ >= 0)
        ::close(sock_);
    if (wake_fd_ >= 0)
        ::close(wake_fd_);
}

void Handover::stop() {
    stop_.store(true, std::memory_order_release);
    uint64_t one = 1;
    if (wake_fd_ >= 0)
        (void)!::write(wake_fd_, &one, sizeof one);
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
        thread_.join();
}

int Handover::wait(int64_t timeout_ns) {
    std::unique_lock<std::mutex> lk(mu_);
    auto over = [&] { return st_.state == WEIR_HANDOVER_DONE || st_.state == WEIR_HANDOVER_FAILED; };
    if (timeout_ns < 0)
        cv_.wait(lk, over);
    else if (!cv_.wait_for(lk, std::chrono::nanoseconds(timeout_ns), over))
        return -ETIMEDOUT;
    return st_.state == WEIR_HANDOVER_DONE ? 0 : st_.error;
}

void Handover::stats(weir_handover_stats *out) const {
    weir_handover_stats s;
    {
        std::lock_guard<std::mutex> g(mu_);
        s = st_;
        if (s.state == WEIR_HANDOVER_MOVING)
            s.moving_ns = static_cast<uint64_t>(now_ns() - moving_since_ns_);
    }
    size_t n = out->size < sizeof s ? out->size : sizeof s;
    s.size = out->size;
    std::memcpy(out, &s, n);
}

void Handover::set_state(uint32_t s) {
    std::lock_guard<std::mutex> g(mu_);
    st_.state = s;
    if (s == WEIR_HANDOVER_MOVING)
        moving_since_ns_ = now_ns();
}

void Handover::finish(uint32_t state, int error) {
    std::lock_guard<std::mutex> g(mu_);
    if (st_.state == WEIR_HANDOVER_DONE || st_.state == WEIR_HANDOVER_FAILED)
        return;
    if (st_.state == WEIR_HANDOVER_MOVING)
        st_.moving_ns = static_cast<uint64_t>(now_ns() - moving_since_ns_);
    st_.state = state;
    st_.error = error;
    cv_.notify_all();
}

void Handover::add(uint64_t weir_handover_stats::*field, uint64_t n) {
    std::lock_guard<std::mutex> g(mu_);
    st_.*field += n;
}

void Handover::poll_once(bool out, int ms) {
    pollfd p[2] = {{sock_, static_cast<short>(POLLIN | (out ? POLLOUT : 0)), 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, ms) > 0 && (p[1].revents & POLLIN)) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof v);
    }
}

} // namespace weir::handover
