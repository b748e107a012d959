// The request line (RFC 9112 3) and the head as a whole; limits.
#include <cstring>

#include "http1/chars.h"
#include "http1/parser.h"
#include "http1/scan.h"
#include "util/sized.h"

namespace weir::http1 {

namespace {
constexpr weir_http1_limits make_defaults() {
    weir_http1_limits l{};
    l.size = sizeof l;
    l.max_request_line = 8192;
    l.max_header_bytes = 16384;
    l.max_headers = 100;
    l.max_chunk_ext = 256;
    l.max_trailer_bytes = 4096;
    l.max_trailers = 32;
    l.max_body = 1u << 20;
    return l;
}
} // namespace

const weir_http1_limits kDefaultLimits = make_defaults();

void limits_default(weir_http1_limits *l) { *l = kDefaultLimits; }

bool limits_resolve(const weir_http1_limits *lim, weir_http1_limits *out) {
    limits_default(out);
    if (!lim)
        return true;
    // An older, shorter struct keeps the defaults past its size; size 0 (a
    // struct nobody initialised) is refused, never read as "the defaults".
    weir_http1_limits l = kDefaultLimits;
    if (!sized::copy_in(lim, &l))
        return false;
    // A zero that would refuse every request is the default instead (weir.h).
    if (l.max_request_line == 0)
        l.max_request_line = kDefaultLimits.max_request_line;
    if (l.max_header_bytes == 0)
        l.max_header_bytes = kDefaultLimits.max_header_bytes;
    if (l.max_headers == 0)
        l.max_headers = kDefaultLimits.max_headers;
    if (l.max_trailer_bytes == 0)
        l.max_trailer_bytes = kDefaultLimits.max_trailer_bytes;
    l.max_request_line = l.max_request_line < kMaxLineOrSection ? l.max_request_line : kMaxLineOrSection;
    l.max_header_bytes = l.max_header_bytes < kMaxLineOrSection ? l.max_header_bytes : kMaxLineOrSection;
    l.max_trailer_bytes = l.max_trailer_bytes < kMaxLineOrSection ? l.max_trailer_bytes : kMaxLineOrSection;
    *out = l;
    return true;
}

namespace {

const char kSlash[] = "/";

// Fills target_form, path and query; 0 or WEIR_E_BAD_TARGET. qm is the first
// '?' of the target (t + n when none), found by the target scan.
int classify_target(const weir_str_t &method, const char *t, size_t n, const char *qm, weir_http1_request *req) {
    const char *const end = t + n;
    const char *path;
    if (t[0] == '/') [[likely]] {
        // CONNECT takes the authority-form and nothing else (RFC 9112 3.2.3).
        if (method.len == 7 && memcmp(method.ptr, "CONNECT", 7) == 0) [[unlikely]]
            return WEIR_E_BAD_TARGET;
        req->target_form = WEIR_TARGET_ORIGIN;
        path = t;
    } else {
        req->path = {t, 0};
        req->query = {t, 0};
        if (method.len == 7 && memcmp(method.ptr, "CONNECT", 7) == 0) {
            if (!valid_authority(t, n, true))
                return WEIR_E_BAD_TARGET;
            req->target_form = WEIR_TARGET_AUTHORITY;
            return 0;
        }
        if (t[0] == '*') {
            if (n != 1 || !(method.len == 7 && memcmp(method.ptr, "OPTIONS", 7) == 0))
                return WEIR_E_BAD_TARGET;
            req->target_form = WEIR_TARGET_ASTERISK;
            return 0;
        }
        // absolute-form; only http and https have an authority we can serve.
        size_t skip;
        if (n >= 7 && eq_lower(t, "http://", 7))
            skip = 7;
        else if (n >= 8 && eq_lower(t, "https://", 8))
            skip = 8;
        else
            return WEIR_E_BAD_TARGET;
        const char *a = t + skip, *q = a;
        while (q < end && *q != '/' && *q != '?')
            q++;
        if (!valid_authority(a, static_cast<size_t>(q - a), false))
            return WEIR_E_BAD_TARGET;
        req->target_form = WEIR_TARGET_ABSOLUTE;
        if (q == end) {
            req->path = {kSlash, 1};
            req->query = {end, 0};
            return 0;
        }
        if (*q == '?') {
            req->path = {kSlash, 1};
            req->query = {q + 1, static_cast<size_t>(end - q - 1)};
            return 0;
        }
        // The authority holds no '?' (the loop above stops at one), so the
        // target's first '?' is the path's.
        path = q;
    }
    if (qm < end) {
        req->path = {path, static_cast<size_t>(qm - path)};
        req->query = {qm + 1, static_cast<size_t>(end - qm - 1)};
    } else {
        req->path = {path, static_cast<size_t>(end - path)};
        req->query = {end, 0};
    }
    return 0;
}

// The rest of the head once its request line is known good; v is where
// the version starts.
inline __attribute__((always_inline)) int parse_head(const char *buf, size_t len, const weir_http1_limits &lim,
                                                    weir_http1_request *req, weir_header_t *headers,
                                                    size_t headers_cap, weir_str_t method, weir_str_t target,
                                                    size_t v) {
    const size_t hs = v + 10;
    FieldLimits fl;
    fl.section_end = hs + lim.max_header_bytes;
    fl.max_fields = headers_cap < lim.max_headers ? headers_cap : lim.max_headers;
    fl.too_large = WEIR_E_HEADERS_TOO_LARGE;
    FieldSeen seen;
    size_t n = 0;
    int rc = parse_fields(buf, len, hs, fl, headers, &n, &seen);
    req->num_headers = static_cast<uint32_t>(n);
    if (rc < 0)
        return rc;

    req->version_minor = static_cast<uint32_t>(buf[v + 7] - '0');
    req->method = method;
    req->target = target;
    req->headers = headers;
    req->flags = 0;
    req->body_kind = WEIR_BODY_NONE;
    req->content_length = 0;
    int sem = check_semantics(req, headers, n, seen, lim);
    return sem < 0 ? sem : rc;
}

} // namespace

// The request line is read inside a window of max_request_line bytes; the
// byte just past it may only be the CR that ends the line, anything else is
// 414 the moment it is seen. Each check happens at its byte, in order.
int parse_request(const char *buf, size_t len, const weir_http1_limits &lim, weir_http1_request *req,
                  weir_header_t *headers, size_t headers_cap) {
    req->num_headers = 0;
    size_t s = 0;
    for (int i = 0;; i++) {
        if (s == len)
            return WEIR_E_INCOMPLETE;
        if (buf[s] != '\r')
            break;
        if (i == kMaxLeadingEmptyLines)
            return WEIR_E_BAD_REQUEST_LINE;
        if (s + 1 == len)
            return WEIR_E_INCOMPLETE;
        if (buf[s + 1] != '\n')
            return WEIR_E_BAD_LINE_ENDING;
        s += 2;
    }
    const size_t lim_pos = s + lim.max_request_line;
    const size_t wend = len < lim_pos ? len : lim_pos;
    // 0 when buf[q] may be read as part of the line.
    auto need = [&](size_t q) -> int {
        if (q >= len)
            return WEIR_E_INCOMPLETE;
        if (q >= lim_pos && buf[q] != '\r')
            return WEIR_E_REQUEST_LINE_TOO_LONG;
        return 0;
    };
    int rc;

    size_t q;
    // Fast path for the two common methods, when the whole "GET " or "POST "
    // is there and inside the window: the same answer as the loop below.
    const bool room = len - s >= 5 && lim.max_request_line >= 5;
    if (room && memcmp(buf + s, "GET ", 4) == 0) {
        q = s + 3;
    } else if (room && memcmp(buf + s, "POST ", 5) == 0) {
        q = s + 4;
    } else {
        q = s;
        while (q < wend && is(static_cast<unsigned char>(buf[q]), kTchar))
            q++;
        if ((rc = need(q)))
            return rc;
        if (buf[q] != ' ')
            return buf[q] == '\n'   ? WEIR_E_BAD_LINE_ENDING
                   : buf[q] == '\r' ? WEIR_E_BAD_REQUEST_LINE
                                    : WEIR_E_BAD_METHOD;
        if (q == s)
            return WEIR_E_BAD_REQUEST_LINE;
    }
    const weir_str_t method{buf + s, q - s};

    const size_t t = q + 1;
    const char *qm;
    q = static_cast<size_t>(target_end(scan_ops(), buf + t, buf + wend, &qm) - buf);
    if ((rc = need(q)))
        return rc;
    if (buf[q] != ' ' || q == t) {
        if (buf[q] == '\n')
            return WEIR_E_BAD_LINE_ENDING;
        return (buf[q] == '\r' || q == t) ? WEIR_E_BAD_REQUEST_LINE : WEIR_E_BAD_TARGET;
    }
    if ((rc = classify_target(method, buf + t, q - t, qm, req)))
        return rc;
    const weir_str_t target{buf + t, q - t};

    const size_t v = q + 1;
    // Fast path: the whole "HTTP/1.x\r\n" is there and inside the window.
    if (v + 10 <= len && v + 8 <= lim_pos) {
        uint64_t w;
        uint16_t crlf;
        memcpy(&w, buf + v, 8);
        memcpy(&crlf, buf + v + 8, 2);
        uint64_t http1, crlf_le;
        memcpy(&http1, "HTTP/1.0", 8);
        memcpy(&crlf_le, "\r\n\0\0\0\0\0\0", 8);
        // bit 56 is the low bit of the minor digit: '0' or '1' both match.
        if ((w & ~(uint64_t{1} << 56)) == http1 && crlf == static_cast<uint16_t>(crlf_le))
            return parse_head(buf, len, lim, req, headers, headers_cap, method, target, v);
    }
    static const char kPattern[] = "HTTP/0.0";
    for (size_t i = 0; i < 8; i++) {
        if ((rc = need(v + i)))
            return rc;
        unsigned char c = static_cast<unsigned char>(buf[v + i]);
        bool ok = (i == 5 || i == 7) ? is(c, kDigit) : c == static_cast<unsigned char>(kPattern[i]);
        if (!ok)
            return WEIR_E_BAD_VERSION;
    }
    if ((rc = need(v + 8)))
        return rc;
    if (buf[v + 8] != '\r')
        return buf[v + 8] == '\n' ? WEIR_E_BAD_LINE_ENDING : WEIR_E_BAD_VERSION;
    if (v + 9 >= len)
        return WEIR_E_INCOMPLETE;
    if (buf[v + 9] != '\n')
        return WEIR_E_BAD_LINE_ENDING;
    if (buf[v + 5] != '1' || buf[v + 7] > '1')
        return WEIR_E_VERSION_UNSUPPORTED;

    return parse_head(buf, len, lim, req, headers, headers_cap, method, target, v);
}

int parse_trailers(const char *buf, size_t len, const weir_http1_limits &lim, weir_header_t *headers,
                   size_t headers_cap) {
    FieldLimits fl;
    fl.section_end = lim.max_trailer_bytes;
    fl.max_fields = headers_cap < lim.max_trailers ? headers_cap : lim.max_trailers;
    fl.too_large = WEIR_E_TRAILERS_TOO_LARGE;
    size_t n = 0;
    int rc = parse_fields(buf, len, 0, fl, headers, &n, nullptr);
    // Bytes after the final CRLF, if the caller passed any, are not ours.
    return rc < 0 ? rc : static_cast<int>(n);
}

} // namespace weir::http1
