// The per-connection HTTP/2 state machine (RFC 9113): bytes in, actions out,
// no I/O, no loop code. Framing, HPACK and flow control are libnghttp2's; this
// class turns its streams into weir Exchanges and back.
//
// It offers the methods of weir::Conn (conn/conn.h) with the same signatures
// and the same contracts, so the loop drives either through one seam: read
// (read_space/on_read or take_bytes), take_request, respond/stream_*, write
// (output_iov/on_written), wait(), close, on_closed, zombie while
// outstanding(). Read conn/conn.h for the contracts; what differs is said
// here and in docs/http2.md.
//
// Lending: the read region is lent until on_read() (nghttp2 copies what it
// keeps, so the buffer is reused at once); output lives in an OutQueue of
// segments that never move (conn/out_queue.h), lent until on_written().
//
// Each stream is one Exchange, owned by an H2Stream (h2_stream.h) that lives
// until both the host released its exchange and nghttp2 closed the stream,
// so an exchange stays valid from take_request() until its answer returns,
// even on a dead session (zombie). A stream the peer reset while its exchange
// is out is "gone": take_reset() hands it to the loop (report_gone) and the
// answer returns WEIR_E_GONE.
//
// Threading: a session is touched only on its worker's thread.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conn/conn.h"
#include "conn/out_queue.h"
#include "weir.h"

struct nghttp2_session;

namespace weir {

struct H2Stream;
namespace h2_detail {
struct MemCache;
}

// The HTTP/2 settings and abuse bounds. Zero for a bound means its default.
struct H2Settings {
    uint32_t max_concurrent_streams = 100; // SETTINGS_MAX_CONCURRENT_STREAMS; more are refused
    uint32_t header_table = 4096;          // SETTINGS_HEADER_TABLE_SIZE, and our encoder's bound
    uint32_t stream_window = 65535;        // SETTINGS_INITIAL_WINDOW_SIZE (request bodies)
    // Rapid reset (CVE-2023-44487): of the last reset_window streams opened,
    // at most max_resets may be reset by the peer before their answer.
    uint32_t reset_window = 200;
    uint32_t max_resets = 100;
    // CONTINUATION flood (CVE-2024-27316): frames of one header block, and
    // its compressed bytes (0: twice limits.max_header_bytes).
    uint32_t max_continuations = 32;
    uint32_t max_header_block = 0;
    // SETTINGS, PING, WINDOW_UPDATE and empty DATA frames (no END_STREAM)
    // between two answers, or between two DATA frames we send.
    uint32_t max_control_frames = 1000;
};

// HTTP/2 counters the loop folds into its metrics.
struct H2Counters {
    uint64_t sessions = 1;        // this connection speaks HTTP/2 (metrics sum it)
    uint64_t upgrades = 0;        // it came by Upgrade: h2c
    uint64_t streams = 0;         // streams opened by the peer (HEADERS begun)
    uint64_t resets_by_peer = 0;  // RST_STREAM received for a stream we had not finished
    uint64_t refused = 0;         // RST_STREAM REFUSED_STREAM sent (over the stream limit)
    uint64_t malformed = 0;       // RST_STREAM PROTOCOL_ERROR sent (RFC 9113 §8.1.1)
    uint64_t headers_too_large = 0; // answered 431 (header list over the bound)
    uint64_t bodies_too_large = 0;  // answered 413
    uint64_t floods = 0;          // connections closed H2_ABUSE (any flood, rapid reset)
    uint64_t rapid_resets = 0;    // of those: rapid reset
    uint64_t continuation_floods = 0; // of those: CONTINUATION flood
    uint64_t goaways_sent = 0;
};

class H2Session {
  public:
    H2Session(const ConnSettings &cs, const H2Settings &hs, ConnPool &pool, uint64_t id);
    ~H2Session();
    H2Session(const H2Session &) = delete;
    H2Session &operator=(const H2Session &) = delete;

    // ---- input (Conn's contracts; the bytes include the client preface)
    iovec read_space();
    void on_read(size_t n);
    size_t take_bytes(const char *p, size_t n);
    void on_eof();
    bool can_read() const;

