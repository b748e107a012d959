// The worker fuzz target's client side: reads what the worker wrote to one
// client as HTTP/1.1 responses (RFC 9112), framed as a client must frame
// them, independently of lib/http1's response writer. Strict: a byte that
// does not fit a response is a finding.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

namespace worker_fuzz {

struct WireResponse {
    int status = 0;
    bool head_only = false;  // no body by its status or the request's method
    bool until_close = false; // neither length nor chunked: the body runs to the close
    bool has_length = false;
    bool chunked = false;
    bool connection_close = false;
    std::string body; // decoded
};

enum class Wire { Complete, Truncated, Malformed };

namespace wire_detail {

inline bool ieq(const std::string &a, const char *b) {
    size_t n = std::char_traits<char>::length(b);
    if (a.size() != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// A line ending in CRLF from pos: Truncated when the CRLF has not come yet.
inline Wire line(const std::string &s, size_t &pos, std::string &out) {
    size_t e = s.find("\r\n", pos);
    if (e == std::string::npos)
        return s.find('\n', pos) == std::string::npos ? Wire::Truncated : Wire::Malformed;
    out = s.substr(pos, e - pos);
    pos = e + 2;
    return out.find('\n') == std::string::npos && out.find('\r') == std::string::npos ? Wire::Complete
                                                                                       : Wire::Malformed;
}

} // namespace wire_detail

// One response from s at pos; on Complete pos moves past it. head_request:
// the request was HEAD (a body the head announces is not sent).
inline Wire parse_response(const std::string &s, size_t &pos, bool head_request, WireResponse &r) {
    using namespace wire_detail;
    r = WireResponse{};
    size_t p = pos;
    std::string l;
    if (Wire w = line(s, p, l); w != Wire::Complete)
        return w;
    // status-line = HTTP-version SP status-code SP [ reason-phrase ]
    if (l.size() < 13 || l.compare(0, 7, "HTTP/1.") != 0 || (l[7] != '1' && l[7] != '0') || l[8] != ' ' ||
        l[12] != ' ')
        return Wire::Malformed;
    for (int i = 9; i < 12; i++)
        if (l[static_cast<size_t>(i)] < '0' || l[static_cast<size_t>(i)] > '9')
            return Wire::Malformed;
    r.status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
    if (r.status < 100)
        return Wire::Malformed;
    uint64_t length = 0;
    for (;;) {
        if (Wire w = line(s, p, l); w != Wire::Complete)
            return w;
        if (l.empty())
            break;
        size_t colon = l.find(':');
        if (colon == std::string::npos || colon == 0 || l[colon - 1] == ' ')
            return Wire::Malformed;
        std::string name = l.substr(0, colon);
        size_t v = l.find_first_not_of(" \t", colon + 1);
        std::string value = v == std::string::npos ? std::string() : l.substr(v);
        if (ieq(name, "content-length")) {
            if (r.has_length || value.empty() || value.size() > 19 ||
                value.find_first_not_of("0123456789") != std::string::npos)
                return Wire::Malformed; // one, and digits only: weir writes it once
            r.has_length = true;
            length = std::stoull(value);
        } else if (ieq(name, "transfer-encoding")) {
            if (!ieq(value, "chunked") || r.chunked)
                return Wire::Malformed;
            r.chunked = true;
        } else if (ieq(name, "connection") && ieq(value, "close")) {
            r.connection_close = true;
        }
    }
    if (r.has_length && r.chunked)
        return Wire::Malformed;
    r.head_only = r.status < 200 || r.status == 204 || r.status == 304 || head_request;
    if (r.status < 200 && (r.has_length || r.chunked))
        return Wire::Malformed; // 1xx: no framing (RFC 9110 15.2)
    if (r.head_only) {
        pos = p;
        return Wire::Complete;
    }
    if (r.has_length) {
        if (s.size() - p < length) {
            r.body = s.substr(p);
            return Wire::Truncated;
        }
        r.body = s.substr(p, length);
        pos = p + length;
        return Wire::Complete;
    }
    if (r.chunked) {
        for (;;) {
            if (Wire w = line(s, p, l); w != Wire::Complete)
                return w;
            size_t semi = l.find(';');
            std::string hex = l.substr(0, semi);
            if (hex.empty() || hex.size() > 15 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
                return Wire::Malformed;
            uint64_t n = std::stoull(hex, nullptr, 16);
            if (n == 0)
                break;
            if (s.size() - p < n + 2) {
                r.body += s.substr(p, std::min<size_t>(n, s.size() - p));
                return Wire::Truncated;
            }
            if (s.compare(p + n, 2, "\r\n") != 0)
                return Wire::Malformed;
            r.body.append(s, p, n);
            p += n + 2;
        }
        for (;;) { // trailer section
            if (Wire w = line(s, p, l); w != Wire::Complete)
                return w;
            if (l.empty())
                break;
            if (l.find(':') == std::string::npos)
                return Wire::Malformed;
        }
        pos = p;
        return Wire::Complete;
    }
    // Close-delimited (an HTTP/1.0 client's stream of unknown length): the
    // rest is the body, and nothing may follow it.
    r.until_close = true;
    r.body = s.substr(p);
    pos = s.size();
    return Wire::Complete;
}

} // namespace worker_fuzz
