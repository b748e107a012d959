// Where a connection of the mixed load stands (mixed_diag.h).
#include "mixed_diag.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mixed {

// The state of the server's end of the connection whose client end is fd
// (/proc/net/tcp of this namespace): SYN_RECV means the kernel still
// hides it from accept (TCP_DEFER_ACCEPT); ESTABLISHED with no inode that
// it waits in the accept queue; with one, that the engine accepted it.
std::string server_side(int fd) {
    sockaddr_in me{}, peer{};
    socklen_t len = sizeof me;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&me), &len);
    len = sizeof peer;
    ::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &len);
    char want[64];
    // /proc/net/tcp prints the address as the host-order hex of the raw u32.
    std::snprintf(want, sizeof want, "%08X:%04X %08X:%04X", peer.sin_addr.s_addr, ntohs(peer.sin_port),
                  me.sin_addr.s_addr, ntohs(me.sin_port));
    FILE *f = std::fopen("/proc/net/tcp", "r");
    if (!f)
        return "unknown (/proc/net/tcp)";
    static const char *const kStates[] = {"?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
                                          "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"};
    char line[512];
    std::string found = "not found";
    while (std::fgets(line, sizeof line, f)) {
        char *at = std::strstr(line, want);
        if (!at)
            continue;
        unsigned st = 0;
        unsigned long inode = 0;
        // local rem st tx:rx tr:when retrnsmt uid timeout inode
        std::sscanf(at, "%*s %*s %x %*s %*s %*s %*d %*d %lu", &st, &inode);
        found = st < 12 ? kStates[st] : "state " + std::to_string(st);
        if (st == 1) // a socket gets an inode when accept() makes its file
            found += inode ? " (accepted)" : " (in the accept queue)";
        break;
    }
    std::fclose(f);
    return found;
}

std::string client_side(int fd) {
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
        return "unknown (TCP_INFO)";
    if (ti.tcpi_state == TCP_CLOSE_WAIT)
        return "CLOSE_WAIT (the server's FIN came and was not read yet)";
    if (ti.tcpi_state == TCP_ESTABLISHED)
        return "ESTABLISHED (no FIN came)";
    return "state " + std::to_string(ti.tcpi_state);
}

} // namespace mixed
