// Which sources may send a PROXY header: a list of CIDR blocks
// (weir_config.proxy_trusted), parsed once at engine creation and matched
// against each accepted connection's own peer. Pure, no I/O.
//
// Threading: parse on one thread; a parsed list is read-only and may be
// matched from any thread.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <vector>

namespace weir::proxy {

class TrustList {
  public:
    // "10.0.0.0/8, 192.168.1.7, ::1, fd00::/8": comma-separated IPv4 or IPv6
    // addresses, each with an optional /prefix (none: the one address),
    // blanks around items ignored; host bits past the prefix are ignored.
    // nullptr: every source is trusted. Returns false for anything else
    // (an empty list, an empty item, a bad address or prefix); the list is
    // then unchanged. May throw std::bad_alloc (the engine's create maps it).
    bool parse(const char *text);
    // Whether a connection from addr may send the header. An IPv4-mapped
    // IPv6 peer (::ffff:a.b.c.d, a dual-stack listener) matches IPv4 blocks.
    // A peer that is not IP (a Unix socket) is trusted only when every
    // source is.
    bool trusts(const sockaddr *addr, socklen_t len) const;
    bool any() const { return any_; }
    size_t size() const { return blocks_.size(); }

  private:
    struct Block {
        uint8_t v6;        // 0: IPv4 (bytes[0..4)), 1: IPv6
        uint8_t prefix;    // bits
        uint8_t bytes[16]; // masked to the prefix
    };
    static bool match(const Block &b, const uint8_t *addr, bool v6);
    std::vector<Block> blocks_;
    bool any_ = true;
};

} // namespace weir::proxy
