// H2Session, answers: HEADERS (+DATA under the peer's windows, + trailing
// HEADERS), whole or streamed, and file answers read into their stream.
#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "h2/h2_internal.h"
#include "h2/h2_session.h"
#include "h2/h2_stream.h"
#include "http1/response.h"

namespace weir {
namespace {

bool ieq(const char *a, size_t al, const char *b) {
    size_t bl = std::strlen(b);
    if (al != bl)
        return false;
    for (size_t i = 0; i < al; i++) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c + 32);
        if (c != b[i])
            return false;
    }
    return true;
}

// RFC 9113 §8.2.2: connection-specific fields have no meaning in HTTP/2 and
// make a peer treat the answer as malformed: dropped.
bool connection_specific(const weir_str_t &n) {
    switch (n.len) { // by length first: most names are none of these
    case 7:
        return ieq(n.ptr, n.len, "upgrade");
    case 10:
        return ieq(n.ptr, n.len, "connection") || ieq(n.ptr, n.len, "keep-alive");
    case 16:
        return ieq(n.ptr, n.len, "proxy-connection");
    case 17:
        return ieq(n.ptr, n.len, "transfer-encoding");
    default:
        return false;
    }
}

// weir_respond's rules: fields weir writes itself are the host's mistake.
int check_fields(const weir_header_t *h, size_t n) {
    if (n && !h)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (h[i].name.len == 0 || (h[i].name.len && !h[i].name.ptr) || (h[i].value.len && !h[i].value.ptr))
            return -EINVAL;
        if (ieq(h[i].name.ptr, h[i].name.len, "content-length") || ieq(h[i].name.ptr, h[i].name.len, "date"))
            return -EINVAL;
    }
    return 0;
}

bool no_body_status(int status) { return status == 204 || status == 304; }

} // namespace

// The nv list of a head (or trailers when status is 0). The names go as the
// host gave them: nghttp2 copies every name in the submit and lowercases its
// copy (nghttp2_nv_array_copy), so a copy of ours would be a second one. The
// status and length digits live in `digits` until the submit.
struct NvDigits {
    char status[3];
    char length[20];
};

static size_t build_nv(NvDigits &d, std::vector<nghttp2_nv> &nv, int status, const weir_header_t *h, size_t n,
                       uint64_t length, bool date) {
    if (nv.size() < n + 3)
        nv.resize(n + 3);
    size_t k = 0;
    auto add = [&nv, &k](const char *nm, size_t nl, const char *v, size_t vl) {
        nv[k++] = {(uint8_t *)nm, (uint8_t *)v, nl, vl, NGHTTP2_NV_FLAG_NONE};
    };
    if (status) {
        d.status[0] = char('0' + status / 100);
        d.status[1] = char('0' + status / 10 % 10);
        d.status[2] = char('0' + status % 10);
        add(":status", 7, d.status, 3);
    }
    for (size_t i = 0; i < n; i++) {
        if (connection_specific(h[i].name))
            continue;
        add(h[i].name.ptr, h[i].name.len, h[i].value.ptr ? h[i].value.ptr : "", h[i].value.len);
    }
    if (length != UINT64_MAX) {
        char *end = d.length + sizeof d.length, *p = end;
        do
            *--p = char('0' + length % 10);
        while ((length /= 10) != 0);
        add("content-length", 14, p, static_cast<size_t>(end - p));
    }
    if (date)
        add("date", 4, http1::http_date_now(), 29);
    return k;
}

int H2Session::submit_head(H2Stream *s, int status, const weir_header_t *h, size_t n, uint64_t length,
                           bool has_body) {
    static thread_local std::vector<nghttp2_nv> nv;
    NvDigits d;
    size_t k = build_nv(d, nv, status, h, n, length, true);
    nghttp2_data_provider prd;
    prd.source.ptr = s;
    prd.read_callback = h2_detail::read_out;
    int rv = nghttp2_submit_response(ng_, s->id, nv.data(), k, has_body ? &prd : nullptr);
    if (rv == NGHTTP2_ERR_NOMEM)
        return -ENOMEM;
    return rv == 0 ? 0 : -EINVAL;
}

