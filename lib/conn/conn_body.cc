// Conn, streamed request bodies (weir_body_read; ConnSettings::stream_body_bytes).
//
// A request whose body streams is handed out as soon as its head is
// parsed (phase kBodyStream); the body's raw bytes then arrive after the
// head in the read buffer and the host takes them out decoded. The head's
// views must not move while its exchange is out, so the buffer is never
// relocated: consumed bytes are reclaimed by moving what is left of the
// body back to just after the head (compact_body, from read_space). A
// chunked body's trailer section is kept there once the decoder reaches
// it, so its views can be given to the host at the end of the body.
// Nothing after the body is parsed until the host has read it to its end;
// an answer begun earlier ends it (the connection closes after that
// answer, WEIR_CLOSE_BODY_UNREAD, the rest discarded by the lingering close).
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "conn/conn_state.h"
#include "http1/parser.h"

namespace weir {

using namespace conn_detail;

namespace {

// Room a streamed body needs after its head: a chunked one's trailer
// section must fit there whole, and reads should not be tiny.
constexpr size_t kBodyRoom = 4096;

} // namespace

bool Conn::streams_body(const weir_http1_request &h) const {
    if (!settings_.stream_body_bytes || h.body_kind == WEIR_BODY_NONE)
        return false;
    if (h.body_kind == WEIR_BODY_CHUNKED)
        return true;
    if (h.content_length == 0)
        return false;
    return h.content_length >= settings_.stream_body_bytes || (h.flags & WEIR_REQ_EXPECT_CONTINUE);
}

// The request being read streams its body: make sure there is room after
// its head before the head's views are handed out and pin the buffer. The
// buffer may move only while nothing else pins it and no read is lent;
// otherwise the caller waits for an answer (respond() parses again) or for
// the read to return (on_read() parses again).
bool Conn::body_room() {
    State &s = *st_;
    size_t need = kBodyRoom + (s.head.body_kind == WEIR_BODY_CHUNKED ? settings_.limits.max_trailer_bytes : 0);
    if (s.cap - s.head_end >= need)
        return true;
    if (s.live() > 0 || (flags_ & kLentIn))
        return false;
    size_t keep = s.end - s.head_start;
    size_t ncap = keep + need > s.cap ? keep + need : s.cap;
    char *nb = static_cast<char *>(std::malloc(ncap));
    if (!nb) {
        close(WEIR_CLOSE_RESOURCE);
        return false;
    }
    relocate(nb, ncap, s.head_start); // phase is kBodyStream: the head's views move with it
    return true;
}

// After complete(): the exchange just made is handed out with its body to come.
void Conn::begin_body() {
    State &s = *st_;
    uint32_t seq = s.parse_seq - 1;
    ExSlot &sl = s.slot(seq);
    weir_request &r = sl.x.req;
    r.flags |= WEIR_REQ_BODY_STREAM;
    r.body = weir_str_t{nullptr, 0};
    s.body_chunked = s.head.body_kind == WEIR_BODY_CHUNKED;
    r.body_length = s.body_chunked ? UINT64_MAX : s.head.content_length;
    sl.body = kBodyOpen;
    sl.body_error = 0;
    s.body_seq = seq;
    s.body_base = s.body_pos = s.head_end;
    s.body_left = s.head.content_length;
    s.body_wait = false;
    // A 100 Continue is the host's to give (its first read) or to refuse
    // (an answer first); bytes already here need none.
    s.cont_pending = false;
    s.cont_done = s.end > s.head_end || !(r.flags & WEIR_REQ_EXPECT_CONTINUE);
    if (s.body_chunked) {
        // max_body bounds it as it bounds a buffered one (refused at the
        // chunk size that crosses it: body_read_chunked).
        http1::chunked_init(&s.dec, settings_.limits);
        // The head's field views and the trailers' to come, side by side.
        s.arena_pos = s.arena_cur + r.num_headers + settings_.limits.max_trailers;
    }
    s.phase = kBodyStream;
    // A last request (not keep-alive) still has its body to read: parsing
    // stops at kBodyStream, and input must go on until the body's end.
    flags_ &= static_cast<uint32_t>(~kNoMore);
}

// Read to its end: what follows is the next request's.
void Conn::body_done() {
    State &s = *st_;
    ExSlot &sl = s.slot(s.body_seq);
    sl.body = kBodyDone;
    s.phase = kHead;
    s.parse_pos = s.body_pos;
    if (!(sl.x.req.flags & WEIR_REQ_KEEP_ALIVE))
        flags_ |= kNoMore;
}

// The first byte that must stay: the next raw one, or the start of a
// chunked body's trailer section once the decoder is in it.
size_t Conn::body_keep() const {
    const State &s = *st_;
    if (s.body_chunked && s.dec.trailer_off != 0)
        return s.body_pos - static_cast<size_t>(s.dec.raw_len - s.dec.trailer_off);
    return s.body_pos;
}

void Conn::compact_body() {
    State &s = *st_;
    size_t from = body_keep();
    if (from == s.body_base)
        return;
    size_t shift = from - s.body_base;
    std::memmove(s.buf + s.body_base, s.buf + from, s.end - from);
    s.end -= shift;
    s.body_pos -= shift;
}

// The body ends without its host reading it to the end: error is what a
// later read answers. Nothing of it is parsed further.
void Conn::end_body(int error) {
    if (!st_ || st_->phase != kBodyStream)
        return;
    State &s = *st_;
    ExSlot &sl = s.slot(s.body_seq);
    if (sl.body == kBodyOpen) {
        sl.body = kBodyFailed;
        sl.body_error = error;
    }
    s.phase = kHead;
    s.cont_pending = false;
    s.parse_pos = s.end;
}

// An answer to x begins: if its body was still being read, the rest will
// not be, and the connection closes after the answer (the caller says so
// in the answer). Returns whether it was.
bool Conn::body_cut(const Exchange *x) {
    if (!st_)
        return false;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.body != kBodyOpen)
        return false;
    end_body(0);
    sl.body = kBodyDone;
    flags_ |= kNoMore | kMoreInput;
    return true;
}

