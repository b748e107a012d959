// A connection's peer address, held in 32 bytes instead of a 128-byte
// sockaddr_storage: every slot carries one, and idle keep-alive connections
// cost little more than their slot (docs/reliability.md "Memory after a
// burst": 100 of a slot's 560 bytes were this address's unused tail). IPv4
// and IPv6 addresses (every TCP peer, every PROXY source weir records) sit
// inline; a longer one (a named AF_UNIX peer) goes to the heap, owned here.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <new>

namespace weir {

class PeerAddr {
  public:
    static constexpr socklen_t kInline = sizeof(sockaddr_in6); // the longest TCP peer

    PeerAddr() = default;
    PeerAddr(const PeerAddr &) = delete;
    PeerAddr &operator=(const PeerAddr &) = delete;
    ~PeerAddr() { clear(); }

    // Holds the first n bytes of ss (n 0: no address). false when a long
    // address found no memory: then none is held, as for an address the
    // kernel could not give.
    bool set(const sockaddr_storage &ss, socklen_t n) {
        clear();
        if (n > sizeof(sockaddr_storage))
            n = sizeof(sockaddr_storage);
        if (n <= kInline) {
            std::memcpy(raw_, &ss, n);
            len_ = n;
            return true;
        }
        auto *big = new (std::nothrow) sockaddr_storage;
        if (!big)
            return false;
        std::memcpy(big, &ss, n);
        std::memcpy(raw_, &big, sizeof big);
        len_ = n;
        return true;
    }
    void get(sockaddr_storage *ss, socklen_t *n) const {
        std::memset(ss, 0, sizeof *ss);
        std::memcpy(ss, data(), len_);
        *n = len_;
    }
    const sockaddr *sa() const { return static_cast<const sockaddr *>(data()); }
    socklen_t len() const { return len_; }
    void clear() {
        if (len_ > kInline)
            delete big();
        len_ = 0;
    }

  private:
    sockaddr_storage *big() const {
        sockaddr_storage *p;
        std::memcpy(&p, raw_, sizeof p);
        return p;
    }
    const void *data() const { return len_ > kInline ? static_cast<const void *>(big()) : raw_; }

    alignas(8) unsigned char raw_[kInline]{};
    socklen_t len_ = 0;
};
static_assert(sizeof(PeerAddr) == 32, "a slot's peer address stays 32 bytes");

} // namespace weir
