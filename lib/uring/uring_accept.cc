// The io_uring port's accept (docs/uring.md "Accept"): one multishot accept
// per listener; what it completed waits here for the door's batch, and with
// it not armed (ended by the kernel, resting, unlistened) accept() takes
// straight from the listener and arms it again.
#include <sys/socket.h>

#include <cerrno>

#include "loop/sock_ops.h"
#include "uring/uring_impl.h"
#include "weir.h"

namespace weir {

namespace {

constexpr size_t kAcceptedMax = 4096; // past it the multishot accept rests: the kernel's backlog holds the rest

} // namespace

int UringPort::listen(int fd) {
    listen_fd_ = fd;
    arm_accept();
    return accept_armed_ ? 0 : -ENOMEM;
}

void UringPort::cancel_accept() {
    cancel(kAccept);
    accept_cancel_ = true;
}

void UringPort::arm_accept() {
    if (listen_fd_ < 0 || accept_armed_)
        return;
    io_uring_sqe *q = sqe();
    if (!q)
        return; // accept() takes from the listener itself and arms again
    io_uring_prep_multishot_accept(q, listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    io_uring_sqe_set_data64(q, kAccept);
    accept_sqe_ = q;
    accept_sq_index_ = ring_.sq.sqe_tail - 1; // io_uring_get_sqe moved the tail past it
    accept_armed_ = true;
    accept_cancel_ = false;
}

void UringPort::on_accept(const Cqe &c) {
    bool more = c.flags & IORING_CQE_F_MORE;
    if (!more) {
        accept_armed_ = false;
        accept_cancel_ = false; // accept() arms it again while the listener is ours
    }
    if (c.res >= 0 || (c.res != -ECANCELED && listen_fd_ >= 0)) {
        Accepted a;
        if (c.res >= 0)
            a.fd = c.res;
        else
            a.error = -c.res;
        try {
            accepted_.push_back(a);
        } catch (...) {
            if (a.fd >= 0)
                ::close(a.fd); // the client sees a close, as from a full backlog
        }
        if (accepted_.size() >= kAcceptedMax && accept_armed_ && !accept_cancel_)
            cancel_accept();
    }
    w_->door_ready();
}



Take UringPort::accept(int listen_fd, Accepted &out, bool drain) {
    // The answers already held (this pass's flush) and the last admission's
    // leave now, before the next admission runs (DESIGN.md §4).
    submit_queued();
    if (accepted_.empty() && accept_armed_ && drain && ring_thread() && enabled_) {
        // What the kernel accepted and has not reported yet (DEFER_TASKRUN
        // runs the accept only inside an enter) is part of the backlog too.
        submit(0, 0);
        reap(true);
    }
    if (!accepted_.empty()) {
        Accepted a = accepted_.front();
        accepted_.pop_front();
        out.fd = a.fd;
        out.error = a.error;
        out.peer_len = 0;
        return a.fd >= 0 ? Take::Took : take_for_errno(a.error);
    }
    if (accept_armed_)
        return Take::Empty;
    Take t = accept_now(listen_fd, out);
    if (listen_fd_ == listen_fd && (t == Take::Empty || t == Take::Took)) {
        w_->metrics.add(M_URING_REARMS);
        arm_accept();
    }
    return t;
}

// Whether the multishot accept's SQE is still in the SQ, not yet handed to
// the kernel: liburing publishes [sqe_head, sqe_tail) at the next submit.
bool UringPort::accept_unsubmitted() const {
    const io_uring_sq &sq = ring_.sq;
    return accept_sqe_ && sq.sqe_tail - accept_sq_index_ <= sq.sqe_tail - sq.sqe_head;
}

// Stops the multishot accept and waits for its last CQE, so nothing the
// kernel accepts later is lost; what it took stays for accept(), which then
// takes from the listener itself until it runs dry.
void UringPort::unlisten(int fd) {
    if (fd != listen_fd_)
        return;
    listen_fd_ = -1;
    if (!accept_armed_)
        return;
    if (!ring_thread()) {
        // No cancel can be waited for from here. A ring not running yet (a
        // DEFER_TASKRUN ring before the loop's first wait: a listen that
        // failed part-way drops the earlier listeners) still holds the
        // accept's SQE unsubmitted: it becomes a no-op, or the first wait
        // would arm an accept on a descriptor number that is no longer this
        // listener (a later one's, or anybody's). One already submitted is
        // the ring's exit to cancel (destroy).
        if (accept_unsubmitted()) {
            io_uring_prep_nop(accept_sqe_);
            io_uring_sqe_set_data64(accept_sqe_, kIgnore);
            if (used_ & WEIR_URING_F_CQE_SKIP)
                accept_sqe_->flags |= IOSQE_CQE_SKIP_SUCCESS;
        }
        accept_armed_ = accept_cancel_ = false;
        return;
    }
    if (!accept_cancel_)
        cancel_accept();
    for (int i = 0; accept_armed_ && i < 1000; i++) {
        submit(1, 10);
        reap(true);
    }
    accept_armed_ = accept_cancel_ = false;
}

} // namespace weir
