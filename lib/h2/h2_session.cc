// H2Session: construction, input, output, requests out, lifecycle.
#include "h2/h2_session.h"

#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "h2/h2_internal.h"
#include "h2/h2_stream.h"

namespace weir {

namespace h2_detail {

// Read buffers kept per thread (a session is touched only on its worker's
// thread): a keep-alive session gives its buffer back whenever a read finds
// nothing, so taking one from malloc each time would be a 16 KiB
// allocation per request.
namespace {
struct BufCache {
    static constexpr size_t kKeep = 64;
    size_t size = 0;
    size_t n = 0;
    char *free[kKeep];
    ~BufCache() {
        while (n)
            std::free(free[--n]);
    }
};
thread_local BufCache buf_cache;
} // namespace

char *take_buf(size_t size) {
    BufCache &c = buf_cache;
    if (c.size == size && c.n)
        return c.free[--c.n];
    return static_cast<char *>(std::malloc(size));
}

void give_buf(char *p, size_t size) {
    if (!p)
        return;
    BufCache &c = buf_cache;
    if (c.size != size) { // another engine's size: the cache follows the latest
        while (c.n)
            std::free(c.free[--c.n]);
        c.size = size;
    }
    if (c.n < BufCache::kKeep)
        c.free[c.n++] = p;
    else
        std::free(p);
}

} // namespace h2_detail

H2Session::Hooks &H2Session::hooks() {
    static Hooks h;
    return h;
}

// A recycled stream keeps small buffers (a request like the last one
// allocates nothing) and lets go of large ones: one upload's body or one
// answer held back by the windows is not kept for whichever stream comes next.
void H2Stream::shed() {
    auto drop = [](std::string &b) {
        if (b.capacity() > kKeepBuffer)
            std::string().swap(b);
    };
    drop(arena);
    drop(body);
    drop(out);
    if (fields.capacity() > kKeepBuffer / sizeof(Field))
        std::vector<Field>().swap(fields);
    if (hdrs.capacity() > kKeepBuffer / sizeof(weir_header_t))
        std::vector<weir_header_t>().swap(hdrs);
    std::vector<std::string>().swap(trailer_kv);
}

void H2Stream::reset_for_reuse() {
    // Copied from one fresh state, not assigned from a temporary: the
    // temporary was built (rep stos) and then copied (rep movs), 3.6 % of
    // the server's CPU at h2load -m16 (docs/http2.md "Performance").
    static const H2StreamState kFresh{};
    static_cast<H2StreamState &>(*this) = kFresh;
    arena.clear();
    fields.clear();
    hdrs.clear();
    body.clear();
    out.clear();
    trailer_kv.clear();
}

H2Session::H2Session(const ConnSettings &cs, const H2Settings &hs, ConnPool &pool, uint64_t id)
    : cs_(cs), hs_(hs), pool_(pool), id_(id), out_(pool.segments()) {
    if (hs_.max_concurrent_streams == 0)
        hs_.max_concurrent_streams = 100;
    if (hs_.stream_window == 0)
        hs_.stream_window = 65535;
    if (hs_.reset_window == 0)
        hs_.reset_window = 200;
    if (hs_.max_resets == 0)
        hs_.max_resets = 100;
    if (hs_.max_continuations == 0)
        hs_.max_continuations = 32;
    if (hs_.max_header_block == 0)
        hs_.max_header_block = 2 * std::max<uint32_t>(cs_.limits.max_header_bytes, 4096);
    if (hs_.max_control_frames == 0)
        hs_.max_control_frames = 1000;
    if (!h2_detail::make_session(*this))
        abort(WEIR_CLOSE_RESOURCE);
}

H2Session::~H2Session() {
    if (ng_)
        nghttp2_session_del(ng_);
    ng_ = nullptr;
    h2_detail::mem_cache_del(mem_); // after ng_: its last frees land in the cache
    mem_ = nullptr;
    for (H2Stream *s = live_; s;) {
        H2Stream *n = s->next_live;
        if (s->file_fd >= 0)
            ::close(s->file_fd);
        delete s;
        s = n;
    }
    while (free_) {
        H2Stream *n = free_->next_ready;
        delete free_;
        free_ = n;
    }
    h2_detail::give_buf(in_, cs_.read_buffer_size);
}

// ---- input

iovec H2Session::read_space() {
    if (!can_read())
        return {nullptr, 0};
    if (!in_) {
        in_ = h2_detail::take_buf(cs_.read_buffer_size);
        if (!in_) {
            abort(WEIR_CLOSE_RESOURCE);
            return {nullptr, 0};
        }
    }
    read_lent_ = true;
    return {in_, cs_.read_buffer_size};
}

void H2Session::on_read(size_t n) {
    read_lent_ = false;
    trim_free();
    if (n > 0)
        feed(in_, n);
    if (!lent() && in_ && (n == 0 || dead_)) {
        h2_detail::give_buf(in_, cs_.read_buffer_size); // nghttp2 copied what it keeps: idle, no buffer held
        in_ = nullptr;
    }
}

size_t H2Session::take_bytes(const char *p, size_t n) {
    trim_free();
    if (!can_read())
        return 0;
    feed(p, n);
    return n;
}

bool H2Session::can_read() const { return !dead_ && !no_input_ && !read_lent_ && ng_; }

void H2Session::on_eof() {
    eof_ = true;
    no_input_ = true;
    // Streams whose request is incomplete can never complete; answers to
    // complete ones may still leave (a half-closed peer can read).
    if (close_reason_ == kOpen) {
        close_reason_ = WEIR_CLOSE_PEER;
        graceful_ = true;
    }
}

void H2Session::feed(const char *p, size_t n) {
    if (n == 0 || no_input_ || dead_)
        return;
    got_bytes_ = true;
    ssize_t rv = nghttp2_session_mem_recv(ng_, reinterpret_cast<const uint8_t *>(p), n);
    if (oom_) {
        abort(WEIR_CLOSE_RESOURCE);
        return;
    }
    if (rv < 0) {
        if (close_reason_ != WEIR_CLOSE_H2_ABUSE) {
            bool flood = rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
            if (flood)
                h2c_.floods++;
            // nghttp2 already queued a GOAWAY for most connection errors;
            // for the rest (a bad preface) this one says why.
            finish(flood ? WEIR_CLOSE_H2_ABUSE : WEIR_CLOSE_H2_PROTOCOL,
                   flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
        }
        no_input_ = true;
    } else if (!nghttp2_session_want_read(ng_) && close_reason_ == kOpen) {
        // nghttp2 sent a GOAWAY for a connection error it found itself.
        close_reason_ = WEIR_CLOSE_H2_PROTOCOL;
        no_input_ = true;
    }
    pump();
}

// ---- output

// Frames what nghttp2 has to send into the segments while they hold less
// than a read buffer's worth four times over: the rest waits in nghttp2 (and
// in the streams), so a slow reader is bounded by the windows, not by us.
void H2Session::pump() {
    if (dead_ || !ng_)
        return;
    size_t high = std::max<size_t>(4u * cs_.read_buffer_size, 64u << 10);
    while (out_.pending() < high) {
        const uint8_t *p = nullptr;
        ssize_t n = nghttp2_session_mem_send(ng_, &p);
        if (oom_) {
            abort(WEIR_CLOSE_RESOURCE);
            return;
        }
        if (n < 0) {
            abort(n == NGHTTP2_ERR_NOMEM ? WEIR_CLOSE_RESOURCE : WEIR_CLOSE_H2_PROTOCOL);
            return;
        }
        if (n == 0)
            break;
        if (!out_.append(p, static_cast<size_t>(n))) {
            abort(WEIR_CLOSE_RESOURCE);
            return;
        }
    }
    check_output_limit();
}

// Unsent output: framed bytes, and the answers' bytes nghttp2 has not taken
// (held back by the peer's windows). Past max_output_bytes the peer is not
// reading: close.
void H2Session::check_output_limit() {
    if (dead_ || cs_.max_output_bytes == 0)
        return;
    if (unsent() > cs_.max_output_bytes)
        abort(WEIR_CLOSE_OUTPUT_LIMIT);
}

size_t H2Session::unsent() const {
    size_t n = out_.pending();
    for (const H2Stream *s = live_; s; s = s->next_live)
        n += s->backlog();
    return n;
}

// Framed bytes only: what a write could take now (the loop writes when this
// is not 0; bytes the peer's windows hold back are not writable).
size_t H2Session::output_pending() const { return out_.pending(); }

// An answer whose DATA the peer's windows hold back: the write deadline
// bounds a peer that never opens them.
bool H2Session::window_stalled() const {
    for (const H2Stream *s = live_; s; s = s->next_live)
        if (s->ng_open && !s->peer_answered && (s->backlog() > 0 || (s->finished && !s->host && s->out_end)))
            return true;
    return false;
}

size_t H2Session::output_iov(iovec *iov, size_t max) {
    if (write_lent_ || dead_)
        return 0;
    pump();
    if (dead_)
        return 0;
    size_t k = out_.iov(iov, max);
    write_lent_ = k > 0;
    return k;
}

void H2Session::on_written(size_t n) {
    write_lent_ = false;
    trim_free();
    if (dead_) {
        out_.release();
        return;
    }
    out_.consume(n);
    pump();
}

// ---- requests

Exchange *H2Session::take_request() {
    H2Stream *s = ready_head_;
    if (!s)
        return nullptr;
    ready_head_ = s->next_ready;
    if (!ready_head_)
        ready_tail_ = nullptr;
    s->next_ready = nullptr;
    s->taken = true;
    nout_++;
    return &s->x;
}

bool H2Session::has_request() const { return ready_head_ != nullptr; }

Exchange *H2Session::take_reset() {
    H2Stream *s = reset_head_;
    if (!s)
        return nullptr;
    reset_head_ = s->next_ready;
    s->next_ready = nullptr;
    s->in_reset_list = false;
    s->reported = true;
    return &s->x;
}

void H2Session::make_ready(H2Stream *s) {
    s->host = true;
    counters_.requests++;
    if (ready_tail_)
        ready_tail_->next_ready = s;
    else
        ready_head_ = s;
    ready_tail_ = s;
}

H2Stream *H2Session::stream_of(const Exchange *x) const {
    if (!x || x->owner != this)
        return nullptr;
    // x is the first member of its stream.
    return reinterpret_cast<H2Stream *>(const_cast<Exchange *>(x));
}

bool H2Session::is_out(const Exchange *x) const {
    const H2Stream *s = stream_of(x);
    if (!s)
        return false;
    for (const H2Stream *l = live_; l; l = l->next_live)
        if (l == s)
            return s->host && s->taken;
    return false;
}

void H2Session::out_list(std::vector<Exchange *> &v) const {
    v.clear();
    try {
        v.reserve(nout_);
    } catch (...) {
        return; // no memory to list them: each_taken sees none this time
    }
    for (H2Stream *s = live_; s; s = s->next_live)
        if (s->host && s->taken && v.size() < v.capacity())
            v.push_back(&s->x);
    std::sort(v.begin(), v.end(), [](const Exchange *a, const Exchange *b) { return a->seq < b->seq; });
}

H2Stream *H2Session::new_stream(int32_t id) {
    H2Stream *s = free_;
    if (s) {
        free_ = s->next_ready;
        nfree_--;
        s->reset_for_reuse();
    } else {
        s = new (std::nothrow) H2Stream();
        if (!s)
            return nullptr;
    }
    s->id = id;
    s->x.owner = this;
    s->next_live = live_;
    if (live_)
        live_->prev_live = s;
    live_ = s;
    return s;
}

// The host is done with s's exchange (answered, refused, or released gone).
void H2Session::release(H2Stream *s) {
    if (!s->host)
        return;
    s->host = false;
    if (s->taken && nout_ > 0)
        nout_--;
    if (s->in_reset_list) { // answered before the loop asked: nothing to report
        H2Stream **pp = &reset_head_;
        while (*pp && *pp != s)
            pp = &(*pp)->next_ready;
        if (*pp)
            *pp = s->next_ready;
        s->in_reset_list = false;
    }
    if (s->body_stream && !s->peer_ended) {
        // Answered before its body ended: the rest is not wanted (RFC 9113
        // §8.1), said by RST_STREAM NO_ERROR once the answer has left.
        s->body_discard = true;
        s->rst_after = true;
    }
    if (ng_ && !dead_ && s->ng_open && s->body_off < s->body.size()) {
        // Unread body bytes: give their window back.
        nghttp2_session_consume(ng_, s->id, s->body.size() - s->body_off);
        s->body_off = s->body.size();
    }
    maybe_free(s);
}

void H2Session::maybe_free(H2Stream *s) {
    if (s->host || (s->ng_open && !dead_))
        return;
    s->drop_lent(); // its bytes can no longer go
    if (s->streaming && nstreaming_ > 0)
        nstreaming_--;
    s->streaming = false;
    if (s->file_fd >= 0)
        ::close(s->file_fd);
    s->file_fd = -1;
    if (s->prev_live)
        s->prev_live->next_live = s->next_live;
    else
        live_ = s->next_live;
    if (s->next_live)
        s->next_live->prev_live = s->prev_live;
    s->next_live = s->prev_live = nullptr;
    // A recycled stream sheds its large buffers at once, and the streams of
    // a wide burst past what a busy connection reuses are let go at the
    // session's next entry from the loop (trim_free): not here, where the
    // caller may still touch s (an abort inside a respond, then its
    // keep_lent). Before, an idle connection kept every stream of its widest
    // burst with its buffers (3.4 MB after 100 uploads of 16 KiB;
    // docs/http2.md "Memory after a burst"). The arm keeps them whole.
    if (!hooks().keep_every_stream) [[likely]]
        s->shed();
    s->next_ready = free_;
    free_ = s;
    nfree_++;
}

// Called where the loop enters the session (bytes in, bytes written), so
// no stream pointer of an earlier call is still held.
void H2Session::trim_free() {
    if (hooks().keep_every_stream) [[unlikely]]
        return;
    while (nfree_ > kKeepStreams) {
        H2Stream *n = free_->next_ready;
        delete free_;
        free_ = n;
        nfree_--;
    }
}

// Whether x may be answered: 0, or the answer's error (x released when gone).
int H2Session::check_x(Exchange *x, H2Stream **out) {
    H2Stream *s = stream_of(x);
    if (!s || !s->host || !s->taken)
        return -EINVAL;
    *out = s;
    if (dead_ || s->reset || !s->ng_open) {
        release(s);
        return WEIR_E_GONE;
    }
    return 0;
}

} // namespace weir