    // ---- requests: one per stream, in the order their header blocks ended
    Exchange *take_request();
    bool has_request() const;
    // An exchange whose stream the peer reset while it was out, once each
    // (the loop reports it with report_gone); nullptr when none.
    Exchange *take_reset();

    // ---- the upgrade from HTTP/1.1 (h2_upgrade.cc): head is the first
    // request's head (len bytes, asking Upgrade: h2c with HTTP2-Settings, no
    // body), before any other byte is given. Answers 101, applies the
    // client's settings and makes the request stream 1. false: not taken (out
    // of memory: the session aborts).
    bool upgrade_h1(const char *head, size_t len);

    // ---- answers (any order across streams)
    // flags: WEIR_RESPOND_CLOSE (then a graceful GOAWAY and close,
    // WEIR_CLOSE_HANDLER), WEIR_RESPOND_ABORT (RST_STREAM INTERNAL_ERROR
    // for x's stream only).
    int respond(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                size_t body_len, uint32_t flags);
    // A 1xx HEADERS frame before x's answer.
    int interim(Exchange *x, int status, const weir_header_t *headers, size_t num_headers);

    // ---- streamed request bodies (h2_body.cc; weir_body_read's rules)
    int64_t body_read(Exchange *x, void *buf, size_t cap);
    bool body_ready(const Exchange *x) const;

    // ---- streamed answers (h2_output.cc): DATA under the peer's windows
    int stream_start(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                     uint32_t flags);
    int stream_write(Exchange *x, const void *p, size_t n);
    // Trailers go out as a trailing HEADERS frame.
    int stream_end(Exchange *x, const weir_header_t *trailers, size_t num_trailers);
    // RST_STREAM INTERNAL_ERROR for x's stream; the connection goes on.
    int stream_abort(Exchange *x);
    // The bytes x's stream holds that nghttp2 has not framed yet.
    size_t stream_backlog(const Exchange *x) const;
    // ranged is ignored: the file is read into the stream (feed_files).
    void attach_file(Exchange *x, int fd, uint64_t offset, bool ranged);
    bool feed_files(size_t window);
    bool streaming(const Exchange *x) const;
    // The host holding x waits for the peer, not the peer for the host: its
    // request body is still arriving, or its answer's bytes wait for the
    // peer's window (the handler deadline does not run; the body and write
    // deadlines do).
    bool waits_for_peer(const Exchange *x) const;
    bool file_stream(const Exchange *x) const;
    uint32_t streams() const { return nstreaming_; }
    template <class F> void each_stream(F &&f);
    void abort_now(uint32_t reason) { abort(reason); }

    // ---- output
    size_t output_iov(iovec *iov, size_t max);
    void on_written(size_t n);
    bool output_file(FileRange &) { return false; } // never: files are read into DATA
    void on_file_sent(size_t, int) {}
    size_t output_pending() const;
    bool peer_sent_more() const { return false; }

    // ---- the PROXY protocol: handled before the session exists
    void expect_proxy(PeerAddr *, bool) {}
    void expire_proxy() {}
    bool proxy_pending() const { return false; }

    // ---- timeouts: GOAWAY and close (WEIR_CLOSE_SILENT before any byte)
    void expire_input(uint32_t reason);

    // ---- lifecycle
    // WEIR_CLOSE_SHUTDOWN and WEIR_CLOSE_GOAWAY drain (begin_drain); other
    // reasons send the final GOAWAY now, and the open streams finish, except
    // where waiting gains nothing (write timeout, I/O error, no memory,
    // output limit, slow reader, the H2 reasons): no more input, Done once
    // the output is out.
    void close(uint32_t reason);
    // GOAWAY with stream id 2^31-1 and a PING; on its ACK the final GOAWAY
    // with the last stream id processed; the open streams finish, then Done.
    void begin_drain(uint32_t reason);
    void on_closed();
    bool wants_close() const { return close_reason_ != kOpen; }
    uint32_t close_reason() const { return close_reason_ == kOpen ? WEIR_CLOSE_PEER : close_reason_; }
    uint32_t outstanding() const { return nout_; }
    template <class F> void each_taken(F &&f);
    ConnWait wait() const;
    bool holds_buffers() const { return in_ != nullptr || out_.pending() > 0; }
    bool lent() const { return read_lent_ || write_lent_; }
    uint64_t id() const { return id_; }
    uint64_t reading() const { return whole_; }

