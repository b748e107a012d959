// The service manager's notification socket ($NOTIFY_SOCKET), spoken without
// libsystemd (sd_notify(3)): datagrams of "KEY=VALUE\n" lines on a Unix
// socket, descriptors riding as SCM_RIGHTS.
#pragma once

#include <cstddef>
#include <string>

namespace weir::systemd {

// The kernel's SCM_MAX_FD: descriptors one message can carry.
inline constexpr size_t kMaxFdsPerMsg = 253;

class Notify {
  public:
    Notify() = default;
    ~Notify();
    Notify(const Notify &) = delete;
    Notify &operator=(const Notify &) = delete;
    // Connects to $NOTIFY_SOCKET: 0, -ENOENT (unset or empty), -EINVAL (not
    // a path nor an '@' abstract name, or too long), or -errno.
    int open();
    bool is_open() const { return fd_ >= 0; }
    // One datagram. Returns 0 or -errno (bounded: a manager that reads
    // nothing for kSendTimeoutMs is an error, -EAGAIN).
    int send(const std::string &state, const int *fds, size_t nfds);

  private:
    int fd_ = -1;
};

} // namespace weir::systemd
