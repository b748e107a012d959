// A connection on io_uring: its multishot recv (bytes land in provided
// buffers the Conn copies from), its sends (straight from the Conn's output
// segments, which never move while lent; a file answer's body is spliced,
// uring_splice.cc), and its close.
//
// Back-pressure: when the Conn cannot take a buffer's bytes, the rest is
// parked in that buffer and the recv is cancelled, so one stalled
// connection holds a bounded share of the ring; want_read() hands the parked
// bytes over, in order, and arms the recv again. A recv that finds the ring
// empty (-ENOBUFS) ends; it is re-armed once half the ring is back.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "loop/sock_ops.h"
#include "uring/uring_impl.h"
#include "uring/uring_port.h"
#include "util/tsan.h"
#include "weir.h"

namespace weir {

int UringPort::start(Slot &s) {
    new (s.port) UringSlot{};
    // The request is usually here already (TCP_DEFER_ACCEPT): read it now, so
    // an admission in a door's batch is answered inside it (DESIGN.md §4).
    eager_read(s);
    if (s.fd >= 0 && !s.eof && !s.input_paused) {
        // A recv armed for a connection that will read no more (its request
        // said Connection: close, or the pipeline is full) would only be
        // cancelled again: wait for want_read instead.
        if (s.session().can_read())
            arm_recv(s);
        else
            s.input_paused = true;
    }
    return 0;
}

void UringPort::eager_read(Slot &s) {
    iovec space = w_->lend_input(s);
    if (space.iov_len == 0)
        return;
    ssize_t n;
    do
        n = ::recv(s.fd, space.iov_base, space.iov_len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    int e = n < 0 ? errno : 0;
    w_->input(s, n > 0 ? static_cast<size_t>(n) : 0);
    if (n == 0)
        w_->input_end(s, 0);
    else if (n < 0 && e != EAGAIN && e != EWOULDBLOCK)
        w_->input_end(s, e);
}

void UringPort::arm_recv(Slot &s) {
    UringSlot &st = port_state<UringSlot>(s);
    if (st.recv_armed || s.fd < 0)
        return;
    io_uring_sqe *q = sqe();
    if (!q) {
        w_->input_end(s, ENOMEM);
        return;
    }
    io_uring_prep_recv_multishot(q, s.fd, nullptr, 0, 0);
    q->flags |= IOSQE_BUFFER_SELECT;
    q->buf_group = bufs_.group();
    io_uring_sqe_set_data64(q, reinterpret_cast<uint64_t>(&s) | kRecv);
    st.recv_armed = true;
    st.recv_cancel = false;
    recvs_armed_++;
    begin_op(s);
}

void UringPort::on_recv(Slot &s, const Cqe &c) {
    UringSlot &st = port_state<UringSlot>(s);
    bool more = c.flags & IORING_CQE_F_MORE;
    if (c.flags & IORING_CQE_F_BUFFER) {
        auto bid = static_cast<uint16_t>(c.flags >> IORING_CQE_BUFFER_SHIFT);
        bufs_.took();
        if (c.res > 0)
            deliver(s, bid, 0, static_cast<uint32_t>(c.res));
        else
            bufs_.give(bid);
    }
    if (!more && st.recv_armed) {
        st.recv_armed = false;
        recvs_armed_--;
    }
    if (s.fd >= 0) {
        if (c.res == 0) {
            end(s, 0);
        } else if (c.res == -ENOBUFS) {
            w_->metrics.add(M_URING_NOBUFS);
            if (!st.nobufs) {
                st.nobufs = true;
                try {
                    nobufs_.push_back(&s);
                } catch (...) {
                    st.nobufs = false;
                    w_->input_end(s, ENOMEM);
                }
            }
        } else if (c.res < 0 && c.res != -ECANCELED) {
            end(s, -c.res);
        } else if (!more && c.res > 0 && !st.recv_cancel && st.parked == 0 && !s.eof) {
            // The kernel ended it with bytes (a full CQ among other causes).
            w_->metrics.add(M_URING_REARMS);
            arm_recv(s);
        } else if (!more && st.recv_cancel && st.parked == 0 && !s.eof && !s.input_paused && !st.nobufs) {
            // Cancelled because bytes were parked, and want_read came (the
            // Conn took them) before this last CQE: arm_recv found the recv
            // still armed then and did nothing, so nothing would read again.
            arm_recv(s);
        }
    }
    if (!more)
        end_op(s); // last: it may settle and free the slot
}

// n bytes of buffer bid (from off) for s, in stream order: behind anything
// already parked, else to the Conn, and what it cannot take is parked.
void UringPort::deliver(Slot &s, uint16_t bid, uint32_t off, uint32_t len) {
    UringSlot &st = port_state<UringSlot>(s);
    if (s.fd < 0) {
        // Released into an image: the bytes go with it. Closed: dropped.
        if (s.leaving)
            w_->input_late(s, bufs_.buf(bid) + off, len);
        bufs_.give(bid);
        return;
    }
    size_t took = st.parked ? 0 : w_->input_lent(s, bufs_.buf(bid) + off, len);
    if (took == len) {
        bufs_.give(bid);
        return;
    }
    parked_.push_back(Parked{&s, bid, off + static_cast<uint32_t>(took), len - static_cast<uint32_t>(took)});
    st.parked++;
    if (st.recv_armed && !st.recv_cancel) {
        cancel(reinterpret_cast<uint64_t>(&s) | kRecv);
        st.recv_cancel = true;
    }
}

// The peer's FIN (0) or an error: after the bytes that came before it.
void UringPort::end(Slot &s, int err) {
    UringSlot &st = port_state<UringSlot>(s);
    if (st.parked) {
        st.end_parked = true;
        st.end_err = err;
        return;
    }
    if (!s.eof)
        w_->input_end(s, err);
}

// Parked bytes to the Conn, in order. Returns whether none is left.
bool UringPort::unpark(Slot &s) {
    UringSlot &st = port_state<UringSlot>(s);
    for (size_t i = 0; i < parked_.size() && st.parked;) {
        Parked &p = parked_[i];
        if (p.s != &s) {
            i++;
            continue;
        }
        size_t took = s.fd >= 0 ? w_->input_lent(s, bufs_.buf(p.bid) + p.off, p.len) : 0;
        if (took < p.len) {
            p.off += static_cast<uint32_t>(took);
            p.len -= static_cast<uint32_t>(took);
            return false;
        }
        bufs_.give(p.bid);
        parked_.erase(parked_.begin() + static_cast<ptrdiff_t>(i));
        st.parked--;
    }
    return st.parked == 0;
}

void UringPort::drop_parked(Slot &s) {
    UringSlot &st = port_state<UringSlot>(s);
    for (size_t i = 0; i < parked_.size() && st.parked;) {
        if (parked_[i].s != &s) {
            i++;
            continue;
        }
        if (s.leaving)
            w_->input_late(s, bufs_.buf(parked_[i].bid) + parked_[i].off, parked_[i].len);
        bufs_.give(parked_[i].bid);
        parked_.erase(parked_.begin() + static_cast<ptrdiff_t>(i));
        st.parked--;
    }
    st.end_parked = false;
}

void UringPort::want_read(Slot &s) {
    UringSlot &st = port_state<UringSlot>(s);
    if (!unpark(s))
        return;
    bufs_.publish();
    if (st.end_parked) {
        st.end_parked = false;
        if (!s.eof)
            w_->input_end(s, st.end_err);
        return;
    }
    if (!s.eof && !st.nobufs)
        arm_recv(s);
}

void UringPort::rearm_nobufs() {
    if (nobufs_.empty() || bufs_.out() > bufs_.count() / 2)
        return;
    for (Slot *s : nobufs_) {
        UringSlot &st = port_state<UringSlot>(*s);
        st.nobufs = false;
        if (s->fd >= 0 && !s->eof && !s->input_paused && st.parked == 0) {
            w_->metrics.add(M_URING_REARMS);
            arm_recv(*s);
        }
    }
    nobufs_.clear();
}

// Dropping the buffers' pages is safe only while the kernel cannot be filling
// one between the check below and the madvise, or the bytes of a recv that
// completed in between would read back as zeros (a 400 for a request that
// was fine: the adaptive switch tests under go test -race saw one in 47,000
// on a CI machine). Two cases are safe:
// - no recv is armed: nothing can pick a buffer;
// - the DEFER_TASKRUN tier: a recv's copy into a buffer runs as task work,
//   and that tier runs task work only inside io_uring_enter(GETEVENTS) on
//   this thread, so never between the check and the madvise. The COOP and
//   basic tiers run it at any return to user mode of this thread, an
//   interrupt's included, so for them "the CQ was empty a moment ago" proves
//   nothing.
// And in both, every buffer must be in the ring (none delivered and held
// here: out() is 0) and no completion naming one unread (the CQ ring and the
// kernel's overflow list empty). A write after the madvise lands in a fresh
// zeroed page, as into a buffer never touched.
size_t UringPort::trim_buffers() {
    UringHooks &h = uring_hooks();
    if (recvs_armed_ != 0 && tier_ != WEIR_URING_TIER_DEFER && !h.trim_any_tier.load())
        return 0;
    if (bufs_.out() != 0 || io_uring_cq_ready(&ring_) != 0 || io_uring_cq_has_overflow(&ring_) || !parked_.empty())
        return 0;
    if (uint32_t us = h.trim_window_us.load())
        ::usleep(us); // a syscall: where the COOP and basic tiers run task work
    return bufs_.drop();
}

// ---------------------------------------------------------------- output

// One send of everything the Conn has (up to kMaxIov segments); its
// completion reports and the next settle writes the rest.
void UringPort::write(Slot &s) {
    UringSlot &st = port_state<UringSlot>(s);
    if (st.send_busy || s.fd < 0)
        return;
    SendCtx *ctx = free_ctx_;
    if (!ctx)
        ctx = new (std::nothrow) SendCtx;
    else
        free_ctx_ = ctx->next;
    iovec one;
    iovec *iov = ctx ? ctx->iov : &one;
    size_t k = w_->lend_output(s, iov, ctx ? kMaxIov : 1);
    if (k == 0) {
        if (ctx) {
            ctx->next = free_ctx_;
            free_ctx_ = ctx;
        }
        // Every byte went: a file answer's body follows them (uring_splice.cc).
        FileRange r;
        if (splice_ok_ && w_->lend_file(s, r))
            splice_range(s, r);
        return;
    }
    io_uring_sqe *q = sqe();
    if (!q) {
        if (ctx) {
            ctx->next = free_ctx_;
            free_ctx_ = ctx;
        }
        w_->written(s, -ENOMEM);
        return;
    }
    if (k == 1) {
        // One segment (most answers): a plain send, no header to keep.
        io_uring_prep_send(q, s.fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
        if (ctx) {
            ctx->next = free_ctx_;
            free_ctx_ = ctx;
        }
        st.ctx = nullptr;
    } else {
        ctx->msg = msghdr{};
        ctx->msg.msg_iov = ctx->iov;
        ctx->msg.msg_iovlen = k;
        io_uring_prep_sendmsg(q, s.fd, &ctx->msg, MSG_NOSIGNAL);
        st.ctx = ctx;
    }
    io_uring_sqe_set_data64(q, reinterpret_cast<uint64_t>(&s) | kSend);
    st.send_busy = true;
    begin_op(s);
}

void UringPort::on_send(Slot &s, const Cqe &c) {
    UringSlot &st = port_state<UringSlot>(s);
    st.send_busy = false;
    if (st.ctx) {
        st.ctx->next = free_ctx_;
        free_ctx_ = st.ctx;
        st.ctx = nullptr;
    }
    if (s.fd < 0)
        w_->written(s, 0); // closed while in flight: the lend comes back
    else if (c.res == -EAGAIN || c.res == -EINTR)
        w_->written(s, 0); // nothing went: the next settle sends again
    else
        w_->written(s, c.res);
    end_op(s);
}

// ---------------------------------------------------------------- close

void UringPort::close(Slot &s, bool drain) {
    UringSlot &st = port_state<UringSlot>(s);
    drop_parked(s);
    bufs_.publish();
    st.nobufs = false; // the re-arm list skips closed slots
    if (drain)
        fin_and_drain(s.fd);
    if (st.recv_armed && !st.recv_cancel) {
        cancel(reinterpret_cast<uint64_t>(&s) | kRecv);
        st.recv_cancel = true;
    }
    if (st.send_busy)
        cancel(reinterpret_cast<uint64_t>(&s) | kSend);
    // A splice still in flight may resolve the socket's fd when it is
    // issued: the fd is closed after its last CQE, not now.
    if (splice_close(s, true))
        return;
    // The kernel's references (the cancelled ops) keep the socket until their
    // CQEs; the slot stays with them (ops). The close itself rides the next
    // enter, so a Connection: close costs no syscall of its own.
    io_uring_sqe *q = ring_thread() ? sqe() : nullptr;
    if (!q) {
        ::close(s.fd);
        return;
    }
    io_uring_prep_close(q, s.fd);
    tsan_fd_closed(s.fd);
    io_uring_sqe_set_data64(q, kIgnore);
    if (used_ & WEIR_URING_F_CQE_SKIP)
        q->flags |= IOSQE_CQE_SKIP_SUCCESS;
}

// The fd leaves in an image: the recv is cancelled, and whatever it still
// delivers (and what was parked) is appended to the image's unread bytes
// before the slot is handed over (Worker::free_if_spent waits for ops == 0).
void UringPort::release(Slot &s) {
    UringSlot &st = port_state<UringSlot>(s);
    drop_parked(s);
    bufs_.publish();
    st.nobufs = false;
    if (st.recv_armed && !st.recv_cancel) {
        cancel(reinterpret_cast<uint64_t>(&s) | kRecv);
        st.recv_cancel = true;
    }
    // A released connection has written all it owed (Conn::detachable, or a
    // close with nothing left to send): a splice can only be one cut short.
    splice_close(s, false);
}

} // namespace weir
