// The PROXY protocol (HAProxy's proxy-protocol.txt, versions 1 and 2): the
// header a load balancer sends before the client's bytes to say whom the
// connection is really from. A pure parser: no I/O, no allocation, no state
// of its own. The caller hands it every byte received so far (from the
// connection's first byte) and learns "need more", "done, consumed N" or an
// error with its cause; the bytes past N are the application's (HTTP), never
// looked at here. Incremental by re-parsing the prefix: a header is at most
// 107 bytes (v1) or max_bytes (v2), and v2's body is only walked once whole.
//
// Threading: any thread, no shared state.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace weir::proxy {

enum class Status : uint8_t {
    More,  // a header may still follow: give more bytes (the same ones first)
    Done,  // a valid header of `consumed` bytes
    Error, // refused: see Cause
};

enum class Cause : uint8_t {
    None,
    Missing,   // the bytes begin with neither signature: no header was sent
    Malformed, // a signature, then something the spec does not allow
    Oversized, // v1 past 107 bytes without its CRLF, or v2 longer than max_bytes
    Checksum,  // v2's PP2_TYPE_CRC32C does not match the header
};

// v1 is 107 bytes at most, CRLF included (the spec's own bound).
inline constexpr size_t kV1Max = 107;
// v2: the fixed part, and the spec's largest address block (AF_UNIX).
inline constexpr size_t kV2Fixed = 16;
inline constexpr size_t kV2UnixBlock = 216;
// The largest v2 header there is (16 + a 16-bit length).
inline constexpr size_t kV2Max = kV2Fixed + 65535;

// v2 TLV types (spec §2.2) this parser validates; others are skipped.
enum : uint8_t {
    PP2_TYPE_ALPN = 0x01,
    PP2_TYPE_AUTHORITY = 0x02,
    PP2_TYPE_CRC32C = 0x03,
    PP2_TYPE_NOOP = 0x04,
    PP2_TYPE_UNIQUE_ID = 0x05,
    PP2_TYPE_SSL = 0x20,
    PP2_SUBTYPE_SSL_VERSION = 0x21,
    PP2_SUBTYPE_SSL_CN = 0x22,
    PP2_SUBTYPE_SSL_CIPHER = 0x23,
    PP2_SUBTYPE_SSL_SIG_ALG = 0x24,
    PP2_SUBTYPE_SSL_KEY_ALG = 0x25,
    PP2_TYPE_NETNS = 0x30,
};

struct Header {
    uint8_t version = 0;        // 1 or 2
    // The connection's own endpoints stand: v2 LOCAL (a health check of the
    // balancer itself), v1 UNKNOWN, v2 AF_UNSPEC, v2 AF_UNIX (a Unix path is
    // no peer address an HTTP host can use). src/dst are then unset.
    bool keep_peer = false;
    bool local_command = false; // v2 LOCAL (counted apart from UNKNOWN/UNSPEC)
    bool crc_checked = false;   // a PP2_TYPE_CRC32C was present and matched
    sockaddr_storage src{};     // the client, as the balancer saw it
    sockaddr_storage dst{};     // the address the client connected to
    socklen_t src_len = 0, dst_len = 0;
    // v2 PROXY: where its TLVs lie in the parsed bytes (all walked and valid).
    size_t tlv_off = 0, tlv_len = 0;
};

struct Result {
    Status status = Status::More;
    Cause cause = Cause::None;
    size_t consumed = 0; // Done: the header's length
};

// Parses the header at the start of p[0, n). max_bytes bounds a v2 header
// (at least kV2Fixed + kV2UnixBlock makes sense; at most kV2Max); v1 is
// bounded by kV1Max whatever it says. *out is written only on Done.
Result parse(const void *p, size_t n, size_t max_bytes, Header *out);

// One TLV: a walk over [p, end) (tlv_off/tlv_len of a Header, or an SSL
// TLV's sub-TLVs). Returns false at the end or on a TLV that does not fit
// (parse has already refused those).
struct Tlv {
    uint8_t type = 0;
    uint16_t len = 0;
    const uint8_t *value = nullptr;
};
bool tlv_next(const uint8_t **p, const uint8_t *end, Tlv *t);

// CRC-32C (Castagnoli), as PP2_TYPE_CRC32C carries it: crc32c(0, p, n) is
// the checksum of p[0, n); pass a previous result to continue.
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

// A static name for a cause ("missing", "malformed", ...).
const char *cause_name(Cause c);

} // namespace weir::proxy
