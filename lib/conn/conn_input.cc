// Conn, input side: read space and its lend, parsing, handing requests out.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "conn/conn_state.h"
#include "http1/parser.h"
#include "util/codes.h"

namespace weir {

using namespace conn_detail;

namespace {

// Moves a view that pointed into [old_base, ...) to the same offset from new_base.
void rebase(weir_str_t &v, const char *old_base, const char *new_base) {
    if (v.ptr)
        v.ptr = new_base + (v.ptr - old_base);
}

size_t sat_add(size_t a, uint64_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + static_cast<size_t>(b); }

int status_for(int rc) {
    int status = code_status(rc);
    return status ? status : 400;
}

} // namespace

// Held, and between requests: what comes now is for the adopter.
bool Conn::held_between(const State &s) const { return (flags_ & (kHeld | kUpgradeWait)) && s.phase == kHead; }

bool Conn::ensure_state() {
    if (st_)
        return true;
    st_ = pool_.take();
    if (st_)
        return true;
    close(WEIR_CLOSE_RESOURCE);
    return false;
}

// Exactly when read_space() gives room (the loop asks before resuming a
// paused read, so a "yes" that read_space() then refuses would spin).
bool Conn::can_read() const {
    if (flags_ & (kClosing | kNoMore | kDead | kLentIn))
        return false;
    if (!st_)
        return true; // a state from the pool
    const State &s = *st_;
    if (s.live() >= s.nslots)
        return false;
    if (s.phase == kBodyStream)
        return s.end < s.cap || body_keep() > s.body_base; // compact_body() makes room
    if (s.cap - s.end >= 512)
        return true;
    // Views of unanswered requests pin the buffer, and a held connection's
    // next requests wait for the adopter: either reads only into the room
    // left. (A held connection's request in progress may still grow the
    // buffer: it must reach its boundary.)
    if (s.live() > 0 || held_between(s))
        return s.end < s.cap;
    return true; // the buffer may move or grow
}

iovec Conn::read_space() {
    if (!can_read() || !ensure_state())
        return {nullptr, 0};
    State &s = *st_;
    if (s.phase == kBodyStream) {
        // Its head is handed out: the buffer stays, consumed body bytes go.
        if (s.cap - s.end < 512)
            compact_body();
        flags_ |= kLentIn;
        return {s.buf + s.end, s.cap - s.end};
    }
    if (s.cap - s.end >= 512 || s.live() > 0 || held_between(s)) {
        flags_ |= kLentIn;
        return {s.buf + s.end, s.cap - s.end};
    }
    // Nothing is handed out: the request being read may move.
    size_t start = s.phase == kHead ? s.parse_pos : s.head_start;
    size_t keep = s.end - start;
    size_t want = s.cap;
    if (keep + 512 > s.cap) {
        const weir_http1_limits &l = settings_.limits;
        size_t head_max = size_t{l.max_request_line} + l.max_header_bytes + kHeadSlack;
        // Saturating: max_body may be WEIR_BODY_UNLIMITED (then only memory bounds it).
        size_t hard = sat_add(head_max + s.block_size(), l.max_body);
        if (s.phase == kBodyChunked)
            hard = sat_add(hard, sat_add(l.max_body, 65536)); // chunk framing on top of the data
        if (s.cap >= hard) {
            if (s.end < s.cap) {
                flags_ |= kLentIn;
                return {s.buf + s.end, s.cap - s.end};
            }
            // Only chunk framing can get here: refuse rather than grow without bound.
            refuse(status_for(WEIR_E_BODY_TOO_LARGE), WEIR_CLOSE_BAD_REQUEST, true);
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
    flags_ |= kLentIn;
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
    flags_ &= static_cast<uint32_t>(~kLentIn);
    if (!st_)
        return;
    if (n == 0 || (flags_ & kDead)) {
        release_if_idle();
        return;
    }
    // Header bytes are not the first byte of a request: the header timeout
    // counts from the header's end (conn_proxy.cc sets kGotBytes then).
    flags_ |= (flags_ & kProxyWait) ? kProxyBytes : kGotBytes;
    st_->end += n;
    if (st_->end > st_->cap)
        st_->end = st_->cap; // defensive: a backend bug must not turn into an overflow
    if (st_->phase == kBodyStream && !st_->cont_pending)
        st_->cont_done = true; // the client sent without waiting for a 100
    parse();
    flush();
}

size_t Conn::take_bytes(const char *p, size_t n) {
    size_t took = 0;
    while (took < n) {
        iovec sp = read_space();
        if (sp.iov_len == 0)
            break;
        size_t k = n - took < sp.iov_len ? n - took : sp.iov_len;
        std::memcpy(sp.iov_base, p + took, k);
        on_read(k);
        took += k;
    }
    return took;
}

void Conn::parse() {
    State &s = *st_;
    const weir_http1_limits &lim = settings_.limits;
    if ((flags_ & kProxyWait) && !proxy_step())
        return;
    if ((flags_ & (kSniff | kWantH2)) && !sniff_step())
        return;
    while (!(flags_ & (kClosing | kNoMore | kDead))) {
        if (s.phase == kBodyStream)
            return; // the host reads the body; what follows it waits
        if (s.phase == kHead) {
            if (s.parse_pos == s.end || s.live() >= s.nslots || (flags_ & (kHeld | kUpgradeWait)))
                return;
            uint32_t need = lim.max_headers + lim.max_trailers;
            if (s.arena_cap - s.arena_pos < need) {
                if (s.live() > 0)
                    return; // earlier requests still use the views
                s.arena_pos = 0;
            }
            s.head.size = sizeof s.head;
            // max_body holds for every body, streamed or buffered: a declared
            // length past it is refused here, before any 100 Continue and
            // before the host sees the request.
            int rc = http1::parse_request(s.buf + s.parse_pos, s.end - s.parse_pos, lim, &s.head,
                                          s.arena + s.arena_pos, lim.max_headers);
            if (rc == WEIR_E_INCOMPLETE)
                return;
            if (rc < 0) {
                refuse(status_for(rc), WEIR_CLOSE_BAD_REQUEST, true);
                return;
            }
            s.arena_cur = s.arena_pos;
            s.head_start = s.parse_pos;
            s.head_end = s.parse_pos + static_cast<size_t>(rc);
            if (flags_ & kH2Upgrade) [[unlikely]] {
                flags_ &= ~static_cast<uint32_t>(kH2Upgrade); // the first request only
                if (h2c_upgrade_asked(s.head)) {
                    flags_ |= kWantH2Up | kWantH2; // left unread: HTTP/2 answers it
                    return;
                }
            }
            if (streams_body(s.head)) {
                s.phase = kBodyStream; // body_room() may move the head: its views go with it
                if (!body_room()) {
                    s.phase = kHead; // parsed again once the buffer can grow
                    return;
                }
                complete(s.head_end, 0, 0);
                begin_body();
                return;
            }
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
            refuse(status_for(rc), WEIR_CLOSE_BAD_REQUEST, true);
            return;
        }
        // Trailer bytes lie after every data byte, so decoding did not touch them.
        int nt = 0;
        if (s.dec.num_trailers) {
            nt = http1::parse_trailers(s.buf + s.head_end + s.dec.trailer_off, s.dec.trailer_len, lim,
                                       s.arena + s.arena_cur + s.head.num_headers, lim.max_trailers);
            if (nt < 0) {
                refuse(status_for(nt), WEIR_CLOSE_BAD_REQUEST, true);
                return;
            }
        }
        complete(s.head_end, s.data_end - s.head_end, static_cast<uint32_t>(nt));
        s.parse_pos = s.raw_pos;
    }
}

void Conn::complete(size_t body_off, size_t body_len, uint32_t num_trailers) {
    State &s = *st_;
    ExSlot &sl = s.slot(s.parse_seq);
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
    r.body_length = body_len;
    sl.body = kBodyNone;
    sl.x.owner = this;
    sl.x.seq = s.parse_seq;
    sl.x.user = nullptr;
    sl.state = kReady;
    sl.answer.clear();
    sl.interim_len = 0;
    s.arena_pos = s.arena_cur + h.num_headers + num_trailers;
    s.parse_seq++;
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.head_end; // callers with a body move it past the body
    counters_.requests++;
    if (!(h.flags & WEIR_REQ_KEEP_ALIVE))
        flags_ |= kNoMore;
    else if (h.flags & WEIR_REQ_UPGRADE)
        flags_ |= kUpgradeWait; // parse nothing after it until its answer says which protocol follows
}

// weir answers the request being read itself (status), then closes with
// reason; nothing after it is read.
void Conn::refuse(int status, uint32_t reason, bool parse_error) {
    State &s = *st_;
    ExSlot &sl = s.slot(s.parse_seq);
    sl.state = kError;
    sl.error_status = status;
    sl.answer_reason = reason;
    sl.x.owner = this;
    sl.x.seq = s.parse_seq;
    s.parse_seq++;
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.end;
    if (parse_error)
        counters_.parse_errors++;
    flags_ |= kNoMore;
    flush();
}

void Conn::expire_input(uint32_t reason) {
    if (!(flags_ & kGotBytes)) {
        close(WEIR_CLOSE_SILENT); // nothing to answer: it never asked
        return;
    }
    if (!st_ || (flags_ & (kClosing | kNoMore | kDead)) || st_->live() != 0) {
        close(reason);
        return;
    }
    refuse(408, reason, false);
}

Exchange *Conn::take_request() {
    if (!st_ || (flags_ & kDead))
        return nullptr;
    State &s = *st_;
    while (s.take_seq != s.parse_seq) {
        ExSlot &sl = s.slot(s.take_seq);
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

bool Conn::has_request() const {
    if (!st_ || (flags_ & kDead))
        return false;
    for (uint32_t q = st_->take_seq; q != st_->parse_seq; ++q) {
        uint8_t state = st_->slots[q % st_->nslots].state;
        if (state != kError)
            return state == kReady;
    }
    return false;
}

void Conn::on_eof() {
    end_body(-ECONNABORTED); // a body being read can never end now
    if (st_ && !(flags_ & kFinal)) {
        // A partial request can never complete now; complete ones still get answers.
        State &s = *st_;
        s.phase = kHead;
        s.cont_pending = false;
        s.end = s.parse_pos;
    }
    close(WEIR_CLOSE_PEER);
}

} // namespace weir