    // ---- moving: an HTTP/2 connection moves by draining (WEIR_CLOSE_GOAWAY)
    void hold() { begin_drain(WEIR_CLOSE_GOAWAY); }
    void unhold() {} // a drain, once begun, goes on: the client has seen the GOAWAY
    bool detachable() const { return false; }
    bool detach(ConnImage &) { return false; }
    int upgrade(Exchange *, const weir_header_t *, size_t, bool = false) { return -EINVAL; }
    bool upgrade_ready() const { return false; }
    bool detach_upgraded(ConnImage &) { return false; }
    bool adopt(const ConnImage &) { return false; }

    const SessionCounters &counters() const { return counters_; }
    const H2Counters &h2_counters() const { return h2c_; }
    ProxyResult proxy_result() const { return ProxyResult::None; }

    // Test hooks (set only by single-threaded unit tests): switch a bound
    // off to show the loss it guards against.
    struct Hooks {
        bool no_rapid_reset = false;
        bool no_continuation_bound = false;
        bool no_control_bound = false;
        bool no_flow_hold = false; // consume request bodies as they come
        bool field_throws = false; // a field's copy fails (std::bad_alloc), as out of memory would
        bool keep_every_stream = false; // recycled streams kept whole and without bound (the arm)
    };
    static Hooks &hooks();

    // ---- internals shared by the files of lib/h2 (not the loop's)
    static constexpr uint32_t kOpen = UINT32_MAX;
    // Recycled streams a session keeps for reuse (maybe_free), each with
    // buffers of at most H2Stream::kKeepBuffer: h2load's -m16 reuses 16.
    static constexpr uint32_t kKeepStreams = 16;
    const ConnSettings &cs_;
    H2Settings hs_;
    ConnPool &pool_;
    uint64_t id_;
    nghttp2_session *ng_ = nullptr;
    h2_detail::MemCache *mem_ = nullptr; // nghttp2's freed blocks (h2_alloc.cc), deleted after ng_
    OutQueue out_;
    char *in_ = nullptr; // the read buffer (cs_.read_buffer_size), lent by read_space
    SessionCounters counters_{};
    H2Counters h2c_{};
    H2Counters h2_folded_{.sessions = 0}; // what the loop has folded into its metrics (fold_h2)
    uint32_t close_reason_ = kOpen;
    uint32_t nout_ = 0;       // exchanges handed out and not released
    uint32_t nstreaming_ = 0; // answers streaming (begun, not ended)
    uint32_t seq_ = 0;
    uint32_t nheads_ = 0;     // header blocks begun and not ended
    uint32_t nbuffering_ = 0; // request bodies arriving, buffered, not yet handed out
    // Abuse windows (h2_limits.cc).
    uint32_t rr_opened_ = 0, rr_resets_ = 0;
    uint32_t ctrl_frames_ = 0;
    uint32_t block_frames_ = 0, block_bytes_ = 0;
    // The peer's newest stream ids (h2_callbacks.cc): RFC 9113 §5.1.1 makes a
    // HEADERS on an id below the newest that was never opened a connection
    // error; nghttp2 1.52 drops it instead. Ids older than the ring are let be
    // (they may name a stream we reset, whose frames must be ignored, §5.1).
    int32_t recent_ids_[16] = {};
    uint32_t recent_n_ = 0;
    bool unexpected_id(int32_t id); // true: answered with GOAWAY PROTOCOL_ERROR
    bool got_bytes_ = false;
    bool preface_done_ = false; // the peer's first SETTINGS came
    bool read_lent_ = false, write_lent_ = false;
    bool dead_ = false;       // the fd was closed or the session aborted: no I/O
    bool no_input_ = false;   // take no more input (hard close, fatal error, abuse)
    bool draining_ = false;   // begin_drain's first GOAWAY went
    bool final_goaway_ = false;
    bool graceful_ = false;
    bool eof_ = false;
    bool oom_ = false;        // an allocation failed inside an nghttp2 callback
    // Streams: all live ones (nghttp2's and the host's), the ready queue
    // (complete requests not taken), the reset ones not yet reported.
    H2Stream *live_ = nullptr;
    H2Stream *ready_head_ = nullptr, *ready_tail_ = nullptr;
    H2Stream *reset_head_ = nullptr;
    H2Stream *free_ = nullptr; // recycled streams
    uint32_t nfree_ = 0;       // how many (past kKeepStreams only until trim_free)
    std::vector<Exchange *> scratch_; // each_taken / each_stream's snapshot

