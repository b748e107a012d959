// Conn, output side and lifecycle: answers in request order, the output and
// its lend, closing, the timer a connection waits on.
#include "conn/conn.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "conn/conn_state.h"
#include "http1/response.h"

namespace weir {

using namespace conn_detail;

namespace {

constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

bool is_head_method(weir_str_t m) { return m.len == 4 && std::memcmp(m.ptr, "HEAD", 4) == 0; }

} // namespace

Conn::Conn(const ConnSettings &settings, ConnPool &pool, uint64_t id) : settings_(settings), pool_(pool), id_(id) {}

Conn::~Conn() {
    if (st_)
        pool_.give(st_);
}

// Finds x's slot: 0 (it is x's), -EINVAL, or *gone: the connection died or
// dropped x, and x was released (WEIR_E_GONE for the caller).
int Conn::check_slot(Exchange *x, bool *gone) {
    *gone = false;
    if (!x || x->owner != this || !st_)
        return -EINVAL;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (&sl.x != x)
        return -EINVAL;
    bool live = sl.state == kTaken || sl.state == kStreaming;
    if (sl.state == kDropped || (flags_ & kDead && live)) {
        if (sl.state == kStreaming)
            s.streams--;
        sl.state = kFree;
        s.taken--;
        *gone = true;
        release_if_idle();
    }
    return 0;
}

int Conn::respond(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                  size_t body_len, uint32_t flags) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.state != kTaken)
        return -EINVAL;
    if (!(flags & kAnswerChecked)) {
        int rc = http1::validate_answer(status, headers, num_headers, body, body_len);
        if (rc < 0)
            return rc;
    }
    const weir_request &r = x->req;
    bool asked = (r.flags & WEIR_REQ_KEEP_ALIVE) != 0;
    // The overload manager's level 1: the last request parsed closes the
    // connection (those parsed before it are answered first, as owed; what
    // was not parsed is left unread and the close lingers).
    bool last = x->seq + 1 == s.parse_seq;
    bool keep = asked && !(pool_.keep_alive_off && last);
    bool shed = asked && !keep && !(flags & WEIR_RESPOND_CLOSE) && !(flags_ & kClosing);
    bool cut = body_cut(x); // answered before its body was read: close after it
    http1::ResponseShape shape;
    shape.head = is_head_method(r.method);
    // A close this request did not ask for (the engine's shutdown, the peer's
    // FIN) waits for every request already parsed: their handlers ran, and
    // their answers are owed. So only the last one says Connection: close
    // and finishes the connection; one that did not would drop the answers
    // after it (WEIR_E_GONE to a deferred handler that had done the work).
    shape.close = !keep || cut || (flags & WEIR_RESPOND_CLOSE) || ((flags_ & kClosing) && last);
    shape.keep_alive_10 = keep && r.version_minor == 0;
    if (shed)
        pool_.keep_alive_cuts++;
    uint32_t reason = !asked                      ? WEIR_CLOSE_NOT_KEEP_ALIVE
                      : (flags & WEIR_RESPOND_CLOSE) ? WEIR_CLOSE_HANDLER
                      : shed                          ? WEIR_CLOSE_OVERLOAD
                      : (cut && !(flags_ & kClosing)) ? WEIR_CLOSE_BODY_UNREAD
                                                      : close_reason_;
    s.taken--;
    if ((flags_ & kUpgradeWait) && !(flags_ & kUpgraded) && (r.flags & WEIR_REQ_UPGRADE))
        flags_ &= static_cast<uint32_t>(~kUpgradeWait); // not upgraded: HTTP goes on (parsed below)
    if (flags & WEIR_RESPOND_ABORT) {
        // No answer: what is before it (and its interim answers) leaves,
        // then the connection closes, as net/http does after a panic.
        if (x->seq == s.write_seq) {
            sl.state = kFree;
            s.write_seq++;
            finish(WEIR_CLOSE_ABORTED);
        } else {
            take_interim(sl);
            sl.state = kAnswered;
            sl.answer_closes = true;
            sl.answer_reason = WEIR_CLOSE_ABORTED;
        }
        return 0;
    }
    if (x->seq == s.write_seq) {
        if (!http1::write_response(s.out, status, headers, num_headers, body, body_len, shape)) {
            sl.state = kFree;
            abort(WEIR_CLOSE_RESOURCE);
            return -ENOMEM;
        }
        sl.state = kFree;
        s.write_seq++;
        counters_.responses++;
        if (shape.close)
            finish(reason);
        else
            flush();
    } else {
        take_interim(sl);
        if (!http1::write_response(sl.answer, status, headers, num_headers, body, body_len, shape)) {
            sl.state = kFree;
            abort(WEIR_CLOSE_RESOURCE);
            return -ENOMEM;
        }
        sl.state = kAnswered;
        sl.answer_closes = shape.close;
        sl.answer_reason = reason;
    }
    check_output_limit();
    // A slot or pinned buffer space may have been freed: parse what waits.
    if (!(flags_ & (kClosing | kNoMore | kDead)) && st_ && st_->phase == kHead && st_->parse_pos < st_->end)
        parse();
    return 0;
}

