// The PROXY protocol parser (proxy.h): v1 text, v2 binary, v2's TLVs.
#include "proxy/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace weir::proxy {

namespace {

constexpr char kV1Sig[] = "PROXY ";
constexpr size_t kV1SigLen = 6;
constexpr unsigned char kV2Sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

Result more() { return {}; }
Result error(Cause c) { return {Status::Error, c, 0}; }
Result done(size_t n) { return {Status::Done, Cause::None, n}; }

// Whether p[0, n) is a prefix of sig[0, len) (or holds it whole).
bool prefix_of(const unsigned char *p, size_t n, const void *sig, size_t len) {
    return std::memcmp(p, sig, n < len ? n : len) == 0;
}

// A v1 port: decimal, 0..65535, no sign and no leading zero (the spec's
// "0 to 65535"; a leading zero could be read as octal by someone).
bool v1_port(const char *s, size_t n, uint16_t *out) {
    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return false;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + static_cast<uint32_t>(s[i] - '0');
    }
    if (v > 65535)
        return false;
    *out = static_cast<uint16_t>(v);
    return true;
}

// A v1 address of family af (inet_pton's strict forms: dotted quad without
// leading zeros, RFC 4291 text) into ss.
bool v1_addr(int af, const char *s, size_t n, uint16_t port, sockaddr_storage *ss, socklen_t *len) {
    char buf[INET6_ADDRSTRLEN];
    if (n == 0 || n >= sizeof buf)
        return false;
    std::memcpy(buf, s, n);
    buf[n] = 0;
    std::memset(ss, 0, sizeof *ss);
    if (af == AF_INET) {
        auto *a = reinterpret_cast<sockaddr_in *>(ss);
        if (inet_pton(AF_INET, buf, &a->sin_addr) != 1)
            return false;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        *len = sizeof *a;
    } else {
        auto *a = reinterpret_cast<sockaddr_in6 *>(ss);
        if (inet_pton(AF_INET6, buf, &a->sin6_addr) != 1)
            return false;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        *len = sizeof *a;
    }
    return true;
}

// "PROXY TCP4|TCP6 src dst sport dport\r\n" or "PROXY UNKNOWN[ anything]\r\n".
Result parse_v1(const unsigned char *p, size_t n, Header *out) {
    size_t lim = n < kV1Max ? n : kV1Max;
    size_t cr = 0;
    for (size_t i = kV1SigLen; i < lim; i++) {
        if (p[i] == '\r') {
            cr = i;
            break;
        }
        if (p[i] == '\n' || p[i] == 0)
            return error(Cause::Malformed); // a line ends only with CRLF, and is text
    }
    if (!cr)
        return n >= kV1Max ? error(Cause::Oversized) : more();
    if (cr + 2 > kV1Max)
        return error(Cause::Oversized); // its LF would be the 108th byte
    if (cr + 1 >= n)
        return more();
    if (p[cr + 1] != '\n')
        return error(Cause::Malformed);
    const char *line = reinterpret_cast<const char *>(p) + kV1SigLen;
    size_t len = cr - kV1SigLen;
    Header h;
    h.version = 1;
    if (len >= 7 && std::memcmp(line, "UNKNOWN", 7) == 0 && (len == 7 || line[7] == ' ')) {
        // The balancer could not say (another family): the rest is ignored.
        h.keep_peer = true;
        *out = h;
        return done(cr + 2);
    }
    // Exactly five fields, each after exactly one space.
    const char *f[5];
    size_t fl[5];
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && line[i] != ' ')
            continue;
        if (k == 5 || i == start)
            return error(Cause::Malformed); // a sixth field, or an empty one (two spaces)
        f[k] = line + start;
        fl[k] = i - start;
        k++;
        start = i + 1;
    }
    if (k != 5)
        return error(Cause::Malformed);
    int af;
    if (fl[0] == 4 && std::memcmp(f[0], "TCP4", 4) == 0)
        af = AF_INET;
    else if (fl[0] == 4 && std::memcmp(f[0], "TCP6", 4) == 0)
        af = AF_INET6;
    else
        return error(Cause::Malformed);
    uint16_t sport, dport;
    if (!v1_port(f[3], fl[3], &sport) || !v1_port(f[4], fl[4], &dport) ||
        !v1_addr(af, f[1], fl[1], sport, &h.src, &h.src_len) || !v1_addr(af, f[2], fl[2], dport, &h.dst, &h.dst_len))
        return error(Cause::Malformed);
    *out = h;
    return done(cr + 2);
}

