// One connection's protocol, as its slot holds it (docs/DESIGN.md §2b): the
// loop calls these and never asks which protocol answers. HTTP/1's Conn and
// HTTP/2's H2Session offer the same calls with the same contracts (the lend
// rules, zombies, each_taken, wait, the close reasons: conn/conn.h), so a
// call is one predictable branch on the tag with HTTP/1's case inline, not a
// virtual call (bench/callgrind_h1.py measures it).
//
// A fresh connection starts as HTTP/1. With h2c on, its Conn sniffs the first
// bytes (conn_sniff.cc); when HTTP/2's preface came, the session lifts the
// bytes out of the Conn, constructs the HTTP/2 session in the same storage
// and hands them over (session.cc). Nothing outside sees the change but the
// answers.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <new>

#include "conn/conn.h"
#include "h2/h2_session.h"

namespace weir {

class Session {
  public:
    enum class Proto : uint8_t { Http1, Http2 };

    // fresh: a new connection (it may turn HTTP/2); a moved one stays HTTP/1
    // (an HTTP/2 session is drained, never moved: docs/http2.md) unless its
    // image had not chosen yet (ConnImage::sniff: adopt sniffs it).
    Session(const ConnSettings &settings, ConnPool &pool, uint64_t id, bool fresh) : settings_(settings), pool_(pool) {
        new (mem_) Conn(settings, pool, id);
        if (fresh)
            start_sniff();
    }
    ~Session() { destroy(); }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    Proto proto() const { return proto_; }

    struct Hooks {
        // A held connection's preface turns it HTTP/2 there and then, which
        // a move can only drain (the arm that loses: maybe_turn_h2).
        bool drain_held_preface = false;
    };
    static Hooks &hooks();

#define WEIR_SESSION(call) (proto_ == Proto::Http1 ? h1().call : h2().call)

    // ---- input
    iovec read_space() { return WEIR_SESSION(read_space()); }
    void on_read(size_t n) {
        WEIR_SESSION(on_read(n));
        if (proto_ == Proto::Http1 && h1().wants_h2()) [[unlikely]]
            maybe_turn_h2();
    }
    size_t take_bytes(const char *p, size_t n) {
        size_t k = WEIR_SESSION(take_bytes(p, n));
        if (proto_ == Proto::Http1 && h1().wants_h2()) [[unlikely]]
            maybe_turn_h2();
        return k;
    }
    void on_eof() { WEIR_SESSION(on_eof()); }
    bool can_read() const { return WEIR_SESSION(can_read()); }

    // ---- requests and answers
    Exchange *take_request() { return WEIR_SESSION(take_request()); }
    // An exchange whose HTTP/2 stream the peer reset while the host held it
    // (report_gone's per-stream case); HTTP/1 has none (its peer leaves whole).
    Exchange *take_reset() { return proto_ == Proto::Http1 ? nullptr : h2().take_reset(); }
    // Whether each exchange meets the handler deadline on its own (HTTP/2's
    // streams: one held too long is answered alone, its siblings and the
    // connection go on) rather than the connection as a whole (HTTP/1's
    // answers leave in order: the first late one ends the connection).
    bool exchanges_expire_alone() const { return proto_ == Proto::Http2; }
    bool waits_for_peer(const Exchange *x) const { return proto_ == Proto::Http2 && h2().waits_for_peer(x); }
    bool has_request() const { return WEIR_SESSION(has_request()); }
    int respond(Exchange *x, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                uint32_t flags) {
        return WEIR_SESSION(respond(x, status, h, nh, body, len, flags));
    }
    int interim(Exchange *x, int status, const weir_header_t *h, size_t nh) {
        return WEIR_SESSION(interim(x, status, h, nh));
    }
    int64_t body_read(Exchange *x, void *buf, size_t cap) { return WEIR_SESSION(body_read(x, buf, cap)); }
    bool body_ready(const Exchange *x) const { return WEIR_SESSION(body_ready(x)); }
    int stream_start(Exchange *x, int status, const weir_header_t *h, size_t nh, uint64_t length, uint32_t flags) {
        return WEIR_SESSION(stream_start(x, status, h, nh, length, flags));
    }
    int stream_write(Exchange *x, const void *p, size_t n) { return WEIR_SESSION(stream_write(x, p, n)); }
    int stream_end(Exchange *x, const weir_header_t *tr, size_t nt) { return WEIR_SESSION(stream_end(x, tr, nt)); }
    int stream_abort(Exchange *x) { return WEIR_SESSION(stream_abort(x)); }
    size_t stream_backlog(const Exchange *x) const { return WEIR_SESSION(stream_backlog(x)); }
    void attach_file(Exchange *x, int fd, uint64_t off, bool ranged) { WEIR_SESSION(attach_file(x, fd, off, ranged)); }
    bool feed_files(size_t window) { return WEIR_SESSION(feed_files(window)); }
    bool streaming(const Exchange *x) const { return WEIR_SESSION(streaming(x)); }
    bool file_stream(const Exchange *x) const { return WEIR_SESSION(file_stream(x)); }
    uint32_t streams() const { return WEIR_SESSION(streams()); }
    template <class F> void each_stream(F &&f) {
        if (proto_ == Proto::Http1)
            h1().each_stream(f);
        else
            h2().each_stream(f);
    }
    void abort_now(uint32_t reason) { WEIR_SESSION(abort_now(reason)); }
    int upgrade(Exchange *x, const weir_header_t *h, size_t nh, bool raw) {
        return WEIR_SESSION(upgrade(x, h, nh, raw));
    }

