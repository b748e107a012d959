// One HTTP/2 stream of an H2Session: its request (the Exchange and the bytes
// its views point at), its request body, and its answer's unsent bytes.
// Private to lib/h2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conn/conn.h"

namespace weir {

struct H2Stream;

// Everything a recycled stream starts again from; the buffers (H2Stream's
// own members) are cleared instead, keeping their capacity, so a stream
// recycled for a request like the one before allocates nothing.
struct H2StreamState {
    Exchange x; // first: stream_of() finds the stream from its exchange
    H2Stream *next_live = nullptr, *prev_live = nullptr;
    H2Stream *next_ready = nullptr; // the ready queue, or the reset list
    int32_t id = 0;
    // Who still holds it: nghttp2 (until on_stream_close) and the host
    // (from the end of its header block until its answer was given).
    bool ng_open = true;
    bool host = false;       // handed out, or waiting in the ready queue
    bool taken = false;      // handed out by take_request
    bool reset = false;      // the peer reset it while the host held it
    bool reported = false;   // take_reset gave it
    bool in_reset_list = false;
    bool head_done = false;  // its header block ended
    bool in_head = false;    // a header block of it is arriving
    bool buffering = false;  // its body is being buffered (counted in nbuffering_)
    uint32_t nregular = 0;   // fields before the trailers
    bool head_bad = false;   // over a header bound: answered 431, never handed out
    bool is_head = false;    // HEAD: answers carry no DATA
    bool finished = false;   // the answer was submitted whole (or the stream cut)
    bool peer_ended = false; // END_STREAM came
    bool peer_answered = false; // we sent END_STREAM (or reset it)
    // The request as it arrives: the field bytes in `arena` (never grown
    // once the exchange is out), the views built at the block's end.
    uint32_t method_off = 0, method_len = 0, path_off = 0, path_len = 0;
    uint32_t auth_off = 0, auth_len = 0;
    bool has_method = false, has_path = false, has_auth = false;
    uint32_t header_bytes = 0; // the decoded list's size (RFC 9113 §6.5.2: name + value + 32)
    bool trailers = false;     // the current header block is a trailer section
    bool expect_continue = false; // expect: 100-continue
    // The request body.
    bool body_stream = false; // WEIR_REQ_BODY_STREAM: read with body_read
    bool body_over = false;   // past max_body: the rest is discarded
    bool body_discard = false; // no one will read it: consumed as it comes
    bool rst_after = false;   // RST_STREAM NO_ERROR once our END_STREAM went
    size_t body_off = 0;      // streamed: bytes of `body` already read
    uint64_t body_total = 0;  // bytes received
    int64_t content_length = -1;
    // The answer.
    bool streaming = false;   // stream_start'ed, not ended
    bool out_end = false;     // no more bytes will be added
    size_t out_off = 0;
    // The host's own bytes, lent for the length of one respond/stream_write
    // call (after `out`'s): DATA frames written in that call take them
    // straight to the output; what the windows hold back is copied into
    // `out` before the call returns (keep_lent). One copy, not three.
    const char *lent = nullptr;
    size_t lent_len = 0, lent_off = 0;
    uint64_t out_left = UINT64_MAX; // bytes owed by a streamed answer with a length
    bool deferred = false;    // its data source said NGHTTP2_ERR_DEFERRED
    int file_fd = -1;
    uint64_t file_off = 0;
};

struct H2Stream : H2StreamState {
    // The request's field bytes (never grown once the exchange is out) and
    // the views built at the block's end.
    std::string arena;
    struct Field {
        uint32_t name_off, name_len, value_off, value_len;
    };
    std::vector<Field> fields;
    std::vector<weir_header_t> hdrs;
    std::string body; // buffered whole, or the streamed bytes not yet read
    std::string out;  // the answer's bytes nghttp2 has not taken yet
    std::vector<std::string> trailer_kv; // lowercased name, value, name, value...

    size_t backlog() const { return out.size() - out_off + (lent_len - lent_off); }
    // n bytes of the backlog, oldest first, to f(p, len) (one or two runs).
    template <class F> void take(size_t n, F &&f) {
        size_t a = out.size() - out_off;
        a = a < n ? a : n;
        if (a) {
            f(out.data() + out_off, a);
            out_off += a;
            if (out_off == out.size()) {
                out.clear();
                out_off = 0;
            }
        }
        if (n > a) {
            f(lent + lent_off, n - a);
            lent_off += n - a;
        }
    }
    // The lent bytes not framed yet into `out` (may throw bad_alloc).
    void keep_lent() {
        if (lent && lent_off < lent_len)
            out.append(lent + lent_off, lent_len - lent_off);
        drop_lent();
    }
    void drop_lent() {
        lent = nullptr;
        lent_len = lent_off = 0;
    }
    void reset_for_reuse();
    // Bytes each of a recycled stream's buffers may keep (shed()).
    static constexpr size_t kKeepBuffer = 4096;
    void shed();
};

} // namespace weir
