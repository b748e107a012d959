#include "loop/linger.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace weir {

int read_synack_retries(const char *path) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[32];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    int err = n < 0 ? -errno : 0;
    ::close(fd);
    if (err)
        return err;
    if (n <= 0)
        return -ENODATA;
    buf[n] = 0;
    char *end = nullptr;
    long v = std::strtol(buf, &end, 10);
    if (end == buf || v < 0 || v > 255)
        return -EINVAL;
    return static_cast<int>(v);
}

int defer_accept_set(int fd, int seconds) {
    return ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds) < 0 ? -errno : 0;
}

int defer_accept_get(int fd) {
    int v = 0;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &v, &len) < 0 ? -errno : v;
}

int syncnt_set(int fd, int count) {
    return ::setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &count, sizeof count) < 0 ? -errno : 0;
}

int syncnt_get(int fd) {
    int v = 0;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &v, &len) < 0 ? -errno : v;
}

LingerHooks &linger_hooks() {
    static LingerHooks hooks;
    return hooks;
}

} // namespace weir
