// H2Session, requests: header fields into the stream's arena, the request
// view at the block's end, and the body (buffered whole, or streamed to
// body_read with the window opened only as the host reads).
#include <nghttp2/nghttp2.h>

#include <cerrno>
#include <strings.h>

#include <cstring>
#include <new>

#include "h2/h2_session.h"
#include "h2/h2_stream.h"

namespace weir {
namespace {

bool eq(const char *a, size_t al, const char *b) {
    size_t bl = std::strlen(b);
    return al == bl && std::memcmp(a, b, al) == 0;
}

weir_str_t view(const H2Stream *s, uint32_t off, uint32_t len) {
    return {s->arena.data() + off, len};
}

} // namespace

void H2Session::field(H2Stream *s, const char *n, size_t nl, const char *v, size_t vl) {
    if (s->head_bad || s->head_done != s->trailers)
        return; // over a bound already, or trailers of a streamed body (its views are out)
    if (s->trailers && s->body_stream)
        return;
    // RFC 9113 §6.5.2's size of a field list; limits.max_header_bytes
    // bounds it as it bounds an HTTP/1.1 head, max_headers the count.
    s->header_bytes += static_cast<uint32_t>(nl + vl + 32);
    uint32_t max_bytes = cs_.limits.max_header_bytes ? cs_.limits.max_header_bytes : 16384;
    uint32_t max_fields = cs_.limits.max_headers ? cs_.limits.max_headers : 100;
    if (s->header_bytes > max_bytes || s->fields.size() >= max_fields + 4) {
        s->head_bad = true;
        return;
    }
    if (hooks().field_throws)
        throw std::bad_alloc();
    auto put = [s](const char *p, size_t l) {
        uint32_t off = static_cast<uint32_t>(s->arena.size());
        s->arena.append(p, l);
        return off;
    };
    if (nl > 0 && n[0] == ':') { // nghttp2 checked which may come, and where
        if (eq(n, nl, ":method")) {
            s->method_off = put(v, vl), s->method_len = static_cast<uint32_t>(vl), s->has_method = true;
        } else if (eq(n, nl, ":path")) {
            s->path_off = put(v, vl), s->path_len = static_cast<uint32_t>(vl), s->has_path = true;
        } else if (eq(n, nl, ":authority")) {
            s->auth_off = put(v, vl), s->auth_len = static_cast<uint32_t>(vl), s->has_auth = true;
        }
        return;
    }
    H2Stream::Field f;
    f.name_off = put(n, nl);
    f.name_len = static_cast<uint32_t>(nl);
    f.value_off = put(v, vl);
    f.value_len = static_cast<uint32_t>(vl);
    if (!s->trailers && eq(n, nl, "content-length")) {
        int64_t cl = 0;
        for (size_t i = 0; i < vl && cl >= 0; i++)
            cl = (v[i] >= '0' && v[i] <= '9' && cl < (INT64_MAX - 9) / 10) ? cl * 10 + (v[i] - '0') : -1;
        s->content_length = vl ? cl : -1;
    }
    if (!s->trailers && eq(n, nl, "expect") && vl == 12 && strncasecmp(v, "100-continue", 12) == 0)
        s->expect_continue = true;
    if (!s->trailers && !s->has_auth && eq(n, nl, "host"))
        s->auth_off = f.value_off, s->auth_len = f.value_len;
    s->fields.push_back(f);
}

// Answers s without an exchange (a bound it broke before the host saw it),
// and stops its body.
void H2Session::refuse(H2Stream *s, int status) {
    if (s->buffering) {
        s->buffering = false;
        nbuffering_--;
    }
    s->head_bad = true;
    if (status == 431)
        h2c_.headers_too_large++;
    else
        h2c_.bodies_too_large++;
    char st[4] = {char('0' + status / 100), char('0' + status / 10 % 10), char('0' + status % 10), 0};
    nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)st, 7, 3, NGHTTP2_NV_FLAG_NONE},
                       {(uint8_t *)"content-length", (uint8_t *)"0", 14, 1, NGHTTP2_NV_FLAG_NONE}};
    nghttp2_submit_response(ng_, s->id, nv, 2, nullptr);
    // RFC 9113 §8.1: the rest of the body is not wanted, said once the
    // answer has left (a RST_STREAM submitted now would overtake it).
    s->rst_after = true;
}

