// The engine's side of a hot upgrade (docs/upgrade.md): listening on sockets
// the host gives, the accept hold, the deadline's cut, and what the
// handover's thread (lib/handover/) asks of the workers.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "loop/engine.h"

namespace weir {

namespace {

// A listening TCP socket (IPv4 or IPv6), or -EINVAL.
int check_listener(int fd) {
    int v = 0;
    socklen_t len = sizeof v;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0 || v != 1)
        return -EINVAL;
    len = sizeof v;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_STREAM)
        return -EINVAL;
    len = sizeof v;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || (v != AF_INET && v != AF_INET6))
        return -EINVAL;
    return 0;
}

} // namespace

int Engine::listen_fds(const int *fds, size_t n) {
    auto close_given = [&] {
        for (size_t i = 0; fds && i < n; i++)
            if (fds[i] >= 0)
                ::close(fds[i]);
    };
    int rc = 0;
    if (!fds || n == 0 || n > workers_.size())
        rc = -EINVAL;
    else if (state_ != State::Created)
        rc = WEIR_E_STATE;
    else if (stopping())
        rc = WEIR_E_SHUTDOWN;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_listener(fds[i]);
    if (rc < 0) {
        close_given();
        return rc;
    }
    size_t adopted = 0;
    for (uint32_t i = 0; i < workers_.size() && rc >= 0; i++) {
        // Past n, a worker shares a socket: both wait on its one queue.
        int fd = i < n ? fds[i] : ::fcntl(fds[i % n], F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            rc = -errno;
            break;
        }
        rc = workers_[i]->adopt_listener(fd);
        if (rc < 0) {
            if (i >= n)
                ::close(fd);
            break;
        }
        adopted = i + 1;
    }
    if (rc < 0) {
        for (uint32_t j = 0; j < adopted; j++)
            workers_[j]->drop_listener(); // closes what it adopted
        for (size_t i = adopted; i < n; i++)
            ::close(fds[i]);
        return rc;
    }
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fds[0], reinterpret_cast<sockaddr *>(&a), &len) < 0) {
        rc = -errno;
        for (auto &w : workers_)
            w->drop_listener();
        return rc;
    }
    addr_ = a;
    addr_len_ = len;
    state_ = State::Listening;
    listened_.store(true, std::memory_order_release);
    return 0;
}

void Engine::hold_accept(bool on) {
    accept_held_.store(on, std::memory_order_release);
    for (auto &w : workers_)
        w->wake();
}

void Engine::cut_now() {
    cut_gen_.fetch_add(1, std::memory_order_acq_rel);
    for (auto &w : workers_)
        w->wake();
}

int Engine::listener_fds(std::vector<int> &out) const {
    out.clear();
    for (auto &w : workers_) {
        if (w->listener_state() != ListenerState::Active)
            return WEIR_E_STATE; // pausing or paused: nothing (or not all) to hand over
        out.push_back(w->listener_fd());
    }
    return 0;
}

bool Engine::claim_handover() {
    if (transplanting_to_.load(std::memory_order_acquire))
        return false;
    bool expected = false;
    return handover_.compare_exchange_strong(expected, true);
}

void Engine::release_handover() { handover_.store(false, std::memory_order_release); }

void Engine::sink_to(ImageSink *s) {
    for (auto &w : workers_)
        w->transplant_to(s);
}

void Engine::attach(std::shared_ptr<Attachment> a) {
    std::lock_guard<std::mutex> g(mu_);
    attachments_.push_back(std::move(a));
}

uint64_t Engine::holding(bool *all_held) const {
    uint64_t n = 0;
    bool held = true;
    for (auto &w : workers_) {
        if (w->finished())
            continue;
        n += w->holding();
        held = held && w->hold_seen();
    }
    if (all_held)
        *all_held = held;
    return n;
}

} // namespace weir
