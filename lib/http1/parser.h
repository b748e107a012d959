// HTTP/1.1 request parser and chunked decoder (RFC 9112, RFC 9110), the
// internal face of the weir_http1_* functions in weir.h, with the same
// semantics; lib/conn calls these directly (no argument checks, no guard).
//
// Every function is pure: no I/O, no allocation, no hidden state (the chunked
// decoder's state is the caller's struct). Input is checked left to right and
// each answer depends only on the bytes before the point where it is given, so
// any split of the input gives the answer of the whole (split invariance).
#pragma once

#include <cstddef>
#include <cstdint>

#include "weir.h"

namespace weir::http1 {

// At most this many empty lines (CRLF) are skipped before a request line
// (RFC 9112 2.2 allows "at least one"; a bound keeps CRLF floods cheap).
inline constexpr int kMaxLeadingEmptyLines = 4;
// Limits are clamped here so a head length always fits the int return value.
inline constexpr uint32_t kMaxLineOrSection = 1u << 30;

// The defaults documented in weir.h (already resolved: full size, clamped).
extern const weir_http1_limits kDefaultLimits;
void limits_default(weir_http1_limits *l);
// lim (may be NULL, or of any size the ABI rule accepts: lib/util/sized.h)
// resolved into a full, clamped copy, zeros that would refuse every request
// made the defaults. Returns false (out holds the defaults) for a size
// outside the rule, 0 included.
bool limits_resolve(const weir_http1_limits *lim, weir_http1_limits *out);

// weir_http1_parse_request with resolved limits; req->size is not checked.
int parse_request(const char *buf, size_t len, const weir_http1_limits &lim, weir_http1_request *req,
                  weir_header_t *headers, size_t headers_cap);

// weir_http1_parse_trailers with resolved limits: returns the field count.
int parse_trailers(const char *buf, size_t len, const weir_http1_limits &lim, weir_header_t *headers,
                   size_t headers_cap);

// weir_http1_chunked_init / _decode with resolved limits.
void chunked_init(weir_http1_chunked *d, const weir_http1_limits &lim);
int chunked_decode(weir_http1_chunked *d, const char *in, size_t in_len, size_t *in_used, char *out,
                   size_t *out_len);

// ---- shared by the request and trailer parsers (fields.cc)

// Which framing-relevant fields a header section held (request heads only).
enum FieldKind : uint32_t {
    kFieldHost,
    kFieldContentLength,
    kFieldTransferEncoding,
    kFieldConnection,
    kFieldExpect,
    kFieldUpgrade,
    kFieldKinds
};
// Two words to clear per request (a larger zeroed struct cost a `rep stos`
// whose start-up showed in profiles); first[k] is meaningful only when k's
// bit is in `any`.
struct FieldSeen {
    uint32_t any = 0;   // bit k: at least one field of kind k
    uint32_t multi = 0; // bit k: more than one
    uint32_t first[kFieldKinds]; // index of the first field of each kind
    bool has(FieldKind k) const { return (any >> k) & 1u; }
    bool several(FieldKind k) const { return (multi >> k) & 1u; }
};

struct FieldLimits {
    size_t section_end; // first position no section byte may occupy
    size_t max_fields;
    int too_large; // code for a section past section_end
};

// Parses field lines from buf[pos, len) through the empty line. Returns the
// position after that line's CRLF, WEIR_E_INCOMPLETE or an error; *count
// fields are stored in headers either way. seen may be NULL.
int parse_fields(const char *buf, size_t len, size_t pos, const FieldLimits &fl, weir_header_t *headers,
                 size_t *count, FieldSeen *seen);

// uri-host [":" port] (RFC 9110 7.2), port required when need_port.
bool valid_authority(const char *p, size_t n, bool need_port);
// valid_authority(p, n, false), faster for usual Host values; lo is the
// start of the buffer p points into (loads may start anywhere from lo).
bool valid_host(const char *lo, const char *p, size_t n);

// The checks that need the whole head (Host, framing, Expect, Connection),
// filling req's host, body_kind, content_length and flags (semantics.cc).
int check_semantics(weir_http1_request *req, const weir_header_t *headers, size_t n, const FieldSeen &seen,
                    const weir_http1_limits &lim);

} // namespace weir::http1
