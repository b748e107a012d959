#include "loop/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weir {

int resolve_numeric(const char *host, uint32_t port, sockaddr_storage *ss, socklen_t *len) {
    if (!host || port > 65535)
        return -EINVAL;
    std::memset(ss, 0, sizeof *ss);
    auto *v4 = reinterpret_cast<sockaddr_in *>(ss);
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(port));
        *len = sizeof(sockaddr_in);
        return 0;
    }
    auto *v6 = reinterpret_cast<sockaddr_in6 *>(ss);
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(port));
        *len = sizeof(sockaddr_in6);
        return 0;
    }
    return -EINVAL;
}

int listener_open(const sockaddr_storage &addr, socklen_t len, const ListenOptions &opt) {
    int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    int err = 0;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        err = -errno;
    if (!err && addr.ss_family == AF_INET6 && ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
        err = -errno;
    if (!err && ::bind(fd, reinterpret_cast<const sockaddr *>(&addr), len) < 0)
        err = -errno;
    if (!err && opt.defer_accept) {
        // Seconds to wait for data before accept(2) sees the connection; the
        // kernel rounds it to its retransmission schedule.
        int secs = 1;
        if (::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs) < 0)
            err = -errno;
    }
    if (!err && ::listen(fd, static_cast<int>(opt.backlog)) < 0)
        err = -errno;
    if (err) {
        ::close(fd);
        return err;
    }
    return fd;
}

void Listener::close_now() {
    if (fd >= 0)
        ::close(fd);
    fd = -1;
    state = ListenerState::Closed;
}

} // namespace weir
