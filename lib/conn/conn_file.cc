// Conn, file answers (weir_respond_file): a Content-Length stream whose body
// comes from the engine's own dup of the host's fd. A port that sends files
// (Port::file_ranges) gets the body as file ranges after the bytes before
// it (output_file / on_file_sent: sendfile on epoll, splice on io_uring);
// otherwise, and for a file the kernel will not send so, feed_files reads it
// into the output within the stream window.
#include <unistd.h>

#include <cerrno>

#include "conn/conn.h"
#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

void Conn::attach_file(Exchange *x, int fd, uint64_t offset, bool ranged) {
    ExSlot &sl = st_->slot(x->seq);
    sl.file_fd = fd;
    sl.file_off = offset;
    sl.file_ranged = ranged;
    if (ranged && sl.stream_left == 0) {
        // Nothing to send from the file (an empty one, HEAD): no range will
        // ever be lent to end it, so it ends here (as feed_files would).
        ::close(sl.file_fd);
        sl.file_fd = -1;
        stream_end(x, nullptr, 0);
    }
}

bool Conn::feed_files(size_t window) {
    static thread_local char buf[64 * 1024];
    bool more = false;
    for (uint32_t i = 0; st_ && st_->streams && i < st_->nslots; i++) {
        ExSlot &sl = st_->slots[i];
        if (sl.state != kStreaming || sl.file_fd < 0)
            continue;
        if (sl.file_ranged && sl.stream_left > 0)
            continue; // the port sends it (output_file)
        Exchange *x = &sl.x;
        while (sl.stream_left > 0) {
            size_t backlog = stream_backlog(x);
            if (backlog >= window / 2 && backlog > 0)
                break; // the same bound as Worker::streams_have_room's: no settle loops on it
            size_t want = window - backlog;
            if (want > sizeof buf)
                want = sizeof buf;
            if (want > sl.stream_left)
                want = static_cast<size_t>(sl.stream_left);
            ssize_t n = ::pread(sl.file_fd, buf, want, static_cast<off_t>(sl.file_off));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) { // an error, or the file ended early: the promised length cannot be kept
                abort(WEIR_CLOSE_IO_ERROR); // drop_unanswered closes the fd and frees the slot
                return false;
            }
            if (stream_write(x, buf, static_cast<size_t>(n)) != 0)
                return false; // out of memory: aborted, released
            sl.file_off += static_cast<uint64_t>(n);
        }
        if (sl.stream_left == 0) {
            ::close(sl.file_fd);
            sl.file_fd = -1;
            stream_end(x, nullptr, 0);
            continue; // the state may be gone now; the loop re-checks st_
        }
        more = true;
    }
    return more;
}

bool Conn::output_file(FileRange &r) {
    if (!st_ || (flags_ & (kDead | kAbort | kLentOut)) || st_->out.pending() > 0)
        return false;
    State &s = *st_;
    if (s.write_seq == s.parse_seq)
        return false;
    ExSlot &sl = s.slot(s.write_seq);
    if (sl.state != kStreaming || !sl.stream_direct || !sl.file_ranged || sl.file_fd < 0 || sl.stream_left == 0)
        return false;
    r.fd = sl.file_fd;
    r.off = sl.file_off;
    r.len = sl.stream_left;
    s.file_lent_fd = sl.file_fd;
    flags_ |= kLentOut | kLentFile;
    return true;
}

void Conn::on_file_sent(size_t n, int err) {
    flags_ &= static_cast<uint32_t>(~(kLentOut | kLentFile));
    if (!st_)
        return;
    State &s = *st_;
    int fd = s.file_lent_fd;
    s.file_lent_fd = -1;
    ExSlot &sl = s.slot(s.write_seq);
    bool live = !(flags_ & (kDead | kAbort)) && s.write_seq != s.parse_seq && sl.state == kStreaming &&
                sl.file_fd == fd && fd >= 0;
    if (!live) {
        // Dropped while lent (drop_unanswered left the fd for the lend).
        if (fd >= 0)
            ::close(fd);
        if (flags_ & (kDead | kAbort))
            s.out.clear(); // as on_written: what abort left for the lend
        release_if_idle();
        return;
    }
    if (n > sl.stream_left)
        n = static_cast<size_t>(sl.stream_left);
    sl.file_off += n;
    sl.stream_left -= n;
    if (err == ENODATA) {
        abort(WEIR_CLOSE_IO_ERROR); // the head promised more than the file holds now
        return;
    }
    if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP)
        sl.file_ranged = false; // feed_files reads the rest
    if (sl.stream_left == 0) {
        ::close(sl.file_fd);
        sl.file_fd = -1;
        stream_end(&sl.x, nullptr, 0);
    }
}

bool Conn::file_stream(const Exchange *x) const {
    if (!st_)
        return false;
    const ExSlot &sl = st_->slots[x->seq % st_->nslots];
    return &sl.x == x && sl.state == kStreaming && sl.file_fd >= 0 && !sl.file_ranged;
}

} // namespace weir
