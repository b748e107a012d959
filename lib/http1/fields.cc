// Field lines (RFC 9112 5, RFC 9110 5.5), shared by request heads and trailer
// sections, and the authority syntax shared by Host and the request-target.
#include <arpa/inet.h>

#include <cstring>

#include "http1/chars.h"
#include "http1/parser.h"
#include "http1/scan.h"

namespace weir::http1 {

namespace {

inline void note(FieldKind k, uint32_t index, FieldSeen *seen) {
    if (seen->count[k]++ == 0)
        seen->first[k] = index;
}

inline void classify(const char *name, size_t n, uint32_t index, FieldSeen *seen) {
    switch (n) {
    case 4:
        if (eq_lower(name, "host", 4))
            note(kFieldHost, index, seen);
        break;
    case 6:
        if (eq_lower(name, "expect", 6))
            note(kFieldExpect, index, seen);
        break;
    case 7:
        if (eq_lower(name, "upgrade", 7))
            note(kFieldUpgrade, index, seen);
        break;
    case 10:
        if (eq_lower(name, "connection", 10))
            note(kFieldConnection, index, seen);
        break;
    case 14:
        if (eq_lower(name, "content-length", 14))
            note(kFieldContentLength, index, seen);
        break;
    case 17:
        if (eq_lower(name, "transfer-encoding", 17))
            note(kFieldTransferEncoding, index, seen);
        break;
    default:
        break;
    }
}

} // namespace

// Checks run in byte order, and running out of bytes is answered at the
// byte that was needed: past fl.section_end it is the section's size error
// (no later byte can fix that), before it WEIR_E_INCOMPLETE.
int parse_fields(const char *buf, size_t len, size_t pos, const FieldLimits &fl, weir_header_t *headers,
                 size_t *count, FieldSeen *seen) {
    const size_t end = len < fl.section_end ? len : fl.section_end;
    const int out_code = end == fl.section_end ? fl.too_large : WEIR_E_INCOMPLETE;
    const char *const e = buf + end;
    const char *p = buf + pos;
    size_t n = 0;
    int rc;
    for (;;) {
        if (p == e) {
            rc = out_code;
            break;
        }
        unsigned char c = static_cast<unsigned char>(*p);
        if (c == '\r') {
            if (++p == e) {
                rc = out_code;
                break;
            }
            rc = *p == '\n' ? static_cast<int>(p + 1 - buf) : WEIR_E_BAD_LINE_ENDING;
            break;
        }
        if (c == '\n') {
            rc = WEIR_E_BAD_LINE_ENDING;
            break;
        }
        if (is_ows(c)) {
            rc = WEIR_E_OBS_FOLD;
            break;
        }
        if (n == fl.max_fields) {
            rc = WEIR_E_TOO_MANY_HEADERS;
            break;
        }
        const char *name = p;
        // Unrolled: names are short, the loop bound costs as much as the lookup.
        while (e - p >= 4 && is(static_cast<unsigned char>(p[0]), kTchar) &&
               is(static_cast<unsigned char>(p[1]), kTchar) && is(static_cast<unsigned char>(p[2]), kTchar) &&
               is(static_cast<unsigned char>(p[3]), kTchar))
            p += 4;
        while (p < e && is(static_cast<unsigned char>(*p), kTchar))
            p++;
        if (p == e) {
            rc = out_code;
            break;
        }
        if (*p != ':') {
            rc = (p != name && is_ows(static_cast<unsigned char>(*p))) ? WEIR_E_WS_BEFORE_COLON
                                                                       : WEIR_E_BAD_HEADER_NAME;
            break;
        }
        if (p == name) {
            rc = WEIR_E_BAD_HEADER_NAME;
            break;
        }
        const size_t name_len = static_cast<size_t>(p - name);
        p++;
        while (p < e && is_ows(static_cast<unsigned char>(*p)))
            p++;
        const char *value = p;
        p = scan_value(p, e);
        if (p == e) {
            rc = out_code;
            break;
        }
        if (*p != '\r') {
            rc = *p == '\n' ? WEIR_E_BAD_LINE_ENDING : WEIR_E_BAD_HEADER_VALUE;
            break;
        }
        if (p + 1 == e) {
            rc = out_code;
            break;
        }
        if (p[1] != '\n') {
            rc = WEIR_E_BAD_LINE_ENDING;
            break;
        }
        const char *vend = p;
        while (vend > value && is_ows(static_cast<unsigned char>(vend[-1])))
            vend--;
        headers[n].name = {name, name_len};
        headers[n].value = {value, static_cast<size_t>(vend - value)};
        if (seen)
            classify(name, name_len, static_cast<uint32_t>(n), seen);
        n++;
        p += 2;
    }
    *count = n;
    return rc;
}

namespace {

bool valid_ipv6_literal(const char *p, size_t n) {
    char tmp[INET6_ADDRSTRLEN + 1];
    if (n == 0 || n >= sizeof tmp)
        return false;
    // inet_pton also takes forms RFC 3986 does not (none known), and refuses
    // zone ids, which RFC 3986 has no syntax for either.
    for (size_t i = 0; i < n; i++)
        if (!is(static_cast<unsigned char>(p[i]), kHex) && p[i] != ':' && p[i] != '.')
            return false;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    unsigned char addr[16];
    return inet_pton(AF_INET6, tmp, addr) == 1;
}

} // namespace

// host = IP-literal / IPv4address / reg-name (IPv4 is a case of reg-name's
// syntax); IPvFuture is refused. An empty host is refused for http(s)
// (RFC 9110 4.2.1); an empty port after ':' is RFC 3986 syntax and accepted
// unless a port is required.
bool valid_authority(const char *p, size_t n, bool need_port) {
    size_t i = 0;
    if (n > 0 && p[0] == '[') {
        const char *close = static_cast<const char *>(memchr(p, ']', n));
        if (!close || !valid_ipv6_literal(p + 1, static_cast<size_t>(close - p - 1)))
            return false;
        i = static_cast<size_t>(close - p) + 1;
    } else {
        while (n - i >= 4 && is(static_cast<unsigned char>(p[i]), kRegName) &&
               is(static_cast<unsigned char>(p[i + 1]), kRegName) && is(static_cast<unsigned char>(p[i + 2]), kRegName) &&
               is(static_cast<unsigned char>(p[i + 3]), kRegName))
            i += 4;
        while (i < n) {
            unsigned char c = static_cast<unsigned char>(p[i]);
            if (is(c, kRegName)) {
                i++;
            } else if (c == '%' && i + 2 < n && is(static_cast<unsigned char>(p[i + 1]), kHex) &&
                       is(static_cast<unsigned char>(p[i + 2]), kHex)) {
                i += 3;
            } else {
                break;
            }
        }
        if (i == 0)
            return false;
    }
    if (i == n)
        return !need_port;
    if (p[i] != ':')
        return false;
    i++;
    size_t digits = n - i;
    if (digits == 0)
        return !need_port;
    if (digits > 5)
        return false;
    uint32_t port = 0;
    for (; i < n; i++) {
        if (!is(static_cast<unsigned char>(p[i]), kDigit))
            return false;
        port = port * 10 + static_cast<uint32_t>(p[i] - '0');
    }
    return port <= 65535;
}

} // namespace weir::http1
