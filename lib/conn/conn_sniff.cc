// Conn, HTTP/2 detection: with h2c on, a client that knows the server speaks
// HTTP/2 opens with a fixed 24-byte preface (RFC 9113 §3.4) instead of a
// request line. It is told apart here, on the first bytes after any PROXY
// header, before the parser sees them: "PRI * HTTP/2.0" would otherwise be
// refused as an HTTP/1 request of version 2.0. The bytes stay in the buffer
// unparsed; the session (proto/session.h) lifts them into its HTTP/2 one.
#include <cstring>

#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

namespace {
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof kPreface - 1;
} // namespace

void Conn::sniff_h2(bool h2_only) { flags_ |= kSniff | (h2_only ? kH2Only : 0u); }

bool Conn::wants_h2() const { return (flags_ & kWantH2) != 0; }

bool Conn::sniff_step() {
    if (flags_ & kWantH2)
        return false;
    State &s = *st_;
    size_t have = s.end - s.parse_pos;
    if (have == 0)
        return false;
    if (flags_ & kH2Only) {
        flags_ = (flags_ & ~static_cast<uint32_t>(kSniff | kH2Only)) | kWantH2;
        return false;
    }
    size_t k = have < kPrefaceLen ? have : kPrefaceLen;
    if (std::memcmp(s.buf + s.parse_pos, kPreface, k) != 0) {
        flags_ &= ~static_cast<uint32_t>(kSniff); // HTTP/1 from here on
        return true;
    }
    if (k < kPrefaceLen)
        return false; // so far the preface: wait for the rest, parse nothing
    flags_ = (flags_ & ~static_cast<uint32_t>(kSniff)) | kWantH2;
    return false;
}

} // namespace weir