int H2Session::respond_impl(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                       size_t body_len, uint32_t flags) {
    if (flags & ~(WEIR_RESPOND_CLOSE | WEIR_RESPOND_ABORT | kAnswerChecked))
        return -EINVAL;
    if (!(flags & kAnswerChecked) && (status < 200 || status > 999 || (body_len && !body) || check_fields(headers, num_headers)))
        return -EINVAL;
    H2Stream *s = nullptr;
    if (int rc = check_x(x, &s))
        return rc;
    if (s->streaming)
        return -EINVAL;
    if (flags & WEIR_RESPOND_ABORT) {
        nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
        s->finished = true;
        release(s);
        pump();
        return 0;
    }
    bool has_body = !s->is_head && body_len > 0 && !no_body_status(status);
    if (has_body) { // lent until the pump below has framed what the windows let go
        s->lent = static_cast<const char *>(body);
        s->lent_len = body_len;
    }
    s->out_end = true;
    int rc = submit_head(s, status, headers, num_headers, no_body_status(status) ? UINT64_MAX : body_len, has_body);
    if (rc != 0) {
        s->drop_lent();
        release(s);
        abort(WEIR_CLOSE_RESOURCE);
        return rc == -ENOMEM ? -ENOMEM : WEIR_E_GONE;
    }
    s->finished = true;
    counters_.responses++;
    answered_one();
    release(s);
    if (flags & WEIR_RESPOND_CLOSE)
        finish(WEIR_CLOSE_HANDLER, NGHTTP2_NO_ERROR, true);
    pump();
    // s is still live, or on the free list with nothing lent (maybe_free
    // drops it): nothing frees a stream's memory inside a pump.
    s->keep_lent();
    return 0;
}

int H2Session::interim_impl(Exchange *x, int status, const weir_header_t *headers, size_t num_headers) {
    if (status < 100 || status > 199 || status == 101 || check_fields(headers, num_headers))
        return -EINVAL;
    H2Stream *s = stream_of(x);
    if (!s || !s->host || !s->taken || s->streaming)
        return -EINVAL;
    if (dead_ || s->reset || !s->ng_open)
        return 0; // dropped: nothing is sent, x stays out
    static thread_local std::vector<nghttp2_nv> nv;
    NvDigits d;
    size_t k = build_nv(d, nv, status, headers, num_headers, UINT64_MAX, false);
    if (nghttp2_submit_headers(ng_, NGHTTP2_FLAG_NONE, s->id, nullptr, nv.data(), k, nullptr) != 0) {
        abort(WEIR_CLOSE_RESOURCE);
        return -ENOMEM;
    }
    pump();
    return 0;
}

int H2Session::stream_start_impl(Exchange *x, int status, const weir_header_t *headers, size_t num_headers,
                            uint64_t length, uint32_t flags) {
    if (flags != 0 || status < 200 || status > 999 || check_fields(headers, num_headers))
        return -EINVAL;
    H2Stream *s = nullptr;
    if (int rc = check_x(x, &s))
        return rc;
    if (s->streaming)
        return -EINVAL;
    bool has_body = !s->is_head && length != 0 && !no_body_status(status);
    s->streaming = true;
    nstreaming_++;
    s->out_left = length;
    s->out_end = !has_body;
    if (int rc = submit_head(s, status, headers, num_headers, no_body_status(status) ? UINT64_MAX : length,
                             has_body)) {
        abort(WEIR_CLOSE_RESOURCE);
        release(s);
        return rc == -ENOMEM ? -ENOMEM : WEIR_E_GONE;
    }
    pump();
    return 0;
}

int H2Session::stream_write_impl(Exchange *x, const void *p, size_t n) {
    if (n && !p)
        return -EINVAL;
    H2Stream *s = nullptr;
    if (int rc = check_x(x, &s))
        return rc;
    if (!s->streaming || (s->out_left != UINT64_MAX && n > s->out_left))
        return -EINVAL;
    if (s->out_left != UINT64_MAX)
        s->out_left -= n;
    if (s->out_end || n == 0)
        return 0; // HEAD, 204, 304: counted against the length, not sent
    s->lent = static_cast<const char *>(p); // lent for this call, as respond's body
    s->lent_len = n;
    if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(ng_, s->id);
    }
    pump();
    s->keep_lent();
    return 0;
}

