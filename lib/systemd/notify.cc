#include "systemd/notify.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "handover/wire.h"

namespace weir::systemd {

namespace {

// A manager that does not read its notifications for this long is hung:
// the store fails instead of blocking the exit forever.
constexpr int kSendTimeoutMs = 5000;

} // namespace

Notify::~Notify() {
    if (fd_ >= 0)
        ::close(fd_);
}

int Notify::open() {
    const char *path = std::getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return -ENOENT;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    size_t n = std::strlen(path);
    // A path, or '@' for the abstract namespace (its name is not NUL-ended).
    // systemd's vsock: form is not spoken here.
    if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path || (path[0] == '@' && n < 2))
        return -EINVAL;
    std::memcpy(sa.sun_path, path, n);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + (path[0] == '@' ? 0 : 1));
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    timeval tv{kSendTimeoutMs / 1000, (kSendTimeoutMs % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    // Connected, so a full queue at the manager blocks (bounded by the
    // timeout) instead of failing at once.
    if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), len) < 0) {
        int rc = -errno;
        ::close(fd);
        return rc;
    }
    fd_ = fd;
    return 0;
}

int Notify::send(const std::string &state, const int *fds, size_t nfds) {
    if (fd_ < 0)
        return -ENOTCONN;
    if (nfds > kMaxFdsPerMsg)
        return -EINVAL;
    iovec iov{const_cast<char *>(state.data()), state.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) unsigned char ctl[CMSG_SPACE(sizeof(int) * handover::kMaxFds)];
    handover::attach_fds(mh, ctl, fds, nfds);
    for (;;) {
        ssize_t n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL);
        if (n >= 0)
            return 0; // a datagram goes whole or not at all
        if (errno != EINTR)
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

} // namespace weir::systemd
