// The epoll backend: edge-triggered readiness for the wake eventfd, the
// listener and every connection; reads and writes are plain syscalls. All
// logic lives in Worker (lib/loop); this file only does I/O.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include "loop/worker.h"

namespace weir {

namespace {

constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kListenerTag = 2;
constexpr int kMaxEvents = 256;
constexpr size_t kMaxIov = 64;
constexpr uint32_t kConnEvents = EPOLLIN | EPOLLRDHUP | EPOLLET;

class EpollWorker final : public Worker {
  public:
    EpollWorker(Engine &e, uint32_t index) : Worker(e, index) {}
    ~EpollWorker() override {
        if (epfd_ >= 0)
            ::close(epfd_);
    }

  protected:
    int io_init() override {
        epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (epfd_ < 0)
            return -errno;
        return ctl(EPOLL_CTL_ADD, wake_fd_, EPOLLIN | EPOLLET, kWakeTag);
    }

    int io_add_listener(int fd) override { return ctl(EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET, kListenerTag); }

    void io_remove_listener(int fd) override { ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

    int io_add_conn(Slot &s) override { return ctl(EPOLL_CTL_ADD, s.fd, kConnEvents, reinterpret_cast<uint64_t>(&s)); }

    // close(2) removes the fd from the interest list (weir never dup()s it),
    // and closes happen only after the pass's events were handled, so no
    // stale tag is ever read.
    void io_forget_conn(Slot &) override {}

    void io_wait(int timeout_ms) override {
        int n = ::epoll_wait(epfd_, events_, kMaxEvents, timeout_ms);
        if (n < 0) {
            if (errno != EINTR)
                log_once(LOG_BACKEND, "epoll_wait failed");
            return;
        }
        for (int i = 0; i < n; i++) {
            const epoll_event &ev = events_[i];
            if (ev.data.u64 == kWakeTag) {
                uint64_t v;
                while (::read(wake_fd_, &v, sizeof v) > 0) {
                }
                on_wake();
            } else if (ev.data.u64 == kListenerTag) {
                listener_ready();
            } else {
                Slot &s = *reinterpret_cast<Slot *>(ev.data.u64);
                if (s.fd < 0)
                    continue;
                if (ev.events & EPOLLOUT)
                    conn_writable(s);
                if (ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    read_conn(s, ev.events);
            }
        }
    }

    void io_read(Slot &s) override { read_conn(s, 0); }

    // One gathered write of everything the Conn has, repeated only while the kernel
    // takes it all and the Conn has more (a long body past kMaxIov pieces).
    void io_write(Slot &s) override {
        iovec iov[kMaxIov];
        for (;;) {
            size_t k = s.conn().output_iov(iov, kMaxIov);
            if (k == 0)
                break;
            size_t want = 0;
            for (size_t i = 0; i < k; i++)
                want += iov[i].iov_len;
            // sendmsg, not writev: MSG_NOSIGNAL, weir never raises SIGPIPE.
            msghdr msg{};
            msg.msg_iov = iov;
            msg.msg_iovlen = k;
            ssize_t w = ::sendmsg(s.fd, &msg, MSG_NOSIGNAL);
            if (w < 0) {
                int e = errno;
                if (e == EINTR)
                    continue;
                if (e == EAGAIN || e == EWOULDBLOCK) {
                    arm_out(s);
                    return;
                }
                conn_output(s, -e);
                return;
            }
            conn_output(s, w);
            if (static_cast<size_t>(w) < want) {
                arm_out(s);
                return;
            }
        }
        if (s.out_registered && s.fd >= 0) {
            // Everything left: stop hearing about writability.
            s.out_registered = false;
            ctl(EPOLL_CTL_MOD, s.fd, kConnEvents, reinterpret_cast<uint64_t>(&s));
        }
    }

  private:
    int ctl(int op, int fd, uint32_t events, uint64_t tag) {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = tag;
        if (::epoll_ctl(epfd_, op, fd, &ev) < 0) {
            log_once(LOG_BACKEND, "epoll_ctl failed");
            return -errno;
        }
        return 0;
    }

    void arm_out(Slot &s) {
        s.out_armed = true;
        if (!s.out_registered) {
            s.out_registered = true;
            ctl(EPOLL_CTL_MOD, s.fd, kConnEvents | EPOLLOUT, reinterpret_cast<uint64_t>(&s));
        }
    }

    // Reads until the socket is dry (a short read means it was, at that
    // moment: later bytes bring a new edge) or the Conn has no room.
    void read_conn(Slot &s, uint32_t events) {
        if (s.eof) {
            if (events & (EPOLLERR | EPOLLHUP))
                conn_input(s, -ECONNRESET);
            return;
        }
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            s.peer_hup = true;
        for (;;) {
            iovec space = s.conn().read_space();
            if (space.iov_len == 0) {
                s.read_blocked = true;
                if (events & EPOLLERR)
                    conn_input(s, -ECONNRESET);
                return;
            }
            ssize_t n = ::read(s.fd, space.iov_base, space.iov_len);
            if (n < 0) {
                int e = errno;
                if (e == EINTR)
                    continue;
                if (e != EAGAIN && e != EWOULDBLOCK)
                    conn_input(s, -e);
                return;
            }
            if (!conn_input(s, n))
                return;
            // After the peer's FIN no new edge will come: read on to the 0.
            if (static_cast<size_t>(n) < space.iov_len && !s.peer_hup)
                return;
        }
    }

    int epfd_ = -1;
    epoll_event events_[kMaxEvents];
};

} // namespace

Worker *make_epoll_worker(Engine &engine, uint32_t index) { return new (std::nothrow) EpollWorker(engine, index); }

} // namespace weir
