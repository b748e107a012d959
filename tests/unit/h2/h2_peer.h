// The lib/h2 unit tests' peer: a real nghttp2 CLIENT session wired to an
// H2Session, its output fed into the session (through the read lend) and the
// session's output back into it (through the write lend). What the client
// saw (answers, resets, GOAWAY, PING ACKs) is recorded per stream.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <string>
#include <vector>

#include "conn/conn.h"
#include "h2/h2_session.h"
#include "http1/parser.h"

namespace h2_peer {

inline weir::ConnSettings settings(uint32_t stream_body = 0, uint64_t max_body = 1u << 20) {
    weir::ConnSettings s;
    weir::http1::limits_default(&s.limits);
    s.limits.max_body = max_body;
    s.stream_body_bytes = stream_body;
    return s;
}

inline std::string sv(weir_str_t s) { return std::string(s.ptr ? s.ptr : "", s.len); }

struct Answer {
    int status = 0;
    std::map<std::string, std::string> headers, trailers;
    std::string body;
    bool closed = false;
    uint32_t rst = UINT32_MAX; // RST_STREAM error code received, if any
    uint32_t close_code = UINT32_MAX;
    int headers_frames = 0;
    int data_frames = 0;
};

class Peer {
  public:
    std::map<int32_t, Answer> got;
    bool goaway = false;
    uint32_t goaway_code = 0;
    int32_t goaway_last = -1;
    int goaways = 0;
    int ping_acks = 0;
    int pings_seen = 0; // PINGs from the server (not ACKs)
    nghttp2_session *ng = nullptr;
    std::string raw; // bytes sent ahead of the client's own (hand-made frames)
    bool consume_auto = true;

    explicit Peer(const std::vector<nghttp2_settings_entry> &iv = {}, bool auto_window = true) {
        nghttp2_session_callbacks *cb;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        nghttp2_option *opt;
        nghttp2_option_new(&opt);
        if (!auto_window)
            nghttp2_option_set_no_auto_window_update(opt, 1);
        nghttp2_session_client_new2(&ng, cb, this, opt);
        nghttp2_option_del(opt);
        nghttp2_session_callbacks_del(cb);
        nghttp2_submit_settings(ng, NGHTTP2_FLAG_NONE, iv.data(), iv.size());
    }
    ~Peer() { nghttp2_session_del(ng); }

    // A request; body: sent as DATA with END_STREAM (nullptr: none, the
    // HEADERS end the stream; open: neither, the test sends DATA itself).
    int32_t request(const std::string &method, const std::string &path,
                    const std::vector<std::pair<std::string, std::string>> &extra = {}, const std::string *body = nullptr,
                    bool open = false, const std::string &authority = "example.com") {
        std::vector<nghttp2_nv> nv;
        // The nv point at the strings: names are literals or extra's, which
        // outlive the submit (nghttp2 copies them there).
        auto add = [&nv](const char *n, size_t nl, const std::string &v) {
            nv.push_back({(uint8_t *)n, (uint8_t *)v.data(), nl, v.size(), NGHTTP2_NV_FLAG_NONE});
        };
        static const std::string scheme = "http";
        add(":method", 7, method);
        add(":scheme", 7, scheme);
        if (!authority.empty())
            add(":authority", 10, authority);
        add(":path", 5, path);
        for (auto &kv : extra) {
            // nghttp2 lowercases names it copies: an uppercase one (a
            // malformed request) goes uncopied, kept alive here.
            bool upper = false;
            for (char c : kv.first)
                upper |= c >= 'A' && c <= 'Z';
            if (!upper) {
                add(kv.first.data(), kv.first.size(), kv.second);
                continue;
            }
            keep_.push_back(kv.first);
            nv.push_back({(uint8_t *)keep_.back().data(), (uint8_t *)kv.second.data(), kv.first.size(),
                          kv.second.size(), NGHTTP2_NV_FLAG_NO_COPY_NAME});
        }
        if (body) {
            pending_body_ = *body;
            body_off_ = 0;
            nghttp2_data_provider prd;
            prd.source.ptr = this;
            prd.read_callback = read_body;
            return nghttp2_submit_request(ng, nullptr, nv.data(), nv.size(), &prd, nullptr);
        }
        if (open)
            return nghttp2_submit_headers(ng, NGHTTP2_FLAG_NONE, -1, nullptr, nv.data(), nv.size(), nullptr);
        return nghttp2_submit_request(ng, nullptr, nv.data(), nv.size(), nullptr, nullptr);
    }
    int32_t get(const std::string &path) { return request("GET", path); }

