// The answer rules for each protocol: HTTP/1's framing decides HTTP/1's;
// an HTTP/2 stream is bounded like HTTP/1.1's chunked answer when the host
// gives no length (END_STREAM ends it and a trailing HEADERS carries the
// trailers, which HTTP/1.0's close-delimited framing could not).
#include "proto/answer_rules.h"

#include "http1/response.h"

namespace weir {

int answer_check(int status, const weir_header_t *fields, size_t n, const void *body, size_t body_len) {
    return http1::validate_answer(status, fields, n, body, body_len);
}

StreamRule stream_rule(const weir_request &req, int status, bool head, bool length_known) {
    uint32_t minor = (req.flags & WEIR_REQ_HTTP2) ? 1 : req.version_minor;
    http1::StreamFraming f = http1::stream_framing(status, head, minor, length_known);
    StreamRule r;
    r.counted = f == http1::StreamFraming::Length;
    r.trailers = f == http1::StreamFraming::Chunked;
    return r;
}

} // namespace weir
