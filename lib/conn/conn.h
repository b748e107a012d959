// The per-connection HTTP/1.1 state machine: bytes in, actions out, no I/O.
//
// The backend (epoll, io_uring) owns the socket and asks the Conn what to do:
//   read:    iovec s = c.read_space(); ...; c.on_read(n)      (n == 0: nothing came)
//            or, from a buffer the backend lends: k = c.take_bytes(p, n)
//   handle:  while (Exchange *x = c.take_request()) hand x to the application
//   answer:  c.respond(x, ...)   (any order; answers leave in request order)
//   write:   k = c.output_iov(iov, max); ...; c.on_written(w)
//   close:   when c.wait() == ConnWait::Done, close the fd with
//            c.close_reason(); free the Conn when c.outstanding() == 0.
//
// Lending (what a completion backend relies on): the region read_space()
// returns is lent to the reader until on_read() returns it, and the bytes
// output_iov() describes are lent to the writer until on_written(). While
// lent, nothing the Conn does moves, reuses or frees that memory — not a
// respond(), not a close(), not on_closed(); the input buffer moves only
// inside read_space(), and output lives in segments that never move
// (out_queue.h). A lend must be returned before the Conn is destroyed.
//
// Memory: a connection that has sent nothing, or sits idle between requests,
// holds no buffers: its state (read buffer, exchange ring, output) comes
// from the worker's ConnPool when bytes arrive and goes back when nothing is
// buffered, outstanding or lent, so it costs only sizeof(Conn). Request views
// point into the read buffer; the buffer is never moved or compacted while
// an exchange is handed out, so views stay valid until their exchange is
// answered, even on a dead connection. A failed allocation closes the
// connection with WEIR_CLOSE_RESOURCE; nothing here throws.
//
// Threading: a Conn is touched only on its worker's thread.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "conn/out_queue.h"
#include "proto/exchange.h"
#include "util/peer_addr.h"
#include "weir.h"

namespace weir {

class ConnPool;
class Conn;
namespace conn_detail {
struct ExSlot;
}

class Conn {
  public:
    Conn(const ConnSettings &settings, ConnPool &pool, uint64_t id);
    ~Conn();
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;

    // ---- input
    // Where to read next, lent until on_read(). iov_len == 0 means "do not
    // read now": the pipeline is full, the buffer is full of unanswered
    // requests, the connection is closing or held, a lend is out, or no
    // memory (the connection then closes with WEIR_CLOSE_RESOURCE).
    iovec read_space();
    // Returns the lend: n > 0 bytes landed at read_space().iov_base and are
    // parsed (complete requests become takeable; a parse error queues its
    // answer after the earlier ones and marks the connection closing).
    // n == 0: nothing came (EAGAIN): an idle connection gives its buffers back.
    void on_read(size_t n);
    // Bytes from a buffer the backend lends (a provided buffer): copies what
    // fits now and returns how many it took; the backend keeps the rest
    // until the loop asks for input again.
    size_t take_bytes(const char *p, size_t n);
    // The peer will send no more. Complete requests are still answered; a
    // partial one is dropped; then the connection closes (WEIR_CLOSE_PEER).
    void on_eof();
    // Whether read_space() could give room now, without allocating.
    bool can_read() const;

    // ---- requests
    // The next complete request not yet handed out, in order, or nullptr.
    Exchange *take_request();
    bool has_request() const;

    // ---- answers
    // Answer x (see weir_respond for the rules on status and headers). Copies
    // everything. Returns 0, -EINVAL, -ENOMEM, or WEIR_E_GONE when the
    // connection is dead (the answer is dropped, x released all the same).
    int respond(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                size_t body_len, uint32_t flags);

    // ---- interim answers (conn_interim.cc; the rules are weir_respond_interim's)
    // A 1xx head for x, which stays handed out: written now on x's turn,
    // else kept until it comes (before x's final answer). 0 (also when x
    // was dropped or the client speaks HTTP/1.0: nothing is sent), -EINVAL
    // (x answered or streaming), -ENOMEM (the connection aborts, x dropped).
    int interim(Exchange *x, int status, const weir_header_t *headers, size_t num_headers);

    // ---- streamed request bodies (conn_body.cc; the rules are weir_body_read's)
    // Up to cap decoded bytes of x's body: > 0, 0 at its end, -EAGAIN (then
    // body_ready() says when to try again), -ETIMEDOUT, -ECONNABORTED or a
    // chunk error (the body is over, x is not), WEIR_E_STATE (not streaming
    // a body), -EINVAL, WEIR_E_GONE (x released, as respond()).
    int64_t body_read(Exchange *x, void *buf, size_t cap);
    // Whether a read of x's body would now answer other than -EAGAIN.
    bool body_ready(const Exchange *x) const;

