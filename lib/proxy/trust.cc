// The trusted sources of PROXY headers (trust.h).
#include "proxy/trust.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

namespace weir::proxy {

namespace {

bool blank(char c) { return c == ' ' || c == '\t'; }

void mask(uint8_t *bytes, unsigned prefix, unsigned total_bits) {
    for (unsigned bit = prefix; bit < total_bits; bit++)
        bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
}

} // namespace

bool TrustList::parse(const char *text) {
    if (!text) {
        blocks_.clear();
        any_ = true;
        return true;
    }
    std::vector<Block> out;
    const char *p = text;
    for (;;) {
        const char *end = std::strchr(p, ',');
        const char *stop = end ? end : p + std::strlen(p);
        while (p < stop && blank(*p))
            p++;
        const char *q = stop;
        while (q > p && blank(q[-1]))
            q--;
        if (q == p)
            return false; // an empty item ("", "a,,b", a trailing comma)
        std::string item(p, q);
        Block b{};
        std::string addr = item;
        int prefix = -1;
        if (size_t slash = item.find('/'); slash != std::string::npos) {
            addr = item.substr(0, slash);
            std::string bits = item.substr(slash + 1);
            if (bits.empty() || bits.size() > 3 || (bits.size() > 1 && bits[0] == '0'))
                return false;
            prefix = 0;
            for (char c : bits) {
                if (c < '0' || c > '9')
                    return false;
                prefix = prefix * 10 + (c - '0');
            }
        }
        if (inet_pton(AF_INET, addr.c_str(), b.bytes) == 1) {
            b.v6 = 0;
            if (prefix > 32)
                return false;
            b.prefix = static_cast<uint8_t>(prefix < 0 ? 32 : prefix);
            mask(b.bytes, b.prefix, 32);
        } else if (inet_pton(AF_INET6, addr.c_str(), b.bytes) == 1) {
            b.v6 = 1;
            if (prefix > 128)
                return false;
            b.prefix = static_cast<uint8_t>(prefix < 0 ? 128 : prefix);
            mask(b.bytes, b.prefix, 128);
        } else {
            return false;
        }
        out.push_back(b);
        if (!end)
            break;
        p = end + 1;
    }
    blocks_.swap(out);
    any_ = false;
    return true;
}

bool TrustList::match(const Block &b, const uint8_t *addr, bool v6) {
    if ((b.v6 != 0) != v6)
        return false;
    unsigned full = b.prefix / 8, rest = b.prefix % 8;
    if (std::memcmp(b.bytes, addr, full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t m = static_cast<uint8_t>(0xFF00u >> rest);
    return (addr[full] & m) == b.bytes[full];
}

bool TrustList::trusts(const sockaddr *addr, socklen_t len) const {
    if (any_)
        return true;
    if (!addr)
        return false;
    uint8_t bytes[16];
    bool v6;
    if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        std::memcpy(bytes, &reinterpret_cast<const sockaddr_in *>(addr)->sin_addr, 4);
        v6 = false;
    } else if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        const in6_addr &a = reinterpret_cast<const sockaddr_in6 *>(addr)->sin6_addr;
        std::memcpy(bytes, &a, 16);
        v6 = true;
        if (IN6_IS_ADDR_V4MAPPED(&a)) {
            // A dual-stack listener's IPv4 client: its IPv4 blocks apply (and
            // an IPv6 block covering ::ffff:0:0/96 still does, below).
            for (const Block &b : blocks_)
                if (match(b, bytes + 12, false))
                    return true;
        }
    } else {
        return false;
    }
    for (const Block &b : blocks_)
        if (match(b, bytes, v6))
            return true;
    return false;
}

} // namespace weir::proxy
