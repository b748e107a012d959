// The per-connection HTTP/1.1 state machine: bytes in, actions out, no I/O.
//
// The backend (epoll, io_uring) owns the socket and asks the Conn what to do:
//   read:    iovec s = c.read_space(); n = read(fd, s); c.on_read(n) / c.on_eof()
//   handle:  while (Exchange *x = c.take_request()) hand x to the application
//   answer:  c.respond(x, ...)   (any order; answers leave in request order)
//   write:   n = c.output_iov(iov, k); w = writev(fd, iov, n); c.on_written(w)
//   close:   when c.wants_close() and c.output_pending() == 0, close the fd
//            with c.close_reason(); free the Conn when c.outstanding() == 0.
//
// Memory: an idle connection holds no buffers. Its read buffer comes from the
// worker's ConnPool when bytes arrive and returns there when nothing is
// buffered and nothing is outstanding, so idle keep-alive connections cost
// only sizeof(Conn). Request views point into the read buffer; the buffer is
// never moved or compacted while an exchange is handed out, so views stay
// valid until their exchange is answered, even on a dead connection.
//
// Threading: a Conn is touched only on its worker's thread.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "weir.h"

namespace weir {

class ConnPool;
class Conn;

struct ConnSettings {
    weir_http1_limits limits;       // parser limits, max_body included; resolved (http1::limits_resolve)
    uint32_t read_buffer_size = 16384; // pooled block size; larger heads/bodies grow a private buffer
    uint32_t max_pipeline = 64;     // requests parsed ahead of their answers
    uint32_t max_output_bytes = 4u << 20; // unsent output past this closes (WEIR_CLOSE_OUTPUT_LIMIT)
};

// One request and, later, its answer. Lives inside its Conn's pooled state;
// valid from take_request() until respond() returns, even if the connection
// died in between (the Conn is then a zombie kept for its exchanges).
struct Exchange {
    weir_request req;      // what handlers read
    Conn *conn = nullptr;  // owner
    uint32_t seq = 0;      // position in the connection's request order
    uint8_t state = 0;     // private to Conn
    uint8_t reserved[3] = {};
    void *user = nullptr;  // the backend's own use (e.g. deferred flag, worker tag)
};

// What the backend should arm a timer for.
enum class ConnWait : uint8_t {
    Idle,     // keep-alive: waiting for the first byte of a request (idle timeout)
    Head,     // part of a request head or body has arrived (header timeout)
    Handler,  // waiting for the application's answers (no timeout)
    Output,   // output pending and the socket is full (write timeout)
    Done,     // wants_close() and nothing left to write: close now
};

class Conn {
  public:
    Conn(const ConnSettings &settings, ConnPool &pool, uint64_t id);
    ~Conn();
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;

    // ---- input
    // Where to read next. iov_len == 0 means "do not read now": the pipeline is
    // full, or the buffer is full of unanswered requests, or the connection is
    // closing. Ask again after respond()/on_written().
    iovec read_space();
    // n > 0 bytes landed at read_space().iov_base. Parses what it can: complete
    // requests become takeable; a parse error queues its error answer (after
    // the earlier answers) and marks the connection closing.
    // n == 0 means the read found nothing (EAGAIN): an idle connection then
    // gives its buffers back to the pool.
    void on_read(size_t n);
    // The peer will send no more. Complete requests are still answered; a
    // partial one is dropped; then the connection closes (WEIR_CLOSE_PEER).
    void on_eof();

    // ---- requests
    // The next complete request not yet handed out, in order, or nullptr.
    Exchange *take_request();

    // ---- answers
    // Answer x (see weir_respond for the rules on status and headers). Copies
    // everything. Returns 0, -EINVAL, -ENOMEM, or WEIR_E_GONE when the
    // connection is dead (the answer is dropped, x released all the same).
    int respond(Exchange *x, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                size_t body_len, uint32_t flags);

    // ---- output
    // Fills up to max iovecs with what should be written now; returns the count.
    size_t output_iov(iovec *iov, size_t max);
    // n bytes of output were written.
    void on_written(size_t n);
    size_t output_pending() const;

    // ---- lifecycle
    // The backend decided to close (timeout, shutdown, I/O error, resource):
    // no more input is taken; answers already queued may still be flushed.
    void close(uint32_t reason);
    // The fd was closed: pending output is dropped, the Conn turns zombie until
    // outstanding() == 0.
    void on_closed();
    bool wants_close() const;
    uint32_t close_reason() const; // WEIR_CLOSE_*; meaningful when wants_close()
    uint32_t outstanding() const;  // exchanges handed out and not yet answered
    ConnWait wait() const;
    bool holds_buffers() const;    // false when idle (for tests of the pool)
    uint64_t id() const { return id_; }

    // ---- counters the backend folds into its metrics
    struct Counters {
        uint64_t requests = 0;
        uint64_t responses = 0;
        uint64_t parse_errors = 0;
        uint64_t continues_sent = 0;
    };
    const Counters &counters() const { return counters_; }

    struct State; // pooled: buffers, exchange ring, header arrays

  private:
    void parse();
    void complete(size_t body_off, size_t body_len, uint32_t num_trailers);
    void refuse(int rc);
    void flush();
    void finish(uint32_t reason);
    void abort(uint32_t reason);
    void check_output_limit();
    void relocate(char *nb, size_t ncap, size_t start);
    void release_if_idle();
    const ConnSettings &settings_;
    ConnPool &pool_;
    State *st_ = nullptr;
    uint64_t id_;
    Counters counters_{};
    uint32_t close_reason_ = 0;
    uint8_t flags_ = 0;
};

// Per-worker pool of connection states (read buffer, exchange ring, views),
// so the steady request path allocates nothing. Single thread.
class ConnPool {
  public:
    explicit ConnPool(const ConnSettings &settings);
    ~ConnPool();
    ConnPool(const ConnPool &) = delete;
    ConnPool &operator=(const ConnPool &) = delete;
    size_t cached() const; // states waiting in the pool (tests)

  private:
    friend class Conn;
    void *take();
    void give(void *state);
    const ConnSettings &settings_;
    void *free_ = nullptr;
    size_t cached_ = 0;
};

} // namespace weir
