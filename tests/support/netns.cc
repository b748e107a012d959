#include "netns.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace testnet {

std::string enter_private_net() {
    if (::unshare(CLONE_NEWNET) < 0)
        return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    std::string why;
    if (s < 0 || ::ioctl(s, SIOCGIFFLAGS, &ifr) < 0 || (ifr.ifr_flags |= IFF_UP, ::ioctl(s, SIOCSIFFLAGS, &ifr) < 0))
        why = std::string("cannot bring up lo in the new namespace: ") + std::strerror(errno);
    if (s >= 0)
        ::close(s);
    return why;
}

bool write_sysctl(const char *name, const char *value) {
    std::string path = std::string("/proc/sys/") + name;
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t n = std::strlen(value);
    bool ok = ::write(fd, value, n) == static_cast<ssize_t>(n);
    ::close(fd);
    return ok;
}

long long tcpext(const char *name) {
    std::ifstream f("/proc/net/netstat");
    std::string names, values;
    while (std::getline(f, names) && std::getline(f, values)) {
        if (names.rfind("TcpExt:", 0) != 0)
            continue;
        std::istringstream n(names), v(values);
        std::string a, b;
        while (n >> a && v >> b)
            if (a == name)
                return std::stoll(b);
    }
    return -1;
}

} // namespace testnet