uint16_t be16(const unsigned char *p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// Walks [p, end): every TLV must fit, each known type must have its
// spec's shape; an SSL TLV's sub-TLVs are walked the same way.
// *crc_at: the offset from base of a CRC32C value (at most one), or 0.
bool walk_tlvs(const unsigned char *base, const unsigned char *p, const unsigned char *end, bool nested,
               size_t *crc_at) {
    Tlv t;
    const uint8_t *q = p;
    while (q < end) {
        if (!tlv_next(&q, end, &t))
            return false; // a TLV runs past the header
        switch (t.type) {
        case PP2_TYPE_CRC32C:
            if (nested || t.len != 4 || *crc_at)
                return false;
            *crc_at = static_cast<size_t>(t.value - base);
            break;
        case PP2_TYPE_UNIQUE_ID:
            if (nested || t.len > 128) // "up to 128 bytes"
                return false;
            break;
        case PP2_TYPE_SSL:
            // client (1 byte), verify (4), then sub-TLVs; never inside itself.
            if (nested || t.len < 5 || !walk_tlvs(base, t.value + 5, t.value + t.len, true, crc_at))
                return false;
            break;
        default:
            break; // ALPN, AUTHORITY, NOOP, NETNS, the SSL subtypes, custom and
                   // experimental types: any bytes (the spec gives no shape to check)
        }
    }
    return true;
}

Result parse_v2(const unsigned char *p, size_t n, size_t max_bytes, Header *out) {
    if (n < kV2Fixed)
        return more();
    unsigned ver = p[12] >> 4, cmd = p[12] & 0xF;
    if (ver != 2 || cmd > 1)
        return error(Cause::Malformed); // "must drop the connection"
    size_t total = kV2Fixed + be16(p + 14);
    if (total > max_bytes)
        return error(Cause::Oversized);
    if (n < total)
        return more();
    Header h;
    h.version = 2;
    if (cmd == 0) {
        // LOCAL: "use the real connection endpoints and discard the protocol
        // block including the family which is ignored".
        h.keep_peer = h.local_command = true;
        *out = h;
        return done(total);
    }
    unsigned fam = p[13] >> 4, proto = p[13] & 0xF;
    // weir serves streams: UDP (DGRAM) cannot be what reached it.
    if (fam > 3 || proto > 1)
        return error(Cause::Malformed);
    size_t block = fam == 1 ? 12 : fam == 2 ? 36 : fam == 3 ? kV2UnixBlock : 0;
    if (total - kV2Fixed < block)
        return error(Cause::Malformed);
    const unsigned char *a = p + kV2Fixed;
    if (fam == 1) {
        auto *s = reinterpret_cast<sockaddr_in *>(&h.src);
        auto *d = reinterpret_cast<sockaddr_in *>(&h.dst);
        s->sin_family = d->sin_family = AF_INET;
        std::memcpy(&s->sin_addr, a, 4);
        std::memcpy(&d->sin_addr, a + 4, 4);
        std::memcpy(&s->sin_port, a + 8, 2); // network order both sides
        std::memcpy(&d->sin_port, a + 10, 2);
        h.src_len = h.dst_len = sizeof(sockaddr_in);
    } else if (fam == 2) {
        auto *s = reinterpret_cast<sockaddr_in6 *>(&h.src);
        auto *d = reinterpret_cast<sockaddr_in6 *>(&h.dst);
        s->sin6_family = d->sin6_family = AF_INET6;
        std::memcpy(&s->sin6_addr, a, 16);
        std::memcpy(&d->sin6_addr, a + 16, 16);
        std::memcpy(&s->sin6_port, a + 32, 2);
        std::memcpy(&d->sin6_port, a + 34, 2);
        h.src_len = h.dst_len = sizeof(sockaddr_in6);
    } else {
        h.keep_peer = true; // AF_UNSPEC, or AF_UNIX: the socket's own peer stands
    }
    size_t crc_at = 0;
    if (!walk_tlvs(p, a + block, p + total, false, &crc_at))
        return error(Cause::Malformed);
    if (crc_at) {
        // Over the whole header with the checksum's own four bytes as zeros.
        static const unsigned char zeros[4] = {};
        uint32_t c = crc32c(0, p, crc_at);
        c = crc32c(c, zeros, 4);
        c = crc32c(c, p + crc_at + 4, total - crc_at - 4);
        uint32_t want = static_cast<uint32_t>(p[crc_at]) << 24 | static_cast<uint32_t>(p[crc_at + 1]) << 16 |
                        static_cast<uint32_t>(p[crc_at + 2]) << 8 | p[crc_at + 3];
        if (c != want)
            return error(Cause::Checksum);
        h.crc_checked = true;
    }
    h.tlv_off = kV2Fixed + block;
    h.tlv_len = total - h.tlv_off;
    *out = h;
    return done(total);
}

} // namespace

Result parse(const void *data, size_t n, size_t max_bytes, Header *out) {
    auto *p = static_cast<const unsigned char *>(data);
    if (n == 0)
        return more();
    if (max_bytes > kV2Max)
        max_bytes = kV2Max;
    if (prefix_of(p, n, kV1Sig, kV1SigLen))
        return n < kV1SigLen ? more() : parse_v1(p, n, out);
    if (prefix_of(p, n, kV2Sig, sizeof kV2Sig))
        return n < sizeof kV2Sig ? more() : parse_v2(p, n, max_bytes, out);
    return error(Cause::Missing);
}

bool tlv_next(const uint8_t **p, const uint8_t *end, Tlv *t) {
    const uint8_t *q = *p;
    if (q >= end || end - q < 3)
        return false;
    uint16_t len = be16(q + 1);
    if (static_cast<size_t>(end - q - 3) < len)
        return false;
    t->type = q[0];
    t->len = len;
    t->value = q + 3;
    *p = q + 3 + len;
    return true;
}

uint32_t crc32c(uint32_t crc, const void *data, size_t n) {
    static const auto table = [] {
        struct T {
            uint32_t v[256];
        } t{};
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1; // Castagnoli, reflected
            t.v[i] = c;
        }
        return t;
    }();
    auto *p = static_cast<const unsigned char *>(data);
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = table.v[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

const char *cause_name(Cause c) {
    switch (c) {
    case Cause::None:
        return "none";
    case Cause::Missing:
        return "missing";
    case Cause::Malformed:
        return "malformed";
    case Cause::Oversized:
        return "oversized";
    case Cause::Checksum:
        return "checksum";
    }
    return "unknown";
}

} // namespace weir::proxy
