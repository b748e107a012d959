#include "loop/sock_ops.h"

#include <sys/socket.h>

#include <cerrno>

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

void fin_and_drain(int fd) {
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 64; i++)
        if (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) <= 0)
            break;
}

} // namespace weir
