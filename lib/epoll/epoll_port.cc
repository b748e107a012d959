// The epoll backend. All logic lives in the worker (lib/loop); this file only
// does I/O and reports it through the worker's port callbacks, at once: no
// operation is ever in flight, so Worker::op_begin is never needed. A file
// answer's body goes with sendfile(2) straight from the file.
#include "epoll/epoll_port.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "loop/hooks.h"
#include "loop/sock_ops.h"
#include "loop/worker.h"

namespace weir {

namespace {

constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kListenerTag = 2;
constexpr int kMaxEvents = 256;
constexpr size_t kMaxIov = 64;
// One sendfile's most: a socket takes far less at once anyway.
constexpr size_t kFileChunk = size_t{1} << 30;
constexpr uint32_t kConnEvents = EPOLLIN | EPOLLRDHUP | EPOLLET;

// epoll's part of a slot.
struct EpollSlot {
    bool out_armed;      // a write stopped short: EPOLLOUT continues it
    bool out_registered; // EPOLLOUT is in the interest set
    bool peer_hup;       // the peer's FIN (or an error) was reported: read on to the 0
};

class EpollPort final : public Port {
  public:
    ~EpollPort() override {
        if (epfd_ >= 0)
            ::close(epfd_);
        if (wake_fd_ >= 0)
            ::close(wake_fd_);
    }

    int init(Worker &w) override {
        w_ = &w;
        wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (wake_fd_ < 0)
            return -errno;
        epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (epfd_ < 0)
            return -errno;
        return ctl(EPOLL_CTL_ADD, wake_fd_, EPOLLIN | EPOLLET, kWakeTag);
    }

    int listen(int fd) override { return ctl(EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET, kListenerTag); }

