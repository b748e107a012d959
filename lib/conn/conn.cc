#include "conn/conn.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "http1/parser.h"
#include "http1/response.h"
#include "util/codes.h"
#include "util/bytes.h"

namespace weir {
namespace {

enum SlotState : uint8_t {
    kFree,
    kReady,    // parsed, not handed out
    kTaken,    // handed out, not answered
    kAnswered, // answered out of order: waits for earlier answers
    kError,    // weir answers it itself (parse error), then closes
    kDropped,  // handed out, but the connection closed first
};

enum Phase : uint8_t { kHead, kBodyLength, kBodyChunked };

enum ConnFlag : uint8_t {
    kClosing = 1,   // no more input; close once what is owed is written
    kNoMore = 2,    // parse no further requests (error, or not keep-alive)
    kDead = 4,      // the fd is closed
    kFinal = 8,     // the last answer has been queued
    kAbort = 16,    // close now, drop pending output
};

constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
// Bodies need room for their head too; the head is bounded by the parser limits.
constexpr size_t kHeadSlack = 64;

struct Slot {
    Exchange x;
    Bytes answer; // an out-of-order answer, kept until its turn
    uint8_t state = kFree;
    bool answer_closes = false;
    uint32_t answer_reason = 0;
    int error_status = 0;
};

} // namespace

struct Conn::State {
    State *next_free = nullptr;
    const ConnSettings &cfg;

    // Read buffer: the pooled block, or a private heap buffer while a large
    // head or body needs more room.
    char *block = nullptr;
    char *buf = nullptr;
    size_t cap = 0;
    size_t parse_pos = 0; // start of the next request's head
    size_t end = 0;       // bytes held

    // The request being read.
    Phase phase = kHead;
    bool cont_pending = false; // 100 Continue owed to the request being read
    size_t head_start = 0, head_end = 0;
    size_t raw_pos = 0, data_end = 0; // chunked: next raw byte, end of decoded data
    weir_http1_request head{};
    weir_http1_chunked dec{};
    uint32_t arena_cur = 0; // where the request being read keeps its field views

    // Exchanges, a ring indexed by sequence number.
    Slot *slots = nullptr;
    uint32_t nslots = 0;
    uint32_t write_seq = 0; // next answer to queue for output
    uint32_t take_seq = 0;  // next request to hand out
    uint32_t parse_seq = 0; // the request being read
    uint32_t taken = 0;     // handed out and unanswered (kTaken + kDropped)

    weir_header_t *arena = nullptr;
    uint32_t arena_cap = 0;
    uint32_t arena_pos = 0;

    Bytes out;
    size_t sent = 0;

    explicit State(const ConnSettings &c) : cfg(c) {
        cap = c.read_buffer_size ? c.read_buffer_size : 16384;
        block = static_cast<char *>(std::malloc(cap));
        buf = block;
        nslots = c.max_pipeline ? c.max_pipeline : 1;
        slots = new Slot[nslots];
        uint32_t per = c.limits.max_headers + c.limits.max_trailers;
        arena_cap = 2 * per > 8 * nslots ? 2 * per : 8 * nslots;
        arena = new weir_header_t[arena_cap];
        if (!block)
            throw std::bad_alloc();
    }
    ~State() {
        if (buf != block)
            std::free(buf);
        std::free(block);
        delete[] slots;
        delete[] arena;
    }

    Slot &slot(uint32_t seq) { return slots[seq % nslots]; }
    uint32_t live() const { return parse_seq - write_seq; }

