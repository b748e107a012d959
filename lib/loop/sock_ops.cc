#include "loop/sock_ops.h"

#include <sys/socket.h>

#include <cerrno>

#include "weir.h"

namespace weir {

Take take_for_errno(int e) {
    if (e == EAGAIN || e == EWOULDBLOCK)
        return Take::Empty;
    bool resource = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
    return resource ? Take::Resource : Take::Other;
}

Take accept_now(int listen_fd, Accepted &out) {
    out.peer_len = sizeof out.peer;
    int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr *>(&out.peer), &out.peer_len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        out.fd = fd;
        return Take::Took;
    }
    out.error = errno;
    return take_for_errno(out.error);
}

bool fin_and_drain(int fd, int max_reads, size_t *got) {
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < max_reads; i++) {
        ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0)
            return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
        if (got)
            *got += static_cast<size_t>(n);
    }
    return false;
}

uint32_t close_for_errno(int e) {
    return (e == ECONNRESET || e == EPIPE || e == ECONNABORTED) ? WEIR_CLOSE_PEER : WEIR_CLOSE_IO_ERROR;
}

} // namespace weir