    void unlisten(int fd) override { ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

    Take accept(int listen_fd, Accepted &out, bool) override { return accept_now(listen_fd, out); }

    int start(Slot &s) override {
        new (s.port) EpollSlot{};
        int rc = ctl(EPOLL_CTL_ADD, s.fd, kConnEvents, reinterpret_cast<uint64_t>(&s));
        if (rc < 0)
            return rc;
        // With TCP_DEFER_ACCEPT the request is usually here already: read it
        // now rather than wait for an edge.
        read_conn(s, 0);
        return 0;
    }

    // Edge-triggered: bytes that came while the Conn was full bring no new
    // edge, so read them now.
    void want_read(Slot &s) override { read_conn(s, 0); }

    // One gathered write of everything the Conn has, repeated only while the
    // kernel takes it all and the Conn has more (past kMaxIov segments).
    void write(Slot &s) override {
        EpollSlot &st = port_state<EpollSlot>(s);
        if (st.out_armed)
            return; // EPOLLOUT continues it
        iovec iov[kMaxIov];
        for (;;) {
            size_t k = w_->lend_output(s, iov, kMaxIov);
            if (k == 0) {
                // Every byte went: a file answer's body follows them.
                FileRange r;
                if (!w_->lend_file(s, r))
                    break;
                if (!send_file(s, r))
                    return;
                continue;
            }
            size_t want = 0;
            for (size_t i = 0; i < k; i++)
                want += iov[i].iov_len;
            // sendmsg, not writev: MSG_NOSIGNAL, weir never raises SIGPIPE.
            msghdr msg{};
            msg.msg_iov = iov;
            msg.msg_iovlen = k;
            ssize_t n;
            do
                n = ::sendmsg(s.fd, &msg, MSG_NOSIGNAL);
            while (n < 0 && errno == EINTR);
            if (n < 0) {
                int e = errno;
                if (e == EAGAIN || e == EWOULDBLOCK) {
                    w_->written(s, 0);
                    arm_out(s);
                } else {
                    w_->written(s, -e);
                }
                return;
            }
            w_->written(s, n);
            if (static_cast<size_t>(n) < want) {
                arm_out(s);
                return;
            }
        }
        if (st.out_registered) {
            // Everything left: stop hearing about writability.
            st.out_registered = false;
            ctl(EPOLL_CTL_MOD, s.fd, kConnEvents, reinterpret_cast<uint64_t>(&s));
        }
    }

    // close(2) removes the fd from the interest list (weir never dup()s it),
    // and nothing is ever in flight, so the slot may go at once.
    void close(Slot &s, bool drain) override {
        if (drain)
            fin_and_drain(s.fd);
        ::close(s.fd);
    }

    void release(Slot &s) override { ::epoll_ctl(epfd_, EPOLL_CTL_DEL, s.fd, nullptr); }

    void wait(int timeout_ms) override {
        int n = ::epoll_wait(epfd_, events_, kMaxEvents, timeout_ms);
        if (n < 0) {
            if (errno != EINTR)
                w_->log_once(LOG_BACKEND, "epoll_wait failed");
            return;
        }
        for (int i = 0; i < n; i++) {
            const epoll_event &ev = events_[i];
            if (ev.data.u64 == kWakeTag) {
                uint64_t v;
                while (::read(wake_fd_, &v, sizeof v) > 0) {
                }
                w_->woken();
            } else if (ev.data.u64 == kListenerTag) {
                w_->door_ready();
            } else {
                // Slots are freed only after the wait, so the tag is live;
                // a closed one (fd -1) has nothing left to hear.
                Slot &s = *reinterpret_cast<Slot *>(ev.data.u64);
                if (s.fd >= 0 && (ev.events & EPOLLOUT)) {
                    port_state<EpollSlot>(s).out_armed = false;
                    write(s);
                }
                if (s.fd >= 0 && (ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                    read_conn(s, ev.events);
            }
        }
    }

    void wake() override {
        uint64_t one = 1;
        ssize_t rc = ::write(wake_fd_, &one, sizeof one);
        (void)rc; // EAGAIN: the counter is full, so a wake is pending anyway
    }

    const char *name() const override { return "epoll"; }
    bool file_ranges() const override { return true; }

  private:
    int ctl(int op, int fd, uint32_t events, uint64_t tag) {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = tag;
        if (::epoll_ctl(epfd_, op, fd, &ev) < 0) {
            int e = errno;
            w_->log_once(LOG_BACKEND, "epoll_ctl failed");
            return -e;
        }
        return 0;
    }

    // sendfile(2) of the lent range; whether the socket took all of it.
    // A short send arms EPOLLOUT as for bytes (a file that shrank reads 0
    // on the next try: -ENODATA); EINVAL and kin send the answer down the
    // read path (Worker::file_written).
    bool send_file(Slot &s, const FileRange &r) {
        size_t want = r.len < kFileChunk ? static_cast<size_t>(r.len) : kFileChunk;
        ssize_t n;
        int e = loop_hooks().file_range_errno.load(std::memory_order_relaxed);
        if (e) {
            n = -1; // the fallback's arm (hooks.h): as if the kernel refused the file
        } else {
            off_t off = static_cast<off_t>(r.off);
            do
                n = ::sendfile(s.fd, r.fd, &off, want);
            while (n < 0 && errno == EINTR);
            e = n < 0 ? errno : 0;
        }
        if (n < 0) {
            if (e == EAGAIN || e == EWOULDBLOCK) {
                w_->file_written(s, 0);
                arm_out(s);
            } else {
                w_->file_written(s, -e);
            }
            return false;
        }
        if (n == 0) {
            w_->file_written(s, -ENODATA); // the file ended before the range did
            return false;
        }
        w_->file_written(s, n);
        if (static_cast<size_t>(n) < want) {
            arm_out(s);
            return false;
        }
        return true;
    }

    void arm_out(Slot &s) {
        EpollSlot &st = port_state<EpollSlot>(s);
        st.out_armed = true;
        if (!st.out_registered) {
            st.out_registered = true;
            ctl(EPOLL_CTL_MOD, s.fd, kConnEvents | EPOLLOUT, reinterpret_cast<uint64_t>(&s));
        }
    }

    // Reads until the socket is dry (a short read means it was, at that
    // moment: later bytes bring a new edge) or the Conn has no room. A read
    // that finds nothing is reported too: a connection that has sent
    // nothing gives its buffers back.
    void read_conn(Slot &s, uint32_t events) {
        EpollSlot &st = port_state<EpollSlot>(s);
        if (s.eof) {
            if (events & (EPOLLERR | EPOLLHUP))
                w_->input_end(s, ECONNRESET);
            return;
        }
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            st.peer_hup = true;
        for (;;) {
            iovec space = w_->lend_input(s);
            if (space.iov_len == 0) {
                if (events & EPOLLERR)
                    w_->input_end(s, ECONNRESET);
                return;
            }
            ssize_t n;
            do
                n = ::read(s.fd, space.iov_base, space.iov_len);
            while (n < 0 && errno == EINTR);
            if (n <= 0) {
                int e = n < 0 ? errno : 0;
                w_->input(s, 0); // the lend comes back empty
                if (n == 0)
                    w_->input_end(s, 0);
                else if (e != EAGAIN && e != EWOULDBLOCK)
                    w_->input_end(s, e);
                return;
            }
            if (!w_->input(s, static_cast<size_t>(n)))
                return;
            // After the peer's FIN no new edge will come: read on to the 0.
            if (static_cast<size_t>(n) < space.iov_len && !st.peer_hup)
                return;
        }
    }

    Worker *w_ = nullptr;
    int epfd_ = -1;
    int wake_fd_ = -1;
    epoll_event events_[kMaxEvents];
};

} // namespace

std::unique_ptr<Port> make_epoll_port() { return std::unique_ptr<Port>(new (std::nothrow) EpollPort); }

} // namespace weir
