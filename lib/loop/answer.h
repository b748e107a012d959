// Cross-thread answers: weir_respond on a foreign thread copies the answer
// into an Answer and posts it to the owning worker's MPSC queue; the worker
// applies it with Conn::respond and gives the Answer back to its pool.
//
// The pool keeps used Answers (and their buffers) so the steady deferred path
// does not allocate: a mutex guards the free list because many foreign threads
// take from it (a lock-free pop would need ABA protection); it is held for a
// pointer swap only. Buffers larger than kKeepBytes are freed, not kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "loop/mpsc.h"
#include "weir.h"

namespace weir {

struct Exchange;

// What a posted node asks for: a whole answer, or a piece of a streamed one
// (worker_stream.cc: the head, a body piece, the end with its trailers in
// headers, or its abort), or a 1xx before the answer (worker_interim.cc).
enum class AnswerKind : uint8_t { Respond, Start, Write, End, Abort, File, Upgrade, Interim };

struct Answer : MpscNode {
    Exchange *x = nullptr;
    AnswerKind kind = AnswerKind::Respond;
    uint64_t handle = 0;  // a stream's ticket, checked before x is touched
    uint64_t length = 0;  // Start, File: the announced length (UINT64_MAX: unknown)
    int file_fd = -1;     // File: weir's dup of the host's fd
    uint64_t file_off = 0;
    int status = 0;
    uint32_t flags = 0;
    bool drop = false; // the connection is gone: release x only
    const weir_header_t *headers = nullptr;
    size_t num_headers = 0;
    const char *body = nullptr;
    size_t body_len = 0;
    char *buf = nullptr; // headers array, then names and values, then body
    size_t cap = 0;
    Answer *next_free = nullptr;
};

class AnswerPool {
  public:
    static constexpr size_t kKeepBytes = 64 * 1024;
    static constexpr size_t kKeepCount = 1024;
    ~AnswerPool();
    // Any thread. A copy of the answer, or nullptr (out of memory).
    Answer *make(Exchange *x, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                 uint32_t flags);
    Answer *make_drop(Exchange *x);
    // Any thread.
    void give(Answer *a);

  private:
    Answer *take(size_t need);
    std::mutex mu_;
    Answer *free_ = nullptr;
    size_t count_ = 0;
};

} // namespace weir