    // ---- output
    size_t output_iov(iovec *iov, size_t max) { return WEIR_SESSION(output_iov(iov, max)); }
    void on_written(size_t n) { WEIR_SESSION(on_written(n)); }
    bool output_file(FileRange &r) { return WEIR_SESSION(output_file(r)); }
    void on_file_sent(size_t n, int err) { WEIR_SESSION(on_file_sent(n, err)); }
    size_t output_pending() const { return WEIR_SESSION(output_pending()); }
    bool peer_sent_more() const { return WEIR_SESSION(peer_sent_more()); }

    // ---- the PROXY prelude (always HTTP/1's Conn: it comes before the sniff)
    void expect_proxy(PeerAddr *peer, bool trusted) { h1().expect_proxy(peer, trusted); }
    void expire_proxy() { WEIR_SESSION(expire_proxy()); }
    ProxyResult proxy_result() const { return proto_ == Proto::Http1 ? h1().proxy_result() : proxy_result_; }

    // ---- deadlines and lifecycle
    void expire_input(uint32_t reason) { WEIR_SESSION(expire_input(reason)); }
    void close(uint32_t reason) { WEIR_SESSION(close(reason)); }
    void on_closed() { WEIR_SESSION(on_closed()); }
    bool wants_close() const { return WEIR_SESSION(wants_close()); }
    uint32_t close_reason() const { return WEIR_SESSION(close_reason()); }
    uint32_t outstanding() const { return WEIR_SESSION(outstanding()); }
    template <class F> void each_taken(F &&f) {
        if (proto_ == Proto::Http1)
            h1().each_taken(f);
        else
            h2().each_taken(f);
    }
    ConnWait wait() const { return WEIR_SESSION(wait()); }
    bool lent() const { return WEIR_SESSION(lent()); }
    uint64_t id() const { return WEIR_SESSION(id()); }
    uint64_t reading() const { return WEIR_SESSION(reading()); }
    const SessionCounters &counters() const { return WEIR_SESSION(counters()); }

    // ---- moving
    void hold() { WEIR_SESSION(hold()); }
    void unhold() {
        WEIR_SESSION(unhold());
        if (proto_ == Proto::Http1 && h1().wants_h2()) [[unlikely]]
            maybe_turn_h2(); // its preface came while it was held
    }
    bool detachable() const { return WEIR_SESSION(detachable()); }
    bool detach(ConnImage &img) { return WEIR_SESSION(detach(img)); }
    bool upgrade_ready() const { return WEIR_SESSION(upgrade_ready()); }
    bool detach_upgraded(ConnImage &img) { return WEIR_SESSION(detach_upgraded(img)); }
    // An image with sniff set is adopted as a new connection's first bytes
    // are read: sniffed, and HTTP/2's from here on if they are its preface.
    bool adopt(const ConnImage &img) {
        if (proto_ == Proto::Http1 && img.sniff)
            start_sniff();
        bool ok = WEIR_SESSION(adopt(img));
        if (ok && proto_ == Proto::Http1 && h1().wants_h2())
            maybe_turn_h2();
        return ok;
    }

#undef WEIR_SESSION

    Conn &h1() { return *std::launder(reinterpret_cast<Conn *>(mem_)); }
    const Conn &h1() const { return *std::launder(reinterpret_cast<const Conn *>(mem_)); }
    // HTTP/2's session lives out of line: it is four times a Conn, and
    // nghttp2 allocates its own state anyway, so slots stay HTTP/1's size.
    H2Session &h2() { return **std::launder(reinterpret_cast<H2Session **>(mem_)); }
    const H2Session &h2() const { return **std::launder(reinterpret_cast<H2Session *const *>(mem_)); }
    // HTTP/2's counters since the last fold: add(now, was), then now is
    // what was folded. Nothing for HTTP/1.
    template <class F> void fold_h2(F &&add) {
        if (proto_ != Proto::Http2) [[likely]]
            return;
        H2Session &h = h2();
        add(h.h2_counters(), h.h2_folded_);
        h.h2_folded_ = h.h2_counters();
    }

  private:
    // With h2c on, the Conn reads its first bytes as a new connection's:
    // HTTP/2's preface (or, h2c only, anything) turns it HTTP/2.
    void start_sniff() {
        if (settings_.protocols & WEIR_PROTO_H2C)
            h1().sniff_h2(!(settings_.protocols & WEIR_PROTO_HTTP1));
    }
    void maybe_turn_h2(); // session.cc
    void turn_h2();
    void destroy();

    alignas(Conn) unsigned char mem_[sizeof(Conn)];
    const ConnSettings &settings_;
    ConnPool &pool_;
    Proto proto_ = Proto::Http1;
    ProxyResult proxy_result_ = ProxyResult::None; // the Conn's, once HTTP/2 took over
};

} // namespace weir
