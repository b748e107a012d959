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
    const uint32_t bit = 1u << k;
    if (seen->any & bit) {
        seen->multi |= bit;
    } else {
        seen->any |= bit;
        seen->first[k] = index;
    }
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

#ifdef WEIR_SSE2
// Bit i set when byte i of b is not a tchar (RFC 9110 5.6.2): below 0x21 or
// above 0x7E (obs-text reads as negative), or one of "(),/:;<=>?@[\]{}.
inline unsigned nontchar16(__m128i b) {
    auto eq = [](__m128i x, char c) { return _mm_cmpeq_epi8(x, _mm_set1_epi8(c)); };
    // x - lo <= span, unsigned
    auto in = [](__m128i x, char lo, char span) {
        __m128i d = _mm_sub_epi8(x, _mm_set1_epi8(lo));
        return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span)), d);
    };
    __m128i bad = _mm_or_si128(_mm_cmpgt_epi8(_mm_set1_epi8(0x21), b), eq(b, 0x7F));
    bad = _mm_or_si128(bad, _mm_or_si128(eq(b, '"'), eq(_mm_and_si128(b, _mm_set1_epi8(static_cast<char>(0xFE))), '(')));
    bad = _mm_or_si128(bad, _mm_or_si128(eq(b, ','), eq(b, '/')));
    bad = _mm_or_si128(bad, _mm_or_si128(in(b, ':', 6), in(b, '[', 2)));
    bad = _mm_or_si128(bad, _mm_or_si128(eq(b, '{'), eq(b, '}')));
    return static_cast<unsigned>(_mm_movemask_epi8(bad));
}
#endif

// First byte in [p, e) that is not a tchar (or e); lo as for value_end.
// With a vector level, 16 bytes a step: a name of up to 15 bytes ends in one
// step with no branch on its length. (A table loop over the first eight bytes
// was faster on one-field requests, where its exit branch is predicted, and
// slower wherever names vary in length: the exit was then mispredicted about
// once per field; see docs/parser.md.)
inline const char *name_end(const ScanOps &ops, const char *lo, const char *p, const char *e) {
    auto tchar = [](const char *x) { return is(static_cast<unsigned char>(*x), kTchar); };
#ifdef WEIR_SSE2
    if (ops.level != kScanScalar) {
        while (e - p >= 16) {
            unsigned m = nontchar16(load16(p));
            if (m)
                return p + __builtin_ctz(m);
            p += 16;
        }
        if (e - lo >= 16) {
            unsigned m = nontchar16(load16(e - 16)) >> (16 - (e - p));
            return m ? p + __builtin_ctz(m) : e;
        }
    }
#else
    (void)ops;
    (void)lo;
#endif
    // Unrolled: names are short, the loop bound costs as much as the lookup.
    while (e - p >= 4 && tchar(p) && tchar(p + 1) && tchar(p + 2) && tchar(p + 3))
        p += 4;
    while (p < e && tchar(p))
        p++;
    return p;
}

} // namespace