// Queues every answer whose turn has come, then a 100 Continue if the request
// being read is next in line and still owes its body.
void Conn::flush() {
    if (!st_ || (flags_ & (kDead | kFinal)))
        return;
    State &s = *st_;
    while (s.write_seq != s.parse_seq) {
        ExSlot &sl = s.slot(s.write_seq);
        bool ok;
        if (sl.state == kStreaming) {
            // Its turn came: what it streamed so far leaves, the rest goes
            // straight to the output; nothing after it leaves before its end.
            if (!sl.stream_direct) {
                sl.stream_direct = true;
                if (!s.out.append(sl.answer.p, sl.answer.len)) {
                    abort(WEIR_CLOSE_RESOURCE);
                    return;
                }
                sl.answer.clear();
            }
            break;
        }
        if (sl.state == kAnswered)
            ok = s.out.append(sl.answer.p, sl.answer.len);
        else if (sl.state == kError)
            ok = http1::write_error_response(s.out, sl.error_status);
        else {
            if (sl.state == kTaken && sl.interim_len && !send_interim(sl))
                return;
            break;
        }
        bool closes = sl.state == kError || sl.answer_closes;
        sl.state = kFree;
        s.write_seq++;
        counters_.responses++;
        if (!ok) {
            abort(WEIR_CLOSE_RESOURCE);
            return;
        }
        if (closes) {
            finish(sl.answer_reason);
            return;
        }
    }
    // (A streamed body's request was handed out: parse_seq is past it.)
    bool turn = s.phase == kBodyStream ? s.write_seq == s.body_seq : s.write_seq == s.parse_seq;
    if (s.cont_pending && turn && s.phase != kHead && !(flags_ & kClosing)) {
        // Only worth sending while the body has not arrived.
        s.cont_pending = false;
        if (!s.out.append(kContinue, sizeof kContinue - 1)) {
            abort(WEIR_CLOSE_RESOURCE);
            return;
        }
        counters_.continues_sent++;
    }
    check_output_limit();
}

// Every exchange not yet written is forgotten: those handed out turn
// kDropped (their answers will get WEIR_E_GONE), the rest are freed.
void Conn::drop_unanswered() {
    State &s = *st_;
    for (uint32_t q = s.write_seq; q != s.parse_seq; ++q) {
        ExSlot &sl = s.slot(q);
        if (sl.state == kStreaming)
            s.streams--;
        if (sl.file_fd >= 0) {
            // A file answer is the engine's own: nobody will answer it, so
            // it is released here, its fd with it (a lent one's when the
            // lend returns: a kernel operation may still name it).
            if (sl.file_fd != s.file_lent_fd)
                ::close(sl.file_fd);
            sl.file_fd = -1;
            s.taken--;
            sl.state = kFree;
            continue;
        }
        sl.state = (sl.state == kTaken || sl.state == kStreaming) ? kDropped : kFree;
    }
    s.write_seq = s.take_seq = s.parse_seq;
}

// The answer just queued is the last one: drop whatever came after it.
void Conn::finish(uint32_t reason) {
    end_body(-ECONNABORTED);
    State &s = *st_;
    if (s.end > s.parse_pos || s.phase != kHead || s.parse_seq != s.write_seq)
        flags_ |= kMoreInput; // bytes, a body or requests past the closing answer
    if (!(flags_ & kClosing))
        close_reason_ = reason;
    flags_ |= kClosing | kNoMore | kFinal;
    drop_unanswered();
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.end;
}

void Conn::check_output_limit() {
    if (st_ && st_->out.pending() > settings_.max_output_bytes)
        abort(WEIR_CLOSE_OUTPUT_LIMIT);
}

void Conn::abort(uint32_t reason) {
    if (!(flags_ & kAbort))
        close_reason_ = reason;
    flags_ |= kClosing | kNoMore | kFinal | kAbort;
    end_body(-ECONNABORTED);
    if (st_) {
        if (!(flags_ & kLentOut)) // a lent write's bytes stay until it returns
            st_->out.clear();
        drop_unanswered();
    }
}

size_t Conn::output_iov(iovec *iov, size_t max) {
    if (!st_ || max == 0 || (flags_ & (kDead | kAbort | kLentOut)))
        return 0;
    size_t k = st_->out.iov(iov, max);
    if (k)
        flags_ |= kLentOut;
    return k;
}

void Conn::on_written(size_t n) {
    flags_ &= static_cast<uint32_t>(~kLentOut);
    if (!st_)
        return;
    if (flags_ & (kDead | kAbort))
        st_->out.clear(); // dropped while the write was out
    else
        st_->out.consume(n);
    if (st_->out.pending() == 0)
        release_if_idle();
}

