// H2Session, the upgrade from HTTP/1.1 (RFC 7540 §3.2, as curl --http2 and
// other clients still send it): the first request asked `Upgrade: h2c` with
// its HTTP2-Settings; the Conn left its head unread and the session was made
// HTTP/2 with it (proto/session.cc). Here it is answered 101, the client's
// settings are applied as if sent in a SETTINGS frame, and the request
// becomes stream 1 (half-closed: it had no body), answered through HTTP/2
// like any other; the client's preface follows the 101 on the wire.
#include <strings.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "h2/h2_internal.h"
#include "h2/h2_session.h"
#include "h2/h2_stream.h"
#include "util/h2c_settings.h"
#include "http1/parser.h"

namespace weir {

namespace {

bool ieq(weir_str_t s, const char *lit) {
    size_t n = std::strlen(lit);
    return s.len == n && strncasecmp(s.ptr, lit, n) == 0;
}

// Fields that belong to the HTTP/1.1 hop, not to the request (RFC 9113 §8.2.2).
bool hop_field(weir_str_t n) {
    return ieq(n, "connection") || ieq(n, "upgrade") || ieq(n, "http2-settings") || ieq(n, "keep-alive") ||
           ieq(n, "proxy-connection") || ieq(n, "transfer-encoding") || ieq(n, "host") || ieq(n, "te");
}

constexpr char k101[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

} // namespace

bool H2Session::upgrade_h1(const char *head, size_t len) {
    if (!ng_ || dead_)
        return false;
    try {
        std::vector<weir_header_t> hv(cs_.limits.max_headers ? cs_.limits.max_headers : 100);
        weir_http1_request h{};
        h.size = sizeof h;
        int rc = http1::parse_request(head, len, cs_.limits, &h, hv.data(), hv.size());
        if (rc != static_cast<int>(len))
            return false; // the Conn parsed the same bytes: not reached
        // The Conn chose the upgrade only for a value that decodes whole
        // (conn_sniff.cc); what nghttp2 refuses of its settings is left.
        std::string settings;
        for (uint32_t i = 0; i < h.num_headers; i++)
            if (ieq(hv[i].name, "http2-settings") && !h2c_settings_decode(hv[i].value, &settings))
                settings.clear(), settings.push_back('!'); // not reached: refused below
        if (!out_.append(k101, sizeof k101 - 1)) {
            abort(WEIR_CLOSE_RESOURCE);
            return false;
        }
        bool head_req = h.method.len == 4 && std::memcmp(h.method.ptr, "HEAD", 4) == 0;
        if (settings.size() % 6 != 0 ||
            nghttp2_session_upgrade2(ng_, reinterpret_cast<const uint8_t *>(settings.data()), settings.size(),
                                     head_req, nullptr) != 0) {
            // Answered 101 already (the switch is the server's word): the
            // bad settings are a connection error of the new protocol.
            h2c_.malformed++;
            finish(WEIR_CLOSE_H2_PROTOCOL, NGHTTP2_PROTOCOL_ERROR);
            return true;
        }
        got_bytes_ = true;
        h2c_.upgrades++;
        unexpected_id(1); // stream 1 is opened: remembered as the peer's newest
        H2Stream *st = new_stream(1);
        if (!st) {
            abort(WEIR_CLOSE_RESOURCE);
            return false;
        }
        nghttp2_session_set_stream_user_data(ng_, 1, st);
        h2c_.streams++;
        stream_opened();
        std::string name;
        field(st, ":method", 7, h.method.ptr, h.method.len);
        field(st, ":scheme", 7, "http", 4);
        field(st, ":path", 5, h.target.ptr, h.target.len);
        if (h.host.len)
            field(st, ":authority", 10, h.host.ptr, h.host.len);
        for (uint32_t i = 0; i < h.num_headers; i++) {
            if (hop_field(hv[i].name))
                continue;
            name.assign(hv[i].name.ptr, hv[i].name.len);
            for (char &c : name)
                if (c >= 'A' && c <= 'Z')
                    c = static_cast<char>(c - 'A' + 'a');
            field(st, name.data(), name.size(), hv[i].value.ptr, hv[i].value.len);
        }
        request_done(st, true);
    } catch (const std::bad_alloc &) {
        abort(WEIR_CLOSE_RESOURCE);
        return false;
    }
    pump();
    return true;
}

} // namespace weir