    // ---- streamed answers (conn_stream.cc; the rules are weir_stream_*'s)
    // Begins x's answer: its head now, its body in pieces. length:
    // UINT64_MAX when unknown (chunked, or close-delimited for HTTP/1.0).
    // Returns 0, -EINVAL, -ENOMEM, WEIR_E_GONE (x released, as respond()).
    int stream_start(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                     uint32_t flags);
    // One piece: 0, -EINVAL (not streaming, past the length), -ENOMEM or
    // WEIR_E_GONE (both release x).
    int stream_write(Exchange *x, const void *p, size_t n);
    // The end (trailers for a chunked one): 0, -EINVAL (not streaming, bytes
    // owed, trailers on a body that is not chunked), -ENOMEM, WEIR_E_GONE
    // (released). On 0 x is answered.
    int stream_end(Exchange *x, const weir_header_t *trailers, size_t num_trailers);
    // Cuts x's stream short: what it wrote leaves, then the connection
    // closes (WEIR_CLOSE_ABORTED). 0, -EINVAL (not streaming), WEIR_E_GONE.
    int stream_abort(Exchange *x);
    // The bytes x's stream holds unsent (its turn: the connection's whole
    // unsent output, an upper bound; before it: what it buffered).
    size_t stream_backlog(const Exchange *x) const;
    // A file answer: x's stream (begun with length bytes) is fed from fd
    // (owned from here, closed at the end or on any failure) from offset.
    // ranged: its body leaves as file ranges (output_file) for a port that
    // sends files; otherwise feed_files reads it into the output.
    void attach_file(Exchange *x, int fd, uint64_t offset, bool ranged);
    // Reads file answers that are not ranged into their streams while each
    // holds less than window / 2 unsent, up to window. A read error or a
    // file shorter than promised aborts the connection (WEIR_CLOSE_IO_ERROR):
    // the head said how long the body is. Returns whether one still has more
    // to read.
    bool feed_files(size_t window);
    bool streaming(const Exchange *x) const;
    bool file_stream(const Exchange *x) const; // fed by feed_files (not ranged)
    uint32_t streams() const; // streams begun and not ended
    // Calls f(Exchange *) for each exchange whose answer is streaming.
    template <class F> void each_stream(F &&f);
    // The loop aborts the connection (a stalled stream past the handler
    // deadline): output dropped, exchanges still out turn dropped.
    void abort_now(uint32_t reason) { abort(reason); }

    // ---- output
    // Up to max iovecs of what should be written now, lent until on_written();
    // returns their count.
    size_t output_iov(iovec *iov, size_t max);
    // Returns the lend: n bytes of it were written (0 after an error).
    void on_written(size_t n);
    // Once every byte before it was written: the next range of the file
    // answer whose turn it is, lent until on_file_sent(); false when there
    // is none (bytes to write first, a lend out, no ranged answer).
    bool output_file(FileRange &r);
    // Returns the lend: n bytes of it reached the socket. err 0, or why the
    // port stopped: ENODATA the file ended before the range (it shrank: the
    // connection aborts, WEIR_CLOSE_IO_ERROR); EINVAL, ENOSYS, EOPNOTSUPP
    // this file cannot be sent so (the rest is read into the output, as
    // feed_files does); anything else is a write error (the loop closes).
    void on_file_sent(size_t n, int err);
    // Unsent output: bytes, and what the ranged answer whose turn it is owes.
    size_t output_pending() const;
    // The peer sent past what was answered: bytes read and not parsed, or a
    // closing answer that left a body or requests behind.
    bool peer_sent_more() const;

    // ---- the PROXY protocol (conn_proxy.cc)
    // A fresh connection's first bytes must be a PROXY header (v1 or v2, at
    // most settings.proxy_max_bytes); nothing is parsed as HTTP before it.
    // A PROXY command's source address is written to *peer (the loop's: it
    // outlives the Conn); LOCAL, v1 UNKNOWN, AF_UNSPEC and AF_UNIX leave it
    // alone. trusted false: the source may not send one,
    // and its first bytes are refused. A refusal (untrusted, missing,
    // malformed, oversized) is answered 400, then the connection closes with
    // WEIR_CLOSE_PROXY. Call once, before any byte.
    void expect_proxy(PeerAddr *peer, bool trusted);
    // The header's deadline passed (ConnWait::Proxy): 408 if some of it had
    // come, else closed without a word; WEIR_CLOSE_PROXY either way.
    void expire_proxy();
    // Whether the header is still owed.
    bool proxy_pending() const;