    // Client bytes into the session, through its read lend.
    size_t to_server(weir::H2Session &s) {
        std::string bytes;
        bytes.swap(raw);
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(ng, &p)) > 0)
            bytes.append(reinterpret_cast<const char *>(p), static_cast<size_t>(n));
        return feed(s, bytes);
    }
    static size_t feed(weir::H2Session &s, const std::string &bytes) {
        size_t off = 0;
        while (off < bytes.size()) {
            iovec sp = s.read_space();
            if (sp.iov_len == 0)
                break;
            size_t n = std::min(bytes.size() - off, sp.iov_len);
            std::memcpy(sp.iov_base, bytes.data() + off, n);
            s.on_read(n);
            off += n;
        }
        return off;
    }
    // The session's bytes into the client, through the write lend.
    size_t from_server(weir::H2Session &s) {
        size_t total = 0;
        iovec iov[16];
        size_t k;
        while ((k = s.output_iov(iov, 16)) > 0) {
            size_t n = 0;
            for (size_t i = 0; i < k; i++) {
                nghttp2_session_mem_recv(ng, static_cast<const uint8_t *>(iov[i].iov_base), iov[i].iov_len);
                n += iov[i].iov_len;
            }
            s.on_written(n);
            total += n;
        }
        return total;
    }
    // Both ways until neither side has anything to say.
    void pump(weir::H2Session &s) {
        for (int i = 0; i < 64; i++) {
            size_t a = to_server(s);
            size_t b = from_server(s);
            if (a == 0 && b == 0)
                break;
        }
    }

  private:
    std::list<std::string> keep_;
    std::string pending_body_;
    size_t body_off_ = 0;

    static Peer &me(void *u) { return *static_cast<Peer *>(u); }
    static ssize_t read_body(nghttp2_session *, int32_t, uint8_t *buf, size_t len, uint32_t *flags,
                             nghttp2_data_source *src, void *) {
        Peer &p = *static_cast<Peer *>(src->ptr);
        size_t k = std::min(len, p.pending_body_.size() - p.body_off_);
        std::memcpy(buf, p.pending_body_.data() + p.body_off_, k);
        p.body_off_ += k;
        if (p.body_off_ == p.pending_body_.size())
            *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(k);
    }
    static int on_header(nghttp2_session *, const nghttp2_frame *f, const uint8_t *n, size_t nl, const uint8_t *v,
                         size_t vl, uint8_t, void *u) {
        Answer &a = me(u).got[f->hd.stream_id];
        std::string name(reinterpret_cast<const char *>(n), nl), value(reinterpret_cast<const char *>(v), vl);
        if (name == ":status") {
            a.status = std::stoi(value);
            a.headers.clear(); // an interim answer's fields go with it
        } else if (f->headers.cat == NGHTTP2_HCAT_HEADERS && a.status >= 200) {
            a.trailers[name] = value;
        } else {
            a.headers[name] = value;
        }
        return 0;
    }
    static int on_frame_recv(nghttp2_session *, const nghttp2_frame *f, void *u) {
        Peer &p = me(u);
        switch (f->hd.type) {
        case NGHTTP2_GOAWAY:
            p.goaway = true;
            p.goaways++;
            p.goaway_code = f->goaway.error_code;
            p.goaway_last = f->goaway.last_stream_id;
            break;
        case NGHTTP2_PING:
            if (f->hd.flags & NGHTTP2_FLAG_ACK)
                p.ping_acks++;
            else
                p.pings_seen++;
            break;
        case NGHTTP2_RST_STREAM:
            p.got[f->hd.stream_id].rst = f->rst_stream.error_code;
            break;
        case NGHTTP2_HEADERS:
            p.got[f->hd.stream_id].headers_frames++;
            break;
        case NGHTTP2_DATA:
            p.got[f->hd.stream_id].data_frames++;
            break;
        default:
            break;
        }
        return 0;
    }
    static int on_data(nghttp2_session *, uint8_t, int32_t id, const uint8_t *d, size_t n, void *u) {
        me(u).got[id].body.append(reinterpret_cast<const char *>(d), n);
        return 0;
    }
    static int on_close(nghttp2_session *, int32_t id, uint32_t code, void *u) {
        Answer &a = me(u).got[id];
        a.closed = true;
        a.close_code = code;
        return 0;
    }
};

// Hand-made frames, for what a well-behaved client will not send (floods).
inline std::string frame(uint8_t type, uint8_t flags, int32_t id, const std::string &payload) {
    std::string f;
    uint32_t len = static_cast<uint32_t>(payload.size());
    f.push_back(char(len >> 16));
    f.push_back(char(len >> 8));
    f.push_back(char(len));
    f.push_back(char(type));
    f.push_back(char(flags));
    f.push_back(char((id >> 24) & 0x7f));
    f.push_back(char(id >> 16));
    f.push_back(char(id >> 8));
    f.push_back(char(id));
    return f + payload;
}

} // namespace h2_peer