    // Back to a fresh state for the next owner; keeps the allocations.
    void reset() {
        if (buf != block) {
            std::free(buf);
            buf = block;
            cap = cfg.read_buffer_size ? cfg.read_buffer_size : 16384;
        }
        parse_pos = end = 0;
        phase = kHead;
        cont_pending = false;
        // Keep-alive connections come back here after every answer: touch
        // only the slots used since the last reset (sequences start at 0).
        uint32_t used = parse_seq < nslots ? parse_seq : nslots;
        for (uint32_t i = 0; i < used; ++i) {
            slots[i].state = kFree;
            slots[i].answer.shrink_to(64 * 1024);
        }
        write_seq = take_seq = parse_seq = taken = 0;
        arena_pos = arena_cur = 0;
        out.shrink_to(256 * 1024);
        sent = 0;
    }
};

// ---------------------------------------------------------------- ConnPool

ConnPool::ConnPool(const ConnSettings &settings) : settings_(settings) {}

ConnPool::~ConnPool() {
    auto *s = static_cast<Conn::State *>(free_);
    while (s) {
        auto *n = s->next_free;
        delete s;
        s = n;
    }
}

size_t ConnPool::cached() const { return cached_; }

void *ConnPool::take() {
    if (free_) {
        auto *s = static_cast<Conn::State *>(free_);
        free_ = s->next_free;
        --cached_;
        s->next_free = nullptr;
        return s;
    }
    return new Conn::State(settings_);
}

void ConnPool::give(void *p) {
    auto *s = static_cast<Conn::State *>(p);
    s->reset();
    // A burst of active connections should not pin its memory forever.
    if (cached_ >= 256) {
        delete s;
        return;
    }
    s->next_free = static_cast<Conn::State *>(free_);
    free_ = s;
    ++cached_;
}

// ---------------------------------------------------------------- Conn

Conn::Conn(const ConnSettings &settings, ConnPool &pool, uint64_t id) : settings_(settings), pool_(pool), id_(id) {}

Conn::~Conn() {
    if (st_)
        pool_.give(st_);
}

namespace {

bool is_head_method(weir_str_t m) { return m.len == 4 && std::memcmp(m.ptr, "HEAD", 4) == 0; }

// Moves a view that pointed into [old_base, ...) to the same offset from new_base.
void rebase(weir_str_t &v, const char *old_base, const char *new_base) {
    if (v.ptr)
        v.ptr = new_base + (v.ptr - old_base);
}

} // namespace

iovec Conn::read_space() {
    if (flags_ & (kClosing | kNoMore | kDead))
        return {nullptr, 0};
    if (!st_) {
        st_ = static_cast<State *>(pool_.take());
    }
    State &s = *st_;
    if (s.live() >= s.nslots)
        return {nullptr, 0};
    if (s.cap - s.end >= 512 || (s.end < s.cap && s.live() > 0))
        return {s.buf + s.end, s.cap - s.end};
    if (s.live() > 0)
        return {nullptr, 0}; // views of unanswered requests pin the buffer
    // Nothing is handed out: the request being read may move.
    size_t start = s.phase == kHead ? s.parse_pos : s.head_start;
    size_t keep = s.end - start;
    size_t want = s.cap;
    if (keep + 512 > s.cap) {
        const weir_http1_limits &l = settings_.limits;
        size_t head_max = size_t{l.max_request_line} + l.max_header_bytes + kHeadSlack;
        size_t hard = head_max + l.max_body + s.cfg.read_buffer_size;
        if (s.phase == kBodyChunked)
            hard += l.max_body + 65536; // chunk framing on top of the data
        if (s.cap >= hard) {
            if (s.end < s.cap)
                return {s.buf + s.end, s.cap - s.end};
            // Only chunk framing can get here: refuse rather than grow without bound.
            refuse(WEIR_E_BODY_TOO_LARGE);
            return {nullptr, 0};
        }
        want = s.cap * 2;
        if (s.phase == kBodyLength && head_max + s.head.content_length > want)
            want = (s.head_end - s.head_start) + s.head.content_length + 512;
        if (want > hard)
            want = hard;
    }
    char *nb = s.buf;
    if (want != s.cap) {
        nb = static_cast<char *>(std::malloc(want));
        if (!nb) {
            close(WEIR_CLOSE_RESOURCE);
            return {nullptr, 0};
        }
    }
    relocate(nb, want, start);
    return {s.buf + s.end, s.cap - s.end};
}

void Conn::relocate(char *nb, size_t ncap, size_t start) {
    State &s = *st_;
    const char *old_base = s.buf + start;
    size_t keep = s.end - start;
    std::memmove(nb, s.buf + start, keep);
    if (s.phase != kHead) {
        weir_http1_request &h = s.head;
        rebase(h.method, old_base, nb);
        rebase(h.target, old_base, nb);
        rebase(h.path, old_base, nb);
        rebase(h.query, old_base, nb);
        rebase(h.host, old_base, nb);
        for (uint32_t i = 0; i < h.num_headers; ++i) {
            rebase(s.arena[s.arena_cur + i].name, old_base, nb);
            rebase(s.arena[s.arena_cur + i].value, old_base, nb);
        }
        s.head_start -= start;
        s.head_end -= start;
        s.raw_pos -= start;
        s.data_end -= start;
    }
    s.parse_pos -= start;
    s.end = keep;
    if (nb != s.buf) {
        if (s.buf != s.block)
            std::free(s.buf);
        s.buf = nb;
        s.cap = ncap;
    }
}

void Conn::on_read(size_t n) {
    if (!st_)
        return;
    if (n == 0) {
        release_if_idle();
        return;
    }
    st_->end += n;
    if (st_->end > st_->cap)
        st_->end = st_->cap; // defensive: a backend bug must not turn into an overflow
    parse();
    flush();
}

void Conn::parse() {
    State &s = *st_;
    const weir_http1_limits &lim = settings_.limits;
    while (!(flags_ & (kClosing | kNoMore | kDead))) {
        if (s.phase == kHead) {
            if (s.parse_pos == s.end || s.live() >= s.nslots)
                return;
            uint32_t need = lim.max_headers + lim.max_trailers;
            if (s.arena_cap - s.arena_pos < need) {
                if (s.live() > 0)
                    return; // earlier requests still use the views
                s.arena_pos = 0;
            }
            s.head.size = sizeof s.head;
            int rc = http1::parse_request(s.buf + s.parse_pos, s.end - s.parse_pos, lim, &s.head,
                                          s.arena + s.arena_pos, lim.max_headers);
            if (rc == WEIR_E_INCOMPLETE)
                return;
            if (rc < 0) {
                refuse(rc);
                return;
            }
            s.arena_cur = s.arena_pos;
            s.head_start = s.parse_pos;
            s.head_end = s.parse_pos + static_cast<size_t>(rc);
            if (s.head.body_kind == WEIR_BODY_LENGTH) {
                s.phase = kBodyLength;
            } else if (s.head.body_kind == WEIR_BODY_CHUNKED) {
                s.phase = kBodyChunked;
                http1::chunked_init(&s.dec, lim);
                s.raw_pos = s.data_end = s.head_end;
            } else {
                complete(s.head_end, 0, 0);
                continue;
            }
            s.cont_pending = (s.head.flags & WEIR_REQ_EXPECT_CONTINUE) != 0;
        }
        if (s.phase == kBodyLength) {
            if (s.end - s.head_end < s.head.content_length) {
                flush(); // a 100 Continue may be due
                return;
            }
            complete(s.head_end, static_cast<size_t>(s.head.content_length), 0);
            s.parse_pos = s.head_end + static_cast<size_t>(s.head.content_length);
            continue;
        }
        // Chunked: decode in place; data only ever moves towards the head.
        size_t used = 0, produced = 0;
        int rc = http1::chunked_decode(&s.dec, s.buf + s.raw_pos, s.end - s.raw_pos, &used, s.buf + s.data_end,
                                       &produced);
        s.raw_pos += used;
        s.data_end += produced;
        if (rc == WEIR_E_INCOMPLETE) {
            flush();
            return;
        }
        if (rc < 0) {
            refuse(rc);
            return;
        }
        // Trailer bytes lie after every data byte, so decoding did not touch them.
        int nt = 0;
        if (s.dec.num_trailers) {
            nt = http1::parse_trailers(s.buf + s.head_end + s.dec.trailer_off, s.dec.trailer_len, lim,
                                       s.arena + s.arena_cur + s.head.num_headers, lim.max_trailers);
            if (nt < 0) {
                refuse(nt);
                return;
            }
        }
        complete(s.head_end, s.data_end - s.head_end, static_cast<uint32_t>(nt));
        s.parse_pos = s.raw_pos;
    }
}

void Conn::complete(size_t body_off, size_t body_len, uint32_t num_trailers) {
    State &s = *st_;
    Slot &sl = s.slot(s.parse_seq);
    weir_request &r = sl.x.req;
    const weir_http1_request &h = s.head;
    r = weir_request{};
    r.size = sizeof r;
    r.version_minor = h.version_minor;
    r.flags = h.flags;
    r.num_headers = h.num_headers;
    r.num_trailers = num_trailers;
    r.method = h.method;
    r.target = h.target;
    r.path = h.path;
    r.query = h.query;
    r.host = h.host;
    r.headers = s.arena + s.arena_cur;
    r.trailers = s.arena + s.arena_cur + h.num_headers;
    r.body = weir_str_t{s.buf + body_off, body_len};
    r.connection_id = id_;
    sl.x.conn = this;
    sl.x.seq = s.parse_seq;
    sl.x.user = nullptr;
    sl.state = kReady;
    sl.answer.clear();
    s.arena_pos = s.arena_cur + h.num_headers + num_trailers;
    s.parse_seq++;
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.head_end; // callers with a body move it past the body
    counters_.requests++;
    if (!(h.flags & WEIR_REQ_KEEP_ALIVE))
        flags_ |= kNoMore;
}

void Conn::refuse(int rc) {
    State &s = *st_;
    Slot &sl = s.slot(s.parse_seq);
    int status = code_status(rc);
    sl.state = kError;
    sl.error_status = status ? status : 400;
    sl.x.conn = this;
    sl.x.seq = s.parse_seq;
    s.parse_seq++;
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.end; // nothing after a refused request is read
    counters_.parse_errors++;
    flags_ |= kNoMore;
    flush();
}

Exchange *Conn::take_request() {
    if (!st_ || (flags_ & kDead))
        return nullptr;
    State &s = *st_;
    while (s.take_seq != s.parse_seq) {
        Slot &sl = s.slot(s.take_seq);
        if (sl.state == kError) {
            s.take_seq++;
            continue;
        }
        if (sl.state != kReady)
            return nullptr;
        sl.state = kTaken;
        s.take_seq++;
        s.taken++;
        return &sl.x;
    }
    return nullptr;
}

int Conn::respond(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                  size_t body_len, uint32_t flags) {
    if (!x || x->conn != this || !st_)
        return -EINVAL;
    State &s = *st_;
    Slot &sl = s.slot(x->seq);
    if (&sl.x != x)
        return -EINVAL;
    if (sl.state == kDropped || (flags_ & kDead && sl.state == kTaken)) {
        sl.state = kFree;
        s.taken--;
        release_if_idle();
        return WEIR_E_GONE;
    }
    if (sl.state != kTaken)
        return -EINVAL;
    int rc = http1::validate_answer(status, headers, num_headers, body, body_len);
    if (rc < 0)
        return rc;
    const weir_request &r = x->req;
    bool keep = (r.flags & WEIR_REQ_KEEP_ALIVE) != 0;
    http1::ResponseShape shape;
    shape.head = is_head_method(r.method);
    shape.close = !keep || (flags & WEIR_RESPOND_CLOSE) || (flags_ & kClosing);
    shape.keep_alive_10 = keep && r.version_minor == 0;
    uint32_t reason = !keep ? WEIR_CLOSE_NOT_KEEP_ALIVE
                            : (flags & WEIR_RESPOND_CLOSE) ? WEIR_CLOSE_HANDLER : close_reason_;
    s.taken--;
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
        sl.answer.clear();
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
        Slot &sl = s.slot(s.write_seq);
        if (sl.state == kAnswered) {
            bool ok = s.out.append(sl.answer.p, sl.answer.len);
            sl.state = kFree;
            s.write_seq++;
            counters_.responses++;
            if (!ok) {
                abort(WEIR_CLOSE_RESOURCE);
                return;
            }
            if (sl.answer_closes) {
                finish(sl.answer_reason);
                return;
            }
        } else if (sl.state == kError) {
            bool ok = http1::write_error_response(s.out, sl.error_status);
            sl.state = kFree;
            s.write_seq++;
            counters_.responses++;
            if (!ok) {
                abort(WEIR_CLOSE_RESOURCE);
                return;
            }
            finish(WEIR_CLOSE_BAD_REQUEST);
            return;
        } else {
            break;
        }
    }
    if (s.cont_pending && s.write_seq == s.parse_seq && s.phase != kHead && !(flags_ & kClosing)) {
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

// The answer just queued is the last one: drop whatever came after it.
void Conn::finish(uint32_t reason) {
    State &s = *st_;
    if (!(flags_ & kClosing))
        close_reason_ = reason;
    flags_ |= kClosing | kNoMore | kFinal;
    for (uint32_t q = s.write_seq; q != s.parse_seq; ++q) {
        Slot &sl = s.slot(q);
        if (sl.state == kTaken)
            sl.state = kDropped;
        else
            sl.state = kFree;
    }
    s.write_seq = s.take_seq = s.parse_seq;
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.end;
}

void Conn::check_output_limit() {
    if (st_ && st_->out.len - st_->sent > settings_.max_output_bytes)
        abort(WEIR_CLOSE_OUTPUT_LIMIT);
}

void Conn::abort(uint32_t reason) {
    if (!(flags_ & kAbort))
        close_reason_ = reason;
    flags_ |= kClosing | kNoMore | kFinal | kAbort;
    if (st_) {
        State &s = *st_;
        s.out.clear();
        s.sent = 0;
        for (uint32_t q = s.write_seq; q != s.parse_seq; ++q) {
            Slot &sl = s.slot(q);
            sl.state = sl.state == kTaken ? kDropped : kFree;
        }
        s.write_seq = s.take_seq = s.parse_seq;
    }
}

size_t Conn::output_iov(iovec *iov, size_t max) {
    if (!st_ || max == 0 || (flags_ & kDead))
        return 0;
    State &s = *st_;
    if (s.out.len == s.sent)
        return 0;
    iov[0].iov_base = s.out.p + s.sent;
    iov[0].iov_len = s.out.len - s.sent;
    return 1;
}

void Conn::on_written(size_t n) {
    if (!st_)
        return;
    State &s = *st_;
    s.sent += n;
    if (s.sent >= s.out.len) {
        s.out.len = 0;
        s.sent = 0;
        release_if_idle();
    } else if (s.sent > 65536 && s.sent > s.out.len / 2) {
        std::memmove(s.out.p, s.out.p + s.sent, s.out.len - s.sent);
        s.out.len -= s.sent;
        s.sent = 0;
    }
}

size_t Conn::output_pending() const {
    if (!st_ || (flags_ & kDead))
        return 0;
    return st_->out.len - st_->sent;
}

void Conn::on_eof() {
    if (st_ && !(flags_ & kFinal)) {
        // A partial request can never complete now; complete ones still get answers.
        State &s = *st_;
        s.phase = kHead;
        s.cont_pending = false;
        s.end = s.parse_pos;
    }
    close(WEIR_CLOSE_PEER);
}

void Conn::close(uint32_t reason) {
    if (!(flags_ & kClosing)) {
        close_reason_ = reason;
        flags_ |= kClosing | kNoMore;
    }
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
    State &s = *st_;
    for (uint32_t q = s.write_seq; q != s.parse_seq; ++q) {
        Slot &sl = s.slot(q);
        sl.state = sl.state == kTaken ? kDropped : kFree;
    }
    s.write_seq = s.take_seq = s.parse_seq;
    s.out.clear();
    s.sent = 0;
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

ConnWait Conn::wait() const {
    if (flags_ & kDead)
        return ConnWait::Done;
    size_t pending = output_pending();
    if (pending)
        return ConnWait::Output;
    if (wants_close())
        return ConnWait::Done;
    if (!st_)
        return ConnWait::Idle;
    const State &s = *st_;
    if (s.taken || s.write_seq != s.parse_seq)
        return ConnWait::Handler;
    if (s.parse_pos != s.end || s.phase != kHead)
        return ConnWait::Head;
    return ConnWait::Idle;
}

bool Conn::holds_buffers() const { return st_ != nullptr; }

void Conn::release_if_idle() {
    if (!st_)
        return;
    State &s = *st_;
    if (s.taken || s.write_seq != s.parse_seq || s.phase != kHead)
        return;
    if (!(flags_ & kDead) && (s.parse_pos != s.end || s.out.len != s.sent))
        return;
    pool_.give(st_);
    st_ = nullptr;
}

} // namespace weir
