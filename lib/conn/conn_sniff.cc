// Conn, HTTP/2 detection: with h2c on, a client that knows the server speaks
// HTTP/2 opens with a fixed 24-byte preface (RFC 9113 §3.4) instead of a
// request line. It is told apart here, on the first bytes after any PROXY
// header, before the parser sees them: "PRI * HTTP/2.0" would otherwise be
// refused as an HTTP/1 request of version 2.0. The bytes stay in the buffer
// unparsed; the session (proto/session.h) lifts them into its HTTP/2 one.
#include <strings.h>

#include <cstring>

#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

namespace {
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof kPreface - 1;
} // namespace

void Conn::sniff_h2(bool h2_only) { flags_ |= kSniff | (h2_only ? kH2Only : kH2Upgrade); }

bool Conn::wants_h2() const { return (flags_ & kWantH2) != 0; }

size_t Conn::h2_upgrade() const { return (flags_ & kWantH2Up) && st_ ? st_->head_end - st_->head_start : 0; }

namespace {
bool ieq(weir_str_t s, const char *lit) {
    size_t n = std::strlen(lit);
    return s.len == n && strncasecmp(s.ptr, lit, n) == 0;
}
// Whether the comma-separated list v holds the token t (any case).
bool has_token(weir_str_t v, const char *t) {
    size_t n = std::strlen(t), i = 0;
    while (i < v.len) {
        while (i < v.len && (v.ptr[i] == ' ' || v.ptr[i] == '\t' || v.ptr[i] == ','))
            i++;
        size_t j = i;
        while (j < v.len && v.ptr[j] != ',' && v.ptr[j] != ' ' && v.ptr[j] != '\t')
            j++;
        if (j - i == n && strncasecmp(v.ptr + i, t, n) == 0)
            return true;
        i = j;
    }
    return false;
}
} // namespace

// Upgrade: h2c, exactly one HTTP2-Settings, Connection naming both, and no
// body (a body would have to be read as HTTP/1 before the switch: such a
// request is served as HTTP/1.1, which RFC 7540 §3.2 allows).
bool Conn::h2c_upgrade_asked(const weir_http1_request &h) const {
    if (!(h.flags & WEIR_REQ_UPGRADE) || h.body_kind != WEIR_BODY_NONE || h.version_minor != 1)
        return false;
    const weir_header_t *f = st_->arena + st_->arena_pos;
    bool h2c = false, conn_settings = false;
    int settings = 0;
    for (uint32_t i = 0; i < h.num_headers; i++) {
        if (ieq(f[i].name, "upgrade"))
            h2c = h2c || has_token(f[i].value, "h2c");
        else if (ieq(f[i].name, "http2-settings"))
            settings++;
        else if (ieq(f[i].name, "connection"))
            conn_settings = conn_settings || has_token(f[i].value, "http2-settings");
    }
    return h2c && settings == 1 && conn_settings;
}

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
