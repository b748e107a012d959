// The pause linger (DESIGN.md §4): the socket-level steps and the test hooks.
//
// With TCP_DEFER_ACCEPT on, a client whose handshake completed but which has
// sent nothing stays a request socket: accept(2) cannot see it until the
// kernel's SYN-ACK retransmit (about one second after the SYN) draws a second
// ACK. Closing the listener before then resets that client. So a pausing
// worker clears the option (the retransmit's ACK now promotes the client),
// keeps accepting for linger_ms on the monotonic clock, then drains the
// accept queue and closes. With net.ipv4.tcp_synack_retries = 0 there is no
// retransmit at all, so the listener's own TCP_SYNCNT is raised to 1 (the
// kernel refuses 0; it is applied only when the sysctl was read and is 0).
#pragma once

#include <atomic>
#include <cstdint>

namespace weir {

// The value of net.ipv4.tcp_synack_retries, or a negative errno when it could
// not be read (the guard is then never applied: no guessing).
int read_synack_retries(const char *path = "/proc/sys/net/ipv4/tcp_synack_retries");

// setsockopt steps on a listener; each returns 0 or -errno.
int defer_accept_set(int fd, int seconds); // 0 clears
int defer_accept_get(int fd);              // seconds (rounded by the kernel) or -errno
int syncnt_set(int fd, int count);
int syncnt_get(int fd);

// The seconds a listener is opened with when cfg.defer_accept is on.
constexpr int kDeferAcceptSeconds = 1;

// Test hooks: integration tests flip these to show the loss each rule guards
// against (the arms that must lose). Never set outside tests.
struct LingerHooks {
    std::atomic<int> react_delay_ms{0};   // a worker sleeps this long before acting on a pause
    std::atomic<bool> skip_clear{false};  // N2: keep TCP_DEFER_ACCEPT during the linger
    std::atomic<bool> skip_guard{false};  // N3: never raise TCP_SYNCNT
    std::atomic<const char *> sysctl_path{nullptr}; // read this file instead of /proc/sys/...
};
LingerHooks &linger_hooks();

} // namespace weir