void H2Session::request_done(H2Stream *s, bool end) {
    s->head_done = true;
    s->peer_ended = end;
    if (s->head_bad) {
        refuse(s, 431);
        if (end)
            whole_++;
        return;
    }
    uint64_t max_body = cs_.limits.max_body;
    if (s->content_length >= 0 && max_body != WEIR_BODY_UNLIMITED &&
        static_cast<uint64_t>(s->content_length) > max_body) {
        refuse(s, 413);
        return;
    }
    s->nregular = static_cast<uint32_t>(s->fields.size());
    weir_request &r = s->x.req;
    std::memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.version_minor = 0;
    r.flags = WEIR_REQ_HTTP2;
    if (close_reason_ == kOpen && !draining_)
        r.flags |= WEIR_REQ_KEEP_ALIVE;
    r.connection_id = id_;
    r.method = view(s, s->method_off, s->method_len);
    r.target = view(s, s->path_off, s->path_len);
    const char *q = static_cast<const char *>(std::memchr(r.target.ptr, '?', r.target.len));
    if (q) {
        r.path = {r.target.ptr, static_cast<size_t>(q - r.target.ptr)};
        r.query = {q + 1, r.target.len - r.path.len - 1};
    } else {
        r.path = r.target;
        r.query = {r.target.ptr + r.target.len, 0};
    }
    r.host = view(s, s->auth_off, s->auth_len);
    s->is_head = eq(r.method.ptr, r.method.len, "HEAD");
    if (!s->body_stream)
        s->content_length = end ? 0 : s->content_length;
    if (end) {
        whole_++;
        body_end(s);
        return;
    }
    if (s->expect_continue) {
        // RFC 9110 §10.1.1: the client waits for a 100 before its body; as
        // HTTP/1's Conn, it goes at once (a final answer may still refuse).
        r.flags |= WEIR_REQ_EXPECT_CONTINUE;
        nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"100", 7, 3, NGHTTP2_NV_FLAG_NONE}};
        if (nghttp2_submit_headers(ng_, NGHTTP2_FLAG_NONE, s->id, nullptr, nv, 1, nullptr) == 0)
            counters_.continues_sent++;
    }
    if (cs_.stream_body_bytes && (s->content_length < 0 || s->expect_continue ||
                                  static_cast<uint64_t>(s->content_length) >= cs_.stream_body_bytes)) {
        s->body_stream = true;
        r.flags |= WEIR_REQ_BODY_STREAM;
        r.body_length = s->content_length < 0 ? WEIR_LENGTH_UNKNOWN : static_cast<uint64_t>(s->content_length);
        s->hdrs.resize(s->nregular);
        for (uint32_t i = 0; i < s->nregular; i++) {
            const H2Stream::Field &f = s->fields[i];
            s->hdrs[i] = {view(s, f.name_off, f.name_len), view(s, f.value_off, f.value_len)};
        }
        r.headers = s->hdrs.data();
        r.num_headers = s->nregular;
        s->x.seq = seq_++;
        make_ready(s);
        return;
    }
    s->buffering = true;
    nbuffering_++;
}

void H2Session::body_chunk(H2Stream *s, const uint8_t *p, size_t n) {
    bool keep = s->head_done && !s->head_bad && !s->body_discard && !s->body_over && (s->buffering || s->host);
    s->body_total += n;
    uint64_t max_body = cs_.limits.max_body;
    if (keep && max_body != WEIR_BODY_UNLIMITED && s->body_total > max_body) {
        keep = false;
        if (s->buffering)
            refuse(s, 413);
        else
            s->body_over = true; // body_read says so; the host answers
    }
    if (!keep || !s->body_stream || hooks().no_flow_hold) {
        // Buffered bodies are bounded by max_body: their window opens at once.
        nghttp2_session_consume(ng_, s->id, n);
        if (!keep)
            return;
    }
    s->body.append(reinterpret_cast<const char *>(p), n);
}

void H2Session::body_end(H2Stream *s) {
    s->peer_ended = true;
    if (s->body_stream) {
        whole_++;
        return;
    }
    if (s->head_bad || s->host)
        return;
    if (s->buffering) {
        s->buffering = false;
        nbuffering_--;
        whole_++;
    }
    size_t nf = s->fields.size();
    s->hdrs.resize(nf);
    for (size_t i = 0; i < nf; i++) {
        const H2Stream::Field &f = s->fields[i];
        s->hdrs[i] = {view(s, f.name_off, f.name_len), view(s, f.value_off, f.value_len)};
    }
    weir_request &r = s->x.req;
    r.headers = s->hdrs.data();
    r.num_headers = s->nregular;
    r.trailers = nf > s->nregular ? s->hdrs.data() + s->nregular : nullptr;
    r.num_trailers = static_cast<uint32_t>(nf - s->nregular);
    r.body = {s->body.data(), s->body.size()};
    r.body_length = s->body.size();
    s->x.seq = seq_++;
    make_ready(s);
}

void H2Session::stream_closed(H2Stream *s) {
    s->ng_open = false;
    if (s->in_head) {
        s->in_head = false;
        nheads_--;
    }
    if (s->buffering) {
        s->buffering = false;
        nbuffering_--;
    }
    if (s->host && !s->taken) { // still in the ready queue: never handed out
        H2Stream **pp = &ready_head_;
        H2Stream *prev = nullptr;
        while (*pp && *pp != s)
            prev = *pp, pp = &(*pp)->next_ready;
        if (*pp)
            *pp = s->next_ready;
        if (ready_tail_ == s)
            ready_tail_ = prev;
        s->next_ready = nullptr;
        s->host = false;
    } else if (s->host && !s->reported && !s->in_reset_list) {
        // The host holds it: its answer can no longer go (gone).
        s->reset = true;
        s->in_reset_list = true;
        s->next_ready = reset_head_;
        reset_head_ = s;
    }
    if (s->streaming) {
        s->streaming = false;
        nstreaming_--;
    }
    maybe_free(s);
}

int64_t H2Session::body_read(Exchange *x, void *buf, size_t cap) {
    if (!buf || cap == 0)
        return -EINVAL;
    H2Stream *s = nullptr;
    if (int rc = check_x(x, &s))
        return rc;
    if (!s->body_stream)
        return WEIR_E_STATE;
    if (s->body_over)
        return WEIR_E_BODY_TOO_LARGE;
    size_t avail = s->body.size() - s->body_off;
    if (avail == 0)
        return s->peer_ended ? 0 : -EAGAIN;
    size_t k = avail < cap ? avail : cap;
    std::memcpy(buf, s->body.data() + s->body_off, k);
    s->body_off += k;
    if (s->body_off == s->body.size()) {
        s->body.clear();
        s->body_off = 0;
    }
    if (!hooks().no_flow_hold)
        nghttp2_session_consume(ng_, s->id, k); // the window opens as the host reads
    pump();
    return static_cast<int64_t>(k);
}

bool H2Session::body_ready(const Exchange *x) const {
    const H2Stream *s = stream_of(x);
    if (!s)
        return true;
    return dead_ || s->reset || !s->ng_open || s->body_over || s->peer_ended || s->body.size() > s->body_off;
}

} // namespace weir
