// The HTTP/1.1 response writer (pure): status line, Date, framing headers,
// the caller's headers and the body, serialized into an output: a Bytes
// buffer (an answer kept until its turn) or a connection's OutQueue, which
// this header does not name (see write_response).
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/bytes.h"
#include "weir.h"

namespace weir::http1 {

// Checks an answer before anything is queued: status 200..999, header names
// are tokens, values hold no CR, LF or NUL, and none of the fields weir owns
// (Content-Length, Transfer-Encoding, Connection, Date). 0 or -EINVAL.
int validate_answer(int status, const weir_header_t *headers, size_t num_headers, const void *body,
                    size_t body_len);

struct ResponseShape {
    bool head = false;        // the request was HEAD: framing as for the body, no body bytes
    bool close = false;       // add Connection: close
    bool keep_alive_10 = false; // HTTP/1.0 client that asked for keep-alive: say so
};

// Appends the whole response. false on allocation failure. Out is Bytes
// (instantiated in response.cc) or a connection's OutQueue (instantiated on
// the queue's side, conn/out_queue_response.cc: http1/ includes nothing of
// conn/). Any output with append/reserve_more can be added the same way
// (response_write.h).
template <class Out>
bool write_response(Out &out, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                    size_t body_len, const ResponseShape &shape);

// "name: value" CRLF for each field (answer headers, trailers, a 101's).
template <class Out> bool write_fields(Out &out, const weir_header_t *fields, size_t n);

// A streamed answer's framing (weir_stream_*): how its body is delimited.
enum class StreamFraming : uint8_t {
    None,    // HEAD, 1xx/204/304: the head only; written bytes are discarded
    Length,  // Content-Length: the host said how many bytes
    Chunked, // Transfer-Encoding: chunked (HTTP/1.1, length unknown)
    Close,   // HTTP/1.0, length unknown: delimited by the connection's close
};
StreamFraming stream_framing(int status, bool head, uint32_t version_minor, bool length_known);
// The head of a streamed answer: status line, Date, framing (length when
// Length), Connection, the caller's headers, the empty line.
template <class Out>
bool write_stream_head(Out &out, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                       StreamFraming framing, const ResponseShape &shape);
// One piece of a streamed body, framed as a chunk when Chunked (n > 0).
template <class Out> bool write_stream_piece(Out &out, StreamFraming framing, const void *p, size_t n);
// The end of a chunked body: the last chunk, the trailer fields, the empty line.
template <class Out> bool write_last_chunk(Out &out, const weir_header_t *trailers, size_t num_trailers);

// Appends weir's own answer to a request it refused or timed out (400, 408,
// 413, ...), always with Connection: close.
template <class Out> bool write_error_response(Out &out, int status);

const char *reason_phrase(int status);

// The Date header value, cached per second per thread (IMF-fixdate, 29 chars).
const char *http_date_now();

} // namespace weir::http1
