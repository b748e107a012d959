// Incremental chunked-body decoder (RFC 9112 7.1). One byte at a time through
// the size line and the trailer section, bulk copies for chunk data, so any
// split of the raw bytes walks the same states and gives the same answer.
//
// The trailer section is validated with the rules of parse_fields, check for
// check in the same order, so weir_http1_parse_trailers accepts exactly what
// this accepted.
#include <cstring>

#include "http1/chars.h"
#include "http1/parser.h"

namespace weir::http1 {

namespace {

enum State : uint32_t {
    kSize,         // hex digits; count_ = digits so far
    kAfterSize,    // right after the digits: CR, BWS or ';'
    kBwsSemi,      // BWS before ';'
    kBwsName,      // after ';': BWS, then an extension name
    kExtName,      // in a name
    kAfterName,    // BWS after a name: '=' or ';'
    kBwsValue,     // after '=': BWS, then token or quoted-string
    kExtToken,     // in a token value
    kQuoted,       // in a quoted-string value
    kQuotedEscape, // after a backslash in it
    kAfterQuoted,  // after the closing quote
    kSizeLf,       // CR of the size line seen
    kData,         // chunk_left_ data bytes to go
    kDataCr,       // CRLF after the data
    kDataLf,
    kTrLineStart, // trailer section: start of a line
    kTrName,
    kTrValue,
    kTrValueLf, // CR of a field line seen
    kTrEndLf,   // CR of the final empty line seen
    kDone,
    kError, // code in the upper bits, answered again on every call
};

inline uint32_t error_state(int rc) { return kError | (static_cast<uint32_t>(-rc - WEIR_E_BASE) << 8); }
inline int error_code(uint32_t st) { return -(static_cast<int>(st >> 8) + WEIR_E_BASE); }

inline int hexval(unsigned char c) {
    if (c <= '9')
        return c - '0';
    return (c | 0x20) - 'a' + 10;
}

// qdtext / quoted-pair bytes (RFC 9110 5.6.4).
inline bool is_qdtext(unsigned char c) { return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c != 0x5C && c != 0x7F); }
inline bool is_qpair(unsigned char c) { return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7F); }

} // namespace

void chunked_init(weir_http1_chunked *d, const weir_http1_limits &lim) {
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->state_ = kSize;
    d->max_body_ = lim.max_body;
    d->max_chunk_ext_ = lim.max_chunk_ext;
    d->max_trailer_bytes_ = lim.max_trailer_bytes;
    d->max_trailers_ = lim.max_trailers;
}

