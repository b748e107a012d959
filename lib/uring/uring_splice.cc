// File ranges on io_uring: IORING_OP_SPLICE from the file into a pipe,
// linked to a splice from the pipe into the socket, so a file answer's body
// never passes through user memory (docs/uring.md "File answers": why splice
// and not a read into the output, measured).
//
// The completion rule, fds included: io_uring resolves a splice's fds when
// it issues the operation (in its worker thread, and a linked one only once
// the one before it is done), not when it is queued. So nothing a splice
// names is closed while it is in flight: the file's fd is the Conn's until
// the lend comes back (Worker::file_written, after the last CQE), the pipe
// is the port's, and a socket closed meanwhile is closed only after the last
// CQE (an fd number reused by an accept could otherwise get the bytes).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "loop/hooks.h"
#include "uring/uring_impl.h"

namespace weir {

namespace {

// Every pair costs a hop through an io_uring worker thread: with the
// default 64 KiB pipe that hop costs more than the copy it saves, 1 MiB
// makes splice the cheapest way (docs/uring.md).
constexpr int kPipeBytes = 1 << 20;
constexpr uint32_t kPipesKept = 16;

bool transient(int res) { return res == -ECANCELED || res == -EAGAIN || res == -EINTR; }

} // namespace

SplicePipe *UringPort::take_pipe() {
    if (SplicePipe *p = free_pipes_) {
        free_pipes_ = p->next_free;
        p->next_free = nullptr;
        pipes_kept_--;
        return p;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return nullptr;
    SplicePipe *p = new (std::nothrow) SplicePipe;
    if (!p) {
        ::close(fds[0]);
        ::close(fds[1]);
        return nullptr;
    }
    p->r = fds[0];
    p->w = fds[1];
    int cap = ::fcntl(p->w, F_SETPIPE_SZ, kPipeBytes); // refused past the user's pipe budget: the default
    if (cap < 0)
        cap = ::fcntl(p->w, F_GETPIPE_SZ);
    p->cap = cap > 0 ? static_cast<uint32_t>(cap) : 65536;
    p->next = all_pipes_;
    if (all_pipes_)
        all_pipes_->prev = p;
    all_pipes_ = p;
    return p;
}

// An empty pipe is kept for the next range; one that still holds bytes (its
// connection died mid-range) or one past the pool's size goes.
void UringPort::give_pipe(SplicePipe *p) {
    if (p->fill == 0 && pipes_kept_ < kPipesKept) {
        p->pending = 0;
        p->pair = false;
        p->next_free = free_pipes_;
        free_pipes_ = p;
        pipes_kept_++;
        return;
    }
    if (p->prev)
        p->prev->next = p->next;
    else
        all_pipes_ = p->next;
    if (p->next)
        p->next->prev = p->prev;
    ::close(p->r);
    ::close(p->w);
    delete p;
}

// After the ring's exit: nothing can name them any more.
void UringPort::free_pipes() {
    while (SplicePipe *p = all_pipes_) {
        all_pipes_ = p->next;
        ::close(p->r);
        ::close(p->w);
        if (p->close_fd >= 0)
            ::close(p->close_fd);
        delete p;
    }
    free_pipes_ = nullptr;
    pipes_kept_ = 0;
}

// One pair (file -> pipe, linked to pipe -> socket) for the lent range, or,
// when the pipe still holds bytes an earlier pair did not get into the
// socket, one splice of those first.
void UringPort::splice_range(Slot &s, const FileRange &r) {
    UringSlot &st = port_state<UringSlot>(s);
    SplicePipe *p = st.pipe;
    bool drain = p && p->fill > 0;
    if (!drain) {
        if (int e = loop_hooks().file_range_errno.load(std::memory_order_relaxed)) {
            w_->file_written(s, -e); // the fallback's arm (hooks.h): as if the kernel refused the file
            return;
        }
        if (!p && !(p = take_pipe())) {
            w_->file_written(s, -EOPNOTSUPP); // no pipe (EMFILE): this answer is read instead
            return;
        }
        st.pipe = p;
    }
    // Both SQEs go in one submit, so the link holds.
    if (!drain && io_uring_sq_space_left(&ring_) < 2)
        submit_queued();
    io_uring_sqe *in = drain ? nullptr : sqe();
    io_uring_sqe *out = drain || in ? sqe() : nullptr;
    if (!out) {
        if (in) {
            io_uring_prep_nop(in);
            io_uring_sqe_set_data64(in, kIgnore);
        }
        if (p->fill == 0) {
            st.pipe = nullptr;
            give_pipe(p);
        }
        w_->file_written(s, -ENOMEM);
        return;
    }
    uint32_t n;
    if (drain) {
        n = p->fill;
        p->pair = false;
    } else {
        n = r.len < p->cap ? static_cast<uint32_t>(r.len) : p->cap;
        io_uring_prep_splice(in, r.fd, static_cast<int64_t>(r.off), p->w, -1, n, 0);
        in->flags |= IOSQE_IO_LINK;
        io_uring_sqe_set_data64(in, reinterpret_cast<uint64_t>(&s) | kSpliceIn);
        p->pair = true;
        p->pending++;
        begin_op(s);
    }
    p->want = n;
    p->in_res = p->out_res = 0;
    io_uring_prep_splice(out, p->r, -1, s.fd, -1, n, 0);
    io_uring_sqe_set_data64(out, reinterpret_cast<uint64_t>(&s) | kSpliceOut);
    p->pending++;
    begin_op(s);
    st.send_busy = true;
}

void UringPort::on_splice(Slot &s, const Cqe &c, uint64_t kind) {
    UringSlot &st = port_state<UringSlot>(s);
    SplicePipe *p = st.pipe;
    if (kind == kSpliceIn)
        p->in_res = c.res;
    else if (kind == kSpliceOut)
        p->out_res = c.res;
    if (--p->pending > 0) {
        end_op(s); // the pair's other CQE is still to come: the slot stays
        return;
    }
    st.send_busy = false;
    bool polled = kind == kPollOut;
    ssize_t report = 0;
    bool wait_room = false;
    if (!polled) {
        int in = p->pair ? p->in_res : 0, out = p->out_res;
        if (p->pair && in > 0)
            p->fill += static_cast<uint32_t>(in);
        if (out > 0)
            p->fill -= static_cast<uint32_t>(out) < p->fill ? static_cast<uint32_t>(out) : p->fill;
        if (out > 0)
            report = out;
        else if (p->pair && in == 0 && p->want > 0)
            report = -ENODATA; // the file ended before the range did (the out was cancelled)
        else if (p->pair && in < 0 && !transient(in))
            report = in; // -EINVAL and kin: the read path; -EIO: an I/O error
        else if (out < 0 && !transient(out))
            report = out; // the socket's error
        wait_room = out == -EAGAIN && p->fill > 0;
    }
    if (s.fd < 0) {
        // Closed while in flight: now nothing names the socket, the pipe or
        // the file any more.
        st.pipe = nullptr;
        if (p->close_fd >= 0) {
            ::close(p->close_fd);
            p->close_fd = -1;
        }
        give_pipe(p);
        if (!polled)
            w_->file_written(s, 0); // the lend comes back (a dropped answer's fd closes with it)
        end_op(s);
        return;
    }
    if (polled) {
        end_op(s);
        write(s); // room (or an error the next splice meets): the pipe's bytes go on
        return;
    }
    if (p->fill == 0) {
        st.pipe = nullptr;
        give_pipe(p);
    } else if (wait_room) {
        // The socket took none: splice would only fail again. Its room is
        // waited for, then write() drains the pipe.
        if (io_uring_sqe *q = sqe()) {
            io_uring_prep_poll_add(q, s.fd, POLLOUT);
            io_uring_sqe_set_data64(q, reinterpret_cast<uint64_t>(&s) | kPollOut);
            p->pending++;
            p->pair = false;
            begin_op(s);
            st.send_busy = true;
        } else {
            report = -ENOMEM;
        }
    }
    w_->file_written(s, report);
    end_op(s);
}

// The socket is closing: what a splice still does is cancelled, and the
// close waits for the last CQE when one is in flight (returns true: the
// socket's fd is the pipe's to close then). An idle pipe goes back.
bool UringPort::splice_close(Slot &s, bool closing) {
    UringSlot &st = port_state<UringSlot>(s);
    SplicePipe *p = st.pipe;
    if (!p)
        return false;
    if (p->pending == 0) {
        st.pipe = nullptr;
        give_pipe(p);
        return false;
    }
    uint64_t tag = reinterpret_cast<uint64_t>(&s);
    if (p->pair)
        cancel(tag | kSpliceIn); // its link cancels the out
    cancel(tag | kSpliceOut);
    cancel(tag | kPollOut);
    if (closing)
        p->close_fd = s.fd;
    return closing;
}

} // namespace weir
