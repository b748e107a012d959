// Conn, streamed answers: a head now and the body in pieces (weir_stream_*).
// A stream keeps its place in the request order: before its turn its pieces
// wait in its slot's answer buffer, from its turn on they go straight to the
// output, and nothing after it leaves before its end. How much may wait is
// the loop's business (the stream window, worker_stream.cc).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "conn/conn.h"
#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

int Conn::stream_start(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                       uint32_t flags) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.state != kTaken)
        return -EINVAL;
    if (int rc = http1::validate_answer(status, headers, num_headers, nullptr, 0); rc < 0)
        return rc;
    const weir_request &r = x->req;
    bool asked = (r.flags & WEIR_REQ_KEEP_ALIVE) != 0;
    // The overload manager's level 1: the last request parsed closes the
    // connection (those parsed before it are answered first, as owed; what
    // was not parsed is left unread and the close lingers).
    bool last = x->seq + 1 == s.parse_seq;
    bool keep = asked && !(pool_.keep_alive_off && last);
    bool shed = asked && !keep && !(flags & WEIR_RESPOND_CLOSE) && !(flags_ & kClosing);
    http1::ResponseShape shape;
    shape.head = r.method.len == 4 && std::memcmp(r.method.ptr, "HEAD", 4) == 0;
    http1::StreamFraming framing = http1::stream_framing(status, shape.head, r.version_minor, length != UINT64_MAX);
    bool delimits = framing == http1::StreamFraming::Close;
    bool cut = body_cut(x); // begun before its body was read: close after it
    shape.close = !keep || delimits || cut || (flags & WEIR_RESPOND_CLOSE) || ((flags_ & kClosing) && last);
    shape.keep_alive_10 = keep && !delimits && r.version_minor == 0;
    if (shed && !delimits)
        pool_.keep_alive_cuts++;
    sl.answer_reason = (!asked || delimits)           ? WEIR_CLOSE_NOT_KEEP_ALIVE
                       : (flags & WEIR_RESPOND_CLOSE)   ? WEIR_CLOSE_HANDLER
                       : shed                            ? WEIR_CLOSE_OVERLOAD
                       : (cut && !(flags_ & kClosing)) ? WEIR_CLOSE_BODY_UNREAD
                                                        : close_reason_;
    sl.answer_closes = shape.close;
    sl.framing = framing;
    sl.stream_left = framing == http1::StreamFraming::Length ? length : 0;
    sl.stream_direct = x->seq == s.write_seq;
    take_interim(sl);
    bool ok = sl.stream_direct
                  ? http1::write_stream_head(s.out, status, headers, num_headers, length, framing, shape)
                  : http1::write_stream_head(sl.answer, status, headers, num_headers, length, framing, shape);
    if (!ok) {
        sl.state = kFree;
        s.taken--;
        abort(WEIR_CLOSE_RESOURCE);
        return -ENOMEM;
    }
    sl.state = kStreaming;
    sl.file_fd = -1;
    sl.file_ranged = false;
    s.streams++;
    check_output_limit();
    return 0;
}

int Conn::stream_write(Exchange *x, const void *p, size_t n) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.state != kStreaming || (n && !p))
        return -EINVAL;
    if (sl.framing == http1::StreamFraming::Length && n > sl.stream_left)
        return -EINVAL;
    bool ok = sl.stream_direct ? http1::write_stream_piece(s.out, sl.framing, p, n)
                               : http1::write_stream_piece(sl.answer, sl.framing, p, n);
    if (!ok) {
        abort(WEIR_CLOSE_RESOURCE); // drops x with the rest
        check_slot(x, &gone);
        return -ENOMEM;
    }
    if (sl.framing == http1::StreamFraming::Length)
        sl.stream_left -= n;
    check_output_limit();
    return 0;
}

int Conn::stream_end(Exchange *x, const weir_header_t *trailers, size_t num_trailers) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.state != kStreaming || sl.stream_left > 0)
        return -EINVAL;
    if (num_trailers && (sl.framing != http1::StreamFraming::Chunked ||
                         http1::validate_answer(200, trailers, num_trailers, nullptr, 0) < 0))
        return -EINVAL;
    if (sl.framing == http1::StreamFraming::Chunked) {
        bool ok = sl.stream_direct ? http1::write_last_chunk(s.out, trailers, num_trailers)
                                   : http1::write_last_chunk(sl.answer, trailers, num_trailers);
        if (!ok) {
            abort(WEIR_CLOSE_RESOURCE);
            check_slot(x, &gone);
            return -ENOMEM;
        }
    }
    s.streams--;
    s.taken--;
    if (sl.stream_direct) {
        sl.state = kFree;
        s.write_seq++;
        counters_.responses++;
        if (sl.answer_closes)
            finish(sl.answer_reason);
        else
            flush();
    } else {
        sl.state = kAnswered; // its whole answer is in its buffer now
    }
    check_output_limit();
    if (!(flags_ & (kClosing | kNoMore | kDead)) && st_ && st_->phase == kHead && st_->parse_pos < st_->end)
        parse();
    return 0;
}

int Conn::stream_abort(Exchange *x) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.state != kStreaming || sl.file_fd >= 0)
        return -EINVAL;
    s.streams--;
    s.taken--;
    if (sl.stream_direct) { // its turn: what it wrote is in the output already
        sl.state = kFree;
        s.write_seq++;
        counters_.responses++;
        finish(WEIR_CLOSE_ABORTED);
        return 0;
    }
    // Before its turn: its head and pieces go out in order, then the close.
    sl.state = kAnswered;
    sl.answer_closes = true;
    sl.answer_reason = WEIR_CLOSE_ABORTED;
    return 0;
}

size_t Conn::stream_backlog(const Exchange *x) const {
    if (!st_)
        return 0;
    const ExSlot &sl = st_->slots[x->seq % st_->nslots];
    if (&sl.x != x || sl.state != kStreaming)
        return 0;
    return sl.stream_direct ? output_pending() : sl.answer.len;
}

bool Conn::streaming(const Exchange *x) const {
    if (!st_)
        return false;
    const ExSlot &sl = st_->slots[x->seq % st_->nslots];
    return &sl.x == x && sl.state == kStreaming;
}

uint32_t Conn::streams() const { return st_ ? st_->streams : 0; }

Exchange *Conn::stream_at(uint32_t i) {
    if (!st_ || i >= st_->nslots)
        return nullptr;
    ExSlot &sl = st_->slots[i];
    return sl.state == kStreaming ? &sl.x : nullptr;
}

} // namespace weir
