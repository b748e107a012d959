// A worker's SO_REUSEPORT listener and its lifecycle.
//
// Each worker owns one listener bound to the engine's one resolved address.
// The lifecycle is a small state machine so the pause linger (DESIGN.md §5)
// slots in without touching the loop: today only NONE -> ACTIVE -> CLOSED is
// used; LINGERING (accepting while TCP_DEFER_ACCEPT is cleared, until a
// deadline that caps the loop's wait) comes with the pause issue.
#pragma once

#include <sys/socket.h>

#include <cstdint>

namespace weir {

enum class ListenerState : uint8_t { None, Active, Lingering, Closed };

struct ListenOptions {
    uint32_t backlog = 1024;
    bool defer_accept = true;
};

// Parses a numeric IPv4/IPv6 host and port into ss. Returns 0 or -EINVAL.
int resolve_numeric(const char *host, uint32_t port, sockaddr_storage *ss, socklen_t *len);

// Opens a non-blocking, close-on-exec, SO_REUSEPORT listener on addr (whose
// port may be 0: the kernel picks one; read it back with getsockname).
// Returns the fd or a negative errno.
int listener_open(const sockaddr_storage &addr, socklen_t len, const ListenOptions &opt);

struct Listener {
    int fd = -1;
    ListenerState state = ListenerState::None;

    void close_now(); // any state -> CLOSED; the fd is closed once
};

} // namespace weir
