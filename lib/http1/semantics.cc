// What a complete head means: Host (RFC 9112 3.2), framing (RFC 9112 6),
// Expect (RFC 9110 10.1.1) and Connection (RFC 9112 9.3, RFC 9110 7.6.1).
#include "http1/chars.h"
#include "http1/parser.h"

namespace weir::http1 {

namespace {

inline bool named(const weir_header_t &h, const char *lower, size_t n) {
    return h.name.len == n && eq_lower(h.name.ptr, lower, n);
}

// Calls f(ptr, len) on each comma-separated element of every field of kind
// k, OWS trimmed, empty elements included; stops at f's first nonzero. The
// walk starts at the first such field and, usually, ends there too.
template <typename F>
int for_each_element(const weir_header_t *h, size_t n, const FieldSeen &seen, FieldKind k, const char *lower,
                     size_t ln, F f) {
    if (!seen.has(k))
        return 0;
    // With one field of the kind the walk ends after it; with several it
    // goes on to the last field, taking those with the kind's name.
    const size_t stop = seen.several(k) ? n : seen.first[k] + 1;
    for (size_t i = seen.first[k]; i < stop; i++) {
        if (i != seen.first[k] && !named(h[i], lower, ln))
            continue;
        const char *p = h[i].value.ptr, *end = p + h[i].value.len;
        for (;;) {
            const char *e = p;
            while (e < end && *e != ',')
                e++;
            const char *a = p, *b = e;
            while (a < b && is_ows(static_cast<unsigned char>(*a)))
                a++;
            while (b > a && is_ows(static_cast<unsigned char>(b[-1])))
                b--;
            if (int rc = f(a, static_cast<size_t>(b - a)))
                return rc;
            if (e == end)
                break;
            p = e + 1;
        }
    }
    return 0;
}

// Content-Length: every element of every field must be the same decimal
// number (RFC 9110 8.6 lets a recipient take "5, 5" as 5).
int content_length(const weir_header_t *h, size_t n, const FieldSeen &seen, uint64_t *out) {
    bool have = false;
    uint64_t value = 0;
    int rc = for_each_element(h, n, seen, kFieldContentLength, "content-length", 14, [&](const char *p, size_t len) -> int {
        if (len == 0)
            return WEIR_E_BAD_CONTENT_LENGTH;
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
            if (!is(static_cast<unsigned char>(p[i]), kDigit))
                return WEIR_E_BAD_CONTENT_LENGTH;
            uint64_t d = static_cast<uint64_t>(p[i] - '0');
            if (v > (UINT64_MAX - d) / 10)
                return WEIR_E_BAD_CONTENT_LENGTH;
            v = v * 10 + d;
        }
        if (have && v != value)
            return WEIR_E_BAD_CONTENT_LENGTH;
        have = true;
        value = v;
        return 0;
    });
    *out = value;
    return rc;
}

// Transfer-Encoding: framing first (chunked once and last, else 400 as RFC
// 9112 6.3 requires), then any other coding is one we do not implement (501).
int transfer_encoding(const weir_header_t *h, size_t n, const FieldSeen &seen) {
    int chunked = 0;
    bool last_chunked = false, other = false;
    int rc = for_each_element(h, n, seen, kFieldTransferEncoding, "transfer-encoding", 17, [&](const char *p, size_t len) -> int {
        if (len == 0)
            return 0; // empty list elements are ignored (RFC 9110 5.6.1)
        size_t i = 0;
        while (i < len && is(static_cast<unsigned char>(p[i]), kTchar))
            i++;
        if (i == 0)
            return WEIR_E_BAD_TRANSFER_ENCODING;
        const bool is_chunked = i == 7 && eq_lower(p, "chunked", 7);
        if (i < len) {
            // transfer-parameters: chunked has none; others are refused anyway.
            size_t j = i;
            while (j < len && is_ows(static_cast<unsigned char>(p[j])))
                j++;
            if (is_chunked || j == len || p[j] != ';')
                return WEIR_E_BAD_TRANSFER_ENCODING;
        }
        chunked += is_chunked;
        other |= !is_chunked;
        last_chunked = is_chunked;
        return 0;
    });
    if (rc)
        return rc;
    if (chunked != 1 || !last_chunked)
        return WEIR_E_BAD_TRANSFER_ENCODING;
    return other ? WEIR_E_UNKNOWN_TRANSFER_CODING : 0;
}

} // namespace