int H2Session::stream_end_impl(Exchange *x, const weir_header_t *trailers, size_t num_trailers) {
    if (num_trailers && !trailers)
        return -EINVAL;
    H2Stream *s = nullptr;
    if (int rc = check_x(x, &s))
        return rc;
    if (!s->streaming || (s->out_left != UINT64_MAX && s->out_left > 0))
        return -EINVAL;
    if (check_fields(trailers, num_trailers))
        return -EINVAL;
    if (!s->out_end) {
        for (size_t i = 0; i < num_trailers; i++) {
            if (connection_specific(trailers[i].name))
                continue;
            std::string nm(trailers[i].name.ptr, trailers[i].name.len);
            for (char &c : nm)
                c = (c >= 'A' && c <= 'Z') ? char(c + 32) : c;
            s->trailer_kv.push_back(std::move(nm));
            s->trailer_kv.emplace_back(trailers[i].value.ptr ? trailers[i].value.ptr : "", trailers[i].value.len);
        }
        s->out_end = true;
        if (s->deferred) {
            s->deferred = false;
            nghttp2_session_resume_data(ng_, s->id);
        }
    }
    s->streaming = false;
    nstreaming_--;
    s->finished = true;
    counters_.responses++;
    answered_one();
    release(s);
    pump();
    return 0;
}

int H2Session::stream_abort(Exchange *x) {
    H2Stream *s = nullptr;
    if (int rc = check_x(x, &s))
        return rc;
    if (!s->streaming)
        return -EINVAL;
    nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    s->streaming = false;
    nstreaming_--;
    s->finished = true;
    s->out.clear();
    s->out_off = 0;
    release(s);
    pump();
    return 0;
}

size_t H2Session::stream_backlog(const Exchange *x) const {
    const H2Stream *s = stream_of(x);
    return s ? s->backlog() : 0;
}

bool H2Session::waits_for_peer(const Exchange *x) const {
    const H2Stream *s = stream_of(x);
    return s && ((s->body_stream && !s->peer_ended) || s->backlog() > 0);
}

bool H2Session::streaming(const Exchange *x) const {
    const H2Stream *s = stream_of(x);
    return s && s->streaming;
}

bool H2Session::file_stream(const Exchange *x) const {
    const H2Stream *s = stream_of(x);
    return s && s->streaming && s->file_fd >= 0;
}

void H2Session::attach_file(Exchange *x, int fd, uint64_t offset, bool) {
    H2Stream *s = stream_of(x);
    if (!s || !s->streaming) {
        ::close(fd);
        return;
    }
    s->file_fd = fd;
    s->file_off = offset;
    if (s->out_left == 0 || s->out_end) { // nothing to read (empty, HEAD): ends here
        s->out_left = 0;
        ::close(s->file_fd);
        s->file_fd = -1;
        stream_end(x, nullptr, 0);
    }
}

bool H2Session::feed_files(size_t window) {
    static thread_local char buf[64 * 1024];
    bool more = false;
    for (H2Stream *s = live_; s;) {
        H2Stream *next = s->next_live; // stream_end may free s
        if (!s->streaming || s->file_fd < 0 || dead_) {
            s = next;
            continue;
        }
        while (s->out_left > 0 && s->out_left != UINT64_MAX) {
            size_t backlog = s->backlog();
            if (backlog >= window / 2 && backlog > 0)
                break;
            size_t want = window - backlog;
            want = want > sizeof buf ? sizeof buf : want;
            want = want > s->out_left ? static_cast<size_t>(s->out_left) : want;
            ssize_t n = ::pread(s->file_fd, buf, want, static_cast<off_t>(s->file_off));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) { // the file ended before the promised length
                abort(WEIR_CLOSE_IO_ERROR);
                return false;
            }
            if (stream_write(&s->x, buf, static_cast<size_t>(n)) != 0)
                return false;
            s->file_off += static_cast<uint64_t>(n);
        }
        if (s->out_left == 0 && s->streaming) {
            ::close(s->file_fd);
            s->file_fd = -1;
            stream_end(&s->x, nullptr, 0);
        } else if (s->out_left > 0) {
            more = true;
        }
        s = next;
    }
    return more;
}

