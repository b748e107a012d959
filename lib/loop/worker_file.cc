// Answers from a file (weir_respond_file): a Content-Length stream the
// engine feeds itself. Where the port sends files (Port::file_ranges:
// sendfile on epoll, splice on io_uring) the body leaves as file ranges
// after the head, never copied into the output; elsewhere, or for a file the
// kernel will not send so, the file is read as the connection drains (pread
// into the output within the stream window, Conn::feed_files). weir reads
// through its own dup of the host's fd, so the host may close its fd as soon
// as the call returns.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "loop/engine.h"
#include "loop/hooks.h"
#include "loop/sock_ops.h"
#include "loop/worker.h"
#include "proto/answer_rules.h"

namespace weir {

int Worker::respond_file(TicketRef &r, int status, const weir_header_t *h, size_t nh, int fd, uint64_t off,
                         uint64_t len, uint32_t flags) {
    if (flags & ~WEIR_RESPOND_CLOSE)
        return -EINVAL;
    if (int rc = answer_check(status, h, nh, nullptr, 0); rc < 0)
        return rc;
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0)
        return -EBADF;
    if (!S_ISREG(st.st_mode))
        return -EINVAL; // read with pread: a regular file
    uint64_t size = static_cast<uint64_t>(st.st_size);
    if (off > size || len > size - off)
        return -EINVAL;
    int dfd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0)
        return -errno; // -EMFILE and kin: the exchange is as it was
    bool own = owner_thread();
    Exchange *x = nullptr;
    if (int rc = r.claim(own, &x); rc < 0) {
        ::close(dfd);
        return rc;
    }
    Slot &s = *static_cast<Slot *>(x->user);
    if (own && x == cur_ex_)
        cur_answered_ = true; // also when it is posted behind an interim answer (below)
    if (own && nothing_posted(r)) {
        uint64_t handle = x->handle; // x may be gone after a refused start (worker_answers.cc)
        int rc = s.session().stream_start(x, status, h, nh, len, flags);
        if (rc == 0)
            s.session().attach_file(x, dfd, off, file_ranges_);
        else
            ::close(dfd);
        tickets_.retire(handle); // the host's part is over: the rest is the engine's
        if (x == cur_ex_)
            cur_answered_ = true;
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    if (finished()) {
        ::close(dfd);
        return WEIR_E_GONE;
    }
    if (s.gone.load(std::memory_order_acquire)) {
        ::close(dfd);
        post_drop(x, false);
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, status, h, nh, nullptr, 0, flags);
    if (!a) {
        ::close(dfd);
        post_drop(x, true);
        return -ENOMEM;
    }
    a->kind = AnswerKind::File;
    a->length = len;
    a->file_fd = dfd;
    a->file_off = off;
    push_and_wake(answers_, a);
    return 0;
}

void Worker::apply_file(Answer *a) {
    Exchange *x = a->x;
    Slot &s = *static_cast<Slot *>(x->user);
    uint64_t handle = x->handle; // x may be gone after a refused start (worker_answers.cc)
    int rc = s.session().stream_start(x, a->status, a->headers, a->num_headers, a->length, a->flags);
    if (rc == 0)
        s.session().attach_file(x, a->file_fd, a->file_off, file_ranges_);
    else
        ::close(a->file_fd);
    a->file_fd = -1;
    tickets_.retire(handle);
    s.answered = true;
    mark_dirty(s);
    answer_pool_.give(a);
}

void Worker::file_written(Slot &s, ssize_t n) {
    Session &c = s.session();
    if (n >= 0) {
        if (n > 0) {
            metrics.add(M_BYTES_OUT, static_cast<uint64_t>(n));
            s.bind.out += static_cast<uint64_t>(n);
            s.activity = s.progress = true;
            loop_hooks().file_range_sends.fetch_add(1, std::memory_order_relaxed);
        }
        c.on_file_sent(static_cast<size_t>(n), 0);
    } else if (n == -ENODATA) {
        c.on_file_sent(0, ENODATA); // aborts: WEIR_CLOSE_IO_ERROR, as the read path's short read
    } else if (n == -EINVAL || n == -ENOSYS || n == -EOPNOTSUPP) {
        loop_hooks().file_fallbacks.fetch_add(1, std::memory_order_relaxed);
        c.on_file_sent(0, static_cast<int>(-n)); // the rest is read (feed_files, at the settle)
    } else {
        int e = static_cast<int>(-n);
        c.on_file_sent(0, e);
        c.close(close_for_errno(e));
        s.broken = true;
    }
    mark_dirty(s);
}

} // namespace weir