size_t Conn::output_pending() const {
    if (!st_ || (flags_ & (kDead | kAbort)))
        return 0;
    const State &s = *st_;
    size_t n = s.out.pending();
    if (s.streams && s.write_seq != s.parse_seq) {
        // A ranged file answer's body is output too (the write timer, the
        // settle's write), though it never sits in the queue.
        const ExSlot &sl = s.slot(s.write_seq);
        if (sl.state == kStreaming && sl.stream_direct && sl.file_ranged && sl.file_fd >= 0)
            n += static_cast<size_t>(sl.stream_left);
    }
    return n;
}

bool Conn::peer_sent_more() const { return (flags_ & kMoreInput) || (st_ && st_->end > st_->parse_pos); }

void Conn::close(uint32_t reason) {
    if (!(flags_ & kClosing)) {
        close_reason_ = reason;
        flags_ |= kClosing | kNoMore;
    }
    // Input about to be discarded unparsed (pipelined requests, a request
    // or body half read) was sent past what will be answered: the close
    // lingers (peer_sent_more), or its reset would cut the last answers.
    if (st_ && !(flags_ & kFinal) && (st_->end > st_->parse_pos || st_->phase != kHead))
        flags_ |= kMoreInput;
    // A body cut for its client's slowness tells the host it timed out.
    bool slow = reason == WEIR_CLOSE_BODY_TIMEOUT || reason == WEIR_CLOSE_REQUEST_TIMEOUT ||
                reason == WEIR_CLOSE_SLOW_BODY;
    end_body(slow ? -ETIMEDOUT : -ECONNABORTED);
    if (st_ && !(flags_ & kFinal)) {
        State &s = *st_;
        s.phase = kHead;
        s.cont_pending = false;
        s.parse_pos = s.end;
        if (s.write_seq == s.parse_seq)
            flags_ |= kFinal;
    }
}

void Conn::on_closed() {
    flags_ |= kDead | kClosing | kNoMore | kFinal;
    if (!st_)
        return;
    end_body(-ECONNABORTED);
    drop_unanswered();
    if (!(flags_ & kLentOut))
        st_->out.clear();
    release_if_idle();
}

bool Conn::wants_close() const {
    if (!(flags_ & kClosing))
        return false;
    if (flags_ & (kFinal | kDead))
        return true;
    return !st_ || st_->write_seq == st_->parse_seq;
}

uint32_t Conn::close_reason() const { return close_reason_; }

uint32_t Conn::outstanding() const { return st_ ? st_->taken : 0; }

uint32_t Conn::first_unwritten() const { return st_ ? st_->write_seq : 0; }

uint32_t Conn::ring_size() const { return st_ ? st_->nslots : 0; }

Exchange *Conn::taken_seq(uint32_t seq) {
    if (!st_)
        return nullptr;
    ExSlot &sl = st_->slot(seq);
    return (sl.state == kTaken || sl.state == kStreaming) && sl.x.seq == seq ? &sl.x : nullptr;
}

Exchange *Conn::dropped_at(uint32_t i) {
    if (!st_ || i >= st_->nslots)
        return nullptr;
    ExSlot &sl = st_->slots[i];
    return sl.state == kDropped ? &sl.x : nullptr;
}

ConnWait Conn::wait() const {
    if (flags_ & kDead)
        return ConnWait::Done;
    if (output_pending())
        return ConnWait::Output;
    if (wants_close())
        return ConnWait::Done;
    if (flags_ & kProxyWait)
        return ConnWait::Proxy;
    if (!(flags_ & kGotBytes))
        return ConnWait::FirstByte;
    if (!st_)
        return ConnWait::Idle;
    const State &s = *st_;
    if (s.phase == kBodyStream && s.body_wait)
        return ConnWait::Body; // the host waits for the client's bytes
    if (s.taken || s.write_seq != s.parse_seq)
        return ConnWait::Handler;
    if (s.phase != kHead)
        return ConnWait::Body;
    if (s.parse_pos != s.end)
        return ConnWait::Head;
    return ConnWait::Idle;
}

uint64_t Conn::reading() const {
    bool body_out = st_ && st_->phase == kBodyStream; // counted at its head, still arriving
    return counters_.requests + (body_out ? 0 : 1);
}

bool Conn::holds_buffers() const { return st_ != nullptr; }

bool Conn::lent() const { return (flags_ & (kLentIn | kLentOut)) != 0; }

// Gives the state back to the pool once it holds nothing anyone needs: no
// exchange out, nothing being read into or written from, nothing buffered
// (a dead connection's bytes are nobody's).
void Conn::release_if_idle() {
    if (!st_ || (flags_ & (kLentIn | kLentOut)))
        return;
    State &s = *st_;
    if (s.taken || s.write_seq != s.parse_seq || s.phase != kHead)
        return;
    if (!(flags_ & kDead) && (s.parse_pos != s.end || s.out.pending()))
        return;
    pool_.give(st_);
    st_ = nullptr;
}

} // namespace weir