// The answers' allocations (the body copied, the field list) fail as
// -ENOMEM: the connection aborts (WEIR_CLOSE_RESOURCE) and x is consumed
// (for an interim answer: dropped, still out), as Conn does.
int H2Session::out_of_memory(Exchange *x, bool consume) {
    abort(WEIR_CLOSE_RESOURCE);
    H2Stream *s = stream_of(x);
    if (consume && s && s->host && s->taken)
        release(s);
    return -ENOMEM;
}

int H2Session::respond(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body, size_t body_len, uint32_t flags) {
    try {
        return respond_impl(x, status, headers, num_headers, body, body_len, flags);
    } catch (...) {
        return out_of_memory(x, true);
    }
}

int H2Session::interim(Exchange *x, int status, const weir_header_t *headers, size_t num_headers) {
    try {
        return interim_impl(x, status, headers, num_headers);
    } catch (...) {
        return out_of_memory(x, false);
    }
}

int H2Session::stream_start(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, uint64_t length, uint32_t flags) {
    try {
        return stream_start_impl(x, status, headers, num_headers, length, flags);
    } catch (...) {
        return out_of_memory(x, true);
    }
}

int H2Session::stream_write(Exchange *x, const void *p, size_t n) {
    try {
        return stream_write_impl(x, p, n);
    } catch (...) {
        return out_of_memory(x, true);
    }
}

int H2Session::stream_end(Exchange *x, const weir_header_t *trailers, size_t num_trailers) {
    try {
        return stream_end_impl(x, trailers, num_trailers);
    } catch (...) {
        return out_of_memory(x, true);
    }
}

namespace h2_detail {

static ssize_t read_out_impl(nghttp2_session *ng, int32_t stream_id, size_t length, uint32_t *data_flags,
                             nghttp2_data_source *source) {
    H2Stream *s = static_cast<H2Stream *>(source->ptr);
    size_t avail = s->backlog();
    size_t k = avail < length ? avail : length;
    // The bytes stay in the stream until send_data takes them (in the same
    // mem_send): nghttp2 frames no copy of its own.
    if (k)
        *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (avail == k && s->out_end) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!s->trailer_kv.empty()) {
            std::vector<nghttp2_nv> nv;
            for (size_t i = 0; i + 1 < s->trailer_kv.size(); i += 2)
                nv.push_back({(uint8_t *)s->trailer_kv[i].data(), (uint8_t *)s->trailer_kv[i + 1].data(),
                              s->trailer_kv[i].size(), s->trailer_kv[i + 1].size(), NGHTTP2_NV_FLAG_NONE});
            if (nghttp2_submit_trailer(ng, stream_id, nv.data(), nv.size()) == 0)
                *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            s->trailer_kv.clear();
        }
        return static_cast<ssize_t>(k);
    }
    if (k == 0) {
        s->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(k);
}

ssize_t read_out(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
                 nghttp2_data_source *source, void *u) {
    (void)buf; // NO_COPY: send_data writes the payload
    try {
        return read_out_impl(ng, stream_id, length, data_flags, source);
    } catch (...) { // the trailers' list: no memory
        static_cast<H2Session *>(u)->oom_ = true;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
}

int send_data(nghttp2_session *, nghttp2_frame *frame, const uint8_t *framehd, size_t length,
              nghttp2_data_source *source, void *u) {
    H2Session &ss = *static_cast<H2Session *>(u);
    H2Stream *s = static_cast<H2Stream *>(source->ptr);
    // Padding only if a select_padding callback asked for it (weir sets
    // none): the pad length octet after the head, the zeros after the data.
    size_t pad = frame->data.padlen;
    bool ok = ss.out_.append(framehd, 9);
    if (pad) {
        uint8_t pl = static_cast<uint8_t>(pad - 1);
        ok = ok && ss.out_.append(&pl, 1);
    }
    s->take(length, [&](const char *p, size_t n) { ok = ok && ss.out_.append(p, n); });
    for (size_t i = 1; i < pad; i++) {
        uint8_t z = 0;
        ok = ok && ss.out_.append(&z, 1);
    }
    if (!ok) {
        ss.oom_ = true; // pump() aborts WEIR_CLOSE_RESOURCE
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

} // namespace h2_detail
} // namespace weir