    // ---- HTTP/2 detection (conn_sniff.cc)
    // A fresh connection's first bytes (after its PROXY header) are compared
    // with HTTP/2's client preface before anything is parsed: once all 24
    // have come, wants_h2() turns true, nothing is parsed and the bytes stay
    // unread for the HTTP/2 session (detach() lifts them). A first byte that
    // differs makes it HTTP/1 for good. h2_only: any first bytes go to HTTP/2
    // (whose session refuses what is not its preface). Call before any byte.
    // With both protocols on, the first request may also ask to move to
    // HTTP/2 (Upgrade: h2c with HTTP2-Settings, no body: RFC 7540 §3.2 as
    // clients still send it): then wants_h2() turns true with h2_upgrade()
    // the length of that request's head, left unread at the lifted bytes'
    // start for the HTTP/2 session to answer as its stream 1 (after a 101).
    void sniff_h2(bool h2_only);
    bool wants_h2() const;
    size_t h2_upgrade() const;

    // ---- timeouts
    // The header deadline or the body's wait passed: a request that had
    // started is answered 408 (then the connection closes with reason:
    // WEIR_CLOSE_HEADER_TIMEOUT or WEIR_CLOSE_BODY_TIMEOUT); a connection that
    // never sent a byte closes at once (WEIR_CLOSE_SILENT).
    void expire_input(uint32_t reason);

    // ---- lifecycle
    // The loop decided to close (timeout, shutdown, I/O error, resource): no
    // more input is taken; answers already queued may still be flushed.
    void close(uint32_t reason);
    // The fd was closed: pending output is dropped, the Conn turns zombie until
    // outstanding() == 0.
    void on_closed();
    bool wants_close() const;
    uint32_t close_reason() const; // WEIR_CLOSE_*; meaningful when wants_close()
    uint32_t outstanding() const;  // exchanges handed out and not yet answered
    // Calls f(Exchange *) for each exchange handed out and not yet answered,
    // in request order, then those of a dead connection; f may answer them.
    template <class F> void each_taken(F &&f);
    ConnWait wait() const;
    bool holds_buffers() const;    // false when idle (for tests of the pool)
    bool lent() const;             // a read or write lend is out
    uint64_t id() const { return id_; }
    // Which request is being read, for the request deadline (loop/binding.h):
    // changes when a request has arrived whole (a streamed body's request only
    // once its body has: its head is handed out first).
    uint64_t reading() const;

    // ---- moving (conn_image.cc)
    // Parse no further requests: the connection is heading for a request
    // boundary where it can be detached.
    void hold();
    bool held() const; // hold() was called and not called off
    // The move was called off: parse on (requests that waited in the buffer
    // become takeable now).
    void unhold();
    // At a request boundary: nothing parsed and unanswered, nothing handed
    // out, nothing to write, nothing lent, not closing.
    bool detachable() const;
    // Moves the unread bytes and counters into img (fd and peer are the
    // loop's) and leaves this Conn dead. false: not detachable, or no memory
    // for the bytes (the Conn is unchanged).
    bool detach(ConnImage &img);
    // ---- upgrades (conn_image.cc)
    // Answers x (the last request parsed, an Upgrade on a keep-alive
    // connection) with 101 Switching Protocols, Connection: upgrade and the
    // given fields; nothing after it is parsed. raw: no 101 is written (the
    // host answers on the socket it takes: weir_upgrade_raw). 0, -EINVAL,
    // -ENOMEM (aborted), WEIR_E_GONE (x released).
    int upgrade(Exchange *x, const weir_header_t *headers, size_t num_headers, bool raw = false);
    // The 101 and everything before it has left: the connection can go.
    bool upgrade_ready() const;
    // As detach(), for an upgraded connection once upgrade_ready().
    bool detach_upgraded(ConnImage &img);
    // A fresh Conn takes over img's counters and unread bytes (parsing them).
    // false on allocation failure (the Conn then closes, WEIR_CLOSE_RESOURCE).
    bool adopt(const ConnImage &img);

    // ---- counters the loop folds into its metrics
    using Counters = SessionCounters;
    const Counters &counters() const { return counters_; }
    using ProxyResult = weir::ProxyResult;
    ProxyResult proxy_result() const { return proxy_result_; }

    struct State; // pooled: buffers, exchange ring, header arrays, output