// Checks run in byte order, and running out of bytes is answered at the
// byte that was needed: past fl.section_end it is the section's size error
// (no later byte can fix that), before it WEIR_E_INCOMPLETE.
//
// One pass per line: the name scan also meets the line's first byte (LF and
// obs-fold whitespace end an empty name); the value scan starts right after the colon (OWS is value bytes), and the OWS
// at both ends is trimmed inside the bytes already scanned.
int parse_fields(const char *buf, size_t len, size_t pos, const FieldLimits &fl, weir_header_t *headers,
                 size_t *count, FieldSeen *seen) {
    const size_t end = len < fl.section_end ? len : fl.section_end;
    const int out_code = end == fl.section_end ? fl.too_large : WEIR_E_INCOMPLETE;
    const char *const e = buf + end;
    const char *p = buf + pos;
    const ScanOps &ops = scan_ops();
    size_t n = 0;
    int rc;
    for (;;) {
        if (p == e) [[unlikely]] {
            rc = out_code;
            break;
        }
        if (*p == '\r') {
            // The empty line that ends the section.
            if (++p == e) {
                rc = out_code;
                break;
            }
            rc = *p == '\n' ? static_cast<int>(p + 1 - buf) : WEIR_E_BAD_LINE_ENDING;
            break;
        }
        const char *name = p;
        p = name_end(ops, buf, p, e);
        if (p == name) [[unlikely]] {
            // Not a field line: an error at its first byte.
            unsigned char c = static_cast<unsigned char>(*p);
            if (c == '\n') {
                rc = WEIR_E_BAD_LINE_ENDING;
                break;
            }
            if (is_ows(c)) {
                rc = WEIR_E_OBS_FOLD;
                break;
            }
            rc = n == fl.max_fields ? WEIR_E_TOO_MANY_HEADERS : WEIR_E_BAD_HEADER_NAME;
            break;
        }
        // The line began with a tchar: a field line, the first byte tells.
        if (n == fl.max_fields) [[unlikely]] {
            rc = WEIR_E_TOO_MANY_HEADERS;
            break;
        }
        if (p == e) [[unlikely]] {
            rc = out_code;
            break;
        }
        if (*p != ':') [[unlikely]] {
            rc = is_ows(static_cast<unsigned char>(*p)) ? WEIR_E_WS_BEFORE_COLON : WEIR_E_BAD_HEADER_NAME;
            break;
        }
        const size_t name_len = static_cast<size_t>(p - name);
        const char *value = p + 1;
        p = value_end(ops, buf, value, e);
        if (e - p < 2 || p[0] != '\r' || p[1] != '\n') [[unlikely]] {
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
            rc = WEIR_E_BAD_LINE_ENDING;
            break;
        }
        const char *vend = p;
        while (value < vend && is_ows(static_cast<unsigned char>(*value)))
            value++;
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
        i = run_of(p, n, kRegName);
        while (i + 2 < n && p[i] == '%' && is(static_cast<unsigned char>(p[i + 1]), kHex) &&
               is(static_cast<unsigned char>(p[i + 2]), kHex)) {
            i += 3;
            i += run_of(p + i, n - i, kRegName);
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

#ifdef WEIR_SSE2
namespace {
// Bit i set when byte i of b is an ASCII letter, digit, '.' or '-' (the bytes
// of nearly every Host), and in *colon when it is ':'.
inline unsigned host_plain16(__m128i b, unsigned *colon, unsigned *digit) {
    auto in = [](__m128i x, char lo, char span) {
        __m128i d = _mm_sub_epi8(x, _mm_set1_epi8(lo));
        return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span)), d);
    };
    __m128i dig = in(b, '0', 9);
    __m128i alpha = in(_mm_or_si128(b, _mm_set1_epi8(0x20)), 'a', 25);
    __m128i dd = _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('.')), _mm_cmpeq_epi8(b, _mm_set1_epi8('-')));
    __m128i col = _mm_cmpeq_epi8(b, _mm_set1_epi8(':'));
    *colon = static_cast<unsigned>(_mm_movemask_epi8(col));
    *digit = static_cast<unsigned>(_mm_movemask_epi8(dig));
    return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(dig, alpha), _mm_or_si128(dd, col))));
}
} // namespace
#endif

// valid_authority(p, n, false) for a Host value. The usual value (letters,
// digits, '.', '-', at most one ':' then at most five digits, 1..32 bytes) is
// answered from one or two loads that end at the value's end; they start at
// or after lo, the start of the buffer. Anything else takes valid_authority,
// so the answer is the same for every input.
bool valid_host(const char *lo, const char *p, size_t n) {
#ifdef WEIR_SSE2
    if (n - 1 < 32 && static_cast<size_t>(p - lo) + n >= 32) {
        const char *const e = p + n;
        unsigned c0, d0, c1, d1;
        const unsigned ok0 = host_plain16(load16(e - 32), &c0, &d0);
        const unsigned ok1 = host_plain16(load16(e - 16), &c1, &d1);
        const unsigned sh = static_cast<unsigned>(32 - n);
        const uint32_t ok = static_cast<uint32_t>((ok0 | ok1 << 16) >> sh);
        const uint32_t colon = static_cast<uint32_t>((c0 | c1 << 16) >> sh);
        const uint32_t digit = static_cast<uint32_t>((d0 | d1 << 16) >> sh);
        const uint32_t all = n == 32 ? 0xFFFFFFFFu : (1u << n) - 1;
        if (ok == all) {
            if (colon == 0)
                return true;
            const unsigned at = static_cast<unsigned>(__builtin_ctz(colon));
            const size_t port_len = n - at - 1;
            // One colon, a non-empty host before it, only digits after it
            // (64-bit shifts: the colon may be the 32nd byte).
            const bool digits_after = (uint64_t{digit} >> (at + 1)) == (uint64_t{all} >> (at + 1));
            if ((colon & (colon - 1)) == 0 && at > 0 && port_len <= 5 && digits_after) {
                uint32_t port = 0;
                for (size_t i = at + 1; i < n; i++)
                    port = port * 10 + static_cast<uint32_t>(p[i] - '0');
                return port <= 65535;
            }
        }
    }
#else
    (void)lo;
#endif
    return valid_authority(p, n, false);
}

} // namespace weir::http1