    // h2_session.cc
    void pump();
    void feed(const char *p, size_t n);
    void abort(uint32_t reason);
    // The final GOAWAY now; graceful: the open streams finish first.
    void finish(uint32_t reason, uint32_t h2_error, bool graceful = false);
    H2Stream *stream_of(const Exchange *x) const;
    void out_list(std::vector<Exchange *> &v) const; // exchanges out, in request order
    bool is_out(const Exchange *x) const;
    H2Stream *new_stream(int32_t id);
    void release(H2Stream *s);     // the host is done with its exchange
    void maybe_free(H2Stream *s);  // freed when both sides are done
    void make_ready(H2Stream *s);
    void check_output_limit();
    void trim_free(); // the recycled streams past kKeepStreams go (h2_session.cc)
    // Recycled streams kept for reuse now (tests).
    uint32_t recycled_streams() const { return nfree_; }
    size_t unsent() const;        // framed bytes and the streams' backlogs
    bool window_stalled() const;
    int check_x(Exchange *x, H2Stream **out);
    // h2_output.cc
    int out_of_memory(Exchange *x, bool consume);
    int respond_impl(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                     size_t body_len, uint32_t flags);
    int interim_impl(Exchange *x, int status, const weir_header_t *headers, size_t num_headers);
    int stream_start_impl(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                          uint32_t flags);
    int stream_write_impl(Exchange *x, const void *p, size_t n);
    int stream_end_impl(Exchange *x, const weir_header_t *trailers, size_t num_trailers);
    int submit_head(H2Stream *s, int status, const weir_header_t *h, size_t n, uint64_t length, bool has_body);
    // h2_limits.cc
    void abuse(uint32_t what); // GOAWAY ENHANCE_YOUR_CALM, WEIR_CLOSE_H2_ABUSE
    bool control_frame();      // false: over the bound (abused)
    void answered_one();
    void stream_opened();                 // the rapid-reset window
    void reset_by_peer(H2Stream *s);      // RST_STREAM before our answer ended
    // h2_body.cc
    void field(H2Stream *s, const char *n, size_t nl, const char *v, size_t vl);
    void request_done(H2Stream *s, bool end); // its header block ended
    void body_chunk(H2Stream *s, const uint8_t *p, size_t n);
    void body_end(H2Stream *s);
    void stream_closed(H2Stream *s);      // nghttp2 is done with it
    void refuse(H2Stream *s, int status); // answers without an exchange (413, 431)
    uint64_t whole_ = 0;                  // requests arrived whole (reading())
};

template <class F> void H2Session::each_taken(F &&f) {
    // A snapshot in request order, each re-checked before f: f may answer
    // (and so free) any of them.
    std::vector<Exchange *> snap;
    snap.swap(scratch_);
    out_list(snap);
    for (Exchange *x : snap)
        if (is_out(x))
            f(x);
    snap.clear();
    if (scratch_.capacity() < snap.capacity())
        scratch_.swap(snap);
}

template <class F> void H2Session::each_stream(F &&f) {
    each_taken([&](Exchange *x) {
        if (streaming(x))
            f(x);
    });
}

} // namespace weir
