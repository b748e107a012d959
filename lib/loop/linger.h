// The pause linger (DESIGN.md §5): the socket-level steps and the test hooks.
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

// What a worker reports to LingerHooks::on_event.
enum class LingerEvent : int {
    Clear = 1, // entered LINGERING (after the clear's setsockopt returned)
    Close,     // the listener closed (drained first)
    Restore,   // a resume ended the linger on the same fd
    Reopen,    // a resume reopened a closed listener
    Given,     // a switch moved this worker's listener to another worker
    Taken,     // this worker adopted a listener a switch moved to it
};

// Test hooks: integration tests flip these to show the loss each rule guards
// against (the arms that must lose), and to see when things happened. Never
// set outside tests. Callbacks run on the worker's thread.
struct LingerHooks {
    std::atomic<int> react_delay_ms{0};      // a worker sleeps this long before acting on a pause
    std::atomic<int> react_delay_worker{-1}; // ... only this worker (-1: every worker)
    std::atomic<bool> skip_clear{false};     // N2: keep TCP_DEFER_ACCEPT during the linger
    std::atomic<bool> skip_guard{false};     // N3: never raise TCP_SYNCNT
    std::atomic<const char *> sysctl_path{nullptr}; // read this file instead of /proc/sys/...
    std::atomic<bool> skip_error_drain{false}; // no FIN-and-drain before closing after an error answer
    std::atomic<bool> skip_close_linger{false}; // close at once, as before the lingering close (its arm)
    // A trickling client's linger (a head or request cut by its deadline)
    // runs to the reaper's bound, as before its end at the ack (its arm).
    std::atomic<bool> linger_to_bound{false};
    // The switch as it was before the listener moved (its arm): the
    // outgoing engine lingers and closes its listener, the incoming one
    // opens a new socket, and what the closed queue held is reset.
    std::atomic<bool> switch_reopens{false};
    // The give's end (worker_give.cc): a worker sleeps this long after its
    // hand-off calls into the taker, before it counts the give done; and
    // the arm that must lose, a pause that counts listeners only (as
    // before), returning inside that sleep. tests/integration/
    // test_switch_pause_waits_give.cc.
    std::atomic<int> give_done_delay_ms{0};
    std::atomic<bool> pause_ignores_gives{false};
    std::atomic<void (*)(uint32_t worker, LingerEvent ev)> on_event{nullptr};
    std::atomic<void (*)(int fd)> on_accept{nullptr}; // every accepted fd, before it is served

    void reset() {
        react_delay_ms = 0;
        react_delay_worker = -1;
        skip_clear = false;
        linger_to_bound = false;
        skip_guard = false;
        sysctl_path = nullptr;
        switch_reopens = false;
        give_done_delay_ms = 0;
        pause_ignores_gives = false;
        on_event = nullptr;
        on_accept = nullptr;
    }
};
LingerHooks &linger_hooks();

} // namespace weir