int64_t Conn::body_read(Exchange *x, void *buf, size_t cap) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (sl.state != kTaken || sl.body == kBodyNone)
        return WEIR_E_STATE;
    if (sl.body == kBodyDone)
        return 0;
    if (sl.body == kBodyFailed)
        return sl.body_error;
    if (!buf || cap == 0)
        return -EINVAL;
    if (s.phase != kBodyStream || s.body_seq != x->seq) { // every way out of the phase marks it
        sl.body = kBodyFailed;
        sl.body_error = -ECONNABORTED;
        return sl.body_error;
    }
    int64_t n;
    if (s.body_chunked) {
        n = body_read_chunked(s, static_cast<char *>(buf), cap);
    } else {
        size_t k = s.end - s.body_pos;
        if (k > cap)
            k = cap;
        if (k > s.body_left)
            k = static_cast<size_t>(s.body_left);
        std::memcpy(buf, s.buf + s.body_pos, k);
        s.body_pos += k;
        s.body_left -= k;
        n = k ? static_cast<int64_t>(k) : -EAGAIN;
        if (s.body_left == 0)
            body_done();
    }
    s.body_wait = n == -EAGAIN;
    if (n == -EAGAIN && !s.cont_done) {
        // The client waits for leave to send the body: flush() queues the
        // 100 now, or once the answers before this request have left.
        s.cont_done = true;
        s.cont_pending = true;
        flush();
    }
    if (sl.body == kBodyDone && !(flags_ & (kClosing | kNoMore | kDead)) && s.parse_pos < s.end)
        parse(); // requests pipelined behind the body
    return n;
}

// Decodes raw bytes straight into the host's buffer: framing alone yields
// nothing, so it goes on while raw bytes are left and none was produced.
int64_t Conn::body_read_chunked(State &s, char *out, size_t cap) {
    const weir_http1_limits &lim = settings_.limits;
    ExSlot &sl = s.slot(s.body_seq);
    size_t got = 0;
    int rc = WEIR_E_INCOMPLETE;
    while (got == 0 && s.body_pos < s.end) {
        size_t in_len = s.end - s.body_pos;
        if (in_len > cap)
            in_len = cap; // data never outruns its raw bytes: out has room for all of it
        size_t used = 0, produced = 0;
        rc = http1::chunked_decode(&s.dec, s.buf + s.body_pos, in_len, &used, out, &produced);
        s.body_pos += used;
        got += produced;
        if (rc != WEIR_E_INCOMPLETE)
            break;
    }
    if (rc == WEIR_E_INCOMPLETE)
        return got ? static_cast<int64_t>(got) : -EAGAIN;
    if (rc == 0) {
        // The trailer section lies whole after the data, kept in place
        // (body_keep): its views stay valid until the exchange is answered.
        int nt = 0;
        if (s.dec.num_trailers) {
            const char *tr = s.buf + s.body_pos - (s.dec.raw_len - s.dec.trailer_off);
            auto *views = const_cast<weir_header_t *>(sl.x.req.headers) + sl.x.req.num_headers;
            nt = http1::parse_trailers(tr, s.dec.trailer_len, lim, views, lim.max_trailers);
            if (nt >= 0) {
                sl.x.req.trailers = views;
                sl.x.req.num_trailers = static_cast<uint32_t>(nt);
            }
        }
        if (nt >= 0) {
            body_done();
            return static_cast<int64_t>(got);
        }
        rc = nt;
    }
    // A malformed body, or one a chunk size took past max_body (refused
    // before that chunk's data): what came of it so far is the host's, then
    // the error; the host answers (weir_http1_status) and the connection
    // closes. For WEIR_E_BODY_TOO_LARGE the loop answers 413 itself
    // (Worker::body_refuse), so the limit holds whatever the host does.
    counters_.parse_errors++;
    end_body(rc);
    close(WEIR_CLOSE_BAD_REQUEST);
    flags_ |= kMoreInput; // the client may be sending the rest: the close lingers
    return got ? static_cast<int64_t>(got) : rc;
}

bool Conn::body_ready(const Exchange *x) const {
    if (!st_ || (flags_ & kDead))
        return true;
    const State &s = *st_;
    const ExSlot &sl = s.slot(x->seq);
    if (&sl.x != x || sl.state != kTaken || sl.body != kBodyOpen)
        return true;
    return s.phase != kBodyStream || s.end > s.body_pos;
}

} // namespace weir