  private:
    // each_taken's cursors (conn.cc): an answer may give the state back to
    // the pool or drop the rest, so each is re-read from the state every time.
    bool lift(ConnImage &img); // detach's body
    uint32_t first_unwritten() const;
    uint32_t ring_size() const;
    Exchange *taken_seq(uint32_t seq);
    Exchange *dropped_at(uint32_t i);
    Exchange *stream_at(uint32_t i);
    int check_slot(Exchange *x, bool *gone);
    bool ensure_state();
    bool held_between(const State &s) const;
    void parse();
    void complete(size_t body_off, size_t body_len, uint32_t num_trailers);
    // conn_body.cc
    bool streams_body(const weir_http1_request &h) const;
    bool body_room();
    void begin_body();
    void body_done();
    bool body_cut(const Exchange *x);
    void end_body(int error);
    size_t body_keep() const;
    void compact_body();
    int64_t body_read_chunked(State &s, char *out, size_t cap);
    void refuse(int status, uint32_t reason, bool parse_error);
    // conn_interim.cc: a slot's kept interim answers, before its final one
    // is appended (the rest of its answer buffer is cleared) / sent on its turn.
    static void take_interim(conn_detail::ExSlot &sl);
    bool send_interim(conn_detail::ExSlot &sl);
    void flush();
    void finish(uint32_t reason);
    void abort(uint32_t reason);
    void drop_unanswered();
    void check_output_limit();
    void relocate(char *nb, size_t ncap, size_t start);
    void release_if_idle();
    bool proxy_step(); // conn_proxy.cc: false while the header is owed or was refused
    bool sniff_step(); // conn_sniff.cc: false while the preface may still come or came
    bool h2c_upgrade_asked(const weir_http1_request &h) const; // conn_sniff.cc
    const ConnSettings &settings_;
    ConnPool &pool_;
    State *st_ = nullptr;
    uint64_t id_;
    Counters counters_{};
    uint32_t close_reason_ = 0;
    uint32_t flags_ = 0;
    ProxyResult proxy_result_ = ProxyResult::None;
    // expect_proxy's: where a PROXY command's source address goes.
    PeerAddr *proxy_peer_ = nullptr;
};

template <class F> void Conn::each_taken(F &&f) {
    uint32_t base = first_unwritten();
    for (uint32_t i = 0; i < ring_size(); i++)
        if (Exchange *x = taken_seq(base + i))
            f(x);
    for (uint32_t i = 0; i < ring_size(); i++)
        if (Exchange *x = dropped_at(i))
            f(x);
}

template <class F> void Conn::each_stream(F &&f) {
    for (uint32_t i = 0; streams() > 0 && i < ring_size(); i++)
        if (Exchange *x = stream_at(i))
            f(x);
}

// Test hooks of lib/conn (never set outside tests).
struct ConnHooks {
    // The arm that must lose: a failed state allocation throws std::bad_alloc
    // (what the code did before it closed the connection instead).
    std::atomic<bool> alloc_throws{false};
};
ConnHooks &conn_hooks();

// Per-worker pool of connection states (read buffer, exchange ring, views,
// output segments), so the steady request path allocates nothing. Single
// thread.
class ConnPool {
  public:
    explicit ConnPool(const ConnSettings &settings);
    ~ConnPool();
    ConnPool(const ConnPool &) = delete;
    ConnPool &operator=(const ConnPool &) = delete;
    size_t cached() const; // states waiting in the pool (tests)
    size_t in_use() const { return in_use_; } // states some Conn holds (tests)
    size_t kept_answer_bytes() const; // answer buffers the cached states keep (tests)
    SegPool &segments() { return segs_; }
    // Bytes the pool's states and segments hold (in use or cached; a
    // state's private grown buffer is not counted): the overload manager's
    // memory reading.
    size_t bytes() const;

    // The overload manager's keep-alive switch (worker_overload.cc): while
    // set, an answer to a keep-alive request carries Connection: close and
    // its connection closes after it (WEIR_CLOSE_OVERLOAD), counted here.
    bool keep_alive_off = false;
    uint64_t keep_alive_cuts = 0;

    // What the trim (lib/loop/trim.h) reads and does, on the owning thread.
    // Bytes are allocated bytes (a cached state's untouched pages may never
    // have been resident).
    size_t cached_bytes() const { return cached_bytes_ + segs_.cached() * SegPool::kSegAlloc; }
    // The most states held at once since the last call, which restarts it
    // from what is held now.
    size_t peak() const { return peak_; }
    size_t take_peak() {
        size_t p = peak_;
        peak_ = in_use_;
        return p;
    }
    // Bytes freed to the allocator since the last call (states over the
    // pool's cap, trims): what a heap trim may give back to the kernel.
    size_t take_freed() {
        size_t f = freed_ + segs_.take_freed();
        freed_ = 0;
        return f;
    }
    // Frees cached states past keep, then cached segments past keep; the
    // bytes freed.
    size_t trim(size_t keep);

  private:
    friend class Conn;
    Conn::State *take(); // nullptr when out of memory
    void give(Conn::State *state);
    const ConnSettings &settings_;
    SegPool segs_; // before free_: states hold segments of it
    Conn::State *free_ = nullptr;
    size_t cached_ = 0;
    size_t in_use_ = 0;
    size_t peak_ = 0;
    size_t cached_bytes_ = 0; // of the cached states (their pooled_bytes)
    size_t freed_ = 0;
};

} // namespace weir
