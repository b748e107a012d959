// Conn, HTTP/2 detection: with h2c on, a client that knows the server speaks
// HTTP/2 opens with a fixed 24-byte preface (RFC 9113 §3.4) instead of a
// request line. It is told apart here, on the first bytes after any PROXY
// header, before the parser sees them: "PRI * HTTP/2.0" would otherwise be
// refused as an HTTP/1 request of version 2.0. The bytes stay in the buffer
// unparsed; the session (proto/session.h) lifts them into its HTTP/2 one.
#include <strings.h>

#include <cstring>

#include "conn/conn_state.h"
#include "util/h2c_settings.h"

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
// Whether the comma-separated list v holds the token t (any case); *others
// counts its other tokens.
bool has_token(weir_str_t v, const char *t, int *others = nullptr) {
    size_t n = std::strlen(t), i = 0;
    bool found = false;
    while (i < v.len) {
        while (i < v.len && (v.ptr[i] == ' ' || v.ptr[i] == '\t' || v.ptr[i] == ','))
            i++;
        size_t j = i;
        while (j < v.len && v.ptr[j] != ',' && v.ptr[j] != ' ' && v.ptr[j] != '\t')
            j++;
        if (j - i == n && strncasecmp(v.ptr + i, t, n) == 0)
            found = true;
        else if (j > i && others)
            (*others)++;
        i = j;
    }
    return found;
}
} // namespace

// Upgrade naming h2c and nothing else, exactly one HTTP2-Settings whose value
// decodes, Connection naming HTTP2-Settings, and no body; anything else is
// served as HTTP/1.1, which RFC 7540 §3.2 allows:
// - a body would have to be read as HTTP/1 before the switch;
// - an Upgrade listing other protocols too (websocket, h2c) is the host's to
//   choose among (weir_upgrade): weir taking h2c would decide for it, and a
//   front that checked the request for one protocol would see another spoken;
// - HTTP2-Settings that is not base64url of whole SETTINGS entries: answered
//   101 first, it could only end in GOAWAY, while as HTTP/1.1 the request is
//   still served.
bool Conn::h2c_upgrade_asked(const weir_http1_request &h) const {
    if (!(h.flags & WEIR_REQ_UPGRADE) || h.body_kind != WEIR_BODY_NONE || h.version_minor != 1)
        return false;
    const weir_header_t *f = st_->arena + st_->arena_pos;
    bool h2c = false, conn_settings = false, settings_ok = false;
    int settings = 0, others = 0;
    for (uint32_t i = 0; i < h.num_headers; i++) {
        if (ieq(f[i].name, "upgrade")) {
            h2c = has_token(f[i].value, "h2c", &others) || h2c;
        } else if (ieq(f[i].name, "http2-settings")) {
            settings++;
            settings_ok = h2c_settings_decode(f[i].value, nullptr);
        } else if (ieq(f[i].name, "connection")) {
            conn_settings = conn_settings || has_token(f[i].value, "http2-settings");
        }
    }
    return h2c && others == 0 && settings == 1 && settings_ok && conn_settings;
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