int chunked_decode(weir_http1_chunked *d, const char *in, size_t in_len, size_t *in_used, char *out,
                   size_t *out_len) {
    uint32_t st = d->state_;
    uint64_t left = d->chunk_left_;
    uint32_t count = d->count_;
    const uint64_t max_body = d->max_body_;
    const uint32_t max_chunk_ext = d->max_chunk_ext_, max_trailer_bytes = d->max_trailer_bytes_;
    const uint32_t max_trailers = d->max_trailers_;
    size_t i = 0, o = 0;
    int rc = WEIR_E_INCOMPLETE;

    while (rc == WEIR_E_INCOMPLETE) {
        if (st == kDone) {
            rc = 0;
            break;
        }
        if (st >= kError) {
            rc = error_code(st);
            break;
        }
        if (i == in_len)
            break;
        if (st == kData) {
            size_t n = in_len - i;
            if (n > left)
                n = static_cast<size_t>(left);
            memmove(out + o, in + i, n);
            i += n;
            o += n;
            left -= n;
            d->body_len += n;
            if (left == 0)
                st = kDataCr;
            continue;
        }
        const unsigned char c = static_cast<unsigned char>(in[i]);
        const uint32_t before = st;
        int err = 0;
        if (st >= kTrLineStart && d->trailer_len == max_trailer_bytes) {
            err = WEIR_E_TRAILERS_TOO_LARGE;
        } else if (st >= kAfterSize && st <= kAfterQuoted && c != '\r') {
            // Extension bytes, counted before their syntax is judged.
            if (count == max_chunk_ext)
                err = WEIR_E_CHUNK_EXT_TOO_LONG;
            else
                count++;
        }
        if (!err) {
            switch (st) {
            case kSize:
                if (is(c, kHex)) {
                    if (count == 16)
                        err = WEIR_E_BAD_CHUNK; // 16 hex digits always fit in 64 bits
                    else {
                        left = (left << 4) | static_cast<uint64_t>(hexval(c));
                        count++;
                    }
                    break;
                }
                if (count == 0)
                    err = WEIR_E_BAD_CHUNK;
                else if (left > max_body - d->body_len)
                    err = WEIR_E_BODY_TOO_LARGE; // before a byte of it is read
                else {
                    // Re-read this byte as the first one after the size.
                    st = kAfterSize;
                    count = 0;
                    continue;
                }
                break;
            case kAfterSize:
            case kBwsSemi:
                if (c == '\r' && st == kAfterSize)
                    st = kSizeLf;
                else if (is_ows(c))
                    st = kBwsSemi;
                else if (c == ';')
                    st = kBwsName;
                else
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kBwsName:
                if (is(c, kTchar))
                    st = kExtName;
                else if (!is_ows(c))
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kExtName:
            case kAfterName:
                if (st == kExtName && is(c, kTchar))
                    break;
                if (c == '\r' && st == kExtName)
                    st = kSizeLf;
                else if (is_ows(c))
                    st = kAfterName;
                else if (c == '=')
                    st = kBwsValue;
                else if (c == ';')
                    st = kBwsName;
                else
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kBwsValue:
                if (c == '"')
                    st = kQuoted;
                else if (is(c, kTchar))
                    st = kExtToken;
                else if (!is_ows(c))
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kExtToken:
            case kAfterQuoted:
                if (st == kExtToken && is(c, kTchar))
                    break;
                if (c == '\r')
                    st = kSizeLf;
                else if (c == ';')
                    st = kBwsName;
                else if (is_ows(c))
                    st = kBwsSemi;
                else
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kQuoted:
                if (c == '"')
                    st = kAfterQuoted;
                else if (c == '\\')
                    st = kQuotedEscape;
                else if (!is_qdtext(c))
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kQuotedEscape:
                if (is_qpair(c))
                    st = kQuoted;
                else
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kSizeLf:
                if (c != '\n') {
                    err = WEIR_E_BAD_CHUNK;
                    break;
                }
                count = 0;
                if (left == 0) {
                    st = kTrLineStart;
                    d->trailer_off = d->raw_len + i + 1;
                    d->trailer_len = 0;
                    d->num_trailers = 0;
                } else {
                    st = kData;
                }
                break;
            case kDataCr:
                if (c == '\r')
                    st = kDataLf;
                else
                    err = WEIR_E_BAD_CHUNK;
                break;
            case kDataLf:
                if (c == '\n') {
                    st = kSize;
                    count = 0;
                } else
                    err = WEIR_E_BAD_CHUNK;
                break;
            // The trailer section, in parse_fields' order of checks.
            case kTrLineStart:
                if (c == '\r')
                    st = kTrEndLf;
                else if (c == '\n')
                    err = WEIR_E_BAD_LINE_ENDING;
                else if (is_ows(c))
                    err = WEIR_E_OBS_FOLD;
                else if (d->num_trailers == max_trailers)
                    err = WEIR_E_TOO_MANY_HEADERS;
                else if (is(c, kTchar))
                    st = kTrName;
                else
                    err = WEIR_E_BAD_HEADER_NAME;
                break;
            case kTrName:
                if (c == ':')
                    st = kTrValue;
                else if (!is(c, kTchar))
                    err = is_ows(c) ? WEIR_E_WS_BEFORE_COLON : WEIR_E_BAD_HEADER_NAME;
                break;
            case kTrValue:
                if (c == '\r')
                    st = kTrValueLf;
                else if (!is(c, kValue))
                    err = c == '\n' ? WEIR_E_BAD_LINE_ENDING : WEIR_E_BAD_HEADER_VALUE;
                break;
            case kTrValueLf:
                if (c == '\n') {
                    d->num_trailers++;
                    st = kTrLineStart;
                } else
                    err = WEIR_E_BAD_LINE_ENDING;
                break;
            case kTrEndLf:
                if (c == '\n')
                    st = kDone;
                else
                    err = WEIR_E_BAD_LINE_ENDING;
                break;
            default:
                err = WEIR_E_BAD_CHUNK;
                break;
            }
        }
        if (err) {
            st = error_state(err);
            continue;
        }
        if (before >= kTrLineStart)
            d->trailer_len++;
        i++;
    }
    d->state_ = st;
    d->chunk_left_ = left;
    d->count_ = count;
    d->raw_len += i;
    *in_used = i;
    *out_len = o;
    return rc;
}

} // namespace weir::http1