int check_semantics(weir_http1_request *req, const weir_header_t *h, size_t n, const FieldSeen &seen,
                    const weir_http1_limits &lim) {
    const bool v11 = req->version_minor == 1;
    auto has = [&](FieldKind k) { return seen.has(k); };

    if (seen.several(kFieldHost))
        return WEIR_E_DUPLICATE_HOST;
    if (!seen.has(kFieldHost)) {
        if (v11)
            return WEIR_E_MISSING_HOST;
        req->host = {req->target.ptr, 0};
    } else {
        const weir_str_t &v = h[seen.first[kFieldHost]].value;
        if (v.len != 0 && !valid_host(req->method.ptr, v.ptr, v.len))
            return WEIR_E_BAD_HOST;
        req->host = v;
    }
    // RFC 9112 3.2.2: with an absolute-form target the origin server MUST
    // ignore Host and use the target's authority, so a handler that routes
    // on host cannot be told one name by the request line and another by
    // the field. The field is still required and checked above (3.2).
    if (req->target_form == WEIR_TARGET_ABSOLUTE) [[unlikely]] {
        const char *t = req->target.ptr, *end = t + req->target.len;
        const char *a = t + (t[4] == ':' ? 7 : 8), *q = a; // "http://" or "https://"
        while (q < end && *q != '/' && *q != '?')
            q++;
        req->host = {a, static_cast<size_t>(q - a)};
    }

    if (has(kFieldTransferEncoding)) {
        if (has(kFieldContentLength))
            return WEIR_E_CL_AND_TE;
        if (!v11)
            return WEIR_E_BAD_TRANSFER_ENCODING; // RFC 9112 6.1: 1.0 framing cannot be trusted
        if (int rc = transfer_encoding(h, n, seen))
            return rc;
        req->body_kind = WEIR_BODY_CHUNKED;
    } else if (has(kFieldContentLength)) {
        uint64_t cl;
        // One field of 1..19 digits (no list, no overflow possible): the
        // answer of content_length() without its element walk.
        const weir_str_t &v = h[seen.first[kFieldContentLength]].value;
        if (!seen.several(kFieldContentLength) && v.len - 1 < 19 && run_of(v.ptr, v.len, kDigit) == v.len) {
            cl = 0;
            for (size_t i = 0; i < v.len; i++)
                cl = cl * 10 + static_cast<uint64_t>(v.ptr[i] - '0');
        } else if (int rc = content_length(h, n, seen, &cl)) {
            return rc;
        }
        if (cl > lim.max_body)
            return WEIR_E_BODY_TOO_LARGE;
        req->body_kind = WEIR_BODY_LENGTH;
        req->content_length = cl;
    }

    if (has(kFieldExpect)) {
        bool cont = false;
        int rc = for_each_element(h, n, seen, kFieldExpect, "expect", 6, [&](const char *p, size_t len) -> int {
            if (len == 0)
                return 0;
            if (len == 12 && eq_lower(p, "100-continue", 12)) {
                cont = true;
                return 0;
            }
            return WEIR_E_EXPECTATION_FAILED;
        });
        if (rc)
            return rc;
        // RFC 9110 10.1.1: a 100-continue in an HTTP/1.0 request is ignored.
        if (cont && v11)
            req->flags |= WEIR_REQ_EXPECT_CONTINUE;
    }

    bool close = false, keep_alive = false, upgrade = false;
    if (has(kFieldConnection)) {
        for_each_element(h, n, seen, kFieldConnection, "connection", 10, [&](const char *p, size_t len) -> int {
            if (len == 5 && eq_lower(p, "close", 5))
                close = true;
            else if (len == 10 && eq_lower(p, "keep-alive", 10))
                keep_alive = true;
            else if (len == 7 && eq_lower(p, "upgrade", 7))
                upgrade = true;
            return 0;
        });
    }
    // CONNECT (the only request in authority-form) never keeps the
    // connection: what a client sends after its head is tunnel data (RFC
    // 9110 9.3.6), which weir does not carry, and a front end that tunnels
    // it would pass those bytes on unread; parsed here as requests they
    // would be requests no front end looked at.
    if ((v11 ? !close : (keep_alive && !close)) && req->target_form != WEIR_TARGET_AUTHORITY)
        req->flags |= WEIR_REQ_KEEP_ALIVE;
    if (upgrade && has(kFieldUpgrade))
        req->flags |= WEIR_REQ_UPGRADE;
    return 0;
}

} // namespace weir::http1
