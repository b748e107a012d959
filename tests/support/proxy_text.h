// PROXY protocol headers written out for tests (the unit tests of
// lib/proxy/ and the integration tests): v2 built field by field, so a test
// says what it sends.
#pragma once

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "proxy/proxy.h"

namespace proxytext {

inline const std::string kV2Sig("\r\n\r\n\0\r\nQUIT\n", 12);

inline std::string tlv(uint8_t type, const std::string &value) {
    std::string t;
    t += static_cast<char>(type);
    t += static_cast<char>(value.size() >> 8);
    t += static_cast<char>(value.size() & 0xFF);
    return t + value;
}

// "ADDR:PORT" ("[ADDR]:PORT" for IPv6), "" for another family: how the
// tests name a peer weir reports.
inline std::string addr_text(const sockaddr_storage &ss) {
    char a[INET6_ADDRSTRLEN] = "";
    if (ss.ss_family == AF_INET) {
        auto *s = reinterpret_cast<const sockaddr_in *>(&ss);
        inet_ntop(AF_INET, &s->sin_addr, a, sizeof a);
        return std::string(a) + ":" + std::to_string(ntohs(s->sin_port));
    }
    if (ss.ss_family == AF_INET6) {
        auto *s = reinterpret_cast<const sockaddr_in6 *>(&ss);
        inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof a);
        return "[" + std::string(a) + "]:" + std::to_string(ntohs(s->sin6_port));
    }
    return "";
}

inline std::string be16(uint16_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xFF)}; }

// A v2 header: ver_cmd (0x21 PROXY, 0x20 LOCAL), fam (0x11 TCP4, 0x21 TCP6,
// 0x00 UNSPEC, 0x31 UNIX), the address block and TLVs as given.
inline std::string v2(uint8_t ver_cmd, uint8_t fam, const std::string &block, const std::string &tlvs = "") {
    std::string h = kV2Sig;
    h += static_cast<char>(ver_cmd);
    h += static_cast<char>(fam);
    h += be16(static_cast<uint16_t>(block.size() + tlvs.size()));
    return h + block + tlvs;
}

inline std::string v4_block(const char *src, const char *dst, uint16_t sport, uint16_t dport) {
    unsigned char a[8];
    inet_pton(AF_INET, src, a);
    inet_pton(AF_INET, dst, a + 4);
    return std::string(reinterpret_cast<char *>(a), 8) + be16(sport) + be16(dport);
}

inline std::string v6_block(const char *src, const char *dst, uint16_t sport, uint16_t dport) {
    unsigned char a[32];
    inet_pton(AF_INET6, src, a);
    inet_pton(AF_INET6, dst, a + 16);
    return std::string(reinterpret_cast<char *>(a), 32) + be16(sport) + be16(dport);
}

// Appends a PP2_TYPE_CRC32C TLV to a v2 header (its length grows by 7) and
// fills it as the spec says: over the whole header, the value as zeros.
inline std::string with_crc(std::string h) {
    h += tlv(weir::proxy::PP2_TYPE_CRC32C, std::string(4, '\0'));
    uint16_t len = static_cast<uint16_t>(h.size() - 16);
    h[14] = static_cast<char>(len >> 8);
    h[15] = static_cast<char>(len & 0xFF);
    uint32_t c = weir::proxy::crc32c(0, h.data(), h.size());
    for (int i = 0; i < 4; i++)
        h[h.size() - 4 + i] = static_cast<char>(c >> (24 - 8 * i));
    return h;
}

} // namespace proxytext
