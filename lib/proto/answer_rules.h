// What the C API checks of an answer on the caller's thread, before anything
// is queued or handed to the session (lib/loop/worker_answers.cc and its
// siblings): the rules are the answer's, not the wire's, so a foreign
// thread's call is refused at once and an owning thread's the same way,
// whichever protocol will carry the answer. Stateless: any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weir.h"

namespace weir {

// RFC 9110's rules for an answer's head: status 200..999, field names are
// tokens, values hold no CR, LF or NUL, and none of the fields the session
// writes itself (Content-Length, Transfer-Encoding, Connection, Date).
// 0 or -EINVAL.
int answer_check(int status, const weir_header_t *fields, size_t n, const void *body, size_t body_len);
// The same rules for fields alone (trailers, an interim or a 101's).
inline int fields_check(const weir_header_t *fields, size_t n) { return answer_check(200, fields, n, nullptr, 0); }

// How a streamed answer's body is bounded, decided when its head is given,
// from the request as it stands (any thread may read it while the exchange
// is out): whether the writes are counted against the length the host gave
// (a short or long write refused), and whether its end may carry trailers.
struct StreamRule {
    bool counted = false;
    bool trailers = false;
};
StreamRule stream_rule(const weir_request &req, int status, bool head, bool length_known);

} // namespace weir
